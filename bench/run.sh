#!/usr/bin/env bash
# bench/run.sh - runs the benchmark drivers one after another and sums up.
#
#   bench/run.sh DRIVER... [-- WORKLOAD_ARGS...]
#   e.g. bench/run.sh build/bench_depeng build/bench_seq build/bench_omp build/bench_starpu
#        bench/run.sh build/bench_seq build/bench_omp -- -n 10000 W1 W4
#
# Every driver's output is echoed as it comes. Lines of the form
#   bench WORK system=SYS ns_per_task=X min=.. max=.. reps=5 n=N [note=..]
# are collected, and at the end this prints, for W1 W2 W2-op W3 W4:
#   ratio WORK depeng/best_peer=R best_peer=SYS ...
# (depeng = system depeng-perdevice; best peer = the fastest system that is
# neither depeng-*, sequential nor the W5 ceiling two-threads-no-deps; W2-op,
# which only depeng runs, is
# compared with the peers' W2), the same for depeng-naive as ratio-naive
# lines when that system reported, and for W5-1us and W5-10us:
#   speedup WORK system=SYS over_sequential=S
# A missing figure gives "none" instead of a number.
#
# W5's body loop counts are calibrated by each driver, which is noisy; so
# that every system runs the same bodies, the first driver's counts
# ("# W5 loops 1us=A 10us=B") are passed on to the later drivers as
# BENCH_W5_LOOPS=A,B (unless it is already set).
#
# Driver exit status: 0 ok; 1 the driver printed FAIL; 77 skipped (it
# could not run here, e.g. StarPU would not start); anything else is an
# error. A driver that is not built is skipped. Exits non-zero when any
# FAIL line appeared or any driver ended in error.
set -euo pipefail

drivers=()
while [ $# -gt 0 ]; do
    if [ "$1" = "--" ]; then shift; break; fi
    drivers+=("$1"); shift
done
wargs=("$@")
if [ "${#drivers[@]}" -eq 0 ]; then
    echo "usage: $0 DRIVER... [-- WORKLOAD_ARGS...]" >&2
    exit 2
fi

log=$(mktemp "${TMPDIR:-/tmp}/bench_run.XXXXXX")
trap 'rm -f "$log"' EXIT
errors=0
t_all=$SECONDS

for d in "${drivers[@]}"; do
    if [ ! -x "$d" ]; then
        echo "skipped: $d: not built (no executable file; for the peers run make bench-deps)" | tee -a "$log"
        continue
    fi
    echo "# run.sh: $d ${wargs[*]:-}"
    t0=$SECONDS
    # stderr joins stdout so diagnostics are seen in order; only the lines
    # the summary needs are picked out of the log afterwards.
    set +e
    "$d" ${wargs[@]+"${wargs[@]}"} 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    set -e
    case $rc in
        0) ;;
        1) echo "# run.sh: $d reported FAIL" ;;
        77) echo "skipped: $d: could not run here (exit status 77)" | tee -a "$log" ;;
        *) echo "error: $d exited with status $rc" | tee -a "$log"; errors=$((errors + 1)) ;;
    esac
    echo "# run.sh: $d took $((SECONDS - t0)) s"
    if [ -z "${BENCH_W5_LOOPS:-}" ]; then
        loops=$(awk '/^# W5 loops / {
                    for (i = 1; i <= NF; i++) {
                        if ($i ~ /^1us=/) a = substr($i, 5)
                        if ($i ~ /^10us=/) b = substr($i, 6)
                    }
                    if (a != "" && b != "") { print a "," b; exit }
                }' "$log")
        if [ -n "$loops" ]; then
            export BENCH_W5_LOOPS=$loops
            echo "# run.sh: later drivers run W5 with BENCH_W5_LOOPS=$loops"
        fi
    fi
done

echo "# run.sh: all drivers took $((SECONDS - t_all)) s"
echo "# summary"
awk '
    function field(name,   i) {          # value of name=... on the current line
        for (i = 3; i <= NF; i++)
            if (index($i, name "=") == 1) return substr($i, length(name) + 2)
        return ""
    }
    /^FAIL/ { fails++ }
    /^# W5 loops / { loops[field("system")] = $4 " " $5 }
    /^bench / {
        w = $2; s = field("system")
        ns[w, s] = field("ns_per_task") + 0; n[w, s] = field("n")
        if (!((w, s) in seen)) { seen[w, s] = 1; order[w] = order[w] " " s }
    }
    # fastest peer for workload w: not depeng-*, not sequential
    function best_peer(w,   k, m, s, b) {
        b = ""; m = split(order[w], list, " ")
        for (k = 1; k <= m; k++) {
            s = list[k]
            if (s ~ /^depeng/ || s == "sequential" || s == "two-threads-no-deps") continue
            if (b == "" || ns[w, s] < ns[w, b]) b = s
        }
        return b
    }
    function ratio(tag, w, mine,   pw, b, r) {
        pw = (w == "W2-op") ? "W2" : w   # W2-op has no peer run: compare with W2
        b = best_peer(pw)
        if (tag == "ratio-naive" && !((w, mine) in ns)) return
        r = ((w, mine) in ns && b != "" && ns[pw, b] > 0) ? sprintf("%.2f", ns[w, mine] / ns[pw, b]) : "none"
        printf "%s %s %s/best_peer=%s best_peer=%s", tag, w, \
            (tag == "ratio" ? "depeng" : "depeng-naive"), r, (b == "" ? "none" : b)
        if ((w, mine) in ns) printf " %s_ns=%.1f", mine, ns[w, mine]
        else printf " %s_ns=none", mine
        if (b != "") printf " best_peer_ns=%.1f best_peer_n=%s%s", ns[pw, b], n[pw, b], (pw != w ? " best_peer_work=" pw : "")
        printf "\n"
    }
    END {
        nw = split("W1 W2 W2-op W3 W4", works, " ")
        for (i = 1; i <= nw; i++) ratio("ratio", works[i], "depeng-perdevice")
        for (i = 1; i <= nw; i++) ratio("ratio-naive", works[i], "depeng-naive")
        split("W5-1us W5-10us", w5, " ")
        for (i = 1; i <= 2; i++) {
            w = w5[i]; m = split(order[w], list, " ")
            for (k = 1; k <= m; k++) {
                s = list[k]
                if (s == "sequential") continue
                sp = (((w, "sequential") in seen) && ns[w, s] > 0) ? sprintf("%.2f", ns[w, "sequential"] / ns[w, s]) : "none"
                if (((w, "sequential") in seen) && n[w, s] != n[w, "sequential"]) sp = sp " n_differs"
                printf "speedup %s system=%s over_sequential=%s\n", w, s, sp
            }
            if (m == 0) printf "speedup %s system=none over_sequential=none\n", w
        }
        # the loop counts should all agree (BENCH_W5_LOOPS); say so when not
        first = ""; differ = 0
        for (s in loops) { if (first == "") first = loops[s]; else if (loops[s] != first) differ = 1 }
        if (differ) {
            printf "# warning: W5 loop counts differ between drivers:"
            for (s in loops) printf " %s(%s)", s, loops[s]
            printf "\n"
        }
        if (fails) printf "# %d FAIL line(s) above\n", fails
        exit fails ? 1 : 0
    }
' "$log" || errors=$((errors + 1))

[ "$errors" -eq 0 ]
