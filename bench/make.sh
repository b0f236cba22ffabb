#!/usr/bin/env bash
# bench/make.sh - examples/make.c against GNU make, wall time, same run.
#
#   bench/make.sh [path/to/make_example [N_INDEPENDENT [N_NOOP [REPS [K]]]]]
#   defaults: build/make_example 3000 10000 5 1
#
# MAKE-indep: N_INDEPENDENT independent targets, each `touch $@`, at -j4,
#             from scratch (the cost of starting and reaping jobs).
# MAKE-noop:  N_NOOP targets, each made from its own source file, all up to
#             date: a run that only reads the Makefile, stats and decides.
#             A round runs GNU make -r, make.c as people run it (built-in
#             rules on) and make.c -r; the first round also GNU make as
#             people run it, for context: with its built-in rules GNU make
#             tries them on every source file (about 50x slower here), so
#             make.c as people run it is held to GNU's -r time, and make.c
#             -r is compared with it too.
# A round runs each make once, taking turns (which one starts alternates
# from round to round, so that neither always follows the other); every
# round is printed, then each figure as the best of REPS rounds. With K > 1
# each make runs K times within a round, in turn (ABAB..., the first make
# alternating as above), and the round's figure for a make is the median of
# its K runs (K odd is the plain median; even, the mean of the middle two);
# K = 1 (the default) is one run each, as before:
#   round R MAKE-indep gnu_s=G depeng_s=D ratio=D/G
#   bench MAKE-indep n=N gnu_s=G depeng_s=D ratio=D/G
#   round R MAKE-noop gnu_s=G gnu_r_s=R depeng_s=D depeng_r_s=DR ratio_r=D/R ratio_rr=DR/R
#                     (gnu_s=- after the first round)
#   bench MAKE-noop n=N gnu_s=G gnu_r_s=R depeng_s=D depeng_r_s=DR ratio=D/G ratio_r=D/R ratio_rr=DR/R
# The targets: ratio (MAKE-indep) <= 1.0, ratio_r and ratio_rr <= 1.0.
# "FAIL ..." (exit 1) if the two makes do not make the same files or, on the
# no-op, do not print the same thing.
set -u
# run from inside a make (make test): the makes must not see its flags
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES GNUMAKEFLAGS
cd "$(dirname "$0")/.." || exit 2
DP=${1:-build/make_example}; NI=${2:-3000}; NN=${3:-10000}; REPS=${4:-5}
case $DP in /*) ;; *) DP=$(pwd)/$DP ;; esac
GNU=$(command -v make) || { echo "SKIP: GNU make not installed"; exit 77; }
[ -x "$DP" ] || { echo "FAIL: $DP not built"; exit 1; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
# bash's own clock: no process started between a make's end and the reading
now() { echo "${EPOCHREALTIME/,/.}"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", b - a }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
best() { awk 'NR == 1 || $1 < m { m = $1 } END { printf "%.3f", m }'; }
status=0

K=${5:-1}
case $K in ''|*[!0-9]*|0) echo "FAIL: K must be a positive integer"; exit 2 ;; esac
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.3f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# timed NAME CMD...: runs CMD, appends its wall time to NAME.r (this
# round's runs), keeps its output (stdout and stderr) in NAME.out
timed() {
    local name=$1 s e
    shift
    s=$(now); "$@" > "$name.out" 2>&1; e=$(now)
    elapsed "$s" "$e" >> "$name.r"
}
# round_end NAME...: each NAME's figure for the round (the median of its
# runs in NAME.r) appended to NAME.t
round_end() {
    local name
    for name in "$@"; do [ -s "$name.r" ] && median < "$name.r" >> "$name.t"; rm -f "$name.r"; done
}

# ---- independent targets at -j4 ------------------------------------------
mkdir -p "$T/indep" && cd "$T/indep" || exit 2
awk -v n="$NI" 'BEGIN { printf "all:"; for (i = 0; i < n; i++) printf " t%d", i; print "";
                        for (i = 0; i < n; i++) printf "t%d:\n\t@touch $@\n", i }' > Makefile
: > gnu.t; : > dp.t
indep_gnu() { rm -f t[0-9]*; timed gnu "$GNU" -j4; g=$(ls | grep -c '^t[0-9]'); }
indep_dp() { rm -f t[0-9]*; timed dp "$DP" -j4; d=$(ls | grep -c '^t[0-9]'); }
for r in $(seq "$REPS"); do
    for k in $(seq "$K"); do
        if [ $((r % 2)) -eq 1 ]; then indep_gnu; indep_dp; else indep_dp; indep_gnu; fi
        [ "$g" -eq "$NI" ] && [ "$d" -eq "$NI" ] || { echo "FAIL MAKE-indep: files made: gnu $g, depeng $d, wanted $NI"; status=1; }
        cmp -s gnu.out dp.out || { echo "FAIL MAKE-indep: GNU make said '$(cat gnu.out)', depeng's make '$(cat dp.out)'"; status=1; }
    done
    round_end gnu dp
    G=$(tail -n 1 gnu.t); D=$(tail -n 1 dp.t)
    echo "round $r MAKE-indep gnu_s=$G depeng_s=$D ratio=$(div "$D" "$G")"
done
G=$(best < gnu.t); D=$(best < dp.t)
echo "bench MAKE-indep n=$NI gnu_s=$G depeng_s=$D ratio=$(div "$D" "$G")"

# ---- no-op over up-to-date targets ----------------------------------------
mkdir -p "$T/noop" && cd "$T/noop" || exit 2
awk -v n="$NN" 'BEGIN { printf "all:"; for (i = 0; i < n; i++) printf " t%d", i; print "";
                        for (i = 0; i < n; i++) printf "t%d: s%d\n\t@touch $@\n", i, i }' > Makefile
seq 0 $((NN - 1)) | sed 's/^/s/' | xargs touch
sleep 0.01                                       # the targets newer than their sources
seq 0 $((NN - 1)) | sed 's/^/t/' | xargs touch
: > gnu.t; : > gnur.t; : > dp.t; : > dpr.t
for r in $(seq "$REPS"); do
    for k in $(seq "$K"); do
        if [ $((r % 2)) -eq 1 ]; then
            timed gnur "$GNU" -r -j4; timed dp "$DP" -j4; timed dpr "$DP" -r -j4
        else
            timed dpr "$DP" -r -j4; timed gnur "$GNU" -r -j4; timed dp "$DP" -j4
        fi
        [ "$r" -eq 1 ] && [ "$k" -eq 1 ] && timed gnu "$GNU" -j4
        cmp -s gnu.out dp.out || { echo "FAIL MAKE-noop: GNU make said '$(cat gnu.out)', depeng's make '$(cat dp.out)'"; status=1; }
        cmp -s gnur.out dpr.out || { echo "FAIL MAKE-noop -r: GNU make said '$(cat gnur.out)', depeng's make '$(cat dpr.out)'"; status=1; }
    done
    round_end gnu gnur dp dpr
    G=-; [ "$r" -eq 1 ] && G=$(tail -n 1 gnu.t)
    R=$(tail -n 1 gnur.t); D=$(tail -n 1 dp.t); DR=$(tail -n 1 dpr.t)
    echo "round $r MAKE-noop gnu_s=$G gnu_r_s=$R depeng_s=$D depeng_r_s=$DR ratio_r=$(div "$D" "$R") ratio_rr=$(div "$DR" "$R")"
done
G=$(best < gnu.t); R=$(best < gnur.t); D=$(best < dp.t); DR=$(best < dpr.t)
echo "bench MAKE-noop n=$NN gnu_s=$G gnu_r_s=$R depeng_s=$D depeng_r_s=$DR ratio=$(div "$D" "$G") ratio_r=$(div "$D" "$R") ratio_rr=$(div "$DR" "$R")"
exit $status
