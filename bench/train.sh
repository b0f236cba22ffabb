#!/usr/bin/env bash
# bench/train.sh - make bench-train: training steps of depeng against PyTorch
# (bench/README.md, "Training against PyTorch").
#
#   bench/train.sh [--rounds N] [--threads T] [--quick] [--smoke]
#
# 1. Rounds (3 by default): per round, for the MLP and LeNet at batch 64 and
#    256, build/bench_train in autograd and executor modes (built-in
#    kernels), build/bench_train_cblas the same (DEPENG_USE_CBLAS, OpenBLAS
#    with 1 thread: the engine's workers are the parallelism), and
#    bench/train_torch.py with T threads and with 1, and bench_train in
#    autograd mode with no worker (one thread in all); depeng first in odd
#    rounds, PyTorch first in even ones. Each is a fresh process that
#    prints its median ms per step; then the round's ratios depeng /
#    PyTorch (below 1: depeng faster): each depeng run against PyTorch at
#    T threads and at 1, depeng on one thread against PyTorch on one. At
#    the end the median of the rounds' ratios.
# 2. GEMM GFLOP/s against OpenBLAS (build/bench_gemm, 1 and T threads): the
#    square sizes 64 .. 1024 and the nets' own products.
# 3. The optimizer updates' GB/s against memcpy (build/bench_kernels).
# 4. Per step, by operator, from the engine's profiler (bench_train
#    --profile), each net at batch 64 and 256 in autograd mode.
# 5. The CPU utilisation of training, user+sys over wall (getrusage): one
#    epoch of the MLP at batch 64 (937 steps) and 150 LeNet steps at batch
#    64, from the image iterator, both modes.
# --rounds 0: sections 2-5 only. --threads T: default the online CPUs
# (nproc). --quick: one round, fewer
# steps, shorter GEMM and update timings (a few minutes). --smoke: a few
# steps of most (LeNet's step only, on the test images), each figure checked
# to be there and positive; prints
# "bench_train: N passed, M failed, K skipped" (CI; under a minute).
# PyTorch (tests/torch_deps.sh), the data set (tests/fashion_mnist_deps.sh)
# and OpenBLAS (make bench-deps) are optional: each missing one is a named
# SKIP. Run from anywhere; the programs are make's (build/).
cd "$(dirname "$0")/.." || exit 1
rounds=3; threads=$(nproc 2>/dev/null || echo 2); mode=full
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --quick) mode=quick; rounds=1; shift ;;
        --smoke) mode=smoke; rounds=1; shift ;;
        *) echo "usage: bench/train.sh [--rounds N] [--threads T] [--quick] [--smoke]" >&2; exit 2 ;;
    esac
done
case $rounds in ''|*[!0-9]*) echo "bench/train.sh: --rounds must be a number, not '$rounds'" >&2; exit 2 ;; esac
case $threads in ''|*[!0-9]*|0) echo "bench/train.sh: --threads must be a positive number, not '$threads'" >&2; exit 2 ;; esac
BT=build/bench_train; BTC=build/bench_train_cblas; PY=/usr/bin/python3
# the smoke loads the 10,000 test images (a sixth of the loading) and runs
# the DEPENG_USE_CBLAS build in autograd mode and PyTorch at T threads only
set_arg="--set train"; [ $mode = smoke ] && set_arg="--set test"
pass=0; fail=0; skip=0
check() {   # check NAME CONDITION... (counted; printed in --smoke, FAIL always)
    local name=$1; shift
    if "$@"; then pass=$((pass + 1)); [ $mode = smoke ] && echo "PASS $name"
    else fail=$((fail + 1)); echo "FAIL $name"; fi
    return 0
}
skipped() { echo "SKIP $1"; skip=$((skip + 1)); }
# a positive finite number
positive() { awk -v x="$1" 'BEGIN { exit !(x + 0 > 0 && x + 0 < 1e9) }'; }
field() { sed -nE "s/.* $1=([^ ]+).*/\1/p" <<<"$2" | head -1; }

[ -x $BT ] || { echo "FAIL bench/train.sh: $BT is not built (make bench-train builds it)"; exit 1; }
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    echo "SKIP bench-train: Fashion-MNIST is not installed (tests/fashion_mnist_deps.sh installs Debian's dataset-fashion-mnist)"
    echo "bench_train: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
have_torch=1
if ! $PY -c 'import torch' >/dev/null 2>&1; then
    have_torch=0; skipped "torch: python3-torch cannot be imported by $PY (tests/torch_deps.sh installs it); depeng's figures only"
fi
have_cblas=1
if [ ! -x $BTC ]; then have_cblas=0; skipped "openblas: $BTC not built (OpenBLAS not installed; make bench-deps); built-in kernels only"; fi

# steps and warm-up steps per net and batch
steps() {   # steps NET BATCH -> "STEPS WARMUP"
    case $mode/$1/$2 in
        smoke/mlp/*) echo "5 2" ;;
        smoke/lenet/*) echo "1 1" ;;
        quick/mlp/*) echo "60 10" ;;
        quick/lenet/64) echo "12 3" ;;
        quick/lenet/*) echo "6 2" ;;
        */mlp/*) echo "200 20" ;;
        */lenet/64) echo "40 5" ;;
        */lenet/*) echo "20 3" ;;
    esac
}
if [ $mode = smoke ]; then configs="mlp:64 lenet:64"; else configs="mlp:64 mlp:256 lenet:64 lenet:256"; fi
res=$(mktemp "${TMPDIR:-/tmp}/bench_train.XXXXXX") || exit 1
trap 'rm -f "$res"' EXIT
echo "bench-train: $rounds round(s), $threads thread(s), $(uptime | sed 's/.*load/load/')"

# runs one measurement; records "ROUND NET BATCH SYSTEM MS" in $res
measure() {   # measure ROUND NET BATCH SYSTEM COMMAND...
    local r=$1 net=$2 batch=$3 sys=$4 out ms; shift 4
    out=$("$@" 2>&1); local rc=$?
    printf '%s\n' "$out" | grep -E '^(train|SKIP|FAIL)' | sed "s/^/round $r: /"
    ms=$(field ms_per_step "$(grep -E '^train ' <<<"$out")")
    check "round $r $net batch $batch $sys: runs, prints a positive ms_per_step" eval 'test $rc -eq 0 && positive "$ms"'
    [ $rc -ne 0 ] && printf '%s\n' "$out" | tail -5
    [ -n "$ms" ] && echo "$r $net $batch $sys $ms" >> "$res"
    return 0
}
depeng_runs() {
    local r=$1 net=$2 batch=$3 s w
    read -r s w <<<"$(steps "$net" "$batch")"
    for m in autograd executor; do
        measure "$r" "$net" "$batch" "depeng-$m" $BT --net "$net" --batch "$batch" --mode $m --threads "$threads" --steps "$s" --warmup "$w" $set_arg
        [ $have_cblas = 1 ] && { [ $mode != smoke ] || [ $m = autograd ]; } && measure "$r" "$net" "$batch" "depeng-openblas-$m" \
            env OPENBLAS_NUM_THREADS=1 $BTC --net "$net" --batch "$batch" --mode $m --threads "$threads" --steps "$s" --warmup "$w" $set_arg
    done
    # one thread in all (no worker: the main thread runs the ops in its
    # wait), against PyTorch with one thread
    [ $mode = smoke ] || [ "$threads" = 1 ] || measure "$r" "$net" "$batch" "depeng-1t-autograd" \
        $BT --net "$net" --batch "$batch" --mode autograd --threads 0 --steps "$s" --warmup "$w" $set_arg
    return 0
}
torch_runs() {
    local r=$1 net=$2 batch=$3 s w t
    [ $have_torch = 1 ] || return 0
    read -r s w <<<"$(steps "$net" "$batch")"
    for t in "$threads" 1; do
        # torch.set_num_threads sets its OpenMP threads; the BLAS it loads
        # (OpenBLAS) keeps its own pool, sized by OPENBLAS_NUM_THREADS
        measure "$r" "$net" "$batch" "torch-${t}t" env OPENBLAS_NUM_THREADS="$t" OMP_NUM_THREADS="$t" \
            $PY bench/train_torch.py --net "$net" --batch "$batch" --threads "$t" --steps "$s" --warmup "$w" $set_arg
        { [ "$threads" = 1 ] || [ $mode = smoke ]; } && break
    done
    return 0
}
ms_of() { awk -v r="$1" -v n="$2" -v b="$3" -v s="$4" '$1 == r && $2 == n && $3 == b && $4 == s { print $5 }' "$res"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else printf "-" }'; }
# the ratios printed: depeng's runs against PyTorch at T threads and at 1,
# and depeng on one thread against PyTorch on one
pairs() {
    local d t
    for d in autograd executor openblas-autograd openblas-executor; do
        for t in "torch-${threads}t" torch-1t; do echo "depeng-$d:$t"; done
    done
    [ "$threads" = 1 ] || echo "depeng-1t-autograd:torch-1t"
}
ratio_line() {   # ratio_line ROUND NET BATCH: the round's ratios
    local r=$1 net=$2 batch=$3 line="" p a b
    [ $have_torch = 1 ] || return 0
    for p in $(pairs); do
        a=$(ms_of "$r" "$net" "$batch" "${p%:*}"); b=$(ms_of "$r" "$net" "$batch" "${p#*:}")
        [ -n "$a" ] && [ -n "$b" ] && line="$line ${p%:*}/${p#*:}=$(ratio "$a" "$b")"
    done
    echo "ratio round=$r net=$net batch=$batch$line"
}

[ "$rounds" -gt 0 ] && { echo; echo "== 1. ms per training step (median), depeng / PyTorch (below 1: depeng faster)"; }
for r in $(seq 1 "$rounds"); do
    for c in $configs; do
        net=${c%:*}; batch=${c#*:}
        if [ $((r % 2)) = 1 ]; then depeng_runs "$r" "$net" "$batch"; torch_runs "$r" "$net" "$batch"
        else torch_runs "$r" "$net" "$batch"; depeng_runs "$r" "$net" "$batch"; fi
        ratio_line "$r" "$net" "$batch"
    done
done
if [ $have_torch = 1 ] && [ "$rounds" -gt 0 ]; then
    echo; echo "median over $rounds round(s) of depeng/PyTorch (ms per step; below 1: depeng faster)"
    for c in $configs; do
        net=${c%:*}; batch=${c#*:}; line=""
        for p in $(pairs); do
            vals=""
            for r in $(seq 1 "$rounds"); do
                a=$(ms_of "$r" "$net" "$batch" "${p%:*}"); b=$(ms_of "$r" "$net" "$batch" "${p#*:}")
                [ -n "$a" ] && [ -n "$b" ] && vals="$vals $(ratio "$a" "$b")"
            done
            [ -n "$vals" ] || continue
            med=$(tr ' ' '\n' <<<"$vals" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
            line="$line ${p%:*}/${p#*:}=$med"
        done
        echo "median net=$net batch=$batch$line"
        check "median ratio line for $net batch $batch" test -n "$line"
    done
fi

echo; echo "== 2. GEMM GFLOP/s, depeng against OpenBLAS (bench/gemm.c)"
case $mode in
    smoke) g=$(BENCH_MS=5 BENCH_SHAPES="sq64,fc1 fwd,lenet conv2 fwd" build/bench_gemm 1 1 "$threads" 2>&1); grc=$? ;;
    quick) g=$(BENCH_MS=40 build/bench_gemm 1 1 "$threads" 2>&1); grc=$? ;;
    *) g=$(build/bench_gemm "$((rounds > 0 ? rounds : 3))" 1 "$threads" 2>&1); grc=$? ;;
esac
printf '%s\n' "$g"
check "bench_gemm runs" test $grc -eq 0
check "bench_gemm: depeng's GFLOP/s" grep -qE "^round 1 threads $threads .* depeng +[0-9.]+ GFLOP/s" <<<"$g"
if grep -q "SKIP openblas" <<<"$g"; then skipped "GEMM against OpenBLAS: OpenBLAS not installed"
else check "bench_gemm: OpenBLAS's GFLOP/s and the ratio" grep -qE "openblas +[0-9.]+ GFLOP/s +ratio [0-9.]+" <<<"$g"; fi

echo; echo "== 3. optimizer updates, GB/s against memcpy (bench/kernels.c)"
case $mode in
    smoke) k=$(BENCH_MS=5 build/bench_kernels 1 small 2>&1); krc=$? ;;
    quick) k=$(BENCH_MS=50 build/bench_kernels 1 2>&1); krc=$? ;;
    *) k=$(build/bench_kernels "$((rounds > 0 ? rounds : 3))" 2>&1); krc=$? ;;
esac
printf '%s\n' "$k"
check "bench_kernels runs" test $krc -eq 0
check "bench_kernels: sgd_mom_update's GB/s" grep -qE "^round 1 sgd_mom_update +n +[0-9]+ +loop +[0-9.]+" <<<"$k"

echo; echo "== 4. where a step goes: the engine's profiler, per step (autograd, built-in kernels)"
for c in $configs; do
    net=${c%:*}; batch=${c#*:}
    [ $mode = smoke ] && [ $net = lenet ] && continue
    case $mode/$net in smoke/*) p=3 ;; */mlp) p=100 ;; quick/lenet) p=4 ;; *) p=10 ;; esac
    read -r s w <<<"$(steps "$net" "$batch")"
    out=$($BT --net "$net" --batch "$batch" --mode autograd --threads "$threads" --steps "$s" --warmup "$w" --profile $p $set_arg 2>&1); prc=$?
    printf '%s\n' "$out" | grep -E '^(train|profile|FAIL)'
    check "profile $net batch $batch: per-operator lines" eval 'test $prc -eq 0 && grep -qE "^profile net=$net batch=$batch .* op=FullyConnected count_per_step=[0-9.]+ ms_per_step=[0-9.]+ share=[0-9.]+" <<<"$out"'
    check "profile $net batch $batch: total line" grep -qE "^profile net=$net batch=$batch .* total ops_ms_per_step=[0-9.]+ wall_ms_per_step=[0-9.]+" <<<"$out"
done

echo; echo "== 5. CPU utilisation of training, (user+sys)/wall (getrusage), steps from the image iterator"
for net in mlp lenet; do
    [ $mode = smoke ] && [ $net = lenet ] && continue
    case $mode/$net in smoke/*) e=10 ;; quick/mlp) e=300 ;; quick/lenet) e=30 ;; */mlp) e=0 ;; */lenet) e=150 ;; esac
    for m in autograd executor; do
        out=$($BT --net $net --batch 64 --mode $m --threads "$threads" --steps 1 --warmup 2 --epoch $e $set_arg 2>&1); erc=$?
        printf '%s\n' "$out" | grep -E '^(epoch|FAIL)'
        u=$(field util "$(grep -E '^epoch ' <<<"$out")")
        check "epoch $net $m: utilisation printed" eval 'test $erc -eq 0 && positive "$u"'
    done
done

echo
echo "bench_train: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
