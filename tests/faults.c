/* tests/faults.c - allocation-failure injection over one representative
   workload (make faults).

   The workload uses most of depeng through its public API: engine create,
   variables, sync and async pushes, pre-created ops, variable deletes, waits
   (plain and timed), arrays, a dozen operators, autograd backward, the three
   optimizers, a bound executor, the KVStore (two stores, an optimizer,
   values on two CPU devices), .npy / .npz / CSV save and load, the batch
   iterator, destroy.
   It runs once with no failure, as the reference; every value a read hands
   back is recorded. Then, on each engine kind and in two modes, it runs
   again with the allocator of dp_engine_desc failing

     only-k:  the k-th allocation only, or
     from-k:  every allocation from the k-th on,

   for k = 1, 2, ... until a run sees no allocation fail (and at least up to
   the number the reference run made). Each run is a
   child process with a watchdog. A run passes when it did not crash or hang,
   every read that returned DP_OK gave the reference's values (a wrong "OK" is
   a lost failure), every dp_kv_ call that failed said out of memory and
   logged it, nothing is outstanding in the allocator after
   dp_engine_destroy, and LeakSanitizer (in the sanitizer build) finds no
   leak. A workload step whose call returns an error stops that step: the
   caller was told, so what depends on it is not checked.

   Usage: faults [naive|pooled|perdevice|all][/only|/from] [max_k]; prints
   one line per engine and mode, then "faults: N passed, M failed" (a /mode
   suffix sweeps that mode only: make faults runs the six sweeps side by
   side). faults KIND K only|from runs the one k in this process, for a
   debugger. */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/test_calls.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the failing allocator ------------------------------------------------ */
enum { MODE_NONE, MODE_ONLY_K, MODE_FROM_K };
static int g_mode;
static long g_fail_k;
static long g_allocs;          /* allocations asked for so far */
static long g_injected;        /* of them refused */
static long g_outstanding;     /* bytes handed out and not yet freed */
static void *fault_alloc(size_t size, size_t align, void *user) {
    long n = __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED);
    void *p;
    (void)align; (void)user;
    if ((g_mode == MODE_ONLY_K && n == g_fail_k) || (g_mode == MODE_FROM_K && n >= g_fail_k)) {
        __atomic_add_fetch(&g_injected, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    p = malloc(size);
    if (p) __atomic_add_fetch(&g_outstanding, (long)size, __ATOMIC_RELAXED);
    return p;
}
static void fault_free(void *p, size_t size, void *user) {
    (void)user;
    if (p) __atomic_sub_fetch(&g_outstanding, (long)size, __ATOMIC_RELAXED);
    free(p);
}
/* Counts the error lines, so a failed call can be checked for having said
   why. */
static long g_error_lines;
static void quiet(const char *tag, uint32_t level, uint32_t item, const char *msg, uint32_t line, const char *file, void *user) {
    (void)tag; (void)item; (void)msg; (void)line; (void)file; (void)user;
    if (level <= DP_LOG_ERROR) __atomic_add_fetch(&g_error_lines, 1, __ATOMIC_RELAXED);
}

/* ---- two fake GPUs whose memory is host memory (the KVStore's GPU paths) ---- */
static int fake_count(void *u) { (void)u; return 2; }
static int fake_set(int dev, void *u) { (void)dev; (void)u; return 0; }
static int fake_stream_create(int dev, int is_copy, void **out, void *u) { static int stream; (void)dev; (void)is_copy; (void)u; *out = &stream; return 0; }
static int fake_stream_destroy(int dev, void *st, void *u) { (void)dev; (void)st; (void)u; return 0; }
static int fake_sync(int dev, void *st, void *u) { (void)dev; (void)st; (void)u; return 0; }
static const char *fake_err(int e, void *u) { (void)e; (void)u; return "fake GPU error"; }
static int fake_mem_alloc(int dev, size_t size, void **out, void *u) { (void)dev; (void)u; *out = malloc(size ? size : 1); return *out ? 0 : 2; }
static int fake_mem_free(int dev, void *p, void *u) { (void)dev; (void)u; free(p); return 0; }
static int fake_copy(void *dst, const void *src, size_t n, int kind, int dev, void *stream, void *u) {
    (void)kind; (void)dev; (void)stream; (void)u;
    memcpy(dst, src, n);
    return 0;
}
static dp_device_backend g_fake_gpu;
static dp_memory_backend g_fake_gpu_memory;
static void fake_gpu_setup(void) {
    g_fake_gpu.name = "fake"; g_fake_gpu.device_count = fake_count; g_fake_gpu.set_device = fake_set;
    g_fake_gpu.stream_create = fake_stream_create; g_fake_gpu.stream_destroy = fake_stream_destroy;
    g_fake_gpu.stream_synchronize = fake_sync; g_fake_gpu.error_string = fake_err;
    g_fake_gpu_memory.mem_alloc = fake_mem_alloc; g_fake_gpu_memory.mem_free = fake_mem_free; g_fake_gpu_memory.mem_copy = fake_copy;
}

/* ---- checkpoints: what the reference run read, and the checks against it ---- */
#define MAX_CHECKPOINTS 64
#define MAX_VALUES 64
typedef struct { char name[48]; int n; double v[MAX_VALUES]; } checkpoint;
static checkpoint g_ref[MAX_CHECKPOINTS];
static int g_nref, g_recording, g_wrong;
static void record_or_compare(const char *name, const double *v, int n) {
    int i, j;
    if (g_recording) {
        if (g_nref == MAX_CHECKPOINTS || n > MAX_VALUES) { fprintf(stderr, "faults: too many checkpoints\n"); exit(5); }
        snprintf(g_ref[g_nref].name, sizeof g_ref[g_nref].name, "%s", name);
        g_ref[g_nref].n = n;
        memcpy(g_ref[g_nref].v, v, (size_t)n * sizeof *v);
        g_nref++;
        return;
    }
    for (i = 0; i < g_nref && strcmp(g_ref[i].name, name) != 0; i++) {}
    if (i == g_nref || g_ref[i].n != n) { fprintf(stderr, "  %s: no reference with %d values\n", name, n); g_wrong++; return; }
    for (j = 0; j < n; j++) {
        double a = v[j], b = g_ref[i].v[j];
        if (!(a == b || (a != a && b != b) || (a - b < 1e-6 && b - a < 1e-6))) {
            fprintf(stderr, "  %s[%d] = %g after DP_OK, the reference read %g: a lost failure\n", name, j, a, b);
            g_wrong++;
            return;
        }
    }
}
/* Reads a (any dtype) and checks it; DP_OK only when the read was OK. */
static dp_result check_array(const char *name, dp_ndarray *a) {
    double v[MAX_VALUES];
    unsigned char buf[MAX_VALUES * 8];
    size_t bytes = dp_nd_bytes(a);
    int64_t n = dp_shape_size(dp_nd_shape(a)), i;
    dp_result r;
    if (n > MAX_VALUES || bytes > sizeof buf) { fprintf(stderr, "faults: %s too large\n", name); exit(5); }
    if ((r = dp_nd_read(a, buf, bytes, NULL)) != DP_OK) return r;
    for (i = 0; i < n; i++) {
        switch (dp_nd_dtype(a)) {
        case DP_FLOAT32: { float f; memcpy(&f, buf + i * 4, 4); v[i] = f; break; }
        case DP_FLOAT64: memcpy(&v[i], buf + i * 8, 8); break;
        case DP_INT32: { int32_t x; memcpy(&x, buf + i * 4, 4); v[i] = x; break; }
        case DP_INT64: { int64_t x; memcpy(&x, buf + i * 8, 8); v[i] = (double)x; break; }
        default: v[i] = buf[i]; break;
        }
    }
    record_or_compare(name, v, (int)n);
    return DP_OK;
}
static void check_int(const char *name, int value) { double v = value; record_or_compare(name, &v, 1); }

/* ---- the workload ------------------------------------------------------------ */
/* A call that fails while allocations are refused must fail for that
   reason and say so: DP_ERROR_OUT_OF_MEMORY with an error line, or
   DP_ERROR_OP_FAILED (an operation failed for want of memory; its failure
   was logged where it happened). Any other code is counted as wrong: a
   misleading error is a lost failure too. */
static void check_failure(const char *call, dp_result r, long lines_before) {
    if (r == DP_ERROR_OP_FAILED) return;
    if (r != DP_ERROR_OUT_OF_MEMORY) { fprintf(stderr, "  %s: %s, not out of memory\n", call, dp_result_string(r)); g_wrong++; }
    else if (__atomic_load_n(&g_error_lines, __ATOMIC_RELAXED) == lines_before) { fprintf(stderr, "  %s: out of memory, not logged\n", call); g_wrong++; }
}
#define TRY(call) do { long lines_ = __atomic_load_n(&g_error_lines, __ATOMIC_RELAXED); dp_result r_ = (call); \
                       if (r_ != DP_OK) { check_failure(#call, r_, lines_); goto out; } } while (0)
#define TRY_PTR(p) do { if (!(p)) goto out; } while (0)
typedef struct { int a, b, c, count; } cells;
static int set_a(dp_run_ctx *rc, void *p) { (void)rc; ((cells *)p)->a = 2; return 0; }
static int set_b(dp_run_ctx *rc, void *p) { (void)rc; ((cells *)p)->b = 2; return 0; }
static int b_plus_a(dp_run_ctx *rc, void *p) { (void)rc; ((cells *)p)->b += ((cells *)p)->a; return 0; }
static int c_is_a_plus_2(dp_run_ctx *rc, void *p) { (void)rc; ((cells *)p)->c = ((cells *)p)->a + 2; return 0; }
static int count_up(dp_run_ctx *rc, void *p) { (void)rc; ((cells *)p)->count++; return 0; }
static void async_double(dp_run_ctx *rc, void *p, dp_completion done) { (void)rc; ((cells *)p)->count *= 2; dp_complete(done, 0, NULL); }
static void free_owned(void *p) { free(p); }
static int use_owned(dp_run_ctx *rc, void *p) { (void)rc; return *(int *)p == 42 ? 0 : 1; }

static void engine_steps(dp_engine *e) {
    static cells c;
    dp_var a = dp_var_create(e), b = dp_var_create(e), cv = dp_var_create(e), n = dp_var_create(e);
    dp_push_desc d;
    dp_opr op = {0};
    int i, *owned;
    memset(&c, 0, sizeof c);
    TRY_PTR(a.id && b.id && cv.id && n.id);
    TRY(dp_push_sync(e, set_a, &c, NULL, 0, &a, 1));
    TRY(dp_push_sync(e, set_b, &c, NULL, 0, &b, 1));
    TRY(dp_push_sync(e, b_plus_a, &c, &a, 1, &b, 1));
    TRY(dp_push_sync(e, c_is_a_plus_2, &c, &a, 1, &cv, 1));
    TRY(dp_wait_var(e, b, NULL));
    check_int("B = A + B", c.b);
    TRY(dp_wait_var_for(e, cv, 10000, NULL));
    check_int("C = A + 2", c.c);
    memset(&d, 0, sizeof d);
    d.fn = count_up; d.arg = &c; d.writes = &n; d.num_writes = 1; d.name = "count_up";
    op = dp_opr_create(e, &d);
    TRY_PTR(op.id);
    for (i = 0; i < 3; i++) TRY(dp_opr_push(e, op, d.ctx, 0));
    TRY(dp_push_async(e, async_double, &c, NULL, 0, &n, 1));
    owned = (int *)malloc(sizeof *owned);
    TRY_PTR(owned);
    *owned = 42;
    memset(&d, 0, sizeof d);
    d.fn = use_owned; d.arg = owned; d.cleanup = free_owned; d.reads = &n; d.num_reads = 1;
    TRY(dp_push(e, &d));                 /* the cleanup frees owned, whatever happens */
    TRY(dp_wait_all_for(e, 10000, NULL));
    check_int("3 pushes of a pre-created op, doubled", c.count);
out:
    if (op.id) dp_opr_destroy(e, op);
    if (a.id) dp_var_delete(e, a);
    if (b.id) dp_var_delete(e, b);
    if (cv.id) dp_var_delete(e, cv);
    if (n.id) dp_var_delete(e, n);
}

static dp_shape shape2(int64_t r, int64_t c) { dp_shape s; memset(&s, 0, sizeof s); s.ndim = 2; s.dims[0] = r; s.dims[1] = c; return s; }
static dp_shape shape1(int64_t n) { dp_shape s; memset(&s, 0, sizeof s); s.ndim = 1; s.dims[0] = n; return s; }
static dp_result invoke(dp_engine *e, const char *name, int nin, dp_ndarray *const *in, const char *key, const char *value,
                        double scalar, dp_ndarray **out) {
    const char *k[1], *v[1];
    k[0] = key; v[0] = value;
    *out = NULL;
    return invoke_str(e, name, nin, in, key ? 1 : 0, k, v, scalar, 1, out, NULL);
}

static void array_steps(dp_engine *e) {
    dp_ctx cpu = {0, 0};
    dp_ndarray *x = NULL, *x34 = NULL, *y = NULL, *z = NULL, *m = NULL, *t = NULL, *s = NULL, *r = NULL, *sm = NULL;
    dp_ndarray *am = NULL, *cc = NULL, *ru = NULL, *sl = NULL, *cp = NULL, *in[2];
    dp_shape s34 = shape2(3, 4);
    TRY(dp_nd_arange(e, 0, 12, 1, DP_FLOAT32, cpu, &x));
    TRY(dp_nd_reshape(x, &s34, &x34));
    TRY(dp_nd_ones(e, &s34, DP_FLOAT32, cpu, &y));
    in[0] = x34; in[1] = y;
    TRY(invoke(e, "add", 2, in, NULL, NULL, 0, &z));
    TRY(invoke(e, "mul_scalar", 1, &z, NULL, NULL, 2, &m));
    TRY(invoke(e, "transpose", 1, &m, NULL, NULL, 0, &t));
    TRY(check_array("transpose(2 (x + 1))", t));
    TRY(invoke(e, "sum", 1, &z, "axis", "1", 0, &s));
    TRY(check_array("sum(x + 1, axis 1)", s));
    TRY(invoke(e, "relu", 1, &m, NULL, NULL, 0, &r));
    TRY(invoke(e, "softmax", 1, &r, NULL, NULL, 0, &sm));
    TRY(check_array("softmax(relu(.))", sm));
    TRY(invoke(e, "argmax", 1, &x34, "axis", "1", 0, &am));
    TRY(check_array("argmax(x, axis 1)", am));
    in[0] = x34; in[1] = m;
    {
        const char *k[2] = {"num_args", "dim"}, *v[2] = {"2", "0"};
        TRY(invoke_str(e, "concat", 2, in, 2, k, v, 0, 1, &cc, NULL));
    }
    TRY(check_array("concat(x, m)", cc));
    TRY(dp_random_seed(e, cpu, 7));
    TRY(dp_nd_random_uniform(e, -1, 1, &s34, DP_FLOAT32, cpu, &ru));
    TRY(check_array("random_uniform after seed 7", ru));
    TRY(dp_nd_slice(x34, 1, 3, &sl));
    TRY(dp_nd_copy_to(sl, cpu, &cp));
    TRY(check_array("copy of rows 1..2", cp));
out:
    dp_nd_release(x); dp_nd_release(x34); dp_nd_release(y); dp_nd_release(z); dp_nd_release(m); dp_nd_release(t);
    dp_nd_release(s); dp_nd_release(r); dp_nd_release(sm); dp_nd_release(am); dp_nd_release(cc); dp_nd_release(ru);
    dp_nd_release(sl); dp_nd_release(cp);
}

/* Products whose GEMM workspaces come from the engine's allocator (over the
   16 KiB it takes from the stack): dot (dp_gemm_on, which computes the same
   bits on the stack when refused) and Convolution (dp_gemm_pack_b_on, whose
   refusal sends the layer to its im2col columns); read through sums. */
static void gemm_steps(dp_engine *e) {
    dp_ctx cpu = {0, 0};
    dp_shape sa = shape2(40, 300), sb = shape2(300, 60), sx, sw = shape1(8);
    dp_ndarray *a = NULL, *b = NULL, *a1 = NULL, *b1 = NULL, *d = NULL, *ds = NULL, *x = NULL, *x1 = NULL, *w = NULL, *w1 = NULL;
    dp_ndarray *bias = NULL, *y = NULL, *ys = NULL, *in[3];
    memset(&sx, 0, sizeof sx); sx.ndim = 4; sx.dims[0] = 2; sx.dims[1] = 3; sx.dims[2] = 20; sx.dims[3] = 20;
    TRY(dp_nd_arange(e, 0, 12000, 1, DP_FLOAT32, cpu, &a1));
    TRY(dp_nd_reshape(a1, &sa, &a));
    TRY(dp_nd_arange(e, 0, 18000, 1, DP_FLOAT32, cpu, &b1));
    TRY(dp_nd_reshape(b1, &sb, &b));
    in[0] = a; in[1] = b;
    TRY(invoke(e, "dot", 2, in, NULL, NULL, 0, &d));
    TRY(invoke(e, "sum", 1, &d, "axis", "0", 0, &ds));
    TRY(check_array("sum(dot(a, b), axis 0)", ds));
    TRY(dp_nd_arange(e, 0, 2400, 1, DP_FLOAT32, cpu, &x1));
    TRY(dp_nd_reshape(x1, &sx, &x));
    sw.ndim = 4; sw.dims[0] = 8; sw.dims[1] = 3; sw.dims[2] = 5; sw.dims[3] = 5;
    TRY(dp_nd_arange(e, 0, 600, 1, DP_FLOAT32, cpu, &w1));
    TRY(dp_nd_reshape(w1, &sw, &w));
    sw = shape1(8);
    TRY(dp_nd_ones(e, &sw, DP_FLOAT32, cpu, &bias));
    in[0] = x; in[1] = w; in[2] = bias;
    {
        const char *k[2] = {"kernel", "num_filter"}, *v[2] = {"(5, 5)", "8"};
        TRY(invoke_str(e, "Convolution", 3, in, 2, k, v, 0, 1, &y, NULL));
    }
    TRY(invoke(e, "sum", 1, &y, "axis", "(0, 2, 3)", 0, &ys));
    TRY(check_array("sum(Convolution(x, w, b), axis (0, 2, 3))", ys));
out:
    dp_nd_release(a); dp_nd_release(b); dp_nd_release(a1); dp_nd_release(b1); dp_nd_release(d); dp_nd_release(ds);
    dp_nd_release(x); dp_nd_release(x1); dp_nd_release(w); dp_nd_release(w1); dp_nd_release(bias); dp_nd_release(y);
    dp_nd_release(ys);
}

static void autograd_and_optimizer_steps(dp_engine *e) {
    static const float xs[12] = {0.1f, 0.2f, -0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, 0.9f, -1.0f, 1.1f, 1.2f};
    static const float ws[6] = {0.05f, -0.1f, 0.15f, 0.2f, 0.1f, -0.05f};
    static const float labels[4] = {0, 1, 1, 0};
    dp_ctx cpu = {0, 0};
    dp_shape s43 = shape2(4, 3), s23 = shape2(2, 3), s2 = shape1(2), s4 = shape1(4);
    dp_ndarray *x = NULL, *w = NULL, *b = NULL, *lab = NULL, *h = NULL, *a = NULL, *loss = NULL, *in[4], *out;
    dp_ndarray *mom = NULL, *mean = NULL, *var = NULL;
    int recording = 0;
    TRY(dp_nd_from_host(e, &s43, DP_FLOAT32, cpu, xs, &x));
    TRY(dp_nd_from_host(e, &s23, DP_FLOAT32, cpu, ws, &w));
    TRY(dp_nd_zeros(e, &s2, DP_FLOAT32, cpu, &b));
    TRY(dp_nd_from_host(e, &s4, DP_FLOAT32, cpu, labels, &lab));
    TRY(dp_nd_attach_grad(w, DP_REQ_WRITE));
    TRY(dp_nd_attach_grad(b, DP_REQ_WRITE));
    TRY(dp_autograd_begin());
    recording = 1;
    in[0] = x; in[1] = w; in[2] = b;
    TRY(invoke(e, "FullyConnected", 3, in, "num_hidden", "2", 0, &h));
    TRY(invoke(e, "tanh", 1, &h, NULL, NULL, 0, &a));
    in[0] = a; in[1] = lab;
    TRY(invoke(e, "softmax_cross_entropy", 2, in, NULL, NULL, 0, &loss));
    recording = 0;
    TRY(dp_autograd_end());
    TRY(dp_autograd_backward(loss, NULL, 0));
    TRY(check_array("loss", loss));
    TRY(check_array("d loss / d w", dp_nd_grad(w)));
    TRY(check_array("d loss / d b", dp_nd_grad(b)));
    {   /* the three optimizers, each writing w in place */
        const char *k[1] = {"lr"}, *v[1] = {"0.5"};
        const char *km[2] = {"lr", "momentum"}, *vm[2] = {"0.5", "0.9"};
        in[0] = w; in[1] = dp_nd_grad(w);
        out = w;
        TRY(invoke_str(e, "sgd_update", 2, in, 1, k, v, 0, 1, &out, NULL));
        TRY(dp_nd_zeros(e, &s23, DP_FLOAT32, cpu, &mom));
        in[2] = mom;
        TRY(invoke_str(e, "sgd_mom_update", 3, in, 2, km, vm, 0, 1, &out, NULL));
        TRY(dp_nd_zeros(e, &s23, DP_FLOAT32, cpu, &mean));
        TRY(dp_nd_zeros(e, &s23, DP_FLOAT32, cpu, &var));
        in[2] = mean; in[3] = var;
        TRY(invoke_str(e, "adam_update", 4, in, 1, k, v, 0, 1, &out, NULL));
        TRY(check_array("w after sgd, momentum and adam", w));
    }
out:
    if (recording) dp_autograd_end();
    dp_nd_release(x); dp_nd_release(w); dp_nd_release(b); dp_nd_release(lab); dp_nd_release(h); dp_nd_release(a);
    dp_nd_release(loss); dp_nd_release(mom); dp_nd_release(mean); dp_nd_release(var);
}

/* A symbol bound to an executor: forward, backward, the outputs and the
   gradients read. The symbols belong to no engine (the C library's
   malloc); the executor's tables, arrays and ops come from the engine. */
static void executor_steps(dp_engine *e) {
    static const float xs[12] = {0.1f, 0.2f, -0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, 0.9f, -1.0f, 1.1f, 1.2f};
    static const float ws[6] = {0.05f, -0.1f, 0.15f, 0.2f, 0.1f, -0.05f};
    const char *k[1] = {"num_hidden"}, *v[1] = {"2"};
    dp_ctx cpu = {0, 0};
    dp_shape s43 = shape2(4, 3), s23 = shape2(2, 3), s2 = shape1(2);
    dp_symbol *sx = NULL, *sw = NULL, *sb = NULL, *fc = NULL, *t = NULL, *in[3];
    dp_ndarray *args[3] = {NULL, NULL, NULL}, *grads[3] = {NULL, NULL, NULL};
    dp_executor *ex = NULL;
    TRY(dp_sym_var("x", &sx));
    TRY(dp_sym_var("w", &sw));
    TRY(dp_sym_var("b", &sb));
    in[0] = sx; in[1] = sw; in[2] = sb;
    TRY(sym_op("FullyConnected", "fc", 3, in, 1, k, v, &fc));
    TRY(sym_op("tanh", "t", 1, &fc, 0, NULL, NULL, &t));
    TRY(dp_nd_from_host(e, &s43, DP_FLOAT32, cpu, xs, &args[0]));
    TRY(dp_nd_from_host(e, &s23, DP_FLOAT32, cpu, ws, &args[1]));
    TRY(dp_nd_zeros(e, &s2, DP_FLOAT32, cpu, &args[2]));
    TRY(dp_nd_zeros(e, &s23, DP_FLOAT32, cpu, &grads[1]));
    TRY(dp_nd_zeros(e, &s2, DP_FLOAT32, cpu, &grads[2]));
    TRY(exec_bind(e, t, cpu, 3, args, grads, NULL, &ex));
    TRY(dp_exec_forward(ex, 1));
    TRY(dp_exec_backward(ex, 0, NULL));
    TRY(check_array("executor output", dp_exec_output(ex, 0)));
    TRY(check_array("executor d w", grads[1]));
    TRY(check_array("executor d b", grads[2]));
out:
    dp_exec_destroy(ex);
    dp_sym_release(sx); dp_sym_release(sw); dp_sym_release(sb); dp_sym_release(fc); dp_sym_release(t);
    dp_nd_release(args[0]); dp_nd_release(args[1]); dp_nd_release(args[2]); dp_nd_release(grads[1]); dp_nd_release(grads[2]);
}

/* The KVStore: a store with an optimizer (momentum: states made on the first
   push), a value from a (fake) GPU, gradients on two CPU devices and a GPU
   summed into it and pulled back to a CPU device and a GPU (through its copy
   queue); a second store, on CPU 1, with no updater and nine int32 keys
   initialised in descending order (its key table grows past 8 and stays
   sorted). Every dp_kv_ call that fails must return
   DP_ERROR_OUT_OF_MEMORY with a log line (KV_TRY): allocation is all that
   can fail here. */
static long g_bad_codes;
static void kv_refused(const char *call, dp_result r) {
    const char *msg = dp_last_error();
    if (r == DP_ERROR_OUT_OF_MEMORY && msg[0]) return;
    fprintf(stderr, "  %s: %s, %s%s\n", call, dp_result_string(r), msg[0] ? "logged " : "no log line", msg);
    g_bad_codes++;
}
#define KV_TRY(call) do { dp_result r_; dp_clear_last_error(); if ((r_ = (call)) != DP_OK) { kv_refused(#call, r_); goto out; } } while (0)
static void kvstore_steps(dp_engine *e) {
    static const float w0[6] = {1, 2, 3, 4, 5, 6};
    static const float g0[6] = {0.5f, -1, 1.5f, -2, 2.5f, -3}, g1[6] = {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f};
    static const float g2[6] = {1, 1, 1, -1, -1, -1};
    dp_ctx cpu0 = {DP_DEV_CPU, 0}, cpu1 = {DP_DEV_CPU, 1}, gpu0 = {DP_DEV_GPU, 0}, gpu1 = {DP_DEV_GPU, 1};
    dp_shape s23 = shape2(2, 3), s4 = shape1(4);
    dp_kvstore *kv = NULL, *sums = NULL;
    dp_kvstore_desc sd;
    dp_optimizer_desc opt;
    dp_ndarray *w = NULL, *g[3] = {NULL, NULL, NULL}, *outs[2] = {NULL, NULL}, *iv = NULL, *twice[2], *isum = NULL;
    int step, key;
    KV_TRY(dp_kv_create(e, NULL, &kv));
    memset(&opt, 0, sizeof opt);
    opt.update = "sgd_mom_update"; opt.params[0] = dp_param_float("lr", 0.5); opt.params[1] = dp_param_float("momentum", 0.9);
    KV_TRY(dp_kv_set_optimizer(kv, &opt));
    TRY(dp_nd_from_host(e, &s23, DP_FLOAT32, gpu1, w0, &w));
    KV_TRY(dp_kv_init(kv, 3, w));                     /* copied from GPU 1 to the store's CPU 0 */
    TRY(dp_nd_from_host(e, &s23, DP_FLOAT32, cpu0, g0, &g[0]));
    TRY(dp_nd_from_host(e, &s23, DP_FLOAT32, cpu1, g1, &g[1]));
    TRY(dp_nd_from_host(e, &s23, DP_FLOAT32, gpu0, g2, &g[2]));
    TRY(dp_nd_zeros(e, &s23, DP_FLOAT32, cpu1, &outs[0]));
    TRY(dp_nd_zeros(e, &s23, DP_FLOAT32, gpu0, &outs[1]));
    for (step = 0; step < 2; step++) {
        KV_TRY(dp_kv_push(kv, 3, g, 3, step));        /* three devices' gradients, summed */
        KV_TRY(dp_kv_pull(kv, 3, outs, 2, step));     /* the update back to a CPU device and a GPU */
    }
    TRY(check_array("kv: w after 2 momentum steps, CPU 1", outs[0]));
    TRY(check_array("kv: w after 2 momentum steps, GPU 0", outs[1]));
    memset(&sd, 0, sizeof sd);
    sd.ctx = cpu1;
    KV_TRY(dp_kv_create(e, &sd, &sums));
    TRY(dp_nd_arange(e, 0, 4, 1, DP_INT32, cpu0, &iv));
    for (key = 9; key >= 1; key--) KV_TRY(dp_kv_init(sums, key, iv));
    TRY(dp_nd_zeros(e, &s4, DP_INT32, cpu0, &isum));
    twice[0] = twice[1] = iv;
    KV_TRY(dp_kv_push(sums, 5, twice, 2, 0));
    KV_TRY(dp_kv_pull(sums, 5, &isum, 1, 0));
    TRY(check_array("kv: int32 key 5 after a push of it twice", isum));
    TRY(check_array("kv: int32 key 9 as initialised", dp_kv_stored(sums, 9)));
out:
    dp_kv_destroy(kv); dp_kv_destroy(sums);
    dp_nd_release(w); dp_nd_release(g[0]); dp_nd_release(g[1]); dp_nd_release(g[2]); dp_nd_release(outs[0]); dp_nd_release(outs[1]);
    dp_nd_release(iv); dp_nd_release(isum);
}

static char g_dir[64];
static void file_steps(dp_engine *e) {
    dp_ctx cpu = {0, 0};
    dp_shape s23 = shape2(2, 3);
    dp_ndarray *a = NULL, *b = NULL, *la = NULL, *data = NULL, *label = NULL, *bd = NULL, *bl = NULL;
    dp_nd_named named[2], loaded[4], deflated[4];
    dp_npz_desc deflate;
    dp_iter_desc idesc;
    dp_iter *it = NULL;
    char path[128];
    int count = 0, deflated_count = 0, i, batch = 0;
    FILE *f;
    memset(loaded, 0, sizeof loaded);
    memset(deflated, 0, sizeof deflated);
    TRY(dp_nd_arange(e, 1, 7, 1, DP_FLOAT64, cpu, &a));
    TRY(dp_nd_full(e, &s23, DP_INT32, cpu, -3, &b));
    snprintf(path, sizeof path, "%s/a.npy", g_dir);
    TRY(dp_nd_save_npy(a, path, NULL));
    TRY(dp_nd_load_npy(e, path, cpu, &la));
    TRY(check_array("a.npy loaded", la));
    snprintf(named[0].name, sizeof named[0].name, "a"); named[0].array = a;
    snprintf(named[1].name, sizeof named[1].name, "b"); named[1].array = b;
    snprintf(path, sizeof path, "%s/ab.npz", g_dir);
    TRY(dp_nd_save_npz(path, named, 2, NULL, NULL));
    TRY(dp_nd_load_npz(e, path, cpu, loaded, 4, &count));
    check_int("npz members", count);
    for (i = 0; i < count; i++) TRY(check_array(loaded[i].name, loaded[i].array));
    snprintf(path, sizeof path, "%s/ab_deflated.npz", g_dir);   /* the deflater's and inflater's memory */
    memset(&deflate, 0, sizeof deflate);
    deflate.compress = 1;
    TRY(dp_nd_save_npz(path, named, 2, &deflate, NULL));
    TRY(dp_nd_load_npz(e, path, cpu, deflated, 4, &deflated_count));
    check_int("deflated npz members", deflated_count);
    for (i = 0; i < deflated_count; i++) TRY(check_array(deflated[i].name, deflated[i].array));
    snprintf(path, sizeof path, "%s/d.csv", g_dir);
    TRY_PTR(f = fopen(path, "w"));
    fprintf(f, "x,y,label\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n9,10,0\n");
    fclose(f);
    TRY(dp_nd_load_csv(e, path, -1, cpu, NULL, &data, &label));
    TRY(check_array("csv data", data));
    memset(&idesc, 0, sizeof idesc);
    idesc.data = data; idesc.label = label; idesc.batch_size = 2;
    TRY(dp_iter_create(&idesc, &it));
    for (;;) {
        char name[32];
        TRY(dp_iter_next(it, &bd, &bl));
        if (!bd) break;
        snprintf(name, sizeof name, "batch %d", batch);
        TRY(check_array(name, bd));
        snprintf(name, sizeof name, "batch %d labels", batch++);
        TRY(check_array(name, bl));
        dp_nd_release(bd); dp_nd_release(bl); bd = bl = NULL;
    }
    check_int("batches", batch);
out:
    dp_iter_destroy(it);
    dp_nd_release(bd); dp_nd_release(bl);
    for (i = 0; i < count; i++) dp_nd_release(loaded[i].array);
    for (i = 0; i < deflated_count; i++) dp_nd_release(deflated[i].array);
    dp_nd_release(a); dp_nd_release(b); dp_nd_release(la); dp_nd_release(data); dp_nd_release(label);
}

/* One run of the workload on an engine kind. Returns the exit status the
   parent reads (clear of the sanitizers' 1 and LeakSanitizer's 23). */
enum { RUN_PASSED = 0, RUN_NOTHING_REFUSED = 10, RUN_WRONG = 11, RUN_OUTSTANDING = 12, RUN_DESTROY = 14, RUN_BAD_CODE = 15 };
static int run_workload(dp_engine_type type) {
    dp_engine_desc desc;
    dp_engine *e = NULL;
    dp_result r;
    memset(&desc, 0, sizeof desc);
    desc.type = type; desc.cpu_worker_nthreads = 2; desc.ignore_env = 1;
    desc.allocator.alloc = fault_alloc; desc.allocator.free = fault_free;
    desc.logger.func = quiet;
    desc.gpu_backend = &g_fake_gpu;
    r = dp_engine_create(&desc, &e);
    if (r != DP_OK) check_failure("dp_engine_create", r, 0);
    else {
        dp_storage_desc sd;
        memset(&sd, 0, sizeof sd);
        sd.memory = &g_fake_gpu_memory;
        r = dp_storage_configure(e, &sd);
        if (r != DP_OK) check_failure("dp_storage_configure", r, 0);
        engine_steps(e);
        array_steps(e);
        gemm_steps(e);
        autograd_and_optimizer_steps(e);
        executor_steps(e);
        if (r == DP_OK) kvstore_steps(e);   /* it makes arrays on the (fake) GPUs */
        file_steps(e);
        r = dp_engine_destroy(e, NULL);
        if (r != DP_OK && r != DP_ERROR_OP_FAILED) { fprintf(stderr, "  destroy: %s\n", dp_result_string(r)); return RUN_DESTROY; }
    }
    if (g_wrong) return RUN_WRONG;
    if (g_bad_codes) return RUN_BAD_CODE;
    if (__atomic_load_n(&g_outstanding, __ATOMIC_RELAXED) != 0) {
        fprintf(stderr, "  %ld bytes outstanding after destroy\n", g_outstanding);
        return RUN_OUTSTANDING;
    }
    return __atomic_load_n(&g_injected, __ATOMIC_RELAXED) ? RUN_PASSED : RUN_NOTHING_REFUSED;
}

/* ---- the driver --------------------------------------------------------------- */
#define WATCHDOG_SECONDS 60
static const char *kind_name(dp_engine_type t) {
    return t == DP_ENGINE_NAIVE ? "naive" : t == DP_ENGINE_POOLED ? "pooled" : "perdevice";
}
typedef struct { long tried, crashes, hangs, leaks, wrong, destroy, codes; } tally;
/* Runs k in a child; 1 when k was past the workload's last allocation. */
static int run_one(dp_engine_type type, int mode, long k, tally *t) {
    pid_t pid;
    int status;
    fflush(NULL);
    pid = fork();
    if (pid < 0) { perror("fork"); exit(5); }
    if (pid == 0) {
        alarm(WATCHDOG_SECONDS);          /* a hang ends as SIGALRM */
        g_mode = mode; g_fail_k = k;
        exit(run_workload(type));
    }
    if (waitpid(pid, &status, 0) < 0) { perror("waitpid"); exit(5); }
    t->tried++;
    if (WIFSIGNALED(status)) {
        if (WTERMSIG(status) == SIGALRM) { t->hangs++; fprintf(stderr, "HANG %s %s k=%ld\n", kind_name(type), mode == MODE_ONLY_K ? "only-k" : "from-k", k); }
        else { t->crashes++; fprintf(stderr, "CRASH %s %s k=%ld: signal %d\n", kind_name(type), mode == MODE_ONLY_K ? "only-k" : "from-k", k, WTERMSIG(status)); }
        return 0;
    }
    switch (WEXITSTATUS(status)) {
    case RUN_PASSED: return 0;
    case RUN_NOTHING_REFUSED: return 1;
    case RUN_WRONG: t->wrong++; break;
    case RUN_OUTSTANDING: t->leaks++; break;
    case RUN_DESTROY: t->destroy++; break;
    case RUN_BAD_CODE: t->codes++; break;
    case 23: t->leaks++; break;      /* LeakSanitizer */
    default: t->crashes++; break;    /* a sanitizer's report */
    }
    fprintf(stderr, "FAIL %s %s k=%ld: exit %d\n", kind_name(type), mode == MODE_ONLY_K ? "only-k" : "from-k", k, WEXITSTATUS(status));
    return 0;
}

int main(int argc, char **argv) {
    static const dp_engine_type all[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    char which[32];
    long max_k = argc > 2 ? atol(argv[2]) : 100000;
    int passed = 0, failed = 0, i, mode, first_mode = MODE_ONLY_K, last_mode = MODE_FROM_K;
    char *slash;
    snprintf(which, sizeof which, "%s", argc > 1 ? argv[1] : "all");
    if ((slash = strchr(which, '/')) != NULL) {   /* KIND/only or KIND/from: that mode's sweep */
        if (strcmp(slash + 1, "only") == 0) last_mode = MODE_ONLY_K;
        else if (strcmp(slash + 1, "from") == 0) first_mode = MODE_FROM_K;
        else { fprintf(stderr, "faults: unknown mode '%s' (only or from)\n", slash + 1); return 1; }
        *slash = 0;
    }
    if (strcmp(which, "all") != 0 && strcmp(which, "naive") != 0 && strcmp(which, "pooled") != 0 && strcmp(which, "perdevice") != 0) {
        fprintf(stderr, "faults: unknown engine kind '%s'\n", which);
        return 1;
    }
    fake_gpu_setup();
    snprintf(g_dir, sizeof g_dir, "/tmp/depeng_faults_%ld", (long)getpid());
    if (mkdir(g_dir, 0700) != 0) { perror(g_dir); return 1; }
    if (argc > 3) {   /* faults KIND K only|from: one run, in this process (for a debugger) */
        for (i = 0; i < 3 && strcmp(which, kind_name(all[i])) != 0; i++) {}
        if (i == 3) { fprintf(stderr, "faults: unknown engine kind '%s'\n", which); return 1; }
        g_recording = 1; run_workload(all[i]); g_recording = 0;
        g_allocs = 0; g_injected = 0; g_outstanding = 0;
        g_mode = strcmp(argv[3], "from") == 0 ? MODE_FROM_K : MODE_ONLY_K; g_fail_k = atol(argv[2]);
        i = run_workload(all[i]);
        printf("exit status %d\n", i);
        return i;
    }
    for (i = 0; i < 3; i++) {
        dp_engine_type type = all[i];
        int ref;
        long ref_allocs;
        if (strcmp(which, "all") != 0 && strcmp(which, kind_name(type)) != 0) continue;
        /* the reference: no failures, every value recorded */
        g_recording = 1; g_nref = 0; g_mode = MODE_NONE; g_allocs = 0;
        ref = run_workload(type);
        ref_allocs = g_allocs;
        g_recording = 0;
        if (ref != RUN_NOTHING_REFUSED || g_nref < 20) {
            printf("FAIL %s: the reference run did not pass (status %d, %d values read)\n", kind_name(type), ref, g_nref);
            failed++;
            continue;
        }
        for (mode = first_mode; mode <= last_mode; mode++) {
            tally t;
            long k;
            int ok;
            memset(&t, 0, sizeof t);
            g_allocs = 0; g_injected = 0; g_outstanding = 0;
            /* on the threaded engines the count varies from run to run (a
               worker's lazy allocations): every k the reference reached is
               tried, then on until a run refuses nothing */
            for (k = 1; k <= max_k; k++)
                if (run_one(type, mode, k, &t) && k > ref_allocs) break;
            ok = !t.crashes && !t.hangs && !t.leaks && !t.wrong && !t.destroy && !t.codes && k <= max_k;
            printf("%s %s %s: k = 1..%ld (%ld allocations in the reference run): %ld crashes, %ld hangs, %ld leaks, "
                   "%ld lost failures, %ld bad destroys, %ld wrong codes%s\n", ok ? "PASS" : "FAIL", kind_name(type),
                   mode == MODE_ONLY_K ? "only-k" : "from-k", t.tried, ref_allocs, t.crashes, t.hangs, t.leaks, t.wrong, t.destroy, t.codes,
                   k > max_k ? " (stopped at max_k)" : "");
            if (ok) passed++; else failed++;
        }
    }
    {   /* the workload's files */
        static const char *names[] = {"a.npy", "ab.npz", "d.csv"};
        char path[128];
        for (i = 0; i < 3; i++) { snprintf(path, sizeof path, "%s/%s", g_dir, names[i]); remove(path); }
        rmdir(g_dir);
    }
    printf("faults: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
