/* walkthrough.c - the dependency-tracking example of MXNet's engine design
   note, replayed event by event:

       A = 2;  B = 2;  B = A + B;  C = A + 2;  A.del()

   Every operation is asynchronous and this program completes them by hand, in
   the order of the classic figure (A = 2, B = 2, C = A + 2, B = A + B), so the
   pending queues of the variables become visible. It uses the NAIVE engine:
   whatever becomes ready runs on the thread that made it ready (here: main,
   inside dp_push or dp_complete). A trace callback prints every state change
   as the engine reports it (a variable's `readers`: the reads granted, -1
   once a write is granted, even to an op that still waits for another
   variable); after each step a table shows each variable's state, the ops
   that hold it and its queue, and each operation's count of unmet
   dependencies ({n}, the figure's counts; {ready} at 0).

   Build from the repository root:
       gcc -std=c11 -Wall -Wextra -pedantic -I. examples/walkthrough.c -o build/walkthrough -pthread
       ./build/walkthrough build/walk.dot build/walk.html

   Both arguments are optional. The first gets the dependency graph as DOT;
   the second a page that replays the trace in a browser, step by step
   (dp_trace_recorder_event keeps every event; dp_trace_write_html writes it,
   and the page groups a push with its variables' events and a completion
   with the releases and grants it causes, so each step shows one
   consistent state; tests/html_check.sh compares it with this program's
   text at every step).
   The file is a whole program: the one command above builds it, the
   implementation included. The repository's Makefile and CMake define
   DEPENG_EXAMPLE_SEPARATE_IMPL and link the implementation compiled once
   (tests/impl/depeng_impl.c) instead. */
#define DEPENG_TRACE_HTML      /* the replay page (dp_trace_write_html) */
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"

#include <stdlib.h>
#include <string.h>

/* ---- the variables, as the trace sees them ------------------------------ */
#define NVARS 3
#define QMAX 8
typedef struct var_view {
    const char *name;
    dp_var handle;
    int readers;                  /* running reads, -1 while a write runs */
    int deleted;
    int qlen;
    const char *qnames[QMAX];
    int qwrite[QMAX];
} var_view;
static var_view vars[NVARS] = {{"A", {0}, 0, 0, 0, {0}, {0}},
                               {"B", {0}, 0, 0, 0, {0}, {0}},
                               {"C", {0}, 0, 0, 0, {0}, {0}}};

/* A handle's low 22 bits index its slot; the generation above them changes
   when the variable is deleted, so the trace is matched by slot. */
#define SLOT(id) ((id) & 0x3FFFFFu)
static dp_trace_recorder *recorder;   /* every event, for the HTML replay */

static var_view *var_by_id(uint64_t id) {
    int i;
    for (i = 0; i < NVARS; i++)
        if (vars[i].handle.id && SLOT(vars[i].handle.id) == SLOT(id)) return &vars[i];
    return NULL;
}

/* ---- the operations ------------------------------------------------------ */
enum { OP_A2, OP_B2, OP_BAB, OP_CA2, OP_DEL, NOPS };
enum { ST_NONE, ST_WAITING, ST_RUNNING, ST_DONE };
typedef struct op_view {
    const char *name;
    int state;
    uint64_t seq;
    int has_token;
    int nvars;                    /* the variables it reads or writes */
    const dp_var *uses[2];
    dp_completion done;           /* recorded by the async function */
} op_view;
static op_view ops[NOPS] = {{"A = 2", 0, 0, 0, 0, {NULL, NULL}, {NULL, 0}},     {"B = 2", 0, 0, 0, 0, {NULL, NULL}, {NULL, 0}},
                            {"B = A + B", 0, 0, 0, 0, {NULL, NULL}, {NULL, 0}}, {"C = A + 2", 0, 0, 0, 0, {NULL, NULL}, {NULL, 0}},
                            {"delete_var", 0, 0, 0, 0, {NULL, NULL}, {NULL, 0}}};
static int run_order[NOPS], nrun;   /* checked against the figure at the end */
static int a_val, b_val, c_val;     /* the "data" behind A, B, C */

static op_view *op_by_name(const char *name) {
    int i;
    for (i = 0; name && i < NOPS; i++)
        if (strcmp(ops[i].name, name) == 0) return &ops[i];
    return NULL;
}
/* Unmet dependencies of a waiting op = the queues it sits in (one queue entry per var). */
static int op_unmet(const op_view *o) {
    int i, k, n = 0;
    for (i = 0; i < NVARS; i++)
        for (k = 0; k < vars[i].qlen && k < QMAX; k++)
            if (vars[i].qnames[k] && strcmp(vars[i].qnames[k], o->name) == 0) n++;
    return n;
}

static void print_queue(char *buf, size_t cap, const var_view *v) {
    int k;
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (k = 0; k < v->qlen && k < QMAX && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s (%s)", k ? ", " : "",
                                 v->qnames[k] ? v->qnames[k] : "?", v->qwrite[k] ? "W" : "R");
    if (used < cap) snprintf(buf + used, cap - used, "%s]", v->qlen > QMAX ? ", ..." : "");
}

/* ---- the trace callback (called under the variable's lock: no engine calls) */
static void on_trace(const dp_trace_event *ev, void *user) {
    char q[200];
    var_view *v;
    op_view *o;
    int k;
    (void)user;
    dp_trace_recorder_event(ev, recorder);   /* it only copies: allowed here */
    switch (ev->kind) {
    case DP_TRACE_PUSH:
        if ((o = op_by_name(ev->op_name)) != NULL) { o->seq = ev->op_seq; if (o->state == ST_NONE) o->state = ST_WAITING; }
        printf("   push      #%llu %-10s  pending %d\n",
               (unsigned long long)ev->op_seq, ev->op_name ? ev->op_name : "?", ev->op_pending);
        break;
    case DP_TRACE_VAR:
        if (!(v = var_by_id(ev->var.id))) { printf("   var ???   id 0x%08x\n", (unsigned)ev->var.id); break; }
        v->readers = ev->var_readers;
        v->qlen = ev->queue_len;
        for (k = 0; k < QMAX; k++) { v->qnames[k] = ev->queue_names[k]; v->qwrite[k] = ev->queue_write[k]; }
        print_queue(q, sizeof q, v);
        printf("   var       %-13s readers %2d  queue %s\n", v->name, ev->var_readers, q);
        break;
    case DP_TRACE_RUN:
        if ((o = op_by_name(ev->op_name)) != NULL) { o->state = ST_RUNNING; if (nrun < NOPS) run_order[nrun++] = (int)(o - ops); }
        printf("   run       #%llu %s\n", (unsigned long long)ev->op_seq, ev->op_name ? ev->op_name : "?");
        break;
    case DP_TRACE_COMPLETE:
        if ((o = op_by_name(ev->op_name)) != NULL) o->state = ST_DONE;
        printf("   complete  #%llu %-10s  status %d\n", (unsigned long long)ev->op_seq, ev->op_name ? ev->op_name : "?", ev->status);
        break;
    case DP_TRACE_DELETE:
        v = var_by_id(ev->var.id);
        if (v) { v->deleted = 1; v->readers = 0; v->qlen = 0; }
        printf("   delete    %-13s (by %s)\n", v ? v->name : "?", ev->op_name ? ev->op_name : "?");
        break;
    case DP_TRACE_GRANT:
        printf("   grant     #%llu %-10s  now waits for %d\n", (unsigned long long)ev->op_seq,
               ev->op_name ? ev->op_name : "?", ev->op_pending);
        break;
    }
}

/* ---- the table after each step ------------------------------------------ */
/* Between steps nothing is half done, so the holders of a variable are the
   pushed, unfinished ops that use it and are not in its queue. */
static void print_holders(char *buf, size_t cap, const var_view *v) {
    int i, k, queued;
    size_t used = 0;
    buf[0] = '\0';
    for (i = 0; i < NOPS && !v->deleted; i++) {
        const op_view *o = &ops[i];
        if (o->state == ST_NONE || o->state == ST_DONE) continue;
        for (k = 0; k < o->nvars && !(o->uses[k]->id == v->handle.id); k++) {}
        if (k == o->nvars) continue;
        for (queued = 0, k = 0; k < v->qlen && k < QMAX; k++)
            if (v->qnames[k] && strcmp(v->qnames[k], o->name) == 0) queued = 1;
        if (!queued && used < cap) used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", o->name);
    }
    if (!buf[0]) snprintf(buf, cap, "-");
}
static void print_state(void) {
    char q[200], h[120];
    const char *st;
    int i;
    for (i = 0; i < NVARS; i++) {
        const var_view *v = &vars[i];
        st = v->deleted ? "deleted" : v->readers < 0 ? "held for writing" : v->readers > 0 ? "held for reading" : "free";
        print_queue(q, sizeof q, v);
        print_holders(h, sizeof h, v);
        printf("     %s  %-17s by %-24s queue %s\n", v->name, st, h, q);
    }
    printf("     ops:");
    for (i = 0; i < NOPS; i++) {
        const op_view *o = &ops[i];
        if (o->state == ST_NONE) continue;
        if (o->state == ST_WAITING && op_unmet(o)) printf("  %s {%d}", o->name, op_unmet(o));
        else printf("  %s {%s}", o->name, o->state == ST_WAITING ? "ready" : o->state == ST_RUNNING ? "run" : "done");
    }
    printf("\n");
}

/* ---- the async functions: remember the token, do the work later --------- */
static void async_op(dp_run_ctx *rc, void *arg, dp_completion done) {
    op_view *o = (op_view *)arg;
    (void)rc;
    o->done = done;
    o->has_token = 1;
}

static int failures;
static void check(dp_result r, const char *what) {
    if (r != DP_OK) { fprintf(stderr, "walkthrough: %s: %s\n", what, dp_result_string(r)); failures++; }
}
static int step_no;
/* Prints the step's heading, and gives it to the recorder as a caption for
   the events that follow. */
static void step(const char *what) {
    char caption[120];
    snprintf(caption, sizeof caption, "%d. %s", ++step_no, what);
    printf("== %s\n", caption);
    check(dp_trace_recorder_mark(recorder, caption), "dp_trace_recorder_mark");
}

static void push(dp_engine *eng, int op, const dp_var *reads, int nr, const dp_var *writes, int nw, const char *what) {
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.async_fn = async_op;
    d.arg = &ops[op];
    d.reads = reads; d.num_reads = nr;
    d.writes = writes; d.num_writes = nw;
    d.name = ops[op].name;
    ops[op].nvars = nr + nw;
    if (nr) ops[op].uses[0] = reads;
    if (nw) ops[op].uses[nr] = writes;
    step(what);
    check(dp_push(eng, &d), ops[op].name);
    print_state();
}

/* Does the op's work, then tells the engine it is done. */
static void complete(int op) {
    op_view *o = &ops[op];
    char what[64];
    snprintf(what, sizeof what, "\"%s\" finishes", o->name);
    step(what);
    if (!o->has_token || o->state != ST_RUNNING) {
        fprintf(stderr, "walkthrough: '%s' is not running\n", o->name);
        failures++;
        return;
    }
    switch (op) {
    case OP_A2: a_val = 2; break;
    case OP_B2: b_val = 2; break;
    case OP_BAB: b_val = a_val + b_val; break;
    case OP_CA2: c_val = a_val + 2; break;
    default: break;
    }
    o->has_token = 0;
    dp_complete(o->done, 0, NULL);     /* newly ready ops run inline, here */
    print_state();
}

int main(int argc, char **argv) {
    static const int expect_order[NOPS] = {OP_A2, OP_B2, OP_CA2, OP_BAB, OP_DEL};
    dp_engine_desc desc;
    dp_engine *eng = NULL;
    dp_var A, B, C;
    dp_failure fail;
    int i;

    check(dp_trace_recorder_create(NULL, 0, &recorder), "dp_trace_recorder_create");
    if (!recorder) return 1;
    memset(&desc, 0, sizeof desc);
    desc.type = DP_ENGINE_NAIVE;
    desc.ignore_env = 1;
    desc.trace.func = on_trace;
    desc.trace.record_graph = 1;
    check(dp_engine_create(&desc, &eng), "dp_engine_create");
    if (!eng) return 1;
    A = vars[0].handle = dp_var_create(eng);
    B = vars[1].handle = dp_var_create(eng);
    C = vars[2].handle = dp_var_create(eng);
    if (!A.id || !B.id || !C.id) { fprintf(stderr, "walkthrough: dp_var_create failed\n"); return 1; }
    check(dp_trace_recorder_name_var(recorder, A, "A"), "dp_trace_recorder_name_var");
    check(dp_trace_recorder_name_var(recorder, B, "B"), "dp_trace_recorder_name_var");
    check(dp_trace_recorder_name_var(recorder, C, "C"), "dp_trace_recorder_name_var");

    printf("A = 2; B = 2; B = A + B; C = A + 2; A.del()  -- naive engine, async ops\n");
    printf("trace lines as the engine reports them: readers = reads granted (-1: a write is granted);\n");
    printf("queue: (R)ead / (W)rite waiters, first in line on the left; {n}: unmet dependencies of a waiting op\n");

    push(eng, OP_A2, NULL, 0, &A, 1, "push \"A = 2\"      (writes A)");
    push(eng, OP_B2, NULL, 0, &B, 1, "push \"B = 2\"      (writes B)");
    push(eng, OP_BAB, &A, 1, &B, 1, "push \"B = A + B\"  (reads A, writes B)");
    push(eng, OP_CA2, &A, 1, &C, 1, "push \"C = A + 2\"  (reads A, writes C)");
    ops[OP_DEL].nvars = 1;
    ops[OP_DEL].uses[0] = &vars[0].handle;
    step("A.del()          (dp_var_delete: op \"delete_var\" writes A)");
    check(dp_var_delete(eng, A), "dp_var_delete");
    print_state();

    complete(OP_A2);
    complete(OP_B2);
    complete(OP_CA2);
    complete(OP_BAB);

    check(dp_wait_all(eng, &fail), "dp_wait_all");
    if (argc > 1) {
        FILE *f = fopen(argv[1], "w");
        if (!f) { fprintf(stderr, "walkthrough: cannot open %s\n", argv[1]); failures++; }
        else {
            check(dp_trace_write_dot(eng, f), "dp_trace_write_dot");
            if (fclose(f) != 0) failures++;
            printf("dependency graph written to %s (dot -Tpng %s -o walk.png)\n", argv[1], argv[1]);
        }
    }
    if (argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (!f) { fprintf(stderr, "walkthrough: cannot open %s\n", argv[2]); failures++; }
        else {
            check(dp_trace_write_html(eng, recorder, "A = 2; B = 2; B = A + B; C = A + 2; A.del()", f), "dp_trace_write_html");
            if (fclose(f) != 0) failures++;
            printf("replay page written to %s (open it in a browser; keys: left/right arrow, Home, End)\n", argv[2]);
        }
    }
    check(dp_engine_destroy(eng, &fail), "dp_engine_destroy");
    dp_trace_recorder_destroy(recorder);

    printf("run order:");
    for (i = 0; i < nrun; i++) printf(" %s%s", ops[run_order[i]].name, i + 1 < nrun ? "," : "");
    printf("\n");
    if (nrun != NOPS) failures++;
    for (i = 0; i < nrun && i < NOPS; i++)
        if (run_order[i] != expect_order[i]) failures++;
    printf("final values: A = %d, B = %d, C = %d (expected 2, 4, 4)\n", a_val, b_val, c_val);
    if (a_val != 2 || b_val != 4 || c_val != 4) failures++;
    if (!vars[0].deleted) { fprintf(stderr, "walkthrough: no DELETE event for A\n"); failures++; }
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
