/* bench/omp.c - OpenMP tasks as a peer of depeng in `make bench`
   (system=openmp; gcc -fopenmp, i.e. libgomp).

   Each workload of bench/WORKLOADS.md is one producer inside
   `#pragma omp parallel` + `#pragma omp single`: the thread running the
   single region creates the tasks in submission order with depend(inout:)
   for RW data and depend(in:) for R data, then `#pragma omp taskwait`.
   Two threads in the team (omp_set_num_threads(2)): the producer and one
   other; the producer also runs tasks at the taskwait and whenever libgomp
   throttles task creation (more than 64 queued tasks per thread).

   The timed region starts inside the single region, so the team's
   start-up (thread creation on the first region, wake-up on later ones)
   is not timed. A warm-up repetition runs first, as everywhere.

   libgomp's W4 (random DAG, 256 data) and W3 (fan-out) are far too slow at
   their full N: the cost per task grows within a repetition (see OMP_W4_N
   and OMP_W3_N below), so they run with a smaller N and say so in the
   report's note. -n N overrides every N
   (W5: only downwards; see bench/seq.c).

   Usage: bench_omp [-n N] [W1 W2 W3 W4 W5 W5-1us W5-10us ...] (default all).
   BENCH_W5_LOOPS="A,B" fixes W5's loop counts (see bench/seq.c). */
#define BENCH_IMPLEMENTATION
#include "bench/common.h"
#include <omp.h>


#define SYSTEM "openmp"

enum { WL_W1, WL_W2, WL_W3, WL_W4, WL_W5_1, WL_W5_10, WL_COUNT };
static const char *const wl_name[WL_COUNT] = {"W1", "W2", "W3", "W4", "W5-1us", "W5-10us"};
static const long wl_nominal[WL_COUNT] = {
    BENCH_N, BENCH_N, (long)BENCH_W3_ROUNDS * (BENCH_W3_FAN + 1), BENCH_N,
    BENCH_W5_1US_N, BENCH_W5_10US_N};

/* ---- command line (the same small parser in every peer driver) -------- */
static int wl_on[WL_COUNT];
static long opt_n = 0; /* 0: each workload's own N */

static void usage(const char *prog) {
    fprintf(stderr, "usage: %s [-n N] [W1 W2 W3 W4 W5 W5-1us W5-10us ...]\n", prog);
    exit(2);
}
static void parse_args(int argc, char **argv) {
    int any = 0;
    for (int a = 1; a < argc; a++) {
        const char *s = argv[a];
        if (strcmp(s, "-n") == 0 && a + 1 < argc) {
            char *end;
            opt_n = strtol(argv[++a], &end, 10);
            if (*end || opt_n < 1) usage(argv[0]);
            continue;
        }
        if (strcmp(s, "W2-op") == 0) { /* depeng's pre-created op: no peer equivalent */
            printf("# W2-op: not applicable to system=%s (depeng only)\n", SYSTEM);
            any = 1;
            continue;
        }
        if (strcmp(s, "W5") == 0) { wl_on[WL_W5_1] = wl_on[WL_W5_10] = 1; any = 1; continue; }
        int k = 0;
        while (k < WL_COUNT && strcmp(s, wl_name[k]) != 0) k++;
        if (k == WL_COUNT) usage(argv[0]);
        wl_on[k] = 1;
        any = 1;
    }
    if (!any)
        for (int k = 0; k < WL_COUNT; k++) wl_on[k] = 1;
}
/* n for workload k (W3: rounded down to whole rounds), and the note that
   bench_report prints when it differs from the workload's definition. */
static long wl_n(int k, long dflt) {
    long n = opt_n ? opt_n : dflt;
    if ((k == WL_W5_1 || k == WL_W5_10) && n > dflt) n = dflt; /* -n only lowers W5's N */
    if (k == WL_W3) {
        long r = n / (BENCH_W3_FAN + 1);
        n = (r < 1 ? 1 : r) * (BENCH_W3_FAN + 1);
    }
    return n;
}
static const char *wl_note(int k, long n, char *buf, size_t len) {
    if (n == wl_nominal[k]) return NULL;
    snprintf(buf, len, "N_scaled_from_%ld", wl_nominal[k]);
    return buf;
}

/* ---- workloads --------------------------------------------------------- */
/* Default N per workload for this system: the workload's own N except where
   libgomp is too slow for the run to fit the `make bench` budget.
   W4: measured with gcc 12's libgomp on the 2-core machine, the cost per
   task grows with the number of tasks already submitted in the same
   taskwait region (75% of the time inside libgomp's own bookkeeping, per
   perf): 50,000-task slices of one 1e6 repetition went from 0.06 s to 13 s,
   and single repetitions took 60-100 s. The first 100,000 tasks run at
   ~1.1-1.6 us/task, so W4 uses N = 100,000 (reported with a note). */
#ifndef OMP_W4_N
#define OMP_W4_N 100000
#endif
/* W3: the same growth. Four make bench runs on this machine gave medians of
   2.5, 13, 49 and 60 us per task at 650,000 tasks (max 84 us: 55 s for one
   repetition), which alone could break make bench's 10-minute budget. W3
   uses 2,000 rounds (130,000 tasks), reported with a note; a smaller N only
   flatters libgomp here, so the ratio against it stays conservative. */
#ifndef OMP_W3_N
#define OMP_W3_N (2000L * (BENCH_W3_FAN + 1))
#endif
static const long omp_default_n[WL_COUNT] = {
    BENCH_N, BENCH_N, OMP_W3_N, OMP_W4_N,
    BENCH_W5_1US_N, BENCH_W5_10US_N};

/* Each run_* is one repetition and returns ns per task. t0/t1 are declared
   outside the parallel region, so they are shared and the single thread's
   stores are visible after the region's implicit barrier. */
static double run_w1(long n) {
    double t0 = 0, t1 = 0;
#pragma omp parallel
#pragma omp single
    {
        t0 = bench_now_ns();
        for (long i = 0; i < n; i++) {
#pragma omp task
            empty_body();
        }
#pragma omp taskwait
        t1 = bench_now_ns();
    }
    return (t1 - t0) / (double)n;
}

/* The datums are only addresses for depend(); the empty bodies never touch
   them. Static so every repetition uses the same storage. */
static uint64_t w2_d;
static double run_w2(long n) {
    double t0 = 0, t1 = 0;
#pragma omp parallel
#pragma omp single
    {
        t0 = bench_now_ns();
        for (long i = 0; i < n; i++) {
#pragma omp task depend(inout: w2_d)
            empty_body();
        }
#pragma omp taskwait
        t1 = bench_now_ns();
    }
    return (t1 - t0) / (double)n;
}

static uint64_t w3_x, w3_y[BENCH_W3_FAN];
static double run_w3(long n) {
    long rounds = n / (BENCH_W3_FAN + 1);
    double t0 = 0, t1 = 0;
#pragma omp parallel
#pragma omp single
    {
        t0 = bench_now_ns();
        for (long r = 0; r < rounds; r++) {
#pragma omp task depend(inout: w3_x)
            empty_body();
            for (int j = 0; j < BENCH_W3_FAN; j++) {
#pragma omp task depend(in: w3_x) depend(inout: w3_y[j])
                empty_body();
            }
        }
#pragma omp taskwait
        t1 = bench_now_ns();
    }
    return (t1 - t0) / (double)n;
}

/* W4/W5: val[] is shared; each task gets its bench_w4_task by pointer
   (firstprivate). A depend list cannot vary in length, so there is one
   task construct per read count (0, 1 or 2 distinct reads other than w). */
static uint64_t val[BENCH_W4_VARS];
static double run_w4(const bench_w4_task *t, long n, int loops) {
    double t0 = 0, t1 = 0;
    bench_w4_init(val); /* outside the timed region */
#pragma omp parallel
#pragma omp single
    {
        t0 = bench_now_ns();
        for (long i = 0; i < n; i++) {
            const bench_w4_task *k = &t[i];
            switch (k->nreads) {
            case 0:
#pragma omp task firstprivate(k) depend(inout: val[k->w])
                bench_w4_body(val, k, loops);
                break;
            case 1:
#pragma omp task firstprivate(k) depend(inout: val[k->w]) depend(in: val[k->reads[0]])
                bench_w4_body(val, k, loops);
                break;
            default:
#pragma omp task firstprivate(k) depend(inout: val[k->w]) \
                 depend(in: val[k->reads[0]], val[k->reads[1]])
                bench_w4_body(val, k, loops);
                break;
            }
        }
#pragma omp taskwait
        t1 = bench_now_ns();
    }
    return (t1 - t0) / (double)n;
}

static int failures = 0;
/* BENCH_VERBOSE=1 prints every repetition's figure (rep -1: warm-up) to stderr. */
static int verbose = 0;
static void rep_note(int k, int r, double x) {
    if (verbose) fprintf(stderr, "# %s system=%s rep %d: %.1f ns/task\n", wl_name[k], SYSTEM, r, x);
}

static void bench_simple(int k, double (*run)(long)) {
    double ns[BENCH_REPS];
    char note[64];
    long n = wl_n(k, omp_default_n[k]);
    rep_note(k, -1, run(n)); /* warm-up */
    for (int r = 0; r < BENCH_REPS; r++) rep_note(k, r, ns[r] = run(n));
    bench_report(wl_name[k], SYSTEM, ns, BENCH_REPS, n, wl_note(k, n, note, sizeof note));
}

static void bench_dag(int k, int loops) {
    double ns[BENCH_REPS];
    uint64_t ref[BENCH_W4_VARS];
    char note[64];
    long n = wl_n(k, omp_default_n[k]);
    bench_w4_task *t = bench_w4_generate((uint32_t)n);
    bench_w4_reference(ref, t, (uint32_t)n, loops);
    for (int r = -1; r < BENCH_REPS; r++) { /* r = -1: warm-up */
        double x = run_w4(t, n, loops);
        failures += bench_w4_check(SYSTEM, wl_name[k], val, ref); /* after every repetition */
        rep_note(k, r, x);
        if (r >= 0) ns[r] = x;
    }
    bench_report(wl_name[k], SYSTEM, ns, BENCH_REPS, n, wl_note(k, n, note, sizeof note));
    free(t);
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    verbose = getenv("BENCH_VERBOSE") != NULL;
    /* Two threads whatever OMP_NUM_THREADS says; no nested teams. */
    omp_set_num_threads(2);
    omp_set_dynamic(0);
    if (wl_on[WL_W1]) bench_simple(WL_W1, run_w1);
    if (wl_on[WL_W2]) bench_simple(WL_W2, run_w2);
    if (wl_on[WL_W3]) bench_simple(WL_W3, run_w3);
    if (wl_on[WL_W4]) bench_dag(WL_W4, BENCH_W4_LOOPS);
    if (wl_on[WL_W5_1] || wl_on[WL_W5_10]) {
        int l1, l10;
        bench_w5_loops(&l1, &l10);
        printf("# W5 loops 1us=%d 10us=%d system=%s\n", l1, l10, SYSTEM);
        fflush(stdout);
        if (wl_on[WL_W5_1]) bench_dag(WL_W5_1, l1);
        if (wl_on[WL_W5_10]) bench_dag(WL_W5_10, l10);
    }
    return failures ? 1 : 0;
}
