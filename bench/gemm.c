/* bench/gemm.c - dp_gemm_on's GFLOP/s against OpenBLAS's cblas_sgemm (make
   bench-gemm; bench/README.md, "GEMM and the kernels"). Square sizes 64 ..
   1024, the MLP's (784-128-64-10) products at batch 64 and 256, forward
   and both backward ones, and LeNet's (examples/lenet-symbol.json): its
   convolutions' per-image im2col products (conv1: 20 filters of 1x5x5 over
   24x24 outputs, conv2: 50 of 20x5x5 over 8x8) and its FullyConnected
   products (800-500-10) at batch 64 and 256; float32, with 1 and 2 threads: depeng with 1
   thread is dp_gemm on the caller, with T threads an engine of T - 1 CPU
   workers plus the caller (dp_gemm_on); OpenBLAS gets
   openblas_set_num_threads(T). The two are alternated in rounds: per round
   and shape each runs for about BENCH_MS ms (after a warm-up), its best
   time counts; every round is printed with the ratio depeng/OpenBLAS in
   GFLOP/s, then the median ratio over the rounds. Without OpenBLAS
   (pkg-config openblas) it prints depeng's figures and "SKIP openblas".
   Usage: bench_gemm [rounds] [threads...] (default 3 rounds, 1 and 2);
   BENCH_SHAPES=sq,fc,lenet (comma-separated name prefixes) times only the
   shapes whose names start with one of them. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "bench/common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef BENCH_HAVE_CBLAS
#include <cblas.h>
#endif

typedef struct { const char *name; int ta, tb; int64_t m, n, k; } shape;
#define MAX_SHAPES 64
static shape shapes[MAX_SHAPES];
static int nshapes;
static const char *g_only;   /* BENCH_SHAPES */
static int wanted(const char *name) {
    const char *p = g_only;
    if (!p || !*p) return 1;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len && !strncmp(name, p, len)) return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}
static void add(const char *name, int ta, int tb, int64_t m, int64_t n, int64_t k) {
    shape s;
    if (!wanted(name) || nshapes == MAX_SHAPES) return;
    s.name = name; s.ta = ta; s.tb = tb; s.m = m; s.n = n; s.k = k;
    shapes[nshapes++] = s;
}
static double g_ms = 150;

/* seconds per call: the best of repeated calls over about g_ms */
static double time_it(int lib, dp_engine *eng, const shape *s, const float *a, const float *b, float *c) {
    int64_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    double best = 1e30, start = bench_now_ns(), t0, t;
    int reps = 0;
    (void)lib;
    do {
        t0 = bench_now_ns();
#ifdef BENCH_HAVE_CBLAS
        if (lib) cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, (int)s->m, (int)s->n,
                             (int)s->k, 1.0f, a, (int)lda, b, (int)ldb, 0.0f, c, (int)s->n);
        else
#endif
        dp_gemm_on(eng, DP_FLOAT32, s->ta, s->tb, s->m, s->n, s->k, a, lda, b, ldb, 0.0, c, s->n);
        t = bench_now_ns() - t0;
        if (t < best) best = t;
        reps++;
    } while (bench_now_ns() - start < g_ms * 1e6 || reps < 3);
    return best * 1e-9;
}
static int cmp(const void *x, const void *y) { double a = *(const double *)x, b = *(const double *)y; return a < b ? -1 : a > b; }

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3, threads[8] = {1, 2}, nthreads = 2, ti, si, r, i;
    static double ratios[8][MAX_SHAPES][64];
    const char *ms = getenv("BENCH_MS");
    float *a, *b, *c;
    if (ms) g_ms = atof(ms);
    g_only = getenv("BENCH_SHAPES");
    if (argc > 2) { nthreads = 0; for (i = 2; i < argc && nthreads < 8; i++) threads[nthreads++] = atoi(argv[i]); }
    if (rounds < 1 || rounds > 64) rounds = 3;
    add("sq64", 0, 0, 64, 64, 64); add("sq128", 0, 0, 128, 128, 128); add("sq256", 0, 0, 256, 256, 256);
    add("sq512", 0, 0, 512, 512, 512); add("sq1024", 0, 0, 1024, 1024, 1024);
    /* FullyConnected: y = x W^T (tb), dx = dy W, dW = dy^T x (ta) */
    add("fc1 fwd b64", 0, 1, 64, 128, 784); add("fc1 dx b64", 0, 0, 64, 784, 128); add("fc1 dW b64", 1, 0, 128, 784, 64);
    add("fc2 fwd b64", 0, 1, 64, 64, 128); add("fc2 dx b64", 0, 0, 64, 128, 64); add("fc2 dW b64", 1, 0, 64, 128, 64);
    add("fc3 fwd b64", 0, 1, 64, 10, 64); add("fc3 dx b64", 0, 0, 64, 64, 10); add("fc3 dW b64", 1, 0, 10, 64, 64);
    add("fc1 fwd b256", 0, 1, 256, 128, 784); add("fc1 dx b256", 0, 0, 256, 784, 128); add("fc1 dW b256", 1, 0, 128, 784, 256);
    add("fc2 fwd b256", 0, 1, 256, 64, 128); add("fc2 dx b256", 0, 0, 256, 128, 64); add("fc2 dW b256", 1, 0, 64, 128, 256);
    add("fc3 fwd b256", 0, 1, 256, 10, 64); add("fc3 dx b256", 0, 0, 256, 64, 10); add("fc3 dW b256", 1, 0, 10, 64, 256);
    /* LeNet's Convolution, per image (depeng_nn.h's im2col path): y = W cols,
       dcols = W^T dy (A transposed), dW = dy cols^T (B transposed) */
    add("lenet conv1 fwd", 0, 0, 20, 576, 25); add("lenet conv1 dx", 1, 0, 25, 576, 20); add("lenet conv1 dW", 0, 1, 20, 25, 576);
    add("lenet conv2 fwd", 0, 0, 50, 64, 500); add("lenet conv2 dx", 1, 0, 500, 64, 50); add("lenet conv2 dW", 0, 1, 50, 500, 64);
    add("lenet fc1 fwd b64", 0, 1, 64, 500, 800); add("lenet fc1 dx b64", 0, 0, 64, 800, 500); add("lenet fc1 dW b64", 1, 0, 500, 800, 64);
    add("lenet fc2 fwd b64", 0, 1, 64, 10, 500); add("lenet fc2 dx b64", 0, 0, 64, 500, 10); add("lenet fc2 dW b64", 1, 0, 10, 500, 64);
    add("lenet fc1 fwd b256", 0, 1, 256, 500, 800); add("lenet fc1 dx b256", 0, 0, 256, 800, 500); add("lenet fc1 dW b256", 1, 0, 500, 800, 256);
    add("lenet fc2 fwd b256", 0, 1, 256, 10, 500); add("lenet fc2 dx b256", 0, 0, 256, 500, 10); add("lenet fc2 dW b256", 1, 0, 10, 500, 256);
    a = (float *)malloc(sizeof(float) * 1024 * 1024); b = (float *)malloc(sizeof(float) * 1024 * 1024); c = (float *)malloc(sizeof(float) * 1024 * 1024);
    if (!a || !b || !c) return 1;
    for (i = 0; i < 1024 * 1024; i++) { a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f; b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f; c[i] = 0; }
#ifndef BENCH_HAVE_CBLAS
    printf("SKIP openblas: not installed (make bench-deps); depeng's figures only\n");
#endif
    for (ti = 0; ti < nthreads; ti++) {
        dp_engine *eng = NULL;
        int T = threads[ti];
        if (T > 1) {
            dp_engine_desc d;
            memset(&d, 0, sizeof d);
            d.type = DP_ENGINE_PERDEVICE; d.cpu_worker_nthreads = T - 1; d.ignore_env = 1;
            if (dp_engine_create(&d, &eng) != DP_OK) { fprintf(stderr, "engine\n"); return 1; }
        }
#ifdef BENCH_HAVE_CBLAS
        openblas_set_num_threads(T);
#endif
        for (r = 0; r < rounds; r++)
            for (si = 0; si < nshapes; si++) {
                const shape *s = &shapes[si];
                double flop = 2.0 * (double)s->m * (double)s->n * (double)s->k, td, tl = 0;
                /* alternate which goes first, round by round */
                if (r % 2 == 0) { td = time_it(0, eng, s, a, b, c); (void)tl;
#ifdef BENCH_HAVE_CBLAS
                    tl = time_it(1, eng, s, a, b, c);
#endif
                } else {
#ifdef BENCH_HAVE_CBLAS
                    tl = time_it(1, eng, s, a, b, c);
#endif
                    td = time_it(0, eng, s, a, b, c);
                }
                ratios[ti][si][r] = tl > 0 ? (flop / td) / (flop / tl) : 0;
                printf("round %d threads %d %-18s m %4lld n %4lld k %4lld ta %d tb %d  depeng %7.1f GFLOP/s", r + 1, T, s->name,
                       (long long)s->m, (long long)s->n, (long long)s->k, s->ta, s->tb, flop / td * 1e-9);
                if (tl > 0) printf("  openblas %7.1f GFLOP/s  ratio %.2f", flop / tl * 1e-9, ratios[ti][si][r]);
                printf("\n");
                fflush(stdout);
            }
        if (eng) dp_engine_destroy(eng, NULL);
    }
#ifdef BENCH_HAVE_CBLAS
    printf("\nmedian ratio depeng/openblas over %d rounds (GFLOP/s; > 1: depeng faster)\n", rounds);
    for (si = 0; si < nshapes; si++) {
        printf("%-18s", shapes[si].name);
        for (ti = 0; ti < nthreads; ti++) {
            qsort(ratios[ti][si], (size_t)rounds, sizeof(double), cmp);
            printf("  %d thread%s %.2f", threads[ti], threads[ti] > 1 ? "s" : " ", ratios[ti][si][rounds / 2]);
        }
        printf("\n");
    }
#endif
    free(a); free(b); free(c);
    return 0;
}
