#!/usr/bin/env bash
# The NDArray tests again with DEPENG_USE_CBLAS (dot and FullyConnected on
# OpenBLAS, one thread), when OpenBLAS is installed (make bench-deps);
# otherwise one SKIP. Prints "cblas: N passed, M failed[, K skipped]".
cd "$(dirname "$0")/.." || exit 1
if ! pkg-config --exists openblas 2>/dev/null; then
    echo "SKIP cblas: OpenBLAS is not installed (make bench-deps installs it)"
    echo "cblas: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
# test_ndarray.c links the implementation (tests/impl/depeng_impl.c), here
# compiled alongside it with the same DEPENG_USE_CBLAS
cc -std=c11 -Wall -Wextra -pedantic -Werror -O2 -DDEPENG_USE_CBLAS $(pkg-config --cflags openblas) -I. tests/test_ndarray.c tests/impl/depeng_impl.c \
   -o build/test_ndarray_cblas -pthread $(pkg-config --libs openblas) -lm || { echo "cblas: 0 passed, 1 failed"; exit 1; }
out=$(OPENBLAS_NUM_THREADS=1 build/test_ndarray_cblas 2>&1); rc=$?
printf '%s\n' "$out" | grep -E '^FAIL' || true
line=$(printf '%s\n' "$out" | grep -E '^ndarray: [0-9]+ passed' | tail -1)
echo "cblas: ${line#ndarray: }"
[ $rc -eq 0 ]
