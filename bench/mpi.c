/* bench/mpi.c - allreduce throughput through depeng (dp_mpi_allreduce: an
   engine op completed by depeng_mpi.h's progress thread) against
   MPI_Allreduce called directly, float32 sums in place, 4 KB to 64 MB, on
   every rank of the job (bench/mpi.sh runs 2). Each size is timed three
   times, alternating the two, and the best of each is kept; the time of a
   round is the slowest rank's. Bandwidth is bytes / time per allreduce.
   The program initialises MPI itself at MPI_THREAD_MULTIPLE, which
   dp_mpi_create then requires (its progress thread calls MPI too). */
#define DEPENG_IMPLEMENTATION
#define DEPENG_MPI_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
#include "depeng_mpi.h"
#include <stdio.h>
#include <stdlib.h>

static double round_time(double t0) {
    double mine = dp__mpi_now() - t0, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}
int main(int argc, char **argv) {
    int provided = 0, rank = 0, size = 0, round;
    size_t bytes;
    dp_engine *eng = NULL;
    dp_mpi *mpi = NULL;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS || provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "bench_mpi: MPI gives thread level %d, MPI_THREAD_MULTIPLE is needed here\n", provided);
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (dp_engine_create(NULL, &eng) != DP_OK || dp_mpi_create(eng, NULL, &mpi) != DP_OK) { MPI_Abort(MPI_COMM_WORLD, 1); }
    if (rank == 0) printf("allreduce, float32 sum in place, %d ranks: bandwidth = bytes / time\n%10s %8s %16s %16s %8s\n", size, "bytes", "rounds", "MPI_Allreduce", "depeng", "ratio");
    for (bytes = 4096; bytes <= ((size_t)64 << 20); bytes *= 4) {
        int64_t n = (int64_t)(bytes / sizeof(float));
        int iters = (int)(((size_t)128 << 20) / bytes), i;
        double best_mpi = 1e30, best_dp = 1e30;
        dp_shape s = {1, {n}};
        dp_ndarray *a = NULL;
        float *buf = (float *)calloc((size_t)n, sizeof *buf);
        if (iters < 4) iters = 4;
        if (iters > 500) iters = 500;
        if (!buf || dp_nd_zeros(eng, &s, DP_FLOAT32, (dp_ctx){DP_DEV_CPU, 0}, &a) != DP_OK) MPI_Abort(MPI_COMM_WORLD, 1);
        for (round = 0; round < 3; round++) {
            double t0, t;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = dp__mpi_now();
            for (i = 0; i < iters; i++) MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if ((t = round_time(t0)) < best_mpi) best_mpi = t;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = dp__mpi_now();
            for (i = 0; i < iters; i++) if (dp_mpi_allreduce(mpi, a, 0) != DP_OK) MPI_Abort(MPI_COMM_WORLD, 1);
            if (dp_nd_wait_to_read(a, NULL) != DP_OK) MPI_Abort(MPI_COMM_WORLD, 1);
            if ((t = round_time(t0)) < best_dp) best_dp = t;
        }
        if (rank == 0)
            printf("%10zu %8d %11.3f GB/s %11.3f GB/s %7.2fx\n", bytes, iters, (double)bytes * iters / best_mpi / 1e9,
                   (double)bytes * iters / best_dp / 1e9, best_mpi / best_dp);
        fflush(stdout);
        dp_nd_release(a);
        free(buf);
    }
    dp_wait_all(eng, NULL);
    dp_mpi_destroy(mpi);
    dp_engine_destroy(eng, NULL);
    MPI_Finalize();
    return 0;
}
