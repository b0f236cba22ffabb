#!/usr/bin/env bash
# bench/range.sh - the range loop, depeng against oneTBB and OpenMP (see
# bench/range.cpp), alternated in rounds in one sitting.
#   bench/range.sh [ROUNDS] [N]        default 5 rounds, N = 1,000,000
# Calibrates a ~100 ns and a ~1 us body once, then per round and body runs
# depeng, depeng-det, tbb and omp one after another (a process each) and
# prints each one's median ms and its ratio to oneTBB's in that round; last,
# per body and system, the median over rounds of those ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; n=${2:-1000000}
mkdir -p build
g++ -std=c++17 -O2 -fopenmp -I. bench/range.cpp -o build/bench_range -ltbb -pthread
read -r l100 l1000 < <(build/bench_range calibrate)
echo "# loops: ~100 ns body = $l100, ~1 us body = $l1000; n = $n; 2 threads each"
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
for r in $(seq "$rounds"); do
    for body in 100ns 1us; do
        loops=$l100; reps=7; [ "$body" = 1us ] && { loops=$l1000; reps=3; }
        declare -A t=()
        for sys in depeng depeng-det tbb omp; do
            line=$(build/bench_range "$sys" "$loops" "$n" "$reps")
            case "$line" in FAIL*) echo "$line"; exit 1;; esac
            t[$sys]=$(sed 's/.* ms=\([0-9.]*\).*/\1/' <<<"$line")
        done
        for sys in depeng depeng-det tbb omp; do
            ratio=$(awk -v a="${t[$sys]}" -v b="${t[tbb]}" 'BEGIN{printf "%.3f", a / b}')
            printf "round %d body=%s %-10s ms=%8.2f  /tbb=%s\n" "$r" "$body" "$sys" "${t[$sys]}" "$ratio"
            echo "$body $sys $ratio" >> "$tmp"
        done
    done
done
echo "# median over rounds of each round's ratio to oneTBB:"
for body in 100ns 1us; do
    for sys in depeng depeng-det omp; do
        med=$(awk -v b="$body" -v s="$sys" '$1 == b && $2 == s {print $3}' "$tmp" | sort -n | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}')
        printf "ratio body=%s %s/tbb=%s\n" "$body" "$sys" "$med"
    done
done
