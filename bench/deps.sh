#!/usr/bin/env bash
# bench/deps.sh - installs what the peer benchmark drivers need (make bench-deps):
# StarPU 1.3 headers/libraries and pkg-config, from Debian packages, only when
# missing. OpenMP needs nothing here: libgomp ships with gcc.
# Idempotent: a second run with everything present touches nothing.
set -euo pipefail

# Packages whose absence we can detect cheaply with dpkg-query.
want=(pkg-config libstarpu-dev)
missing=()
for p in "${want[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "bench/deps.sh: nothing to install (${want[*]} present)"
    exit 0
fi

# Root installs directly; otherwise through sudo when it exists.
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "bench/deps.sh: need root (or sudo) to install: ${missing[*]}" >&2
        exit 1
    fi
fi

echo "bench/deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
