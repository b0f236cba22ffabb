#!/usr/bin/env bash
# bench/deps.sh - installs what the peer benchmark drivers need (make bench-deps):
# StarPU 1.3 headers/libraries, oneTBB (libtbb-dev), OpenBLAS (the CBLAS path of dot, and its
# speed reference) and pkg-config, from Debian packages, only when missing.
# OpenMP needs nothing here: libgomp ships with gcc.
# Idempotent: a second run with everything present touches nothing.
set -euo pipefail

# What is missing: pkg-config is checked as a command (pkgconf provides it
# too), StarPU through dpkg (the -dev package carries starpu-1.3.pc).
want=(pkg-config libstarpu-dev libtbb-dev libopenblas-dev)
missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
for pkg in libstarpu-dev libtbb-dev libopenblas-dev; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "bench/deps.sh: nothing to install (${want[*]} present)"
    exit 0
fi
"$(dirname "$0")/../tests/apt_install.sh" bench/deps.sh "${missing[@]}"
