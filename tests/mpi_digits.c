/* tests/mpi_digits.c - the MPI half under mpirun (tests/mpi_check.sh runs
   it): first allreduce of int32, float64, float32 and int8 arrays (float16
   and bool refused) and a barrier, checked;
   then data-parallel training of the digits MLP (tests/kv_digits.h) with a
   dist_sync store: each of the N ranks trains 1/N of every batch.
     --epochs E        epochs (default 2)
     --save PATH       rank 0 writes the weights (float32 .npy)
     --compare PATH    every rank compares its weights with PATH's
     --tol X           the largest difference allowed (default 1e-4)
     --stall-rank R --stall-step S   rank R stops answering at step S (the
                       others must fail within the timeout)
     --barrier         wait for the backward pass before pushing (no overlap)
     --time            print the time per step
   Prints "rank R: ..." lines; exits 0 when every check passed. */
#define DEPENG_IMPLEMENTATION
#define DEPENG_MPI_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
#include "depeng_mpi.h"
#include "kv_digits.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_collectives(dp_engine *eng, dp_mpi *mpi) {
    int rank = dp_mpi_rank(mpi), size = dp_mpi_size(mpi), ok;
    int32_t iv[2]; double dv[3];
    dp_shape si = {1, {2}}, sd = {1, {3}};
    dp_ndarray *a = NULL, *b = NULL;
    iv[0] = rank; iv[1] = 1;
    dv[0] = 0.5 * rank; dv[1] = -1; dv[2] = 1e-3;
    ok = dp_nd_from_host(eng, &si, DP_INT32, kvd_ctx(0), iv, &a) == DP_OK && dp_nd_from_host(eng, &sd, DP_FLOAT64, kvd_ctx(0), dv, &b) == DP_OK
        && dp_mpi_allreduce(mpi, a, 0) == DP_OK && dp_mpi_allreduce(mpi, b, 1) == DP_OK
        && dp_nd_read(a, iv, sizeof iv, NULL) == DP_OK && dp_nd_read(b, dv, sizeof dv, NULL) == DP_OK;
    ok = ok && iv[0] == size * (size - 1) / 2 && iv[1] == size && dv[0] == 0.25 * size * (size - 1) && dv[1] == -size;
    if (ok) {        /* an odd length, cut into pieces when DEPENG_MPI_CHUNK_BYTES is small */
        enum { N = 1001 };
        static float fv[N];
        dp_shape sf = {1, {N}};
        dp_ndarray *c = NULL;
        int k;
        for (k = 0; k < N; k++) fv[k] = (float)(rank + k);
        ok = dp_nd_from_host(eng, &sf, DP_FLOAT32, kvd_ctx(0), fv, &c) == DP_OK && dp_mpi_allreduce(mpi, c, 0) == DP_OK
            && dp_nd_read(c, fv, sizeof fv, NULL) == DP_OK;
        for (k = 0; ok && k < N; k++) ok = fv[k] == (float)(size * (size - 1) / 2 + size * k);
        dp_nd_release(c);
    }
    if (ok) {        /* int8 wraps around as NumPy's sum; float16 and bool have no MPI sum: refused on every rank */
        int8_t i8[2] = {100, -100};
        dp_shape s2 = {1, {2}};
        dp_ndarray *c = NULL, *h = NULL, *bl = NULL;
        ok = dp_nd_from_host(eng, &s2, DP_INT8, kvd_ctx(0), i8, &c) == DP_OK && dp_mpi_allreduce(mpi, c, 0) == DP_OK
            && dp_nd_read(c, i8, sizeof i8, NULL) == DP_OK && i8[0] == (int8_t)(uint8_t)(100 * size) && i8[1] == (int8_t)(uint8_t)(-100 * size);
        ok = ok && dp_nd_zeros(eng, &s2, DP_FLOAT16, kvd_ctx(0), &h) == DP_OK && dp_mpi_allreduce(mpi, h, 0) == DP_ERROR_INVALID_ARGS
            && dp_nd_zeros(eng, &s2, DP_BOOL, kvd_ctx(0), &bl) == DP_OK && dp_mpi_allreduce(mpi, bl, 0) == DP_ERROR_INVALID_ARGS;
        dp_nd_release(c); dp_nd_release(h); dp_nd_release(bl);
    }
    ok = ok && dp_mpi_barrier(mpi) == DP_OK;
    dp_nd_release(a); dp_nd_release(b);
    printf("rank %d of %d (pid %ld): allreduce and barrier %s\n", rank, size, (long)getpid(), ok ? "ok" : "WRONG");
    return ok;
}

int main(int argc, char **argv) {
    const char *save = NULL, *compare = NULL, *path = "data/digits.csv";
    int epochs = 2, stall_rank = -1, barrier = 0, timing = 0, i, e, rank, ok = 1;
    long stall_step = -1;
    double tol = 1e-4, acc, t0;
    dp_engine *eng = NULL;
    dp_mpi *mpi = NULL;
    dp_kvstore *kv = NULL;
    dp_failure f;
    kvd_set train, test;
    kvd_trainer t;
    static float w[KVD_WEIGHTS], ref[KVD_WEIGHTS];
    uint64_t checksum = 1469598103934665603ull;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--save") && i + 1 < argc) save = argv[++i];
        else if (!strcmp(argv[i], "--compare") && i + 1 < argc) compare = argv[++i];
        else if (!strcmp(argv[i], "--tol") && i + 1 < argc) tol = atof(argv[++i]);
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--stall-rank") && i + 1 < argc) stall_rank = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--stall-step") && i + 1 < argc) stall_step = atol(argv[++i]);
        else if (!strcmp(argv[i], "--barrier")) barrier = 1;
        else if (!strcmp(argv[i], "--time")) timing = 1;
        else { fprintf(stderr, "mpi_digits: unknown argument %s\n", argv[i]); return 2; }
    }
    if (dp_engine_create(NULL, &eng) != DP_OK || dp_mpi_create(eng, NULL, &mpi) != DP_OK) { fprintf(stderr, "mpi_digits: setup failed\n"); return 1; }
    rank = dp_mpi_rank(mpi);
    if (!check_collectives(eng, mpi)) dp_mpi_abort(mpi, 4);
    memset(&train, 0, sizeof train); memset(&test, 0, sizeof test);
    if (!kvd_load(eng, path, &train, &test) || dp_mpi_kv_create(mpi, NULL, &kv) != DP_OK
        || !kvd_trainer_init(&t, eng, kv, 1, dp_mpi_size(mpi), rank)) {
        fprintf(stderr, "rank %d: training setup failed\n", rank);
        dp_mpi_abort(mpi, 5);
    }
    t0 = dp__mpi_now();
    for (e = 0; e < epochs; e++) {
        int64_t b, nb = train.rows / KVD_BATCH;
        for (b = 0; b < nb; b++) {
            if (rank == stall_rank && e * nb + b == stall_step) {
                printf("rank %d: stops answering at step %ld\n", rank, stall_step);
                fflush(stdout);
                for (;;) pause();
            }
            if (!kvd_step(&t, &train, b, barrier)) { fprintf(stderr, "rank %d: step failed\n", rank); dp_mpi_abort(mpi, 6); }
        }
        memset(&f, 0, sizeof f);
        if (dp_wait_all(eng, &f) != DP_OK) {        /* a failed collective: end the job */
            fprintf(stderr, "rank %d: epoch %d failed: %s: %s\n", rank, e + 1, f.op_name, f.message);
            fflush(stderr);
            dp_mpi_abort(mpi, 3);
        }
    }
    if (timing) printf("rank %d: %.3f ms per step (%s)\n", rank, 1e3 * (dp__mpi_now() - t0) / (double)(epochs * (train.rows / KVD_BATCH)),
                       barrier ? "barrier after backward" : "overlapped");
    acc = kvd_accuracy(&t, &test);
    if (kvd_weights(&t, w) != KVD_WEIGHTS || acc < 0) { fprintf(stderr, "rank %d: reading the weights failed\n", rank); dp_mpi_abort(mpi, 7); }
    for (i = 0; i < (int)sizeof w; i++) checksum = (checksum ^ ((unsigned char *)w)[i]) * 1099511628211ull;
    printf("rank %d: test accuracy %.4f weights checksum %016llx\n", rank, acc, (unsigned long long)checksum);
    if (save && rank == 0) {
        dp_shape s = {1, {KVD_WEIGHTS}};
        dp_ndarray *all = NULL;
        ok = dp_nd_from_host(eng, &s, DP_FLOAT32, kvd_ctx(0), w, &all) == DP_OK && dp_nd_save_npy(all, save, NULL) == DP_OK;
        dp_nd_release(all);
    }
    if (compare) {
        dp_ndarray *r = NULL;
        double maxdiff = 0;
        ok = dp_nd_load_npy(eng, compare, kvd_ctx(0), &r) == DP_OK && dp_nd_bytes(r) == sizeof ref && dp_nd_read(r, ref, sizeof ref, NULL) == DP_OK;
        for (i = 0; ok && i < KVD_WEIGHTS; i++) { double d = fabs((double)w[i] - (double)ref[i]); if (d > maxdiff) maxdiff = d; }
        printf("rank %d: largest difference from the one-process weights %.3g (tolerance %.3g)\n", rank, maxdiff, tol);
        ok = ok && maxdiff <= tol;
        dp_nd_release(r);
    }
    kvd_trainer_release(&t);
    kvd_set_release(&train); kvd_set_release(&test);
    dp_kv_destroy(kv);
    if (dp_wait_all(eng, NULL) != DP_OK) ok = 0;
    if (dp_mpi_destroy(mpi) != DP_OK) ok = 0;
    if (dp_engine_destroy(eng, NULL) != DP_OK) ok = 0;
    return ok ? 0 : 1;
}
