#!/usr/bin/env bash
# Keeps each header's own index true to its contents:
#  - the "At a glance" list names every public (DP_API) function declared in
#    the header, and nothing else;
#  - the CONTENTS entry "9. Implementation" names every section tag, i.e.
#    every comment line that starts with "/* >>tag", and no tag that is gone.
# Prints the difference and fails when they disagree.
# Usage: tests/header_lists_check.sh [header...] (default: depeng.h depeng_nn.h depeng_cuda.h depeng_mpi.h)
set -u
cd "$(dirname "$0")/.." || exit 1
[ $# -gt 0 ] || set -- depeng.h depeng_nn.h depeng_cuda.h depeng_mpi.h
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# $1 = what, $2 = header, $3 = file of names in the header, $4 = names listed
compare() {
  local what=$1 h=$2 found=$3 listed=$4 missing extra
  if [ ! -s "$found" ]; then
    echo "FAIL $h: found no $what at all (has the header's layout changed?)"; fail=$((fail + 1)); return
  fi
  missing=$(comm -23 "$found" "$listed"); extra=$(comm -13 "$found" "$listed")
  if [ -z "$missing" ] && [ -z "$extra" ]; then
    echo "PASS $h: $what ($(wc -l < "$found"))"; pass=$((pass + 1)); return
  fi
  echo "FAIL $h: $what"
  [ -z "$missing" ] || printf '%s\n' "$missing" | sed 's/^/  in the header but not listed: /'
  [ -z "$extra" ]   || printf '%s\n' "$extra" | sed 's/^/  listed but not in the header: /'
  fail=$((fail + 1))
}

for h in "$@"; do
  if [ ! -f "$h" ]; then echo "FAIL $h: no such file"; fail=$((fail + 1)); continue; fi

  # Public functions: "DP_API <return type> dp_name(" on one line. A DP_API
  # line that is neither that nor the macro's own definition is reported, so
  # a declaration in another layout cannot slip past unseen.
  grep -E '^DP_API ' "$h" | sed -nE 's/^DP_API [^(]*\b(dp_[A-Za-z0-9_]+)\(.*/\1/p' | sort -u > "$tmp/api"
  odd=$(grep -nE '^[[:space:]]*DP_API\b' "$h" | grep -vE '^[0-9]+:DP_API [^(]*\bdp_[A-Za-z0-9_]+\(')
  if [ -n "$odd" ]; then
    echo "FAIL $h: DP_API declarations this check cannot read:"; printf '  %s\n' "$odd"; fail=$((fail + 1))
  fi
  # The glance list: from "At a glance:" to the end of that comment.
  sed -n '/At a glance:/,/\*\//p' "$h" | grep -oE '\bdp_[A-Za-z0-9_]+' | sort -u > "$tmp/glance"
  compare "API at a glance against the DP_API functions" "$h" "$tmp/api" "$tmp/glance"

  # Section tags: "/* >>tag" up to ':', ' --', ' ==' or the comment's end.
  grep -E '^/\* >>' "$h" | sed -E 's@^/\* >>@@; s@(:| --| ==|\*/).*@@; s@[[:space:]]+$@@' | sort -u > "$tmp/tags"
  # The contents entry: from "9. Implementation" to the blank line after it,
  # one line; each ">>" starts a tag that ends at ';', ')' or the next ">>".
  awk '/^ +[0-9]+\. Implementation/ {on = 1} on && /^[[:space:]]*$/ {exit} on {print}' "$h" | tr '\n' ' ' | tr -s ' ' \
    | awk 'BEGIN {RS = ">>"} NR > 1 {sub(/[;)].*/, ""); sub(/^ +/, ""); sub(/ +$/, ""); print}' | sort -u > "$tmp/contents"
  compare "CONTENTS' section list against the >>tag sections" "$h" "$tmp/tags" "$tmp/contents"
done
echo "header_lists_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
