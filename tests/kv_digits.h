/* tests/kv_digits.h - data-parallel training of the digits MLP (64 -> 64
   relu -> 10, as examples/train_digits.c) through a dp_kvstore, shared by
   tests/test_kvstore.c (several CPU contexts in one process) and
   tests/mpi_digits.c (several processes). Include after depeng.h.

   Every global batch is rows [b * KVD_BATCH, (b + 1) * KVD_BATCH) of the
   training set, in order (full batches only), cut into `parts` equal
   slices; this process trains slices first_part .. first_part + ndev - 1,
   one per device context (CPU devices 0..ndev-1). Each device runs the
   forward and backward pass on its replica of the parameters, then for
   each parameter, last layer first (higher priority), the gradients of
   all devices are pushed to the store and the updated parameter pulled
   back into every replica. The store's updater is sgd_mom_update with
   rescale_grad = 1 / KVD_BATCH, so the result equals one device training
   on whole batches up to the order in which the per-slice gradients are
   summed. */
#ifndef KV_DIGITS_H
#define KV_DIGITS_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_calls.h"

enum { KVD_IN = 64, KVD_HIDDEN = 64, KVD_CLASSES = 10, KVD_BATCH = 32, KVD_PARAMS = 4, KVD_MAX_DEV = 4 };

typedef struct kvd_set { dp_ndarray *x, *y; int64_t rows; } kvd_set;

/* Every fifth row held out for testing; pixels scaled to 0..1. 0 on error. */
static inline int kvd_load(dp_engine *eng, const char *path, kvd_set *train, kvd_set *test) {
    dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_ndarray *data = NULL, *label = NULL;
    float *x = NULL, *y = NULL, *px[2] = {NULL, NULL}, *py[2] = {NULL, NULL};
    int64_t n, i, k[2] = {0, 0};
    int part, ok = 0;
    if (dp_nd_load_csv(eng, path, -1, cpu, NULL, &data, &label) != DP_OK) return 0;
    n = dp_nd_shape(data)->dims[0];
    x = (float *)malloc((size_t)n * KVD_IN * sizeof *x); y = (float *)malloc((size_t)n * sizeof *y);
    for (part = 0; part < 2; part++) { px[part] = (float *)malloc((size_t)n * KVD_IN * sizeof *x); py[part] = (float *)malloc((size_t)n * sizeof *y); }
    if (x && y && px[0] && px[1] && py[0] && py[1] && dp_nd_read(data, x, (size_t)n * KVD_IN * sizeof *x, NULL) == DP_OK
        && dp_nd_read(label, y, (size_t)n * sizeof *y, NULL) == DP_OK) {
        for (i = 0; i < n; i++) {
            int p = i % 5 == 4, j;
            for (j = 0; j < KVD_IN; j++) px[p][k[p] * KVD_IN + j] = x[i * KVD_IN + j] / 16.0f;
            py[p][k[p]++] = y[i];
        }
        ok = 1;
        for (part = 0; part < 2 && ok; part++) {
            kvd_set *s = part ? test : train;
            dp_shape sx = {2, {k[part], KVD_IN}}, sy = {1, {k[part]}};
            s->rows = k[part];
            ok = dp_nd_from_host(eng, &sx, DP_FLOAT32, cpu, px[part], &s->x) == DP_OK && dp_nd_from_host(eng, &sy, DP_FLOAT32, cpu, py[part], &s->y) == DP_OK;
        }
    }
    free(x); free(y);
    for (part = 0; part < 2; part++) { free(px[part]); free(py[part]); }
    dp_nd_release(data); dp_nd_release(label);
    return ok;
}
static inline void kvd_set_release(kvd_set *s) { dp_nd_release(s->x); dp_nd_release(s->y); s->x = s->y = NULL; }

static inline void kvd_param_shape(int k, dp_shape *s) {
    static const int64_t dims[KVD_PARAMS][2] = {{KVD_HIDDEN, KVD_IN}, {KVD_HIDDEN, 0}, {KVD_CLASSES, KVD_HIDDEN}, {KVD_CLASSES, 0}};
    memset(s, 0, sizeof *s);
    s->ndim = dims[k][1] ? 2 : 1; s->dims[0] = dims[k][0]; s->dims[1] = dims[k][1];
}
/* The same initial weights everywhere, from a fixed sequence (no engine
   random state, so every process and context agrees). */
static inline void kvd_initial(int k, float *out) {
    dp_shape s;
    int64_t i, n;
    uint64_t state = 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1);
    kvd_param_shape(k, &s);
    n = dp_shape_size(&s);
    for (i = 0; i < n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        out[i] = k % 2 ? 0.0f : (float)((double)(state >> 11) / 9007199254740992.0 - 0.5) * 0.5f;
    }
}

typedef struct kvd_trainer {
    dp_engine *eng;
    dp_kvstore *kv;
    int ndev, parts, first_part;
    dp_ndarray *rep[KVD_MAX_DEV][KVD_PARAMS];   /* replicas, marked for gradients */
} kvd_trainer;

static inline dp_ctx kvd_ctx(int d) { dp_ctx c = {DP_DEV_CPU, d}; return c; }

/* Makes the replicas and initialises the store's keys 0..3 (kv is set up
   by the caller: optimizer, global reduction). 0 on error. */
static inline int kvd_trainer_init(kvd_trainer *t, dp_engine *eng, dp_kvstore *kv, int ndev, int parts, int first_part) {
    float buf[KVD_HIDDEN * KVD_IN];
    int k, d;
    const char *keys[4] = {"lr", "momentum", "rescale_grad", "wd"}, *vals[4] = {"0.1", "0.9", "0.03125", "0.0001"};
    memset(t, 0, sizeof *t);
    t->eng = eng; t->kv = kv; t->ndev = ndev; t->parts = parts; t->first_part = first_part;
    if (kv_set_optimizer(kv, "sgd_mom_update", 4, keys, vals) != DP_OK) return 0;
    for (k = 0; k < KVD_PARAMS; k++) {
        dp_shape s;
        dp_ndarray *init = NULL;
        kvd_param_shape(k, &s);
        kvd_initial(k, buf);
        if (dp_nd_from_host(eng, &s, DP_FLOAT32, kvd_ctx(0), buf, &init) != DP_OK || dp_kv_init(kv, k, init) != DP_OK) return 0;
        dp_nd_release(init);
        for (d = 0; d < ndev; d++)
            if (dp_nd_from_host(eng, &s, DP_FLOAT32, kvd_ctx(d), buf, &t->rep[d][k]) != DP_OK || dp_nd_attach_grad(t->rep[d][k], DP_REQ_WRITE) != DP_OK) return 0;
    }
    return 1;
}
static inline void kvd_trainer_release(kvd_trainer *t) {
    int d, k;
    for (d = 0; d < t->ndev; d++) for (k = 0; k < KVD_PARAMS; k++) { dp_nd_release(t->rep[d][k]); t->rep[d][k] = NULL; }
}

static inline dp_ndarray *kvd_invoke(dp_engine *eng, const char *op, int nin, dp_ndarray **in, const char *key, const char *val) {
    dp_ndarray *out = NULL;
    const char *keys[1], *vals[1];
    keys[0] = key; vals[0] = val;
    if (invoke_str(eng, op, nin, in, key ? 1 : 0, keys, vals, 0, 1, &out, NULL) != DP_OK) return NULL;
    return out;
}
/* scores of x (rows, 64) under parameters p */
static inline dp_ndarray *kvd_forward(dp_engine *eng, dp_ndarray *const *p, dp_ndarray *x) {
    dp_ndarray *in[3], *h, *a, *o;
    in[0] = x; in[1] = p[0]; in[2] = p[1];
    if ((h = kvd_invoke(eng, "FullyConnected", 3, in, "num_hidden", "64")) == NULL) return NULL;
    a = kvd_invoke(eng, "relu", 1, &h, NULL, NULL);
    dp_nd_release(h);
    if (!a) return NULL;
    in[0] = a; in[1] = p[2]; in[2] = p[3];
    o = kvd_invoke(eng, "FullyConnected", 3, in, "num_hidden", "10");
    dp_nd_release(a);
    return o;
}
/* One device's forward and backward on rows [begin, end) of set. */
static inline int kvd_backward(kvd_trainer *t, int d, const kvd_set *set, int64_t begin, int64_t end) {
    dp_ndarray *xs = NULL, *ys = NULL, *x = NULL, *y = NULL, *o = NULL, *loss = NULL, *pair[2];
    int ok;
    ok = dp_nd_slice(set->x, begin, end, &xs) == DP_OK && dp_nd_slice(set->y, begin, end, &ys) == DP_OK;
    if (ok && d) ok = dp_nd_copy_to(xs, kvd_ctx(d), &x) == DP_OK && dp_nd_copy_to(ys, kvd_ctx(d), &y) == DP_OK;
    else if (ok) { x = dp_nd_retain(xs); y = dp_nd_retain(ys); }
    ok = ok && dp_autograd_begin() == DP_OK;
    if (ok) {
        o = kvd_forward(t->eng, t->rep[d], x);
        pair[0] = o; pair[1] = y;
        loss = o ? kvd_invoke(t->eng, "softmax_cross_entropy", 2, pair, NULL, NULL) : NULL;
        ok = dp_autograd_end() == DP_OK && loss && dp_autograd_backward(loss, NULL, 0) == DP_OK;
    }
    dp_nd_release(loss); dp_nd_release(o); dp_nd_release(x); dp_nd_release(y); dp_nd_release(xs); dp_nd_release(ys);
    return ok;
}
/* Pushes every replica's gradient of parameter k and pulls the update back
   into every replica. */
static inline int kvd_sync(kvd_trainer *t, int k) {
    dp_ndarray *grads[KVD_MAX_DEV], *outs[KVD_MAX_DEV];
    int d;
    for (d = 0; d < t->ndev; d++) { grads[d] = dp_nd_grad(t->rep[d][k]); outs[d] = t->rep[d][k]; }
    return dp_kv_push(t->kv, k, grads, t->ndev, k) == DP_OK && dp_kv_pull(t->kv, k, outs, t->ndev, k) == DP_OK;
}
/* One step on global batch b; with barrier, waits for the backward passes
   before any push (communication not overlapped). */
static inline int kvd_step(kvd_trainer *t, const kvd_set *train, int64_t b, int barrier) {
    int64_t slice = KVD_BATCH / t->parts, base = b * KVD_BATCH;
    int d, k;
    for (d = 0; d < t->ndev; d++) {
        int64_t begin = base + (int64_t)(t->first_part + d) * slice;
        if (!kvd_backward(t, d, train, begin, begin + slice)) return 0;
    }
    if (barrier && dp_wait_all(t->eng, NULL) != DP_OK) return 0;
    for (k = KVD_PARAMS - 1; k >= 0; k--) if (!kvd_sync(t, k)) return 0;
    return 1;
}
/* epochs over the full batches; 0 on error */
static inline int kvd_train(kvd_trainer *t, const kvd_set *train, int epochs, int barrier) {
    int64_t b, nb = train->rows / KVD_BATCH;
    int e;
    if (KVD_BATCH % t->parts) return 0;
    for (e = 0; e < epochs; e++)
        for (b = 0; b < nb; b++) if (!kvd_step(t, train, b, barrier)) return 0;
    return 1;
}
/* The fraction of set classified right by device 0's replica; -1 on error. */
static inline double kvd_accuracy(kvd_trainer *t, const kvd_set *set) {
    dp_ndarray *scores = kvd_forward(t->eng, t->rep[0], set->x), *best;
    int64_t i, right = 0, n = set->rows;
    int64_t *pred = (int64_t *)malloc((size_t)n * sizeof *pred);
    float *want = (float *)malloc((size_t)n * sizeof *want);
    double acc = -1;
    best = scores ? kvd_invoke(t->eng, "argmax", 1, &scores, "axis", "1") : NULL;
    if (best && pred && want && dp_nd_read(best, pred, (size_t)n * sizeof *pred, NULL) == DP_OK
        && dp_nd_read(set->y, want, (size_t)n * sizeof *want, NULL) == DP_OK) {
        for (i = 0; i < n; i++) right += pred[i] == (int64_t)want[i];
        acc = (double)right / (double)n;
    }
    free(pred); free(want);
    dp_nd_release(scores); dp_nd_release(best);
    return acc;
}
/* The parameters (device 0's replica) into out, KVD_PARAMS arrays one after
   another; returns how many floats, or 0 on error. */
static inline size_t kvd_weights(kvd_trainer *t, float *out) {
    size_t n = 0;
    int k;
    for (k = 0; k < KVD_PARAMS; k++) {
        size_t bytes = dp_nd_bytes(t->rep[0][k]);
        if (dp_nd_read(t->rep[0][k], out + n, bytes, NULL) != DP_OK) return 0;
        n += bytes / sizeof *out;
    }
    return n;
}
enum { KVD_WEIGHTS = KVD_HIDDEN * KVD_IN + KVD_HIDDEN + KVD_CLASSES * KVD_HIDDEN + KVD_CLASSES };
#endif
