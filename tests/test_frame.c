/* The engine as a frame loop's job system: threaded engines with no thread
   of their own (cpu_worker_nthreads, cpu_priority_nthreads and
   gpu_copy_nthreads = DP_NO_THREADS), driven by dp_run_ready and the waits
   on the caller's thread; and the priority and IO ops' route when their
   pools have no threads. The last line is "N passed, M failed". */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "depeng.h"
#include "tests/impl/test_hook.h"   /* main points dp_test_hook_fn at test_hook */
#include "tests/test_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#ifdef __linux__
#include <dirent.h>
#endif

/* The threads of this process (Linux: /proc/self/task); -1 elsewhere. */
static int count_threads(void) {
#ifdef __linux__
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
#else
    return -1;
#endif
}
static void sleep_ms(int ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000; ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}
/* A joined thread may stay listed in /proc/self/task for a moment: the
   count once it is n (or whatever it is after a second). */
static int threads_now(int n) {
    int i, c = count_threads();
    for (i = 0; i < 100 && c != n; i++) { sleep_ms(10); c = count_threads(); }
    return c;
}
/* The count before a test: once it holds still for 20 ms. */
static int threads_before(void) {
    int i, c = count_threads();
    for (i = 0; i < 100; i++) { int d; sleep_ms(20); if ((d = count_threads()) == c) break; c = d; }
    return c;
}

static dp_engine *make_with(dp_engine_type type, int workers, int prio, int copy, int no_wait_help) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.ignore_env = 1; d.logger.func = quiet_logger;
    d.cpu_worker_nthreads = workers; d.cpu_priority_nthreads = prio; d.gpu_copy_nthreads = copy;
    d.no_wait_help = no_wait_help;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}
static dp_engine *make(dp_engine_type type, int workers, int prio, int copy) { return make_with(type, workers, prio, copy, 0); }

/* ---- a frame's jobs ------------------------------------------------------
   NCHAIN chains of CHAIN_LEN dependent jobs, each job of a chain after the
   first also reading the next chain's variable (a DAG across the chains),
   some of them prioritized, some IO; then one job summing every chain into
   the frame's result. 10 x 10 + 1 = 101 jobs. The expected values come from
   running the same jobs in push order on one thread: the rule says the
   engine's result is the same. */
#define NCHAIN 10
#define CHAIN_LEN 10
#define NJOBS (NCHAIN * CHAIN_LEN)
typedef struct job { long *out; const long *in; long k; } job;
static int job_fn(dp_run_ctx *rc, void *arg) {
    job *j = (job *)arg;
    (void)rc;
    *j->out = (*j->out * 31 + (j->in ? *j->in : 0) + j->k) % 1000003;
    return 0;
}
typedef struct sum_job { long *out; const long *in; } sum_job;
static int sum_fn(dp_run_ctx *rc, void *arg) {
    sum_job *s = (sum_job *)arg;
    int i;
    (void)rc;
    *s->out = 0;
    for (i = 0; i < NCHAIN; i++) *s->out += s->in[i];
    return 0;
}
typedef struct frame {
    dp_var chain[NCHAIN], result;
    long vals[NCHAIN], result_val;
    job jobs[NJOBS];
    sum_job sum;
} frame;
/* Pushes frame f's jobs and returns the result they must give. */
static long push_frame(dp_engine *e, frame *fr, int f) {
    long ref[NCHAIN];
    int c, k;
    for (c = 0; c < NCHAIN; c++) ref[c] = fr->vals[c];
    for (k = 0; k < CHAIN_LEN; k++) {
        for (c = 0; c < NCHAIN; c++) {
            job *j = &fr->jobs[k * NCHAIN + c];
            dp_push_desc d;
            int next = (c + 1) % NCHAIN;
            memset(&d, 0, sizeof d);
            j->out = &fr->vals[c]; j->in = k ? &fr->vals[next] : NULL; j->k = f * 1000 + k * NCHAIN + c;
            d.fn = job_fn; d.arg = j; d.name = "job";
            d.writes = &fr->chain[c]; d.num_writes = 1;
            if (k) { d.reads = &fr->chain[next]; d.num_reads = 1; }
            d.prop = (k * NCHAIN + c) % 7 == 3 ? DP_PROP_CPU_PRIORITIZED : (k * NCHAIN + c) % 11 == 5 ? DP_PROP_IO : DP_PROP_NORMAL;
            d.priority = c;
            CHECK(dp_push(e, &d) == DP_OK);
            ref[c] = (ref[c] * 31 + (k ? ref[next] : 0) + j->k) % 1000003;
        }
    }
    {
        dp_push_desc d;
        long sum = 0;
        memset(&d, 0, sizeof d);
        fr->sum.out = &fr->result_val; fr->sum.in = fr->vals;
        d.fn = sum_fn; d.arg = &fr->sum; d.name = "sum";
        d.reads = fr->chain; d.num_reads = NCHAIN;
        d.writes = &fr->result; d.num_writes = 1;
        CHECK(dp_push(e, &d) == DP_OK);
        for (c = 0; c < NCHAIN; c++) sum += ref[c];
        return sum;
    }
}
static void frame_init(dp_engine *e, frame *fr) {
    int c;
    memset(fr, 0, sizeof *fr);
    for (c = 0; c < NCHAIN; c++) { fr->chain[c] = dp_var_create(e); fr->vals[c] = c; }
    fr->result = dp_var_create(e);
}

/* 60 frames, each pumped with a 2 ms budget until its result is ready; no
   engine thread at any time. */
static void frame_loop(dp_engine_type type) {
    int before = threads_before(), f, pumps = 0, bad_stop = 0, wrong = 0;
    dp_engine *e = make(type, DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS);
    static frame fr;
    dp_engine_desc got;
    dp_engine_stats st;
    CHECK(e != NULL);
    if (!e) return;
    CHECK(count_threads() == before);
    CHECK(dp_engine_desc_get(e, &got) == DP_OK);
    CHECK(got.cpu_worker_nthreads == 0 && got.cpu_priority_nthreads == 0 && got.gpu_copy_nthreads == 0);
    frame_init(e, &fr);
    for (f = 0; f < 60; f++) {
        long expect = push_frame(e, &fr, f);
        dp_run_desc rd;
        dp_run_report rep;
        dp_var_state s = DP_VAR_INVALID;
        int guard = 0;
        memset(&rd, 0, sizeof rd);
        rd.until = fr.result; rd.budget_us = 2000;
        do {
            CHECK(dp_run_ready(e, &rd, &rep) == DP_OK);
            pumps++;
            if (rep.stop != DP_RUN_VAR_READY && rep.stop != DP_RUN_BUDGET) bad_stop++;   /* nothing else runs them: never idle */
        } while (rep.stop != DP_RUN_VAR_READY && ++guard < 100000);
        CHECK(dp_var_state_get(e, fr.result, &s) == DP_OK && s == DP_VAR_READY);
        if (fr.result_val != expect) wrong++;
        if (f == 30) CHECK(count_threads() == before);
    }
    CHECK(bad_stop == 0);
    CHECK(wrong == 0);
    CHECK(pumps >= 60);
    CHECK(count_threads() == before);
    CHECK(dp_engine_stats_get(e, &st) == DP_OK);
    CHECK(st.caller_ran == 60u * (NJOBS + 1));
    CHECK(st.completed == 60u * (NJOBS + 1));
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    CHECK(threads_now(before) == before);
}
static void test_frame_loop_perdevice(void) { frame_loop(DP_ENGINE_PERDEVICE); }
static void test_frame_loop_pooled(void) { frame_loop(DP_ENGINE_POOLED); }

/* With no workers, the waits run the ops: dp_wait_var, dp_wait_var_for,
   dp_wait_all and destroy each finish a frame. */
static void waits_run_ops(dp_engine_type type) {
    int before = threads_before(), f;
    dp_engine *e = make(type, DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS);
    static frame fr;
    CHECK(e != NULL);
    if (!e) return;
    frame_init(e, &fr);
    for (f = 0; f < 4; f++) {
        long expect = push_frame(e, &fr, f);
        if (f == 0) CHECK(dp_wait_var(e, fr.result, NULL) == DP_OK);
        if (f == 1) CHECK(dp_wait_var_for(e, fr.result, 60000, NULL) == DP_OK);
        if (f == 2) CHECK(dp_wait_all(e, NULL) == DP_OK);
        if (f == 3) CHECK(dp_wait_all_for(e, 60000, NULL) == DP_OK);
        CHECK(fr.result_val == expect);
    }
    push_frame(e, &fr, 4);                   /* destroy waits for it: runs it */
    CHECK(count_threads() == before);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
static void test_waits_run_ops_perdevice(void) { waits_run_ops(DP_ENGINE_PERDEVICE); }
static void test_waits_run_ops_pooled(void) { waits_run_ops(DP_ENGINE_POOLED); }

/* A wait asleep while nothing is ready is woken when an op becomes ready on
   another thread (an async op completed there): it then runs it. Without
   the wake-up the timed wait sleeps until its timeout. */
typedef struct async_job { dp_completion done; int started; } async_job;
static void async_start(dp_run_ctx *rc, void *arg, dp_completion done) {
    async_job *a = (async_job *)arg;
    (void)rc;
    a->done = done;
    __atomic_store_n(&a->started, 1, __ATOMIC_RELEASE);
}
static void *async_completer(void *arg) {
    async_job *a = (async_job *)arg;
    while (!__atomic_load_n(&a->started, __ATOMIC_ACQUIRE)) sleep_ms(1);
    sleep_ms(50);                            /* the wait is asleep by now */
    dp_complete(a->done, 0, NULL);
    return NULL;
}
static void *async_completer_slow(void *arg) {
    async_job *a = (async_job *)arg;
    while (!__atomic_load_n(&a->started, __ATOMIC_ACQUIRE)) sleep_ms(1);
    sleep_ms(200);
    dp_complete(a->done, 0, NULL);
    return NULL;
}
static int add_one(dp_run_ctx *rc, void *arg) { (void)rc; (*(long *)arg)++; return 0; }
static void test_wait_woken_by_async_completion(void) {
    dp_engine_type types[2] = {DP_ENGINE_PERDEVICE, DP_ENGINE_POOLED};
    int t;
    for (t = 0; t < 2; t++) {
        dp_engine *e = make(types[t], DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS);
        async_job a;
        long n = 0;
        int i;
        pthread_t th;
        dp_var x, y;
        CHECK(e != NULL);
        if (!e) return;
        memset(&a, 0, sizeof a);
        x = dp_var_create(e); y = dp_var_create(e);
        CHECK(dp_push_async(e, async_start, &a, NULL, 0, &x, 1) == DP_OK);   /* starts on this thread at push */
        for (i = 0; i < 5; i++) CHECK(dp_push_sync(e, add_one, &n, &x, 1, &y, 1) == DP_OK);
        CHECK(pthread_create(&th, NULL, async_completer, &a) == 0);
        CHECK(dp_wait_var_for(e, y, 10000, NULL) == DP_OK);
        CHECK(n == 5);
        pthread_join(th, NULL);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* An untimed wait on an engine without workers sleeps until an op is
   ready for it, not in slices: here it wakes (the "wait_woke" hook) once for
   the async completion 200 ms later, not every few milliseconds (the old
   5 ms slices woke it ~40 times). With no_wait_help too (then only the
   push's dp__pump_wake wakes it). Should the wake-up be lost, a rescuer
   runs the ready op itself after 5 s (its completion then grants the
   wait's block, which wakes the wait) and the test fails instead of
   hanging. */
static int g_wait_wakes;
static void test_hook(const char *point) {
    if (strcmp(point, "wait_woke") == 0) __atomic_add_fetch(&g_wait_wakes, 1, __ATOMIC_RELAXED);
}
typedef struct rescue_arg { dp_engine *e; int stop, rescued; } rescue_arg;
static void *rescuer(void *p) {
    rescue_arg *r = (rescue_arg *)p;
    dp_run_desc rd;
    int i;
    for (i = 0; i < 500 && !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE); i++) sleep_ms(10);
    if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) return NULL;
    __atomic_store_n(&r->rescued, 1, __ATOMIC_RELEASE);
    memset(&rd, 0, sizeof rd);
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) { dp_run_ready(r->e, &rd, NULL); sleep_ms(1); }
    return NULL;
}
static void test_pumped_wait_sleeps_until_woken(void) {
    dp_engine_type types[2] = {DP_ENGINE_PERDEVICE, DP_ENGINE_POOLED};
    int t;
    for (t = 0; t < 4; t++) {
        dp_engine *e = make_with(types[t % 2], DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS, t / 2);
        async_job a;
        rescue_arg r;
        long n = 0;
        pthread_t th, rt;
        dp_var x, y;
        CHECK(e != NULL);
        if (!e) return;
        memset(&a, 0, sizeof a);
        memset(&r, 0, sizeof r);
        x = dp_var_create(e); y = dp_var_create(e);
        r.e = e;
        CHECK(dp_push_async(e, async_start, &a, NULL, 0, &x, 1) == DP_OK);
        CHECK(dp_push_sync(e, add_one, &n, &x, 1, &y, 1) == DP_OK);
        CHECK(pthread_create(&rt, NULL, rescuer, &r) == 0);
        CHECK(pthread_create(&th, NULL, async_completer_slow, &a) == 0);
        __atomic_store_n(&g_wait_wakes, 0, __ATOMIC_RELAXED);
        CHECK(dp_wait_var(e, y, NULL) == DP_OK);
        CHECK(n == 1);
        CHECK(!__atomic_load_n(&r.rescued, __ATOMIC_ACQUIRE));   /* the wait was woken */
        if (__atomic_load_n(&g_wait_wakes, __ATOMIC_RELAXED) > 5)
            fprintf(stderr, "  the wait woke %d times in 200 ms\n", __atomic_load_n(&g_wait_wakes, __ATOMIC_RELAXED));
        CHECK(__atomic_load_n(&g_wait_wakes, __ATOMIC_RELAXED) <= 5);
        __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
        pthread_join(th, NULL);
        pthread_join(rt, NULL);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* Threads push and wait on one engine without workers while a third pumps
   with dp_run_ready: every chain's result is right (TSan: no race). */
#define MT_OPS 2000
typedef struct mt_arg { dp_engine *e; dp_var v; long val; int ok; } mt_arg;
static int mt_step(dp_run_ctx *rc, void *arg) { long *p = (long *)arg; (void)rc; *p = *p * 3 % 1000003 + 1; return 0; }
static void *mt_pusher(void *p) {
    mt_arg *a = (mt_arg *)p;
    long ref = 0;
    int i;
    for (i = 0; i < MT_OPS; i++) {
        if (dp_push_sync(a->e, mt_step, &a->val, NULL, 0, &a->v, 1) != DP_OK) return NULL;
        ref = ref * 3 % 1000003 + 1;
        if (i % 500 == 499 && dp_wait_var(a->e, a->v, NULL) != DP_OK) return NULL;
    }
    if (dp_wait_var(a->e, a->v, NULL) != DP_OK) return NULL;
    a->ok = a->val == ref;
    return NULL;
}
static int g_mt_stop;
static void *mt_pump(void *p) {
    dp_engine *e = (dp_engine *)p;
    dp_run_desc rd;
    memset(&rd, 0, sizeof rd);
    rd.max_ops = 16;
    while (!__atomic_load_n(&g_mt_stop, __ATOMIC_ACQUIRE)) {
        dp_run_report rep;
        if (dp_run_ready(e, &rd, &rep) != DP_OK) break;
        if (rep.stop == DP_RUN_IDLE) sched_yield();
    }
    return NULL;
}
static void test_threads_pump_and_wait(void) {
    dp_engine_type types[2] = {DP_ENGINE_PERDEVICE, DP_ENGINE_POOLED};
    int t;
    for (t = 0; t < 2; t++) {
        dp_engine *e = make(types[t], DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS);
        mt_arg a[2];
        pthread_t th[3];
        int i;
        CHECK(e != NULL);
        if (!e) return;
        __atomic_store_n(&g_mt_stop, 0, __ATOMIC_RELEASE);
        for (i = 0; i < 2; i++) { a[i].e = e; a[i].v = dp_var_create(e); a[i].val = 0; a[i].ok = 0; }
        CHECK(pthread_create(&th[2], NULL, mt_pump, e) == 0);
        for (i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, mt_pusher, &a[i]) == 0);
        for (i = 0; i < 2; i++) pthread_join(th[i], NULL);
        __atomic_store_n(&g_mt_stop, 1, __ATOMIC_RELEASE);
        pthread_join(th[2], NULL);
        CHECK(a[0].ok && a[1].ok);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* An op that a naive engine runs from its ready list (tracing sends every
   op through it) waits on an engine without workers: the wait runs that
   engine's ops, and the last one grants the wait's own block on this
   thread, which runs at once (queued behind the op that waits, it never
   ran: the timed wait gave up). */
static dp_engine *g_other;
static dp_var g_other_var;
static long g_other_n;
static int g_other_wait;
static int wait_on_other(dp_run_ctx *rc, void *arg) {
    int i;
    (void)rc; (void)arg;
    for (i = 0; i < 3; i++) dp_push_sync(g_other, add_one, &g_other_n, NULL, 0, &g_other_var, 1);
    g_other_wait = dp_wait_var_for(g_other, g_other_var, 3000, NULL) == DP_OK ? 1 : -1;
    return 0;
}
static void test_naive_op_waits_on_engine_without_workers(void) {
    dp_engine_type types[2] = {DP_ENGINE_PERDEVICE, DP_ENGINE_POOLED};
    int t;
    for (t = 0; t < 2; t++) {
        dp_engine_desc desc;
        dp_engine *a = NULL;
        dp_var va;
        memset(&desc, 0, sizeof desc);
        desc.type = DP_ENGINE_NAIVE; desc.ignore_env = 1; desc.logger.func = quiet_logger; desc.trace.record_graph = 1;
        CHECK(dp_engine_create(&desc, &a) == DP_OK);
        g_other = make(types[t], DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS);
        CHECK(a != NULL && g_other != NULL);
        if (!a || !g_other) return;
        g_other_var = dp_var_create(g_other);
        g_other_n = 0; g_other_wait = 0;
        va = dp_var_create(a);
        CHECK(dp_push_sync(a, wait_on_other, NULL, NULL, 0, &va, 1) == DP_OK);
        CHECK(g_other_wait == 1 && g_other_n == 3);
        CHECK(dp_engine_destroy(a, NULL) == DP_OK);
        CHECK(dp_engine_destroy(g_other, NULL) == DP_OK);
    }
}

/* max_ops and the budget stop it; with nothing queued it is idle; the
   naive engine has nothing to run. */
static int sleep_1ms(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; sleep_ms(1); return 0; }
static void test_run_ready_limits(void) {
    dp_engine *e = make(DP_ENGINE_PERDEVICE, DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS);
    dp_run_desc rd;
    dp_run_report rep;
    long n = 0;
    int i;
    dp_var x;
    CHECK(e != NULL);
    if (!e) return;
    x = dp_var_create(e);
    for (i = 0; i < 100; i++) CHECK(dp_push_sync(e, add_one, &n, NULL, 0, &x, 1) == DP_OK);
    memset(&rd, 0, sizeof rd);
    rd.max_ops = 10;
    CHECK(dp_run_ready(e, &rd, &rep) == DP_OK);
    CHECK(rep.ops_run == 10 && rep.stop == DP_RUN_MAX_OPS && n == 10);
    rd.max_ops = 0; rd.until = x;
    CHECK(dp_run_ready(e, &rd, &rep) == DP_OK);
    CHECK(rep.ops_run == 90 && rep.stop == DP_RUN_VAR_READY && n == 100);
    CHECK(dp_run_ready(e, &rd, &rep) == DP_OK);                     /* ready already */
    CHECK(rep.ops_run == 0 && rep.stop == DP_RUN_VAR_READY);
    memset(&rd, 0, sizeof rd);
    CHECK(dp_run_ready(e, &rd, &rep) == DP_OK);                     /* nothing queued */
    CHECK(rep.ops_run == 0 && rep.stop == DP_RUN_IDLE);
    for (i = 0; i < 50; i++) CHECK(dp_push_sync(e, sleep_1ms, NULL, NULL, 0, &x, 1) == DP_OK);
    rd.budget_us = 5000;
    CHECK(dp_run_ready(e, &rd, &rep) == DP_OK);
    CHECK(rep.stop == DP_RUN_BUDGET && rep.ops_run >= 1 && rep.ops_run < 50 && rep.elapsed_us >= 5000);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);

    e = make(DP_ENGINE_NAIVE, 0, 0, 0);
    CHECK(e != NULL);
    if (!e) return;
    x = dp_var_create(e);
    CHECK(dp_push_sync(e, add_one, &n, NULL, 0, &x, 1) == DP_OK);   /* ran inside the push */
    memset(&rd, 0, sizeof rd);
    rd.until = x;
    CHECK(dp_run_ready(e, &rd, &rep) == DP_OK);
    CHECK(rep.ops_run == 0 && rep.stop == DP_RUN_VAR_READY);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* Bad calls: each refused with its code and log item. */
static dp_result g_nested;
static int run_ready_inside(dp_run_ctx *rc, void *arg) {
    dp_run_desc rd;
    (void)arg;
    memset(&rd, 0, sizeof rd);
    g_nested = dp_run_ready(rc->engine, &rd, NULL);
    return 0;
}
static void test_run_ready_errors(void) {
    dp_engine *e = make(DP_ENGINE_PERDEVICE, DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS), *e2;
    dp_run_desc rd;
    dp_run_report rep;
    dp_var x, gone;
    dp_engine_desc d;
    CHECK(e != NULL);
    if (!e) return;
    memset(&rd, 0, sizeof rd);
    memset(&rep, 0xff, sizeof rep);
    CHECK(dp_run_ready(NULL, &rd, &rep) == DP_ERROR_INVALID_ARGS);
    CHECK(rep.ops_run == 0 && rep.stop == DP_RUN_IDLE);
    CHECK(dp_run_ready(e, NULL, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(g_last_item == DP_LOGITEM_NULL_ARGUMENT);
    gone = dp_var_create(e);
    CHECK(dp_var_delete(e, gone) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    rd.until = gone;
    CHECK(dp_run_ready(e, &rd, &rep) == DP_ERROR_INVALID_HANDLE);
    CHECK(g_last_item == DP_LOGITEM_INVALID_VAR);
    memset(&rd, 0, sizeof rd);
    x = dp_var_create(e);
    g_nested = DP_OK;
    CHECK(dp_push_sync(e, run_ready_inside, NULL, NULL, 0, &x, 1) == DP_OK);
    CHECK(dp_wait_var(e, x, NULL) == DP_OK);                        /* runs it */
    CHECK(g_nested == DP_ERROR_IN_OPERATION);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);

    /* DP_NO_THREADS is for the CPU workers, priority and copy threads only */
    memset(&d, 0, sizeof d);
    d.ignore_env = 1; d.logger.func = quiet_logger;
    d.gpu_worker_nthreads = DP_NO_THREADS;
    e2 = NULL;
    CHECK(dp_engine_create(&d, &e2) == DP_ERROR_INVALID_ARGS && e2 == NULL);
    CHECK(g_last_item == DP_LOGITEM_BAD_DESC);
    d.gpu_worker_nthreads = 0; d.cpu_worker_nthreads = -2;
    CHECK(dp_engine_create(&d, &e2) == DP_ERROR_INVALID_ARGS && e2 == NULL);
}

/* ---- no thread the user did not ask for -------------------------------- */
/* With 0 priority and 0 IO threads, prioritized and IO ops run on the CPU
   workers, in the order the rule sets; the engine has exactly its workers.
   The default per-device engine has one priority thread more, and starts
   its IO thread at the first IO op (the table at dp_engine_desc). */
typedef struct order_arg { long *val; long k; } order_arg;
static int order_fn(dp_run_ctx *rc, void *arg) {
    order_arg *o = (order_arg *)arg;
    (void)rc;
    *o->val = *o->val * 7 % 1000003 + o->k;
    return 0;
}
static void push_mixed(dp_engine *e, dp_var x, long *val, order_arg *args, int n) {
    int i;
    for (i = 0; i < n; i++) {
        dp_push_desc d;
        memset(&d, 0, sizeof d);
        args[i].val = val; args[i].k = i;
        d.fn = order_fn; d.arg = &args[i]; d.name = "mixed";
        d.writes = &x; d.num_writes = 1;
        d.prop = i % 3 == 0 ? DP_PROP_CPU_PRIORITIZED : i % 3 == 1 ? DP_PROP_IO : DP_PROP_NORMAL;
        d.priority = i % 5;
        CHECK(dp_push(e, &d) == DP_OK);
    }
}
static void test_no_priority_no_io_threads(void) {
    dp_engine_type types[2] = {DP_ENGINE_PERDEVICE, DP_ENGINE_POOLED};
    static order_arg args[3000];
    int t;
    for (t = 0; t < 2; t++) {
        int before = threads_before(), i;
        dp_engine *e = make_with(types[t], 2, DP_NO_THREADS, DP_NO_THREADS, 1);   /* the waits do not help: every op on a worker */
        long val = 0, ref = 0;
        dp_var x;
        dp_engine_stats st;
        CHECK(e != NULL);
        if (!e) return;
        x = dp_var_create(e);
        push_mixed(e, x, &val, args, 3000);
        for (i = 0; i < 3000; i++) ref = ref * 7 % 1000003 + i;
        CHECK(dp_wait_var(e, x, NULL) == DP_OK);
        CHECK(val == ref);
        if (before >= 0) CHECK(threads_now(before + 2) == before + 2);
        CHECK(dp_engine_stats_get(e, &st) == DP_OK && st.caller_ran == 0);   /* the workers ran them */
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(threads_now(before) == before);
    }
    {   /* the defaults, for comparison: a priority thread at create, an IO thread at the first IO op */
        int before = threads_before();
        dp_engine *e = make(DP_ENGINE_PERDEVICE, 2, 0, 0);
        long val = 0;
        dp_var x;
        CHECK(e != NULL);
        if (!e) return;
        if (before >= 0) CHECK(threads_now(before + 3) == before + 3);
        x = dp_var_create(e);
        push_mixed(e, x, &val, args, 3);
        CHECK(dp_wait_var(e, x, NULL) == DP_OK);
        if (before >= 0) CHECK(threads_now(before + 4) == before + 4);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}
/* No threads at all: prioritized and IO ops run in the pump too. */
static void test_no_threads_mixed_ops(void) {
    static order_arg args[500];
    int before = threads_before(), i;
    dp_engine *e = make(DP_ENGINE_PERDEVICE, DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS);
    long val = 0, ref = 0;
    dp_var x;
    dp_run_desc rd;
    dp_run_report rep;
    CHECK(e != NULL);
    if (!e) return;
    x = dp_var_create(e);
    push_mixed(e, x, &val, args, 500);
    for (i = 0; i < 500; i++) ref = ref * 7 % 1000003 + i;
    CHECK(count_threads() == before);
    memset(&rd, 0, sizeof rd);
    rd.until = x;
    CHECK(dp_run_ready(e, &rd, &rep) == DP_OK);
    CHECK(rep.stop == DP_RUN_VAR_READY && rep.ops_run == 500 && val == ref);
    CHECK(count_threads() == before);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* A thread inside a naive engine's op (tracing on: every op runs from the
   thread's ready list) waits on an engine without threads, and its helping
   runs an op whose completion grants ANOTHER thread's wait block. That
   block must run then, not wait in this thread's ready list until the
   outer op returns: the other thread completes the async op this thread
   waits for, so neither would ever return (found by review). */
static dp_engine *g_e1, *g_naive;
static dp_var g_a, g_b, g_c;
static int g_ob_started, g_t1_result, g_t2_result, g_have_done;
static dp_completion g_async_done;
static int slow_ob(dp_run_ctx *rc, void *x) {
    struct timespec t = {0, 100000000L};
    (void)rc; (void)x;
    __atomic_store_n(&g_ob_started, 1, __ATOMIC_RELEASE);
    nanosleep(&t, NULL);
    return 0;
}
static void keep_done(dp_run_ctx *rc, void *x, dp_completion d) {
    (void)rc; (void)x;
    g_async_done = d;
    __atomic_store_n(&g_have_done, 1, __ATOMIC_RELEASE);
}
static int nothing_op(dp_run_ctx *rc, void *x) { (void)rc; (void)x; return 0; }
static void *second_waiter(void *x) {
    (void)x;
    while (!__atomic_load_n(&g_ob_started, __ATOMIC_ACQUIRE)) sched_yield();
    g_t2_result = dp_wait_var_for(g_e1, g_b, 4000, NULL);
    while (!__atomic_load_n(&g_have_done, __ATOMIC_ACQUIRE)) sched_yield();
    dp_complete(g_async_done, 0, NULL);
    return NULL;
}
static int wait_from_naive_op(dp_run_ctx *rc, void *x) { (void)rc; (void)x; g_t1_result = dp_wait_var_for(g_e1, g_a, 2000, NULL); return 0; }
static void test_helping_wait_inside_naive_op_grants_other_waits(void) {
    dp_engine_desc d;
    pthread_t th;
    dp_var va;
    g_e1 = make(DP_ENGINE_PERDEVICE, DP_NO_THREADS, DP_NO_THREADS, DP_NO_THREADS);
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.trace.record_graph = 1;
    if (!g_e1 || dp_engine_create(&d, &g_naive) != DP_OK) { CHECK(0); return; }
    g_ob_started = g_have_done = 0; g_t1_result = g_t2_result = -99;
    g_a = dp_var_create(g_e1); g_b = dp_var_create(g_e1); g_c = dp_var_create(g_e1); va = dp_var_create(g_naive);
    CHECK(dp_push_sync(g_e1, slow_ob, NULL, NULL, 0, &g_b, 1) == DP_OK);
    CHECK(dp_push_async(g_e1, keep_done, NULL, NULL, 0, &g_c, 1) == DP_OK);
    CHECK(dp_push_sync(g_e1, nothing_op, NULL, &g_c, 1, &g_a, 1) == DP_OK);
    pthread_create(&th, NULL, second_waiter, NULL);
    CHECK(dp_push_sync(g_naive, wait_from_naive_op, NULL, NULL, 0, &va, 1) == DP_OK);
    pthread_join(th, NULL);
    CHECK(g_t2_result == DP_OK);
    CHECK(g_t1_result == DP_OK);
    CHECK(dp_engine_destroy(g_naive, NULL) == DP_OK);
    CHECK(dp_engine_destroy(g_e1, NULL) == DP_OK);
}

/* ---- the waiting thread helps (engines with workers) ------------------ */
/* A blocker occupies the engine's only CPU worker until `release` is set;
   the other ops count where they ran (dp_run_ctx.worker -1: the caller). */
static int g_blocker_started, g_release, g_ran_on_caller, g_ran_on_worker, g_ran_total;
static int blocker_op(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    __atomic_store_n(&g_blocker_started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&g_release, __ATOMIC_ACQUIRE)) sched_yield();
    return 0;
}
static int where_op(dp_run_ctx *rc, void *arg) {
    (void)arg;
    if (rc->worker < 0) __atomic_add_fetch(&g_ran_on_caller, 1, __ATOMIC_ACQ_REL);
    else __atomic_add_fetch(&g_ran_on_worker, 1, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&g_ran_total, 1, __ATOMIC_ACQ_REL);
    return 0;
}
/* Releases the blocker after 10 s unless stopped first: a wait that does
   not help then ends, and the test fails instead of hanging. */
static int g_watchdog_stop;
static void *watchdog(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < 1000 && !__atomic_load_n(&g_watchdog_stop, __ATOMIC_ACQUIRE); i++) sleep_ms(10);
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    return NULL;
}
static pthread_t start_watchdog(void) {
    pthread_t t;
    __atomic_store_n(&g_watchdog_stop, 0, __ATOMIC_RELEASE);
    pthread_create(&t, NULL, watchdog, NULL);
    return t;
}
static void stop_watchdog(pthread_t t) {
    __atomic_store_n(&g_watchdog_stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
}
static dp_engine *make_helping(dp_engine_type type, int no_wait_help) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.ignore_env = 1; d.logger.func = quiet_logger;
    d.cpu_worker_nthreads = 1; d.cpu_priority_nthreads = 1; d.no_wait_help = no_wait_help;
    /* one worker leaves the waiting thread a core, so the default helps;
       on a one-CPU machine it would not (wait_helps_only_with_a_core) */
    if (!no_wait_help && dp_cpu_count() < 2) d.no_wait_help = DP_WAIT_HELP_ALWAYS;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}
/* Pushes the blocker on its own variable and returns once a worker runs it. */
static void start_blocker(dp_engine *e, dp_var v) {
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    __atomic_store_n(&g_blocker_started, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_release, 0, __ATOMIC_RELEASE);
    g_ran_on_caller = g_ran_on_worker = g_ran_total = 0;
    d.fn = blocker_op; d.writes = &v; d.num_writes = 1; d.name = "blocker";
    CHECK(dp_push(e, &d) == DP_OK);
    while (!__atomic_load_n(&g_blocker_started, __ATOMIC_ACQUIRE)) sched_yield();
}
static void push_where(dp_engine *e, dp_var v, int n) {
    int i;
    for (i = 0; i < n; i++) {
        dp_push_desc d;
        memset(&d, 0, sizeof d);
        d.fn = where_op; d.writes = &v; d.num_writes = 1; d.name = "where";
        CHECK(dp_push(e, &d) == DP_OK);
    }
}
/* The one worker is busy: a wait finishes the queued ops on the waiting
   thread (default), or sleeps with desc.no_wait_help until the worker is free. */
static void waiting_thread_helps(dp_engine_type type) {
    int off;
    for (off = 0; off < 2; off++) {
        dp_engine *e = make_helping(type, off);
        dp_var busy, v, w;
        if (!e) { CHECK(0); return; }
        busy = dp_var_create(e); v = dp_var_create(e); w = dp_var_create(e);
        CHECK(busy.id && v.id && w.id);
        start_blocker(e, busy);
        push_where(e, v, 50);
        if (!off) {
            pthread_t t = start_watchdog();
            CHECK(dp_wait_var(e, v, NULL) == DP_OK);
            CHECK(g_ran_on_caller == 50 && g_ran_on_worker == 0);
            push_where(e, w, 20);
            CHECK(dp_wait_var(e, w, NULL) == DP_OK);
            CHECK(g_ran_on_caller == 70);         /* every op but the blocker ran here */
            stop_watchdog(t);
        } else {
            CHECK(dp_wait_var_for(e, v, 100, NULL) == DP_ERROR_TIMEOUT);
            CHECK(g_ran_total == 0);
        }
        __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        if (off) CHECK(g_ran_on_worker == 50 && g_ran_on_caller == 0);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}
static void test_waiting_thread_helps_perdevice(void) { waiting_thread_helps(DP_ENGINE_PERDEVICE); }
static void test_waiting_thread_helps_pooled(void) { waiting_thread_helps(DP_ENGINE_POOLED); }
/* A wait stops helping as soon as what it waits for is done: ops queued
   after it, on other variables, are left to the workers. */
static void test_helping_wait_stops_when_done(void) {
    dp_engine *e = make_helping(DP_ENGINE_PERDEVICE, 0);
    dp_var busy, v, w;
    if (!e) { CHECK(0); return; }
    busy = dp_var_create(e); v = dp_var_create(e); w = dp_var_create(e);
        CHECK(busy.id && v.id && w.id);
    start_blocker(e, busy);
    push_where(e, v, 1);
    push_where(e, w, 30);
    {
        pthread_t t = start_watchdog();
        CHECK(dp_wait_var(e, v, NULL) == DP_OK);
        CHECK(g_ran_on_caller == 1);      /* v's op, the oldest, and nothing after it */
        stop_watchdog(t);
    }
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(g_ran_total == 31);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* With a worker on every CPU (the default count) a wait has no core to
   give: it sleeps while the workers are busy and leaves the ops to them.
   DP_WAIT_HELP_ALWAYS makes it help all the same. */
static int g_blockers_started;
static int counted_blocker_op(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    __atomic_add_fetch(&g_blockers_started, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&g_release, __ATOMIC_ACQUIRE)) sched_yield();
    return 0;
}
static void *release_after_100ms(void *arg) {
    (void)arg;
    sleep_ms(100);
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    return NULL;
}
static void wait_helps_only_with_a_core(dp_engine_type type) {
    int cpus = dp_cpu_count(), always, i;
    for (always = 0; always < 2; always++) {
        dp_engine *e = make_with(type, cpus, 1, DP_NO_THREADS, always ? DP_WAIT_HELP_ALWAYS : 0);
        dp_var *busy = (dp_var *)calloc((size_t)cpus, sizeof *busy), v;
        pthread_t t;
        if (!e || !busy) { CHECK(0); free(busy); if (e) dp_engine_destroy(e, NULL); return; }
        __atomic_store_n(&g_blockers_started, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&g_release, 0, __ATOMIC_RELEASE);
        g_ran_on_caller = g_ran_on_worker = g_ran_total = 0;
        for (i = 0; i < cpus; i++) {
            dp_push_desc d;
            busy[i] = dp_var_create(e);
            memset(&d, 0, sizeof d);
            d.fn = counted_blocker_op; d.writes = &busy[i]; d.num_writes = 1; d.name = "blocker";
            CHECK(busy[i].id && dp_push(e, &d) == DP_OK);
        }
        while (__atomic_load_n(&g_blockers_started, __ATOMIC_ACQUIRE) < cpus) sched_yield();
        v = dp_var_create(e);
        CHECK(v.id != 0);
        push_where(e, v, 20);
        /* helping, the wait returns before any release; else the release
           after 100 ms (or the watchdog's after 10 s) frees the workers */
        if (always) t = start_watchdog();
        else if (pthread_create(&t, NULL, release_after_100ms, NULL) != 0) t = start_watchdog();
        CHECK(dp_wait_var(e, v, NULL) == DP_OK);
        if (always) CHECK(g_ran_on_caller == 20 && g_ran_on_worker == 0);
        else CHECK(g_ran_on_caller == 0 && g_ran_on_worker == 20);
        if (always) stop_watchdog(t); else pthread_join(t, NULL);
        __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        free(busy);
    }
}
static void test_wait_helps_only_with_a_core_perdevice(void) { wait_helps_only_with_a_core(DP_ENGINE_PERDEVICE); }
static void test_wait_helps_only_with_a_core_pooled(void) { wait_helps_only_with_a_core(DP_ENGINE_POOLED); }
/* A wait from inside an op of another engine does not run unrelated ops
   nested in that op: it sleeps (here until its timeout). */
static int g_inner_result;
static dp_engine *g_inner_engine;
static int wait_other_engine_op(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    g_inner_result = dp_wait_all_for(g_inner_engine, 100, NULL);
    return 0;
}
static void test_wait_inside_op_does_not_help(void) {
    dp_engine *e = make_helping(DP_ENGINE_PERDEVICE, 0), *outer = make(DP_ENGINE_NAIVE, 0, 0, 0);
    dp_var busy, v, o;
    dp_push_desc d;
    if (!e || !outer) { CHECK(0); return; }
    busy = dp_var_create(e); v = dp_var_create(e); o = dp_var_create(outer);
    CHECK(busy.id && v.id && o.id);
    start_blocker(e, busy);
    push_where(e, v, 5);
    g_inner_engine = e;
    memset(&d, 0, sizeof d);
    d.fn = wait_other_engine_op; d.writes = &o; d.num_writes = 1; d.name = "waits on the other engine";
    CHECK(dp_push(outer, &d) == DP_OK);    /* the naive engine runs it here, inside dp_push */
    CHECK(g_inner_result == DP_ERROR_TIMEOUT && g_ran_total == 0);
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    CHECK(dp_wait_all(e, NULL) == DP_OK && g_ran_total == 5);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK && dp_engine_destroy(outer, NULL) == DP_OK);
}

/* A timed wait does not run ops: a caller that polls may feed, between its
   polls, the very op it would run (here an op that spins until fed). */
static int g_fed;
static int spin_until_fed(dp_run_ctx *rc, void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < 1000 && !__atomic_load_n(&g_fed, __ATOMIC_ACQUIRE); i++) sleep_ms(2);   /* 2 s at least, if never fed */
    if (rc->worker < 0) __atomic_add_fetch(&g_ran_on_caller, 1, __ATOMIC_ACQ_REL);
    return 0;
}
static void test_timed_wait_does_not_help(void) {
    dp_engine *e = make_helping(DP_ENGINE_PERDEVICE, 0);
    dp_var busy, v;
    dp_push_desc d;
    int polls = 0;
    if (!e) { CHECK(0); return; }
    busy = dp_var_create(e); v = dp_var_create(e);
    start_blocker(e, busy);
    __atomic_store_n(&g_fed, 0, __ATOMIC_RELEASE);
    memset(&d, 0, sizeof d);
    d.fn = spin_until_fed; d.writes = &v; d.num_writes = 1; d.name = "consumer";
    CHECK(dp_push(e, &d) == DP_OK);
    while (dp_wait_var_for(e, v, 10, NULL) == DP_ERROR_TIMEOUT) {
        if (++polls == 3) { __atomic_store_n(&g_fed, 1, __ATOMIC_RELEASE); __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE); }
    }
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);   /* also when a wait ran the consumer and it gave up */
    CHECK(polls >= 3 && g_ran_on_caller == 0);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* While a worker is free, a wait leaves the ready ops to the workers: a
   slow op pushed before the waited-for one runs on a worker, not on the
   waiting thread (which would hold the wait for the slow op's time). */
static int slow_op(dp_run_ctx *rc, void *arg) {
    (void)arg;
    sleep_ms(50);
    if (rc->worker < 0) __atomic_add_fetch(&g_ran_on_caller, 1, __ATOMIC_ACQ_REL);
    return 0;
}
static void test_wait_leaves_ops_to_idle_workers(void) {
    int round;
    dp_engine_desc desc;
    dp_engine *e = NULL;
    memset(&desc, 0, sizeof desc);
    desc.type = DP_ENGINE_PERDEVICE; desc.ignore_env = 1; desc.logger.func = quiet_logger; desc.cpu_worker_nthreads = 2;
    desc.no_wait_help = DP_WAIT_HELP_ALWAYS;   /* a helping wait, whatever the CPU count, leaves them */
    if (dp_engine_create(&desc, &e) != DP_OK) { CHECK(0); return; }
    g_ran_on_caller = g_ran_on_worker = g_ran_total = 0;
    for (round = 0; round < 5; round++) {
        dp_var x = dp_var_create(e), v = dp_var_create(e);
        dp_push_desc d;
        memset(&d, 0, sizeof d);
        d.fn = slow_op; d.writes = &x; d.num_writes = 1; d.name = "slow";
        CHECK(dp_push(e, &d) == DP_OK);
        push_where(e, v, 1);
        CHECK(dp_wait_var(e, v, NULL) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
    }
    CHECK(g_ran_on_caller == 0);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* The waiting thread steals from a worker's deque. A gate op on the one
   worker makes NSTEAL ops ready when it completes: the worker runs the
   first next, which holds it until the others have run (or 5 s), and the
   others go to its deque, where only a thief can reach them. The waiting
   thread runs them all (without stealing it would sleep until the 5 s
   ran out, and the worker would run them). */
#define NSTEAL 40
static int g_gate_open, g_kept_gave_up;
static int gate_op(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    __atomic_store_n(&g_blocker_started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&g_gate_open, __ATOMIC_ACQUIRE)) sched_yield();
    return 0;
}
static int steal_me_op(dp_run_ctx *rc, void *arg) {
    int i;
    (void)arg;
    if (rc->worker >= 0) {   /* the op the worker runs next: holds it while the others go (once) */
        for (i = 0; i < 2500 && !__atomic_load_n(&g_kept_gave_up, __ATOMIC_ACQUIRE)
                    && __atomic_load_n(&g_ran_on_caller, __ATOMIC_ACQUIRE) < NSTEAL - 1; i++) sleep_ms(2);
        if (i == 2500) __atomic_store_n(&g_kept_gave_up, 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&g_ran_on_worker, 1, __ATOMIC_ACQ_REL);
    } else __atomic_add_fetch(&g_ran_on_caller, 1, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&g_ran_total, 1, __ATOMIC_ACQ_REL);
    return 0;
}
static void waiting_thread_steals(dp_engine_type type) {
    dp_engine *e = make_helping(type, 0);
    dp_engine_stats s0, s1;
    dp_var gate, out[NSTEAL];
    dp_push_desc d;
    int i;
    if (!e) { CHECK(0); return; }
    gate = dp_var_create(e);
    __atomic_store_n(&g_blocker_started, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_gate_open, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_kept_gave_up, 0, __ATOMIC_RELEASE);
    g_ran_on_caller = g_ran_on_worker = g_ran_total = 0;
    memset(&d, 0, sizeof d);
    d.fn = gate_op; d.writes = &gate; d.num_writes = 1; d.name = "gate";
    CHECK(dp_push(e, &d) == DP_OK);
    while (!__atomic_load_n(&g_blocker_started, __ATOMIC_ACQUIRE)) sched_yield();   /* on the worker */
    for (i = 0; i < NSTEAL; i++) {
        out[i] = dp_var_create(e);
        memset(&d, 0, sizeof d);
        d.fn = steal_me_op; d.reads = &gate; d.num_reads = 1; d.writes = &out[i]; d.num_writes = 1; d.name = "steal me";
        CHECK(dp_push(e, &d) == DP_OK);
    }
    CHECK(dp_engine_stats_get(e, &s0) == DP_OK);
    __atomic_store_n(&g_gate_open, 1, __ATOMIC_RELEASE);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(dp_engine_stats_get(e, &s1) == DP_OK);
    CHECK(g_ran_total == NSTEAL);
    CHECK(g_ran_on_worker == 1 && g_ran_on_caller == NSTEAL - 1);
    CHECK(!g_kept_gave_up);
    CHECK(s1.caller_stole - s0.caller_stole == NSTEAL - 1);
    CHECK(s1.caller_ran - s0.caller_ran == NSTEAL - 1);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
static void test_waiting_thread_steals_perdevice(void) { waiting_thread_steals(DP_ENGINE_PERDEVICE); }
static void test_waiting_thread_steals_pooled(void) { waiting_thread_steals(DP_ENGINE_POOLED); }

/* ---- stress: helping waits (review of the deque steal and the sleeps) -----
   Pumped: STR_WAITERS threads each wait in turn on STR_OPS variables, each
   written by an op that reads a variable an async op holds; a completer
   thread completes the async ops (so their readers come into the pool
   from that thread, at random times against the waits), and another
   thread pumps with dp_run_ready (or not). Only the waits and the pump run
   ops, so a wait asleep when its op comes must be woken. A watchdog
   rescues (pumps) after 5 s and the test fails instead of hanging; each
   round ends with a destroy right after the waits. */
#define STR_WAITERS 4
#define STR_OPS 64
typedef struct str_ctx {
    dp_engine *e;
    dp_var v[STR_WAITERS][STR_OPS];
    long n[STR_WAITERS][STR_OPS];
    async_job a[STR_WAITERS][STR_OPS];
    int stop, rescued, pump;
} str_ctx;
typedef struct str_waiter { str_ctx *c; int k; } str_waiter;
static void *str_wait_thread(void *p) {
    str_waiter *w = (str_waiter *)p;
    int i;
    for (i = 0; i < STR_OPS; i++) {
        if (dp_wait_var(w->c->e, w->c->v[w->k][i], NULL) != DP_OK) CHECK(0);
        if (__atomic_load_n(&w->c->n[w->k][i], __ATOMIC_ACQUIRE) != 1) CHECK(0);
    }
    return NULL;
}
static int str_inc(dp_run_ctx *rc, void *arg) { (void)rc; __atomic_add_fetch((long *)arg, 1, __ATOMIC_ACQ_REL); return 0; }
static void *str_push_thread(void *p) {
    str_ctx *c = (str_ctx *)p;
    int i, k;
    for (i = 0; i < STR_OPS; i++)
        for (k = 0; k < STR_WAITERS; k++) {
            if ((i + k) % 7 == 0) sched_yield();
            if ((i * 3 + k) % 29 == 0) sleep_ms(1);
            while (!__atomic_load_n(&c->a[k][i].started, __ATOMIC_ACQUIRE)) sched_yield();   /* run by a wait or the pump */
            dp_complete(c->a[k][i].done, 0, NULL);
        }
    return NULL;
}
static void *str_pump_thread(void *p) {
    str_ctx *c = (str_ctx *)p;
    dp_run_desc rd;
    memset(&rd, 0, sizeof rd);
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        if (__atomic_load_n(&c->pump, __ATOMIC_ACQUIRE)) dp_run_ready(c->e, &rd, NULL);
        sched_yield();
    }
    return NULL;
}
static void *str_watchdog(void *p) {
    str_ctx *c = (str_ctx *)p;
    dp_run_desc rd;
    int i;
    for (i = 0; i < 500 && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE); i++) sleep_ms(10);
    if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) return NULL;
    __atomic_store_n(&c->rescued, 1, __ATOMIC_RELEASE);
    memset(&rd, 0, sizeof rd);
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) { dp_run_ready(c->e, &rd, NULL); sleep_ms(1); }
    return NULL;
}
static void stress_rounds(int workers, int pump, int rounds) {
    dp_engine_type types[2] = {DP_ENGINE_PERDEVICE, DP_ENGINE_POOLED};
    int r;
    for (r = 0; r < rounds; r++) {
        str_ctx *c = (str_ctx *)calloc(1, sizeof *c);
        str_waiter w[STR_WAITERS];
        pthread_t wt[STR_WAITERS], pt, pu, wd;
        int i, k;
        if (!c) { CHECK(0); return; }
        c->e = make_with(types[r % 2], workers, workers == DP_NO_THREADS ? DP_NO_THREADS : 1, DP_NO_THREADS, 0);
        CHECK(c->e != NULL);
        if (!c->e) { free(c); return; }
        c->pump = pump;
        for (k = 0; k < STR_WAITERS; k++)
            for (i = 0; i < STR_OPS; i++) {
                dp_var g = dp_var_create(c->e);
                c->v[k][i] = dp_var_create(c->e);
                CHECK(dp_push_async(c->e, async_start, &c->a[k][i], NULL, 0, &g, 1) == DP_OK);
                CHECK(dp_push_sync(c->e, str_inc, &c->n[k][i], &g, 1, &c->v[k][i], 1) == DP_OK);
            }
        CHECK(pthread_create(&wd, NULL, str_watchdog, c) == 0);
        CHECK(pthread_create(&pu, NULL, str_pump_thread, c) == 0);
        for (k = 0; k < STR_WAITERS; k++) { w[k].c = c; w[k].k = k; CHECK(pthread_create(&wt[k], NULL, str_wait_thread, &w[k]) == 0); }
        CHECK(pthread_create(&pt, NULL, str_push_thread, c) == 0);
        pthread_join(pt, NULL);
        for (k = 0; k < STR_WAITERS; k++) pthread_join(wt[k], NULL);
        CHECK(!__atomic_load_n(&c->rescued, __ATOMIC_ACQUIRE));
        if (__atomic_load_n(&c->rescued, __ATOMIC_ACQUIRE)) fprintf(stderr, "  round %d (workers %d, pump %d): a wait was rescued\n", r, workers, pump);
        __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
        pthread_join(pu, NULL);
        pthread_join(wd, NULL);
        CHECK(dp_engine_destroy(c->e, NULL) == DP_OK);
        free(c);
    }
}
static void test_stress_pumped_waits(void) { stress_rounds(DP_NO_THREADS, 1, 6); stress_rounds(DP_NO_THREADS, 0, 6); }

/* One worker; STR_FAN gates on the worker each make STR_FAN ops ready on
   completion (its deque), which make more ready: several threads wait on
   leaves and on everything at once, stealing and sleeping counted in
   help_asleep; every wait finishes (the watchdog rescue cannot run ops the
   worker has, so a hang here is caught by the 5 s flag and the join) and
   every op ran once. */
#define STR_FAN 24
static long g_fan_ran;
static int str_fan_op(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; __atomic_add_fetch(&g_fan_ran, 1, __ATOMIC_ACQ_REL); return 0; }
typedef struct fan_waiter { dp_engine *e; dp_var *leaves; int k; } fan_waiter;
static void *fan_wait_thread(void *p) {
    fan_waiter *f = (fan_waiter *)p;
    int i;
    for (i = f->k; i < STR_FAN * STR_FAN; i += 5) { dp_result rr = dp_wait_var(f->e, f->leaves[i], NULL); if (rr != DP_OK) { fprintf(stderr, "  wait_var %d: %d\n", i, (int)rr); CHECK(0); } }
    if (f->k % 2 && dp_wait_all(f->e, NULL) != DP_OK) CHECK(0);
    return NULL;
}
static void test_stress_fanout_one_worker(void) {
    dp_engine_type types[2] = {DP_ENGINE_PERDEVICE, DP_ENGINE_POOLED};
    int r;
    for (r = 0; r < 8; r++) {
        dp_engine *e = make_with(types[r % 2], 1, 1, DP_NO_THREADS, DP_WAIT_HELP_ALWAYS);   /* the helping path, on any machine */
        static dp_var mid[STR_FAN], leaves[STR_FAN * STR_FAN];
        dp_var root;
        fan_waiter f[4];
        pthread_t th[4];
        int i, j, k;
        if (!e) { CHECK(0); return; }
        __atomic_store_n(&g_fan_ran, 0, __ATOMIC_RELEASE);
        root = dp_var_create(e);
        for (k = 0; k < 4; k++) { f[k].e = e; f[k].leaves = leaves; f[k].k = k; }
        for (i = 0; i < STR_FAN; i++) mid[i] = dp_var_create(e);
        for (i = 0; i < STR_FAN * STR_FAN; i++) leaves[i] = dp_var_create(e);
        for (k = 0; k < 2; k++) CHECK(pthread_create(&th[k], NULL, fan_wait_thread, &f[k]) == 0);
        CHECK(dp_push_sync(e, str_fan_op, NULL, NULL, 0, &root, 1) == DP_OK);
        for (i = 0; i < STR_FAN; i++) {
            CHECK(dp_push_sync(e, str_fan_op, NULL, &root, 1, &mid[i], 1) == DP_OK);
            for (j = 0; j < STR_FAN; j++) CHECK(dp_push_sync(e, str_fan_op, NULL, &mid[i], 1, &leaves[i * STR_FAN + j], 1) == DP_OK);
        }
        for (k = 2; k < 4; k++) CHECK(pthread_create(&th[k], NULL, fan_wait_thread, &f[k]) == 0);
        for (k = 0; k < 4; k++) pthread_join(th[k], NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_fan_ran, __ATOMIC_ACQUIRE) == 1 + STR_FAN + STR_FAN * STR_FAN);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

int main(void) {
    static const test_case tests[] = {
        {"stress: waits on an engine without workers while another thread pushes and one pumps", test_stress_pumped_waits},
        {"stress: waits on one busy worker while its completions fan out", test_stress_fanout_one_worker},
        {"the waiting thread steals ready ops from a busy worker's deque (per-device)", test_waiting_thread_steals_perdevice},
        {"the waiting thread steals ready ops from a busy worker's deque (pooled)", test_waiting_thread_steals_pooled},
        {"no workers: an untimed wait sleeps until an op is ready, not in slices", test_pumped_wait_sleeps_until_woken},
        {"a helping wait inside a naive engine's op runs the wait blocks it grants to other threads", test_helping_wait_inside_naive_op_grants_other_waits},
        {"the waiting thread runs ready ops while the worker is busy; not with no_wait_help (per-device)", test_waiting_thread_helps_perdevice},
        {"the waiting thread runs ready ops while the worker is busy; not with no_wait_help (pooled)", test_waiting_thread_helps_pooled},
        {"a helping wait stops as soon as its variable is ready", test_helping_wait_stops_when_done},
        {"a wait with a worker on every CPU sleeps; DP_WAIT_HELP_ALWAYS helps anyway (per-device)", test_wait_helps_only_with_a_core_perdevice},
        {"a wait with a worker on every CPU sleeps; DP_WAIT_HELP_ALWAYS helps anyway (pooled)", test_wait_helps_only_with_a_core_pooled},
        {"a wait inside another engine's op does not run ops nested in it", test_wait_inside_op_does_not_help},
        {"a timed wait runs no ops (a poller may feed the op it would run)", test_timed_wait_does_not_help},
        {"a wait leaves ready ops to idle workers", test_wait_leaves_ops_to_idle_workers},
        {"frame loop: per-device engine without threads, 60 frames pumped with a 2 ms budget", test_frame_loop_perdevice},
        {"frame loop: pooled engine without threads, 60 frames pumped with a 2 ms budget", test_frame_loop_pooled},
        {"no workers: the waits and destroy run the ops (per-device)", test_waits_run_ops_perdevice},
        {"no workers: the waits and destroy run the ops (pooled)", test_waits_run_ops_pooled},
        {"no workers: a sleeping wait is woken by an op made ready elsewhere", test_wait_woken_by_async_completion},
        {"no workers: threads push and wait while another pumps", test_threads_pump_and_wait},
        {"no workers: a wait from an op a naive engine drains runs its own block", test_naive_op_waits_on_engine_without_workers},
        {"dp_run_ready: max_ops, until, budget, idle, naive", test_run_ready_limits},
        {"dp_run_ready: bad calls refused; DP_NO_THREADS only where allowed", test_run_ready_errors},
        {"0 priority and 0 IO threads: their ops run on the CPU workers, in order", test_no_priority_no_io_threads},
        {"no threads: prioritized and IO ops run in the pump", test_no_threads_mixed_ops},
    };
    dp_test_hook_fn = test_hook;   /* before any engine starts a thread */
    return run_tests("frame", tests, (int)(sizeof tests / sizeof tests[0]));
}
