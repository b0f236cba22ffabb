#!/usr/bin/env bash
# tests/mpi_check.sh MPI_DIGITS [MPI_KV_INIT] - the MPI half under mpirun
# (make mpi-test):
#  - 2 and 4 ranks training the digits MLP data-parallel reach the weights of
#    one process (largest difference <= 1e-4), the same weights on every
#    rank (checksums) and the same test accuracy; also with the allreduce
#    cut into pieces of 1000 bytes;
#  - 2 and 4 ranks initialising the dist_sync store's keys differently
#    (MPI_KV_INIT, default: mpi_kv_init beside MPI_DIGITS): different values
#    give every rank rank 0's, and training stays identical; a different
#    shape, dtype or key, or a failure on one rank, fails dp_kv_init on every
#    rank with a log line, and the program ends cleanly well before the
#    collectives' timeout (so nothing waited for it);
#  - a rank that stops answering: the others fail their collective after
#    DEPENG_MPI_TIMEOUT_MS and the job exits non-zero within 60 s;
#  - a rank killed (SIGKILL) mid-training: the job exits non-zero within 60 s.
# Runs as root in CI, and 4 ranks on 2 cores: mpirun gets --allow-run-as-root
# and --oversubscribe (and Open MPI's OMPI_ALLOW_RUN_AS_ROOT variables).
set -u
bin=${1:?usage: tests/mpi_check.sh build/mpi_digits [build/mpi_kv_init]}
kv_init_bin=${2:-$(dirname "$bin")/mpi_kv_init}
cd "$(dirname "$0")/.." || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1"; fail=$((fail + 1)); [ -f "$2" ] && tail -20 "$2" | sed 's/^/  /'; }

if timeout 300 "${MPIRUN[@]}" -np 1 "$bin" --save "$tmp/ref.npy" > "$tmp/one.log" 2>&1 && [ -f "$tmp/ref.npy" ]; then
    ok "one process trains (reference)"
else ko "one process trains (reference)" "$tmp/one.log"; fi
ref_acc=$(sed -nE 's/^rank 0: test accuracy ([0-9.]+).*/\1/p' "$tmp/one.log")
for n in 2 4; do
    log=$tmp/np$n.log
    if timeout 300 "${MPIRUN[@]}" -np $n "$bin" --compare "$tmp/ref.npy" --tol 1e-4 > "$log" 2>&1; then
        sums=$(sed -nE 's/^rank [0-9]+: test accuracy [0-9.]+ weights checksum ([0-9a-f]+)/\1/p' "$log" | sort -u | wc -l)
        accs=$(sed -nE 's/^rank [0-9]+: test accuracy ([0-9.]+).*/\1/p' "$log" | sort -u)
        ranks=$(grep -c 'largest difference' "$log")
        if [ "$ranks" -eq "$n" ] && [ "$sums" -eq 1 ] && [ "$accs" = "$ref_acc" ]; then
            ok "$n ranks: the one-process weights within 1e-4, equal on every rank, accuracy $accs as one process"
            grep 'rank 0: largest' "$log" | sed 's/^/  /'
        else ko "$n ranks: ranks $ranks, distinct checksums $sums, accuracy '$accs' against '$ref_acc'" "$log"; fi
    else ko "$n ranks train within tolerance" "$log"; fi
done

# small chunks: every parameter's allreduce is started as several pieces
log=$tmp/chunks.log
if DEPENG_MPI_CHUNK_BYTES=1000 timeout 300 "${MPIRUN[@]}" -x DEPENG_MPI_CHUNK_BYTES -np 2 "$bin" --compare "$tmp/ref.npy" --tol 1e-4 > "$log" 2>&1 \
   && [ "$(grep -c 'largest difference' "$log")" -eq 2 ]; then
    ok "2 ranks, allreduce in pieces of 1000 bytes: the one-process weights within 1e-4"
else ko "2 ranks, allreduce in pieces of 1000 bytes" "$log"; fi

# ranks that initialise a key differently: each dp_kv_init fails on every
# rank or gives every rank rank 0's value; a hang would end in the 30 s
# timeout ("not done after"), so the run must be done well before it; with
# 4 ranks the broadcast goes in pieces of 8 bytes
for n in 2 4; do
    log=$tmp/kv_init$n.log
    chunk=0; [ $n -eq 4 ] && chunk=8
    start=$(date +%s)
    DEPENG_MPI_CHUNK_BYTES=$chunk DEPENG_MPI_TIMEOUT_MS=30000 timeout 120 "${MPIRUN[@]}" -x DEPENG_MPI_TIMEOUT_MS -x DEPENG_MPI_CHUNK_BYTES \
        -np $n "$kv_init_bin" > "$log" 2>&1
    rc=$?; took=$(( $(date +%s) - start ))
    passed=$(grep -c '^rank [0-9]*: kv init checks passed' "$log")
    refused=$(grep -c '^rank [0-9]*: dp_kv_init key [0-9]*: invalid arguments' "$log")
    if [ $rc -eq 0 ] && [ "$passed" -eq $n ] && [ "$refused" -eq $((4 * n)) ] && [ $took -lt 25 ] && ! grep -q 'not done after' "$log"; then
        ok "$n ranks initialising differently: rank 0's value everywhere, identical training, 4 mismatches refused on every rank, clean exit in ${took} s$([ $chunk -gt 0 ] && echo " (broadcast in pieces of $chunk bytes)")"
    else ko "$n ranks initialising differently (exit $rc after ${took} s, $passed ranks passed, $refused refusals of $((4 * n)))" "$log"; fi
done

# a rank that hangs: the collective times out on the others
start=$(date +%s)
DEPENG_MPI_TIMEOUT_MS=3000 timeout 60 "${MPIRUN[@]}" -x DEPENG_MPI_TIMEOUT_MS -np 2 "$bin" --epochs 1000 --stall-rank 1 --stall-step 20 > "$tmp/stall.log" 2>&1
rc=$?; took=$(( $(date +%s) - start ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'not done after 3000 ms' "$tmp/stall.log"; then
    ok "a rank that stops answering ends the job (exit $rc after ${took} s, the collective timed out)"
else ko "a rank that stops answering ends the job (exit $rc after ${took} s; 124 is the 60 s limit)" "$tmp/stall.log"; fi

# a rank killed mid-training
start=$(date +%s)
timeout 60 "${MPIRUN[@]}" -np 2 "$bin" --epochs 1000 > "$tmp/kill.log" 2>&1 &
job=$!
pid=
for _ in $(seq 1 200); do
    pid=$(sed -nE 's/^rank 1 of 2 \(pid ([0-9]+)\).*/\1/p' "$tmp/kill.log")
    [ -n "$pid" ] && break
    sleep 0.1
done
sleep 1
[ -n "$pid" ] && kill -9 "$pid"
wait $job; rc=$?; took=$(( $(date +%s) - start ))
if [ -n "$pid" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ]; then
    ok "a rank killed mid-training ends the job (exit $rc after ${took} s)"
else ko "a rank killed mid-training ends the job (pid '$pid', exit $rc after ${took} s; 124 is the 60 s limit)" "$tmp/kill.log"; fi

echo "mpi: $pass passed, $fail failed"
[ $fail -eq 0 ]
