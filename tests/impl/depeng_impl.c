/* tests/impl/depeng_impl.c - the implementation that the tests and examples
   link, compiled once per configuration instead of once per program.

   The Makefile compiles this file to build/impl/<configuration>.o (default
   C, -DDEPENG_USE_PTHREADS, C++ with g++ -x c++, -DDEPENG_NO_NDARRAY, the
   sanitizers, MinGW, libFuzzer, the benchmarks) and CMake to one OBJECT
   library per configuration; every program of that configuration then
   includes depeng.h for its declarations only and links the object. The
   configuration comes from the command line, so the programs that link an
   object must be compiled with the same configuration macros.

   Also defined here, for every configuration:
     DEPENG_TRACE_HTML  the replay page, which walkthrough.c, html_pages.c
                        and test_engine.c use (a program that does not use
                        it just does not declare it);
     DEPENG_TEST_HOOK   routed to dp_test_hook_fn (tests/impl/test_hook.h),
                        NULL unless a test sets it; -DDEPENG_IMPL_NO_TEST_HOOK
                        leaves the hook out (the benchmarks' object).
   depeng_nn.h's implementation shares this translation unit (below
   depeng.h's), except in the engine-only configuration. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "tests/impl/test_hook.h"
#ifndef DEPENG_IMPL_NO_TEST_HOOK
void (*dp_test_hook_fn)(const char *point);
#define DEPENG_TEST_HOOK(point) do { if (dp_test_hook_fn) dp_test_hook_fn(#point); } while (0)
#endif
#define DEPENG_TRACE_HTML
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#ifndef DEPENG_NO_NDARRAY
#include "depeng_nn.h"       /* training networks: its implementation joins depeng.h's */
#endif

#ifndef DEPENG_IMPL_NO_TEST_HOOK
const size_t dp_test_failure_size = sizeof(dp__failure);
#endif
