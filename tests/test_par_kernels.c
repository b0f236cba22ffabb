/* tests/test_par_kernels.c - the kernels that split their work over the
   engine's range loop (dp_parallel_for): Convolution and Deconvolution
   (im2col + GEMM and direct, forward and gradients), Pooling, Activation,
   the tanh and sigmoid operators and their gradients,
   BatchNorm, softmax and the reductions (sum, mean, max, min and their
   gradients, along axes and over the whole array), the broadcast binary
   operators and their gradients (also against the serial walk), Dropout
   (its mask drawn counter-based: the same at any split) and its
   gradient, FullyConnected's bias. Each runs at sizes over
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
    {"add broadcast rows", "add", DP_FLOAT32, 2, 1, {{2, 300, 1000}, {1, 1000}}, {NULL}},
    {"mul broadcast channels float64", "mul", DP_FLOAT64, 2, 1, {{4, 16, 20, 24, 24}, {3, 20, 1, 1}}, {NULL}},
    {"_backward_mul broadcast channels", "_backward_mul", DP_FLOAT32, 3, 2, {{4, 16, 20, 24, 24}, {4, 16, 20, 24, 24}, {3, 20, 1, 1}}, {NULL}},
    {"_backward_sub broadcast columns float64", "_backward_sub", DP_FLOAT64, 3, 2, {{2, 1024, 300}, {2, 1024, 300}, {2, 1024, 1}}, {NULL}},
    {"_backward_maximum same shapes", "_backward_maximum", DP_FLOAT32, 3, 2, {{2, 700, 400}, {2, 700, 400}, {2, 700, 400}}, {NULL}},
    {"dropout", "Dropout", DP_FLOAT32, 1, 2, {{2, 600, 512}}, {"p", "0.3", "is_train", "true", NULL}},
    {"dropout shared axes float64", "Dropout", DP_FLOAT64, 1, 2, {{3, 40, 60, 70}}, {"p", "0.5", "mode", "always", "axes", "(1,)", NULL}},
    {"FullyConnected with bias", "FullyConnected", DP_FLOAT32, 3, 1, {{2, 600, 64}, {2, 512, 64}, {1, 512}}, {"num_hidden", "512", NULL}},
    {"dropout grad", "_backward_Dropout", DP_FLOAT32, 4, 1, {{2, 600, 512}, {2, 600, 512}, {2, 600, 512}, {2, 600, 512}}, {"p", "0.3", NULL}},
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

/* Broadcast binary operators and their gradients against the serial walk
   written out here (what the kernels computed before they were split and
   specialised): each output element f(a, b) in double, stored by
   dp_dtype_store (in wrapping int64 for the integer forms); each input gradient from 0 (write) or its value (add-to),
   each term o * df added in the output's C order and rounded to the dtype
   at once. Random broadcast shapes up to 5 axes, large ones over the range
   loop's threshold, float32, float64, float16, int32, int64 and uint8,
   write and add-to;
   bitwise (NaN: any NaN). */
static double ref_f(int op, double a, double b) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return b != b ? b : b > a ? b : a;
    case 5: return b != b ? b : b < a ? b : a;
    default: return pow(a, b);
    }
}
static double ref_df(int op, double a, double b, int w) {
    switch (op) {
    case 0: return 1;
    case 1: return w ? -1 : 1;
    case 2: return w ? a : b;
    case 3: return w ? -a / (b * b) : 1 / b;
    case 4: return w ? (double)(a < b) : (double)(a >= b);
    case 5: return w ? (double)(a > b) : (double)(a <= b);
    default: return w ? pow(a, b) * log(a) : b * pow(a, b - 1);
    }
}
/* The integer forms (add, sub, mul, maximum, minimum on integer arrays):
   in int64, wrapping, stored as the low bytes (little-endian), add-to
   wrapping too. */
static int int_form(int op, dp_dtype t) { return (t == DP_INT32 || t == DP_INT64 || t == DP_UINT8) && op != 3 && op != 6; }
static void ref_store_int(int op, dp_dtype t, void *y, int64_t i, int64_t a, int64_t b, dp_req req) {
    uint64_t r = op == 0 ? (uint64_t)a + (uint64_t)b : op == 1 ? (uint64_t)a - (uint64_t)b : op == 2 ? (uint64_t)a * (uint64_t)b
                 : (uint64_t)(op == 4 ? (a >= b ? a : b) : (a <= b ? a : b));
    size_t es = dp_dtype_size(t);
    if (req == DP_REQ_ADD) r += (uint64_t)(int64_t)dp_dtype_load(t, y, i);
    memcpy((char *)y + (size_t)i * es, &r, es);
}
static const char *const bops[7] = {"add", "sub", "mul", "div", "maximum", "minimum", "power"};
static int same_elems(dp_dtype t, const void *x, const void *y, int64_t n) {
    int64_t i;
    size_t es = dp_dtype_size(t);
    for (i = 0; i < n; i++) {
        double u = dp_dtype_load(t, x, i), v = dp_dtype_load(t, y, i);
        if (memcmp((const char *)x + i * es, (const char *)y + i * es, es) != 0 && !(u != u && v != v)) return 0;
    }
    return 1;
}
/* element strides of an input shaped s (ndim k) over the output o */
static void bstrides(const dp_shape *o, const dp_shape *s, int64_t *st) {
    int64_t acc = 1;
    int d;
    for (d = o->ndim - 1; d >= 0; d--) {
        int k = d - (o->ndim - s->ndim);
        int64_t n = k >= 0 ? s->dims[k] : 1;
        st[d] = n == 1 ? 0 : acc;
        acc *= n;
    }
}
static void *rand_arr(dp_dtype t, int64_t n, int ints) {
    void *h = malloc((size_t)(n ? n : 1) * dp_dtype_size(t));
    int64_t i;
    for (i = 0; h && i < n; i++) {
        double v = urand();
        v = ints || t == DP_INT32 || t == DP_INT64 || t == DP_UINT8 ? floor(v * 6) : floor(v * 64) / 32 + 0.0078125;   /* ties, never 0 */
        dp_dtype_store(t, h, i, v, DP_REQ_WRITE);
    }
    return h;
}
static int bcast_one(dp_engine *e, int op, dp_dtype t, const dp_shape *as, const dp_shape *bs, int reqmode) {
    dp_shape os;
    int64_t n, na = dp_shape_size(as), nb = dp_shape_size(bs), sa[DP_MAX_DIMS], sb[DP_MAX_DIMS], idx[DP_MAX_DIMS] = {0}, ia, ib, i;
    int d, ok = 1, w;
    size_t es = dp_dtype_size(t);
    void *a, *b, *y0, *og, *ga0, *gb0, *want, *wga, *wgb, *got;
    dp_ndarray *arr[5] = {NULL}, *outs[2];
    dp_req req[2];
    memset(&os, 0, sizeof os);
    os.ndim = as->ndim > bs->ndim ? as->ndim : bs->ndim;
    for (d = 0; d < os.ndim; d++) {
        int ka = d - (os.ndim - as->ndim), kb = d - (os.ndim - bs->ndim);
        int64_t da = ka >= 0 ? as->dims[ka] : 1, db = kb >= 0 ? bs->dims[kb] : 1;
        os.dims[d] = da == 1 ? db : da;
    }
    n = dp_shape_size(&os);
    bstrides(&os, as, sa); bstrides(&os, bs, sb);
    a = rand_arr(t, na, 0); b = rand_arr(t, nb, 0); y0 = rand_arr(t, n, 0); og = rand_arr(t, n, 0);
    ga0 = rand_arr(t, na, 0); gb0 = rand_arr(t, nb, 0);
    want = malloc((size_t)(n ? n : 1) * es); wga = malloc((size_t)(na ? na : 1) * es); wgb = malloc((size_t)(nb ? nb : 1) * es);
    got = malloc((size_t)(n + na + nb + 1) * es);
    if (!a || !b || !y0 || !og || !ga0 || !gb0 || !want || !wga || !wgb || !got) { ok = 0; goto done; }
    /* forward: write (reqmode 0) or add-to */
    req[0] = reqmode ? DP_REQ_ADD : DP_REQ_WRITE;
    memcpy(want, y0, (size_t)n * es);
    for (i = 0, ia = ib = 0; i < n; i++) {
        if (int_form(op, t)) ref_store_int(op, t, want, i, (int64_t)dp_dtype_load(t, a, ia), (int64_t)dp_dtype_load(t, b, ib), req[0]);
        else dp_dtype_store(t, want, i, ref_f(op, dp_dtype_load(t, a, ia), dp_dtype_load(t, b, ib)), req[0]);
        for (d = os.ndim - 1; d >= 0; d--) {
            ia += sa[d]; ib += sb[d];
            if (++idx[d] < os.dims[d]) break;
            ia -= sa[d] * idx[d]; ib -= sb[d] * idx[d]; idx[d] = 0;
        }
    }
    ok &= dp_nd_from_host(e, as, t, CPU0, a, &arr[0]) == DP_OK && dp_nd_from_host(e, bs, t, CPU0, b, &arr[1]) == DP_OK
          && dp_nd_from_host(e, &os, t, CPU0, y0, &arr[2]) == DP_OK;
    outs[0] = arr[2];
    ok = ok && invoke_str(e, bops[op], 2, arr, 0, NULL, NULL, 0, 1, outs, req) == DP_OK && dp_nd_read(arr[2], got, (size_t)n * es, NULL) == DP_OK;
    if (ok && !same_elems(t, got, want, n)) { fprintf(stderr, "  %s %s: forward differs from the serial walk\n", bops[op], dp_dtype_name(t)); ok = 0; }
    /* gradient: (write, write), (add, write) or (write, add) */
    req[0] = reqmode == 1 ? DP_REQ_ADD : DP_REQ_WRITE;
    req[1] = reqmode == 2 ? DP_REQ_ADD : DP_REQ_WRITE;
    memcpy(wga, ga0, (size_t)na * es); memcpy(wgb, gb0, (size_t)nb * es);
    for (w = 0; w < 2; w++) if (req[w] == DP_REQ_WRITE) for (i = 0; i < (w ? nb : na); i++) dp_dtype_store(t, w ? wgb : wga, i, 0, DP_REQ_WRITE);
    memset(idx, 0, sizeof idx);
    for (i = 0, ia = ib = 0; i < n; i++) {
        double o = dp_dtype_load(t, og, i), x = dp_dtype_load(t, a, ia), z = dp_dtype_load(t, b, ib);
        dp_dtype_store(t, wga, ia, o * ref_df(op, x, z, 0), DP_REQ_ADD);
        dp_dtype_store(t, wgb, ib, o * ref_df(op, x, z, 1), DP_REQ_ADD);
        for (d = os.ndim - 1; d >= 0; d--) {
            ia += sa[d]; ib += sb[d];
            if (++idx[d] < os.dims[d]) break;
            ia -= sa[d] * idx[d]; ib -= sb[d] * idx[d]; idx[d] = 0;
        }
    }
    dp_nd_release(arr[2]); arr[2] = NULL;
    ok = ok && dp_nd_from_host(e, &os, t, CPU0, og, &arr[2]) == DP_OK && dp_nd_from_host(e, as, t, CPU0, ga0, &arr[3]) == DP_OK
         && dp_nd_from_host(e, bs, t, CPU0, gb0, &arr[4]) == DP_OK;
    if (ok) {
        dp_ndarray *gin[3];
        char name[32];
        gin[0] = arr[2]; gin[1] = arr[0]; gin[2] = arr[1]; outs[0] = arr[3]; outs[1] = arr[4];
        snprintf(name, sizeof name, "_backward_%s", bops[op]);
        ok = invoke_str(e, name, 3, gin, 0, NULL, NULL, 0, 2, outs, req) == DP_OK && dp_nd_read(arr[3], got, (size_t)na * es, NULL) == DP_OK
             && dp_nd_read(arr[4], (char *)got + (size_t)na * es, (size_t)nb * es, NULL) == DP_OK;
        if (ok && (!same_elems(t, got, wga, na) || !same_elems(t, (char *)got + (size_t)na * es, wgb, nb))) {
            fprintf(stderr, "  _backward_%s %s (req %d): gradients differ from the serial walk\n", bops[op], dp_dtype_name(t), reqmode);
            ok = 0;
        }
    }
done:
    for (i = 0; i < 5; i++) if (arr[i]) dp_nd_release(arr[i]);
    free(a); free(b); free(y0); free(og); free(ga0); free(gb0); free(want); free(wga); free(wgb); free(got);
    if (!ok) {
        char s1[96], s2[96];
        fprintf(stderr, "  shapes %s and %s\n", dp_shape_format(as, s1, sizeof s1) ? s1 : "?", dp_shape_format(bs, s2, sizeof s2) ? s2 : "?");
    }
    return ok;
}
static void broadcast_as_serial(void) {
    static const int64_t big[][2][5] = {   /* over the threshold: split over the range loop */
        {{2, 300, 1000}, {1, 1000}}, {{1, 1000}, {2, 300, 1000}}, {{4, 16, 20, 24, 24}, {3, 20, 1, 1}},
        {{2, 1024, 300}, {2, 1024, 1}}, {{2, 1, 300}, {3, 2, 1024, 1}}, {{2, 700, 400}, {2, 700, 400}}, {{2, 700, 400}, {0}},
    };
    static const dp_dtype types[6] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32, DP_INT64, DP_UINT8};
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2);
    int r, op, before;
    CHECK(e != NULL);
    if (!e) return;
    g_rng = 777;
    before = __atomic_load_n(&g_ranges, __ATOMIC_RELAXED);
    for (r = 0; r < (int)(sizeof big / sizeof big[0]); r++)
        for (op = 0; op < 7; op++) {
            dp_shape as = shape_of(big[r][0]), bs = shape_of(big[r][1]);
            dp_dtype t = op < 3 ? DP_FLOAT32 : DP_FLOAT64;
            if (r == 2 && op == 4) t = DP_INT32;
            CHECK(bcast_one(e, op, t, &as, &bs, (r + op) % 3));
        }
    CHECK(__atomic_load_n(&g_ranges, __ATOMIC_RELAXED) >= before + 7 * 7);
    for (r = 0; r < 400; r++) {                       /* random small shapes */
        dp_shape as, bs;
        int d, nd = 1 + (int)((urand() + 1) * 2.5);
        memset(&as, 0, sizeof as); memset(&bs, 0, sizeof bs);
        as.ndim = bs.ndim = nd;
        for (d = 0; d < nd; d++) {
            int64_t m = 1 + (int64_t)((urand() + 1) * 3);
            double u = urand();
            as.dims[d] = u < -0.3 ? 1 : m; bs.dims[d] = u > 0.3 ? 1 : m;
            if (r % 50 == 49 && d == 0) as.dims[d] = bs.dims[d] = 0;      /* empty */
        }
        if (r % 3 == 1) { memmove(bs.dims, bs.dims + 1, sizeof(int64_t) * (size_t)(nd - 1)); bs.ndim--; }
        op = r % 7;
        CHECK(bcast_one(e, op, op == 6 && (r / 7) % 6 >= 3 ? DP_FLOAT32 : types[(r / 7) % 6], &as, &bs, (r / 42) % 3));   /* int power: integer form */
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* FullyConnected's bias (unfused: no executor fusing an operator after
   it) splits over the range loop when the output is large, beside the
   GEMM's own split: one range more than the same product without a bias;
   its output is the product without bias plus the bias, added in the
   dtype (float32 and float64), bitwise. */
static void fc_bias_split(void) {
    enum { B = 600, IN = 64, H = 512 };
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 2);
    int d;
    CHECK(e != NULL);
    if (!e) return;
    for (d = 0; d < 2; d++) {
        dp_dtype t = d ? DP_FLOAT64 : DP_FLOAT32;
        size_t es = dp_dtype_size(t);
        int64_t i, j;
        dp_shape xs = {2, {B, IN}}, ws = {2, {H, IN}}, bs = {1, {H}};
        void *x = rand_arr(t, B * IN, 0), *w = rand_arr(t, H * IN, 0), *b = rand_arr(t, H, 0);
        void *y1 = malloc((size_t)B * H * es), *y0 = malloc((size_t)B * H * es);
        dp_ndarray *in[3] = {NULL, NULL, NULL}, *o1 = NULL, *o0 = NULL;
        const char *k1[1] = {"num_hidden"}, *v1[1] = {"512"}, *k0[3] = {"num_hidden", "no_bias", "num_args"}, *v0[3] = {"512", "true", "2"};
        int r0, r1, r2;
        CHECK(x && w && b && y1 && y0);
        CHECK(dp_nd_from_host(e, &xs, t, CPU0, x, &in[0]) == DP_OK && dp_nd_from_host(e, &ws, t, CPU0, w, &in[1]) == DP_OK
              && dp_nd_from_host(e, &bs, t, CPU0, b, &in[2]) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        r0 = __atomic_load_n(&g_ranges, __ATOMIC_RELAXED);
        CHECK(invoke_str(e, "FullyConnected", 2, in, 3, k0, v0, 0, 1, &o0, NULL) == DP_OK && dp_wait_all(e, NULL) == DP_OK);
        r1 = __atomic_load_n(&g_ranges, __ATOMIC_RELAXED);
        CHECK(invoke_str(e, "FullyConnected", 3, in, 1, k1, v1, 0, 1, &o1, NULL) == DP_OK && dp_wait_all(e, NULL) == DP_OK);
        r2 = __atomic_load_n(&g_ranges, __ATOMIC_RELAXED);
        if (r2 - r1 <= r1 - r0) { fprintf(stderr, "  %s: the bias did not use the range loop (%d ranges with it, %d without)\n", dp_dtype_name(t), r2 - r1, r1 - r0); CHECK(0); }
        CHECK(o0 && o1 && dp_nd_read(o0, y0, (size_t)B * H * es, NULL) == DP_OK && dp_nd_read(o1, y1, (size_t)B * H * es, NULL) == DP_OK);
        for (i = 0; i < B; i++)
            for (j = 0; j < H; j++) dp_dtype_store(t, y0, i * H + j, dp_dtype_load(t, b, j), DP_REQ_ADD);
        CHECK(memcmp(y0, y1, (size_t)B * H * es) == 0);
        for (i = 0; i < 3; i++) if (in[i]) dp_nd_release(in[i]);
        if (o0) dp_nd_release(o0);
        if (o1) dp_nd_release(o1);
        free(x); free(w); free(b); free(y0); free(y1);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

int main(void) {
    static const test_case tests[] = {
        {"large kernels bitwise the same on every engine and 1-4 workers, and split over the range loop", bitwise_everywhere},
        {"reductions over outputs as the serial walk; small ones on one core", reductions_as_serial},
        {"integer reductions and argmax split, exactly the serial walk's results", ints_and_argmax_as_serial},
        {"broadcast binary operators and gradients: the serial walk's bits, split over the range loop", broadcast_as_serial},
        {"FullyConnected's bias split over the range loop, the product plus the bias", fc_bias_split},
    };
    dp_test_hook_fn = count_hook;   /* before any engine starts a thread */
    return run_tests("par_kernels", tests, sizeof tests / sizeof tests[0]);
}
