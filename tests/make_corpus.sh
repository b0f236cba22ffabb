#!/usr/bin/env bash
# examples/make.c against GNU make on the Makefiles in tests/make_corpus/,
# each a small project written for this test in a style real projects use
# (autodependencies with -MMD, a recursive build, a configure-style
# config.mk that make remakes and a generated header, an ar archive, a
# POSIX-only makefile with suffix rules, built-in rules only, C++ and
# assembler through the built-in rules, target-specific variables and
# static pattern rules).
# Usage: tests/make_corpus.sh [build/make_example] [project ...]
# Each project is copied twice (one copy per make) and run in the modes:
#   -j1 fresh build, second run, -q, -B, -s -B: output (the command log, NOT
#       sorted: at -j1 GNU make's order is the order), exit status, files;
#   touching each input in turn: -q (exit status), -n (output), then -j1
#       (output, exit status, files);
#   a broken source: -k and without -k at -j1 (output, exit status, files);
#   the project's test target at -j1; clean, then -j4 fresh (exit status and
#       files: the order of parallel jobs is free, so the log is not compared).
# Prints PASS/FAIL per check and "make_corpus: N passed, M failed".
set -u
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES GNUMAKEFLAGS MAKE_RESTARTS
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DP=${1:-$ROOT/build/make_example}; [ $# -gt 0 ] && shift
case $DP in /*) ;; *) DP=$(pwd)/$DP ;; esac
[ -x "$DP" ] || { echo "$DP: not executable" >&2; exit 2; }
GNU=$(command -v make) || { echo "SKIP: GNU make not installed"; echo "make_corpus: 0 passed, 0 failed, 1 skipped"; exit 0; }
command -v cc > /dev/null && command -v g++ > /dev/null || { echo "SKIP: cc or g++ not installed"; echo "make_corpus: 0 passed, 0 failed, 1 skipped"; exit 0; }
C=$ROOT/tests/make_corpus
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { echo "PASS: $1"; pass=$((pass + 1)); }
bad() { local f; echo "FAIL: $1"; shift; for f in "$@"; do [ -f "$f" ] && sed 's/^/    /' "$f" | head -30; done; fail=$((fail + 1)); }

# run_both ARGS...: both makes in $T/gnu and $T/dp; output (paths made the
# same: each copy's directory is DIR, make.c's path is make), exit status
# and the list of files go to $T/{gnu,dp}.{out,rc,files}
run_both() {
    local who mk
    for who in gnu dp; do
        [ $who = gnu ] && mk=make || mk=$DP
        ( cd "$T/$who" && PATH=$(dirname "$GNU"):$PATH "$mk" "$@" ) > "$T/$who.raw" 2>&1
        echo $? > "$T/$who.rc"
        sed -e "s#$T/$who#DIR#g" -e "s#$DP#make#g" "$T/$who.raw" > "$T/$who.out"
        ( cd "$T/$who" && find . -type f | LC_ALL=C sort ) > "$T/$who.files"
    done
}
# check NAME WHAT...: WHAT is any of out rc files
check() {
    local name=$1 w what=""; shift
    for w in "$@"; do cmp -s "$T/gnu.$w" "$T/dp.$w" || what="$what $w"; done
    if [ -z "$what" ]; then ok "$name"; else
        diff "$T/gnu.out" "$T/dp.out" > "$T/diff.out"; diff "$T/gnu.files" "$T/dp.files" > "$T/diff.files"
        echo "exit: gnu $(cat "$T/gnu.rc"), make.c $(cat "$T/dp.rc")" > "$T/diff.rc"
        bad "$name:$what differ" "$T/diff.rc" "$T/diff.out" "$T/diff.files"
    fi
}
age_all() { find "$T/gnu" "$T/dp" -exec touch -h -d '2001-01-01 00:00:00' {} + ; }
touch_both() { touch "$T/gnu/$1" "$T/dp/$1"; }

projects=${*:-$(cd "$C" && ls)}
for P in $projects; do
    [ -d "$C/$P" ] || { bad "$P: no such project"; continue; }
    rm -rf "$T/gnu" "$T/dp"; cp -a "$C/$P" "$T/gnu"; cp -a "$C/$P" "$T/dp"
    inputs=$(cd "$C/$P" && find . -type f | sed 's#^\./##' | LC_ALL=C sort)
    age_all
    run_both -j1;      check "$P: -j1 fresh build" out rc files
    run_both -j1;      check "$P: -j1 second run" out rc files
    run_both -q;       check "$P: -q when up to date" rc
    for f in $inputs; do
        age_all; touch_both "$f"
        run_both -q;   check "$P: touch $f, -q" rc
        run_both -n;   check "$P: touch $f, -n" out rc
        run_both -j1;  check "$P: touch $f, -j1" out rc files
    done
    age_all
    run_both -B;       check "$P: -B" out rc files
    run_both -s -B;    check "$P: -s -B" out rc files
    src=$(printf '%s\n' $inputs | grep -E '\.(c|cpp)$' | head -1)
    if [ -n "$src" ]; then
        cp "$T/gnu/$src" "$T/src.keep"
        for who in gnu dp; do echo '#error broken on purpose' >> "$T/$who/$src"; done
        run_both -k;   check "$P: $src broken, -k" out rc files
        run_both;      check "$P: $src broken, without -k" out rc files
        for who in gnu dp; do cp "$T/src.keep" "$T/$who/$src"; done
    fi
    tgt=$(grep -oE '^(test|check|run):' "$C/$P/Makefile" | head -1 | tr -d :)
    if [ -n "$tgt" ]; then run_both -j1 "$tgt"; check "$P: make $tgt" out rc files; fi
    run_both clean;    check "$P: clean" out rc files
    run_both -j4;      check "$P: -j4 fresh build (files, exit status)" rc files
    run_both -j4;      check "$P: -j4 second run" out rc files
done
echo "make_corpus: $pass passed, $fail failed"
[ $fail -eq 0 ]
