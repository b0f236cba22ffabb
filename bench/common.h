/* bench/common.h - what every benchmark driver shares: the workloads of
   bench/WORKLOADS.md (W4's draws, body and check), the clock, and
   the report line. Each driver (depeng, OpenMP, StarPU, sequential) includes
   this file, so the systems run byte-for-byte the same task bodies. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_N        1000000    /* W1, W2, W4 tasks                       */
#define BENCH_W3_ROUNDS 10000     /* W3: rounds of 1 writer + 64 readers     */
#define BENCH_W3_FAN   64
#define BENCH_W4_VARS  256
#define BENCH_W4_LOOPS 100        /* W4 body's LCG steps (~100 ns)           */
#define BENCH_REPS     5          /* timed repetitions after one warm-up     */

/* Defined once per program (in the driver, with BENCH_IMPLEMENTATION) so the
   call is never inlined into the loop that submits tasks. */
void empty_body(void);
#ifdef BENCH_IMPLEMENTATION
#if defined(__GNUC__)
__attribute__((noinline))
#endif
void empty_body(void) { __asm__ volatile("" ::: "memory"); }
#endif

static inline double bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- W4: the random DAG ---------------------------------------------- */
static inline uint64_t bench_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline uint64_t bench_splitmix(uint64_t *state) {
    *state += 0x9E3779B97F4A7C15ull;
    return bench_mix64(*state);
}
static inline uint64_t bench_hash(uint64_t a, uint64_t b, uint64_t i) {
    uint64_t h = bench_mix64(i + 0x9E3779B97F4A7C15ull);
    h = bench_mix64(h ^ a);
    return bench_mix64(h ^ b);
}

/* One task of W4: val[w] = hash(val[r1], val[r2], i); reads lists the
   distinct reads other than w (0, 1 or 2 of them). */
typedef struct bench_w4_task {
    uint32_t i;
    uint8_t r1, r2, w;
    uint8_t nreads;
    uint8_t reads[2];
} bench_w4_task;

/* Draws the N tasks (outside the timed region). Caller frees. */
static inline bench_w4_task *bench_w4_generate(uint32_t n) {
    bench_w4_task *t = (bench_w4_task *)malloc(sizeof *t * (n ? n : 1));
    uint64_t s = 42;
    if (!t) { fprintf(stderr, "bench: out of memory\n"); exit(2); }
    for (uint32_t i = 0; i < n; i++) {
        bench_w4_task *k = &t[i];
        k->i = i;
        k->r1 = (uint8_t)(bench_splitmix(&s) % BENCH_W4_VARS);
        k->r2 = (uint8_t)(bench_splitmix(&s) % BENCH_W4_VARS);
        k->w = (uint8_t)(bench_splitmix(&s) % BENCH_W4_VARS);
        k->nreads = 0;
        if (k->r1 != k->w) k->reads[k->nreads++] = k->r1;
        if (k->r2 != k->w && k->r2 != k->r1) k->reads[k->nreads++] = k->r2;
    }
    return t;
}

/* The body: fixed work, then the update. loops = the LCG step count. */
static inline void bench_w4_body(uint64_t *val, const bench_w4_task *k, int loops) {
    volatile uint64_t x = k->i;
    for (int j = 0; j < loops; j++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    val[k->w] = bench_hash(val[k->r1], val[k->r2], k->i);
}

static inline void bench_w4_init(uint64_t *val) {
    for (int k = 0; k < BENCH_W4_VARS; k++) val[k] = (uint64_t)k;
}
static inline uint64_t bench_w4_fold(const uint64_t *val) {
    uint64_t h = 0;
    for (int k = 0; k < BENCH_W4_VARS; k++) h = bench_mix64(h ^ val[k]);
    return h;
}
/* The sequential result every system is checked against. */
static inline void bench_w4_reference(uint64_t *val, const bench_w4_task *t, uint32_t n, int loops) {
    bench_w4_init(val);
    for (uint32_t i = 0; i < n; i++) bench_w4_body(val, &t[i], loops);
}
/* Prints FAIL and returns 1 when val differs from ref. */
static inline int bench_w4_check(const char *system, const char *work,
                                 const uint64_t *val, const uint64_t *ref) {
    if (memcmp(val, ref, sizeof(uint64_t) * BENCH_W4_VARS) == 0) return 0;
    printf("FAIL %s system=%s: values differ from the sequential run\n", work, system);
    return 1;
}

/* W5 loop counts for ~1 us and ~10 us bodies: calibrated once per program. */
static inline int bench_calibrate_loops(double target_ns) {
    volatile uint64_t x = 1;
    int loops = 1000000;
    double t0 = bench_now_ns();
    for (int j = 0; j < loops; j++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    double per = (bench_now_ns() - t0) / loops;
    (void)x;
    int n = (int)(target_ns / (per > 0 ? per : 1));
    return n < 1 ? 1 : n;
}

/* W5: task counts (smaller than W4's: the bodies are 10x and 100x longer)
   and body loop counts, the same for every system: BENCH_W5_LOOPS="A,B"
   when set (bench/run.sh passes the first driver's on), else calibrated. */
#define BENCH_W5_1US_N  100000
#define BENCH_W5_10US_N 20000
static inline void bench_w5_loops(int *l1, int *l10) {
    const char *e = getenv("BENCH_W5_LOOPS");
    if (e && sscanf(e, "%d,%d", l1, l10) == 2 && *l1 > 0 && *l10 > 0) return;
    *l1 = bench_calibrate_loops(1000.0);
    *l10 = bench_calibrate_loops(10000.0);
}

/* ---- reporting ------------------------------------------------------- */
static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* One line per (workload, system): median, min and max over reps (ns/task).
   n is the task count used; note says why it differs from the workload's. */
static inline void bench_report(const char *work, const char *system, double *ns, int reps,
                                long n, const char *note) {
    qsort(ns, (size_t)reps, sizeof *ns, bench_cmp_double);
    printf("bench %s system=%s ns_per_task=%.1f min=%.1f max=%.1f reps=%d n=%ld%s%s\n",
           work, system, ns[reps / 2], ns[0], ns[reps - 1], reps, n,
           note ? " note=" : "", note ? note : "");
    fflush(stdout);
}
#endif
