#!/usr/bin/env bash
# Runs every test program given on the command line; each prints a line
# "<name>: N passed, M failed" (", K skipped" may follow: tests that cannot
# run here, e.g. a peer that is not installed). Sums them into the last line.
set -u
total_pass=0; total_fail=0; total_skip=0
for t in "$@"; do
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -E '^(PASS|FAIL|SKIP)|passed, .* failed' | grep -v '^PASS' || true
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -1)
  if [ -z "$line" ]; then
    echo "$t: no result line (exit $rc)"; printf '%s\n' "$out" | tail -20; total_fail=$((total_fail + 1)); continue
  fi
  p=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) passed.*/\1/'); f=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$t: exit $rc"; printf '%s\n' "$out" | tail -20; fi
  k=0; case $line in *skipped*) k=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) skipped.*/\1/');; esac
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + k))
done
if [ "$total_skip" -gt 0 ]; then echo "$total_pass passed, $total_fail failed, $total_skip skipped"
else echo "$total_pass passed, $total_fail failed"; fi
[ "$total_fail" -eq 0 ]
