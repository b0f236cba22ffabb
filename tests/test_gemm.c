/* tests/test_gemm.c - the GEMM and the optimizer updates' CPU loops:
   dp_gemm against a naive product over shapes, transposes, alpha and beta
   (edge sizes around the tiles included), with the run-time picked
   micro-kernel and with the portable one; dp_gemm_on, dp_gemm_pack_b_on and the dot operator
   bitwise the same with no engine and on engines with DP_NO_THREADS, 1
   and 2 workers; the updates computed in the array's precision (float32
   in float32, float64 as before) and bitwise the same at every worker
   count. White-box: it calls dp__gemm2_* to force the portable kernel. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "test_common.h"
#include "test_calls.h"
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <pthread.h>

static uint64_t g_rng = 88172645463325252ull;
static double rnd(void) {
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0 * 2 - 1;
}
static dp_engine *make(dp_engine_type type, int workers) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = workers; d.ignore_env = 1; d.logger.func = quiet_logger;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}

/* C = alpha op(A) op(B) + beta C in long double, compared with what the
   GEMM wrote: |error| <= tol (sum of |terms| + |beta C|). */
static int check_one(int is64, int simd, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, double beta) {
    int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2, i, j, p;
    int64_t asz = (ta ? k : m) * lda, bsz = (tb ? n : k) * ldb, csz = m * ldc;
    double *a = (double *)malloc(sizeof(double) * (size_t)(asz + 1)), *b = (double *)malloc(sizeof(double) * (size_t)(bsz + 1));
    double *c0 = (double *)malloc(sizeof(double) * (size_t)(csz + 1)), *cd = (double *)malloc(sizeof(double) * (size_t)(csz + 1));
    float *af = (float *)malloc(sizeof(float) * (size_t)(asz + 1)), *bf = (float *)malloc(sizeof(float) * (size_t)(bsz + 1));
    float *cf = (float *)malloc(sizeof(float) * (size_t)(csz + 1));
    int bad = 0;
    for (i = 0; i < asz; i++) { af[i] = (float)rnd(); a[i] = af[i]; }
    for (i = 0; i < bsz; i++) { bf[i] = (float)rnd(); b[i] = bf[i]; }
    for (i = 0; i < csz; i++) { cf[i] = (float)rnd(); c0[i] = cf[i]; cd[i] = c0[i]; }
    if (beta == 0) for (i = 0; i < m; i++) { cf[i * ldc] = NAN; cd[i * ldc] = NAN; }   /* beta 0 never reads C */
    if (is64) dp__gemm2_f64(NULL, simd, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cd, ldc, NULL, NULL);
    else dp__gemm2_f32(NULL, simd, ta, tb, m, n, k, (float)alpha, af, lda, bf, ldb, (float)beta, cf, ldc, NULL, NULL);
    for (i = 0; i < m && !bad; i++)
        for (j = 0; j < ldc; j++) {
            long double s = 0, mag = 0, got = is64 ? (long double)cd[i * ldc + j] : (long double)cf[i * ldc + j], want;
            if (j >= n) { if (got != (long double)c0[i * ldc + j]) bad = 1; continue; }   /* the padding is not touched */
            for (p = 0; p < k; p++) {
                long double t = (long double)a[ta ? p * lda + i : i * lda + p] * b[tb ? j * ldb + p : p * ldb + j];
                s += t; mag += fabsl(t);
            }
            want = (long double)alpha * s + (beta == 0 ? 0 : (long double)beta * c0[i * ldc + j]);
            mag = fabsl((long double)alpha) * mag + fabsl((long double)beta * c0[i * ldc + j]) + 1e-30L;
            if (!(fabsl(got - want) <= mag * (is64 ? 1e-14L : 1e-5L))) bad = 1;
        }
    if (bad) fprintf(stderr, "  gemm %s simd %d ta %d tb %d m %lld n %lld k %lld alpha %g beta %g wrong\n", is64 ? "f64" : "f32", simd, ta, tb,
                     (long long)m, (long long)n, (long long)k, alpha, beta);
    free(a); free(b); free(c0); free(cd); free(af); free(bf); free(cf);
    return !bad;
}

static void test_against_naive(void) {
    static const int64_t sizes[] = {1, 2, 5, 6, 7, 15, 16, 17, 33, 97};
    static const int64_t deep[][3] = {{64, 128, 784}, {96, 130, 257}, {200, 40, 513}, {7, 300, 600}, {103, 17, 1}};
    static const double ab[][2] = {{1, 0}, {1, 1}, {0.5, -2}, {0, 0.25}, {-1.5, 0}};
    int is64, simd, ta, tb, x, y, z, q;
    for (is64 = 0; is64 < 2; is64++)
        for (simd = 0; simd < 2; simd++)
            for (ta = 0; ta < 2; ta++)
                for (tb = 0; tb < 2; tb++) {
                    for (x = 0; x < 10; x += 3)
                        for (y = 0; y < 10; y += 2)
                            for (z = 0; z < 10; z += 4)
                                CHECK(check_one(is64, simd, ta, tb, sizes[x], sizes[y], sizes[z], ab[(x + y + z) % 5][0], ab[(x + y + z) % 5][1]));
                    for (q = 0; q < 5; q++) CHECK(check_one(is64, simd, ta, tb, deep[q][0], deep[q][1], deep[q][2], ab[q][0], ab[q][1]));
                }
}

/* The nets' products (bench/gemm.c: the MLP 784-128-64-10 at batch 64,
   LeNet's per-image convolutions and its 800-500-10 layers) in every
   transpose: narrow n (the 10-class layer), a long k with a small output
   (conv1's dW), small m against wide n. */
static const int64_t g_nets[][3] = {{64, 10, 64}, {10, 64, 64}, {64, 64, 10}, {64, 128, 784}, {64, 784, 128}, {128, 784, 64},
                                    {20, 25, 576}, {20, 576, 25}, {25, 576, 20}, {50, 64, 500}, {500, 64, 50}, {50, 500, 64},
                                    {64, 10, 500}, {256, 10, 500}, {64, 500, 800}};
#define NETS (sizeof g_nets / sizeof g_nets[0])

/* random shapes from 1 to 70 (every tile edge and k tail of the kernels,
   the narrow-n and small-A paths included), every transpose, both
   kernels and dtypes, alpha and beta; then the nets' shapes */
static void test_random_and_net_shapes(void) {
    static const double ab[][2] = {{1, 0}, {1, 1}, {0.5, -2}, {-1.5, 0}, {2, 0.5}};
    int is64, simd, t, q;
    for (is64 = 0; is64 < 2; is64++)
        for (simd = 0; simd < 2; simd++)
            for (q = 0; q < 120; q++) {
                int64_t m = 1 + (int64_t)((rnd() + 1) * 35), n = 1 + (int64_t)((rnd() + 1) * 35), k = 1 + (int64_t)((rnd() + 1) * 35);
                CHECK(check_one(is64, simd, q & 1, (q >> 1) & 1, m, n, k, ab[q % 5][0], ab[q % 5][1]));
            }
    for (is64 = 0; is64 < 2; is64++)
        for (q = 0; q < (int)NETS; q++)
            for (t = 0; t < 4; t++)
                CHECK(check_one(is64, 1, t & 1, t >> 1, g_nets[q][0], g_nets[q][1], g_nets[q][2], ab[(q + t) % 5][0], ab[(q + t) % 5][1]));
}

/* m = 0 or n = 0 writes nothing; k = 0 scales C by beta (0: zeros, even over NaN) */
static void test_empty_and_k0(void) {
    float c[6] = {1, 2, 3, 4, 5, NAN}, a[1] = {7}, b[1] = {9};
    dp_gemm(DP_FLOAT32, 0, 0, 0, 3, 4, a, 1, b, 1, 0.0, c, 3);
    CHECK(c[0] == 1 && isnan(c[5]));
    dp_gemm(DP_FLOAT32, 0, 0, 2, 3, 0, a, 1, b, 1, 2.0, c, 3);
    CHECK(c[0] == 2 && c[4] == 10 && isnan(c[5]));
    dp_gemm(DP_FLOAT32, 0, 0, 2, 3, 0, a, 1, b, 1, 0.0, c, 3);
    CHECK(c[0] == 0 && c[5] == 0);
}

/* dp_gemm_on: bitwise the same result with no engine, and on every engine
   kind with DP_NO_THREADS and 1 to 4 workers, at shapes over the threshold
   (sizes that are not multiples of the tiles, and the nets' that are),
   both dtypes */
static void test_bitwise_any_workers(void) {
    static const int64_t shapes[][3] = {{256, 256, 256}, {64, 128, 784}, {251, 199, 301}, {1000, 10, 64}, {64, 784, 128},
                                        {128, 784, 64}, {20, 25, 576}, {256, 10, 500}, {50, 500, 64}, {64, 500, 800}, {97, 33, 700}};
    static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    static const int workers[5] = {DP_NO_THREADS, 1, 2, 3, 4};
    int s, is64, t, k, w;
    for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++)
        for (is64 = 0; is64 < 2; is64++)
            for (t = 0; t < 4; t++) {
                int64_t m = shapes[s][0], n = shapes[s][1], kk = shapes[s][2], i;
                size_t es = is64 ? 8 : 4, asz = (size_t)(m * kk), bsz = (size_t)(kk * n), csz = (size_t)(m * n);
                unsigned char *a = (unsigned char *)malloc(es * asz), *b = (unsigned char *)malloc(es * bsz);
                unsigned char *ref = (unsigned char *)malloc(es * csz), *c = (unsigned char *)malloc(es * csz);
                int ta = t & 1, tb = t >> 1;
                for (i = 0; i < (int64_t)asz; i++) dp__store_elem(a, is64 ? DP_FLOAT64 : DP_FLOAT32, i, rnd(), DP_REQ_WRITE);
                for (i = 0; i < (int64_t)bsz; i++) dp__store_elem(b, is64 ? DP_FLOAT64 : DP_FLOAT32, i, rnd(), DP_REQ_WRITE);
                for (i = 0; i < (int64_t)csz; i++) dp__store_elem(ref, is64 ? DP_FLOAT64 : DP_FLOAT32, i, rnd(), DP_REQ_WRITE);
                memcpy(c, ref, es * csz);
                dp_gemm(is64 ? DP_FLOAT64 : DP_FLOAT32, ta, tb, m, n, kk, a, ta ? m : kk, b, tb ? kk : n, 1.0, ref, n);
                for (k = 0; k < 3; k++)
                    for (w = 0; w < 5; w++) {
                        dp_engine *e = make(kinds[k], workers[w]);
                        unsigned char *c2 = (unsigned char *)malloc(es * csz);
                        CHECK(e != NULL);
                        memcpy(c2, c, es * csz);
                        dp_gemm_on(e, is64 ? DP_FLOAT64 : DP_FLOAT32, ta, tb, m, n, kk, a, ta ? m : kk, b, tb ? kk : n, 1.0, c2, n);
                        CHECK(memcmp(c2, ref, es * csz) == 0);
                        free(c2);
                        if (e) CHECK(dp_engine_destroy(e, NULL) == DP_OK);
                    }
                free(a); free(b); free(ref); free(c);
            }
}

/* dp_gemm_pack_b_on: op(B) from a pack function gives dp_gemm_on's bits
   for the same op(B) in an array (tb 0) or transposed in one (tb 1: where
   dp_gemm_on reads it in place, the narrow float32 path, pack_b_on stages
   it), with no engine and on 0 to 2 workers, both dtypes, both schedules
   (small A and tiled), edge panels and narrow shapes (n up to 32; k >= 256,
   m <= 256, n k up to 2^19); each call asks for rows and columns inside B
   and w <= nr. */
typedef struct pack_src { const unsigned char *b; int64_t k, n, ldb; size_t es; int bad; } pack_src;
static void pack_from(void *user, int64_t p0, int64_t kc, int64_t j0, int64_t w, int64_t nr, void *out) {
    pack_src *s = (pack_src *)user;
    int64_t p, q;
    if (p0 < 0 || kc < 1 || p0 + kc > s->k || j0 < 0 || w < 1 || w > nr || j0 + w > s->n) { s->bad = 1; return; }
    for (p = 0; p < kc; p++)
        for (q = 0; q < nr; q++) {
            unsigned char *d = (unsigned char *)out + (size_t)(p * nr + q) * s->es;
            if (q < w) memcpy(d, s->b + (size_t)((p0 + p) * s->ldb + j0 + q) * s->es, s->es);
            else memset(d, 0, s->es);
        }
}
static void test_pack_b_same_bits(void) {
    static const int64_t shapes[][3] = {{50, 512, 500}, {20, 576, 25}, {50, 500, 1856}, {7, 33, 3}, {100, 300, 700}, {13, 5000, 40}, {1, 1, 1},
                                        {20, 25, 1500}, {64, 32, 300}, {256, 1000, 512}};
    static const int workers[3] = {DP_NO_THREADS, 1, 2};
    int s, is64, ta, tb, w;
    for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++)
        for (is64 = 0; is64 < 2; is64++)
            for (ta = 0; ta < 2; ta++)
            for (tb = 0; tb < 2; tb++) {
                int64_t m = shapes[s][0], n = shapes[s][1], kk = shapes[s][2], i, p, ldb = n + 3, ldt = kk + 1;
                dp_dtype t = is64 ? DP_FLOAT64 : DP_FLOAT32;
                size_t es = is64 ? 8 : 4, asz = (size_t)(m * kk), bsz = (size_t)(kk * ldb), csz = (size_t)(m * n);
                unsigned char *a = (unsigned char *)malloc(es * asz), *b = (unsigned char *)malloc(es * bsz), *bt = (unsigned char *)malloc(es * (size_t)(n * ldt));
                unsigned char *ref = (unsigned char *)malloc(es * csz), *c = (unsigned char *)malloc(es * csz);
                pack_src src;
                for (i = 0; i < (int64_t)asz; i++) dp__store_elem(a, t, i, rnd(), DP_REQ_WRITE);
                for (i = 0; i < (int64_t)bsz; i++) dp__store_elem(b, t, i, rnd(), DP_REQ_WRITE);
                for (i = 0; i < (int64_t)csz; i++) dp__store_elem(c, t, i, rnd(), DP_REQ_WRITE);
                for (i = 0; i < n; i++)                                  /* B transposed, row i op(B)'s column i */
                    for (p = 0; p < kk; p++) memcpy(bt + (size_t)(i * ldt + p) * es, b + (size_t)(p * ldb + i) * es, es);
                memcpy(ref, c, es * csz);
                if (tb) dp_gemm_on(NULL, t, ta, 1, m, n, kk, a, ta ? m : kk, bt, ldt, 0.5, ref, n);
                else dp_gemm_on(NULL, t, ta, 0, m, n, kk, a, ta ? m : kk, b, ldb, 0.5, ref, n);
                src.b = b; src.k = kk; src.n = n; src.ldb = ldb; src.es = es; src.bad = 0;
                for (w = -1; w < 3; w++) {
                    dp_engine *e = w < 0 ? NULL : make(DP_ENGINE_PERDEVICE, workers[w]);
                    unsigned char *c2 = (unsigned char *)malloc(es * csz);
                    memcpy(c2, c, es * csz);
                    CHECK(dp_gemm_pack_b_on(e, t, ta, tb, m, n, kk, a, ta ? m : kk, pack_from, &src, 0.5, c2, n) == DP_OK);
                    if (memcmp(c2, ref, es * csz) != 0) {
                        fprintf(stderr, "  m %lld n %lld k %lld %s ta %d tb %d workers %d: other bits\n", (long long)m, (long long)n, (long long)kk, is64 ? "f64" : "f32", ta, tb, w);
                        CHECK(0);
                    }
                    free(c2);
                    if (e) CHECK(dp_engine_destroy(e, NULL) == DP_OK);
                }
                CHECK(!src.bad);
                free(a); free(b); free(bt); free(ref); free(c);
            }
    {   /* refused: no pack function, a dtype that is not float */
        float a1 = 1, c1 = 0;
        CHECK(dp_gemm_pack_b_on(NULL, DP_FLOAT32, 0, 0, 1, 1, 1, &a1, 1, NULL, NULL, 0.0, &c1, 1) == DP_ERROR_INVALID_ARGS);
        CHECK(dp_gemm_pack_b_on(NULL, DP_INT32, 0, 0, 1, 1, 1, &a1, 1, pack_from, NULL, 0.0, &c1, 1) == DP_ERROR_INVALID_ARGS);
    }
}

/* Every degenerate size, with the leading dimensions dot passes (a row's
   length, 0 for an empty one) and with 0 for every empty operand's:
   dp_gemm, dp_gemm_on and dp_gemm_pack_b_on (no engine and an engine's),
   both dtypes, every transpose, beta 0 (over NaN), 1 and 0.5. m or n 0
   leaves C alone, k 0 leaves C = beta C; what C holds past m x n is never
   touched. With DEPENG_USE_CBLAS (tests/cblas_check.sh) BLAS, which wants
   every leading dimension >= 1 and >= a row's length whatever the sizes,
   must not see these calls: it refuses them and leaves C as it was. */
static void test_degenerate_sizes(void) {
    static const int64_t shapes[][3] = {{2, 3, 0}, {0, 3, 4}, {2, 0, 4}, {0, 0, 0}, {0, 3, 0}, {2, 0, 0}, {1, 1, 0}};
    static const double betas[3] = {0, 1, 0.5};
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 1);
    int s, is64, ta, tb, bi, how, zero_ld;
    CHECK(e != NULL);
    for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++)
        for (zero_ld = 0; zero_ld < 2; zero_ld++)
        for (is64 = 0; is64 < 2; is64++)
            for (ta = 0; ta < 2; ta++)
                for (tb = 0; tb < 2; tb++)
                    for (bi = 0; bi < 3; bi++)
                        for (how = 0; how < 4; how++) {
                            int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], i;
                            int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
                            dp_dtype t = is64 ? DP_FLOAT64 : DP_FLOAT32;
                            double beta = betas[bi], a[8], b[8], c[8], want[8];
                            float af[8], bf[8], cf[8];
                            pack_src src;
                            int bad = 0;
                            if (zero_ld) {
                                if (m == 0 || k == 0) lda = 0;
                                if (k == 0 || n == 0) ldb = 0;
                                if (m == 0 || n == 0) ldc = 0;
                            }
                            for (i = 0; i < 8; i++) {
                                a[i] = b[i] = af[i] = bf[i] = 7;
                                c[i] = want[i] = cf[i] = (float)(i + 1);
                            }
                            if (beta == 0 && m > 0 && n > 0) { c[0] = cf[0] = NAN; }
                            if (m > 0 && n > 0 && k == 0)
                                for (i = 0; i < m * n; i++) want[i] = beta == 0 ? 0 : beta * (i + 1);
                            src.b = is64 ? (const unsigned char *)b : (const unsigned char *)bf;
                            src.k = k; src.n = n; src.ldb = n; src.es = is64 ? 8 : 4; src.bad = 0;
                            if (how == 0) dp_gemm(t, ta, tb, m, n, k, is64 ? (void *)a : (void *)af, lda, is64 ? (void *)b : (void *)bf, ldb, beta,
                                                  is64 ? (void *)c : (void *)cf, ldc);
                            else if (how == 1) dp_gemm_on(e, t, ta, tb, m, n, k, is64 ? (void *)a : (void *)af, lda, is64 ? (void *)b : (void *)bf, ldb,
                                                          beta, is64 ? (void *)c : (void *)cf, ldc);
                            else CHECK(dp_gemm_pack_b_on(how == 2 ? NULL : e, t, ta, tb, m, n, k, is64 ? (void *)a : (void *)af, lda, pack_from, &src,
                                                         beta, is64 ? (void *)c : (void *)cf, ldc) == DP_OK);
                            for (i = 0; i < 8; i++) {
                                double got = is64 ? c[i] : (double)cf[i];
                                if (!(got == want[i] || (isnan(got) && isnan(want[i])))) bad = 1;
                            }
                            if (bad || src.bad) {
                                fprintf(stderr, "  %s %s ta %d tb %d m %lld n %lld k %lld lda %lld ldb %lld ldc %lld beta %g: C wrong\n",
                                        how == 0 ? "dp_gemm" : how == 1 ? "dp_gemm_on" : how == 2 ? "dp_gemm_pack_b_on" : "dp_gemm_pack_b_on(eng)",
                                        is64 ? "f64" : "f32", ta, tb, (long long)m, (long long)n, (long long)k, (long long)lda, (long long)ldb,
                                        (long long)ldc, beta);
                                CHECK(0);
                            }
                        }
    if (e) CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* dot and its gradient with an inner size 0 (A 2 x 0, B 0 x 3) and, for the
   gradient, an empty output (A 2 x 3, B 3 x 0: og 2 x 0, so dA's inner
   size is 0): write gives zeros, add keeps what was there, every
   transpose. */
static void test_dot_inner_zero(void) {
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    static const char *keys[2] = {"transpose_a", "transpose_b"};
    static const char *tf[2] = {"false", "true"};
    dp_engine *e = make(DP_ENGINE_PERDEVICE, 1);
    float dummy[1] = {0}, got[6], pre[6] = {1, 2, 3, 4, 5, 6};
    int ta, tb, add;
    CHECK(e != NULL);
    if (!e) return;
    for (ta = 0; ta < 2; ta++)
        for (tb = 0; tb < 2; tb++)
            for (add = 0; add < 2; add++) {
                const char *vals[2];
                dp_req req[2];
                dp_shape sa, sb, sy, sa3, sb3, sog;
                dp_ndarray *in[3] = {NULL, NULL, NULL}, *y = NULL, *g[2] = {NULL, NULL};
                int i, ok = 1;
                vals[0] = tf[ta]; vals[1] = tf[tb];
                req[0] = req[1] = add ? DP_REQ_ADD : DP_REQ_WRITE;
                /* forward: (2 x 0)(0 x 3) */
                memset(&sa, 0, sizeof sa); sa.ndim = 2; sa.dims[ta ? 1 : 0] = 2; sa.dims[ta ? 0 : 1] = 0;
                memset(&sb, 0, sizeof sb); sb.ndim = 2; sb.dims[tb ? 1 : 0] = 0; sb.dims[tb ? 0 : 1] = 3;
                memset(&sy, 0, sizeof sy); sy.ndim = 2; sy.dims[0] = 2; sy.dims[1] = 3;
                CHECK(dp_nd_from_host(e, &sa, DP_FLOAT32, cpu, dummy, &in[0]) == DP_OK);
                CHECK(dp_nd_from_host(e, &sb, DP_FLOAT32, cpu, dummy, &in[1]) == DP_OK);
                CHECK(dp_nd_from_host(e, &sy, DP_FLOAT32, cpu, pre, &y) == DP_OK);
                CHECK(invoke_str(e, "dot", 2, in, 2, keys, vals, 0, 1, &y, req) == DP_OK);
                CHECK(dp_nd_read(y, got, sizeof got, NULL) == DP_OK);
                for (i = 0; i < 6; i++) ok &= got[i] == (add ? pre[i] : 0.0f);
                if (!ok) fprintf(stderr, "  dot ta %d tb %d %s: (2 x 0)(0 x 3) wrong\n", ta, tb, add ? "add" : "write");
                CHECK(ok);
                dp_nd_release(in[0]); dp_nd_release(in[1]); dp_nd_release(y);
                /* gradient: A 2 x 3, B 3 x 0, og 2 x 0; dA 2 x 3 from an inner size 0 */
                memset(&sa3, 0, sizeof sa3); sa3.ndim = 2; sa3.dims[ta ? 1 : 0] = 2; sa3.dims[ta ? 0 : 1] = 3;
                memset(&sb3, 0, sizeof sb3); sb3.ndim = 2; sb3.dims[tb ? 1 : 0] = 3; sb3.dims[tb ? 0 : 1] = 0;
                memset(&sog, 0, sizeof sog); sog.ndim = 2; sog.dims[0] = 2; sog.dims[1] = 0;
                CHECK(dp_nd_from_host(e, &sog, DP_FLOAT32, cpu, dummy, &in[0]) == DP_OK);
                CHECK(dp_nd_from_host(e, &sa3, DP_FLOAT32, cpu, pre, &in[1]) == DP_OK);
                CHECK(dp_nd_from_host(e, &sb3, DP_FLOAT32, cpu, dummy, &in[2]) == DP_OK);
                CHECK(dp_nd_from_host(e, &sa3, DP_FLOAT32, cpu, pre, &g[0]) == DP_OK);
                CHECK(dp_nd_from_host(e, &sb3, DP_FLOAT32, cpu, dummy, &g[1]) == DP_OK);
                CHECK(invoke_str(e, "_backward_dot", 3, in, 2, keys, vals, 0, 2, g, req) == DP_OK);
                CHECK(dp_nd_read(g[0], got, sizeof got, NULL) == DP_OK);
                ok = 1;
                for (i = 0; i < 6; i++) ok &= got[i] == (add ? pre[i] : 0.0f);
                if (!ok) fprintf(stderr, "  _backward_dot ta %d tb %d %s: dA from og 2 x 0 wrong\n", ta, tb, add ? "add" : "write");
                CHECK(ok);
                for (i = 0; i < 3; i++) dp_nd_release(in[i]);
                dp_nd_release(g[0]); dp_nd_release(g[1]);
            }
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* the dot operator (its kernel splits the product over the engine's
   workers) and its gradient: the same bits on 0, 1 and 2 workers */
static void dot_bits(dp_engine *e, float *out, float *ga, float *gb) {
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_shape sa, sb;
    dp_ndarray *in[3], *y = NULL, *og = NULL, *g[2] = {NULL, NULL};
    float *da = (float *)malloc(sizeof(float) * 300 * 200), *db = (float *)malloc(sizeof(float) * 200 * 150);
    const char *key = "transpose_b", *val = "false";
    int i;
    g_rng = 12345;
    for (i = 0; i < 300 * 200; i++) da[i] = (float)rnd();
    for (i = 0; i < 200 * 150; i++) db[i] = (float)rnd();
    memset(&sa, 0, sizeof sa); sa.ndim = 2; sa.dims[0] = 300; sa.dims[1] = 200;
    memset(&sb, 0, sizeof sb); sb.ndim = 2; sb.dims[0] = 200; sb.dims[1] = 150;
    CHECK(dp_nd_from_host(e, &sa, DP_FLOAT32, cpu, da, &in[1]) == DP_OK);
    CHECK(dp_nd_from_host(e, &sb, DP_FLOAT32, cpu, db, &in[2]) == DP_OK);
    CHECK(invoke_str(e, "dot", 2, in + 1, 1, &key, &val, 0, 1, &y, NULL) == DP_OK);
    CHECK(dp_nd_read(y, out, sizeof(float) * 300 * 150, NULL) == DP_OK);
    in[0] = y;
    CHECK(invoke_str(e, "_backward_dot", 3, in, 1, &key, &val, 0, 2, g, NULL) == DP_OK);
    CHECK(dp_nd_read(g[0], ga, sizeof(float) * 300 * 200, NULL) == DP_OK);
    CHECK(dp_nd_read(g[1], gb, sizeof(float) * 200 * 150, NULL) == DP_OK);
    dp_nd_release(in[1]); dp_nd_release(in[2]); dp_nd_release(y); dp_nd_release(g[0]); dp_nd_release(g[1]);
    (void)og;
    free(da); free(db);
}
static void test_dot_operator_bitwise(void) {
    static const int workers[3] = {DP_NO_THREADS, 1, 2};
    float *ref = (float *)malloc(sizeof(float) * 300 * 150), *out = (float *)malloc(sizeof(float) * 300 * 150);
    float *rga = (float *)malloc(sizeof(float) * 300 * 200), *ga = (float *)malloc(sizeof(float) * 300 * 200);
    float *rgb = (float *)malloc(sizeof(float) * 200 * 150), *gb = (float *)malloc(sizeof(float) * 200 * 150);
    int w;
    for (w = 0; w < 3; w++) {
        dp_engine *e = make(DP_ENGINE_PERDEVICE, workers[w]);
        CHECK(e != NULL);
        if (!e) continue;
        dot_bits(e, w ? out : ref, w ? ga : rga, w ? gb : rgb);
        if (w) CHECK(memcmp(out, ref, sizeof(float) * 300 * 150) == 0 && memcmp(ga, rga, sizeof(float) * 300 * 200) == 0 &&
                     memcmp(gb, rgb, sizeof(float) * 200 * 150) == 0);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
    free(ref); free(out); free(rga); free(ga); free(rgb); free(gb);
}

/* The updates: float32 computed in float32 (each element as the float
   expression below computes it; the old loop computed in double and
   rounded once, which differs in the last bit for some elements), float64
   exactly as dp__opt_step, and the same bits on 0, 1 and 2 workers for an
   array split over the range loop (n over DP__PAR_MIN). */
#define UPD_N 200003
static void run_update(dp_engine *e, const char *op, dp_dtype t, int nstate, void *w, const void *g, void *s1, void *s2) {
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    static const char *keys[] = {"lr", "wd", "rescale_grad", "clip_gradient", "momentum"};
    static const char *vals[] = {"0.1", "0.01", "0.5", "0.3", "0.9"};
    static const char *akeys[] = {"lr", "wd", "rescale_grad", "clip_gradient", "t"};
    static const char *avals[] = {"0.01", "0.001", "0.7", "-1", "3"};
    dp_shape s;
    dp_ndarray *in[4] = {NULL, NULL, NULL, NULL}, *out[1];
    size_t bytes = (size_t)UPD_N * (t == DP_FLOAT32 ? 4 : 8);
    int i, adam = nstate == 2;
    memset(&s, 0, sizeof s); s.ndim = 1; s.dims[0] = UPD_N;
    CHECK(dp_nd_from_host(e, &s, t, cpu, w, &in[0]) == DP_OK);
    CHECK(dp_nd_from_host(e, &s, t, cpu, g, &in[1]) == DP_OK);
    if (nstate > 0) CHECK(dp_nd_from_host(e, &s, t, cpu, s1, &in[2]) == DP_OK);
    if (nstate > 1) CHECK(dp_nd_from_host(e, &s, t, cpu, s2, &in[3]) == DP_OK);
    out[0] = in[0];
    CHECK(invoke_str(e, op, 2 + nstate, in, adam ? 5 : nstate ? 5 : 4, adam ? akeys : keys, adam ? avals : vals, 0, 1, out, NULL) == DP_OK);
    CHECK(dp_nd_read(in[0], w, bytes, NULL) == DP_OK);
    if (nstate > 0) CHECK(dp_nd_read(in[2], s1, bytes, NULL) == DP_OK);
    if (nstate > 1) CHECK(dp_nd_read(in[3], s2, bytes, NULL) == DP_OK);
    for (i = 0; i < 4; i++) if (in[i]) dp_nd_release(in[i]);
}
static void test_updates(void) {
    static const char *ops[3] = {"sgd_update", "sgd_mom_update", "adam_update"};
    static const int workers[3] = {DP_NO_THREADS, 1, 2};
    int o, is64, w, i, diff_from_double = 0;
    for (o = 0; o < 3; o++)
        for (is64 = 0; is64 < 2; is64++) {
            dp_dtype t = is64 ? DP_FLOAT64 : DP_FLOAT32;
            size_t es = is64 ? 8 : 4, bytes = es * UPD_N;
            unsigned char *w0 = (unsigned char *)malloc(bytes), *g = (unsigned char *)malloc(bytes), *m0 = (unsigned char *)malloc(bytes);
            unsigned char *v0 = (unsigned char *)malloc(bytes), *rw = (unsigned char *)malloc(bytes), *rm = (unsigned char *)malloc(bytes);
            unsigned char *rv = (unsigned char *)malloc(bytes), *ww = (unsigned char *)malloc(bytes), *mm = (unsigned char *)malloc(bytes);
            unsigned char *vv = (unsigned char *)malloc(bytes);
            int nstate = o;
            for (i = 0; i < UPD_N; i++) {
                dp__store_elem(w0, t, i, rnd(), DP_REQ_WRITE); dp__store_elem(g, t, i, rnd() * 2, DP_REQ_WRITE);
                dp__store_elem(m0, t, i, rnd() * 0.1, DP_REQ_WRITE); dp__store_elem(v0, t, i, fabs(rnd()) * 0.01, DP_REQ_WRITE);
            }
            /* the reference, element by element */
            memcpy(rw, w0, bytes); memcpy(rm, m0, bytes); memcpy(rv, v0, bytes);
            for (i = 0; i < UPD_N; i++) {
                if (is64) {
                    double p[7] = {0.1, 0.01, 0.5, 0.3, 0.9, 0, 0}, a = ((double *)rm)[i], b = ((double *)rv)[i];
                    dp_params ps;
                    if (o == 2) {
                        p[0] = 0.01; p[1] = 0.001; p[2] = 0.7; p[3] = -1; p[4] = 0.9; p[5] = 0.999; p[6] = 1e-8;
                        memset(&ps, 0, sizeof ps); ps.count = 8; ps.v[7].i = 3;
                        dp__opt_bias_correct(DP__OPT_ADAM, &ps, p);
                    }
                    ((double *)rw)[i] = dp__opt_step(o, ((double *)rw)[i], ((double *)g)[i], &a, &b, p);
                    ((double *)rm)[i] = a; ((double *)rv)[i] = b;
                } else {
                    float *W = (float *)rw + i, G = ((float *)g)[i], *M = (float *)rm + i, *V = (float *)rv + i;
                    double dw = *W, dm = *M, dv = *V, pd[7] = {0.1, 0.01, 0.5, 0.3, 0.9, 0, 0};
                    if (o < 2) {
                        float gi = G * 0.5f;
                        gi = gi < -0.3f ? -0.3f : gi > 0.3f ? 0.3f : gi;
                        if (o == 0) *W = *W - 0.1f * (gi + 0.01f * *W);
                        else { *M = 0.9f * *M - 0.1f * (gi + 0.01f * *W); *W = *W + *M; }
                    } else {
                        double lr = 0.01 * sqrt(1 - pow(0.999, 3)) / (1 - pow(0.9, 3));
                        float gi = G * 0.7f + 0.001f * *W;
                        *M = 0.9f * *M + (float)(1 - 0.9) * gi;
                        *V = 0.999f * *V + (float)(1 - 0.999) * gi * gi;
                        *W = *W - (float)lr * *M / (sqrtf(*V) + 1e-8f);
                        pd[0] = lr; pd[1] = 0.001; pd[2] = 0.7; pd[3] = -1; pd[4] = 0.9; pd[5] = 0.999; pd[6] = 1e-8;
                    }
                    dw = dp__opt_step(o, dw, G, &dm, &dv, pd);
                    if ((float)dw != *W) diff_from_double++;
                }
            }
            for (w = 0; w < 3; w++) {
                dp_engine *e = make(DP_ENGINE_PERDEVICE, workers[w]);
                CHECK(e != NULL);
                if (!e) continue;
                memcpy(ww, w0, bytes); memcpy(mm, m0, bytes); memcpy(vv, v0, bytes);
                run_update(e, ops[o], t, nstate, ww, g, mm, vv);
                CHECK(memcmp(ww, rw, bytes) == 0);
                if (nstate > 0) CHECK(memcmp(mm, rm, bytes) == 0);
                if (nstate > 1) CHECK(memcmp(vv, rv, bytes) == 0);
                CHECK(dp_engine_destroy(e, NULL) == DP_OK);
            }
            free(w0); free(g); free(m0); free(v0); free(rw); free(rm); free(rv); free(ww); free(mm); free(vv);
        }
    CHECK(diff_from_double > 0);    /* the float32 reference is not the double one: the test tells them apart */
}

/* the updates' loops give the same bits with and without AVX2 (the
   portable loops run on CPUs without it; the AVX2 ones use no FMA) */
static void test_update_loops_same_on_every_cpu(void) {
#ifdef DP__GEMM_X86
    enum { N = 1037 };
    static float w[2][N], g[N], m[2][N], v[2][N];
    float p[9] = {0.1f, 0.01f, 0.5f, 0.3f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.001f};
    int i, kind, r;
    if (!dp__cpu_avx2_fma()) return;
    for (kind = 0; kind < 3; kind++) {
        for (i = 0; i < N; i++) {
            w[0][i] = w[1][i] = (float)rnd(); g[i] = (float)rnd() * 2;
            m[0][i] = m[1][i] = (float)rnd() * 0.1f; v[0][i] = v[1][i] = (float)fabs(rnd()) * 0.01f;
        }
        g[5] = NAN; g[6] = INFINITY; g[7] = -INFINITY;
        for (r = 0; r < 2; r++) {
            if (kind == 0) { if (r) dp__upd_sgd_f32_avx2(N, w[r], g, p); else dp__upd_sgd_f32(N, w[r], g, p); }
            else if (kind == 1) { if (r) dp__upd_sgd_mom_f32_avx2(N, w[r], g, m[r], p); else dp__upd_sgd_mom_f32(N, w[r], g, m[r], p); }
            else { if (r) dp__upd_adam_f32_avx2v(N, w[r], g, m[r], v[r], p); else dp__upd_adam_f32(N, w[r], g, m[r], v[r], p); }
        }
        CHECK(memcmp(w[0], w[1], sizeof w[0]) == 0 && memcmp(m[0], m[1], sizeof m[0]) == 0 && memcmp(v[0], v[1], sizeof v[0]) == 0);
    }
#endif
}

/* the float32 element-wise fast paths (unary, scalar, binary of one shape)
   split over the range loop: every element computed as one loop computes
   it, on 0, 1 and 2 workers */
#define EW_N 300007
static void test_elementwise_split(void) {
    static const int workers[3] = {DP_NO_THREADS, 1, 2};
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    float *x = (float *)malloc(sizeof(float) * EW_N), *z = (float *)malloc(sizeof(float) * EW_N);
    float *got = (float *)malloc(sizeof(float) * EW_N), *want = (float *)malloc(sizeof(float) * EW_N);
    int w, op, i;
    for (i = 0; i < EW_N; i++) { x[i] = (float)rnd() * 3; z[i] = (float)rnd(); }
    for (w = 0; w < 3; w++) {
        dp_engine *e = make(DP_ENGINE_PERDEVICE, workers[w]);
        dp_shape s;
        dp_ndarray *in[2] = {NULL, NULL};
        CHECK(e != NULL);
        if (!e) continue;
        memset(&s, 0, sizeof s); s.ndim = 1; s.dims[0] = EW_N;
        CHECK(dp_nd_from_host(e, &s, DP_FLOAT32, cpu, x, &in[0]) == DP_OK);
        CHECK(dp_nd_from_host(e, &s, DP_FLOAT32, cpu, z, &in[1]) == DP_OK);
        for (op = 0; op < 3; op++) {
            dp_ndarray *y = NULL;
            const char *name = op == 0 ? "tanh" : op == 1 ? "mul_scalar" : "maximum";
            CHECK(invoke_str(e, name, op == 2 ? 2 : 1, in, 0, NULL, NULL, 1.5, 1, &y, NULL) == DP_OK);
            CHECK(dp_nd_read(y, got, sizeof(float) * EW_N, NULL) == DP_OK);
            for (i = 0; i < EW_N; i++)
                want[i] = op == 0 ? dp__tanhf_f32(x[i]) : op == 1 ? (float)((double)x[i] * 1.5) : (float)dp__f_maximum(x[i], z[i]);
            CHECK(memcmp(got, want, sizeof(float) * EW_N) == 0);
            dp_nd_release(y);
        }
        dp_nd_release(in[0]); dp_nd_release(in[1]);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
    free(x); free(z); free(got); free(want);
}

/* ---- the workspaces --------------------------------------------------------
   The GEMM's workspaces come from the engine's allocator and are kept for
   the next call: after the first call a product of the same size or smaller
   allocates nothing. A case: operands at random, and the bits dp_gemm
   (no engine, its own memory) gives. */
static dp_engine *make_counting(dp_engine_type type, int workers) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = workers; d.ignore_env = 1; d.logger.func = quiet_logger;
    d.allocator.alloc = failing_alloc; d.allocator.free = failing_free;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}
typedef struct ws_case {
    int is64, ta, tb;
    int64_t m, n, k;
    unsigned char *a, *b, *c0, *ref, *c;
    size_t es;
    pack_src src;
} ws_case;
/* packed small A, tiled with three slices, LeNet's conv1 weight gradient
   (narrow: staged by dp_gemm_pack_b_on), edges of every tile; the first is
   the smallest workspace */
static const int64_t ws_shapes[4][5] = {{13, 37, 257, 1, 1}, {64, 128, 300, 0, 0}, {200, 700, 600, 1, 0}, {20, 25, 9216, 0, 1}};
static void ws_case_make(ws_case *w, int is64, int s) {
    int64_t i, p, ka;
    dp_dtype t = is64 ? DP_FLOAT64 : DP_FLOAT32;
    size_t asz, csz;
    memset(w, 0, sizeof *w);
    w->is64 = is64; w->m = ws_shapes[s][0]; w->n = ws_shapes[s][1]; w->k = ws_shapes[s][2];
    w->ta = (int)ws_shapes[s][3]; w->tb = (int)ws_shapes[s][4]; w->es = is64 ? 8 : 4;
    ka = w->m * w->k; asz = (size_t)ka; csz = (size_t)(w->m * w->n);
    w->a = (unsigned char *)malloc(w->es * asz);
    w->b = (unsigned char *)malloc(w->es * (size_t)(w->k * w->n));        /* op(B), k x n */
    w->c0 = (unsigned char *)malloc(w->es * csz); w->ref = (unsigned char *)malloc(w->es * csz); w->c = (unsigned char *)malloc(w->es * csz);
    for (i = 0; i < ka; i++) dp__store_elem(w->a, t, i, rnd(), DP_REQ_WRITE);
    for (i = 0; i < w->k * w->n; i++) dp__store_elem(w->b, t, i, rnd(), DP_REQ_WRITE);
    for (i = 0; i < (int64_t)csz; i++) dp__store_elem(w->c0, t, i, rnd(), DP_REQ_WRITE);
    memcpy(w->ref, w->c0, w->es * csz);
    if (w->tb) {   /* dp_gemm on B's transpose: the bits dp_gemm_pack_b_on gives for tb 1 */
        unsigned char *bt = (unsigned char *)malloc(w->es * (size_t)(w->k * w->n));
        for (i = 0; i < w->n; i++)
            for (p = 0; p < w->k; p++) memcpy(bt + (size_t)(i * w->k + p) * w->es, w->b + (size_t)(p * w->n + i) * w->es, w->es);
        dp_gemm(t, w->ta, 1, w->m, w->n, w->k, w->a, w->ta ? w->m : w->k, bt, w->k, 0.5, w->ref, w->n);
        free(w->b); w->b = bt;     /* the array dp_gemm_on reads; pack reads op(B) from the copy below */
        w->src.b = (unsigned char *)malloc(w->es * (size_t)(w->k * w->n));
        for (i = 0; i < w->n; i++)
            for (p = 0; p < w->k; p++) memcpy((unsigned char *)w->src.b + (size_t)(p * w->n + i) * w->es, bt + (size_t)(i * w->k + p) * w->es, w->es);
    } else {
        dp_gemm(t, w->ta, 0, w->m, w->n, w->k, w->a, w->ta ? w->m : w->k, w->b, w->n, 0.5, w->ref, w->n);
        w->src.b = w->b;
    }
    w->src.k = w->k; w->src.n = w->n; w->src.ldb = w->n; w->src.es = w->es; w->src.bad = 0;
}
static void ws_case_free(ws_case *w) {
    if (w->src.b != w->b) free((void *)w->src.b);
    free(w->a); free(w->b); free(w->c0); free(w->ref); free(w->c);
}
static size_t ws_c_bytes(const ws_case *w) { return w->es * (size_t)(w->m * w->n); }
/* dp_gemm_on on e: dp_gemm's bits (1 when so) */
static int ws_run(dp_engine *e, ws_case *w) {
    memcpy(w->c, w->c0, ws_c_bytes(w));
    dp_gemm_on(e, w->is64 ? DP_FLOAT64 : DP_FLOAT32, w->ta, w->tb, w->m, w->n, w->k, w->a, w->ta ? w->m : w->k, w->b, w->tb ? w->k : w->n, 0.5, w->c, w->n);
    return memcmp(w->c, w->ref, ws_c_bytes(w)) == 0;
}
/* dp_gemm_pack_b_on on e: its result, and C holding dp_gemm's bits (DP_OK)
   or untouched (an error) */
static dp_result ws_run_packed(dp_engine *e, ws_case *w, int *same) {
    dp_result r;
    memcpy(w->c, w->c0, ws_c_bytes(w));
    r = dp_gemm_pack_b_on(e, w->is64 ? DP_FLOAT64 : DP_FLOAT32, w->ta, w->tb, w->m, w->n, w->k, w->a, w->ta ? w->m : w->k, pack_from, &w->src, 0.5, w->c, w->n);
    *same = memcmp(w->c, r == DP_OK ? w->ref : w->c0, ws_c_bytes(w)) == 0 && !w->src.bad;
    return r;
}
static int ws_num_kept(dp_engine *e) {
    dp__nd_state *s = dp__nd_state_of(e);
    int n;
    if (!s) return -1;
    dp__spin_lock(&s->gemm_lock); n = s->num_gemm_ws; dp__spin_unlock(&s->gemm_lock);
    return n;
}
/* what a warm engine keeps: one per thread that can run its products */
static int ws_target(dp_engine *e) { return (int)dp__load(&e->worker_counter, DP__RELAXED) + 1; }
#define WS_CASES 8
static void ws_cases_make(ws_case *w) { int i; for (i = 0; i < WS_CASES; i++) ws_case_make(&w[i], i & 1, i / 2); }
static void ws_cases_free(ws_case *w) { int i; for (i = 0; i < WS_CASES; i++) ws_case_free(&w[i]); }
/* every case through both calls: 1 when all gave dp_gemm's bits */
static int ws_run_all(dp_engine *e, ws_case *w) {
    int i, ok = 1, same;
    for (i = 0; i < WS_CASES; i++) {
        if (!ws_run(e, &w[i])) { fprintf(stderr, "  case %d: dp_gemm_on other bits\n", i); ok = 0; }
        if (ws_run_packed(e, &w[i], &same) != DP_OK || !same) { fprintf(stderr, "  case %d: dp_gemm_pack_b_on failed or other bits\n", i); ok = 0; }
    }
    return ok;
}
typedef struct ws_op_arg { ws_case *w; int ok; } ws_op_arg;
static int ws_op(dp_run_ctx *rc, void *arg) {
    ws_op_arg *o = (ws_op_arg *)arg;
    o->ok = ws_run_all(rc->engine, o->w);
    return 0;
}
/* The first call of a new largest size takes workspaces from the engine's
   allocator (one per thread that can run it); later calls (the caller's
   thread, inside an operation) take kept ones: nothing allocated, dp_gemm's
   bits; destroy gives all back. */
static void test_workspace_kept(void) {
    static const dp_engine_type kinds[3] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    ws_case w[WS_CASES];
    int k, round;
    ws_cases_make(w);
    for (k = 0; k < 3; k++) {
        dp_engine *e = make_counting(kinds[k], 2);
        long before, first;
        ws_op_arg o;
        dp_var v;
        CHECK(e != NULL);
        if (!e) continue;
        before = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
        CHECK(ws_run_all(e, w));
        first = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
        CHECK(first > before);                       /* the engine's allocator gave the workspace */
        o.w = w; o.ok = 0;
        v = dp_var_create(e);
        CHECK(dp_push_sync(e, ws_op, &o, NULL, 0, &v, 1) == DP_OK);   /* the first push warms the engine's own pools */
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(o.ok);
        first = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
        for (round = 0; round < 2; round++) CHECK(ws_run_all(e, w));
        o.ok = 0;
        CHECK(dp_push_sync(e, ws_op, &o, NULL, 0, &v, 1) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(o.ok);
        if (__atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) != first)
            fprintf(stderr, "  engine %d: %ld allocations once warm\n", k, __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) - first);
        CHECK(__atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) == first);
        CHECK(ws_num_kept(e) == ws_target(e));       /* one per thread, all idle */
        CHECK(dp_var_delete(e, v) == DP_OK);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    }
    ws_cases_free(w);
}
/* Two threads and an operation on one engine at once, and a second engine:
   each call its own workspace, dp_gemm's bits (ThreadSanitizer watches the
   workspaces change hands). */
typedef struct ws_thread_arg { dp_engine *e; ws_case *w; int ok; } ws_thread_arg;
static void *ws_thread(void *arg) {
    ws_thread_arg *t = (ws_thread_arg *)arg;
    int r;
    t->ok = 1;
    for (r = 0; r < 3; r++) t->ok &= ws_run_all(t->e, t->w);
    return NULL;
}
static void test_workspace_threads(void) {
    ws_case w[4][WS_CASES];   /* each thread's C its own */
    dp_engine *e = make_counting(DP_ENGINE_POOLED, 2), *e2 = make_counting(DP_ENGINE_PERDEVICE, 1);
    ws_thread_arg t[3];
    pthread_t th[3];
    ws_op_arg o;
    dp_var v;
    int i;
    CHECK(e != NULL && e2 != NULL);
    if (!e || !e2) return;
    for (i = 0; i < 4; i++) ws_cases_make(w[i]);
    o.w = w[3]; o.ok = 0;
    v = dp_var_create(e);
    for (i = 0; i < 3; i++) { t[i].e = i == 2 ? e2 : e; t[i].w = w[i]; t[i].ok = 0; }
    for (i = 0; i < 3; i++) CHECK(pthread_create(&th[i], NULL, ws_thread, &t[i]) == 0);
    CHECK(dp_push_sync(e, ws_op, &o, NULL, 0, &v, 1) == DP_OK);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    for (i = 0; i < 3; i++) { pthread_join(th[i], NULL); CHECK(t[i].ok); }
    CHECK(o.ok);
    CHECK(ws_num_kept(e) >= ws_target(e) && ws_num_kept(e2) >= ws_target(e2));
    CHECK(dp_var_delete(e, v) == DP_OK);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    CHECK(dp_engine_destroy(e2, NULL) == DP_OK);
    CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    for (i = 0; i < 4; i++) ws_cases_free(w[i]);
}
/* dp_storage_release_pool on the CPU gives the idle workspaces back to the
   allocator (their bytes exactly) but not one held by a product running
   now, which is kept when given back; with none held the next products
   make one per thread again. dp_gemm's bits throughout. */
static int ws_total(dp_engine *e) {
    dp__nd_state *s = dp__nd_state_of(e);
    int n;
    dp__spin_lock(&s->gemm_lock); n = s->gemm_ws_total; dp__spin_unlock(&s->gemm_lock);
    return n;
}
static void test_workspace_release_pool(void) {
    static const dp_engine_type kinds[2] = {DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    ws_case w[WS_CASES];
    int k;
    ws_cases_make(w);
    for (k = 0; k < 2; k++) {
        dp_engine *e = make_counting(kinds[k], 2);
        dp__gemm_ws *held, *i;
        dp_storage_stats st;
        long live;
        size_t idle = 0;
        int n;
        CHECK(e != NULL);
        if (!e) continue;
        CHECK(dp_storage_stats_get(e, cpu, &st) == DP_OK);        /* the CPU's manager made before the counting below */
        CHECK(ws_run_all(e, w));
        CHECK((n = ws_num_kept(e)) == ws_target(e) && n >= 2);
        held = dp__gemm_ws_get(e, 1);                              /* as a product running now holds one */
        CHECK(held != NULL && ws_num_kept(e) == n - 1);
        if (!held) { dp_engine_destroy(e, NULL); continue; }
        {
            dp__nd_state *s = dp__nd_state_of(e);
            dp__spin_lock(&s->gemm_lock);
            for (i = s->gemm_ws; i; i = i->next) idle += sizeof *i + i->cap;
            dp__spin_unlock(&s->gemm_lock);
        }
        live = __atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE);
        CHECK(dp_storage_release_pool(e, cpu) == DP_OK);
        CHECK(ws_num_kept(e) == 0 && ws_total(e) == 1);
        CHECK(idle > 0 && __atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == live - (long)idle);
        memset(held + 1, 0x5a, held->cap);                         /* still the holder's to write */
        dp__gemm_ws_put(e, held);
        CHECK(ws_num_kept(e) == 1 && ws_total(e) == 1);
        CHECK(ws_run_all(e, w));
        CHECK(dp_storage_release_pool(e, cpu) == DP_OK);           /* none held */
        CHECK(ws_num_kept(e) == 0 && ws_total(e) == 0);
        CHECK(ws_run_all(e, w));
        CHECK(ws_num_kept(e) == ws_target(e));
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
    }
    ws_cases_free(w);
}
/* The engine's allocator failing the workspace: dp_gemm_on computes on the
   stack and gives the same bits (the portable kernel's too); dp_gemm_pack_b_on
   returns DP_ERROR_OUT_OF_MEMORY and leaves C alone. A workspace too small
   whose growth fails is kept, and serves the next small call. */
static void test_workspace_out_of_memory(void) {
    static const dp_engine_type kinds[2] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED};
    ws_case w[WS_CASES];
    int k, i, same, warm;
    ws_cases_make(w);
    for (k = 0; k < 2; k++)
        for (warm = 0; warm < 2; warm++) {
            dp_engine *e = make_counting(kinds[k], 2);
            long calls;
            CHECK(e != NULL);
            if (!e) continue;
            if (warm) {   /* the smallest workspaces, kept (with DEPENG_USE_CBLAS only dp_gemm_pack_b_on takes one) */
                CHECK(ws_run(e, &w[0]) && ws_run_packed(e, &w[0], &same) == DP_OK && same);
                CHECK(ws_num_kept(e) == ws_target(e));
            }
            __atomic_store_n(&g_fail_from, __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) + 1, __ATOMIC_RELEASE);
            for (i = warm ? 2 : 0; i < WS_CASES; i++) {
                if (!ws_run(e, &w[i])) { fprintf(stderr, "  engine %d, case %d: other bits without memory\n", k, i); CHECK(0); }
                CHECK(ws_run_packed(e, &w[i], &same) == DP_ERROR_OUT_OF_MEMORY);
                CHECK(same);
            }
            {   /* the portable kernel's serial path */
                ws_case *c = &w[4];
                float *got = (float *)malloc(ws_c_bytes(c)), *want = (float *)malloc(ws_c_bytes(c));
                memcpy(got, c->c0, ws_c_bytes(c)); memcpy(want, c->c0, ws_c_bytes(c));
                CHECK(!c->is64);
                dp__gemm2_f32(NULL, 0, c->ta, c->tb, c->m, c->n, c->k, 1.0f, (const float *)c->a, c->ta ? c->m : c->k, (const float *)c->b, c->n, 0.5f, want, c->n, NULL, NULL);
                dp__gemm2_f32(e, 0, c->ta, c->tb, c->m, c->n, c->k, 1.0f, (const float *)c->a, c->ta ? c->m : c->k, (const float *)c->b, c->n, 0.5f, got, c->n, NULL, NULL);
                CHECK(memcmp(got, want, ws_c_bytes(c)) == 0);
                free(got); free(want);
            }
            __atomic_store_n(&g_fail_from, 0, __ATOMIC_RELEASE);
            CHECK(__atomic_load_n(&g_alloc_failures, __ATOMIC_ACQUIRE) > 0);
            calls = __atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE);
            if (warm) {
                CHECK(ws_run(e, &w[0]) && ws_run_packed(e, &w[0], &same) == DP_OK && same);
                CHECK(__atomic_load_n(&g_alloc_calls, __ATOMIC_ACQUIRE) == calls);   /* the kept one served */
            }
            CHECK(ws_run_all(e, w));                                      /* memory again: all computed */
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
            CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
        }
    ws_cases_free(w);
}

int main(void) {
    static const test_case tests[] = {
        {"dp_gemm against a naive product: shapes, edges, transposes, alpha, beta, both kernels, both dtypes", test_against_naive},
        {"dp_gemm against a naive product: random shapes 1..70 and the nets' shapes, every transpose", test_random_and_net_shapes},
        {"m or n 0 writes nothing, k 0 scales C by beta", test_empty_and_k0},
        {"dp_gemm_on bitwise the same with no engine and 0 to 4 workers, every engine kind", test_bitwise_any_workers},
        {"dot and its gradient bitwise the same on 0, 1, 2 workers", test_dot_operator_bitwise},
        {"dp_gemm_pack_b_on: B from a pack function, dp_gemm_on's bits on 0, 1, 2 workers", test_pack_b_same_bits},
        {"m, n or k 0, leading dimensions as dot passes them and 0: every entry point, transpose, dtype, beta 0, 1, 0.5", test_degenerate_sizes},
        {"dot and its gradient with an inner size 0: write gives zeros, add keeps C", test_dot_inner_zero},
        {"updates: float32 in float32, float64 unchanged, bitwise the same on 0, 1, 2 workers", test_updates},
        {"the updates' loops: the same bits with and without AVX2, NaN and infinities included", test_update_loops_same_on_every_cpu},
        {"float32 element-wise ops split over the range loop: every element as one loop computes it", test_elementwise_split},
        {"the workspaces: from the engine's allocator, kept, nothing allocated once warm, destroy frees them", test_workspace_kept},
        {"the workspaces: two threads, an operation and a second engine at once", test_workspace_threads},
        {"the workspaces: dp_storage_release_pool frees the idle ones, not one in use", test_workspace_release_pool},
        {"the workspaces out of memory: dp_gemm_on the same bits, dp_gemm_pack_b_on DP_ERROR_OUT_OF_MEMORY", test_workspace_out_of_memory},
    };
    return run_tests("gemm", tests, (int)(sizeof tests / sizeof tests[0]));
}
