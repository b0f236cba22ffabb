#!/usr/bin/env bash
# tests/browser_deps.sh - installs Debian's chromium (the headless browser
# tests/html_check.sh drives) with apt-get, only when it is missing.
# Idempotent: with chromium present it touches nothing.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    echo "tests/browser_deps.sh: nothing to install (chromium present)"
    exit 0
fi
"$(dirname "$0")/apt_install.sh" tests/browser_deps.sh chromium fonts-dejavu-core
