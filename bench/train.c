/* bench/train.c - one training configuration's time per step (make
   bench-train; bench/README.md, "Training against PyTorch").

   Trains MXNet's example networks on Fashion-MNIST held in memory, as
   examples/train_fashion.c does, and times the steps:
     mlp    784 - 128 (relu) - 64 (relu) - 10 - SoftmaxOutput
     lenet  examples/lenet-symbol.json: conv 5x5x20 - tanh - maxpool 2 -
            conv 5x5x50 - tanh - maxpool 2 - fc 500 - tanh - fc 10 -
            SoftmaxOutput
   in autograd mode (the operators invoked one by one while autograd
   records, then dp_autograd_backward) or executor mode (the symbol bound
   once; a step copies the batch into the bound arrays and pushes the
   forward and backward operations). A step is forward, backward and the
   momentum-SGD updates (sgd_mom_update through dp_optimizer_step: lr 0.1
   MLP / 0.05 LeNet, momentum 0.9, wd 1e-4, rescale_grad 1/batch), then
   dp_wait_all, timed from the first push to the wait's return. Xavier
   initialisation (uniform, fan-in, magnitude 2.34) with a fixed seed.

   The batches come from the image iterator (shuffled with a fixed seed,
   normalised by the data set's mean and standard deviation) and are all
   made before the timing starts (BATCHES of them, used in turn), so the
   timed loop runs only the step, as the PyTorch script's loop
   (bench/train_torch.py) does with its tensors made in advance.

   The engine: per-device, T CPU workers (--threads T); the main thread
   pushes and waits. --threads 0: no worker (DP_NO_THREADS): the main
   thread runs every op inside its dp_wait_all, one thread in all (the
   counterpart of PyTorch with one thread). Built with DEPENG_USE_CBLAS (make builds
   build/bench_train_cblas where OpenBLAS is installed), FullyConnected and
   Convolution run their products through cblas_sgemm, with as many
   OpenBLAS threads as OPENBLAS_NUM_THREADS says (bench/train.sh sets 1:
   the engine's workers are the parallelism).

   Output (one line per figure, key=value; times in ms):
     train system=depeng blas=builtin|openblas net=N batch=B mode=M
           threads=T ms_per_step=MEDIAN min=.. p90=.. mean=.. steps=S
           cpu_util=U
   cpu_util is the process's user+sys CPU time over the timed steps' wall
   time (getrusage). With --profile P, P more steps under the engine's
   profiler, then per operator name
     profile net=N batch=B mode=M op=NAME count_per_step=C ms_per_step=X share=Y
   (share: X over the median step; the ops of a step may overlap, so the
   shares may add up to more than 1) and a total line. With --epoch E,
   E steps straight from the iterator, as a user's training loop runs
   (0: one whole epoch, 60000 / B steps), with the loss read back every
   step as train_fashion does, then
     epoch net=N batch=B mode=M threads=T steps=S wall_s=.. user_s=..
           sys_s=.. util=(user+sys)/wall
   Usage: bench_train [--net mlp|lenet] [--batch B] [--mode autograd|executor]
                      [--threads T] [--steps S] [--warmup W] [--profile P]
                      [--epoch E] [--set train|test] [--data DIR] [--symbol PATH]
                      [--fusion on|off]
   --fusion off binds the executor with dp_exec_desc.no_fusion (for A/B
   runs; executor mode prints a comment line with the fused count, the
   operations and the memory plan's planned_bytes).
   --set test trains on the 10,000 test images instead of the 60,000
   training ones (a sixth of the loading, for bench/train.sh --smoke; an
   epoch is then 10000 / B steps).
   Exit 3 (and a SKIP line) when the data set is not installed
   (tests/fashion_mnist_deps.sh installs it). make links the implementation
   compiled once (build/impl/bench.o, DEPENG_EXAMPLE_SEPARATE_IMPL). */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L   /* clock_gettime, getrusage */
#endif
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "bench/common.h"
#include "examples/fashion_nets.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#ifdef DEPENG_USE_CBLAS
#include <cblas.h>
#define BLAS_NAME "openblas"
#else
#define BLAS_NAME "builtin"
#endif

enum { CLASSES = 10, MAX_ARGS = 16, BATCHES = 16, MAX_PROF_ROWS = 64 };
static const float PIXEL_MEAN = 72.94f, PIXEL_STD = 90.02f;   /* as examples/train_fashion.c */
static const dp_ctx CPU = {DP_DEV_CPU, 0};

typedef struct options {
    int lenet, executor, batch, threads, steps, warmup, profile, epoch, test_set, no_fusion;
    const char *data_dir, *symbol_path;
} options;
typedef struct net {
    dp_engine *eng;
    dp_symbol *sym;
    int num_args;
    const char *names[MAX_ARGS];
    dp_shape shapes[MAX_ARGS];
    dp_ndarray *params[MAX_ARGS];
    dp_optimizer *opt[MAX_ARGS];
    dp_executor *ex;
    dp_ndarray *bx, *by;
} net;

static void die(const char *what) { fprintf(stderr, "FAIL bench_train: %s\n", what); exit(1); }
static double seconds(void) { return bench_now_ns() * 1e-9; }
static double cpu_seconds(double *user, double *sys) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) die("getrusage");
    *user = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec;
    *sys = (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    return *user + *sys;
}

/* ---- the networks (examples/fashion_nets.h, as examples/train_fashion.c) */
static void net_init(net *n, const options *o) {
    dp_engine_desc d;
    const char *dn[1] = {"data"};
    dp_shape ds = fashion_data_shape(o->lenet, o->batch);
    dp_nd_named named[MAX_ARGS];
    dp_initializer init = { .kind = DP_INIT_XAVIER, .rnd_type = DP_INIT_RND_UNIFORM, .factor_type = DP_INIT_FACTOR_IN, .magnitude = 2.34 };
    int i, k = 0;
    memset(n, 0, sizeof *n);
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_PERDEVICE;
    d.cpu_worker_nthreads = o->threads ? o->threads : DP_NO_THREADS;
    d.ignore_env = 1;
    if (dp_engine_create(&d, &n->eng) != DP_OK) die("dp_engine_create");
    n->sym = o->lenet ? fashion_lenet_symbol(o->symbol_path) : fashion_mlp_symbol();
    if (!n->sym) die("the network's symbol");
    n->num_args = dp_sym_list_arguments(n->sym, n->names, MAX_ARGS);
    if (n->num_args < 0 || n->num_args > MAX_ARGS) die("dp_sym_list_arguments");
    if (dp_sym_infer(n->sym, &(dp_sym_infer_desc){ .num_known = 1, .names = dn, .shapes = &ds, .arg_shapes = n->shapes }) != DP_OK)
        die("dp_sym_infer");
    for (i = 0; i < n->num_args; i++) {
        if (!strcmp(n->names[i], "data") || !strcmp(n->names[i], "softmax_label")) continue;
        if (dp_nd_zeros(n->eng, &n->shapes[i], DP_FLOAT32, CPU, &n->params[i]) != DP_OK) die("a parameter array");
        snprintf(named[k].name, sizeof named[k].name, "%s", n->names[i]);
        named[k++].array = n->params[i];
    }
    if (dp_random_seed(n->eng, CPU, 42) != DP_OK || dp_init_params(&init, n->sym, named, k) != DP_OK) die("dp_init_params");
    for (i = 0; i < n->num_args; i++)
        if (n->params[i] && dp_optimizer_create(n->params[i], &(dp_optimizer_desc){ .update = "sgd_mom_update",
                .params = {{"lr", .f = o->lenet ? 0.05 : 0.1}, {"momentum", .f = 0.9}, {"wd", .f = 1e-4},
                            {"rescale_grad", .f = 1.0 / o->batch}} }, &n->opt[i]) != DP_OK)
            die("dp_optimizer_create");
    if (o->executor) {
        dp_shape xs = fashion_data_shape(o->lenet, o->batch), ys = {1, {o->batch}};
        dp_ndarray *args[MAX_ARGS], *grads[MAX_ARGS];
        if (dp_nd_zeros(n->eng, &xs, DP_FLOAT32, CPU, &n->bx) != DP_OK || dp_nd_zeros(n->eng, &ys, DP_FLOAT32, CPU, &n->by) != DP_OK) die("the batch arrays");
        for (i = 0; i < n->num_args; i++) {
            args[i] = !strcmp(n->names[i], "data") ? n->bx : !strcmp(n->names[i], "softmax_label") ? n->by : n->params[i];
            grads[i] = n->params[i] ? dp_nd_grad(n->params[i]) : NULL;
        }
        dp_exec_memory mem;
        if (dp_exec_bind(n->eng, n->sym, &(dp_exec_desc){ .ctx = CPU, .num_args = n->num_args, .args = args, .grads = grads,
                                                          .no_fusion = o->no_fusion }, &n->ex) != DP_OK
            || dp_exec_memory_get(n->ex, &mem) != DP_OK)
            die("dp_exec_bind");
        printf("# bench_train: executor fusion=%s num_fused=%d operations=%d planned_bytes=%zu\n", o->no_fusion ? "off" : "on", mem.num_fused,
               mem.num_nodes, mem.planned_bytes);
    }
}
static void net_release(net *n) {
    int i;
    dp_exec_destroy(n->ex);
    dp_nd_release(n->bx); dp_nd_release(n->by);
    for (i = 0; i < n->num_args; i++) { dp_optimizer_destroy(n->opt[i]); dp_nd_release(n->params[i]); }
    dp_sym_release(n->sym);
    if (dp_engine_destroy(n->eng, NULL) != DP_OK) die("dp_engine_destroy");
}
/* Pushes one step (forward, backward, the updates: fashion_train_step, as
   train_fashion trains); returns the probabilities (a new reference).
   Does not wait. */
static dp_ndarray *push_step(net *n, const options *o, dp_ndarray *x, dp_ndarray *y) {
    fashion_params p = { .num_args = n->num_args, .names = n->names, .arrays = n->params };
    dp_ndarray *probs = fashion_train_step(n->eng, o->executor ? n->ex : NULL, n->bx, n->by, &p, n->opt, o->lenet, x, y);
    if (!probs) die("the training step");
    return probs;
}
static void wait_all(net *n) { if (dp_wait_all(n->eng, NULL) != DP_OK) die("dp_wait_all (an operation failed; see the log above)"); }
/* One step, waited for; seconds. */
static double timed_step(net *n, const options *o, dp_ndarray *x, dp_ndarray *y) {
    double t0 = seconds();
    dp_ndarray *probs = push_step(n, o, x, y);
    wait_all(n);
    t0 = seconds() - t0;
    dp_nd_release(probs);
    return t0;
}
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

static dp_image_iter *iterator(const options *o, dp_ndarray *x, dp_ndarray *y) {
    dp_image_iter *it = NULL;
    dp_image_iter_desc d;
    memset(&d, 0, sizeof d);
    d.data = x; d.label = y; d.seed = 7; d.batch_size = o->batch; d.shuffle = 1;
    d.last_batch = DP_LAST_BATCH_DISCARD;
    d.mean = &PIXEL_MEAN; d.std = &PIXEL_STD;
    d.flat = !o->lenet;
    if (dp_image_iter_create(&d, &it) != DP_OK) die("dp_image_iter_create");
    return it;
}
static void next_batch(dp_image_iter *it, dp_ndarray **x, dp_ndarray **y) {
    if (dp_image_iter_next(it, x, y, NULL) != DP_OK) die("dp_image_iter_next");
    if (!*x) {
        if (dp_image_iter_reset(it) != DP_OK || dp_image_iter_next(it, x, y, NULL) != DP_OK || !*x) die("dp_image_iter_reset");
    }
}

/* --profile: the engine's summary table (dp_profiler_dump_summary), parsed
   back and printed per step. */
static void profile(net *n, const options *o, dp_ndarray **bx, dp_ndarray **by, double median_ms) {
    FILE *f = tmpfile();
    char line[512], name[128];
    double total = 0, wall = 0;
    int s;
    if (!f) die("tmpfile");
    dp_profiler_clear(n->eng);
    dp_profiler_start(n->eng);
    for (s = 0; s < o->profile; s++) wall += timed_step(n, o, bx[s % BATCHES], by[s % BATCHES]);
    dp_profiler_stop(n->eng);
    if (dp_profiler_dump_summary(n->eng, f) != DP_OK) die("dp_profiler_dump_summary");
    rewind(f);
    if (!fgets(line, sizeof line, f)) die("reading the profile");   /* the header */
    while (fgets(line, sizeof line, f)) {
        unsigned long long count;
        double tot, mn, mx, mean;
        if (sscanf(line, "%127s %llu %lf %lf %lf %lf", name, &count, &tot, &mn, &mx, &mean) != 6) continue;
        total += tot;
        printf("profile net=%s batch=%d mode=%s blas=%s op=%s count_per_step=%.2f ms_per_step=%.4f share=%.3f\n", o->lenet ? "lenet" : "mlp", o->batch,
               o->executor ? "executor" : "autograd", BLAS_NAME, name, (double)count / o->profile, tot * 1e-3 / o->profile,
               tot * 1e-3 / o->profile / median_ms);
    }
    fclose(f);
    /* ops_ms: the ops' own time summed; wall_ms: the profiled steps' mean
       (the profiler on); the difference is time no op ran (push, hand-over,
       wait) less any overlap of ops */
    printf("profile net=%s batch=%d mode=%s blas=%s total ops_ms_per_step=%.4f wall_ms_per_step=%.4f ops/wall=%.3f\n", o->lenet ? "lenet" : "mlp",
           o->batch, o->executor ? "executor" : "autograd", BLAS_NAME, total * 1e-3 / o->profile, wall * 1e3 / o->profile,
           total * 1e-3 / (wall * 1e3));
}
/* --epoch: steps straight from the iterator, the loss's probabilities read
   back each step (what a training loop that reports progress does). */
static void epoch(net *n, const options *o, dp_image_iter *it) {
    int64_t steps = o->epoch > 0 ? o->epoch : dp_image_iter_num_batches(it), s;
    size_t bytes = sizeof(float) * (size_t)o->batch * CLASSES;
    float *p = (float *)malloc(bytes);
    double u0, s0, u1, s1, t0;
    if (!p) die("malloc");
    if (dp_image_iter_reset(it) != DP_OK) die("dp_image_iter_reset");
    wait_all(n);
    cpu_seconds(&u0, &s0);
    t0 = seconds();
    for (s = 0; s < steps; s++) {
        dp_ndarray *x, *y, *probs;
        next_batch(it, &x, &y);
        probs = push_step(n, o, x, y);
        if (dp_nd_read(probs, p, bytes, NULL) != DP_OK) die("reading the probabilities");
        dp_nd_release(probs); dp_nd_release(x); dp_nd_release(y);
    }
    wait_all(n);
    t0 = seconds() - t0;
    cpu_seconds(&u1, &s1);
    printf("epoch net=%s batch=%d mode=%s blas=%s threads=%d steps=%lld wall_s=%.3f user_s=%.3f sys_s=%.3f util=%.3f\n", o->lenet ? "lenet" : "mlp",
           o->batch, o->executor ? "executor" : "autograd", BLAS_NAME, o->threads, (long long)steps, t0, u1 - u0, s1 - s0, (u1 - u0 + s1 - s0) / t0);
    free(p);
}

static int usage(const char *why, const char *what) {
    if (why) fprintf(stderr, "bench_train: %s%s\n", why, what ? what : "");
    fprintf(stderr, "usage: bench_train [--net mlp|lenet] [--batch B] [--mode autograd|executor] [--threads T] [--steps S]\n"
                    "                   [--warmup W] [--profile P] [--epoch E] [--set train|test] [--data DIR] [--symbol PATH]\n"
                    "                   [--fusion on|off]\n");
    return 2;
}
static int int_arg(const char *v, int lo, int hi, int *out) {
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi) return 0;
    *out = (int)x;
    return 1;
}
int main(int argc, char **argv) {
    options o;
    net n;
    dp_ndarray *train_x = NULL, *train_y = NULL, *bx[BATCHES], *by[BATCHES];
    dp_image_iter *it;
    char images[4096], labels[4096];
    double *times, u0, s0, u1, s1, wall = 0, sum = 0;
    FILE *f;
    int i;
    memset(&o, 0, sizeof o);
    o.batch = 64; o.threads = 2; o.steps = 200; o.warmup = 20; o.epoch = -1;
    o.data_dir = "/usr/share/datasets/fashion-mnist"; o.symbol_path = "examples/lenet-symbol.json";
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage("no value after ", a);
        i++;
        if (!strcmp(a, "--net")) { if (strcmp(v, "mlp") && strcmp(v, "lenet")) return usage("--net must be mlp or lenet, not ", v); o.lenet = !strcmp(v, "lenet"); }
        else if (!strcmp(a, "--mode")) {
            if (strcmp(v, "autograd") && strcmp(v, "executor")) return usage("--mode must be autograd or executor, not ", v);
            o.executor = !strcmp(v, "executor");
        }
        else if (!strcmp(a, "--batch")) { if (!int_arg(v, 1, 60000, &o.batch)) return usage("--batch must be 1 to 60000, not ", v); }
        else if (!strcmp(a, "--threads")) { if (!int_arg(v, 0, 1024, &o.threads)) return usage("--threads must be 0 to 1024, not ", v); }
        else if (!strcmp(a, "--steps")) { if (!int_arg(v, 1, 1000000, &o.steps)) return usage("--steps must be 1 to 1000000, not ", v); }
        else if (!strcmp(a, "--warmup")) { if (!int_arg(v, 0, 1000000, &o.warmup)) return usage("--warmup must be 0 to 1000000, not ", v); }
        else if (!strcmp(a, "--profile")) { if (!int_arg(v, 0, 1000000, &o.profile)) return usage("--profile must be 0 to 1000000, not ", v); }
        else if (!strcmp(a, "--epoch")) { if (!int_arg(v, 0, 1000000, &o.epoch)) return usage("--epoch must be 0 to 1000000, not ", v); }
        else if (!strcmp(a, "--set")) { if (strcmp(v, "train") && strcmp(v, "test")) return usage("--set must be train or test, not ", v); o.test_set = !strcmp(v, "test"); }
        else if (!strcmp(a, "--fusion")) { if (strcmp(v, "on") && strcmp(v, "off")) return usage("--fusion must be on or off, not ", v); o.no_fusion = !strcmp(v, "off"); }
        else if (!strcmp(a, "--data")) o.data_dir = v;
        else if (!strcmp(a, "--symbol")) o.symbol_path = v;
        else return usage("unknown option ", a);
    }
    snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", o.data_dir, o.test_set ? "t10k" : "train");
    snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", o.data_dir, o.test_set ? "t10k" : "train");
    if (!(f = fopen(images, "rb"))) {
        printf("SKIP bench_train: %s is missing (Debian's dataset-fashion-mnist; tests/fashion_mnist_deps.sh installs it)\n", images);
        return 3;
    }
    fclose(f);
#ifdef DEPENG_USE_CBLAS
    printf("# bench_train: products through cblas_sgemm, %d OpenBLAS thread(s)\n", openblas_get_num_threads());
#endif
    net_init(&n, &o);
    if (dp_nd_load_mnist(n.eng, images, labels, CPU, &train_x, &train_y) != DP_OK) die("dp_nd_load_mnist");
    it = iterator(&o, train_x, train_y);
    for (i = 0; i < BATCHES; i++) next_batch(it, &bx[i], &by[i]);
    wait_all(&n);
    for (i = 0; i < o.warmup; i++) timed_step(&n, &o, bx[i % BATCHES], by[i % BATCHES]);
    if (!(times = (double *)malloc(sizeof *times * (size_t)o.steps))) die("malloc");
    cpu_seconds(&u0, &s0);
    for (i = 0; i < o.steps; i++) { times[i] = timed_step(&n, &o, bx[i % BATCHES], by[i % BATCHES]) * 1e3; wall += times[i]; }
    cpu_seconds(&u1, &s1);
    for (i = 0; i < o.steps; i++) sum += times[i];
    qsort(times, (size_t)o.steps, sizeof *times, cmp);
    printf("train system=depeng blas=%s net=%s batch=%d mode=%s threads=%d ms_per_step=%.3f min=%.3f p90=%.3f mean=%.3f steps=%d cpu_util=%.3f\n",
           BLAS_NAME, o.lenet ? "lenet" : "mlp", o.batch, o.executor ? "executor" : "autograd", o.threads, times[o.steps / 2], times[0],
           times[(o.steps * 9) / 10 < o.steps ? (o.steps * 9) / 10 : o.steps - 1], sum / o.steps, o.steps, (u1 - u0 + s1 - s0) / (wall * 1e-3));
    fflush(stdout);
    if (o.profile > 0) profile(&n, &o, bx, by, times[o.steps / 2]);
    if (o.epoch >= 0) epoch(&n, &o, it);
    free(times);
    for (i = 0; i < BATCHES; i++) { dp_nd_release(bx[i]); dp_nd_release(by[i]); }
    dp_image_iter_destroy(it);
    dp_nd_release(train_x); dp_nd_release(train_y);
    net_release(&n);
    return 0;
}
