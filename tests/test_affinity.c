/* tests/test_affinity.c - dp_cpu_count, and so the default number of CPU
   workers, follows the process's CPU affinity mask (Linux): a program
   started with taskset, or in a container limited to some CPUs, gets one
   worker per CPU it may use, not one per CPU of the machine. */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include "depeng.h"
#include "test_common.h"

static int g_skipped;   /* this process may not set its affinity (some sandboxes) */

static int mask_count(void) {
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0) return -1;
    return CPU_COUNT(&s);
}

static void test_count_is_the_mask(void) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(dp_cpu_count() >= 1);
    CHECK(dp_cpu_count() == mask_count());
    CHECK(online <= 0 || dp_cpu_count() <= online);
}

/* The child pins itself to one CPU (the first it may use) and reports by its
   exit status: 0 right, 1 dp_cpu_count, 2 the default worker count, 3 its
   affinity could not be read or set (the test is skipped), 4-5 the engine. */
static int pinned_child(void) {
    cpu_set_t s, one;
    dp_engine_desc d;
    dp_engine *eng;
    int cpu = 0, workers;
    if (sched_getaffinity(0, sizeof s, &s) != 0) return 3;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &s)) cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 3;
    if (dp_cpu_count() != 1) return 1;
    memset(&d, 0, sizeof d);
    d.ignore_env = 1;
    d.logger.func = quiet_logger;   /* a failure shows as the exit status */
    if (dp_engine_create(&d, &eng) != DP_OK) return 4;
    if (dp_engine_desc_get(eng, &d) != DP_OK) return 5;
    workers = d.cpu_worker_nthreads;
    dp_engine_destroy(eng, NULL);
    return workers == 1 ? 0 : 2;
}
static void test_pinned_process_gets_one_worker(void) {
    int status = -1;
    pid_t pid;
    fflush(NULL);
    pid = fork();
    if (pid == 0) _exit(pinned_child());
    CHECK(pid > 0);
    if (pid > 0) CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3) { g_skipped = 1; return; }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) fprintf(stderr, "  the pinned child exited with %d\n", WEXITSTATUS(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
    static const test_case tests[] = {
        {"count_is_the_mask", test_count_is_the_mask},
        {"pinned_process_gets_one_worker", test_pinned_process_gets_one_worker},
    };
    (void)run_tests;   /* a test here may be skipped: see run_tests_with_skips */
    return run_tests_with_skips("affinity", tests, (int)(sizeof tests / sizeof tests[0]), &g_skipped,
                                "sched_setaffinity is refused here");
}
