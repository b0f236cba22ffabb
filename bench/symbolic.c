/* bench/symbolic.c - the symbolic section of `make bench`.

   SYM-step-B: one training step of the digits MLP (64 -> 64 relu -> 10,
   softmax_cross_entropy, momentum SGD on the four parameters) at batch B,
   imperatively (autograd records the forward, dp_autograd_backward pushes
   the gradients) and through an executor bound once (forward, backward:
   pre-created operations pushed), in the same run, on the per-device
   engine with two workers. Both run the same kernels and the same updates
   (dp_invoke of sgd_mom_update), on synthetic data of the digits'
   shape. Median of 5 timed runs of S steps after a warm-up run; then
   "ratio SYM-step-B imperative/executor=R" (above 1: the executor is
   faster) and the executor's memory figures. SYM-mem-deep: the memory
   plan of a deeper MLP (64 -> 4 x 256 -> 10) at batch 256.

   Usage: bench_symbolic [-n STEPS] (default 2000)
   make builds it with DEPENG_EXAMPLE_SEPARATE_IMPL defined and links the
   implementation compiled once (build/impl/bench.o); alone, one cc
   command builds it with the implementation included. */
#define BENCH_IMPLEMENTATION
#include "bench/common.h"
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/test_calls.h"

enum { INPUTS = 64, HIDDEN = 64, CLASSES = 10 };
static const dp_ctx CPU = {DP_DEV_CPU, 0};

static void die(const char *what) { fprintf(stderr, "FAIL bench_symbolic: %s\n", what); exit(1); }
static dp_ndarray *filled(dp_engine *e, int ndim, int64_t d0, int64_t d1, double stddev) {
    dp_shape s = {ndim, {d0, d1}};
    dp_ndarray *a = NULL;
    if ((stddev > 0 ? dp_nd_random_normal(e, 0, stddev, &s, DP_FLOAT32, CPU, &a) : dp_nd_zeros(e, &s, DP_FLOAT32, CPU, &a)) != DP_OK) die("array");
    return a;
}
typedef struct net {
    dp_ndarray *x, *y, *p[4], *mom[4], *grad[4];
    char rescale[32];
} net;
static void net_init(dp_engine *e, net *n, int batch) {
    float *labels = (float *)malloc((size_t)batch * sizeof *labels);
    dp_shape ls = {1, {batch}};
    int i;
    n->x = filled(e, 2, batch, INPUTS, 1.0);
    for (i = 0; i < batch; i++) labels[i] = (float)(i % CLASSES);
    if (dp_nd_from_host(e, &ls, DP_FLOAT32, CPU, labels, &n->y) != DP_OK) die("labels");
    free(labels);
    n->p[0] = filled(e, 2, HIDDEN, INPUTS, 0.18); n->p[1] = filled(e, 1, HIDDEN, 0, 0);
    n->p[2] = filled(e, 2, CLASSES, HIDDEN, 0.18); n->p[3] = filled(e, 1, CLASSES, 0, 0);
    for (i = 0; i < 4; i++) {
        if (dp_nd_zeros(e, dp_nd_shape(n->p[i]), DP_FLOAT32, CPU, &n->mom[i]) != DP_OK) die("momentum");
        if (dp_nd_zeros(e, dp_nd_shape(n->p[i]), DP_FLOAT32, CPU, &n->grad[i]) != DP_OK) die("gradient");
    }
    snprintf(n->rescale, sizeof n->rescale, "%.9g", 1.0 / batch);
}
static void net_release(net *n) {
    int i;
    dp_nd_release(n->x); dp_nd_release(n->y);
    for (i = 0; i < 4; i++) { dp_nd_release(n->p[i]); dp_nd_release(n->mom[i]); dp_nd_release(n->grad[i]); }
}
static void updates(dp_engine *e, net *n, int from_autograd) {
    const char *keys[3] = {"lr", "momentum", "rescale_grad"}, *vals[3] = {"0.1", "0.9", NULL};
    int i;
    vals[2] = n->rescale;
    for (i = 0; i < 4; i++) {
        dp_ndarray *in[3], *out[1];
        in[0] = n->p[i]; in[1] = from_autograd ? dp_nd_grad(n->p[i]) : n->grad[i]; in[2] = n->mom[i]; out[0] = n->p[i];
        if (invoke_str(e, "sgd_mom_update", 3, in, 3, keys, vals, 0, 1, out, NULL) != DP_OK) die("sgd_mom_update");
    }
}
static dp_ndarray *invoke(dp_engine *e, const char *op, int nin, dp_ndarray **in, int nkw, const char **k, const char **v) {
    dp_ndarray *out = NULL;
    if (invoke_str(e, op, nin, in, nkw, k, v, 0, 1, &out, NULL) != DP_OK) die(op);
    return out;
}
static void imperative_step(dp_engine *e, net *n) {
    const char *key[1] = {"num_hidden"}, *h[1] = {"64"}, *c[1] = {"10"};
    dp_ndarray *in[3], *fc1, *act, *fc2, *loss;
    dp_autograd_begin();
    in[0] = n->x; in[1] = n->p[0]; in[2] = n->p[1];
    fc1 = invoke(e, "FullyConnected", 3, in, 1, key, h);
    act = invoke(e, "relu", 1, &fc1, 0, NULL, NULL);
    in[0] = act; in[1] = n->p[2]; in[2] = n->p[3];
    fc2 = invoke(e, "FullyConnected", 3, in, 1, key, c);
    in[0] = fc2; in[1] = n->y;
    loss = invoke(e, "softmax_cross_entropy", 2, in, 0, NULL, NULL);
    dp_autograd_end();
    if (dp_autograd_backward(loss, NULL, 0) != DP_OK) die("backward");
    updates(e, n, 1);
    dp_nd_release(fc1); dp_nd_release(act); dp_nd_release(fc2); dp_nd_release(loss);
}
/* data -> FullyConnected -> relu, per width, -> FullyConnected(classes) -> loss */
static dp_symbol *mlp_symbol(int layers, const int *width) {
    dp_symbol *cur, *label, *in[3], *next;
    char name[32], units[16];
    const char *key[1] = {"num_hidden"}, *val[1] = {units};
    int i;
    if (dp_sym_var("data", &cur) != DP_OK || dp_sym_var("label", &label) != DP_OK) die("dp_sym_var");
    for (i = 0; i <= layers; i++) {
        snprintf(name, sizeof name, "fc%d", i + 1);
        snprintf(units, sizeof units, "%d", i < layers ? width[i] : CLASSES);
        in[0] = cur; in[1] = NULL; in[2] = NULL;
        if (sym_op("FullyConnected", name, 3, in, 1, key, val, &next) != DP_OK) die("FullyConnected");
        dp_sym_release(cur); cur = next;
        if (i == layers) break;
        snprintf(name, sizeof name, "relu%d", i + 1);
        if (sym_op("relu", name, 1, &cur, 0, NULL, NULL, &next) != DP_OK) die("relu");
        dp_sym_release(cur); cur = next;
    }
    in[0] = cur; in[1] = label;
    if (sym_op("softmax_cross_entropy", "loss", 2, in, 0, NULL, NULL, &next) != DP_OK) die("loss");
    dp_sym_release(cur); dp_sym_release(label);
    return next;
}
static void report(const char *work, const char *system, double *us, long steps) {
    qsort(us, BENCH_REPS, sizeof *us, bench_cmp_double);
    printf("bench %s system=%s us_per_step=%.2f min=%.2f max=%.2f reps=%d n=%ld\n", work, system, us[BENCH_REPS / 2], us[0],
           us[BENCH_REPS - 1], BENCH_REPS, steps);
}
static void run_batch(dp_engine *e, int batch, long steps) {
    static const int width[1] = {HIDDEN};
    dp_symbol *sym = mlp_symbol(1, width);
    net a, b;
    dp_ndarray *args[6], *grads[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    dp_executor *ex = NULL;
    dp_exec_memory mem;
    double imp[BENCH_REPS], exe[BENCH_REPS];
    char work[32];
    int r, i;
    net_init(e, &a, batch); net_init(e, &b, batch);
    args[0] = b.x; args[1] = b.p[0]; args[2] = b.p[1]; args[3] = b.p[2]; args[4] = b.p[3]; args[5] = b.y;
    for (i = 0; i < 4; i++) grads[i + 1] = b.grad[i];
    for (i = 0; i < 4; i++) if (dp_nd_attach_grad(a.p[i], DP_REQ_WRITE) != DP_OK) die("attach_grad");
    if (exec_bind(e, sym, CPU, 6, args, grads, NULL, &ex) != DP_OK) die("dp_exec_bind");
    for (r = -1; r < BENCH_REPS; r++) {          /* r = -1: warm-up */
        double t0;
        long s;
        if (dp_wait_all(e, NULL) != DP_OK) die("wait");
        t0 = bench_now_ns();
        for (s = 0; s < steps; s++) imperative_step(e, &a);
        if (dp_wait_all(e, NULL) != DP_OK) die("imperative steps");
        if (r >= 0) imp[r] = (bench_now_ns() - t0) / 1e3 / (double)steps;
        t0 = bench_now_ns();
        for (s = 0; s < steps; s++) {
            if (dp_exec_forward(ex, 1) != DP_OK || dp_exec_backward(ex, 0, NULL) != DP_OK) die("executor step");
            updates(e, &b, 0);
        }
        if (dp_wait_all(e, NULL) != DP_OK) die("executor steps");
        if (r >= 0) exe[r] = (bench_now_ns() - t0) / 1e3 / (double)steps;
    }
    snprintf(work, sizeof work, "SYM-step-%d", batch);
    report(work, "imperative", imp, steps);
    report(work, "executor", exe, steps);
    printf("ratio %s imperative/executor=%.2f\n", work, imp[BENCH_REPS / 2] / exe[BENCH_REPS / 2]);
    if (dp_exec_memory_get(ex, &mem) != DP_OK) die("dp_exec_memory_get");
    printf("mem %s planned_bytes=%zu unplanned_bytes=%zu planned/unplanned=%.2f external_bytes=%zu operations=%d\n", work,
           mem.planned_bytes, mem.unplanned_bytes, mem.unplanned_bytes ? (double)mem.planned_bytes / (double)mem.unplanned_bytes : 0.0,
           mem.external_bytes, mem.num_nodes);
    dp_exec_destroy(ex);
    net_release(&a); net_release(&b);
    dp_sym_release(sym);
}
/* the plan of a deeper network: bind only */
static void deep_memory(dp_engine *e) {
    static const int width[4] = {256, 256, 256, 256};
    dp_symbol *sym = mlp_symbol(4, width);
    const char *names[16];
    dp_ndarray *args[16], *grads[16];
    dp_executor *ex = NULL;
    dp_exec_memory mem;
    dp_shape shapes[16], ds = {2, {256, INPUTS}};
    const char *known[1] = {"data"};
    int n = dp_sym_list_arguments(sym, names, 16), i;
    if (n < 2 || n > 16 || sym_infer(sym, 1, known, &ds, NULL, shapes, NULL, NULL, NULL) != DP_OK) die("deep MLP inference");
    for (i = 0; i < n; i++) {
        int is_param = strcmp(names[i], "data") != 0 && strcmp(names[i], "label") != 0;
        if (dp_nd_zeros(e, &shapes[i], DP_FLOAT32, CPU, &args[i]) != DP_OK) die("deep MLP arrays");
        grads[i] = NULL;
        if (is_param && dp_nd_zeros(e, &shapes[i], DP_FLOAT32, CPU, &grads[i]) != DP_OK) die("deep MLP gradients");
    }
    if (exec_bind(e, sym, CPU, n, args, grads, NULL, &ex) != DP_OK || dp_exec_memory_get(ex, &mem) != DP_OK) die("deep MLP bind");
    printf("mem SYM-mem-deep planned_bytes=%zu unplanned_bytes=%zu planned/unplanned=%.2f external_bytes=%zu operations=%d\n",
           mem.planned_bytes, mem.unplanned_bytes, mem.unplanned_bytes ? (double)mem.planned_bytes / (double)mem.unplanned_bytes : 0.0,
           mem.external_bytes, mem.num_nodes);
    dp_exec_destroy(ex);
    for (i = 0; i < n; i++) { dp_nd_release(args[i]); dp_nd_release(grads[i]); }
    dp_sym_release(sym);
}
int main(int argc, char **argv) {
    long steps = 2000;
    dp_engine_desc desc;
    dp_engine *eng;
    if (argc == 3 && strcmp(argv[1], "-n") == 0) steps = atol(argv[2]);
    if (steps <= 0) { fprintf(stderr, "usage: %s [-n STEPS]\n", argv[0]); return 2; }
    memset(&desc, 0, sizeof desc);
    desc.cpu_worker_nthreads = 2; desc.ignore_env = 1;
    if (dp_engine_create(&desc, &eng) != DP_OK) return 2;
    dp_random_seed(eng, CPU, 7);
    run_batch(eng, 32, steps);
    run_batch(eng, 256, steps / 4 > 0 ? steps / 4 : 1);
    deep_memory(eng);
    if (dp_engine_destroy(eng, NULL) != DP_OK) die("dp_engine_destroy");
    return 0;
}
