#!/usr/bin/env bash
# bench/mpi.sh BENCH_MPI MPI_DIGITS - make bench-mpi: allreduce throughput
# through depeng against MPI_Allreduce (2 ranks, 4 KB..64 MB), then the time
# per training step of the digits MLP on 2 ranks with communication
# overlapped against a wait for the backward pass before any push.
set -eu
bench=${1:?usage: bench/mpi.sh build/bench_mpi build/mpi_digits}; digits=${2:?}
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2)
"${MPIRUN[@]}" "$bench"
echo "training step, digits MLP, 2 ranks, 5 epochs:"
for mode in "" --barrier; do
    "${MPIRUN[@]}" "$digits" --epochs 5 --time $mode | grep 'rank 0: .* per step'
done
