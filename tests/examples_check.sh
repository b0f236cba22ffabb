#!/usr/bin/env bash
# Runs the NDArray examples and checks what they print and write, so they
# cannot rot. Prints "examples: N passed, M failed".
# DEPENG_EXAMPLE_BIN: where the programs are (default build; the Windows
# run passes build/win, whose programs are Wine wrappers).
cd "$(dirname "$0")/.." || exit 1
bin=${DEPENG_EXAMPLE_BIN:-build}
pass=0; fail=0
check() { if eval "$2"; then echo "PASS $1"; pass=$((pass + 1)); else echo "FAIL $1"; fail=$((fail + 1)); fi; }
npy=$(mktemp "${TMPDIR:-/tmp}/depeng_example.XXXXXX.npy")
out=$($bin/ndarray_example "$npy" 2>&1); rc=$?
check "ndarray runs" '[ $rc -eq 0 ]'
check "ndarray computes z = 2x + 1" 'grep -q "^z        = 2 \* x + 1 = \[3 5 7; 9 11 13\]$" <<<"$out"'
check "ndarray sums rows" 'grep -q "^sum(z, axis=1) = \[15 33\]$" <<<"$out"'
check "ndarray saves a NumPy file (magic, <f4, shape (2, 3), 152 bytes)" \
    '[ "$(head -c 6 "$npy" | tail -c 5)" = "NUMPY" ] && grep -q "'"'"'descr'"'"': '"'"'<f4'"'"'" "$npy" && grep -q "(2, 3)" "$npy" && [ "$(wc -c < "$npy")" -eq 152 ]'
rm -f "$npy"
out=$($bin/custom_op_example 2>&1); rc=$?
check "custom_op runs" '[ $rc -eq 0 ]'
check "custom_op registers smooth_l1" 'grep -q "^registered smooth_l1: " <<<"$out"'
check "custom_op forward values" 'grep -q "^ -3.00      2.5000    -1.0000" <<<"$out" && grep -q "^  0.25      0.0312     0.2500" <<<"$out"'
check "custom_op gradient matches finite differences" 'grep -q "^gradient matches finite differences$" <<<"$out"'
# training, shortened: 4 epochs must reach 90% (the full 20 reach 95%+), and
# the naive and per-device engines must end with bitwise the same weights
out=$($bin/train_digits --epochs 4 --min-accuracy 0.90 2>&1); rc=$?
check "train_digits reaches 90% test accuracy in 4 epochs" '[ $rc -eq 0 ] && grep -q "^test accuracy .* after 4 epochs" <<<"$out"'
check "train_digits prints loss and accuracy per epoch" '[ "$(grep -c "^epoch .* loss [0-9.]*  train accuracy .*  test accuracy " <<<"$out")" -eq 4 ]'
naive=$($bin/train_digits --epochs 2 --engine naive 2>&1 | sed -n "s/.*weights checksum //p")
perdev=$($bin/train_digits --epochs 2 --engine perdevice 2>&1 | sed -n "s/.*weights checksum //p")
check "train_digits: naive and per-device engines give bitwise the same weights" '[ -n "$naive" ] && [ "$naive" = "$perdev" ]'
# the same network through the executor: the same accuracy and bitwise the
# same weights as autograd, on both engines; its graph as JSON and DOT
graph=$(mktemp "${TMPDIR:-/tmp}/depeng_digits.XXXXXX")
sym=$($bin/train_digits --epochs 4 --min-accuracy 0.90 --symbolic --graph "$graph" 2>&1); rc=$?
check "train_digits --symbolic reaches 90% test accuracy in 4 epochs" '[ $rc -eq 0 ] && grep -q "^test accuracy .* after 4 epochs" <<<"$sym"'
check "train_digits --symbolic ends with the imperative run's weights" \
    '[ -n "$(sed -n "s/.*weights checksum //p" <<<"$out")" ] && [ "$(sed -n "s/.*weights checksum //p" <<<"$sym")" = "$(sed -n "s/.*weights checksum //p" <<<"$out")" ]'
symnaive=$($bin/train_digits --epochs 2 --engine naive --symbolic 2>&1 | sed -n "s/.*weights checksum //p")
check "train_digits --symbolic on the naive engine: the same weights" '[ -n "$symnaive" ] && [ "$symnaive" = "$naive" ]'
check "train_digits --graph writes MXNet symbol JSON" \
    'grep -q "\"op\": \"FullyConnected\"" "$graph.json" && grep -q "\"arg_nodes\": \[0, 1, 2, 5, 6, 8\]" "$graph.json" && grep -q "\"heads\": \[\[9, 0, 0\]\]" "$graph.json"'
check "train_digits --graph writes Graphviz DOT" 'head -1 "$graph.dot" | grep -q "^digraph symbol {" && grep -q "n3 -> n4;" "$graph.dot"'
rm -f "$graph" "$graph.json" "$graph.dot"
# train_fashion without its data (the real runs are make train-fashion-check,
# which needs Debian's dataset-fashion-mnist): it refuses, naming the missing
# file and how to install the package, before doing anything else
miss=$($bin/train_fashion --data /nonexistent-fashion-mnist 2>&1); rc=$?
check "train_fashion refuses missing data, naming the file and the package" \
    '[ $rc -eq 3 ] && grep -q "^train_fashion: /nonexistent-fashion-mnist/train-images-idx3-ubyte.gz is missing" <<<"$miss" && grep -q "apt-get install dataset-fashion-mnist" <<<"$miss" && grep -q "tests/fashion_mnist_deps.sh" <<<"$miss"'
bad=$($bin/train_fashion --mode symbolic 2>&1); rc=$?
check "train_fashion refuses a bad option, naming it, with its usage line" '[ $rc -eq 2 ] && grep -q "^train_fashion: --mode must be autograd or executor, not symbolic" <<<"$bad" && grep -q "^usage: " <<<"$bad"'
[ "$fail" -ne 0 ] && printf '%s\n%s\n' "$out" "$sym"
echo "examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
