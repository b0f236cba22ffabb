/* make.c - a tiny `make` built on depeng.

   Every file name (target or prerequisite) is a dp_var. Each rule reachable
   from the goal becomes ONE asynchronous operation that reads its
   prerequisites' vars and writes its target's var, pushed in dependency order
   (post-order DFS), so the engine runs independent rules in parallel and
   skips everything downstream of a failure.

   The async function returns at once: a detached helper thread decides
   whether the target is out of date (stat() at run time, since prerequisites
   may just have been rebuilt), runs the command lines with fork/exec of
   /bin/sh -c (on Windows: system(), so cmd.exe), waits for them and calls
   dp_complete. A blocking compiler therefore never holds an engine worker.
   Because workers are not held, -j N also bounds the number of running jobs
   with a small job-slot semaphore.

   Build: gcc -std=c11 -Wall -Wextra -pedantic -I. examples/make.c -o build/make_example -pthread
   Usage: make_example [-j N] [-f rulefile] [-C dir] [target]              */
#define _POSIX_C_SOURCE 200809L
#define DEPENG_IMPLEMENTATION
#include "depeng.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#ifdef _WIN32
#include <direct.h>
#define chdir _chdir
#else
#include <sys/wait.h>
#include <unistd.h>
#endif

typedef struct node {            /* one file name */
    char *name;
    dp_var var;
    int rule;                    /* index into rules, -1 if no rule */
    int mark;                    /* DFS: 0 new, 1 on stack, 2 done */
} node;
typedef struct rule {
    int target;                  /* node index */
    int *prereqs; int nprereqs;
    char **cmds; int ncmds;
} rule;

static node *nodes; static int nnodes;
static rule *rules; static int nrules;

/* Job slots (-j) and the count of command lines actually run. */
static pthread_mutex_t job_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_cv = PTHREAD_COND_INITIALIZER;
static int job_slots = 1, commands_run = 0;

static void die(const char *msg) { fprintf(stderr, "make: %s\n", msg); exit(2); }
static void *xrealloc(void *p, size_t n) { p = realloc(p, n ? n : 1); if (!p) die("out of memory"); return p; }
static char *xstrdup(const char *s) { char *d = xrealloc(NULL, strlen(s) + 1); strcpy(d, s); return d; }

static int node_get(const char *name) {
    int i;
    for (i = 0; i < nnodes; i++) if (strcmp(nodes[i].name, name) == 0) return i;
    nodes = xrealloc(nodes, (size_t)(nnodes + 1) * sizeof *nodes);
    nodes[nnodes].name = xstrdup(name);
    nodes[nnodes].var.id = 0; nodes[nnodes].rule = -1; nodes[nnodes].mark = 0;
    return nnodes++;
}

/* ---- parsing: "target: prereqs" then tab-indented commands -------------- */
/* One line; *cur is the rule that command lines belong to (-1: none yet). */
static int parse_line(char *line, const char *path, int lineno, int *cur) {
    char *p, *colon, *tok;
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '\t') {                            /* command line */
        rule *r;
        for (p = line; *p == ' ' || *p == '\t'; p++) {}
        if (*p == '\0' || *p == '#') return 0;
        if (*cur < 0) { fprintf(stderr, "make: %s:%d: *** recipe commences before first target.  Stop.\n", path, lineno); return 2; }
        r = &rules[*cur];
        r->cmds = xrealloc(r->cmds, (size_t)(r->ncmds + 1) * sizeof *r->cmds);
        r->cmds[r->ncmds++] = xstrdup(p);
        return 0;
    }
    if ((p = strchr(line, '#')) != NULL) *p = '\0';
    for (p = line; *p == ' ' || *p == '\t'; p++) {}
    if (*p == '\0') return 0;                         /* blank or comment */
    colon = strchr(p, ':');
    if (!colon) { fprintf(stderr, "make: %s:%d: *** missing separator.  Stop.\n", path, lineno); return 2; }
    *colon = '\0';
    tok = strtok(p, " \t");
    if (!tok || strtok(NULL, " \t")) { fprintf(stderr, "make: %s:%d: *** expected exactly one target.  Stop.\n", path, lineno); return 2; }
    {
        int t = node_get(tok);
        if (nodes[t].rule >= 0) *cur = nodes[t].rule;           /* extra prerequisites */
        else {
            rules = xrealloc(rules, (size_t)(nrules + 1) * sizeof *rules);
            memset(&rules[nrules], 0, sizeof *rules);
            rules[nrules].target = t;
            nodes[t].rule = *cur = nrules++;
        }
    }
    for (tok = strtok(colon + 1, " \t"); tok; tok = strtok(NULL, " \t")) {
        int n = node_get(tok);                        /* may move nodes; index is stable */
        rule *r = &rules[*cur];
        r->prereqs = xrealloc(r->prereqs, (size_t)(r->nprereqs + 1) * sizeof *r->prereqs);
        r->prereqs[r->nprereqs++] = n;
    }
    return 0;
}
/* Reads the rules from f (named path in messages). Returns 0, or 2 after
   printing make's message for a malformed line. */
static int parse_stream(FILE *f, const char *path) {
    char *line = NULL;              /* getline: a line of any length is one line */
    size_t cap = 0;
    int lineno = 0, cur = -1, status = 0;
    while (status == 0 && getline(&line, &cap, f) != -1) status = parse_line(line, path, ++lineno, &cur);
    free(line);
    return status;
}
static void parse(const char *path) {
    FILE *f = fopen(path, "r");
    int status;
    if (!f) { fprintf(stderr, "make: %s: %s\n", path, strerror(errno)); exit(2); }
    status = parse_stream(f, path);
    fclose(f);
    if (status) exit(status);
}

/* ---- the operation --------------------------------------------------- */
typedef struct job { rule *r; dp_completion done; } job;

static int stat_mtime(const char *path, struct timespec *out) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
#ifdef _WIN32
    out->tv_sec = st.st_mtime; out->tv_nsec = 0;   /* Windows' stat has whole seconds */
#else
    *out = st.st_mtim;
#endif
    return 1;
}
static int ts_less(struct timespec a, struct timespec b) {
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}
/* Up to date: the target exists and is not older than any prerequisite. */
static int up_to_date(const rule *r) {
    struct timespec t, p;
    int i;
    if (!stat_mtime(nodes[r->target].name, &t)) return 0;
    for (i = 0; i < r->nprereqs; i++)
        if (!stat_mtime(nodes[r->prereqs[i]].name, &p) || ts_less(t, p)) return 0;
    return 1;
}

/* Runs one command line; returns its status as make reports it (0 = ok). */
#ifdef _WIN32
/* Windows has no fork: system() runs the line through cmd.exe (%COMSPEC%). */
static int run_command(const char *cmd) {
    int quiet = cmd[0] == '@';
    if (quiet) cmd++;
    if (!quiet) { printf("%s\n", cmd); }
    fflush(stdout);
    return system(cmd);
}
#else
static int run_command(const char *cmd) {
    pid_t pid;
    int ws;
    int quiet = cmd[0] == '@';
    if (quiet) cmd++;
    if (!quiet) { printf("%s\n", cmd); }
    fflush(stdout);
    pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(ws)) return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws)) return 128 + WTERMSIG(ws);
    return -1;
}
#endif

static void *job_thread(void *arg) {
    job *j = arg;
    rule *r = j->r;
    dp_completion done = j->done;
    char msg[256];
    int i, status = 0;
    free(j);
    pthread_mutex_lock(&job_mtx);                   /* take a job slot (-j N) */
    while (job_slots == 0) pthread_cond_wait(&job_cv, &job_mtx);
    job_slots--;
    commands_run += r->ncmds;
    pthread_mutex_unlock(&job_mtx);
    msg[0] = '\0';
    for (i = 0; i < r->ncmds && status == 0; i++) {
        status = run_command(r->cmds[i]);
        if (status < 0) snprintf(msg, sizeof msg, "command '%s' could not be run: %s", r->cmds[i], strerror(errno));
        else if (status > 0) snprintf(msg, sizeof msg, "command '%s' exited with status %d", r->cmds[i], status);
    }
    pthread_mutex_lock(&job_mtx);
    job_slots++;
    pthread_cond_signal(&job_cv);
    pthread_mutex_unlock(&job_mtx);
    dp_complete(done, status, status ? msg : NULL);  /* last: main may exit after */
    return NULL;
}

/* The async function: decide at run time, then hand the commands to a
   detached thread and return at once. */
static void rule_op(dp_run_ctx *rc, void *arg, dp_completion done) {
    rule *r = arg;
    pthread_t th;
    pthread_attr_t attr;
    job *j;
    int err;
    (void)rc;
    if (r->ncmds == 0 || up_to_date(r)) { dp_complete(done, 0, NULL); return; }
    j = malloc(sizeof *j);
    if (!j) { dp_complete(done, -1, "out of memory"); return; }
    j->r = r; j->done = done;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    err = pthread_create(&th, &attr, job_thread, j);
    pthread_attr_destroy(&attr);
    if (err) { free(j); dp_complete(done, -1, "could not start a job thread"); }
}

/* ---- planning: post-order DFS from the goal, all checks before any push -- */
static int *stack; static int depth;
static int *order; static int norder;          /* rules in dependency order */

static void visit(int n, int needed_by) {
    rule *r;
    int i;
    if (nodes[n].mark == 2) return;
    if (nodes[n].mark == 1) {
        fprintf(stderr, "make: *** Circular dependency: ");
        for (i = 0; i < depth && stack[i] != n; i++) {}
        for (; i < depth; i++) fprintf(stderr, "%s -> ", nodes[stack[i]].name);
        fprintf(stderr, "%s.  Stop.\n", nodes[n].name);
        exit(2);
    }
    if (nodes[n].rule < 0) {                           /* a plain source file */
        struct stat st;
        if (stat(nodes[n].name, &st) != 0) {
            if (needed_by < 0) fprintf(stderr, "make: *** No rule to make target '%s'.  Stop.\n", nodes[n].name);
            else fprintf(stderr, "make: *** No rule to make target '%s', needed by '%s'.  Stop.\n",
                         nodes[n].name, nodes[needed_by].name);
            exit(2);
        }
        nodes[n].mark = 2;
        return;
    }
    nodes[n].mark = 1;
    stack = xrealloc(stack, (size_t)(depth + 1) * sizeof *stack);
    stack[depth++] = n;
    r = &rules[nodes[n].rule];
    for (i = 0; i < r->nprereqs; i++) visit(r->prereqs[i], n);
    depth--;
    nodes[n].mark = 2;
    order = xrealloc(order, (size_t)(norder + 1) * sizeof *order);
    order[norder++] = nodes[n].rule;
}

/* One async op per rule: reads the prerequisites, writes the target. */
static void push_rule(dp_engine *eng, rule *r) {
    dp_var *reads = xrealloc(NULL, (size_t)r->nprereqs * sizeof *reads);
    dp_push_desc d;
    int i;
    for (i = 0; i < r->nprereqs; i++) reads[i] = nodes[r->prereqs[i]].var;
    memset(&d, 0, sizeof d);
    d.async_fn = rule_op; d.arg = r;
    d.reads = reads; d.num_reads = r->nprereqs;
    d.writes = &nodes[r->target].var; d.num_writes = 1;
    d.name = nodes[r->target].name;                    /* lives until exit */
    if (dp_push(eng, &d) != DP_OK) die("could not push a rule");
    free(reads);
}

int main(int argc, char **argv) {
    const char *file = "Makefile.dp", *dir = NULL, *goal = NULL;
    dp_engine_desc desc;
    dp_engine *eng = NULL;
    dp_failure fail;
    dp_result res;
    int i, jobs = 1, g;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-j") == 0 && i + 1 < argc) jobs = atoi(argv[++i]);
        else if (strncmp(argv[i], "-j", 2) == 0 && argv[i][2]) jobs = atoi(argv[i] + 2);
        else if (strcmp(argv[i], "-f") == 0 && i + 1 < argc) file = argv[++i];
        else if (strcmp(argv[i], "-C") == 0 && i + 1 < argc) dir = argv[++i];
        else if (argv[i][0] == '-' || goal) {
            fprintf(stderr, "usage: %s [-j N] [-f rulefile] [-C dir] [target]\n", argv[0]);
            return 2;
        } else goal = argv[i];
    }
    if (jobs < 1) die("-j needs a positive number");
    if (dir && chdir(dir) != 0) { fprintf(stderr, "make: %s: %s\n", dir, strerror(errno)); return 2; }
    parse(file);
    if (!goal && nrules == 0) die("*** No targets.  Stop.");
    g = goal ? node_get(goal) : rules[0].target;
    visit(g, -1);                                      /* exits on any error */

    memset(&desc, 0, sizeof desc);
    desc.type = DP_ENGINE_PERDEVICE;
    desc.cpu_worker_nthreads = jobs;
    job_slots = jobs;
    if (dp_engine_create(&desc, &eng) != DP_OK) die("could not create the engine");
    for (i = 0; i < nnodes; i++) {
        nodes[i].var = dp_var_create(eng);
        if (!nodes[i].var.id) die("could not create a variable");
    }
    for (i = 0; i < norder; i++) push_rule(eng, &rules[order[i]]);

    res = dp_wait_all(eng, &fail);
    pthread_mutex_lock(&job_mtx);
    i = commands_run;
    pthread_mutex_unlock(&job_mtx);
    if (res == DP_ERROR_OP_FAILED) {
        fprintf(stderr, "make: %s\n", fail.message);
        fprintf(stderr, "make: *** [%s] Error %d\n", fail.op_name, fail.status);
    } else if (res != DP_OK) fprintf(stderr, "make: %s\n", dp_result_string(res));
    else if (i == 0) {
        if (nodes[g].rule >= 0 && rules[nodes[g].rule].ncmds > 0) printf("make: '%s' is up to date.\n", nodes[g].name);
        else printf("make: Nothing to be done for '%s'.\n", nodes[g].name);
    }
    dp_engine_destroy(eng, NULL);
    return res == DP_OK ? 0 : 2;
}
