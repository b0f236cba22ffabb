/* tests/test_par_kernels.c - the kernels that split their work over the
   engine's range loop (dp_parallel_for): Convolution and Deconvolution
   (im2col + GEMM and direct, forward and gradients), Pooling, Activation,
   the tanh and sigmoid operators and their gradients,
   BatchNorm, softmax and the reductions (sum, mean, max, min and their
   gradients, along axes and over the whole array). Each runs at sizes over
   the threshold on the naive engine, the pooled engine and the per-device
   engine with 1, 2, 3 and 4 CPU workers, and every output must be bitwise
   the same everywhere; on the per-device engine with 2 workers each must
   call dp_parallel_for (counted through the test hook: the kernels that
   ran on one core called it never). Reductions split over their outputs
   give exactly the serial walk's bits (a sequential sum in double, checked
   here), and small arrays stay on one core. Integer sum, max and min and
   argmax split too and give exactly the serial result (ties, NaN and
   wrapping sums included). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/impl/test_hook.h"
#include "tests/test_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static const dp_ctx CPU0 = {DP_DEV_CPU, 0};
static int g_ranges;          /* dp_parallel_for calls, counted by the hook */
static void count_hook(const char *point) {
    if (strcmp(point, "parallel_for") == 0) __atomic_add_fetch(&g_ranges, 1, __ATOMIC_RELAXED);
}
static uint64_t g_rng;
static double urand(void) {
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0 * 2 - 1;
}

/* One case: an operator, its parameters and its inputs' shapes (random
   values of dtype t, seeded by the case's index). */
#define MAXIN 6
typedef struct pcase {
    const char *name, *op;
    dp_dtype t;
    int nin, nout;
    int64_t shapes[MAXIN][5];   /* ndim first, then dims */
    const char *kw[16];         /* key, value, ..., NULL */
} pcase;
static const pcase cases[] = {
    {"conv im2col", "Convolution", DP_FLOAT32, 3, 1, {{4, 8, 16, 20, 20}, {4, 32, 16, 3, 3}, {1, 32}}, {"kernel", "(3,3)", "num_filter", "32", "pad", "(1,1)", NULL}},
    {"conv im2col grad", "_backward_Convolution", DP_FLOAT32, 4, 3, {{4, 8, 32, 20, 20}, {4, 8, 16, 20, 20}, {4, 32, 16, 3, 3}, {1, 32}},
     {"kernel", "(3,3)", "num_filter", "32", "pad", "(1,1)", NULL}},
    {"conv groups, stride, float64 grad", "_backward_Convolution", DP_FLOAT64, 4, 3, {{4, 12, 16, 12, 12}, {4, 12, 8, 25, 25}, {4, 16, 4, 3, 3}, {1, 16}},
     {"kernel", "(3,3)", "num_filter", "16", "num_group", "2", "stride", "(2,2)", NULL}},
    {"conv pointwise grad", "_backward_Convolution", DP_FLOAT32, 4, 3, {{4, 8, 32, 16, 16}, {4, 8, 24, 16, 16}, {4, 32, 24, 1, 1}, {1, 32}},
     {"kernel", "(1,1)", "num_filter", "32", NULL}},
    {"conv blocks of images (LeNet's conv2)", "Convolution", DP_FLOAT32, 3, 1, {{4, 16, 20, 12, 12}, {4, 50, 20, 5, 5}, {1, 50}}, {"kernel", "(5,5)", "num_filter", "50", NULL}},
    {"conv blocks of images grad", "_backward_Convolution", DP_FLOAT32, 4, 3, {{4, 19, 50, 8, 8}, {4, 19, 20, 12, 12}, {4, 50, 20, 5, 5}, {1, 50}},
     {"kernel", "(5,5)", "num_filter", "50", NULL}},
    {"conv blocks, stride 2, groups, float64", "Convolution", DP_FLOAT64, 3, 1, {{4, 13, 8, 15, 15}, {4, 12, 4, 3, 3}, {1, 12}},
     {"kernel", "(3,3)", "num_filter", "12", "num_group", "2", "stride", "(2,2)", "pad", "(1,1)", NULL}},
    {"conv direct", "Convolution", DP_FLOAT32, 3, 1, {{4, 8, 16, 20, 20}, {4, 32, 16, 3, 3}, {1, 32}},
     {"kernel", "(3,3)", "num_filter", "32", "pad", "(1,1)", "algo", "direct", NULL}},
    {"conv direct grad", "_backward_Convolution", DP_FLOAT32, 4, 3, {{4, 8, 32, 20, 20}, {4, 8, 16, 20, 20}, {4, 32, 16, 3, 3}, {1, 32}},
     {"kernel", "(3,3)", "num_filter", "32", "pad", "(1,1)", "algo", "direct", NULL}},
    {"deconv", "Deconvolution", DP_FLOAT32, 3, 1, {{4, 8, 16, 12, 12}, {4, 16, 8, 4, 4}, {1, 8}},
     {"kernel", "(4,4)", "num_filter", "8", "stride", "(2,2)", "pad", "(1,1)", "no_bias", "false", "num_args", "3", NULL}},
    {"deconv grad", "_backward_Deconvolution", DP_FLOAT32, 4, 3, {{4, 8, 8, 24, 24}, {4, 8, 16, 12, 12}, {4, 16, 8, 4, 4}, {1, 8}},
     {"kernel", "(4,4)", "num_filter", "8", "stride", "(2,2)", "pad", "(1,1)", "no_bias", "false", "num_args", "3", NULL}},
    {"pool max", "Pooling", DP_FLOAT32, 1, 1, {{4, 8, 32, 24, 24}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool max grad", "_backward_Pooling", DP_FLOAT32, 2, 1, {{4, 8, 32, 12, 12}, {4, 8, 32, 24, 24}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool max 2x2 odd planes", "Pooling", DP_FLOAT64, 1, 1, {{4, 8, 32, 25, 23}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool max 2x2 odd planes grad", "_backward_Pooling", DP_FLOAT32, 2, 1, {{4, 8, 32, 12, 11}, {4, 8, 32, 25, 23}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool avg grad", "_backward_Pooling", DP_FLOAT64, 2, 1, {{4, 8, 32, 11, 11}, {4, 8, 32, 24, 24}},
     {"kernel", "(3,3)", "stride", "(2,2)", "pool_type", "avg", NULL}},
    {"relu", "Activation", DP_FLOAT32, 1, 1, {{2, 600, 512}}, {"act_type", "relu", NULL}},
    {"tanh", "Activation", DP_FLOAT32, 1, 1, {{2, 600, 512}}, {"act_type", "tanh", NULL}},
    {"tanh grad", "_backward_Activation", DP_FLOAT32, 3, 1, {{2, 600, 512}, {2, 600, 512}, {2, 600, 512}}, {"act_type", "tanh", NULL}},
    {"sigmoid grad", "_backward_Activation", DP_FLOAT64, 3, 1, {{2, 600, 512}, {2, 600, 512}, {2, 600, 512}}, {"act_type", "sigmoid", NULL}},
    {"tanh op", "tanh", DP_FLOAT32, 1, 1, {{2, 600, 512}}, {NULL}},
    {"sigmoid op", "sigmoid", DP_FLOAT32, 1, 1, {{2, 600, 512}}, {NULL}},
    {"sigmoid op float64", "sigmoid", DP_FLOAT64, 1, 1, {{2, 600, 512}}, {NULL}},
    {"_backward_tanh", "_backward_tanh", DP_FLOAT32, 2, 1, {{2, 600, 512}, {2, 600, 512}}, {NULL}},
    {"_backward_sigmoid", "_backward_sigmoid", DP_FLOAT32, 2, 1, {{2, 600, 512}, {2, 600, 512}}, {NULL}},
    {"_backward_tanh float64", "_backward_tanh", DP_FLOAT64, 2, 1, {{2, 600, 512}, {2, 600, 512}}, {NULL}},
    {"_backward_exp", "_backward_exp", DP_FLOAT32, 2, 1, {{2, 600, 512}, {2, 600, 512}}, {NULL}},
    {"batchnorm", "BatchNorm", DP_FLOAT32, 5, 1, {{4, 32, 16, 16, 16}, {1, 16}, {1, 16}, {1, 16}, {1, 16}}, {"is_train", "true", "fix_gamma", "false", NULL}},
    {"batchnorm grad", "_backward_BatchNorm", DP_FLOAT32, 6, 5, {{4, 32, 16, 16, 16}, {4, 32, 16, 16, 16}, {1, 16}, {1, 16}, {1, 16}, {1, 16}},
     {"is_train", "true", "fix_gamma", "false", NULL}},
    {"softmax", "softmax", DP_FLOAT32, 1, 1, {{2, 1024, 300}}, {NULL}},
    {"log_softmax axis 0 grad", "_backward_log_softmax", DP_FLOAT64, 2, 1, {{2, 300, 1024}, {2, 300, 1024}}, {"axis", "0", NULL}},
    {"sum rows", "sum", DP_FLOAT32, 1, 1, {{2, 700, 600}}, {"axis", "(1,)", NULL}},
    {"sum columns", "sum", DP_FLOAT32, 1, 1, {{2, 700, 600}}, {"axis", "(0,)", NULL}},
    {"mean middle", "mean", DP_FLOAT64, 1, 1, {{3, 20, 300, 40}}, {"axis", "(1,)", NULL}},
    {"sum all", "sum", DP_FLOAT32, 1, 1, {{2, 700, 600}}, {NULL}},
    {"mean all float64", "mean", DP_FLOAT64, 1, 1, {{3, 70, 60, 50}}, {NULL}},
    {"max all", "max", DP_FLOAT32, 1, 1, {{2, 700, 600}}, {NULL}},
    {"min two outputs", "min", DP_FLOAT32, 1, 1, {{2, 2, 300000}}, {"axis", "(1,)", NULL}},
    {"sum grad", "_backward_sum", DP_FLOAT32, 2, 1, {{1, 600}, {2, 700, 600}}, {"axis", "(0,)", NULL}},
    {"max grad", "_backward_max", DP_FLOAT32, 2, 1, {{1, 700}, {2, 700, 600}}, {"axis", "(1,)", NULL}},
    {"sum int32 rows", "sum", DP_INT32, 1, 1, {{2, 700, 600}}, {"axis", "(1,)", NULL}},
    {"sum int64 all", "sum", DP_INT64, 1, 1, {{2, 700, 600}}, {NULL}},
    {"max int32 columns", "max", DP_INT32, 1, 1, {{2, 700, 600}}, {"axis", "(0,)", NULL}},
    {"min int64 two outputs", "min", DP_INT64, 1, 1, {{2, 2, 300000}}, {"axis", "(1,)", NULL}},
    {"argmax ties rows", "argmax", DP_FLOAT32, 1, 1, {{2, 700, 600}}, {"axis", "1", NULL}},
    {"argmax ties columns", "argmax", DP_FLOAT32, 1, 1, {{2, 700, 600}}, {"axis", "0", NULL}},
    {"argmax ties all", "argmax", DP_FLOAT64, 1, 1, {{2, 700, 600}}, {NULL}},
    {"argmax int32 two outputs", "argmax", DP_INT32, 1, 1, {{2, 2, 300000}}, {"axis", "1", NULL}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static dp_shape shape_of(const int64_t *d) {
    dp_shape s;
    int i;
    memset(&s, 0, sizeof s);
    s.ndim = (int)d[0];
    for (i = 0; i < s.ndim; i++) s.dims[i] = d[1 + i];
    return s;
}
static int nkw(const pcase *c) { int n = 0; while (c->kw[2 * n]) n++; return n; }
static const char *keys_of(const pcase *c, int i) { return c->kw[2 * i]; }

/* Runs case ci on e; its outputs' bytes, concatenated, in *out (malloc'd),
   their count in *bytes. Returns 0 on success. */
static int run_case(dp_engine *e, int ci, unsigned char **out, size_t *bytes) {
    const pcase *c = &cases[ci];
    dp_ndarray *in[MAXIN] = {NULL}, *o[DP_MAX_OP_ARRAYS] = {NULL};
    const char *keys[8], *vals[8];
    int i, n = nkw(c), ok = 1;
    size_t total = 0;
    g_rng = 88172645463325252ull + (uint64_t)ci * 7919;
    for (i = 0; i < n; i++) { keys[i] = keys_of(c, i); vals[i] = c->kw[2 * i + 1]; }
    for (i = 0; i < c->nin; i++) {
        dp_shape s = shape_of(c->shapes[i]);
        int64_t k, m = dp_shape_size(&s);
        size_t es = dp_dtype_size(c->t);
        void *h = malloc((size_t)m * es);
        for (k = 0; k < m; k++) {
            double v = urand();
            if (strstr(c->name, "batchnorm") && i == 5 - (c->nout == 1)) v = 1 + fabs(v);   /* a variance */
            if (strstr(c->name, "ties")) v = floor(v * 4);                            /* many equal bests */
            if (c->t == DP_FLOAT32) ((float *)h)[k] = (float)v;
            else if (c->t == DP_FLOAT64) ((double *)h)[k] = v;
            else if (c->t == DP_INT32) ((int32_t *)h)[k] = (int32_t)(v * 1000);
            else ((int64_t *)h)[k] = (int64_t)(v * 4e18);                   /* sums wrap around */
        }
        ok &= dp_nd_from_host(e, &s, c->t, CPU0, h, &in[i]) == DP_OK;
        free(h);
    }
    ok &= invoke_str(e, c->op, c->nin, in, n, keys, vals, 0, c->nout, o, NULL) == DP_OK;
    for (i = 0; ok && i < c->nout; i++) total += dp_nd_bytes(o[i]);
    *out = (unsigned char *)malloc(total ? total : 1);
    *bytes = total;
    total = 0;
    for (i = 0; ok && i < c->nout; i++) {
        ok &= dp_nd_read(o[i], *out + total, dp_nd_bytes(o[i]), NULL) == DP_OK;
        total += dp_nd_bytes(o[i]);
    }
    for (i = 0; i < c->nin; i++) if (in[i]) dp_nd_release(in[i]);
    for (i = 0; i < c->nout; i++) if (o[i]) dp_nd_release(o[i]);
    if (!ok) fprintf(stderr, "  case %s failed to run\n", c->name);
    return ok ? 0 : -1;
}
static dp_engine *make(dp_engine_type type, int workers) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = workers; d.ignore_env = 1; d.logger.func = quiet_logger;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}

/* every case on every engine and worker count: the same bytes as on the
   per-device engine with 1 worker; with 2 workers each called the range loop */
static void bitwise_everywhere(void) {
    static const struct { dp_engine_type type; int workers; const char *name; } engines[] = {
        {DP_ENGINE_PERDEVICE, 1, "perdevice 1"}, {DP_ENGINE_PERDEVICE, 2, "perdevice 2"}, {DP_ENGINE_PERDEVICE, 3, "perdevice 3"},
        {DP_ENGINE_PERDEVICE, 4, "perdevice 4"}, {DP_ENGINE_NAIVE, 1, "naive"}, {DP_ENGINE_POOLED, 2, "pooled 2"}};
    unsigned char *want[NCASES];
    size_t want_n[NCASES];
    int ei, ci;
    memset(want, 0, sizeof want);
    for (ei = 0; ei < (int)(sizeof engines / sizeof engines[0]); ei++) {
        dp_engine *e = make(engines[ei].type, engines[ei].workers);
        CHECK(e != NULL);
        if (!e) continue;
        for (ci = 0; ci < NCASES; ci++) {
            unsigned char *got = NULL;
            size_t n = 0;
            int before = __atomic_load_n(&g_ranges, __ATOMIC_RELAXED);
            CHECK(run_case(e, ci, &got, &n) == 0);
            if (engines[ei].type == DP_ENGINE_PERDEVICE && engines[ei].workers == 2 && __atomic_load_n(&g_ranges, __ATOMIC_RELAXED) == before) {
                fprintf(stderr, "  %s: the kernel did not use the range loop\n", cases[ci].name);
                CHECK(0);
            }
            if (!want[ci]) { want[ci] = got; want_n[ci] = n; continue; }
            if (n != want_n[ci] || memcmp(got, want[ci], n) != 0) {
                fprintf(stderr, "  %s on %s: not the same bits as on perdevice 1\n", cases[ci].name, engines[ei].name);
                CHECK(0);
            }
            free(got);
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
    for (ci = 0; ci < NCASES; ci++) free(want[ci]);
}

/* reductions split over their outputs sum each in the serial order: the
   same bits as a sequential sum in double; a whole-array sum split along
   the array is within rounding of it; small arrays stay on one core */
static void reductions_as_serial(void) {
    enum { R = 700, C = 600 };
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2);
    float *x = (float *)malloc(sizeof(float) * R * C), rows[R], cols[C], all, small;
    double s;
    dp_shape sh;
    dp_ndarray *a = NULL, *b = NULL;
    const char *ax = "axis", *v1 = "(1,)", *v0 = "(0,)";
    int i, j, before;
    CHECK(e != NULL && x != NULL);
    if (!e || !x) { free(x); if (e) dp_engine_destroy(e, NULL); return; }
    g_rng = 12345;
    for (i = 0; i < R * C; i++) x[i] = (float)(urand() * 1000);
    memset(&sh, 0, sizeof sh); sh.ndim = 2; sh.dims[0] = R; sh.dims[1] = C;
    CHECK(dp_nd_from_host(e, &sh, DP_FLOAT32, CPU0, x, &a) == DP_OK);
    b = NULL;
    CHECK(invoke_str(e, "sum", 1, &a, 1, &ax, &v1, 0, 1, &b, NULL) == DP_OK);
    CHECK(dp_nd_read(b, rows, sizeof rows, NULL) == DP_OK);
    dp_nd_release(b); b = NULL;
    for (i = 0; i < R; i++) { for (s = 0, j = 0; j < C; j++) s += x[i * C + j]; CHECK(rows[i] == (float)s); }
    CHECK(invoke_str(e, "sum", 1, &a, 1, &ax, &v0, 0, 1, &b, NULL) == DP_OK);
    CHECK(dp_nd_read(b, cols, sizeof cols, NULL) == DP_OK);
    dp_nd_release(b); b = NULL;
    for (j = 0; j < C; j++) { for (s = 0, i = 0; i < R; i++) s += x[i * C + j]; CHECK(cols[j] == (float)s); }
    CHECK(invoke_str(e, "sum", 1, &a, 0, NULL, NULL, 0, 1, &b, NULL) == DP_OK);
    CHECK(dp_nd_read(b, &all, sizeof all, NULL) == DP_OK);
    dp_nd_release(b); b = NULL;
    for (s = 0, i = 0; i < R * C; i++) s += x[i];
    CHECK(fabs(all - s) <= 1e-6 * fabs(s) + 1e-3);
    dp_nd_release(a); a = NULL;
    /* under DP__PAR_MIN (2^17) elements: the serial walk, no range */
    sh.dims[0] = 100; sh.dims[1] = 1000;
    CHECK(dp_nd_from_host(e, &sh, DP_FLOAT32, CPU0, x, &a) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    before = __atomic_load_n(&g_ranges, __ATOMIC_RELAXED);
    CHECK(invoke_str(e, "sum", 1, &a, 0, NULL, NULL, 0, 1, &b, NULL) == DP_OK);
    CHECK(dp_nd_read(b, &small, sizeof small, NULL) == DP_OK);
    CHECK(__atomic_load_n(&g_ranges, __ATOMIC_RELAXED) == before);
    for (s = 0, i = 0; i < 100 * 1000; i++) s += x[i];
    CHECK(small == (float)s);
    dp_nd_release(b); dp_nd_release(a);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    free(x);
}

/* integer reductions and argmax split over the range loop give exactly
   the serial walk's result: wrapping int64 sums and the first best index
   (ties and NaN: NumPy's first), checked against plain loops here */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static void ints_and_argmax_as_serial(void) {
    enum { R = 600, C = 700 };
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2);
    int64_t *xi = (int64_t *)malloc(sizeof(int64_t) * R * C), sums[R], all, got64[C], want;
    float *xf = (float *)malloc(sizeof(float) * R * C);
    dp_shape sh;
    dp_ndarray *a = NULL, *b = NULL;
    const char *ax = "axis", *v1 = "(1,)", *a0 = "0", *a1 = "1";
    int i, j, before;
    CHECK(e != NULL && xi != NULL && xf != NULL);
    if (!e || !xi || !xf) { free(xi); free(xf); if (e) dp_engine_destroy(e, NULL); return; }
    g_rng = 4242;
    for (i = 0; i < R * C; i++) { xi[i] = (int64_t)(urand() * 9e18); xf[i] = (float)floor(urand() * 3); }
    for (i = 300001; i < R * C; i += 997) xf[i] = NAN;        /* a NaN in some rows and columns, none early */
    memset(&sh, 0, sizeof sh); sh.ndim = 2; sh.dims[0] = R; sh.dims[1] = C;
    CHECK(dp_nd_from_host(e, &sh, DP_INT64, CPU0, xi, &a) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    before = __atomic_load_n(&g_ranges, __ATOMIC_RELAXED);
    CHECK(invoke_str(e, "sum", 1, &a, 1, &ax, &v1, 0, 1, &b, NULL) == DP_OK);
    CHECK(dp_nd_read(b, sums, sizeof sums, NULL) == DP_OK);
    dp_nd_release(b); b = NULL;
    for (i = 0; i < R; i++) { for (want = 0, j = 0; j < C; j++) want = wrap_add(want, xi[i * C + j]); CHECK(sums[i] == want); }
    CHECK(invoke_str(e, "sum", 1, &a, 0, NULL, NULL, 0, 1, &b, NULL) == DP_OK);
    CHECK(dp_nd_read(b, &all, sizeof all, NULL) == DP_OK);
    dp_nd_release(b); b = NULL;
    for (want = 0, i = 0; i < R * C; i++) want = wrap_add(want, xi[i]);
    CHECK(all == want);
    CHECK(invoke_str(e, "argmax", 1, &a, 0, NULL, NULL, 0, 1, &b, NULL) == DP_OK);
    CHECK(dp_nd_read(b, &all, sizeof all, NULL) == DP_OK);
    dp_nd_release(b); b = NULL;
    for (want = 0, i = 1; i < R * C; i++) if (xi[i] > xi[want]) want = i;
    CHECK(all == want);
    CHECK(__atomic_load_n(&g_ranges, __ATOMIC_RELAXED) >= before + 3);
    dp_nd_release(a); a = NULL;
    CHECK(dp_nd_from_host(e, &sh, DP_FLOAT32, CPU0, xf, &a) == DP_OK);
    CHECK(invoke_str(e, "argmax", 1, &a, 1, &ax, &a0, 0, 1, &b, NULL) == DP_OK);   /* over the rows: one per column */
    CHECK(dp_nd_read(b, got64, sizeof got64, NULL) == DP_OK);
    dp_nd_release(b); b = NULL;
    for (j = 0; j < C; j++) {
        int64_t w = 0;
        for (i = 1; i < R; i++) { float v = xf[i * C + j], best = xf[w * C + j]; if (best == best && (v > best || v != v)) w = i; }
        CHECK(got64[j] == w);
    }
    CHECK(invoke_str(e, "argmax", 1, &a, 1, &ax, &a1, 0, 1, &b, NULL) == DP_OK);   /* along each row */
    {
        int64_t *rows = (int64_t *)malloc(sizeof(int64_t) * R);
        CHECK(rows != NULL && dp_nd_read(b, rows, sizeof(int64_t) * R, NULL) == DP_OK);
        for (i = 0; rows && i < R; i++) {
            int64_t w = 0;
            for (j = 1; j < C; j++) { float v = xf[i * C + j], best = xf[i * C + w]; if (best == best && (v > best || v != v)) w = j; }
            CHECK(rows[i] == w);
        }
        free(rows);
    }
    dp_nd_release(b); b = NULL;
    CHECK(invoke_str(e, "argmax", 1, &a, 0, NULL, NULL, 0, 1, &b, NULL) == DP_OK);   /* flattened: the first NaN */
    CHECK(dp_nd_read(b, &all, sizeof all, NULL) == DP_OK);
    CHECK(all == 300001);
    dp_nd_release(b); b = NULL;
    dp_nd_release(a); a = NULL;
    for (i = 300001; i < R * C; i += 997) xf[i] = 1;         /* no NaN: the first of many 2s */
    CHECK(dp_nd_from_host(e, &sh, DP_FLOAT32, CPU0, xf, &a) == DP_OK);
    CHECK(invoke_str(e, "argmax", 1, &a, 0, NULL, NULL, 0, 1, &b, NULL) == DP_OK);
    CHECK(dp_nd_read(b, &all, sizeof all, NULL) == DP_OK);
    for (want = 0, i = 1; i < R * C; i++) if (xf[i] > xf[want]) want = i;
    CHECK(all == want);
    dp_nd_release(b); dp_nd_release(a);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    free(xi); free(xf);
}

int main(void) {
    static const test_case tests[] = {
        {"large kernels bitwise the same on every engine and 1-4 workers, and split over the range loop", bitwise_everywhere},
        {"reductions over outputs as the serial walk; small ones on one core", reductions_as_serial},
        {"integer reductions and argmax split, exactly the serial walk's results", ints_and_argmax_as_serial},
    };
    dp_test_hook_fn = count_hook;   /* before any engine starts a thread */
    return run_tests("par_kernels", tests, sizeof tests / sizeof tests[0]);
}
