#!/usr/bin/env bash
# Runs the make example's own scenario checks; prints "make: N passed, M failed".
cd "$(dirname "$0")/.." || exit 1
out=$(bash examples/make_demo/check.sh "$PWD/build/make_example" 2>&1); rc=$?
printf '%s\n' "$out"
p=$(printf "%s\n" "$out" | grep -c "^PASS"); f=$(printf "%s\n" "$out" | grep -c "^FAIL")
[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
echo "make_example: $p passed, $f failed"
[ "$f" -eq 0 ]
