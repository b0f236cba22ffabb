#!/usr/bin/env bash
# bench/make.sh - examples/make.c against GNU make, wall time, same run.
#
#   bench/make.sh [path/to/make_example [N_INDEPENDENT [N_NOOP [REPS]]]]
#   defaults: build/make_example 3000 10000 2
#
# MAKE-indep: N_INDEPENDENT independent targets, each `touch $@`, at -j4,
#             from scratch (the cost of starting and reaping jobs).
# MAKE-noop:  N_NOOP targets, each made from its own source file, all up to
#             date: a run that only reads the Makefile, stats and decides.
#             GNU make is timed as people run it and with -r (no built-in
#             rules, which it otherwise tries on every file).
# Each figure is the best of REPS runs, the two makes taking turns. Prints
#   bench MAKE-indep n=N gnu_s=G depeng_s=D ratio=D/G
#   bench MAKE-noop n=N gnu_s=G gnu_r_s=R depeng_s=D ratio=D/G ratio_r=D/R
# and "FAIL ..." (exit 1) if the two makes do not produce the same files.
set -u
# run from inside a make (make test): the two makes must not see its flags
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES GNUMAKEFLAGS
cd "$(dirname "$0")/.." || exit 2
DP=${1:-build/make_example}; NI=${2:-3000}; NN=${3:-10000}; REPS=${4:-2}
case $DP in /*) ;; *) DP=$(pwd)/$DP ;; esac
GNU=$(command -v make) || { echo "SKIP: GNU make not installed"; exit 77; }
[ -x "$DP" ] || { echo "FAIL: $DP not built"; exit 1; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", b - a }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
best() { awk 'NR == 1 || $1 < m { m = $1 } END { printf "%.3f", m }'; }
status=0

# ---- independent targets at -j4 ------------------------------------------
mkdir -p "$T/indep" && cd "$T/indep" || exit 2
awk -v n="$NI" 'BEGIN { printf "all:"; for (i = 0; i < n; i++) printf " t%d", i; print "";
                        for (i = 0; i < n; i++) printf "t%d:\n\t@touch $@\n", i }' > Makefile
: > gnu.t; : > dp.t
for r in $(seq "$REPS"); do
    rm -f t[0-9]*; s=$(now); "$GNU" -j4 > /dev/null 2>&1; e=$(now); elapsed "$s" "$e" >> gnu.t
    g=$(ls t[0-9]* | wc -l)
    rm -f t[0-9]*; s=$(now); "$DP" -j4 > /dev/null 2>&1; e=$(now); elapsed "$s" "$e" >> dp.t
    d=$(ls t[0-9]* | wc -l)
    [ "$g" -eq "$NI" ] && [ "$d" -eq "$NI" ] || { echo "FAIL MAKE-indep: files made: gnu $g, depeng $d, wanted $NI"; status=1; }
done
G=$(best < gnu.t); D=$(best < dp.t)
echo "bench MAKE-indep n=$NI gnu_s=$G depeng_s=$D ratio=$(div "$D" "$G")"

# ---- no-op over up-to-date targets ----------------------------------------
mkdir -p "$T/noop" && cd "$T/noop" || exit 2
awk -v n="$NN" 'BEGIN { printf "all:"; for (i = 0; i < n; i++) printf " t%d", i; print "";
                        for (i = 0; i < n; i++) printf "t%d: s%d\n\t@touch $@\n", i, i }' > Makefile
seq 0 $((NN - 1)) | sed 's/^/s/' | xargs touch
seq 0 $((NN - 1)) | sed 's/^/t/' | xargs touch
: > gnu.t; : > gnur.t; : > dp.t
for r in $(seq "$REPS"); do
    s=$(now); out=$("$GNU" -j4 2>&1); e=$(now); elapsed "$s" "$e" >> gnu.t
    s=$(now); "$GNU" -r -j4 > /dev/null 2>&1; e=$(now); elapsed "$s" "$e" >> gnur.t
    s=$(now); dout=$("$DP" -j4 2>&1); e=$(now); elapsed "$s" "$e" >> dp.t
    [ "$out" = "$dout" ] || { echo "FAIL MAKE-noop: GNU make said '$out', depeng's make '$dout'"; status=1; }
done
G=$(best < gnu.t); R=$(best < gnur.t); D=$(best < dp.t)
echo "bench MAKE-noop n=$NN gnu_s=$G gnu_r_s=$R depeng_s=$D ratio=$(div "$D" "$G") ratio_r=$(div "$D" "$R")"
exit $status
