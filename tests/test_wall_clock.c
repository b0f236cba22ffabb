/* tests/test_wall_clock.c - timed waits keep their length when the wall
   clock is set back (Linux, pthreads path).

   The program replaces clock_gettime for its own calls (the header's
   included): CLOCK_REALTIME answers one hour ahead of the truth, as if the
   clock had been set back by an hour just after a wait computed its
   deadline from it. A sleep timed by the wall clock then lasts until
   something wakes it; one timed by the monotonic clock ends on time. The
   engine's condition variables live in libc, which reads the clock through
   its own internal calls, so only the engine sees the shifted time. */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "depeng.h"
#include "test_common.h"

#define HOUR_NS 3600000000000ull

int clock_gettime(clockid_t clock, struct timespec *ts) {
    long r = syscall(SYS_clock_gettime, clock, ts);
    if (r == 0 && clock == CLOCK_REALTIME) ts->tv_sec += 3600;
    return (int)r;
}

static uint64_t true_monotonic_ms(void) {
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static dp_completion g_held;
static int g_holding;
static void hold_op(dp_run_ctx *rc, void *arg, dp_completion done) {
    (void)rc; (void)arg;
    g_held = done;
    __atomic_store_n(&g_holding, 1, __ATOMIC_RELEASE);
}

/* The op holding x completes 1.5 s after it starts: a wait that sleeps
   until woken would take that long, one that keeps its 50 ms deadline not. */
static void *complete_later(void *arg) {
    struct timespec d = {1, 500000000L};
    (void)arg;
    nanosleep(&d, NULL);
    dp_complete(g_held, 0, NULL);
    return NULL;
}

static void test_shifted_wall_clock_is_seen(void) {
    struct timespec real, mono;
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_REALTIME, &mono);
    CHECK((uint64_t)(mono.tv_sec - real.tv_sec) * 1000000000ull >= HOUR_NS - 1000000000ull);
}

static void test_timed_wait_ignores_wall_clock(void) {
    dp_engine_type types[2] = {DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    int k;
    for (k = 0; k < 2; k++) {
        dp_engine_desc ed;
        dp_engine *e = NULL;
        dp_push_desc d;
        dp_var x;
        pthread_t later;
        uint64_t t0, took;
        memset(&ed, 0, sizeof ed);
        ed.type = types[k]; ed.cpu_worker_nthreads = 2; ed.logger.func = quiet_logger;
        if (dp_engine_create(&ed, &e) != DP_OK) { CHECK(0); continue; }
        x = dp_var_create(e);
        memset(&d, 0, sizeof d);
        d.async_fn = hold_op; d.writes = &x; d.num_writes = 1; d.prop = DP_PROP_ASYNC; d.name = "held";
        CHECK(dp_push(e, &d) == DP_OK);
        while (!__atomic_load_n(&g_holding, __ATOMIC_ACQUIRE)) { struct timespec ms = {0, 1000000L}; nanosleep(&ms, NULL); }
        CHECK(pthread_create(&later, NULL, complete_later, NULL) == 0);
        t0 = true_monotonic_ms();
        CHECK(dp_wait_var_for(e, x, 50, NULL) == DP_ERROR_TIMEOUT);
        took = true_monotonic_ms() - t0;
        if (took >= 1000) fprintf(stderr, "  the 50 ms wait took %llu ms\n", (unsigned long long)took);
        CHECK(took < 1000);
        t0 = true_monotonic_ms();
        CHECK(dp_wait_all_for(e, 50, NULL) == DP_ERROR_TIMEOUT);
        CHECK(true_monotonic_ms() - t0 < 1000);
        pthread_join(later, NULL);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        __atomic_store_n(&g_holding, 0, __ATOMIC_RELEASE);
        dp_var_delete(e, x);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

int main(void) {
    static const test_case tests[] = {
        {"shifted_wall_clock_is_seen", test_shifted_wall_clock_is_seen},
        {"timed_wait_ignores_wall_clock", test_timed_wait_ignores_wall_clock},
    };
    return run_tests("wall_clock", tests, (int)(sizeof tests / sizeof tests[0]));
}
