/* tests/test_invoke.c - the desc-style invocation (dp_invoke, typed keyword
   parameters, the string form), the registry's names, and the training
   helpers: take, accuracy, adam_update's t and the optimizer objects. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L   /* setenv (test_common.h) */
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "test_common.h"
#include <math.h>
#include <string.h>

static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};

static dp_engine *make_engine(dp_engine_type type) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = 2; d.ignore_env = 1;
    d.logger.func = quiet_logger;
    if (dp_engine_create(&d, &e) != DP_OK) { fprintf(stderr, "engine create failed\n"); exit(1); }
    return e;
}
static dp_shape shp(int ndim, int64_t d0, int64_t d1) {
    dp_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim; s.dims[0] = d0; s.dims[1] = d1;
    return s;
}
static dp_ndarray *arr(dp_engine *e, dp_shape s, dp_dtype dt, const double *v) {
    int64_t i, n = dp_shape_size(&s);
    dp_ndarray *a = NULL;
    CHECK(dp_nd_empty(e, &s, dt, (dp_ctx){0, 0}, &a) == DP_OK);
    for (i = 0; a && i < n; i++) {
        void *p = dp_nd_data(a);
        switch (dt) {
        case DP_FLOAT32: ((float *)p)[i] = (float)v[i]; break;
        case DP_FLOAT64: ((double *)p)[i] = v[i]; break;
        case DP_INT32: ((int32_t *)p)[i] = (int32_t)v[i]; break;
        case DP_INT64: ((int64_t *)p)[i] = (int64_t)v[i]; break;
        default: ((uint8_t *)p)[i] = (uint8_t)v[i]; break;
        }
    }
    return a;
}
/* a's elements as doubles (n of them at most); -1 if the read failed */
static int64_t values(dp_ndarray *a, double *out, int64_t cap) {
    int64_t i, n = dp_shape_size(dp_nd_shape(a));
    if (n > cap || dp_nd_wait_to_read(a, NULL) != DP_OK) return -1;
    for (i = 0; i < n; i++) {
        const void *p = dp_nd_data(a);
        switch (dp_nd_dtype(a)) {
        case DP_FLOAT32: out[i] = ((const float *)p)[i]; break;
        case DP_FLOAT64: out[i] = ((const double *)p)[i]; break;
        case DP_INT32: out[i] = ((const int32_t *)p)[i]; break;
        case DP_INT64: out[i] = (double)((const int64_t *)p)[i]; break;
        default: out[i] = ((const uint8_t *)p)[i]; break;
        }
    }
    return n;
}
static int near_all(dp_ndarray *a, const double *want, int64_t n, double tol) {
    double got[64];
    int64_t i;
    if (values(a, got, 64) != n) return 0;
    for (i = 0; i < n; i++) if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])))) return 0;
    return 1;
}

static void test_desc_invocation(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k]);
        static const double xv[6] = {-1, 2, -3, 4, 5, -6};
        dp_ndarray *x = arr(e, shp(2, 2, 3), DP_FLOAT32, xv), *y = NULL, *s = NULL, *m = NULL, *z = NULL, *oh = NULL;
        /* output made and returned through out; inputs counted */
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "relu", .inputs = {x} }, &y) == DP_OK && y);
        CHECK(y && near_all(y, (const double[]){0, 2, 0, 4, 5, 0}, 6, 0));
        /* a shape and a bool parameter, typed */
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "sum", .inputs = {x},
                  .params = {{"axis", .shape = {1, {1}}}, {"keepdims", .i = 1}} }, &s) == DP_OK);
        CHECK(s && dp_nd_shape(s)->ndim == 2 && dp_nd_shape(s)->dims[0] == 2 && dp_nd_shape(s)->dims[1] == 1);
        CHECK(s && near_all(s, (const double[]){-2, 3}, 2, 0));
        /* the same parameters as strings in .s (what a binding passes) */
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "mean", .inputs = {x},
                  .params = {{"axis", .s = "(0,)"}, {"keepdims", .s = "true"}} }, &m) == DP_OK);
        CHECK(m && dp_nd_shape(m)->ndim == 2 && near_all(m, (const double[]){1.5, 3.5, -4.5}, 3, 0));
        /* the scalar of a _scalar operator */
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "mul_scalar", .inputs = {x}, .scalar = 2 }, &z) == DP_OK);
        CHECK(z && near_all(z, (const double[]){-2, 4, -6, 8, 10, -12}, 6, 0));
        /* an enum by name, ints and floats */
        {
            dp_ndarray *ix = arr(e, shp(1, 3, 0), DP_INT64, (const double[]){2, 0, 1});
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "one_hot", .inputs = {ix},
                      .params = {{"depth", .i = 3}, {"on_value", .f = 5}, {"dtype", .s = "float64"}} }, &oh) == DP_OK);
            CHECK(oh && dp_nd_dtype(oh) == DP_FLOAT64 && near_all(oh, (const double[]){0, 0, 5, 5, 0, 0, 0, 5, 0}, 9, 0));
            dp_nd_release(ix);
        }
        /* a given output, written in place with req add */
        {
            dp_ndarray *acc = arr(e, shp(2, 2, 3), DP_FLOAT32, (const double[]){1, 1, 1, 1, 1, 1}), *none = (dp_ndarray *)1;
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "relu", .inputs = {x}, .outputs = {acc}, .req = {DP_REQ_ADD} }, &none) == DP_OK);
            CHECK(none == NULL);                                  /* given outputs come back NULL in out */
            CHECK(near_all(acc, (const double[]){1, 3, 1, 5, 6, 1}, 6, 0));
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "relu", .inputs = {x}, .outputs = {acc} }, NULL) == DP_OK);
            CHECK(near_all(acc, (const double[]){0, 2, 0, 4, 5, 0}, 6, 0));   /* req 0 writes */
            dp_nd_release(acc);
        }
        dp_nd_release(x); dp_nd_release(y); dp_nd_release(s); dp_nd_release(m); dp_nd_release(z); dp_nd_release(oh);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* The typed form and the string form give the same update, bit for bit,
   and the helpers for C++ build the same dp_param as the literal. */
static void test_desc_matches_strings(void) {
    dp_engine *e = make_engine(DP_ENGINE_NAIVE);
    static const double w0[4] = {1, -2, 0.5, 3}, g0[4] = {0.5, -4, 10, -0.2};
    dp_ndarray *w1 = arr(e, shp(1, 4, 0), DP_FLOAT32, w0), *w2 = arr(e, shp(1, 4, 0), DP_FLOAT32, w0);
    dp_ndarray *g = arr(e, shp(1, 4, 0), DP_FLOAT32, g0);
    const char *keys[3] = {"lr", "wd", "clip_gradient"}, *vals[3] = {"0.1", "0.01", "1"};
    dp_ndarray *in[2];
    dp_invoke_desc d;
    dp_param lit = {"lr", .f = 0.25}, via = dp_param_float("lr", 0.25);
    float a[4], b[4];
    CHECK(lit.name == via.name && lit.i == via.i && lit.f == via.f && lit.s == via.s && lit.shape.ndim == via.shape.ndim);
    in[0] = w2; in[1] = g;
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "sgd_update", .inputs = {w1, g}, .outputs = {w1},
              .params = {{"lr", .f = 0.1}, {"wd", .f = 0.01}, {"clip_gradient", .i = 1}} }, NULL) == DP_OK);
    CHECK(invoke_str(e, "sgd_update", 2, in, 3, keys, vals, 0, 1, &w2, NULL) == DP_OK);
    CHECK(dp_nd_read(w1, a, sizeof a, NULL) == DP_OK && dp_nd_read(w2, b, sizeof b, NULL) == DP_OK);
    CHECK(memcmp(a, b, sizeof a) == 0 && a[0] != 1.0f);
    /* the assignment form C++ uses */
    memset(&d, 0, sizeof d);
    d.op = "sgd_update"; d.inputs[0] = w1; d.inputs[1] = g; d.outputs[0] = w1;
    d.params[0] = dp_param_float("lr", 0.1); d.params[1] = dp_param_float("wd", 0.01); d.params[2] = dp_param_int("clip_gradient", 1);
    CHECK(dp_invoke(e, &d, NULL) == DP_OK);
    CHECK(invoke_str(e, "sgd_update", 2, in, 3, keys, vals, 0, 1, &w2, NULL) == DP_OK);
    CHECK(dp_nd_read(w1, a, sizeof a, NULL) == DP_OK && dp_nd_read(w2, b, sizeof b, NULL) == DP_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    dp_nd_release(w1); dp_nd_release(w2); dp_nd_release(g);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* Every wrong desc is refused before anything is pushed, out[] all NULL. */
static void test_desc_errors(void) {
    dp_engine *e = make_engine(DP_ENGINE_NAIVE);
    static const double xv[4] = {1, 2, 3, 4};
    dp_ndarray *x = arr(e, shp(1, 4, 0), DP_FLOAT32, xv), *ix = arr(e, shp(1, 2, 0), DP_INT64, (const double[]){0, 1});
    dp_ndarray *y = (dp_ndarray *)1;
    dp_shape two = shp(1, 2, 0);
#define BAD(...) do { y = (dp_ndarray *)1; CHECK(dp_invoke(e, &(dp_invoke_desc){ __VA_ARGS__ }, &y) == DP_ERROR_INVALID_ARGS); CHECK(y == (dp_ndarray *)1); } while (0)
    BAD(.op = "no_such_operator", .inputs = {x});
    BAD(.op = NULL, .inputs = {x});
    BAD(.op = "sum", .inputs = {x}, .params = {{"axes", .i = 0}});                        /* unknown parameter */
    BAD(.op = "sum", .inputs = {x}, .params = {{"keepdims", .i = 1}, {"keepdims", .i = 0}});  /* twice */
    BAD(.op = "sum", .inputs = {x}, .params = {{"axis", .f = 0.5}});                      /* a float for a shape */
    BAD(.op = "sum", .inputs = {x}, .params = {{"keepdims", .i = 2}});                    /* a bool is 0 or 1 */
    BAD(.op = "sum", .inputs = {x}, .params = {{"keepdims", .s = "maybe"}});
    BAD(.op = "softmax", .inputs = {x}, .params = {{"axis", .f = 0.5}});                  /* a non-integral int */
    BAD(.op = "softmax", .inputs = {x}, .params = {{"axis", .i = 9}});                    /* outside [-8, 7] */
    BAD(.op = "softmax", .inputs = {x}, .params = {{"axis", .i = 1, .s = "1"}});          /* string and value */
    BAD(.op = "one_hot", .inputs = {ix}, .params = {{"depth", .i = 3}, {"dtype", .i = 1}});   /* enum by index */
    BAD(.op = "reshape", .inputs = {x}, .params = {{"shape", .i = 4}});                   /* an int for a shape */
    BAD(.op = "sgd_update", .inputs = {x, x}, .outputs = {x});                            /* lr is required */
    BAD(.op = "relu", .inputs = {x}, .scalar = 2);                                        /* takes no scalar */
    BAD(.op = "add", .inputs = {x});                                                      /* one input short */
    BAD(.op = "add", .inputs = {x, x}, .num_inputs = 3);                                  /* a NULL input */
    BAD(.op = "reshape", .inputs = {x}, .params = {{"shape", .shape = two}});             /* does not fit */
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "relu", .inputs = {x} }, NULL) == DP_ERROR_INVALID_ARGS);  /* nowhere to put it */
    CHECK(dp_invoke(e, NULL, &y) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_invoke(NULL, &(dp_invoke_desc){ .op = "relu", .inputs = {x} }, &y) == DP_ERROR_INVALID_ARGS);
#undef BAD
    CHECK(near_all(x, xv, 4, 0));
    dp_nd_release(x); dp_nd_release(ix);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* The registry answers to its own names; operators state their dtypes. */
static void test_registry_names(void) {
    const dp_operator *ops[256];
    int n = dp_operator_list(ops, 256), i, found = 0;
    CHECK(n > 0 && n <= 256);
    for (i = 0; i < n; i++) found += !strcmp(ops[i]->name, "take") || !strcmp(ops[i]->name, "accuracy");
    CHECK(found == 2);
    CHECK(dp_operator_find("take") && dp_operator_find("take")->gradient && !strcmp(dp_operator_find("take")->gradient, "_backward_take"));
    CHECK(dp_operator_find("dot")->dtypes == (1u << DP_FLOAT32 | 1u << DP_FLOAT64));
    CHECK(dp_operator_find("relu")->dtypes == 0);
    CHECK(dp_operator_find("no_such_operator") == NULL);
    CHECK(dp_operator_set_kernel("no_such_operator", DP_DEV_CPU, NULL) == DP_ERROR_INVALID_ARGS);
}

static void test_take(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k]);
        static const double xv[8] = {0, 1, 10, 11, 20, 21, 30, 31};
        dp_ndarray *x = arr(e, shp(2, 4, 2), DP_FLOAT32, xv), *y = NULL;
        dp_ndarray *ix = arr(e, shp(1, 3, 0), DP_INT64, (const double[]){3, 0, 3});
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "take", .inputs = {x, ix} }, &y) == DP_OK);
        CHECK(y && dp_nd_shape(y)->ndim == 2 && dp_nd_shape(y)->dims[0] == 3 && dp_nd_shape(y)->dims[1] == 2);
        CHECK(y && near_all(y, (const double[]){30, 31, 0, 1, 30, 31}, 6, 0));
        dp_nd_release(y); y = NULL;
        {   /* int64 data moved bit for bit, indices of another shape and dtype */
            int64_t big[3] = {(int64_t)9007199254740993LL, INT64_MAX, -5}, got[4];
            dp_shape s3 = shp(1, 3, 0);
            dp_ndarray *b = NULL, *i2 = arr(e, shp(2, 2, 2), DP_INT32, (const double[]){1, 0, 2, 0});
            CHECK(dp_nd_from_host(e, &s3, DP_INT64, (dp_ctx){0, 0}, big, &b) == DP_OK);
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "take", .inputs = {b, i2} }, &y) == DP_OK);
            CHECK(y && dp_nd_shape(y)->ndim == 2 && dp_nd_read(y, got, sizeof got, NULL) == DP_OK);
            CHECK(got[0] == INT64_MAX && got[1] == (int64_t)9007199254740993LL && got[2] == -5 && got[3] == got[1]);
            dp_nd_release(b); dp_nd_release(i2); dp_nd_release(y); y = NULL;
        }
        {   /* out of range: raise fails the kernel, clip and wrap map it */
            dp_ndarray *bad = arr(e, shp(1, 2, 0), DP_INT64, (const double[]){-1, 5});
            dp_failure f;
            memset(&f, 0, sizeof f);
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "take", .inputs = {x, bad} }, &y) == DP_OK);
            CHECK(y && dp_nd_wait_to_read(y, &f) == DP_ERROR_OP_FAILED && strstr(f.message, "index -1 outside [0, 4)"));
            dp_nd_release(y); y = NULL;
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "take", .inputs = {x, bad}, .params = {{"mode", .s = "clip"}} }, &y) == DP_OK);
            CHECK(y && near_all(y, (const double[]){0, 1, 30, 31}, 4, 0));
            dp_nd_release(y); y = NULL;
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "take", .inputs = {x, bad}, .params = {{"mode", .s = "wrap"}} }, &y) == DP_OK);
            CHECK(y && near_all(y, (const double[]){30, 31, 10, 11}, 4, 0));
            dp_nd_release(y); y = NULL;
            dp_nd_release(bad);
        }
        {   /* float indices are refused, so is data without an axis */
            dp_ndarray *fi = arr(e, shp(1, 1, 0), DP_FLOAT32, (const double[]){0}), *sc = arr(e, shp(0, 0, 0), DP_FLOAT32, (const double[]){1});
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "take", .inputs = {x, fi} }, &y) == DP_ERROR_INVALID_ARGS && !y);
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "take", .inputs = {sc, ix} }, &y) == DP_ERROR_INVALID_ARGS && !y);
            dp_nd_release(fi); dp_nd_release(sc);
        }
        {   /* gradient: rows taken twice add up, untaken rows get 0 */
            dp_ndarray *loss = NULL, *sq = NULL;
            CHECK(dp_nd_attach_grad(x, DP_REQ_WRITE) == DP_OK);
            CHECK(dp_autograd_begin() == DP_OK);
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "take", .inputs = {x, ix} }, &y) == DP_OK);
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "square", .inputs = {y} }, &sq) == DP_OK);
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "sum", .inputs = {sq} }, &loss) == DP_OK);
            CHECK(dp_autograd_end() == DP_OK);
            CHECK(loss && dp_autograd_backward(loss, NULL, 0) == DP_OK);
            /* d/dx sum(x[ix]^2): 2 x per use; row 3 used twice, row 0 once */
            CHECK(near_all(dp_nd_grad(x), (const double[]){0, 2, 0, 0, 0, 0, 120, 124}, 8, 1e-6));
            dp_nd_release(loss); dp_nd_release(sq); dp_nd_release(y); y = NULL;
        }
        dp_nd_release(x); dp_nd_release(ix);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

static void test_accuracy(void) {
    dp_engine *e = make_engine(DP_ENGINE_POOLED);
    static const double sv[8] = {0.1, 0.9, 0.8, 0.2, 0.3, 0.7, 0.6, 0.4};
    dp_ndarray *scores = arr(e, shp(2, 4, 2), DP_FLOAT32, sv), *pred = NULL, *acc = NULL;
    dp_ndarray *labels = arr(e, shp(1, 4, 0), DP_FLOAT32, (const double[]){1, 0, 0, 0});
    dp_ndarray *wrong = arr(e, shp(1, 3, 0), DP_FLOAT32, (const double[]){1, 0, 0});
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "argmax", .inputs = {scores}, .params = {{"axis", .shape = {1, {1}}}} }, &pred) == DP_OK);
    CHECK(pred && dp_nd_dtype(pred) == DP_INT64);
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "accuracy", .inputs = {pred, labels} }, &acc) == DP_OK);
    CHECK(acc && dp_nd_dtype(acc) == DP_FLOAT32 && dp_nd_shape(acc)->ndim == 0 && near_all(acc, (const double[]){0.75}, 1, 0));
    dp_nd_release(acc); acc = NULL;
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "accuracy", .inputs = {pred, wrong} }, &acc) == DP_ERROR_INVALID_ARGS && !acc);
    dp_nd_release(scores); dp_nd_release(pred); dp_nd_release(labels); dp_nd_release(wrong);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* Adam by hand (Kingma and Ba's algorithm 1) for `steps` steps from w0. */
static void adam_reference(const double *w0, const double *const *gs, int steps, int n, double lr, double *w) {
    double m[8] = {0}, v[8] = {0};
    int t, i;
    for (i = 0; i < n; i++) w[i] = w0[i];
    for (t = 1; t <= steps; t++)
        for (i = 0; i < n; i++) {
            double g = gs[t - 1][i], mh, vh;
            m[i] = 0.9 * m[i] + 0.1 * g;
            v[i] = 0.999 * v[i] + 0.001 * g * g;
            mh = m[i] / (1 - pow(0.9, t)); vh = v[i] / (1 - pow(0.999, t));
            w[i] -= lr * mh / (sqrt(vh) + 1e-8 / sqrt(1 - pow(0.999, t)));   /* epsilon as the one-step-size form has it */
        }
}

static void test_adam_bias_correction(void) {
    dp_engine *e = make_engine(DP_ENGINE_NAIVE);
    static const double w0[4] = {1, -2, 0.5, 3}, g0[4] = {0.5, -4, 10, -0.2}, g1[4] = {-0.3, 1, -6, 0.4};
    const double *gs[2] = {g0, g1};
    double want[4];
    dp_ndarray *w = arr(e, shp(1, 4, 0), DP_FLOAT64, w0), *m = arr(e, shp(1, 4, 0), DP_FLOAT64, (const double[]){0, 0, 0, 0});
    dp_ndarray *v = arr(e, shp(1, 4, 0), DP_FLOAT64, (const double[]){0, 0, 0, 0});
    dp_ndarray *ga = arr(e, shp(1, 4, 0), DP_FLOAT64, g0), *gb = arr(e, shp(1, 4, 0), DP_FLOAT64, g1);
    int t;
    for (t = 1; t <= 2; t++)
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "adam_update", .inputs = {w, t == 1 ? ga : gb, m, v}, .outputs = {w},
                  .params = {{"lr", .f = 0.01}, {"t", .i = t}} }, NULL) == DP_OK);
    adam_reference(w0, gs, 2, 4, 0.01, want);
    CHECK(near_all(w, want, 4, 1e-12));
    {   /* t = 0 (the default) leaves lr alone: the first step moves by lr * m / sqrt(v) */
        dp_ndarray *w2 = arr(e, shp(1, 4, 0), DP_FLOAT64, w0), *m2 = arr(e, shp(1, 4, 0), DP_FLOAT64, (const double[]){0, 0, 0, 0});
        dp_ndarray *v2 = arr(e, shp(1, 4, 0), DP_FLOAT64, (const double[]){0, 0, 0, 0});
        double un[4];
        int i;
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "adam_update", .inputs = {w2, ga, m2, v2}, .outputs = {w2},
                  .params = {{"lr", .f = 0.01}} }, NULL) == DP_OK);
        for (i = 0; i < 4; i++) un[i] = w0[i] - 0.01 * (0.1 * g0[i]) / (sqrt(0.001 * g0[i] * g0[i]) + 1e-8);
        CHECK(near_all(w2, un, 4, 1e-12));
        dp_nd_release(w2); dp_nd_release(m2); dp_nd_release(v2);
    }
    dp_nd_release(w); dp_nd_release(m); dp_nd_release(v); dp_nd_release(ga); dp_nd_release(gb);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* dp_optimizer: the gradient attached, the states made, the steps counted
   (Adam's bias correction follows them), parameters changeable. */
static void test_optimizer(void) {
    int k;
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_engine(kinds[k]);
        static const double w0[4] = {1, -2, 0.5, 3}, c0[4] = {0.5, -1, 2, 0};
        dp_ndarray *w = arr(e, shp(1, 4, 0), DP_FLOAT64, w0), *c = arr(e, shp(1, 4, 0), DP_FLOAT64, c0);
        dp_optimizer *opt = NULL, *o2 = NULL;
        double g[2][4], want[4], cur[4];
        const double *gs[2] = {g[0], g[1]};
        int t, i;
        CHECK(dp_optimizer_create(w, &(dp_optimizer_desc){ .update = "adam_update", .params = {{"lr", .f = 0.05}} }, &opt) == DP_OK);
        CHECK(opt && dp_nd_grad(w) && dp_optimizer_state(opt, 0) && dp_optimizer_state(opt, 1) && !dp_optimizer_state(opt, 2));
        CHECK(dp_optimizer_steps(opt) == 0);
        for (t = 0; t < 2; t++) {         /* loss = sum((w * c)^2): gradient 2 c^2 w */
            dp_ndarray *p = NULL, *sq = NULL, *loss = NULL;
            CHECK(values(w, cur, 4) == 4);
            for (i = 0; i < 4; i++) g[t][i] = 2 * c0[i] * c0[i] * cur[i];
            CHECK(dp_autograd_begin() == DP_OK);
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "mul", .inputs = {w, c} }, &p) == DP_OK);
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "square", .inputs = {p} }, &sq) == DP_OK);
            CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "sum", .inputs = {sq} }, &loss) == DP_OK);
            CHECK(dp_autograd_end() == DP_OK);
            CHECK(dp_autograd_backward(loss, NULL, 0) == DP_OK);
            CHECK(dp_optimizer_step(opt) == DP_OK);
            dp_nd_release(p); dp_nd_release(sq); dp_nd_release(loss);
        }
        CHECK(dp_optimizer_steps(opt) == 2);
        adam_reference(w0, gs, 2, 4, 0.05, want);
        CHECK(near_all(w, want, 4, 1e-12));
        /* a schedule: lr 0 from now on leaves w as it is */
        CHECK(dp_optimizer_set_param(opt, &(dp_param){"lr", .f = 0}) == DP_OK);
        CHECK(dp_optimizer_set_param(opt, &(dp_param){"t", .i = 9}) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_optimizer_set_param(opt, &(dp_param){"beta1", .f = 2}) == DP_ERROR_INVALID_ARGS);   /* outside [0, 1] */
        CHECK(dp_optimizer_step(opt) == DP_OK && near_all(w, want, 4, 1e-12) && dp_optimizer_steps(opt) == 3);
        dp_optimizer_destroy(opt);
        /* momentum SGD has one state; plain SGD none */
        CHECK(dp_optimizer_create(w, &(dp_optimizer_desc){ .update = "sgd_mom_update", .params = {{"lr", .f = 0.1}, {"momentum", .f = 0.9}} }, &o2) == DP_OK);
        CHECK(o2 && dp_optimizer_state(o2, 0) && !dp_optimizer_state(o2, 1));
        dp_optimizer_destroy(o2); o2 = NULL;
        CHECK(dp_optimizer_create(w, &(dp_optimizer_desc){ .params = {{"lr", .f = 0.1}} }, &o2) == DP_OK);
        CHECK(o2 && !dp_optimizer_state(o2, 0));
        dp_optimizer_destroy(o2); o2 = NULL;
        /* refused: no lr, t given, not an update, an integer weight, NULLs */
        CHECK(dp_optimizer_create(w, &(dp_optimizer_desc){ .update = "adam_update" }, &o2) == DP_ERROR_INVALID_ARGS && !o2);
        CHECK(dp_optimizer_create(w, &(dp_optimizer_desc){ .update = "adam_update", .params = {{"lr", .f = 1}, {"t", .i = 1}} }, &o2) == DP_ERROR_INVALID_ARGS && !o2);
        CHECK(dp_optimizer_create(w, &(dp_optimizer_desc){ .update = "relu", .params = {{"lr", .f = 1}} }, &o2) == DP_ERROR_INVALID_ARGS && !o2);
        {
            dp_ndarray *iw = arr(e, shp(1, 2, 0), DP_INT32, (const double[]){1, 2});
            CHECK(dp_optimizer_create(iw, &(dp_optimizer_desc){ .params = {{"lr", .f = 1}} }, &o2) == DP_ERROR_INVALID_ARGS && !o2);
            dp_nd_release(iw);
        }
        CHECK(dp_optimizer_create(NULL, &(dp_optimizer_desc){ .params = {{"lr", .f = 1}} }, &o2) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_optimizer_create(w, NULL, &o2) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_optimizer_step(NULL) == DP_ERROR_INVALID_ARGS);
        dp_optimizer_destroy(NULL);
        dp_nd_release(w); dp_nd_release(c);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* The standardisation recipe the header gives, against the numbers. */
static void test_standardise_recipe(void) {
    dp_engine *e = make_engine(DP_ENGINE_NAIVE);
    static const double xv[6] = {1, 10, 3, 10, 5, 10};    /* column 1 constant */
    dp_ndarray *x = arr(e, shp(2, 3, 2), DP_FLOAT64, xv), *mean = NULL, *d = NULL, *sq = NULL, *var = NULL, *sd = NULL, *sde = NULL, *z = NULL;
    double s = sqrt(8.0 / 3.0);
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "mean", .inputs = {x}, .params = {{"axis", .shape = {1, {0}}}, {"keepdims", .i = 1}} }, &mean) == DP_OK);
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "sub", .inputs = {x, mean} }, &d) == DP_OK);
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "square", .inputs = {d} }, &sq) == DP_OK);
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "mean", .inputs = {sq}, .params = {{"axis", .shape = {1, {0}}}, {"keepdims", .i = 1}} }, &var) == DP_OK);
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "sqrt", .inputs = {var} }, &sd) == DP_OK);
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "add_scalar", .inputs = {sd}, .scalar = 1e-8 }, &sde) == DP_OK);
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "div", .inputs = {d, sde} }, &z) == DP_OK);
    CHECK(z && near_all(z, (const double[]){-2 / s, 0, 0, 0, 2 / s, 0}, 6, 1e-7));
    dp_nd_release(x); dp_nd_release(mean); dp_nd_release(d); dp_nd_release(sq); dp_nd_release(var);
    dp_nd_release(sd); dp_nd_release(sde); dp_nd_release(z);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* The EXTENDING calls refuse what would reach past an array's storage or
   lose a write, and dp_sym_node types its parameters by the operator an
   MXNet name stands for. */
static void test_extending(void) {
    static const char *const texts[2] = {"first", "second"}, *const other[1] = {"another"};
    const double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    dp_engine *e = make_engine(DP_ENGINE_PERDEVICE);
    dp_ndarray *a = arr(e, shp(1, 8, 0), DP_FLOAT32, v), *b = arr(e, shp(1, 8, 0), DP_FLOAT32, v), *view = NULL, *more = NULL;
    dp_shape four = shp(1, 4, 0), nine = shp(1, 9, 0), all_axes = shp(0, 0, 0);
    dp_symbol *x = NULL, *s = NULL;
    dp_shape in_shape = shp(2, 2, 3), out_shape;
    const char *name = "x";
    int32_t before;
    /* views and borrowed bytes stay inside the 32 bytes, and aligned */
    CHECK(dp_nd_view(a, &four, DP_FLOAT32, 16, &view) == DP_OK && view);
    dp_nd_release(view); view = NULL;
    CHECK(dp_nd_view(a, &four, DP_FLOAT32, 20, &view) == DP_ERROR_INVALID_ARGS && !view);    /* past the end */
    CHECK(dp_nd_view(a, &nine, DP_FLOAT32, 0, &view) == DP_ERROR_INVALID_ARGS && !view);
    CHECK(dp_nd_view(a, &four, DP_FLOAT32, 2, &view) == DP_ERROR_INVALID_ARGS && !view);     /* not aligned */
    CHECK(dp_nd_borrow(a, 8, 24, &more) == DP_OK && more && dp_nd_bytes(more) == 24);
    dp_nd_release(more); more = NULL;
    CHECK(dp_nd_borrow(a, 0, 4096, &more) == DP_ERROR_INVALID_ARGS && !more);
    CHECK(dp_nd_borrow(a, 40, 0, &more) == DP_ERROR_INVALID_ARGS && !more);
    /* a copy counts as a write; overlapping views are refused */
    before = dp_nd_version(b);
    CHECK(dp_nd_copy_into(a, b, NULL) == DP_OK && dp_nd_version(b) == before + 1);
    CHECK(dp_nd_view(a, &four, DP_FLOAT32, 4, &view) == DP_OK && dp_nd_view(a, &four, DP_FLOAT32, 8, &more) == DP_OK);
    CHECK(dp_nd_copy_into(view, more, NULL) == DP_ERROR_INVALID_ARGS);
    dp_nd_release(view); dp_nd_release(more);
    /* extension log items: a range outside them, or a text taken, is refused */
    CHECK(dp_log_add_items(DP_LOGITEM_ND_END, 2, texts) == DP_OK && dp_log_add_items(DP_LOGITEM_ND_END, 2, texts) == DP_OK);
    CHECK(dp_log_add_items(DP_LOGITEM_ND_END, 1, other) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_log_add_items((int)DP_LOGITEM_EXTENSION, 1, other) == DP_ERROR_INVALID_ARGS);   /* the array layer's */
    CHECK(dp_log_add_items(DP_LOGITEM_LAST, 2, texts) == DP_ERROR_INVALID_ARGS && dp_log_add_items(3, 1, texts) == DP_ERROR_INVALID_ARGS);
    /* MXNet's sum_axis with axis () typed as an empty shape: all axes */
    CHECK(dp_sym_var("x", &x) == DP_OK);
    CHECK(dp_sym_node(&(dp_sym_node_desc){ .op = "sum_axis", .inputs = {x}, .params = {{"axis", .shape = all_axes}} }, &s) == DP_OK);
    CHECK(s && dp_sym_infer(s, &(dp_sym_infer_desc){ .num_known = 1, .names = &name, .shapes = &in_shape, .out_shapes = &out_shape }) == DP_OK);
    CHECK(out_shape.ndim == 0);
    dp_sym_release(s); dp_sym_release(x);
    dp_nd_release(a); dp_nd_release(b);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* max, min and argmax have no identity: an empty axis reduced into a
   non-empty result is refused (NumPy raises); sum keeps its identity, and
   an empty result reduces nothing. */
static void test_empty_axis_reductions(void) {
    dp_engine *e = make_engine(DP_ENGINE_NAIVE);
    dp_ndarray *rows_empty = NULL, *no_rows = NULL, *r = NULL;
    dp_shape s30 = shp(2, 3, 0), s03 = shp(2, 0, 3);
    double got[3];
    const char *ops[3] = {"max", "min", "argmax"};
    int i;
    CHECK(dp_nd_zeros(e, &s30, DP_FLOAT32, (dp_ctx){0, 0}, &rows_empty) == DP_OK && dp_nd_zeros(e, &s03, DP_INT32, (dp_ctx){0, 0}, &no_rows) == DP_OK);
    for (i = 0; i < 3; i++) {
        r = NULL;
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = ops[i], .inputs = {rows_empty}, .params = {{"axis", .shape = {1, {1}}}} }, &r) == DP_ERROR_INVALID_ARGS && !r);
        CHECK(strstr(dp_last_error(), "empty") != NULL);
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = ops[i], .inputs = {no_rows} }, &r) == DP_ERROR_INVALID_ARGS && !r);   /* all axes */
        CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = ops[i], .inputs = {no_rows}, .params = {{"axis", .shape = {1, {1}}}} }, &r) == DP_OK);
        CHECK(r && dp_shape_size(dp_nd_shape(r)) == 0);                                   /* nothing to reduce */
        dp_nd_release(r);
    }
    r = NULL;
    CHECK(dp_invoke(e, &(dp_invoke_desc){ .op = "sum", .inputs = {rows_empty}, .params = {{"axis", .shape = {1, {1}}}} }, &r) == DP_OK);
    CHECK(values(r, got, 3) == 3 && got[0] == 0 && got[2] == 0);                        /* sum's identity */
    dp_nd_release(r); dp_nd_release(rows_empty); dp_nd_release(no_rows);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* Each invocation error is logged under the item that says what kind it
   is, with a message that names what was wrong: a NULL list is NULL (not
   "2 inputs given, it takes 2"), a parameter is a parameter (not "invalid
   array argument"), overlapping writes are an overlap. */
static int nop_kernel(const dp_kernel_ctx *k) { (void)k; return 0; }
static void test_invoke_messages(void) {
    dp_engine *e = make_engine(DP_ENGINE_NAIVE);
    static const double xv[4] = {1, 2, 3, 4};
    dp_ndarray *x = arr(e, shp(1, 4, 0), DP_FLOAT32, xv), *y = NULL, *outs[2] = {NULL, NULL};
    const dp_operator *add = dp_operator_find("add"), *sum = dp_operator_find("sum");
    dp_params none, p;
    int n = 0;
#define MSG(call, item, text) do { dp_clear_last_error(); n++; CHECK((call) == DP_ERROR_INVALID_ARGS); \
        if (dp_last_error_item() != (item) || !strstr(dp_last_error(), text)) { \
            fprintf(stderr, "  case %d: item %d, '%s'\n", n, (int)dp_last_error_item(), dp_last_error()); CHECK(0); } } while (0)
    CHECK(add && sum && dp_operator_parse_params(e, add, NULL, &none) == DP_OK);
    MSG(dp_invoke_parsed(e, add, &none, 2, NULL, 0, 1, outs, NULL), DP_LOGITEM_NULL_ARGUMENT, "the input list is NULL (2 inputs given)");
    MSG(dp_invoke_parsed(e, add, &none, 2, (dp_ndarray *[]){x, x}, 0, 1, NULL, NULL), DP_LOGITEM_NULL_ARGUMENT, "the output list is NULL");
    MSG(dp_invoke_parsed(e, add, &none, 2, (dp_ndarray *[]){x, NULL}, 0, 1, outs, NULL), DP_LOGITEM_ND_ARGS, "input 1 is NULL");
    MSG(dp_invoke_parsed(e, add, &none, 65, (dp_ndarray *[]){x, x}, 0, 1, outs, NULL), DP_LOGITEM_ND_ARGS, "65 inputs given, 0..64");
    CHECK(dp_operator_parse_params(e, sum, NULL, &p) == DP_OK);
    MSG(dp_invoke_parsed(e, add, &p, 2, (dp_ndarray *[]){x, x}, 0, 1, outs, NULL), DP_LOGITEM_ND_PARAM, "operator 'add' has 0 parameters");
    MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "sum", .inputs = {x}, .params = {{"axes", .i = 0}} }, &y), DP_LOGITEM_ND_PARAM,
        "unknown parameter 'axes'");
    MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "sum", .inputs = {x}, .params = {{"keepdims", .s = "maybe"}} }, &y), DP_LOGITEM_ND_PARAM,
        "parameter 'keepdims' = 'maybe' is not a valid bool");
    MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "sgd_update", .inputs = {x, x}, .outputs = {x} }, &y), DP_LOGITEM_ND_PARAM, "'lr' (float) is required");
    MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "relu", .inputs = {x}, .scalar = 2 }, &y), DP_LOGITEM_ND_PARAM, "takes no scalar");
    MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "add", .inputs = {x} }, &y), DP_LOGITEM_ND_ARGS, "1 inputs given, it takes 2");
    MSG(dp_invoke(e, NULL, &y), DP_LOGITEM_NULL_ARGUMENT, "dp_invoke: NULL desc");
    MSG(dp_invoke(NULL, &(dp_invoke_desc){ .op = "relu", .inputs = {x} }, &y), DP_LOGITEM_NULL_ARGUMENT, "dp_invoke: NULL engine");
    outs[0] = x; outs[1] = x;
    MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "_backward_add", .inputs = {x, x, x}, .outputs = {x, x} }, NULL), DP_LOGITEM_ND_OVERLAP,
        "outputs 0 and 1 share bytes");
    MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "sum", .inputs = {x}, .params = {{"axis", .s = "(0"}} }, &y), DP_LOGITEM_ND_PARAM,
        "invalid operator parameter");
    {   /* num_args beyond 64 for an operator registered without a range: a parameter error, not "-1 outputs" */
        static const dp_param_def defs[] = {{"num_args", DP_PARAM_INT, "1", 0, 0, NULL, "how many"}};
        dp_operator op;
        memset(&op, 0, sizeof op);
        op.name = "test_messages_variadic"; op.num_inputs = -1; op.num_outputs = -1; op.params = defs; op.num_params = 1;
        op.forward_cpu = nop_kernel;
        CHECK(dp_operator_register(&op) == DP_OK);
        MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "test_messages_variadic", .inputs = {x}, .params = {{"num_args", .i = 100}} }, &y),
            DP_LOGITEM_ND_PARAM, "num_args must be in 0..64");
        MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "test_messages_variadic", .inputs = {x}, .params = {{"num_args", .i = 100}}, .num_outputs = 1,
            .outputs = {x} }, &y), DP_LOGITEM_ND_PARAM, "num_args must be in 0..64");
    }
    {   /* an output of another engine is that, not a shape to fix ("float32 (4,), it must be float32 (4,)") */
        dp_engine *e2 = make_engine(DP_ENGINE_NAIVE);
        dp_ndarray *z = arr(e2, shp(1, 4, 0), DP_FLOAT32, xv), *w = arr(e, shp(1, 3, 0), DP_FLOAT32, xv);
        MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "relu", .inputs = {x}, .outputs = {z} }, NULL), DP_LOGITEM_ND_ARGS,
            "output 0 is an array of another engine");
        MSG(dp_invoke(e, &(dp_invoke_desc){ .op = "relu", .inputs = {x}, .outputs = {w} }, NULL), DP_LOGITEM_ND_ARGS,
            "output 0 is float32 (3,), it must be float32 (4,)");
        dp_nd_release(z); dp_nd_release(w);
        CHECK(dp_engine_destroy(e2, NULL) == DP_OK);
    }
    CHECK(y == NULL);
#undef MSG
    dp_nd_release(x);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

int main(void) {
    static const test_case tests[] = {
        {"desc_invocation", test_desc_invocation}, {"desc_matches_strings", test_desc_matches_strings},
        {"desc_errors", test_desc_errors}, {"registry_names", test_registry_names}, {"take", test_take},
        {"accuracy", test_accuracy}, {"adam_bias_correction", test_adam_bias_correction}, {"optimizer", test_optimizer},
        {"standardise_recipe", test_standardise_recipe}, {"extending", test_extending},
        {"empty_axis_reductions", test_empty_axis_reductions}, {"invoke_messages", test_invoke_messages},
    };
    return run_tests("invoke", tests, (int)(sizeof tests / sizeof tests[0]));
}
