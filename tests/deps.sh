#!/usr/bin/env bash
# tests/deps.sh - installs what tests/consumer_check.sh needs beyond a C
# compiler and make: CMake and pkg-config, from Debian packages, only when
# missing (a second run with both present touches nothing). It waits up to
# five minutes for another apt-get to release the package lock.
set -euo pipefail

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if [ "${#missing[@]}" -eq 0 ]; then
    echo "tests/deps.sh: nothing to install (cmake, pkg-config present)"
    exit 0
fi
"$(dirname "$0")/apt_install.sh" tests/deps.sh "${missing[@]}"
