/* bench/ndarray.c - the NDArray section of `make bench`.

   ND-add: c = a + b on 2^24 float32 elements, through invoke_str("add")
   into a preallocated output plus the wait for it, against the plain C loop
   over the same buffers, in the same run. Median of 5 after a warm-up, in
   milliseconds per addition; the ratio line is depeng / plain loop.
   ND-dot: dot of two 1024 x 1024 float32 matrices through dp_invoke
   (the portable kernel), in GFLOP/s, against OpenBLAS's cblas_sgemm on one
   thread when built with BENCH_HAVE_CBLAS (make bench-deps installs it).

   Usage: bench_ndarray [-n ELEMENTS] (also scales dot's size down)
   make builds it with DEPENG_EXAMPLE_SEPARATE_IMPL defined and links the
   implementation compiled once (build/impl/bench.o); alone, one cc
   command builds it with the implementation included. */
#define BENCH_IMPLEMENTATION
#include "bench/common.h"
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"
#include "tests/test_calls.h"
#ifdef BENCH_HAVE_CBLAS
#include <cblas.h>
void openblas_set_num_threads(int n);   /* OpenBLAS's own: one thread, as the kernel */
#endif

static void report_ms(const char *work, const char *system, double *ms, long n) {
    qsort(ms, BENCH_REPS, sizeof *ms, bench_cmp_double);
    printf("bench %s system=%s ms=%.2f min=%.2f max=%.2f reps=%d n=%ld\n", work, system, ms[BENCH_REPS / 2], ms[0],
           ms[BENCH_REPS - 1], BENCH_REPS, n);
}

/* The floor: one loop the compiler vectorises. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void plain_add(const float *a, const float *b, float *c, long n) {
    for (long i = 0; i < n; i++) c[i] = a[i] + b[i];
}

int main(int argc, char **argv) {
    long n = 1L << 24;
    dp_engine_desc desc;
    dp_engine *eng;
    dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_ndarray *a, *b, *c, *in[2];
    double plain_ms[BENCH_REPS], depeng_ms[BENCH_REPS];
    float *ha, *hb, *hc;
    int r;
    if (argc == 3 && strcmp(argv[1], "-n") == 0) n = atol(argv[2]);
    if (n <= 0) { fprintf(stderr, "usage: %s [-n ELEMENTS]\n", argv[0]); return 2; }
    ha = (float *)malloc(sizeof(float) * (size_t)n); hb = (float *)malloc(sizeof(float) * (size_t)n);
    hc = (float *)malloc(sizeof(float) * (size_t)n);
    if (!ha || !hb || !hc) return 2;
    for (long i = 0; i < n; i++) { ha[i] = (float)(i % 1000) * 0.5f; hb[i] = (float)(i % 77); hc[i] = 0; }

    memset(&desc, 0, sizeof desc);
    desc.cpu_worker_nthreads = 2; desc.ignore_env = 1;
    if (dp_engine_create(&desc, &eng) != DP_OK) return 2;
    {
        dp_shape s = {1, {n}};
        if (dp_nd_from_host(eng, &s, DP_FLOAT32, cpu, ha, &a) != DP_OK || dp_nd_from_host(eng, &s, DP_FLOAT32, cpu, hb, &b) != DP_OK
            || dp_nd_zeros(eng, &s, DP_FLOAT32, cpu, &c) != DP_OK) return 2;
    }
    in[0] = a; in[1] = b;
    for (r = -1; r < BENCH_REPS; r++) {            /* r = -1: warm-up (page faults, caches) */
        double t0 = bench_now_ns();
        plain_add(ha, hb, hc, n);
        double t1 = bench_now_ns();
        if (invoke_str(eng, "add", 2, in, 0, NULL, NULL, 0, 1, &c, NULL) != DP_OK || dp_nd_wait_to_read(c, NULL) != DP_OK) return 2;
        double t2 = bench_now_ns();
        if (r >= 0) { plain_ms[r] = (t1 - t0) / 1e6; depeng_ms[r] = (t2 - t1) / 1e6; }
    }
    {   /* the two results agree */
        float *back = (float *)malloc(sizeof(float) * (size_t)n);
        if (!back || dp_nd_read(c, back, sizeof(float) * (size_t)n, NULL) != DP_OK || memcmp(back, hc, sizeof(float) * (size_t)n) != 0) {
            printf("FAIL ND-add: depeng's sum differs from the plain loop's\n");
            return 1;
        }
        free(back);
    }
    report_ms("ND-add", "plain-loop", plain_ms, n);
    report_ms("ND-add", "depeng", depeng_ms, n);
    printf("ratio ND-add depeng/plain_loop=%.2f\n", depeng_ms[BENCH_REPS / 2] / plain_ms[BENCH_REPS / 2]);
    {   /* ND-dot */
        int64_t d = n >= (1L << 20) ? 1024 : 64;
        dp_shape sq = {2, {d, d}};
        dp_ndarray *x, *y, *z = NULL, *in2[2];
        double gf[BENCH_REPS], flops = 2.0 * (double)d * (double)d * (double)d;
        if (dp_nd_random_uniform(eng, -1, 1, &sq, DP_FLOAT32, cpu, &x) != DP_OK || dp_nd_random_uniform(eng, -1, 1, &sq, DP_FLOAT32, cpu, &y) != DP_OK) return 2;
        in2[0] = x; in2[1] = y;
        for (r = -1; r < BENCH_REPS; r++) {
            double t0 = bench_now_ns();
            if (invoke_str(eng, "dot", 2, in2, 0, NULL, NULL, 0, 1, &z, NULL) != DP_OK || dp_nd_wait_to_read(z, NULL) != DP_OK) return 2;
            if (r >= 0) gf[r] = flops / (bench_now_ns() - t0);
        }
        qsort(gf, BENCH_REPS, sizeof *gf, bench_cmp_double);
        printf("bench ND-dot system=depeng-portable gflops=%.2f min=%.2f max=%.2f reps=%d n=%lld\n", gf[BENCH_REPS / 2], gf[0], gf[BENCH_REPS - 1], BENCH_REPS, (long long)d);
#ifdef BENCH_HAVE_CBLAS
        {
            double portable = gf[BENCH_REPS / 2];
            float *ha2 = (float *)malloc(sizeof(float) * (size_t)(d * d * 3));
            if (!ha2 || dp_nd_read(x, ha2, sizeof(float) * (size_t)(d * d), NULL) != DP_OK || dp_nd_read(y, ha2 + d * d, sizeof(float) * (size_t)(d * d), NULL) != DP_OK) return 2;
            openblas_set_num_threads(1);
            for (r = -1; r < BENCH_REPS; r++) {
                double t0 = bench_now_ns();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d, (int)d, (int)d, 1.0f, ha2, (int)d, ha2 + d * d, (int)d, 0.0f, ha2 + 2 * d * d, (int)d);
                if (r >= 0) gf[r] = flops / (bench_now_ns() - t0);
            }
            qsort(gf, BENCH_REPS, sizeof *gf, bench_cmp_double);
            printf("bench ND-dot system=cblas-openblas-1thread gflops=%.2f min=%.2f max=%.2f reps=%d n=%lld\n", gf[BENCH_REPS / 2], gf[0], gf[BENCH_REPS - 1], BENCH_REPS, (long long)d);
            printf("ratio ND-dot portable/cblas=%.2f\n", portable / gf[BENCH_REPS / 2]);
            free(ha2);
        }
#else
        printf("skipped: ND-dot cblas reference: built without OpenBLAS (make bench-deps, then rebuild)\n");
#endif
        dp_nd_release(x); dp_nd_release(y); dp_nd_release(z);
    }
    dp_nd_release(a); dp_nd_release(b); dp_nd_release(c);
    free(ha); free(hb); free(hc);
    return dp_engine_destroy(eng, NULL) == DP_OK ? 0 : 2;
}
