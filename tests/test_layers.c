/* depeng_nn.h's layers: Convolution, Deconvolution, Pooling, Activation,
   LeakyReLU, Flatten. Gradients against finite differences over every
   parameter class (strides, pads, dilation, groups, no_bias, adj and
   target_shape, pooling types and conventions, 1-D and 2-D), through
   autograd; Convolution's two implementations against each other; bad
   parameters refused with the operator (or node), the parameter and the
   shapes in the log line; MXNet symbol JSON with MXNet's spellings loaded,
   inferred, bound and run; the element-wise layers' loops per dtype bitwise
   against each element computed alone. The last line is "layers: N
   passed, M failed". */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/test_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static const dp_ctx CPU0 = {DP_DEV_CPU, 0};
static char g_msg[1024];     /* the last error line logged */
static void msg_logger(const char *tag, uint32_t level, uint32_t item, const char *msg, uint32_t line, const char *file, void *user) {
    quiet_logger(tag, level, item, msg, line, file, user);
    if (level == DP_LOG_ERROR) snprintf(g_msg, sizeof g_msg, "%s", msg);
}
static dp_engine *make_engine(void) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.logger.func = msg_logger;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    return e;
}
static uint64_t g_rng = 88172645463325252ull;
static double urand(void) {      /* uniform in [-1, 1) */
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0 * 2 - 1;
}
static dp_shape shape_of(const int64_t *d) {
    dp_shape s;
    memset(&s, 0, sizeof s);
    while (s.ndim < 6 && d[s.ndim] > 0) { s.dims[s.ndim] = d[s.ndim]; s.ndim++; }
    return s;
}
static dp_ndarray *from(dp_engine *e, dp_shape s, dp_dtype t, const double *v) {
    int64_t n = dp_shape_size(&s), i;
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    dp_ndarray *a = NULL;
    for (i = 0; i < n; i++) { if (t == DP_FLOAT32) ((float *)buf)[i] = (float)v[i]; else ((double *)buf)[i] = v[i]; }
    CHECK(dp_nd_from_host(e, &s, t, CPU0, buf, &a) == DP_OK);
    free(buf);
    return a;
}
static int read_all(dp_ndarray *a, double *out) {
    int64_t n = dp_shape_size(dp_nd_shape(a)), i;
    void *buf = malloc(dp_nd_bytes(a) ? dp_nd_bytes(a) : 1);
    int ok = dp_nd_read(a, buf, dp_nd_bytes(a), NULL) == DP_OK;
    for (i = 0; ok && i < n; i++) out[i] = dp_nd_dtype(a) == DP_FLOAT32 ? ((float *)buf)[i] : ((double *)buf)[i];
    free(buf);
    return ok;
}

/* A layer invocation: operator, input shapes (0-ended), parameters. */
typedef struct lcase {
    const char *name, *op;
    int nin;
    int64_t in[3][6];
    const char *kw[24];            /* key, value, ..., NULL */
    unsigned fixed;                /* inputs holding integers in 0..range-1, not differentiated */
    int range;
} lcase;
static int nkw(const lcase *c) { int n = 0; while (c->kw[2 * n]) n++; return n; }
static const char *kv(const lcase *c, int i, int v) { return c->kw[2 * i + v]; }
static dp_ndarray *run(dp_engine *e, const lcase *c, dp_ndarray *const *in, const char *algo) {
    const char *keys[DP_MAX_PARAMS], *vals[DP_MAX_PARAMS];
    dp_ndarray *out = NULL;
    int i, n = nkw(c);
    for (i = 0; i < n; i++) { keys[i] = kv(c, i, 0); vals[i] = kv(c, i, 1); }
    if (algo) { keys[n] = "algo"; vals[n++] = algo; }
    if (invoke_str(e, c->op, c->nin, in, n, keys, vals, 0, 1, &out, NULL) != DP_OK) { fprintf(stderr, "  %s: invoke failed: %s\n", c->name, g_msg); return NULL; }
    return out;
}
/* sum(op(inputs) * r), computed without recording */
static double objective(dp_engine *e, const lcase *c, double *const *v, const double *r, const char *algo) {
    dp_ndarray *in[3], *y;
    double *out, s = 0;
    int64_t n, i;
    int k;
    for (k = 0; k < c->nin; k++) in[k] = from(e, shape_of(c->in[k]), DP_FLOAT64, v[k]);
    y = run(e, c, in, algo);
    for (k = 0; k < c->nin; k++) dp_nd_release(in[k]);
    if (!y) return NAN;
    n = dp_shape_size(dp_nd_shape(y));
    out = (double *)malloc(sizeof(double) * (size_t)n);
    CHECK(read_all(y, out));
    for (i = 0; i < n; i++) s += out[i] * r[i];
    free(out); dp_nd_release(y);
    return s;
}
/* The gradients autograd gives (head gradient r) against central differences. */
static void grad_check(const lcase *c, const char *algo) {
    dp_engine *e = make_engine();
    dp_ndarray *in[3], *y, *head;
    double *v[3], *r, *g;
    int64_t n[3], ny, i;
    int k, bad = 0;
    for (k = 0; k < c->nin; k++) {
        { dp_shape s = shape_of(c->in[k]); n[k] = dp_shape_size(&s); }
        v[k] = (double *)malloc(sizeof(double) * (size_t)n[k]);
        for (i = 0; i < n[k]; i++) v[k][i] = c->fixed >> k & 1 ? (double)(int)((urand() + 1) / 2 * c->range) : urand();
        in[k] = from(e, shape_of(c->in[k]), DP_FLOAT64, v[k]);
        CHECK(dp_nd_attach_grad(in[k], DP_REQ_WRITE) == DP_OK);
    }
    CHECK(dp_autograd_begin() == DP_OK);
    y = run(e, c, in, algo);
    CHECK(dp_autograd_end() == DP_OK);
    if (!y) { CHECK(0); goto done; }
    ny = dp_shape_size(dp_nd_shape(y));
    r = (double *)malloc(sizeof(double) * (size_t)ny);
    for (i = 0; i < ny; i++) r[i] = urand();
    head = from(e, *dp_nd_shape(y), DP_FLOAT64, r);
    CHECK(dp_autograd_backward(y, head, 0) == DP_OK);
    for (k = 0; k < c->nin && !bad; k++) {
        if (c->fixed >> k & 1) continue;
        g = (double *)malloc(sizeof(double) * (size_t)n[k]);
        CHECK(read_all(dp_nd_grad(in[k]), g));
        for (i = 0; i < n[k] && !bad; i++) {
            double keep = v[k][i], up, down, num, h = 1e-6;
            v[k][i] = keep + h; up = objective(e, c, v, r, algo);
            v[k][i] = keep - h; down = objective(e, c, v, r, algo);
            v[k][i] = keep;
            num = (up - down) / (2 * h);
            if (!(fabs(num - g[i]) <= 1e-5 * (1 + fabs(num)))) {
                fprintf(stderr, "  %s%s%s: d/d input %d [%lld]: autograd %.10g, numeric %.10g\n", c->name, algo ? " algo " : "", algo ? algo : "",
                        k, (long long)i, g[i], num);
                bad = 1;
            }
        }
        free(g);
    }
    CHECK(!bad);
    free(r); dp_nd_release(head); dp_nd_release(y);
done:
    for (k = 0; k < c->nin; k++) { dp_nd_release(in[k]); free(v[k]); }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

static const lcase conv_cases[] = {
    {"conv2d plain", "Convolution", 3, {{2, 3, 5, 6}, {4, 3, 3, 3}, {4}}, {"kernel", "(3, 3)", "num_filter", "4", NULL}, 0, 0},
    {"conv2d stride pad", "Convolution", 3, {{1, 2, 6, 5}, {3, 2, 3, 2}, {3}}, {"kernel", "(3, 2)", "num_filter", "3", "stride", "(2, 1)", "pad", "(1, 2)", NULL}, 0, 0},
    {"conv2d dilate", "Convolution", 3, {{1, 2, 7, 7}, {2, 2, 3, 3}, {2}}, {"kernel", "(3, 3)", "num_filter", "2", "dilate", "(2, 1)", "pad", "(1, 1)", NULL}, 0, 0},
    {"conv2d groups no_bias", "Convolution", 2, {{2, 4, 5, 5}, {6, 2, 2, 3}}, {"kernel", "(2, 3)", "num_filter", "6", "num_group", "2", "no_bias", "True", "num_args", "2", "stride", "(1, 2)", NULL}, 0, 0},
    {"conv2d pointwise", "Convolution", 3, {{2, 3, 4, 4}, {5, 3, 1, 1}, {5}}, {"kernel", "(1, 1)", "num_filter", "5", NULL}, 0, 0},
    {"conv1d", "Convolution", 3, {{2, 3, 9}, {4, 3, 3}, {4}}, {"kernel", "(3,)", "num_filter", "4", "stride", "(2,)", "pad", "(1,)", "dilate", "(2,)", NULL}, 0, 0},
    {"conv1d groups", "Convolution", 3, {{1, 6, 7}, {3, 2, 2}, {3}}, {"kernel", "(2,)", "num_filter", "3", "num_group", "3", NULL}, 0, 0},
    {"deconv2d plain", "Deconvolution", 2, {{2, 3, 3, 4}, {3, 2, 3, 3}}, {"kernel", "(3, 3)", "num_filter", "2", NULL}, 0, 0},
    {"deconv2d stride pad adj bias", "Deconvolution", 3, {{1, 2, 3, 3}, {2, 3, 3, 2}, {3}}, {"kernel", "(3, 2)", "num_filter", "3", "stride", "(2, 2)", "pad", "(1, 0)", "adj", "(1, 1)", "no_bias", "false", "num_args", "3", NULL}, 0, 0},
    {"deconv2d groups dilate", "Deconvolution", 2, {{1, 4, 3, 3}, {4, 1, 2, 2}, {0}}, {"kernel", "(2, 2)", "num_filter", "2", "num_group", "2", "dilate", "(2, 2)", NULL}, 0, 0},
    {"deconv2d target_shape", "Deconvolution", 2, {{1, 2, 3, 3}, {2, 2, 4, 4}, {0}}, {"kernel", "(4, 4)", "num_filter", "2", "stride", "(2, 2)", "target_shape", "(6, 7)", NULL}, 0, 0},
    {"deconv1d 1x1 adj", "Deconvolution", 2, {{1, 2, 3}, {2, 2, 1}, {0}}, {"kernel", "(1,)", "num_filter", "2", "dilate", "(2,)", "adj", "(1,)", NULL}, 0, 0},
    {"deconv2d 1x1 adj", "Deconvolution", 2, {{1, 2, 2, 3}, {2, 3, 1, 1}, {0}}, {"kernel", "(1, 1)", "num_filter", "3", "stride", "(2, 1)", "adj", "(1, 0)", NULL}, 0, 0},
    {"deconv2d target_shape zeros", "Deconvolution", 2, {{1, 2, 2, 2}, {2, 2, 3, 3}, {0}}, {"kernel", "(3, 3)", "num_filter", "2", "stride", "(2, 2)", "pad", "(1, 1)", "target_shape", "(0, 0)", NULL}, 0, 0},
    {"deconv1d", "Deconvolution", 2, {{2, 2, 4}, {2, 3, 3}, {0}}, {"kernel", "(3,)", "num_filter", "3", "stride", "(2,)", "pad", "(1,)", NULL}, 0, 0},
};
static void conv_gradients_im2col(void) { size_t i; for (i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) grad_check(&conv_cases[i], "im2col"); }
static void conv_gradients_direct(void) { size_t i; for (i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) grad_check(&conv_cases[i], "direct"); }

static const lcase pool_cases[] = {
    {"max 2x2 s2", "Pooling", 1, {{2, 2, 4, 5}}, {"kernel", "(2, 2)", "stride", "(2, 2)", "pool_type", "max", NULL}, 0, 0},
    {"max 3x3 s2 pad full", "Pooling", 1, {{1, 2, 6, 5}}, {"kernel", "(3, 3)", "stride", "(2, 2)", "pad", "(1, 1)", "pooling_convention", "full", NULL}, 0, 0},
    {"avg pad include", "Pooling", 1, {{1, 2, 5, 5}}, {"kernel", "(3, 2)", "stride", "(2, 1)", "pad", "(1, 1)", "pool_type", "avg", NULL}, 0, 0},
    {"avg pad exclude full", "Pooling", 1, {{1, 2, 6, 5}}, {"kernel", "(3, 3)", "stride", "(2, 2)", "pad", "(1, 1)", "pool_type", "avg", "count_include_pad", "False", "pooling_convention", "full", NULL}, 0, 0},
    {"sum full", "Pooling", 1, {{2, 1, 5, 4}}, {"kernel", "(2, 3)", "stride", "(2, 2)", "pool_type", "sum", "pooling_convention", "full", NULL}, 0, 0},
    {"global max", "Pooling", 1, {{2, 3, 3, 4}}, {"global_pool", "True", "pool_type", "max", NULL}, 0, 0},
    {"global avg 1d", "Pooling", 1, {{2, 3, 5}}, {"global_pool", "True", "pool_type", "avg", NULL}, 0, 0},
    {"max 1d", "Pooling", 1, {{2, 2, 7}}, {"kernel", "(3,)", "stride", "(2,)", "pad", "(1,)", NULL}, 0, 0},
    {"avg 1d full", "Pooling", 1, {{1, 2, 8}}, {"kernel", "(3,)", "stride", "(2,)", "pool_type", "avg", "pooling_convention", "full", NULL}, 0, 0},
};
static void pool_gradients(void) { size_t i; for (i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) grad_check(&pool_cases[i], NULL); }

static const lcase act_cases[] = {
    {"relu", "Activation", 1, {{3, 4}}, {"act_type", "relu", NULL}, 0, 0},
    {"sigmoid", "Activation", 1, {{3, 4}}, {"act_type", "sigmoid", NULL}, 0, 0},
    {"tanh", "Activation", 1, {{3, 4}}, {"act_type", "tanh", NULL}, 0, 0},
    {"softrelu", "Activation", 1, {{3, 4}}, {"act_type", "softrelu", NULL}, 0, 0},
    {"softsign", "Activation", 1, {{3, 4}}, {"act_type", "softsign", NULL}, 0, 0},
    {"leaky", "LeakyReLU", 1, {{3, 4}}, {"act_type", "leaky", "slope", "0.1", NULL}, 0, 0},
    {"elu", "LeakyReLU", 1, {{3, 4}}, {"act_type", "elu", "slope", "0.7", NULL}, 0, 0},
    {"selu", "LeakyReLU", 1, {{3, 4}}, {"act_type", "selu", NULL}, 0, 0},
    {"gelu", "LeakyReLU", 1, {{3, 4}}, {"act_type", "gelu", NULL}, 0, 0},
    {"prelu per channel", "LeakyReLU", 2, {{2, 3, 2, 2}, {3}}, {"act_type", "prelu", "num_args", "2", NULL}, 0, 0},
    {"prelu shared", "LeakyReLU", 2, {{2, 3}, {1}}, {"act_type", "prelu", "num_args", "2", NULL}, 0, 0},
    {"flatten", "Flatten", 1, {{2, 3, 2, 2}}, {NULL}, 0, 0},
};
static const lcase tensor_cases[] = {
    {"expand_dims", "expand_dims", 1, {{2, 3}}, {"axis", "-1", NULL}, 0, 0},
    {"slice_axis", "slice_axis", 1, {{3, 5, 2}}, {"axis", "1", "begin", "-4", "end", "4", NULL}, 0, 0},
    {"slice_axis to the end", "slice_axis", 1, {{4, 3}}, {"axis", "0", "begin", "1", NULL}, 0, 0},
    {"broadcast_to", "broadcast_to", 1, {{1, 3, 1}}, {"shape", "(2, 0, 4)", NULL}, 0, 0},
    {"where", "where", 3, {{3, 4}, {3, 4}, {3, 4}}, {NULL}, 1, 2},
    {"where rows", "where", 3, {{3}, {3, 2}, {3, 2}}, {NULL}, 1, 2},
    {"batch_dot", "batch_dot", 2, {{2, 3, 4}, {2, 4, 2}}, {NULL}, 0, 0},
    {"batch_dot ta", "batch_dot", 2, {{2, 4, 3}, {2, 4, 2}}, {"transpose_a", "true", NULL}, 0, 0},
    {"batch_dot tb", "batch_dot", 2, {{2, 3, 4}, {2, 2, 4}}, {"transpose_b", "true", NULL}, 0, 0},
    {"batch_dot ta tb", "batch_dot", 2, {{2, 4, 3}, {2, 2, 4}}, {"transpose_a", "true", "transpose_b", "true", NULL}, 0, 0},
    {"stack axis 0", "stack", 2, {{2, 3}, {2, 3}}, {"num_args", "2", NULL}, 0, 0},
    {"stack axis -1", "stack", 3, {{2, 3}, {2, 3}, {2, 3}}, {"num_args", "3", "axis", "-1", NULL}, 0, 0},
    {"stack axis 1", "stack", 2, {{2, 3}, {2, 3}}, {"num_args", "2", "axis", "1", NULL}, 0, 0},
    {"Embedding", "Embedding", 2, {{2, 3}, {5, 4}}, {"input_dim", "5", "output_dim", "4", "dtype", "float64", NULL}, 1, 5},
    /* FullyConnected with MXNet's flatten and no_bias */
    {"FullyConnected flatten 3-D", "FullyConnected", 3, {{2, 3, 2}, {4, 6}, {4}}, {"num_hidden", "4", NULL}, 0, 0},
    {"FullyConnected flatten false", "FullyConnected", 3, {{2, 3, 4}, {5, 4}, {5}}, {"num_hidden", "5", "flatten", "False", NULL}, 0, 0},
    {"FullyConnected no_bias", "FullyConnected", 2, {{3, 2, 2}, {4, 4}}, {"num_hidden", "4", "no_bias", "True", "num_args", "2", NULL}, 0, 0},
    {"FullyConnected no_bias flatten false", "FullyConnected", 2, {{2, 2, 3}, {2, 3}},
     {"num_hidden", "2", "no_bias", "true", "num_args", "2", "flatten", "false", NULL}, 0, 0},
};
static void tensor_gradients(void) { size_t i; for (i = 0; i < sizeof tensor_cases / sizeof tensor_cases[0]; i++) grad_check(&tensor_cases[i], NULL); }
/* The losses' gradients, which ignore the head gradient; BlockGrad's 0;
   Embedding refusing an index out of range. */
static void losses_and_blocks(void) {
    dp_engine *e = make_engine();
    int64_t sd[6] = {2, 2}, ld[6] = {2, 2};
    double xv[4] = {0.5, -1, 2, 0}, lv[4] = {1, 0, 1, 0}, g[4], y[4];
    const char *names[5] = {"LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput", "MakeLoss", "BlockGrad"};
    int k, i;
    for (k = 0; k < 5; k++) {
        dp_ndarray *in[2], *out = NULL, *head;
        const char *gk[2] = {"grad_scale", "normalization"}, *gv[2] = {"3", "batch"};
        int nin = k < 3 ? 2 : 1;
        in[0] = from(e, shape_of(sd), DP_FLOAT64, xv); in[1] = from(e, shape_of(ld), DP_FLOAT64, lv);
        head = from(e, shape_of(sd), DP_FLOAT64, lv);     /* ignored by the losses */
        CHECK(dp_nd_attach_grad(in[0], DP_REQ_WRITE) == DP_OK);
        CHECK(dp_autograd_begin() == DP_OK);
        CHECK(invoke_str(e, names[k], nin, in, k < 4 ? (k == 3 ? 2 : 1) : 0, gk, gv, 0, 1, &out, NULL) == DP_OK);
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(out && dp_autograd_backward(out, head, 0) == DP_OK);
        CHECK(out && read_all(out, y) && read_all(dp_nd_grad(in[0]), g));
        for (i = 0; i < 4; i++) {
            double o = k == 1 ? 1 / (1 + exp(-xv[i])) : xv[i], d = o - lv[i];
            double want = k == 0 || k == 1 ? d * 3 / 2 : k == 2 ? (d > 0 ? 1.5 : d < 0 ? -1.5 : 0) : k == 3 ? 1.5 : 0;
            if (fabs(y[i] - o) > 1e-12 || fabs(g[i] - want) > 1e-12) { fprintf(stderr, "  %s [%d]: y %g (want %g), grad %g (want %g)\n", names[k], i, y[i], o, g[i], want); CHECK(0); }
        }
        dp_nd_release(out); dp_nd_release(head); dp_nd_release(in[0]); dp_nd_release(in[1]);
    }
    {
        int64_t dd[6] = {3}, wd[6] = {4, 2};
        double idx[3] = {1, 4, 0}, w[8] = {0};
        dp_ndarray *in[2], *out = NULL;
        const char *ek[2] = {"input_dim", "output_dim"}, *ev[2] = {"4", "2"};
        dp_failure f;
        in[0] = from(e, shape_of(dd), DP_FLOAT32, idx); in[1] = from(e, shape_of(wd), DP_FLOAT32, w);
        CHECK(invoke_str(e, "Embedding", 2, in, 2, ek, ev, 0, 1, &out, NULL) == DP_OK);
        memset(&f, 0, sizeof f);
        CHECK(out && dp_nd_wait_to_read(out, &f) != DP_OK);
        CHECK(strstr(f.message, "Embedding") && strstr(f.message, "index 4"));
        if (!strstr(f.message, "index 4")) fprintf(stderr, "  got: %s\n", f.message);
        dp_nd_release(out); dp_nd_release(in[0]); dp_nd_release(in[1]);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* SliceChannel: three parts of axis 1, one unused; the gradient puts each
   part's head gradient in its place (0 for the unused one); squeeze_axis;
   MXNet's num_outputs in a symbol node. */
static void slice_channel(void) {
    dp_engine *e = make_engine();
    int64_t xd[6] = {2, 6, 2}, pd[6] = {2, 2, 2};
    double xv[24], r0[8], r2[8], g[24], y[8];
    dp_ndarray *x, *parts[3] = {NULL, NULL, NULL}, *h0 = NULL, *h2 = NULL, *h = NULL, *a0, *a2, *ones;
    const char *k[2] = {"num_args", "axis"}, *v[2] = {"3", "1"};
    int i, j, c;
    for (i = 0; i < 24; i++) xv[i] = urand();
    for (i = 0; i < 8; i++) { r0[i] = urand(); r2[i] = urand(); y[i] = 1; }
    x = from(e, shape_of(xd), DP_FLOAT64, xv);
    a0 = from(e, shape_of(pd), DP_FLOAT64, r0); a2 = from(e, shape_of(pd), DP_FLOAT64, r2); ones = from(e, shape_of(pd), DP_FLOAT64, y);
    CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
    CHECK(dp_autograd_begin() == DP_OK);
    CHECK(invoke_str(e, "SliceChannel", 1, &x, 2, k, v, 0, 3, parts, NULL) == DP_OK);
    if (parts[0] && parts[2]) {
        dp_ndarray *in[2];
        in[0] = parts[0]; in[1] = a0; CHECK(invoke_str(e, "mul", 2, in, 0, NULL, NULL, 0, 1, &h0, NULL) == DP_OK);
        in[0] = parts[2]; in[1] = a2; CHECK(invoke_str(e, "mul", 2, in, 0, NULL, NULL, 0, 1, &h2, NULL) == DP_OK);
        in[0] = h0; in[1] = h2; CHECK(invoke_str(e, "add", 2, in, 0, NULL, NULL, 0, 1, &h, NULL) == DP_OK);
    }
    CHECK(dp_autograd_end() == DP_OK);
    CHECK(h && dp_autograd_backward(h, ones, 0) == DP_OK);
    CHECK(read_all(parts[1], y) && read_all(dp_nd_grad(x), g));
    for (i = 0; i < 2; i++) for (c = 0; c < 6; c++) for (j = 0; j < 2; j++) {
        int part = c / 2, pi = (i * 2 + c % 2) * 2 + j;
        double want = part == 0 ? r0[pi] : part == 2 ? r2[pi] : 0, got = g[(i * 6 + c) * 2 + j];
        if (got != want) { fprintf(stderr, "  d x [%d, %d, %d]: %g, want %g\n", i, c, j, got, want); CHECK(0); }
        if (part == 1 && y[pi] != xv[(i * 6 + c) * 2 + j]) { fprintf(stderr, "  part 1 [%d]: %g\n", pi, y[pi]); CHECK(0); }
    }
    for (i = 0; i < 3; i++) dp_nd_release(parts[i]);
    dp_nd_release(h0); dp_nd_release(h2); dp_nd_release(h); dp_nd_release(a0); dp_nd_release(a2); dp_nd_release(ones); dp_nd_release(x);
    {   /* squeeze_axis: (2, 3) into 3 parts of (2,) */
        int64_t sd[6] = {2, 3};
        const char *k2[3] = {"num_args", "axis", "squeeze_axis"}, *v2[3] = {"3", "-1", "true"};
        dp_ndarray *p3[3] = {NULL, NULL, NULL};
        x = from(e, shape_of(sd), DP_FLOAT64, xv);
        CHECK(invoke_str(e, "SliceChannel", 1, &x, 3, k2, v2, 0, 3, p3, NULL) == DP_OK);
        CHECK(p3[1] && dp_nd_shape(p3[1])->ndim == 1 && read_all(p3[1], y) && y[0] == xv[1] && y[1] == xv[4]);
        for (i = 0; i < 3; i++) dp_nd_release(p3[i]);
        dp_nd_release(x);
    }
    {   /* a symbol node with MXNet's spelling */
        dp_symbol *sx = NULL, *sp = NULL;
        const char *k3[2] = {"num_outputs", "axis"}, *v3[2] = {"4", "0"};
        CHECK(dp_sym_var("x", &sx) == DP_OK);
        CHECK(sym_op("split", "sp", 1, &sx, 2, k3, v3, &sp) == DP_OK);
        CHECK(sp && dp_sym_num_outputs(sp) == 4);
        dp_sym_release(sp); dp_sym_release(sx);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
static void activation_gradients(void) { size_t i; for (i = 0; i < sizeof act_cases / sizeof act_cases[0]; i++) grad_check(&act_cases[i], NULL); }

/* SoftmaxOutput with MXNet's parameters. The gradient (head gradient
   ones) is the cross-entropy's against the smoothed target, so it is
   checked by finite differences of that loss, computed here:
   L = scale * sum over the labels kept of -sum_j target_j log softmax_j,
   softmax over the class axis of data taken as (outer, classes, inner). */
typedef struct socase {
    const char *name;
    int64_t data[6], label[6];
    const char *kw[16];
    int64_t outer, c, inner;
    double alpha, ignore, scale;   /* ignore < 0: none */
} socase;
static double so_loss(const socase *sc, const double *x, const double *lab) {
    double L = 0;
    int64_t o, q, j;
    for (o = 0; o < sc->outer; o++)
        for (q = 0; q < sc->inner; q++) {
            int64_t base = o * sc->c * sc->inner + q, l = (int64_t)lab[o * sc->inner + q];
            double mx = -1e300, sum = 0;
            if (sc->ignore >= 0 && lab[o * sc->inner + q] == sc->ignore) continue;
            for (j = 0; j < sc->c; j++) if (x[base + j * sc->inner] > mx) mx = x[base + j * sc->inner];
            for (j = 0; j < sc->c; j++) sum += exp(x[base + j * sc->inner] - mx);
            for (j = 0; j < sc->c; j++) {
                double t = j == l ? 1 - sc->alpha : sc->alpha / (double)(sc->c - 1);
                L -= t * (x[base + j * sc->inner] - mx - log(sum));
            }
        }
    return L * sc->scale;
}
static void softmax_output_params(void) {
    static const socase cases[] = {
        {"flattened 3-D data", {2, 3, 2}, {2}, {NULL}, 2, 6, 1, 0, -1, 1},
        {"multi_output valid ignore smooth", {2, 3, 2, 2}, {2, 2, 2},
         {"multi_output", "True", "use_ignore", "True", "ignore_label", "2", "smooth_alpha", "0.2", "normalization", "valid", NULL}, 2, 3, 4, 0.2, 2, 0},
        {"preserve_shape batch", {2, 3, 4}, {2, 3}, {"preserve_shape", "1", "normalization", "batch", "grad_scale", "3", NULL}, 6, 4, 1, 0, -1, 1.5},
        {"multi_output label flattened", {2, 4, 3}, {2, 3}, {"multi_output", "true", NULL}, 2, 4, 3, 0, -1, 1},
    };
    dp_engine *e = make_engine();
    size_t ci;
    for (ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        socase sc = cases[ci];
        dp_shape ds = shape_of(sc.data), ls = shape_of(sc.label);
        int64_t n = dp_shape_size(&ds), nl = dp_shape_size(&ls), i, kept = 0;
        double x[64], lab[32], y[64], g[64], worst = 0;
        const char *keys[8], *vals[8];
        int nk = 0;
        dp_ndarray *in[2], *out = NULL;
        while (sc.kw[2 * nk]) { keys[nk] = sc.kw[2 * nk]; vals[nk] = sc.kw[2 * nk + 1]; nk++; }
        for (i = 0; i < n; i++) x[i] = urand() * 2;
        for (i = 0; i < nl; i++) { lab[i] = (double)((i * 7 + 3) % sc.c); kept += !(sc.ignore >= 0 && lab[i] == sc.ignore); }
        if (sc.scale == 0) sc.scale = 1.0 / (double)(kept ? kept : 1);               /* valid */
        in[0] = from(e, ds, DP_FLOAT64, x); in[1] = from(e, ls, DP_FLOAT64, lab);
        CHECK(dp_nd_attach_grad(in[0], DP_REQ_WRITE) == DP_OK);
        CHECK(dp_autograd_begin() == DP_OK);
        CHECK(invoke_str(e, "SoftmaxOutput", 2, in, nk, keys, vals, 0, 1, &out, NULL) == DP_OK);
        CHECK(dp_autograd_end() == DP_OK);
        if (!out) { fprintf(stderr, "  %s: %s\n", sc.name, g_msg); dp_nd_release(in[0]); dp_nd_release(in[1]); continue; }
        CHECK(dp_autograd_backward(out, NULL, 0) == DP_OK);
        CHECK(read_all(out, y) && read_all(dp_nd_grad(in[0]), g));
        {   /* the softmax sums to 1 along the class axis */
            int64_t o, q, j;
            for (o = 0; o < sc.outer; o++)
                for (q = 0; q < sc.inner; q++) {
                    double sum = 0;
                    for (j = 0; j < sc.c; j++) sum += y[o * sc.c * sc.inner + q + j * sc.inner];
                    CHECK(fabs(sum - 1) < 1e-12);
                }
        }
        for (i = 0; i < n; i++) {
            double keep = x[i], h = 1e-6, fd;
            x[i] = keep + h; fd = so_loss(&sc, x, lab);
            x[i] = keep - h; fd -= so_loss(&sc, x, lab);
            x[i] = keep;
            fd /= 2 * h;
            if (fabs(fd - g[i]) > worst) worst = fabs(fd - g[i]);
        }
        if (worst > 1e-6) { fprintf(stderr, "  %s: gradient off by %g from finite differences\n", sc.name, worst); CHECK(0); }
        dp_nd_release(out); dp_nd_release(in[0]); dp_nd_release(in[1]);
    }
    {   /* out_grad multiplies by the head gradient; a label of another shape is refused naming both */
        dp_shape ds = {2, {3, 4}}, ls = {1, {3}}, bad = {1, {4}};
        double x[12], lab[3] = {0, 3, 1}, og[12], y[12], g[12];
        const char *k1[1] = {"out_grad"}, *v1[1] = {"True"};
        dp_ndarray *in[2], *out = NULL, *ogs;
        int i, ok = 1;
        for (i = 0; i < 12; i++) { x[i] = urand(); og[i] = urand(); }
        in[0] = from(e, ds, DP_FLOAT64, x); in[1] = from(e, ls, DP_FLOAT64, lab); ogs = from(e, ds, DP_FLOAT64, og);
        CHECK(dp_nd_attach_grad(in[0], DP_REQ_WRITE) == DP_OK);
        CHECK(dp_autograd_begin() == DP_OK);
        CHECK(invoke_str(e, "SoftmaxOutput", 2, in, 1, k1, v1, 0, 1, &out, NULL) == DP_OK);
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(out && dp_autograd_backward(out, ogs, 0) == DP_OK);
        CHECK(read_all(out, y) && read_all(dp_nd_grad(in[0]), g));
        for (i = 0; i < 12; i++) ok &= fabs(g[i] - (y[i] - (i % 4 == (int)lab[i / 4])) * og[i]) < 1e-15;
        CHECK(ok);
        dp_nd_release(out); dp_nd_release(in[1]); out = NULL;
        in[1] = from(e, bad, DP_FLOAT64, og);
        g_msg[0] = 0;
        CHECK(invoke_str(e, "SoftmaxOutput", 2, in, 0, NULL, NULL, 0, 1, &out, NULL) != DP_OK);
        CHECK(strstr(g_msg, "SoftmaxOutput") && strstr(g_msg, "(3, 4)") && strstr(g_msg, "(4,)") && strstr(g_msg, "(3,)"));
        dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(ogs);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* Activation relu, sigmoid and tanh give bitwise what depeng's relu,
   sigmoid and tanh operators give, forward and gradient, whether invoked
   (with autograd) or run as a symbol's Activation node by the executor:
   float32 values over [-8, 8) and a few special ones. */
/* The Activation types depeng_nn.h computes itself (softrelu, softsign;
   relu, sigmoid and tanh run the built-in operators, above): the forward
   and its gradient (og, data, output) against the formulas, float64 and
   float32, over softrelu's switch to x at 20. */
static void activation_own_types(void) {
    static const double xs[10] = {-30, -2, -0.5, -0.0, 0, 0.5, 2, 19.5, 20.5, 25};
    dp_engine *e = make_engine();
    dp_shape s = {1, {10}};
    int t, d, i;
    for (d = 0; d < 2; d++)
        for (t = 0; t < 2; t++) {
            dp_dtype dt = d ? DP_FLOAT32 : DP_FLOAT64;
            const char *ak[1] = {"act_type"}, *av[1] = {t ? "softsign" : "softrelu"};
            double og[10], y[10], g[10], x[10];
            dp_ndarray *xa, *oa, *in[3], *out = NULL, *gx = NULL;
            for (i = 0; i < 10; i++) { og[i] = 0.25 * (i + 1); x[i] = d ? (double)(float)xs[i] : xs[i]; }
            xa = from(e, s, dt, x); oa = from(e, s, dt, og);
            CHECK(invoke_str(e, "Activation", 1, &xa, 1, ak, av, 0, 1, &out, NULL) == DP_OK);
            in[0] = oa; in[1] = xa; in[2] = out;
            CHECK(out && invoke_str(e, "_backward_Activation", 3, in, 1, ak, av, 0, 1, &gx, NULL) == DP_OK);
            CHECK(out && gx && read_all(out, y) && read_all(gx, g));
            for (i = 0; out && gx && i < 10; i++) {
                double v = x[i], f = t ? v / (1 + fabs(v)) : v > 20 ? v : log1p(exp(v));
                double df = t ? 1 / ((1 + fabs(v)) * (1 + fabs(v))) : 1 / (1 + exp(-v));
                if (d) { f = (float)f; df = (float)(df * og[i]); } else df *= og[i];
                if (y[i] != f || g[i] != df) { fprintf(stderr, "  %s %s x %g: y %.17g (want %.17g), dx %.17g (want %.17g)\n", av[0], dp_dtype_name(dt), v, y[i], f, g[i], df); CHECK(0); }
            }
            dp_nd_release(out); dp_nd_release(gx); dp_nd_release(xa); dp_nd_release(oa);
        }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
static void activation_matches_builtins(void) {
    static const char *const types[3] = {"relu", "sigmoid", "tanh"};
    enum { N = 4096 };
    dp_engine *e = make_engine();
    double *xv = (double *)malloc(sizeof(double) * N), *ov = (double *)malloc(sizeof(double) * N);
    double *y[3], *g[3];
    dp_shape s = {1, {N}};
    int t, i, k;
    for (k = 0; k < 3; k++) { y[k] = (double *)malloc(sizeof(double) * N); g[k] = (double *)malloc(sizeof(double) * N); }
    for (i = 0; i < N; i++) { xv[i] = urand() * 8; ov[i] = urand(); }
    xv[0] = 0; xv[1] = -0.0; xv[2] = 1e-30; xv[3] = 30; xv[4] = -30;
    for (t = 0; t < 3; t++) {
        const char *ak[1] = {"act_type"}, *av[1] = {types[t]};
        dp_ndarray *og = from(e, s, DP_FLOAT32, ov);
        for (k = 0; k < 2; k++) {        /* 0: depeng's operator, 1: Activation, both through autograd */
            dp_ndarray *x = from(e, s, DP_FLOAT32, xv), *out = NULL;
            CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
            CHECK(dp_autograd_begin() == DP_OK);
            CHECK(invoke_str(e, k ? "Activation" : types[t], 1, &x, k, ak, av, 0, 1, &out, NULL) == DP_OK);
            CHECK(dp_autograd_end() == DP_OK);
            CHECK(out && dp_autograd_backward(out, og, 0) == DP_OK);
            CHECK(read_all(out, y[k]) && read_all(dp_nd_grad(x), g[k]));
            dp_nd_release(out); dp_nd_release(x);
        }
        {   /* 2: the executor running a symbol's Activation node */
            dp_symbol *v = NULL, *a = NULL;
            dp_ndarray *x = from(e, s, DP_FLOAT32, xv), *gx = NULL;
            dp_executor *ex = NULL;
            CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &gx) == DP_OK);
            CHECK(dp_sym_var("x", &v) == DP_OK);
            CHECK(sym_op("Activation", "act", 1, &v, 1, ak, av, &a) == DP_OK);
            CHECK(a && exec_bind(e, a, CPU0, 1, &x, &gx, NULL, &ex) == DP_OK);
            if (ex) {
                CHECK(dp_exec_forward(ex, 1) == DP_OK && dp_exec_backward(ex, 1, &og) == DP_OK);
                CHECK(read_all(dp_exec_output(ex, 0), y[2]) && read_all(gx, g[2]));
                dp_exec_destroy(ex);
            }
            dp_sym_release(a); dp_sym_release(v); dp_nd_release(x); dp_nd_release(gx);
        }
        for (k = 1; k < 3; k++) {
            int fy = 0, fg = 0;
            for (i = 0; i < N; i++) { fy += memcmp(&y[k][i], &y[0][i], sizeof(double)) != 0; fg += memcmp(&g[k][i], &g[0][i], sizeof(double)) != 0; }
            if (fy || fg) fprintf(stderr, "  %s by %s: %d outputs and %d gradients differ from the operator's\n", types[t], k == 1 ? "dp_invoke(Activation)" : "the executor", fy, fg);
            CHECK(fy == 0 && fg == 0);
        }
        dp_nd_release(og);
    }
    for (k = 0; k < 3; k++) { free(y[k]); free(g[k]); }
    free(xv); free(ov);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* im2col + GEMM and the direct loops agree, forward and backward, in
   float32 and float64, over random geometries. */
static void conv_implementations_agree(void) {
    dp_engine *e = make_engine();
    int trial, bad = 0;
    for (trial = 0; trial < 90 && !bad; trial++) {
        int deconv = trial % 3 == 2, nd = 1 + (trial % 2), a, k;
        dp_dtype t = trial % 4 < 2 ? DP_FLOAT32 : DP_FLOAT64;
        int64_t g = 1 + (int64_t)((urand() + 1) * 1.5), c = g * (1 + (int64_t)((urand() + 1) * 1.5)), f = g * (1 + (int64_t)((urand() + 1) * 1.5));
        int64_t kk[2], st[2], pd[2], dl[2], sp[2], aj[2], n = 1 + (trial % 3);
        char ks[48], ss[48], ps[48], ds[48], as[48], fs[24], gs[24];
        const char *keys[9], *vals[9];
        dp_shape xs, ws;
        dp_ndarray *in[2], *y[2], *og, *gr[2][2];
        double *ref, *got;
        int64_t m, i;
        for (a = 0; a < nd; a++) {
            kk[a] = 1 + (int64_t)((urand() + 1) * 1.5); st[a] = 1 + (int64_t)((urand() + 1)); dl[a] = 1 + (int64_t)(urand() + 1);
            pd[a] = (int64_t)((urand() + 1) * kk[a] / 2); sp[a] = dl[a] * (kk[a] - 1) + 1 + (int64_t)((urand() + 1) * 3);
            aj[a] = (int64_t)((urand() + 1) / 2 * (double)(st[a] > dl[a] ? st[a] : dl[a]));   /* below stride or dilate */
        }
        if (nd == 2) snprintf(as, sizeof as, "(%lld, %lld)", (long long)aj[0], (long long)aj[1]);
        else snprintf(as, sizeof as, "(%lld,)", (long long)aj[0]);
        if (nd == 2) { snprintf(ks, sizeof ks, "(%lld, %lld)", (long long)kk[0], (long long)kk[1]); snprintf(ss, sizeof ss, "(%lld, %lld)", (long long)st[0], (long long)st[1]);
                       snprintf(ps, sizeof ps, "(%lld, %lld)", (long long)pd[0], (long long)pd[1]); snprintf(ds, sizeof ds, "(%lld, %lld)", (long long)dl[0], (long long)dl[1]); }
        else { snprintf(ks, sizeof ks, "(%lld,)", (long long)kk[0]); snprintf(ss, sizeof ss, "(%lld,)", (long long)st[0]);
               snprintf(ps, sizeof ps, "(%lld,)", (long long)pd[0]); snprintf(ds, sizeof ds, "(%lld,)", (long long)dl[0]); }
        snprintf(fs, sizeof fs, "%lld", (long long)f); snprintf(gs, sizeof gs, "%lld", (long long)g);
        memset(&xs, 0, sizeof xs); memset(&ws, 0, sizeof ws);
        xs.ndim = ws.ndim = nd + 2; xs.dims[0] = n; xs.dims[1] = c; ws.dims[0] = deconv ? c : f; ws.dims[1] = deconv ? f / g : c / g;
        for (a = 0; a < nd; a++) { xs.dims[2 + a] = sp[a]; ws.dims[2 + a] = kk[a]; }
        keys[0] = "kernel"; vals[0] = ks; keys[1] = "stride"; vals[1] = ss; keys[2] = "pad"; vals[2] = deconv ? "()" : ps; keys[3] = "dilate"; vals[3] = ds;
        keys[4] = "num_filter"; vals[4] = fs; keys[5] = "num_group"; vals[5] = gs; keys[6] = "num_args"; vals[6] = "2"; keys[7] = "no_bias"; vals[7] = "true";
        keys[8] = deconv ? "adj" : "workspace"; vals[8] = deconv ? as : "1024";
        {
            double *xv = (double *)malloc(sizeof(double) * (size_t)dp_shape_size(&xs)), *wv = (double *)malloc(sizeof(double) * (size_t)dp_shape_size(&ws));
            for (i = 0; i < dp_shape_size(&xs); i++) xv[i] = urand();
            for (i = 0; i < dp_shape_size(&ws); i++) wv[i] = urand();
            in[0] = from(e, xs, t, xv); in[1] = from(e, ws, t, wv);
            free(xv); free(wv);
        }
        for (k = 0; k < 2; k++) {
            const char *kk2[10], *vv2[10];
            memcpy(kk2, keys, sizeof keys); memcpy(vv2, vals, sizeof vals);
            kk2[9] = "algo"; vv2[9] = k ? "direct" : "im2col";
            y[k] = NULL;
            if (invoke_str(e, deconv ? "Deconvolution" : "Convolution", 2, in, 10, kk2, vv2, 0, 1, &y[k], NULL) != DP_OK) {
                fprintf(stderr, "  trial %d: %s\n", trial, g_msg); bad = 1; break;
            }
        }
        if (bad) { dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(y[0]); break; }
        m = dp_shape_size(dp_nd_shape(y[0]));
        {
            double *ov = (double *)malloc(sizeof(double) * (size_t)m);
            for (i = 0; i < m; i++) ov[i] = urand();
            og = from(e, *dp_nd_shape(y[0]), t, ov);
            free(ov);
        }
        for (k = 0; k < 2; k++) {       /* the gradient operator, invoked directly */
            const char *kk2[10], *vv2[10];
            dp_ndarray *gin[3];
            memcpy(kk2, keys, sizeof keys); memcpy(vv2, vals, sizeof vals);
            kk2[9] = "algo"; vv2[9] = k ? "direct" : "im2col";
            gin[0] = og; gin[1] = in[0]; gin[2] = in[1];
            gr[k][0] = gr[k][1] = NULL;
            CHECK(invoke_str(e, deconv ? "_backward_Deconvolution" : "_backward_Convolution", 3, gin, 10, kk2, vv2, 0, 2, gr[k], NULL) == DP_OK);
        }
        for (k = 0; k < 3 && !bad; k++) {
            dp_ndarray *p = k == 0 ? y[0] : gr[0][k - 1], *q = k == 0 ? y[1] : gr[1][k - 1];
            int64_t cnt = p && q ? dp_shape_size(dp_nd_shape(p)) : 0;
            double scale = 0;
            ref = (double *)malloc(sizeof(double) * (size_t)(cnt + 1)); got = (double *)malloc(sizeof(double) * (size_t)(cnt + 1));
            CHECK(p && q && read_all(p, ref) && read_all(q, got));
            for (i = 0; i < cnt; i++) if (fabs(ref[i]) > scale) scale = fabs(ref[i]);
            for (i = 0; i < cnt; i++)
                if (!(fabs(ref[i] - got[i]) <= (t == DP_FLOAT32 ? 1e-5 : 1e-12) * (1 + scale))) {
                    fprintf(stderr, "  trial %d (%s %dd, %s): %s [%lld]: im2col %.9g, direct %.9g\n", trial, deconv ? "deconv" : "conv", nd,
                            dp_dtype_name(t), k == 0 ? "output" : k == 1 ? "d data" : "d weight", (long long)i, ref[i], got[i]);
                    bad = 1;
                    break;
                }
            free(ref); free(got);
        }
        for (k = 0; k < 2; k++) { dp_nd_release(y[k]); dp_nd_release(gr[k][0]); dp_nd_release(gr[k][1]); dp_nd_release(in[k]); }
        dp_nd_release(og);
    }
    CHECK(!bad);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* Bad parameters: refused before anything runs, the log line naming the
   operator, the parameter and the shapes. */
static void expect_refused(dp_engine *e, const char *op, int nin, dp_ndarray *const *in, int n, const char *const *keys, const char *const *vals,
                           const char *const *must) {
    dp_ndarray *out = NULL;
    int i;
    g_msg[0] = 0;
    CHECK(invoke_str(e, op, nin, in, n, keys, vals, 0, 1, &out, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(out == NULL);
    for (i = 0; must[i]; i++)
        if (!strstr(g_msg, must[i])) { fprintf(stderr, "  %s: \"%s\" not in: %s\n", op, must[i], g_msg); CHECK(0); }
    dp_nd_release(out);
}
/* A convolution asks for the temporary space its call needs, no more: a
   pointwise forward for none (its columns are its input), and under algo
   auto never more than workspace MiB (it goes direct instead). Seen
   through the engine's allocator: the largest block given while the
   convolution runs, its arrays made before. */
static size_t g_largest_alloc;
static void *largest_alloc(size_t size, size_t align, void *user) {
    size_t seen = __atomic_load_n(&g_largest_alloc, __ATOMIC_RELAXED);
    while (size > seen && !__atomic_compare_exchange_n(&g_largest_alloc, &seen, size, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return failing_alloc(size, align, user);
}
static size_t conv_largest_alloc(const int64_t *xd, const int64_t *wd, const int64_t *yd, int nkw, const char *const *keys, const char *const *vals) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    dp_ndarray *in[2] = {NULL, NULL}, *y = NULL;
    int64_t dims[3][4];
    int i, j;
    size_t largest;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.logger.func = msg_logger;
    d.allocator.alloc = largest_alloc; d.allocator.free = failing_free;
    if (dp_engine_create(&d, &e) != DP_OK) { CHECK(0); return (size_t)-1; }
    for (j = 0; j < 4; j++) { dims[0][j] = xd[j]; dims[1][j] = wd[j]; dims[2][j] = yd[j]; }
    for (i = 0; i < 3; i++) {
        dp_shape s;
        memset(&s, 0, sizeof s);
        s.ndim = 4;
        for (j = 0; j < 4; j++) s.dims[j] = dims[i][j];
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, i < 2 ? &in[i] : &y) == DP_OK);
    }
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    __atomic_store_n(&g_largest_alloc, 0, __ATOMIC_RELAXED);
    CHECK(invoke_str(e, "Convolution", 2, in, nkw, keys, vals, 0, 1, &y, NULL) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    largest = __atomic_load_n(&g_largest_alloc, __ATOMIC_RELAXED);
    dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(y);
    dp_engine_destroy(e, NULL);
    return largest;
}
static void conv_temp_space_per_call(void) {
    const char *keys[6] = {"kernel", "num_filter", "no_bias", "num_args", "pad", "workspace"};
    const char *pw_vals[4] = {"(1, 1)", "64", "true", "2"}, *ws_vals[6] = {"(3, 3)", "16", "true", "2", "(1, 1)", "1"};
    static const int64_t px[4] = {4, 64, 16, 16}, pwt[4] = {64, 64, 1, 1};
    static const int64_t wx[4] = {8, 16, 16, 16}, wwt[4] = {16, 16, 3, 3};
    size_t got;
    /* pointwise: 256 KiB arrays; the weight gradient's staging, which a
       forward never uses, would be 512 KiB; the GEMM's workspace, from the
       engine's allocator too, is about 80 KiB ((64 + 256) x 64 floats) */
    got = conv_largest_alloc(px, pwt, px, 4, keys, pw_vals);
    CHECK(got < 128 * 1024);
    if (got >= 128 * 1024) fprintf(stderr, "  pointwise forward: a block of %zu bytes\n", got);
    /* workspace 1 MiB: one image's columns fit (144 KiB), but im2col's
       temporary space for the batch would not */
    got = conv_largest_alloc(wx, wwt, wx, 6, keys, ws_vals);
    CHECK(got <= 1048576);
    if (got > 1048576) fprintf(stderr, "  workspace 1 MiB: a block of %zu bytes\n", got);
}
static void bad_parameters_refused(void) {
    dp_engine *e = make_engine();
    int64_t xd[6] = {1, 4, 3, 3}, wd[6] = {2, 4, 5, 5}, bd[6] = {2}, wg[6] = {2, 2, 1, 1};
    dp_ndarray *in[3];
    double z[400] = {0};
    in[0] = from(e, shape_of(xd), DP_FLOAT32, z); in[1] = from(e, shape_of(wd), DP_FLOAT32, z); in[2] = from(e, shape_of(bd), DP_FLOAT32, z);
    {   /* kernel larger than the padded input */
        const char *k[3] = {"kernel", "num_filter", "pad"}, *v[3] = {"(5, 5)", "2", "(0, 0)"};
        const char *must[] = {"Convolution", "kernel", "padded input", "(1, 4, 3, 3)", NULL};
        expect_refused(e, "Convolution", 3, in, 3, k, v, must);
    }
    {   /* a zero stride */
        const char *k[3] = {"kernel", "num_filter", "stride"}, *v[3] = {"(1, 1)", "2", "(0, 1)"};
        const char *must[] = {"Convolution", "stride", "(0, 1)", NULL};
        dp_ndarray *w1 = from(e, shape_of(wg), DP_FLOAT32, z), *in2[3];
        in2[0] = in[0]; in2[1] = w1; in2[2] = in[2];
        expect_refused(e, "Convolution", 3, in2, 3, k, v, must);
        dp_nd_release(w1);
    }
    {   /* groups that do not divide the channels */
        const char *k[3] = {"kernel", "num_filter", "num_group"}, *v[3] = {"(1, 1)", "3", "3"};
        const char *must[] = {"Convolution", "num_group 3", "channels", "(1, 4, 3, 3)", NULL};
        expect_refused(e, "Convolution", 3, in, 3, k, v, must);
    }
    {   /* a weight of the wrong shape */
        const char *k[2] = {"kernel", "num_filter"}, *v[2] = {"(3, 3)", "2"};
        const char *must[] = {"Convolution", "weight", "(2, 4, 5, 5)", "(2, 4, 3, 3)", NULL};
        expect_refused(e, "Convolution", 3, in, 2, k, v, must);
    }
    {   /* no_bias with a bias input */
        const char *k[3] = {"kernel", "num_filter", "no_bias"}, *v[3] = {"(1, 1)", "2", "true"};
        const char *must[] = {"Convolution", "no_bias", NULL};
        dp_ndarray *w1 = from(e, shape_of(wg), DP_FLOAT32, z), *in2[3];
        in2[0] = in[0]; in2[1] = w1; in2[2] = in[2];
        expect_refused(e, "Convolution", 3, in2, 3, k, v, must);
        dp_nd_release(w1);
    }
    {   /* Pooling: kernel larger than the padded input, zero stride */
        const char *k[2] = {"kernel", "pad"}, *v[2] = {"(4, 4)", "(0, 0)"};
        const char *must[] = {"Pooling", "kernel (4, 4)", "padded input", "(1, 4, 3, 3)", NULL};
        const char *k2[2] = {"kernel", "stride"}, *v2[2] = {"(2, 2)", "(1, 0)"};
        const char *must2[] = {"Pooling", "stride (1, 0)", NULL};
        expect_refused(e, "Pooling", 1, in, 2, k, v, must);
        expect_refused(e, "Pooling", 1, in, 2, k2, v2, must2);
    }
    {   /* Deconvolution: groups, adj */
        const char *k[3] = {"kernel", "num_filter", "num_group"}, *v[3] = {"(2, 2)", "2", "3"};
        const char *must[] = {"Deconvolution", "num_group 3", NULL};
        const char *k2[4] = {"kernel", "num_filter", "stride", "adj"}, *v2[4] = {"(2, 2)", "2", "(2, 2)", "(2, 2)"};
        const char *must2[] = {"Deconvolution", "adj (2, 2)", NULL};
        int64_t dw[6] = {4, 2, 2, 2};
        dp_ndarray *w1 = from(e, shape_of(dw), DP_FLOAT32, z), *in2[2];
        in2[0] = in[0]; in2[1] = w1;
        expect_refused(e, "Deconvolution", 2, in2, 3, k, v, must);
        expect_refused(e, "Deconvolution", 2, in2, 4, k2, v2, must2);
        dp_nd_release(w1);
    }
    {   /* LeakyReLU prelu without gamma; an unknown act_type */
        const char *k[1] = {"act_type"}, *v[1] = {"prelu"}, *v2[1] = {"rrelu"};
        const char *must[] = {"LeakyReLU", "prelu", NULL}, *must2[] = {"LeakyReLU", "act_type", "rrelu", NULL};
        expect_refused(e, "LeakyReLU", 1, in, 1, k, v, must);
        expect_refused(e, "LeakyReLU", 1, in, 1, k, v2, must2);
    }
    dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(in[2]);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* LeNet as MXNet writes it (parameters as strings in MXNet's spelling, a
   no_bias convolution, cuDNN and layout keys), loaded, inferred from the
   data's shape alone, bound, run forward and backward; a bad node named. */
static const char *lenet_json =
    "{\"nodes\": ["
    "{\"op\": \"null\", \"name\": \"data\", \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"conv1_weight\", \"attrs\": {\"kernel\": \"(5, 5)\", \"num_filter\": \"20\"}, \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"conv1_bias\", \"attrs\": {\"kernel\": \"(5, 5)\", \"num_filter\": \"20\"}, \"inputs\": []},"
    "{\"op\": \"Convolution\", \"name\": \"conv1\", \"attrs\": {\"kernel\": \"(5, 5)\", \"num_filter\": \"20\", \"cudnn_tune\": \"fastest\", \"layout\": \"NCHW\"}, \"inputs\": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},"
    "{\"op\": \"Activation\", \"name\": \"tanh1\", \"attrs\": {\"act_type\": \"tanh\"}, \"inputs\": [[3, 0, 0]]},"
    "{\"op\": \"Pooling\", \"name\": \"pool1\", \"attrs\": {\"kernel\": \"(2, 2)\", \"pool_type\": \"max\", \"stride\": \"(2, 2)\", \"cudnn_off\": \"False\"}, \"inputs\": [[4, 0, 0]]},"
    "{\"op\": \"null\", \"name\": \"conv2_weight\", \"inputs\": []},"
    "{\"op\": \"Convolution\", \"name\": \"conv2\", \"attrs\": {\"kernel\": \"(5, 5)\", \"num_filter\": \"50\", \"no_bias\": \"True\"}, \"inputs\": [[5, 0, 0], [6, 0, 0]]},"
    "{\"op\": \"Activation\", \"name\": \"act2\", \"attrs\": {\"act_type\": \"softrelu\"}, \"inputs\": [[7, 0, 0]]},"
    "{\"op\": \"Pooling\", \"name\": \"pool2\", \"attrs\": {\"kernel\": \"(2, 2)\", \"pool_type\": \"avg\", \"stride\": \"(2, 2)\", \"pooling_convention\": \"full\"}, \"inputs\": [[8, 0, 0]]},"
    "{\"op\": \"Flatten\", \"name\": \"flatten\", \"inputs\": [[9, 0, 0]]},"
    "{\"op\": \"LeakyReLU\", \"name\": \"leaky\", \"attrs\": {\"act_type\": \"leaky\", \"slope\": \"0.1\"}, \"inputs\": [[10, 0, 0]]},"
    "{\"op\": \"null\", \"name\": \"fc1_weight\", \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"fc1_bias\", \"inputs\": []},"
    "{\"op\": \"FullyConnected\", \"name\": \"fc1\", \"attrs\": {\"num_hidden\": \"10\"}, \"inputs\": [[11, 0, 0], [12, 0, 0], [13, 0, 0]]},"
    "{\"op\": \"null\", \"name\": \"softmax_label\", \"inputs\": []},"
    "{\"op\": \"SoftmaxOutput\", \"name\": \"softmax\", \"inputs\": [[14, 0, 0], [15, 0, 0]]}"
    "], \"arg_nodes\": [0, 1, 2, 6, 12, 13, 15], \"heads\": [[16, 0, 0]], \"attrs\": {\"mxnet_version\": [\"int\", 10500]}}";
static void mxnet_json_lenet(void) {
    dp_engine *e = make_engine();
    dp_symbol *s = NULL;
    const char *names[16], *dn[1] = {"data"};
    dp_shape ds, arg_shapes[16], out_shapes[1];
    dp_dtype arg_dtypes[16], out_dtypes[1];
    int nargs, i;
    memset(&ds, 0, sizeof ds);
    ds.ndim = 4; ds.dims[0] = 2; ds.dims[1] = 1; ds.dims[2] = 28; ds.dims[3] = 28;
    CHECK(dp_sym_load_json(lenet_json, &s) == DP_OK);
    if (!s) { fprintf(stderr, "  %s\n", g_msg); dp_engine_destroy(e, NULL); return; }
    nargs = dp_sym_list_arguments(s, names, 16);
    CHECK(nargs == 7);
    CHECK(sym_infer(s, 1, dn, &ds, NULL, arg_shapes, arg_dtypes, out_shapes, out_dtypes) == DP_OK);
    for (i = 0; i < nargs && nargs <= 16; i++) {
        if (!strcmp(names[i], "conv2_weight")) CHECK(arg_shapes[i].ndim == 4 && arg_shapes[i].dims[0] == 50 && arg_shapes[i].dims[1] == 20 && arg_shapes[i].dims[3] == 5);
        if (!strcmp(names[i], "fc1_weight")) CHECK(arg_shapes[i].ndim == 2 && arg_shapes[i].dims[1] == 50 * 4 * 4);
    }
    CHECK(out_shapes[0].ndim == 2 && out_shapes[0].dims[0] == 2 && out_shapes[0].dims[1] == 10);
    {
        dp_ndarray *args[16], *grads[16];
        dp_req reqs[16];
        dp_executor *ex = NULL;
        double out[20];
        for (i = 0; i < nargs; i++) {
            int64_t n = dp_shape_size(&arg_shapes[i]), j;
            double *v = (double *)malloc(sizeof(double) * (size_t)n);
            for (j = 0; j < n; j++) v[j] = strcmp(names[i], "softmax_label") ? 0.1 * urand() : (double)(j % 10);
            args[i] = from(e, arg_shapes[i], DP_FLOAT32, v);
            free(v);
            grads[i] = NULL; reqs[i] = DP_REQ_WRITE;
            CHECK(dp_nd_zeros(e, &arg_shapes[i], DP_FLOAT32, CPU0, &grads[i]) == DP_OK);
        }
        CHECK(exec_bind(e, s, CPU0, nargs, args, grads, reqs, &ex) == DP_OK);
        if (ex) {
            double sum = 0;
            CHECK(dp_exec_forward(ex, 1) == DP_OK);
            CHECK(dp_exec_backward(ex, 0, NULL) == DP_OK);
            CHECK(read_all(dp_exec_output(ex, 0), out));
            for (i = 0; i < 20; i++) sum += out[i];
            CHECK(fabs(sum - 2) < 1e-4);            /* two rows of probabilities */
            for (i = 0; i < nargs; i++) if (!strcmp(names[i], "conv1_weight")) {
                double g[500];
                int j, nz = 0;
                CHECK(read_all(grads[i], g));
                for (j = 0; j < 500; j++) nz += g[j] != 0;
                CHECK(nz > 0);
            }
            dp_exec_destroy(ex);
        }
        for (i = 0; i < nargs; i++) { dp_nd_release(args[i]); dp_nd_release(grads[i]); }
    }
    dp_sym_release(s);
    {   /* a 3x3 input is too small for conv1's 5x5 kernel: the node is named */
        ds.dims[2] = ds.dims[3] = 3;
        CHECK(dp_sym_load_json(lenet_json, &s) == DP_OK);
        g_msg[0] = 0;
        CHECK(sym_infer(s, 1, dn, &ds, NULL, arg_shapes, arg_dtypes, out_shapes, out_dtypes) == DP_ERROR_INVALID_ARGS);
        CHECK(strstr(g_msg, "conv1") && strstr(g_msg, "Convolution") && strstr(g_msg, "kernel") && strstr(g_msg, "(2, 1, 3, 3)"));
        if (!strstr(g_msg, "conv1")) fprintf(stderr, "  got: %s\n", g_msg);
        dp_sym_release(s);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* The LeNet JSON above trained one step three ways on every engine kind:
   the executor, and autograd invoking the same operators; every gradient
   bitwise the same. */
static dp_engine *engine_of(dp_engine_type type) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = msg_logger;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    return e;
}
#define LENET_ARGS 7
/* gradients of the 7 arguments (in dp_sym_list_arguments' order) into g[i] */
static void lenet_grads(dp_engine_type type, int use_executor, const dp_shape *shapes, const char *const *names, double *const *vals, double **g) {
    dp_engine *e = engine_of(type);
    dp_ndarray *args[LENET_ARGS], *grads[LENET_ARGS];
    int i;
    for (i = 0; i < LENET_ARGS; i++) args[i] = from(e, shapes[i], DP_FLOAT32, vals[i]);
    if (use_executor) {
        dp_symbol *s = NULL;
        dp_executor *ex = NULL;
        dp_req reqs[LENET_ARGS];
        CHECK(dp_sym_load_json(lenet_json, &s) == DP_OK);
        for (i = 0; i < LENET_ARGS; i++) { grads[i] = NULL; reqs[i] = DP_REQ_WRITE; CHECK(dp_nd_zeros(e, &shapes[i], DP_FLOAT32, CPU0, &grads[i]) == DP_OK); }
        CHECK(exec_bind(e, s, CPU0, LENET_ARGS, args, grads, reqs, &ex) == DP_OK);
        CHECK(ex && dp_exec_forward(ex, 1) == DP_OK && dp_exec_backward(ex, 0, NULL) == DP_OK);
        for (i = 0; i < LENET_ARGS; i++) CHECK(read_all(grads[i], g[i]));
        dp_exec_destroy(ex);
        dp_sym_release(s);
        for (i = 0; i < LENET_ARGS; i++) dp_nd_release(grads[i]);
    } else {
        dp_ndarray *a[LENET_ARGS + 1], *t[12];
        const char *ck1[2] = {"kernel", "num_filter"}, *cv1[2] = {"(5, 5)", "20"};
        const char *ck2[4] = {"kernel", "num_filter", "no_bias", "num_args"}, *cv2[4] = {"(5, 5)", "50", "True", "2"};
        const char *pk1[3] = {"kernel", "pool_type", "stride"}, *pv1[3] = {"(2, 2)", "max", "(2, 2)"};
        const char *pk2[4] = {"kernel", "pool_type", "stride", "pooling_convention"}, *pv2[4] = {"(2, 2)", "avg", "(2, 2)", "full"};
        const char *ak[1] = {"act_type"}, *av[1] = {"softrelu"}, *lk[2] = {"act_type", "slope"}, *lv[2] = {"leaky", "0.1"};
        const char *fk[1] = {"num_hidden"}, *fv[1] = {"10"};
        dp_ndarray *in[3];
        int k;
        for (i = 0; i < LENET_ARGS; i++) {             /* by name: data, conv1_weight, conv1_bias, conv2_weight, fc1_weight, fc1_bias, softmax_label */
            const char *order[LENET_ARGS] = {"data", "conv1_weight", "conv1_bias", "conv2_weight", "fc1_weight", "fc1_bias", "softmax_label"};
            for (k = 0; k < LENET_ARGS; k++) if (!strcmp(names[k], order[i])) a[i] = args[k];
        }
        for (i = 1; i < 6; i++) CHECK(dp_nd_attach_grad(a[i], DP_REQ_WRITE) == DP_OK);
        CHECK(dp_nd_attach_grad(a[0], DP_REQ_WRITE) == DP_OK);
        memset(t, 0, sizeof t);
        CHECK(dp_autograd_begin() == DP_OK);
        in[0] = a[0]; in[1] = a[1]; in[2] = a[2]; CHECK(invoke_str(e, "Convolution", 3, in, 2, ck1, cv1, 0, 1, &t[0], NULL) == DP_OK);
        CHECK(invoke_str(e, "tanh", 1, &t[0], 0, NULL, NULL, 0, 1, &t[1], NULL) == DP_OK);
        CHECK(invoke_str(e, "Pooling", 1, &t[1], 3, pk1, pv1, 0, 1, &t[2], NULL) == DP_OK);
        in[0] = t[2]; in[1] = a[3]; CHECK(invoke_str(e, "Convolution", 2, in, 4, ck2, cv2, 0, 1, &t[3], NULL) == DP_OK);
        CHECK(invoke_str(e, "Activation", 1, &t[3], 1, ak, av, 0, 1, &t[4], NULL) == DP_OK);
        CHECK(invoke_str(e, "Pooling", 1, &t[4], 4, pk2, pv2, 0, 1, &t[5], NULL) == DP_OK);
        CHECK(invoke_str(e, "Flatten", 1, &t[5], 0, NULL, NULL, 0, 1, &t[6], NULL) == DP_OK);
        CHECK(invoke_str(e, "LeakyReLU", 1, &t[6], 2, lk, lv, 0, 1, &t[7], NULL) == DP_OK);
        in[0] = t[7]; in[1] = a[4]; in[2] = a[5]; CHECK(invoke_str(e, "FullyConnected", 3, in, 1, fk, fv, 0, 1, &t[8], NULL) == DP_OK);
        in[0] = t[8]; in[1] = a[6]; CHECK(invoke_str(e, "SoftmaxOutput", 2, in, 0, NULL, NULL, 0, 1, &t[9], NULL) == DP_OK);
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(t[9] && dp_autograd_backward(t[9], NULL, 0) == DP_OK);
        for (i = 0; i < LENET_ARGS; i++) {
            if (!strcmp(names[i], "softmax_label")) { int64_t j, n = dp_shape_size(&shapes[i]); for (j = 0; j < n; j++) g[i][j] = 0; continue; }
            CHECK(read_all(dp_nd_grad(args[i]), g[i]));
        }
        for (i = 0; i < 12; i++) dp_nd_release(t[i]);
    }
    for (i = 0; i < LENET_ARGS; i++) dp_nd_release(args[i]);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
static void same_gradients_everywhere(void) {
    static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    dp_symbol *s = NULL;
    const char *names[16], *dn[1] = {"data"};
    dp_shape ds, shapes[16], out_shapes[1];
    dp_dtype dts[16], out_dtypes[1];
    double *vals[LENET_ARGS], *ref[LENET_ARGS], *got[LENET_ARGS];
    int i, k, mode;
    memset(&ds, 0, sizeof ds);
    ds.ndim = 4; ds.dims[0] = 3; ds.dims[1] = 1; ds.dims[2] = 28; ds.dims[3] = 28;
    CHECK(dp_sym_load_json(lenet_json, &s) == DP_OK);
    CHECK(s && dp_sym_list_arguments(s, names, 16) == LENET_ARGS);
    CHECK(sym_infer(s, 1, dn, &ds, NULL, shapes, dts, out_shapes, out_dtypes) == DP_OK);
    for (i = 0; i < LENET_ARGS; i++) {
        int64_t n = dp_shape_size(&shapes[i]), j;
        vals[i] = (double *)malloc(sizeof(double) * (size_t)n); ref[i] = (double *)malloc(sizeof(double) * (size_t)n);
        got[i] = (double *)malloc(sizeof(double) * (size_t)n);
        for (j = 0; j < n; j++) vals[i][j] = strcmp(names[i], "softmax_label") ? 0.2 * urand() : (double)(j % 10);
    }
    lenet_grads(DP_ENGINE_NAIVE, 1, shapes, names, vals, ref);
    for (mode = 0; mode < 2; mode++) for (k = 0; k < 3; k++) {
        if (mode == 1 && k == 0) continue;
        lenet_grads(kinds[k], mode == 0, shapes, names, vals, got);
        for (i = 0; i < LENET_ARGS; i++)
            if (memcmp(ref[i], got[i], sizeof(double) * (size_t)dp_shape_size(&shapes[i]))) {
                fprintf(stderr, "  %s, engine %d: the gradient of %s differs from the naive executor's\n", mode ? "executor" : "autograd", k, names[i]);
                CHECK(0);
            }
    }
    {   /* and not all zero */
        int64_t j, nz = 0;
        for (i = 0; i < LENET_ARGS; i++) for (j = 0; j < dp_shape_size(&shapes[i]); j++) nz += ref[i][j] != 0;
        CHECK(nz > 1000);
    }
    for (i = 0; i < LENET_ARGS; i++) { free(vals[i]); free(ref[i]); free(got[i]); }
    dp_sym_release(s);
}
/* A symbol node with MXNet's parameters: no_bias sets the input count,
   prelu makes a gamma variable, an unsupported layout is refused. */
static void symbol_nodes(void) {
    dp_symbol *x = NULL, *c = NULL, *p = NULL;
    const char *names[8];
    const char *ck[3] = {"kernel", "num_filter", "no_bias"}, *cv[3] = {"(3, 3)", "8", "True"};
    const char *pk[1] = {"act_type"}, *pv[1] = {"prelu"};
    const char *lk[3] = {"kernel", "num_filter", "layout"}, *lv[3] = {"(3, 3)", "8", "NHWC"};
    dp_symbol *in[3] = {NULL, NULL, NULL};
    CHECK(dp_sym_var("x", &x) == DP_OK);
    in[0] = x;
    CHECK(sym_op("Convolution", "c", 2, in, 3, ck, cv, &c) == DP_OK);
    CHECK(c && dp_sym_list_arguments(c, names, 8) == 2);
    CHECK(c && !strcmp(names[1], "c_weight"));
    in[0] = c;
    CHECK(sym_op("LeakyReLU", "p", 2, in, 1, pk, pv, &p) == DP_OK);
    CHECK(p && dp_sym_list_arguments(p, names, 8) == 3 && !strcmp(names[2], "p_gamma"));
    dp_sym_release(p); p = NULL;
    {   /* num_inputs 0: as many as the layer takes (weight and bias made) */
        dp_sym_node_desc d;
        memset(&d, 0, sizeof d);
        d.op = "Convolution"; d.name = "c3"; d.inputs[0] = x;
        d.params[0].name = "kernel"; d.params[0].s = "(3, 3)"; d.params[1].name = "num_filter"; d.params[1].i = 4;
        CHECK(dp_sym_node(&d, &p) == DP_OK);
        CHECK(p && dp_sym_list_arguments(p, names, 8) == 3 && !strcmp(names[2], "c3_bias"));
        dp_sym_release(p); p = NULL;
    }
    g_msg[0] = 0;
    in[0] = x;
    CHECK(sym_op("Convolution", "bad", 3, in, 3, lk, lv, &p) == DP_ERROR_INVALID_ARGS && !p);
    CHECK(strstr(g_msg, "bad") && strstr(g_msg, "NHWC"));
    dp_sym_release(c); dp_sym_release(x);
}

/* 2x2 stride-2 max pooling (its own loop) picks as the general loop does:
   the first largest of the window in row order (its bits: -0 before +0
   stays -0), the first NaN when there is one; the gradient goes to that
   place only, in float32 and float64, written and added. The windows are
   drawn from a few values, so ties, signed zeros and NaNs are common. */
static void pool2_first_max_and_nan(void) {
    static const double pick[6] = {-0.0, 0.0, 1, 1, -1, 0};
    enum { N = 2, C = 3, H = 9, W = 11, OH = 4, OW = 5 };   /* OW 5: a group of four (SSE) and one window alone; a column no window covers */
    int64_t xd[6] = {N, C, H, W}, yd[6] = {N, C, OH, OW};
    double *x = (double *)malloc(sizeof(double) * N * C * H * W), og[N * C * OH * OW], y[N * C * OH * OW];
    double *dx = (double *)malloc(sizeof(double) * N * C * H * W), *want = (double *)malloc(sizeof(double) * N * C * H * W);
    const char *keys[3] = {"kernel", "stride", "pool_type"}, *vals[3] = {"(2, 2)", "(2, 2)", "max"};
    dp_engine *e = make_engine();
    int ti, add, i, o, oy, ox, r;
    for (ti = 0; ti < 2; ti++) {
        dp_dtype t = ti ? DP_FLOAT64 : DP_FLOAT32;
        for (i = 0; i < N * C * H * W; i++) x[i] = i % 13 == 5 && i < C * H * W ? NAN : pick[(int)((urand() + 1) * 3) % 6];   /* NaNs in the first image only: the second's groups of four have none */
        for (i = 0; i < N * C * OH * OW; i++) og[i] = i % 7 == 3 ? -0.0 : urand();   /* 0 + -0 is +0: the written gradient's zeros are +0 */
        for (add = 0; add < 2; add++) {
            dp_ndarray *in[2], *out = NULL, *g = NULL;
            dp_req req = add ? DP_REQ_ADD : DP_REQ_WRITE;
            in[0] = from(e, shape_of(xd), t, x);
            CHECK(invoke_str(e, "Pooling", 1, in, 3, keys, vals, 0, 1, &out, NULL) == DP_OK);
            CHECK(out && read_all(out, y));
            in[1] = in[0];                                     /* the data */
            in[0] = from(e, shape_of(yd), t, og);
            for (i = 0; i < N * C * H * W; i++) want[i] = add ? 0.5 : 0;
            if (add) g = from(e, shape_of(xd), t, want);
            CHECK(invoke_str(e, "_backward_Pooling", 2, in, 3, keys, vals, 0, 1, &g, &req) == DP_OK);
            CHECK(g && read_all(g, dx));
            for (o = 0; o < N * C; o++)
                for (oy = 0; oy < OH; oy++)
                    for (ox = 0; ox < OW; ox++) {
                        int at = 0;
                        double m;
                        for (r = 1; r < 4; r++) {
                            double v = x[(o * H + 2 * oy + r / 2) * W + 2 * ox + r % 2], b = x[(o * H + 2 * oy + at / 2) * W + 2 * ox + at % 2];
                            if (v > b || (v != v && b == b)) at = r;
                        }
                        m = x[(o * H + 2 * oy + at / 2) * W + 2 * ox + at % 2];
                        r = (o * OH + oy) * OW + ox;
                        if (!(m != m ? y[r] != y[r] : y[r] == m && signbit(y[r]) == signbit(m))) { fprintf(stderr, "  window %d: %g, want %g\n", r, y[r], m); CHECK(0); }
                        want[(o * H + 2 * oy + at / 2) * W + 2 * ox + at % 2] += ti ? og[r] : (double)(float)og[r];
                    }
            for (i = 0; i < N * C * H * W; i++)
                if ((dx[i] != want[i] && !(ti == 0 && fabs(dx[i] - want[i]) < 1e-6)) || signbit(dx[i]) != signbit(want[i])) { fprintf(stderr, "  dx[%d] %s: %g, want %g\n", i, add ? "added" : "written", dx[i], want[i]); CHECK(0); break; }
            dp_nd_release(in[0]); dp_nd_release(in[1]);
            if (out) dp_nd_release(out);
            if (g) dp_nd_release(g);
        }
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    free(x); free(dx); free(want);
}

/* The element-wise kernels' loops per dtype (Activation softrelu and
   softsign, LeakyReLU and prelu and their gradients, the regression
   outputs, SoftmaxOutput, the add-to copy and the zero fill, FullyConnected's
   bias gradient) bitwise against each element computed alone in double and
   stored by dp_dtype_store, as the kernels computed them before: float32
   and float64 data, labels and copies of every dtype (float16 and the
   integers included), written and added, sizes 1, 7, 1003 and over the
   range loop's threshold (2^17), on an engine with two CPU workers. NaNs
   match any NaN; everything else to the bit. */
static const dp_dtype tk_all[8] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32, DP_INT64, DP_INT8, DP_UINT8, DP_BOOL};
static dp_engine *tk_engine(void) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_PERDEVICE; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = msg_logger;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    return e;
}
static int tk_is_float(dp_dtype t) { return t == DP_FLOAT32 || t == DP_FLOAT64 || t == DP_FLOAT16; }
/* n elements of dtype t: how 0: floats over [-8, 8) with signed zeros,
   infinities, NaN, subnormals and values past softrelu's 20; 1: classes in
   [0, lim); 2: any value the dtype holds (int64 past 2^53) */
static void *tk_host(dp_dtype t, int64_t n, int how, int64_t lim) {
    static const double special[8] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 25.0, -25.0, 1e-40};
    void *h = malloc((size_t)(n ? n : 1) * 8);
    int64_t i;
    for (i = 0; i < n; i++) {
        double v;
        g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
        if (how == 1) v = (double)(g_rng % (uint64_t)lim);
        else if (how == 2 && t == DP_INT64) { ((int64_t *)h)[i] = (int64_t)(g_rng >> 1) * (g_rng & 1 ? 1 : -1) / (int64_t)(1 + (g_rng >> 60)); continue; }
        else if (how == 2 && !tk_is_float(t)) v = (double)(int64_t)(g_rng % 600) - 300;
        else v = i % 97 == 3 ? special[(i / 97) % 8] : urand() * 8;
        dp_dtype_store(t, h, i, v, DP_REQ_WRITE);
    }
    return h;
}
static dp_ndarray *tk_array(dp_engine *e, const dp_shape *s, dp_dtype t, const void *h) {
    dp_ndarray *a = NULL;
    CHECK(dp_nd_from_host(e, s, t, CPU0, h, &a) == DP_OK);
    return a;
}
static void *tk_copy(dp_dtype t, int64_t n, const void *h) {
    void *c = malloc((size_t)(n ? n : 1) * 8);
    memcpy(c, h, (size_t)n * dp_dtype_size(t));
    return c;
}
/* a's elements against want's, bitwise (NaN: any NaN); 1 when equal */
static int tk_same(const char *what, dp_ndarray *a, const void *want) {
    dp_dtype t = dp_nd_dtype(a);
    int64_t n = dp_shape_size(dp_nd_shape(a)), i;
    size_t es = dp_dtype_size(t);
    unsigned char *got = (unsigned char *)malloc(dp_nd_bytes(a) ? dp_nd_bytes(a) : 1);
    int ok = dp_nd_read(a, got, dp_nd_bytes(a), NULL) == DP_OK;
    for (i = 0; ok && i < n; i++) {
        double g = dp_dtype_load(t, got, i), w = dp_dtype_load(t, want, i);
        if (memcmp(got + (size_t)i * es, (const unsigned char *)want + (size_t)i * es, es) && !(tk_is_float(t) && g != g && w != w)) {
            fprintf(stderr, "  %s %s (%lld elements): element %lld is %.17g, want %.17g\n", what, dp_dtype_name(t), (long long)n, (long long)i, g, w);
            ok = 0;
        }
    }
    free(got);
    return ok;
}
static double tk_act(int type, double x, double a, int grad) {   /* Activation 3, 4; LeakyReLU 10 + index */
    static const double selu_l = 1.0507009873554804934, selu_a = 1.6732632423543772848;
    double s;
    switch (type) {
    case 3: return grad ? 1 / (1 + exp(-x)) : (x > 20 ? x : log1p(exp(x)));
    case 4: s = 1 + fabs(x); return grad ? 1 / (s * s) : x / s;
    case 10: return grad ? (x > 0 ? 1 : a) : (x > 0 ? x : a * x);
    case 11: return grad ? (x > 0 ? 1 : a * exp(x)) : (x > 0 ? x : a * expm1(x));
    case 12: return grad ? selu_l * (x > 0 ? 1 : selu_a * exp(x)) : selu_l * (x > 0 ? x : selu_a * expm1(x));
    default: s = 0.5 * (1 + erf(x / sqrt(2.0)));
        return grad ? s + x * exp(-0.5 * x * x) / sqrt(2 * 3.14159265358979323846) : x * s;
    }
}
static const int64_t tk_sizes[4] = {1, 7, 1003, 140001};
static void typed_activations(void) {
    static const char *const names[6] = {"softrelu", "softsign", "leaky", "elu", "selu", "gelu"};
    static const int types[6] = {3, 4, 10, 11, 12, 13};
    dp_engine *e = tk_engine();
    int f, ti, si, add, grad;
    for (f = 0; f < 6; f++)
        for (ti = 0; ti < 2; ti++)
            for (si = 0; si < 4; si++)
                for (grad = 0; grad < 2; grad++)
                    for (add = 0; add < 2; add++) {
                        dp_dtype t = tk_all[ti];
                        int64_t n = tk_sizes[si], i;
                        dp_shape s;
                        int leaky = types[f] >= 10;
                        const char *keys[2] = {"act_type", "slope"}, *vals[2] = {names[f], "0.3"};
                        void *x = tk_host(t, n, 0, 0), *og = tk_host(t, n, 0, 0), *y0 = tk_host(t, n, 0, 0), *want = tk_copy(t, n, y0);
                        dp_ndarray *in[3], *out;
                        dp_req req = add ? DP_REQ_ADD : DP_REQ_WRITE;
                        char what[96];
                        memset(&s, 0, sizeof s); s.ndim = 1; s.dims[0] = n;
                        for (i = 0; i < n; i++) {
                            double v = tk_act(types[f], dp_dtype_load(t, x, i), 0.3, grad);
                            dp_dtype_store(t, want, i, grad ? v * dp_dtype_load(t, og, i) : v, req);
                        }
                        in[0] = tk_array(e, &s, t, grad ? og : x); in[1] = tk_array(e, &s, t, x); in[2] = in[1];
                        out = tk_array(e, &s, t, y0);
                        snprintf(what, sizeof what, "%s%s %s%s", grad ? "_backward_" : "", leaky ? "LeakyReLU" : "Activation", names[f], add ? " added" : "");
                        CHECK(invoke_str(e, grad ? (leaky ? "_backward_LeakyReLU" : "_backward_Activation") : leaky ? "LeakyReLU" : "Activation",
                                         grad ? (leaky ? 2 : 3) : 1, in, leaky ? 2 : 1, keys, vals, 0, 1, &out, &req) == DP_OK);
                        CHECK(tk_same(what, out, want));
                        dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(out);
                        free(x); free(og); free(y0); free(want);
                    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* prelu: gamma one per channel (axis 1) or one for all; d gamma summed
   element by element in the dtype (each sum stored) */
static void typed_prelu(void) {
    static const int64_t shapes[5][4] = {{1, 1}, {7, 3}, {17, 59}, {3, 7, 47}, {2, 5, 14001}};
    static const int64_t gammas[5] = {1, 3, 1, 7, 5};
    const char *keys[2] = {"act_type", "num_args"}, *vals[2] = {"prelu", "2"};
    dp_engine *e = tk_engine();
    int ti, si, add;
    for (ti = 0; ti < 2; ti++)
        for (si = 0; si < 5; si++)
            for (add = 0; add < 2; add++) {
                dp_dtype t = tk_all[ti];
                dp_shape s = shape_of(shapes[si]), gs;
                int64_t n = dp_shape_size(&s), gn = gammas[si], inner = 1, i, c;
                void *x = tk_host(t, n, 0, 0), *og = tk_host(t, n, 0, 0), *gm = tk_host(t, gn, 0, 0), *y0 = tk_host(t, n, 0, 0), *dg0 = tk_host(t, gn, 0, 0);
                void *wy = tk_copy(t, n, y0), *wdx = tk_copy(t, n, y0), *wdg = tk_copy(t, gn, dg0);
                dp_ndarray *in[3], *out[2];
                dp_req req[2];
                req[0] = req[1] = add ? DP_REQ_ADD : DP_REQ_WRITE;
                memset(&gs, 0, sizeof gs); gs.ndim = 1; gs.dims[0] = gn;
                for (i = 0; i < gn; i++) if (!tk_is_float(t) || dp_dtype_load(t, gm, i) != dp_dtype_load(t, gm, i)) dp_dtype_store(t, gm, i, 0.25, DP_REQ_WRITE);
                for (c = 2; c < s.ndim; c++) inner *= s.dims[c];
                if (!add) for (c = 0; c < gn; c++) dp_dtype_store(t, wdg, c, 0, DP_REQ_WRITE);
                for (i = 0; i < n; i++) {
                    double v = dp_dtype_load(t, x, i), g = dp_dtype_load(t, og, i), gam = dp_dtype_load(t, gm, gn == 1 ? 0 : (i / inner) % s.dims[1]);
                    dp_dtype_store(t, wy, i, v > 0 ? v : v * gam, req[0]);
                    dp_dtype_store(t, wdx, i, v > 0 ? g : g * gam, req[0]);
                }
                for (i = 0; i < n; i++) {
                    double v = dp_dtype_load(t, x, i);
                    if (v <= 0) dp_dtype_store(t, wdg, gn == 1 ? 0 : (i / inner) % s.dims[1], v * dp_dtype_load(t, og, i), DP_REQ_ADD);
                }
                in[0] = tk_array(e, &s, t, x); in[1] = tk_array(e, &gs, t, gm);
                out[0] = tk_array(e, &s, t, y0);
                CHECK(invoke_str(e, "LeakyReLU", 2, in, 2, keys, vals, 0, 1, out, req) == DP_OK);
                CHECK(tk_same(add ? "LeakyReLU prelu added" : "LeakyReLU prelu", out[0], wy));
                dp_nd_release(out[0]);
                in[2] = in[1]; in[1] = in[0]; in[0] = tk_array(e, &s, t, og);
                out[0] = tk_array(e, &s, t, y0); out[1] = tk_array(e, &gs, t, dg0);
                CHECK(invoke_str(e, "_backward_LeakyReLU", 3, in, 2, keys, vals, 0, 2, out, req) == DP_OK);
                CHECK(tk_same(add ? "prelu d data added" : "prelu d data", out[0], wdx));
                CHECK(tk_same(add ? "prelu d gamma added" : "prelu d gamma", out[1], wdg));
                dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(in[2]); dp_nd_release(out[0]); dp_nd_release(out[1]);
                free(x); free(og); free(gm); free(y0); free(dg0); free(wy); free(wdx); free(wdg);
            }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* Linear, Logistic and MAE regression outputs: float data, labels of every
   dtype (and the label's zero gradient in it) */
static void typed_regression(void) {
    static const char *const ops[3] = {"LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"};
    static const int64_t shapes[4][3] = {{1, 1}, {7, 1}, {17, 59}, {3, 46667}};
    const char *keys[1] = {"grad_scale"}, *vals[1] = {"0.7"};
    dp_engine *e = tk_engine();
    int kind, ti, li, si, add;
    for (kind = 0; kind < 3; kind++)
        for (ti = 0; ti < 2; ti++)
            for (li = 0; li < 8; li++)
                for (si = 0; si < 4; si++)
                    for (add = 0; add < 2; add++) {
                        dp_dtype t = tk_all[ti], lt = tk_all[li];
                        dp_shape s = shape_of(shapes[si]);
                        int64_t n = dp_shape_size(&s), i;
                        double scale = 0.7 / (double)(n / s.dims[0]);
                        void *x = tk_host(t, n, 0, 0), *l = tk_host(lt, n, tk_is_float(lt) ? 0 : 2, 0), *y0 = tk_host(t, n, 0, 0), *l0 = tk_host(lt, n, 2, 0);
                        void *wy = tk_copy(t, n, y0), *wdx = tk_copy(t, n, y0), *wdl = tk_copy(lt, n, l0);
                        dp_ndarray *in[3], *out[2];
                        dp_req req[2];
                        char what[128];
                        req[0] = req[1] = add ? DP_REQ_ADD : DP_REQ_WRITE;
                        for (i = 0; i < n; i++) {
                            double v = dp_dtype_load(t, x, i), o = kind == 1 ? 1 / (1 + exp(-v)) : v, d = o - dp_dtype_load(lt, l, i);
                            dp_dtype_store(t, wy, i, o, req[0]);
                            dp_dtype_store(t, wdx, i, (kind == 2 ? (double)((d > 0) - (d < 0)) : d) * scale, req[0]);
                            dp_dtype_store(lt, wdl, i, 0, req[1]);
                        }
                        in[0] = tk_array(e, &s, t, x); in[1] = tk_array(e, &s, lt, l);
                        out[0] = tk_array(e, &s, t, y0);
                        snprintf(what, sizeof what, "%s label %s%s", ops[kind], dp_dtype_name(lt), add ? " added" : "");
                        CHECK(invoke_str(e, ops[kind], 2, in, 1, keys, vals, 0, 1, out, req) == DP_OK);
                        CHECK(tk_same(what, out[0], wy));
                        dp_nd_release(out[0]);
                        in[2] = in[1]; in[1] = in[0]; in[0] = tk_array(e, &s, t, y0);
                        out[0] = tk_array(e, &s, t, y0); out[1] = tk_array(e, &s, lt, l0);
                        snprintf(what, sizeof what, "_backward_%s label %s%s", ops[kind], dp_dtype_name(lt), add ? " added" : "");
                        { char b[160]; snprintf(b, sizeof b, "_backward_%s", ops[kind]); CHECK(invoke_str(e, b, 3, in, 1, keys, vals, 0, 2, out, req) == DP_OK); }
                        CHECK(tk_same(what, out[0], wdx));
                        CHECK(tk_same(what, out[1], wdl));
                        dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(in[2]); dp_nd_release(out[0]); dp_nd_release(out[1]);
                        free(x); free(l); free(y0); free(l0); free(wy); free(wdx); free(wdl);
                    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* SoftmaxOutput: rows of (n, c), multi_output's (n, c, inner) with its
   stride, labels of every dtype, ignore_label, out_grad, smoothing and the
   normalisations */
static void typed_softmax_output(void) {
    static const int64_t shapes[6][4] = {{1, 1}, {1, 7}, {17, 59}, {3, 5, 7}, {2, 3, 300}, {40, 3503}};
    static const char *const k3[4] = {"multi_output", "use_ignore", "ignore_label", "out_grad"};
    static const char *const k4[3] = {"smooth_alpha", "normalization", "grad_scale"};
    dp_engine *e = tk_engine();
    int ti, li, si, add, pv;
    for (ti = 0; ti < 2; ti++)
        for (li = 0; li < 8; li++)
            for (si = 0; si < 6; si++)
                for (pv = 0; pv < 2; pv++)
                    for (add = 0; add < 2; add++) {
                        dp_dtype t = tk_all[ti], lt = tk_all[li];
                        dp_shape s = shape_of(shapes[si]), ls;
                        int multi = s.ndim > 2, use_ignore = pv, out_grad = pv, norm = pv ? 2 : multi;
                        int64_t n = dp_shape_size(&s), c = s.dims[1], inner = multi ? s.dims[2] : 1, outer = s.dims[0], rows = outer * inner, o, q, j, valid = 0;
                        double alpha = pv ? 0.1 : 0, scale = pv ? 0.5 : 1, off = c > 1 ? alpha / (double)(c - 1) : 0;
                        const char *keys[7], *vals[7];
                        void *x = tk_host(t, n, 0, 0), *og = tk_host(t, n, 0, 0), *y0 = tk_host(t, n, 0, 0), *lab, *l0, *wy = tk_copy(t, n, y0), *wdx = tk_copy(t, n, y0), *wdl, *yv;
                        dp_ndarray *in[4], *out[2];
                        dp_req req[2];
                        char what[128];
                        memset(&ls, 0, sizeof ls); ls.ndim = multi ? 2 : 1; ls.dims[0] = outer; ls.dims[1] = multi ? inner : 0;
                        lab = tk_host(lt, rows, 1, lt == DP_BOOL ? (c < 2 ? 1 : 2) : c < 100 ? c : 100);
                        l0 = tk_host(lt, rows, 2, 0); wdl = tk_copy(lt, rows, l0);
                        yv = malloc((size_t)n * 8);
                        req[0] = req[1] = add ? DP_REQ_ADD : DP_REQ_WRITE;
                        for (o = 0; o < outer; o++)
                            for (q = 0; q < inner; q++) {
                                int64_t base = o * c * inner + q;
                                double mx = -HUGE_VAL, sum = 0;
                                for (j = 0; j < c; j++) { double v = dp_dtype_load(t, x, base + j * inner); if (v > mx) mx = v; }
                                for (j = 0; j < c; j++) sum += exp(dp_dtype_load(t, x, base + j * inner) - mx);
                                for (j = 0; j < c; j++) dp_dtype_store(t, wy, base + j * inner, exp(dp_dtype_load(t, x, base + j * inner) - mx) / sum, req[0]);
                                for (j = 0; j < c; j++) dp_dtype_store(t, yv, base + j * inner, exp(dp_dtype_load(t, x, base + j * inner) - mx) / sum, DP_REQ_WRITE);
                            }
                        for (o = 0; o < rows; o++) valid += !(use_ignore && dp_dtype_load(lt, lab, o) == 1);
                        if (norm == 1) scale /= (double)outer;
                        if (norm == 2) scale /= (double)(valid > 0 ? valid : 1);
                        for (o = 0; o < outer; o++)
                            for (q = 0; q < inner; q++) {
                                double lv = dp_dtype_load(lt, lab, o * inner + q);
                                int skip = use_ignore && lv == 1;
                                for (j = 0; j < c; j++) {
                                    int64_t i = o * c * inner + q + j * inner;
                                    double v = skip ? 0 : (dp_dtype_load(t, yv, i) - (j == (int64_t)lv ? 1 - alpha : off)) * scale;
                                    if (out_grad) v *= dp_dtype_load(t, og, i);
                                    dp_dtype_store(t, wdx, i, v, req[0]);
                                }
                                dp_dtype_store(lt, wdl, o * inner + q, 0, req[1]);
                            }
                        keys[0] = k3[0]; vals[0] = multi ? "1" : "0"; keys[1] = k3[1]; vals[1] = use_ignore ? "1" : "0";
                        keys[2] = k3[2]; vals[2] = "1"; keys[3] = k3[3]; vals[3] = out_grad ? "1" : "0";
                        keys[4] = k4[0]; vals[4] = pv ? "0.1" : "0"; keys[5] = k4[1]; vals[5] = norm == 2 ? "valid" : norm ? "batch" : "null";
                        keys[6] = k4[2]; vals[6] = pv ? "0.5" : "1";
                        in[0] = tk_array(e, &s, t, x); in[1] = tk_array(e, &ls, lt, lab);
                        out[0] = tk_array(e, &s, t, y0);
                        snprintf(what, sizeof what, "SoftmaxOutput (%lld, %lld, %lld) label %s%s%s", (long long)outer, (long long)c, (long long)inner,
                                 dp_dtype_name(lt), pv ? " ignore/out_grad/alpha" : "", add ? " added" : "");
                        CHECK(invoke_str(e, "SoftmaxOutput", 2, in, 7, keys, vals, 0, 1, out, req) == DP_OK);
                        CHECK(tk_same(what, out[0], wy));
                        dp_nd_release(out[0]);
                        in[2] = in[1]; in[1] = in[0]; in[0] = tk_array(e, &s, t, og); in[3] = tk_array(e, &s, t, yv);
                        out[0] = tk_array(e, &s, t, y0); out[1] = tk_array(e, &ls, lt, l0);
                        CHECK(invoke_str(e, "_backward_SoftmaxOutput", 4, in, 7, keys, vals, 0, 2, out, req) == DP_OK);
                        CHECK(tk_same(what, out[0], wdx));
                        CHECK(tk_same(what, out[1], wdl));
                        for (j = 0; j < 4; j++) dp_nd_release(in[j]);
                        dp_nd_release(out[0]); dp_nd_release(out[1]);
                        free(x); free(og); free(y0); free(lab); free(l0); free(wy); free(wdx); free(wdl); free(yv);
                    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* BlockGrad's and Flatten's copy added, BlockGrad's zero gradient written
   and added: every dtype (int64 past 2^53 added through double, as
   dp_dtype_store adds) */
static void typed_copies(void) {
    dp_engine *e = tk_engine();
    int ti, si, add, op;
    for (ti = 0; ti < 8; ti++)
        for (si = 0; si < 4; si++)
            for (op = 0; op < 3; op++)
                for (add = 0; add < 2; add++) {
                    dp_dtype t = tk_all[ti];
                    int64_t n = tk_sizes[si], i, d[3] = {n, 1, 0};
                    dp_shape s = shape_of(d);
                    void *x = tk_host(t, n, 2, 0), *y0 = tk_host(t, n, 2, 0), *want = tk_copy(t, n, y0);
                    dp_ndarray *in[2], *out;
                    dp_req req = add ? DP_REQ_ADD : DP_REQ_WRITE;
                    static const char *const ops[3] = {"BlockGrad", "Flatten", "_backward_BlockGrad"};
                    char what[96];
                    if (op < 2 && !add) memcpy(want, x, (size_t)n * dp_dtype_size(t));   /* a written copy is the bytes */
                    else for (i = 0; i < n; i++) dp_dtype_store(t, want, i, op == 2 ? 0 : dp_dtype_load(t, x, i), req);
                    in[0] = in[1] = tk_array(e, &s, t, x); out = tk_array(e, &s, t, y0);   /* the gradient's (og, data) */
                    snprintf(what, sizeof what, "%s%s", ops[op], add ? " added" : "");
                    if (invoke_str(e, ops[op], op == 2 ? 2 : 1, in, 0, NULL, NULL, 0, 1, &out, &req) != DP_OK) { fprintf(stderr, "  %s %s: %s\n", what, dp_dtype_name(t), g_msg); CHECK(0); }
                    CHECK(tk_same(what, out, want));
                    dp_nd_release(in[0]); dp_nd_release(out);
                    free(x); free(y0); free(want);
                }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* where and its gradient: every data dtype, conditions of three dtypes
   (NaN counts as true), element-wise and one condition a row, write and
   add-to, against each element picked alone */
static void typed_where(void) {
    static const dp_dtype conds[3] = {DP_FLOAT32, DP_INT8, DP_BOOL};
    dp_engine *e = tk_engine();
    int ti, ci, si, add, rows;
    for (ti = 0; ti < 8; ti++)
        for (ci = 0; ci < 3; ci++)
            for (si = 0; si < 3; si++)
                for (rows = 0; rows < 2; rows++)
                    for (add = 0; add < 2; add++) {
                        dp_dtype t = tk_all[ti], ct = conds[ci];
                        int64_t n = tk_sizes[si] * (rows ? 3 : 1), nc = rows ? n / 3 : n, per = rows ? 3 : 1, i;
                        int64_t xd[3] = {rows ? nc : n, rows ? 3 : 0, 0}, cd[2] = {nc, 0};
                        dp_shape xs = shape_of(xd), cs = shape_of(cd);
                        void *c = tk_host(ct, nc, 2, 0), *x = tk_host(t, n, 2, 0), *y = tk_host(t, n, 2, 0), *o0 = tk_host(t, n, 2, 0);
                        void *want = tk_copy(t, n, o0), *wdx = tk_copy(t, n, o0), *wdy = tk_copy(t, n, x);
                        dp_ndarray *in[4], *out[3];
                        dp_req req[3];
                        char what[96];
                        req[0] = req[1] = req[2] = add ? DP_REQ_ADD : DP_REQ_WRITE;
                        for (i = 0; i < n; i++) {
                            int pick = dp_dtype_load(ct, c, i / per) != 0;
                            double g = dp_dtype_load(t, o0, i);
                            dp_dtype_store(t, want, i, dp_dtype_load(t, pick ? x : y, i), req[0]);
                            dp_dtype_store(t, wdx, i, pick ? g : 0, req[1]);
                            dp_dtype_store(t, wdy, i, pick ? 0 : g, req[2]);
                        }
                        in[0] = tk_array(e, &cs, ct, c); in[1] = tk_array(e, &xs, t, x); in[2] = tk_array(e, &xs, t, y);
                        out[0] = tk_array(e, &xs, t, o0);
                        snprintf(what, sizeof what, "where%s%s cond %s", rows ? " rows" : "", add ? " added" : "", dp_dtype_name(ct));
                        if (invoke_str(e, "where", 3, in, 0, NULL, NULL, 0, 1, out, req) != DP_OK) { fprintf(stderr, "  %s %s: %s\n", what, dp_dtype_name(t), g_msg); CHECK(0); }
                        CHECK(tk_same(what, out[0], want));
                        dp_nd_release(out[0]);
                        {   /* _backward_where (og, condition, x, y) -> (d condition, d x, d y) */
                            dp_ndarray *gin[4];
                            dp_req greq[3];
                            gin[0] = tk_array(e, &xs, t, o0); gin[1] = in[0]; gin[2] = in[1]; gin[3] = in[2];
                            out[0] = NULL; out[1] = tk_array(e, &xs, t, o0); out[2] = tk_array(e, &xs, t, x);
                            greq[0] = DP_REQ_WRITE; greq[1] = greq[2] = req[0];
                            if (invoke_str(e, "_backward_where", 4, gin, 0, NULL, NULL, 0, 3, out, greq) != DP_OK) { fprintf(stderr, "  d %s %s: %s\n", what, dp_dtype_name(t), g_msg); CHECK(0); }
                            CHECK(tk_same("d x of where", out[1], wdx) && tk_same("d y of where", out[2], wdy));
                            dp_nd_release(gin[0]);
                            for (i = 0; i < 3; i++) if (out[i]) dp_nd_release(out[i]);
                        }
                        for (i = 0; i < 3; i++) dp_nd_release(in[i]);
                        free(c); free(x); free(y); free(o0); free(want); free(wdx); free(wdy);
                    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* The row copies of Embedding, stack and slice_axis and their gradients,
   every dtype, write (the bytes) and add-to (each element added alone
   through dp_dtype_load / dp_dtype_store) */
/* element di of dst = element si of src by req: a write copies the bytes,
   an add-to adds through doubles (dp_dtype_store's rule) */
static void rc_copy(dp_dtype t, void *dst, int64_t di, const void *src, int64_t si, dp_req req) {
    size_t es = dp_dtype_size(t);
    if (req == DP_REQ_ADD) dp_dtype_store(t, dst, di, dp_dtype_load(t, src, si), DP_REQ_ADD);
    else memcpy((unsigned char *)dst + (size_t)di * es, (const unsigned char *)src + (size_t)si * es, es);
}
static void typed_row_copies(void) {
    dp_engine *e = tk_engine();
    int ti, add, op;
    for (ti = 0; ti < 8; ti++)
        for (op = 0; op < 6; op++)
            for (add = 0; add < 2; add++) {
                dp_dtype t = tk_all[ti];
                dp_req req = add ? DP_REQ_ADD : DP_REQ_WRITE, reqs[3];
                int64_t rows = 300, d = 7, i, j, o;
                int64_t wd2[3] = {rows, d, 0}, id1[2] = {5, 0}, od2[3] = {5, d, 0}, ad[3] = {3, 301, 0}, sd[4] = {3, 2, 301, 0}, cd[3] = {3, 299, 0};
                dp_shape ws = shape_of(wd2), is = shape_of(id1), os = shape_of(od2), as = shape_of(ad), ss = shape_of(sd), cs = shape_of(cd);
                const char *ek[2] = {"input_dim", "output_dim"}, *ev[2] = {"300", "7"};
                const char *sk[2] = {"num_args", "axis"}, *sv[2] = {"2", "1"};
                const char *ck[3] = {"axis", "begin", "end"}, *cv[3] = {"1", "1", "300"};
                void *a = tk_host(t, 3 * 301, 2, 0), *b = tk_host(t, 3 * 301, 2, 0), *w = tk_host(t, rows * d, 2, 0), *y0 = tk_host(t, 2 * 3 * 301, 2, 0), *want = tk_copy(t, 2 * 3 * 301, y0);
                double idx[5] = {3, 299, 0, 3, 17};
                float fidx[5];
                dp_ndarray *in[3], *out[3] = {NULL, NULL, NULL};
                int ok = 1;
                for (i = 0; i < 5; i++) fidx[i] = (float)idx[i];
                reqs[0] = reqs[1] = reqs[2] = req;
                if (op == 0) {                              /* Embedding (data, weight) */
                    if (t != DP_FLOAT32 && t != DP_FLOAT64) goto next;
                    for (i = 0; i < 5; i++) for (j = 0; j < d; j++) rc_copy(t, want, i * d + j, w, (int64_t)idx[i] * d + j, req);
                    in[0] = tk_array(e, &is, DP_FLOAT32, fidx); in[1] = tk_array(e, &ws, t, w); out[0] = tk_array(e, &os, t, y0);
                    { const char *ek3[3] = {"input_dim", "output_dim", "dtype"}, *ev3[3] = {"300", "7", dp_dtype_name(t)}; (void)ek; (void)ev;
                      ok = invoke_str(e, "Embedding", 2, in, 3, ek3, ev3, 0, 1, out, &req) == DP_OK && tk_same(add ? "Embedding added" : "Embedding", out[0], want); }
                    dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(out[0]);
                } else if (op == 1) {                       /* _backward_Embedding (og, data, weight) -> (d data, d weight) */
                    if (t != DP_FLOAT32 && t != DP_FLOAT64) goto next;
                    {
                        void *og = tk_host(t, 5 * d, 2, 0), *w0 = tk_host(t, rows * d, 2, 0), *wantw = tk_copy(t, rows * d, w0);
                        const char *ek3[3] = {"input_dim", "output_dim", "dtype"}, *ev3[3] = {"300", "7", dp_dtype_name(t)};
                        if (!add) memset(wantw, 0, (size_t)(rows * d) * dp_dtype_size(t));
                        for (i = 0; i < 5; i++) for (j = 0; j < d; j++) dp_dtype_store(t, wantw, (int64_t)idx[i] * d + j, dp_dtype_load(t, og, i * d + j), DP_REQ_ADD);
                        in[0] = tk_array(e, &os, t, og); in[1] = tk_array(e, &is, DP_FLOAT32, fidx); in[2] = tk_array(e, &ws, t, w);
                        out[0] = NULL; out[1] = tk_array(e, &ws, t, w0);
                        reqs[0] = DP_REQ_WRITE;
                        ok = invoke_str(e, "_backward_Embedding", 3, in, 3, ek3, ev3, 0, 2, out, reqs) == DP_OK && tk_same(add ? "d weight of Embedding added" : "d weight of Embedding", out[1], wantw);
                        for (i = 0; i < 3; i++) dp_nd_release(in[i]);
                        for (i = 0; i < 2; i++) if (out[i]) dp_nd_release(out[i]);
                        free(og); free(w0); free(wantw);
                    }
                } else if (op == 2) {                       /* stack axis 1 of two (3, 301) */
                    for (o = 0; o < 3; o++) for (i = 0; i < 2; i++) for (j = 0; j < 301; j++)
                        rc_copy(t, want, (o * 2 + i) * 301 + j, i ? b : a, o * 301 + j, req);
                    in[0] = tk_array(e, &as, t, a); in[1] = tk_array(e, &as, t, b); out[0] = tk_array(e, &ss, t, y0);
                    ok = invoke_str(e, "stack", 2, in, 2, sk, sv, 0, 1, out, &req) == DP_OK && tk_same(add ? "stack added" : "stack", out[0], want);
                    dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(out[0]);
                } else if (op == 3) {                       /* _backward_stack (og, a, b) -> (d a, d b) */
                    void *wa = tk_copy(t, 3 * 301, a), *wb = tk_copy(t, 3 * 301, b);
                    for (o = 0; o < 3; o++) for (i = 0; i < 2; i++) for (j = 0; j < 301; j++)
                        rc_copy(t, i ? wb : wa, o * 301 + j, y0, (o * 2 + i) * 301 + j, req);
                    in[0] = tk_array(e, &ss, t, y0); in[1] = tk_array(e, &as, t, a); in[2] = tk_array(e, &as, t, b);
                    out[0] = tk_array(e, &as, t, a); out[1] = tk_array(e, &as, t, b);
                    ok = invoke_str(e, "_backward_stack", 3, in, 2, sk, sv, 0, 2, out, reqs) == DP_OK && tk_same("d a of stack", out[0], wa) && tk_same("d b of stack", out[1], wb);
                    for (i = 0; i < 3; i++) dp_nd_release(in[i]);
                    dp_nd_release(out[0]); dp_nd_release(out[1]);
                    free(wa); free(wb);
                } else if (op == 4) {                       /* slice_axis axis 1 [1, 300) of (3, 301) */
                    for (o = 0; o < 3; o++) for (j = 0; j < 299; j++) rc_copy(t, want, o * 299 + j, a, o * 301 + 1 + j, req);
                    in[0] = tk_array(e, &as, t, a); out[0] = tk_array(e, &cs, t, y0);
                    ok = invoke_str(e, "slice_axis", 1, in, 3, ck, cv, 0, 1, out, &req) == DP_OK && tk_same(add ? "slice_axis added" : "slice_axis", out[0], want);
                    dp_nd_release(in[0]); dp_nd_release(out[0]);
                } else {                                    /* _backward_slice_axis (og (3, 299), data) -> d data */
                    void *wa = tk_copy(t, 3 * 301, b);
                    if (!add) for (i = 0; i < 3 * 301; i++) dp_dtype_store(t, wa, i, 0, DP_REQ_WRITE);
                    for (o = 0; o < 3; o++) for (j = 0; j < 299; j++) dp_dtype_store(t, wa, o * 301 + 1 + j, dp_dtype_load(t, y0, o * 299 + j), DP_REQ_ADD);
                    in[0] = tk_array(e, &cs, t, y0); in[1] = tk_array(e, &as, t, a); out[0] = tk_array(e, &as, t, b);
                    ok = invoke_str(e, "_backward_slice_axis", 2, in, 3, ck, cv, 0, 1, out, &req) == DP_OK && tk_same(add ? "d slice_axis added" : "d slice_axis", out[0], wa);
                    dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(out[0]);
                    free(wa);
                }
                if (!ok) fprintf(stderr, "  row copies: op %d %s%s failed: %s\n", op, dp_dtype_name(t), add ? " added" : "", g_msg);
                CHECK(ok);
            next:
                free(a); free(b); free(w); free(y0); free(want);
            }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* MakeLoss normalized by the valid elements: the count read a block at a
   time, over dtypes, against the count taken element by element */
static void typed_make_loss_valid(void) {
    dp_engine *e = tk_engine();
    int ti;
    for (ti = 0; ti < 8; ti++) {
        dp_dtype t = tk_all[ti];
        int64_t n = 1003, i, valid = 0, d1[2] = {n, 0};
        dp_shape s = shape_of(d1);
        void *x = tk_host(t, n, 2, 0), *og = tk_host(DP_FLOAT64, n, 2, 0), *want = malloc((size_t)n * 8);
        const char *k[3] = {"grad_scale", "valid_thresh", "normalization"}, *v[3] = {"3", "0.5", "valid"};
        dp_ndarray *in[2], *out[1] = {NULL};
        char what[64];
        for (i = 0; i < n; i++) valid += dp_dtype_load(t, x, i) > 0.5;
        for (i = 0; i < n; i++) dp_dtype_store(t, want, i, 3.0 / (valid > 0 ? (double)valid : 1.0), DP_REQ_WRITE);
        in[0] = tk_array(e, &s, t, og); in[1] = tk_array(e, &s, t, x);
        snprintf(what, sizeof what, "d MakeLoss valid (%lld valid)", (long long)valid);
        CHECK(invoke_str(e, "_backward_MakeLoss", 2, in, 3, k, v, 0, 1, out, NULL) == DP_OK && tk_same(what, out[0], want));
        dp_nd_release(in[0]); dp_nd_release(in[1]); if (out[0]) dp_nd_release(out[0]);
        free(x); free(og); free(want);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* FullyConnected's bias gradient: each column summed in double in row
   order, columns in blocks (h over a block, and a part block) */
static void typed_fc_bias_grad(void) {
    static const int64_t bh[5][2] = {{1, 1}, {7, 3}, {5, 1003}, {3, 300}, {64, 257}};
    dp_engine *e = tk_engine();
    int ti, si, add;
    for (ti = 0; ti < 2; ti++)
        for (si = 0; si < 5; si++)
            for (add = 0; add < 2; add++) {
                dp_dtype t = tk_all[ti];
                int64_t batch = bh[si][0], h = bh[si][1], in_n = 3, r, j;
                int64_t od[3] = {batch, h, 0}, xd[3] = {batch, in_n, 0}, wd[3] = {h, in_n, 0}, bd[2] = {h, 0};
                dp_shape os = shape_of(od), xs = shape_of(xd), ws = shape_of(wd), bs = shape_of(bd);
                void *og = tk_host(t, batch * h, 0, 0), *x = tk_host(t, batch * in_n, 0, 0), *w = tk_host(t, h * in_n, 0, 0), *b0 = tk_host(t, h, 0, 0);
                void *want = tk_copy(t, h, b0);
                char hs[32];
                const char *keys[1] = {"num_hidden"}, *vals[1] = {hs};
                dp_ndarray *in[4], *out[3];
                dp_req req[3];
                snprintf(hs, sizeof hs, "%lld", (long long)h);
                req[0] = req[1] = DP_REQ_WRITE; req[2] = add ? DP_REQ_ADD : DP_REQ_WRITE;
                for (j = 0; j < h; j++) {
                    double s = 0;
                    for (r = 0; r < batch; r++) s += dp_dtype_load(t, og, r * h + j);
                    dp_dtype_store(t, want, j, s, req[2]);
                }
                in[0] = tk_array(e, &os, t, og); in[1] = tk_array(e, &xs, t, x); in[2] = tk_array(e, &ws, t, w); in[3] = tk_array(e, &bs, t, b0);
                out[0] = out[1] = NULL; out[2] = tk_array(e, &bs, t, b0);
                CHECK(invoke_str(e, "_backward_FullyConnected", 4, in, 1, keys, vals, 0, 3, out, req) == DP_OK);
                CHECK(tk_same(add ? "FullyConnected d bias added" : "FullyConnected d bias", out[2], want));
                for (j = 0; j < 4; j++) dp_nd_release(in[j]);
                for (j = 0; j < 3; j++) if (out[j]) dp_nd_release(out[j]);
                free(og); free(x); free(w); free(b0); free(want);
            }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* batch_dot and its gradient take the GEMM's workspaces from the engine
   (its allocator, kept for the next step), not from malloc per matrix: on
   engines whose allocator is watched, after a round on tiny matrices (no
   workspace: it warms the engine's own pools), the first round on large
   ones is handed a block larger than dp_gemm keeps on its stack (16 KiB),
   and later rounds allocate nothing. The arrays are made before. The
   results are dp_gemm's bits, matrix by matrix. */
typedef struct bd_arrays { dp_ndarray *in[3], *y, *g[2]; } bd_arrays;
static void bd_make(dp_engine *e, bd_arrays *x, int64_t nb, int64_t m, int64_t k, int64_t n, const float *a, const float *b, const float *og) {
    int64_t ad[4] = {nb, m, k, 0}, bd[4] = {nb, k, n, 0}, yd[4] = {nb, m, n, 0};
    dp_shape as = shape_of(ad), bs = shape_of(bd), ys = shape_of(yd);
    CHECK(dp_nd_from_host(e, &ys, DP_FLOAT32, CPU0, og, &x->in[0]) == DP_OK);
    CHECK(dp_nd_from_host(e, &as, DP_FLOAT32, CPU0, a, &x->in[1]) == DP_OK);
    CHECK(dp_nd_from_host(e, &bs, DP_FLOAT32, CPU0, b, &x->in[2]) == DP_OK);
    CHECK(dp_nd_empty(e, &ys, DP_FLOAT32, CPU0, &x->y) == DP_OK);
    CHECK(dp_nd_empty(e, &as, DP_FLOAT32, CPU0, &x->g[0]) == DP_OK);
    CHECK(dp_nd_empty(e, &bs, DP_FLOAT32, CPU0, &x->g[1]) == DP_OK);
}
static void bd_round(dp_engine *e, bd_arrays *x) {
    CHECK(invoke_str(e, "batch_dot", 2, x->in + 1, 0, NULL, NULL, 0, 1, &x->y, NULL) == DP_OK);
    CHECK(invoke_str(e, "_backward_batch_dot", 3, x->in, 0, NULL, NULL, 0, 2, x->g, NULL) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
}
static void bd_release(bd_arrays *x) {
    int i;
    for (i = 0; i < 3; i++) dp_nd_release(x->in[i]);
    dp_nd_release(x->y); dp_nd_release(x->g[0]); dp_nd_release(x->g[1]);
}
static void batch_dot_workspace_kept(void) {
#ifndef DEPENG_USE_CBLAS   /* with CBLAS the products take no workspace */
    static const dp_engine_type kinds[2] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED};
    enum { NB = 3, M = 64, K = 96, N = 80 };
    float *a = (float *)malloc(sizeof(float) * NB * M * K), *b = (float *)malloc(sizeof(float) * NB * K * N);
    float *og = (float *)malloc(sizeof(float) * NB * M * N), *got = (float *)malloc(sizeof(float) * NB * M * N);
    float *want = (float *)malloc(sizeof(float) * NB * M * N);
    int kind, i, round;
    for (i = 0; i < NB * M * K; i++) a[i] = (float)urand();
    for (i = 0; i < NB * K * N; i++) b[i] = (float)urand();
    for (i = 0; i < NB * M * N; i++) og[i] = (float)urand();
    for (i = 0; i < NB; i++) dp_gemm(DP_FLOAT32, 0, 0, M, N, K, a + i * M * K, K, b + i * K * N, N, 0.0, want + i * M * N, N);
    for (kind = 0; kind < 2; kind++) {
        dp_engine_desc d;
        dp_engine *e = NULL;
        bd_arrays tiny, big;
        size_t largest;
        long calls;
        memset(&d, 0, sizeof d);
        d.type = kinds[kind]; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = msg_logger;
        d.allocator.alloc = largest_alloc; d.allocator.free = failing_free;
        CHECK(dp_engine_create(&d, &e) == DP_OK);
        if (!e) continue;
        bd_make(e, &tiny, 2, 2, 3, 2, a, b, og);
        bd_make(e, &big, NB, M, K, N, a, b, og);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        bd_round(e, &tiny);
        bd_round(e, &tiny);
        __atomic_store_n(&g_largest_alloc, 0, __ATOMIC_RELAXED);
        calls = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
        bd_round(e, &big);
        largest = __atomic_load_n(&g_largest_alloc, __ATOMIC_RELAXED);
        if (largest <= 16384 + 64)
            fprintf(stderr, "  engine %d: %ld blocks, the largest %zu bytes: no workspace from the engine\n", kind,
                    __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) - calls, largest);
        CHECK(largest > 16384 + 64);
        /* three more warm rounds first: the two ops of a round and a helping
           wait may meet in the GEMM three at a time only later, and each new
           overlap takes one more workspace once */
        for (round = 0; round < 5; round++) {
            if (round == 3) calls = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
            bd_round(e, &big);
        }
        if (__atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) != calls)
            fprintf(stderr, "  engine %d: %ld allocations in two warm rounds\n", kind, __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) - calls);
        CHECK(__atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) == calls);
        CHECK(dp_nd_read(big.y, got, sizeof(float) * NB * M * N, NULL) == DP_OK);
        CHECK(memcmp(got, want, sizeof(float) * NB * M * N) == 0);
        bd_release(&tiny); bd_release(&big);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    }
    free(a); free(b); free(og); free(got); free(want);
#endif
}

int main(void) {
    dp_logger lg;
    static const test_case tests[] = {
        {"conv_gradients_im2col", conv_gradients_im2col},
        {"conv_gradients_direct", conv_gradients_direct},
        {"pool_gradients", pool_gradients},
        {"pool2_first_max_and_nan", pool2_first_max_and_nan},
        {"activation_gradients", activation_gradients},
        {"activation_matches_builtins", activation_matches_builtins},
        {"activation_own_types", activation_own_types},
        {"softmax_output_params", softmax_output_params},
        {"tensor_gradients", tensor_gradients},
        {"losses_and_blocks", losses_and_blocks},
        {"slice_channel", slice_channel},
        {"conv_implementations_agree", conv_implementations_agree},
        {"conv_temp_space_per_call", conv_temp_space_per_call},
        {"bad_parameters_refused", bad_parameters_refused},
        {"mxnet_json_lenet", mxnet_json_lenet},
        {"symbol_nodes", symbol_nodes},
        {"same_gradients_everywhere", same_gradients_everywhere},
        {"typed_activations", typed_activations},
        {"typed_prelu", typed_prelu},
        {"typed_regression", typed_regression},
        {"typed_softmax_output", typed_softmax_output},
        {"typed_copies", typed_copies},
        {"typed_where", typed_where},
        {"typed_row_copies", typed_row_copies},
        {"typed_make_loss_valid", typed_make_loss_valid},
        {"typed_fc_bias_grad", typed_fc_bias_grad},
        {"batch_dot_workspace_kept", batch_dot_workspace_kept},
    };
    lg.func = msg_logger; lg.user = NULL;
    dp_set_default_logger(&lg);
    return run_tests("layers", tests, (int)(sizeof tests / sizeof tests[0]));
}
