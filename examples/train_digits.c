/* examples/train_digits.c - train a small neural network in C on the engine.

   The UCI optical handwritten digits (8x8 images, 10 classes, 1,797
   samples, data/digits.csv) with a fixed 80/20 split: every fifth sample
   is held out. A multi-layer perceptron, 64 -> 64 (relu) -> 10, learns with
   momentum SGD on mini-batches of 32:

     forward   h = relu(FullyConnected(x, W1, b1)); o = FullyConnected(h, W2, b2)
     loss      softmax_cross_entropy(o, labels), recorded by autograd
     backward  dp_autograd_backward(loss) pushes the gradient operators
     update    sgd_mom_update(W, dW, mom), in place: W is in its write set

   Nothing here waits for the engine inside an epoch: the iterator gathers
   batch b + 1 on the IO pool while batch b trains, and each step's forward,
   backward and updates are pushed as soon as the previous step's are; the
   engine runs whatever is ready. The program waits once per epoch, to read
   the loss and the accuracy.

   Build: cc -std=c11 -O2 -I. examples/train_digits.c -o train_digits -pthread -lm
   Run:   ./train_digits [--epochs N] [--engine naive|pooled|perdevice]
                         [--data data/digits.csv] [--min-accuracy 0.95]
   It prints a checksum of the final weights: the same on every engine. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#include <io.h>
#define isatty _isatty
#define fileno _fileno
#else
#include <unistd.h>
#endif

enum { INPUTS = 64, HIDDEN = 64, CLASSES = 10, BATCH = 32 };

typedef struct model {
    dp_ndarray *w1, *b1, *w2, *b2;       /* parameters, marked for gradients */
    dp_ndarray *m_w1, *m_b1, *m_w2, *m_b2;   /* their momentum */
} model;

static double now(void) {
#ifdef _WIN32
    LARGE_INTEGER c, f;                  /* <windows.h> comes with the implementation */
    QueryPerformanceCounter(&c); QueryPerformanceFrequency(&f);
    return (double)c.QuadPart / (double)f.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}
static void die(const char *what) { fprintf(stderr, "train_digits: %s failed\n", what); exit(1); }

/* One operator call with string keyword parameters. */
static dp_ndarray *invoke(dp_engine *eng, const char *op, int nin, dp_ndarray **in, int nkw, const char **keys, const char **vals) {
    dp_ndarray *out = NULL;
    if (dp_invoke_strings(eng, op, nin, in, nkw, keys, vals, 0, 1, &out, NULL) != DP_OK) die(op);
    return out;
}
static dp_ndarray *fully_connected(dp_engine *eng, dp_ndarray *x, dp_ndarray *w, dp_ndarray *b, const char *units) {
    dp_ndarray *in[3];
    const char *key[1] = {"num_hidden"}, *val[1];
    in[0] = x; in[1] = w; in[2] = b; val[0] = units;
    return invoke(eng, "FullyConnected", 3, in, 1, key, val);
}
/* The network's scores for a batch x (rows, 64). */
static dp_ndarray *forward(dp_engine *eng, const model *m, dp_ndarray *x) {
    dp_ndarray *h = fully_connected(eng, x, m->w1, m->b1, "64"), *a, *o;
    a = invoke(eng, "relu", 1, &h, 0, NULL, NULL);
    o = fully_connected(eng, a, m->w2, m->b2, "10");
    dp_nd_release(h);
    dp_nd_release(a);
    return o;
}

static dp_ndarray *param(dp_engine *eng, int rows, int cols, double stddev) {
    dp_shape s = {cols ? 2 : 1, {rows, cols}};
    dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_ndarray *p = NULL;
    if ((stddev > 0 ? dp_nd_random_normal(eng, 0, stddev, &s, DP_FLOAT32, cpu, &p) : dp_nd_zeros(eng, &s, DP_FLOAT32, cpu, &p)) != DP_OK) die("param");
    return p;
}
static void model_init(dp_engine *eng, model *m) {
    dp_ndarray **all[4];
    int i;
    m->w1 = param(eng, HIDDEN, INPUTS, 0.18);     /* about sqrt(2 / fan-in) */
    m->b1 = param(eng, HIDDEN, 0, 0);
    m->w2 = param(eng, CLASSES, HIDDEN, 0.18);
    m->b2 = param(eng, CLASSES, 0, 0);
    m->m_w1 = param(eng, HIDDEN, INPUTS, 0); m->m_b1 = param(eng, HIDDEN, 0, 0);
    m->m_w2 = param(eng, CLASSES, HIDDEN, 0); m->m_b2 = param(eng, CLASSES, 0, 0);
    all[0] = &m->w1; all[1] = &m->b1; all[2] = &m->w2; all[3] = &m->b2;
    for (i = 0; i < 4; i++) if (dp_nd_attach_grad(*all[i], DP_REQ_WRITE) != DP_OK) die("attach_grad");
}
static void model_release(model *m) {
    dp_nd_release(m->w1); dp_nd_release(m->b1); dp_nd_release(m->w2); dp_nd_release(m->b2);
    dp_nd_release(m->m_w1); dp_nd_release(m->m_b1); dp_nd_release(m->m_w2); dp_nd_release(m->m_b2);
}
/* w -= lr * dw with momentum; the gradient of a batch's summed loss is
   averaged by rescale_grad. */
static void update(dp_engine *eng, dp_ndarray *w, dp_ndarray *mom, const char *rescale) {
    dp_ndarray *in[3], *out[1];
    const char *keys[4] = {"lr", "momentum", "rescale_grad", "wd"}, *vals[4] = {"0.1", "0.9", NULL, "0.0001"};
    vals[2] = rescale;
    in[0] = w; in[1] = dp_nd_grad(w); in[2] = mom; out[0] = w;
    if (dp_invoke_strings(eng, "sgd_mom_update", 3, in, 4, keys, vals, 0, 1, out, NULL) != DP_OK) die("sgd_mom_update");
}

/* One pass over the training batches; the summed loss is added up on the
   engine into total (no waiting here). */
static void train_epoch(dp_engine *eng, model *m, dp_iter *it, dp_ndarray *total, int epoch, int epochs, int show_progress) {
    dp_ndarray *x, *y;
    dp_req add = DP_REQ_ADD;
    int64_t b = 0, nb = dp_iter_num_batches(it);
    char rescale[32];
    if (dp_iter_reset(it) != DP_OK) die("dp_iter_reset");
    while (dp_iter_next(it, &x, &y) == DP_OK && x) {
        dp_ndarray *scores, *loss, *pair[2];
        snprintf(rescale, sizeof rescale, "%.9g", 1.0 / (double)dp_nd_shape(x)->dims[0]);
        dp_autograd_begin();
        scores = forward(eng, m, x);
        pair[0] = scores; pair[1] = y;
        loss = invoke(eng, "softmax_cross_entropy", 2, pair, 0, NULL, NULL);
        dp_autograd_end();
        if (dp_autograd_backward(loss, NULL, 0) != DP_OK) die("dp_autograd_backward");
        update(eng, m->w1, m->m_w1, rescale); update(eng, m->b1, m->m_b1, rescale);
        update(eng, m->w2, m->m_w2, rescale); update(eng, m->b2, m->m_b2, rescale);
        if (dp_invoke_strings(eng, "_copy", 1, &loss, 0, NULL, NULL, 0, 1, &total, &add) != DP_OK) die("loss total");
        dp_nd_release(scores); dp_nd_release(loss); dp_nd_release(x); dp_nd_release(y);
        if (show_progress && (++b % 5 == 0 || b == nb)) {
            int done = (int)(20 * b / nb), i;
            printf("\repoch %2d/%d [", epoch, epochs);
            for (i = 0; i < 20; i++) putchar(i < done ? '=' : ' ');
            printf("] %3lld/%lld batches", (long long)b, (long long)nb);
            fflush(stdout);
        }
    }
}
/* The fraction of rows of x whose highest score is their label. */
static double accuracy(dp_engine *eng, const model *m, dp_ndarray *x, dp_ndarray *labels) {
    const char *key[1] = {"axis"}, *val[1] = {"1"};
    int64_t n = dp_nd_shape(x)->dims[0], i, right = 0;
    dp_ndarray *scores = forward(eng, m, x), *best = invoke(eng, "argmax", 1, &scores, 1, key, val);
    int64_t *pred = (int64_t *)malloc((size_t)n * sizeof *pred);
    float *want = (float *)malloc((size_t)n * sizeof *want);
    if (!pred || !want || dp_nd_read(best, pred, (size_t)n * sizeof *pred, NULL) != DP_OK
        || dp_nd_read(labels, want, (size_t)n * sizeof *want, NULL) != DP_OK) die("accuracy");
    for (i = 0; i < n; i++) right += pred[i] == (int64_t)want[i];
    free(pred); free(want);
    dp_nd_release(scores); dp_nd_release(best);
    return (double)right / (double)n;
}

/* Every fifth row to the test set, the rest to training; pixels 0..16
   scaled to 0..1. */
static void split(dp_engine *eng, dp_ndarray *data, dp_ndarray *label, dp_ndarray **xs, dp_ndarray **ys) {
    int64_t n = dp_nd_shape(data)->dims[0], i, k[2] = {0, 0};
    float *x = (float *)malloc((size_t)n * INPUTS * sizeof *x), *y = (float *)malloc((size_t)n * sizeof *y);
    float *px[2], *py[2];
    dp_ctx cpu = {DP_DEV_CPU, 0};
    int part;
    if (!x || !y || dp_nd_read(data, x, (size_t)n * INPUTS * sizeof *x, NULL) != DP_OK || dp_nd_read(label, y, (size_t)n * sizeof *y, NULL) != DP_OK) die("reading the data");
    for (part = 0; part < 2; part++) {
        px[part] = (float *)malloc((size_t)n * INPUTS * sizeof *x);
        py[part] = (float *)malloc((size_t)n * sizeof *y);
        if (!px[part] || !py[part]) die("malloc");
    }
    for (i = 0; i < n; i++) {
        int p = i % 5 == 4, j;
        for (j = 0; j < INPUTS; j++) px[p][k[p] * INPUTS + j] = x[i * INPUTS + j] / 16.0f;
        py[p][k[p]++] = y[i];
    }
    for (part = 0; part < 2; part++) {
        dp_shape sx = {2, {k[part], INPUTS}}, sy = {1, {k[part]}};
        if (dp_nd_from_host(eng, &sx, DP_FLOAT32, cpu, px[part], &xs[part]) != DP_OK
            || dp_nd_from_host(eng, &sy, DP_FLOAT32, cpu, py[part], &ys[part]) != DP_OK) die("split");
        free(px[part]); free(py[part]);
    }
    free(x); free(y);
}

int main(int argc, char **argv) {
    const char *path = "data/digits.csv", *engine_name = "perdevice";
    int epochs = 20, i, show_progress;
    double min_accuracy = 0, test_acc = 0, t0;
    dp_engine_desc desc;
    dp_engine *eng;
    dp_ndarray *data, *label, *xs[2], *ys[2], *total;
    dp_iter_desc id;
    dp_iter *it;
    dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_shape one = {1, {1}};
    model m;
    float w[HIDDEN * INPUTS];
    uint64_t checksum = 1469598103934665603ull;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--epochs")) epochs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--engine")) engine_name = argv[i + 1];
        else if (!strcmp(argv[i], "--data")) path = argv[i + 1];
        else if (!strcmp(argv[i], "--min-accuracy")) min_accuracy = atof(argv[i + 1]);
        else break;
    }
    if (i < argc || epochs < 1) {
        fprintf(stderr, "usage: %s [--epochs N] [--engine naive|pooled|perdevice] [--data PATH] [--min-accuracy X]\n", argv[0]);
        return 2;
    }
    memset(&desc, 0, sizeof desc);
    desc.type = !strcmp(engine_name, "naive") ? DP_ENGINE_NAIVE : !strcmp(engine_name, "pooled") ? DP_ENGINE_POOLED : DP_ENGINE_PERDEVICE;
    if (dp_engine_create(&desc, &eng) != DP_OK) die("dp_engine_create");
    if (dp_nd_load_csv(eng, path, -1, cpu, &data, &label) != DP_OK) die("loading the CSV (run from the repository root, or pass --data)");
    split(eng, data, label, xs, ys);
    printf("digits: %lld training and %lld test samples, MLP 64-64-10, %s engine\n", (long long)dp_nd_shape(xs[0])->dims[0],
           (long long)dp_nd_shape(xs[1])->dims[0], engine_name);
    dp_random_seed(eng, cpu, 42);
    model_init(eng, &m);
    memset(&id, 0, sizeof id);
    id.data = xs[0]; id.label = ys[0]; id.batch_size = BATCH; id.shuffle = 1;
    if (dp_iter_create(&id, &it) != DP_OK) die("dp_iter_create");
    if (dp_nd_zeros(eng, &one, DP_FLOAT32, cpu, &total) != DP_OK) die("zeros");
    show_progress = isatty(fileno(stdout));
    t0 = now();
    for (i = 1; i <= epochs; i++) {
        float loss_sum = 0, zero = 0;
        double train_acc;
        train_epoch(eng, &m, it, total, i, epochs, show_progress);
        if (dp_nd_read(total, &loss_sum, sizeof loss_sum, NULL) != DP_OK || dp_nd_write(total, &zero, sizeof zero, NULL) != DP_OK) die("loss");
        train_acc = accuracy(eng, &m, xs[0], ys[0]);
        test_acc = accuracy(eng, &m, xs[1], ys[1]);
        printf("%sepoch %2d/%d  loss %.4f  train accuracy %.2f%%  test accuracy %.2f%%  (%.2f s)\n", show_progress ? "\r" : "", i, epochs,
               loss_sum / (double)dp_nd_shape(xs[0])->dims[0], 100 * train_acc, 100 * test_acc, now() - t0);
    }
    {   /* FNV-1a over the bytes of every parameter */
        dp_ndarray *p[4];
        int k;
        p[0] = m.w1; p[1] = m.b1; p[2] = m.w2; p[3] = m.b2;
        for (k = 0; k < 4; k++) {
            size_t b, bytes = dp_nd_bytes(p[k]);
            if (dp_nd_read(p[k], w, bytes, NULL) != DP_OK) die("reading the weights");
            for (b = 0; b < bytes; b++) checksum = (checksum ^ ((unsigned char *)w)[b]) * 1099511628211ull;
        }
    }
    printf("test accuracy %.2f%% after %d epochs in %.2f s; weights checksum %016llx\n", 100 * test_acc, epochs, now() - t0, (unsigned long long)checksum);
    dp_iter_destroy(it);
    model_release(&m);
    dp_nd_release(total); dp_nd_release(data); dp_nd_release(label);
    for (i = 0; i < 2; i++) { dp_nd_release(xs[i]); dp_nd_release(ys[i]); }
    if (dp_engine_destroy(eng, NULL) != DP_OK) die("dp_engine_destroy");
    if (test_acc < min_accuracy) { printf("below the required %.2f%%\n", 100 * min_accuracy); return 1; }
    return 0;
}
