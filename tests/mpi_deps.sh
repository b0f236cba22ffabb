#!/usr/bin/env bash
# tests/mpi_deps.sh - installs Open MPI (Debian's libopenmpi-dev for mpicc and
# the headers, openmpi-bin for mpirun) with apt-get when mpicc or mpirun is
# missing; a second run with both present touches nothing.
set -euo pipefail
missing=()
command -v mpicc >/dev/null 2>&1 || missing+=(libopenmpi-dev)
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
if [ "${#missing[@]}" -eq 0 ]; then
    echo "tests/mpi_deps.sh: nothing to install (mpicc, mpirun present)"
    exit 0
fi
"$(dirname "$0")/apt_install.sh" tests/mpi_deps.sh "${missing[@]}"
