/* tests/test_cuda_int_reductions.cu - depeng_cuda.h's sum, max, min and
   argmax of integer arrays are exact for every value, as the CPU kernels
   are: int64 beyond 2^53 compares as itself (argmax of [2^53, 2^53 + 1,
   2^53 - 1] is 1), sums wrap around like NumPy's, in every integer dtype
   (int64, int32, int8, uint8, bool), over one axis and over all of them,
   and over rows long enough to be cut into slices (the second pass
   combines partial results).

   The combine step the GPU's warp shuffles use must give the CPU's answer
   in any order. Each case runs the GPU kernel on the host (depeng_cuda.h chapter 5) and,
   where CUDA finds a device, on the GPU, and compares the output bytes
   with the CPU kernel's, once written and once added into (req ADD); a few
   cases also check the answer itself. Without a device the GPU test prints
   "SKIP: no CUDA device (name)" and is counted as skipped.
   The last line is "cuda_int_reductions: N passed, M failed, K skipped".

   Build: nvcc -std=c++17 -I. tests/test_cuda_int_reductions.cu   (see make cuda) */
#define DEPENG_IMPLEMENTATION
#define DEPENG_CUDA_IMPLEMENTATION
#include "depeng.h"
#include "depeng_cuda.h"
#include "tests/test_common.h"
#include <stdlib.h>
#include <string.h>

static int g_gpus;                 /* CUDA devices found */
static int g_skipped;              /* set by a test that could not run here */
static const dp_ctx CPU0 = {DP_DEV_CPU, 0};
static const dp_ctx GPU0 = {DP_DEV_GPU, 0};

static const int64_t P53 = (int64_t)1 << 53, P62 = (int64_t)1 << 62;

static dp_engine *make_engine(int with_cuda) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_PERDEVICE; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
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

/* One case: op over axis (a tuple, or () for all) of an array of dtype dt
   whose elements are the int64 values v, converted as dp__store_int does. */
typedef struct int_case {
    const char *op, *axis;
    dp_dtype dt;
    dp_shape shape;
    const int64_t *v;
} int_case;
/* The output written, then added into, as bytes (malloc'd), and its dtype. */
typedef struct int_result {
    dp_result status;
    dp_dtype dt;
    size_t bytes;
    unsigned char *written, *added;
    char message[256];
} int_result;
static void free_result(int_result *r) { free(r->written); free(r->added); memset(r, 0, sizeof *r); }
static void read_bytes(dp_ndarray *a, unsigned char **to, int_result *r) {
    dp_failure f;
    memset(&f, 0, sizeof f);
    r->bytes = dp_nd_bytes(a);
    *to = (unsigned char *)malloc(r->bytes ? r->bytes : 1);
    if ((r->status = dp_nd_read(a, *to, r->bytes, &f)) != DP_OK) snprintf(r->message, sizeof r->message, "%s", f.message);
}
/* Runs c on ctx; with gpu_kernel_on_host the operator's GPU kernel stands
   in for its CPU kernel for this run. */
static void run(dp_engine *eng, dp_ctx ctx, const int_case *c, int gpu_kernel_on_host, int_result *r) {
    const dp_operator *op = dp_operator_find(c->op);
    dp_kernel_fn cpu_kernel = op ? op->forward_cpu : NULL;
    const char *keys[1] = {"axis"}, *vals[1] = {c->axis};
    int64_t n = dp_shape_size(&c->shape), i;
    unsigned char *buf = (unsigned char *)malloc(dp_dtype_size(c->dt) * (size_t)(n ? n : 1));
    dp_ndarray *x = NULL, *out = NULL;
    dp_req add = DP_REQ_ADD;
    memset(r, 0, sizeof *r);
    if (!op || !op->forward_gpu) { r->status = DP_ERROR_INVALID_ARGS; snprintf(r->message, sizeof r->message, "no GPU kernel for %s", c->op); free(buf); return; }
    for (i = 0; i < n; i++) dp__store_int(buf, c->dt, i, c->v[i], DP_REQ_WRITE);
    if (gpu_kernel_on_host) dp_operator_set_kernel(c->op, DP_DEV_CPU, op->forward_gpu);
    r->status = dp_nd_from_host(eng, &c->shape, c->dt, ctx, buf, &x);
    if (r->status == DP_OK) r->status = invoke_str(eng, c->op, 1, &x, 1, keys, vals, 0, 1, &out, NULL);
    if (r->status == DP_OK) { r->dt = dp_nd_dtype(out); read_bytes(out, &r->written, r); }
    if (r->status == DP_OK) r->status = invoke_str(eng, c->op, 1, &x, 1, keys, vals, 0, 1, &out, &add);
    if (r->status == DP_OK) read_bytes(out, &r->added, r);
    if (gpu_kernel_on_host) dp_operator_set_kernel(c->op, DP_DEV_CPU, cpu_kernel);
    dp_nd_release(x); dp_nd_release(out);
    dp_wait_all(eng, NULL);
    free(buf);
}
static const char *dtype_of(const int_case *c) { return dp_dtype_name(c->dt); }
/* The GPU kernel's bytes are the CPU kernel's, element by element. */
static int same_bytes(const int_case *c, const char *step, const int_result *want, const int_result *got, const unsigned char *w,
                      const unsigned char *g, const char *who) {
    size_t size = dp_dtype_size(want->dt);
    int64_t e, n = size ? (int64_t)(want->bytes / size) : 0;
    for (e = 0; e < n; e++)
        if (memcmp(w + e * size, g + e * size, size) != 0) {
            fprintf(stderr, "  %s axis=%s (%s, %s, %s): element %lld: CPU %lld, GPU kernel %lld\n", c->op, c->axis, dtype_of(c), step, who,
                    (long long)e, (long long)dp__load_int(w, want->dt, e), (long long)dp__load_int(g, got->dt, e));
            return 0;
        }
    return 1;
}
static int same_result(const int_case *c, const int_result *want, const int_result *got, const char *who) {
    if (want->status != DP_OK || got->status != DP_OK || want->dt != got->dt || want->bytes != got->bytes) {
        fprintf(stderr, "  %s axis=%s (%s, %s): status %d / %d (%s / %s), %s / %s, %zu / %zu bytes\n", c->op, c->axis, dtype_of(c), who,
                (int)want->status, (int)got->status, want->message, got->message, dp_dtype_name(want->dt), dp_dtype_name(got->dt),
                want->bytes, got->bytes);
        return 0;
    }
    return same_bytes(c, "written", want, got, want->written, got->written, who) && same_bytes(c, "added", want, got, want->added, got->added, who);
}

/* ---- the cases ---------------------------------------------------------------- */
#define MAX_CASES 256
#define MAX_OWNED 16
static int_case g_cases[MAX_CASES];
static int g_ncases;
static int64_t *g_owned[MAX_OWNED];   /* generated element arrays */
static int g_nowned;
static dp_shape shape_of(int nd, int64_t a, int64_t b) {
    dp_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = nd; s.dims[0] = a; s.dims[1] = b;
    return s;
}
static int_case *add_case(const char *op, const char *axis, dp_dtype dt, dp_shape s, const int64_t *v) {
    int_case *c;
    if (g_ncases == MAX_CASES) { fprintf(stderr, "more than %d cases\n", MAX_CASES); exit(1); }
    c = &g_cases[g_ncases++];
    c->op = op; c->axis = axis; c->dt = dt; c->shape = s; c->v = v;
    return c;
}
static const char *const g_ops[4] = {"sum", "max", "min", "argmax"};
/* Every op over every axis choice of a 1-d or 2-d array (argmax: one axis or all). */
static void add_all(dp_dtype dt, dp_shape s, const int64_t *v) {
    static const char *const axes[4] = {"()", "0", "1", "(0,1)"};
    int o, a, naxes = s.ndim == 1 ? 2 : 4;
    for (o = 0; o < 4; o++)
        for (a = 0; a < (o == 3 && naxes == 4 ? 3 : naxes); a++) add_case(g_ops[o], axes[a], dt, s, v);
}
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_u64(void) { g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17; return g_rng; }
/* n elements: base + a random offset below spread (spread 0: any 64 bits). */
static int64_t *random_values(int64_t n, int64_t base, uint64_t spread) {
    int64_t *v = (int64_t *)malloc(sizeof(int64_t) * (size_t)n), i;
    if (!v || g_nowned == MAX_OWNED) { fprintf(stderr, "out of memory for the cases\n"); exit(1); }
    for (i = 0; i < n; i++) v[i] = dp__wrap((uint64_t)base + (spread ? next_u64() % spread : next_u64()));
    g_owned[g_nowned++] = v;
    return v;
}
static const int64_t g_near53[3] = {P53, P53 + 1, P53 - 1};
static const int64_t g_extremes[5] = {5, INT64_MIN, INT64_MIN + 1, INT64_MAX, -3};
static const int64_t g_low[3] = {INT64_MIN + 2, INT64_MIN + 1, 0};
static const int64_t g_near62[5] = {P62 + 1, P62 + 1, P62 + 1, P62 + 1, P62 + 1};
static const int64_t g_wrap32[2] = {2147483647, 1}, g_wrap8[2] = {127, 1}, g_wrapu8[2] = {200, 100}, g_bools[4] = {0, 1, 1, 0};
/* 4 x 3, above 2^53: odd and even neighbours, ties of the maximum */
static const int64_t g_grid[12] = {P53 + 1, P53 + 2, P53 + 7, P53 + 3, P53 + 3, P53 - 9, P53 + 2, P53 + 3, P53 + 7, P53 - 1, P53 + 1, P53 + 5};
static void build_cases(void) {
    int64_t *rows, *cols, *i32, *i8, *u8, *b;
    int64_t n = 60000, i;
    add_case("argmax", "()", DP_INT64, shape_of(1, 3, 0), g_near53);
    add_case("max", "()", DP_INT64, shape_of(1, 3, 0), g_near53);
    add_case("min", "()", DP_INT64, shape_of(1, 3, 0), g_near53);
    add_case("sum", "()", DP_INT64, shape_of(1, 3, 0), g_near53);
    add_case("sum", "()", DP_INT64, shape_of(1, 5, 0), g_near62);
    add_case("min", "()", DP_INT64, shape_of(1, 3, 0), g_low);
    add_case("mean", "()", DP_INT64, shape_of(1, 3, 0), g_near53);   /* mean stays a floating-point mean */
    add_all(DP_INT64, shape_of(1, 5, 0), g_extremes);
    add_all(DP_INT64, shape_of(2, 4, 3), g_grid);
    add_all(DP_INT32, shape_of(1, 2, 0), g_wrap32);
    add_all(DP_INT8, shape_of(1, 2, 0), g_wrap8);
    add_all(DP_UINT8, shape_of(1, 2, 0), g_wrapu8);
    add_all(DP_BOOL, shape_of(2, 2, 2), g_bools);
    /* long rows (slices and a second pass) and many short ones: values just
       above 2^53 and one largest element, odd, after an element that equals
       it in double; near 2^62, where the sums wrap; the small dtypes' full ranges */
    rows = random_values(n, P53, 4000);
    rows[100] = P53 + 5000; rows[12345] = P53 + 5001; rows[50000] = P53 + 5001;
    add_all(DP_INT64, shape_of(2, 3, n / 3), rows);
    add_all(DP_INT64, shape_of(2, n / 3, 3), rows);
    cols = random_values(n, P62, (uint64_t)1 << 61);
    add_all(DP_INT64, shape_of(2, 3, n / 3), cols);
    add_all(DP_INT64, shape_of(2, 40, 50), random_values(2000, 0, 0));
    i32 = random_values(n, INT32_MIN, (uint64_t)1 << 32);
    i8 = random_values(n, -128, 256);
    u8 = random_values(n, 0, 256);
    b = random_values(n, 0, 2);
    for (i = 0; i < n; i++) b[i] = i % 997 == 5;          /* mostly false: argmax finds the first true */
    add_all(DP_INT32, shape_of(2, n / 3, 3), i32);
    add_all(DP_INT8, shape_of(2, 3, n / 3), i8);
    add_all(DP_UINT8, shape_of(2, n / 3, 3), u8);
    add_all(DP_BOOL, shape_of(2, 3, n / 3), b);
}

/* Every case: the GPU kernel on ctx of eng (gpu_kernel_on_host: run on
   the host of a CPU engine) against the CPU kernel. */
static void compare_all(dp_engine *cpu, dp_engine *eng, dp_ctx ctx, int gpu_kernel_on_host, const char *who) {
    int ci, failures = 0;
    for (ci = 0; ci < g_ncases; ci++) {
        int_result want, got;
        run(cpu, CPU0, &g_cases[ci], 0, &want);
        run(eng, ctx, &g_cases[ci], gpu_kernel_on_host, &got);
        CHECK(want.status == DP_OK);
        if (!same_result(&g_cases[ci], &want, &got, who) && ++failures <= 20) CHECK(0);
        free_result(&want); free_result(&got);
    }
    CHECK(failures == 0);
    CHECK(g_ncases > 150);
}
/* The answers themselves (the CPU kernel's too): case ci's output element 0,
   written. */
static void check_answer(dp_engine *eng, int ci, int64_t want) {
    int_result r;
    run(eng, CPU0, &g_cases[ci], 1, &r);
    CHECK(r.status == DP_OK);
    if (r.status == DP_OK && dp__load_int(r.written, r.dt, 0) != want) {
        fprintf(stderr, "  %s axis=%s (%s) on the host: %lld, not %lld\n", g_cases[ci].op, g_cases[ci].axis, dtype_of(&g_cases[ci]),
                (long long)dp__load_int(r.written, r.dt, 0), (long long)want);
        CHECK(0);
    }
    free_result(&r);
}

/* ---- tests ---------------------------------------------------------------------------- */
/* On a GPU the integer reductions combine partial results in whatever
   order the warp shuffles and slices give (which the host run cannot
   show); every order must give the CPU scan's answer, bit for bit: the
   sum modulo 2^64, max, min, and argmax's first largest element. */
static void test_int_combine_any_order(void) {
    static const int64_t pool[8] = {INT64_MIN, INT64_MIN + 1, -1, 0, P53, P53 + 1, INT64_MAX - 1, INT64_MAX};
    int trial, kind, wrong = 0;
    for (trial = 0; trial < 3000; trial++) {
        int64_t v[24];
        int n = 1 + (int)(next_u64() % 24), i;
        for (i = 0; i < n; i++) v[i] = pool[next_u64() % 8];
        for (kind = DP__CU_ISUM; kind <= DP__CU_IARGMAX; kind++) {
            dp__cu_acc cand[24];
            int64_t best = kind == DP__CU_IMIN ? INT64_MAX : kind == DP__CU_ISUM ? 0 : INT64_MIN;
            long long idx = -1;
            int left = n;
            for (i = 0; i < n; i++) {                          /* the CPU's scans */
                if (kind == DP__CU_ISUM) best = dp__wrap((uint64_t)best + (uint64_t)v[i]);
                if (kind == DP__CU_IMAX && v[i] > best) best = v[i];
                if (kind == DP__CU_IMIN && v[i] < best) best = v[i];
                if (kind == DP__CU_IARGMAX && (idx < 0 || v[i] > best)) { best = v[i]; idx = i; }
                cand[i] = dp__cu_candidate_int(kind, v[i], i);
            }
            while (left > 1) {                                 /* merge two random ones, in random order */
                int a = (int)(next_u64() % (uint64_t)left), b = (int)(next_u64() % (uint64_t)(left - 1)), lo, hi;
                dp__cu_acc merged;
                if (b >= a) b++;
                merged = next_u64() % 2 ? dp__cu_combine(kind, cand[a], cand[b]) : dp__cu_combine(kind, cand[b], cand[a]);
                lo = a < b ? a : b; hi = a < b ? b : a;
                cand[hi] = cand[--left];                       /* drop both, keep the merged one */
                cand[lo] = merged;
            }
            if (kind == DP__CU_IARGMAX ? cand[0].i != idx : dp__cu_bits_out(cand[0].v) != best) wrong++;
        }
    }
    CHECK(wrong == 0);
}
static void test_host_run_answers(void) {
    dp_engine *e = make_engine(0);
    check_answer(e, 0, 1);                                 /* argmax [2^53, 2^53 + 1, 2^53 - 1] */
    check_answer(e, 1, P53 + 1);                           /* max */
    check_answer(e, 2, P53 - 1);                           /* min */
    check_answer(e, 3, 3 * P53);                           /* sum */
    check_answer(e, 4, P62 + 5);                           /* 5 (2^62 + 1) wraps modulo 2^64 */
    check_answer(e, 5, INT64_MIN + 1);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}
static void test_host_run_matches_cpu(void) {
    dp_engine *cpu = make_engine(0);
    compare_all(cpu, cpu, CPU0, 1, "on the host");
    CHECK(dp_engine_destroy(cpu, NULL) == DP_OK);
}
static void test_gpu_matches_cpu(void) {
    dp_engine *cpu, *gpu;
    if (!g_gpus) { g_skipped = 1; return; }
    cpu = make_engine(0);
    gpu = make_engine(1);
    compare_all(cpu, gpu, GPU0, 0, "on the GPU");
    CHECK(dp_engine_destroy(gpu, NULL) == DP_OK);
    CHECK(dp_engine_destroy(cpu, NULL) == DP_OK);
}

int main(void) {
    static const test_case tests[] = {
        {"int_combine_any_order", test_int_combine_any_order},
        {"host_run_answers", test_host_run_answers},
        {"host_run_matches_cpu", test_host_run_matches_cpu},
        {"gpu_matches_cpu", test_gpu_matches_cpu},
    };
    char why[256];
    int i, status;
    (void)run_tests;      /* a test here may be skipped (no GPU): see run_tests_with_skips */
    g_gpus = dp_cuda_device_count(why, sizeof why);
    if (!g_gpus) printf("%s: the tests that need a GPU are skipped\n", why);
    if (dp_cuda_register_kernels() != DP_OK) printf("dp_cuda_register_kernels failed\n");
    build_cases();
    status = run_tests_with_skips("cuda_int_reductions", tests, (int)(sizeof tests / sizeof tests[0]), &g_skipped, "no CUDA device");
    for (i = 0; i < g_nowned; i++) free(g_owned[i]);
    return status;
}
