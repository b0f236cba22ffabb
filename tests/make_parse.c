/* examples/make.c's parser on its own, as a fuzz harness reaches it:
   compiled with -DMAKE_NO_MAIN, fed buffers, never exits on bad input.
   Prints "make_parse: N passed, M failed". */
#include "examples/make.c"

static int passed, failed;

/* Parses text; want NULL: must succeed, else must fail with exactly want. */
static void expect(const char *name, const char *text, const char *want) {
    mk_make *m = mk_new();
    int rc;
    m->refuse_includes = 1;
    rc = mk_parse_buffer(m, "buf.mk", text, strlen(text));
    if (want ? (rc == -1 && strcmp(mk_error(m), want) == 0) : rc == 0) { printf("PASS %s\n", name); passed++; }
    else { printf("FAIL %s: got %d '%s'\n", name, rc, mk_error(m)); failed++; }
    mk_free(m);
}

int main(void) {
    enum { DEEP = 100000 };
    char *deep;
    int i;
    expect("a rule with a variable", "A := 1\nall: $(A)\n\techo $@\n", NULL);
    expect("missing separator: file:line", "all:\n\techo\nnot a rule\n", "buf.mk:3: *** missing separator.  Stop.");
    expect("include refused when switched off", "include other.mk\n", "buf.mk:1: *** include is switched off (refuse_includes).  Stop.");
    expect("unterminated reference", "X := $(A\n", "buf.mk:1: *** unterminated variable reference.  Stop.");
    expect("a variable name with spaces names it", "A = a b\n$(A) = 1\n",
           "buf.mk:2: *** variable name 'a b' contains spaces (a directive this make does not support?).  Stop.");
    expect("$(shell) refused where commands may not run", "X := $(shell echo hi)\n",
           "buf.mk:1: *** function 'shell' is not available here (commands may not run).  Stop.");
    expect("!= refused where commands may not run", "X != echo hi\n",
           "buf.mk:1: *** '!=' (shell assignment) is not available here (commands may not run).  Stop.");
    expect(".SECONDEXPANSION is refused with file:line", "all:\n.SECONDEXPANSION:\n",
           "buf.mk:2: *** special target '.SECONDEXPANSION' is not supported by this make.  Stop.");
    expect("an unterminated define names its line", "A = 1\ndefine X\nfoo\n",
           "buf.mk:2: *** missing 'endef', unterminated 'define'.  Stop.");
    expect("$(eval) that evaluates itself is bounded", "E = $$(eval $$(E))\n$(eval $(E))\n",
           "buf.mk:2: *** $(eval) nested more than 64 deep.  Stop.");
    expect("static pattern, target-specific variable, ::, suffix rule, vpath",
           "a.o b.o: %.o: %.c\n\tcc -c $<\nall: CFLAGS += -g\nx::\n\techo\n.c.o:\n\tcc\nvpath %.c src\ndefine T\n$(1):\nendef\n$(eval $(call T,t))\n", NULL);
    expect(": and :: for one target", "x:\nx::\n", "buf.mk:2: *** target file 'x' has both : and :: entries.  Stop.");
    /* Y := $($($(...a...))) nested DEEP times: refused, not a stack overflow */
    deep = malloc(3 * DEEP + 32);
    if (!deep) return 2;
    strcpy(deep, "Y := ");
    for (i = 0; i < DEEP; i++) memcpy(deep + 5 + 2 * i, "$(", 2);
    deep[5 + 2 * DEEP] = 'a';
    memset(deep + 6 + 2 * DEEP, ')', DEEP);
    strcpy(deep + 6 + 3 * DEEP, "\n");
    expect("100,000 nested references are refused", deep, "buf.mk:1: *** references nested more than 1000 deep.  Stop.");
    free(deep);
    printf("make_parse: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
