/* tests/impl/test_hook.h - the scheduler's test hook, reachable from a test
   that links the implementation as a separate object.

   depeng.h calls DEPENG_TEST_HOOK(point) at a few named points of the
   scheduler (worker_found, pusher_yield, wait_all_clear, wait_woke) so that
   a test can widen a race window or count wake-ups. The macro must be defined where the implementation
   is compiled, which is tests/impl/depeng_impl.c, not the test: so that
   file points the macro at this function pointer, and a test that wants
   the hook (test_engine.c, test_scheduling.c, test_frame.c) sets it at the start of main,
   before any engine starts a thread. NULL (the default) costs one load and
   a branch at each point. */
#ifndef DEPENG_TEST_HOOK_H
#define DEPENG_TEST_HOOK_H
#include <stddef.h>
extern void (*dp_test_hook_fn)(const char *point);
/* sizeof(dp__failure), the engine's failure record, for test_engine's
   allocator that refuses exactly that allocation (the type is private). */
extern const size_t dp_test_failure_size;
#endif
