#!/usr/bin/env bash
# make bench in miniature (-n 5000, a few seconds): every driver that is
# built runs every workload, the DAG workloads (W4, W5) are checked against
# the sequential run by the drivers themselves, and bench/run.sh sums up.
# Checks that each system reported each workload and that the summary has
# its ratio and speedup lines. StarPU's driver is SKIP where StarPU is not
# installed (make bench-deps). Prints "bench: N passed, M failed, K skipped".
cd "$(dirname "$0")/.." || exit 1
out=$(bench/run.sh build/bench_depeng build/bench_seq build/bench_omp build/bench_starpu build/bench_tbb build/bench_ndarray -- -n 5000 2>&1); rc=$?
pass=0; fail=0; skip=0
check() {   # check NAME CONDITION...
    local name=$1; shift
    if "$@"; then echo "PASS $name"; pass=$((pass + 1)); else echo "FAIL $name"; fail=$((fail + 1)); fi
}
has() { grep -qE "$1" <<<"$out"; }
check "bench/run.sh exits 0 (no FAIL line, no driver error)" test "$rc" -eq 0
check "no FAIL line" bash -c '! grep -q "^FAIL" <<<"$1"' _ "$out"
systems="depeng-naive depeng-pooled depeng-perdevice sequential openmp"
if [ -x build/bench_starpu ]; then systems="$systems starpu-eager starpu-lws"
else echo "SKIP starpu: not built (StarPU not installed; make bench-deps)"; skip=$((skip + 1)); fi
if [ -x build/bench_tbb ]; then systems="$systems tbb-taskgroup tbb-flowgraph"
else echo "SKIP tbb: not built (libtbb-dev not installed; make bench-deps)"; skip=$((skip + 1)); fi
for s in $systems; do
    for w in W1 W2 W3 W4 W5-1us W5-10us; do check "$w $s" has "^bench $w system=$s ns_per_task=[0-9.]+ min=[0-9.]+ max=[0-9.]+ reps=5 "; done
done
for w in W5-1us W5-10us; do check "$w ceiling" has "^bench $w system=two-threads-no-deps "; done
check "W2-op depeng" has "^bench W2-op system=depeng-perdevice "
check "memory figures" has "^mem bytes_per_var=[0-9.]+ .*" 
check "memory per pending op" has "^mem bytes_per_pending_op=[0-9.]+ "
for w in W1 W2 W3 W4; do check "floor $w: push alone, drain alone" has "^floor $w system=depeng-perdevice push_ns=[0-9.]+ drain_ns=[0-9.]+ line_transfer_ns=[0-9.]+ "; done
for w in W1 W2 W2-op W3 W4; do check "ratio $w" has "^ratio $w depeng/best_peer=[0-9.]+ best_peer=[a-z]"; done
for w in W5-1us W5-10us; do check "speedup $w" has "^speedup $w system=depeng-perdevice over_sequential=[0-9.]+$"; done
check "NDArray add against the plain loop" has "^ratio ND-add depeng/plain_loop=[0-9.]+$"
check "NDArray dot, portable kernel" has "^bench ND-dot system=depeng-portable gflops=[0-9.]+ "
if pkg-config --exists openblas 2>/dev/null; then check "NDArray dot against CBLAS" has "^ratio ND-dot portable/cblas=[0-9.]+$"
else echo "SKIP NDArray dot against CBLAS: OpenBLAS not installed"; skip=$((skip + 1)); fi
sc=$(bench/scale.sh build/bench_depeng 2000 2>&1); src=$?
check "bench/scale.sh runs" test "$src" -eq 0
for w in 2 4 8 16; do for k in W1 W2 W3 W4; do
    check "contention $k with $w workers" grep -qE "^contention $k system=depeng-perdevice workers=$w ops=[0-9]+ var_lock=[0-9.]+ queue_lock=[0-9.]+ " <<<"$sc"
done; done
bp=$(build/bench_depeng -n 2000 -e perdevice -b 16 W1 W2 W2-op W3 W4 2>&1); brc=$?
check "batched pushes run (-b 16), DAG checked" test "$brc" -eq 0
for w in W1 W2 W2-op W3 W4; do check "$w in batches" grep -qE "^bench $w system=depeng-perdevice-batch16 ns_per_task=[0-9.]+ " <<<"$bp"; done
pp=$(build/bench_depeng -n 2000 -e perdevice -p W4 W5 2>&1); prc=$?
check "push_runs_ops run (-p), DAG checked" test "$prc" -eq 0
emul=$(build/bench_gpu_emul -n 2000 2>&1); erc=$?
check "emulated GPU completion runs" test "$erc" -eq 0
for w in GPU-ops-1us GPU-ops-10us; do
    check "$w events against a sync per op" grep -qE "^ratio $w sync/events=[0-9.]+ events/ideal=[0-9.]+$" <<<"$emul"
done
sym=$(build/bench_symbolic -n 40 2>&1); src=$?
check "symbolic bench runs" test "$src" -eq 0
for b in 32 256; do
    for sys in imperative executor; do check "SYM-step-$b $sys" grep -qE "^bench SYM-step-$b system=$sys us_per_step=[0-9.]+ " <<<"$sym"; done
    check "SYM-step-$b ratio" grep -qE "^ratio SYM-step-$b imperative/executor=[0-9.]+$" <<<"$sym"
    check "SYM-step-$b memory" grep -qE "^mem SYM-step-$b planned_bytes=[0-9]+ unplanned_bytes=[0-9]+ planned/unplanned=[0-9.]+ " <<<"$sym"
done
check "SYM-mem-deep memory" grep -qE "^mem SYM-mem-deep planned_bytes=[0-9]+ unplanned_bytes=[0-9]+ " <<<"$sym"
mk=$(bench/make.sh build/make_example 200 1000 1 2>&1); mrc=$?
check "bench/make.sh runs and both makes agree" test "$mrc" -eq 0
check "MAKE-indep round" grep -qE "^round 1 MAKE-indep gnu_s=[0-9.]+ depeng_s=[0-9.]+ ratio=[0-9.]+$" <<<"$mk"
check "MAKE-indep figures" grep -qE "^bench MAKE-indep n=200 gnu_s=[0-9.]+ depeng_s=[0-9.]+ ratio=[0-9.]+$" <<<"$mk"
check "MAKE-noop round" grep -qE "^round 1 MAKE-noop gnu_s=[0-9.]+ gnu_r_s=[0-9.]+ depeng_s=[0-9.]+ depeng_r_s=[0-9.]+ ratio_r=[0-9.]+ ratio_rr=[0-9.]+$" <<<"$mk"
check "MAKE-noop figures" grep -qE "^bench MAKE-noop n=1000 gnu_s=[0-9.]+ gnu_r_s=[0-9.]+ depeng_s=[0-9.]+ depeng_r_s=[0-9.]+ ratio=[0-9.]+ ratio_r=[0-9.]+ ratio_rr=[0-9.]+$" <<<"$mk"
rg=""
if [ -f /usr/include/oneapi/tbb/parallel_for.h ]; then
    rg=$(bench/range.sh 1 20000 2>&1); rrc=$?
    check "bench/range.sh runs, results checked" test "$rrc" -eq 0
    for b in 100ns 1us; do for sys in depeng depeng-det omp; do
        check "range $b $sys against oneTBB" grep -qE "^ratio body=$b $sys/tbb=[0-9.]+$" <<<"$rg"
    done; done
else echo "SKIP range loop: oneTBB headers not installed (make bench-deps)"; skip=$((skip + 1)); fi
if [ "$fail" -ne 0 ]; then printf '%s\n' "$out" "$sc" "$bp" "$pp" "$emul" "$sym" "$mk" "$rg" | tail -40; fi
echo "bench: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
