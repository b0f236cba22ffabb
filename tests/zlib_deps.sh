#!/usr/bin/env bash
# tests/zlib_deps.sh - installs zlib's headers and library (Debian's
# zlib1g-dev) when a program cannot be linked with -lz. Only
# tests/test_inflate_zlib.c needs them: it checks the header's own inflater
# and deflater against zlib. The library never uses zlib.
set -euo pipefail
links() {
  printf '#include <zlib.h>\nint main(void) { return zlibVersion() == 0; }\n' \
    | "${CC:-cc}" -x c - -o /dev/null -lz 2>/dev/null
}
links && exit 0
"$(dirname "$0")/apt_install.sh" tests/zlib_deps.sh zlib1g-dev
links || { echo "tests/zlib_deps.sh: cannot link with -lz after installing zlib1g-dev" >&2; exit 1; }
