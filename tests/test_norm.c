/* depeng_nn.h's BatchNorm and Dropout, and how is_train reaches them.
   BatchNorm: gradients against central differences with batch statistics
   (training) and with the moving ones (use_global_stats, and inference),
   fix_gamma on and off, channel axes 1 and -1; the moving statistics
   updated in training only, by MXNet's rule; training mode from autograd
   (recording, dp_autograd_set_training) and from the executor's forward;
   an MXNet symbol JSON with BatchNorm and Dropout nodes loaded, inferred
   and run. Dropout: the fraction dropped, the scaling, the identity in
   inference, mode "always", shared axes, the gradient through the same
   mask, the same draws for a seed and on every engine kind. Bad
   parameters refused naming the operator, the parameter and the shapes.
   The last line is "norm: N passed, M failed". */
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

static const dp_ctx CPU0 = {DP_DEV_CPU, 0};
static char g_msg[1024];     /* the last error line logged */
static void temp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/depeng_norm_%ld_%s", test_temp_dir(), (long)getpid(), name);
}
static void msg_logger(const char *tag, uint32_t level, uint32_t item, const char *msg, uint32_t line, const char *file, void *user) {
    quiet_logger(tag, level, item, msg, line, file, user);
    if (level == DP_LOG_ERROR) snprintf(g_msg, sizeof g_msg, "%s", msg);
}
static dp_engine *engine_of(dp_engine_type type) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = msg_logger;
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

/* ---- BatchNorm ------------------------------------------------------------ */
typedef struct bncase {
    const char *name;
    int64_t data[6];
    int axis;                      /* the channel axis as given */
    const char *kw[12];            /* key, value, ..., NULL */
} bncase;
static int64_t channels(const bncase *c) { dp_shape s = shape_of(c->data); return s.dims[c->axis < 0 ? c->axis + s.ndim : c->axis]; }
/* BatchNorm on (data, gamma, beta, mean, var) made from v[0..4]; NULL on failure */
static dp_ndarray *bn_run(dp_engine *e, const bncase *c, dp_ndarray *const *in) {
    const char *keys[DP_MAX_PARAMS], *vals[DP_MAX_PARAMS];
    char ax[16];
    dp_ndarray *out = NULL;
    int n = 0;
    snprintf(ax, sizeof ax, "%d", c->axis);
    keys[n] = "axis"; vals[n++] = ax;
    while (c->kw[2 * (n - 1)]) { keys[n] = c->kw[2 * (n - 1)]; vals[n] = c->kw[2 * (n - 1) + 1]; n++; }
    if (invoke_str(e, "BatchNorm", 5, in, n, keys, vals, 0, 1, &out, NULL) != DP_OK) { fprintf(stderr, "  %s: invoke failed: %s\n", c->name, g_msg); return NULL; }
    return out;
}
static void bn_inputs(dp_engine *e, const bncase *c, double *const *v, dp_ndarray **in) {
    int64_t ch = channels(c), cs[6] = {ch, 0};
    int k;
    in[0] = from(e, shape_of(c->data), DP_FLOAT64, v[0]);
    for (k = 1; k < 5; k++) in[k] = from(e, shape_of(cs), DP_FLOAT64, v[k]);
}
static double bn_objective(dp_engine *e, const bncase *c, double *const *v, const double *r) {
    dp_ndarray *in[5], *y;
    int64_t n, i;
    double *out, s = 0;
    int k;
    bn_inputs(e, c, v, in);
    y = bn_run(e, c, in);
    for (k = 0; k < 5; k++) dp_nd_release(in[k]);
    if (!y) return NAN;
    n = dp_shape_size(dp_nd_shape(y));
    out = (double *)malloc(sizeof(double) * (size_t)n);
    CHECK(read_all(y, out));
    for (i = 0; i < n; i++) s += out[i] * r[i];
    free(out); dp_nd_release(y);
    return s;
}
/* Autograd's gradients of data, gamma and beta against central
   differences. */
static void bn_grad_check(const bncase *c, int fix_gamma) {
    dp_engine *e = engine_of(DP_ENGINE_NAIVE);
    dp_ndarray *in[5], *y, *head;
    double *v[5], *r, *g;
    int64_t n[5], i, ch = channels(c);
    int k, bad = 0;
    { dp_shape s = shape_of(c->data); n[0] = dp_shape_size(&s); }
    for (k = 1; k < 5; k++) n[k] = ch;
    for (k = 0; k < 5; k++) {
        v[k] = (double *)malloc(sizeof(double) * (size_t)n[k]);
        for (i = 0; i < n[k]; i++) v[k][i] = k == 4 ? 0.5 + (urand() + 1) : k == 0 ? urand() * 2 + 0.3 * (double)(i % 3) : urand();
    }
    bn_inputs(e, c, v, in);
    for (k = 0; k < 3; k++) CHECK(dp_nd_attach_grad(in[k], DP_REQ_WRITE) == DP_OK);   /* a marked auxiliary state could not be updated */
    CHECK(dp_autograd_begin() == DP_OK);
    y = bn_run(e, c, in);
    CHECK(dp_autograd_end() == DP_OK);
    if (!y) { CHECK(0); goto done; }
    r = (double *)malloc(sizeof(double) * (size_t)n[0]);
    for (i = 0; i < n[0]; i++) r[i] = urand();
    head = from(e, *dp_nd_shape(y), DP_FLOAT64, r);
    CHECK(dp_autograd_backward(y, head, 0) == DP_OK);
    for (k = 0; k < 3 && !bad; k++) {
        g = (double *)malloc(sizeof(double) * (size_t)n[k]);
        CHECK(read_all(dp_nd_grad(in[k]), g));
        for (i = 0; i < n[k] && !bad; i++) {
            double keep = v[k][i], up, down, num, h = 1e-6;
            if (k == 1 && fix_gamma) num = 0;    /* fix_gamma: gamma's gradient is 0 */
            else {
                v[k][i] = keep + h; up = bn_objective(e, c, v, r);
                v[k][i] = keep - h; down = bn_objective(e, c, v, r);
                v[k][i] = keep;
                num = (up - down) / (2 * h);
            }
            if (!(fabs(num - g[i]) <= 1e-5 * (1 + fabs(num)))) {
                fprintf(stderr, "  %s: d/d input %d [%lld]: autograd %.10g, numeric %.10g\n", c->name, k, (long long)i, g[i], num);
                bad = 1;
            }
        }
        free(g);
    }
    CHECK(!bad);
    free(r); dp_nd_release(head); dp_nd_release(y);
done:
    for (k = 0; k < 5; k++) { dp_nd_release(in[k]); free(v[k]); }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
static const bncase bn_train_cases[] = {
    {"train nchw", {4, 3, 2, 2}, 1, {"is_train", "true", "fix_gamma", "false", NULL}},
    {"train fix_gamma", {3, 2, 3}, 1, {"is_train", "true", NULL}},
    {"train (n, c)", {5, 4}, 1, {"is_train", "true", "fix_gamma", "false", "eps", "1e-5", "momentum", "0.7", NULL}},
    {"train axis -1", {3, 2, 4}, -1, {"is_train", "true", "fix_gamma", "false", NULL}},
};
static const bncase bn_global_cases[] = {
    {"use_global_stats", {4, 3, 2, 2}, 1, {"is_train", "true", "use_global_stats", "true", "fix_gamma", "false", NULL}},
    {"inference", {3, 2, 3}, 1, {"is_train", "false", "fix_gamma", "false", NULL}},
    {"inference fix_gamma axis 0", {3, 2, 3}, 0, {"is_train", "false", NULL}},
};
static int fixed(const bncase *c) {
    int i;
    for (i = 0; c->kw[2 * i]; i++) if (!strcmp(c->kw[2 * i], "fix_gamma")) return 0;
    return 1;
}
static void bn_train_gradients(void) { size_t i; for (i = 0; i < sizeof bn_train_cases / sizeof bn_train_cases[0]; i++) bn_grad_check(&bn_train_cases[i], fixed(&bn_train_cases[i])); }
static void bn_global_gradients(void) { size_t i; for (i = 0; i < sizeof bn_global_cases / sizeof bn_global_cases[0]; i++) bn_grad_check(&bn_global_cases[i], fixed(&bn_global_cases[i])); }

/* data (2, 2, 3): channel 0 holds 1..6, channel 1 holds 2 4 ... 12 (the
   two samples' planes); moving stats (0, 0) and (1, 1). */
static void bn_setup(dp_engine *e, dp_ndarray **in) {
    static const double x[12] = {1, 2, 3, 2, 4, 6, 4, 5, 6, 8, 10, 12}, g[2] = {2, 3}, b[2] = {0.5, -1}, m[2] = {0, 0}, var[2] = {1, 1};
    int64_t xd[6] = {2, 2, 3}, cd[6] = {2};
    in[0] = from(e, shape_of(xd), DP_FLOAT64, x);
    in[1] = from(e, shape_of(cd), DP_FLOAT64, g); in[2] = from(e, shape_of(cd), DP_FLOAT64, b);
    in[3] = from(e, shape_of(cd), DP_FLOAT64, m); in[4] = from(e, shape_of(cd), DP_FLOAT64, var);
}
static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (1 + fabs(b)); }
/* moving (mean, var) after one BatchNorm forward run as `how` says */
static void bn_moving_after(int how, double *mean, double *var, double *y0) {
    dp_engine *e = engine_of(DP_ENGINE_NAIVE);
    dp_ndarray *in[5], *y = NULL;
    const char *k2[2] = {"momentum", "is_train"}, *v2[2] = {"0.75", how == 1 ? "true" : "false"};
    int k;
    bn_setup(e, in);
    switch (how) {
    case 0: case 1: CHECK(invoke_str(e, "BatchNorm", 5, in, 2, k2, v2, 0, 1, &y, NULL) == DP_OK); break;   /* given */
    case 2: CHECK(dp_autograd_begin() == DP_OK); CHECK(invoke_str(e, "BatchNorm", 5, in, 1, k2, v2, 0, 1, &y, NULL) == DP_OK);   /* recording */
            CHECK(dp_autograd_end() == DP_OK); break;
    case 3: CHECK(invoke_str(e, "BatchNorm", 5, in, 1, k2, v2, 0, 1, &y, NULL) == DP_OK); break;   /* not recording */
    case 4: CHECK(dp_autograd_begin() == DP_OK); CHECK(dp_autograd_set_training(0) == -1);        /* recording, predict mode */
            CHECK(!dp_autograd_is_training());
            CHECK(invoke_str(e, "BatchNorm", 5, in, 1, k2, v2, 0, 1, &y, NULL) == DP_OK);
            CHECK(dp_autograd_set_training(-1) == 0); CHECK(dp_autograd_end() == DP_OK); break;
    case 5: CHECK(dp_autograd_set_training(1) == -1); CHECK(dp_autograd_is_training());           /* train mode, not recording */
            CHECK(invoke_str(e, "BatchNorm", 5, in, 1, k2, v2, 0, 1, &y, NULL) == DP_OK);
            CHECK(dp_autograd_set_training(-1) == 1); break;
    case 6: { const char *k3[3] = {"momentum", "is_train", "use_global_stats"}, *v3[3] = {"0.75", "true", "true"};
              CHECK(invoke_str(e, "BatchNorm", 5, in, 3, k3, v3, 0, 1, &y, NULL) == DP_OK); break; }
    }
    CHECK(y && read_all(in[3], mean) && read_all(in[4], var));
    if (y) CHECK(read_all(y, y0));
    dp_nd_release(y);
    for (k = 0; k < 5; k++) dp_nd_release(in[k]);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* Training updates the moving statistics by MXNet's rule (biased batch
   variance) and normalises with the batch's; inference and
   use_global_stats leave them and normalise with them; fix_gamma (the
   default) reads gamma as 1. */
static void bn_moving_statistics(void) {
    double m[2], v[2], y[12];
    /* channel 0: mean 3.5, var 35/12; channel 1: mean 7, var 35/3 */
    double bm[2] = {3.5, 7}, bv[2] = {35.0 / 12, 35.0 / 3};
    int how, c;
    for (how = 0; how <= 6; how++) {
        int train = how == 1 || how == 2 || how == 5;
        bn_moving_after(how, m, v, y);
        for (c = 0; c < 2; c++) {
            double em = train ? 0.25 * bm[c] : 0, ev = train ? 0.75 + 0.25 * bv[c] : 1;
            if (!near(m[c], em) || !near(v[c], ev)) { fprintf(stderr, "  case %d channel %d: moving (%g, %g), expected (%g, %g)\n", how, c, m[c], v[c], em, ev); CHECK(0); }
        }
        /* element 0 (channel 0, x = 1): gamma 1 (fix_gamma), beta 0.5 */
        CHECK(near(y[0], train ? (1 - 3.5) / sqrt(35.0 / 12 + 1e-3) + 0.5 : 1 / sqrt(1 + 1e-3) + 0.5));
    }
}
/* The executor's forward(is_train): training updates the bound moving
   statistics, inference reads them; an MXNet JSON with BatchNorm and
   Dropout nodes (as MXNet 1.x writes them) loads and infers. */
static const char *bn_json =
    "{\"nodes\": ["
    "{\"op\": \"null\", \"name\": \"data\", \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"bn0_gamma\", \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"bn0_beta\", \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"bn0_moving_mean\", \"attrs\": {\"__init__\": \"[\\\"zero\\\", {}]\"}, \"inputs\": []},"
    "{\"op\": \"null\", \"name\": \"bn0_moving_var\", \"attrs\": {\"__init__\": \"[\\\"one\\\", {}]\"}, \"inputs\": []},"
    "{\"op\": \"BatchNorm\", \"name\": \"bn0\", \"attrs\": {\"eps\": \"0.001\", \"fix_gamma\": \"False\", \"momentum\": \"0.75\", \"cudnn_off\": \"False\"},"
    " \"inputs\": [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 1], [4, 0, 1]]},"
    "{\"op\": \"Dropout\", \"name\": \"drop0\", \"attrs\": {\"p\": \"0.5\", \"mode\": \"training\", \"axes\": \"()\"}, \"inputs\": [[5, 0, 0]]}"
    "], \"arg_nodes\": [0, 1, 2, 3, 4], \"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6, 8], \"heads\": [[6, 0, 0]],"
    " \"attrs\": {\"mxnet_version\": [\"int\", 10500]}}";
static void bn_executor_and_json(void) {
    dp_engine *e = engine_of(DP_ENGINE_NAIVE);
    dp_symbol *s = NULL;
    const char *names[8], *dn[1] = {"data"};
    dp_shape ds, shapes[8], os[2];
    dp_dtype dts[8], odt[2];
    dp_ndarray *in[5], *args[5];
    dp_executor *ex = NULL;
    double m[2], v[2], y[12];
    int i, n;
    CHECK(dp_sym_load_json(bn_json, &s) == DP_OK);
    if (!s) { fprintf(stderr, "  %s\n", g_msg); CHECK(dp_engine_destroy(e, NULL) == DP_OK); return; }
    /* the moving statistics are auxiliary states (MXNet's
       list_auxiliary_states), not arguments */
    n = dp_sym_list_arguments(s, names, 8);
    CHECK(n == 3 && !strcmp(names[0], "data") && !strcmp(names[2], "bn0_beta"));
    n = dp_sym_list_auxiliary_states(s, names, 8);
    CHECK(n == 2 && !strcmp(names[0], "bn0_moving_mean") && !strcmp(names[1], "bn0_moving_var"));
    memset(&ds, 0, sizeof ds); ds.ndim = 3; ds.dims[0] = 2; ds.dims[1] = 2; ds.dims[2] = 3;
    {
        dp_sym_infer_desc d;
        memset(&d, 0, sizeof d);
        d.num_known = 1; d.names = dn; d.shapes = &ds;
        d.arg_shapes = shapes; d.arg_dtypes = dts; d.out_shapes = os; d.out_dtypes = odt; d.aux_shapes = shapes + 3;
        CHECK(dp_sym_infer(s, &d) == DP_OK);
    }
    CHECK(shapes[1].ndim == 1 && shapes[1].dims[0] == 2 && shapes[4].ndim == 1 && shapes[4].dims[0] == 2);
    CHECK(os[0].ndim == 3 && os[0].dims[2] == 3);
    bn_setup(e, in);
    for (i = 0; i < 5; i++) args[i] = in[i];
    CHECK(exec_bind(e, s, CPU0, 5, args, NULL, NULL, &ex) != DP_OK);   /* the moving statistics as arguments: refused */
    CHECK(strstr(g_msg, "3 and 2") != NULL);
    CHECK(exec_bind_aux(e, s, CPU0, 3, args, NULL, 2, args + 3, &ex) == DP_OK);
    if (ex) {
        CHECK(dp_exec_forward(ex, 0) == DP_OK);                       /* inference: moving stay, dropout is the identity */
        CHECK(read_all(dp_exec_output(ex, 0), y) && read_all(in[3], m) && read_all(in[4], v));
        CHECK(m[0] == 0 && m[1] == 0 && v[0] == 1 && v[1] == 1);
        CHECK(near(y[0], 2 * 1 / sqrt(1 + 1e-3) + 0.5));
        CHECK(dp_exec_forward(ex, 1) == DP_OK);                       /* training: moving updated */
        CHECK(read_all(in[3], m) && read_all(in[4], v));
        CHECK(near(m[0], 0.25 * 3.5) && near(m[1], 0.25 * 7) && near(v[0], 0.75 + 0.25 * 35.0 / 12));
        CHECK(read_all(dp_exec_output(ex, 0), y));
        for (i = 0; i < 12; i++) {    /* dropped (0) or the normalised value doubled */
            double c = i % 6 < 3 ? 0 : 1, mean = c ? 7 : 3.5, var = c ? 35.0 / 3 : 35.0 / 12, x = (i < 6 ? (i % 3 + 1) : (i % 3 + 4)) * (c + 1);
            double want = ((c ? 3 : 2) * (x - mean) / sqrt(var + 1e-3) + (c ? -1 : 0.5)) * 2;
            if (!(y[i] == 0 || near(y[i], want))) { fprintf(stderr, "  element %d: %g, want 0 or %g\n", i, y[i], want); CHECK(0); }
        }
        dp_exec_destroy(ex);
    }
    for (i = 0; i < 5; i++) dp_nd_release(in[i]);
    dp_sym_release(s);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* A small BatchNorm net trained through the executor, its moving
   statistics bound as auxiliary states: a training forward updates them,
   an inference forward and the backward do not; a checkpoint saves them as
   "aux:NAME", and the net reloaded from it gives bitwise the same
   inference outputs. An auxiliary state of another shape, or an "aux:"
   name the symbol lacks, is refused naming it (and both shapes). */
static dp_symbol *bn_small_net(void) {
    dp_symbol *in[5] = {NULL, NULL, NULL, NULL, NULL}, *fc1 = NULL, *bn = NULL, *act = NULL, *fc2 = NULL, *out = NULL;
    const char *k1[1] = {"num_hidden"}, *v1[1] = {"4"}, *v2[1] = {"2"}, *kb[2] = {"fix_gamma", "momentum"}, *vb[2] = {"False", "0.5"};
    const char *ka[1] = {"act_type"}, *va[1] = {"relu"};
    CHECK(dp_sym_var("data", &in[0]) == DP_OK);
    CHECK(sym_op("FullyConnected", "fc1", 3, in, 1, k1, v1, &fc1) == DP_OK);
    dp_sym_release(in[0]);
    in[0] = fc1;
    CHECK(sym_op("BatchNorm", "bn", 5, in, 2, kb, vb, &bn) == DP_OK);
    in[0] = bn;
    CHECK(sym_op("Activation", "act", 1, in, 1, ka, va, &act) == DP_OK);
    in[0] = act;
    CHECK(sym_op("FullyConnected", "fc2", 3, in, 1, k1, v2, &fc2) == DP_OK);
    in[0] = fc2;
    CHECK(sym_op("SoftmaxOutput", "softmax", 2, in, 0, NULL, NULL, &out) == DP_OK);
    dp_sym_release(fc1); dp_sym_release(bn); dp_sym_release(act); dp_sym_release(fc2);
    return out;
}
static void bn_checkpoint_round_trip(void) {
    dp_engine *e = engine_of(DP_ENGINE_POOLED);
    dp_symbol *s = bn_small_net();
    const char *an[16], *xn[4];
    int na = dp_sym_list_arguments(s, an, 16), nx = dp_sym_list_auxiliary_states(s, xn, 4), i, step;
    dp_ndarray *args[16], *grads[16], *aux[4], *aux2[4], *args2[16];
    dp_shape as[16], xs[4], ds = {2, {6, 3}};
    const char *dn[1] = {"data"};
    dp_executor *ex = NULL, *ex2 = NULL;
    dp_nd_named pa[16], px[4];
    dp_checkpoint ck;
    dp_checkpoint_desc cd;
    char prefix[512], path[600];
    double before[4], after[4], y1[12], y2[12], data[18], label[6];
    CHECK(na == 8 && nx == 2 && !strcmp(xn[0], "bn_moving_mean") && !strcmp(xn[1], "bn_moving_var"));
    for (i = 0; i < na; i++) CHECK(strstr(an[i], "moving") == NULL);
    if (na != 8 || nx != 2) { dp_sym_release(s); CHECK(dp_engine_destroy(e, NULL) == DP_OK); return; }
    {
        dp_sym_infer_desc d;
        memset(&d, 0, sizeof d);
        d.num_known = 1; d.names = dn; d.shapes = &ds; d.arg_shapes = as; d.aux_shapes = xs;
        CHECK(dp_sym_infer(s, &d) == DP_OK);
        CHECK(xs[0].ndim == 1 && xs[0].dims[0] == 4 && xs[1].ndim == 1 && xs[1].dims[0] == 4);
    }
    for (i = 0; i < 18; i++) data[i] = urand() * 2;
    for (i = 0; i < 6; i++) label[i] = i % 2;
    for (i = 0; i < na; i++) {
        int64_t n = dp_shape_size(&as[i]), k;
        double *v = (double *)malloc(sizeof(double) * (size_t)n);
        for (k = 0; k < n; k++) v[k] = !strcmp(an[i], "data") ? data[k] : !strcmp(an[i], "softmax_label") ? label[k] : !strcmp(an[i], "bn_gamma") ? 1 : urand() * 0.5;
        args[i] = from(e, as[i], DP_FLOAT32, v);
        free(v);
        grads[i] = NULL;
        if (strcmp(an[i], "data") && strcmp(an[i], "softmax_label")) CHECK(dp_nd_zeros(e, &as[i], DP_FLOAT32, CPU0, &grads[i]) == DP_OK);
    }
    CHECK(dp_nd_zeros(e, &xs[0], DP_FLOAT32, CPU0, &aux[0]) == DP_OK);
    CHECK(dp_nd_full(e, &xs[1], DP_FLOAT32, CPU0, 1, &aux[1]) == DP_OK);
    CHECK(exec_bind_aux(e, s, CPU0, na, args, grads, nx, aux, &ex) == DP_OK);
    if (!ex) goto out;
    for (step = 0; step < 5; step++) {       /* SGD on every parameter */
        CHECK(dp_exec_forward(ex, 1) == DP_OK && dp_exec_backward(ex, 0, NULL) == DP_OK);
        for (i = 0; i < na; i++) {
            dp_invoke_desc d;
            if (!grads[i]) continue;
            memset(&d, 0, sizeof d);
            d.op = "sgd_update"; d.inputs[0] = args[i]; d.inputs[1] = grads[i]; d.outputs[0] = args[i];
            d.params[0].name = "lr"; d.params[0].f = 0.1;
            CHECK(dp_invoke(e, &d, NULL) == DP_OK);
        }
    }
    CHECK(read_all(aux[0], before));
    CHECK(before[0] != 0 || before[1] != 0);                              /* training moved the mean */
    CHECK(dp_exec_forward(ex, 0) == DP_OK && read_all(dp_exec_output(ex, 0), y1));
    CHECK(dp_exec_backward(ex, 0, NULL) == DP_OK);
    CHECK(read_all(aux[0], after) && memcmp(before, after, sizeof before) == 0);   /* inference and backward leave them */
    /* the checkpoint: every argument but the data and the label, and the auxiliary states */
    temp_path(prefix, sizeof prefix, "bnnet");
    {
        int np = 0;
        for (i = 0; i < na; i++) if (grads[i]) { snprintf(pa[np].name, sizeof pa[np].name, "%s", an[i]); pa[np++].array = args[i]; }
        for (i = 0; i < nx; i++) { snprintf(px[i].name, sizeof px[i].name, "%s", xn[i]); px[i].array = aux[i]; }
        CHECK(dp_checkpoint_save(prefix, 1, s, pa, np, px, nx, NULL) == DP_OK);
        memset(&cd, 0, sizeof cd);
        cd.num_inputs = 1; cd.input_names = dn; cd.input_shapes = &ds;
        CHECK(dp_checkpoint_load(e, prefix, 1, CPU0, &cd, &ck) == DP_OK);
        CHECK(ck.num_args == np && ck.num_aux == 2 && !strcmp(ck.aux[0].name, "bn_moving_mean") && !strcmp(ck.aux[1].name, "bn_moving_var"));
        CHECK(ck.symbol && dp_sym_list_auxiliary_states(ck.symbol, NULL, 0) == 2 && dp_sym_list_arguments(ck.symbol, NULL, 0) == 8);
    }
    if (ck.symbol && ck.num_aux == 2) {
        const char *an2[16];
        int na2 = dp_sym_list_arguments(ck.symbol, an2, 16), j;
        for (i = 0; i < na2; i++) {
            args2[i] = !strcmp(an2[i], "data") ? args[0] : NULL;
            if (!strcmp(an2[i], "softmax_label")) for (j = 0; j < na; j++) if (!strcmp(an[j], "softmax_label")) args2[i] = args[j];
            for (j = 0; j < ck.num_args; j++) if (!strcmp(an2[i], ck.args[j].name)) args2[i] = ck.args[j].array;
            CHECK(args2[i] != NULL);
        }
        for (i = 0; i < 2; i++) aux2[i] = ck.aux[i].array;
        CHECK(exec_bind_aux(e, ck.symbol, CPU0, na2, args2, NULL, 2, aux2, &ex2) == DP_OK);
        if (ex2) {
            CHECK(dp_exec_forward(ex2, 0) == DP_OK && read_all(dp_exec_output(ex2, 0), y2));
            CHECK(memcmp(y1, y2, sizeof y1) == 0);                        /* bitwise the same */
            dp_exec_destroy(ex2);
        }
    }
    dp_checkpoint_free(&ck);
    /* a moving mean of another shape: refused naming it and both shapes */
    {
        dp_shape bad = {1, {5}};
        dp_nd_named keep = px[0];
        CHECK(dp_nd_zeros(e, &bad, DP_FLOAT32, CPU0, &px[0].array) == DP_OK);
        CHECK(dp_checkpoint_save(prefix, 2, s, pa, 0, px, nx, NULL) == DP_OK);
        dp_clear_last_error();
        CHECK(dp_checkpoint_load(e, prefix, 2, CPU0, &cd, &ck) == DP_ERROR_FORMAT && ck.symbol == NULL);
        if (!(strstr(dp_last_error(), "'aux:bn_moving_mean'") && strstr(dp_last_error(), "(5,)") && strstr(dp_last_error(), "(4,)"))) { fprintf(stderr, "  %s\n", dp_last_error()); CHECK(0); }
        dp_nd_release(px[0].array);
        px[0] = keep;
        /* an "aux:" name that is not an auxiliary state of the symbol */
        snprintf(px[0].name, sizeof px[0].name, "bn_gamma");
        CHECK(dp_checkpoint_save(prefix, 3, s, pa, 0, px, nx, NULL) == DP_OK);
        dp_clear_last_error();
        CHECK(dp_checkpoint_load(e, prefix, 3, CPU0, NULL, &ck) == DP_ERROR_FORMAT);
        CHECK(strstr(dp_last_error(), "'aux:bn_gamma'") && strstr(dp_last_error(), "not an auxiliary state"));
    }
    for (i = 1; i <= 3; i++) { snprintf(path, sizeof path, "%s-%04d.params", prefix, i); remove(path); }
    snprintf(path, sizeof path, "%s-symbol.json", prefix); remove(path);
    dp_exec_destroy(ex);
out:
    for (i = 0; i < na; i++) { dp_nd_release(args[i]); dp_nd_release(grads[i]); }
    for (i = 0; i < nx; i++) dp_nd_release(aux[i]);
    dp_sym_release(s);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

static dp_ndarray *tk_arr(dp_engine *e, const dp_shape *s, dp_dtype t, const void *h) {
    dp_ndarray *a = NULL;
    CHECK(dp_nd_from_host(e, s, t, CPU0, h, &a) == DP_OK);
    return a;
}
/* a's elements bitwise want's; 1 when equal */
static int bn_same(const char *what, dp_ndarray *a, const void *want) {
    dp_dtype t = dp_nd_dtype(a);
    int64_t n = dp_shape_size(dp_nd_shape(a)), i;
    size_t es = dp_dtype_size(t);
    unsigned char *got = (unsigned char *)malloc(dp_nd_bytes(a) ? dp_nd_bytes(a) : 1);
    int ok = dp_nd_read(a, got, dp_nd_bytes(a), NULL) == DP_OK;
    for (i = 0; ok && i < n; i++)
        if (memcmp(got + (size_t)i * es, (const unsigned char *)want + (size_t)i * es, es)) {
            fprintf(stderr, "  %s: element %lld of %lld is %.17g, want %.17g\n", what, (long long)i, (long long)n, dp_dtype_load(t, got, i), dp_dtype_load(t, want, i));
            ok = 0;
        }
    free(got);
    return ok;
}
/* BatchNorm's loops per dtype bitwise against each element computed alone
   in double and stored by dp_dtype_store (the statistics and sums in
   double, in order), as the kernels computed them before: float32 and
   float64, training and the moving statistics, forward (y and the moving
   statistics) and gradient (every output), written and added, sizes 1, 21,
   987, 1003 (channel axis last) and 140,034 (over the range loop's
   threshold: channels split), on an engine with two CPU workers. */
static void bn_typed_bitwise(void) {
    static const int64_t shapes[5][4] = {{1, 1}, {7, 3}, {3, 7, 47}, {17, 59}, {2, 3, 23339}};
    static const int axes[5] = {1, 1, 1, -1, 1};
    dp_engine_desc d;
    dp_engine *e = NULL;
    int ti, si, train, add, k;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_PERDEVICE; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = msg_logger;
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    for (ti = 0; e && ti < 2; ti++)
        for (si = 0; si < 5; si++)
            for (train = 0; train < 2; train++)
                for (add = 0; add < 2; add++) {
                    dp_dtype t = ti ? DP_FLOAT64 : DP_FLOAT32;
                    dp_shape s = shape_of(shapes[si]), cs;
                    int axis = axes[si] < 0 ? axes[si] + s.ndim : axes[si];
                    int64_t n = dp_shape_size(&s), c = s.dims[axis], outer = 1, inner = 1, cnt, o, j, ch, i;
                    size_t es = dp_dtype_size(t);
                    void *h[8], *want[8];       /* data, gamma, beta, mean, var, og, y0 / dx0, per-channel outputs' start */
                    dp_ndarray *in[6], *out[5];
                    dp_req req[5];
                    const char *keys[5] = {"axis", "is_train", "fix_gamma", "momentum", "eps"}, *vals[5];
                    char ax[8], what[96];
                    for (k = 0; k < axis; k++) outer *= s.dims[k];
                    for (k = axis + 1; k < s.ndim; k++) inner *= s.dims[k];
                    cnt = outer * inner;
                    memset(&cs, 0, sizeof cs); cs.ndim = 1; cs.dims[0] = c;
                    for (k = 0; k < 8; k++) {
                        int64_t m = k == 0 || k == 5 || k == 6 ? n : c;
                        h[k] = malloc((size_t)m * es);
                        for (i = 0; i < m; i++) dp_dtype_store(t, h[k], i, k == 4 ? 0.5 + (urand() + 1) : urand() * 3, DP_REQ_WRITE);
                        want[k] = malloc((size_t)m * es);
                        memcpy(want[k], h[k], (size_t)m * es);
                    }
                    for (k = 0; k < 5; k++) req[k] = add ? DP_REQ_ADD : DP_REQ_WRITE;
                    /* forward: want[0] y (from h[6]), want[3], want[4] the moving statistics */
                    memcpy(want[0], h[6], (size_t)n * es);
                    for (ch = 0; ch < c; ch++) {
                        double mean, var, is, g = dp_dtype_load(t, h[1], ch), b = dp_dtype_load(t, h[2], ch), sm = 0, q = 0;
                        if (train) {
                            for (o = 0; o < outer; o++) for (j = 0; j < inner; j++) sm += dp_dtype_load(t, h[0], (o * c + ch) * inner + j);
                            sm = cnt ? sm / (double)cnt : 0;
                            for (o = 0; o < outer; o++) for (j = 0; j < inner; j++) { double dd = dp_dtype_load(t, h[0], (o * c + ch) * inner + j) - sm; q += dd * dd; }
                            mean = sm; var = cnt ? q / (double)cnt : 0;
                            dp_dtype_store(t, want[3], ch, dp_dtype_load(t, h[3], ch) * 0.75 + mean * (1 - 0.75), DP_REQ_WRITE);
                            dp_dtype_store(t, want[4], ch, dp_dtype_load(t, h[4], ch) * 0.75 + var * (1 - 0.75), DP_REQ_WRITE);
                        } else { mean = dp_dtype_load(t, h[3], ch); var = dp_dtype_load(t, h[4], ch); }
                        is = 1 / sqrt(var + 0.001);
                        for (o = 0; o < outer; o++)
                            for (j = 0; j < inner; j++) {
                                int64_t el = (o * c + ch) * inner + j;
                                dp_dtype_store(t, want[0], el, g * (dp_dtype_load(t, h[0], el) - mean) * is + b, req[0]);
                            }
                    }
                    snprintf(ax, sizeof ax, "%d", axes[si]);
                    vals[0] = ax; vals[1] = train ? "true" : "false"; vals[2] = "false"; vals[3] = "0.75"; vals[4] = "0.001";
                    for (k = 0; k < 5; k++) in[k] = tk_arr(e, k ? &cs : &s, t, h[k]);
                    out[0] = tk_arr(e, &s, t, h[6]);
                    snprintf(what, sizeof what, "BatchNorm %s (%lld elements)%s%s", dp_dtype_name(t), (long long)n, train ? " training" : "", add ? " added" : "");
                    CHECK(invoke_str(e, "BatchNorm", 5, in, 5, keys, vals, 0, 1, out, req) == DP_OK);
                    CHECK(bn_same(what, out[0], want[0]));
                    CHECK(bn_same(what, in[3], want[3]));
                    CHECK(bn_same(what, in[4], want[4]));
                    dp_nd_release(out[0]);
                    for (k = 0; k < 5; k++) dp_nd_release(in[k]);
                    /* gradient: (og, data, gamma, beta, mean, var) -> dx (from h[6]), d gamma, d beta, 0, 0 (from h[7]) */
                    memcpy(want[0], h[6], (size_t)n * es);
                    for (k = 1; k < 5; k++) memcpy(want[k], h[7], (size_t)c * es);
                    for (ch = 0; ch < c; ch++) {
                        double mean, var, is, g = dp_dtype_load(t, h[1], ch), sg = 0, sgx = 0, sm = 0, q = 0;
                        if (train) {
                            for (o = 0; o < outer; o++) for (j = 0; j < inner; j++) sm += dp_dtype_load(t, h[0], (o * c + ch) * inner + j);
                            sm = cnt ? sm / (double)cnt : 0;
                            for (o = 0; o < outer; o++) for (j = 0; j < inner; j++) { double dd = dp_dtype_load(t, h[0], (o * c + ch) * inner + j) - sm; q += dd * dd; }
                            mean = sm; var = cnt ? q / (double)cnt : 0;
                        } else { mean = dp_dtype_load(t, h[3], ch); var = dp_dtype_load(t, h[4], ch); }
                        is = 1 / sqrt(var + 0.001);
                        for (o = 0; o < outer; o++)
                            for (j = 0; j < inner; j++) {
                                int64_t el = (o * c + ch) * inner + j;
                                double gv = dp_dtype_load(t, h[5], el);
                                sg += gv; sgx += gv * (dp_dtype_load(t, h[0], el) - mean) * is;
                            }
                        for (o = 0; o < outer; o++)
                            for (j = 0; j < inner; j++) {
                                int64_t el = (o * c + ch) * inner + j;
                                double gv = dp_dtype_load(t, h[5], el), xh = (dp_dtype_load(t, h[0], el) - mean) * is;
                                dp_dtype_store(t, want[0], el, train ? g * is / (double)cnt * ((double)cnt * gv - sg - xh * sgx) : g * is * gv, req[0]);
                            }
                        dp_dtype_store(t, want[1], ch, sgx, req[1]); dp_dtype_store(t, want[2], ch, sg, req[2]);
                        dp_dtype_store(t, want[3], ch, 0, req[3]); dp_dtype_store(t, want[4], ch, 0, req[4]);
                    }
                    in[0] = tk_arr(e, &s, t, h[5]);
                    for (k = 1; k < 6; k++) in[k] = tk_arr(e, k > 1 ? &cs : &s, t, h[k - 1]);
                    out[0] = tk_arr(e, &s, t, h[6]);
                    for (k = 1; k < 5; k++) out[k] = tk_arr(e, &cs, t, h[7]);
                    CHECK(invoke_str(e, "_backward_BatchNorm", 6, in, 5, keys, vals, 0, 5, out, req) == DP_OK);
                    for (k = 0; k < 5; k++) { char w2[128]; snprintf(w2, sizeof w2, "_backward_%s output %d", what, k); CHECK(bn_same(w2, out[k], want[k])); }
                    for (k = 0; k < 6; k++) dp_nd_release(in[k]);
                    for (k = 0; k < 5; k++) dp_nd_release(out[k]);
                    for (k = 0; k < 8; k++) { free(h[k]); free(want[k]); }
                }
    if (e) CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- Dropout -------------------------------------------------------------- */
/* Dropout of ones (shape d) with params; out and mask read into y, m */
static void dropout_run(dp_engine *e, const int64_t *d, int n, const char *const *keys, const char *const *vals, double *y, double *m) {
    dp_shape s = shape_of(d);
    int64_t sz = dp_shape_size(&s), i;
    double *ones = (double *)malloc(sizeof(double) * (size_t)sz);
    dp_ndarray *x, *out[2] = {NULL, NULL};
    for (i = 0; i < sz; i++) ones[i] = 1.5;
    x = from(e, s, DP_FLOAT32, ones);
    CHECK(invoke_str(e, "Dropout", 1, &x, n, keys, vals, 0, 2, out, NULL) == DP_OK);
    if (out[0]) CHECK(read_all(out[0], y) && read_all(out[1], m));
    dp_nd_release(out[0]); dp_nd_release(out[1]); dp_nd_release(x);
    free(ones);
}
static void dropout_fraction_and_scale(void) {
    enum { N = 20000 };
    dp_engine *e = engine_of(DP_ENGINE_NAIVE);
    int64_t d[6] = {100, 200};
    double *y = (double *)malloc(sizeof(double) * N), *m = (double *)malloc(sizeof(double) * N);
    const char *k[3] = {"p", "is_train", "mode"}, *v[3] = {"0.3", "true", "training"};
    int i, dropped = 0, bad = 0;
    dropout_run(e, d, 2, k, v, y, m);
    for (i = 0; i < N; i++) {
        if (m[i] == 0) { dropped++; bad |= y[i] != 0; }
        else bad |= m[i] != (double)(float)(1 / 0.7) || y[i] != (double)(1.5f * (float)(1 / 0.7));
    }
    CHECK(!bad);
    CHECK(fabs(dropped / (double)N - 0.3) < 0.015);        /* 7 standard deviations */
    v[1] = "false";                                           /* inference: the identity, mask ones */
    dropout_run(e, d, 2, k, v, y, m);
    for (i = 0; i < N; i++) bad |= y[i] != 1.5 || m[i] != 1;
    CHECK(!bad);
    v[2] = "always";                                          /* always: dropped in inference too */
    dropout_run(e, d, 3, k, v, y, m);
    for (dropped = 0, i = 0; i < N; i++) dropped += m[i] == 0;
    CHECK(fabs(dropped / (double)N - 0.3) < 0.015);
    v[0] = "0"; v[1] = "true"; v[2] = "training";             /* p 0: the identity in training */
    dropout_run(e, d, 3, k, v, y, m);
    for (i = 0; i < N; i++) bad |= y[i] != 1.5 || m[i] != 1;
    CHECK(!bad);
    {   /* axes (1,): one draw per row, shared along axis 1 */
        const char *ka[3] = {"p", "is_train", "axes"}, *va[3] = {"0.5", "true", "(1,)"};
        int r, j, rows_dropped = 0;
        dropout_run(e, d, 3, ka, va, y, m);
        for (r = 0; r < 100; r++) {
            for (j = 1; j < 200; j++) bad |= m[r * 200 + j] != m[r * 200];
            rows_dropped += m[r * 200] == 0;
        }
        CHECK(!bad && rows_dropped > 20 && rows_dropped < 80);
    }
    free(y); free(m);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    {   /* large: split over the range loop (2 workers); each element its own draw, no chunk repeating another */
        enum { R = 400, C = 1000 };
        int64_t db[6] = {R, C};
        int r, same_rows = 0;
        e = engine_of(DP_ENGINE_PERDEVICE);
        y = (double *)malloc(sizeof(double) * R * C); m = (double *)malloc(sizeof(double) * R * C);
        v[0] = "0.3"; v[1] = "true"; v[2] = "training";
        dropout_run(e, db, 3, k, v, y, m);
        for (dropped = 0, i = 0; i < R * C; i++) dropped += m[i] == 0;
        CHECK(fabs(dropped / (double)(R * C) - 0.3) < 0.005);
        for (r = 1; r < R; r++) same_rows += memcmp(m, m + (size_t)r * C, sizeof(double) * C) == 0;
        CHECK(same_rows == 0);
        free(y); free(m);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}
/* The gradient is og * mask, the very mask of the forward; recording
   without is_train given drops (training mode), and the output is data *
   mask. */
static void dropout_gradient(void) {
    dp_engine *e = engine_of(DP_ENGINE_NAIVE);
    int64_t d[6] = {7, 9};
    double xv[63], og[63], y[63], m[63], g[63];
    dp_ndarray *x, *head, *out[2] = {NULL, NULL};
    const char *k[1] = {"p"}, *v[1] = {"0.4"};
    int i, bad = 0, dropped = 0;
    for (i = 0; i < 63; i++) { xv[i] = urand(); og[i] = urand(); }
    x = from(e, shape_of(d), DP_FLOAT64, xv);
    head = from(e, shape_of(d), DP_FLOAT64, og);
    CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
    CHECK(dp_autograd_begin() == DP_OK);
    CHECK(invoke_str(e, "Dropout", 1, &x, 1, k, v, 0, 2, out, NULL) == DP_OK);
    CHECK(dp_autograd_end() == DP_OK);
    if (out[0]) {
        CHECK(dp_autograd_backward(out[0], head, 0) == DP_OK);
        CHECK(read_all(out[0], y) && read_all(out[1], m) && read_all(dp_nd_grad(x), g));
        for (i = 0; i < 63; i++) {
            dropped += m[i] == 0;
            bad |= (m[i] != 0 && m[i] != 1 / 0.6) || y[i] != xv[i] * m[i] || g[i] != og[i] * m[i];
        }
        CHECK(!bad && dropped > 0 && dropped < 63);
    }
    dp_nd_release(out[0]); dp_nd_release(out[1]); dp_nd_release(x); dp_nd_release(head);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* The same seed, the same masks, on every engine kind; another seed,
   other masks. Several Dropouts in a row share the generator in push
   order. */
static void dropout_deterministic(void) {
    static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    enum { N = 3000 };
    int64_t d[6] = {30, 100};
    const char *k[2] = {"p", "is_train"}, *v[2] = {"0.5", "true"};
    double *ref = (double *)malloc(sizeof(double) * 3 * N), *got = (double *)malloc(sizeof(double) * 3 * N), *y = (double *)malloc(sizeof(double) * N);
    int t, j, seed;
    for (seed = 0; seed < 2; seed++)
        for (t = 0; t < 3; t++) {
            dp_engine *e = engine_of(kinds[t]);
            double *dst = seed == 0 && t == 0 ? ref : got;
            CHECK(dp_random_seed(e, CPU0, seed == 0 ? 42 : 43) == DP_OK);
            for (j = 0; j < 3; j++) dropout_run(e, d, 2, k, v, y, dst + j * N);
            if (dst == got) {
                int same = memcmp(ref, got, sizeof(double) * 3 * N) == 0;
                if (same != (seed == 0)) { fprintf(stderr, "  engine kind %d seed %d: masks %s\n", t, seed, same ? "the same" : "differ"); CHECK(0); }
            }
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        }
    free(ref); free(got); free(y);
}

/* ---- bad parameters ------------------------------------------------------- */
static void expect_refused(dp_engine *e, const char *op, int nin, dp_ndarray *const *in, int n, const char *const *keys, const char *const *vals,
                           int nout, const char *const *must) {
    dp_ndarray *out[2] = {NULL, NULL};
    int i;
    g_msg[0] = 0;
    CHECK(invoke_str(e, op, nin, in, n, keys, vals, 0, nout, out, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(out[0] == NULL);
    for (i = 0; must[i]; i++)
        if (!strstr(g_msg, must[i])) { fprintf(stderr, "  %s: \"%s\" not in: %s\n", op, must[i], g_msg); CHECK(0); }
}
static void bad_parameters_refused(void) {
    dp_engine *e = engine_of(DP_ENGINE_NAIVE);
    dp_ndarray *in[5], *keep;
    int64_t c3[6] = {3};
    double z[3] = {0, 0, 0};
    bn_setup(e, in);
    {   /* gamma of 3 channels for data of 2 */
        const char *must[] = {"BatchNorm", "gamma", "(3,)", "(2, 2, 3)", NULL};
        keep = in[1]; in[1] = from(e, shape_of(c3), DP_FLOAT64, z);
        expect_refused(e, "BatchNorm", 5, in, 0, NULL, NULL, 1, must);
        dp_nd_release(in[1]); in[1] = keep;
    }
    {   /* moving_var likewise */
        const char *must[] = {"BatchNorm", "moving_var", "(3,)", NULL};
        keep = in[4]; in[4] = from(e, shape_of(c3), DP_FLOAT64, z);
        expect_refused(e, "BatchNorm", 5, in, 0, NULL, NULL, 1, must);
        dp_nd_release(in[4]); in[4] = keep;
    }
    {
        const char *k[1] = {"axis"}, *v[1] = {"3"}, *must[] = {"BatchNorm", "axis 3", "(2, 2, 3)", NULL};
        expect_refused(e, "BatchNorm", 5, in, 1, k, v, 1, must);
    }
    {
        const char *k[1] = {"eps"}, *v[1] = {"0"}, *must[] = {"BatchNorm", "eps", NULL};
        expect_refused(e, "BatchNorm", 5, in, 1, k, v, 1, must);
    }
    {
        const char *k[1] = {"output_mean_var"}, *v[1] = {"true"}, *must[] = {"BatchNorm", "output_mean_var", NULL};
        expect_refused(e, "BatchNorm", 5, in, 1, k, v, 1, must);
    }
    {
        const char *k[1] = {"momentum"}, *v[1] = {"1.5"}, *must[] = {"BatchNorm", "momentum", NULL};
        expect_refused(e, "BatchNorm", 5, in, 1, k, v, 1, must);
    }
    {
        const char *k[1] = {"p"}, *v[1] = {"1"}, *must[] = {"Dropout", "p", NULL};
        expect_refused(e, "Dropout", 1, in, 1, k, v, 2, must);
        v[0] = "-0.1";
        expect_refused(e, "Dropout", 1, in, 1, k, v, 2, must);
    }
    {
        const char *k[1] = {"axes"}, *v[1] = {"(3,)"}, *must[] = {"Dropout", "axes", "(2, 2, 3)", NULL};
        expect_refused(e, "Dropout", 1, in, 1, k, v, 2, must);
    }
    {   /* a symbol node names itself */
        dp_symbol *x = NULL, *y = NULL;
        const char *k[1] = {"p"}, *v[1] = {"1.0"};
        CHECK(dp_sym_var("x", &x) == DP_OK);
        g_msg[0] = 0;
        if (sym_op("Dropout", "drop7", 1, &x, 1, k, v, &y) == DP_OK) {
            const char *dn[1] = {"x"};
            dp_shape s, as[1], os[2];
            dp_dtype at[1], ot[2];
            memset(&s, 0, sizeof s); s.ndim = 1; s.dims[0] = 4;
            CHECK(sym_infer(y, 1, dn, &s, NULL, as, at, os, ot) == DP_ERROR_INVALID_ARGS);
        }
        CHECK(strstr(g_msg, "drop7") && strstr(g_msg, "p"));
        dp_sym_release(y); dp_sym_release(x);
    }
    for (int i = 0; i < 5; i++) dp_nd_release(in[i]);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

int main(void) {
    dp_logger lg;
    static const test_case tests[] = {
        {"bn_train_gradients", bn_train_gradients},
        {"bn_global_gradients", bn_global_gradients},
        {"bn_moving_statistics", bn_moving_statistics},
        {"bn_executor_and_json", bn_executor_and_json},
        {"bn_checkpoint_round_trip", bn_checkpoint_round_trip},
        {"bn_typed_bitwise", bn_typed_bitwise},
        {"dropout_fraction_and_scale", dropout_fraction_and_scale},
        {"dropout_gradient", dropout_gradient},
        {"dropout_deterministic", dropout_deterministic},
        {"bad_parameters_refused", bad_parameters_refused},
    };
    lg.func = msg_logger; lg.user = NULL;
    dp_set_default_logger(&lg);
    return run_tests("norm", tests, (int)(sizeof tests / sizeof tests[0]));
}
