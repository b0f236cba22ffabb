#!/usr/bin/env bash
# tests/torch_deps.sh - installs python3-torch (Debian's, for /usr/bin/python3)
# and libopenblas0-pthread (the BLAS it loads) when torch cannot be imported,
# for tests/torch_diff_check.sh; otherwise touches nothing.
set -euo pipefail
if /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
    echo "tests/torch_deps.sh: nothing to install (python3-torch present)"
    exit 0
fi
"$(dirname "$0")/apt_install.sh" tests/torch_deps.sh python3 python3-torch libopenblas0-pthread
