/* The scheduler's contention counters (dp_engine_stats) and the opt-in mode
   in which a pushing thread runs ready ops (desc.push_runs_ops). The last
   line is "N passed, M failed". */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <string.h>
/* counts the pacing yields (see test_push_runs_ops_yields_without_queued_ops) */
static int g_pusher_yields;
static void test_hook(const char *point) {
    if (strcmp(point, "pusher_yield") == 0) __atomic_fetch_add(&g_pusher_yields, 1, __ATOMIC_RELAXED);
}
#include "depeng.h"
#include "tests/impl/test_hook.h"   /* main points dp_test_hook_fn at test_hook */
#include "tests/test_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>

static dp_engine *make_helping(dp_engine_type type, int workers, int push_runs_ops, int no_wait_help) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = workers; d.ignore_env = 1; d.logger.func = quiet_logger;
    d.push_runs_ops = push_runs_ops; d.no_wait_help = no_wait_help;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}
static dp_engine *make(dp_engine_type type, int workers, int push_runs_ops) { return make_helping(type, workers, push_runs_ops, 0); }
static int noop(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; return 0; }

static uint64_t contention_sum(const dp_engine_stats *s) {
    return s->var_lock_contended + s->queue_lock_contended + s->queue_busy_retries + s->worker_wakeups
         + s->pool_cas_retries + s->op_ref_cas_retries + s->pusher_ran;
}

/* ---- contention counters ------------------------------------------------ */
/* One thread, no workers: nobody to collide with, every counter stays 0. */
static void test_contention_zero_alone(void) {
    dp_engine *e = make(DP_ENGINE_NAIVE, 1, 0);
    dp_engine_stats s;
    dp_var x;
    int i;
    CHECK(e != NULL);
    if (!e) return;
    x = dp_var_create(e);
    for (i = 0; i < 10000; i++) CHECK(dp_push_sync(e, noop, NULL, NULL, 0, &x, 1) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    dp_engine_stats_get(e, &s);
    CHECK(s.pushed == 10000);
    CHECK(contention_sum(&s) == 0);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* Two threads push writes of one variable while the workers complete them:
   every push and completion takes the variable's lock, so some acquisitions
   find it held. Repeated until one does (a thread can always be descheduled
   at the wrong moment), bounded. */
typedef struct { dp_engine *e; dp_var x; } pusher_arg;
static void *push_writes(void *arg) {
    pusher_arg *p = (pusher_arg *)arg;
    int i;
    for (i = 0; i < 50000; i++) CHECK(dp_push_sync(p->e, noop, NULL, NULL, 0, &p->x, 1) == DP_OK);
    return NULL;
}
static void test_contention_var_lock_counted(void) {
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2, 0);
    dp_engine_stats s;
    pusher_arg p;
    pthread_t t;
    int round;
    CHECK(e != NULL);
    if (!e) return;
    p.e = e;
    p.x = dp_var_create(e);
    dp_engine_stats_get(e, &s);
    CHECK(s.var_lock_contended == 0);
    for (round = 0; round < 20; round++) {
        CHECK(pthread_create(&t, NULL, push_writes, &p) == 0);
        push_writes(&p);
        pthread_join(t, NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        dp_engine_stats_get(e, &s);
        if (s.var_lock_contended > 0) break;
    }
    CHECK(s.var_lock_contended > 0);
    CHECK(s.var_lock_contended <= 2 * s.pushed);   /* at most one per push and one per completion */
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- running on the pusher ------------------------------------------------ */
static int g_release, g_busy;
static int busy_until_released(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    __atomic_fetch_add(&g_busy, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&g_release, __ATOMIC_ACQUIRE)) sched_yield();
    return 0;
}
#define CHAIN 3000
static pthread_t g_main;
typedef struct { int next, out_of_order, on_main, worker_minus_one; } chain_log;
static chain_log g_log;
static int chain_step(dp_run_ctx *rc, void *arg) {
    int k = (int)(intptr_t)arg;
    /* the ops write y in push order: each sees the one before it done */
    if (k != g_log.next) g_log.out_of_order++;
    g_log.next = k + 1;
    if (pthread_equal(pthread_self(), g_main)) { g_log.on_main++; g_log.worker_minus_one += rc->worker == -1; }
    return 0;
}
/* Both workers hold an op until released; the main thread pushes a chain of
   CHAIN writes on y, each of which has to wait, so the backlog grows past
   the pacing threshold with every worker busy. With push_runs_ops the
   pusher then runs the chain's ready head itself, and each op it runs makes
   the next ready: the chain advances on the pushing thread, in order.
   Returns how many chain ops ran on the main thread. */
static int chain_on_pusher(dp_engine_type type, int push_runs_ops) {
    dp_engine *e = make(type, 2, push_runs_ops);
    dp_var busy[2], y;
    dp_engine_stats s;
    int i, on_main;
    CHECK(e != NULL);
    if (!e) return -1;
    g_main = pthread_self();
    memset(&g_log, 0, sizeof g_log);
    __atomic_store_n(&g_release, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_busy, 0, __ATOMIC_RELEASE);
    for (i = 0; i < 2; i++) {
        busy[i] = dp_var_create(e);
        CHECK(dp_push_sync(e, busy_until_released, NULL, NULL, 0, &busy[i], 1) == DP_OK);
    }
    while (__atomic_load_n(&g_busy, __ATOMIC_ACQUIRE) < 2) sched_yield();
    y = dp_var_create(e);
    for (i = 0; i < CHAIN; i++) CHECK(dp_push_sync(e, chain_step, (void *)(intptr_t)i, NULL, 0, &y, 1) == DP_OK);
    on_main = g_log.on_main;            /* the workers are still held: only the pusher ran chain ops */
    CHECK(g_log.worker_minus_one == g_log.on_main);
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(g_log.next == CHAIN);
    CHECK(g_log.out_of_order == 0);
    dp_engine_stats_get(e, &s);
    CHECK(s.pusher_ran == (uint64_t)on_main);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    return on_main;
}
static void test_push_runs_ops_in_order(void) {
    int n = chain_on_pusher(DP_ENGINE_PERDEVICE, 1);
    CHECK(n > 0);
    CHECK(n <= CHAIN);
    n = chain_on_pusher(DP_ENGINE_POOLED, 1);
    CHECK(n > 0);
}
static void test_push_runs_ops_off_by_default(void) {
    CHECK(chain_on_pusher(DP_ENGINE_PERDEVICE, 0) == 0);
    CHECK(chain_on_pusher(DP_ENGINE_POOLED, 0) == 0);
}

/* Most of a busy pool's ready ops sit in its workers' deques, where the
   pusher leaves them (their data is in that worker's cache): with nothing
   in the shared queue, a pusher past the pacing threshold must yield as
   without the flag, not spin through its pushes. One worker completes a
   fan-out (FAN ops made ready at once: one runs next there, the rest go to
   its deque); every fan-out op holds a worker until released, unless it
   runs on the pushing thread. Both workers are then held, the shared queue
   is empty, and the pusher pushes past the threshold behind a writer
   nobody runs. */
#define FAN 40
static int g_fan_on_main, g_fan_holding;
static int fan_op(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    if (pthread_equal(pthread_self(), g_main)) { __atomic_fetch_add(&g_fan_on_main, 1, __ATOMIC_ACQ_REL); return 0; }
    __atomic_fetch_add(&g_fan_holding, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&g_release, __ATOMIC_ACQUIRE)) sched_yield();
    return 0;
}
static int g_root_go;
static int fan_root(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    while (!__atomic_load_n(&g_root_go, __ATOMIC_ACQUIRE)) sched_yield();
    return 0;
}
static dp_completion g_held;
static void hold_writer(dp_run_ctx *rc, void *arg, dp_completion done) { (void)rc; (void)arg; g_held = done; }
static void test_push_runs_ops_yields_without_queued_ops(void) {
    dp_engine *e = make_helping(DP_ENGINE_PERDEVICE, 2, 1, DP_WAIT_HELP_ALWAYS);   /* the final wait's steals, on any machine */
    dp_var other, root, x, outs[FAN];
    dp_push_desc hold;
    dp_engine_stats s;
    int i;
    CHECK(e != NULL);
    if (!e) return;
    g_main = pthread_self();
    __atomic_store_n(&g_release, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_busy, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_root_go, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_fan_on_main, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_fan_holding, 0, __ATOMIC_RELEASE);
    other = dp_var_create(e); root = dp_var_create(e); x = dp_var_create(e);
    CHECK(dp_push_sync(e, busy_until_released, NULL, NULL, 0, &other, 1) == DP_OK);   /* one worker */
    while (__atomic_load_n(&g_busy, __ATOMIC_ACQUIRE) < 1) sched_yield();
    CHECK(dp_push_sync(e, fan_root, NULL, NULL, 0, &root, 1) == DP_OK);               /* the other */
    for (i = 0; i < FAN; i++) {
        outs[i] = dp_var_create(e);
        CHECK(dp_push_sync(e, fan_op, NULL, &root, 1, &outs[i], 1) == DP_OK);
    }
    __atomic_store_n(&g_root_go, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&g_fan_holding, __ATOMIC_ACQUIRE) < 1) sched_yield();   /* the one run next holds it */
    memset(&hold, 0, sizeof hold);
    hold.async_fn = hold_writer; hold.prop = DP_PROP_ASYNC; hold.writes = &x; hold.num_writes = 1;
    CHECK(dp_push(e, &hold) == DP_OK);
    __atomic_store_n(&g_pusher_yields, 0, __ATOMIC_RELEASE);
    for (i = 0; i < 2200; i++) CHECK(dp_push_sync(e, noop, NULL, NULL, 0, &x, 1) == DP_OK);   /* each waits */
    CHECK(__atomic_load_n(&g_fan_on_main, __ATOMIC_ACQUIRE) == 0);         /* the deque's ops stay with their worker */
    CHECK(__atomic_load_n(&g_pusher_yields, __ATOMIC_ACQUIRE) >= 1);       /* past the threshold, every 64th waiting push */
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    dp_complete(g_held, 0, NULL);
    CHECK(dp_wait_all(e, NULL) == DP_OK);   /* may steal deque ops: they then run on main */
    CHECK(__atomic_load_n(&g_fan_holding, __ATOMIC_ACQUIRE) + __atomic_load_n(&g_fan_on_main, __ATOMIC_ACQUIRE) == FAN);
    dp_engine_stats_get(e, &s);
    CHECK(s.pusher_ran == 0);
    CHECK((uint64_t)__atomic_load_n(&g_fan_on_main, __ATOMIC_ACQUIRE) <= s.caller_stole);   /* each stolen by the wait */
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* Ops pushed from inside an op never run on that op's thread: a function
   that pushes must not find itself running someone else's op. */
typedef struct { dp_var y; } nested_ctx;
static int nested_outer(dp_run_ctx *rc, void *arg) {
    nested_ctx *c = (nested_ctx *)arg;
    int i;
    for (i = 0; i < CHAIN; i++) dp_push_sync(rc->engine, noop, NULL, NULL, 0, &c->y, 1);
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    return 0;
}
static void test_push_runs_ops_not_inside_an_op(void) {
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2, 1);
    nested_ctx c;
    dp_var x;
    CHECK(e != NULL);
    if (!e) return;
    memset(&c, 0, sizeof c);
    c.y = dp_var_create(e);
    x = dp_var_create(e);
    __atomic_store_n(&g_release, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_busy, 0, __ATOMIC_RELEASE);
    CHECK(dp_push_sync(e, busy_until_released, NULL, NULL, 0, NULL, 0) == DP_OK);   /* the other worker: busy */
    while (__atomic_load_n(&g_busy, __ATOMIC_ACQUIRE) < 1) sched_yield();
    CHECK(dp_push_sync(e, nested_outer, &c, NULL, 0, &x, 1) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    /* the outer op pushed a chain far ahead of the workers; from inside an
       op the pusher-run path must not take any */
    {
        dp_engine_stats s;
        dp_engine_stats_get(e, &s);
        CHECK(s.pusher_ran == 0);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* A wait or a variable's deletion is pushed too, and may have to wait like
   any push; it must not run other ops on the calling thread: a timed wait
   would then take as long as up to 64 arbitrary ops, whatever its timeout,
   and the documented contract names only dp_push and dp_opr_push. Both
   workers are held, the backlog is past the pacing threshold with ready
   ops queued, and the wait (then the deletion) is the 64th waiting push in
   a row: the point where a push would run ops. The waits' own helping
   (desc.no_wait_help = 0, test_frame) is turned off here: it runs queued
   ops by design, counted in caller_ran, not pusher_ran. */
static void wait_and_delete_run_no_ops(dp_engine_type type) {
    dp_engine_desc desc;
    dp_engine *e = NULL;
    dp_var busy[2], y;
    dp_engine_stats s;
    int i;
    memset(&desc, 0, sizeof desc);
    desc.type = type; desc.cpu_worker_nthreads = 2; desc.ignore_env = 1; desc.logger.func = quiet_logger;
    desc.push_runs_ops = 1; desc.no_wait_help = 1;
    CHECK(dp_engine_create(&desc, &e) == DP_OK);
    if (!e) return;
    __atomic_store_n(&g_release, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_busy, 0, __ATOMIC_RELEASE);
    for (i = 0; i < 2; i++) {
        busy[i] = dp_var_create(e);
        CHECK(dp_push_sync(e, busy_until_released, NULL, NULL, 0, &busy[i], 1) == DP_OK);
    }
    while (__atomic_load_n(&g_busy, __ATOMIC_ACQUIRE) < 2) sched_yield();
    for (i = 0; i < 2100; i++) CHECK(dp_push_sync(e, noop, NULL, NULL, 0, NULL, 0) == DP_OK);   /* ready, queued */
    y = dp_var_create(e);
    for (i = 0; i < 64; i++) CHECK(dp_push_sync(e, noop, NULL, NULL, 0, &y, 1) == DP_OK);   /* 1 ready, 63 waiting */
    CHECK(dp_wait_var_for(e, y, 1, NULL) == DP_ERROR_TIMEOUT);                           /* the 64th waiting push */
    dp_engine_stats_get(e, &s);
    CHECK(s.pusher_ran == 0);
    CHECK(dp_var_delete(e, y) == DP_OK);   /* the 64th again: the wait, not an op, left the count at 63 */
    dp_engine_stats_get(e, &s);
    CHECK(s.pusher_ran == 0);
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
static void test_push_runs_ops_not_from_a_wait_or_delete(void) {
    wait_and_delete_run_no_ops(DP_ENGINE_PERDEVICE);
    wait_and_delete_run_no_ops(DP_ENGINE_POOLED);   /* its pool takes deletions too */
}

/* A one-shot op's cleanup runs on the worker that completed the op, in the
   middle of that completion; a cleanup may push. Those pushes must not run
   other ops there: the worker would run them nested inside another op's
   completion, as a "pusher" (rc.worker == -1) though it is a worker. The
   other worker is held, and the cleanup builds a backlog past the pacing
   threshold and makes its 64th push in a row wait. */
typedef struct { dp_engine *e; dp_var y; pthread_t worker; int on_worker; } cleanup_push_ctx;
static cleanup_push_ctx g_cp;
static int note_thread(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; g_cp.worker = pthread_self(); return 0; }
static int note_if_on_worker(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    if (pthread_equal(pthread_self(), g_cp.worker)) __atomic_fetch_add(&g_cp.on_worker, 1, __ATOMIC_ACQ_REL);
    return 0;
}
static void cleanup_pushes(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < 2100; i++) dp_push_sync(g_cp.e, note_if_on_worker, NULL, NULL, 0, NULL, 0);   /* ready, queued */
    for (i = 0; i < 65; i++) dp_push_sync(g_cp.e, noop, NULL, NULL, 0, &g_cp.y, 1);              /* 1 ready, 64 waiting */
}
static void test_push_runs_ops_not_from_a_workers_cleanup(void) {
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2, 1);
    dp_engine_stats s;
    dp_push_desc d;
    dp_var busy, x;
    CHECK(e != NULL);
    if (!e) return;
    memset(&g_cp, 0, sizeof g_cp);
    g_cp.e = e;
    g_cp.y = dp_var_create(e);
    x = dp_var_create(e);
    busy = dp_var_create(e);
    __atomic_store_n(&g_release, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_busy, 0, __ATOMIC_RELEASE);
    CHECK(dp_push_sync(e, busy_until_released, NULL, NULL, 0, &busy, 1) == DP_OK);
    while (__atomic_load_n(&g_busy, __ATOMIC_ACQUIRE) < 1) sched_yield();
    memset(&d, 0, sizeof d);
    d.fn = note_thread; d.cleanup = cleanup_pushes; d.writes = &x; d.num_writes = 1; d.name = "pushes from its cleanup";
    CHECK(dp_push(e, &d) == DP_OK);
    CHECK(dp_wait_var(e, x, NULL) == DP_OK);   /* its cleanup ran before x was released */
    dp_engine_stats_get(e, &s);
    CHECK(s.pusher_ran == 0);
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    dp_engine_stats_get(e, &s);
    CHECK(s.pusher_ran == 0);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- pre-created ops: runs released in batches by the workers ------------ */
static int g_cleanups;
static void count_cleanup(void *arg) { (void)arg; __atomic_fetch_add(&g_cleanups, 1, __ATOMIC_ACQ_REL); }
/* A worker releases the runs of a pre-created op it finished in batches;
   every batch must be released before dp_wait_all can see the runs done, so
   that an op destroyed before the wait has run its cleanup when the wait
   returns. Many short rounds, so a late release would be caught. */
static void test_op_runs_released_before_wait_all(void) {
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2, 0);
    int round, i, bad = 0;
    CHECK(e != NULL);
    if (!e) return;
    for (round = 0; round < 300; round++) {
        dp_var x = dp_var_create(e);
        dp_push_desc d;
        dp_opr op;
        dp_ctx cpu = {DP_DEV_CPU, 0};
        memset(&d, 0, sizeof d);
        d.fn = noop; d.writes = &x; d.num_writes = 1; d.cleanup = count_cleanup;
        __atomic_store_n(&g_cleanups, 0, __ATOMIC_RELEASE);
        op = dp_opr_create(e, &d);
        CHECK(op.id != 0);
        for (i = 0; i < 200; i++) CHECK(dp_opr_push(e, op, cpu, 0) == DP_OK);
        CHECK(dp_opr_destroy(e, op) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        bad += __atomic_load_n(&g_cleanups, __ATOMIC_ACQUIRE) != 1;
        dp_var_delete(e, x);
    }
    CHECK(bad == 0);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* Two pre-created ops pushed alternately: a worker's batch changes op at
   every run, and each op's cleanup still runs once, after its last run. */
static void test_op_runs_of_two_ops(void) {
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2, 0);
    dp_var x;
    dp_push_desc d;
    dp_opr a, b;
    dp_ctx cpu = {DP_DEV_CPU, 0};
    int i;
    CHECK(e != NULL);
    if (!e) return;
    x = dp_var_create(e);
    memset(&d, 0, sizeof d);
    d.fn = noop; d.writes = &x; d.num_writes = 1; d.cleanup = count_cleanup;
    __atomic_store_n(&g_cleanups, 0, __ATOMIC_RELEASE);
    a = dp_opr_create(e, &d);
    b = dp_opr_create(e, &d);
    for (i = 0; i < 5000; i++) { CHECK(dp_opr_push(e, a, cpu, 0) == DP_OK); CHECK(dp_opr_push(e, b, cpu, 0) == DP_OK); }
    CHECK(dp_opr_destroy(e, a) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(__atomic_load_n(&g_cleanups, __ATOMIC_ACQUIRE) == 1);
    CHECK(dp_opr_destroy(e, b) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(__atomic_load_n(&g_cleanups, __ATOMIC_ACQUIRE) == 2);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- batch push ------------------------------------------------------------ */
/* A small random graph in the style of the benchmark's W4: 8 variables,
   each op writes one and reads up to two, the body folds its inputs into
   its output. Pushed in batches of odd sizes, the result must equal the
   sequential run's, on every engine kind. */
#define BG_VARS 8
#define BG_OPS 3000
typedef struct { int i, w, r1, r2; } bg_op;
static uint64_t g_bg_val[BG_VARS];
static bg_op g_bg_ops[BG_OPS];
static uint64_t bg_mix(uint64_t z) { z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; return z ^ (z >> 31); }
static void bg_body(uint64_t *val, const bg_op *o) {
    val[o->w] = bg_mix(bg_mix((uint64_t)o->i ^ val[o->r1]) ^ val[o->r2]) + val[o->w];
}
static int bg_run(dp_run_ctx *rc, void *arg) { (void)rc; bg_body(g_bg_val, (const bg_op *)arg); return 0; }
static void bg_generate(void) {
    uint64_t st = 7;
    int i;
    for (i = 0; i < BG_OPS; i++) {
        st = bg_mix(st + 0x9E3779B97F4A7C15ull);
        g_bg_ops[i].i = i;
        g_bg_ops[i].w = (int)(st % BG_VARS);
        g_bg_ops[i].r1 = (int)((st >> 8) % BG_VARS);
        g_bg_ops[i].r2 = (int)((st >> 16) % BG_VARS);
    }
}
static void bg_batched(dp_engine_type type, int batch, uint64_t *out) {
    dp_engine *e = make(type, 2, 0);
    dp_var v[BG_VARS];
    dp_push_desc *d = (dp_push_desc *)calloc((size_t)batch, sizeof *d);
    dp_var (*reads)[2] = (dp_var (*)[2])calloc((size_t)batch, sizeof *reads);
    int i, k, n = 0;
    CHECK(e != NULL && d != NULL && reads != NULL);
    if (!e || !d || !reads) { free(d); free(reads); return; }
    for (k = 0; k < BG_VARS; k++) { v[k] = dp_var_create(e); g_bg_val[k] = (uint64_t)k; }
    for (i = 0; i < BG_OPS; i++) {
        const bg_op *o = &g_bg_ops[i];
        dp_push_desc *x = &d[n];
        memset(x, 0, sizeof *x);
        x->fn = bg_run; x->arg = (void *)o;
        x->writes = &v[o->w]; x->num_writes = 1;
        reads[n][0] = v[o->r1]; reads[n][1] = v[o->r2];
        x->reads = reads[n]; x->num_reads = 2;   /* a read of w too: write wins, as in dp_push */
        if (++n == batch || i == BG_OPS - 1) { CHECK(dp_push_batch(e, d, n) == DP_OK); n = 0; }
    }
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    memcpy(out, g_bg_val, sizeof g_bg_val);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    free(d); free(reads);
}
static void test_push_batch_keeps_the_order(void) {
    static const dp_engine_type types[] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    static const int sizes[] = {1, 7, 64, 1000};
    uint64_t ref[BG_VARS], got[BG_VARS];
    size_t t, b;
    int i;
    bg_generate();
    for (i = 0; i < BG_VARS; i++) g_bg_val[i] = (uint64_t)i;
    for (i = 0; i < BG_OPS; i++) bg_body(g_bg_val, &g_bg_ops[i]);
    memcpy(ref, g_bg_val, sizeof ref);
    for (t = 0; t < 3; t++)
        for (b = 0; b < 4; b++) {
            memset(got, 0, sizeof got);
            bg_batched(types[t], sizes[b], got);
            CHECK(memcmp(got, ref, sizeof ref) == 0);
        }
}
/* A refused batch pushes nothing and hands every arg back (cleanup). */
static int g_batch_ran;
static int mark_batch_ran(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; __atomic_fetch_add(&g_batch_ran, 1, __ATOMIC_ACQ_REL); return 0; }
static void test_push_batch_errors(void) {
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2, 0);
    dp_push_desc d[3];
    dp_var x, gone;
    dp_engine_stats s0, s1;
    int i;
    CHECK(e != NULL);
    if (!e) return;
    x = dp_var_create(e);
    gone = dp_var_create(e);
    CHECK(dp_var_delete(e, gone) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    memset(d, 0, sizeof d);
    for (i = 0; i < 3; i++) { d[i].fn = mark_batch_ran; d[i].writes = &x; d[i].num_writes = 1; d[i].cleanup = count_cleanup; }
    d[2].writes = &gone;
    __atomic_store_n(&g_batch_ran, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_cleanups, 0, __ATOMIC_RELEASE);
    dp_engine_stats_get(e, &s0);
    CHECK(dp_push_batch(e, d, 3) == DP_ERROR_INVALID_HANDLE);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    dp_engine_stats_get(e, &s1);
    CHECK(__atomic_load_n(&g_batch_ran, __ATOMIC_ACQUIRE) == 0);
    CHECK(__atomic_load_n(&g_cleanups, __ATOMIC_ACQUIRE) == 3);
    CHECK(s1.pushed == s0.pushed);
    d[2].writes = &x; d[1].fn = NULL;             /* no function */
    CHECK(dp_push_batch(e, d, 3) == DP_ERROR_INVALID_ARGS);
    d[1].fn = mark_batch_ran; d[1].prop = DP_PROP_DELETE_VAR;
    CHECK(dp_push_batch(e, d, 3) == DP_ERROR_INVALID_ARGS);
    d[1].prop = DP_PROP_NORMAL;
    CHECK(dp_push_batch(e, d, -1) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_push_batch(e, NULL, 2) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_push_batch(NULL, d, 3) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_push_batch(e, d, 0) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(__atomic_load_n(&g_batch_ran, __ATOMIC_ACQUIRE) == 0);
    for (i = 0; i < 3; i++) d[i].cleanup = NULL;
    CHECK(dp_push_batch(e, d, 3) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(__atomic_load_n(&g_batch_ran, __ATOMIC_ACQUIRE) == 3);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* One pre-created op pushed count times: each run in push order on its
   variable, the op's cleanup once after the last, errors refused. */
static int g_op_runs, g_op_out_of_order;
static int op_step(dp_run_ctx *rc, void *arg) {
    int *expect = (int *)arg;
    (void)rc;
    if (*expect != g_op_runs) g_op_out_of_order++;
    g_op_runs++;
    *expect = g_op_runs;
    return 0;
}
static void test_op_push_n(void) {
    static const dp_engine_type types[] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    size_t t;
    for (t = 0; t < 3; t++) {
        dp_engine *e = make(types[t], 2, 0);
        dp_var x;
        dp_push_desc d;
        dp_opr op;
        dp_ctx cpu = {DP_DEV_CPU, 0}, bad = {DP_DEV_GPU, 3};
        int expect = 0, i;
        CHECK(e != NULL);
        if (!e) return;
        x = dp_var_create(e);
        memset(&d, 0, sizeof d);
        d.fn = op_step; d.arg = &expect; d.writes = &x; d.num_writes = 1; d.cleanup = count_cleanup;
        g_op_runs = 0; g_op_out_of_order = 0;
        __atomic_store_n(&g_cleanups, 0, __ATOMIC_RELEASE);
        op = dp_opr_create(e, &d);
        for (i = 0; i < 10; i++) CHECK(dp_opr_push_n(e, op, cpu, 0, 333) == DP_OK);
        CHECK(dp_opr_push(e, op, cpu, 0) == DP_OK);
        CHECK(dp_opr_push_n(e, op, cpu, 0, 0) == DP_OK);
        CHECK(dp_opr_push_n(e, op, cpu, 0, -1) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_opr_push_n(e, op, bad, 0, 5) != DP_OK);
        CHECK(dp_opr_destroy(e, op) == DP_OK);
        CHECK(dp_opr_push_n(e, op, cpu, 0, 5) == DP_ERROR_INVALID_HANDLE);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(g_op_runs == 3331);
        CHECK(g_op_out_of_order == 0);
        CHECK(__atomic_load_n(&g_cleanups, __ATOMIC_ACQUIRE) == 1);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

int main(void) {
    dp_test_hook_fn = test_hook;   /* before any engine starts a thread */
    static const test_case tests[] = {
        {"contention counters stay 0 for one thread", test_contention_zero_alone},
        {"contention: a variable's lock found held is counted", test_contention_var_lock_counted},
        {"push_runs_ops: the pusher runs a chain's ready ops, in order", test_push_runs_ops_in_order},
        {"push_runs_ops: off by default, the pusher runs nothing", test_push_runs_ops_off_by_default},
        {"push_runs_ops: with only deque ops ready, the pusher yields", test_push_runs_ops_yields_without_queued_ops},
        {"push_runs_ops: never from inside an op", test_push_runs_ops_not_inside_an_op},
        {"push_runs_ops: a wait or a deletion runs no ops", test_push_runs_ops_not_from_a_wait_or_delete},
        {"push_runs_ops: a worker pushing from a cleanup runs no ops", test_push_runs_ops_not_from_a_workers_cleanup},
        {"pre-created op: its runs are released before dp_wait_all returns", test_op_runs_released_before_wait_all},
        {"pre-created ops pushed alternately: each cleanup once, after its last run", test_op_runs_of_two_ops},
        {"dp_push_batch: batches of any size give the sequential result", test_push_batch_keeps_the_order},
        {"dp_push_batch: a refused batch pushes nothing and calls every cleanup", test_push_batch_errors},
        {"dp_opr_push_n: runs in push order, cleanup once, errors refused", test_op_push_n},
    };
    return run_tests("scheduling", tests, (int)(sizeof tests / sizeof tests[0]));
}
