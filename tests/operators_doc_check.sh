#!/usr/bin/env bash
# docs/operators.md must be what the registry prints (tools/operators_doc.c):
# an operator, parameter, default or doc changed without make docs fails here.
# Usage: tests/operators_doc_check.sh [generator] (default: build/operators_doc)
set -u
cd "$(dirname "$0")/.." || exit 1
gen=${1:-build/operators_doc}
if [ ! -x "$gen" ]; then echo "FAIL operators_doc: $gen not built (make $gen)"; echo "operators_doc: 0 passed, 1 failed"; exit 1; fi
out=$(mktemp); trap 'rm -f "$out"' EXIT
if ! "$gen" > "$out"; then echo "FAIL operators_doc: $gen failed"; echo "operators_doc: 0 passed, 1 failed"; exit 1; fi
if diff -u docs/operators.md "$out" > /dev/null 2>&1; then
  echo "PASS operators_doc: docs/operators.md matches the registry ($(grep -c '^### ' "$out") operators)"
  echo "operators_doc: 1 passed, 0 failed"
else
  echo "FAIL operators_doc: docs/operators.md is out of date (make docs); the difference:"
  diff -u docs/operators.md "$out" | head -40
  echo "operators_doc: 0 passed, 1 failed"; exit 1
fi
