#!/usr/bin/env bash
# The differential test against NumPy: build/numpy_diff (tests/numpy_diff.c)
# writes every built-in operator's cases for a few seeds, tests/numpy_diff.py
# recomputes them with NumPy and compares. Without python3-numpy
# (tests/numpy_deps.sh installs it) one SKIP. NUMPY_DIFF_SEEDS picks the
# seeds (default "1 2 3 4 5"). Prints "numpy_diff: N passed, M failed[, K skipped]".
cd "$(dirname "$0")/.." || exit 1
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    echo "SKIP numpy_diff: python3-numpy is not installed (tests/numpy_deps.sh installs it)"
    echo "numpy_diff: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/numpy_diff.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
pass=0; fail=0
for seed in ${NUMPY_DIFF_SEEDS:-1 2 3 4 5}; do
    mkdir -p "$dir/$seed"
    if ! build/numpy_diff "$dir/$seed" "$seed" >/dev/null; then echo "FAIL numpy_diff: the driver failed for seed $seed"; fail=$((fail + 1)); continue; fi
    out=$(/usr/bin/python3 tests/numpy_diff.py "$dir/$seed" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^FAIL' | sed "s/^FAIL /FAIL seed $seed: /"
    line=$(printf '%s\n' "$out" | grep -E '^numpy_diff: [0-9]+ passed' | tail -1)
    if [ -z "$line" ]; then echo "FAIL numpy_diff: no result for seed $seed (exit $rc)"; printf '%s\n' "$out" | tail -5; fail=$((fail + 1)); continue; fi
    p=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) passed.*/\1/'); f=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    pass=$((pass + p)); fail=$((fail + f))
done
echo "numpy_diff: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
