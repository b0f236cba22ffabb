/* depeng NDArray layer tests: dtypes and shapes, storage, creation, host
   I/O, views, copies (also to a fake GPU whose memory is host memory), the
   release order, failures, bad input, and .npy / .npz files. Every test runs
   on all three engine kinds; the last line is "N passed, M failed". */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/test_common.h"
#include "tests/impl/test_hook.h"
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <unistd.h>
#include <sys/stat.h>



/* A fake GPU: device memory is host memory, copies are memcpy. It counts
   the copies so a test can see that they ran on a GPU copy worker. */
static int g_gpu_copies, g_gpu_live_blocks;
static int fake_count(void *u) { (void)u; return 1; }
static int fake_stream_create(int dev, int is_copy, void **out, void *u) { (void)dev; (void)is_copy; (void)u; *out = (void *)&g_gpu_copies; return 0; }
static int fake_stream_destroy(int dev, void *s, void *u) { (void)dev; (void)s; (void)u; return 0; }
static int fake_sync(int dev, void *s, void *u) { (void)dev; (void)s; (void)u; return 0; }
static const char *fake_err(int e, void *u) { (void)e; (void)u; return "fake error"; }
static int fake_alloc(int dev, size_t size, void **out, void *u) {
    (void)dev; (void)u;
    *out = malloc(size);
    if (*out) __atomic_fetch_add(&g_gpu_live_blocks, 1, __ATOMIC_RELAXED);
    return *out ? 0 : 2;
}
static int fake_free(int dev, void *p, void *u) { (void)dev; (void)u; free(p); __atomic_fetch_sub(&g_gpu_live_blocks, 1, __ATOMIC_RELAXED); return 0; }
static int fake_copy(void *dst, const void *src, size_t n, int kind, int dev, void *stream, void *u) {
    (void)kind; (void)dev; (void)stream; (void)u;
    memcpy(dst, src, n);
    __atomic_fetch_add(&g_gpu_copies, 1, __ATOMIC_RELAXED);
    return 0;
}
static dp_device_backend g_fake_gpu;
static dp_memory_backend g_fake_memory;   /* the fake GPU's memory: host memory */

static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
static dp_engine *make_engine(dp_engine_type type, dp_storage_kind storage, int with_gpu) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
    d.logger.func = quiet_logger;
    if (with_gpu) d.gpu_backend = &g_fake_gpu;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    if (storage != DP_STORAGE_DEFAULT || with_gpu) {
        dp_storage_desc sd;
        memset(&sd, 0, sizeof sd);
        sd.kind = storage; sd.memory = with_gpu ? &g_fake_memory : NULL;
        if (dp_storage_configure(e, &sd) != DP_OK) { fprintf(stderr, "storage configure failed\n"); exit(1); }
    }
    return e;
}
static const dp_ctx CPU0 = {DP_DEV_CPU, 0};

/* ---- dtypes and shapes --------------------------------------------------- */
static void test_dtypes_shapes(void) {
    dp_shape s = {2, {3, 4}}, scalar = {0, {0}}, empty = {3, {2, 0, 5}}, bad = {9, {1}}, neg = {1, {-1}};
    CHECK(dp_dtype_size(DP_FLOAT32) == 4 && dp_dtype_size(DP_FLOAT64) == 8 && dp_dtype_size(DP_INT32) == 4);
    CHECK(dp_dtype_size(DP_INT64) == 8 && dp_dtype_size(DP_UINT8) == 1 && dp_dtype_size((dp_dtype)9) == 0);
    CHECK(strcmp(dp_dtype_name(DP_UINT8), "uint8") == 0 && strcmp(dp_dtype_name((dp_dtype)-1), "unknown") == 0);
    CHECK(dp_shape_size(&s) == 12 && dp_shape_size(&scalar) == 1 && dp_shape_size(&empty) == 0);
    CHECK(dp_shape_size(&bad) == -1 && dp_shape_size(&neg) == -1 && dp_shape_size(NULL) == -1);
    {
        dp_shape huge = {4, {1 << 30, 1 << 30, 1 << 30, 1 << 30}};
        CHECK(dp_shape_size(&huge) == -1);   /* overflow */
    }
}

/* ---- creation, filled on the engine, read back ---------------------------- */
/* an IEEE half's value: written out here because the header's own
   conversion is private to the implementation, which this test links */
static double half_value(uint16_t h) {
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}
/* element i of a host buffer of dtype dt, as double */
static double elem(const void *p, dp_dtype dt, int64_t i) {
    switch (dt) {
    case DP_FLOAT32: return ((const float *)p)[i];
    case DP_FLOAT64: return ((const double *)p)[i];
    case DP_INT32: return ((const int32_t *)p)[i];
    case DP_INT64: return (double)((const int64_t *)p)[i];
    case DP_UINT8: return ((const uint8_t *)p)[i];
    case DP_FLOAT16: return half_value(((const uint16_t *)p)[i]);
    case DP_BOOL: return ((const uint8_t *)p)[i] != 0;
    case DP_INT8: return ((const int8_t *)p)[i];
    default: return NAN;
    }
}
static int all_equal(dp_ndarray *a, double value, double step) {
    size_t bytes = dp_nd_bytes(a);
    int64_t n = dp_shape_size(dp_nd_shape(a)), i;
    void *buf = malloc(bytes ? bytes : 1);
    int ok = buf && dp_nd_read(a, buf, bytes, NULL) == DP_OK;
    for (i = 0; ok && i < n; i++) {
        double want = value + step * (double)i;
        ok = elem(buf, dp_nd_dtype(a), i) == (dp_nd_dtype(a) == DP_BOOL ? want != 0 : want);   /* a bool holds 0 or 1 */
    }
    free(buf);
    return ok;
}
static void test_create(void) {
    int k, t;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        for (t = 0; t < DP_DTYPE_COUNT; t++) {
            dp_dtype dt = (dp_dtype)t;
            dp_shape s = {3, {2, 3, 4}}, scalar = {0, {0}}, empty = {2, {0, 7}};
            dp_ndarray *z, *o, *f, *r, *sc, *em, *e1;
            CHECK(dp_nd_zeros(e, &s, dt, CPU0, &z) == DP_OK && all_equal(z, 0, 0));
            CHECK(dp_nd_ones(e, &s, dt, CPU0, &o) == DP_OK && all_equal(o, 1, 0));
            CHECK(dp_nd_full(e, &s, dt, CPU0, 7, &f) == DP_OK && all_equal(f, 7, 0));
            CHECK(dp_nd_arange(e, 2, 12, 2, dt, CPU0, &r) == DP_OK && dp_nd_shape(r)->ndim == 1 && dp_nd_shape(r)->dims[0] == 5);
            CHECK(all_equal(r, 2, 2));
            CHECK(dp_nd_full(e, &scalar, dt, CPU0, 3, &sc) == DP_OK && dp_nd_bytes(sc) == dp_dtype_size(dt) && all_equal(sc, 3, 0));
            CHECK(dp_nd_zeros(e, &empty, dt, CPU0, &em) == DP_OK && dp_nd_bytes(em) == 0 && all_equal(em, 0, 0));
            CHECK(dp_nd_empty(e, &s, dt, CPU0, &e1) == DP_OK && dp_nd_bytes(e1) == 24 * dp_dtype_size(dt));
            CHECK(dp_nd_dtype(z) == dt && dp_nd_ctx(z).dev_type == DP_DEV_CPU && dp_nd_engine(z) == e && dp_nd_var(z).id != 0);
            dp_nd_release(z); dp_nd_release(o); dp_nd_release(f); dp_nd_release(r);
            dp_nd_release(sc); dp_nd_release(em); dp_nd_release(e1);
        }
        {   /* arange: negative step, fractional length, empty */
            dp_ndarray *a, *b, *c;
            CHECK(dp_nd_arange(e, 5, 0, -2, DP_FLOAT64, CPU0, &a) == DP_OK && dp_nd_shape(a)->dims[0] == 3 && all_equal(a, 5, -2));
            CHECK(dp_nd_arange(e, 0, 1, 0.3, DP_FLOAT64, CPU0, &b) == DP_OK && dp_nd_shape(b)->dims[0] == 4);
            CHECK(dp_nd_arange(e, 3, 3, 1, DP_INT32, CPU0, &c) == DP_OK && dp_nd_shape(c)->dims[0] == 0);
            dp_nd_release(a); dp_nd_release(b); dp_nd_release(c);
        }
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- host I/O and a user operation on arrays --------------------------- */
static int double_op(dp_run_ctx *rc, void *arg) {
    dp_ndarray **io = (dp_ndarray **)arg;          /* io[0] read, io[1] written */
    const float *x = (const float *)dp_nd_data(io[0]);
    float *y = (float *)dp_nd_data(io[1]);
    int64_t i, n = dp_shape_size(dp_nd_shape(io[0]));
    (void)rc;
    for (i = 0; i < n; i++) y[i] = 2 * x[i];
    return 0;
}
static void test_host_io_and_ops(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        float in[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0}, back[6];
        int64_t big[4] = {1, -2, 3000000000LL, -4}, bigout[4];
        uint8_t bytes[3] = {0, 128, 255}, bytesout[3];
        dp_shape s = {2, {2, 3}}, s4 = {1, {4}}, s3 = {1, {3}};
        dp_ndarray *a, *b, *c, *d, *io[2];
        dp_push_desc p;
        dp_var rv, wv;
        CHECK(dp_nd_from_host(e, &s, DP_FLOAT32, CPU0, in, &a) == DP_OK);
        in[0] = 99;                                   /* the array has its own copy */
        CHECK(dp_nd_read(a, out, sizeof out, NULL) == DP_OK && out[0] == 1 && out[5] == 6);
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &b) == DP_OK);
        io[0] = a; io[1] = b;
        rv = dp_nd_var(a); wv = dp_nd_var(b);
        memset(&p, 0, sizeof p);
        p.fn = double_op; p.arg = io; p.reads = &rv; p.num_reads = 1; p.writes = &wv; p.num_writes = 1; p.name = "double";
        CHECK(dp_push(e, &p) == DP_OK);
        CHECK(dp_nd_read(b, back, sizeof back, NULL) == DP_OK && back[0] == 2 && back[5] == 12);
        CHECK(dp_nd_write(b, in, sizeof in, NULL) == DP_OK && dp_nd_read(b, back, sizeof back, NULL) == DP_OK && back[0] == 99);
        CHECK(dp_nd_wait_to_read(b, NULL) == DP_OK && dp_nd_wait_to_write(b, NULL) == DP_OK);
        CHECK(dp_nd_from_host(e, &s4, DP_INT64, CPU0, big, &c) == DP_OK && dp_nd_read(c, bigout, sizeof bigout, NULL) == DP_OK);
        CHECK(memcmp(big, bigout, sizeof big) == 0);
        CHECK(dp_nd_from_host(e, &s3, DP_UINT8, CPU0, bytes, &d) == DP_OK && dp_nd_read(d, bytesout, 3, NULL) == DP_OK);
        CHECK(memcmp(bytes, bytesout, 3) == 0);
        g_last_item = 0;
        CHECK(dp_nd_read(a, out, sizeof out - 1, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
        CHECK(dp_nd_read(a, NULL, sizeof out, NULL) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_nd_read(NULL, out, sizeof out, NULL) == DP_ERROR_INVALID_ARGS);
        dp_nd_release(a); dp_nd_release(b); dp_nd_release(c); dp_nd_release(d);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- views share storage and the variable ----------------------------------- */
static void test_views(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        dp_shape s = {2, {4, 3}}, flat = {1, {12}}, wrong = {1, {11}}, s23 = {2, {2, 3}};
        dp_ndarray *a, *r, *sl, *sl2;
        int32_t v[12], rows[6], ones[6] = {1, 1, 1, 1, 1, 1};
        int i;
        CHECK(dp_nd_arange(e, 0, 12, 1, DP_INT32, CPU0, &a) == DP_OK);
        CHECK(dp_nd_reshape(a, &s, &r) == DP_OK && dp_nd_shape(r)->ndim == 2 && dp_nd_var(r).id == dp_nd_var(a).id);
        CHECK(dp_nd_slice(r, 1, 3, &sl) == DP_OK && dp_nd_shape(sl)->dims[0] == 2 && dp_nd_shape(sl)->dims[1] == 3);
        CHECK(dp_nd_read(sl, rows, sizeof rows, NULL) == DP_OK && rows[0] == 3 && rows[5] == 8);
        /* a write through the view is a write to the parent, ordered with it */
        CHECK(dp_nd_write(sl, ones, sizeof ones, NULL) == DP_OK);
        CHECK(dp_nd_read(a, v, sizeof v, NULL) == DP_OK);
        for (i = 0; i < 12; i++) CHECK(v[i] == ((i >= 3 && i < 9) ? 1 : i));
        /* the views outlive their parent: they hold the chunk */
        dp_nd_release(a);
        dp_nd_release(r);
        CHECK(dp_nd_reshape(sl, &s23, &sl2) == DP_OK && dp_nd_read(sl2, rows, sizeof rows, NULL) == DP_OK && rows[0] == 1);
        g_last_item = 0;
        CHECK(dp_nd_reshape(sl, &wrong, &r) == DP_ERROR_INVALID_ARGS && r == NULL && g_last_item == DP_LOGITEM_ND_ARGS);
        CHECK(dp_nd_reshape(sl, &flat, &r) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_nd_slice(sl, 1, 3, &r) == DP_ERROR_INVALID_ARGS && dp_nd_slice(sl, -1, 1, &r) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_nd_slice(sl, 2, 1, &r) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_nd_slice(sl, 2, 2, &r) == DP_OK && dp_nd_bytes(r) == 0);
        dp_nd_release(r);
        dp_nd_release(sl); dp_nd_release(sl2);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- storage: pooled reuse, plain, stats, release order ------------------- */
static volatile int g_gate_open;
static int slow_reader(dp_run_ctx *rc, void *arg) {
    struct timespec ts = {0, 1000000};
    (void)rc;
    while (!__atomic_load_n(&g_gate_open, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL);
    *(int *)arg = 1;
    return 0;
}
/* ---- dp_storage_release_pool frees the temporary workspace ---------------
   A workspace grown to 1 MiB is given back by dp_storage_release_pool once
   the ops before it that use it are done (one holding it while the call is
   made keeps it until it finishes), and the next op that asks for one gets
   a new one. Before, the workspace stayed until dp_engine_destroy. */
#define TEMP_BYTES ((size_t)1 << 20)
typedef struct { dp_engine *e; int hold, has, ok; } temp_user;
static int temp_user_op(dp_run_ctx *rc, void *arg) {
    temp_user *t = (temp_user *)arg;
    unsigned char *p = (unsigned char *)dp_temp_space(rc->engine, CPU0, TEMP_BYTES);
    struct timespec ts = {0, 1000000};
    if (!p) return 0;
    memset(p, 0x5a, TEMP_BYTES);
    __atomic_store_n(&t->has, 1, __ATOMIC_RELEASE);
    while (t->hold && !__atomic_load_n(&g_gate_open, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL);
    t->ok = p[0] == 0x5a && p[TEMP_BYTES - 1] == 0x5a;   /* still ours: not freed under us */
    return 0;
}
static void test_release_pool_frees_temp_space(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine_desc d;
        dp_engine *e = NULL;
        dp_push_desc p;
        dp_var tv;
        temp_user t;
        long with_temp, without_temp;
        memset(&d, 0, sizeof d);
        d.type = kinds[k]; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = quiet_logger;
        d.allocator.alloc = failing_alloc; d.allocator.free = failing_free;
        CHECK(dp_engine_create(&d, &e) == DP_OK);
        if (!e) continue;
        tv = dp_temp_space_var(e, CPU0);
        memset(&t, 0, sizeof t); t.e = e;
        memset(&p, 0, sizeof p);
        p.fn = temp_user_op; p.arg = &t; p.writes = &tv; p.num_writes = 1;
        CHECK(dp_push(e, &p) == DP_OK && dp_wait_all(e, NULL) == DP_OK && t.ok);
        CHECK(dp_storage_release_pool(e, CPU0) == DP_OK);             /* warm: the release op's block */
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        t.ok = 0;
        CHECK(dp_push(e, &p) == DP_OK && dp_wait_all(e, NULL) == DP_OK && t.ok);   /* made anew */
        with_temp = __atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE);
        CHECK(dp_storage_release_pool(e, CPU0) == DP_OK);
        CHECK(dp_wait_var(e, tv, NULL) == DP_OK);
        without_temp = __atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE);
        CHECK(with_temp - without_temp >= (long)TEMP_BYTES);
        if (kinds[k] != DP_ENGINE_NAIVE) {   /* a holder keeps it until it finishes */
            g_gate_open = 0;
            t.ok = 0; t.hold = 1; t.has = 0;
            CHECK(dp_push(e, &p) == DP_OK);
            while (!__atomic_load_n(&t.has, __ATOMIC_ACQUIRE)) sched_yield();   /* it holds the workspace */
            CHECK(dp_storage_release_pool(e, CPU0) == DP_OK);
            CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) - without_temp >= (long)TEMP_BYTES);
            __atomic_store_n(&g_gate_open, 1, __ATOMIC_RELEASE);
            CHECK(dp_wait_var(e, tv, NULL) == DP_OK && t.ok);
            CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) - without_temp < (long)TEMP_BYTES);
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    }
}

static void test_storage(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        dp_shape s = {1, {1000}};
        dp_storage_stats st;
        dp_ndarray *a, *b;
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &a) == DP_OK);
        CHECK(((uintptr_t)dp_nd_data(a) & 63) == 0);                 /* 64-byte aligned */
        CHECK(dp_storage_stats_get(e, CPU0, &st) == DP_OK && st.bytes_in_use == 4096 && st.bytes_pooled == 0);
        dp_nd_release(a);
        CHECK(dp_wait_all(e, NULL) == DP_OK);                        /* the free is an engine op */
        CHECK(dp_storage_stats_get(e, CPU0, &st) == DP_OK && st.bytes_in_use == 0 && st.bytes_pooled == 4096);
        CHECK(dp_nd_ones(e, &s, DP_INT32, CPU0, &b) == DP_OK);       /* same class: reused */
        CHECK(dp_storage_stats_get(e, CPU0, &st) == DP_OK && st.pool_hits == 1 && st.allocations == 2 && st.bytes_pooled == 0);
        dp_nd_release(b);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_storage_release_pool(e, CPU0) == DP_OK);
        CHECK(dp_storage_stats_get(e, CPU0, &st) == DP_OK && st.bytes_pooled == 0 && st.bytes_in_use == 0);
        if (kinds[k] != DP_ENGINE_NAIVE) {   /* naive runs ops inline: nothing is pending */
            /* released while an op still reads it: the memory is not reused
               (nor its bytes counted free) until that op has finished */
            int done = 0;
            dp_var rv;
            dp_push_desc p;
            g_gate_open = 0;
            CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &a) == DP_OK);
            CHECK(dp_nd_wait_to_read(a, NULL) == DP_OK);
            rv = dp_nd_var(a);
            memset(&p, 0, sizeof p);
            p.fn = slow_reader; p.arg = &done; p.reads = &rv; p.num_reads = 1;
            CHECK(dp_push(e, &p) == DP_OK);
            dp_nd_release(a);
            CHECK(dp_storage_stats_get(e, CPU0, &st) == DP_OK && st.bytes_in_use == 4096);
            __atomic_store_n(&g_gate_open, 1, __ATOMIC_RELEASE);
            CHECK(dp_wait_all(e, NULL) == DP_OK && done == 1);
            CHECK(dp_storage_stats_get(e, CPU0, &st) == DP_OK && st.bytes_in_use == 0);
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        /* plain storage keeps nothing */
        e = make_engine(kinds[k], DP_STORAGE_PLAIN, 0);
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &a) == DP_OK);
        dp_nd_release(a);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_storage_stats_get(e, CPU0, &st) == DP_OK && st.bytes_pooled == 0 && st.bytes_in_use == 0 && st.allocations == 1);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- copies: CPU to CPU, to and from a (fake) GPU ------------------------- */
static void test_copies(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 1);
        dp_ctx cpu1 = {DP_DEV_CPU, 1}, gpu0 = {DP_DEV_GPU, 0}, gpu5 = {DP_DEV_GPU, 5};
        dp_shape s = {1, {5}};
        double x[5] = {1, 2, 3, 4, 5}, y[5];
        dp_ndarray *a, *b, *g, *h, *f;
        dp_storage_stats st;
        g_gpu_copies = 0;
        CHECK(dp_nd_from_host(e, &s, DP_FLOAT64, CPU0, x, &a) == DP_OK);
        CHECK(dp_nd_copy_to(a, cpu1, &b) == DP_OK && dp_nd_ctx(b).dev_id == 1);
        CHECK(dp_nd_read(b, y, sizeof y, NULL) == DP_OK && memcmp(x, y, sizeof x) == 0);
        CHECK(dp_nd_copy_to(b, gpu0, &g) == DP_OK && dp_nd_ctx(g).dev_type == DP_DEV_GPU);
        CHECK(dp_nd_copy_to(g, CPU0, &h) == DP_OK);
        memset(y, 0, sizeof y);
        CHECK(dp_nd_read(h, y, sizeof y, NULL) == DP_OK && memcmp(x, y, sizeof x) == 0);
        CHECK(dp_nd_full(e, &s, DP_FLOAT64, gpu0, 2.5, &f) == DP_OK);          /* filled through mem_copy */
        CHECK(dp_nd_read(f, y, sizeof y, NULL) == DP_OK && y[0] == 2.5 && y[4] == 2.5);
        CHECK(g_gpu_copies >= 4);
        CHECK(dp_storage_stats_get(e, gpu0, &st) == DP_OK && st.bytes_in_use == 2 * 64);
        g_last_item = 0;
        {
            dp_ndarray *none = a;
            CHECK(dp_nd_copy_to(a, gpu5, &none) == DP_ERROR_BAD_CONTEXT && none == NULL && g_last_item == DP_LOGITEM_BAD_CONTEXT);
        }
        dp_nd_release(a); dp_nd_release(b); dp_nd_release(g); dp_nd_release(h); dp_nd_release(f);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(g_gpu_live_blocks == 0);         /* pooled GPU blocks went back at destroy */
    }
    {   /* a GPU without memory functions for arrays cannot hold arrays, and
           storage is configured before the first array or not at all */
        dp_memory_backend no_mem = g_fake_memory;
        dp_storage_desc sd;
        dp_engine_desc d;
        dp_engine *e = NULL;
        dp_ctx gpu0 = {DP_DEV_GPU, 0};
        dp_shape s = {1, {5}};
        dp_ndarray *a = (dp_ndarray *)&d, *b = NULL;
        no_mem.mem_alloc = NULL;
        memset(&d, 0, sizeof d);
        d.ignore_env = 1; d.logger.func = quiet_logger; d.gpu_backend = &g_fake_gpu;
        CHECK(dp_engine_create(&d, &e) == DP_OK);
        memset(&sd, 0, sizeof sd);
        sd.memory = &no_mem;
        CHECK(dp_storage_configure(e, &sd) == DP_OK);
        sd.kind = (dp_storage_kind)7;
        CHECK(dp_storage_configure(e, &sd) == DP_ERROR_INVALID_ARGS && dp_storage_configure(NULL, &sd) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_storage_configure(e, NULL) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &b) == DP_OK);
        sd.kind = DP_STORAGE_PLAIN;
        g_last_item = 0;
        CHECK(dp_storage_configure(e, &sd) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);   /* too late */
        dp_nd_release(b);
        g_last_item = 0;
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, gpu0, &a) == DP_ERROR_BAD_CONTEXT && a == NULL && g_last_item == DP_LOGITEM_BAD_CONTEXT);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- a failure reaches whoever reads the array, through copies ---------- */
static int failing_writer(dp_run_ctx *rc, void *arg) { (void)arg; dp_set_error(rc, "kernel failed"); return 3; }
static void test_failures(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 1);
        dp_ctx cpu1 = {DP_DEV_CPU, 1}, gpu0 = {DP_DEV_GPU, 0};
        dp_shape s = {1, {4}};
        float y[4];
        dp_ndarray *a, *b, *g, *h;
        dp_var v;
        dp_failure f;
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &a) == DP_OK);
        v = dp_nd_var(a);
        CHECK(dp_push_sync(e, failing_writer, NULL, NULL, 0, &v, 1) == DP_OK);
        CHECK(dp_nd_copy_to(a, cpu1, &b) == DP_OK);          /* NO_SKIP op on failed input */
        CHECK(dp_nd_copy_to(a, gpu0, &g) == DP_OK);          /* skipped copy + cleanup op */
        CHECK(dp_nd_copy_to(g, CPU0, &h) == DP_OK);
        memset(&f, 0, sizeof f);
        CHECK(dp_nd_read(b, y, sizeof y, &f) == DP_ERROR_OP_FAILED && f.status == 3 && strcmp(f.message, "kernel failed") == 0);
        memset(&f, 0, sizeof f);
        CHECK(dp_nd_read(h, y, sizeof y, &f) == DP_ERROR_OP_FAILED && f.status == 3);
        dp_wait_all(e, NULL);
        dp_nd_release(a); dp_nd_release(b); dp_nd_release(g); dp_nd_release(h);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- bad input: refused before anything is pushed, with ND_ARGS --------- */
static void test_bad_input(void) {
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, DP_STORAGE_DEFAULT, 0);
    dp_shape ok = {1, {4}}, nine = {9, {1, 1, 1, 1, 1, 1, 1, 1}}, neg = {2, {2, -3}};
    dp_ctx bad_ctx = {77, 0}, gpu0 = {DP_DEV_GPU, 0};
    dp_ndarray *a = NULL;
    dp_engine_stats st;
    float x[4] = {0};
    g_last_item = 0;
    CHECK(dp_nd_zeros(e, &nine, DP_FLOAT32, CPU0, &a) == DP_ERROR_INVALID_ARGS && a == NULL && g_last_item == DP_LOGITEM_ND_ARGS);
    CHECK(dp_nd_zeros(e, &neg, DP_FLOAT32, CPU0, &a) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_zeros(e, NULL, DP_FLOAT32, CPU0, &a) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_zeros(e, &ok, (dp_dtype)17, CPU0, &a) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_zeros(e, &ok, DP_FLOAT32, CPU0, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_zeros(NULL, &ok, DP_FLOAT32, CPU0, &a) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_zeros(e, &ok, DP_FLOAT32, bad_ctx, &a) == DP_ERROR_BAD_CONTEXT);
    CHECK(dp_nd_zeros(e, &ok, DP_FLOAT32, gpu0, &a) == DP_ERROR_BAD_CONTEXT);     /* no GPU backend */
    CHECK(dp_nd_from_host(e, &ok, DP_FLOAT32, CPU0, NULL, &a) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_arange(e, 0, 1, 0, DP_FLOAT32, CPU0, &a) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_arange(e, 0, 10, -1, DP_FLOAT32, CPU0, &a) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_write(NULL, x, sizeof x, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_copy_to(NULL, CPU0, &a) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_nd_reshape(NULL, &ok, &a) == DP_ERROR_INVALID_ARGS && dp_nd_slice(NULL, 0, 1, &a) == DP_ERROR_INVALID_ARGS);
    dp_nd_release(NULL);
    CHECK(dp_nd_shape(NULL) == NULL && dp_nd_data(NULL) == NULL && dp_nd_bytes(NULL) == 0);
    dp_engine_stats_get(e, &st);
    CHECK(st.pushed == 0 && st.live_vars == 0);          /* nothing was made or pushed */
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- resources: the generator and the temporary workspace ---------------- */
static void draw(dp_engine *e, uint64_t seed, double *u, double *nrm, int n) {
    dp_shape s = {1, {n}};
    dp_ndarray *a, *b;
    CHECK(dp_random_seed(e, CPU0, seed) == DP_OK);
    CHECK(dp_nd_random_uniform(e, -1, 3, &s, DP_FLOAT64, CPU0, &a) == DP_OK);
    CHECK(dp_nd_random_normal(e, 5, 2, &s, DP_FLOAT64, CPU0, &b) == DP_OK);
    CHECK(dp_nd_read(a, u, sizeof(double) * (size_t)n, NULL) == DP_OK && dp_nd_read(b, nrm, sizeof(double) * (size_t)n, NULL) == DP_OK);
    dp_nd_release(a); dp_nd_release(b);
}
typedef struct { dp_engine *e; uint64_t bits[3]; int temp_ok; } rng_user;
static int rng_user_op(dp_run_ctx *rc, void *arg) {
    rng_user *u = (rng_user *)arg;
    unsigned char *t = (unsigned char *)dp_temp_space(u->e, rc->ctx, 1000);
    int i;
    for (i = 0; i < 3; i++) u->bits[i] = dp_random_next(u->e, rc->ctx);
    u->temp_ok = t && ((uintptr_t)t & 63) == 0;
    if (t) memset(t, 0xab, 1000);
    return 0;
}
#define NDRAW 20000
static void test_resources(void) {
    static double u[3][NDRAW], nrm[3][NDRAW], u2[NDRAW], n2[NDRAW];
    int k, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        double sum = 0, sum2 = 0, lo = 1e9, hi = -1e9;
        rng_user ru;
        dp_var w[2];
        dp_push_desc p;
        draw(e, 42, u[k], nrm[k], NDRAW);
        draw(e, 42, u2, n2, NDRAW);                        /* same seed: same draws */
        CHECK(memcmp(u[k], u2, sizeof u2) == 0 && memcmp(nrm[k], n2, sizeof n2) == 0);
        draw(e, 43, u2, n2, NDRAW);
        CHECK(memcmp(u[k], u2, sizeof u2) != 0);
        for (i = 0; i < NDRAW; i++) { if (u[k][i] < lo) lo = u[k][i]; if (u[k][i] > hi) hi = u[k][i]; sum += u[k][i]; }
        CHECK(lo >= -1 && hi < 3 && sum / NDRAW > 0.95 && sum / NDRAW < 1.05);
        for (sum = 0, i = 0; i < NDRAW; i++) { sum += nrm[k][i]; sum2 += nrm[k][i] * nrm[k][i]; }
        sum /= NDRAW; sum2 = sum2 / NDRAW - sum * sum;
        CHECK(sum > 4.95 && sum < 5.05 && sum2 > 3.9 && sum2 < 4.1);   /* mean 5, variance 4 */
        /* an operation of the user's draws too, and uses the workspace */
        memset(&ru, 0, sizeof ru);
        ru.e = e;
        w[0] = dp_random_var(e, CPU0); w[1] = dp_temp_space_var(e, CPU0);
        CHECK(w[0].id != 0 && w[1].id != 0 && w[0].id != w[1].id);
        memset(&p, 0, sizeof p);
        p.fn = rng_user_op; p.arg = &ru; p.writes = w; p.num_writes = 2;
        CHECK(dp_random_seed(e, CPU0, 7) == DP_OK && dp_push(e, &p) == DP_OK && dp_wait_all(e, NULL) == DP_OK);
        CHECK(ru.temp_ok && ru.bits[0] != ru.bits[1]);
        {
            dp_ctx gpu = {DP_DEV_GPU, 0};
            dp_shape s = {1, {3}};
            dp_ndarray *a = NULL;
            g_last_item = 0;
            CHECK(dp_random_seed(e, gpu, 1) == DP_ERROR_BAD_CONTEXT && dp_random_var(e, gpu).id == 0);
            CHECK(dp_nd_random_uniform(e, 2, 1, &s, DP_FLOAT32, CPU0, &a) == DP_ERROR_INVALID_ARGS && a == NULL);
            CHECK(dp_nd_random_normal(e, 0, -1, &s, DP_FLOAT32, CPU0, &a) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
    /* the same seed gives the same draws on every engine kind */
    CHECK(memcmp(u[0], u[1], sizeof u[0]) == 0 && memcmp(u[0], u[2], sizeof u[0]) == 0);
    CHECK(memcmp(nrm[0], nrm[1], sizeof nrm[0]) == 0 && memcmp(nrm[0], nrm[2], sizeof nrm[0]) == 0);
}

/* ---- .npy and .npz files --------------------------------------------------- */
static const char *tmp_path(const char *leaf, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/depeng_test_%d_%s", test_temp_dir(), (int)getpid(), leaf);
    return buf;
}
static int same_array(dp_ndarray *a, dp_ndarray *b) {
    size_t n = dp_nd_bytes(a);
    void *x = malloc(n ? n : 1), *y = malloc(n ? n : 1);
    const dp_shape *sa = dp_nd_shape(a), *sb = dp_nd_shape(b);
    int ok = x && y && dp_nd_dtype(a) == dp_nd_dtype(b) && sa->ndim == sb->ndim && n == dp_nd_bytes(b)
             && memcmp(sa->dims, sb->dims, sizeof(int64_t) * (size_t)sa->ndim) == 0
             && dp_nd_read(a, x, n, NULL) == DP_OK && dp_nd_read(b, y, n, NULL) == DP_OK && memcmp(x, y, n) == 0;
    free(x); free(y);
    return ok;
}
static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) { if (fwrite(p, 1, n, f) != n) fprintf(stderr, "short write\n"); fclose(f); }
}
static void test_files(void) {
    char p1[128], p2[128];
    int k, t;
    tmp_path("a.npy", p1, sizeof p1);
    tmp_path("b.npz", p2, sizeof p2);
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        for (t = 0; t < DP_DTYPE_COUNT; t++) {
            dp_shape shapes[3] = {{3, {2, 3, 4}}, {0, {0}}, {2, {0, 5}}};
            int j;
            for (j = 0; j < 3; j++) {
                dp_ndarray *a, *b = NULL;
                CHECK(dp_nd_arange(e, 0, (double)dp_shape_size(&shapes[j]), 1, (dp_dtype)t, CPU0, &a) == DP_OK);
                if (shapes[j].ndim != 1) { dp_ndarray *v; CHECK(dp_nd_reshape(a, &shapes[j], &v) == DP_OK); dp_nd_release(a); a = v; }
                CHECK(dp_nd_save_npy(a, p1, NULL) == DP_OK);
                CHECK(dp_nd_load_npy(e, p1, CPU0, &b) == DP_OK && b && same_array(a, b));
                dp_nd_release(a); dp_nd_release(b);
            }
        }
        {   /* a file as NumPy writes it: np.save(f, np.array([1.5, -2, 3])) */
            unsigned char file[128 + 24];
            const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }";
            double v[3] = {1.5, -2, 3}, back[3];
            dp_ndarray *a = NULL;
            memset(file, ' ', 128);
            memcpy(file, "\x93NUMPY\x01\x00\x76\x00", 10);
            memcpy(file + 10, dict, strlen(dict));
            file[127] = '\n';
            memcpy(file + 128, v, sizeof v);
            write_bytes(p1, file, sizeof file);
            CHECK(dp_nd_load_npy(e, p1, CPU0, &a) == DP_OK && a && dp_nd_dtype(a) == DP_FLOAT64 && dp_nd_shape(a)->ndim == 1);
            CHECK(a && dp_nd_read(a, back, sizeof back, NULL) == DP_OK && memcmp(v, back, sizeof v) == 0);
            dp_nd_release(a);
            /* every truncation is a clear error, never a crash */
            {
                size_t cut;
                int all_format = 1;
                for (cut = 0; cut < sizeof file; cut += 7) {
                    write_bytes(p1, file, cut);
                    a = (dp_ndarray *)file;
                    all_format &= dp_nd_load_npy(e, p1, CPU0, &a) == DP_ERROR_FORMAT && a == NULL;
                }
                CHECK(all_format && g_last_item == DP_LOGITEM_FORMAT);
            }
            memcpy(file + 10 + 34, "True ", 5);          /* 'fortran_order': True: one dimension is the same either way */
            write_bytes(p1, file, sizeof file);
            CHECK(dp_nd_load_npy(e, p1, CPU0, &a) == DP_OK && a && dp_nd_read(a, back, sizeof back, NULL) == DP_OK && memcmp(v, back, sizeof v) == 0);
            dp_nd_release(a);
            memcpy(file + 10 + 34, "Tru  ", 5);          /* neither True nor False */
            write_bytes(p1, file, sizeof file);
            CHECK(dp_nd_load_npy(e, p1, CPU0, &a) == DP_ERROR_FORMAT && a == NULL);
            CHECK(dp_nd_load_npy(e, "/nonexistent/dir/x.npy", CPU0, &a) == DP_ERROR_IO && g_last_item == DP_LOGITEM_IO);
        }
        {   /* .npz: several named arrays */
            dp_nd_named in[3], out[3], small[1];
            dp_shape s2 = {2, {2, 2}};
            int n = -1, i;
            memset(in, 0, sizeof in);
            strcpy(in[0].name, "weights"); strcpy(in[1].name, "bias"); strcpy(in[2].name, "steps");
            CHECK(dp_nd_random_normal(e, 0, 1, &s2, DP_FLOAT32, CPU0, &in[0].array) == DP_OK);
            CHECK(dp_nd_zeros(e, &s2, DP_FLOAT64, CPU0, &in[1].array) == DP_OK);
            CHECK(dp_nd_arange(e, 0, 10, 1, DP_INT64, CPU0, &in[2].array) == DP_OK);
            CHECK(dp_nd_save_npz(p2, in, 3, NULL, NULL) == DP_OK);
            CHECK(dp_nd_load_npz(e, p2, CPU0, out, 3, &n) == DP_OK && n == 3);
            for (i = 0; i < 3 && n == 3; i++) CHECK(strcmp(in[i].name, out[i].name) == 0 && same_array(in[i].array, out[i].array));
            for (i = 0; i < n; i++) dp_nd_release(out[i].array);
            CHECK(dp_nd_load_npz(e, p2, CPU0, small, 1, &n) == DP_ERROR_FORMAT && n == 0);
            {   /* a flipped byte in the data is a CRC error */
                FILE *f = fopen(p2, "r+b");
                if (f) { fseek(f, 80, SEEK_SET); fputc(0x5a, f); fclose(f); }
                CHECK(dp_nd_load_npz(e, p2, CPU0, out, 3, &n) == DP_ERROR_FORMAT && n == 0);
            }
            {   /* a member name with a NUL byte (in both headers) is refused, not loaded as "" */
                FILE *f;
                CHECK(dp_nd_save_npz(p2, in, 3, NULL, NULL) == DP_OK);
                if ((f = fopen(p2, "r+b")) != NULL) {
                    unsigned char zip[4096];
                    size_t len = fread(zip, 1, sizeof zip, f), at;
                    for (at = 0; at + 11 <= len; at++)
                        if (memcmp(zip + at, "weights.npy", 11) == 0) { fseek(f, (long)at, SEEK_SET); fputc(0, f); fseek(f, 0, SEEK_CUR); }
                    fclose(f);
                }
                g_last_item = 0;
                n = -1;
                CHECK(dp_nd_load_npz(e, p2, CPU0, out, 3, &n) == DP_ERROR_FORMAT && n == 0 && g_last_item == DP_LOGITEM_FORMAT);
            }
            for (i = 0; i < 3; i++) dp_nd_release(in[i].array);
            in[0].array = NULL;
            CHECK(dp_nd_save_npz(p2, in, 1, NULL, NULL) == DP_ERROR_INVALID_ARGS);
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
    remove(p1); remove(p2);
}

/* A path that cannot be read (a directory, a missing file) is DP_ERROR_IO for
   every loader, logged as IO with the path in the message. */
static char g_last_message[512];
static void message_logger(const char *tag, uint32_t level, uint32_t item, const char *msg, uint32_t line, const char *file, void *user) {
    quiet_logger(tag, level, item, msg, line, file, user);
    snprintf(g_last_message, sizeof g_last_message, "%s", msg ? msg : "");
}
static int io_error_naming(dp_result r, const char *path) {
    int ok = r == DP_ERROR_IO && g_last_item == DP_LOGITEM_IO && strstr(g_last_message, path) != NULL;
    g_last_item = 0; g_last_message[0] = 0;
    return ok;
}
static void test_load_unreadable_paths(void) {
    char dir[128], missing[128];
    const char *paths[2];
    dp_engine_desc d;
    dp_engine *e = NULL;
    int i;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.logger.func = message_logger;
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    tmp_path("a_directory", dir, sizeof dir);
    tmp_path("missing.npy", missing, sizeof missing);
    CHECK(test_mkdir(dir) == 0);
    paths[0] = dir; paths[1] = missing;
    for (i = 0; i < 2; i++) {
        dp_ndarray *a = NULL, *b = NULL;
        dp_nd_named out[2];
        int n = -1;
        g_last_item = 0; g_last_message[0] = 0;
        CHECK(io_error_naming(dp_nd_load_npy(e, paths[i], CPU0, &a), paths[i]) && a == NULL);
        CHECK(io_error_naming(dp_nd_load_npz(e, paths[i], CPU0, out, 2, &n), paths[i]) && n == 0);
        CHECK(io_error_naming(dp_nd_load_csv(e, paths[i], DP_CSV_NO_LABEL, CPU0, NULL, &a, NULL), paths[i]) && a == NULL);
        CHECK(io_error_naming(dp_nd_load_csv(e, paths[i], 0, CPU0, NULL, &a, &b), paths[i]) && a == NULL && b == NULL);
    }
    rmdir(dir);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* dp_nd_load_npz allocates for the members the archive has, not for cap:
   the largest allocation while loading a 3-member archive with a cap of
   2^20 stays small, and a cap of INT32_MAX loads it too. A negative cap is
   refused. */
static size_t g_largest_alloc;
static void *recording_alloc(size_t size, size_t align, void *user) {
    size_t seen = __atomic_load_n(&g_largest_alloc, __ATOMIC_RELAXED);
    while (size > seen && !__atomic_compare_exchange_n(&g_largest_alloc, &seen, size, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return failing_alloc(size, align, user);
}
static void test_npz_large_cap(void) {
    char path[128];
    dp_engine_desc d;
    dp_engine *e = NULL;
    dp_nd_named in[3], out[3];
    dp_shape s = {1, {4}};
    int i, n = -1;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.logger.func = quiet_logger;
    d.allocator.alloc = recording_alloc; d.allocator.free = failing_free;
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    tmp_path("cap.npz", path, sizeof path);
    memset(in, 0, sizeof in);
    for (i = 0; i < 3; i++) {
        snprintf(in[i].name, sizeof in[i].name, "m%d", i);
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &in[i].array) == DP_OK);
    }
    CHECK(dp_nd_save_npz(path, in, 3, NULL, NULL) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    __atomic_store_n(&g_largest_alloc, 0, __ATOMIC_RELAXED);
    CHECK(dp_nd_load_npz(e, path, CPU0, out, 1 << 20, &n) == DP_OK && n == 3);
    CHECK(__atomic_load_n(&g_largest_alloc, __ATOMIC_RELAXED) < 4096);
    for (i = 0; i < n; i++) dp_nd_release(out[i].array);
    n = -1;
    CHECK(dp_nd_load_npz(e, path, CPU0, out, INT32_MAX, &n) == DP_OK && n == 3);
    for (i = 0; i < n; i++) dp_nd_release(out[i].array);
    g_last_item = 0;
    CHECK(dp_nd_load_npz(e, path, CPU0, out, -1, &n) == DP_ERROR_INVALID_ARGS && n == 0 && g_last_item == DP_LOGITEM_ND_ARGS);
    for (i = 0; i < 3; i++) dp_nd_release(in[i].array);
    remove(path);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- operators ------------------------------------------------------------- */
static dp_ndarray *vec(dp_engine *e, dp_shape s, const double *v) {
    dp_ndarray *a = NULL;
    CHECK(dp_nd_from_host(e, &s, DP_FLOAT64, CPU0, v, &a) == DP_OK);
    return a;
}
static int close_to(double a, double b) { return (a != a && b != b) || fabs(a - b) <= 1e-12 * (1 + fabs(b)); }
typedef double (*ref1)(double);
typedef double (*ref2)(double, double);
static double r_neg(double x) { return -x; }
static double r_sign(double x) { return (double)((x > 0) - (x < 0)); }
static double r_square(double x) { return x * x; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_add(double a, double b) { return a + b; }
static double r_sub(double a, double b) { return a - b; }
static double r_mul(double a, double b) { return a * b; }
static double r_div(double a, double b) { return a / b; }
static double r_max(double a, double b) { return a > b ? a : b; }
static double r_min(double a, double b) { return a < b ? a : b; }
static double r_rsub(double a, double b) { return b - a; }
static double r_rdiv(double a, double b) { return b / a; }
static double r_rpow(double a, double b) { return pow(b, a); }
static int g_kernel_calls;
static int my_double_kernel(const dp_kernel_ctx *k) {
    const double *x = (const double *)dp_nd_data(k->inputs[0]);
    double *y = (double *)dp_nd_data(k->outputs[0]);
    int64_t i, n = dp_shape_size(dp_nd_shape(k->inputs[0]));
    for (i = 0; i < n; i++) y[i] = 2 * x[i] * (double)k->params->v[0].i;
    __atomic_fetch_add(&g_kernel_calls, 1, __ATOMIC_RELAXED);
    return 0;
}
static int failing_kernel(const dp_kernel_ctx *k) { dp_set_error(k->rc, "this kernel always fails"); return 9; }
static void test_operators(void) {
    static const struct { const char *name; ref1 f; } unary[] = {
        {"negative", r_neg}, {"abs", fabs}, {"sign", r_sign}, {"sqrt", sqrt}, {"square", r_square}, {"exp", exp},
        {"log", log}, {"sin", sin}, {"cos", cos}, {"tanh", tanh}, {"sigmoid", r_sigmoid}, {"relu", r_relu}};
    static const struct { const char *name; ref2 f; } binary[] = {
        {"add", r_add}, {"sub", r_sub}, {"mul", r_mul}, {"div", r_div}, {"maximum", r_max}, {"minimum", r_min}, {"power", pow}};
    static const struct { const char *name; ref2 f; } scalar[] = {
        {"add_scalar", r_add}, {"sub_scalar", r_sub}, {"mul_scalar", r_mul}, {"div_scalar", r_div}, {"maximum_scalar", r_max},
        {"minimum_scalar", r_min}, {"power_scalar", pow}, {"rsub_scalar", r_rsub}, {"rdiv_scalar", r_rdiv}, {"rpower_scalar", r_rpow}};
    static double results[3][64];
    const double xs[6] = {0.5, 1.5, 2.0, 3.25, 0.75, 4.0}, ys[3] = {1.5, 2.0, 0.5};
    int k, i, j;
    {
        const dp_operator *list[256];
        int n = dp_operator_list(list, 256);
        CHECK(n >= 30 && dp_operator_find("sigmoid") && strcmp(dp_operator_find("sigmoid")->doc, "y = 1 / (1 + e^-x) (float32: computed in float32, within 2 ulp of the correctly rounded result)") == 0 && !dp_operator_find("nope"));
    }
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        dp_shape s23 = {2, {2, 3}}, s3 = {1, {3}}, s21 = {2, {2, 1}};
        dp_ndarray *x = vec(e, s23, xs), *y = vec(e, s3, ys), *col = vec(e, s21, ys);
        double out[6];
        int slot = 0;
        for (i = 0; i < (int)(sizeof unary / sizeof unary[0]); i++) {
            dp_ndarray *r = NULL;
            CHECK(invoke_str(e, unary[i].name, 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK);
            CHECK(dp_nd_read(r, out, sizeof out, NULL) == DP_OK);
            for (j = 0; j < 6; j++) { if (!close_to(out[j], unary[i].f(xs[j]))) { fprintf(stderr, "  %s(%g)\n", unary[i].name, xs[j]); CHECK(0); } }
            results[k][slot++] = out[3];
            dp_nd_release(r);
        }
        for (i = 0; i < (int)(sizeof binary / sizeof binary[0]); i++) {
            dp_ndarray *in2[2], *r = NULL;
            in2[0] = x; in2[1] = y;           /* (2, 3) with (3,): the row repeats */
            CHECK(invoke_str(e, binary[i].name, 2, in2, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK);
            CHECK(dp_nd_read(r, out, sizeof out, NULL) == DP_OK);
            for (j = 0; j < 6; j++) CHECK(close_to(out[j], binary[i].f(xs[j], ys[j % 3])));
            dp_nd_release(r); r = NULL;
            in2[1] = col;                     /* (2, 3) with (2, 1): the column repeats */
            CHECK(invoke_str(e, binary[i].name, 2, in2, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK);
            CHECK(dp_nd_read(r, out, sizeof out, NULL) == DP_OK);
            for (j = 0; j < 6; j++) CHECK(close_to(out[j], binary[i].f(xs[j], ys[j / 3])));
            results[k][slot++] = out[4];
            dp_nd_release(r);
        }
        for (i = 0; i < (int)(sizeof scalar / sizeof scalar[0]); i++) {
            dp_ndarray *r = NULL;
            CHECK(invoke_str(e, scalar[i].name, 1, &x, 0, NULL, NULL, 2.5, 1, &r, NULL) == DP_OK);
            CHECK(dp_nd_read(r, out, sizeof out, NULL) == DP_OK);
            for (j = 0; j < 6; j++) CHECK(close_to(out[j], scalar[i].f(xs[j], 2.5)));
            results[k][slot++] = out[1];
            dp_nd_release(r);
        }
        {   /* clip and its parameters */
            const char *keys[2] = {"a_min", "a_max"}, *vals[2] = {"1", "3"}, *bad[2] = {"3", "1"}, *junk[2] = {"1", "x"};
            const char *unknown[1] = {"a_mid"};
            dp_ndarray *r = NULL;
            CHECK(invoke_str(e, "clip", 1, &x, 2, keys, vals, 0, 1, &r, NULL) == DP_OK && dp_nd_read(r, out, sizeof out, NULL) == DP_OK);
            CHECK(out[0] == 1 && out[1] == 1.5 && out[3] == 3 && out[5] == 3);
            g_last_item = 0;
            CHECK(invoke_str(e, "clip", 1, &x, 2, keys, bad, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
            CHECK(invoke_str(e, "clip", 1, &x, 2, keys, junk, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);
            CHECK(invoke_str(e, "clip", 1, &x, 1, keys, vals, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);       /* a_max missing */
            CHECK(invoke_str(e, "clip", 1, &x, 1, unknown, vals, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);
            dp_nd_release(r);
        }
        {   /* write requests: add-to accumulates, in-place reuses the input */
            dp_ndarray *acc = NULL, *in2[2];
            dp_req add = DP_REQ_ADD;
            CHECK(dp_nd_full(e, &s23, DP_FLOAT64, CPU0, 10, &acc) == DP_OK);
            in2[0] = x; in2[1] = x;
            CHECK(invoke_str(e, "mul", 2, in2, 0, NULL, NULL, 0, 1, &acc, &add) == DP_OK);
            CHECK(dp_nd_read(acc, out, sizeof out, NULL) == DP_OK && close_to(out[2], 14) && close_to(out[5], 26));
            CHECK(invoke_str(e, "negative", 1, &acc, 0, NULL, NULL, 0, 1, &acc, NULL) == DP_OK);   /* in place */
            CHECK(dp_nd_read(acc, out, sizeof out, NULL) == DP_OK && close_to(out[2], -14));
            dp_nd_release(acc);
        }
        {   /* errors before anything is pushed */
            dp_engine_stats before, after;
            dp_ndarray *r = NULL, *in2[2], *wrong = NULL;
            dp_shape s4 = {1, {4}};
            dp_engine_stats_get(e, &before);
            in2[0] = x; in2[1] = vec(e, s4, xs);
            g_last_item = 0;
            CHECK(invoke_str(e, "add", 2, in2, 0, NULL, NULL, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS && r == NULL);  /* (2,3) + (4,) */
            CHECK(g_last_item == DP_LOGITEM_ND_ARGS);
            CHECK(invoke_str(e, "no_such_op", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);
            CHECK(invoke_str(e, "add", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);
            CHECK(invoke_str(e, "exp", 1, &x, 0, NULL, NULL, 0, 2, &r, NULL) == DP_ERROR_INVALID_ARGS);
            wrong = in2[1];
            CHECK(invoke_str(e, "exp", 1, &x, 0, NULL, NULL, 0, 1, &wrong, NULL) == DP_ERROR_INVALID_ARGS);  /* output shape */
            dp_engine_stats_get(e, &after);
            CHECK(after.pushed == before.pushed);
            dp_nd_release(in2[1]);
        }
        {   /* a user's operator, registered once, with a parameter */
            static const dp_param_def params[1] = {{"factor", DP_PARAM_INT, "1", 1, 100, NULL, "multiplier"}};
            dp_operator op;
            const char *key[1] = {"factor"}, *val[1] = {"3"}, *big[1] = {"1000"};
            dp_ndarray *r = NULL;
            memset(&op, 0, sizeof op);
            op.name = "my_double"; op.doc = "y = 2 * factor * x"; op.num_inputs = 1; op.num_outputs = 1;
            op.params = params; op.num_params = 1; op.forward_cpu = my_double_kernel;
            if (!dp_operator_find("my_double")) CHECK(dp_operator_register(&op) == DP_OK);
            CHECK(dp_operator_register(&op) == DP_ERROR_INVALID_ARGS);      /* twice */
            {   /* counts from num_args need that parameter */
                dp_operator var = op;
                var.name = "variadic_without_num_args"; var.num_outputs = -1;
                CHECK(dp_operator_register(&var) == DP_ERROR_INVALID_ARGS && !dp_operator_find(var.name));
                var.num_outputs = 1; var.num_inputs = -3;
                CHECK(dp_operator_register(&var) == DP_ERROR_INVALID_ARGS);
            }
            {   /* an unbounded num_args cannot smuggle a huge count through an int */
                static const dp_param_def vp[1] = {{"num_args", DP_PARAM_INT, NULL, 0, 0, NULL, "inputs"}};
                const char *nk[1] = {"num_args"}, *huge[1] = {"4294967297"};
                dp_operator var = op;
                dp_ndarray *none = NULL;
                var.name = "variadic_unbounded"; var.num_inputs = -1; var.params = vp; var.num_params = 1;
                if (!dp_operator_find(var.name)) CHECK(dp_operator_register(&var) == DP_OK);
                CHECK(invoke_str(e, var.name, 1, &x, 1, nk, huge, 0, 1, &none, NULL) == DP_ERROR_INVALID_ARGS && none == NULL);
            }
            CHECK(invoke_str(e, "my_double", 1, &x, 1, key, val, 0, 1, &r, NULL) == DP_OK);
            CHECK(dp_nd_read(r, out, sizeof out, NULL) == DP_OK && out[0] == 3 && out[5] == 24);
            CHECK(invoke_str(e, "my_double", 1, &x, 1, key, big, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);   /* range */
            dp_nd_release(r);
            memset(&op, 0, sizeof op);
            op.name = "always_fails"; op.num_inputs = 1; op.num_outputs = 1; op.forward_cpu = failing_kernel;
            if (!dp_operator_find("always_fails")) CHECK(dp_operator_register(&op) == DP_OK);
            r = NULL;
            CHECK(invoke_str(e, "always_fails", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK);
            {
                dp_failure f;
                dp_ndarray *r2 = NULL;
                CHECK(invoke_str(e, "exp", 1, &r, 0, NULL, NULL, 0, 1, &r2, NULL) == DP_OK);   /* downstream of the failure */
                memset(&f, 0, sizeof f);
                CHECK(dp_nd_read(r2, out, sizeof out, &f) == DP_ERROR_OP_FAILED && f.status == 9 && strcmp(f.op_name, "always_fails") == 0);
                dp_nd_release(r2);
            }
            dp_wait_all(e, NULL);
            dp_nd_release(r);
        }
        dp_nd_release(x); dp_nd_release(y); dp_nd_release(col);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
    CHECK(memcmp(results[0], results[1], sizeof results[0]) == 0 && memcmp(results[0], results[2], sizeof results[0]) == 0);
}

/* ---- reductions over chosen axes ----------------------------------------- */
static void test_reductions(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        dp_shape s234 = {3, {2, 3, 4}};
        double v[24], out[24];
        int64_t idx[12];
        dp_ndarray *x, *r = NULL;
        const char *ax[2] = {"axis", "keepdims"}, *all[1] = {"axis"};
        int i;
        for (i = 0; i < 24; i++) v[i] = (double)((i * 7) % 24) - 5.5;   /* distinct values */
        x = vec(e, s234, v);
        {   /* sum over axis 1, keeping it: shape (2, 1, 4) */
            const char *kv[2] = {"(1,)", "true"};
            CHECK(invoke_str(e, "sum", 1, &x, 2, ax, kv, 0, 1, &r, NULL) == DP_OK);
            CHECK(dp_nd_shape(r)->ndim == 3 && dp_nd_shape(r)->dims[1] == 1 && dp_nd_read(r, out, sizeof(double) * 8, NULL) == DP_OK);
            CHECK(out[0] == v[0] + v[4] + v[8] && out[7] == v[15] + v[19] + v[23]);
            dp_nd_release(r); r = NULL;
        }
        {   /* mean over the last two axes (negative axis), dropped: shape (2,) */
            const char *kv[1] = {"(-1, 1)"};
            double want = 0;
            CHECK(invoke_str(e, "mean", 1, &x, 1, all, kv, 0, 1, &r, NULL) == DP_OK && dp_nd_shape(r)->ndim == 1);
            CHECK(dp_nd_read(r, out, sizeof(double) * 2, NULL) == DP_OK);
            for (i = 12; i < 24; i++) want += v[i];
            CHECK(fabs(out[1] - want / 12) < 1e-12);
            dp_nd_release(r); r = NULL;
        }
        {   /* max and min of everything, argmax along axis 2 */
            const char *kv[1] = {"2"};
            double mx = -1e9, mn = 1e9;
            for (i = 0; i < 24; i++) { if (v[i] > mx) mx = v[i]; if (v[i] < mn) mn = v[i]; }
            CHECK(invoke_str(e, "max", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && dp_nd_shape(r)->ndim == 0);
            CHECK(dp_nd_read(r, out, sizeof(double), NULL) == DP_OK && out[0] == mx);
            dp_nd_release(r); r = NULL;
            CHECK(invoke_str(e, "min", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && dp_nd_read(r, out, sizeof(double), NULL) == DP_OK && out[0] == mn);
            dp_nd_release(r); r = NULL;
            CHECK(invoke_str(e, "argmax", 1, &x, 1, all, kv, 0, 1, &r, NULL) == DP_OK && dp_nd_dtype(r) == DP_INT64);
            CHECK(dp_nd_read(r, idx, sizeof(int64_t) * 6, NULL) == DP_OK);
            for (i = 0; i < 6; i++) {
                int j, best = 0;
                for (j = 1; j < 4; j++) if (v[i * 4 + j] > v[i * 4 + best]) best = j;
                CHECK(idx[i] == best);
            }
            dp_nd_release(r); r = NULL;
        }
        {   /* bad axes are refused before anything runs */
            const char *bad[1] = {"(3,)"}, *twice[1] = {"(1, 1)"}, *two[1] = {"(0, 1)"};
            g_last_item = 0;
            CHECK(invoke_str(e, "sum", 1, &x, 1, all, bad, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
            CHECK(invoke_str(e, "sum", 1, &x, 1, all, twice, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);
            CHECK(invoke_str(e, "argmax", 1, &x, 1, all, two, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);
        }
        dp_nd_release(x);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- softmax family, transpose, concat, one_hot ----------------------------- */
static void test_nn_ops(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        dp_shape s23 = {2, {2, 3}}, s2 = {1, {2}}, s13 = {2, {1, 3}};
        const double v[6] = {1, 2, 3, -1, 0, 4}, lab[2] = {2, 0};
        double out[18], want;
        dp_ndarray *x = vec(e, s23, v), *labels = vec(e, s2, lab), *r = NULL, *in2[3];
        int i, j;
        CHECK(invoke_str(e, "softmax", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && dp_nd_read(r, out, sizeof(double) * 6, NULL) == DP_OK);
        for (i = 0; i < 2; i++) {
            double sum = 0, z = exp(v[i * 3]) + exp(v[i * 3 + 1]) + exp(v[i * 3 + 2]);
            for (j = 0; j < 3; j++) { sum += out[i * 3 + j]; CHECK(close_to(out[i * 3 + j], exp(v[i * 3 + j]) / z)); }
            CHECK(fabs(sum - 1) < 1e-12);
        }
        dp_nd_release(r); r = NULL;
        CHECK(invoke_str(e, "log_softmax", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && dp_nd_read(r, out, sizeof(double) * 6, NULL) == DP_OK);
        CHECK(close_to(out[4], v[4] - log(exp(-1.0) + exp(0.0) + exp(4.0))));
        dp_nd_release(r); r = NULL;
        in2[0] = x; in2[1] = labels;
        CHECK(invoke_str(e, "softmax_cross_entropy", 2, in2, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && dp_nd_read(r, out, sizeof(double), NULL) == DP_OK);
        want = -(v[2] - log(exp(1.0) + exp(2.0) + exp(3.0))) - (v[3] - log(exp(-1.0) + exp(0.0) + exp(4.0)));
        CHECK(close_to(out[0], want));
        dp_nd_release(r); r = NULL;
        CHECK(invoke_str(e, "transpose", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && dp_nd_shape(r)->dims[0] == 3);
        CHECK(dp_nd_read(r, out, sizeof(double) * 6, NULL) == DP_OK && out[1] == v[3] && out[4] == v[2]);
        dp_nd_release(r); r = NULL;
        {   /* concat along 0 and along 1 */
            const char *keys[2] = {"num_args", "dim"}, *d0[2] = {"3", "0"}, *d1[2] = {"2", "1"};
            dp_ndarray *row = vec(e, s13, v);
            in2[0] = x; in2[1] = row; in2[2] = x;
            CHECK(invoke_str(e, "concat", 3, in2, 2, keys, d0, 0, 1, &r, NULL) == DP_OK && dp_nd_shape(r)->dims[0] == 5);
            CHECK(dp_nd_read(r, out, sizeof(double) * 15, NULL) == DP_OK && out[6] == v[0] && out[9] == v[0] && out[14] == v[5]);
            dp_nd_release(r); r = NULL;
            in2[1] = x;
            CHECK(invoke_str(e, "concat", 2, in2, 2, keys, d1, 0, 1, &r, NULL) == DP_OK && dp_nd_shape(r)->dims[1] == 6);
            CHECK(dp_nd_read(r, out, sizeof(double) * 12, NULL) == DP_OK && out[3] == v[0] && out[6] == v[3] && out[11] == v[5]);
            dp_nd_release(r); r = NULL;
            in2[1] = row;   /* (2, 3) and (1, 3) along dim 1: refused */
            g_last_item = 0;
            CHECK(invoke_str(e, "concat", 2, in2, 2, keys, d1, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
            CHECK(invoke_str(e, "concat", 3, in2, 2, keys, d1, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);   /* 3 given, num_args 2 */
            dp_nd_release(row);
        }
        {   /* one_hot */
            const char *keys[2] = {"depth", "dtype"}, *kv[2] = {"3", "int32"};
            int32_t oh[6];
            CHECK(invoke_str(e, "one_hot", 1, &labels, 2, keys, kv, 0, 1, &r, NULL) == DP_OK && dp_nd_dtype(r) == DP_INT32);
            CHECK(dp_nd_read(r, oh, sizeof oh, NULL) == DP_OK && oh[0] == 0 && oh[2] == 1 && oh[3] == 1 && oh[5] == 0);
            dp_nd_release(r); r = NULL;
            CHECK(invoke_str(e, "one_hot", 1, &labels, 0, NULL, NULL, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);   /* depth required */
        }
        {   /* random operators: same seed, same draws as dp_nd_random_uniform */
            const char *keys[4] = {"shape", "low", "high", "dtype"}, *kv[4] = {"(2, 3)", "-1", "3", "float64"};
            const char *nkeys[2] = {"shape", "scale"}, *nbad[2] = {"(2,)", "-1"};
            double direct[6];
            dp_ndarray *d = NULL;
            CHECK(dp_random_seed(e, CPU0, 11) == DP_OK);
            CHECK(invoke_str(e, "random_uniform", 0, NULL, 4, keys, kv, 0, 1, &r, NULL) == DP_OK && dp_nd_dtype(r) == DP_FLOAT64);
            CHECK(dp_random_seed(e, CPU0, 11) == DP_OK && dp_nd_random_uniform(e, -1, 3, &s23, DP_FLOAT64, CPU0, &d) == DP_OK);
            CHECK(dp_nd_read(r, out, sizeof(double) * 6, NULL) == DP_OK && dp_nd_read(d, direct, sizeof direct, NULL) == DP_OK);
            CHECK(memcmp(out, direct, sizeof direct) == 0 && out[0] >= -1 && out[0] < 3);
            dp_nd_release(r); dp_nd_release(d); r = NULL;
            CHECK(invoke_str(e, "random_normal", 0, NULL, 2, nkeys, nbad, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);
            CHECK(invoke_str(e, "random_normal", 0, NULL, 0, NULL, NULL, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);   /* shape required */
        }
        {   /* bad axis, bad labels */
            const char *ax[1] = {"axis"}, *bad[1] = {"2"};
            double badlab[2] = {3, 0};
            dp_ndarray *bl = vec(e, s2, badlab);
            dp_failure f;
            CHECK(invoke_str(e, "softmax", 1, &x, 1, ax, bad, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);
            in2[0] = x; in2[1] = x;
            CHECK(invoke_str(e, "softmax_cross_entropy", 2, in2, 0, NULL, NULL, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);   /* label shape */
            in2[1] = bl;       /* a label out of range fails in the kernel, reported to the reader */
            CHECK(invoke_str(e, "softmax_cross_entropy", 2, in2, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK);
            memset(&f, 0, sizeof f);
            CHECK(dp_nd_read(r, out, sizeof(double), &f) == DP_ERROR_OP_FAILED && strstr(f.message, "label 3") != NULL);
            dp_nd_release(r); r = NULL;
            dp_nd_release(bl);
            dp_wait_all(e, NULL);
        }
        dp_nd_release(x); dp_nd_release(labels);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- dot and FullyConnected against a reference loop --------------------- */
static void ref_dot(const double *a, const double *b, double *c, int64_t m, int64_t n, int64_t k, int ta, int tb) {
    int64_t i, j, p;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double s = 0;
            for (p = 0; p < k; p++) s += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
            c[i * n + j] = s;
        }
}
static void test_linear(void) {
    enum { M = 37, N = 29, K = 53 };
    static double a[M * K], b[K * N], want[M * N], got[M * N];
    static float af[M * K], bf[K * N], gotf[M * N];
    const char *keys[2] = {"transpose_a", "transpose_b"};
    static const char *flags[4][2] = {{"0", "0"}, {"1", "0"}, {"0", "1"}, {"1", "1"}};
    int k, f, i;
    for (i = 0; i < M * K; i++) { a[i] = (double)((i * 37) % 101) / 50.0 - 1; af[i] = (float)a[i]; }
    for (i = 0; i < K * N; i++) { b[i] = (double)((i * 53) % 97) / 48.0 - 1; bf[i] = (float)b[i]; }
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        for (f = 0; f < 4; f++) {
            int ta = f & 1, tb = (f >> 1) & 1;
            dp_shape sa = {2, {ta ? K : M, ta ? M : K}}, sb = {2, {tb ? N : K, tb ? K : N}};
            dp_ndarray *in[2], *r = NULL, *rf = NULL;
            double maxerr = 0;
            in[0] = vec(e, sa, a); in[1] = vec(e, sb, b);
            ref_dot(a, b, want, M, N, K, ta, tb);
            CHECK(invoke_str(e, "dot", 2, in, 2, keys, flags[f], 0, 1, &r, NULL) == DP_OK);
            CHECK(dp_nd_shape(r)->dims[0] == M && dp_nd_shape(r)->dims[1] == N && dp_nd_read(r, got, sizeof got, NULL) == DP_OK);
            for (i = 0; i < M * N; i++) if (fabs(got[i] - want[i]) > maxerr) maxerr = fabs(got[i] - want[i]);
            CHECK(maxerr < 1e-12);
            {   /* add-to: r += a b */
                dp_req add = DP_REQ_ADD;
                CHECK(invoke_str(e, "dot", 2, in, 2, keys, flags[f], 0, 1, &r, &add) == DP_OK && dp_nd_read(r, got, sizeof got, NULL) == DP_OK);
                CHECK(fabs(got[7] - 2 * want[7]) < 1e-12 && fabs(got[M * N - 1] - 2 * want[M * N - 1]) < 1e-12);
            }
            dp_nd_release(in[0]); dp_nd_release(in[1]);
            CHECK(dp_nd_from_host(e, &sa, DP_FLOAT32, CPU0, af, &in[0]) == DP_OK && dp_nd_from_host(e, &sb, DP_FLOAT32, CPU0, bf, &in[1]) == DP_OK);
            CHECK(invoke_str(e, "dot", 2, in, 2, keys, flags[f], 0, 1, &rf, NULL) == DP_OK && dp_nd_read(rf, gotf, sizeof gotf, NULL) == DP_OK);
            for (maxerr = 0, i = 0; i < M * N; i++) if (fabs(gotf[i] - want[i]) > maxerr) maxerr = fabs(gotf[i] - want[i]);
            CHECK(maxerr < 1e-4);
            dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(r); dp_nd_release(rf);
        }
        {   /* FullyConnected: data (4, 3) . weight (2, 3)^T + bias (2,) */
            const double data[12] = {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2}, w[6] = {1, 0, -1, 0.5, 0.5, 0.5}, bias[2] = {10, -10};
            dp_shape sd = {2, {4, 3}}, sw = {2, {2, 3}}, sbias = {1, {2}};
            const char *nh[1] = {"num_hidden"}, *two[1] = {"2"}, *three[1] = {"3"};
            dp_ndarray *in[3], *r = NULL;
            double out[8];
            in[0] = vec(e, sd, data); in[1] = vec(e, sw, w); in[2] = vec(e, sbias, bias);
            CHECK(invoke_str(e, "FullyConnected", 3, in, 1, nh, two, 0, 1, &r, NULL) == DP_OK && dp_nd_read(r, out, sizeof out, NULL) == DP_OK);
            for (i = 0; i < 4; i++) {
                CHECK(close_to(out[i * 2], data[i * 3] - data[i * 3 + 2] + 10));
                CHECK(close_to(out[i * 2 + 1], 0.5 * (data[i * 3] + data[i * 3 + 1] + data[i * 3 + 2]) - 10));
            }
            g_last_item = 0;
            CHECK(invoke_str(e, "FullyConnected", 3, in, 1, nh, three, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
            {
                dp_ndarray *weight = in[1];
                in[1] = in[0];             /* dot of (4, 3) and (4, 3): inner sizes differ */
                CHECK(invoke_str(e, "dot", 2, in, 0, NULL, NULL, 0, 1, &r, NULL) == DP_ERROR_INVALID_ARGS);
                dp_nd_release(weight);
            }
            dp_nd_release(in[0]); dp_nd_release(in[2]); dp_nd_release(r);
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- one program, three engines, bitwise the same results ------------------ */
static void run_program(dp_engine *e, double *out, int64_t *best) {
    dp_shape s = {2, {8, 5}}, sb = {1, {3}};
    const char *tk[2] = {"transpose_a", "transpose_b"}, *tv[2] = {"0", "1"}, *nh[1] = {"num_hidden"}, *nv[1] = {"3"};
    const char *ak[1] = {"axis"}, *av[1] = {"1"};
    dp_ndarray *x = NULL, *w = NULL, *b = NULL, *xx = NULL, *sm = NULL, *fc = NULL, *tot = NULL, *am = NULL, *in[3];
    CHECK(dp_random_seed(e, CPU0, 5) == DP_OK);
    CHECK(dp_nd_random_normal(e, 0, 1, &s, DP_FLOAT64, CPU0, &x) == DP_OK);
    {   dp_shape sw = {2, {3, 5}}; CHECK(dp_nd_random_uniform(e, -1, 1, &sw, DP_FLOAT64, CPU0, &w) == DP_OK); }
    CHECK(dp_nd_random_uniform(e, -1, 1, &sb, DP_FLOAT64, CPU0, &b) == DP_OK);
    in[0] = x; in[1] = x;
    CHECK(invoke_str(e, "dot", 2, in, 2, tk, tv, 0, 1, &xx, NULL) == DP_OK);            /* (8, 8) */
    CHECK(invoke_str(e, "softmax", 1, &xx, 1, ak, av, 0, 1, &sm, NULL) == DP_OK);
    in[0] = x; in[1] = w; in[2] = b;
    CHECK(invoke_str(e, "FullyConnected", 3, in, 1, nh, nv, 0, 1, &fc, NULL) == DP_OK);  /* (8, 3) */
    CHECK(invoke_str(e, "sum", 1, &sm, 0, NULL, NULL, 0, 1, &tot, NULL) == DP_OK);
    CHECK(invoke_str(e, "argmax", 1, &fc, 1, ak, av, 0, 1, &am, NULL) == DP_OK);
    CHECK(dp_nd_read(fc, out, sizeof(double) * 24, NULL) == DP_OK && dp_nd_read(tot, out + 24, sizeof(double), NULL) == DP_OK);
    CHECK(dp_nd_read(sm, out + 25, sizeof(double) * 64, NULL) == DP_OK && dp_nd_read(am, best, sizeof(int64_t) * 8, NULL) == DP_OK);
    dp_nd_release(x); dp_nd_release(w); dp_nd_release(b); dp_nd_release(xx); dp_nd_release(sm);
    dp_nd_release(fc); dp_nd_release(tot); dp_nd_release(am);
}
static void test_same_results_all_engines(void) {
    double out[3][89];
    int64_t best[3][8];
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        run_program(e, out[k], best[k]);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
    CHECK(fabs(out[0][24] - 8) < 1e-12);   /* rows of a softmax sum to 1 */
    CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0 && memcmp(out[0], out[2], sizeof out[0]) == 0);
    CHECK(memcmp(best[0], best[1], sizeof best[0]) == 0 && memcmp(best[0], best[2], sizeof best[0]) == 0);
}

/* ---- gradients: every operator that declares one, by finite differences ---- */
/* sum(w * op(inputs)) for float64 arrays given as host buffers */
static double weighted_out(dp_engine *e, const char *name, int nin, const dp_shape *shapes, double *const *vals,
                           int nkw, const char *const *keys, const char *const *kv, double scalar, const double *w, int64_t nw) {
    dp_ndarray *in[3], *y = NULL;
    double out[64], sum = 0;
    int i;
    for (i = 0; i < nin; i++) in[i] = vec(e, shapes[i], vals[i]);
    CHECK(invoke_str(e, name, nin, in, nkw, keys, kv, scalar, 1, &y, NULL) == DP_OK);
    CHECK(y && dp_shape_size(dp_nd_shape(y)) == nw && dp_nd_read(y, out, sizeof(double) * (size_t)nw, NULL) == DP_OK);
    for (i = 0; i < nw; i++) sum += w[i] * out[i];
    for (i = 0; i < nin; i++) dp_nd_release(in[i]);
    dp_nd_release(y);
    return sum;
}
/* Checks the gradients of the first nvary inputs (the rest, e.g. labels,
   are not differentiable). */
static int check_grad_n(dp_engine *e, const char *name, int nin, int nvary, const dp_shape *shapes, double *const *vals,
                        int nkw, const char *const *keys, const char *const *kv, double scalar) {
    const dp_operator *op = dp_operator_find(name);
    dp_ndarray *in[4], *y = NULL, *grads[3] = {NULL, NULL, NULL};
    double w[64], g[64], h = 1e-6;
    int64_t nw, i, j;
    int ok = 1;
    if (!op || !op->gradient) return 0;
    for (i = 0; i < nin; i++) in[i + 1] = vec(e, shapes[i], vals[i]);
    CHECK(invoke_str(e, name, nin, in + 1, nkw, keys, kv, scalar, 1, &y, NULL) == DP_OK);
    nw = dp_shape_size(dp_nd_shape(y));
    for (j = 0; j < nw; j++) w[j] = 0.3 + 0.17 * (double)j;           /* the output gradient */
    in[0] = vec(e, *dp_nd_shape(y), w);
    {   /* relu, tanh and sigmoid's gradients read the forward output (grad_needs) */
        dp_ndarray *x1 = in[1];
        if ((op->grad_needs & DP_GRAD_OUTPUTS) && !(op->grad_needs & DP_GRAD_INPUTS) && nin == 1) in[1] = y;
        CHECK(invoke_str(e, op->gradient, nin + 1, in, nkw, keys, kv, scalar, nin, grads, NULL) == DP_OK);
        in[1] = x1;
    }
    for (i = 0; i < nvary; i++) {
        int64_t n = dp_shape_size(&shapes[i]);
        CHECK(grads[i] && dp_nd_read(grads[i], g, sizeof(double) * (size_t)n, NULL) == DP_OK);
        for (j = 0; j < n; j++) {
            double keep = vals[i][j], up, down, numeric;
            vals[i][j] = keep + h; up = weighted_out(e, name, nin, shapes, vals, nkw, keys, kv, scalar, w, nw);
            vals[i][j] = keep - h; down = weighted_out(e, name, nin, shapes, vals, nkw, keys, kv, scalar, w, nw);
            vals[i][j] = keep;
            numeric = (up - down) / (2 * h);
            if (fabs(numeric - g[j]) > 1e-5 * (1 + fabs(numeric))) {
                fprintf(stderr, "  %s: d/d input %d [%lld]: analytic %.9g, numeric %.9g\n", name, (int)i, (long long)j, g[j], numeric);
                ok = 0;
            }
        }
    }
    for (i = 0; i <= nin; i++) dp_nd_release(in[i]);
    for (i = 0; i < nin; i++) dp_nd_release(grads[i]);
    dp_nd_release(y);
    return ok;
}
static int check_grad(dp_engine *e, const char *name, int nin, const dp_shape *shapes, double *const *vals,
                      int nkw, const char *const *keys, const char *const *kv, double scalar) {
    return check_grad_n(e, name, nin, nin, shapes, vals, nkw, keys, kv, scalar);
}
static void test_gradients(void) {
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE, DP_STORAGE_DEFAULT, 0);
    const dp_operator *list[256];
    int n = dp_operator_list(list, 256), i, checked = 0;
    double a[6], b[6], c[3];
    dp_shape s23 = {2, {2, 3}}, s3 = {1, {3}}, s21 = {2, {2, 1}};
    for (i = 0; i < n; i++) {
        const dp_operator *op = list[i];
        int j;
        for (j = 0; j < 6; j++) { a[j] = 0.55 + 0.23 * j; b[j] = 1.93 - 0.19 * j; }   /* positive, no ties, no kinks */
        for (j = 0; j < 3; j++) c[j] = 1.21 - 0.29 * j;
        if (!op->gradient) continue;
        if (strcmp(op->name, "SoftmaxOutput") == 0) continue;   /* its gradient is its loss's, by design: tests/test_symbol.c */
        if (strcmp(op->name, "take") == 0) continue;               /* int64 indices: test_invoke.c checks its gradient */
        if (!strcmp(op->name, "Convolution") || !strcmp(op->name, "Deconvolution") || !strcmp(op->name, "Pooling")
            || !strcmp(op->name, "Activation") || !strcmp(op->name, "LeakyReLU") || !strcmp(op->name, "BlockGrad") || !strcmp(op->name, "MakeLoss")
            || strstr(op->name, "RegressionOutput") || !strcmp(op->name, "Embedding") || !strcmp(op->name, "expand_dims")
            || !strcmp(op->name, "slice_axis") || !strcmp(op->name, "broadcast_to") || !strcmp(op->name, "where")
            || !strcmp(op->name, "batch_dot") || !strcmp(op->name, "stack") || !strcmp(op->name, "SliceChannel")) continue;   /* depeng_nn.h's layers: test_layers.c */
        if (!strcmp(op->name, "BatchNorm") || !strcmp(op->name, "Dropout")) continue;   /* five inputs; a random mask: test_norm.c */
        if (strcmp(op->name, "concat") == 0) {                     /* (2, 3) and (2, 1) along 1; (2, 3) and (1, 3) along 0 */
            const char *keys[2] = {"num_args", "dim"}, *d1[2] = {"2", "1"}, *d0[2] = {"2", "0"};
            dp_shape sh[2];
            double *v[2];
            sh[0] = s23; sh[1] = s21; v[0] = a; v[1] = c;
            CHECK(check_grad(e, op->name, 2, sh, v, 2, keys, d1, 0));
            sh[1].ndim = 2; sh[1].dims[0] = 1; sh[1].dims[1] = 3;
            CHECK(check_grad(e, op->name, 2, sh, v, 2, keys, d0, 0));
        } else if (strcmp(op->name, "dot") == 0) {                        /* all four transpose flags */
            const char *keys[2] = {"transpose_a", "transpose_b"};
            static const char *flags[4][2] = {{"0", "0"}, {"1", "0"}, {"0", "1"}, {"1", "1"}};
            dp_shape sh[2];
            double *v[2];
            int f;
            for (f = 0; f < 4; f++) {
                sh[0].ndim = 2; sh[0].dims[0] = f & 1 ? 3 : 2; sh[0].dims[1] = f & 1 ? 2 : 3;   /* op(a): (2, 3) */
                sh[1].ndim = 2; sh[1].dims[0] = f & 2 ? 2 : 3; sh[1].dims[1] = f & 2 ? 3 : 2;   /* op(b): (3, 2) */
                v[0] = a; v[1] = b;
                if (!check_grad(e, op->name, 2, sh, v, 2, keys, flags[f], 0)) { fprintf(stderr, "  (dot %s %s)\n", flags[f][0], flags[f][1]); CHECK(0); }
            }
        } else if (strcmp(op->name, "FullyConnected") == 0) {      /* data (2, 3), weight (2, 3), bias (2,) */
            const char *keys[1] = {"num_hidden"}, *kv[1] = {"2"};
            dp_shape sh[3];
            double *v[3];
            sh[0] = s23; sh[1] = s23; sh[2].ndim = 1; sh[2].dims[0] = 2;
            v[0] = a; v[1] = b; v[2] = c;
            CHECK(check_grad(e, op->name, 3, sh, v, 1, keys, kv, 0));
        } else if (strcmp(op->name, "softmax_cross_entropy") == 0) {      /* data (2, 3), labels (2,) */
            double labels[2] = {2, 0}, *v[2];
            dp_shape sh[2];
            sh[0] = s23; sh[1].ndim = 1; sh[1].dims[0] = 2; v[0] = a; v[1] = labels;
            CHECK(check_grad_n(e, op->name, 2, 1, sh, v, 0, NULL, NULL, 0));
        } else if (strcmp(op->name, "transpose") == 0 || strcmp(op->name, "softmax") == 0 || strcmp(op->name, "log_softmax") == 0) {
            const char *keys[1] = {op->name[0] == 't' ? "axes" : "axis"}, *kv[1] = {op->name[0] == 't' ? "(1, 0)" : "0"};
            double *v[1] = {a};
            CHECK(check_grad(e, op->name, 1, &s23, v, 0, NULL, NULL, 0));      /* the defaults */
            CHECK(check_grad(e, op->name, 1, &s23, v, 1, keys, kv, 0));        /* another axis */
        } else if (strcmp(op->name, "cast") == 0) {                 /* float64 to float64: the identity */
            const char *keys[1] = {"dtype"}, *kv[1] = {"float64"};
            double *v[1] = {a};
            CHECK(check_grad(e, op->name, 1, &s23, v, 1, keys, kv, 0));
        } else if (strcmp(op->name, "reshape") == 0) {
            const char *keys[1] = {"shape"}, *kv[1] = {"(3, -1)"};
            double *v[1] = {a};
            CHECK(check_grad(e, op->name, 1, &s23, v, 1, keys, kv, 0));
        } else if (strcmp(op->name, "clip") == 0) {
            const char *keys[2] = {"a_min", "a_max"}, *kv[2] = {"0.9", "1.6"};
            double *v[1] = {a};
            CHECK(check_grad(e, op->name, 1, &s23, v, 2, keys, kv, 0));
        } else if (op->num_inputs == 1) {
            double *v[1] = {a};
            if (!check_grad(e, op->name, 1, &s23, v, 0, NULL, NULL, op->takes_scalar ? 1.75 : 0)) { fprintf(stderr, "  (%s)\n", op->name); CHECK(0); }
        } else {
            dp_shape sh[2];
            double *v[2];
            sh[0] = s23; sh[1] = s23; v[0] = a; v[1] = b;
            CHECK(check_grad(e, op->name, 2, sh, v, 0, NULL, NULL, 0));
            sh[1] = s3; v[1] = c;                    /* b broadcast along rows */
            CHECK(check_grad(e, op->name, 2, sh, v, 0, NULL, NULL, 0));
            sh[0] = s21; sh[1] = s23; v[0] = c; v[1] = b;   /* a broadcast along columns */
            CHECK(check_grad(e, op->name, 2, sh, v, 0, NULL, NULL, 0));
        }
        checked++;
    }
    CHECK(checked >= 30);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* ---- pinned host memory as its own context, and GPU kernels attached by
   dp_operator_set_kernel (the fake GPU's memory is host memory, so the CPU
   kernels can stand in for GPU ones) */
static int g_pinned_live;
static int fake_host_alloc(size_t size, void **out, void *u) { (void)u; *out = malloc(size); if (*out) __atomic_fetch_add(&g_pinned_live, 1, __ATOMIC_RELAXED); return *out ? 0 : 2; }
static int fake_host_free(void *p, void *u) { (void)u; free(p); __atomic_fetch_sub(&g_pinned_live, 1, __ATOMIC_RELAXED); return 0; }
static void test_pinned_and_gpu_kernels(void) {
    int k;
    dp_kernel_fn cpu_uniform = dp_operator_find("random_uniform")->forward_cpu, cpu_exp = dp_operator_find("exp")->forward_cpu;
    g_fake_memory.host_alloc = fake_host_alloc; g_fake_memory.host_free = fake_host_free;
    CHECK(dp_operator_set_kernel("random_uniform", DP_DEV_GPU, cpu_uniform) == DP_OK && dp_operator_set_kernel("exp", DP_DEV_GPU, cpu_exp) == DP_OK);
    CHECK(dp_operator_set_kernel("no_such_op", DP_DEV_GPU, cpu_exp) == DP_ERROR_INVALID_ARGS && dp_operator_set_kernel("exp", 7, cpu_exp) == DP_ERROR_INVALID_ARGS);
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 1);
        dp_ctx pinned = {DP_DEV_CPU_PINNED, 0}, gpu0 = {DP_DEV_GPU, 0};
        dp_shape s = {1, {4}};
        double x[4] = {1, 2, 3, 4}, y[4], u_gpu[4], u_cpu[4];
        dp_ndarray *a, *b, *sum = NULL, *g, *back = NULL, *ug, *uc, *eg = NULL;
        dp_storage_stats st;
        CHECK(dp_nd_from_host(e, &s, DP_FLOAT64, pinned, x, &a) == DP_OK && dp_nd_ctx(a).dev_type == DP_DEV_CPU_PINNED);
        CHECK(dp_nd_ones(e, &s, DP_FLOAT64, pinned, &b) == DP_OK);
        { dp_ndarray *in[2]; in[0] = a; in[1] = b; CHECK(invoke_str(e, "add", 2, in, 0, NULL, NULL, 0, 1, &sum, NULL) == DP_OK); }
        CHECK(sum && dp_nd_ctx(sum).dev_type == DP_DEV_CPU_PINNED && dp_nd_read(sum, y, sizeof y, NULL) == DP_OK && y[0] == 2 && y[3] == 5);
        {   /* operators that take a resource (the temporary workspace, the generator) run on pinned arrays too */
            dp_ndarray *r = NULL, *am = NULL;
            double total = 0;
            int64_t best = -1;
            CHECK(invoke_str(e, "sum", 1, &a, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && dp_nd_read(r, &total, sizeof total, NULL) == DP_OK && total == 10);
            CHECK(invoke_str(e, "argmax", 1, &a, 0, NULL, NULL, 0, 1, &am, NULL) == DP_OK && dp_nd_read(am, &best, sizeof best, NULL) == DP_OK && best == 3);
            dp_nd_release(r); dp_nd_release(am);
        }
        CHECK(dp_nd_copy_to(a, gpu0, &g) == DP_OK && dp_nd_copy_to(g, pinned, &back) == DP_OK);
        CHECK(dp_nd_read(back, y, sizeof y, NULL) == DP_OK && memcmp(x, y, sizeof x) == 0);
        CHECK(dp_wait_all(e, NULL) == DP_OK);   /* r and am give their memory back in an op of their own */
        CHECK(dp_storage_stats_get(e, pinned, &st) == DP_OK && st.bytes_in_use == 4 * 64);
        CHECK(invoke_str(e, "exp", 1, &g, 0, NULL, NULL, 0, 1, &eg, NULL) == DP_OK && eg && dp_nd_ctx(eg).dev_type == DP_DEV_GPU);
        CHECK(dp_nd_read(eg, y, sizeof y, NULL) == DP_OK && fabs(y[1] - exp(2.0)) < 1e-12);
        CHECK(dp_random_seed(e, gpu0, 7) == DP_OK && dp_random_seed(e, CPU0, 7) == DP_OK);   /* the same generator on both */
        CHECK(dp_nd_random_uniform(e, -1, 1, &s, DP_FLOAT64, gpu0, &ug) == DP_OK && dp_nd_ctx(ug).dev_type == DP_DEV_GPU);
        CHECK(dp_nd_random_uniform(e, -1, 1, &s, DP_FLOAT64, CPU0, &uc) == DP_OK);
        CHECK(dp_nd_read(ug, u_gpu, sizeof u_gpu, NULL) == DP_OK && dp_nd_read(uc, u_cpu, sizeof u_cpu, NULL) == DP_OK);
        CHECK(memcmp(u_gpu, u_cpu, sizeof u_gpu) == 0 && u_gpu[0] != u_gpu[1] && u_gpu[0] >= -1 && u_gpu[0] < 1);
        dp_nd_release(a); dp_nd_release(b); dp_nd_release(sum); dp_nd_release(g); dp_nd_release(back);
        dp_nd_release(ug); dp_nd_release(uc); dp_nd_release(eg);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(g_pinned_live == 0);
    }
    CHECK(dp_operator_set_kernel("random_uniform", DP_DEV_GPU, NULL) == DP_OK && dp_operator_set_kernel("exp", DP_DEV_GPU, NULL) == DP_OK);
    {   /* without host_alloc there is no pinned context; without a GPU kernel, no GPU random arrays */
        dp_engine *e;
        dp_ctx pinned = {DP_DEV_CPU_PINNED, 0}, gpu0 = {DP_DEV_GPU, 0};
        dp_shape s = {1, {4}};
        dp_ndarray *a = NULL;
        g_fake_memory.host_alloc = NULL; g_fake_memory.host_free = NULL;
        e = make_engine(DP_ENGINE_PERDEVICE, DP_STORAGE_DEFAULT, 1);
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, pinned, &a) == DP_ERROR_BAD_CONTEXT && a == NULL);
        CHECK(dp_nd_random_uniform(e, 0, 1, &s, DP_FLOAT32, gpu0, &a) == DP_ERROR_BAD_CONTEXT && a == NULL);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- an array released while an op still writes it, with the allocator
   failing: the release cannot be queued, so the memory stays (no use after
   free) until the engine is destroyed (nothing lost) */
static dp_completion g_nd_held;
static float *g_nd_target;
static void nd_hold(dp_run_ctx *rc, void *arg, dp_completion done) { (void)rc; (void)arg; g_nd_held = done; }
static void test_release_under_oom(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine_desc d;
        dp_engine *e = NULL;
        dp_ndarray *a;
        dp_shape s = {1, {1024}};
        dp_var v;
        dp_push_desc hold;
        memset(&d, 0, sizeof d);
        d.type = kinds[k]; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = quiet_logger;
        d.allocator.alloc = failing_alloc; d.allocator.free = failing_free;
        CHECK(dp_engine_create(&d, &e) == DP_OK);
        CHECK(dp_nd_zeros(e, &s, DP_FLOAT32, CPU0, &a) == DP_OK);
        while (var_state(e, dp_nd_var(a)) != DP_VAR_READY) sched_yield();   /* no wait op: the variable never queued */
        v = dp_nd_var(a);
        g_nd_target = (float *)dp_nd_data(a);
        memset(&hold, 0, sizeof hold);
        hold.async_fn = nd_hold; hold.prop = DP_PROP_ASYNC; hold.writes = &v; hold.num_writes = 1;
        CHECK(dp_push(e, &hold) == DP_OK);        /* an op still writing the array */
        __atomic_store_n(&g_fail_alloc, 1, __ATOMIC_RELEASE);
        g_last_item = 0;
        dp_nd_release(a);                         /* its delete must wait, and its queue cannot grow */
        __atomic_store_n(&g_fail_alloc, 0, __ATOMIC_RELEASE);
        /* the naive engine's variable queue needs room for the delete; the
           threaded engines link it through the op blocks (depeng.h >>chain)
           and need memory only when their block pool is empty: queued or
           not, the memory stays until the op that writes it is done */
        if (kinds[k] == DP_ENGINE_NAIVE) CHECK(g_last_item == DP_LOGITEM_OUT_OF_MEMORY);
        g_nd_target[1023] = 1.0f;                 /* the op writes its output: the memory is still there (ASan) */
        dp_complete(g_nd_held, 0, NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);   /* given back at destroy */
    }
}

/* ---- one defined conversion into integer dtypes --------------------------- */
/* The conversion dp_dtype documents, written out here on its own: NaN 0,
   saturation at the ends, truncation toward zero in between. */
static int64_t want_int(double v, dp_dtype dt) {
    double lo = dt == DP_INT32 ? -2147483648.0 : dt == DP_INT64 ? -9223372036854775808.0 : 0.0;
    double hi = dt == DP_INT32 ? 2147483648.0 : dt == DP_INT64 ? 9223372036854775808.0 : 256.0;   /* the first value above */
    int64_t max = dt == DP_INT32 ? INT32_MAX : dt == DP_INT64 ? INT64_MAX : 255;
    int64_t min = dt == DP_INT32 ? INT32_MIN : dt == DP_INT64 ? INT64_MIN : 0;
    if (isnan(v)) return 0;
    if (v >= hi) return max;
    if (v <= lo - 1.0) return min;   /* in int64, lo - 1 rounds to lo */
    return (int64_t)trunc(v);        /* in range: (lo - 1, hi) truncates into [lo, hi - 1] */
}
/* An integer array's elements, widened to int64 without going through double. */
static int read_ints(dp_ndarray *a, int64_t *out, int64_t cap) {
    int64_t n = dp_shape_size(dp_nd_shape(a)), i;
    size_t bytes = dp_nd_bytes(a);
    unsigned char *buf = (unsigned char *)malloc(bytes ? bytes : 1);
    int ok = buf && n <= cap && dp_nd_read(a, buf, bytes, NULL) == DP_OK;
    for (i = 0; ok && i < n; i++) {
        switch (dp_nd_dtype(a)) {
        case DP_INT32: out[i] = ((const int32_t *)(void *)buf)[i]; break;
        case DP_INT64: out[i] = ((const int64_t *)(void *)buf)[i]; break;
        case DP_UINT8: out[i] = buf[i]; break;
        default: ok = 0; break;
        }
    }
    free(buf);
    return ok;
}
static const dp_dtype int_dtypes[3] = {DP_INT32, DP_INT64, DP_UINT8};
/* An integer array compared with the conversion of each double in want. */
static int ints_are(dp_ndarray *a, const double *want, int64_t n) {
    int64_t got[64], i;
    int ok = a && n <= 64 && dp_shape_size(dp_nd_shape(a)) == n && read_ints(a, got, 64);
    for (i = 0; ok && i < n; i++) {
        if (got[i] != want_int(want[i], dp_nd_dtype(a))) {
            fprintf(stderr, "  %s element %lld: %g gave %lld, not %lld\n", dp_dtype_name(dp_nd_dtype(a)), (long long)i, want[i],
                    (long long)got[i], (long long)want_int(want[i], dp_nd_dtype(a)));
            ok = 0;
        }
    }
    return ok;
}
static void test_int_conversion_reference(void) {
    /* the rule's table, independent of the library */
    CHECK(want_int(NAN, DP_INT32) == 0 && want_int(HUGE_VAL, DP_INT32) == INT32_MAX && want_int(-HUGE_VAL, DP_INT32) == INT32_MIN);
    CHECK(want_int(1e20, DP_INT64) == INT64_MAX && want_int(-1e20, DP_INT64) == INT64_MIN && want_int(-9223372036854775808.0, DP_INT64) == INT64_MIN);
    CHECK(want_int(9223372036854775808.0, DP_INT64) == INT64_MAX && want_int(2147483648.0, DP_INT32) == INT32_MAX);
    CHECK(want_int(-2147483648.5, DP_INT32) == INT32_MIN && want_int(2147483647.5, DP_INT32) == INT32_MAX);
    CHECK(want_int(-0.5, DP_UINT8) == 0 && want_int(255.5, DP_UINT8) == 255 && want_int(256, DP_UINT8) == 255 && want_int(-1, DP_UINT8) == 0);
    CHECK(want_int(-0.5, DP_INT32) == 0 && want_int(-1.9, DP_INT64) == -1 && want_int(2.9, DP_UINT8) == 2);
}
static void test_int_conversion_full_arange(void) {
    static const double edges[] = {NAN, HUGE_VAL, -HUGE_VAL, 1e20, -1e20, -0.5, 0.5, 255.5, 256, -1, -1.9, 2147483647.5,
                                   2147483648.0, -2147483648.5, -2147483649.0, 4611686018427387904.0, 9223372036854775808.0,
                                   -9223372036854775808.0, 18446744073709551616.0, -18446744073709551616.0};
    dp_shape s3 = {1, {3}};
    int k, t, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        for (t = 0; t < 3; t++) {
            dp_dtype dt = int_dtypes[t];
            for (i = 0; i < (int)(sizeof edges / sizeof edges[0]); i++) {
                dp_ndarray *a = NULL;
                double want[3];
                want[0] = want[1] = want[2] = edges[i];
                CHECK(dp_nd_full(e, &s3, dt, CPU0, edges[i], &a) == DP_OK && ints_are(a, want, 3));
                dp_nd_release(a);
            }
            {   /* arange across the ends of the range */
                static const double from_top[5] = {2147483645.0, 2147483646.0, 2147483647.0, 2147483648.0, 2147483649.0};
                static const double big[3] = {1e19, 1.5e19, 2e19}, low[6] = {-3, -2, -1, 0, 1, 2};
                static const double frac[4] = {-1.5, -0.5, 0.5, 1.5}, top[4] = {253.5, 254.5, 255.5, 256.5};
                dp_ndarray *a = NULL, *b = NULL, *c = NULL, *d = NULL, *f = NULL;
                CHECK(dp_nd_arange(e, 2147483645.0, 2147483650.0, 1, dt, CPU0, &a) == DP_OK && ints_are(a, from_top, 5));
                CHECK(dp_nd_arange(e, 1e19, 2.1e19, 5e18, dt, CPU0, &b) == DP_OK && ints_are(b, big, 3));
                CHECK(dp_nd_arange(e, -3, 3, 1, dt, CPU0, &c) == DP_OK && ints_are(c, low, 6));
                CHECK(dp_nd_arange(e, -1.5, 2, 1, dt, CPU0, &d) == DP_OK && ints_are(d, frac, 4));
                CHECK(dp_nd_arange(e, 253.5, 257, 1, dt, CPU0, &f) == DP_OK && ints_are(f, top, 4));
                dp_nd_release(a); dp_nd_release(b); dp_nd_release(c); dp_nd_release(d); dp_nd_release(f);
            }
            {   /* -1e19 down to -2e19 in int64: the minimum, as the top saturates to the maximum */
                static const double neg[3] = {-1e19, -1.5e19, -2e19};
                dp_ndarray *a = NULL;
                CHECK(dp_nd_arange(e, -1e19, -2.1e19, -5e18, dt, CPU0, &a) == DP_OK && ints_are(a, neg, 3));
                dp_nd_release(a);
            }
        }
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}
/* Draws into each integer dtype are the float64 draws of the same seed,
   converted: through dp_nd_random_* and the random operators. */
static void test_int_conversion_random(void) {
    enum { N = 64 };
    dp_shape s = {1, {N}};
    const char *keys[4] = {"shape", "low", "high", "dtype"}, *nkeys[4] = {"shape", "loc", "scale", "dtype"};
    const char *uvals[4] = {"(64,)", "-300", "300", NULL}, *nvals[4] = {"(64,)", "0", "1e19", NULL};
    static const char *dtype_names[3] = {"int32", "int64", "uint8"};
    int k, t, i;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        for (t = 0; t < 3; t++) {
            dp_dtype dt = int_dtypes[t];
            double ref[N];
            dp_ndarray *f = NULL, *a = NULL, *b = NULL;
            /* uniform in [-5, 5): negative draws are 0 in uint8, never 251..255 */
            CHECK(dp_random_seed(e, CPU0, 11) == DP_OK && dp_nd_random_uniform(e, -5, 5, &s, DP_FLOAT64, CPU0, &f) == DP_OK);
            CHECK(dp_nd_read(f, ref, sizeof ref, NULL) == DP_OK);
            CHECK(dp_random_seed(e, CPU0, 11) == DP_OK && dp_nd_random_uniform(e, -5, 5, &s, dt, CPU0, &a) == DP_OK && ints_are(a, ref, N));
            if (dt == DP_UINT8) {
                int64_t got[N];
                int zeros = 0, in_range = read_ints(a, got, N);
                for (i = 0; i < N; i++) { in_range = in_range && got[i] <= 4; zeros += got[i] == 0; }
                CHECK(in_range && zeros > N / 4);
            }
            dp_nd_release(f); dp_nd_release(a); f = a = NULL;
            /* normal with a huge spread: both ends saturate */
            CHECK(dp_random_seed(e, CPU0, 12) == DP_OK && dp_nd_random_normal(e, 0, 1e20, &s, DP_FLOAT64, CPU0, &f) == DP_OK);
            CHECK(dp_nd_read(f, ref, sizeof ref, NULL) == DP_OK);
            CHECK(dp_random_seed(e, CPU0, 12) == DP_OK && dp_nd_random_normal(e, 0, 1e20, &s, dt, CPU0, &a) == DP_OK && ints_are(a, ref, N));
            dp_nd_release(f); dp_nd_release(a); f = a = NULL;
            /* the operators */
            uvals[3] = "float64"; nvals[3] = "float64";
            CHECK(dp_random_seed(e, CPU0, 13) == DP_OK && invoke_str(e, "random_uniform", 0, NULL, 4, keys, uvals, 0, 1, &f, NULL) == DP_OK);
            CHECK(dp_nd_read(f, ref, sizeof ref, NULL) == DP_OK);
            uvals[3] = dtype_names[t];
            CHECK(dp_random_seed(e, CPU0, 13) == DP_OK && invoke_str(e, "random_uniform", 0, NULL, 4, keys, uvals, 0, 1, &a, NULL) == DP_OK);
            CHECK(dp_nd_dtype(a) == dt && ints_are(a, ref, N));
            dp_nd_release(f); f = NULL;
            CHECK(dp_random_seed(e, CPU0, 14) == DP_OK && invoke_str(e, "random_normal", 0, NULL, 4, nkeys, nvals, 0, 1, &f, NULL) == DP_OK);
            CHECK(dp_nd_read(f, ref, sizeof ref, NULL) == DP_OK);
            nvals[3] = dtype_names[t];
            CHECK(dp_random_seed(e, CPU0, 14) == DP_OK && invoke_str(e, "random_normal", 0, NULL, 4, nkeys, nvals, 0, 1, &b, NULL) == DP_OK);
            CHECK(dp_nd_dtype(b) == dt && ints_are(b, ref, N));
            dp_nd_release(f); dp_nd_release(a); dp_nd_release(b);
        }
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}
/* Operator results that are NaN, infinite or out of range, stored into
   integer arrays by the element kernels, reductions, one_hot and add-to. */
static dp_ndarray *ints(dp_engine *e, dp_dtype dt, int64_t n, const double *v) {
    dp_shape s = {1, {n}};
    int64_t buf[16], i;
    unsigned char bytes[16 * 8];
    for (i = 0; i < n; i++) buf[i] = (int64_t)v[i];
    for (i = 0; i < n; i++) {
        if (dt == DP_INT32) { int32_t x = (int32_t)buf[i]; memcpy(bytes + 4 * i, &x, 4); }
        else if (dt == DP_INT64) memcpy(bytes + 8 * i, &buf[i], 8);
        else bytes[i] = (unsigned char)buf[i];
    }
    {
        dp_ndarray *a = NULL;
        CHECK(dp_nd_from_host(e, &s, dt, CPU0, bytes, &a) == DP_OK);
        return a;
    }
}
static void test_int_conversion_operators(void) {
    int k, t;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k], DP_STORAGE_DEFAULT, 0);
        for (t = 0; t < 3; t++) {
            dp_dtype dt = int_dtypes[t];
            static const double xv[4] = {0, 1, 2, 100}, zero[4] = {0, 0, 0, 0}, sv[4] = {0, 1, 2, 200};
            dp_ndarray *x = ints(e, dt, 4, xv), *z = ints(e, dt, 4, zero), *r = NULL, *in2[2];
            {   /* log(0) = -inf, exp(100) beyond every integer type */
                const double want_log[4] = {-HUGE_VAL, 0, log(2.0), log(100.0)}, want_exp[4] = {1, exp(1.0), exp(2.0), exp(100.0)};
                CHECK(invoke_str(e, "log", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && ints_are(r, want_log, 4));
                dp_nd_release(r); r = NULL;
                CHECK(invoke_str(e, "exp", 1, &x, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && ints_are(r, want_exp, 4));
                dp_nd_release(r); r = NULL;
            }
            {   /* 0 / 0 = NaN, 1 / 0 = +inf, and -x / 0 = -inf */
                const double want_div[4] = {NAN, HUGE_VAL, HUGE_VAL, HUGE_VAL}, want_neg[4] = {NAN, -HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
                dp_ndarray *n = NULL;
                in2[0] = x; in2[1] = z;
                CHECK(invoke_str(e, "div", 2, in2, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && ints_are(r, want_div, 4));
                dp_nd_release(r); r = NULL;
                CHECK(invoke_str(e, "mul_scalar", 1, &x, 0, NULL, NULL, -1, 1, &n, NULL) == DP_OK);
                in2[0] = n;
                if (dt != DP_UINT8) CHECK(invoke_str(e, "div", 2, in2, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && ints_are(r, want_neg, 4));
                dp_nd_release(r); dp_nd_release(n); r = NULL;
            }
            {   /* sqrt(-x) is NaN; scalars past both ends */
                const double want_sqrt[4] = {0, NAN, NAN, NAN}, want_big[4] = {0, 1e30, 2e30, 1e32}, want_sub[4] = {-1e30, 1 - 1e30, 2 - 1e30, 100 - 1e30};
                dp_ndarray *n = NULL;
                CHECK(invoke_str(e, "rsub_scalar", 1, &x, 0, NULL, NULL, 0, 1, &n, NULL) == DP_OK);
                CHECK(invoke_str(e, "sqrt", 1, &n, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && (dt == DP_UINT8 || ints_are(r, want_sqrt, 4)));
                dp_nd_release(r); dp_nd_release(n); r = NULL;
                CHECK(invoke_str(e, "mul_scalar", 1, &x, 0, NULL, NULL, 1e30, 1, &r, NULL) == DP_OK && ints_are(r, want_big, 4));
                dp_nd_release(r); r = NULL;
                CHECK(invoke_str(e, "sub_scalar", 1, &x, 0, NULL, NULL, 1e30, 1, &r, NULL) == DP_OK && ints_are(r, want_sub, 4));
                dp_nd_release(r); r = NULL;
            }
            {   /* add-to saturates: the output holds the top already */
                dp_ndarray *top = NULL;
                dp_req add = DP_REQ_ADD;
                const double want_add[4] = {1e20, 1e20, 1e20, 1e20};
                CHECK(dp_nd_full(e, dp_nd_shape(x), dt, CPU0, 1e20, &top) == DP_OK);
                CHECK(invoke_str(e, "mul_scalar", 1, &x, 0, NULL, NULL, 1e30, 1, &top, &add) == DP_OK && ints_are(top, want_add, 4));
                dp_nd_release(top);
            }
            {   /* reductions: a sum past the top wraps around in integers (4 * max is -4, or
                   1020 - 768 in uint8), as NumPy's; the mean of nothing (NaN) */
                dp_ndarray *s = ints(e, dt, 4, sv), *big = NULL, *empty = NULL;
                dp_shape s0 = {1, {0}};
                const double want_sum[1] = {dt == DP_UINT8 ? 252.0 : -4.0}, want_mean[1] = {NAN};
                CHECK(dp_nd_full(e, dp_nd_shape(x), dt, CPU0, 1e20, &big) == DP_OK);
                CHECK(invoke_str(e, "sum", 1, &big, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && ints_are(r, want_sum, 1));
                dp_nd_release(r); r = NULL;
                CHECK(dp_nd_zeros(e, &s0, dt, CPU0, &empty) == DP_OK);
                CHECK(invoke_str(e, "mean", 1, &empty, 0, NULL, NULL, 0, 1, &r, NULL) == DP_OK && ints_are(r, want_mean, 1));
                dp_nd_release(r); dp_nd_release(s); dp_nd_release(big); dp_nd_release(empty); r = NULL;
            }
            {   /* one_hot with on / off values past the ends and NaN */
                static const char *names[3] = {"int32", "int64", "uint8"};
                const char *keys[4] = {"depth", "on_value", "off_value", "dtype"}, *vals[4] = {"2", "1e20", "nan", NULL};
                dp_ndarray *idx = ints(e, dt, 2, xv);
                const double want_oh[4] = {1e20, NAN, NAN, 1e20};
                vals[3] = names[t];
                CHECK(invoke_str(e, "one_hot", 1, &idx, 4, keys, vals, 0, 1, &r, NULL) == DP_OK && ints_are(r, want_oh, 4));
                vals[1] = "-inf";
                {
                    const double want_neg[4] = {-HUGE_VAL, NAN, NAN, -HUGE_VAL};
                    dp_nd_release(r); r = NULL;
                    CHECK(invoke_str(e, "one_hot", 1, &idx, 4, keys, vals, 0, 1, &r, NULL) == DP_OK && ints_are(r, want_neg, 4));
                }
                dp_nd_release(r); dp_nd_release(idx); r = NULL;
            }
            dp_nd_release(x); dp_nd_release(z);
        }
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* The device's resources (random generator, workspace) are made on first
   use: when that allocation fails, the caller hears DP_ERROR_OUT_OF_MEMORY
   with an OUT_OF_MEMORY log line, never "no such device". Every allocation
   of the first dp_random_seed, dp_nd_random_uniform and a random operator's
   invocation is failed in turn, each on a fresh engine. */
static void test_resources_out_of_memory(void) {
    int which;
    for (which = 0; which < 3; which++) {
        long at;
        int failed_some = 0;
        for (at = 1; at < 200; at++) {
            dp_engine_desc d;
            dp_engine *e = NULL;
            dp_ndarray *a = NULL;
            dp_ctx cpu = {DP_DEV_CPU, 0};
            dp_shape s = {1, {4}};
            dp_result r;
            memset(&d, 0, sizeof d);
            d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.logger.func = quiet_logger;
            d.allocator.alloc = failing_alloc; d.allocator.free = failing_free;
            if (dp_engine_create(&d, &e) != DP_OK) { CHECK(0); return; }
            __atomic_store_n(&g_alloc_calls, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_alloc_failures, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_fail_at, at, __ATOMIC_RELEASE);
            g_last_item = 0;
            if (which == 0) r = dp_random_seed(e, cpu, 7);
            else if (which == 1) r = dp_nd_random_uniform(e, 0, 1, &s, DP_FLOAT32, cpu, &a);
            else {
                dp_invoke_desc inv;
                memset(&inv, 0, sizeof inv);
                inv.op = "random_uniform"; inv.params[0].name = "shape"; inv.params[0].s = "(4,)";
                r = dp_invoke(e, &inv, &a);
            }
            __atomic_store_n(&g_fail_at, 0, __ATOMIC_RELEASE);
            if (r != DP_OK) {
                failed_some = 1;
                CHECK(r == DP_ERROR_OUT_OF_MEMORY && g_last_item == DP_LOGITEM_OUT_OF_MEMORY);
                if (r != DP_ERROR_OUT_OF_MEMORY || g_last_item != DP_LOGITEM_OUT_OF_MEMORY)
                    fprintf(stderr, "  call %d, allocation %ld failed: %s, log item %u\n", which, at, dp_result_string(r), (unsigned)g_last_item);
            }
            dp_nd_release(a);
            dp_engine_destroy(e, NULL);
            CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
            if (__atomic_load_n(&g_alloc_failures, __ATOMIC_ACQUIRE) == 0) break;   /* past the last allocation */
        }
        CHECK(failed_some);
    }
}

/* An array whose release could not be queued (out of memory) is kept until
   dp_engine_destroy. When it borrowed from another array (dp_nd_borrow) and
   was the lender's last user, destroy must free the lender there and then:
   a delete pushed at that point is run by a worker after the storage is
   gone. The hook holds destroy just after the teardown, so a late op would
   touch freed memory (ASan) or leave the lender unfreed. */
static int g_hold_teardown;   /* the hook is set for the whole run (main): engines' threads read it */
static void storage_gone_hook(const char *point) {
    if (__atomic_load_n(&g_hold_teardown, __ATOMIC_ACQUIRE) && strcmp(point, "extensions_destroyed") == 0) {
        struct timespec ts = {0, 30 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
static void test_kept_borrower_at_destroy(void) {
    int type, kept = 0;
    for (type = 0; type < 2; type++) {
        long from;
        for (from = 1; from < 64; from++) {
            dp_engine_desc d;
            dp_engine *e = NULL;
            dp_ndarray *lender = NULL, *borrower = NULL;
            dp_ctx cpu = {DP_DEV_CPU, 0};
            dp_shape s = {1, {256}};
            memset(&d, 0, sizeof d);
            d.type = type ? DP_ENGINE_PERDEVICE : DP_ENGINE_POOLED; d.ignore_env = 1; d.cpu_worker_nthreads = 1;
            d.logger.func = quiet_logger;
            d.allocator.alloc = failing_alloc; d.allocator.free = failing_free;
            if (dp_engine_create(&d, &e) != DP_OK) { CHECK(0); return; }
            if (dp_nd_empty(e, &s, DP_FLOAT32, cpu, &lender) != DP_OK || dp_nd_borrow(lender, 0, 512, &borrower) != DP_OK) { CHECK(0); return; }
            dp_nd_release(lender);                  /* the borrower holds it now */
            __atomic_store_n(&g_alloc_calls, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_alloc_failures, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_fail_from, from, __ATOMIC_RELEASE);
            __atomic_store_n(&g_last_item, 0, __ATOMIC_RELAXED);
            dp_nd_release(borrower);
            __atomic_store_n(&g_fail_from, 0, __ATOMIC_RELEASE);
            /* the release may be logged by a worker (a chain engine's delete
               of the lender, pushed from the op that frees the borrower) */
            if (__atomic_load_n(&g_last_item, __ATOMIC_RELAXED) == DP_LOGITEM_OUT_OF_MEMORY) kept++;
            __atomic_store_n(&g_hold_teardown, 1, __ATOMIC_RELEASE);
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
            __atomic_store_n(&g_hold_teardown, 0, __ATOMIC_RELEASE);
            CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
            if (__atomic_load_n(&g_alloc_failures, __ATOMIC_ACQUIRE) == 0) break;   /* past the release's last allocation */
        }
    }
    CHECK(kept > 0);   /* the case was reached */
}

int main(void) {
    static const test_case tests[] = {
        {"dtypes_shapes", test_dtypes_shapes}, {"create", test_create}, {"host_io_and_ops", test_host_io_and_ops},
        {"views", test_views}, {"storage", test_storage}, {"release_pool_frees_temp_space", test_release_pool_frees_temp_space}, {"copies", test_copies}, {"failures", test_failures},
        {"bad_input", test_bad_input}, {"resources", test_resources}, {"resources_out_of_memory", test_resources_out_of_memory}, {"kept_borrower_at_destroy", test_kept_borrower_at_destroy}, {"files", test_files},
        {"load_unreadable_paths", test_load_unreadable_paths}, {"npz_large_cap", test_npz_large_cap}, {"operators", test_operators},
        {"reductions", test_reductions}, {"nn_ops", test_nn_ops}, {"linear", test_linear}, {"same_results_all_engines", test_same_results_all_engines},
        {"gradients", test_gradients}, {"pinned_and_gpu_kernels", test_pinned_and_gpu_kernels},
        {"release_under_oom", test_release_under_oom}, {"int_conversion_reference", test_int_conversion_reference},
        {"int_conversion_full_arange", test_int_conversion_full_arange}, {"int_conversion_random", test_int_conversion_random},
        {"int_conversion_operators", test_int_conversion_operators},
    };
    g_fake_gpu.name = "fake"; g_fake_gpu.device_count = fake_count; g_fake_gpu.stream_create = fake_stream_create;
    g_fake_gpu.stream_destroy = fake_stream_destroy; g_fake_gpu.stream_synchronize = fake_sync;
    g_fake_gpu.error_string = fake_err;
    g_fake_memory.mem_alloc = fake_alloc; g_fake_memory.mem_free = fake_free; g_fake_memory.mem_copy = fake_copy;
    dp_test_hook_fn = storage_gone_hook;   /* before any engine starts a thread */
    return run_tests("ndarray", tests, (int)(sizeof tests / sizeof tests[0]));
}
