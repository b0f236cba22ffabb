#!/usr/bin/env bash
# Runs libFuzzer harnesses for a bounded time each: tests/fuzz/run.sh SECONDS
# build/fuzz_npy ... Each harness starts from its committed seeds
# (tests/fuzz/corpus/<name>) plus what earlier runs here found
# (build/fuzz-corpus/<name>, where new inputs go), writes its log to
# build/fuzz-<name>.log and a crashing input to build/fuzz-artifacts/.
# Prints one line per harness (runs, coverage) and fails if any crashed.
# The harnesses run FUZZ_JOBS at a time (default: one per CPU; each is one
# thread), and report in the order given.
set -u
cd "$(dirname "$0")/../.." || exit 1
seconds=$1; shift
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
failed=0
mkdir -p build/fuzz-artifacts
fuzz_one() {   # $1 the harness; its exit status goes to build/fuzz-NAME.rc
  local name=${1##*/fuzz_}
  rm -f "build/fuzz-$name.rc"
  mkdir -p "build/fuzz-corpus/$name"
  "$1" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="build/fuzz-artifacts/$name-" \
       "build/fuzz-corpus/$name" "tests/fuzz/corpus/$name" >"build/fuzz-$name.log" 2>&1
  echo $? >"build/fuzz-$name.rc"
}
for bin in "$@"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  fuzz_one "$bin" &
done
wait
for bin in "$@"; do
  name=${bin##*/fuzz_}
  log="build/fuzz-$name.log"
  rc=$(cat "build/fuzz-$name.rc" 2>/dev/null || echo 1)
  runs=$(grep -o '^stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | grep -o 'cov: [0-9]* ft: [0-9]*' | tail -1)
  if [ "$rc" -eq 0 ]; then
    echo "PASS fuzz_$name: ${runs:-?} runs in ${seconds}s, ${cov:-cov: ?}"
  else
    failed=$((failed + 1))
    echo "FAIL fuzz_$name (exit $rc): see $log"
    grep -E 'ERROR|FUZZ_CHECK|MAKE_CHECK|SUMMARY|artifact' "$log" | head -8
  fi
done
echo "fuzz: $(( $# - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
