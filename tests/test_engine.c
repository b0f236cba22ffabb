/* depeng engine tests. Every test runs where it makes sense on all three
   engine kinds; the last line is "N passed, M failed". */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <time.h>
#include <string.h>
/* The lost wake-up test parks a worker once between its look at the queue
   and leaving the spinning count (see test_wake_after_last_look). */
static int g_park_in_found;
static void (*g_before_clear)(void);   /* run once inside dp_wait_all, before it clears failures */
static int g_pusher_yields;            /* counts the pacing yields (see test_push_pacing) */
static void test_hook(const char *point) {
    struct timespec ts = {0, 100000000};
    if (strcmp(point, "worker_found") == 0 && __atomic_exchange_n(&g_park_in_found, 0, __ATOMIC_ACQ_REL)) nanosleep(&ts, NULL);
    if (strcmp(point, "pusher_yield") == 0) __atomic_fetch_add(&g_pusher_yields, 1, __ATOMIC_RELAXED);
    if (strcmp(point, "wait_all_clear") == 0 && g_before_clear) { void (*f)(void) = g_before_clear; g_before_clear = NULL; f(); }
}
/* test_hook runs at the scheduler's DEPENG_TEST_HOOK points: the
   implementation this test links (tests/impl/depeng_impl.c) calls it
   through dp_test_hook_fn, which main sets. */
#define DEPENG_TRACE_HTML      /* the replay page (dp_trace_write_html) */
#include "depeng.h"
#include "tests/impl/test_hook.h"
#include "tests/test_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <fenv.h>


static dp_engine *make_engine(dp_engine_type type, int nthreads) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = nthreads; d.ignore_env = 1;
    d.logger.func = quiet_logger;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    return e;
}
/* An engine of type with 2 workers whose memory comes from alloc / free. */
static dp_engine *make_engine_alloc(dp_engine_type type, void *(*alloc)(size_t, size_t, void *), void (*free_fn)(void *, size_t, void *)) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
    d.logger.func = quiet_logger;
    d.allocator.alloc = alloc; d.allocator.free = free_fn;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    return e;
}
static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
static const char *kind_names[4] = {"default", "naive", "pooled", "perdevice"};

/* ---- the example of MXNet's engine documentation:
   A = 2; B = 2; B = A + B; C = A + 2; A.del() */
static int vA, vB, vC, deleted_a;
static int set_a(dp_run_ctx *rc, void *a) { (void)rc; (void)a; vA = 2; return 0; }
static int set_b(dp_run_ctx *rc, void *a) { (void)rc; (void)a; vB = 2; return 0; }
static int b_plus(dp_run_ctx *rc, void *a) { (void)rc; (void)a; vB = vA + vB; return 0; }
static int c_set(dp_run_ctx *rc, void *a) { (void)rc; (void)a; vC = vA + 2; return 0; }
static int on_delete(dp_run_ctx *rc, void *a) { (void)rc; (void)a; deleted_a = vB == 4 && vC == 4; return 0; }
static void test_abc_example(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var A = dp_var_create(e), B = dp_var_create(e), C = dp_var_create(e);
        dp_var AB[2];
        dp_ctx cpu = {0, 0};
        AB[0] = A; AB[1] = B;
        vA = vB = vC = deleted_a = 0;
        CHECK(dp_push_sync(e, set_a, NULL, NULL, 0, &A, 1) == DP_OK);
        CHECK(dp_push_sync(e, set_b, NULL, NULL, 0, &B, 1) == DP_OK);
        CHECK(dp_push_sync(e, b_plus, NULL, AB, 2, &B, 1) == DP_OK);
        CHECK(dp_push_sync(e, c_set, NULL, &A, 1, &C, 1) == DP_OK);
        CHECK(dp_var_delete_fn(e, A, on_delete, NULL, cpu) == DP_OK);
        CHECK(dp_wait_var(e, B, NULL) == DP_OK);
        CHECK(vB == 4);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(vC == 4 && deleted_a == 1);
        CHECK(var_state(e, A) == DP_VAR_INVALID);
        CHECK(var_state(e, B) == DP_VAR_READY);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- randomized oracle: random read/write sets, each op folds what it reads
   into what it writes; the result must equal a sequential run. */
#define RV 32
typedef struct { uint64_t *vals; int nr, nw; int r[4], w[3]; uint64_t id; } rop;
static uint64_t mix(uint64_t z) { z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; return z ^ (z >> 31); }
static void rop_apply(rop *o) {
    uint64_t h = mix(o->id);
    int i;
    for (i = 0; i < o->nr; i++) h = mix(h ^ o->vals[o->r[i]]);
    for (i = 0; i < o->nw; i++) { h = mix(h ^ o->vals[o->w[i]]); o->vals[o->w[i]] = h + (uint64_t)i; }
}
static int rop_fn(dp_run_ctx *rc, void *a) { (void)rc; rop_apply((rop *)a); return 0; }
static uint64_t rng_state;
static uint64_t rnd(void) { rng_state += 0x9E3779B97F4A7C15ull; return mix(rng_state); }
static void test_random_oracle(void) {
    static const int threads[3] = {1, 2, 8};
    int k, t, i, j, N = 4000;
    for (k = 0; k < 3; k++) for (t = 0; t < 3; t++) {
        uint64_t seq[RV], par[RV];
        rop *ops = (rop *)calloc((size_t)N, sizeof *ops);
        dp_engine *e = make_engine(kinds[k], threads[t]);
        dp_var vars[RV];
        rng_state = 1234 + (uint64_t)(k * 10 + t);
        for (i = 0; i < RV; i++) { seq[i] = par[i] = (uint64_t)i; vars[i] = dp_var_create(e); }
        for (i = 0; i < N; i++) {
            rop *o = &ops[i];
            o->id = (uint64_t)i; o->nr = (int)(rnd() % 5); o->nw = (int)(rnd() % 4);
            for (j = 0; j < o->nr; j++) o->r[j] = (int)(rnd() % RV);
            for (j = 0; j < o->nw; j++) o->w[j] = (int)(rnd() % RV);
            /* a var may repeat, or be both read and written: the engine dedups */
            for (j = 0; j < o->nw; j++) { int m; for (m = 0; m < j; m++) if (o->w[m] == o->w[j]) o->w[j] = (o->w[j] + 1) % RV, m = -1; }
        }
        for (i = 0; i < N; i++) { ops[i].vals = seq; rop_apply(&ops[i]); }
        for (i = 0; i < N; i++) {
            dp_var rv[4], wv[3];
            dp_push_desc d;
            memset(&d, 0, sizeof d);
            ops[i].vals = par;
            for (j = 0; j < ops[i].nr; j++) rv[j] = vars[ops[i].r[j]];
            for (j = 0; j < ops[i].nw; j++) wv[j] = vars[ops[i].w[j]];
            d.fn = rop_fn; d.arg = &ops[i]; d.reads = rv; d.num_reads = ops[i].nr; d.writes = wv; d.num_writes = ops[i].nw;
            d.name = "rop";
            if (dp_push(e, &d) != DP_OK) { CHECK(0); break; }
        }
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        for (i = 0; i < RV; i++) if (seq[i] != par[i]) { fprintf(stderr, "  oracle mismatch engine=%s threads=%d var %d\n", kind_names[kinds[k]], threads[t], i); CHECK(0); break; }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        free(ops);
    }
}

/* ---- failures: propagate, skip dependents, report once, clear */
static int ran_after_fail, ran_noskip;
static int fail_fn(dp_run_ctx *rc, void *a) { (void)a; dp_set_error(rc, "disk on fire"); return 7; }
static int mark_ran(dp_run_ctx *rc, void *a) { (void)rc; (*(int *)a)++; return 0; }
static void test_failures(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var x = dp_var_create(e), y = dp_var_create(e), z = dp_var_create(e);
        dp_push_desc d;
        dp_failure f;
        ran_after_fail = ran_noskip = 0;
        memset(&d, 0, sizeof d);
        d.fn = fail_fn; d.writes = &x; d.num_writes = 1; d.name = "bad_op";
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_push_sync(e, mark_ran, &ran_after_fail, &x, 1, &y, 1) == DP_OK);   /* skipped */
        memset(&d, 0, sizeof d);
        d.fn = mark_ran; d.arg = &ran_noskip; d.reads = &x; d.num_reads = 1; d.writes = &z; d.num_writes = 1; d.prop = DP_PROP_NO_SKIP;
        CHECK(dp_push(e, &d) == DP_OK);
        memset(&f, 0, sizeof f);
        CHECK(dp_wait_var(e, y, &f) == DP_ERROR_OP_FAILED);       /* passed on to y */
        CHECK(f.status == 7 && strcmp(f.op_name, "bad_op") == 0 && strstr(f.message, "disk on fire") != NULL);
        CHECK(dp_wait_var(e, y, NULL) == DP_OK);                  /* reported once, then cleared */
        CHECK(dp_wait_var(e, z, NULL) == DP_OK);                  /* NO_SKIP ran: z is fine */
        CHECK(ran_after_fail == 0 && ran_noskip == 1);
        CHECK(var_state(e, x) == DP_VAR_FAILED);
        CHECK(dp_wait_var(e, x, &f) == DP_ERROR_OP_FAILED);
        CHECK(dp_wait_all(e, NULL) == DP_OK);                      /* already reported */
        /* a program that never waits for the var still hears of it */
        memset(&d, 0, sizeof d);
        d.fn = fail_fn; d.writes = &x; d.num_writes = 1; d.name = "second";
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_all(e, &f) == DP_ERROR_OP_FAILED && strcmp(f.op_name, "second") == 0);
        CHECK(var_state(e, x) == DP_VAR_READY);             /* wait_all cleared it */
        CHECK(dp_push_sync(e, mark_ran, &ran_after_fail, &x, 1, &y, 1) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK && ran_after_fail == 1);
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_engine_destroy(e, &f) == DP_ERROR_OP_FAILED && strcmp(f.op_name, "second") == 0);
    }
}

/* ---- a run hosted in its write's block (>>chain): the reads after a
   write whose op has an element to spare (three variables in a block of
   four) count down in that block, with no block of their own. Failures
   pass through such a run to its readers and the write after it, a
   deletion closes it, and the blocks all come back. */
static dp_completion g_host_gate;
static void hold_host_gate(dp_run_ctx *rc, void *a, dp_completion done) {
    (void)rc; (void)a;
    g_host_gate.seq = done.seq;
    __atomic_store_n(&g_host_gate.block, done.block, __ATOMIC_RELEASE);   /* wait_host_gate_held polls it */
}
static int count_ran(dp_run_ctx *rc, void *a) { (void)rc; __atomic_add_fetch((int *)a, 1, __ATOMIC_ACQ_REL); return 0; }   /* readers run together */
static void push_host_gate(dp_engine *e, dp_var g) {
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.async_fn = hold_host_gate; d.writes = &g; d.num_writes = 1; d.prop = DP_PROP_ASYNC; d.name = "gate";
    CHECK(dp_push(e, &d) == DP_OK);
}
static void wait_host_gate_held(void) { while (!__atomic_load_n(&g_host_gate.block, __ATOMIC_ACQUIRE)) sched_yield(); }
/* op: reads r[0..1], writes w (three variables: a spare slot) */
static void push_three(dp_engine *e, dp_sync_fn fn, void *arg, dp_var r0, dp_var r1, dp_var w, const char *name) {
    dp_var r[2];
    dp_push_desc d;
    r[0] = r0; r[1] = r1;
    memset(&d, 0, sizeof d);
    d.fn = fn; d.arg = arg; d.reads = r; d.num_reads = 2; d.writes = &w; d.num_writes = 1; d.name = name;
    CHECK(dp_push(e, &d) == DP_OK);
}
static void test_hosted_run(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var g = dp_var_create(e), p = dp_var_create(e), a = dp_var_create(e), o1 = dp_var_create(e), o2 = dp_var_create(e);
        dp_engine_stats s0, s1;
        dp_failure f;
        int ran = 0, i, rounds;
        /* the readers of a and the write after them join the run while the
           failing write before it waits for the gate */
        memset(&g_host_gate, 0, sizeof g_host_gate);
        push_host_gate(e, g);
        wait_host_gate_held();
        push_three(e, fail_fn, NULL, g, p, a, "bad_op");
        CHECK(dp_push_sync(e, count_ran, &ran, &a, 1, &o1, 1) == DP_OK);
        CHECK(dp_push_sync(e, count_ran, &ran, &a, 1, &o2, 1) == DP_OK);
        CHECK(var_state(e, a) == DP_VAR_BUSY);
        push_three(e, count_ran, &ran, p, o1, a, "after_run");
        dp_complete(g_host_gate, 0, NULL);
        memset(&f, 0, sizeof f);
        CHECK(dp_wait_var(e, o1, &f) == DP_ERROR_OP_FAILED && strcmp(f.op_name, "bad_op") == 0);
        CHECK(dp_wait_var(e, o2, &f) == DP_ERROR_OP_FAILED && strcmp(f.op_name, "bad_op") == 0);
        CHECK(dp_wait_var(e, a, &f) == DP_ERROR_OP_FAILED && strcmp(f.op_name, "bad_op") == 0);   /* after_run skipped */
        CHECK(ran == 0);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        /* a run started after a write that is done; a deletion closes it
           while its readers wait for the gate */
        push_three(e, count_ran, &ran, g, p, a, "good");
        CHECK(dp_wait_var(e, a, NULL) == DP_OK && ran == 1);
        memset(&g_host_gate, 0, sizeof g_host_gate);
        push_host_gate(e, g);
        wait_host_gate_held();
        for (i = 0; i < 3; i++) {
            dp_var r[2];
            r[0] = a; r[1] = g;
            memset(&f, 0, sizeof f);
            CHECK(dp_push_sync(e, count_ran, &ran, r, 2, i ? &o2 : &o1, 1) == DP_OK);
        }
        CHECK(var_state(e, a) == DP_VAR_BUSY);
        CHECK(dp_var_delete(e, a) == DP_OK);
        dp_complete(g_host_gate, 0, NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK && ran == 4);
        /* the blocks come back: on the chain engines, 1,000 runs pending at
           once take no block of their own (the pools grow by at most the
           ops' 224 + 160 bytes a group), and the pools stop growing */
        a = dp_var_create(e);
        for (rounds = 0; rounds < 3; rounds++) {
            dp_var outs[1000];
            memset(&g_host_gate, 0, sizeof g_host_gate);
            push_host_gate(e, g);
            wait_host_gate_held();
            CHECK(dp_engine_stats_get(e, &s0) == DP_OK);
            for (i = 0; i < 1000; i++) {
                outs[i] = dp_var_create(e);
                push_three(e, count_ran, &ran, g, p, a, "w");
                CHECK(dp_push_sync(e, count_ran, &ran, &a, 1, &outs[i], 1) == DP_OK);
            }
            CHECK(dp_engine_stats_get(e, &s1) == DP_OK);
            if (kinds[k] != DP_ENGINE_NAIVE && rounds == 0)
                CHECK(s1.pool_bytes - s0.pool_bytes <= 1000u * (224u + 160u));   /* the ops' blocks at most (295,488 here; 418,656 with a block per run) */
            if (kinds[k] != DP_ENGINE_NAIVE && rounds > 0) CHECK(s1.pool_bytes == s0.pool_bytes);
            dp_complete(g_host_gate, 0, NULL);
            CHECK(dp_wait_all(e, NULL) == DP_OK);
            for (i = 0; i < 1000; i++) CHECK(dp_var_delete(e, outs[i]) == DP_OK);
        }
        CHECK(dp_wait_all(e, NULL) == DP_OK && ran == 4 + 3 * 2000);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        /* a batch reserves no blocks for the runs it will host */
        if (kinds[k] != DP_ENGINE_NAIVE) {
            static dp_push_desc descs[2000];
            static dp_var outs[1000];
            dp_var r[2];
            e = make_engine(kinds[k], 2);
            g = dp_var_create(e); p = dp_var_create(e); a = dp_var_create(e);
            r[0] = g; r[1] = p;
            memset(descs, 0, sizeof descs);
            for (i = 0; i < 1000; i++) {
                outs[i] = dp_var_create(e);
                descs[2 * i].fn = count_ran; descs[2 * i].arg = &ran;
                descs[2 * i].reads = r; descs[2 * i].num_reads = 2; descs[2 * i].writes = &a; descs[2 * i].num_writes = 1;
                descs[2 * i + 1].fn = count_ran; descs[2 * i + 1].arg = &ran;
                descs[2 * i + 1].reads = &a; descs[2 * i + 1].num_reads = 1; descs[2 * i + 1].writes = &outs[i]; descs[2 * i + 1].num_writes = 1;
            }
            ran = 0;
            CHECK(dp_engine_stats_get(e, &s0) == DP_OK);
            CHECK(dp_push_batch(e, descs, 2000) == DP_OK);
            CHECK(dp_engine_stats_get(e, &s1) == DP_OK);
            /* the ops' blocks and two chunks' rounding (435,040 here: the
               runs of g and p take one chunk; 599,264 with a block per run) */
            CHECK(s1.pool_bytes - s0.pool_bytes <= 1000u * (224u + 160u) + 2u * (96u + 256u * 224u));
            CHECK(dp_wait_all(e, NULL) == DP_OK && ran == 2000);
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        }
    }
}

/* ---- bad input and stale handles */
static int nop(dp_run_ctx *rc, void *a) { (void)rc; (void)a; return 0; }
static void test_bad_input(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var v = dp_var_create(e), never = {12345}, zero = {0};
        dp_push_desc d;
        dp_opr op;
        dp_engine_stats st;
        CHECK(dp_var_delete(e, v) == DP_OK);
        g_last_item = 0;
        CHECK(dp_push_sync(e, nop, NULL, &v, 1, NULL, 0) == DP_ERROR_INVALID_HANDLE);
        CHECK(g_last_item == DP_LOGITEM_INVALID_VAR);
        CHECK(dp_push_sync(e, nop, NULL, NULL, 0, &never, 1) == DP_ERROR_INVALID_HANDLE);
        CHECK(dp_push_sync(e, nop, NULL, NULL, 0, &zero, 1) == DP_ERROR_INVALID_HANDLE);
        CHECK(dp_wait_var(e, v, NULL) == DP_ERROR_INVALID_HANDLE);
        CHECK(dp_var_delete(e, v) == DP_ERROR_INVALID_HANDLE);
        v = dp_var_create(e);
        CHECK(dp_push_sync(e, NULL, NULL, NULL, 0, &v, 1) == DP_ERROR_INVALID_ARGS);
        CHECK(g_last_item == DP_LOGITEM_NULL_FUNCTION);
        memset(&d, 0, sizeof d);
        d.fn = nop; d.writes = &v; d.num_writes = -1;
        CHECK(dp_push(e, &d) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_NEGATIVE_COUNT);
        d.num_writes = 1; d.ctx.dev_type = 77;
        CHECK(dp_push(e, &d) == DP_ERROR_BAD_CONTEXT && g_last_item == DP_LOGITEM_BAD_CONTEXT);
        d.ctx.dev_type = DP_DEV_GPU;   /* no backend: no GPUs */
        CHECK(dp_push(e, &d) == DP_ERROR_BAD_CONTEXT);
        d.ctx.dev_type = DP_DEV_CPU; d.ctx.dev_id = -1;
        CHECK(dp_push(e, &d) == DP_ERROR_BAD_CONTEXT);
        d.ctx.dev_id = 0; d.async_fn = (dp_async_fn)0; d.fn = nop; d.prop = (dp_prop)99;
        CHECK(dp_push(e, &d) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_BAD_PROP);
        CHECK(dp_push(NULL, &d) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_push(e, NULL) == DP_ERROR_INVALID_ARGS);
        /* nothing was pushed by any of the failures above */
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        dp_engine_stats_get(e, &st);
        CHECK(st.pushed == 1);   /* only the delete: every failed call pushed nothing */
        d.prop = DP_PROP_NORMAL;
        op = dp_opr_create(e, &d);
        CHECK(op.id != 0);
        CHECK(dp_opr_destroy(e, op) == DP_OK);
        g_last_item = 0;
        CHECK(dp_opr_push(e, op, d.ctx, 0) == DP_ERROR_INVALID_HANDLE && g_last_item == DP_LOGITEM_INVALID_OP);
        CHECK(dp_opr_destroy(e, op) == DP_ERROR_INVALID_HANDLE);
        {   /* a pre-created op over a deleted variable is refused at creation */
            dp_var gone = dp_var_create(e);
            CHECK(dp_var_delete(e, gone) == DP_OK);
            d.writes = &gone;
            g_last_item = 0;
            op = dp_opr_create(e, &d);
            CHECK(op.id == 0 && g_last_item == DP_LOGITEM_INVALID_VAR);
            d.writes = &v;
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- waiting or destroying from inside an op is an error, not a hang */
typedef struct { dp_engine *e; dp_var v; dp_result wait_r, all_r, destroy_r; } inner_t;
static int wait_inside(dp_run_ctx *rc, void *a) {
    inner_t *t = (inner_t *)a;
    (void)rc;
    t->wait_r = dp_wait_var(t->e, t->v, NULL);
    t->all_r = dp_wait_all(t->e, NULL);
    t->destroy_r = dp_engine_destroy(t->e, NULL);
    return 0;
}
static void test_wait_inside(void) {
    int k;
    for (k = 0; k < 3; k++) {
        inner_t t;
        t.e = make_engine(kinds[k], 2);
        t.v = dp_var_create(t.e);
        CHECK(dp_push_sync(t.e, wait_inside, &t, NULL, 0, &t.v, 1) == DP_OK);
        CHECK(dp_wait_all(t.e, NULL) == DP_OK);
        CHECK(t.wait_r == DP_ERROR_IN_OPERATION && t.all_r == DP_ERROR_IN_OPERATION && t.destroy_r == DP_ERROR_IN_OPERATION);
        CHECK(dp_engine_destroy(t.e, NULL) == DP_OK);
    }
}

/* ---- async completions from another thread, in reverse order */
#define NASYNC 64
typedef struct { dp_completion done[NASYNC]; int n; pthread_mutex_t m; } async_box;
static void async_record(dp_run_ctx *rc, void *a, dp_completion done) {
    async_box *b = (async_box *)a;
    (void)rc;
    pthread_mutex_lock(&b->m);
    b->done[b->n] = done;
    __atomic_store_n(&b->n, b->n + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&b->m);
}
static void *complete_all(void *a) {
    async_box *b = (async_box *)a;
    int i;
    for (;;) { pthread_mutex_lock(&b->m); i = b->n; pthread_mutex_unlock(&b->m); if (i == NASYNC) break; sched_yield(); }
    for (i = NASYNC - 1; i >= 0; i--) dp_complete(b->done[i], 0, NULL);
    return NULL;
}
static int order_log[NASYNC + 1], order_n;
static int log_order(dp_run_ctx *rc, void *a) { (void)rc; order_log[order_n++] = (int)(intptr_t)a; return 0; }
static void test_async(void) {
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        async_box box;
        pthread_t th;
        dp_var vs[NASYNC], all;
        memset(&box, 0, sizeof box);
        pthread_mutex_init(&box.m, NULL);
        all = dp_var_create(e);
        for (i = 0; i < NASYNC; i++) {
            vs[i] = dp_var_create(e);
            CHECK(dp_push_async(e, async_record, &box, &all, 1, &vs[i], 1) == DP_OK);   /* readers of all: run together */
        }
        order_n = 0;
        CHECK(dp_push_sync(e, log_order, (void *)(intptr_t)1, vs, NASYNC, &all, 1) == DP_OK);
        pthread_create(&th, NULL, complete_all, &box);
        CHECK(dp_wait_var(e, all, NULL) == DP_OK);
        CHECK(order_n == 1);
        pthread_join(th, NULL);
        /* a second completion is reported and ignored */
        g_last_item = 0;
        dp_complete(box.done[0], 0, NULL);
        CHECK(g_last_item == DP_LOGITEM_DOUBLE_COMPLETE);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        pthread_mutex_destroy(&box.m);
    }
}

/* ---- deletion while operations are pending */
static void test_delete_pending(void) {
    int k, i, counter;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var v = dp_var_create(e);
        dp_ctx cpu = {0, 0};
        counter = 0;
        deleted_a = -1;
        for (i = 0; i < 100; i++) CHECK(dp_push_sync(e, mark_ran, &counter, NULL, 0, &v, 1) == DP_OK);
        CHECK(dp_var_delete_fn(e, v, mark_ran, &counter, cpu) == DP_OK);
        CHECK(dp_push_sync(e, mark_ran, &counter, NULL, 0, &v, 1) == DP_ERROR_INVALID_HANDLE);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(counter == 101);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- a variable's queue: grows as ops wait, and a push that cannot get
   room for its entry fails cleanly (nothing queued, nothing run) */
static dp_completion g_held_writer;
static void hold_writer(dp_run_ctx *rc, void *arg, dp_completion done) { (void)rc; (void)arg; g_held_writer = done; }
static void test_queue_growth_and_oom(void) {
    int k, i, counter;
    for (k = 0; k < 3; k++) {
        dp_engine_desc d;
        dp_engine *e = NULL;
        dp_var x, y;
        dp_push_desc hold;
        memset(&d, 0, sizeof d);
        d.type = kinds[k]; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
        d.logger.func = quiet_logger;
        d.allocator.alloc = failing_alloc; d.allocator.free = failing_free;
        CHECK(dp_engine_create(&d, &e) == DP_OK);
        x = dp_var_create(e); y = dp_var_create(e);
        memset(&hold, 0, sizeof hold);
        hold.async_fn = hold_writer; hold.prop = DP_PROP_ASYNC; hold.writes = &x; hold.num_writes = 1;
        /* 1000 readers behind a held writer: the ring doubles from 8 to 1024 */
        counter = 0;
        CHECK(dp_push(e, &hold) == DP_OK);
        for (i = 0; i < 1000; i++) CHECK(dp_push_sync(e, count_ran, &counter, &x, 1, NULL, 0) == DP_OK);
        CHECK(var_state(e, x) == DP_VAR_BUSY);
        CHECK(__atomic_load_n(&counter, __ATOMIC_ACQUIRE) == 0);
        {
            dp_engine_stats st;
            dp_engine_stats_get(e, &st);
            if (kinds[k] == DP_ENGINE_NAIVE) CHECK(st.queue_bytes >= 1024 * sizeof(void *));   /* x's ring, counted */
            else CHECK(st.queue_bytes == 0);   /* a chain in the op blocks (depeng.h >>chain): no ring */
        }
        dp_complete(g_held_writer, 0, NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(counter == 1000);
        /* y has never queued an op, so it has no ring yet: with the
           allocator failing, a push that would wait on y fails */
        hold.writes = &y;
        CHECK(dp_push(e, &hold) == DP_OK);
        __atomic_store_n(&g_fail_alloc, 1, __ATOMIC_RELEASE);
        g_last_item = 0;
        CHECK(dp_push_sync(e, count_ran, &counter, &x, 1, &y, 1) == DP_ERROR_OUT_OF_MEMORY);
        CHECK(g_last_item == DP_LOGITEM_OUT_OF_MEMORY);
        CHECK(var_state(e, x) == DP_VAR_READY);   /* its read of x was not left behind */
        __atomic_store_n(&g_fail_alloc, 0, __ATOMIC_RELEASE);
        CHECK(dp_push_sync(e, count_ran, &counter, &x, 1, &y, 1) == DP_OK);
        dp_complete(g_held_writer, 0, NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(counter == 1001);
        CHECK(var_state(e, y) == DP_VAR_READY);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- a variable's ring: growing while its entries wrap around keeps push
   order, and a failed write passes its failure to more waiting readers than
   one completion grants outside the lock */
static volatile int g_ring_gate;
static int g_ring_log[64], g_ring_n;
static int ring_gated_read(dp_run_ctx *rc, void *a) {
    (void)rc; (void)a;
    while (!__atomic_load_n(&g_ring_gate, __ATOMIC_ACQUIRE)) sched_yield();
    __atomic_fetch_add(&g_ring_n, 1, __ATOMIC_ACQ_REL);   /* readers: counted, not ordered */
    return 0;
}
static int ring_log_op(dp_run_ctx *rc, void *a) {
    int k = __atomic_fetch_add(&g_ring_n, 1, __ATOMIC_ACQ_REL);
    (void)rc;
    if (k < 64) g_ring_log[k] = (int)(intptr_t)a;
    return 0;
}
static void test_ring_wrap_and_overflow(void) {
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var x = dp_var_create(e);
        dp_push_desc hold;
        dp_engine_stats before, after;
        int ran = 0;
        memset(&hold, 0, sizeof hold);
        hold.async_fn = hold_writer; hold.prop = DP_PROP_ASYNC; hold.writes = &x; hold.num_writes = 1;
        if (kinds[k] != DP_ENGINE_NAIVE) {   /* the naive engine would run the gated readers on this thread */
            __atomic_store_n(&g_ring_gate, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_ring_n, 0, __ATOMIC_RELEASE);
            CHECK(dp_push(e, &hold) == DP_OK);
            for (i = 0; i < 2; i++) CHECK(dp_push_sync(e, ring_gated_read, NULL, &x, 1, NULL, 0) == DP_OK);
            for (i = 0; i < 6; i++) CHECK(dp_push_sync(e, ring_log_op, (void *)(intptr_t)(100 + i), NULL, 0, &x, 1) == DP_OK);
            dp_complete(g_held_writer, 0, NULL);   /* grants the two readers (held at the gate): the head moves on */
            for (i = 6; i < 12; i++) CHECK(dp_push_sync(e, ring_log_op, (void *)(intptr_t)(100 + i), NULL, 0, &x, 1) == DP_OK);   /* wraps, then grows */
            __atomic_store_n(&g_ring_gate, 1, __ATOMIC_RELEASE);
            CHECK(dp_wait_all(e, NULL) == DP_OK);
            CHECK(g_ring_n == 14);
            for (i = 0; i < 12; i++) CHECK(g_ring_log[2 + i] == 100 + i);   /* the writers in push order, after both reads */
        }
        /* a failed write, then 100 waiting readers: every one is skipped */
        dp_engine_stats_get(e, &before);
        CHECK(dp_push(e, &hold) == DP_OK);
        for (i = 0; i < 100; i++) CHECK(dp_push_sync(e, mark_ran, &ran, &x, 1, NULL, 0) == DP_OK);
        dp_complete(g_held_writer, 5, "boom");
        CHECK(dp_wait_all(e, NULL) == DP_ERROR_OP_FAILED);
        dp_engine_stats_get(e, &after);
        CHECK(ran == 0 && after.skipped - before.skipped == 100);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- pacing: a pusher whose pushes all wait, with more than 2048 ops
   pending while every worker runs an op, yields its core every 64 pushes;
   not while a worker is idle, never with no_push_yield */
static volatile int g_release_busy;
static int g_busy_running;
static int busy_until_released(dp_run_ctx *rc, void *a) {
    (void)rc; (void)a;
    __atomic_fetch_add(&g_busy_running, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&g_release_busy, __ATOMIC_ACQUIRE)) sched_yield();
    return 0;
}
static int pacing_yields(dp_engine_type type, int no_yield, int occupy_workers) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    dp_var busy[2], x;
    int i, ran = 0, yields;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = quiet_logger;
    d.no_push_yield = no_yield;
    if (dp_engine_create(&d, &e) != DP_OK) return -1;
    x = dp_var_create(e);
    __atomic_store_n(&g_release_busy, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_busy_running, 0, __ATOMIC_RELEASE);
    if (occupy_workers) {              /* both workers run an op that x's writer waits for */
        for (i = 0; i < 2; i++) {
            busy[i] = dp_var_create(e);
            CHECK(dp_push_sync(e, busy_until_released, NULL, NULL, 0, &busy[i], 1) == DP_OK);
        }
        while (__atomic_load_n(&g_busy_running, __ATOMIC_ACQUIRE) < 2) sched_yield();
        CHECK(dp_push_sync(e, count_ran, &ran, busy, 2, &x, 1) == DP_OK);
    } else {                           /* x is held by an op no worker runs; the workers have gone to sleep */
        struct timespec idle = {0, 50000000};
        CHECK(dp_push_sync(e, count_ran, &ran, NULL, 0, NULL, 0) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        nanosleep(&idle, NULL);
        dp_push_desc hold;
        memset(&hold, 0, sizeof hold);
        hold.async_fn = hold_writer; hold.prop = DP_PROP_ASYNC; hold.writes = &x; hold.num_writes = 1;
        CHECK(dp_push(e, &hold) == DP_OK);
        ran = 0;
    }
    CHECK(dp_push_sync(e, count_ran, &ran, NULL, 0, NULL, 0) == DP_OK);   /* ready at once: a new run of waiting pushes */
    __atomic_store_n(&g_pusher_yields, 0, __ATOMIC_RELEASE);
    for (i = 0; i < 2200; i++) CHECK(dp_push_sync(e, count_ran, &ran, NULL, 0, &x, 1) == DP_OK);   /* each waits */
    yields = __atomic_load_n(&g_pusher_yields, __ATOMIC_ACQUIRE);
    __atomic_store_n(&g_release_busy, 1, __ATOMIC_RELEASE);
    if (!occupy_workers) dp_complete(g_held_writer, 0, NULL);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(__atomic_load_n(&ran, __ATOMIC_ACQUIRE) == (occupy_workers ? 2202 : 2201));
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    return yields;
}
static void test_push_pacing(void) {
    CHECK(pacing_yields(DP_ENGINE_PERDEVICE, 0, 1) == 3);   /* after the 2048th, 2112th and 2176th waiting push */
    CHECK(pacing_yields(DP_ENGINE_POOLED, 0, 1) == 3);
    CHECK(pacing_yields(DP_ENGINE_PERDEVICE, 1, 1) == 0);   /* turned off */
    CHECK(pacing_yields(DP_ENGINE_PERDEVICE, 0, 0) == 0);   /* the workers are idle: they have the cores */
}

/* ---- pacing with many pushers: more threads than pool stripes, each
   pushing a chain that keeps having to wait (TSan: a pusher must not look
   at an op once its count is released) */
typedef struct { dp_engine *e; int count; } chain_pusher;
static void *push_chain(void *arg) {
    chain_pusher *c = (chain_pusher *)arg;
    dp_var x = dp_var_create(c->e);
    int i;
    for (i = 0; i < 3000; i++) CHECK(dp_push_sync(c->e, mark_ran, &c->count, NULL, 0, &x, 1) == DP_OK);
    CHECK(dp_wait_var(c->e, x, NULL) == DP_OK);
    return NULL;
}
static void test_pacing_many_pushers(void) {
    int k, i;
    for (k = 1; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        chain_pusher c[12];
        pthread_t th[12];
        for (i = 0; i < 12; i++) { c[i].e = e; c[i].count = 0; pthread_create(&th[i], NULL, push_chain, &c[i]); }
        for (i = 0; i < 12; i++) { pthread_join(th[i], NULL); CHECK(c[i].count == 3000); }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- priority pool: highest priority first */
static volatile int gate;
static int wait_gate(dp_run_ctx *rc, void *a) { (void)rc; (void)a; while (!__atomic_load_n(&gate, __ATOMIC_ACQUIRE)) sched_yield(); return 0; }
static void test_priority(void) {
    dp_engine_desc dd;
    dp_engine *e = NULL;
    int i, prios[6] = {3, -5, 10, 0, 7, 10};
    dp_push_desc d;
    memset(&dd, 0, sizeof dd);
    /* no_wait_help: the waiting thread would run the first logged op beside
       the pool's thread, and the log would be in finishing order */
    dd.type = DP_ENGINE_PERDEVICE; dd.cpu_priority_nthreads = 1; dd.ignore_env = 1; dd.logger.func = quiet_logger;
    dd.no_wait_help = 1;
    CHECK(dp_engine_create(&dd, &e) == DP_OK);
    gate = 0; order_n = 0;
    memset(&d, 0, sizeof d);
    d.fn = wait_gate; d.prop = DP_PROP_CPU_PRIORITIZED; d.priority = 100;
    CHECK(dp_push(e, &d) == DP_OK);
    for (i = 0; i < 6; i++) {
        d.fn = log_order; d.arg = (void *)(intptr_t)(i * 100 + prios[i]); d.priority = prios[i];
        CHECK(dp_push(e, &d) == DP_OK);
    }
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(order_n == 6);
    /* expected: 10 (pushed 3rd), 10 (6th), 7, 3, 0, -5 */
    CHECK(order_log[0] == 210 && order_log[1] == 510 && order_log[2] == 407 && order_log[3] == 3 && order_log[4] == 300 && order_log[5] == 95);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- several pushing threads: each thread's ops on a shared var keep its
   own order (checked via a per-thread counter held in the shared var) */
typedef struct { dp_engine *e; dp_var shared, mine; int id; int *last; int bad; } pusher_t;
typedef struct { pusher_t *p; int n; } step_t;
static int step_fn(dp_run_ctx *rc, void *a) {
    step_t *s = (step_t *)a;
    (void)rc;
    if (s->p->last[s->p->id] != s->n - 1) s->p->bad = 1;
    s->p->last[s->p->id] = s->n;
    return 0;
}
static void *pusher_main(void *a) {
    pusher_t *p = (pusher_t *)a;
    static step_t steps[4][2000];
    int i;
    for (i = 0; i < 2000; i++) {
        dp_var w[2];
        steps[p->id][i].p = p; steps[p->id][i].n = i;
        w[0] = p->shared; w[1] = p->mine;
        if (dp_push_sync(p->e, step_fn, &steps[p->id][i], NULL, 0, w, 2) != DP_OK) p->bad = 1;
        if (i % 500 == 0 && dp_wait_var(p->e, p->mine, NULL) != DP_OK) p->bad = 1;
    }
    return NULL;
}
static void test_multi_pusher(void) {
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        pusher_t ps[4];
        pthread_t th[4];
        int last[4];
        dp_var shared = dp_var_create(e);
        for (i = 0; i < 4; i++) {
            last[i] = -1;
            ps[i].e = e; ps[i].shared = shared; ps[i].mine = dp_var_create(e); ps[i].id = i; ps[i].last = last; ps[i].bad = 0;
            pthread_create(&th[i], NULL, pusher_main, &ps[i]);
        }
        for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        for (i = 0; i < 4; i++) CHECK(!ps[i].bad && last[i] == 1999);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- pre-created ops: pushed many times, destroyed while pending */
static void test_precreated(void) {
    int k, i, counter, round;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var v = dp_var_create(e);
        dp_push_desc d;
        dp_opr op;
        dp_ctx cpu = {0, 0};
        dp_engine_stats s1, s2;
        memset(&d, 0, sizeof d);
        counter = 0;
        d.fn = mark_ran; d.arg = &counter; d.writes = &v; d.num_writes = 1; d.name = "inc";
        op = dp_opr_create(e, &d);
        CHECK(op.id != 0);
        /* each round holds 10,000 runs behind one unfinished async writer, so
           both rounds need exactly as many blocks: the second allocates none */
        for (round = 0; round < 2; round++) {
            async_box box;
            memset(&box, 0, sizeof box);
            pthread_mutex_init(&box.m, NULL);
            CHECK(dp_push_async(e, async_record, &box, NULL, 0, &v, 1) == DP_OK);
            for (i = 0; i < 10000; i++) CHECK(dp_opr_push(e, op, cpu, 0) == DP_OK);
            while (!__atomic_load_n(&box.n, __ATOMIC_ACQUIRE)) sched_yield();
            dp_complete(box.done[0], 0, NULL);
            if (round == 1) CHECK(dp_opr_destroy(e, op) == DP_OK);   /* freed after its last run */
            CHECK(dp_wait_all(e, NULL) == DP_OK);
            dp_engine_stats_get(e, round ? &s2 : &s1);
            pthread_mutex_destroy(&box.m);
        }
        dp_engine_stats_get(e, &s2);
        CHECK(counter == 20000);
        CHECK(s2.pool_bytes == s1.pool_bytes);   /* no allocation once warm */
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- a million operations: memory stays within the pools */
static void test_stress(void) {
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var v[4];
        dp_engine_stats st;
        for (i = 0; i < 4; i++) v[i] = dp_var_create(e);
        /* at most 10,000 ops are pending at once, so the pools may hold at
           most ~10,000 blocks (< 4 MiB); a leak of one block per op would
           need ~190 MiB */
        for (i = 0; i < 1000000; i++) {
            if (dp_push_sync(e, nop, NULL, &v[(i + 1) % 4], 1, &v[i % 4], 1) != DP_OK) { CHECK(0); break; }
            if (i % 10000 == 9999) CHECK(dp_wait_all(e, NULL) == DP_OK);
        }
        dp_engine_stats_get(e, &st);
        CHECK(st.pool_bytes < 4u * 1024 * 1024);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        dp_engine_stats_get(e, &st);
        CHECK(st.completed == st.pushed && st.pending_ops == 0);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- duplicates: a var listed twice, or read and written, never deadlocks */
static void test_dedup(void) {
    int k, counter;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var v = dp_var_create(e), w = dp_var_create(e);
        dp_var rr[3], ww[3];
        counter = 0;
        rr[0] = v; rr[1] = v; rr[2] = w;
        ww[0] = v; ww[1] = w; ww[2] = v;
        CHECK(dp_push_sync(e, mark_ran, &counter, rr, 3, ww, 3) == DP_OK);
        CHECK(dp_push_sync(e, mark_ran, &counter, rr, 3, rr, 2) == DP_OK);
        CHECK(dp_wait_var(e, v, NULL) == DP_OK && dp_wait_var(e, w, NULL) == DP_OK);
        CHECK(counter == 2);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- a fake GPU backend on the CPU proves the routing */
typedef struct { int dev, is_copy, ops_pending, syncs; pthread_t owner; } fake_stream;
static int fake_streams_made, fake_streams_destroyed;
static int fake_count(void *u) { (void)u; return 2; }
static int fake_set(int dev, void *u) { (void)u; return dev < 2 ? 0 : 1; }
static int fake_create(int dev, int is_copy, void **out, void *u) {
    fake_stream *s = (fake_stream *)calloc(1, sizeof *s);
    (void)u;
    s->dev = dev; s->is_copy = is_copy; s->owner = pthread_self();
    __atomic_fetch_add(&fake_streams_made, 1, __ATOMIC_RELAXED);
    *out = s;
    return 0;
}
static int fake_destroy(int dev, void *s, void *u) { (void)dev; (void)u; free(s); __atomic_fetch_add(&fake_streams_destroyed, 1, __ATOMIC_RELAXED); return 0; }
static int fake_sync(int dev, void *sp, void *u) { fake_stream *s = (fake_stream *)sp; (void)dev; (void)u; s->ops_pending = 0; s->syncs++; return 0; }
static const char *fake_err(int e, void *u) { (void)e; (void)u; return "fake error"; }
typedef struct { int want_copy, dev, bad; fake_stream *prev; } gpu_check;
static int gpu_op(dp_run_ctx *rc, void *a) {
    gpu_check *c = (gpu_check *)a;
    fake_stream *s = (fake_stream *)rc->stream;
    if (!s || s->is_copy != c->want_copy || s->dev != c->dev || rc->ctx.dev_type != DP_DEV_GPU) c->bad = 1;
    else if (!pthread_equal(s->owner, pthread_self())) c->bad = 2;          /* one stream per worker */
    if (c->prev && c->prev->ops_pending) c->bad = 3;   /* the previous op's stream was synchronised */
    if (s) { s->ops_pending = 1; c->prev = s; }
    return 0;
}
static void test_gpu_routing(void) {
    dp_device_backend be;
    dp_engine_desc dd;
    dp_engine *e = NULL;
    gpu_check cc = {0, 1, 0, NULL}, cp = {1, 1, 0, NULL};
    dp_push_desc d;
    dp_var v;
    int i;
    memset(&be, 0, sizeof be);
    be.name = "fake"; be.device_count = fake_count; be.set_device = fake_set; be.stream_create = fake_create;
    be.stream_destroy = fake_destroy; be.stream_synchronize = fake_sync; be.error_string = fake_err;
    memset(&dd, 0, sizeof dd);
    dd.gpu_backend = &be; dd.ignore_env = 1; dd.logger.func = quiet_logger; dd.gpu_worker_nthreads = 2;
    fake_streams_made = fake_streams_destroyed = 0;
    CHECK(dp_engine_create(&dd, &e) == DP_OK);
    v = dp_var_create(e);
    for (i = 0; i < 200; i++) {
        memset(&d, 0, sizeof d);
        d.writes = &v; d.num_writes = 1; d.ctx.dev_type = DP_DEV_GPU; d.ctx.dev_id = 1; d.fn = gpu_op;
        if (i % 3 == 0) { d.prop = DP_PROP_COPY_TO_GPU; d.arg = &cp; }
        else d.arg = &cc;
        CHECK(dp_push(e, &d) == DP_OK);
    }
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(cc.bad == 0 && cp.bad == 0);
    d.ctx.dev_id = 2;
    CHECK(dp_push(e, &d) == DP_ERROR_BAD_CONTEXT);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    CHECK(fake_streams_made == 3 && fake_streams_destroyed == 3);   /* 2 compute + 1 copy worker */
}

/* ---- profiler: chrome JSON and the summary table */
static void test_profiler(void) {
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 2);
    dp_var v = dp_var_create(e);
    dp_push_desc d;
    char buf[8192];
    FILE *f;
    size_t n;
    int i;
    memset(&d, 0, sizeof d);
    d.fn = nop; d.writes = &v; d.num_writes = 1; d.name = "prof\"op";
    dp_push(e, &d);                    /* not recorded: profiler off */
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    dp_profiler_start(e);
    for (i = 0; i < 5; i++) dp_push(e, &d);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    dp_profiler_stop(e);
    f = test_tmpfile();
    CHECK(dp_profiler_dump_chrome(e, f) == DP_OK);
    rewind(f); n = fread(buf, 1, sizeof buf - 1, f); buf[n] = 0; fclose(f);
    CHECK(strstr(buf, "\"traceEvents\"") != NULL && strstr(buf, "prof\\\"op") != NULL);
    { int count = 0; char *p = buf; while ((p = strstr(p, "\"ph\":\"X\"")) != NULL) { count++; p++; } CHECK(count == 5); }
    f = test_tmpfile();
    CHECK(dp_profiler_dump_summary(e, f) == DP_OK);
    rewind(f); n = fread(buf, 1, sizeof buf - 1, f); buf[n] = 0; fclose(f);
    CHECK(strstr(buf, "prof\"op") != NULL && strstr(buf, " 5 ") != NULL);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- the HTML replay's recorder: bad input, every event kept from several
   workers at once (TSan runs this too), the cap, events lost for lack of
   memory, and the page's data */
static size_t count_in_file(FILE *f, const char *needle, char **text_out) {
    long len;
    char *text, *p;
    size_t n = 0;
    fseek(f, 0, SEEK_END); len = ftell(f); rewind(f);
    text = (char *)malloc((size_t)len + 1);
    if (!text) return 0;
    text[fread(text, 1, (size_t)len, f)] = 0;
    for (p = text; (p = strstr(p, needle)) != NULL; p++) n++;
    if (text_out) *text_out = text; else free(text);
    return n;
}
static void test_trace_html(void) {
    dp_trace_recorder *rec = NULL;
    dp_engine_desc desc;
    dp_engine *e = NULL;
    dp_push_desc d;
    dp_var v[4];
    FILE *f;
    char *text = NULL;
    int i;
    dp_allocator half, counting;
    memset(&half, 0, sizeof half);
    half.alloc = failing_alloc;
    counting = half; counting.free = failing_free;
    CHECK(dp_trace_recorder_create(NULL, 0, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_trace_recorder_create(&half, 0, &rec) == DP_ERROR_INVALID_ARGS && !rec);
    __atomic_store_n(&g_fail_alloc, 1, __ATOMIC_RELEASE);
    CHECK(dp_trace_recorder_create(&counting, 0, &rec) == DP_ERROR_OUT_OF_MEMORY && !rec);
    __atomic_store_n(&g_fail_alloc, 0, __ATOMIC_RELEASE);
    CHECK(dp_trace_recorder_create(NULL, 0, &rec) == DP_OK && rec);
    if (!rec) return;
    CHECK(dp_trace_recorder_name_var(NULL, v[0], "x") == DP_ERROR_INVALID_ARGS);
    v[0].id = 0;
    CHECK(dp_trace_recorder_name_var(rec, v[0], "x") == DP_ERROR_INVALID_ARGS);
    CHECK(dp_trace_recorder_mark(rec, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_trace_write_html(NULL, NULL, NULL, stdout) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_trace_write_html(NULL, rec, NULL, NULL) == DP_ERROR_INVALID_ARGS);
    f = fopen("/dev/null", "r");                /* every write fails */
    if (f) { CHECK(dp_trace_write_html(NULL, rec, NULL, f) == DP_ERROR_IO); fclose(f); }
    dp_trace_recorder_destroy(NULL);

    memset(&desc, 0, sizeof desc);
    desc.type = DP_ENGINE_PERDEVICE; desc.cpu_worker_nthreads = 2; desc.ignore_env = 1;
    desc.logger.func = quiet_logger;
    desc.trace.func = dp_trace_recorder_event; desc.trace.user = rec; desc.trace.record_graph = 1;
    CHECK(dp_engine_create(&desc, &e) == DP_OK);
    if (!e) { dp_trace_recorder_destroy(rec); return; }
    for (i = 0; i < 4; i++) v[i] = dp_var_create(e);
    CHECK(dp_trace_recorder_name_var(rec, v[0], "first") == DP_OK);
    CHECK(dp_trace_recorder_name_var(rec, v[0], "renamed") == DP_OK);
    CHECK(dp_trace_recorder_mark(rec, "500 pushes") == DP_OK);
    memset(&d, 0, sizeof d);
    d.fn = nop; d.num_reads = 1; d.num_writes = 1;
    for (i = 0; i < 500; i++) {
        d.reads = &v[i % 4]; d.writes = &v[(i + 1) % 4];
        d.name = i % 2 ? "odd" : NULL;
        CHECK(dp_push(e, &d) == DP_OK);
    }
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    f = test_tmpfile();
    CHECK(dp_trace_write_html(e, rec, "threads", f) == DP_OK);
    CHECK(count_in_file(f, "{\"k\":\"push\"", NULL) == 500);
    CHECK(count_in_file(f, "{\"k\":\"run\"", NULL) == 500);
    CHECK(count_in_file(f, "{\"k\":\"complete\"", NULL) == 500);
    CHECK(count_in_file(f, "\"op\":\"(unnamed)\"", NULL) >= 250 * 3);
    CHECK(count_in_file(f, "\"r\":[", NULL) == 500);            /* the graph */
    CHECK(count_in_file(f, "\"dropped\":0,\"lost\":0", NULL) == 1);
    CHECK(count_in_file(f, "\"vars\":[[", &text) == 1);
    CHECK(text && strstr(text, ",\"renamed\"]]") && !strstr(text, "\"first\"]") && strstr(text, "\"marks\":[[0,\"500 pushes\"]]"));
    free(text);
    fclose(f);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    dp_trace_recorder_destroy(rec);

    /* a cap of 10 events: the rest are counted, the page has 10 */
    CHECK(dp_trace_recorder_create(NULL, 10, &rec) == DP_OK);
    if (!rec) return;
    desc.trace.user = rec; desc.trace.record_graph = 0;
    CHECK(dp_engine_create(&desc, &e) == DP_OK);
    if (!e) { dp_trace_recorder_destroy(rec); return; }
    v[0] = dp_var_create(e);
    d.reads = NULL; d.num_reads = 0; d.writes = &v[0]; d.name = "w";
    for (i = 0; i < 20; i++) CHECK(dp_push(e, &d) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    f = test_tmpfile();
    CHECK(dp_trace_write_html(e, rec, NULL, f) == DP_OK);
    CHECK(count_in_file(f, "{\"k\":", NULL) == 10);
    CHECK(count_in_file(f, "\"max\":10,\"dropped\":0", NULL) == 0 && count_in_file(f, "\"max\":10,\"dropped\":", NULL) == 1);
    CHECK(count_in_file(f, "\"graph\":null}", NULL) == 1);
    fclose(f);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    dp_trace_recorder_destroy(rec);

    /* events that find no memory are counted as lost, and the page is still
       written but the write reports DP_ERROR_OUT_OF_MEMORY; every byte the
       recorder took from its allocator goes back */
    {
        long before = __atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE);
        CHECK(dp_trace_recorder_create(&counting, 0, &rec) == DP_OK);
        if (!rec) return;
        desc.trace.user = rec;
        CHECK(dp_engine_create(&desc, &e) == DP_OK);
        if (!e) { dp_trace_recorder_destroy(rec); return; }
        v[0] = dp_var_create(e);
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        __atomic_store_n(&g_fail_alloc, 1, __ATOMIC_RELEASE);   /* the engine's allocator is malloc */
        d.name = "a name the recorder has not seen";
        for (i = 0; i < 3; i++) CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        __atomic_store_n(&g_fail_alloc, 0, __ATOMIC_RELEASE);
        f = test_tmpfile();
        CHECK(dp_trace_write_html(e, rec, NULL, f) == DP_ERROR_OUT_OF_MEMORY);
        CHECK(count_in_file(f, "\"lost\":0", NULL) == 0 && count_in_file(f, "{\"k\":\"complete\"", NULL) == 1);
        fclose(f);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        dp_trace_recorder_destroy(rec);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == before);
    }
}

/* ---- configuration: env vars, bad values, default engine */
static void test_config(void) {
    dp_engine *e = NULL;
    dp_engine_desc d, q;
    memset(&d, 0, sizeof d);
    d.logger.func = quiet_logger;
    test_setenv("DEPENG_ENGINE_TYPE", "Pooled");
    test_setenv("DEPENG_CPU_WORKER_NTHREADS", "3");
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    CHECK(dp_engine_desc_get(e, &q) == DP_OK);
    CHECK(q.type == DP_ENGINE_POOLED && q.cpu_worker_nthreads == 3 && q.gpu_copy_nthreads == 1);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    /* without the variable, one CPU worker per CPU the process may use */
    d.ignore_env = 1;
    CHECK(dp_cpu_count() >= 1);
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    CHECK(dp_engine_desc_get(e, &q) == DP_OK && q.cpu_worker_nthreads == dp_cpu_count());
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    d.ignore_env = 0;
    test_setenv("DEPENG_ENGINE_TYPE", "Turbo");
    g_last_item = 0;
    CHECK(dp_engine_create(&d, &e) == DP_ERROR_INVALID_ARGS && e == NULL && g_last_item == DP_LOGITEM_BAD_DESC);
    test_setenv("DEPENG_ENGINE_TYPE", "Naive");
    test_setenv("DEPENG_CPU_WORKER_NTHREADS", "-2");
    CHECK(dp_engine_create(&d, &e) == DP_ERROR_INVALID_ARGS);
    test_unsetenv("DEPENG_ENGINE_TYPE");
    test_unsetenv("DEPENG_CPU_WORKER_NTHREADS");
    d.cpu_worker_nthreads = -2;   /* -1 is DP_NO_THREADS */
    CHECK(dp_engine_create(&d, &e) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_default_engine() != NULL && dp_default_engine() == dp_default_engine());
    dp_default_engine_shutdown();
}

/* ---- a long op does not hide later work from a sleeping worker: op 1
   starts on a pool that was asleep, and op 2 is pushed only once op 1 is
   running, so only the push can wake the second worker. op 1 then waits
   (up to 10 s) for op 2 to start; an engine that let op 2 wait for op 1's
   worker fails here. */
static int g_first_started, g_second_started;
static int long_first(dp_run_ctx *rc, void *a) {
    struct timespec ts = {0, 1000000};
    int i;
    (void)rc;
    __atomic_store_n(&g_first_started, 1, __ATOMIC_RELEASE);
    for (i = 0; i < 10000 && !__atomic_load_n(&g_second_started, __ATOMIC_ACQUIRE); i++) nanosleep(&ts, NULL);
    *(int *)a = __atomic_load_n(&g_second_started, __ATOMIC_ACQUIRE);
    return 0;
}
static int long_second(dp_run_ctx *rc, void *a) {
    (void)rc; (void)a;
    __atomic_store_n(&g_second_started, 1, __ATOMIC_RELEASE);
    return 0;
}
static void test_long_ops_overlap(void) {
    int k;
    for (k = 1; k < 3; k++) {            /* the threaded engines */
        dp_engine *e = make_engine(kinds[k], 2);
        struct timespec settle = {0, 200000000}, tick = {0, 100000};
        int overlapped = 0;
        nanosleep(&settle, NULL);          /* let both workers fall asleep */
        __atomic_store_n(&g_first_started, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g_second_started, 0, __ATOMIC_RELAXED);
        CHECK(dp_push_sync(e, long_first, &overlapped, NULL, 0, NULL, 0) == DP_OK);
        while (!__atomic_load_n(&g_first_started, __ATOMIC_ACQUIRE)) nanosleep(&tick, NULL);
        CHECK(dp_push_sync(e, long_second, NULL, NULL, 0, NULL, 0) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        if (!overlapped) fprintf(stderr, "  %s: the second op waited for the first\n", kind_names[kinds[k]]);
        CHECK(overlapped);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- the last spinner to find work must notice a push that came in after
   its look at the queue: here it is parked for 100 ms right after taking op
   1 (nothing behind it), while op 2 is pushed (the pusher sees it still
   spinning and wakes nobody). op 1 waits up to 10 s for op 2 to start. */
static void test_wake_after_last_look(void) {
    int k;
    for (k = 1; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        struct timespec settle = {0, 200000000}, in_window = {0, 20000000};
        int overlapped = 0;
        nanosleep(&settle, NULL);          /* both workers asleep */
        __atomic_store_n(&g_first_started, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g_second_started, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g_park_in_found, 1, __ATOMIC_RELEASE);
        CHECK(dp_push_sync(e, long_first, &overlapped, NULL, 0, NULL, 0) == DP_OK);
        nanosleep(&in_window, NULL);       /* the worker that took op 1 is parked */
        CHECK(dp_push_sync(e, long_second, NULL, NULL, 0, NULL, 0) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        if (!overlapped) fprintf(stderr, "  %s: op 2 waited in the queue for op 1\n", kind_names[kinds[k]]);
        CHECK(overlapped);
        __atomic_store_n(&g_park_in_found, 0, __ATOMIC_RELAXED);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- a failure dp_wait_all has reported stays cleared, also where an op
   pushed while it cleared carries it on: B reads the failed X and a gate G,
   and is pushed (with G's holder) after dp_wait_all saw every op done but
   before it cleared. B then runs after the clear, is skipped, and writes
   the old failure to Y: Y must not report it again. */
static dp_engine *g_clear_eng;
static dp_var g_cx, g_cg, g_cy;
static dp_completion g_gate;
static int fail_op(dp_run_ctx *rc, void *a) { (void)rc; (void)a; return 7; }
static void hold_gate(dp_run_ctx *rc, void *a, dp_completion done) { (void)rc; (void)a; g_gate = done; }
static void push_during_clear(void) {
    dp_var reads[2];
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.async_fn = hold_gate; d.writes = &g_cg; d.num_writes = 1; d.prop = DP_PROP_ASYNC;   /* runs here: g_gate is set */
    CHECK(dp_push(g_clear_eng, &d) == DP_OK);
    reads[0] = g_cx; reads[1] = g_cg;
    CHECK(dp_push_sync(g_clear_eng, nop, NULL, reads, 2, &g_cy, 1) == DP_OK);
}
static void test_cleared_failure_stays_cleared(void) {
    int k;
    for (k = 1; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_failure f;
        g_clear_eng = e;
        g_cx = dp_var_create(e); g_cg = dp_var_create(e); g_cy = dp_var_create(e);
        CHECK(dp_push_sync(e, fail_op, NULL, NULL, 0, &g_cx, 1) == DP_OK);
        g_before_clear = push_during_clear;
        CHECK(dp_wait_all(e, &f) == DP_ERROR_OP_FAILED && f.status == 7);
        CHECK(g_before_clear == NULL);          /* the hook ran */
        dp_complete(g_gate, 0, NULL);           /* B runs now, after the clear */
        CHECK(dp_wait_var(e, g_cy, NULL) == DP_OK);
        CHECK(var_state(e, g_cy) == DP_VAR_READY);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- a NO_SKIP op is told that an input failed (rc->input_status); by
   returning that status it passes the first failure on unchanged, by
   returning 0 it makes its writes good */
static int g_seen_status;
static int pass_on(dp_run_ctx *rc, void *a) { (void)a; g_seen_status = rc->input_status; return rc->input_status; }
static int make_good(dp_run_ctx *rc, void *a) { (void)a; return rc->input_status == 7 ? 0 : 1; }   /* told, and recovers */
static void test_no_skip_input_status(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var x = dp_var_create(e), y = dp_var_create(e), z = dp_var_create(e);
        dp_push_desc d;
        dp_failure f;
        memset(&d, 0, sizeof d);
        d.fn = fail_op; d.writes = &x; d.num_writes = 1; d.name = "source";
        CHECK(dp_push(e, &d) == DP_OK);
        d.fn = pass_on; d.reads = &x; d.num_reads = 1; d.writes = &y; d.prop = DP_PROP_NO_SKIP; d.name = "pass_on";
        g_seen_status = -1;
        CHECK(dp_push(e, &d) == DP_OK);
        d.fn = make_good; d.writes = &z; d.name = "make_good";
        CHECK(dp_push(e, &d) == DP_OK);
        memset(&f, 0, sizeof f);
        CHECK(dp_wait_var(e, y, &f) == DP_ERROR_OP_FAILED);
        CHECK(g_seen_status == 7 && f.status == 7 && strcmp(f.op_name, "source") == 0);
        CHECK(dp_wait_var(e, z, NULL) == DP_OK);
        dp_wait_all(e, NULL);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* DP_PROP_IO runs on the IO pool, not a compute worker: with one compute
   worker busy waiting for it, an IO op still runs (a 2 s timeout turns the
   old routing into a failure, not a hang). no_skip combines with it. */
static int g_io_flag, g_io_saw_flag, g_io_status;
static int wait_for_io(dp_run_ctx *rc, void *a) {
    int i;
    (void)rc; (void)a;
    for (i = 0; i < 2000 && !__atomic_load_n(&g_io_flag, __ATOMIC_ACQUIRE); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    g_io_saw_flag = __atomic_load_n(&g_io_flag, __ATOMIC_ACQUIRE);
    return 0;
}
static int io_set_flag(dp_run_ctx *rc, void *a) { (void)rc; (void)a; __atomic_store_n(&g_io_flag, 1, __ATOMIC_RELEASE); return 0; }
static int io_note_status(dp_run_ctx *rc, void *a) { (void)a; g_io_status = rc->input_status; return rc->input_status; }
static void test_io_queue(void) {
    int k;
    for (k = 1; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 1);
        dp_var x = dp_var_create(e), y = dp_var_create(e), z = dp_var_create(e), w = dp_var_create(e);
        dp_push_desc d;
        g_io_flag = g_io_saw_flag = 0; g_io_status = -1;
        memset(&d, 0, sizeof d);
        d.fn = wait_for_io; d.writes = &x; d.num_writes = 1; d.name = "compute";
        CHECK(dp_push(e, &d) == DP_OK);
        d.fn = io_set_flag; d.writes = &y; d.prop = DP_PROP_IO; d.name = "io";
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(g_io_saw_flag == 1);
        memset(&d, 0, sizeof d);
        d.fn = fail_op; d.writes = &z; d.num_writes = 1; d.name = "source";
        CHECK(dp_push(e, &d) == DP_OK);
        d.fn = io_note_status; d.reads = &z; d.num_reads = 1; d.writes = &w; d.prop = DP_PROP_IO; d.no_skip = 1; d.name = "io_no_skip";
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_var(e, w, NULL) == DP_ERROR_OP_FAILED);
        CHECK(g_io_status == 7);
        dp_wait_all(e, NULL);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- GPU completion by events: a worker puts an op in flight behind an
   event and takes the next; the op completes (and its dependents may run)
   only once the event has passed. The fake event passes on its third query;
   an event of an op marked `fail` reports error 9. */
enum { EV_OPS = 40, EV_CHAIN = 12 };
typedef struct { int op; int queries; } fake_event;
static int ev_made, ev_destroyed, ev_syncs, ev_passed[EV_OPS + EV_CHAIN], ev_bad, ev_fail_op = -1;
static __thread int ev_running_op = -1;
static int fake_ev_create(int dev, void **out, void *u) { (void)dev; (void)u; *out = calloc(1, sizeof(fake_event)); __atomic_fetch_add(&ev_made, 1, __ATOMIC_RELAXED); return 0; }
static int fake_ev_destroy(int dev, void *e, void *u) { (void)dev; (void)u; free(e); __atomic_fetch_add(&ev_destroyed, 1, __ATOMIC_RELAXED); return 0; }
static int fake_ev_record(int dev, void *e, void *stream, void *u) {
    fake_event *ev = (fake_event *)e;
    (void)dev; (void)stream; (void)u;
    ev->op = ev_running_op; ev->queries = 0;
    return 0;
}
static int fake_ev_query(int dev, void *e, void *u) {
    fake_event *ev = (fake_event *)e;
    (void)dev; (void)u;
    if (++ev->queries < 3) return DP_EVENT_PENDING;
    if (ev->op == ev_fail_op) return 9;
    if (ev->op >= 0) __atomic_store_n(&ev_passed[ev->op], 1, __ATOMIC_RELEASE);
    return 0;
}
static int fake_ev_sync(int dev, void *s, void *u) { (void)dev; (void)s; (void)u; __atomic_fetch_add(&ev_syncs, 1, __ATOMIC_RELAXED); return 0; }
static int ev_op(dp_run_ctx *rc, void *a) {
    int k = (int)(intptr_t)a;
    (void)rc;
    if (k > EV_OPS && !__atomic_load_n(&ev_passed[k - 1], __ATOMIC_ACQUIRE)) ev_bad = 1;   /* chain: the previous op's work is done */
    ev_running_op = k;
    return 0;
}
static void test_gpu_events(void) {
    dp_device_backend be;
    dp_engine_desc dd;
    dp_engine *e = NULL;
    dp_push_desc d;
    dp_var vars[EV_OPS], chain, failing;
    dp_failure f;
    int i, passed = 0;
    memset(&be, 0, sizeof be);
    be.name = "fake-events"; be.device_count = fake_count; be.set_device = fake_set; be.stream_create = fake_create;
    be.stream_destroy = fake_destroy; be.stream_synchronize = fake_ev_sync; be.error_string = fake_err;
    be.event_create = fake_ev_create; be.event_destroy = fake_ev_destroy; be.event_record = fake_ev_record; be.event_query = fake_ev_query;
    memset(&dd, 0, sizeof dd);
    dd.gpu_backend = &be; dd.ignore_env = 1; dd.logger.func = quiet_logger; dd.gpu_worker_nthreads = 2;
    ev_made = ev_destroyed = ev_syncs = ev_bad = 0;
    memset(ev_passed, 0, sizeof ev_passed);
    CHECK(dp_engine_create(&dd, &e) == DP_OK);
    chain = dp_var_create(e);
    memset(&d, 0, sizeof d);
    d.num_writes = 1; d.ctx.dev_type = DP_DEV_GPU; d.ctx.dev_id = 0; d.fn = ev_op;
    for (i = 0; i < EV_OPS + EV_CHAIN; i++) {         /* 40 independent ops, then a chain of 12 */
        if (i < EV_OPS) { vars[i] = dp_var_create(e); d.writes = &vars[i]; } else d.writes = &chain;
        d.arg = (void *)(intptr_t)i;
        CHECK(dp_push(e, &d) == DP_OK);
    }
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    for (i = 0; i < EV_OPS + EV_CHAIN; i++) passed += ev_passed[i];
    CHECK(passed == EV_OPS + EV_CHAIN);     /* every op completed through its event */
    CHECK(ev_bad == 0);
    CHECK(ev_syncs == 0);                   /* and no op waited for its stream */
    ev_fail_op = EV_OPS;                    /* the stream work of this op fails */
    failing = dp_var_create(e);
    d.writes = &failing; d.arg = (void *)(intptr_t)EV_OPS; d.name = "gpu_kernel";
    CHECK(dp_push(e, &d) == DP_OK);
    memset(&f, 0, sizeof f);
    CHECK(dp_wait_var(e, failing, &f) == DP_ERROR_OP_FAILED);
    CHECK(f.status == DP_ERROR_BACKEND && strcmp(f.op_name, "gpu_kernel") == 0 && strstr(f.message, "fake error") != NULL);
    ev_fail_op = -1;
    dp_wait_all(e, NULL);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    CHECK(ev_made == 16 && ev_destroyed == 16);   /* 8 per compute worker */
}

/* ---- an op in flight completes while its worker runs another op's long
   host function: an idle peer settles it. The fake stream's work ends at a
   time; an event passes when the time of its stream's last work has. */
static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
typedef struct { double tail_ms; } timed_stream;
typedef struct { double at_ms; } timed_event;
static int timed_create(int dev, int is_copy, void **out, void *u) { (void)dev; (void)is_copy; (void)u; *out = calloc(1, sizeof(timed_stream)); return 0; }
static int timed_destroy(int dev, void *s, void *u) { (void)dev; (void)u; free(s); return 0; }
static int timed_sync(int dev, void *s, void *u) { (void)dev; (void)u; while (now_ms() < ((timed_stream *)s)->tail_ms) sched_yield(); return 0; }
static int timed_ev_create(int dev, void **out, void *u) { (void)dev; (void)u; *out = calloc(1, sizeof(timed_event)); return 0; }
static int timed_ev_destroy(int dev, void *e, void *u) { (void)dev; (void)u; free(e); return 0; }
static int timed_ev_record(int dev, void *e, void *s, void *u) { (void)dev; (void)u; ((timed_event *)e)->at_ms = ((timed_stream *)s)->tail_ms; return 0; }
static int timed_ev_query(int dev, void *e, void *u) { (void)dev; (void)u; return now_ms() >= ((timed_event *)e)->at_ms ? 0 : DP_EVENT_PENDING; }
static int launch_2ms(dp_run_ctx *rc, void *a) {
    timed_stream *s = (timed_stream *)rc->stream;
    double t = now_ms();
    (void)a;
    s->tail_ms = (s->tail_ms > t ? s->tail_ms : t) + 2;
    return 0;
}
static int host_300ms(dp_run_ctx *rc, void *a) {
    struct timespec ts = {0, 300000000};
    (void)rc; (void)a;
    nanosleep(&ts, NULL);
    return 0;
}
static void test_gpu_events_no_head_of_line(void) {
    dp_device_backend be;
    dp_engine_desc dd;
    dp_engine *e = NULL;
    dp_push_desc d;
    dp_var a, b;
    double t0, waited;
    memset(&be, 0, sizeof be);
    be.name = "timed"; be.device_count = fake_count; be.set_device = fake_set; be.stream_create = timed_create;
    be.stream_destroy = timed_destroy; be.stream_synchronize = timed_sync; be.error_string = fake_err;
    be.event_create = timed_ev_create; be.event_destroy = timed_ev_destroy; be.event_record = timed_ev_record; be.event_query = timed_ev_query;
    memset(&dd, 0, sizeof dd);
    dd.gpu_backend = &be; dd.ignore_env = 1; dd.logger.func = quiet_logger; dd.gpu_worker_nthreads = 2;
    CHECK(dp_engine_create(&dd, &e) == DP_OK);
    a = dp_var_create(e); b = dp_var_create(e);
    memset(&d, 0, sizeof d);
    d.ctx.dev_type = DP_DEV_GPU; d.num_writes = 1;
    d.fn = launch_2ms; d.writes = &a; d.name = "gpu_2ms";
    CHECK(dp_push(e, &d) == DP_OK);                  /* warm the workers up, then the measured pair */
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    t0 = now_ms();
    CHECK(dp_push(e, &d) == DP_OK);
    d.fn = host_300ms; d.writes = &b; d.name = "host_300ms";
    CHECK(dp_push(e, &d) == DP_OK);
    CHECK(dp_wait_var(e, a, NULL) == DP_OK);
    waited = now_ms() - t0;
    CHECK(waited < 150);                             /* not behind the other op's 300 ms */
    if (waited >= 150) fprintf(stderr, "  waited %.1f ms for a 2 ms op\n", waited);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- a handle carries its kind: an op's id is no variable, a var's id no op.
   Both tables count slots from 1, so without the kind bit the first op and
   the first variable have the same id. */
static void test_handle_kinds(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var v = dp_var_create(e), op_as_var;
        dp_push_desc d;
        dp_opr op, var_as_op;
        memset(&d, 0, sizeof d);
        d.fn = nop; d.writes = &v; d.num_writes = 1;
        op = dp_opr_create(e, &d);
        CHECK(v.id != 0 && op.id != 0 && v.id != op.id);
        op_as_var.id = op.id; var_as_op.id = v.id;
        g_last_item = 0;
        CHECK(dp_push_sync(e, nop, NULL, &op_as_var, 1, NULL, 0) == DP_ERROR_INVALID_HANDLE && g_last_item == DP_LOGITEM_INVALID_VAR);
        CHECK(dp_push_sync(e, nop, NULL, NULL, 0, &op_as_var, 1) == DP_ERROR_INVALID_HANDLE);
        CHECK(dp_wait_var(e, op_as_var, NULL) == DP_ERROR_INVALID_HANDLE);
        CHECK(var_state(e, op_as_var) == DP_VAR_INVALID);
        CHECK(dp_var_delete(e, op_as_var) == DP_ERROR_INVALID_HANDLE);
        d.writes = &op_as_var;
        CHECK(dp_opr_create(e, &d).id == 0);
        g_last_item = 0;
        CHECK(dp_opr_push(e, var_as_op, d.ctx, 0) == DP_ERROR_INVALID_HANDLE && g_last_item == DP_LOGITEM_INVALID_OP);
        CHECK(dp_opr_destroy(e, var_as_op) == DP_ERROR_INVALID_HANDLE);
        /* the real handles still work */
        CHECK(dp_opr_push(e, op, d.ctx, 0) == DP_OK);
        CHECK(dp_wait_var(e, v, NULL) == DP_OK);
        CHECK(dp_opr_destroy(e, op) == DP_OK);
        CHECK(dp_var_delete(e, v) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- a failure that finds no memory for its record is never lost: the
   allocator refuses exactly the failure record's size while g_refuse_failure
   is set, so only recording the failure runs out of memory. The failed op's
   dependants are skipped and the waits report the engine's out-of-memory
   failure, on every engine and on the naive engine's inline path. */
static int g_refuse_failure;
static void *refuse_failure_alloc(size_t size, size_t align, void *user) {
    (void)align; (void)user;
    if (size == dp_test_failure_size && __atomic_load_n(&g_refuse_failure, __ATOMIC_ACQUIRE)) return NULL;
    return malloc(size);
}
static void refuse_failure_free(void *p, size_t size, void *user) { (void)size; (void)user; free(p); }
static int fail_without_memory(dp_run_ctx *rc, void *a) {
    (void)rc; (void)a;
    __atomic_store_n(&g_refuse_failure, 1, __ATOMIC_RELEASE);
    return 5;
}
static void test_failure_without_memory(void) {
    int k, round;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine_alloc(kinds[k], refuse_failure_alloc, refuse_failure_free);
        for (round = 0; round < 2; round++) {   /* the second after a dp_wait_all cleared the first */
            dp_var x = dp_var_create(e), y = dp_var_create(e), z = dp_var_create(e);
            dp_failure f;
            int ran = 0;
            memset(&f, 0, sizeof f);
            g_last_item = 0;
            CHECK(dp_push_sync(e, fail_without_memory, NULL, NULL, 0, &x, 1) == DP_OK);
            CHECK(dp_push_sync(e, mark_ran, &ran, &x, 1, &y, 1) == DP_OK);
            /* round 0 learns of it from the dependant's variable, round 1 from dp_wait_all */
            if (round == 0) CHECK(dp_wait_var(e, y, &f) == DP_ERROR_OP_FAILED);
            else CHECK(dp_wait_all(e, &f) == DP_ERROR_OP_FAILED);
            CHECK(f.status == DP_ERROR_OUT_OF_MEMORY);
            CHECK(ran == 0);   /* the wait ordered its skip before us */
            CHECK(g_last_item == DP_LOGITEM_OP_FAILED);
            __atomic_store_n(&g_refuse_failure, 0, __ATOMIC_RELEASE);
            if (round == 0) CHECK(var_state(e, x) == DP_VAR_FAILED);
            CHECK(dp_push_sync(e, nop, NULL, NULL, 0, &z, 1) == DP_OK);   /* an unrelated good write */
            CHECK(dp_wait_var(e, z, NULL) == DP_OK);
            /* a dp_wait_var's report leaves the shared record for dp_wait_all,
               which reports it again rather than miss another failure in it */
            if (round == 0) CHECK(dp_wait_all(e, &f) == DP_ERROR_OP_FAILED && f.status == DP_ERROR_OUT_OF_MEMORY);
            CHECK(dp_wait_all(e, NULL) == DP_OK);             /* then cleared */
            CHECK(var_state(e, x) == DP_VAR_READY);
            CHECK(dp_wait_var(e, y, NULL) == DP_OK);
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- an op's cleanup runs exactly once, whatever becomes of the op: run,
   skipped after a failed input, completed later from another thread, run
   inline by the naive engine, refused at push, or (pre-created) freed after
   its last run, refused at creation, or left for engine destroy. */
typedef struct { int cleanups; int ran_before_cleanup; int ran; } owned_arg;
static void count_cleanup(void *a) {
    owned_arg *o = (owned_arg *)a;
    o->ran_before_cleanup = o->ran;
    __atomic_fetch_add(&o->cleanups, 1, __ATOMIC_ACQ_REL);
}
static int owned_op(dp_run_ctx *rc, void *a) { (void)rc; ((owned_arg *)a)->ran++; return 0; }
static dp_completion g_owned_done;
static void owned_async(dp_run_ctx *rc, void *a, dp_completion done) { (void)rc; ((owned_arg *)a)->ran++; g_owned_done = done; }
static void *complete_later(void *a) { (void)a; dp_complete(g_owned_done, 0, NULL); return NULL; }
static int owned_cleanups(owned_arg *o) { return __atomic_load_n(&o->cleanups, __ATOMIC_ACQUIRE); }
static void test_cleanup_exactly_once(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var x = dp_var_create(e), y = dp_var_create(e), gone = dp_var_create(e);
        owned_arg ran = {0, 0, 0}, skipped = {0, 0, 0}, async = {0, 0, 0}, refused = {0, 0, 0}, deleted = {0, 0, 0};
        owned_arg op_arg = {0, 0, 0}, op_refused = {0, 0, 0}, op_left = {0, 0, 0};
        dp_push_desc d;
        dp_opr op, left;
        pthread_t th;
        int i;
        memset(&d, 0, sizeof d);
        d.fn = owned_op; d.arg = &ran; d.cleanup = count_cleanup; d.writes = &x; d.num_writes = 1;
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_var(e, x, NULL) == DP_OK);
        CHECK(owned_cleanups(&ran) == 1 && ran.ran_before_cleanup == 1);   /* done before the wait returned */
        /* skipped: its input failed */
        CHECK(dp_push_sync(e, fail_op, NULL, NULL, 0, &x, 1) == DP_OK);
        d.arg = &skipped; d.reads = &x; d.num_reads = 1; d.writes = &y;
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_var(e, y, NULL) == DP_ERROR_OP_FAILED);
        CHECK(owned_cleanups(&skipped) == 1 && skipped.ran == 0);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        /* async, completed from another thread after the push returned */
        d.fn = NULL; d.async_fn = owned_async; d.arg = &async; d.num_reads = 0; d.prop = DP_PROP_ASYNC;
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(owned_cleanups(&async) == 0);     /* runs on the pusher (ASYNC), not completed yet */
        CHECK(pthread_create(&th, NULL, complete_later, NULL) == 0);
        pthread_join(th, NULL);
        CHECK(dp_wait_var(e, y, NULL) == DP_OK);
        CHECK(owned_cleanups(&async) == 1 && async.ran_before_cleanup == 1);
        /* refused pushes: a deleted variable, a bad context */
        CHECK(dp_var_delete(e, gone) == DP_OK);
        d.fn = owned_op; d.async_fn = NULL; d.prop = DP_PROP_NORMAL; d.arg = &refused; d.writes = &gone;
        CHECK(dp_push(e, &d) == DP_ERROR_INVALID_HANDLE);
        CHECK(owned_cleanups(&refused) == 1 && refused.ran == 0);
        d.writes = &y; d.ctx.dev_type = 77;
        CHECK(dp_push(e, &d) == DP_ERROR_BAD_CONTEXT);
        CHECK(owned_cleanups(&refused) == 2);
        d.ctx.dev_type = DP_DEV_CPU;
        /* a delete through dp_push */
        d.prop = DP_PROP_DELETE_VAR; d.arg = &deleted; d.writes = &y;
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(owned_cleanups(&deleted) == 1 && deleted.ran_before_cleanup == 1);
        d.prop = DP_PROP_NORMAL; d.writes = &x;
        /* pre-created: once, after dp_opr_destroy and the last of its runs */
        d.arg = &op_arg;
        op = dp_opr_create(e, &d);
        CHECK(op.id != 0);
        for (i = 0; i < 3; i++) CHECK(dp_opr_push(e, op, d.ctx, 0) == DP_OK);
        CHECK(dp_wait_var(e, x, NULL) == DP_OK);
        CHECK(owned_cleanups(&op_arg) == 0);
        CHECK(dp_opr_push(e, op, d.ctx, 0) == DP_OK);
        CHECK(dp_opr_destroy(e, op) == DP_OK);
        CHECK(dp_wait_var(e, x, NULL) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(owned_cleanups(&op_arg) == 1 && op_arg.ran == 4);
        d.arg = &op_refused; d.writes = &gone;
        CHECK(dp_opr_create(e, &d).id == 0);
        CHECK(owned_cleanups(&op_refused) == 1);
        d.arg = &op_left; d.writes = &x;
        left = dp_opr_create(e, &d);
        CHECK(left.id != 0);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(owned_cleanups(&op_left) == 1);
    }
}

/* ---- timed waits: an async op that has not completed makes them return
   DP_ERROR_TIMEOUT after about their timeout, reporting and clearing
   nothing; its failure reaches a later wait. */
static dp_completion g_held;
static void hold_op(dp_run_ctx *rc, void *a, dp_completion done) { (void)rc; (void)a; g_held = done; }
static uint64_t ms_now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u; }
static void test_timed_waits(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var x = dp_var_create(e), y = dp_var_create(e), never = {7};
        dp_push_desc d;
        dp_failure f;
        uint64_t t0;
        int i, ran = 0;
        memset(&d, 0, sizeof d);
        memset(&f, 0, sizeof f);
        CHECK(dp_wait_var_for(e, x, 0, NULL) == DP_OK);     /* nothing pending: done at once */
        CHECK(dp_wait_all_for(e, 0, NULL) == DP_OK);
        d.async_fn = hold_op; d.writes = &x; d.num_writes = 1; d.prop = DP_PROP_ASYNC; d.name = "held";
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_push_sync(e, mark_ran, &ran, &x, 1, &y, 1) == DP_OK);
        t0 = ms_now();
        CHECK(dp_wait_var_for(e, y, 30, &f) == DP_ERROR_TIMEOUT);
        CHECK(ms_now() - t0 >= 30);
        CHECK(dp_wait_var_for(e, x, 0, &f) == DP_ERROR_TIMEOUT);
        for (i = 0; i < 5; i++) CHECK(dp_wait_var_for(e, x, 1, NULL) == DP_ERROR_TIMEOUT);   /* abandoned waits pile up */
        t0 = ms_now();
        CHECK(dp_wait_all_for(e, 20, &f) == DP_ERROR_TIMEOUT);
        CHECK(ms_now() - t0 >= 20);
        CHECK(var_state(e, x) == DP_VAR_BUSY && ran == 0);
        dp_complete(g_held, 9, "held op failed");
        /* the abandoned waits neither reported nor cleared the failure */
        CHECK(dp_wait_var_for(e, y, 10000, &f) == DP_ERROR_OP_FAILED);
        CHECK(f.status == 9 && strcmp(f.op_name, "held") == 0 && ran == 0);
        CHECK(dp_wait_var(e, x, &f) == DP_ERROR_OP_FAILED && f.status == 9);
        CHECK(dp_wait_all_for(e, 10000, NULL) == DP_OK);    /* y reported it; nothing left */
        CHECK(var_state(e, x) == DP_VAR_READY);
        /* a failure behind an abandoned wait still reaches dp_wait_all */
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_var_for(e, x, 1, NULL) == DP_ERROR_TIMEOUT);
        dp_complete(g_held, 4, NULL);
        CHECK(dp_wait_all_for(e, 10000, &f) == DP_ERROR_OP_FAILED && f.status == 4);
        CHECK(dp_wait_var_for(e, never, 5, NULL) == DP_ERROR_INVALID_HANDLE);
        CHECK(dp_wait_var_for(NULL, x, 5, NULL) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_wait_all_for(NULL, 5, NULL) == DP_ERROR_INVALID_ARGS);
        CHECK(strcmp(dp_result_string(DP_ERROR_TIMEOUT), "unknown result") != 0);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- destroying an engine whose async op has not completed keeps waiting,
   and after desc.pending_report_ms logs what it waits for: the running op,
   and the ops queued behind it with their variables. */
#define PENDING_LOG_LINES 64
static char g_pending_log[PENDING_LOG_LINES][512];
static int g_pending_lines;
static pthread_mutex_t g_pending_mtx = PTHREAD_MUTEX_INITIALIZER;
static void pending_logger(const char *tag, uint32_t level, uint32_t item, const char *msg, uint32_t line, const char *file, void *user) {
    (void)tag; (void)level; (void)line; (void)file; (void)user;
    if (item != DP_LOGITEM_PENDING) return;
    pthread_mutex_lock(&g_pending_mtx);
    if (g_pending_lines < PENDING_LOG_LINES) snprintf(g_pending_log[g_pending_lines++], 512, "%s", msg);
    pthread_mutex_unlock(&g_pending_mtx);
}
static int pending_log_has(const char *text) {
    int i, found = 0;
    pthread_mutex_lock(&g_pending_mtx);
    for (i = 0; i < g_pending_lines && !found; i++) found = strstr(g_pending_log[i], text) != NULL;
    pthread_mutex_unlock(&g_pending_mtx);
    return found;
}
static void *destroy_in_thread(void *a) { return (void *)(intptr_t)dp_engine_destroy((dp_engine *)a, NULL); }
/* The report of a variable with running reads and ops queued behind them is
   the same from both forms of the rule (depeng.h >>rule and >>chain): two
   held readers of x run, a write of x and a read after it wait, in push
   order. */
static dp_completion g_held_reads[2];
static int g_held_reads_n;
static void hold_read(dp_run_ctx *rc, void *a, dp_completion done) {
    (void)rc; (void)a;
    g_held_reads[__atomic_fetch_add(&g_held_reads_n, 1, __ATOMIC_ACQ_REL)] = done;
}
/* dp_engine_dump_pending's report into buf (through a temporary file);
   0 when it could not be made. */
static int pending_report(dp_engine *e, char *buf, size_t size) {
    FILE *tmp = test_tmpfile();
    size_t n;
    CHECK(tmp != NULL);
    if (!tmp) return 0;
    CHECK(dp_engine_dump_pending(e, tmp) == DP_OK);
    rewind(tmp);
    n = fread(buf, 1, size - 1, tmp);
    buf[n] = 0;
    fclose(tmp);
    return 1;
}
/* A push refused after its block was filled in (a deleted variable among
   live ones) leaves nothing in the report: its block goes back to the pool
   never pushed, and the report's scan of the pools (the chain form) must
   not list it as a waiting op #0. */
static void test_report_skips_refused_push(void) {
    int k;
    for (k = 1; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 1);
        dp_var a, dead, both[2];
        dp_push_desc d;
        char buf[4096], expect[128];
        int ran = 0;
        a = dp_var_create(e); dead = dp_var_create(e);
        CHECK(dp_var_delete(e, dead) == DP_OK && dp_wait_all(e, NULL) == DP_OK);   /* #1 */
        both[0] = a; both[1] = dead;
        memset(&d, 0, sizeof d);
        d.fn = mark_ran; d.arg = &ran; d.reads = both; d.num_reads = 2; d.name = "refused";
        CHECK(dp_push(e, &d) == DP_ERROR_INVALID_HANDLE);
        memset(&d, 0, sizeof d);
        d.async_fn = hold_op; d.writes = &a; d.num_writes = 1; d.prop = DP_PROP_ASYNC; d.name = "held";   /* #2 */
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_push_sync(e, mark_ran, &ran, &a, 1, NULL, 0) == DP_OK);                              /* #3 */
        if (pending_report(e, buf, sizeof buf)) {
            snprintf(expect, sizeof expect, "variable 0x%08x: written by a running op; 1 waiting: #3 '(unnamed)' (read)", (unsigned)a.id);
            CHECK(strstr(buf, expect) != NULL && strstr(buf, "'refused'") == NULL);
            if (!strstr(buf, expect)) fprintf(stderr, "  report:\n%s", buf);
        }
        dp_complete(g_held, 0, NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK && ran == 1);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}
/* A batch takes from the pools only the read runs it may start: 20,000
   runs of an op that reads two variables and writes a third start at most
   two (each later read joins the run the first one opened), where counting
   one per read took 40,000 (6 MB kept in the pools for good). */
static void test_batch_reserves_runs_it_needs(void) {
    int k;
    for (k = 1; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 1);
        dp_var in[2], out;
        dp_push_desc d;
        dp_opr op;
        dp_engine_stats s1, s2;
        int ran = 0;
        dp_ctx cpu = {DP_DEV_CPU, 0};
        in[0] = dp_var_create(e); in[1] = dp_var_create(e); out = dp_var_create(e);
        memset(&d, 0, sizeof d);
        d.fn = count_ran; d.arg = &ran; d.reads = in; d.num_reads = 2; d.writes = &out; d.num_writes = 1;
        op = dp_opr_create(e, &d);
        dp_engine_stats_get(e, &s1);
        CHECK(dp_opr_push_n(e, op, cpu, 0, 20000) == DP_OK);
        dp_engine_stats_get(e, &s2);
        CHECK(dp_wait_all(e, NULL) == DP_OK && ran == 20000);
        /* the blocks themselves: at most 20,000 of 224 bytes and the chunks' heads */
        CHECK(s2.pool_bytes - s1.pool_bytes < 20000u * 240u);
        CHECK(dp_opr_destroy(e, op) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}
static void test_report_running_reads(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var x;
        dp_push_desc d;
        char buf[4096], expect[160];
        int ran = 0;
        x = dp_var_create(e);
        g_held_reads_n = 0;
        memset(&d, 0, sizeof d);
        d.async_fn = hold_read; d.reads = &x; d.num_reads = 1; d.prop = DP_PROP_ASYNC; d.name = "held_read";
        CHECK(dp_push(e, &d) == DP_OK && dp_push(e, &d) == DP_OK);
        while (__atomic_load_n(&g_held_reads_n, __ATOMIC_ACQUIRE) < 2) sched_yield();
        CHECK(dp_push_sync(e, mark_ran, &ran, NULL, 0, &x, 1) == DP_OK);   /* #3 waits */
        CHECK(dp_push_sync(e, mark_ran, &ran, &x, 1, NULL, 0) == DP_OK);   /* #4 waits behind it */
        CHECK(var_state(e, x) == DP_VAR_BUSY);
        if (pending_report(e, buf, sizeof buf)) {
            snprintf(expect, sizeof expect, "variable 0x%08x: 2 running reads; 2 waiting: #3 '(unnamed)' (write) #4 '(unnamed)' (read)",
                     (unsigned)x.id);
            CHECK(strstr(buf, expect) != NULL);
            if (!strstr(buf, expect)) fprintf(stderr, "  report:\n%s", buf);
        }
        CHECK(ran == 0);
        dp_complete(g_held_reads[0], 0, NULL);
        CHECK(var_state(e, x) == DP_VAR_BUSY);
        dp_complete(g_held_reads[1], 0, NULL);
        CHECK(dp_wait_var(e, x, NULL) == DP_OK);
        CHECK(ran == 2 && var_state(e, x) == DP_VAR_READY);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}
static void test_destroy_reports_pending(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine_desc desc;
        dp_engine *e = NULL;
        dp_var x, y;
        dp_push_desc d;
        pthread_t th;
        void *ret;
        char expect[128];
        int ran = 0, waited;
        memset(&desc, 0, sizeof desc);
        desc.type = kinds[k]; desc.cpu_worker_nthreads = 2; desc.ignore_env = 1;
        desc.logger.func = pending_logger; desc.pending_report_ms = 50;
        CHECK(dp_engine_create(&desc, &e) == DP_OK);
        {
            dp_engine_desc got;
            CHECK(dp_engine_desc_get(e, &got) == DP_OK && got.pending_report_ms == 50);
            CHECK(dp_engine_desc_get(NULL, &got) == DP_ERROR_INVALID_ARGS && dp_engine_desc_get(e, NULL) == DP_ERROR_INVALID_ARGS);
        }
        x = dp_var_create(e); y = dp_var_create(e);
        memset(&d, 0, sizeof d);
        d.async_fn = hold_op; d.writes = &x; d.num_writes = 1; d.prop = DP_PROP_ASYNC; d.name = "never_done";
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_push_sync(e, mark_ran, &ran, &x, 1, &y, 1) == DP_OK);
        /* the same report on demand */
        {
            char buf[4096];
            if (pending_report(e, buf, sizeof buf)) {
                CHECK(strstr(buf, "2 ops pending") != NULL);
                CHECK(strstr(buf, "running: op #1 'never_done' (async") != NULL);
                CHECK(strstr(buf, "written by a running op; 1 waiting: #2 '(unnamed)' (read)") != NULL);
            }
        }
        CHECK(dp_engine_dump_pending(e, NULL) == DP_ERROR_INVALID_ARGS);
        g_pending_lines = 0;
        CHECK(pthread_create(&th, NULL, destroy_in_thread, e) == 0);
        for (waited = 0; waited < 5000 && !pending_log_has("#2"); waited += 10) { struct timespec ts = {0, 10000000}; nanosleep(&ts, NULL); }
        CHECK(pending_log_has("dp_engine_destroy has waited 50 ms"));
        CHECK(pending_log_has("running: op #1 'never_done'"));
        snprintf(expect, sizeof expect, "variable 0x%08x: written by a running op; 1 waiting: #2", (unsigned)x.id);
        CHECK(pending_log_has(expect));
        CHECK(ran == 0);
        dp_complete(g_held, 0, NULL);      /* destroy goes on and returns */
        pthread_join(th, &ret);
        CHECK((dp_result)(intptr_t)ret == DP_OK);
        CHECK(ran == 1);
    }
}

/* ---- two failures without memory share the engine's record: reporting the
   first through its variable must not hide the second from dp_wait_all. */
static void test_two_failures_without_memory(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine_alloc(kinds[k], refuse_failure_alloc, refuse_failure_free);
        dp_var x, y;
        dp_failure f;
        x = dp_var_create(e); y = dp_var_create(e);
        CHECK(dp_push_sync(e, fail_without_memory, NULL, NULL, 0, &x, 1) == DP_OK);
        CHECK(dp_push_sync(e, fail_without_memory, NULL, NULL, 0, &y, 1) == DP_OK);
        CHECK(dp_wait_var(e, x, &f) == DP_ERROR_OP_FAILED);
        CHECK(dp_wait_all(e, &f) == DP_ERROR_OP_FAILED && f.status == DP_ERROR_OUT_OF_MEMORY);   /* y's */
        __atomic_store_n(&g_refuse_failure, 0, __ATOMIC_RELEASE);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- a failure without memory that dp_wait_all cleared stays cleared where
   an op pushed during the clear carries it on, also after the engine's
   record served another failure since: C reads the failed X and a gate G,
   is pushed after dp_wait_all saw every op done but before it cleared, and
   runs (skipped) after a new failure D used the engine's record. */
static dp_engine *g_race_eng;
static dp_var g_rx, g_rg, g_ry;
static void push_failure_during_clear(void) {
    dp_var reads[2];
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.async_fn = hold_gate; d.writes = &g_rg; d.num_writes = 1; d.prop = DP_PROP_ASYNC;
    CHECK(dp_push(g_race_eng, &d) == DP_OK);
    CHECK(dp_push_sync(g_race_eng, fail_without_memory, NULL, NULL, 0, &g_rx, 1) == DP_OK);
    reads[0] = g_rx; reads[1] = g_rg;
    CHECK(dp_push_sync(g_race_eng, nop, NULL, reads, 2, &g_ry, 1) == DP_OK);
}
static void test_failure_without_memory_stays_cleared(void) {
    dp_var w;
    dp_failure f;
    g_race_eng = make_engine_alloc(DP_ENGINE_NAIVE, refuse_failure_alloc, refuse_failure_free);
    g_rx = dp_var_create(g_race_eng); g_rg = dp_var_create(g_race_eng); g_ry = dp_var_create(g_race_eng);
    w = dp_var_create(g_race_eng);
    CHECK(dp_push_sync(g_race_eng, nop, NULL, NULL, 0, &g_rx, 1) == DP_OK);
    g_before_clear = push_failure_during_clear;
    CHECK(dp_wait_all(g_race_eng, &f) == DP_ERROR_OP_FAILED);        /* X's, and cleared */
    CHECK(dp_push_sync(g_race_eng, fail_without_memory, NULL, NULL, 0, &w, 1) == DP_OK);   /* D */
    CHECK(dp_wait_var(g_race_eng, w, &f) == DP_ERROR_OP_FAILED);
    __atomic_store_n(&g_refuse_failure, 0, __ATOMIC_RELEASE);
    dp_complete(g_gate, 0, NULL);                                     /* C runs, skipped, writes Y */
    CHECK(dp_wait_var(g_race_eng, g_ry, NULL) == DP_OK);              /* Y saw only X's, cleared */
    CHECK(dp_wait_all(g_race_eng, NULL) == DP_ERROR_OP_FAILED);       /* D's record, once more */
    CHECK(dp_wait_all(g_race_eng, NULL) == DP_OK);
    CHECK(dp_engine_destroy(g_race_eng, NULL) == DP_OK);
}

/* ---- timed waits that give up on a busy variable, each after a read was
   pushed behind the one before (so none can take the last one's place):
   a chain of wait blocks that must neither overflow the stack when the
   variable frees up (each wait's completion makes the next op ready) nor
   leak. */
static void test_many_abandoned_waits(void) {
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var x = dp_var_create(e);
        dp_push_desc d;
        dp_engine_stats st;
        memset(&d, 0, sizeof d);
        d.async_fn = hold_op; d.writes = &x; d.num_writes = 1; d.prop = DP_PROP_ASYNC;
        CHECK(dp_push(e, &d) == DP_OK);
        for (i = 0; i < 300; i++) {
            CHECK(dp_wait_var_for(e, x, 1, NULL) == DP_ERROR_TIMEOUT);
            CHECK(dp_push_sync(e, nop, NULL, &x, 1, NULL, 0) == DP_OK);
        }
        dp_engine_stats_get(e, &st);
        CHECK(st.pending_ops == 601);
        dp_complete(g_held, 0, NULL);
        CHECK(dp_wait_var(e, x, NULL) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);   /* workers count the reads' completions in batches */
        dp_engine_stats_get(e, &st);
        CHECK(st.pending_ops == 0);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- issue 26: a frame loop polling a busy variable with a timed wait
   keeps no memory per poll. A million polls with a timeout of 0 (a look at
   the variable: nothing is pushed) and a thousand with 1 ms (each takes over
   the wait block the one before left, as nothing was pushed after it) leave
   the engine's allocation count where it was after the first timed wait;
   before, each poll kept a wait block and a record (~460 bytes) until the
   variable's work was done. */
static void *complete_failed_later(void *a) {
    struct timespec ts = {0, 20000000};
    (void)a;
    nanosleep(&ts, NULL);
    dp_complete(g_owned_done, 3, "held op failed");
    return NULL;
}
static void test_polls_keep_no_memory(void) {
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine_alloc(kinds[k], failing_alloc, failing_free);
        dp_var x = dp_var_create(e);
        dp_push_desc d;
        dp_engine_stats st;
        long before;
        int timeouts = 0;
        memset(&d, 0, sizeof d);
        d.async_fn = hold_op; d.writes = &x; d.num_writes = 1; d.prop = DP_PROP_ASYNC;
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_var_for(e, x, 1, NULL) == DP_ERROR_TIMEOUT);   /* the one wait block, made here */
        before = __atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE);
        for (i = 0; i < 1000000; i++) timeouts += dp_wait_var_for(e, x, 0, NULL) == DP_ERROR_TIMEOUT;
        CHECK(timeouts == 1000000);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) - before < 1024);
        for (i = 0, timeouts = 0; i < 1000; i++) timeouts += dp_wait_var_for(e, x, 1, NULL) == DP_ERROR_TIMEOUT;
        CHECK(timeouts == 1000);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) - before < 1024);
        dp_engine_stats_get(e, &st);
        CHECK(st.pending_ops == 2);                                  /* the held op and one wait */
        dp_complete(g_held, 0, NULL);
        CHECK(dp_wait_var_for(e, x, 10000, NULL) == DP_OK);
        CHECK(dp_wait_var_for(e, x, 0, NULL) == DP_OK);              /* idle: done at once */
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        dp_engine_stats_get(e, &st);
        CHECK(st.pending_ops == 0);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    }
}
/* A timed wait that takes over an abandoned wait block reports what that
   block finds: the held write's failure, once. */
static void test_adopted_wait_reports_failure(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var x = dp_var_create(e);
        dp_push_desc d;
        dp_failure f;
        memset(&d, 0, sizeof d);
        memset(&f, 0, sizeof f);
        d.async_fn = hold_op; d.writes = &x; d.num_writes = 1; d.prop = DP_PROP_ASYNC; d.name = "held";
        CHECK(dp_push(e, &d) == DP_OK);
        CHECK(dp_wait_var_for(e, x, 1, NULL) == DP_ERROR_TIMEOUT);
        CHECK(dp_wait_var_for(e, x, 1, NULL) == DP_ERROR_TIMEOUT);
        {
            pthread_t th;
            g_owned_done = g_held;
            pthread_create(&th, NULL, complete_failed_later, NULL);
            CHECK(dp_wait_var_for(e, x, 10000, &f) == DP_ERROR_OP_FAILED && f.status == 3 && strcmp(f.op_name, "held") == 0);
            pthread_join(th, NULL);
        }
        CHECK(dp_wait_var_for(e, x, 0, NULL) == DP_OK);              /* reported: cleared */
        CHECK(dp_wait_all(e, NULL) == DP_OK);                        /* reported once */
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- issue 26: a handle of another engine, live or destroyed, names
   nothing here: every call refuses it, logs both engines' numbers, and
   this engine's own object in the same slot is untouched. */
static int g_b_writes;
static int count_b_write(dp_run_ctx *rc, void *a) { (void)rc; (void)a; g_b_writes++; return 0; }
static int last_error_names_two_engines(void) {
    return strstr(dp_last_error(), "handle of engine #") != NULL && strstr(dp_last_error(), "given to engine #") != NULL;
}
static void check_foreign(dp_engine *b, dp_var va, dp_opr oa, dp_var vb) {
    dp_push_desc d;
    dp_var_state st;
    dp_var both[2];
    dp_ctx cpu = {DP_DEV_CPU, 0};
    memset(&d, 0, sizeof d);
    d.fn = count_b_write; d.writes = &va; d.num_writes = 1;
    dp_clear_last_error();
    CHECK(dp_push_sync(b, count_b_write, NULL, NULL, 0, &va, 1) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_push_sync(b, count_b_write, NULL, &va, 1, &vb, 1) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    both[0] = vb; both[1] = va;
    dp_clear_last_error();
    CHECK(dp_push_sync(b, count_b_write, NULL, both, 2, NULL, 0) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_push_batch(b, &d, 1) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_opr_create(b, &d).id == 0 && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_var_delete(b, va) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_wait_var(b, va, NULL) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_wait_var_for(b, va, 0, NULL) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_wait_var_for(b, va, 5, NULL) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_var_state_get(b, va, &st) == DP_ERROR_INVALID_HANDLE && st == DP_VAR_INVALID && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_opr_push(b, oa, cpu, 0) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_opr_push_n(b, oa, cpu, 0, 3) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    dp_clear_last_error();
    CHECK(dp_opr_destroy(b, oa) == DP_ERROR_INVALID_HANDLE && last_error_names_two_engines());
    /* b's own variable in the same slot: still there, never written */
    CHECK(dp_wait_all(b, NULL) == DP_OK && g_b_writes == 0);
    CHECK(dp_var_state_get(b, vb, &st) == DP_OK && st == DP_VAR_READY);
}
static void test_foreign_handles(void) {
    int ka, kb;
    for (ka = 0; ka < 3; ka++) {
        for (kb = 0; kb < 3; kb++) {
            dp_engine *a = make_engine(kinds[ka], 2), *b = make_engine(kinds[kb], 2);
            dp_var va = dp_var_create(a), vb = dp_var_create(b);
            dp_push_desc d;
            dp_opr oa, ob;
            char expect[96];
            dp_ctx cpu = {DP_DEV_CPU, 0};
            memset(&d, 0, sizeof d);
            d.fn = count_b_write; d.writes = &va; d.num_writes = 1;
            oa = dp_opr_create(a, &d);
            d.writes = &vb;
            ob = dp_opr_create(b, &d);
            /* the same slot in both engines: only the engine part tells them apart */
            CHECK((uint32_t)va.id == (uint32_t)vb.id && (uint32_t)oa.id == (uint32_t)ob.id);
            CHECK(va.id != vb.id && oa.id != ob.id && ((uint64_t)va.id >> 32) != 0 && ((uint64_t)vb.id >> 32) != 0);
            g_b_writes = 0;
            check_foreign(b, va, oa, vb);
            snprintf(expect, sizeof expect, "handle of engine #%u given to engine #%u", (unsigned)((uint64_t)va.id >> 32), (unsigned)((uint64_t)vb.id >> 32));
            dp_clear_last_error();
            CHECK(dp_var_delete(b, va) == DP_ERROR_INVALID_HANDLE && strstr(dp_last_error(), expect) != NULL);
            CHECK(dp_opr_destroy(a, oa) == DP_OK);
            d.writes = &va;
            oa = dp_opr_create(a, &d);
            CHECK(dp_engine_destroy(a, NULL) == DP_OK);
            check_foreign(b, va, oa, vb);     /* a is gone: its handles still name nothing in b */
            CHECK(dp_opr_push(b, ob, cpu, 0) == DP_OK);
            CHECK(dp_wait_all(b, NULL) == DP_OK && g_b_writes == 1);
            CHECK(dp_engine_destroy(b, NULL) == DP_OK);
        }
    }
}

/* ---- issue 26: a blocking call made from a cleanup returns
   DP_ERROR_IN_OPERATION (logged), as from inside an op, on every engine
   and for every way a cleanup runs: after a pushed op, when a refused push
   hands the arg back, when a pre-created op is freed. It used to wait for
   the op being cleaned up, for ever, on the threaded engines. */
static dp_engine *g_wc_eng;
static dp_var g_wc_var;
static int g_wc_calls, g_wc_refused;
static void cleanup_that_waits(void *a) {
    dp_result r[5];
    int i, ok = 1;
    (void)a;
    /* each refusal is logged: this thread's last error says so */
#define REFUSED_LOGGED(k, call) do { dp_clear_last_error(); r[k] = call; ok = ok && dp_last_error_item() == DP_LOGITEM_WAIT_IN_OP; } while (0)
    REFUSED_LOGGED(0, dp_wait_all(g_wc_eng, NULL));
    REFUSED_LOGGED(1, dp_wait_var(g_wc_eng, g_wc_var, NULL));
    REFUSED_LOGGED(2, dp_wait_var_for(g_wc_eng, g_wc_var, 10, NULL));
    REFUSED_LOGGED(3, dp_wait_all_for(g_wc_eng, 10, NULL));
    REFUSED_LOGGED(4, dp_engine_destroy(g_wc_eng, NULL));
#undef REFUSED_LOGGED
    for (i = 0; i < 5; i++) ok = ok && r[i] == DP_ERROR_IN_OPERATION;
    __atomic_fetch_add(&g_wc_calls, 1, __ATOMIC_ACQ_REL);
    if (!ok) __atomic_fetch_add(&g_wc_refused, 1, __ATOMIC_ACQ_REL);
}
static void complete_at_once(dp_run_ctx *rc, void *a, dp_completion done) { (void)rc; (void)a; dp_complete(done, 0, NULL); }
static void test_wait_in_cleanup(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_push_desc d;
        dp_opr op;
        dp_var gone;
        dp_ctx cpu = {DP_DEV_CPU, 0};
        g_wc_eng = make_engine(kinds[k], 2);
        g_wc_var = dp_var_create(g_wc_eng);
        g_wc_calls = g_wc_refused = 0;
        memset(&d, 0, sizeof d);
        d.fn = nop; d.writes = &g_wc_var; d.num_writes = 1; d.cleanup = cleanup_that_waits;
        CHECK(dp_push(g_wc_eng, &d) == DP_OK);                       /* after the op */
        d.fn = NULL; d.async_fn = complete_at_once;
        CHECK(dp_push(g_wc_eng, &d) == DP_OK);                       /* inside dp_complete */
        d.async_fn = NULL; d.fn = nop;
        gone = dp_var_create(g_wc_eng);
        CHECK(dp_var_delete(g_wc_eng, gone) == DP_OK);
        d.writes = &gone;
        CHECK(dp_push(g_wc_eng, &d) == DP_ERROR_INVALID_HANDLE);     /* refused: inside dp_push */
        d.writes = &g_wc_var;
        op = dp_opr_create(g_wc_eng, &d);
        CHECK(op.id != 0 && dp_opr_push(g_wc_eng, op, cpu, 0) == DP_OK);
        CHECK(dp_opr_destroy(g_wc_eng, op) == DP_OK);                /* when its last run is done */
        CHECK(dp_wait_all_for(g_wc_eng, 10000, NULL) == DP_OK);
        CHECK(g_wc_calls == 4 && g_wc_refused == 0);
        CHECK(dp_engine_destroy(g_wc_eng, NULL) == DP_OK);
    }
}

/* ---- issue 26: two threads destroy one engine at once. One destroys it;
   the other gets DP_ERROR_INVALID_ARGS (item ENGINE_NOT_LIVE, to the
   default logger) without touching it: no crash (the naive engine freed it
   twice), no hang (the threaded ones waited for ever). A slow op keeps the
   first destroy busy while the second comes. */
static pthread_barrier_t g_destroy_barrier;
static int slow_op(dp_run_ctx *rc, void *a) {
    struct timespec ts = {0, 5000000};
    (void)rc; (void)a;
    nanosleep(&ts, NULL);
    return 0;
}
static void *destroy_after_barrier(void *a) {
    pthread_barrier_wait(&g_destroy_barrier);
    return (void *)(intptr_t)dp_engine_destroy((dp_engine *)a, NULL);
}
static void test_destroy_from_two_threads(void) {
    int k, round;
    dp_logger quiet = {quiet_logger, NULL};
    dp_set_default_logger(&quiet);
    for (k = 0; k < 3; k++) {
        for (round = 0; round < 20; round++) {
            dp_engine *e = make_engine(kinds[k], 2);
            dp_var x = dp_var_create(e);
            pthread_t th[2];
            void *r[2];
            int i;
            for (i = 0; i < 3; i++) dp_push_sync(e, slow_op, NULL, NULL, 0, &x, 1);
            pthread_barrier_init(&g_destroy_barrier, NULL, 2);
            g_last_item = 0;
            for (i = 0; i < 2; i++) pthread_create(&th[i], NULL, destroy_after_barrier, e);
            for (i = 0; i < 2; i++) pthread_join(th[i], &r[i]);
            pthread_barrier_destroy(&g_destroy_barrier);
            CHECK(((intptr_t)r[0] == DP_OK) != ((intptr_t)r[1] == DP_OK));
            CHECK((intptr_t)r[0] == DP_ERROR_INVALID_ARGS || (intptr_t)r[1] == DP_ERROR_INVALID_ARGS);
            CHECK(g_last_item == DP_LOGITEM_ENGINE_NOT_LIVE);
        }
    }
    dp_set_default_logger(NULL);
}

/* ---- issue 26: NULL where an engine or a token belongs is logged (to the
   default logger) as well as refused. */
static void test_null_misuse_logged(void) {
    dp_logger quiet = {quiet_logger, NULL};
    dp_var v = {1};
    dp_opr op = {1};
    dp_completion none;
    dp_var_state st;
    dp_engine_desc desc;
    dp_engine_stats stats;
    dp_ctx cpu = {DP_DEV_CPU, 0};
    memset(&none, 0, sizeof none);
    dp_set_default_logger(&quiet);
#define LOGGED(call) do { g_last_item = 0; call; CHECK(g_last_item == DP_LOGITEM_NULL_ARGUMENT); } while (0)
    LOGGED(CHECK(dp_engine_create(NULL, NULL) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_engine_destroy(NULL, NULL) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_var_delete(NULL, v) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_var_delete_fn(NULL, v, NULL, NULL, cpu) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_var_create(NULL).id == 0));
    LOGGED(dp_complete(none, 0, NULL));
    LOGGED(CHECK(dp_var_state_get(NULL, v, &st) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_opr_push(NULL, op, cpu, 0) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_opr_push_n(NULL, op, cpu, 0, 1) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_opr_destroy(NULL, op) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_wait_var(NULL, v, NULL) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_wait_var_for(NULL, v, 0, NULL) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_wait_all(NULL, NULL) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_wait_all_for(NULL, 0, NULL) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_engine_desc_get(NULL, &desc) == DP_ERROR_INVALID_ARGS));
    LOGGED(CHECK(dp_engine_stats_get(NULL, &stats) == DP_ERROR_INVALID_ARGS));
    LOGGED(dp_profiler_start(NULL));
    LOGGED(dp_profiler_stop(NULL));
    LOGGED(dp_profiler_clear(NULL));
    LOGGED(dp_set_error(NULL, "x"));
#undef LOGGED
    dp_set_default_logger(NULL);
}

/* ---- issue 26: a read or write list holds at most DP_PUSH_MAX_VARS
   variables, and the message says so, with the count given; the naive
   engine reports the threads it has: none. */
static void test_push_limit_and_naive_desc(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        dp_var *many = (dp_var *)malloc((DP_PUSH_MAX_VARS + 1) * sizeof *many);
        dp_var x = dp_var_create(e);
        dp_engine_desc q;
        int i;
        for (i = 0; i < DP_PUSH_MAX_VARS + 1; i++) many[i] = x;
        CHECK(dp_push_sync(e, nop, NULL, many, DP_PUSH_MAX_VARS, NULL, 0) == DP_OK);
        dp_clear_last_error();
        CHECK(dp_push_sync(e, nop, NULL, many, DP_PUSH_MAX_VARS + 1, NULL, 0) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_last_error_item() == DP_LOGITEM_NEGATIVE_COUNT && strstr(dp_last_error(), "30001 reads") && strstr(dp_last_error(), "at most 30000"));
        dp_clear_last_error();
        CHECK(dp_push_sync(e, nop, NULL, NULL, 0, many, DP_PUSH_MAX_VARS + 1) == DP_ERROR_INVALID_ARGS);
        CHECK(strstr(dp_last_error(), "30001 writes") && strstr(dp_last_error(), "at most 30000"));
        dp_clear_last_error();
        CHECK(dp_push_sync(e, nop, NULL, NULL, -1, NULL, 0) == DP_ERROR_INVALID_ARGS && strstr(dp_last_error(), "negative"));
        dp_clear_last_error();
        CHECK(dp_push_sync(e, nop, NULL, NULL, 2, NULL, 0) == DP_ERROR_INVALID_ARGS && strstr(dp_last_error(), "NULL array"));
        CHECK(dp_engine_desc_get(e, &q) == DP_OK);
        if (kinds[k] == DP_ENGINE_NAIVE)
            CHECK(q.cpu_worker_nthreads == 0 && q.cpu_priority_nthreads == 0 && q.gpu_worker_nthreads == 0 && q.gpu_copy_nthreads == 0);
        else CHECK(q.cpu_worker_nthreads == 2 && q.cpu_priority_nthreads == 1);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        free(many);
    }
}

/* ---- the cleanup of a pre-created op nobody destroyed runs at engine
   destroy while the engine still works: it may push, and the push runs. */
static dp_engine *g_cleanup_eng;
static dp_var g_cleanup_var;
static int g_pushed_from_cleanup_ran;
static int ran_from_cleanup(dp_run_ctx *rc, void *a) { (void)rc; (void)a; g_pushed_from_cleanup_ran++; return 0; }
static void cleanup_that_pushes(void *a) {
    (void)a;
    CHECK(dp_push_sync(g_cleanup_eng, ran_from_cleanup, NULL, NULL, 0, &g_cleanup_var, 1) == DP_OK);
}
/* Destroys an engine whose only pre-created op, never destroyed, has the
   cleanup first; the push that cleanup leads to must run. */
static void check_cleanup_at_destroy(dp_cleanup_fn first) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_push_desc d;
        g_cleanup_eng = make_engine(kinds[k], 2);
        g_cleanup_var = dp_var_create(g_cleanup_eng);
        g_pushed_from_cleanup_ran = 0;
        memset(&d, 0, sizeof d);
        d.fn = nop; d.writes = &g_cleanup_var; d.num_writes = 1; d.cleanup = first;
        CHECK(dp_opr_create(g_cleanup_eng, &d).id != 0);
        CHECK(dp_engine_destroy(g_cleanup_eng, NULL) == DP_OK);
        CHECK(g_pushed_from_cleanup_ran == 1);
    }
}
static void test_cleanup_pushes_at_destroy(void) { check_cleanup_at_destroy(cleanup_that_pushes); }

/* ---- extensions: per-engine state made once, torn down after the work ---- */
typedef struct ext_box { int creates, destroys, fail_next, order[DP_MAX_EXTENSIONS + 2], norder; int slow_op_done; } ext_box;
static ext_box g_ext;
static void *ext_create(dp_engine *eng, void *user) {
    struct timespec ts = {0, 20000000};
    (void)eng;
    if (__atomic_exchange_n(&g_ext.fail_next, 0, __ATOMIC_ACQ_REL)) return NULL;
    __atomic_fetch_add(&g_ext.creates, 1, __ATOMIC_RELAXED);
    nanosleep(&ts, NULL);                      /* the other threads ask meanwhile */
    return user;                               /* the state: the extension's own tag */
}
static void ext_destroy(dp_engine *eng, void *state, void *user) {
    dp_engine_stats st;
    dp_engine_stats_get(eng, &st);
    CHECK(state == user);
    CHECK(st.pending_ops == 0 && st.completed == st.pushed);              /* every op is done */
    CHECK(__atomic_load_n(&g_ext.slow_op_done, __ATOMIC_ACQUIRE) == 1);
    g_ext.order[g_ext.norder++] = *(int *)user;
    g_ext.destroys++;
}
static int ext_tags[DP_MAX_EXTENSIONS + 1] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
static dp_extension ext_defs[DP_MAX_EXTENSIONS + 1];
typedef struct { dp_engine *e; void *got; int *go; } ext_asker;
static void *ext_ask(void *p) {
    ext_asker *a = (ext_asker *)p;
    while (!__atomic_load_n(a->go, __ATOMIC_ACQUIRE)) sched_yield();
    a->got = dp_engine_extension(a->e, &ext_defs[0]);
    return NULL;
}
static int ext_in_op(dp_run_ctx *rc, void *arg) {
    return dp_engine_extension(rc->engine, &ext_defs[1]) == (void *)&ext_tags[1] ? 0 : (*(int *)arg = 1);
}
static int ext_slow_op(dp_run_ctx *rc, void *arg) {
    struct timespec ts = {0, 50000000};
    (void)rc; (void)arg;
    nanosleep(&ts, NULL);
    __atomic_store_n(&g_ext.slow_op_done, 1, __ATOMIC_RELEASE);
    return 0;
}
static void test_extensions(void) {
    int k, i;
    for (i = 0; i <= DP_MAX_EXTENSIONS; i++) {
        ext_defs[i].name = "test"; ext_defs[i].create = ext_create; ext_defs[i].destroy = ext_destroy; ext_defs[i].user = &ext_tags[i];
    }
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        pthread_t th[4];
        ext_asker ask[4];
        dp_extension no_create = {"none", NULL, NULL, NULL};
        dp_var v = dp_var_create(e);
        int go = 0, op_failed = 0;
        memset(&g_ext, 0, sizeof g_ext);
        for (i = 0; i < 4; i++) { ask[i].e = e; ask[i].got = NULL; ask[i].go = &go; pthread_create(&th[i], NULL, ext_ask, &ask[i]); }
        __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
        for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
        for (i = 0; i < 4; i++) CHECK(ask[i].got == (void *)&ext_tags[0]);
        CHECK(g_ext.creates == 1);                                       /* made once */
        CHECK(dp_engine_extension(e, &ext_defs[0]) == (void *)&ext_tags[0] && g_ext.creates == 1);
        /* a create that fails is tried again by the next call */
        g_ext.fail_next = 1;
        CHECK(dp_engine_extension(e, &ext_defs[2]) == NULL);
        CHECK(dp_engine_extension(e, &ext_defs[2]) == (void *)&ext_tags[2] && g_ext.creates == 2);
        /* from inside an operation */
        CHECK(dp_push_sync(e, ext_in_op, &op_failed, NULL, 0, &v, 1) == DP_OK);
        CHECK(dp_wait_var(e, v, NULL) == DP_OK && !op_failed && g_ext.creates == 3);
        /* bad input, and one more than the engine has room for */
        g_last_item = 0;
        CHECK(dp_engine_extension(NULL, &ext_defs[0]) == NULL);
        CHECK(dp_engine_extension(e, NULL) == NULL);
        CHECK(dp_engine_extension(e, &no_create) == NULL && g_last_item == DP_LOGITEM_BAD_DESC);
        for (i = 3; i < DP_MAX_EXTENSIONS; i++) CHECK(dp_engine_extension(e, &ext_defs[i]) == (void *)&ext_tags[i]);
        g_last_item = 0;
        CHECK(dp_engine_extension(e, &ext_defs[DP_MAX_EXTENSIONS]) == NULL && g_last_item == DP_LOGITEM_BAD_DESC);
        CHECK(g_ext.creates == DP_MAX_EXTENSIONS);
        /* teardown: after the last op, newest first */
        CHECK(dp_push_sync(e, ext_slow_op, NULL, NULL, 0, &v, 1) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(g_ext.destroys == DP_MAX_EXTENSIONS);
        /* made in the order 0, 2, 1, 3, ..., 7 */
        CHECK(g_ext.order[0] == DP_MAX_EXTENSIONS - 1 && g_ext.order[DP_MAX_EXTENSIONS - 4] == 3);
        CHECK(g_ext.order[DP_MAX_EXTENSIONS - 3] == 1 && g_ext.order[DP_MAX_EXTENSIONS - 2] == 2 && g_ext.order[DP_MAX_EXTENSIONS - 1] == 0);
    }
}

/* ---- workers compute in the floating-point environment of the thread that
   made them, as POSIX threads inherit it (Windows threads start with the
   system default: the Win32 layer copies it over) */
static int record_rounding(dp_run_ctx *rc, void *arg) { (void)rc; *(int *)arg = fegetround(); return 0; }
static void test_workers_take_fp_env(void) {
    int k;
    for (k = 1; k < 3; k++) {                        /* the threaded engines */
        int seen = -1, i;
        dp_engine *e;
        dp_var v;
        CHECK(fesetround(FE_DOWNWARD) == 0);
        e = make_engine(kinds[k], 2);
        v = dp_var_create(e);
        for (i = 0; i < 4; i++) {                    /* whichever worker runs it */
            CHECK(dp_push_sync(e, record_rounding, &seen, NULL, 0, &v, 1) == DP_OK);
            CHECK(dp_wait_var(e, v, NULL) == DP_OK);
            CHECK(seen == FE_DOWNWARD);
            if (seen != FE_DOWNWARD) fprintf(stderr, "  %s engine: a worker rounds in mode %d\n", kind_names[k + 1], seen);
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(fesetround(FE_TONEAREST) == 0);
    }
}

/* ---- every call that writes to a FILE * refuses a NULL stream and reports
   a stream that fails, both logged */
static void test_bad_stream(void) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.logger.func = quiet_logger; d.trace.record_graph = 1;
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    g_last_item = 0;
    CHECK(dp_profiler_dump_chrome(e, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_NULL_ARGUMENT);
    g_last_item = 0;
    CHECK(dp_profiler_dump_summary(e, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_NULL_ARGUMENT);
    g_last_item = 0;
    CHECK(dp_trace_write_dot(e, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_NULL_ARGUMENT);
    {   /* a stream that cannot be written: DP_ERROR_IO, logged */
        char path[512];
        FILE *ro, *w;
        snprintf(path, sizeof path, "%s/depeng_read_only_%ld", test_temp_dir(), (long)clock());
        w = fopen(path, "wb");
        if (w) fclose(w);
        ro = fopen(path, "rb");
        CHECK(ro != NULL);
        if (ro) {
            g_last_item = 0;
            CHECK(dp_profiler_dump_chrome(e, ro) == DP_ERROR_IO && g_last_item == DP_LOGITEM_IO);
            clearerr(ro); g_last_item = 0;
            CHECK(dp_profiler_dump_summary(e, ro) == DP_ERROR_IO && g_last_item == DP_LOGITEM_IO);
            clearerr(ro); g_last_item = 0;
            CHECK(dp_trace_write_dot(e, ro) == DP_ERROR_IO && g_last_item == DP_LOGITEM_IO);
            fclose(ro);
        }
        remove(path);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- extensions from inside create and during teardown: a create may ask
   for another extension (also from an op the naive engine runs at once),
   not for its own; a destroy finds older states, not its own or newer ones,
   and nothing is made while they are torn down. */
static int g_nest_destroys, g_nest_lookups_ok;
static dp_extension nest_inner, nest_outer, nest_self, nest_late;
static void *nest_make_tag(dp_engine *eng, void *user) { (void)eng; return user; }
static void nest_destroy_count(dp_engine *eng, void *state, void *user) { (void)eng; (void)state; (void)user; g_nest_destroys++; }
static int ask_inner_in_op(dp_run_ctx *rc, void *arg) {
    (void)arg;
    return dp_engine_extension(rc->engine, &nest_inner) == nest_inner.user ? 0 : 1;
}
static void *nest_outer_create(dp_engine *eng, void *user) {
    dp_var v = dp_var_create(eng);
    if (dp_push_sync(eng, ask_inner_in_op, NULL, NULL, 0, &v, 1) != DP_OK) return NULL;   /* inline on the naive engine */
    if (dp_engine_extension(eng, &nest_inner) != nest_inner.user) return NULL;
    dp_var_delete(eng, v);
    return user;
}
static void *nest_self_create(dp_engine *eng, void *user) { return dp_engine_extension(eng, &nest_self) == NULL ? user : NULL; }
static void nest_outer_destroy(dp_engine *eng, void *state, void *user) {
    (void)state; (void)user;
    /* older (made first, inner) is alive; itself and newer ones are gone; nothing new is made */
    g_nest_lookups_ok = dp_engine_extension(eng, &nest_inner) == nest_inner.user
                        && dp_engine_extension(eng, &nest_outer) == NULL
                        && dp_engine_extension(eng, &nest_late) == NULL;
    g_nest_destroys++;
}
static void test_extensions_nested_and_teardown(void) {
    static int tags[4];
    int k;
    nest_inner.name = "inner"; nest_inner.create = nest_make_tag; nest_inner.destroy = nest_destroy_count; nest_inner.user = &tags[0];
    nest_outer.name = "outer"; nest_outer.create = nest_outer_create; nest_outer.destroy = nest_outer_destroy; nest_outer.user = &tags[1];
    nest_self.name = "self"; nest_self.create = nest_self_create; nest_self.user = &tags[2];
    nest_late.name = "late"; nest_late.create = nest_make_tag; nest_late.destroy = nest_destroy_count; nest_late.user = &tags[3];
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 2);
        g_nest_destroys = 0; g_nest_lookups_ok = 0;
        CHECK(dp_engine_extension(e, &nest_outer) == nest_outer.user);      /* made inner on the way */
        CHECK(dp_engine_extension(e, &nest_inner) == nest_inner.user);
        g_last_item = 0;
        CHECK(dp_engine_extension(e, &nest_self) == nest_self.user);        /* its own: refused inside, logged */
        CHECK(g_last_item == DP_LOGITEM_BAD_DESC);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(g_nest_destroys == 2 && g_nest_lookups_ok);
    }
}

/* ---- a pre-created op made by another's cleanup during destroy is
   destroyed too, while the engine works: its cleanup's push runs. */
static void cleanup_makes_op(void *a) {
    dp_push_desc d;
    (void)a;
    memset(&d, 0, sizeof d);
    d.fn = nop; d.writes = &g_cleanup_var; d.num_writes = 1; d.cleanup = cleanup_that_pushes;
    CHECK(dp_opr_create(g_cleanup_eng, &d).id != 0);
}
static void test_cleanup_makes_op_at_destroy(void) { check_cleanup_at_destroy(cleanup_makes_op); }

/* Every allocation dp_engine_create makes, failed in turn on each engine
   kind: the answer is DP_ERROR_OUT_OF_MEMORY with an OUT_OF_MEMORY log
   line (not DP_ERROR_THREAD, not silence), and nothing stays allocated.
   The threads' start records come from the engine's allocator too: with
   every allocation failing no thread can start (pooled and per-device
   start theirs in create). */
static void test_create_out_of_memory(void) {
    static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    int k;
    for (k = 0; k < 3; k++) {
        long at, calls = 0;
        for (at = 1; at < 100; at++) {
            dp_engine_desc d;
            dp_engine *e = NULL;
            dp_result r;
            memset(&d, 0, sizeof d);
            d.type = kinds[k]; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
            d.logger.func = quiet_logger;
            d.allocator.alloc = failing_alloc; d.allocator.free = failing_free;
            __atomic_store_n(&g_alloc_calls, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_alloc_failures, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_fail_at, at, __ATOMIC_RELEASE);
            g_last_item = 0;
            r = dp_engine_create(&d, &e);
            __atomic_store_n(&g_fail_at, 0, __ATOMIC_RELEASE);
            if (__atomic_load_n(&g_alloc_failures, __ATOMIC_ACQUIRE) == 0) {   /* past the last allocation */
                CHECK(r == DP_OK && e);
                calls = at - 1;
                if (e) dp_engine_destroy(e, NULL);
                break;
            }
            if (r == DP_OK) { dp_engine_destroy(e, NULL); continue; }   /* a failure create recovers from */
            CHECK(r == DP_ERROR_OUT_OF_MEMORY && !e);
            CHECK(g_last_item == DP_LOGITEM_OUT_OF_MEMORY);
            if (r != DP_ERROR_OUT_OF_MEMORY || g_last_item != DP_LOGITEM_OUT_OF_MEMORY)
                fprintf(stderr, "  kind %d, allocation %ld failed: %s, log item %u\n", (int)kinds[k], at, dp_result_string(r), (unsigned)g_last_item);
            CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
        }
        CHECK(calls > 0);
        if (kinds[k] != DP_ENGINE_NAIVE) CHECK(calls >= 4);   /* at least two threads' pools and their records */
    }
}
/* Two threads polling one busy variable with timed waits: each takes over
   an abandoned wait block, its own or the other's, rather than queue a new
   one behind the other's live wait (which queued one block per call). */
typedef struct { dp_engine *e; dp_var x; int timeouts; } poller_arg;
static pthread_barrier_t g_poll_barrier;
static void *poll_busy(void *p) {
    poller_arg *a = (poller_arg *)p;
    int i;
    for (i = 0; i < 100; i++) a->timeouts += dp_wait_var_for(a->e, a->x, 1, NULL) == DP_ERROR_TIMEOUT;
    pthread_barrier_wait(&g_poll_barrier);   /* warm: the block pools of these threads are made */
    pthread_barrier_wait(&g_poll_barrier);   /* the main thread has counted the bytes */
    for (i = 0; i < 1000; i++) a->timeouts += dp_wait_var_for(a->e, a->x, 1, NULL) == DP_ERROR_TIMEOUT;
    return NULL;
}
static void pollers_keep_no_memory(int npollers) {
    int k, t;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine_alloc(kinds[k], failing_alloc, failing_free);
        dp_var x = dp_var_create(e);
        dp_push_desc d;
        dp_engine_stats st;
        pthread_t th[16];
        poller_arg pa[16];
        long before;
        memset(&d, 0, sizeof d);
        d.async_fn = hold_op; d.writes = &x; d.num_writes = 1; d.prop = DP_PROP_ASYNC;
        CHECK(dp_push(e, &d) == DP_OK);
        pthread_barrier_init(&g_poll_barrier, NULL, (unsigned)npollers + 1);
        for (t = 0; t < npollers; t++) { pa[t].e = e; pa[t].x = x; pa[t].timeouts = 0; pthread_create(&th[t], NULL, poll_busy, &pa[t]); }
        pthread_barrier_wait(&g_poll_barrier);
        before = __atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE);
        pthread_barrier_wait(&g_poll_barrier);
        for (t = 0; t < npollers; t++) pthread_join(th[t], NULL);
        pthread_barrier_destroy(&g_poll_barrier);
        for (t = 0; t < npollers; t++) CHECK(pa[t].timeouts == 1100);
        dp_engine_stats_get(e, &st);
        CHECK(st.pending_ops <= 1 + (uint64_t)npollers);            /* the held op and a wait per poller */
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) - before < 1024);
        dp_complete(g_held, 0, NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    }
}
static void test_two_pollers_keep_no_memory(void) { pollers_keep_no_memory(2); }
/* More pollers than a chain engine's take-over once looked at (the 8
   newest wait blocks): every waiting thread's block is looked at, so the
   bound is still one per poller. */
static void test_many_pollers_keep_no_memory(void) { pollers_keep_no_memory(12); }
/* A cleanup run while a naive engine drains its ready list (tracing makes
   every op go through that list) waits on another engine's variable: the
   wait block that engine grants at once runs at once. It was queued behind
   the op whose cleanup was waiting, and the thread blocked for ever. */
static dp_engine *g_other;
static dp_var g_other_var;
static int g_other_wait;
static void wait_on_other(void *arg) { (void)arg; g_other_wait = dp_wait_var(g_other, g_other_var, NULL) == DP_OK ? 1 : -1; }
static void test_cleanup_waits_on_other_engine(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine_desc desc;
        dp_engine *a = NULL;
        dp_var va;
        dp_push_desc d;
        memset(&desc, 0, sizeof desc);
        desc.type = DP_ENGINE_NAIVE; desc.ignore_env = 1; desc.logger.func = quiet_logger; desc.trace.record_graph = 1;
        CHECK(dp_engine_create(&desc, &a) == DP_OK);
        g_other = make_engine(kinds[k], 1);
        g_other_var = dp_var_create(g_other);
        va = dp_var_create(a);
        g_other_wait = 0;
        memset(&d, 0, sizeof d);
        d.fn = nop; d.writes = &va; d.num_writes = 1; d.cleanup = wait_on_other;
        CHECK(dp_push(a, &d) == DP_OK);
        CHECK(g_other_wait == 1);
        CHECK(dp_engine_destroy(a, NULL) == DP_OK);
        CHECK(dp_engine_destroy(g_other, NULL) == DP_OK);
    }
}

int main(void) {
    dp_test_hook_fn = test_hook;   /* before any engine starts a thread */
    static const test_case tests[] = {
        {"abc_example", test_abc_example}, {"random_oracle", test_random_oracle},
        {"failures", test_failures}, {"hosted_run", test_hosted_run}, {"bad_input", test_bad_input}, {"wait_inside_op", test_wait_inside},
        {"async_other_thread", test_async}, {"delete_pending", test_delete_pending},
        {"priority_pool", test_priority}, {"multi_pusher", test_multi_pusher},
        {"precreated_ops", test_precreated}, {"dedup", test_dedup}, {"gpu_routing_fake", test_gpu_routing},
        {"profiler", test_profiler}, {"trace_html", test_trace_html}, {"bad_stream", test_bad_stream}, {"config", test_config}, {"stress_1m", test_stress},
        {"long_ops_overlap", test_long_ops_overlap}, {"wake_after_last_look", test_wake_after_last_look},
        {"cleared_failure_stays_cleared", test_cleared_failure_stays_cleared},
        {"no_skip_input_status", test_no_skip_input_status}, {"io_queue", test_io_queue},
        {"gpu_events", test_gpu_events}, {"gpu_events_no_head_of_line", test_gpu_events_no_head_of_line},
        {"queue_growth_and_oom", test_queue_growth_and_oom}, {"ring_wrap_and_overflow", test_ring_wrap_and_overflow},
        {"push_pacing", test_push_pacing},
        {"pacing_many_pushers", test_pacing_many_pushers},
        {"handle_kinds", test_handle_kinds}, {"failure_without_memory", test_failure_without_memory},
        {"cleanup_exactly_once", test_cleanup_exactly_once}, {"timed_waits", test_timed_waits},
        {"destroy_reports_pending", test_destroy_reports_pending}, {"report_running_reads", test_report_running_reads},
        {"report_skips_refused_push", test_report_skips_refused_push},
        {"batch_reserves_runs_it_needs", test_batch_reserves_runs_it_needs},
        {"two_failures_without_memory", test_two_failures_without_memory},
        {"failure_without_memory_stays_cleared", test_failure_without_memory_stays_cleared},
        {"many_abandoned_waits", test_many_abandoned_waits}, {"cleanup_pushes_at_destroy", test_cleanup_pushes_at_destroy},
        {"extensions", test_extensions}, {"workers_take_fp_env", test_workers_take_fp_env},
        {"extensions_nested_and_teardown", test_extensions_nested_and_teardown},
        {"cleanup_makes_op_at_destroy", test_cleanup_makes_op_at_destroy},
        {"create_out_of_memory", test_create_out_of_memory},
        {"foreign_handles", test_foreign_handles}, {"wait_in_cleanup", test_wait_in_cleanup},
        {"polls_keep_no_memory", test_polls_keep_no_memory}, {"adopted_wait_reports_failure", test_adopted_wait_reports_failure},
        {"destroy_from_two_threads", test_destroy_from_two_threads}, {"null_misuse_logged", test_null_misuse_logged},
        {"push_limit_and_naive_desc", test_push_limit_and_naive_desc},
        {"two_pollers_keep_no_memory", test_two_pollers_keep_no_memory}, {"many_pollers_keep_no_memory", test_many_pollers_keep_no_memory},
        {"cleanup_waits_on_other_engine", test_cleanup_waits_on_other_engine},
    };
    return run_tests("engine", tests, (int)(sizeof tests / sizeof tests[0]));
}
