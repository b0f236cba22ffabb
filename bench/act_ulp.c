/* bench/act_ulp.c - the float32 tanh and sigmoid kernels (depeng.h's
   >>float32 activations) over all 2^32 float inputs, against the correctly
   rounded (float)tanh((double)x) and (float)(1 / (1 + exp(-(double)x))):
   prints the largest error in units in the last place (and the input it
   occurs at), how many inputs are off by 0, 1, 2 and more ulp, and how many
   results of the AVX2 loop differ from the portable loop's (must be 0).
   NaN must give NaN, a zero must keep the reference's sign. Exits 1 on an
   error over 2 ulp or a difference between the loops. Usage:
   make act-ulp, or build/act_ulp [threads] (default: every core). About
   a minute of CPU per function on a current core (libm's double tanh and
   exp for the reference take most of it). White-box: it calls the loops. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct part { int f; uint32_t hi0, hi1; int64_t worst, hist[4], diffs; uint32_t at; } part;
static int64_t ordered(float v) { int32_t i; memcpy(&i, &v, sizeof i); return i < 0 ? -(int64_t)(i & 0x7fffffff) : i; }
static void *run(void *arg) {
    enum { B = 1 << 16 };
    part *p = (part *)arg;
    float *x = (float *)malloc(sizeof(float) * B), *y = (float *)malloc(sizeof(float) * B), *y2 = (float *)malloc(sizeof(float) * B);
    uint32_t hi;
    int i;
    for (hi = p->hi0; hi < p->hi1; hi++) {
        for (i = 0; i < B; i++) { uint32_t u = hi << 16 | (uint32_t)i; memcpy(&x[i], &u, sizeof u); }
        if (p->f == 0) dp__l1_tanh_f32(B, x, y, 0); else dp__l1_sigmoid_f32(B, x, y, 0);
#ifdef DP__GEMM_X86
        if (dp__cpu_avx2_fma()) {
            if (p->f == 0) dp__l1_tanh_f32_avx2(B, x, y2, 0); else dp__l1_sigmoid_f32_avx2(B, x, y2, 0);
            for (i = 0; i < B; i++) p->diffs += memcmp(&y[i], &y2[i], sizeof(float)) != 0;
        }
#endif
        for (i = 0; i < B; i++) {
            double d = x[i];
            float want = p->f == 0 ? (float)tanh(d) : (float)(1.0 / (1.0 + exp(-d)));
            int64_t u;
            if (want != want || y[i] != y[i]) u = (want != want) == (y[i] != y[i]) ? 0 : INT32_MAX;
            else if (want == 0 && y[i] == 0) u = signbit(want) == signbit(y[i]) ? 0 : INT32_MAX;
            else u = llabs(ordered(y[i]) - ordered(want));
            if (u > p->worst) { p->worst = u; p->at = hi << 16 | (uint32_t)i; }
            p->hist[u > 3 ? 3 : u]++;
        }
    }
    free(x); free(y); free(y2);
    return NULL;
}
int main(int argc, char **argv) {
    long nt = argc > 1 ? atol(argv[1]) : sysconf(_SC_NPROCESSORS_ONLN);
    int f, t, bad = 0;
    if (nt < 1 || nt > 64) nt = 1;
    for (f = 0; f < 2; f++) {
        part ps[64], all;
        pthread_t th[64];
        float w;
        memset(ps, 0, sizeof ps); memset(&all, 0, sizeof all);
        for (t = 0; t < nt; t++) {
            ps[t].f = f; ps[t].hi0 = (uint32_t)(65536u * (uint64_t)t / (uint64_t)nt); ps[t].hi1 = (uint32_t)(65536u * (uint64_t)(t + 1) / (uint64_t)nt);
            if (pthread_create(&th[t], NULL, run, &ps[t])) { fprintf(stderr, "pthread_create failed\n"); return 1; }
        }
        for (t = 0; t < nt; t++) {
            int j;
            pthread_join(th[t], NULL);
            if (ps[t].worst > all.worst) { all.worst = ps[t].worst; all.at = ps[t].at; }
            for (j = 0; j < 4; j++) all.hist[j] += ps[t].hist[j];
            all.diffs += ps[t].diffs;
        }
        memcpy(&w, &all.at, sizeof w);
        printf("%-7s over 2^32 inputs: max error %lld ulp (at %a = %.9g); 0 ulp %lld, 1 ulp %lld, 2 ulp %lld, more %lld; AVX2 loop differs on %lld\n",
               f ? "sigmoid" : "tanh", (long long)all.worst, w, w, (long long)all.hist[0], (long long)all.hist[1], (long long)all.hist[2],
               (long long)all.hist[3], (long long)all.diffs);
        fflush(stdout);
        bad |= all.worst > 2 || all.diffs != 0;
    }
    return bad;
}
