#!/bin/sh
# tools/build-web.sh OUT.html: the playground page. Compiles the trainer's sources with
# web/web_main.c to one wasm32 module (clang's wasm32-wasi target, wasi-libc, 128-bit SIMD), then
# writes one HTML file with the module (base64), the page's script and the worker's script in it.
# Installs the toolchain (Debian: clang lld wasi-libc libclang-rt-14-dev-wasm32) when it is missing.
set -e
out=${1:-web/playground.html}
WCC=${WCC:-clang}
probe() { printf '#include <stdio.h>\nint main(void){return 0;}' | $WCC --target=wasm32-wasi -x c - -o /dev/null >/dev/null 2>&1; }
if ! probe; then
    echo "make web: installing the wasm32 toolchain (clang lld wasi-libc libclang-rt-14-dev-wasm32)" >&2
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get install -y clang lld wasi-libc libclang-rt-14-dev-wasm32 >&2 || {
        echo "make web: could not install the wasm32 toolchain; install clang, lld, wasi-libc and libclang-rt-14-dev-wasm32" >&2; exit 1; }
    probe || { echo "make web: $WCC cannot link for wasm32-wasi after installing" >&2; exit 1; }
fi
# the sources the page is built from; their hash is recorded in the page (tools/web-check.sh
# compares it with docs/playground.html's, so the committed copy cannot fall behind)
HASHED="base/*.h base/common.c base/rng.c base/data.c base/config.c base/config_text.c base/config_keys.c base/outfile.c kernels/*.h kernels/matmul.c kernels/peak.c kernels/attention_engine.c kernels/qk_norm_engine.c kernels/model_engine.c kernels/model_layout.c attention.h attention.c attention_stats.c model.h model.c run/optimizer.h run/optimizer.c run/checkpoint.h run/checkpoint.c run/generate.h run/generate.c run/decode.h run/decode.c run/induction.h run/induction.c report/attention_map.h base/json.h base/json_own.h base/json_own.c web/wasi_shim.h web/wasi_shim.c web/web_main.c web/playground.in.html data/default.txt tools/build-web.sh"
[ "$1" = --hash ] && { cat $HASHED | sha256sum | cut -c1-64; exit 0; }
SRC="base/common.c base/rng.c base/data.c base/config.c base/config_text.c base/config_keys.c base/outfile.c kernels/matmul.c kernels/peak.c kernels/attention_engine.c kernels/qk_norm_engine.c kernels/model_engine.c kernels/model_layout.c attention.c attention_stats.c model.c run/optimizer.c run/checkpoint.c run/generate.c run/decode.c run/induction.c base/json_own.c web/wasi_shim.c web/web_main.c"
mkdir -p build/web
wasm=build/web/playground.wasm
# JSON_OWN: base/config.c's parser is base/json_own.c; web/wasi_shim.h declares what WASI lacks
$WCC --target=wasm32-wasi -mexec-model=reactor -std=c11 -DJSON_OWN -I. -include web/wasi_shim.h -O3 -msimd128 -Wall -Wextra -Wpedantic \
    -fno-trapping-math -fno-math-errno -D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_GETPID -Wl,--export-dynamic -Wl,--initial-memory=33554432 \
    -Wl,--max-memory=1073741824 -Wl,-z,stack-size=1048576 $SRC -o $wasm -lwasi-emulated-signal -lwasi-emulated-getpid
echo "$wasm: $(wc -c < $wasm) bytes" >&2
# the page: the template with the module and the default corpus put in as base64 (a script
# element's text is not HTML-decoded), each on the template's line that holds only its marker
base64 -w0 "$wasm" > build/web/wasm.b64
base64 -w0 data/default.txt > build/web/corpus.b64
awk '$0 == "@WASM@" { while ((getline l < "build/web/wasm.b64") > 0) print l; next }
     $0 == "@CORPUS@" { while ((getline l < "build/web/corpus.b64") > 0) print l; next }
     $0 == "@HASH@" { print "<meta name=\"source-hash\" content=\"" hash "\">"; next }
     { print }' hash="$(cat $HASHED | sha256sum | cut -c1-64)" web/playground.in.html > "$out.tmp"
mv "$out.tmp" "$out"
echo "$out: $(wc -c < "$out") bytes" >&2
