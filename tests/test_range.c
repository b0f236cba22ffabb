/* dp_parallel_for: ranges split over the engine's idle CPU workers and the
   caller. Every index runs exactly once, chunk boundaries are what the
   header says (deterministic ones from n and grain only), calls nest inside
   ops and inside chunks on every engine kind, many threads call at once,
   busy workers are not waited for, and slow chunks are taken over by idle
   workers. The last line is "N passed, M failed". */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "depeng.h"
#include "tests/test_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

/* Under ASan, a helper that touched a range after its caller returned is a
   stack-use-after-return (the range lives on the caller's stack): have ASan
   look for it. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RANGE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(RANGE_ASAN)
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_stack_use_after_return=1"; }
#endif

static dp_engine *make(dp_engine_type type, int workers) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = workers; d.ignore_env = 1; d.logger.func = quiet_logger;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}
static void sleep_us(long us) {
    struct timespec ts;
    ts.tv_sec = us / 1000000; ts.tv_nsec = (us % 1000000) * 1000;
    nanosleep(&ts, NULL);
}

/* Counts every index's runs and checks every chunk's shape. */
typedef struct {
    int64_t n, size;          /* size: the expected chunk size, 0: not checked */
    int *hits;
    int bad_chunks, chunks;
    long us;                  /* sleep this long in chunks whose index is a multiple of 5 */
} count_job;
static void count_fn(int64_t b, int64_t e, void *u) {
    count_job *j = (count_job *)u;
    int64_t i;
    if (b < 0 || e > j->n || b >= e) __atomic_fetch_add(&j->bad_chunks, 1, __ATOMIC_RELAXED);
    if (j->size && (b % j->size != 0 || e != (j->n - b < j->size ? j->n : b + j->size))) __atomic_fetch_add(&j->bad_chunks, 1, __ATOMIC_RELAXED);
    for (i = b; i < e && i < j->n; i++) __atomic_fetch_add(&j->hits[i], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&j->chunks, 1, __ATOMIC_RELAXED);
    if (j->us && j->size && (b / j->size) % 5 == 0) sleep_us(j->us);
}
/* Runs one range and checks it; 0 when right. */
static int run_count(dp_engine *e, int64_t n, int64_t grain, int det, long us) {
    count_job j;
    dp_range_desc d;
    int64_t i, s = det ? (grain ? grain : n / 256 + (n % 256 != 0)) : 0;
    int ok = 1;
    memset(&j, 0, sizeof j);
    j.n = n; j.size = det && n ? (s < 1 ? 1 : s) : 0; j.us = us;
    j.hits = (int *)calloc((size_t)(n ? n : 1), sizeof(int));
    memset(&d, 0, sizeof d);
    d.n = n; d.grain = grain; d.fn = count_fn; d.user = &j; d.deterministic = det;
    if (dp_parallel_for(e, &d) != DP_OK) ok = 0;
    for (i = 0; i < n; i++) if (j.hits[i] != 1) ok = 0;
    if (j.bad_chunks) ok = 0;
    if (n == 0 && j.chunks != 0) ok = 0;
    if (det && n && j.chunks != n / j.size + (n % j.size != 0)) ok = 0;
    free(j.hits);
    return ok ? 0 : 1;
}

static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};

/* ---- correctness --------------------------------------------------------- */
static void test_every_index_once(void) {
    static const int64_t ns[] = {0, 1, 2, 7, 63, 64, 65, 255, 256, 257, 1000, 100003};
    static const int64_t grains[] = {0, 1, 3, 64, 1000000};
    int k, a, b, det, w;
    for (k = 0; k < 3; k++)
        for (w = 1; w <= 3; w += 2) {
            dp_engine *e = make(kinds[k], w);
            CHECK(e != NULL);
            if (!e) continue;
            for (a = 0; a < (int)(sizeof ns / sizeof ns[0]); a++)
                for (b = 0; b < (int)(sizeof grains / sizeof grains[0]); b++)
                    for (det = 0; det < 2; det++) CHECK(run_count(e, ns[a], grains[b], det, 0) == 0);
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        }
}

static void test_errors(void) {
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2);
    dp_range_desc d;
    count_job j;
    memset(&d, 0, sizeof d); memset(&j, 0, sizeof j);
    d.n = 10; d.fn = count_fn; d.user = &j;
    CHECK(e != NULL);
    g_last_item = 0;
    CHECK(dp_parallel_for(NULL, &d) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_parallel_for(e, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_NULL_ARGUMENT);
    d.fn = NULL; g_last_item = 0;
    CHECK(dp_parallel_for(e, &d) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_NULL_ARGUMENT);
    d.fn = count_fn; d.n = -1; g_last_item = 0;
    CHECK(dp_parallel_for(e, &d) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_NEGATIVE_COUNT);
    d.n = 10; d.grain = -3; g_last_item = 0;
    CHECK(dp_parallel_for(e, &d) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_NEGATIVE_COUNT);
    CHECK(j.chunks == 0);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* A reduction with one partial per deterministic chunk, combined in chunk
   order: bitwise the same on every engine and worker count. */
typedef struct { int64_t size; double *part; } red_job;
static void red_fn(int64_t b, int64_t e, void *u) {
    red_job *r = (red_job *)u;
    double s = 0;
    int64_t i;
    for (i = b; i < e; i++) s += 1.0 / (double)(i + 1) * ((i & 1) ? -1.0 : 1.0) + 1e-3 * (double)(i % 7);
    r->part[b / r->size] = s;
}
static double reduce(dp_engine *e, int64_t n, int64_t grain) {
    red_job r;
    dp_range_desc d;
    int64_t k, nch;
    double s = 0;
    r.size = grain ? grain : n / 256 + (n % 256 != 0);
    nch = n / r.size + (n % r.size != 0);
    r.part = (double *)calloc((size_t)nch, sizeof(double));
    memset(&d, 0, sizeof d);
    d.n = n; d.grain = grain; d.fn = red_fn; d.user = &r; d.deterministic = 1;
    CHECK(dp_parallel_for(e, &d) == DP_OK);
    for (k = 0; k < nch; k++) s += r.part[k];
    free(r.part);
    return s;
}
static void test_deterministic_reduction(void) {
    double ref[2] = {0, 0};
    int k, w, g, first = 1;
    for (k = 0; k < 3; k++)
        for (w = 1; w <= 4; w++) {
            dp_engine *e = make(kinds[k], w);
            CHECK(e != NULL);
            if (!e) continue;
            for (g = 0; g < 2; g++) {
                double s = reduce(e, 200001, g ? 977 : 0);
                if (first) ref[g] = s;
                else CHECK(memcmp(&s, &ref[g], sizeof s) == 0);
            }
            first = 0;
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        }
}

/* ---- nesting --------------------------------------------------------------- */
typedef struct { dp_engine *e; int fails; } nest_ctx;
static nest_ctx g_nest;
static void inner_fn(int64_t b, int64_t e, void *u) {
    /* a range inside a chunk: itself split again */
    if (run_count(g_nest.e, 37 + (e - b) % 50, 0, (int)(b & 1), 0)) __atomic_fetch_add(&g_nest.fails, 1, __ATOMIC_RELAXED);
    (void)u;
}
static int nested_op(dp_run_ctx *rc, void *arg) {
    dp_range_desc d;
    (void)rc;
    if (run_count(g_nest.e, 5000 + (int64_t)(intptr_t)arg, 0, 0, 0)) __atomic_fetch_add(&g_nest.fails, 1, __ATOMIC_RELAXED);
    memset(&d, 0, sizeof d);
    d.n = 8; d.grain = 1; d.fn = inner_fn;
    if (dp_parallel_for(g_nest.e, &d) != DP_OK) __atomic_fetch_add(&g_nest.fails, 1, __ATOMIC_RELAXED);
    return 0;
}
static void test_nested_in_ops(void) {
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make(kinds[k], 2);
        dp_var v[8];
        CHECK(e != NULL);
        if (!e) continue;
        g_nest.e = e; g_nest.fails = 0;
        for (i = 0; i < 8; i++) v[i] = dp_var_create(e);
        for (i = 0; i < 64; i++)   /* chains on 8 variables: up to 8 ops, each splitting, at once */
            CHECK(dp_push_sync(e, nested_op, (void *)(intptr_t)i, NULL, 0, &v[i % 8], 1) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(g_nest.fails == 0);
        for (i = 0; i < 8; i++) CHECK(dp_var_delete(e, v[i]) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- many callers ---------------------------------------------------------- */
typedef struct { dp_engine *e; int id, fails; } caller_arg;
static void *caller_main(void *p) {
    caller_arg *a = (caller_arg *)p;
    int i;
    for (i = 0; i < 60; i++)
        a->fails += run_count(a->e, 1000 + 97 * ((i + a->id) % 13), (i % 3) * 7, i & 1, 0);
    return NULL;
}
static void test_many_callers(void) {
    int k, i;
    for (k = 1; k < 3; k++) {
        dp_engine *e = make(kinds[k], 2);
        pthread_t t[8];
        caller_arg a[8];
        CHECK(e != NULL);
        if (!e) continue;
        for (i = 0; i < 8; i++) { a[i].e = e; a[i].id = i; a[i].fails = 0; CHECK(pthread_create(&t[i], NULL, caller_main, &a[i]) == 0); }
        for (i = 0; i < 8; i++) { pthread_join(t[i], NULL); CHECK(a[i].fails == 0); }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- busy and slow ------------------------------------------------------------ */
static int g_release;
static int blocker(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    while (!__atomic_load_n(&g_release, __ATOMIC_ACQUIRE)) sleep_us(200);
    return 0;
}
/* The only worker is busy in an op that waits for the caller: the range
   must finish on the caller alone. */
static void test_busy_workers_not_waited_for(void) {
    int k;
    for (k = 1; k < 3; k++) {
        dp_engine *e = make(kinds[k], 1);
        dp_var v;
        CHECK(e != NULL);
        if (!e) continue;
        v = dp_var_create(e);
        __atomic_store_n(&g_release, 0, __ATOMIC_RELEASE);
        CHECK(dp_push_sync(e, blocker, NULL, NULL, 0, &v, 1) == DP_OK);
        sleep_us(2000);                                  /* let the worker start it */
        CHECK(run_count(e, 100000, 10, 1, 0) == 0);
        CHECK(run_count(e, 100000, 0, 0, 0) == 0);
        __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}
/* Slow chunks (every fifth sleeps 1 ms): the result is right, and idle
   workers take chunks, so the caller does not run them all. */
typedef struct { pthread_t caller; int off_caller; int64_t n; int *hits; } who_job;
static void who_fn(int64_t b, int64_t e, void *u) {
    who_job *j = (who_job *)u;
    int64_t i;
    if (!pthread_equal(pthread_self(), j->caller)) __atomic_fetch_add(&j->off_caller, 1, __ATOMIC_RELAXED);
    for (i = b; i < e; i++) __atomic_fetch_add(&j->hits[i], 1, __ATOMIC_RELAXED);
    if (b % 5 == 0) sleep_us(1000);
}
static void test_slow_chunks_helped(void) {
    int k;
    for (k = 1; k < 3; k++) {
        dp_engine *e = make(kinds[k], 2);
        dp_range_desc d;
        who_job j;
        int64_t i;
        CHECK(e != NULL);
        if (!e) continue;
        CHECK(run_count(e, 400, 4, 1, 500) == 0);
        memset(&j, 0, sizeof j);
        j.caller = pthread_self(); j.n = 200;
        j.hits = (int *)calloc(200, sizeof(int));
        memset(&d, 0, sizeof d);
        d.n = 200; d.grain = 1; d.fn = who_fn; d.user = &j; d.deterministic = 1;
        CHECK(dp_parallel_for(e, &d) == DP_OK);
        for (i = 0; i < 200; i++) CHECK(j.hits[i] == 1);
        CHECK(j.off_caller > 0);
        free(j.hits);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

int main(void) {
    static const test_case tests[] = {
        {"every index once, chunk shapes, n 0 and 1, grain over n, every engine", test_every_index_once},
        {"bad arguments refused and logged, nothing run", test_errors},
        {"deterministic chunks: a reduction bitwise the same on every engine and worker count", test_deterministic_reduction},
        {"ranges inside ops and inside chunks, every engine", test_nested_in_ops},
        {"eight threads calling at once (more than the slots)", test_many_callers},
        {"a busy worker is not waited for: the caller runs the range", test_busy_workers_not_waited_for},
        {"slow chunks: right result, idle workers take chunks", test_slow_chunks_helped},
    };
    return run_tests("range", tests, (int)(sizeof tests / sizeof tests[0]));
}
