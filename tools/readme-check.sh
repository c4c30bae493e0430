#!/bin/sh
# tools/readme-check.sh: `make readme-check` (and CI): every command of the README's shell blocks,
# run in the README's order, in a fresh copy of the repository (the tracked files of this work
# tree and the new files not ignored, as a fresh clone has them: no build/, no out/, no downloaded
# data), as written but
# for the number of training steps of the commands that would take long; the check fails at the
# first command that exits non-zero, naming it and showing the end of its output.
#
# A command is a line of a fenced block without a language tag that starts with make, ./PROGRAM,
# cc, mpirun or rsvg-convert. Left out, each with the reason printed:
#   - the test targets (make test, test-*, docs-check, fuzz, check-safetensors): CI runs each itself;
#   - what needs what this machine may not have: PyTorch (make bench-torch), the network
#     (make shakespeare; TINYSHAKESPEARE=FILE supplies a local copy instead, and without either
#     the commands that train on Tiny Shakespeare are left out too), MPI and other machines
#     (the MPI section: make test runs the MPI build's tests), librsvg (rsvg-convert);
#   - a command the README gives a second time (the first ran).
# "Fewer steps": the trainer's --train.max_steps (added or replaced), the Makefile's ARGS for make
# run and the demos, PER_KIND (answer characters measured per line kind) for make demo-explain,
# BENCH_STEPS for make bench.
# It fails, before running anything, when README.md is longer than 250 lines.
# Usage: tools/readme-check.sh [--steps N] [--keep] (N: the training steps of a long command,
# default 30; --keep leaves the copy in build/readme-check for a look).
set -u
cd "$(dirname "$0")/.."
STEPS=30 KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
    --steps) STEPS=$2; shift ;;
    --keep) KEEP=1 ;;
    *) echo "usage: tools/readme-check.sh [--steps N] [--keep]" >&2; exit 2 ;;
    esac
    shift
done
case "$STEPS" in ''|*[!0-9]*) echo "readme-check: --steps '$STEPS' is not a positive integer" >&2; exit 2 ;; esac
ROOT=$(pwd)
WORK=build/readme-check
rm -rf "$WORK" && mkdir -p "$WORK/repo" || exit 1
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$WORK/repo" || { echo "readme-check: cannot copy the tracked files" >&2; exit 1; }
cp README.md "$WORK/README.md"
cd "$WORK/repo" || exit 1

# the README teaches; the rest lives in docs/
max_lines=250
lines=$(wc -l < ../README.md)
if [ "$lines" -gt "$max_lines" ]; then
    echo "readme-check: README.md has $lines lines, at most $max_lines: move reference material to docs/ and link it" >&2
    exit 1
fi

# the commands, one a line, in the README's order
awk '/^```/ { if (inblock) inblock = 0; else inblock = ($0 == "```"); next }
     inblock && /^(make|\.\/[a-z]|cc |mpirun|rsvg-convert)/ { print }' ../README.md > ../commands.txt
[ -s ../commands.txt ] || { echo "readme-check: found no command in README.md" >&2; exit 1; }

shakespeare=0
if [ -n "${TINYSHAKESPEARE:-}" ]; then
    [ -s "$TINYSHAKESPEARE" ] || { echo "readme-check: TINYSHAKESPEARE='$TINYSHAKESPEARE' is not a file" >&2; exit 2; }
    mkdir -p data && cp "$TINYSHAKESPEARE" data/tinyshakespeare.txt && shakespeare=1
fi
pass=0 skipped=0 n=0
# a long command with its step count cut: the trainer's --train.max_steps replaced or added, the
# Makefile's training targets given ARGS
# LINE with TEXT added to its command, before its comment if it has one
add() {
    printf '%s\n' "$1" | awk -v t="$2" '{ i = index($0, " #"); if (i) print substr($0, 1, i - 1) " " t substr($0, i); else print $0 " " t }'
}
shorten() {
    line=$1
    case "$line" in
    "make run"*|"make demo-mistakes"*|"make explain-model"*) add "$line" "ARGS=--train.max_steps=$STEPS"; return ;;
    "make demo-explain"*) add "$line" "ARGS=--train.max_steps=$STEPS PER_KIND=20"; return ;;
    "make demo"*) add "$line" "ARGS=--train.max_steps=$STEPS"; return ;;
    "make bench-context"*) add "$line" 'BENCH_CONTEXT_ARGS="--steps 1 --max-t 256"'; return ;;
    "make bench"*) add "$line" "BENCH_STEPS=3"; return ;;
    esac
    case "$line" in
    *"./train "*--help*|*"./train "*--bench*) printf '%s\n' "$line"; return ;;
    *"./train --resume"*--train.max_steps=*)
        # a resume continues the shortened run by a few steps
        printf '%s\n' "$line" | sed "s/--train\.max_steps=[0-9]*/--train.max_steps=$((STEPS + 10))/"; return ;;
    *"./train "*--train.max_steps=*)
        printf '%s\n' "$line" | sed "s/--train\.max_steps=[0-9]*/--train.max_steps=$STEPS/"; return ;;
    *"./train configs/"*) add "$line" "--train.max_steps=$STEPS"; return ;;
    esac
    printf '%s\n' "$line"
}
skip() { skipped=$((skipped + 1)); echo "readme-check: left out: $1"; echo "    ($2)"; }
while IFS= read -r line; do
    n=$((n + 1))
    case "$line" in
    "make test"*|"make docs-check"*|"make readme-check"*|"make fuzz"*|"make check-safetensors"*)
        skip "$line" "a test target: CI runs it as a step of its own"; continue ;;
    "make bench-torch"*)
        if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then skip "$line" "needs PyTorch (python3-torch)"; continue; fi ;;
    "make shakespeare"*)
        if [ "$shakespeare" = 0 ]; then
            if sh tools/get-shakespeare.sh >../shakespeare.txt 2>&1; then shakespeare=1
            else skip "$line" "needs the network ($(tail -n 1 ../shakespeare.txt)); TINYSHAKESPEARE=FILE gives a local copy"; continue; fi
        fi ;;
    *shakespeare*)
        if [ "$shakespeare" = 0 ]; then skip "$line" "needs data/tinyshakespeare.txt (make shakespeare)"; continue; fi ;;
    "make MPI=1"*|mpirun*)
        skip "$line" "needs MPI and, for -np 4 --hostfile, other machines; make test runs the MPI build's tests"; continue ;;
    rsvg-convert*)
        if ! command -v rsvg-convert >/dev/null 2>&1; then skip "$line" "needs rsvg-convert (librsvg2-bin)"; continue; fi ;;
    esac
    bare=$(printf '%s\n' "$line" | awk '{ i = index($0, " #"); print i ? substr($0, 1, i - 1) : $0 }' | sed 's/ *$//')
    if grep -qxF -- "$bare" ../ran.txt 2>/dev/null; then
        skip "$line" "the same command as an earlier one, which ran"; continue
    fi
    printf '%s\n' "$bare" >>../ran.txt
    cmd=$(shorten "$line")
    echo "readme-check: [$n] $cmd"
    start=$(date +%s)
    if sh -c "$cmd" </dev/null >../out.txt 2>&1; then
        pass=$((pass + 1))
        echo "    ok, $(( $(date +%s) - start )) s"
    else
        rc=$?
        echo "readme-check: FAILED (exit $rc): $cmd" >&2
        echo "    the README's line: $line" >&2
        tail -n 15 ../out.txt | sed 's/^/    | /' >&2
        exit 1
    fi
done < ../commands.txt
cd "$ROOT" || exit 1
[ "$KEEP" = 1 ] || rm -rf "$WORK"
echo "readme-check: $pass commands ran as written (steps cut to $STEPS where long), $skipped left out, 0 failed"
