#!/bin/sh
# tools/sweep-table.sh DIR: the figures of docs/scaling.md's section "Past the scale: logit
# growth", read from the sweeps `make demo-stability` wrote for one seed and committed under
# docs/stability/SEED/ (scale/: --compare model.attn_scale=sqrt,none; qk/: --compare
# model.qk_norm=none,layernorm; zloss/: train.z_loss 1e-4). One line "LABEL: numbers" per
# figure, in the form tools/docs-check.sh reads (a "text" experiment), V the sweep's directory
# and the variant ("scale sqrt", "qk layernorm"; a sweep without --compare: its directory alone):
#   sensitivity V: S        the learning-rate sensitivity report.md states (the program's number)
#   val loss V: L1 .. LN    the final validation loss at each learning rate of the grid (empty: diverged)
#   max logit V: X1 .. XN   the max attention logit of each run
#   min entropy V: H1 .. HN the minimum normalised attention entropy of each run
#   best val loss V: L      the lowest final validation loss of the grid
#   diverged V: K           how many runs the divergence guard stopped
#   first diverged V: LR    the lowest learning rate that diverged (only when one did)
#   loss0 V: L0             the loss at initialisation
# It also recomputes each sensitivity from sweep.csv (mean over the grid of min(val_loss, loss0)
# minus its minimum, a diverged run counted at loss0) and fails when report.md's number is not
# that, to the 4 decimals sweep.csv keeps.
set -eu
dir=$1
for sweep in scale qk zloss; do
    d="$dir/$sweep"
    [ -f "$d/sweep.csv" ] || continue
    awk -F, -v sweep="$sweep" -v report="$d/report.md" '
        NR == 1 { next }
        {
            v = ($1 == "base") ? sweep : sweep " " $1
            if (!(v in n)) order[++nv] = v
            k = ++n[v]; loss0[v] = $9 + 0
            val[v, k] = $4; logit[v, k] = $7; ent[v, k] = $8
            if ($5 == "yes") { div[v]++; if (!(v in first)) first[v] = $2 }
            name[v] = $1
        }
        END {
            for (i = 1; i <= nv; i++) {
                v = order[i]; s = 0; best = 1e30; bestval = 1e30; lv = ""; ll = ""; le = ""
                for (k = 1; k <= n[v]; k++) {
                    if (val[v, k] != "" && val[v, k] + 0 < bestval) bestval = val[v, k] + 0
                    l = (val[v, k] != "" && val[v, k] + 0 < loss0[v]) ? val[v, k] + 0 : loss0[v]
                    s += l; if (l < best) best = l
                    lv = lv " " val[v, k]; ll = ll " " logit[v, k]; le = le " " ent[v, k]
                }
                s = s / n[v] - best
                # the sentence report.md states for this variant
                want = "- " name[v] ": learning-rate sensitivity "; got = ""
                while ((getline line < report) > 0) if (index(line, want) == 1) got = substr(line, length(want) + 1)
                close(report)
                split(got, w, " ")
                if (got == "" || (w[1] - s > 0.001 || s - w[1] > 0.001)) {
                    printf "sweep-table: %s: report.md states sensitivity %s for %s, sweep.csv gives %.4f\n", report, got, name[v], s > "/dev/stderr"
                    bad = 1
                }
                printf "sensitivity %s: %s\n", v, w[1]
                printf "val loss %s:%s\n", v, lv
                printf "max logit %s:%s\n", v, ll
                printf "min entropy %s:%s\n", v, le
                printf "best val loss %s: %.4f\n", v, bestval
                printf "diverged %s: %d\n", v, div[v] + 0
                if (v in first) printf "first diverged %s: %s\n", v, first[v]
                printf "loss0 %s: %s\n", v, loss0[v]
            }
            exit bad
        }' "$d/sweep.csv"
done
