/* depeng symbol and executor tests: building graphs, shape inference
   (forward and backward, errors naming the node), the gradient graph,
   the executor against the imperative path (random graphs of built-in
   operators, outputs and gradients, on all three engines), with the
   built-in memory plan and with a planner that reuses blocks, gradient
   requests, re-binding to another batch size, steps without allocation,
   and MXNet's symbol JSON and DOT. The last line is
   "symbol: N passed, M failed". */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/test_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
static const dp_ctx CPU0 = {DP_DEV_CPU, 0};

static dp_engine *make_engine(dp_engine_type type, int counting) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
    d.logger.func = getenv("SYM_LOG") ? dp_log_stderr : quiet_logger;
    if (counting) { d.allocator.alloc = failing_alloc; d.allocator.free = failing_free; }
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    return e;
}
static dp_shape shp(int ndim, int64_t d0, int64_t d1) {
    dp_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim; s.dims[0] = d0; s.dims[1] = d1;
    return s;
}
static int same_shape(const dp_shape *a, const dp_shape *b) {
    return a->ndim == b->ndim && memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim) == 0;
}
static uint64_t g_rng = 88172645463325252ull;
static double urand(void) { g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17; return (double)(g_rng >> 11) / 9007199254740992.0; }
static dp_ndarray *rand_array(dp_engine *e, dp_shape s, dp_dtype dt, double lo, double hi) {
    int64_t n = dp_shape_size(&s), i;
    double *v = (double *)malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    float *f = (float *)malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    dp_ndarray *a = NULL;
    for (i = 0; i < n; i++) { v[i] = lo + (hi - lo) * urand(); f[i] = (float)v[i]; }
    CHECK(dp_nd_from_host(e, &s, dt, CPU0, dt == DP_FLOAT64 ? (void *)v : (void *)f, &a) == DP_OK);
    free(v); free(f);
    return a;
}
/* largest |a - b| relative to max(1, |b|), over float64 or float32 arrays */
static double max_diff(dp_ndarray *a, dp_ndarray *b) {
    size_t n = (size_t)dp_shape_size(dp_nd_shape(a)), i;
    double worst = 0, *x = (double *)calloc(n ? n : 1, 8), *y = (double *)calloc(n ? n : 1, 8);
    if (dp_nd_dtype(a) == DP_FLOAT64) {
        CHECK(dp_nd_read(a, x, n * 8, NULL) == DP_OK); CHECK(dp_nd_read(b, y, n * 8, NULL) == DP_OK);
    } else {
        float *fx = (float *)calloc(n ? n : 1, 4), *fy = (float *)calloc(n ? n : 1, 4);
        CHECK(dp_nd_read(a, fx, n * 4, NULL) == DP_OK); CHECK(dp_nd_read(b, fy, n * 4, NULL) == DP_OK);
        for (i = 0; i < n; i++) { x[i] = fx[i]; y[i] = fy[i]; }
        free(fx); free(fy);
    }
    CHECK(same_shape(dp_nd_shape(a), dp_nd_shape(b)));
    for (i = 0; i < n; i++) {
        double d = fabs(x[i] - y[i]) / (fabs(y[i]) > 1 ? fabs(y[i]) : 1);
        if (!(d <= worst)) worst = d;     /* NaN counts as worst */
    }
    free(x); free(y);
    return worst;
}
static dp_symbol *op1(const char *op, const char *name, dp_symbol *a, const char *k, const char *v) {
    dp_symbol *s = NULL, *in[1];
    const char *keys[1], *vals[1];
    in[0] = a; keys[0] = k; vals[0] = v;
    CHECK(sym_op(op, name, 1, in, k ? 1 : 0, keys, vals, &s) == DP_OK);
    return s;
}
static dp_symbol *op2(const char *op, const char *name, dp_symbol *a, dp_symbol *b) {
    dp_symbol *s = NULL, *in[2];
    in[0] = a; in[1] = b;
    CHECK(sym_op(op, name, 2, in, 0, NULL, NULL, &s) == DP_OK);
    return s;
}
/* data -> FullyConnected(hidden) -> relu -> FullyConnected(classes) -> softmax_cross_entropy(label) */
static dp_symbol *mlp(int hidden, int classes) {
    dp_symbol *data, *label, *fc1, *act, *fc2, *loss, *in[3];
    const char *k[1] = {"num_hidden"}, *v1[1], *v2[1];
    char h[16], c[16];
    snprintf(h, sizeof h, "%d", hidden); snprintf(c, sizeof c, "%d", classes);
    v1[0] = h; v2[0] = c;
    CHECK(dp_sym_var("data", &data) == DP_OK);
    CHECK(dp_sym_var("label", &label) == DP_OK);
    in[0] = data; in[1] = NULL; in[2] = NULL;
    CHECK(sym_op("FullyConnected", "fc1", 3, in, 1, k, v1, &fc1) == DP_OK);
    act = op1("Activation", "relu1", fc1, "act_type", "relu");
    in[0] = act;
    CHECK(sym_op("FullyConnected", "fc2", 3, in, 1, k, v2, &fc2) == DP_OK);
    loss = op2("softmax_cross_entropy", "loss", fc2, label);
    dp_sym_release(data); dp_sym_release(label); dp_sym_release(fc1); dp_sym_release(act); dp_sym_release(fc2);
    return loss;
}

/* ---- construction and inference ------------------------------------------------ */
static void test_construct_and_infer(void) {
    dp_symbol *loss = mlp(16, 10), *bad = NULL, *x = NULL, *in[3];
    const char *names[8], *known[1] = {"data"};
    dp_shape ds = shp(2, 5, 8), args[6], outs[1];
    dp_dtype at[6];
    const char *k[1] = {"num_hidden"}, *v[1] = {"abc"};
    int n = dp_sym_list_arguments(loss, names, 8);
    CHECK(n == 6);
    if (n == 6) {
        CHECK(!strcmp(names[0], "data")); CHECK(!strcmp(names[1], "fc1_weight")); CHECK(!strcmp(names[2], "fc1_bias"));
        CHECK(!strcmp(names[3], "fc2_weight")); CHECK(!strcmp(names[4], "fc2_bias")); CHECK(!strcmp(names[5], "label"));
    }
    CHECK(dp_sym_num_outputs(loss) == 1);
    CHECK(!strcmp(dp_sym_name(loss), "loss"));
    /* backward inference: the weights from the data and num_hidden, the label from the scores */
    CHECK(sym_infer(loss, 1, known, &ds, NULL, args, at, outs, NULL) == DP_OK);
    CHECK(args[1].ndim == 2 && args[1].dims[0] == 16 && args[1].dims[1] == 8);
    CHECK(args[2].ndim == 1 && args[2].dims[0] == 16);
    CHECK(args[3].ndim == 2 && args[3].dims[0] == 10 && args[3].dims[1] == 16);
    CHECK(args[5].ndim == 1 && args[5].dims[0] == 5);
    CHECK(outs[0].ndim == 1 && outs[0].dims[0] == 1);
    CHECK(at[3] == DP_FLOAT32);
    /* errors name the node */
    CHECK(dp_sym_var("x", &x) == DP_OK);
    in[0] = x; in[1] = NULL; in[2] = NULL;
    CHECK(sym_op("NoSuchOp", "n1", 1, in, 0, NULL, NULL, &bad) == DP_ERROR_INVALID_ARGS && !bad);
    CHECK(sym_op("FullyConnected", "n2", 3, in, 1, k, v, &bad) == DP_ERROR_INVALID_ARGS && !bad);
    CHECK(sym_op("relu", "n3", 2, in, 0, NULL, NULL, &bad) == DP_ERROR_INVALID_ARGS && !bad);
    CHECK(sym_op("Activation", "n4", 1, in, 0, NULL, NULL, &bad) == DP_ERROR_INVALID_ARGS && !bad);
    {   /* shapes that disagree */
        dp_symbol *a = NULL, *b = NULL, *s;
        const char *nm[2] = {"a", "b"};
        dp_shape sh[2];
        sh[0] = shp(2, 2, 3); sh[1] = shp(2, 4, 5);
        CHECK(dp_sym_var("a", &a) == DP_OK); CHECK(dp_sym_var("b", &b) == DP_OK);
        s = op2("add", "sum_ab", a, b);
        CHECK(sym_infer(s, 2, nm, sh, NULL, NULL, NULL, NULL, NULL) == DP_ERROR_INVALID_ARGS);
        CHECK(sym_infer(s, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL) == DP_ERROR_INVALID_ARGS);
        sh[1] = shp(2, 2, 3);
        CHECK(sym_infer(s, 1, nm, sh, NULL, args, NULL, outs, NULL) == DP_OK);   /* b from a */
        CHECK(same_shape(&args[1], &sh[0]) && same_shape(&outs[0], &sh[0]));
        dp_sym_release(a); dp_sym_release(b); dp_sym_release(s);
    }
    dp_sym_release(x);
    dp_sym_release(loss);
}
static void test_group_and_outputs(void) {
    dp_symbol *x = NULL, *y, *z, *g = NULL, *pick = NULL, *parts[2];
    CHECK(dp_sym_var("x", &x) == DP_OK);
    y = op1("exp", "e", x, NULL, NULL);
    z = op1("mul_scalar", "m", x, "scalar", "3");
    parts[0] = y; parts[1] = z;
    CHECK(dp_sym_group(2, parts, &g) == DP_OK);
    CHECK(dp_sym_num_outputs(g) == 2);
    CHECK(dp_sym_name(g) == NULL);
    CHECK(dp_sym_list_arguments(g, NULL, 0) == 1);
    CHECK(dp_sym_output(g, 1, &pick) == DP_OK && !strcmp(dp_sym_name(pick), "m"));
    CHECK(dp_sym_output(g, 2, &parts[0]) == DP_ERROR_INVALID_ARGS);
    {
        dp_symbol *in[1];
        dp_symbol *bad = NULL;
        in[0] = g;
        CHECK(sym_op("relu", "r", 1, in, 0, NULL, NULL, &bad) == DP_ERROR_INVALID_ARGS && !bad);
    }
    dp_sym_release(x); dp_sym_release(y); dp_sym_release(z); dp_sym_release(g); dp_sym_release(pick);
}

/* ---- a second planner: reuses freed blocks -------------------------------------
   First fit over a list of free blocks, liveness from the execution list,
   in place where allowed: a valid plan whose blocks are shared, so the
   executor's ordering of overlapping entries is exercised. */
static dp_result reusing_planner(int ne, const size_t *bytes, const unsigned char *ext, int nn, const dpn__plan_node *nodes,
                                 int64_t *offset, size_t *arena, size_t *unplanned) {
    int *last = (int *)malloc((size_t)(ne ? ne : 1) * sizeof *last), i, j, k;
    int64_t *fo = (int64_t *)malloc((size_t)(ne + 1) * 2 * sizeof *fo);
    size_t *fs = (size_t *)malloc((size_t)(ne + 1) * 2 * sizeof *fs);
    int nfree = 0;
    size_t top = 0, un = 0;
    for (i = 0; i < ne; i++) { last[i] = -1; offset[i] = -1; }
    for (i = 0; i < nn; i++) for (j = 0; j < nodes[i].num_inputs; j++) last[nodes[i].inputs[j]] = i;
    for (i = 0; i < nn; i++) {
        for (j = 0; j < nodes[i].num_outputs; j++) {
            int e = nodes[i].outputs[j];
            size_t b = (bytes[e] + 63) / 64 * 64;
            if (ext[e] || offset[e] >= 0) continue;
            un += b;
            if (j == 0)             /* in place over a dying input */
                for (k = 0; k < nodes[i].num_inputs && k < 32; k++) {
                    int in = nodes[i].inputs[k];
                    if ((nodes[i].inplace & (1u << k)) && !ext[in] && offset[in] >= 0 && last[in] == i && bytes[in] == bytes[e]) {
                        int m, other = 0;
                        for (m = 0; m < nodes[i].num_inputs; m++) if (m != k && nodes[i].inputs[m] == in) other = 1;
                        if (!other) { offset[e] = offset[in]; last[in] = -2; break; }
                    }
                }
            if (offset[e] >= 0) continue;
            for (k = 0; k < nfree && fs[k] < b; k++) {}
            if (k < nfree) { offset[e] = fo[k]; fo[k] += (int64_t)b; fs[k] -= b; }
            else { offset[e] = (int64_t)top; top += b; }
        }
        /* inputs read for the last time free their blocks after the node */
        for (j = 0; j < nodes[i].num_inputs; j++) {
            int e = nodes[i].inputs[j], m, seen = 0;
            for (m = 0; m < j; m++) if (nodes[i].inputs[m] == e) seen = 1;
            if (seen || ext[e] || offset[e] < 0 || last[e] != i) continue;
            fo[nfree] = offset[e]; fs[nfree] = (bytes[e] + 63) / 64 * 64; nfree++;
        }
        /* outputs nobody reads die at once */
        for (j = 0; j < nodes[i].num_outputs; j++) {
            int e = nodes[i].outputs[j];
            if (ext[e] || offset[e] < 0 || last[e] != -1) continue;
            last[e] = -3;
            fo[nfree] = offset[e]; fs[nfree] = (bytes[e] + 63) / 64 * 64; nfree++;
        }
    }
    for (i = 0; i < ne; i++) if (!ext[i] && offset[i] < 0) { offset[i] = (int64_t)top; top += (bytes[i] + 63) / 64 * 64; un += (bytes[i] + 63) / 64 * 64; }
    *arena = top; *unplanned = un;
    free(last); free(fo); free(fs);
    return DP_OK;
}

/* ---- executor against the imperative path --------------------------------------- */
static void test_mlp_matches_autograd(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 0);
        dp_symbol *loss = mlp(12, 4);
        dp_ndarray *arg[6], *grad[6], *ag_loss = NULL, *h = NULL, *a = NULL, *o = NULL, *in[3];
        dp_executor *ex = NULL;
        const char *key[1] = {"num_hidden"}, *v12[1] = {"12"}, *v4[1] = {"4"};
        float labels[6] = {0, 1, 2, 3, 1, 2};
        dp_shape ls = shp(1, 6, 0);
        int i;
        g_rng = 1234 + (uint64_t)k;
        arg[0] = rand_array(e, shp(2, 6, 5), DP_FLOAT32, -1, 1);
        arg[1] = rand_array(e, shp(2, 12, 5), DP_FLOAT32, -0.5, 0.5);
        arg[2] = rand_array(e, shp(1, 12, 0), DP_FLOAT32, -0.1, 0.1);
        arg[3] = rand_array(e, shp(2, 4, 12), DP_FLOAT32, -0.5, 0.5);
        arg[4] = rand_array(e, shp(1, 4, 0), DP_FLOAT32, -0.1, 0.1);
        CHECK(dp_nd_from_host(e, &ls, DP_FLOAT32, CPU0, labels, &arg[5]) == DP_OK);
        for (i = 0; i < 6; i++) grad[i] = NULL;
        for (i = 1; i < 5; i++) CHECK(dp_nd_zeros(e, dp_nd_shape(arg[i]), DP_FLOAT32, CPU0, &grad[i]) == DP_OK);
        CHECK(exec_bind(e, loss, CPU0, 6, arg, grad, NULL, &ex) == DP_OK);
        CHECK(dp_exec_forward(ex, 1) == DP_OK);
        CHECK(dp_exec_backward(ex, 0, NULL) == DP_OK);
        /* the same through autograd */
        for (i = 1; i < 5; i++) CHECK(dp_nd_attach_grad(arg[i], DP_REQ_WRITE) == DP_OK);
        dp_autograd_begin();
        in[0] = arg[0]; in[1] = arg[1]; in[2] = arg[2];
        CHECK(invoke_str(e, "FullyConnected", 3, in, 1, key, v12, 0, 1, &h, NULL) == DP_OK);
        CHECK(invoke_str(e, "relu", 1, &h, 0, NULL, NULL, 0, 1, &a, NULL) == DP_OK);
        in[0] = a; in[1] = arg[3]; in[2] = arg[4];
        CHECK(invoke_str(e, "FullyConnected", 3, in, 1, key, v4, 0, 1, &o, NULL) == DP_OK);
        in[0] = o; in[1] = arg[5];
        CHECK(invoke_str(e, "softmax_cross_entropy", 2, in, 0, NULL, NULL, 0, 1, &ag_loss, NULL) == DP_OK);
        dp_autograd_end();
        CHECK(dp_autograd_backward(ag_loss, NULL, 0) == DP_OK);
        CHECK(max_diff(dp_exec_output(ex, 0), ag_loss) < 1e-5);
        for (i = 1; i < 5; i++) CHECK(max_diff(grad[i], dp_nd_grad(arg[i])) < 1e-5);
        dp_exec_destroy(ex);
        dp_nd_release(h); dp_nd_release(a); dp_nd_release(o); dp_nd_release(ag_loss);
        for (i = 0; i < 6; i++) { dp_nd_release(arg[i]); dp_nd_release(grad[i]); }
        dp_sym_release(loss);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* Random graphs: NARG (3, 4) float64 arguments, then nodes of unary,
   binary and scalar element-wise operators, softmax and clip on earlier
   values; the sum of the last few values is the head. The same graph runs
   imperatively under autograd and through an executor. */
enum { NARG = 3, MAXN = 24 };
typedef struct rnode { const char *op; int a, b; const char *key, *val; } rnode;
static const char *const unary_ops[] = {"negative", "square", "tanh", "sigmoid", "relu", "sin", "exp", "abs"};
static const char *const binary_ops[] = {"add", "sub", "mul", "maximum", "minimum"};
static const char *const scalar_ops[] = {"add_scalar", "mul_scalar", "sub_scalar", "rsub_scalar"};
static int make_random_graph(rnode *nodes) {
    int n = 6 + (int)(urand() * (MAXN - 6)), i;
    for (i = 0; i < n; i++) {
        int avail = NARG + i, kind = (int)(urand() * 10);
        rnode *x = &nodes[i];
        x->a = (int)(urand() * avail); x->b = (int)(urand() * avail); x->key = NULL; x->val = NULL;
        if (kind < 4) { x->op = unary_ops[(int)(urand() * 8)]; if (!strcmp(x->op, "exp")) x->op = "tanh"; }
        else if (kind < 7) x->op = binary_ops[(int)(urand() * 5)];
        else if (kind < 8) { x->op = scalar_ops[(int)(urand() * 4)]; x->key = "scalar"; x->val = "0.75"; }
        else if (kind < 9) { x->op = urand() < 0.5 ? "softmax" : "log_softmax"; x->key = "axis"; x->val = urand() < 0.5 ? "-1" : "0"; }
        else { double c = urand(); x->op = c < 0.34 ? "clip" : c < 0.67 ? "dotmix" : "concatmix"; }
        if (urand() < 0.5) x->a = avail - 1;      /* long chains too */
    }
    return n;
}
static int is_binary(const char *op) { size_t i; for (i = 0; i < 5; i++) if (!strcmp(op, binary_ops[i])) return 1; return 0; }
/* One operator on both paths: a symbol node and an invocation. */
static void both(const char *op, int nin, dp_symbol **sin, dp_ndarray **ain, int nkw, const char **k, const char **v,
                 dp_symbol **sout, dp_ndarray **aout) {
    CHECK(sym_op(op, NULL, nin, sin, nkw, k, v, sout) == DP_OK);
    *aout = NULL;
    CHECK(invoke_str(dp_nd_engine(ain[0]), op, nin, ain, nkw, k, v, 0, 1, aout, NULL) == DP_OK);
}
/* Composite nodes of (3, 4) values into a (3, 4) value. dotmix: (dot(a,
   transpose(b)) + dot(a, b, transpose_b)) dot b, times 0.05 (dot both
   ways, transpose). concatmix: concat(a, b) along 0, reshaped to (2, 12),
   summed over axis 0, reshaped to (3, 4) (a variadic operator, reshape, a
   reduction over one axis). */
static void composite(const char *kind, dp_symbol *sa, dp_symbol *sb, dp_ndarray *a, dp_ndarray *b, dp_symbol **sout, dp_ndarray **aout) {
    dp_symbol *s[5], *si[2];
    dp_ndarray *x[5], *ai[2];
    int i, n;
    if (!strcmp(kind, "dotmix")) {
        const char *tk[1] = {"axes"}, *tv[1] = {"()"}, *dk[1] = {"transpose_b"}, *dv[1] = {"true"}, *mk[1] = {"scalar"}, *mv[1] = {"0.05"};
        si[0] = sb; ai[0] = b;
        both("transpose", 1, si, ai, 1, tk, tv, &s[0], &x[0]);                 /* (4, 3) */
        si[0] = sa; si[1] = s[0]; ai[0] = a; ai[1] = x[0];
        both("dot", 2, si, ai, 0, NULL, NULL, &s[1], &x[1]);                   /* (3, 3) */
        si[0] = sa; si[1] = sb; ai[0] = a; ai[1] = b;
        both("dot", 2, si, ai, 1, dk, dv, &s[2], &x[2]);                       /* (3, 3) */
        si[0] = s[1]; si[1] = s[2]; ai[0] = x[1]; ai[1] = x[2];
        both("add", 2, si, ai, 0, NULL, NULL, &s[3], &x[3]);
        si[0] = s[3]; si[1] = sb; ai[0] = x[3]; ai[1] = b;
        both("dot", 2, si, ai, 0, NULL, NULL, &s[4], &x[4]);                   /* (3, 4) */
        CHECK(sym_op("mul_scalar", NULL, 1, &s[4], 1, mk, mv, sout) == DP_OK);
        *aout = NULL;
        CHECK(invoke_str(dp_nd_engine(a), "mul_scalar", 1, &x[4], 0, NULL, NULL, 0.05, 1, aout, NULL) == DP_OK);
        n = 5;
    } else {
        const char *ck[2] = {"num_args", "dim"}, *cv[2] = {"2", "0"}, *rk[1] = {"shape"}, *r1[1] = {"(2, 12)"}, *r2[1] = {"(3, 4)"};
        const char *sk[1] = {"axis"}, *sv[1] = {"(0,)"};
        si[0] = sa; si[1] = sb; ai[0] = a; ai[1] = b;
        both("concat", 2, si, ai, 2, ck, cv, &s[0], &x[0]);                    /* (6, 4) */
        both("reshape", 1, &s[0], &x[0], 1, rk, r1, &s[1], &x[1]);             /* (2, 12) */
        both("sum", 1, &s[1], &x[1], 1, sk, sv, &s[2], &x[2]);                 /* (12,) */
        both("reshape", 1, &s[2], &x[2], 1, rk, r2, sout, aout);               /* (3, 4) */
        n = 3;
    }
    for (i = 0; i < n; i++) { dp_sym_release(s[i]); dp_nd_release(x[i]); }
}

static void run_random_graph(dp_engine *e, int with_planner) {
    rnode nodes[MAXN];
    int n = make_random_graph(nodes), i, nheads = 1 + (int)(urand() * 3);
    dp_symbol *sv[NARG + MAXN], *heads[4], *sum = NULL, *grp = NULL;
    dp_ndarray *av[NARG + MAXN], *arg[NARG], *grad[NARG], *out = NULL, *total = NULL;
    dp_executor *ex = NULL;
    char name[32];
    const char *clip_k[2] = {"a_min", "a_max"}, *clip_v[2] = {"-0.8", "0.9"};
    const char *sum_k[1] = {"axis"}, *sum_v[1] = {"()"};
    for (i = 0; i < NARG; i++) {
        snprintf(name, sizeof name, "x%d", i);
        CHECK(dp_sym_var(name, &sv[i]) == DP_OK);
        arg[i] = rand_array(e, shp(2, 3, 4), DP_FLOAT64, -1, 1);
        CHECK(dp_nd_zeros(e, dp_nd_shape(arg[i]), DP_FLOAT64, CPU0, &grad[i]) == DP_OK);
        CHECK(dp_nd_attach_grad(arg[i], DP_REQ_WRITE) == DP_OK);
        av[i] = arg[i];
    }
    dp_autograd_begin();
    for (i = 0; i < n; i++) {
        rnode *x = &nodes[i];
        dp_symbol *in[2];
        dp_ndarray *ain[2];
        int nin = is_binary(x->op) ? 2 : 1;
        double scalar = x->val && !strcmp(x->key, "scalar") ? 0.75 : 0;
        const char *k[2], *v[2];
        int nkw = 0;
        snprintf(name, sizeof name, "n%d", i);
        in[0] = sv[x->a]; in[1] = sv[x->b]; ain[0] = av[x->a]; ain[1] = av[x->b];
        if (!strcmp(x->op, "dotmix") || !strcmp(x->op, "concatmix")) {
            composite(x->op, in[0], in[1], ain[0], ain[1], &sv[NARG + i], &av[NARG + i]);
            continue;
        }
        if (!strcmp(x->op, "clip")) { k[0] = clip_k[0]; k[1] = clip_k[1]; v[0] = clip_v[0]; v[1] = clip_v[1]; nkw = 2; }
        else if (x->key) { k[0] = x->key; v[0] = x->val; nkw = 1; }
        CHECK(sym_op(x->op, name, nin, in, nkw, k, v, &sv[NARG + i]) == DP_OK);
        av[NARG + i] = NULL;
        if (x->key && !strcmp(x->key, "scalar")) nkw = 0;
        CHECK(invoke_str(e, x->op, nin, ain, nkw, k, v, scalar, 1, &av[NARG + i], NULL) == DP_OK);
    }
    for (i = 0; i < nheads; i++) heads[i] = sv[NARG + n - 1 - i];
    /* imperative: the sum of every head's sum */
    for (i = 0; i < nheads; i++) {
        dp_ndarray *s = NULL, *pair[2];
        CHECK(invoke_str(e, "sum", 1, &av[NARG + n - 1 - i], 1, sum_k, sum_v, 0, 1, &s, NULL) == DP_OK);
        if (!total) total = s;
        else { dp_ndarray *t = NULL; pair[0] = total; pair[1] = s; CHECK(invoke_str(e, "add", 2, pair, 0, NULL, NULL, 0, 1, &t, NULL) == DP_OK); dp_nd_release(total); dp_nd_release(s); total = t; }
    }
    dp_autograd_end();
    CHECK(dp_autograd_backward(total, NULL, 0) == DP_OK);
    /* symbolic: the same sum as a graph */
    for (i = 0; i < nheads; i++) {
        dp_symbol *s = op1("sum", NULL, heads[i], "axis", "()");
        if (!sum) sum = s;
        else { dp_symbol *t = op2("add", NULL, sum, s); dp_sym_release(sum); dp_sym_release(s); sum = t; }
    }
    {   /* a group: the loss and the last value, whose head gradient is then zero */
        dp_symbol *two[2];
        two[0] = sum; two[1] = heads[0];
        CHECK(dp_sym_group(2, two, &grp) == DP_OK);
    }
    {
        const char *names[NARG];
        dp_ndarray *bound[NARG], *gb[NARG];
        int na = dp_sym_list_arguments(grp, names, NARG), j;
        CHECK(na >= 1 && na <= NARG);
        for (i = 0; i < na; i++) { j = names[i][1] - '0'; bound[i] = arg[j]; gb[i] = grad[j]; }
        dpn__exec_planner = with_planner ? reusing_planner : NULL;
        CHECK(exec_bind(e, grp, CPU0, na, bound, gb, NULL, &ex) == DP_OK);
        dpn__exec_planner = NULL;
        if (ex) {
            dp_ndarray *zero = NULL, *hg[2];
            dp_exec_memory m;
            CHECK(dp_nd_zeros(e, dp_nd_shape(dp_exec_output(ex, 1)), DP_FLOAT64, CPU0, &zero) == DP_OK);
            hg[0] = NULL; hg[1] = zero;
            CHECK(dp_exec_memory_get(ex, &m) == DP_OK);
            CHECK(m.planned_bytes <= m.unplanned_bytes);
            for (j = 0; j < 2; j++) {      /* twice: the second step reuses everything */
                CHECK(dp_exec_forward(ex, 1) == DP_OK);
                CHECK(dp_exec_backward(ex, 2, hg) == DP_OK);
            }
            CHECK(max_diff(dp_exec_output(ex, 0), total) < 1e-9);
            CHECK(max_diff(dp_exec_output(ex, 1), av[NARG + n - 1]) < 1e-12);
            for (i = 0; i < NARG; i++) {
                if (dp_nd_grad(arg[i]) == NULL) continue;
                CHECK(max_diff(grad[i], dp_nd_grad(arg[i])) < 1e-9);
            }
            dp_nd_release(zero);
            dp_exec_destroy(ex);
        }
        (void)out;
    }
    for (i = 0; i < NARG + n; i++) { dp_sym_release(sv[i]); if (i >= NARG) dp_nd_release(av[i]); }
    for (i = 0; i < NARG; i++) { dp_nd_release(arg[i]); dp_nd_release(grad[i]); }
    dp_nd_release(total);
    dp_sym_release(sum); dp_sym_release(grp);
}
static void test_random_graphs(void) {
    int k, t;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 0);
        g_rng = 99 + (uint64_t)k;
        for (t = 0; t < 30; t++) run_random_graph(e, t & 1);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* MLP arguments for batch rows: data, weights, label. */
static void mlp_args(dp_engine *e, int rows, dp_ndarray **arg, dp_ndarray **grad) {
    float *labels = (float *)malloc((size_t)rows * sizeof *labels);
    dp_shape ls = shp(1, rows, 0);
    int i;
    for (i = 0; i < rows; i++) labels[i] = (float)(i % 4);
    arg[0] = rand_array(e, shp(2, rows, 5), DP_FLOAT32, -1, 1);
    arg[1] = rand_array(e, shp(2, 12, 5), DP_FLOAT32, -0.5, 0.5);
    arg[2] = rand_array(e, shp(1, 12, 0), DP_FLOAT32, -0.1, 0.1);
    arg[3] = rand_array(e, shp(2, 4, 12), DP_FLOAT32, -0.5, 0.5);
    arg[4] = rand_array(e, shp(1, 4, 0), DP_FLOAT32, -0.1, 0.1);
    CHECK(dp_nd_from_host(e, &ls, DP_FLOAT32, CPU0, labels, &arg[5]) == DP_OK);
    free(labels);
    for (i = 0; i < 6; i++) grad[i] = NULL;
    for (i = 1; i < 5; i++) CHECK(dp_nd_zeros(e, dp_nd_shape(arg[i]), DP_FLOAT32, CPU0, &grad[i]) == DP_OK);
}
static void release_all(dp_ndarray **a, int n) { int i; for (i = 0; i < n; i++) dp_nd_release(a[i]); }

/* DP_REQ_ADD adds each backward's gradient; DP_REQ_NULL leaves the array alone */
static void test_grad_requests(void) {
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 0);
    dp_symbol *loss = mlp(12, 4);
    dp_ndarray *arg[6], *grad[6], *once[6], *w1 = NULL;
    dp_req req[6] = {DP_REQ_NULL, DP_REQ_ADD, DP_REQ_WRITE, DP_REQ_NULL, DP_REQ_WRITE, DP_REQ_NULL};
    dp_executor *ex = NULL, *ex1 = NULL;
    float w3[48], z[48];
    int i;
    mlp_args(e, 6, arg, grad);
    for (i = 0; i < 6; i++) once[i] = NULL;
    for (i = 1; i < 5; i++) CHECK(dp_nd_zeros(e, dp_nd_shape(arg[i]), DP_FLOAT32, CPU0, &once[i]) == DP_OK);
    CHECK(exec_bind(e, loss, CPU0, 6, arg, once, NULL, &ex1) == DP_OK);
    CHECK(exec_bind(e, loss, CPU0, 6, arg, grad, req, &ex) == DP_OK);
    CHECK(dp_exec_forward(ex1, 1) == DP_OK && dp_exec_backward(ex1, 0, NULL) == DP_OK);
    for (i = 0; i < 3; i++) { CHECK(dp_exec_forward(ex, 1) == DP_OK); CHECK(dp_exec_backward(ex, 0, NULL) == DP_OK); }
    {   /* w1's gradient added three times, b1's written */
        const char *k[1] = {"scalar"}, *v[1] = {"3"};
        CHECK(invoke_str(e, "mul_scalar", 1, &once[1], 0, k, v, 3.0, 1, &w1, NULL) == DP_OK);
        CHECK(max_diff(grad[1], w1) < 1e-5);
        CHECK(max_diff(grad[2], once[2]) < 1e-6);
        CHECK(max_diff(grad[4], once[4]) < 1e-6);
    }
    CHECK(dp_nd_read(grad[3], w3, sizeof w3, NULL) == DP_OK);
    memset(z, 0, sizeof z);
    CHECK(memcmp(w3, z, sizeof z) == 0);
    /* bad requests and arrays */
    {
        dp_executor *bad = NULL;
        dp_req inplace[6] = {DP_REQ_NULL, DP_REQ_INPLACE, DP_REQ_NULL, DP_REQ_NULL, DP_REQ_NULL, DP_REQ_NULL};
        CHECK(exec_bind(e, loss, CPU0, 6, arg, grad, inplace, &bad) == DP_ERROR_INVALID_ARGS && !bad);
        CHECK(exec_bind(e, loss, CPU0, 5, arg, grad, NULL, &bad) == DP_ERROR_INVALID_ARGS && !bad);
        grad[0] = grad[1];         /* a gradient of the wrong shape */
        CHECK(exec_bind(e, loss, CPU0, 6, arg, grad, NULL, &bad) == DP_ERROR_INVALID_ARGS && !bad);
        grad[0] = NULL;
    }
    dp_exec_destroy(ex); dp_exec_destroy(ex1);
    dp_nd_release(w1);
    release_all(arg, 6); release_all(grad, 6); release_all(once, 6);
    dp_sym_release(loss);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* a new batch size through dp_exec_rebind gives the same results as a bind */
static void test_rebind(void) {
    dp_engine *e = make_engine(DP_ENGINE_POOLED, 0);
    dp_symbol *loss = mlp(12, 4);
    dp_ndarray *arg[6], *grad[6], *arg2[6], *grad2[6];
    dp_executor *ex = NULL, *ex2 = NULL, *fresh = NULL;
    int i;
    mlp_args(e, 6, arg, grad);
    mlp_args(e, 11, arg2, grad2);
    CHECK(exec_bind(e, loss, CPU0, 6, arg, grad, NULL, &ex) == DP_OK);
    CHECK(dp_exec_rebind(ex, 6, arg2, grad2, &ex2) == DP_OK);
    CHECK(dp_exec_forward(ex, 1) == DP_OK && dp_exec_backward(ex, 0, NULL) == DP_OK);
    CHECK(dp_exec_forward(ex2, 1) == DP_OK && dp_exec_backward(ex2, 0, NULL) == DP_OK);
    {
        dp_ndarray *g3[6];
        for (i = 0; i < 6; i++) g3[i] = NULL;
        for (i = 1; i < 5; i++) CHECK(dp_nd_zeros(e, dp_nd_shape(arg2[i]), DP_FLOAT32, CPU0, &g3[i]) == DP_OK);
        CHECK(exec_bind(e, loss, CPU0, 6, arg2, g3, NULL, &fresh) == DP_OK);
        CHECK(dp_exec_forward(fresh, 1) == DP_OK && dp_exec_backward(fresh, 0, NULL) == DP_OK);
        for (i = 1; i < 5; i++) CHECK(max_diff(grad2[i], g3[i]) < 1e-6);
        CHECK(max_diff(dp_exec_output(ex2, 0), dp_exec_output(fresh, 0)) < 1e-6);
        release_all(g3, 6);
    }
    dp_exec_destroy(ex); dp_exec_destroy(ex2); dp_exec_destroy(fresh);
    release_all(arg, 6); release_all(grad, 6); release_all(arg2, 6); release_all(grad2, 6);
    dp_sym_release(loss);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* after the first step, a step allocates nothing from the engine's allocator */
static void test_steps_do_not_allocate(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], 1);
        dp_symbol *loss = mlp(12, 4);
        dp_ndarray *arg[6], *grad[6];
        dp_executor *ex = NULL;
        long before;
        int i;
        mlp_args(e, 8, arg, grad);
        CHECK(exec_bind(e, loss, CPU0, 6, arg, grad, NULL, &ex) == DP_OK);
        for (i = 0; i < 200; i++) { dp_exec_forward(ex, 1); dp_exec_backward(ex, 0, NULL); }
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        before = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
        for (i = 0; i < 20; i++) { CHECK(dp_exec_forward(ex, 1) == DP_OK); CHECK(dp_exec_backward(ex, 0, NULL) == DP_OK); }
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        if (__atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) != before) fprintf(stderr, "  %ld allocations in 20 steps\n", __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) - before);
        CHECK(__atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) == before);
        dp_exec_destroy(ex);
        release_all(arg, 6); release_all(grad, 6);
        dp_sym_release(loss);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    }
}
/* ---- fusion and steps without allocation on real nets ------------------------- */
static dp_engine *make_engine_n(dp_engine_type type, int workers, int counting) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = workers; d.ignore_env = 1;
    d.logger.func = getenv("SYM_LOG") ? dp_log_stderr : quiet_logger;
    if (counting) { d.allocator.alloc = failing_alloc; d.allocator.free = failing_free; }
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    return e;
}
/* a layer: op with its weight and bias made by the symbol (NULL inputs) */
static dp_symbol *layer(const char *op, const char *name, dp_symbol *x, int nkw, const char *const *k, const char *const *v) {
    dp_symbol *s = NULL, *in[5] = {x, NULL, NULL, NULL, NULL};
    CHECK(sym_op(op, name, !strcmp(op, "BatchNorm") ? 5 : !strcmp(op, "Pooling") ? 1 : 3, in, nkw, k, v, &s) == DP_OK);
    return s;
}
static dp_symbol *act(const char *name, dp_symbol *x, const char *type) {
    dp_symbol *s = op1("Activation", name, x, "act_type", type);
    dp_sym_release(x);
    return s;
}
static dp_symbol *fc(const char *name, dp_symbol *x, const char *hidden) {
    const char *k[1] = {"num_hidden"}, *v[1];
    dp_symbol *s;
    v[0] = hidden;
    s = layer("FullyConnected", name, x, 1, k, v);
    dp_sym_release(x);
    return s;
}
static dp_symbol *softmax_out(dp_symbol *x) {
    dp_symbol *s = NULL, *in[2] = {x, NULL};
    CHECK(sym_op("SoftmaxOutput", "softmax", 2, in, 0, NULL, NULL, &s) == DP_OK);
    dp_sym_release(x);
    return s;
}
/* the MLP of bench/train.c (relu), with a tanh layer when tanh is set */
static dp_symbol *fuse_mlp(const char *h1, const char *h2, int tanh_layer) {
    dp_symbol *x = NULL;
    CHECK(dp_sym_var("data", &x) == DP_OK);
    x = act("a1", fc("fc1", x, h1), "relu");
    x = act("a2", fc("fc2", x, h2), tanh_layer ? "tanh" : "relu");
    return softmax_out(fc("fc3", x, "10"));
}
/* LeNet (relu or tanh), BatchNorm after the second convolution when bn is
   set; conv_algo for the first convolution */
static dp_symbol *fuse_lenet(const char *type, int bn, const char *conv_algo) {
    const char *ck[3] = {"kernel", "num_filter", "algo"}, *c1[3] = {"(5, 5)", "20", NULL}, *c2[2] = {"(5, 5)", "50"};
    const char *pk[3] = {"kernel", "stride", "pool_type"}, *pv[3] = {"(2, 2)", "(2, 2)", "max"};
    dp_symbol *x = NULL, *t;
    c1[2] = conv_algo;
    CHECK(dp_sym_var("data", &x) == DP_OK);
    t = layer("Convolution", "conv1", x, conv_algo ? 3 : 2, ck, c1); dp_sym_release(x);
    x = act("a1", t, type);
    t = layer("Pooling", "pool1", x, 3, pk, pv); dp_sym_release(x); x = t;
    t = layer("Convolution", "conv2", x, 2, ck, c2); dp_sym_release(x);
    if (bn) { x = layer("BatchNorm", "bn", t, 0, NULL, NULL); dp_sym_release(t); t = x; }
    x = act("a2", t, type);
    t = layer("Pooling", "pool2", x, 3, pk, pv); dp_sym_release(x);
    x = op1("Flatten", "flat", t, NULL, NULL); dp_sym_release(t);
    x = act("a3", fc("fc1", x, "100"), type);
    return softmax_out(fc("fc2", x, "10"));
}
#define FNET_MAX 24
typedef struct fnet {
    int nargs, naux;
    dp_ndarray *args[FNET_MAX], *grads[FNET_MAX], *aux[FNET_MAX];
    dp_executor *ex;
} fnet;
/* the arguments of s for data shape ds (random, the same for the same
   g_rng; labels i % 10), gradients for all but data and the label, and
   the executor (fusion off with no_fusion; no gradients with !train) */
static void fnet_bind(dp_engine *e, dp_symbol *s, dp_shape ds, int train, int no_fusion, fnet *n) {
    const char *names[FNET_MAX], *known[1] = {"data"};
    dp_shape as[FNET_MAX], xs[FNET_MAX];
    dp_exec_desc d;
    int i;
    memset(n, 0, sizeof *n);
    n->nargs = dp_sym_list_arguments(s, names, FNET_MAX);
    n->naux = dp_sym_list_auxiliary_states(s, NULL, 0);
    CHECK(n->nargs > 0 && n->nargs <= FNET_MAX && n->naux >= 0 && n->naux <= FNET_MAX);
    CHECK(sym_infer(s, 1, known, &ds, NULL, as, NULL, NULL, NULL) == DP_OK);
    {
        dp_sym_infer_desc id;
        memset(&id, 0, sizeof id);
        id.num_known = 1; id.names = known; id.shapes = &ds; id.aux_shapes = xs;
        CHECK(dp_sym_infer(s, &id) == DP_OK);
    }
    for (i = 0; i < n->nargs; i++) {
        if (strstr(names[i], "label")) {
            int64_t r, rows = as[i].dims[0];
            float *l = (float *)malloc((size_t)rows * sizeof *l);
            for (r = 0; r < rows; r++) l[r] = (float)(r % 10);
            CHECK(dp_nd_from_host(e, &as[i], DP_FLOAT32, CPU0, l, &n->args[i]) == DP_OK);
            free(l);
            continue;
        }
        n->args[i] = rand_array(e, as[i], DP_FLOAT32, strcmp(names[i], "data") ? -0.2 : -1, strcmp(names[i], "data") ? 0.2 : 1);
        if (train && strcmp(names[i], "data")) CHECK(dp_nd_zeros(e, &as[i], DP_FLOAT32, CPU0, &n->grads[i]) == DP_OK);
    }
    for (i = 0; i < n->naux; i++) CHECK(dp_nd_full(e, &xs[i], DP_FLOAT32, CPU0, i & 1 ? 1.0 : 0.0, &n->aux[i]) == DP_OK);
    memset(&d, 0, sizeof d);
    d.ctx = CPU0; d.num_args = n->nargs; d.args = n->args; d.grads = train ? n->grads : NULL;
    d.num_aux = n->naux; d.aux = n->aux; d.no_fusion = no_fusion;
    CHECK(dp_exec_bind(e, s, &d, &n->ex) == DP_OK && n->ex);
}
static void fnet_free(fnet *n) {
    dp_exec_destroy(n->ex);
    release_all(n->args, n->nargs); release_all(n->grads, n->nargs); release_all(n->aux, n->naux);
}
/* the bytes of a float32 array, appended to buf at *len */
static void append_bytes(dp_ndarray *a, unsigned char *buf, size_t cap, size_t *len) {
    size_t b;
    if (!a) return;
    b = dp_nd_bytes(a);
    CHECK(*len + b <= cap);
    if (*len + b <= cap) CHECK(dp_nd_read(a, buf + *len, b, NULL) == DP_OK);
    *len += b;
}
/* Two training steps (forward, backward), then an inference forward:
   every output, gradient and auxiliary state, as bytes. */
static size_t fnet_results(dp_engine *e, dp_symbol *s, dp_shape ds, int train, int no_fusion, unsigned char *buf, size_t cap, int *fused) {
    fnet n;
    size_t len = 0;
    int i, step;
    dp_exec_memory m;
    memset(&m, 0, sizeof m);
    g_rng = 4242;
    fnet_bind(e, s, ds, train, no_fusion, &n);
    CHECK(dp_exec_memory_get(n.ex, &m) == DP_OK);
    *fused = m.num_fused;
    for (step = 0; step < 2 && train; step++) {
        CHECK(dp_exec_forward(n.ex, 1) == DP_OK);
        CHECK(dp_exec_backward(n.ex, 0, NULL) == DP_OK);
        append_bytes(dp_exec_output(n.ex, 0), buf, cap, &len);
        for (i = 0; i < n.nargs; i++) append_bytes(n.grads[i], buf, cap, &len);
    }
    CHECK(dp_exec_forward(n.ex, 0) == DP_OK);
    append_bytes(dp_exec_output(n.ex, 0), buf, cap, &len);
    for (i = 0; i < n.naux; i++) append_bytes(n.aux[i], buf, cap, &len);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    fnet_free(&n);
    return len;
}
/* Fused executors give the unfused results bitwise (outputs, every
   gradient, the moving statistics), on every engine kind with 1 and 2
   workers; relu (whose gradient reads its output) is fused in training,
   and every activation after a FullyConnected or Convolution in inference. */
static void test_fusion_bitwise(void) {
    static const struct { int lenet, bn, tanh_layer; const char *type, *algo; int rows, train_fused, infer_fused; } nets[] = {
        {0, 0, 0, "relu", NULL, 700, 2, 2},       /* 700 x 200: FullyConnected in parallel blocks */
        {0, 0, 1, "relu", NULL, 64, 1, 2},        /* tanh: fused in inference; in training once its gradient reads the output */
        {1, 0, 0, "relu", NULL, 6, 3, 3},
        {1, 1, 0, "relu", "direct", 5, 2, 2},     /* BatchNorm reads conv2's output: not fused */
        {1, 0, 0, "tanh", NULL, 4, 0, 3},
    };
    size_t cap = (size_t)64 << 20;
    unsigned char *ref = (unsigned char *)malloc(cap), *got = (unsigned char *)malloc(cap);
    int t, k, w, train;
    for (t = 0; t < (int)(sizeof nets / sizeof nets[0]); t++) {
        dp_symbol *s = nets[t].lenet ? fuse_lenet(nets[t].type, nets[t].bn, nets[t].algo) : fuse_mlp("200", "100", nets[t].tanh_layer);
        dp_shape ds = nets[t].lenet ? shp(4, nets[t].rows, 1) : shp(2, nets[t].rows, 64);
        if (nets[t].lenet) { ds.dims[2] = 28; ds.dims[3] = 28; }
        for (train = 0; train < 2; train++) {
            dp_engine *e = make_engine_n(DP_ENGINE_NAIVE, 1, 0);
            int fused = -1;
            size_t nref = fnet_results(e, s, ds, train, 1, ref, cap, &fused), n;
            CHECK(fused == 0);
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
            for (k = 0; k < 3; k++)
                for (w = 1; w <= 2; w++) {
                    e = make_engine_n(kinds[k], w, 0);
                    n = fnet_results(e, s, ds, train, 0, got, cap, &fused);
                    if (train) CHECK(fused >= nets[t].train_fused && fused <= nets[t].infer_fused);
                    else CHECK(fused == nets[t].infer_fused);
                    CHECK(n == nref && memcmp(ref, got, n) == 0);
                    if (n != nref || memcmp(ref, got, n)) fprintf(stderr, "  net %d, train %d, engine %d, %d workers: not bitwise the unfused results\n", t, train, k, w);
                    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
                }
        }
        dp_sym_release(s);
    }
    free(ref); free(got);
}
/* Fusion's memory figures: the pre-activation values leave the plan. */
static void test_fusion_memory(void) {
    dp_engine *e = make_engine_n(DP_ENGINE_PERDEVICE, 2, 0);
    dp_symbol *s = fuse_mlp("128", "64", 0);
    fnet a, b;
    dp_exec_memory ma, mb;
    dp_shape ds = shp(2, 64, 784);
    memset(&ma, 0, sizeof ma); memset(&mb, 0, sizeof mb);
    fnet_bind(e, s, ds, 1, 0, &a);
    fnet_bind(e, s, ds, 1, 1, &b);
    CHECK(dp_exec_memory_get(a.ex, &ma) == DP_OK && dp_exec_memory_get(b.ex, &mb) == DP_OK);
    CHECK(ma.num_fused == 2 && mb.num_fused == 0);
    CHECK(ma.num_nodes == mb.num_nodes - 2);
    CHECK(ma.unplanned_bytes == mb.unplanned_bytes - (64 * 128 + 64 * 64) * 4);
    CHECK(ma.planned_bytes <= mb.planned_bytes);
    fnet_free(&a); fnet_free(&b);
    dp_sym_release(s);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* After bind and one warm-up step, training steps (forward, backward,
   momentum-SGD updates through dp_optimizer_step, whose invocations take
   the records earlier ones gave back) and inference forwards of the MLP
   and of LeNet (with BatchNorm) allocate nothing from the engine's
   allocator, on every engine kind with 2 workers, the kernels split over
   the range loop (the sizes are over its threshold), in a loop that waits
   for each step as training loops do (steps pushed ahead without waiting
   grow the engine's queues to the backlog's depth first). The GEMM's
   workspaces (FullyConnected's gradients, the convolutions, LeNet's conv1
   weight gradient staged on the narrow path) are the engine's too, so the
   count covers them: the engine holds them once warm. */
static void test_train_steps_do_not_allocate(void) {
    int k, t;
    for (t = 0; t < 2; t++)
        for (k = 0; k < 3; k++) {
            dp_engine *e = make_engine_n(kinds[k], 2, 1);
            dp_symbol *s = t ? fuse_lenet("tanh", 1, NULL) : fuse_mlp("128", "64", 0);
            dp_shape ds = t ? shp(4, 16, 1) : shp(2, 64, 784);
            dp_optimizer *opt[FNET_MAX];
            dp_optimizer_desc od;
            fnet n;
            long before = 0, after;
            int i, step;
            if (t) { ds.dims[2] = 28; ds.dims[3] = 28; }
            g_rng = 7;
            fnet_bind(e, s, ds, 0, 0, &n);               /* the arrays; rebound below with the optimizers' gradients */
            dp_exec_destroy(n.ex); n.ex = NULL;
            memset(&od, 0, sizeof od);
            od.update = "sgd_mom_update";
            od.params[0].name = "lr"; od.params[0].f = 0.01; od.params[1].name = "momentum"; od.params[1].f = 0.9;
            od.params[2].name = "wd"; od.params[2].f = 1e-4;
            for (i = 0; i < n.nargs; i++) {
                opt[i] = NULL;
                if (i == 0 || i == n.nargs - 1) continue;  /* data, label */
                CHECK(dp_optimizer_create(n.args[i], &od, &opt[i]) == DP_OK);
                n.grads[i] = dp_nd_retain(dp_nd_grad(n.args[i]));
            }
            {
                dp_exec_desc d;
                memset(&d, 0, sizeof d);
                d.ctx = CPU0; d.num_args = n.nargs; d.args = n.args; d.grads = n.grads; d.num_aux = n.naux; d.aux = n.aux;
                CHECK(dp_exec_bind(e, s, &d, &n.ex) == DP_OK);
            }
            for (step = 0; step < 6; step++) {           /* step 0 warms up; a loop that waits for each step */
                if (step == 1) before = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
                CHECK(dp_exec_forward(n.ex, 1) == DP_OK);
                CHECK(dp_exec_backward(n.ex, 0, NULL) == DP_OK);
                for (i = 0; i < n.nargs; i++) if (opt[i]) CHECK(dp_optimizer_step(opt[i]) == DP_OK);
                CHECK(dp_exec_forward(n.ex, 0) == DP_OK);
                CHECK(dp_wait_all(e, NULL) == DP_OK);
            }
            after = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
            if (after != before) fprintf(stderr, "  %s on engine %d: %ld allocations in 5 steps\n", t ? "LeNet" : "MLP", k, after - before);
            CHECK(after == before);
            {
                dp__nd_state *st = dp__nd_state_of(e);
                CHECK(st && st->num_gemm_ws >= 1);
            }
            for (i = 0; i < n.nargs; i++) dp_optimizer_destroy(opt[i]);
            fnet_free(&n);
            dp_sym_release(s);
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
            CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
        }
}
/* the planner's plan and a second, differently reusing plan: less memory
   than one buffer per entry, the same results */
static void test_reusing_plan(void) {
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 0);
    dp_symbol *loss = mlp(12, 4);
    dp_ndarray *arg[6], *grad[6], *grad2[6];
    dp_executor *ex = NULL, *ex2 = NULL;
    dp_exec_memory m1, m2;
    memset(&m1, 0, sizeof m1); memset(&m2, 0, sizeof m2);
    int i;
    mlp_args(e, 32, arg, grad);
    for (i = 0; i < 6; i++) grad2[i] = NULL;
    for (i = 1; i < 5; i++) CHECK(dp_nd_zeros(e, dp_nd_shape(arg[i]), DP_FLOAT32, CPU0, &grad2[i]) == DP_OK);
    CHECK(exec_bind(e, loss, CPU0, 6, arg, grad, NULL, &ex) == DP_OK);
    dpn__exec_planner = reusing_planner;
    CHECK(exec_bind(e, loss, CPU0, 6, arg, grad2, NULL, &ex2) == DP_OK);
    dpn__exec_planner = NULL;
    CHECK(dp_exec_memory_get(ex, &m1) == DP_OK && dp_exec_memory_get(ex2, &m2) == DP_OK);
    CHECK(m1.planned_bytes < m1.unplanned_bytes && m1.unplanned_bytes > 0);
    CHECK(m2.unplanned_bytes == m1.unplanned_bytes && m2.planned_bytes < m2.unplanned_bytes);
    CHECK(m1.num_nodes == 3 + 4 && m1.num_fused == 1);   /* fc1 and relu1 in one operation */
    for (i = 0; i < 5; i++) {
        dp_exec_forward(ex, 1); dp_exec_backward(ex, 0, NULL);
        dp_exec_forward(ex2, 1); dp_exec_backward(ex2, 0, NULL);
    }
    for (i = 1; i < 5; i++) CHECK(max_diff(grad2[i], grad[i]) == 0);
    CHECK(max_diff(dp_exec_output(ex2, 0), dp_exec_output(ex, 0)) == 0);
    dp_exec_destroy(ex); dp_exec_destroy(ex2);
    release_all(arg, 6); release_all(grad, 6); release_all(grad2, 6);
    dp_sym_release(loss);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* an operator without a gradient between the loss and a parameter */
static void test_no_gradient_operator(void) {
    dp_engine *e = make_engine(DP_ENGINE_NAIVE, 0);
    dp_symbol *x = NULL, *oh, *s;
    dp_ndarray *a = NULL, *g = NULL;
    dp_executor *ex = NULL;
    dp_shape sh = shp(1, 4, 0);
    CHECK(dp_sym_var("x", &x) == DP_OK);
    oh = op1("one_hot", "oh", x, "depth", "3");
    s = op1("sum", "s", oh, "axis", "()");
    CHECK(dp_nd_zeros(e, &sh, DP_FLOAT32, CPU0, &a) == DP_OK);
    CHECK(dp_nd_zeros(e, &sh, DP_FLOAT32, CPU0, &g) == DP_OK);
    CHECK(exec_bind(e, s, CPU0, 1, &a, &g, NULL, &ex) == DP_ERROR_INVALID_ARGS && !ex);
    CHECK(exec_bind(e, s, CPU0, 1, &a, NULL, NULL, &ex) == DP_OK);   /* forward only is fine */
    CHECK(dp_exec_backward(ex, 0, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_exec_forward(ex, 0) == DP_OK);
    {
        float v = -1;
        CHECK(dp_nd_read(dp_exec_output(ex, 0), &v, sizeof v, NULL) == DP_OK && v == 4);
    }
    dp_exec_destroy(ex);
    dp_nd_release(a); dp_nd_release(g);
    dp_sym_release(x); dp_sym_release(oh); dp_sym_release(s);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- MXNet's symbol JSON and DOT ------------------------------------------------ */
static char *slurp(FILE *f) {
    long n;
    char *t;
    fflush(f);
    n = ftell(f);
    rewind(f);
    t = (char *)calloc((size_t)n + 1, 1);
    if (fread(t, 1, (size_t)n, f) != (size_t)n) CHECK(0);
    return t;
}
static void test_json_round_trip(void) {
    dp_symbol *loss = mlp(12, 4), *back = NULL, *again = NULL;
    FILE *f = test_tmpfile();
    char *text, *text2, path[512];
    const char *a1[8], *a2[8];
    int n1, n2, i;
    CHECK(dp_sym_save_json(loss, f) == DP_OK);
    text = slurp(f);
    fclose(f);
    CHECK(strstr(text, "\"nodes\"") && strstr(text, "\"arg_nodes\"") && strstr(text, "\"heads\"") && strstr(text, "\"node_row_ptr\""));
    CHECK(strstr(text, "\"op\": \"null\"") && strstr(text, "\"num_hidden\": \"12\"") && strstr(text, "[0, 0, 0]"));
    CHECK(dp_sym_load_json(text, &back) == DP_OK);
    n1 = dp_sym_list_arguments(loss, a1, 8); n2 = dp_sym_list_arguments(back, a2, 8);
    CHECK(n1 == 6 && n2 == 6);
    for (i = 0; i < n1 && i < n2; i++) CHECK(!strcmp(a1[i], a2[i]));
    snprintf(path, sizeof path, "%s/depeng_symbol_test.json", test_temp_dir());
    CHECK(dp_sym_save(back, path) == DP_OK);
    CHECK(dp_sym_load(path, &again) == DP_OK);
    f = test_tmpfile();
    CHECK(dp_sym_save_json(again, f) == DP_OK);
    text2 = slurp(f);
    fclose(f);
    CHECK(strcmp(text, text2) == 0);             /* the same file again */
    remove(path);
    dp_sym_release(again);
    CHECK(dp_sym_load(path, &again) == DP_ERROR_IO && !again);
    free(text); free(text2);
    dp_sym_release(loss); dp_sym_release(back); dp_sym_release(again);
}
/* a file as MXNet writes it: its operator names, attrs, hints, versions */
static const char *mxnet_json =
    "{\n  \"nodes\": [\n"
    "    {\"op\": \"null\", \"name\": \"data\", \"inputs\": []},\n"
    "    {\"op\": \"Flatten\", \"name\": \"flat\", \"inputs\": [[0, 0, 0]]},\n"
    "    {\"op\": \"null\", \"name\": \"fc1_weight\", \"attrs\": {\"__lr_mult__\": \"1.0\"}, \"inputs\": []},\n"
    "    {\"op\": \"null\", \"name\": \"fc1_bias\", \"inputs\": []},\n"
    "    {\"op\": \"FullyConnected\", \"name\": \"fc1\", \"attrs\": {\"flatten\": \"True\", \"no_bias\": \"False\", \"num_hidden\": \"8\"}, \"inputs\": [[1, 0, 0], [2, 0, 0], [3, 0, 0]]},\n"
    "    {\"op\": \"Activation\", \"name\": \"act1\", \"attrs\": {\"act_type\": \"tanh\"}, \"inputs\": [[4, 0, 0]]},\n"
    "    {\"op\": \"_mul_scalar\", \"name\": \"half\", \"attrs\": {\"scalar\": \"0.5\"}, \"inputs\": [[5, 0, 0]]},\n"
    "    {\"op\": \"null\", \"name\": \"softmax_label\", \"inputs\": []},\n"
    "    {\"op\": \"SoftmaxOutput\", \"name\": \"softmax\", \"param\": {\"normalization\": \"batch\"}, \"inputs\": [[6, 0, 0], [7, 0, 0]]}\n"
    "  ],\n  \"arg_nodes\": [0, 2, 3, 7],\n  \"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],\n"
    "  \"heads\": [[8, 0, 0]],\n  \"attrs\": {\"mxnet_version\": [\"int\", 10600]}\n}\n";
static void test_json_mxnet_names(void) {
    dp_symbol *s = NULL, *bad = NULL;
    const char *names[8], *known[1] = {"data"};
    dp_shape ds, args[4], outs[1];
    memset(&ds, 0, sizeof ds);
    ds.ndim = 3; ds.dims[0] = 4; ds.dims[1] = 2; ds.dims[2] = 3;
    CHECK(dp_sym_load_json(mxnet_json, &s) == DP_OK);
    CHECK(dp_sym_list_arguments(s, names, 8) == 4);
    CHECK(!strcmp(names[3], "softmax_label"));
    CHECK(sym_infer(s, 1, known, &ds, NULL, args, NULL, outs, NULL) == DP_OK);
    CHECK(args[1].ndim == 2 && args[1].dims[0] == 8 && args[1].dims[1] == 6);       /* the weight after Flatten */
    CHECK(outs[0].ndim == 2 && outs[0].dims[0] == 4 && outs[0].dims[1] == 8);
    {   /* malformed files: a clear error, never a crash */
        static const char *bad_files[] = {
            "", "{", "[]", "{\"nodes\": [], \"heads\": []}", "{\"nodes\": [{\"op\": \"null\"}], \"heads\": [[0, 0, 0]]}",
            "{\"nodes\": [{\"op\": \"relu\", \"name\": \"r\", \"inputs\": [[0, 0, 0]]}], \"heads\": [[0, 0, 0]]}",
            "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\"}], \"heads\": [[1, 0, 0]]}",
            "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\"}], \"heads\": [[0, 1e300, 0]]}",
            "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\"}], \"heads\": [[-1e300, 0, 0]]}",
            "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\"}], \"heads\": [[0, 0, 0]]} trailing",
            "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\\u00\"}], \"heads\": [[0, 0, 0]]}",
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        };
        size_t i;
        for (i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++) {
            dp_result r = dp_sym_load_json(bad_files[i], &bad);
            if (r != DP_ERROR_FORMAT) fprintf(stderr, "  file %d: %d\n", (int)i, (int)r);
            CHECK(r == DP_ERROR_FORMAT && !bad);
        }
        CHECK(dp_sym_load_json("{\"nodes\": [{\"op\": \"NoSuch\", \"name\": \"q\", \"inputs\": []}], \"heads\": [[0, 0, 0]]}", &bad) == DP_ERROR_INVALID_ARGS && !bad);
    }
    dp_sym_release(s);
}
/* Every attribute a file gives is kept and written back, in MXNet 1.x's
   form (one "attrs" object; no "param" / "attr"), with MXNet's operator
   names; saving what was loaded gives the same text again. */
static const char *attrs_json =
    "{\"nodes\": ["
    "{\"op\": \"null\", \"name\": \"data\", \"attrs\": {\"__shape__\": \"(2, 1, 6, 6)\"}, \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"c_weight\", \"param\": {}, \"attr\": {\"__lr_mult__\": \"2\", \"__init__\": \"[\\\"xavier\\\", {\\\"magnitude\\\": 2}]\"}, \"inputs\": []},"
    "{\"op\": \"Convolution\", \"name\": \"c\", \"param\": {\"kernel\": \"(3, 3)\", \"num_filter\": \"2\", \"no_bias\": \"True\", \"cudnn_tune\": \"off\"},"
    " \"attr\": {\"ctx_group\": \"dev1\", \"__wd_mult__\": \"0\"}, \"inputs\": [[0, 0, 0], [1, 0, 0]]},"
    "{\"op\": \"null\", \"name\": \"bn_gamma\", \"attrs\": {\"__lr_mult__\": \"0.5\"}, \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"bn_beta\", \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"bn_moving_mean\", \"attrs\": {\"__init__\": \"[\\\"zero\\\", {}]\"}, \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"bn_moving_var\", \"attrs\": {\"__init__\": \"[\\\"one\\\", {}]\"}, \"inputs\": []},"
    "{\"op\": \"BatchNorm\", \"name\": \"bn\", \"attrs\": {\"fix_gamma\": \"False\", \"eps\": \"0.001\", \"__profiler_scope__\": \"net:\"},"
    " \"inputs\": [[2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 1], [6, 0, 1]]},"
    "{\"op\": \"Activation\", \"name\": \"r\", \"attrs\": {\"act_type\": \"relu\"}, \"inputs\": [[7, 0, 0]]},"
    "{\"op\": \"Pooling\", \"name\": \"p\", \"attrs\": {\"kernel\": \"(2, 2)\", \"pool_type\": \"max\", \"stride\": \"(2, 2)\"}, \"inputs\": [[8, 0, 0]]},"
    "{\"op\": \"Flatten\", \"name\": \"f\", \"inputs\": [[9, 0, 0]]},"
    "{\"op\": \"null\", \"name\": \"fc_weight\", \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"fc_bias\", \"inputs\": []},"
    "{\"op\": \"FullyConnected\", \"name\": \"fc\", \"attrs\": {\"num_hidden\": \"3\", \"flatten\": \"True\", \"no_bias\": \"False\"}, \"inputs\": [[10, 0, 0], [11, 0, 0], [12, 0, 0]]},"
    "{\"op\": \"null\", \"name\": \"softmax_label\", \"inputs\": []},"
    "{\"op\": \"SoftmaxOutput\", \"name\": \"softmax\", \"attrs\": {\"normalization\": \"batch\"}, \"inputs\": [[13, 0, 0], [14, 0, 0]]}"
    "], \"arg_nodes\": [0, 1, 3, 4, 5, 6, 11, 12, 14], \"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],"
    " \"heads\": [[15, 0, 0]], \"attrs\": {\"mxnet_version\": [\"int\", 10600]}}";
static char *saved_text(const dp_symbol *s) {
    FILE *f = test_tmpfile();
    char *t;
    CHECK(dp_sym_save_json(s, f) == DP_OK);
    t = slurp(f);
    fclose(f);
    return t;
}
/* the "op" values of a JSON text, in order, joined by spaces */
static void op_sequence(const char *t, char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    while ((t = strstr(t, "\"op\"")) != NULL) {
        const char *q = strchr(t + 4, '"'), *e = q ? strchr(q + 1, '"') : NULL;
        if (!e) break;
        n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%.*s ", (int)(e - q - 1), q + 1);
        t = e;
    }
}
static void test_json_keeps_attributes(void) {
    dp_symbol *s = NULL, *back = NULL, *v[3] = {NULL, NULL, NULL}, *n1 = NULL, *n2 = NULL, *n3 = NULL, *n4 = NULL, *n5 = NULL;
    char *t1 = NULL, *t2 = NULL, seq1[1024], seq2[1024];
    static const char *const want[] = {
        "\"__shape__\": \"(2, 1, 6, 6)\"", "\"__lr_mult__\": \"2\"", "\"__init__\": \"[\\\"xavier\\\", {\\\"magnitude\\\": 2}]\"",
        "\"cudnn_tune\": \"off\"", "\"__ctx_group__\": \"dev1\"", "\"__wd_mult__\": \"0\"", "\"__profiler_scope__\": \"net:\"",
        "\"__lr_mult__\": \"0.5\"", "\"__init__\": \"[\\\"one\\\", {}]\"", "\"op\": \"Activation\"", "\"act_type\": \"relu\"",
        "\"op\": \"Flatten\"", "\"op\": \"Convolution\"", "\"op\": \"BatchNorm\"", "\"op\": \"Pooling\"", "\"op\": \"FullyConnected\"",
        "\"op\": \"SoftmaxOutput\"", "\"flatten\": \"True\"", "\"no_bias\": \"False\"", "\"arg_nodes\"", "\"node_row_ptr\"", "\"heads\"",
    };
    size_t i;
    CHECK(dp_sym_load_json(attrs_json, &s) == DP_OK);
    if (!s) return;
    t1 = saved_text(s);
    for (i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(t1, want[i])) { fprintf(stderr, "  saved JSON lacks %s\n", want[i]); CHECK(0); }
    CHECK(!strstr(t1, "\"param\"") && !strstr(t1, "\"attr\"") && !strstr(t1, "num_args") && !strstr(t1, "\"op\": \"relu\""));
    CHECK(dp_sym_load_json(t1, &back) == DP_OK);
    if (back) {
        t2 = saved_text(back);
        CHECK(strcmp(t1, t2) == 0);                           /* load(save(x)) saves the same */
        CHECK(dp_sym_var_attr(back, "c_weight", "__lr_mult__") && !strcmp(dp_sym_var_attr(back, "c_weight", "__lr_mult__"), "2"));
        CHECK(dp_sym_list_auxiliary_states(back, NULL, 0) == 2 && dp_sym_list_arguments(back, NULL, 0) == 7);
        free(t2); t2 = NULL;
    }
    dp_sym_release(back); back = NULL;
    dp_sym_release(s); s = NULL;
    free(t1); t1 = NULL;
    /* made with depeng's names: written with MXNet's */
    {
        const char *kc[3] = {"kernel", "num_filter", "num_args"}, *vc[3] = {"(1, 1)", "2", "2"};
        const char *ks[1] = {"scalar"}, *vs[1] = {"1.5"}, *kr[1] = {"shape"}, *vr[1] = {"(-1,)"};
        CHECK(dp_sym_var("x", &v[0]) == DP_OK);
        CHECK(sym_op("Convolution", "conv", 2, v, 3, kc, vc, &n1) == DP_OK);
        CHECK(sym_op("relu", "act", 1, &n1, 0, NULL, NULL, &n2) == DP_OK);
        v[1] = n2; v[2] = n1;
        CHECK(sym_op("add", "sum2", 2, v + 1, 0, NULL, NULL, &n3) == DP_OK);
        CHECK(sym_op("add_scalar", "plus", 1, &n3, 1, ks, vs, &n4) == DP_OK);
        CHECK(sym_op("reshape", "flat", 1, &n4, 1, kr, vr, &n5) == DP_OK);
        if (n5) {
            t1 = saved_text(n5);
            CHECK(strstr(t1, "\"op\": \"Activation\"") && strstr(t1, "\"act_type\": \"relu\"") && strstr(t1, "\"op\": \"elemwise_add\""));
            CHECK(strstr(t1, "\"op\": \"_plus_scalar\"") && strstr(t1, "\"scalar\": \"1.5\"") && strstr(t1, "\"op\": \"Reshape\""));
            CHECK(strstr(t1, "\"no_bias\": \"True\"") && !strstr(t1, "num_args"));
            CHECK(dp_sym_load_json(t1, &back) == DP_OK && back && dp_sym_list_arguments(back, NULL, 0) == 2);
            if (back) { t2 = saved_text(back); CHECK(strcmp(t1, t2) == 0); free(t2); t2 = NULL; }
            dp_sym_release(back); back = NULL;
            free(t1); t1 = NULL;
        }
        dp_sym_release(v[0]); dp_sym_release(n1); dp_sym_release(n2); dp_sym_release(n3); dp_sym_release(n4); dp_sym_release(n5);
    }
    /* the repository's LeNet file: the same operators in the same order,
       the same attributes, and a fixed point */
    {
        FILE *f = fopen("examples/lenet-symbol.json", "rb");
        char *orig;
        CHECK(f != NULL);
        if (!f) return;
        fseek(f, 0, SEEK_END);
        orig = slurp(f);
        fclose(f);
        CHECK(dp_sym_load("examples/lenet-symbol.json", &s) == DP_OK);
        if (s) {
            t1 = saved_text(s);
            op_sequence(orig, seq1, sizeof seq1); op_sequence(t1, seq2, sizeof seq2);
            if (strcmp(seq1, seq2)) { fprintf(stderr, "  ops %s\n  saved %s\n", seq1, seq2); CHECK(0); }
            CHECK(strstr(t1, "\"num_filter\": \"50\"") && strstr(t1, "\"act_type\": \"tanh\"") && !strstr(t1, "num_args"));
            CHECK(dp_sym_load_json(t1, &back) == DP_OK);
            if (back) { t2 = saved_text(back); CHECK(strcmp(t1, t2) == 0); free(t2); }
            dp_sym_release(back);
            free(t1);
        }
        dp_sym_release(s);
        free(orig);
    }
}
/* MXNet's FullyConnected no_bias and flatten false, and its capitalised
   Cast, in a file: loaded, inferred, run, and written back as given. */
static const char *fc_json =
    "{\"nodes\": ["
    "{\"op\": \"null\", \"name\": \"data\", \"inputs\": []},"
    "{\"op\": \"Cast\", \"name\": \"c64\", \"attrs\": {\"dtype\": \"float64\"}, \"inputs\": [[0, 0, 0]]},"
    "{\"op\": \"null\", \"name\": \"fc_weight\", \"inputs\": []},"
    "{\"op\": \"FullyConnected\", \"name\": \"fc\", \"attrs\": {\"num_hidden\": \"2\", \"no_bias\": \"True\", \"flatten\": \"False\"}, \"inputs\": [[1, 0, 0], [2, 0, 0]]}"
    "], \"arg_nodes\": [0, 2], \"node_row_ptr\": [0, 1, 2, 3, 4], \"heads\": [[3, 0, 0]], \"attrs\": {\"mxnet_version\": [\"int\", 10600]}}";
static void test_json_fc_and_cast(void) {
    dp_engine *e = make_engine(DP_ENGINE_POOLED, 0);
    dp_symbol *s = NULL;
    const char *names[4], *known[1] = {"data"};
    dp_shape ds = {3, {2, 3, 4}}, as[2], os[1];
    dp_dtype at[2], ot[1];
    CHECK(dp_sym_load_json(fc_json, &s) == DP_OK);
    if (!s) { dp_engine_destroy(e, NULL); return; }
    CHECK(dp_sym_list_arguments(s, names, 4) == 2 && !strcmp(names[1], "fc_weight"));    /* no bias */
    CHECK(sym_infer(s, 1, known, &ds, NULL, as, at, os, ot) == DP_OK);
    CHECK(as[1].ndim == 2 && as[1].dims[0] == 2 && as[1].dims[1] == 4);                 /* over the last axis */
    CHECK(os[0].ndim == 3 && os[0].dims[0] == 2 && os[0].dims[1] == 3 && os[0].dims[2] == 2 && ot[0] == DP_FLOAT64);
    {
        float x[24], w[8];
        double y[12];
        dp_ndarray *args[2] = {NULL, NULL};
        dp_executor *ex = NULL;
        int i, j, ok = 1;
        for (i = 0; i < 24; i++) x[i] = (float)(i % 7) - 3;
        for (i = 0; i < 8; i++) w[i] = (float)(i + 1) / 4;
        CHECK(dp_nd_from_host(e, &ds, DP_FLOAT32, CPU0, x, &args[0]) == DP_OK);
        CHECK(dp_nd_from_host(e, &as[1], DP_FLOAT32, CPU0, w, &args[1]) == DP_OK);
        /* the weight is float32 while the Cast makes float64 data: refused */
        CHECK(exec_bind(e, s, CPU0, 2, args, NULL, NULL, &ex) != DP_OK && !ex);
        dp_nd_release(args[1]); args[1] = NULL;
        {
            double wd[8];
            for (i = 0; i < 8; i++) wd[i] = w[i];
            CHECK(dp_nd_from_host(e, &as[1], DP_FLOAT64, CPU0, wd, &args[1]) == DP_OK);
        }
        CHECK(exec_bind(e, s, CPU0, 2, args, NULL, NULL, &ex) == DP_OK);
        if (ex) {
            CHECK(dp_exec_forward(ex, 0) == DP_OK && dp_nd_read(dp_exec_output(ex, 0), y, sizeof y, NULL) == DP_OK);
            for (i = 0; i < 6; i++)
                for (j = 0; j < 2; j++) {
                    double want = 0;
                    int k;
                    for (k = 0; k < 4; k++) want += (double)x[i * 4 + k] * w[j * 4 + k];
                    ok &= y[i * 2 + j] == want;
                }
            CHECK(ok);
            dp_exec_destroy(ex);
        }
        dp_nd_release(args[0]); dp_nd_release(args[1]);
    }
    {
        FILE *f = test_tmpfile();
        char *t;
        CHECK(dp_sym_save_json(s, f) == DP_OK);
        t = slurp(f);
        fclose(f);
        CHECK(strstr(t, "\"op\": \"Cast\"") && strstr(t, "\"no_bias\": \"True\"") && strstr(t, "\"flatten\": \"False\"") && !strstr(t, "num_args"));
        free(t);
    }
    dp_sym_release(s);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* damaged files: bytes changed, cut short or doubled; each load either
   works or fails with an error, never crashes (ASan and UBSan run it) */
static void test_json_damaged(void) {
    dp_symbol *loss = mlp(6, 3);
    FILE *f = test_tmpfile();
    char *saved, *texts[2];
    int t, i;
    CHECK(dp_sym_save_json(loss, f) == DP_OK);
    saved = slurp(f);
    fclose(f);
    texts[0] = saved; texts[1] = (char *)mxnet_json;
    g_rng = 4242;
    for (t = 0; t < 2; t++) {
        size_t n = strlen(texts[t]);
        char *buf = (char *)malloc(2 * n + 1);
        for (i = 0; i < 1500; i++) {
            dp_symbol *s = NULL;
            dp_result r;
            int edits = 1 + (int)(urand() * 4), j;
            static const char pieces[] = "{}[]\",:0123456789e-.\\u \"nullop";
            memcpy(buf, texts[t], n + 1);
            for (j = 0; j < edits; j++) {
                size_t at = (size_t)(urand() * (double)n);
                double kind = urand();
                if (kind < 0.6) buf[at] = pieces[(int)(urand() * (sizeof pieces - 1))];
                else if (kind < 0.8) buf[at] = 0;                              /* cut short */
                else { memmove(buf + at + 1, buf + at, strlen(buf + at) + 1); buf[at] = buf[at + 1]; }
                if (strlen(buf) > n) buf[n] = 0;
            }
            r = dp_sym_load_json(buf, &s);
            CHECK((r == DP_OK) == (s != NULL));
            if (s) {   /* what loads also infers or fails cleanly */
                const char *known[1] = {"data"};
                dp_shape ds = shp(2, 4, 5);
                sym_infer(s, 1, known, &ds, NULL, NULL, NULL, NULL, NULL);
            }
            dp_sym_release(s);
        }
        free(buf);
    }
    free(saved);
    dp_sym_release(loss);
}

static void test_dot(void) {
    dp_symbol *loss = mlp(12, 4);
    FILE *f = test_tmpfile();
    char *text;
    CHECK(dp_sym_write_dot(loss, f) == DP_OK);
    text = slurp(f);
    fclose(f);
    CHECK(!strncmp(text, "digraph symbol {", 16) && text[strlen(text) - 2] == '}');
    CHECK(strstr(text, "fc1\\nFullyConnected\\nnum_hidden=12") != NULL);
    CHECK(strstr(text, "shape=ellipse") != NULL && strstr(text, " -> ") != NULL);
    free(text);
    dp_sym_release(loss);
}
/* SoftmaxOutput's gradient is softmax_cross_entropy's (normalization null),
   or that divided by the rows (batch); its output is the softmax */
static void test_softmax_output(void) {
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 0);
    dp_symbol *x = NULL, *y = NULL, *so, *sb, *in[2];
    dp_ndarray *arg[2], *g[2], *gb[2], *xa, *loss = NULL, *pair[2], *sm = NULL;
    dp_executor *ex = NULL, *exb = NULL;
    const char *k[1] = {"normalization"}, *v[1] = {"batch"}, *ak[1] = {"axis"}, *av[1] = {"-1"};
    float labels[5] = {0, 2, 1, 2, 0};
    dp_shape ls = shp(1, 5, 0);
    CHECK(dp_sym_var("x", &x) == DP_OK && dp_sym_var("y", &y) == DP_OK);
    in[0] = x; in[1] = y;
    CHECK(sym_op("SoftmaxOutput", "so", 2, in, 0, NULL, NULL, &so) == DP_OK);
    CHECK(sym_op("SoftmaxOutput", "sb", 2, in, 1, k, v, &sb) == DP_OK);
    arg[0] = xa = rand_array(e, shp(2, 5, 3), DP_FLOAT64, -2, 2);
    CHECK(dp_nd_from_host(e, &ls, DP_FLOAT32, CPU0, labels, &arg[1]) == DP_OK);
    {   /* the label's dtype differs from the data's: convert */
        dp_ndarray *l64 = NULL;
        dp_shape s5 = shp(1, 5, 0);
        double l[5] = {0, 2, 1, 2, 0};
        CHECK(dp_nd_from_host(e, &s5, DP_FLOAT64, CPU0, l, &l64) == DP_OK);
        dp_nd_release(arg[1]); arg[1] = l64;
    }
    CHECK(dp_nd_zeros(e, dp_nd_shape(xa), DP_FLOAT64, CPU0, &g[0]) == DP_OK); g[1] = NULL;
    CHECK(dp_nd_zeros(e, dp_nd_shape(xa), DP_FLOAT64, CPU0, &gb[0]) == DP_OK); gb[1] = NULL;
    CHECK(exec_bind(e, so, CPU0, 2, arg, g, NULL, &ex) == DP_OK);
    CHECK(exec_bind(e, sb, CPU0, 2, arg, gb, NULL, &exb) == DP_OK);
    CHECK(dp_exec_forward(ex, 1) == DP_OK && dp_exec_backward(ex, 0, NULL) == DP_OK);
    CHECK(dp_exec_forward(exb, 1) == DP_OK && dp_exec_backward(exb, 0, NULL) == DP_OK);
    CHECK(dp_nd_attach_grad(xa, DP_REQ_WRITE) == DP_OK);
    dp_autograd_begin();
    pair[0] = xa; pair[1] = arg[1];
    CHECK(invoke_str(e, "softmax_cross_entropy", 2, pair, 0, NULL, NULL, 0, 1, &loss, NULL) == DP_OK);
    dp_autograd_end();
    CHECK(dp_autograd_backward(loss, NULL, 0) == DP_OK);
    CHECK(invoke_str(e, "softmax", 1, &xa, 1, ak, av, 0, 1, &sm, NULL) == DP_OK);
    CHECK(max_diff(dp_exec_output(ex, 0), sm) < 1e-12);
    CHECK(max_diff(g[0], dp_nd_grad(xa)) < 1e-12);
    {
        dp_ndarray *scaled = NULL;
        const char *sk[1] = {"scalar"}, *sv[1] = {"0.2"};
        CHECK(invoke_str(e, "mul_scalar", 1, &g[0], 0, sk, sv, 0.2, 1, &scaled, NULL) == DP_OK);
        CHECK(max_diff(gb[0], scaled) < 1e-12);
        dp_nd_release(scaled);
    }
    (void)labels;
    dp_exec_destroy(ex); dp_exec_destroy(exb);
    release_all(arg, 2); release_all(g, 2); release_all(gb, 2);
    dp_nd_release(loss); dp_nd_release(sm);
    dp_sym_release(x); dp_sym_release(y); dp_sym_release(so); dp_sym_release(sb);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* every allocation of a bind failing in turn: DP_ERROR_OUT_OF_MEMORY,
   nothing leaked, and the engine destroys cleanly */
static void test_bind_out_of_memory(void) {
    long k;
    int done = 0;
    for (k = 1; k < 5000 && !done; k++) {
        dp_engine *e = make_engine(DP_ENGINE_NAIVE, 1);
        dp_symbol *loss = mlp(12, 4);
        dp_ndarray *arg[6], *grad[6];
        dp_executor *ex = NULL;
        dp_result r;
        mlp_args(e, 8, arg, grad);
        __atomic_store_n(&g_alloc_failures, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g_fail_at, __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) + k, __ATOMIC_RELEASE);
        r = exec_bind(e, loss, CPU0, 6, arg, grad, NULL, &ex);
        __atomic_store_n(&g_fail_at, 0, __ATOMIC_RELEASE);
        if (__atomic_load_n(&g_alloc_failures, __ATOMIC_ACQUIRE) == 0) { CHECK(r == DP_OK); done = 1; }
        else CHECK((r == DP_ERROR_OUT_OF_MEMORY && !ex) || r == DP_OK);
        if (ex) { CHECK(dp_exec_forward(ex, 1) == DP_OK && dp_exec_backward(ex, 0, NULL) == DP_OK); }
        dp_exec_destroy(ex);
        release_all(arg, 6); release_all(grad, 6);
        dp_sym_release(loss);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    }
    CHECK(done && k > 10);      /* bind allocates, so some runs failed */
}

/* a group of many outputs, each with a head gradient of its own: the
   entries grow while they are made; x's gradient is the sum of the scalars */
static void test_many_heads(void) {
    enum { HEADS = 150 };
    dp_engine *e = make_engine(DP_ENGINE_POOLED, 0);
    dp_symbol *x = NULL, *parts[HEADS], *grp = NULL;
    dp_ndarray *a = NULL, *g = NULL;
    dp_executor *ex = NULL;
    dp_shape sh = shp(2, 2, 3);
    double want = 0, got[6];
    char v[16];
    int i;
    CHECK(dp_sym_var("x", &x) == DP_OK);
    for (i = 0; i < HEADS; i++) {
        snprintf(v, sizeof v, "%d", i % 7);
        parts[i] = op1("mul_scalar", NULL, x, "scalar", v);
        want += i % 7;
    }
    CHECK(dp_sym_group(HEADS, parts, &grp) == DP_OK);
    CHECK(dp_nd_ones(e, &sh, DP_FLOAT64, CPU0, &a) == DP_OK);
    CHECK(dp_nd_zeros(e, &sh, DP_FLOAT64, CPU0, &g) == DP_OK);
    CHECK(exec_bind(e, grp, CPU0, 1, &a, &g, NULL, &ex) == DP_OK);
    if (ex) {
        CHECK(dp_exec_num_outputs(ex) == HEADS && dp_exec_head_grad(ex, HEADS - 1) != NULL && dp_exec_head_grad(ex, HEADS) == NULL);
        CHECK(dp_exec_forward(ex, 1) == DP_OK && dp_exec_backward(ex, 0, NULL) == DP_OK);
        CHECK(dp_nd_read(g, got, sizeof got, NULL) == DP_OK);
        for (i = 0; i < 6; i++) CHECK(got[i] == want);
        CHECK(dp_nd_read(dp_exec_output(ex, 12), got, sizeof got, NULL) == DP_OK && got[0] == 12 % 7);
    }
    dp_exec_destroy(ex);
    dp_nd_release(a); dp_nd_release(g);
    for (i = 0; i < HEADS; i++) dp_sym_release(parts[i]);
    dp_sym_release(x); dp_sym_release(grp);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* a user's operator, registered once, works in both front ends */
static int k_cube(const dp_kernel_ctx *k) {
    const double *x = (const double *)dp_nd_data(k->inputs[0]);
    double *y = (double *)dp_nd_data(k->outputs[0]);
    int64_t i, n = dp_shape_size(dp_nd_shape(k->inputs[0]));
    for (i = 0; i < n; i++) y[i] = x[i] * x[i] * x[i] * k->params->v[0].f;
    return 0;
}
static int kg_cube(const dp_kernel_ctx *k) {   /* (ograd, x) -> xgrad */
    const double *og = (const double *)dp_nd_data(k->inputs[0]), *x = (const double *)dp_nd_data(k->inputs[1]);
    double *g = (double *)dp_nd_data(k->outputs[0]);
    int64_t i, n = dp_shape_size(dp_nd_shape(k->inputs[1]));
    for (i = 0; i < n; i++) {
        double d = og[i] * 3 * x[i] * x[i] * k->params->v[0].f;
        g[i] = k->req[0] == DP_REQ_ADD ? g[i] + d : d;
    }
    return 0;
}
static void test_user_operator(void) {
    static const dp_param_def scale[1] = {{"scale", DP_PARAM_FLOAT, "1", 0, 0, NULL, "multiplies the cube"}};
    dp_operator op, g;
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 0);
    dp_symbol *x = NULL, *c, *t, *sum;
    dp_ndarray *a, *grad = NULL, *ac = NULL, *at = NULL, *as = NULL;
    dp_executor *ex = NULL;
    const char *k[1] = {"scale"}, *v[1] = {"0.5"}, *sk[1] = {"axis"}, *sv[1] = {"()"};
    memset(&op, 0, sizeof op); memset(&g, 0, sizeof g);
    op.name = "test_cube"; op.num_inputs = 1; op.num_outputs = 1; op.params = scale; op.num_params = 1;
    op.forward_cpu = k_cube; op.gradient = "_backward_test_cube"; op.grad_needs = DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS;
    g.name = "_backward_test_cube"; g.num_inputs = 2; g.num_outputs = 1; g.params = scale; g.num_params = 1; g.forward_cpu = kg_cube;
    CHECK(dp_operator_register(&op) == DP_OK && dp_operator_register(&g) == DP_OK);
    CHECK(dp_sym_var("x", &x) == DP_OK);
    c = op1("test_cube", "c", x, "scale", "0.5");
    t = op1("tanh", "t", c, NULL, NULL);
    sum = op1("sum", "s", t, "axis", "()");
    a = rand_array(e, shp(2, 4, 3), DP_FLOAT64, -1.5, 1.5);
    CHECK(dp_nd_zeros(e, dp_nd_shape(a), DP_FLOAT64, CPU0, &grad) == DP_OK);
    CHECK(exec_bind(e, sum, CPU0, 1, &a, &grad, NULL, &ex) == DP_OK);
    CHECK(dp_exec_forward(ex, 1) == DP_OK && dp_exec_backward(ex, 0, NULL) == DP_OK);
    CHECK(dp_nd_attach_grad(a, DP_REQ_WRITE) == DP_OK);
    dp_autograd_begin();
    CHECK(invoke_str(e, "test_cube", 1, &a, 1, k, v, 0, 1, &ac, NULL) == DP_OK);
    CHECK(invoke_str(e, "tanh", 1, &ac, 0, NULL, NULL, 0, 1, &at, NULL) == DP_OK);
    CHECK(invoke_str(e, "sum", 1, &at, 1, sk, sv, 0, 1, &as, NULL) == DP_OK);
    dp_autograd_end();
    CHECK(dp_autograd_backward(as, NULL, 0) == DP_OK);
    CHECK(max_diff(dp_exec_output(ex, 0), as) < 1e-12);
    CHECK(max_diff(grad, dp_nd_grad(a)) < 1e-12);
    dp_exec_destroy(ex);
    dp_nd_release(a); dp_nd_release(grad); dp_nd_release(ac); dp_nd_release(at); dp_nd_release(as);
    dp_sym_release(x); dp_sym_release(c); dp_sym_release(t); dp_sym_release(sum);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

static const test_case tests[] = {
    {"construct_and_infer", test_construct_and_infer},
    {"group_and_outputs", test_group_and_outputs},
    {"mlp_matches_autograd", test_mlp_matches_autograd},
    {"random_graphs", test_random_graphs},
    {"user_operator", test_user_operator},
    {"grad_requests", test_grad_requests},
    {"many_heads", test_many_heads},
    {"rebind", test_rebind},
    {"steps_do_not_allocate", test_steps_do_not_allocate},
    {"fusion_bitwise", test_fusion_bitwise},
    {"fusion_memory", test_fusion_memory},
    {"train_steps_do_not_allocate", test_train_steps_do_not_allocate},
    {"reusing_plan", test_reusing_plan},
    {"no_gradient_operator", test_no_gradient_operator},
    {"json_round_trip", test_json_round_trip},
    {"json_mxnet_names", test_json_mxnet_names},
    {"json_keeps_attributes", test_json_keeps_attributes},
    {"json_fc_and_cast", test_json_fc_and_cast},
    {"json_damaged", test_json_damaged},
    {"dot", test_dot},
    {"softmax_output", test_softmax_output},
    {"bind_out_of_memory", test_bind_out_of_memory},
};
int main(void) { return run_tests("symbol", tests, (int)(sizeof tests / sizeof tests[0])); }
