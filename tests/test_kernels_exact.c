/* tests/test_kernels_exact.c - the built-in kernels' rules, each checked on
   the values that break a kernel computing through double or ignoring
   aliasing: int64 beyond 2^53 moved and compared exactly, integer
   arithmetic wrapping, NaN as NumPy treats it, outputs over their own
   input, the float16 / bool / int8 dtypes (conversions, .npy codes, cast).
   tests/numpy_diff_check.sh covers the same ground at random against
   NumPy; these are the fixed cases. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "test_common.h"
#include <math.h>
#include <string.h>

static dp_engine *eng;
static const dp_ctx cpu = {DP_DEV_CPU, 0};

static dp_shape shape2(int64_t a, int64_t b) { dp_shape s; memset(&s, 0, sizeof s); s.ndim = 2; s.dims[0] = a; s.dims[1] = b; return s; }
static dp_shape shape1(int64_t a) { dp_shape s; memset(&s, 0, sizeof s); s.ndim = 1; s.dims[0] = a; return s; }
static dp_ndarray *from(const dp_shape *s, dp_dtype dt, const void *data) {
    dp_ndarray *a = NULL;
    CHECK(dp_nd_from_host(eng, s, dt, cpu, data, &a) == DP_OK);
    return a;
}
/* op on inputs with one "k=v" parameter (or none); the result is *out (made if NULL) */
static dp_result invoke1(const char *op, int nin, dp_ndarray **in, const char *key, const char *value, double scalar, dp_ndarray **out) {
    return invoke_str(eng, op, nin, in, key ? 1 : 0, &key, &value, scalar, 1, out, NULL);
}
static void read_back(dp_ndarray *a, void *dst) { CHECK(dp_nd_read(a, dst, dp_nd_bytes(a), NULL) == DP_OK); }

static void start(void) {
    dp_engine_desc d;
    memset(&d, 0, sizeof d);
    d.logger.func = quiet_logger;
    CHECK(dp_engine_create(&d, &eng) == DP_OK);
}
static void stop(void) { CHECK(dp_engine_destroy(eng, NULL) == DP_OK); eng = NULL; }

/* transpose([[2^53 + 1, 2^63 - 1]]) kept every bit; concat, clip, relu,
   max, minimum and add(x, 0) too */
static void test_int64_exact_movement(void) {
    const int64_t v[2] = {9007199254740993LL, INT64_MAX};
    dp_shape s = shape2(1, 2), s1 = shape1(2);
    dp_ndarray *x, *y = NULL, *parts[2], *x1;
    int64_t got[4];
    start();
    x = from(&s, DP_INT64, v);
    x1 = from(&s1, DP_INT64, v);
    CHECK(invoke1("transpose", 1, &x, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == v[0] && got[1] == v[1]);
    dp_nd_release(y); y = NULL;
    parts[0] = x1; parts[1] = x1;
    CHECK(invoke_str(eng, "concat", 2, parts, 2, (const char *[]){"num_args", "dim"}, (const char *[]){"2", "0"}, 0, 1, &y, NULL) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == v[0] && got[1] == v[1] && got[2] == v[0] && got[3] == v[1]);
    dp_nd_release(y); y = NULL;
    CHECK(invoke_str(eng, "clip", 1, &x1, 2, (const char *[]){"a_min", "a_max"}, (const char *[]){"0", "1e30"}, 0, 1, &y, NULL) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == v[0] && got[1] == v[1]);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("relu", 1, &x1, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == v[0] && got[1] == v[1]);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("max", 1, &x1, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == INT64_MAX);
    dp_nd_release(y); y = NULL;
    parts[0] = x1; parts[1] = x1;
    CHECK(invoke1("minimum", 2, parts, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == v[0] && got[1] == v[1]);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("add_scalar", 1, &x1, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == v[0] && got[1] == v[1]);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("_copy", 1, &x1, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == v[0] && got[1] == v[1]);
    dp_nd_release(y);
    dp_nd_release(x); dp_nd_release(x1);
    stop();
}
/* argmax([2^53, 2^53 + 1, 2^53 - 1]) is 1 (through double all three tie) */
static void test_int64_argmax(void) {
    const int64_t v[3] = {9007199254740992LL, 9007199254740993LL, 9007199254740991LL};
    dp_shape s = shape1(3);
    dp_ndarray *x, *y = NULL;
    int64_t got = -1;
    start();
    x = from(&s, DP_INT64, v);
    CHECK(invoke1("argmax", 1, &x, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, &got);
    CHECK(got == 1);
    dp_nd_release(x); dp_nd_release(y);
    stop();
}
/* integer arithmetic wraps like NumPy's: INT64_MAX + 1, int8 127 + 1,
   uint8 0 - 1, int32 overflowing products; sum in int64 */
static void test_integer_wraparound(void) {
    const int64_t a64[2] = {INT64_MAX, INT64_MIN}, b64[2] = {1, -1};
    const int8_t a8[2] = {127, -128}, b8[2] = {1, -1};
    const uint8_t au[2] = {0, 200}, bu[2] = {1, 100};
    const int32_t a32[2] = {65536, -2147483647 - 1};
    dp_shape s = shape1(2);
    dp_ndarray *in[2], *y = NULL;
    int64_t g64[2];
    int8_t g8[2];
    uint8_t gu[2];
    int32_t g32[2];
    start();
    in[0] = from(&s, DP_INT64, a64); in[1] = from(&s, DP_INT64, b64);
    CHECK(invoke1("add", 2, in, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, g64);
    CHECK(g64[0] == INT64_MIN && g64[1] == INT64_MAX);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("sum", 1, in, NULL, NULL, 0, &y) == DP_OK);    /* INT64_MAX + INT64_MIN */
    read_back(y, g64);
    CHECK(g64[0] == -1);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("negative", 1, &in[0], NULL, NULL, 0, &y) == DP_OK);
    read_back(y, g64);
    CHECK(g64[0] == -INT64_MAX && g64[1] == INT64_MIN);
    dp_nd_release(y); y = NULL;
    dp_nd_release(in[0]); dp_nd_release(in[1]);
    in[0] = from(&s, DP_INT8, a8); in[1] = from(&s, DP_INT8, b8);
    CHECK(invoke1("add", 2, in, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, g8);
    CHECK(g8[0] == -128 && g8[1] == 127);
    dp_nd_release(y); y = NULL;
    dp_nd_release(in[0]); dp_nd_release(in[1]);
    in[0] = from(&s, DP_UINT8, au); in[1] = from(&s, DP_UINT8, bu);
    CHECK(invoke1("sub", 2, in, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, gu);
    CHECK(gu[0] == 255 && gu[1] == 100);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("mul_scalar", 1, &in[1], NULL, NULL, 3, &y) == DP_OK);   /* 100 * 3 = 300 = 44 mod 256 */
    read_back(y, gu);
    CHECK(gu[0] == 3 && gu[1] == 44);
    dp_nd_release(y); y = NULL;
    dp_nd_release(in[0]); dp_nd_release(in[1]);
    in[0] = from(&s, DP_INT32, a32);
    CHECK(invoke1("square", 1, in, NULL, NULL, 0, &y) == DP_OK);            /* 2^32 wraps to 0, (-2^31)^2 too */
    read_back(y, g32);
    CHECK(g32[0] == 0 && g32[1] == 0);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("power_scalar", 1, in, NULL, NULL, 2, &y) == DP_OK);
    read_back(y, g32);
    CHECK(g32[0] == 0 && g32[1] == 0);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("div_scalar", 1, in, NULL, NULL, 0, &y) == DP_OK);        /* no integer form: +-inf saturates */
    read_back(y, g32);
    CHECK(g32[0] == INT32_MAX && g32[1] == INT32_MIN);
    dp_nd_release(y);
    dp_nd_release(in[0]);
    stop();
}
static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }
/* maximum / minimum propagate NaN whichever side it is on, the scalar forms
   too; sign and relu of NaN are NaN; argmax returns the first NaN */
static void test_nan_like_numpy(void) {
    const double a[3] = {NAN, 1, 5}, b[3] = {1, NAN, 2}, c[4] = {1, 7, NAN, NAN};
    dp_shape s = shape1(3), s4 = shape1(4);
    dp_ndarray *in[2], *y = NULL, *z;
    double got[3];
    int64_t idx = -1;
    const char *ops[4] = {"maximum", "minimum", "maximum_scalar", "minimum_scalar"};
    int i;
    start();
    in[0] = from(&s, DP_FLOAT64, a); in[1] = from(&s, DP_FLOAT64, b);
    for (i = 0; i < 2; i++) {
        CHECK(invoke1(ops[i], 2, in, NULL, NULL, 0, &y) == DP_OK);
        read_back(y, got);
        CHECK(got[0] != got[0] && got[1] != got[1] && got[2] == (i ? 2 : 5));
        dp_nd_release(y); y = NULL;
    }
    for (i = 2; i < 4; i++) {
        CHECK(invoke1(ops[i], 1, &in[1], NULL, NULL, 1.5, &y) == DP_OK);      /* NaN in the array */
        read_back(y, got);
        CHECK(got[0] == (i == 2 ? 1.5 : 1) && got[1] != got[1] && got[2] == (i == 2 ? 2 : 1.5));
        dp_nd_release(y); y = NULL;
        CHECK(invoke1(ops[i], 1, &in[1], NULL, NULL, NAN, &y) == DP_OK);      /* NaN as the scalar */
        read_back(y, got);
        CHECK(got[0] != got[0] && got[1] != got[1] && got[2] != got[2]);
        dp_nd_release(y); y = NULL;
    }
    CHECK(invoke1("sign", 1, &in[0], NULL, NULL, 0, &y) == DP_OK);
    read_back(y, got);
    CHECK(got[0] != got[0] && same_bits(got[1], 1) && same_bits(got[2], 1));
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("relu", 1, &in[0], NULL, NULL, 0, &y) == DP_OK);
    read_back(y, got);
    CHECK(got[0] != got[0] && got[1] == 1 && got[2] == 5);
    dp_nd_release(y); y = NULL;
    {   /* float32's own loop too */
        const float f[2] = {NAN, -1};
        dp_shape s2 = shape1(2);
        float fg[2];
        dp_ndarray *xf = from(&s2, DP_FLOAT32, f);
        CHECK(invoke1("relu", 1, &xf, NULL, NULL, 0, &y) == DP_OK);
        read_back(y, fg);
        CHECK(fg[0] != fg[0] && fg[1] == 0);
        dp_nd_release(y); y = NULL;
        dp_nd_release(xf);
    }
    z = from(&s4, DP_FLOAT64, c);
    CHECK(invoke1("argmax", 1, &z, NULL, NULL, 0, &y) == DP_OK);
    read_back(y, &idx);
    CHECK(idx == 2);
    dp_nd_release(y); y = NULL;
    CHECK(invoke1("argmax", 1, &in[0], NULL, NULL, 0, &y) == DP_OK);           /* NaN first */
    read_back(y, &idx);
    CHECK(idx == 0);
    dp_nd_release(y);
    dp_nd_release(z); dp_nd_release(in[0]); dp_nd_release(in[1]);
    stop();
}
/* transpose(x, out=x) and an output view that overlaps its input's view */
static void test_output_over_input(void) {
    const int64_t v[9] = {9007199254740993LL, 2, 3, 4, 5, 6, 7, 8, INT64_MIN};
    const int64_t want[9] = {9007199254740993LL, 4, 7, 2, 5, 8, 3, 6, INT64_MIN};
    const float rows[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    dp_shape s = shape2(3, 3), s42 = shape2(4, 2);
    dp_ndarray *x, *out, *base, *top = NULL, *bottom = NULL, *in2[2];
    int64_t got[9];
    float fg[8];
    start();
    x = from(&s, DP_INT64, v);
    out = x;
    CHECK(invoke1("transpose", 1, &x, NULL, NULL, 0, &out) == DP_OK);
    CHECK(out == x);
    read_back(x, got);
    CHECK(memcmp(got, want, sizeof want) == 0);
    dp_nd_release(x);
    /* rows 0..2 transposed into rows 1..3 of the same (4, 2) storage */
    base = from(&s42, DP_FLOAT32, rows);
    CHECK(dp_nd_slice(base, 0, 2, &top) == DP_OK);
    CHECK(dp_nd_slice(base, 1, 3, &bottom) == DP_OK);
    CHECK(invoke1("transpose", 1, &top, NULL, NULL, 0, &bottom) == DP_OK);
    read_back(base, fg);
    CHECK(fg[0] == 1 && fg[1] == 2 && fg[2] == 1 && fg[3] == 3 && fg[4] == 2 && fg[5] == 4 && fg[6] == 7 && fg[7] == 8);
    /* element-wise but shifted by a row: not the in place it allows */
    in2[0] = top; in2[1] = top;
    CHECK(invoke1("add", 2, in2, NULL, NULL, 0, &bottom) == DP_OK);     /* top now (1, 2), (1, 3) */
    read_back(base, fg);
    CHECK(fg[0] == 1 && fg[1] == 2 && fg[2] == 2 && fg[3] == 4 && fg[4] == 2 && fg[5] == 6 && fg[6] == 7 && fg[7] == 8);
    /* the exact in place element-wise operators allow still works */
    CHECK(invoke1("mul_scalar", 1, &top, NULL, NULL, 10, &top) == DP_OK);
    read_back(base, fg);
    CHECK(fg[0] == 10 && fg[1] == 20 && fg[2] == 20 && fg[3] == 40 && fg[4] == 2);
    /* adding into an overlapping output reads the output before it is written */
    {
        dp_req add = DP_REQ_ADD;
        const char *k = "axes", *val = "()";
        CHECK(invoke_str(eng, "transpose", 1, &top, 1, &k, &val, 0, 1, &bottom, &add) == DP_OK);   /* bottom += top^T */
        read_back(base, fg);
        CHECK(fg[0] == 10 && fg[1] == 20 && fg[2] == 30 && fg[3] == 60 && fg[4] == 22 && fg[5] == 46 && fg[6] == 7);
    }
    dp_nd_release(top); dp_nd_release(bottom); dp_nd_release(base);
    stop();
}
/* two outputs over the same bytes cannot both be written, nor an output over
   an input the operator mutates: refused */
static void test_overlapping_outputs_refused(void) {
    const double v[4] = {1, 2, 3, 4};
    dp_shape s = shape2(2, 2);
    dp_ndarray *x, *og, *in[3], *out[2];
    start();
    x = from(&s, DP_FLOAT64, v);
    og = from(&s, DP_FLOAT64, v);
    in[0] = og; in[1] = x; in[2] = x;
    out[0] = og; out[1] = og;
    g_last_item = 0;
    CHECK(invoke_str(eng, "_backward_add", 3, in, 0, NULL, NULL, 0, 2, out, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(g_last_item != 0);
    /* sgd_mom_update writes its momentum (input 2): the weight's new values cannot go there too */
    in[0] = x; in[1] = og; in[2] = og;
    out[0] = og;
    g_last_item = 0;
    CHECK(invoke_str(eng, "sgd_mom_update", 3, in, 1, (const char *[]){"lr"}, (const char *[]){"0.1"}, 0, 1, out, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(g_last_item != 0);
    dp_nd_release(x); dp_nd_release(og);
    stop();
}
/* An input the operator updates in place over an input it reads (at any
   offset, exactly too) is computed as if the inputs were read first, as
   NumPy's out= reads them, through a temporary that is freed; two inputs
   it updates that share bytes, or an output over one, are refused. */
static int near(double a, double b) { return fabs(a - b) < 1e-12; }
static void test_updated_inputs_overlap(void) {
    const double six[6] = {0, 1, 2, 3, 4, 5}, four[4] = {1, 2, 3, 4};
    dp_shape s6 = shape1(6), s4 = shape1(4);
    const char *mk[2] = {"lr", "momentum"}, *mv[2] = {"0.5", "0.9"};
    dp_ndarray *base, *in[4], *out, *m = NULL, *v = NULL, *made = NULL;
    dp_storage_stats st0, st1, st2;
    double got[6];
    int i;
    start();
    /* sgd_mom_update(w = base[0:2], grad = base[2:4], mom = base[3:5], out = w): mom[0] is grad[1]'s
       element; reading grad after mom[0] is written gave w[1] = 3.75, mom[1] = 2.75 */
    base = from(&s6, DP_FLOAT64, six);
    CHECK(dp_nd_slice(base, 0, 2, &in[0]) == DP_OK && dp_nd_slice(base, 2, 4, &in[1]) == DP_OK && dp_nd_slice(base, 3, 5, &in[2]) == DP_OK);
    CHECK(dp_wait_all(eng, NULL) == DP_OK && dp_storage_stats_get(eng, cpu, &st0) == DP_OK);
    out = in[0];
    CHECK(invoke_str(eng, "sgd_mom_update", 3, in, 2, mk, mv, 0, 1, &out, NULL) == DP_OK && out == in[0]);
    read_back(base, got);
    CHECK(near(got[0], 1.7) && near(got[1], 3.1) && got[2] == 2 && near(got[3], 1.7) && near(got[4], 2.1) && got[5] == 5);
    CHECK(dp_wait_all(eng, NULL) == DP_OK && dp_storage_stats_get(eng, cpu, &st1) == DP_OK);
    CHECK(st1.allocations == st0.allocations + 1 && st1.bytes_in_use == st0.bytes_in_use);   /* one temporary, freed */
    /* without overlap nothing is allocated: w = base[0:2] in place, grad = base[2:4], mom = base[4:6] */
    for (i = 1; i < 3; i++) dp_nd_release(in[i]);
    CHECK(dp_nd_slice(base, 2, 4, &in[1]) == DP_OK && dp_nd_slice(base, 4, 6, &in[2]) == DP_OK);
    CHECK(invoke_str(eng, "sgd_mom_update", 3, in, 2, mk, mv, 0, 1, &out, NULL) == DP_OK);
    CHECK(dp_wait_all(eng, NULL) == DP_OK && dp_storage_stats_get(eng, cpu, &st2) == DP_OK);
    CHECK(st2.allocations == st1.allocations && st2.bytes_in_use == st1.bytes_in_use);
    for (i = 0; i < 3; i++) dp_nd_release(in[i]);
    dp_nd_release(base);
    /* mom exactly the gradient array, the result made: mom = 0.9 g - 0.5 g, w + mom */
    in[0] = from(&s4, DP_FLOAT64, four); in[1] = from(&s4, DP_FLOAT64, four); in[2] = in[1];
    CHECK(invoke_str(eng, "sgd_mom_update", 3, in, 2, mk, mv, 0, 1, &made, NULL) == DP_OK);
    read_back(made, got);
    CHECK(near(got[0], 1.4) && near(got[1], 2.8) && near(got[3], 5.6));
    read_back(in[1], got);
    CHECK(near(got[0], 0.4) && near(got[3], 1.6));
    dp_nd_release(made); made = NULL;
    /* adam_update with mean and var the same array lost mean's update: refused, naming both inputs */
    m = from(&s4, DP_FLOAT64, four);
    in[2] = m; in[3] = m;
    g_last_item = 0;
    CHECK(invoke_str(eng, "adam_update", 4, in, 1, mk, mv, 0, 1, &made, NULL) == DP_ERROR_INVALID_ARGS && made == NULL);
    CHECK(g_last_item == DP_LOGITEM_ND_OVERLAP && strstr(dp_last_error(), "'adam_update'") && strstr(dp_last_error(), "inputs 2 and 3"));
    /* mean and var overlapping views, shifted by one element: refused too */
    base = from(&s6, DP_FLOAT64, six);
    CHECK(dp_nd_slice(base, 0, 4, &in[2]) == DP_OK && dp_nd_slice(base, 1, 5, &in[3]) == DP_OK);
    g_last_item = 0;
    CHECK(invoke_str(eng, "adam_update", 4, in, 1, mk, mv, 0, 1, &made, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_OVERLAP);
    dp_nd_release(in[2]); dp_nd_release(in[3]);
    /* adam's mean over the gradient shifted by one element: mean and var as if read first */
    dp_nd_release(in[1]);
    CHECK(dp_nd_slice(base, 0, 4, &in[1]) == DP_OK && dp_nd_slice(base, 1, 5, &in[2]) == DP_OK);
    v = from(&s4, DP_FLOAT64, four);
    in[3] = v;
    CHECK(invoke_str(eng, "adam_update", 4, in, 1, mk, mv, 0, 1, &made, NULL) == DP_OK);
    read_back(base, got);   /* mean = 0.9 mean + 0.1 g with g = (0, 1, 2, 3), mean = (1, 2, 3, 4) as read */
    CHECK(got[0] == 0 && near(got[1], 0.9) && near(got[2], 1.9) && near(got[3], 2.9) && near(got[4], 3.9) && got[5] == 5);
    read_back(v, got);      /* var = 0.999 var + 0.001 g^2 */
    CHECK(near(got[0], 0.999) && near(got[1], 1.999) && near(got[2], 2.997 + 0.004) && near(got[3], 3.996 + 0.009));
    dp_nd_release(in[1]); dp_nd_release(in[2]); dp_nd_release(made); made = NULL;
    dp_nd_release(v); dp_nd_release(m); dp_nd_release(base); dp_nd_release(in[0]);
    stop();
}
static uint16_t half_of(float f) { return dp__half_from_float(f); }
static float float_of(uint16_t h) { return dp__half_to_float(h); }
/* float16: round to nearest even, overflow at 65520, subnormals, NaN */
static void test_float16_conversion(void) {
    CHECK(half_of(1.0f) == 0x3C00 && half_of(-2.0f) == 0xC000 && half_of(65504.0f) == 0x7BFF);
    CHECK(half_of(65519.0f) == 0x7BFF && half_of(65520.0f) == 0x7C00 && half_of(INFINITY) == 0x7C00 && half_of(-INFINITY) == 0xFC00);
    CHECK(half_of(1.0f + 1.0f / 2048) == 0x3C00);                        /* a tie: to even (down) */
    CHECK(half_of(1.0f + 3.0f / 2048) == 0x3C02);                        /* a tie: to even (up) */
    CHECK(half_of(5.9604644775390625e-08f) == 0x0001);                   /* 2^-24, the smallest subnormal */
    CHECK(half_of(2.98023223876953125e-08f) == 0x0000);                  /* 2^-25: a tie, to even (0) */
    CHECK(half_of(3.0e-08f) == 0x0001);
    CHECK(half_of(6.097555160522461e-05f) == 0x03FF);                    /* the largest subnormal */
    CHECK(half_of(-0.0f) == 0x8000);
    CHECK((half_of(NAN) & 0x7C00) == 0x7C00 && (half_of(NAN) & 0x3FF) != 0);
    CHECK(float_of(0x0001) == 5.9604644775390625e-08f && float_of(0x03FF) == 6.097555160522461e-05f);
    CHECK(float_of(0x7BFF) == 65504.0f && float_of(0xFC00) == -INFINITY && float_of(0x7E00) != float_of(0x7E00));
    {   /* every half survives the round trip */
        uint32_t h;
        int bad = 0;
        for (h = 0; h < 65536; h++) {
            uint16_t back = half_of(float_of((uint16_t)h));
            if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) bad += (back & 0x7C00) != 0x7C00 || !(back & 0x3FF);
            else bad += back != h;
        }
        CHECK(bad == 0);
    }
    /* from double in one rounding: 1 + 2^-11 + 2^-40 is just above a tie,
       which float32 would round onto the tie (and then to even, down) */
    CHECK(dp__half_from_double(1.0 + 1.0 / 2048 + 1.0 / 1099511627776.0) == 0x3C01);
}
/* the three new dtypes in arrays, kernels, cast and dp_nd_astype */
static void test_new_dtypes(void) {
    const double v[6] = {-1.5, 0, 300, NAN, 65520, 1e-8};
    dp_shape s = shape1(6);
    dp_ndarray *x, *h = NULL, *b = NULL, *i8 = NULL, *back = NULL, *y = NULL;
    uint16_t gh[6];
    uint8_t gb[6];
    int8_t g8[6];
    float gf[6];
    start();
    CHECK(dp_dtype_size(DP_FLOAT16) == 2 && dp_dtype_size(DP_BOOL) == 1 && dp_dtype_size(DP_INT8) == 1);
    CHECK(strcmp(dp_dtype_name(DP_FLOAT16), "float16") == 0 && strcmp(dp_dtype_name(DP_BOOL), "bool") == 0 && strcmp(dp_dtype_name(DP_INT8), "int8") == 0);
    x = from(&s, DP_FLOAT64, v);
    CHECK(dp_nd_astype(x, DP_FLOAT16, &h) == DP_OK && dp_nd_dtype(h) == DP_FLOAT16);
    CHECK(dp_nd_astype(x, DP_BOOL, &b) == DP_OK);
    CHECK(dp_nd_astype(x, DP_INT8, &i8) == DP_OK);
    read_back(h, gh); read_back(b, gb); read_back(i8, g8);
    CHECK(gh[0] == 0xBE00 && gh[1] == 0 && gh[2] == 0x5CB0 && (gh[3] & 0x7C00) == 0x7C00 && (gh[3] & 0x3FF) && gh[4] == 0x7C00 && gh[5] == 0);
    CHECK(gb[0] == 1 && gb[1] == 0 && gb[2] == 1 && gb[3] == 1 && gb[4] == 1 && gb[5] == 1);   /* NaN is true */
    CHECK(g8[0] == -1 && g8[1] == 0 && g8[2] == 127 && g8[3] == 0 && g8[4] == 127 && g8[5] == 0);   /* truncated, saturated */
    CHECK(dp_nd_astype(h, DP_FLOAT32, &back) == DP_OK);
    read_back(back, gf);
    CHECK(gf[0] == -1.5f && gf[2] == 300.0f && gf[3] != gf[3] && gf[4] == INFINITY);
    /* float16 arithmetic is float32's, rounded to half: 2049 + 0 rounds to 2048 */
    {
        const uint16_t a[2] = {0x6800, 0x3C00};   /* 2048, 1 */
        dp_shape s2 = shape1(2);
        dp_ndarray *in[2];
        in[0] = from(&s2, DP_FLOAT16, a); in[1] = from(&s2, DP_FLOAT16, a);
        CHECK(invoke1("add_scalar", 1, in, NULL, NULL, 1, &y) == DP_OK);
        read_back(y, gh);
        CHECK(gh[0] == 0x6800 && gh[1] == 0x4000);                 /* 2049 -> 2048 (even), 2 */
        dp_nd_release(y); y = NULL;
        CHECK(invoke1("sum", 1, in, NULL, NULL, 0, &y) == DP_OK);
        read_back(y, gh);
        CHECK(gh[0] == 0x6800);
        dp_nd_release(y); y = NULL;
        dp_nd_release(in[0]); dp_nd_release(in[1]);
    }
    /* bool: add is or, mul is and */
    {
        const uint8_t p[4] = {0, 1, 1, 0}, q[4] = {0, 1, 0, 1};
        dp_shape s4 = shape1(4);
        dp_ndarray *in[2];
        uint8_t g[4];
        in[0] = from(&s4, DP_BOOL, p); in[1] = from(&s4, DP_BOOL, q);
        CHECK(invoke1("add", 2, in, NULL, NULL, 0, &y) == DP_OK);
        read_back(y, g);
        CHECK(g[0] == 0 && g[1] == 1 && g[2] == 1 && g[3] == 1);
        dp_nd_release(y); y = NULL;
        CHECK(invoke1("mul", 2, in, NULL, NULL, 0, &y) == DP_OK);
        read_back(y, g);
        CHECK(g[0] == 0 && g[1] == 1 && g[2] == 0 && g[3] == 0);
        dp_nd_release(y); y = NULL;
        dp_nd_release(in[0]); dp_nd_release(in[1]);
    }
    /* int64 into a narrower integer keeps the low bits, as NumPy's astype */
    {
        const int64_t w[2] = {300, -129};
        dp_shape s2 = shape1(2);
        dp_ndarray *wi = from(&s2, DP_INT64, w), *w8 = NULL;
        int8_t g[2];
        CHECK(dp_nd_astype(wi, DP_INT8, &w8) == DP_OK);
        read_back(w8, g);
        CHECK(g[0] == 44 && g[1] == 127);
        dp_nd_release(w8); dp_nd_release(wi);
    }
    g_last_item = 0;
    CHECK(dp_nd_astype(x, (dp_dtype)99, &y) == DP_ERROR_INVALID_ARGS && y == NULL && g_last_item != 0);
    CHECK(invoke_str(eng, "cast", 1, &x, 1, (const char *[]){"dtype"}, (const char *[]){"float8"}, 0, 1, &y, NULL) == DP_ERROR_INVALID_ARGS);
    dp_nd_release(x); dp_nd_release(h); dp_nd_release(b); dp_nd_release(i8); dp_nd_release(back);
    stop();
}
/* .npy: '<f2', '|b1', '|i1' written and read; any byte-order mark on a
   one-byte type; a big-endian float16 byte-swapped */
static void write_npy(const char *path, const char *descr, const void *data, size_t bytes, int n) {
    char head[128];
    size_t len;
    FILE *f = fopen(path, "wb");
    int hl = snprintf(head + 10, sizeof head - 10, "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }", descr, n);
    len = 10 + (size_t)hl;
    while ((len + 1) % 64) head[len++] = ' ';
    head[len++] = '\n';
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (char)((len - 10) & 0xFF); head[9] = (char)((len - 10) >> 8);
    fwrite(head, 1, len, f);
    fwrite(data, 1, bytes, f);
    fclose(f);
}
static void test_npy_new_dtypes(void) {
    static const char *marks[] = {"|u1", ">u1", "=u1", "<u1", "|i1", ">i1", "=i1", "|b1", ">b1"};
    const uint8_t raw[3] = {1, 0, 255};
    char path[512];
    dp_ndarray *a = NULL, *b = NULL;
    dp_dtype dts[3] = {DP_FLOAT16, DP_BOOL, DP_INT8};
    const void *datas[3];
    const uint16_t hv[3] = {0x3C00, 0x0001, 0x7C00};
    const uint8_t bv[3] = {1, 0, 1};
    const int8_t iv[3] = {-128, 0, 127};
    unsigned i;
    dp_shape s = shape1(3);
    start();
    datas[0] = hv; datas[1] = bv; datas[2] = iv;
    snprintf(path, sizeof path, "%s/depeng_kernels_exact.npy", test_temp_dir());
    for (i = 0; i < 3; i++) {   /* round trips */
        unsigned char got[6];
        FILE *f;
        char head[128] = {0};
        a = from(&s, dts[i], datas[i]);
        CHECK(dp_nd_save_npy(a, path, NULL) == DP_OK);
        f = fopen(path, "rb");
        CHECK(f && fread(head, 1, 60, f) == 60);
        if (f) fclose(f);
        CHECK(strstr(head + 10, i == 0 ? "'<f2'" : i == 1 ? "'|b1'" : "'|i1'") != NULL);
        CHECK(dp_nd_load_npy(eng, path, cpu, &b) == DP_OK && dp_nd_dtype(b) == dts[i]);
        if (b) { read_back(b, got); CHECK(memcmp(got, datas[i], dp_nd_bytes(b)) == 0); }
        dp_nd_release(a); dp_nd_release(b); a = b = NULL;
    }
    for (i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        write_npy(path, marks[i], raw, 3, 3);
        CHECK(dp_nd_load_npy(eng, path, cpu, &b) == DP_OK);
        CHECK(b && dp_nd_dtype(b) == (marks[i][1] == 'u' ? DP_UINT8 : marks[i][1] == 'i' ? DP_INT8 : DP_BOOL));
        dp_nd_release(b); b = NULL;
    }
    {   /* a big-endian float16 is byte-swapped on load */
        const uint16_t be[3] = {0x003C, 0x0100, 0x007C};
        uint16_t got[3] = {0, 0, 0};
        write_npy(path, ">f2", be, 6, 3);
        CHECK(dp_nd_load_npy(eng, path, cpu, &b) == DP_OK && b && dp_nd_dtype(b) == DP_FLOAT16);
        if (b) { read_back(b, got); CHECK(memcmp(got, hv, sizeof got) == 0); }
        dp_nd_release(b); b = NULL;
    }
    remove(path);
    {   /* the three in one .npz */
        dp_nd_named members[3], loaded[3];
        int count = 0;
        memset(members, 0, sizeof members); memset(loaded, 0, sizeof loaded);
        for (i = 0; i < 3; i++) { snprintf(members[i].name, sizeof members[i].name, "m%u", i); members[i].array = from(&s, dts[i], datas[i]); }
        snprintf(path, sizeof path, "%s/depeng_kernels_exact.npz", test_temp_dir());
        CHECK(dp_nd_save_npz(path, members, 3, NULL, NULL) == DP_OK);
        CHECK(dp_nd_load_npz(eng, path, cpu, loaded, 3, &count) == DP_OK && count == 3);
        for (i = 0; i < (unsigned)count; i++) {
            unsigned char got[6];
            CHECK(dp_nd_dtype(loaded[i].array) == dts[i]);
            read_back(loaded[i].array, got);
            CHECK(memcmp(got, datas[i], dp_nd_bytes(loaded[i].array)) == 0);
            dp_nd_release(loaded[i].array);
        }
        for (i = 0; i < 3; i++) dp_nd_release(members[i].array);
        remove(path);
    }
    stop();
}
/* an integer clip saturates into the dtype: 3e9..4e9 in int32 is INT32_MAX */
static void test_integer_clip_saturates(void) {
    const int32_t v[2] = {-5, 7};
    dp_shape s = shape1(2);
    dp_ndarray *x, *y = NULL;
    int32_t got[2];
    start();
    x = from(&s, DP_INT32, v);
    CHECK(invoke_str(eng, "clip", 1, &x, 2, (const char *[]){"a_min", "a_max"}, (const char *[]){"3e9", "4e9"}, 0, 1, &y, NULL) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == INT32_MAX && got[1] == INT32_MAX);
    dp_nd_release(y); y = NULL;
    CHECK(invoke_str(eng, "clip", 1, &x, 2, (const char *[]){"a_min", "a_max"}, (const char *[]){"-2.5", "3.5"}, 0, 1, &y, NULL) == DP_OK);
    read_back(y, got);
    CHECK(got[0] == -2 && got[1] == 3);   /* trunc(clip(x)): -2.5 -> -2, 3.5 -> 3 */
    dp_nd_release(y); dp_nd_release(x);
    stop();
}

/* ---- float32 tanh and sigmoid (>>float32 activations) ------------------------ */
static int64_t ordered(float f) { int32_t i; memcpy(&i, &f, sizeof i); return i < 0 ? -(int64_t)(i & 0x7fffffff) : i; }
/* units in the last place between got and the correctly rounded want (NaN
   must meet NaN; a zero must carry want's sign) */
static int64_t ulps(float got, float want) {
    if (want != want || got != got) return (want != want) == (got != got) ? 0 : INT64_MAX;
    if (got == 0 && want == 0) return signbit(got) == signbit(want) ? 0 : INT64_MAX;
    return llabs(ordered(got) - ordered(want));
}
static float ref_tanh(float x) { return (float)tanh((double)x); }
static float ref_sigmoid(float x) { return (float)(1.0 / (1.0 + exp(-(double)x))); }
/* Sampled: every exponent, random mantissas, and the edges (zeros,
   subnormals, infinities, NaN, the saturation points); within 2 ulp of the
   correctly rounded result (bench/act_ulp.c checks all 2^32 inputs), the
   AVX2 loop bitwise the portable one, add-to as y + f(x), and the
   operators through dp_invoke the same bits. */
static void test_activations_f32(void) {
    enum { N = 1 << 20 };
    static const float edges[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-39f, -1e-39f, 1.17549435e-38f, 1e-7f, 3e-4f, 0.624999f, 0.625f, 0.6250001f,
                                  -0.625f, 1.0f, -1.0f, 9.0f, 9.0109f, 9.02f, -9.02f, 9.5f, 20.0f, -20.0f, 87.0f, -87.0f, -88.7f, -100.0f,
                                  -103.9f, -104.0f, -104.5f, 104.0f, 3.4e38f, -3.4e38f, INFINITY, -INFINITY, NAN, -NAN};
    float *x = (float *)malloc(sizeof(float) * N), *y = (float *)malloc(sizeof(float) * N), *y2 = (float *)malloc(sizeof(float) * N);
    uint64_t r = 0x9E3779B97F4A7C15ull;
    int64_t i, worst[2] = {0, 0}, avx_diff = 0, via_invoke = 0;
    int f;
    const int ne = (int)(sizeof edges / sizeof edges[0]);
    start();
    for (i = 0; i < N; i++) {
        uint32_t u;
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        u = (uint32_t)(r >> 16);
        if (i < ne) { x[i] = edges[i]; continue; }
        memcpy(&x[i], &u, sizeof u);
        if (i % 3 == 0) x[i] = (float)((double)(r % 20000) / 1000.0 - 10.0) * (float)(1 + (r >> 40) % 3);   /* where the functions bend */
    }
    for (f = 0; f < 2; f++) {
        dp_ndarray *a, *b = NULL;
        dp_shape s = shape1(N);
        if (f == 0) dp__l1_tanh_f32(N, x, y, 0); else dp__l1_sigmoid_f32(N, x, y, 0);
        for (i = 0; i < N; i++) {
            int64_t u = ulps(y[i], f == 0 ? ref_tanh(x[i]) : ref_sigmoid(x[i]));
            if (u > worst[f]) { worst[f] = u; if (u > 2) fprintf(stderr, "  %s(%a) = %a, correctly rounded %a\n", f ? "sigmoid" : "tanh", x[i], y[i], f ? ref_sigmoid(x[i]) : ref_tanh(x[i])); }
        }
        CHECK(worst[f] <= 2);
        if (f == 0) CHECK(y[0] == 0 && !signbit(y[0]) && y[1] == 0 && signbit(y[1]));            /* tanh +-0 = +-0 */
        else CHECK(y[0] == 0.5f && y[1] == 0.5f);
#ifdef DP__GEMM_X86
        if (dp__cpu_avx2_fma()) {
            if (f == 0) dp__l1_tanh_f32_avx2(N, x, y2, 0); else dp__l1_sigmoid_f32_avx2(N, x, y2, 0);
            for (i = 0; i < N; i++) avx_diff += memcmp(&y[i], &y2[i], sizeof(float)) != 0;
        }
#endif
        memcpy(y2, x, sizeof(float) * N);                                                         /* add-to: y2 = x + f(x) */
        if (f == 0) dp__l1_tanh(N, x, y2, 1); else dp__l1_sigmoid(N, x, y2, 1);
        for (i = 0; i < N; i++) { float w = x[i] + y[i]; avx_diff += memcmp(&w, &y2[i], sizeof w) != 0 && !(w != w && y2[i] != y2[i]); }
        a = from(&s, DP_FLOAT32, x);
        CHECK(invoke1(f ? "sigmoid" : "tanh", 1, &a, NULL, NULL, 0, &b) == DP_OK);
        read_back(b, y2);
        for (i = 0; i < N; i++) via_invoke += memcmp(&y[i], &y2[i], sizeof(float)) != 0;
        dp_nd_release(a); dp_nd_release(b);
    }
    /* the saturations: exactly +-1, 1 and 0, and sigmoid's subnormals */
    CHECK(dp__tanhf_f32(9.02f) == 1.0f && dp__tanhf_f32(-9.02f) == -1.0f && dp__tanhf_f32(INFINITY) == 1.0f && dp__tanhf_f32(-INFINITY) == -1.0f);
    CHECK(dp__sigmoidf_f32(INFINITY) == 1.0f && dp__sigmoidf_f32(-INFINITY) == 0.0f && dp__sigmoidf_f32(-104.5f) == 0.0f);
    CHECK(dp__sigmoidf_f32(-100.0f) > 0 && dp__sigmoidf_f32(-100.0f) < 1.17549435e-38f && ulps(dp__sigmoidf_f32(-100.0f), ref_sigmoid(-100.0f)) <= 1);
    CHECK(dp__tanhf_f32(NAN) != dp__tanhf_f32(NAN) && dp__sigmoidf_f32(NAN) != dp__sigmoidf_f32(NAN));
    if (avx_diff || via_invoke) fprintf(stderr, "  %lld AVX2 or add-to results differ from the portable loop's, %lld through dp_invoke\n", (long long)avx_diff, (long long)via_invoke);
    CHECK(avx_diff == 0 && via_invoke == 0);
    free(x); free(y); free(y2);
    stop();
}
/* _backward_tanh and _backward_sigmoid read the forward output y: og (1 -
   y^2) and og y (1 - y), in float32 and float64, against the derivative
   written out (and, through autograd, by finite differences in
   test_autograd), add-to included. */
static void test_activation_gradients_from_output(void) {
    static const double xv[8] = {-3.5, -1.2, -0.3, -1e-3, 0, 0.2, 0.9, 4.0};
    static const double ov[8] = {0.5, -1.25, 2.0, 1.0, -0.75, 3.0, 1.5, -2.0};
    int f, t, i, add;
    start();
    for (f = 0; f < 2; f++)
        for (t = 0; t < 2; t++)
            for (add = 0; add < 2; add++) {
                dp_dtype dt = t ? DP_FLOAT64 : DP_FLOAT32;
                dp_shape s = shape1(8);
                float xf[8], of[8];
                double gd[8], yd[8];
                float gf[8], yf[8];
                dp_ndarray *x, *og, *y = NULL, *g, *in[2];
                dp_invoke_desc d;
                for (i = 0; i < 8; i++) { xf[i] = (float)xv[i]; of[i] = (float)ov[i]; }
                x = from(&s, dt, t ? (const void *)xv : (const void *)xf);
                og = from(&s, dt, t ? (const void *)ov : (const void *)of);
                g = from(&s, dt, t ? (const void *)ov : (const void *)of);                     /* add-to starts from og */
                CHECK(invoke1(f ? "sigmoid" : "tanh", 1, &x, NULL, NULL, 0, &y) == DP_OK);
                if (t) read_back(y, yd); else { read_back(y, yf); for (i = 0; i < 8; i++) yd[i] = yf[i]; }
                memset(&d, 0, sizeof d);
                in[0] = og; in[1] = y;
                d.op = f ? "_backward_sigmoid" : "_backward_tanh"; d.num_inputs = 2; d.inputs[0] = in[0]; d.inputs[1] = in[1];
                d.num_outputs = 1; d.outputs[0] = g; d.req[0] = add ? DP_REQ_ADD : DP_REQ_WRITE;
                CHECK(dp_invoke(eng, &d, NULL) == DP_OK);
                if (t) read_back(g, gd); else { read_back(g, gf); for (i = 0; i < 8; i++) gd[i] = gf[i]; }
                for (i = 0; i < 8; i++) {
                    double d1 = f ? yd[i] * (1 - yd[i]) : 1 - yd[i] * yd[i];                    /* at the output */
                    double want = ov[i] * d1 + (add ? ov[i] : 0), tol = t ? 1e-15 : 1e-6;
                    double dx = f ? 1 / (1 + exp(-xv[i])) * (1 - 1 / (1 + exp(-xv[i]))) : 1 - tanh(xv[i]) * tanh(xv[i]);
                    if (!(fabs(gd[i] - want) <= tol * (fabs(want) + 1)) || !(fabs(gd[i] - ov[i] * dx - (add ? ov[i] : 0)) <= (t ? 1e-14 : 1e-6) * (fabs(want) + 1))) {
                        fprintf(stderr, "  %s %s%s at x=%g: %.17g, expected %.17g\n", d.op, dp_dtype_name(dt), add ? " add" : "", xv[i], gd[i], want);
                        CHECK(0);
                    }
                }
                dp_nd_release(x); dp_nd_release(og); dp_nd_release(y); dp_nd_release(g);
            }
    stop();
}


/* The element-wise kernels' typed loops (float32, float64) and blocks (the
   other dtypes) against each element computed alone here, the way the
   kernels define it: in double through dp__load_elem / dp__store_elem (the
   integer forms through dp__load_int / dp__store_int), by req, with the
   output fresh, added to, and over its first input (in place); 700
   elements (blocks of 256 and a tail) and 140000 (split over the range
   loop). NaN compares as NaN: which NaN's bits survive a NaN meeting a
   NaN is the compiler's choice (gcc and clang already differed). */
typedef struct ew_case {
    const char *op;
    int kind;                                 /* 0 unary, 1 its gradient, 2 _scalar, 3 its gradient, 4 clip, 5 its gradient */
    double (*f1)(double);
    double (*f2)(double, double);
    double (*d2)(double, double, int);
    dp__int_fn1 i1;
    dp__int_fn2 i2;
} ew_case;
static int ew_is_nan(const void *p, dp_dtype t, int64_t i) {
    if (t == DP_FLOAT16) return (((const uint16_t *)p)[i] & 0x7C00u) == 0x7C00u && (((const uint16_t *)p)[i] & 0x3FFu);
    if (t == DP_FLOAT32 || t == DP_FLOAT64) { double v = dp__load_elem(p, t, i); return v != v; }
    return 0;
}
static void ew_fill(void *p, dp_dtype t, int64_t n, uint32_t seed) {
    static const double edge[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.5, 3.0, 1e-310, 1e-45, 3e38, -1e300, 127, 128, -129, 255, 2147483648.0, 70000};
    int64_t i, ne = (int64_t)(sizeof edge / sizeof edge[0]);
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        if (dp__dtype_is_int(t)) dp__store_int(p, t, i, i < 4 ? (int64_t[]){INT64_MIN, INT64_MAX, -1, 0}[i] : (int64_t)(int32_t)seed >> (seed % 29), DP_REQ_WRITE);
        else if (i < ne) dp__store_elem(p, t, i, edge[i], DP_REQ_WRITE);
        else if (i < ne + 3) dp__store_elem(p, t, i, i == ne ? HUGE_VAL : i == ne + 1 ? -HUGE_VAL : NAN, DP_REQ_WRITE);
        else dp__store_elem(p, t, i, ((double)(seed >> 8) / 16777216.0 - 0.5) * 8, DP_REQ_WRITE);
    }
}
/* element i of case c computed alone into y (of dtype t), from x and og */
static void ew_ref(const ew_case *c, dp_dtype t, const void *og, const void *x, void *y, int64_t i, double s, double lo, double hi, dp_req req) {
    int in = dp__dtype_is_int(t);
    switch (c->kind) {
    case 0:
        if (in && c->i1) dp__store_int(y, t, i, c->i1(dp__load_int(x, t, i)), req);
        else if (t == DP_FLOAT32 && req == DP_REQ_ADD)   /* the float32 loop adds in float (see DP__F32_LOOP) */
            ((float *)y)[i] = ((float *)y)[i] + (float)c->f1(((const float *)x)[i]);
        else dp__store_elem(y, t, i, c->f1(dp__load_elem(x, t, i)), req);
        break;
    case 2:
        if (in && c->i2 && s == (double)(int64_t)s) dp__store_int(y, t, i, c->i2(dp__load_int(x, t, i), (int64_t)s), req);
        else dp__store_elem(y, t, i, c->f2(dp__load_elem(x, t, i), s), req);
        break;
    case 4:
        if (in) {
            int64_t v = dp__load_int(x, t, i), l = dp__int_clamp(t, dp__to_int64(lo)), h = dp__int_clamp(t, dp__to_int64(hi));
            dp__store_int(y, t, i, v < l ? l : v > h ? h : v, req);
        } else dp__store_elem(y, t, i, dp__f_clip(dp__load_elem(x, t, i), lo, hi), req);
        break;
    case 5: dp__store_elem(y, t, i, dp__d_clip(dp__load_elem(og, t, i), dp__load_elem(x, t, i), lo, hi), req); break;
    default: dp__store_elem(y, t, i, dp__load_elem(og, t, i) * (c->kind == 1 ? c->f1(dp__load_elem(x, t, i)) : c->d2(dp__load_elem(x, t, i), s, 0)), req); break;
    }
}
/* returns the number of elements that differ (a message for the first) */
static int64_t ew_check(const ew_case *c, dp_dtype t, int64_t n, double s, int mode) {
    size_t sz = dp_dtype_size(t), bytes = (size_t)n * sz;
    unsigned char *xs = (unsigned char *)malloc(bytes), *os = (unsigned char *)malloc(bytes), *ys = (unsigned char *)malloc(bytes),
                  *want = (unsigned char *)malloc(bytes), *got = (unsigned char *)malloc(bytes);
    int grad = c->kind == 1 || c->kind == 3 || c->kind == 5, clip = c->kind >= 4;
    const char *keys[2] = {"a_min", "a_max"}, *vals[2] = {"-1.5", "100"};
    dp_shape sh = shape1(n);
    dp_ndarray *in[2], *out = NULL;
    dp_req req = mode == 1 ? DP_REQ_ADD : DP_REQ_WRITE;
    int64_t i, bad = 0;
    ew_fill(xs, t, n, 7u); ew_fill(os, t, n, 11u); ew_fill(ys, t, n, 13u);
    /* reference: the output starts as ys (fresh or added to), or as the first input (in place) */
    memcpy(want, mode == 2 ? (grad ? os : xs) : ys, bytes);
    for (i = 0; i < n; i++) ew_ref(c, t, os, xs, want, i, s, -1.5, 100, req);
    in[0] = from(&sh, t, grad ? os : xs); in[1] = grad ? from(&sh, t, xs) : NULL;
    out = mode == 2 ? in[0] : from(&sh, t, ys);
    CHECK(invoke_str(eng, c->op, grad ? 2 : 1, in, clip ? 2 : 0, keys, vals, s, 1, &out, &req) == DP_OK);
    read_back(out, got);
    for (i = 0; i < n; i++)
        if (memcmp(got + (size_t)i * sz, want + (size_t)i * sz, sz) && !(ew_is_nan(got, t, i) && ew_is_nan(want, t, i))) {
            if (!bad) fprintf(stderr, "  %s %s n %lld scalar %g mode %d: element %lld is %.17g, computed alone %.17g\n", c->op, dp_dtype_name(t), (long long)n, s,
                              mode, (long long)i, dp__load_elem(got, t, i), dp__load_elem(want, t, i));
            bad++;
        }
    dp_nd_release(in[0]); if (in[1]) dp_nd_release(in[1]); if (mode != 2) dp_nd_release(out);
    free(xs); free(os); free(ys); free(want); free(got);
    return bad;
}
static void test_elementwise_dtypes(void) {
    static const ew_case cases[] = {
        {"negative", 0, dp__f_negative, NULL, NULL, dp__i_negative, NULL}, {"sqrt", 0, dp__f_sqrt, NULL, NULL, NULL, NULL},
        {"relu", 0, dp__f_relu, NULL, NULL, dp__i_relu, NULL}, {"exp", 0, dp__f_exp, NULL, NULL, NULL, NULL},
        {"square", 0, dp__f_square, NULL, NULL, dp__i_square, NULL}, {"sign", 0, dp__f_sign, NULL, NULL, dp__i_sign, NULL},
        {"_backward_log", 1, dp__d_log, NULL, NULL, NULL, NULL}, {"_backward_relu", 1, dp__d_relu, NULL, NULL, NULL, NULL},
        {"_backward_abs", 1, dp__d_abs, NULL, NULL, NULL, NULL}, {"_backward_sqrt", 1, dp__d_sqrt, NULL, NULL, NULL, NULL},
        {"add_scalar", 2, NULL, dp__f_add, NULL, NULL, dp__i_add}, {"rsub_scalar", 2, NULL, dp__f_rsub, NULL, NULL, dp__i_rsub},
        {"mul_scalar", 2, NULL, dp__f_mul, NULL, NULL, dp__i_mul}, {"rdiv_scalar", 2, NULL, dp__f_rdiv, NULL, NULL, NULL},
        {"power_scalar", 2, NULL, dp__f_power, NULL, NULL, dp__i_power}, {"maximum_scalar", 2, NULL, dp__f_maximum, NULL, NULL, dp__i_maximum},
        {"_backward_mul_scalar", 3, NULL, NULL, dp__d_mul, NULL, NULL}, {"_backward_rdiv_scalar", 3, NULL, NULL, dp__d_rdiv, NULL, NULL},
        {"_backward_power_scalar", 3, NULL, NULL, dp__d_power, NULL, NULL}, {"_backward_minimum_scalar", 3, NULL, NULL, dp__d_minimum, NULL, NULL},
        {"clip", 4, NULL, NULL, NULL, NULL, NULL}, {"_backward_clip", 5, NULL, NULL, NULL, NULL, NULL},
    };
    static const dp_dtype dts[] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT8, DP_UINT8, DP_INT32, DP_INT64, DP_BOOL};
    static const double scalars[] = {2, 0.5, -3};
    size_t c, d, k;
    int mode;
    start();
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (d = 0; d < sizeof dts / sizeof dts[0]; d++)
            for (k = 0; k < (cases[c].kind == 2 || cases[c].kind == 3 ? 3u : 1u); k++)
                for (mode = 0; mode < 3; mode++) CHECK(ew_check(&cases[c], dts[d], 700, scalars[k], mode) == 0);
    for (c = 0; c < sizeof cases / sizeof cases[0]; c += 3)   /* split over the range loop */
        for (d = 0; d < 3; d++) CHECK(ew_check(&cases[c], d == 2 ? DP_INT32 : dts[d], 140000, 2, (int)(c % 3 ? 1 : d)) == 0);
    stop();
}

/* Each element of a case's output (n elements of dtype t in got, want)
   the same bits, or NaN in both; a message for the first that is not */
static int64_t ew_compare(const char *what, dp_dtype t, int64_t n, const void *got, const void *want) {
    size_t sz = dp_dtype_size(t);
    int64_t i, bad = 0;
    for (i = 0; i < n; i++)
        if (memcmp((const char *)got + (size_t)i * sz, (const char *)want + (size_t)i * sz, sz) && !(ew_is_nan(got, t, i) && ew_is_nan(want, t, i))) {
            if (!bad) fprintf(stderr, "  %s %s n %lld: element %lld is %.17g, expected %.17g\n", what, dp_dtype_name(t), (long long)n, (long long)i,
                              dp__load_elem(got, t, i), dp__load_elem(want, t, i));
            bad++;
        }
    return bad;
}
/* A kernel run by hand on arrays made here (white-box: any dtype, req
   null too, with no engine: serial) */
static int run_kernel(int (*kern)(const dp_kernel_ctx *), const dp_params *p, int nin, dp_ndarray **in, dp_ndarray *out, dp_req req) {
    dp_kernel_ctx k;
    int i;
    memset(&k, 0, sizeof k);
    for (i = 0; i < nin; i++) CHECK(dp_nd_wait_to_write(in[i], NULL) == DP_OK);
    CHECK(dp_nd_wait_to_write(out, NULL) == DP_OK);
    k.params = p; k.num_inputs = nin; k.num_outputs = 1; k.inputs = in; k.outputs = &out; k.req = &req;
    return kern(&k);
}

/* The optimizer updates' general form (an output other than the weight,
   add-to, the other dtypes) against each element computed alone as
   dp__opt_step defines it, through dp__load_elem / dp__store_elem: the
   states written, the output by req. Sizes 1, 7, DP__BLK + 3 and 140000
   (split over the range loop); float32 and float64 through dp_invoke,
   float16 and int32 (which dp_invoke refuses) and req null by hand. */
static int64_t upd_check(int kind, dp_dtype t, int64_t n, int mode, int clip, int by_hand) {
    static const char *ops[3] = {"sgd_update", "sgd_mom_update", "adam_update"};
    static int (*const kerns[3])(const dp_kernel_ctx *) = {dp__k_sgd, dp__k_sgd_mom, dp__k_adam};
    const char *keys[8] = {"lr", "wd", "rescale_grad", "clip_gradient", kind == 1 ? "momentum" : "beta1", "beta2", "epsilon", "t"};
    const char *vals[8] = {"0.25", "0.01", "0.5", clip ? "0.75" : "-1", kind == 1 ? "0.9" : "0.8", "0.99", "1e-6", "3"};
    int nin = 2 + kind, nkw = kind == 0 ? 4 : kind == 1 ? 5 : 8, i;
    size_t sz = dp_dtype_size(t), bytes = (size_t)n * sz;
    unsigned char *buf[4], *ys = (unsigned char *)malloc(bytes), *want[3], *got = (unsigned char *)malloc(bytes);
    dp_shape sh = shape1(n);
    dp_ndarray *in[4], *out;
    dp_req req = mode == 1 || mode == 2 ? DP_REQ_ADD : mode == 3 ? DP_REQ_NULL : DP_REQ_WRITE;
    dp_params ps;
    double p[7] = {0, 0, 0, 0, 0, 0, 0};
    int64_t e, bad = 0;
    char what[96];
    memset(&ps, 0, sizeof ps);
    ps.count = nkw;
    for (i = 0; i < nkw; i++) { if (i == 7) ps.v[i].i = 3; else ps.v[i].f = atof(vals[i]); }
    for (i = 0; i < 7 && i < nkw; i++) p[i] = ps.v[i].f;
    dp__opt_bias_correct(kind == 2 ? DP__OPT_ADAM : kind, &ps, p);
    for (i = 0; i < 4; i++) { buf[i] = (unsigned char *)malloc(bytes); ew_fill(buf[i], t, n, 17u + (uint32_t)i * 6u); }
    for (i = 0; i < 3; i++) { want[i] = (unsigned char *)malloc(bytes); memcpy(want[i], buf[i == 0 ? 0 : i + 1], bytes); }
    ew_fill(ys, t, n, 5u);
    /* the reference: want[0] the output (ys, or the weight for mode 2: added to in place), want[1..2] the states */
    if (mode != 2) memcpy(want[0], ys, bytes);
    for (e = 0; e < n; e++) {
        double a = kind ? dp__load_elem(buf[2], t, e) : 0, b = kind == 2 ? dp__load_elem(buf[3], t, e) : 0;
        double wi = dp__opt_step(kind == 2 ? DP__OPT_ADAM : kind, dp__load_elem(buf[0], t, e), dp__load_elem(buf[1], t, e), &a, &b, p);
        if (kind) dp__store_elem(want[1], t, e, a, DP_REQ_WRITE);
        if (kind == 2) dp__store_elem(want[2], t, e, b, DP_REQ_WRITE);
        dp__store_elem(want[0], t, e, wi, req);
    }
    for (i = 0; i < nin; i++) in[i] = from(&sh, t, buf[i]);
    out = mode == 2 ? in[0] : from(&sh, t, ys);
    if (by_hand) CHECK(run_kernel(kerns[kind], &ps, nin, in, out, req) == 0);
    else CHECK(invoke_str(eng, ops[kind], nin, in, nkw, keys, vals, 0, 1, &out, &req) == DP_OK);
    snprintf(what, sizeof what, "%s mode %d clip %d%s", ops[kind], mode, clip, by_hand ? " (by hand)" : "");
    read_back(out, got);
    bad += ew_compare(what, t, n, got, want[0]);
    for (i = 1; i <= kind; i++) { read_back(in[i + 1], got); bad += ew_compare(i == 1 ? "  its state 1" : "  its state 2", t, n, got, want[i]); }
    for (i = 0; i < nin; i++) dp_nd_release(in[i]);
    if (mode != 2) dp_nd_release(out);
    for (i = 0; i < 4; i++) free(buf[i]);
    for (i = 0; i < 3; i++) free(want[i]);
    free(ys); free(got);
    return bad;
}
static void test_update_general(void) {
    static const int64_t sizes[] = {1, 7, DP__BLK + 3, 140000};
    static const dp_dtype dts[] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32};
    int kind, mode, clip;
    size_t d, z;
    start();
    for (kind = 0; kind < 3; kind++)
        for (d = 0; d < 4; d++)
            for (z = 0; z < 4; z++)
                for (mode = 0; mode < 4; mode++)
                    for (clip = 0; clip < 2; clip++) {
                        int by_hand = d >= 2 || mode == 3;
                        if (by_hand && z == 3) continue;          /* the range loop needs an engine: dp_invoke's dtypes only */
                        CHECK(upd_check(kind, dts[d], sizes[z], mode, clip, by_hand) == 0);
                    }
    stop();
}

/* The reductions' gradients (the output gradient broadcast back over the
   reduced axes, times 1 / count for mean, to the elements equal to the
   result for max and min) against each element computed alone through
   dp__load_elem / dp__store_elem, the result as dp__reduce_walk finds it:
   axes reduced as one run (rows of the inner axes, or along a row) and
   not (the serial walk), a 0-d array, 1, 7 and DP__BLK + 3 elements and
   shapes over DP__PAR_MIN (split over the range loop), write and add-to. */
static int64_t rg_check(int kind, dp_dtype t, const dp_shape *xs, const int64_t *axes, int nax, int mode) {
    static const char *ops[4] = {"_backward_sum", "_backward_mean", "_backward_max", "_backward_min"};
    int64_t n = dp_shape_size(xs), nout, i, o = 0, st[DP_MAX_DIMS], idx[DP_MAX_DIMS] = {0}, bad;
    size_t sz = dp_dtype_size(t);
    char axis[64] = "(", what[96];
    const char *keys[1] = {"axis"}, *vals[1] = {axis};
    int mask = 0, d, red = kind == 2 ? DP__RED_MAX : kind == 3 ? DP__RED_MIN : kind == 1 ? DP__RED_MEAN : DP__RED_SUM;
    dp_shape os;
    unsigned char *xb = (unsigned char *)malloc(n * sz + 1), *ob, *ys = (unsigned char *)malloc(n * sz + 1), *want = (unsigned char *)malloc(n * sz + 1),
                  *got = (unsigned char *)malloc(n * sz + 1);
    double *best, scale = 1;
    dp_ndarray *in[2], *out;
    dp_req req = mode ? DP_REQ_ADD : DP_REQ_WRITE;
    for (d = 0; d < nax; d++) { mask |= 1 << axes[d]; snprintf(axis + strlen(axis), sizeof axis - strlen(axis), "%s%lld", d ? "," : "", (long long)axes[d]); }
    strcat(axis, nax == 1 ? ",)" : ")");
    if (!nax) mask = (1 << xs->ndim) - 1;
    dp__reduced_shape(xs, mask, 0, &os);
    nout = dp_shape_size(&os);
    ob = (unsigned char *)malloc(nout * sz + 1); best = (double *)malloc(sizeof(double) * (size_t)(nout + 1));
    ew_fill(xb, t, n, 3u); ew_fill(ob, t, nout, 9u); ew_fill(ys, t, n, 27u);
    for (i = 0; i < n; i += 3) memcpy(xb + (size_t)i * sz, xb + (size_t)(i / 3) * sz, sz);   /* ties for max and min */
    dp__reduce_walk(xb, t, xs, mask, red, best, nout);
    if (red == DP__RED_MEAN && nout) scale = (double)nout / (double)(n ? n : 1);
    memcpy(want, ys, n * sz);
    dp__reduce_strides(xs, mask, st);
    for (i = 0; i < n; i++) {
        double v = dp__load_elem(ob, t, o) * scale;
        if (kind >= 2 && dp__load_elem(xb, t, i) != best[o]) v = 0;
        dp__store_elem(want, t, i, v, req);
        dp__odometer_next(xs->ndim, xs->dims, idx, st, &o, NULL, NULL);
    }
    in[0] = from(&os, t, ob); in[1] = from(xs, t, xb); out = from(xs, t, ys);
    CHECK(invoke_str(eng, ops[kind], 2, in, nax ? 1 : 0, keys, vals, 0, 1, &out, &req) == DP_OK);
    read_back(out, got);
    snprintf(what, sizeof what, "%s axis %s ndim %d mode %d", ops[kind], nax ? axis : "()", xs->ndim, mode);
    bad = ew_compare(what, t, n, got, want);
    dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(out);
    free(xb); free(ob); free(ys); free(want); free(got); free(best);
    return bad;
}
static void test_reduce_grad_dtypes(void) {
    static const dp_dtype dts[] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32};
    static const struct { int ndim; int64_t dims[3]; int nax; int64_t axes[2]; } cases[] = {
        {0, {0}, 0, {0}}, {1, {1}, 0, {0}}, {1, {7}, 0, {0}}, {1, {DP__BLK + 3}, 1, {0}},
        {2, {7, DP__BLK + 3}, 1, {1}}, {2, {DP__BLK + 3, 7}, 1, {0}}, {2, {5, 7}, 0, {0}},
        {3, {3, 5, 7}, 2, {0, 2}}, {3, {3, 5, 7}, 1, {1}}, {3, {3, 1, 7}, 2, {0, 1}},
        {2, {2, 70001}, 1, {0}}, {2, {70001, 2}, 1, {1}}, {1, {140003}, 0, {0}}, {3, {3, 50001, 1}, 2, {0, 2}},
        {3, {4, 35001, 2}, 2, {0, 2}},
    };
    size_t c, d;
    int kind, mode;
    start();
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        dp_shape s;
        memset(&s, 0, sizeof s);
        s.ndim = cases[c].ndim;
        memcpy(s.dims, cases[c].dims, sizeof(int64_t) * 3);
        for (d = 0; d < 4; d++)
            for (kind = 0; kind < 4; kind++)
                for (mode = 0; mode < 2; mode++)
                    if (dp_shape_size(&s) < 100000 || (d + (size_t)kind + (size_t)mode) % 3 == c % 3)   /* the large ones: a third of them */
                        CHECK(rg_check(kind, dts[d], &s, cases[c].axes, cases[c].nax, mode) == 0);
    }
    stop();
}

/* softmax, log_softmax, their gradients and softmax_cross_entropy's
   (forward and backward) against each row computed here as the kernels
   define it, element by element through dp__load_elem / dp__store_elem:
   the row's maximum, then the sum of exp(x - max) in order, then each
   element; along the last axis and an inner one, rows of 1, 7, DP__BLK + 3
   and 2^17 elements in all (split over the range loop), write and add-to. */
static void sm_ref_stats(const void *x, dp_dtype t, int64_t base, int64_t len, int64_t in, double *mx, double *sum) {
    int64_t j;
    *mx = -HUGE_VAL; *sum = 0;
    for (j = 0; j < len; j++) if (dp__load_elem(x, t, base + j * in) > *mx) *mx = dp__load_elem(x, t, base + j * in);
    for (j = 0; j < len; j++) *sum += exp(dp__load_elem(x, t, base + j * in) - *mx);
}
/* kind 0 softmax, 1 log_softmax, 2 and 3 their gradients */
static int64_t sm_check(int kind, dp_dtype t, int64_t outer, int64_t len, int64_t inner, int mode) {
    static const char *ops[4] = {"softmax", "log_softmax", "_backward_softmax", "_backward_log_softmax"};
    int64_t n = outer * len * inner, a, b, j, bad;
    size_t bytes = (size_t)n * dp_dtype_size(t);
    unsigned char *xb = (unsigned char *)malloc(bytes), *ob = (unsigned char *)malloc(bytes), *ys = (unsigned char *)malloc(bytes),
                  *want = (unsigned char *)malloc(bytes), *got = (unsigned char *)malloc(bytes);
    const char *keys[1] = {"axis"}, *vals[1] = {"1"};
    dp_shape sh;
    dp_ndarray *in[2], *out;
    dp_req req = mode ? DP_REQ_ADD : DP_REQ_WRITE;
    int log_form = kind & 1;
    char what[64];
    memset(&sh, 0, sizeof sh);
    sh.ndim = 3; sh.dims[0] = outer; sh.dims[1] = len; sh.dims[2] = inner;
    ew_fill(xb, t, n, 31u); ew_fill(ob, t, n, 37u); ew_fill(ys, t, n, 41u);
    if (n > 64) for (j = 0; j < n; j++) if (ew_is_nan(xb, t, j) || dp__load_elem(xb, t, j) > 1e30 || dp__load_elem(xb, t, j) < -1e30) dp__store_elem(xb, t, j, 0.25, DP_REQ_WRITE);
    memcpy(want, ys, bytes);
    for (a = 0; a < outer; a++)
        for (b = 0; b < inner; b++) {
            int64_t base = a * len * inner + b;
            double mx, sum, dot = 0;
            sm_ref_stats(xb, t, base, len, inner, &mx, &sum);
            if (kind < 2) {
                for (j = 0; j < len; j++) {
                    double v = dp__load_elem(xb, t, base + j * inner);
                    dp__store_elem(want, t, base + j * inner, log_form ? (v - mx) - log(sum) : exp(v - mx) / sum, req);
                }
                continue;
            }
            for (j = 0; j < len; j++) {
                double y = exp(dp__load_elem(xb, t, base + j * inner) - mx) / sum, o = dp__load_elem(ob, t, base + j * inner);
                dot += log_form ? o : o * y;
            }
            for (j = 0; j < len; j++) {
                double y = exp(dp__load_elem(xb, t, base + j * inner) - mx) / sum, o = dp__load_elem(ob, t, base + j * inner);
                dp__store_elem(want, t, base + j * inner, log_form ? o - y * dot : y * (o - dot), req);
            }
        }
    in[0] = from(&sh, t, kind < 2 ? xb : ob); in[1] = kind < 2 ? NULL : from(&sh, t, xb); out = from(&sh, t, ys);
    CHECK(invoke_str(eng, ops[kind], kind < 2 ? 1 : 2, in, 1, keys, vals, 0, 1, &out, &req) == DP_OK);
    read_back(out, got);
    snprintf(what, sizeof what, "%s (%lld, %lld, %lld) mode %d", ops[kind], (long long)outer, (long long)len, (long long)inner, mode);
    bad = ew_compare(what, t, n, got, want);
    dp_nd_release(in[0]); if (in[1]) dp_nd_release(in[1]); dp_nd_release(out);
    free(xb); free(ob); free(ys); free(want); free(got);
    return bad;
}
/* softmax_cross_entropy (rows, c) with int32 labels: the loss, and the
   data's and the label's gradients (the label's 0, by its own req) */
static int64_t sce_check(dp_dtype t, int64_t rows, int64_t c, int mode) {
    int64_t n = rows * c, r, j, bad;
    size_t sz = dp_dtype_size(t), bytes = (size_t)n * sz;
    unsigned char *xb = (unsigned char *)malloc(bytes), *ys = (unsigned char *)malloc(bytes), *want = (unsigned char *)malloc(bytes),
                  *got = (unsigned char *)malloc(bytes), ob[8], lw[8], lg[8];
    int32_t *lab = (int32_t *)malloc(sizeof(int32_t) * (size_t)rows), *lgrad = (int32_t *)malloc(sizeof(int32_t) * (size_t)rows),
            *lwant = (int32_t *)malloc(sizeof(int32_t) * (size_t)rows);
    dp_shape sx = shape2(rows, c), sl = shape1(rows), s1 = shape1(1);
    dp_ndarray *in[3], *outs[2];
    dp_req req[2];
    double loss = 0, og;
    req[0] = req[1] = mode ? DP_REQ_ADD : DP_REQ_WRITE;
    ew_fill(xb, t, n, 43u); ew_fill(ys, t, n, 47u); ew_fill(ob, t, 1, 53u); ew_fill(lw, t, 1, 59u);
    for (j = 0; j < n; j++) if (ew_is_nan(xb, t, j) || dp__load_elem(xb, t, j) > 1e30 || dp__load_elem(xb, t, j) < -1e30) dp__store_elem(xb, t, j, 0.25, DP_REQ_WRITE);
    dp__store_elem(ob, t, 0, 0.75, DP_REQ_WRITE);
    for (r = 0; r < rows; r++) { lab[r] = (int32_t)((r * 7 + 3) % c); lgrad[r] = lwant[r] = (int32_t)r - 5; }
    /* the loss */
    memcpy(lg, lw, sz);
    for (r = 0; r < rows; r++) {
        double mx, sum;
        sm_ref_stats(xb, t, r * c, c, 1, &mx, &sum);
        loss += log(sum) - (dp__load_elem(xb, t, r * c + lab[r]) - mx);
    }
    dp__store_elem(lg, t, 0, loss, req[0]);
    in[0] = from(&sx, t, xb); in[1] = from(&sl, DP_INT32, lab); outs[0] = from(&s1, t, lw);
    CHECK(invoke_str(eng, "softmax_cross_entropy", 2, in, 0, NULL, NULL, 0, 1, outs, req) == DP_OK);
    read_back(outs[0], got);
    bad = ew_compare("softmax_cross_entropy", t, 1, got, lg);
    dp_nd_release(outs[0]); dp_nd_release(in[0]); dp_nd_release(in[1]);
    /* the gradients */
    memcpy(want, ys, bytes);
    og = dp__load_elem(ob, t, 0);
    for (r = 0; r < rows; r++) {
        double mx, sum;
        sm_ref_stats(xb, t, r * c, c, 1, &mx, &sum);
        for (j = 0; j < c; j++) dp__store_elem(want, t, r * c + j, og * (exp(dp__load_elem(xb, t, r * c + j) - mx) / sum - (j == lab[r])), req[0]);
        dp__store_elem(lwant, DP_INT32, r, 0, req[1]);
    }
    in[0] = from(&s1, t, ob); in[1] = from(&sx, t, xb); in[2] = from(&sl, DP_INT32, lab); outs[0] = from(&sx, t, ys); outs[1] = from(&sl, DP_INT32, lgrad);
    CHECK(invoke_str(eng, "_backward_softmax_cross_entropy", 3, in, 0, NULL, NULL, 0, 2, outs, req) == DP_OK);
    read_back(outs[0], got);
    bad += ew_compare("_backward_softmax_cross_entropy", t, n, got, want);
    read_back(outs[1], lgrad);
    bad += ew_compare("  its label gradient", DP_INT32, rows, lgrad, lwant);
    for (j = 0; j < 3; j++) dp_nd_release(in[j]);
    dp_nd_release(outs[0]); dp_nd_release(outs[1]);
    free(xb); free(ys); free(want); free(got); free(lab); free(lgrad); free(lwant);
    return bad;
}
static void test_softmax_dtypes(void) {
    static const dp_dtype dts[] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32};
    static const int64_t shapes[][3] = {{1, 1, 1}, {3, 7, 1}, {2, DP__BLK + 3, 1}, {2, 7, 5}, {3, DP__BLK + 3, 2}, {1 << 10, 128, 1}, {2, 64, 1 << 10}};
    size_t d, z;
    int kind, mode;
    start();
    for (d = 0; d < 4; d++)
        for (z = 0; z < sizeof shapes / sizeof shapes[0]; z++)
            for (kind = 0; kind < 4; kind++)
                for (mode = 0; mode < 2; mode++) CHECK(sm_check(kind, dts[d], shapes[z][0], shapes[z][1], shapes[z][2], mode) == 0);
    for (d = 0; d < 4; d++)
        for (mode = 0; mode < 2; mode++) {
            CHECK(sce_check(dts[d], 1, 1, mode) == 0);
            CHECK(sce_check(dts[d], 7, 3, mode) == 0);
            CHECK(sce_check(dts[d], 3, DP__BLK + 3, mode) == 0);
        }
    stop();
}

/* one_hot, take and its gradient, accuracy and the fills (full, arange)
   against each element computed alone through dp__load_elem /
   dp__store_elem (the integer forms through dp__load_int): every output
   dtype, write and add-to, 1, 7 and DP__BLK + 3 elements. */
static int64_t oh_check(dp_dtype it, dp_dtype t, int64_t n, int mode) {
    static const double fv[] = {0, -0.0, 2, 2.5, NAN, 1e300, -1, 4, 5, 3};
    int64_t depth = 5, i, j, bad;
    size_t isz = dp_dtype_size(it), osz = dp_dtype_size(t);
    unsigned char *x = (unsigned char *)malloc((size_t)n * isz), *ys = (unsigned char *)malloc((size_t)(n * depth) * osz),
                  *want = (unsigned char *)malloc((size_t)(n * depth) * osz), *got = (unsigned char *)malloc((size_t)(n * depth) * osz);
    const char *keys[4] = {"depth", "on_value", "off_value", "dtype"}, *vals[4] = {"5", "2.5", "-1.25", dp_dtype_name(t)};
    dp_shape sx = shape1(n), sy = shape2(n, depth);
    dp_ndarray *in[1], *out;
    dp_req req = mode ? DP_REQ_ADD : DP_REQ_WRITE;
    char what[64];
    for (i = 0; i < n; i++) {
        if (dp__dtype_is_int(it)) dp__store_int(x, it, i, i % 11 == 10 ? (int64_t)9007199254740993LL : (i * 5) % 8 - 1, DP_REQ_WRITE);
        else dp__store_elem(x, it, i, fv[i % 10], DP_REQ_WRITE);
    }
    ew_fill(ys, t, n * depth, 61u);
    memcpy(want, ys, (size_t)(n * depth) * osz);
    for (i = 0; i < n; i++) {
        double v = dp__load_elem(x, it, i);
        int64_t iv = dp__dtype_is_int(it) ? dp__load_int(x, it, i) : -1;
        for (j = 0; j < depth; j++) dp__store_elem(want, t, i * depth + j, (dp__dtype_is_int(it) ? iv == j : v == (double)j) ? 2.5 : -1.25, req);
    }
    in[0] = from(&sx, it, x); out = from(&sy, t, ys);
    CHECK(invoke_str(eng, "one_hot", 1, in, 4, keys, vals, 0, 1, &out, &req) == DP_OK);
    read_back(out, got);
    snprintf(what, sizeof what, "one_hot of %s mode %d", dp_dtype_name(it), mode);
    bad = ew_compare(what, t, n * depth, got, want);
    dp_nd_release(in[0]); dp_nd_release(out);
    free(x); free(ys); free(want); free(got);
    return bad;
}
/* take (grad 0) or its gradient (grad 1) of (11, 3) data by n int32 indices, clipped */
static int64_t take_check(dp_dtype t, int64_t n, int mode, int grad) {
    int64_t rows = 11, w = 3, i, e, bad, ny = grad ? rows * w : n * w;
    size_t sz = dp_dtype_size(t);
    unsigned char *x = (unsigned char *)malloc((size_t)(rows * w) * sz), *og = (unsigned char *)malloc((size_t)(n * w) * sz),
                  *ys = (unsigned char *)malloc((size_t)ny * sz), *want = (unsigned char *)malloc((size_t)ny * sz), *got = (unsigned char *)malloc((size_t)ny * sz);
    int32_t *ix = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), *ig = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), *igw = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    const char *keys[1] = {"mode"}, *vals[1] = {"clip"};
    dp_shape sx = shape2(rows, w), si = shape1(n), so = shape2(n, w);
    dp_ndarray *in[3], *outs[2];
    dp_req req[2];
    char what[64];
    req[0] = req[1] = mode ? DP_REQ_ADD : DP_REQ_WRITE;
    ew_fill(x, t, rows * w, 67u); ew_fill(og, t, n * w, 71u); ew_fill(ys, t, ny, 73u);
    for (i = 0; i < n; i++) { ix[i] = (int32_t)((i * 7) % 13 - 1); ig[i] = igw[i] = (int32_t)i + 3; }
    memcpy(want, ys, (size_t)ny * sz);
    if (grad && !mode) for (i = 0; i < ny; i++) dp__store_elem(want, t, i, 0, DP_REQ_WRITE);
    for (i = 0; i < n; i++) {
        int64_t r = ix[i] < 0 ? 0 : ix[i] >= rows ? rows - 1 : ix[i];
        for (e = 0; e < w; e++) {
            if (grad) dp__store_elem(want, t, r * w + e, dp__load_elem(og, t, i * w + e), DP_REQ_ADD);
            else dp__store_elem(want, t, i * w + e, dp__load_elem(x, t, r * w + e), req[0]);
        }
        if (grad) dp__store_elem(igw, DP_INT32, i, 0, req[1]);
    }
    if (grad) { in[0] = from(&so, t, og); in[1] = from(&sx, t, x); in[2] = from(&si, DP_INT32, ix); outs[0] = from(&sx, t, ys); outs[1] = from(&si, DP_INT32, ig); }
    else { in[0] = from(&sx, t, x); in[1] = from(&si, DP_INT32, ix); outs[0] = from(&so, t, ys); }
    CHECK(invoke_str(eng, grad ? "_backward_take" : "take", grad ? 3 : 2, in, 1, keys, vals, 0, grad ? 2 : 1, outs, req) == DP_OK);
    read_back(outs[0], got);
    snprintf(what, sizeof what, "%s mode %d", grad ? "_backward_take" : "take", mode);
    bad = ew_compare(what, t, ny, got, want);
    if (grad) { read_back(outs[1], ig); bad += ew_compare("  its index gradient", DP_INT32, n, ig, igw); dp_nd_release(outs[1]); dp_nd_release(in[2]); }
    dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(outs[0]);
    free(x); free(og); free(ys); free(want); free(got); free(ix); free(ig); free(igw);
    return bad;
}
static int64_t acc_check(dp_dtype ta, dp_dtype tb, int64_t n) {
    unsigned char *a = (unsigned char *)malloc((size_t)n * 8), *b = (unsigned char *)malloc((size_t)n * 8);
    int ints = dp__is_index_dtype(ta) && dp__is_index_dtype(tb);
    int64_t i, hits = 0;
    float got = 0, want;
    dp_shape s = shape1(n);
    dp_ndarray *in[2], *out = NULL;
    ew_fill(a, ta, n, 79u);
    for (i = 0; i < n; i++) {          /* b: a's value (as b's dtype holds it) every other element */
        if (dp__dtype_is_int(tb) && dp__dtype_is_int(ta)) dp__store_int(b, tb, i, i % 2 ? dp__load_int(a, ta, i) : i, DP_REQ_WRITE);
        else dp__store_elem(b, tb, i, i % 2 ? dp__load_elem(a, ta, i) : (double)i, DP_REQ_WRITE);
    }
    for (i = 0; i < n; i++) hits += ints ? dp__load_index(a, ta, i) == dp__load_index(b, tb, i) : dp__load_elem(a, ta, i) == dp__load_elem(b, tb, i);
    want = (float)((double)hits / (double)n);
    in[0] = from(&s, ta, a); in[1] = from(&s, tb, b);
    CHECK(invoke_str(eng, "accuracy", 2, in, 0, NULL, NULL, 0, 1, &out, NULL) == DP_OK);
    read_back(out, &got);
    if (memcmp(&got, &want, sizeof got)) fprintf(stderr, "  accuracy %s %s n %lld: %.9g, expected %.9g\n", dp_dtype_name(ta), dp_dtype_name(tb), (long long)n, got, want);
    dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(out);
    free(a); free(b);
    return memcmp(&got, &want, sizeof got) != 0;
}
static int64_t fill_check(dp_dtype t, int64_t n) {
    unsigned char *want = (unsigned char *)malloc((size_t)n * 8), *got = (unsigned char *)malloc((size_t)n * 8);
    dp_shape s = shape1(n);
    dp_ndarray *a = NULL;
    int64_t i, bad;
    for (i = 0; i < n; i++) dp__store_elem(want, t, i, -3.75, DP_REQ_WRITE);
    CHECK(dp_nd_full(eng, &s, t, cpu, -3.75, &a) == DP_OK);
    read_back(a, got);
    bad = ew_compare("full", t, n, got, want);
    dp_nd_release(a); a = NULL;
    for (i = 0; i < n; i++) dp__store_elem(want, t, i, -2.5 + 0.375 * (double)i, DP_REQ_WRITE);
    CHECK(dp_nd_arange(eng, -2.5, -2.5 + 0.375 * (double)n - 0.1, 0.375, t, cpu, &a) == DP_OK && dp_shape_size(dp_nd_shape(a)) == n);
    read_back(a, got);
    bad += ew_compare("arange", t, n, got, want);
    dp_nd_release(a);
    free(want); free(got);
    return bad;
}
static void test_index_kernels_dtypes(void) {
    static const dp_dtype dts[] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32, DP_INT64, DP_INT8, DP_UINT8, DP_BOOL};
    static const dp_dtype idx[] = {DP_FLOAT32, DP_FLOAT64, DP_INT64, DP_UINT8};
    static const int64_t sizes[] = {1, 7, DP__BLK + 3};
    static const dp_dtype pairs[][2] = {{DP_INT64, DP_INT32}, {DP_UINT8, DP_UINT8}, {DP_FLOAT32, DP_INT64}, {DP_FLOAT16, DP_FLOAT32}, {DP_INT64, DP_FLOAT64}, {DP_INT8, DP_BOOL}};
    size_t d, z, q;
    int mode;
    start();
    for (z = 0; z < 3; z++) {
        for (d = 0; d < 8; d++) {
            CHECK(fill_check(dts[d], sizes[z]) == 0);
            for (mode = 0; mode < 2; mode++) {
                for (q = 0; q < 4; q++) CHECK(oh_check(idx[q], dts[d], sizes[z], mode) == 0);
                CHECK(take_check(dts[d], sizes[z], mode, 0) == 0);
                CHECK(take_check(dts[d], sizes[z], mode, 1) == 0);
            }
        }
        for (q = 0; q < sizeof pairs / sizeof pairs[0]; q++) CHECK(acc_check(pairs[q][0], pairs[q][1], sizes[z]) == 0);
    }
    stop();
}

/* sum, mean, max, min and argmax against the walk over the input written
   out here (each element in C order into its output: in double, or in
   int64 for an integer array's sum, max and min; argmax's first best, a
   NaN winning), stored by req: the serial walks (axes in one run or not,
   small arrays) and large arrays whose split gives the walk's bits (many
   outputs, or max, min, argmax and integer sums, which any grouping
   leaves the same), every dtype, write and add-to. */
static int64_t red_check(int kind, dp_dtype t, const dp_shape *xs, const int64_t *axes, int nax, int mode) {
    static const char *ops[5] = {"sum", "mean", "max", "min", "argmax"};
    int64_t n = dp_shape_size(xs), nout, i, o = 0, st[DP_MAX_DIMS], idx[DP_MAX_DIMS] = {0}, bad, *where, *iacc;
    size_t sz = dp_dtype_size(t);
    char axis[64] = "(", what[96];
    const char *keys[1] = {"axis"}, *vals[1] = {axis};
    int mask = 0, d, in_int = dp__dtype_is_int(t), ax1 = -1;
    dp_shape os;
    dp_dtype ot = kind == 4 ? DP_INT64 : t;
    unsigned char *xb = (unsigned char *)malloc(n * sz + 1), *ys, *want, *got;
    double *acc;
    dp_ndarray *in[1], *out;
    dp_req req = mode ? DP_REQ_ADD : DP_REQ_WRITE;
    for (d = 0; d < nax; d++) { mask |= 1 << axes[d]; snprintf(axis + strlen(axis), sizeof axis - strlen(axis), "%s%lld", d ? "," : "", (long long)axes[d]); }
    strcat(axis, nax == 1 ? ",)" : ")");
    if (!nax) mask = (1 << xs->ndim) - 1;
    if (nax == 1) ax1 = (int)axes[0];
    dp__reduced_shape(xs, mask, 0, &os);
    nout = dp_shape_size(&os);
    ys = (unsigned char *)malloc((size_t)nout * 8 + 1); want = (unsigned char *)malloc((size_t)nout * 8 + 1); got = (unsigned char *)malloc((size_t)nout * 8 + 1);
    acc = (double *)malloc(sizeof(double) * (size_t)(nout + 1)); where = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nout + 1));
    iacc = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nout + 1));
    ew_fill(xb, t, n, 83u); ew_fill(ys, ot, nout, 89u);
    if (kind < 2 && !in_int) for (i = 0; i < n; i++) if (ew_is_nan(xb, t, i) || fabs(dp__load_elem(xb, t, i)) > 1e30) dp__store_elem(xb, t, i, 1.5, DP_REQ_WRITE);
    for (i = 0; i < n; i += 5) memcpy(xb + (size_t)i * sz, xb + (size_t)(i / 5) * sz, sz);   /* ties */
    for (i = 0; i < nout; i++) {
        acc[i] = kind == 2 ? -HUGE_VAL : kind == 3 ? HUGE_VAL : 0; where[i] = -1;
        iacc[i] = kind == 2 ? INT64_MIN : kind == 3 ? INT64_MAX : 0;
    }
    dp__reduce_strides(xs, mask, st);
    for (i = 0; i < n; i++) {
        double v = dp__load_elem(xb, t, i);
        int64_t iv = in_int ? dp__load_int(xb, t, i) : 0;
        if (kind == 4) {
            int better = in_int ? (where[o] < 0 || iv > iacc[o]) : (where[o] < 0 || (acc[o] == acc[o] && (v > acc[o] || v != v)));
            if (better) { iacc[o] = iv; acc[o] = v; where[o] = ax1 >= 0 ? idx[ax1] : i; }
        } else if (in_int && kind != 1) {
            if (kind == 2) { if (iv > iacc[o]) iacc[o] = iv; }
            else if (kind == 3) { if (iv < iacc[o]) iacc[o] = iv; }
            else iacc[o] = dp__wrap((uint64_t)iacc[o] + (uint64_t)iv);
        } else if (kind == 2) { if (v > acc[o] || v != v) acc[o] = v; }
        else if (kind == 3) { if (v < acc[o] || v != v) acc[o] = v; }
        else acc[o] += v;
        dp__odometer_next(xs->ndim, xs->dims, idx, st, &o, NULL, NULL);
    }
    memcpy(want, ys, (size_t)nout * dp_dtype_size(ot));
    for (i = 0; i < nout; i++) {
        if (kind == 4) dp__store_int(want, DP_INT64, i, where[i], req);
        else if (in_int && kind != 1) dp__store_int(want, t, i, iacc[i], req);
        else dp__store_elem(want, t, i, kind == 1 ? acc[i] / ((double)n / (double)nout) : acc[i], req);
    }
    in[0] = from(xs, t, xb); out = from(&os, ot, ys);
    CHECK(invoke_str(eng, ops[kind], 1, in, nax ? 1 : 0, keys, vals, 0, 1, &out, &req) == DP_OK);
    read_back(out, got);
    snprintf(what, sizeof what, "%s of %s axis %s ndim %d mode %d", ops[kind], dp_dtype_name(t), nax ? axis : "()", xs->ndim, mode);
    bad = ew_compare(what, ot, nout, got, want);
    dp_nd_release(in[0]); dp_nd_release(out);
    free(xb); free(ys); free(want); free(got); free(acc); free(where); free(iacc);
    return bad;
}
static void test_reductions_dtypes(void) {
    static const dp_dtype dts[] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32, DP_INT64, DP_INT8, DP_UINT8, DP_BOOL};
    static const struct { int ndim; int64_t dims[3]; int nax; int64_t axes[2]; int large; } cases[] = {
        {1, {1}, 0, {0}, 0}, {1, {7}, 0, {0}, 0}, {1, {DP__BLK + 3}, 1, {0}, 0}, {2, {7, DP__BLK + 3}, 1, {1}, 0},
        {2, {DP__BLK + 3, 7}, 1, {0}, 0}, {3, {3, 5, 7}, 2, {0, 2}, 0}, {3, {3, 5, 7}, 1, {1}, 0},
        {2, {1024, 130}, 1, {1}, 1}, {2, {130, 1024}, 1, {0}, 1}, {1, {140003}, 0, {0}, 2}, {2, {2, 70001}, 1, {1}, 2},
    };
    size_t c, d;
    int kind, mode;
    start();
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        dp_shape s;
        memset(&s, 0, sizeof s);
        s.ndim = cases[c].ndim;
        memcpy(s.dims, cases[c].dims, sizeof(int64_t) * 3);
        for (d = 0; d < 8; d++)
            for (kind = 0; kind < 5; kind++) {
                if (kind == 4 && cases[c].nax > 1) continue;                             /* argmax: one axis or all */
                if (cases[c].large == 2 && kind < 2 && !dp__dtype_is_int(dts[d])) continue;   /* few outputs: a float sum's split is not the walk's */
                if (cases[c].large == 2 && kind == 1) continue;
                for (mode = 0; mode < 2; mode++)
                    if (kind != 4 || !mode) CHECK(red_check(kind, dts[d], &s, cases[c].axes, cases[c].nax, mode) == 0);
            }
    }
    stop();
}

/* dp_dtype_load_n / dp_dtype_store_n: every element as dp_dtype_load /
   dp_dtype_store would give it, every dtype and req, values that round,
   saturate or wrap, from an offset, and n <= 0 touching nothing */
static void test_dtype_blocks(void) {
    static const dp_dtype ts[8] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32, DP_INT64, DP_INT8, DP_UINT8, DP_BOOL};
    static const dp_req reqs[3] = {DP_REQ_WRITE, DP_REQ_ADD, DP_REQ_NULL};
    unsigned char a[8 * 300], b[8 * 300];
    double v[300], got[300];
    int ti, ri, i, bad = 0;
    for (i = 0; i < 300; i++) v[i] = i % 7 == 0 ? 1e6 * (i - 150) : (i - 150) * 1.37 + (i % 3 ? 0.5 : -0.25);
    for (ti = 0; ti < 8; ti++)
        for (ri = 0; ri < 3; ri++) {
            dp_dtype t = ts[ti];
            size_t es = dp_dtype_size(t);
            for (i = 0; i < 300; i++) dp_dtype_store(t, a, i, (double)(i % 11) - 5, DP_REQ_WRITE);
            memcpy(b, a, sizeof a);
            dp_dtype_store_n(t, a, 3, 290, v + 3, reqs[ri]);
            for (i = 3; i < 293; i++) dp_dtype_store(t, b, i, v[i], reqs[ri]);
            if (memcmp(a, b, es * 300) != 0) { fprintf(stderr, "  dp_dtype_store_n %s req %d differs\n", dp_dtype_name(t), (int)reqs[ri]); bad = 1; }
            dp_dtype_load_n(t, a, 5, 280, got);
            for (i = 0; i < 280; i++) if (memcmp(&got[i], &(double){dp_dtype_load(t, a, 5 + i)}, sizeof(double)) != 0) bad = 1;
            dp_dtype_store_n(t, a, 0, 0, v, DP_REQ_WRITE); dp_dtype_store_n(t, a, 0, -4, v, DP_REQ_WRITE);
            got[0] = 42; dp_dtype_load_n(t, a, 0, 0, got);
            if (memcmp(a, b, es * 300) != 0 || got[0] != 42) bad = 1;
        }
    CHECK(!bad);
}

/* _copy (write and add-to), cast between every pair of dtypes and concat
   and its gradient: the runs (dp__move_run) bitwise the old element by
   element moves (dp__move_elem), on values that round, wrap, saturate and
   exceed 2^53 */
static void test_move_runs(void) {
    static const dp_ctx CPU0 = {DP_DEV_CPU, 0};
    static const dp_dtype ts[8] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT16, DP_INT32, DP_INT64, DP_INT8, DP_UINT8, DP_BOOL};
    dp_engine *e = NULL;
    dp_engine_desc d;
    int a, b, add, bad = 0;
    int64_t n = 2 * DP__BLK + 5, i;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_NAIVE; d.ignore_env = 1;
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    for (a = 0; a < 8; a++)
        for (b = 0; b < 8; b++)
            for (add = 0; add < 2; add++) {
                dp_dtype st = ts[a], dt = ts[b];
                dp_req req = add ? DP_REQ_ADD : DP_REQ_WRITE;
                unsigned char src[8 * (2 * DP__BLK + 5)], y0[8 * (2 * DP__BLK + 5)], want[8 * (2 * DP__BLK + 5)], got[8 * (2 * DP__BLK + 5)];
                dp_shape s = {1, {n}};
                dp_ndarray *x = NULL, *y = NULL;
                for (i = 0; i < n; i++) {
                    if (st == DP_INT64) ((int64_t *)src)[i] = ((int64_t)1 << 53) + i * 12345 - 77 * (i % 5);
                    else dp_dtype_store(st, src, i, i % 9 == 0 ? 1e10 * (i % 2 ? 1 : -1) : (i - 200) * 1.3 + 0.37, DP_REQ_WRITE);
                    if (dt == DP_INT64) ((int64_t *)y0)[i] = ((int64_t)1 << 54) - i * 999;
                    else dp_dtype_store(dt, y0, i, (i % 13) * 0.75 - 4, DP_REQ_WRITE);
                }
                memcpy(want, y0, sizeof y0);
                for (i = 0; i < n; i++) dp__move_elem(want, dt, i, src, st, i, req);
                CHECK(dp_nd_from_host(e, &s, st, CPU0, src, &x) == DP_OK && dp_nd_from_host(e, &s, dt, CPU0, y0, &y) == DP_OK);
                {
                    dp_invoke_desc v;
                    memset(&v, 0, sizeof v);
                    v.op = st == dt ? "_copy" : "cast"; v.num_inputs = 1; v.inputs[0] = x; v.num_outputs = 1; v.outputs[0] = y; v.req[0] = req;
                    if (st != dt) { v.params[0].name = "dtype"; v.params[0].s = dp_dtype_name(dt); }
                    CHECK(dp_invoke(e, &v, NULL) == DP_OK);
                }
                CHECK(dp_nd_read(y, got, (size_t)n * dp_dtype_size(dt), NULL) == DP_OK);
                if (memcmp(got, want, (size_t)n * dp_dtype_size(dt)) != 0) {
                    fprintf(stderr, "  %s -> %s %s differs\n", dp_dtype_name(st), dp_dtype_name(dt), add ? "added" : "written");
                    bad = 1;
                }
                if (st == dt) {                             /* concat of x and y along axis 0, and back */
                    dp_ndarray *in[2], *out = NULL, *parts[2] = {NULL, NULL};
                    unsigned char cw[16 * (2 * DP__BLK + 5)], cg[16 * (2 * DP__BLK + 5)];
                    size_t es = dp_dtype_size(st);
                    in[0] = x; in[1] = y;
                    {
                        dp_invoke_desc v;
                        memset(&v, 0, sizeof v);
                        v.op = "concat"; v.num_inputs = 2; v.inputs[0] = x; v.inputs[1] = y; v.num_outputs = 1;
                        v.params[0].name = "num_args"; v.params[0].s = "2"; v.params[1].name = "dim"; v.params[1].s = "0";
                        CHECK(dp_invoke(e, &v, &out) == DP_OK);
                    }
                    memcpy(cw, src, (size_t)n * es); memcpy(cw + (size_t)n * es, got, (size_t)n * es);
                    CHECK(out && dp_nd_read(out, cg, 2 * (size_t)n * es, NULL) == DP_OK && memcmp(cg, cw, 2 * (size_t)n * es) == 0);
                    (void)in; (void)parts;
                    if (out) dp_nd_release(out);
                }
                dp_nd_release(x); dp_nd_release(y);
            }
    CHECK(!bad);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

int main(void) {
    static const test_case tests[] = {
        {"move_runs", test_move_runs},
        {"dtype_blocks", test_dtype_blocks},
        {"int64_exact_movement", test_int64_exact_movement},
        {"int64_argmax", test_int64_argmax},
        {"integer_wraparound", test_integer_wraparound},
        {"nan_like_numpy", test_nan_like_numpy},
        {"output_over_input", test_output_over_input},
        {"overlapping_outputs_refused", test_overlapping_outputs_refused},
        {"updated_inputs_overlap", test_updated_inputs_overlap},
        {"float16_conversion", test_float16_conversion},
        {"new_dtypes", test_new_dtypes},
        {"npy_new_dtypes", test_npy_new_dtypes},
        {"integer_clip_saturates", test_integer_clip_saturates},
        {"activations_f32", test_activations_f32},
        {"activation_gradients_from_output", test_activation_gradients_from_output},
        {"elementwise_dtypes", test_elementwise_dtypes},
        {"update_general", test_update_general},
        {"reduce_grad_dtypes", test_reduce_grad_dtypes},
        {"softmax_dtypes", test_softmax_dtypes},
        {"index_kernels_dtypes", test_index_kernels_dtypes},
        {"reductions_dtypes", test_reductions_dtypes},
    };
    return run_tests("kernels_exact", tests, (int)(sizeof tests / sizeof tests[0]));
}
