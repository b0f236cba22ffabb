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
pass=0 fail=0 rc=0
# run NAME SUITE: runs build/NAME (OpenBLAS on one thread), prints its FAIL
# lines and adds its "SUITE: N passed, M failed" line to the sums (a program
# that prints none, or exits non-zero, counts one failure more)
run() {
    local out r line p f
    out=$(OPENBLAS_NUM_THREADS=1 "build/$1" 2>&1); r=$?
    printf '%s\n' "$out" | grep -E '^FAIL' || true
    line=$(printf '%s\n' "$out" | grep -E "^$2: [0-9]+ passed, [0-9]+ failed" | tail -1)
    if [ -z "$line" ]; then echo "FAIL $1: no summary line (exit status $r)"; fail=$((fail + 1)); rc=1; return; fi
    p=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) passed.*/\1/'); f=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    pass=$((pass + p)); fail=$((fail + f))
    if [ "$r" -ne 0 ]; then rc=1; [ "$f" -gt 0 ] || fail=$((fail + 1)); fi
}
# test_ndarray.c links the implementation (tests/impl/depeng_impl.c), here
# compiled alongside it with the same DEPENG_USE_CBLAS
if cc $flags tests/test_ndarray.c tests/impl/depeng_impl.c -o build/test_ndarray_cblas $libs; then run test_ndarray_cblas ndarray
else echo "FAIL test_ndarray_cblas: does not build"; fail=$((fail + 1)); rc=1; fi
# test_gemm.c includes the implementation itself (white-box)
if cc $flags tests/test_gemm.c -o build/test_gemm_cblas $libs; then run test_gemm_cblas gemm
else echo "FAIL test_gemm_cblas: does not build"; fail=$((fail + 1)); rc=1; fi
echo "cblas: $pass passed, $fail failed"
exit $rc
