#!/usr/bin/env bash
# tests/faults.sh FAULTS_PROGRAM: runs tests/faults.c's sweep for the three
# engine kinds side by side (one process each, FAULTS_JOBS at a time,
# default one per CPU: each kind's sweep is thousands of short children, one
# at a time), then prints their reports in the order naive, pooled,
# per-device and the sum as "faults: N passed, M failed".
set -u
prog=${1:?usage: tests/faults.sh build/faults}
jobs=${FAULTS_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/depeng_faults.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
kinds="naive pooled perdevice"
for k in $kinds; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  ( ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$prog" "$k" >"$tmp/$k.out" 2>&1; echo $? >"$tmp/$k.rc" ) &
done
wait
pass=0 fail=0 rc=0
for k in $kinds; do
  grep -v '^faults: ' "$tmp/$k.out"
  line=$(grep -E '^faults: [0-9]+ passed, [0-9]+ failed' "$tmp/$k.out" | tail -1)
  if [ -z "$line" ]; then echo "FAIL faults $k: no summary line (exit $(cat "$tmp/$k.rc"))"; fail=$((fail + 1)); rc=1; continue; fi
  pass=$((pass + $(sed -E 's/^faults: ([0-9]+) passed.*/\1/' <<<"$line")))
  fail=$((fail + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")))
  [ "$(cat "$tmp/$k.rc")" -eq 0 ] || rc=1
done
echo "faults: $pass passed, $fail failed"
[ "$rc" -eq 0 ] && [ "$fail" -eq 0 ]
