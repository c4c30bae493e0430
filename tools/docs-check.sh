#!/bin/sh
# tools/docs-check.sh: regenerate every figure the docs mark and fail when one is outside what the
# doc states. `make docs-check` runs it (and CI). Two kinds of marks, in README.md and docs/*.md:
#
#   1.38–1.41<!--fig demo final.scaled.val_loss-->
#       A figure from a run: the number (or range LO–HI, or LO..HI) just before the mark must hold
#       every value the named experiment gives over its seeds, after rounding to the digits
#       printed (a single number: every seed gives it, to those digits). demo@1337 names one seed.
#       The expression is a key of the experiment's figures, or KEY/KEY (a ratio) or KEY-KEY (a
#       difference). A figure ending in % is compared with 100 x the value.
#
#   <!--output lab64_softmax-->
#   ```
#   ...lines the command prints...
#   ```
#       A verbatim excerpt: every line of the fenced block that follows (but "...") must be a line
#       of the command's output.
#
# The experiments (a command per seed, and how its figures are read) are docs/experiments.txt.
# Keys of a "compare" experiment: STEP.VARIANT.COLUMN from compare.csv,
# STEP.VARIANT.lL.hH.COLUMN from each variant's attention.csv and final.VARIANT.KEY from its
# summary.json; of a "train" experiment the same without the variant (metrics.csv for STEP.loss,
# STEP.val_loss). Of a "text" experiment, LABEL.N: the N-th number of its line "LABEL: ..."
# (LABEL: lower-case letters, digits, '_' and blanks, starting with a letter or '_'; blanks
# written as _: "entropy floor: 0.848 nats" gives entropy_floor.1).
#
# Options: --show prints every figure with the values measured; --reuse keeps the runs of an
# earlier call (in build/docs-check) instead of running them again; --only EXP checks one
# experiment; --all runs every experiment of docs/experiments.txt, used by a doc or not (to write
# a new figure: run it, then --show lists the keys' values in build/docs-check/EXP/SEED.kv).
set -eu
cd "$(dirname "$0")/.."
OUT=build/docs-check
SHOW=0 REUSE=0 ONLY= ALL=0
while [ $# -gt 0 ]; do
    case "$1" in
    --show) SHOW=1 ;;
    --reuse) REUSE=1 ;;
    --only) ONLY=$2; shift ;;
    --all) ALL=1 ;;
    *) echo "usage: tools/docs-check.sh [--show] [--reuse] [--all] [--only EXPERIMENT]" >&2; exit 2 ;;
    esac
    shift
done
DOCS="README.md $(ls docs/*.md)"
mkdir -p "$OUT"

# ---- the experiments the docs use ----
used=$(cat $DOCS | grep -o '<!--\(fig\|output\) [A-Za-z0-9_@]*' | awk '{sub(/@.*/, "", $2); print $2}' | sort -u)
[ "$ALL" = 1 ] && used=$(grep -v '^#' docs/experiments.txt | awk -F'|' '{gsub(/ /, "", $1); if ($1 != "") print $1}')
[ -n "$ONLY" ] && used=$ONLY

# an experiment's line of docs/experiments.txt, and its field N (1 id, 2 kind, 3 seeds, 4 needs, 5 command)
experiment_line() { grep -v '^#' docs/experiments.txt | awk -v id="$1" -F'|' '{ k = $1; gsub(/^ +| +$/, "", k) } k == id'; }
field() { printf '%s\n' "$1" | awk -F'|' -v n="$2" '{ f = $n; gsub(/^ +| +$/, "", f); print f }'; }

# The figures of one run as "key value" lines.
extract() {  # extract KIND DIR
    kind=$1 dir=$2
    case "$kind" in
    compare)
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
                 { for (i = 3; i <= NF; i++) if ($i != "") print $1 "." $2 "." h[i], $i }' "$dir/compare.csv"
        for v in "$dir"/*/; do
            v=${v%/}; name=${v##*/}
            [ -f "$v/summary.json" ] || continue
            awk -v p="final.$name." -F'[":, ]+' '/^  "[a-z_]+": [-0-9.eE+]+,?$/ { print p $2, $3 }' "$v/summary.json"
            awk -F, -v p="$name" 'NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
                 { for (i = 4; i <= NF; i++) print $1 "." p ".l" $2 ".h" $3 "." h[i], $i }' "$v/attention.csv"
        done ;;
    train)
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
                 { for (i = 2; i <= NF; i++) if ($i != "") print $1 "." h[i], $i }' "$dir/metrics.csv"
        awk -v p="final." -F'[":, ]+' '/^  "[a-z_]+": [-0-9.eE+]+,?$/ { print p $2, $3 }' "$dir/summary.json"
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
                 { for (i = 4; i <= NF; i++) print $1 ".l" $2 ".h" $3 "." h[i], $i }' "$dir/attention.csv" ;;
    text)  # every line "LABEL: ..." gives LABEL.1, LABEL.2, ... for the numbers on it
        awk '/^[a-z_][a-z0-9_ ]*:/ { label = substr($0, 1, index($0, ":") - 1); gsub(/ +/, "_", label); n = 0
                 rest = substr($0, index($0, ":") + 1); m = split(rest, w, /[ \t]+/)
                 for (i = 1; i <= m; i++) { gsub(/[,()x]+$/, "", w[i]); if (w[i] ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) print label "." (++n), w[i] } }' "$dir.out" ;;
    *) echo "docs-check: unknown experiment kind '$kind'" >&2; exit 2 ;;
    esac
}

skipped=""
: > "$OUT/seeds.txt"
for id in $used; do
    line=$(experiment_line "$id")
    if [ -z "$line" ]; then echo "docs-check: the docs use experiment '$id', which docs/experiments.txt does not define" >&2; exit 1; fi
    kind=$(field "$line" 2) seeds=$(field "$line" 3) needs=$(field "$line" 4) cmd=$(field "$line" 5)
    echo "$id $seeds" >> "$OUT/seeds.txt"
    needs=$(eval "echo \"$needs\"")  # may name an environment variable, e.g. ${TINYSHAKESPEARE:-...}
    if [ -n "$needs" ] && [ "$needs" != "-" ] && [ ! -e "$needs" ]; then
        echo "docs-check: skipping experiment '$id': it needs $needs, which is absent"
        skipped="$skipped $id"
        continue
    fi
    for seed in $seeds; do
        dir="$OUT/$id/$seed"
        if [ "$REUSE" = 1 ] && [ -f "$dir.kv" ]; then continue; fi
        rm -rf "$dir"; mkdir -p "$dir"
        run=$(printf '%s' "$cmd" | sed "s|SEED|$seed|g; s|OUT|$dir|g; s|NEEDS|$needs|g")
        echo "docs-check: $run"
        t0=$(date +%s)
        if ! sh -c "$run" > "$dir.out" 2> "$dir.err"; then
            echo "docs-check: '$run' failed:" >&2; tail -5 "$dir.err" >&2; exit 1
        fi
        extract "$kind" "$dir" > "$dir.kv"
        echo "docs-check:   done in $(( $(date +%s) - t0 )) s"
    done
done

# ---- the figures ----
status=0
for doc in $DOCS; do
    # verbatim outputs
    awk -v doc="$doc" -v out="$OUT" -v skipped=" $skipped " '
        BEGIN { while ((getline l < (out "/seeds.txt")) > 0) checked[substr(l, 1, index(l, " ") - 1)] = 1 }
        /<!--output [A-Za-z0-9_]+-->/ { match($0, /<!--output [A-Za-z0-9_]+/); id = substr($0, RSTART + 11, RLENGTH - 11); want = 1; next }
        want == 1 && /^```/ { want = 2; n = 0; next }
        want == 2 && /^```/ {
            want = 0
            if (index(skipped, " " id " ")) next
            if (!(id in checked)) next  # an experiment this call does not check (--only)
            file = out "/" id "/-.out"
            while ((getline l < file) > 0) have[l] = 1
            close(file)
            for (i = 1; i <= n; i++) if (!(lines[i] in have)) {
                printf "%s:%d: this line of the output of %s is not what it prints now: %s\n", doc, at[i], id, lines[i]
                bad = 1
            }
            delete have
            next
        }
        want == 2 { if ($0 != "..." && $0 != "") { lines[++n] = $0; at[n] = NR } }
        END { exit bad }' "$doc" || status=1
    # numeric figures
    awk -v doc="$doc" -v out="$OUT" -v show="$SHOW" -v skipped=" $skipped " '
        BEGIN { while ((getline l < (out "/seeds.txt")) > 0) { k = index(l, " "); seeds_of[substr(l, 1, k - 1)] = substr(l, k + 1) } }
        function load(id, seed,   file, l, k) {
            if ((id, seed) in loaded) return
            loaded[id, seed] = 1
            file = out "/" id "/" seed ".kv"
            while ((getline l < file) > 0) { split(l, k, " "); val[id, seed, k[1]] = k[2] + 0; has[id, seed, k[1]] = 1 }
            close(file)
        }
        # KEY, KEY/KEY or KEY-KEY for one run; "" (and missing set) when a key is absent
        function value(id, seed, expr,   p, x, y) {
            if ((p = index(expr, "/")) || (p = index(expr, "-"))) {
                x = value(id, seed, substr(expr, 1, p - 1)); y = value(id, seed, substr(expr, p + 1))
                if (x == "" || y == "") return ""
                if (substr(expr, p, 1) == "-") return x - y
                return y != 0 ? x / y : ""
            }
            if (!has[id, seed, expr]) { missing = expr; return "" }
            return val[id, seed, expr]
        }
        # half a unit in the last printed digit of a number: 0.005 for 1.39, 0.05 for 4.5e-5 x 1e5
        function half_ulp(s,   e, mant, d) {
            e = 0; mant = s
            if (index(s, "e")) { e = substr(s, index(s, "e") + 1) + 0; mant = substr(s, 1, index(s, "e") - 1) }
            d = index(mant, ".") ? length(mant) - index(mant, ".") : 0
            return 0.5 * 10 ^ (e - d)
        }
        {
            line = $0
            while (match(line, /<!--fig [^>]*-->/)) {
                mark = substr(line, RSTART + 8, RLENGTH - 11); before = substr(line, 1, RSTART - 1)
                line = substr(line, RSTART + RLENGTH)
                split(mark, m, " "); id = m[1]; expr = m[2]; seedsel = ""
                if (index(id, "@")) { seedsel = substr(id, index(id, "@") + 1); id = substr(id, 1, index(id, "@") - 1) }
                if (index(skipped, " " id " ")) continue
                if (!(id in seeds_of)) continue  # an experiment this call does not check (--only)
                # the figure: the last number or range before the mark
                pct = before ~ /%[*_]*$/
                if (!match(before, /-?[0-9]+(\.[0-9]+)?(e-?[0-9]+)?((–|\.\.)-?[0-9]+(\.[0-9]+)?(e-?[0-9]+)?)?[%x×*_]*$/)) {
                    printf "%s:%d: no number before <!--fig %s-->\n", doc, NR, mark; bad = 1; continue
                }
                fig = substr(before, RSTART, RLENGTH); gsub(/[%x×*_]+$/, "", fig)
                if (index(fig, "–")) split(fig, r, "–"); else if (index(fig, "..")) split(fig, r, /\.\./); else { r[1] = fig; r[2] = fig }
                lo = r[1] - half_ulp(r[1]); hi = r[2] + half_ulp(r[2])
                n = split(seedsel != "" ? seedsel : seeds_of[id], s, " ")
                list = ""; ok = 1; outside = 0
                for (i = 1; i <= n; i++) {
                    load(id, s[i]); missing = ""; v = value(id, s[i], expr)
                    if (v == "") { printf "%s:%d: <!--fig %s-->: the run with seed %s has no figure %s\n", doc, NR, mark, s[i], missing; bad = 1; ok = 0; break }
                    if (pct) v *= 100
                    list = list sprintf(" %.6g", v)
                    if (v < lo - 1e-12 * (lo < 0 ? -lo : lo) || v > hi + 1e-12 * (hi < 0 ? -hi : hi)) outside = 1
                }
                if (!ok) continue
                if (show) printf "%s:%d: %s <!--fig %s--> measured%s\n", doc, NR, fig, mark, list
                if (outside) { printf "%s:%d: %s is not what %s gives now:%s\n", doc, NR, fig, mark, list; bad = 1 }
            }
        }
        END { exit bad }' "$doc" || status=1
done
if [ "$status" = 0 ]; then echo "docs-check: every marked figure holds"; else echo "docs-check: FAILED"; fi
exit $status
