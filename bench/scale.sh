#!/usr/bin/env bash
# bench/scale.sh - what would limit depeng on many cores, read from its
# contention counters (dp_engine_stats) rather than from times: the
# per-device engine runs W1-W4 with 2, 4, 8 and 16 CPU workers and prints,
# per workload and worker count, the contended lock acquisitions and
# retries per pushed op, and how ops reached the workers: takes from the
# pool's shared queue (under its take lock) and steals from peers' deques
# per pushed op. On a machine with fewer cores than workers the
# threads are oversubscribed: the times say little, the counters show which
# shared structure the threads collide on and how that grows with workers.
#
#   bench/scale.sh [BENCH_DEPENG] [N]      (defaults: build/bench_depeng 200000)
#
# Prints the driver's "contention ..." lines, then one table.
set -euo pipefail
drv=${1:-build/bench_depeng}
n=${2:-200000}
[ -x "$drv" ] || { echo "bench/scale.sh: $drv is not built (make bench-build)" >&2; exit 2; }
out=$(for w in 2 4 8 16; do "$drv" -n "$n" -e perdevice -w "$w" -c W1 W2 W3 W4; done)
rc=$?
printf '%s\n' "$out" | grep '^contention '
printf '%-5s %7s %10s %10s %10s %10s %10s %11s %10s %10s\n' work workers var_lock queue_lock queue_busy wakeups pool_cas queue_takes steals ns_per_task
printf '%s\n' "$out" | awk '
    /^bench / { for (i = 3; i <= NF; i++) if (index($i, "ns_per_task=") == 1) ns[$2] = substr($i, 13); next }
    /^contention / {
        for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        printf "%-5s %7s %10s %10s %10s %10s %10s %11s %10s %10s\n", $2, f["workers"], f["var_lock"], f["queue_lock"], f["queue_busy"], f["wakeups"], f["pool_cas"], f["queue_takes"], f["steals"], ns[$2]
    }'
if printf '%s\n' "$out" | grep -q '^FAIL'; then echo "bench/scale.sh: FAIL above" >&2; exit 1; fi
exit "$rc"
