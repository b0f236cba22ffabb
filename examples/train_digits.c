/* examples/train_digits.c - train a small neural network in C on the engine.

   The UCI optical handwritten digits (8x8 images, 10 classes, 1,797
   samples, data/digits.csv) with a fixed 80/20 split: every fifth sample
   is held out. A multi-layer perceptron, 64 -> 64 (relu) -> 10, learns with
   momentum SGD on mini-batches of 32:

     forward   h = relu(FullyConnected(x, W1, b1)); o = FullyConnected(h, W2, b2)
     loss      softmax_cross_entropy(o, labels), recorded by autograd
     backward  dp_autograd_backward(loss) pushes the gradient operators
     update    a dp_optimizer per parameter: sgd_mom_update(W, dW, mom), in
               place (W is in its write set); it made dW and mom

   The split is a row gather (the take operator), the accuracy an operator
   comparing argmax's classes with the float labels; every operator runs
   through dp_invoke with a desc naming only what differs from the defaults.

   Nothing here waits for the engine inside an epoch: the iterator gathers
   batch b + 1 on the IO pool while batch b trains, and each step's forward,
   backward and updates are pushed as soon as the previous step's are; the
   engine runs whatever is ready. The program waits once per epoch, to read
   the loss and the accuracy.

   With --symbolic the same network is a symbol (a graph built once) and
   each step runs through an executor: binding planned the memory and made
   every node a pre-created engine operation, so a step only copies the
   batch in, pushes those operations and the updates. A last batch of
   another size gets its own executor (dp_exec_rebind). The executor runs
   the same kernels in the same order as autograd, so both modes end with
   bitwise the same weights. --graph PREFIX writes the network as MXNet's
   symbol JSON (PREFIX.json) and as Graphviz DOT (PREFIX.dot).

   Build: cc -std=c11 -O2 -I. examples/train_digits.c -o train_digits -pthread -lm
   Run:   ./train_digits [--epochs N] [--engine naive|pooled|perdevice]
                         [--data data/digits.csv] [--min-accuracy 0.95]
                         [--symbolic] [--graph PREFIX]
   It prints a checksum of the final weights: the same on every engine.
   The file is a whole program: the one command above builds it, the
   implementation included. The repository's Makefile and CMake define
   DEPENG_EXAMPLE_SEPARATE_IMPL and link the implementation compiled once
   (tests/impl/depeng_impl.c) instead. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L   /* clock_gettime, fileno */
#endif
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>                     /* QueryPerformanceCounter */
#include <io.h>
#define isatty _isatty
#define fileno _fileno
#else
#include <unistd.h>
#endif

enum { INPUTS = 64, HIDDEN = 64, CLASSES = 10, BATCH = 32 };

typedef struct model {
    dp_ndarray *w1, *b1, *w2, *b2;       /* parameters */
    dp_optimizer *opt[4];                /* their updates (gradient, momentum) */
} model;

static double now(void) {
#ifdef _WIN32
    LARGE_INTEGER c, f;
    QueryPerformanceCounter(&c); QueryPerformanceFrequency(&f);
    return (double)c.QuadPart / (double)f.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}
static void die(const char *what) { fprintf(stderr, "train_digits: %s failed\n", what); exit(1); }

/* One operator call: desc names the operator, inputs and parameters; the
   single output is made here. */
static dp_ndarray *invoke(dp_engine *eng, const dp_invoke_desc *desc) {
    dp_ndarray *out = NULL;
    if (dp_invoke(eng, desc, &out) != DP_OK) die(desc->op);
    return out;
}
/* The network's scores for a batch x (rows, 64). */
static dp_ndarray *forward(dp_engine *eng, const model *m, dp_ndarray *x) {
    dp_ndarray *h = invoke(eng, &(dp_invoke_desc){ .op = "FullyConnected", .inputs = {x, m->w1, m->b1},
                                                   .params = {{"num_hidden", .i = HIDDEN}} });
    dp_ndarray *a = invoke(eng, &(dp_invoke_desc){ .op = "relu", .inputs = {h} });
    dp_ndarray *o = invoke(eng, &(dp_invoke_desc){ .op = "FullyConnected", .inputs = {a, m->w2, m->b2},
                                                   .params = {{"num_hidden", .i = CLASSES}} });
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
    dp_ndarray *all[4];
    int i;
    m->w1 = param(eng, HIDDEN, INPUTS, 0.18);     /* about sqrt(2 / fan-in) */
    m->b1 = param(eng, HIDDEN, 0, 0);
    m->w2 = param(eng, CLASSES, HIDDEN, 0.18);
    m->b2 = param(eng, CLASSES, 0, 0);
    all[0] = m->w1; all[1] = m->b1; all[2] = m->w2; all[3] = m->b2;
    for (i = 0; i < 4; i++)
        if (dp_optimizer_create(all[i], &(dp_optimizer_desc){ .update = "sgd_mom_update",
                .params = {{"lr", .f = 0.1}, {"momentum", .f = 0.9}, {"wd", .f = 0.0001}} }, &m->opt[i]) != DP_OK) die("dp_optimizer_create");
}
static void model_release(model *m) {
    int i;
    for (i = 0; i < 4; i++) dp_optimizer_destroy(m->opt[i]);
    dp_nd_release(m->w1); dp_nd_release(m->b1); dp_nd_release(m->w2); dp_nd_release(m->b2);
}

/* One pass over the training batches; the summed loss is added up on the
   engine into total (no waiting here). */
static void train_epoch(dp_engine *eng, model *m, dp_iter *it, dp_ndarray *total, int epoch, int epochs, int show_progress) {
    dp_ndarray *x, *y;
    int64_t b = 0, nb = dp_iter_num_batches(it);
    int i;
    if (dp_iter_reset(it) != DP_OK) die("dp_iter_reset");
    while (dp_iter_next(it, &x, &y) == DP_OK && x) {
        dp_ndarray *scores, *loss;
        /* the gradient of the batch's summed loss, averaged */
        dp_param rescale = dp_param_float("rescale_grad", 1.0 / (double)dp_nd_shape(x)->dims[0]);
        dp_autograd_begin();
        scores = forward(eng, m, x);
        loss = invoke(eng, &(dp_invoke_desc){ .op = "softmax_cross_entropy", .inputs = {scores, y} });
        dp_autograd_end();
        if (dp_autograd_backward(loss, NULL, 0) != DP_OK) die("dp_autograd_backward");
        for (i = 0; i < 4; i++)
            if (dp_optimizer_set_param(m->opt[i], &rescale) != DP_OK || dp_optimizer_step(m->opt[i]) != DP_OK) die("dp_optimizer_step");
        if (dp_invoke(eng, &(dp_invoke_desc){ .op = "_copy", .inputs = {loss}, .outputs = {total}, .req = {DP_REQ_ADD} }, NULL) != DP_OK) die("loss total");
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
/* ---- the symbolic path ---------------------------------------------------- */
/* The network as a graph: scores = fc2(relu(fc1(data))), loss =
   softmax_cross_entropy(scores, label). Arguments, in order: data,
   fc1_weight, fc1_bias, fc2_weight, fc2_bias, label. */
static void build_symbols(dp_symbol **scores, dp_symbol **loss) {
    dp_symbol *data, *label, *fc1, *act;
    if (dp_sym_var("data", &data) != DP_OK || dp_sym_var("label", &label) != DP_OK) die("dp_sym_var");
    /* inputs left NULL (FullyConnected's weight and bias) become new variables */
    if (dp_sym_node(&(dp_sym_node_desc){ .op = "FullyConnected", .name = "fc1", .inputs = {data},
                                          .params = {{"num_hidden", .i = 64}} }, &fc1) != DP_OK) die("fc1");
    if (dp_sym_node(&(dp_sym_node_desc){ .op = "relu", .name = "relu1", .inputs = {fc1} }, &act) != DP_OK) die("relu1");
    if (dp_sym_node(&(dp_sym_node_desc){ .op = "FullyConnected", .name = "fc2", .inputs = {act},
                                          .params = {{"num_hidden", .i = 10}} }, scores) != DP_OK) die("fc2");
    if (dp_sym_node(&(dp_sym_node_desc){ .op = "softmax_cross_entropy", .name = "loss", .inputs = {*scores, label} }, loss) != DP_OK) die("loss");
    dp_sym_release(data); dp_sym_release(label); dp_sym_release(fc1); dp_sym_release(act);
}
typedef struct sym_trainer {
    dp_symbol *scores, *loss;
    dp_ndarray *x[2], *y[2];             /* the bound batch arrays: full batches, and the last short one */
    dp_ndarray *grads[4];                /* the parameters' gradients (their optimizers'), borrowed */
    dp_executor *ex[2];
} sym_trainer;
static void bind_batch(dp_engine *eng, sym_trainer *t, const model *m, int slot, int64_t rows) {
    dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_shape sx = {2, {rows, INPUTS}}, sy = {1, {rows}};
    dp_ndarray *args[6], *grads[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    int k;
    if (dp_nd_zeros(eng, &sx, DP_FLOAT32, cpu, &t->x[slot]) != DP_OK || dp_nd_zeros(eng, &sy, DP_FLOAT32, cpu, &t->y[slot]) != DP_OK) die("batch arrays");
    args[0] = t->x[slot]; args[1] = m->w1; args[2] = m->b1; args[3] = m->w2; args[4] = m->b2; args[5] = t->y[slot];
    for (k = 0; k < 4; k++) grads[k + 1] = t->grads[k];
    if (slot == 0) {
        if (dp_exec_bind(eng, t->loss, &(dp_exec_desc){ .ctx = cpu, .num_args = 6, .args = args, .grads = grads }, &t->ex[0]) != DP_OK) die("dp_exec_bind");
    }
    else if (dp_exec_rebind(t->ex[0], 6, args, grads, &t->ex[1]) != DP_OK) die("dp_exec_rebind");
}
static void sym_trainer_init(dp_engine *eng, sym_trainer *t, const model *m, const char *graph) {
    const dp_ndarray *p[4];
    int k;
    memset(t, 0, sizeof *t);
    build_symbols(&t->scores, &t->loss);
    p[0] = m->w1; p[1] = m->b1; p[2] = m->w2; p[3] = m->b2;
    for (k = 0; k < 4; k++) t->grads[k] = dp_nd_grad(p[k]);   /* attached by dp_optimizer_create */
    bind_batch(eng, t, m, 0, BATCH);
    if (graph) {
        char path[1024];
        FILE *f;
        snprintf(path, sizeof path, "%s.json", graph);
        if (dp_sym_save(t->loss, path) != DP_OK) die("writing the graph's JSON");
        snprintf(path, sizeof path, "%s.dot", graph);
        if ((f = fopen(path, "w")) == NULL || dp_sym_write_dot(t->loss, f) != DP_OK || fclose(f) != 0) die("writing the graph's DOT");
        printf("graph written to %s.json and %s.dot\n", graph, graph);
    }
    {
        dp_exec_memory mem;
        if (dp_exec_memory_get(t->ex[0], &mem) != DP_OK) die("dp_exec_memory_get");
        printf("executor: %d operations; intermediate results %zu bytes planned, %zu with a buffer each\n", mem.num_nodes,
               mem.planned_bytes, mem.unplanned_bytes);
    }
}
static void sym_trainer_release(sym_trainer *t) {
    int k;
    for (k = 0; k < 2; k++) { dp_exec_destroy(t->ex[k]); dp_nd_release(t->x[k]); dp_nd_release(t->y[k]); }
    dp_sym_release(t->scores); dp_sym_release(t->loss);
}
/* One epoch through the executor: copy the batch into the bound arrays,
   forward, backward, the updates. */
static void train_epoch_symbolic(dp_engine *eng, model *m, sym_trainer *t, dp_iter *it, dp_ndarray *total) {
    dp_ndarray *x, *y;
    int i;
    if (dp_iter_reset(it) != DP_OK) die("dp_iter_reset");
    while (dp_iter_next(it, &x, &y) == DP_OK && x) {
        int64_t rows = dp_nd_shape(x)->dims[0];
        int slot = rows == BATCH ? 0 : 1;
        if (slot && (!t->ex[1] || dp_nd_shape(t->x[1])->dims[0] != rows)) {
            dp_exec_destroy(t->ex[1]); dp_nd_release(t->x[1]); dp_nd_release(t->y[1]);
            bind_batch(eng, t, m, 1, rows);
        }
        dp_param rescale = dp_param_float("rescale_grad", 1.0 / (double)rows);
        if (dp_invoke(eng, &(dp_invoke_desc){ .op = "_copy", .inputs = {x}, .outputs = {t->x[slot]} }, NULL) != DP_OK
            || dp_invoke(eng, &(dp_invoke_desc){ .op = "_copy", .inputs = {y}, .outputs = {t->y[slot]} }, NULL) != DP_OK) die("copying the batch");
        if (dp_exec_forward(t->ex[slot], 1) != DP_OK || dp_exec_backward(t->ex[slot], 0, NULL) != DP_OK) die("executor step");
        for (i = 0; i < 4; i++)
            if (dp_optimizer_set_param(m->opt[i], &rescale) != DP_OK || dp_optimizer_step(m->opt[i]) != DP_OK) die("dp_optimizer_step");
        if (dp_invoke(eng, &(dp_invoke_desc){ .op = "_copy", .inputs = {dp_exec_output(t->ex[slot], 0)}, .outputs = {total},
                                               .req = {DP_REQ_ADD} }, NULL) != DP_OK) die("loss total");
        dp_nd_release(x); dp_nd_release(y);
    }
}

/* The fraction of rows of x whose highest score is their label. */
static double accuracy(dp_engine *eng, const model *m, dp_ndarray *x, dp_ndarray *labels) {
    dp_ndarray *scores = forward(eng, m, x);
    dp_ndarray *best = invoke(eng, &(dp_invoke_desc){ .op = "argmax", .inputs = {scores}, .params = {{"axis", .shape = {1, {1}}}} });
    dp_ndarray *hits = invoke(eng, &(dp_invoke_desc){ .op = "accuracy", .inputs = {best, labels} });
    float fraction = 0;
    if (dp_nd_read(hits, &fraction, sizeof fraction, NULL) != DP_OK) die("accuracy");
    dp_nd_release(scores); dp_nd_release(best); dp_nd_release(hits);
    return fraction;
}

/* Every fifth row to the test set, the rest to training, gathered by take;
   pixels 0..16 scaled to 0..1. */
static void split(dp_engine *eng, dp_ndarray *data, dp_ndarray *label, dp_ndarray **xs, dp_ndarray **ys) {
    int64_t n = dp_nd_shape(data)->dims[0], i, k[2] = {0, 0};
    int64_t *rows = (int64_t *)malloc((size_t)n * sizeof *rows);
    dp_ctx cpu = {DP_DEV_CPU, 0};
    int part;
    if (!rows) die("malloc");
    for (i = 0; i < n; i++) k[i % 5 == 4]++;
    for (part = 0; part < 2; part++) {
        dp_shape s = {1, {k[part]}};
        dp_ndarray *idx = NULL, *x;
        int64_t j = 0;
        for (i = 0; i < n; i++) if ((i % 5 == 4) == part) rows[j++] = i;
        if (dp_nd_from_host(eng, &s, DP_INT64, cpu, rows, &idx) != DP_OK) die("split");
        x = invoke(eng, &(dp_invoke_desc){ .op = "take", .inputs = {data, idx} });
        xs[part] = invoke(eng, &(dp_invoke_desc){ .op = "mul_scalar", .inputs = {x}, .scalar = 1.0 / 16 });
        ys[part] = invoke(eng, &(dp_invoke_desc){ .op = "take", .inputs = {label, idx} });
        dp_nd_release(x); dp_nd_release(idx);
    }
    free(rows);
}

int main(int argc, char **argv) {
    const char *path = "data/digits.csv", *engine_name = "perdevice", *graph = NULL;
    int epochs = 20, i, show_progress, symbolic = 0;
    sym_trainer st;
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
    for (i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--symbolic")) { symbolic = 1; i--; continue; }
        if (i + 1 >= argc) break;
        if (!strcmp(argv[i], "--epochs")) epochs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--graph")) graph = argv[i + 1];
        else if (!strcmp(argv[i], "--engine")) engine_name = argv[i + 1];
        else if (!strcmp(argv[i], "--data")) path = argv[i + 1];
        else if (!strcmp(argv[i], "--min-accuracy")) min_accuracy = atof(argv[i + 1]);
        else break;
    }
    if (i < argc || epochs < 1) {
        fprintf(stderr, "usage: %s [--epochs N] [--engine naive|pooled|perdevice] [--data PATH] [--min-accuracy X] [--symbolic] [--graph PREFIX]\n", argv[0]);
        return 2;
    }
    memset(&desc, 0, sizeof desc);
    desc.type = !strcmp(engine_name, "naive") ? DP_ENGINE_NAIVE : !strcmp(engine_name, "pooled") ? DP_ENGINE_POOLED : DP_ENGINE_PERDEVICE;
    if (dp_engine_create(&desc, &eng) != DP_OK) die("dp_engine_create");
    if (dp_nd_load_csv(eng, path, -1, cpu, NULL, &data, &label) != DP_OK) die("loading the CSV (run from the repository root, or pass --data)");
    split(eng, data, label, xs, ys);
    printf("digits: %lld training and %lld test samples, MLP 64-64-10, %s engine%s\n", (long long)dp_nd_shape(xs[0])->dims[0],
           (long long)dp_nd_shape(xs[1])->dims[0], engine_name, symbolic ? ", symbolic (executor)" : "");
    dp_random_seed(eng, cpu, 42);
    model_init(eng, &m);
    if (symbolic || graph) sym_trainer_init(eng, &st, &m, graph);
    memset(&id, 0, sizeof id);
    id.data = xs[0]; id.label = ys[0]; id.batch_size = BATCH; id.shuffle = 1;
    if (dp_iter_create(&id, &it) != DP_OK) die("dp_iter_create");
    if (dp_nd_zeros(eng, &one, DP_FLOAT32, cpu, &total) != DP_OK) die("zeros");
    show_progress = isatty(fileno(stdout));
    t0 = now();
    for (i = 1; i <= epochs; i++) {
        float loss_sum = 0, zero = 0;
        double train_acc;
        if (symbolic) train_epoch_symbolic(eng, &m, &st, it, total);
        else train_epoch(eng, &m, it, total, i, epochs, show_progress);
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
    if (symbolic || graph) sym_trainer_release(&st);
    model_release(&m);
    dp_nd_release(total); dp_nd_release(data); dp_nd_release(label);
    for (i = 0; i < 2; i++) { dp_nd_release(xs[i]); dp_nd_release(ys[i]); }
    if (dp_engine_destroy(eng, NULL) != DP_OK) die("dp_engine_destroy");
    if (test_acc < min_accuracy) { printf("below the required %.2f%%\n", 100 * min_accuracy); return 1; }
    return 0;
}
