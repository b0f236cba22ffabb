/* bench/range.cpp - the range loop: depeng's dp_parallel_for against
   oneTBB's parallel_for and OpenMP's parallel for, on the same bodies.
     build/bench_range calibrate          prints the loop counts of a ~100 ns
                                          and a ~1 us body on this machine
     build/bench_range SYSTEM LOOPS [N] [REPS]
   SYSTEM: depeng (per-device engine, chunks sized automatically), depeng-det
   (deterministic chunks, 256 of them), tbb (tbb::parallel_for, auto
   partitioner, grain 1), omp (#pragma omp parallel for, static schedule).
   Every system runs on 2 threads: the calling thread and one more (depeng:
   cpu_worker_nthreads 1; oneTBB: global_control; OpenMP: num_threads(2)).
   One system per process, so idle threads of one runtime never compete with
   another's. Prints "range SYSTEM loops=L n=N ms=MEDIAN min=MIN max=MAX" over
   REPS timed loops after one warm-up, and checks the result against a
   sequential sum. bench/range.sh alternates the systems in rounds. */
#define DEPENG_IMPLEMENTATION
#define DEPENG_NO_NDARRAY
#include "depeng.h"
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/blocked_range.h>
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static double *g_out;
static int g_loops;
/* The body of element i: a dependent chain of g_loops multiply-adds. */
static inline double body(int64_t i) {
    double x = (double)i * 1e-9 + 1.0;
    for (int k = 0; k < g_loops; k++) x = x * 0.9999999 + 1e-7;
    return x;
}
static void chunk(int64_t b, int64_t e, void *) { for (int64_t i = b; i < e; i++) g_out[i] = body(i); }
static double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "calibrate")) {
        int64_t n = 200000; double t;
        std::vector<double> out((size_t)n); g_out = out.data(); g_loops = 100;
        chunk(0, n / 10, NULL);
        t = now_ms(); chunk(0, n, NULL); t = now_ms() - t;
        double ns_per_loop = t * 1e6 / (double)n / g_loops;
        printf("%d %d\n", (int)(100 / ns_per_loop + 0.5), (int)(1000 / ns_per_loop + 0.5));
        return 0;
    }
    if (argc < 3) { fprintf(stderr, "usage: %s calibrate | SYSTEM LOOPS [N] [REPS]\n", argv[0]); return 2; }
    const char *sys = argv[1];
    g_loops = atoi(argv[2]);
    int64_t n = argc > 3 ? atoll(argv[3]) : 1000000;
    int reps = argc > 4 ? atoi(argv[4]) : 5;
    std::vector<double> out((size_t)n), ref((size_t)n);
    g_out = ref.data(); chunk(0, n, NULL);
    g_out = out.data();
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 2);
    dp_engine *eng = NULL;
    int isdep = !strncmp(sys, "depeng", 6);
    if (isdep) {
        dp_engine_desc d; memset(&d, 0, sizeof d);
        d.type = DP_ENGINE_PERDEVICE; d.cpu_worker_nthreads = 1; d.ignore_env = 1;
        if (dp_engine_create(&d, &eng) != DP_OK) return 1;
    } else if (strcmp(sys, "tbb") && strcmp(sys, "omp")) { fprintf(stderr, "unknown system %s\n", sys); return 2; }
    std::vector<double> ms;
    for (int r = 0; r <= reps; r++) {
        memset(out.data(), 0, out.size() * sizeof(double));
        double t = now_ms();
        if (isdep) {
            dp_range_desc rd; memset(&rd, 0, sizeof rd);
            rd.n = n; rd.fn = chunk; rd.deterministic = !strcmp(sys, "depeng-det");
            if (dp_parallel_for(eng, &rd) != DP_OK) return 1;
        } else if (!strcmp(sys, "tbb")) {
            tbb::parallel_for(tbb::blocked_range<int64_t>(0, n), [](const tbb::blocked_range<int64_t> &r) { chunk(r.begin(), r.end(), NULL); });
        } else {
            #pragma omp parallel for num_threads(2) schedule(static)
            for (int64_t i = 0; i < n; i++) g_out[i] = body(i);
        }
        t = now_ms() - t;
        if (memcmp(out.data(), ref.data(), out.size() * sizeof(double))) { printf("FAIL range %s: wrong result\n", sys); return 1; }
        if (r) ms.push_back(t);   /* the first is the warm-up */
    }
    if (eng) dp_engine_destroy(eng, NULL);
    std::sort(ms.begin(), ms.end());
    printf("range %s loops=%d n=%lld ms=%.2f min=%.2f max=%.2f\n", sys, g_loops, (long long)n, ms[ms.size() / 2], ms.front(), ms.back());
    return 0;
}
