#!/bin/sh
# Make sure the build's one library, cJSON, is installed. On Debian/Ubuntu with root (or sudo
# without a password) it installs libcjson-dev and pkg-config itself; elsewhere it says how.
if pkg-config --exists libcjson 2>/dev/null; then exit 0; fi
for d in /usr/include /usr/local/include /opt/homebrew/include; do
    [ -f "$d/cjson/cJSON.h" ] && exit 0
done
if command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi
    if [ "$SUDO" != none ]; then
        echo "cJSON is missing: installing libcjson-dev and pkg-config with apt-get" >&2
        $SUDO apt-get update -qq && $SUDO apt-get install -y -qq libcjson-dev pkg-config >/dev/null && exit 0
    fi
fi
cat >&2 <<'MSG'
error: the cJSON library (headers and libcjson) is not installed. Install it with:
  Debian/Ubuntu:  sudo apt-get install libcjson-dev pkg-config
  Fedora:         sudo dnf install cjson-devel
  macOS:          brew install cjson
MSG
exit 1
