#!/usr/bin/env bash
# Runs every test program given on the command line (each argument one
# command: a program, and its arguments after blanks); each prints a line
# "<name>: N passed, M failed" (", K skipped" may follow: tests that cannot
# run here, e.g. a peer that is not installed). Sums them into the last line.
# tests/run.sh -j N ...: N programs at a time (default 1). Each one's output
# is kept apart and reported in the order given, as soon as it and those
# before it have finished, so the report reads the same as with -j 1 and
# the summary stays the last line. Before it, a line "slowest: ..." names the
# five programs that took longest (whole seconds). The commands named in
# RUN_FIRST (blank-separated; commands without arguments of their own) start
# before the others, so that the longest ones do not start last and leave a
# CPU idle at the end; the report keeps the order given.
set -u
jobs=1
if [ "${1:-}" = "-j" ]; then jobs=$2; shift 2; fi
total_pass=0; total_fail=0; total_skip=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/depeng_run.XXXXXX") || exit 1
launcher=
trap 'rm -rf "$tmp"; [ -z "$launcher" ] || kill "$launcher" 2>/dev/null' EXIT
# output to $tmp/I.out; $tmp/I.rc appears (renamed into place) when it is done
run_one() {
  local t0=$SECONDS
  local cmd
  read -r -a cmd <<<"$2"
  "${cmd[@]}" >"$tmp/$1.out" 2>&1; echo $? >"$tmp/$1.rc.part"
  echo "$((SECONDS - t0)) $2" >"$tmp/$1.sec"
  mv "$tmp/$1.rc.part" "$tmp/$1.rc"
}
if [ "$jobs" -gt 1 ]; then
  ( for pass in first rest; do
      i=0
      for t in "$@"; do
        early=0; for f in ${RUN_FIRST:-}; do [ "$f" = "$t" ] && early=1; done
        if { [ $pass = first ] && [ $early = 1 ]; } || { [ $pass = rest ] && [ $early = 0 ]; }; then
          while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
          run_one "$i" "$t" &
        fi
        i=$((i + 1))
      done
    done; wait ) &
  launcher=$!
fi
i=0
for t in "$@"; do
  if [ "$jobs" -gt 1 ]; then while [ ! -f "$tmp/$i.rc" ]; do sleep 0.1; done
  else run_one "$i" "$t"; fi
  out=$(cat "$tmp/$i.out"); rc=$(cat "$tmp/$i.rc"); i=$((i + 1))
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
# the slowest programs, so that a test that grows is seen before make test is slow
slow=$(cat "$tmp"/*.sec 2>/dev/null | sort -rn | head -5 | awk '{t = $1; sub(/^[0-9]+ /, ""); printf "%s%s %ds", (NR > 1 ? ", " : ""), $0, t}')
[ -z "$slow" ] || echo "slowest: $slow"
if [ "$total_skip" -gt 0 ]; then echo "$total_pass passed, $total_fail failed, $total_skip skipped"
else echo "$total_pass passed, $total_fail failed"; fi
[ "$total_fail" -eq 0 ]
