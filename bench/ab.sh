#!/usr/bin/env bash
# bench/ab.sh - before/after for one engine change, measured the only way
# that holds up on a shared 2-core machine: both builds in one session,
# interleaved, several rounds, medians.
#
#   bench/ab.sh REV [ROUNDS] [-- DRIVER_ARGS...]
#   e.g. bench/ab.sh HEAD~1                      # perdevice W1 W2 W2-op W3 W4, 5 rounds
#        bench/ab.sh 293e356 3 -- -e naive W1 W2
#
# Builds bench/depeng.c against depeng.h as of REV ("before") and against
# the working tree ("after"), runs them alternately ROUNDS times, and prints
# per workload the median over rounds of each round's median, and after/before.
# The "before" driver is built with BENCH_OLD_STATS: it leaves out the
# statistics an older depeng.h may not have (bench_depeng -c's callers line).
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/ab.sh REV [ROUNDS] [-- DRIVER_ARGS...]}; shift
rounds=5
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds=$1; shift; fi
[ "${1:-}" = "--" ] && shift
args=("$@"); [ ${#args[@]} -eq 0 ] && args=(-e perdevice W1 W2 W2-op W3 W4)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ab.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/before/bench"
git show "$rev:depeng.h" > "$tmp/before/depeng.h"
cp bench/depeng.c bench/common.h "$tmp/before/bench/"
cc -std=c11 -O2 -DBENCH_OLD_STATS -I"$tmp/before" "$tmp/before/bench/depeng.c" -o "$tmp/bench_before" -pthread -lm
cc -std=c11 -O2 -I. bench/depeng.c -o "$tmp/bench_after" -pthread -lm
for r in $(seq "$rounds"); do
    for side in before after; do
        "$tmp/bench_$side" "${args[@]}" | awk -v s="$side" '/^bench /{print s, $2, $3, $4}' >> "$tmp/results"
    done
done
awk '
    { split($4, kv, "="); k = $2 " " $3; v[$1, k] = v[$1, k] " " kv[2]; keys[k] = 1 }
    function median(str,   n, x, i, j, t) {
        n = split(str, x, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] + 0 < x[i] + 0) { t = x[i]; x[i] = x[j]; x[j] = t }
        return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
    }
    END {
        for (k in keys) {
            b = median(v["before", k]); a = median(v["after", k])
            printf "%-32s %10.1f %10.1f %8.2f\n", k, b, a, (b > 0 ? a / b : 0)
        }
    }' "$tmp/results" | sort > "$tmp/table"
printf "%-32s %10s %10s %8s   (ns per task, median of rounds)\n" "workload system" "before" "after" "ratio"
cat "$tmp/table"
echo "# $rounds rounds; before = depeng.h at $rev, after = working tree; driver args: ${args[*]}"
