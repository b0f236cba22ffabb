#!/usr/bin/env bash
# tests/wine_run.sh PROGRAM.exe [ARGS...] - runs a Windows program under Wine
# with a Wine prefix of its own in build/win/wineprefix (created on the first
# run, which takes a few seconds), Wine's debug output off, and no offer to
# install Mono or Gecko. tests/wine_run.sh --find prints the Wine used.
set -u
wine=""
for w in wine64 wine /usr/lib/wine/wine64; do
    if command -v "$w" >/dev/null 2>&1; then wine=$(command -v "$w"); break; fi
done
[ -n "$wine" ] || { echo "tests/wine_run.sh: Wine not found (tests/windows_deps.sh installs it)" >&2; exit 127; }
if [ "${1:-}" = "--find" ]; then echo "$wine"; exit 0; fi
root=$(cd "$(dirname "$0")/.." && pwd)
export WINEPREFIX="${WINEPREFIX:-$root/build/win/wineprefix}"
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}"
mkdir -p "$WINEPREFIX"
exec "$wine" "$@"
