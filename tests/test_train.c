/* depeng_nn.h's training helpers beyond the layers: MXNet's initialisers
   (Xavier, MSRA, uniform, normal, constants; by name and by a variable's
   __init__ hint), learning-rate schedules (factor, multi-factor, cosine,
   warm-up), the RMSProp, centered RMSProp, AdaGrad, NAG and AdamW updates
   against steps computed by hand, and global-norm clipping. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/test_common.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static const dp_ctx CPU0 = {DP_DEV_CPU, 0};
static dp_engine *make_engine(void) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_POOLED; d.ignore_env = 1; d.cpu_worker_nthreads = 2;
    d.logger.func = quiet_logger;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}
static int near(double a, double b, double tol) { return fabs(a - b) <= tol * (1 + fabs(b)); }

/* ---- initialisers ---------------------------------------------------------- */
static void moments(dp_ndarray *a, double *mean, double *var, double *maxabs) {
    int64_t n = dp_shape_size(dp_nd_shape(a)), i;
    float *v = (float *)malloc((size_t)n * sizeof *v);
    double s = 0, q = 0, m = 0;
    CHECK(v && dp_nd_read(a, v, (size_t)n * sizeof *v, NULL) == DP_OK);
    for (i = 0; v && i < n; i++) { s += v[i]; q += (double)v[i] * v[i]; if (fabs(v[i]) > m) m = fabs(v[i]); }
    *mean = s / (double)n; *var = q / (double)n - *mean * *mean; *maxabs = m;
    free(v);
}
static void test_init_parse(void) {
    dp_initializer in;
    CHECK(dp_init_parse("xavier", &in) == DP_OK && in.kind == DP_INIT_XAVIER && in.rnd_type == DP_INIT_RND_UNIFORM && in.factor_type == DP_INIT_FACTOR_AVG && in.magnitude == 3);
    CHECK(dp_init_parse("[\"xavier\", {\"rnd_type\": \"gaussian\", \"factor_type\": \"in\", \"magnitude\": 2}]", &in) == DP_OK);
    CHECK(in.kind == DP_INIT_XAVIER && in.rnd_type == DP_INIT_RND_GAUSSIAN && in.factor_type == DP_INIT_FACTOR_IN && in.magnitude == 2);
    CHECK(dp_init_parse("[\"MSRAPrelu\", {\"factor_type\": \"out\", \"slope\": \"0.1\"}]", &in) == DP_OK && in.kind == DP_INIT_MSRA && in.slope == 0.1 && in.factor_type == DP_INIT_FACTOR_OUT);
    CHECK(dp_init_parse("msraprelu", &in) == DP_OK && in.slope == 0.25);
    CHECK(dp_init_parse("[\"constant\", {\"value\": 0.5}]", &in) == DP_OK && in.kind == DP_INIT_CONSTANT && in.value == 0.5);
    CHECK(dp_init_parse("zeros", &in) == DP_OK && in.kind == DP_INIT_ZERO);
    CHECK(dp_init_parse("[\"uniform\", {}]", &in) == DP_OK && in.scale == 0.07);
    CHECK(dp_init_parse("[\"normal\"]", &in) == DP_OK && in.sigma == 0.01);
    dp_clear_last_error();
    CHECK(dp_init_parse("orthogonal", &in) == DP_ERROR_INVALID_ARGS && strstr(dp_last_error(), "orthogonal"));
    CHECK(dp_init_parse("[\"xavier\", {\"rnd\": 1}]", &in) == DP_ERROR_INVALID_ARGS && strstr(dp_last_error(), "rnd"));
    CHECK(dp_init_parse("[\"xavier\", {\"rnd_type\": \"laplace\"}]", &in) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_init_parse("[\"uniform\", {\"scale\": \"big\"}]", &in) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_init_parse("[\"uniform\", {\"scale\": 1}", &in) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_init_parse(NULL, &in) == DP_ERROR_INVALID_ARGS);
}
static void test_init_rules(void) {
    dp_engine *eng = make_engine();
    dp_shape ws = {4, {64, 32, 3, 3}}, vs = {1, {50}};
    dp_ndarray *w = NULL, *v = NULL;
    dp_initializer in;
    double mean, var, mx, s;
    CHECK(dp_nd_zeros(eng, &ws, DP_FLOAT32, CPU0, &w) == DP_OK && dp_nd_zeros(eng, &vs, DP_FLOAT32, CPU0, &v) == DP_OK);
    /* Xavier uniform, avg, 3: s = sqrt(3 / ((288 + 576) / 2)) */
    CHECK(dp_init_parse("xavier", &in) == DP_OK && dp_init_array(&in, "conv1_weight", NULL, w) == DP_OK);
    moments(w, &mean, &var, &mx);
    s = sqrt(3.0 / 432.0);
    CHECK(mx <= s * (1 + 1e-6) && mx > 0.99 * s && fabs(mean) < 0.01 * s && near(var, s * s / 3, 0.05));
    /* gaussian, in, 2: sd sqrt(2 / 288) */
    CHECK(dp_init_parse("[\"xavier\", {\"rnd_type\": \"gaussian\", \"factor_type\": \"in\", \"magnitude\": 2}]", &in) == DP_OK && dp_init_array(&in, "w_weight", NULL, w) == DP_OK);
    moments(w, &mean, &var, &mx);
    CHECK(near(var, 2.0 / 288, 0.05) && mx > 3 * sqrt(2.0 / 288));
    /* MSRA (slope 0.25, avg): sd sqrt(2 / 1.0625 / 432); out: 576 */
    CHECK(dp_init_parse("msraprelu", &in) == DP_OK && dp_init_array(&in, "weight", NULL, w) == DP_OK);
    moments(w, &mean, &var, &mx);
    CHECK(near(var, 2 / 1.0625 / 432, 0.05));
    in.factor_type = DP_INIT_FACTOR_OUT; in.slope = 0;
    CHECK(dp_init_array(&in, "weight", NULL, w) == DP_OK);
    moments(w, &mean, &var, &mx);
    CHECK(near(var, 2.0 / 576, 0.05));
    /* uniform and normal */
    CHECK(dp_init_parse("[\"uniform\", {\"scale\": 0.5}]", &in) == DP_OK && dp_init_array(&in, "fc_weight", NULL, w) == DP_OK);
    moments(w, &mean, &var, &mx);
    CHECK(mx <= 0.5 && near(var, 0.25 / 3, 0.05));
    CHECK(dp_init_parse("[\"normal\", {\"sigma\": 0.2}]", &in) == DP_OK && dp_init_array(&in, "fc_weight", NULL, w) == DP_OK);
    moments(w, &mean, &var, &mx);
    CHECK(near(var, 0.04, 0.05));
    /* by name: bias / beta / moving_mean 0, gamma / moving_var 1, whatever the initializer */
    CHECK(dp_init_parse("xavier", &in) == DP_OK);
    CHECK(dp_init_array(&in, "fc1_bias", NULL, v) == DP_OK); moments(v, &mean, &var, &mx); CHECK(mx == 0);
    CHECK(dp_init_array(&in, "bn_gamma", NULL, v) == DP_OK); moments(v, &mean, &var, &mx); CHECK(mean == 1 && var == 0);
    CHECK(dp_init_array(&in, "bn_beta", NULL, v) == DP_OK); moments(v, &mean, &var, &mx); CHECK(mx == 0);
    CHECK(dp_init_array(&in, "bn_moving_var", NULL, v) == DP_OK); moments(v, &mean, &var, &mx); CHECK(mean == 1);
    CHECK(dp_init_array(&in, "bn_moving_mean", NULL, v) == DP_OK); moments(v, &mean, &var, &mx); CHECK(mx == 0);
    /* a hint wins over the name */
    CHECK(dp_init_array(&in, "bn_moving_var", "[\"constant\", {\"value\": 0.25}]", v) == DP_OK); moments(v, &mean, &var, &mx); CHECK(mean == 0.25 && var == 0);
    /* refused: an unknown name, Xavier on a vector, a bad hint */
    dp_clear_last_error();
    CHECK(dp_init_array(&in, "fc1_scale", NULL, v) == DP_ERROR_INVALID_ARGS && strstr(dp_last_error(), "unknown initialization pattern for 'fc1_scale'"));
    CHECK(dp_init_array(&in, "vec_weight", NULL, v) == DP_ERROR_INVALID_ARGS && strstr(dp_last_error(), "vec_weight"));
    CHECK(dp_init_array(&in, "x_weight", "[\"nope\"]", w) == DP_ERROR_INVALID_ARGS);
    /* reproducible for a seed */
    {
        float a[8], b[8];
        dp_ndarray *x = NULL;
        dp_shape xs = {2, {2, 4}};
        CHECK(dp_nd_zeros(eng, &xs, DP_FLOAT32, CPU0, &x) == DP_OK);
        CHECK(dp_random_seed(eng, CPU0, 11) == DP_OK && dp_init_array(&in, "weight", NULL, x) == DP_OK && dp_nd_read(x, a, sizeof a, NULL) == DP_OK);
        CHECK(dp_random_seed(eng, CPU0, 11) == DP_OK && dp_init_array(&in, "weight", NULL, x) == DP_OK && dp_nd_read(x, b, sizeof b, NULL) == DP_OK);
        CHECK(memcmp(a, b, sizeof a) == 0);
        dp_nd_release(x);
    }
    dp_nd_release(w); dp_nd_release(v);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_init_hints_from_json(void) {
    static const char *json =
        "{\"nodes\": [{\"op\": \"null\", \"name\": \"data\", \"inputs\": []},"
        " {\"op\": \"null\", \"name\": \"fc1_weight\", \"attrs\": {\"__init__\": \"[\\\"constant\\\", {\\\"value\\\": 0.5}]\", \"__lr_mult__\": \"2.0\"}, \"inputs\": []},"
        " {\"op\": \"null\", \"name\": \"fc1_bias\", \"attrs\": {\"__init__\": \"ones\"}, \"inputs\": []},"
        " {\"op\": \"FullyConnected\", \"name\": \"fc1\", \"attrs\": {\"num_hidden\": \"3\"}, \"inputs\": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]}],"
        " \"arg_nodes\": [0, 1, 2], \"heads\": [[3, 0, 0]]}";
    dp_engine *eng = make_engine();
    dp_symbol *s = NULL, *s2 = NULL;
    dp_nd_named p[2];
    dp_shape ws = {2, {3, 4}}, bs = {1, {3}};
    dp_initializer in;
    float w[12], b[3];
    char *text = NULL;
    size_t len = 0;
    FILE *f;
    CHECK(dp_sym_load_json(json, &s) == DP_OK);
    CHECK(s && dp_sym_var_attr(s, "fc1_weight", "__lr_mult__") && strcmp(dp_sym_var_attr(s, "fc1_weight", "__lr_mult__"), "2.0") == 0);
    CHECK(dp_sym_var_attr(s, "data", "__init__") == NULL && dp_sym_var_attr(s, "nothere", "__init__") == NULL);
    snprintf(p[0].name, sizeof p[0].name, "fc1_weight"); snprintf(p[1].name, sizeof p[1].name, "fc1_bias");
    CHECK(dp_nd_zeros(eng, &ws, DP_FLOAT32, CPU0, &p[0].array) == DP_OK && dp_nd_zeros(eng, &bs, DP_FLOAT32, CPU0, &p[1].array) == DP_OK);
    CHECK(dp_init_parse("xavier", &in) == DP_OK && dp_init_params(&in, s, p, 2) == DP_OK);
    CHECK(dp_nd_read(p[0].array, w, sizeof w, NULL) == DP_OK && w[0] == 0.5f && w[11] == 0.5f);
    CHECK(dp_nd_read(p[1].array, b, sizeof b, NULL) == DP_OK && b[0] == 1 && b[2] == 1);
    /* saving keeps the variables' attributes */
    f = open_memstream(&text, &len);
    CHECK(f && dp_sym_save_json(s, f) == DP_OK);
    if (f) fclose(f);
    CHECK(text && strstr(text, "__lr_mult__") && dp_sym_load_json(text, &s2) == DP_OK);
    CHECK(s2 && dp_sym_var_attr(s2, "fc1_bias", "__init__") && strcmp(dp_sym_var_attr(s2, "fc1_bias", "__init__"), "ones") == 0);
    free(text);
    dp_sym_release(s); dp_sym_release(s2);
    dp_nd_release(p[0].array); dp_nd_release(p[1].array);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}

/* ---- schedules --------------------------------------------------------------- */
static void test_lr_schedules(void) {
    dp_lr_schedule s;
    int64_t steps[3] = {3, 5, 9};
    memset(&s, 0, sizeof s);
    s.kind = DP_LR_FACTOR; s.base_lr = 1; s.step = 2; s.factor = 0.5; s.stop_factor_lr = 0.1;
    CHECK(dp_lr_check(&s) == DP_OK);
    CHECK(dp_lr_at(&s, 0) == 1 && dp_lr_at(&s, 1) == 1 && dp_lr_at(&s, 2) == 1 && dp_lr_at(&s, 3) == 0.5 && dp_lr_at(&s, 4) == 0.5 && dp_lr_at(&s, 5) == 0.25);
    CHECK(dp_lr_at(&s, 7) == 0.125 && dp_lr_at(&s, 9) == 0.1 && dp_lr_at(&s, 1000000) == 0.1);
    s.kind = DP_LR_MULTIFACTOR; s.steps = steps; s.num_steps = 3; s.factor = 0.1;
    CHECK(dp_lr_check(&s) == DP_OK && dp_lr_at(&s, 3) == 1 && near(dp_lr_at(&s, 4), 0.1, 1e-15) && near(dp_lr_at(&s, 6), 0.01, 1e-15) && near(dp_lr_at(&s, 10), 0.001, 1e-15));
    s.kind = DP_LR_COSINE; s.base_lr = 1; s.final_lr = 0.1; s.max_update = 10;
    CHECK(dp_lr_check(&s) == DP_OK && dp_lr_at(&s, 0) == 1 && near(dp_lr_at(&s, 5), 0.55, 1e-12) && near(dp_lr_at(&s, 10), 0.1, 1e-12) && dp_lr_at(&s, 11) == 0.1);
    /* warm-up: linear from 0 over 4 updates, then the cosine over the 6 left */
    s.warmup_steps = 4; s.warmup_begin_lr = 0;
    CHECK(dp_lr_at(&s, 0) == 0 && dp_lr_at(&s, 1) == 0.25 && dp_lr_at(&s, 3) == 0.75 && dp_lr_at(&s, 4) == 1 && near(dp_lr_at(&s, 7), 0.55, 1e-12));
    s.warmup_mode = DP_LR_WARMUP_CONSTANT; s.warmup_begin_lr = 0.01;
    CHECK(dp_lr_at(&s, 3) == 0.01 && dp_lr_at(&s, 4) == 1);
    s.kind = DP_LR_FACTOR; s.factor = 0.5; s.step = 2;          /* warm-up in front of a factor schedule */
    CHECK(dp_lr_at(&s, 2) == 0.01 && dp_lr_at(&s, 4) == 0.5 && dp_lr_at(&s, 5) == 0.25);   /* MXNet counts from 0, warm-up included */
    /* refused */
    dp_clear_last_error();
    s.factor = 1; s.warmup_steps = 0;                           /* MXNet's default factor: no change, at any count */
    CHECK(dp_lr_at(&s, INT64_MAX) == 1 && dp_lr_at(&s, -5) == 1);
    s.step = 0; CHECK(dp_lr_check(&s) == DP_ERROR_INVALID_ARGS && strstr(dp_last_error(), "FACTOR") && isnan(dp_lr_at(&s, 1)));
    s.kind = DP_LR_COSINE; s.max_update = 0; CHECK(dp_lr_check(&s) == DP_ERROR_INVALID_ARGS);
    steps[1] = 3; s.kind = DP_LR_MULTIFACTOR; CHECK(dp_lr_check(&s) == DP_ERROR_INVALID_ARGS);
    s.kind = (dp_lr_kind)9; CHECK(dp_lr_check(&s) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_lr_check(NULL) == DP_ERROR_INVALID_ARGS);
}

/* ---- optimizers: two steps each, against the formulas written out here --- */
typedef struct { const char *update; int nstates; dp_param params[8]; } opt_case;
static void run_two_steps(dp_engine *eng, const opt_case *c, const double *w0, const double *g1, const double *g2, double *w_out, double (*states)[2]) {
    dp_shape s = {1, {2}};
    dp_ndarray *w = NULL;
    dp_optimizer *opt = NULL;
    dp_optimizer_desc d;
    int i, k;
    memset(&d, 0, sizeof d);
    d.update = c->update;
    memcpy(d.params, c->params, sizeof c->params);
    CHECK(dp_nd_from_host(eng, &s, DP_FLOAT64, CPU0, w0, &w) == DP_OK);
    CHECK(dp_optimizer_create(w, &d, &opt) == DP_OK);
    for (i = 0; opt && i < 2; i++) {
        CHECK(dp_nd_write(dp_nd_grad(w), i ? g2 : g1, 2 * sizeof(double), NULL) == DP_OK);
        CHECK(dp_optimizer_step(opt) == DP_OK);
    }
    CHECK(dp_nd_read(w, w_out, 2 * sizeof(double), NULL) == DP_OK);
    for (k = 0; opt && k < c->nstates; k++) CHECK(dp_optimizer_state(opt, k) && dp_nd_read(dp_optimizer_state(opt, k), states[k], 2 * sizeof(double), NULL) == DP_OK);
    dp_optimizer_destroy(opt);
    dp_nd_release(w);
}
static void test_optimizer_steps(void) {
    dp_engine *eng = make_engine();
    const double w0[2] = {1.0, -2.0}, g1[2] = {0.5, -3.0}, g2[2] = {-1.0, 0.25};
    double w[2], st[3][2], e[2], n[2], m[2], d[2], lr = 0.1, wd = 0.01;
    int i;
    /* rmsprop_update: gamma1 0.9, epsilon 1e-8, wd, clip 2 (g1[1] + wd w = -3.02 is clipped to -2, after the decay as MXNet's) */
    {
        opt_case c = {"rmsprop_update", 1, {{"lr", 0, 0.1, NULL, {0, {0}}}, {"wd", 0, 0.01, NULL, {0, {0}}}, {"gamma1", 0, 0.9, NULL, {0, {0}}}, {"clip_gradient", 0, 2, NULL, {0, {0}}}}};
        run_two_steps(eng, &c, w0, g1, g2, w, st);
        for (i = 0; i < 2; i++) {
            double x = w0[i], g, nn = 0;
            g = fmax(-2, fmin(2, g1[i] + wd * x)); nn = 0.1 * g * g + 0.9 * nn; x -= lr * g / sqrt(nn + 1e-8);
            g = fmax(-2, fmin(2, g2[i] + wd * x)); nn = 0.1 * g * g + 0.9 * nn; x -= lr * g / sqrt(nn + 1e-8);
            e[i] = x; n[i] = nn;
        }
        CHECK(near(w[0], e[0], 1e-14) && near(w[1], e[1], 1e-14) && near(st[0][0], n[0], 1e-14) && near(st[0][1], n[1], 1e-14));
    }
    /* rmspropalex_update: defaults gamma1 0.95, gamma2 0.9, epsilon 1e-8 */
    {
        opt_case c = {"rmspropalex_update", 3, {{"lr", 0, 0.1, NULL, {0, {0}}}}};
        run_two_steps(eng, &c, w0, g1, g2, w, st);
        for (i = 0; i < 2; i++) {
            double x = w0[i], nn = 0, gg = 0, dd = 0, g;
            g = g1[i]; nn = 0.05 * g * g + 0.95 * nn; gg = 0.05 * g + 0.95 * gg; dd = 0.9 * dd - lr * g / sqrt(nn - gg * gg + 1e-8); x += dd;
            g = g2[i]; nn = 0.05 * g * g + 0.95 * nn; gg = 0.05 * g + 0.95 * gg; dd = 0.9 * dd - lr * g / sqrt(nn - gg * gg + 1e-8); x += dd;
            e[i] = x; n[i] = nn; m[i] = gg; d[i] = dd;
        }
        CHECK(near(w[0], e[0], 1e-13) && near(w[1], e[1], 1e-13) && near(st[0][1], n[1], 1e-14) && near(st[1][1], m[1], 1e-14) && near(st[2][0], d[0], 1e-13));
    }
    /* adagrad_update: epsilon 1e-7, wd outside the root, rescale_grad 2 */
    {
        opt_case c = {"adagrad_update", 1, {{"lr", 0, 0.1, NULL, {0, {0}}}, {"wd", 0, 0.01, NULL, {0, {0}}}, {"rescale_grad", 0, 2, NULL, {0, {0}}}}};
        run_two_steps(eng, &c, w0, g1, g2, w, st);
        for (i = 0; i < 2; i++) {
            double x = w0[i], h = 0, g;
            g = 2 * g1[i]; h += g * g; x -= lr * (g / sqrt(h + 1e-7) + wd * x);
            g = 2 * g2[i]; h += g * g; x -= lr * (g / sqrt(h + 1e-7) + wd * x);
            e[i] = x; n[i] = h;
        }
        CHECK(near(w[0], e[0], 1e-14) && near(w[1], e[1], 1e-14) && near(st[0][0], n[0], 1e-14) && near(st[0][1], n[1], 1e-14));
    }
    /* nag_mom_update: momentum 0.9, wd, clip 2 (before the decay); MXNet's
       kernel keeps lr in the momentum */
    {
        opt_case c = {"nag_mom_update", 1, {{"lr", 0, 0.1, NULL, {0, {0}}}, {"wd", 0, 0.01, NULL, {0, {0}}}, {"momentum", 0, 0.9, NULL, {0, {0}}},
                                            {"clip_gradient", 0, 2, NULL, {0, {0}}}}};
        run_two_steps(eng, &c, w0, g1, g2, w, st);
        for (i = 0; i < 2; i++) {
            double x = w0[i], mom = 0, g;
            g = fmax(-2, fmin(2, g1[i])) + wd * x; mom = 0.9 * mom - lr * g; x += 0.9 * mom - lr * g;
            g = fmax(-2, fmin(2, g2[i])) + wd * x; mom = 0.9 * mom - lr * g; x += 0.9 * mom - lr * g;
            e[i] = x; n[i] = mom;
        }
        CHECK(near(w[0], e[0], 1e-14) && near(w[1], e[1], 1e-14) && near(st[0][0], n[0], 1e-14));
    }
    /* adamw_update: bias-corrected lr (steps 1 and 2), decoupled wd 0.01, eta 0.5 */
    {
        opt_case c = {"adamw_update", 2, {{"lr", 0, 0.1, NULL, {0, {0}}}, {"wd", 0, 0.01, NULL, {0, {0}}}, {"eta", 0, 0.5, NULL, {0, {0}}}}};
        run_two_steps(eng, &c, w0, g1, g2, w, st);
        for (i = 0; i < 2; i++) {
            double x = w0[i], mm = 0, vv = 0, g, a;
            g = g1[i]; mm = 0.9 * mm + 0.1 * g; vv = 0.999 * vv + 0.001 * g * g; a = lr * sqrt(1 - 0.999) / (1 - 0.9);
            x -= 0.5 * (a * mm / (sqrt(vv) + 1e-8) + wd * x);
            g = g2[i]; mm = 0.9 * mm + 0.1 * g; vv = 0.999 * vv + 0.001 * g * g; a = lr * sqrt(1 - 0.999 * 0.999) / (1 - 0.81);
            x -= 0.5 * (a * mm / (sqrt(vv) + 1e-8) + wd * x);
            e[i] = x; n[i] = mm; m[i] = vv;
        }
        CHECK(near(w[0], e[0], 1e-13) && near(w[1], e[1], 1e-13) && near(st[0][0], n[0], 1e-14) && near(st[1][1], m[1], 1e-14));
    }
    /* bad parameters and shapes are refused as for the built-in updates */
    {
        dp_shape s2 = {1, {2}}, s3 = {1, {3}};
        dp_ndarray *a = NULL, *b = NULL, *h = NULL;
        dp_optimizer *o = NULL;
        dp_optimizer_desc dd;
        CHECK(dp_nd_zeros(eng, &s2, DP_FLOAT32, CPU0, &a) == DP_OK && dp_nd_zeros(eng, &s2, DP_FLOAT32, CPU0, &b) == DP_OK && dp_nd_zeros(eng, &s3, DP_FLOAT32, CPU0, &h) == DP_OK);
        memset(&dd, 0, sizeof dd);
        dd.update = "adamw_update"; dd.params[0].name = "lr"; dd.params[0].f = 0.1; dd.params[1].name = "t"; dd.params[1].i = 3;
        CHECK(dp_optimizer_create(a, &dd, &o) == DP_ERROR_INVALID_ARGS && o == NULL);      /* t is counted */
        dd.update = "rmsprop_update"; dd.params[1].name = "gamma1"; dd.params[1].f = 2;
        CHECK(dp_optimizer_create(a, &dd, &o) == DP_ERROR_INVALID_ARGS);                   /* gamma1 in [0, 1] */
        {
            dp_ndarray *in[3] = {a, b, h}, *out[1] = {a};
            const char *k[1] = {"lr"}, *v[1] = {"0.1"};
            dp_clear_last_error();
            CHECK(invoke_str(eng, "adagrad_update", 3, in, 1, k, v, 0, 1, out, NULL) == DP_ERROR_INVALID_ARGS && strstr(dp_last_error(), "must match"));
        }
        dp_nd_release(a); dp_nd_release(b); dp_nd_release(h);
    }
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
/* ---- the updates' typed loops: bitwise against each element alone ---------- */
/* One element of each update as MXNet's kernel computes it, in double (the
   arithmetic the kernels keep), states written back rounded to the dtype
   by the caller. kind: 0 rmsprop, 1 rmspropalex, 2 adagrad, 3 nag_mom, 4 adamw. */
static double ref_update(int kind, double lr, double wi, double g, double *a, double *b, double *c) {
    const double wd = 0.01, clip = 0.3;
    if (kind <= 1) g += wd * wi;
    g = g < -clip ? -clip : g > clip ? clip : g;
    if (kind == 3) g += wd * wi;
    switch (kind) {
    case 0: *a = (1 - 0.9) * g * g + 0.9 * *a; wi -= lr * g / sqrt(*a + 1e-8); break;
    case 1:
        *a = (1 - 0.95) * g * g + 0.95 * *a; *b = (1 - 0.95) * g + 0.95 * *b;
        *c = 0.9 * *c - lr * g / sqrt(*a - *b * *b + 1e-8); wi += *c; break;
    case 2: *a += g * g; wi -= lr * (g / sqrt(*a + 1e-7) + wd * wi); break;
    case 3: *a = 0.9 * *a - lr * g; wi += 0.9 * *a - lr * g; break;
    default:
        *a = 0.9 * *a + (1 - 0.9) * g; *b = 0.999 * *b + (1 - 0.999) * g * g;
        wi -= 0.5 * (lr * *a / (sqrt(*b) + 1e-8) + wd * wi); break;
    }
    return wi;
}
static double bits_val(const void *p, dp_dtype t, int64_t i) { return t == DP_FLOAT32 ? (double)((const float *)p)[i] : ((const double *)p)[i]; }
static void put_val(void *p, dp_dtype t, int64_t i, double v) { if (t == DP_FLOAT32) ((float *)p)[i] = (float)v; else ((double *)p)[i] = v; }
static void test_optimizer_typed_bitwise(void) {
    static const char *const names[5] = {"rmsprop_update", "rmspropalex_update", "adagrad_update", "nag_mom_update", "adamw_update"};
    static const int nstates[5] = {1, 3, 1, 1, 2};
    static const int64_t sizes[3] = {1, 7, 140003};      /* the last over the range loop's threshold (2^17) */
    const char *keys[6] = {"lr", "wd", "rescale_grad", "clip_gradient", "t", "eta"}, *vals[6] = {"0.1", "0.01", "2", "0.3", "3", "0.5"};
    const char *mom_key[6] = {"lr", "wd", "rescale_grad", "clip_gradient", "momentum", "gamma1"}, *mom_val[6] = {"0.1", "0.01", "2", "0.3", "0.9", "0.9"};
    dp_engine *eng = make_engine();
    int kind, ti, si, add, bad = 0;
    for (kind = 0; kind < 5; kind++)
        for (ti = 0; ti < 2; ti++)
            for (si = 0; si < 3; si++)
                for (add = 0; add < 2; add++) {
                    dp_dtype t = ti ? DP_FLOAT64 : DP_FLOAT32;
                    size_t es = ti ? 8 : 4;
                    int64_t n = sizes[si], i;
                    dp_shape s = {1, {n}};
                    dp_ndarray *in[5] = {NULL, NULL, NULL, NULL, NULL}, *out[1] = {NULL};
                    dp_req req[1] = {add ? DP_REQ_ADD : DP_REQ_WRITE};
                    unsigned char *h[6], *got = (unsigned char *)malloc(es * (size_t)n * 4);
                    int k, nin = 2 + nstates[kind], nkw = kind == 4 ? 6 : kind == 2 ? 4 : 5;
                    double lr = 0.1;
                    const char *const *kk = kind == 4 ? keys : mom_key, *const *vv = kind == 4 ? vals : mom_val;
                    if (kind == 0 || kind == 1) { kk = mom_key; vv = mom_val; }   /* rmsprop: gamma1 (key 5) */
                    for (k = 0; k < 6; k++) h[k] = (unsigned char *)malloc(es * (size_t)n);
                    for (i = 0; i < n; i++) {                   /* w, g, states, out */
                        put_val(h[0], t, i, sin((double)i * 0.37) * 1.5);
                        put_val(h[1], t, i, cos((double)i * 0.11) * 0.4);
                        put_val(h[2], t, i, kind == 3 || kind == 4 ? sin((double)i) * 0.2 : 1 + 0.5 * fabs(sin((double)i * 1.3)));
                        put_val(h[3], t, i, kind == 4 ? 0.5 + 0.5 * fabs(cos((double)i)) : 0.3 * sin((double)i * 0.7));
                        put_val(h[4], t, i, 0.05 * cos((double)i * 0.9));
                        put_val(h[5], t, i, (double)(i % 13) - 6.25);
                    }
                    for (k = 0; k < nin; k++) CHECK(dp_nd_from_host(eng, &s, t, CPU0, h[k], &in[k]) == DP_OK);
                    CHECK(dp_nd_from_host(eng, &s, t, CPU0, h[5], &out[0]) == DP_OK);
                    {
                        const char *kw[6], *vw[6];
                        int m = 0;
                        for (k = 0; k < 4; k++) { kw[m] = kk[k]; vw[m] = vv[k]; m++; }
                        if (kind == 0 || kind == 1) { kw[m] = "gamma1"; vw[m] = kind == 0 ? "0.9" : "0.95"; m++; }
                        if (kind == 3) { kw[m] = "momentum"; vw[m] = "0.9"; m++; }
                        if (kind == 4) { kw[m] = "t"; vw[m] = "3"; m++; kw[m] = "eta"; vw[m] = "0.5"; m++; }
                        (void)nkw;
                        CHECK(invoke_str(eng, names[kind], nin, in, m, kw, vw, 0, 1, out, req) == DP_OK);
                    }
                    if (kind == 4) { double c1 = 1 - pow(0.9, 3.0); lr *= sqrt(1 - pow(0.999, 3.0)) / c1; }
                    CHECK(dp_nd_read(out[0], got, es * (size_t)n, NULL) == DP_OK);
                    for (k = 0; k < nstates[kind]; k++) CHECK(dp_nd_read(in[2 + k], got + es * (size_t)n * (size_t)(k + 1), es * (size_t)n, NULL) == DP_OK);
                    for (i = 0; i < n && !bad; i++) {
                        double a = bits_val(h[2], t, i), b = nstates[kind] > 1 ? bits_val(h[3], t, i) : 0, c = nstates[kind] > 2 ? bits_val(h[4], t, i) : 0;
                        double wn = ref_update(kind, lr, bits_val(h[0], t, i), 2 * bits_val(h[1], t, i), &a, &b, &c);
                        unsigned char want[8];
                        double st[3];
                        st[0] = a; st[1] = b; st[2] = c;
                        put_val(want, t, 0, add ? wn + bits_val(h[5], t, i) : wn);
                        if (memcmp(want, got + es * (size_t)i, es) != 0) bad = 1;
                        for (k = 0; k < nstates[kind]; k++) {
                            put_val(want, t, 0, st[k]);
                            if (memcmp(want, got + es * ((size_t)n * (size_t)(k + 1) + (size_t)i), es) != 0) bad = 1;
                        }
                        if (bad) fprintf(stderr, "  %s %s n=%lld %s: element %lld differs\n", names[kind], dp_dtype_name(t), (long long)n, add ? "add-to" : "write", (long long)i);
                    }
                    for (k = 0; k < nin; k++) dp_nd_release(in[k]);
                    dp_nd_release(out[0]);
                    for (k = 0; k < 6; k++) free(h[k]);
                    free(got);
                }
    CHECK(!bad);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
/* the updates drive a KVStore too (its optimizer updater) */
static void test_optimizer_in_kvstore(void) {
    dp_engine *eng = make_engine();
    dp_kvstore *kv = NULL;
    dp_kvstore_desc kd;
    dp_optimizer_desc od;
    dp_shape s = {1, {2}};
    const double w0[2] = {1.0, -2.0}, g[2] = {0.5, -3.0};
    dp_ndarray *w = NULL, *gr = NULL;
    double got[2];
    memset(&kd, 0, sizeof kd);
    memset(&od, 0, sizeof od);
    od.update = "nag_mom_update"; od.params[0].name = "lr"; od.params[0].f = 0.1; od.params[1].name = "momentum"; od.params[1].f = 0.9;
    CHECK(dp_kv_create(eng, &kd, &kv) == DP_OK && dp_kv_set_optimizer(kv, &od) == DP_OK);
    CHECK(dp_nd_from_host(eng, &s, DP_FLOAT64, CPU0, w0, &w) == DP_OK && dp_nd_from_host(eng, &s, DP_FLOAT64, CPU0, g, &gr) == DP_OK);
    CHECK(dp_kv_init(kv, 3, w) == DP_OK && dp_kv_push(kv, 3, &gr, 1, 0) == DP_OK && dp_kv_pull(kv, 3, &w, 1, 0) == DP_OK);
    CHECK(dp_nd_read(w, got, sizeof got, NULL) == DP_OK && near(got[0], 1.0 - 0.1 * (0.5 + 0.9 * 0.5), 1e-14) && near(got[1], -2.0 - 0.1 * (-3.0 + 0.9 * -3.0), 1e-14));
    dp_kv_destroy(kv);
    dp_nd_release(w); dp_nd_release(gr);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_clip_global_norm(void) {
    dp_engine *eng = make_engine();
    dp_shape s2 = {1, {2}}, s1 = {1, {1}}, s0 = {0, {0}};
    const float a0[2] = {3, 0}, b0[1] = {4};
    const double c0[2] = {0, 0};
    dp_ndarray *a = NULL, *b = NULL, *c = NULL, *norm = NULL, *arr[3];
    float av[2] = {0, 0}, bv[1] = {0}, nv = 0;
    CHECK(dp_nd_from_host(eng, &s2, DP_FLOAT32, CPU0, a0, &a) == DP_OK && dp_nd_from_host(eng, &s1, DP_FLOAT32, CPU0, b0, &b) == DP_OK);
    CHECK(dp_nd_from_host(eng, &s2, DP_FLOAT64, CPU0, c0, &c) == DP_OK && dp_nd_zeros(eng, &s0, DP_FLOAT32, CPU0, &norm) == DP_OK);
    arr[0] = a; arr[1] = b; arr[2] = c;
    /* total 5 > 1: every array times 1 / (5 + 1e-8) */
    CHECK(dp_clip_global_norm(arr, 3, 1.0, norm) == DP_OK);
    CHECK(dp_nd_read(a, av, sizeof av, NULL) == DP_OK && dp_nd_read(b, bv, sizeof bv, NULL) == DP_OK && dp_nd_read(norm, &nv, sizeof nv, NULL) == DP_OK);
    CHECK(nv == 5 && av[0] == (float)(3.0 / (5 + 1e-8)) && av[1] == 0 && bv[0] == (float)(4.0 / (5 + 1e-8)));
    /* total under max_norm: unchanged */
    CHECK(dp_clip_global_norm(arr, 2, 10.0, NULL) == DP_OK);
    CHECK(dp_nd_read(a, av, sizeof av, NULL) == DP_OK && av[0] == (float)(3.0 / (5 + 1e-8)));
    /* a view and its parent count once */
    {
        dp_ndarray *v = NULL, *two[2];
        const float x0[2] = {3, 4};
        CHECK(dp_nd_write(a, x0, sizeof x0, NULL) == DP_OK && dp_nd_slice(a, 0, 2, &v) == DP_OK);
        two[0] = a; two[1] = v;
        CHECK(dp_clip_global_norm(two, 2, 2.5, norm) == DP_OK && dp_nd_read(norm, &nv, sizeof nv, NULL) == DP_OK && nv == 5);
        CHECK(dp_nd_read(a, av, sizeof av, NULL) == DP_OK && av[1] == (float)(4 * 2.5 / (5 + 1e-8)));
        dp_nd_release(v);
    }
    /* two disjoint views of one storage are two sets of elements */
    {
        dp_ndarray *lo = NULL, *hi = NULL, *two[2];
        dp_shape s4 = {1, {4}};
        dp_ndarray *q = NULL;
        const float q0[4] = {3, 0, 0, 4};
        float qv[4];
        CHECK(dp_nd_from_host(eng, &s4, DP_FLOAT32, CPU0, q0, &q) == DP_OK && dp_nd_slice(q, 0, 2, &lo) == DP_OK && dp_nd_slice(q, 2, 4, &hi) == DP_OK);
        two[0] = lo; two[1] = hi;
        CHECK(dp_clip_global_norm(two, 2, 1.0, norm) == DP_OK && dp_nd_read(norm, &nv, sizeof nv, NULL) == DP_OK && nv == 5);
        CHECK(dp_nd_read(q, qv, sizeof qv, NULL) == DP_OK && qv[0] == (float)(3 / (5 + 1e-8)) && qv[3] == (float)(4 / (5 + 1e-8)));
        dp_nd_release(lo); dp_nd_release(hi); dp_nd_release(q);
    }
    /* both dtypes, bitwise against the sum taken element by element in
       order and each element scaled alone (dp_dtype_load / dp_dtype_store) */
    {
        static const dp_dtype ts[4] = {DP_FLOAT32, DP_FLOAT64, DP_FLOAT32, DP_FLOAT64};
        static const int64_t ns[4] = {1003, 7, 300, 513};
        dp_ndarray *x[4];
        unsigned char *h[4], *got;
        double sum = 0, total, scale;
        int k;
        int64_t i;
        for (k = 0; k < 4; k++) {
            dp_shape sk = {1, {ns[k]}};
            h[k] = (unsigned char *)malloc((size_t)ns[k] * 8);
            for (i = 0; i < ns[k]; i++) dp_dtype_store(ts[k], h[k], i, sin((double)i * 0.3 + k) * 3, DP_REQ_WRITE);
            CHECK(dp_nd_from_host(eng, &sk, ts[k], CPU0, h[k], &x[k]) == DP_OK);
            for (i = 0; i < ns[k]; i++) { double v = dp_dtype_load(ts[k], h[k], i); sum += v * v; }
        }
        total = sqrt(sum); scale = 2.0 / (total + 1e-8);
        CHECK(dp_clip_global_norm(x, 4, 2.0, NULL) == DP_OK);
        got = (unsigned char *)malloc(1003 * 8);
        for (k = 0; k < 4; k++) {
            int bad = 0;
            CHECK(dp_nd_read(x[k], got, (size_t)ns[k] * dp_dtype_size(ts[k]), NULL) == DP_OK);
            for (i = 0; i < ns[k]; i++) dp_dtype_store(ts[k], h[k], i, dp_dtype_load(ts[k], h[k], i) * scale, DP_REQ_WRITE);
            bad = memcmp(got, h[k], (size_t)ns[k] * dp_dtype_size(ts[k])) != 0;
            if (bad) fprintf(stderr, "  clip_global_norm %s differs\n", dp_dtype_name(ts[k]));
            CHECK(!bad);
            dp_nd_release(x[k]); free(h[k]);
        }
        free(got);
    }
    /* refused */
    dp_clear_last_error();
    CHECK(dp_clip_global_norm(arr, 3, 0, NULL) == DP_ERROR_INVALID_ARGS && dp_last_error_item() == DP_LOGITEM_ND_ARGS);
    CHECK(dp_clip_global_norm(arr, 0, 1, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_clip_global_norm(arr, 2, 1, a) == DP_ERROR_INVALID_ARGS);       /* norm_out of 2 elements */
    dp_nd_release(a); dp_nd_release(b); dp_nd_release(c); dp_nd_release(norm);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}

int main(void) {
    dp_logger quiet;
    static const test_case tests[] = {
        {"init_parse", test_init_parse},
        {"init_rules", test_init_rules},
        {"init_hints_from_json", test_init_hints_from_json},
        {"lr_schedules", test_lr_schedules},
        {"optimizer_steps", test_optimizer_steps},
        {"optimizer_typed_bitwise", test_optimizer_typed_bitwise},
        {"optimizer_in_kvstore", test_optimizer_in_kvstore},
        {"clip_global_norm", test_clip_global_norm},
    };
    memset(&quiet, 0, sizeof quiet);
    quiet.func = quiet_logger;
    dp_set_default_logger(&quiet);
    return run_tests("test_train", tests, (int)(sizeof tests / sizeof tests[0]));
}
