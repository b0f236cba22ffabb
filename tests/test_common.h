/* tests/test_common.h - what every depeng test program shares: CHECK, a
   logger that remembers the last item id (tests check ids, not text), and
   the runner that prints "PASS name" / "FAIL name" and the closing line
   "<suite>: N passed, M failed", and a failing allocator. Include after
   depeng.h. */
#ifndef DEPENG_TEST_COMMON_H
#define DEPENG_TEST_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include "test_calls.h"

static int g_failed_checks;
#define CHECK(c) do { if (!(c)) { g_failed_checks++; fprintf(stderr, "  CHECK failed %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

static volatile uint32_t g_last_item;
static void quiet_logger(const char *tag, uint32_t level, uint32_t item, const char *msg, uint32_t line, const char *file, void *user) {
    (void)tag; (void)level; (void)msg; (void)line; (void)file; (void)user;
    __atomic_store_n(&g_last_item, item, __ATOMIC_RELAXED);
}

/* An allocator for dp_engine_desc that fails on demand and counts the
   bytes it has out, so a test can check out-of-memory paths and that
   destroy gives everything back. It fails every call while g_fail_alloc is
   set. It also numbers its calls (g_alloc_calls, from 1): with g_fail_at =
   k > 0 it fails the k-th call only, with g_fail_from = k > 0 every call
   from the k-th on; g_alloc_failures counts the calls it failed. Set
   g_alloc_calls to 0 to start counting anew, and the modes back to 0 to
   stop failing. Sweeping k from 1 until a run sees no failure visits every
   allocation of a deterministic run (the naive engine's). */
static int g_fail_alloc;
static long g_fail_at, g_fail_from, g_alloc_calls, g_alloc_failures;
static long g_live_alloc_bytes;
static inline int failing_alloc_should_fail(void) {
    long call = __atomic_add_fetch(&g_alloc_calls, 1, __ATOMIC_ACQ_REL);
    long at = __atomic_load_n(&g_fail_at, __ATOMIC_ACQUIRE), from = __atomic_load_n(&g_fail_from, __ATOMIC_ACQUIRE);
    int fail = __atomic_load_n(&g_fail_alloc, __ATOMIC_ACQUIRE) || (at > 0 && call == at) || (from > 0 && call >= from);
    if (fail) __atomic_fetch_add(&g_alloc_failures, 1, __ATOMIC_RELAXED);
    return fail;
}
static inline void *failing_alloc(size_t size, size_t align, void *user) {
    void *p;
    (void)align; (void)user;
    if (failing_alloc_should_fail()) return NULL;
    p = malloc(size);
    if (p) __atomic_fetch_add(&g_live_alloc_bytes, (long)size, __ATOMIC_RELAXED);
    return p;
}
static inline void failing_free(void *p, size_t size, void *user) {
    (void)user;
    if (p) __atomic_fetch_add(&g_live_alloc_bytes, -(long)size, __ATOMIC_RELAXED);
    free(p);
}

typedef struct { const char *name; void (*fn)(void); } test_case;
/* Runs every test; a test fails when any CHECK in it failed. Returns the
   exit status. */
static int run_tests(const char *suite, const test_case *tests, int count) {
    int i, passed = 0, failed = 0;
    for (i = 0; i < count; i++) {
        int before = g_failed_checks;
        tests[i].fn();
        if (g_failed_checks == before) { passed++; printf("PASS %s\n", tests[i].name); }
        else { failed++; printf("FAIL %s\n", tests[i].name); }
        fflush(stdout);
    }
    printf("%s: %d passed, %d failed\n", suite, passed, failed);
    return failed ? 1 : 0;
}
/* As run_tests, for suites in which a test may be unable to run here (a
   GPU test on a machine without one): such a test sets *skipped and
   returns, and is counted as skipped, never as passed; `why` names what was
   missing. The last line is "SUITE: N passed, M failed, K skipped". */
static inline int run_tests_with_skips(const char *suite, const test_case *tests, int count, int *skipped, const char *why) {
    int i, passed = 0, failed = 0, nskipped = 0;
    for (i = 0; i < count; i++) {
        int before = g_failed_checks;
        *skipped = 0;
        tests[i].fn();
        if (g_failed_checks != before) { failed++; printf("FAIL %s\n", tests[i].name); }
        else if (*skipped) { nskipped++; printf("SKIP: %s (%s)\n", why, tests[i].name); }
        else { passed++; printf("PASS %s\n", tests[i].name); }
        fflush(stdout);
    }
    printf("%s: %d passed, %d failed, %d skipped\n", suite, passed, failed, nskipped);
    return failed ? 1 : 0;
}
/* The tests' own environment and temporary files, on POSIX and on Windows
   (which has no setenv/unsetenv and no /tmp). */
#ifdef _WIN32
static inline int test_setenv(const char *name, const char *value) { return _putenv_s(name, value); }
static inline int test_unsetenv(const char *name) { return _putenv_s(name, ""); }   /* "" removes it */
#else
static inline int test_setenv(const char *name, const char *value) { return setenv(name, value, 1); }
static inline int test_unsetenv(const char *name) { return unsetenv(name); }
#endif
/* The directory for temporary files: $TMPDIR, %TEMP% or %TMP%, else /tmp. */
static inline const char *test_temp_dir(void) {
    const char *names[3] = {"TMPDIR", "TEMP", "TMP"};
    int i;
    for (i = 0; i < 3; i++) { const char *d = getenv(names[i]); if (d && *d) return d; }
    return "/tmp";
}
/* A temporary file, removed when closed. Microsoft's docs for tmpfile say it
   creates the file in the root directory, which needs administrator rights
   since Vista; on Windows the file goes to test_temp_dir() instead, and the
   C runtime's "D" mode deletes it on close. */
#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>    /* GetCurrentProcessId: the implementation's own include is in another file now */
#endif
static inline FILE *test_tmpfile(void) {
#ifdef _WIN32
    static int serial;
    char path[512];
    snprintf(path, sizeof path, "%s/depeng_tmp_%lu_%d", test_temp_dir(), (unsigned long)GetCurrentProcessId(), serial++);
    return fopen(path, "w+bD");
#else
    return tmpfile();
#endif
}
/* Makes a directory (private to the user where modes exist); 0 on success. */
#ifdef _WIN32
#include <direct.h>
static inline int test_mkdir(const char *path) { return _mkdir(path); }
#else
#include <sys/stat.h>
static inline int test_mkdir(const char *path) { return mkdir(path, 0700); }
#endif
#endif
