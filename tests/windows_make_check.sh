#!/usr/bin/env bash
# examples/make.c on Windows (under Wine). Its demo (examples/make_demo) is
# skipped: the rules are POSIX shell lines that call cc, while on Windows the
# example runs each line through cmd.exe, and Wine has no C compiler. Instead
# a rule file of cmd.exe built-ins checks the same behaviour: a first build
# runs every rule, a second finds the files up to date, a failing command
# stops its target with make's error line and exit status 2.
# Prints "make_example (Windows): N passed, M failed, 1 skipped".
cd "$(dirname "$0")/.." || exit 1
mk=$PWD/build/win/make_example
p=0; f=0
check() { if [ "$2" -eq 0 ]; then echo "PASS $1"; p=$((p+1)); else echo "FAIL $1"; sed 's/^/    /' out.txt; f=$((f+1)); fi; }
T=$(mktemp -d "$PWD/build/win/make.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
echo hello > a.txt
printf 'all: b.txt c.txt\n\techo linking-all\nb.txt: a.txt\n\tcopy a.txt b.txt\nc.txt: a.txt\n\tcopy a.txt c.txt\nbad: a.txt\n\texit /b 3\n' > rules.dp
"$mk" -j 2 -f rules.dp > out.txt 2>&1; rc=$?
ok=1; [ $rc -eq 0 ] && [ "$(grep -c '^copy a.txt' out.txt)" -eq 2 ] && grep -q '^linking-all' out.txt \
    && tr -d '\r' < b.txt | grep -q '^hello' && tr -d '\r' < c.txt | grep -q '^hello' && ok=0
check "make_example runs every rule through cmd.exe" $ok
"$mk" -j 2 -f rules.dp > out.txt 2>&1; rc=$?
ok=1; [ $rc -eq 0 ] && ! grep -q '^copy' out.txt && grep -q '^linking-all' out.txt && ok=0
check "make_example: a second run copies nothing (up to date)" $ok
"$mk" -f rules.dp bad > out.txt 2>&1; rc=$?
ok=1; [ $rc -eq 2 ] && grep -q "command 'exit /b 3' exited with status 3" out.txt && grep -q 'make: \*\*\* \[bad\] Error 3' out.txt && ok=0
check "make_example: a failing command fails its target (exit 2)" $ok
echo "SKIP make_example's make_demo scenarios: POSIX shell rules that call cc; Windows runs rules through cmd.exe and Wine has no C compiler"
echo "make_example (Windows): $p passed, $f failed, 1 skipped"
[ "$f" -eq 0 ]
