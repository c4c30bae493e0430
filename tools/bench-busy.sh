#!/bin/sh
# tools/bench-busy.sh [PAIRS] [STEPS] [CONFIG ...] (make bench-busy): the training step and the
# sampler on a busy machine. One core is kept busy by a spinning process this script starts and stops; then
# ./train --bench runs each configuration (default: W1, W2 and the default config) with the default thread
# count and with one thread (--train.threads=1), in turn, PAIRS times (default 3), STEPS timed
# steps each (default 20). It prints each pair's ms/step and the sampler's tokens/s side by side,
# and the medians. Run it on an otherwise idle machine: other work would be a second load.
set -u
pairs=${1:-3}
steps=${2:-20}
configs="configs/bench_w1.json configs/bench_w2.json configs/default.json"
[ $# -gt 2 ] && { shift 2; configs="$*"; }
[ -x ./train ] || { echo "bench-busy: ./train is missing (make train)" >&2; exit 1; }
out=$(mktemp) || exit 1

sh -c 'while :; do :; done' &
spinner=$!
trap 'kill $spinner 2>/dev/null; rm -f "$out"' EXIT
trap 'exit 130' INT TERM

cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -n 1)
echo "bench-busy: $(nproc) cores ($cpu); $(./train --version | sed -n 's/^SIMD: //p'); $(./train --version | sed -n 's/^OpenMP: //p')"
echo "one core kept busy by a spinning process (pid $spinner); $pairs pairs per configuration, alternated;"
echo "each figure is ./train CONFIG --bench=$steps: the median ms/step of the timed steps, and the sampler's"
echo "tokens/s past block_size with the crop (the default path) and over 500 characters from one"

# the median of the numbers on standard input
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# one run: "ms_per_step crop default_500" of ./train CONFIG --bench with extra arguments
one_run() {
    ./train "$@" --bench="$steps" >"$out" 2>&1 || { echo "bench-busy: ./train $* failed:" >&2; cat "$out" >&2; exit 1; }
    ms=$(sed -n 's/^bench [^:]*: ms_per_step=\([0-9.]*\) .*/\1/p' "$out")  # the wall-clock median (cpu_ms_per_step follows)
    crop=$(sed -n 's/^sampling .* crop=\([0-9]*\).*/\1/p' "$out")
    whole=$(sed -n 's/^sampling .*default_500=\([0-9]*\).*/\1/p' "$out")
    echo "$ms $crop $whole"
}

printf '\n%-8s %-5s | %-32s | %-32s\n' config pair "default threads: ms/step, crop, 500" "one thread: ms/step, crop, 500"
for cfg in $configs; do
    name=$(basename "$cfg" .json)
    : >"$out.a"
    : >"$out.b"
    for i in $(seq 1 "$pairs"); do
        a=$(one_run "$cfg") || exit 1
        b=$(one_run "$cfg" --train.threads=1) || exit 1
        echo "$a" >>"$out.a"
        echo "$b" >>"$out.b"
        set -- $a; a_ms=$1; a_crop=$2; a_all=$3
        set -- $b; b_ms=$1; b_crop=$2; b_all=$3
        printf '%-8s %-5s | %9s ms %8s/s %8s/s   | %9s ms %8s/s %8s/s   ratio %.2f\n' "$name" "$i" "$a_ms" "$a_crop" \
            "$a_all" "$b_ms" "$b_crop" "$b_all" "$(echo "$a_ms $b_ms" | awk '{ print $1 / $2 }')"
    done
    am=$(cut -d' ' -f1 "$out.a" | median); ac=$(cut -d' ' -f2 "$out.a" | median); aw=$(cut -d' ' -f3 "$out.a" | median)
    bm=$(cut -d' ' -f1 "$out.b" | median); bc=$(cut -d' ' -f2 "$out.b" | median); bw=$(cut -d' ' -f3 "$out.b" | median)
    printf '%-8s %-5s | %9s ms %8s/s %8s/s   | %9s ms %8s/s %8s/s   ratio %.2f\n' "$name" median "$am" "$ac" "$aw" \
        "$bm" "$bc" "$bw" "$(echo "$am $bm" | awk '{ print $1 / $2 }')"
    rm -f "$out.a" "$out.b"
done
echo "(ratio: default threads' ms/step over one thread's; below 1 the default is faster)"
