/* tests/mpi_kv_init.c - dp_kv_init on a dist_sync store when the ranks
   initialise differently (tests/mpi_check.sh runs it with 2 and 4 ranks):
     1. different values: right after dp_kv_init every rank pulls rank 0's
        value, and three momentum-SGD steps of rank-dependent gradients leave
        the same weights on every rank: exactly the ones computed here (the
        numbers are small dyadic fractions, so float32 holds every step
        exactly);
     2. a different shape on the last rank, a different dtype, a different
        key, a NULL value on rank 1 (a failure of that rank alone): each
        dp_kv_init fails on every rank with the same code (the first three
        DP_ERROR_INVALID_ARGS with a log line naming the key, the rank and
        both shapes and dtypes), and no rank has the key;
     3. then the store still works, the ranks' collectives still paired: a
        float64 key is initialised (rank 0's value), pushed and pulled.
   Every rank prints "rank R: ..." lines and "rank R: kv init checks passed"
   or "... FAILED"; exits 0 when every check passed. */
#define DEPENG_IMPLEMENTATION
#define DEPENG_MPI_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
#include "depeng_mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = -1, g_failed;
#define EXPECT(cond, ...) do { if (!(cond)) { g_failed++; printf("rank %d: FAIL line %d: ", g_rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static dp_ctx cpu(void) { dp_ctx c = {DP_DEV_CPU, 0}; return c; }
static dp_shape shape(int ndim, int64_t d0, int64_t d1) { dp_shape s; memset(&s, 0, sizeof s); s.ndim = ndim; s.dims[0] = d0; s.dims[1] = d1; return s; }

/* dp_kv_init expected to fail on this rank with code, after a log line of
   this thread's holding every string of want (NULL-terminated) */
static void expect_init_fails(dp_kvstore *kv, int key, dp_ndarray *value, dp_result code, const char *const *want) {
    dp_result r;
    const char *msg;
    dp_clear_last_error();
    r = dp_kv_init(kv, key, value);
    msg = dp_last_error();
    EXPECT(r == code, "dp_kv_init key %d returned %s, expected %s", key, dp_result_string(r), dp_result_string(code));
    for (; want && *want; want++) EXPECT(strstr(msg, *want) != NULL, "key %d: the log line \"%s\" does not say \"%s\"", key, msg, *want);
    EXPECT(dp_kv_stored(kv, key) == NULL, "key %d was added after a failed dp_kv_init", key);
    printf("rank %d: dp_kv_init key %d: %s (%s)\n", g_rank, key, dp_result_string(r), msg);
}

int main(void) {
    dp_engine *eng = NULL;
    dp_mpi *mpi = NULL;
    dp_kvstore *kv = NULL;
    dp_optimizer_desc opt;
    dp_ndarray *w = NULL, *g = NULL, *out = NULL, *a = NULL;
    dp_shape s4 = shape(1, 4, 0), s23 = shape(2, 2, 3), s32 = shape(2, 3, 2);
    float wv[4], gv[4], got[4], expect[4], mom[4];
    double dv[3], dgot[3];
    int size, last, i, step;
    char ranktext[32], sums[64];
    if (dp_engine_create(NULL, &eng) != DP_OK || dp_mpi_create(eng, NULL, &mpi) != DP_OK) { fprintf(stderr, "mpi_kv_init: setup failed\n"); return 1; }
    g_rank = dp_mpi_rank(mpi); size = dp_mpi_size(mpi); last = size - 1;
    memset(&opt, 0, sizeof opt);
    opt.update = "sgd_mom_update";
    opt.params[0] = dp_param_float("lr", 0.5); opt.params[1] = dp_param_float("momentum", 0.5);
    if (dp_mpi_kv_create(mpi, NULL, &kv) != DP_OK || dp_kv_set_optimizer(kv, &opt) != DP_OK) { fprintf(stderr, "rank %d: store setup failed\n", g_rank); dp_mpi_abort(mpi, 5); }

    /* 1. different values: rank r gives 10 (k + 1) + r */
    for (i = 0; i < 4; i++) wv[i] = (float)(10 * (i + 1) + g_rank);
    EXPECT(dp_nd_from_host(eng, &s4, DP_FLOAT32, cpu(), wv, &w) == DP_OK && dp_nd_zeros(eng, &s4, DP_FLOAT32, cpu(), &out) == DP_OK, "arrays");
    EXPECT(dp_kv_init(kv, 0, w) == DP_OK, "dp_kv_init key 0 (different values): %s", dp_last_error());
    EXPECT(dp_kv_pull(kv, 0, &out, 1, 0) == DP_OK && dp_nd_read(out, got, sizeof got, NULL) == DP_OK, "pull key 0");
    for (i = 0; i < 4; i++) EXPECT(got[i] == (float)(10 * (i + 1)), "key 0 [%d] after init: %g, rank 0 gave %g", i, (double)got[i], (double)(10 * (i + 1)));
    /* three steps; rank r pushes (k + 1) / 4 + r / 8, the sum over ranks is
       exact; the reference is the update's formula on rank 0's value */
    for (i = 0; i < 4; i++) { gv[i] = (float)(i + 1) / 4 + (float)g_rank / 8; expect[i] = (float)(10 * (i + 1)); mom[i] = 0; }
    EXPECT(dp_nd_from_host(eng, &s4, DP_FLOAT32, cpu(), gv, &g) == DP_OK, "gradient");
    for (step = 0; step < 3; step++) {
        EXPECT(dp_kv_push(kv, 0, &g, 1, 0) == DP_OK && dp_kv_pull(kv, 0, &out, 1, 0) == DP_OK, "push and pull key 0, step %d", step);
        for (i = 0; i < 4; i++) {
            float sum = (float)size * (float)(i + 1) / 4 + (float)(size * (size - 1) / 2) / 8;
            mom[i] = 0.5f * mom[i] - 0.5f * sum;
            expect[i] += mom[i];
        }
    }
    EXPECT(dp_nd_read(out, got, sizeof got, NULL) == DP_OK, "read key 0");
    for (i = 0; i < 4; i++) EXPECT(got[i] == expect[i], "key 0 [%d] after 3 steps: %.9g, expected %.9g (rank 0's start)", i, (double)got[i], (double)expect[i]);
    printf("rank %d: key 0 after 3 momentum steps: %.9g %.9g %.9g %.9g\n", g_rank, (double)got[0], (double)got[1], (double)got[2], (double)got[3]);
    dp_nd_release(g); dp_nd_release(out); dp_nd_release(w); g = out = w = NULL;

    /* 2. what every rank must agree on: shape, dtype, key; and a failure */
    if (size > 1) {
        const char *want[6];
        snprintf(ranktext, sizeof ranktext, "rank %d ", last);
        EXPECT(dp_nd_zeros(eng, g_rank == last ? &s32 : &s23, DP_FLOAT32, cpu(), &a) == DP_OK, "zeros");
        want[0] = "key 1"; want[1] = ranktext; want[2] = "float32 (3, 2)"; want[3] = "rank 0 gives float32 (2, 3)"; want[4] = NULL;
        expect_init_fails(kv, 1, a, DP_ERROR_INVALID_ARGS, want);
        dp_nd_release(a); a = NULL;
        EXPECT(dp_nd_zeros(eng, &s23, g_rank == last ? DP_FLOAT64 : DP_FLOAT32, cpu(), &a) == DP_OK, "zeros");
        want[0] = "key 2"; want[1] = ranktext; want[2] = "float64 (2, 3)"; want[3] = "rank 0 gives float32 (2, 3)"; want[4] = NULL;
        expect_init_fails(kv, 2, a, DP_ERROR_INVALID_ARGS, want);
        dp_nd_release(a); a = NULL;
        EXPECT(dp_nd_zeros(eng, &s23, DP_FLOAT32, cpu(), &a) == DP_OK, "zeros");
        want[0] = ranktext; want[1] = "key 4 (float32 (2, 3))"; want[2] = "rank 0 initialises key 3"; want[3] = NULL;
        expect_init_fails(kv, g_rank == last ? 4 : 3, a, DP_ERROR_INVALID_ARGS, want);
        EXPECT(dp_kv_stored(kv, 3) == NULL && dp_kv_stored(kv, 4) == NULL, "key 3 or 4 added");
        /* rank 1 passes NULL: it logs why; the others say rank 1 failed */
        want[0] = "key 5"; want[1] = g_rank == 1 ? "NULL array" : "rank 1 failed"; want[2] = NULL;
        expect_init_fails(kv, 5, g_rank == 1 ? NULL : a, DP_ERROR_INVALID_ARGS, want);
        dp_nd_release(a); a = NULL;
    }

    /* 3. the store after the failures: a float64 key, rank 0's value */
    {
        dp_shape s3 = shape(1, 3, 0);
        dp_ndarray *d = NULL, *dout = NULL;
        for (i = 0; i < 3; i++) dv[i] = 0.25 * (i + 1) + 100 * g_rank;
        EXPECT(dp_kv_set_updater(kv, NULL, NULL) == DP_OK, "no updater");
        EXPECT(dp_nd_from_host(eng, &s3, DP_FLOAT64, cpu(), dv, &d) == DP_OK && dp_nd_zeros(eng, &s3, DP_FLOAT64, cpu(), &dout) == DP_OK, "arrays");
        EXPECT(dp_kv_init(kv, 6, d) == DP_OK, "dp_kv_init key 6: %s", dp_last_error());
        EXPECT(dp_kv_pull(kv, 6, &dout, 1, 0) == DP_OK && dp_nd_read(dout, dgot, sizeof dgot, NULL) == DP_OK, "pull key 6");
        for (i = 0; i < 3; i++) EXPECT(dgot[i] == 0.25 * (i + 1), "key 6 [%d] after init: %g", i, dgot[i]);
        EXPECT(dp_kv_push(kv, 6, &d, 1, 0) == DP_OK && dp_kv_pull(kv, 6, &dout, 1, 0) == DP_OK
               && dp_nd_read(dout, dgot, sizeof dgot, NULL) == DP_OK, "push and pull key 6");
        for (i = 0; i < 3; i++) EXPECT(dgot[i] == 0.25 * (i + 1) * size + 100.0 * size * (size - 1) / 2, "key 6 [%d] after a push: %g", i, dgot[i]);
        snprintf(sums, sizeof sums, "%g %g %g", dgot[0], dgot[1], dgot[2]);
        printf("rank %d: key 6 after init and a push: %s\n", g_rank, sums);
        dp_nd_release(d); dp_nd_release(dout);
    }

    dp_kv_destroy(kv);
    EXPECT(dp_wait_all(eng, NULL) == DP_OK, "wait_all");
    EXPECT(dp_mpi_destroy(mpi) == DP_OK, "dp_mpi_destroy");
    EXPECT(dp_engine_destroy(eng, NULL) == DP_OK, "dp_engine_destroy");
    printf("rank %d: kv init checks %s\n", g_rank, g_failed ? "FAILED" : "passed");
    return g_failed ? 1 : 0;
}
