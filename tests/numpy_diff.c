/* tests/numpy_diff.c - the driver of the differential test against NumPy
   (tests/numpy_diff.py compares; tests/numpy_diff_check.sh runs both).

   numpy_diff DIR [SEED [ROUNDS]] runs every built-in operator (all but
   the random draws, whose numbers have no NumPy counterpart; the gradient
   operators on float32 and float64 at smooth points) over
   random shapes, NumPy broadcasts, every dtype it accepts and edge values
   (NaN, +-inf, +-0, 2^53 + 1, INT64_MAX / MIN, int8 and uint8 ends,
   float16 subnormals, random bit patterns), plus invocations whose output
   is the input or an overlapping view of it, and optimizer updates whose
   weight or state is a view over their gradient's storage. Each case's inputs and outputs
   go to DIR as case<N>_in<i>.npy / case<N>_out<j>.npy, and one line per
   case to DIR/manifest.tsv:
       N <tab> operator <tab> key=value;key=value <tab> scalar <tab> inputs <tab> outputs
   The inputs are saved before the invocation, so a case that writes over
   its input still has the values it read. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/test_calls.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rnd_int(int n) { return (int)(rnd() % (uint64_t)n); }
static double rnd_unit(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }
static double rnd_normal(void) { return sqrt(-2.0 * log(1.0 - rnd_unit())) * cos(6.283185307179586 * rnd_unit()); }

static dp_engine *g_eng;
static const char *g_dir;
static FILE *g_manifest;
static int g_case, g_errors;

/* Value kinds: WILD mixes edge values and random bit patterns; TAME is
   normal draws (the operators whose reference is a formula); SMALL is
   small integers (exponents, indices near a depth). */
enum { WILD, TAME, SMALL, POSITIVE };

static double float_edge(void) {
    static const double e[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 9007199254740993.0, 65504.0, 65520.0,
                               -65519.0, 5.960464477539063e-08, 6.097555160522461e-05, 1e-40, 3.4e38, 1e300, -1e300, 127.9, -128.9, 255.5};
    return e[rnd_int((int)(sizeof e / sizeof e[0]))];
}
static int64_t int_edge(void) {
    static const int64_t e[] = {INT64_MAX, INT64_MIN, 9007199254740993LL, -9007199254740993LL, 9007199254740992LL, 0, 1, -1,
                                2147483647LL, -2147483648LL, 2147483648LL, 127, -128, 255, 256, 3037000500LL};
    return e[rnd_int((int)(sizeof e / sizeof e[0]))];
}
/* One element into buf[i] as dtype dt. */
static void put(void *buf, dp_dtype dt, int64_t i, int kind) {
    int r = rnd_int(8);
    if (kind == SMALL) {
        int64_t v = rnd_int(9) - 3;
        if (dt == DP_BOOL || dt == DP_UINT8) v = v < 0 ? -v : v;
        if (dp__dtype_is_int(dt)) dp__store_int(buf, dt, i, v, DP_REQ_WRITE);
        else dp__store_elem(buf, dt, i, (double)v + (r == 0 ? 0.5 : 0.0), DP_REQ_WRITE);
        return;
    }
    if (kind == POSITIVE) { dp__store_elem(buf, dt, i, fabs(rnd_normal()) + 0.5, DP_REQ_WRITE); return; }
    if (kind == TAME) { dp__store_elem(buf, dt, i, dp__dtype_is_int(dt) ? (double)(rnd_int(21) - 10) : rnd_normal() * 3, DP_REQ_WRITE); return; }
    switch (dt) {
    case DP_FLOAT64: {
        double v = r < 2 ? float_edge() : r < 3 ? 0 : rnd_normal() * pow(10.0, rnd_int(7) - 3);
        if (r == 2) { uint64_t bits = rnd(); memcpy(&v, &bits, 8); }
        ((double *)buf)[i] = v;
        break;
    }
    case DP_FLOAT32: {
        float v = (float)(r < 2 ? float_edge() : rnd_normal() * pow(10.0, rnd_int(7) - 3));
        if (r == 2) { uint32_t bits = (uint32_t)rnd(); memcpy(&v, &bits, 4); }
        ((float *)buf)[i] = v;
        break;
    }
    case DP_FLOAT16:
        if (r < 3) ((uint16_t *)buf)[i] = (uint16_t)rnd();   /* every pattern: subnormals, inf, NaN */
        else dp__store_elem(buf, dt, i, r < 5 ? float_edge() : rnd_normal() * pow(10.0, rnd_int(5) - 2), DP_REQ_WRITE);
        break;
    default:
        dp__store_int(buf, dt, i, r < 3 ? int_edge() : r < 5 ? (int64_t)rnd() : (int64_t)(rnd_int(201) - 100), DP_REQ_WRITE);
        break;
    }
}
static dp_shape shape_of(int ndim, const int64_t *dims) {
    dp_shape s;
    int d;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    for (d = 0; d < ndim; d++) s.dims[d] = dims[d];
    return s;
}
static dp_shape random_shape(int max_ndim, int max_dim) {
    dp_shape s;
    int d;
    memset(&s, 0, sizeof s);
    s.ndim = rnd_int(max_ndim + 1);
    for (d = 0; d < s.ndim; d++) s.dims[d] = 1 + rnd_int(max_dim);
    if (s.ndim && rnd_int(12) == 0) s.dims[rnd_int(s.ndim)] = 0;   /* an empty array now and then */
    return s;
}
static dp_ndarray *make(const dp_shape *s, dp_dtype dt, int kind) {
    int64_t n = dp_shape_size(s), i;
    size_t bytes = (size_t)n * dp_dtype_size(dt);
    void *buf = malloc(bytes ? bytes : 1);
    dp_ndarray *a = NULL;
    for (i = 0; i < n; i++) put(buf, dt, i, kind);
    if (dp_nd_from_host(g_eng, s, dt, (dp_ctx){DP_DEV_CPU, 0}, buf, &a) != DP_OK) { fprintf(stderr, "from_host failed\n"); exit(2); }
    free(buf);
    return a;
}
static void save(dp_ndarray *a, int n, const char *what, int i) {
    char path[512];
    snprintf(path, sizeof path, "%s/case%d_%s%d.npy", g_dir, n, what, i);
    if (dp_nd_save_npy(a, path, NULL) != DP_OK) { fprintf(stderr, "cannot save %s\n", path); g_errors++; }
}
/* op invoked with params "k=v;k=v" */
static dp_result invoke(const char *op, int nin, dp_ndarray **in, const char *params, double scalar, int nout, dp_ndarray **out) {
    const char *keys[8], *vals[8];
    char buf[512], *p, *save_p = NULL;
    int nkw = 0;
    snprintf(buf, sizeof buf, "%s", params);
    for (p = strtok_r(buf, ";", &save_p); p && nkw < 8; p = strtok_r(NULL, ";", &save_p)) {
        char *eq = strchr(p, '=');
        *eq = 0;
        keys[nkw] = p; vals[nkw] = eq + 1; nkw++;
    }
    return invoke_str(g_eng, op, nin, in, nkw, keys, vals, scalar, nout, out, NULL);
}
/* Runs op; outputs[j] may be given (an alias case) or NULL. */
static void run(const char *op, int nin, dp_ndarray **in, const char *params, double scalar, int nout, dp_ndarray **out) {
    int i, n = g_case++;
    for (i = 0; i < nin; i++) save(in[i], n, "in", i);
    if (invoke(op, nin, in, params, scalar, nout, out) != DP_OK) {
        fprintf(stderr, "case %d: %s(%s) was refused\n", n, op, params);
        g_errors++;
        return;
    }
    for (i = 0; i < nout; i++) save(out[i], n, "out", i);
    fprintf(g_manifest, "%d\t%s\t%s\t%.17g\t%d\t%d\n", n, op, params, scalar, nin, nout);
}
static void release(int n, dp_ndarray **a) { int i; for (i = 0; i < n; i++) { dp_nd_release(a[i]); a[i] = NULL; } }

static const dp_dtype all_dtypes[] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32, DP_INT64, DP_UINT8, DP_INT8, DP_BOOL};
#define NDT ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))
static dp_dtype any_dtype(void) { return all_dtypes[rnd_int(NDT)]; }
static dp_dtype float_dtype(void) { static const dp_dtype f[] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16}; return f[rnd_int(3)]; }

/* b's shape broadcast against a: some axes 1, some leading axes dropped */
static dp_shape broadcast_partner(const dp_shape *a) {
    dp_shape b = *a;
    int d, drop = a->ndim ? rnd_int(a->ndim + 1) : 0;
    for (d = 0; d < b.ndim; d++) if (rnd_int(3) == 0) b.dims[d] = 1;
    if (rnd_int(2)) {
        memmove(b.dims, b.dims + drop, sizeof(int64_t) * (size_t)(b.ndim - drop));
        b.ndim -= drop;
    }
    return b;
}
static void axes_param(const dp_shape *s, char *out, size_t cap, int one_axis) {
    int d, n = 0;
    size_t len = 0;
    len += (size_t)snprintf(out + len, cap - len, "(");
    for (d = 0; d < s->ndim; d++) {
        if (one_axis ? n == 0 && rnd_int(s->ndim - d) == 0 : rnd_int(2) == 0) {
            int ax = rnd_int(2) ? d : d - s->ndim;
            len += (size_t)snprintf(out + len, cap - len, n ? ", %d" : "%d", ax);
            n++;
        }
    }
    snprintf(out + len, cap - len, n == 1 ? ",)" : ")");
}

static void elementwise_cases(void) {
    static const char *unary[] = {"negative", "abs", "sign", "sqrt", "square", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu"};
    static const char *binary[] = {"add", "sub", "mul", "div", "maximum", "minimum", "power"};
    static const char *scalar_ops[] = {"add_scalar", "sub_scalar", "mul_scalar", "div_scalar", "maximum_scalar", "minimum_scalar",
                                       "power_scalar", "rsub_scalar", "rdiv_scalar", "rpower_scalar"};
    static const double scalars[] = {0, 1, -1, 3, 2.5, -0.5, 1e20, NAN, INFINITY, -INFINITY, 9007199254740993.0, 4611686018427387904.0, 200};
    dp_ndarray *in[2] = {NULL, NULL}, *out[1] = {NULL};
    int u, t;
    for (u = 0; u < (int)(sizeof unary / sizeof unary[0]); u++) {
        for (t = 0; t < NDT; t++) {
            dp_shape s = random_shape(3, 5);
            in[0] = make(&s, all_dtypes[t], WILD);
            run(unary[u], 1, in, "", 0, 1, out);
            release(1, in); release(1, out);
        }
    }
    for (u = 0; u < (int)(sizeof binary / sizeof binary[0]); u++) {
        for (t = 0; t < 2 * NDT; t++) {
            dp_dtype dt = all_dtypes[t % NDT];
            dp_shape a = random_shape(3, 4), b = broadcast_partner(&a);
            int power = strcmp(binary[u], "power") == 0;
            if (rnd_int(2)) { dp_shape x = a; a = b; b = x; }
            in[0] = make(&a, dt, power && dp__dtype_is_int(dt) ? WILD : WILD);
            in[1] = make(&b, dt, power ? SMALL : WILD);
            run(binary[u], 2, in, "", 0, 1, out);
            release(2, in); release(1, out);
        }
    }
    for (u = 0; u < (int)(sizeof scalar_ops / sizeof scalar_ops[0]); u++) {
        for (t = 0; t < 2 * NDT; t++) {
            dp_shape s = random_shape(2, 5);
            int power = strstr(scalar_ops[u], "power") != NULL;
            double sc = power ? (double)(rnd_int(7) - 2) + (rnd_int(4) == 0 ? 0.5 : 0) : scalars[rnd_int((int)(sizeof scalars / sizeof scalars[0]))];
            in[0] = make(&s, all_dtypes[t % NDT], strcmp(scalar_ops[u], "rpower_scalar") == 0 ? SMALL : WILD);
            run(scalar_ops[u], 1, in, "", sc, 1, out);
            release(1, in); release(1, out);
        }
    }
    for (t = 0; t < 3 * NDT; t++) {
        static const char *bounds[] = {"a_min=-1;a_max=1", "a_min=0;a_max=255", "a_min=-2.5;a_max=3.5", "a_min=-1e30;a_max=9007199254740992",
                                       "a_min=-200;a_max=-100", "a_min=3000000000;a_max=4000000000", "a_min=0;a_max=0"};
        dp_shape s = random_shape(3, 5);
        in[0] = make(&s, all_dtypes[t % NDT], WILD);
        run("clip", 1, in, bounds[rnd_int((int)(sizeof bounds / sizeof bounds[0]))], 0, 1, out);
        release(1, in); release(1, out);
    }
}
static void reduction_cases(void) {
    static const char *red[] = {"sum", "mean", "max", "min", "argmax"};
    dp_ndarray *in[1] = {NULL}, *out[1] = {NULL};
    int r, t;
    char params[128], axes[64];
    for (r = 0; r < 5; r++) {
        for (t = 0; t < 2 * NDT; t++) {
            dp_shape s = random_shape(3, 5);
            int argmax = r == 4;
            if ((r == 2 || r == 3 || argmax) && dp_shape_size(&s) == 0) s.ndim = 0;   /* NumPy refuses empty max/argmax */
            axes_param(&s, axes, sizeof axes, argmax);
            snprintf(params, sizeof params, "axis=%s;keepdims=%d", axes, rnd_int(2));
            in[0] = make(&s, all_dtypes[t % NDT], r == 0 && rnd_int(2) ? TAME : WILD);
            run(red[r], 1, in, params, 0, 1, out);
            release(1, in); release(1, out);
        }
    }
}
static void movement_cases(void) {
    dp_ndarray *in[4] = {NULL, NULL, NULL, NULL}, *out[1] = {NULL};
    int t, i;
    char params[128];
    for (t = 0; t < 3 * NDT; t++) {   /* transpose: axes reversed or a random permutation */
        dp_shape s = random_shape(4, 4);
        int perm[DP_MAX_DIMS], d;
        size_t len = 0;
        for (d = 0; d < s.ndim; d++) perm[d] = d;
        for (d = s.ndim - 1; d > 0; d--) { int j = rnd_int(d + 1), x = perm[d]; perm[d] = perm[j]; perm[j] = x; }
        len += (size_t)snprintf(params + len, sizeof params - len, "axes=(");
        for (d = 0; d < s.ndim; d++) len += (size_t)snprintf(params + len, sizeof params - len, d ? ", %d" : "%d", perm[d]);
        snprintf(params + len, sizeof params - len, s.ndim == 1 ? ",)" : ")");
        in[0] = make(&s, all_dtypes[t % NDT], WILD);
        run("transpose", 1, in, rnd_int(3) ? params : "axes=()", 0, 1, out);
        release(1, in); release(1, out);
    }
    for (t = 0; t < 3 * NDT; t++) {   /* concat of 1..4 parts along dim */
        dp_shape s = random_shape(3, 4);
        int nparts = 1 + rnd_int(4), dim;
        dp_dtype dt = all_dtypes[t % NDT];
        if (s.ndim == 0) { s.ndim = 1; s.dims[0] = 2; }
        dim = rnd_int(s.ndim);
        for (i = 0; i < nparts; i++) { dp_shape p = s; p.dims[dim] = rnd_int(4); in[i] = make(&p, dt, WILD); }
        snprintf(params, sizeof params, "num_args=%d;dim=%d", nparts, rnd_int(2) ? dim : dim - s.ndim);
        run("concat", nparts, in, params, 0, 1, out);
        release(nparts, in); release(1, out);
    }
    for (t = 0; t < 2 * NDT; t++) {   /* one_hot: indices of any dtype into any dtype */
        dp_shape s = random_shape(2, 5);
        snprintf(params, sizeof params, "depth=%d;on_value=%s;off_value=%s;dtype=%s", 1 + rnd_int(5), rnd_int(2) ? "1" : "-7.5",
                 rnd_int(2) ? "0" : "300", dp_dtype_name(any_dtype()));
        in[0] = make(&s, all_dtypes[t % NDT], rnd_int(2) ? SMALL : WILD);
        run("one_hot", 1, in, params, 0, 1, out);
        release(1, in); release(1, out);
    }
    for (t = 0; t < NDT * NDT; t++) {   /* cast: every pair of dtypes */
        dp_shape s = random_shape(2, 6);
        snprintf(params, sizeof params, "dtype=%s", dp_dtype_name(all_dtypes[t % NDT]));
        in[0] = make(&s, all_dtypes[t / NDT], WILD);
        run("cast", 1, in, params, 0, 1, out);
        release(1, in); release(1, out);
    }
    for (t = 0; t < NDT; t++) {   /* _copy and reshape */
        dp_shape s = random_shape(3, 4);
        in[0] = make(&s, all_dtypes[t], WILD);
        run("_copy", 1, in, "", 0, 1, out);
        release(1, out);
        snprintf(params, sizeof params, "shape=(-1,)");
        run("reshape", 1, in, params, 0, 1, out);
        release(1, in); release(1, out);
    }
}
/* Outputs over their own input: the same array, and overlapping views. */
static void alias_cases(void) {
    dp_ndarray *in[2] = {NULL, NULL}, *out[1] = {NULL}, *base = NULL;
    int t;
    for (t = 0; t < NDT; t++) {
        int64_t n = 1 + rnd_int(5), dims[2];
        dp_shape s, whole;
        dims[0] = n; dims[1] = n;
        s = shape_of(2, dims);
        in[0] = make(&s, all_dtypes[t], WILD);
        out[0] = in[0];
        run("transpose", 1, in, "axes=()", 0, 1, out);              /* transpose(x, out=x) */
        release(1, in);
        dims[0] = n + 1; dims[1] = n;
        whole = shape_of(2, dims);
        base = make(&whole, all_dtypes[t], WILD);
        dp_nd_slice(base, 0, n, &in[0]);
        dp_nd_slice(base, 1, n + 1, &out[0]);                          /* rows 1.. over rows 0.. */
        run("transpose", 1, in, "axes=()", 0, 1, out);
        dp_nd_release(out[0]);
        dp_nd_slice(base, 1, n + 1, &out[0]);
        run("concat", 1, in, "num_args=1;dim=0", 0, 1, out);          /* a shifted copy */
        dp_nd_release(out[0]);
        dp_nd_slice(base, 1, n + 1, &out[0]);
        in[1] = dp_nd_retain(in[0]);
        run("add", 2, in, "", 0, 1, out);                              /* element-wise, shifted by a row */
        release(2, in); dp_nd_release(out[0]); dp_nd_release(base);
    }
}
static void nn_cases(void) {
    dp_ndarray *in[4] = {NULL, NULL, NULL, NULL}, *out[1] = {NULL};
    int t;
    char params[128];
    for (t = 0; t < 6; t++) {
        dp_shape s = random_shape(3, 5);
        if (s.ndim == 0 || dp_shape_size(&s) == 0) { s.ndim = 1; s.dims[0] = 3; }   /* an axis, and no empty row (NumPy refuses its max) */
        snprintf(params, sizeof params, "axis=%d", rnd_int(s.ndim) - (rnd_int(2) ? s.ndim : 0));
        in[0] = make(&s, float_dtype(), TAME);
        run(t & 1 ? "softmax" : "log_softmax", 1, in, params, 0, 1, out);
        release(1, in); release(1, out);
    }
    for (t = 0; t < 4; t++) {
        int64_t n = 1 + rnd_int(5), c = 1 + rnd_int(5), dims[2] = {n, c}, i;
        dp_shape s = shape_of(2, dims), ls = shape_of(1, &n);
        dp_dtype dt = t & 1 ? DP_FLOAT32 : DP_FLOAT64;
        int64_t *lab = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
        for (i = 0; i < n; i++) lab[i] = rnd_int((int)c);
        in[0] = make(&s, dt, TAME);
        dp_nd_from_host(g_eng, &ls, DP_INT64, (dp_ctx){DP_DEV_CPU, 0}, lab, &in[1]);
        free(lab);
        run("softmax_cross_entropy", 2, in, "", 0, 1, out);
        release(2, in); release(1, out);
    }
    for (t = 0; t < 6; t++) {
        int64_t m = 1 + rnd_int(5), k = 1 + rnd_int(5), n = 1 + rnd_int(5), da[2], db[2];
        int ta = rnd_int(2), tb = rnd_int(2);
        dp_dtype dt = t & 1 ? DP_FLOAT32 : DP_FLOAT64;
        dp_shape a, b;
        da[0] = ta ? k : m; da[1] = ta ? m : k; db[0] = tb ? n : k; db[1] = tb ? k : n;
        a = shape_of(2, da); b = shape_of(2, db);
        in[0] = make(&a, dt, TAME); in[1] = make(&b, dt, TAME);
        snprintf(params, sizeof params, "transpose_a=%d;transpose_b=%d", ta, tb);
        run("dot", 2, in, params, 0, 1, out);
        release(2, in); release(1, out);
    }
    for (t = 0; t < 4; t++) {
        int64_t batch = 1 + rnd_int(4), inw = 1 + rnd_int(5), h = 1 + rnd_int(4), dd[2] = {batch, inw}, dw[2] = {h, inw};
        dp_dtype dt = t & 1 ? DP_FLOAT32 : DP_FLOAT64;
        dp_shape sd = shape_of(2, dd), sw = shape_of(2, dw), sb = shape_of(1, &h);
        in[0] = make(&sd, dt, TAME); in[1] = make(&sw, dt, TAME); in[2] = make(&sb, dt, TAME);
        snprintf(params, sizeof params, "num_hidden=%lld", (long long)h);
        run("FullyConnected", 3, in, params, 0, 1, out);
        release(3, in); release(1, out);
    }
    for (t = 0; t < 6; t++) {   /* the updates, written into a new output (the weight stays) */
        static const char *ops[] = {"sgd_update", "sgd_mom_update", "adam_update"};
        static const char *ps[] = {"lr=0.1;wd=0.01;rescale_grad=0.5;clip_gradient=1", "lr=0.05;momentum=0.9;wd=0.001",
                                   "lr=0.01;beta1=0.8;beta2=0.99;epsilon=1e-6;wd=0.1;clip_gradient=2"};
        dp_shape s = random_shape(2, 5);
        dp_dtype dt = t & 1 ? DP_FLOAT32 : DP_FLOAT64;
        int k = t % 3, nin = 2 + k, i;
        for (i = 0; i < nin; i++) in[i] = make(&s, dt, TAME);
        if (k == 2) { dp_ndarray *v = NULL; dp_nd_release(in[3]); invoke_str(g_eng, "square", 1, &in[1], 0, NULL, NULL, 0, 1, &v, NULL); in[3] = v; }
        run(ops[k], nin, in, ps[k], 0, 1, out);
        for (i = 2; i < nin; i++) save(in[i], g_case - 1, "mutated", i);   /* the state after the update */
        release(nin, in); release(1, out);
    }
    for (t = 0; t < 6; t++) {   /* the updates over views of one storage, shifted by a row: read as NumPy's out= reads */
        static const char *ops[] = {"sgd_update", "sgd_mom_update", "adam_update"};
        static const char *ps[] = {"lr=0.1;wd=0.01", "lr=0.5;momentum=0.9", "lr=0.01;beta1=0.8;beta2=0.99;epsilon=1e-6"};
        int64_t n = 2 + rnd_int(4), c = 1 + rnd_int(4), dims[2];
        dp_dtype dt = t & 1 ? DP_FLOAT32 : DP_FLOAT64;
        int k = t % 3, nin = 2 + k, i;
        dp_ndarray *base;
        dp_shape s, whole;
        dims[0] = n; dims[1] = c; s = shape_of(2, dims);
        dims[0] = 2 * n + 1; whole = shape_of(2, dims);
        base = make(&whole, dt, TAME);
        dp_nd_slice(base, 0, n, &in[1]);                                 /* the gradient: rows 0..n-1 */
        if (k == 0) dp_nd_slice(base, 1, n + 1, &in[0]);                 /* the weight over it, written in place */
        else { dp_nd_slice(base, n + 1, 2 * n + 1, &in[0]); dp_nd_slice(base, 1, n + 1, &in[2]); }   /* the state over the gradient */
        if (k == 2) { dp_ndarray *g = make(&s, dt, TAME); invoke_str(g_eng, "square", 1, &g, 0, NULL, NULL, 0, 1, &in[3], NULL); dp_nd_release(g); }
        out[0] = dp_nd_retain(in[0]);
        run(ops[k], nin, in, ps[k], 0, 1, out);
        for (i = 2; i < nin; i++) save(in[i], g_case - 1, "mutated", i);
        release(nin, in); release(1, out); dp_nd_release(base);
    }
}

/* The gradient operator of op at inputs in, given a random output gradient
   of the forward output's shape: (og, inputs) -> the inputs' gradients, or
   (og, output) for an operator whose gradient reads its output instead
   (relu, tanh, sigmoid: grad_needs). */
static void grad_case(const char *op, int nin, dp_ndarray **in, const char *params, double scalar) {
    const dp_operator *o = dp_operator_find(op);
    dp_ndarray *y = NULL, *gin[8], *gout[8] = {NULL};
    int i;
    if (!o || !o->gradient || invoke(op, nin, in, params, scalar, 1, &y) != DP_OK) { fprintf(stderr, "%s: no gradient case\n", op); g_errors++; return; }
    gin[0] = make(dp_nd_shape(y), dp_nd_dtype(y), TAME);
    for (i = 0; i < nin; i++) gin[i + 1] = in[i];
    if ((o->grad_needs & DP_GRAD_OUTPUTS) && !(o->grad_needs & DP_GRAD_INPUTS) && nin == 1) gin[1] = y;
    run(o->gradient, nin + 1, gin, params, scalar, nin, gout);
    release(nin, gout);
    dp_nd_release(gin[0]); dp_nd_release(y);
}
/* Every gradient operator, on float32 and float64 (the dtypes autograd
   marks), at smooth points: no kinks, no ties, logs of positive numbers. */
static void gradient_cases(void) {
    static const char *unary[] = {"negative", "abs", "sign", "sqrt", "square", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "_copy"};
    static const char *binary[] = {"add", "sub", "mul", "div", "maximum", "minimum", "power"};
    static const char *scalar_ops[] = {"add_scalar", "sub_scalar", "mul_scalar", "div_scalar", "maximum_scalar", "minimum_scalar",
                                       "power_scalar", "rsub_scalar", "rdiv_scalar", "rpower_scalar"};
    static const char *red[] = {"sum", "mean", "max", "min"};
    dp_ndarray *in[4] = {NULL, NULL, NULL, NULL};
    char params[128], axes[64];
    int u, t;
    for (t = 0; t < 2; t++) {
        dp_dtype dt = t ? DP_FLOAT64 : DP_FLOAT32;
        for (u = 0; u < (int)(sizeof unary / sizeof unary[0]); u++) {
            dp_shape s = random_shape(3, 4);
            in[0] = make(&s, dt, strcmp(unary[u], "sqrt") == 0 || strcmp(unary[u], "log") == 0 ? POSITIVE : TAME);
            grad_case(unary[u], 1, in, "", 0);
            release(1, in);
        }
        for (u = 0; u < (int)(sizeof binary / sizeof binary[0]); u++) {
            dp_shape a = random_shape(3, 4), b = broadcast_partner(&a);
            if (rnd_int(2)) { dp_shape x = a; a = b; b = x; }
            in[0] = make(&a, dt, strcmp(binary[u], "power") == 0 ? POSITIVE : TAME);
            in[1] = make(&b, dt, strcmp(binary[u], "div") == 0 ? POSITIVE : TAME);
            grad_case(binary[u], 2, in, "", 0);
            release(2, in);
        }
        for (u = 0; u < (int)(sizeof scalar_ops / sizeof scalar_ops[0]); u++) {
            dp_shape s = random_shape(2, 5);
            int pos = strstr(scalar_ops[u], "power") != NULL || strcmp(scalar_ops[u], "rdiv_scalar") == 0;
            in[0] = make(&s, dt, pos ? POSITIVE : TAME);
            grad_case(scalar_ops[u], 1, in, "", pos ? 1.5 + rnd_unit() : rnd_normal() * 2);
            release(1, in);
        }
        {
            dp_shape s = random_shape(3, 4);
            in[0] = make(&s, dt, TAME);
            grad_case("clip", 1, in, "a_min=-1.25;a_max=2.5", 0);
            grad_case("reshape", 1, in, "shape=(-1,)", 0);
            grad_case("cast", 1, in, t ? "dtype=float32" : "dtype=float64", 0);
            release(1, in);
        }
        for (u = 0; u < 4; u++) {
            dp_shape s = random_shape(3, 4);
            if (u >= 2 && dp_shape_size(&s) == 0) s.ndim = 0;
            axes_param(&s, axes, sizeof axes, 0);
            snprintf(params, sizeof params, "axis=%s;keepdims=%d", axes, rnd_int(2));
            in[0] = make(&s, dt, TAME);
            grad_case(red[u], 1, in, params, 0);
            release(1, in);
        }
        for (u = 0; u < 2; u++) {
            dp_shape s = random_shape(3, 4);
            if (s.ndim == 0 || dp_shape_size(&s) == 0) { s.ndim = 1; s.dims[0] = 3; }
            snprintf(params, sizeof params, "axis=%d", rnd_int(s.ndim));
            in[0] = make(&s, dt, TAME);
            grad_case(u ? "softmax" : "log_softmax", 1, in, params, 0);
            grad_case("transpose", 1, in, "axes=()", 0);
            release(1, in);
        }
        {
            int64_t n = 1 + rnd_int(4), c = 1 + rnd_int(5), dims[2], i, lab[8];
            dp_shape s, ls;
            dims[0] = n; dims[1] = c;
            s = shape_of(2, dims); ls = shape_of(1, &n);
            for (i = 0; i < n; i++) lab[i] = rnd_int((int)c);
            in[0] = make(&s, dt, TAME);
            dp_nd_from_host(g_eng, &ls, DP_INT64, (dp_ctx){DP_DEV_CPU, 0}, lab, &in[1]);
            grad_case("softmax_cross_entropy", 2, in, "", 0);
            release(2, in);
        }
        {
            dp_shape s = random_shape(3, 3);
            int nparts = 1 + rnd_int(3), dim, i;
            if (s.ndim == 0) { s.ndim = 1; s.dims[0] = 2; }
            dim = rnd_int(s.ndim);
            for (i = 0; i < nparts; i++) { dp_shape p = s; p.dims[dim] = rnd_int(4); in[i] = make(&p, dt, TAME); }
            snprintf(params, sizeof params, "num_args=%d;dim=%d", nparts, dim);
            grad_case("concat", nparts, in, params, 0);
            release(nparts, in);
        }
        for (u = 0; u < 4; u++) {
            int64_t m = 1 + rnd_int(4), k = 1 + rnd_int(4), n = 1 + rnd_int(4), da[2], db[2];
            int ta = u & 1, tb = u >> 1;
            dp_shape a, b;
            da[0] = ta ? k : m; da[1] = ta ? m : k; db[0] = tb ? n : k; db[1] = tb ? k : n;
            a = shape_of(2, da); b = shape_of(2, db);
            in[0] = make(&a, dt, TAME); in[1] = make(&b, dt, TAME);
            snprintf(params, sizeof params, "transpose_a=%d;transpose_b=%d", ta, tb);
            grad_case("dot", 2, in, params, 0);
            release(2, in);
        }
        {
            int64_t batch = 1 + rnd_int(4), inw = 1 + rnd_int(4), h = 1 + rnd_int(4), dd[2], dw[2];
            dp_shape sd, sw, sb;
            dd[0] = batch; dd[1] = inw; dw[0] = h; dw[1] = inw;
            sd = shape_of(2, dd); sw = shape_of(2, dw); sb = shape_of(1, &h);
            in[0] = make(&sd, dt, TAME); in[1] = make(&sw, dt, TAME); in[2] = make(&sb, dt, TAME);
            snprintf(params, sizeof params, "num_hidden=%lld", (long long)h);
            grad_case("FullyConnected", 3, in, params, 0);
            release(3, in);
        }
    }
}

int main(int argc, char **argv) {
    dp_engine_desc desc;
    char path[512];
    int rounds, r;
    if (argc < 2) { fprintf(stderr, "usage: numpy_diff DIR [SEED [ROUNDS]]\n"); return 2; }
    g_dir = argv[1];
    if (argc > 2) g_rng = strtoull(argv[2], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
    rounds = argc > 3 ? atoi(argv[3]) : 1;
    snprintf(path, sizeof path, "%s/manifest.tsv", g_dir);
    if ((g_manifest = fopen(path, "w")) == NULL) { fprintf(stderr, "cannot write %s\n", path); return 2; }
    memset(&desc, 0, sizeof desc);
    desc.type = DP_ENGINE_NAIVE;
    if (dp_engine_create(&desc, &g_eng) != DP_OK) return 2;
    for (r = 0; r < rounds; r++) {
        elementwise_cases();
        reduction_cases();
        movement_cases();
        alias_cases();
        nn_cases();
        gradient_cases();
    }
    dp_wait_all(g_eng, NULL);
    dp_engine_destroy(g_eng, NULL);
    fclose(g_manifest);
    printf("numpy_diff: %d cases written to %s, %d errors\n", g_case, g_dir, g_errors);
    return g_errors ? 1 : 0;
}
