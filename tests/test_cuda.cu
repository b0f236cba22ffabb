/* tests/test_cuda.cu - depeng_cuda.h's tests: the backend, the kernels, copies,
   streams and events, the memory pool, and failures.

   Tests that need a GPU run every kernel against the CPU kernel (the same
   inputs on a CPU engine and on a GPU engine), and check copies, streams,
   events, the pool, errors, the naive and pooled engines and an autograd
   step. Where CUDA finds no device each of them prints
   "SKIP: no CUDA device (name)" and is counted as skipped, never as passed.
   The rest run everywhere: the backend reports no GPU cleanly, every
   built-in operator has a GPU kernel (depeng_nn.h's included: its
   implementation is compiled here before depeng_cuda.h's), the
   reductions' combine step gives the CPU's answer in any order, and every
   GPU kernel, run on the host (depeng_cuda.h chapter 5), matches the CPU
   kernel, also in its errors: depeng_nn.h's layers on random geometry, and
   Dropout by what its masks promise and by the CPU kernel's masks.
   That depeng.h's DP__HD formulas compile for the device is checked by
   building this file: every kernel calls them.
   The last line is "cuda: N passed, M failed, K skipped" (tests/run.sh
   adds the skips up and fails on failures only).

   Build: nvcc -std=c++17 -I. tests/test_cuda.cu -o test_cuda   (see make cuda) */
#define DEPENG_IMPLEMENTATION
#define DEPENG_CUDA_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
#include "depeng_cuda.h"
#include "tests/test_common.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int g_gpus;                 /* CUDA devices found */
static char g_no_gpu_why[256];
static int g_skipped;              /* set by a test that could not run here */
#define NEED_GPU() do { if (!g_gpus) { g_skipped = 1; return; } } while (0)

static const dp_ctx CPU0 = {DP_DEV_CPU, 0};
static const dp_ctx GPU0 = {DP_DEV_GPU, 0};

static dp_engine *make_engine(dp_engine_type type, int with_cuda) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
    d.logger.func = quiet_logger;
    if (with_cuda) d.gpu_backend = dp_cuda_backend();
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    if (with_cuda) {
        dp_storage_desc sd;
        memset(&sd, 0, sizeof sd);
        sd.memory = dp_cuda_memory();
        if (dp_storage_configure(e, &sd) != DP_OK) { fprintf(stderr, "storage configure failed\n"); exit(1); }
    }
    return e;
}
static dp_shape S(int nd, int64_t a = 0, int64_t b = 0, int64_t c = 0) {
    dp_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = nd; s.dims[0] = a; s.dims[1] = b; s.dims[2] = c;
    return s;
}

/* ---- the operator cases ---------------------------------------------------------
   One case: an operator, its inputs' shapes and how to fill them, keyword
   parameters, the dtypes to run it in, and whether to run it a second time
   adding into the same outputs (req ADD). The element-wise ones come from
   depeng.h's own operator lists, so a new operator there is tested here. */
enum { F_ANY, F_POS, F_TIES, F_NAN, F_INDEX, F_BIG, F_INT = 100 /* + k: integers 0..k-1 */ };
#define MAX_IN 5
#define MAX_OUT 8
typedef struct op_case {
    char op[64];
    const char *kwargs;            /* "key=value;key=value" */
    double scalar;
    int nin, nout;                 /* nout 0: the operator's own count */
    dp_shape in[MAX_IN];
    int fill[MAX_IN];
    unsigned dtypes;               /* bit 1 << dtype */
    int add;
    char kwstore[200];             /* kwargs made up at run time (add_case_kw) */
} op_case;
#define FLOATS ((1u << DP_FLOAT32) | (1u << DP_FLOAT64))
#define INTS_TOO (FLOATS | (1u << DP_INT32))
#define ALL_DTYPES ((1u << DP_DTYPE_COUNT) - 1u)
#define INDEX_DTYPES ((1u << DP_INT32) | (1u << DP_INT64) | (1u << DP_UINT8))
static op_case g_cases[1024];
static int g_ncases;

static op_case *add_case(const char *op, const char *kwargs, unsigned dtypes, int add) {
    op_case *c = &g_cases[g_ncases++];
    memset(c, 0, sizeof *c);
    snprintf(c->op, sizeof c->op, "%s", op);
    c->kwargs = kwargs; c->dtypes = dtypes; c->add = add;
    return c;
}
static op_case *in(op_case *c, dp_shape s, int fill) { c->in[c->nin] = s; c->fill[c->nin] = fill; c->nin++; return c; }
/* A case whose kwargs are formatted here (random parameters). */
static op_case *add_case_kw(const char *op, unsigned dtypes, int add, const char *fmt, ...) {
    op_case *c = add_case(op, "", dtypes, add);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->kwstore, sizeof c->kwstore, fmt, ap);
    va_end(ap);
    c->kwargs = c->kwstore;
    return c;
}
/* A shape of up to 5 axes */
static dp_shape SN(int nd, int64_t a, int64_t b = 0, int64_t c = 0, int64_t d = 0, int64_t e = 0) {
    dp_shape s = S(nd, a, b, c);
    s.dims[3] = d; s.dims[4] = e;
    return s;
}

static void unary_cases(const char *nm) {
    char grad[64];
    int fill = strcmp(nm, "log") == 0 || strcmp(nm, "sqrt") == 0 ? F_POS : F_ANY;
    int int_safe = strcmp(nm, "negative") == 0 || strcmp(nm, "abs") == 0 || strcmp(nm, "sign") == 0
                   || strcmp(nm, "square") == 0 || strcmp(nm, "relu") == 0;
    snprintf(grad, sizeof grad, "_backward_%s", nm);
    in(add_case(nm, "", int_safe ? INTS_TOO : FLOATS, 1), S(2, 3, 5), fill);
    in(add_case(nm, "", FLOATS, 0), S(2, 0, 3), fill);                       /* empty */
    in(in(add_case(grad, "", FLOATS, 1), S(2, 3, 5), F_ANY), S(2, 3, 5), fill);
}
static void binary_cases(const char *nm) {
    static const struct { dp_shape a, b, o; } shapes[] = {
        {{3, {2, 3, 4}}, {3, {2, 3, 4}}, {3, {2, 3, 4}}},
        {{3, {3, 1, 4}}, {2, {5, 1}}, {3, {3, 5, 4}}},
        {{2, {2, 1}}, {2, {1, 3}}, {2, {2, 3}}},
        {{1, {4}}, {2, {3, 4}}, {2, {3, 4}}},
        {{2, {3, 1}}, {1, {0}}, {2, {3, 0}}},                               /* empty output, non-empty input */
    };
    char grad[64];
    int fa = strcmp(nm, "power") == 0 ? F_POS : F_ANY, fb = strcmp(nm, "div") == 0 ? F_POS : F_ANY;
    size_t i;
    snprintf(grad, sizeof grad, "_backward_%s", nm);
    for (i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        in(in(add_case(nm, "", FLOATS, 1), shapes[i].a, fa), shapes[i].b, fb);
        in(in(in(add_case(grad, "", FLOATS, 1), shapes[i].o, F_ANY), shapes[i].a, fa), shapes[i].b, fb);
    }
}
static void scalar_cases(const char *nm) {
    char fwd[64], grad[64];
    int fill = strcmp(nm, "power") == 0 || strcmp(nm, "rdiv") == 0 ? F_POS : F_ANY;
    snprintf(fwd, sizeof fwd, "%s_scalar", nm);
    snprintf(grad, sizeof grad, "_backward_%s_scalar", nm);
    in(add_case(fwd, "", FLOATS, 1), S(3, 2, 3, 4), fill)->scalar = 1.75;
    in(in(add_case(grad, "", FLOATS, 1), S(3, 2, 3, 4), F_ANY), S(3, 2, 3, 4), fill)->scalar = 1.75;
}
static void nn_cases(void);
static void build_cases(void) {
    static const char *red[4] = {"sum", "mean", "max", "min"};
    static const struct { const char *kw; dp_shape x, og; int fill; } red_shapes[] = {
        {"axis=(0,2);keepdims=true", {3, {2, 3, 4}}, {3, {1, 3, 1}}, F_TIES},
        {"axis=()", {3, {2, 3, 4}}, {0, {0}}, F_ANY},
        {"axis=1", {3, {2, 3, 4}}, {2, {2, 4}}, F_TIES},
        {"axis=(-1,)", {2, {3, 5}}, {1, {3}}, F_NAN},
        {"axis=0", {2, {0, 3}}, {1, {3}}, F_ANY},                              /* empty rows */
        {"axis=()", {2, {40, 50}}, {0, {0}}, F_ANY},                           /* one team of threads */
        {"axis=0", {2, {20000, 2}}, {1, {2}}, F_ANY},                          /* long rows: slices, second pass */
    };
    static const char *dot_flags[4] = {"", "transpose_a=true", "transpose_b=true", "transpose_a=true;transpose_b=true"};
    static const char *sce_kw = "";
    char grad[64];
    op_case *c;
    int i;
    size_t j;
#define UNARY_CASES(nm, doc) unary_cases(#nm);
#define BINARY_CASES(nm, doc) binary_cases(#nm);
#define SCALAR_CASES(nm, doc) scalar_cases(#nm);
    DP__UNARY_OPS(UNARY_CASES)
    DP__BINARY_OPS(BINARY_CASES)
    DP__SCALAR_OPS(SCALAR_CASES)
#undef UNARY_CASES
#undef BINARY_CASES
#undef SCALAR_CASES
    in(add_case("clip", "a_min=-0.5;a_max=1", FLOATS, 1), S(2, 3, 5), F_ANY);
    {   /* integer arithmetic that wraps around in int32, on the GPU as on the CPU */
        static const char *wrapping[] = {"add", "sub", "mul", "maximum", "power"};
        for (i = 0; i < 5; i++) in(in(add_case(wrapping[i], "", INTS_TOO, 1), S(2, 3, 4), F_BIG), S(1, 4), i == 4 ? F_INT + 3 : F_BIG);
        in(add_case("negative", "", INTS_TOO, 1), S(2, 3, 4), F_BIG);
        in(add_case("add_scalar", "", INTS_TOO, 1), S(2, 3, 4), F_BIG)->scalar = 1073741824.0;
        in(add_case("mul_scalar", "", INTS_TOO, 0), S(2, 3, 4), F_BIG)->scalar = 3;
        in(add_case("clip", "a_min=-1e9;a_max=2.5e9", INTS_TOO, 0), S(2, 3, 4), F_BIG);
        in(add_case("one_hot", "depth=4;dtype=int32", INTS_TOO, 0), S(1, 9), F_INDEX);
    }
    in(in(add_case("_backward_clip", "a_min=-0.5;a_max=1", FLOATS, 1), S(2, 3, 5), F_ANY), S(2, 3, 5), F_TIES);
    for (i = 0; i < 4; i++) {
        snprintf(grad, sizeof grad, "_backward_%s", red[i]);
        for (j = 0; j < sizeof red_shapes / sizeof red_shapes[0]; j++) {
            /* max and min refuse an empty axis (no identity, as NumPy): only their gradients run there */
            if (!(i >= 2 && dp_shape_size(&red_shapes[j].x) == 0)) in(add_case(red[i], red_shapes[j].kw, FLOATS, 1), red_shapes[j].x, red_shapes[j].fill);
            in(in(add_case(grad, red_shapes[j].kw, FLOATS, 1), red_shapes[j].og, F_ANY), red_shapes[j].x, red_shapes[j].fill);
        }
    }
    in(add_case("argmax", "axis=1", FLOATS, 0), S(3, 3, 4, 5), F_ANY);
    in(add_case("argmax", "axis=()", FLOATS, 0), S(3, 3, 4, 5), F_ANY);
    in(add_case("argmax", "axis=1;keepdims=true", INTS_TOO, 1), S(2, 4, 7), F_TIES);
    in(add_case("argmax", "axis=1", FLOATS, 0), S(2, 6, 9), F_NAN);
    in(add_case("argmax", "axis=1", FLOATS, 0), S(2, 0, 3), F_ANY);            /* empty rows, an empty result */
    in(add_case("argmax", "axis=1", FLOATS, 0), S(2, 2, 20000), F_TIES);      /* slices: ties across them */
    in(add_case("argmax", "axis=()", FLOATS, 0), S(1, 3000), F_TIES);          /* one team */
    for (i = 0; i < 2; i++) {
        const char *nm = i ? "log_softmax" : "softmax", *gnm = i ? "_backward_log_softmax" : "_backward_softmax";
        in(add_case(nm, "", FLOATS, 1), S(2, 4, 7), F_ANY);
        in(add_case(nm, "axis=1", FLOATS, 1), S(3, 3, 4, 5), F_ANY);
        in(add_case(nm, "axis=-1", FLOATS, 0), S(2, 2, 300), F_ANY);           /* a team per row */
        in(in(add_case(gnm, "", FLOATS, 1), S(2, 4, 7), F_ANY), S(2, 4, 7), F_ANY);
        in(in(add_case(gnm, "axis=1", FLOATS, 1), S(3, 3, 4, 5), F_ANY), S(3, 3, 4, 5), F_ANY);
        in(in(add_case(gnm, "axis=-1", FLOATS, 0), S(2, 2, 300), F_ANY), S(2, 2, 300), F_ANY);
    }
    in(in(add_case("softmax_cross_entropy", sce_kw, FLOATS, 1), S(2, 6, 5), F_ANY), S(1, 6), F_INT + 5);
    in(in(add_case("softmax_cross_entropy", sce_kw, FLOATS, 0), S(2, 3, 100), F_ANY), S(1, 3), F_INT + 100);
    in(in(add_case("softmax_cross_entropy", sce_kw, FLOATS, 0), S(2, 9000, 3), F_ANY), S(1, 9000), F_INT + 3);   /* sliced sum */
    in(in(in(add_case("_backward_softmax_cross_entropy", sce_kw, FLOATS, 1), S(1, 1), F_POS), S(2, 6, 5), F_ANY), S(1, 6), F_INT + 5);
    in(in(in(add_case("_backward_softmax_cross_entropy", sce_kw, FLOATS, 0), S(1, 1), F_POS), S(2, 3, 100), F_ANY), S(1, 3), F_INT + 100);
    in(in(add_case("SoftmaxOutput", "", FLOATS, 1), S(2, 6, 5), F_ANY), S(1, 6), F_INT + 5);
    in(in(add_case("SoftmaxOutput", "", FLOATS, 0), S(2, 3, 300), F_ANY), S(1, 3), F_INT + 300);       /* a team per row */
    in(in(in(in(add_case("_backward_SoftmaxOutput", "", FLOATS, 1), S(2, 6, 5), F_ANY), S(2, 6, 5), F_ANY), S(1, 6), F_INT + 5), S(2, 6, 5), F_ANY);
    in(in(in(in(add_case("_backward_SoftmaxOutput", "grad_scale=2;normalization=batch", FLOATS, 0), S(2, 4, 7), F_ANY), S(2, 4, 7), F_ANY),
          S(1, 4), F_INT + 7), S(2, 4, 7), F_ANY);
    in(in(in(in(add_case("_backward_SoftmaxOutput", "out_grad=1;smooth_alpha=0.1;normalization=valid", FLOATS, 0), S(2, 4, 7), F_ANY),
             S(2, 4, 7), F_ANY), S(1, 4), F_INT + 7), S(2, 4, 7), F_ANY);
    in(in(add_case("SoftmaxOutput", "preserve_shape=1", FLOATS, 0), S(3, 2, 3, 5), F_ANY), S(2, 2, 3), F_INT + 5);
    in(add_case("transpose", "axes=(1,2,0)", INTS_TOO, 1), S(3, 2, 3, 4), F_ANY);
    in(add_case("transpose", "axes=(2,0,1)", ALL_DTYPES, 0), S(3, 2, 3, 4), F_NAN);
    in(add_case("transpose", "", FLOATS, 0), S(3, 2, 3, 4), F_ANY);
    in(in(add_case("_backward_transpose", "axes=(1,2,0)", FLOATS, 1), S(3, 3, 4, 2), F_ANY), S(3, 2, 3, 4), F_ANY);
    in(in(add_case("_backward_transpose", "", FLOATS, 0), S(3, 4, 3, 2), F_ANY), S(3, 2, 3, 4), F_ANY);
    c = add_case("concat", "num_args=3;dim=1", INTS_TOO, 1);
    in(in(in(c, S(3, 2, 1, 3), F_ANY), S(3, 2, 2, 3), F_ANY), S(3, 2, 4, 3), F_ANY);
    in(in(add_case("concat", "num_args=2;dim=0", FLOATS, 0), S(2, 1, 3), F_ANY), S(2, 2, 3), F_ANY);
    in(in(in(add_case("concat", "num_args=3;dim=-1", FLOATS, 0), S(2, 2, 2), F_ANY), S(2, 2, 0), F_ANY), S(2, 2, 3), F_ANY);
    c = add_case("_backward_concat", "num_args=3;dim=1", FLOATS, 1);
    in(in(in(in(c, S(3, 2, 7, 3), F_ANY), S(3, 2, 1, 3), F_ANY), S(3, 2, 2, 3), F_ANY), S(3, 2, 4, 3), F_ANY);
    c->nout = 3;
    in(add_case("one_hot", "depth=5;on_value=2;off_value=-1", FLOATS, 1), S(1, 8), F_INDEX);
    in(add_case("one_hot", "depth=5;dtype=float64", FLOATS, 0), S(2, 2, 4), F_INDEX);
    in(add_case("one_hot", "depth=3;dtype=int32", FLOATS, 0), S(1, 8), F_INDEX);
    for (i = 0; i < 4; i++) {
        int ta = i & 1, tb = i >> 1;
        dp_shape a = ta ? S(2, 4, 3) : S(2, 3, 4), b = tb ? S(2, 5, 4) : S(2, 4, 5);
        dp_shape a2 = ta ? S(2, 40, 33) : S(2, 33, 40), b2 = tb ? S(2, 17, 40) : S(2, 40, 17);   /* partial tiles */
        in(in(add_case("dot", dot_flags[i], FLOATS, 1), a, F_ANY), b, F_ANY);
        in(in(add_case("dot", dot_flags[i], FLOATS, 0), a2, F_ANY), b2, F_ANY);
        in(in(in(add_case("_backward_dot", dot_flags[i], FLOATS, 1), S(2, 3, 5), F_ANY), a, F_ANY), b, F_ANY);
        in(in(in(add_case("_backward_dot", dot_flags[i], FLOATS, 0), S(2, 33, 17), F_ANY), a2, F_ANY), b2, F_ANY);
    }
    in(in(add_case("dot", "", FLOATS, 1), S(2, 3, 0), F_ANY), S(2, 0, 4), F_ANY);      /* no products: zeros */
    in(in(in(add_case("FullyConnected", "num_hidden=3", FLOATS, 1), S(2, 4, 6), F_ANY), S(2, 3, 6), F_ANY), S(1, 3), F_ANY);
    in(in(in(add_case("FullyConnected", "num_hidden=9", FLOATS, 0), S(2, 70, 20), F_ANY), S(2, 9, 20), F_ANY), S(1, 9), F_ANY);
    /* the gradient counts its outputs by the forward's inputs (num_args) */
    c = add_case("_backward_FullyConnected", "num_hidden=3", FLOATS, 1);
    in(in(in(in(c, S(2, 4, 3), F_ANY), S(2, 4, 6), F_ANY), S(2, 3, 6), F_ANY), S(1, 3), F_ANY)->nout = 3;
    c = add_case("_backward_FullyConnected", "num_hidden=9", FLOATS, 0);
    in(in(in(in(c, S(2, 70, 9), F_ANY), S(2, 70, 20), F_ANY), S(2, 9, 20), F_ANY), S(1, 9), F_ANY)->nout = 3;
    /* MXNet's no_bias and flatten: the product over the last axis, the bias summed over every other */
    in(in(add_case("FullyConnected", "num_hidden=3;no_bias=1;num_args=2;flatten=0", FLOATS, 1), S(3, 2, 5, 6), F_ANY), S(2, 3, 6), F_ANY);
    in(in(in(add_case("FullyConnected", "num_hidden=3", FLOATS, 0), S(3, 2, 2, 3), F_ANY), S(2, 3, 6), F_ANY), S(1, 3), F_ANY);
    c = add_case("_backward_FullyConnected", "num_hidden=3;flatten=0", FLOATS, 1);
    in(in(in(in(c, S(3, 2, 5, 3), F_ANY), S(3, 2, 5, 6), F_ANY), S(2, 3, 6), F_ANY), S(1, 3), F_ANY)->nout = 3;
    c = add_case("_backward_FullyConnected", "num_hidden=3;no_bias=1;num_args=2", FLOATS, 0);
    in(in(in(c, S(2, 4, 3), F_ANY), S(3, 4, 2, 3), F_ANY), S(2, 3, 6), F_ANY)->nout = 2;
    in(add_case("_copy", "", INTS_TOO, 1), S(2, 3, 4), F_ANY);
    in(add_case("_copy", "", FLOATS, 0), S(2, 3, 4), F_ANY);
    in(add_case("cast", "dtype=float16", ALL_DTYPES, 1), S(2, 3, 4), F_NAN);
    in(add_case("cast", "dtype=int8", ALL_DTYPES, 0), S(2, 3, 4), F_NAN);
    in(add_case("cast", "dtype=bool", ALL_DTYPES, 0), S(2, 3, 4), F_NAN);
    in(add_case("cast", "dtype=float64", ALL_DTYPES, 1), S(2, 3, 4), F_ANY);
    in(add_case("cast", "dtype=uint8", ALL_DTYPES, 0), S(2, 3, 4), F_ANY);
    in(in(add_case("_backward_cast", "dtype=float32", FLOATS, 1), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    in(in(add_case("_backward__copy", "", FLOATS, 1), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    in(add_case("reshape", "shape=(4,-1)", FLOATS, 1), S(2, 2, 6), F_ANY);
    in(in(add_case("_backward_reshape", "shape=(4,-1)", FLOATS, 1), S(2, 4, 3), F_ANY), S(2, 2, 6), F_ANY);
    in(in(add_case("sgd_update", "lr=0.1;wd=0.01", FLOATS, 0), S(1, 10), F_ANY), S(1, 10), F_ANY);
    in(in(add_case("sgd_update", "lr=0.1;rescale_grad=2;clip_gradient=0.5", FLOATS, 1), S(1, 10), F_ANY), S(1, 10), F_ANY);
    in(in(in(add_case("sgd_mom_update", "lr=0.1;momentum=0.9;wd=0.001", FLOATS, 1), S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_ANY);
    c = add_case("adam_update", "lr=0.01;clip_gradient=1", FLOATS, 1);
    in(in(in(in(c, S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_POS);
    c = add_case("adam_update", "lr=0.01;t=3", FLOATS, 1);
    in(in(in(in(c, S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_POS);
    /* take's indices are integers, so its cases run in the integer dtypes (data too) */
    in(in(add_case("take", "", INDEX_DTYPES, 1), S(2, 5, 3), F_ANY), S(2, 2, 4), F_INT + 5);
    in(in(add_case("take", "mode=wrap", INDEX_DTYPES, 0), S(1, 6), F_ANY), S(1, 9), F_INDEX);
    in(in(add_case("take", "mode=clip", INDEX_DTYPES, 1), S(3, 4, 2, 3), F_ANY), S(1, 7), F_INDEX);
    in(in(in(add_case("_backward_take", "", INDEX_DTYPES, 1), S(3, 2, 4, 3), F_ANY), S(2, 5, 3), F_ANY), S(2, 2, 4), F_INT + 5);
    in(in(in(add_case("_backward_take", "mode=wrap", INDEX_DTYPES, 0), S(1, 9), F_ANY), S(1, 6), F_ANY), S(1, 9), F_INDEX);
    in(in(add_case("accuracy", "", INTS_TOO | INDEX_DTYPES, 0), S(1, 40), F_INT + 3), S(2, 8, 5), F_INT + 3);
    nn_cases();
}

/* ---- depeng_nn.h's operators ------------------------------------------------------
   Convolution, Deconvolution and Pooling on random geometry (seeded, the
   same every run): 1-D and 2-D, strides, pads, dilation, groups, bias or
   not, each CPU implementation (algo), deconvolution's adj, the pooling
   types and conventions, global pooling; forward and gradient. The other
   layers, tensor operators, losses and updates on fixed cases covering
   their parameters (BatchNorm in training, inference and use_global_stats,
   fix_gamma, three axes; Dropout where it draws nothing: its draws are
   compared by test_emulated_dropout). */
static uint64_t g_geo_state = 0x5DEECE66Dull;
static int pick(int lo, int hi) {         /* lo..hi */
    g_geo_state ^= g_geo_state << 13; g_geo_state ^= g_geo_state >> 7; g_geo_state ^= g_geo_state << 17;
    return lo + (int)((g_geo_state >> 33) % (uint64_t)(hi - lo + 1));
}
/* "(a,)" or "(a,b)" */
static const char *tup(char *buf, int nd, int64_t a, int64_t b) {
    if (nd == 1) snprintf(buf, 32, "(%lld,)", (long long)b);
    else snprintf(buf, 32, "(%lld,%lld)", (long long)a, (long long)b);
    return buf;
}
static dp_shape nchw(int nd, int64_t n, int64_t c, int64_t h, int64_t w) { return nd == 2 ? SN(4, n, c, h, w) : S(3, n, c, w); }
static void conv_cases(void) {
    static const char *algos[3] = {"auto", "im2col", "direct"};
    op_case *c0;
    int i;
    for (i = 0; i < 40; i++) {
        int deconv = i >= 28, nd = pick(1, 2), g = pick(1, 2), ax;
        int64_t n = pick(1, 2), c = g * pick(1, 2), f = g * pick(1, 3), k[2], s[2], d[2], p[2], adj[2], sz[2], out[2];
        int bias = deconv ? pick(0, 1) : pick(0, 1), nargs = bias ? 3 : 2;
        char kb[32], sb[32], db[32], pb[32], ab[32];
        op_case *fc, *gc;
        for (ax = 0; ax < 2; ax++) {
            int active = nd == 2 || ax == 1;
            k[ax] = active ? pick(1, 3) : 1; s[ax] = active ? pick(1, 2) : 1; d[ax] = active ? pick(1, 2) : 1;
            p[ax] = active ? pick(0, 1) : 0; adj[ax] = 0;
            if (deconv) {
                sz[ax] = active ? pick(1, 4) : 1;
                if (active && (s[ax] > 1 || d[ax] > 1)) adj[ax] = pick(0, (s[ax] > d[ax] ? s[ax] : d[ax]) - 1);
                out[ax] = s[ax] * (sz[ax] - 1) + d[ax] * (k[ax] - 1) + 1 - 2 * p[ax] + adj[ax];
                if (out[ax] < 1) { p[ax] = 0; out[ax] = s[ax] * (sz[ax] - 1) + d[ax] * (k[ax] - 1) + 1 + adj[ax]; }
            } else {
                int64_t span = d[ax] * (k[ax] - 1) + 1, least = span - 2 * p[ax] > 1 ? span - 2 * p[ax] : 1;
                sz[ax] = active ? least + pick(0, 4) : 1;
                out[ax] = (sz[ax] + 2 * p[ax] - span) / s[ax] + 1;
            }
        }
        if (deconv) {
            fc = add_case_kw("Deconvolution", FLOATS, i % 3 == 0, "kernel=%s;stride=%s;dilate=%s;pad=%s;adj=%s;num_filter=%lld;num_group=%d;no_bias=%s;num_args=%d;algo=%s",
                             tup(kb, nd, k[0], k[1]), tup(sb, nd, s[0], s[1]), tup(db, nd, d[0], d[1]), tup(pb, nd, p[0], p[1]), tup(ab, nd, adj[0], adj[1]),
                             (long long)f, g, bias ? "false" : "true", nargs, algos[i % 3]);
            gc = add_case_kw("_backward_Deconvolution", FLOATS, i % 3 == 1, "%s", fc->kwstore);
            in(fc, nchw(nd, n, c, sz[0], sz[1]), F_ANY);
            in(gc, nchw(nd, n, f, out[0], out[1]), F_ANY);
            in(gc, nchw(nd, n, c, sz[0], sz[1]), F_ANY);
            in(fc, nd == 2 ? SN(4, c, f / g, k[0], k[1]) : S(3, c, f / g, k[1]), F_ANY);
            in(gc, nd == 2 ? SN(4, c, f / g, k[0], k[1]) : S(3, c, f / g, k[1]), F_ANY);
        } else {
            fc = add_case_kw("Convolution", FLOATS, i % 3 == 0, "kernel=%s;stride=%s;dilate=%s;pad=%s;num_filter=%lld;num_group=%d;no_bias=%s;num_args=%d;algo=%s",
                             tup(kb, nd, k[0], k[1]), tup(sb, nd, s[0], s[1]), tup(db, nd, d[0], d[1]), tup(pb, nd, p[0], p[1]), (long long)f, g,
                             bias ? "false" : "true", nargs, algos[i % 3]);
            gc = add_case_kw("_backward_Convolution", FLOATS, i % 3 == 1, "%s", fc->kwstore);
            in(fc, nchw(nd, n, c, sz[0], sz[1]), F_ANY);
            in(gc, nchw(nd, n, f, out[0], out[1]), F_ANY);
            in(gc, nchw(nd, n, c, sz[0], sz[1]), F_ANY);
            in(fc, nd == 2 ? SN(4, f, c / g, k[0], k[1]) : S(3, f, c / g, k[1]), F_ANY);
            in(gc, nd == 2 ? SN(4, f, c / g, k[0], k[1]) : S(3, f, c / g, k[1]), F_ANY);
        }
        if (bias) { in(fc, S(1, f), F_ANY); in(gc, S(1, f), F_ANY); }
        gc->nout = nargs;
    }
    /* pointwise (1x1, stride 1, no pad): the GEMM reads the input as its columns */
    c0 = add_case("Convolution", "kernel=(1,1);num_filter=4;num_group=2;no_bias=false;num_args=3;algo=im2col", FLOATS, 1);
    in(in(in(c0, SN(4, 2, 4, 3, 3), F_ANY), SN(4, 4, 2, 1, 1), F_ANY), S(1, 4), F_ANY);
    c0 = add_case("_backward_Convolution", "kernel=(1,1);num_filter=4;num_group=2;no_bias=false;num_args=3;algo=im2col", FLOATS, 1);
    in(in(in(in(c0, SN(4, 2, 4, 3, 3), F_ANY), SN(4, 2, 4, 3, 3), F_ANY), SN(4, 4, 2, 1, 1), F_ANY), S(1, 4), F_ANY)->nout = 3;
    in(in(add_case("Deconvolution", "kernel=(1,);num_filter=3;algo=im2col", FLOATS, 1), S(3, 2, 2, 5), F_ANY), S(3, 2, 3, 1), F_ANY);
    in(in(in(add_case("_backward_Deconvolution", "kernel=(1,);num_filter=3;algo=im2col", FLOATS, 1), S(3, 2, 3, 5), F_ANY), S(3, 2, 2, 5), F_ANY),
       S(3, 2, 3, 1), F_ANY)->nout = 2;
    /* Deconvolution's target_shape (pad and adj from it) */
    in(in(add_case("Deconvolution", "kernel=(3,3);stride=(2,2);target_shape=(8,7);num_filter=2", FLOATS, 0), SN(4, 1, 2, 4, 4), F_ANY), SN(4, 2, 2, 3, 3), F_ANY);
    in(in(in(add_case("_backward_Deconvolution", "kernel=(3,3);stride=(2,2);target_shape=(8,7);num_filter=2", FLOATS, 0), SN(4, 1, 2, 8, 7), F_ANY),
          SN(4, 1, 2, 4, 4), F_ANY), SN(4, 2, 2, 3, 3), F_ANY)->nout = 2;
}
static void pool_cases(void) {
    static const char *types[3] = {"max", "avg", "sum"};
    int i;
    for (i = 0; i < 30; i++) {
        int nd = pick(1, 2), type = i % 3, full = pick(0, 1), glob = i % 10 == 9, incl = pick(0, 1), ax;
        int64_t n = pick(1, 2), c = pick(1, 3), k[2], s[2], p[2], sz[2], out[2];
        char kb[32], sb[32], pb[32];
        op_case *fc, *gc;
        for (ax = 0; ax < 2; ax++) {
            int active = nd == 2 || ax == 1;
            k[ax] = active ? pick(1, 3) : 1; s[ax] = active ? pick(1, 3) : 1; p[ax] = active ? pick(0, (int)k[ax] - 1) : 0;
            if (p[ax] > 1) p[ax] = 1;
            sz[ax] = active ? (k[ax] - 2 * p[ax] > 1 ? k[ax] - 2 * p[ax] : 1) + pick(0, 4) : 1;
            {
                int64_t room = sz[ax] + 2 * p[ax] - k[ax];
                out[ax] = glob ? 1 : 1 + (full ? (room + s[ax] - 1) / s[ax] : room / s[ax]);
            }
        }
        fc = add_case_kw("Pooling", FLOATS, i % 4 == 0, "kernel=%s;stride=%s;pad=%s;pool_type=%s;pooling_convention=%s;global_pool=%s;count_include_pad=%s",
                         tup(kb, nd, k[0], k[1]), tup(sb, nd, s[0], s[1]), tup(pb, nd, p[0], p[1]), types[type], full ? "full" : "valid",
                         glob ? "true" : "false", incl ? "true" : "false");
        gc = add_case_kw("_backward_Pooling", FLOATS, i % 4 == 1, "%s", fc->kwstore);
        in(fc, nchw(nd, n, c, sz[0], sz[1]), i % 2 ? F_TIES : F_ANY);
        in(gc, nchw(nd, n, c, out[0], out[1]), F_ANY);
        in(gc, nchw(nd, n, c, sz[0], sz[1]), i % 2 ? F_TIES : F_ANY);
    }
}
static void nn_cases(void) {
    static const char *acts[5] = {"relu", "sigmoid", "tanh", "softrelu", "softsign"};
    static const char *leaky[4] = {"act_type=leaky;slope=0.3", "act_type=elu;slope=0.7", "act_type=selu", "act_type=gelu"};
    static const char *bn_kw[] = {
        "is_train=true;fix_gamma=false", "is_train=true", "is_train=false;fix_gamma=false", "is_train=true;use_global_stats=true;fix_gamma=false",
        "is_train=true;fix_gamma=false;axis=-1;momentum=0.8;eps=0.01", "is_train=true;fix_gamma=false;axis=0",
    };
    static const char *regs[3] = {"LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"};
    char name[64];
    op_case *c;
    int i;
    size_t j;
    conv_cases();
    pool_cases();
    for (i = 0; i < 5; i++) {
        c = add_case_kw("Activation", FLOATS, i == 1, "act_type=%s", acts[i]);
        in(c, S(3, 2, 3, 4), F_ANY);
        c = add_case_kw("_backward_Activation", FLOATS, i == 2, "act_type=%s", acts[i]);
        in(in(in(c, S(3, 2, 3, 4), F_ANY), S(3, 2, 3, 4), F_ANY), S(3, 2, 3, 4), F_POS);
    }
    for (i = 0; i < 4; i++) {
        in(add_case("LeakyReLU", leaky[i], FLOATS, i == 0), S(2, 3, 7), F_ANY);
        in(in(add_case("_backward_LeakyReLU", leaky[i], FLOATS, i == 1), S(2, 3, 7), F_ANY), S(2, 3, 7), F_ANY)->nout = 1;
    }
    in(in(add_case("LeakyReLU", "act_type=prelu;num_args=2", FLOATS, 1), SN(4, 2, 3, 2, 2), F_ANY), S(1, 3), F_ANY);
    in(in(add_case("LeakyReLU", "act_type=prelu;num_args=2", FLOATS, 0), S(2, 4, 5), F_ANY), S(1, 1), F_ANY);
    in(in(in(add_case("_backward_LeakyReLU", "act_type=prelu;num_args=2", FLOATS, 1), SN(4, 2, 3, 2, 2), F_ANY), SN(4, 2, 3, 2, 2), F_ANY), S(1, 3), F_ANY)->nout = 2;
    in(in(in(add_case("_backward_LeakyReLU", "act_type=prelu;num_args=2", FLOATS, 0), S(2, 4, 5), F_ANY), S(2, 4, 5), F_ANY), S(1, 1), F_ANY)->nout = 2;
    in(add_case("Flatten", "", INTS_TOO, 1), SN(4, 2, 3, 2, 2), F_ANY);
    in(in(add_case("_backward_Flatten", "", FLOATS, 1), S(2, 2, 12), F_ANY), SN(4, 2, 3, 2, 2), F_ANY);
    for (j = 0; j < sizeof bn_kw / sizeof bn_kw[0]; j++) {
        dp_shape x = j == 4 ? S(3, 3, 2, 5) : j == 5 ? S(2, 4, 6) : SN(4, 3, 4, 2, 3);
        int64_t ch = j == 4 ? 5 : 4;
        c = add_case("BatchNorm", bn_kw[j], FLOATS, j == 0);
        in(in(in(in(in(c, x, F_ANY), S(1, ch), F_ANY), S(1, ch), F_ANY), S(1, ch), F_ANY), S(1, ch), F_POS);
        c = add_case("_backward_BatchNorm", bn_kw[j], FLOATS, j == 1);
        in(in(in(in(in(in(c, x, F_ANY), x, F_ANY), S(1, ch), F_ANY), S(1, ch), F_ANY), S(1, ch), F_ANY), S(1, ch), F_POS);
    }
    c = add_case("BatchNorm", "is_train=true", FLOATS, 0);                             /* channels long enough for a team of threads */
    in(in(in(in(in(c, SN(4, 64, 4, 3, 3), F_ANY), S(1, 4), F_ANY), S(1, 4), F_ANY), S(1, 4), F_ANY), S(1, 4), F_POS);
    c = add_case("_backward_BatchNorm", "is_train=true;fix_gamma=false", FLOATS, 0);
    in(in(in(in(in(in(c, SN(4, 64, 4, 3, 3), F_ANY), SN(4, 64, 4, 3, 3), F_ANY), S(1, 4), F_ANY), S(1, 4), F_ANY), S(1, 4), F_ANY), S(1, 4), F_POS);
    in(add_case("Dropout", "p=0.5", FLOATS, 1), S(2, 4, 6), F_ANY);                      /* inference: the identity, a mask of ones */
    in(add_case("Dropout", "p=0;is_train=true", FLOATS, 0), S(2, 4, 6), F_ANY);
    in(in(in(in(add_case("_backward_Dropout", "p=0.5", FLOATS, 1), S(2, 4, 6), F_ANY), S(2, 4, 6), F_ANY), S(2, 4, 6), F_ANY), S(2, 4, 6), F_TIES);
    in(add_case("BlockGrad", "", INTS_TOO, 1), S(2, 3, 4), F_ANY);
    in(in(add_case("_backward_BlockGrad", "", FLOATS, 1), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    in(add_case("MakeLoss", "", FLOATS, 1), S(2, 3, 4), F_ANY);
    in(in(add_case("_backward_MakeLoss", "grad_scale=2", FLOATS, 1), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    in(in(add_case("_backward_MakeLoss", "normalization=batch", FLOATS, 0), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    in(in(add_case("_backward_MakeLoss", "normalization=valid;valid_thresh=0.25;grad_scale=3", FLOATS, 1), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    for (i = 0; i < 3; i++) {
        in(in(add_case(regs[i], "", FLOATS, i == 0), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
        snprintf(name, sizeof name, "_backward_%s", regs[i]);
        in(in(in(add_case(name, "grad_scale=1.5", FLOATS, i == 1), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY), S(1, 12), F_TIES);
    }
    in(in(add_case("Embedding", "input_dim=5;output_dim=3", 1u << DP_FLOAT32, 1), S(2, 2, 4), F_INT + 5), S(2, 5, 3), F_ANY);
    in(in(add_case("Embedding", "input_dim=5;output_dim=3;dtype=float64", 1u << DP_FLOAT64, 0), S(1, 7), F_INT + 5), S(2, 5, 3), F_ANY);
    in(in(in(add_case("_backward_Embedding", "input_dim=5;output_dim=3", 1u << DP_FLOAT32, 1), S(3, 2, 4, 3), F_ANY), S(2, 2, 4), F_INT + 5),
       S(2, 5, 3), F_ANY);
    in(in(in(add_case("_backward_Embedding", "input_dim=5;output_dim=3;dtype=float64", 1u << DP_FLOAT64, 0), S(2, 7, 3), F_ANY), S(1, 7), F_INT + 5),
       S(2, 5, 3), F_ANY);
    in(add_case("expand_dims", "axis=1", INTS_TOO, 1), S(2, 3, 4), F_ANY);
    in(add_case("expand_dims", "axis=-1", FLOATS, 0), S(2, 3, 4), F_ANY);
    in(in(add_case("_backward_expand_dims", "axis=1", FLOATS, 1), S(3, 3, 1, 4), F_ANY), S(2, 3, 4), F_ANY);
    {
        static const char *sl[3] = {"axis=1;begin=1;end=(3,)", "axis=-1;begin=-3", "axis=0;begin=0;end=(1,)"};
        for (i = 0; i < 3; i++) {
            in(add_case("slice_axis", sl[i], INTS_TOO, i == 0), S(3, 2, 4, 5), F_ANY);
            dp_shape og = i == 0 ? S(3, 2, 2, 5) : i == 1 ? S(3, 2, 4, 3) : S(3, 1, 4, 5);
            in(in(add_case("_backward_slice_axis", sl[i], FLOATS, i == 1), og, F_ANY), S(3, 2, 4, 5), F_ANY);
        }
    }
    in(add_case("broadcast_to", "shape=(0,4,0)", INTS_TOO, 1), S(3, 2, 1, 3), F_ANY);
    in(add_case("broadcast_to", "shape=(3,4,5)", FLOATS, 0), S(3, 1, 4, 1), F_ANY);
    in(in(add_case("_backward_broadcast_to", "shape=(0,4,0)", FLOATS, 1), S(3, 2, 4, 3), F_ANY), S(3, 2, 1, 3), F_ANY);
    in(in(add_case("_backward_broadcast_to", "shape=(3,4,5)", FLOATS, 0), S(3, 3, 4, 5), F_ANY), S(3, 1, 4, 1), F_ANY);
    in(in(in(add_case("where", "", INTS_TOO, 1), S(2, 3, 4), F_INT + 2), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    in(in(in(add_case("where", "", FLOATS, 0), S(1, 3), F_INT + 2), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    in(in(in(in(add_case("_backward_where", "", FLOATS, 1), S(2, 3, 4), F_ANY), S(2, 3, 4), F_INT + 2), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    in(in(in(in(add_case("_backward_where", "", FLOATS, 0), S(2, 3, 4), F_ANY), S(1, 3), F_INT + 2), S(2, 3, 4), F_ANY), S(2, 3, 4), F_ANY);
    {
        static const char *bd[4] = {"", "transpose_a=true", "transpose_b=true", "transpose_a=true;transpose_b=true"};
        for (i = 0; i < 4; i++) {
            int ta = i & 1, tb = i >> 1;
            dp_shape a = ta ? S(3, 2, 4, 3) : S(3, 2, 3, 4), b = tb ? S(3, 2, 5, 4) : S(3, 2, 4, 5);
            dp_shape a2 = ta ? S(3, 3, 20, 17) : S(3, 3, 17, 20), b2 = tb ? S(3, 3, 18, 20) : S(3, 3, 20, 18);   /* partial tiles */
            in(in(add_case("batch_dot", bd[i], FLOATS, i == 0), a, F_ANY), b, F_ANY);
            in(in(add_case("batch_dot", bd[i], FLOATS, 0), a2, F_ANY), b2, F_ANY);
            in(in(in(add_case("_backward_batch_dot", bd[i], FLOATS, i == 1), S(3, 2, 3, 5), F_ANY), a, F_ANY), b, F_ANY);
            in(in(in(add_case("_backward_batch_dot", bd[i], FLOATS, 0), S(3, 3, 17, 18), F_ANY), a2, F_ANY), b2, F_ANY);
        }
    }
    {
        static const char *st[3] = {"num_args=3;axis=0", "num_args=3;axis=1", "num_args=3;axis=-1"};
        static const dp_shape og[3] = {{3, {3, 2, 4}}, {3, {2, 3, 4}}, {3, {2, 4, 3}}};
        for (i = 0; i < 3; i++) {
            in(in(in(add_case("stack", st[i], INTS_TOO, i == 0), S(2, 2, 4), F_ANY), S(2, 2, 4), F_ANY), S(2, 2, 4), F_ANY);
            c = add_case("_backward_stack", st[i], FLOATS, i == 1);
            in(in(in(in(c, og[i], F_ANY), S(2, 2, 4), F_ANY), S(2, 2, 4), F_ANY), S(2, 2, 4), F_ANY)->nout = 3;
        }
    }
    in(add_case("SliceChannel", "num_args=3;axis=1", INTS_TOO, 1), S(3, 2, 6, 2), F_ANY)->nout = 3;
    in(add_case("SliceChannel", "num_args=3;axis=-1;squeeze_axis=true", FLOATS, 0), S(2, 4, 3), F_ANY)->nout = 3;
    c = add_case("_backward_SliceChannel", "num_args=3;axis=1", FLOATS, 1);
    in(in(in(in(c, S(3, 2, 2, 2), F_ANY), S(3, 2, 2, 2), F_ANY), S(3, 2, 2, 2), F_ANY), S(3, 2, 6, 2), F_ANY);
    c = add_case("_backward_SliceChannel", "num_args=3;axis=-1;squeeze_axis=true", FLOATS, 0);
    in(in(in(in(c, S(1, 4), F_ANY), S(1, 4), F_ANY), S(1, 4), F_ANY), S(2, 4, 3), F_ANY);
    in(in(in(add_case("rmsprop_update", "lr=0.1;wd=0.01;clip_gradient=1.5", FLOATS, 1), S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_POS);
    c = add_case("rmspropalex_update", "lr=0.1;rescale_grad=0.5;gamma1=0.9;gamma2=0.8", FLOATS, 0);
    in(in(in(in(in(c, S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_POS), S(1, 10), F_TIES), S(1, 10), F_ANY);
    in(in(in(add_case("adagrad_update", "lr=0.1;wd=0.01", FLOATS, 1), S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_POS);
    in(in(in(add_case("nag_mom_update", "lr=0.1;momentum=0.9;wd=0.01;clip_gradient=1", FLOATS, 1), S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_ANY);
    c = add_case("adamw_update", "lr=0.01;wd=0.1;eta=0.5;t=3", FLOATS, 1);
    in(in(in(in(c, S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_POS);
    c = add_case("adamw_update", "lr=0.01;clip_gradient=1", FLOATS, 0);
    in(in(in(in(c, S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_ANY), S(1, 10), F_POS);
}

/* ---- running a case ---------------------------------------------------------------- */
static uint64_t g_rng_state;
static double rnd01(void) {
    g_rng_state ^= g_rng_state << 13; g_rng_state ^= g_rng_state >> 7; g_rng_state ^= g_rng_state << 17;
    return (double)(g_rng_state >> 11) * (1.0 / 9007199254740992.0);
}
/* Host inputs of case number ci, the same on every run. Values are
   multiples of 1/16 (exact in every float dtype), so ties are possible. */
static void make_inputs(int ci, const op_case *c, double **host) {
    int i;
    for (i = 0; i < c->nin; i++) {
        int64_t n = dp_shape_size(&c->in[i]), e;
        host[i] = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
        g_rng_state = 0x9E3779B97F4A7C15ull * (uint64_t)(ci * 8 + i + 1);
        for (e = 0; e < n; e++) {
            double u = rnd01(), v;
            switch (c->fill[i]) {
            case F_POS: v = 0.5 + floor(u * 32) / 16; break;
            case F_TIES: v = floor(u * 4) / 2 - 0.5; break;
            case F_NAN: v = e % 7 == 0 || (e % 5 == 3 && u < 0.5) ? NAN : floor(u * 64) / 16 - 2; break;
            case F_INDEX: v = floor(u * 8) - 1; break;
            case F_BIG: v = floor(u * 8) * 536870912.0 - 2147483648.0; break;   /* int32's range: sums and products wrap */
            case F_ANY: v = floor(u * 64) / 16 - 2; break;
            default: v = floor(u * (c->fill[i] - F_INT)); break;
            }
            host[i][e] = v;
        }
    }
}
typedef struct run_result {
    dp_result status;
    dp_failure failure;
    int count;                     /* outputs, then mutated inputs */
    int64_t n[MAX_OUT];
    dp_dtype dt[MAX_OUT];
    double *v[MAX_OUT];
} run_result;
static void free_result(run_result *r) { int i; for (i = 0; i < r->count; i++) free(r->v[i]); memset(r, 0, sizeof *r); }
/* An array's elements as doubles; status of the read (a failure too). */
static dp_result read_all(dp_ndarray *a, run_result *r, dp_failure *failure) {
    size_t bytes = dp_nd_bytes(a);
    int64_t n = dp__cu_count_of(a), i;
    unsigned char *raw = (unsigned char *)malloc(bytes ? bytes : 1);
    dp_result st = dp_nd_read(a, raw, bytes, failure);
    r->n[r->count] = n; r->dt[r->count] = dp_nd_dtype(a);
    r->v[r->count] = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (i = 0; st == DP_OK && i < n; i++) r->v[r->count][i] = dp__load_elem(raw, dp_nd_dtype(a), i);
    r->count++;
    free(raw);
    return st;
}
/* Runs c on ctx (inputs from host, in dtype dt): outputs and mutated inputs
   read back into r. */
static void run_case(dp_engine *eng, dp_ctx ctx, const op_case *c, double *const *host, dp_dtype dt, run_result *r) {
    const dp_operator *op = dp_operator_find(c->op);
    dp_ndarray *inputs[MAX_IN] = {0}, *outputs[MAX_OUT] = {0};
    dp_req req[MAX_OUT] = {DP_REQ_ADD};
    char kw[512], *keys[16], *vals[16], *p;
    int nkw = 0, nout, i;
    memset(r, 0, sizeof *r);
    if (!op) { r->status = DP_ERROR_INVALID_ARGS; snprintf(r->failure.message, sizeof r->failure.message, "no operator %s", c->op); return; }
    nout = c->nout ? c->nout : op->num_outputs;
    snprintf(kw, sizeof kw, "%s", c->kwargs);
    for (p = strtok(kw, ";"); p && nkw < 16; p = strtok(NULL, ";")) {
        char *eq = strchr(p, '=');
        if (!eq) continue;
        *eq = 0; keys[nkw] = p; vals[nkw] = eq + 1; nkw++;
    }
    for (i = 0; i < c->nin; i++) {
        int64_t n = dp_shape_size(&c->in[i]), e;
        unsigned char *buf = (unsigned char *)malloc(dp_dtype_size(dt) * (size_t)(n ? n : 1));
        for (e = 0; e < n; e++) dp__store_elem(buf, dt, e, host[i][e], DP_REQ_WRITE);
        r->status = dp_nd_from_host(eng, &c->in[i], dt, ctx, buf, &inputs[i]);
        free(buf);
        if (r->status != DP_OK) goto done;
    }
    r->status = invoke_str(eng, c->op, c->nin, inputs, nkw, (const char *const *)keys, (const char *const *)vals, c->scalar, nout, outputs, NULL);
    if (r->status == DP_OK && c->add) {
        for (i = 0; i < nout; i++) req[i] = DP_REQ_ADD;
        r->status = invoke_str(eng, c->op, c->nin, inputs, nkw, (const char *const *)keys, (const char *const *)vals, c->scalar, nout, outputs, req);
    }
    if (r->status != DP_OK) goto done;
    for (i = 0; i < nout && r->status == DP_OK; i++) r->status = read_all(outputs[i], r, &r->failure);
    for (i = 0; i < c->nin && r->status == DP_OK; i++)
        if (op->mutate_inputs & (1u << i)) r->status = read_all(inputs[i], r, &r->failure);
done:
    for (i = 0; i < c->nin; i++) dp_nd_release(inputs[i]);
    for (i = 0; i < nout; i++) dp_nd_release(outputs[i]);
    dp_wait_all(eng, NULL);
}
/* The same case with op's GPU kernel run on the host (chapter 5 of
   depeng_cuda.h): it stands in for the CPU kernel for one run. */
static void run_case_emulated(dp_engine *eng, const op_case *c, double *const *host, dp_dtype dt, run_result *r) {
    const dp_operator *op = dp_operator_find(c->op);
    dp_kernel_fn cpu_kernel = op ? op->forward_cpu : NULL;
    if (!op || !op->forward_gpu) { memset(r, 0, sizeof *r); r->status = DP_ERROR_BAD_CONTEXT; return; }
    dp_operator_set_kernel(c->op, DP_DEV_CPU, op->forward_gpu);
    run_case(eng, CPU0, c, host, dt, r);
    dp_operator_set_kernel(c->op, DP_DEV_CPU, cpu_kernel);
}
/* Equal up to the order of floating-point sums (and the device's libm). */
static int close_enough(double want, double got, dp_dtype dt) {
    double tol;
    if (want != want || got != got) return want != want && got != got;
    if (want == got) return 1;
    tol = dt == DP_FLOAT32 ? 3e-5 : dt == DP_FLOAT64 ? 1e-11 : 0.5;
    return fabs(want - got) <= tol * (fabs(want) > 1 ? fabs(want) : 1);
}
static int same_results(const op_case *c, dp_dtype dt, const run_result *want, const run_result *got, const char *who) {
    int i;
    int64_t e;
    if (want->status != got->status || want->count != got->count) {
        fprintf(stderr, "  %s %s (%s %s): status %d / %d, %d / %d outputs (%s / %s)\n", c->op, c->kwargs, dp_dtype_name(dt), who,
                (int)want->status, (int)got->status, want->count, got->count, want->failure.message, got->failure.message);
        return 0;
    }
    if (want->status != DP_OK) return strcmp(want->failure.message, got->failure.message) == 0;
    for (i = 0; i < want->count; i++) {
        if (want->n[i] != got->n[i] || want->dt[i] != got->dt[i]) {
            fprintf(stderr, "  %s %s (%s %s): output %d has %lld %s elements, not %lld %s\n", c->op, c->kwargs, dp_dtype_name(dt), who, i,
                    (long long)got->n[i], dp_dtype_name(got->dt[i]), (long long)want->n[i], dp_dtype_name(want->dt[i]));
            return 0;
        }
        for (e = 0; e < want->n[i]; e++)
            if (!close_enough(want->v[i][e], got->v[i][e], want->dt[i])) {
                fprintf(stderr, "  %s %s (%s %s): output %d element %lld: CPU %.17g, GPU kernel %.17g\n", c->op, c->kwargs, dp_dtype_name(dt), who, i,
                        (long long)e, want->v[i][e], got->v[i][e]);
                return 0;
            }
    }
    return 1;
}
/* Every case in every dtype: the CPU kernel on cpu, against the GPU
   kernel on gpu (a GPU engine) or, with gpu NULL, run on the host. */
static void compare_all_cases(dp_engine *cpu, dp_engine *gpu) {
    int ci, failures = 0, runs = 0;
    for (ci = 0; ci < g_ncases; ci++) {
        const op_case *c = &g_cases[ci];
        double *host[MAX_IN] = {0};
        int dt, i;
        make_inputs(ci, c, host);
        for (dt = 0; dt < DP_DTYPE_COUNT; dt++) {
            run_result want, got;
            if (!(c->dtypes & (1u << dt))) continue;
            run_case(cpu, CPU0, c, host, (dp_dtype)dt, &want);
            if (gpu) run_case(gpu, GPU0, c, host, (dp_dtype)dt, &got);
            else run_case_emulated(cpu, c, host, (dp_dtype)dt, &got);
            CHECK(want.status == DP_OK);
            if (want.status != DP_OK) fprintf(stderr, "  %s %s on the CPU: %s\n", c->op, c->kwargs, want.failure.message);
            if (!same_results(c, (dp_dtype)dt, &want, &got, gpu ? "on the GPU" : "on the host") && ++failures <= 20) CHECK(0);
            runs++;
            free_result(&want); free_result(&got);
        }
        for (i = 0; i < c->nin; i++) free(host[i]);
    }
    CHECK(failures == 0);
    CHECK(runs > 300);
}

/* ---- tests that need no GPU ----------------------------------------------------------- */
static int do_nothing(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; return 0; }
static void test_no_gpu_reported_cleanly(void) {
    const dp_device_backend *be = dp_cuda_backend();
    const dp_memory_backend *mb = dp_cuda_memory();
    char why[256];
    int n = dp_cuda_device_count(why, sizeof why);
    dp_ctx bad = {DP_DEV_GPU, n};
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 1);
    dp_shape s = S(1, 4);
    dp_ndarray *a = NULL;
    dp_var v = dp_var_create(e);
    dp_push_desc d;
    void *p = (void *)&p;
    CHECK(n == g_gpus && be && strcmp(be->name, "cuda") == 0 && be->device_count(be->user) == n);
    CHECK(be->set_device && be->stream_create && be->stream_destroy && be->stream_synchronize && be->error_string);
    CHECK(mb && mb->host_alloc && mb->host_free);              /* the pinned context */
    CHECK(mb->mem_alloc && mb->mem_free && mb->mem_copy && be->event_create && be->event_destroy && be->event_record && be->event_query);
    CHECK(strcmp(be->error_string((int)cudaErrorInsufficientDriver, be->user), cudaGetErrorString(cudaErrorInsufficientDriver)) == 0);
    /* a GPU that is not there: refused, with the reason */
    CHECK(dp_cuda_check_ctx(bad, why, sizeof why) == DP_ERROR_BAD_CONTEXT && why[0]);
    CHECK(dp_cuda_check_ctx(CPU0, why, sizeof why) == DP_ERROR_BAD_CONTEXT && strstr(why, "not DP_DEV_GPU"));
    g_last_item = 0;
    CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, bad, &a) == DP_ERROR_BAD_CONTEXT && a == NULL && g_last_item == DP_LOGITEM_BAD_CONTEXT);
    memset(&d, 0, sizeof d);
    d.fn = do_nothing;
    d.writes = &v; d.num_writes = 1; d.ctx = bad; d.name = "on a missing GPU";
    CHECK(dp_push(e, &d) == DP_ERROR_BAD_CONTEXT);
    if (n == 0) {
        CHECK(strncmp(g_no_gpu_why, "no CUDA device", 14) == 0);
        CHECK(dp_cuda_check_ctx(GPU0, why, sizeof why) == DP_ERROR_BAD_CONTEXT && strncmp(why, "no CUDA device", 14) == 0);
        CHECK(be->set_device(0, be->user) != 0 && be->error_string(be->set_device(0, be->user), be->user)[0]);
        CHECK(mb->mem_alloc(0, 64, &p, mb->user) != 0);
        CHECK(be->stream_create(0, 0, &p, be->user) != 0);
        CHECK(be->event_create(0, &p, be->user) != 0);
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, GPU0, &a) == DP_ERROR_BAD_CONTEXT && a == NULL);
        CHECK(dp_cuda_pinned_alloc(64, &p) == DP_ERROR_BACKEND && p == NULL);
    } else {
        CHECK(dp_cuda_check_ctx(GPU0, why, sizeof why) == DP_OK && strncmp(why, "GPU 0: ", 7) == 0);
        CHECK(strstr(why, "requested") == NULL);
        CHECK(dp_cuda_check_ctx(bad, why, sizeof why) == DP_ERROR_BAD_CONTEXT && strstr(why, "requested"));
    }
    CHECK(dp_cuda_pinned_alloc(16, NULL) == DP_ERROR_INVALID_ARGS && dp_cuda_pinned_free(NULL) == DP_OK);
    CHECK(dp_var_delete(e, v) == DP_OK);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
static int cpu_only_kernel(const dp_kernel_ctx *k) { (void)k; return 0; }
static void test_every_builtin_op_has_gpu_kernel(void) {
    const dp_operator *ops[256];
    const char *names[8];
    dp_operator custom;
    int n = dp_operator_list(ops, 256), i, missing;
    CHECK(dp_cuda_register_kernels() == DP_OK);          /* again: main registered them */
    missing = dp_cuda_missing_kernels(names, 8);
    for (i = 0; i < missing && i < 8; i++) fprintf(stderr, "  no GPU kernel: %s\n", names[i]);
    CHECK(missing == 0);
    for (i = 0; i < n && i < 256; i++) CHECK(ops[i]->forward_gpu != NULL);
    CHECK(n > 90);
    /* an operator registered with a CPU kernel only is reported */
    memset(&custom, 0, sizeof custom);
    custom.name = "test_cuda_cpu_only"; custom.num_inputs = 1; custom.num_outputs = 1; custom.forward_cpu = cpu_only_kernel;
    CHECK(dp_operator_register(&custom) == DP_OK);
    missing = dp_cuda_missing_kernels(names, 8);
    CHECK(missing == 1 && strcmp(names[0], "test_cuda_cpu_only") == 0);
    CHECK(dp_cuda_missing_kernels(NULL, 0) == 1);
}
/* The reductions combine partial results in whatever order the warp
   shuffles and slices give; every order must give the CPU scan's answer
   (max and min: the first NaN; argmax: the first NaN, else the first of ties). */
static void test_reduction_combine_any_order(void) {
    static const double pool[6] = {NAN, -HUGE_VAL, -1, 0, 1, 2};
    int trial, kind, wrong = 0;
    g_rng_state = 12345;
    for (trial = 0; trial < 3000; trial++) {
        double v[24];
        int n = 1 + (int)(rnd01() * 24), i;
        for (i = 0; i < n; i++) v[i] = pool[(int)(rnd01() * 6)];
        for (kind = DP__CU_MAX; kind <= DP__CU_ARGMAX; kind++) {
            dp__cu_acc cand[24];
            double best = kind == DP__CU_MIN ? HUGE_VAL : -HUGE_VAL;
            long long idx = -1;
            int left = n;
            for (i = 0; i < n; i++) {                          /* the CPU's scans */
                if (kind == DP__CU_MAX && (v[i] > best || v[i] != v[i])) best = v[i];
                if (kind == DP__CU_MIN && (v[i] < best || v[i] != v[i])) best = v[i];
                if (kind == DP__CU_ARGMAX && (idx < 0 || (best == best && (v[i] > best || v[i] != v[i])))) { best = v[i]; idx = i; }
                cand[i] = dp__cu_candidate(kind, v[i], i);
            }
            while (left > 1) {                                 /* merge two random ones, in random order */
                int a = (int)(rnd01() * left), b = (int)(rnd01() * (left - 1)), lo, hi;
                dp__cu_acc merged;
                if (b >= a) b++;
                merged = rnd01() < 0.5 ? dp__cu_combine(kind, cand[a], cand[b]) : dp__cu_combine(kind, cand[b], cand[a]);
                lo = a < b ? a : b; hi = a < b ? b : a;
                cand[hi] = cand[--left];                       /* drop both, keep the merged one */
                cand[lo] = merged;
            }
            if (kind == DP__CU_ARGMAX ? cand[0].i != idx : !(cand[0].v == best || (cand[0].v != cand[0].v && best != best))) wrong++;
        }
    }
    CHECK(wrong == 0);
}
static void test_emulated_kernels_match_cpu(void) {
    dp_engine *cpu = make_engine(DP_ENGINE_PERDEVICE, 0);
    const dp_operator *ops[256];
    int n = dp_operator_list(ops, 256), i, ci;
    compare_all_cases(cpu, NULL);
    for (i = 0; i < n && i < 256; i++) {                   /* every GPU kernel has a case */
        int found = !ops[i]->forward_gpu || strncmp(ops[i]->name, "random_", 7) == 0;   /* random: its own test */
        for (ci = 0; ci < g_ncases && !found; ci++) found = strcmp(g_cases[ci].op, ops[i]->name) == 0;
        if (!found) { fprintf(stderr, "  no test case for %s\n", ops[i]->name); CHECK(0); }
    }
    CHECK(dp_engine_destroy(cpu, NULL) == DP_OK);
}

/* Runs a kernel directly on an operation of ctx that also writes the
   device's random generator: how a random operator's GPU kernel runs (an
   invocation without inputs always runs on the CPU). */
typedef struct direct_arg { dp_kernel_fn kernel; dp_params params; dp_ndarray *out; } direct_arg;
static int run_direct(dp_run_ctx *rc, void *p) {
    direct_arg *a = (direct_arg *)p;
    dp_kernel_ctx k;
    dp_req req = DP_REQ_WRITE;
    memset(&k, 0, sizeof k);
    k.rc = rc; k.params = &a->params; k.num_outputs = 1; k.outputs = &a->out; k.req = &req;
    return a->kernel(&k);
}
static dp_result draw(dp_engine *eng, dp_ctx ctx, const char *op_name, int nkw, const char *const *keys, const char *const *vals,
                      dp_ndarray *out, dp_failure *failure) {
    const dp_operator *op = dp_operator_find(op_name);
    direct_arg a;
    dp_var writes[2];
    dp_push_desc d;
    dp_result r;
    a.kernel = op->forward_gpu; a.out = out;
    if ((r = parse_params_str(eng, op, nkw, keys, vals, &a.params)) != DP_OK) return r;
    writes[0] = dp_nd_var(out); writes[1] = dp_random_var(eng, ctx);
    memset(&d, 0, sizeof d);
    d.fn = run_direct; d.arg = &a; d.writes = writes; d.num_writes = 2; d.ctx = ctx; d.name = op_name;
    if ((r = dp_push(eng, &d)) != DP_OK) return r;
    return dp_nd_wait_to_read(out, failure);
}
/* n draws of op (uniform low 2 high 5, or normal loc 1 scale 2) after
   seeding ctx's generator, as doubles. */
static double *draws(dp_engine *eng, dp_ctx ctx, const char *op, int64_t n, uint64_t seed, dp_dtype dt) {
    static const char *ukeys[3] = {"low", "high", "shape"}, *nkeys[3] = {"loc", "scale", "shape"};
    const char *uvals[3] = {"2", "5", NULL}, *nvals[3] = {"1", "2", NULL};
    char shape[32];
    dp_shape s = S(1, n);
    dp_ndarray *a = NULL;
    run_result r;
    double *v;
    memset(&r, 0, sizeof r);
    dp_failure f;
    memset(&f, 0, sizeof f);
    snprintf(shape, sizeof shape, "(%lld,)", (long long)n);
    uvals[2] = nvals[2] = shape;
    if (dp_random_seed(eng, ctx, seed) != DP_OK || dp_nd_empty(eng, &s, dt, ctx, &a) != DP_OK) return NULL;
    if (draw(eng, ctx, op, 3, op[7] == 'u' ? ukeys : nkeys, op[7] == 'u' ? uvals : nvals, a, &f) != DP_OK
        || read_all(a, &r, NULL) != DP_OK) { fprintf(stderr, "  %s: failed %s\n", op, f.message); dp_nd_release(a); free_result(&r); return NULL; }
    dp_nd_release(a);
    v = r.v[0];
    return v;
}
static void test_emulated_random_is_counter_based(void) {
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 0);
    double *a = draws(e, CPU0, "random_uniform", 1000, 42, DP_FLOAT64), *b = draws(e, CPU0, "random_uniform", 30000, 42, DP_FLOAT64);
    double *c = draws(e, CPU0, "random_uniform", 1000, 43, DP_FLOAT64), *nrm = draws(e, CPU0, "random_normal", 20000, 7, DP_FLOAT64);
    double *ints = draws(e, CPU0, "random_uniform", 1000, 1, DP_INT32), sum = 0, sq = 0;
    int i, prefix = 1, in_range = 1, differ = 0, whole = 1;
    CHECK(a && b && c && nrm && ints);
    if (a && b && c && nrm && ints) {
        for (i = 0; i < 1000; i++) { prefix &= a[i] == b[i]; differ += a[i] != c[i]; whole &= ints[i] == floor(ints[i]) && ints[i] >= 2 && ints[i] < 5; }
        for (i = 0; i < 30000; i++) { in_range &= b[i] >= 2 && b[i] < 5; sum += b[i]; }
        CHECK(prefix);                                  /* element i depends on the key and i only */
        CHECK(differ > 990 && in_range && whole);
        CHECK(fabs(sum / 30000 - 3.5) < 0.05);
        for (sum = 0, i = 0; i < 20000; i++) { sum += nrm[i]; sq += nrm[i] * nrm[i]; }
        sum /= 20000; sq = sqrt(sq / 20000 - sum * sum);
        CHECK(fabs(sum - 1) < 0.1 && fabs(sq - 2) < 0.1);
    }
    free(a); free(b); free(c); free(nrm); free(ints);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* A label that is not a class: the GPU kernel (run on the host) fails
   with the CPU kernel's status and message, forward and gradient. */
static void test_emulated_kernel_errors_match_cpu(void) {
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 0);
    op_case fwd, grad;
    double data[6] = {1, 2, 3, 4, 5, 6}, labels[2] = {0, 7}, og[1] = {1};
    double *host_f[2] = {data, labels}, *host_g[3] = {og, data, labels};
    run_result want, got;
    memset(&fwd, 0, sizeof fwd); memset(&grad, 0, sizeof grad);
    snprintf(fwd.op, sizeof fwd.op, "softmax_cross_entropy"); fwd.kwargs = "";
    fwd.nin = 2; fwd.in[0] = S(2, 2, 3); fwd.in[1] = S(1, 2);
    snprintf(grad.op, sizeof grad.op, "_backward_softmax_cross_entropy"); grad.kwargs = "";
    grad.nin = 3; grad.in[0] = S(1, 1); grad.in[1] = S(2, 2, 3); grad.in[2] = S(1, 2);
    run_case(e, CPU0, &fwd, host_f, DP_FLOAT32, &want);
    run_case_emulated(e, &fwd, host_f, DP_FLOAT32, &got);
    CHECK(want.status == DP_ERROR_OP_FAILED && strcmp(want.failure.message, "label 7 of row 1 is not a class in 0..2") == 0);
    CHECK(same_results(&fwd, DP_FLOAT32, &want, &got, "on the host") && strcmp(got.failure.op_name, "softmax_cross_entropy") == 0);
    free_result(&want); free_result(&got);
    run_case(e, CPU0, &grad, host_g, DP_FLOAT64, &want);
    run_case_emulated(e, &grad, host_g, DP_FLOAT64, &got);
    CHECK(want.status == DP_ERROR_OP_FAILED && same_results(&grad, DP_FLOAT64, &want, &got, "on the host"));
    free_result(&want); free_result(&got);
    {   /* take: an index outside the rows under mode raise */
        op_case tk;
        double rows[3] = {1, 2, 3}, idx[2] = {0, 7};
        double *host_t[2] = {rows, idx};
        memset(&tk, 0, sizeof tk);
        snprintf(tk.op, sizeof tk.op, "take"); tk.kwargs = "";
        tk.nin = 2; tk.in[0] = S(1, 3); tk.in[1] = S(1, 2);
        run_case(e, CPU0, &tk, host_t, DP_INT64, &want);
        run_case_emulated(e, &tk, host_t, DP_INT64, &got);
        CHECK(want.status == DP_ERROR_OP_FAILED && strcmp(want.failure.message, "take: index 7 outside [0, 3)") == 0);
        CHECK(same_results(&tk, DP_INT64, &want, &got, "on the host"));
        free_result(&want); free_result(&got);
    }
    {   /* Embedding: a data value that is not a row, forward and gradient */
        op_case em, eg;
        double idx[4] = {0, 4, 7, 1}, w[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, og2[8] = {0};
        double *host_e[2] = {idx, w}, *host_eg[3] = {og2, idx, w};
        memset(&em, 0, sizeof em); memset(&eg, 0, sizeof eg);
        snprintf(em.op, sizeof em.op, "Embedding"); em.kwargs = "input_dim=5;output_dim=2";
        em.nin = 2; em.in[0] = S(1, 4); em.in[1] = S(2, 5, 2);
        snprintf(eg.op, sizeof eg.op, "_backward_Embedding"); eg.kwargs = "input_dim=5;output_dim=2";
        eg.nin = 3; eg.in[0] = S(2, 4, 2); eg.in[1] = S(1, 4); eg.in[2] = S(2, 5, 2);
        run_case(e, CPU0, &em, host_e, DP_FLOAT32, &want);
        run_case_emulated(e, &em, host_e, DP_FLOAT32, &got);
        CHECK(want.status == DP_ERROR_OP_FAILED && strcmp(want.failure.message, "Embedding: index 7 (element 2 of data) is not a row of 0..4") == 0);
        CHECK(same_results(&em, DP_FLOAT32, &want, &got, "on the host"));
        free_result(&want); free_result(&got);
        run_case(e, CPU0, &eg, host_eg, DP_FLOAT32, &want);
        run_case_emulated(e, &eg, host_eg, DP_FLOAT32, &got);
        CHECK(want.status == DP_ERROR_OP_FAILED && same_results(&eg, DP_FLOAT32, &want, &got, "on the host"));
        free_result(&want); free_result(&got);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* Dropout's kernels draw the mask counter-based (depeng_cuda.h
   >>cuda_nn_layers, depeng_nn.h's dpn__uniform01), both from one key a
   call: for one seed the CPU's and the GPU's masks are the same. Both
   kernels' results are checked for what Dropout promises too: every mask
   element is 0 or 1 / (1 - p), the output is data times the mask, the
   fraction dropped is p (within 5 standard deviations), elements along
   shared axes share their draw; and the same seed gives the same masks. */
static int dropout_ok(const char *who, const double *x, const run_result *r, double p, const dp_shape *s, int shared_axis) {
    int64_t n = dp_shape_size(s), e, dropped = 0, draws = n / (shared_axis >= 0 ? s->dims[shared_axis] : 1);
    double scale = 1 / (1 - p), frac, sd = sqrt(p * (1 - p) / (double)draws);
    if (r->status != DP_OK || r->count != 2) { fprintf(stderr, "  Dropout %s: status %d, %d outputs\n", who, (int)r->status, r->count); return 0; }
    for (e = 0; e < n; e++) {
        double m = r->v[1][e];
        if (!(m == 0 || close_enough(scale, m, DP_FLOAT32)) || !close_enough(x[e] * m, r->v[0][e], DP_FLOAT32)) {
            fprintf(stderr, "  Dropout %s: element %lld: x %g, mask %g, output %g\n", who, (long long)e, x[e], m, r->v[0][e]);
            return 0;
        }
        dropped += m == 0;
        if (shared_axis == 1) {
            int64_t inner = s->dims[2], first = e / (s->dims[1] * inner) * s->dims[1] * inner + e % inner;
            if (r->v[1][first] != m) { fprintf(stderr, "  Dropout %s: element %lld does not share its draw along axis 1\n", who, (long long)e); return 0; }
        }
    }
    frac = (double)dropped / (double)n;
    if (fabs(frac - p) > 5 * sd) { fprintf(stderr, "  Dropout %s: %.4f dropped, p %.2f\n", who, frac, p); return 0; }
    return 1;
}
static void test_emulated_dropout(void) {
    static const struct { const char *kw; dp_shape s; double p; int shared; } cases[] = {
        {"p=0.4;is_train=true", {3, {8, 50, 10}}, 0.4, -1},
        {"p=0.5;mode=always;axes=(1,)", {3, {40, 5, 25}}, 0.5, 1},
        {"p=0.1;is_train=true", {2, {100, 30}}, 0.1, -1},
    };
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 0);
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        op_case c;
        double *host[1] = {NULL};
        run_result cpu, gpu, again;
        memset(&c, 0, sizeof c);
        snprintf(c.op, sizeof c.op, "Dropout"); c.kwargs = cases[i].kw;
        c.nin = 1; c.in[0] = cases[i].s; c.fill[0] = F_POS;
        make_inputs(900 + (int)i, &c, host);
        CHECK(dp_random_seed(e, CPU0, 7) == DP_OK);
        run_case(e, CPU0, &c, host, DP_FLOAT32, &cpu);
        CHECK(dp_random_seed(e, CPU0, 7) == DP_OK);
        run_case_emulated(e, &c, host, DP_FLOAT32, &gpu);
        CHECK(dp_random_seed(e, CPU0, 7) == DP_OK);
        run_case_emulated(e, &c, host, DP_FLOAT32, &again);
        CHECK(dropout_ok("CPU kernel", host[0], &cpu, cases[i].p, &cases[i].s, cases[i].shared));
        CHECK(dropout_ok("GPU kernel on the host", host[0], &gpu, cases[i].p, &cases[i].s, cases[i].shared));
        CHECK(gpu.count == 2 && again.count == 2 && memcmp(gpu.v[1], again.v[1], sizeof(double) * (size_t)gpu.n[1]) == 0);
        CHECK(cpu.count == 2 && gpu.count == 2 && cpu.n[1] == gpu.n[1] && memcmp(cpu.v[1], gpu.v[1], sizeof(double) * (size_t)gpu.n[1]) == 0);
        free_result(&cpu); free_result(&gpu); free_result(&again);
        free(host[0]);
    }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- tests that need a GPU ---------------------------------------------------------------- */
static void test_gpu_kernels_match_cpu(void) {
    dp_engine *cpu, *gpu;
    NEED_GPU();
    cpu = make_engine(DP_ENGINE_PERDEVICE, 0);
    gpu = make_engine(DP_ENGINE_PERDEVICE, 1);
    compare_all_cases(cpu, gpu);
    CHECK(dp_engine_destroy(gpu, NULL) == DP_OK);
    CHECK(dp_engine_destroy(cpu, NULL) == DP_OK);
}
/* The device's draws are the host run's (the same key from the same seed,
   whatever the launch shape), and reproducible. */
static void test_gpu_random_matches_host_run(void) {
    dp_engine *cpu, *gpu;
    const char *ops[2] = {"random_uniform", "random_normal"};
    int o, i;
    NEED_GPU();
    cpu = make_engine(DP_ENGINE_PERDEVICE, 0);
    gpu = make_engine(DP_ENGINE_PERDEVICE, 1);
    for (o = 0; o < 2; o++) {
        double *h = draws(cpu, CPU0, ops[o], 100001, 99, DP_FLOAT64), *d = draws(gpu, GPU0, ops[o], 100001, 99, DP_FLOAT64);
        double *d2 = draws(gpu, GPU0, ops[o], 100001, 99, DP_FLOAT64), *f = draws(gpu, GPU0, ops[o], 100001, 99, DP_FLOAT32);
        int same = 1, again = 1, single = 1;
        CHECK(h && d && d2 && f);
        for (i = 0; h && d && d2 && f && i < 100001; i++) {
            same &= close_enough(h[i], d[i], DP_FLOAT64);
            again &= d[i] == d2[i];
            single &= close_enough((double)(float)h[i], f[i], DP_FLOAT32);
        }
        CHECK(same && again && single);
        free(h); free(d); free(d2); free(f);
    }
    CHECK(dp_engine_destroy(gpu, NULL) == DP_OK);
    CHECK(dp_engine_destroy(cpu, NULL) == DP_OK);
}
/* host -> GPU -> GPU -> host with dp_nd_copy_to (copy workers), from and to
   pinned memory, dp_nd_write / dp_nd_read, and GPU 0 -> GPU 1 where there
   are two. */
static void test_gpu_copies(void) {
    dp_engine *e;
    dp_shape s = S(1, 100000);
    dp_ndarray *host = NULL, *g = NULL, *g2 = NULL, *back = NULL, *direct = NULL;
    float *pinned = NULL, *out;
    int i, ok = 1;
    NEED_GPU();
    out = (float *)malloc(sizeof(float) * 100000);
    e = make_engine(DP_ENGINE_PERDEVICE, 1);
    CHECK(dp_cuda_pinned_alloc(sizeof(float) * 100000, (void **)&pinned) == DP_OK && pinned);
    for (i = 0; pinned && i < 100000; i++) pinned[i] = (float)i * 0.5f;
    CHECK(dp_nd_from_host(e, &s, DP_FLOAT32, CPU0, pinned, &host) == DP_OK);
    CHECK(dp_nd_copy_to(host, GPU0, &g) == DP_OK);           /* host to device */
    CHECK(dp_nd_copy_to(g, GPU0, &g2) == DP_OK);             /* device to device */
    CHECK(dp_nd_copy_to(g2, CPU0, &back) == DP_OK);          /* device to host */
    CHECK(back && dp_nd_read(back, out, sizeof(float) * 100000, NULL) == DP_OK);
    for (i = 0; i < 100000; i++) ok &= out[i] == (float)i * 0.5f;
    CHECK(ok);
    CHECK(dp_nd_from_host(e, &s, DP_FLOAT32, GPU0, pinned, &direct) == DP_OK);
    for (i = 0; pinned && i < 100000; i++) pinned[i] = -1;
    CHECK(direct && dp_nd_read(direct, pinned, sizeof(float) * 100000, NULL) == DP_OK);
    for (ok = 1, i = 0; pinned && i < 100000; i++) ok &= pinned[i] == (float)i * 0.5f;
    CHECK(ok);
    for (i = 0; i < 100000; i++) out[i] = (float)-i;
    CHECK(direct && dp_nd_write(direct, out, sizeof(float) * 100000, NULL) == DP_OK);
    CHECK(direct && dp_nd_read(direct, pinned, sizeof(float) * 100000, NULL) == DP_OK);
    for (ok = 1, i = 0; pinned && i < 100000; i++) ok &= pinned[i] == (float)-i;
    CHECK(ok);
    if (g_gpus > 1) {                                        /* peer to peer, and back */
        dp_ctx gpu1 = {DP_DEV_GPU, 1};
        dp_ndarray *p1 = NULL, *p0 = NULL;
        CHECK(dp_nd_copy_to(g, gpu1, &p1) == DP_OK && p1 && dp_nd_copy_to(p1, GPU0, &p0) == DP_OK);
        CHECK(p0 && dp_nd_read(p0, out, sizeof(float) * 100000, NULL) == DP_OK);
        for (ok = 1, i = 0; i < 100000; i++) ok &= out[i] == (float)i * 0.5f;
        CHECK(ok);
        dp_nd_release(p1); dp_nd_release(p0);
    }
    dp_nd_release(host); dp_nd_release(g); dp_nd_release(g2); dp_nd_release(back); dp_nd_release(direct);
    CHECK(dp_cuda_pinned_free(pinned) == DP_OK);
    free(out);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* The backend's streams are non-blocking and distinct, its events pass
   once the work before them is done; in the engine every GPU worker has a
   stream of its own, and copy workers others than compute workers. */
typedef struct stream_seen { void *stream; int worker; } stream_seen;
static int note_stream(dp_run_ctx *rc, void *arg) {
    stream_seen *s = (stream_seen *)arg;
    s->stream = rc->stream; s->worker = rc->worker;
    return 0;
}
static void test_gpu_streams_and_events(void) {
    const dp_device_backend *be = dp_cuda_backend();
    const dp_memory_backend *mb = dp_cuda_memory();
    void *s1 = NULL, *s2 = NULL, *ev = NULL, *mem = NULL;
    unsigned flags = 0;
    dp_engine *e;
    stream_seen seen[20];
    dp_var vars[20];
    int i, j, ok = 1;
    NEED_GPU();
    CHECK(be->stream_create(0, 0, &s1, be->user) == 0 && be->stream_create(0, 1, &s2, be->user) == 0 && s1 && s2 && s1 != s2);
    CHECK(cudaStreamGetFlags((cudaStream_t)s1, &flags) == cudaSuccess && flags == cudaStreamNonBlocking);
    CHECK(mb->mem_alloc(0, 1 << 24, &mem, mb->user) == 0);
    CHECK(cudaMemsetAsync(mem, 1, 1 << 24, (cudaStream_t)s1) == cudaSuccess);
    CHECK(be->event_create(0, &ev, be->user) == 0 && be->event_record(0, ev, s1, be->user) == 0);
    CHECK(be->stream_synchronize(0, s1, be->user) == 0 && be->event_query(0, ev, be->user) == 0);
    CHECK(be->event_destroy(0, ev, be->user) == 0 && mb->mem_free(0, mem, mb->user) == 0);
    CHECK(be->stream_destroy(0, s1, be->user) == 0 && be->stream_destroy(0, s2, be->user) == 0);
    e = make_engine(DP_ENGINE_PERDEVICE, 1);
    for (i = 0; i < 20; i++) {
        dp_push_desc d;
        memset(&d, 0, sizeof d);
        vars[i] = dp_var_create(e);
        seen[i].stream = NULL; seen[i].worker = -2;
        d.fn = note_stream; d.arg = &seen[i]; d.writes = &vars[i]; d.num_writes = 1; d.ctx = GPU0; d.name = "note stream";
        d.prop = i < 16 ? DP_PROP_NORMAL : DP_PROP_COPY_TO_GPU;
        CHECK(dp_push(e, &d) == DP_OK);
    }
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    for (i = 0; i < 20; i++) {
        ok &= seen[i].stream != NULL && seen[i].worker >= 0;
        for (j = 0; j < 16; j++) {
            if (i < 16 && seen[i].worker != seen[j].worker) ok &= seen[i].stream != seen[j].stream;   /* a stream per worker */
            if (i >= 16) ok &= seen[i].stream != seen[j].stream;                                     /* copy workers' own */
        }
    }
    CHECK(ok);
    for (i = 0; i < 20; i++) dp_var_delete(e, vars[i]);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* A released GPU array's block goes back to its size class and is reused;
   release_pool gives it back to CUDA. */
static void test_gpu_memory_pool(void) {
    dp_engine *e;
    dp_shape s = S(1, 1000);
    dp_ndarray *a = NULL, *b = NULL;
    dp_storage_stats s0, s1, s2, s3, s4;
    NEED_GPU();
    e = make_engine(DP_ENGINE_PERDEVICE, 1);
    CHECK(dp_storage_stats_get(e, GPU0, &s0) == DP_OK);
    CHECK(dp_nd_empty(e, &s, DP_FLOAT32, GPU0, &a) == DP_OK);
    CHECK(dp_storage_stats_get(e, GPU0, &s1) == DP_OK && s1.allocations == s0.allocations + 1 && s1.bytes_in_use >= s0.bytes_in_use + 4000);
    dp_nd_release(a);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(dp_storage_stats_get(e, GPU0, &s2) == DP_OK && s2.bytes_in_use == s0.bytes_in_use && s2.bytes_pooled >= 4096);
    CHECK(dp_nd_empty(e, &s, DP_FLOAT32, GPU0, &b) == DP_OK);
    CHECK(dp_storage_stats_get(e, GPU0, &s3) == DP_OK && s3.pool_hits == s2.pool_hits + 1 && s3.bytes_pooled + 4096 == s2.bytes_pooled);
    dp_nd_release(b);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    CHECK(dp_storage_release_pool(e, GPU0) == DP_OK);
    CHECK(dp_storage_stats_get(e, GPU0, &s4) == DP_OK && s4.bytes_pooled == 0);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* A kernel's error (a label that is no class) and a failed launch reach
   dp_nd_read's dp_failure with their text; a GPU id that is not there is
   refused. */
__global__ static void empty_kernel(void) {}
static int bad_launch(dp_run_ctx *rc, void *arg) {
    cudaError_t e;
    (void)arg;
    empty_kernel<<<1, 4096, 0, (cudaStream_t)rc->stream>>>();     /* more threads than a block can have */
    e = cudaGetLastError();
    if (e == cudaSuccess) return 0;
    dp_set_error(rc, cudaGetErrorString(e));
    return DP_ERROR_BACKEND;
}
static void test_gpu_error_propagation(void) {
    dp_engine *e;
    dp_shape ds = S(2, 2, 3), ls = S(1, 2), s = S(1, 4);
    float data[6] = {1, 2, 3, 4, 5, 6}, labels[2] = {0, 7}, loss = 0;
    dp_ndarray *x = NULL, *l = NULL, *in2[2], *out = NULL, *a = NULL, *none = NULL;
    dp_failure f;
    dp_push_desc d;
    dp_var v;
    dp_ctx bad = {DP_DEV_GPU, g_gpus};
    NEED_GPU();
    e = make_engine(DP_ENGINE_PERDEVICE, 1);
    CHECK(dp_nd_from_host(e, &ds, DP_FLOAT32, GPU0, data, &x) == DP_OK && dp_nd_from_host(e, &ls, DP_FLOAT32, GPU0, labels, &l) == DP_OK);
    in2[0] = x; in2[1] = l;
    CHECK(invoke_str(e, "softmax_cross_entropy", 2, in2, 0, NULL, NULL, 0, 1, &out, NULL) == DP_OK);
    memset(&f, 0, sizeof f);
    CHECK(out && dp_nd_read(out, &loss, sizeof loss, &f) == DP_ERROR_OP_FAILED);
    CHECK(strcmp(f.op_name, "softmax_cross_entropy") == 0 && strcmp(f.message, "label 7 of row 1 is not a class in 0..2") == 0);
    CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, GPU0, &a) == DP_OK && a);
    v = dp_nd_var(a);
    memset(&d, 0, sizeof d);
    d.fn = bad_launch; d.ctx = GPU0; d.name = "bad launch"; d.writes = &v; d.num_writes = 1;
    CHECK(dp_push(e, &d) == DP_OK);
    memset(&f, 0, sizeof f);
    CHECK(dp_nd_wait_to_read(a, &f) == DP_ERROR_OP_FAILED && strcmp(f.op_name, "bad launch") == 0);
    CHECK(strstr(f.message, "invalid configuration") != NULL);
    CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, bad, &none) == DP_ERROR_BAD_CONTEXT && none == NULL);
    dp_nd_release(x); dp_nd_release(l); dp_nd_release(out); dp_nd_release(a);
    dp_wait_all(e, NULL);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
/* exp, sum over an axis and softmax on the naive and pooled engines (one
   shared stream per device, a stream synchronization per operation) give
   the CPU's results. */
static void small_chain(dp_engine *e, dp_ctx ctx, double *out /* 3 + 12 */) {
    dp_shape s = S(2, 3, 4);
    double x[12];
    const char *keys[1] = {"axis"}, *vals[1] = {"1"};
    dp_ndarray *a = NULL, *y = NULL, *z = NULL, *sm = NULL;
    int i;
    for (i = 0; i < 12; i++) x[i] = (i % 5) * 0.25 - 0.5;
    CHECK(dp_nd_from_host(e, &s, DP_FLOAT64, ctx, x, &a) == DP_OK);
    CHECK(invoke_str(e, "exp", 1, &a, 0, NULL, NULL, 0, 1, &y, NULL) == DP_OK);
    CHECK(invoke_str(e, "sum", 1, &y, 1, keys, vals, 0, 1, &z, NULL) == DP_OK);
    CHECK(invoke_str(e, "softmax", 1, &a, 0, NULL, NULL, 0, 1, &sm, NULL) == DP_OK);
    CHECK(z && dp_nd_read(z, out, sizeof(double) * 3, NULL) == DP_OK);
    CHECK(sm && dp_nd_read(sm, out + 3, sizeof(double) * 12, NULL) == DP_OK);
    dp_nd_release(a); dp_nd_release(y); dp_nd_release(z); dp_nd_release(sm);
}
static void test_gpu_engines_agree(void) {
    static const dp_engine_type types[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    double want[15], got[15];
    dp_engine *cpu;
    int t, i;
    NEED_GPU();
    cpu = make_engine(DP_ENGINE_PERDEVICE, 0);
    small_chain(cpu, CPU0, want);
    for (t = 0; t < 3; t++) {
        dp_engine *e = make_engine(types[t], 1);
        int ok = 1;
        memset(got, 0, sizeof got);
        small_chain(e, GPU0, got);
        for (i = 0; i < 15; i++) ok &= close_enough(want[i], got[i], DP_FLOAT64);
        CHECK(ok);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
    CHECK(dp_engine_destroy(cpu, NULL) == DP_OK);
}
/* One training step of a small MLP (FullyConnected, relu, FullyConnected,
   softmax_cross_entropy; autograd; sgd_update in place) on the GPU gives
   the CPU's gradients and weights. */
static void train_step(dp_engine *e, dp_ctx ctx, double *out /* 4 grads + 4 weights: 2 * (30 + 6 + 18 + 3) */) {
    static const int64_t shapes[4][2] = {{6, 5}, {6, 0}, {3, 6}, {3, 0}};
    const char *hk[1] = {"num_hidden"}, *h6[1] = {"6"}, *h3[1] = {"3"}, *lk[1] = {"lr"}, *lv[1] = {"0.5"};
    dp_shape ds = S(2, 8, 5), ls = S(1, 8);
    double data[40], labels[8], w[30];
    dp_ndarray *x = NULL, *l = NULL, *p[4] = {0}, *h = NULL, *r = NULL, *o = NULL, *loss = NULL, *in3[3], *in2[2];
    int i, at = 0;
    for (i = 0; i < 40; i++) data[i] = ((i * 7) % 11) * 0.1 - 0.5;
    for (i = 0; i < 8; i++) labels[i] = i % 3;
    for (i = 0; i < 30; i++) w[i] = ((i * 5) % 13) * 0.05 - 0.3;
    CHECK(dp_nd_from_host(e, &ds, DP_FLOAT64, ctx, data, &x) == DP_OK && dp_nd_from_host(e, &ls, DP_FLOAT64, ctx, labels, &l) == DP_OK);
    for (i = 0; i < 4; i++) {
        dp_shape s = shapes[i][1] ? S(2, shapes[i][0], shapes[i][1]) : S(1, shapes[i][0]);
        CHECK(dp_nd_from_host(e, &s, DP_FLOAT64, ctx, w, &p[i]) == DP_OK && dp_nd_attach_grad(p[i], DP_REQ_WRITE) == DP_OK);
    }
    CHECK(dp_autograd_begin() == DP_OK);
    in3[0] = x; in3[1] = p[0]; in3[2] = p[1];
    CHECK(invoke_str(e, "FullyConnected", 3, in3, 1, hk, h6, 0, 1, &h, NULL) == DP_OK);
    CHECK(invoke_str(e, "relu", 1, &h, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK);
    in3[0] = r; in3[1] = p[2]; in3[2] = p[3];
    CHECK(invoke_str(e, "FullyConnected", 3, in3, 1, hk, h3, 0, 1, &o, NULL) == DP_OK);
    in2[0] = o; in2[1] = l;
    CHECK(invoke_str(e, "softmax_cross_entropy", 2, in2, 0, NULL, NULL, 0, 1, &loss, NULL) == DP_OK);
    CHECK(dp_autograd_end() == DP_OK);
    CHECK(loss && dp_autograd_backward(loss, NULL, 0) == DP_OK);
    for (i = 0; i < 4; i++) {
        dp_ndarray *g = dp_nd_grad(p[i]);
        CHECK(g && dp_nd_read(g, out + at, dp_nd_bytes(g), NULL) == DP_OK);
        at += (int)dp__cu_count_of(p[i]);
    }
    for (i = 0; i < 4; i++) {
        dp_ndarray *upd[2] = {p[i], dp_nd_grad(p[i])}, *same = p[i];
        CHECK(invoke_str(e, "sgd_update", 2, upd, 1, lk, lv, 0, 1, &same, NULL) == DP_OK);
        CHECK(dp_nd_read(p[i], out + at, dp_nd_bytes(p[i]), NULL) == DP_OK);
        at += (int)dp__cu_count_of(p[i]);
    }
    dp_nd_release(x); dp_nd_release(l); dp_nd_release(h); dp_nd_release(r); dp_nd_release(o); dp_nd_release(loss);
    for (i = 0; i < 4; i++) dp_nd_release(p[i]);
}
static void test_gpu_autograd_step(void) {
    double want[114], got[114];
    dp_engine *cpu, *gpu;
    int i, ok = 1;
    NEED_GPU();
    cpu = make_engine(DP_ENGINE_PERDEVICE, 0);
    gpu = make_engine(DP_ENGINE_PERDEVICE, 1);
    memset(want, 0, sizeof want); memset(got, 0, sizeof got);
    train_step(cpu, CPU0, want);
    train_step(gpu, GPU0, got);
    for (i = 0; i < 114; i++) ok &= close_enough(want[i], got[i], DP_FLOAT64);
    CHECK(ok);
    CHECK(dp_engine_destroy(gpu, NULL) == DP_OK);
    CHECK(dp_engine_destroy(cpu, NULL) == DP_OK);
}
static void test_gpu_pinned_memory(void) {
    void *p = NULL;
    cudaPointerAttributes attr;
    NEED_GPU();
    CHECK(dp_cuda_pinned_alloc(1 << 20, &p) == DP_OK && p);
    memset(&attr, 0, sizeof attr);
    CHECK(cudaPointerGetAttributes(&attr, p) == cudaSuccess && attr.type == cudaMemoryTypeHost);
    CHECK(dp_cuda_pinned_free(p) == DP_OK);
    CHECK(dp_cuda_pinned_alloc(0, &p) == DP_OK && p && dp_cuda_pinned_free(p) == DP_OK);
    {   /* arrays on the pinned context: host memory CUDA knows, copied to the GPU and back */
        dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, 1);
        dp_ctx pinned = {DP_DEV_CPU_PINNED, 0}, gpu0 = {DP_DEV_GPU, 0};
        dp_shape s = S(1, 1000);
        dp_ndarray *a = NULL, *g = NULL, *back = NULL;
        float host[1000], out[1000];
        int i;
        for (i = 0; i < 1000; i++) host[i] = (float)i * 0.5f;
        CHECK(dp_nd_from_host(e, &s, DP_FLOAT32, pinned, host, &a) == DP_OK);
        memset(&attr, 0, sizeof attr);
        CHECK(a && cudaPointerGetAttributes(&attr, dp_nd_data(a)) == cudaSuccess && attr.type == cudaMemoryTypeHost);
        CHECK(dp_nd_copy_to(a, gpu0, &g) == DP_OK && dp_nd_copy_to(g, pinned, &back) == DP_OK);
        CHECK(back && dp_nd_read(back, out, sizeof out, NULL) == DP_OK && memcmp(host, out, sizeof out) == 0);
        dp_nd_release(a); dp_nd_release(g); dp_nd_release(back);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

int main(void) {
    static const test_case tests[] = {
        {"no_gpu_reported_cleanly", test_no_gpu_reported_cleanly},
        {"every_builtin_op_has_gpu_kernel", test_every_builtin_op_has_gpu_kernel},
        {"reduction_combine_any_order", test_reduction_combine_any_order},
        {"emulated_kernels_match_cpu", test_emulated_kernels_match_cpu},
        {"emulated_random_is_counter_based", test_emulated_random_is_counter_based},
        {"emulated_kernel_errors_match_cpu", test_emulated_kernel_errors_match_cpu},
        {"emulated_dropout", test_emulated_dropout},
        {"gpu_kernels_match_cpu", test_gpu_kernels_match_cpu},
        {"gpu_random_matches_host_run", test_gpu_random_matches_host_run},
        {"gpu_copies", test_gpu_copies},
        {"gpu_streams_and_events", test_gpu_streams_and_events},
        {"gpu_memory_pool", test_gpu_memory_pool},
        {"gpu_error_propagation", test_gpu_error_propagation},
        {"gpu_engines_agree", test_gpu_engines_agree},
        {"gpu_autograd_step", test_gpu_autograd_step},
        {"gpu_pinned_memory", test_gpu_pinned_memory},
    };
    (void)run_tests;      /* a test here may be skipped (no GPU): see run_tests_with_skips */
    g_gpus = dp_cuda_device_count(g_no_gpu_why, sizeof g_no_gpu_why);
    if (!g_gpus) printf("%s: the tests that need a GPU are skipped\n", g_no_gpu_why);
    if (dp_cuda_register_kernels() != DP_OK) printf("dp_cuda_register_kernels failed\n");
    build_cases();
    return run_tests_with_skips("cuda", tests, (int)(sizeof tests / sizeof tests[0]), &g_skipped, "no CUDA device");
}
