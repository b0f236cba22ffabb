#!/usr/bin/env bash
# Each header knows only the layer below it:
#  - depeng_nn.h uses none of depeng.h's private names (dp__*, DP__*): its
#    own are dpn__*;
#  - its implementation compiles with DEPENG_NN_IMPLEMENTATION alone, against
#    depeng.h's declarations only (no DEPENG_IMPLEMENTATION in the file), as
#    C11 and as C++: so it reaches depeng.h through the public API and
#    nothing else (struct internals, static helpers);
#  - depeng.h names nothing of depeng_nn.h, depeng_cuda.h or depeng_mpi.h in
#    its code (no include of them, none of their functions or private names);
#    depeng_nn.h nothing of depeng_cuda.h or depeng_mpi.h.
# Usage: tests/layering_check.sh
set -u
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# Code only: comments and string literals dropped (a comment may say where a
# higher layer adds something; code may not depend on it).
code() { gcc -fpreprocessed -dD -E -P -x c "$1" 2>/dev/null | sed -E 's/"([^"\\]|\\.)*"/""/g'; }

if grep -nE '\b(dp__|DP__)[A-Za-z0-9_]*' depeng_nn.h > "$tmp/priv"; then
  bad "depeng_nn.h uses depeng.h's private names:"; head -20 "$tmp/priv" | sed 's/^/  /'
else ok "depeng_nn.h uses no private name of depeng.h"; fi

printf '#include "depeng.h"\n#define DEPENG_NN_IMPLEMENTATION\n#include "depeng_nn.h"\n' > "$tmp/nn_alone.c"
if gcc -std=c11 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/nn_alone.c" -o "$tmp/a.o" 2> "$tmp/err"; then
  ok "depeng_nn.h's implementation compiles against depeng.h's declarations alone (C11)"
else bad "depeng_nn.h's implementation needs more than depeng.h's declarations (C11):"; head -20 "$tmp/err" | sed 's/^/  /'; fi
if g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c "$tmp/nn_alone.c" -o "$tmp/b.o" 2> "$tmp/err"; then
  ok "depeng_nn.h's implementation compiles against depeng.h's declarations alone (C++)"
else bad "depeng_nn.h's implementation needs more than depeng.h's declarations (C++):"; head -20 "$tmp/err" | sed 's/^/  /'; fi

# The names a higher header defines: its DP_API functions and private prefixes.
api_of() { sed -nE 's/^DP_API [^(]*\b(dp_[A-Za-z0-9_]+)\(.*/\1/p' "$1" | sort -u; }
check_below() {   # $1 lower header, $2... higher headers
  local low=$1; shift
  code "$low" > "$tmp/low.c"
  local found="" h
  for h in "$@"; do
    if grep -nE "#include *\"$h\"" "$low" > /dev/null; then found="$found include of $h;"; fi
    for name in $(api_of "$h"); do
      grep -qE "\b$name\b" "$tmp/low.c" && found="$found $name;"
    done
  done
  [ "$low" = depeng_nn.h ] || ! grep -qE '\bdpn__' "$tmp/low.c" || found="$found dpn__ names;"
  grep -qE '\bdp__(cu|mpi)_' "$tmp/low.c" && found="$found dp__cu_/dp__mpi_ names;"
  if [ -z "$found" ]; then ok "$low refers to nothing of $*"; else bad "$low refers to a higher header:$found"; fi
}
check_below depeng.h depeng_nn.h depeng_cuda.h depeng_mpi.h
check_below depeng_nn.h depeng_cuda.h depeng_mpi.h

echo "layering_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
