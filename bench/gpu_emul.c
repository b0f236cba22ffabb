/* bench/gpu_emul.c - how a GPU op completes: events against a stream
   synchronisation per op, measured on an emulated GPU.

   This machine has no GPU, but the difference between the two completion
   schemes is the engine's, not the GPU's: with a synchronisation per op a
   worker launches a kernel, waits for it, completes the op, takes the next
   one and only then launches again, so the device idles for the engine's
   overhead between kernels; with events the worker launches, records an
   event and takes the next op at once, so the next kernel is already queued
   when the previous one ends. The emulated device is one thread per stream
   that runs the kernels queued on it in order (a kernel is a spin of K ns);
   events and synchronisation are what CUDA's are: a count of the stream's
   kernels done.

   GPU-ops-K  N independent ops, each launching one K ns kernel, on GPU 0's
              compute worker (one stream: the emulated device takes one of
              the 2 cores, the engine the other), ns per op: events, then a
              synchronisation per op (the backend without event functions),
              and the ideal K (the stream always busy).
   Lines: "bench GPU-ops-1us system=depeng-events ns_per_op=.. min=.. max=..
   reps=5 n=N", and "ratio GPU-ops-1us sync/events=..".

   Build: cc -std=c11 -O2 -I. bench/gpu_emul.c -o bench_gpu_emul -pthread -lm   (make bench-build)
   Run:   ./bench_gpu_emul [-n OPS]
   make builds it with DEPENG_EXAMPLE_SEPARATE_IMPL defined and links the
   implementation compiled once (build/impl/bench.o); alone, one cc
   command builds it with the implementation included. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L   /* clock_gettime (bench/common.h) */
#endif
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"
#define BENCH_IMPLEMENTATION
#include "bench/common.h"
#include <pthread.h>
#include <sched.h>

/* ---- the emulated device: a stream is a thread that runs its queued
   kernels in order, polling for work as a GPU does (no wake-up latency).
   One worker launches on a stream, so the queue has one producer. */
typedef struct emu_stream {
    uint64_t submitted, done;      /* kernels; atomics */
    double queue_ns[1024];         /* the queued kernels' lengths (a ring) */
    int stop;
    pthread_t thread;
} emu_stream;
static void spin_ns(double ns) { double end = bench_now_ns() + ns; while (bench_now_ns() < end) {} }
static void *emu_stream_main(void *arg) {
    emu_stream *s = (emu_stream *)arg;
    for (;;) {
        uint64_t done = __atomic_load_n(&s->done, __ATOMIC_RELAXED);
        if (__atomic_load_n(&s->submitted, __ATOMIC_ACQUIRE) == done) {
            if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) break;
            continue;
        }
        spin_ns(s->queue_ns[done % 1024]);           /* the kernel runs */
        __atomic_store_n(&s->done, done + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}
static void emu_launch(emu_stream *s, double ns) {
    uint64_t n = __atomic_load_n(&s->submitted, __ATOMIC_RELAXED);
    while (n - __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) >= 1024) sched_yield();
    s->queue_ns[n % 1024] = ns;
    __atomic_store_n(&s->submitted, n + 1, __ATOMIC_RELEASE);
}

static int emu_count(void *u) { (void)u; return 1; }
static int emu_set(int dev, void *u) { (void)dev; (void)u; return 0; }
static int emu_stream_create(int dev, int is_copy, void **out, void *u) {
    emu_stream *s = (emu_stream *)calloc(1, sizeof *s);
    (void)dev; (void)is_copy; (void)u;
    if (!s) return 1;
    if (pthread_create(&s->thread, NULL, emu_stream_main, s)) { free(s); return 1; }
    *out = s;
    return 0;
}
static int emu_stream_destroy(int dev, void *sp, void *u) {
    emu_stream *s = (emu_stream *)sp;
    (void)dev; (void)u;
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
    pthread_join(s->thread, NULL);
    free(s);
    return 0;
}
static int emu_sync(int dev, void *sp, void *u) {
    emu_stream *s = (emu_stream *)sp;
    (void)dev; (void)u;
    while (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE) != __atomic_load_n(&s->submitted, __ATOMIC_RELAXED)) sched_yield();
    return 0;
}
static const char *emu_err(int e, void *u) { (void)e; (void)u; return "emulated device error"; }
/* An event is the stream's kernel count when it was recorded. */
typedef struct emu_event { emu_stream *s; uint64_t target; } emu_event;
static int emu_event_create(int dev, void **out, void *u) { (void)dev; (void)u; *out = calloc(1, sizeof(emu_event)); return *out ? 0 : 1; }
static int emu_event_destroy(int dev, void *e, void *u) { (void)dev; (void)u; free(e); return 0; }
static int emu_event_record(int dev, void *ep, void *sp, void *u) {
    emu_event *e = (emu_event *)ep;
    emu_stream *s = (emu_stream *)sp;
    (void)dev; (void)u;
    e->s = s;
    e->target = __atomic_load_n(&s->submitted, __ATOMIC_RELAXED);
    return 0;
}
static int emu_event_query(int dev, void *ep, void *u) {
    emu_event *e = (emu_event *)ep;
    (void)dev; (void)u;
    return __atomic_load_n(&e->s->done, __ATOMIC_ACQUIRE) >= e->target ? 0 : DP_EVENT_PENDING;
}

static double g_kernel_ns;
static int launch_op(dp_run_ctx *rc, void *arg) { (void)arg; emu_launch((emu_stream *)rc->stream, g_kernel_ns); return 0; }

/* ns per op for n independent ops on GPU 0, median of BENCH_REPS. */
static void run(const char *work, const char *system, int events, long n, double *median) {
    dp_device_backend be;
    dp_engine_desc d;
    dp_engine *eng;
    dp_var vars[64];
    dp_push_desc p;
    double t[BENCH_REPS], tmp;
    int rep, i, j;
    memset(&be, 0, sizeof be);
    be.name = "emulated"; be.device_count = emu_count; be.set_device = emu_set; be.stream_create = emu_stream_create;
    be.stream_destroy = emu_stream_destroy; be.stream_synchronize = emu_sync; be.error_string = emu_err;
    if (events) { be.event_create = emu_event_create; be.event_destroy = emu_event_destroy; be.event_record = emu_event_record; be.event_query = emu_event_query; }
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_PERDEVICE; d.gpu_backend = &be; d.gpu_worker_nthreads = 1; d.ignore_env = 1;
    if (dp_engine_create(&d, &eng) != DP_OK) { printf("FAIL %s: engine\n", work); exit(1); }
    for (i = 0; i < 64; i++) vars[i] = dp_var_create(eng);
    memset(&p, 0, sizeof p);
    p.fn = launch_op; p.num_writes = 1; p.ctx.dev_type = DP_DEV_GPU; p.ctx.dev_id = 0; p.name = "kernel";
    for (rep = -1; rep < BENCH_REPS; rep++) {          /* one warm-up */
        double start = bench_now_ns();
        for (i = 0; i < n; i++) { p.writes = &vars[i % 64]; dp_push(eng, &p); }
        dp_wait_all(eng, NULL);
        if (rep >= 0) t[rep] = (bench_now_ns() - start) / (double)n;
    }
    dp_engine_destroy(eng, NULL);
    for (i = 0; i < BENCH_REPS; i++) for (j = i + 1; j < BENCH_REPS; j++) if (t[j] < t[i]) { tmp = t[i]; t[i] = t[j]; t[j] = tmp; }
    *median = t[BENCH_REPS / 2];
    printf("bench %s system=%s ns_per_op=%.1f min=%.1f max=%.1f reps=%d n=%ld\n", work, system, *median, t[0], t[BENCH_REPS - 1], BENCH_REPS, n);
    fflush(stdout);
}

int main(int argc, char **argv) {
    static const double kernels_ns[2] = {1000, 10000};
    static const char *names[2] = {"GPU-ops-1us", "GPU-ops-10us"};
    long n = 20000;
    int k;
    if (argc == 3 && strcmp(argv[1], "-n") == 0) n = atol(argv[2]);
    else if (argc != 1) { fprintf(stderr, "usage: %s [-n OPS]\n", argv[0]); return 2; }
    if (n < 1) n = 1;
    printf("# emulated GPU: 1 compute worker, its stream a polling thread; kernels of 1 and 10 us\n");
    for (k = 0; k < 2; k++) {
        double ev, sync;
        g_kernel_ns = kernels_ns[k];
        run(names[k], "depeng-events", 1, k ? n / 10 : n, &ev);
        run(names[k], "depeng-sync-per-op", 0, k ? n / 10 : n, &sync);
        printf("bench %s system=ideal ns_per_op=%.1f\n", names[k], kernels_ns[k]);
        printf("ratio %s sync/events=%.2f events/ideal=%.2f\n", names[k], sync / ev, ev / kernels_ns[k]);
    }
    return 0;
}
