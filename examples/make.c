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

     The async function (rule_op) runs on an engine worker and never blocks: it
     stats the files to decide whether the target is out of date (at run time,
     since a prerequisite may just have been rebuilt), expands the recipe and
     hands it to the job table. The job table starts a command with posix_spawn
     (of /bin/sh -c, or of the command itself when it has no shell syntax, as
     GNU make does) only when one of the -j N job slots is free. ONE reaper
     thread collects every child with waitpid(-1), starts the rule's next
     command line or the next queued job, and finally calls dp_complete with
     the rule's status; that is what releases the target's var and lets the
     engine start the rules that read it. So the number of threads is fixed
     (engine workers + the reaper), whatever the number of rules.

     The ops go to the engine's priority pool with the plan position as their
     priority, so when one completion makes many rules ready at once they
     start in the order GNU make would start them (at -j1: the same order,
     and a failure stops the build at the same place). Without -k the first
     failure stops new jobs (the running ones are waited for); with -k the
     engine's skipping of failed inputs is exactly GNU make's "keep going".

   WHAT IS SUPPORTED (GNU make's behaviour for this subset)
     - rules `t1 t2: p1 p2 | orderonly ; cmd`, recipe lines starting with a tab,
       several targets per rule (each target its own rule, same recipe),
       several rule lines for one target (prerequisites are merged; those of the
       rule with the recipe come first), `\` continuation lines, `#` comments,
       shell wildcards (* ? [) in target and prerequisite names;
     - variables: `=` (recursive), `:=` / `::=` (simple), `?=`, `+=`,
       `$(VAR)`, `${VAR}`, `$X`, computed names `$($(A)_B)`, substitution
       references `$(VAR:.c=.o)` and `$(VAR:%.c=obj/%.o)`; command-line
       `VAR=value` overrides the Makefile; the environment is read for names
       the Makefile does not define; defaults CC=cc, CXX=g++, AR=ar,
       ARFLAGS=rv, RM=rm -f, MAKE=this program; .DEFAULT_GOAL;
     - automatic variables $@ $< $^ $+ $? $* $| and their D/F forms ($(@D)...);
       `$$` for a dollar sign;
     - functions: wildcard patsubst subst strip filter filter-out sort words
       firstword dir notdir suffix basename addprefix addsuffix info warning
       error;
     - conditionals: ifeq/ifneq with (a,b) "a" "b" 'a' 'b', ifdef/ifndef, else
       (also `else ifeq ...`), endif;
     - pattern rules `%.o: %.c` (and `obj/%.o: src/%.c`) with $*, chosen for a
       target that has no recipe when all their prerequisites exist or are
       mentioned in the Makefile (shortest stem wins, then file order); the
       built-in `%.o: %.c` rule ($(CC) $(CFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c
       -o $@ $<) comes after the Makefile's own;
     - .PHONY; .SUFFIXES, .PRECIOUS and .SECONDARY are accepted (no suffix rules
       exist and intermediate files are never deleted, so they change nothing);
     - `include` and `-include` / `sinclude` (read as they are; a missing
       -include file is ignored, included files are not remade);
     - recipe prefixes `@` (silent), `-` (ignore errors), `+` (run even
       under -n);
     - options -f FILE, -C DIR, -j N, -k, -n, several goals, VAR=value; the
       default file is `makefile`, then `Makefile` (GNU make's order, without
       GNUmakefile); the default goal is the first target that does not start
       with `.` (unless it contains a `/`) and is not a pattern.
     Errors read like GNU make's (`Makefile:12: *** missing separator.  Stop.`),
     make stops at the first failing command (waiting for the running ones)
     unless -k, a circular dependency is dropped with GNU make's message, and
     the exit status is 2 on any failure.

   WHAT IS REFUSED (a clear file:line error, never a silent misreading)
     `::` rules, static pattern rules (`objs: %.o: %.c`), target-specific
     variables, suffix rules (`.c.o:`), other special targets (.DEFAULT,
     .SILENT, .ONESHELL, .DELETE_ON_ERROR ...), pattern rules with several
     targets or without a recipe, `%` in a prerequisite of a normal rule,
     `define`, `export`, `unexport`, `override`, `vpath`/VPATH, `private`,
     `undefine`, `load`, `!=`, and every function not listed above ($(shell),
     $(foreach), $(call), $(eval), $(if) ...). Not implemented at all: the
     jobserver for recursive makes, remaking included Makefiles, chains of
     pattern rules through intermediate files, -n running lines that mention
     $(MAKE) (only `+` lines run under -n), deleting the target being made
     when make is interrupted.

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
   Usage: make_example [-j N] [-k] [-n] [-f file] [-C dir] [VAR=value ...] [goal ...]
   The file is a whole program: the one command above builds it, the
   implementation included. The repository's Makefile and CMake define
   DEPENG_EXAMPLE_SEPARATE_IMPL and link the implementation compiled once
   (tests/impl/depeng_impl.c) instead. */
#define _POSIX_C_SOURCE 200809L
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"

#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ====================================================================== util */
static void out_of_memory(void) { fputs("make: *** out of memory.  Stop.\n", stderr); exit(2); }
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

/* String -> index hash map (open addressing, FNV-1a), for nodes and vars. */
typedef struct strmap { const char **keys; int *vals; size_t cap, n; } strmap;
static size_t hash_str(const char *s, size_t n) {
    size_t h = 2166136261u, i;
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}
static int map_get(const strmap *m, const char *k, size_t n) {
    size_t i;
    if (!m->cap) return -1;
    for (i = hash_str(k, n) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1))
        if (strncmp(m->keys[i], k, n) == 0 && m->keys[i][n] == '\0') return m->vals[i];
    return -1;
}
static void map_put(strmap *m, const char *k, int v) {   /* k: owned by caller, lives as long as the map */
    size_t i;
    if (2 * (m->n + 1) > m->cap) {
        strmap g;
        size_t c = m->cap ? 2 * m->cap : 64, j;
        g.cap = c; g.n = 0;
        g.keys = xrealloc(NULL, c * sizeof *g.keys); g.vals = xrealloc(NULL, c * sizeof *g.vals);
        memset(g.keys, 0, c * sizeof *g.keys);
        for (j = 0; j < m->cap; j++) if (m->keys[j]) map_put(&g, m->keys[j], m->vals[j]);
        free(m->keys); free(m->vals);
        *m = g;
    }
    for (i = hash_str(k, strlen(k)) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1)) {}
    m->keys[i] = k; m->vals[i] = v; m->n++;
}

/* ===================================================================== model */
typedef struct recipe {          /* command lines, unexpanded, with their place */
    char **lines; int *lineno; int n, cap;
    const char *file;
} recipe;

typedef struct node {            /* one file name */
    char *name;
    int *pre; int npre, precap;  /* normal prerequisites (node indices)      */
    int *oo; int noo, oocap;     /* order-only prerequisites                 */
    recipe *rcp;                 /* NULL: no recipe (yet)                    */
    char *stem;                  /* $* when a pattern rule supplied the recipe */
    unsigned is_target : 1, mentioned : 1, phony : 1, implicit_done : 1, missing : 1, on_path : 1;
    int walk;                    /* 0 new, 1 on the walk's stack, 2 done     */
    int plan_idx;                /* position in the post-order plan          */
    int goal_mark;               /* for the up-to-date report                */
    /* set by the thread that completes the node's op, read after it */
    int remade, ran;
    dp_var var;
} node;

typedef struct pattern {         /* %.o: %.c */
    char *target;
    char **pre; int npre;
    char **oo; int noo;
    recipe *rcp;
    const char *file; int line;
} pattern;

typedef struct var {
    char *name, *value;
    int simple;                  /* value is already expanded (:=) */
    int from_cmdline;
} var;

typedef struct mk_make {
    node *nodes; int nnodes, nodecap; strmap node_map;
    var *vars; int nvars, varcap; strmap var_map;
    pattern *pats; int npats, patcap;
    recipe **recipes; int nrecipes, recipecap;
    char **files; int nfiles, filecap;      /* names of the files read, for locations */
    int default_goal;
    int include_depth;
    int refuse_includes;         /* set by a fuzz harness: input may not make the
                                    parser open files (/dev/stdin would block) */
    strbuf err;                  /* "file:line: *** message.  Stop." */
} mk_make;

static int node_get_n(mk_make *m, const char *name, size_t n) {
    int i = map_get(&m->node_map, name, n);
    node *d;
    if (i >= 0) return i;
    GROW(m->nodes, m->nnodes, m->nodecap);
    d = &m->nodes[m->nnodes];
    memset(d, 0, sizeof *d);
    d->name = xstrndup(name, n);
    map_put(&m->node_map, d->name, m->nnodes);
    return m->nnodes++;
}
static int node_get(mk_make *m, const char *name) { return node_get_n(m, name, strlen(name)); }

static var *var_find(const mk_make *m, const char *name, size_t n) {
    int i = map_get(&m->var_map, name, n);
    return i < 0 ? NULL : &m->vars[i];
}
static var *var_set(mk_make *m, const char *name, const char *value, int simple, int from_cmdline) {
    var *v = var_find(m, name, strlen(name));
    if (!v) {
        GROW(m->vars, m->nvars, m->varcap);
        v = &m->vars[m->nvars];
        v->name = xstrdup(name);
        v->value = NULL;
        map_put(&m->var_map, v->name, m->nvars++);
    }
    free(v->value);
    v->value = xstrdup(value);
    v->simple = simple;
    v->from_cmdline = from_cmdline;
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
    else sb_puts(err, "make: ");
    sb_puts(err, "*** "); sb_puts(err, msg); sb_puts(err, ".  Stop.");
    return -1;
}

/* ================================================================ expansion */
typedef struct autovars { const char *at, *lt, *hat, *plus, *qm, *star, *bar; } autovars;
typedef struct expanding { const var *v; const struct expanding *up; } expanding;
typedef struct xctx {
    const mk_make *m;
    const autovars *av;          /* NULL outside a recipe */
    const char *file; int line;  /* where the text comes from, for errors */
    const expanding *stack;      /* recursive variables being expanded */
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
    if (auto_value(x, name, n, out)) return 0;
    v = var_find(x->m, name, n);
    if (!v) {
        char *nm = xstrndup(name, n);
        const char *env = getenv(nm);
        free(nm);
        if (env) sb_puts(out, env);
        return 0;
    }
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

static const char *const refused_functions[] = {
    "shell", "foreach", "call", "eval", "if", "or", "and", "origin", "flavor", "value", "file",
    "join", "word", "wordlist", "lastword", "findstring", "abspath", "realpath", "guile",
    "intcmp", "let", NULL };

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
static int call_function_into(xctx *x, const char *fn, size_t fnn, const char *args, size_t argn, strbuf *out) {
    static const struct { const char *name; int nargs; } fns[] = {
        {"wildcard", 1}, {"patsubst", 3}, {"subst", 3}, {"strip", 1}, {"filter", 2}, {"filter-out", 2},
        {"sort", 1}, {"words", 1}, {"firstword", 1}, {"dir", 1}, {"notdir", 1}, {"suffix", 1},
        {"basename", 1}, {"addprefix", 2}, {"addsuffix", 2}, {"info", 1}, {"warning", 1}, {"error", 1}};
    const char *a[3]; size_t an[3];
    char *v[3] = {NULL, NULL, NULL};
    int f = -1, k, i, rc = 0, nf = (int)(sizeof fns / sizeof fns[0]);
    size_t pos = 0, wn;
    const char *w;
    for (i = 0; i < nf; i++) if (strlen(fns[i].name) == fnn && strncmp(fns[i].name, fn, fnn) == 0) f = i;
    if (f < 0) {
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
    case 16: if (x->file) fprintf(stderr, "%s:%d: %s\n", x->file, x->line, v[0]); else fprintf(stderr, "make: %s\n", v[0]); break;
    case 17: rc = set_error(x->err, x->file, x->line, "%s", v[0]); break;   /* error */
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
    x.m = r->m; x.av = NULL; x.file = r->file; x.line = r->line; x.stack = NULL; x.err = &r->m->err; x.depth = 0;
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
    size_t n = strlen(s), i;
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
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (file) return set_error(err, file, line, "%s: Is a directory", path);
        return set_error(err, NULL, 0, "%s: Is a directory", path);
    }
    f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        err->len = 0;
        if (file) { char loc[64]; sb_puts(err, file); snprintf(loc, sizeof loc, ":%d: ", line); sb_puts(err, loc); }
        else sb_puts(err, "make: ");
        sb_puts(err, path); sb_puts(err, ": "); sb_puts(err, strerror(e));
        sb_puts(err, "\nmake: *** No rule to make target '"); sb_puts(err, path); sb_puts(err, "'.  Stop.");
        return -1;
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
                if (!optional) { r->m->err.len = 0; sb_puts(&r->m->err, err.s); rc = -1; }
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
    *defined = v ? v->value[0] != '\0' : (getenv(t) && *getenv(t));
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

static int assignment(reader *r, char *line, char *op_at, const char *op) {
    mk_make *m = r->m;
    xctx x = parse_ctx(r);
    char *name_raw, *name, *value = op_at + strlen(op);
    var *v;
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
    if (strcmp(name, "VPATH") == 0) { free(name_raw); return perr(r, "VPATH is not supported by this make"); }
    if (strcmp(op, "!=") == 0) { free(name_raw); return perr(r, "'!=' (shell assignment) is not supported by this make"); }
    v = var_find(m, name, strlen(name));
    if (v && v->from_cmdline) { free(name_raw); return 0; }       /* the command line wins */
    if (strcmp(op, "=") == 0) var_set(m, name, value, 0, 0);
    else if (strcmp(op, ":=") == 0 || strcmp(op, "::=") == 0) {
        char *e = expand_str(&x, value);
        if (!e) { free(name_raw); return -1; }
        var_set(m, name, e, 1, 0);
        free(e);
    } else if (strcmp(op, "?=") == 0) {
        if (!v && !getenv(name)) var_set(m, name, value, 0, 0);
    } else {                                                      /* += */
        strbuf b = {0};
        const char *old = v ? v->value : getenv(name);
        int simple = v ? v->simple : 0;
        if (old) sb_puts(&b, old);
        if (old && *old && *value) sb_putc(&b, ' ');
        if (simple) { if (expand_n(&x, value, strlen(value), &b) != 0) { free(b.s); free(name_raw); return -1; } }
        else sb_puts(&b, value);
        var_set(m, name, b.s ? b.s : "", simple, 0);
        free(b.s);
    }
    free(name_raw);
    return 0;
}

static const char *const default_suffixes[] = {
    ".out", ".a", ".ln", ".o", ".c", ".cc", ".C", ".cpp", ".p", ".f", ".F", ".m", ".r", ".y", ".l",
    ".ym", ".yl", ".s", ".S", ".mod", ".sym", ".def", ".h", ".info", ".dvi", ".tex", ".texinfo",
    ".texi", ".txinfo", ".w", ".ch", ".web", ".sh", ".elc", ".el", NULL };
static int known_suffix(const char *s, size_t n) {
    int i;
    for (i = 0; default_suffixes[i]; i++) if (strlen(default_suffixes[i]) == n && strncmp(default_suffixes[i], s, n) == 0) return 1;
    return 0;
}
static int is_suffix_rule(const char *t) {
    const char *second;
    if (t[0] != '.' || strchr(t, '/')) return 0;
    second = strchr(t + 1, '.');
    if (!second) return known_suffix(t, strlen(t));
    return known_suffix(t, (size_t)(second - t)) && known_suffix(second, strlen(second));
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

static void add_prereq(int **arr, int *n, int *cap, int v) {
    GROW(*arr, *n, *cap);
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
static void add_recipe_line(reader *r, const char *text) {
    recipe *rc = r->ctx_recipe;
    if (!rc) {
        rc = xrealloc(NULL, sizeof *rc);
        memset(rc, 0, sizeof *rc);
        rc->file = r->file;
        GROW(r->m->recipes, r->m->nrecipes, r->m->recipecap);
        r->m->recipes[r->m->nrecipes++] = rc;
        r->ctx_recipe = rc;
        attach_recipe(r, rc);
    }
    GROW(rc->lines, rc->n, rc->cap);
    rc->lineno = xrealloc(rc->lineno, (size_t)rc->cap * sizeof *rc->lineno);
    rc->lines[rc->n] = xstrdup(text);
    rc->lineno[rc->n++] = r->line;
}

static int rule_line(reader *r, char *line, char *colon) {
    mk_make *m = r->m;
    xctx x = parse_ctx(r);
    char *tgt_text, *pre_text, *semi, *inline_cmd = NULL, *bar;
    char **tg = NULL, **pre = NULL, **oo = NULL;
    int ntg = 0, tgcap = 0, npre = 0, precap = 0, noo = 0, oocap = 0, i, j, rc = 0, npat = 0;
    *colon = '\0';
    if ((semi = find_top(colon + 1, ";")) != NULL) { *semi = '\0'; inline_cmd = semi + 1; }
    if (find_top(colon + 1, "=")) return perr(r, "target-specific variables are not supported by this make");
    if (find_top(colon + 1, ":")) return perr(r, "static pattern rules (targets: %%.o: %%.c) are not supported by this make");
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
            if (strcmp(t, ".PHONY") == 0) {
                for (j = 0; j < npre; j++) { int k = node_get(m, pre[j]); m->nodes[k].phony = 1; }
                continue;
            }
            if (strcmp(t, ".SUFFIXES") == 0 || strcmp(t, ".PRECIOUS") == 0 || strcmp(t, ".SECONDARY") == 0) continue;
            if (is_suffix_rule(t)) { rc = perr(r, "suffix rules (%s:) are not supported by this make; write a pattern rule such as %%.o: %%.c", t); goto done; }
            if (t[0] == '.' && t[1] >= 'A' && t[1] <= 'Z' && !strchr(t, '/') && !strchr(t + 1, '.')) {
                size_t k;
                for (k = 1; t[k] && ((t[k] >= 'A' && t[k] <= 'Z') || t[k] == '_'); k++) {}
                if (!t[k]) { rc = perr(r, "special target '%s' is not supported by this make", t); goto done; }
            }
            ti = node_get(m, t);
            m->nodes[ti].is_target = 1; m->nodes[ti].mentioned = 1;
            if (m->default_goal < 0 && (t[0] != '.' || strchr(t, '/'))) m->default_goal = ti;
            GROW(r->ctx_targets, r->nctx, r->ctxcap);
            r->ctx_targets[r->nctx++] = ti;
        }
        for (i = 0; i < r->nctx; i++) {
            for (j = 0; j < npre; j++) {
                int pi = node_get(m, pre[j]);
                node *t = &m->nodes[r->ctx_targets[i]];
                m->nodes[pi].mentioned = 1;
                add_prereq(&t->pre, &t->npre, &t->precap, pi);
            }
            for (j = 0; j < noo; j++) {
                int pi = node_get(m, oo[j]);
                node *t = &m->nodes[r->ctx_targets[i]];
                m->nodes[pi].mentioned = 1;
                add_prereq(&t->oo, &t->noo, &t->oocap, pi);
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
    static const char *const words[] = { "define", "endef", "export", "unexport", "override", "vpath",
                                         "private", "undefine", "load", NULL };
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
    int c;
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
    if (refused_directive(r, p) != 0) return -1;
    sep = find_top(p, ":=");
    if (sep && *sep == '=') {
        r->in_rule = 0;
        if (sep > p && (sep[-1] == '+' || sep[-1] == '?' || sep[-1] == '!')) {
            char op[3] = { sep[-1], '=', '\0' };
            return assignment(r, p, sep - 1, op);
        }
        return assignment(r, p, sep, "=");
    }
    if (sep && *sep == ':') {
        if (sep[1] == '=') { r->in_rule = 0; return assignment(r, p, sep, ":="); }
        if (sep[1] == ':' && sep[2] == '=') { r->in_rule = 0; return assignment(r, p, sep, "::="); }
        if (sep[1] == ':') return perr(r, "double-colon rules (::) are not supported by this make");
        return rule_line(r, p, sep);
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

static int parse_buffer_file(mk_make *m, const char *file, const char *buf, size_t len) {
    reader r;
    strbuf line = {0};
    int is_recipe, rc = 0, first_pattern = m->npats;
    memset(&r, 0, sizeof r);
    r.m = m; r.file = remember_file(m, file); r.buf = buf; r.len = len;
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
    }
    if (rc == 0 && r.nconds) {                   /* GNU make names the line after the last */
        r.line = r.next_line + (len > 0 && buf[len - 1] == '\n');
        rc = perr(&r, "missing 'endif'");
    }
    for (; rc == 0 && first_pattern < m->npats; first_pattern++)
        if (!m->pats[first_pattern].rcp) {
            r.line = m->pats[first_pattern].line;
            rc = perr(&r, "pattern rules without a recipe (which cancel a rule) are not supported by this make");
        }
    free(line.s); free(r.ctx_targets); free(r.conds);
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

mk_make *mk_new(void) {
    mk_make *m = xrealloc(NULL, sizeof *m);
    memset(m, 0, sizeof *m);
    m->default_goal = -1;
    var_set(m, "CC", "cc", 0, 0);
    var_set(m, "CXX", "g++", 0, 0);
    var_set(m, "AR", "ar", 0, 0);
    var_set(m, "ARFLAGS", "rv", 0, 0);
    var_set(m, "RM", "rm -f", 0, 0);
    return m;
}
void mk_set_cmdline_var(mk_make *m, const char *name, const char *value) { var_set(m, name, value, 0, 1); }
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
    for (i = 0; i < m->nnodes; i++) { free(m->nodes[i].name); free(m->nodes[i].pre); free(m->nodes[i].oo); free(m->nodes[i].stem); }
    for (i = 0; i < m->nvars; i++) { free(m->vars[i].name); free(m->vars[i].value); }
    for (i = 0; i < m->npats; i++) { free(m->pats[i].target); free_list(m->pats[i].pre, m->pats[i].npre); free_list(m->pats[i].oo, m->pats[i].noo); }
    for (i = 0; i < m->nrecipes; i++) {
        int k;
        for (k = 0; k < m->recipes[i]->n; k++) free(m->recipes[i]->lines[k]);
        free(m->recipes[i]->lines); free(m->recipes[i]->lineno); free(m->recipes[i]);
    }
    for (i = 0; i < m->nfiles; i++) free(m->files[i]);
    free(m->nodes); free(m->node_map.keys); free(m->node_map.vals);
    free(m->vars); free(m->var_map.keys); free(m->var_map.vals);
    free(m->pats); free(m->recipes); free(m->files); free(m->err.s);
    free(m);
}

/* Everything below runs a build; a harness that only parses leaves it out. */
#ifndef MAKE_NO_MAIN
/* GNU make's built-in rule for C objects, after the Makefile's own rules. */
static void add_builtin_rules(mk_make *m) {
    pattern *p;
    recipe *rc = xrealloc(NULL, sizeof *rc);
    memset(rc, 0, sizeof *rc);
    rc->file = "<builtin>";
    rc->cap = rc->n = 1;
    rc->lines = xrealloc(NULL, sizeof *rc->lines); rc->lineno = xrealloc(NULL, sizeof *rc->lineno);
    rc->lines[0] = xstrdup("$(CC) $(CFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c -o $@ $<");
    rc->lineno[0] = 0;
    GROW(m->recipes, m->nrecipes, m->recipecap);
    m->recipes[m->nrecipes++] = rc;
    GROW(m->pats, m->npats, m->patcap);
    p = &m->pats[m->npats++];
    memset(p, 0, sizeof *p);
    p->target = xstrdup("%.o");
    p->pre = xrealloc(NULL, sizeof *p->pre); p->pre[0] = xstrdup("%.c"); p->npre = 1;
    p->rcp = rc; p->file = "<builtin>";
}

/* ================================================================= planning */
static int file_exists(const char *path) { struct stat st; return stat(path, &st) == 0; }

/* A prerequisite a pattern rule may rely on: a file, or a name the Makefile
   mentions (a target, or a prerequisite of an explicit rule). */
static int ought_to_exist(mk_make *m, const char *name) {
    int i = map_get(&m->node_map, name, strlen(name));
    if (i >= 0 && (m->nodes[i].mentioned || m->nodes[i].is_target)) return 1;
    return file_exists(name);
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
        const pattern *p = &m->pats[i];
        size_t off = strchr(p->target, '/') ? 0 : dirlen;
        int ok = 1;
        if (!pat_match(p->target, name + off, nlen - off, &so, &sn) || (best >= 0 && off + sn >= best_n)) continue;
        for (j = 0; ok && j < p->npre; j++) {
            b.len = 0;
            sb_add(&b, name, off);
            pat_subst(&b, p->pre[j], name + off + so, sn);
            ok = ought_to_exist(m, b.s);
        }
        if (ok) { best = i; best_n = off + sn; }
    }
    if (best >= 0) {
        const pattern *p = &m->pats[best];
        size_t off = strchr(p->target, '/') ? 0 : dirlen;
        int *old = m->nodes[ni].pre, nold = m->nodes[ni].npre;
        pat_match(p->target, name + off, nlen - off, &so, &sn);
        m->nodes[ni].pre = NULL; m->nodes[ni].npre = m->nodes[ni].precap = 0;
        for (j = 0; j < p->npre + p->noo; j++) {
            int k;
            node *n;
            b.len = 0;
            sb_add(&b, name, off);
            pat_subst(&b, j < p->npre ? p->pre[j] : p->oo[j - p->npre], m->nodes[ni].name + off + so, sn);
            k = node_get(m, b.s);                      /* may move m->nodes */
            n = &m->nodes[ni];
            if (j < p->npre) add_prereq(&n->pre, &n->npre, &n->precap, k);
            else add_prereq(&n->oo, &n->noo, &n->oocap, k);
        }
        for (j = 0; j < nold; j++) add_prereq(&m->nodes[ni].pre, &m->nodes[ni].npre, &m->nodes[ni].precap, old[j]);
        free(old);
        free(m->nodes[ni].stem);
        m->nodes[ni].stem = xstrndup(m->nodes[ni].name, off + so + sn);
        memmove(m->nodes[ni].stem + off, m->nodes[ni].name + off + so, sn);
        m->nodes[ni].stem[off + sn] = '\0';
        m->nodes[ni].rcp = p->rcp;
    }
    free(b.s);
}

/* Post-order walk from the goals, iterative (a 100,000-rule chain needs no
   deep C stack). Appends every node that needs an engine op to *order.
   Returns 0, or -1 after printing "No rule to make target" (without -k). */
typedef struct frame { int node, idx, parent; } frame;
static int plan(mk_make *m, const int *goals, int ngoals, int keep_going, int **order, int *norder) {
    frame *st = NULL;
    int nst = 0, stcap = 0, ocap = 0, g, errors = 0;
    for (g = 0; g < ngoals; g++) {
        if (m->nodes[goals[g]].walk) continue;
        GROW(st, nst, stcap);
        st[nst].node = goals[g]; st[nst].idx = -1; st[nst].parent = -1; nst++;
        while (nst) {
            frame *f = &st[nst - 1];
            int ni = f->node, total;
            if (f->idx < 0) {
                node *n = &m->nodes[ni];
                n->walk = 1;
                f->idx = 0;
                if (!n->rcp && !n->phony && !n->implicit_done) { n->implicit_done = 1; implicit_search(m, ni); n = &m->nodes[ni]; }
                if (!n->rcp && !n->is_target && !n->phony && !file_exists(n->name)) {
                    if (f->parent < 0) fprintf(stderr, "make: *** No rule to make target '%s'.%s\n", n->name, keep_going ? "" : "  Stop.");
                    else fprintf(stderr, "make: *** No rule to make target '%s', needed by '%s'.%s\n", n->name, m->nodes[f->parent].name, keep_going ? "" : "  Stop.");
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
                        fprintf(stderr, "make: Circular %s <- %s dependency dropped.\n", n->name, m->nodes[c].name);
                        if (f->idx < n->npre) { memmove(slot, slot + 1, (size_t)(n->npre - f->idx - 1) * sizeof *slot); n->npre--; }
                        else { memmove(slot, slot + 1, (size_t)(n->noo - (f->idx - n->npre) - 1) * sizeof *slot); n->noo--; }
                        continue;
                    }
                    f->idx++;
                    if (m->nodes[c].walk == 0) {
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

/* ================================================================== running */
typedef struct job {
    node *n;
    dp_completion done;
    char **cmds; unsigned char *flags; int *lineno; int ncmds, next;
    pid_t pid;
    int status;
    struct job *qnext;
} job;
enum { CMD_SILENT = 1, CMD_IGNORE = 2, CMD_PLUS = 4 };

static mk_make *run_mk;                  /* read-only while the engine runs */
static int opt_keep_going, opt_dry_run, opt_jobs = 1;
static pthread_mutex_t run_mtx = PTHREAD_MUTEX_INITIALIZER;   /* everything below, and stdout */
static pthread_cond_t reaper_cv = PTHREAD_COND_INITIALIZER;
static int slots_free, nchildren, stopping, reaper_quit;
static job **running; static int nrunning, runcap;
static job *queue_head, *queue_tail;

static void print_error_locked(const job *j, int line_idx, const char *what, int ignored) {
    const char *file = j->n->rcp ? j->n->rcp->file : "";
    int line = j->lineno[line_idx];
    fflush(stdout);
    if (line > 0) fprintf(stderr, "make: %s[%s:%d: %s] %s%s\n", ignored ? "" : "*** ", file, line, j->n->name, what, ignored ? " (ignored)" : "");
    else fprintf(stderr, "make: %s[%s: %s] %s%s\n", ignored ? "" : "*** ", file, j->n->name, what, ignored ? " (ignored)" : "");
}

/* GNU make runs a command line without /bin/sh when the shell would only
   split it into words: no character special to the shell, no builtin or
   keyword first, no assignment. That saves an exec per job. Returns the
   words (pointing into *copy, which the caller frees), or NULL: use sh -c. */
static char **direct_argv(const char *cmd, char **copy) {
    static const char *const builtins[] = { ".", ":", "alias", "bg", "break", "case", "cd", "command",
        "continue", "eval", "exec", "exit", "export", "fc", "fg", "for", "getopts", "hash", "if", "jobs",
        "login", "logout", "read", "readonly", "return", "set", "shift", "test", "times", "trap", "type",
        "ulimit", "umask", "unalias", "unset", "wait", "while", "[", "{", "!", NULL };
    char **argv = NULL, *w;
    int n = 0, cap = 0, i;
    if (strpbrk(cmd, "#;\"'*?[]&|<>(){}$`^~!\\\n")) return NULL;
    *copy = xstrdup(cmd);
    for (w = strtok(*copy, " \t"); w; w = strtok(NULL, " \t")) { GROW(argv, n, cap); argv[n++] = w; }
    if (n == 0 || strchr(argv[0], '=')) { free(argv); free(*copy); *copy = NULL; return NULL; }
    for (i = 0; builtins[i]; i++) if (strcmp(argv[0], builtins[i]) == 0) { free(argv); free(*copy); *copy = NULL; return NULL; }
    GROW(argv, n, cap);
    argv[n] = NULL;
    return argv;
}

/* Starts the job's next non-empty command line. Returns 1 if a child is now
   running, 0 if the job is over (j->status says how). Called with run_mtx. */
static int start_next_locked(job *j) {
    while (j->next < j->ncmds) {
        int i = j->next++, err;
        char *argv[4], **direct, *copy = NULL;
        pid_t pid;
        if (!j->cmds[i][0]) continue;
        if (opt_dry_run || !(j->flags[i] & CMD_SILENT)) printf("%s\n", j->cmds[i]);
        fflush(stdout);
        if (opt_dry_run && !(j->flags[i] & CMD_PLUS)) continue;   /* -n runs only + lines */
        direct = direct_argv(j->cmds[i], &copy);
        if (direct) {
            err = posix_spawnp(&pid, direct[0], NULL, NULL, direct, environ);
            if (err != 0) { fflush(stdout); fprintf(stderr, "make: %s: %s\n", direct[0], strerror(err)); }
        } else {
            argv[0] = (char *)"/bin/sh"; argv[1] = (char *)"-c"; argv[2] = j->cmds[i]; argv[3] = NULL;
            err = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ);
            if (err != 0) { fflush(stdout); fprintf(stderr, "make: /bin/sh: %s\n", strerror(err)); }
        }
        free(direct); free(copy);
        if (err != 0) {                            /* as the shell's "not found": 127 */
            print_error_locked(j, i, "Error 127", (j->flags[i] & CMD_IGNORE) != 0);
            if (j->flags[i] & CMD_IGNORE) continue;
            j->status = 127;
            return 0;
        }
        j->pid = pid;
        GROW(running, nrunning, runcap);
        running[nrunning++] = j;
        nchildren++;
        pthread_cond_signal(&reaper_cv);
        return 1;
    }
    return 0;
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
    if (status == 0) { j->n->remade = 1; j->n->ran = 1; }
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
    if (nchildren > 0) { fflush(stdout); fprintf(stderr, "make: *** Waiting for unfinished jobs....\n"); }
    while (queue_head) {
        job *q = queue_take_locked();
        q->status = -2;
        finished_push(finished, q);
    }
}

/* Job j is over (j->status says how): its slot goes to the next queued job.
   A queued job that is over at once (nothing to run, or /bin/sh could not
   be started) passes the slot on in turn. Called with run_mtx. */
static void job_over_locked(job *j, job **finished) {
    while (j) {
        finished_push(finished, j);
        slots_free++;
        if (j->status > 0 && !opt_keep_going && !stopping) stop_locked(finished);
        j = NULL;
        if (!stopping && queue_head) {           /* the freed slot, to one job */
            job *q = queue_take_locked();
            slots_free--;
            if (!start_next_locked(q)) j = q;
        }
    }
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
    if (WIFSIGNALED(ws)) snprintf(what, sizeof what, "%s", strsignal(WTERMSIG(ws)));
    else snprintf(what, sizeof what, "Error %d", WIFEXITED(ws) ? WEXITSTATUS(ws) : 1);
    print_error_locked(j, line, what, ignored);
    if (ignored) return 0;
    j->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    if (j->status == 0) j->status = 1;
    return 1;
}

/* The one thread that collects children: waitpid(-1) for any of them, then
   the rule's next command line, or the end of its job (the op completes,
   the slot goes to the next queued job). Sleeps while no child runs. */
static void *reaper(void *unused) {
    (void)unused;
    pthread_mutex_lock(&run_mtx);
    for (;;) {
        job *j, *finished = NULL;
        pid_t pid;
        int ws;
        while (nchildren == 0 && !reaper_quit) pthread_cond_wait(&reaper_cv, &run_mtx);
        if (nchildren == 0) break;
        pthread_mutex_unlock(&run_mtx);
        pid = waitpid(-1, &ws, 0);
        pthread_mutex_lock(&run_mtx);
        if (pid < 0) { if (errno == ECHILD) nchildren = 0; continue; }
        if ((j = take_running_locked(pid)) == NULL) continue;   /* not ours */
        nchildren--;
        /* a job that runs goes on to its end, also after another failed */
        if (!(ws != 0 && command_failed_locked(j, ws)) && start_next_locked(j)) continue;
        job_over_locked(j, &finished);
        pthread_mutex_unlock(&run_mtx);
        finish_all(finished);
        pthread_mutex_lock(&run_mtx);
    }
    pthread_mutex_unlock(&run_mtx);
    return NULL;
}

/* Hands a job to the table: started now if a job slot is free, else queued. */
static void submit_job(job *j) {
    job *finished = NULL;
    pthread_mutex_lock(&run_mtx);
    if (stopping) { j->status = -2; finished_push(&finished, j); }
    else if (slots_free > 0) { slots_free--; if (!start_next_locked(j)) job_over_locked(j, &finished); }
    else queue_put_locked(j);
    pthread_mutex_unlock(&run_mtx);
    finish_all(finished);
}

static int newer(const struct stat *a, const struct stat *b) {   /* a's mtime after b's */
    return a->st_mtim.tv_sec > b->st_mtim.tv_sec ||
           (a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec > b->st_mtim.tv_nsec);
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
static void default_stem(const char *name, strbuf *out) {   /* $* of an explicit rule */
    const char *dot = strrchr(name, '.');
    if (dot && !strchr(dot, '/') && known_suffix(dot, strlen(dot))) sb_add(out, name, (size_t)(dot - name));
}

/* The engine's async function for one target. Decides at run time (the
   prerequisites' ops are complete, the engine guarantees it), never blocks. */
static void rule_op(dp_run_ctx *rc, void *arg, dp_completion done) {
    node *n = arg;
    struct stat ts, ps;
    int exists, ood, i;
    strbuf hat = {0}, plus = {0}, qm = {0}, bar = {0}, star = {0};
    autovars av;
    job *j;
    (void)rc;
    if (n->missing) { dp_complete(done, 2, "no rule to make target"); return; }
    pthread_mutex_lock(&run_mtx);
    i = stopping;
    pthread_mutex_unlock(&run_mtx);
    if (i) { dp_complete(done, -2, "not started"); return; }
    exists = stat(n->name, &ts) == 0;
    ood = n->phony || !exists;
    for (i = 0; i < n->npre && !ood; i++) {
        const node *p = &run_mk->nodes[n->pre[i]];
        ood = p->phony || stat(p->name, &ps) != 0 || (p->remade && opt_dry_run) || newer(&ps, &ts);
    }
    if (!ood || !n->rcp) {
        if (ood) n->remade = 1;
        dp_complete(done, 0, NULL);
        return;
    }
    {   /* $^ (each once), $+ (all), $? (the ones newer than the target) */
        intset seen_hat, seen_qm;
        intset_init(&seen_hat, n->npre); intset_init(&seen_qm, n->npre);
        for (i = 0; i < n->npre; i++) {
            const node *p = &run_mk->nodes[n->pre[i]];
            size_t len = strlen(p->name);
            if (!exists || p->phony || stat(p->name, &ps) != 0 || (p->remade && opt_dry_run) || newer(&ps, &ts))
                if (intset_add(&seen_qm, n->pre[i])) sb_word(&qm, p->name, len);
            if (intset_add(&seen_hat, n->pre[i])) sb_word(&hat, p->name, len);
            sb_word(&plus, p->name, len);
        }
        free(seen_hat.slot); free(seen_qm.slot);
    }
    for (i = 0; i < n->noo; i++) sb_word(&bar, run_mk->nodes[n->oo[i]].name, strlen(run_mk->nodes[n->oo[i]].name));
    if (n->stem) sb_puts(&star, n->stem); else default_stem(n->name, &star);
    av.at = n->name; av.lt = n->npre ? run_mk->nodes[n->pre[0]].name : "";
    av.hat = hat.s ? hat.s : ""; av.plus = plus.s ? plus.s : ""; av.qm = qm.s ? qm.s : "";
    av.bar = bar.s ? bar.s : ""; av.star = star.s ? star.s : "";
    j = xrealloc(NULL, sizeof *j);
    memset(j, 0, sizeof *j);
    j->n = n; j->done = done;
    j->cmds = xrealloc(NULL, (size_t)n->rcp->n * sizeof *j->cmds);
    j->flags = xrealloc(NULL, (size_t)n->rcp->n);
    j->lineno = xrealloc(NULL, (size_t)n->rcp->n * sizeof *j->lineno);
    for (i = 0; i < n->rcp->n; i++) {
        strbuf err = {0}, out = {0};
        xctx x;
        char *c;
        unsigned char fl = 0;
        x.m = run_mk; x.av = &av; x.file = n->rcp->file; x.line = n->rcp->lineno[i]; x.stack = NULL; x.err = &err; x.depth = 0;
        if (expand_n(&x, n->rcp->lines[i], strlen(n->rcp->lines[i]), &out) != 0) {
            job *finished = NULL;
            pthread_mutex_lock(&run_mtx);
            fflush(stdout);
            fprintf(stderr, "%s\n", err.s);
            if (!opt_keep_going && !stopping) stop_locked(&finished);
            pthread_mutex_unlock(&run_mtx);
            finish_all(finished);
            free(err.s); free(out.s);
            j->ncmds = i; j->status = 2;
            free(hat.s); free(plus.s); free(qm.s); free(bar.s); free(star.s);
            finish_job(j);
            return;
        }
        for (c = out.s; *c && (is_space(*c) || *c == '@' || *c == '-' || *c == '+'); c++) {
            if (*c == '@') fl |= CMD_SILENT;
            else if (*c == '-') fl |= CMD_IGNORE;
            else if (*c == '+') fl |= CMD_PLUS;
        }
        j->cmds[j->ncmds] = xstrdup(c);
        j->flags[j->ncmds] = fl;
        j->lineno[j->ncmds++] = n->rcp->lineno[i];
        free(out.s); free(err.s);
    }
    free(hat.s); free(plus.s); free(qm.s); free(bar.s); free(star.s);
    for (i = 0; i < j->ncmds && !j->cmds[i][0]; i++) {}
    if (i == j->ncmds) { j->status = 0; finish_job(j); return; }   /* only empty lines */
    if (opt_dry_run) {                           /* print only, unless a line has + */
        int plus = 0;
        for (i = 0; i < j->ncmds; i++) plus |= j->flags[i] & CMD_PLUS;
        if (!plus) {
            pthread_mutex_lock(&run_mtx);
            for (i = 0; i < j->ncmds; i++) if (j->cmds[i][0]) printf("%s\n", j->cmds[i]);
            fflush(stdout);
            pthread_mutex_unlock(&run_mtx);
            j->status = 0;
            finish_job(j);
            return;
        }
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
    /* The ops run on the engine's priority pool, earliest in the plan first:
       when one completion makes many rules ready at once (every object after
       a generated header), they start in the order GNU make would start them,
       so -j1 builds in the same order and stops at the same place. */
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

/* Runs the build of the parsed graph m for the goals; returns make's exit status. */
static int build(mk_make *m, const int *goals, int ngoals) {
    dp_engine_desc desc;
    dp_engine *eng = NULL;
    pthread_t rth;
    int *order = NULL, norder = 0, i, failed = 0, rcap = 0;
    dp_var *reads = NULL;
    if (plan(m, goals, ngoals, opt_keep_going, &order, &norder) != 0) { free(order); return 2; }
    memset(&desc, 0, sizeof desc);
    desc.type = DP_ENGINE_PERDEVICE;
    /* Every op goes to the priority pool. One worker is enough whatever -j:
       rule_op only stats and expands, the commands run in child processes,
       and a second worker would mostly spin for work on cores they need. */
    desc.cpu_worker_nthreads = 1;
    desc.cpu_priority_nthreads = 1;
    desc.logger.func = quiet_logger;
    if (dp_engine_create(&desc, &eng) != DP_OK) { fprintf(stderr, "make: *** could not create the engine.  Stop.\n"); free(order); return 2; }
    run_mk = m;
    slots_free = opt_jobs;
    if (pthread_create(&rth, NULL, reaper, NULL) != 0) { fprintf(stderr, "make: *** could not start the reaper thread.  Stop.\n"); dp_engine_destroy(eng, NULL); free(order); return 2; }
    for (i = 0; i < norder && !failed; i++) {
        node *n = &m->nodes[order[i]];
        n->var = dp_var_create(eng);
        if (!n->var.id || push_node(eng, m, n, norder, &reads, &rcap) != 0) { fprintf(stderr, "make: *** the engine refused an operation.  Stop.\n"); failed = 1; }
    }
    for (i = 0; i < ngoals; i++) {
        dp_failure f;
        node *g = &m->nodes[goals[i]];
        if (g->var.id && dp_wait_var(eng, g->var, &f) != DP_OK) {
            failed = 1;
            if (opt_keep_going) fprintf(stderr, "make: Target '%s' not remade because of errors.\n", g->name);
        }
    }
    if (dp_wait_all(eng, NULL) != DP_OK) failed = 1;
    dp_engine_destroy(eng, NULL);
    pthread_mutex_lock(&run_mtx);
    reaper_quit = 1;
    pthread_cond_signal(&reaper_cv);
    pthread_mutex_unlock(&run_mtx);
    pthread_join(rth, NULL);
    if (!failed)
        for (i = 0; i < ngoals; i++) {
            node *g = &m->nodes[goals[i]];
            if (subtree_ran(m, goals[i], i + 1)) continue;
            if (g->rcp && !g->remade) printf("make: '%s' is up to date.\n", g->name);
            else printf("make: Nothing to be done for '%s'.\n", g->name);
        }
    fflush(stdout);
    free(order); free(reads); free(running);
    return failed ? 2 : 0;
}

static int usage(const char *argv0) {
    fprintf(stderr, "usage: %s [-j N] [-k] [-n] [-f file] [-C dir] [VAR=value ...] [goal ...]\n", argv0);
    return 2;
}

int main(int argc, char **argv) {
    const char **files = NULL, *dir = NULL;
    char **goal_names = NULL, cwd[4096], *self;
    int nfiles = 0, fcap = 0, ngoal_names = 0, gcap = 0, i, *goals = NULL, ngoals = 0, rc;
    mk_make *m = mk_new();
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-j") == 0) {
            if (i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9') opt_jobs = atoi(argv[++i]);
            else opt_jobs = 1 << 20;                  /* no number: no limit, as in GNU make */
        } else if (strncmp(a, "-j", 2) == 0) opt_jobs = atoi(a + 2);
        else if (strcmp(a, "-k") == 0 || strcmp(a, "--keep-going") == 0) opt_keep_going = 1;
        else if (strcmp(a, "-n") == 0 || strcmp(a, "--dry-run") == 0 || strcmp(a, "--just-print") == 0) opt_dry_run = 1;
        else if ((strcmp(a, "-f") == 0 || strcmp(a, "-C") == 0) && i + 1 < argc) {
            if (a[1] == 'f') { GROW(files, nfiles, fcap); files[nfiles++] = argv[++i]; } else dir = argv[++i];
        } else if (strncmp(a, "-f", 2) == 0) { GROW(files, nfiles, fcap); files[nfiles++] = a + 2; }
        else if (strncmp(a, "-C", 2) == 0) dir = a + 2;
        else if (a[0] == '-') { mk_free(m); free(files); return usage(argv[0]); }
        else if (strchr(a, '=')) {
            char *copy = xstrdup(a), *eq = strchr(copy, '=');
            int simple = eq > copy && eq[-1] == ':';
            if (simple) eq[-1] = '\0';
            *eq = '\0';
            var_set(m, trim(copy), eq + 1, 0, 1);
            free(copy);
        } else { GROW(goal_names, ngoal_names, gcap); goal_names[ngoal_names++] = xstrdup(a); }
    }
    if (opt_jobs < 1) { fprintf(stderr, "make: the '-j' option requires a positive integer argument\n"); mk_free(m); return 2; }
    self = argv[0];
    if (strchr(self, '/') && self[0] != '/' && getcwd(cwd, sizeof cwd)) {
        strbuf b = {0};
        sb_puts(&b, cwd); sb_putc(&b, '/'); sb_puts(&b, self);
        var_set(m, "MAKE", b.s, 1, 0);
        free(b.s);
    } else var_set(m, "MAKE", self, 1, 0);
    if (dir) {
        if (chdir(dir) != 0) { fprintf(stderr, "make: *** %s: %s.  Stop.\n", dir, strerror(errno)); mk_free(m); return 2; }
        if (getcwd(cwd, sizeof cwd)) printf("make: Entering directory '%s'\n", cwd);
    }
    rc = 0;
    if (nfiles == 0) {
        const char *def = file_exists("makefile") ? "makefile" : file_exists("Makefile") ? "Makefile" : NULL;
        if (def) { GROW(files, nfiles, fcap); files[nfiles++] = def; }
    }
    for (i = 0; i < nfiles && rc == 0; i++)
        if (mk_parse_file(m, files[i]) != 0) { fflush(stdout); fprintf(stderr, "%s\n", mk_error(m)); rc = 2; }
    if (rc == 0) {
        add_builtin_rules(m);
        for (i = 0; i < ngoal_names; i++) {
            int g = node_get(m, goal_names[i]), k;
            for (k = 0; k < ngoals && goals[k] != g; k++) {}
            if (k == ngoals) { goals = xrealloc(goals, (size_t)(ngoals + 1) * sizeof *goals); goals[ngoals++] = g; }
        }
        if (ngoals == 0) {
            const var *dg = var_find(m, ".DEFAULT_GOAL", strlen(".DEFAULT_GOAL"));
            int g = m->default_goal;
            if (dg) {
                strbuf e = {0};
                xctx x;
                x.m = m; x.av = NULL; x.file = NULL; x.line = 0; x.stack = NULL; x.err = &m->err; x.depth = 0;
                if (expand_n(&x, dg->value, strlen(dg->value), &e) == 0 && *trim(e.s)) g = node_get(m, trim(e.s));
                free(e.s);
            }
            if (g < 0) {
                fprintf(stderr, nfiles ? "make: *** No targets.  Stop.\n" : "make: *** No targets specified and no makefile found.  Stop.\n");
                rc = 2;
            } else { goals = xrealloc(goals, sizeof *goals); goals[ngoals++] = g; }
        }
    }
    if (rc == 0) rc = build(m, goals, ngoals);
    if (dir && getcwd(cwd, sizeof cwd)) printf("make: Leaving directory '%s'\n", cwd);
    for (i = 0; i < ngoal_names; i++) free(goal_names[i]);
    free(goal_names); free(goals); free(files);
    mk_free(m);
    return rc;
}
#endif
