#!/usr/bin/env bash
# The walkthrough replays the A = 2; B = 2; B = A + B; C = A + 2; A.del()
# example of MXNet's engine documentation and checks its own final values;
# here it must also write a DOT graph with every op of the example.
# DEPENG_EXAMPLE_BIN: where the program is (default build).
cd "$(dirname "$0")/.." || exit 1
bin=${DEPENG_EXAMPLE_BIN:-build}
p=0; f=0
if "$bin"/walkthrough build/walkthrough_test.dot > build/walkthrough_test.out 2>&1; then echo "PASS walkthrough runs"; p=$((p+1)); else echo "FAIL walkthrough exit"; f=$((f+1)); fi
if grep -q "digraph" build/walkthrough_test.dot 2>/dev/null && [ "$(grep -c 'label="#' build/walkthrough_test.dot)" -eq 5 ]; then echo "PASS walkthrough dot has 5 ops"; p=$((p+1)); else echo "FAIL walkthrough dot"; f=$((f+1)); fi
# the example's graph: A=2 -> B=A+B, B=2 -> B=A+B, A=2 -> C=A+2, and A=2, both readers -> delete
if [ "$(grep -c -- '->' build/walkthrough_test.dot 2>/dev/null)" -eq 6 ] && grep -q 'op4 -> op5' build/walkthrough_test.dot; then echo "PASS walkthrough dot edges"; p=$((p+1)); else echo "FAIL walkthrough dot edges"; f=$((f+1)); fi
echo "walkthrough: $p passed, $f failed"
[ "$f" -eq 0 ]
