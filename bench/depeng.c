/* bench/depeng.c - depeng's side of `make bench`: the workloads of
   bench/WORKLOADS.md on each engine kind, plus W2-op (one
   pre-created operation pushed N times) and the memory figures.
   Usage: bench_depeng [-n N] [-e naive|pooled|perdevice] [-w WORKERS] [-c] [-p] [-H | -A] [-b B]
                       [W1 W2 W2-op W3 W4 W5 mem floor]
   -w: CPU workers per pool (default 2). -p: desc.push_runs_ops (the pusher
   runs ready ops when far ahead). The main thread's waits run ready ops
   while the workers are busy only where WORKERS is below the CPU count;
   -H: desc.no_wait_help = 1, never (reported as depeng-KIND-nohelp);
   -A: DP_WAIT_HELP_ALWAYS, always (depeng-KIND-helpalways; with a header
   older than that flag, -A means -H). -b B: push in batches of B ops
   (dp_push_batch; W2-op: dp_opr_push_n), reported as depeng-KIND-batchB.
   -c: after each workload, a line
   "contention WORK system=.. workers=K ..." with dp_engine_stats' contention
   counters over the timed repetitions, per pushed op (bench/scale.sh),
   and what waiting threads did (caller_ran, caller_stole, helper_wakeups;
   left out when built with BENCH_OLD_STATS, as bench/ab.sh builds the
   driver against an older depeng.h that may not have them).
   make builds it with DEPENG_EXAMPLE_SEPARATE_IMPL defined and links the
   implementation compiled once (build/impl/bench.o); alone, one cc
   command builds it with the implementation included. */
#define BENCH_IMPLEMENTATION
#include "bench/common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>    /* sysconf */
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"

static long g_n = BENCH_N;
static uint64_t g_val[BENCH_W4_VARS];
static int g_loops = BENCH_W4_LOOPS;
static int g_failed;
static int g_workers = 2;
static int g_contention;
static int g_push_runs_ops;
static int g_no_wait_help;   /* -H: 1, the waiting main thread sleeps; -A: DP_WAIT_HELP_ALWAYS */
#ifndef DP_WAIT_HELP_ALWAYS
#define DP_WAIT_HELP_ALWAYS (-1)   /* bench/ab.sh builds this driver against older headers too */
#endif
static int g_batch;                 /* -b B: push in batches of B (dp_push_batch, dp_opr_push_n) */

/* Pushes d, or with -b collects it into the current batch (a copy, with its
   reads copied too: the drivers reuse one desc and one reads array). */
static dp_push_desc *g_bd;
static dp_var (*g_br)[2];
static int g_bn;
static void batch_flush(dp_engine *eng) {
    if (g_bn && dp_push_batch(eng, g_bd, g_bn) != DP_OK) { printf("FAIL depeng: dp_push_batch refused a batch\n"); g_failed = 1; }
    g_bn = 0;
}
static void push(dp_engine *eng, const dp_push_desc *d) {
    if (!g_batch) { dp_push(eng, d); return; }
    g_bd[g_bn] = *d;
    if (d->num_reads) { memcpy(g_br[g_bn], d->reads, (size_t)d->num_reads * sizeof(dp_var)); g_bd[g_bn].reads = g_br[g_bn]; }
    if (++g_bn == g_batch) batch_flush(eng);
}

static int body_empty(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; empty_body(); return 0; }
static int body_w4(dp_run_ctx *rc, void *arg) {
    (void)rc;
    bench_w4_body(g_val, (const bench_w4_task *)arg, g_loops);
    return 0;
}

/* no_push_yield: pacing off (see measure_floor) */
static dp_engine *make_engine(dp_engine_type type, int no_push_yield) {
    dp_engine_desc d;
    dp_engine *eng = NULL;
    memset(&d, 0, sizeof d);
    d.type = type;
    d.cpu_worker_nthreads = g_workers;
    d.push_runs_ops = g_push_runs_ops;
    d.no_wait_help = g_no_wait_help;
    d.no_push_yield = no_push_yield;
    d.cpu_priority_nthreads = 1;
    d.ignore_env = 1;
    if (dp_engine_create(&d, &eng) != DP_OK) { fprintf(stderr, "bench: engine create failed\n"); exit(2); }
    return eng;
}

/* W3's rounds for a run of about n tasks, at least one */
static long w3_rounds(long n) { return n * BENCH_W3_ROUNDS / BENCH_N > 0 ? n * BENCH_W3_ROUNDS / BENCH_N : 1; }

static void wait_all_or_die(dp_engine *eng) {
    batch_flush(eng);
    if (dp_wait_all(eng, NULL) != DP_OK) { printf("FAIL depeng: wait_all reported a failure\n"); g_failed = 1; }
}

/* ---- floors: each side of the pipeline on its own --------------------- */
/* With a pushing thread and workers on different cores, an op costs at
   least the longer of two things: the pusher's time to push it, and a
   worker's time to take, run and complete it, plus the cache lines that
   cross between them. "floor" measures the two sides apart, on the
   per-device engine:
     push_ns   every worker is held inside a gate op (blocked on a condition
               variable, off the CPU), and the main thread pushes the
               workload's N ops: nothing else runs, so this is the push alone.
     drain_ns  the gate opens and the workers run the N queued ops with no
               pusher: wall time per op (W2 runs on one worker at a time,
               by its own rule; the others may use both).
     line_transfer_ns  two threads hand one atomic back and forth: the time for one
               cache line to move from one core to the other, the unit every
               hand-off between pusher and worker pays at least once.
   Pacing is off (desc.no_push_yield): the pusher would otherwise give its
   core away every 64 waiting pushes while every worker is busy. */
static pthread_mutex_t g_gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gate_cv = PTHREAD_COND_INITIALIZER;
static int g_gate_open, g_gate_inside;
static int body_gate(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    pthread_mutex_lock(&g_gate_mu);
    g_gate_inside++;
    pthread_cond_broadcast(&g_gate_cv);
    while (!g_gate_open) pthread_cond_wait(&g_gate_cv, &g_gate_mu);
    pthread_mutex_unlock(&g_gate_mu);
    return 0;
}
static void gate_hold(dp_engine *eng, int workers) {
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.fn = body_gate;
    pthread_mutex_lock(&g_gate_mu);
    g_gate_open = 0;
    g_gate_inside = 0;
    pthread_mutex_unlock(&g_gate_mu);
    for (int i = 0; i < workers; i++) dp_push(eng, &d);
    pthread_mutex_lock(&g_gate_mu);
    while (g_gate_inside < workers) pthread_cond_wait(&g_gate_cv, &g_gate_mu);
    pthread_mutex_unlock(&g_gate_mu);
}
static void gate_open(void) {
    pthread_mutex_lock(&g_gate_mu);
    g_gate_open = 1;
    pthread_cond_broadcast(&g_gate_cv);
    pthread_mutex_unlock(&g_gate_mu);
}

static _Atomic long g_ball;
static void *pong_thread(void *arg) {
    long rounds = *(const long *)arg;
    for (long i = 0; i < rounds; i++) {
        while (atomic_load_explicit(&g_ball, memory_order_acquire) != 2 * i + 1) { }
        atomic_store_explicit(&g_ball, 2 * i + 2, memory_order_release);
    }
    return NULL;
}
/* ns for one one-way transfer of a cache line between two threads: a
   round trip is two. Median of BENCH_REPS runs of 200,000 round trips. */
static double line_transfer_ns(void) {
    double ns[BENCH_REPS];
    long rounds = 200000;
    for (int r = 0; r < BENCH_REPS; r++) {
        pthread_t t;
        atomic_store(&g_ball, 0);
        if (pthread_create(&t, NULL, pong_thread, &rounds) != 0) return -1;
        double t0 = bench_now_ns();
        for (long i = 0; i < rounds; i++) {
            atomic_store_explicit(&g_ball, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&g_ball, memory_order_acquire) != 2 * i + 2) { }
        }
        ns[r] = (bench_now_ns() - t0) / (2.0 * (double)rounds);
        pthread_join(t, NULL);
    }
    qsort(ns, BENCH_REPS, sizeof *ns, bench_cmp_double);
    return ns[BENCH_REPS / 2];
}

/* Under "floor", each run_* holds the workers before it starts its clock
   (floor_hold) and, once its last push has returned, notes the time and
   opens the gate (floor_pushed). */
static int g_floor;
static int g_floor_workers;
static double g_floor_pushed_at;
static double g_floor_started_at;
static void floor_hold(dp_engine *eng) {
    if (!g_floor) return;
    gate_hold(eng, g_floor_workers);
    g_floor_started_at = bench_now_ns();
}
static void floor_pushed(void) {
    if (!g_floor) return;
    g_floor_pushed_at = bench_now_ns();
    gate_open();
}

/* Each run_* pushes one repetition's tasks and waits; returns ns per task. */
static double run_w1(dp_engine *eng, long n) {
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.fn = body_empty;
    floor_hold(eng);
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) push(eng, &d);
    floor_pushed();
    wait_all_or_die(eng);
    return (bench_now_ns() - t0) / (double)n;
}

static double run_w2(dp_engine *eng, long n) {
    dp_var x = dp_var_create(eng);
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.fn = body_empty;
    d.writes = &x; d.num_writes = 1;
    floor_hold(eng);
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) push(eng, &d);
    floor_pushed();
    wait_all_or_die(eng);
    double ns = (bench_now_ns() - t0) / (double)n;
    dp_var_delete(eng, x);
    return ns;
}

static double run_w2op(dp_engine *eng, long n) {
    dp_var x = dp_var_create(eng);
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.fn = body_empty;
    d.writes = &x; d.num_writes = 1;
    dp_opr op = dp_opr_create(eng, &d);
    dp_ctx cpu = {DP_DEV_CPU, 0};
    double t0 = bench_now_ns();
    if (g_batch)
        for (long i = 0; i < n; i += g_batch) dp_opr_push_n(eng, op, cpu, 0, (int)(n - i < g_batch ? n - i : g_batch));
    else
        for (long i = 0; i < n; i++) dp_opr_push(eng, op, cpu, 0);
    wait_all_or_die(eng);
    double ns = (bench_now_ns() - t0) / (double)n;
    dp_opr_destroy(eng, op);
    dp_var_delete(eng, x);
    return ns;
}

static double run_w3(dp_engine *eng, long rounds) {
    dp_var x = dp_var_create(eng), y[BENCH_W3_FAN];
    for (int j = 0; j < BENCH_W3_FAN; j++) y[j] = dp_var_create(eng);
    dp_push_desc w, r;
    memset(&w, 0, sizeof w);
    w.fn = body_empty;
    w.writes = &x; w.num_writes = 1;
    r = w;
    r.reads = &x; r.num_reads = 1;
    floor_hold(eng);
    double t0 = bench_now_ns();
    for (long k = 0; k < rounds; k++) {
        push(eng, &w);
        for (int j = 0; j < BENCH_W3_FAN; j++) { r.writes = &y[j]; push(eng, &r); }
    }
    floor_pushed();
    wait_all_or_die(eng);
    double ns = (bench_now_ns() - t0) / (double)(rounds * (BENCH_W3_FAN + 1));
    dp_var_delete(eng, x);
    for (int j = 0; j < BENCH_W3_FAN; j++) dp_var_delete(eng, y[j]);
    return ns;
}

static bench_w4_task *g_tasks;
static uint64_t g_ref[BENCH_W4_VARS];

static double run_w4(dp_engine *eng, long n) {
    dp_var v[BENCH_W4_VARS];
    for (int k = 0; k < BENCH_W4_VARS; k++) v[k] = dp_var_create(eng);
    bench_w4_init(g_val);
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.fn = body_w4;
    d.num_writes = 1;
    dp_var reads[2];
    d.reads = reads;
    floor_hold(eng);
    double t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        const bench_w4_task *k = &g_tasks[i];
        d.arg = (void *)k;
        d.writes = &v[k->w];
        d.num_reads = k->nreads;
        reads[0] = v[k->reads[0]];
        reads[1] = v[k->reads[1]];
        push(eng, &d);
    }
    floor_pushed();
    wait_all_or_die(eng);
    double ns = (bench_now_ns() - t0) / (double)n;
    for (int k = 0; k < BENCH_W4_VARS; k++) dp_var_delete(eng, v[k]);
    return ns;
}

typedef double (*run_fn)(dp_engine *eng, long n);

/* n is what fn takes (W3: rounds); tasks is the task count reported. */
static void measure(const char *work, const char *system, dp_engine *eng, run_fn fn, long n, long tasks,
                    int check_w4) {
    double ns[BENCH_REPS];
    dp_engine_stats s0, s1;
    fn(eng, n); /* warm-up: pools, threads, caches */
    if (check_w4) g_failed |= bench_w4_check(system, work, g_val, g_ref);
    dp_engine_stats_get(eng, &s0);
    for (int r = 0; r < BENCH_REPS; r++) {
        ns[r] = fn(eng, n);
        if (check_w4) g_failed |= bench_w4_check(system, work, g_val, g_ref);
    }
    dp_engine_stats_get(eng, &s1);
    bench_report(work, system, ns, BENCH_REPS, tasks, NULL);
    if (g_contention) {
        double ops = (double)(s1.pushed - s0.pushed);
        if (ops < 1) ops = 1;
        printf("contention %s system=%s workers=%d ops=%.0f var_lock=%.4f queue_lock=%.4f queue_busy=%.4f"
               " wakeups=%.4f pool_cas=%.4f op_ref_cas=%.4f queue_takes=%.4f deque_pushes=%.4f steals=%.4f"
               " steal_retries=%.4f\n", work, system, g_workers, ops,
               (double)(s1.var_lock_contended - s0.var_lock_contended) / ops,
               (double)(s1.queue_lock_contended - s0.queue_lock_contended) / ops,
               (double)(s1.queue_busy_retries - s0.queue_busy_retries) / ops,
               (double)(s1.worker_wakeups - s0.worker_wakeups) / ops,
               (double)(s1.pool_cas_retries - s0.pool_cas_retries) / ops,
               (double)(s1.op_ref_cas_retries - s0.op_ref_cas_retries) / ops,
               (double)(s1.queue_takes - s0.queue_takes) / ops,
               (double)(s1.deque_pushes - s0.deque_pushes) / ops,
               (double)(s1.steals - s0.steals) / ops,
               (double)(s1.steal_retries - s0.steal_retries) / ops);
#ifndef BENCH_OLD_STATS
        printf("callers %s system=%s workers=%d ops=%.0f caller_ran=%.4f caller_stole=%.4f helper_wakeups=%.4f\n",
               work, system, g_workers, ops, (double)(s1.caller_ran - s0.caller_ran) / ops,
               (double)(s1.caller_stole - s0.caller_stole) / ops, (double)(s1.helper_wakeups - s0.helper_wakeups) / ops);
#endif
        fflush(stdout);
    }
}


/* ---- memory ---------------------------------------------------------- */
static long rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

static dp_completion g_held;
static void hold_writer(dp_run_ctx *rc, void *arg, dp_completion done) { (void)rc; (void)arg; g_held = done; }

static void measure_memory(void) {
    const long count = 1000000;
    dp_engine *eng = make_engine(DP_ENGINE_PERDEVICE, 0);
    dp_var *vars = (dp_var *)malloc(sizeof *vars * (size_t)count);
    if (!vars) exit(2);
    memset(vars, 0, sizeof *vars * (size_t)count);   /* this array's pages are not the engine's */
    long before = rss_bytes();
    for (long i = 0; i < count; i++) vars[i] = dp_var_create(eng);
    long after = rss_bytes();
    printf("mem bytes_per_var=%.1f vars=%ld\n", (double)(after - before) / (double)count, count);
    for (long i = 0; i < count; i++) dp_var_delete(eng, vars[i]);
    wait_all_or_die(eng);
    free(vars);

    /* pending ops: every op reads x and writes y, behind one writer of x that
       has not completed */
    dp_var x = dp_var_create(eng), y = dp_var_create(eng);
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.async_fn = hold_writer;
    d.writes = &x; d.num_writes = 1;
    d.prop = DP_PROP_ASYNC;        /* runs on this thread: g_held is set on return */
    dp_push(eng, &d);
    memset(&d, 0, sizeof d);
    d.fn = body_empty;
    d.reads = &x; d.num_reads = 1;
    d.writes = &y; d.num_writes = 1;
    before = rss_bytes();
    for (long i = 0; i < count; i++) dp_push(eng, &d);
    after = rss_bytes();
    printf("mem bytes_per_pending_op=%.1f ops=%ld vars_per_op=2\n", (double)(after - before) / (double)count, count);
    dp_complete(g_held, 0, NULL);
    wait_all_or_die(eng);
    dp_engine_destroy(eng, NULL);
}

/* "floor": the per-device engine's push alone and drain alone for W1-W4
   (see floor_hold), and the cache-line transfer time; medians of
   BENCH_REPS repetitions after a warm-up. */
static void measure_floor(long n) {
    static const struct { const char *work; run_fn fn; } works[] = {
        {"W1", run_w1}, {"W2", run_w2}, {"W3", run_w3}, {"W4", run_w4}};
    double line = line_transfer_ns();
    g_floor = 1;
    g_floor_workers = g_workers;
    g_loops = BENCH_W4_LOOPS;
    for (size_t w = 0; w < sizeof works / sizeof works[0]; w++) {
        /* a fresh engine per workload: the order in which an earlier
           workload's workers freed their blocks decides where the pusher
           finds its next ones (after W1's held 200,000 ops, W2's push
           alone measured twice its own) */
        dp_engine *eng = make_engine(DP_ENGINE_PERDEVICE, 1);
        long arg = n, tasks = n;
        double push[BENCH_REPS], drain[BENCH_REPS];
        if (works[w].fn == run_w3) {
            arg = w3_rounds(n);
            tasks = arg * (BENCH_W3_FAN + 1);
        }
        for (int r = -1; r < BENCH_REPS; r++) {   /* r = -1: warm-up */
            works[w].fn(eng, arg);
            double end = bench_now_ns();
            if (works[w].fn == run_w4) g_failed |= bench_w4_check("depeng-perdevice-floor", "W4", g_val, g_ref);
            if (r < 0) continue;
            push[r] = (g_floor_pushed_at - g_floor_started_at) / (double)tasks;
            drain[r] = (end - g_floor_pushed_at) / (double)tasks;
        }
        dp_engine_destroy(eng, NULL);
        qsort(push, BENCH_REPS, sizeof *push, bench_cmp_double);
        qsort(drain, BENCH_REPS, sizeof *drain, bench_cmp_double);
        printf("floor %s system=depeng-perdevice push_ns=%.1f drain_ns=%.1f line_transfer_ns=%.1f workers=%d n=%ld\n",
               works[w].work, push[BENCH_REPS / 2], drain[BENCH_REPS / 2], line, g_workers, tasks);
        fflush(stdout);
    }
    g_floor = 0;
}

/* ---- main ------------------------------------------------------------ */
static int wanted(int argc, char **argv, int first, const char *name) {
    if (first >= argc) return 1;
    for (int i = first; i < argc; i++) if (strcmp(argv[i], name) == 0) return 1;
    return 0;
}

int main(int argc, char **argv) {
    static const struct { dp_engine_type type; const char *name; } kinds[] = {
        {DP_ENGINE_NAIVE, "naive"}, {DP_ENGINE_POOLED, "pooled"}, {DP_ENGINE_PERDEVICE, "perdevice"}};
    const char *only = NULL;
    int first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "-n") == 0 && first + 1 < argc) g_n = atol(argv[first + 1]);
        else if (strcmp(argv[first], "-e") == 0 && first + 1 < argc) only = argv[first + 1];
        else if (strcmp(argv[first], "-w") == 0 && first + 1 < argc && atoi(argv[first + 1]) > 0) g_workers = atoi(argv[first + 1]);
        else if (strcmp(argv[first], "-c") == 0) { g_contention = 1; first += 1; continue; }
        else if (strcmp(argv[first], "-p") == 0) { g_push_runs_ops = 1; first += 1; continue; }
        else if (strcmp(argv[first], "-H") == 0) { g_no_wait_help = 1; first += 1; continue; }
        else if (strcmp(argv[first], "-A") == 0) { g_no_wait_help = DP_WAIT_HELP_ALWAYS; first += 1; continue; }
        else if (strcmp(argv[first], "-b") == 0 && first + 1 < argc && atoi(argv[first + 1]) > 0) g_batch = atoi(argv[first + 1]);
        else { fprintf(stderr, "usage: %s [-n N] [-e naive|pooled|perdevice] [-w WORKERS] [-c] [-p] [-H | -A] [-b B] [W1 W2 W2-op W3 W4 W5 mem floor]\n", argv[0]); return 2; }
        first += 2;
    }
    if (g_batch) {
        g_bd = (dp_push_desc *)calloc((size_t)g_batch, sizeof *g_bd);
        g_br = (dp_var (*)[2])calloc((size_t)g_batch, sizeof *g_br);
        if (!g_bd || !g_br) { fprintf(stderr, "bench: out of memory\n"); return 2; }
    }
    long n5a = g_n < BENCH_W5_1US_N ? g_n : BENCH_W5_1US_N;
    long n5b = g_n < BENCH_W5_10US_N ? g_n : BENCH_W5_10US_N;
    long nmax = g_n > n5a ? g_n : n5a;
    g_tasks = bench_w4_generate((uint32_t)nmax);
    int loops1 = 0, loops10 = 0;
    if (wanted(argc, argv, first, "W5")) {
        bench_w5_loops(&loops1, &loops10);
        printf("# W5 loops 1us=%d 10us=%d\n", loops1, loops10);
    }
    /* first: RSS growth is only meaningful on a heap that earlier engines
       have not left with free, already-touched pages */
    if (wanted(argc, argv, first, "mem")) measure_memory();
    if (wanted(argc, argv, first, "floor")) {
        bench_w4_reference(g_ref, g_tasks, (uint32_t)(g_n < 200000 ? g_n : 200000), BENCH_W4_LOOPS);
        measure_floor(g_n < 200000 ? g_n : 200000);
    }
    for (size_t e = 0; e < sizeof kinds / sizeof kinds[0]; e++) {
        char system[64];
        if (only && strcmp(only, kinds[e].name) != 0) continue;
        if (g_batch) snprintf(system, sizeof system, "depeng-%s-batch%d%s", kinds[e].name, g_batch, g_no_wait_help > 0 ? "-nohelp" : g_no_wait_help < 0 ? "-helpalways" : "");
        else snprintf(system, sizeof system, "depeng-%s%s", kinds[e].name, g_no_wait_help > 0 ? "-nohelp" : g_no_wait_help < 0 ? "-helpalways" : "");
        dp_engine *eng = make_engine(kinds[e].type, 0);
        long rounds = w3_rounds(g_n);
        if (wanted(argc, argv, first, "W1")) measure("W1", system, eng, run_w1, g_n, g_n, 0);
        if (wanted(argc, argv, first, "W2")) measure("W2", system, eng, run_w2, g_n, g_n, 0);
        if (wanted(argc, argv, first, "W2-op")) measure("W2-op", system, eng, run_w2op, g_n, g_n, 0);
        if (wanted(argc, argv, first, "W3")) measure("W3", system, eng, run_w3, rounds, rounds * (BENCH_W3_FAN + 1), 0);
        if (wanted(argc, argv, first, "W4")) {
            bench_w4_reference(g_ref, g_tasks, (uint32_t)g_n, BENCH_W4_LOOPS);
            g_loops = BENCH_W4_LOOPS;
            measure("W4", system, eng, run_w4, g_n, g_n, 1);
        }
        if (wanted(argc, argv, first, "W5")) {
            g_loops = loops1;
            bench_w4_reference(g_ref, g_tasks, (uint32_t)n5a, loops1);
            measure("W5-1us", system, eng, run_w4, n5a, n5a, 1);
            g_loops = loops10;
            bench_w4_reference(g_ref, g_tasks, (uint32_t)n5b, loops10);
            measure("W5-10us", system, eng, run_w4, n5b, n5b, 1);
        }
        dp_engine_destroy(eng, NULL);
    }
    free(g_tasks);
    free(g_bd);
    free(g_br);
    return g_failed;
}
