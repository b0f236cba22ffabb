/* tests/torch_diff.c DIR SEED [CASES] - writes random cases of depeng_nn.h's
   layers for tests/torch_diff.py to recompute with PyTorch: Convolution
   and Deconvolution (1-D and 2-D, strides, pads, dilation, groups, bias,
   adj, target_shape), Pooling (max, avg with and without the padding in
   the divisor, sum; valid and full; global; 1-D and 2-D), LeakyReLU
   (leaky, elu, selu, gelu, prelu), Activation (all five act_types),
   Embedding and the regression outputs (linear, logistic, MAE), BatchNorm
   (training and inference, use_global_stats, fix_gamma, axis; the moving
   statistics before as moving_mean0 / moving_var0, after as the inputs)
   and Dropout (p 0, and p > 0 with its mask saved as mask), in float32.
   Each case N is a line of DIR/manifest.txt ("N op key=value ...")
   and its arrays DIR/caseN_<name>.npy: the inputs (data, weight, bias,
   gamma, ...), the head gradient og, the output y and the gradients d_<input>
   (depeng's forward operator and its gradient operator, invoked). */
#include "depeng.h"
#include "depeng_nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const dp_ctx CPU0 = {DP_DEV_CPU, 0};
static uint64_t g_rng;
static uint64_t next_u64(void) { g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17; return g_rng; }
static int64_t pick(int64_t lo, int64_t hi) { return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1)); }
static double urand(void) { return (double)(next_u64() >> 11) / 9007199254740992.0 * 2 - 1; }

static dp_ndarray *rand_array(dp_engine *e, int nd, const int64_t *dims, double scale) {
    dp_shape s;
    int64_t n, i;
    float *v;
    dp_ndarray *a = NULL;
    memset(&s, 0, sizeof s);
    s.ndim = nd;
    for (i = 0; i < nd; i++) s.dims[i] = dims[i];
    n = dp_shape_size(&s);
    v = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (i = 0; i < n; i++) v[i] = (float)(scale * urand());
    if (dp_nd_from_host(e, &s, DP_FLOAT32, CPU0, v, &a) != DP_OK) a = NULL;
    free(v);
    return a;
}
static int save(const char *dir, int id, const char *name, dp_ndarray *a) {
    char path[1024];
    snprintf(path, sizeof path, "%s/case%d_%s.npy", dir, id, name);
    return dp_nd_save_npy(a, path, NULL) == DP_OK ? 0 : -1;
}
/* A tuple "(a, b)" or "(a,)" of the last nd of v. */
static void tuple(char *buf, size_t cap, int nd, const int64_t *v) {
    if (nd == 2) snprintf(buf, cap, "(%lld, %lld)", (long long)v[0], (long long)v[1]);
    else snprintf(buf, cap, "(%lld,)", (long long)v[0]);
}
typedef struct kwlist { int n; const char *k[DP_MAX_PARAMS]; char v[DP_MAX_PARAMS][48]; } kwlist;
static void kw(kwlist *l, const char *k, const char *v) { l->k[l->n] = k; snprintf(l->v[l->n], sizeof l->v[0], "%s", v); l->n++; }
static void kwi(kwlist *l, const char *k, long long v) { char b[32]; snprintf(b, sizeof b, "%lld", v); kw(l, k, b); }
static void kwt(kwlist *l, const char *k, int nd, const int64_t *v) { char b[48]; tuple(b, sizeof b, nd, v); kw(l, k, b); }

/* Runs op forward and its gradient, saves everything and the manifest line. */
static int run_case(dp_engine *e, FILE *man, const char *dir, int id, const char *op, int nin, dp_ndarray **in, const char *const *in_names, const kwlist *l) {
    dp_invoke_desc d;
    dp_ndarray *y = NULL, *og = NULL, *grads[5] = {NULL, NULL, NULL, NULL, NULL};
    char gname[64];
    int i, rc = -1;
    memset(&d, 0, sizeof d);
    d.op = op; d.num_inputs = nin;
    for (i = 0; i < nin; i++) d.inputs[i] = in[i];
    for (i = 0; i < l->n; i++) { d.params[i].name = l->k[i]; d.params[i].s = l->v[i]; }
    if (dp_invoke(e, &d, &y) != DP_OK) { fprintf(stderr, "torch_diff: case %d: %s refused\n", id, op); goto done; }
    if ((og = rand_array(e, dp_nd_shape(y)->ndim, dp_nd_shape(y)->dims, 1)) == NULL) goto done;
    snprintf(gname, sizeof gname, "_backward_%s", op);
    d.op = gname; d.num_inputs = nin + 1; d.inputs[0] = og;        /* (og, inputs[, output]) as grad_needs says */
    for (i = 0; i < nin; i++) d.inputs[i + 1] = in[i];
    if (dp_operator_find(op)->grad_needs & DP_GRAD_OUTPUTS) d.inputs[d.num_inputs++] = y;
    if (dp_invoke(e, &d, grads) != DP_OK) { fprintf(stderr, "torch_diff: case %d: %s refused\n", id, gname); goto done; }
    for (i = 0; i < nin; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "d_%s", in_names[i]);
        if (save(dir, id, in_names[i], in[i]) || save(dir, id, nm, grads[i])) goto done;
    }
    if (save(dir, id, "y", y) || save(dir, id, "og", og)) goto done;
    fprintf(man, "%d %s", id, op);
    for (i = 0; i < l->n; i++) fprintf(man, " %s=%s", l->k[i], l->v[i]);
    for (i = 0; i < nin; i++) fprintf(man, " input=%s", in_names[i]);
    fprintf(man, "\n");
    rc = 0;
done:
    dp_nd_release(y); dp_nd_release(og);
    for (i = 0; i < 5; i++) dp_nd_release(grads[i]);
    return rc;
}

static int conv_case(dp_engine *e, FILE *man, const char *dir, int id, int deconv) {
    static const char *names[3] = {"data", "weight", "bias"};
    int nd = (int)pick(1, 2), a, nin, bias = (int)pick(0, 1);
    int64_t g = pick(1, 3), c = g * pick(1, 3), f = g * pick(1, 3), n = pick(1, 3), k[2], s[2], p[2], dl[2], adj[2], sp[2], xd[4], wd[4], bd[1];
    dp_ndarray *in[3] = {NULL, NULL, NULL};
    kwlist l;
    int rc;
    memset(&l, 0, sizeof l);
    for (a = 0; a < nd; a++) {
        k[a] = pick(1, 4); s[a] = pick(1, 3); dl[a] = pick(1, 2);
        p[a] = deconv ? pick(0, (dl[a] * (k[a] - 1)) / 2) : pick(0, k[a] / 2 + 1);
        adj[a] = deconv ? pick(0, (s[a] > dl[a] ? s[a] : dl[a]) - 1) : 0;
        sp[a] = deconv ? pick(2, 6) : dl[a] * (k[a] - 1) + 1 + pick(0, 6) - 2 * p[a];
        if (sp[a] < 1) sp[a] = 1;
        if (!deconv && sp[a] + 2 * p[a] < dl[a] * (k[a] - 1) + 1) sp[a] = dl[a] * (k[a] - 1) + 1;
    }
    xd[0] = n; xd[1] = c; wd[0] = deconv ? c : f; wd[1] = deconv ? f / g : c / g; bd[0] = f;
    for (a = 0; a < nd; a++) { xd[2 + a] = sp[a]; wd[2 + a] = k[a]; }
    kwt(&l, "kernel", nd, k); kwt(&l, "stride", nd, s); kwt(&l, "dilate", nd, dl); kwt(&l, "pad", nd, p);
    kwi(&l, "num_filter", f); kwi(&l, "num_group", g);
    kw(&l, "no_bias", bias ? "False" : "True"); kwi(&l, "num_args", bias ? 3 : 2);
    if (deconv) kwt(&l, "adj", nd, adj);
    kw(&l, "algo", pick(0, 1) ? "im2col" : "direct");
    nin = 2 + bias;
    in[0] = rand_array(e, nd + 2, xd, 1); in[1] = rand_array(e, nd + 2, wd, 1); if (bias) in[2] = rand_array(e, 1, bd, 1);
    rc = run_case(e, man, dir, id, deconv ? "Deconvolution" : "Convolution", nin, in, names, &l);
    for (a = 0; a < 3; a++) dp_nd_release(in[a]);
    return rc;
}
/* PyTorch's ceil_mode drops a last window that starts past the input and
   its left padding; MXNet's full convention keeps it (and depeng gives it
   0): such cases are drawn again. */
static int pool_case(dp_engine *e, FILE *man, const char *dir, int id) {
    static const char *names[1] = {"data"}, *types[3] = {"max", "avg", "sum"};
    int nd = (int)pick(1, 2), a, full = (int)pick(0, 1), glob = pick(0, 5) == 0, type = (int)pick(0, 2);
    int64_t k[2], s[2], p[2], xd[4];
    dp_ndarray *in[1];
    kwlist l;
    int rc;
    memset(&l, 0, sizeof l);
    xd[0] = pick(1, 3); xd[1] = pick(1, 3);
    for (a = 0; a < nd; a++) {
        for (;;) {
            int64_t out;
            k[a] = pick(1, 4); s[a] = pick(1, 3); p[a] = pick(0, k[a] / 2); xd[2 + a] = pick(k[a], 9);
            out = full ? 1 + (xd[2 + a] + 2 * p[a] - k[a] + s[a] - 1) / s[a] : 1 + (xd[2 + a] + 2 * p[a] - k[a]) / s[a];
            if ((out - 1) * s[a] < xd[2 + a] + p[a]) break;
        }
    }
    kw(&l, "pool_type", types[type]);
    if (glob) kw(&l, "global_pool", "True");
    else {
        kwt(&l, "kernel", nd, k); kwt(&l, "stride", nd, s); kwt(&l, "pad", nd, p);
        kw(&l, "pooling_convention", full ? "full" : "valid");
        if (type == 1) kw(&l, "count_include_pad", pick(0, 1) ? "True" : "False");
    }
    in[0] = rand_array(e, nd + 2, xd, 1);
    rc = run_case(e, man, dir, id, "Pooling", 1, in, names, &l);
    dp_nd_release(in[0]);
    return rc;
}
static int act_case(dp_engine *e, FILE *man, const char *dir, int id) {
    static const char *names[2] = {"data", "gamma"}, *leaky[5] = {"leaky", "elu", "selu", "gelu", "prelu"}, *acts[5] = {"softrelu", "softsign", "sigmoid", "tanh", "relu"};
    int which = (int)pick(0, 9), nin = 1;
    int64_t xd[4], gd[1];
    dp_ndarray *in[2] = {NULL, NULL};
    kwlist l;
    char slope[32];
    int rc;
    memset(&l, 0, sizeof l);
    xd[0] = pick(1, 3); xd[1] = pick(1, 4); xd[2] = pick(1, 5); xd[3] = pick(1, 5);
    if (which < 5) {
        kw(&l, "act_type", leaky[which]);
        snprintf(slope, sizeof slope, "%.3f", 0.05 + (urand() + 1) * 0.4);
        if (which < 2) kw(&l, "slope", slope);
        if (which == 4) { kwi(&l, "num_args", 2); nin = 2; gd[0] = pick(0, 1) ? xd[1] : 1; in[1] = rand_array(e, 1, gd, 1); }
    } else kw(&l, "act_type", acts[which - 5]);
    in[0] = rand_array(e, 4, xd, 3);         /* [-3, 3): the nonlinear ranges */
    rc = run_case(e, man, dir, id, which < 5 ? "LeakyReLU" : "Activation", nin, in, names, &l);
    dp_nd_release(in[0]); dp_nd_release(in[1]);
    return rc;
}

/* Embedding: data of integral values below input_dim (float32, as MXNet's). */
static int embedding_case(dp_engine *e, FILE *man, const char *dir, int id) {
    static const char *names[2] = {"data", "weight"};
    int64_t dd[2], wd[2], i;
    dp_ndarray *in[2];
    kwlist l;
    float *v;
    int rc;
    memset(&l, 0, sizeof l);
    dd[0] = pick(1, 4); dd[1] = pick(1, 5); wd[0] = pick(1, 7); wd[1] = pick(1, 6);
    kwi(&l, "input_dim", wd[0]); kwi(&l, "output_dim", wd[1]);
    v = (float *)malloc(sizeof(float) * (size_t)(dd[0] * dd[1]));
    for (i = 0; i < dd[0] * dd[1]; i++) v[i] = (float)pick(0, wd[0] - 1);
    {
        dp_shape s;
        memset(&s, 0, sizeof s);
        s.ndim = 2; s.dims[0] = dd[0]; s.dims[1] = dd[1];
        in[0] = NULL;
        if (dp_nd_from_host(e, &s, DP_FLOAT32, CPU0, v, &in[0]) != DP_OK) { free(v); return -1; }
    }
    free(v);
    in[1] = rand_array(e, 2, wd, 1);
    rc = run_case(e, man, dir, id, "Embedding", 2, in, names, &l);
    dp_nd_release(in[0]); dp_nd_release(in[1]);
    return rc;
}
/* The regression outputs: label in [0, 1) for the logistic one. */
static int regression_case(dp_engine *e, FILE *man, const char *dir, int id) {
    static const char *names[2] = {"data", "label"}, *ops[3] = {"LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"};
    int64_t xd[3];
    int which = (int)pick(0, 2), rc;
    char scale[32];
    dp_ndarray *in[2];
    kwlist l;
    memset(&l, 0, sizeof l);
    xd[0] = pick(1, 4); xd[1] = pick(1, 5); xd[2] = pick(1, 3);
    snprintf(scale, sizeof scale, "%.3f", 0.5 + (urand() + 1));
    kw(&l, "grad_scale", scale);
    in[0] = rand_array(e, 3, xd, 2); in[1] = rand_array(e, 3, xd, which == 1 ? 0.5 : 2);
    rc = run_case(e, man, dir, id, ops[which], 2, in, names, &l);
    dp_nd_release(in[0]); dp_nd_release(in[1]);
    return rc;
}

/* BatchNorm: random axis, channels, is_train, use_global_stats,
   fix_gamma, eps, momentum; moving_var positive. */
static int bn_case(dp_engine *e, FILE *man, const char *dir, int id) {
    static const char *names[5] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
    int nd = (int)pick(2, 4), axis = (int)pick(0, nd - 1), i, rc = -1;
    int64_t xd[4], cd[1];
    dp_ndarray *in[5] = {NULL, NULL, NULL, NULL, NULL}, *mv = NULL, *one = NULL;
    kwlist l;
    memset(&l, 0, sizeof l);
    for (i = 0; i < nd; i++) xd[i] = pick(1, 4);
    xd[axis == 0 ? 1 : 0] = pick(3, 5);            /* at least 3 elements per channel: with 2 each is +-1 and the data gradient only rounding */
    cd[0] = xd[axis];
    kwi(&l, "axis", pick(0, 1) ? axis : axis - nd);
    kw(&l, "is_train", pick(0, 2) ? "True" : "False");
    kw(&l, "use_global_stats", pick(0, 3) ? "False" : "True");
    kw(&l, "fix_gamma", pick(0, 1) ? "True" : "False");
    kw(&l, "eps", pick(0, 1) ? "0.001" : "1e-05");
    kw(&l, "momentum", pick(0, 1) ? "0.9" : "0.75");
    in[0] = rand_array(e, nd, xd, 2); in[1] = rand_array(e, 1, cd, 1); in[2] = rand_array(e, 1, cd, 1); in[3] = rand_array(e, 1, cd, 1);
    mv = rand_array(e, 1, cd, 0.5);
    {   /* moving_var = |mv| + 0.5 */
        dp_invoke_desc d;
        memset(&d, 0, sizeof d);
        d.op = "abs"; d.inputs[0] = mv;
        if (dp_invoke(e, &d, &one) != DP_OK) goto done;
        memset(&d, 0, sizeof d);
        d.op = "add_scalar"; d.inputs[0] = one; d.scalar = 0.5;
        if (dp_invoke(e, &d, &in[4]) != DP_OK) goto done;
    }
    for (i = 0; i < 5; i++) if (!in[i]) goto done;
    if (save(dir, id, "moving_mean0", in[3]) || save(dir, id, "moving_var0", in[4])) goto done;
    rc = run_case(e, man, dir, id, "BatchNorm", 5, in, names, &l);
done:
    for (i = 0; i < 5; i++) dp_nd_release(in[i]);
    dp_nd_release(mv); dp_nd_release(one);
    return rc;
}
/* Dropout in training: p 0 (the identity), or p > 0 with the mask saved
   (the output and gradient checked against data * mask, og * mask). */
static int dropout_case(dp_engine *e, FILE *man, const char *dir, int id) {
    int nd = (int)pick(1, 3), i, rc = -1;
    int64_t xd[3];
    dp_invoke_desc d;
    dp_ndarray *x, *out[2] = {NULL, NULL}, *og = NULL, *g = NULL;
    char p[16];
    for (i = 0; i < nd; i++) xd[i] = pick(1, 6);
    snprintf(p, sizeof p, "%g", pick(0, 1) ? 0.0 : (double)pick(1, 9) / 10);
    x = rand_array(e, nd, xd, 1);
    memset(&d, 0, sizeof d);
    d.op = "Dropout"; d.inputs[0] = x;
    d.params[0].name = "p"; d.params[0].s = p; d.params[1].name = "is_train"; d.params[1].s = "True";
    if (!x || dp_invoke(e, &d, out) != DP_OK || (og = rand_array(e, nd, xd, 1)) == NULL) { fprintf(stderr, "torch_diff: case %d: Dropout refused\n", id); goto done; }
    memset(&d, 0, sizeof d);
    d.op = "_backward_Dropout"; d.inputs[0] = og; d.inputs[1] = out[1]; d.inputs[2] = out[0]; d.inputs[3] = out[1];   /* the mask's og: unused */
    d.params[0].name = "p"; d.params[0].s = p; d.params[1].name = "is_train"; d.params[1].s = "True";
    if (dp_invoke(e, &d, &g) != DP_OK) { fprintf(stderr, "torch_diff: case %d: _backward_Dropout refused\n", id); goto done; }
    if (save(dir, id, "data", x) || save(dir, id, "d_data", g) || save(dir, id, "y", out[0]) || save(dir, id, "mask", out[1]) || save(dir, id, "og", og)) goto done;
    fprintf(man, "%d Dropout p=%s is_train=True input=data\n", id, p);
    rc = 0;
done:
    dp_nd_release(x); dp_nd_release(out[0]); dp_nd_release(out[1]); dp_nd_release(og); dp_nd_release(g);
    return rc;
}

int main(int argc, char **argv) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    FILE *man;
    char path[1024];
    int i, cases, bad = 0;
    if (argc < 3) { fprintf(stderr, "usage: torch_diff DIR SEED [CASES]\n"); return 2; }
    g_rng = 0x9E3779B97F4A7C15ull * (uint64_t)(strtoull(argv[2], NULL, 10) + 1);
    cases = argc > 3 ? atoi(argv[3]) : 40;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_NAIVE; d.ignore_env = 1;
    if (dp_engine_create(&d, &e) != DP_OK) return 1;
    snprintf(path, sizeof path, "%s/manifest.txt", argv[1]);
    if ((man = fopen(path, "w")) == NULL) { fprintf(stderr, "torch_diff: cannot write %s\n", path); return 1; }
    for (i = 0; i < cases; i++) {
        int kind = i % 8;
        int rc = kind == 0 ? conv_case(e, man, argv[1], i, 0) : kind == 1 ? conv_case(e, man, argv[1], i, 1)
               : kind == 2 ? pool_case(e, man, argv[1], i) : kind == 3 ? act_case(e, man, argv[1], i)
               : kind == 4 ? embedding_case(e, man, argv[1], i) : kind == 5 ? regression_case(e, man, argv[1], i)
               : kind == 6 ? bn_case(e, man, argv[1], i) : dropout_case(e, man, argv[1], i);
        bad |= rc != 0;
    }
    fclose(man);
    if (dp_engine_destroy(e, NULL) != DP_OK) bad = 1;
    return bad;
}
