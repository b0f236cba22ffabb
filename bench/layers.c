/* bench/layers.c - the layers' and reductions' kernels through the engine
   (make bench-layers; bench/README.md, "GEMM and the kernels"): LeNet's
   convolutions at batch 64 and 256 (forward and gradient), its pooling and
   tanh, a BatchNorm, softmax over a (256, 1000) batch and sums along each
   axis and over the whole array, tanh and sigmoid and their gradients at
   LeNet's sizes, broadcast add, sub, mul and maximum and their gradients
   ("bcast"), each invoked on a per-device engine and
   waited for, with no CPU worker ("1t": the op's thread alone) and with
   one ("2t": the op's thread and a worker on the range loop). Each figure
   is the best of repeated runs over about BENCH_MS ms (default 200), in
   ms; rounds alternate the order of the two engines. Usage: bench_layers
   [rounds] [case-substring]. bench/ab_layers.sh builds it against an older
   revision too and alternates the two. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
#include "bench/common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double g_ms = 200;
static const dp_ctx CPU0 = {DP_DEV_CPU, 0};
typedef struct lcase {
    const char *name, *op;
    int nin, nout;
    int64_t shapes[6][5];
    const char *kw[12];
} lcase;
/* LeNet (MXNet's): conv 5x5x20 on 1x28x28, pool 2, conv 5x5x50, pool 2 */
static const lcase cases[] = {
    {"conv1 fwd b64", "Convolution", 3, 1, {{4, 64, 1, 28, 28}, {4, 20, 1, 5, 5}, {1, 20}}, {"kernel", "(5,5)", "num_filter", "20", NULL}},
    {"conv1 grad b64", "_backward_Convolution", 4, 3, {{4, 64, 20, 24, 24}, {4, 64, 1, 28, 28}, {4, 20, 1, 5, 5}, {1, 20}}, {"kernel", "(5,5)", "num_filter", "20", NULL}},
    {"conv2 fwd b64", "Convolution", 3, 1, {{4, 64, 20, 12, 12}, {4, 50, 20, 5, 5}, {1, 50}}, {"kernel", "(5,5)", "num_filter", "50", NULL}},
    {"conv2 grad b64", "_backward_Convolution", 4, 3, {{4, 64, 50, 8, 8}, {4, 64, 20, 12, 12}, {4, 50, 20, 5, 5}, {1, 50}}, {"kernel", "(5,5)", "num_filter", "50", NULL}},
    {"conv2 fwd b256", "Convolution", 3, 1, {{4, 256, 20, 12, 12}, {4, 50, 20, 5, 5}, {1, 50}}, {"kernel", "(5,5)", "num_filter", "50", NULL}},
    {"conv2 grad b256", "_backward_Convolution", 4, 3, {{4, 256, 50, 8, 8}, {4, 256, 20, 12, 12}, {4, 50, 20, 5, 5}, {1, 50}}, {"kernel", "(5,5)", "num_filter", "50", NULL}},
    {"conv1 fwd b256", "Convolution", 3, 1, {{4, 256, 1, 28, 28}, {4, 20, 1, 5, 5}, {1, 20}}, {"kernel", "(5,5)", "num_filter", "20", NULL}},
    {"conv1 grad b256", "_backward_Convolution", 4, 3, {{4, 256, 20, 24, 24}, {4, 256, 1, 28, 28}, {4, 20, 1, 5, 5}, {1, 20}}, {"kernel", "(5,5)", "num_filter", "20", NULL}},
    {"pool1 fwd b64", "Pooling", 1, 1, {{4, 64, 20, 24, 24}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool1 grad b64", "_backward_Pooling", 2, 1, {{4, 64, 20, 12, 12}, {4, 64, 20, 24, 24}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool2 fwd b64", "Pooling", 1, 1, {{4, 64, 50, 8, 8}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool2 grad b64", "_backward_Pooling", 2, 1, {{4, 64, 50, 4, 4}, {4, 64, 50, 8, 8}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool1 fwd b256", "Pooling", 1, 1, {{4, 256, 20, 24, 24}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool1 grad b256", "_backward_Pooling", 2, 1, {{4, 256, 20, 12, 12}, {4, 256, 20, 24, 24}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool2 fwd b256", "Pooling", 1, 1, {{4, 256, 50, 8, 8}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"pool2 grad b256", "_backward_Pooling", 2, 1, {{4, 256, 50, 4, 4}, {4, 256, 50, 8, 8}}, {"kernel", "(2,2)", "stride", "(2,2)", NULL}},
    {"tanh fwd b64", "Activation", 1, 1, {{4, 64, 20, 24, 24}}, {"act_type", "tanh", NULL}},
    {"relu fwd b64", "Activation", 1, 1, {{4, 64, 20, 24, 24}}, {"act_type", "relu", NULL}},
    /* the element-wise tanh and sigmoid and their gradients at LeNet's
       activation sizes (batch 64: after conv1, conv2 and fc1) */
    {"tanh 64x20x24x24", "tanh", 1, 1, {{4, 64, 20, 24, 24}}, {NULL}},
    {"tanh grad 64x20x24x24", "_backward_tanh", 2, 1, {{4, 64, 20, 24, 24}, {4, 64, 20, 24, 24}}, {NULL}},
    {"tanh 64x50x8x8", "tanh", 1, 1, {{4, 64, 50, 8, 8}}, {NULL}},
    {"tanh grad 64x50x8x8", "_backward_tanh", 2, 1, {{4, 64, 50, 8, 8}, {4, 64, 50, 8, 8}}, {NULL}},
    {"tanh 64x500", "tanh", 1, 1, {{2, 64, 500}}, {NULL}},
    {"tanh grad 64x500", "_backward_tanh", 2, 1, {{2, 64, 500}, {2, 64, 500}}, {NULL}},
    {"sigmoid 64x20x24x24", "sigmoid", 1, 1, {{4, 64, 20, 24, 24}}, {NULL}},
    {"sigmoid grad 64x20x24x24", "_backward_sigmoid", 2, 1, {{4, 64, 20, 24, 24}, {4, 64, 20, 24, 24}}, {NULL}},
    {"sigmoid 64x50x8x8", "sigmoid", 1, 1, {{4, 64, 50, 8, 8}}, {NULL}},
    {"sigmoid grad 64x50x8x8", "_backward_sigmoid", 2, 1, {{4, 64, 50, 8, 8}, {4, 64, 50, 8, 8}}, {NULL}},
    {"sigmoid 64x500", "sigmoid", 1, 1, {{2, 64, 500}}, {NULL}},
    {"sigmoid grad 64x500", "_backward_sigmoid", 2, 1, {{2, 64, 500}, {2, 64, 500}}, {NULL}},
    {"batchnorm fwd", "BatchNorm", 5, 1, {{4, 64, 20, 24, 24}, {1, 20}, {1, 20}, {1, 20}, {1, 20}}, {"is_train", "true", NULL}},
    {"batchnorm grad", "_backward_BatchNorm", 6, 5, {{4, 64, 20, 24, 24}, {4, 64, 20, 24, 24}, {1, 20}, {1, 20}, {1, 20}, {1, 20}}, {"is_train", "true", NULL}},
    {"softmax 256x1000", "softmax", 1, 1, {{2, 256, 1000}}, {NULL}},
    {"sum axis 1 (1024,1024)", "sum", 1, 1, {{2, 1024, 1024}}, {"axis", "(1,)", NULL}},
    {"sum axis 0 (1024,1024)", "sum", 1, 1, {{2, 1024, 1024}}, {"axis", "(0,)", NULL}},
    {"sum all (1024,1024)", "sum", 1, 1, {{2, 1024, 1024}}, {NULL}},
    /* broadcast binary ops and their gradients: a bias along the last axis
       (row broadcast), a per-channel scale (the middle axes), a column */
    {"bcast add 256x1000+1000", "add", 2, 1, {{2, 256, 1000}, {1, 1000}}, {NULL}},
    {"bcast add grad 256x1000", "_backward_add", 3, 2, {{2, 256, 1000}, {2, 256, 1000}, {1, 1000}}, {NULL}},
    {"bcast mul 64x20x24x24*20x1x1", "mul", 2, 1, {{4, 64, 20, 24, 24}, {3, 20, 1, 1}}, {NULL}},
    {"bcast mul grad 64x20x24x24", "_backward_mul", 3, 2, {{4, 64, 20, 24, 24}, {4, 64, 20, 24, 24}, {3, 20, 1, 1}}, {NULL}},
    {"bcast sub 1024x1024-1024x1", "sub", 2, 1, {{2, 1024, 1024}, {2, 1024, 1}}, {NULL}},
    {"bcast sub grad 1024x1024", "_backward_sub", 3, 2, {{2, 1024, 1024}, {2, 1024, 1024}, {2, 1024, 1}}, {NULL}},
    {"bcast max 1024x1024 same", "maximum", 2, 1, {{2, 1024, 1024}, {2, 1024, 1024}}, {NULL}},
    {"bcast mul grad 1024x1024 same", "_backward_mul", 3, 2, {{2, 1024, 1024}, {2, 1024, 1024}, {2, 1024, 1024}}, {NULL}},
};

typedef struct run_t { dp_engine *eng; const lcase *c; dp_ndarray *in[6], *out[6]; const char *keys[6], *vals[6]; int nkw; } run_t;
static void run_op(run_t *r) {
    dp_invoke_desc d;
    int i;
    memset(&d, 0, sizeof d);
    d.op = r->c->op; d.num_inputs = r->c->nin; d.num_outputs = r->c->nout;
    for (i = 0; i < r->c->nin; i++) d.inputs[i] = r->in[i];
    for (i = 0; i < r->c->nout; i++) { d.outputs[i] = r->out[i]; d.req[i] = DP_REQ_WRITE; }
    for (i = 0; i < r->nkw; i++) { d.params[i].name = r->keys[i]; d.params[i].s = r->vals[i]; }
    if (dp_invoke(r->eng, &d, r->out[0] ? NULL : r->out) != DP_OK) { fprintf(stderr, "invoke %s\n", r->c->name); exit(1); }
    if (dp_wait_all(r->eng, NULL) != DP_OK) { fprintf(stderr, "wait\n"); exit(1); }
}
static double best_ms(run_t *r) {
    double best = 1e30, start = bench_now_ns(), t0, t;
    int reps = 0;
    run_op(r);
    do {
        t0 = bench_now_ns();
        run_op(r);
        t = bench_now_ns() - t0;
        if (t < best) best = t;
        reps++;
    } while (bench_now_ns() - start < g_ms * 1e6 || reps < 5);
    return best * 1e-6;
}
static dp_engine *make(int workers) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_PERDEVICE; d.cpu_worker_nthreads = workers; d.ignore_env = 1;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine\n"); exit(1); }
    return e;
}
static double time_on(dp_engine *e, const lcase *c) {
    run_t r;
    int i;
    double ms;
    memset(&r, 0, sizeof r);
    r.eng = e; r.c = c;
    while (c->kw[2 * r.nkw]) { r.keys[r.nkw] = c->kw[2 * r.nkw]; r.vals[r.nkw] = c->kw[2 * r.nkw + 1]; r.nkw++; }
    for (i = 0; i < c->nin; i++) {
        dp_shape s;
        int64_t k, n;
        float *h;
        int j;
        memset(&s, 0, sizeof s);
        s.ndim = (int)c->shapes[i][0];
        for (j = 0; j < s.ndim; j++) s.dims[j] = c->shapes[i][1 + j];
        n = dp_shape_size(&s);
        h = (float *)malloc(sizeof(float) * (size_t)n);
        for (k = 0; k < n; k++) h[k] = (float)((k * 7919 % 1000) * 0.001 + (i == 5 || (i == 4 && c->nout == 1) ? 1 : -0.5));
        if (dp_nd_from_host(e, &s, DP_FLOAT32, CPU0, h, &r.in[i]) != DP_OK) { fprintf(stderr, "array\n"); exit(1); }
        free(h);
    }
    ms = best_ms(&r);
    for (i = 0; i < c->nin; i++) dp_nd_release(r.in[i]);
    for (i = 0; i < c->nout; i++) if (r.out[i]) dp_nd_release(r.out[i]);
    return ms;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3, r, ci;
    const char *only = argc > 2 ? argv[2] : NULL, *ms = getenv("BENCH_MS");
    dp_engine *e1, *e2;
    if (ms) g_ms = atof(ms);
    if (rounds < 1) rounds = 3;
    e1 = make(DP_NO_THREADS);
    e2 = make(1);
    for (r = 0; r < rounds; r++)
        for (ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
            double t1, t2;
            if (only && !strstr(cases[ci].name, only)) continue;
            if (r % 2 == 0) { t1 = time_on(e1, &cases[ci]); t2 = time_on(e2, &cases[ci]); }
            else { t2 = time_on(e2, &cases[ci]); t1 = time_on(e1, &cases[ci]); }
            printf("round %d %-24s 1t %8.3f ms  2t %8.3f ms  1t/2t %.2f\n", r + 1, cases[ci].name, t1, t2, t1 / t2);
            fflush(stdout);
        }
    dp_engine_destroy(e1, NULL);
    dp_engine_destroy(e2, NULL);
    return 0;
}
