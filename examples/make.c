/* make.c - a small `make` for the Makefiles people write for C projects,
   built on depeng's dependency engine.

   HOW THE ENGINE IS USED (the point of this example)
     Every file name in the build graph (target or prerequisite) is a dp_var.
     Every target that has a rule becomes ONE asynchronous engine operation that
     reads its prerequisites' vars and writes its own var. The operations are
     pushed in dependency order (an iterative post-order walk from the goals),
     so the engine alone decides what may run at the same time: two rules that
     share no file run in parallel, and a rule whose input failed is skipped,
     as is everything downstream of it. make.c itself keeps no ready list.

     The async function (rule_op) runs on the thread that waits for the goals
     (the engine gets no worker thread of its own: see build) and never
     blocks: it looks at the files' times to decide whether the target is out
     of date (at run time, since a prerequisite may just have been rebuilt;
     until the first command starts, from the times another thread read
     ahead: see stat_ahead), expands
     the recipe and hands it to the job table. The job table starts a command
     (/bin/sh -c, or the command itself when it has no shell syntax, as GNU
     make does; its program looked up on the exported PATH) only when one of
     the -j N job slots is free, with vfork and execve (posix_spawn where the
     C library is not glibc: see spawn_program). The runner threads, at most
     min(-j N, 8), start the children and collect them (one at a time waits
     in waitid for any child to exit); the one that collects a child starts the
     rule's next command line or the next queued job itself, and finally
     calls dp_complete with the rule's status; that is what releases the
     target's var and lets the engine start the rules that read it. So the
     number of threads is bounded (the main thread, the runners, and for a
     graph of 1,000 files or more the one that reads their times ahead),
     whatever the number of rules; the runners are started by the first
     command, so a run with nothing to do (every target up to date) is one
     thread, two for a large graph.

     The ops run in the order they become ready: pushed in plan order, and
     when one completion makes many rules ready at once, in plan order too.
     At -j1 the job table also follows GNU make's depth-first walk exactly: the job of the rule at plan position p starts
     only once every rule before it in the plan is over (made, failed, or
     skipped because a prerequisite failed), so the commands run in GNU
     make's order and a failure stops the build at the same place. At -j N
     the engine starts whatever is ready. Without -k the first failure stops
     new jobs (the running ones are waited for); with -k the engine's
     skipping of failed inputs is exactly GNU make's "keep going".

   WHAT IS SUPPORTED (GNU make 4.3's behaviour for this subset)
     - rules `t1 t2: p1 p2 | orderonly ; cmd`, recipe lines starting with a tab,
       several targets per rule (each target its own rule, same recipe),
       several rule lines for one target (prerequisites are merged; those of the
       rule with the recipe come first), `\` continuation lines, `#` comments,
       shell wildcards (* ? [) in target and prerequisite names; `::` rules
       (each runs when the target is older than its own prerequisites, or
       always if it has none); static pattern rules `objs: %.o: %.c`;
     - pattern rules `%.o: %.c` (and `obj/%.o: src/%.c`) with $*, chosen for a
       target that has no recipe when all their prerequisites exist (here or
       through vpath) or are mentioned in the Makefile (shortest stem wins,
       then file order); suffix rules `.c.o:` and `.c:` for the suffixes in
       .SUFFIXES; a pattern rule without a recipe cancels the rules with the
       same target and prerequisites;
     - GNU make 4.3's built-in rules for C, C++ (.cc .cpp .C), assembler
       (.s .S), lex and yacc: %.o from each, % (a program) from %.o and from
       each source, %.s from %.S, %.c from %.y and %.l, after the Makefile's
       own; and its default variables for them (CC CXX AS LD CPP LEX YACC AR
       ARFLAGS RM OUTPUT_OPTION COMPILE.* LINK.* PREPROCESS.S LEX.l YACC.y),
       origin "default"; -r drops the rules and the suffix list, -R the
       variables too;
     - variables: `=`, `:=` / `::=`, `?=`, `+=`, `!=` (shell), `define NAME
       [op] ... endef`, `undefine`, `override`, `export` / `unexport` (with or
       without an assignment, and alone: export everything), target-specific
       and pattern-specific variables `t: VAR op value` (inherited by the
       target's prerequisites, as in GNU make), `$(VAR)`, `${VAR}`, `$X`,
       computed names, substitution references `$(VAR:.c=.o)` and
       `$(VAR:%.c=obj/%.o)`. Precedence: default < environment < Makefile <
       command line, -e puts the environment above the Makefile, `override`
       above all. The environment's variables and the command line's go to
       the commands (with the Makefile's value, expanded once before the
       build), and so do exported ones;
     - special variables: SHELL (the Makefile's, default /bin/sh, never the
       environment's; it and .SHELLFLAGS run the recipes), MAKE,
       MAKE_VERSION, CURDIR, MAKEFILE_LIST, MAKECMDGOALS, MAKELEVEL,
       MAKEFLAGS and MFLAGS (GNU's form: flag letters, -jN, `-- VAR=value`),
       .DEFAULT_GOAL, VPATH, MAKE_RESTARTS;
     - automatic variables $@ $< $^ $+ $? $* $| and their D/F forms ($(@D)...);
       `$$` for a dollar sign; a newline in an expanded recipe line (a
       define) starts a command of its own, with its own @ - + prefixes;
     - functions: wildcard patsubst subst strip filter filter-out sort words
       word wordlist firstword lastword findstring join dir notdir suffix
       basename addprefix addsuffix abspath realpath if or and foreach call
       eval shell origin flavor value info warning error;
     - conditionals: ifeq/ifneq with (a,b) "a" "b" 'a' 'b', ifdef/ifndef, else
       (also `else ifeq ...`), endif;
     - special targets .PHONY .SUFFIXES .DEFAULT .PRECIOUS .SECONDARY
       .INTERMEDIATE .NOTINTERMEDIATE .SILENT .IGNORE .NOTPARALLEL (the whole
       make runs one job at a time) .DELETE_ON_ERROR .POSIX (the shell gets
       -e) .EXPORT_ALL_VARIABLES .LOW_RESOLUTION_TIME (intermediate files are
       never deleted, so .PRECIOUS/.SECONDARY/.INTERMEDIATE change nothing);
     - `include`, `-include` / `sinclude`, and GNU's remaking of makefiles: a
       file read, or a missing included one, that has a rule is made first
       (also under -n and -q); if one was remade, make starts again;
     - `vpath pattern dirs` and VPATH for files that are not here;
     - recipe prefixes `@` (silent), `-` (ignore errors), `+` (run even
       under -n); a line that mentions $(MAKE) or ${MAKE} runs under -n and
       -q too;
     - sub-makes: MAKEFLAGS and MAKELEVEL are passed on, a sub-make reads
       its flags and command-line variables from MAKEFLAGS and names itself
       make[N] in its messages, with "Entering directory" / "Leaving
       directory" (-w, --no-print-directory);
     - options -f FILE, -C DIR, -j [N], --jobs[=N], -k, -S, -n, -s, -B, -q, -r,
       -R, -i, -e, -w, --no-print-directory, --version, their GNU long names,
       and one of this make's own, --trace=FILE (also --trace FILE; not
       passed to sub-makes): one line per rule whose commands ran,
       `rule<TAB>start_us<TAB>end_us<TAB>status<TAB>target<TAB>prereq...`
       (microseconds since make started, the prerequisites as written,
       order-only ones after a `|`), from which examples/make_page.c draws
       the job slots as lanes over time;
       several goals, VAR=value; the default file is GNUmakefile, makefile,
       then Makefile; the default goal is the first target that does not
       start with `.` (unless it contains a `/`) and is not a pattern.
     Messages read like GNU make's (`Makefile:12: *** missing separator.
     Stop.`, "Nothing to be done for 'all'.", "'x' is up to date."), make
     stops at the first failing command (waiting for the running ones) unless
     -k, a circular dependency is dropped with GNU make's message, and the
     exit status is 2 on any failure (1 for -q when something is out of date).

   WHAT IS REFUSED (a clear file:line error, never a silent misreading)
     .SECONDEXPANSION, .ONESHELL and other special targets not listed above,
     pattern rules with several targets, `%` in a prerequisite of a normal
     rule, `private`, `load`, `!=` in a target-specific variable, and the
     functions file, guile, intcmp, let. Not implemented at all: the
     jobserver (a sub-make gets -jN of its own), chains of implicit rules
     through intermediate files (foo from foo.o from foo.c when foo.o is not
     mentioned), archive members `lib(member)`, -t/-o/-W/-p/-d, $(eval) in a
     recipe, exported target-specific variables, deleting the target being
     made when make is interrupted. Exported variables are expanded once,
     before the build, not per command.

   EMBEDDING THE PARSER (used by the fuzz harness)
     Compile with -DMAKE_NO_MAIN (main and the build half are left out) and
     #include "examples/make.c", then
        mk_make *m = mk_new();
        m->refuse_includes = 1;        // input may not open files
        int rc = mk_parse_buffer(m, "fuzz.mk", data, size);  // 0 or -1
        if (rc) puts(mk_error(m));     // "fuzz.mk:3: *** missing separator.  Stop."
        mk_free(m);
     data need not end in a NUL. mk_parse_file(m, path) reads a file instead.
     Parsing never exits and never runs a command ($(info) prints to stdout,
     $(warning) to stderr); only running out of memory exits.

   Build: gcc -std=c11 -Wall -Wextra -pedantic -I. examples/make.c -o build/make_example -pthread -lm
   Usage: make_example [options] [VAR=value ...] [goal ...]   (the options above)
   The file is a whole program: the one command above builds it, the
   implementation included. The repository's Makefile and CMake define
   DEPENG_EXAMPLE_SEPARATE_IMPL and link the implementation compiled once
   (tests/impl/depeng_impl.c) instead. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE               /* vfork, with glibc */
#define _XOPEN_SOURCE 700             /* realpath */
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ====================================================================== util */
/* "make", or "make[N]" in a sub-make (MAKELEVEL N > 0), as GNU make names itself in messages */
static char mk_prog[32] = "make";
static void out_of_memory(void) { fprintf(stderr, "%s: *** out of memory.  Stop.\n", mk_prog); exit(2); }
static void *xrealloc(void *p, size_t n) { p = realloc(p, n ? n : 1); if (!p) out_of_memory(); return p; }
static char *xstrndup(const char *s, size_t n) { char *d = xrealloc(NULL, n + 1); memcpy(d, s, n); d[n] = '\0'; return d; }
static char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }
#define GROW(arr, n, cap) do { if ((n) >= (cap)) { (cap) = (cap) ? 2 * (cap) : 8; \
    (arr) = xrealloc((arr), (size_t)(cap) * sizeof *(arr)); } } while (0)

/* A growing string; s is always NUL-terminated once anything was added. */
typedef struct strbuf { char *s; size_t len, cap; } strbuf;
static void sb_add(strbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap) b->cap = b->cap ? 2 * b->cap : 64;
        b->s = xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}
static void sb_puts(strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }
static void sb_putc(strbuf *b, char c) { sb_add(b, &c, 1); }
static char *sb_take(strbuf *b) { char *s; sb_add(b, "", 0); s = b->s; b->s = NULL; b->len = b->cap = 0; return s; }
static void sb_word(strbuf *b, const char *w, size_t n) {   /* space-separated */
    if (b->len) sb_putc(b, ' ');
    sb_add(b, w, n);
}

static int is_space(char c) { return c == ' ' || c == '\t'; }
/* The next whitespace-separated word of s at *pos: returns its start, sets *n. */
static const char *next_word(const char *s, size_t *pos, size_t *n) {
    size_t i = *pos, j;
    while (s[i] && (is_space(s[i]) || s[i] == '\n')) i++;
    if (!s[i]) { *pos = i; return NULL; }
    for (j = i; s[j] && !is_space(s[j]) && s[j] != '\n'; j++) {}
    *pos = j; *n = j - i;
    return s + i;
}
static char *trim(char *s) {
    size_t n;
    while (is_space(*s)) s++;
    n = strlen(s);
    while (n && is_space(s[n - 1])) s[--n] = '\0';
    return s;
}

/* String -> index hash map (open addressing, FNV-1a), for nodes and vars.
   A slot keeps its key's hash beside the key: a probe that meets another
   key is told apart without reading that key's string (a cache miss per
   probe on maps of 10,000s of names), growing never hashes again, and the
   map may fill to 3/4 (fewer pages to touch: each new page costs a fault). */
typedef struct strmap_slot { const char *key; unsigned hash; int val; } strmap_slot;
typedef struct strmap { strmap_slot *slots; size_t cap, n; } strmap;
static unsigned hash_str(const char *s, size_t n) {
    unsigned h = 2166136261u;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}
static int map_get_h(const strmap *m, const char *k, size_t n, unsigned h) {
    size_t i;
    if (!m->cap) return -1;
    for (i = h & (m->cap - 1); m->slots[i].key; i = (i + 1) & (m->cap - 1))
        if (m->slots[i].hash == h && strncmp(m->slots[i].key, k, n) == 0 && m->slots[i].key[n] == '\0') return m->slots[i].val;
    return -1;
}
static int map_get(const strmap *m, const char *k, size_t n) { return map_get_h(m, k, n, hash_str(k, n)); }
static void map_put_h(strmap *m, const char *k, unsigned h, int v) {   /* k: owned by caller, lives as long as the map */
    size_t i;
    if (4 * (m->n + 1) > 3 * m->cap) {
        strmap g;
        size_t c = m->cap ? 2 * m->cap : 64, j;
        g.cap = c; g.n = 0;
        g.slots = xrealloc(NULL, c * sizeof *g.slots);
        memset(g.slots, 0, c * sizeof *g.slots);
        for (j = 0; j < m->cap; j++) if (m->slots[j].key) map_put_h(&g, m->slots[j].key, m->slots[j].hash, m->slots[j].val);
        free(m->slots);
        *m = g;
    }
    for (i = h & (m->cap - 1); m->slots[i].key; i = (i + 1) & (m->cap - 1)) {}
    m->slots[i].key = k; m->slots[i].hash = h; m->slots[i].val = v; m->n++;
}
static void map_put(strmap *m, const char *k, int v) { map_put_h(m, k, hash_str(k, strlen(k)), v); }

/* ===================================================================== model */
typedef struct recipe {          /* command lines, unexpanded, with their place; all in the arena */
    char **lines; int *lineno; int n, cap;
    const char *file;
} recipe;

/* A target-specific (or pattern-specific) variable: `t: [override] NAME op value`. */
typedef struct tvar { char *pat; char *name, *value; char op; int ovr; } tvar;   /* op: = : + ? */

/* A node's rarer parts, apart: 20,000 nodes of a no-op are 450 pages (each
   a page fault) where they would be 600 with these inside. */
typedef struct node_x {
    char *stem;                  /* $* when a pattern rule supplied the recipe */
    char *fname;                 /* the file found through VPATH/vpath, NULL: name */
    tvar *tvars; int ntvars, tvarcap;   /* target-specific variables */
    int ndc;                     /* :: rules so far */
} node_x;
typedef struct node {            /* one file name */
    char *name;                  /* in the arena */
    /* prerequisites (node indices), in the arena: normal, order-only; the
       capacity follows from the count (see add_prereq) */
    int *pre, *oo; int npre, noo;
    recipe *rcp;                 /* NULL: no recipe (yet)                    */
    struct node_x *x;            /* what few nodes have, NULL: none of it (node_x) */
    int walk_parent;             /* the target that first needed this one (-1: a goal) */
    unsigned char tv_inherit;    /* it or a target above it has target-specific variables
                                    (inherited through at most 256 levels) */
    unsigned is_target : 1, mentioned : 1, phony : 1, implicit_done : 1, missing : 1, on_path : 1;
    unsigned silent : 1, ignore : 1, precious : 1;   /* .SILENT .IGNORE .PRECIOUS */
    unsigned dc_main : 1, dcolon : 1;   /* a :: target; one of its :: rules */
    int plan_idx;                /* position in the post-order plan          */
    int goal_mark;               /* for the up-to-date report                */
    /* small fields as bytes (not bit-fields: different threads write them),
       a node smaller by a fifth: 20,000 nodes are 750 pages, each a fault */
    unsigned char walk;          /* 0 new, 1 on the walk's stack, 2 done     */
    unsigned char gstate;        /* -j1 gate: 0 not over, 1 made, 2 failed or skipped */
    unsigned char is_goal;
    /* set by the thread that completes the node's op, read after it */
    unsigned char remade, ran;
    /* a file that the plan stat'ed (0: not): 1 it exists, with this mtime, 2 missing */
    unsigned char st_known;
    long long st_mtime_ns;
    dp_var var;
} node;

typedef struct pattern {         /* %.o: %.c */
    char *target;
    char **pre; int npre;
    char **oo; int noo;
    recipe *rcp;
    const char *file; int line;
    int builtin;                 /* one of GNU make's built-in rules */
    int suffix;                  /* from a suffix rule (.c.o:) */
    /* target's shape, worked out by the first implicit search that uses it
       (every file without a rule is tried against every pattern) */
    int shaped, slash;           /* slash: target has a '/' */
    size_t before, after;        /* the lengths around target's '%' */
    size_t pre_before, pre_len;  /* where pre[0]'s '%' is (pre_len: none), its length */
} pattern;

/* Where a variable's value came from, lowest precedence first (GNU make's
   $(origin) names): a Makefile assignment does not replace an env-override
   (-e), command-line or override value; `override` replaces all but itself. */
enum { O_DEFAULT, O_ENV, O_FILE, O_ENV_OVERRIDE, O_CMDLINE, O_OVERRIDE, O_AUTOMATIC };
static const char *const origin_names[] = { "default", "environment", "file", "environment override",
                                            "command line", "override", "automatic" };
typedef struct var {
    char *name, *value;
    int simple;                  /* value is already expanded (:=) */
    int undefined;               /* only named by export/unexport: $(origin) says undefined */
    int origin;                  /* O_* */
    int exported;                /* 1 export, 0 unexport, -1 GNU's default:
                                    exported if from the command line */
} var;

/* Where the graph's small pieces live (node names, prerequisite lists,
   recipes): big chunks, carved in order, freed only all at once (mk_free;
   make itself leaves them to the exit). One malloc per name or list cost
   a 32-byte block and a header each, a quarter of a 10,000-rule no-op's
   page faults. */
typedef struct arena_chunk { struct arena_chunk *next; } arena_chunk;
typedef struct mk_make {
    arena_chunk *arena; size_t ar_used, ar_cap;   /* the newest chunk, its bytes used, its size */
    node *nodes; int nnodes, nodecap; strmap node_map;
    var *vars; int nvars, varcap; strmap var_map;
    pattern *pats; int npats, patcap;
    char **files; int nfiles, filecap;      /* names of the files read, for locations */
    int default_goal;
    int include_depth;
    int eval_depth;              /* $(eval) inside $(eval): bounded, as include is */
    int export_all;              /* `export` alone: every variable goes to the commands */
    int silent_all, ignore_all, notparallel, delete_on_error, posix;   /* special targets */
    char **suffixes; int nsuffixes, suffixcap;   /* .SUFFIXES, GNU's list to start with */
    struct tvar *pvars; int npvars, pvarcap;     /* pattern-specific variables (%.o: X = y) */
    char **cancels; int ncancels, cancelcap;     /* "%.o %.c": rules cancelled by a recipe-less pattern rule */
    struct vpath { char *pat, *dirs; } *vpaths; int nvpaths, vpathcap;   /* vpath directives */
    /* runs a command for $(shell) and !=, returns its output (newlines made
       spaces, the last one dropped), malloc'ed; NULL: commands may not run
       (the parse-only build, a fuzz harness) and both are refused */
    char *(*shell_fn)(struct mk_make *m, const char *cmd);
    /* set by main: a missing included file is not an error while parsing,
       since a rule may make it (GNU make remakes makefiles, then reads
       them again); each is listed here with the error it would give */
    int defer_missing;
    struct missing_inc { char *name, *msg; int optional; } *minc; int nminc, minccap;
    int refuse_includes;         /* set by a fuzz harness: input may not make the
                                    parser open files (/dev/stdin would block) */
    strbuf err;                  /* "file:line: *** message.  Stop." */
} mk_make;

#define AR_CHUNK ((size_t)64 * 1024 - 64)     /* below malloc's mmap threshold: from the heap */
static void *ar_alloc(mk_make *m, size_t n) {   /* 8-byte aligned, never NULL */
    size_t at = (m->ar_used + 7) & ~(size_t)7;
    if (!m->arena || at + n > m->ar_cap) {
        size_t hd = (sizeof(arena_chunk) + 7) & ~(size_t)7, cap = n > AR_CHUNK - hd ? n + hd : AR_CHUNK;
        arena_chunk *c = xrealloc(NULL, cap);
        c->next = m->arena; m->arena = c; m->ar_cap = cap; at = hd;
    }
    m->ar_used = at + n;
    return (char *)m->arena + at;
}
static char *ar_strndup(mk_make *m, const char *s, size_t n) {
    char *d;
    size_t at = m->ar_used;                      /* strings need no alignment */
    if (m->arena && at + n + 1 <= m->ar_cap) m->ar_used = at + n + 1, d = (char *)m->arena + at;
    else d = ar_alloc(m, n + 1);
    memcpy(d, s, n); d[n] = '\0';
    return d;
}
static int node_get_n(mk_make *m, const char *name, size_t n) {
    unsigned h = hash_str(name, n);
    int i = map_get_h(&m->node_map, name, n, h);
    node *d;
    if (i >= 0) return i;
    GROW(m->nodes, m->nnodes, m->nodecap);
    d = &m->nodes[m->nnodes];
    memset(d, 0, sizeof *d);
    d->name = ar_strndup(m, name, n);
    map_put_h(&m->node_map, d->name, h, m->nnodes);
    return m->nnodes++;
}
static int node_get(mk_make *m, const char *name) { return node_get_n(m, name, strlen(name)); }
#if defined(__GNUC__)
#define MK_MAYBE_UNUSED __attribute__((unused))   /* the parser alone (MAKE_NO_MAIN) reads no node_x */
#else
#define MK_MAYBE_UNUSED
#endif
static const node_x nx_none MK_MAYBE_UNUSED;    /* a node without node_x reads this */
#define NX(n) ((n)->x ? (n)->x : &nx_none)        /* to read */
static node_x *nx_of(node *n) {                   /* to write */
    if (!n->x) { n->x = xrealloc(NULL, sizeof *n->x); memset(n->x, 0, sizeof *n->x); }
    return n->x;
}
#define NFILE(n) ((n)->x && (n)->x->fname ? (n)->x->fname : (n)->name)   /* the file: found through vpath, or the name */

static var *var_find(const mk_make *m, const char *name, size_t n) {
    int i = map_get(&m->var_map, name, n);
    return i < 0 ? NULL : &m->vars[i];
}
static var *var_set(mk_make *m, const char *name, const char *value, int simple, int origin) {
    var *v = var_find(m, name, strlen(name));
    if (!v) {
        GROW(m->vars, m->nvars, m->varcap);
        v = &m->vars[m->nvars];
        v->name = xstrdup(name);
        v->value = NULL;
        v->exported = -1;
        map_put(&m->var_map, v->name, m->nvars++);
    }
    free(v->value);
    v->value = xstrdup(value);
    v->simple = simple;
    v->origin = origin;
    v->undefined = 0;
    return v;
}

static int set_error(strbuf *err, const char *file, int line, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    err->len = 0;
    if (file && line > 0) { char loc[64]; sb_puts(err, file); snprintf(loc, sizeof loc, ":%d: ", line); sb_puts(err, loc); }
    else { sb_puts(err, mk_prog); sb_puts(err, ": "); }
    sb_puts(err, "*** "); sb_puts(err, msg); sb_puts(err, ".  Stop.");
    return -1;
}

/* ================================================================ expansion */
typedef struct autovars { const char *at, *lt, *hat, *plus, *qm, *star, *bar; } autovars;
typedef struct expanding { const var *v; const struct expanding *up; } expanding;
/* A name bound by $(foreach) or $(call) ($(0) $(1) ...) while its text is
   expanded: looked at before the variables, never stored in them. */
typedef struct local { const char *name; size_t n; const char *value; const struct local *up; int recursive; } local;
struct reader;
typedef struct xctx {
    const mk_make *m;
    const autovars *av;          /* NULL outside a recipe */
    const char *file; int line;  /* where the text comes from, for errors */
    const expanding *stack;      /* recursive variables being expanded */
    const local *locals;
    struct reader *rd;           /* the Makefile being read ($(eval)); NULL in a recipe */
    strbuf *err;
    int depth;                   /* nesting of references, bounded so that no
                                    input can run the C stack out */
} xctx;
#define MAX_EXPAND_DEPTH 1000

static int expand_n(xctx *x, const char *s, size_t n, strbuf *out);
static char *expand_str(xctx *x, const char *s) {
    strbuf b = {0};
    if (expand_n(x, s, strlen(s), &b) != 0) { free(b.s); return NULL; }
    return sb_take(&b);
}

/* The end of a reference opened at s[0] ('(' or '{'): index of the closer. */
static size_t ref_end(const char *s, size_t n, size_t i) {
    char open = s[i], close = open == '(' ? ')' : '}';
    int depth = 0;
    for (; i < n; i++) {
        if (s[i] == open) depth++;
        else if (s[i] == close && --depth == 0) return i;
    }
    return n;
}

/* %-pattern match: returns 1 and the stem when word matches pat. */
static int pat_match(const char *pat, const char *w, size_t wn, size_t *stem_off, size_t *stem_n) {
    const char *pc = strchr(pat, '%');
    size_t pre, suf;
    if (!pc) return strlen(pat) == wn && strncmp(pat, w, wn) == 0 ? (*stem_off = 0, *stem_n = 0, 1) : 0;
    pre = (size_t)(pc - pat); suf = strlen(pc + 1);
    if (wn < pre + suf || strncmp(w, pat, pre) != 0 || strncmp(w + wn - suf, pc + 1, suf) != 0) return 0;
    *stem_off = pre; *stem_n = wn - pre - suf;
    return 1;
}
/* Appends pat with its first % replaced by the stem (or pat if it has none). */
static void pat_subst(strbuf *b, const char *pat, const char *stem, size_t stem_n) {
    const char *pc = strchr(pat, '%');
    if (!pc) { sb_puts(b, pat); return; }
    sb_add(b, pat, (size_t)(pc - pat)); sb_add(b, stem, stem_n); sb_puts(b, pc + 1);
}
static void patsubst_words(strbuf *out, const char *from, const char *to, const char *text) {
    size_t pos = 0, wn, so, sn;
    const char *w;
    strbuf t = {0};
    while ((w = next_word(text, &pos, &wn)) != NULL) {
        t.len = 0;
        sb_add(&t, "", 0);
        if (pat_match(from, w, wn, &so, &sn)) pat_subst(&t, to, w + so, sn);
        else sb_add(&t, w, wn);
        sb_word(out, t.s, t.len);
    }
    free(t.s);
}

static int auto_value(const xctx *x, const char *name, size_t n, strbuf *out) {
    const char *v = NULL;
    char mode = 0;
    if (n == 2 && (name[1] == 'D' || name[1] == 'F')) mode = name[1];
    else if (n != 1) return 0;
    switch (name[0]) {
    case '@': v = x->av ? x->av->at : ""; break;
    case '<': v = x->av ? x->av->lt : ""; break;
    case '^': v = x->av ? x->av->hat : ""; break;
    case '+': v = x->av ? x->av->plus : ""; break;
    case '?': v = x->av ? x->av->qm : ""; break;
    case '*': v = x->av ? x->av->star : ""; break;
    case '|': v = x->av ? x->av->bar : ""; break;
    default: return 0;
    }
    if (!mode) { sb_puts(out, v); return 1; }
    {
        size_t pos = 0, wn;
        const char *w;
        strbuf t = {0}, res = {0};
        while ((w = next_word(v, &pos, &wn)) != NULL) {
            size_t k = wn;
            while (k > 0 && w[k - 1] != '/') k--;
            t.len = 0;
            if (mode == 'D') { if (k == 0) sb_puts(&t, "."); else sb_add(&t, w, k > 1 ? k - 1 : 1); }
            else sb_add(&t, w + k, wn - k);
            sb_word(&res, t.s ? t.s : "", t.len);
        }
        if (res.len) sb_add(out, res.s, res.len);
        free(t.s); free(res.s);
    }
    return 1;
}

static int expand_var(xctx *x, const char *name, size_t n, strbuf *out) {
    const var *v;
    const expanding *e;
    expanding me;
    xctx sub;
    const local *l;
    for (l = x->locals; l; l = l->up)
        if (l->n == n && strncmp(l->name, name, n) == 0) {
            if (!l->recursive) { sb_puts(out, l->value); return 0; }
            return expand_n(x, l->value, strlen(l->value), out);   /* bounded by MAX_EXPAND_DEPTH */
        }
    if (auto_value(x, name, n, out)) return 0;
    v = var_find(x->m, name, n);
    if (!v) return 0;
    if (v->simple) { sb_puts(out, v->value); return 0; }
    for (e = x->stack; e; e = e->up)
        if (e->v == v) return set_error(x->err, x->file, x->line, "Recursive variable '%s' references itself (eventually)", v->name);
    me.v = v; me.up = x->stack;
    sub = *x; sub.stack = &me;
    return expand_n(&sub, v->value, strlen(v->value), out);
}

/* Splits a function's argument text at top-level commas, at most max pieces. */
static int split_args(const char *s, size_t n, int max, const char **a, size_t *an) {
    int k = 0;
    size_t i, start = 0;
    for (i = 0; i < n && k < max - 1; i++) {
        if (s[i] == '$' && i + 1 < n && (s[i + 1] == '(' || s[i + 1] == '{')) { i = ref_end(s, n, i + 1); continue; }
        if (s[i] == '(') { int d = 1; while (++i < n && d) { if (s[i] == '(') d++; else if (s[i] == ')') d--; } i--; continue; }
        if (s[i] == ',') { a[k] = s + start; an[k++] = i - start; start = i + 1; }
    }
    a[k] = s + start; an[k++] = n - start;
    return k;
}

static const char *const refused_functions[] = { "file", "guile", "intcmp", "let", NULL };
static int eval_text(xctx *x, const char *text);   /* $(eval): parses text as Makefile lines */

static int word_in(const char *w, size_t wn, const char *list) {   /* list: words, maybe patterns */
    size_t pos = 0, pn, so, sn;
    const char *p;
    while ((p = next_word(list, &pos, &pn)) != NULL) {
        char *pat = xstrndup(p, pn);
        int hit = pat_match(pat, w, wn, &so, &sn);
        free(pat);
        if (hit) return 1;
    }
    return 0;
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int call_function_into(xctx *x, const char *fn, size_t fnn, const char *args, size_t argn, strbuf *out);
/* Words are appended space-separated, so a function's result is built on
   its own and then added to the text around it. */
static int call_function(xctx *x, const char *fn, size_t fnn, const char *args, size_t argn, strbuf *out) {
    strbuf res = {0};
    int rc = call_function_into(x, fn, fnn, args, argn, &res);
    if (rc == 0 && res.len) sb_add(out, res.s, res.len);
    free(res.s);
    return rc;
}
/* abspath: the name made absolute from CURDIR, . and .. and // removed,
   without looking at the file system. */
static char *abspath_of(const mk_make *m, const char *in) {
    strbuf b = {0};
    const char *p = in;
    if (*in != '/') { const var *cd = var_find(m, "CURDIR", 6); if (cd) sb_puts(&b, cd->value); }
    sb_add(&b, "", 0);
    while (*p) {
        const char *e;
        size_t n;
        while (*p == '/') p++;
        for (e = p; *e && *e != '/'; e++) {}
        n = (size_t)(e - p);
        if (n == 0) break;
        if (n == 1 && p[0] == '.') {}
        else if (n == 2 && p[0] == '.' && p[1] == '.') { while (b.len && b.s[b.len - 1] != '/') b.len--; if (b.len) b.len--; b.s[b.len] = '\0'; }
        else { sb_putc(&b, '/'); sb_add(&b, p, n); }
        p = e;
    }
    if (!b.len) sb_putc(&b, '/');
    return sb_take(&b);
}

/* $(if) $(or) $(and) $(foreach) $(call): their arguments are expanded only
   as far as needed (and foreach's and call's with names bound). Returns 1
   if fn is none of them. */
#define MAX_CALL_ARGS 64
static int lazy_function(xctx *x, const char *fn, size_t fnn, const char *args, size_t argn, strbuf *out) {
    const char *a[MAX_CALL_ARGS]; size_t an[MAX_CALL_ARGS];
    int k, i, rc = 0;
#define FN(s) (fnn == sizeof(s) - 1 && strncmp(fn, s, fnn) == 0)
    if (FN("if")) {
        strbuf c = {0};
        k = split_args(args, argn, 3, a, an);
        if (k < 2) return set_error(x->err, x->file, x->line, "insufficient number of arguments (%d) to function 'if'", k);
        rc = expand_n(x, a[0], an[0], &c);
        if (rc == 0) {
            size_t s0 = 0, e0 = c.len;
            while (s0 < e0 && (is_space(c.s[s0]) || c.s[s0] == '\n')) s0++;
            if (s0 < e0) rc = expand_n(x, a[1], an[1], out);
            else if (k == 3) rc = expand_n(x, a[2], an[2], out);
        }
        free(c.s);
        return rc;
    }
    if (FN("or") || FN("and")) {
        int is_or = FN("or");
        k = split_args(args, argn, MAX_CALL_ARGS, a, an);
        for (i = 0; i < k; i++) {
            strbuf c = {0};
            char *t;
            if (expand_n(x, a[i], an[i], &c) != 0) { free(c.s); return -1; }
            t = trim(c.s);
            if (is_or && *t) { sb_puts(out, t); free(c.s); return 0; }
            if (!is_or && !*t) { free(c.s); return 0; }
            if (!is_or && i == k - 1) sb_puts(out, t);
            free(c.s);
        }
        return 0;
    }
    if (FN("foreach")) {
        strbuf nm = {0}, list = {0};
        k = split_args(args, argn, 3, a, an);
        if (k != 3) return set_error(x->err, x->file, x->line, "insufficient number of arguments (%d) to function 'foreach'", k);
        rc = expand_n(x, a[0], an[0], &nm);
        if (rc == 0) rc = expand_n(x, a[1], an[1], &list);
        if (rc == 0) {
            size_t pos = 0, wn;
            const char *w;
            char *name = trim(nm.s);
            int first = 1;
            while (rc == 0 && (w = next_word(list.s, &pos, &wn)) != NULL) {
                local l;
                xctx sub = *x;
                char *val = xstrndup(w, wn);
                strbuf t = {0};
                l.name = name; l.n = strlen(name); l.value = val; l.up = x->locals; l.recursive = 0;
                sub.locals = &l;
                rc = expand_n(&sub, a[2], an[2], &t);
                if (rc == 0) { if (!first) sb_putc(out, ' '); sb_add(out, t.s, t.len); first = 0; }
                free(t.s); free(val);
            }
        }
        free(nm.s); free(list.s);
        return rc;
    }
    if (FN("call")) {
        static const char *const nums[] = { "0", "1", "2", "3", "4", "5", "6", "7", "8", "9" };
        local *ls;                                /* on the heap: a call may nest 1000 deep */
        char **vals, (*numbuf)[4];
        const var *v;
        const local *up = x->locals;
        int nb;
        char *name;
        k = split_args(args, argn, MAX_CALL_ARGS, a, an);
        ls = xrealloc(NULL, MAX_CALL_ARGS * sizeof *ls);
        vals = xrealloc(NULL, MAX_CALL_ARGS * sizeof *vals);
        numbuf = xrealloc(NULL, MAX_CALL_ARGS * sizeof *numbuf);
        for (i = 0; i < k; i++) {
            strbuf t = {0};
            if (expand_n(x, a[i], an[i], &t) != 0) { free(t.s); while (i--) free(vals[i]); free(ls); free(vals); free(numbuf); return -1; }
            vals[i] = sb_take(&t);
        }
        name = trim(vals[0]);
        v = var_find(x->m, name, strlen(name));
        nb = k < 10 ? 10 : k;                     /* $(k)..$(9) of an outer call: empty */
        for (i = 0; i < nb && i < MAX_CALL_ARGS; i++) {
            if (i < 10) ls[i].name = nums[i];
            else { snprintf(numbuf[i], sizeof numbuf[i], "%d", i); ls[i].name = numbuf[i]; }
            ls[i].n = strlen(ls[i].name);
            ls[i].value = i == 0 ? name : i < k ? vals[i] : "";
            ls[i].up = up; ls[i].recursive = 0; up = &ls[i];
        }
        if (v && !v->undefined) {
            xctx sub = *x;
            sub.locals = up;
            if (v->simple) sb_puts(out, v->value);
            else rc = expand_n(&sub, v->value, strlen(v->value), out);
        }
        for (i = 0; i < k; i++) free(vals[i]);
        free(ls); free(vals); free(numbuf);
        return rc;
    }
#undef FN
    return 1;
}

static int call_function_into(xctx *x, const char *fn, size_t fnn, const char *args, size_t argn, strbuf *out) {
    static const struct { const char *name; int nargs; } fns[] = {
        {"wildcard", 1}, {"patsubst", 3}, {"subst", 3}, {"strip", 1}, {"filter", 2}, {"filter-out", 2},
        {"sort", 1}, {"words", 1}, {"firstword", 1}, {"dir", 1}, {"notdir", 1}, {"suffix", 1},
        {"basename", 1}, {"addprefix", 2}, {"addsuffix", 2}, {"info", 1}, {"warning", 1}, {"error", 1},
        {"word", 2}, {"wordlist", 3}, {"lastword", 1}, {"findstring", 2}, {"join", 2}, {"abspath", 1},
        {"realpath", 1}, {"shell", 1}, {"origin", 1}, {"value", 1}, {"flavor", 1}, {"eval", 1}};
    const char *a[3]; size_t an[3];
    char *v[3] = {NULL, NULL, NULL};
    int f = -1, k, i, rc = 0, nf = (int)(sizeof fns / sizeof fns[0]);
    size_t pos = 0, wn;
    const char *w;
    for (i = 0; i < nf; i++) if (strlen(fns[i].name) == fnn && strncmp(fns[i].name, fn, fnn) == 0) f = i;
    if (f < 0) {
        int lz = lazy_function(x, fn, fnn, args, argn, out);
        if (lz != 1) return lz;
        for (i = 0; refused_functions[i]; i++)
            if (strlen(refused_functions[i]) == fnn && strncmp(refused_functions[i], fn, fnn) == 0)
                return set_error(x->err, x->file, x->line, "function '%.*s' is not supported by this make", (int)fnn, fn);
        return set_error(x->err, x->file, x->line, "unsupported reference '$(%.*s ...)': unknown function, or a variable name with spaces", (int)fnn, fn);
    }
    k = split_args(args, argn, fns[f].nargs, a, an);
    if (k != fns[f].nargs)
        return set_error(x->err, x->file, x->line, "insufficient number of arguments (%d) to function '%s'", k, fns[f].name);
    for (i = 0; i < k; i++) {
        strbuf b = {0};
        if (expand_n(x, a[i], an[i], &b) != 0) { free(b.s); rc = -1; goto done; }
        v[i] = sb_take(&b);
    }
    switch (f) {
    case 0: {                                                    /* wildcard */
        while ((w = next_word(v[0], &pos, &wn)) != NULL) {
            char *pat = xstrndup(w, wn);
            glob_t g;
            size_t j;
            if (glob(pat, 0, NULL, &g) == 0) for (j = 0; j < g.gl_pathc; j++) sb_word(out, g.gl_pathv[j], strlen(g.gl_pathv[j]));
            globfree(&g);
            free(pat);
        }
        break; }
    case 1: { char *from = trim(v[0]), *to = trim(v[1]);        /* patsubst */
        size_t so, sn;
        while ((w = next_word(v[2], &pos, &wn)) != NULL) {
            strbuf t = {0};
            if (pat_match(from, w, wn, &so, &sn)) pat_subst(&t, to, w + so, sn); else sb_add(&t, w, wn);
            sb_word(out, t.s ? t.s : "", t.len); free(t.s);
        }
        break; }
    case 2: { size_t fl = strlen(v[0]); const char *s = v[2];   /* subst */
        if (!fl) { sb_puts(out, s); break; }
        for (;;) { const char *h = strstr(s, v[0]); if (!h) { sb_puts(out, s); break; }
            sb_add(out, s, (size_t)(h - s)); sb_puts(out, v[1]); s = h + fl; }
        break; }
    case 3: while ((w = next_word(v[0], &pos, &wn)) != NULL) sb_word(out, w, wn); break;   /* strip */
    case 4: case 5:                                               /* filter, filter-out */
        while ((w = next_word(v[1], &pos, &wn)) != NULL)
            if (word_in(w, wn, v[0]) == (f == 4)) sb_word(out, w, wn);
        break;
    case 6: { char **ws = NULL; int nw = 0, cap = 0;              /* sort (and dedupe) */
        while ((w = next_word(v[0], &pos, &wn)) != NULL) { GROW(ws, nw, cap); ws[nw++] = xstrndup(w, wn); }
        if (nw) qsort(ws, (size_t)nw, sizeof *ws, cmp_str);
        for (i = 0; i < nw; i++) { if (i == 0 || strcmp(ws[i], ws[i - 1]) != 0) sb_word(out, ws[i], strlen(ws[i])); }
        for (i = 0; i < nw; i++) free(ws[i]);
        free(ws);
        break; }
    case 7: { int c = 0; char num[32]; while (next_word(v[0], &pos, &wn)) c++;   /* words */
        snprintf(num, sizeof num, "%d", c); sb_puts(out, num); break; }
    case 8: if ((w = next_word(v[0], &pos, &wn)) != NULL) sb_add(out, w, wn); break;   /* firstword */
    case 9: case 10: case 11: case 12:                            /* dir notdir suffix basename */
        while ((w = next_word(v[0], &pos, &wn)) != NULL) {
            size_t s = wn, d = wn;
            while (s > 0 && w[s - 1] != '/') s--;                 /* w[s..] is the file part */
            for (d = wn; d > s && w[d - 1] != '.'; d--) {}        /* w[d-1] is the last dot */
            if (f == 9) { if (s) sb_word(out, w, s); else sb_word(out, "./", 2); }
            else if (f == 10) sb_word(out, w + s, wn - s);
            else if (f == 11) { if (d > s) sb_word(out, w + d - 1, wn - d + 1); }
            else sb_word(out, w, d > s ? d - 1 : wn);
        }
        break;
    case 13: case 14: {                                           /* addprefix addsuffix */
        while ((w = next_word(v[1], &pos, &wn)) != NULL) {
            strbuf t = {0};
            if (f == 13) { sb_puts(&t, v[0]); sb_add(&t, w, wn); } else { sb_add(&t, w, wn); sb_puts(&t, v[0]); }
            sb_word(out, t.s, t.len); free(t.s);
        }
        break; }
    case 15: printf("%s\n", v[0]); fflush(stdout); break;       /* info: stdout, as in GNU make */
    case 16: if (x->file) fprintf(stderr, "%s:%d: %s\n", x->file, x->line, v[0]); else fprintf(stderr, "%s: %s\n", mk_prog, v[0]); break;
    case 17: rc = set_error(x->err, x->file, x->line, "%s", v[0]); break;   /* error */
    case 18: case 19: {                                           /* word wordlist */
        long a0 = atol(trim(v[0])), a1 = f == 19 ? atol(trim(v[1])) : a0, c = 0;
        const char *text = f == 18 ? v[1] : v[2];
        if (a0 < 1) { rc = set_error(x->err, x->file, x->line, "first argument to '%s' function must be greater than 0", fns[f].name); break; }
        while ((w = next_word(text, &pos, &wn)) != NULL) { c++; if (c >= a0 && c <= a1) sb_word(out, w, wn); }
        break; }
    case 20: { const char *last = NULL; size_t ln = 0;            /* lastword */
        while ((w = next_word(v[0], &pos, &wn)) != NULL) { last = w; ln = wn; }
        if (last) sb_add(out, last, ln);
        break; }
    case 21: if (strstr(v[1], v[0])) sb_puts(out, v[0]); break;   /* findstring */
    case 22: { size_t p2 = 0, wn2; const char *w2;                /* join */
        for (;;) {
            w = next_word(v[0], &pos, &wn); w2 = next_word(v[1], &p2, &wn2);
            if (!w && !w2) break;
            { strbuf t = {0}; sb_add(&t, "", 0); if (w) sb_add(&t, w, wn); if (w2) sb_add(&t, w2, wn2); sb_word(out, t.s, t.len); free(t.s); }
        }
        break; }
    case 23: case 24:                                             /* abspath realpath */
        while ((w = next_word(v[0], &pos, &wn)) != NULL) {
            char *in = xstrndup(w, wn), *r = NULL;
            if (f == 24) {
#ifndef _WIN32
                r = realpath(in, NULL);
#endif
            } else r = abspath_of(x->m, in);
            if (r) sb_word(out, r, strlen(r));
            free(r); free(in);
        }
        break;
    case 25: {                                                    /* shell */
        char *o;
        if (!x->m->shell_fn || (o = x->m->shell_fn((mk_make *)x->m, v[0])) == NULL) {
            rc = set_error(x->err, x->file, x->line, "function 'shell' is not available here (commands may not run)");
            break;
        }
        sb_puts(out, o); free(o);
        break; }
    case 26: case 27: case 28: {                                  /* origin value flavor */
        char *nm = trim(v[0]);
        const var *vv = var_find(x->m, nm, strlen(nm));
        const local *l;
        for (l = x->locals; l; l = l->up) if (l->n == strlen(nm) && strncmp(l->name, nm, l->n) == 0) break;
        if (vv && vv->undefined) vv = NULL;
        if (f == 27) { if (l) sb_puts(out, l->value); else if (vv) sb_puts(out, vv->value); }
        else if (f == 28) sb_puts(out, l ? "simple" : !vv ? "undefined" : vv->simple ? "simple" : "recursive");
        else if (l) sb_puts(out, "automatic");
        else if (strlen(nm) <= 2 && strchr("@<^+?*|", nm[0]) && (!nm[1] || nm[1] == 'D' || nm[1] == 'F')) sb_puts(out, "automatic");
        else sb_puts(out, vv ? origin_names[vv->origin] : "undefined");
        break; }
    case 29:                                                      /* eval */
        if (!x->rd) { rc = set_error(x->err, x->file, x->line, "$(eval) in a recipe is not supported by this make"); break; }
        rc = eval_text(x, v[0]);
        break;
    }
done:
    for (i = 0; i < 3; i++) free(v[i]);
    return rc;
}

/* $(body) or ${body}: a variable, a computed name, a substitution reference
   or a function call. */
static int expand_ref(xctx *x, const char *s, size_t n, strbuf *out) {
    size_t i, colon = n;
    for (i = 0; i < n && !is_space(s[i]) && s[i] != ':' && s[i] != '$' && s[i] != '(' && s[i] != '{' && s[i] != ','; i++) {}
    if (i < n && is_space(s[i]) && i > 0) return call_function(x, s, i, s + i + 1, n - i - 1, out);
    for (i = 0; i < n; i++) {                        /* a top-level ':' makes it $(VAR:a=b) */
        if (s[i] == '$' && i + 1 < n && (s[i + 1] == '(' || s[i + 1] == '{')) { i = ref_end(s, n, i + 1); continue; }
        if (s[i] == ':') { colon = i; break; }
    }
    {
        strbuf name = {0};
        int rc = expand_n(x, s, colon, &name);
        if (rc == 0 && colon < n) {
            const char *eq = memchr(s + colon + 1, '=', n - colon - 1);
            strbuf val = {0}, from = {0}, to = {0};
            if (!eq) rc = set_error(x->err, x->file, x->line, "unsupported reference '$(%.*s)': a ':' without '='", (int)n, s);
            if (rc == 0) rc = expand_var(x, name.s ? name.s : "", name.len, &val);
            if (rc == 0) rc = expand_n(x, s + colon + 1, (size_t)(eq - (s + colon + 1)), &from);
            if (rc == 0) rc = expand_n(x, eq + 1, (size_t)(s + n - eq - 1), &to);
            if (rc == 0) {
                char *f = from.s ? from.s : (char *)"", *t = to.s ? to.s : (char *)"";
                strbuf res = {0};
                if (strchr(f, '%')) patsubst_words(&res, f, t, val.s ? val.s : "");
                else {                                 /* suffix form: .c=.o is %.c=%.o */
                    strbuf pf = {0}, pt = {0};
                    sb_putc(&pf, '%'); sb_puts(&pf, f); sb_putc(&pt, '%'); sb_puts(&pt, t);
                    patsubst_words(&res, pf.s, pt.s, val.s ? val.s : "");
                    free(pf.s); free(pt.s);
                }
                if (res.len) sb_add(out, res.s, res.len);
                free(res.s);
            }
            free(val.s); free(from.s); free(to.s);
        } else if (rc == 0) rc = expand_var(x, name.s ? name.s : "", name.len, out);
        free(name.s);
        return rc;
    }
}

static int expand_n(xctx *x, const char *s, size_t n, strbuf *out) {
    size_t i = 0, run;
    int rc = 0;
    if (!out->s) sb_add(out, "", 0);
    if (!memchr(s, '$', n)) { sb_add(out, s, n); return 0; }
    if (x->depth >= MAX_EXPAND_DEPTH) return set_error(x->err, x->file, x->line, "references nested more than %d deep", MAX_EXPAND_DEPTH);
    x->depth++;
    while (i < n && rc == 0) {
        const char *d = memchr(s + i, '$', n - i);
        run = d ? (size_t)(d - (s + i)) : n - i;
        sb_add(out, s + i, run);
        i += run;
        if (i >= n) break;
        i++;                                         /* past the '$' */
        if (i >= n) break;                           /* a lone '$' at the end: nothing */
        if (s[i] == '$') { sb_putc(out, '$'); i++; }
        else if (s[i] == '(' || s[i] == '{') {
            size_t e = ref_end(s, n, i);
            if (e >= n) rc = set_error(x->err, x->file, x->line, "unterminated variable reference");
            else rc = expand_ref(x, s + i + 1, e - i - 1, out);
            i = e + 1;
        } else { rc = expand_var(x, s + i, 1, out); i++; }
    }
    x->depth--;
    return rc;
}

/* =================================================================== parsing */
typedef struct reader {          /* one Makefile being read */
    mk_make *m;
    const char *file;            /* lives in m->files */
    const char *buf; size_t len, pos;
    int line;                    /* of the logical line being handled */
    int next_line;
    /* the rule whose recipe lines may follow: targets, or a pattern */
    int *ctx_targets; int nctx, ctxcap;
    int ctx_npre;                /* how many prerequisites that rule added */
    int ctx_pattern;             /* -1: none */
    recipe *ctx_recipe;
    int in_rule;
    /* conditionals: for each open one, whether its current branch is live,
       whether some branch was taken, and whether the enclosing text is live */
    struct cond { int live, taken, outer; } *conds; int nconds, condcap;
    char *def_name; const char *def_op; int def_ovr, def_exp;   /* a define being read */
} reader;

static int live(const reader *r) { return r->nconds == 0 || r->conds[r->nconds - 1].live; }
static int perr(reader *r, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return set_error(&r->m->err, r->file, r->line, "%s", msg);
}
static xctx parse_ctx(reader *r) {
    xctx x;
    x.m = r->m; x.av = NULL; x.file = r->file; x.line = r->line; x.stack = NULL; x.locals = NULL; x.rd = r; x.err = &r->m->err; x.depth = 0;
    return x;
}

/* Reads one physical line (without its newline) from the buffer. */
static int read_physical(reader *r, const char **s, size_t *n) {
    const char *nl;
    if (r->pos >= r->len) return 0;
    *s = r->buf + r->pos;
    nl = memchr(*s, '\n', r->len - r->pos);
    *n = nl ? (size_t)(nl - *s) : r->len - r->pos;
    r->pos += *n + (nl ? 1 : 0);
    if (*n && (*s)[*n - 1] == '\r') (*n)--;
    r->next_line++;
    return 1;
}
static int ends_continued(const char *s, size_t n) {
    size_t k = 0;
    while (k < n && s[n - 1 - k] == '\\') k++;
    return k % 2 == 1;
}
/* The next logical line. A recipe line keeps its backslash-newlines for the
   shell (dropping one leading tab of each continuation line); any other
   line joins its pieces with a single space, as GNU make does. */
static int read_logical(reader *r, strbuf *out, int *is_recipe) {
    const char *s;
    size_t n;
    out->len = 0;
    sb_add(out, "", 0);
    if (!read_physical(r, &s, &n)) return 0;
    r->line = r->next_line;
    *is_recipe = n > 0 && s[0] == '\t' && r->in_rule;
    for (;;) {
        int cont = ends_continued(s, n);
        if (*is_recipe) { sb_add(out, s, n); if (!cont) break; sb_putc(out, '\n'); }
        else {
            size_t k = cont ? n - 1 : n;
            if (cont) while (k > 0 && is_space(s[k - 1])) k--;
            sb_add(out, s, k);
            if (!cont) break;
        }
        if (!read_physical(r, &s, &n)) break;
        if (*is_recipe) { if (n && s[0] == '\t') { s++; n--; } }
        else { while (n && is_space(*s)) { s++; n--; } sb_putc(out, ' '); }
    }
    return 1;
}

/* Removes a '#' comment (not one escaped as \#) from a non-recipe line. */
static void strip_comment(char *s) {
    char *p, *w;
    for (p = s, w = s; *p; p++) {
        if (*p == '\\' && p[1] == '#') { *w++ = '#'; p++; continue; }
        if (*p == '#') break;
        *w++ = *p;
    }
    *w = '\0';
}

/* The first top-level ':' '=' or ';' (outside $(...)), or NULL. */
static char *find_top(char *s, const char *set) {
    size_t n, i;
    if (!strpbrk(s, set)) return NULL;           /* none at all (a long prerequisite list) */
    n = strlen(s);
    for (i = 0; i < n; i++) {
        if (s[i] == '$' && i + 1 < n && (s[i + 1] == '(' || s[i + 1] == '{')) { i = ref_end(s, n, i + 1); continue; }
        if (s[i] == '$' && i + 1 < n) { i++; continue; }
        if (strchr(set, s[i])) return s + i;
    }
    return NULL;
}

static int parse_buffer_file(mk_make *m, const char *file, const char *buf, size_t len);

static const char *remember_file(mk_make *m, const char *name) {
    GROW(m->files, m->nfiles, m->filecap);
    m->files[m->nfiles] = xstrdup(name);
    return m->files[m->nfiles++];
}

static int read_whole_file(const char *path, char **out, size_t *outn, strbuf *err, const char *file, int line) {
    FILE *f;
    struct stat st;
    strbuf b = {0};
    char chunk[65536];
    size_t k;
    int known = stat(path, &st) == 0;
    if (known && S_ISDIR(st.st_mode)) {
        if (file) return set_error(err, file, line, "%s: Is a directory", path);
        return set_error(err, NULL, 0, "%s: Is a directory", path);
    }
    f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        err->len = 0;
        if (file) { char loc[64]; sb_puts(err, file); snprintf(loc, sizeof loc, ":%d: ", line); sb_puts(err, loc); }
        else { sb_puts(err, mk_prog); sb_puts(err, ": "); }
        sb_puts(err, path); sb_puts(err, ": "); sb_puts(err, strerror(e));
        sb_puts(err, "\n"); sb_puts(err, mk_prog); sb_puts(err, ": *** No rule to make target '"); sb_puts(err, path); sb_puts(err, "'.  Stop.");
        return -1;
    }
    if (known && S_ISREG(st.st_mode) && st.st_size > 0) {   /* one buffer, of the file's size */
        b.cap = (size_t)st.st_size + 1;
        b.s = xrealloc(NULL, b.cap);
    }
    sb_add(&b, "", 0);
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) sb_add(&b, chunk, k);
    if (ferror(f)) { fclose(f); free(b.s); return set_error(err, file, line, "%s: read error", path); }
    fclose(f);
    *outn = b.len;
    *out = sb_take(&b);
    return 0;
}

static int do_include(reader *r, char *args, int optional) {
    xctx x = parse_ctx(r);
    char *files = expand_str(&x, args);
    size_t pos = 0, wn;
    const char *w;
    int rc = 0;
    if (!files) return -1;
    if (r->m->refuse_includes) { free(files); return perr(r, "include is switched off (refuse_includes)"); }
    if (r->m->include_depth >= 64) { free(files); return perr(r, "include nesting too deep"); }
    while (rc == 0 && (w = next_word(files, &pos, &wn)) != NULL) {
        char *path = xstrndup(w, wn), *text = NULL;
        size_t len = 0;
        glob_t g;
        size_t j;
        int globbed = strpbrk(path, "*?[") && glob(path, 0, NULL, &g) == 0;
        for (j = 0; rc == 0 && j < (globbed ? g.gl_pathc : 1); j++) {
            const char *p = globbed ? g.gl_pathv[j] : path;
            strbuf err = {0};
            if (read_whole_file(p, &text, &len, &err, r->file, r->line) != 0) {
                if (r->m->defer_missing && access(p, F_OK) != 0) {
                    struct missing_inc *mi;
                    GROW(r->m->minc, r->m->nminc, r->m->minccap);
                    mi = &r->m->minc[r->m->nminc++];
                    mi->name = xstrdup(p); mi->msg = xstrdup(err.s); mi->optional = optional;
                } else if (!optional) { r->m->err.len = 0; sb_puts(&r->m->err, err.s); rc = -1; }
            } else {
                r->m->include_depth++;
                rc = parse_buffer_file(r->m, p, text, len);
                r->m->include_depth--;
                free(text);
            }
            free(err.s);
        }
        if (globbed) globfree(&g);
        free(path);
    }
    free(files);
    return rc;
}

/* ifeq (a,b) / ifeq "a" "b": sets *eq. */
static int parse_ifeq(reader *r, char *args, int *eq) {
    char *a, *b, *end;
    xctx x = parse_ctx(r);
    char *ea, *eb;
    args = trim(args);
    if (*args == '(') {
        size_t n = strlen(args);
        char *comma;
        if (n < 2 || args[n - 1] != ')') return perr(r, "invalid syntax in conditional");
        args[n - 1] = '\0';
        comma = find_top(args + 1, ",");
        if (!comma) return perr(r, "invalid syntax in conditional");
        *comma = '\0';
        a = args + 1; b = comma + 1;
        while (is_space(*b)) b++;
    } else if (*args == '"' || *args == '\'') {
        char q = *args;
        a = args + 1;
        end = strchr(a, q);
        if (!end) return perr(r, "invalid syntax in conditional");
        *end = '\0';
        b = trim(end + 1);
        if (*b != '"' && *b != '\'') return perr(r, "invalid syntax in conditional");
        q = *b++;
        end = strchr(b, q);
        if (!end || *trim(end + 1)) return perr(r, "invalid syntax in conditional");
        *end = '\0';
    } else return perr(r, "invalid syntax in conditional");
    ea = expand_str(&x, a);
    eb = ea ? expand_str(&x, b) : NULL;
    if (!eb) { free(ea); return -1; }
    *eq = strcmp(trim(ea), trim(eb)) == 0;
    free(ea); free(eb);
    return 0;
}
static int parse_ifdef(reader *r, char *args, int *defined) {
    xctx x = parse_ctx(r);
    char *name = expand_str(&x, args), *t;
    const var *v;
    if (!name) return -1;
    t = trim(name);
    v = var_find(r->m, t, strlen(t));
    *defined = v && v->value[0] != '\0';
    free(name);
    return 0;
}

/* Handles a conditional directive; returns 1 if line was one, 0 if not, -1 on error. */
static int conditional(reader *r, char *line) {
    char *p = line, *kw;
    size_t kn;
    int is_else = 0;
    while (is_space(*p)) p++;
    kw = p;
    while (*p && !is_space(*p) && *p != '(') p++;
    kn = (size_t)(p - kw);
#define KW(s) (kn == sizeof(s) - 1 && strncmp(kw, s, kn) == 0)
    if (KW("else")) {
        struct cond *c;
        if (r->nconds == 0) return perr(r, "extraneous 'else'"), -1;
        c = &r->conds[r->nconds - 1];
        while (is_space(*p)) p++;
        if (*p == '\0') { c->live = c->outer && !c->taken; c->taken = 1; return 1; }
        is_else = 1;                                 /* else ifeq ... */
        kw = p;
        while (*p && !is_space(*p) && *p != '(') p++;
        kn = (size_t)(p - kw);
        if (!(KW("ifeq") || KW("ifneq") || KW("ifdef") || KW("ifndef"))) return perr(r, "extraneous text after 'else' directive"), -1;
    }
    if (KW("endif")) {
        if (r->nconds == 0) return perr(r, "extraneous 'endif'"), -1;
        r->nconds--;
        return 1;
    }
    if (KW("ifeq") || KW("ifneq") || KW("ifdef") || KW("ifndef")) {
        int neg = KW("ifneq") || KW("ifndef"), isdef = KW("ifdef") || KW("ifndef"), truth = 0;
        int outer = is_else ? (r->conds[r->nconds - 1].outer && !r->conds[r->nconds - 1].taken) : live(r);
        if (outer) {
            if ((isdef ? parse_ifdef(r, p, &truth) : parse_ifeq(r, p, &truth)) != 0) return -1;
            truth = truth != neg;
        }
        if (is_else) {
            struct cond *c = &r->conds[r->nconds - 1];
            c->live = outer && truth;
            if (c->live) c->taken = 1;
        } else {
            GROW(r->conds, r->nconds, r->condcap);
            r->conds[r->nconds].outer = outer;
            r->conds[r->nconds].live = outer && truth;
            r->conds[r->nconds].taken = outer && truth;
            r->nconds++;
        }
        return 1;
    }
#undef KW
    return 0;
}

/* VAR op value, after `override` / `export` when those came first (ovr,
   exp). GNU make's precedence: a plain Makefile assignment leaves a value
   from the command line, from `override`, or from the environment under -e
   as it is; `override` replaces any value; ?= assigns only to an undefined
   variable; += on a variable from the environment appends to that value. */
static int assignment(reader *r, char *line, char *op_at, const char *op, int ovr, int exp) {
    mk_make *m = r->m;
    xctx x = parse_ctx(r);
    char *name_raw, *name, *value = op_at + strlen(op);
    var *v;
    int origin = ovr ? O_OVERRIDE : O_FILE;
    *op_at = '\0';
    name_raw = expand_str(&x, trim(line));
    if (!name_raw) return -1;
    name = trim(name_raw);
    while (is_space(*value)) value++;
    if (!*name) { free(name_raw); return perr(r, "empty variable name"); }
    if (strpbrk(name, " \t")) {
        int rc = perr(r, "variable name '%s' contains spaces (a directive this make does not support?)", name);
        free(name_raw);
        return rc;
    }
    v = var_find(m, name, strlen(name));
    if (v && exp) v->exported = 1;
    if (v && !ovr && (v->origin == O_CMDLINE || v->origin == O_OVERRIDE || v->origin == O_ENV_OVERRIDE)) {
        free(name_raw);
        return 0;
    }
    if (strcmp(op, "=") == 0) v = var_set(m, name, value, 0, origin);
    else if (strcmp(op, ":=") == 0 || strcmp(op, "::=") == 0 || strcmp(op, "!=") == 0) {
        char *e = expand_str(&x, value);
        if (!e) { free(name_raw); return -1; }
        if (op[0] == '!') {                                       /* VAR != command */
            char *o = NULL;
            if (!m->shell_fn || (o = m->shell_fn(m, e)) == NULL) {
                free(e); free(name_raw);
                return perr(r, "'!=' (shell assignment) is not available here (commands may not run)");
            }
            free(e);
            e = o;
            v = var_set(m, name, e, 0, origin);                   /* != makes a recursive variable */
        } else v = var_set(m, name, e, 1, origin);
        free(e);
    } else if (strcmp(op, "?=") == 0) {
        if (!v || v->undefined) v = var_set(m, name, value, 0, origin);
    } else {                                                      /* += */
        strbuf b = {0};
        const char *old = v ? v->value : NULL;
        int simple = v ? v->simple : 0;
        if (old) sb_puts(&b, old);
        if (old && *old && *value) sb_putc(&b, ' ');
        if (simple) { if (expand_n(&x, value, strlen(value), &b) != 0) { free(b.s); free(name_raw); return -1; } }
        else sb_puts(&b, value);
        v = var_set(m, name, b.s ? b.s : "", simple, origin);
        free(b.s);
    }
    if (v && exp) v->exported = 1;
    free(name_raw);
    return 0;
}

static const char *const default_suffixes[] = {
    ".out", ".a", ".ln", ".o", ".c", ".cc", ".C", ".cpp", ".p", ".f", ".F", ".m", ".r", ".y", ".l",
    ".ym", ".yl", ".s", ".S", ".mod", ".sym", ".def", ".h", ".info", ".dvi", ".tex", ".texinfo",
    ".texi", ".txinfo", ".w", ".ch", ".web", ".sh", ".elc", ".el", NULL };
static int in_suffixes(const mk_make *m, const char *s, size_t n) {
    int i;
    for (i = 0; i < m->nsuffixes; i++) if (strlen(m->suffixes[i]) == n && strncmp(m->suffixes[i], s, n) == 0) return 1;
    return 0;
}
/* A suffix rule `.c.o:` (or single-suffix `.c:`) by the current .SUFFIXES:
   sets *split to the second suffix (or to the end). */
static int is_suffix_rule(const mk_make *m, const char *t, size_t *split) {
    size_t n = strlen(t), k;
    if (t[0] != '.' || strchr(t, '/') || strchr(t, '%')) return 0;
    if (in_suffixes(m, t, n)) { *split = n; return 1; }
    for (k = 1; k < n; k++)
        if (t[k] == '.' && in_suffixes(m, t, k) && in_suffixes(m, t + k, n - k)) { *split = k; return 1; }
    return 0;
}

/* Splits words into *list, globbing words with wildcard characters. */
static void words_to_list(const char *s, char ***list, int *n, int *cap) {
    size_t pos = 0, wn;
    const char *w;
    while ((w = next_word(s, &pos, &wn)) != NULL) {
        char *word = xstrndup(w, wn);
        glob_t g;
        if (strpbrk(word, "*?[") && glob(word, 0, NULL, &g) == 0) {
            size_t j;
            for (j = 0; j < g.gl_pathc; j++) { GROW(*list, *n, *cap); (*list)[(*n)++] = xstrdup(g.gl_pathv[j]); }
            globfree(&g);
            free(word);
        } else { GROW(*list, *n, *cap); (*list)[(*n)++] = word; }
    }
}
static void free_list(char **l, int n) { int i; for (i = 0; i < n; i++) free(l[i]); free(l); }

/* Appends v to a node's list in the arena. The capacity is 2, then the
   powers of two: full when the count is 0, or a power of two of at least 2;
   a full list moves to a block twice its size (the old one stays in the
   arena, at most as much again). */
static void add_prereq(mk_make *m, int **arr, int *n, int v) {
    if (*n == 0 || (*n >= 2 && (*n & (*n - 1)) == 0)) {
        int *g = ar_alloc(m, (size_t)(*n ? 2 * *n : 2) * sizeof *g);
        if (*n) memcpy(g, *arr, (size_t)*n * sizeof *g);
        *arr = g;
    }
    (*arr)[(*n)++] = v;
}
/* GNU make lists the prerequisites of the rule that has the recipe first
   ($< is the first of them); they are the last k added to t. */
static void move_last_to_front(node *t, int k) {
    int *tmp;
    if (k <= 0 || k >= t->npre) return;
    tmp = xrealloc(NULL, (size_t)k * sizeof *tmp);
    memcpy(tmp, t->pre + t->npre - k, (size_t)k * sizeof *tmp);
    memmove(t->pre + k, t->pre, (size_t)(t->npre - k) * sizeof *tmp);
    memcpy(t->pre, tmp, (size_t)k * sizeof *tmp);
    free(tmp);
}

static void attach_recipe(reader *r, recipe *rc) {
    int i;
    for (i = 0; i < r->nctx; i++) {
        node *t = &r->m->nodes[r->ctx_targets[i]];
        if (t->rcp && t->rcp != rc)
            fprintf(stderr, "%s:%d: warning: overriding recipe for target '%s'\n", r->file, r->line, t->name);
        t->rcp = rc;
        move_last_to_front(t, r->ctx_npre);
    }
    if (r->ctx_pattern >= 0) r->m->pats[r->ctx_pattern].rcp = rc;
}
/* Appends a line to rc, all of it in the arena (a full list moves). */
static void recipe_add(mk_make *m, recipe *rc, const char *text, size_t n, int lineno) {
    if (rc->n >= rc->cap) {                      /* most recipes have a line or two */
        int cap = rc->cap ? 2 * rc->cap : 1;
        char **l = ar_alloc(m, (size_t)cap * sizeof *l);
        int *ln = ar_alloc(m, (size_t)cap * sizeof *ln);
        if (rc->n) { memcpy(l, rc->lines, (size_t)rc->n * sizeof *l); memcpy(ln, rc->lineno, (size_t)rc->n * sizeof *ln); }
        rc->lines = l; rc->lineno = ln; rc->cap = cap;
    }
    rc->lines[rc->n] = ar_strndup(m, text, n);
    rc->lineno[rc->n++] = lineno;
}
static void add_recipe_line(reader *r, const char *text) {
    recipe *rc = r->ctx_recipe;
    if (!rc) {
        rc = ar_alloc(r->m, sizeof *rc);
        memset(rc, 0, sizeof *rc);
        rc->file = r->file;
        r->ctx_recipe = rc;
        attach_recipe(r, rc);
    }
    recipe_add(r->m, rc, text, strlen(text), r->line);
}

/* `targets: [override] [export] NAME op value`: a variable with this value
   while the targets' recipes (and those of their prerequisites) are
   expanded. A target with % makes a pattern-specific variable. := is
   expanded now, as in GNU make; = += ?= when the recipe is expanded. */
static int target_var(reader *r, char *targets, char *def) {
    mk_make *m = r->m;
    xctx x = parse_ctx(r);
    char *tt, *eq, *name, *nm_exp = NULL, *val, op = '=';
    char **tg = NULL;
    int ntg = 0, tgcap = 0, i, ovr = 0;
    r->in_rule = 0;
    r->nctx = 0; r->ctx_pattern = -1; r->ctx_recipe = NULL;
    for (;;) {
        while (is_space(*def)) def++;
        if (strncmp(def, "override", 8) == 0 && is_space(def[8])) { ovr = 1; def += 8; continue; }
        if (strncmp(def, "export", 6) == 0 && is_space(def[6])) { def += 6; continue; }
        if (strncmp(def, "private", 7) == 0 && is_space(def[7])) return perr(r, "'private' target-specific variables are not supported by this make");
        break;
    }
    eq = find_top(def, "=");
    if (!eq) return perr(r, "missing '=' in a target-specific variable");
    val = eq + 1;
    if (eq > def && (eq[-1] == '+' || eq[-1] == '?' || eq[-1] == ':' || eq[-1] == '!')) {
        op = eq[-1]; eq--;
        if (op == ':' && eq > def && eq[-1] == ':') eq--;
        if (op == '!') return perr(r, "'!=' in a target-specific variable is not supported by this make");
    }
    *eq = '\0';
    while (is_space(*val)) val++;
    nm_exp = expand_str(&x, def);
    if (!nm_exp) return -1;
    name = trim(nm_exp);
    if (!*name || strpbrk(name, " \t")) { free(nm_exp); return perr(r, "invalid variable name in a target-specific variable"); }
    tt = expand_str(&x, targets);
    if (!tt) { free(nm_exp); return -1; }
    {
        char *v = op == ':' ? expand_str(&x, val) : xstrdup(val);
        if (!v) { free(nm_exp); free(tt); return -1; }
        words_to_list(tt, &tg, &ntg, &tgcap);
        for (i = 0; i < ntg; i++) {
            tvar *tv;
            if (strchr(tg[i], '%')) {
                GROW(m->pvars, m->npvars, m->pvarcap);
                tv = &m->pvars[m->npvars++];
                tv->pat = xstrdup(tg[i]);
            } else {
                int ni = node_get(m, tg[i]);          /* may move m->nodes */
                node *n = &m->nodes[ni];
                node_x *x = nx_of(n);
                GROW(x->tvars, x->ntvars, x->tvarcap);
                tv = &x->tvars[x->ntvars++];
                tv->pat = NULL;
            }
            tv->name = xstrdup(name); tv->value = xstrdup(v); tv->op = op; tv->ovr = ovr;
        }
        free(v);
    }
    free_list(tg, ntg); free(tt); free(nm_exp);
    return 0;
}

/* `targets: target-pattern: prereq-patterns`: an explicit rule for each
   target, its prerequisites the patterns with % replaced by its stem. */
static int static_pattern_rule(reader *r, char *targets, char *tpat_text, char *colon2, char *inline_cmd) {
    mk_make *m = r->m;
    xctx x = parse_ctx(r);
    char *tt = NULL, *tp = NULL, *pp = NULL, *bar, **tg = NULL, **pre = NULL, **oo = NULL;
    int ntg = 0, tgcap = 0, npre = 0, precap = 0, noo = 0, oocap = 0, i, j, rc = 0;
    *colon2 = '\0';
    r->nctx = 0; r->ctx_npre = 0; r->ctx_pattern = -1; r->ctx_recipe = NULL; r->in_rule = 1;
    tt = expand_str(&x, targets);
    tp = tt ? expand_str(&x, tpat_text) : NULL;
    pp = tp ? expand_str(&x, colon2 + 1) : NULL;
    if (!pp) { rc = -1; goto done; }
    if (!strchr(tp, '%')) { rc = perr(r, "target pattern contains no '%%'"); goto done; }
    bar = strchr(pp, '|');
    if (bar) { *bar = '\0'; words_to_list(bar + 1, &oo, &noo, &oocap); }
    words_to_list(pp, &pre, &npre, &precap);
    words_to_list(tt, &tg, &ntg, &tgcap);
    {
        char *pat = trim(tp);
        strbuf b = {0};
        for (i = 0; i < ntg; i++) {
            size_t so, sn;
            int ti;
            node *t;
            if (!pat_match(pat, tg[i], strlen(tg[i]), &so, &sn)) {
                fprintf(stderr, "%s:%d: target '%s' doesn't match the target pattern\n", r->file, r->line, tg[i]);
                continue;
            }
            ti = node_get(m, tg[i]);
            t = &m->nodes[ti];
            t->is_target = 1; t->mentioned = 1;
            free(nx_of(t)->stem); t->x->stem = xstrndup(tg[i] + so, sn);
            if (m->default_goal < 0 && (tg[i][0] != '.' || strchr(tg[i], '/'))) m->default_goal = ti;
            GROW(r->ctx_targets, r->nctx, r->ctxcap);
            r->ctx_targets[r->nctx++] = ti;
            for (j = 0; j < npre + noo; j++) {
                int pi;
                b.len = 0; sb_add(&b, "", 0);
                pat_subst(&b, j < npre ? pre[j] : oo[j - npre], tg[i] + so, sn);
                if (!b.len) continue;                  /* "%" with an empty stem names nothing */
                pi = node_get(m, b.s);
                m->nodes[pi].mentioned = 1;
                t = &m->nodes[ti];
                if (j < npre) add_prereq(r->m, &t->pre, &t->npre, pi);
                else add_prereq(r->m, &t->oo, &t->noo, pi);
            }
        }
        free(b.s);
    }
    r->ctx_npre = npre;
    if (inline_cmd) {
        while (is_space(*inline_cmd)) inline_cmd++;
        add_recipe_line(r, inline_cmd);
    }
done:
    free_list(tg, ntg); free_list(pre, npre); free_list(oo, noo);
    free(tt); free(tp); free(pp);
    return rc;
}

static int rule_line(reader *r, char *line, char *colon, int dcolon) {
    mk_make *m = r->m;
    xctx x = parse_ctx(r);
    char *tgt_text, *pre_text, *semi, *inline_cmd = NULL, *bar;
    char **tg = NULL, **pre = NULL, **oo = NULL;
    int ntg = 0, tgcap = 0, npre = 0, precap = 0, noo = 0, oocap = 0, i, j, rc = 0, npat = 0;
    char *eq, *colon2;
    *colon = '\0';
    eq = find_top(colon + 1, "=");
    semi = find_top(colon + 1, ";");
    if (eq && (!semi || eq < semi)) return target_var(r, line, colon + 1);
    if (semi) { *semi = '\0'; inline_cmd = semi + 1; }
    if ((colon2 = find_top(colon + 1, ":")) != NULL) return static_pattern_rule(r, line, colon + 1, colon2, inline_cmd);
    tgt_text = expand_str(&x, line);
    if (!tgt_text) return -1;
    pre_text = expand_str(&x, colon + 1);
    if (!pre_text) { free(tgt_text); return -1; }
    bar = strchr(pre_text, '|');
    if (bar) { *bar = '\0'; words_to_list(bar + 1, &oo, &noo, &oocap); }
    words_to_list(pre_text, &pre, &npre, &precap);
    words_to_list(tgt_text, &tg, &ntg, &tgcap);
    r->nctx = 0; r->ctx_npre = 0; r->ctx_pattern = -1; r->ctx_recipe = NULL; r->in_rule = 1;
    if (ntg == 0) { rc = perr(r, "missing target"); goto done; }
    for (i = 0; i < ntg; i++) if (strchr(tg[i], '%')) npat++;
    if (npat && npat != ntg) { rc = perr(r, "mixed implicit and normal rules"); goto done; }
    if (npat > 1) { rc = perr(r, "pattern rules with several targets are not supported by this make"); goto done; }
    if (npat) {
        pattern *p;
        GROW(m->pats, m->npats, m->patcap);
        p = &m->pats[m->npats];
        memset(p, 0, sizeof *p);
        p->target = tg[0]; tg[0] = NULL;
        p->pre = pre; p->npre = npre; pre = NULL; npre = 0;
        p->oo = oo; p->noo = noo; oo = NULL; noo = 0;
        p->file = r->file; p->line = r->line;
        r->ctx_pattern = m->npats++;
    } else {
        for (i = 0; i < npre; i++) if (strchr(pre[i], '%')) { rc = perr(r, "'%%' in a prerequisite of a rule that is not a pattern rule (%s)", pre[i]); goto done; }
        for (i = 0; i < ntg; i++) {
            const char *t = tg[i];
            int ti;
            size_t split;
            if (strcmp(t, ".PHONY") == 0 || strcmp(t, ".SILENT") == 0 || strcmp(t, ".IGNORE") == 0) {
                if (!npre && t[1] == 'S') m->silent_all = 1;
                if (!npre && t[1] == 'I') m->ignore_all = 1;
                for (j = 0; j < npre; j++) {
                    int k = node_get(m, pre[j]);
                    if (t[1] == 'P') m->nodes[k].phony = 1; else if (t[1] == 'S') m->nodes[k].silent = 1; else m->nodes[k].ignore = 1;
                }
                continue;
            }
            if (strcmp(t, ".SUFFIXES") == 0) {
                if (!npre) { free_list(m->suffixes, m->nsuffixes); m->suffixes = NULL; m->nsuffixes = m->suffixcap = 0; }
                for (j = 0; j < npre; j++) { GROW(m->suffixes, m->nsuffixes, m->suffixcap); m->suffixes[m->nsuffixes++] = xstrdup(pre[j]); }
                continue;
            }
            if (strcmp(t, ".NOTPARALLEL") == 0) { m->notparallel = 1; continue; }
            if (strcmp(t, ".DELETE_ON_ERROR") == 0) { m->delete_on_error = 1; continue; }
            if (strcmp(t, ".POSIX") == 0) { m->posix = 1; continue; }
            if (strcmp(t, ".EXPORT_ALL_VARIABLES") == 0) { m->export_all = 1; continue; }
            if (strcmp(t, ".PRECIOUS") == 0 || strcmp(t, ".SECONDARY") == 0 || strcmp(t, ".INTERMEDIATE") == 0 ||
                strcmp(t, ".NOTINTERMEDIATE") == 0 || strcmp(t, ".LOW_RESOLUTION_TIME") == 0) {
                for (j = 0; j < npre; j++) { int k = node_get(m, pre[j]); m->nodes[k].precious = 1; }
                continue;                          /* intermediate files are never deleted here */
            }
            if (npre == 0 && noo == 0 && is_suffix_rule(m, t, &split)) {   /* .c.o: is %.o: %.c */
                pattern *p;
                strbuf tp = {0}, pp = {0};
                sb_putc(&tp, '%'); sb_puts(&tp, t + split);
                sb_putc(&pp, '%'); sb_add(&pp, t, split);
                GROW(m->pats, m->npats, m->patcap);
                p = &m->pats[m->npats];
                memset(p, 0, sizeof *p);
                p->target = sb_take(&tp);
                p->pre = xrealloc(NULL, sizeof *p->pre); p->pre[0] = sb_take(&pp); p->npre = 1;
                p->file = r->file; p->line = r->line; p->suffix = 1;
                r->ctx_pattern = m->npats++;
                continue;
            }
            if (strcmp(t, ".DEFAULT") != 0 && t[0] == '.' && t[1] >= 'A' && t[1] <= 'Z' && !strchr(t, '/') && !strchr(t + 1, '.')) {
                size_t k;
                for (k = 1; t[k] && ((t[k] >= 'A' && t[k] <= 'Z') || t[k] == '_'); k++) {}
                if (!t[k]) { rc = perr(r, "special target '%s' is not supported by this make", t); goto done; }
            }
            ti = node_get(m, t);
            if (m->nodes[ti].is_target && m->nodes[ti].dc_main != dcolon) { rc = perr(r, "target file '%s' has both : and :: entries", t); goto done; }
            m->nodes[ti].is_target = 1; m->nodes[ti].mentioned = 1;
            if (m->default_goal < 0 && (t[0] != '.' || strchr(t, '/'))) m->default_goal = ti;
            if (dcolon) {
                /* each :: rule is a node of its own (same file name), a
                   prerequisite of the target's node, in the order written */
                char key[32];
                int si;
                node *sub;
                m->nodes[ti].dc_main = 1;
                snprintf(key, sizeof key, "\001%d", nx_of(&m->nodes[ti])->ndc++);
                {
                    strbuf k = {0};
                    sb_puts(&k, t); sb_puts(&k, key);
                    si = node_get(m, k.s);
                    free(k.s);
                }
                sub = &m->nodes[si];
                sub->name = ar_strndup(m, t, strlen(t));   /* the key in the map stays the alias */
                sub->is_target = 1; sub->mentioned = 1; sub->dcolon = 1;
                add_prereq(m, &m->nodes[ti].pre, &m->nodes[ti].npre, si);
                ti = si;
            }
            GROW(r->ctx_targets, r->nctx, r->ctxcap);
            r->ctx_targets[r->nctx++] = ti;
        }
        for (i = 0; i < r->nctx; i++) {
            for (j = 0; j < npre; j++) {
                int pi = node_get(m, pre[j]);
                node *t = &m->nodes[r->ctx_targets[i]];
                m->nodes[pi].mentioned = 1;
                add_prereq(r->m, &t->pre, &t->npre, pi);
            }
            for (j = 0; j < noo; j++) {
                int pi = node_get(m, oo[j]);
                node *t = &m->nodes[r->ctx_targets[i]];
                m->nodes[pi].mentioned = 1;
                add_prereq(r->m, &t->oo, &t->noo, pi);
            }
        }
        r->ctx_npre = npre;
    }
    if (inline_cmd) {
        while (is_space(*inline_cmd)) inline_cmd++;
        add_recipe_line(r, inline_cmd);
    }
done:
    free_list(tg, ntg); free_list(pre, npre); free_list(oo, noo);
    free(tgt_text); free(pre_text);
    return rc;
}

static int refused_directive(reader *r, const char *line) {
    static const char *const words[] = { "endef", "private", "load", NULL };
    size_t n = 0;
    int i;
    while (line[n] && !is_space(line[n])) n++;
    for (i = 0; words[i]; i++)
        if (strlen(words[i]) == n && strncmp(words[i], line, n) == 0)
            return perr(r, "'%s' is not supported by this make", words[i]);
    return 0;
}

static int parse_line(reader *r, char *line) {
    char *p, *sep;
    int c, ovr = 0, exp = 0;
    strip_comment(line);
    for (p = line; is_space(*p); p++) {}
    if (!*p) return 0;
    if ((c = conditional(r, p)) != 0) return c < 0 ? -1 : 0;
    if (!live(r)) return 0;
    if ((strncmp(p, "include", 7) == 0 && (is_space(p[7]) || !p[7])) ||
        (strncmp(p, "-include", 8) == 0 && (is_space(p[8]) || !p[8])) ||
        (strncmp(p, "sinclude", 8) == 0 && (is_space(p[8]) || !p[8]))) {
        int optional = p[0] != 'i';
        r->in_rule = 0;
        return do_include(r, p + (optional ? 8 : 7), optional);
    }
    for (;;) {                                   /* override / export / unexport */
        int kw = strncmp(p, "override", 8) == 0 && is_space(p[8]) ? 8 :
                 strncmp(p, "export", 6) == 0 && (is_space(p[6]) || !p[6]) ? 6 :
                 strncmp(p, "unexport", 8) == 0 && (is_space(p[8]) || !p[8]) ? -8 : 0;
        char *rest;
        if (!kw) break;
        rest = p + (kw < 0 ? -kw : kw);
        while (is_space(*rest)) rest++;
        if (kw == 8) { ovr = 1; p = rest; continue; }
        sep = find_top(rest, "=");
        if (kw == 6 && sep) { exp = 1; p = rest; continue; }
        if (ovr) return perr(r, "'override' without an assignment");
        {   /* export NAMES / unexport NAMES: the variables' export flag */
            xctx x = parse_ctx(r);
            char *names = expand_str(&x, rest);
            size_t pos = 0, wn;
            const char *w;
            if (!names) return -1;
            if (!*trim(names)) { r->m->export_all = kw == 6; free(names); r->in_rule = 0; return 0; }
            while ((w = next_word(names, &pos, &wn)) != NULL) {
                var *v = var_find(r->m, w, wn);
                if (!v) { char *nm = xstrndup(w, wn); v = var_set(r->m, nm, "", 0, O_FILE); free(nm); v->undefined = 1; }
                v->exported = kw == 6;
            }
            free(names);
            r->in_rule = 0;
            return 0;
        }
    }
    if ((strncmp(p, "define", 6) == 0 && is_space(p[6])) || (strncmp(p, "undefine", 8) == 0 && is_space(p[8]))) {
        int und = p[0] == 'u';
        xctx x = parse_ctx(r);
        char *rest = p + (und ? 8 : 6), *e, *name, *end;
        const char *op = "=";
        size_t k;
        r->in_rule = 0;
        while (is_space(*rest)) rest++;
        k = strlen(rest);                                          /* a trailing operator */
        while (k && is_space(rest[k - 1])) k--;
        rest[k] = '\0';
        if (!und) {
            static const char *const ops[] = { "::=", ":=", "+=", "?=", "!=", "=" };
            int oi;
            for (oi = 0; oi < 6; oi++) {
                size_t on = strlen(ops[oi]);
                if (k >= on && strcmp(rest + k - on, ops[oi]) == 0) { op = ops[oi]; rest[k - on] = '\0'; break; }
            }
        }
        e = expand_str(&x, rest);
        if (!e) return -1;
        name = trim(e);
        for (end = name; *end && !is_space(*end); end++) {}
        if (!*name || *end) { free(e); return perr(r, "invalid variable name in '%s'", und ? "undefine" : "define"); }
        if (und) {
            var *v = var_find(r->m, name, strlen(name));
            if (v && (ovr || (v->origin != O_CMDLINE && v->origin != O_OVERRIDE))) { v->value[0] = '\0'; v->undefined = 1; v->simple = 0; }
            free(e);
            return 0;
        }
        r->def_name = xstrdup(name); r->def_op = op; r->def_ovr = ovr; r->def_exp = exp;
        free(e);
        return 0;
    }
    if (strncmp(p, "vpath", 5) == 0 && (is_space(p[5]) || !p[5])) {   /* vpath [pattern [dirs]] */
        xctx x = parse_ctx(r);
        char *e = expand_str(&x, p + 5);
        size_t pos = 0, wn;
        const char *w;
        mk_make *m = r->m;
        r->in_rule = 0;
        if (!e) return -1;
        w = next_word(e, &pos, &wn);
        if (!w || !*trim(e + pos)) {               /* clears all, or a pattern's */
            int i, k = 0;
            for (i = 0; i < m->nvpaths; i++) {
                if (!w || (strlen(m->vpaths[i].pat) == wn && strncmp(m->vpaths[i].pat, w, wn) == 0)) { free(m->vpaths[i].pat); free(m->vpaths[i].dirs); }
                else m->vpaths[k++] = m->vpaths[i];
            }
            m->nvpaths = k;
        } else {
            GROW(m->vpaths, m->nvpaths, m->vpathcap);
            m->vpaths[m->nvpaths].pat = xstrndup(w, wn);
            m->vpaths[m->nvpaths++].dirs = xstrdup(trim(e + pos));
        }
        free(e);
        return 0;
    }
    if (refused_directive(r, p) != 0) return -1;
    sep = find_top(p, ":=");
    if (sep && *sep == '=') {
        r->in_rule = 0;
        if (sep > p && (sep[-1] == '+' || sep[-1] == '?' || sep[-1] == '!')) {
            char op[3] = { sep[-1], '=', '\0' };
            return assignment(r, p, sep - 1, op, ovr, exp);
        }
        return assignment(r, p, sep, "=", ovr, exp);
    }
    if (sep && *sep == ':') {
        if (sep[1] == '=') { r->in_rule = 0; return assignment(r, p, sep, ":=", ovr, exp); }
        if (sep[1] == ':' && sep[2] == '=') { r->in_rule = 0; return assignment(r, p, sep, "::=", ovr, exp); }
        if (ovr || exp) return perr(r, "'%s' before a rule", ovr ? "override" : "export");
        if (sep[1] == ':') { *sep = ' '; return rule_line(r, p, sep + 1, 1); }   /* t:: a */
        return rule_line(r, p, sep, 0);
    }
    {
        xctx x = parse_ctx(r);
        char *e = expand_str(&x, p);
        int blank;
        if (!e) return -1;
        blank = *trim(e) == '\0';
        free(e);
        if (blank) return 0;                          /* e.g. a line that is only $(info ...) */
    }
    if (strncmp(line, "        ", 8) == 0) return perr(r, "missing separator (did you mean TAB instead of 8 spaces?)");
    return perr(r, "missing separator");
}

static int parse_reader(reader *rp);
static void pattern_key(const pattern *p, strbuf *key) {   /* "target pre..." */
    int i;
    sb_puts(key, p->target);
    for (i = 0; i < p->npre; i++) { sb_putc(key, ' '); sb_puts(key, p->pre[i]); }
}
static int parse_buffer_file(mk_make *m, const char *file, const char *buf, size_t len) {
    reader r;
    memset(&r, 0, sizeof r);
    r.m = m; r.file = remember_file(m, file); r.buf = buf; r.len = len;
    {   /* MAKEFILE_LIST: every file read, in order */
        const var *ml = var_find(m, "MAKEFILE_LIST", 13);
        strbuf b = {0};
        if (ml && ml->value[0]) { sb_puts(&b, ml->value); sb_putc(&b, ' '); }
        sb_puts(&b, file);
        var_set(m, "MAKEFILE_LIST", b.s, 1, O_FILE);
        free(b.s);
    }
    return parse_reader(&r);
}
/* $(eval text): the text read as Makefile lines, where the $(eval) is. */
static int eval_text(xctx *x, const char *text) {
    reader r;
    int rc;
    if (x->rd->m->eval_depth >= 64) return set_error(x->err, x->file, x->line, "$(eval) nested more than 64 deep");
    memset(&r, 0, sizeof r);
    r.m = x->rd->m; r.file = x->rd->file; r.buf = text; r.len = strlen(text);
    r.next_line = x->line - 1;
    x->rd->in_rule = 0;
    r.m->eval_depth++;
    rc = parse_reader(&r);
    r.m->eval_depth--;
    return rc;
}

/* The body of `define NAME [op]` up to its `endef` (nested defines
   counted), assigned as `NAME op body`. */
static int read_define(reader *r) {
    strbuf body = {0}, line = {0};
    const char *s;
    size_t n;
    int depth = 1, rc, start = r->line;
    sb_add(&body, "", 0);
    while (read_physical(r, &s, &n)) {
        size_t i = 0, k;
        r->line = r->next_line;
        while (i < n && is_space(s[i])) i++;
        for (k = i; k < n && !is_space(s[k]) && s[k] != '#'; k++) {}
        if (k - i == 5 && strncmp(s + i, "endef", 5) == 0 && --depth == 0) break;
        if (k - i == 6 && strncmp(s + i, "define", 6) == 0) depth++;
        if (body.len) sb_putc(&body, '\n');
        sb_add(&body, s, n);
    }
    if (depth) { r->line = start; free(body.s); free(r->def_name); r->def_name = NULL; return perr(r, "missing 'endef', unterminated 'define'"); }
    sb_puts(&line, r->def_name); sb_putc(&line, ' ');
    {
        size_t at = line.len;
        sb_puts(&line, r->def_op); sb_add(&line, body.s, body.len);
        rc = assignment(r, line.s, line.s + at, r->def_op, r->def_ovr, r->def_exp);
    }
    free(r->def_name); r->def_name = NULL;
    free(body.s); free(line.s);
    return rc;
}

static int parse_reader(reader *rp) {
    reader r = *rp;
    strbuf line = {0};
    const char *buf = r.buf;
    size_t len = r.len;
    int is_recipe, rc = 0, first_pattern = r.m->npats;
    mk_make *m = r.m;
    r.ctx_pattern = -1;
    while (rc == 0 && read_logical(&r, &line, &is_recipe)) {
        if (is_recipe) {
            const char *cmd = line.s + 1;
            if (!live(&r)) continue;
            if (r.nctx == 0 && r.ctx_pattern < 0) continue;   /* .PHONY and friends */
            add_recipe_line(&r, cmd);
            continue;
        }
        if (line.s[0] == '\t' && live(&r)) {
            const char *q = line.s;
            while (is_space(*q)) q++;
            if (*q && *q != '#') {                     /* a tab line outside a rule */
                char *copy = xstrdup(line.s);
                char *t = copy;
                strip_comment(t);
                t = trim(t);
                if (*t && conditional(&r, t) == 0) { free(copy); rc = perr(&r, "recipe commences before first target"); break; }
                free(copy);
                continue;
            }
        }
        rc = parse_line(&r, line.s);
        if (rc == 0 && r.def_name) rc = read_define(&r);
    }
    if (rc == 0 && r.nconds) {                   /* GNU make names the line after the last */
        r.line = r.next_line + (len > 0 && buf[len - 1] == '\n');
        rc = perr(&r, "missing 'endif'");
    }
    /* a pattern rule without a recipe cancels the rules (built-in or
       earlier) with the same target and prerequisites */
    while (rc == 0 && first_pattern < m->npats) {
        pattern *p = &m->pats[first_pattern];
        strbuf key = {0};
        int k, w = 0;
        if (p->rcp) { first_pattern++; continue; }
        pattern_key(p, &key);
        GROW(m->cancels, m->ncancels, m->cancelcap);
        m->cancels[m->ncancels++] = sb_take(&key);
        for (k = 0; k < m->npats; k++) {               /* drop it and those it cancels */
            strbuf k2 = {0};
            int drop;
            pattern_key(&m->pats[k], &k2);
            drop = strcmp(k2.s, m->cancels[m->ncancels - 1]) == 0;
            free(k2.s);
            if (drop) { free(m->pats[k].target); free_list(m->pats[k].pre, m->pats[k].npre); free_list(m->pats[k].oo, m->pats[k].noo); if (k < first_pattern) first_pattern--; }
            else m->pats[w++] = m->pats[k];
        }
        m->npats = w;
    }
    free(line.s); free(r.ctx_targets); free(r.conds); free(r.def_name);
    return rc;
}

/* ------------------------------------------------------------ public API -- */
/* Creates an empty make (built-in variables and the built-in %.o: %.c rule). */
mk_make *mk_new(void);
/* Parses a Makefile held in memory (name is used in messages) into m's rule
   graph. Returns 0, or -1 with mk_error(m) set to "name:line: *** ...  Stop.".
   Never exits except when out of memory. Call from one thread at a time. */
int mk_parse_buffer(mk_make *m, const char *name, const char *text, size_t len);
/* The same for a file; a missing file or a directory is an error. */
int mk_parse_file(mk_make *m, const char *path);
/* The last error message ("" if none). */
const char *mk_error(const mk_make *m);
/* Sets a command-line variable (VAR=value): file assignments to it are ignored. */
void mk_set_cmdline_var(mk_make *m, const char *name, const char *value);
/* Frees m and everything it holds. */
void mk_free(mk_make *m);

/* GNU make 4.3's default variables for C, C++, assembler, lex and yacc, as
   `make -p` prints them (origin "default"). */
static const char *const default_vars[][2] = {
    {"CC", "cc"}, {"CXX", "g++"}, {"AS", "as"}, {"LD", "ld"}, {"CPP", "$(CC) -E"}, {"AR", "ar"},
    {"ARFLAGS", "rv"}, {"RM", "rm -f"}, {"LEX", "lex"}, {"YACC", "yacc"},
    {"OUTPUT_OPTION", "-o $@"},
    {"COMPILE.c", "$(CC) $(CFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c"},
    {"COMPILE.cc", "$(CXX) $(CXXFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c"},
    {"COMPILE.cpp", "$(COMPILE.cc)"}, {"COMPILE.C", "$(COMPILE.cc)"},
    {"COMPILE.s", "$(AS) $(ASFLAGS) $(TARGET_MACH)"},
    {"COMPILE.S", "$(CC) $(ASFLAGS) $(CPPFLAGS) $(TARGET_MACH) -c"},
    {"PREPROCESS.S", "$(CC) -E $(CPPFLAGS)"},
    {"LINK.o", "$(CC) $(LDFLAGS) $(TARGET_ARCH)"},
    {"LINK.c", "$(CC) $(CFLAGS) $(CPPFLAGS) $(LDFLAGS) $(TARGET_ARCH)"},
    {"LINK.cc", "$(CXX) $(CXXFLAGS) $(CPPFLAGS) $(LDFLAGS) $(TARGET_ARCH)"},
    {"LINK.cpp", "$(LINK.cc)"}, {"LINK.C", "$(LINK.cc)"},
    {"LINK.s", "$(CC) $(ASFLAGS) $(LDFLAGS) $(TARGET_MACH)"},
    {"LINK.S", "$(CC) $(ASFLAGS) $(CPPFLAGS) $(LDFLAGS) $(TARGET_MACH)"},
    {"LEX.l", "$(LEX) $(LFLAGS) -t"}, {"YACC.y", "$(YACC) $(YFLAGS)"},
    {"", ""} };
mk_make *mk_new(void) {
    int i;
    mk_make *m = xrealloc(NULL, sizeof *m);
    memset(m, 0, sizeof *m);
    m->default_goal = -1;
    for (i = 0; default_vars[i][0][0]; i++) var_set(m, default_vars[i][0], default_vars[i][1], 0, O_DEFAULT);
    var_set(m, "SHELL", "/bin/sh", 1, O_FILE);                  /* never the environment's */
    var_set(m, ".SHELLFLAGS", "-c", 1, O_DEFAULT);
    var_set(m, "MAKE_VERSION", "4.3", 1, O_DEFAULT);
    for (i = 0; default_suffixes[i]; i++) { GROW(m->suffixes, m->nsuffixes, m->suffixcap); m->suffixes[m->nsuffixes++] = xstrdup(default_suffixes[i]); }
    return m;
}
void mk_set_cmdline_var(mk_make *m, const char *name, const char *value) { var_set(m, name, value, 0, O_CMDLINE)->exported = 1; }
const char *mk_error(const mk_make *m) { return m->err.s ? m->err.s : ""; }
int mk_parse_buffer(mk_make *m, const char *name, const char *text, size_t len) {
    return parse_buffer_file(m, name, text, len);
}
int mk_parse_file(mk_make *m, const char *path) {
    char *text;
    size_t len;
    int rc;
    if (read_whole_file(path, &text, &len, &m->err, NULL, 0) != 0) return -1;
    rc = parse_buffer_file(m, path, text, len);
    free(text);
    return rc;
}
void mk_free(mk_make *m) {
    int i;
    if (!m) return;
    for (i = 0; i < m->nnodes; i++) {
        node *n = &m->nodes[i];
        int k;
        if (!n->x) continue;
        free(n->x->stem); free(n->x->fname);
        for (k = 0; k < n->x->ntvars; k++) { free(n->x->tvars[k].name); free(n->x->tvars[k].value); }
        free(n->x->tvars); free(n->x);
    }
    for (i = 0; i < m->npvars; i++) { free(m->pvars[i].pat); free(m->pvars[i].name); free(m->pvars[i].value); }
    free(m->pvars);
    free_list(m->suffixes, m->nsuffixes);
    free_list(m->cancels, m->ncancels);
    for (i = 0; i < m->nvpaths; i++) { free(m->vpaths[i].pat); free(m->vpaths[i].dirs); }
    free(m->vpaths);
    for (i = 0; i < m->nvars; i++) { free(m->vars[i].name); free(m->vars[i].value); }
    for (i = 0; i < m->npats; i++) { free(m->pats[i].target); free_list(m->pats[i].pre, m->pats[i].npre); free_list(m->pats[i].oo, m->pats[i].noo); }
    while (m->arena) { arena_chunk *c = m->arena; m->arena = c->next; free(c); }
    for (i = 0; i < m->nfiles; i++) free(m->files[i]);
    for (i = 0; i < m->nminc; i++) { free(m->minc[i].name); free(m->minc[i].msg); }
    free(m->minc);
    free(m->nodes); free(m->node_map.slots);
    free(m->vars); free(m->var_map.slots);
    free(m->pats); free(m->files); free(m->err.s);
    free(m);
}

/* Everything below runs a build; a harness that only parses leaves it out. */
#ifndef MAKE_NO_MAIN
/* GNU make 4.3's built-in rules for C, C++, assembler, lex and yacc (as
   `make -p` lists them), after the Makefile's own rules; -r leaves them out. */
static const char *const builtin_rules[][3] = {
    {"%.o", "%.c", "$(COMPILE.c) $(OUTPUT_OPTION) $<"},
    {"%.o", "%.cc", "$(COMPILE.cc) $(OUTPUT_OPTION) $<"},
    {"%.o", "%.C", "$(COMPILE.C) $(OUTPUT_OPTION) $<"},
    {"%.o", "%.cpp", "$(COMPILE.cpp) $(OUTPUT_OPTION) $<"},
    {"%.o", "%.s", "$(COMPILE.s) -o $@ $<"},
    {"%.o", "%.S", "$(COMPILE.S) -o $@ $<"},
    {"%", "%.o", "$(LINK.o) $^ $(LOADLIBES) $(LDLIBS) -o $@"},
    {"%", "%.c", "$(LINK.c) $^ $(LOADLIBES) $(LDLIBS) -o $@"},
    {"%", "%.cc", "$(LINK.cc) $^ $(LOADLIBES) $(LDLIBS) -o $@"},
    {"%", "%.C", "$(LINK.C) $^ $(LOADLIBES) $(LDLIBS) -o $@"},
    {"%", "%.cpp", "$(LINK.cpp) $^ $(LOADLIBES) $(LDLIBS) -o $@"},
    {"%", "%.s", "$(LINK.s) $^ $(LOADLIBES) $(LDLIBS) -o $@"},
    {"%", "%.S", "$(LINK.S) $^ $(LOADLIBES) $(LDLIBS) -o $@"},
    {"%.s", "%.S", "$(PREPROCESS.S) $< > $@"},
    {"%.c", "%.y", "$(YACC.y) $<\nmv -f y.tab.c $@"},
    {"%.c", "%.l", "@$(RM) $@\n$(LEX.l) $< > $@"},
    {"", "", ""} };
static void add_builtin_rules(mk_make *m) {
    int i, k;
    for (i = 0; builtin_rules[i][0][0]; i++) {
        pattern *p;
        recipe *rc;
        const char *t = builtin_rules[i][2], *nl;
        strbuf key = {0};
        sb_puts(&key, builtin_rules[i][0]); sb_putc(&key, ' '); sb_puts(&key, builtin_rules[i][1]);
        for (k = 0; k < m->ncancels && strcmp(m->cancels[k], key.s) != 0; k++) {}
        free(key.s);
        if (k < m->ncancels) continue;             /* cancelled by the Makefile */
        rc = ar_alloc(m, sizeof *rc);
        memset(rc, 0, sizeof *rc);
        rc->file = "<builtin>";
        for (; t; t = nl ? nl + 1 : NULL) {
            nl = strchr(t, '\n');
            recipe_add(m, rc, t, nl ? (size_t)(nl - t) : strlen(t), 0);
        }
        GROW(m->pats, m->npats, m->patcap);
        p = &m->pats[m->npats++];
        memset(p, 0, sizeof *p);
        p->target = xstrdup(builtin_rules[i][0]);
        p->pre = xrealloc(NULL, sizeof *p->pre); p->pre[0] = xstrdup(builtin_rules[i][1]); p->npre = 1;
        p->rcp = rc; p->file = "<builtin>"; p->builtin = 1;
    }
}

/* ================================================================= planning */
static int file_exists(const char *path) { struct stat st; return stat(path, &st) == 0; }

/* While a plan is made, whether a file exists is read from each directory's
   listing, read once (as GNU make does): the built-in rules ask about
   foo.o foo.c foo.cc ... for every file, and a stat each made a no-op
   build over 10,000 files 3x slower. Names with ./ or // are stat'ed. */
static strmap dc_names, dc_dirs;            /* "dir/name" (or "name"), dirs read */
static char **dc_blocks; static int dc_nblocks, dc_blockcap;   /* the keys, packed */
static size_t dc_used, dc_cap;              /* in the last block */
static int dc_on;
/* Keeps s[0..n) + t[0..tn) (t may be NULL when tn is 0) as one string. */
static const char *dc_keep2(const char *s, size_t n, const char *t, size_t tn) {
    char *d;
    if (!dc_nblocks || dc_used + n + tn + 1 > dc_cap) {
        dc_cap = n + tn + 1 > 65536 ? n + tn + 1 : 65536;
        dc_used = 0;
        GROW(dc_blocks, dc_nblocks, dc_blockcap);
        dc_blocks[dc_nblocks++] = xrealloc(NULL, dc_cap);
    }
    d = dc_blocks[dc_nblocks - 1] + dc_used;
    memcpy(d, s, n);
    if (tn) memcpy(d + n, t, tn);
    d[n + tn] = '\0';
    dc_used += n + tn + 1;
    return d;
}
static const char *dc_keep(const char *s, size_t n) { return dc_keep2(s, n, NULL, 0); }
/* Whether path (len chars, hash h) exists, from its directory's listing: 1
   or 0; -1 where the listing cannot say (a name with ./ or //, or, unless
   read_dir, a directory not read yet). */
static strbuf dc_last_dir; static int dc_last_ok;   /* the directory asked about last */
static int dc_answer_h(const char *path, size_t len, unsigned h, int read_dir) {
    size_t dn = 0, i;
    int slash = 0;
    if (!dc_on || !len || path[len - 1] == '/') return -1;
    for (i = 0; i < len; i++)                    /* "//", "/./", "./" at the start */
        if (path[i] == '/') {
            if (path[i + 1] == '/' || (i >= 1 && path[i - 1] == '.' && (i == 1 || path[i - 2] == '/'))) return -1;
            dn = i; slash = 1;
        }
    if (slash && dn == 0) return -1;             /* "/name" */
    if (!(dc_last_ok && dn == dc_last_dir.len && memcmp(path, dc_last_dir.s, dn) == 0)) {
        int k = map_get(&dc_dirs, path, dn);
        if (k < 0) {
            DIR *d;
            struct dirent *e;
            const char *dirkey;
            if (!read_dir) return -1;
            dirkey = dc_keep(path, dn);
            map_put(&dc_dirs, dirkey, 1);
            d = opendir(dn ? dirkey : ".");
            /* a directory's names are distinct, and no two directories read
               give the same key (the key starts with the directory as named,
               and its '/', which path has at dn) */
            while (d && (e = readdir(d)) != NULL) {
                size_t en = strlen(e->d_name);
                const char *key = dc_keep2(path, dn ? dn + 1 : 0, e->d_name, en);
                map_put_h(&dc_names, key, hash_str(key, (dn ? dn + 1 : 0) + en), 1);
            }
            if (d) closedir(d);
        }
        dc_last_dir.len = 0; sb_add(&dc_last_dir, path, dn); dc_last_ok = 1;
    }
    return map_get_h(&dc_names, path, len, h) >= 0;
}
static int dc_answer(const char *path, int read_dir) {
    size_t len = strlen(path);
    return dc_answer_h(path, len, hash_str(path, len), read_dir);
}
static int cached_exists(const char *path) { int r = dc_answer(path, 1); return r >= 0 ? r : file_exists(path); }
static void dc_clear(void) {
    int i;
    for (i = 0; i < dc_nblocks; i++) free(dc_blocks[i]);
    free(dc_blocks); dc_blocks = NULL; dc_nblocks = dc_blockcap = 0; dc_used = dc_cap = 0;
    free(dc_names.slots); free(dc_dirs.slots);
    memset(&dc_names, 0, sizeof dc_names); memset(&dc_dirs, 0, sizeof dc_dirs);
    free(dc_last_dir.s); memset(&dc_last_dir, 0, sizeof dc_last_dir); dc_last_ok = 0;
    dc_on = 0;
}

/* THE FILES' TIMES, READ AHEAD. A run over many files spends much of its
   time in stat (an up-to-date build of 10,000 targets: 20,000 stats, over a
   third of the run). So build starts one thread that stats every file of
   the graph, from the last node back, while this thread plans, pushes the
   ops and runs them; a rule then takes its files' times from that
   cache instead of stat'ing them itself. The cache is good only while
   nothing make started could have changed a file: every child (a command,
   or $(shell)) first bumps files_touched, and from then on the cache is
   not used (the thread stops; the rules stat as before). That makes the
   times exactly those a stat of its own would have read at that moment: a
   no-op run, and the run up to its first command, read each file once, on
   the other core. GNU make too reads a file's time once and keeps it.
   Each file is stat'ed once, by whichever thread claims it first: the
   reading thread walks the nodes from the last, this one needs them from
   the first, so the two meet once, wherever the work divides, instead of
   racing for the same files (a file both reach at that moment is stat'ed
   by both).
   Only for graphs of at least STAT_AHEAD_MIN files on a machine with more
   than one core, and not through vpath (a node's file may change with the
   search). */
#define STAT_AHEAD_MIN 1000
enum { SA_FREE, SA_CLAIMED, SA_EXISTS, SA_MISSING };
static struct {
    const mk_make *m;            /* the graph whose nodes [0, n) are read */
    char **names;                /* their names (in the arena: they do not move) */
    atomic_uchar *state;         /* SA_*: SA_CLAIMED by either thread, then the answer */
    long long *mtime_ns;         /* written before state becomes SA_EXISTS */
    int n;
    atomic_int stop;
    pthread_t th;
    int running;
} ahead;
static atomic_uint files_touched;       /* children started since the build began */

static void touch_files(void) { atomic_fetch_add(&files_touched, 1u); }
static long long st_time_ns(const struct stat *st) { return (long long)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec; }
static void *stat_ahead(void *arg) {
    int i;
    (void)arg;
    for (i = ahead.n - 1; i >= 0; i--) {          /* from the end: see stat_ahead */
        unsigned char want = SA_FREE;
        struct stat st;
        if (atomic_load_explicit(&ahead.stop, memory_order_relaxed) || atomic_load(&files_touched)) break;
        if (!atomic_compare_exchange_strong(&ahead.state[i], &want, SA_CLAIMED)) continue;
        if (stat(ahead.names[i], &st) == 0) {
            ahead.mtime_ns[i] = st_time_ns(&st);
            atomic_store_explicit(&ahead.state[i], SA_EXISTS, memory_order_release);
        } else atomic_store_explicit(&ahead.state[i], SA_MISSING, memory_order_release);
    }
    return NULL;
}
static int has_vpath_var(const mk_make *m);
static void stat_ahead_start(mk_make *m) {
    int i;
    memset(&ahead, 0, sizeof ahead);
    atomic_store(&files_touched, 0u);
    if (m->nnodes < STAT_AHEAD_MIN || dp_cpu_count() < 2 || m->nvpaths || has_vpath_var(m)) return;
    ahead.names = xrealloc(NULL, (size_t)m->nnodes * sizeof *ahead.names);
    ahead.state = xrealloc(NULL, (size_t)m->nnodes * sizeof *ahead.state);
    ahead.mtime_ns = xrealloc(NULL, (size_t)m->nnodes * sizeof *ahead.mtime_ns);
    for (i = 0; i < m->nnodes; i++) { ahead.names[i] = m->nodes[i].name; atomic_init(&ahead.state[i], SA_FREE); }
    ahead.m = m; ahead.n = m->nnodes;
    atomic_init(&ahead.stop, 0);
    ahead.running = pthread_create(&ahead.th, NULL, stat_ahead, NULL) == 0;
    if (!ahead.running) ahead.n = 0;            /* no thread: every file is stat'ed where it is needed */
}
static void stat_ahead_end(void) {
    if (ahead.running) {
        atomic_store(&ahead.stop, 1);
        pthread_join(ahead.th, NULL);
    }
    free(ahead.names); free(ahead.state); free(ahead.mtime_ns);
    memset(&ahead, 0, sizeof ahead);
}
/* n's file's time: 1 it exists (*ns its mtime), 0 missing; from the cache
   while it is good, else a stat. A file this thread claimed gets its answer
   into the cache too: a target that many rules need (a generated header)
   is stat'ed once, whichever thread reaches it first. Called on the thread
   that plans and runs the ops (build's) only. */
static int file_time(const mk_make *m, const node *n, long long *ns) {
    struct stat st;
    long i = m == ahead.m ? (long)(n - m->nodes) : -1;
    int mine = 0, r;
    if (i >= 0 && i < ahead.n && ahead.names[i] == n->name && NFILE(n) == n->name && !atomic_load(&files_touched)) {
        unsigned char s = atomic_load_explicit(&ahead.state[i], memory_order_acquire);
        if (s == SA_FREE && atomic_compare_exchange_strong(&ahead.state[i], &s, SA_CLAIMED)) mine = 1;
        else if (s == SA_EXISTS) { *ns = ahead.mtime_ns[i]; return 1; }
        else if (s == SA_MISSING) return 0;
    }
    r = stat(NFILE(n), &st) == 0;
    if (r) *ns = st_time_ns(&st);
    if (mine) {                                /* good while files_touched stays 0, as the other thread's */
        if (r) ahead.mtime_ns[i] = *ns;
        atomic_store_explicit(&ahead.state[i], r ? SA_EXISTS : SA_MISSING, memory_order_release);
    }
    return r;
}

/* Whether the file of a node without a rule exists, for the plan: from its
   directory's listing where that was read (the built-in rules read it),
   else by a stat whose time the node keeps: the file is not stat'ed again
   while the build runs (make never writes a file it has no rule for; GNU
   make, too, reads a file's time once), and a run that needs no listing
   (-r) reads none. */
static int plan_exists(const mk_make *m, node *n) {
    int r;
    if (n->st_known) return n->st_known == 1;
    if ((r = dc_answer(NFILE(n), 0)) >= 0) return r;
    if (!file_time(m, n, &n->st_mtime_ns)) { n->st_known = 2; return 0; }
    n->st_known = 1;
    return 1;
}

/* A prerequisite a pattern rule may rely on: a file, or a name the Makefile
   mentions (a target, or a prerequisite of an explicit rule). */
static void vpath_search(mk_make *m, node *n);
static int has_vpath_var(const mk_make *m);
static int ought_to_exist(mk_make *m, const char *name, size_t len) {
    unsigned h = hash_str(name, len);
    int i = map_get_h(&m->node_map, name, len, h);
    if (i >= 0 && (m->nodes[i].mentioned || m->nodes[i].is_target || NX(&m->nodes[i])->fname)) return 1;
    if ((i = dc_answer_h(name, len, h, 1)) < 0) i = file_exists(name);
    if (i) return 1;
    if (m->nvpaths || has_vpath_var(m)) {           /* found through vpath */
        i = node_get(m, name);
        vpath_search(m, &m->nodes[i]);
        return NX(&m->nodes[i])->fname != NULL;
    }
    return 0;
}

static char *sb_space(strbuf *b, size_t n) {   /* n more bytes (a strbuf's), for the caller to write */
    char *d;
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap) b->cap = b->cap ? 2 * b->cap : 64;
        b->s = xrealloc(b->s, b->cap);
    }
    d = b->s + b->len;
    b->len += n;
    b->s[b->len] = '\0';
    return d;
}
/* Gives node ni the recipe of the best matching pattern rule, if any: the
   shortest stem whose prerequisites all ought to exist, first in file order.
   A pattern without '/' matches the file part of the name; the directory is
   put back in front of the stem and the prerequisites, as GNU make does. */
static void implicit_search(mk_make *m, int ni) {
    const char *name = m->nodes[ni].name;
    size_t nlen = strlen(name), dirlen = nlen, best_n = (size_t)-1, so, sn;
    int best = -1, i, j;
    strbuf b = {0};
    while (dirlen > 0 && name[dirlen - 1] != '/') dirlen--;
    for (i = 0; i < m->npats; i++) {
        pattern *p = &m->pats[i];
        size_t off, wn;
        int ok = 1;
        if (!p->shaped) {                        /* 1: has a '%', 2: not (a pattern rule always has) */
            const char *pc = strchr(p->target, '%');
            p->shaped = pc ? 1 : 2; p->slash = strchr(p->target, '/') != NULL;
            p->before = pc ? (size_t)(pc - p->target) : 0; p->after = pc ? strlen(pc + 1) : 0;
            if (p->npre) {
                p->pre_len = strlen(p->pre[0]);
                pc = strchr(p->pre[0], '%');
                p->pre_before = pc ? (size_t)(pc - p->pre[0]) : p->pre_len;
            }
        }
        off = p->slash ? 0 : dirlen; wn = nlen - off;
        if (p->shaped == 2) { if (!pat_match(p->target, name + off, wn, &so, &sn)) continue; }
        else {                                   /* pat_match's test, the lengths known */
            if (wn < p->before + p->after || memcmp(name + off, p->target, p->before) != 0 ||
                memcmp(name + nlen - p->after, p->target + p->before + 1, p->after) != 0) continue;
            so = p->before; sn = wn - p->before - p->after;
        }
        if (best >= 0 && off + sn >= best_n) continue;
        for (j = 0; ok && j < p->npre; j++) {
            b.len = 0;
            if (j == 0 && p->pre_before < p->pre_len) {   /* pat_subst, the '%' found once: */
                size_t tail = p->pre_len - p->pre_before - 1;   /* four copies, one size check */
                char *d = sb_space(&b, off + p->pre_before + sn + tail);
                memcpy(d, name, off); d += off;
                memcpy(d, p->pre[0], p->pre_before); d += p->pre_before;
                memcpy(d, name + off + so, sn); d += sn;
                memcpy(d, p->pre[0] + p->pre_before + 1, tail);
            } else { sb_add(&b, name, off); pat_subst(&b, p->pre[j], name + off + so, sn); }
            ok = ought_to_exist(m, b.s, b.len);
        }
        if (ok) { best = i; best_n = off + sn; }
    }
    if (best >= 0) {
        const pattern *p = &m->pats[best];
        size_t off = strchr(p->target, '/') ? 0 : dirlen;
        int *old = m->nodes[ni].pre, nold = m->nodes[ni].npre;
        pat_match(p->target, name + off, nlen - off, &so, &sn);
        m->nodes[ni].pre = NULL; m->nodes[ni].npre = 0;
        for (j = 0; j < p->npre + p->noo; j++) {
            int k;
            node *n;
            b.len = 0;
            sb_add(&b, name, off);
            pat_subst(&b, j < p->npre ? p->pre[j] : p->oo[j - p->npre], m->nodes[ni].name + off + so, sn);
            if (!b.len) continue;
            k = node_get(m, b.s);                      /* may move m->nodes */
            n = &m->nodes[ni];
            if (j < p->npre) add_prereq(m, &n->pre, &n->npre, k);
            else add_prereq(m, &n->oo, &n->noo, k);
        }
        for (j = 0; j < nold; j++) add_prereq(m, &m->nodes[ni].pre, &m->nodes[ni].npre, old[j]);
        {
            node_x *x = nx_of(&m->nodes[ni]);
            free(x->stem);
            x->stem = xstrndup(m->nodes[ni].name, off + so + sn);
            memmove(x->stem + off, m->nodes[ni].name + off + so, sn);
            x->stem[off + sn] = '\0';
        }
        m->nodes[ni].rcp = p->rcp;
    }
    free(b.s);
}

/* VPATH (a variable: directories split by : or blanks) and `vpath pattern
   dirs`: where a file that is not here is looked for, the directives first. */
static int has_vpath_var(const mk_make *m) { const var *v = var_find(m, "VPATH", 5); return v && v->value[0]; }
static int vpath_in(node *n, const char *dirs) {
    const char *p = dirs;
    strbuf b = {0};
    while (*p) {
        const char *e;
        while (*p == ':' || is_space(*p)) p++;
        for (e = p; *e && *e != ':' && !is_space(*e); e++) {}
        if (e > p) {
            b.len = 0; sb_add(&b, p, (size_t)(e - p)); sb_putc(&b, '/'); sb_puts(&b, n->name);
            if (file_exists(b.s)) { nx_of(n)->fname = sb_take(&b); return 1; }
        }
        p = e;
    }
    free(b.s);
    return 0;
}
static void vpath_search(mk_make *m, node *n) {
    int i;
    size_t so, sn;
    if (n->name[0] == '/') return;
    for (i = 0; i < m->nvpaths; i++)
        if (pat_match(m->vpaths[i].pat, n->name, strlen(n->name), &so, &sn) && vpath_in(n, m->vpaths[i].dirs)) return;
    if (has_vpath_var(m)) {
        xctx x;
        strbuf err = {0};
        char *d;
        x.m = m; x.av = NULL; x.file = NULL; x.line = 0; x.stack = NULL; x.locals = NULL; x.rd = NULL; x.err = &err; x.depth = 0;
        d = expand_str(&x, "$(VPATH)");
        if (d) vpath_in(n, d);
        free(d); free(err.s);
    }
}

/* Post-order walk from the goals, iterative (a 100,000-rule chain needs no
   deep C stack). Appends every node that needs an engine op to *order.
   Returns 0, or -1 after printing "No rule to make target" (without -k). */
typedef struct frame { int node, idx, parent; } frame;
static int plan_walk(mk_make *m, const int *goals, int ngoals, int keep_going, int **order, int *norder) {
    frame *st = NULL;
    int nst = 0, stcap = 0, ocap = 0, g, errors = 0;
    for (g = 0; g < ngoals; g++) {
        if (m->nodes[goals[g]].walk) continue;
        GROW(st, nst, stcap);
        st[nst].node = goals[g]; st[nst].idx = -1; st[nst].parent = -1; nst++;
        m->nodes[goals[g]].walk_parent = -1;
        m->nodes[goals[g]].tv_inherit = NX(&m->nodes[goals[g]])->ntvars > 0;
        while (nst) {
            frame *f = &st[nst - 1];
            int ni = f->node, total;
            if (f->idx < 0) {
                node *n = &m->nodes[ni];
                n->walk = 1;
                f->idx = 0;
                if (!n->rcp && !n->phony && !n->implicit_done) { n->implicit_done = 1; implicit_search(m, ni); n = &m->nodes[ni]; }
                if (!NX(n)->fname && !n->phony && (m->nvpaths || has_vpath_var(m)) && !cached_exists(n->name)) vpath_search(m, n);
                if (!n->rcp && !n->is_target && !n->phony && !plan_exists(m, n)) {
                    int d = map_get(&m->node_map, ".DEFAULT", 8);
                    if (d >= 0 && m->nodes[d].rcp) n->rcp = m->nodes[d].rcp;   /* .DEFAULT's recipe */
                }
                if (!n->rcp && !n->is_target && !n->phony && !plan_exists(m, n)) {
                    if (f->parent < 0) fprintf(stderr, "%s: *** No rule to make target '%s'.%s\n", mk_prog, n->name, keep_going ? "" : "  Stop.");
                    else fprintf(stderr, "%s: *** No rule to make target '%s', needed by '%s'.%s\n", mk_prog, n->name, m->nodes[f->parent].name, keep_going ? "" : "  Stop.");
                    errors++;
                    n->missing = 1;
                    if (!keep_going) { free(st); return -1; }
                }
            }
            {
                node *n = &m->nodes[ni];
                total = n->npre + n->noo;
                if (f->idx < total) {
                    int *slot = f->idx < n->npre ? &n->pre[f->idx] : &n->oo[f->idx - n->npre];
                    int c = *slot;
                    if (m->nodes[c].walk == 1) {           /* a cycle: drop this edge */
                        fprintf(stderr, "%s: Circular %s <- %s dependency dropped.\n", mk_prog, n->name, m->nodes[c].name);
                        if (f->idx < n->npre) { memmove(slot, slot + 1, (size_t)(n->npre - f->idx - 1) * sizeof *slot); n->npre--; }
                        else { memmove(slot, slot + 1, (size_t)(n->noo - (f->idx - n->npre) - 1) * sizeof *slot); n->noo--; }
                        continue;
                    }
                    f->idx++;
                    if (m->nodes[c].walk == 0) {
                        m->nodes[c].walk_parent = ni;
                        m->nodes[c].tv_inherit = m->nodes[ni].tv_inherit || NX(&m->nodes[c])->ntvars;
                        GROW(st, nst, stcap);
                        st[nst].node = c; st[nst].idx = -1; st[nst].parent = ni; nst++;
                    }
                    continue;
                }
                n->walk = 2;
                nst--;
                if (n->rcp || n->is_target || n->phony || n->missing || n->npre || n->noo) {
                    GROW(*order, *norder, ocap);
                    n->plan_idx = *norder;
                    (*order)[(*norder)++] = ni;
                }
            }
        }
    }
    free(st);
    (void)errors;
    return 0;
}
static int plan(mk_make *m, const int *goals, int ngoals, int keep_going, int **order, int *norder) {
    int rc;
    dc_on = 1;                                   /* the listings hold while nothing runs */
    rc = plan_walk(m, goals, ngoals, keep_going, order, norder);
    dc_clear();
    return rc;
}

/* ================================================================== running */
typedef struct job {
    node *n;
    dp_completion done;
    char **cmds; unsigned char *flags; int *lineno; int ncmds, next;
    pid_t pid;
    int status;
    int existed; long long old_ns;   /* the target before the recipe (.DELETE_ON_ERROR) */
    long long trace_start;           /* --trace: when its first command started (us), -1 before */
    struct job *qnext;
} job;
enum { CMD_SILENT = 1, CMD_IGNORE = 2, CMD_PLUS = 4 };

static mk_make *run_mk;                  /* read-only while the engine runs */
static int opt_keep_going, opt_dry_run, opt_jobs = 1, opt_silent, opt_always, opt_question,
           opt_no_builtin, opt_no_builtin_vars, opt_ignore, opt_env_over, opt_print_dir, opt_no_print_dir;
static atomic_int question_ood;          /* -q: some target is out of date (set by the runners and the rules) */
static const char *opt_trace;            /* --trace FILE */
static FILE *trace_file;
static struct timespec trace_t0;
static char **child_env;                 /* the commands' environment (exported variables) */
static char **shell_argv; static int shell_argc;   /* $(SHELL) $(.SHELLFLAGS) */
static int shell_is_sh;                  /* /bin/sh -c: a plain command may skip the shell */
/* The job table. Its threads are the thread that runs the ops (build's,
   which hands jobs in: submit_job, op_over) and the runners (see runner),
   min(-j, RUNNERS_MAX) of them, which start the commands and collect the
   children. Invariants, all under run_mtx:
   - A job is in exactly one place: the slot queue (waiting for a slot),
     gate_jobs (-j1), the start list (its next command line printed, its
     child to be started by a runner), with one runner (starting its child,
     outside the lock), in running[] (its child runs, pid known), or over
     (on a `finished` list, its op to be completed outside the lock). While
     a runner starts a job's child, nothing else touches the job.
   - nstarting counts the jobs on the start list and with a runner;
     nchildren == nrunning, the children in running[] not yet collected.
   - At most one runner at a time waits for any child (waitid; waiting == 1).
   - The waiter only looks at an exited child (waitid with WNOWAIT) and
     collects it (waitpid) once its pid is in running[]: a child can exit
     before the runner that started it has put its pid there, and while
     it is not collected its pid cannot go to another process. A pid not
     in running[] waits until every start under way when it was seen
     (inflight[]) is over; still unknown then, it is not a job's child (a
     recipe's background process when make is pid 1, a $(shell) child):
     collected and dropped. A status kept by pid after its collection
     could be given to a later child that got the same pid.
   - No lost work: run_mtx is released through run_unlock (or a runner's
     wait on runner_cv, which it enters only when it found nothing to do),
     which wakes a runner for every job on the start list and for the wait
     on children when nobody waits. A runner looks for work before it
     sleeps, so a wake-up that finds every runner busy is not needed. */
static pthread_mutex_t run_mtx = PTHREAD_MUTEX_INITIALIZER;   /* everything below, and stdout */
static pthread_cond_t runner_cv = PTHREAD_COND_INITIALIZER;
static int slots_free, nchildren, stopping, runner_quit;
static job **running; static int nrunning, runcap;
static job *queue_head, *queue_tail;     /* waiting for a slot */
static job *start_head, *start_tail;     /* holding a slot, the next command to start */
static int nstart_list, nstarting, waiting, nrunners;
#define RUNNERS_MAX 8                    /* see runner_th */
static pthread_cond_t started_cv = PTHREAD_COND_INITIALIZER;   /* a start is over: for the waiter */
static unsigned long start_seq;          /* starts taken so far */
static unsigned long inflight[RUNNERS_MAX];   /* a runner's start under way (its number), else 0 */
/* -j1 follows GNU make's depth-first walk exactly: the job of the rule at
   plan position p starts only when every rule before it in the plan is over
   (gate == p). A rule is over when its op completes, or when one of its
   prerequisites failed (the engine skips it, no op of its own completes).
   At -jN the engine starts whatever is ready, first come first served. */
static const int *plan_order; static int plan_n, gate;
static job **gate_jobs;                  /* by plan position, waiting for the gate */

static void not_remade_locked(const node *n) {   /* -k: GNU's note for a goal that failed */
    fflush(stdout);
    fprintf(stderr, "%s: Target '%s' not remade because of errors.\n", mk_prog, n->name);
}
static void node_over_locked(node *n, int status) {
    n->gstate = status == 0 ? 1 : 2;
    if (!gate_jobs) return;
    if (n->gstate == 2 && n->is_goal && opt_keep_going) not_remade_locked(n);
    while (gate < plan_n) {
        node *g = &run_mk->nodes[plan_order[gate]];
        int i;
        if (!g->gstate)
            for (i = 0; i < g->npre + g->noo; i++)
                if (run_mk->nodes[i < g->npre ? g->pre[i] : g->oo[i - g->npre]].gstate == 2) {
                    g->gstate = 2;
                    if (g->is_goal && opt_keep_going) not_remade_locked(g);
                    break;
                }
        if (!g->gstate) break;
        gate++;
    }
}

/* --trace: microseconds since make started, and the line of a job that is
   over (written under run_mtx, so lines never interleave). */
static long long trace_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)(t.tv_sec - trace_t0.tv_sec) * 1000000 + (t.tv_nsec - trace_t0.tv_nsec) / 1000;
}
static void trace_job_locked(const job *j) {
    int i;
    if (!trace_file || j->trace_start < 0) return;
    fprintf(trace_file, "rule\t%lld\t%lld\t%d\t%s", j->trace_start, trace_now(), j->status, j->n->name);
    for (i = 0; i < j->n->npre; i++) fprintf(trace_file, "\t%s", run_mk->nodes[j->n->pre[i]].name);
    if (j->n->noo) fputs("\t|", trace_file);
    for (i = 0; i < j->n->noo; i++) fprintf(trace_file, "\t%s", run_mk->nodes[j->n->oo[i]].name);
    fputc('\n', trace_file);
}

static void print_error_locked(const job *j, int line_idx, const char *what, int ignored) {
    const char *file = j->n->rcp ? j->n->rcp->file : "";
    int line = j->lineno[line_idx];
    fflush(stdout);
    if (line > 0) fprintf(stderr, "%s: %s[%s:%d: %s] %s%s\n", mk_prog, ignored ? "" : "*** ", file, line, j->n->name, what, ignored ? " (ignored)" : "");
    else fprintf(stderr, "%s: %s[%s: %s] %s%s\n", mk_prog, ignored ? "" : "*** ", file, j->n->name, what, ignored ? " (ignored)" : "");
}

/* GNU make runs a command line without /bin/sh when the shell would only
   split it into words: no character special to the shell, no builtin or
   keyword first, no assignment. That saves an exec per job. Returns the
   words (pointing into *copy, which the caller frees), or NULL: use sh -c.
   Any thread. */
static char **direct_argv(const char *cmd, char **copy) {
    static const char *const builtins[] = { ".", ":", "alias", "bg", "break", "case", "cd", "command",
        "continue", "eval", "exec", "exit", "export", "fc", "fg", "for", "getopts", "hash", "if", "jobs",
        "login", "logout", "read", "readonly", "return", "set", "shift", "test", "times", "trap", "type",
        "ulimit", "umask", "unalias", "unset", "wait", "while", "[", "{", "!", NULL };
    char **argv = NULL, *w, *save;
    int n = 0, cap = 0, i;
    if (strpbrk(cmd, "#;\"'*?[]&|<>(){}$`^~!\\\n")) return NULL;
    *copy = xstrdup(cmd);
    /* strtok_r: the runners split their commands at the same time */
    for (w = strtok_r(*copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) { GROW(argv, n, cap); argv[n++] = w; }
    if (n == 0 || strchr(argv[0], '=')) { free(argv); free(*copy); *copy = NULL; return NULL; }
    for (i = 0; builtins[i]; i++) if (strcmp(argv[0], builtins[i]) == 0) { free(argv); free(*copy); *copy = NULL; return NULL; }
    GROW(argv, n, cap);
    argv[n] = NULL;
    return argv;
}

/* Where execvp would find the program `name`, searching the commands'
   environment's PATH (the Makefile's `export PATH := ...` counts, as in
   GNU make), looked up for every command, as GNU make does: a build may put
   a program on the PATH. A name with a slash is not searched for, only
   checked (it exists and is an executable regular file), so that the
   parent can report it as GNU make does. Returns the path (in buf, or name
   itself), or NULL with errno set (ENOENT: nowhere; EACCES: found, but not
   an executable regular file). */
static const char *find_program(const char *name, char *buf, size_t cap) {
    const char *path = NULL, *dir, *end;
    int i, denied = 0;
    struct stat st;
    if (strchr(name, '/')) {
        if (stat(name, &st) != 0) return NULL;
        if (!S_ISREG(st.st_mode) || access(name, X_OK) != 0) { errno = EACCES; return NULL; }
        return name;
    }
    for (i = 0; child_env[i]; i++)
        if (strncmp(child_env[i], "PATH=", 5) == 0) { path = child_env[i] + 5; break; }
    if (!path) path = "/bin:/usr/bin";                  /* execvp's default */
    for (dir = path; ; dir = end + 1) {
        size_t dlen;
        end = strchr(dir, ':');
        if (!end) end = dir + strlen(dir);
        dlen = (size_t)(end - dir);
        if (dlen + strlen(name) + 2 <= cap) {          /* an empty entry is the current directory */
            snprintf(buf, cap, "%.*s%s%s", (int)dlen, dir, dlen ? "/" : "", name);
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
                if (access(buf, X_OK) == 0) return buf;
                denied = 1;
            }
        }
        if (!*end) break;
    }
    errno = denied ? EACCES : ENOENT;
    return NULL;
}

/* Runs the program at `path` with argv in the commands' environment; 0, or
   an errno value. A file the kernel cannot run (ENOEXEC: a script without
   a #! line) is run by /bin/sh, as execvp and GNU make do: sh_argv is
   argv with "/bin/sh" and the path in front, made by the caller (the
   child may not allocate). With glibc it is vfork and execve: glibc's
   posix_spawn also resets every signal's handler in the child first
   (about 120 system calls a command, 5% of a build of small commands on
   this project's test machine), and make.c installs no handler, so there
   is nothing to reset. The child only calls execve, write and _exit. If
   execve fails otherwise (the lookup found an executable file), the child
   says so and exits with 127, the shell's "cannot run". Elsewhere
   posix_spawn. */
static int spawn_program(pid_t *pid, const char *path, char **argv, char **sh_argv) {
#ifdef __GLIBC__
    pid_t p = vfork();
    if (p == 0) {
        static const char msg[] = ": cannot run this program (execve failed)\n";
        execve(path, argv, child_env);
        if (errno == ENOEXEC) execve(sh_argv[0], sh_argv, child_env);
        if (write(2, path, strlen(path)) >= 0 && write(2, msg, sizeof msg - 1) >= 0) {}
        _exit(127);
    }
    if (p < 0) return errno;
    *pid = p;
    return 0;
#else
    int err = posix_spawn(pid, path, NULL, NULL, argv, child_env);
    return err == ENOEXEC ? posix_spawn(pid, sh_argv[0], NULL, NULL, sh_argv, child_env) : err;
#endif
}
/* argv with "/bin/sh" and path in front (malloc'd), for spawn_program. */
static char **sh_fallback_argv(const char *path, char **argv) {
    int n = 0, i;
    char **a;
    while (argv[n]) n++;
    a = (char **)xrealloc(NULL, ((size_t)n + 2) * sizeof *a);
    a[0] = (char *)"/bin/sh"; a[1] = (char *)path;
    for (i = 1; i <= n; i++) a[i + 1] = argv[i];
    return a;
}

/* Hands the job's next non-empty command line to the runners: printed (as
   GNU make echoes a command when it starts it) and put on the start list;
   a runner starts its child (start_child). Returns 1 if a command is now
   on its way, 0 if the job is over (j->status says how). Called with run_mtx. */
static int start_next_locked(job *j) {
    while (j->next < j->ncmds) {
        int i = j->next++;
        if (!j->cmds[i][0]) continue;
        j->n->ran = 1;                             /* GNU's "commands started" */
        if (trace_file && j->trace_start < 0) j->trace_start = trace_now();
        if (opt_dry_run || (!(j->flags[i] & CMD_SILENT) && !opt_silent))
            printf("%s\n", j->cmds[i]);
        fflush(stdout);
        if (opt_dry_run && !(j->flags[i] & CMD_PLUS)) continue;   /* -n runs only + and $(MAKE) lines */
        touch_files();                             /* the files' times read ahead are no longer good */
        j->qnext = NULL;
        if (start_tail) start_tail->qnext = j; else start_head = j;
        start_tail = j;
        nstart_list++; nstarting++;
        return 1;
    }
    return 0;
}
static job *start_take_locked(void) {
    job *j = start_head;
    start_head = j->qnext;
    if (!start_head) start_tail = NULL;
    nstart_list--;
    return j;
}

/* Starts the child of the job's command line j->next - 1, which start_next_locked
   printed; called by a runner without run_mtx (the lookup on PATH stats,
   and vfork returns only once the child has called execve: other runners
   start and collect meanwhile). Returns the pid, or 0 with *err and *what
   (the program's name, malloc'd) saying why it could not start. */
static pid_t start_child(const job *j, int *err, char **what) {
    const char *cmd = j->cmds[j->next - 1];
    char **direct, *copy = NULL, **argv, where[4096];
    const char *path;
    pid_t pid = 0;
    direct = shell_is_sh ? direct_argv(cmd, &copy) : NULL;
    if (direct) argv = direct;
    else {                                     /* $(SHELL) $(.SHELLFLAGS) cmd: a copy per child */
        argv = (char **)xrealloc(NULL, ((size_t)shell_argc + 2) * sizeof *argv);
        memcpy(argv, shell_argv, (size_t)shell_argc * sizeof *argv);
        argv[shell_argc] = (char *)cmd; argv[shell_argc + 1] = NULL;
    }
    path = find_program(argv[0], where, sizeof where);
    if (path) {
        char **sh_argv = sh_fallback_argv(path, argv);
        *err = spawn_program(&pid, path, argv, sh_argv);
        free(sh_argv);
    } else *err = errno;
    *what = *err ? xstrdup(argv[0]) : NULL;
    free(argv); free(copy);
    return *err ? 0 : pid;
}

static void free_job(job *j) {
    int i;
    for (i = 0; i < j->ncmds; i++) free(j->cmds[i]);
    free(j->cmds); free(j->flags); free(j->lineno); free(j);
}
/* Completes the job's engine op (outside run_mtx: completing may start
   other ops, which take run_mtx). */
static void finish_job(job *j) {
    dp_completion done = j->done;
    int status = j->status;
    if (status == 0) j->n->remade = 1;
    free_job(j);
    dp_complete(done, status, status ? "command failed" : NULL);
}

/* Jobs whose ops are to be completed once run_mtx is released. */
static void finished_push(job **list, job *j) { j->qnext = *list; *list = j; }
static void finish_all(job *list) { while (list) { job *nx = list->qnext; finish_job(list); list = nx; } }

static void queue_put_locked(job *j) {
    j->qnext = NULL;
    if (queue_tail) queue_tail->qnext = j; else queue_head = j;
    queue_tail = j;
}
static job *queue_take_locked(void) {
    job *q = queue_head;
    queue_head = q->qnext;
    if (!queue_head) queue_tail = NULL;
    return q;
}

/* The first failure without -k: no job starts any more; the queued ones are
   completed as "not started" (status -2, no message of their own). */
static void stop_locked(job **finished) {
    stopping = 1;
    if (nchildren + nstarting > 0) { fflush(stdout); fprintf(stderr, "%s: *** Waiting for unfinished jobs....\n", mk_prog); }
    while (queue_head) {
        job *q = queue_take_locked();
        q->status = -2;
        finished_push(finished, q);
    }
    if (gate_jobs) {
        int p;
        for (p = gate; p < plan_n; p++)
            if (gate_jobs[p]) { gate_jobs[p]->status = -2; finished_push(finished, gate_jobs[p]); gate_jobs[p] = NULL; }
    }
}

/* The next job a free slot goes to: at -j1 the one at the gate, else the
   first queued. Called with run_mtx. */
static job *pick_next_locked(void) {
    job *q;
    if (!gate_jobs) return queue_head ? queue_take_locked() : NULL;
    if (gate >= plan_n || !gate_jobs[gate]) return NULL;
    q = gate_jobs[gate];
    gate_jobs[gate] = NULL;
    return q;
}
/* Free slots to waiting jobs; a job that is over at once (nothing to run,
   or the shell could not be started) passes its slot on. Called with run_mtx. */
static void kick_locked(job **finished) {
    job *q;
    while (!stopping && slots_free > 0 && (q = pick_next_locked()) != NULL) {
        slots_free--;
        if (start_next_locked(q)) continue;
        finished_push(finished, q);
        slots_free++;
        trace_job_locked(q);
        node_over_locked(q->n, q->status);
        if (q->status > 0 && !opt_keep_going && !stopping) stop_locked(finished);
    }
}

/* Job j is over (j->status says how): its slot goes to the next job.
   Called with run_mtx. */
static void job_over_locked(job *j, job **finished) {
    finished_push(finished, j);
    slots_free++;
    trace_job_locked(j);
    node_over_locked(j->n, j->status);
    if (j->status > 0 && !opt_keep_going && !stopping) stop_locked(finished);
    kick_locked(finished);
}
/* Releases run_mtx, then wakes a runner for each job on the start list and
   one for the children if no runner waits for them (the "no lost work"
   invariant above), counted under the lock. A wake-up beyond the runners
   there are, or for a runner that is busy or has found the work already,
   finds nothing to do: harmless. After the unlock, so that the runner
   woken does not block at once on the mutex still held (two futex calls
   fewer per job). */
static void run_unlock(void) {
    int want = nstart_list + (nchildren > 0 && !waiting);
    if (want > nrunners) want = nrunners;
    pthread_mutex_unlock(&run_mtx);
    while (want-- > 0) pthread_cond_signal(&runner_cv);
}

/* An op that ends without a job (nothing to do, or not started): completed
   after its node is over for the -j1 gate, which may start the next job. */
static void op_over(node *n, dp_completion done, int status, const char *why) {
    job *finished = NULL;
    pthread_mutex_lock(&run_mtx);
    node_over_locked(n, status);
    kick_locked(&finished);
    run_unlock();
    finish_all(finished);
    dp_complete(done, status, why);
}

static job *take_running_locked(pid_t pid) {
    int i;
    for (i = 0; i < nrunning; i++)
        if (running[i]->pid == pid) { job *j = running[i]; running[i] = running[--nrunning]; return j; }
    return NULL;
}

/* Reports a command that did not succeed, as GNU make does; returns 1 if it
   fails the rule (0 for a line with the - prefix). Called with run_mtx. */
static int command_failed_locked(job *j, int ws) {
    char what[128];
    int line = j->next - 1, ignored = (j->flags[line] & CMD_IGNORE) != 0;
    if (opt_question && !ignored) { atomic_store(&question_ood, 1); j->status = 1; return 1; }   /* a sub-make's "out of date" */
    if (WIFSIGNALED(ws)) snprintf(what, sizeof what, "%s", strsignal(WTERMSIG(ws)));
    else snprintf(what, sizeof what, "Error %d", WIFEXITED(ws) ? WEXITSTATUS(ws) : 1);
    if (!(ignored && opt_silent)) print_error_locked(j, line, what, ignored);   /* -s hides "(ignored)" */
    if (ignored) return 0;
    j->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    if (j->status == 0) j->status = 1;
    if (run_mk->delete_on_error && !j->n->phony && !j->n->precious) {   /* a half-made target goes */
        struct stat st;
        if (stat(j->n->name, &st) == 0 && !S_ISDIR(st.st_mode) &&
            (!j->existed || st_time_ns(&st) != j->old_ns)) {
            fprintf(stderr, "%s: *** Deleting file '%s'\n", mk_prog, j->n->name);
            unlink(j->n->name);
        }
    }
    return 1;
}

/* The job's child exited with wait status ws: its next command line goes
   to the start list, or the job is over (its slot to the next job). A job
   that runs goes on to its end, also after another failed. Called with run_mtx. */
static void child_over_locked(job *j, int ws, job **finished) {
    if (!(ws != 0 && command_failed_locked(j, ws)) && start_next_locked(j)) return;
    job_over_locked(j, finished);
}

/* The child of job j, which this runner (its inflight[] entry: mine)
   started (pid, or 0 and err: it could not start), in running[]; the
   waiter may wait for that (see the job table). Called with run_mtx. */
static void child_started_locked(job *j, pid_t pid, int err, const char *what, unsigned long *mine, job **finished) {
    int line = j->next - 1;
    nstarting--;
    *mine = 0;
    if (waiting) pthread_cond_signal(&started_cv);
    if (err) {                                 /* as the shell's "not found": 127 */
        fflush(stdout);
        fprintf(stderr, "%s: %s: %s\n", mk_prog, what, strerror(err));
        print_error_locked(j, line, "Error 127", (j->flags[line] & CMD_IGNORE) != 0);
        if ((j->flags[line] & CMD_IGNORE) && start_next_locked(j)) return;
        if (!(j->flags[line] & CMD_IGNORE)) j->status = 127;
        job_over_locked(j, finished);
        return;
    }
    j->pid = pid;
    GROW(running, nrunning, runcap);
    running[nrunning++] = j;
    nchildren++;
}

/* Whether a start numbered up to seq is still under way. Called with run_mtx. */
static int starting_since_locked(unsigned long seq) {
    int k;
    for (k = 0; k < RUNNERS_MAX; k++) if (inflight[k] && inflight[k] <= seq) return 1;
    return 0;
}
/* A runner, one of min(-j, RUNNERS_MAX) threads. Under run_mtx, first
   come first served, it: starts the child of the first job on the start
   list (without the lock: the PATH lookup and vfork, which waits for the
   child's execve, 1-4 ms on a loaded 2-core machine; with one thread doing
   both, as before, a job's exit often waited for another's execve and
   only 2.9 of 4 slots were busy on average); else, if children run and no
   runner waits for them, it waits for any child (waitid) and, for the child it
   collects, starts that rule's next command line or the next job itself
   (the refill is not handed to another thread); else it sleeps. Leaving
   the wait it wakes another runner to wait for the other children while
   it starts the next one (run_unlock). Each runner ends when build sets
   runner_quit (every job is over by then). */
static void *runner(void *arg) {
    unsigned long *mine = arg;             /* this runner's inflight[] entry */
    pthread_mutex_lock(&run_mtx);
    for (;;) {
        job *j, *finished = NULL;
        if (!start_head && nchildren > 0 && !waiting) {
            pid_t pid;
            int ws, r;
            siginfo_t si;
            waiting = 1;
            run_unlock();
            memset(&si, 0, sizeof si);
            r = waitid(P_ALL, 0, &si, WEXITED | WNOWAIT);   /* looks; collected below */
            pthread_mutex_lock(&run_mtx);
            if (r < 0) { waiting = 0; if (errno == ECHILD) nchildren = 0; continue; }
            pid = si.si_pid;
            if ((j = take_running_locked(pid)) == NULL) {   /* not in the table (yet) */
                unsigned long seq = start_seq;
                while (starting_since_locked(seq)) pthread_cond_wait(&started_cv, &run_mtx);
                if ((j = take_running_locked(pid)) == NULL) {   /* not a job's child */
                    waiting = 0;
                    while (waitpid(pid, &ws, WNOHANG) < 0 && errno == EINTR) {}
                    continue;
                }
            }
            waiting = 0;
            while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
            nchildren--;
            child_over_locked(j, ws, &finished);
        } else if (!start_head) {
            if (runner_quit) break;
            pthread_cond_wait(&runner_cv, &run_mtx);
            continue;
        }
        if (start_head) {                      /* first the refill: the collected rule's next line, or a job */
            pid_t pid;
            int err;
            char *what;
            j = start_take_locked();
            *mine = ++start_seq;
            run_unlock();
            pid = start_child(j, &err, &what);
            pthread_mutex_lock(&run_mtx);
            child_started_locked(j, pid, err, what, mine, &finished);
            free(what);
        }
        if (finished) {                        /* then the ops of the jobs that are over */
            run_unlock();
            finish_all(finished);
            pthread_mutex_lock(&run_mtx);
        }
    }
    pthread_mutex_unlock(&run_mtx);
    return NULL;
}

/* The runners are started by the first job, not by build: a run where
   every target is up to date (the usual no-op) starts no thread at all.
   More than RUNNERS_MAX would only add threads: the children started at
   the same time compete for the same cores. */
static pthread_t runner_th[RUNNERS_MAX];

/* Hands a job to the table: on the start list now if a job slot is free,
   else queued. Called on the thread that runs the ops (build's). */
static void submit_job(job *j) {
    job *finished = NULL;
    if (!nrunners) {                           /* main thread only, as build's join */
        int want = opt_jobs < RUNNERS_MAX ? opt_jobs : RUNNERS_MAX, k, made = 0;
        for (k = 0; k < want; k++) if (pthread_create(&runner_th[made], NULL, runner, &inflight[made]) == 0) made++;
        if (!made) {                           /* no child runs yet */
            fprintf(stderr, "%s: *** could not start the job threads.  Stop.\n", mk_prog);
            exit(2);
        }
        pthread_mutex_lock(&run_mtx);
        nrunners = made;
        pthread_mutex_unlock(&run_mtx);
    }
    pthread_mutex_lock(&run_mtx);
    if (stopping) { j->status = -2; node_over_locked(j->n, -2); finished_push(&finished, j); }
    else if (gate_jobs) { gate_jobs[j->n->plan_idx] = j; kick_locked(&finished); }
    else if (slots_free > 0) { slots_free--; if (!start_next_locked(j)) job_over_locked(j, &finished); }
    else queue_put_locked(j);
    run_unlock();
    finish_all(finished);
}

/* Whether prerequisite p's file is missing or newer than the target's time
   t: from the time the plan kept (a file without a rule), else a stat. */
static int missing_or_newer(const node *p, long long t) {
    long long pt;
    if (p->st_known && !p->rcp) {
        if (p->st_known == 2) return 1;
        pt = p->st_mtime_ns;
    } else if (!file_time(run_mk, p, &pt)) return 1;
    return pt > t;
}
/* Small set of node indices, to list each prerequisite once in $^ and $?. */
typedef struct intset { int *slot; size_t cap; } intset;
static int intset_add(intset *s, int v) {   /* 1 if v was new */
    size_t i;
    if (!s->cap) return 1;
    for (i = ((size_t)v * 2654435761u) & (s->cap - 1); s->slot[i] >= 0; i = (i + 1) & (s->cap - 1))
        if (s->slot[i] == v) return 0;
    s->slot[i] = v;
    return 1;
}
static void intset_init(intset *s, int n) {
    size_t i;
    for (s->cap = 16; s->cap < 2 * (size_t)n; s->cap *= 2) {}
    s->slot = xrealloc(NULL, s->cap * sizeof *s->slot);
    for (i = 0; i < s->cap; i++) s->slot[i] = -1;
}
static int known_suffix(const char *s, size_t n) {   /* GNU's default list ($* of an explicit rule) */
    int i;
    for (i = 0; default_suffixes[i]; i++) if (strlen(default_suffixes[i]) == n && strncmp(default_suffixes[i], s, n) == 0) return 1;
    return 0;
}
static void default_stem(const char *name, strbuf *out) {   /* $* of an explicit rule */
    const char *dot = strrchr(name, '.');
    if (dot && !strchr(dot, '/') && known_suffix(dot, strlen(dot))) sb_add(out, name, (size_t)(dot - name));
}

/* The target-specific and pattern-specific variables in force for n: those
   of the targets that led to it (from the goal down, GNU make's
   inheritance), each level's pattern ones first. Returns the chain of
   locals (in *ls, values in *vals, both for the caller to free). */
typedef struct tlocals { local *ls; char **vals; int n, cap; } tlocals;
static const local *target_locals(node *n, tlocals *t, const autovars *av) {
    int chain[256], nc = 0, c, k, i;
    const local *head = NULL;
    memset(t, 0, sizeof *t);
    if (!run_mk->npvars && !n->tv_inherit) return NULL;   /* the usual case: none at all */
    for (c = (int)(n - run_mk->nodes); c >= 0 && nc < 256; c = run_mk->nodes[c].walk_parent) chain[nc++] = c;
    {
        int total = 0;
        for (i = 0; i < nc; i++) total += NX(&run_mk->nodes[chain[i]])->ntvars + run_mk->npvars;
        t->ls = xrealloc(NULL, (size_t)(total ? total : 1) * sizeof *t->ls);
        t->vals = xrealloc(NULL, (size_t)(total ? total : 1) * sizeof *t->vals);
    }
    for (i = nc - 1; i >= 0; i--) {
        node *nd = &run_mk->nodes[chain[i]];
        for (k = 0; k < run_mk->npvars + NX(nd)->ntvars; k++) {
            const tvar *tv = k < run_mk->npvars ? &run_mk->pvars[k] : &nd->x->tvars[k - run_mk->npvars];
            const local *prior;
            const var *gv = var_find(run_mk, tv->name, strlen(tv->name));
            size_t so, sn, nl = strlen(tv->name);
            strbuf b = {0};
            int rec = tv->op == '=' || tv->op == '?';
            local *l;
            if (tv->pat && !pat_match(tv->pat, nd->name, strlen(nd->name), &so, &sn)) continue;
            if (gv && gv->origin == O_CMDLINE && !tv->ovr) continue;   /* the command line wins */
            for (prior = head; prior && !(prior->n == nl && strncmp(prior->name, tv->name, nl) == 0); prior = prior->up) {}
            if (gv && gv->undefined) gv = NULL;
            if (tv->op == '?' && (prior || gv)) continue;
            sb_add(&b, "", 0);
            if (tv->op == '+') {
                const char *old = prior ? prior->value : gv ? gv->value : NULL;
                rec = prior ? prior->recursive : gv ? !gv->simple : 1;
                if (old) { sb_puts(&b, old); if (*old && *tv->value) sb_putc(&b, ' '); }
                if (rec) sb_puts(&b, tv->value);
                else {
                    xctx x;
                    strbuf err = {0};
                    x.m = run_mk; x.av = av; x.file = NULL; x.line = 0; x.stack = NULL; x.locals = head; x.rd = NULL; x.err = &err; x.depth = 0;
                    if (expand_n(&x, tv->value, strlen(tv->value), &b) != 0) sb_puts(&b, tv->value);
                    free(err.s);
                }
            } else sb_puts(&b, tv->value);
            l = &t->ls[t->n];
            t->vals[t->n++] = sb_take(&b);
            l->name = tv->name; l->n = nl; l->value = t->vals[t->n - 1]; l->recursive = rec; l->up = head;
            head = l;
        }
    }
    return head;
}
static void free_tlocals(tlocals *t) { int i; for (i = 0; i < t->n; i++) free(t->vals[i]); free(t->vals); free(t->ls); }

static unsigned char prefix_flag(char c) {
    return c == '@' ? CMD_SILENT : c == '-' ? CMD_IGNORE : c == '+' ? CMD_PLUS : 0;
}

/* The engine's async function for one target. Decides at run time (the
   prerequisites' ops are complete, the engine guarantees it), never blocks. */
static void rule_op(dp_run_ctx *rc, void *arg, dp_completion done) {
    node *n = arg;
    long long ts = 0;
    int exists, ood, i, cmdcap = 0;
    tlocals tl;
    const local *tl_head;
    strbuf hat = {0}, plus = {0}, qm = {0}, bar = {0}, star = {0};
    autovars av;
    job *j;
    (void)rc;
    if (n->missing) { op_over(n, done, 2, "no rule to make target"); return; }
    pthread_mutex_lock(&run_mtx);
    i = stopping;
    run_unlock();
    if (i) { op_over(n, done, -2, "not started"); return; }
    exists = file_time(run_mk, n, &ts);
    ood = n->phony || !exists || opt_always || (n->dcolon && n->npre == 0);   /* a :: rule without prerequisites: always */
    for (i = 0; i < n->npre && !ood; i++) {
        const node *p = &run_mk->nodes[n->pre[i]];
        ood = p->phony || (p->remade && opt_dry_run) || missing_or_newer(p, ts);
    }
    if (!ood || !n->rcp) {
        if (ood) n->remade = 1;
        op_over(n, done, 0, NULL);
        return;
    }
    {   /* $^ (each once), $+ (all), $? (the ones newer than the target) */
        intset seen_hat, seen_qm;
        intset_init(&seen_hat, n->npre); intset_init(&seen_qm, n->npre);
        for (i = 0; i < n->npre; i++) {
            const node *p = &run_mk->nodes[n->pre[i]];
            const char *pf = NFILE(p);
            size_t len = strlen(pf);
            if (!exists || p->phony || (p->remade && opt_dry_run) || missing_or_newer(p, ts))
                if (intset_add(&seen_qm, n->pre[i])) sb_word(&qm, pf, len);
            if (intset_add(&seen_hat, n->pre[i])) sb_word(&hat, pf, len);
            sb_word(&plus, pf, len);
        }
        free(seen_hat.slot); free(seen_qm.slot);
    }
    for (i = 0; i < n->noo; i++) sb_word(&bar, NFILE(&run_mk->nodes[n->oo[i]]), strlen(NFILE(&run_mk->nodes[n->oo[i]])));
    if (NX(n)->stem) sb_puts(&star, n->x->stem); else default_stem(n->name, &star);
    av.at = n->name; av.lt = n->npre ? NFILE(&run_mk->nodes[n->pre[0]]) : "";
    av.hat = hat.s ? hat.s : ""; av.plus = plus.s ? plus.s : ""; av.qm = qm.s ? qm.s : "";
    av.bar = bar.s ? bar.s : ""; av.star = star.s ? star.s : "";
    j = xrealloc(NULL, sizeof *j);
    memset(j, 0, sizeof *j);
    j->n = n; j->done = done; j->trace_start = -1;
    j->existed = exists; j->old_ns = ts;
    tl_head = target_locals(n, &tl, &av);
    for (i = 0; i < n->rcp->n; i++) {
        strbuf err = {0}, out = {0};
        xctx x;
        char *c;
        unsigned char fl = 0;
        x.m = run_mk; x.av = &av; x.file = n->rcp->file; x.line = n->rcp->lineno[i]; x.stack = NULL; x.locals = tl_head; x.rd = NULL; x.err = &err; x.depth = 0;
        if (expand_n(&x, n->rcp->lines[i], strlen(n->rcp->lines[i]), &out) != 0) {
            job *finished = NULL;
            pthread_mutex_lock(&run_mtx);
            fflush(stdout);
            fprintf(stderr, "%s\n", err.s);
            node_over_locked(n, 2);
            if (!opt_keep_going && !stopping) stop_locked(&finished);
            kick_locked(&finished);
            run_unlock();
            finish_all(finished);
            free(err.s); free(out.s);
            j->status = 2;
            free(hat.s); free(plus.s); free(qm.s); free(bar.s); free(star.s);
            free_tlocals(&tl);
            finish_job(j);
            return;
        }
        if (opt_ignore || n->ignore || run_mk->ignore_all) fl |= CMD_IGNORE;
        if (n->silent || run_mk->silent_all) fl |= CMD_SILENT;
        /* GNU make runs a line that mentions $(MAKE) or ${MAKE} under -n too */
        if (strstr(n->rcp->lines[i], "$(MAKE)") || strstr(n->rcp->lines[i], "${MAKE}")) fl |= CMD_PLUS;
        for (c = n->rcp->lines[i]; *c && (is_space(*c) || *c == '@' || *c == '-' || *c == '+'); c++)
            fl |= prefix_flag(*c);                 /* the written line's prefixes: for all its lines */
        /* a newline from a variable (define) starts a command line of its
           own, with its own prefixes too; a backslash-newline does not */
        for (c = out.s;; c++) {
            char *e = c;
            unsigned char lf = fl;
            while (*e && !(*e == '\n' && (e == out.s || e[-1] != '\\'))) e++;
            for (; c < e && (is_space(*c) || *c == '@' || *c == '-' || *c == '+'); c++) lf |= prefix_flag(*c);
            GROW(j->cmds, j->ncmds, cmdcap);
            j->flags = xrealloc(j->flags, (size_t)cmdcap);
            j->lineno = xrealloc(j->lineno, (size_t)cmdcap * sizeof *j->lineno);
            j->cmds[j->ncmds] = xstrndup(c, (size_t)(e - c));
            j->flags[j->ncmds] = lf;
            j->lineno[j->ncmds++] = n->rcp->lineno[i];
            if (!*e) break;
            c = e;
        }
        free(out.s); free(err.s);
    }
    free_tlocals(&tl);
    free(hat.s); free(plus.s); free(qm.s); free(bar.s); free(star.s);
    {   /* only empty lines: nothing to run; -q runs only recursive (+, $(MAKE)) recipes */
        int runnable = 0;
        for (i = 0; i < j->ncmds; i++)
            if (j->cmds[i][0]) {
                runnable = 1;
                if (opt_question && !(j->flags[i] & CMD_PLUS)) { atomic_store(&question_ood, 1); runnable = 0; break; }
            }
        i = runnable ? 0 : j->ncmds;
    }
    if (i == j->ncmds) {
        job *finished = NULL;
        pthread_mutex_lock(&run_mtx);
        node_over_locked(n, 0);
        kick_locked(&finished);
        run_unlock();
        finish_all(finished);
        j->status = 0;
        finish_job(j);
        return;
    }
    submit_job(j);
}

/* One async op per target: reads its prerequisites' vars (normal and
   order-only; files without an op are never written, so they are always
   ready and left out), writes its own var. */
static int push_node(dp_engine *eng, mk_make *m, node *n, int norder, dp_var **reads, int *cap) {
    dp_push_desc d;
    int i, k = 0;
    for (i = 0; i < n->npre + n->noo; i++) {
        const node *p = &m->nodes[i < n->npre ? n->pre[i] : n->oo[i - n->npre]];
        if (!p->var.id) continue;
        GROW(*reads, k, *cap);
        (*reads)[k++] = p->var;
    }
    memset(&d, 0, sizeof d);
    d.async_fn = rule_op; d.arg = n;
    d.reads = *reads; d.num_reads = k;
    d.writes = &n->var; d.num_writes = 1;
    d.name = n->name;
    /* Earliest in the plan first, where the engine has priority threads
       (build() starts none: there the ops run in the order they become
       ready, which for the rules one completion makes ready at once, every
       object after a generated header, is plan order too). (At -j1 the job
       table's gate makes the order exactly GNU make's: a rule that becomes
       ready late still runs before the later ones that were ready early.) */
    d.prop = DP_PROP_CPU_PRIORITIZED;
    d.priority = norder - n->plan_idx;
    return dp_push(eng, &d) == DP_OK ? 0 : -1;
}

/* Whether any command ran for the goal or below it (GNU make's "up to date"
   and "Nothing to be done" messages are for goals where nothing ran). */
static int subtree_ran(mk_make *m, int g, int mark) {
    int *st = NULL, nst = 0, cap = 0, found = 0;
    GROW(st, nst, cap);
    st[nst++] = g;
    m->nodes[g].goal_mark = mark;
    while (nst && !found) {
        node *n = &m->nodes[st[--nst]];
        int i;
        if (n->ran) found = 1;
        for (i = 0; i < n->npre + n->noo; i++) {
            int c = i < n->npre ? n->pre[i] : n->oo[i - n->npre];
            if (m->nodes[c].goal_mark == mark) continue;
            m->nodes[c].goal_mark = mark;
            GROW(st, nst, cap);
            st[nst++] = c;
        }
    }
    free(st);
    return found;
}

static void quiet_logger(const char *tag, uint32_t level, uint32_t item, const char *message,
                         uint32_t line, const char *file, void *user) {
    /* make prints its own messages for failed commands; the engine's notes
       about failed or skipped ops would only repeat them */
    (void)tag; (void)level; (void)item; (void)message; (void)line; (void)file; (void)user;
}

static dp_engine *exit_eng;              /* the last build's engine, left to the exit */
/* Runs the build of the parsed graph m for the goals; returns make's exit
   status. quiet: no "Nothing to be done" messages (remaking makefiles).
   May run more than once (the makefiles first): every run starts afresh. */
static int build(mk_make *m, const int *goals, int ngoals, int quiet) {
    dp_engine_desc desc;
    dp_engine *eng = NULL;
    int *order = NULL, norder = 0, i, failed = 0, rcap = 0;
    dp_var *reads = NULL;
    for (i = 0; i < m->nnodes; i++) {
        node *n = &m->nodes[i];
        n->walk = 0; n->gstate = 0; n->var.id = 0; n->remade = 0; n->ran = 0; n->missing = 0; n->goal_mark = 0; n->is_goal = 0;
        n->st_known = 0;
    }
    for (i = 0; i < ngoals; i++) m->nodes[goals[i]].is_goal = 1;
    stopping = 0; runner_quit = 0; nchildren = 0; nrunning = 0; queue_head = queue_tail = NULL;
    start_head = start_tail = NULL; nstart_list = nstarting = waiting = 0;
    if (!quiet) stat_ahead_start(m);           /* not for the makefiles' own build: few files */
    if (plan(m, goals, ngoals, opt_keep_going, &order, &norder) != 0) { stat_ahead_end(); free(order); return 2; }
    memset(&desc, 0, sizeof desc);
    desc.type = DP_ENGINE_PERDEVICE;
    /* No engine thread: the ops run on this thread, in dp_wait_var and
       dp_wait_all below. rule_op only stats and expands, the commands run in
       child processes, so a worker would add nothing but hand-overs: with
       one priority worker, a 300-target no-op on a loaded machine (load 20
       on 2 cores) took 1.6-3.6 s, this thread waiting for the worker to be
       scheduled, against 0.25-0.32 s without it and 0.1-0.2 s for GNU make.
       Without priority threads the ops reach the CPU pool in the order they
       become ready (their priority is not kept): pushed in plan order, and
       the rules one completion makes ready in the order they were pushed. */
    desc.cpu_worker_nthreads = DP_NO_THREADS;
    desc.cpu_priority_nthreads = DP_NO_THREADS;
    desc.logger.func = quiet_logger;
    if (dp_engine_create(&desc, &eng) != DP_OK) { fprintf(stderr, "%s: *** could not create the engine.  Stop.\n", mk_prog); stat_ahead_end(); free(order); return 2; }
    run_mk = m;
    slots_free = opt_jobs;
    plan_order = order; plan_n = norder; gate = 0;
    gate_jobs = NULL;
    if (opt_jobs == 1 && norder) {
        gate_jobs = xrealloc(NULL, (size_t)norder * sizeof *gate_jobs);
        memset(gate_jobs, 0, (size_t)norder * sizeof *gate_jobs);
    }
    for (i = 0; i < norder && !failed; i++) {
        node *n = &m->nodes[order[i]];
        n->var = dp_var_create(eng);
        if (!n->var.id || push_node(eng, m, n, norder, &reads, &rcap) != 0) { fprintf(stderr, "%s: *** the engine refused an operation.  Stop.\n", mk_prog); failed = 1; }
    }
    for (i = 0; i < ngoals; i++) {
        dp_failure f;
        node *g = &m->nodes[goals[i]];
        if (g->var.id && dp_wait_var(eng, g->var, &f) != DP_OK) {
            failed = 1;
            if (opt_keep_going && !gate_jobs) not_remade_locked(g);
        }
    }
    if (dp_wait_all(eng, NULL) != DP_OK) failed = 1;
    stat_ahead_end();
    if (nrunners) {                            /* every job is over: the runners end, before the engine
                                                  may go (the last dp_complete may not have returned yet) */
        int k, n;
        pthread_mutex_lock(&run_mtx);
        runner_quit = 1;
        pthread_cond_broadcast(&runner_cv);
        n = nrunners;
        pthread_mutex_unlock(&run_mtx);
        for (k = 0; k < n; k++) pthread_join(runner_th[k], NULL);
        nrunners = 0;
    }
    /* The last build leaves its engine to the exit, as main leaves the
       graph: destroying it returned its pools to the system one munmap at
       a time, a cost paid again when the process ends. */
    if (quiet) dp_engine_destroy(eng, NULL); else exit_eng = eng;
    if (!failed && !quiet && !opt_silent && !opt_question)
        for (i = 0; i < ngoals; i++) {
            node *g = &m->nodes[goals[i]];
            if (subtree_ran(m, goals[i], i + 1)) continue;
            if (g->rcp && !g->phony) printf("%s: '%s' is up to date.\n", mk_prog, g->name);
            else printf("%s: Nothing to be done for '%s'.\n", mk_prog, g->name);
        }
    fflush(stdout);
    free(order); free(reads); free(running); free(gate_jobs);
    running = NULL; nrunning = runcap = 0; gate_jobs = NULL;
    if (opt_question && atomic_load(&question_ood)) return 1;
    return failed ? 2 : 0;
}

/* GNU make's remaking of makefiles: every file read (and every included
   file that was missing) that has a rule is made first, quietly; if one was
   remade, make starts again from the beginning (exec of itself, in the
   directory it started in, MAKE_RESTARTS counting). An included file that
   is still missing is then an error, unless it was -include'd. Makefile
   rules run even under -n and -q, as in GNU make. */
static int remake_makefiles(mk_make *m, char **argv, const char *startdir) {
    int *goals = NULL, n = 0, i, k, rc = 0, ran = 0, restarts = getenv("MAKE_RESTARTS") ? atoi(getenv("MAKE_RESTARTS")) : 0;
    int sv_n = opt_dry_run, sv_q = opt_question, sv_b = opt_always;
    for (i = 0; i < m->nfiles + m->nminc; i++) {
        const char *f = i < m->nfiles ? m->files[i] : m->minc[i - m->nfiles].name;
        int dup = 0;
        if (i < m->nfiles) {
            k = map_get(&m->node_map, f, strlen(f));
            if (k < 0 || !m->nodes[k].rcp) continue;
        } else {
            k = node_get(m, f);
            if (!m->nodes[k].rcp && !m->nodes[k].implicit_done) { m->nodes[k].implicit_done = 1; implicit_search(m, k); }
            if (!m->nodes[k].rcp && !m->nodes[k].is_target) continue;
        }
        for (dup = 0; dup < n && goals[dup] != k; dup++) {}
        if (dup < n) continue;
        goals = xrealloc(goals, (size_t)(n + 1) * sizeof *goals);
        goals[n++] = k;
    }
    if (n) {
        opt_dry_run = 0; opt_question = 0;
        opt_always = 0;                            /* -B does not remake makefiles (GNU make) */
        rc = build(m, goals, n, 1);
        opt_dry_run = sv_n; opt_question = sv_q; opt_always = sv_b;
        for (i = 0; i < n; i++) if (m->nodes[goals[i]].ran) ran = 1;
    }
    free(goals);
    if (rc == 0 && ran && restarts < 50) {
        char num[32];
        const var *mk = var_find(m, "MAKE", 4);
        fflush(stdout); fflush(stderr);
        snprintf(num, sizeof num, "%d", restarts + 1);
        setenv("MAKE_RESTARTS", num, 1);
        if (startdir[0] && chdir(startdir) != 0) return 2;
        if (mk && strchr(mk->value, '/')) execv(mk->value, argv); else execvp(argv[0], argv);
        fprintf(stderr, "%s: *** could not restart %s: %s.  Stop.\n", mk_prog, argv[0], strerror(errno));
        return 2;
    }
    if (rc) return rc;
    for (i = 0; i < m->nminc; i++)
        if (!m->minc[i].optional && !file_exists(m->minc[i].name)) { fflush(stdout); fprintf(stderr, "%s\n", m->minc[i].msg); return 2; }
    return 0;
}

/* $(shell cmd) and VAR != cmd: the command's output, newlines made spaces,
   the trailing ones dropped (GNU make's rule). Runs under $(SHELL)? No:
   popen's /bin/sh, which is what GNU make uses unless SHELL is set. */
static char *run_shell(mk_make *m, const char *cmd) {
    FILE *f;
    strbuf b = {0};
    char chunk[4096];
    size_t k;
    (void)m;
    fflush(stdout);
    touch_files();                                 /* it may write files: see stat_ahead */
    f = popen(cmd, "r");
    if (!f) return xstrdup("");
    sb_add(&b, "", 0);
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) sb_add(&b, chunk, k);
    pclose(f);
    while (b.len && b.s[b.len - 1] == '\n') b.s[--b.len] = '\0';
    for (k = 0; k < b.len; k++) if (b.s[k] == '\n') b.s[k] = ' ';
    return sb_take(&b);
}

/* The commands' environment: the variables from the environment (with the
   Makefile's value, if it set one), those from the command line and those
   exported, each expanded once now; MAKEFLAGS, MFLAGS and MAKELEVEL for a
   sub-make; SHELL as the environment had it (the Makefile's SHELL runs
   the commands but is not passed on, as in GNU make). */
static char **make_child_env(mk_make *m, int level, const char *shell_env) {
    char **env = NULL;
    int n = 0, cap = 0, i;
    for (i = 0; i < m->nvars; i++) {
        var *v = &m->vars[i];
        strbuf b = {0}, err = {0};
        xctx x;
        int exp = v->exported == 1 || (v->exported == -1 && (v->origin == O_CMDLINE ||
                  (m->export_all && v->origin != O_DEFAULT && v->origin != O_AUTOMATIC)));
        if (!exp || v->undefined || strcmp(v->name, "SHELL") == 0 || strcmp(v->name, "MAKEFLAGS") == 0 ||
            strcmp(v->name, "MFLAGS") == 0 || strcmp(v->name, "MAKELEVEL") == 0) continue;
        sb_puts(&b, v->name); sb_putc(&b, '=');
        x.m = m; x.av = NULL; x.file = NULL; x.line = 0; x.stack = NULL; x.locals = NULL; x.rd = NULL; x.err = &err; x.depth = 0;
        if (v->simple) sb_puts(&b, v->value);
        else if (expand_n(&x, v->value, strlen(v->value), &b) != 0) { b.len = 0; sb_puts(&b, v->name); sb_putc(&b, '='); sb_puts(&b, v->value); }
        free(err.s);
        GROW(env, n, cap);
        env[n++] = sb_take(&b);
    }
    {
        const char *names[] = { "MAKEFLAGS", "MFLAGS" };
        for (i = 0; i < 2; i++) {
            const var *v = var_find(m, names[i], strlen(names[i]));
            strbuf b = {0};
            sb_puts(&b, names[i]); sb_putc(&b, '='); if (v) sb_puts(&b, v->value);
            GROW(env, n, cap); env[n++] = sb_take(&b);
        }
    }
    {
        char lv[48];
        snprintf(lv, sizeof lv, "MAKELEVEL=%d", level + 1);
        GROW(env, n, cap); env[n++] = xstrdup(lv);
    }
    if (shell_env) {
        strbuf b = {0};
        sb_puts(&b, "SHELL="); sb_puts(&b, shell_env);
        GROW(env, n, cap); env[n++] = sb_take(&b);
    }
    GROW(env, n, cap);
    env[n] = NULL;
    return env;
}

/* $(SHELL) $(.SHELLFLAGS) as the argv a command line is appended to. */
static void make_shell_argv(mk_make *m) {
    xctx x;
    strbuf err = {0};
    char *sh, *fl, *w;
    int cap = 0;
    x.m = m; x.av = NULL; x.file = NULL; x.line = 0; x.stack = NULL; x.locals = NULL; x.rd = NULL; x.err = &err; x.depth = 0;
    sh = expand_str(&x, "$(SHELL)");
    fl = expand_str(&x, "$(.SHELLFLAGS)");
    free(err.s);
    if (!sh || !*trim(sh)) { free(sh); sh = xstrdup("/bin/sh"); }
    if (!fl) fl = xstrdup("-c");
    shell_is_sh = strcmp(trim(sh), "/bin/sh") == 0 && strcmp(trim(fl), "-c") == 0;
    shell_argc = 0;
    GROW(shell_argv, shell_argc, cap);
    shell_argv[shell_argc++] = xstrdup(trim(sh));
    for (w = strtok(fl, " \t"); w; w = strtok(NULL, " \t")) { GROW(shell_argv, shell_argc, cap); shell_argv[shell_argc++] = xstrdup(w); }
    GROW(shell_argv, shell_argc, cap); GROW(shell_argv, shell_argc + 1, cap);   /* the command, NULL */
    shell_argv[shell_argc] = NULL; shell_argv[shell_argc + 1] = NULL;
    free(sh); free(fl);
}

static int usage(const char *argv0) {
    fprintf(stderr, "usage: %s [options] [VAR=value ...] [goal ...]\n"
            "options: -B -C dir -e -f file -i -j [N] --jobs[=N] -k -n -q -r -R -s -S -w\n"
            "         --no-print-directory --print-directory --version, and their GNU long names\n"
            "         --trace FILE (a line per rule that ran, for examples/make_page.c)\n", argv0);
    return 2;
}

/* Command-line state shared by the arguments and MAKEFLAGS. */
typedef struct cmdline {
    const char **files; int nfiles, fcap;
    const char *dir;
    char **goals; int ngoals, gcap;
    char **vars; int nvars, vcap;          /* "NAME=value" in the order given */
    int version;
} cmdline;

/* Parses options (and, unless only_opts, goals and VAR=value) from args.
   Returns 0, or -1 for an option this make does not know. */
static int parse_args(cmdline *c, int argc, char **argv, int from_env) {
    int i, only_vars = 0;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_vars || (a[0] != '-' && strchr(a, '='))) {
            if (strchr(a, '=')) { GROW(c->vars, c->nvars, c->vcap); c->vars[c->nvars++] = xstrdup(a); }
            continue;
        }
        if (strcmp(a, "--") == 0) { only_vars = from_env; continue; }
        if (a[0] != '-' || a[1] == '\0') {
            if (from_env) continue;
            GROW(c->goals, c->ngoals, c->gcap); c->goals[c->ngoals++] = xstrdup(a);
            continue;
        }
        if (a[1] == '-') {                       /* long options */
            const char *o = a + 2, *eq = strchr(o, '=');
            size_t on = eq ? (size_t)(eq - o) : strlen(o);
#define LONG(s) (on == sizeof(s) - 1 && strncmp(o, s, on) == 0)
            if (LONG("jobs")) opt_jobs = eq ? atoi(eq + 1) : (i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9') ? atoi(argv[++i]) : 1 << 20;
            else if (LONG("keep-going")) opt_keep_going = 1;
            else if (LONG("no-keep-going") || LONG("stop")) opt_keep_going = 0;
            else if (LONG("dry-run") || LONG("just-print") || LONG("recon")) opt_dry_run = 1;
            else if (LONG("silent") || LONG("quiet")) opt_silent = 1;
            else if (LONG("always-make")) opt_always = 1;
            else if (LONG("question")) opt_question = 1;
            else if (LONG("no-builtin-rules")) opt_no_builtin = 1;
            else if (LONG("no-builtin-variables")) opt_no_builtin = opt_no_builtin_vars = 1;
            else if (LONG("ignore-errors")) opt_ignore = 1;
            else if (LONG("environment-overrides")) opt_env_over = 1;
            else if (LONG("print-directory")) opt_print_dir = 1;
            else if (LONG("no-print-directory")) opt_no_print_dir = 1;
            else if (LONG("version")) c->version = 1;
            else if (LONG("jobserver-auth") || LONG("jobserver-fds")) {}   /* a GNU parent's; no jobserver here */
            else if (LONG("trace") && !from_env && (eq || i + 1 < argc)) opt_trace = eq ? eq + 1 : argv[++i];
            else if ((LONG("directory") || LONG("file") || LONG("makefile")) && (eq || i + 1 < argc)) {
                const char *v = eq ? eq + 1 : argv[++i];
                if (o[0] == 'd') c->dir = v; else { GROW(c->files, c->nfiles, c->fcap); c->files[c->nfiles++] = v; }
            } else return from_env ? 0 : -1;
#undef LONG
            continue;
        }
        {   /* a cluster of short options: -ks, -j4, -fFILE, -C dir */
            const char *p = a + 1;
            for (; *p; p++) {
                switch (*p) {
                case 'k': opt_keep_going = 1; break;
                case 'S': opt_keep_going = 0; break;
                case 'n': opt_dry_run = 1; break;
                case 's': opt_silent = 1; break;
                case 'B': opt_always = 1; break;
                case 'q': opt_question = 1; break;
                case 'r': opt_no_builtin = 1; break;
                case 'R': opt_no_builtin = opt_no_builtin_vars = 1; break;
                case 'i': opt_ignore = 1; break;
                case 'e': opt_env_over = 1; break;
                case 'w': opt_print_dir = 1; break;
                case 'j':
                    if (p[1] >= '0' && p[1] <= '9') { opt_jobs = atoi(p + 1); p += strlen(p) - 1; }
                    else if (!p[1] && i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9') opt_jobs = atoi(argv[++i]);
                    else opt_jobs = 1 << 20;   /* no number: no limit, as in GNU make */
                    break;
                case 'f': case 'C': {
                    const char *v = p[1] ? p + 1 : (i + 1 < argc ? argv[++i] : NULL);
                    if (!v) return -1;
                    if (*p == 'C') c->dir = v; else { GROW(c->files, c->nfiles, c->fcap); c->files[c->nfiles++] = v; }
                    p += strlen(p) - 1;
                    break; }
                default: if (!from_env) return -1;
                }
            }
        }
    }
    return 0;
}

/* MAKEFLAGS (and MFLAGS) for this make's commands: the flags as GNU make
   writes them (letters first, in its order), then " -jN", then " -- " and
   the command-line variables, the last given first, spaces escaped. */
static void set_makeflags(mk_make *m, const cmdline *c) {
    strbuf f = {0}, mf = {0};
    char jb[32];
    int i;
    const struct { int on; char l; } fl[] = {
        {opt_always, 'B'}, {opt_env_over, 'e'}, {opt_ignore, 'i'}, {opt_keep_going, 'k'}, {opt_dry_run, 'n'},
        {opt_question, 'q'}, {opt_no_builtin, 'r'}, {opt_no_builtin_vars, 'R'}, {opt_silent, 's'}, {opt_print_dir, 'w'} };
    sb_add(&f, "", 0);
    for (i = 0; i < (int)(sizeof fl / sizeof fl[0]); i++) if (fl[i].on) sb_putc(&f, fl[i].l);
    if (f.len) { sb_putc(&mf, '-'); sb_puts(&mf, f.s); }
    if (opt_jobs != 1) {
        if (opt_jobs >= 1 << 20) snprintf(jb, sizeof jb, "-j"); else snprintf(jb, sizeof jb, "-j%d", opt_jobs);
        if (f.len) sb_putc(&f, ' '); else sb_putc(&f, ' ');
        sb_puts(&f, jb);
        if (mf.len) sb_putc(&mf, ' ');
        sb_puts(&mf, jb);
    }
    if (opt_no_print_dir) { sb_puts(&f, f.len ? " --no-print-directory" : " --no-print-directory"); }
    if (c->nvars) {
        sb_puts(&f, f.len ? " -- " : " -- ");
        for (i = c->nvars - 1; i >= 0; i--) {
            const char *p;
            for (p = c->vars[i]; *p; p++) { if (*p == ' ' || *p == '\t' || *p == '\\') sb_putc(&f, '\\'); sb_putc(&f, *p); }
            if (i) sb_putc(&f, ' ');
        }
    }
    var_set(m, "MAKEFLAGS", f.s && f.s[0] == ' ' && f.s[1] == '-' && f.s[2] == '-' && f.s[3] == ' ' ? f.s + 1 : (f.s ? f.s : ""), 1, O_FILE);
    var_set(m, "MFLAGS", mf.s ? mf.s : "", 1, O_FILE);
    free(f.s); free(mf.s);
}

/* Splits MAKEFLAGS from the environment into words (backslash escapes a
   space); the first word, if it has no '-', is a cluster of flag letters. */
static void read_env_makeflags(cmdline *c, const char *mf) {
    char **w = NULL;
    int n = 0, cap = 0, i;
    strbuf b = {0};
    const char *p = mf;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        b.len = 0; sb_add(&b, "", 0);
        for (; *p && *p != ' '; p++) { if (*p == '\\' && p[1]) p++; sb_putc(&b, *p); }
        GROW(w, n, cap);
        w[n++] = xstrdup(b.s);
    }
    free(b.s);
    if (n && w[0][0] != '-' && !strchr(w[0], '=')) {   /* "ks" is "-ks" */
        char *d = xrealloc(NULL, strlen(w[0]) + 2);
        d[0] = '-'; strcpy(d + 1, w[0]);
        free(w[0]); w[0] = d;
    }
    parse_args(c, n, w, 1);
    for (i = 0; i < n; i++) free(w[i]);
    free(w);
}

static mk_make *exit_mk;                 /* the graph main leaves to the exit */
int main(int argc, char **argv) {
    cmdline c;
    char cwd[4096], startdir[4096], *self, **ep;
    const char *mf_env = getenv("MAKEFLAGS"), *lvl = getenv("MAKELEVEL"), *shell_env = getenv("SHELL");
    int i, *goals = NULL, ngoals = 0, rc = 0, level = lvl ? atoi(lvl) : 0, print_dir, nenvvars;
    mk_make *m = mk_new();
    memset(&c, 0, sizeof c);
    if (level < 0) level = 0;
    if (level > 0) snprintf(mk_prog, sizeof mk_prog, "make[%d]", level);
    if (!getcwd(startdir, sizeof startdir)) startdir[0] = '\0';
    if (mf_env) read_env_makeflags(&c, mf_env);
    nenvvars = c.nvars;
    if (parse_args(&c, argc - 1, argv + 1, 0) != 0) { mk_free(m); return usage(argv[0]); }
    if (c.version) {
        printf("GNU Make 4.3 compatible subset (depeng examples/make.c)\n");
        mk_free(m);
        return 0;
    }
    if (opt_jobs < 1) { fprintf(stderr, "%s: the '-j' option requires a positive integer argument\n", mk_prog); mk_free(m); return 2; }
    if (opt_trace) {                             /* opened before -C: the path is the caller's */
        clock_gettime(CLOCK_MONOTONIC, &trace_t0);
        if (!(trace_file = fopen(opt_trace, "w"))) { fprintf(stderr, "%s: *** --trace %s: %s.  Stop.\n", mk_prog, opt_trace, strerror(errno)); mk_free(m); return 2; }
    }
    if (opt_no_builtin_vars) {                   /* -R: no default variables */
        for (i = 0; default_vars[i][0][0]; i++) { var *v = var_find(m, default_vars[i][0], strlen(default_vars[i][0])); if (v) v->undefined = 1, v->value[0] = '\0'; }
    }
    /* the environment, then the command line (default < environment <
       Makefile < command line; -e puts the environment above the Makefile).
       SHELL is never taken from the environment (POSIX, GNU make). */
    for (ep = environ; *ep; ep++) {
        const char *eq = strchr(*ep, '=');
        char *name;
        var *v;
        if (!eq || eq == *ep) continue;
        name = xstrndup(*ep, (size_t)(eq - *ep));
        if (strcmp(name, "SHELL") && strcmp(name, "MAKEFLAGS") && strcmp(name, "MFLAGS") && strcmp(name, "MAKELEVEL")) {
            v = var_set(m, name, eq + 1, 0, opt_env_over ? O_ENV_OVERRIDE : O_ENV);
            v->exported = 1;
        }
        free(name);
    }
    for (i = 0; i < c.nvars; i++) {
        char *copy = xstrdup(c.vars[i]), *eq = strchr(copy, '=');
        int simple = eq > copy && eq[-1] == ':';
        var *v;
        (void)nenvvars;
        if (simple) eq[-1] = '\0';
        *eq = '\0';
        v = var_set(m, trim(copy), eq + 1, 0, O_CMDLINE);
        v->exported = -1;
        free(copy);
    }
    self = argv[0];
    if (strchr(self, '/') && self[0] != '/' && startdir[0]) {
        strbuf b = {0};
        sb_puts(&b, startdir); sb_putc(&b, '/'); sb_puts(&b, self);
        var_set(m, "MAKE", b.s, 1, O_DEFAULT);
        free(b.s);
    } else var_set(m, "MAKE", self, 1, O_DEFAULT);
    {
        char lv[32];
        strbuf g = {0};
        snprintf(lv, sizeof lv, "%d", level);
        var_set(m, "MAKELEVEL", lv, 1, O_ENV);
        for (i = 0; i < c.ngoals; i++) sb_word(&g, c.goals[i], strlen(c.goals[i]));
        var_set(m, "MAKECMDGOALS", g.s ? g.s : "", 1, O_DEFAULT);
        free(g.s);
    }
    print_dir = !opt_no_print_dir && (opt_print_dir || (!opt_silent && !opt_question && (level > 0 || c.dir)));
    if (print_dir && (level > 0 || c.dir)) opt_print_dir = 1;
    set_makeflags(m, &c);
    if (c.dir) {
        if (chdir(c.dir) != 0) { fprintf(stderr, "%s: *** %s: %s.  Stop.\n", mk_prog, c.dir, strerror(errno)); mk_free(m); return 2; }
    }
    if (getcwd(cwd, sizeof cwd)) var_set(m, "CURDIR", cwd, 1, O_FILE); else cwd[0] = '\0';
    if (print_dir) printf("%s: Entering directory '%s'\n", mk_prog, cwd);
    m->shell_fn = run_shell;
    m->defer_missing = 1;
    if (opt_no_builtin) { free_list(m->suffixes, m->nsuffixes); m->suffixes = NULL; m->nsuffixes = m->suffixcap = 0; }
    if (c.nfiles == 0) {
        const char *def = file_exists("GNUmakefile") ? "GNUmakefile" : file_exists("makefile") ? "makefile" : file_exists("Makefile") ? "Makefile" : NULL;
        if (def) { GROW(c.files, c.nfiles, c.fcap); c.files[c.nfiles++] = def; }
    }
    for (i = 0; i < c.nfiles && rc == 0; i++)
        if (mk_parse_file(m, c.files[i]) != 0) { fflush(stdout); fprintf(stderr, "%s\n", mk_error(m)); rc = 2; }
    if (rc == 0 && !opt_no_builtin) add_builtin_rules(m);
    if (m->notparallel) opt_jobs = 1;            /* .NOTPARALLEL: one job at a time */
    if (m->posix) {                              /* .POSIX: the shell stops at the first error */
        var *sf = var_find(m, ".SHELLFLAGS", 11);
        if (sf && sf->origin == O_DEFAULT) var_set(m, ".SHELLFLAGS", "-ec", 1, O_DEFAULT);
    }
    if (rc == 0) {
        child_env = make_child_env(m, level, shell_env);
        make_shell_argv(m);
        rc = remake_makefiles(m, argv, startdir);
    }
    if (rc == 0) {
        for (i = 0; i < c.ngoals; i++) {
            int g = node_get(m, c.goals[i]), k;
            for (k = 0; k < ngoals && goals[k] != g; k++) {}
            if (k == ngoals) { goals = xrealloc(goals, (size_t)(ngoals + 1) * sizeof *goals); goals[ngoals++] = g; }
        }
        if (ngoals == 0) {
            const var *dg = var_find(m, ".DEFAULT_GOAL", strlen(".DEFAULT_GOAL"));
            int g = m->default_goal;
            if (dg) {
                strbuf e = {0};
                xctx x;
                x.m = m; x.av = NULL; x.file = NULL; x.line = 0; x.stack = NULL; x.locals = NULL; x.rd = NULL; x.err = &m->err; x.depth = 0;
                if (expand_n(&x, dg->value, strlen(dg->value), &e) == 0 && *trim(e.s)) g = node_get(m, trim(e.s));
                free(e.s);
            }
            if (g < 0) {
                fprintf(stderr, c.nfiles ? "%s: *** No targets.  Stop.\n" : "%s: *** No targets specified and no makefile found.  Stop.\n", mk_prog);
                rc = 2;
            } else { goals = xrealloc(goals, sizeof *goals); goals[ngoals++] = g; }
        }
    }
    if (rc == 0) rc = build(m, goals, ngoals, 0);
    if (print_dir) printf("%s: Leaving directory '%s'\n", mk_prog, cwd);
    if (child_env) { for (i = 0; child_env[i]; i++) free(child_env[i]); free(child_env); }
    if (shell_argv) { for (i = 0; i < shell_argc; i++) free(shell_argv[i]); free(shell_argv); }
    for (i = 0; i < c.ngoals; i++) free(c.goals[i]);
    for (i = 0; i < c.nvars; i++) free(c.vars[i]);
    free(c.goals); free(c.vars); free(goals); free(c.files);
    if (trace_file && fclose(trace_file) != 0) { fprintf(stderr, "%s: *** --trace %s: write error.\n", mk_prog, opt_trace); if (rc == 0) rc = 2; }
    /* The graph is not freed: the process ends here and the system takes
       its memory back at once, where freeing 10,000 rules one by one took
       a tenth of a no-op run (GNU make does not free its either). The
       pointer keeps it reachable for leak checkers. */
    exit_mk = m;
    return rc;
}
#endif
