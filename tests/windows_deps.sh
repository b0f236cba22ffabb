#!/usr/bin/env bash
# tests/windows_deps.sh - installs what make windows-test needs, only when
# missing: the MinGW-w64 cross compiler (package mingw-w64) and 64-bit Wine
# (package wine64). The tests are 64-bit programs, so Debian's wine64 alone
# runs them: no i386 architecture and no 32-bit Wine are needed.
# Idempotent: a second run with everything present touches nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing+=(mingw-w64)
tests/wine_run.sh --find >/dev/null 2>&1 || missing+=(wine64)
if [ "${#missing[@]}" -eq 0 ]; then
    echo "tests/windows_deps.sh: nothing to install (MinGW-w64 and Wine present)"
    exit 0
fi
"$(dirname "$0")/apt_install.sh" tests/windows_deps.sh "${missing[@]}"
