#!/usr/bin/env bash
# tests/browser_deps.sh - installs Debian's chromium (the headless browser
# tests/html_check.sh drives) with apt-get, only when it is missing.
# Idempotent: with chromium present it touches nothing.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    echo "tests/browser_deps.sh: nothing to install (chromium present)"
    exit 0
fi

# Root installs directly; otherwise through sudo when it exists.
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "tests/browser_deps.sh: need root (or sudo) to install chromium" >&2
        exit 1
    fi
fi

echo "tests/browser_deps.sh: installing chromium"
export DEBIAN_FRONTEND=noninteractive
${SUDO[@]+"${SUDO[@]}"} apt-get -o DPkg::Lock::Timeout=900 update -q
${SUDO[@]+"${SUDO[@]}"} apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends chromium fonts-dejavu-core
