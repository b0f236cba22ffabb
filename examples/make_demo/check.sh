#!/bin/sh
# Self-check for examples/make.c. Usage: examples/make_demo/check.sh build/make_example
# Runs the demo in a temporary copy of this directory; prints PASS/FAIL per scenario.
set -u
# run from inside a make (make test, make asan): this make is a top-level one,
# so it must not read the outer make's flags and level (it would say make[2]:)
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES GNUMAKEFLAGS MAKE_RESTARTS
[ $# -eq 1 ] || { echo "usage: $0 path/to/make_example" >&2; exit 2; }
case $1 in /*) MK=$1 ;; *) MK=$(pwd)/$1 ;; esac
[ -x "$MK" ] || { echo "$MK: not executable" >&2; exit 2; }
SRC=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
cp "$SRC"/Makefile "$SRC"/*.c "$SRC"/*.h "$T"/
cd "$T" || exit 2
fails=0
check() {   # check NAME CONDITION-RESULT
    if [ "$2" -eq 0 ]; then echo "PASS: $1"; else echo "FAIL: $1"; sed 's/^/    /' out.txt; fails=$((fails + 1)); fi
}

# 1. fresh build: four commands, a working program
"$MK" -j 2 > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 0 ] && [ "$(grep -c '^cc ' out.txt)" -eq 4 ] && ./hello | grep -q 'hello, depeng' && ok=0
check "fresh build" $ok

# 2. rebuild: nothing runs
"$MK" -j 2 > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 0 ] && ! grep -q '^cc ' out.txt && grep -q "Nothing to be done for 'all'" out.txt && ok=0
check "second run is up to date" $ok

# 3. touch util.c: only util.o and hello are rebuilt
sleep 1; touch util.c
"$MK" -j 2 > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 0 ] && [ "$(grep -c '^cc ' out.txt)" -eq 2 ] && grep -q -- '-c util.c' out.txt \
    && grep -q '^cc -o hello' out.txt && ok=0
check "touch util.c rebuilds util.o and hello only" $ok

# 4. a failing command: error names the target, dependents skipped, exit 2
cat > broken.dp <<'RULES'
all: bad good
	echo linking-all
bad: main.c
	false
good: util.c
	echo good-ran
RULES
"$MK" -j 2 -f broken.dp > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 2 ] && grep -q 'make: \*\*\* \[broken.dp:4: bad\] Error 1' out.txt \
    && ! grep -q linking-all out.txt && ok=0
check "failing command reports Error 1 and exits 2" $ok

# 5. a missing prerequisite is reported before anything runs; a cycle is
#    dropped with a message, as GNU make does
printf 'a: b nosuch.c\n\techo a-ran\nb:\n\techo b-ran\n' > missing.dp
"$MK" -f missing.dp > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 2 ] && grep -q "No rule to make target 'nosuch.c', needed by 'a'" out.txt && ! grep -q ran out.txt && ok=0
check "missing prerequisite" $ok
printf 'x: y\n\techo x\ny: x\n\techo y\n' > cycle.dp
"$MK" -f cycle.dp > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 0 ] && grep -q 'Circular y <- x dependency dropped' out.txt && ok=0
check "dependency cycle is dropped" $ok

# 6. a line longer than 4 KiB is one line: a long command with a colon
#    in it runs as it is, and is not read as a rule
long=$(head -c 5000 /dev/zero | tr '\0' x)
printf 'all:\n\t@echo %s:tail > long.out\n' "$long" > long.dp
"$MK" -f long.dp > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 0 ] && [ "$(cat long.out)" = "$long:tail" ] && ok=0
check "a 5000-character command line" $ok

# 7. --trace FILE: a line per rule that ran, with its times, status and
#    prerequisites (order-only ones after "|"); a rule that only checked its
#    files writes none; a failed rule its status; a path that cannot be
#    opened stops make before anything runs
"$MK" clean > /dev/null 2>&1
"$MK" -j 2 --trace trace.txt > out.txt 2>&1; rc=$?
ok=1
TAB=$(printf '\t')
[ $rc -eq 0 ] && [ "$(wc -l < trace.txt)" -eq 4 ] \
    && grep -q "^rule${TAB}[0-9]*${TAB}[0-9]*${TAB}0${TAB}hello${TAB}main.o${TAB}util.o${TAB}greet.o\$" trace.txt \
    && grep -q "^rule${TAB}[0-9]*${TAB}[0-9]*${TAB}0${TAB}util.o${TAB}util.c${TAB}util.h\$" trace.txt \
    && awk -F"$TAB" '$5 == "hello" { hs = $2 } $5 != "hello" && $3 > e { e = $3 } $2 > $3 { bad = 1 } END { exit !(hs >= e && !bad) }' trace.txt \
    && ok=0
check "--trace writes each rule that ran, the link after the compiles" $ok
"$MK" --trace=trace2.txt > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 0 ] && [ -f trace2.txt ] && [ ! -s trace2.txt ] && ok=0
check "--trace=FILE of an up-to-date build is empty" $ok
printf 'all: bad | dir\nbad:\n\texit 3\ndir:\n\ttrue\n' > fail.dp
"$MK" -f fail.dp --trace trace3.txt > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 2 ] && grep -q "^rule${TAB}[0-9]*${TAB}[0-9]*${TAB}3${TAB}bad\$" trace3.txt && [ "$(wc -l < trace3.txt)" -eq 1 ] && ok=0
check "--trace records a failed rule's status" $ok
printf 'all: a | d\n\ttrue\na:\n\ttrue\nd:\n\ttrue\n' > oo.dp
"$MK" -f oo.dp --trace trace4.txt > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 0 ] && grep -q "^rule${TAB}[0-9]*${TAB}[0-9]*${TAB}0${TAB}all${TAB}a${TAB}|${TAB}d\$" trace4.txt && ok=0
check "--trace with order-only prerequisites" $ok
"$MK" --trace "$T/no/such/dir/t.txt" > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 2 ] && grep -q -- "--trace $T/no/such/dir/t.txt: No such file or directory" out.txt && ok=0
check "--trace to a path that cannot be opened stops" $ok
# 8. many short jobs at -j8 (the runners: one collects a child while
#    others start theirs; a child often exits before the runner that
#    started it has noted its pid): every line of every rule runs, a
#    missing program on a `-` line is reported and the rule goes on; then
#    a missing program without `-` fails its rule, the jobs that run are
#    waited for, and nothing after the failure starts
awk 'BEGIN { printf "all:"; for (i = 0; i < 200; i++) printf " j%d", i; print "";
             for (i = 0; i < 200; i++) printf "j%d:\n\t@true\n\t@touch $@\n", i;
             print "j7:\n\t-@no-such-program-here\n\t@touch $@" }' > many.dp
"$MK" -j8 -f many.dp > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 0 ] && [ "$(ls j[0-9]* | wc -l)" -eq 200 ] &&
    [ "$(grep -c 'no-such-program-here: No such file or directory' out.txt)" -eq 1 ] &&
    grep -q '^make: \[many.dp:[0-9]*: j7\] Error 127 (ignored)$' out.txt && ok=0
check "-j8: 200 rules of two lines, a missing program on a - line" $ok
rm -f j[0-9]*
printf 'all: a b c\na:\n\t@sleep 0.3\n\t@touch a\nb:\n\t@no-such-program-here\nc: b\n\t@touch c\n' > fail.dp
"$MK" -j4 -f fail.dp > out.txt 2>&1; rc=$?
ok=1
[ $rc -eq 2 ] && [ -f a ] && [ ! -f c ] && grep -q 'no-such-program-here: No such file or directory' out.txt &&
    grep -q "^make: \*\*\* \[fail.dp:6: b\] Error 127$" out.txt &&
    grep -q '^make: \*\*\* Waiting for unfinished jobs....$' out.txt && ok=0
check "-j4: a missing program fails its rule, the running job is waited for" $ok
rm -f a c
# make as pid 1 (of a pid namespace, as in a container) is also the parent
# of a recipe's background process once the recipe's shell exits: the
# runner that waits collects it while another runner starts a child (slow
# here: a plain command looked up along a PATH of 32768 missing
# directories, while `long` keeps a child to wait for). A pid that is not
# a job's must not be taken for a job's child that gets the same pid later:
# victim's first line makes the background process's pid the next one,
# and its second line must run its full half second
if unshare -Urpm --fork --mount-proc true > /dev/null 2>&1; then
    { printf 'LONG := $(shell i=0; p=/x; while [ $$i -lt 15 ]; do p=$$p:$$p; i=$$((i+1)); done; echo $$p)\n'
      printf 'export PATH := $(LONG):$(PATH)\nall: victim\nlong:\n\t@sleep 2\n'
      printf 'bg:\n\t@sleep 0.3 & echo $$! > bg.pid\nslow:\n'
      i=0; while [ $i -lt 20 ]; do printf '\t@true\n'; i=$((i + 1)); done
      printf 'victim: bg slow long\n\t@echo $$(( $$(cat bg.pid) - 1 )) > /proc/sys/kernel/ns_last_pid\n'
      printf '\t@sleep 0.5; touch slept\n\ttest -f slept\n'; } > pid1.dp
    unshare -Urpm --fork --mount-proc sh -c "exec \"$MK\" -j3 -f pid1.dp" > out.txt 2>&1; rc=$?
    ok=1
    [ $rc -eq 0 ] && [ -f slept ] && ok=0
    check "-j3 as pid 1: a background process's pid is not a later job child's" $ok
    rm -f slept bg.pid
else
    echo "SKIP: make as pid 1 (unshare -Urpm cannot make a user and pid namespace here)"
fi

# 9. an up-to-date run stats each file once (a file without a rule: by the
#    plan, which keeps its time for the rules that need it) and, with -r,
#    reads no directory listing: nothing asks about files not named; and
#    starts no thread (the runners come with the first command; under
#    ThreadSanitizer, which starts one of its own, that is not checked)
#    (LeakSanitizer cannot run under strace's ptrace: off for these runs)
if command -v strace > /dev/null 2>&1 && strace -o /dev/null true > /dev/null 2>&1; then
    mkdir noop && cd noop || exit 2
    awk 'BEGIN { printf "all:"; for (i = 0; i < 200; i++) printf " t%d", i; print "";
                 for (i = 0; i < 200; i++) printf "t%d: s%d\n\t@touch $@\n", i, i }' > Makefile
    i=0; while [ $i -lt 200 ]; do : > s$i; i=$((i + 1)); done
    sleep 0.01
    i=0; while [ $i -lt 200 ]; do : > t$i; i=$((i + 1)); done
    cd .. || exit 2
    for flags in "-r" ""; do
        (cd noop && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -o ../strace.txt -e trace=getdents64,getdents,stat,lstat,newfstatat,fstatat64,statx,clone,clone3 "$MK" $flags -j4) > out.txt 2>&1; rc=$?
        ok=1
        twice=$(grep -oE '"(s|t)[0-9]+"' strace.txt | sort | uniq -d | head -n 3 | tr '\n' ' ')
        listed=$(grep -c getdents strace.txt)
        threads=$(grep -c CLONE_THREAD strace.txt)
        case $MK in *tsan*) threads=0 ;; esac
        [ $rc -eq 0 ] && grep -q "Nothing to be done for 'all'" out.txt && [ -z "$twice" ] && [ "$threads" -eq 0 ] &&
            { [ -n "$flags" ] && [ "$listed" -eq 0 ] || [ -z "$flags" ]; } && ok=0
        [ $ok -eq 0 ] || echo "stat'ed twice: $twice; directory reads: $listed; threads started: $threads" >> out.txt
        check "no-op ${flags:-with built-in rules}: each file stat'ed once${flags:+, no directory listing}, no thread started" $ok
    done
else
    echo "SKIP: no-op syscall checks (strace not installed, or not allowed to trace)"
fi

# 10. a larger no-op (1,200 targets, 2,401 files): a second thread reads the
#     files' times from the last node while the rules take them from the
#     first; each file is stat'ed once (twice at most where the two meet),
#     the one thread started is that one, and -r still reads no listing
if command -v strace > /dev/null 2>&1 && strace -o /dev/null true > /dev/null 2>&1 && [ "$(nproc 2>/dev/null || echo 1)" -gt 1 ]; then
    mkdir big && cd big || exit 2
    awk 'BEGIN { printf "all:"; for (i = 0; i < 1200; i++) printf " t%d", i; print "";
                 for (i = 0; i < 1200; i++) printf "t%d: s%d\n\t@touch $@\n", i, i }' > Makefile
    i=0; while [ $i -lt 1200 ]; do : > s$i; i=$((i + 1)); done
    sleep 0.01
    i=0; while [ $i -lt 1200 ]; do : > t$i; i=$((i + 1)); done
    cd .. || exit 2
    for flags in "-r" ""; do
        (cd big && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -o ../strace.txt -e trace=getdents64,getdents,stat,lstat,newfstatat,fstatat64,statx,clone,clone3 "$MK" $flags -j4) > out.txt 2>&1; rc=$?
        ok=1
        names=$(grep -oE '"(s|t)[0-9]+"' strace.txt | sort -u | wc -l)
        twice=$(grep -oE '"(s|t)[0-9]+"' strace.txt | sort | uniq -d | wc -l)
        thrice=$(grep -oE '"(s|t)[0-9]+"' strace.txt | sort | uniq -c | awk '$1 > 2' | wc -l)
        listed=$(grep -c getdents strace.txt)
        threads=$(grep -c CLONE_THREAD strace.txt)
        case $MK in *tsan*) threads=1 ;; esac
        [ $rc -eq 0 ] && grep -q "Nothing to be done for 'all'" out.txt && [ "$names" -eq 2400 ] && [ "$twice" -le 4 ] &&
            [ "$thrice" -eq 0 ] && [ "$threads" -eq 1 ] && { [ -n "$flags" ] && [ "$listed" -eq 0 ] || [ -z "$flags" ]; } && ok=0
        [ $ok -eq 0 ] || echo "files stat'ed: $names; twice: $twice; more: $thrice; directory reads: $listed; threads started: $threads" >> out.txt
        check "no-op over 2,400 files ${flags:-with built-in rules}: each stat'ed once, by two threads${flags:+, no directory listing}" $ok
    done
else
    echo "SKIP: larger no-op syscall checks (strace not installed or not allowed to trace, or one core)"
fi

# 11. a file the rules need before the other thread reaches it (hdr: the
#     second node, prerequisite of 1,200 targets; the other thread has 20,000
#     names not in the build to read first) is stat'ed once too: the first
#     rule's answer is kept for the others
if command -v strace > /dev/null 2>&1 && strace -o /dev/null true > /dev/null 2>&1 && [ "$(nproc 2>/dev/null || echo 1)" -gt 1 ]; then
    mkdir shared && cd shared || exit 2
    awk 'BEGIN { printf "all:"; for (i = 0; i < 1200; i++) printf " t%d", i; print "";
                 print "hdr: hdr.in\n\t@touch $@";
                 for (i = 0; i < 1200; i++) printf "t%d: s%d hdr\n\t@touch $@\n", i, i;
                 printf "unused:"; for (i = 0; i < 20000; i++) printf " u%d", i; print "" }' > Makefile
    : > hdr.in
    i=0; while [ $i -lt 1200 ]; do : > s$i; i=$((i + 1)); done
    sleep 0.01
    : > hdr
    i=0; while [ $i -lt 1200 ]; do : > t$i; i=$((i + 1)); done
    cd .. || exit 2
    (cd shared && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -o ../strace.txt -e trace=stat,lstat,newfstatat,fstatat64,statx "$MK" -r -j4) > out.txt 2>&1; rc=$?
    ok=1
    hdr=$(grep -c '"hdr"' strace.txt)
    [ $rc -eq 0 ] && grep -q "Nothing to be done for 'all'" out.txt && [ "$hdr" -le 2 ] && ok=0
    [ $ok -eq 0 ] || echo "hdr stat'ed $hdr times" >> out.txt
    check "a target's file that 1,200 rules need is stat'ed once (the rules keep their own answers too)" $ok
else
    echo "SKIP: shared prerequisite syscall check (strace not installed or not allowed to trace, or one core)"
fi

# 12. the times read ahead are not used once a command has run: a's recipe
#     rewrites a, so b (older than the new a) is remade, among 1,200 files
#     read ahead (a stale time for a would leave b alone)
mkdir stale && cd stale || exit 2
awk 'BEGIN { printf "all: b"; for (i = 0; i < 600; i++) printf " t%d", i; print "";
             for (i = 0; i < 600; i++) printf "t%d: s%d\n\t@touch $@\n", i, i;
             print "b: a\n\t@echo remade-b\n\t@touch b"; print "a: force\n\t@touch a"; print "force:\n.PHONY: force" }' > Makefile
i=0; while [ $i -lt 600 ]; do : > s$i; i=$((i + 1)); done
: > a
sleep 0.01
i=0; while [ $i -lt 600 ]; do : > t$i; i=$((i + 1)); done
: > b
for j in 1 2 3; do
    sleep 0.01
    "$MK" -j4 > ../out.txt 2>&1; rc=$?
    ok=1
    [ $rc -eq 0 ] && [ "$(grep -c '^remade-b$' ../out.txt)" -eq 1 ] && ok=0
    [ $ok -eq 0 ] || break
done
cd .. || exit 2
check "a target remade by its recipe is seen newer (times read ahead not used after a command)" $ok
# 13. the same when the file is written by a $(shell) in a recipe that
#     expands to no command at all (GNU make remakes b too)
cd stale && sed -i 's/^\t@touch a$/\t$(shell touch a)/' Makefile || exit 2
for j in 1 2 3; do
    sleep 0.01
    "$MK" -j4 > ../out.txt 2>&1; rc=$?
    ok=1
    [ $rc -eq 0 ] && [ "$(grep -c '^remade-b$' ../out.txt)" -eq 1 ] && ok=0
    [ $ok -eq 0 ] || break
done
cd .. || exit 2
check "a file written by \$(shell) is seen newer (times read ahead not used after it)" $ok

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails != 0))
