/* bench/gpu.cu - the GPU section of the benchmark (depeng_cuda.h).

   GPU-add     element-wise bandwidth: depeng's "add" on float32 arrays in
               device memory, against cudaMemcpy device to device of one
               array (the bandwidth a kernel can hope for), in GB/s of
               traffic (add: 2 reads + 1 write; copy: 1 read + 1 write).
   GPU-dot     depeng's "dot" (the tiled kernel, or cuBLAS when built with
               DEPENG_CUDA_USE_CUBLAS) against cublasSgemm called directly
               (when built with BENCH_HAVE_CUBLAS), in GFLOP/s.
   GPU-op      the engine's cost per GPU operation: a chain of add_scalar
               on one element (each waits for the one before) and as many
               independent ones, with the backend's events (a worker takes
               its next op while the previous op's work runs) and without
               them (a stream synchronization per op), against a bare
               launch + cudaStreamSynchronize and a bare launch per op.
   Lines: "bench NAME system=S <figure>=X min=.. max=.. reps=5 n=N" (the
   median of 5 after a warm-up) and "ratio ...". Where CUDA finds no device
   it prints "SKIP: no CUDA device: <why>" and exits 0.

   Build: nvcc -std=c++17 -O2 -I. -DBENCH_HAVE_CUBLAS bench/gpu.cu -o bench_gpu -lcublas   (make cuda)
   Run:   ./bench_gpu [-n ELEMENTS] [-d DOT_SIZE] [-o OPS] */
#define DEPENG_IMPLEMENTATION
#define DEPENG_CUDA_IMPLEMENTATION
#include "depeng.h"
#include "depeng_cuda.h"
#include "tests/test_calls.h"
#include "bench/common.h"
#ifdef BENCH_HAVE_CUBLAS
#include <cublas_v2.h>
#endif

static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
/* Prints a bench line for REPS figures; returns the median. */
static double report(const char *name, const char *system, const char *unit, double *v, long long n) {
    qsort(v, BENCH_REPS, sizeof *v, cmp_double);
    printf("bench %s system=%s %s=%.3f min=%.3f max=%.3f reps=%d n=%lld\n", name, system, unit, v[BENCH_REPS / 2], v[0], v[BENCH_REPS - 1],
           BENCH_REPS, n);
    return v[BENCH_REPS / 2];
}
static dp_engine *make_engine(const dp_device_backend *be) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.gpu_backend = be; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    dp_storage_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.memory = dp_cuda_memory();
    if (dp_storage_configure(e, &sd) != DP_OK) { fprintf(stderr, "storage configure failed\n"); exit(1); }
    return e;
}
static void die(const char *what) { fprintf(stderr, "bench_gpu: %s failed\n", what); exit(1); }
static const dp_ctx GPU0 = {DP_DEV_GPU, 0};

/* ---- GPU-add against cudaMemcpy ---------------------------------------------- */
static void bench_add(dp_engine *e, long long n) {
    dp_shape s = {1, {n}};
    dp_ndarray *a = NULL, *b = NULL, *c = NULL, *in[2];
    double gbps[BENCH_REPS], t0, add, copy;
    void *src = NULL, *dst = NULL;
    int r;
    if (dp_nd_full(e, &s, DP_FLOAT32, GPU0, 1.0, &a) != DP_OK || dp_nd_full(e, &s, DP_FLOAT32, GPU0, 2.0, &b) != DP_OK
        || dp_nd_empty(e, &s, DP_FLOAT32, GPU0, &c) != DP_OK) die("GPU arrays");
    in[0] = a; in[1] = b;
    for (r = -1; r < BENCH_REPS; r++) {                          /* -1: warm-up */
        t0 = bench_now_ns();
        if (invoke_str(e, "add", 2, in, 0, NULL, NULL, 0, 1, &c, NULL) != DP_OK || dp_nd_wait_to_read(c, NULL) != DP_OK) die("add");
        if (r >= 0) gbps[r] = 3.0 * 4.0 * (double)n / (bench_now_ns() - t0);
    }
    {
        float first = 0;
        if (dp_nd_wait_to_read(c, NULL) != DP_OK || cudaMemcpy(&first, dp_nd_data(c), sizeof first, cudaMemcpyDeviceToHost) != cudaSuccess || first != 3.0f)
            printf("FAIL GPU-add: 1 + 2 gave %g\n", (double)first);
    }
    add = report("GPU-add", "depeng-perdevice", "gbps", gbps, n);
    if (cudaMalloc(&src, 4 * (size_t)n) != cudaSuccess || cudaMalloc(&dst, 4 * (size_t)n) != cudaSuccess) die("cudaMalloc");
    for (r = -1; r < BENCH_REPS; r++) {
        t0 = bench_now_ns();
        if (cudaMemcpy(dst, src, 4 * (size_t)n, cudaMemcpyDeviceToDevice) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) die("cudaMemcpy");
        if (r >= 0) gbps[r] = 2.0 * 4.0 * (double)n / (bench_now_ns() - t0);
    }
    copy = report("GPU-copy", "cudaMemcpy-d2d", "gbps", gbps, n);
    printf("ratio GPU-add depeng/cudaMemcpy=%.2f\n", add / copy);
    cudaFree(src); cudaFree(dst);
    dp_nd_release(a); dp_nd_release(b); dp_nd_release(c);
}

/* ---- GPU-dot against cuBLAS ------------------------------------------------------ */
static void bench_dot(dp_engine *e, long long d) {
    dp_shape s = {2, {d, d}};
    dp_ndarray *a = NULL, *b = NULL, *c = NULL, *in[2];
    double gf[BENCH_REPS], t0, flops = 2.0 * (double)d * (double)d * (double)d, mine;
    int r;
    if (dp_nd_full(e, &s, DP_FLOAT32, GPU0, 0.5, &a) != DP_OK || dp_nd_full(e, &s, DP_FLOAT32, GPU0, 0.25, &b) != DP_OK
        || dp_nd_empty(e, &s, DP_FLOAT32, GPU0, &c) != DP_OK) die("GPU matrices");
    in[0] = a; in[1] = b;
    for (r = -1; r < BENCH_REPS; r++) {
        t0 = bench_now_ns();
        if (invoke_str(e, "dot", 2, in, 0, NULL, NULL, 0, 1, &c, NULL) != DP_OK || dp_nd_wait_to_read(c, NULL) != DP_OK) die("dot");
        if (r >= 0) gf[r] = flops / (bench_now_ns() - t0);
    }
    {
        float first = 0;
        if (cudaMemcpy(&first, dp_nd_data(c), sizeof first, cudaMemcpyDeviceToHost) != cudaSuccess || first != (float)(0.125 * (double)d))
            printf("FAIL GPU-dot: element (0, 0) is %g, not %g\n", (double)first, 0.125 * (double)d);
    }
#ifdef DEPENG_CUDA_USE_CUBLAS
    mine = report("GPU-dot", "depeng-cublas", "gflops", gf, d);
#else
    mine = report("GPU-dot", "depeng-tiled", "gflops", gf, d);
#endif
#ifdef BENCH_HAVE_CUBLAS
    {
        cublasHandle_t h;
        const float one = 1.0f, zero = 0.0f;
        if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) die("cublasCreate");
        for (r = -1; r < BENCH_REPS; r++) {
            t0 = bench_now_ns();
            if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)d, (int)d, (int)d, &one, (const float *)dp_nd_data(b), (int)d,
                            (const float *)dp_nd_data(a), (int)d, &zero, (float *)dp_nd_data(c), (int)d) != CUBLAS_STATUS_SUCCESS
                || cudaDeviceSynchronize() != cudaSuccess) die("cublasSgemm");
            if (r >= 0) gf[r] = flops / (bench_now_ns() - t0);
        }
        cublasDestroy(h);
        printf("ratio GPU-dot depeng/cublas=%.2f\n", mine / report("GPU-dot", "cublas-sgemm", "gflops", gf, d));
    }
#else
    (void)mine;
    printf("skipped: GPU-dot cuBLAS reference: built without BENCH_HAVE_CUBLAS\n");
#endif
    dp_nd_release(a); dp_nd_release(b); dp_nd_release(c);
}

/* ---- GPU-op: the cost per operation ------------------------------------------------ */
/* ops add_scalar on one element: a chain (each reads and writes x), or
   independent ones (each writes its own array). Microseconds per op. */
static double op_cost(dp_engine *e, int ops, int chain) {
    dp_shape one = {1, {1}};
    dp_ndarray *x = NULL, **outs = (dp_ndarray **)calloc((size_t)ops, sizeof *outs);
    double t0;
    int i;
    if (!outs || dp_nd_zeros(e, &one, DP_FLOAT32, GPU0, &x) != DP_OK) die("GPU-op arrays");
    if (!chain) for (i = 0; i < ops; i++) if (dp_nd_empty(e, &one, DP_FLOAT32, GPU0, &outs[i]) != DP_OK) die("GPU-op arrays");
    if (dp_wait_all(e, NULL) != DP_OK) die("wait");
    t0 = bench_now_ns();
    for (i = 0; i < ops; i++)
        if (invoke_str(e, "add_scalar", 1, &x, 0, NULL, NULL, 1.0, 1, chain ? &x : &outs[i], NULL) != DP_OK) die("add_scalar");
    if (dp_wait_all(e, NULL) != DP_OK) die("wait");
    t0 = (bench_now_ns() - t0) / 1000.0 / ops;
    if (chain) {
        float v = 0;
        if (dp_nd_read(x, &v, sizeof v, NULL) != DP_OK || v != (float)ops) printf("FAIL GPU-op chain: %g, not %d\n", (double)v, ops);
    }
    for (i = 0; i < ops; i++) dp_nd_release(outs[i]);
    free(outs);
    dp_nd_release(x);
    return t0;
}
__global__ static void bench_add_one(float *x) { *x += 1.0f; }
static void bench_ops(int ops) {
    dp_device_backend no_events = *dp_cuda_backend();
    const char *names[2] = {"depeng-perdevice-events", "depeng-perdevice-sync"};
    double us[BENCH_REPS], t0;
    cudaStream_t s;
    float *x;
    int k, chain, r, i;
    no_events.event_create = NULL; no_events.event_destroy = NULL; no_events.event_record = NULL; no_events.event_query = NULL;
    for (chain = 1; chain >= 0; chain--) {
        const char *name = chain ? "GPU-op-chain" : "GPU-op-independent";
        for (k = 0; k < 2; k++) {
            dp_engine *e = make_engine(k ? &no_events : dp_cuda_backend());
            for (r = -1; r < BENCH_REPS; r++) { double v = op_cost(e, ops, chain); if (r >= 0) us[r] = v; }
            report(name, names[k], "us_per_op", us, ops);
            dp_engine_destroy(e, NULL);
        }
    }
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess || cudaMalloc(&x, sizeof *x) != cudaSuccess) die("stream");
    for (k = 0; k < 2; k++) {
        for (r = -1; r < BENCH_REPS; r++) {
            t0 = bench_now_ns();
            for (i = 0; i < ops; i++) {
                bench_add_one<<<1, 1, 0, s>>>(x);
                if (!k && cudaStreamSynchronize(s) != cudaSuccess) die("sync");
            }
            if (cudaStreamSynchronize(s) != cudaSuccess) die("sync");
            if (r >= 0) us[r] = (bench_now_ns() - t0) / 1000.0 / ops;
        }
        report("GPU-op-chain", k ? "launch-only" : "launch+sync", "us_per_op", us, ops);
    }
    cudaFree(x);
    cudaStreamDestroy(s);
}

int main(int argc, char **argv) {
    long long n = 1 << 24, d = 2048;
    int ops = 20000, i;
    char why[256];
    dp_engine *e;
    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-n") == 0) n = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "-d") == 0) d = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "-o") == 0) ops = atoi(argv[i + 1]);
        else break;
    }
    if (i < argc || n <= 0 || d <= 0 || ops <= 0) { fprintf(stderr, "usage: %s [-n ELEMENTS] [-d DOT_SIZE] [-o OPS]\n", argv[0]); return 2; }
    if (dp_cuda_check_ctx(GPU0, why, sizeof why) != DP_OK) { printf("SKIP: %s\n", why); return 0; }   /* "no CUDA device: ..." */
    printf("# %s\n", why);
    if (dp_cuda_register_kernels() != DP_OK) die("dp_cuda_register_kernels");
    e = make_engine(dp_cuda_backend());
    bench_add(e, n);
    bench_dot(e, d);
    dp_engine_destroy(e, NULL);
    bench_ops(ops);
    return 0;
}
