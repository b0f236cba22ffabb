#!/usr/bin/env bash
# The NDArray and GEMM tests again with DEPENG_USE_CBLAS (dot,
# FullyConnected and dp_gemm* on OpenBLAS, one thread), when OpenBLAS is
# installed (make bench-deps); otherwise one SKIP. Prints
# "cblas: N passed, M failed[, K skipped]", the two programs' counts summed.
cd "$(dirname "$0")/.." || exit 1
if ! pkg-config --exists openblas 2>/dev/null; then
    echo "SKIP cblas: OpenBLAS is not installed (make bench-deps installs it)"
    echo "cblas: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
mkdir -p build
flags="-std=c11 -Wall -Wextra -pedantic -Werror -O2 -DDEPENG_USE_CBLAS $(pkg-config --cflags openblas) -I."
libs="-pthread $(pkg-config --libs openblas) -lm"
progs=() unbuilt=0
# test_ndarray.c links the implementation (tests/impl/depeng_impl.c), here
# compiled alongside it with the same DEPENG_USE_CBLAS
if cc $flags tests/test_ndarray.c tests/impl/depeng_impl.c -o build/test_ndarray_cblas $libs; then progs+=(build/test_ndarray_cblas)
else echo "FAIL test_ndarray_cblas: does not build"; unbuilt=$((unbuilt + 1)); fi
# test_gemm.c includes the implementation itself (white-box)
if cc $flags tests/test_gemm.c -o build/test_gemm_cblas $libs; then progs+=(build/test_gemm_cblas)
else echo "FAIL test_gemm_cblas: does not build"; unbuilt=$((unbuilt + 1)); fi
# tests/run.sh runs them (OpenBLAS on one thread), shows their failures and
# sums them in its last line
out=$(OPENBLAS_NUM_THREADS=1 tests/run.sh "${progs[@]}"); rc=$?
printf '%s\n' "$out" | sed '$d' | grep -v '^slowest: ' || true
total=$(printf '%s\n' "$out" | tail -1)
pass=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$total"); fail=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$total")
echo "cblas: $pass passed, $((fail + unbuilt)) failed"
[ "$rc" -eq 0 ] && [ "$unbuilt" -eq 0 ]
