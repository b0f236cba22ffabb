#!/usr/bin/env bash
# The differential test against PyTorch: build/torch_diff (tests/torch_diff.c)
# writes random cases of the layers (Convolution, Deconvolution, Pooling,
# LeakyReLU, Activation, Embedding, the regression outputs, BatchNorm, Dropout:
# forward and gradients) for a few
# seeds, tests/torch_diff.py recomputes them with PyTorch and compares, to
# 1e-4 relative in float32. Without python3-torch (tests/torch_deps.sh
# installs it) one SKIP. TORCH_DIFF_SEEDS picks the seeds (default "1 2 3"),
# TORCH_DIFF_CASES the cases per seed (default 72). Prints
# "torch_diff: N passed, M failed[, K skipped]".
cd "$(dirname "$0")/.." || exit 1
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "SKIP torch_diff: python3-torch is not installed (tests/torch_deps.sh installs it)"
    echo "torch_diff: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/torch_diff.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
pass=0; fail=0
for seed in ${TORCH_DIFF_SEEDS:-1 2 3}; do
    mkdir -p "$dir/$seed"
    if ! build/torch_diff "$dir/$seed" "$seed" "${TORCH_DIFF_CASES:-72}" >/dev/null; then echo "FAIL torch_diff: the driver failed for seed $seed"; fail=$((fail + 1)); continue; fi
    out=$(/usr/bin/python3 tests/torch_diff.py "$dir/$seed" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^FAIL' | sed "s/^FAIL /FAIL seed $seed: /"
    line=$(printf '%s\n' "$out" | grep -E '^torch_diff: [0-9]+ passed' | tail -1)
    if [ -z "$line" ]; then echo "FAIL torch_diff: no result for seed $seed (exit $rc)"; printf '%s\n' "$out" | tail -5; fail=$((fail + 1)); continue; fi
    p=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) passed.*/\1/'); f=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    pass=$((pass + p)); fail=$((fail + f))
done
echo "torch_diff: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
