#!/bin/sh
# tools/web-check.sh [STEPS]: the playground's module against the native build of the same sources.
# Builds build/web/playground.wasm (tools/build-web.sh) and build/webnative/web_native (the same
# sources, 4-wide vectors: -DVEC_BYTES=16, one thread), trains the default preset STEPS steps (10)
# in each (node runs the module: tests/web_check.mjs) and fails unless every step's loss agrees
# to 1e-5 relative; then checks the entry points of the page's views (tests/web_views.mjs).
# Skips, with a message and status 0, without clang's wasm32 target or node.
set -e
steps=${1:-10}
# the committed page: built from the sources as they are now (make web, then copy it to docs/)
want=$(sh tools/build-web.sh --hash)
have=$(sed -n 's/.*<meta name="source-hash" content="\([0-9a-f]*\)">.*/\1/p' docs/playground.html 2>/dev/null)
if [ "$want" != "$have" ]; then
    echo "web-check: FAIL: docs/playground.html was built from other sources (hash ${have:-none}, the sources' $want): run make web && cp web/playground.html docs/"; exit 1
fi
echo "web-check: ok: docs/playground.html is built from the current sources"
WCC=${WCC:-clang}
if ! printf '#include <stdio.h>\nint main(void){return 0;}' | $WCC --target=wasm32-wasi -x c - -o /dev/null >/dev/null 2>&1; then
    echo "web-check: SKIPPED: no wasm32 toolchain (make web installs clang lld wasi-libc libclang-rt-14-dev-wasm32)"; exit 0
fi
command -v node >/dev/null 2>&1 || { echo "web-check: SKIPPED: no node to run the module in"; exit 0; }
CC=${CC:-cc}
# built once per state of the sources (make test runs this under every CI build)
mkdir -p build/webnative
if [ "$(cat build/webnative/built 2>/dev/null)" != "$want $CC" ] || [ ! -x build/webnative/web_native ]; then
sh tools/build-web.sh build/web/playground.html 2>/dev/null
$CC -std=c11 -I. -O3 -march=native -DVEC_BYTES=16 -Wno-psabi -ffp-contract=fast -fno-trapping-math -fno-math-errno \
    -Wall -Wextra base/common.c base/rng.c base/data.c kernels/matmul.c kernels/peak.c kernels/attention_engine.c \
    attention.c attention_stats.c model.c run/optimizer.c run/generate.c run/decode.c web/web_main.c tools/web_native.c -o build/webnative/web_native -lm 2>/dev/null
echo "$want $CC" > build/webnative/built
fi
./build/webnative/web_native "$steps" > build/webnative/native.txt
node tests/web_check.mjs build/web/playground.wasm "$steps" > build/webnative/wasm.txt
paste build/webnative/native.txt build/webnative/wasm.txt | awk -v n="$steps" '
    { d = ($2 - $4) / $2; if (d < 0) d = -d; if (d > m) m = d; if ($2 == $4) same++; rows++
      if (d > 1e-5) { printf "web-check: FAIL: step %d: native loss %s, wasm %s (relative difference %.3g > 1e-5)\n", $1, $2, $4, d; bad = 1 } }
    END { if (rows != n) { printf "web-check: FAIL: %d steps compared, %d expected\n", rows, n; exit 1 }
          if (bad) exit 1
          printf "web-check: ok: %d steps, losses equal to %.3g relative (%d bit-identical)\n", rows, m, same + 0 }'
# the views' entry points (the probe prompt's map, the sample) in the same module
node tests/web_views.mjs build/web/playground.wasm
