/* examples/custom_op.c - registering your own operator, from your own file.

   The example of MXNet's SimpleOp guide: the smooth L1 loss with a scalar sigma,

       f(x)  = 0.5 * (sigma * x)^2      if |x| < 1 / sigma^2
               |x| - 0.5 / sigma^2      otherwise
       f'(x) = sigma^2 * x              if |x| < 1 / sigma^2
               sign(x)                  otherwise

   registered with a forward and a gradient operator, then used like the
   built-in ones. The gradient is checked against finite differences.

   Build: cc -std=c11 -I. examples/custom_op.c -o custom_op -pthread -lm
   The file is a whole program: the one command above builds it, the
   implementation included. The repository's Makefile and CMake define
   DEPENG_EXAMPLE_SEPARATE_IMPL and link the implementation compiled once
   (tests/impl/depeng_impl.c) instead. */
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The math, once, for both kernels. */
static double smooth_l1(double x, double sigma) {
    double s2 = sigma * sigma;
    return fabs(x) < 1 / s2 ? 0.5 * s2 * x * x : fabs(x) - 0.5 / s2;
}
static double smooth_l1_grad(double x, double sigma) {
    double s2 = sigma * sigma;
    return fabs(x) < 1 / s2 ? s2 * x : (x > 0) - (x < 0);
}

/* Kernels run inside engine operations, on float32 arrays here. */
static int forward(const dp_kernel_ctx *k) {
    const float *x = (const float *)dp_nd_data(k->inputs[0]);
    float *y = (float *)dp_nd_data(k->outputs[0]);
    int64_t i, n = dp_shape_size(dp_nd_shape(k->inputs[0]));
    if (dp_nd_dtype(k->inputs[0]) != DP_FLOAT32) { dp_set_error(k->rc, "smooth_l1 takes float32"); return 1; }
    for (i = 0; i < n; i++) y[i] = (float)smooth_l1(x[i], k->scalar);
    return 0;
}
/* inputs: the output gradient and x (as grad_needs declares) */
static int backward(const dp_kernel_ctx *k) {
    const float *og = (const float *)dp_nd_data(k->inputs[0]), *x = (const float *)dp_nd_data(k->inputs[1]);
    float *g = (float *)dp_nd_data(k->outputs[0]);
    int64_t i, n = dp_shape_size(dp_nd_shape(k->inputs[1]));
    for (i = 0; i < n; i++) g[i] = (float)(og[i] * smooth_l1_grad(x[i], k->scalar));
    return 0;
}
/* The gradient's outputs look like the forward's inputs. */
static int infer_grad(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                      dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)p; (void)nin; (void)nout; (void)msg; (void)cap;
    os[0] = is[1]; ot[0] = it[1];
    return 0;
}

static int register_smooth_l1(void) {
    dp_operator op, grad;
    memset(&op, 0, sizeof op);           /* zero: every field at its default */
    memset(&grad, 0, sizeof grad);
    op.name = "smooth_l1";
    op.doc = "smooth L1 loss, element-wise; the scalar is sigma";
    op.num_inputs = 1; op.num_outputs = 1; op.takes_scalar = 1;
    op.forward_cpu = forward;
    op.dtypes = 1u << DP_FLOAT32;        /* what docs and dp_operator_find tell users */
    op.gradient = "_backward_smooth_l1";
    op.grad_needs = DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS;   /* it reads dL/dy and x, not y */
    op.inplace = 1;
    grad.name = "_backward_smooth_l1"; grad.doc = "gradient of smooth_l1";
    grad.num_inputs = 2; grad.num_outputs = 1; grad.takes_scalar = 1;
    grad.infer = infer_grad; grad.forward_cpu = backward;
    return dp_operator_register(&op) == DP_OK && dp_operator_register(&grad) == DP_OK;
}

int main(void) {
    dp_engine *eng;
    dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_shape shape = {1, {6}};
    const double sigma = 1.0;
    float x[6] = {-3, -1, -0.5f, 0.25f, 0.9f, 2}, y[6], g[6], ones[6] = {1, 1, 1, 1, 1, 1};
    dp_ndarray *xa, *ya = NULL, *ga = NULL, *og;
    const dp_operator *found;
    int i, ok = 1;

    if (!register_smooth_l1() || dp_engine_create(NULL, &eng) != DP_OK) return 1;
    found = dp_operator_find("smooth_l1");
    printf("registered %s: %s\n", found->name, found->doc);

    dp_nd_from_host(eng, &shape, DP_FLOAT32, cpu, x, &xa);
    dp_nd_from_host(eng, &shape, DP_FLOAT32, cpu, ones, &og);
    if (dp_invoke(eng, &(dp_invoke_desc){ .op = "smooth_l1", .inputs = {xa}, .scalar = sigma }, &ya) != DP_OK) return 1;
    /* dL/dy = 1: the plain derivative */
    if (dp_invoke(eng, &(dp_invoke_desc){ .op = found->gradient, .inputs = {og, xa}, .scalar = sigma }, &ga) != DP_OK) return 1;
    if (dp_nd_read(ya, y, sizeof y, NULL) != DP_OK || dp_nd_read(ga, g, sizeof g, NULL) != DP_OK) return 1;

    printf("     x   smooth_l1   gradient   finite difference\n");
    for (i = 0; i < 6; i++) {
        double h = 1e-3, fd = (smooth_l1(x[i] + h, sigma) - smooth_l1(x[i] - h, sigma)) / (2 * h);
        printf("%6.2f %11.4f %10.4f %19.4f\n", x[i], y[i], g[i], fd);
        ok &= fabs(fd - g[i]) < 1e-3 && fabs(y[i] - smooth_l1(x[i], sigma)) < 1e-6;
    }
    printf(ok ? "gradient matches finite differences\n" : "GRADIENT MISMATCH\n");
    dp_nd_release(xa); dp_nd_release(ya); dp_nd_release(ga); dp_nd_release(og);
    return dp_engine_destroy(eng, NULL) == DP_OK && ok ? 0 : 1;
}
