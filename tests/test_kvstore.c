/* tests/test_kvstore.c - the key-value store (dp_kv_*): sums and updates
   against a sequential reference for random keys, shapes, device counts and
   push/pull orders on the three engines; that a pull waits for its key's
   pushes only; priorities; the global reduction hook; failures and bad
   input; data-parallel training over two CPU contexts against one. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L   /* sched_yield */
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "test_common.h"
#include "kv_digits.h"
#include <limits.h>
#include <sched.h>    /* sched_yield: the waits below spin on a flag */
#include <string.h>

static dp_engine *make_engine(dp_engine_type type) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
    d.logger.func = quiet_logger;
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    return e;
}
static const dp_engine_type engines[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
static const char *engine_names[3] = {"naive", "pooled", "perdevice"};

static uint64_t rng_state = 12345;
static uint32_t rnd(uint32_t n) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}
static float rnd_float(void) { return (float)((int)rnd(2001) - 1000) / 97.0f; }

/* ---- random sums and updates against a reference ----------------------- */
enum { MODE_SUM, MODE_SGD, MODE_FN, MODE_COUNT };
static const char *mode_names[MODE_COUNT] = {"sum", "sgd_update", "updater function"};
/* the C updater: stored += merged, through the registry */
static int g_updater_calls;
static dp_result add_updater(dp_kvstore *kv, int key, dp_ndarray *merged, dp_ndarray *stored, int priority, void *user) {
    dp_req add = DP_REQ_ADD;
    (void)kv; (void)key; (void)priority; (void)user;
    g_updater_calls++;
    return invoke_str(dp_nd_engine(stored), "_copy", 1, &merged, 0, NULL, NULL, 0, 1, &stored, &add);
}

typedef struct ref_key { int key; dp_shape shape; int64_t n; float *value; } ref_key;
typedef struct pending_pull { dp_ndarray *out; float *expect; int64_t n; } pending_pull;

static void random_trial(dp_engine_type type, int mode, int trial) {
    dp_engine *eng = make_engine(type);
    dp_kvstore *kv = NULL;
    ref_key keys[5];
    pending_pull pulls[64];
    int nkeys = 1 + (int)rnd(5), npulls = 0, step, i, k;
    int ndev = 1 + (int)rnd(4);
    char what[128];
    snprintf(what, sizeof what, "%s engine, %s, trial %d, %d devices", engine_names[type - 1], mode_names[mode], trial, ndev);
    CHECK(dp_kv_create(eng, NULL, &kv) == DP_OK);
    if (mode == MODE_SGD) {
        const char *key[1] = {"lr"}, *val[1] = {"0.1"};
        CHECK(kv_set_optimizer(kv, "sgd_update", 1, key, val) == DP_OK);
    } else if (mode == MODE_FN) CHECK(dp_kv_set_updater(kv, add_updater, NULL) == DP_OK);
    for (k = 0; k < nkeys; k++) {
        dp_ndarray *init = NULL;
        int d;
        keys[k].key = (int)rnd(1000) - 500;
        for (i = 0; i < k; i++) if (keys[i].key == keys[k].key) { keys[k].key += 1000 + k; break; }
        memset(&keys[k].shape, 0, sizeof keys[k].shape);
        keys[k].shape.ndim = 1 + (int)rnd(3);
        for (d = 0; d < keys[k].shape.ndim; d++) keys[k].shape.dims[d] = 1 + rnd(9);
        keys[k].n = dp_shape_size(&keys[k].shape);
        keys[k].value = (float *)malloc((size_t)keys[k].n * sizeof(float));
        for (i = 0; i < keys[k].n; i++) keys[k].value[i] = rnd_float();
        CHECK(dp_nd_from_host(eng, &keys[k].shape, DP_FLOAT32, kvd_ctx((int)rnd(4)), keys[k].value, &init) == DP_OK);
        CHECK(dp_kv_init(kv, keys[k].key, init) == DP_OK);
        dp_nd_release(init);     /* the store keeps its own copy */
    }
    g_updater_calls = 0;
    for (step = 0; step < 40; step++) {
        ref_key *r = &keys[rnd((uint32_t)nkeys)];
        int d, count = 1 + (int)rnd((uint32_t)ndev);
        dp_ndarray *arrays[KVD_MAX_DEV];
        float *host = (float *)malloc((size_t)r->n * sizeof(float));
        if (rnd(3) && npulls < 64) {           /* push: values on devices 0..count-1 */
            float *sum = (float *)malloc((size_t)r->n * sizeof(float));
            for (d = 0; d < count; d++) {
                for (i = 0; i < r->n; i++) { host[i] = rnd_float(); sum[i] = d ? sum[i] + host[i] : host[i]; }
                CHECK(dp_nd_from_host(eng, &r->shape, DP_FLOAT32, kvd_ctx(d), host, &arrays[d]) == DP_OK);
            }
            CHECK(dp_kv_push(kv, r->key, arrays, count, (int)rnd(3)) == DP_OK);
            for (d = 0; d < count; d++) {      /* a write after the push must not change what it sums */
                for (i = 0; i < r->n; i++) host[i] = 1e6f;
                CHECK(dp_nd_write(arrays[d], host, (size_t)r->n * sizeof(float), NULL) == DP_OK);
                dp_nd_release(arrays[d]);
            }
            /* sgd_update computes a float32 weight in float32 (lr 0.1, wd 0: w - 0.1f * g) */
            for (i = 0; i < r->n; i++)
                r->value[i] = mode == MODE_SUM ? sum[i] : mode == MODE_SGD ? r->value[i] - 0.1f * sum[i] : r->value[i] + sum[i];
            free(sum);
        } else {                               /* pull into count arrays, read at the end */
            for (d = 0; d < count && npulls < 64; d++) {
                pending_pull *p = &pulls[npulls++];
                CHECK(dp_nd_zeros(eng, &r->shape, DP_FLOAT32, kvd_ctx(d), &p->out) == DP_OK);
                arrays[d] = p->out;
                p->n = r->n;
                p->expect = (float *)malloc((size_t)r->n * sizeof(float));
                memcpy(p->expect, r->value, (size_t)r->n * sizeof(float));
            }
            CHECK(dp_kv_pull(kv, r->key, arrays, d, (int)rnd(3)) == DP_OK);
        }
        free(host);
    }
    for (i = 0; i < npulls; i++) {
        float *got = (float *)malloc((size_t)pulls[i].n * sizeof(float));
        CHECK(dp_nd_read(pulls[i].out, got, (size_t)pulls[i].n * sizeof(float), NULL) == DP_OK);
        if (memcmp(got, pulls[i].expect, (size_t)pulls[i].n * sizeof(float)) != 0) {
            fprintf(stderr, "  %s: pull %d differs from the reference (first %g, expected %g)\n", what, i, got[0], pulls[i].expect[0]);
            CHECK(0);
        }
        free(got); free(pulls[i].expect);
        dp_nd_release(pulls[i].out);
    }
    for (k = 0; k < nkeys; k++) {             /* the stored arrays equal the reference, bitwise */
        float *got = (float *)malloc((size_t)keys[k].n * sizeof(float));
        CHECK(dp_nd_read(dp_kv_stored(kv, keys[k].key), got, (size_t)keys[k].n * sizeof(float), NULL) == DP_OK);
        CHECK(memcmp(got, keys[k].value, (size_t)keys[k].n * sizeof(float)) == 0);
        free(got); free(keys[k].value);
    }
    dp_kv_destroy(kv);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_random_against_reference(void) {
    int e, mode, trial;
    for (e = 0; e < 3; e++)
        for (mode = 0; mode < MODE_COUNT; mode++)
            for (trial = 0; trial < 6; trial++) random_trial(engines[e], mode, trial);
}

/* ---- ordering ------------------------------------------------------------ */
static dp_completion g_held;
static int g_holding;     /* set (release) once g_held is the token */
static void hold_op(dp_run_ctx *rc, void *arg, dp_completion done) {
    (void)rc; (void)arg;
    g_held = done;
    __atomic_store_n(&g_holding, 1, __ATOMIC_RELEASE);
}
/* A pull waits for the pushes on its key and for nothing else; a read of a
   pulled array waits for the pull. */
static void test_pull_waits_for_its_key_only(void) {
    int e;
    for (e = 0; e < 3; e++) {
        dp_engine *eng = make_engine(engines[e]);
        dp_kvstore *kv = NULL;
        dp_shape s = {1, {4}};
        dp_ndarray *a = NULL, *b = NULL, *ga = NULL, *gb = NULL, *out_a = NULL, *out_b = NULL;
        dp_var held;
        float v[4];
        CHECK(dp_kv_create(eng, NULL, &kv) == DP_OK);
        CHECK(dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(0), &a) == DP_OK && dp_nd_ones(eng, &s, DP_FLOAT32, kvd_ctx(0), &b) == DP_OK);
        CHECK(dp_kv_init(kv, 1, a) == DP_OK && dp_kv_init(kv, 2, b) == DP_OK);
        CHECK(dp_nd_full(eng, &s, DP_FLOAT32, kvd_ctx(1), 3, &ga) == DP_OK && dp_nd_full(eng, &s, DP_FLOAT32, kvd_ctx(0), 5, &gb) == DP_OK);
        CHECK(dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(0), &out_a) == DP_OK && dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(1), &out_b) == DP_OK);
        CHECK(dp_wait_all(eng, NULL) == DP_OK);
        held = dp_nd_var(ga);                 /* ga's producer has not finished */
        __atomic_store_n(&g_holding, 0, __ATOMIC_RELAXED);
        CHECK(dp_push_async(eng, hold_op, NULL, NULL, 0, &held, 1) == DP_OK);
        CHECK(dp_kv_push(kv, 1, &ga, 1, 0) == DP_OK && dp_kv_pull(kv, 1, &out_a, 1, 0) == DP_OK);
        CHECK(dp_kv_push(kv, 2, &gb, 1, 0) == DP_OK && dp_kv_pull(kv, 2, &out_b, 1, 0) == DP_OK);
        CHECK(dp_nd_read(out_b, v, sizeof v, NULL) == DP_OK && v[0] == 5);         /* key 2: not held up by key 1 */
        CHECK(dp_wait_var_for(eng, dp_nd_var(out_a), 50, NULL) == DP_ERROR_TIMEOUT); /* key 1: waits */
        while (!__atomic_load_n(&g_holding, __ATOMIC_ACQUIRE)) sched_yield();
        dp_complete(g_held, 0, NULL);
        CHECK(dp_nd_read(out_a, v, sizeof v, NULL) == DP_OK && v[0] == 3);
        dp_nd_release(a); dp_nd_release(b); dp_nd_release(ga); dp_nd_release(gb); dp_nd_release(out_a); dp_nd_release(out_b);
        dp_kv_destroy(kv);
        CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
    }
}

/* A higher priority push runs first when both wait for the priority pool. */
static int g_order[4], g_norder;
static volatile int g_release_pool;
static int block_pool(dp_run_ctx *rc, void *arg) {
    (void)rc; (void)arg;
    while (!__atomic_load_n(&g_release_pool, __ATOMIC_ACQUIRE)) sched_yield();
    return 0;
}
static int record_key(dp_run_ctx *rc, void *arg) { (void)rc; g_order[g_norder++] = (int)(intptr_t)arg; return 0; }
static dp_result recording_updater(dp_kvstore *kv, int key, dp_ndarray *merged, dp_ndarray *stored, int priority, void *user) {
    dp_push_desc d;
    dp_var r = dp_nd_var(merged), w = dp_nd_var(stored);
    (void)kv; (void)user;
    memset(&d, 0, sizeof d);
    d.fn = record_key; d.arg = (void *)(intptr_t)key; d.reads = &r; d.num_reads = 1; d.writes = &w; d.num_writes = 1;
    d.prop = DP_PROP_CPU_PRIORITIZED; d.priority = priority; d.name = "record";
    return dp_push(dp_nd_engine(stored), &d);
}
static void test_priorities(void) {
    dp_engine *eng = NULL;
    dp_engine_desc ed;
    dp_kvstore *kv = NULL;
    dp_shape s = {1, {8}};
    dp_ndarray *x = NULL, *g1 = NULL, *g2 = NULL;
    dp_push_desc d;
    /* The order is the priority pool's alone: a helping waiter would run the
       second record beside the pool's worker, and the two could finish in
       either order. */
    memset(&ed, 0, sizeof ed);
    ed.type = DP_ENGINE_PERDEVICE; ed.cpu_worker_nthreads = 2; ed.ignore_env = 1;
    ed.logger.func = quiet_logger; ed.no_wait_help = 1;
    CHECK(dp_engine_create(&ed, &eng) == DP_OK);
    CHECK(dp_kv_create(eng, NULL, &kv) == DP_OK && dp_kv_set_updater(kv, recording_updater, NULL) == DP_OK);
    CHECK(dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(0), &x) == DP_OK && dp_kv_init(kv, 1, x) == DP_OK && dp_kv_init(kv, 2, x) == DP_OK);
    CHECK(dp_nd_ones(eng, &s, DP_FLOAT32, kvd_ctx(0), &g1) == DP_OK && dp_nd_ones(eng, &s, DP_FLOAT32, kvd_ctx(0), &g2) == DP_OK);
    CHECK(dp_wait_all(eng, NULL) == DP_OK);
    g_norder = 0; g_release_pool = 0;
    memset(&d, 0, sizeof d);
    d.fn = block_pool; d.prop = DP_PROP_CPU_PRIORITIZED; d.priority = 100; d.name = "block";
    CHECK(dp_push(eng, &d) == DP_OK);
    CHECK(dp_kv_push(kv, 1, &g1, 1, 0) == DP_OK);     /* pushed first, low priority */
    CHECK(dp_kv_push(kv, 2, &g2, 1, 10) == DP_OK);
    __atomic_store_n(&g_release_pool, 1, __ATOMIC_RELEASE);
    CHECK(dp_wait_all(eng, NULL) == DP_OK);
    CHECK(g_norder == 2 && g_order[0] == 2 && g_order[1] == 1);
    dp_nd_release(x); dp_nd_release(g1); dp_nd_release(g2);
    dp_kv_destroy(kv);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}

/* ---- the global reduction hook -------------------------------------------- */
static int g_hook_calls;
static dp_result triple_reduce(dp_kvstore *kv, int key, dp_ndarray *merged, int priority, void *user) {
    (void)kv; (void)priority;
    g_hook_calls++;
    CHECK(key == 7 && user == (void *)&g_hook_calls);
    /* three processes that pushed the same: merged *= 3, in place */
    return invoke_str(dp_nd_engine(merged), "mul_scalar", 1, &merged, 0, NULL, NULL, 3, 1, &merged, NULL);
}
static void test_global_reduce_hook(void) {
    int e;
    for (e = 0; e < 3; e++) {
        dp_engine *eng = make_engine(engines[e]);
        dp_kvstore *kv = NULL;
        dp_kvstore_desc kd;
        dp_shape s = {1, {3}};
        dp_ndarray *w = NULL, *g[2] = {NULL, NULL}, *out = NULL;
        const char *key[1] = {"lr"}, *val[1] = {"0.5"};
        float v[3];
        memset(&kd, 0, sizeof kd);
        kd.global_reduce = triple_reduce; kd.global_user = &g_hook_calls;
        g_hook_calls = 0;
        CHECK(dp_kv_create(eng, &kd, &kv) == DP_OK && kv_set_optimizer(kv, "sgd_update", 1, key, val) == DP_OK);
        CHECK(dp_nd_full(eng, &s, DP_FLOAT32, kvd_ctx(0), 10, &w) == DP_OK && dp_kv_init(kv, 7, w) == DP_OK);
        CHECK(dp_nd_full(eng, &s, DP_FLOAT32, kvd_ctx(0), 1, &g[0]) == DP_OK && dp_nd_full(eng, &s, DP_FLOAT32, kvd_ctx(1), 2, &g[1]) == DP_OK);
        CHECK(dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(1), &out) == DP_OK);
        CHECK(dp_kv_push(kv, 7, g, 2, 0) == DP_OK && dp_kv_pull(kv, 7, &out, 1, 0) == DP_OK);
        CHECK(dp_nd_read(out, v, sizeof v, NULL) == DP_OK && v[0] == 10 - 0.5f * 9 && v[2] == v[0]);   /* the update saw 3 * (1 + 2) */
        CHECK(g_hook_calls == 1);
        dp_nd_release(w); dp_nd_release(g[0]); dp_nd_release(g[1]); dp_nd_release(out);
        dp_kv_destroy(kv);
        CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
    }
}

/* ---- the global initialisation hook ---------------------------------------- */
/* What the hook saw: each dp_kv_init calls it once, failed ones too (local
   set, stored NULL), so that a distributed store's processes all take part
   in its collective; its error is dp_kv_init's and the key is not added. */
typedef struct { int calls, key, had_stored; dp_result local; } init_seen;
static dp_result refuse_key_2(dp_kvstore *kv, int key, dp_ndarray *stored, dp_result local, void *user) {
    init_seen *seen = (init_seen *)user;
    (void)kv;
    seen->calls++; seen->key = key; seen->had_stored = stored != NULL; seen->local = local;
    if (local == DP_OK && key == 3)   /* the agreed value: 5 + 37, pushed as an op on stored */
        return invoke_str(dp_nd_engine(stored), "add_scalar", 1, &stored, 0, NULL, NULL, 37, 1, &stored, NULL);
    return key == 2 ? DP_ERROR_INVALID_ARGS : DP_OK;
}
static void test_global_init_hook(void) {
    int e;
    for (e = 0; e < 3; e++) {
        dp_engine *eng = make_engine(engines[e]);
        dp_kvstore *kv = NULL;
        dp_kvstore_desc kd;
        init_seen seen;
        dp_shape s = {1, {3}};
        dp_ndarray *w = NULL, *out = NULL;
        float v[3];
        memset(&kd, 0, sizeof kd); memset(&seen, 0, sizeof seen);
        kd.global_init = refuse_key_2; kd.global_user = &seen;
        CHECK(dp_kv_create(eng, &kd, &kv) == DP_OK);
        CHECK(dp_nd_full(eng, &s, DP_FLOAT32, kvd_ctx(1), 5, &w) == DP_OK && dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(0), &out) == DP_OK);
        CHECK(dp_kv_init(kv, 1, w) == DP_OK && dp_kv_stored(kv, 1) != NULL);
        CHECK(seen.calls == 1 && seen.key == 1 && seen.had_stored && seen.local == DP_OK);
        CHECK(dp_kv_init(kv, 2, w) == DP_ERROR_INVALID_ARGS && dp_kv_stored(kv, 2) == NULL);   /* refused by the hook */
        CHECK(seen.calls == 2 && seen.key == 2 && seen.had_stored && seen.local == DP_OK);
        CHECK(dp_kv_init(kv, 1, w) == DP_ERROR_INVALID_ARGS);                                  /* a local failure reaches it */
        CHECK(seen.calls == 3 && seen.key == 1 && !seen.had_stored && seen.local == DP_ERROR_INVALID_ARGS);
        CHECK(dp_kv_init(kv, 4, NULL) == DP_ERROR_INVALID_ARGS && dp_kv_stored(kv, 4) == NULL);
        CHECK(seen.calls == 4 && seen.key == 4 && !seen.had_stored && seen.local == DP_ERROR_INVALID_ARGS);
        CHECK(dp_kv_init(kv, 3, w) == DP_OK && dp_kv_pull(kv, 3, &out, 1, 0) == DP_OK);        /* the hook's value, not w's */
        CHECK(dp_nd_read(out, v, sizeof v, NULL) == DP_OK && v[0] == 42 && v[2] == 42);
        CHECK(dp_kv_pull(kv, 1, &out, 1, 0) == DP_OK && dp_nd_read(out, v, sizeof v, NULL) == DP_OK && v[0] == 5 && v[2] == 5);
        dp_nd_release(w); dp_nd_release(out);
        dp_kv_destroy(kv);
        CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
    }
}

/* ---- GPU arrays, on a fake device backend (host memory) ------------------------ */
static int g_copies[3];     /* by kind: to the device, from it, device to device */
static int fake_count(void *u) { (void)u; return 2; }
static int fake_set(int dev, void *u) { (void)dev; (void)u; return 0; }
static int fake_stream_create(int dev, int is_copy, void **out, void *u) { (void)dev; (void)is_copy; (void)u; *out = (void *)g_copies; return 0; }
static int fake_stream_destroy(int dev, void *st, void *u) { (void)dev; (void)st; (void)u; return 0; }
static int fake_sync(int dev, void *st, void *u) { (void)dev; (void)st; (void)u; return 0; }
static const char *fake_err(int e, void *u) { (void)e; (void)u; return "fake error"; }
static int fake_alloc(int dev, size_t size, void **out, void *u) { (void)dev; (void)u; *out = malloc(size ? size : 1); return *out ? 0 : 2; }
static int fake_free(int dev, void *p, void *u) { (void)dev; (void)u; free(p); return 0; }
static int fake_copy(void *dst, const void *src, size_t n, int kind, int dev, void *stream, void *u) {
    (void)dev; (void)stream; (void)u;
    memcpy(dst, src, n);
    __atomic_fetch_add(&g_copies[kind], 1, __ATOMIC_RELAXED);
    return 0;
}
/* Gradients on two GPUs and the CPU are summed on the CPU (each GPU one
   copy from the device) and the result copied to each GPU output (one copy
   to the device each), on all three engines. */
static void test_gpu_arrays(void) {
    dp_device_backend be;
    dp_memory_backend mem;
    dp_storage_desc sd;
    int e;
    memset(&be, 0, sizeof be); memset(&mem, 0, sizeof mem); memset(&sd, 0, sizeof sd);
    be.name = "fake"; be.device_count = fake_count; be.set_device = fake_set; be.stream_create = fake_stream_create;
    be.stream_destroy = fake_stream_destroy; be.stream_synchronize = fake_sync; be.error_string = fake_err;
    mem.mem_alloc = fake_alloc; mem.mem_free = fake_free; mem.mem_copy = fake_copy;
    sd.memory = &mem;
    for (e = 0; e < 3; e++) {
        dp_engine_desc d;
        dp_engine *eng = NULL;
        dp_kvstore *kv = NULL;
        dp_shape s = {2, {3, 5}};
        dp_ctx gpu0 = {DP_DEV_GPU, 0}, gpu1 = {DP_DEV_GPU, 1};
        dp_ndarray *w = NULL, *g[3] = {NULL, NULL, NULL}, *out[2] = {NULL, NULL};
        float v[15];
        int i, before[3];
        memset(&d, 0, sizeof d);
        d.type = engines[e]; d.cpu_worker_nthreads = 2; d.ignore_env = 1; d.logger.func = quiet_logger; d.gpu_backend = &be;
        CHECK(dp_engine_create(&d, &eng) == DP_OK && dp_storage_configure(eng, &sd) == DP_OK);
        CHECK(dp_kv_create(eng, NULL, &kv) == DP_OK);
        CHECK(dp_nd_zeros(eng, &s, DP_FLOAT32, gpu0, &w) == DP_OK && dp_kv_init(kv, 3, w) == DP_OK);
        CHECK(dp_nd_full(eng, &s, DP_FLOAT32, gpu0, 1, &g[0]) == DP_OK && dp_nd_full(eng, &s, DP_FLOAT32, gpu1, 2, &g[1]) == DP_OK);
        CHECK(dp_nd_full(eng, &s, DP_FLOAT32, kvd_ctx(0), 4, &g[2]) == DP_OK);
        CHECK(dp_nd_empty(eng, &s, DP_FLOAT32, gpu0, &out[0]) == DP_OK && dp_nd_empty(eng, &s, DP_FLOAT32, gpu1, &out[1]) == DP_OK);
        CHECK(dp_wait_all(eng, NULL) == DP_OK);
        for (i = 0; i < 3; i++) before[i] = __atomic_load_n(&g_copies[i], __ATOMIC_RELAXED);
        CHECK(dp_kv_push(kv, 3, g, 3, 0) == DP_OK && dp_kv_pull(kv, 3, out, 2, 0) == DP_OK);
        CHECK(dp_wait_all(eng, NULL) == DP_OK);
        CHECK(g_copies[1] - before[1] == 2 && g_copies[0] - before[0] == 2 && g_copies[2] == before[2]);
        for (i = 0; i < 2; i++) {
            CHECK(dp_nd_read(out[i], v, sizeof v, NULL) == DP_OK && v[0] == 7 && v[14] == 7);
            CHECK(dp_nd_ctx(out[i]).dev_type == DP_DEV_GPU);
        }
        dp_nd_release(w); dp_nd_release(out[0]); dp_nd_release(out[1]);
        for (i = 0; i < 3; i++) dp_nd_release(g[i]);
        dp_kv_destroy(kv);
        CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
    }
}

/* Out of memory in a push whose gradients are on GPUs: each allocation
   from the k-th on refused, for every k until the push and pull go through.
   Every block must be freed with the size it was allocated with (an
   allocator may rely on it; the sum's record was freed as if it held only
   the gradients copied before the failure), every failure must be
   DP_ERROR_OUT_OF_MEMORY, and nothing may be left after destroy. */
enum { SIZED_MAX = 4096 };
static struct { void *p[SIZED_MAX]; size_t size[SIZED_MAX]; int n; long allocs, fail_from, wrong_size, outstanding; } g_sized;
static void *sized_alloc(size_t size, size_t align, void *user) {
    void *p;
    (void)align; (void)user;
    if (++g_sized.allocs >= g_sized.fail_from || g_sized.n == SIZED_MAX || (p = malloc(size ? size : 1)) == NULL) return NULL;
    g_sized.p[g_sized.n] = p; g_sized.size[g_sized.n++] = size;
    g_sized.outstanding += (long)size;
    return p;
}
static void sized_free(void *p, size_t size, void *user) {
    int i;
    (void)user;
    if (!p) return;
    for (i = 0; i < g_sized.n && g_sized.p[i] != p; i++) {}
    if (i == g_sized.n || g_sized.size[i] != size) g_sized.wrong_size++;
    if (i < g_sized.n) { g_sized.outstanding -= (long)g_sized.size[i]; g_sized.p[i] = g_sized.p[--g_sized.n]; g_sized.size[i] = g_sized.size[g_sized.n]; }
    free(p);
}
static void test_out_of_memory_in_gpu_push(void) {
    dp_device_backend be;
    dp_memory_backend mem;
    dp_storage_desc sd;
    long k;
    int done = 0, failures = 0;
    memset(&be, 0, sizeof be); memset(&mem, 0, sizeof mem); memset(&sd, 0, sizeof sd);
    be.name = "fake"; be.device_count = fake_count; be.set_device = fake_set; be.stream_create = fake_stream_create;
    be.stream_destroy = fake_stream_destroy; be.stream_synchronize = fake_sync; be.error_string = fake_err;
    mem.mem_alloc = fake_alloc; mem.mem_free = fake_free; mem.mem_copy = fake_copy;
    sd.memory = &mem;
    for (k = 0; k < 200 && !done; k++) {
        dp_engine_desc d;
        dp_engine *eng = NULL;
        dp_kvstore *kv = NULL;
        dp_shape s = {1, {4}};
        dp_ctx gpu0 = {DP_DEV_GPU, 0}, gpu1 = {DP_DEV_GPU, 1};
        dp_ndarray *w = NULL, *g[3] = {NULL, NULL, NULL}, *out = NULL;
        dp_result r;
        int i;
        memset(&g_sized, 0, sizeof g_sized);
        g_sized.fail_from = LONG_MAX;
        memset(&d, 0, sizeof d);
        d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.logger.func = quiet_logger; d.gpu_backend = &be;
        d.allocator.alloc = sized_alloc; d.allocator.free = sized_free;
        CHECK(dp_engine_create(&d, &eng) == DP_OK && dp_storage_configure(eng, &sd) == DP_OK && dp_kv_create(eng, NULL, &kv) == DP_OK);
        CHECK(dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(0), &w) == DP_OK && dp_kv_init(kv, 0, w) == DP_OK);
        CHECK(dp_nd_full(eng, &s, DP_FLOAT32, kvd_ctx(0), 1, &g[0]) == DP_OK && dp_nd_full(eng, &s, DP_FLOAT32, gpu0, 2, &g[1]) == DP_OK);
        CHECK(dp_nd_full(eng, &s, DP_FLOAT32, gpu1, 3, &g[2]) == DP_OK && dp_nd_zeros(eng, &s, DP_FLOAT32, gpu0, &out) == DP_OK);
        CHECK(dp_wait_all(eng, NULL) == DP_OK);
        g_sized.fail_from = g_sized.allocs + 1 + k;         /* from the push's k-th allocation on */
        r = dp_kv_push(kv, 0, g, 3, 0);
        if (r == DP_OK) r = dp_kv_pull(kv, 0, &out, 1, 0);
        if (r == DP_OK && g_sized.allocs < g_sized.fail_from) done = 1;   /* nothing refused: past the last k */
        if (r != DP_OK) { failures++; CHECK(r == DP_ERROR_OUT_OF_MEMORY); }
        g_sized.fail_from = LONG_MAX;
        dp_wait_all(eng, NULL);
        dp_nd_release(w); dp_nd_release(out);
        for (i = 0; i < 3; i++) dp_nd_release(g[i]);
        dp_kv_destroy(kv);
        dp_engine_destroy(eng, NULL);
        if (g_sized.wrong_size || g_sized.outstanding) printf("  k = %ld: %ld blocks freed with the wrong size, %ld bytes left\n", k, g_sized.wrong_size, g_sized.outstanding);
        CHECK(g_sized.wrong_size == 0 && g_sized.outstanding == 0);
    }
    CHECK(done && failures > 3);
}

/* ---- failures and bad input ------------------------------------------------ */
static int fail_op(dp_run_ctx *rc, void *arg) { (void)arg; dp_set_error(rc, "broken gradient"); return 42; }
static void test_failure_reaches_pulled_arrays(void) {
    int e;
    for (e = 0; e < 3; e++) {
        dp_engine *eng = make_engine(engines[e]);
        dp_kvstore *kv = NULL;
        dp_shape s = {1, {2}};
        dp_ndarray *w = NULL, *g = NULL, *out = NULL;
        dp_failure f;
        dp_var gv;
        float v[2];
        CHECK(dp_kv_create(eng, NULL, &kv) == DP_OK);
        CHECK(dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(0), &w) == DP_OK && dp_kv_init(kv, 0, w) == DP_OK);
        CHECK(dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(0), &g) == DP_OK && dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(0), &out) == DP_OK);
        gv = dp_nd_var(g);
        CHECK(dp_push_sync(eng, fail_op, NULL, NULL, 0, &gv, 1) == DP_OK);
        CHECK(dp_kv_push(kv, 0, &g, 1, 0) == DP_OK && dp_kv_pull(kv, 0, &out, 1, 0) == DP_OK);
        memset(&f, 0, sizeof f);
        CHECK(dp_nd_read(out, v, sizeof v, &f) == DP_ERROR_OP_FAILED && f.status == 42 && strstr(f.message, "broken gradient"));
        dp_wait_all(eng, NULL);
        dp_nd_release(w); dp_nd_release(g); dp_nd_release(out);
        dp_kv_destroy(kv);
        dp_engine_destroy(eng, NULL);
    }
}
static void test_bad_input(void) {
    dp_engine *eng = make_engine(DP_ENGINE_NAIVE);
    dp_kvstore *kv = NULL;
    dp_kvstore_desc kd;
    dp_shape s = {1, {2}}, s3 = {1, {3}};
    dp_ndarray *w = NULL, *w3 = NULL, *w64 = NULL;
    const char *key[1] = {"lr"}, *val[1] = {"abc"};
    memset(&kd, 0, sizeof kd);
    kd.ctx.dev_type = DP_DEV_GPU;
    CHECK(dp_kv_create(eng, &kd, &kv) == DP_ERROR_BAD_CONTEXT && kv == NULL);
    CHECK(dp_kv_create(NULL, NULL, &kv) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_kv_create(eng, NULL, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_kv_create(eng, NULL, &kv) == DP_OK);
    CHECK(dp_nd_zeros(eng, &s, DP_FLOAT32, kvd_ctx(0), &w) == DP_OK && dp_nd_zeros(eng, &s3, DP_FLOAT32, kvd_ctx(0), &w3) == DP_OK);
    CHECK(dp_nd_zeros(eng, &s, DP_FLOAT64, kvd_ctx(0), &w64) == DP_OK);
    CHECK(dp_kv_init(kv, 1, w) == DP_OK);
    g_last_item = 0;
    CHECK(dp_kv_init(kv, 1, w) == DP_ERROR_INVALID_ARGS && g_last_item == DP_LOGITEM_ND_ARGS);
    CHECK(dp_kv_init(kv, 2, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_kv_push(kv, 3, &w, 1, 0) == DP_ERROR_INVALID_ARGS);       /* unknown key */
    CHECK(dp_kv_push(kv, 1, &w3, 1, 0) == DP_ERROR_INVALID_ARGS);      /* shape */
    CHECK(dp_kv_push(kv, 1, &w64, 1, 0) == DP_ERROR_INVALID_ARGS);     /* dtype */
    CHECK(dp_kv_push(kv, 1, &w, 0, 0) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_kv_push(kv, 1, NULL, 1, 0) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_kv_pull(kv, 1, &w3, 1, 0) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_kv_pull(kv, 9, &w, 1, 0) == DP_ERROR_INVALID_ARGS);
    CHECK(kv_set_optimizer(kv, "no_such_update", 0, NULL, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(kv_set_optimizer(kv, "relu", 0, NULL, NULL) == DP_ERROR_INVALID_ARGS);    /* not an update */
    CHECK(kv_set_optimizer(kv, "sgd_update", 0, NULL, NULL) == DP_ERROR_INVALID_ARGS);   /* lr is required */
    CHECK(kv_set_optimizer(kv, "sgd_update", 1, key, val) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_kv_push(NULL, 1, &w, 1, 0) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_kv_stored(kv, 1) != NULL && dp_kv_stored(kv, 2) == NULL && dp_kv_stored(NULL, 1) == NULL);
    {   /* pulling into the stored array itself pushes no copy (a memcpy onto itself) */
        dp_ndarray *st = dp_kv_stored(kv, 1);
        dp_engine_stats before, after;
        CHECK(dp_wait_all(eng, NULL) == DP_OK);
        dp_engine_stats_get(eng, &before);
        CHECK(dp_kv_pull(kv, 1, &st, 1, 0) == DP_OK && dp_nd_wait_to_read(st, NULL) == DP_OK);
        dp_engine_stats_get(eng, &after);
        CHECK(after.pushed - before.pushed == 1);     /* the wait's own op only */
    }
    dp_kv_destroy(NULL);
    dp_nd_release(w); dp_nd_release(w3); dp_nd_release(w64);
    dp_kv_destroy(kv);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}

/* ---- data-parallel training ------------------------------------------------- */
/* Two CPU contexts with half a batch each against one with whole batches,
   one epoch: the same weights up to the order of the gradient sums (the
   sum of the halves' gradients is not the whole batch's bitwise); the
   tolerance is 1e-4 absolute. Two runs of the two-context training are
   bitwise equal (fixed reduction order), also across engines. */
static int train_digits(dp_engine_type type, int ndev, float *w, double *acc) {
    dp_engine *eng = make_engine(type);
    dp_kvstore *kv = NULL;
    kvd_set train, test;
    kvd_trainer t;
    const char *path = getenv("DEPENG_TEST_DIGITS") ? getenv("DEPENG_TEST_DIGITS") : "data/digits.csv";
    int ok;
    memset(&train, 0, sizeof train); memset(&test, 0, sizeof test);
    ok = kvd_load(eng, path, &train, &test) && dp_kv_create(eng, NULL, &kv) == DP_OK && kvd_trainer_init(&t, eng, kv, ndev, ndev, 0)
        && kvd_train(&t, &train, 2, 0) && kvd_weights(&t, w) == KVD_WEIGHTS && (*acc = kvd_accuracy(&t, &test)) >= 0;
    kvd_trainer_release(&t);
    kvd_set_release(&train); kvd_set_release(&test);
    dp_kv_destroy(kv);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
    return ok;
}
static void test_data_parallel_digits(void) {
    static float one[KVD_WEIGHTS], two[KVD_WEIGHTS], again[KVD_WEIGHTS];
    double acc1 = 0, acc2 = 0, acc3 = 0, maxdiff = 0;
    int i;
    CHECK(train_digits(DP_ENGINE_PERDEVICE, 1, one, &acc1));
    CHECK(train_digits(DP_ENGINE_PERDEVICE, 2, two, &acc2));
    CHECK(train_digits(DP_ENGINE_NAIVE, 2, again, &acc3));
    for (i = 0; i < KVD_WEIGHTS; i++) { double d = fabs((double)one[i] - (double)two[i]); if (d > maxdiff) maxdiff = d; }
    printf("  digits, 2 epochs: one context %.2f%%, two contexts %.2f%% test accuracy; largest weight difference %.3g\n", 100 * acc1, 100 * acc2, maxdiff);
    CHECK(maxdiff <= 1e-4);
    CHECK(acc1 > 0.8 && fabs(acc1 - acc2) <= 0.003);
    CHECK(memcmp(two, again, sizeof two) == 0 && acc2 == acc3);
}

int main(void) {
    static const test_case tests[] = {
        {"random_against_reference", test_random_against_reference}, {"pull_waits_for_its_key_only", test_pull_waits_for_its_key_only},
        {"priorities", test_priorities}, {"global_reduce_hook", test_global_reduce_hook},
        {"global_init_hook", test_global_init_hook}, {"gpu_arrays", test_gpu_arrays},
        {"failure_reaches_pulled_arrays", test_failure_reaches_pulled_arrays}, {"out_of_memory_in_gpu_push", test_out_of_memory_in_gpu_push}, {"bad_input", test_bad_input},
        {"data_parallel_digits", test_data_parallel_digits},
    };
    return run_tests("kvstore", tests, (int)(sizeof tests / sizeof tests[0]));
}
