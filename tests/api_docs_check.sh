#!/usr/bin/env bash
# Every public function is documented with who may call it from which
# thread: the comment above its declaration (shared by the declarations
# right below it) or on its line must say so ("any thread", "one thread at
# a time", "the iterator's thread", "inside an operation"...: the word
# "thread" must appear). Prints each function that lacks it.
# Usage: tests/api_docs_check.sh [header...] (default: the four headers)
set -u
cd "$(dirname "$0")/.." || exit 1
[ $# -gt 0 ] || set -- depeng.h depeng_nn.h depeng_cuda.h depeng_mpi.h
pass=0; fail=0
for h in "$@"; do
  missing=$(awk '
    /^DP_API / && match($0, /dp_[A-Za-z0-9_]+\(/) {
      name = substr($0, RSTART, RLENGTH - 1)
      if (block !~ /[Tt]hread/ && $0 !~ /[Tt]hread/) print name
      after = 1; next                       # declarations right below share the block
    }
    /^[[:space:]]*$/ { block = ""; after = 0; next }     # a blank line ends a comment block
    /^[[:space:]]*\/\*/ && after { block = ""; after = 0 }   # so does the next comment
    { block = block "\n" $0 }
  ' "$h")
  if [ -z "$missing" ]; then echo "PASS $h: every public function says from which threads it may be called"; pass=$((pass + 1))
  else echo "FAIL $h: no thread rule documented for:"; printf '%s\n' "$missing" | sed 's/^/  /'; fail=$((fail + 1)); fi
done
echo "api_docs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
