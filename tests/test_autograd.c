/* depeng autograd, optimizer and data tests: gradients of whole graphs
   against finite differences, gradient requests, head gradients, misuse,
   what is (not) recorded, memory kept by graphs, in-place gradients,
   optimizer updates, bitwise reproducible training on every engine kind,
   CSV loading and the mini-batch iterator. The last line is
   "autograd: N passed, M failed". */
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
#include <unistd.h>
#include <pthread.h>

/* ---- helpers ---------------------------------------------------------------- */
static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
static const char *const kind_names[3] = {"naive", "pooled", "perdevice"};
static const dp_ctx CPU0 = {DP_DEV_CPU, 0};

/* quiet_logger, and a flag for LEAKED_ARRAYS (another item may follow it) */
static volatile int g_leaked;
static long g_oom_logged;   /* OUT_OF_MEMORY lines logged */
static void test_logger(const char *tag, uint32_t level, uint32_t item, const char *msg, uint32_t line, const char *file, void *user) {
    if (item == DP_LOGITEM_LEAKED_ARRAYS) g_leaked = 1;
    if (item == DP_LOGITEM_OUT_OF_MEMORY) __atomic_fetch_add(&g_oom_logged, 1, __ATOMIC_RELAXED);
    quiet_logger(tag, level, item, msg, line, file, user);
}
static dp_engine *make_engine(dp_engine_type type, dp_storage_kind storage) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
    d.logger.func = test_logger;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    if (storage != DP_STORAGE_DEFAULT) {
        dp_storage_desc sd;
        memset(&sd, 0, sizeof sd);
        sd.kind = storage;
        if (dp_storage_configure(e, &sd) != DP_OK) { fprintf(stderr, "storage configure failed\n"); exit(1); }
    }
    return e;
}
/* every array must be released by now: destroy is clean and logs no leak */
static void destroy_engine(dp_engine *e) {
    g_leaked = 0;
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    CHECK(!g_leaked);
}
static dp_shape shp(int ndim, int64_t d0, int64_t d1, int64_t d2) {
    dp_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim; s.dims[0] = d0; s.dims[1] = d1; s.dims[2] = d2;
    return s;
}
/* a new array of dtype dt holding the doubles v (converted) */
static dp_ndarray *arr(dp_engine *e, dp_shape s, dp_dtype dt, const double *v) {
    int64_t n = dp_shape_size(&s), i;
    void *buf = malloc((n > 0 ? (size_t)n : 1) * 8);
    dp_ndarray *a = NULL;
    for (i = 0; i < n; i++) {
        switch (dt) {
        case DP_FLOAT32: ((float *)buf)[i] = (float)v[i]; break;
        case DP_FLOAT64: ((double *)buf)[i] = v[i]; break;
        case DP_INT32: ((int32_t *)buf)[i] = (int32_t)v[i]; break;
        case DP_INT64: ((int64_t *)buf)[i] = (int64_t)v[i]; break;
        default: ((uint8_t *)buf)[i] = (uint8_t)v[i]; break;
        }
    }
    CHECK(dp_nd_from_host(e, &s, dt, CPU0, buf, &a) == DP_OK);
    free(buf);
    return a;
}
static dp_ndarray *arr64(dp_engine *e, dp_shape s, const double *v) { return arr(e, s, DP_FLOAT64, v); }
/* reads a float32 / float64 / int array of n elements as doubles; 0 on failure */
static int readd(dp_ndarray *a, double *out, int64_t n) {
    void *buf;
    int64_t i;
    int ok;
    if (!a || dp_shape_size(dp_nd_shape(a)) != n) return 0;
    buf = malloc(dp_nd_bytes(a) ? dp_nd_bytes(a) : 1);
    ok = buf && dp_nd_read(a, buf, dp_nd_bytes(a), NULL) == DP_OK;
    for (i = 0; ok && i < n; i++) {
        switch (dp_nd_dtype(a)) {
        case DP_FLOAT32: out[i] = ((float *)buf)[i]; break;
        case DP_FLOAT64: out[i] = ((double *)buf)[i]; break;
        case DP_INT32: out[i] = ((int32_t *)buf)[i]; break;
        case DP_INT64: out[i] = (double)((int64_t *)buf)[i]; break;
        default: out[i] = ((uint8_t *)buf)[i]; break;
        }
    }
    free(buf);
    return ok;
}
/* invokes a one-output operator, making the output; NULL (and a failed
   CHECK naming the operator) on error */
static dp_ndarray *inv(dp_engine *e, const char *name, int nin, dp_ndarray *const *in, int nkw, const char *const *keys,
                       const char *const *vals, double scalar) {
    dp_ndarray *out = NULL;
    dp_result r = invoke_str(e, name, nin, in, nkw, keys, vals, scalar, 1, &out, NULL);
    if (r != DP_OK) { fprintf(stderr, "  invoke %s: %s\n", name, dp_result_string(r)); CHECK(0); return NULL; }
    return out;
}
static dp_ndarray *un(dp_engine *e, const char *name, dp_ndarray *a) { return inv(e, name, 1, &a, 0, NULL, NULL, 0); }
static dp_ndarray *un_s(dp_engine *e, const char *name, dp_ndarray *a, double s) { return inv(e, name, 1, &a, 0, NULL, NULL, s); }
static dp_ndarray *un_kw(dp_engine *e, const char *name, dp_ndarray *a, const char *key, const char *val) {
    const char *k[1], *v[1];
    k[0] = key; v[0] = val;
    return inv(e, name, 1, &a, 1, k, v, 0);
}
static dp_ndarray *bin(dp_engine *e, const char *name, dp_ndarray *a, dp_ndarray *b) {
    dp_ndarray *in[2];
    in[0] = a; in[1] = b;
    return inv(e, name, 2, in, 0, NULL, NULL, 0);
}
static int near_rel(double got, double want, double tol) { return fabs(got - want) <= tol * (1 + fabs(want)); }

/* ---- 1. gradients of whole graphs by finite differences -------------------- */
/* A graph builds its head from its inputs and releases its intermediates. */
typedef dp_ndarray *(*graph_fn)(dp_engine *e, dp_ndarray *const *in);
typedef struct graph_spec {
    const char *name;
    graph_fn fn;
    int nin, nmarked;          /* the first nmarked inputs are differentiated */
    dp_shape shapes[6];
    dp_dtype dtypes[6];
    const double *init[6];
} graph_spec;

/* (a) FullyConnected -> tanh -> FullyConnected -> softmax_cross_entropy.
   in: data (4, 3), w1 (5, 3), b1 (5,), w2 (3, 5), b2 (3,), label (4,) */
static dp_ndarray *g_mlp(dp_engine *e, dp_ndarray *const *in) {
    const char *nh[1] = {"num_hidden"}, *v5[1] = {"5"}, *v3[1] = {"3"};
    dp_ndarray *fc[3], *h1, *a1, *h2, *sce[2], *loss;
    fc[0] = in[0]; fc[1] = in[1]; fc[2] = in[2];
    h1 = inv(e, "FullyConnected", 3, fc, 1, nh, v5, 0);
    a1 = un(e, "tanh", h1);
    fc[0] = a1; fc[1] = in[3]; fc[2] = in[4];
    h2 = inv(e, "FullyConnected", 3, fc, 1, nh, v3, 0);
    sce[0] = h2; sce[1] = in[5];
    loss = inv(e, "softmax_cross_entropy", 2, sce, 0, NULL, NULL, 0);
    dp_nd_release(h1); dp_nd_release(a1); dp_nd_release(h2);
    return loss;
}
/* (b) x (3, 1) used twice (mul(x, x) + sin(x)), broadcast against z (1, 4),
   the result used by two operators: sum(u * u + cos(u)), u = x*x + sin x + z */
static dp_ndarray *g_twice(dp_engine *e, dp_ndarray *const *in) {
    dp_ndarray *m = bin(e, "mul", in[0], in[0]), *s = un(e, "sin", in[0]), *t = bin(e, "add", m, s);
    dp_ndarray *u = bin(e, "add", t, in[1]), *v = bin(e, "mul", u, u), *c = un(e, "cos", u), *vc = bin(e, "add", v, c);
    dp_ndarray *h = un(e, "sum", vc);
    CHECK(u && dp_nd_shape(u)->ndim == 2 && dp_nd_shape(u)->dims[0] == 3 && dp_nd_shape(u)->dims[1] == 4);
    dp_nd_release(m); dp_nd_release(s); dp_nd_release(t); dp_nd_release(u); dp_nd_release(v);
    dp_nd_release(c); dp_nd_release(vc);
    return h;
}
/* (c) a, b (2, 3): mean(log(softmax(a)), axis 1, keepdims) (2, 1);
   transpose(b) (3, 2); concat(a, b) along 0 (4, 3) reshaped to (2, 6);
   sum(sin(reshape(dot(bT, r * mean), (0, 2, -1)))) */
static dp_ndarray *g_shapes(dp_engine *e, dp_ndarray *const *in) {
    const char *mk[2] = {"axis", "keepdims"}, *mv[2] = {"(1,)", "true"}, *ck[2] = {"num_args", "dim"}, *cv[2] = {"2", "0"};
    dp_ndarray *sm = un_kw(e, "softmax", in[0], "axis", "1"), *l = un(e, "log", sm), *mn = inv(e, "mean", 1, &l, 2, mk, mv, 0);
    dp_ndarray *bt = un_kw(e, "transpose", in[1], "axes", "(1, 0)"), *c = inv(e, "concat", 2, in, 2, ck, cv, 0);
    dp_ndarray *r = un_kw(e, "reshape", c, "shape", "(2, -1)"), *p = bin(e, "mul", r, mn), *d = bin(e, "dot", bt, p);
    dp_ndarray *r3 = un_kw(e, "reshape", d, "shape", "(0, 2, -1)"), *s = un(e, "sin", r3), *h = un(e, "sum", s);
    CHECK(mn && dp_nd_shape(mn)->ndim == 2 && dp_nd_shape(mn)->dims[1] == 1);
    CHECK(r && dp_nd_shape(r)->ndim == 2 && dp_nd_shape(r)->dims[0] == 2 && dp_nd_shape(r)->dims[1] == 6);
    CHECK(r3 && dp_nd_shape(r3)->ndim == 3 && dp_nd_shape(r3)->dims[0] == 3 && dp_nd_shape(r3)->dims[1] == 2 && dp_nd_shape(r3)->dims[2] == 3);
    dp_nd_release(sm); dp_nd_release(l); dp_nd_release(mn); dp_nd_release(bt); dp_nd_release(c);
    dp_nd_release(r); dp_nd_release(p); dp_nd_release(d); dp_nd_release(r3); dp_nd_release(s);
    return h;
}
/* (d) scalar operators, sub / div / maximum, sqrt, sigmoid, log_softmax,
   clip, a max reduction. x (2, 3), y (3,) positive:
   sum(square(max(log_softmax(sigmoid(sqrt(x) - 2 / y), axis 0), axis 1)))
   + sum(clip(maximum(x, y) / (y + 0.5), 0.2, 2.0) * 3) */
static dp_ndarray *g_scalars(dp_engine *e, dp_ndarray *const *in) {
    const char *ck[2] = {"a_min", "a_max"}, *cv[2] = {"0.2", "2.0"};
    dp_ndarray *cp = un(e, "sqrt", in[0]), *q = un_s(e, "rdiv_scalar", in[1], 2.0), *d = bin(e, "sub", cp, q);
    dp_ndarray *sg = un(e, "sigmoid", d), *ls = un_kw(e, "log_softmax", sg, "axis", "0"), *mx = un_kw(e, "max", ls, "axis", "(1,)");
    dp_ndarray *sq = un(e, "square", mx), *s1 = un(e, "sum", sq);
    dp_ndarray *m = bin(e, "maximum", in[0], in[1]), *y5 = un_s(e, "add_scalar", in[1], 0.5), *dv = bin(e, "div", m, y5);
    dp_ndarray *cl = inv(e, "clip", 1, &dv, 2, ck, cv, 0), *c3 = un_s(e, "mul_scalar", cl, 3), *s2 = un(e, "sum", c3);
    dp_ndarray *h = bin(e, "add", s1, s2);
    dp_nd_release(cp); dp_nd_release(q); dp_nd_release(d); dp_nd_release(sg); dp_nd_release(ls); dp_nd_release(mx);
    dp_nd_release(sq); dp_nd_release(s1); dp_nd_release(m); dp_nd_release(y5); dp_nd_release(dv); dp_nd_release(cl);
    dp_nd_release(c3); dp_nd_release(s2);
    return h;
}

static void make_inputs(dp_engine *e, const graph_spec *g, double *const *vals, dp_ndarray **in) {
    int i;
    for (i = 0; i < g->nin; i++) in[i] = arr(e, g->shapes[i], g->dtypes[i], vals[i]);
}
/* The sum of the head's elements (what backward with head_grad NULL
   differentiates), computed without recording. */
static double forward_value(dp_engine *e, const graph_spec *g, double *const *vals) {
    dp_ndarray *in[6], *h;
    double out[64], sum = 0;
    int64_t n, i;
    make_inputs(e, g, vals, in);
    h = g->fn(e, in);
    n = h ? dp_shape_size(dp_nd_shape(h)) : 0;
    CHECK(h && n <= 64 && readd(h, out, n));
    for (i = 0; i < n && n <= 64; i++) sum += out[i];
    dp_nd_release(h);
    for (i = 0; i < g->nin; i++) dp_nd_release(in[i]);
    return sum;
}
static int check_graph(dp_engine *e, const graph_spec *g) {
    dp_ndarray *in[6], *h;
    double *vals[6], grad[64], hstep = 1e-6;
    int i, ok = 1;
    for (i = 0; i < g->nin; i++) {
        int64_t n = dp_shape_size(&g->shapes[i]);
        vals[i] = (double *)malloc(sizeof(double) * (size_t)n);
        memcpy(vals[i], g->init[i], sizeof(double) * (size_t)n);
    }
    make_inputs(e, g, vals, in);
    for (i = 0; i < g->nmarked; i++) CHECK(dp_nd_attach_grad(in[i], DP_REQ_WRITE) == DP_OK);
    CHECK(dp_autograd_begin() == DP_OK);
    h = g->fn(e, in);
    CHECK(dp_autograd_end() == DP_OK);
    if (!h || dp_autograd_backward(h, NULL, 0) != DP_OK) { fprintf(stderr, "  %s: backward failed\n", g->name); ok = 0; }
    for (i = 0; ok && i < g->nmarked; i++) {
        int64_t n = dp_shape_size(&g->shapes[i]), j;
        dp_ndarray *ga = dp_nd_grad(in[i]);
        if (!ga || !readd(ga, grad, n)) { fprintf(stderr, "  %s: no gradient for input %d\n", g->name, i); ok = 0; break; }
        for (j = 0; j < n; j++) {
            double keep = vals[i][j], up, down, numeric;
            vals[i][j] = keep + hstep; up = forward_value(e, g, vals);
            vals[i][j] = keep - hstep; down = forward_value(e, g, vals);
            vals[i][j] = keep;
            numeric = (up - down) / (2 * hstep);
            if (!near_rel(grad[j], numeric, 1e-5)) {
                fprintf(stderr, "  %s: d/d input %d [%lld]: autograd %.9g, numeric %.9g\n", g->name, i, (long long)j, grad[j], numeric);
                ok = 0;
            }
        }
    }
    dp_nd_release(h);
    for (i = 0; i < g->nin; i++) { dp_nd_release(in[i]); free(vals[i]); }
    return ok;
}
static void test_graph_gradients_fd(void) {
    static const double x_a[12] = {0.5, -1.2, 0.8, 1.5, 0.3, -0.7, -0.4, 0.9, 1.1, 0.2, -1.5, 0.6};
    static const double w1[15] = {0.3, -0.5, 0.8, 0.1, 0.7, -0.2, -0.6, 0.4, 0.5, 0.9, -0.3, 0.2, -0.1, 0.6, -0.8};
    static const double b1[5] = {0.1, -0.2, 0.05, 0.3, -0.15};
    static const double w2[15] = {0.5, -0.4, 0.3, 0.8, -0.6, -0.7, 0.2, 0.9, -0.1, 0.4, 0.25, 0.6, -0.5, 0.35, -0.3};
    static const double b2[3] = {0.2, -0.1, 0.05}, lab[4] = {0, 2, 1, 2};
    static const double xb[3] = {0.4, -0.9, 1.3}, zb[4] = {0.2, -0.5, 0.7, -1.1};
    static const double ac[6] = {0.3, -0.7, 1.1, 0.5, 0.2, -0.4}, bc[6] = {0.9, -0.3, 0.6, -1.2, 0.4, 0.8};
    static const double xd[6] = {0.55, 1.9, 0.35, 1.25, 0.8, 2.6}, yd[3] = {1.6, 0.7, 1.15};
    graph_spec specs[5];
    int k, i;
    memset(specs, 0, sizeof specs);
    specs[0].name = "mlp"; specs[0].fn = g_mlp; specs[0].nin = 6; specs[0].nmarked = 5;
    specs[0].shapes[0] = shp(2, 4, 3, 0); specs[0].shapes[1] = shp(2, 5, 3, 0); specs[0].shapes[2] = shp(1, 5, 0, 0);
    specs[0].shapes[3] = shp(2, 3, 5, 0); specs[0].shapes[4] = shp(1, 3, 0, 0); specs[0].shapes[5] = shp(1, 4, 0, 0);
    specs[0].init[0] = x_a; specs[0].init[1] = w1; specs[0].init[2] = b1; specs[0].init[3] = w2; specs[0].init[4] = b2; specs[0].init[5] = lab;
    for (i = 0; i < 6; i++) specs[0].dtypes[i] = DP_FLOAT64;
    specs[1] = specs[0]; specs[1].name = "mlp (int32 label)"; specs[1].dtypes[5] = DP_INT32;
    specs[2].name = "twice+broadcast"; specs[2].fn = g_twice; specs[2].nin = 2; specs[2].nmarked = 2;
    specs[2].shapes[0] = shp(2, 3, 1, 0); specs[2].shapes[1] = shp(2, 1, 4, 0); specs[2].init[0] = xb; specs[2].init[1] = zb;
    specs[3].name = "softmax/transpose/concat/reshape"; specs[3].fn = g_shapes; specs[3].nin = 2; specs[3].nmarked = 2;
    specs[3].shapes[0] = shp(2, 2, 3, 0); specs[3].shapes[1] = shp(2, 2, 3, 0); specs[3].init[0] = ac; specs[3].init[1] = bc;
    specs[4].name = "scalar ops"; specs[4].fn = g_scalars; specs[4].nin = 2; specs[4].nmarked = 2;
    specs[4].shapes[0] = shp(2, 2, 3, 0); specs[4].shapes[1] = shp(1, 3, 0, 0); specs[4].init[0] = xd; specs[4].init[1] = yd;
    for (i = 0; i < 2; i++) specs[2].dtypes[i] = specs[3].dtypes[i] = specs[4].dtypes[i] = DP_FLOAT64;   /* DP_FLOAT32 is 0 */
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        for (i = 0; i < 5; i++) {
            if (!check_graph(e, &specs[i])) { fprintf(stderr, "  (graph %s, engine %s)\n", specs[i].name, kind_names[k]); CHECK(0); }
        }
        CHECK(!dp_autograd_is_recording());
        destroy_engine(e);
    }
}

/* ---- 2. DP_REQ_ADD accumulates, DP_REQ_WRITE overwrites --------------------- */
static void test_grad_req_add(void) {
    static const double xv[6] = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5};
    dp_shape s = shp(2, 2, 3, 0);
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        dp_ndarray *x = arr64(e, s, xv), *y, *xx, *sn;
        double g[6];
        /* add: two backward passes give twice the gradient 2x */
        CHECK(dp_nd_attach_grad(x, DP_REQ_ADD) == DP_OK && dp_nd_grad(x) != NULL);
        CHECK(readd(dp_nd_grad(x), g, 6) && g[0] == 0 && g[5] == 0);          /* a zero gradient */
        CHECK(dp_autograd_begin() == DP_OK);
        xx = bin(e, "mul", x, x); y = un(e, "sum", xx);
        CHECK(dp_autograd_end() == DP_OK);
        dp_nd_release(xx);
        CHECK(dp_autograd_backward(y, NULL, 1) == DP_OK);
        CHECK(readd(dp_nd_grad(x), g, 6));
        for (i = 0; i < 6; i++) CHECK(near_rel(g[i], 2 * xv[i], 1e-12));
        CHECK(dp_autograd_backward(y, NULL, 0) == DP_OK);
        CHECK(readd(dp_nd_grad(x), g, 6));
        for (i = 0; i < 6; i++) CHECK(near_rel(g[i], 4 * xv[i], 1e-12));
        dp_nd_release(y);
        /* add across two graphs: sum(x*x) then sum(sin x) */
        CHECK(dp_autograd_begin() == DP_OK);
        sn = un(e, "sin", x); y = un(e, "sum", sn);
        CHECK(dp_autograd_end() == DP_OK);
        dp_nd_release(sn);
        CHECK(dp_autograd_backward(y, NULL, 0) == DP_OK);
        CHECK(readd(dp_nd_grad(x), g, 6));
        for (i = 0; i < 6; i++) CHECK(near_rel(g[i], 4 * xv[i] + cos(xv[i]), 1e-12));
        dp_nd_release(y);
        /* marking again starts over with a zero gradient */
        CHECK(dp_nd_attach_grad(x, DP_REQ_ADD) == DP_OK && readd(dp_nd_grad(x), g, 6) && g[0] == 0 && g[3] == 0);
        /* write: the same gradient after each pass */
        CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
        CHECK(dp_autograd_begin() == DP_OK);
        xx = bin(e, "mul", x, x); y = un(e, "sum", xx);
        CHECK(dp_autograd_end() == DP_OK);
        dp_nd_release(xx);
        CHECK(dp_autograd_backward(y, NULL, 1) == DP_OK && readd(dp_nd_grad(x), g, 6));
        for (i = 0; i < 6; i++) CHECK(near_rel(g[i], 2 * xv[i], 1e-12));
        CHECK(dp_autograd_backward(y, NULL, 0) == DP_OK && readd(dp_nd_grad(x), g, 6));
        for (i = 0; i < 6; i++) CHECK(near_rel(g[i], 2 * xv[i], 1e-12));
        dp_nd_release(y);
        /* DP_REQ_NULL removes the mark */
        CHECK(dp_nd_attach_grad(x, DP_REQ_NULL) == DP_OK && dp_nd_grad(x) == NULL);
        dp_nd_release(x);
        destroy_engine(e);
    }
}

/* ---- 3. an explicit head gradient ---------------------------------------------- */
static void test_head_grad(void) {
    static const double xv[6] = {0.1, -0.4, 0.7, 1.2, -1.0, 0.3}, hv[6] = {1, 2, -1, 0.5, 3, -2};
    dp_shape s = shp(2, 2, 3, 0), ws = shp(2, 3, 2, 0), sc = shp(0, 0, 0, 0), one = shp(1, 1, 0, 0);
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        dp_ndarray *x = arr64(e, s, xv), *hg = arr64(e, s, hv), *wrong = arr64(e, ws, hv), *y, *ex, *hs, *hs1, *hf;
        double g[6], two5 = 2.5;
        dp_engine_stats before, after;
        CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
        CHECK(dp_autograd_begin() == DP_OK);
        y = un(e, "exp", x);
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(dp_nd_wait_to_read(y, NULL) == DP_OK && dp_wait_all(e, NULL) == DP_OK);
        /* a head gradient of another shape: refused, nothing pushed, nothing changed */
        g_last_item = 0;
        dp_engine_stats_get(e, &before);
        CHECK(dp_autograd_backward(y, wrong, 1) == DP_ERROR_INVALID_ARGS);
        dp_engine_stats_get(e, &after);
        CHECK(after.pushed == before.pushed && g_last_item == DP_LOGITEM_ND_ARGS);
        CHECK(readd(dp_nd_grad(x), g, 6) && g[0] == 0 && g[4] == 0);
        {   /* another dtype (float32 for a float64 head): refused too */
            dp_ndarray *hg32 = arr(e, s, DP_FLOAT32, hv);
            CHECK(dp_autograd_backward(y, hg32, 1) == DP_ERROR_INVALID_ARGS && readd(dp_nd_grad(x), g, 6) && g[0] == 0);
            dp_nd_release(hg32);
        }
        /* the graph is still there: the right shape scales the gradient */
        CHECK(dp_autograd_backward(y, hg, 0) == DP_OK && readd(dp_nd_grad(x), g, 6));
        for (i = 0; i < 6; i++) CHECK(near_rel(g[i], hv[i] * exp(xv[i]), 1e-12));
        CHECK(readd(hg, g, 6));
        for (i = 0; i < 6; i++) CHECK(g[i] == hv[i]);      /* the caller's head gradient is not a scratch buffer */
        dp_nd_release(y);
        /* a scalar head: head_grad () of 2.5; (1,) is refused */
        CHECK(dp_autograd_begin() == DP_OK);
        ex = un(e, "exp", x); hs = un(e, "sum", ex);
        CHECK(dp_autograd_end() == DP_OK);
        dp_nd_release(ex);
        CHECK(hs && dp_nd_shape(hs)->ndim == 0);
        hs1 = arr64(e, one, &two5); hf = arr64(e, sc, &two5);
        CHECK(dp_autograd_backward(hs, hs1, 1) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_autograd_backward(hs, NULL, 1) == DP_OK && readd(dp_nd_grad(x), g, 6));
        for (i = 0; i < 6; i++) CHECK(near_rel(g[i], exp(xv[i]), 1e-12));
        CHECK(dp_autograd_backward(hs, hf, 0) == DP_OK && readd(dp_nd_grad(x), g, 6));
        for (i = 0; i < 6; i++) CHECK(near_rel(g[i], 2.5 * exp(xv[i]), 1e-12));
        dp_nd_release(hs); dp_nd_release(hs1); dp_nd_release(hf);
        dp_nd_release(x); dp_nd_release(hg); dp_nd_release(wrong);
        destroy_engine(e);
    }
}

/* ---- 4. misuse is an error, never a crash ------------------------------------- */
static void test_errors(void) {
    static const double xv[6] = {0.1, -0.4, 0.7, 1.2, -1.0, 0.3};
    dp_shape s = shp(2, 2, 3, 0);
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        dp_ndarray *x = arr64(e, s, xv), *w = arr64(e, s, xv), *plain = arr64(e, s, xv), *y, *h, *t;
        double g[6];
        CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK && dp_nd_attach_grad(w, DP_REQ_WRITE) == DP_OK);
        /* not produced while recording: a plain array, a marked leaf */
        g_last_item = 0;
        CHECK(dp_autograd_backward(plain, NULL, 0) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
        CHECK(dp_autograd_backward(NULL, NULL, 0) == DP_ERROR_INVALID_ARGS);
        {   /* the head a marked array itself: refused, or (as MXNet does) its gradient is the head gradient */
            dp_result r = dp_autograd_backward(x, NULL, 0);
            CHECK(r == DP_OK || r == DP_ERROR_INVALID_ARGS);
            CHECK(readd(dp_nd_grad(x), g, 6) && g[1] == (r == DP_OK ? 1 : 0) && g[4] == g[1]);
            CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);       /* a zero gradient again */
        }
        /* recorded, but no marked array reached */
        CHECK(dp_autograd_begin() == DP_OK);
        y = un(e, "exp", plain);
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(dp_autograd_backward(y, NULL, 0) == DP_ERROR_INVALID_ARGS);
        dp_nd_release(y);
        /* through argmax, which has no gradient */
        CHECK(dp_autograd_begin() == DP_OK);
        y = un_kw(e, "argmax", x, "axis", "1");
        CHECK(dp_autograd_end() == DP_OK);
        g_last_item = 0;
        CHECK(y && dp_autograd_backward(y, NULL, 0) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
        dp_nd_release(y);
        {   /* argmax inside a larger graph: sum(exp(x) * one_hot(argmax(x, 1), 3)) */
            const char *ok[2] = {"depth", "dtype"}, *ov[2] = {"3", "float64"};
            dp_ndarray *am, *oh, *ex, *p, *ps;
            CHECK(dp_autograd_begin() == DP_OK);
            am = un_kw(e, "argmax", x, "axis", "1");
            oh = inv(e, "one_hot", 1, &am, 2, ok, ov, 0);
            ex = un(e, "exp", x);
            p = bin(e, "mul", ex, oh);
            ps = un(e, "sum", p);
            CHECK(dp_autograd_end() == DP_OK);
            g_last_item = 0;
            CHECK(ps && dp_autograd_backward(ps, NULL, 0) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
            CHECK(readd(dp_nd_grad(x), g, 6) && g[0] == 0 && g[5] == 0);      /* nothing was pushed */
            dp_nd_release(am); dp_nd_release(oh); dp_nd_release(ex); dp_nd_release(p); dp_nd_release(ps);
        }
        /* a second backward without retain_graph */
        CHECK(dp_autograd_begin() == DP_OK);
        t = un(e, "exp", x); h = un(e, "sum", t);
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(dp_autograd_backward(h, NULL, 0) == DP_OK);
        g_last_item = 0;
        CHECK(dp_autograd_backward(h, NULL, 0) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
        CHECK(dp_autograd_backward(h, NULL, 1) == DP_ERROR_INVALID_ARGS);
        CHECK(readd(dp_nd_grad(x), g, 6) && near_rel(g[2], exp(xv[2]), 1e-12));     /* the first one's result stays */
        dp_nd_release(h); dp_nd_release(t);
        {   /* a graph sharing a node freed by an earlier backward */
            dp_ndarray *z, *h1, *sz, *h2;
            CHECK(dp_autograd_begin() == DP_OK);
            z = un(e, "sin", x); h1 = un(e, "sum", z); sz = un(e, "square", z); h2 = un(e, "sum", sz);
            CHECK(dp_autograd_end() == DP_OK);
            CHECK(dp_autograd_backward(h1, NULL, 0) == DP_OK);
            CHECK(dp_autograd_backward(h2, NULL, 0) == DP_ERROR_INVALID_ARGS);
            CHECK(readd(dp_nd_grad(x), g, 6) && near_rel(g[4], cos(xv[4]), 1e-12));
            dp_nd_release(z); dp_nd_release(h1); dp_nd_release(sz); dp_nd_release(h2);
        }
        /* end without begin */
        CHECK(!dp_autograd_is_recording());
        CHECK(dp_autograd_end() == DP_ERROR_INVALID_ARGS && !dp_autograd_is_recording());
        /* a saved input written before the backward */
        CHECK(dp_autograd_begin() == DP_OK);
        t = un(e, "sin", x); h = un(e, "sum", t);
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(dp_nd_write(x, xv, sizeof xv, NULL) == DP_OK);
        CHECK(dp_autograd_backward(h, NULL, 0) == DP_ERROR_INVALID_ARGS);
        dp_nd_release(h); dp_nd_release(t);
        {   /* a saved input overwritten as an invocation's output (outside recording) */
            dp_ndarray *out;
            CHECK(dp_autograd_begin() == DP_OK);
            t = un(e, "sin", x); h = un(e, "sum", t);
            CHECK(dp_autograd_end() == DP_OK);
            out = x;
            CHECK(invoke_str(e, "_copy", 1, &plain, 0, NULL, NULL, 0, 1, &out, NULL) == DP_OK);
            CHECK(dp_autograd_backward(h, NULL, 0) == DP_ERROR_INVALID_ARGS);
            dp_nd_release(h); dp_nd_release(t);
        }
        /* only float32 / float64 can be marked */
        {
            dp_ndarray *ia = arr(e, s, DP_INT32, xv);
            g_last_item = 0;
            CHECK(dp_nd_attach_grad(ia, DP_REQ_WRITE) == DP_ERROR_INVALID_ARGS && dp_nd_grad(ia) == NULL && g_last_item == DP_LOGITEM_ND_ARGS);
            CHECK(dp_nd_attach_grad(NULL, DP_REQ_WRITE) == DP_ERROR_INVALID_ARGS);
            CHECK(dp_nd_attach_grad(x, (dp_req)77) == DP_ERROR_INVALID_ARGS);
            dp_nd_release(ia);
        }
        /* recording an invocation whose given output is in a graph */
        {
            dp_ndarray *out = w, *rec;
            dp_engine_stats before, after;
            CHECK(dp_wait_all(e, NULL) == DP_OK);      /* ops release arrays (pushing frees) as they finish */
            CHECK(dp_autograd_begin() == DP_OK);
            dp_engine_stats_get(e, &before);
            g_last_item = 0;
            CHECK(invoke_str(e, "exp", 1, &x, 0, NULL, NULL, 0, 1, &out, NULL) == DP_ERROR_INVALID_ARGS && out == w);
            dp_engine_stats_get(e, &after);
            CHECK(after.pushed == before.pushed && g_last_item == DP_LOGITEM_ND_ARGS);
            rec = un(e, "exp", x);                     /* a recorded array as the output */
            out = rec;
            CHECK(invoke_str(e, "sin", 1, &x, 0, NULL, NULL, 0, 1, &out, NULL) == DP_ERROR_INVALID_ARGS);
            {   /* a recorded update whose mutated input (the momentum) is a marked array */
                const char *lk[1] = {"lr"}, *lv[1] = {"0.1"};
                dp_ndarray *upd[3];
                upd[0] = plain; upd[1] = rec; upd[2] = w;
                out = plain;
                CHECK(invoke_str(e, "sgd_mom_update", 3, upd, 1, lk, lv, 0, 1, &out, NULL) == DP_ERROR_INVALID_ARGS);
            }
            CHECK(dp_autograd_end() == DP_OK);
            CHECK(readd(plain, g, 6));
            for (i = 0; i < 6; i++) CHECK(g[i] == xv[i]);  /* plain untouched */
            CHECK(readd(w, g, 6));
            for (i = 0; i < 6; i++) CHECK(g[i] == xv[i]);  /* w untouched */
            dp_nd_release(rec);
        }
        dp_nd_release(x); dp_nd_release(w); dp_nd_release(plain);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        destroy_engine(e);
    }
}

/* ---- 5. only what runs while recording is recorded; recording nests --------- */
typedef struct { dp_engine *e; dp_ndarray *x; int recording; dp_result backward; } other_thread_arg;
static void *other_thread(void *arg) {
    other_thread_arg *ta = (other_thread_arg *)arg;
    dp_ndarray *y, *h;
    ta->recording = dp_autograd_is_recording();
    y = un(ta->e, "exp", ta->x); h = un(ta->e, "sum", y);
    ta->backward = dp_autograd_backward(h, NULL, 0);
    dp_nd_release(y); dp_nd_release(h);
    return NULL;
}
static void test_not_recorded_outside(void) {
    static const double xv[4] = {0.2, -0.6, 1.1, 0.4};
    dp_shape s = shp(1, 4, 0, 0);
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        dp_ndarray *x = arr64(e, s, xv), *y, *h, *z, *xd, *a, *b;
        double g[4];
        CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
        CHECK(!dp_autograd_is_recording());
        y = un(e, "exp", x); h = un(e, "sum", y);          /* outside: not recorded */
        CHECK(dp_autograd_backward(h, NULL, 0) == DP_ERROR_INVALID_ARGS && dp_autograd_backward(y, NULL, 0) == DP_ERROR_INVALID_ARGS);
        dp_nd_release(y); dp_nd_release(h);
        /* nesting: begin, begin, end still records */
        CHECK(dp_autograd_begin() == DP_OK && dp_autograd_begin() == DP_OK && dp_autograd_is_recording());
        CHECK(dp_autograd_end() == DP_OK && dp_autograd_is_recording());
        y = un(e, "exp", x);
        CHECK(dp_autograd_end() == DP_OK && !dp_autograd_is_recording());
        z = un(e, "sin", y);                                /* on a recorded array, outside: not recorded */
        h = un(e, "sum", z);
        CHECK(dp_autograd_backward(h, NULL, 1) == DP_ERROR_INVALID_ARGS && dp_autograd_backward(z, NULL, 1) == DP_ERROR_INVALID_ARGS);
        CHECK(readd(dp_nd_grad(x), g, 4) && g[0] == 0);
        CHECK(dp_autograd_backward(y, NULL, 0) == DP_OK && readd(dp_nd_grad(x), g, 4));
        for (i = 0; i < 4; i++) CHECK(near_rel(g[i], exp(xv[i]), 1e-12));
        dp_nd_release(y); dp_nd_release(z); dp_nd_release(h);
        /* detach: gradients stop there */
        CHECK(dp_nd_detach(x, &xd) == DP_OK && xd && dp_nd_grad(xd) == NULL);
        CHECK(dp_autograd_begin() == DP_OK);
        a = un(e, "exp", xd);
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(dp_autograd_backward(a, NULL, 0) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_autograd_begin() == DP_OK);
        b = un(e, "sin", x); z = bin(e, "mul", b, a); h = un(e, "sum", z);     /* sum(sin(x) * exp(detached x)) */
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(dp_autograd_backward(h, NULL, 0) == DP_OK && readd(dp_nd_grad(x), g, 4));
        for (i = 0; i < 4; i++) CHECK(near_rel(g[i], cos(xv[i]) * exp(xv[i]), 1e-12));
        dp_nd_release(a); dp_nd_release(b); dp_nd_release(z); dp_nd_release(h); dp_nd_release(xd);
        /* marking a recorded array cuts it from the graph that made it */
        CHECK(dp_autograd_begin() == DP_OK);
        y = un(e, "exp", x);
        CHECK(dp_nd_attach_grad(y, DP_REQ_WRITE) == DP_OK);
        z = un(e, "sin", y); h = un(e, "sum", z);
        CHECK(dp_autograd_end() == DP_OK);
        CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
        CHECK(dp_autograd_backward(h, NULL, 0) == DP_OK && readd(dp_nd_grad(y), g, 4));
        for (i = 0; i < 4; i++) CHECK(near_rel(g[i], cos(exp(xv[i])), 1e-12));
        CHECK(readd(dp_nd_grad(x), g, 4) && g[0] == 0 && g[3] == 0);          /* nothing flowed past y */
        dp_nd_release(y); dp_nd_release(z); dp_nd_release(h);
        {   /* recording is per thread */
            other_thread_arg ta;
            pthread_t th;
            ta.e = e; ta.x = x; ta.recording = -1; ta.backward = DP_OK;
            CHECK(dp_autograd_begin() == DP_OK);
            CHECK(pthread_create(&th, NULL, other_thread, &ta) == 0 && pthread_join(th, NULL) == 0);
            CHECK(dp_autograd_end() == DP_OK);
            CHECK(ta.recording == 0 && ta.backward == DP_ERROR_INVALID_ARGS);
        }
        dp_nd_release(x);
        destroy_engine(e);
    }
}

/* ---- 6. graphs give their memory back --------------------------------------------- */
static uint64_t in_use(dp_engine *e) {
    dp_storage_stats st;
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(dp_storage_stats_get(e, CPU0, &st) == DP_OK);
    return st.bytes_in_use;
}
static void test_memory_released(void) {
    enum { N = 1000 };
    static double xv[N], g[N];
    dp_shape s = shp(1, N, 0, 0);
    int k, i, retain;
    for (i = 0; i < N; i++) xv[i] = sin(0.37 * i);
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        uint64_t base = in_use(e), with_x, after[2], recorded[2];
        for (retain = 0; retain < 2; retain++) {
            dp_ndarray *x = arr64(e, s, xv), *a, *b, *c, *h;
            CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
            with_x = in_use(e);
            CHECK(with_x >= base + 2 * N * sizeof(double));
            CHECK(dp_autograd_begin() == DP_OK);
            a = un(e, "exp", x); b = un(e, "tanh", a); c = un(e, "sin", b); h = un(e, "sum", c);
            CHECK(dp_autograd_end() == DP_OK);
            dp_nd_release(a); dp_nd_release(b); dp_nd_release(c);
            recorded[retain] = in_use(e);
            /* the saved b (tanh's gradient reads its output, sin's its input)
               and c (sum's); a died with tanh's gradient reading b */
            CHECK(recorded[retain] >= with_x + 2 * N * sizeof(double) && recorded[retain] < with_x + 3 * N * sizeof(double));
            CHECK(dp_autograd_backward(h, NULL, retain) == DP_OK);
            CHECK(readd(dp_nd_grad(x), g, N));
            CHECK(near_rel(g[7], (1 - tanh(exp(xv[7])) * tanh(exp(xv[7]))) * cos(tanh(exp(xv[7]))) * exp(xv[7]), 1e-12));
            after[retain] = in_use(e);
            if (retain == 0) {
                /* every saved array went: x, its gradient and the scalar head remain */
                if (after[0] > with_x + 64) { fprintf(stderr, "  %s: %llu bytes still in use after backward (x + grad + head: %llu)\n", kind_names[k], (unsigned long long)after[0], (unsigned long long)(with_x + 64)); CHECK(0); }
            }
            dp_nd_release(h);
            CHECK(in_use(e) == with_x);              /* the graph is gone with its head */
            dp_nd_release(x);
            CHECK(in_use(e) == base);
        }
        CHECK(after[0] < after[1]);
        CHECK(after[1] >= after[0] + 2 * N * sizeof(double));
        destroy_engine(e);
    }
}

/* ---- 7. unary gradients run in place on their output gradient ------------------ */
static void test_inplace_backward(void) {
    static const double xv[6] = {-0.9, -0.3, 0.1, 0.4, 0.8, 1.2};
    dp_shape s = shp(2, 2, 3, 0);
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_PLAIN);
        dp_ndarray *x = arr64(e, s, xv), *a, *b, *c, *h;
        dp_storage_stats st0, st1;
        uint64_t count;
        double g[6];
        CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
        CHECK(dp_autograd_begin() == DP_OK);
        a = un(e, "exp", x); b = un(e, "sin", a); c = un(e, "tanh", b); h = un(e, "sum", c);
        CHECK(dp_autograd_end() == DP_OK);
        dp_nd_release(a); dp_nd_release(b); dp_nd_release(c);
        CHECK(dp_wait_all(e, NULL) == DP_OK && dp_storage_stats_get(e, CPU0, &st0) == DP_OK);
        CHECK(dp_autograd_backward(h, NULL, 0) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK && dp_storage_stats_get(e, CPU0, &st1) == DP_OK);
        count = (st1.allocations + st1.pool_hits) - (st0.allocations + st0.pool_hits);
        if (!(count >= 1 && count < 4)) { fprintf(stderr, "  %s: %llu chunks acquired during backward (want 2, < 4)\n", kind_names[k], (unsigned long long)count); CHECK(0); }
        CHECK(readd(dp_nd_grad(x), g, 6));
        for (i = 0; i < 6; i++) {
            double ex = exp(xv[i]), th = tanh(sin(ex));
            CHECK(near_rel(g[i], (1 - th * th) * cos(ex) * ex, 1e-12));
        }
        dp_nd_release(h); dp_nd_release(x);
        destroy_engine(e);
    }
}

/* ---- 8. optimizer updates ---------------------------------------------------------- */
static double clipd(double g, double c) { return c > 0 ? (g > c ? c : g < -c ? -c : g) : g; }
static int update(dp_engine *e, const char *name, dp_ndarray *w, dp_ndarray *g, dp_ndarray *s1, dp_ndarray *s2,
                  int nkw, const char *const *keys, const char *const *vals) {
    dp_ndarray *in[4], *out = w;
    int nin = 2;
    in[0] = w; in[1] = g;
    if (s1) in[nin++] = s1;
    if (s2) in[nin++] = s2;
    return invoke_str(e, name, nin, in, nkw, keys, vals, 0, 1, &out, NULL) == DP_OK && out == w;
}
static int all_near(dp_ndarray *a, const double *want, int n, double tol) {
    double got[16];
    int i, ok = readd(a, got, n);
    for (i = 0; ok && i < n; i++) if (!near_rel(got[i], want[i], tol)) { fprintf(stderr, "  [%d]: got %.9g, want %.9g\n", i, got[i], want[i]); ok = 0; }
    return ok;
}
static void test_optimizers(void) {
    enum { N = 6 };
    static const double w0[N] = {1.0, -2.0, 0.5, 3.0, 0.0, -1.5}, g0[N] = {0.5, -4.0, 10.0, -0.2, 3.0, 0.1};
    static const double g1[N] = {-0.3, 1.0, -6.0, 0.4, 0.05, -2.5};
    dp_shape s = shp(1, N, 0, 0);
    int k, i, t;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        double rw[N], rm[N], rv[N];
        {   /* sgd: lr 0.1, wd 0.01, rescale 0.5, clip 1 */
            const char *keys[4] = {"lr", "wd", "rescale_grad", "clip_gradient"}, *vals[4] = {"0.1", "0.01", "0.5", "1.0"};
            dp_ndarray *w = arr(e, s, DP_FLOAT32, w0), *g = arr(e, s, DP_FLOAT32, g0), *view;
            dp_shape s23 = shp(2, 2, 3, 0);
            void *p0 = dp_nd_data(w);
            CHECK(dp_nd_reshape(w, &s23, &view) == DP_OK);
            CHECK(update(e, "sgd_update", w, g, NULL, NULL, 4, keys, vals));
            for (i = 0; i < N; i++) rw[i] = w0[i] - 0.1 * (clipd(0.5 * g0[i], 1.0) + 0.01 * w0[i]);
            CHECK(all_near(w, rw, N, 1e-6) && dp_nd_data(w) == p0);
            CHECK(all_near(view, rw, N, 1e-6));                       /* the storage itself changed */
            CHECK(!update(e, "sgd_update", w, g, NULL, NULL, 0, NULL, NULL));     /* lr is required */
            {   /* no output given: a new array, the weight as it was */
                dp_ndarray *in2[2], *fresh = NULL;
                double r2[N];
                in2[0] = w; in2[1] = g;
                CHECK(invoke_str(e, "sgd_update", 2, in2, 4, keys, vals, 0, 1, &fresh, NULL) == DP_OK && fresh && fresh != w);
                for (i = 0; i < N; i++) r2[i] = rw[i] - 0.1 * (clipd(0.5 * g0[i], 1.0) + 0.01 * rw[i]);
                CHECK(all_near(fresh, r2, N, 1e-6) && all_near(w, rw, N, 1e-6));
                dp_nd_release(fresh);
            }
            dp_nd_release(w); dp_nd_release(g); dp_nd_release(view);
        }
        {   /* sgd with momentum 0.9, two steps */
            const char *keys[5] = {"lr", "wd", "rescale_grad", "clip_gradient", "momentum"}, *vals[5] = {"0.1", "0.01", "0.5", "1.0", "0.9"};
            dp_ndarray *w = arr(e, s, DP_FLOAT32, w0), *g = arr(e, s, DP_FLOAT32, g0), *g2 = arr(e, s, DP_FLOAT32, g1), *mom, *m1 = NULL;
            void *p0 = dp_nd_data(w);
            CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &mom) == DP_OK);
            for (i = 0; i < N; i++) { rw[i] = w0[i]; rm[i] = 0; }
            for (t = 0; t < 2; t++) {
                const double *gg = t ? g1 : g0;
                if (t == 1) m1 = un(e, "_copy", mom);                 /* a read pushed before the update */
                CHECK(update(e, "sgd_mom_update", w, t ? g2 : g, mom, NULL, 5, keys, vals));
                for (i = 0; i < N; i++) { rm[i] = 0.9 * rm[i] - 0.1 * (clipd(0.5 * gg[i], 1.0) + 0.01 * rw[i]); rw[i] += rm[i]; }
                if (t == 0) { CHECK(all_near(mom, rm, N, 1e-6)); memcpy(rv, rm, sizeof rm); }
            }
            CHECK(all_near(w, rw, N, 1e-6) && all_near(mom, rm, N, 1e-6) && dp_nd_data(w) == p0);
            CHECK(all_near(m1, rv, N, 1e-6));                         /* saw the momentum of step 1 */
            dp_nd_release(w); dp_nd_release(g); dp_nd_release(g2); dp_nd_release(mom); dp_nd_release(m1);
        }
        {   /* adam, two steps, (a) wd 0.01 and rescale 0.5, (b) clip 1 and rescale 2, (c) all three:
               as documented (MXNet's order): rescale_grad * grad + wd * weight, then the clip */
            int cfg;
            for (cfg = 0; cfg < 3; cfg++) {
                const char *keys[7] = {"lr", "beta1", "beta2", "epsilon", "rescale_grad", "wd", "clip_gradient"};
                const char *vals[7] = {NULL, "0.9", "0.999", "1e-8", NULL, NULL, NULL};
                double rescale = cfg ? 2.0 : 0.5, wd = cfg == 1 ? 0 : 0.01, clip = cfg ? 1.0 : 0;
                dp_ndarray *w = arr(e, s, DP_FLOAT32, w0), *g = arr(e, s, DP_FLOAT32, g0), *g2 = arr(e, s, DP_FLOAT32, g1), *mean, *var;
                char lr[2][64];
                int nkw = cfg ? 7 : 6;
                vals[4] = cfg ? "2.0" : "0.5"; vals[5] = cfg == 1 ? "0" : "0.01"; vals[6] = "1.0";
                CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &mean) == DP_OK && dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &var) == DP_OK);
                for (i = 0; i < N; i++) { rw[i] = w0[i]; rm[i] = 0; rv[i] = 0; }
                for (t = 1; t <= 2; t++) {
                    const double *gg = t == 2 ? g1 : g0;
                    double lrt = 0.05 * sqrt(1 - pow(0.999, t)) / (1 - pow(0.9, t));
                    snprintf(lr[t - 1], sizeof lr[0], "%.17g", lrt);
                    vals[0] = lr[t - 1];
                    CHECK(update(e, "adam_update", w, t == 2 ? g2 : g, mean, var, nkw, keys, vals));
                    for (i = 0; i < N; i++) {
                        double gr = clipd(rescale * gg[i] + wd * rw[i], clip);
                        rm[i] = 0.9 * rm[i] + 0.1 * gr;
                        rv[i] = 0.999 * rv[i] + 0.001 * gr * gr;
                        rw[i] -= lrt * rm[i] / (sqrt(rv[i]) + 1e-8);
                    }
                }
                if (!(all_near(w, rw, N, 1e-5) && all_near(mean, rm, N, 1e-5) && all_near(var, rv, N, 1e-5))) {
                    fprintf(stderr, "  adam config %d (%s)\n", cfg, kind_names[k]);
                    CHECK(0);
                }
                dp_nd_release(w); dp_nd_release(g); dp_nd_release(g2); dp_nd_release(mean); dp_nd_release(var);
            }
        }
        {   /* engine ordering: a read pushed before the update sees the old weight */
            enum { M = 1 << 18 };
            static float wv[M], got[M];
            const char *keys[1] = {"lr"}, *vals[1] = {"0.5"};
            dp_shape sm = shp(1, M, 0, 0);
            dp_ndarray *w, *g, *r1, *r2;
            int bad = 0;
            for (i = 0; i < M; i++) wv[i] = (float)((i % 97) * 0.01);
            CHECK(dp_nd_from_host(e, &sm, DP_FLOAT32, CPU0, wv, &w) == DP_OK);
            CHECK(dp_nd_ones(e, &sm, DP_FLOAT32, CPU0, &g) == DP_OK);
            r1 = un(e, "exp", w);
            CHECK(update(e, "sgd_update", w, g, NULL, NULL, 1, keys, vals));  /* w -= 0.5 */
            r2 = un(e, "exp", w);
            CHECK(r1 && dp_nd_read(r1, got, sizeof got, NULL) == DP_OK);
            for (i = 0; i < M && !bad; i++) bad = fabsf(got[i] - expf(wv[i])) > 1e-5f * expf(wv[i]);
            CHECK(!bad);
            CHECK(r2 && dp_nd_read(r2, got, sizeof got, NULL) == DP_OK);
            for (i = 0; i < M && !bad; i++) bad = fabsf(got[i] - expf(wv[i] - 0.5f)) > 1e-5f * expf(wv[i]);
            CHECK(!bad);
            dp_nd_release(w); dp_nd_release(g); dp_nd_release(r1); dp_nd_release(r2);
        }
        destroy_engine(e);
    }
}

/* ---- 9. training is bitwise the same on every engine kind ------------------------ */
enum { TB = 8, TIN = 4, THID = 6, TOUT = 3, TSTEPS = 4 };
static void train(dp_engine *e, float *params, double *losses) {
    static const double lab[TB] = {0, 1, 2, 0, 1, 2, 1, 0};
    const char *nh[1] = {"num_hidden"}, *vh[1] = {"6"}, *vo[1] = {"3"};
    const char *uk[2] = {"lr", "rescale_grad"}, *uv[2] = {"0.5", "0.125"};
    dp_shape sx = shp(2, TB, TIN, 0), s1 = shp(2, THID, TIN, 0), sb1 = shp(1, THID, 0, 0), s2 = shp(2, TOUT, THID, 0), sb2 = shp(1, TOUT, 0, 0);
    dp_ndarray *x, *p[4], *label = NULL;
    int step, i;
    float *out = params;
    CHECK(dp_random_seed(e, CPU0, 1234) == DP_OK);
    CHECK(dp_nd_random_normal(e, 0, 1, &sx, DP_FLOAT32, CPU0, &x) == DP_OK);
    CHECK(dp_nd_random_normal(e, 0, 0.5, &s1, DP_FLOAT32, CPU0, &p[0]) == DP_OK);
    CHECK(dp_nd_random_normal(e, 0, 0.1, &sb1, DP_FLOAT32, CPU0, &p[1]) == DP_OK);
    CHECK(dp_nd_random_normal(e, 0, 0.5, &s2, DP_FLOAT32, CPU0, &p[2]) == DP_OK);
    CHECK(dp_nd_zeros(e, &sb2, DP_FLOAT32, CPU0, &p[3]) == DP_OK);
    label = arr(e, shp(1, TB, 0, 0), DP_INT32, lab);
    for (i = 0; i < 4; i++) CHECK(dp_nd_attach_grad(p[i], DP_REQ_WRITE) == DP_OK);
    for (step = 0; step < TSTEPS; step++) {
        dp_ndarray *fc[3], *h1, *a1, *h2, *sce[2], *loss;
        CHECK(dp_autograd_begin() == DP_OK);
        fc[0] = x; fc[1] = p[0]; fc[2] = p[1];
        h1 = inv(e, "FullyConnected", 3, fc, 1, nh, vh, 0);
        a1 = un(e, "relu", h1);
        fc[0] = a1; fc[1] = p[2]; fc[2] = p[3];
        h2 = inv(e, "FullyConnected", 3, fc, 1, nh, vo, 0);
        sce[0] = h2; sce[1] = label;
        loss = inv(e, "softmax_cross_entropy", 2, sce, 0, NULL, NULL, 0);
        CHECK(dp_autograd_end() == DP_OK);
        dp_nd_release(h1); dp_nd_release(a1); dp_nd_release(h2);
        CHECK(loss && dp_autograd_backward(loss, NULL, 0) == DP_OK);
        CHECK(readd(loss, &losses[step], 1));
        for (i = 0; i < 4; i++) CHECK(update(e, "sgd_update", p[i], dp_nd_grad(p[i]), NULL, NULL, 2, uk, uv));
        dp_nd_release(loss);
    }
    for (i = 0; i < 4; i++) {
        CHECK(dp_nd_read(p[i], out, dp_nd_bytes(p[i]), NULL) == DP_OK);
        out += dp_nd_bytes(p[i]) / sizeof(float);
        dp_nd_release(p[i]);
    }
    dp_nd_release(x); dp_nd_release(label);
}
static void test_bitwise_same_engines(void) {
    enum { NP = THID * TIN + THID + TOUT * THID + TOUT };
    static float params[3][NP], init[NP];
    double losses[3][TSTEPS];
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        train(e, params[k], losses[k]);
        destroy_engine(e);
    }
    {   /* the initial weights (same seed, no steps) differ from the trained ones */
        dp_engine *e = make_engine(DP_ENGINE_NAIVE, DP_STORAGE_DEFAULT);
        dp_shape sx = shp(2, TB, TIN, 0), s1 = shp(2, THID, TIN, 0);
        dp_ndarray *x = NULL, *w1 = NULL;
        CHECK(dp_random_seed(e, CPU0, 1234) == DP_OK);
        CHECK(dp_nd_random_normal(e, 0, 1, &sx, DP_FLOAT32, CPU0, &x) == DP_OK && dp_nd_random_normal(e, 0, 0.5, &s1, DP_FLOAT32, CPU0, &w1) == DP_OK);
        CHECK(dp_nd_read(w1, init, sizeof(float) * THID * TIN, NULL) == DP_OK);
        CHECK(memcmp(init, params[0], sizeof(float) * THID * TIN) != 0);
        dp_nd_release(x); dp_nd_release(w1);
        destroy_engine(e);
    }
    CHECK(losses[0][TSTEPS - 1] < losses[0][0]);      /* it learns */
    CHECK(memcmp(params[0], params[1], sizeof params[0]) == 0);
    CHECK(memcmp(params[0], params[2], sizeof params[0]) == 0);
    CHECK(memcmp(losses[0], losses[1], sizeof losses[0]) == 0 && memcmp(losses[0], losses[2], sizeof losses[0]) == 0);
}

/* ---- 10. CSV files ---------------------------------------------------------------- */
static const char *tmp_path(const char *leaf, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/depeng_autograd_%d_%s", test_temp_dir(), (int)getpid(), leaf);
    return buf;
}
static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) { fputs(text, f); fclose(f); }
}
static int shape_is(dp_ndarray *a, int ndim, int64_t d0, int64_t d1) {
    const dp_shape *s = a ? dp_nd_shape(a) : NULL;
    return s && s->ndim == ndim && s->dims[0] == d0 && (ndim < 2 || s->dims[1] == d1) && dp_nd_dtype(a) == DP_FLOAT32;
}
static void test_csv(void) {
    static const double rows[3][4] = {{1, 2, 3, 0}, {4.5, -5, 60, 1}, {7, 8, 9, 2}};
    char p[160], bad[160];
    int k, i, j;
    tmp_path("t.csv", p, sizeof p);
    tmp_path("bad.csv", bad, sizeof bad);
    write_text(p, "a,b,c,label\n1,2,3,0\n\n4.5,-5,6e1,1\n7,8,9,2");       /* header, blank line, no final newline */
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        dp_ndarray *d = NULL, *l = NULL;
        double v[12], lv[3];
        CHECK(dp_nd_load_csv(e, p, -1, CPU0, NULL, &d, &l) == DP_OK && shape_is(d, 2, 3, 3) && shape_is(l, 1, 3, 0));
        CHECK(readd(d, v, 9) && readd(l, lv, 3));
        for (i = 0; i < 3; i++) {
            for (j = 0; j < 3; j++) CHECK(v[i * 3 + j] == rows[i][j]);
            CHECK(lv[i] == rows[i][3]);
        }
        dp_nd_release(d); dp_nd_release(l); d = l = NULL;
        CHECK(dp_nd_load_csv(e, p, 0, CPU0, NULL, &d, &l) == DP_OK && shape_is(d, 2, 3, 3) && shape_is(l, 1, 3, 0));
        CHECK(readd(d, v, 9) && readd(l, lv, 3));
        for (i = 0; i < 3; i++) {
            for (j = 0; j < 3; j++) CHECK(v[i * 3 + j] == rows[i][j + 1]);
            CHECK(lv[i] == rows[i][0]);
        }
        dp_nd_release(d); dp_nd_release(l); d = l = NULL;
        CHECK(dp_nd_load_csv(e, p, 1, CPU0, NULL, &d, &l) == DP_OK && readd(d, v, 9) && readd(l, lv, 3));   /* a middle column */
        CHECK(v[3] == 4.5 && v[4] == 60 && v[5] == 1 && lv[1] == -5);
        dp_nd_release(d); dp_nd_release(l); d = l = NULL;
        CHECK(dp_nd_load_csv(e, p, -3, CPU0, NULL, &d, &l) == DP_OK && readd(l, lv, 3) && lv[1] == -5);     /* -3 of 4 columns: 1 */
        dp_nd_release(d); dp_nd_release(l); d = l = NULL;
        CHECK(dp_nd_load_csv(e, p, DP_CSV_NO_LABEL, CPU0, NULL, &d, NULL) == DP_OK && shape_is(d, 2, 3, 4) && readd(d, v, 12));
        for (i = 0; i < 12; i++) CHECK(v[i] == rows[i / 4][i % 4]);
        dp_nd_release(d); d = NULL;
        CHECK(dp_nd_load_csv(e, p, DP_CSV_NO_LABEL, CPU0, NULL, &d, &l) == DP_OK && shape_is(d, 2, 3, 4) && l == NULL);
        dp_nd_release(d); d = NULL;
        /* no header: the first line is data */
        write_text(bad, "0.5,1\n-2,3\n");
        CHECK(dp_nd_load_csv(e, bad, -1, CPU0, NULL, &d, &l) == DP_OK && shape_is(d, 2, 2, 1) && readd(d, v, 2) && readd(l, lv, 2));
        CHECK(v[0] == 0.5 && v[1] == -2 && lv[0] == 1 && lv[1] == 3);
        dp_nd_release(d); dp_nd_release(l); d = l = NULL;
        /* CRLF line ends */
        write_text(bad, "x,y\r\n0.5,1\r\n-2,3\r\n");
        CHECK(dp_nd_load_csv(e, bad, -1, CPU0, NULL, &d, &l) == DP_OK && shape_is(d, 2, 2, 1) && readd(d, v, 2) && readd(l, lv, 2));
        CHECK(v[0] == 0.5 && v[1] == -2 && lv[0] == 1 && lv[1] == 3);
        dp_nd_release(d); dp_nd_release(l); d = l = NULL;
        /* malformed files */
        write_text(bad, "a,b,c\n1,2,3\n4,5\n7,8,9\n");
        g_last_item = 0;
        CHECK(dp_nd_load_csv(e, bad, -1, CPU0, NULL, &d, &l) == DP_ERROR_FORMAT && d == NULL && l == NULL && g_last_item == DP_LOGITEM_FORMAT);
        write_text(bad, "1,2,3\n4,abc,6\n");
        g_last_item = 0;
        CHECK(dp_nd_load_csv(e, bad, -1, CPU0, NULL, &d, &l) == DP_ERROR_FORMAT && d == NULL && g_last_item == DP_LOGITEM_FORMAT);
        write_text(bad, "1,2,3\n4,5x,6\n");
        CHECK(dp_nd_load_csv(e, bad, -1, CPU0, NULL, &d, &l) == DP_ERROR_FORMAT && d == NULL);
        write_text(bad, "1,2,3\n4,,6\n");
        CHECK(dp_nd_load_csv(e, bad, -1, CPU0, NULL, &d, &l) == DP_ERROR_FORMAT && d == NULL);
        write_text(bad, "1,2,3\n4,5,6,7\n");
        CHECK(dp_nd_load_csv(e, bad, -1, CPU0, NULL, &d, &l) == DP_ERROR_FORMAT && d == NULL);
        CHECK(dp_nd_load_csv(e, p, 4, CPU0, NULL, &d, &l) != DP_OK && d == NULL);       /* no column 4 */
        CHECK(dp_nd_load_csv(e, p, -5, CPU0, NULL, &d, &l) != DP_OK && d == NULL);
        g_last_item = 0;
        CHECK(dp_nd_load_csv(e, "/nonexistent/dir/x.csv", -1, CPU0, NULL, &d, &l) == DP_ERROR_IO && d == NULL && g_last_item == DP_LOGITEM_IO);
        CHECK(dp_nd_load_csv(e, p, -1, CPU0, NULL, NULL, &l) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_nd_load_csv(e, p, -1, CPU0, NULL, &d, NULL) == DP_ERROR_INVALID_ARGS && d == NULL);   /* a label column needs a place */
        if (k == 2) {   /* the digits data, when the repository has it */
            const char *path = getenv("DEPENG_TEST_DIGITS") ? getenv("DEPENG_TEST_DIGITS") : "data/digits.csv";
            FILE *f = fopen(path, "rb");
            if (f) {
                static double dv[1797 * 64], dl[1797];
                int count[10] = {0}, okl = 1;
                fclose(f);
                CHECK(dp_nd_load_csv(e, path, -1, CPU0, NULL, &d, &l) == DP_OK && shape_is(d, 2, 1797, 64) && shape_is(l, 1, 1797, 0));
                CHECK(readd(d, dv, 1797 * 64) && readd(l, dl, 1797));
                for (i = 0; i < 1797; i++) {
                    if (dl[i] < 0 || dl[i] > 9 || dl[i] != floor(dl[i])) okl = 0;
                    else count[(int)dl[i]]++;
                }
                CHECK(okl);
                for (i = 0; i < 10; i++) CHECK(count[i] > 150);
                for (i = 0, okl = 1; i < 1797 * 64; i++) if (dv[i] < 0 || dv[i] > 16) okl = 0;
                CHECK(okl && dv[2] == 5 && dv[3] == 13 && dl[0] == 0 && dl[1] == 1);
                dp_nd_release(d); dp_nd_release(l); d = l = NULL;
            } else printf("  (digits: %s not found, skipped)\n", path);
        }
        destroy_engine(e);
    }
    remove(p); remove(bad);
}

/* ---- 11. the mini-batch iterator -------------------------------------------------- */
enum { IN_ROWS = 10, IN_COLS = 3 };
static void make_rows(dp_engine *e, int nrows, dp_ndarray **data, dp_ndarray **label) {
    double d[IN_ROWS * IN_COLS], l[IN_ROWS];
    int i;
    for (i = 0; i < nrows; i++) { d[i * 3] = i; d[i * 3 + 1] = 100 + i; d[i * 3 + 2] = 200 + i; l[i] = i; }
    *data = arr(e, shp(2, IN_ROWS, IN_COLS, 0), DP_FLOAT32, d);
    *label = arr(e, shp(1, nrows, 0, 0), DP_FLOAT32, l);
}
/* one epoch: the labels in order into order[], each batch's rows checked
   against its labels; the batches are kept and checked after the epoch */
static int run_epoch(dp_iter *it, int *order, int *sizes, int max_batches) {
    dp_ndarray *ds[16], *ls[16];
    int nb = 0, n = 0, b, i;
    for (;;) {
        dp_ndarray *d = (dp_ndarray *)&nb, *l = (dp_ndarray *)&nb;
        dp_result r = dp_iter_next(it, &d, &l);
        if (r != DP_OK || d == (dp_ndarray *)&nb) { CHECK(0); break; }
        if (!d) { CHECK(l == NULL); break; }
        if (nb == max_batches || nb == 16) { CHECK(0); dp_nd_release(d); dp_nd_release(l); break; }
        ds[nb] = d; ls[nb] = l; nb++;
    }
    {   /* after the end: still the end */
        dp_ndarray *d = (dp_ndarray *)&nb, *l = (dp_ndarray *)&nb;
        CHECK(dp_iter_next(it, &d, &l) == DP_OK && d == NULL && l == NULL);
    }
    for (b = 0; b < nb; b++) {
        double dv[IN_ROWS * IN_COLS], lv[IN_ROWS];
        int64_t rows = dp_nd_shape(ds[b])->dims[0];
        CHECK(dp_nd_shape(ds[b])->ndim == 2 && dp_nd_shape(ds[b])->dims[1] == IN_COLS && dp_nd_shape(ls[b])->ndim == 1 && dp_nd_shape(ls[b])->dims[0] == rows);
        CHECK(rows <= IN_ROWS && readd(ds[b], dv, rows * IN_COLS) && readd(ls[b], lv, rows));
        sizes[b] = (int)rows;
        for (i = 0; i < rows && n < IN_ROWS; i++) {
            order[n++] = (int)lv[i];
            CHECK(dv[i * 3] == lv[i] && dv[i * 3 + 1] == 100 + lv[i] && dv[i * 3 + 2] == 200 + lv[i]);
        }
        dp_nd_release(ds[b]); dp_nd_release(ls[b]);
    }
    return nb;
}
static int is_permutation(const int *order, int n) {
    int seen[IN_ROWS] = {0}, i;
    for (i = 0; i < n; i++) { if (order[i] < 0 || order[i] >= n || seen[order[i]]) return 0; seen[order[i]] = 1; }
    return 1;
}
static void shuffled_epochs(dp_engine *e, uint64_t seed, int *o1, int *o2) {
    dp_ndarray *data, *label;
    dp_iter_desc d;
    dp_iter *it = NULL;
    int sizes[16];
    make_rows(e, IN_ROWS, &data, &label);
    CHECK(dp_random_seed(e, CPU0, seed) == DP_OK);
    memset(&d, 0, sizeof d);
    d.data = data; d.label = label; d.batch_size = 3; d.shuffle = 1;
    CHECK(dp_iter_create(&d, &it) == DP_OK && it);
    if (it) {
        CHECK(dp_iter_num_batches(it) == 4);
        CHECK(run_epoch(it, o1, sizes, 4) == 4 && sizes[3] == 1);
        CHECK(dp_iter_reset(it) == DP_OK);
        CHECK(run_epoch(it, o2, sizes, 4) == 4);
        dp_iter_destroy(it);
    }
    dp_nd_release(data); dp_nd_release(label);
}
static void test_iterator(void) {
    static const double zeros[IN_ROWS] = {0};
    int first[3][IN_ROWS], second[3][IN_ROWS];
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
        dp_ndarray *data, *label, *short_label, *d, *l;
        dp_iter_desc desc;
        dp_iter *it = NULL;
        int order[IN_ROWS], sizes[16];
        make_rows(e, IN_ROWS, &data, &label);
        /* in order, 4 + 4 + 2 */
        memset(&desc, 0, sizeof desc);
        desc.data = data; desc.label = label; desc.batch_size = 4;
        CHECK(dp_iter_create(&desc, &it) == DP_OK && it && dp_iter_num_batches(it) == 3);
        if (it) {
            for (i = 0; i < 2; i++) {                          /* and again after a reset */
                memset(order, -1, sizeof order);
                CHECK(run_epoch(it, order, sizes, 3) == 3 && sizes[0] == 4 && sizes[1] == 4 && sizes[2] == 2);
                { int j; for (j = 0; j < IN_ROWS; j++) CHECK(order[j] == j); }
                CHECK(dp_iter_reset(it) == DP_OK);
            }
            dp_iter_destroy(it); it = NULL;
        }
        /* drop_last: 4 + 4 */
        desc.drop_last = 1;
        CHECK(dp_iter_create(&desc, &it) == DP_OK && it && dp_iter_num_batches(it) == 2);
        if (it) { CHECK(run_epoch(it, order, sizes, 2) == 2 && order[7] == 7); dp_iter_destroy(it); it = NULL; }
        /* a batch larger than the data: one short batch, or none with drop_last */
        desc.batch_size = 16; desc.drop_last = 0;
        CHECK(dp_iter_create(&desc, &it) == DP_OK && it && dp_iter_num_batches(it) == 1);
        if (it) { CHECK(run_epoch(it, order, sizes, 1) == 1 && sizes[0] == IN_ROWS); dp_iter_destroy(it); it = NULL; }
        desc.drop_last = 1;
        CHECK(dp_iter_create(&desc, &it) == DP_OK && it && dp_iter_num_batches(it) == 0);
        if (it) { CHECK(run_epoch(it, order, sizes, 0) == 0); dp_iter_destroy(it); it = NULL; }
        /* without labels */
        desc.batch_size = 5; desc.drop_last = 0; desc.label = NULL;
        CHECK(dp_iter_create(&desc, &it) == DP_OK && it && dp_iter_num_batches(it) == 2);
        if (it) {
            double dv[15];
            d = NULL; l = (dp_ndarray *)&desc;
            CHECK(dp_iter_next(it, &d, &l) == DP_OK && d && l == NULL && readd(d, dv, 15) && dv[3] == 1 && dv[14] == 204);
            dp_nd_release(d);
            dp_iter_destroy(it); it = NULL;                  /* destroyed mid-epoch */
        }
        {   /* rows of more than one axis: (10, 2, 2) in batches of 4 */
            double v3[40], got[16];
            dp_ndarray *d3;
            for (i = 0; i < 40; i++) v3[i] = i;
            d3 = arr(e, shp(3, IN_ROWS, 2, 2), DP_FLOAT64, v3);
            desc.data = d3; desc.label = label; desc.batch_size = 4;
            CHECK(dp_iter_create(&desc, &it) == DP_OK && it);
            if (it) {
                CHECK(dp_iter_next(it, &d, &l) == DP_OK && d && l);
                CHECK(d && dp_nd_shape(d)->ndim == 3 && dp_nd_shape(d)->dims[0] == 4 && dp_nd_shape(d)->dims[2] == 2 && dp_nd_dtype(d) == DP_FLOAT64);
                dp_nd_release(d); dp_nd_release(l);
                CHECK(dp_iter_next(it, &d, &l) == DP_OK && d && readd(d, got, 16) && got[0] == 16 && got[15] == 31);
                dp_nd_release(d); dp_nd_release(l);
                dp_iter_destroy(it); it = NULL;
            }
            dp_nd_release(d3);
            desc.data = data;
        }
        /* bad descs */
        short_label = arr(e, shp(1, IN_ROWS - 1, 0, 0), DP_FLOAT32, zeros);
        desc.label = label; desc.batch_size = 0;
        CHECK(dp_iter_create(&desc, &it) == DP_ERROR_INVALID_ARGS && it == NULL);
        desc.batch_size = -2;
        CHECK(dp_iter_create(&desc, &it) == DP_ERROR_INVALID_ARGS && it == NULL);
        desc.batch_size = 4; desc.label = short_label;
        g_last_item = 0;
        CHECK(dp_iter_create(&desc, &it) == DP_ERROR_INVALID_ARGS && it == NULL && g_last_item == DP_LOGITEM_ND_ARGS);
        desc.label = label; desc.data = NULL;
        CHECK(dp_iter_create(&desc, &it) == DP_ERROR_INVALID_ARGS && it == NULL);
        CHECK(dp_iter_create(NULL, &it) == DP_ERROR_INVALID_ARGS);
        desc.data = data;
        CHECK(dp_iter_create(&desc, NULL) == DP_ERROR_INVALID_ARGS);
        dp_nd_release(short_label);
        dp_nd_release(data); dp_nd_release(label);
        /* shuffled: every epoch a permutation, epochs differ */
        shuffled_epochs(e, 77, first[k], second[k]);
        CHECK(is_permutation(first[k], IN_ROWS) && is_permutation(second[k], IN_ROWS));
        CHECK(memcmp(first[k], second[k], sizeof first[k]) != 0);
        {   /* a shuffle that is the identity 10! ways is unlikely: order changed */
            int same = 1;
            for (i = 0; i < IN_ROWS; i++) same &= first[k][i] == i;
            CHECK(!same);
        }
        destroy_engine(e);
        {   /* the same seed on a new engine: the same orders */
            int again1[IN_ROWS], again2[IN_ROWS];
            e = make_engine(kinds[k], DP_STORAGE_DEFAULT);
            shuffled_epochs(e, 77, again1, again2);
            CHECK(memcmp(first[k], again1, sizeof again1) == 0 && memcmp(second[k], again2, sizeof again2) == 0);
            shuffled_epochs(e, 78, again1, again2);               /* another seed: another order */
            CHECK(memcmp(first[k], again1, sizeof again1) != 0 || memcmp(second[k], again2, sizeof again2) != 0);
            destroy_engine(e);
        }
    }
    /* and the same on every engine kind */
    CHECK(memcmp(first[0], first[1], sizeof first[0]) == 0 && memcmp(first[0], first[2], sizeof first[0]) == 0);
    CHECK(memcmp(second[0], second[1], sizeof second[0]) == 0 && memcmp(second[0], second[2], sizeof second[0]) == 0);
}

/* ---- what a review found, each fixed: a wide CSV row, arrays overwritten
   outside recording, operators with more than 32 inputs, a gradient with too
   many inputs, and backward passes from two threads sharing a weight */
typedef struct { dp_engine *e; dp_ndarray *w; int rounds; int bad; } shared_w;
static void *backward_rounds(void *arg) {
    shared_w *sw = (shared_w *)arg;
    int i;
    for (i = 0; i < sw->rounds; i++) {
        dp_ndarray *y, *l;
        dp_autograd_begin();
        y = un(sw->e, "square", sw->w); l = un(sw->e, "sum", y);
        dp_autograd_end();
        if (dp_autograd_backward(l, NULL, 0) != DP_OK) sw->bad = 1;
        dp_nd_release(y); dp_nd_release(l);
    }
    return NULL;
}
static void test_review_regressions(void) {
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, DP_STORAGE_DEFAULT);
    char path[512];
    FILE *f;
    int i;
    {   /* one row of 10,000 numbers, and a second */
        dp_ndarray *d = NULL, *l = NULL;
        float v[3];
        snprintf(path, sizeof path, "%s/depeng_wide_%d.csv", test_temp_dir(), (int)getpid());
        f = fopen(path, "w");
        for (i = 0; i < 10000; i++) fprintf(f, i ? ",%d" : "%d", i % 7);
        fputc('\n', f);
        for (i = 0; i < 10000; i++) fprintf(f, i ? ",%d" : "%d", 1);
        fputc('\n', f);
        fclose(f);
        CHECK(dp_nd_load_csv(e, path, -1, CPU0, NULL, &d, &l) == DP_OK);
        CHECK(d && dp_nd_shape(d)->ndim == 2 && dp_nd_shape(d)->dims[0] == 2 && dp_nd_shape(d)->dims[1] == 9999);
        CHECK(l && dp_nd_read(l, v, 2 * sizeof(float), NULL) == DP_OK && v[0] == (float)(9999 % 7) && v[1] == 1);
        dp_nd_release(d); dp_nd_release(l);
        remove(path);
        f = fopen(path, "w");                       /* an empty field in the first row is an error, not a header */
        fputs("1,,3\n4,5,6\n", f);
        fclose(f);
        CHECK(dp_nd_load_csv(e, path, -1, CPU0, NULL, &d, &l) == DP_ERROR_FORMAT);
        remove(path);
    }
    {   /* y = exp(x) recorded, then overwritten by an unrecorded write: y leaves the graph */
        double xv[2] = {0.5, -1.0}, c[2] = {2, 3};
        dp_shape s = {1, {2}};
        int how;
        for (how = 0; how < 2; how++) {
            dp_ndarray *x = arr(e, s, DP_FLOAT64, xv), *k = arr(e, s, DP_FLOAT64, c), *y, *h, *l;
            CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
            dp_autograd_begin(); y = un(e, "exp", x); dp_autograd_end();
            if (how == 0) CHECK(invoke_str(e, "_copy", 1, &k, 0, NULL, NULL, 0, 1, &y, NULL) == DP_OK);
            else CHECK(dp_nd_write(y, c, sizeof c, NULL) == DP_OK);
            dp_autograd_begin(); h = un(e, "sin", y); l = un(e, "sum", h); dp_autograd_end();
            CHECK(l == NULL || dp_autograd_backward(l, NULL, 0) == DP_ERROR_INVALID_ARGS);   /* y is a constant now */
            dp_nd_release(x); dp_nd_release(k); dp_nd_release(y); dp_nd_release(h); dp_nd_release(l);
        }
    }
    {   /* concat of 40 marked arrays (inputs past bit 31), and of 64 (its gradient would take 65 inputs) */
        dp_ndarray *parts[64], *whole, *l;
        const char *keys[2] = {"num_args", "dim"}, *vals[2] = {"40", "0"};
        double one = 1, g;
        dp_shape s1 = {1, {1}};
        for (i = 0; i < 64; i++) { parts[i] = arr(e, s1, DP_FLOAT64, &one); CHECK(dp_nd_attach_grad(parts[i], DP_REQ_WRITE) == DP_OK); }
        dp_autograd_begin();
        whole = inv(e, "concat", 40, parts, 2, keys, vals, 0);
        l = un(e, "square", whole);
        { dp_ndarray *t = l; l = un(e, "sum", t); dp_nd_release(t); }
        dp_autograd_end();
        CHECK(dp_autograd_backward(l, NULL, 0) == DP_OK);
        for (i = 0; i < 40; i++) { CHECK(dp_nd_read(dp_nd_grad(parts[i]), &g, sizeof g, NULL) == DP_OK && g == 2.0); }
        dp_nd_release(whole); dp_nd_release(l);
        vals[0] = "64";
        dp_autograd_begin();
        whole = inv(e, "concat", 64, parts, 2, keys, vals, 0);
        l = un(e, "sum", whole);
        dp_autograd_end();
        CHECK(dp_autograd_backward(l, NULL, 1) == DP_ERROR_INVALID_ARGS);
        dp_nd_release(whole); dp_nd_release(l);
        for (i = 0; i < 64; i++) dp_nd_release(parts[i]);
    }
    {   /* two threads, one weight (add), 50 backward passes each */
        double wv[3] = {1, 2, 3}, g[3];
        dp_shape s = {1, {3}};
        shared_w a, b;
        pthread_t t1, t2;
        a.e = e; a.w = arr(e, s, DP_FLOAT64, wv); a.rounds = 50; a.bad = 0;
        CHECK(dp_nd_attach_grad(a.w, DP_REQ_ADD) == DP_OK);
        b = a;
        pthread_create(&t1, NULL, backward_rounds, &a);
        pthread_create(&t2, NULL, backward_rounds, &b);
        pthread_join(t1, NULL); pthread_join(t2, NULL);
        CHECK(!a.bad && !b.bad);
        CHECK(dp_nd_read(dp_nd_grad(a.w), g, sizeof g, NULL) == DP_OK);
        for (i = 0; i < 3; i++) CHECK(g[i] == 100 * 2 * wv[i]);
        dp_nd_release(a.w);
    }
    destroy_engine(e);
}

/* ---- out of memory at every allocation of a training step ------------------- */
/* The step: mark w1, b1, w2 (data and b2 unmarked), record
   FullyConnected -> tanh -> mul(a, a) -> FullyConnected ->
   softmax_cross_entropy, backward, read the three gradients. Every call
   returns DP_OK or DP_ERROR_OUT_OF_MEMORY; the first error ends the step,
   which releases what it made. Returns that error, or DP_OK with the
   gradients in g (5*3 + 5 + 3*5). When backward fails, a second backward
   with allocations allowed must succeed (the graph survived whole; then
   retried is set) and the step goes on failing as before. */
#define OOM_GRADS 35
static dp_result oom_step(dp_engine *e, double *g, int *retried) {
    static const double xv[12] = {0.3, -0.2, 0.5, 0.1, 0.4, -0.6, -0.3, 0.2, 0.7, 0.05, -0.4, 0.25}, lv[4] = {0, 2, 1, 2};
    static double w1v[15], b1v[5], w2v[15], b2v[3];
    const char *nh[1] = {"num_hidden"}, *v5[1] = {"5"}, *v3[1] = {"3"};
    dp_shape sx = shp(2, 4, 3, 0), sw1 = shp(2, 5, 3, 0), sb1 = shp(1, 5, 0, 0), sw2 = shp(2, 3, 5, 0), sb2 = shp(1, 3, 0, 0), sl = shp(1, 4, 0, 0);
    dp_ndarray *in[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *h1 = NULL, *a1 = NULL, *sq = NULL, *h2 = NULL, *loss = NULL, *fc[3], *pair[2];
    const dp_shape *shapes[6];
    const double *init[6];
    dp_result r = DP_OK;
    int i, recording = 0;
    *retried = 0;
    for (i = 0; i < 15; i++) { w1v[i] = 0.1 * sin(1.3 * i); w2v[i] = 0.2 * cos(0.7 * i); }
    for (i = 0; i < 5; i++) b1v[i] = 0.05 * i;
    for (i = 0; i < 3; i++) b2v[i] = -0.1 * i;
    shapes[0] = &sx; shapes[1] = &sw1; shapes[2] = &sb1; shapes[3] = &sw2; shapes[4] = &sb2; shapes[5] = &sl;
    init[0] = xv; init[1] = w1v; init[2] = b1v; init[3] = w2v; init[4] = b2v; init[5] = lv;
    for (i = 0; i < 6 && r == DP_OK; i++) {
        double buf[15];
        memcpy(buf, init[i], (size_t)dp_shape_size(shapes[i]) * sizeof(double));
        r = dp_nd_from_host(e, shapes[i], DP_FLOAT64, CPU0, buf, &in[i]);
    }
    if (r == DP_OK) r = dp_nd_attach_grad(in[1], DP_REQ_WRITE);
    if (r == DP_OK) r = dp_nd_attach_grad(in[2], DP_REQ_WRITE);
    if (r == DP_OK) r = dp_nd_attach_grad(in[3], DP_REQ_WRITE);
    if (r == DP_OK) { r = dp_autograd_begin(); recording = r == DP_OK; }
    fc[0] = in[0]; fc[1] = in[1]; fc[2] = in[2];
    if (r == DP_OK) r = invoke_str(e, "FullyConnected", 3, fc, 1, nh, v5, 0, 1, &h1, NULL);
    if (r == DP_OK) r = invoke_str(e, "tanh", 1, &h1, 0, NULL, NULL, 0, 1, &a1, NULL);
    pair[0] = a1; pair[1] = a1;
    if (r == DP_OK) r = invoke_str(e, "mul", 2, pair, 0, NULL, NULL, 0, 1, &sq, NULL);
    fc[0] = sq; fc[1] = in[3]; fc[2] = in[4];
    if (r == DP_OK) r = invoke_str(e, "FullyConnected", 3, fc, 1, nh, v3, 0, 1, &h2, NULL);
    pair[0] = h2; pair[1] = in[5];
    if (r == DP_OK) r = invoke_str(e, "softmax_cross_entropy", 2, pair, 0, NULL, NULL, 0, 1, &loss, NULL);
    if (recording) CHECK(dp_autograd_end() == DP_OK);
    dp_nd_release(h1); dp_nd_release(a1); dp_nd_release(sq); dp_nd_release(h2);
    if (r == DP_OK) {
        r = dp_autograd_backward(loss, NULL, 0);
        if (r == DP_ERROR_OUT_OF_MEMORY) {
            long from = __atomic_exchange_n(&g_fail_from, 0, __ATOMIC_ACQ_REL), at = __atomic_exchange_n(&g_fail_at, 0, __ATOMIC_ACQ_REL);
            *retried = dp_autograd_backward(loss, NULL, 0) == DP_OK;
            CHECK(*retried);
            if (*retried) r = DP_OK;
            __atomic_store_n(&g_fail_from, from, __ATOMIC_RELEASE);
            __atomic_store_n(&g_fail_at, at, __ATOMIC_RELEASE);
        }
    }
    if (r == DP_OK) {   /* a failed kernel surfaces here, as a failure of the read */
        dp_failure f;
        if (dp_nd_read(dp_nd_grad(in[1]), g, 15 * sizeof(double), &f) != DP_OK
            || dp_nd_read(dp_nd_grad(in[2]), g + 15, 5 * sizeof(double), &f) != DP_OK
            || dp_nd_read(dp_nd_grad(in[3]), g + 20, 15 * sizeof(double), &f) != DP_OK) r = DP_ERROR_OUT_OF_MEMORY;
    }
    dp_nd_release(loss);
    for (i = 0; i < 6; i++) dp_nd_release(in[i]);
    return r;
}
static dp_engine *oom_engine(dp_engine_type type) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = test_logger;
    d.allocator.alloc = failing_alloc; d.allocator.free = failing_free;
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    return e;
}
/* One run of the step with allocation k (counted from the step's start)
   failing, alone (every_after 0) or with all after it; returns whether
   any allocation failed. */
static int oom_run(dp_engine_type type, long k, int every_after, const double *want, int *errors, int *retries) {
    dp_engine *e = oom_engine(type);
    double g[OOM_GRADS];
    dp_result r;
    int failed, retried, i;
    if (!e) return 0;
    __atomic_store_n(&g_alloc_calls, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_alloc_failures, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_oom_logged, 0, __ATOMIC_RELEASE);
    __atomic_store_n(every_after ? &g_fail_from : &g_fail_at, k, __ATOMIC_RELEASE);
    r = oom_step(e, g, &retried);
    __atomic_store_n(&g_fail_from, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_fail_at, 0, __ATOMIC_RELEASE);
    failed = __atomic_load_n(&g_alloc_failures, __ATOMIC_ACQUIRE) > 0;
    if (r != DP_OK && r != DP_ERROR_OUT_OF_MEMORY) { fprintf(stderr, "  k %ld: %s\n", k, dp_result_string(r)); CHECK(0); }
    if (r != DP_OK) (*errors)++;
    /* an error is never silent (a failure the library works around may be) */
    if (r != DP_OK && __atomic_load_n(&g_oom_logged, __ATOMIC_ACQUIRE) == 0) { fprintf(stderr, "  k %ld: the error was not logged\n", k); CHECK(0); }
    if (retried) (*retries)++;
    if (r == DP_OK)
        for (i = 0; i < OOM_GRADS; i++)
            if (!near_rel(g[i], want[i], 1e-12)) { fprintf(stderr, "  %s, k %ld%s: gradient %d is %g, not %g%s\n", kind_names[type], k, every_after ? " on" : "", i, g[i], want[i], retried ? " (backward retried)" : ""); CHECK(0); break; }
    (void)dp_wait_all(e, NULL);   /* an operation's failure was the step's to report */
    destroy_engine(e);
    if (__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) != 0) {
        fprintf(stderr, "  k %ld: %ld bytes outstanding after destroy\n", k, __atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE));
        CHECK(0);
        __atomic_store_n(&g_live_alloc_bytes, 0, __ATOMIC_RELEASE);
    }
    return failed;
}
static void test_out_of_memory_sweep(void) {
    double want[OOM_GRADS];
    int retried = 0, errors, retries, mode, t;
    long k, calls;
    {   /* the reference: no failure */
        dp_engine *e = oom_engine(DP_ENGINE_NAIVE);
        __atomic_store_n(&g_alloc_calls, 0, __ATOMIC_RELEASE);
        CHECK(oom_step(e, want, &retried) == DP_OK && !retried);
        calls = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
        destroy_engine(e);
        CHECK(calls > 20 && __atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    }
    for (t = 0; t < 3; t++)
        for (mode = 0; mode < 2; mode++) {
            errors = retries = 0;
            for (k = 1; oom_run(kinds[t], k, mode, want, &errors, &retries); k++) {}
            /* the naive engine allocates on this thread only: the sweep met
               each of the step's allocations, and backward failed part way */
            if (kinds[t] == DP_ENGINE_NAIVE) CHECK(k == calls + 1 && errors > calls / 2 && retries > 10);
            if (getenv("DEPENG_TEST_VERBOSE"))
                printf("  %s, %s: k = 1..%ld, %d errors, %d backward retries\n", kind_names[t], mode ? "every call from k" : "call k", k - 1, errors, retries);
        }
}

/* An invocation that fails for memory writes nothing, so it must not
   count as a write of its output: the graph that saved the array still
   differentiates. The output is a detached view of a saved array, written
   by a recorded invocation, whose record is what fails. */
static void test_failed_invocation_writes_nothing(void) {
    static const double xv[3] = {0.1, 0.2, 0.3};
    long k;
    int failures = 0;
    for (k = 1; k < 100; k++) {
        dp_engine *e = oom_engine(DP_ENGINE_NAIVE);
        dp_ndarray *x = arr64(e, shp(1, 3, 0, 0), xv), *z = arr64(e, shp(1, 3, 0, 0), xv), *y, *h, *d = NULL;
        dp_result r;
        double g[3];
        CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK && dp_nd_attach_grad(z, DP_REQ_WRITE) == DP_OK);
        CHECK(dp_autograd_begin() == DP_OK);
        y = un(e, "exp", x); h = un(e, "sum", y);     /* exp's gradient reads y */
        CHECK(dp_nd_detach(y, &d) == DP_OK);
        __atomic_store_n(&g_alloc_calls, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&g_fail_at, k, __ATOMIC_RELEASE);
        r = invoke_str(e, "exp", 1, &z, 0, NULL, NULL, 0, 1, &d, NULL);   /* over y's values */
        __atomic_store_n(&g_fail_at, 0, __ATOMIC_RELEASE);
        CHECK(dp_autograd_end() == DP_OK);
        if (r == DP_OK) {            /* written: backward must refuse to read the new values */
            CHECK(dp_autograd_backward(h, NULL, 0) == DP_ERROR_INVALID_ARGS);
        } else {
            failures++;
            CHECK(r == DP_ERROR_OUT_OF_MEMORY);
            CHECK(dp_autograd_backward(h, NULL, 0) == DP_OK && readd(dp_nd_grad(x), g, 3) && near_rel(g[2], exp(0.3), 1e-12));
        }
        dp_nd_release(x); dp_nd_release(y); dp_nd_release(h); dp_nd_release(z); dp_nd_release(d);
        destroy_engine(e);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
        if (r == DP_OK) break;
    }
    CHECK(failures >= 2);   /* the invocation's output view and autograd's record of it; the invocation's
                               own record is one exp's or sum's gave back (dp_invoke reuses them) */
}

int main(void) {
    static const test_case tests[] = {
        {"graph_gradients_fd", test_graph_gradients_fd}, {"grad_req_add", test_grad_req_add}, {"head_grad", test_head_grad},
        {"errors", test_errors}, {"not_recorded_outside", test_not_recorded_outside}, {"memory_released", test_memory_released},
        {"inplace_backward", test_inplace_backward}, {"optimizers", test_optimizers}, {"bitwise_same_engines", test_bitwise_same_engines},
        {"csv", test_csv}, {"iterator", test_iterator}, {"review_regressions", test_review_regressions},
        {"out_of_memory_sweep", test_out_of_memory_sweep}, {"failed_invocation_writes_nothing", test_failed_invocation_writes_nothing},
    };
    return run_tests("autograd", tests, (int)(sizeof tests / sizeof tests[0]));
}
