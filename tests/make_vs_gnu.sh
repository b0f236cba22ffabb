#!/usr/bin/env bash
# examples/make.c against GNU make (Debian's `make`) on generated C projects.
# Usage: tests/make_vs_gnu.sh [build/make_example]
# Every scenario runs the same Makefile in two copies of a project, one with
# each make, and compares exit status, the files produced, the program's
# output and the set of targets rebuilt (each recipe logs its target), at -j1
# and -j4. Then error cases, a 100,000-rule chain, a 100,000-rule parse and
# a line longer than 4,095 characters. Prints PASS/FAIL per check and
# "make_vs_gnu: N passed, M failed".
set -u
# run from inside a make (make test): the two makes must not see its flags
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES GNUMAKEFLAGS
[ $# -le 1 ] || { echo "usage: $0 [path/to/make_example]" >&2; exit 2; }
if [ $# -eq 0 ]; then DP=$(cd "$(dirname "$0")/.." && pwd)/build/make_example
else case $1 in /*) DP=$1 ;; *) DP=$(pwd)/$1 ;; esac; fi
[ -x "$DP" ] || { echo "$DP: not executable" >&2; exit 2; }
GNU=$(command -v make) || { echo "SKIP: GNU make not installed"; echo "make_vs_gnu: 0 passed, 0 failed, 1 skipped"; exit 0; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { echo "PASS: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; shift; for f in "$@"; do [ -f "$f" ] && sed 's/^/    /' "$f" | head -40; done; fail=$((fail + 1)); }

NSRC=24
# ---- the project: sources, headers, a generated header, an archive --------
gen_project() {   # gen_project DIR
    local d=$1 i
    mkdir -p "$d/src" "$d/include" "$d/mk"
    cat > "$d/include/common.h" <<'EOF'
#ifndef COMMON_H
#define COMMON_H
#include "gen.h"
#define SCALE 3
EOF
    for i in $(seq -w 0 $((NSRC - 1))); do
        echo "int f$i(int x);" >> "$d/include/common.h"
        cat > "$d/src/f$i.c" <<EOF
#include "common.h"
#if defined(BREAK) && BREAK == 1$i
#error this file is broken on purpose
#endif
int f$i(int x) { return x * SCALE + $((10#$i)) + GEN_OFFSET; }
EOF
    done
    echo "#endif" >> "$d/include/common.h"
    {
        echo '#include <stdio.h>'
        echo '#include "common.h"'
        echo 'int main(void) {'
        echo '    long s = 0;'
        for i in $(seq -w 0 $((NSRC - 1))); do echo "    s += f$i($((10#$i)));"; done
        echo '    printf("sum %ld version %s\n", s, GEN_VERSION);'
        echo '    return 0;'
        echo '}'
    } > "$d/main.c"
    cat > "$d/mk/config.mk" <<'EOF'
# included configuration
CFLAGS ?= -O0
CFLAGS += -Wall
VERSION = 1.2
EOF
    # The Makefile uses: .PHONY first, := = ?= +=, $(wildcard) $(patsubst)
    # and $(VAR:a=b), a continuation line, include, ifeq, a pattern rule with
    # $< $@ $*, order-only directories, a generated header, an archive
    # (ar, $?), several targets per rule, $$, @ and - prefixes.
    cat > "$d/Makefile" <<'EOF'
.PHONY: all clean check
# the build of a small C project
CC       := cc
CPPFLAGS  = -Iinclude -I$(OBJDIR)
OBJDIR   := obj
SRCS     := $(sort $(wildcard src/*.c))
OBJS     := $(patsubst src/%.c,$(OBJDIR)/%.o,$(SRCS))
NAMES     = $(notdir $(SRCS:.c=))
LOG       = log.txt
include mk/config.mk
ifeq ($(BREAK),)
MODE = normal
else
MODE = broken
CPPFLAGS += -DBREAK=$(BREAK)
endif

all: prog check

prog: main.o $(OBJDIR)/libf.a
	@echo $@ >> $(LOG)
	$(CC) -o $@ main.o \
	    $(OBJDIR)/libf.a

main.o: main.c include/common.h $(OBJDIR)/gen.h
	@echo $@ >> $(LOG)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(OBJDIR)/%.o: src/%.c include/common.h $(OBJDIR)/gen.h | $(OBJDIR)
	@echo $@ >> $(LOG)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@ && echo "built $*" > $(OBJDIR)/$(*F).stamp

$(OBJDIR)/libf.a: $(OBJS)
	@echo $@ >> $(LOG)
	-@rm -f $@.tmp
	ar rcs $@ $^

$(OBJDIR)/gen.h: mk/config.mk | $(OBJDIR)
	@echo $@ >> $(LOG)
	printf '#define GEN_VERSION "%s"\n#define GEN_OFFSET %d\n' "$(VERSION)" 7 > $@

$(OBJDIR):
	mkdir -p $@

check: prog
	@echo $@ >> $(LOG)
	@./prog > out.txt; echo "mode $(MODE) names $(words $(NAMES)) home $${HOME:+set}" >> out.txt

stamp-a stamp-b: main.c
	@echo $@ >> $(LOG)
	@touch $@

clean:
	rm -f prog main.o out.txt stamp-a stamp-b $(LOG)
	rm -rf $(OBJDIR)
EOF
}

# n_out: a -n listing, as printed at -j1, sorted at -jN (order free there)
n_out() { if [ "$J" = 1 ]; then cp "$T/gnu.out" "$T/gnu.n"; cp "$T/dp.out" "$T/dp.n"; else sort "$T/gnu.out" > "$T/gnu.n"; sort "$T/dp.out" > "$T/dp.n"; fi; }
# Runs both makes in $T/gnu and $T/dp with the same arguments; their output,
# exit status, log of rebuilt targets and file list go to $T/{gnu,dp}.*
run_both() {
    local who dir mk
    for who in gnu dp; do
        dir=$T/$who; [ $who = gnu ] && mk=$GNU || mk=$DP
        rm -f "$dir/log.txt"
        ( cd "$dir" && "$mk" "$@" ) > "$T/$who.out" 2>&1
        echo $? > "$T/$who.rc"
        # -j1: the log in the order the targets were made (GNU make's depth-first
        # order); -jN: sorted, since the order of parallel jobs is free
        if [ -f "$dir/log.txt" ]; then if [ "$J" = 1 ]; then cp "$dir/log.txt" "$T/$who.log"; else sort "$dir/log.txt" > "$T/$who.log"; fi
        else : > "$T/$who.log"; fi
        ( cd "$dir" && find . -type f ! -name log.txt | sort ) > "$T/$who.files"
        if [ -f "$dir/out.txt" ]; then cp "$dir/out.txt" "$T/$who.prog"; else echo "(no out.txt)" > "$T/$who.prog"; fi
    done
}
same() {   # same NAME: compares rc, rebuilt set, files and program output
    local what=""
    cmp -s "$T/gnu.rc" "$T/dp.rc" || what="$what exit($(cat "$T/gnu.rc") vs $(cat "$T/dp.rc"))"
    cmp -s "$T/gnu.log" "$T/dp.log" || what="$what rebuilt"
    cmp -s "$T/gnu.files" "$T/dp.files" || what="$what files"
    cmp -s "$T/gnu.prog" "$T/dp.prog" || what="$what program-output"
    if [ -z "$what" ]; then ok "$1"; else
        diff "$T/gnu.log" "$T/dp.log" > "$T/diff.log"; diff "$T/gnu.files" "$T/dp.files" > "$T/diff.files"
        bad "$1:$what" "$T/dp.out" "$T/diff.log" "$T/diff.files"; fi
}
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
age_all() { find "$T/gnu" "$T/dp" -exec touch -h -d '2001-01-01 00:00:00' {} + ; }

for J in 1 4; do
    rm -rf "$T/gnu" "$T/dp"; gen_project "$T/gnu"; gen_project "$T/dp"
    run_both -j$J;                        same "-j$J fresh build"
    [ "$(cat "$T/dp.rc")" = 0 ] && grep -q "^sum [0-9]* version 1.2$" "$T/dp.prog" && grep -q "mode normal names $NSRC home set" "$T/dp.prog" \
        && ok "-j$J program runs" || bad "-j$J program runs" "$T/dp.out" "$T/dp.prog"
    run_both -j$J;                        same "-j$J second run"
    [ "$(cat "$T/dp.log")" = check ] && ok "-j$J nothing rebuilt when up to date (only the phony check)" || bad "-j$J nothing rebuilt when up to date" "$T/dp.log"
    run_both -j$J prog
    grep -q "^make: 'prog' is up to date.$" "$T/dp.out" && cmp -s "$T/gnu.out" "$T/dp.out" \
        && ok "-j$J 'prog' is up to date, as GNU make says" || bad "-j$J 'prog' is up to date" "$T/gnu.out" "$T/dp.out"
    age_all; touch "$T/gnu/include/common.h" "$T/dp/include/common.h"
    run_both -j$J -n; n_out
    cmp -s "$T/gnu.n" "$T/dp.n" && ok "-j$J -n after touching a header prints the same commands" || bad "-j$J -n after touching a header" "$T/gnu.n" "$T/dp.n"
    run_both -j$J;                        same "-j$J touch a header: same targets rebuilt"
    [ "$(wc -l < "$T/dp.log")" -eq $((NSRC + 4)) ] && ok "-j$J touch a header rebuilds every object" || bad "-j$J touch a header rebuilds every object" "$T/dp.log"
    age_all; touch "$T/gnu/src/f03.c" "$T/dp/src/f03.c"
    run_both -j$J;                        same "-j$J touch one source"
    if [ $J = 1 ]; then printf 'obj/f03.o\nobj/libf.a\nprog\ncheck\n' > "$T/want"; else printf 'obj/f03.o\nobj/libf.a\nprog\ncheck\n' | sort > "$T/want"; fi
    cmp -s "$T/want" "$T/dp.log" && ok "-j$J touch one source rebuilds object, archive, program" || bad "-j$J touch one source" "$T/dp.log"
    age_all; touch "$T/gnu/mk/config.mk" "$T/dp/mk/config.mk"
    run_both -j$J;                        same "-j$J touch the included config: generated header and all objects"
    run_both -j$J CFLAGS=-O1 -n; n_out
    cmp -s "$T/gnu.n" "$T/dp.n" && ok "-j$J command-line CFLAGS=-O1 overrides ?= and +=" || bad "-j$J CFLAGS override" "$T/gnu.n" "$T/dp.n"
    run_both -j$J stamp-b obj/f05.o stamp-a; same "-j$J several goals, several targets per rule"
    run_both -j$J clean;                  same "-j$J clean"
    run_both -j$J BREAK=107 -k;           same "-j$J failing rule with -k: everything else is built"
    # the failing command's line (GNU make 4.3 names the line before it at -j>1)
    ln=$(grep -n 'echo "built' "$T/dp/Makefile" | cut -d: -f1)
    grep -qxF "make: *** [Makefile:$ln: obj/f07.o] Error 1" "$T/dp.out" && grep -q "^make: Target 'all' not remade because of errors.$" "$T/dp.out" \
        && ok "-j$J failing rule with -k: GNU make's messages" || bad "-j$J failing rule with -k: messages" "$T/dp.out"
    run_both -j$J clean
    if [ $J = 1 ]; then run_both -j1 BREAK=107; same "-j1 failing rule stops at the first failure"
    else run_both -j$J BREAK=107; [ "$(cat "$T/dp.rc")" = 2 ] && [ ! -e "$T/dp/prog" ] && grep -q 'obj/f07.o\] Error 1$' "$T/dp.out" \
        && ok "-j$J failing rule stops with exit 2" || bad "-j$J failing rule stops with exit 2" "$T/dp.out"; fi
done

# ---- error cases: GNU make's message, exit status 2 -------------------------
E=$T/err; mkdir -p "$E"; cd "$E" || exit 2
errcase() {   # errcase NAME FILE EXPECTED-LINE [args]
    local name=$1 file=$2 want=$3; shift 3
    "$DP" -f "$file" "$@" > dp.out 2>&1; rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "$want" dp.out; then ok "$name"; else echo "exit $rc, wanted: $want" >> dp.out; bad "$name" dp.out; fi
}
printf 'all: a\n\n\techo a\nCFLAGS = 1\nbroken line here\n' > sep.mk
errcase "missing separator names file and line" sep.mk "sep.mk:5: *** missing separator.  Stop."
"$GNU" -f sep.mk > gnu.out 2>&1; "$DP" -f sep.mk > dp.out 2>&1
cmp -s gnu.out dp.out && ok "missing separator: same text as GNU make" || bad "missing separator: same text as GNU make" gnu.out dp.out
printf 'X := $(shell echo hi; echo there)\nall:\n\t@echo $(X)\n' > shell.mk
"$GNU" -f shell.mk > gnu.out 2>&1; "$DP" -f shell.mk > dp.out 2>&1
cmp -s gnu.out dp.out && ok "\$(shell): same as GNU make" || bad "\$(shell)" gnu.out dp.out
same_gnu() {   # same_gnu NAME FILE [args]: output and exit status as GNU make's
    local name=$1 file=$2; shift 2
    "$GNU" -f "$file" "$@" > gnu.out 2>&1; echo "exit $?" >> gnu.out
    "$DP" -f "$file" "$@" > dp.out 2>&1; echo "exit $?" >> dp.out
    cmp -s gnu.out dp.out && ok "$name: same as GNU make" || bad "$name" gnu.out dp.out
}
printf 'all: x\nx::\n\techo x\nx::\n\techo x2\n' > dcolon.mk
same_gnu "double-colon rules" dcolon.mk
printf 'all: s1.o\n.c.o:\n\t@echo cc -c $<\ns1.c:\n\t@echo make $@\n' > suffix.mk
same_gnu "suffix rule" suffix.mk
printf '.SECONDEXPANSION:\nall: $$$$(X)\n' > secx.mk
errcase ".SECONDEXPANSION is refused with file:line" secx.mk "secx.mk:1: *** special target '.SECONDEXPANSION' is not supported by this make.  Stop."
printf '.ONESHELL:\nall:\n\tcd /\n\tpwd\n' > oneshell.mk
errcase ".ONESHELL is refused with file:line" oneshell.mk "oneshell.mk:1: *** special target '.ONESHELL' is not supported by this make.  Stop."
printf 'define X\n@echo foo\n@echo bar\nendef\nall:\n\t$(X)\n' > define.mk
"$GNU" -f define.mk > gnu.out 2>&1; "$DP" -f define.mk > dp.out 2>&1
cmp -s gnu.out dp.out && ok "define: same as GNU make" || bad "define" gnu.out dp.out
printf '.PHONY: all\nobjs = x1.o x2.o\nall: $(objs)\n$(objs): %%.o: %%.c\n\t@echo $@ $< $*\n%%.c:\n\t@echo make $@\n' > static.mk
same_gnu "static pattern rule" static.mk
printf 'CFLAGS = -O2\nall: CFLAGS += -g\nall: x\nx:\n\t@echo $(CFLAGS)\n' > tsv.mk
same_gnu "target-specific variable, inherited by a prerequisite" tsv.mk
printf 'ifeq (a,a)\nall:\n\t@echo x\n' > noendif.mk
errcase "missing endif" noendif.mk "noendif.mk:4: *** missing 'endif'.  Stop."
printf 'X = $(X) more\nall:\n\t@echo $(X)\n' > recur.mk
errcase "recursive variable referencing itself" recur.mk "recur.mk:3: *** Recursive variable 'X' references itself (eventually).  Stop."
mkdir -p adir
errcase "a directory as Makefile" adir "make: *** adir: Is a directory.  Stop."
"$GNU" -f adir > gnu.out 2>&1; "$DP" -f adir > dp.out 2>&1
cmp -s gnu.out dp.out && ok "a directory as Makefile: same text as GNU make" || bad "a directory as Makefile: same text" gnu.out dp.out
printf 'all: a b\n\techo all\na:\n\tfalse\nb: a2\n\techo b\na2:\n\techo a2\n' > fail.mk
"$GNU" -f fail.mk > gnu.out 2>&1; g=$?; "$DP" -f fail.mk > dp.out 2>&1; d=$?
[ $g = $d ] && cmp -s gnu.out dp.out && ok "failing rule without -k: same output and exit status as GNU make" || bad "failing rule without -k" gnu.out dp.out
"$GNU" -k -f fail.mk > gnu.out 2>&1; g=$?; "$DP" -k -f fail.mk > dp.out 2>&1; d=$?
[ $g = $d ] && cmp -s gnu.out dp.out && ok "failing rule with -k: same output and exit status as GNU make" || bad "failing rule with -k" gnu.out dp.out
printf 'all: a b\na:\n\t@sleep 0.5; echo a1\n\t@echo a2\nb:\n\t@false\n' > running.mk
"$GNU" -j2 -f running.mk > gnu.out 2>&1; g=$?; "$DP" -j2 -f running.mk > dp.out 2>&1; d=$?
[ $g = $d ] && cmp -s gnu.out dp.out && ok "after a failure a running job finishes its recipe, as in GNU make" || bad "a running job finishes its recipe" gnu.out dp.out
printf '$(info hello)\n$(warning careful)\nall:\n\t@echo $(info inrecipe)x\n' > info.mk
"$GNU" -f info.mk > gnu.out 2> gnu.err; "$DP" -f info.mk > dp.out 2> dp.err
cmp -s gnu.out dp.out && cmp -s gnu.err dp.err && ok "\$(info) to stdout, \$(warning) with file:line to stderr" || bad "info and warning" gnu.out dp.out gnu.err dp.err
printf 'all:\n\tnosuchcmd_xyz a b\n' > notfound.mk
printf 'all:\n\t-nosuchcmd_xyz a b\n\techo after\n' > notfound2.mk
for f in notfound.mk notfound2.mk; do
    "$GNU" -f $f > gnu.out 2>&1; g=$?; "$DP" -f $f > dp.out 2>&1; d=$?
    [ $g = $d ] && cmp -s gnu.out dp.out && ok "a command that is not found, run without a shell ($f): same as GNU make" || bad "command not found ($f)" gnu.out dp.out
done
printf 'all: x\nx: nosuch.c\n\techo x\n' > norule.mk
"$GNU" -f norule.mk > gnu.out 2>&1; g=$?; "$DP" -f norule.mk > dp.out 2>&1; d=$?
[ $g = $d ] && cmp -s gnu.out dp.out && ok "no rule to make a prerequisite: same as GNU make" || bad "no rule to make a prerequisite" gnu.out dp.out

# ---- one feature each: GNU make's behaviour, not a look-alike ----------------
# probe NAME 'Makefile text' [args]: both makes in fresh directories (SETUP,
# if set, runs in each first; the environment is the caller's), compared by
# output (unsorted) and exit status; paths made the same.
P=$T/probe
probe() {
    local name=$1 text=$2 who mk; shift 2
    for who in gnu dp; do
        rm -rf "$P/$who"; mkdir -p "$P/$who"
        ( cd "$P/$who" && printf '%b' "$text" > Makefile && eval "${SETUP:-:}" )
        [ $who = gnu ] && mk=make || mk=$DP
        ( cd "$P/$who" && PATH=$(dirname "$GNU"):$PATH "$mk" "$@" ) > "$P/$who.out" 2>&1; echo "exit $?" >> "$P/$who.out"
        sed -i -e "s#$P/$who#DIR#g" -e "s#$DP#make#g" "$P/$who.out"
    done
    cmp -s "$P/gnu.out" "$P/dp.out" && ok "$name: same as GNU make" || bad "$name" "$P/gnu.out" "$P/dp.out"
}
C='echo "int main(void){return 0;}" > prog.c'
SUB='mkdir sub; printf "all:\n\t@echo sub \$(V) \$(MAKEFLAGS) \$(MAKELEVEL)\n" > sub/Makefile'
probe "-j1: a rule ready late runs in GNU's depth-first order" 'all: a b\na: gen\n\t@echo a\ngen:\n\t@echo gen\nb:\n\t@echo b\n'
probe "-j1: a failure stops at GNU's place" 'all: a b c\na: gen\n\t@echo a\ngen:\n\t@echo gen\nb:\n\t@echo b; false\nc:\n\t@echo c\n'
probe "-j1 -k: order, the skipped target and the goal's note" 'all: a b c\na: gen\n\t@echo a\ngen:\n\t@echo gen\nb:\n\t@echo b; false\nc: b\n\t@echo c\nd:\n\techo d\n' -k all d
SETUP=$C probe "built-in rules: prog: prog.o compiles and links" 'prog: prog.o\n'
SETUP=$C probe "built-in rules: all: prog from prog.c" 'all: prog\n'
SETUP=$C probe "-r: no built-in rules" 'all: prog\n' -r
probe "default variables AS LD CPP LEX YACC COMPILE.c LINK.o OUTPUT_OPTION" 'all:\n\t@echo "$(AS) $(LD) $(CPP) $(LEX) $(YACC) [$(COMPILE.c)] [$(LINK.o)] $(OUTPUT_OPTION)"\n'
CC=clang probe "the environment overrides a default (CC=clang make)" 'all:\n\t@echo $(CC) $(origin CC)\n'
CC=clang probe "the Makefile overrides the environment" 'CC=gcc\nall:\n\t@echo $(CC) $(origin CC)\n'
CC=clang probe "-e: the environment overrides the Makefile" 'CC=gcc\nall:\n\t@echo $(CC) $(origin CC)\n' -e
probe "command line over Makefile, override over command line" 'CC=gcc\noverride CFLAGS=-O2\nall:\n\t@echo $(CC) $(origin CC) $(CFLAGS) $(origin CFLAGS)\n' CC=x CFLAGS=-O0
probe "SHELL := /bin/bash runs the recipes" 'SHELL := /bin/bash\nall:\n\t@echo $(SHELL) $$BASH_VERSION | cut -c1-12\n'
SHELL=/bin/zsh probe "SHELL from the environment is ignored" 'all:\n\t@echo $(SHELL)\n'
probe "CURDIR MAKEFILE_LIST MAKECMDGOALS MAKELEVEL MAKEFLAGS" 'all:\n\t@echo "[$(CURDIR)] [$(MAKEFILE_LIST)] [$(MAKECMDGOALS)] [$(MAKELEVEL)] [$(MAKEFLAGS)]"\n' -k -s all V=1
probe "ifneq (\$(MAKECMDGOALS),clean)" 'ifneq ($(MAKECMDGOALS),clean)\nX=yes\nendif\nall clean:\n\t@echo $@ $(X)\n' clean
probe "Nothing to be done for 'all'" 'all: x\nx: ;\n'
SETUP='touch x' probe "'x' is up to date" 'x:\n\ttouch x\n' x
SETUP=$SUB probe "sub-make: command-line variables, MAKEFLAGS, make[1]: messages" 'all:\n\t$(MAKE) -C sub\n' V=1
SETUP=$SUB probe "sub-make: -n runs \$(MAKE) lines" 'all:\n\t$(MAKE) -C sub\n\techo hi\n' -n V=1
SETUP=$SUB probe "sub-make: -s" 'all:\n\t$(MAKE) -s -C sub\n' -s
SETUP='mkdir sub; printf "all:\n\t@echo sub\n\tfalse\n" > sub/Makefile' probe "sub-make: a failure in make[1]" 'all:\n\t$(MAKE) -C sub\n'
probe "an included makefile with a rule is remade, then read" 'include gen.mk\nall:\n\t@echo X=$(X)\ngen.mk:\n\techo X=1 > gen.mk\n'
probe "a missing -include without a rule is ignored" '-include gen.mk\nall:\n\t@echo X=$(X)\n'
probe "a missing include without a rule is an error" 'include gen.mk\nall:\n\t@echo X=$(X)\n'
SETUP='touch a.x b.x' probe "static pattern rule" 'OBJS = a.o b.o\nall: $(OBJS)\n$(OBJS): %.o: %.x\n\t@echo $@ from $< stem $*\n'
SETUP='touch a.c' probe "suffix rule .c.o" '.c.o:\n\t@echo suffix $< $@\nall: a.o\n'
SETUP='touch a.c' probe "suffix rule under -r (no suffixes)" '.c.o:\n\t@echo suffix $< $@\nall: a.o\n' -r
probe "target- and pattern-specific variables" 'all: a b\na b:\n\t@echo $@ $(V)\nb: V=bee\nall: V=top\n%.x: V+=pat\nc.x:\n\t@echo $(V)\n' all c.x
probe "target-specific += inherited by a prerequisite" 'CFLAGS = -O2\ndebug: CFLAGS += -g\ndebug: prog\nprog:\n\t@echo cc $(CFLAGS) -o $@\n' debug
probe "the command line over a target-specific variable" 'CFLAGS = -O2\ndebug: CFLAGS += -g\ndebug: prog\nprog:\n\t@echo cc $(CFLAGS) -o $@\n' debug CFLAGS=-Os
probe ":: rules without prerequisites" 'all:: ; @echo one\nall:: ; @echo two\n'
SETUP='touch a b; touch -d 2001-01-01 t' probe ":: rules with prerequisites" 't:: a\n\t@echo from a\nt:: b\n\t@echo from b\n'
probe ".SILENT" '.SILENT:\nall:\n\techo hi\n'
probe ".POSIX: the shell stops at the first error" '.POSIX:\nall:\n\tfalse; echo after\n'
probe ".NOTPARALLEL" '.NOTPARALLEL:\nall: a b\na b:\n\t@echo $@\n' -j4
probe ".DELETE_ON_ERROR" '.DELETE_ON_ERROR:\nx:\n\techo hi > x; false\n'
SETUP='touch a.c' probe "a recipe-less pattern rule cancels the built-in one" '%.o: %.c\nall: a.o\n'
SETUP='mkdir src; touch src/a.c' probe "vpath" 'vpath %.c src\nall: a.o\n%.o: %.c\n\t@echo $< $@\n'
SETUP='mkdir src; touch src/a.c' probe "VPATH with a built-in rule" 'VPATH = src\nall: a.o\n'
probe ".DEFAULT" '.DEFAULT:\n\t@echo default $@\nall: foo\n'
probe "functions word wordlist lastword findstring join if or and foreach call origin flavor value abspath realpath" 'X = a b c d\n$(info $(word 2,$(X)) $(wordlist 2,3,$(X)) $(lastword $(X)) $(firstword $(X)) $(findstring b c,$(X)) $(join a b,1 2 3))\n$(info $(if $(X),yes,no) $(if ,yes,no) $(or ,,x,y) $(and a,b,c) $(and a,,c))\n$(info $(foreach w,$(X),[$(w)]) $(call F,1,2))\nF = $(2)-$(1)\n$(info $(call F,1,2) $(origin X) $(origin CC) $(origin nope) $(flavor X) $(value F))\n$(info $(abspath ./a/../b) $(realpath /tmp/..))\nall: ;@:\n'
probe "define, call and eval make rules" 'define R\n$(1):\n\t@echo rule $(1)\nendef\n$(foreach t,x y,$(eval $(call R,$(t))))\nall: x y\n' all
probe "!=" 'X != echo a; echo b\nall:\n\t@echo "$(X)"\n'
probe "export, unexport" 'export FOO = bar\nBAZ = no\nexport BAZ\nunexport HOME\nall:\n\t@echo $$FOO $$BAZ $${HOME:-nohome}\n'
probe "an environment variable set in the Makefile reaches the commands" 'HOME = changed\nall:\n\t@echo $$HOME\n'
probe "a define's lines are commands of their own" 'define X\necho a\necho b\nendef\ndefine Y\n@echo c\necho d\nendef\nall:\n\t@$(X)\n\t$(Y)\n\t-$(Y)\n'
probe "-q -B -i -s" 'all: x\nx:\n\t@false\n\techo made\n' -i -s -B
SETUP='touch x' probe "-q: up to date" 'x:\n\ttouch x\n' -q x
probe "-q: out of date" 'x:\n\ttouch x\n' -q x
probe "--no-print-directory -C -k" 'all:\n\t@echo $(MAKEFLAGS)\n' --no-print-directory -C . -k
probe "-s hides an ignored error" 'all:\n\t-@false\n\t@echo x\n' -s
SETUP='mkdir bin; printf "#!/bin/sh\necho found \$0\n" > bin/tool; chmod +x bin/tool' \
    probe "a command's program is looked up on the exported PATH" 'export PATH := $(CURDIR)/bin:$(PATH)\nall:\n\t@tool\n'
SETUP='printf "echo ran without a shebang\n" > s; chmod +x s' probe "a script without #! runs with /bin/sh" 'all:\n\t./s a\n'
SETUP='mkdir d; echo x > noexec' probe "programs that cannot run: missing, not executable, a directory" \
    'all:\n\t-./nothere\n\t-./noexec\n\t-./d\n\t-nosuchprog\n\t@echo end\n'
unset SETUP

# ---- size: a 100,000-rule chain, a 100,000-rule parse, a long line ----------
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "t%d: t%d\n", i, i + 1; print "t100000:\n\t@echo chain-end" }' > chain.mk
s=$(date +%s.%N); "$DP" -f chain.mk > dp.out 2>&1; rc=$?; e=$(date +%s.%N)
[ $rc -eq 0 ] && grep -q '^chain-end$' dp.out && ok "100,000-rule chain builds ($(elapsed "$s" "$e") s)" || bad "100,000-rule chain" dp.out
awk 'BEGIN { print "all: r0"; for (i = 0; i < 100000; i++) printf "r%d: d%d\n\t@echo r%d\nd%d:\n", i, i, i, i }' > wide.mk
s=$(date +%s.%N); "$DP" -f wide.mk -n r99999 > dp.out 2>&1; rc=$?; e=$(date +%s.%N)
secs=$(elapsed "$s" "$e")
[ $rc -eq 0 ] && grep -q '^echo r99999$' dp.out && awk -v t="$secs" 'BEGIN { exit !(t < 5) }' \
    && ok "100,000-rule parse in $secs s" || { echo "took $secs s" >> dp.out; bad "100,000-rule parse under 5 s" dp.out; }
words=$(awk 'BEGIN { for (i = 0; i < 1500; i++) printf " word%d", i }')
printf 'LONG := %s\nall: ; @echo $(words $(LONG)) $(lastw)%s\n' "$words" "$words" > long.mk
[ "$(wc -L < long.mk)" -gt 4095 ] || echo "long.mk has no long line"
"$GNU" -f long.mk > gnu.out 2>&1; g=$?; "$DP" -f long.mk > dp.out 2>&1; d=$?
[ $g = 0 ] && [ $d = 0 ] && cmp -s gnu.out dp.out && ok "lines longer than 4,095 characters ($(wc -L < long.mk))" || bad "long lines" gnu.out dp.out

printf 'all: a\na:\n\t+@echo plus\n\t@-false\n\t@echo "x\\\n\ty"\n\techo after\n' > prefix.mk
for args in "" "-n"; do
    "$GNU" -f prefix.mk $args > gnu.out 2>&1; g=$?; "$DP" -f prefix.mk $args > dp.out 2>&1; d=$?
    [ $g = $d ] && cmp -s gnu.out dp.out && ok "recipe prefixes @ - + and a continued recipe line ${args:-without -n}" || bad "recipe prefixes ${args:-without -n}" gnu.out dp.out
done

# ---- -j N bounds the running jobs: never more than N at once --------------------
printf 'all: t1 t2 t3 t4 t5 t6 t7 t8\nt1 t2 t3 t4 t5 t6 t7 t8:\n\t@echo + >> conc.log\n\t@sleep 0.2; echo - >> conc.log\n' > conc.mk
for J in 1 3; do
    rm -f conc.log; "$DP" -f conc.mk -j$J > dp.out 2>&1
    most=$(awk '/\+/ { n++; if (n > m) m = n } /-/ { n-- } END { print m + 0 }' conc.log)
    [ "$most" -eq $J ] && [ "$(grep -c + conc.log)" -eq 8 ] && ok "-j$J runs at most $J jobs at once (saw $most)" || { echo "at most $most at once" >> dp.out; bad "-j$J bounds the running jobs" dp.out; }
done

echo "make_vs_gnu: $pass passed, $fail failed"
[ $fail -eq 0 ]
