#!/bin/sh
# tools/get-shakespeare.sh: `make shakespeare`: download Tiny Shakespeare (the char-rnn corpus,
# 1115394 bytes) to data/tinyshakespeare.txt. The file appears whole or not at all (downloaded to
# a temporary name, checked, then renamed). Without a network it fails with one line saying how
# to use a copy that is already on this machine. Usage: tools/get-shakespeare.sh [-o FILE]
# (default data/tinyshakespeare.txt); TINYSHAKESPEARE_URL replaces the address (the tests use it).
URL=${TINYSHAKESPEARE_URL:-https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt}
OUT=data/tinyshakespeare.txt
if [ "${1:-}" = -o ] && [ -n "${2:-}" ]; then
    OUT=$2
elif [ $# -gt 0 ]; then
    echo "usage: tools/get-shakespeare.sh [-o FILE]" >&2
    exit 2
fi
SIZE=1115394
if [ -s "$OUT" ]; then
    echo "$OUT is already there ($(wc -c <"$OUT") bytes); remove it to download it again"
    exit 0
fi
local_copy="with a copy already on this machine, put it at $OUT (cp PATH $OUT) or train on it where it is: ./train configs/shakespeare_char.json --data.path=PATH"
mkdir -p "$(dirname "$OUT")" || exit 1
tmp="$OUT.download.$$"
trap 'rm -f "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if command -v curl >/dev/null 2>&1; then
    curl -fsSL --connect-timeout 20 --max-time 300 -o "$tmp" "$URL" 2>"$tmp.err"
    rc=$?
    why=$(head -n 1 "$tmp.err" | sed 's/^curl: ([0-9]*) //')
    rm -f "$tmp.err"
elif command -v wget >/dev/null 2>&1; then
    wget -q --timeout=20 -O "$tmp" "$URL"
    rc=$?
    why="wget exit $rc"
else
    echo "make shakespeare: neither curl nor wget is installed to download $URL; $local_copy" >&2
    exit 1
fi
if [ "$rc" != 0 ]; then
    echo "make shakespeare: cannot download $URL (${why:-no network?}); $local_copy" >&2
    exit 1
fi
got=$(wc -c <"$tmp")
if [ "$got" != "$SIZE" ]; then
    echo "make shakespeare: $URL gave $got bytes, not Tiny Shakespeare's $SIZE; nothing written to $OUT; $local_copy" >&2
    exit 1
fi
mv "$tmp" "$OUT" || exit 1
echo "wrote $OUT ($SIZE bytes); now: ./train configs/shakespeare_char.json"
