#!/usr/bin/env bash
# bench/ab_layers.sh - before/after for the layers' kernels (bench/layers.c),
# as bench/ab.sh does for the engine: both builds in one session, run
# alternately, every round printed.
#
#   bench/ab_layers.sh REV [ROUNDS] [CASE-SUBSTRING]
#   e.g. bench/ab_layers.sh main 3 conv
#
# Builds bench/layers.c against depeng.h and depeng_nn.h as of REV
# ("before") and against the working tree ("after"), then runs before,
# after, after, before, ... ROUNDS times, one round of bench_layers each,
# and prints each line with its side.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/ab_layers.sh REV [ROUNDS] [CASE-SUBSTRING]}
rounds=${2:-3}
only=${3:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ab_layers.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/before/bench"
git show "$rev:depeng.h" > "$tmp/before/depeng.h"
git show "$rev:depeng_nn.h" > "$tmp/before/depeng_nn.h"
cp bench/layers.c bench/common.h "$tmp/before/bench/"
cc -std=c11 -O2 -I"$tmp/before" "$tmp/before/bench/layers.c" -o "$tmp/before_bin" -pthread -lm
cc -std=c11 -O2 -I. bench/layers.c -o "$tmp/after_bin" -pthread -lm
for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
    for side in $order; do
        "$tmp/${side}_bin" 1 $only | sed "s/^round 1/round $r $side/"
    done
done
