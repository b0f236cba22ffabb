/* bench/kernels.c - the optimizer updates' speed against memory bandwidth
   (make bench-kernels; bench/README.md, "GEMM and the kernels"). For
   sgd_update, sgd_mom_update and adam_update on float32 arrays of 100,352
   elements (the MLP's first weight, 784 x 128: the arrays stay in L2/L3)
   and of 8,388,608 (memory), it prints GB/s = bytes the update must move
   (each array read once, each written one written once) / time, for
     loop     the update's CPU loop alone on one core (what the kernel runs)
     old      the per-element loop with a dtype switch, in double (what the
              kernel ran before; also what it runs for an output other than
              the weight)
     op 1t    the operator through the engine (push, run, wait) on one thread
     op 2t    the same with one CPU worker besides the caller (range loop)
   against "bound": memcpy over the same arrays, as GB/s of bytes read and
   written, the best of several; "loop/bound" is the ratio the issue's
   target is set on (>= 0.67: within 1.5x). Each figure is the best time of
   repeated runs over about BENCH_MS ms (default 200); rounds alternate the
   order. Usage: bench_kernels [rounds] [small] (default 3 rounds; "small":
   the 100,352-element arrays only, as bench/train.sh --smoke runs it). */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "bench/common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double g_ms = 200;
typedef struct { int kind, nstate; const char *op; } upd;
static const upd upds[3] = {{DP__OPT_SGD, 0, "sgd_update"}, {DP__OPT_SGD_MOM, 1, "sgd_mom_update"}, {DP__OPT_ADAM, 2, "adam_update"}};

typedef struct {
    int64_t n;
    float *w, *g, *s1, *s2;
    const upd *u;
    dp__upd_job job;
    double p[7];
    dp_engine *eng;
    dp_ndarray *arr[4];
    dp_params params;
    const dp_operator *opr;
} bench_t;

static void run_loop(bench_t *b) { dp__upd_range(0, b->n, &b->job); }
static void run_old(bench_t *b) {
    int64_t i;
    for (i = 0; i < b->n; i++) {
        double a = b->s1 ? dp__load_elem(b->s1, DP_FLOAT32, i) : 0, c = b->s2 ? dp__load_elem(b->s2, DP_FLOAT32, i) : 0;
        double wi = dp__opt_step(b->u->kind, dp__load_elem(b->w, DP_FLOAT32, i), dp__load_elem(b->g, DP_FLOAT32, i), &a, &c, b->p);
        if (b->s1) dp__store_elem(b->s1, DP_FLOAT32, i, a, DP_REQ_WRITE);
        if (b->s2) dp__store_elem(b->s2, DP_FLOAT32, i, c, DP_REQ_WRITE);
        dp__store_elem(b->w, DP_FLOAT32, i, wi, DP_REQ_WRITE);
    }
}
static void run_bound(bench_t *b) {
    size_t bytes = sizeof(float) * (size_t)b->n;
    /* as many bytes read and written as the update: w <- g, then s1 <- g, s2 <- g */
    memcpy(b->w, b->g, bytes);
    if (b->s1) memcpy(b->s1, b->g, bytes);
    if (b->s2) memcpy(b->s2, b->g, bytes);
}
static void run_op(bench_t *b) {
    dp_ndarray *out[1];
    out[0] = b->arr[0];
    if (dp_invoke_parsed(b->eng, b->opr, &b->params, 2 + b->u->nstate, b->arr, 0, 1, out, NULL) != DP_OK) { fprintf(stderr, "invoke\n"); exit(1); }
    if (dp_wait_var(b->eng, dp_nd_var(b->arr[0]), NULL) != DP_OK) { fprintf(stderr, "wait\n"); exit(1); }
}
static double best_s(void (*fn)(bench_t *), bench_t *b) {
    double best = 1e30, start = bench_now_ns(), t0, t;
    int reps = 0;
    fn(b);
    do {
        t0 = bench_now_ns();
        fn(b);
        t = bench_now_ns() - t0;
        if (t < best) best = t;
        reps++;
    } while (bench_now_ns() - start < g_ms * 1e6 || reps < 5);
    return best * 1e-9;
}
static dp_engine *make(int workers) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_PERDEVICE; d.cpu_worker_nthreads = workers; d.ignore_env = 1;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine\n"); exit(1); }
    return e;
}
static void bind(bench_t *b, dp_engine *e) {
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_param ps[6];
    dp_shape s;
    int i;
    memset(&s, 0, sizeof s); s.ndim = 1; s.dims[0] = b->n;
    ps[0] = dp_param_float("lr", 1e-6); ps[1] = dp_param_float("wd", 1e-4); ps[2] = dp_param_float("rescale_grad", 0.5);
    ps[3] = dp_param_float("clip_gradient", 1);
    ps[4] = b->u->kind == DP__OPT_SGD_MOM ? dp_param_float("momentum", 0.9) : dp_param_float(NULL, 0);
    ps[5] = dp_param_float(NULL, 0);
    b->eng = e;
    b->opr = dp_operator_find(b->u->op);
    if (!b->opr || dp_operator_parse_params(e, b->opr, ps, &b->params) != DP_OK) { fprintf(stderr, "params\n"); exit(1); }
    for (i = 0; i < 2 + b->u->nstate; i++) {
        float *src = i == 0 ? b->w : i == 1 ? b->g : i == 2 ? b->s1 : b->s2;
        if (dp_nd_from_host(e, &s, DP_FLOAT32, cpu, src, &b->arr[i]) != DP_OK) { fprintf(stderr, "array\n"); exit(1); }
    }
}
static void unbind(bench_t *b) {
    int i;
    for (i = 0; i < 2 + b->u->nstate; i++) dp_nd_release(b->arr[i]);
}

int main(int argc, char **argv) {
    static const int64_t sizes[2] = {784 * 128, 8 * 1024 * 1024};
    int rounds = argc > 1 ? atoi(argv[1]) : 3, nsizes = argc > 2 && !strcmp(argv[2], "small") ? 1 : 2, r, si, ui;
    const char *ms = getenv("BENCH_MS");
    dp_engine *e1, *e2;
    if (ms) g_ms = atof(ms);
    if (rounds < 1) rounds = 3;
    e1 = make(DP_NO_THREADS);
    e2 = make(1);
    for (r = 0; r < rounds; r++)
        for (si = 0; si < nsizes; si++)
            for (ui = 0; ui < 3; ui++) {
                bench_t b;
                int64_t i, n = sizes[si];
                double bytes, t_loop, t_old, t_bound, t_op1, t_op2;
                memset(&b, 0, sizeof b);
                b.n = n; b.u = &upds[ui];
                b.w = (float *)malloc(sizeof(float) * (size_t)n); b.g = (float *)malloc(sizeof(float) * (size_t)n);
                b.s1 = b.u->nstate > 0 ? (float *)malloc(sizeof(float) * (size_t)n) : NULL;
                b.s2 = b.u->nstate > 1 ? (float *)malloc(sizeof(float) * (size_t)n) : NULL;
                for (i = 0; i < n; i++) {
                    b.w[i] = (float)(i % 97) * 0.01f; b.g[i] = (float)(i % 31) * 0.001f;
                    if (b.s1) b.s1[i] = 0;
                    if (b.s2) b.s2[i] = 0.001f;
                }
                b.p[0] = 1e-6; b.p[1] = 1e-4; b.p[2] = 0.5; b.p[3] = 1; b.p[4] = 0.9; b.p[5] = 0.999; b.p[6] = 1e-8;
                b.job.kind = b.u->kind; b.job.t = DP_FLOAT32; b.job.w = b.w; b.job.g = b.g; b.job.s1 = b.s1; b.job.s2 = b.s2;
                for (i = 0; i < 7; i++) b.job.pd[i] = b.p[i];
                b.job.pd[7] = 1 - b.p[4]; b.job.pd[8] = 1 - b.p[5];
                for (i = 0; i < 9; i++) b.job.pf[i] = (float)b.job.pd[i];
                /* bytes moved: w and every state read and written, g read */
                bytes = (double)sizeof(float) * (double)n * (2.0 * (1 + b.u->nstate) + 1);
                if (r % 2 == 0) { t_bound = best_s(run_bound, &b); t_loop = best_s(run_loop, &b); }
                else { t_loop = best_s(run_loop, &b); t_bound = best_s(run_bound, &b); }
                t_old = best_s(run_old, &b);
                bind(&b, e1); t_op1 = best_s(run_op, &b); unbind(&b);
                bind(&b, e2); t_op2 = best_s(run_op, &b); unbind(&b);
                /* memcpy's figure: it reads and writes its bytes; the bound
                   pass moves 2 (1 + nstate) arrays */
                printf("round %d %-14s n %8lld  loop %6.1f  old %5.1f  op 1t %6.1f  op 2t %6.1f  bound %6.1f GB/s  loop/bound %.2f  op2t/bound %.2f\n",
                       r + 1, b.u->op, (long long)n, bytes / t_loop * 1e-9, bytes / t_old * 1e-9, bytes / t_op1 * 1e-9, bytes / t_op2 * 1e-9,
                       (double)sizeof(float) * (double)n * 2.0 * (1 + b.u->nstate) / t_bound * 1e-9,
                       (bytes / t_loop) / ((double)sizeof(float) * (double)n * 2.0 * (1 + b.u->nstate) / t_bound),
                       (bytes / t_op2) / ((double)sizeof(float) * (double)n * 2.0 * (1 + b.u->nstate) / t_bound));
                fflush(stdout);
                free(b.w); free(b.g); free(b.s1); free(b.s2);
            }
    dp_engine_destroy(e1, NULL);
    dp_engine_destroy(e2, NULL);
    return 0;
}
