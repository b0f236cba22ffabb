/* bench/seq.c - the sequential floor for `make bench` (system=sequential),
   and W5's ceiling (system=two-threads-no-deps, see bench_ceiling below).

   No runtime at all: each workload of bench/WORKLOADS.md is run as
   a plain loop calling the task bodies in submission order, on the main
   thread. W1/W2/W3 are empty_body() calls (the dependencies of W2/W3 are
   trivially satisfied by running in order); W4/W5 call bench_w4_body.
   Every parallel system's W5 figure is divided by this driver's to get the
   speedup, and its W1-W3 figures show the cost of the bare call.

   Usage: bench_seq [-n N] [W1 W2 W3 W4 W5 W5-1us W5-10us ...] (default all).
   -n N overrides every workload's task count (quick tests; W3 uses N/65
   rounds; W5 uses the smaller of N and its own N, as bench/depeng.c does).
   BENCH_W5_LOOPS="A,B" in the environment fixes the W5 loop counts instead
   of calibrating them (bench/run.sh passes the first driver's counts on, so
   every system runs W5 with the same bodies). BENCH_VERBOSE=1 prints each
   repetition's figure to stderr. The other peer drivers (omp.c, starpu.c)
   share this command line and structure. */
#define BENCH_IMPLEMENTATION
#include "bench/common.h"
#include <pthread.h>


#define SYSTEM "sequential"

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
/* Each returns ns per task of one repetition. */
static double run_w1(long n) {
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) empty_body();
    return (bench_now_ns() - t0) / (double)n;
}
/* W2 is W1's loop: the chain's order is the loop's order. Kept separate so
   the report lines map one to one onto the workloads. */
static double run_w2(long n) {
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) empty_body();
    return (bench_now_ns() - t0) / (double)n;
}
static double run_w3(long n) {
    long rounds = n / (BENCH_W3_FAN + 1);
    double t0 = bench_now_ns();
    for (long r = 0; r < rounds; r++) {
        empty_body(); /* writer of X */
        for (int j = 0; j < BENCH_W3_FAN; j++) empty_body(); /* reader j: R X, RW Y_j */
    }
    return (bench_now_ns() - t0) / (double)n;
}
static uint64_t val[BENCH_W4_VARS];
static double run_w4(const bench_w4_task *t, long n, int loops) {
    bench_w4_init(val); /* outside the timed region */
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) bench_w4_body(val, &t[i], loops);
    return (bench_now_ns() - t0) / (double)n;
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
    long n = wl_n(k, wl_nominal[k]);
    rep_note(k, -1, run(n)); /* warm-up */
    for (int r = 0; r < BENCH_REPS; r++) rep_note(k, r, ns[r] = run(n));
    bench_report(wl_name[k], SYSTEM, ns, BENCH_REPS, n, wl_note(k, n, note, sizeof note));
}

static void bench_dag(int k, int loops) {
    double ns[BENCH_REPS];
    uint64_t ref[BENCH_W4_VARS];
    char note[64];
    long n = wl_n(k, wl_nominal[k]);
    bench_w4_task *t = bench_w4_generate((uint32_t)n);
    bench_w4_reference(ref, t, (uint32_t)n, loops);
    /* The spec's published fold for W4 catches a drift in common.h's draws
       or body (it holds only with the W4 body of 100 loops). */
    if (k == WL_W4 && loops == BENCH_W4_LOOPS && (n == 1000000 || n == 1000)) {
        uint64_t want = n == 1000000 ? 0xae2f725d99791cdfull : 0x475248eef56779cdull;
        uint64_t got = bench_w4_fold(ref);
        if (got != want) {
            printf("FAIL %s system=%s: reference fold 0x%016llx, spec says 0x%016llx\n",
                   wl_name[k], SYSTEM, (unsigned long long)got, (unsigned long long)want);
            failures++;
        }
    }
    for (int r = -1; r < BENCH_REPS; r++) { /* r = -1: warm-up */
        double x = run_w4(t, n, loops);
        failures += bench_w4_check(SYSTEM, wl_name[k], val, ref);
        rep_note(k, r, x);
        if (r >= 0) ns[r] = x;
    }
    bench_report(wl_name[k], SYSTEM, ns, BENCH_REPS, n, wl_note(k, n, note, sizeof note));
    free(t);
}

/* ---- W5's ceiling on this machine ---------------------------------------
   system=two-threads-no-deps: the same W5 bodies on two plain threads, each
   running half of them on its own value array: no engine, no dependencies,
   no shared cache lines. Its speedup over the sequential loop is the most
   any scheduler can reach here: two busy cores of a VM do not each run a
   body as fast as one core alone does. */
#define CEILING "two-threads-no-deps"
typedef struct { const bench_w4_task *t; long from, to; int loops; uint64_t val[BENCH_W4_VARS]; } half_run;
static void *run_half(void *p) {
    half_run *h = (half_run *)p;
    for (long i = h->from; i < h->to; i++) bench_w4_body(h->val, &h->t[i], h->loops);
    return NULL;
}
static double run_two_threads(const bench_w4_task *t, long n, int loops) {
    static half_run h[2];
    pthread_t th[2];
    for (int k = 0; k < 2; k++) {
        h[k].t = t; h[k].from = k * (n / 2); h[k].to = k ? n : n / 2; h[k].loops = loops;
        bench_w4_init(h[k].val);
    }
    double t0 = bench_now_ns();
    for (int k = 0; k < 2; k++)
        if (pthread_create(&th[k], NULL, run_half, &h[k])) { fprintf(stderr, "bench: pthread_create failed\n"); exit(2); }
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    return (bench_now_ns() - t0) / (double)n;
}
static void bench_ceiling(int k, int loops) {
    double ns[BENCH_REPS];
    char note[64];
    long n = wl_n(k, wl_nominal[k]);
    bench_w4_task *t = bench_w4_generate((uint32_t)n);
    run_two_threads(t, n, loops); /* warm-up */
    for (int r = 0; r < BENCH_REPS; r++) ns[r] = run_two_threads(t, n, loops);
    bench_report(wl_name[k], CEILING, ns, BENCH_REPS, n, wl_note(k, n, note, sizeof note));
    free(t);
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    verbose = getenv("BENCH_VERBOSE") != NULL;
    if (wl_on[WL_W1]) bench_simple(WL_W1, run_w1);
    if (wl_on[WL_W2]) bench_simple(WL_W2, run_w2);
    if (wl_on[WL_W3]) bench_simple(WL_W3, run_w3);
    if (wl_on[WL_W4]) bench_dag(WL_W4, BENCH_W4_LOOPS);
    if (wl_on[WL_W5_1] || wl_on[WL_W5_10]) {
        int l1, l10;
        bench_w5_loops(&l1, &l10);
        printf("# W5 loops 1us=%d 10us=%d system=%s\n", l1, l10, SYSTEM);
        fflush(stdout);
        if (wl_on[WL_W5_1]) { bench_dag(WL_W5_1, l1); bench_ceiling(WL_W5_1, l1); }
        if (wl_on[WL_W5_10]) { bench_dag(WL_W5_10, l10); bench_ceiling(WL_W5_10, l10); }
    }
    return failures ? 1 : 0;
}
