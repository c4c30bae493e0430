#!/bin/sh
# tools/induction-rerun.sh OUT: the committed figures of docs/induction.md checked against a fresh
# run (make docs-check): the first STEPS (100) steps of seed 1337's scaled and unscaled runs trained
# again into OUT, with the learning-rate schedule of the whole run (train.lr_decay_steps), must give
# the probe rows committed under docs/induction/1337/scale/: every previous-token and induction
# score and both copies' losses within TOL (0.002; another vector width or thread count moves the
# last digits). Prints "rerun rows: N" and "rerun max difference: X"; exits 1 when a value differs
# by more or a committed row is missing.
set -eu
cd "$(dirname "$0")/.."
out=$1 steps=${STEPS:-100} tol=${TOL:-0.002}
ref=docs/induction/1337/scale
total=$(awk -F, '/"max_steps"/ { sub(/.*"max_steps": */, ""); sub(/[^0-9].*/, ""); print; exit }' configs/induction.json)
./train configs/induction.json --compare model.attn_scale=sqrt,none --train.seed=1337 --train.max_steps="$steps" \
    --train.lr_decay_steps="$total" --train.out_dir="$out" --train.overwrite=true --sample.tokens=0 > /dev/null
for v in sqrt none; do
    # attention.csv: step, layer, head -> prev_token, induction; metrics.csv: step -> the copies' losses
    awk -F, -v steps="$steps" -v v="$v" -v kind=attention '
        FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; file++; next }
        $1 > steps { next }
        file == 1 { ref[$1 "," $2 "," $3] = $(c["prev_token"]) " " $(c["induction"]); next }
        { have[$1 "," $2 "," $3] = $(c["prev_token"]) " " $(c["induction"]) }
        END { for (k in ref) { if (!(k in have)) { print "missing " v " " k; continue }
                               split(ref[k], a, " "); split(have[k], b, " "); print "diff", a[1] - b[1]; print "diff", a[2] - b[2] } }' \
        "$ref/$v/attention.csv" "$out/$v/attention.csv"
    awk -F, -v steps="$steps" -v v="$v" '
        FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; file++; next }
        $1 > steps || $(c["first_copy_loss"]) == "" { next }
        file == 1 { ref[$1] = $(c["first_copy_loss"]) " " $(c["second_copy_loss"]); next }
        { have[$1] = $(c["first_copy_loss"]) " " $(c["second_copy_loss"]) }
        END { for (k in ref) { if (!(k in have)) { print "missing " v " " k; continue }
                               split(ref[k], a, " "); split(have[k], b, " "); print "diff", a[1] - b[1]; print "diff", a[2] - b[2] } }' \
        "$ref/$v/metrics.csv" "$out/$v/metrics.csv"
done | awk -v tol="$tol" '
    /^missing/ { print "rerun: no row for the committed " $2 " " $3 > "/dev/stderr"; bad = 1; next }
    { d = $2 < 0 ? -$2 : $2; n++; if (d > max) max = d }
    END { printf "rerun rows: %d\nrerun max difference: %.6f\n", n, max
          if (n == 0 || max > tol) { printf "rerun: differs from docs/induction/1337 by %.6f (tolerance %s)\n", max, tol > "/dev/stderr"; bad = 1 }
          exit bad }'
