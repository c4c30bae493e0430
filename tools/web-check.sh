#!/bin/sh
# tools/web-check.sh [STEPS]: the playground's module against the native build of the same sources.
# - the JSON parser: base/config.c on base/json_own.c (the module's) and on the system's cJSON print
#   the same for configs/*.json and tests/json_check.c's table of bad texts;
# - the losses: build/web/playground.wasm (tools/build-web.sh) and build/webnative/web_native (the
#   same sources, 4-wide vectors: -DVEC_BYTES=16, one thread) train tests/web_check.json STEPS
#   steps (8) each (node runs the module: tests/web_check.mjs); every loss agrees to 1e-5 relative;
# - checkpoints: the module's checkpoint after 4 steps resumes in ./train, whose steps 5..8 match
#   an uninterrupted ./train run's to 1e-5 relative (and the module's steps 1..4 its first four),
#   and ./sample reads it; ./train's checkpoint loads in the module; a truncated, a bit-flipped and
#   a crafted (NaN, CRC fixed) one are refused by the module with ./train --resume's message, and
#   a checkpoint of another text with the reason and ./train's message.
# - the views: the probe prompt's attention map and the sample (tests/web_views.mjs).
# - a note, not a check: how many losses the native build without FMA (web_native_unfused)
#   shares bit for bit with the module.
# Skips, with a message and status 0, without clang's wasm32 target or node.
set -e
steps=${1:-8}
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
# the native programs' own sources are not the page's: they are in the stamp too
stamp="$want $CC $(cat tools/web_native.c tests/json_check.c | sha256sum | cut -c1-16)"
if [ "$(cat build/webnative/built 2>/dev/null)" != "$stamp" ] || [ ! -x build/webnative/web_native ]; then
sh tools/build-web.sh build/web/playground.html 2>/dev/null
CORE="base/common.c base/rng.c base/data.c base/config.c base/config_text.c base/config_keys.c base/outfile.c kernels/matmul.c kernels/peak.c \
    kernels/attention_engine.c kernels/qk_norm_engine.c kernels/model_engine.c kernels/model_layout.c attention.c attention_stats.c model.c run/optimizer.c run/checkpoint.c run/generate.c run/decode.c run/induction.c"
$CC -std=c11 -I. -O3 -march=native -DVEC_BYTES=16 -DPG_DIR='"build/webnative/"' -Wno-psabi -ffp-contract=fast \
    -fno-trapping-math -fno-math-errno -Wall -Wextra $CORE web/web_main.c tools/web_native.c -o build/webnative/web_native \
    -lcjson -lm 2>/dev/null
J="tests/json_check.c base/config.c base/config_text.c base/config_keys.c base/common.c base/data.c base/rng.c"
$CC -std=c11 -I. -O1 $J -o build/webnative/json_cjson -lcjson -lm 2>/dev/null
$CC -std=c11 -DJSON_OWN -I. -O1 $J base/json_own.c -o build/webnative/json_web -lm 2>/dev/null
# the same with the module's rounding (no FMA), where the vectors are SSE (x86-64)
$CC -std=c11 -I. -O3 -march=native -mno-fma -DVEC_UNFUSED -DVEC_BYTES=16 -DPG_DIR='"build/webnative/"' -Wno-psabi -ffp-contract=off \
    -fno-trapping-math -fno-math-errno -Wall -Wextra $CORE web/web_main.c tools/web_native.c -o build/webnative/web_native_unfused \
    -lcjson -lm 2>/dev/null || rm -f build/webnative/web_native_unfused
echo "$stamp" > build/webnative/built
fi
./build/webnative/json_cjson configs/*.json > build/webnative/json_cjson.txt
./build/webnative/json_web configs/*.json > build/webnative/json_web.txt
if ! cmp -s build/webnative/json_cjson.txt build/webnative/json_web.txt; then
    echo "web-check: FAIL: base/config.c on base/json_own.c differs from base/config.c on cJSON:"
    diff build/webnative/json_cjson.txt build/webnative/json_web.txt | head -20; exit 1
fi
echo "web-check: ok: base/json_own.c and cJSON: the same for $(grep -c ': accepted:$' build/webnative/json_cjson.txt) accepted and $(grep -c ': refused: ' build/webnative/json_cjson.txt) refused texts"
./build/webnative/web_native tests/web_check.json "$steps" > build/webnative/native.txt
node tests/web_check.mjs build/web/playground.wasm tests/web_check.json "$steps" > build/webnative/wasm.txt
paste build/webnative/native.txt build/webnative/wasm.txt | awk -v n="$steps" '
    { d = ($2 - $4) / $2; if (d < 0) d = -d; if (d > m) m = d; if ($2 == $4) same++; rows++
      if (d > 1e-5) { printf "web-check: FAIL: step %d: native loss %s, wasm %s (relative difference %.3g > 1e-5)\n", $1, $2, $4, d; bad = 1 } }
    END { if (rows != n) { printf "web-check: FAIL: %d steps compared, %d expected\n", rows, n; exit 1 }
          if (bad) exit 1
          printf "web-check: ok: %d steps, losses equal to %.3g relative (%d bit-identical)\n", rows, m, same + 0 }'

# not a check (the C library's exp and log are the platform's): how many losses the native build
# without FMA shares bit for bit with the module
if [ -x build/webnative/web_native_unfused ]; then
    ./build/webnative/web_native_unfused tests/web_check.json "$steps" > build/webnative/unfused.txt
    paste build/webnative/unfused.txt build/webnative/wasm.txt | awk '$2 == $4 { same++ }
        END { printf "web-check: note: the native build without FMA (-mno-fma -DVEC_UNFUSED): %d of %d losses bit-identical to the module'"'"'s\n", same + 0, NR }'
fi

# checkpoints: the module's, resumed by ./train; ./train's, loaded by the module; bad ones refused
[ -x ./train ] && [ -x ./sample ] || { echo "web-check: FAIL: the checkpoint checks need ./train and ./sample (make)"; exit 1; }
d=build/webcheck
rm -rf $d && mkdir -p $d/full $d/resume
./train tests/web_check.json > $d/full.log 2>&1 || { echo "web-check: FAIL: ./train tests/web_check.json:"; tail -3 $d/full.log; exit 1; }
node tests/web_check.mjs build/web/playground.wasm tests/web_check.json 4 --save $d/resume/checkpoint.bin > $d/page4.txt
./train --resume $d/resume/checkpoint.bin > $d/resume.log 2>&1 || { echo "web-check: FAIL: ./train --resume of the module's checkpoint:"; tail -3 $d/resume.log; exit 1; }
# every step's loss: the module's 1..4, then ./train's resumed 5..8, against the uninterrupted run's
{ cat $d/page4.txt; tail -n +2 $d/resume/metrics.csv | cut -d, -f1,2 | tr , ' '; } > $d/pieced.txt
tail -n +2 $d/full/metrics.csv | cut -d, -f1,2 | tr , ' ' > $d/whole.txt
paste -d' ' $d/whole.txt $d/pieced.txt | awk '
    { d = ($2 - $4) / $2; if (d < 0) d = -d; if (d > m) m = d; rows++
      if ($1 != $3 || d > 1e-5) { printf "web-check: FAIL: step %s: ./train %s, module then ./train --resume: step %s %s\n", $1, $2, $3, $4; bad = 1 } }
    END { if (rows != 8) { printf "web-check: FAIL: %d steps compared, 8 expected\n", rows; exit 1 }
          if (bad) exit 1
          printf "web-check: ok: the module'"'"'s checkpoint of step 4 resumes in ./train: steps 1..8 equal to an uninterrupted run'"'"'s to %.3g relative\n", m }'
./sample $d/resume/checkpoint.bin --tokens 20 > $d/sample.txt 2>&1 || { echo "web-check: FAIL: ./sample of the module's checkpoint:"; tail -3 $d/sample.txt; exit 1; }
echo "web-check: ok: ./sample reads the module's checkpoint"
node tests/web_check.mjs build/web/playground.wasm - 1 --load $d/full/checkpoint.bin > $d/loaded.txt || {
    echo "web-check: FAIL: the module refused ./train's checkpoint: $(cat $d/loaded.txt)"; exit 1; }
[ "$(cut -d' ' -f1 $d/loaded.txt)" = 9 ] || { echo "web-check: FAIL: the module's step after loading ./train's step-8 checkpoint: $(cat $d/loaded.txt), 9 expected"; exit 1; }
echo "web-check: ok: ./train's checkpoint loads in the module and trains on from step 8"
head -c 5000000 $d/full/checkpoint.bin > $d/truncated.bin
cp $d/full/checkpoint.bin $d/flipped.bin
printf '\377' | dd of=$d/flipped.bin bs=1 seek=4000000 conv=notrunc 2>/dev/null
node tests/craft_ckpt.mjs $d/full/checkpoint.bin $d/crafted.bin
for bad in truncated flipped crafted; do
    native=$(./train --resume $d/$bad.bin 2>&1 | sed 's/^train: error: //')
    web=$(node tests/web_check.mjs build/web/playground.wasm - 0 --load $d/$bad.bin | sed 's/^refused: //')
    if [ -z "$native" ] || [ "$native" != "$web" ]; then
        echo "web-check: FAIL: the $bad checkpoint: ./train --resume says '$native', the module '$web'"; exit 1; fi
    echo "web-check: ok: the $bad checkpoint is refused with ./train's message: $web"
done
# a checkpoint of another text: its vocabulary does not cover the page's text (./train's message after the reason)
mkdir -p $d/ab
awk 'BEGIN { for (i = 0; i < 400; i++) printf "abba cab " }' > $d/ab/ab.txt
./train tests/web_check.json --data.path=$d/ab/ab.txt --train.max_steps=1 --model.n_layer=1 --model.n_embd=32 \
    --model.n_head=2 --train.out_dir=$d/ab/run > $d/ab/log 2>&1 || { echo "web-check: FAIL: ./train on $d/ab/ab.txt:"; tail -3 $d/ab/log; exit 1; }
native=$(./train --resume $d/ab/run/checkpoint.bin --data.path=data/default.txt 2>&1 | sed -n "s/^train: error: data file '[^']*' //p")
web=$(node tests/web_check.mjs build/web/playground.wasm - 0 --load $d/ab/run/checkpoint.bin || true)
case "$web" in
    "refused: the page's text does not fit '$d/ab/run/checkpoint.bin' (choose the text it was trained on): data file '"*"' $native") ;;
    *) echo "web-check: FAIL: the checkpoint of another text: ./train --resume says '$native', the module '$web'"; exit 1 ;;
esac
[ -n "$native" ] || { echo "web-check: FAIL: ./train --resume of the checkpoint of another text gave no vocabulary message"; exit 1; }
echo "web-check: ok: the checkpoint of another text is refused: $web"

# the views' entry points (the probe prompt's map, the sample) in the same module
node tests/web_views.mjs build/web/playground.wasm
