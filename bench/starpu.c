/* bench/starpu.c - StarPU 1.3 as a peer of depeng in `make bench`
   (system=starpu-eager and system=starpu-lws: one line per scheduler; both
   are peers and bench/run.sh picks the fastest).

   StarPU runs CPU workers only, two of them (starpu_conf: ncpus = 2, every
   accelerator count 0, taking precedence over STARPU_* variables); the main
   thread submits with starpu_task_insert() and ends each repetition with
   starpu_task_wait_for_all(). Dependencies are StarPU's implicit ones
   (sequential consistency in submission order, on by default), from the
   access modes given per task: STARPU_RW for RW, STARPU_R for R, on
   uint64_t datums registered with starpu_variable_data_register() outside
   the timed region. Tasks submitted by starpu_task_insert() are destroyed by
   StarPU as they terminate, so the timed region already includes freeing
   them.

   StarPU's per-task cost is a few microseconds, so every workload runs with
   a smaller N (STARPU_N below) and says so in the report's note; W5 keeps
   the common N. starpu_init() and starpu_shutdown() bracket each scheduler
   and are not timed. STARPU_HOME points at a temporary directory (removed at
   exit) so StarPU's bus samples and performance models never land in the
   repository or in $HOME; STARPU_SILENT=1 keeps its banner quiet.

   Usage: bench_starpu [-n N] [--sched eager,lws] [W1 W2 W3 W4 W5 ...]
   (default all). Exit status 77 when StarPU cannot start at all (printed
   as a "skipped:" line), 1 after a FAIL. BENCH_W5_LOOPS="A,B" fixes W5's loop counts (bench/seq.c). */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp, setenv */
#define BENCH_IMPLEMENTATION
#include "bench/common.h"
#include <ftw.h>
#include <stdarg.h>
#include <unistd.h>
#include <starpu.h>


#define SYSTEM "starpu" /* + "-" + scheduler in the report lines */

enum { WL_W1, WL_W2, WL_W3, WL_W4, WL_W5_1, WL_W5_10, WL_COUNT };
static const char *const wl_name[WL_COUNT] = {"W1", "W2", "W3", "W4", "W5-1us", "W5-10us"};
static const long wl_nominal[WL_COUNT] = {
    BENCH_N, BENCH_N, (long)BENCH_W3_ROUNDS * (BENCH_W3_FAN + 1), BENCH_N,
    BENCH_W5_1US_N, BENCH_W5_10US_N};

/* ---- command line (the same small parser in every peer driver) -------- */
static int wl_on[WL_COUNT];
static long opt_n = 0; /* 0: each workload's own N */
static const char *opt_sched = "eager,lws"; /* schedulers to run, in order */

static void usage(const char *prog) {
    fprintf(stderr, "usage: %s [-n N] [--sched eager,lws] [W1 W2 W3 W4 W5 W5-1us W5-10us ...]\n", prog);
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
        if (strcmp(s, "--sched") == 0 && a + 1 < argc) {
            opt_sched = argv[++a];
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
/* Default N for this system. StarPU costs ~2-7 us per task here, so 1e6
   tasks x 6 repetitions x 2 schedulers would take minutes per workload. */
#ifndef STARPU_N
#define STARPU_N 100000
#endif
static const long starpu_default_n[WL_COUNT] = {
    STARPU_N, STARPU_N, STARPU_N, STARPU_N, BENCH_W5_1US_N, BENCH_W5_10US_N};

static char sysname[64]; /* "starpu-<scheduler>" */

/* Codelets. The empty ones serve W1 (no data), W2 (RW d) and W3 (RW X, or
   R X + RW Y_j); the modes come from each starpu_task_insert() call, so
   nbuffers is the only thing fixed per codelet. */
static void cpu_empty(void *buffers[], void *arg) {
    (void)buffers;
    (void)arg;
    empty_body();
}
static struct starpu_codelet cl_empty0 = {.cpu_funcs = {cpu_empty}, .nbuffers = 0, .name = "w_empty0"};
static struct starpu_codelet cl_empty1 = {.cpu_funcs = {cpu_empty}, .nbuffers = 1, .name = "w_empty1"};
static struct starpu_codelet cl_empty2 = {.cpu_funcs = {cpu_empty}, .nbuffers = 2, .name = "w_empty2"};

/* W4/W5: the body reads and writes the global val[] directly, exactly as
   the other drivers do. That is sound here: with CPU workers only, every
   worker runs on the main-RAM memory node, so the registered handles'
   only copy is val[] itself (home node STARPU_MAIN_RAM), and StarPU's
   implicit dependencies order the accesses. The check after each
   repetition (against the sequential reference) confirms it. The task's
   bench_w4_task reaches the codelet as cl_arg (STARPU_CL_ARGS_NFREE: StarPU
   neither copies nor frees it); 1 to 3 buffers, hence variable nbuffers. */
static uint64_t val[BENCH_W4_VARS];
static int w4_loops;
static void cpu_w4(void *buffers[], void *arg) {
    (void)buffers;
    bench_w4_body(val, (const bench_w4_task *)arg, w4_loops);
}
static struct starpu_codelet cl_w4 = {
    .cpu_funcs = {cpu_w4}, .nbuffers = STARPU_VARIABLE_NBUFFERS, .name = "w4"};

/* Submission errors (e.g. -ENODEV: no worker can run the codelet) would
   make the figures meaningless: stop at once. */
static void check_insert(int ret) {
    if (ret != 0) {
        fprintf(stderr, "bench_starpu: starpu_task_insert failed: %d\n", ret);
        exit(2);
    }
}

/* Each run_* is one repetition and returns ns per task. */
static double run_w1(long n) {
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) check_insert(starpu_task_insert(&cl_empty0, 0));
    starpu_task_wait_for_all();
    return (bench_now_ns() - t0) / (double)n;
}

static uint64_t w2_d;
static starpu_data_handle_t w2_h;
static double run_w2(long n) {
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) check_insert(starpu_task_insert(&cl_empty1, STARPU_RW, w2_h, 0));
    starpu_task_wait_for_all();
    return (bench_now_ns() - t0) / (double)n;
}

static uint64_t w3_x, w3_y[BENCH_W3_FAN];
static starpu_data_handle_t w3_xh, w3_yh[BENCH_W3_FAN];
static double run_w3(long n) {
    long rounds = n / (BENCH_W3_FAN + 1);
    double t0 = bench_now_ns();
    for (long r = 0; r < rounds; r++) {
        check_insert(starpu_task_insert(&cl_empty1, STARPU_RW, w3_xh, 0));
        for (int j = 0; j < BENCH_W3_FAN; j++)
            check_insert(starpu_task_insert(&cl_empty2, STARPU_R, w3_xh, STARPU_RW, w3_yh[j], 0));
    }
    starpu_task_wait_for_all();
    return (bench_now_ns() - t0) / (double)n;
}

static starpu_data_handle_t w4_h[BENCH_W4_VARS];
static double run_w4(const bench_w4_task *t, long n) {
    /* Outside the timed region: reset val[] and register it afresh, so
       each repetition starts from a clean StarPU state of the data. */
    bench_w4_init(val);
    for (int k = 0; k < BENCH_W4_VARS; k++)
        starpu_variable_data_register(&w4_h[k], STARPU_MAIN_RAM, (uintptr_t)&val[k], sizeof val[k]);
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        const bench_w4_task *k = &t[i];
        void *arg = (void *)(uintptr_t)k; /* the codelet only reads it */
        int ret;
        switch (k->nreads) {
        case 0:
            ret = starpu_task_insert(&cl_w4, STARPU_RW, w4_h[k->w],
                                     STARPU_CL_ARGS_NFREE, arg, sizeof *k, 0);
            break;
        case 1:
            ret = starpu_task_insert(&cl_w4, STARPU_RW, w4_h[k->w], STARPU_R, w4_h[k->reads[0]],
                                     STARPU_CL_ARGS_NFREE, arg, sizeof *k, 0);
            break;
        default:
            ret = starpu_task_insert(&cl_w4, STARPU_RW, w4_h[k->w], STARPU_R, w4_h[k->reads[0]],
                                     STARPU_R, w4_h[k->reads[1]],
                                     STARPU_CL_ARGS_NFREE, arg, sizeof *k, 0);
            break;
        }
        check_insert(ret);
    }
    starpu_task_wait_for_all();
    double t1 = bench_now_ns();
    /* Unregistering writes nothing back (main RAM is the only node) but
       makes sure val[] is current before the check. */
    for (int k = 0; k < BENCH_W4_VARS; k++) starpu_data_unregister(w4_h[k]);
    return (t1 - t0) / (double)n;
}

static int failures = 0;
/* BENCH_VERBOSE=1 prints every repetition's figure (rep -1: warm-up) to stderr. */
static int verbose = 0;
static void rep_note(int k, int r, double x) {
    if (verbose) fprintf(stderr, "# %s system=%s rep %d: %.1f ns/task\n", wl_name[k], sysname, r, x);
}

static void bench_simple(int k, double (*run)(long)) {
    double ns[BENCH_REPS];
    char note[64];
    long n = wl_n(k, starpu_default_n[k]);
    rep_note(k, -1, run(n)); /* warm-up */
    for (int r = 0; r < BENCH_REPS; r++) rep_note(k, r, ns[r] = run(n));
    bench_report(wl_name[k], sysname, ns, BENCH_REPS, n, wl_note(k, n, note, sizeof note));
}

static void bench_dag(int k, int loops) {
    double ns[BENCH_REPS];
    uint64_t ref[BENCH_W4_VARS];
    char note[64];
    long n = wl_n(k, starpu_default_n[k]);
    bench_w4_task *t = bench_w4_generate((uint32_t)n);
    bench_w4_reference(ref, t, (uint32_t)n, loops);
    w4_loops = loops;
    for (int r = -1; r < BENCH_REPS; r++) { /* r = -1: warm-up */
        double x = run_w4(t, n);
        failures += bench_w4_check(sysname, wl_name[k], val, ref); /* after every repetition */
        rep_note(k, r, x);
        if (r >= 0) ns[r] = x;
    }
    bench_report(wl_name[k], sysname, ns, BENCH_REPS, n, wl_note(k, n, note, sizeof note));
    free(t);
}

/* One scheduler: init, the workloads, shutdown. Returns 0, or -1 when
   StarPU cannot start (reported as skipped). */
static int run_scheduler(const char *sched, int l1, int l10) {
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    conf.precedence_over_environment_variables = 1; /* STARPU_NCPU etc. cannot override */
    conf.sched_policy_name = sched;
    conf.ncpus = 2;
    conf.ncuda = 0;
    conf.nopencl = 0;
    conf.nmic = 0;
    conf.nmpi_ms = 0;
    setenv("STARPU_SCHED", sched, 1); /* the same choice for anything reading the variable */
    snprintf(sysname, sizeof sysname, "starpu-%s", sched);
    int ret = starpu_init(&conf);
    if (ret != 0) {
        printf("skipped: system=%s: starpu_init failed (%d)\n", sysname, ret);
        fflush(stdout);
        return -1;
    }
    if (starpu_cpu_worker_get_count() != 2)
        printf("# warning: system=%s has %u CPU workers, not 2\n", sysname,
               starpu_cpu_worker_get_count());

    starpu_variable_data_register(&w2_h, STARPU_MAIN_RAM, (uintptr_t)&w2_d, sizeof w2_d);
    starpu_variable_data_register(&w3_xh, STARPU_MAIN_RAM, (uintptr_t)&w3_x, sizeof w3_x);
    for (int j = 0; j < BENCH_W3_FAN; j++)
        starpu_variable_data_register(&w3_yh[j], STARPU_MAIN_RAM, (uintptr_t)&w3_y[j], sizeof w3_y[j]);

    if (wl_on[WL_W1]) bench_simple(WL_W1, run_w1);
    if (wl_on[WL_W2]) bench_simple(WL_W2, run_w2);
    if (wl_on[WL_W3]) bench_simple(WL_W3, run_w3);
    if (wl_on[WL_W4]) bench_dag(WL_W4, BENCH_W4_LOOPS);
    if (wl_on[WL_W5_1]) bench_dag(WL_W5_1, l1);
    if (wl_on[WL_W5_10]) bench_dag(WL_W5_10, l10);

    starpu_data_unregister(w2_h);
    starpu_data_unregister(w3_xh);
    for (int j = 0; j < BENCH_W3_FAN; j++) starpu_data_unregister(w3_yh[j]);
    starpu_shutdown();
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    verbose = getenv("BENCH_VERBOSE") != NULL;

    /* StarPU's files go to a private temporary STARPU_HOME, removed at exit. */
    const char *tmp = getenv("TMPDIR");
    char home[4096];
    snprintf(home, sizeof home, "%s/bench_starpu.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(home)) {
        perror("bench_starpu: mkdtemp");
        return 2;
    }
    setenv("STARPU_HOME", home, 1);
    setenv("STARPU_SILENT", "1", 1);

    /* W5's loop counts are fixed once, before any scheduler runs, so both
       schedulers run the same bodies. */
    int l1 = 0, l10 = 0;
    if (wl_on[WL_W5_1] || wl_on[WL_W5_10]) {
        bench_w5_loops(&l1, &l10);
        printf("# W5 loops 1us=%d 10us=%d system=%s\n", l1, l10, SYSTEM);
        fflush(stdout);
    }

    int started = 0;
    char scheds[256];
    snprintf(scheds, sizeof scheds, "%s", opt_sched);
    for (char *s = strtok(scheds, ","); s; s = strtok(NULL, ","))
        if (run_scheduler(s, l1, l10) == 0) started++;

    nftw(home, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (!started) return 77; /* bench/run.sh: "skipped", not an error */
    return failures ? 1 : 0;
}
