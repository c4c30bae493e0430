#!/bin/sh
# tools/induction-demo.sh: the induction head experiment (make demo-induction, docs/induction.md).
# For each seed: configs/induction.json (2 layers, fan_in init) on data/induction.txt (repeated
# random letter sequences beside the corpus's lines, tools/gencorpus --repeat 50) trained with
# and without the scale (--compare model.attn_scale=sqrt,none into out/induction/SEED/scale/),
# and the 1-layer control (out/induction/SEED/onelayer/). The first seed keeps a checkpoint every
# 50 steps, for the attention maps (./sample --attention-map) before and after the first step at
# which the scaled model's induction score passes the threshold, and its unscaled model is also
# trained for three times the steps (6000, out/induction/SEED/long_none). Then
# tools/induction_report prints the table and writes out/induction/report.html, and the probe
# rows of every log go to docs/induction/SEED/ (the figures of docs/induction.md, which
# make docs-check reads).
#   sh tools/induction-demo.sh [SEED...]    (default: 1337 1 2; more ./train options in $ARGS)
set -eu
cd "$(dirname "$0")/.."
SEEDS=${*:-1337 1 2}
OUT=out/induction
TRAIN="./train configs/induction.json --train.overwrite=true --sample.tokens=0"
# 16 distinct letters twice: the maps' prompt (block_size 32)
PROMPT=qwhfkzpjmxrdtbvgqwhfkzpjmxrdtbvg
first=${SEEDS%% *}
for seed in $SEEDS; do
    keep=
    [ "$seed" = "$first" ] && keep="--train.ckpt_interval=50 --train.keep_checkpoints=100000"
    # shellcheck disable=SC2086
    $TRAIN --compare model.attn_scale=sqrt,none --train.seed="$seed" --train.out_dir="$OUT/$seed/scale" $keep ${ARGS:-}
    # shellcheck disable=SC2086
    $TRAIN --model.n_layer=1 --train.seed="$seed" --train.out_dir="$OUT/$seed/onelayer" ${ARGS:-}
done
# does the unscaled model form the head later? the first seed's, for three times the steps
# (unless ARGS gives the steps: ./train takes an option once)
long=--train.max_steps=6000
case " ${ARGS:-} " in *--train.max_steps*) long= ;; esac
# shellcheck disable=SC2086
$TRAIN --model.attn_scale=none $long --train.seed="$first" --train.out_dir="$OUT/$first/long_none" ${ARGS:-}

# the maps: the scaled and unscaled models 250 steps before the scaled one's first step past the
# threshold (the middle of the run when it never passes) and at the end
run="$OUT/$first/scale"
last=$(awk -F, 'NR > 1 { s = $1 } END { print s }' "$run/sqrt/metrics.csv")
phase=$(./tools/induction_report --phase-step "$run/sqrt")
if [ "$phase" = none ]; then before=$((last / 2 / 50 * 50)); else before=$(((phase - 250) / 50 * 50)); fi
[ "$before" -ge 50 ] || before=50
[ "$before" -lt "$last" ] || before=$last  # a short run (ARGS=--train.max_steps=N): its last step only
mkdir -p "$OUT/maps"
maps=
for v in sqrt none; do
    label=scaled
    [ "$v" = sqrt ] || label=unscaled
    for s in $(printf '%s\n%s\n' "$before" "$last" | sort -un); do
        svg="$OUT/maps/$v-$s.svg"
        ./sample "$run/$v/checkpoint_$s.bin" --attention-map "$svg" --prompt "$PROMPT"
        maps="$maps --map ${label},_after_${s}_steps=$svg"
    done
done
dirs=
for seed in $SEEDS; do dirs="$dirs $OUT/$seed"; done
# shellcheck disable=SC2086
./tools/induction_report --html "$OUT/report.html" $maps $dirs

# the probe rows of run directory $1's logs into docs directory $2, for docs/induction.md's figures
keep_probe_rows() {
    mkdir -p "$2"
    awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
        NR == 1 || $(c["in_context"]) != "" { print $1, $2, $(c["val_loss"]), $(c["first_copy_loss"]), $(c["second_copy_loss"]), $(c["in_context"]) }' \
        "$1/metrics.csv" > "$2/metrics.csv"
    awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
        { print $1, $2, $3, $(c["entropy_norm"]), $(c["max_weight"]), $(c["prev_token"]), $(c["induction"]) }' \
        "$1/attention.csv" > "$2/attention.csv"
}
for seed in $SEEDS; do
    for r in scale/sqrt scale/none onelayer; do
        keep_probe_rows "$OUT/$seed/$r" "docs/induction/$seed/$r"
    done
done
keep_probe_rows "$OUT/$first/long_none" "docs/induction/$first/long_none"
./tools/induction_report --run "$OUT/$first/long_none"
echo "wrote $OUT/report.html and the probe rows under docs/induction/"
