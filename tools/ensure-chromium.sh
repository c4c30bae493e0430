#!/bin/sh
# Make sure a Chromium is installed for `make test-browser`. On Debian/Ubuntu with root (or sudo
# without a password) it installs Debian's chromium package itself (apt-get update first); elsewhere
# it says how, and exits 1 so that the browser test is skipped.
for c in chromium chromium-browser google-chrome; do
    command -v "$c" >/dev/null 2>&1 && exit 0
done
if command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi
    if [ "$SUDO" != none ]; then
        echo "Chromium is missing: installing Debian's chromium with apt-get (for make test-browser)" >&2
        if $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null; then
            command -v chromium >/dev/null 2>&1 && exit 0
        fi
        echo "note: apt-get could not install chromium" >&2
    else
        echo "note: Chromium is not installed and apt-get needs root: sudo apt-get install chromium" >&2
    fi
else
    echo "note: Chromium is not installed (Debian/Ubuntu: apt-get install chromium)" >&2
fi
exit 1
