/* examples/train_fashion.c - LeNet and an MLP on Fashion-MNIST, end to end.

   The real job from MXNet's tutorials, in C on the engine: 60,000 training
   and 10,000 test images of clothes (28x28 grey, 10 classes), read from
   the idx files of Debian's dataset-fashion-mnist package.

   The networks:
     lenet  MXNet's example LeNet, loaded from examples/lenet-symbol.json (an
            MXNet 1.x symbol file): conv 5x5x20 - tanh - maxpool 2 - conv
            5x5x50 - tanh - maxpool 2 - flatten - fc 500 - tanh - fc 10 -
            SoftmaxOutput
     mlp    784 - 128 (relu) - 64 (relu) - 10 - SoftmaxOutput, built here as
            a symbol with MXNet's operator names

   Two ways to run the same network (--mode):
     executor  the symbol bound once (dp_exec_bind): every step copies the
               batch into the bound arrays and pushes the pre-made forward
               and backward operations
     autograd  the same MXNet operators invoked one by one while autograd
               records, then dp_autograd_backward
   Both run the same kernels in the same order, so they end with bitwise
   the same weights; so do all three engine kinds (--engine), because every
   operation's result depends only on its inputs, never on which thread ran
   it or when. --check-bitwise STEPS trains STEPS steps six ways (two modes
   times three engines) and compares every parameter byte for byte.

   Training: parameters by MXNet's Xavier initialiser (uniform, fan-in,
   magnitude 2.34, as MXNet's train_mnist.py), biases zero; momentum SGD
   (lr 0.05 LeNet / 0.1 MLP, momentum 0.9, wd 1e-4, the gradient averaged
   over the batch by rescale_grad) with the learning rate multiplied by
   0.8 after every epoch (a FACTOR schedule, dp_lr_at); batches of 64 from
   the image iterator (shuffled with a fixed seed, normalised by the data
   set's mean and standard deviation, the last short batch discarded so
   one executor serves every step). Each epoch prints the training loss
   and accuracy (of the batches as they were trained), the test accuracy
   and the time. At the end the network is saved as an MXNet checkpoint,
   PREFIX-symbol.json + PREFIX-%04d.params (the epoch count), loaded back,
   bound to a fresh executor and its test accuracy compared with the
   trained one's: it must be the same count of correct images.

   Build: cc -std=c11 -O2 -I. examples/train_fashion.c -o train_fashion -pthread -lm
   Run from the repository root (the LeNet symbol file's default path):
     ./train_fashion [--net lenet|mlp] [--mode autograd|executor]
                     [--engine naive|pooled|perdevice] [--epochs N]
                     [--train-limit N] [--lr X] [--min-accuracy X]
                     [--data DIR] [--symbol PATH] [--checkpoint PREFIX]
                     [--check-bitwise STEPS]
   The data: sudo apt-get install dataset-fashion-mnist (or, from the
   repository root, tests/fashion_mnist_deps.sh).
   As examples/train_digits.c, the file is a whole program; the
   repository's Makefile links the implementation compiled once instead
   (DEPENG_EXAMPLE_SEPARATE_IMPL). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#endif
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "fashion_nets.h"                /* the two networks */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>                     /* QueryPerformanceCounter */
#endif

enum { CLASSES = 10, BATCH = 64, TEST_BATCH = 500, MAX_ARGS = 16 };
/* Fashion-MNIST's training images: mean 72.94 and standard deviation 90.02
   in pixel units (0.2860 and 0.3530 of 255), so the inputs are about zero
   mean and unit variance, which Xavier's scale assumes. */
static const float PIXEL_MEAN = 72.94f, PIXEL_STD = 90.02f;
static const char *const FILES[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                     "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};

typedef struct options {
    int lenet, executor, epochs;
    dp_engine_type engine;
    const char *engine_name, *data_dir, *symbol_path, *checkpoint;
    int64_t train_limit;
    double lr, min_accuracy;
    int check_steps;
} options;

/* One network's state on one engine. */
typedef struct net {
    dp_engine *eng;
    dp_symbol *sym;                      /* the graph, ending in SoftmaxOutput */
    int num_args;
    const char *names[MAX_ARGS];         /* dp_sym_list_arguments' order (borrowed from sym) */
    dp_shape shapes[MAX_ARGS];           /* inferred for a training batch */
    dp_ndarray *params[MAX_ARGS];        /* NULL for data and softmax_label */
    dp_optimizer *opt[MAX_ARGS];
    dp_executor *train_ex, *test_ex;     /* executor mode only */
    dp_ndarray *bx, *by, *tx, *ty;       /* the executors' bound batch arrays */
} net;

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
static void die(const char *what) { fprintf(stderr, "train_fashion: %s failed\n", what); exit(1); }

/* ---- the networks ---------------------------------------------------------- */
/* The MLP and LeNet themselves (their symbols, fashion_data_shape for a
   batch, the forward pass as operator calls) are in examples/fashion_nets.h,
   which bench/train.c shares; here the forward is tied to this program's
   net. */
/* The autograd mode's forward (fashion_forward: the symbol's nodes as
   operator calls, the executor's kernels in its order). Returns
   SoftmaxOutput's probabilities. */
static dp_ndarray *forward(const net *n, int lenet, dp_ndarray *x, dp_ndarray *y) {
    fashion_params p = { .num_args = n->num_args, .names = n->names, .arrays = n->params };
    dp_ndarray *out = fashion_forward(n->eng, &p, lenet, x, y);
    if (!out) die("the forward pass");
    return out;
}

/* ---- setting up ------------------------------------------------------------ */
/* Binds an executor on the parameters and fresh batch arrays of rows rows;
   with_grads: the parameters' gradients (those their optimizers made). */
static dp_executor *bind(net *n, int lenet, const dp_symbol *sym, int64_t rows, dp_ndarray *const *params, int with_grads,
                         dp_ndarray **x, dp_ndarray **y) {
    dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_shape xs = fashion_data_shape(lenet, rows), ys = {1, {rows}};
    dp_ndarray *args[MAX_ARGS], *grads[MAX_ARGS];
    dp_executor *ex = NULL;
    int i;
    if (dp_nd_zeros(n->eng, &xs, DP_FLOAT32, cpu, x) != DP_OK || dp_nd_zeros(n->eng, &ys, DP_FLOAT32, cpu, y) != DP_OK) die("the batch arrays");
    for (i = 0; i < n->num_args; i++) {
        args[i] = !strcmp(n->names[i], "data") ? *x : !strcmp(n->names[i], "softmax_label") ? *y : params[i];
        grads[i] = with_grads && n->params[i] ? dp_nd_grad(n->params[i]) : NULL;
    }
    if (dp_exec_bind(n->eng, sym, &(dp_exec_desc){ .ctx = cpu, .num_args = n->num_args, .args = args, .grads = with_grads ? grads : NULL }, &ex) != DP_OK)
        die("dp_exec_bind");
    return ex;
}
static void net_init(net *n, const options *o, dp_engine_type type) {
    dp_engine_desc d;
    dp_ctx cpu = {DP_DEV_CPU, 0};
    const char *dn[1] = {"data"};
    dp_shape ds = fashion_data_shape(o->lenet, BATCH);
    dp_nd_named named[MAX_ARGS];
    /* MXNet's train_mnist.py: Xavier, uniform, fan-in, magnitude 2.34 */
    dp_initializer init = { .kind = DP_INIT_XAVIER, .rnd_type = DP_INIT_RND_UNIFORM, .factor_type = DP_INIT_FACTOR_IN, .magnitude = 2.34 };
    int i, k = 0;
    memset(n, 0, sizeof *n);
    memset(&d, 0, sizeof d);
    d.type = type;
    if (dp_engine_create(&d, &n->eng) != DP_OK) die("dp_engine_create");
    n->sym = o->lenet ? fashion_lenet_symbol(o->symbol_path) : fashion_mlp_symbol();
    if (!n->sym) exit(1);                /* fashion_nets.h said why */
    n->num_args = dp_sym_list_arguments(n->sym, n->names, MAX_ARGS);
    if (n->num_args < 0 || n->num_args > MAX_ARGS) die("dp_sym_list_arguments (more than 16 arguments?)");
    if (dp_sym_infer(n->sym, &(dp_sym_infer_desc){ .num_known = 1, .names = dn, .shapes = &ds, .arg_shapes = n->shapes }) != DP_OK)
        die("inferring the parameters' shapes from the data's");
    for (i = 0; i < n->num_args; i++) {
        if (!strcmp(n->names[i], "data") || !strcmp(n->names[i], "softmax_label")) continue;
        if (dp_nd_zeros(n->eng, &n->shapes[i], DP_FLOAT32, cpu, &n->params[i]) != DP_OK) die("a parameter array");
        snprintf(named[k].name, sizeof named[k].name, "%s", n->names[i]);
        named[k++].array = n->params[i];
    }
    /* the same seed on every engine: the same first weights everywhere */
    if (dp_random_seed(n->eng, cpu, 42) != DP_OK || dp_init_params(&init, n->sym, named, k) != DP_OK) die("dp_init_params");
    for (i = 0; i < n->num_args; i++)
        if (n->params[i] && dp_optimizer_create(n->params[i], &(dp_optimizer_desc){ .update = "sgd_mom_update",
                .params = {{"lr", .f = o->lr}, {"momentum", .f = 0.9}, {"wd", .f = 1e-4}, {"rescale_grad", .f = 1.0 / BATCH}} }, &n->opt[i]) != DP_OK)
            die("dp_optimizer_create");
    if (o->executor) {
        n->train_ex = bind(n, o->lenet, n->sym, BATCH, n->params, 1, &n->bx, &n->by);
        n->test_ex = bind(n, o->lenet, n->sym, TEST_BATCH, n->params, 0, &n->tx, &n->ty);
    }
}
static void net_release(net *n) {
    int i;
    dp_exec_destroy(n->train_ex); dp_exec_destroy(n->test_ex);
    dp_nd_release(n->bx); dp_nd_release(n->by); dp_nd_release(n->tx); dp_nd_release(n->ty);
    for (i = 0; i < n->num_args; i++) { dp_optimizer_destroy(n->opt[i]); dp_nd_release(n->params[i]); }
    dp_sym_release(n->sym);
    if (dp_engine_destroy(n->eng, NULL) != DP_OK) die("dp_engine_destroy");
}
/* The images and labels of one half of the data set (idx files, gzipped). */
static void load(dp_engine *eng, const char *dir, int test, dp_ndarray **x, dp_ndarray **y) {
    char images[4096], labels[4096];
    dp_ctx cpu = {DP_DEV_CPU, 0};
    snprintf(images, sizeof images, "%s/%s", dir, FILES[2 * test]);
    snprintf(labels, sizeof labels, "%s/%s", dir, FILES[2 * test + 1]);
    if (dp_nd_load_mnist(eng, images, labels, cpu, x, y) != DP_OK) { fprintf(stderr, "train_fashion: cannot load %s and %s\n", images, labels); exit(1); }
}
static dp_image_iter *iterator(const options *o, dp_ndarray *x, dp_ndarray *y, int train) {
    dp_image_iter *it = NULL;
    dp_image_iter_desc d;
    memset(&d, 0, sizeof d);
    d.data = x; d.label = y; d.seed = 7;
    d.batch_size = train ? BATCH : TEST_BATCH;
    d.shuffle = train;
    /* training: every batch full, one executor; testing: every image once,
       the padding repeats the first ones and is not counted */
    d.last_batch = train ? DP_LAST_BATCH_DISCARD : DP_LAST_BATCH_PAD;
    d.mean = &PIXEL_MEAN; d.std = &PIXEL_STD;
    d.flat = !o->lenet;
    if (dp_image_iter_create(&d, &it) != DP_OK) die("dp_image_iter_create");
    return it;
}

/* ---- training and testing -------------------------------------------------- */
/* Adds the summed cross-entropy and the correct count of the first rows of
   a batch's probabilities (read back: the read waits for the forward pass
   only, while the backward pass and the updates pushed before it run). */
static void score(dp_ndarray *probs, dp_ndarray *labels, int64_t rows, double *loss, int64_t *correct) {
    static float p[TEST_BATCH * CLASSES], l[TEST_BATCH];
    int64_t r, total = dp_nd_shape(probs)->dims[0];
    int c, best;
    if (dp_nd_read(probs, p, sizeof(float) * (size_t)(total * CLASSES), NULL) != DP_OK
        || dp_nd_read(labels, l, sizeof(float) * (size_t)total, NULL) != DP_OK) die("reading the probabilities");
    for (r = 0; r < rows; r++) {
        const float *q = p + r * CLASSES;
        int label = (int)l[r];
        for (best = 0, c = 1; c < CLASSES; c++) if (q[c] > q[best]) best = c;
        *correct += best == label;
        if (loss) *loss -= log(q[label] > 1e-30f ? q[label] : 1e-30f);
    }
}
/* One training step on a batch: forward, backward, the updates
   (fashion_train_step, in either mode). Returns the probabilities (a new
   reference). */
static dp_ndarray *train_step(net *n, const options *o, dp_ndarray *x, dp_ndarray *y) {
    fashion_params p = { .num_args = n->num_args, .names = n->names, .arrays = n->params };
    dp_ndarray *probs = fashion_train_step(n->eng, o->executor ? n->train_ex : NULL, n->bx, n->by, &p, n->opt, o->lenet, x, y);
    if (!probs) die("the training step");
    return probs;
}
/* Correct test images, with the network as trained (ex NULL: autograd's
   forward without recording) or through ex bound to x and y. */
static int64_t test_correct(net *n, int lenet, dp_executor *ex, dp_ndarray *bx, dp_ndarray *by, dp_image_iter *it) {
    dp_ndarray *x, *y, *probs;
    int64_t correct = 0;
    int pad;
    if (dp_image_iter_reset(it) != DP_OK) die("dp_image_iter_reset");
    while (dp_image_iter_next(it, &x, &y, &pad) == DP_OK && x) {
        if (ex) {
            if (dp_invoke(n->eng, &(dp_invoke_desc){ .op = "_copy", .inputs = {x}, .outputs = {bx} }, NULL) != DP_OK
                || dp_invoke(n->eng, &(dp_invoke_desc){ .op = "_copy", .inputs = {y}, .outputs = {by} }, NULL) != DP_OK
                || dp_exec_forward(ex, 0) != DP_OK) die("the test forward pass");
            probs = dp_nd_retain(dp_exec_output(ex, 0));
        } else probs = forward(n, lenet, x, y);
        score(probs, y, TEST_BATCH - pad, NULL, &correct);
        dp_nd_release(probs); dp_nd_release(x); dp_nd_release(y);
    }
    return correct;
}
/* Trains on every engine in both modes for steps steps and compares every
   parameter byte for byte with the first run's (autograd, naive engine). */
static int check_bitwise(options o) {
    static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    static const char *const kind_names[3] = {"naive", "pooled", "perdevice"};
    float *ref[MAX_ARGS] = {NULL}, *got = NULL;
    int mode, k, i, same = 1;
    for (mode = 0; mode < 2; mode++) for (k = 0; k < 3; k++) {
        net n;
        dp_ndarray *x, *y, *train_x, *train_y;
        dp_image_iter *it;
        int step = 0;
        double t0 = now();
        o.executor = mode;
        net_init(&n, &o, kinds[k]);
        load(n.eng, o.data_dir, 0, &train_x, &train_y);
        it = iterator(&o, train_x, train_y, 1);
        while (step < o.check_steps) {
            if (dp_image_iter_next(it, &x, &y, NULL) != DP_OK) die("dp_image_iter_next");
            if (!x) { if (dp_image_iter_reset(it) != DP_OK) die("dp_image_iter_reset"); continue; }
            dp_nd_release(train_step(&n, &o, x, y));
            dp_nd_release(x); dp_nd_release(y);
            step++;
        }
        for (i = 0; i < n.num_args; i++) {
            size_t bytes;
            if (!n.params[i]) continue;
            bytes = dp_nd_bytes(n.params[i]);
            if (!(got = (float *)malloc(bytes))) die("malloc");
            if (dp_nd_read(n.params[i], got, bytes, NULL) != DP_OK) die("reading a parameter");
            if (!ref[i]) { ref[i] = got; continue; }
            if (memcmp(ref[i], got, bytes)) {
                printf("DIFFERENT: %s after %d steps, %s mode on the %s engine, against autograd on the naive engine\n", n.names[i],
                       o.check_steps, mode ? "executor" : "autograd", kind_names[k]);
                same = 0;
            }
            free(got);
        }
        printf("%s, %s engine: %d steps in %.2f s\n", mode ? "executor" : "autograd", kind_names[k], o.check_steps, now() - t0);
        dp_image_iter_destroy(it);
        dp_nd_release(train_x); dp_nd_release(train_y);
        net_release(&n);
    }
    for (i = 0; i < MAX_ARGS; i++) free(ref[i]);
    printf(same ? "bitwise the same parameters on the naive, pooled and per-device engines, in autograd and executor modes\n"
                : "the parameters differ\n");
    return same ? 0 : 1;
}
/* Saves the checkpoint, loads it back, binds it to a new executor and
   counts the correct test images again: the count must be expected's. */
static void checkpoint_round_trip(net *n, const options *o, dp_image_iter *test_it, int64_t expected) {
    dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_nd_named named[MAX_ARGS];
    dp_checkpoint ck;
    const char *in_names[2] = {"data", "softmax_label"};
    dp_shape in_shapes[2] = {fashion_data_shape(o->lenet, TEST_BATCH), {1, {TEST_BATCH}}};
    dp_ndarray *params[MAX_ARGS] = {NULL}, *x = NULL, *y = NULL;
    dp_executor *ex;
    const char *names[MAX_ARGS];
    net view = *n;                       /* the loaded symbol's argument list, on n's engine */
    int i, j, k = 0;
    int64_t correct;
    for (i = 0; i < n->num_args; i++) {
        if (!n->params[i]) continue;
        snprintf(named[k].name, sizeof named[k].name, "%s", n->names[i]);
        named[k++].array = n->params[i];
    }
    if (dp_checkpoint_save(o->checkpoint, o->epochs, n->sym, named, k, NULL, 0, NULL) != DP_OK) die("dp_checkpoint_save");
    if (dp_checkpoint_load(n->eng, o->checkpoint, o->epochs, cpu, &(dp_checkpoint_desc){ .num_inputs = 2, .input_names = in_names,
                                                                                          .input_shapes = in_shapes }, &ck) != DP_OK)
        die("dp_checkpoint_load");
    view.num_args = dp_sym_list_arguments(ck.symbol, names, MAX_ARGS);
    if (view.num_args != n->num_args) die("the reloaded symbol's argument list");
    for (i = 0; i < view.num_args; i++) {
        view.names[i] = names[i];
        view.params[i] = NULL;
        for (j = 0; j < ck.num_args; j++) if (!strcmp(ck.args[j].name, names[i])) params[i] = ck.args[j].array;
        if (!params[i] && strcmp(names[i], "data") && strcmp(names[i], "softmax_label")) {
            fprintf(stderr, "train_fashion: the checkpoint %s-%04d.params has no arg:%s\n", o->checkpoint, o->epochs, names[i]);
            exit(1);
        }
    }
    ex = bind(&view, o->lenet, ck.symbol, TEST_BATCH, params, 0, &x, &y);
    correct = test_correct(&view, o->lenet, ex, x, y, test_it);
    printf("checkpoint %s-symbol.json + %s-%04d.params reloaded: test accuracy %.2f%% (%lld correct, %s)\n", o->checkpoint, o->checkpoint,
           o->epochs, 100.0 * (double)correct / 10000, (long long)correct, correct == expected ? "the same" : "NOT the same");
    dp_exec_destroy(ex);
    dp_nd_release(x); dp_nd_release(y);
    dp_checkpoint_free(&ck);
    if (correct != expected) exit(1);
}
static int train(const options *o) {
    net n;
    dp_ndarray *train_x, *train_y, *test_x, *test_y, *sub_x = NULL, *sub_y = NULL, *x, *y;
    dp_image_iter *train_it, *test_it;
    dp_lr_schedule lr = { .kind = DP_LR_FACTOR, .base_lr = o->lr, .factor = 0.8, .stop_factor_lr = 1e-8 };
    int64_t images, step = 0, test_images, correct_test = 0;
    double t0, test_acc = 0;
    int epoch, i;
    net_init(&n, o, o->engine);
    load(n.eng, o->data_dir, 0, &train_x, &train_y);
    load(n.eng, o->data_dir, 1, &test_x, &test_y);
    images = dp_nd_shape(train_x)->dims[0];
    test_images = dp_nd_shape(test_x)->dims[0];
    if (o->train_limit > 0 && o->train_limit < images) {   /* the first train_limit images, as views */
        if (dp_nd_slice(train_x, 0, o->train_limit, &sub_x) != DP_OK || dp_nd_slice(train_y, 0, o->train_limit, &sub_y) != DP_OK) die("dp_nd_slice");
        images = o->train_limit;
    }
    train_it = iterator(o, sub_x ? sub_x : train_x, sub_y ? sub_y : train_y, 1);
    test_it = iterator(o, test_x, test_y, 0);
    lr.step = dp_image_iter_num_batches(train_it);       /* the rate falls after every epoch */
    if (dp_lr_check(&lr) != DP_OK) die("dp_lr_check");
    printf("Fashion-MNIST: %lld training images (%lld batches of %d), %lld test images; %s, %s mode, %s engine\n", (long long)images,
           (long long)lr.step, BATCH, (long long)test_images, o->lenet ? "LeNet" : "MLP 784-128-64-10", o->executor ? "executor" : "autograd",
           o->engine_name);
    if (o->lenet) printf("  (LeNet from %s)\n", o->symbol_path);
    t0 = now();
    for (epoch = 1; epoch <= o->epochs; epoch++) {
        double loss = 0, rate = dp_lr_at(&lr, step + 1);
        int64_t correct = 0, seen = 0;
        dp_param p = dp_param_float("lr", rate);
        for (i = 0; i < n.num_args; i++) if (n.opt[i] && dp_optimizer_set_param(n.opt[i], &p) != DP_OK) die("dp_optimizer_set_param");
        if (dp_image_iter_reset(train_it) != DP_OK) die("dp_image_iter_reset");
        while (dp_image_iter_next(train_it, &x, &y, NULL) == DP_OK && x) {
            dp_ndarray *probs = train_step(&n, o, x, y);
            score(probs, y, BATCH, &loss, &correct);
            seen += BATCH; step++;
            dp_nd_release(probs); dp_nd_release(x); dp_nd_release(y);
        }
        correct_test = test_correct(&n, o->lenet, n.test_ex, n.tx, n.ty, test_it);
        test_acc = (double)correct_test / (double)test_images;
        printf("epoch %2d/%d  lr %.4f  loss %.4f  train accuracy %.2f%%  test accuracy %.2f%%  (%.1f s)\n", epoch, o->epochs, rate,
               loss / (double)seen, 100.0 * (double)correct / (double)seen, 100 * test_acc, now() - t0);
        fflush(stdout);
    }
    printf("test accuracy %.2f%% after %d epochs in %.1f s\n", 100 * test_acc, o->epochs, now() - t0);
    checkpoint_round_trip(&n, o, test_it, correct_test);
    dp_image_iter_destroy(train_it); dp_image_iter_destroy(test_it);
    dp_nd_release(sub_x); dp_nd_release(sub_y);
    dp_nd_release(train_x); dp_nd_release(train_y); dp_nd_release(test_x); dp_nd_release(test_y);
    net_release(&n);
    if (test_acc < o->min_accuracy) { printf("below the required %.2f%%\n", 100 * o->min_accuracy); return 1; }
    return 0;
}

static int usage(const char *prog, const char *why, const char *what) {
    if (why) fprintf(stderr, "train_fashion: %s%s\n", why, what ? what : "");
    fprintf(stderr, "usage: %s [--net lenet|mlp] [--mode autograd|executor] [--engine naive|pooled|perdevice] [--epochs N]\n"
                    "       [--train-limit N] [--lr X] [--min-accuracy X] [--data DIR] [--symbol PATH] [--checkpoint PREFIX]\n"
                    "       [--check-bitwise STEPS]\n", prog);
    return 2;
}
int main(int argc, char **argv) {
    options o;
    int i, lr_given = 0;
    char prefix[64];
    memset(&o, 0, sizeof o);
    o.lenet = 1; o.epochs = -1; o.engine = DP_ENGINE_PERDEVICE; o.engine_name = "perdevice";
    o.data_dir = "/usr/share/datasets/fashion-mnist"; o.symbol_path = "examples/lenet-symbol.json";
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v) return usage(argv[0], "no value after ", a);
        i++;
        if (!strcmp(a, "--net")) {
            if (strcmp(v, "lenet") && strcmp(v, "mlp")) return usage(argv[0], "--net must be lenet or mlp, not ", v);
            o.lenet = !strcmp(v, "lenet");
        } else if (!strcmp(a, "--mode")) {
            if (strcmp(v, "autograd") && strcmp(v, "executor")) return usage(argv[0], "--mode must be autograd or executor, not ", v);
            o.executor = !strcmp(v, "executor");
        } else if (!strcmp(a, "--engine")) {
            if (!strcmp(v, "naive")) o.engine = DP_ENGINE_NAIVE;
            else if (!strcmp(v, "pooled")) o.engine = DP_ENGINE_POOLED;
            else if (!strcmp(v, "perdevice")) o.engine = DP_ENGINE_PERDEVICE;
            else return usage(argv[0], "--engine must be naive, pooled or perdevice, not ", v);
            o.engine_name = v;
        } else if (!strcmp(a, "--epochs")) {
            o.epochs = (int)strtol(v, &end, 10);
            if (*end || o.epochs < 1 || o.epochs > 9999) return usage(argv[0], "--epochs must be 1 to 9999, not ", v);
        } else if (!strcmp(a, "--train-limit")) {
            o.train_limit = strtoll(v, &end, 10);
            if (*end || o.train_limit < BATCH) return usage(argv[0], "--train-limit must be at least a batch (64), not ", v);
        } else if (!strcmp(a, "--lr")) {
            o.lr = strtod(v, &end); lr_given = 1;
            if (*end || !(o.lr > 0)) return usage(argv[0], "--lr must be a positive number, not ", v);
        } else if (!strcmp(a, "--min-accuracy")) {
            o.min_accuracy = strtod(v, &end);
            if (*end || !(o.min_accuracy >= 0 && o.min_accuracy <= 1)) return usage(argv[0], "--min-accuracy must be 0 to 1, not ", v);
        } else if (!strcmp(a, "--check-bitwise")) {
            o.check_steps = (int)strtol(v, &end, 10);
            if (*end || o.check_steps < 1) return usage(argv[0], "--check-bitwise must be a positive step count, not ", v);
        } else if (!strcmp(a, "--data")) o.data_dir = v;
        else if (!strcmp(a, "--symbol")) o.symbol_path = v;
        else if (!strcmp(a, "--checkpoint")) o.checkpoint = v;
        else return usage(argv[0], "unknown option ", a);
    }
    /* 10 MLP epochs reach 88%, 5 LeNet epochs 90.3% (README's figures) */
    if (o.epochs < 0) o.epochs = 10;
    if (!lr_given) o.lr = o.lenet ? 0.05 : 0.1;
    if (!o.checkpoint) { snprintf(prefix, sizeof prefix, "fashion-%s", o.lenet ? "lenet" : "mlp"); o.checkpoint = prefix; }
    for (i = 0; i < 4; i++) {   /* the data, before anything else, with what to do about it */
        char path[4096];
        FILE *f;
        snprintf(path, sizeof path, "%s/%s", o.data_dir, FILES[i]);
        if (!(f = fopen(path, "rb"))) {
            fprintf(stderr, "train_fashion: %s is missing. Fashion-MNIST comes from Debian's dataset-fashion-mnist package:\n"
                            "  sudo apt-get install dataset-fashion-mnist   (or tests/fashion_mnist_deps.sh from the repository root)\n"
                            "or pass --data DIR for a directory holding the four idx files (%s, %s, %s, %s).\n",
                    path, FILES[0], FILES[1], FILES[2], FILES[3]);
            return 3;
        }
        fclose(f);
    }
    return o.check_steps ? check_bitwise(o) : train(&o);
}
