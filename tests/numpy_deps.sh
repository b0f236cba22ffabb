#!/usr/bin/env bash
# tests/numpy_deps.sh - installs python3-numpy (Debian's, for /usr/bin/python3)
# when it is missing, for tests/numpy_diff_check.sh; otherwise touches nothing.
set -euo pipefail
if /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1; then
    echo "tests/numpy_deps.sh: nothing to install (python3-numpy present)"
    exit 0
fi
"$(dirname "$0")/apt_install.sh" tests/numpy_deps.sh python3 python3-numpy
