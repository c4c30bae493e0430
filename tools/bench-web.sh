#!/bin/sh
# tools/bench-web.sh [PAIRS] [STEPS]: the playground's speed (make bench-web). A benchmark, never run
# by the tests.
#
# Up to five programs train the same configuration (the page's default preset, tests/web_default.json:
# 2 layers, 2 heads, 128 wide (d_k = 64), block 32, batch 8, fan_in: the lesson preset; one variant, seed 1337, on data/default.txt), STEPS timed steps (20) after
# WARM=5 untimed ones, on one thread:
#   wasm     the module of web/playground.html (make web) in headless Chromium: a Web Worker, as in
#            the page, started by a script added to a copy of the page, calling pg_step alone
#   native4  tools/web_native.c, the same sources natively with 4-wide vectors (-DVEC_BYTES=16,
#            the Makefile's VEC=4: the wasm module's width)
#   native4u native4 with the module's rounding: no FMA (-mno-fma -DVEC_UNFUSED), what wasm's
#            SIMD lacks
#   native4r native4u with x86-64's 16 vector registers, as a wasm engine there has them
#            (-march=x86-64-v3 -mno-fma: AVX2 without FMA, no AVX-512's 32 registers); x86-64 only
#   native   the same with the machine's own width (kernels/vec.h: 16 lanes with AVX-512, 8 with AVX2)
# in PAIRS rounds (5), each running them one after the other, the order reversed every other
# round, so the programs alternate and a change of the machine's load falls on all of them.
# Then TTF=3 runs of the page itself: press Train with the default preset in compare mode (scaled
# against unscaled) and wait for the page's stats table to show the unscaled variant's mean
# entropy over the heads below the scaled one's by more than 0.05; the seconds from the press.
# Then compare mode's speed: the page's default (the lesson preset, scaled and unscaled) trained
# by pressing Train, in two Web Workers (one variant each, the page's default) and in one (both
# variants), in rounds that alternate them with the native one-thread build training both
# (tools/web_native.c --compare): steps/s of the pair from step CMP_FROM=10 to CMP_FROM + CMP_STEPS=60.
# Prints one line per run and a table (median and range over the rounds); build/benchweb/ keeps
# the raw lines (runs.txt).
set -e
pairs=${1:-5}
steps=${2:-20}
warm=${WARM:-5}
ttf_runs=${TTF:-3}
CC=${CC:-cc}
out=build/benchweb
mkdir -p $out
page=web/playground.html
[ -f $page ] || { echo "bench-web: $page is missing: run make web" >&2; exit 1; }
chrome=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -n "$chrome" ] || { echo "bench-web: no Chromium (apt-get install chromium, or set CHROMIUM)" >&2; exit 1; }
SRC="base/common.c base/rng.c base/data.c base/config.c base/config_text.c base/config_keys.c base/outfile.c kernels/matmul.c kernels/peak.c kernels/attention_engine.c kernels/qk_norm_engine.c kernels/model_engine.c kernels/model_layout.c attention.c attention_stats.c model.c run/optimizer.c run/checkpoint.c run/generate.c run/decode.c run/induction.c web/web_main.c tools/web_native.c"
FLAGS="-std=c11 -I. -O3 -march=native -Wno-psabi -Wno-unknown-pragmas -ffp-contract=fast -fno-trapping-math -fno-math-errno -Wall -Wextra"
# natively the page's memory file system is files in $out/
PGDIR=-DPG_DIR=\"$out/\"
$CC $FLAGS "$PGDIR" -DVEC_BYTES=16 $SRC -o $out/native4 -lcjson -lm
$CC $FLAGS "$PGDIR" -mno-fma -DVEC_UNFUSED -ffp-contract=off -DVEC_BYTES=16 $SRC -o $out/native4u -lcjson -lm
$CC $FLAGS "$PGDIR" $SRC -o $out/native -lcjson -lm
progs="native4 native4u native"
if [ "$(uname -m)" = x86_64 ]; then
    $CC $(echo "$FLAGS" | sed 's/-march=native/-march=x86-64-v3 -mtune=native/') "$PGDIR" -mno-fma -DVEC_UNFUSED -ffp-contract=off \
        -DVEC_BYTES=16 $SRC -o $out/native4r -lcjson -lm
    progs="native4 native4u native4r native"
fi
abs=$(cd $out && pwd)

# run_chromium HTML: opens the file headless, waits (at most 300 s) for the console line
# "bench-result ..." and prints what follows it
run_chromium() {
    rm -rf "$abs/profile" "$abs/chromium.log"
    timeout 300 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync --disable-default-apps \
        --disable-extensions --mute-audio --enable-logging=stderr --user-data-dir="$abs/profile" \
        --window-size=1280,800 "file://$abs/$1" >/dev/null 2>"$abs/chromium.log" &
    cpid=$!
    i=0
    while [ $i -lt 3000 ] && kill -0 $cpid 2>/dev/null && ! grep -q '"bench-result' "$abs/chromium.log"; do
        sleep 0.1; i=$((i + 1))
    done
    kill $cpid 2>/dev/null || true
    wait $cpid 2>/dev/null || true
    rm -rf "$abs/profile"
    sed -n 's/.*"bench-result \([^"]*\)".*/\1/p' "$abs/chromium.log" | head -1
}

# the page with a script after its own (before </body>): $1 is the script's text
with_script() {
    awk -v s="$1" '{ i = index($0, "</body>"); if (i) { print substr($0, 1, i - 1) s substr($0, i) } else print }' $page
}

# the engine: a worker of the page's module with the page's own WASI layer, started from the page,
# building the page's default preset (its controls' config, one variant) and timing pg_step alone
with_script "<script>(function(){var w=new Worker(URL.createObjectURL(new Blob([document.getElementById('wasi-src').textContent,'onmessage=async function(e){var d=e.data,ex;\\
var fs=memfs(function(){return ex.memory},function(){});\\
ex=(await WebAssembly.instantiate(d.wasm,{wasi_snapshot_preview1:fs.imports})).instance.exports;ex._initialize();\\
function put(b){var p=ex.pg_alloc(b.length+1),m=new Uint8Array(ex.memory.buffer);m.set(b,p);m[p+b.length]=0;return p}\\
var c=new TextEncoder().encode(d.config);if(!ex.pg_set_text(put(d.text),d.text.length)||!ex.pg_init(put(c),c.length,0)){postMessage(\"refused\");return;}\\
var t=0;for(var i=0;i<d.warm+d.steps;i++){if(i==d.warm)t=performance.now();ex.pg_step(1);}\\
var s=(performance.now()-t)/1000;postMessage(\"rate \"+(d.steps/s).toFixed(4)+\" steps/s (\"+d.steps+\" steps in \"+s.toFixed(3)+\" s) loss \"+ex.pg_loss(0));}'],\
{type:'text/javascript'})));w.onmessage=function(e){console.log('bench-result '+e.data);};\
document.getElementById('preset').value='lesson';\
w.postMessage({wasm:b64(document.getElementById('wasm').textContent),text:b64(document.getElementById('corpus').textContent),config:document.getElementById('config').value,warm:$warm,steps:$steps});})();</script>" > $out/engine.html

# the page's own controls: once built, press Train (default preset, compare on) and watch the
# stats table (per variant: entropy, max w, grad gain, max logit); done when the unscaled mean
# entropy is below the scaled one by more than 0.05
with_script "<script>(function(){var \$=function(i){return document.getElementById(i)},t0=0;\
function col(c){var r=[].slice.call(\$('stats').rows,1),s=0;r.forEach(function(x){s+=parseFloat(x.cells[c].textContent)});return r.length?s/r.length:NaN}\
var iv=setInterval(function(){var st=\$('status').textContent;\
if(!t0&&/parameters/.test(st)){if(!\$('compare').checked||\$('preset').value!='lesson'){console.log('bench-result not the default preset in compare mode');clearInterval(iv);return}\
t0=performance.now();\$('train').click();return}\
if(!t0)return;var e0=col(1),e1=col(5),s=(performance.now()-t0)/1000;\
if(e0-e1>0.05||s>240||\$('msg').textContent){clearInterval(iv);\$('pause').click();\
console.log('bench-result '+(e0-e1>0.05?'visible':'not visible')+' after '+s.toFixed(1)+' s at '+st+': mean entropy scaled '+e0.toFixed(4)+', unscaled '+e1.toFixed(4)+'; the page shows '+\$('rate').textContent+' '+\$('msg').textContent)}},100)})();</script>" > $out/ttf.html

# compare mode's speed in the page: the workers menu set to W, Train pressed once built; the
# seconds between the status showing step CMP_FROM and step CMP_FROM + CMP_STEPS
cmp_from=${CMP_FROM:-10}
cmp_steps=${CMP_STEPS:-60}
for w in 1 2; do
    with_script "<script>(function(){var \$=function(i){return document.getElementById(i)},go=0,t1=0;\
\$('workers').value='$w';\$('workers').dispatchEvent(new Event('change'));var rs=0;\
var iv=setInterval(function(){var st=\$('status').textContent,m=/^step (\\d+)/.exec(st),n=m?+m[1]:0;\
if(!rs&&!/parameters/.test(st))return;if(!rs){rs=1;if($w==1)\$('reset').click();return}\
if(!go&&/parameters/.test(st)&&(($w==2)==/two workers/.test(st))){go=1;\$('train').click();return}\
if(!go)return;if(!t1&&n>=$cmp_from){t1=performance.now();return}\
if(t1&&n>=$cmp_from+$cmp_steps){clearInterval(iv);\$('pause').click();var s=(performance.now()-t1)/1000;\
console.log('bench-result rate '+((n-$cmp_from)/s).toFixed(4)+' steps/s of the pair ('+(n-$cmp_from)+' steps in '+s.toFixed(2)+' s) '+\$('msg').textContent)}},20)})();</script>" > $out/cmp$w.html
done
# the native build training the same pair on one thread: steps/s from step CMP_FROM on
native_cmp() {
    a=$(date +%s.%N); ./$out/native4 tests/web_default.json $cmp_from --compare 1000000 >/dev/null
    b=$(date +%s.%N); ./$out/native4 tests/web_default.json $((cmp_from + cmp_steps)) --compare 1000000 >/dev/null
    c=$(date +%s.%N); echo "$a $b $c" | awk -v n=$cmp_steps '{ printf "rate %.4f steps/s of the pair (%d steps in %.2f s)\n", n / (($3 - $2) - ($2 - $1)), n, ($3 - $2) - ($2 - $1) }'
}
rate() { sed -n 's/^rate \([0-9.]*\) .*/\1/p'; }
: > $out/runs.txt
echo "bench-web: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $pairs rounds of $steps steps after $warm"
for r in $(seq 1 "$pairs"); do
    if [ $((r % 2)) = 1 ]; then order="wasm $progs"; else order="$(echo $progs | tr ' ' '\n' | sed -n '1!G;h;$p' | tr '\n' ' ')wasm"; fi
    for p in $order; do
        if [ $p = wasm ]; then line=$(run_chromium engine.html)
        else line=$(./$out/$p tests/web_default.json $((warm + steps)) --rate $warm 2>&1 >/dev/null); fi
        echo "round $r $p: $line (load $(cut -d' ' -f1 /proc/loadavg))"
        echo "$r $p $(echo "$line" | rate)" >> $out/runs.txt
    done
done
for r in $(seq 1 "$ttf_runs"); do
    line=$(run_chromium ttf.html)
    echo "time to a visible failure, run $r: $line (load $(cut -d' ' -f1 /proc/loadavg))"
    echo "$line" | sed -n 's/^visible after \([0-9.]*\) s.*/ttf \1/p' >> $out/runs.txt
done
cmp_rounds=${CMP_ROUNDS:-3}
for r in $(seq 1 "$cmp_rounds"); do
    if [ $((r % 2)) = 1 ]; then order="cmp2 cmp1 native"; else order="native cmp1 cmp2"; fi
    for p in $order; do
        if [ $p = native ]; then line=$(native_cmp); else line=$(run_chromium $p.html); fi
        echo "compare mode, round $r, $p: $line (load $(cut -d' ' -f1 /proc/loadavg))"
        echo "cmp $r $p $(echo "$line" | rate)" >> $out/runs.txt
    done
done
# the table: per program the median and range of its steps/s; per round the ratios
awk '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function row(name, a, n, f,   i, lo, hi, m) { if (!n) { printf "| %s | - | - |\n", name; return } m = med(a, n); lo = a[1]; hi = a[n]
        printf "| %s | " f " | " f " - " f " |\n", name, m, lo, hi }
    $1 == "ttf" { t[++nt] = $2; next }
    $1 == "cmp" { if ($4 != "") { c[$3, ++nc[$3]] = $4; cr[$2, $3] = $4; CR[$2] = 1 } next }
    $3 != "" { v[$1, $2] = $3; R[$1] = 1 }
    END { for (r in R) { if ((r, "wasm") in v) w[++nw] = v[r, "wasm"]; if ((r, "native4") in v) a[++na] = v[r, "native4"]
            if ((r, "native") in v) b[++nb] = v[r, "native"]; if ((r, "native4u") in v) u[++nu] = v[r, "native4u"]
            if ((r, "native4r") in v) q[++nq] = v[r, "native4r"]
            if ((r, "wasm") in v && (r, "native4u") in v) z[++nz] = v[r, "wasm"] / v[r, "native4u"]
            if ((r, "wasm") in v && (r, "native4r") in v) zr[++nzr] = v[r, "wasm"] / v[r, "native4r"]
            if ((r, "native4r") in v && (r, "native4u") in v) rr[++nrr] = v[r, "native4r"] / v[r, "native4u"]
            if ((r, "wasm") in v && (r, "native4") in v) x[++nx] = v[r, "wasm"] / v[r, "native4"]
            if ((r, "wasm") in v && (r, "native") in v) y[++ny] = v[r, "wasm"] / v[r, "native"] }
        print ""; print "| | median | range |"; print "|---|---|---|"
        row("wasm in Chromium, steps/s", w, nw, "%.2f"); row("native VEC=4, 1 thread, steps/s", a, na, "%.2f")
        row("native VEC=4 without FMA, 1 thread, steps/s", u, nu, "%.2f"); row("native VEC=4 without FMA, 16 registers (x86-64-v3), 1 thread, steps/s", q, nq, "%.2f")
        row("native default width, 1 thread, steps/s", b, nb, "%.2f")
        row("wasm / native VEC=4 (per round)", x, nx, "%.2f"); row("wasm / native VEC=4 without FMA (per round)", z, nz, "%.2f")
        row("native 16 registers / 32 registers, both without FMA (per round)", rr, nrr, "%.2f")
        row("wasm / native VEC=4 without FMA, 16 registers (per round)", zr, nzr, "%.2f")
        row("wasm / native default (per round)", y, ny, "%.2f")
        row("seconds from Train to a visible failure", t, nt, "%.1f")
        for (k = 1; k <= nc["cmp2"]; k++) c2[k] = c["cmp2", k]; for (k = 1; k <= nc["cmp1"]; k++) c1[k] = c["cmp1", k]
        for (k = 1; k <= nc["native"]; k++) cn[k] = c["native", k]
        for (r in CR) if ((r, "cmp2") in cr && (r, "cmp1") in cr) q21[++n21] = cr[r, "cmp2"] / cr[r, "cmp1"]
        row("compare mode (the page'"'"'s default pair), two workers, steps/s of the pair", c2, nc["cmp2"], "%.2f")
        row("compare mode, one worker, steps/s of the pair", c1, nc["cmp1"], "%.2f")
        row("compare mode, native VEC=4, 1 thread, steps/s of the pair", cn, nc["native"], "%.2f")
        row("two workers / one worker (per round)", q21, n21, "%.2f") }' $out/runs.txt
