/* depeng.h - a data-dependency engine (MXNet's execution engine) in one C11 header.
   version 0.2.0 - MIT license (full text at the end of this file)

   In exactly one C or C++ file:
       #define DEPENG_IMPLEMENTATION
       #include "depeng.h"
   and link with -pthread -lm (on Windows nothing: the Win32 layer needs only
   kernel32 and the C runtime).

   CONTENTS
     1. Quick start
     2. Concepts: variables, operations, read and write sets, the rule
     3. Operation lifecycle (and which thread owns each state)
     4. Threading model and the three engines
     5. Errors and failures
     6. Compile-time options
     7. Limits and non-goals
     8. API (declarations)
     9. Implementation, its sections in file order: >>mxnet names >>config
        >>platform >>atomics >>memory >>handles >>pool >>failures >>trace;
        the engine's core: >>rule >>chain >>queues >>execute >>completion >>dispatch
        >>workers >>ranges >>push >>naive fast path; after it: >>gpu >>statistics
        >>pacing >>fairness >>public >>waits >>callers >>engine >>profiler
        >>dot >>html >>extensions; then the NDARRAY half (left out by DEPENG_NO_NDARRAY;
        it attaches to an engine through dp_engine_extension only): >>files
        >>dtypes >>storage >>arrays >>resources >>data >>registry >>params
        >>invoke >>extending >>builtin operators >>element-wise kernels' loops
        >>float32 activations >>gradients of the element-wise operators
        >>reductions >>softmax, transpose, concat, one_hot >>random operators
        >>gemm >>dot product >>copy, reshape and
        the optimizer updates >>take and accuracy; training networks
        (autograd, optimizer objects, layers, symbols, the executor, the
        KVStore) is depeng_nn.h, built on this header's API.

   1. QUICK START

       dp_engine *eng = NULL;
       dp_engine_create(NULL, &eng);            // defaults: per-device engine
       dp_var a = dp_var_create(eng), b = dp_var_create(eng);
       dp_push_sync(eng, set_a, &A, NULL, 0, &a, 1);         // A = 2
       dp_push_sync(eng, add,   &B, &a, 1, &b, 1);           // B = A + B
       dp_wait_var(eng, b, NULL);                            // B is ready
       dp_engine_destroy(eng, NULL);

   2. CONCEPTS
     A variable (dp_var) is a token that stands for a piece of data. An operation
     is a function plus the variables it reads and the variables it writes.
     THE RULE: two operations that share a variable, at least one of them writing
     it, run in the order in which they were pushed. Operations that only read a
     variable may run at the same time. Everything else runs in parallel.

     The algorithm (MXNet's ThreadedVar / OprBlock): every variable keeps
       - nreaders: how many granted reads are still running, or DP__WRITING
         while a granted write runs;
       - a FIFO of operations that wait for it: a ring of block pointers,
         the low bit set for a write.
     Every pushed operation keeps an atomic count of unmet dependencies, one per
     variable plus one held by the pusher; it runs when the count reaches zero.
       append read : granted at once if nobody writes and nobody waits, else queued
       append write: granted at once if nobody reads, writes or waits, else queued
       complete read : the last reader grants a queued write
       complete write: grants every queued read up to the next write, or, when
                       the queue starts with a write, that write
     Granting decrements the waiting operation's count. This is the whole scheme.

   3. OPERATION LIFECYCLE
     pushed   (caller thread)  handles checked, block taken from a pool, granted
                               or queued on each variable under that var's lock
     waiting  (nobody)         count > 0; sits in variable queues
     ready    (a queue)        count reached 0 on whichever thread granted last
     running  (a worker)       the function runs; async functions run until they
                               call dp_complete, from any thread
     completed(completing thr) its variables are released, which may make other
                               operations ready; the block returns to its pool

   4. THREADING MODEL
     DP_ENGINE_NAIVE     every operation runs on the thread that makes it ready
                         (the pusher, or whoever completes its last dependency).
     DP_ENGINE_POOLED    one task queue (+ pool) and one IO queue for copies
                         and DP_PROP_IO.
     DP_ENGINE_PERDEVICE (default) per CPU device a worker pool, one CPU priority
                         pool (highest priority first), one IO pool for
                         DP_PROP_IO (started on first use), per GPU device a compute
                         pool and a copy pool whose workers each own a stream made
                         by the device backend (dp_device_backend); a GPU op is
                         complete when its stream work is done (an event, or a
                         stream synchronisation).
     Pushing and waiting are thread-safe: several threads may push at once. The
     order per variable is the order in which the pushes returned.
     Pacing: a thread far ahead of the workers (64 pushes in a row that had
     to wait, more than 2048 ops pending, every CPU worker running an op)
     yields its core once (sched_yield) on the threaded engines, so that it
     does not hold a busy worker off a shared core. Not from inside an op;
     desc.no_push_yield turns it off.
     Running on the pusher (desc.push_runs_ops = 1, off by default): under the
     same conditions, instead of yielding, the pushing thread takes up to 64
     ready ops from the shared queue of the CPU pool its op goes to and runs
     them itself before dp_push / dp_opr_push (or dp_push_batch /
     dp_opr_push_n, up to 64 per waiting op of the batch) returns (OpenMP's
     task throttling does the same); when that queue has none (the pool's
     work may all be in its workers' deques), it yields as without the flag.
     What that changes in the push contract, with the flag set:
       - a push may run other ops' functions (sync, or async up to its
         return) on the calling thread: whatever the caller holds while it
         pushes (a lock, a resource) is held while they run, so a caller must
         not push while holding anything an op's function may take, or the
         op waits for the caller and the caller for the op;
       - such an op sees dp_run_ctx.worker == -1, and the thread's own state
         (thread-locals, signal masks, a GPU context) is the pusher's;
       - a push may take as long as the ops it runs (up to 64 of them);
       - only ops that are already ready run there, taken from the head of
         the pool's queue, so the order the rule sets is unchanged, and only
         CPU ops of the per-device engine's CPU pool (DP_PROP_NORMAL) or the
         pooled engine's task pool; never from inside an op, never on the
         naive engine (which always runs ops on the pusher), never from a
         wait (dp_wait_var, dp_wait_var_for) or dp_var_delete, never on a
         worker thread (an op's cleanup that pushes).
     The waiting thread (default where it has a core to give: the engine's
     cpu_worker_nthreads is below dp_cpu_count() at create; desc.no_wait_help
     = 1 turns it off, DP_WAIT_HELP_ALWAYS on whatever the count): a
     wait on a threaded engine (dp_wait_var, dp_wait_all; dp_engine_destroy's
     only once it has logged what is pending) does not idle while ops are
     ready and every CPU worker is busy: until its condition holds it takes
     ready ops of a CPU pool whose workers are all running ops, from the
     pool's shared queue or stolen from a worker's deque (the ops that
     worker's completions made ready), as dp_run_ready does (see there),
     and runs them, looking at its condition again after each. While a
     worker is free it leaves the op to it. Finding nothing while a pool's
     workers are all busy, it looks again for a while (as an idle worker
     spins), then sleeps until what it waits for is done or an op comes
     into such a pool (a push, or a worker's completion; the waker is a
     system call, counted in dp_engine_stats.helper_wakeups).
     So on a machine where the workers cannot keep up, the thread that
     waits for a frame's work is one more worker (oneTBB's wait,
     Taskflow's corun and enkiTS's WaitforTask do the same, and size their
     workers to leave the waiting thread its core). Where the workers have a
     core each already (the default count), a helping wait would only take
     turns on a core with a worker: on two cores with two workers, W5
     (bench/README.md) ran 3-5% slower with it. So by default it helps only
     where cpu_worker_nthreads leaves it a core (the count of one CPU pool:
     the priority thread, mostly asleep, and the pools of further CPU
     devices are not counted). The same
     guarantees as running on the pusher hold: only ready ops, each
     pool's oldest first (a deque's oldest), never from inside an op. Not from the timed
     waits (dp_wait_var_for, dp_wait_all_for): a caller that polls may
     itself feed, between polls, the op it would be running. Not on the
     pooled engine with a GPU backend (its task pool has the GPU ops). Not
     from a thread that runs an op, a range chunk, a cleanup or an
     extension's create, or is a worker, of any engine: a wait from there
     sleeps rather than start unrelated ops nested in it. What it changes,
     as for push_runs_ops: such an op sees dp_run_ctx.worker == -1 and the
     waiting thread's state (its locks held while it waits, its
     thread-locals); a wait may return up to one op's duration after its
     condition came to hold; an op must never wait for something only the
     thread that waits on its engine would do (without the helping, that
     wait would block for ever anyway); and a pool may run one op more than
     it has threads (the priority pool's ops still start highest priority
     first, but with cpu_priority_nthreads = 1 two of them may overlap: ops
     that must not overlap share a variable, or turn the helping off).
     Ranges (dp_parallel_for): data parallelism inside an op, or anywhere,
     on the same workers, with no second pool. The calling thread runs
     chunks; a CPU worker that finds no op to run (its deque, the shared
     queue and its peers' deques empty) helps with open ranges of its pool,
     chunk by chunk, and goes back to ops as soon as one is queued. So ops
     keep their priority over chunks, independent ops still overlap, and a
     range never waits for a busy worker: its caller runs what nobody took.
     The built-in kernels use it (dot and FullyConnected's GEMM, the
     optimizer updates, the float32 element-wise ops): above a size
     threshold they split their work in chunks fixed by the shape, so results
     are bitwise the same at any worker count; independent ops still run on
     separate workers, and a worker that is running an op is never drafted
     into another op's range, so the two kinds of parallelism share the
     workers without oversubscription.
     Frame-driven use (cpu_worker_nthreads = DP_NO_THREADS, and no priority
     and copy threads either: see dp_engine_desc): the threaded engines keep
     their queues and the rule but start no thread; CPU ops wait in their
     pool's queue until the application runs them from its own loop with
     dp_run_ready (until a variable is ready, a count of ops, or a time
     budget) or waits (each wait then runs ready ops while it waits). The
     same guarantees as running on the pusher hold: only ready ops, oldest
     first, never from inside an op.

   5. ERRORS
     Calls return dp_result. Details go to the logger (desc.logger, default
     stderr). A failing operation (sync function returns non-zero, or
     dp_complete with a non-zero status) marks the variables it writes FAILED;
     operations depending on a failed variable are skipped (unless NO_SKIP) and
     pass the failure on. dp_wait_var / dp_wait_all return DP_ERROR_OP_FAILED with
     a dp_failure naming the first failing operation; a failure is reported once,
     then cleared from that variable (dp_wait_all clears all). Recording a
     failure needs no memory: without any, the op's writes carry the engine's
     own out-of-memory failure (status DP_ERROR_OUT_OF_MEMORY, op_name
     "(unrecorded)") and the log names the op, its status and its message;
     dp_wait_all reports such a failure even if a dp_wait_var already did,
     since one record stands for all of them until dp_wait_all clears it.
     The text of the last error logged on a thread is also kept for that
     thread: dp_last_error (like dlerror), dp_last_error_item for its log
     item, dp_clear_last_error.

   6. COMPILE-TIME OPTIONS (define before including, in every file unless noted)
     DEPENG_STATIC          functions are static (one-file use)
     DEPENG_USE_PTHREADS    force the pthreads platform layer (implementation file)
     DEPENG_USE_C11_THREADS force <threads.h> (implementation file)
     DEPENG_NO_NDARRAY      the engine alone: leaves out the array half (the
                            NDARRAY, OPERATORS, AUTOGRAD and DATA parts of the
                            API, resources and storage included), in the
                            declarations and the implementation. Define it in
                            every file or in none. The implementation file
                            then compiles about 3.5x faster and a minimal
                            program is about 4x smaller (README, "The engine
                            alone");
                            -lm is then not needed. depeng_cuda.h needs the
                            array half.
     DEPENG_TRACE_HTML      compile the trace recorder and dp_trace_write_html
                            (the teaching trace as a replay page). Off by
                            default: the page's script and styles are ~35 KB
                            that a program without the page need not carry.
     DP_ASSERT(c)           assert macro (default: assert)
     DEPENG_TEST_HOOK(point) tests only: code run at a named point of the
                            scheduler, to widen a race window or to count
                            dp_parallel_for calls and waits' wake-ups
                            (default: none)
   The platform layer is chosen by the target unless forced above:
     Linux and other POSIX  C11 <threads.h> where it exists, else pthreads
                            (pthreads under ThreadSanitizer)
     Windows (_WIN32)       Win32: SRW locks, condition variables,
                            _beginthreadex, QueryPerformanceCounter, Windows
                            7 or later. MinGW-w64 (gcc or clang); MSVC
                            Visual Studio 2022 17.5 or later, with the
                            implementation file compiled as C with /std:c11
                            /experimental:c11atomics (MSVC's C++ has no atomics
                            the header can use; the declarations work from C++).
                            The implementation includes <windows.h> with
                            WIN32_LEAN_AND_MEAN and NOMINMAX: a file that needs
                            the rest of it includes <windows.h> first.
     macOS (__APPLE__)      pthreads (Apple's libc has no <threads.h>; no
                            semaphores are used); macOS 10.15 or later
                            (aligned_alloc; clock_gettime came in 10.12).

   7. LIMITS AND NON-GOALS
     At most 4M live variables and 4M pre-created operations per engine; a handle
     slot is retired after 511 reuses so stale handles stay detectable. No graph
     optimiser beyond the executor's memory plan, no distributed scheduling. Tested on Linux
     (natively) and Windows (MinGW-w64 builds under Wine); MSVC and macOS are not
     built by the project's tests (README: platforms).
*/
#ifndef DEPENG_H
#define DEPENG_H

/* The implementation needs POSIX clocks and sysconf; ask for them when
   depeng.h is the first header of the file (else the fallbacks below apply). */
#if defined(DEPENG_IMPLEMENTATION) && !defined(_WIN32) && !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
/* MinGW-w64 can hand the printf family to the system's msvcrt.dll, whose
   older versions do not know %zu (the log messages use it); its own C99
   printf is asked for (the default of current MinGW-w64 releases). */
#if defined(DEPENG_IMPLEMENTATION) && defined(__MINGW32__) && !defined(__USE_MINGW_ANSI_STDIO)
#define __USE_MINGW_ANSI_STDIO 1
#endif
/* Apple's headers hide _SC_NPROCESSORS_ONLN under a plain _POSIX_C_SOURCE */
#if defined(DEPENG_IMPLEMENTATION) && defined(__APPLE__) && !defined(_DARWIN_C_SOURCE)
#define _DARWIN_C_SOURCE
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DEPENG_VERSION_MAJOR 0
#define DEPENG_VERSION_MINOR 2
#define DEPENG_VERSION_PATCH 0
#define DEPENG_VERSION_STRING "0.2.0"

#ifndef DP_API
#ifdef DEPENG_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define DP_API static __attribute__((unused))   /* one-file use: unused calls are fine */
#else
#define DP_API static
#endif
#else
#define DP_API extern
#endif
#endif

/* The inline dp_atomic_int calls use MSVC's intrinsics there; the header is
   included outside the C linkage block, as C++ needs. */
#if defined(_MSC_VER) && !defined(__clang__) && !defined(__GNUC__)
#include <intrin.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================== 8. API
   At a glance:
     engine   dp_engine_create dp_engine_destroy dp_engine_desc_get dp_engine_stats_get
              dp_default_engine dp_default_engine_shutdown dp_cpu_count
     vars     dp_var_create dp_var_delete dp_var_delete_fn dp_var_state_get
     ops      dp_push dp_push_sync dp_push_async dp_complete dp_set_error
              dp_opr_create dp_opr_push dp_opr_destroy dp_push_batch dp_opr_push_n
     waits    dp_wait_var dp_wait_all dp_wait_var_for dp_wait_all_for
              dp_engine_dump_pending dp_run_ready
     ranges   dp_parallel_for
     profiler dp_profiler_start dp_profiler_stop dp_profiler_dump_chrome
              dp_profiler_dump_summary dp_profiler_clear
     trace    desc.trace, dp_trace_write_dot, dp_trace_recorder_create
              dp_trace_recorder_event dp_trace_recorder_name_var
              dp_trace_recorder_mark dp_trace_write_html dp_trace_recorder_destroy
     misc     dp_result_string dp_log_stderr dp_last_error dp_last_error_item dp_clear_last_error
              dp_set_default_logger dp_log_add_items dp_log dp_engine_alloc dp_engine_free dp_thread_yield
              dp_engine_gpu_count (and, inline, the four atomic calls)
     arrays   dp_dtype_size dp_dtype_name dp_shape_size
              dp_nd_empty dp_nd_zeros dp_nd_ones dp_nd_full dp_nd_arange dp_nd_from_host
              dp_nd_read dp_nd_write dp_nd_wait_to_read dp_nd_wait_to_write
              dp_nd_reshape dp_nd_slice dp_nd_copy_to dp_nd_astype dp_nd_retain dp_nd_release
              dp_nd_shape dp_nd_dtype dp_nd_ctx dp_nd_engine dp_nd_bytes dp_nd_var dp_nd_data
     files    dp_nd_save_npy dp_nd_load_npy dp_nd_save_npz dp_nd_load_npz dp_inflate dp_crc32
     random   dp_random_seed dp_random_var dp_random_next dp_random_uniform01
              dp_nd_random_uniform dp_nd_random_normal
     temp     dp_temp_space_var dp_temp_space
     operators dp_invoke dp_operator_register dp_operator_find
              dp_operator_set_kernel dp_operator_list dp_operator_parse_params
     data     dp_nd_load_csv
     extending dp_dtype_load dp_dtype_store dp_dtype_load_n dp_dtype_store_n
              dp_shape_format dp_nd_view dp_nd_borrow
              dp_nd_same_storage dp_nd_version dp_nd_check_ctx dp_nd_copy_into
              dp_operator_arity dp_operator_set_param
              dp_operator_register_with_gradient dp_invoke_parsed dp_gemm dp_gemm_on dp_gemm_pack_b_on
              dp_set_tracker dp_nd_tag dp_nd_set_tag
     storage  dp_storage_configure dp_storage_stats_get dp_storage_release_pool
     layers   dp_engine_extension (per-engine state of a layer, e.g. arrays)   */

/* Result codes. DP_OK is 0; every failure is negative. */
typedef enum dp_result {
    DP_OK = 0,
    DP_ERROR_INVALID_ARGS = -1,   /* NULL function, negative count, bad desc  */
    DP_ERROR_INVALID_HANDLE = -2, /* deleted or never-created var / op        */
    DP_ERROR_BAD_CONTEXT = -3,    /* unknown device type or id                */
    DP_ERROR_OUT_OF_MEMORY = -4,
    DP_ERROR_OP_FAILED = -5,      /* an operation failed; see dp_failure      */
    DP_ERROR_IN_OPERATION = -6,   /* wait/destroy from inside an operation    */
    DP_ERROR_THREAD = -7,         /* a thread or lock could not be created    */
    DP_ERROR_BACKEND = -8,        /* the device backend reported an error     */
    DP_ERROR_IO = -9,             /* a file could not be opened, read or written */
    DP_ERROR_FORMAT = -10,        /* a file's contents are not what they claim */
    DP_ERROR_TIMEOUT = -11        /* a timed wait ended before the work did    */
} dp_result;

/* Handles. A handle is one 64-bit id. Its high 32 bits name the engine that
   made it: each engine takes the next number of a process-wide counter
   (never 0), so two engines alive in one process have different numbers
   until 2^32 engines have been created, and a handle of another engine,
   live or destroyed, is refused with DP_ERROR_INVALID_HANDLE and a log line
   naming both engines ("handle of engine #7 given to engine #9"). So 32
   bits identify the engine, and the chance that another engine's handle
   goes undetected is 0 while fewer than 2^32 engines have been created in
   the process: only an engine created 2^32 engines after the handle's
   could take it for its own (and then its slot, generation and kind must
   match a live object too). The low 32 bits: 22
   bits index a slot, the next 9 bits are that slot's generation, the top
   bit says whether it names an operation or a variable. Deleting bumps the
   generation, so an old handle no longer matches its slot and every call
   reports DP_ERROR_INVALID_HANDLE instead of touching reused memory; so does
   an op's id used as a variable's (a cast, or an id copied through a
   binding) and the reverse. Id 0 is never valid, so a zero-initialised
   handle is "none". Trace events carry the whole id; messages, the DOT
   output and the replay page show its low 32 bits ("variable 0x00400001"). */
typedef struct dp_var { uint64_t id; } dp_var;
typedef struct dp_opr { uint64_t id; } dp_opr;

typedef struct dp_engine dp_engine;

/* Device context. dev_type 0 means CPU, so a zeroed dp_ctx is CPU device 0.
   DP_DEV_CPU_PINNED is host memory the GPU backend page-locks (MXNet's
   cpu_pinned): arrays there are CPU arrays whose copies to and from a GPU
   run at full bus speed, asynchronously; operations on them run on CPU
   device 0's workers. Arrays there need host_alloc / host_free
   (dp_storage_configure). */
enum { DP_DEV_DEFAULT = 0, DP_DEV_CPU = 1, DP_DEV_GPU = 2, DP_DEV_CPU_PINNED = 3 };
typedef struct dp_ctx { int32_t dev_type; int32_t dev_id; } dp_ctx;

/* Function property: where and how an operation runs (MXNet's FnProperty). */
typedef enum dp_prop {
    DP_PROP_NORMAL = 0,
    DP_PROP_COPY_TO_GPU,      /* runs on the copy queue of its GPU            */
    DP_PROP_COPY_FROM_GPU,    /* runs on the copy queue of its GPU            */
    DP_PROP_CPU_PRIORITIZED,  /* runs on the CPU priority pool                */
    DP_PROP_GPU_PRIORITIZED,  /* GPU compute queue, ahead of normal work      */
    DP_PROP_ASYNC,            /* if ready at push, starts on the pushing thread */
    DP_PROP_DELETE_VAR,       /* internal; dp_push with it == dp_var_delete_fn */
    DP_PROP_NO_SKIP,          /* runs even when an input has failed (see also
                                 dp_push_desc.no_skip)                        */
    DP_PROP_IO,               /* file and data loading: runs on the IO pool of
                                 the CPU device, so it overlaps compute        */
    DP__PROP_COUNT
} dp_prop;

/* What a running operation learns about where it runs. Valid until the
   function returns; copy what an async function needs later. */
typedef struct dp_run_ctx {
    dp_engine *engine;
    dp_ctx ctx;
    void *stream;       /* the worker's stream on GPU devices, else NULL */
    int worker;         /* worker index in its pool, -1 on a pushing thread */
    int input_status;   /* DP_PROP_NO_SKIP ops: the status of the failure an
                           input carries (0: none). Returning it passes that
                           failure on unchanged; returning 0 marks the op's
                           writes good. Other ops never run on failed input. */
    void *internal;     /* engine use */
} dp_run_ctx;

/* Completion token handed to async functions; call dp_complete exactly once. */
typedef struct dp_completion { void *block; uint64_t seq; } dp_completion;

/* A synchronous function returns 0 on success, anything else on failure. */
typedef int (*dp_sync_fn)(dp_run_ctx *rc, void *arg);
/* An asynchronous function starts work and returns; the work ends when someone
   calls dp_complete(done, status, message), from any thread. */
typedef void (*dp_async_fn)(dp_run_ctx *rc, void *arg, dp_completion done);

/* Frees what an operation's arg owns; see dp_push_desc.cleanup. */
typedef void (*dp_cleanup_fn)(void *arg);

/* Everything about one operation. Zero-initialise, then set what you need:
   exactly one of fn / async_fn; reads/writes may list a var twice or in both
   sets (deduplicated, write wins), each list at most DP_PUSH_MAX_VARS
   (30,000) entries (more: DP_ERROR_INVALID_ARGS, item NEGATIVE_COUNT). name
   must stay valid until the op completes (a string literal is the usual
   choice). */
#define DP_PUSH_MAX_VARS 30000
typedef struct dp_push_desc {
    dp_sync_fn fn;
    dp_async_fn async_fn;
    void *arg;
    const dp_var *reads;  int num_reads;
    const dp_var *writes; int num_writes;
    dp_ctx ctx;
    dp_prop prop;
    int priority;         /* higher runs first on priority queues */
    const char *name;
    int no_skip;          /* non-zero: run even when an input has failed, as
                             DP_PROP_NO_SKIP does, with any other property */
    dp_cleanup_fn cleanup;/* optional: cleanup(arg) runs exactly once, whatever
                             becomes of the op. dp_push: after the function has
                             run (an async op: after dp_complete) or the op was
                             skipped for a failed input, on the thread that
                             completes it, before its variables are released
                             (so a wait on them returns after it); or inside
                             dp_push, before it returns an error, when the push
                             is refused. dp_opr_create: once the op is destroyed
                             and its last pushed run is done (or at engine
                             destroy), or inside dp_opr_create when it fails.
                             It may push; a wait on its engine or a destroy of
                             it from a cleanup returns DP_ERROR_IN_OPERATION
                             (logged), as from inside an op, also where the
                             cleanup runs on the caller's thread (a refused
                             push). The check sees the cleanup's own thread
                             only: a cleanup that blocks on another thread
                             which waits on the engine still deadlocks. */
} dp_push_desc;

/* A failure as reported by a wait. */
typedef struct dp_failure {
    int status;           /* what the function returned / completed with */
    char op_name[64];     /* the first operation that failed             */
    char message[256];
} dp_failure;

typedef enum dp_engine_type {
    DP_ENGINE_DEFAULT = 0, DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE
} dp_engine_type;

/* Device backend (one per engine, for DP_DEV_GPU): what the engine needs
   to run operations on a GPU, its streams and events. Each function returns
   0 on success or a backend error code; error_string turns a code into
   text. Memory for arrays is the array layer's (dp_memory_backend).
   depeng_cuda.h provides the CUDA one; tests use a fake one on the CPU. */
typedef struct dp_device_backend {
    const char *name;
    int (*device_count)(void *user);
    int (*set_device)(int dev_id, void *user);
    int (*stream_create)(int dev_id, int is_copy, void **out_stream, void *user);
    int (*stream_destroy)(int dev_id, void *stream, void *user);
    int (*stream_synchronize)(int dev_id, void *stream, void *user);
    const char *(*error_string)(int err, void *user);
    void *user;
    /* Events (optional, all four or none). With them a GPU worker does not
       wait for its stream after each op: it records an event, takes its
       next op, and completes the first one when event_query says the event
       has passed (0; DP_EVENT_PENDING while it has not; anything else is an
       error code, which error_string explains). At
       most 8 ops per worker are in flight; while a worker runs another op,
       an idle peer of its pool completes them (with gpu_worker_nthreads 1
       a completion can wait for the next op's host-side function). Without
       them each op ends with stream_synchronize. */
    int (*event_create)(int dev_id, void **out_event, void *user);
    int (*event_destroy)(int dev_id, void *event, void *user);
    int (*event_record)(int dev_id, void *event, void *stream, void *user);
    int (*event_query)(int dev_id, void *event, void *user);
} dp_device_backend;

#define DP_EVENT_PENDING (-1)   /* dp_device_backend.event_query: not passed yet */

/* Allocator: both functions or neither. alloc gets the alignment (a power of
   two); free gets the size that was asked for. An engine's allocator
   (dp_engine_desc.allocator) serves every allocation the engine and the
   layers on it make for it: its tables, queues and operation blocks, its
   threads' start records, arrays and their storage, resources, executors,
   KV stores, the GEMM's workspaces (dp_gemm_on, kept for the next calls).
   Only what belongs to no engine uses malloc: symbols (depeng_nn.h), a
   trace recorder made with a NULL allocator, dp_gemm's workspace and
   dp_gemm_on's with eng NULL. When alloc returns NULL the call that needed
   the memory fails with DP_ERROR_OUT_OF_MEMORY and an OUT_OF_MEMORY log
   line (but dp_gemm_on, which computes the same bits without it); make
   faults fails every allocation in turn to show it. */
typedef struct dp_allocator {
    void *(*alloc)(size_t size, size_t align, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} dp_allocator;

/* Log levels and items: tests check item ids, people read messages. */
enum { DP_LOG_PANIC = 0, DP_LOG_ERROR = 1, DP_LOG_WARN = 2, DP_LOG_INFO = 3 };
#define DP__LOG_ITEMS(X) \
    X(OK, "no error") \
    X(INVALID_VAR, "variable handle is deleted or was never created") \
    X(INVALID_OP, "operation handle is deleted or was never created") \
    X(NULL_FUNCTION, "push needs exactly one of fn / async_fn") \
    X(NEGATIVE_COUNT, "bad read or write count (negative, over 30000, or with a NULL array)") \
    X(BAD_CONTEXT, "unknown device type or device id") \
    X(BAD_PROP, "unknown property, or DELETE_VAR without exactly one write") \
    X(OUT_OF_MEMORY, "out of memory") \
    X(OP_FAILED, "an operation failed") \
    X(WAIT_IN_OP, "waiting for or destroying the engine from inside one of its operations or cleanups would deadlock") \
    X(DOUBLE_COMPLETE, "dp_complete called twice for one operation") \
    X(THREAD_CREATE, "could not start a worker thread") \
    X(BACKEND, "the device backend reported an error") \
    X(UNREPORTED_FAILURE, "engine destroyed with a failure nobody waited for") \
    X(BAD_DESC, "engine desc or environment variable has an invalid value") \
    X(HANDLES_EXHAUSTED, "no free handle slots") \
    X(IO, "file could not be opened, read or written") \
    X(PENDING, "operations are still pending") \
    X(NULL_ARGUMENT, "a required pointer argument is NULL") \
    X(ENGINE_NOT_LIVE, "engine is destroyed, or being destroyed by another thread")
#define DP__ITEM_ENUM(name, msg) DP_LOGITEM_##name,
/* Items from DP_LOGITEM_EXTENSION on belong to the layers built on the
   engine (the array layer's are DP_LOGITEM_ND_ARGS and the others below;
   add yours with dp_log_add_items). */
typedef enum dp_log_item {
    DP__LOG_ITEMS(DP__ITEM_ENUM) DP__LOGITEM_COUNT,
    DP_LOGITEM_EXTENSION = 64, DP_LOGITEM_LAST = 127
} dp_log_item;
#undef DP__ITEM_ENUM

/* Logger. Called from worker threads too: it must be reentrant. */
typedef struct dp_logger {
    void (*func)(const char *tag, uint32_t level, uint32_t item,
                 const char *message, uint32_t line, const char *file, void *user);
    void *user;
} dp_logger;

/* Teaching trace: one event per state change. Called with the variable's lock
   held: the callback must not call into the engine. */
typedef enum dp_trace_kind {
    DP_TRACE_PUSH,      /* op pushed; op_pending = variables it still waits for */
    DP_TRACE_VAR,       /* a variable changed state; see readers/queue        */
    DP_TRACE_RUN,       /* op starts running                                  */
    DP_TRACE_COMPLETE,  /* op completed (status)                              */
    DP_TRACE_DELETE,    /* variable deleted                                   */
    DP_TRACE_GRANT      /* one dependency of a waiting op met; op_pending =
                           what it still waits for (0: it is ready now)     */
} dp_trace_kind;
typedef struct dp_trace_event {
    dp_trace_kind kind;
    uint64_t op_seq;          /* push number of the operation, from 1        */
    const char *op_name;
    int op_pending;           /* its unmet dependency count now              */
    int status;
    dp_var var;               /* for DP_TRACE_VAR / DELETE                    */
    int var_readers;          /* running reads, or -1 while a write runs      */
    int queue_len;            /* ops waiting on the variable                  */
    const char *queue_names[8]; int queue_write[8]; /* first 8 of them         */
} dp_trace_event;
typedef struct dp_trace {
    void (*func)(const dp_trace_event *ev, void *user);
    void *user;
    int record_graph;         /* keep pushed ops for dp_trace_write_dot and
                                 dp_trace_write_html's graph                   */
} dp_trace;


/* Engine desc. Zero means default; a zero thread count reads the MXNet-style
   environment variable first (unless ignore_env):
     field                  env var                        default
     type                   DEPENG_ENGINE_TYPE             PerDevice
     cpu_worker_nthreads    DEPENG_CPU_WORKER_NTHREADS     dp_cpu_count()
     cpu_priority_nthreads  DEPENG_CPU_PRIORITY_NTHREADS   1
     gpu_worker_nthreads    DEPENG_GPU_WORKER_NTHREADS     2
     gpu_copy_nthreads      DEPENG_GPU_COPY_NTHREADS       1
     gpu_backend            -                              none (no GPUs)
     allocator              -                              malloc/free
     logger                 -                              errors to stderr
   DP_NO_THREADS (-1) asks for no thread at all in cpu_worker_nthreads,
   cpu_priority_nthreads and gpu_copy_nthreads (dp_engine_desc_get then
   says 0; passed back to dp_engine_create, 0 is the default again):
     - no CPU workers: the CPU ops wait in their pool's queue until a thread
       runs them: dp_run_ready, or any dp_wait_* (which then always runs
       ready ops while it waits; see dp_run_ready) - frame-driven use;
     - no priority threads: DP_PROP_CPU_PRIORITIZED ops go to the CPU pool
       of their device, in its FIFO order (their priority is not kept);
     - no copy threads: DP_PROP_IO ops go to the CPU pool of their device
       (the pooled engine: to its task pool; an IO op on a GPU device, to
       that GPU's compute pool), and GPU copies to the GPU device's compute
       pool.
   The threads an engine starts, and when (the naive engine starts none):
     PerDevice  cpu_worker_nthreads    create (CPU 0), first op on CPU n
                cpu_priority_nthreads  create
                gpu_copy_nthreads      first DP_PROP_IO op (one IO pool),
                                       first copy op per GPU (copy pool)
                gpu_worker_nthreads    first op per GPU
     Pooled     cpu_worker_nthreads    create (the task pool: CPU and GPU)
                gpu_copy_nthreads      create (the IO and copy pool)
   Nothing else starts a thread (no timer, no helper thread).  */
#define DP_NO_THREADS (-1)
typedef struct dp_engine_desc {
    dp_engine_type type;
    int cpu_worker_nthreads;
    int cpu_priority_nthreads;
    int gpu_worker_nthreads;
    int gpu_copy_nthreads;
    const dp_device_backend *gpu_backend;
    dp_allocator allocator;
    dp_logger logger;
    dp_trace trace;
    int ignore_env;
    int no_push_yield;        /* 1: dp_push never yields the pushing thread's core
                                 (see "pacing" under THREADING MODEL) */
    int push_runs_ops;        /* 1: a push far ahead of busy workers runs ready
                                 ops on the pushing thread instead of yielding
                                 (see "running on the pusher" under THREADING
                                 MODEL for what that changes); default 0 */
    int pending_report_ms;    /* dp_engine_destroy still waiting after this long
                                 logs what is pending (as dp_engine_dump_pending
                                 writes it), then goes on waiting; 0: 10000,
                                 negative: never */
    int no_wait_help;         /* whether dp_wait_var / dp_wait_all on a
                                 threaded engine with workers run ready CPU ops
                                 on the waiting thread while the workers are
                                 busy (see "the waiting thread" under THREADING
                                 MODEL). 0 (default): when the waiting thread
                                 has a core to give, i.e. cpu_worker_nthreads
                                 is below dp_cpu_count() at create; 1 (or any
                                 positive value): never, the waits sleep;
                                 DP_WAIT_HELP_ALWAYS (or any negative
                                 value): also when the workers have a core
                                 each (not on the pooled engine with a GPU
                                 backend, whose waits never help) */
} dp_engine_desc;
/* desc.no_wait_help: the waiting thread helps even when the CPU workers
   already have a core each (for workers that spend their time blocked, or
   a test that needs the helping whatever the machine). */
#define DP_WAIT_HELP_ALWAYS (-1)

typedef struct dp_engine_stats {
    uint64_t pushed, completed, failed, skipped;
    uint64_t live_vars, pending_ops;
    uint64_t pool_bytes;      /* bytes held by the operation block pools      */
    uint64_t handle_bytes;    /* bytes held by the var and op tables          */
    uint64_t queue_bytes;     /* bytes held by the variables' queues: a queue
                                 keeps the room it once needed, also for the
                                 next variable in its slot. 0 on the threaded
                                 engines without a trace callback, whose
                                 variables keep no queue (their waiting ops
                                 are linked in the op blocks, pool_bytes)    */
    /* Contention since the engine was created: what limits scaling to many
       cores (bench/README.md). Always counted: a counter is written only by
       a thread that found a lock held or must look again (worker_wakeups:
       one that wakes a sleeper; pusher_ran: one that runs an op as a
       pusher), never on the uncontended path. Divide by pushed for a
       figure per op. */
    uint64_t var_lock_contended;    /* a variable's lock was held by another
                                       thread (push, naive run; a completion
                                       takes it only on the naive engine and
                                       with a trace callback)                 */
    uint64_t queue_lock_contended;  /* a pool's ready queue lock was held: the
                                       FIFO's take lock, or a priority pool's
                                       heap mutex (push or take)              */
    uint64_t queue_busy_retries;    /* a taker found a push half done in a
                                       FIFO queue and had to look again       */
    uint64_t worker_wakeups;        /* sleeping workers woken (a system call
                                       each, by a push or a peer)             */
    uint64_t pool_cas_retries;      /* failed compare-and-swaps returning
                                       finished blocks to a block pool        */
    uint64_t op_ref_cas_retries;    /* failed compare-and-swaps pinning a
                                       pre-created op in dp_opr_push           */
    uint64_t pusher_ran;            /* ops run on a pushing thread
                                       (desc.push_runs_ops)                   */
    uint64_t caller_ran;            /* ops run by dp_run_ready or a wait on
                                       the calling thread                     */
    /* The CPU pools' ready queues (see >>queues), counted on every use, each
       by the thread that does it in a line of its own: */
    uint64_t queue_takes;           /* a FIFO pool's shared queue was taken
                                       from under its take lock, by a worker,
                                       a pushing thread, dp_run_ready or a
                                       wait (found an op or not) */
    uint64_t deque_pushes;          /* ops a worker put in its own deque (made
                                       ready by an op it ran)                 */
    uint64_t deque_overflows;       /* ... that found it full and went to the
                                       shared queue instead                   */
    uint64_t steals;                /* ops a worker took from a peer's deque  */
    uint64_t steal_retries;         /* steals that lost the race for an op
                                       (a failed compare-and-swap)            */
    uint64_t caller_stole;          /* of caller_ran: ops taken from a
                                       worker's deque (see >>callers)         */
    uint64_t helper_wakeups;        /* sleeping helping waits woken because
                                       their pool's workers were all busy
                                       and work came in (a system call each)  */
} dp_engine_stats;

/* ---- engine ----------------------------------------------------------- */
/* The number of CPUs this process may run on, at least 1: the online CPUs,
   or fewer where the process's affinity mask allows fewer (taskset, a
   container's cpuset; on Linux the mask of the process's main thread, read
   from /proc/self/status; on Windows the process affinity mask, when the
   machine has one processor group). CPU time quotas (cgroup cpu.max, docker
   --cpus) are not counted. It is the default of desc.cpu_worker_nthreads;
   a program sizing its own threads beside the engine's can use it too. It
   reads the system each call (a file on Linux), so call it once, not per
   frame. Thread safety: any thread, any time, no engine needed. */
DP_API int dp_cpu_count(void);
/* Creates an engine. desc may be NULL (all defaults). Returns DP_OK and sets
   *out, or an error (bad desc, out of memory, threads; a NULL out is
   DP_ERROR_INVALID_ARGS), each logged. Thread safety: any. */
DP_API dp_result dp_engine_create(const dp_engine_desc *desc, dp_engine **out);
/* Waits for all pushed work, stops the workers and frees everything. Returns
   the first failure nobody has waited for (also copied into *failure if not
   NULL), or DP_ERROR_IN_OPERATION when called from one of its own operations
   or their cleanups (nothing is destroyed then). An op that never completes
   (an async op whose dp_complete never comes) makes it wait forever; after
   desc.pending_report_ms it logs what it waits for (level error, item
   PENDING). To give up instead, wait first with dp_wait_all_for. A NULL
   engine is DP_ERROR_INVALID_ARGS (logged). Thread safety: no other call on
   this engine may run concurrently or afterwards, but ops may still
   complete; a second dp_engine_destroy of it that starts while the first
   runs, or finds it destroyed, is detected: it returns
   DP_ERROR_INVALID_ARGS with item ENGINE_NOT_LIVE, to the default logger
   (dp_set_default_logger; the engine may be gone), and touches nothing.
   Only a destroy of an address that a newer engine has taken since cannot
   be told apart: that destroys the newer engine. */
DP_API dp_result dp_engine_destroy(dp_engine *eng, dp_failure *failure);
/* Writes what the engine still waits for, one line each: how many ops are
   pending, every running op (push number, name, sync or async; not the
   naive engine's ops that run inside dp_push without a block), and every
   busy variable with its running access and the first ops in its queue
   (push number, name, read or write). At most 32 lines, then a count of
   the rest. For a timed wait that timed out, or a hang. Any thread, any
   time; it locks each variable and block pool briefly (and writes nothing
   while it holds a lock). Names of running ops are copied while they run:
   they must stay valid until the op completes, as dp_push_desc.name says.
   Errors (each logged): DP_ERROR_INVALID_ARGS for a NULL engine or stream,
   DP_ERROR_IO when the stream reports a write error. */
DP_API dp_result dp_engine_dump_pending(dp_engine *eng, FILE *out);
/* The getters: each fills *out and returns DP_OK, or DP_ERROR_INVALID_ARGS
   for a NULL engine or out (*out zeroed when out is given). Any thread.
   dp_engine_desc_get: the desc with every default resolved, and the
   threads the engine has (the naive engine: 0 of each kind);
   dp_engine_stats_get: counters (approximate while work runs). */
DP_API dp_result dp_engine_desc_get(const dp_engine *eng, dp_engine_desc *out);
DP_API dp_result dp_engine_stats_get(dp_engine *eng, dp_engine_stats *out);
/* The process-wide engine (MXNet's Engine::Get), created with defaults on first
   use; NULL if that failed. dp_default_engine_shutdown destroys it (also run
   at exit). Thread safety: any thread. */
DP_API dp_engine *dp_default_engine(void);
DP_API void dp_default_engine_shutdown(void);

/* ---- variables -------------------------------------------------------- */
/* A new variable; id 0 if out of memory or handles, or for a NULL engine
   (each logged). Thread safety: any. */
DP_API dp_var dp_var_create(dp_engine *eng);
/* Schedules deletion: runs after every op pushed before it on var. The handle
   is invalid from this call on. It pushes and returns: threads as dp_push. */
DP_API dp_result dp_var_delete(dp_engine *eng, dp_var var);
/* Same, and fn(rc, arg) runs (on ctx) once the variable is free, like MXNet's
   DeleteVariable(delete_fn, ctx, var). fn may be NULL. Threads as dp_push. */
DP_API dp_result dp_var_delete_fn(dp_engine *eng, dp_var var, dp_sync_fn fn, void *arg, dp_ctx ctx);
typedef enum dp_var_state {
    DP_VAR_INVALID = 0, DP_VAR_READY, DP_VAR_BUSY, DP_VAR_FAILED
} dp_var_state;
/* A snapshot into *out: READY (no work on it), BUSY (ops running or
   waiting), FAILED; INVALID with DP_ERROR_INVALID_HANDLE for a deleted or
   unknown variable or another engine's, DP_ERROR_INVALID_ARGS for a NULL
   engine or out (each logged). It takes no memory and pushes nothing. Any
   thread. */
DP_API dp_result dp_var_state_get(dp_engine *eng, dp_var var, dp_var_state *out);

/* ---- operations ------------------------------------------------------- */
/* Pushes one operation. At most DP_PUSH_MAX_VARS (30,000) reads and as
   many writes (see dp_push_desc). On any error nothing is pushed. Thread
   safety: any thread, also from inside operations. */
DP_API dp_result dp_push(dp_engine *eng, const dp_push_desc *desc);
/* Shorthands: CPU, normal property, priority 0, no name; limits (at most
   DP_PUSH_MAX_VARS reads and as many writes) and threads as dp_push. */
DP_API dp_result dp_push_sync(dp_engine *eng, dp_sync_fn fn, void *arg,
                              const dp_var *reads, int num_reads,
                              const dp_var *writes, int num_writes);
DP_API dp_result dp_push_async(dp_engine *eng, dp_async_fn fn, void *arg,
                               const dp_var *reads, int num_reads,
                               const dp_var *writes, int num_writes);
/* Ends an async operation; status 0 is success, message may be NULL. A second
   call for the same operation, or a zeroed token, is logged and ignored. Any
   thread. */
DP_API void dp_complete(dp_completion done, int status, const char *message);
/* Inside a sync function, on its thread: sets the message that goes with a
   non-zero return. */
DP_API void dp_set_error(dp_run_ctx *rc, const char *message);
/* Pre-created operation (MXNet's NewOperator): validated once, pushed many
   times without allocation. At most DP_PUSH_MAX_VARS reads and as many
   writes. Returns id 0 on error (logged). Any thread, also from inside
   operations. */
DP_API dp_opr dp_opr_create(dp_engine *eng, const dp_push_desc *desc);
/* Pushes op on ctx with priority. Threads as dp_push. */
DP_API dp_result dp_opr_push(dp_engine *eng, dp_opr op, dp_ctx ctx, int priority);
/* Batch push: descs[0..count-1] in that order, exactly as count dp_push
   calls one after another with no other thread's push between them (the
   order per variable is the array's), but with each variable of the batch
   locked once for the whole batch (all of them together, in address order),
   the push numbers taken in one step, and the ops ready at once handed to
   their pool in one queue append. For a thread that submits ops in runs;
   the batch holds its variables' locks while it appends, so completions on
   them wait that long: batches of tens to a few thousand ops. Every op runs
   as if pushed alone (also on the naive engine, where each runs on this
   thread once the whole batch is queued; the naive engine's run-at-push
   shortcut is not taken). count 0 does nothing. Each desc as dp_push's (at
   most DP_PUSH_MAX_VARS reads and as many writes). On any error nothing is
   pushed and, as dp_push does, every desc's cleanup is called: NULL engine
   or descs, negative count (DP_ERROR_INVALID_ARGS), a bad desc (its error,
   as dp_push reports it), DP_PROP_DELETE_VAR (DP_ERROR_INVALID_ARGS: use
   dp_var_delete), a deleted or unknown variable (DP_ERROR_INVALID_HANDLE),
   out of memory. Each is logged. Thread safety: any thread, also from
   inside operations. */
DP_API dp_result dp_push_batch(dp_engine *eng, const dp_push_desc *descs, int count);
/* Pushes op count times on ctx with priority, as count dp_opr_push calls
   would, taking its variables' locks and its reference count once. count 0
   only checks the handle. Errors: DP_ERROR_INVALID_ARGS (NULL engine,
   negative count, bad ctx), DP_ERROR_INVALID_HANDLE (op destroyed or never
   created, or more than 2^31 runs pending), DP_ERROR_OUT_OF_MEMORY; nothing
   is pushed then. Thread safety: any thread, also from inside operations. */
DP_API dp_result dp_opr_push_n(dp_engine *eng, dp_opr op, dp_ctx ctx, int priority, int count);
/* The handle is invalid at once; the op is freed after its last pushed run.
   Any thread, also from inside operations. */
DP_API dp_result dp_opr_destroy(dp_engine *eng, dp_opr op);

/* ---- waits ------------------------------------------------------------- */
/* Blocks until every op pushed so far that reads or writes var is done.
   Returns DP_ERROR_OP_FAILED (and fills *failure) if var failed, then clears
   that variable's failure. From inside one of this engine's operations or
   their cleanups it returns DP_ERROR_IN_OPERATION (logged) instead of
   deadlocking. On the threaded engines dp_wait_var and dp_wait_all run
   ready CPU ops on the waiting thread while what they wait for is not done
   and every CPU worker of a pool is busy, from its shared queue and its
   workers' deques, as dp_run_ready does ("the
   waiting thread" under THREADING MODEL: only outside every op, chunk and
   cleanup, not on a worker thread; by default only where the CPU workers
   are fewer than the CPUs; desc.no_wait_help says otherwise). Without
   CPU workers (cpu_worker_nthreads = DP_NO_THREADS) every wait below, timed
   ones too, runs ready CPU ops, as nothing else would, and sleeps only
   while none is ready. Thread safety: any thread (several may wait at
   once). */
DP_API dp_result dp_wait_var(dp_engine *eng, dp_var var, dp_failure *failure);
/* Blocks until every op pushed so far is done. Returns the first failure not
   yet reported and clears every variable's failure. Same deadlock rule and
   threads. */
DP_API dp_result dp_wait_all(dp_engine *eng, dp_failure *failure);
/* The same, waiting at most timeout_ms milliseconds (0: only look). If the
   work is not done by then they return DP_ERROR_TIMEOUT (not logged) and
   report and clear nothing: a failure stays for a later wait. A timeout of
   0 on a busy variable only looks at it: nothing is pushed, nothing kept. A
   longer wait on a variable takes a write position in its queue, like
   dp_wait_var: one that times out keeps it (an op block and a small record)
   until var's earlier work is done, and reads pushed after it wait for the
   reads before it; the next timed wait on var takes that position over
   when nothing but other waits was pushed on var since, so a loop of timed
   waits keeps one per polling thread and variable, not one per call. The deadline is kept on the monotonic clock;
   on the C11 threads path (the default on Linux with <threads.h>) the sleep
   itself is timed by the wall clock, so setting the clock back during a wait
   lengthens it by as much (the pthreads path, DEPENG_USE_PTHREADS, and
   Windows are not affected). Thread safety: any thread;
   DP_ERROR_IN_OPERATION from inside one of the engine's operations or
   their cleanups. */
DP_API dp_result dp_wait_var_for(dp_engine *eng, dp_var var, uint32_t timeout_ms, dp_failure *failure);
DP_API dp_result dp_wait_all_for(dp_engine *eng, uint32_t timeout_ms, dp_failure *failure);

/* ---- ranges ------------------------------------------------------------ */
/* A data-parallel loop over the engine's CPU workers (like oneTBB's
   parallel_for, enkiTS's task sets, Taskflow's for_each): [0, n) is cut
   into chunks, and fn(begin, end, user) runs once for each chunk, on the
   calling thread and on idle workers of the engine's CPU pool (the pool of
   the calling worker's device when called from a CPU worker, else CPU
   device 0's, started if it was not yet). It returns when every chunk has
   run. The caller always runs chunks itself and never waits for a chunk
   nobody has started: busy workers are not waited for (the caller runs
   what they do not take), and a worker helps only between ops, never in
   the middle of one, and stops taking chunks as soon as an op is queued
   for its pool. So it may be called from inside an op (a kernel splitting
   its work), nested in another range's fn, and from many threads at once,
   without extra threads or deadlock. On the naive engine, with one
   chunk only, or while the pool already serves 4 other ranges, the
   caller runs every chunk itself.
   Chunks. Chunk k is [k*s, min(n, (k+1)*s)), k = 0 .. ceil(n/s)-1, each
   one fn call, in no set order and on any of those threads. With
   deterministic set, s = grain, or ceil(n/256) when grain is 0: the chunk
   boundaries then depend on n and grain only, never on timing, the worker
   count or the engine type, so a reduction that keeps one partial result
   per chunk (index begin/s) and combines them in chunk order afterwards is
   bitwise reproducible. Without it s = max(grain, ceil(n / (64 * threads))),
   threads being the pool's workers plus the caller (grain 0 counts as 1):
   coarser chunks when fewer threads can help.
   fn must not wait for the engine's work (on any thread, as inside an op,
   dp_wait_* return DP_ERROR_IN_OPERATION); it may push ops and call
   dp_parallel_for again. Nothing is allocated: the range's state lives on
   the caller's stack. Errors (each logged, nothing run): DP_ERROR_INVALID_ARGS
   for a NULL engine, desc or fn, or a negative n or grain. Thread safety:
   any thread, also from inside operations and from fn. */
typedef void (*dp_range_fn)(int64_t begin, int64_t end, void *user);
typedef struct dp_range_desc {
    int64_t n;              /* the range is [0, n); 0 runs nothing */
    int64_t grain;          /* chunk size (see above); 0: automatic */
    dp_range_fn fn;
    void *user;             /* passed to fn */
    int deterministic;      /* 1: boundaries from n and grain only */
} dp_range_desc;
DP_API dp_result dp_parallel_for(dp_engine *eng, const dp_range_desc *desc);
/* How ops and ranges share the workers. Ready ops run at once on their
   pool's workers: the engine overlaps independent ops. A kernel that
   splits its work calls dp_parallel_for on its op's thread, which runs
   chunks itself and is joined only by idle workers of that pool (a worker
   finishes its op before it takes a chunk and stops taking chunks once an
   op is queued for it): a chain of ops, such as a training step, gets
   every core on each large kernel, independent ops keep their workers,
   and no thread beyond the pools' and the callers' ever runs.
   The built-in CPU kernels that split so, from about 2^17 elements (or
   multiply-adds) on, below which they run on their op's thread alone: the
   float32 element-wise ops, the binary ones (add, sub, mul, div, maximum,
   minimum, power, broadcast or not, any dtype) and their gradients, dot
   and FullyConnected (dp_gemm_on), the optimizer updates, sum, mean, max
   and min over one run of adjacent axes or all of them (and their
   gradients), softmax and log_softmax (and their gradients);
   depeng_nn.h's Convolution and Deconvolution, Pooling, Activation,
   BatchNorm, Dropout and FullyConnected's bias. Their chunks follow from the shape alone, so
   their results are bitwise the same at any worker count and on every
   engine. A reduction with many outputs reduces each in the serial order
   (its bits unchanged); one with few outputs (over all axes, say) of at
   least 2^17 elements adds fixed partial results along the axis in chunk
   order, which rounds differently from the serial sum. sum, max and min
   of integer arrays into integers (exact in 64-bit integers) and argmax
   split the same way and give the serial walk's result whatever the
   split. Reductions over axes that are not adjacent run on one core. */

/* ---- running ready ops on the caller (frame-driven use) ---------------- */
/* What dp_run_ready does: it stops at the first of these that holds, looked
   at before each op (so an op that runs long overruns the budget). */
typedef struct dp_run_desc {
    dp_var until;             /* stop once this variable is ready: no op
                                 pushed on it so far is waiting or running
                                 (dp_var_state_get says READY or FAILED);
                                 id 0: no variable                          */
    uint32_t max_ops;         /* stop after this many ops; 0: no limit      */
    uint32_t budget_us;       /* stop once this many microseconds have
                                 passed since the call; 0: no limit         */
} dp_run_desc;
typedef enum dp_run_stop {
    DP_RUN_IDLE = 0,          /* no ready op left that this thread may run
                                 (others may still wait or run elsewhere)   */
    DP_RUN_VAR_READY,         /* desc.until is ready                        */
    DP_RUN_MAX_OPS,           /* desc.max_ops ops ran                       */
    DP_RUN_BUDGET             /* desc.budget_us passed                      */
} dp_run_stop;
typedef struct dp_run_report {
    uint32_t ops_run;         /* ops this call ran (skipped ones included)  */
    uint32_t elapsed_us;      /* time the call took                         */
    dp_run_stop stop;         /* why it returned                            */
} dp_run_report;
/* Runs ready CPU ops of eng on the calling thread, oldest first within each
   queue (the pools in a fixed order: priority pool, then CPU 0, 1, ...), until
   desc says stop or none is ready, and fills *report (may be NULL). The
   ops are taken from the shared queues of the threaded engines' CPU pools
   (the per-device engine's priority pool first, then each CPU device's
   pool; the pooled engine's task pool, its GPU ops included), as a worker
   takes them, and stolen from the oldest end of a worker's deque (the ops
   a worker's completion made ready, counted in dp_engine_stats.caller_stole)
   as an idle worker steals them; never from the IO, copy or per-device GPU pools. Only ops that are ready run, so the order the rule
   sets is unchanged, and each runs as push_runs_ops runs one (see "running
   on the pusher" under THREADING MODEL: dp_run_ctx.worker is -1, the
   caller's locks are held while it runs). Made for cpu_worker_nthreads =
   DP_NO_THREADS, where nothing else runs CPU ops but the waits; with
   workers it works beside them. Several threads may call it at once. The
   naive engine has nothing queued (it runs ops inside dp_push): DP_RUN_IDLE
   or DP_RUN_VAR_READY at once. A failed op's failure is reported by the
   waits, not here. To poll a variable without running anything, use
   dp_var_state_get. Returns DP_OK; DP_ERROR_INVALID_ARGS for a NULL engine
   or desc; DP_ERROR_INVALID_HANDLE for a desc.until that is not one of
   eng's live variables (also one deleted while the call runs: *report
   then says what ran until then; logged by dp_var_state_get);
   DP_ERROR_IN_OPERATION from inside one of eng's operations or their
   cleanups (it would run ops inside an op), with *report zeroed; each
   logged. Thread safety: any thread outside eng's
   operations and cleanups. */
DP_API dp_result dp_run_ready(dp_engine *eng, const dp_run_desc *desc, dp_run_report *report);

/* ---- profiler ---------------------------------------------------------- */
/* While started, each executed op's name, worker, device, start and end time
   are recorded. Off, it costs one branch per op. Any thread; the engine has
   one profiler, so the last start or stop wins. */
DP_API void dp_profiler_start(dp_engine *eng);
DP_API void dp_profiler_stop(dp_engine *eng);
DP_API void dp_profiler_clear(dp_engine *eng);
/* Chrome trace JSON (Chrome's Trace Event Format) for Perfetto's UI ("Open
   trace file") or chrome://tracing ("Load"): one process per device ("cpu 0",
   "gpu 1": numeric pid with a process_name metadata event) and one thread per
   worker (numeric tid, thread_name "worker N"); names are escaped and made
   valid UTF-8. Call after dp_wait_all, from any thread but an op of eng.
   Errors (each logged): DP_ERROR_INVALID_ARGS for a NULL engine or stream
   (item NULL_ARGUMENT); DP_ERROR_IO when the stream reports a write error;
   DP_ERROR_OUT_OF_MEMORY when the thread names could not be kept: the
   events are written, some metadata is missing. */
DP_API dp_result dp_profiler_dump_chrome(dp_engine *eng, FILE *out);
/* Table: count, total, min, max, mean per op name (microseconds). Any
   thread. Errors as dp_profiler_dump_chrome, and DP_ERROR_OUT_OF_MEMORY
   when some op names could not be aggregated. */
DP_API dp_result dp_profiler_dump_summary(dp_engine *eng, FILE *out);

/* ---- trace and misc ---------------------------------------------------- */
/* Graphviz DOT of the pushed ops (needs desc.trace.record_graph, else
   DP_ERROR_INVALID_ARGS logged as BAD_DESC). Any thread. Errors as
   dp_profiler_dump_chrome, and DP_ERROR_OUT_OF_MEMORY. */
DP_API dp_result dp_trace_write_dot(dp_engine *eng, FILE *out);
#ifdef DEPENG_TRACE_HTML     /* see COMPILE-TIME OPTIONS */
/* HTML replay of a traced program. A recorder keeps a copy of every trace
   event; dp_trace_write_html writes a self-contained page (inline CSS and
   JavaScript, nothing fetched) that replays them one by one: each variable's
   state (ready, read by n ops, being written, deleted) and waiting queue,
   each operation's state and count of unmet dependencies, the dependency
   graph (when desc.trace.record_graph is set), with first / back / next /
   last buttons, the arrow, Home and End keys, and "#step=N" in the URL.
   Use: create a recorder, set desc.trace.func = dp_trace_recorder_event and
   desc.trace.user = the recorder, run the program, then write the page.
   The recorder only copies (under its own lock, with its own allocator),
   so it keeps the trace callback's contract, and events may come from any
   thread. */
typedef struct dp_trace_recorder dp_trace_recorder;
/* Makes a recorder that keeps up to max_events events (0: 100000); later
   ones are counted and the page says how many are missing. Its memory comes
   from alloc (NULL or zeroed: malloc/free). Any thread.
   Errors: DP_ERROR_INVALID_ARGS (out NULL, or an allocator with only one of
   its functions), DP_ERROR_OUT_OF_MEMORY, DP_ERROR_THREAD (no lock). */
DP_API dp_result dp_trace_recorder_create(const dp_allocator *alloc, size_t max_events, dp_trace_recorder **out);
/* Frees it (NULL: nothing). Only once no engine traces into it any more:
   after the engine is destroyed or its last traced op has completed. Any
   thread then. */
DP_API void dp_trace_recorder_destroy(dp_trace_recorder *rec);
/* The trace callback: user is the recorder. Copies the event and its names.
   An event that finds no memory is counted as lost (dp_trace_write_html
   then fails with DP_ERROR_OUT_OF_MEMORY). The engine calls it, from any of
   its threads (the recorder locks). */
DP_API void dp_trace_recorder_event(const dp_trace_event *ev, void *user);
/* Names a variable on the page ("A"); unnamed ones show as "v<slot>".
   Any thread. Errors: DP_ERROR_INVALID_ARGS (rec or name NULL, var 0),
   DP_ERROR_OUT_OF_MEMORY. */
DP_API dp_result dp_trace_recorder_name_var(dp_trace_recorder *rec, dp_var var, const char *name);
/* A caption for the events recorded from now on (e.g. the program line
   being run); the page shows it above them. Any thread.
   Errors: DP_ERROR_INVALID_ARGS, DP_ERROR_OUT_OF_MEMORY. */
DP_API dp_result dp_trace_recorder_mark(dp_trace_recorder *rec, const char *caption);
/* Writes the replay page of rec's events to out; title may be NULL. eng may
   be NULL; with an engine created with desc.trace.record_graph the page also
   draws the dependency graph. Every string (op names are user text) is
   JSON-encoded so that it cannot end the page's script. Call when no op is
   being traced (e.g. after dp_wait_all), from any thread but an op of eng.
   Errors (each logged): DP_ERROR_INVALID_ARGS (rec or out NULL);
   DP_ERROR_IO (a write to out failed); DP_ERROR_OUT_OF_MEMORY when events
   were lost to a failed allocation: the page is written and says so. */
DP_API dp_result dp_trace_write_html(dp_engine *eng, dp_trace_recorder *rec, const char *title, FILE *out);
#endif
DP_API const char *dp_result_string(dp_result r);
/* The last error logged on the calling thread, like dlerror or errno: the
   message of the most recent log line of level DP_LOG_ERROR or
   DP_LOG_PANIC this thread produced ("<item text>: <details>", as a logger
   receives it; cut to DP_LAST_ERROR_MAX - 1 bytes), or "" when there was
   none since the thread started or since dp_clear_last_error. Filled
   whether or not a logger is installed. Reading it does not clear it, and
   a call that succeeds leaves it as it was: to tell whether one call
   logged, clear it before the call. Errors logged by a worker thread (an
   operation's) are that thread's, not the pusher's. The text is in a
   thread-local buffer (no allocation) and stays valid until this thread
   logs another error or calls dp_clear_last_error. Any thread. */
#define DP_LAST_ERROR_MAX 512
DP_API const char *dp_last_error(void);
/* The log item of that error, DP_LOGITEM_OK when there is none. Any
   thread. */
DP_API dp_log_item dp_last_error_item(void);
/* Forgets the calling thread's last error: dp_last_error gives "" and
   dp_last_error_item DP_LOGITEM_OK. Any thread. */
DP_API void dp_clear_last_error(void);
/* A logger that prints to stderr; the default for errors. Any thread
   (reentrant). */
DP_API void dp_log_stderr(const char *tag, uint32_t level, uint32_t item,
                          const char *message, uint32_t line, const char *file, void *user);
/* The process-wide logger: for messages that have no engine (a NULL
   engine argument, the operator registry, symbols) and for an engine whose
   desc.logger is not set. NULL restores the default, dp_log_stderr for
   errors and nothing below. Copied; set it while setting up, before other
   threads log. */
DP_API void dp_set_default_logger(const dp_logger *logger);
/* Logs through eng's logger (NULL eng: the default logger) and, for
   DP_LOG_ERROR and DP_LOG_PANIC, records the text as the thread's last
   error, exactly as depeng's own messages are: "<item text>: <fmt...>".
   file and line name the caller's source. For libraries built on depeng.h
   (depeng_nn.h logs through it). Any thread. */
/* Gives log items first .. first + count - 1 (within DP_LOGITEM_EXTENSION ..
   DP_LOGITEM_LAST) their texts, which dp_log puts before each message of
   theirs (the strings must outlive their use). The array layer registers
   its own (DP_LOGITEM_EXTENSION up to DP_LOGITEM_ND_END) on first use:
   another layer starts at DP_LOGITEM_ND_END. Setting up: call it before
   other threads log those items. DP_ERROR_INVALID_ARGS (logged) for a range
   outside the extension items, NULL texts, or an item that has another
   text already. */
DP_API dp_result dp_log_add_items(int first, int count, const char *const *texts);
DP_API void dp_log(const dp_engine *eng, uint32_t level, dp_log_item item, const char *file, uint32_t line,
                   const char *fmt, ...)
#if defined(__MINGW32__) && !defined(__clang__)
    __attribute__((format(gnu_printf, 6, 7)))   /* the implementation asks MinGW for C99 printf */
#elif defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* Memory from eng's allocator (desc.allocator; a NULL eng or no allocator:
   malloc), aligned to 64 bytes when an allocator is set. dp_engine_free
   takes the size that was asked for; NULL is fine. NULL when out of memory
   (nothing is logged). Any thread. */
DP_API void *dp_engine_alloc(const dp_engine *eng, size_t size);
DP_API void dp_engine_free(const dp_engine *eng, void *ptr, size_t size);
/* Gives up the calling thread's core for a moment (sched_yield,
   SwitchToThread). Any thread. */
DP_API void dp_thread_yield(void);
/* How many GPUs eng's backend reported (desc.gpu_backend's device_count,
   at most 16); 0 without a backend. Any thread. */
DP_API int dp_engine_gpu_count(const dp_engine *eng);
/* A 32-bit integer shared between threads, for reference counts in
   libraries built on depeng.h: read and change it only through these
   (sequentially consistent) calls. Zero-initialise it or store into it
   before other threads see it. */
typedef struct dp_atomic_int { int32_t value_; } dp_atomic_int;
/* load, store, add (returns the value before) and exchange (the same):
   inline, so a program that uses none carries none. */
#if defined(__GNUC__) || defined(__clang__)
static inline int32_t dp_atomic_load(const dp_atomic_int *a) { return __atomic_load_n(&a->value_, __ATOMIC_SEQ_CST); }
static inline void dp_atomic_store(dp_atomic_int *a, int32_t v) { __atomic_store_n(&a->value_, v, __ATOMIC_SEQ_CST); }
static inline int32_t dp_atomic_add(dp_atomic_int *a, int32_t d) { return __atomic_fetch_add(&a->value_, d, __ATOMIC_SEQ_CST); }
static inline int32_t dp_atomic_exchange(dp_atomic_int *a, int32_t v) { return __atomic_exchange_n(&a->value_, v, __ATOMIC_SEQ_CST); }
#elif defined(_MSC_VER)
static __inline int32_t dp_atomic_load(const dp_atomic_int *a) { return (int32_t)_InterlockedOr((volatile long *)(uintptr_t)&a->value_, 0); }
static __inline void dp_atomic_store(dp_atomic_int *a, int32_t v) { (void)_InterlockedExchange((volatile long *)&a->value_, v); }
static __inline int32_t dp_atomic_add(dp_atomic_int *a, int32_t d) { return (int32_t)_InterlockedExchangeAdd((volatile long *)&a->value_, d); }
static __inline int32_t dp_atomic_exchange(dp_atomic_int *a, int32_t v) { return (int32_t)_InterlockedExchange((volatile long *)&a->value_, v); }
#else
#error "depeng: dp_atomic_int needs GCC, Clang or MSVC atomics"
#endif

/* ---- extensions -------------------------------------------------------- */
/* Per-engine state of a layer built on the engine. The array layer below is
   one: its storage managers and resources live in such a state, so the
   engine itself knows nothing of arrays. An extension is a dp_extension
   that outlives the engine (a static one); its address is its key.
   dp_engine_extension returns eng's state for ext, made by
   ext->create(eng, ext->user) on the first call for this engine. create
   runs exactly once per engine even when several threads ask at once (the
   others wait for it); it may create variables, push operations and ask
   for other extensions (arrays included), but not for its own (refused,
   logged). It returns the state, or NULL when it cannot make one: then
   dp_engine_extension returns NULL and a later call tries again.
   Teardown: dp_engine_destroy waits for every operation, then calls
   ext->destroy(eng, state, ext->user) for each state, the newest first,
   while the engine's allocator, logger and desc are still there (and
   before its workers stop and its memory goes). destroy must not push,
   wait, or create or delete variables; it may look up older extensions
   (newer ones are gone: NULL), and none is made any more. A NULL destroy
   is fine.
   Errors (NULL returned, logged as BAD_DESC): NULL eng or ext, a NULL
   create, more than DP_MAX_EXTENSIONS extensions on one engine.
   Thread safety: any thread, also from inside operations, until
   dp_engine_destroy; a lookup after the first takes no lock. */
typedef struct dp_extension {
    const char *name;                                        /* for log lines */
    void *(*create)(dp_engine *eng, void *user);
    void (*destroy)(dp_engine *eng, void *state, void *user);
    void *user;
} dp_extension;
#define DP_MAX_EXTENSIONS 8
DP_API void *dp_engine_extension(dp_engine *eng, const dp_extension *ext);

#ifndef DEPENG_NO_NDARRAY
/* ====================================================================== NDARRAY
   MXNet's array layer on the engine. An array is a shape, a dtype and a
   view of a storage chunk on one device; the chunk carries the variable
   that orders every operation on its bytes. Views (dp_nd_reshape,
   dp_nd_slice) share the chunk, and so the variable, with their parent.
   Calls that fill an array push an operation that writes its variable and
   return at once; dp_nd_read waits for those writes. Arrays are reference
   counted; when the last array on a chunk is released, the chunk's memory
   goes back to the storage manager through the engine (a delete of its
   variable), so it is reused only after every operation on it has
   finished. Release every array before destroying its engine.
   Thread safety: any thread; an array's shape and dtype never change.
   Errors: DP_ERROR_INVALID_ARGS (logged as ND_ARGS, naming the call, the
   shape or the dtype), DP_ERROR_BAD_CONTEXT, DP_ERROR_OUT_OF_MEMORY, and for
   files DP_ERROR_IO / DP_ERROR_FORMAT; *out is NULL after any error.
   Storing a value into an integer dtype (dp_nd_full, dp_nd_arange, the
   random draws, every operator's result) converts it one way, defined for
   every double: a fraction truncates toward zero (as C's cast and NumPy's
   astype do: -0.5 and 255.5 give 0 and 255 in uint8), a value beyond the
   dtype's range saturates to its nearest end (+inf and 1e20 give the max,
   -inf and -1 in uint8 the min), and NaN gives 0. NumPy leaves the last
   two to the platform; depeng defines them, on the GPU too.
   dtypes: float16 is IEEE binary16 (MXNet's mixed-precision type), stored
   as 2 bytes and computed in float32 (through double, rounded to float32
   then to float16, nearest-even, as NumPy does); bool is one byte, 0 or 1
   (a store of any non-zero value, NaN included, gives 1); int8 and uint8
   one byte. On the CPU, operators that only move data (transpose, concat,
   copy, reshape, cast to the same dtype, clip's and relu's pass-through,
   max, min, maximum, minimum, argmax, one_hot's index) are exact for every
   dtype, bit for bit; integer arithmetic on integer arrays (add, sub, mul,
   power, negative, abs, sign, square, sum, and the _scalar forms with an
   integral scalar) is done in int64 and wraps around (two's complement,
   modulo the dtype's width) like NumPy's; the other operators on integer
   arrays (div, sqrt, exp, mean, ...) compute in double and store by the
   rule above. The GPU kernels (depeng_cuda.h) do the same, their
   reductions (sum, max, min, argmax) included.
   NaN follows NumPy: it propagates through maximum, minimum (either
   argument, array or scalar form), max, min, sign, relu and clip, and
   argmax returns the index of the first NaN. */
/* DP_DTYPE_COUNT: how many there are; DP_DTYPE_INVALID: what dp_nd_dtype
   answers for no array. */
typedef enum dp_dtype {
    DP_FLOAT32 = 0, DP_FLOAT64, DP_INT32, DP_INT64, DP_UINT8, DP_FLOAT16, DP_BOOL, DP_INT8,
    DP_DTYPE_COUNT, DP_DTYPE_INVALID = DP_DTYPE_COUNT
} dp_dtype;
#define DP_MAX_DIMS 8
/* ndim 0 is a scalar (one element); dims beyond ndim are ignored. */
typedef struct dp_shape { int32_t ndim; int64_t dims[DP_MAX_DIMS]; } dp_shape;
typedef struct dp_ndarray dp_ndarray;

DP_API size_t dp_dtype_size(dp_dtype dt);             /* bytes per element; 0 if unknown; any thread */
DP_API const char *dp_dtype_name(dp_dtype dt);        /* "float32", ...; "unknown"; any thread */
DP_API int64_t dp_shape_size(const dp_shape *shape);  /* elements; -1 if invalid; any thread */

/* New arrays on ctx (a zeroed dp_ctx is CPU 0). empty leaves the contents
   undefined; full sets every element to value (converted to dtype); arange
   is start, start + step, ... below stop (above it for a negative step).
   Any thread. */
DP_API dp_result dp_nd_empty(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out);
DP_API dp_result dp_nd_zeros(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out);
DP_API dp_result dp_nd_ones(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out);
DP_API dp_result dp_nd_full(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, double value, dp_ndarray **out);
DP_API dp_result dp_nd_arange(dp_engine *eng, double start, double stop, double step, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out);
/* A new array holding a copy of data (C order, dp_shape_size * dp_dtype_size
   bytes), copied before the call returns. Any thread. */
DP_API dp_result dp_nd_from_host(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, const void *data, dp_ndarray **out);
/* Waits for the array's pending operations, then copies its bytes to dst /
   from src; bytes must be the array's size. A failure of an operation that
   wrote the array is returned (and filled into *failure) instead. Any
   thread, not from inside one of the engine's operations (they wait). */
DP_API dp_result dp_nd_read(dp_ndarray *a, void *dst, size_t bytes, dp_failure *failure);
DP_API dp_result dp_nd_write(dp_ndarray *a, const void *src, size_t bytes, dp_failure *failure);
/* MXNet's WaitToRead / WaitToWrite. Both wait for every pending operation on
   the array's chunk (depeng has one kind of variable wait). Threads as
   dp_nd_read. */
DP_API dp_result dp_nd_wait_to_read(dp_ndarray *a, dp_failure *failure);
DP_API dp_result dp_nd_wait_to_write(dp_ndarray *a, dp_failure *failure);
/* Views sharing a's storage and variable: the same elements in another
   shape (same element count), or rows [begin, end) of the first axis. Any
   thread. */
DP_API dp_result dp_nd_reshape(dp_ndarray *a, const dp_shape *shape, dp_ndarray **out);
DP_API dp_result dp_nd_slice(dp_ndarray *a, int64_t begin, int64_t end, dp_ndarray **out);
/* A new array on ctx with a's contents, copied by a pushed operation (on a
   GPU's copy queue when a GPU is involved). Any thread. */
DP_API dp_result dp_nd_copy_to(dp_ndarray *a, dp_ctx ctx, dp_ndarray **out);
/* A new array with a's elements converted to dtype, by a pushed "cast"
   operator (recorded by autograd like any invocation): floats into integers
   by the conversion rule above, integers into narrower integers keeping the
   low bits (as NumPy's astype), the same dtype bit for bit. Errors: NULL a
   or out, an unknown dtype (DP_ERROR_INVALID_ARGS, logged); out of memory.
   Any thread. */
DP_API dp_result dp_nd_astype(dp_ndarray *a, dp_dtype dtype, dp_ndarray **out);
DP_API dp_ndarray *dp_nd_retain(dp_ndarray *a);       /* one more reference; returns a */
/* One reference less; the last frees the memory once the ops using it are
   done. NULL is fine. Out of memory for the release op, the memory is kept
   (logged) until the engine is destroyed, never freed under a running op.
   Any thread, also from inside operations. */
DP_API void dp_nd_release(dp_ndarray *a);
/* An array's shape, dtype, device, engine and size in bytes. Any thread. */
DP_API const dp_shape *dp_nd_shape(const dp_ndarray *a);
DP_API dp_dtype dp_nd_dtype(const dp_ndarray *a);
DP_API dp_ctx dp_nd_ctx(const dp_ndarray *a);
DP_API dp_engine *dp_nd_engine(const dp_ndarray *a);
DP_API size_t dp_nd_bytes(const dp_ndarray *a);
/* The variable to list in an operation's reads or writes (any thread), and
   the first element, for use inside such an operation only (its thread). */
DP_API dp_var dp_nd_var(const dp_ndarray *a);
DP_API void *dp_nd_data(const dp_ndarray *a);

/* NumPy's .npy (the eight dtypes: '<f4' '<f8' '<f2' '<i4' '<i8' '|u1'
   '|i1' '|b1') and .npz (a zip of .npy members, stored as numpy.savez
   writes them or deflated as numpy.savez_compressed does; both are read).
   Saving writes C order, little-endian. Loading also takes what NumPy
   writes otherwise and converts it: Fortran order ('fortran_order': True,
   as np.save writes a transposed array) becomes the C-order array with the
   same values at the same indices, and big-endian data ('>f4', '>i8', ...;
   a one-byte type may carry any byte-order mark) is byte-swapped; such a
   file takes a second copy of its data while it is converted. Limits:
   format versions 1.0, 2.0 and 3.0; at most DP_MAX_DIMS (8) dimensions; a
   header as long as the version allows (65,535 bytes in 1.0, 4 GiB - 1 in
   2.0 and 3.0); the data must be exactly what the shape holds. A file is
   read to its end whatever size it reports (/proc files and pipes are read
   whole). Saving waits for the arrays' pending writes. A corrupt or
   truncated file is DP_ERROR_FORMAT with the reason logged, never a crash;
   a path that cannot be read (missing, a directory) is DP_ERROR_IO, logged
   as IO with the path; no memory for the file or its conversion is
   DP_ERROR_OUT_OF_MEMORY (logged). Any thread; saving waits, so not from
   inside an operation. */
DP_API dp_result dp_nd_save_npy(dp_ndarray *a, const char *path, dp_failure *failure);
DP_API dp_result dp_nd_load_npy(dp_engine *eng, const char *path, dp_ctx ctx, dp_ndarray **out);
typedef struct dp_nd_named { char name[128]; dp_ndarray *array; } dp_nd_named;
/* How dp_nd_save_npz writes; zero-initialise. compress 0 stores the
   members (numpy.savez), 1 deflates them (numpy.savez_compressed; any
   reader of .npz files reads them, NumPy's np.load included). level is the
   deflate effort, 1 (fastest) to 9 (smallest) as in zlib, 0 for the
   default 6. The deflater is the header's own (no zlib needed). */
typedef struct dp_npz_desc {
    int compress;
    int level;
} dp_npz_desc;
/* Writes count arrays as members "<name>.npy" of an .npz, stored as
   numpy.savez does, or as desc says (NULL: all zero). Compressing holds, per
   member in turn, a copy of its bytes and its deflated stream, and keeps
   every member's deflated stream until the file is written. Limits: 65,534
   members; names of 1 to 127 bytes, no two the same; under 4 GiB in all
   (no zip64). Errors (logged): DP_ERROR_INVALID_ARGS for a NULL path or
   arrays, a member without an array or with an empty or unterminated
   name, two members of the same name (naming it and both indices), compress
   other than 0 or 1, level outside 0..9 (ND_ARGS), or an archive that would
   need zip64 (4 GiB); DP_ERROR_OUT_OF_MEMORY; DP_ERROR_IO when the file
   cannot be written; an array's failed pending write as from
   dp_wait_var. Any thread. */
DP_API dp_result dp_nd_save_npz(const char *path, const dp_nd_named *arrays, int count,
                                const dp_npz_desc *desc, dp_failure *failure);
/* Loads up to cap members into out (names without ".npy"); *count is set.
   Memory is allocated for the members the archive has, whatever cap is.
   On error nothing is left allocated and *count is 0. Errors (logged):
   DP_ERROR_INVALID_ARGS for a NULL engine, out or count or a negative cap
   (ND_ARGS); DP_ERROR_IO when the path cannot be read (a directory, a
   missing file); DP_ERROR_FORMAT for a corrupt archive or member (a
   deflated member whose stream is malformed or truncated, inflates to
   another size than the archive declares, or fails its CRC-32), two
   members whose names (less ".npy") are the same (naming it, both indices
   and the file), a name empty or over 127 bytes, or more than cap members;
   DP_ERROR_OUT_OF_MEMORY when there is no memory for the file, a deflated
   member's inflated bytes or a converted member (held while its array is
   made). Members are .npy images as dp_nd_load_npy reads them (Fortran
   order and big-endian converted); no zip64 end records (65,534 members,
   4 GiB at most). Any thread. */
DP_API dp_result dp_nd_load_npz(dp_engine *eng, const char *path, dp_ctx ctx, dp_nd_named *out, int cap, int *count);
/* The header's own inflater and CRC-32, for the layers that read other
   compressed files (depeng_nn.h's gzipped MNIST files). dp_inflate inflates
   the raw deflate stream (RFC 1951) in [in, in + in_len) into out, writing
   at most out_cap bytes; *out_len gets how many it wrote. A malformed or
   truncated stream, or one that inflates to more than out_cap bytes, is
   DP_ERROR_FORMAT with the reason in msg (msgcap bytes, NUL-terminated;
   msg may be NULL when msgcap is 0), and out's contents are then
   unspecified; NULL in or out with a non-zero length, or a NULL out_len,
   is DP_ERROR_INVALID_ARGS. It allocates nothing and logs nothing (the
   caller knows the file). dp_crc32 is zlib's crc32(): start with 0 and
   pass each result back in to continue. Any thread. */
DP_API dp_result dp_inflate(const void *in, size_t in_len, void *out, size_t out_cap, size_t *out_len, char *msg, size_t msgcap);
DP_API uint32_t dp_crc32(uint32_t crc, const void *data, size_t len);

/* Resources (MXNet's ResourceManager), one set per device, each guarded by
   a variable of its own. The random generator: an operation that draws
   lists dp_random_var among its writes, so draws are serialised in push
   order and reproducible for a seed, whatever the engine (the generator as a mutable
   resource, as in MXNet's dependency engine documentation). The
   default seed is 0. dp_random_seed is pushed like any write.
   The temporary workspace: an operation lists dp_temp_space_var among its
   writes and, while it runs, asks dp_temp_space for bytes (it grows on
   demand, 64-byte aligned; NULL if out of memory). On a GPU the
   generator's state is on the host (a kernel takes a key with
   dp_random_next and draws on the device) and the workspace is device
   memory. An unknown device gives id 0 / NULL. Link with -lm. Seeding and
   the variables: any thread (a seed is a pushed operation). */
DP_API dp_result dp_random_seed(dp_engine *eng, dp_ctx ctx, uint64_t seed);
DP_API dp_var dp_random_var(dp_engine *eng, dp_ctx ctx);
/* Inside an operation that writes dp_random_var(eng, ctx), on its thread
   only: the next 64 random bits, and a double uniform in [0, 1). */
DP_API uint64_t dp_random_next(dp_engine *eng, dp_ctx ctx);
DP_API double dp_random_uniform01(dp_engine *eng, dp_ctx ctx);
DP_API dp_var dp_temp_space_var(dp_engine *eng, dp_ctx ctx);
DP_API void *dp_temp_space(dp_engine *eng, dp_ctx ctx, size_t bytes);
/* New arrays of draws: uniform in [low, high), normal(mean, stddev); for
   integer dtypes the draw is converted as dp_dtype says (truncated,
   saturated: uniform in [-5, 5) into uint8 gives 0..4). On a GPU they run the
   random operators' GPU kernels (depeng_cuda.h; without them
   DP_ERROR_BAD_CONTEXT); not on DP_DEV_CPU_PINNED. Any thread. */
DP_API dp_result dp_nd_random_uniform(dp_engine *eng, double low, double high, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out);
DP_API dp_result dp_nd_random_normal(dp_engine *eng, double mean, double stddev, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out);

/* ====================================================================== OPERATORS
   MXNet's operator registry: an operator is registered once, by name, with
   its keyword parameters (typed, parsed from strings, with defaults and
   validation), shape and dtype inference, a kernel per device kind, and
   what autograd needs: the operator that computes its gradient and which
   of the output gradients, inputs and outputs that one reads (MXNet's
   DeclareBackwardDependency). dp_invoke checks everything before it
   pushes anything, then pushes one operation that reads the inputs'
   variables and writes the outputs' (and the resources' it asked for).
   The registry is process-wide; register from one thread, before use. */
typedef enum dp_req { DP_REQ_NULL = 0, DP_REQ_WRITE, DP_REQ_INPLACE, DP_REQ_ADD } dp_req;
typedef enum dp_param_type { DP_PARAM_INT = 1, DP_PARAM_FLOAT, DP_PARAM_BOOL, DP_PARAM_SHAPE, DP_PARAM_ENUM } dp_param_type;
typedef struct dp_param_def {
    const char *name;
    dp_param_type type;
    const char *default_value;   /* NULL: the parameter is required        */
    double min, max;             /* INT, FLOAT: the accepted range if min < max */
    const char *choices;         /* ENUM: "sum|mean|max"; the value is its index */
    const char *doc;
} dp_param_def;
#define DP_MAX_PARAMS 12
/* Parsed values, in the order of the definitions: i for INT, BOOL (0/1)
   and ENUM (the choice's index), f for FLOAT, shape for SHAPE (a tuple
   "(1, 2)" or a single int). */
typedef struct dp_param_value { int64_t i; double f; dp_shape shape; } dp_param_value;
typedef struct dp_params { int count; dp_param_value v[DP_MAX_PARAMS]; } dp_params;

/* What a kernel gets. It runs inside an engine operation; it returns 0 or
   a status (with dp_set_error(k->rc, message) for the reason). */
typedef struct dp_kernel_ctx {
    dp_run_ctx *rc;
    const dp_params *params;
    double scalar;
    int num_inputs, num_outputs;
    dp_ndarray *const *inputs;
    dp_ndarray *const *outputs;
    const dp_req *req;            /* per output */
} dp_kernel_ctx;
typedef int (*dp_kernel_fn)(const dp_kernel_ctx *k);
/* Fills the outputs' shapes and dtypes from the inputs'; returns 0, or
   non-zero with a message (naming the shapes) in msg. */
typedef int (*dp_infer_fn)(const dp_params *p, int num_inputs, const dp_shape *in_shapes, const dp_dtype *in_dtypes,
                           int num_outputs, dp_shape *out_shapes, dp_dtype *out_dtypes, char *msg, size_t msgcap);
enum { DP_GRAD_OUT_GRADS = 1, DP_GRAD_INPUTS = 2, DP_GRAD_OUTPUTS = 4 };      /* dp_operator.grad_needs */
enum { DP_RESOURCE_RANDOM = 1, DP_RESOURCE_TEMP = 2 };                         /* dp_operator.resources */
typedef struct dp_operator {
    const char *name;
    const char *doc;
    int num_inputs;               /* -1: as many as the INT parameter "num_args" says;
                                     -2: num_args + 1 (a variadic operator's gradient) */
    int num_outputs;              /* -1: num_args (the same); at most 64 */
    const dp_param_def *params;
    int num_params;
    int takes_scalar;             /* invoked with a scalar (the "_scalar" forms) */
    dp_infer_fn infer;            /* NULL: every output as input 0 */
    dp_kernel_fn forward_cpu, forward_gpu;   /* NULL: not on that device kind */
    const char *gradient;         /* the operator computing the input gradients, or NULL */
    unsigned grad_needs;          /* DP_GRAD_*: what the gradient operator reads, in that order */
    unsigned inplace;             /* bit i (i < 32): output 0 may be exactly input i (same bytes, dtype
                                     and shape; the kernel reads each element before writing it), with
                                     no temporary; a backward pass may use it on gradient
                                     operators (depeng_nn.h's autograd does) */
    unsigned resources;           /* DP_RESOURCE_*: the kernel may use them */
    unsigned mutate_inputs;       /* bit i (i < 32): the kernel also writes input i (an
                                     optimizer's state), so its variable is in the write set;
                                     overlapping another input, it goes through a temporary
                                     (see dp_invoke's overlap rules) */
    unsigned dtypes;              /* bit (1u << dtype) for each dtype input 0 may have; 0: any
                                     (documentation: shape inference does the checking) */
} dp_operator;

/* Registers op (copied; its strings and params must stay valid). A name
   registered twice is DP_ERROR_INVALID_ARGS, and so is an operator beyond
   the registry's 256 (the built-in ones included: dp_operator_list counts
   them), or one with more than DP_MAX_PARAMS parameters or 64 inputs or
   outputs (all logged). Register from one thread
   while setting up, before other threads invoke; find from any thread. */
DP_API dp_result dp_operator_register(const dp_operator *op);
DP_API const dp_operator *dp_operator_find(const char *name);     /* NULL if unknown */
/* Gives a registered operator (a built-in one too) its kernel for a device
   kind (DP_DEV_CPU or DP_DEV_GPU), replacing any: how depeng_cuda.h adds the
   GPU kernels. Call it while setting up, before any thread invokes the
   operator (invocations read kernels without a lock). Errors (logged):
   DP_ERROR_INVALID_ARGS for an unknown name (UNKNOWN_OPERATOR), or a bad
   kind or missing kernel (ND_ARGS). */
DP_API dp_result dp_operator_set_kernel(const char *name, int dev_type, dp_kernel_fn kernel);
/* The registered operators (built-in ones included), up to cap; returns
   how many there are. docs/operators.md lists the built-in ones. Any
   thread. */
DP_API int dp_operator_list(const dp_operator **out, int cap);

/* ---- invoking an operator ------------------------------------------------
   dp_invoke runs a registered operator on arrays (MXNet's imperative
   invoke), described by a zero-initialised desc: only what differs from
   the defaults is written.

       dp_ndarray *y = NULL;
       dp_invoke(eng, &(dp_invoke_desc){ .op = "relu", .inputs = {x} }, &y);
       dp_invoke(eng, &(dp_invoke_desc){                 // w -= 0.1 (g + 1e-4 w)
           .op = "sgd_update", .inputs = {w, g}, .outputs = {w},
           .params = {{"lr", .f = 0.1}, {"wd", .f = 1e-4}} }, NULL);
       dp_invoke(eng, &(dp_invoke_desc){ .op = "sum", .inputs = {x},
           .params = {{"axis", .shape = {1, {0}}}, {"keepdims", .i = 1}} }, &s);
       dp_invoke(eng, &(dp_invoke_desc){ .op = "mul_scalar", .inputs = {x}, .scalar = 2 }, &y);

   Keyword parameters (dp_param): a name and one value, in the field of the
   parameter's type (docs/operators.md lists every operator's parameters,
   types, defaults and ranges; dp_operator_find(name)->params has them too):
     INT    .i   (an integral .f is taken too)     BOOL  .i = 0 or 1
     FLOAT  .f   (or .i)                           SHAPE .shape = {ndim, {dims}}
     ENUM   .s = "float64": the choice by name
   or any of them as a string in .s ("0.1", "(1, 2)", "true"), parsed as
   dp_operator_parse_params parses it. A value in a field its type does not read
   is an error, not ignored; a field left zero reads as 0 (a shape as ()),
   whatever the type. Parameters not given take their defaults;
   a parameter without a default is required.
   C++ has neither compound literals nor (before C++20) designated
   initialisers: declare the desc, value-initialised, and assign fields,
   with the dp_param_* helpers for the parameters:
       dp_invoke_desc d = {};
       d.op = "sgd_update"; d.inputs[0] = w; d.inputs[1] = g; d.outputs[0] = w;
       d.params[0] = dp_param_float("lr", 0.1);
       dp_invoke(eng, &d, nullptr);
   (C++20 also takes dp_invoke_desc d{.op = "relu", .inputs = {x}}, the
   fields in declaration order and each dp_param either all designated or
   from dp_param_*; g++ 12's -Wextra then warns about every field left out,
   which the assignments above avoid.) */
#define DP_MAX_OP_ARRAYS 64   /* inputs, and outputs, of one invocation */
typedef struct dp_param {
    const char *name;         /* NULL ends the list */
    int64_t i;                /* INT, BOOL */
    double f;                 /* FLOAT */
    const char *s;            /* ENUM by name; or any type as a string */
    dp_shape shape;           /* SHAPE */
} dp_param;
typedef struct dp_invoke_desc {
    const char *op;                          /* the operator's name */
    dp_ndarray *inputs[DP_MAX_OP_ARRAYS];
    int num_inputs;                          /* 0: the inputs before the first NULL */
    dp_param params[DP_MAX_PARAMS];          /* those before the first without a name */
    double scalar;                           /* the operand of the "_scalar" operators (add_scalar:
                                                x + scalar); must stay 0 for the others */
    dp_ndarray *outputs[DP_MAX_OP_ARRAYS];   /* NULL: made by the call (see dp_invoke's out) */
    int num_outputs;                         /* 0: as many as the operator makes */
    dp_req req[DP_MAX_OP_ARRAYS];            /* per output; 0 (DP_REQ_NULL) means DP_REQ_WRITE */
} dp_invoke_desc;
/* Runs desc->op. A given output must have the inferred shape and dtype and
   the inputs' device; it is written with req (DP_REQ_ADD adds to it). An
   output left NULL is made: out must then have room for every output, and
   out[i] receives the new array (the caller releases it), NULL for the
   outputs desc gave. An operator without inputs runs on the device of a
   given output 0 (else CPU 0). The call checks everything (names, counts,
   parameters, shapes, dtypes, devices), then pushes one operation that
   reads the inputs' variables and writes the outputs' and returns: wait
   with dp_nd_read or dp_nd_wait_to_read. The process's tracker, if one
   is installed (dp_set_tracker; depeng_nn.h's autograd is one), sees the
   invocation first and may record it or refuse it (autograd, while this
   thread records: a given output, or a mutated input, must not be in a
   recorded graph itself).
   Overlap: every input is read as it was before the operation, as
   NumPy's out= reads it. A given output may share bytes with an input
   (the same array, or overlapping views of one storage: transpose(x,
   out=x) is fine), and an input the operator updates in place
   (dp_operator.mutate_inputs: an optimizer's state) may share bytes with
   an input it reads: the kernel then works on a temporary from the
   engine's storage that the operation copies over the array afterwards
   and frees. The one overlap without a temporary is the exact
   element-wise in place the operator's inplace bits allow (output 0
   exactly over input i, same dtype and shape); without overlap nothing
   is allocated but the invocation's record, and once invocations have
   finished not even that: the engine keeps up to 64 finished records for
   the next ones (a warm loop of invocations into given outputs, such as
   an optimizer's updates, allocates nothing). What the operator writes cannot overlap itself: two given
   outputs that share bytes, an output over an input the operator
   updates, and two inputs it updates that share bytes (adam_update's mean
   and var as one array) are DP_ERROR_INVALID_ARGS (logged as ND_OVERLAP,
   naming the two). docs/operators.md says which inputs each operator
   updates and which in place it allows.
   Limits: at most DP_MAX_OP_ARRAYS (64) inputs and as many outputs, at
   most DP_MAX_PARAMS (12) parameters (desc.params holds 12); the inplace
   and mutate_inputs bits cover inputs 0..31. Names (operator, parameter)
   have no length limit.
   Errors, each logged naming the operator (nothing is pushed or recorded,
   out is not written; dp_last_error has the text): DP_ERROR_INVALID_ARGS
   for a NULL eng or desc (NULL_ARGUMENT), an unknown operator
   (UNKNOWN_OPERATOR); an unknown, repeated, mistyped or out-of-range
   parameter, a missing required one, a scalar given to an operator that
   takes none (ND_PARAM); overlapping writes (ND_OVERLAP); wrong counts,
   NULL inputs, shapes or dtypes that do not fit, arrays of another
   engine or device, an output to make with out NULL (ND_ARGS);
   DP_ERROR_BAD_CONTEXT when the operator has no kernel for the device;
   DP_ERROR_OUT_OF_MEMORY.
   Thread safety: any thread; arrays may be shared between threads (the
   engine orders the pushed operations by their variables). */
DP_API dp_result dp_invoke(dp_engine *eng, const dp_invoke_desc *desc, dp_ndarray **out);
/* Parses keyword parameters for op: the dp_param list (see dp_invoke; the
   entries before the first with a NULL name, at most DP_MAX_PARAMS; NULL:
   none), defaults filled in, as dp_invoke parses them. On error logs (on
   eng, which may be NULL; item ND_PARAM, NULL_ARGUMENT for a NULL op or
   out) and returns DP_ERROR_INVALID_ARGS naming the operator and
   parameter. Any thread. */
DP_API dp_result dp_operator_parse_params(dp_engine *eng, const dp_operator *op, const dp_param *params, dp_params *out);
/* Keyword parameters as expressions, for C++ (and C where a compound
   literal is not wanted): dp_param_float("lr", 0.1). They only fill the
   struct (the strings are not copied: keep them alive until the call that
   uses the dp_param); any thread, no errors. */
static inline dp_param dp_param_int(const char *name, int64_t v) { dp_param p = {name, v, 0.0, NULL, {0, {0}}}; return p; }
static inline dp_param dp_param_bool(const char *name, int v) { return dp_param_int(name, v != 0); }
static inline dp_param dp_param_float(const char *name, double v) { dp_param p = {name, 0, v, NULL, {0, {0}}}; return p; }
static inline dp_param dp_param_str(const char *name, const char *v) { dp_param p = {name, 0, 0.0, v, {0, {0}}}; return p; }
static inline dp_param dp_param_shape(const char *name, const dp_shape *v) { dp_param p = {name, 0, 0.0, NULL, *v}; return p; }

/* Built-in optimizer updates (MXNet's), each an operator that writes the
   weight in place when it is passed as the output as well as input 0 (so
   the weight is in the op's write set and every read of it pushed before
   the update runs first):
     sgd_update(weight, grad)               w -= lr (g + wd w)
     sgd_mom_update(weight, grad, mom)      mom = momentum mom - lr (g + wd w); w += mom
     adam_update(weight, grad, mean, var)   m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2;
                                            w -= lr m / (sqrt(v) + epsilon), g including wd w
   with g = rescale_grad * grad, limited to [-clip_gradient, clip_gradient]
   when clip_gradient > 0 (Adam, as MXNet's: g = rescale_grad * grad +
   wd * w, then limited). mom, mean and var are mutated inputs. Parameters:
   lr (required), wd, rescale_grad, clip_gradient, momentum, beta1, beta2,
   epsilon, and adam_update's t: the step, from 1, for Adam's bias
   correction (lr is scaled by sqrt(1 - beta2^t) / (1 - beta1^t)); the
   default 0 leaves lr as given. depeng_nn.h's optimizer objects pass t
   themselves. On the CPU each is one vectorised pass per dtype over its
   arrays, in the arrays' precision (float32 in float32, as PyTorch does;
   float64 as before, bit for bit), with arrays of 2^17 elements or more
   split over the engine's range loop (dp_parallel_for) in chunks fixed by
   the size: the same bits at any worker count. An output other than the
   weight itself takes a slower per-element loop, in double. */

/* ---- training helpers ------------------------------------------------------
   Operators (invoked like any other):
     take(data, indices)    rows of data's first axis picked by an int64 (or int32,
                            uint8) index array of any shape: a train / test split,
                            a shuffled batch. Result indices.shape + data.shape[1:],
                            every dtype moved bit for bit. Parameter mode: "raise"
                            (default: an index outside [0, rows) fails the kernel,
                            reaching the output as a failure), "clip" or "wrap".
                            Differentiable in data (rows taken twice add up).
     accuracy(pred, labels) the fraction (float32, shape ()) of elements where the two
                            are equal as numbers, e.g. argmax's int64 classes against
                            float32 labels; both with the same element count.
   Standardisation, from the reductions with keepdims and broadcasting:
       mean = mean(x, axis=(0,), keepdims=1)               (1, features)
       d    = sub(x, mean)                                 (n, features)
       std  = sqrt(mean(square(d), axis=(0,), keepdims=1)) NumPy's std (ddof 0)
       z    = div(d, add_scalar(std, 1e-8))                a constant column stays finite
   (one dp_invoke each; the test set is standardised with the training set's
   mean and std). */

/* ====================================================================== DATA
   Reading a CSV file into arrays (depeng_nn.h adds a mini-batch iterator). */
#define DP_CSV_NO_LABEL (-1000000)
/* Reads a CSV file of numbers (comma separated; blank lines skipped; a
   first line with words, not numbers, is a header and skipped) into float32
   arrays: *data (rows, columns - 1) and *label (rows,) from column
   label_column (from 0; negative counts from the end, -1 is the last). With
   DP_CSV_NO_LABEL every column is data, (rows, columns), and label may be
   NULL. Numbers are what strtod reads ("nan" and "inf" included), rounded
   to float32; a finite number beyond float32's range (above about 3.4e38 in
   magnitude, e.g. 1e39) is refused rather than turned into inf. Errors
   (logged): DP_ERROR_FORMAT for a ragged row, a field that is not a number
   or is out of range (naming the file, line, column and field), or no rows
   (the file is read to its end whatever size it reports: pipes too);
   DP_ERROR_IO for a path that cannot be read (missing, a directory), naming
   it; DP_ERROR_INVALID_ARGS for NULL arguments or a label column out of
   range (ND_ARGS). Any thread. */
/* How dp_nd_load_csv reads; zero-initialise (NULL: all zero). skip_lines lines (blank
   ones included) at the start of the file are skipped unread; with
   skip_lines > 0 no header is guessed, so every line after them must be
   numbers (or blank): how a header made only of numbers, or several header
   lines, are skipped. 0 keeps the header guess. A negative skip_lines is
   DP_ERROR_INVALID_ARGS (ND_ARGS); skipping every line is DP_ERROR_FORMAT
   (no rows). */
typedef struct dp_csv_desc {
    int skip_lines;
} dp_csv_desc;
DP_API dp_result dp_nd_load_csv(dp_engine *eng, const char *path, int label_column, dp_ctx ctx, const dp_csv_desc *desc,
                                dp_ndarray **data, dp_ndarray **label);
/* How array memory is managed, per device (see dp_nd_* and >>storage). */
typedef enum dp_storage_kind { DP_STORAGE_DEFAULT = 0, DP_STORAGE_POOLED, DP_STORAGE_PLAIN } dp_storage_kind;
/* Memory for arrays off the plain CPU, from the device's runtime: a GPU's
   device memory (mem_alloc, mem_free, and mem_copy with kind 0 host to
   device, 1 device to host, 2 device to device, asynchronously on stream
   when it is not NULL) and page-locked host memory for DP_DEV_CPU_PINNED
   (host_alloc, host_free; optional). Each returns 0 or an error code that
   the engine's GPU backend's error_string explains. depeng_cuda.h's
   dp_cuda_memory() is one. */
typedef struct dp_memory_backend {
    int (*mem_alloc)(int dev_id, size_t size, void **out, void *user);
    int (*mem_free)(int dev_id, void *ptr, void *user);
    int (*mem_copy)(void *dst, const void *src, size_t bytes, int kind, int dev_id, void *stream, void *user);
    int (*host_alloc)(size_t size, void **out, void *user);
    int (*host_free)(void *ptr, void *user);
    void *user;
} dp_memory_backend;
/* How the arrays of an engine get their memory; zero-initialise. kind:
   DP_STORAGE_POOLED keeps released blocks for reuse (MXNet's pooled storage
   manager), DP_STORAGE_PLAIN gives every release back at once, DEFAULT
   reads DEPENG_STORAGE_POOL=1|0 from the environment (unless the engine's
   desc.ignore_env), else pooled. memory: NULL, arrays on the CPU only. */
typedef struct dp_storage_desc {
    dp_storage_kind kind;
    const dp_memory_backend *memory;   /* copied */
} dp_storage_desc;
/* Sets eng's array storage (MXNet's storage manager). Call it once, before
   the first array, storage or random call on eng; without it every array
   is on the CPU, pooled unless DEPENG_STORAGE_POOL=0. Errors (logged):
   DP_ERROR_INVALID_ARGS for a NULL engine or desc, a kind out of range or
   a bad DEPENG_STORAGE_POOL (BAD_DESC), or a call after the engine's arrays
   started (ND_ARGS); DP_ERROR_OUT_OF_MEMORY. Any thread. */
DP_API dp_result dp_storage_configure(dp_engine *eng, const dp_storage_desc *desc);
/* The storage manager of a device: bytes in arrays, bytes kept for reuse. */
typedef struct dp_storage_stats { uint64_t bytes_in_use, bytes_pooled, allocations, pool_hits; } dp_storage_stats;
/* The counters of ctx's storage manager (approximate while work runs).
   Any thread. */
DP_API dp_result dp_storage_stats_get(dp_engine *eng, dp_ctx ctx, dp_storage_stats *out);
/* Gives the memory kept for reuse back to the allocator: ctx's pooled
   array blocks (bytes_pooled); for the CPU (DP_DEV_CPU), the GEMM's idle
   workspaces (see dp_gemm_on; those held by a product running now are
   kept); and ctx's temporary workspace (dp_temp_space), freed by an
   operation pushed as a write of dp_temp_space_var, so once the operations
   pushed before it that use it are done (dp_wait_var on that variable, or
   dp_wait_all, waits for it). The next products and workspaces are made
   anew, so the first training step after it allocates again. Errors:
   dp_storage_stats_get's, and DP_ERROR_OUT_OF_MEMORY when that operation
   could not be pushed (the rest is released). Any thread. */
DP_API dp_result dp_storage_release_pool(dp_engine *eng, dp_ctx ctx);

/* The array layer's log items (extension items, registered on the layer's
   first use). */
#define DP_LOGITEM_ND_ARGS ((dp_log_item)(DP_LOGITEM_EXTENSION + 0))          /* invalid array argument */
#define DP_LOGITEM_FORMAT ((dp_log_item)(DP_LOGITEM_EXTENSION + 1))           /* malformed file contents */
#define DP_LOGITEM_LEAKED_ARRAYS ((dp_log_item)(DP_LOGITEM_EXTENSION + 2))    /* arrays alive at destroy */
#define DP_LOGITEM_UNKNOWN_OPERATOR ((dp_log_item)(DP_LOGITEM_EXTENSION + 3)) /* no such registered operator */
#define DP_LOGITEM_ND_PARAM ((dp_log_item)(DP_LOGITEM_EXTENSION + 4))       /* invalid operator parameter or scalar */
#define DP_LOGITEM_ND_OVERLAP ((dp_log_item)(DP_LOGITEM_EXTENSION + 5))     /* arrays an operator writes share bytes */
#define DP_LOGITEM_ND_END ((int)DP_LOGITEM_EXTENSION + 6)                      /* the first item after the layer's */

/* ====================================================================== EXTENDING
   What a library built on depeng.h needs besides the calls above, as
   public calls, so that it never reaches into depeng's internals:
   depeng_nn.h is built on exactly these (and a test checks that it uses
   no private name). Besides dp_log, dp_engine_alloc and the dp_atomic_int
   calls of the engine part:
     elements     dp_dtype_load dp_dtype_store dp_dtype_load_n dp_dtype_store_n
                  dp_shape_format
     storage      dp_nd_view dp_nd_borrow dp_nd_same_storage dp_nd_version
                  dp_nd_check_ctx dp_nd_copy_into
     operators    dp_operator_arity dp_operator_set_param dp_operator_register_with_gradient
                  dp_invoke_parsed dp_gemm dp_gemm_on dp_gemm_pack_b_on
     tracking     dp_set_tracker dp_nd_tag dp_nd_set_tag (how autograd
                  records invocations: MXNet's Imperative::RecordOp)
   Each is documented with who may call it; none allocates except where it
   says so. */
/* Element i of data (of dtype t) as a double; a store of v into element i
   by req (write, add to, or nothing for DP_REQ_NULL), converting as the
   built-in kernels do: integer dtypes wrap around, bool stores v != 0. Any
   thread, no errors (an unknown dtype reads and writes as uint8). */
DP_API double dp_dtype_load(dp_dtype t, const void *data, int64_t i);
DP_API void dp_dtype_store(dp_dtype t, void *data, int64_t i, double v, dp_req req);
/* The same for n elements from element i: out[j] = dp_dtype_load(t, data,
   i + j), and v[j] stored into element i + j as dp_dtype_store does, with
   one dtype switch for the block instead of one an element (a kernel's
   loop over a dtype it has no loop of its own for: float16, the
   integers). n <= 0 does nothing; data's and out's (v's) ranges must not
   overlap. Any thread, no errors. */
DP_API void dp_dtype_load_n(dp_dtype t, const void *data, int64_t i, int64_t n, double *out);
DP_API void dp_dtype_store_n(dp_dtype t, void *data, int64_t i, int64_t n, const double *v, dp_req req);
/* s as "(2, 3)" into buf (cut to cap - 1 bytes); returns buf. Any thread. */
DP_API const char *dp_shape_format(const dp_shape *s, char *buf, size_t cap);
/* A view of a's bytes: from byte_offset (past a's own start) as an array
   of dtype in shape, with a's variable; release it like any array. No
   tracker tag goes with it. Errors (logged): DP_ERROR_INVALID_ARGS for
   NULL arguments, an unknown dtype, a view that reaches past a's last byte
   or does not start at a multiple of the dtype's size;
   DP_ERROR_OUT_OF_MEMORY. Any thread. */
DP_API dp_result dp_nd_view(dp_ndarray *a, const dp_shape *shape, dp_dtype dtype, size_t byte_offset, dp_ndarray **out);
/* A 1-d uint8 array over bytes [byte_offset, byte_offset + bytes) of a
   (within a's own bytes) with a variable of its own, so that operations on it are ordered
   apart from a's (the caller orders them: it owns those bytes now). It
   holds a's storage until its own last operation is done. An executor
   places its intermediate results in one arena so. Errors as dp_nd_view
   (any byte offset is aligned enough for uint8). Any thread. */
DP_API dp_result dp_nd_borrow(dp_ndarray *a, size_t byte_offset, size_t bytes, dp_ndarray **out);
/* Whether a and b are views of one storage (not whether their bytes
   overlap). Any thread. */
DP_API int dp_nd_same_storage(const dp_ndarray *a, const dp_ndarray *b);
/* How many writes were pushed to a's storage so far (dp_nd_write, outputs
   and mutated inputs of invocations): a value saved for later can be
   checked to be unchanged. Any thread. */
DP_API int32_t dp_nd_version(const dp_ndarray *a);
/* Checks that arrays can live on *ctx of eng (DP_DEV_DEFAULT becomes the
   CPU); logs as `what` and returns DP_ERROR_BAD_CONTEXT if not (an unknown
   device, a GPU without a backend with memory functions). Any thread. */
DP_API dp_result dp_nd_check_ctx(dp_engine *eng, dp_ctx *ctx, const char *what);
/* An operator's input or output count (declared = op->num_inputs or
   op->num_outputs) for parsed params: as registered, or from num_args (-1:
   num_args, -2: num_args + 1); -1 when num_args is out of range. Any
   thread. */
DP_API int dp_operator_arity(const dp_operator *op, const dp_params *params, int declared);
/* Changes one parameter of parsed params (the others stay); on error
   (logged as ND_PARAM, DP_ERROR_INVALID_ARGS) params is unchanged. Any
   thread. */
DP_API dp_result dp_operator_set_param(dp_engine *eng, const dp_operator *op, const dp_param *param, dp_params *params);
/* Registers op with a gradient operator grad_name that has op's
   parameters, inputs (the output gradient, then op's inputs as
   op->grad_needs declares; DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS when 0) and
   one output per input of op, each of that input's shape, computed by
   grad_kernel; grad_inplace is its inplace bits. Sets op->gradient. Errors
   as dp_operator_register. Register from one thread, before use. */
DP_API dp_result dp_operator_register_with_gradient(dp_operator *op, const char *grad_name, const char *grad_doc,
                                                    dp_kernel_fn grad_kernel, unsigned grad_inplace);
/* dp_invoke for an operator already looked up and parameters already
   parsed (a gradient pass or an optimizer step repeats one invocation many
   times): the same checks, overlap rules, pushes, tracking, limits and
   errors; outputs[i] NULL are made and returned there; req NULL: all
   DP_REQ_WRITE. num_inputs is 0..DP_MAX_OP_ARRAYS and num_outputs
   1..DP_MAX_OP_ARRAYS. Also DP_ERROR_INVALID_ARGS for a NULL eng, op,
   params, outputs, or inputs with num_inputs > 0 (NULL_ARGUMENT), and
   params not parsed for op (ND_PARAM). Any thread. */
DP_API dp_result dp_invoke_parsed(dp_engine *eng, const dp_operator *op, const dp_params *params, int num_inputs,
                                  dp_ndarray *const *inputs, double scalar, int num_outputs, dp_ndarray **outputs,
                                  const dp_req *req);
/* C (m x n, row stride ldc) = op(A) op(B) + beta C in float32 or float64
   (t), row major, op(X) = X or X transposed (ta, tb non-zero): the kernel
   of dot, through CBLAS with DEPENG_USE_CBLAS. Without it, a packed,
   cache-blocked GEMM whose micro-kernel is picked when called (AVX2+FMA on
   x86 CPUs that have it, with gcc or clang; else portable C the compiler
   vectorises); its workspace, about (m + min(n, 4096)) x 256 elements, is
   on the stack when under 16 KiB, else malloc'd by dp_gemm and freed
   before it returns (dp_gemm_on: the engine's, kept). When there is no
   memory for it, a slower path on the stack gives the same bits (at most
   about 80 KiB of stack in all). Results are bitwise the same for the same
   arguments on the same CPU; not across CPUs with and without AVX2. m, n,
   k, lda, ldb, ldc fit int with DEPENG_USE_CBLAS. m or n 0 writes nothing
   and k 0 sets C = beta C (0 for beta 0, whatever C held); then A and B
   are not read and no leading dimension is checked (with DEPENG_USE_CBLAS
   too: BLAS is not called). A kernel's helper: no errors, any thread.
   dp_gemm runs on the calling thread. */
DP_API void dp_gemm(dp_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                    const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
/* dp_gemm split over eng's range loop (dp_parallel_for: the caller and
   idle CPU workers; from inside an op, pass its dp_run_ctx's engine) when
   m n k >= 2^18, in tiles fixed by the shape alone: the result is bitwise
   the same as dp_gemm's at any worker count. eng NULL: dp_gemm.
   Memory: the workspaces (and dp_gemm_pack_b_on's staged op(B)) belong to
   eng, come from its allocator (desc.allocator) and are kept for later
   calls, so that a loop of the same products (a training step) allocates
   nothing once warm. The first call that finds none free to fit makes one
   per thread that can run products on eng (its workers so far and one
   caller), each the size of the largest one asked for so far; calls at
   once (threads, operations, GEMMs inside range chunks) hold one each, and
   more at once than that make more. Most kept: at most 64 idle ones, each
   the largest workspace a call on eng has needed since the last
   dp_storage_release_pool (about (m + min(n, 4096)) x 256 elements; n k
   for a staged op(B)). The idle ones are freed by dp_storage_release_pool
   for the CPU, all by dp_engine_destroy. Out of memory (the allocator's
   NULL), dp_gemm_on takes the slower stack path (the same bits) and
   dp_gemm_pack_b_on returns DP_ERROR_OUT_OF_MEMORY; the kept ones stay as
   they were. No errors; any thread, also from inside operations. */
DP_API void dp_gemm_on(dp_engine *eng, dp_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                       const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
/* Writes op(B)'s rows [p0, p0 + kc) and columns [j0, j0 + w) into out (of
   the GEMM's dtype) row by row, nr elements a row: out[p nr + q] =
   op(B)(p0 + p, j0 + q) for q < w, and 0 for w <= q < nr. */
typedef void (*dp_gemm_pack_fn)(void *user, int64_t p0, int64_t kc, int64_t j0, int64_t w, int64_t nr, void *out);
/* dp_gemm_on with op(B) (k x n) written by pack straight into the GEMM's
   packed panels instead of read from an array: a B made on the fly (a
   convolution's im2col columns) then never exists whole, and the packing
   copy is saved. tb says which array op(B) stands for: the result is
   bitwise dp_gemm_on's with the same ta and tb on an array holding op(B)
   (tb 0) or its transpose (tb 1), at any worker count. The panels, their
   widths (nr: 16 float32 / 8 float64 with AVX2) and the kernel calls are
   those dp_gemm_on runs; on the shapes where dp_gemm_on reads a
   transposed B in place instead (tb 1, ta 0, float32, with AVX2: n up to
   32, or k >= 256, m <= 256 and n k up to 2^19), op(B) is staged
   transposed in an n x k workspace, from pack one column at a time (w
   and nr 1), and that path runs on it. pack is called from the range loop's
   threads at once (each call its own out) and must not fail or call
   back into the engine. With DEPENG_USE_CBLAS op(B) is written whole into
   a k x n workspace (pack(user, 0, k, 0, n, n, buf)), or n x k
   staged as above for tb 1, for CBLAS. The workspaces are eng's, kept
   (see dp_gemm_on); with eng NULL, malloc'd and freed before it returns.
   Returns DP_OK; DP_ERROR_INVALID_ARGS for a NULL pack or a dtype other
   than float32 and float64; DP_ERROR_OUT_OF_MEMORY (nothing computed, C
   untouched) when the workspace or the staged op(B) could not be allocated. No log line (a kernel's
   helper). Any thread, also from inside operations. */
DP_API dp_result dp_gemm_pack_b_on(dp_engine *eng, dp_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a,
                                   int64_t lda, dp_gemm_pack_fn pack, void *user, double beta, void *c, int64_t ldc);
/* Pushes one operation that copies src's bytes into dst (the same byte
   size, any devices of one engine), reading src's variable and writing
   dst's, described by how (NULL: as dp_nd_copy_to's: a GPU end on that
   GPU's copy queue); from how only ctx, prop, priority and name are used.
   It runs even when src failed, passing the failure on to dst. dst counts
   as written (dp_nd_version; the tracker hears of it, as of dp_nd_write).
   Errors (logged): DP_ERROR_INVALID_ARGS (NULL arrays, other sizes or
   engines, overlapping bytes), DP_ERROR_OUT_OF_MEMORY, or dp_push's. Any
   thread. */
DP_API dp_result dp_nd_copy_into(dp_ndarray *src, dp_ndarray *dst, const dp_push_desc *how);
/* An invocation as a tracker sees it. */
typedef struct dp_invocation {
    dp_engine *eng;
    const dp_operator *op;
    const dp_params *params;
    double scalar;
    int num_inputs, num_outputs;
    dp_ndarray *const *inputs;
    dp_ndarray *const *outputs;   /* in check: NULL for those the call makes */
} dp_invocation;
/* A tracker follows every invocation (one per process; autograd is one):
     check(inv, &record)  after depeng's own checks, before anything is
                          made or pushed: sets record (1: call record), or
                          refuses the invocation with an error (logged by
                          the tracker), which dp_invoke returns;
     record(inv)          the outputs exist, nothing is pushed yet: returns
                          the tracker's record, NULL when out of memory
                          (the invocation then fails with
                          DP_ERROR_OUT_OF_MEMORY, nothing pushed);
     pushed(inv, rec)     after the push, rec NULL when not recorded;
     discard(rec)         the push failed after record: drop it;
     tag_released(tag)    an array with a tag (dp_nd_set_tag) was released
                          for the last time;
     written(a)           dp_nd_write (or a load into a) replaced a's
                          values outside any invocation;
     training()           optional (NULL: never): whether this thread is
                          in training mode, MXNet's is_training. An
                          operator with a BOOL parameter named "is_train"
                          (BatchNorm, Dropout) that a dp_invoke desc does
                          not give gets this value (autograd: training
                          while recording unless dp_autograd_set_training
                          says otherwise); dp_invoke_parsed's params are
                          taken as given.
   check, record, pushed and discard run on the invoking thread, inside the
   call (training too); tag_released runs wherever the array's last reference goes (any
   thread, an engine worker too, inside the engine): it must not wait for
   the engine. written runs in dp_nd_write (or dp_nd_copy_into) on its
   caller's thread. Removing the tracker (NULL) while arrays carry tags
   leaks what the tags hold. */
typedef struct dp_tracker {
    dp_result (*check)(const dp_invocation *inv, int *record);
    void *(*record)(const dp_invocation *inv);
    void (*pushed)(const dp_invocation *inv, void *rec);
    void (*discard)(void *rec);
    void (*tag_released)(void *tag);
    void (*written)(dp_ndarray *a);
    int (*training)(void);
} dp_tracker;
/* Installs the process's tracker (copied; every function but training
   set: zero-initialise the struct), or removes
   it (NULL). Set it while setting up, before any thread invokes; a tracker
   already installed is DP_ERROR_INVALID_ARGS (logged) unless t is the
   same. */
DP_API dp_result dp_set_tracker(const dp_tracker *t);
/* The tracker's word on an array: a pointer and an int (autograd: the node
   that made the array and which output it is), NULL and 0 until set. The
   tag is the array handle's own, not its storage's: views start with none.
   dp_nd_set_tag replaces it without telling the tracker of the old one.
   Use them from the thread that uses the array. */
DP_API void *dp_nd_tag(const dp_ndarray *a, int *index);
DP_API void dp_nd_set_tag(dp_ndarray *a, void *tag, int index);

#endif /* DEPENG_NO_NDARRAY */

#ifdef __cplusplus
}
#endif
#endif /* DEPENG_H */

/* ====================================================================== 9. IMPLEMENTATION */
#if defined(__INTELLISENSE__) || defined(__CDT_PARSER__) || defined(Q_CREATOR_RUN)
#ifndef DEPENG_IMPLEMENTATION
#define DEPENG_IMPLEMENTATION
#endif
#endif
#if defined(DEPENG_IMPLEMENTATION) && !defined(DEPENG_IMPL_INCLUDED)
#define DEPENG_IMPL_INCLUDED 1

/* >>mxnet names ----------------------------------------------------------
   For a reader who knows MXNet's engine (src/engine/threaded_engine.h and
   its neighbours): each of its names, and what implements it here.

   MXNet                                   depeng
   Engine::NewVariable / DeleteVariable    dp_var_create / dp_var_delete: a
                                           DP__KIND_DELETE block, dp__retire_var
   ThreadedVar                             dp__var (>>memory)
   ThreadedVar::head_, VersionedVarBlock   v->queue[head..tail): a ring of
     list (pending ops, next, trigger,     dp__entry, each an op's block
     write flag)                           address with the low bit for write
   ThreadedVar::num_pending_reads_         v->nreaders (> 0: running reads)
   kWriteTriggered                         DP__WRITING in v->nreaders
   ThreadedVar::pending_write_             "a write is pending": the running
                                           write or any queued entry (reads
                                           queue only behind a write); the
                                           test is dp__must_wait (>>rule)
   ThreadedVar::AppendReadDependency       dp__append_read   (>>rule)
   ThreadedVar::AppendWriteDependency      dp__append_write  (>>rule)
   ThreadedVar::CompleteReadDependency     dp__complete_read (>>rule)
   ThreadedVar::CompleteWriteDependency    dp__complete_write (>>rule)
     the same four on the threaded         dp__chain_append_read, ..._write,
     engines, without a shared lock        dp__chain_complete_read, ..._write
                                           (>>chain): the list of pending ops
                                           is linked through the op blocks
                                           (dp__elem), as MXNet's
                                           VersionedVarBlock list is, with
                                           the reads between two writes
                                           counted in a run
   ThreadedVar::to_delete_                 the handle's generation, bumped
                                           when the deletion is pushed
   ThreadedVar::var_exception,             dp__failure on the variable, the
     OprBlock::opr_exception               op's block, and the engine's
                                           unreported list (>>failures)
   OprBlock                                dp__block (>>memory)
   OprBlock::wait                          b->wait: unmet dependencies
   OprBlock::decr_wait                     dp__grant (>>rule)
   OprBlock::opr, ctx, priority            b->op or b->fn/afn, b->ctx,
                                           b->priority
   ThreadedOpr (NewOperator,               dp__opobj (dp_opr_create,
     DeleteOperator)                       dp_opr_destroy); its const_vars and
                                           mutable_vars: op->vars, reads first
   ThreadedEngine::Push                    dp_opr_push, dp__queue_and_go (>>push)
   ThreadedEngine::PushAsync / PushSync    dp_push_async / dp_push_sync
                                           (dp_push, >>push)
   ThreadedEngine::PushToExecute           dp__dispatch, dp__dispatch_ready,
                                           dp__route (>>dispatch)
   ThreadedEngine::ExecuteOprBlock         dp__execute (>>execute)
   ThreadedEngine::OnComplete              dp__finish; its loop over the
                                           variables: dp__release_vars
                                           (>>completion)
   CallbackOnComplete / OnCompleteStatic   dp_completion / dp_complete
   ThreadedEngine::WaitForVar              dp_wait_var: a DP__KIND_WAIT block
                                           that writes the variable (>>waits)
   ThreadedEngine::WaitForAll, pending_,   dp_wait_all, eng->seq - eng->done,
     finished_cv_                          eng->wait_cv
   ThreadedEnginePerDevice                 DP_ENGINE_PERDEVICE: the pools of
                                           dp__route; a worker: dp__worker_main
     ThreadWorkerBlock, its task queue     dp__group, dp__queue (>>queues)
     (dmlc::ConcurrentBlockingQueue)
     a GPU worker's stream (and events)    dp__worker.stream, the event ring
                                           (>>gpu)
   ThreadedEnginePooled                    DP_ENGINE_POOLED: task_group and
                                           io_group (dp__route)
   NaiveEngine                             DP_ENGINE_NAIVE: dp__run_here and
                                           the naive fast path (>>naive fast
                                           path)
   FnProperty (kNormal, kCopyToGPU, ...)   dp_prop
   RunContext                              dp_run_ctx
   MXNET_CPU_WORKER_NTHREADS and the like  DEPENG_CPU_WORKER_NTHREADS, ...
   Not in MXNet: per-worker deques and work stealing (>>queues), the
   fairness rule (>>fairness), pacing of pushers (>>pacing), variables
   whose completions take no lock (>>chain). */

/* >>config ------------------------------------------------------------- */
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#if !defined(DEPENG_NO_NDARRAY)   /* the engine needs neither */
#include <math.h>
#include <errno.h>
#endif
#ifndef DP_ASSERT
#include <assert.h>
#define DP_ASSERT(c) assert(c)
#endif
#define DP_IMPL
#if defined(__GNUC__) || defined(__clang__)
#define DP__PRIVATE static __attribute__((unused))
#else
#define DP__PRIVATE static
#endif
/* Setup, teardown, diagnostics and error reporting: compiled for size and
   kept off the hot paths' cache lines (about 4 KB less code per program). */
#if defined(__GNUC__) || defined(__clang__)
#define DP__COLD __attribute__((cold))
#else
#define DP__COLD
#endif
#define DP__DEF(v, d) ((v) == 0 ? (d) : (v))
#define DP__NTH(v, d) ((v) == DP_NO_THREADS ? 0 : DP__DEF(v, d))   /* a thread count */
#ifndef DEPENG_TEST_HOOK
#define DEPENG_TEST_HOOK(point) ((void)0)
#endif

/* >>platform ------------------------------------------------------------
   Threads come from Win32 on Windows, from C11 <threads.h> where the
   platform has it, else from pthreads. __STDC_NO_THREADS__ alone is not
   reliable (several libcs lack the header without defining it), so
   __has_include decides where it exists, and
   DEPENG_USE_PTHREADS / DEPENG_USE_C11_THREADS force either path. Under
   ThreadSanitizer the default is pthreads. */
#if defined(DEPENG_USE_PTHREADS) && defined(DEPENG_USE_C11_THREADS)
#error "depeng: define at most one of DEPENG_USE_PTHREADS and DEPENG_USE_C11_THREADS"
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DP__TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(DP__TSAN)
#define DP__TSAN 1
#endif
/* Windows uses its own threads, locks and clocks (Win32, Windows 7 or later)
   unless a path is forced: MinGW-w64's winpthreads is an optional extra
   library, and MSVC has no pthreads. */
#if defined(_WIN32) && !defined(DEPENG_USE_PTHREADS) && !defined(DEPENG_USE_C11_THREADS)
#define DP__WIN32_THREADS 1
#else
#define DP__WIN32_THREADS 0
#endif
#if defined(DEPENG_USE_PTHREADS)
#define DP__C11_THREADS 0
#elif defined(DEPENG_USE_C11_THREADS)
#define DP__C11_THREADS 1
#elif defined(DP__TSAN)
/* ThreadSanitizer (gcc 12, clang 14/16) crashes on threads made by
   thrd_create; on pthreads it works */
#define DP__C11_THREADS 0
#elif defined(__STDC_NO_THREADS__) || defined(__APPLE__) || defined(_WIN32)
#define DP__C11_THREADS 0
#elif defined(__has_include)
#if __has_include(<threads.h>)
#define DP__C11_THREADS 1
#else
#define DP__C11_THREADS 0
#endif
#else
#define DP__C11_THREADS 0
#endif

#include <time.h>
#if defined(_WIN32)
/* <windows.h> without its rarely used parts and without the min/max macros.
   It is included once per file, so a file that needs the rest includes it
   before the implementation (see COMPILE-TIME OPTIONS). */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#define DP__UNDEF_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#define DP__UNDEF_NOMINMAX
#endif
#include <windows.h>
#include <process.h>
#include <fenv.h>
#ifdef DP__UNDEF_LEAN_AND_MEAN
#undef WIN32_LEAN_AND_MEAN
#undef DP__UNDEF_LEAN_AND_MEAN
#endif
#ifdef DP__UNDEF_NOMINMAX
#undef NOMINMAX
#undef DP__UNDEF_NOMINMAX
#endif
#endif
#if DP__WIN32_THREADS
/* Slim reader/writer locks need no cleanup and cannot fail to initialise;
   condition variables pair with them (SleepConditionVariableSRW). */
typedef SRWLOCK dp__mutex;
typedef CONDITION_VARIABLE dp__cond;
typedef HANDLE dp__thread;
DP__PRIVATE int dp__mutex_init(dp__mutex *m) { InitializeSRWLock(m); return 0; }
DP__PRIVATE void dp__mutex_destroy(dp__mutex *m) { (void)m; }
DP__PRIVATE void dp__mutex_lock(dp__mutex *m) { AcquireSRWLockExclusive(m); }
DP__PRIVATE int dp__mutex_trylock(dp__mutex *m) { return TryAcquireSRWLockExclusive(m) != 0; }
DP__PRIVATE void dp__mutex_unlock(dp__mutex *m) { ReleaseSRWLockExclusive(m); }
DP__PRIVATE int dp__cond_init(dp__cond *c) { InitializeConditionVariable(c); return 0; }
DP__PRIVATE void dp__cond_destroy(dp__cond *c) { (void)c; }
DP__PRIVATE void dp__cond_wait(dp__cond *c, dp__mutex *m) { SleepConditionVariableSRW(c, m, INFINITE, 0); }
/* Waits at most ms milliseconds (spurious wake-ups too: callers re-check
   their condition and their own deadline). */
DP__PRIVATE void dp__cond_wait_ms(dp__cond *c, dp__mutex *m, uint32_t ms) { SleepConditionVariableSRW(c, m, ms, 0); }
DP__PRIVATE void dp__cond_signal(dp__cond *c) { WakeConditionVariable(c); }
DP__PRIVATE void dp__cond_broadcast(dp__cond *c) { WakeAllConditionVariable(c); }
/* A new Windows thread starts with the system's default floating-point
   environment, not its creator's (as POSIX threads do): MinGW's main thread
   runs the x87 unit at 64-bit precision, new threads at 53, so a libm
   function that uses it (exp) gave a worker different last bits than the
   thread that made the engine. The creator's environment is copied over. */
typedef struct { void (*fn)(void *); void *arg; fenv_t env; } dp__thread_start;
/* _beginthreadex rather than CreateThread: it sets up the C runtime's
   per-thread state, which the ops' own C library calls may need. */
static unsigned __stdcall dp__thread_tramp(void *p) {
    dp__thread_start s = *(dp__thread_start *)p;
    fesetenv(&s.env);
    s.fn(s.arg);
    return 0;
}
DP__PRIVATE int dp__thread_create(dp__thread *t, dp__thread_start *s, void (*fn)(void *), void *arg) {
    uintptr_t h;
    s->fn = fn; s->arg = arg;
    fegetenv(&s->env);
    h = _beginthreadex(NULL, 0, dp__thread_tramp, s, 0, NULL);
    if (h == 0) return -1;
    *t = (HANDLE)h;
    return 0;
}
DP__PRIVATE void dp__thread_join(dp__thread t) { WaitForSingleObject(t, INFINITE); CloseHandle(t); }
DP__PRIVATE void dp__thread_yield(void) { SwitchToThread(); }
#elif DP__C11_THREADS
#include <threads.h>
typedef mtx_t dp__mutex;
typedef cnd_t dp__cond;
typedef thrd_t dp__thread;
DP__PRIVATE int dp__mutex_init(dp__mutex *m) { return mtx_init(m, mtx_plain) == thrd_success ? 0 : -1; }
DP__PRIVATE void dp__mutex_destroy(dp__mutex *m) { mtx_destroy(m); }
DP__PRIVATE void dp__mutex_lock(dp__mutex *m) { mtx_lock(m); }
DP__PRIVATE int dp__mutex_trylock(dp__mutex *m) { return mtx_trylock(m) == thrd_success; }
DP__PRIVATE void dp__mutex_unlock(dp__mutex *m) { mtx_unlock(m); }
DP__PRIVATE int dp__cond_init(dp__cond *c) { return cnd_init(c) == thrd_success ? 0 : -1; }
DP__PRIVATE void dp__cond_destroy(dp__cond *c) { cnd_destroy(c); }
DP__PRIVATE void dp__cond_wait(dp__cond *c, dp__mutex *m) { cnd_wait(c, m); }
/* Waits at most ms milliseconds (spurious wake-ups too: callers re-check
   their condition and their own deadline). */
/* C11 offers only TIME_UTC, the wall clock: setting it back while a timed
   wait sleeps stretches that wait (the pthreads path has no such limit). */
DP__PRIVATE void dp__cond_wait_ms(dp__cond *c, dp__mutex *m, uint32_t ms) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    ts.tv_sec += (time_t)(ms / 1000u);
    ts.tv_nsec += (long)(ms % 1000u) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    cnd_timedwait(c, m, &ts);
}
DP__PRIVATE void dp__cond_signal(dp__cond *c) { cnd_signal(c); }
DP__PRIVATE void dp__cond_broadcast(dp__cond *c) { cnd_broadcast(c); }
typedef struct { void (*fn)(void *); void *arg; } dp__thread_start;
static int dp__thread_tramp(void *p) {
    dp__thread_start s = *(dp__thread_start *)p;
    s.fn(s.arg);
    return 0;
}
DP__PRIVATE int dp__thread_create(dp__thread *t, dp__thread_start *s, void (*fn)(void *), void *arg) {
    s->fn = fn; s->arg = arg;
    return thrd_create(t, dp__thread_tramp, s) == thrd_success ? 0 : -1;
}
DP__PRIVATE void dp__thread_join(dp__thread t) { thrd_join(t, NULL); }
DP__PRIVATE void dp__thread_yield(void) { thrd_yield(); }
#else
#include <pthread.h>
#include <sched.h>
typedef pthread_mutex_t dp__mutex;
typedef pthread_cond_t dp__cond;
typedef pthread_t dp__thread;
DP__PRIVATE int dp__mutex_init(dp__mutex *m) { return pthread_mutex_init(m, NULL) ? -1 : 0; }
DP__PRIVATE void dp__mutex_destroy(dp__mutex *m) { pthread_mutex_destroy(m); }
DP__PRIVATE void dp__mutex_lock(dp__mutex *m) { pthread_mutex_lock(m); }
DP__PRIVATE int dp__mutex_trylock(dp__mutex *m) { return pthread_mutex_trylock(m) == 0; }
DP__PRIVATE void dp__mutex_unlock(dp__mutex *m) { pthread_mutex_unlock(m); }
/* Timed waits measure on the monotonic clock where the condition variable
   can be told to (POSIX condattr clocks; macOS has a relative wait instead),
   so setting the wall clock back does not stretch a dp_wait_var_for. */
#if defined(__APPLE__) || !defined(CLOCK_MONOTONIC)
#define DP__COND_CLOCK CLOCK_REALTIME
DP__PRIVATE int dp__cond_init(dp__cond *c) { return pthread_cond_init(c, NULL) ? -1 : 0; }
#else
#define DP__COND_CLOCK CLOCK_MONOTONIC
DP__PRIVATE int dp__cond_init(dp__cond *c) {
    pthread_condattr_t attr;
    int r;
    if (pthread_condattr_init(&attr)) return -1;
    r = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) || pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
    return r ? -1 : 0;
}
#endif
DP__PRIVATE void dp__cond_destroy(dp__cond *c) { pthread_cond_destroy(c); }
DP__PRIVATE void dp__cond_wait(dp__cond *c, dp__mutex *m) { pthread_cond_wait(c, m); }
/* Waits at most ms milliseconds (spurious wake-ups too: callers re-check
   their condition and their own deadline). */
DP__PRIVATE void dp__cond_wait_ms(dp__cond *c, dp__mutex *m, uint32_t ms) {
    struct timespec ts;
#if defined(__APPLE__)
    ts.tv_sec = (time_t)(ms / 1000u);
    ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
    pthread_cond_timedwait_relative_np(c, m, &ts);
#else
    clock_gettime(DP__COND_CLOCK, &ts);
    ts.tv_sec += (time_t)(ms / 1000u);
    ts.tv_nsec += (long)(ms % 1000u) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(c, m, &ts);
#endif
}
DP__PRIVATE void dp__cond_signal(dp__cond *c) { pthread_cond_signal(c); }
DP__PRIVATE void dp__cond_broadcast(dp__cond *c) { pthread_cond_broadcast(c); }
typedef struct { void (*fn)(void *); void *arg; } dp__thread_start;
static void *dp__thread_tramp(void *p) {
    dp__thread_start s = *(dp__thread_start *)p;
    s.fn(s.arg);
    return NULL;
}
DP__PRIVATE int dp__thread_create(dp__thread *t, dp__thread_start *s, void (*fn)(void *), void *arg) {
    s->fn = fn; s->arg = arg;
    return pthread_create(t, NULL, dp__thread_tramp, s) ? -1 : 0;
}
DP__PRIVATE void dp__thread_join(dp__thread t) { pthread_join(t, NULL); }
DP__PRIVATE void dp__thread_yield(void) { sched_yield(); }
#endif

#if defined(__cplusplus)
#define DP__THREAD_LOCAL thread_local
#elif defined(_MSC_VER)
#define DP__THREAD_LOCAL __declspec(thread)
#else
#define DP__THREAD_LOCAL _Thread_local
#endif

#if defined(_WIN32)
/* QueryPerformanceCounter is monotonic; its frequency is fixed at boot. The
   split into seconds and remainder keeps ticks * 1e9 from overflowing. */
DP__PRIVATE uint64_t dp__now_ns(void) {
    LARGE_INTEGER count, freq;
    uint64_t c, f;
    QueryPerformanceCounter(&count);
    QueryPerformanceFrequency(&freq);
    c = (uint64_t)count.QuadPart; f = (uint64_t)freq.QuadPart;
    return c / f * 1000000000u + c % f * 1000000000u / f;
}
/* Every processor group counts (GetSystemInfo sees only the caller's);
   with one group, the process affinity mask may allow fewer. */
DP__PRIVATE int dp__usable_cpus(void) {
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    DWORD_PTR mask = 0, sys = 0;
    if (GetActiveProcessorGroupCount() == 1 && GetProcessAffinityMask(GetCurrentProcess(), &mask, &sys) && mask) {
        DWORD allowed = 0;
        for (; mask; mask &= mask - 1) allowed++;
        if (allowed < n) n = allowed;
    }
    return n > 0 ? (int)n : 1;
}
DP__PRIVATE void *dp__aligned_alloc(size_t align, size_t size) { return _aligned_malloc(size, align); }
DP__PRIVATE void dp__aligned_free(void *p) { _aligned_free(p); }
#else
#include <time.h>
#include <unistd.h>
DP__PRIVATE uint64_t dp__now_ns(void) {
    struct timespec ts;
#if defined(CLOCK_MONOTONIC)
    clock_gettime(CLOCK_MONOTONIC, &ts);
#else
    timespec_get(&ts, TIME_UTC);     /* C11; not monotonic, good enough for profiles */
#endif
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#if defined(__linux__)
/* The CPUs in the process's affinity mask: the bits set in the hex mask of
   /proc/self/status's line "Cpus_allowed:\tff,00000003" (sched_getaffinity
   would need _GNU_SOURCE, which a header cannot set once the user's includes
   have been read); 0 when it cannot be read. The mask may name CPUs that
   are offline, so the caller takes the smaller of it and the online count. */
DP__COLD DP__PRIVATE long dp__allowed_cpus(void) {
    char line[4096];
    long count = 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Cpus_allowed:", 13) == 0) {
            const char *p, *hex = "0123456789abcdef";
            if (strchr(line, '\n'))                  /* else longer than the buffer: not counted */
                for (p = line + 13; *p; p++) {
                    const char *d = strchr(hex, *p);
                    if (d) count += "0112122312232334"[d - hex] - '0';   /* the digit's bits */
                }
            break;
        }
    fclose(f);
    return count;
}
#else
DP__PRIVATE long dp__allowed_cpus(void) { return 0; }   /* no affinity masks to read */
#endif
DP__PRIVATE int dp__usable_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN), allowed = dp__allowed_cpus();
    if (allowed > 0 && (n <= 0 || allowed < n)) n = allowed;
    return n > 0 ? (int)n : 1;
}
DP__PRIVATE void *dp__aligned_alloc(size_t align, size_t size) { return aligned_alloc(align, size); }
DP__PRIVATE void dp__aligned_free(void *p) { free(p); }
#endif

/* >>atomics ------------------------------------------------------------
   Each atomic is a one-field struct so plain access does not compile. C uses
   <stdatomic.h> (MSVC: Visual Studio 2022 17.5 or later with /std:c11
   /experimental:c11atomics); C++ (nvcc, g++ -x c++) uses the GCC/Clang
   __atomic builtins, which are the same instructions. MSVC's C++ has neither,
   so with MSVC the implementation file is compiled as C (the declarations
   work from C++). */
#if defined(__cplusplus) && defined(_MSC_VER) && !defined(__clang__)
#error "depeng: with MSVC, compile the DEPENG_IMPLEMENTATION file as C (/std:c11 /experimental:c11atomics)"
#elif !defined(__cplusplus)
#include <stdatomic.h>
typedef struct { _Atomic(int32_t) v; } dp__a32;
typedef struct { _Atomic(uint64_t) v; } dp__a64;
typedef struct { _Atomic(void *) v; } dp__aptr;
#define DP__RELAXED memory_order_relaxed
#define DP__ACQUIRE memory_order_acquire
#define DP__RELEASE memory_order_release
#define DP__ACQ_REL memory_order_acq_rel
#define DP__SEQ_CST memory_order_seq_cst
#define dp__load(a, mo) atomic_load_explicit(&(a)->v, mo)
#define dp__store(a, x, mo) atomic_store_explicit(&(a)->v, x, mo)
#define dp__fetch_add(a, x, mo) atomic_fetch_add_explicit(&(a)->v, x, mo)
#define dp__exchange(a, x, mo) atomic_exchange_explicit(&(a)->v, x, mo)
#define dp__cas(a, expp, x, mo) atomic_compare_exchange_strong_explicit(&(a)->v, expp, x, mo, DP__RELAXED)
#else
typedef struct { int32_t v; } dp__a32;
typedef struct { uint64_t v; } dp__a64;
typedef struct { void *v; } dp__aptr;
#define DP__RELAXED __ATOMIC_RELAXED
#define DP__ACQUIRE __ATOMIC_ACQUIRE
#define DP__RELEASE __ATOMIC_RELEASE
#define DP__ACQ_REL __ATOMIC_ACQ_REL
#define DP__SEQ_CST __ATOMIC_SEQ_CST
#define dp__load(a, mo) __atomic_load_n(&(a)->v, mo)
#define dp__store(a, x, mo) __atomic_store_n(&(a)->v, x, mo)
#define dp__fetch_add(a, x, mo) __atomic_fetch_add(&(a)->v, x, mo)
#define dp__exchange(a, x, mo) __atomic_exchange_n(&(a)->v, x, mo)
#define dp__cas(a, expp, x, mo) __atomic_compare_exchange_n(&(a)->v, expp, x, 0, mo, DP__RELAXED)
#endif

/* Asks for a cache line ahead of use (for writing): the block a pusher takes
   next, the op a worker runs next. Their lines were last written on another
   core, so the miss overlaps with the current op instead of stalling the next. */
#if defined(__GNUC__) || defined(__clang__)
#define dp__prefetch(p) __builtin_prefetch((p), 1)
#else
#define dp__prefetch(p) ((void)(p))
#endif

DP__PRIVATE void dp__cpu_relax(void) {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
    __asm__ __volatile__("yield");
#elif defined(_WIN32)
    YieldProcessor();
#endif
}

/* The per-variable lock: a test-and-test-and-set spinlock. Critical sections
   are a few pointer moves, so spinning beats sleeping; after a while the
   waiter yields so an oversubscribed machine still makes progress. */
typedef struct { dp__a32 v; } dp__spinlock;
DP__PRIVATE void dp__spin_lock(dp__spinlock *l) {
    for (;;) {
        int spins = 0;
        if (!dp__exchange(&l->v, 1, DP__ACQUIRE)) return;
        while (dp__load(&l->v, DP__RELAXED)) {
            if (++spins < 100) dp__cpu_relax(); else dp__thread_yield();
        }
    }
}
DP__PRIVATE int dp__spin_trylock(dp__spinlock *l) { return !dp__load(&l->v, DP__RELAXED) && !dp__exchange(&l->v, 1, DP__ACQUIRE); }
DP__PRIVATE void dp__spin_unlock(dp__spinlock *l) { dp__store(&l->v, 0, DP__RELEASE); }
/* Contention counting (dp_engine_stats): the lock, adding 1 to *contended
   when it was held by someone else. Uncontended, the cost is the branch: the
   counter's line is only written by a thread that is about to wait anyway. */
DP__PRIVATE void dp__spin_lock_counted(dp__spinlock *l, dp__a64 *contended) {
    if (!dp__exchange(&l->v, 1, DP__ACQUIRE)) return;
    dp__fetch_add(contended, 1, DP__RELAXED);
    dp__spin_lock(l);
}
DP__PRIVATE void dp__mutex_lock_counted(dp__mutex *m, dp__a64 *contended) {
    if (dp__mutex_trylock(m)) return;
    dp__fetch_add(contended, 1, DP__RELAXED);
    dp__mutex_lock(m);
}

/* >>memory -------------------------------------------------------------
   Every allocation goes through dp__alloc / dp__free and the desc allocator.
   Out of memory is returned as DP_ERROR_OUT_OF_MEMORY and logged, never a
   crash. */
#define DP__MAX_DEV 16
#define DP__WRITING (-1)
/* A handle id: bit 31 its kind (set for operations), 9 bits of generation,
   22 bits of slot index. The kind bit makes an op's id name no variable and
   a variable's id no op, though both tables count slots from 1. */
#define DP__IDX_BITS 22u
#define DP__IDX_MASK ((1u << DP__IDX_BITS) - 1u)
#define DP__GEN_BITS 9u
#define DP__GEN_MAX ((1u << DP__GEN_BITS) - 1u)
#define DP__KIND_OP 0x80000000u
#define DP__CHUNK_BITS 12u
#define DP__CHUNK_SLOTS (1u << DP__CHUNK_BITS)
#define DP__MAX_CHUNKS ((DP__IDX_MASK + 1u) >> DP__CHUNK_BITS)
#define DP__NUM_CLASSES 16
#define DP__POOL_STRIPES 8

struct dp__block;
struct dp__var;
struct dp__worker;

typedef struct dp__failure {   /* shared by every var a failure reached */
    dp__a32 refs;
    dp_failure info;
    struct dp__failure *next_unreported;
    int unreported;            /* guarded by engine fail_mtx */
    int unrecorded;            /* the engine's own record for failures that found
                                  no memory (see dp__failure_unrecorded): never freed */
    dp__a32 epoch;             /* eng->clear_epoch when it happened: dp_wait_all
                                  bumps that, and a failure of an older epoch is
                                  dead wherever it is still attached */
} dp__failure;

typedef struct dp__prof_rec {
    char name[40];
    int32_t dev_type, dev_id, thread;
    uint64_t start, end;
} dp__prof_rec;
typedef struct dp__prof_buf {
    dp__mutex m;
    dp__prof_rec *recs;
    size_t n, cap;
} dp__prof_buf;

typedef struct dp__graph_rec { uint64_t seq; const char *name; uint32_t nread, nwrite; uint32_t *ids; } dp__graph_rec;

/* A handle table: objects in chunks of 4096 that never move (so a lookup needs
   no lock), a stack of free slot indices, and per-object generations. */
typedef struct dp__table {
    dp__spinlock lock;
    size_t obj_size;
    dp__aptr chunks[DP__MAX_CHUNKS];
    dp__a32 next_index;        /* slots [1, next_index) have been handed out */
    uint32_t *free_idx; uint32_t nfree, cap_free;
    dp__a64 live;
    uint32_t kind;             /* 0 for variables, DP__KIND_OP for operations */
    uint32_t salt;             /* the engine's number: a handle's high 32 bits */
} dp__table;

/* A pool of blocks of one size class. Frees from any thread go to an atomic
   stack (push by CAS, taken whole by exchange, so no ABA); allocation takes
   from a private list under a spinlock that only pushers touch. Each engine
   has DP__POOL_STRIPES pools per class and a pushing thread uses the one its
   thread-local address hashes to, so pushers on different threads rarely
   share a lock (there is no engine-wide lock on the push path). */
typedef struct dp__pool {
    dp__spinlock lock;
    struct dp__block *free;
    dp__aptr returned;
    size_t obj_size, per_chunk;
    void *chunks;
    dp__a64 bytes;
    dp__a64 cas_retries;       /* failed CAS on returned (dp_engine_stats) */
    char pad_[64];             /* keep neighbouring stripes off this cache line */
} dp__pool;

/* A ready queue (see >>queues). The producer end, the consumer end and the
   sleep state sit on separate cache lines: the pusher and the workers touch
   different ones when work is flowing. */
typedef struct dp__queue {
    dp__aptr tail;                 /* FIFO: producers swap themselves in here */
    char pad0_[64 - sizeof(dp__aptr)];
    dp__spinlock take_lock;        /* FIFO: one consumer at a time */
    dp__aptr head;                 /* FIFO: the oldest node; written under take_lock,
                                      read without it by dp__queue_peek */
    struct dp__block *stub;        /* FIFO: the node that keeps it non-empty */
    char pad1_[64 - sizeof(dp__spinlock) - 2 * sizeof(void *)];
    dp__a32 spinning;              /* workers looking for work (not running, not asleep) */
    char pad2_[64 - sizeof(dp__a32)];
    /* Below: written when a worker sleeps or wakes, so a push reads them
       without a cache miss while the workers are busy. */
    dp__a32 sleepers;              /* workers asleep or about to be (written under m) */
    int wakeups;                   /* wake tokens not yet taken (under m) */
    int prioritized, stop;
    int pumped;                    /* a pool without workers: callers run its
                                      ops (dp_run_ready, the waits) */
    dp__mutex m; dp__cond cv;      /* sleeping, and the heap */
    struct dp__block **heap; size_t nheap, capheap;
    struct dp__block *lhead, *ltail;   /* heap queue's fallback list (no memory) */
    /* Contention (dp_engine_stats), written only by a thread that waits or
       looks again anyway: */
    dp__a64 lock_contended;        /* take_lock or m (heap) found held */
    dp__a64 busy_retries;          /* a take found a push half done */
    dp__a64 woken;                 /* sleepers woken (one system call each) */
    dp__a64 outside_takes;         /* queue_takes by other threads (push_runs_ops, callers) */
} dp__queue;

/* A worker's own ready ops in a FIFO pool: a bounded Chase-Lev deque (see
   >>queues). It holds the ops of indexes [top, bottom), op i in slot
   i % DP__DEQUE_SLOTS; indexes only grow (64 bits do not wrap). The owner
   pushes and pops at bottom, which only it writes; thieves take at top with
   a compare-and-swap. A full deque refuses a push (the op goes to the shared
   queue), so it never allocates. */
#define DP__DEQUE_SLOTS 256
typedef struct dp__deque {
    char pad0_[64];                /* off the owner's other fields' line */
    dp__a64 top;                   /* moved up by thieves, and by the owner taking the last op */
    char pad1_[64 - sizeof(dp__a64)];
    dp__a64 bottom;                /* written by the owner only */
    char pad2_[64 - sizeof(dp__a64)];
    dp__aptr slots[DP__DEQUE_SLOTS];
} dp__deque;

#define DP__RANGE_SLOTS 4               /* ranges a pool serves at once (>>ranges) */
typedef struct dp__range_user {        /* helpers inside a slot's range, a line each */
    dp__a32 n;
    char pad_[64 - sizeof(dp__a32)];
} dp__range_user;
typedef struct dp__group {             /* a queue and the threads that serve it */
    dp__queue q;
    struct dp__worker *workers;
    int nworkers;
    dp__a32 entered;                   /* workers that have reached their loop */
    char pad_range_[64];
    dp__aptr range_job[DP__RANGE_SLOTS];   /* ranges open for helpers (>>ranges) */
    char pad_range_end_[64];           /* whatever the group's alignment (malloc's 16
                                          bytes), the users' first line is not the slots' */
    dp__range_user range_users[DP__RANGE_SLOTS];
} dp__group;

#define DP__GPU_INFLIGHT 8
typedef struct dp__worker {
    dp_engine *eng;
    dp__group *group;
    dp__thread thread;
    dp__thread_start start;    /* what the new thread reads as it starts: kept
                                  here, so starting a thread allocates nothing
                                  beside the engine's allocator */
    int index, global_index, started;
    dp_ctx ctx;
    int is_gpu, is_copy;
    void *stream; int stream_err;
    /* GPU workers with backend events: ops whose stream work is queued but
       not yet known to be done, oldest first (see dp__gpu_settle). The ring
       is the owner's to fill; the owner and its idle peers settle it, under
       inflight_lock; inflight_count is read without it to decide whether to
       look. */
    void *events[DP__GPU_INFLIGHT]; int nevents;
    struct dp__block *inflight[DP__GPU_INFLIGHT]; int inflight_head;
    dp__a32 inflight_count;
    dp__spinlock inflight_lock;
    dp__a64 completed;         /* written by this worker only */
    /* dp_engine_stats, written by this worker only: */
    dp__a64 queue_takes, deque_pushes, deque_overflows, steals, steal_retries;
    uint32_t steal_seed;       /* where the next steal starts looking (xorshift) */
    int own_streak;            /* ops run in a row from the own deque or run next */
    int look_turn;             /* which of the shared queue and the own deque's
                                  oldest op the next look tries first */
    uint64_t unflushed;        /* completions not yet added to eng->done */
    struct {                   /* finished blocks on their way back to their */
        struct dp__block *first, *last;   /* pool, in one CAS per batch: two */
        struct dp__pool *pool;            /* batches, since a chain engine's */
        int count;                        /* read runs come from another pool */
    } put[2];                             /* than the ops' blocks (>>chain) */
    struct dp__opobj *unref_op; int32_t unref_count;  /* runs of a pre-created op
                                  finished here, not yet released from its refs */
    dp__prof_buf prof;
    dp__deque deque;           /* FIFO pools only (see >>queues) */
} dp__worker;

struct dp_engine {
    dp_engine_desc desc;
    dp__table vars, ops;
    dp__pool pools[DP__POOL_STRIPES][DP__NUM_CLASSES];
    dp__a64 seq;                /* pushed so far; the last push's number */
    char pad_seq_[56];          /* pushers write seq, finishers write done */
    dp__a64 done;               /* completed, added in batches by workers */
    dp__a32 nwaiters_all;
    dp__a32 outside_finishers;  /* dp__finish / waits running on non-worker threads */
    dp__a64 completed_inline, failed, skipped;
    dp__a64 inline_ops;         /* run by the naive fast path (no seq number) */
    dp__a64 queue_bytes;        /* held by the variables' queues (rings) */
    char pad_contention_[56];
    dp__a64 var_lock_contended; /* a variable's lock found held (dp_engine_stats) */
    dp__a64 op_ref_cas_retries; /* failed CAS pinning a pre-created op */
    dp__a64 pusher_ran;         /* ops run by pushing threads (desc.push_runs_ops) */
    dp__a64 caller_ran;         /* ops run by dp_run_ready and waits */
    dp__a64 caller_stole, helper_woken;
    char pad_contention_end_[64];
    dp__a32 help_asleep;        /* helping waits asleep (under wait_mtx; read
                                   without it by dp__pool_nudge): own line */
    char pad_help_[60];
    unsigned help_epoch;        /* help_asleep's wake-ups so far (under wait_mtx) */
    dp__a32 nhelpers;           /* waits that run ops of pools without workers */
    int inline_ok;              /* naive, no trace callback, no graph: see dp__run_inline */
    int chain;                  /* the variables keep chains, not locked queues (>>chain) */
    int wait_help;              /* the waits may run ops of busy pools (dp__waits_help):
                                   desc.no_wait_help, and the CPU count at create */
    dp__mutex wait_mtx; dp__cond wait_cv;
    dp__mutex create_mtx;       /* lazy pools and streams */
    dp__mutex fail_mtx;
    dp__failure *unreported_head, *unreported_tail;
    dp__failure unrecorded[2];  /* stand for failures that found no memory, by epoch parity */
    dp__a32 clear_epoch;
    dp__aptr cpu_groups[DP__MAX_DEV], gpu_groups[DP__MAX_DEV], copy_groups[DP__MAX_DEV];
    dp__group *prio_group, *task_group;
    dp__aptr io_group;          /* pooled: copies and IO; per-device: IO, made on first use */
    void *shared_stream[DP__MAX_DEV]; int shared_stream_ok[DP__MAX_DEV];
    dp__mutex shared_stream_mtx[DP__MAX_DEV];
    int gpu_count;
    dp__a32 worker_counter;
    dp__a32 profiling;
    dp__prof_buf inline_prof;
    dp__mutex graph_mtx;
    dp__graph_rec *graph; size_t ngraph, capgraph;
    dp__mutex ext_mtx;          /* making extension states: see >>extensions */
    dp__a32 next_ext;           /* ext[0, next_ext) are made (release-published) */
    int ext_closed;             /* destroy has begun tearing them down (under ext_mtx) */
    struct { const dp_extension *key; void *state; } ext[DP_MAX_EXTENSIONS];
    struct dp_engine *next_live; /* the live engines' list, and destroy's claim on */
    int destroying;              /* this one: both under dp__engines_lock (>>engine) */
};

/* An entry of a variable's queue: the waiting block's address, with the low
   bit set when the block writes the variable (blocks are 8-byte aligned). The
   queue walks of the algorithm then never touch the waiting blocks. */
typedef uintptr_t dp__entry;

enum { DP__KIND_SYNC, DP__KIND_ASYNC, DP__KIND_WAIT, DP__KIND_DELETE };
enum { DP__ST_PENDING, DP__ST_RUNNING, DP__ST_DONE };

/* A thread in dp_wait_var[_for] and the wait block it pushed. Under the
   engine's wait_mtx: done (the block has reported), claimed (the block is
   reporting: the waiter must stay for it). abandoned: a timed wait gave up
   (set under wait_mtx): the block leaves the variable's failure for a later
   wait and frees this, unless a later timed wait on the variable takes it
   over first (dp__adopt_wait: back to 0, under the variable's lock, while
   the block still waits in the queue, so before the block looks; on a
   chain engine under wait_mtx, before the block looks: dp__chain_adopt_wait).
   Once the
   block has looked under wait_mtx it no longer changes, so its completion
   reads it without the lock. Only a timed wait (a heap waiter) ever sets
   it. */
typedef struct dp__waiter {
    int done, claimed;
    dp__a32 abandoned;
    dp_result result;
    dp_failure failure;
} dp__waiter;

typedef struct dp__opobj {
    dp__a32 gen;
    uint32_t index;
    dp_push_desc d;
    uint32_t nread, nwrite;
    struct dp__var **vars;
    uint32_t *var_ids;
    /* refs apart from what the workers read (vars, d): a pusher's pin would
       otherwise take the line from the worker reading them on every push */
    char pad_refs_[64];
    dp__a32 refs;              /* 1 for the handle + 1 per pushed run not yet
                                  released (a worker releases in batches:
                                  dp__worker_unref_op) */
} dp__opobj;

/* OprBlock: one pushed operation. Followed in memory, for one-shot pushes,
   by its variable pointers (reads first). */
typedef struct dp__block {
    dp__a64 state;             /* (push seq << 2) | DP__ST_*: one word, so a stale
                                  completion token can never match a reused block */
    dp_ctx ctx;
    dp_engine *eng;
    dp__opobj *op;             /* the pre-created op whose variables it uses, or NULL */
    union { dp_sync_fn fn; dp_async_fn afn; };   /* afn for DP__KIND_ASYNC */
    void *arg;                 /* the function's argument; a wait block's dp__waiter */
    const char *name;
    dp__aptr next;             /* the one list it is on at a time: a ready list,
                                  its FIFO queue, a pool's free list, the naive list */
    dp__worker *worker;        /* the worker that runs it; NULL on a pushing thread */
    union {
        uint64_t t_start;      /* profiler: when it started; 0 when not profiling */
        struct dp__block *prev_wait;   /* a wait block on a chain engine: the wait
                                  block pushed on its variable before it (>>chain) */
    };
    uint8_t kind, prop, cls, stripe;  /* stripe, cls: the pool it returns to */
    uint16_t nread, nwrite;    /* a push has at most DP_PUSH_MAX_VARS of each */
    int32_t priority;
    uint32_t result_epoch;     /* chain engines: the epoch of the failure it left
                                  (read only when there is one) */
    /* last, next to the first element (below): what a grant reads and
       writes, what a pusher touches in a block it links after, and a read
       run's state (>>chain) */
    dp__aptr failure;          /* dp__failure *: see dp__block_failure */
    dp__a32 refs;              /* chain engines: 1 until completed + 1 per variable
                                  whose last element it is (>>chain) */
    dp__a32 wait;              /* unmet dependencies, +1 while being pushed */
} dp__block;
/* After the header: one element per variable of the class (dp__elem,
   >>chain), then one slot per variable (a pointer to the variable, or the
   cleanup function). A grant from a variable's chain reads the element and
   decrements wait: blocks are 32-byte aligned, so wait and the first
   element share a cache line. The memory budget: an op with two variables
   takes 112 + 2 x 16 + 2 x 8 = 160 bytes, and nothing in the variables'
   queues. */
typedef struct dp__elem {
    dp__aptr word;             /* a write: what follows it in the variable's chain
                                  (0 until a push links it) or DP__CLOSED.
                                  A read: the next older reader on its run's list
                                  while it waits, its run once granted */
    union {
        struct dp__block *owner;   /* the op */
        struct dp__elem *run_succ; /* a read run's element: the write after the
                                      run, or NULL (>>chain) */
        dp__a32 run_count;         /* a hosted run's element: its count (>>chain) */
    };
} dp__elem;

/* b->prop holds the property, DP__CLEANUP_BIT when the op has a cleanup
   function (stored after its variables, see dp__block_cleanup), and
   DP__NO_SKIP_BIT when the op runs on failed
   input (DP_PROP_NO_SKIP, or dp_push_desc.no_skip with another property). */
#define DP__NO_SKIP_BIT 0x80u
#define DP__CLEANUP_BIT 0x40u
static dp_prop dp__prop(const dp__block *b) { return (dp_prop)(b->prop & ~(DP__NO_SKIP_BIT | DP__CLEANUP_BIT)); }
static int dp__no_skip(const dp__block *b) { return (b->prop & DP__NO_SKIP_BIT) != 0; }
static dp__block *dp__next(dp__block *b) { return (dp__block *)dp__load(&b->next, DP__RELAXED); }
static void dp__set_next(dp__block *b, dp__block *n) { dp__store(&b->next, (void *)n, DP__RELAXED); }
static uint64_t dp__block_seq(dp__block *b) { return (uint64_t)dp__load(&b->state, DP__RELAXED) >> 2; }
static void dp__block_set_state(dp__block *b, int st, int mo) {
    dp__store(&b->state, (dp__block_seq(b) << 2) | (uint64_t)st, mo);
}

/* A variable (ThreadedVar). In the locked form of the rule (>>rule; the
   chain form, >>chain, uses only lock, nreaders, last and waits) its
   queue is a ring: the entries from head to
   tail (free-running counters, so tail - head is the length) in
   queue[i & mask]. A completion reads the entries it grants from one or two
   cache lines of the ring, where a linked list would take a cache miss on
   every waiting block. The ring grows by doubling under the lock, and is
   kept when the variable is deleted, for the next variable in its slot. */
typedef struct dp__var {
    dp__a32 gen;               /* handle generation; 0 = retired slot */
    dp__spinlock lock;
    int32_t nreaders;          /* granted reads running, or DP__WRITING; in the
                                  chain form, the readers the pushes gave the
                                  open run */
    uint32_t handle_id;        /* the handle's low 32 bits (no salt); its low bits are the slot */
    union {                    /* an engine uses one form: each pair shares its bytes */
        dp__entry *queue;      /* ops waiting for this variable; NULL until needed */
        uintptr_t last;        /* chain form: the last element (DP__RUN_BIT: a run), 0: none yet */
    };
    union {
        dp__failure *failure;  /* set by a failed writer; see dp__var_failure */
        struct dp__block *waits;   /* chain form: the wait blocks pushed since the
                                      last op, newest first */
    };
    uint32_t head, tail;
    uint32_t mask;             /* ring capacity - 1 (0 without a ring) */
    uint32_t failure_epoch;    /* the epoch of failure, when it was attached */
} dp__var;

static DP__THREAD_LOCAL dp_engine *dp__tls_running;   /* engine whose op runs here */
static DP__THREAD_LOCAL const dp_engine *dp__tls_ext_engine;   /* whose ext_mtx this thread holds (>>extensions) */
static DP__THREAD_LOCAL const dp_extension *dp__tls_ext_making[DP_MAX_EXTENSIONS];
static DP__THREAD_LOCAL int dp__tls_ext_depth;
static DP__THREAD_LOCAL dp_engine *dp__tls_cleaning;  /* engine whose cleanup runs here */
static DP__THREAD_LOCAL dp__worker *dp__tls_worker;
static DP__THREAD_LOCAL dp__block *dp__tls_naive_head, *dp__tls_naive_tail;
static DP__THREAD_LOCAL int dp__tls_naive_draining;
/* The waiter of the wait block this thread is pushing or waiting for
   (dp__wait_var). A thread that drains a naive engine's ready list and,
   from an op or a cleanup there, waits on another engine's variable would
   find that wait block queued behind the op it is running, and block for
   ever; so the block runs at once (it runs no user code). Granted at its
   push, or later by an op the wait itself runs (dp__wait_help). */
static DP__THREAD_LOCAL void *dp__tls_own_wait;
static DP__THREAD_LOCAL unsigned dp__tls_pushes_waiting;   /* see dp__pace_pusher */

static const char *dp__item_msgs[] = {
#define DP__ITEM_MSG(name, msg) msg,
    DP__LOG_ITEMS(DP__ITEM_MSG)
#undef DP__ITEM_MSG
};
/* The texts of the extension items (dp_log_add_items), written while
   setting up. */
static const char *dp__ext_item_msgs[DP_LOGITEM_LAST - DP_LOGITEM_EXTENSION + 1];
static const char *dp__item_text(uint32_t item) {
    const char *t = NULL;
    if (item < DP__LOGITEM_COUNT) t = dp__item_msgs[item];
    else if (item >= DP_LOGITEM_EXTENSION && item <= DP_LOGITEM_LAST) t = dp__ext_item_msgs[item - DP_LOGITEM_EXTENSION];
    return t ? t : "";
}

DP__COLD DP_IMPL void dp_log_stderr(const char *tag, uint32_t level, uint32_t item,
                           const char *message, uint32_t line, const char *file, void *user) {
    static const char *levels[] = {"panic", "error", "warning", "info"};
    (void)user;
    fprintf(stderr, "[%s][%s][id:%u] %s:%u: %s\n", tag, levels[level < 4 ? level : 3], item,
            file ? file : "?", line, message ? message : dp__item_text(item));
}

/* The calling thread's last error (see dp_last_error): fixed buffers, so
   recording one costs a copy and never an allocation. */
static DP__THREAD_LOCAL char dp__tls_last_error[DP_LAST_ERROR_MAX];
static DP__THREAD_LOCAL dp_log_item dp__tls_last_error_item;   /* 0: DP_LOGITEM_OK */
DP_IMPL const char *dp_last_error(void) { return dp__tls_last_error; }
DP_IMPL dp_log_item dp_last_error_item(void) { return dp__tls_last_error_item; }
DP_IMPL void dp_clear_last_error(void) {
    dp__tls_last_error[0] = '\0';
    dp__tls_last_error_item = DP_LOGITEM_OK;
}

/* The logger for messages without an engine (dp_set_default_logger); func
   NULL: errors to stderr. Written while setting up, read by any thread. */
static dp_logger dp__default_logger;
DP_IMPL void dp_set_default_logger(const dp_logger *logger) {
    if (logger) dp__default_logger = *logger;
    else memset(&dp__default_logger, 0, sizeof dp__default_logger);
}
/* One message, "<item text>: <fmt...>": kept as the thread's last error
   when it is one, then handed to the engine's logger, else the default one. */
DP__COLD static void dp__vlog(const dp_engine *eng, uint32_t level, dp_log_item item, const char *file, uint32_t line,
                              const char *fmt, va_list ap) {
    char buf[DP_LAST_ERROR_MAX];
    int n = snprintf(buf, sizeof buf, "%s: ", dp__item_text((uint32_t)item));
    if (fmt && n > 0 && (size_t)n < sizeof buf) vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    if (level <= DP_LOG_ERROR) {
        memcpy(dp__tls_last_error, buf, sizeof buf);
        dp__tls_last_error_item = item;
    }
    if (eng && eng->desc.logger.func) eng->desc.logger.func("depeng", level, (uint32_t)item, buf, line, file, eng->desc.logger.user);
    else if (dp__default_logger.func) dp__default_logger.func("depeng", level, (uint32_t)item, buf, line, file, dp__default_logger.user);
    else if (level <= DP_LOG_ERROR) dp_log_stderr("depeng", level, (uint32_t)item, buf, line, file, NULL);
}
#define DP__LOG(eng, level, item, ...) dp__log(eng, level, DP_LOGITEM_##item, __LINE__, __VA_ARGS__)
DP__COLD static void dp__log(const dp_engine *eng, uint32_t level, dp_log_item item, uint32_t line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dp__vlog(eng, level, item, __FILE__, line, fmt, ap);
    va_end(ap);
}

/* Logs a NULL engine or stream passed to a call that writes to a FILE *. */
DP__COLD static dp_result dp__null_stream(const dp_engine *eng, const char *what) {
    DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "%s: NULL %s", what, eng ? "stream" : "engine");
    return DP_ERROR_INVALID_ARGS;
}
/* Logs a NULL engine (or another NULL pointer argument, `what`), to the
   default logger when there is no engine. */
DP__COLD static dp_result dp__null_arg(const dp_engine *eng, const char *call, const char *what) {
    DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "%s: NULL %s", call, what);
    return DP_ERROR_INVALID_ARGS;
}
/* A stream that reported a write error: DP_ERROR_IO, logged. */
DP__COLD static dp_result dp__stream_result(const dp_engine *eng, FILE *out, const char *what) {
    if (!ferror(out)) return DP_OK;
    DP__LOG(eng, DP_LOG_ERROR, IO, "%s: the stream reported a write error", what);
    return DP_ERROR_IO;
}
/* Every allocation of the engine and the layers on it: the engine's
   allocator (desc.allocator), else malloc. Out of line: one copy serves the
   engine's many call sites and dp_engine_alloc. */
DP_IMPL void *dp_engine_alloc(const dp_engine *eng, size_t size) {
    if (eng && eng->desc.allocator.alloc) return eng->desc.allocator.alloc(size, 64, eng->desc.allocator.user);
    return malloc(size);
}
DP_IMPL void dp_engine_free(const dp_engine *eng, void *p, size_t size) {
    if (!p) return;
    if (eng && eng->desc.allocator.free) eng->desc.allocator.free(p, size, eng->desc.allocator.user);
    else free(p);
}
#define dp__alloc(eng, size) dp_engine_alloc(eng, size)
#define dp__free(eng, p, size) dp_engine_free(eng, p, size)
static void *dp__realloc(const dp_engine *eng, void *p, size_t old_size, size_t new_size) {
    void *q = dp__alloc(eng, new_size);
    if (!q) return NULL;
    if (p) { memcpy(q, p, old_size < new_size ? old_size : new_size); dp__free(eng, p, old_size); }
    return q;
}

DP__COLD DP_IMPL dp_result dp_log_add_items(int first, int count, const char *const *texts) {
    int i, taken = -1;
    int ok = texts && count >= 0 && first >= DP_LOGITEM_EXTENSION && first <= DP_LOGITEM_LAST + 1 - count;
    for (i = 0; ok && i < count && taken < 0; i++) {      /* a text may be given again, not replaced */
        const char *had = dp__ext_item_msgs[first - DP_LOGITEM_EXTENSION + i];
        if (had && (!texts[i] || strcmp(had, texts[i]) != 0)) taken = first + i;
    }
    if (!ok || taken >= 0) {
        DP__LOG(NULL, DP_LOG_ERROR, BAD_DESC, "dp_log_add_items: items %d..%d (extension items are %d..%d), NULL texts, or item %d "
                "has another text", first, first + count - 1, (int)DP_LOGITEM_EXTENSION, (int)DP_LOGITEM_LAST, taken);
        return DP_ERROR_INVALID_ARGS;
    }
    for (i = 0; i < count; i++) dp__ext_item_msgs[first - DP_LOGITEM_EXTENSION + i] = texts[i];
    return DP_OK;
}
DP__COLD DP_IMPL void dp_log(const dp_engine *eng, uint32_t level, dp_log_item item, const char *file, uint32_t line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dp__vlog(eng, level, item, file ? file : "?", line, fmt, ap);
    va_end(ap);
}
DP_IMPL void dp_thread_yield(void) { dp__thread_yield(); }
DP_IMPL int dp_engine_gpu_count(const dp_engine *eng) { return eng ? eng->gpu_count : 0; }
/* 64-byte aligned memory (array storage): the allocator's, else the
   platform's aligned allocation. */
DP__PRIVATE void *dp__alloc_aligned(const dp_engine *eng, size_t size) {
    if (eng->desc.allocator.alloc) return eng->desc.allocator.alloc(size, 64, eng->desc.allocator.user);
    return dp__aligned_alloc(64, size);
}
DP__PRIVATE void dp__free_aligned(const dp_engine *eng, void *p, size_t size) {
    if (eng->desc.allocator.free) eng->desc.allocator.free(p, size, eng->desc.allocator.user);
    else dp__aligned_free(p);
}

/* Makes room for one more element in a growable array (doubling, first
   capacity `first`). Returns 0 when there is room, -1 if out of memory (the
   array is left as it was). */
static int dp__reserve(const dp_engine *eng, void *arrp, size_t *cap, size_t n, size_t elem, size_t first) {
    size_t ncap;
    void *old, *grown;
    if (n < *cap) return 0;
    /* arrp points at a T* of any T: move the pointer by its bytes, which
       stays clear of strict-aliasing rules */
    memcpy(&old, arrp, sizeof old);
    ncap = *cap ? *cap : first;
    while (ncap <= n) {                       /* room for index n, however far it is */
        if (ncap > SIZE_MAX / 2 / elem) return -1;
        ncap *= 2;
    }
    grown = dp__realloc(eng, old, *cap * elem, ncap * elem);
    if (!grown) return -1;
    memcpy(arrp, &grown, sizeof grown);
    *cap = ncap;
    return 0;
}

/* >>handles ------------------------------------------------------------ */
/* The generation part of a handle id, and whether the id is of t's kind. */
static uint32_t dp__id_gen(uint32_t id) { return (id >> DP__IDX_BITS) & DP__GEN_MAX; }
static int dp__id_kind_ok(const dp__table *t, uint32_t id) { return (id & DP__KIND_OP) == t->kind; }
static void dp__table_init(dp__table *t, size_t obj_size, uint32_t kind) {
    memset(t, 0, sizeof *t);
    t->obj_size = obj_size;
    t->kind = kind;
    dp__store(&t->next_index, 1, DP__RELAXED);     /* slot 0 is never used */
}
static void *dp__table_slot(dp__table *t, uint32_t idx) {
    char *chunk = (char *)dp__load(&t->chunks[idx >> DP__CHUNK_BITS], DP__ACQUIRE);
    return chunk ? chunk + (size_t)(idx & (DP__CHUNK_SLOTS - 1)) * t->obj_size : NULL;
}
/* Takes a free slot; returns the object (its gen field is the handle's gen). */
static void *dp__table_alloc(dp_engine *eng, dp__table *t, uint32_t *out_idx) {
    uint32_t idx;
    void *obj;
    dp__spin_lock(&t->lock);
    if (t->nfree) idx = t->free_idx[--t->nfree];
    else {
        idx = (uint32_t)dp__load(&t->next_index, DP__RELAXED);
        if (idx > DP__IDX_MASK) { dp__spin_unlock(&t->lock); return NULL; }
        if (!dp__table_slot(t, idx)) {
            size_t bytes = t->obj_size * DP__CHUNK_SLOTS;
            void *chunk = dp__alloc(eng, bytes);
            if (!chunk) { dp__spin_unlock(&t->lock); return NULL; }
            memset(chunk, 0, bytes);
            dp__store(&t->chunks[idx >> DP__CHUNK_BITS], chunk, DP__RELEASE);
        }
        dp__store(&t->next_index, (int32_t)idx + 1, DP__RELEASE);
        obj = dp__table_slot(t, idx);
        dp__store((dp__a32 *)obj, 1, DP__RELAXED);  /* first generation */
    }
    dp__spin_unlock(&t->lock);
    dp__fetch_add(&t->live, 1, DP__RELAXED);
    *out_idx = idx;
    return dp__table_slot(t, idx);
}
/* Invalidates every handle to the slot: bumps its generation (0 = retired). */
static void dp__table_invalidate(void *obj) {
    dp__a32 *gen = (dp__a32 *)obj;
    uint32_t g = (uint32_t)dp__load(gen, DP__RELAXED);
    dp__store(gen, (int32_t)(g >= DP__GEN_MAX ? 0 : g + 1), DP__RELEASE);
}
/* Returns an invalidated slot to the free stack (retired slots stay out). */
static void dp__table_release(dp_engine *eng, dp__table *t, uint32_t idx, void *obj) {
    dp__fetch_add(&t->live, (uint64_t)-1, DP__RELAXED);
    if (dp__load((dp__a32 *)obj, DP__RELAXED) == 0) return;
    dp__spin_lock(&t->lock);
    if (t->nfree == t->cap_free) {
        uint32_t cap = t->cap_free ? t->cap_free * 2 : 1024;
        uint32_t *n = (uint32_t *)dp__realloc(eng, t->free_idx, t->cap_free * sizeof(uint32_t), cap * sizeof(uint32_t));
        if (!n) { dp__spin_unlock(&t->lock); return; }  /* slot leaks; memory is freed at destroy */
        t->free_idx = n; t->cap_free = cap;
    }
    t->free_idx[t->nfree++] = idx;
    dp__spin_unlock(&t->lock);
}
/* Lookups take the whole handle: one of another engine (its high 32 bits
   are not this engine's salt) names nothing here. */
static void *dp__table_lookup(dp__table *t, uint64_t handle) {
    uint32_t id = (uint32_t)handle, idx = id & DP__IDX_MASK, gen = dp__id_gen(id);
    void *obj;
    if ((uint32_t)(handle >> 32) != t->salt || idx == 0 || gen == 0 || !dp__id_kind_ok(t, id)
        || idx >= (uint32_t)dp__load(&t->next_index, DP__ACQUIRE)) return NULL;
    obj = dp__table_slot(t, idx);
    if (!obj || (uint32_t)dp__load((dp__a32 *)obj, DP__ACQUIRE) != gen) return NULL;
    return obj;
}
/* The slot an id names, without reading the slot: the push path checks the
   generation under the variable's lock, so each variable's cache line is
   touched once per push. NULL if the index was never handed out. */
static void *dp__table_locate(dp__table *t, uint64_t handle) {
    uint32_t id = (uint32_t)handle, idx = id & DP__IDX_MASK;
    if ((uint32_t)(handle >> 32) != t->salt || idx == 0 || dp__id_gen(id) == 0 || !dp__id_kind_ok(t, id)
        || idx >= (uint32_t)dp__load(&t->next_index, DP__ACQUIRE)) return NULL;
    return dp__table_slot(t, idx);
}
/* A handle from its low 32 bits (the engine keeps only those: the salt is
   the same for all of its handles). */
static uint64_t dp__table_handle(const dp__table *t, uint32_t id) { return (uint64_t)t->salt << 32 | id; }
static uint64_t dp__table_id(const dp__table *t, void *obj, uint32_t idx) {
    return dp__table_handle(t, t->kind | ((uint32_t)dp__load((dp__a32 *)obj, DP__RELAXED) << DP__IDX_BITS) | idx);
}
/* Logs a handle this engine does not know: another engine's (naming both),
   or a stale or made-up one of its own (`what` and the low 32 bits). */
DP__COLD static void dp__log_bad_handle(const dp_engine *eng, const dp__table *t, dp_log_item item, const char *what, uint64_t handle) {
    uint32_t salt = (uint32_t)(handle >> 32);
    if (salt != t->salt && handle != 0)
        dp__log(eng, DP_LOG_ERROR, item, __LINE__, "%s 0x%08x: handle of engine #%u given to engine #%u", what, (unsigned)(uint32_t)handle, (unsigned)salt, (unsigned)t->salt);
    else dp__log(eng, DP_LOG_ERROR, item, __LINE__, "%s 0x%08x", what, (unsigned)(uint32_t)handle);
}
DP__COLD static void dp__table_free_all(dp_engine *eng, dp__table *t) {
    uint32_t c;
    for (c = 0; c < DP__MAX_CHUNKS; c++) {
        void *chunk = dp__load(&t->chunks[c], DP__RELAXED);
        if (chunk) dp__free(eng, chunk, t->obj_size * DP__CHUNK_SLOTS);
    }
    dp__free(eng, t->free_idx, t->cap_free * sizeof(uint32_t));
}

/* >>pool --------------------------------------------------------------- */
/* An op's variables, reads first: its pre-created op's, or its own. */
static uint32_t dp__class_cap(int cls);
static dp__var **dp__block_vars(dp__block *b) {
    return b->op ? b->op->vars : (dp__var **)(void *)((char *)(b + 1) + dp__class_cap(b->cls) * sizeof(dp__elem));
}
static uint32_t dp__class_cap(int cls) { return 1u << cls; }
/* Block k of a pool chunk: after the chunk's link, 32-byte aligned. */
#define DP__CHUNK_HEAD 96u
static dp__block *dp__pool_block(const dp__pool *p, char *chunk, size_t k) {
    uintptr_t first = ((uintptr_t)chunk + 64u + 31u) & ~(uintptr_t)31u;
    return (dp__block *)(void *)((char *)chunk + (first - (uintptr_t)chunk) + k * p->obj_size);
}
/* An op's cleanup function sits in the slot after its variables, so that
   only ops that have one pay for it. (A copy of the function pointer's
   bytes: C does not convert function pointers to object pointers.) */
static void dp__block_set_cleanup(dp__block *b, uint32_t nvars, dp_cleanup_fn fn) {
    b->prop |= DP__CLEANUP_BIT;
    memcpy((void *)(dp__block_vars(b) + nvars), &fn, sizeof fn);
}
/* Every cleanup runs through here, so that a wait it makes on its engine is
   refused (dp__check_not_in_op) instead of waiting for the op being
   cleaned up, which is not counted done until its cleanup returns. The
   previous value is restored: a cleanup may push to a naive engine whose
   ops run (and clean up) inside the push. */
static void dp__run_cleanup(dp_engine *eng, dp_cleanup_fn fn, void *arg) {
    dp_engine *prev = dp__tls_cleaning;
    dp__tls_cleaning = eng;
    fn(arg);
    dp__tls_cleaning = prev;
}
static void dp__block_cleanup(dp__block *b) {
    dp_cleanup_fn fn;
    if (!(b->prop & DP__CLEANUP_BIT)) return;
    memcpy(&fn, (const void *)(dp__block_vars(b) + b->nread + b->nwrite), sizeof fn);
    dp__run_cleanup(b->eng, fn, b->arg);
}
static int dp__class_for(uint32_t n) { int c = 0; while (dp__class_cap(c) < n) c++; return c; }

static void dp__pool_init(dp__pool *p, int cls) {
    memset(p, 0, sizeof *p);
    p->obj_size = sizeof(dp__block) + dp__class_cap(cls) * (sizeof(dp__var *) + sizeof(dp__elem));
    p->obj_size = (p->obj_size + 31u) & ~(size_t)31u;   /* see dp__block: 32-byte aligned, not 64 (the memory budget) */
    p->per_chunk = cls < 4 ? 256 : 16;     /* small blocks are the common case */
}
static unsigned dp__my_stripe(void) {
    /* every thread has its own address for a thread-local variable */
    uint64_t h = (uint64_t)(uintptr_t)&dp__tls_naive_draining * 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> 61) % DP__POOL_STRIPES;
}
static dp__block *dp__pool_get(dp_engine *eng, int cls) {
    unsigned stripe = dp__my_stripe();
    dp__pool *p = &eng->pools[stripe][cls];
    dp__block *b;
    dp__spin_lock(&p->lock);
    if (!p->free) p->free = (dp__block *)dp__exchange(&p->returned, NULL, DP__ACQUIRE);
    if (!p->free) {
        size_t count = p->per_chunk, i;
        size_t bytes = DP__CHUNK_HEAD + count * p->obj_size;
        char *chunk = (char *)dp__alloc(eng, bytes);
        if (!chunk) { dp__spin_unlock(&p->lock); return NULL; }
        *(void **)(void *)chunk = p->chunks;
        p->chunks = chunk;
        dp__fetch_add(&p->bytes, bytes, DP__RELAXED);
        for (i = 0; i < count; i++) {
            dp__block *nb = dp__pool_block(p, chunk, i);
            dp__store(&nb->state, (uint64_t)DP__ST_DONE, DP__RELAXED);   /* dp__report_running reads it */
            dp__set_next(nb, p->free);
            p->free = nb;
        }
    }
    b = p->free;
    p->free = dp__next(b);
    if (p->free) dp__prefetch(p->free);
    dp__spin_unlock(&p->lock);
    b->stripe = (uint8_t)stripe;
    return b;
}
/* Returns the chain first..last (linked by next) to pool p, from any thread. */
static void dp__pool_put_chain(dp__pool *p, dp__block *first, dp__block *last) {
    void *head = dp__load(&p->returned, DP__RELAXED);
    dp__set_next(last, (dp__block *)head);
    while (!dp__cas(&p->returned, &head, (void *)first, DP__RELEASE)) {
        dp__fetch_add(&p->cas_retries, 1, DP__RELAXED);
        dp__set_next(last, (dp__block *)head);
    }
}
static dp__pool *dp__pool_of(dp_engine *eng, const dp__block *b) { return &eng->pools[b->stripe][b->cls]; }
static void dp__pool_put(dp_engine *eng, dp__block *b) { dp__pool_put_chain(dp__pool_of(eng, b), b, b); }
DP__COLD static void dp__pool_free_all(dp_engine *eng, dp__pool *p) {
    void *c = p->chunks;
    while (c) {
        void *next = *(void **)c;
        dp__free(eng, c, DP__CHUNK_HEAD + p->per_chunk * p->obj_size);
        c = next;
    }
}

/* >>failures ------------------------------------------------------------ */
/* A failure is reference counted: the op that failed, every op and variable
   it reached, and the engine's list of failures nobody has waited for yet. */
static void dp__failure_release(dp_engine *eng, dp__failure *f) {
    if (f && !f->unrecorded && dp__fetch_add(&f->refs, -1, DP__ACQ_REL) == 1) dp__free(eng, f, sizeof *f);
}
static void dp__failure_link_unreported(dp_engine *eng, dp__failure *f) {   /* fail_mtx held */
    f->unreported = 1;
    f->next_unreported = NULL;
    if (eng->unreported_tail) eng->unreported_tail->next_unreported = f; else eng->unreported_head = f;
    eng->unreported_tail = f;
}
/* The records every engine keeps for failures that find no memory for one
   of their own: recording a failure must never need memory, or an op's
   out-of-memory would let its dependants run on data it never wrote.
   - Their text is fixed (another thread may be copying it); the op's name,
     status and message go to the log.
   - Every such failure of one epoch (the time between two dp_wait_all
     clears) shares a record, which stays on the unreported list until
     dp_wait_all clears it: a dp_wait_var that reports one of them does not
     take it off, so dp_wait_all reports it again rather than miss another.
   - A record takes the epoch of its latest use, and there is one per epoch
     parity: an op holding a record it was granted before a clear is done
     before the next clear (dp_wait_all waits for every pushed op), so the
     record cannot be reused in another epoch of its parity under it, and a
     variable it reaches keeps the epoch it was granted in. */
DP__COLD static void dp__failure_unrecorded_init(dp_engine *eng) {
    int i;
    for (i = 0; i < 2; i++) {
        dp__failure *f = &eng->unrecorded[i];
        f->unrecorded = 1;
        f->info.status = DP_ERROR_OUT_OF_MEMORY;
        snprintf(f->info.op_name, sizeof f->info.op_name, "(unrecorded)");
        snprintf(f->info.message, sizeof f->info.message,
                 "an operation failed and there was no memory to record its failure (the log names it)");
    }
}
DP__COLD static dp__failure *dp__failure_unrecorded(dp_engine *eng, const char *op_name, int status, const char *message) {
    dp__failure *f;
    uint32_t epoch;
    DP__LOG(eng, DP_LOG_ERROR, OP_FAILED, "'%s' failed with status %d: %s; no memory to record the failure, "
            "so its writes carry the engine's out-of-memory failure", op_name ? op_name : "(unnamed)", status,
            message ? message : "(no message)");
    dp__mutex_lock(&eng->fail_mtx);
    epoch = (uint32_t)dp__load(&eng->clear_epoch, DP__RELAXED);   /* bumped under fail_mtx */
    f = &eng->unrecorded[epoch & 1u];
    dp__store(&f->epoch, (int32_t)epoch, DP__RELAXED);
    if (!f->unreported) dp__failure_link_unreported(eng, f);
    dp__mutex_unlock(&eng->fail_mtx);
    dp__fetch_add(&eng->failed, 1, DP__RELAXED);
    return f;
}
/* Records a failure; never NULL (see dp__failure_unrecorded). */
DP__COLD static dp__failure *dp__failure_new(dp_engine *eng, const char *op_name, int status, const char *message) {
    dp__failure *f = (dp__failure *)dp__alloc(eng, sizeof *f);
    if (!f) return dp__failure_unrecorded(eng, op_name, status, message);
    memset(f, 0, sizeof *f);
    dp__store(&f->refs, 2, DP__RELAXED);          /* the block's and the unreported list's */
    f->info.status = status;
    snprintf(f->info.op_name, sizeof f->info.op_name, "%s", op_name ? op_name : "(unnamed)");
    if (message) snprintf(f->info.message, sizeof f->info.message, "%s", message);
    else snprintf(f->info.message, sizeof f->info.message, "operation returned status %d", status);
    dp__mutex_lock(&eng->fail_mtx);
    dp__store(&f->epoch, dp__load(&eng->clear_epoch, DP__RELAXED), DP__RELAXED);   /* bumped under fail_mtx */
    dp__failure_link_unreported(eng, f);
    dp__mutex_unlock(&eng->fail_mtx);
    dp__fetch_add(&eng->failed, 1, DP__RELAXED);
    DP__LOG(eng, DP_LOG_WARN, OP_FAILED, "'%s' failed with status %d: %s", f->info.op_name, status, f->info.message);
    return f;
}
/* Marks f reported: removes it from the engine's unreported list (not a
   shared out-of-memory record: see dp__failure_unrecorded). */
static void dp__failure_mark_reported(dp_engine *eng, dp__failure *f) {
    dp__failure **pp, *prev = NULL;
    int unlinked = 0;
    if (f->unrecorded) return;
    dp__mutex_lock(&eng->fail_mtx);
    for (pp = &eng->unreported_head; *pp; prev = *pp, pp = &(*pp)->next_unreported) {
        if (*pp == f) {
            *pp = f->next_unreported;
            if (eng->unreported_tail == f) eng->unreported_tail = prev;
            f->unreported = 0;
            unlinked = 1;
            break;
        }
    }
    dp__mutex_unlock(&eng->fail_mtx);
    if (unlinked) dp__failure_release(eng, f);   /* the list's reference, once */
}
/* A variable's failure is read and written only under its lock, in the same
   critical sections that grant and complete: a push or a completion then
   touches the variable's cache line once, and a running op never does.
   The failure it carries, unless dp_wait_all has cleared it since: */
static dp__failure *dp__var_failure(dp_engine *eng, dp__var *v) {   /* v locked */
    if (v->failure && v->failure_epoch == (uint32_t)dp__load(&eng->clear_epoch, DP__ACQUIRE)) return v->failure;
    return NULL;
}
/* Replaces the failure v carries (v locked). Returns the old one, which the
   caller releases after unlocking. */
static dp__failure *dp__var_swap_failure(dp_engine *eng, dp__var *v, dp__failure *f) {
    dp__failure *old = v->failure;
    (void)eng;
    if (f) dp__fetch_add(&f->refs, 1, DP__RELAXED);
    v->failure = f;
    v->failure_epoch = f ? (uint32_t)dp__load(&f->epoch, DP__RELAXED) : 0;
    return old;
}
/* The failure an op holds: an input's, passed on by a grant, or its own. */
static dp__failure *dp__block_failure(dp__block *b) { return (dp__failure *)dp__load(&b->failure, DP__ACQUIRE); }
/* A grant hands the op the failure its variable carries (v locked, so f is
   alive): the op will be skipped and pass f on to what it writes. Deletes
   run regardless and take none (a NO_SKIP op takes it, to be told, see
   dp__execute). Grants of one op may come from several threads at once; the
   first failure wins. */
static void dp__grant_failure(dp_engine *eng, dp__block *b, dp__failure *f) {
    void *expect = NULL;
    if (b->kind == DP__KIND_DELETE) return;
    dp__fetch_add(&f->refs, 1, DP__RELAXED);
    if (!dp__cas(&b->failure, &expect, (void *)f, DP__ACQ_REL)) dp__failure_release(eng, f);
}

/* >>trace -------------------------------------------------------------- */
static int dp__tracing(const dp_engine *eng) { return eng->desc.trace.func != NULL; }
static dp__block *dp__entry_block(dp__entry e) { return (dp__block *)(e & ~(dp__entry)1u); }
static int dp__entry_is_write(dp__entry e) { return (int)(e & 1u); }
static int dp__var_waiting(const dp__var *v) { return v->head != v->tail; }
static dp__entry dp__var_entry(const dp__var *v, uint32_t i) { return v->queue[i & v->mask]; }
DP__COLD static void dp__trace_var(dp_engine *eng, dp__var *v) {   /* v locked */
    dp_trace_event ev;
    uint32_t i;
    memset(&ev, 0, sizeof ev);
    ev.kind = DP_TRACE_VAR;
    ev.var.id = dp__table_handle(&eng->vars, v->handle_id);
    ev.var_readers = v->nreaders;
    for (i = v->head; i != v->tail; i++) {
        if (ev.queue_len < 8) {
            ev.queue_names[ev.queue_len] = dp__entry_block(dp__var_entry(v, i))->name;
            ev.queue_write[ev.queue_len] = dp__entry_is_write(dp__var_entry(v, i));
        }
        ev.queue_len++;
    }
    eng->desc.trace.func(&ev, eng->desc.trace.user);
}
DP__COLD static void dp__trace_op(dp_engine *eng, dp_trace_kind kind, dp__block *b, int status) {
    dp_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.op_seq = dp__block_seq(b);
    ev.op_name = b->name;
    ev.op_pending = dp__load(&b->wait, DP__ACQUIRE);
    if (kind == DP_TRACE_PUSH || kind == DP_TRACE_GRANT) ev.op_pending--;   /* push: the pusher's hold; grant: this grant */
    ev.status = status;
    eng->desc.trace.func(&ev, eng->desc.trace.user);
}

/* desc.trace.record_graph: every pushed op with its variables, in push
   order, for dp_trace_write_dot and the replay page. */
DP__COLD static void dp__record_graph(dp_engine *eng, dp__block *b) {
    uint32_t i, n = b->nread + b->nwrite;
    dp__mutex_lock(&eng->graph_mtx);
    if (dp__reserve(eng, &eng->graph, &eng->capgraph, eng->ngraph, sizeof *eng->graph, 64) == 0) {
        dp__graph_rec *r = &eng->graph[eng->ngraph];
        r->ids = (uint32_t *)dp__alloc(eng, (n ? n : 1) * sizeof(uint32_t));
        if (r->ids) {
            dp__var **vars = dp__block_vars(b);
            r->seq = dp__block_seq(b); r->name = b->name; r->nread = b->nread; r->nwrite = b->nwrite;
            for (i = 0; i < n; i++) r->ids[i] = vars[i]->handle_id;
            eng->ngraph++;
        }
    }
    dp__mutex_unlock(&eng->graph_mtx);
}
DP__COLD static void dp__trace_delete(dp_engine *eng, dp__block *b, dp__var *v) {
    dp_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.op_seq = dp__block_seq(b);
    ev.kind = DP_TRACE_DELETE;
    ev.var.id = dp__table_handle(&eng->vars, v->handle_id);
    ev.op_name = b->name;
    eng->desc.trace.func(&ev, eng->desc.trace.user);
}

/* >>rule ------------------------------------------------------------------
   The dependency algorithm, MXNet's ThreadedVar in four functions: append
   read, append write, complete read, complete write. They work on one
   variable, under its lock, and on the count of unmet dependencies of the
   op they name (b->wait, MXNet's OprBlock::wait):

     variable v                          op b (dp__block)
       nreaders  granted reads running,    wait  unmet dependencies: one per
                 or DP__WRITING while a          variable, + 1 held by the
                 granted write runs              pusher until its push is done
       queue     FIFO of the ops waiting
                 for v (head..tail), the
                 low bit set for a write

   "Grant" = one dependency of an op is met: its count goes down by one, and
   the grant that takes it to zero makes the op ready (it is put on the
   caller's `ready` list, for dispatch). A grant also hands the op the
   failure its variable carries (see >>failures), so a running op never
   needs to look at its variables. The appends run with the variable
   locked by the push (which locks all of an op's variables together, see
   >>push); a completion locks its variable itself. Everything else in the
   engine is about getting ready ops to threads and back.
   This form is the naive engine's, and any engine's with a trace callback
   (the trace reports the queue and the readers as they change). The
   threaded engines otherwise run the same rule in the form of >>chain,
   which needs no lock shared by a push and a completion. */
static void dp__grant(dp__block *b, dp__block **ready) {
    if (dp__fetch_add(&b->wait, -1, DP__ACQ_REL) == 1) { dp__set_next(b, *ready); *ready = b; }
}
/* A grant made by a completing op (not during a push): the trace reports the
   waiting op's new count. The event goes out before the decrement, while our
   count still keeps the op from running and being recycled. */
static void dp__grant_on_complete(dp_engine *eng, dp__block *b, dp__block **ready) {
    if (dp__tracing(eng)) dp__trace_op(eng, DP_TRACE_GRANT, b, 0);
    dp__grant(b, ready);
}
/* The grant rule: whether an access must wait. A read waits behind a
   running write or any waiting op, a write behind any running or waiting op.
   (Reads queue only behind a write, so "any waiting op" means a write is
   pending: MXNet's pending_write_.) */
static int dp__must_wait(const dp__var *v, int write) {
    return dp__var_waiting(v) || (write ? v->nreaders != 0 : v->nreaders < 0);
}
/* The variable's side of a grant made at once: one more running read, or
   the running write. */
static void dp__var_take(dp__var *v, int write) {
    if (write) v->nreaders = DP__WRITING; else v->nreaders++;
}
/* Makes room in v's queue for `more` more entries (v locked): the push
   reserves before it appends anything, so running out of memory leaves no
   trace. Returns -1 when out of memory. */
static int dp__var_reserve_n(dp_engine *eng, dp__var *v, uint32_t more) {
    uint32_t n = v->tail - v->head, cap = v->queue ? v->mask + 1u : 0u, ncap, i;
    dp__entry *q;
    if (more <= cap - n) return 0;
    if (more > (1u << 28) - n) return -1;
    for (ncap = cap ? cap * 2u : 8u; ncap - n < more; ncap *= 2u) {}
    if (ncap > (1u << 28)) return -1;          /* 2^28 waiting ops: the bytes fit a 32-bit size_t too */
    q = (dp__entry *)dp__alloc(eng, ncap * sizeof *q);
    if (!q) return -1;
    for (i = 0; i < n; i++) q[i] = dp__var_entry(v, v->head + i);
    if (v->queue) dp__free(eng, v->queue, cap * sizeof *q);
    dp__fetch_add(&eng->queue_bytes, (uint64_t)(ncap - cap) * sizeof *q, DP__RELAXED);
    v->queue = q; v->head = 0; v->tail = n; v->mask = ncap - 1u;
    return 0;
}
static int dp__var_reserve(dp_engine *eng, dp__var *v) { return dp__var_reserve_n(eng, v, 1u); }
/* Grants an access at once: the op takes the variable's failure, if any. */
static void dp__grant_now(dp_engine *eng, dp__var *v, dp__block *b, int write, dp__block **ready) {
    dp__failure *f = dp__var_failure(eng, v);
    if (f) dp__grant_failure(eng, b, f);
    dp__var_take(v, write);
    dp__grant(b, ready);
}
/* Queues an access at the tail of v's FIFO (room reserved by the caller). */
static void dp__enqueue(dp__var *v, dp__block *b, int write) {
    v->queue[v->tail++ & v->mask] = (dp__entry)b | (dp__entry)(write != 0);
}
/* Append read: granted at once when nobody writes and nobody waits, else
   queued. */
static void dp__append_read(dp_engine *eng, dp__var *v, dp__block *b, dp__block **ready) {
    if (!dp__must_wait(v, 0)) dp__grant_now(eng, v, b, 0, ready);
    else dp__enqueue(v, b, 0);
    if (dp__tracing(eng)) dp__trace_var(eng, v);
}
/* Append write: granted at once when nobody reads, writes or waits, else
   queued. */
static void dp__append_write(dp_engine *eng, dp__var *v, dp__block *b, dp__block **ready) {
    if (!dp__must_wait(v, 1)) dp__grant_now(eng, v, b, 1, ready);
    else dp__enqueue(v, b, 1);
    if (dp__tracing(eng)) dp__trace_var(eng, v);
}
/* Complete read: the last reader grants the queued write, if any. */
static void dp__complete_read(dp_engine *eng, dp__var *v, dp__block **ready) {
    dp__block *grant = NULL;
    dp__spin_lock_counted(&v->lock, &eng->var_lock_contended);
    DP_ASSERT(v->nreaders > 0);
    if (--v->nreaders == 0 && dp__var_waiting(v)) {   /* the queue starts with a write */
        dp__failure *f = dp__var_failure(eng, v);
        grant = dp__entry_block(dp__var_entry(v, v->head++));
        v->nreaders = DP__WRITING;
        if (f) dp__grant_failure(eng, grant, f);
    }
    if (dp__tracing(eng)) dp__trace_var(eng, v);
    dp__spin_unlock(&v->lock);
    if (grant) dp__grant_on_complete(eng, grant, ready);
}
/* Complete write: the variable now carries the writer's failure (or none);
   grant every queued read up to the next write, or, if the queue starts with
   a write, that write. Up to DP__GRANT_BATCH grants are made after the lock
   is released (the entries are copied out: the ring slots may be reused at
   once); a longer run of reads grants the rest under the lock (releasing the
   lock between chunks would let a reader's completion take a queued read
   for the write it expects at the head). */
#define DP__GRANT_BATCH 64
static void dp__complete_write(dp_engine *eng, dp__var *v, dp__failure *result, dp__block **ready) {
    dp__block *batch[DP__GRANT_BATCH];
    dp__failure *old = NULL, *f;
    int nbatch = 0, i;
    dp__spin_lock_counted(&v->lock, &eng->var_lock_contended);
    DP_ASSERT(v->nreaders == DP__WRITING);
    if (!dp__var_waiting(v) && !result && !v->failure && !dp__tracing(eng)) {   /* the usual case: nobody waits */
        v->nreaders = 0;
        dp__spin_unlock(&v->lock);
        return;
    }
    if (result || v->failure) old = dp__var_swap_failure(eng, v, result);
    f = dp__var_failure(eng, v);
    v->nreaders = 0;
    if (dp__var_waiting(v) && dp__entry_is_write(dp__var_entry(v, v->head))) {
        batch[nbatch++] = dp__entry_block(dp__var_entry(v, v->head++));
        v->nreaders = DP__WRITING;
        if (f) dp__grant_failure(eng, batch[0], f);
    } else {
        while (dp__var_waiting(v) && !dp__entry_is_write(dp__var_entry(v, v->head))) {
            dp__block *b = dp__entry_block(dp__var_entry(v, v->head++));
            v->nreaders++;
            if (f) dp__grant_failure(eng, b, f);
            if (nbatch < DP__GRANT_BATCH) { dp__prefetch(b); batch[nbatch++] = b; }
            else dp__grant_on_complete(eng, b, ready);
        }
    }
    if (dp__tracing(eng)) dp__trace_var(eng, v);
    dp__spin_unlock(&v->lock);
    dp__failure_release(eng, old);
    for (i = 0; i < nbatch; i++) dp__grant_on_complete(eng, batch[i], ready);
}

/* >>chain ------------------------------------------------------------------
   The same rule without a lock shared by pushers and completions: the
   threaded engines' variables (not the naive engine's, and not while a
   trace callback watches: those keep the locked queue above, whose events
   the trace reports). The locked queue makes the pusher and the completing
   worker write the variable's line for every op, so on a chain of ops the
   line moves between two cores twice per op. Here each side writes only
   what the other reads later:

     variable v (the pusher's side,      element (one per variable of an op,
     under v->lock, taken by pushes       in its block: dp__block_elems)
     and cold readers, never by a          word   a write's successor (0 until
     completion)                                  a push links one) or CLOSED
       last   the last element, or a run   owner  the op
       nreaders  readers given to it
                                         run (the reads between two writes; a
                                         block from the pools, kind RUN, all in
                                         one cache line; or hosted in the
                                         write's block: see dp__run_of)
                                           list   readers waiting for its grant,
                                                  newest first, or GRANTED
                                           wait   completions count it down
                                                  from 0; the write after it
                                                  adds v's nreaders once
                                           run_succ  that write

   MXNet's four functions become: append write = link the op after the last
   element (a compare-and-swap of that element's word from 0 to the new
   one); append read = join the open run, or start one after the last
   write; complete write = close the element (an exchange to CLOSED) and
   grant what it found; complete read = count the run down. Exactly one of
   the pusher and the completion sees the other: a pusher whose swap finds
   CLOSED grants the new op itself, a completion whose exchange finds a
   successor grants it. The last reader of a closed run (or the write
   closing a run whose readers are all done) grants the write after it.

   Failures travel the same way: a write stores what it leaves (its block's
   failure and result_epoch) before it closes; whoever grants its successor
   passes that on; a run keeps the failure it was granted with, for readers
   who join it later and for the write after it. The epoch test is made at
   each grant, so dp_wait_all's clear reaches failures left in chains.

   Lifetimes. A block stays alive while it is some variable's last element
   (b->refs), so a pusher can link after it or read what it left, and
   dp_var_state_get can look at it. That reference is dropped by whichever
   of the two sides saw the other: the completion that found a successor,
   or the pusher that found the block closed. A run is freed by whoever
   brings its count to zero. A push takes the runs it may start from the
   pools before it appends anything, so running out of memory fails the
   push with nothing queued.

   What only the locked form knew, and where it comes from here: whether a
   variable is busy or failed (dp__chain_idle, from its last element, under
   the pusher lock); the wait blocks a timed wait may take over (v->waits);
   the ops queued on a busy variable, for the hang report (found in the
   block pools). A deletion is a write; its completion drops the variable's
   references (dp__chain_drop_var), as the engine's end does for the rest.

   An op's reads come first among its elements, so the element a run's
   grant writes sits in the line of the reader's count: see dp__block. */
#define DP__CLOSED ((uintptr_t)1)   /* a write element's word: it completed */
#define DP__GRANTED ((uintptr_t)1)  /* a run's list: its grant was made */
#define DP__RUN_BIT ((uintptr_t)2)  /* in a word or v->last: the element is a run */
#define DP__HOSTED_BIT ((uintptr_t)8)  /* with DP__RUN_BIT: the run sits in its write's block */
#define DP__KIND_RUN 4
static dp__elem *dp__block_elems(dp__block *b) {
    return (dp__elem *)(void *)(b + 1);
}
/* A run is named by the block that holds it, tagged DP__RUN_BIT (blocks
   are 32-byte aligned, so the low bits are free):
   - its own block, of the smallest class, whose state sits in the cache
     line of its count (wait): failure as an op's (and result_epoch, read
     only with a failure), the list of waiting readers in its element's
     word, and the write after it in its element's run_succ;
   - or, tagged DP__HOSTED_BIT too, the block of the write before it, when
     that block has an element and a variable slot its op does not use
     (dp__can_host): the list and the count in the spare element, the write
     after it in the spare variable slot, and as failure the write's own
     (the one it leaves, which is what the run is granted with). Then no
     block is taken from the pools, initialised and handed between threads
     for the run: on a random graph (W4) most reads start a run. The
     write's block stays alive until the run is done: the variable's
     reference to it becomes the run's. (So a variable only read after
     such a write keeps the write's whole block, not a run's 160 bytes,
     until a write follows or the variable goes.) */
static dp__block *dp__run_of(uintptr_t w) { return (dp__block *)(w & ~(DP__RUN_BIT | DP__HOSTED_BIT)); }
static dp__elem *dp__run_elem(uintptr_t run) {
    dp__block *h = dp__run_of(run);
    return &dp__block_elems(h)[run & DP__HOSTED_BIT ? dp__class_cap(h->cls) - 1 : 0];
}
static dp__aptr *dp__run_list(uintptr_t run) { return &dp__run_elem(run)->word; }
static dp__a32 *dp__run_count(uintptr_t run) {
    return run & DP__HOSTED_BIT ? &dp__run_elem(run)->run_count : &dp__run_of(run)->wait;
}
/* The write after the run (plain accesses: the count's read-modify-writes
   order them): in a run's own block its element's run_succ, in a hosting
   block its last variable slot (copied, as the cleanup slot is). */
static void *dp__run_succ_slot(uintptr_t run) {
    dp__block *h = dp__run_of(run);
    return run & DP__HOSTED_BIT ? (void *)(dp__block_vars(h) + dp__class_cap(h->cls) - 1)
                                : (void *)&dp__block_elems(h)[0].run_succ;
}
static dp__elem *dp__run_succ(uintptr_t run) {
    dp__elem *w;
    memcpy(&w, dp__run_succ_slot(run), sizeof w);
    return w;
}
static void dp__run_set_succ(uintptr_t run, dp__elem *w) { memcpy(dp__run_succ_slot(run), &w, sizeof w); }
/* Whether write element e may host the run after it: the first write of a
   one-shot op (its variables in its own block) with no cleanup and an
   element and a variable slot to spare. Only the first write, so that a
   block hosts one run at most: an element is its variable's last once. */
static int dp__block_can_host(const dp__block *x) {
    return (x->kind == DP__KIND_SYNC || x->kind == DP__KIND_ASYNC) && !x->op && !(x->prop & DP__CLEANUP_BIT)
           && x->nwrite && (uint32_t)x->nread + x->nwrite < dp__class_cap(x->cls);
}
static int dp__can_host(dp__elem *e) {
    dp__block *x = e->owner;
    return e == &dp__block_elems(x)[x->nread] && dp__block_can_host(x);
}
static void dp__block_unref(dp_engine *eng, dp__block *b, int32_t n);   /* >>completion */
static void dp__block_return(dp_engine *eng, dp__block *b);              /* >>completion */
/* What an element leaves to what follows it: a closed write's failure, or
   the failure a run was granted with (both held by that block). */
static dp__failure *dp__left_failure(dp_engine *eng, dp__block *x) {
    dp__failure *f = dp__block_failure(x);
    return f && x->result_epoch == (uint32_t)dp__load(&eng->clear_epoch, DP__ACQUIRE) ? f : NULL;
}
static void dp__chain_grant(dp_engine *eng, dp__block *b, dp__failure *f, dp__block **ready) {
    if (f) dp__grant_failure(eng, b, f);
    dp__grant(b, ready);
}
/* A run's memory goes back once its count has come to zero and the write
   after it is granted (or the variable is gone): its own block, or its
   write's reference to the block that hosts it. */
static void dp__run_free(dp_engine *eng, uintptr_t run) {
    dp__block *r = dp__run_of(run);
    if (run & DP__HOSTED_BIT) { dp__block_unref(eng, r, 1); return; }
    dp__failure_release(eng, dp__block_failure(r));
    dp__store(&r->failure, NULL, DP__RELAXED);
    dp__block_return(eng, r);
}
/* Grants the run's waiting readers with failure f (the write before it
   has completed, or it starts with nothing before it). */
static void dp__grant_run(dp_engine *eng, uintptr_t run, dp__failure *f, uint32_t epoch, dp__block **ready) {
    dp__block *r = dp__run_of(run);
    dp__elem *e;
    if (!(run & DP__HOSTED_BIT)) {   /* a hosted run's failure is its write's, in the same block */
        if (f) dp__fetch_add(&f->refs, 1, DP__RELAXED);   /* the run's, for later readers and the write after it */
        dp__store(&r->failure, (void *)f, DP__RELAXED);
        r->result_epoch = epoch;
    }
    e = (dp__elem *)dp__exchange(dp__run_list(run), (void *)DP__GRANTED, DP__ACQ_REL);
    f = dp__left_failure(eng, r);
    while (e) {
        dp__elem *older = (dp__elem *)dp__load(&e->word, DP__RELAXED);
        dp__store(&e->word, (void *)run, DP__RELAXED);   /* its completion counts the run down */
        dp__chain_grant(eng, e->owner, f, ready);
        e = older;
    }
}
/* Grants what a closed write element found after it; x is the write's block. */
static void dp__grant_successor(dp_engine *eng, dp__block *x, uintptr_t s, dp__block **ready) {
    if (s & DP__RUN_BIT) dp__grant_run(eng, s, dp__left_failure(eng, x), x->result_epoch, ready);
    else dp__chain_grant(eng, ((dp__elem *)s)->owner, dp__left_failure(eng, x), ready);
}
/* Links s after the write element v->last ends with. Returns 1 when that
   write has completed already: the caller grants s itself, and drops v's
   reference to the write's block. Else the completion will find s, grant
   it and drop that reference: exactly one of the two does. */
static int dp__link_after_write(dp__var *v, uintptr_t s) {
    dp__elem *last = (dp__elem *)v->last;
    void *expect = NULL;
    if (dp__cas(&last->word, &expect, (void *)s, DP__ACQ_REL)) return 0;
    (void)dp__load(&last->word, DP__ACQUIRE);   /* a failed swap orders nothing: see what the write left */
    return 1;
}
/* Append write (v locked by the push). */
static void dp__chain_append_write(dp_engine *eng, dp__var *v, dp__block *b, dp__elem *e, dp__block **ready) {
    uintptr_t last = v->last;
    dp__store(&e->word, NULL, DP__RELAXED);
    e->owner = b;
    if (!last) dp__grant(b, ready);
    else if (last & DP__RUN_BIT) {                     /* close the run */
        int32_t n = v->nreaders;
        dp__run_set_succ(last, e);            /* the write after it */
        if (dp__fetch_add(dp__run_count(last), n, DP__ACQ_REL) + n == 0) {   /* its readers are all done */
            dp__chain_grant(eng, b, dp__left_failure(eng, dp__run_of(last)), ready);
            dp__run_free(eng, last);
        }
    } else {
        dp__block *x = ((dp__elem *)last)->owner;
        if (dp__link_after_write(v, (uintptr_t)e)) {   /* x is done: v's reference to it is ours to drop */
            dp__chain_grant(eng, b, dp__left_failure(eng, x), ready);
            dp__block_unref(eng, x, 1);
        }
    }
    v->last = (uintptr_t)e;
    v->nreaders = 0;
}
/* Append read (v locked by the push); *spare: runs reserved by the push. */
static void dp__chain_append_read(dp_engine *eng, dp__var *v, dp__block *b, dp__elem *e, dp__block **spare,
                                  dp__block **ready) {
    uintptr_t last = v->last, run;
    e->owner = b;
    if (last & DP__RUN_BIT) {                          /* join the open run */
        void *head;
        v->nreaders++;
        head = dp__load(dp__run_list(last), DP__ACQUIRE);
        do {
            if ((uintptr_t)head == DP__GRANTED) {
                (void)dp__load(dp__run_list(last), DP__ACQUIRE);   /* the failure it was granted with */
                dp__store(&e->word, (void *)last, DP__RELAXED);
                dp__chain_grant(eng, b, dp__left_failure(eng, dp__run_of(last)), ready);
                return;
            }
            dp__store(&e->word, head, DP__RELAXED);
        } while (!dp__cas(dp__run_list(last), &head, (void *)e, DP__ACQ_REL));
        return;
    }
    if (last && dp__can_host((dp__elem *)last))        /* a new run after the last write: in its block */
        run = (uintptr_t)((dp__elem *)last)->owner | DP__RUN_BIT | DP__HOSTED_BIT;
    else {                                             /* or in a block of its own */
        dp__block *r = *spare;
        *spare = dp__next(r);
        r->kind = DP__KIND_RUN;
        dp__store(&r->failure, NULL, DP__RELAXED);
        run = (uintptr_t)r | DP__RUN_BIT;
    }
    dp__store(dp__run_count(run), 0, DP__RELAXED);
    dp__run_set_succ(run, NULL);
    dp__store(&e->word, NULL, DP__RELAXED);
    dp__store(dp__run_list(run), (void *)e, DP__RELAXED);   /* published by the swap below */
    v->nreaders = 1;
    if (!last) dp__grant_run(eng, run, NULL, 0, ready);
    else {
        dp__block *x = ((dp__elem *)last)->owner;
        if (dp__link_after_write(v, run)) {
            dp__grant_run(eng, run, dp__left_failure(eng, x), x->result_epoch, ready);
            if (!(run & DP__HOSTED_BIT)) dp__block_unref(eng, x, 1);   /* else the run's now */
        }
    }
    v->last = run;
}
/* Complete read: count the run down; the last reader of a closed run
   grants the write after it. */
static void dp__chain_complete_read(dp_engine *eng, dp__elem *e, dp__block **ready) {
    uintptr_t run = (uintptr_t)dp__load(&e->word, DP__RELAXED);
    if (dp__fetch_add(dp__run_count(run), -1, DP__ACQ_REL) == 1) {
        dp__elem *w = dp__run_succ(run);
        if (w) dp__chain_grant(eng, w->owner, dp__left_failure(eng, dp__run_of(run)), ready);   /* NULL: the variable is gone */
        dp__run_free(eng, run);
    }
}
/* Complete write: close the element; grant what was linked after it.
   Returns 1 when it found a successor: b is no longer the variable's last
   element, and the caller drops that reference (dp__link_after_write);
   0 when it found none, or a run b hosts, which keeps the reference. */
static int dp__chain_complete_write(dp_engine *eng, dp__block *b, dp__elem *e, dp__block **ready) {
    uintptr_t s = (uintptr_t)dp__exchange(&e->word, (void *)DP__CLOSED, DP__ACQ_REL);
    if (!s) return 0;
    dp__grant_successor(eng, b, s, ready);
    return (s & (DP__RUN_BIT | DP__HOSTED_BIT)) != (DP__RUN_BIT | DP__HOSTED_BIT);   /* (a write's element may have bit 8 set on 32 bits) */
}
/* Whether v is idle (nothing running or waiting), and the failure it
   carries then (v locked). */
DP__COLD static int dp__chain_idle(dp_engine *eng, dp__var *v, dp__failure **failure) {
    uintptr_t last = v->last;
    dp__block *x;
    *failure = NULL;
    if (!last) return 1;
    if (last & DP__RUN_BIT) {
        x = dp__run_of(last);
        if ((uintptr_t)dp__load(dp__run_list(last), DP__ACQUIRE) != DP__GRANTED
            || dp__load(dp__run_count(last), DP__ACQUIRE) + v->nreaders != 0) return 0;
    } else {
        x = ((dp__elem *)last)->owner;
        if ((uintptr_t)dp__load(&((dp__elem *)last)->word, DP__ACQUIRE) != DP__CLOSED) return 0;
    }
    *failure = dp__left_failure(eng, x);
    return 1;
}
/* The wait blocks pushed on v since its last op (each holding a
   reference, for dp__adopt_wait): dropped when an op is pushed, pruned of
   those that have run when a wait is pushed. */
DP__COLD static void dp__chain_drop_waits(dp_engine *eng, dp__var *v, int only_done) {
    dp__block **pp = &v->waits;
    while (*pp) {
        dp__block *x = *pp;
        if (only_done && (dp__load(&x->state, DP__ACQUIRE) & 3u) == DP__ST_PENDING) { pp = &x->prev_wait; continue; }
        *pp = x->prev_wait;
        dp__block_unref(eng, x, 1);
    }
}
/* Appends b to its variables (locked): reads, then writes. */
static void dp__chain_append_vars(dp_engine *eng, dp__block *b, dp__block **spare, dp__block **ready) {
    dp__var **vars = dp__block_vars(b);
    dp__elem *elems = dp__block_elems(b);
    uint32_t i, n = (uint32_t)b->nread + b->nwrite;
    dp__store(&b->refs, 1 + (int32_t)b->nwrite, DP__RELAXED);
    for (i = 0; i < b->nread; i++) {
        if (vars[i]->waits) dp__chain_drop_waits(eng, vars[i], 0);
        dp__chain_append_read(eng, vars[i], b, &elems[i], spare, ready);
    }
    for (; i < n; i++) {
        dp__var *v = vars[i];
        if (b->kind == DP__KIND_WAIT) {
            if (v->waits) dp__chain_drop_waits(eng, v, 1);
            dp__fetch_add(&b->refs, 1, DP__RELAXED);
            b->prev_wait = v->waits;
            v->waits = b;
        } else if (v->waits) dp__chain_drop_waits(eng, v, 0);
        dp__chain_append_write(eng, v, b, &elems[i], ready);
    }
}
/* The runs a push of b may take from the pools: one per read whose
   variable's last element is not a run, unless the write it follows can
   host it (v locked). */
static uint32_t dp__chain_runs_needed(dp__block *b) {
    dp__var **vars = dp__block_vars(b);
    uint32_t i, n = 0;
    for (i = 0; i < b->nread; i++) {
        uintptr_t last = vars[i]->last;
        n += !(last & DP__RUN_BIT) && !(last && dp__can_host((dp__elem *)last));
    }
    return n;
}
/* Takes n runs from the pools, linked by next; -1 (none taken) when out of
   memory. */
static int dp__chain_reserve_runs(dp_engine *eng, uint32_t n, dp__block **spare) {
    *spare = NULL;
    while (n--) {
        dp__block *r = dp__pool_get(eng, 0);
        if (!r) {
            while (*spare) { dp__block *x = *spare; *spare = dp__next(x); dp__pool_put(eng, x); }
            return -1;
        }
        r->cls = 0;
        dp__set_next(r, *spare);
        *spare = r;
    }
    return 0;
}
static void dp__chain_return_runs(dp_engine *eng, dp__block *spare) {
    while (spare) { dp__block *x = spare; spare = dp__next(x); dp__pool_put(eng, x); }
}
/* The variable's references, when it goes (its deletion completed, or the
   engine is freed): its last element and its wait blocks. A run still
   counting down frees itself (its successor is NULL). */
DP__COLD static void dp__chain_drop_var(dp_engine *eng, dp__var *v) {
    uintptr_t last = v->last;
    dp__chain_drop_waits(eng, v, 0);
    v->last = 0;
    if (!last) return;
    if (last & DP__RUN_BIT) {
        int32_t n = v->nreaders;
        dp__run_set_succ(last, NULL);
        if (dp__fetch_add(dp__run_count(last), n, DP__ACQ_REL) + n == 0) dp__run_free(eng, last);
    } else dp__block_unref(eng, ((dp__elem *)last)->owner, 1);
    v->nreaders = 0;
}
/* Whether v has ops running or waiting for it, and if not, the failure it
   carries (v locked): both forms of the rule. */
DP__COLD static int dp__var_busy(dp_engine *eng, dp__var *v, dp__failure **failure) {
    if (eng->chain) return !dp__chain_idle(eng, v, failure);
    *failure = NULL;
    if (v->nreaders != 0 || dp__var_waiting(v)) return 1;
    *failure = dp__var_failure(eng, v);
    return 0;
}

/* >>queues ---------------------------------------------------------------
   Where ready ops wait for a worker (MXNet's task queues of a
   ThreadWorkerBlock). Each group has one shared queue: a FIFO in the CPU
   and IO pools, a priority heap in the priority pools. Each worker of a
   FIFO pool also has a deque of its own (below). */
/* DP_OK, DP_ERROR_OUT_OF_MEMORY, or DP_ERROR_THREAD (no lock); the
   caller logs. */
static dp_result dp__queue_init(dp_engine *eng, dp__queue *q, int prioritized) {
    memset(q, 0, sizeof *q);
    q->prioritized = prioritized;
    if (!prioritized) {
        q->stub = (struct dp__block *)dp__alloc(eng, sizeof(dp__block));
        if (!q->stub) return DP_ERROR_OUT_OF_MEMORY;
        memset(q->stub, 0, sizeof(dp__block));
        dp__store(&q->head, (void *)q->stub, DP__RELAXED);
        dp__store(&q->tail, (void *)q->stub, DP__RELAXED);
    }
    if (dp__mutex_init(&q->m)) { dp__free(eng, q->stub, sizeof(dp__block)); return DP_ERROR_THREAD; }
    if (dp__cond_init(&q->cv)) { dp__mutex_destroy(&q->m); dp__free(eng, q->stub, sizeof(dp__block)); return DP_ERROR_THREAD; }
    return DP_OK;
}
static void dp__queue_destroy(dp_engine *eng, dp__queue *q) {
    dp__free(eng, q->heap, q->capheap * sizeof(dp__block *));
    dp__free(eng, q->stub, sizeof(dp__block));
    dp__cond_destroy(&q->cv);
    dp__mutex_destroy(&q->m);
}

/* The FIFO: Vyukov's intrusive queue. A producer appends with one atomic
   exchange of the tail, so pushing threads never wait for each other or
   for a worker; consumers take from the head one at a time under a
   spinlock, and an idle worker first peeks at the head without it
   (dp__queue_peek), so polling an empty queue does not take cache lines
   away from the pusher. */
/* FIFO producer: appends the chain first..last (linked by next). The
   exchange is the moment the ops are in the queue; the link from the old
   tail follows, and a consumer that sees the tail moved but no link yet
   waits for it (it is "busy", not empty). */
static void dp__fifo_append(dp__queue *q, dp__block *first, dp__block *last) {
    dp__block *prev;
    dp__store(&last->next, NULL, DP__RELAXED);
    prev = (dp__block *)dp__exchange(&q->tail, (void *)last, DP__SEQ_CST);
    dp__store(&prev->next, (void *)first, DP__RELEASE);
}
/* FIFO consumer (take_lock held): the oldest op, or NULL. *busy says a push
   is half done, so the queue is not really empty; *more that another op is
   already behind the one returned. */
static dp__block *dp__fifo_take(dp__queue *q, int *busy, int *more) {
    dp__block *head = (dp__block *)dp__load(&q->head, DP__RELAXED), *next = (dp__block *)dp__load(&head->next, DP__ACQUIRE);
    *busy = *more = 0;
    if (head == q->stub) {                    /* skip the stub */
        if (!next) { *busy = dp__load(&q->tail, DP__SEQ_CST) != (void *)head; return NULL; }
        dp__store(&q->head, (void *)next, DP__RELAXED);
        head = next;
        next = (dp__block *)dp__load(&head->next, DP__ACQUIRE);
    }
    if (next) {
        dp__store(&q->head, (void *)next, DP__RELEASE);
        dp__prefetch(next);
        *more = next != q->stub || dp__load(&next->next, DP__RELAXED) != NULL;
        return head;
    }
    if (dp__load(&q->tail, DP__SEQ_CST) != (void *)head) { *busy = 1; return NULL; }
    dp__fifo_append(q, q->stub, q->stub);     /* head is the last op: put the stub behind it */
    next = (dp__block *)dp__load(&head->next, DP__ACQUIRE);
    if (next) { dp__store(&q->head, (void *)next, DP__RELEASE); *more = next != q->stub; return head; }
    *busy = 1;                                /* a producer slipped in; its link is coming */
    return NULL;
}

/* The heap of a priority pool (CPU priority, GPU compute, GPU copy), under
   the queue's mutex: highest priority first, then push order. */
static int dp__before(dp__block *a, dp__block *b) {  /* a runs first */
    int ap = dp__prop(a) == DP_PROP_GPU_PRIORITIZED, bp = dp__prop(b) == DP_PROP_GPU_PRIORITIZED;
    if (ap != bp) return ap > bp;
    if (a->priority != b->priority) return a->priority > b->priority;
    return dp__block_seq(a) < dp__block_seq(b);
}
static void dp__heap_insert(dp_engine *eng, dp__queue *q, dp__block *b) {   /* q->m held */
    if (dp__reserve(eng, &q->heap, &q->capheap, q->nheap, sizeof *q->heap, 64) == 0) {
        size_t i = q->nheap++;
        while (i > 0 && dp__before(b, q->heap[(i - 1) / 2])) { q->heap[i] = q->heap[(i - 1) / 2]; i = (i - 1) / 2; }
        q->heap[i] = b;
    } else {   /* the heap could not grow: keep the op in push order rather than lose it */
        dp__set_next(b, NULL);
        if (q->ltail) dp__set_next(q->ltail, b); else q->lhead = b;
        q->ltail = b;
    }
}
static dp__block *dp__heap_take(dp__queue *q) {   /* q->m held */
    dp__block *b;
    if (q->nheap) {
        dp__block *last = q->heap[--q->nheap];
        size_t i = 0;
        b = q->heap[0];
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= q->nheap) break;
            if (c + 1 < q->nheap && dp__before(q->heap[c + 1], q->heap[c])) c++;
            if (!dp__before(q->heap[c], last)) break;
            q->heap[i] = q->heap[c]; i = c;
        }
        if (q->nheap) q->heap[i] = last;
        return b;
    }
    b = q->lhead;
    if (b) { q->lhead = dp__next(b); if (!q->lhead) q->ltail = NULL; }
    return b;
}

/* Waking. Spinning costs a core, waking costs a system call, so a pool
   keeps one spinning worker while there is work to find (see >>workers): a
   push wakes a sleeper only when no worker is spinning (a spinner will find
   the op; a worker that is running one might not for a long time). The
   pool's work is its shared queue and its workers' deques, so a worker that
   puts ops in its own deque wakes a sleeper by the same rule (the owner
   would run them in the end, but it may stay busy for long, or even wait
   for one of them). With no worker spinning or asleep, all are busy: then
   a helping wait asleep is woken instead (dp__pool_nudge; >>callers). */
/* Wakes one sleeper, if any is left unclaimed. The woken worker counts as
   spinning at once, so the next push does not wake a second one for the
   same work. */
static void dp__queue_wake(dp__queue *q) {
    if (dp__load(&q->sleepers, DP__SEQ_CST) == 0) return;
    dp__mutex_lock(&q->m);
    if (dp__load(&q->sleepers, DP__RELAXED) > q->wakeups) {
        q->wakeups++;
        dp__fetch_add(&q->woken, 1, DP__RELAXED);
        dp__fetch_add(&q->spinning, 1, DP__SEQ_CST);
        dp__cond_signal(&q->cv);
    }
    dp__mutex_unlock(&q->m);
}
/* After work was added to q's pool (seq_cst, see Waking above): wakes a sleeper
   if no worker is spinning. Reads sleepers first: its line stays put while
   the workers are busy, and with nobody asleep there is nobody to wake. */
static void dp__queue_nudge(dp__queue *q) {
    if (dp__load(&q->sleepers, DP__SEQ_CST) != 0 && dp__load(&q->spinning, DP__SEQ_CST) == 0) dp__queue_wake(q);
}
/* The same for an op added to q's pool, which a helping wait may run (see
   >>callers): with no worker spinning or asleep, every worker is busy, and
   a helping wait asleep (eng->help_asleep, on a line of its own, read only
   then) is woken to take the op. */
DP__COLD static void dp__help_wake(dp_engine *eng, dp__queue *q);
static void dp__pool_nudge(dp_engine *eng, dp__queue *q) {
    if (dp__load(&q->sleepers, DP__SEQ_CST) != 0) { if (dp__load(&q->spinning, DP__SEQ_CST) == 0) dp__queue_wake(q); }
    else if (dp__load(&eng->help_asleep, DP__SEQ_CST) != 0 && dp__load(&q->spinning, DP__SEQ_CST) == 0) dp__help_wake(eng, q);
}
/* After a push into a pool without workers: wakes the waits that run its
   ops (see dp__wait_help). */
DP__COLD static void dp__pump_wake(dp_engine *eng) {
    if (dp__load(&eng->nhelpers, DP__SEQ_CST) == 0) return;
    dp__mutex_lock(&eng->wait_mtx);
    dp__cond_broadcast(&eng->wait_cv);
    dp__mutex_unlock(&eng->wait_mtx);
}
/* Adds the ready ops first..last (linked by next); wakes a worker if none
   is spinning, or the waits if the pool has no worker. */
static void dp__queue_push(dp_engine *eng, dp__queue *q, dp__block *first, dp__block *last) {
    if (q->prioritized) {
        dp__block *b = first, *next;
        dp__mutex_lock_counted(&q->m, &q->lock_contended);
        for (; b; b = next) { next = b == last ? NULL : dp__next(b); dp__heap_insert(eng, q, b); }
        dp__mutex_unlock(&q->m);
    } else dp__fifo_append(q, first, last);
    dp__pool_nudge(eng, q);
    if (q->pumped) dp__pump_wake(eng);
}
/* Whether a FIFO may hold an op, looked at without the take lock: its head
   node has a successor, or is an op itself. Idle workers poll this, not the
   take lock or the tail: the line it reads is written once per append, not
   on every push, so a polling worker does not take the tail's line from
   the pusher. A hint only: a block read here may already be taken and
   reused (blocks are never freed while the engine lives), and a push whose
   link is not yet set looks empty; the sleep path looks properly. */
static int dp__queue_peek(dp__queue *q) {
    dp__block *head;
    if (q->prioritized) return 1;
    head = (dp__block *)dp__load(&q->head, DP__ACQUIRE);
    return head != q->stub || dp__load(&head->next, DP__ACQUIRE) != NULL;
}
/* Adds 1 to a counter only its owner writes (no read-modify-write). */
static void dp__count_own(dp__a64 *c) { dp__store(c, dp__load(c, DP__RELAXED) + 1, DP__RELAXED); }
/* One attempt to take an op (no sleeping). A FIFO take is counted in
   *takes, a counter of the calling worker's own; NULL from a pushing thread. */
static dp__block *dp__queue_try_take(dp__queue *q, int *busy, int *more, dp__a64 *takes) {
    dp__block *b;
    if (q->prioritized) {
        dp__mutex_lock_counted(&q->m, &q->lock_contended);
        b = dp__heap_take(q);
        *more = q->nheap > 0 || q->lhead;
        dp__mutex_unlock(&q->m);
        *busy = 0;
        return b;
    }
    if (takes) dp__count_own(takes); else dp__fetch_add(&q->outside_takes, 1, DP__RELAXED);
    dp__spin_lock_counted(&q->take_lock, &q->lock_contended);
    b = dp__fifo_take(q, busy, more);
    dp__spin_unlock(&q->take_lock);
    if (*busy) dp__fetch_add(&q->busy_retries, 1, DP__RELAXED);
    return b;
}

/* The deques. Each worker of a FIFO pool has one (dp__deque, a bounded
   Chase-Lev deque). Ops made ready by a completion on one of the pool's
   workers stay with that worker: the first runs next (dp__dispatch_ready),
   the others go to its deque, or to the shared queue when the deque is
   full. Ops made ready on any other thread (a pusher, a waiter, an async
   completion or GPU callback) go to the shared queue. A worker looks at its
   own deque first (newest op first), then the shared queue, then steals a
   peer's oldest op (>>workers); a helping wait and dp_run_ready steal the
   same way (>>callers). So the take lock and head serve only ops that came
   from outside the pool, and a completion's ops spread without them.
   Order. The owner's end is LIFO: the op made ready last has its inputs in
   this core's cache, and a fan-out is walked depth first, so few ops are
   half done; thieves take the oldest, likely the root of the largest piece
   of work left. A FIFO pool therefore does not run its ops in push order
   across workers (with several workers it never did strictly), and need
   not: MXNet's ordering rule is about ops that share a variable, and those
   are ordered by the variable queues before they become ready. Order that
   callers ask for, by priority, is the priority pools' heaps'. An op that
   LIFO would keep waiting for ever is taken by the fairness rule
   (>>fairness).
   Memory orders: those of the C11 version proved by Le, Pop, Cohen and
   Zappa Nardelli ("Correct and Efficient Work-Stealing for Weak Memory
   Models", PPoPP 2013), except that each of its seq_cst fences is carried
   by the accesses beside it, made seq_cst (pop: the store lowering bottom
   and the load of top; steal: the loads of top and bottom): the same
   instructions on x86, checked by ThreadSanitizer (which does not model
   fences), and the push's bottom store has to be seq_cst anyway for the
   wake-up rule (see Waking).
   Ops held: bottom - top, as a signed difference, since a pop lowers bottom
   below top for a moment when a thief won. */
static int64_t dp__deque_count(uint64_t bottom, uint64_t top) { return (int64_t)(bottom - top); }
/* Owner: adds x at the bottom; 0 when full. The slot is free: the thief
   that last read it did so before its CAS moved top past it, and the
   acquire load of top sees that CAS. The store of bottom publishes the slot
   to thieves (release) and, seq_cst, comes before the caller's read of the
   sleep counts (dp__queue_nudge). */
static int dp__deque_push(dp__deque *d, dp__block *x) {
    uint64_t b = dp__load(&d->bottom, DP__RELAXED), t = dp__load(&d->top, DP__ACQUIRE);
    if (dp__deque_count(b, t) >= DP__DEQUE_SLOTS) return 0;
    dp__store(&d->slots[b % DP__DEQUE_SLOTS], (void *)x, DP__RELAXED);
    dp__store(&d->bottom, b + 1, DP__SEQ_CST);
    return 1;
}
/* Owner: the newest op, or NULL. The owner claims index b-1 by lowering
   bottom before it reads top (both seq_cst): a thief that reads top after
   that reads the lowered bottom and stops short of b-1, so only the last op
   can be wanted by both sides, and the CAS on top gives it to one. */
static dp__block *dp__deque_pop(dp__deque *d) {
    uint64_t b = dp__load(&d->bottom, DP__RELAXED), t = dp__load(&d->top, DP__RELAXED);
    dp__block *x;
    if (dp__deque_count(b, t) <= 0) return NULL;     /* top only grows: empty stays empty until we push */
    b--;
    dp__store(&d->bottom, b, DP__SEQ_CST);
    t = dp__load(&d->top, DP__SEQ_CST);
    if (dp__deque_count(b, t) < 0) {                 /* thieves took everything meanwhile */
        dp__store(&d->bottom, b + 1, DP__RELEASE);
        return NULL;
    }
    x = (dp__block *)dp__load(&d->slots[b % DP__DEQUE_SLOTS], DP__RELAXED);
    if (b != t) return x;                            /* not the last: no thief gets this far */
    if (!dp__cas(&d->top, &t, t + 1, DP__SEQ_CST)) x = NULL;   /* the last: a thief won it */
    dp__store(&d->bottom, b + 1, DP__RELEASE);       /* empty, top == bottom */
    return x;
}
/* Thief: the oldest op, or NULL. *lost when a CAS failed (another thread
   took that op; more may be left), *more when ops remain behind the one
   returned. The slot is read before the CAS: if the owner reused it
   meanwhile, top has moved on and the CAS fails. Release stores of bottom
   (acquired by the seq_cst load) make what the owner wrote before visible. */
static dp__block *dp__deque_steal(dp__deque *d, int *lost, int *more) {
    uint64_t t = dp__load(&d->top, DP__SEQ_CST), b = dp__load(&d->bottom, DP__SEQ_CST);
    dp__block *x;
    if (dp__deque_count(b, t) <= 0) return NULL;
    x = (dp__block *)dp__load(&d->slots[t % DP__DEQUE_SLOTS], DP__RELAXED);
    if (!dp__cas(&d->top, &t, t + 1, DP__SEQ_CST)) { *lost = 1; return NULL; }
    *more = dp__deque_count(b, t + 1) > 0;
    return x;
}


/* >>execute ---------------------------------------------------------------
   The op runs (MXNet's ExecuteOprBlock). An op whose input failed is
   skipped and passes the failure on; a sync function's return completes
   it at once (dp__finish), an async function's op is completed by
   dp_complete, from any thread, when its work is done; a GPU op's stream
   work is waited for first (>>gpu). A wait block runs here too: it reports
   its variable's failure to the thread in dp_wait_var. */
static dp__block *dp__finish(dp_engine *eng, dp__block *b, int status, const char *message, dp__worker *keep_for);
static void *dp__gpu_stream(dp_engine *eng, dp__block *b, dp__worker *w, int *err);
static dp__block *dp__gpu_no_stream(dp_engine *eng, dp__block *b, dp__worker *w, int err);
static dp__block *dp__gpu_finish(dp_engine *eng, dp__block *b, dp__worker *w, void *stream, int status, const char *message);

/* What dp_set_error writes to while a sync function runs. */
typedef struct dp__run_state { dp__block *block; int has_message; char message[256]; } dp__run_state;

/* Runs one ready op on this thread (w is NULL on a pushing thread). On a
   worker, returns an op that the completion made ready and that this worker
   should run next (see dp__finish), else NULL. */
static dp__block *dp__execute(dp_engine *eng, dp__block *b, dp__worker *w) {
    dp_run_ctx rc;
    dp__run_state rs;
    dp_engine *prev_running = dp__tls_running;
    int status = 0;
    dp__failure *upstream = dp__block_failure(b);
    if (upstream && !dp__no_skip(b)) {   /* a grant passed on an input's failure: skip, pass it on */
        dp__fetch_add(&eng->skipped, 1, DP__RELAXED);
        return dp__finish(eng, b, upstream->info.status, NULL, w);
    }
    rc.engine = eng;
    rc.ctx = b->ctx;
    rc.stream = NULL;
    rc.worker = w ? w->index : -1;
    rc.input_status = upstream ? upstream->info.status : 0;
    rs.block = b;
    rs.has_message = 0;
    rc.internal = &rs;
    b->worker = w;
    if (b->ctx.dev_type == DP_DEV_GPU) {   /* see >>gpu */
        int err = 0;
        rc.stream = dp__gpu_stream(eng, b, w, &err);
        if (err) return dp__gpu_no_stream(eng, b, w, err);
    }
    if (dp__load(&eng->profiling, DP__RELAXED)) b->t_start = dp__now_ns();
    else b->t_start = 0;
    if (dp__tracing(eng)) dp__trace_op(eng, DP_TRACE_RUN, b, 0);
    dp__block_set_state(b, DP__ST_RUNNING, DP__RELEASE);
    dp__tls_running = eng;
    if (b->kind == DP__KIND_ASYNC) {
        dp_completion done;
        done.block = b;
        done.seq = dp__block_seq(b);
        b->afn(&rc, b->arg, done);           /* b may be finished already */
        dp__tls_running = prev_running;
        return NULL;
    }
    if (b->fn) status = b->fn(&rc, b->arg);
    dp__tls_running = prev_running;
    if (rc.stream) return dp__gpu_finish(eng, b, w, rc.stream, status, rs.has_message ? rs.message : NULL);
    return dp__finish(eng, b, status, rs.has_message ? rs.message : NULL, w);
}

/* Runs a wait block: report the variable's failure to the waiter, once. A
   waiter that has given up (dp_wait_var_for) is not told: the failure stays
   on the variable, unreported, and the block frees the waiter. */
DP__COLD static void dp__run_wait(dp_engine *eng, dp__block *b) {
    dp__waiter *wt = (dp__waiter *)b->arg;
    dp__failure *f = dp__block_failure(b);   /* what the variable carried */
    int abandoned;
    dp__fetch_add(&eng->outside_finishers, 1, DP__ACQ_REL);   /* see dp__finish */
    dp__mutex_lock(&eng->wait_mtx);
    abandoned = dp__load(&wt->abandoned, DP__RELAXED);
    wt->claimed = !abandoned;
    dp__block_set_state(b, DP__ST_RUNNING, DP__RELEASE);   /* looked: no longer taken over (dp__chain_adopt_wait) */
    dp__mutex_unlock(&eng->wait_mtx);
    if (abandoned) {
        dp__finish(eng, b, 0, NULL, NULL);   /* passes the variable's failure on */
        dp__free(eng, wt, sizeof *wt);
        dp__fetch_add(&eng->outside_finishers, -1, DP__RELEASE);
        return;
    }
    wt->result = DP_OK;
    if (f) {
        wt->result = DP_ERROR_OP_FAILED;
        wt->failure = f->info;
        dp__failure_mark_reported(eng, f);
    }
    dp__finish(eng, b, 0, NULL, NULL);       /* and clears the variable's failure */
    dp__mutex_lock(&eng->wait_mtx);
    wt->done = 1;
    dp__cond_broadcast(&eng->wait_cv);
    dp__mutex_unlock(&eng->wait_mtx);
    dp__fetch_add(&eng->outside_finishers, -1, DP__RELEASE);
}

/* >>completion ------------------------------------------------------------
   When an op is done (its function returned, dp_complete was called, or its
   GPU work passed its event) dp__finish completes it: MXNet's
   ThreadedEngine::OnComplete. The algorithm is dp__release_vars; the rest is
   bookkeeping, each part in a function of its own. */
static dp__block *dp__dispatch_ready(dp_engine *eng, dp__block *ready, dp__worker *keep_for);
static void dp__op_unref(dp_engine *eng, dp__opobj *op, int32_t n);

/* The algorithm: complete every read, then every write, of op b. Each
   completion may grant ops that wait for the variable; an op granted its
   last unmet dependency is ready and goes on *ready. What a write leaves
   on its variable: the op's failure, passed on, or none (a good write
   replaces whatever the variable held); a wait reported the failure, so it
   clears it, unless its waiter gave up (then it stays for a later wait). */
static int32_t dp__release_vars(dp_engine *eng, dp__block *b, dp__failure *failure, dp__block **ready) {
    dp__var **vars = dp__block_vars(b);
    dp__failure *left = failure;
    int32_t unlinked = 0;
    uint32_t i;
    if (b->kind == DP__KIND_WAIT && !dp__load(&((dp__waiter *)b->arg)->abandoned, DP__RELAXED)) left = NULL;
    if (eng->chain) {   /* see >>chain: b keeps what it leaves, for what follows it */
        dp__elem *elems = dp__block_elems(b);
        if (failure && (!left || !b->nwrite)) { dp__failure_release(eng, failure); dp__store(&b->failure, NULL, DP__RELAXED); }
        b->result_epoch = left && b->nwrite ? (uint32_t)dp__load(&left->epoch, DP__RELAXED) : 0u;
        for (i = 0; i < b->nread; i++) dp__chain_complete_read(eng, &elems[i], ready);
        for (; i < (uint32_t)b->nread + b->nwrite; i++) unlinked += dp__chain_complete_write(eng, b, &elems[i], ready);
        return unlinked;
    }
    for (i = 0; i < b->nread; i++) dp__complete_read(eng, vars[i], ready);
    for (i = b->nread; i < b->nread + b->nwrite; i++) dp__complete_write(eng, vars[i], left, ready);
    return 0;
}
/* A deletion (MXNet's DeleteVariable) is a write that retires its variable
   instead of completing: no op can wait behind it, since the handle died
   when it was pushed. It drops the variable's failure and frees the slot. */
static void dp__retire_var(dp_engine *eng, dp__block *b) {
    dp__var *v = dp__block_vars(b)[0];
    dp__failure *old;
    dp__spin_lock(&v->lock);          /* dp_var_state_get may be looking */
    if (eng->chain) { dp__chain_drop_var(eng, v); old = NULL; }   /* b was its last element */
    else old = dp__var_swap_failure(eng, v, NULL);
    dp__spin_unlock(&v->lock);
    dp__failure_release(eng, old);
    if (dp__tracing(eng)) dp__trace_delete(eng, b, v);
    v->nreaders = 0;
    dp__table_release(eng, &eng->vars, v->handle_id & DP__IDX_MASK, v);
}

/* Bookkeeping. Entering and leaving: a finisher on a thread that is not one
   of this engine's workers (an async completion, the naive engine) may
   still touch eng after the last completion is counted, so destroy waits
   until none is left. Workers are joined before the engine is freed, so
   they need no count. Returns the calling worker, or NULL. */
static dp__worker *dp__finish_enter(dp_engine *eng) {
    dp__worker *w = dp__tls_worker && dp__tls_worker->eng == eng ? dp__tls_worker : NULL;
    if (!w) dp__fetch_add(&eng->outside_finishers, 1, DP__ACQ_REL);
    return w;
}
/* Counts n completions. When someone waits for everything and nothing is
   left, wake them. */
static void dp__count_done(dp_engine *eng, uint64_t n) {
    uint64_t done = dp__fetch_add(&eng->done, n, DP__SEQ_CST) + n;
    if (dp__load(&eng->nwaiters_all, DP__SEQ_CST) > 0 && done == dp__load(&eng->seq, DP__SEQ_CST)) {
        dp__mutex_lock(&eng->wait_mtx);
        dp__cond_broadcast(&eng->wait_cv);
        dp__mutex_unlock(&eng->wait_mtx);
    }
}
/* A worker's finished blocks go back to their pool 32 at a time, and its
   completions reach eng->done when it runs out of work: the pusher and the
   workers then rarely write the same cache line. */
static void dp__worker_put(dp_engine *eng, dp__worker *w, dp__block *b) {
    dp__pool *p = dp__pool_of(eng, b);
    int k = b->kind == DP__KIND_RUN;
    if (w->put[k].count && (w->put[k].pool != p || w->put[k].count >= 32)) {
        dp__pool_put_chain(w->put[k].pool, w->put[k].first, w->put[k].last);
        w->put[k].count = 0;
    }
    dp__set_next(b, w->put[k].count ? w->put[k].first : NULL);
    if (!w->put[k].count) w->put[k].last = b;
    w->put[k].first = b;
    w->put[k].pool = p;
    w->put[k].count++;
}
/* A chain engine's block goes back when its last reference does: its
   completion's and one per variable whose last element it is (>>chain). */
static void dp__block_return(dp_engine *eng, dp__block *b) {
    dp__worker *w = dp__tls_worker;
    if (w && w->eng == eng) dp__worker_put(eng, w, b); else dp__pool_put(eng, b);
}
static void dp__block_unref(dp_engine *eng, dp__block *b, int32_t n) {
    if (dp__fetch_add(&b->refs, -n, DP__ACQ_REL) != n) return;
    dp__failure_release(eng, dp__block_failure(b));
    dp__store(&b->failure, NULL, DP__RELAXED);
    dp__block_return(eng, b);
}
/* A worker releases the runs of a pre-created op it finished in one
   decrement per batch (a run of the same op, at most DP__UNREF_BATCH, or
   until it goes idle), so the op's count stays in the pushing thread's cache
   instead of moving to the worker and back on every push. Released before
   the completions are counted (dp__worker_flush): once dp_wait_all sees
   every op done, every run's reference is gone. */
#define DP__UNREF_BATCH 1024
static void dp__worker_release_ops(dp_engine *eng, dp__worker *w) {
    if (w->unref_count) { dp__opobj *op = w->unref_op; int32_t n = w->unref_count; w->unref_op = NULL; w->unref_count = 0; dp__op_unref(eng, op, n); }
}
static void dp__worker_unref_op(dp_engine *eng, dp__worker *w, dp__opobj *op) {
    if (w->unref_count && (w->unref_op != op || w->unref_count >= DP__UNREF_BATCH)) dp__worker_release_ops(eng, w);
    w->unref_op = op;
    w->unref_count++;
}
static void dp__worker_flush(dp_engine *eng, dp__worker *w) {
    int k;
    for (k = 0; k < 2; k++)
        if (w->put[k].count) { dp__pool_put_chain(w->put[k].pool, w->put[k].first, w->put[k].last); w->put[k].count = 0; }
    dp__worker_release_ops(eng, w);
    if (w->unflushed) { uint64_t n = w->unflushed; w->unflushed = 0; dp__count_done(eng, n); }
}
/* Counts the completion: the last thing a finisher does, since a waiter may
   destroy the engine once every completion is counted (a worker's count
   waits for dp__worker_flush). */
static void dp__finish_leave(dp_engine *eng, dp__worker *w) {
    if (w) w->unflushed++;
    else {
        dp__count_done(eng, 1);
        dp__fetch_add(&eng->outside_finishers, -1, DP__RELEASE);   /* last touch of eng */
    }
}
/* Failure: what b completes with, held by b until dp__drop_failure. Its
   own when it failed (status != 0), else what a grant passed on from an
   input, unless it is a NO_SKIP op that made good outputs of failed input. */
static dp__failure *dp__settle_failure(dp_engine *eng, dp__block *b, int status, const char *message) {
    dp__failure *failure = dp__block_failure(b);
    if (failure && status == 0 && dp__no_skip(b)) {
        dp__failure_release(eng, failure);
        failure = NULL;
        dp__store(&b->failure, NULL, DP__RELAXED);
    }
    if (status != 0 && !failure) {
        failure = dp__failure_new(eng, b->name, status, message);
        dp__store(&b->failure, (void *)failure, DP__RELAXED);
    }
    return failure;
}
static void dp__drop_failure(dp_engine *eng, dp__block *b, dp__failure *failure) {
    if (failure) { dp__failure_release(eng, failure); dp__store(&b->failure, NULL, DP__RELAXED); }
}
/* Profiling: one record per run, from when dp__execute started it (only
   while the profiler was on: t_start is 0 otherwise) until now. */
static void dp__prof_add(dp__prof_buf *pb, const dp_engine *eng, const dp__block *b, int thread, uint64_t end) {
    dp__mutex_lock(&pb->m);
    if (dp__reserve(eng, &pb->recs, &pb->cap, pb->n, sizeof *pb->recs, 1024) == 0) {
        dp__prof_rec *r = &pb->recs[pb->n++];
        snprintf(r->name, sizeof r->name, "%s", b->name ? b->name : "(unnamed)");
        r->dev_type = b->ctx.dev_type ? b->ctx.dev_type : DP_DEV_CPU;
        r->dev_id = b->ctx.dev_id;
        r->thread = thread;
        r->start = b->t_start;
        r->end = end;
    }
    dp__mutex_unlock(&pb->m);
}
static void dp__profile_end(dp_engine *eng, dp__block *b) {
    if (b->kind != DP__KIND_WAIT && b->t_start) {   /* a wait block's word is prev_wait, which a pusher may be writing */
        dp__worker *bw = b->worker;
        dp__prof_add(bw ? &bw->prof : &eng->inline_prof, eng, b, bw ? bw->global_index : -1, dp__now_ns());
    }
}
/* Block return and counters: the block goes back to its pool, and the
   pre-created op it ran (if any) loses the run's reference; on a worker
   both in batches. Once back in its pool the block may be reused by
   another push at once. */
static void dp__recycle_block(dp_engine *eng, dp__block *b, dp__worker *w, int32_t unlinked) {
    dp__opobj *op = b->op;
    if (w) dp__store(&w->completed, dp__load(&w->completed, DP__RELAXED) + 1, DP__RELAXED);
    else dp__fetch_add(&eng->completed_inline, 1, DP__RELAXED);
    if (eng->chain) dp__block_unref(eng, b, 1 + unlinked);   /* it may stay some variable's last element */
    else if (w) dp__worker_put(eng, w, b);
    else dp__pool_put(eng, b);
    if (op && w) dp__worker_unref_op(eng, w, op);
    else if (op) dp__op_unref(eng, op, 1);
}

/* Completes b: settles its failure, releases its variables (which may make
   ops ready) and dispatches those; returns the one this worker should run
   next (see dp__dispatch_ready), if keep_for is set. The order matters: the
   cleanup runs before the variables are released, so a waiter sees it
   done; the block is recycled before the ops it made ready are dispatched;
   the completion is counted last. */
static dp__block *dp__finish(dp_engine *eng, dp__block *b, int status, const char *message, dp__worker *keep_for) {
    dp__worker *w = dp__finish_enter(eng);
    dp__block *ready = NULL, *kept;
    int32_t unlinked = 0;
    dp__failure *failure = dp__settle_failure(eng, b, status, message);
    dp__profile_end(eng, b);
    dp__block_cleanup(b);
    if (dp__tracing(eng)) dp__trace_op(eng, DP_TRACE_COMPLETE, b, status);
    dp__block_set_state(b, DP__ST_DONE, DP__RELAXED);
    if (b->kind == DP__KIND_DELETE) dp__retire_var(eng, b);
    else unlinked = dp__release_vars(eng, b, failure, &ready);
    if (!eng->chain) dp__drop_failure(eng, b, failure);   /* a chain engine's block keeps it (>>chain) */
    dp__recycle_block(eng, b, w, unlinked);
    kept = dp__dispatch_ready(eng, ready, keep_for);
    dp__finish_leave(eng, w);
    return kept;
}

/* >>dispatch --------------------------------------------------------------
   Every route of a ready op (MXNet's PushToExecute): a wait block, and every
   op of the naive engine, runs on the thread that made it ready; an op of
   the threaded engines goes to the queue of the pool its engine, context
   and property name (dp__route), or, made ready by a completion on a worker
   of that pool, stays with that worker (dp__dispatch_ready). */
static dp__group *dp__lazy_group(dp_engine *eng, dp__aptr *slot, int nthreads, int prioritized, dp_ctx ctx, int is_gpu, int is_copy);
/* Where a ready op runs on the threaded engines: its group, or NULL if that
   group's threads could not be started. */
static dp__group *dp__route(dp_engine *eng, dp__block *b) {
    dp_prop prop = dp__prop(b);
    int copy = prop == DP_PROP_COPY_TO_GPU || prop == DP_PROP_COPY_FROM_GPU;
    const dp_engine_desc *d = &eng->desc;
    if (d->type == DP_ENGINE_POOLED) return (copy || prop == DP_PROP_IO) && d->gpu_copy_nthreads ? (dp__group *)dp__load(&eng->io_group, DP__ACQUIRE) : eng->task_group;
    if (prop == DP_PROP_IO && d->gpu_copy_nthreads) {   /* one IO pool, started by the first IO op, whatever the device */
        dp_ctx c; c.dev_type = DP_DEV_CPU; c.dev_id = 0;
        return dp__lazy_group(eng, &eng->io_group, d->gpu_copy_nthreads, 0, c, 0, 0);
    }
    if (b->ctx.dev_type == DP_DEV_GPU) {
        int dev = b->ctx.dev_id;
        if (copy && d->gpu_copy_nthreads) return dp__lazy_group(eng, &eng->copy_groups[dev], d->gpu_copy_nthreads, 1, b->ctx, 1, 1);
        return dp__lazy_group(eng, &eng->gpu_groups[dev], d->gpu_worker_nthreads, 1, b->ctx, 1, 0);
    }
    if (prop == DP_PROP_CPU_PRIORITIZED && eng->prio_group) return eng->prio_group;
    {
        dp_ctx c; c.dev_type = DP_DEV_CPU; c.dev_id = b->ctx.dev_type == DP_DEV_CPU_PINNED ? 0 : b->ctx.dev_id;
        return dp__lazy_group(eng, &eng->cpu_groups[c.dev_id], d->cpu_worker_nthreads, 0, c, 0, 0);
    }
}

/* Runs b on this thread: every op of the naive engine, and wait blocks on
   every engine. Ops made ready while one runs wait in a thread-local list,
   so a long chain runs in a loop, not a deep recursion (also a chain of
   timed waits that gave up, each of which makes the next one ready). */
static void dp__run_here(dp_engine *eng, dp__block *b) {
    if (b->kind == DP__KIND_WAIT && b->arg == dp__tls_own_wait) {   /* this thread blocks on it next: it cannot wait in the list */
        dp__run_wait(b->eng, b);
        return;
    }
    dp__set_next(b, NULL);
    if (dp__tls_naive_tail) dp__set_next(dp__tls_naive_tail, b); else dp__tls_naive_head = b;
    dp__tls_naive_tail = b;
    if (dp__tls_naive_draining) return;
    dp__tls_naive_draining = 1;
    while (dp__tls_naive_head) {
        dp__block *x = dp__tls_naive_head;
        dp__tls_naive_head = dp__next(x);
        if (!dp__tls_naive_head) dp__tls_naive_tail = NULL;
        if (x->kind == DP__KIND_WAIT) dp__run_wait(x->eng, x); else dp__execute(x->eng, x, NULL);
    }
    dp__tls_naive_draining = 0;
    (void)eng;
}
/* Whether b runs on the thread that made it ready rather than in a pool. */
static int dp__runs_here(const dp_engine *eng, const dp__block *b) {
    return b->kind == DP__KIND_WAIT || eng->desc.type == DP_ENGINE_NAIVE;
}
/* Whether b, made ready by its own push, starts on the pushing thread: also
   a DP_PROP_ASYNC op of the threaded engines. */
static int dp__runs_on_pusher(const dp_engine *eng, const dp__block *b) {
    return dp__runs_here(eng, b) || dp__prop(b) == DP_PROP_ASYNC;
}
/* Sends one ready op on its way; from_pusher: its own push made it ready. */
static void dp__dispatch(dp_engine *eng, dp__block *b, int from_pusher) {
    dp__group *g;
    if (dp__runs_here(eng, b)) { dp__run_here(eng, b); return; }
    if (from_pusher && dp__runs_on_pusher(eng, b)) { dp__execute(eng, b, NULL); return; }
    g = dp__route(eng, b);
    if (!g) {   /* could not start the pool: run here rather than lose the op */
        DP__LOG(eng, DP_LOG_ERROR, THREAD_CREATE, "running '%s' on the calling thread", b->name ? b->name : "(unnamed)");
        dp__execute(eng, b, NULL);
        return;
    }
    dp__queue_push(eng, &g->q, b, b);
}

/* Puts b, made ready on worker w for w's own FIFO pool, on top of w's
   deque (counted). 0 when the deque is full (counted as an overflow): the
   caller sends b to the shared queue. */
static int dp__deque_keep(dp__worker *w, dp__block *b) {
    if (dp__deque_push(&w->deque, b)) { dp__count_own(&w->deque_pushes); return 1; }
    dp__count_own(&w->deque_overflows);
    return 0;
}
/* Sends the ops a completion made ready (linked by next) on their way. Ops
   for the same group go in one queue append. If keep_for is a worker (the
   calling thread's), the first op for that worker's own group is returned
   instead of queued: the worker runs it next, with its data still in cache
   and no queue round trip (a chain of dependent ops stays on one worker,
   cut every DP__SHARED_EVERY ops by the fairness rule: see >>fairness).
   The others for its group go to its own deque in a FIFO pool (see >>queues). */
static dp__block *dp__dispatch_ready(dp_engine *eng, dp__block *ready, dp__worker *keep_for) {
    dp__block *kept = NULL, *first = NULL, *last = NULL;
    dp__group *cur = NULL;
    int to_deque = 0;
    while (ready) {
        dp__block *b = ready;
        dp__group *g = NULL;
        ready = dp__next(b);
        if (!dp__runs_here(eng, b)) g = dp__route(eng, b);
        if (g && keep_for && g == keep_for->group) {
            if (!kept) { kept = b; continue; }
            if (!g->q.prioritized && dp__deque_keep(keep_for, b)) { to_deque = 1; continue; }   /* full: to the shared queue below */
        }
        if (g != cur || !g) {
            if (first) dp__queue_push(eng, &cur->q, first, last);
            first = NULL; cur = g;
        }
        if (!g) { dp__dispatch(eng, b, 0); continue; }   /* waits, naive, or a pool that failed to start */
        if (first) dp__set_next(last, b); else first = b;
        last = b;
    }
    if (first) dp__queue_push(eng, &cur->q, first, last);
    if (to_deque) dp__pool_nudge(eng, &keep_for->group->q);
    return kept;
}


/* >>workers -------------------------------------------------------------
   A worker thread (MXNet's ThreadedEnginePerDevice worker loop): takes a
   ready op, runs it (dp__execute), and runs next what its completion made
   ready for it. Between ops it is spinning (looking for work) or asleep on
   its queue's condition variable:
     - it looks at its own deque, the shared queue and its peers' deques;
     - the last spinner to find work, if more is queued behind it or a push
       came in since it looked, wakes one sleeper to take over the search,
       so a burst spreads over the pool;
     - a spinner that finds nothing pauses DP__SPIN_PAUSES times, then
       yields DP__SPIN_YIELDS times, then sleeps. The yields matter when
       there are more threads than cores (the default: one worker per core
       plus the pushing thread): a spinner that shares a core with the
       pusher gives the core back instead of starving the work's source.
   No wake-up is lost: a worker counts itself a sleeper before its last look
   at the shared queue and the peers' deques, a last spinner leaves the
   spinning count before it looks for a push or an op in a deque, and a
   pusher appends (a worker stores its deque's bottom) before it reads
   either count; all sequentially consistent, so one side always sees the
   other. A worker's own deque needs no such care when a completion fills
   it: only the worker adds to it, and it looks there before it looks
   anywhere else. Helping waits (>>callers) steal from the deques too, but
   no op waits for them: the workers stay responsible for every op of
   their pool, and a helping wait's sleep and wake-up (help_asleep) only
   decide how soon it helps. */
#define DP__SPIN_PAUSES 64         /* empty looks with a pause instruction ... */
#define DP__SPIN_YIELDS 256        /* ... then with sched_yield, before sleeping */
static dp__block *dp__gpu_settle_group(dp_engine *eng, dp__worker *self, int *pending);
static void dp__gpu_worker_start(dp__worker *w);
static void dp__gpu_worker_drain(dp__worker *w);
static void dp__gpu_worker_end(dp__worker *w);
static dp__block *dp__worker_fair_turn(dp__worker *w);
static int dp__worker_defer_next(dp__worker *w, dp__block *b);
DP__COLD static int dp__range_help(dp__worker *w);            /* >>ranges */
static int dp__range_open_any(dp__group *g);
/* Whether g's pool has work since its queue was last seen empty: a push, or
   an op in a worker's deque. Pairs with dp__queue_push and dp__queue_nudge:
   the pusher appends (a worker stores its deque's bottom), then reads
   `spinning`; the last spinner leaves `spinning`, then calls this; all
   sequentially consistent, so one of them sees the other. A FIFO whose last
   op was taken holds only its stub, with the tail pointing at it, until the
   next push. */
static int dp__group_has_work(dp__group *g) {
    dp__queue *q = &g->q;
    int r, i;
    if (!q->prioritized) {
        if (dp__load(&q->tail, DP__SEQ_CST) != (void *)q->stub) return 1;
        for (i = 0; i < g->nworkers; i++) {
            dp__deque *d = &g->workers[i].deque;
            uint64_t t = dp__load(&d->top, DP__SEQ_CST);
            if (dp__deque_count(dp__load(&d->bottom, DP__SEQ_CST), t) > 0) return 1;
        }
        return 0;
    }
    dp__mutex_lock(&q->m);
    r = q->nheap > 0 || q->lhead;
    dp__mutex_unlock(&q->m);
    return r;
}
/* The last spinner to find work hands the search on if more is queued:
   what it saw behind its op, or what a push or a peer's deque added since. */
static dp__block *dp__worker_found(dp__worker *w, dp__block *b, int more) {
    dp__group *g = w->group;
    DEPENG_TEST_HOOK(worker_found);     /* between looking at the queue and leaving `spinning` */
    if (dp__fetch_add(&g->q.spinning, -1, DP__SEQ_CST) == 1) {
        int work = more || dp__group_has_work(g);
        if (!work && !dp__range_open_any(g)) return b;
        if (dp__load(&g->q.sleepers, DP__SEQ_CST) != 0) dp__queue_wake(&g->q);
        else if (work && dp__load(&w->eng->help_asleep, DP__SEQ_CST) != 0) dp__help_wake(w->eng, &g->q);   /* all busy: a helping wait takes it */
    }
    return b;
}
/* Steals an op from the deque of one of g's workers but self (-1: the
   thief is no worker of g: a caller, see >>callers), trying them in turn
   from a random one (*seed, xorshift), so that thieves spread over the
   victims. *lost counts the steals that lost a race (look again rather
   than sleep), *more says the victim has more. */
static dp__block *dp__steal_from(dp__group *g, int self, uint32_t *seed, int *lost, int *more) {
    int n = g->nworkers - (self >= 0), i, start;
    uint32_t x = *seed;
    if (n < 1) return NULL;
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    *seed = x;
    start = (int)(x % (uint32_t)n);
    for (i = 0; i < n; i++) {
        int lost_here = 0, k = (start + i) % n;
        dp__worker *v = &g->workers[self >= 0 ? (self + 1 + k) % g->nworkers : k];
        dp__block *b = dp__deque_steal(&v->deque, &lost_here, more);
        if (b) return b;
        *lost += lost_here;
    }
    return NULL;
}
/* Steals an op for w from a peer's deque (counted); *lost as above, as a flag. */
static dp__block *dp__steal(dp__worker *w, int *lost, int *more) {
    int lost_n = 0;
    dp__block *b = dp__steal_from(w->group, w->index, &w->steal_seed, &lost_n, more);
    if (b) dp__count_own(&w->steals);
    if (lost_n) { *lost = 1; dp__store(&w->steal_retries, dp__load(&w->steal_retries, DP__RELAXED) + (uint64_t)lost_n, DP__RELAXED); }
    return b;
}
/* The next op from w's own deque (FIFO pools), newest first; NULL when it
   is empty. After DP__SHARED_EVERY own ops in a row, an op from elsewhere
   first. */
static dp__block *dp__worker_own(dp__worker *w) {
    dp__block *b;
    if (w->group->q.prioritized) { w->own_streak = 0; return NULL; }   /* no deque: the heap next */
    if ((b = dp__worker_fair_turn(w)) != NULL) return b;
    b = dp__deque_pop(&w->deque);
    w->own_streak = b ? w->own_streak + 1 : 0;
    return b;
}
/* Sleeps until woken (returns 1) or, having looked at the queue once more
   as a registered sleeper, finds work or the stop flag (returns 0, with *b
   or *stop set). Called spinning; returns spinning. */
DP__COLD static int dp__worker_sleep(dp__worker *w, dp__block **b, int *busy, int *more, int *stop) {
    dp__queue *q = &w->group->q;
    dp__mutex_lock(&q->m);
    dp__fetch_add(&q->sleepers, 1, DP__SEQ_CST);
    dp__fetch_add(&q->spinning, -1, DP__SEQ_CST);
    for (;;) {
        if (q->prioritized) { *b = dp__heap_take(q); *busy = 0; *more = q->nheap > 0 || q->lhead; }
        else {
            int lost = 0;
            dp__count_own(&w->queue_takes);
            dp__spin_lock(&q->take_lock); *b = dp__fifo_take(q, busy, more); dp__spin_unlock(&q->take_lock);
            if (!*b && !*busy) { *b = dp__steal(w, &lost, more); *busy = lost || dp__range_open_any(w->group); }
        }
        *stop = q->stop;
        if (*b || *busy || *stop) break;
        dp__cond_wait(&q->cv, &q->m);
        if (q->wakeups > 0) {              /* the waker counted us spinning */
            q->wakeups--;
            dp__fetch_add(&q->sleepers, -1, DP__SEQ_CST);
            dp__mutex_unlock(&q->m);
            return 1;
        }
    }
    dp__fetch_add(&q->spinning, 1, DP__SEQ_CST);
    dp__fetch_add(&q->sleepers, -1, DP__SEQ_CST);
    dp__mutex_unlock(&q->m);
    return 0;
}
/* The next op for worker w: spin a little, then sleep (see the top of >>workers).
   NULL once the group is stopped and empty. */
static dp__block *dp__worker_next(dp__worker *w) {
    dp__queue *q = &w->group->q;
    dp__block *b;
    int busy, more, stop = 0, spins = 0;
    dp__fetch_add(&q->spinning, 1, DP__SEQ_CST);
    for (;;) {
        busy = 0;
        if (dp__queue_peek(q)) {
            b = dp__queue_try_take(q, &busy, &more, &w->queue_takes);
            if (b) return dp__worker_found(w, b, more);
        }
        if (!q->prioritized) {
            int lost = 0;
            b = dp__steal(w, &lost, &more);
            if (b) return dp__worker_found(w, b, more);
            busy |= lost;
        }
        if (w->nevents) {                                  /* GPU ops in flight here or on a peer: settle, never sleep */
            int pending;
            b = dp__gpu_settle_group(w->eng, w, &pending);
            dp__worker_flush(w->eng, w);                    /* waiters see what settled */
            if (b) return dp__worker_found(w, b, 0);
            if (pending && spins >= DP__SPIN_PAUSES) { dp__thread_yield(); continue; }
        }
        if (spins == 0) dp__worker_flush(w->eng, w);       /* going idle: settle up */
        if (!q->prioritized && dp__range_open_any(w->group) && dp__range_help(w)) { spins = 0; continue; }   /* idle and settled: help a range (>>ranges); the cold call only when one is open */
        if (busy || spins < DP__SPIN_PAUSES) { dp__cpu_relax(); spins++; continue; }
        if (spins < DP__SPIN_PAUSES + DP__SPIN_YIELDS) { dp__thread_yield(); spins++; continue; }
        if (dp__worker_sleep(w, &b, &busy, &more, &stop)) { spins = 1; continue; }
        if (b) return dp__worker_found(w, b, more);
        if (stop && !busy) { dp__fetch_add(&q->spinning, -1, DP__SEQ_CST); return NULL; }
        spins = 1;
    }
}
static void dp__worker_main(void *arg) {
    dp__worker *w = (dp__worker *)arg;
    dp_engine *eng = w->eng;
    dp__block *b;
    dp__tls_worker = w;
    dp__fetch_add(&w->group->entered, 1, DP__SEQ_CST);   /* see dp__pool_all_busy */
    if (w->is_gpu) dp__gpu_worker_start(w);
    /* its own deque first (not spinning meanwhile: it is at work), then the
       search; each op, then whatever it made ready for us to run next */
    while ((b = dp__worker_own(w)) != NULL || (b = dp__worker_next(w)) != NULL)
        do b = dp__execute(eng, b, w); while (b && !dp__worker_defer_next(w, b));
    if (w->is_gpu) dp__gpu_worker_drain(w);
    dp__worker_flush(eng, w);
    if (w->is_gpu) dp__gpu_worker_end(w);
    dp__tls_worker = NULL;
}
DP__COLD static void dp__group_destroy(dp_engine *eng, dp__group *g) {
    int i;
    if (!g) return;
    dp__mutex_lock(&g->q.m);
    g->q.stop = 1;
    dp__cond_broadcast(&g->q.cv);
    dp__mutex_unlock(&g->q.m);
    for (i = 0; i < g->nworkers; i++) {
        if (g->workers[i].started) dp__thread_join(g->workers[i].thread);
        dp__free(eng, g->workers[i].prof.recs, g->workers[i].prof.cap * sizeof(dp__prof_rec));
        dp__mutex_destroy(&g->workers[i].prof.m);
    }
    dp__queue_destroy(eng, &g->q);
    dp__free(eng, g->workers, (size_t)g->nworkers * sizeof(dp__worker));
    dp__free(eng, g, sizeof *g);
}
/* A pool of nthreads started workers, or NULL with *why set and logged:
   DP_ERROR_OUT_OF_MEMORY, or DP_ERROR_THREAD when the system refused a
   thread or a lock (the threads started so far are stopped again). */
DP__COLD static dp__group *dp__group_create(dp_engine *eng, int nthreads, int prioritized, dp_ctx ctx, int is_gpu, int is_copy, dp_result *why) {
    dp__group *g = (dp__group *)dp__alloc(eng, sizeof *g);
    int i;
    *why = DP_ERROR_OUT_OF_MEMORY;
    if (g) {
        memset(g, 0, sizeof *g);
        if (!nthreads || (g->workers = (dp__worker *)dp__alloc(eng, (size_t)nthreads * sizeof(dp__worker))) != NULL) *why = dp__queue_init(eng, &g->q, prioritized);
    }
    if (*why != DP_OK) {
        dp__log(eng, DP_LOG_ERROR, *why == DP_ERROR_THREAD ? DP_LOGITEM_THREAD_CREATE : DP_LOGITEM_OUT_OF_MEMORY, __LINE__, "a pool of %d workers", nthreads);
        if (g) dp__free(eng, g->workers, (size_t)nthreads * sizeof(dp__worker));
        dp__free(eng, g, sizeof *g);
        return NULL;
    }
    if (nthreads) memset(g->workers, 0, (size_t)nthreads * sizeof(dp__worker));
    g->nworkers = nthreads;
    g->q.pumped = !nthreads;

    for (i = 0; i < nthreads; i++) {
        dp__worker *w = &g->workers[i];
        w->eng = eng; w->group = g; w->index = i; w->ctx = ctx;
        w->is_gpu = is_gpu; w->is_copy = is_copy;
        w->global_index = dp__fetch_add(&eng->worker_counter, 1, DP__RELAXED);
        w->steal_seed = 2654435761u * (uint32_t)(w->global_index + 1);   /* xorshift needs it nonzero */
        dp__mutex_init(&w->prof.m);
    }
    for (i = 0; i < nthreads; i++) {
        if (dp__thread_create(&g->workers[i].thread, &g->workers[i].start, dp__worker_main, &g->workers[i])) {
            DP__LOG(eng, DP_LOG_ERROR, THREAD_CREATE, "worker %d of %d", i, nthreads);
            dp__group_destroy(eng, g);
            *why = DP_ERROR_THREAD;
            return NULL;
        }
        g->workers[i].started = 1;
    }
    *why = DP_OK;
    return g;
}
/* A lazily created pool: the first op on a device starts its workers. */
static dp__group *dp__lazy_group(dp_engine *eng, dp__aptr *slot, int nthreads, int prioritized, dp_ctx ctx, int is_gpu, int is_copy) {
    dp__group *g = (dp__group *)dp__load(slot, DP__ACQUIRE);
    dp_result why;
    if (g) return g;
    dp__mutex_lock(&eng->create_mtx);
    g = (dp__group *)dp__load(slot, DP__ACQUIRE);
    if (!g) {
        g = dp__group_create(eng, nthreads, prioritized, ctx, is_gpu, is_copy, &why);
        if (g) dp__store(slot, (void *)g, DP__RELEASE);
    }
    dp__mutex_unlock(&eng->create_mtx);
    return g;
}


/* >>ranges ----------------------------------------------------------------
   dp_parallel_for. The range's state (dp__range) lives on the caller's
   stack; the caller opens it in one of its pool's DP__RANGE_SLOTS slots
   (a compare-and-swap from NULL), runs chunks, closes the slot, waits for
   its helpers and frees the slot. Chunks are claimed one at a time by a
   fetch-and-add on the range's next index, so each runs exactly once, and
   the caller, claiming too, never waits for one nobody has started.
   Idle workers (dp__worker_next, after the queues and the peers' deques
   came up empty and their finished ops were counted: between ops) look at
   the slots and help.
   Why the stack is safe. A helper counts itself in the slot's users
   (range_users, in the group, which lives as long as the engine) BEFORE it
   loads the slot's range pointer, and touches the range only between that
   and leaving users. The caller stores DP__RANGE_CLOSED in the slot and
   THEN reads users, waiting until it is 0. All four accesses are
   sequentially consistent, so in their single order: a helper that loaded
   the range pointer counted itself before the close, and the caller's
   read of users after the close sees it, and waits until it leaves (its
   release pairs with the caller's acquire, so what fn wrote is visible when
   dp_parallel_for returns). A helper that counted itself after the close
   loads DP__RANGE_CLOSED or NULL and touches nothing. The slot stays
   closed, not reusable, until users was seen 0, so the count never mixes
   two ranges, and the wait is for the caller's own chunks only: a helper
   claims no chunk after the close's count is exhausted, and the chunks
   already claimed end.
   No deadlock. A thread waits only for helpers running chunks of the range
   it opened; a helper waits only in a nested range of its own chunk's fn.
   The caller does not help other ranges while it waits, so every wait is
   on a deeper level of nesting and the chain ends.
   Waking. Opening a slot, like a push, wakes a sleeper when none is
   spinning (dp__queue_nudge, after the seq_cst CAS); a helper that was the
   last spinner wakes the next one while chunks remain; a sleeper's last
   look sees an open slot (dp__range_open_any) and stays up. */
typedef struct dp__range {
    dp__a64 next;               /* the next chunk to claim */
    char pad_[64 - sizeof(dp__a64)];
    dp_range_fn fn; void *user;
    int64_t n, size, nchunks;
    dp__aptr *job;              /* its slot once opened, else NULL */
} dp__range;
static const char dp__range_closed_mark = 0;
#define DP__RANGE_CLOSED ((void *)&dp__range_closed_mark)
static int dp__range_is_open(void *p) { return p != NULL && p != DP__RANGE_CLOSED; }
/* Whether a slot of g holds an open range: a look at the slot pointers only. */
static int dp__range_open_any(dp__group *g) {
    int i;
    for (i = 0; i < DP__RANGE_SLOTS; i++) if (dp__range_is_open(dp__load(&g->range_job[i], DP__SEQ_CST))) return 1;
    return 0;
}
/* Runs chunks of r until none is left, or, for a helper (g set), until an
   op is ready for its pool, in the shared queue or a worker's deque (where
   a completion leaves what it made ready): ops come first, the caller runs
   the rest; returns 1 then. Whoever claims the last chunk closes the slot
   (the caller's own close later is the same store), so idle workers stop
   looking at a range with nothing left to take and may sleep. */
static int dp__range_run(dp__range *r, dp__group *g) {
    for (;;) {
        int64_t k, b;
        if (g && dp__group_has_work(g)) return 1;
        k = (int64_t)dp__fetch_add(&r->next, 1, DP__RELAXED);
        if (k >= r->nchunks) return 0;
        if (k == r->nchunks - 1 && r->job) {
            void *open = (void *)r;
            dp__cas(r->job, &open, DP__RANGE_CLOSED, DP__SEQ_CST);
        }
        b = k * r->size;
        r->fn(b, r->n - b <= r->size ? r->n : b + r->size, r->user);
    }
}
/* Worker w, spinning and idle, helps the open ranges of its pool; 1 if it
   ran any chunk. It leaves the spinning count while it runs them. */
DP__COLD static int dp__range_help(dp__worker *w) {
    dp__group *g = w->group;
    int i, helped = 0, stop = 0;
    for (i = 0; i < DP__RANGE_SLOTS; i++) {
        dp__range *r;
        if (!dp__range_is_open(dp__load(&g->range_job[i], DP__RELAXED))) continue;
        dp__fetch_add(&g->range_users[i].n, 1, DP__SEQ_CST);
        r = (dp__range *)dp__load(&g->range_job[i], DP__SEQ_CST);
        if (dp__range_is_open(r) && (int64_t)dp__load(&r->next, DP__RELAXED) < r->nchunks) {
            dp_engine *prev = dp__tls_running;
            if (dp__fetch_add(&g->q.spinning, -1, DP__SEQ_CST) == 1
                && ((int64_t)dp__load(&r->next, DP__RELAXED) + 1 < r->nchunks || dp__group_has_work(g)))
                dp__queue_wake(&g->q);
            dp__tls_running = w->eng;   /* fn's waits are refused, as inside an op */
            stop = dp__range_run(r, g);
            dp__tls_running = prev;
            dp__fetch_add(&g->q.spinning, 1, DP__SEQ_CST);
            helped = 1;
        }
        dp__fetch_add(&g->range_users[i].n, -1, DP__SEQ_CST);   /* r is not touched after this */
        if (stop) break;   /* an op is ready: back to the ops */
    }
    return helped;
}
DP_API dp_result dp_parallel_for(dp_engine *eng, const dp_range_desc *d) {
    dp__range r;
    dp__group *g = NULL;
    dp__worker *w = dp__tls_worker;
    int threads = 1, slot;
    int64_t s;
    if (!eng || !d || !d->fn || (d->n | d->grain) < 0) {
        int null = !eng || !d || !d->fn;
        dp__log(eng, DP_LOG_ERROR, null ? DP_LOGITEM_NULL_ARGUMENT : DP_LOGITEM_NEGATIVE_COUNT, __LINE__, "dp_parallel_for: %s",
                !eng ? "NULL engine" : !d ? "NULL desc" : !d->fn ? "NULL fn" : "negative n or grain");
        return DP_ERROR_INVALID_ARGS;
    }
    DEPENG_TEST_HOOK(parallel_for);     /* tests count the kernels' ranges */
    if (eng->desc.type == DP_ENGINE_POOLED) g = eng->task_group;
    else if (eng->desc.type != DP_ENGINE_NAIVE) {
        if (w && w->eng == eng && !w->is_gpu && w->group == (dp__group *)dp__load(&eng->cpu_groups[w->ctx.dev_id], DP__ACQUIRE))
            g = w->group;   /* a CPU pool's worker: its own pool (not the IO or priority pool) */
        else if (eng->desc.cpu_worker_nthreads > 0) {
            dp_ctx c; c.dev_type = DP_DEV_CPU; c.dev_id = 0;
            g = dp__lazy_group(eng, &eng->cpu_groups[0], eng->desc.cpu_worker_nthreads, 0, c, 0, 0);
        }
    }
    if (g) threads += g->nworkers;
    s = d->grain;
    if (!d->deterministic || !s) {
        int64_t t = d->deterministic ? 256 : 64 * (int64_t)threads, c = d->n / t + (d->n % t != 0);
        if (s < c) s = c;
    }
    if (s < 1) s = 1;
    dp__store(&r.next, 0, DP__RELAXED);
    r.fn = d->fn; r.user = d->user; r.n = d->n; r.size = s;
    r.nchunks = d->n / s + (d->n % s != 0);
    r.job = NULL;
    slot = DP__RANGE_SLOTS;
    if (g && r.nchunks > 1)
        for (slot = 0; slot < DP__RANGE_SLOTS; slot++) {
            void *expect = NULL;
            r.job = &g->range_job[slot];   /* published by the CAS that opens it */
            if (dp__cas(&g->range_job[slot], &expect, (void *)&r, DP__SEQ_CST)) { dp__queue_nudge(&g->q); break; }
            r.job = NULL;
        }
    {   /* the caller's chunks count as inside an op, as a worker's do: fn's waits are refused */
        dp_engine *prev = dp__tls_running;
        if (!prev) dp__tls_running = eng;
        dp__range_run(&r, NULL);
        dp__tls_running = prev;
    }
    if (slot < DP__RANGE_SLOTS) {
        int spins = 0;
        dp__store(&g->range_job[slot], DP__RANGE_CLOSED, DP__SEQ_CST);
        while (dp__load(&g->range_users[slot].n, DP__SEQ_CST) != 0)
            if (++spins < DP__SPIN_PAUSES) dp__cpu_relax(); else dp__thread_yield();
        dp__store(&g->range_job[slot], NULL, DP__RELEASE);
    }
    return DP_OK;
}


/* >>push ------------------------------------------------------------------
   A push (MXNet's ThreadedEngine::Push and PushAsync): the op's variables
   are resolved, deduplicated and sorted by address, a block is taken from
   a pool with its count of unmet dependencies set to one per variable plus
   one, the pusher's hold; then, with all of the op's variables locked, it
   is appended to each (append read, append write) and gets its push
   number. Grants made meanwhile never make it ready: the hold keeps it.
   Releasing the hold last makes it ready if every variable granted at
   once, and it is dispatched; otherwise the last grant, made by some op's
   completion, makes it ready. */
typedef struct dp__vref { dp__var *v; uint32_t id; int write; } dp__vref;   /* id: the handle's low 32 bits, generation included (its salt was checked) */

static int dp__vref_cmp(const void *a, const void *b) {
    const dp__vref *x = (const dp__vref *)a, *y = (const dp__vref *)b;
    if (x->v != y->v) return (uintptr_t)x->v < (uintptr_t)y->v ? -1 : 1;
    return y->write - x->write;     /* the write sorts first among duplicates */
}
/* A device the engine can run on. DP_DEV_CPU_PINNED is host memory: its
   ops run on CPU 0 (whether such memory can be had is the array layer's
   question). */
static dp_result dp__check_ctx(dp_engine *eng, dp_ctx c, const char *name) {
    if ((c.dev_type == DP_DEV_DEFAULT || c.dev_type == DP_DEV_CPU) && c.dev_id >= 0 && c.dev_id < DP__MAX_DEV) return DP_OK;
    if (c.dev_type == DP_DEV_GPU && eng->desc.gpu_backend && c.dev_id >= 0 && c.dev_id < eng->gpu_count) return DP_OK;
    if (c.dev_type == DP_DEV_CPU_PINNED && c.dev_id >= 0 && c.dev_id < DP__MAX_DEV) return DP_OK;
    DP__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "'%s': device type %d id %d (%d GPUs)", name ? name : "(unnamed)",
            (int)c.dev_type, (int)c.dev_id, eng->gpu_count);
    return DP_ERROR_BAD_CONTEXT;
}
/* Resolves, deduplicates (write wins) and sorts an op's variables by address,
   the order in which a push locks them. refs must hold nr + nw entries.
   Returns the number of distinct variables, or a negative dp_result. The
   usual handful of variables is insertion-sorted as it is looked up.
   Generations are checked later, under the variables' locks. */
DP__COLD static int dp__invalid_var(dp_engine *eng, const dp_push_desc *d, uint64_t handle) {
    char what[96];
    snprintf(what, sizeof what, "'%s': var", d->name ? d->name : "(unnamed)");
    dp__log_bad_handle(eng, &eng->vars, DP_LOGITEM_INVALID_VAR, what, handle);
    return DP_ERROR_INVALID_HANDLE;
}
static int dp__resolve(dp_engine *eng, const dp_push_desc *d, dp__vref *refs) {
    int i, j, n = 0, total = d->num_reads + d->num_writes;
    for (i = 0; i < total; i++) {
        int write = i >= d->num_reads;
        uint64_t handle = write ? d->writes[i - d->num_reads].id : d->reads[i].id;
        dp__var *v = (dp__var *)dp__table_locate(&eng->vars, handle);
        uint32_t id = (uint32_t)handle;    /* the salt matched: the low bits are the rest */
        if (!v) return dp__invalid_var(eng, d, handle);
        if (total > 8) j = n;               /* sorted below */
        else {
            for (j = 0; j < n && refs[j].v != v; j++) {}
            if (j < n && refs[j].id != id) return dp__invalid_var(eng, d, handle);   /* one of the two is stale */
            if (j < n) { refs[j].write |= write; continue; }    /* listed twice: write wins */
            for (j = n; j > 0 && (uintptr_t)refs[j - 1].v > (uintptr_t)v; j--) refs[j] = refs[j - 1];
        }
        refs[j].v = v; refs[j].id = id; refs[j].write = write;
        n++;
    }
    if (total > 8) {
        int out = 0;
        qsort(refs, (size_t)n, sizeof *refs, dp__vref_cmp);     /* the write sorts first among duplicates */
        for (i = 0; i < n; i++) {
            if (out > 0 && refs[out - 1].v == refs[i].v) {
                if (refs[out - 1].id != refs[i].id) return dp__invalid_var(eng, d, dp__table_handle(&eng->vars, refs[i].id));
                continue;
            }
            refs[out++] = refs[i];
        }
        n = out;
    }
    return n;
}
static dp_result dp__check_desc(dp_engine *eng, const dp_push_desc *d) {
    const char *name = d ? (d->name ? d->name : "(unnamed)") : "(null desc)";
    if (!eng || !d) { DP__LOG(eng, DP_LOG_ERROR, NULL_FUNCTION, "NULL engine or desc"); return DP_ERROR_INVALID_ARGS; }
    if ((d->fn == NULL) == (d->async_fn == NULL) && d->prop != DP_PROP_DELETE_VAR) {
        DP__LOG(eng, DP_LOG_ERROR, NULL_FUNCTION, "'%s'", name);
        return DP_ERROR_INVALID_ARGS;
    }
    if (d->num_reads < 0 || d->num_writes < 0 || (d->num_reads && !d->reads) || (d->num_writes && !d->writes)
        || d->num_reads > DP_PUSH_MAX_VARS || d->num_writes > DP_PUSH_MAX_VARS) {
        if (d->num_reads >= 0 && d->num_writes >= 0 && (d->num_reads > DP_PUSH_MAX_VARS || d->num_writes > DP_PUSH_MAX_VARS))
            DP__LOG(eng, DP_LOG_ERROR, NEGATIVE_COUNT, "'%s': %d reads, %d writes: a list holds at most %d variables",
                    name, d->num_reads, d->num_writes, DP_PUSH_MAX_VARS);
        else DP__LOG(eng, DP_LOG_ERROR, NEGATIVE_COUNT, "'%s': %d reads, %d writes: %s", name, d->num_reads, d->num_writes,
                     d->num_reads < 0 || d->num_writes < 0 ? "a count is negative" : "a NULL array with a count");
        return DP_ERROR_INVALID_ARGS;
    }
    if ((int)d->prop < 0 || d->prop >= DP__PROP_COUNT) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_PROP, "'%s': property %d", name, (int)d->prop);
        return DP_ERROR_INVALID_ARGS;
    }
    return dp__check_ctx(eng, d->ctx, d->name);
}
/* Appends b to every one of its variables (they are locked): its reads,
   then its writes. */
static void dp__append_vars(dp_engine *eng, dp__block *b, dp__block **ready) {
    dp__var **vars = dp__block_vars(b);
    uint32_t i, n = (uint32_t)b->nread + b->nwrite;
    for (i = 0; i < b->nread; i++) dp__append_read(eng, vars[i], b, ready);
    for (; i < n; i++) dp__append_write(eng, vars[i], b, ready);
}
/* Locks (or unlocks) an op's variables in address order: reads and writes are
   each sorted, so walking both runs merged gives the global order. */
static void dp__lock_vars(dp__block *b, int lock) {
    dp__var **vars = dp__block_vars(b);
    uint32_t r = 0, w = b->nread, n = (uint32_t)b->nread + b->nwrite;
    while (r < b->nread || w < n) {
        dp__var *v;
        if (w >= n || (r < b->nread && (uintptr_t)vars[r] < (uintptr_t)vars[w])) v = vars[r++];
        else v = vars[w++];
        if (lock) dp__spin_lock_counted(&v->lock, &b->eng->var_lock_contended); else dp__spin_unlock(&v->lock);
    }
}
static void dp__pace_pusher(dp_engine *eng, dp_ctx ctx, dp_prop prop);   /* >>pacing */
/* Queues a prepared block on its variables. All of the op's variables are
   locked together, in address order, so that two pushes from different
   threads are ordered the same way on every variable they share (no cycle,
   no deadlock). A variable deleted meanwhile, or a queue that cannot grow,
   fails the push; nothing is queued then. */
static dp_result dp__queue_and_go(dp_engine *eng, dp__block *b, const uint32_t *ids) {
    uint32_t n = (uint32_t)b->nread + b->nwrite, i;
    dp__var **vars = dp__block_vars(b);
    dp__block *ready = NULL, *spare = NULL;
    dp_ctx ctx;
    dp_prop prop;
    int paced;
    for (i = 0; i < n; i++) dp__prefetch(vars[i]);   /* the lines move here in parallel, not one per lock */
    dp__lock_vars(b, 1);
    for (i = 0; i < n; i++) {
        if ((uint32_t)dp__load(&vars[i]->gen, DP__RELAXED) != dp__id_gen(ids[i])) {
            uint32_t id = ids[i];
            dp__lock_vars(b, 0);
            DP__LOG(eng, DP_LOG_ERROR, INVALID_VAR, "'%s': var 0x%08x is deleted or was never created",
                    b->name ? b->name : "(unnamed)", (unsigned)id);
            return DP_ERROR_INVALID_HANDLE;
        }
    }
    if (eng->chain && dp__chain_reserve_runs(eng, dp__chain_runs_needed(b), &spare) != 0) {
        dp__lock_vars(b, 0);
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "'%s': a read run", b->name ? b->name : "(unnamed)");
        return DP_ERROR_OUT_OF_MEMORY;
    }
    for (i = 0; !eng->chain && i < n; i++) {
        if (dp__must_wait(vars[i], i >= b->nread) && dp__var_reserve(eng, vars[i]) != 0) {
            dp__lock_vars(b, 0);
            DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "'%s': queue of var 0x%08x",
                    b->name ? b->name : "(unnamed)", (unsigned)ids[i]);
            return DP_ERROR_OUT_OF_MEMORY;
        }
    }
    /* the push number; counting it makes the op pending for dp_wait_all */
    dp__store(&b->state, (dp__fetch_add(&eng->seq, 1, DP__SEQ_CST) + 1) << 2 | DP__ST_PENDING, DP__RELAXED);
    if (eng->chain) dp__chain_append_vars(eng, b, &spare, &ready);
    else dp__append_vars(eng, b, &ready);
    if (b->kind == DP__KIND_DELETE) dp__table_invalidate(vars[0]);  /* handle dies now */
    if (eng->desc.trace.record_graph) dp__record_graph(eng, b);
    if (dp__tracing(eng)) dp__trace_op(eng, DP_TRACE_PUSH, b, 0);
    dp__lock_vars(b, 0);
    dp__chain_return_runs(eng, spare);   /* none: one was taken per run started */
    ctx = b->ctx; prop = dp__prop(b);
    /* a wait or a deletion is no op pushed ahead of the workers: it neither
       paces nor, with push_runs_ops, runs ops on a thread about to wait */
    paced = b->kind == DP__KIND_SYNC || b->kind == DP__KIND_ASYNC;
    if (dp__fetch_add(&b->wait, -1, DP__ACQ_REL) == 1) { dp__tls_pushes_waiting = 0; dp__dispatch(eng, b, 1); }
    else if (paced) dp__pace_pusher(eng, ctx, prop);   /* b may be gone already */
    (void)ready;   /* grants made during a push never reach zero: the pusher holds one */
    return DP_OK;
}

static dp__block *dp__block_new(dp_engine *eng, uint32_t n, const dp_push_desc *d, int kind) {
    int cls = dp__class_for(n + (d->cleanup ? 1u : 0u));
    dp__block *b = cls < DP__NUM_CLASSES ? dp__pool_get(eng, cls) : NULL;
    if (!b) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "operation block for %u variables", (unsigned)n); return NULL; }
    dp__store(&b->wait, (int32_t)n + 1, DP__RELAXED);
    dp__store(&b->state, (uint64_t)DP__ST_PENDING, DP__RELAXED);
    b->kind = (uint8_t)kind; b->cls = (uint8_t)cls;
    b->prop = (uint8_t)((d->prop == DP_PROP_NO_SKIP ? DP_PROP_NORMAL : d->prop)
                        | (d->no_skip || d->prop == DP_PROP_NO_SKIP ? DP__NO_SKIP_BIT : 0u));
    b->priority = d->priority;
    b->ctx = d->ctx;
    if (b->ctx.dev_type == DP_DEV_DEFAULT) b->ctx.dev_type = DP_DEV_CPU;
    b->eng = eng;
    b->op = NULL;
    if (kind == DP__KIND_ASYNC) b->afn = d->async_fn; else b->fn = d->fn;
    b->arg = d->arg;
    b->name = d->name;
    dp__store(&b->failure, NULL, DP__RELAXED);
    dp__set_next(b, NULL);
    b->worker = NULL; b->t_start = 0;
    if (d->cleanup) dp__block_set_cleanup(b, n, d->cleanup);
    return b;
}
/* A block for desc d: its variables resolved (refs: room for all of d's),
   sorted reads first, their handle ids in ids. */
static dp_result dp__block_prepare(dp_engine *eng, const dp_push_desc *d, int kind, dp__vref *refs, uint32_t *ids,
                                   dp__block **out) {
    int n = dp__resolve(eng, d, refs), i, k = 0, pass;
    dp__block *b;
    if (n < 0) return (dp_result)n;
    b = dp__block_new(eng, (uint32_t)n, d, kind);
    if (!b) return DP_ERROR_OUT_OF_MEMORY;
    for (pass = 0; pass < 2; pass++)          /* reads first, then writes */
        for (i = 0; i < n; i++)
            if (refs[i].write == pass) { dp__block_vars(b)[k] = refs[i].v; ids[k] = refs[i].id; k++; }
    b->nread = 0;
    for (i = 0; i < n; i++) b->nread = (uint16_t)(b->nread + (refs[i].write == 0));
    b->nwrite = (uint16_t)(n - b->nread);
    *out = b;
    return DP_OK;
}
/* One-shot push of a resolved desc; kind says sync, async, wait or delete. */
static dp_result dp__push_resolved(dp_engine *eng, const dp_push_desc *d, int kind, dp__waiter *waiter) {
    dp__vref stack_refs[32], *refs = stack_refs;
    uint32_t stack_ids[32], *ids = stack_ids;
    int total = d->num_reads + d->num_writes;
    dp__block *b = NULL;
    dp_result r;
    if (total > 32) {
        refs = (dp__vref *)dp__alloc(eng, (size_t)total * (sizeof *refs + sizeof *ids));
        if (!refs) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "variable list"); return DP_ERROR_OUT_OF_MEMORY; }
        ids = (uint32_t *)(void *)(refs + total);
    }
    r = dp__block_prepare(eng, d, kind, refs, ids, &b);
    if (r != DP_OK) goto done;
    if (kind == DP__KIND_WAIT) b->arg = waiter;
    r = dp__queue_and_go(eng, b, ids);
    if (r != DP_OK) dp__pool_put(eng, b);
done:
    if (refs != stack_refs) dp__free(eng, refs, (size_t)total * (sizeof *refs + sizeof *ids));
    return r;
}

/* Batch push: the blocks b[0..count-1] (prepared, not yet on any queue;
   ids[k] the handle ids of b[k]'s variables) are queued in that order as
   count single pushes would be, with no other push between them. Every
   variable of the batch is locked once (all together, in address order,
   the order single pushes use too), the push numbers are taken in one
   step, and the ops ready at once reach their pool in one append. On error
   nothing is queued and the caller keeps the blocks. */
/* Sorts vars[0..n) by address, moving uses[] along (Shell's sort, gaps
   of Ciura's sequence: no call per comparison, a batch has at most a few
   hundred distinct variables). */
static void dp__sort_vars(dp__var **vars, uint32_t *uses, size_t n) {
    static const size_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    size_t g, i, j;
    for (g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        size_t gap = gaps[g];
        for (i = gap; i < n; i++) {
            dp__var *v = vars[i];
            uint32_t u = uses[i];
            for (j = i; j >= gap && (uintptr_t)vars[j - gap] > (uintptr_t)v; j -= gap) { vars[j] = vars[j - gap]; uses[j] = uses[j - gap]; }
            vars[j] = v; uses[j] = u;
        }
    }
}
/* The runs a batch on chain engines may take from the pools (its
   variables locked and sorted by address): a read takes one when its
   variable's last element, as the batch leaves it so far, is neither an
   open run nor a write that can host the run (dp__can_host); a write
   closes the run. last_kind[i] says which for vars[i] (the caller's uses
   array, free in this form): 0 neither, 1 an open run, 2 a hosting write. */
static uint32_t dp__batch_runs_needed(dp__block **b, int count, dp__var **vars, uint32_t *last_kind, size_t nvars) {
    uint32_t need = 0, i;
    size_t x;
    int k;
    for (x = 0; x < nvars; x++) {
        uintptr_t last = vars[x]->last;
        last_kind[x] = last & DP__RUN_BIT ? 1u : last && dp__can_host((dp__elem *)last) ? 2u : 0u;
    }
    for (k = 0; k < count; k++) {
        dp__var **bv = dp__block_vars(b[k]);
        for (i = 0; i < (uint32_t)b[k]->nread + b[k]->nwrite; i++) {
            size_t lo = 0, hi = nvars;   /* binary search: vars is sorted */
            while (lo < hi) { size_t mid = lo + (hi - lo) / 2; if ((uintptr_t)vars[mid] < (uintptr_t)bv[i]) lo = mid + 1; else hi = mid; }
            if (i >= b[k]->nread) last_kind[lo] = i == b[k]->nread && dp__block_can_host(b[k]) ? 2u : 0u;
            else if (last_kind[lo] != 1u) { need += last_kind[lo] == 0u; last_kind[lo] = 1u; }
        }
    }
    return need;
}
static void dp__unlock_all(dp__var **vars, size_t n) { size_t i; for (i = 0; i < n; i++) dp__spin_unlock(&vars[i]->lock); }
static dp_result dp__queue_batch(dp_engine *eng, dp__block **b, const uint32_t *const *ids, int count) {
    dp__var *stack_vars[64], **vars = stack_vars;
    uint32_t stack_uses[64], *uses = stack_uses;
    int32_t stack_slots[128], *slots = stack_slots;
    size_t total = 0, i, j = 0, hcap = 16, bytes = 0;
    dp__block *ready = NULL, *ready_tail = NULL, *spare = NULL;
    uint64_t base;
    uint32_t nruns = 0;
    unsigned waited = 0;
    dp_ctx wctx;
    dp_prop wprop = DP_PROP_NORMAL;
    int k;
    memset(&wctx, 0, sizeof wctx);
    for (k = 0; k < count; k++) total += (size_t)b[k]->nread + b[k]->nwrite;
    while (hcap < 2 * total) hcap *= 2;
    if (total > 64) {
        bytes = total * (sizeof *vars + sizeof *uses) + hcap * sizeof *slots;
        vars = (dp__var **)dp__alloc(eng, bytes);
        if (!vars) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "batch of %d ops: variable list", count); return DP_ERROR_OUT_OF_MEMORY; }
        uses = (uint32_t *)(void *)(vars + total);
        slots = (int32_t *)(void *)(uses + total);
    }
    /* the distinct variables, each with its number of uses (a hash set of
       indices into vars, open addressing), then in address order */
    for (i = 0; i < hcap; i++) slots[i] = -1;
    for (k = 0; k < count; k++) {
        dp__var **bv = dp__block_vars(b[k]);
        for (i = 0; i < (size_t)b[k]->nread + b[k]->nwrite; i++) {
            size_t h = (size_t)(((uint64_t)(uintptr_t)bv[i] * 0x9E3779B97F4A7C15ull) >> 40) & (hcap - 1);
            while (slots[h] >= 0 && vars[slots[h]] != bv[i]) h = (h + 1) & (hcap - 1);
            if (slots[h] >= 0) { uses[slots[h]]++; continue; }
            slots[h] = (int32_t)j; vars[j] = bv[i]; uses[j] = 1; j++;
        }
    }
    dp__sort_vars(vars, uses, j);
    for (i = 0; i < j; i++) dp__spin_lock_counted(&vars[i]->lock, &eng->var_lock_contended);
    for (k = 0; k < count; k++) {
        dp__var **bv = dp__block_vars(b[k]);
        for (i = 0; i < (size_t)b[k]->nread + b[k]->nwrite; i++) {
            if ((uint32_t)dp__load(&bv[i]->gen, DP__RELAXED) != dp__id_gen(ids[k][i])) {
                dp__unlock_all(vars, j);
                DP__LOG(eng, DP_LOG_ERROR, INVALID_VAR, "'%s' (op %d of the batch): var 0x%08x is deleted or was never created",
                        b[k]->name ? b[k]->name : "(unnamed)", k, (unsigned)ids[k][i]);
                if (vars != stack_vars) dp__free(eng, vars, bytes);
                return DP_ERROR_INVALID_HANDLE;
            }
        }
    }
    /* room for every access that may queue: each use of a variable, but the
       first when nothing holds or waits for it (that one is granted) */
    if (eng->chain) nruns = dp__batch_runs_needed(b, count, vars, uses, j);
    if (nruns && dp__chain_reserve_runs(eng, nruns, &spare) != 0) {
        dp__unlock_all(vars, j);
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "batch of %d ops: read runs", count);
        if (vars != stack_vars) dp__free(eng, vars, bytes);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    for (i = 0; !eng->chain && i < j; i++) {
        dp__var *v = vars[i];
        uint32_t more = uses[i] - (!dp__var_waiting(v) && v->nreaders == 0);
        if (more && dp__var_reserve_n(eng, v, more) != 0) {
            dp__unlock_all(vars, j);
            DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "batch of %d ops: queue of var 0x%08x", count, (unsigned)v->handle_id);
            if (vars != stack_vars) dp__free(eng, vars, bytes);
            return DP_ERROR_OUT_OF_MEMORY;
        }
    }
    base = dp__fetch_add(&eng->seq, (uint64_t)count, DP__SEQ_CST);
    for (k = 0; k < count; k++) {
        dp__block *unused = NULL;
        dp__store(&b[k]->state, (base + (uint64_t)k + 1u) << 2 | DP__ST_PENDING, DP__RELAXED);
        if (eng->chain) dp__chain_append_vars(eng, b[k], &spare, &unused);
        else dp__append_vars(eng, b[k], &unused);
        if (eng->desc.trace.record_graph) dp__record_graph(eng, b[k]);
        if (dp__tracing(eng)) dp__trace_op(eng, DP_TRACE_PUSH, b[k], 0);
        (void)unused;   /* grants during a push never reach zero: the pusher holds one */
    }
    dp__unlock_all(vars, j);
    dp__chain_return_runs(eng, spare);
    if (vars != stack_vars) dp__free(eng, vars, bytes);
    /* release the pusher's hold on each, in push order; a block not ready
       may run and be recycled as soon as its hold is gone */
    for (k = 0; k < count; k++) {
        dp__block *x = b[k];
        dp_ctx ctx = x->ctx;
        dp_prop prop = dp__prop(x);
        int direct = dp__runs_on_pusher(eng, x);
        if (dp__fetch_add(&x->wait, -1, DP__ACQ_REL) != 1) { waited++; wctx = ctx; wprop = prop; continue; }
        if (direct) { dp__dispatch(eng, x, 1); continue; }
        dp__set_next(x, NULL);
        if (ready_tail) dp__set_next(ready_tail, x); else ready = x;
        ready_tail = x;
    }
    if (ready) dp__dispatch_ready(eng, ready, NULL);
    if (!waited) dp__tls_pushes_waiting = 0;
    while (waited--) dp__pace_pusher(eng, wctx, wprop);
    return DP_OK;
}


/* >>naive fast path -------------------------------------------------------
   The naive engine runs an op on the pushing thread. When a sync op's
   variables are all free at push time, it runs at once, without an operation
   block (MXNet's NaiveEngine runs every op like this). It takes and gives
   back its grants like any op, so an op that another thread pushes onto one
   of its variables meanwhile queues behind it and is granted when it
   completes. Anything unusual (a busy, deleted or failed variable, many
   variables, tracing, profiling, a GPU context, a push from inside a naive
   op) takes the normal path, which also reports every error. */
#define DP__INLINE_MAX_VARS 4

/* Takes the grants of every variable in refs (sorted by address) at once,
   by the rule (dp__must_wait), or none: 0 when one is busy, deleted or
   carries a failure. */
static int dp__inline_grant_all(dp_engine *eng, const dp__vref *refs, int n) {
    int i, ok = 1;
    for (i = 0; i < n; i++) dp__spin_lock_counted(&refs[i].v->lock, &eng->var_lock_contended);
    for (i = 0; i < n && ok; i++) {
        dp__var *v = refs[i].v;
        ok = (uint32_t)dp__load(&v->gen, DP__RELAXED) == dp__id_gen(refs[i].id) && !dp__must_wait(v, refs[i].write)
             && !dp__var_failure(eng, v);
    }
    for (i = 0; ok && i < n; i++) dp__var_take(refs[i].v, refs[i].write);
    for (i = n - 1; i >= 0; i--) dp__spin_unlock(&refs[i].v->lock);
    return ok;
}
/* Gives the grants back as any completing op does (f: the op's failure, or
   NULL), then runs or queues what that made ready. */
static void dp__inline_release_all(dp_engine *eng, const dp__vref *refs, int n, dp__failure *f) {
    dp__block *ready = NULL;
    int i;
    for (i = 0; i < n; i++) {
        if (refs[i].write) dp__complete_write(eng, refs[i].v, f, &ready);
        else dp__complete_read(eng, refs[i].v, &ready);
    }
    if (f) dp__failure_release(eng, f);           /* the reference an op block would hold */
    if (ready) dp__dispatch_ready(eng, ready, NULL);   /* last: runs what we made ready */
}
/* Runs fn(arg) now if every variable in refs can be granted at once;
   returns 0, having done nothing, otherwise. */
static int dp__run_inline(dp_engine *eng, const dp_push_desc *d, const dp__vref *refs, int n) {
    dp_sync_fn fn = d->fn;        /* copied: the op may change or free the memory d is in */
    void *arg = d->arg;
    const char *name = d->name;
    dp_cleanup_fn cleanup = d->cleanup;
    dp_run_ctx rc;
    dp__run_state rs;
    dp_engine *prev_running = dp__tls_running;
    dp__failure *f = NULL;
    int status;
    if (!dp__inline_grant_all(eng, refs, n)) return 0;
    dp__fetch_add(&eng->inline_ops, 1, DP__RELAXED);
    rc.engine = eng; rc.ctx = d->ctx; rc.ctx.dev_type = DP_DEV_CPU; rc.stream = NULL; rc.worker = -1; rc.input_status = 0;
    rs.block = NULL; rs.has_message = 0;
    rc.internal = &rs;
    dp__tls_running = eng;
    status = fn(&rc, arg);
    dp__tls_running = prev_running;
    if (cleanup) dp__run_cleanup(eng, cleanup, arg);
    if (status) f = dp__failure_new(eng, name, status, rs.has_message ? rs.message : NULL);
    dp__inline_release_all(eng, refs, n, f);
    return 1;
}
/* Whether a push may try the fast path. The checks mirror dp__check_desc's
   for the common case; whatever fails here goes the normal way. */
static int dp__inline_candidate(const dp_engine *eng, const dp_push_desc *d) {
    return eng && d && eng->inline_ok && d->fn && !d->async_fn
        && (d->prop == DP_PROP_NORMAL || d->prop == DP_PROP_CPU_PRIORITIZED || d->prop == DP_PROP_ASYNC)
        && d->num_reads >= 0 && d->num_writes >= 0 && d->num_reads + d->num_writes <= DP__INLINE_MAX_VARS
        && (d->reads || !d->num_reads) && (d->writes || !d->num_writes)
        && (d->ctx.dev_type == DP_DEV_DEFAULT || d->ctx.dev_type == DP_DEV_CPU)
        && d->ctx.dev_id >= 0 && d->ctx.dev_id < DP__MAX_DEV
        && !dp__load(&eng->profiling, DP__RELAXED) && !dp__tls_naive_draining;
}
static int dp__push_inline(dp_engine *eng, const dp_push_desc *d) {
    dp__vref refs[DP__INLINE_MAX_VARS];
    int n = dp__resolve(eng, d, refs);
    return n >= 0 && dp__run_inline(eng, d, refs, n);
}

/* >>gpu --------------------------------------------------------------------
   GPU ops. Each GPU worker owns a stream, as in MXNet's per-device engine;
   a GPU op run outside a GPU worker (naive and pooled engines) uses its
   device's shared stream. An op is complete when its stream work is done:
   known from an event recorded behind it (the event ring, below), or from a
   stream synchronisation. */
/* The stream for a GPU op run outside a GPU worker (naive / pooled engines):
   one per device, made on first use. */
static void *dp__shared_stream(dp_engine *eng, int dev, int *err) {
    const dp_device_backend *be = eng->desc.gpu_backend;
    dp__mutex_lock(&eng->create_mtx);
    if (!eng->shared_stream_ok[dev]) {
        *err = be->set_device ? be->set_device(dev, be->user) : 0;
        if (!*err) *err = be->stream_create(dev, 0, &eng->shared_stream[dev], be->user);
        if (!*err) eng->shared_stream_ok[dev] = 1;
    } else *err = 0;
    dp__mutex_unlock(&eng->create_mtx);
    return eng->shared_stream[dev];
}

static const char *dp__backend_error(const dp_engine *eng, int err) {
    const dp_device_backend *be = eng->desc.gpu_backend;
    return be && be->error_string ? be->error_string(err, be->user) : "device backend error";
}

/* The stream a GPU op runs on: its GPU worker's own, or (naive and pooled
   engines) the device's shared one; NULL for CPU ops. */
static void *dp__block_stream(dp__block *b) {
    if (b->ctx.dev_type != DP_DEV_GPU) return NULL;
    if (b->worker && b->worker->is_gpu) return b->worker->stream;
    return b->eng->shared_stream[b->ctx.dev_id];
}

/* The stream b runs on (*err: the backend's error making it). */
static void *dp__gpu_stream(dp_engine *eng, dp__block *b, dp__worker *w, int *err) {
    if (w && w->is_gpu) { *err = w->stream_err; return w->stream; }
    return dp__shared_stream(eng, b->ctx.dev_id, err);
}
/* Completes b as failed: it has no stream to run on. */
static dp__block *dp__gpu_no_stream(dp_engine *eng, dp__block *b, dp__worker *w, int err) {
    char msg[200];
    snprintf(msg, sizeof msg, "stream for GPU %d: %s", (int)b->ctx.dev_id, dp__backend_error(eng, err));
    dp__block_set_state(b, DP__ST_RUNNING, DP__RELEASE);
    return dp__finish(eng, b, DP_ERROR_BACKEND, msg, w);
}
/* Sets up a GPU worker: its stream and, when the backend has events, its
   ring of DP__GPU_INFLIGHT events (all or none: a short ring would
   complicate the slots). */
static void dp__gpu_worker_start(dp__worker *w) {
    dp_engine *eng = w->eng;
    const dp_device_backend *be = eng->desc.gpu_backend;
    w->stream_err = be->set_device ? be->set_device(w->ctx.dev_id, be->user) : 0;
    if (!w->stream_err) w->stream_err = be->stream_create(w->ctx.dev_id, w->is_copy, &w->stream, be->user);
    if (w->stream_err) DP__LOG(eng, DP_LOG_ERROR, BACKEND, "GPU %d worker: %s", (int)w->ctx.dev_id, dp__backend_error(eng, w->stream_err));
    else if (be->event_create && be->event_destroy && be->event_record && be->event_query)
        while (w->nevents < DP__GPU_INFLIGHT && be->event_create(w->ctx.dev_id, &w->events[w->nevents], be->user) == 0) w->nevents++;
    if (w->nevents && w->nevents < DP__GPU_INFLIGHT) {
        while (w->nevents > 0) { w->nevents--; be->event_destroy(w->ctx.dev_id, w->events[w->nevents], be->user); }
    }
}
/* GPU ops in flight (MXNet's ThreadedEnginePerDevice, with events instead of a
   stream synchronisation per op). An op is complete only when its stream
   work is done, but the worker need not wait for that: it records an event
   behind the op's work and takes its next op. Ops on one stream finish in
   order, so the oldest in-flight op is the only one worth asking about.
   While the owner runs another op's function, its idle peers in the group
   settle its ring, so a completion never waits for unrelated host work.
   dp__gpu_settle completes w's ops whose events have passed (waiting for
   all of them when `all`; a peer only tries the lock); it returns an op
   their completion made ready for `self` to run next. */
static dp__block *dp__gpu_settle(dp_engine *eng, dp__worker *w, dp__worker *self, int all) {
    const dp_device_backend *be = eng->desc.gpu_backend;
    dp__block *mine = NULL;
    while (dp__load(&w->inflight_count, DP__ACQUIRE) > 0) {
        dp__block *b, *next;
        char msg[200];
        int slot, err;
        if (w != self) { if (!dp__spin_trylock(&w->inflight_lock)) break; }
        else dp__spin_lock(&w->inflight_lock);
        if (dp__load(&w->inflight_count, DP__RELAXED) == 0) { dp__spin_unlock(&w->inflight_lock); break; }
        slot = w->inflight_head;
        err = be->event_query(w->ctx.dev_id, w->events[slot], be->user);
        if (err == DP_EVENT_PENDING) {
            dp__spin_unlock(&w->inflight_lock);
            if (!all) break;
            dp__thread_yield();
            continue;
        }
        b = w->inflight[slot];
        w->inflight_head = (slot + 1) % DP__GPU_INFLIGHT;
        dp__fetch_add(&w->inflight_count, -1, DP__RELEASE);
        dp__spin_unlock(&w->inflight_lock);
        if (err) snprintf(msg, sizeof msg, "GPU %d stream work: %s", (int)w->ctx.dev_id, dp__backend_error(eng, err));
        next = dp__finish(eng, b, err ? DP_ERROR_BACKEND : 0, err ? msg : NULL, self);
        if (next && mine) dp__dispatch(eng, next, 0);    /* run one, queue the rest */
        else if (next) mine = next;
    }
    return mine;
}
/* An idle worker settles its group's rings (its own first); an op made
   ready for it is returned. *pending: some ring still has ops in flight. */
static dp__block *dp__gpu_settle_group(dp_engine *eng, dp__worker *self, int *pending) {
    dp__group *g = self->group;
    dp__block *mine = NULL;
    int i;
    *pending = 0;
    for (i = -1; i < g->nworkers; i++) {
        dp__worker *w = i < 0 ? self : &g->workers[i];
        dp__block *next;
        if ((i >= 0 && w == self) || !dp__load(&w->inflight_count, DP__ACQUIRE)) continue;   /* (a peer's nevents is its own) */
        next = dp__gpu_settle(eng, w, self, 0);
        if (next && mine) dp__dispatch(eng, next, 0); else if (next) mine = next;
        *pending |= dp__load(&w->inflight_count, DP__ACQUIRE) > 0;
    }
    return mine;
}
/* Puts b in flight behind an event on w's stream; NULL, or an op to run
   next that settling older ones made ready. Recording failed: complete b
   the old way, with a stream synchronisation. */
static dp__block *dp__gpu_in_flight(dp_engine *eng, dp__worker *w, dp__block *b) {
    const dp_device_backend *be = eng->desc.gpu_backend;
    int slot, err;
    while (dp__load(&w->inflight_count, DP__ACQUIRE) == DP__GPU_INFLIGHT) {   /* full: the oldest must pass first */
        dp__block *next = dp__gpu_settle(eng, w, w, 0);
        if (next) dp__dispatch(eng, next, 0);
        else if (dp__load(&w->inflight_count, DP__ACQUIRE) == DP__GPU_INFLIGHT) dp__thread_yield();
    }
    dp__spin_lock(&w->inflight_lock);
    slot = (w->inflight_head + dp__load(&w->inflight_count, DP__RELAXED)) % DP__GPU_INFLIGHT;
    err = be->event_record(w->ctx.dev_id, w->events[slot], w->stream, be->user);
    if (!err) {
        w->inflight[slot] = b;
        dp__fetch_add(&w->inflight_count, 1, DP__RELEASE);
    }
    dp__spin_unlock(&w->inflight_lock);
    if (!err) dp__queue_wake(&w->group->q);   /* a sleeping peer settles it if this worker gets busy */
    if (err) {
        int sync = be->stream_synchronize ? be->stream_synchronize(w->ctx.dev_id, w->stream, be->user) : 0;
        char msg[200];
        if (sync) snprintf(msg, sizeof msg, "stream synchronize: %s", dp__backend_error(eng, sync));
        return dp__finish(eng, b, sync ? DP_ERROR_BACKEND : 0, sync ? msg : NULL, w);
    }
    return dp__gpu_settle(eng, w, w, 0);
}


/* Completes b after its function returned status, whose work was queued on
   stream: a good op on a worker with events goes in flight (its message, if
   any, is dropped, as dp__finish does); otherwise the stream is
   synchronised first. */
static dp__block *dp__gpu_finish(dp_engine *eng, dp__block *b, dp__worker *w, void *stream, int status, const char *message) {
    const dp_device_backend *be = eng->desc.gpu_backend;
    if (status == 0 && w && w->nevents) return dp__gpu_in_flight(eng, w, b);
    if (be->stream_synchronize) {
        int err = be->stream_synchronize(b->ctx.dev_id, stream, be->user);
        if (err && status == 0) {
            char msg[200];
            snprintf(msg, sizeof msg, "stream synchronize: %s", dp__backend_error(eng, err));
            return dp__finish(eng, b, DP_ERROR_BACKEND, msg, w);
        }
    }
    return dp__finish(eng, b, status, message, w);
}
/* A stopped GPU worker completes what it still has in flight (this cannot
   happen: dp_wait_all waits for those ops before a destroy stops it; but
   settle), then frees its events. */
static void dp__gpu_worker_drain(dp__worker *w) {
    dp_engine *eng = w->eng;
    const dp_device_backend *be = eng->desc.gpu_backend;
    while (dp__load(&w->inflight_count, DP__ACQUIRE)) {
        dp__block *b = dp__gpu_settle(eng, w, w, 1);
        while (b) b = dp__execute(eng, b, w);
    }
    while (w->nevents > 0) { w->nevents--; be->event_destroy(w->ctx.dev_id, w->events[w->nevents], be->user); }
}
/* Last, after the worker's completions are counted: its stream goes. */
static void dp__gpu_worker_end(dp__worker *w) {
    const dp_device_backend *be = w->eng->desc.gpu_backend;
    if (!w->stream_err && be->stream_destroy) be->stream_destroy(w->ctx.dev_id, w->stream, be->user);
}

/* >>statistics -------------------------------------------------------------
   dp_engine_stats: counters kept where the work happens (each worker's own,
   each queue's, the engine's), added up only when asked for. */
/* Adds up the ops g's workers have completed. */
static void dp__group_completed(dp__group *g, uint64_t *sum) {
    int i;
    if (g) for (i = 0; i < g->nworkers; i++) *sum += dp__load(&g->workers[i].completed, DP__RELAXED);
}
/* Adds g's queue contention counters to out. */
DP__COLD static void dp__group_contention(dp__group *g, dp_engine_stats *out) {
    int i;
    if (!g) return;
    out->queue_takes += (uint64_t)dp__load(&g->q.outside_takes, DP__RELAXED);
    for (i = 0; i < g->nworkers; i++) {
        dp__worker *w = &g->workers[i];
        out->queue_takes += (uint64_t)dp__load(&w->queue_takes, DP__RELAXED);
        out->deque_pushes += (uint64_t)dp__load(&w->deque_pushes, DP__RELAXED);
        out->deque_overflows += (uint64_t)dp__load(&w->deque_overflows, DP__RELAXED);
        out->steals += (uint64_t)dp__load(&w->steals, DP__RELAXED);
        out->steal_retries += (uint64_t)dp__load(&w->steal_retries, DP__RELAXED);
    }
    out->queue_lock_contended += (uint64_t)dp__load(&g->q.lock_contended, DP__RELAXED);
    out->queue_busy_retries += (uint64_t)dp__load(&g->q.busy_retries, DP__RELAXED);
    out->worker_wakeups += (uint64_t)dp__load(&g->q.woken, DP__RELAXED);
}
/* Every op with a push number completed so far, wherever it ran: by a pool's
   workers, or outside them (waits, async completions, the naive engine).
   Read without stopping anyone, so a moment old. */
static uint64_t dp__completed_total(dp_engine *eng) {
    uint64_t sum = dp__load(&eng->completed_inline, DP__RELAXED);
    int i;
    for (i = 0; i < DP__MAX_DEV; i++) {
        dp__group_completed((dp__group *)dp__load(&eng->cpu_groups[i], DP__ACQUIRE), &sum);
        dp__group_completed((dp__group *)dp__load(&eng->gpu_groups[i], DP__ACQUIRE), &sum);
        dp__group_completed((dp__group *)dp__load(&eng->copy_groups[i], DP__ACQUIRE), &sum);
    }
    dp__group_completed(eng->prio_group, &sum);
    dp__group_completed(eng->task_group, &sum);
    dp__group_completed((dp__group *)dp__load(&eng->io_group, DP__ACQUIRE), &sum);
    return sum;
}
DP__COLD DP_IMPL dp_result dp_engine_stats_get(dp_engine *eng, dp_engine_stats *out) {
    int i;
    if (out) memset(out, 0, sizeof *out);
    if (!eng || !out) return dp__null_arg(eng, "dp_engine_stats_get", eng ? "out" : "engine");
    out->completed = dp__completed_total(eng);
    out->pushed = dp__load(&eng->seq, DP__RELAXED);
    out->pending_ops = out->pushed - dp__load(&eng->done, DP__RELAXED);
    out->pushed += dp__load(&eng->inline_ops, DP__RELAXED);
    out->completed += dp__load(&eng->inline_ops, DP__RELAXED);
    out->failed = dp__load(&eng->failed, DP__RELAXED);
    out->skipped = dp__load(&eng->skipped, DP__RELAXED);
    out->live_vars = dp__load(&eng->vars.live, DP__RELAXED);
    out->queue_bytes = dp__load(&eng->queue_bytes, DP__RELAXED);
    for (i = 0; i < DP__NUM_CLASSES * DP__POOL_STRIPES; i++) {
        out->pool_bytes += dp__load(&eng->pools[i / DP__NUM_CLASSES][i % DP__NUM_CLASSES].bytes, DP__RELAXED);
        out->pool_cas_retries += dp__load(&eng->pools[i / DP__NUM_CLASSES][i % DP__NUM_CLASSES].cas_retries, DP__RELAXED);
    }
    out->var_lock_contended = dp__load(&eng->var_lock_contended, DP__RELAXED);
    out->op_ref_cas_retries = dp__load(&eng->op_ref_cas_retries, DP__RELAXED);
    out->pusher_ran = dp__load(&eng->pusher_ran, DP__RELAXED);
    out->caller_ran = dp__load(&eng->caller_ran, DP__RELAXED);
    out->caller_stole = dp__load(&eng->caller_stole, DP__RELAXED);
    out->helper_wakeups = dp__load(&eng->helper_woken, DP__RELAXED);
    for (i = 0; i < DP__MAX_DEV; i++) {
        dp__group_contention((dp__group *)dp__load(&eng->cpu_groups[i], DP__ACQUIRE), out);
        dp__group_contention((dp__group *)dp__load(&eng->gpu_groups[i], DP__ACQUIRE), out);
        dp__group_contention((dp__group *)dp__load(&eng->copy_groups[i], DP__ACQUIRE), out);
    }
    dp__group_contention(eng->prio_group, out);
    dp__group_contention(eng->task_group, out);
    dp__group_contention((dp__group *)dp__load(&eng->io_group, DP__ACQUIRE), out);
    for (i = 0; i < (int)DP__MAX_CHUNKS; i++) {
        if (dp__load(&eng->vars.chunks[i], DP__RELAXED)) out->handle_bytes += eng->vars.obj_size * DP__CHUNK_SLOTS;
        if (dp__load(&eng->ops.chunks[i], DP__RELAXED)) out->handle_bytes += eng->ops.obj_size * DP__CHUNK_SLOTS;
    }
    return DP_OK;
}

/* >>pacing -----------------------------------------------------------------
   A thread whose pushes keep having to wait is ahead of the workers: what
   it pushes now cannot run before what they are running.
   When the machine has no core to spare, it competes with them for one,
   and a worker it pushes off the core holds an op that the other workers
   soon wait for. So every DP__PACE_PUSHES waiting pushes in a row, while
   more than DP__PACE_BACKLOG ops are pending and every worker of the op's
   pool is running one, the pusher yields its core: a no-op when nothing
   else wants it. Not with a short backlog, and not while a worker looks
   for work or sleeps: a pusher that gave its core away then would let the
   workers run dry. With desc.push_runs_ops the pusher works instead of
   yielding: it runs up to DP__PACE_PUSHES ready ops of that pool, about as
   many as it pushed since it last looked (see dp__pusher_run). */
#define DP__PACE_PUSHES 64u
#define DP__PACE_BACKLOG 2048u
/* The pusher runs ready ops of g itself (desc.push_runs_ops): up to
   DP__PACE_PUSHES, taken from the shared queue's head like a worker's, run
   as on a thread outside the pool (dp__execute with no worker: ops they make
   ready go to the queues, completions are counted at once). Not from the
   workers' deques: those ops were made ready by a completion on that worker,
   which has their data in its cache and will run them soon; taken by the
   pusher on a machine without a spare core, W4 ran 11% slower. Stops early
   when the queue is empty or a push into it is half done; returns how many
   it ran. */
DP__COLD static unsigned dp__pusher_run(dp_engine *eng, dp__group *g) {
    unsigned i;
    for (i = 0; i < DP__PACE_PUSHES; i++) {
        int busy, more;
        dp__block *b = dp__queue_peek(&g->q) ? dp__queue_try_take(&g->q, &busy, &more, NULL) : NULL;
        if (!b) break;
        dp__fetch_add(&eng->pusher_ran, 1, DP__RELAXED);
        dp__execute(eng, b, NULL);
    }
    return i;
}
/* ctx and prop are the op's, read before the push let go of it: once its
   count is released, another thread may run, recycle and reuse the block. */
static void dp__pace_pusher(dp_engine *eng, dp_ctx ctx, dp_prop prop) {
    dp__group *g;
    /* a worker pushes outside an op only from a cleanup, in the middle of a
       completion: it neither gives its core away nor runs ops nested there */
    if (eng->desc.no_push_yield || dp__tls_running || dp__tls_worker || ++dp__tls_pushes_waiting % DP__PACE_PUSHES != 0) return;
    if (eng->desc.type == DP_ENGINE_POOLED) g = eng->task_group;
    else if (eng->desc.type == DP_ENGINE_PERDEVICE && ctx.dev_type == DP_DEV_CPU && prop == DP_PROP_NORMAL)
        g = (dp__group *)dp__load(&eng->cpu_groups[ctx.dev_id], DP__ACQUIRE);
    else return;
    if (!g || dp__load(&g->q.spinning, DP__RELAXED) != 0 || dp__load(&g->q.sleepers, DP__RELAXED) != 0) return;
    if (g->q.pumped && !eng->desc.push_runs_ops) return;   /* no worker to give the core to */
    if ((uint64_t)dp__load(&eng->seq, DP__RELAXED) - dp__completed_total(eng) <= DP__PACE_BACKLOG) return;
    if (eng->desc.push_runs_ops && dp__pusher_run(eng, g) > 0) return;
    DEPENG_TEST_HOOK(pusher_yield);    /* without push_runs_ops, or with no ready op to run */
    dp__thread_yield();
}

/* >>fairness ---------------------------------------------------------------
   LIFO at the owner's end of a deque and running next could each keep an op
   waiting for ever while a long run of made-ready ops goes on above it: an
   op pushed from outside (in the shared queue), or one left at the bottom
   of the deque when nobody is idle to steal it (one worker, or all busy).
   So after DP__SHARED_EVERY ops in a row taken from its own deque or run
   next, a worker takes one op from elsewhere before it goes on: the shared
   queue's head or its own deque's oldest op (a steal from itself: only a
   CAS on top, which the owner may do too), each tried first in turn; the op
   it was about to run next waits on top of its deque meanwhile (in the
   shared queue when the deque is full). So the shared queue's head and the
   deque's oldest op each wait at most about 2 x DP__SHARED_EVERY ops of
   that worker. In a priority pool (no deques) a worker's run of ops run
   next is cut the same way: the next one goes back into the heap, so an op
   of higher priority waits at most DP__SHARED_EVERY ops (one of the same
   priority waits for the run's ops pushed before it: the heap's order is
   priority, then push order).
   An op run next that this rule sets aside in a FIFO pool is announced like
   a push (dp__worker_set_aside), because the worker then looks elsewhere
   first and may take the op another thread was woken for. */
#define DP__SHARED_EVERY 64        /* own ops in a row before a look elsewhere */
/* After a streak of own ops: one op from the shared queue's head or from
   w's own deque's oldest end, each tried first in turn; NULL when both are
   empty. */
DP__COLD static dp__block *dp__worker_look_elsewhere(dp__worker *w) {
    dp__queue *q = &w->group->q;
    dp__block *b = NULL;
    int busy, more, lost = 0, i;
    w->own_streak = 0;
    w->look_turn ^= 1;
    for (i = 0; i < 2 && !b; i++) {
        if ((w->look_turn + i) & 1) { if (dp__queue_peek(q)) b = dp__queue_try_take(q, &busy, &more, &w->queue_takes); }
        else b = dp__deque_steal(&w->deque, &lost, &more);
    }
    return b;
}
/* Whether w's streak of own ops has reached DP__SHARED_EVERY: then an op
   from elsewhere, or NULL when there is none (the streak starts again). */
static dp__block *dp__worker_fair_turn(dp__worker *w) {
    return w->own_streak >= DP__SHARED_EVERY ? dp__worker_look_elsewhere(w) : NULL;
}
/* Sets b, the op w was about to run next, aside. In a priority pool, back
   into the heap, where an op of higher priority comes first; w takes from
   the heap next, as any spinner would, so nobody needs waking. In a FIFO
   pool, on top of w's deque, or in the shared queue when the deque is
   full, announced like any op made ready: w looks elsewhere first and may
   take the op a spinner or a woken sleeper was looking for, and that one
   must then find b. */
DP__COLD static int dp__worker_set_aside(dp__worker *w, dp__block *b) {
    dp__queue *q = &w->group->q;
    if (q->prioritized) {
        dp__mutex_lock_counted(&q->m, &q->lock_contended);
        dp__heap_insert(w->eng, q, b);
        dp__mutex_unlock(&q->m);
        return 1;
    }
    if (dp__deque_keep(w, b)) dp__pool_nudge(w->eng, q);
    else dp__queue_push(w->eng, q, b, b);
    return 1;
}
/* b is the op w's last completion left it to run next. Counted in w's
   streak; at DP__SHARED_EVERY it is set aside (returns 1), so that w takes
   an op from elsewhere before it runs b. */
static int dp__worker_defer_next(dp__worker *w, dp__block *b) {
    return ++w->own_streak >= DP__SHARED_EVERY && dp__worker_set_aside(w, b);
}

/* >>public ---------------------------------------------------------------- */
DP__COLD DP_IMPL const char *dp_result_string(dp_result r) {
    switch (r) {
    case DP_OK: return "ok";
    case DP_ERROR_INVALID_ARGS: return "invalid arguments";
    case DP_ERROR_INVALID_HANDLE: return "invalid (deleted or never created) handle";
    case DP_ERROR_BAD_CONTEXT: return "unknown device context";
    case DP_ERROR_OUT_OF_MEMORY: return "out of memory";
    case DP_ERROR_OP_FAILED: return "an operation failed";
    case DP_ERROR_IN_OPERATION: return "called from inside an operation of the same engine (would deadlock)";
    case DP_ERROR_THREAD: return "thread or lock creation failed";
    case DP_ERROR_BACKEND: return "device backend error";
    case DP_ERROR_IO: return "file could not be opened, read or written";
    case DP_ERROR_FORMAT: return "malformed or unsupported file contents";
    case DP_ERROR_TIMEOUT: return "timed out before the work was done";
    }
    return "unknown result";
}

static dp_result dp__var_delete(dp_engine *eng, dp_var var, dp_sync_fn fn, void *arg, dp_ctx ctx, dp_cleanup_fn cleanup);
static dp_result dp__push(dp_engine *eng, const dp_push_desc *desc) {
    dp_result r;
    if (dp__inline_candidate(eng, desc) && dp__push_inline(eng, desc)) return DP_OK;
    if ((r = dp__check_desc(eng, desc)) != DP_OK) return r;
    if (desc->prop == DP_PROP_DELETE_VAR) {
        if (desc->num_reads != 0 || desc->num_writes != 1 || desc->async_fn) {
            DP__LOG(eng, DP_LOG_ERROR, BAD_PROP, "'%s': DELETE_VAR takes one write and a sync fn (or none)", desc->name ? desc->name : "(unnamed)");
            return DP_ERROR_INVALID_ARGS;
        }
        return dp__var_delete(eng, desc->writes[0], desc->fn, desc->arg, desc->ctx, desc->cleanup);
    }
    return dp__push_resolved(eng, desc, desc->fn ? DP__KIND_SYNC : DP__KIND_ASYNC, NULL);
}
DP_IMPL dp_result dp_push(dp_engine *eng, const dp_push_desc *desc) {
    dp_result r = dp__push(eng, desc);
    if (r != DP_OK && desc && desc->cleanup) dp__run_cleanup(eng, desc->cleanup, desc->arg);   /* refused: arg is ours to free */
    return r;
}
/* dp_push_batch without the cleanups of a refused batch. */
DP__COLD static dp_result dp__push_batch(dp_engine *eng, const dp_push_desc *descs, int count) {
    size_t totv = 0, maxv = 0, off = 0, bytes;
    dp__block **blocks;
    uint32_t **ids, *idbuf;
    dp__vref *refs;
    dp_result r = DP_OK;
    int k, made;
    if (!eng || (count > 0 && !descs)) { DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "dp_push_batch: NULL %s", eng ? "descs" : "engine"); return DP_ERROR_INVALID_ARGS; }
    if (count < 0) { DP__LOG(eng, DP_LOG_ERROR, NEGATIVE_COUNT, "dp_push_batch: count %d", count); return DP_ERROR_INVALID_ARGS; }
    for (k = 0; k < count; k++) {
        size_t n;
        if ((r = dp__check_desc(eng, &descs[k])) != DP_OK) return r;
        if (descs[k].prop == DP_PROP_DELETE_VAR) {
            DP__LOG(eng, DP_LOG_ERROR, BAD_PROP, "dp_push_batch: op %d deletes a variable (use dp_var_delete)", k);
            return DP_ERROR_INVALID_ARGS;
        }
        n = (size_t)descs[k].num_reads + (size_t)descs[k].num_writes;
        totv += n;
        if (n > maxv) maxv = n;
    }
    if (count == 0) return DP_OK;
    /* on a 32-bit target the size could wrap: such a batch is refused as out of memory */
    bytes = (size_t)count * (sizeof *blocks + sizeof *ids) + maxv * sizeof *refs + totv * sizeof *idbuf;
    blocks = (size_t)count > SIZE_MAX / 64 || totv > SIZE_MAX / 64 ? NULL : (dp__block **)dp__alloc(eng, bytes);
    if (!blocks) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_push_batch: %d ops", count); return DP_ERROR_OUT_OF_MEMORY; }
    ids = (uint32_t **)(void *)(blocks + count);
    refs = (dp__vref *)(void *)(ids + count);
    idbuf = (uint32_t *)(void *)(refs + maxv);
    for (made = 0; made < count; made++) {
        const dp_push_desc *d = &descs[made];
        ids[made] = idbuf + off;
        r = dp__block_prepare(eng, d, d->fn ? DP__KIND_SYNC : DP__KIND_ASYNC, refs, ids[made], &blocks[made]);
        if (r != DP_OK) break;
        off += (size_t)d->num_reads + (size_t)d->num_writes;
    }
    if (r == DP_OK) r = dp__queue_batch(eng, blocks, (const uint32_t *const *)ids, count);
    if (r != DP_OK) for (k = 0; k < made; k++) dp__pool_put(eng, blocks[k]);
    dp__free(eng, blocks, bytes);
    return r;
}
DP__COLD DP_IMPL dp_result dp_push_batch(dp_engine *eng, const dp_push_desc *descs, int count) {
    dp_result r = dp__push_batch(eng, descs, count);
    int k;
    if (r != DP_OK && descs)   /* refused: every arg is ours to free */
        for (k = 0; k < count; k++) if (descs[k].cleanup) dp__run_cleanup(eng, descs[k].cleanup, descs[k].arg);
    return r;
}
static dp_result dp__push_short(dp_engine *eng, dp_sync_fn fn, dp_async_fn afn, void *arg, const dp_var *reads,
                                int num_reads, const dp_var *writes, int num_writes) {
    dp_push_desc d;
    memset(&d, 0, sizeof d);
    d.fn = fn; d.async_fn = afn; d.arg = arg;
    d.reads = reads; d.num_reads = num_reads; d.writes = writes; d.num_writes = num_writes;
    return dp_push(eng, &d);
}
DP_IMPL dp_result dp_push_sync(dp_engine *eng, dp_sync_fn fn, void *arg, const dp_var *reads, int num_reads,
                               const dp_var *writes, int num_writes) {
    return dp__push_short(eng, fn, NULL, arg, reads, num_reads, writes, num_writes);
}
DP_IMPL dp_result dp_push_async(dp_engine *eng, dp_async_fn fn, void *arg, const dp_var *reads, int num_reads,
                                const dp_var *writes, int num_writes) {
    return dp__push_short(eng, NULL, fn, arg, reads, num_reads, writes, num_writes);
}
DP_IMPL void dp_complete(dp_completion done, int status, const char *message) {
    dp__block *b = (dp__block *)done.block;
    uint64_t expect = (done.seq << 2) | DP__ST_RUNNING;
    void *stream;
    if (!b) { dp__null_arg(NULL, "dp_complete", "completion token (zeroed, or not the one passed to the op)"); return; }
    /* seq and state change together: a second call, or a token whose block
       was reused by a later op, fails the CAS */
    if (!dp__cas(&b->state, &expect, (done.seq << 2) | DP__ST_DONE, DP__ACQ_REL)) {
        dp_engine *eng = b->eng;    /* blocks live until their engine is destroyed */
        DP__LOG(eng, DP_LOG_ERROR, DOUBLE_COMPLETE, "completion token for op #%llu", (unsigned long long)done.seq);
        return;
    }
    stream = dp__block_stream(b);
    if (stream && b->eng->desc.gpu_backend->stream_synchronize) {
        int err = b->eng->desc.gpu_backend->stream_synchronize(b->ctx.dev_id, stream, b->eng->desc.gpu_backend->user);
        if (err && status == 0) { status = DP_ERROR_BACKEND; message = dp__backend_error(b->eng, err); }
    }
    dp__finish(b->eng, b, status, message, NULL);
}
DP_IMPL void dp_set_error(dp_run_ctx *rc, const char *message) {
    dp__run_state *rs = rc ? (dp__run_state *)rc->internal : NULL;
    if (!rs || !message) { dp__null_arg(rc ? rc->engine : NULL, "dp_set_error", rs ? "message" : "run context (call it inside a sync function)"); return; }
    snprintf(rs->message, sizeof rs->message, "%s", message);
    rs->has_message = 1;
}

DP_IMPL dp_var dp_var_create(dp_engine *eng) {
    dp_var h = {0};
    uint32_t idx;
    dp__var *v;
    if (!eng) { dp__null_arg(NULL, "dp_var_create", "engine"); return h; }
    v = (dp__var *)dp__table_alloc(eng, &eng->vars, &idx);
    if (!v) { DP__LOG(eng, DP_LOG_ERROR, HANDLES_EXHAUSTED, "variable table"); return h; }
    v->nreaders = 0;
    if (eng->chain) { v->last = 0; v->waits = NULL; }
    else { v->head = v->tail = 0; v->failure = NULL; }   /* a reused slot keeps its ring */
    h.id = dp__table_id(&eng->vars, v, idx);
    v->handle_id = (uint32_t)h.id;
    return h;
}
static dp_result dp__var_delete(dp_engine *eng, dp_var var, dp_sync_fn fn, void *arg, dp_ctx ctx, dp_cleanup_fn cleanup) {
    dp_push_desc d;
    dp_result r;
    if (!eng) return dp__null_arg(NULL, "dp_var_delete", "engine");
    memset(&d, 0, sizeof d);
    d.fn = fn; d.arg = arg; d.writes = &var; d.num_writes = 1; d.ctx = ctx; d.name = "delete_var";
    d.cleanup = cleanup;
    d.prop = DP_PROP_DELETE_VAR;
    if ((r = dp__check_ctx(eng, ctx, d.name)) != DP_OK) return r;
    return dp__push_resolved(eng, &d, DP__KIND_DELETE, NULL);
}
DP_IMPL dp_result dp_var_delete_fn(dp_engine *eng, dp_var var, dp_sync_fn fn, void *arg, dp_ctx ctx) {
    return dp__var_delete(eng, var, fn, arg, ctx, NULL);
}
DP_IMPL dp_result dp_var_delete(dp_engine *eng, dp_var var) {
    dp_ctx cpu = {DP_DEV_CPU, 0};
    return dp_var_delete_fn(eng, var, NULL, NULL, cpu);
}
DP__COLD DP_IMPL dp_result dp_var_state_get(dp_engine *eng, dp_var var, dp_var_state *out) {
    dp__var *v = eng ? (dp__var *)dp__table_lookup(&eng->vars, var.id) : NULL;
    if (!out || !eng) { if (out) *out = DP_VAR_INVALID; return dp__null_arg(eng, "dp_var_state_get", eng ? "out" : "engine"); }
    *out = DP_VAR_INVALID;
    if (!v) { dp__log_bad_handle(eng, &eng->vars, DP_LOGITEM_INVALID_VAR, "dp_var_state_get: var", var.id); return DP_ERROR_INVALID_HANDLE; }
    dp__spin_lock(&v->lock);
    if ((uint32_t)dp__load(&v->gen, DP__RELAXED) != dp__id_gen((uint32_t)var.id)) {
        /* deleted since the look-up (its deletion's push bumps the
           generation under this lock): the slot may be a new variable's,
           whose fields dp_var_create writes without the lock */
        dp__spin_unlock(&v->lock);
        dp__log_bad_handle(eng, &eng->vars, DP_LOGITEM_INVALID_VAR, "dp_var_state_get: var", var.id);
        return DP_ERROR_INVALID_HANDLE;
    }
    {
        dp__failure *f;
        if (dp__var_busy(eng, v, &f)) *out = DP_VAR_BUSY;
        else *out = f ? DP_VAR_FAILED : DP_VAR_READY;
    }
    dp__spin_unlock(&v->lock);
    return DP_OK;
}

/* Drops n references; the last frees the op (and runs its cleanup). */
static void dp__op_unref(dp_engine *eng, dp__opobj *op, int32_t n) {
    if (dp__fetch_add(&op->refs, -n, DP__ACQ_REL) == n) {
        if (op->d.cleanup) dp__run_cleanup(eng, op->d.cleanup, op->d.arg);
        dp__free(eng, op->vars, (op->nread + op->nwrite) * (sizeof *op->vars + sizeof *op->var_ids));
        dp__table_release(eng, &eng->ops, op->index, op);
    }
}
static dp_opr dp__op_create(dp_engine *eng, const dp_push_desc *desc);
DP__COLD DP_IMPL dp_opr dp_opr_create(dp_engine *eng, const dp_push_desc *desc) {
    dp_opr h = dp__op_create(eng, desc);
    if (!h.id && desc && desc->cleanup) dp__run_cleanup(eng, desc->cleanup, desc->arg);   /* refused: arg is ours to free */
    return h;
}
static dp_opr dp__op_create(dp_engine *eng, const dp_push_desc *desc) {
    dp_opr h = {0};
    dp__vref *refs;
    dp__opobj *op;
    uint32_t idx, k = 0;
    int n, i, pass, total;
    if (dp__check_desc(eng, desc) != DP_OK) return h;
    if (desc->prop == DP_PROP_DELETE_VAR) { DP__LOG(eng, DP_LOG_ERROR, BAD_PROP, "pre-created op cannot delete a var"); return h; }
    total = desc->num_reads + desc->num_writes;
    refs = (dp__vref *)dp__alloc(eng, (size_t)(total ? total : 1) * sizeof *refs);
    if (!refs) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_opr_create"); return h; }
    n = dp__resolve(eng, desc, refs);
    for (i = 0; i < n; i++)      /* resolve leaves generations to the push; an op checks them now */
        if (!dp__table_lookup(&eng->vars, dp__table_handle(&eng->vars, refs[i].id))) { n = dp__invalid_var(eng, desc, dp__table_handle(&eng->vars, refs[i].id)); break; }
    if (n < 0) { dp__free(eng, refs, (size_t)(total ? total : 1) * sizeof *refs); return h; }
    op = (dp__opobj *)dp__table_alloc(eng, &eng->ops, &idx);
    if (!op) { dp__free(eng, refs, (size_t)(total ? total : 1) * sizeof *refs); DP__LOG(eng, DP_LOG_ERROR, HANDLES_EXHAUSTED, "op table"); return h; }
    op->index = idx;
    op->d = *desc;
    op->nread = op->nwrite = 0;
    op->vars = (dp__var **)dp__alloc(eng, (size_t)(n ? n : 1) * (sizeof *op->vars + sizeof *op->var_ids));
    if (!op->vars) {
        dp__table_invalidate(op);
        dp__table_release(eng, &eng->ops, idx, op);
        dp__free(eng, refs, (size_t)(total ? total : 1) * sizeof *refs);
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_opr_create");
        return h;
    }
    op->var_ids = (uint32_t *)(void *)(op->vars + (n ? n : 1));
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < n; i++)
            if (refs[i].write == pass) { op->vars[k] = refs[i].v; op->var_ids[k] = refs[i].id; k++; }
    for (i = 0; i < n; i++) { if (refs[i].write) op->nwrite++; else op->nread++; }
    if (!n) { op->nread = op->nwrite = 0; }
    dp__free(eng, refs, (size_t)(total ? total : 1) * sizeof *refs);
    dp__store(&op->refs, 1, DP__RELEASE);
    h.id = dp__table_id(&eng->ops, op, idx);
    return h;
}
/* Pins the op for one run: refs + 1 unless it is already being freed. */
static dp__opobj *dp__op_acquire(dp_engine *eng, dp_opr h, int32_t runs) {
    dp__opobj *op = (dp__opobj *)dp__table_lookup(&eng->ops, h.id);
    int32_t r;
    if (!op) return NULL;
    r = dp__load(&op->refs, DP__ACQUIRE);
    for (;;) {
        if (r <= 0 || r > INT32_MAX - runs) return NULL;
        if (dp__cas(&op->refs, &r, r + runs, DP__ACQ_REL)) break;
        dp__fetch_add(&eng->op_ref_cas_retries, 1, DP__RELAXED);
    }
    if (dp__table_id(&eng->ops, op, op->index) != h.id) { dp__op_unref(eng, op, runs); return NULL; }
    return op;
}
DP_IMPL dp_result dp_opr_push(dp_engine *eng, dp_opr h, dp_ctx ctx, int priority) {
    dp__opobj *op;
    dp__block *b;
    dp_push_desc d;
    dp_result r;
    uint32_t n;
    if (!eng) return dp__null_arg(NULL, "dp_opr_push", "engine");
    op = dp__op_acquire(eng, h, 1);
    if (!op) { dp__log_bad_handle(eng, &eng->ops, DP_LOGITEM_INVALID_OP, "op", h.id); return DP_ERROR_INVALID_HANDLE; }
    if ((r = dp__check_ctx(eng, ctx, op->d.name)) != DP_OK) { dp__op_unref(eng, op, 1); return r; }
    d = op->d; d.ctx = ctx; d.priority = priority;
    d.cleanup = NULL;          /* the op's, run once when the op is freed */
    n = op->nread + op->nwrite;
    b = dp__block_new(eng, n, &d, op->d.fn ? DP__KIND_SYNC : DP__KIND_ASYNC);
    if (!b) { dp__op_unref(eng, op, 1); return DP_ERROR_OUT_OF_MEMORY; }
    b->op = op; b->nread = (uint16_t)op->nread; b->nwrite = (uint16_t)op->nwrite;
    r = dp__queue_and_go(eng, b, op->var_ids);
    if (r != DP_OK) { dp__pool_put(eng, b); dp__op_unref(eng, op, 1); }
    return r;
}
DP__COLD DP_IMPL dp_result dp_opr_push_n(dp_engine *eng, dp_opr h, dp_ctx ctx, int priority, int count) {
    dp__opobj *op;
    dp__block **blocks;
    const uint32_t **ids;
    dp_push_desc d;
    dp_result r = DP_OK;
    int k, made = 0;
    if (!eng) return dp__null_arg(NULL, "dp_opr_push_n", "engine");
    if (count < 0) { DP__LOG(eng, DP_LOG_ERROR, NEGATIVE_COUNT, "dp_opr_push_n: count %d", count); return DP_ERROR_INVALID_ARGS; }
    op = dp__op_acquire(eng, h, count > 0 ? count : 1);
    if (!op) { dp__log_bad_handle(eng, &eng->ops, DP_LOGITEM_INVALID_OP, "op", h.id); return DP_ERROR_INVALID_HANDLE; }
    if (count == 0) { dp__op_unref(eng, op, 1); return DP_OK; }
    if ((r = dp__check_ctx(eng, ctx, op->d.name)) != DP_OK) { dp__op_unref(eng, op, count); return r; }
    /* the size cannot wrap on a 32-bit target: a count that would is refused as out of memory */
    blocks = (size_t)count > SIZE_MAX / (sizeof *blocks + sizeof *ids) ? NULL
           : (dp__block **)dp__alloc(eng, (size_t)count * (sizeof *blocks + sizeof *ids));
    if (!blocks) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_opr_push_n: %d runs", count);
        dp__op_unref(eng, op, count);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    ids = (const uint32_t **)(void *)(blocks + count);
    d = op->d; d.ctx = ctx; d.priority = priority;
    d.cleanup = NULL;          /* the op's, run once when the op is freed */
    for (made = 0; made < count; made++) {
        dp__block *b = dp__block_new(eng, op->nread + op->nwrite, &d, op->d.fn ? DP__KIND_SYNC : DP__KIND_ASYNC);
        if (!b) { r = DP_ERROR_OUT_OF_MEMORY; break; }
        b->op = op; b->nread = (uint16_t)op->nread; b->nwrite = (uint16_t)op->nwrite;
        blocks[made] = b; ids[made] = op->var_ids;
    }
    if (r == DP_OK) r = dp__queue_batch(eng, blocks, ids, count);
    if (r != DP_OK) {
        for (k = 0; k < made; k++) dp__pool_put(eng, blocks[k]);
        dp__op_unref(eng, op, count);
    }
    dp__free(eng, blocks, (size_t)count * (sizeof *blocks + sizeof *ids));
    return r;
}
DP__COLD DP_IMPL dp_result dp_opr_destroy(dp_engine *eng, dp_opr h) {
    dp__opobj *op = eng ? (dp__opobj *)dp__table_lookup(&eng->ops, h.id) : NULL;
    int32_t gen = (int32_t)dp__id_gen((uint32_t)h.id);
    /* two racing destroys: only the one that moves the generation drops the
       handle's reference */
    if (!op || !dp__cas(&op->gen, &gen, (uint32_t)gen >= DP__GEN_MAX ? 0 : gen + 1, DP__ACQ_REL)) {
        if (!eng) return dp__null_arg(NULL, "dp_opr_destroy", "engine");
        dp__log_bad_handle(eng, &eng->ops, DP_LOGITEM_INVALID_OP, "dp_opr_destroy", h.id);
        return DP_ERROR_INVALID_HANDLE;
    }
    dp__op_unref(eng, op, 1);
    return DP_OK;
}

/* >>waits ------------------------------------------------------------------ */
/* A wait (or destroy) from inside one of eng's ops, or one of its cleanups,
   would wait for the op it is called from. */
static dp_result dp__check_not_in_op(dp_engine *eng, const char *what) {
    if (dp__tls_running == eng || dp__tls_cleaning == eng) {
        DP__LOG(eng, DP_LOG_ERROR, WAIT_IN_OP, "%s from inside %s", what, dp__tls_running == eng ? "an operation" : "a cleanup");
        return DP_ERROR_IN_OPERATION;
    }
    return DP_OK;
}
/* A timed wait that gives up must leave nothing behind that outlives it
   but a bounded amount per variable (a frame loop polls with it). So, under
   var's lock, before anything is pushed:
   - busy and a timeout of 0: the answer is DP_ERROR_TIMEOUT, and nothing
     is pushed (*busy_now = 1);
   - among the wait blocks at the end of var's queue (one per thread
     waiting on var now, at most) is one of a timed wait that gave up: only
     wait blocks, which do no work, were pushed on var after it, so it waits
     for exactly what a new one would. The caller takes it over (returned;
     its waiter's abandoned back to 0) instead of pushing another, so
     give-ups in a row keep at most one block and one waiter per polling
     thread and variable, however many there are (two threads polling one
     variable each find the other's live block last: looking at the last
     entry alone queued a block per call).
     The block cannot run or be recycled meanwhile: it leaves the queue
     (granted) only under this lock, and its waiter is freed only after it
     has run.
   Returns NULL (push a new wait) otherwise, also for a handle that is not
   var's (the push reports it). */
DP__COLD static dp__waiter *dp__chain_adopt_wait(dp_engine *eng, dp__var *v, dp_var var, int zero_timeout, int *busy_now);
DP__COLD static dp__waiter *dp__adopt_wait(dp_engine *eng, dp_var var, int zero_timeout, int *busy_now) {
    dp__var *v = (dp__var *)dp__table_lookup(&eng->vars, var.id);
    dp__waiter *taken = NULL;
    if (!v) return NULL;
    if (eng->chain) return dp__chain_adopt_wait(eng, v, var, zero_timeout, busy_now);
    dp__spin_lock(&v->lock);
    if ((uint32_t)dp__load(&v->gen, DP__RELAXED) == dp__id_gen((uint32_t)var.id)) {   /* not deleted since */
        if (zero_timeout) *busy_now = v->nreaders != 0 || dp__var_waiting(v);
        else {   /* the queue's trailing wait blocks (one per thread waiting now, at most): any abandoned one will do */
            uint32_t i;
            for (i = v->tail; i != v->head && !taken; i--) {
                dp__block *b = dp__entry_block(dp__var_entry(v, i - 1));
                int32_t one = 1;
                if (b->kind != DP__KIND_WAIT) break;   /* work after it: it would return too early */
                if (dp__cas(&((dp__waiter *)b->arg)->abandoned, &one, 0, DP__ACQ_REL)) taken = (dp__waiter *)b->arg;
            }
        }
    }
    dp__spin_unlock(&v->lock);
    return taken;
}
/* The same on a chain engine (>>chain), whose variables know only their
   last element: v->waits lists the wait blocks pushed since the last op,
   newest first, each held by a reference (so each is alive while listed).
   The whole list is looked at, under v's lock and wait_mtx: a block is
   taken over only if it has not looked at its waiter yet, which it does
   when it marks itself RUNNING under wait_mtx (dp__run_wait); after that
   its waiter may be freed, so a block not PENDING is passed over without
   reading it. Taking wait_mtx with a variable's lock held cannot
   deadlock: no one takes a variable's lock with wait_mtx held (the waits
   run ops with it released), and pushers of v only spin the while. */
DP__COLD static dp__waiter *dp__chain_adopt_wait(dp_engine *eng, dp__var *v, dp_var var, int zero_timeout, int *busy_now) {
    dp__waiter *taken = NULL;
    dp__spin_lock(&v->lock);
    if ((uint32_t)dp__load(&v->gen, DP__RELAXED) == dp__id_gen((uint32_t)var.id)) {   /* not deleted since */
        dp__failure *f;
        if (zero_timeout) *busy_now = dp__var_busy(eng, v, &f);
        else if (v->waits) {
            dp__block *x;
            dp__mutex_lock(&eng->wait_mtx);
            for (x = v->waits; x && !taken; x = x->prev_wait) {
                int32_t one = 1;
                if ((dp__load(&x->state, DP__ACQUIRE) & 3u) != DP__ST_PENDING) continue;
                if (dp__cas(&((dp__waiter *)x->arg)->abandoned, &one, 0, DP__ACQ_REL)) taken = (dp__waiter *)x->arg;
            }
            dp__mutex_unlock(&eng->wait_mtx);
        }
    }
    dp__spin_unlock(&v->lock);
    return taken;
}
/* >>callers: the threads that run ops of the threaded engines' CPU pools
   besides their workers: dp_run_ready, and the waits (dp__waits_help says
   which: on threaded engines as eng->wait_help says, always where
   the CPU pools have no workers, cpu_worker_nthreads = DP_NO_THREADS). They take
   ready ops from the pools' shared queues as a pushing thread does with
   push_runs_ops (dp__pusher_run), and steal from the workers' deques as an
   idle worker does (dp__steal_from), so the same guarantees hold: never
   from inside one of the engine's ops (dp__check_not_in_op), only ops
   already ready; a shared queue's oldest first, a deque's oldest (the
   thieves' end) first. The pools, in the order they are looked at: index 0
   is the per-device engine's priority pool or the pooled engine's task
   pool, 1 + n the per-device engine's pool of CPU n. */
static dp__group *dp__cpu_pool(dp_engine *eng, int i) {
    if (eng->desc.type == DP_ENGINE_POOLED) return i ? NULL : eng->task_group;
    return i ? (dp__group *)dp__load(&eng->cpu_groups[i - 1], DP__ACQUIRE) : eng->prio_group;
}
/* Whether every worker of g is running an op: all have started, and none
   is looking for work or asleep. A wait helps such a pool only (below):
   while a worker is free the op is left to it, which starts it as soon
   (it is spinning, or a push wakes it), and leaves the waiting thread free
   to return the moment its condition holds. */
static int dp__pool_all_busy(dp__group *g) {
    return dp__load(&g->entered, DP__SEQ_CST) == g->nworkers && dp__load(&g->q.spinning, DP__SEQ_CST) == 0
        && dp__load(&g->q.sleepers, DP__SEQ_CST) == 0;
}
enum { DP__TAKE_ALL, DP__TAKE_PUMPED, DP__TAKE_BUSY_POOLS };
/* Where a caller's steals start (xorshift; see dp__steal_from). */
static DP__THREAD_LOCAL uint32_t dp__tls_steal_seed;
/* A ready op of the CPU pools (which: of every pool, of those without
   workers, or of those and the pools whose workers are all busy), taken
   off its shared queue or, failing that, stolen from one of its workers'
   deques (counted in eng->caller_stole); NULL if none, with *busy set when
   a push was half done or a steal lost a race (look again). A steal is the
   one a worker makes (dp__deque_steal): a compare-and-swap on the deque's
   top claims the op, so it runs once, and a thief that is no worker of the
   pool is as good as one that is. */
static dp__block *dp__caller_take(dp_engine *eng, int which, int *busy) {
    int i;
    for (i = 0; i <= DP__MAX_DEV; i++) {
        dp__group *g = dp__cpu_pool(eng, i);
        int b_busy = 0, more, lost = 0;
        dp__block *b;
        if (!g || (which == DP__TAKE_PUMPED && !g->q.pumped)) continue;
        if (which == DP__TAKE_BUSY_POOLS && !g->q.pumped && !dp__pool_all_busy(g)) continue;
        /* a pool without workers is always tried under its take lock: a look
           without it could see the head as another taker left it a moment
           ago (a relaxed store) and call a queue with an op in it empty */
        if ((g->q.pumped || dp__queue_peek(&g->q)) && (b = dp__queue_try_take(&g->q, &b_busy, &more, NULL)) != NULL) return b;
        *busy |= b_busy;
        if (g->q.prioritized || !g->nworkers) continue;   /* no deques */
        if (!dp__tls_steal_seed) dp__tls_steal_seed = 2654435761u;
        if ((b = dp__steal_from(g, -1, &dp__tls_steal_seed, &lost, &more)) != NULL) {
            dp__fetch_add(&eng->caller_stole, 1, DP__RELAXED);
            return b;
        }
        *busy |= lost != 0;
    }
    return NULL;
}
/* Runs b on the caller. The thread may be inside a naive engine's op, its
   ready list being drained further up the stack: b runs with a list of its
   own, so what b's completion makes ready here (another thread's wait
   block, a naive op b pushed and then waits for) runs before b returns
   instead of waiting for the outer op to end, which could be never. */
static void dp__caller_run(dp_engine *eng, dp__block *b) {
    dp__block *head = dp__tls_naive_head, *tail = dp__tls_naive_tail;
    int draining = dp__tls_naive_draining;
    dp__tls_naive_head = dp__tls_naive_tail = NULL;
    dp__tls_naive_draining = 0;
    dp__fetch_add(&eng->caller_ran, 1, DP__RELAXED);
    dp__execute(eng, b, NULL);
    dp__tls_naive_head = head; dp__tls_naive_tail = tail;
    dp__tls_naive_draining = draining;
}
/* Which ready ops eng's waits run on the waiting thread (bits):
   DP__HELP_PUMPED  those of pools without workers (cpu_worker_nthreads =
                    DP_NO_THREADS): nobody else would run them;
   DP__HELP_ANY     also those of pools whose workers are all busy, from
                    the shared queue and the workers' deques: while its
                    condition does not hold, the waiting thread has a core
                    to give (eng->wait_help: the default where the CPU
                    workers are fewer than the CPUs; see no_wait_help).
                    Not for a timed wait: a caller that polls may feed,
                    between its polls, the op it would be running.
                    Not on the pooled engine with a GPU backend: its task
                    pool has GPU ops, which would set the caller's device.
                    Only on a thread that runs no op, chunk, cleanup or
                    extension create and is no engine's worker: a wait
                    from there does not start unrelated ops nested in it. */
enum { DP__HELP_PUMPED = 1, DP__HELP_ANY = 2 };
static int dp__waits_help(const dp_engine *eng, int timed) {
    int pumped = eng->desc.type != DP_ENGINE_NAIVE && eng->desc.cpu_worker_nthreads == 0;
    int any = eng->desc.type != DP_ENGINE_NAIVE && eng->wait_help && !timed
              && !(eng->desc.type == DP_ENGINE_POOLED && eng->desc.gpu_backend)
              && !dp__tls_running && !dp__tls_cleaning && !dp__tls_worker && !dp__tls_ext_depth;
    return (pumped ? DP__HELP_PUMPED : 0) | (any ? DP__HELP_ANY : 0);
}
/* A helping wait (DP__HELP_ANY) between looks. The pools it helps are
   those dp__cpu_pool lists that have workers. may_find: one of them has
   every worker busy, so a completion there may make an op ready for it
   (then it keeps looking a while, as a spinning worker does); has_work:
   such a pool has an op in its shared queue or a deque (the last look
   before it sleeps, by the loads dp__group_has_work makes). */
static int dp__help_look(dp_engine *eng, int has_work) {
    int i;
    for (i = 0; i <= DP__MAX_DEV; i++) {
        dp__group *g = dp__cpu_pool(eng, i);
        if (g && g->nworkers && dp__pool_all_busy(g) && (!has_work || dp__group_has_work(g))) return 1;
    }
    return 0;
}
/* Wakes the helping waits asleep, after an op came into q's pool while its
   workers were all busy (dp__pool_nudge, dp__worker_found), if they help
   that pool and it has workers (a pool without workers wakes its waits
   itself: dp__pump_wake). The waker takes them all off help_asleep (a new
   epoch), so the pool's next ops do not wake them again before they have
   looked. */
DP__COLD static void dp__help_wake(dp_engine *eng, dp__queue *q) {
    int i, helped = 0;
    for (i = 0; i <= DP__MAX_DEV && !helped; i++) { dp__group *g = dp__cpu_pool(eng, i); helped = g && g->nworkers && &g->q == q; }
    if (!helped) return;
    dp__mutex_lock(&eng->wait_mtx);
    if (dp__load(&eng->help_asleep, DP__RELAXED) != 0) {
        dp__store(&eng->help_asleep, 0, DP__SEQ_CST);
        eng->help_epoch++;
        dp__fetch_add(&eng->helper_woken, 1, DP__RELAXED);
        dp__cond_broadcast(&eng->wait_cv);
    }
    dp__mutex_unlock(&eng->wait_mtx);
}
/* A wait whose condition does not hold yet, on an engine whose waits help
   (helps: dp__waits_help's bits), with wait_mtx held: takes a ready op of
   the pools it helps and runs it with wait_mtx released, and returns 1
   (also when a push was half done or a steal lost a race: it yields and
   the caller looks again); a wait that helps pools with workers, finding
   nothing while one of them has all its workers busy, also returns 1
   after a pause (*idle counts them: DP__SPIN_PAUSES, then DP__SPIN_YIELDS
   with a yield, as a worker spins); else returns 0, and the caller may
   sleep (dp__wait_step).
   Nothing waits for a wait's help in a pool with workers: they run every
   op of their pool, so a helping wait asleep only costs time. One that
   helps pools without workers (DP__HELP_PUMPED, counted in eng->nhelpers
   for the whole wait) is all they have, and sleeps through no push: the
   wait counted itself before it looks at the queues here, and a push
   into such a pool swaps the tail before it reads the count
   (dp__pump_wake), all sequentially consistent; the push's broadcast
   takes wait_mtx, which the wait holds from this look until it sleeps.
   The look is complete: it takes the take lock, so it sees the head as
   the last taker left it, and a take that put the stub back behind an op
   left that op at the head (dp__fifo_take), or returned busy; a tail
   read at the stub after a push's swap means such a put-back came after
   it, under the lock, so before this look. */
DP__COLD static int dp__wait_help(dp_engine *eng, int helps, int *idle) {
    int busy = 0;
    dp__block *b = dp__caller_take(eng, (helps & DP__HELP_ANY) ? DP__TAKE_BUSY_POOLS : DP__TAKE_PUMPED, &busy);
    if (b) *idle = 0;
    else if (!busy) {
        if (!(helps & DP__HELP_ANY) || *idle >= DP__SPIN_PAUSES + DP__SPIN_YIELDS || !dp__help_look(eng, 0)) return 0;
        ++*idle;
    }
    dp__mutex_unlock(&eng->wait_mtx);
    if (b) dp__caller_run(eng, b);
    else if (busy || *idle > DP__SPIN_PAUSES) dp__thread_yield();
    else dp__cpu_relax();
    dp__mutex_lock(&eng->wait_mtx);
    return 1;
}

#define DP__FOREVER UINT64_MAX
/* Takes a helping wait off help_asleep, unless a waker did (a new epoch). */
static void dp__help_awake(dp_engine *eng, unsigned epoch) {
    if (eng->help_epoch == epoch) dp__fetch_add(&eng->help_asleep, -1, DP__SEQ_CST);
}
/* One step of a wait whose condition does not hold, with wait_mtx held:
   returns 1 once the deadline (on dp__now_ns's clock; DP__FOREVER: none)
   has passed; else runs an op or looks again (helps, *idle: see
   dp__wait_help) or sleeps until woken or the deadline, and returns 0.
   A helping wait (DP__HELP_ANY) sleeps counted in help_asleep, so that an
   op coming into a pool it helps while the workers are all busy wakes it
   (dp__pool_nudge, dp__worker_found): it counts itself (seq_cst) before
   its last look (dp__help_look's seq_cst loads of the queue's tail and the
   deques' ends), and a worker stores its deque's bottom (a pusher swaps the
   tail) before it reads help_asleep, so one of them sees the other; the
   waker takes wait_mtx, which the wait holds until it sleeps. Not quite
   always: a take that put the stub back behind a pushed op leaves the
   tail at the stub with that op at the head (dp__fifo_take), which the
   tail-only look (dp__group_has_work) calls empty, so the wait may sleep
   through that op. Only time is lost: the pool's workers run it. */
DP__COLD static int dp__wait_step(dp_engine *eng, int helps, uint64_t deadline, int *idle) {
    uint64_t now = 0;
    unsigned epoch = 0;
    int counted = 0;
    if (deadline != DP__FOREVER && (now = dp__now_ns()) >= deadline) return 1;
    if (helps && dp__wait_help(eng, helps, idle)) return 0;
    if (helps & DP__HELP_ANY) {
        dp__fetch_add(&eng->help_asleep, 1, DP__SEQ_CST);
        epoch = eng->help_epoch; counted = 1;
        if (dp__help_look(eng, 1)) {          /* came in meanwhile: look again */
            dp__help_awake(eng, epoch);
            dp__mutex_unlock(&eng->wait_mtx);
            dp__thread_yield();
            dp__mutex_lock(&eng->wait_mtx);
            return 0;
        }
    }
    if (deadline == DP__FOREVER) dp__cond_wait(&eng->wait_cv, &eng->wait_mtx);
    else dp__cond_wait_ms(&eng->wait_cv, &eng->wait_mtx, (uint32_t)((deadline - now) / 1000000u) + 1u);
    DEPENG_TEST_HOOK(wait_woke);
    if (counted) { dp__help_awake(eng, epoch); *idle = 0; }
    return 0;
}
/* Pushes a wait block for var and waits for its report, for at most
   timeout_ms (DP__FOREVER: no limit). A timed wait's waiter lives on the
   heap, because its block may run after the waiter has given up. */
DP__COLD static dp_result dp__wait_var(dp_engine *eng, dp_var var, uint64_t timeout_ms, dp_failure *failure, const char *what) {
    dp_push_desc d;
    dp__waiter stack_waiter, *w = &stack_waiter;
    void *prev_own = dp__tls_own_wait;   /* a wait from an op that a wait runs */
    dp_result r;
    uint64_t deadline = DP__FOREVER;
    int gave_up = 0, busy_now = 0, helps, idle = 0;
    if (!eng) return dp__null_arg(NULL, what, "engine");
    if ((r = dp__check_not_in_op(eng, what)) != DP_OK) return r;
    if (timeout_ms != DP__FOREVER) {
        dp__waiter *taken;
        deadline = dp__now_ns() + timeout_ms * 1000000u;
        taken = dp__adopt_wait(eng, var, timeout_ms == 0, &busy_now);
        if (busy_now) return DP_ERROR_TIMEOUT;
        if (taken) { w = taken; goto wait; }
        if ((w = (dp__waiter *)dp__alloc(eng, sizeof *w)) == NULL) {
            DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what);
            return DP_ERROR_OUT_OF_MEMORY;
        }
    }
    memset(&d, 0, sizeof d);
    memset(w, 0, sizeof *w);
    d.writes = &var; d.num_writes = 1; d.name = "wait_var";
    /* The wait takes a write position: it comes after every earlier reader
       and writer of var, and it runs inline, so it costs no worker. */
    dp__tls_own_wait = w;
    r = dp__push_resolved(eng, &d, DP__KIND_WAIT, w);
    dp__tls_own_wait = prev_own;
    if (r != DP_OK) {
        if (w != &stack_waiter) dp__free(eng, w, sizeof *w);
        return r;
    }
wait:
    if ((helps = dp__waits_help(eng, timeout_ms != DP__FOREVER)) & DP__HELP_PUMPED) dp__fetch_add(&eng->nhelpers, 1, DP__SEQ_CST);
    dp__tls_own_wait = w;   /* a wait that runs ops may grant its block itself */
    dp__mutex_lock(&eng->wait_mtx);
    while (!w->done) {
        if (dp__wait_step(eng, helps, w->claimed ? DP__FOREVER : deadline, &idle)) {
            gave_up = 1;   /* from here on the block owns w (or a later timed wait takes it over) */
            dp__store(&w->abandoned, 1, DP__RELEASE);
            break;
        }
    }
    dp__mutex_unlock(&eng->wait_mtx);
    dp__tls_own_wait = prev_own;
    if (helps & DP__HELP_PUMPED) dp__fetch_add(&eng->nhelpers, -1, DP__SEQ_CST);
    if (gave_up) return DP_ERROR_TIMEOUT;   /* w may be freed already */
    r = w->result;
    if (r != DP_OK && failure) *failure = w->failure;
    if (w != &stack_waiter) dp__free(eng, w, sizeof *w);
    return r;
}
DP__COLD DP_IMPL dp_result dp_wait_var(dp_engine *eng, dp_var var, dp_failure *failure) {
    return dp__wait_var(eng, var, DP__FOREVER, failure, "dp_wait_var");
}
DP__COLD DP_IMPL dp_result dp_wait_var_for(dp_engine *eng, dp_var var, uint32_t timeout_ms, dp_failure *failure) {
    return dp__wait_var(eng, var, timeout_ms, failure, "dp_wait_var_for");
}
/* Waits until every op pushed so far is done, for at most timeout_ms
   (DP__FOREVER: no limit); then reports the oldest unreported failure and
   clears every failure. A wait that times out clears nothing. */
DP__COLD static dp_result dp__wait_all(dp_engine *eng, uint64_t timeout_ms, dp_failure *failure, const char *what) {
    dp_result r;
    dp__failure *f, *next;
    uint64_t deadline = timeout_ms == DP__FOREVER ? DP__FOREVER : dp__now_ns() + timeout_ms * 1000000u;
    int timed_out = 0, helps, idle = 0;
    if (!eng) return dp__null_arg(NULL, what, "engine");
    if ((r = dp__check_not_in_op(eng, what)) != DP_OK) return r;
    if ((helps = dp__waits_help(eng, timeout_ms != DP__FOREVER)) & DP__HELP_PUMPED) dp__fetch_add(&eng->nhelpers, 1, DP__SEQ_CST);
    dp__mutex_lock(&eng->wait_mtx);
    dp__fetch_add(&eng->nwaiters_all, 1, DP__SEQ_CST);
    while (dp__load(&eng->done, DP__SEQ_CST) != dp__load(&eng->seq, DP__SEQ_CST))
        if (dp__wait_step(eng, helps, deadline, &idle)) { timed_out = 1; break; }
    dp__fetch_add(&eng->nwaiters_all, -1, DP__SEQ_CST);
    dp__mutex_unlock(&eng->wait_mtx);
    if (helps & DP__HELP_PUMPED) dp__fetch_add(&eng->nhelpers, -1, DP__SEQ_CST);
    if (timed_out) return DP_ERROR_TIMEOUT;
    /* report the oldest unreported failure, then clear every failure (the
       list is released under the lock: the engine's own out-of-memory
       record may be linked again as soon as it is off the list) */
    DEPENG_TEST_HOOK(wait_all_clear);
    dp__mutex_lock(&eng->fail_mtx);
    f = eng->unreported_head;
    r = f ? DP_ERROR_OP_FAILED : DP_OK;
    if (f && failure) *failure = f->info;
    eng->unreported_head = eng->unreported_tail = NULL;
    dp__fetch_add(&eng->clear_epoch, 1, DP__ACQ_REL);
    for (; f; f = next) { next = f->next_unreported; f->unreported = 0; dp__failure_release(eng, f); }
    dp__mutex_unlock(&eng->fail_mtx);
    return r;
}
DP__COLD DP_IMPL dp_result dp_wait_all(dp_engine *eng, dp_failure *failure) {
    return dp__wait_all(eng, DP__FOREVER, failure, "dp_wait_all");
}
DP__COLD DP_IMPL dp_result dp_wait_all_for(dp_engine *eng, uint32_t timeout_ms, dp_failure *failure) {
    return dp__wait_all(eng, timeout_ms, failure, "dp_wait_all_for");
}
DP__COLD DP_IMPL dp_result dp_run_ready(dp_engine *eng, const dp_run_desc *desc, dp_run_report *report) {
    dp_run_report rep;
    dp_result r;
    uint64_t start = dp__now_ns();
    memset(&rep, 0, sizeof rep);
    if (report) *report = rep;
    if (!eng || !desc) return dp__null_arg(eng, "dp_run_ready", eng ? "desc" : "engine");
    if ((r = dp__check_not_in_op(eng, "dp_run_ready")) != DP_OK) return r;
    for (;;) {
        int busy = 0;
        dp__block *b;
        dp_var_state vs;
        if (desc->until.id) {
            if ((r = dp_var_state_get(eng, desc->until, &vs)) != DP_OK) break;   /* logged */
            if (vs != DP_VAR_BUSY) { rep.stop = DP_RUN_VAR_READY; break; }
        }
        if (desc->max_ops && rep.ops_run >= desc->max_ops) { rep.stop = DP_RUN_MAX_OPS; break; }
        if (desc->budget_us && dp__now_ns() - start >= (uint64_t)desc->budget_us * 1000u) { rep.stop = DP_RUN_BUDGET; break; }
        if ((b = dp__caller_take(eng, DP__TAKE_ALL, &busy)) != NULL) { dp__caller_run(eng, b); rep.ops_run++; }
        else if (busy) dp__cpu_relax();
        else break;   /* DP_RUN_IDLE */
    }
    rep.elapsed_us = (uint32_t)((dp__now_ns() - start) / 1000u);
    if (report) *report = rep;
    return r;
}

/* >>engine -----------------------------------------------------------------
   Every engine gets a number of its own, the salt in its handles' high 32
   bits (see "Handles" at dp_var): the next value of a process-wide counter,
   skipping 0 so that no handle of a live engine is 0. */
static dp__a64 dp__engine_count;
DP__COLD static uint32_t dp__new_salt(void) {
    uint32_t s;
    do s = (uint32_t)(dp__fetch_add(&dp__engine_count, 1, DP__RELAXED) + 1u); while (s == 0);
    return s;
}
/* The live engines: a list through dp_engine.next_live, from the end of
   dp_engine_create to just before dp_engine_destroy frees the engine. A
   destroy claims its engine here (destroying = 1) under the lock, so of two
   concurrent destroys exactly one goes on; the other is answered without
   touching the engine's memory after the lock is released, since the first
   may free it at any moment (so it logs to the default logger). A destroy
   after the first has returned finds no such engine: the same error, unless
   a new engine has been given the same address since, which no check can
   tell from a live engine. */
static dp__spinlock dp__engines_lock;
static dp_engine *dp__engines;
DP__COLD static dp_result dp__claim_destroy(dp_engine *eng) {
    dp_engine *e;
    uint32_t salt = 0;
    int state = 0;                          /* 0 not live, 1 claimed now, 2 claimed already */
    dp__spin_lock(&dp__engines_lock);
    for (e = dp__engines; e && e != eng; e = e->next_live) {}
    if (e) { state = e->destroying ? 2 : 1; e->destroying = 1; salt = e->vars.salt; }
    dp__spin_unlock(&dp__engines_lock);
    if (state == 1) return DP_OK;
    if (state == 2) DP__LOG(NULL, DP_LOG_ERROR, ENGINE_NOT_LIVE, "dp_engine_destroy: engine #%u is being destroyed by another thread", (unsigned)salt);
    else DP__LOG(NULL, DP_LOG_ERROR, ENGINE_NOT_LIVE, "dp_engine_destroy: %p is not a live engine (destroyed already?)", (void *)eng);
    return DP_ERROR_INVALID_ARGS;
}
DP__COLD static int dp__env_int(const dp_engine_desc *d, const char *name, int *out) {
    const char *s = d->ignore_env ? NULL : getenv(name);
    char *end;
    long v;
    if (!s || !*s) return 0;
    v = strtol(s, &end, 10);
    if (*end || v < 1 || v > 1024) return -1;
    *out = (int)v;
    return 0;
}
DP__COLD static dp_result dp__resolve_desc(dp_engine *eng, const dp_engine_desc *in, dp_engine_desc *d) {
    const char *t;
    *d = *in;
    if ((d->allocator.alloc == NULL) != (d->allocator.free == NULL)) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "allocator needs both alloc and free");
        return DP_ERROR_INVALID_ARGS;
    }
    if (d->type == DP_ENGINE_DEFAULT && !d->ignore_env && (t = getenv("DEPENG_ENGINE_TYPE")) != NULL && *t) {
        if (!strcmp(t, "Naive") || !strcmp(t, "NaiveEngine")) d->type = DP_ENGINE_NAIVE;
        else if (!strcmp(t, "Pooled") || !strcmp(t, "ThreadedEngine")) d->type = DP_ENGINE_POOLED;
        else if (!strcmp(t, "PerDevice") || !strcmp(t, "ThreadedEnginePerDevice")) d->type = DP_ENGINE_PERDEVICE;
        else { DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "DEPENG_ENGINE_TYPE='%s' (Naive|Pooled|PerDevice)", t); return DP_ERROR_INVALID_ARGS; }
    }
    if ((int)d->type < 0 || d->type > DP_ENGINE_PERDEVICE) { DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "type %d", (int)d->type); return DP_ERROR_INVALID_ARGS; }
    d->type = DP__DEF(d->type, DP_ENGINE_PERDEVICE);
    if ((!d->cpu_worker_nthreads && dp__env_int(d, "DEPENG_CPU_WORKER_NTHREADS", &d->cpu_worker_nthreads))
        || (!d->cpu_priority_nthreads && dp__env_int(d, "DEPENG_CPU_PRIORITY_NTHREADS", &d->cpu_priority_nthreads))
        || (!d->gpu_worker_nthreads && dp__env_int(d, "DEPENG_GPU_WORKER_NTHREADS", &d->gpu_worker_nthreads))
        || (!d->gpu_copy_nthreads && dp__env_int(d, "DEPENG_GPU_COPY_NTHREADS", &d->gpu_copy_nthreads))) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "a DEPENG_*_NTHREADS variable is not an integer in 1..1024");
        return DP_ERROR_INVALID_ARGS;
    }
    if (d->cpu_worker_nthreads < DP_NO_THREADS || d->cpu_priority_nthreads < DP_NO_THREADS || d->gpu_worker_nthreads < 0 || d->gpu_copy_nthreads < DP_NO_THREADS
        || d->cpu_worker_nthreads > 1024 || d->cpu_priority_nthreads > 1024 || d->gpu_worker_nthreads > 1024 || d->gpu_copy_nthreads > 1024) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "thread counts must be 0 (default) to 1024, or DP_NO_THREADS (not gpu_worker_nthreads)");
        return DP_ERROR_INVALID_ARGS;
    }
    d->cpu_worker_nthreads = DP__NTH(d->cpu_worker_nthreads, dp__usable_cpus());
    d->cpu_priority_nthreads = DP__NTH(d->cpu_priority_nthreads, 1);
    d->gpu_worker_nthreads = DP__DEF(d->gpu_worker_nthreads, 2);
    d->gpu_copy_nthreads = DP__NTH(d->gpu_copy_nthreads, 1);
    if (d->type == DP_ENGINE_NAIVE)    /* it starts no thread: say so (dp_engine_desc_get) */
        d->cpu_worker_nthreads = d->cpu_priority_nthreads = d->gpu_worker_nthreads = d->gpu_copy_nthreads = 0;
    d->pending_report_ms = DP__DEF(d->pending_report_ms, 10000);
    return DP_OK;
}
static void dp__extensions_destroy(dp_engine *eng);
DP__COLD static void dp__engine_free(dp_engine *eng) {
    int i;
    size_t k;
    dp__failure *f, *next;
    while (dp__load(&eng->outside_finishers, DP__ACQUIRE) != 0) dp__thread_yield();
    dp__extensions_destroy(eng);   /* every op is done; workers, pools and the allocator still there */
    DEPENG_TEST_HOOK(extensions_destroyed);   /* an op pushed by a teardown would run about now */
    for (i = 0; i < DP__MAX_DEV; i++) {
        dp__group_destroy(eng, (dp__group *)dp__load(&eng->cpu_groups[i], DP__RELAXED));
        dp__group_destroy(eng, (dp__group *)dp__load(&eng->gpu_groups[i], DP__RELAXED));
        dp__group_destroy(eng, (dp__group *)dp__load(&eng->copy_groups[i], DP__RELAXED));
        if (eng->shared_stream_ok[i] && eng->desc.gpu_backend->stream_destroy)
            eng->desc.gpu_backend->stream_destroy(i, eng->shared_stream[i], eng->desc.gpu_backend->user);
    }
    dp__group_destroy(eng, eng->prio_group);
    dp__group_destroy(eng, eng->task_group);
    dp__group_destroy(eng, (dp__group *)dp__load(&eng->io_group, DP__RELAXED));
    for (f = eng->unreported_head; f; f = next) { next = f->next_unreported; dp__failure_release(eng, f); }
    /* failures still held by variables (a chain engine's: by their last
       elements, which go back to the pools) */
    for (k = 1; k < (size_t)dp__load(&eng->vars.next_index, DP__RELAXED); k++) {
        dp__var *v = (dp__var *)dp__table_slot(&eng->vars, (uint32_t)k);
        if (v && !eng->chain && v->failure) dp__failure_release(eng, v->failure);
        if (v && eng->chain && dp__load(&v->gen, DP__RELAXED)) dp__chain_drop_var(eng, v);
    }
    for (k = 1; k < (size_t)dp__load(&eng->ops.next_index, DP__RELAXED); k++) {
        dp__opobj *op = (dp__opobj *)dp__table_slot(&eng->ops, (uint32_t)k);
        if (op && dp__load(&op->refs, DP__RELAXED) > 0)   /* only on a failed create: destroy frees the rest first */
            dp__free(eng, op->vars, (op->nread + op->nwrite) * (sizeof *op->vars + sizeof *op->var_ids));
    }
    for (k = 1; k < (size_t)dp__load(&eng->vars.next_index, DP__RELAXED); k++) {   /* every slot's ring, live or not */
        dp__var *v = (dp__var *)dp__table_slot(&eng->vars, (uint32_t)k);
        if (v && !eng->chain && v->queue) dp__free(eng, v->queue, (v->mask + 1u) * sizeof *v->queue);
    }
    for (k = 0; k < eng->ngraph; k++) dp__free(eng, eng->graph[k].ids, (eng->graph[k].nread + eng->graph[k].nwrite ? eng->graph[k].nread + eng->graph[k].nwrite : 1) * sizeof(uint32_t));
    dp__free(eng, eng->graph, eng->capgraph * sizeof *eng->graph);
    dp__free(eng, eng->inline_prof.recs, eng->inline_prof.cap * sizeof(dp__prof_rec));
    for (i = 0; i < DP__NUM_CLASSES * DP__POOL_STRIPES; i++) dp__pool_free_all(eng, &eng->pools[i / DP__NUM_CLASSES][i % DP__NUM_CLASSES]);
    dp__table_free_all(eng, &eng->vars);
    dp__table_free_all(eng, &eng->ops);
    dp__mutex_destroy(&eng->wait_mtx); dp__cond_destroy(&eng->wait_cv);
    dp__mutex_destroy(&eng->create_mtx); dp__mutex_destroy(&eng->fail_mtx);
    dp__mutex_destroy(&eng->graph_mtx); dp__mutex_destroy(&eng->inline_prof.m);
    dp__mutex_destroy(&eng->ext_mtx);
    dp__free(eng, eng, sizeof *eng);
}
/* Destroy destroys the pre-created ops nobody destroyed while the engine
   still runs, once every pushed op is done: their cleanup functions may
   push. With nothing pending, an op still referenced is referenced by its
   handle alone. Returns how many there were. */
DP__COLD static int dp__destroy_live_ops(dp_engine *eng) {
    uint32_t k, n = (uint32_t)dp__load(&eng->ops.next_index, DP__ACQUIRE);
    int count = 0;
    for (k = 1; k < n; k++) {
        dp__opobj *op = (dp__opobj *)dp__table_slot(&eng->ops, k);
        dp_opr h;
        if (!op || dp__load(&op->gen, DP__ACQUIRE) == 0 || dp__load(&op->refs, DP__ACQUIRE) <= 0) continue;
        h.id = dp__table_id(&eng->ops, op, k);
        if (dp_opr_destroy(eng, h) == DP_OK) count++;
    }
    return count;
}
/* What an engine still waits for (dp_engine_dump_pending, and destroy after
   its grace period), as lines handed to a sink. */
#define DP__REPORT_LINES 32
typedef struct dp__report {
    void (*sink)(const dp_engine *eng, const char *text, void *user);
    void *user;
    int lines, more;
} dp__report;
DP__COLD static void dp__report_line(const dp_engine *eng, dp__report *rp, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    if (rp->lines >= DP__REPORT_LINES) { rp->more++; return; }
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    rp->lines++;
    rp->sink(eng, buf, rp->user);
}
static const char *dp__name_or(const char *name) { return name ? name : "(unnamed)"; }
/* Running ops are found in the block pools, each pool under its lock: a
   block is reused only through its own pool, so one seen RUNNING (acquire:
   what its push wrote is visible) keeps its name and number while we look. */
typedef struct dp__running_op { uint64_t seq; int async; char name[64]; } dp__running_op;
DP__COLD static void dp__report_running(dp_engine *eng, dp__report *rp) {
    dp__running_op found[DP__REPORT_LINES];
    int s, c, n, i, more;
    for (s = 0; s < DP__POOL_STRIPES; s++) {
        for (c = 0; c < DP__NUM_CLASSES; c++) {
            dp__pool *p = &eng->pools[s][c];
            char *chunk;
            size_t k;
            n = more = 0;
            dp__spin_lock(&p->lock);          /* copy only: a logger must not run under it */
            for (chunk = (char *)p->chunks; chunk; chunk = *(char **)(void *)chunk) {
                for (k = 0; k < p->per_chunk; k++) {
                    dp__block *b = dp__pool_block(p, chunk, k);
                    uint64_t st = (uint64_t)dp__load(&b->state, DP__ACQUIRE);
                    if ((st & 3u) != DP__ST_RUNNING || b->kind == DP__KIND_WAIT) continue;
                    if (n == DP__REPORT_LINES) { more++; continue; }
                    found[n].seq = st >> 2;
                    found[n].async = b->kind == DP__KIND_ASYNC;
                    snprintf(found[n].name, sizeof found[n].name, "%s", dp__name_or(b->name));
                    n++;
                }
            }
            dp__spin_unlock(&p->lock);
            for (i = 0; i < n; i++)
                dp__report_line(eng, rp, "running: op #%llu '%s' (%s)", (unsigned long long)found[i].seq, found[i].name,
                                found[i].async ? "async: until dp_complete is called" : "its function or stream work");
            rp->more += more;
        }
    }
}
/* Busy variables, each under its lock: a queued op cannot complete while it
   waits there, so its name and number are stable. */
/* On a chain engine (>>chain) no one knows a variable's queue: the ops on
   a busy variable are found in the block pools, as dp__report_running
   finds running ops (under each pool's lock, so none finished is handed
   out again while we look), those of one-shot pushes only: a pre-created
   op's variable list may go with the op as soon as its block completes.
   A block handed out but not pushed yet, or whose push was refused, has
   push number 0 and is skipped: its counts may not be set. */
typedef struct dp__var_op { uint64_t seq; int write, running; const char *name; } dp__var_op;
DP__COLD static int dp__var_ops_cmp(const void *a, const void *b) {
    uint64_t x = ((const dp__var_op *)a)->seq, y = ((const dp__var_op *)b)->seq;
    return x < y ? -1 : x > y;
}
DP__COLD static int dp__chain_var_ops(dp_engine *eng, dp__var *v, dp__var_op *out, int cap, int *more) {
    int s, c, n = 0;
    for (s = 0; s < DP__POOL_STRIPES; s++) {
        for (c = 0; c < DP__NUM_CLASSES; c++) {
            dp__pool *p = &eng->pools[s][c];
            char *chunk;
            size_t k;
            dp__spin_lock(&p->lock);
            for (chunk = (char *)p->chunks; chunk; chunk = *(char **)(void *)chunk) {
                for (k = 0; k < p->per_chunk; k++) {
                    dp__block *b = dp__pool_block(p, chunk, k);
                    uint64_t st = (uint64_t)dp__load(&b->state, DP__ACQUIRE);
                    uint32_t i, nread, nvars, room = dp__class_cap(c);
                    dp__var **vars = (dp__var **)(void *)((char *)(b + 1) + room * sizeof(dp__elem));
                    if ((st & 3u) == DP__ST_DONE || (st >> 2) == 0 || b->kind == DP__KIND_RUN || b->op) continue;
                    nread = b->nread; nvars = nread + b->nwrite;
                    if (nvars > room) continue;
                    for (i = 0; i < nvars; i++) {
                        if (vars[i] != v) continue;
                        if (n == cap) { (*more)++; break; }
                        out[n].seq = st >> 2; out[n].write = i >= nread;
                        out[n].running = (st & 3u) == DP__ST_RUNNING || dp__load(&b->wait, DP__ACQUIRE) == 0;
                        out[n].name = b->kind == DP__KIND_WAIT ? "dp_wait_var" : dp__name_or(b->name);
                        n++;
                        break;
                    }
                }
            }
            dp__spin_unlock(&p->lock);
        }
    }
    qsort(out, (size_t)n, sizeof *out, dp__var_ops_cmp);
    return n;
}
DP__COLD static void dp__chain_report_var(dp_engine *eng, dp__report *rp, dp__var *v) {
    dp__var_op ops[64];
    char text[400];
    size_t len;
    int n, i, more = 0, running_reads = 0, writing = 0, shown = 0, waiting = 0;
    n = dp__chain_var_ops(eng, v, ops, 64, &more);
    for (i = 0; i < n; i++) {
        if (ops[i].running && ops[i].write) writing = 1;
        else if (ops[i].running) running_reads++;
        else waiting++;
    }
    if (writing) len = (size_t)snprintf(text, sizeof text, "variable 0x%08x: written by a running op", (unsigned)v->handle_id);
    else len = (size_t)snprintf(text, sizeof text, "variable 0x%08x: %d running reads", (unsigned)v->handle_id, running_reads);
    if (waiting && len < sizeof text)
        len += (size_t)snprintf(text + len, sizeof text - len, "; %d%s waiting:", waiting, more ? " or more" : "");
    for (i = 0; i < n && len < sizeof text; i++) {
        if (ops[i].running) continue;
        if (shown++ == 4) { snprintf(text + len, sizeof text - len, " ..."); break; }
        len += (size_t)snprintf(text + len, sizeof text - len, " #%llu '%s' (%s)", (unsigned long long)ops[i].seq,
                                ops[i].name, ops[i].write ? "write" : "read");
    }
    dp__report_line(eng, rp, "%s", text);
}
DP__COLD static void dp__report_vars(dp_engine *eng, dp__report *rp) {
    uint32_t k, n = (uint32_t)dp__load(&eng->vars.next_index, DP__ACQUIRE);
    for (k = 1; k < n && eng->chain; k++) {
        dp__var *v = (dp__var *)dp__table_slot(&eng->vars, k);
        dp__failure *f;
        int busy;
        if (!v || !dp__load(&v->gen, DP__ACQUIRE)) continue;
        dp__spin_lock(&v->lock);
        busy = dp__var_busy(eng, v, &f);
        dp__spin_unlock(&v->lock);
        if (busy) dp__chain_report_var(eng, rp, v);
    }
    for (k = 1; k < n && !eng->chain; k++) {
        dp__var *v = (dp__var *)dp__table_slot(&eng->vars, k);
        char text[400];
        size_t len;
        uint32_t i;
        if (!v) continue;
        dp__spin_lock(&v->lock);
        if (v->nreaders == 0 && !dp__var_waiting(v)) { dp__spin_unlock(&v->lock); continue; }
        if (v->nreaders == DP__WRITING) len = (size_t)snprintf(text, sizeof text, "variable 0x%08x: written by a running op", (unsigned)v->handle_id);
        else len = (size_t)snprintf(text, sizeof text, "variable 0x%08x: %d running reads", (unsigned)v->handle_id, (int)v->nreaders);
        if (dp__var_waiting(v) && len < sizeof text)
            len += (size_t)snprintf(text + len, sizeof text - len, "; %u waiting:", (unsigned)(v->tail - v->head));
        for (i = v->head; i != v->tail && i - v->head < 4 && len < sizeof text; i++) {
            dp__entry e = dp__var_entry(v, i);
            dp__block *b = dp__entry_block(e);
            len += (size_t)snprintf(text + len, sizeof text - len, " #%llu '%s' (%s)", (unsigned long long)dp__block_seq(b),
                                    b->kind == DP__KIND_WAIT ? "dp_wait_var" : dp__name_or(b->name), dp__entry_is_write(e) ? "write" : "read");
        }
        if (i != v->tail && len < sizeof text) snprintf(text + len, sizeof text - len, " ...");
        dp__spin_unlock(&v->lock);
        dp__report_line(eng, rp, "%s", text);
    }
}
DP__COLD static void dp__report_pending(dp_engine *eng, dp__report *rp) {
    uint64_t pushed = (uint64_t)dp__load(&eng->seq, DP__ACQUIRE), done = (uint64_t)dp__load(&eng->done, DP__ACQUIRE);
    dp__report_line(eng, rp, "%llu ops pending (%llu pushed, %llu done)", (unsigned long long)(pushed - done),
                    (unsigned long long)pushed, (unsigned long long)done);
    dp__report_running(eng, rp);
    dp__report_vars(eng, rp);
    if (rp->more) { rp->lines = 0; dp__report_line(eng, rp, "... and %d more", rp->more); }
}
DP__COLD static void dp__report_to_file(const dp_engine *eng, const char *text, void *user) { (void)eng; fprintf((FILE *)user, "%s\n", text); }
DP__COLD static void dp__report_to_log(const dp_engine *eng, const char *text, void *user) {
    (void)user;
    DP__LOG(eng, DP_LOG_ERROR, PENDING, "%s", text);
}
DP__COLD static void dp__log_pending(dp_engine *eng, int waited_ms) {
    dp__report rp;
    memset(&rp, 0, sizeof rp);
    rp.sink = dp__report_to_log;
    DP__LOG(eng, DP_LOG_ERROR, PENDING, "dp_engine_destroy has waited %d ms and goes on waiting for:", waited_ms);
    dp__report_pending(eng, &rp);
}
DP__COLD DP_IMPL dp_result dp_engine_dump_pending(dp_engine *eng, FILE *out) {
    dp__report rp;
    if (!eng || !out) return dp__null_stream(eng, "dp_engine_dump_pending");
    memset(&rp, 0, sizeof rp);
    rp.sink = dp__report_to_file;
    rp.user = out;
    dp__report_pending(eng, &rp);
    return dp__stream_result(eng, out, "dp_engine_dump_pending");
}
DP__COLD DP_IMPL int dp_cpu_count(void) { return dp__usable_cpus(); }
DP__COLD DP_IMPL dp_result dp_engine_create(const dp_engine_desc *desc, dp_engine **out) {
    dp_engine_desc zero, resolved;
    dp_engine tmp, *eng;
    dp_result r;
    int i;
    if (!out) return dp__null_arg(NULL, "dp_engine_create", "out");
    *out = NULL;
    memset(&zero, 0, sizeof zero);
    memset(&tmp, 0, sizeof tmp);
    tmp.desc = desc ? *desc : zero;          /* so errors reach the desc's logger */
    if ((r = dp__resolve_desc(&tmp, desc ? desc : &zero, &resolved)) != DP_OK) return r;
    tmp.desc = resolved;
    eng = (dp_engine *)dp__alloc(&tmp, sizeof *eng);
    if (!eng) { DP__LOG(&tmp, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_engine_create: the engine (%u bytes)", (unsigned)sizeof *eng); return DP_ERROR_OUT_OF_MEMORY; }
    memset(eng, 0, sizeof *eng);
    eng->desc = resolved;
    eng->inline_ok = resolved.type == DP_ENGINE_NAIVE && !resolved.trace.func && !resolved.trace.record_graph;
    eng->chain = resolved.type != DP_ENGINE_NAIVE && !resolved.trace.func;
    eng->wait_help = resolved.no_wait_help < 0   /* (the CPU count read only when it decides) */
                     || (resolved.no_wait_help == 0 && resolved.type != DP_ENGINE_NAIVE
                         && resolved.cpu_worker_nthreads < dp__usable_cpus());
    dp__table_init(&eng->vars, sizeof(dp__var), 0);
    dp__table_init(&eng->ops, sizeof(dp__opobj), DP__KIND_OP);
    eng->vars.salt = eng->ops.salt = dp__new_salt();
    for (i = 0; i < DP__NUM_CLASSES * DP__POOL_STRIPES; i++) dp__pool_init(&eng->pools[i / DP__NUM_CLASSES][i % DP__NUM_CLASSES], i % DP__NUM_CLASSES);
    dp__mutex_init(&eng->wait_mtx); dp__cond_init(&eng->wait_cv);
    dp__mutex_init(&eng->create_mtx); dp__mutex_init(&eng->fail_mtx);
    dp__mutex_init(&eng->graph_mtx); dp__mutex_init(&eng->inline_prof.m);
    dp__failure_unrecorded_init(eng);
    dp__mutex_init(&eng->ext_mtx);
    if (resolved.gpu_backend) {
        const dp_device_backend *be = resolved.gpu_backend;
        if (!be->device_count || !be->stream_create) {
            DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "gpu_backend needs device_count and stream_create");
            dp__engine_free(eng);
            return DP_ERROR_INVALID_ARGS;
        }
        eng->gpu_count = be->device_count(be->user);
        if (eng->gpu_count < 0) eng->gpu_count = 0;
        if (eng->gpu_count > DP__MAX_DEV) eng->gpu_count = DP__MAX_DEV;
    }
    if (resolved.type == DP_ENGINE_PERDEVICE) {
        dp_ctx cpu0 = {DP_DEV_CPU, 0};
        dp__group *cpu;
        if ((resolved.cpu_priority_nthreads && (eng->prio_group = dp__group_create(eng, resolved.cpu_priority_nthreads, 1, cpu0, 0, 0, &r)) == NULL)
            || (cpu = dp__group_create(eng, resolved.cpu_worker_nthreads, 0, cpu0, 0, 0, &r)) == NULL) {
            dp__engine_free(eng);
            return r;
        }
        dp__store(&eng->cpu_groups[0], (void *)cpu, DP__RELEASE);
    } else if (resolved.type == DP_ENGINE_POOLED) {
        dp_ctx cpu0 = {DP_DEV_CPU, 0};
        dp__group *io;
        io = NULL;
        if ((eng->task_group = dp__group_create(eng, resolved.cpu_worker_nthreads, 0, cpu0, 0, 0, &r)) == NULL
            || (resolved.gpu_copy_nthreads && (io = dp__group_create(eng, resolved.gpu_copy_nthreads, 0, cpu0, 0, 0, &r)) == NULL)) {
            dp__engine_free(eng);
            return r;
        }
        dp__store(&eng->io_group, (void *)io, DP__RELEASE);
    }
    dp__spin_lock(&dp__engines_lock);
    eng->next_live = dp__engines;
    dp__engines = eng;
    dp__spin_unlock(&dp__engines_lock);
    *out = eng;
    return DP_OK;
}
DP__COLD DP_IMPL dp_result dp_engine_destroy(dp_engine *eng, dp_failure *failure) {
    dp_failure f;
    dp_result r;
    dp_engine **link;
    if (!eng) return dp__null_arg(NULL, "dp_engine_destroy", "engine");
    if ((r = dp__check_not_in_op(eng, "dp_engine_destroy")) != DP_OK) return r;
    if ((r = dp__claim_destroy(eng)) != DP_OK) return r;
    r = DP_ERROR_TIMEOUT;
    if (eng->desc.pending_report_ms > 0) r = dp__wait_all(eng, (uint64_t)eng->desc.pending_report_ms, &f, "dp_engine_destroy");
    if (r == DP_ERROR_TIMEOUT) {
        if (eng->desc.pending_report_ms > 0) dp__log_pending(eng, eng->desc.pending_report_ms);
        r = dp_wait_all(eng, &f);
    }
    while (dp__destroy_live_ops(eng)) {   /* their cleanups ran, and may have pushed or made ops */
        dp_failure later;
        if (dp_wait_all(eng, &later) == DP_ERROR_OP_FAILED && r != DP_ERROR_OP_FAILED) { r = DP_ERROR_OP_FAILED; f = later; }
    }
    if (r == DP_ERROR_OP_FAILED) {
        DP__LOG(eng, DP_LOG_WARN, UNREPORTED_FAILURE, "'%s': %s", f.op_name, f.message);
        if (failure) *failure = f;
    }
    /* off the list before the memory goes: a second destroy either found it
       claimed (and left without touching it) or will not find it at all */
    dp__spin_lock(&dp__engines_lock);
    for (link = &dp__engines; *link != eng; link = &(*link)->next_live) {}
    *link = eng->next_live;
    dp__spin_unlock(&dp__engines_lock);
    dp__engine_free(eng);
    return r;
}
DP__COLD DP_IMPL dp_result dp_engine_desc_get(const dp_engine *eng, dp_engine_desc *out) {
    if (!out) return dp__null_arg(eng, "dp_engine_desc_get", "out");
    if (!eng) { memset(out, 0, sizeof *out); return dp__null_arg(NULL, "dp_engine_desc_get", "engine"); }
    *out = eng->desc;
    return DP_OK;
}

/* The optional process-wide engine. */
static dp__spinlock dp__default_lock;
static dp_engine *dp__default_eng;
static int dp__default_atexit;
DP__COLD DP_IMPL void dp_default_engine_shutdown(void) {
    dp_engine *e;
    dp__spin_lock(&dp__default_lock);
    e = dp__default_eng;
    dp__default_eng = NULL;
    dp__spin_unlock(&dp__default_lock);
    if (e) dp_engine_destroy(e, NULL);
}
DP__COLD static void dp__default_at_exit(void) { dp_default_engine_shutdown(); }
DP__COLD DP_IMPL dp_engine *dp_default_engine(void) {
    dp_engine *e;
    dp__spin_lock(&dp__default_lock);
    if (!dp__default_eng && dp_engine_create(NULL, &dp__default_eng) != DP_OK) dp__default_eng = NULL;
    if (dp__default_eng && !dp__default_atexit) { dp__default_atexit = 1; atexit(dp__default_at_exit); }
    e = dp__default_eng;
    dp__spin_unlock(&dp__default_lock);
    return e;
}

/* >>profiler --------------------------------------------------------------- */
DP_IMPL void dp_profiler_start(dp_engine *eng) { if (eng) dp__store(&eng->profiling, 1, DP__RELAXED); else dp__null_arg(NULL, "dp_profiler_start", "engine"); }
DP_IMPL void dp_profiler_stop(dp_engine *eng) { if (eng) dp__store(&eng->profiling, 0, DP__RELAXED); else dp__null_arg(NULL, "dp_profiler_stop", "engine"); }
/* Calls fn for every record buffer (workers' and the pushing threads'). */
DP__COLD static void dp__prof_each(dp_engine *eng, void (*fn)(dp__prof_buf *, void *), void *user) {
    dp__group *groups[3 * DP__MAX_DEV + 3];
    int ng = 0, i, j;
    for (i = 0; i < DP__MAX_DEV; i++) {
        groups[ng++] = (dp__group *)dp__load(&eng->cpu_groups[i], DP__ACQUIRE);
        groups[ng++] = (dp__group *)dp__load(&eng->gpu_groups[i], DP__ACQUIRE);
        groups[ng++] = (dp__group *)dp__load(&eng->copy_groups[i], DP__ACQUIRE);
    }
    groups[ng++] = eng->prio_group; groups[ng++] = eng->task_group; groups[ng++] = (dp__group *)dp__load(&eng->io_group, DP__ACQUIRE);
    fn(&eng->inline_prof, user);
    for (i = 0; i < ng; i++)
        if (groups[i]) for (j = 0; j < groups[i]->nworkers; j++) fn(&groups[i]->workers[j].prof, user);
}
DP__COLD static void dp__prof_clear_one(dp__prof_buf *pb, void *user) { (void)user; dp__mutex_lock(&pb->m); pb->n = 0; dp__mutex_unlock(&pb->m); }
DP__COLD DP_IMPL void dp_profiler_clear(dp_engine *eng) { if (eng) dp__prof_each(eng, dp__prof_clear_one, NULL); else dp__null_arg(NULL, "dp_profiler_clear", "engine"); }

/* Chrome's trace event format (its "Trace Event Format" document) and
   Perfetto's JSON importer read pid and tid as integers: a string pid such as
   "cpu 0" becomes pid 0 there, so every device would fall into one process.
   Each device is a process with a number (CPU d: 1 + d, GPU d: 101 + d) and a
   process_name metadata event ("ph":"M"); each worker is a thread (its global
   index + 1) with a thread_name; ops run inline on a caller's thread get one
   thread per device, numbered past every worker's. */
#define DP__CHROME_GPU_PID 101
#define DP__CHROME_INLINE_TID 100000
typedef struct { int pid, tid; } dp__chrome_thread;
typedef struct {
    FILE *out; int first; uint64_t t0;
    const dp_engine *eng;
    dp__chrome_thread *seen; size_t nseen, capseen; int oom;
} dp__chrome_ctx;
DP__COLD static void dp__prof_min_start(dp__prof_buf *pb, void *user) {
    size_t i;
    uint64_t *t0 = (uint64_t *)user;
    dp__mutex_lock(&pb->m);
    for (i = 0; i < pb->n; i++) if (pb->recs[i].start < *t0) *t0 = pb->recs[i].start;
    dp__mutex_unlock(&pb->m);
}
/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no
   surrogates, nothing past U+10FFFF), or 0 when it is not one. */
DP__COLD static int dp__utf8_len(const unsigned char *s) {
    int n, k;
    if (s[0] < 0x80) return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) n = 2;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF) n = 3;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4) n = 4;
    else return 0;
    for (k = 1; k < n; k++) if ((s[k] & 0xC0) != 0x80) return 0;
    if (n == 3 && s[0] == 0xE0 && s[1] < 0xA0) return 0;
    if (n == 3 && s[0] == 0xED && s[1] >= 0xA0) return 0;
    if (n == 4 && s[0] == 0xF0 && s[1] < 0x90) return 0;
    if (n == 4 && s[0] == 0xF4 && s[1] >= 0x90) return 0;
    return n;
}
/* s as a JSON string that is also safe inside an HTML <script>: quotes,
   backslashes and control characters escaped; <, > and & as \u escapes (so
   "</script>" or "<!--" cannot end or change the script element), U+2028
   and U+2029 escaped (line terminators in older JavaScript), and every byte
   that is not well-formed UTF-8 (e.g. a name cut inside a character)
   replaced by U+FFFD, so the file is valid UTF-8 JSON whatever the name. */
DP__COLD static void dp__json_string(FILE *out, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', out);
    while (*p) {
        unsigned char c = *p;
        int n = dp__utf8_len(p);
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == '<' || c == '>' || c == '&') fprintf(out, "\\u%04x", c);
        else if (n == 0) fputs("\\ufffd", out);
        else if (n == 3 && c == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) fprintf(out, "\\u%04x", 0x2000 + (p[2] & 0x3F));
        else fwrite(p, 1, (size_t)n, out);
        p += n ? n : 1;
    }
    fputc('"', out);
}
DP__COLD static int dp__chrome_pid(const dp__prof_rec *r) {
    return (r->dev_type == DP_DEV_GPU ? DP__CHROME_GPU_PID : 1) + (int)r->dev_id;
}
DP__COLD static int dp__chrome_tid(const dp__prof_rec *r) {
    return r->thread >= 0 ? (int)r->thread + 1 : DP__CHROME_INLINE_TID + dp__chrome_pid(r);
}
/* Remembers each (pid, tid) once, for the metadata events. */
DP__COLD static void dp__chrome_note_thread(dp__chrome_ctx *c, int pid, int tid) {
    size_t k;
    for (k = 0; k < c->nseen; k++) if (c->seen[k].pid == pid && c->seen[k].tid == tid) return;
    if (dp__reserve(c->eng, &c->seen, &c->capseen, c->nseen, sizeof *c->seen, 16)) { c->oom = 1; return; }
    c->seen[c->nseen].pid = pid; c->seen[c->nseen].tid = tid; c->nseen++;
}
DP__COLD static void dp__prof_chrome_one(dp__prof_buf *pb, void *user) {
    dp__chrome_ctx *c = (dp__chrome_ctx *)user;
    size_t i;
    dp__mutex_lock(&pb->m);
    for (i = 0; i < pb->n; i++) {
        const dp__prof_rec *r = &pb->recs[i];
        int pid = dp__chrome_pid(r), tid = dp__chrome_tid(r);
        fprintf(c->out, "%s\n{\"name\":", c->first ? "" : ",");
        dp__json_string(c->out, r->name);
        fprintf(c->out, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d}",
                r->dev_type == DP_DEV_GPU ? "gpu" : "cpu", (double)(r->start - c->t0) / 1000.0,
                (double)(r->end - r->start) / 1000.0, pid, tid);
        dp__chrome_note_thread(c, pid, tid);
        c->first = 0;
    }
    dp__mutex_unlock(&pb->m);
}
/* One process_name (and sort index) per device, one thread_name per thread.
   The process's events carry one of its threads' tid: Perfetto's importer
   makes a thread of every (pid, tid) it reads, and tid 0 is no thread here. */
DP__COLD static void dp__chrome_metadata(dp__chrome_ctx *c) {
    size_t k, j;
    for (k = 0; k < c->nseen; k++) {
        int pid = c->seen[k].pid, tid = c->seen[k].tid, gpu = pid >= DP__CHROME_GPU_PID;
        for (j = 0; j < k && c->seen[j].pid != pid; j++) {}
        if (j == k) {
            fprintf(c->out, "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s %d\"}}",
                    c->first ? "" : ",", pid, tid, gpu ? "gpu" : "cpu", pid - (gpu ? DP__CHROME_GPU_PID : 1));
            fprintf(c->out, ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}", pid, tid, pid);
            c->first = 0;
        }
        if (tid >= DP__CHROME_INLINE_TID)
            fprintf(c->out, "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"inline (caller's thread)\"}}",
                    c->first ? "" : ",", pid, tid);
        else
            fprintf(c->out, "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"worker %d\"}}",
                    c->first ? "" : ",", pid, tid, tid - 1);
        c->first = 0;
    }
}
DP__COLD DP_IMPL dp_result dp_profiler_dump_chrome(dp_engine *eng, FILE *out) {
    dp__chrome_ctx c;
    if (!eng || !out) return dp__null_stream(eng, "dp_profiler_dump_chrome");
    memset(&c, 0, sizeof c);
    c.out = out; c.first = 1; c.t0 = UINT64_MAX; c.eng = eng;
    dp__prof_each(eng, dp__prof_min_start, &c.t0);
    fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    dp__prof_each(eng, dp__prof_chrome_one, &c);
    dp__chrome_metadata(&c);
    fprintf(out, "\n]}\n");
    dp__free(eng, c.seen, c.capseen * sizeof *c.seen);
    if (ferror(out)) return dp__stream_result(eng, out, "dp_profiler_dump_chrome");
    if (c.oom) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_profiler_dump_chrome: thread names left out");
        return DP_ERROR_OUT_OF_MEMORY;
    }
    return DP_OK;
}
typedef struct { char name[40]; uint64_t count, total, min, max; } dp__agg;
typedef struct { dp__agg *rows; size_t n, cap; const dp_engine *eng; int oom; } dp__agg_ctx;
DP__COLD static void dp__prof_agg_one(dp__prof_buf *pb, void *user) {
    dp__agg_ctx *a = (dp__agg_ctx *)user;
    size_t i, k;
    dp__mutex_lock(&pb->m);
    for (i = 0; i < pb->n; i++) {
        const dp__prof_rec *r = &pb->recs[i];
        uint64_t d = r->end - r->start;
        for (k = 0; k < a->n && strcmp(a->rows[k].name, r->name); k++) {}
        if (k == a->n) {
            if (dp__reserve(a->eng, &a->rows, &a->cap, a->n, sizeof *a->rows, 32)) { a->oom = 1; continue; }
            memset(&a->rows[k], 0, sizeof a->rows[k]);
            memcpy(a->rows[k].name, r->name, sizeof r->name);
            a->rows[k].min = UINT64_MAX;
            a->n++;
        }
        a->rows[k].count++; a->rows[k].total += d;
        if (d < a->rows[k].min) a->rows[k].min = d;
        if (d > a->rows[k].max) a->rows[k].max = d;
    }
    dp__mutex_unlock(&pb->m);
}
DP__COLD DP_IMPL dp_result dp_profiler_dump_summary(dp_engine *eng, FILE *out) {
    dp__agg_ctx a;
    size_t k;
    if (!eng || !out) return dp__null_stream(eng, "dp_profiler_dump_summary");
    memset(&a, 0, sizeof a);
    a.eng = eng;
    dp__prof_each(eng, dp__prof_agg_one, &a);
    fprintf(out, "%-32s %10s %12s %10s %10s %10s\n", "operation", "count", "total_us", "min_us", "max_us", "mean_us");
    for (k = 0; k < a.n; k++) {
        const dp__agg *r = &a.rows[k];
        fprintf(out, "%-32s %10llu %12.3f %10.3f %10.3f %10.3f\n", r->name, (unsigned long long)r->count,
                (double)r->total / 1e3, (double)r->min / 1e3, (double)r->max / 1e3, (double)r->total / 1e3 / (double)r->count);
    }
    dp__free(eng, a.rows, a.cap * sizeof *a.rows);
    if (a.oom) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_profiler_dump_summary: some op names are left out"); return DP_ERROR_OUT_OF_MEMORY; }
    return dp__stream_result(eng, out, "dp_profiler_dump_summary");
}

/* >>dot: the pushed ops as a graph, edges by the rule (sequentially). */
DP__COLD DP_IMPL dp_result dp_trace_write_dot(dp_engine *eng, FILE *out) {
    size_t i, k, cap;
    uint32_t j;
    struct vs { uint32_t id; uint64_t writer; uint64_t *readers; size_t nreaders; } *st = NULL;
    size_t nst = 0;
    if (!eng || !out) return dp__null_stream(eng, "dp_trace_write_dot");
    if (!eng->desc.trace.record_graph) { DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "dp_trace_write_dot needs desc.trace.record_graph"); return DP_ERROR_INVALID_ARGS; }
    dp__mutex_lock(&eng->graph_mtx);
    cap = 1;
    for (i = 0; i < eng->ngraph; i++) cap += eng->graph[i].nread + eng->graph[i].nwrite;
    st = (struct vs *)dp__alloc(eng, cap * sizeof *st);
    if (!st) { dp__mutex_unlock(&eng->graph_mtx); DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_trace_write_dot: %zu variables", cap); return DP_ERROR_OUT_OF_MEMORY; }
    fprintf(out, "digraph depeng {\n  rankdir=TB;\n  node [shape=box, style=rounded];\n");
    for (i = 0; i < eng->ngraph; i++) {
        const dp__graph_rec *r = &eng->graph[i];
        fprintf(out, "  op%llu [label=\"#%llu %s\"];\n", (unsigned long long)r->seq, (unsigned long long)r->seq, r->name ? r->name : "");
        for (j = 0; j < r->nread + r->nwrite; j++) {
            int write = j >= r->nread;
            struct vs *s = NULL;
            for (k = 0; k < nst; k++) if (st[k].id == r->ids[j]) { s = &st[k]; break; }
            if (!s) { s = &st[nst++]; s->id = r->ids[j]; s->writer = 0; s->readers = NULL; s->nreaders = 0; }
            if (s->writer) fprintf(out, "  op%llu -> op%llu [label=\"v%u\"];\n", (unsigned long long)s->writer, (unsigned long long)r->seq, (unsigned)(s->id & DP__IDX_MASK));
            if (write) {
                for (k = 0; k < s->nreaders; k++)
                    fprintf(out, "  op%llu -> op%llu [label=\"v%u\", style=dashed];\n", (unsigned long long)s->readers[k], (unsigned long long)r->seq, (unsigned)(s->id & DP__IDX_MASK));
                s->writer = r->seq;
                dp__free(eng, s->readers, s->nreaders * sizeof(uint64_t));
                s->readers = NULL; s->nreaders = 0;
            } else {
                uint64_t *nr = (uint64_t *)dp__realloc(eng, s->readers, s->nreaders * sizeof(uint64_t), (s->nreaders + 1) * sizeof(uint64_t));
                if (nr) { s->readers = nr; s->readers[s->nreaders++] = r->seq; }
            }
        }
    }
    fprintf(out, "}\n");
    for (k = 0; k < nst; k++) dp__free(eng, st[k].readers, st[k].nreaders * sizeof(uint64_t));
    dp__free(eng, st, cap * sizeof *st);
    dp__mutex_unlock(&eng->graph_mtx);
    return dp__stream_result(eng, out, "dp_trace_write_dot");
}

#ifdef DEPENG_TRACE_HTML
/* >>html: the recorder behind dp_trace_write_html. It copies each event
   (names interned once in a hash table of its own) under its own mutex, and
   never calls into the engine, as the trace callback must not. */
#define DP__REC_QMAX 8
typedef struct dp__rec_event {
    uint64_t seq;
    uint32_t var;                  /* the variable's slot (handle & DP__IDX_MASK) */
    uint32_t name;                 /* index into the recorder's strings           */
    uint32_t q[DP__REC_QMAX];      /* the queue's first names                     */
    int32_t pending, status, readers, qlen;
    uint8_t kind, nq, qwrite;      /* qwrite: bit k set when q[k] writes          */
} dp__rec_event;
typedef struct { uint32_t slot, name; } dp__rec_var;
typedef struct { size_t at; uint32_t text; } dp__rec_mark;
struct dp_trace_recorder {
    dp_allocator alloc;
    dp__mutex m;
    size_t max_events, dropped, lost;
    dp__rec_event *ev; size_t nev, capev;
    char **str; size_t nstr, capstr;
    uint32_t *hash; size_t caphash;    /* open addressing: string index + 1, 0 empty */
    dp__rec_var *vars; size_t nvars, capvars;
    dp__rec_mark *marks; size_t nmarks, capmarks;
};
/* The recorder's memory comes from its own allocator (the engine's may not
   exist yet when it is made, or be gone when it is freed). */
static void *dp__rec_alloc(const dp_allocator *a, size_t size) {
    return a->alloc ? a->alloc(size, 64, a->user) : malloc(size);
}
static void dp__rec_free(const dp_allocator *a, void *p, size_t size) {
    if (!p) return;
    if (a->free) a->free(p, size, a->user); else free(p);
}
/* dp__reserve with the recorder's allocator: room for index n in *arrp. */
static int dp__rec_reserve(const dp_allocator *a, void *arrp, size_t *cap, size_t n, size_t elem, size_t first) {
    size_t ncap;
    void *old, *grown;
    if (n < *cap) return 0;
    memcpy(&old, arrp, sizeof old);
    ncap = *cap ? *cap : first;
    while (ncap <= n) {
        if (ncap > SIZE_MAX / 2 / elem) return -1;
        ncap *= 2;
    }
    if (!(grown = dp__rec_alloc(a, ncap * elem))) return -1;
    if (old) { memcpy(grown, old, *cap * elem); dp__rec_free(a, old, *cap * elem); }
    memcpy(arrp, &grown, sizeof grown);
    *cap = ncap;
    return 0;
}
static uint32_t dp__fnv1a(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}
/* Doubles the hash table and puts every string back. */
static int dp__rec_rehash(dp_trace_recorder *r) {
    size_t cap = r->caphash ? r->caphash * 2 : 64, i, k;
    uint32_t *h = (uint32_t *)dp__rec_alloc(&r->alloc, cap * sizeof *h);
    if (!h) return -1;
    memset(h, 0, cap * sizeof *h);
    for (i = 0; i < r->nstr; i++) {
        for (k = dp__fnv1a(r->str[i]) & (cap - 1); h[k]; k = (k + 1) & (cap - 1)) {}
        h[k] = (uint32_t)i + 1;
    }
    dp__rec_free(&r->alloc, r->hash, r->caphash * sizeof *r->hash);
    r->hash = h; r->caphash = cap;
    return 0;
}
/* The index of a copy of s (NULL: "(unnamed)"), or -1 without memory. */
static int64_t dp__rec_intern(dp_trace_recorder *r, const char *s) {
    size_t k, len;
    char *copy;
    if (!s) s = "(unnamed)";
    if ((r->nstr + 1) * 2 > r->caphash && dp__rec_rehash(r)) return -1;
    for (k = dp__fnv1a(s) & (r->caphash - 1); r->hash[k]; k = (k + 1) & (r->caphash - 1))
        if (strcmp(r->str[r->hash[k] - 1], s) == 0) return (int64_t)r->hash[k] - 1;
    if (r->nstr >= UINT32_MAX - 1 || dp__rec_reserve(&r->alloc, &r->str, &r->capstr, r->nstr, sizeof *r->str, 64)) return -1;
    len = strlen(s) + 1;
    if (!(copy = (char *)dp__rec_alloc(&r->alloc, len))) return -1;
    memcpy(copy, s, len);
    r->str[r->nstr] = copy;
    r->hash[k] = (uint32_t)++r->nstr;
    return (int64_t)r->nstr - 1;
}
DP_IMPL dp_result dp_trace_recorder_create(const dp_allocator *alloc, size_t max_events, dp_trace_recorder **out) {
    dp_allocator a;
    dp_trace_recorder *r;
    if (!out) { DP__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_trace_recorder_create: out"); return DP_ERROR_INVALID_ARGS; }
    *out = NULL;
    memset(&a, 0, sizeof a);
    if (alloc) a = *alloc;
    if (!a.alloc != !a.free) { DP__LOG(NULL, DP_LOG_ERROR, BAD_DESC, "dp_trace_recorder_create: allocator needs both alloc and free, or neither"); return DP_ERROR_INVALID_ARGS; }
    if (!(r = (dp_trace_recorder *)dp__rec_alloc(&a, sizeof *r))) { DP__LOG(NULL, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_trace_recorder_create"); return DP_ERROR_OUT_OF_MEMORY; }
    memset(r, 0, sizeof *r);
    r->alloc = a;
    r->max_events = max_events ? max_events : 100000;
    if (dp__mutex_init(&r->m)) { dp__rec_free(&a, r, sizeof *r); DP__LOG(NULL, DP_LOG_ERROR, THREAD_CREATE, "dp_trace_recorder_create: no lock could be made"); return DP_ERROR_THREAD; }
    *out = r;
    return DP_OK;
}
DP_IMPL void dp_trace_recorder_destroy(dp_trace_recorder *r) {
    dp_allocator a;
    size_t i;
    if (!r) return;
    for (i = 0; i < r->nstr; i++) dp__rec_free(&r->alloc, r->str[i], strlen(r->str[i]) + 1);
    dp__rec_free(&r->alloc, r->str, r->capstr * sizeof *r->str);
    dp__rec_free(&r->alloc, r->hash, r->caphash * sizeof *r->hash);
    dp__rec_free(&r->alloc, r->ev, r->capev * sizeof *r->ev);
    dp__rec_free(&r->alloc, r->vars, r->capvars * sizeof *r->vars);
    dp__rec_free(&r->alloc, r->marks, r->capmarks * sizeof *r->marks);
    dp__mutex_destroy(&r->m);
    a = r->alloc;
    dp__rec_free(&a, r, sizeof *r);
}
/* Copies ev into e; 0, or -1 when a name found no memory. */
static int dp__rec_copy(dp_trace_recorder *r, const dp_trace_event *ev, dp__rec_event *e) {
    int64_t s;
    int k;
    memset(e, 0, sizeof *e);
    e->kind = (uint8_t)ev->kind; e->seq = ev->op_seq; e->var = (uint32_t)ev->var.id & DP__IDX_MASK;
    e->pending = ev->op_pending; e->status = ev->status; e->readers = ev->var_readers; e->qlen = ev->queue_len;
    if ((s = dp__rec_intern(r, ev->op_name)) < 0) return -1;
    e->name = (uint32_t)s;
    for (k = 0; ev->kind == DP_TRACE_VAR && k < ev->queue_len && k < DP__REC_QMAX; k++) {
        if ((s = dp__rec_intern(r, ev->queue_names[k])) < 0) return -1;
        e->q[k] = (uint32_t)s;
        if (ev->queue_write[k]) e->qwrite |= (uint8_t)(1u << k);
        e->nq = (uint8_t)(k + 1);
    }
    return 0;
}
DP_IMPL void dp_trace_recorder_event(const dp_trace_event *ev, void *user) {
    dp_trace_recorder *r = (dp_trace_recorder *)user;
    if (!r || !ev) return;
    dp__mutex_lock(&r->m);
    if (r->nev >= r->max_events) r->dropped++;
    else if (dp__rec_reserve(&r->alloc, &r->ev, &r->capev, r->nev, sizeof *r->ev, 256) || dp__rec_copy(r, ev, &r->ev[r->nev])) r->lost++;
    else r->nev++;
    dp__mutex_unlock(&r->m);
}
DP_IMPL dp_result dp_trace_recorder_name_var(dp_trace_recorder *r, dp_var var, const char *name) {
    dp_result res = DP_OK;
    int64_t s;
    size_t i;
    uint32_t slot = (uint32_t)var.id & DP__IDX_MASK;
    if (!r || !name) { DP__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_trace_recorder_name_var: recorder or name"); return DP_ERROR_INVALID_ARGS; }
    if (!var.id) { DP__LOG(NULL, DP_LOG_ERROR, INVALID_VAR, "dp_trace_recorder_name_var: variable 0"); return DP_ERROR_INVALID_ARGS; }
    dp__mutex_lock(&r->m);
    for (i = 0; i < r->nvars && r->vars[i].slot != slot; i++) {}
    if ((s = dp__rec_intern(r, name)) < 0 || (i == r->nvars && dp__rec_reserve(&r->alloc, &r->vars, &r->capvars, r->nvars, sizeof *r->vars, 16))) res = DP_ERROR_OUT_OF_MEMORY;
    else {
        r->vars[i].slot = slot; r->vars[i].name = (uint32_t)s;
        if (i == r->nvars) r->nvars++;
    }
    dp__mutex_unlock(&r->m);
    if (res != DP_OK) DP__LOG(NULL, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_trace_recorder_name_var");
    return res;
}
DP_IMPL dp_result dp_trace_recorder_mark(dp_trace_recorder *r, const char *caption) {
    dp_result res = DP_OK;
    int64_t s;
    if (!r || !caption) { DP__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_trace_recorder_mark: recorder or caption"); return DP_ERROR_INVALID_ARGS; }
    dp__mutex_lock(&r->m);
    if ((s = dp__rec_intern(r, caption)) < 0 || dp__rec_reserve(&r->alloc, &r->marks, &r->capmarks, r->nmarks, sizeof *r->marks, 16)) res = DP_ERROR_OUT_OF_MEMORY;
    else { r->marks[r->nmarks].at = r->nev; r->marks[r->nmarks].text = (uint32_t)s; r->nmarks++; }
    dp__mutex_unlock(&r->m);
    if (res != DP_OK) DP__LOG(NULL, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_trace_recorder_mark");
    return res;
}
static void dp__html_event(FILE *out, const dp_trace_recorder *r, const dp__rec_event *e) {
    static const char *kinds[] = {"push", "var", "run", "complete", "delete", "grant"};
    int k;
    fprintf(out, "{\"k\":\"%s\",\"seq\":%llu,\"op\":", e->kind < 6 ? kinds[e->kind] : "unknown", (unsigned long long)e->seq);
    dp__json_string(out, r->str[e->name]);
    switch (e->kind) {
    case DP_TRACE_PUSH: case DP_TRACE_GRANT: fprintf(out, ",\"pending\":%d", (int)e->pending); break;
    case DP_TRACE_COMPLETE: fprintf(out, ",\"status\":%d", (int)e->status); break;
    case DP_TRACE_DELETE: fprintf(out, ",\"v\":%u", (unsigned)e->var); break;
    case DP_TRACE_VAR:
        fprintf(out, ",\"v\":%u,\"readers\":%d,\"qlen\":%d,\"q\":[", (unsigned)e->var, (int)e->readers, (int)e->qlen);
        for (k = 0; k < e->nq; k++) {
            fputs(k ? ",[" : "[", out);
            dp__json_string(out, r->str[e->q[k]]);
            fprintf(out, ",%d]", (e->qwrite >> k) & 1);
        }
        fputc(']', out);
        break;
    default: break;
    }
    fputc('}', out);
}
/* The recorded ops with their variables' slots, for the page to draw. */
static void dp__html_graph(FILE *out, dp_engine *eng) {
    size_t i;
    uint32_t j;
    if (!eng || !eng->desc.trace.record_graph) { fputs("null", out); return; }
    dp__mutex_lock(&eng->graph_mtx);
    fputc('[', out);
    for (i = 0; i < eng->ngraph; i++) {
        const dp__graph_rec *g = &eng->graph[i];
        fprintf(out, "%s\n{\"seq\":%llu,\"op\":", i ? "," : "", (unsigned long long)g->seq);
        dp__json_string(out, g->name ? g->name : "(unnamed)");
        fputs(",\"r\":[", out);
        for (j = 0; j < g->nread; j++) fprintf(out, "%s%u", j ? "," : "", (unsigned)(g->ids[j] & DP__IDX_MASK));
        fputs("],\"w\":[", out);
        for (j = 0; j < g->nwrite; j++) fprintf(out, "%s%u", j ? "," : "", (unsigned)(g->ids[g->nread + j] & DP__IDX_MASK));
        fputs("]}", out);
    }
    fputc(']', out);
    dp__mutex_unlock(&eng->graph_mtx);
}
/* BEGIN GENERATED from tools/trace_page.html by tools/gen_trace_page.py
   (make trace-page): edit the page there, not these lines. */
/* The page up to its data: markup and style. */
static const char *const dp__html_head[] = {
    "<!DOCTYPE html>\n",
    "<html lang=\"en\">\n",
    "<head>\n",
    "<meta charset=\"utf-8\">\n",
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
    "<title>depeng trace</title>\n",
    "<style>\n",
    "body { font: 15px/1.4 system-ui, \"DejaVu Sans\", sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }\n",
    "header { background: #1d2330; color: #fff; padding: 10px 18px; display: flex; flex-wrap: wrap; align-items: center; gap: 14px; }\n",
    "header h1 { font-size: 18px; margin: 0; font-weight: 600; flex: 1 1 auto; }\n",
    ".controls button { font: inherit; padding: 4px 12px; margin: 0 2px; border-radius: 6px; border: 1px solid #8a93a6; background: #2c3447; color: #fff; cursor: pointer; }\n",
    ".controls button:disabled { opacity: 0.4; cursor: default; }\n",
    "#pos { display: inline-block; min-width: 120px; text-align: center; font-variant-numeric: tabular-nums; }\n",
    "#now { background: #fff; border-bottom: 1px solid #d5d9e0; padding: 10px 18px; }\n",
    "#caption { font-weight: 600; font-size: 16px; min-height: 1.4em; }\n",
    "#event { font-size: 15px; font-weight: 600; margin-top: 4px; min-height: 1.4em; color: #1f5fae; }\n",
    "#caption .prog { color: #6a7385; font-weight: 400; }\n",
    "#explain { color: #4a5468; margin-top: 2px; min-height: 1.4em; }\n",
    "#warn { color: #a02020; font-weight: 600; }\n",
    "main { display: flex; flex-wrap: wrap; gap: 18px; padding: 14px 18px; align-items: flex-start; }\n",
    "section { background: #fff; border: 1px solid #d5d9e0; border-radius: 8px; padding: 8px 14px 12px; }\n",
    "#left { flex: 1 1 480px; } #right { flex: 1 1 520px; }\n",
    "h2 { font-size: 15px; margin: 8px 0 6px; color: #4a5468; text-transform: uppercase; letter-spacing: 0.04em; }\n",
    "table { border-collapse: collapse; width: 100%; }\n",
    "th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eceef2; vertical-align: top; }\n",
    "th { font-size: 13px; color: #6a7385; font-weight: 600; }\n",
    "td.name, td.holders { font-weight: 600; white-space: nowrap; } td.holders { font-weight: 400; }\n",
    ".badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 13px; white-space: nowrap; }\n",
    ".free { background: #e3f6e8; color: #17693a; } .reading { background: #e2efff; color: #1f5fae; }\n",
    ".writing { background: #ffe9d6; color: #a04b00; } .deleted { background: #eceef2; color: #6a7385; }\n",
    ".waiting { background: #fff3cd; color: #8a6100; } .running { background: #e2efff; color: #1f5fae; } .ready { background: #efe3ff; color: #5b2a9e; }\n",
    ".done { background: #e3f6e8; color: #17693a; } .failed { background: #fde2e2; color: #a02020; }\n",
    ".chip { display: inline-block; border: 1px solid #c4cad4; border-radius: 6px; padding: 0 6px; margin: 1px 4px 1px 0; font-size: 13px; background: #fafbfc; }\n",
    ".chip b { font-size: 11px; margin-left: 4px; color: #fff; border-radius: 3px; padding: 0 3px; }\n",
    ".chip b.R { background: #1f5fae; } .chip b.W { background: #c05a00; }\n",
    ".empty { color: #9aa2b1; }\n",
    "tr.changed td { background: #fffbe6; }\n",
    "#graph svg { display: block; max-width: 100%; height: auto; }\n",
    "#graph .note { color: #6a7385; }\n",
    ".legend { font-size: 13px; color: #4a5468; margin-top: 4px; }\n",
    "#log { font-size: 13px; max-height: 240px; overflow-y: auto; margin: 0; padding-left: 3.2em; position: relative; }\n",
    "#log li { cursor: pointer; padding: 0 4px; } #log li.past { color: #6a7385; } #log li.cur { background: #1d2330; color: #fff; border-radius: 4px; } #log li.cur::marker { color: #1d2330; font-weight: 700; }\n",
    "#log li.mark { list-style: none; margin-left: -2.6em; font-family: system-ui, \"DejaVu Sans\", sans-serif; font-weight: 600; color: #1d2330; cursor: default; margin-top: 6px; border-top: 1px solid #d5d9e0; }\n",
    "#log li .head { font-weight: 600; } #log li .sub { display: block; font-family: system-ui, \"DejaVu Sans\", sans-serif; font-size: 12px; padding-left: 1em; }\n",
    "#explain div { margin: 1px 0; } #explain div::before { content: \"\\2022  \"; color: #9aa2b1; }\n",
    ".legend .key { display: inline-block; width: 14px; height: 10px; border: 1.5px solid; border-radius: 3px; margin: 0 3px 0 10px; vertical-align: middle; }\n",
    ".legend svg { vertical-align: middle; margin: 0 3px 0 10px; }\n",
    ".help { font-size: 13px; color: #c9cfdb; }\n",
    "</style>\n",
    "</head>\n",
    "<body>\n",
    "<header><h1 id=\"title\">depeng trace</h1>\n",
    "<div class=\"controls\"><button id=\"first\" title=\"first step (Home)\">&laquo; First</button><button id=\"back\" title=\"back one event (Left arrow)\">&#9664; Back</button><span id=\"pos\"></span><button id=\"next\" title=\"next event (Right arrow)\">Next &#9654;</button><button id=\"last\" title=\"last step (End)\">Last &raquo;</button></div>\n",
    "<span class=\"help\">keys: &#8592; &#8594; Home End</span></header>\n",
    "<div id=\"now\"><div id=\"caption\"></div><div id=\"event\"></div><div id=\"explain\"></div><div id=\"warn\"></div></div>\n",
    "<main>\n",
    "<section id=\"left\"><h2>Variables</h2><table id=\"vars\"><thead><tr><th>variable</th><th>state</th><th>held by</th><th>waiting queue (first in line on the left)</th></tr></thead><tbody></tbody></table>\n",
    "<div class=\"legend\">A variable is held by the operations it has been granted to: one writer, or any number of readers. The others wait in its queue, first come first served; <span class=\"chip\">op<b class=\"R\">R</b></span> waits to read, <span class=\"chip\">op<b class=\"W\">W</b></span> to write. Reads next to each other in the queue are granted together. An operation may hold some of its variables while it still waits in the queue of another.</div>\n",
    "<h2>Operations</h2><table id=\"ops\"><thead><tr><th>#</th><th>operation</th><th>state</th><th>holds</th><th>queued at</th></tr></thead><tbody></tbody></table>\n",
    "<div class=\"legend\">An operation waits for as many variables as queues it stands in (its count of unmet dependencies); at 0 it is ready, and the engine runs it. When it completes it lets go of its variables, which pass to the next in their queues.</div></section>\n",
    "<section id=\"right\"><h2>Dependency graph</h2><div id=\"graph\"></div>\n",
    "<div class=\"legend\" id=\"legend\">Operations appear as they are pushed; the colour is the state at this step:<span class=\"key\" style=\"background:#fff3cd;border-color:#d4a017\"></span>waiting<span class=\"key\" style=\"background:#efe3ff;border-color:#7b4cc2\"></span>ready<span class=\"key\" style=\"background:#d6e8ff;border-color:#1f5fae\"></span>running<span class=\"key\" style=\"background:#e3f6e8;border-color:#2e9e5b\"></span>done<span class=\"key\" style=\"background:#fde2e2;border-color:#c03030\"></span>failed<span class=\"key\" style=\"background:#fff;border-color:#1d2330;border-width:3px\"></span>the operation of this step.<br>\n",
    "An arrow leads from an operation to one that must wait for it; its label names the variable between them.<svg width=\"34\" height=\"10\"><path d=\"M 0 5 L 28 5\" stroke=\"#5b6578\" stroke-width=\"1.5\"/><path d=\"M 26 1 L 34 5 L 26 9 z\" fill=\"#5b6578\"/></svg>solid: the later one reads or overwrites what the earlier one writes.<svg width=\"34\" height=\"10\"><path d=\"M 0 5 L 28 5\" stroke=\"#5b6578\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"/><path d=\"M 26 1 L 34 5 L 26 9 z\" fill=\"#5b6578\"/></svg>dashed: the later one overwrites what the earlier one reads.</div>\n",
    "<h2>Events</h2><ol id=\"log\"></ol></section>\n",
    "</main>\n",
    "<pre id=\"dp-state\" hidden></pre>\n",
    "<pre id=\"dp-selftest\" hidden></pre>\n",
    "<script type=\"application/json\" id=\"dp-trace\">\n",
    NULL
};
/* The page after its data: the replay script, which puts user text on the
   page only through textContent, never as markup. */
static const char *const dp__html_tail[] = {
    "</script>\n",
    "<script>\n",
    "(function () {\n",
    "  'use strict';\n",
    "  var T = JSON.parse(document.getElementById('dp-trace').textContent);\n",
    "  var E = T.events, NE = E.length, SNAP = 64;\n",
    "  var names = {}, marks = {}, G = {}, cur = 0;\n",
    "  function has(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }\n",
    "  T.vars.forEach(function (v) { names[v[0]] = v[1]; });\n",
    "  T.marks.forEach(function (m) { marks[m[0]] = m[1]; });\n",
    "  if (T.graph) T.graph.forEach(function (op) { G[op.seq] = op; });\n",
    "  function $(id) { return document.getElementById(id); }\n",
    "  function el(tag, cls, text) {\n",
    "    var e = document.createElement(tag);\n",
    "    if (cls) e.className = cls;\n",
    "    if (text !== undefined) e.textContent = text;\n",
    "    return e;\n",
    "  }\n",
    "  function varName(slot) { return has(names, slot) ? names[slot] : 'v' + slot; }\n",
    "  function quoted(s) { return '\\u201c' + s + '\\u201d'; }\n",
    "  function andList(a) { return a.length < 2 ? a.join('') : a.slice(0, -1).join(', ') + ' and ' + a[a.length - 1]; }\n",
    "  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : many); }\n",
    "  /* what the recorded graph says an op reads and writes (null: not recorded) */\n",
    "  function uses(seq, slot) { var g = G[seq]; return !g || g.r.indexOf(slot) >= 0 || g.w.indexOf(slot) >= 0; }\n",
    "  function usesText(seq) {\n",
    "    var g = G[seq], p = [];\n",
    "    if (!g) return '';\n",
    "    if (g.r.length) p.push('reads ' + andList(g.r.map(varName)));\n",
    "    if (g.w.length) p.push('writes ' + andList(g.w.map(varName)));\n",
    "    return p.length ? ' (' + p.join(', ') + ')' : '';\n",
    "  }\n",
    "\n",
    "  /* ---- steps: the events grouped so that every step leaves a state that\n",
    "     agrees with itself. The engine reports a push's variables before the\n",
    "     push (they are appended first), and a completion before the variables\n",
    "     it lets go of; so a step is a push with the variable events before it,\n",
    "     a run, or a completion with the releases, grants and delete after it. */\n",
    "  var steps = [], buf = [], open = null;\n",
    "  function lone(i) { steps.push({ kind: E[i].k, seq: E[i].seq, idx: [i] }); }\n",
    "  function flush() { buf.forEach(lone); buf = []; }\n",
    "  E.forEach(function (ev, i) {\n",
    "    switch (ev.k) {\n",
    "    case 'var':\n",
    "      if (open && uses(open.seq, ev.v) && !has(open.released, ev.v)) { open.idx.push(i); open.released[ev.v] = 1; }\n",
    "      else buf.push(i);\n",
    "      break;\n",
    "    case 'grant':\n",
    "      if (open) open.idx.push(i); else { flush(); lone(i); }\n",
    "      break;\n",
    "    case 'push':\n",
    "      buf = buf.filter(function (j) { if (uses(ev.seq, E[j].v)) return true; lone(j); return false; });\n",
    "      steps.push({ kind: 'push', seq: ev.seq, idx: buf.concat([i]) });\n",
    "      buf = []; open = null;\n",
    "      break;\n",
    "    case 'complete':\n",
    "      flush();\n",
    "      open = { kind: 'complete', seq: ev.seq, idx: [i], released: {} };\n",
    "      steps.push(open);\n",
    "      break;\n",
    "    case 'delete':\n",
    "      if (open && open.seq === ev.seq) { open.idx.push(i); break; }\n",
    "      /* falls through */\n",
    "    default:\n",
    "      flush(); lone(i); open = null;\n",
    "    }\n",
    "  });\n",
    "  flush();\n",
    "  var N = steps.length;\n",
    "  steps.forEach(function (st) { delete st.released; st.first = Math.min.apply(null, st.idx); });\n",
    "\n",
    "  /* ---- the model: each variable's holders and FIFO queue, each op's state\n",
    "     and count of unmet dependencies (MXNet's ThreadedVar and OprBlock) ---- */\n",
    "  function fresh() {\n",
    "    var s = { vars: {}, vorder: [], ops: {}, oorder: [] };\n",
    "    T.vars.forEach(function (v) { addVar(s, v[0]); });\n",
    "    return s;\n",
    "  }\n",
    "  function addVar(s, slot) {\n",
    "    if (!s.vars[slot]) { s.vars[slot] = { holders: [], mode: '', q: [], qlen: 0, deleted: false, unknown: false }; s.vorder.push(slot); }\n",
    "    return s.vars[slot];\n",
    "  }\n",
    "  function addOp(s, ev) {\n",
    "    var o = s.ops[ev.seq];\n",
    "    if (!o) { o = s.ops[ev.seq] = { seq: ev.seq, name: ev.op, state: 'waiting', pending: 0, status: 0 }; s.oorder.push(ev.seq); }\n",
    "    return o;\n",
    "  }\n",
    "  function opLabel(s, seq) { return s.ops[seq] ? quoted(s.ops[seq].name) : '#' + seq; }\n",
    "  function heldText(s, v) {\n",
    "    if (v.unknown) return 'held by an operation this replay does not show';\n",
    "    if (!v.holders.length) return 'free';\n",
    "    return 'held for ' + (v.mode === 'w' ? 'writing' : 'reading') + ' by ' + andList(v.holders.map(function (h) { return opLabel(s, h); }));\n",
    "  }\n",
    "  /* One variable event; how: 'push' (op seq is appended), 'release' (op seq\n",
    "     lets go of it) or null (no op known). Returns a sentence. */\n",
    "  function varEvent(s, ev, how, seq) {\n",
    "    var v = addVar(s, ev.v), name = varName(ev.v), oldQ = v.q, before = heldText(s, v), line = '', moved = [], k, i;\n",
    "    v.deleted = false;\n",
    "    if (how === 'push' && ev.qlen === oldQ.length + 1) {\n",
    "      var w = ev.q.length === ev.qlen ? !!ev.q[ev.qlen - 1][1] : !!(G[seq] && G[seq].w.indexOf(ev.v) >= 0);\n",
    "      v.q = oldQ.concat([{ seq: seq, name: s.ops[seq].name, w: w }]);\n",
    "      line = name + ' is ' + before + (oldQ.length ? ', and ' + plural(oldQ.length, 'op', 'ops') + ' already wait' + (oldQ.length === 1 ? 's' : '') : '') +\n",
    "             ': ' + opLabel(s, seq) + ' joins its queue to ' + (w ? 'write' : 'read') + '.';\n",
    "    } else if (how === 'push') {\n",
    "      v.holders = v.holders.concat([seq]);\n",
    "      line = name + ' is ' + (v.holders.length > 1 ? 'only being read, and nobody waits' : 'free') + ': ' + opLabel(s, seq) +\n",
    "             ' takes it for ' + (ev.readers < 0 ? 'writing' : 'reading') + '.';\n",
    "    } else if (how === 'release') {\n",
    "      i = v.holders.indexOf(seq);\n",
    "      if (i >= 0) v.holders = v.holders.slice(0, i).concat(v.holders.slice(i + 1));\n",
    "      k = oldQ.length - ev.qlen;\n",
    "      if (k > 0) { moved = oldQ.slice(0, k); v.q = oldQ.slice(k); v.holders = v.holders.concat(moved.map(function (e) { return e.seq; })); }\n",
    "      line = opLabel(s, seq) + ' lets go of ' + name + (moved.length ? ', which passes to the first in its queue: ' +\n",
    "             andList(moved.map(function (e) { return quoted(e.name); })) + ' may now ' + (ev.readers < 0 ? 'write' : 'read') + ' it.'\n",
    "             : v.holders.length ? '; ' + plural(v.holders.length, 'reader', 'readers') + ' still hold' + (v.holders.length > 1 ? '' : 's') + ' it.' : '; nobody waits: ' + name + ' is free.');\n",
    "    }\n",
    "    v.mode = ev.readers < 0 ? 'w' : ev.readers > 0 ? 'r' : '';\n",
    "    v.qlen = ev.qlen;\n",
    "    /* the queue as the engine reported it; the model keeps which op each entry is */\n",
    "    var same = v.q.length === ev.qlen && ev.q.every(function (e, j) { return v.q[j].name === e[0] && v.q[j].w === !!e[1]; });\n",
    "    if (!same) v.q = ev.q.map(function (e) { return { seq: null, name: e[0], w: !!e[1] }; });\n",
    "    v.unknown = v.holders.length !== (ev.readers < 0 ? 1 : ev.readers);\n",
    "    if (v.unknown) v.holders = [];\n",
    "    if (!how) line = name + ' is now ' + heldText(s, v) + (ev.qlen ? ', with ' + plural(ev.qlen, 'op', 'ops') + ' in its queue.' : '.');\n",
    "    return line;\n",
    "  }\n",
    "  function grantLine(o) {\n",
    "    return o.pending > 0 ? quoted(o.name) + ' now waits for ' + plural(o.pending, 'more variable.', 'more variables.')\n",
    "                         : quoted(o.name) + ' has every variable it needs: it is ready to run.';\n",
    "  }\n",
    "  function holdsOf(s, seq) {\n",
    "    var h = [], q = [];\n",
    "    s.vorder.forEach(function (slot) {\n",
    "      var v = s.vars[slot];\n",
    "      if (v.holders.indexOf(seq) >= 0) h.push(varName(slot) + (v.mode === 'w' ? ' (write)' : ' (read)'));\n",
    "      if (v.q.some(function (e) { return e.seq === seq; })) q.push(varName(slot));\n",
    "    });\n",
    "    return [h, q];\n",
    "  }\n",
    "  /* Applies one step to s; returns its heading and its sentences. */\n",
    "  function applyStep(s, st) {\n",
    "    var ev0 = E[st.idx[st.idx.length - 1]], lines = [], title = '', o;\n",
    "    switch (st.kind) {\n",
    "    case 'push':\n",
    "      o = addOp(s, ev0);\n",
    "      title = '#' + o.seq + ' ' + quoted(o.name) + ' is pushed' + usesText(o.seq);\n",
    "      st.idx.slice(0, -1).forEach(function (i) { lines.push(varEvent(s, E[i], 'push', o.seq)); });\n",
    "      o.pending = ev0.pending;\n",
    "      o.state = o.pending > 0 ? 'waiting' : 'ready';\n",
    "      lines.push(o.pending > 0 ? 'It waits for ' + plural(o.pending, 'variable', 'variables') + ' (it stands in ' + plural(o.pending, 'queue', 'queues') + ').'\n",
    "                               : 'Nothing to wait for: it is ready to run.');\n",
    "      break;\n",
    "    case 'run':\n",
    "      o = addOp(s, ev0); o.state = 'running'; o.pending = 0;\n",
    "      title = '#' + o.seq + ' ' + quoted(o.name) + ' runs';\n",
    "      var h = holdsOf(s, o.seq)[0].map(function (x) { return x.replace(/ \\((read|write)\\)$/, function (m, w) { return ' for ' + w + 'ing'; }).replace('writeing', 'writing'); });\n",
    "      lines.push((h.length ? 'It holds every variable it uses (' + andList(h) + ')' : 'It has every variable it needs') + ', so the engine calls its function.');\n",
    "      break;\n",
    "    case 'complete':\n",
    "      o = addOp(s, E[st.idx[0]]);\n",
    "      o.status = E[st.idx[0]].status;\n",
    "      o.state = o.status ? 'failed' : 'done';\n",
    "      title = '#' + o.seq + ' ' + quoted(o.name) + (o.status ? ' fails (status ' + o.status + ')' : ' finishes');\n",
    "      if (o.status) lines.push('It failed: the ops that use what it writes will be skipped.');\n",
    "      st.idx.slice(1).forEach(function (i) {\n",
    "        var ev = E[i], g;\n",
    "        if (ev.k === 'var') lines.push(varEvent(s, ev, 'release', o.seq));\n",
    "        else if (ev.k === 'grant') { g = addOp(s, ev); g.pending = ev.pending; g.state = ev.pending > 0 ? 'waiting' : 'ready'; lines.push(grantLine(g)); }\n",
    "        else if (ev.k === 'delete') { deleteVar(s, ev); lines.push(varName(ev.v) + ' is deleted: every earlier use of it is over, and its slot is freed.'); }\n",
    "      });\n",
    "      if (st.idx.length === 1) lines.push('It lets go of its variables.');\n",
    "      break;\n",
    "    case 'var':\n",
    "      title = varName(ev0.v) + ' changes';\n",
    "      lines.push(varEvent(s, ev0, null, null));\n",
    "      break;\n",
    "    case 'grant':\n",
    "      o = addOp(s, ev0); o.pending = ev0.pending; o.state = ev0.pending > 0 ? 'waiting' : 'ready';\n",
    "      title = '#' + o.seq + ' ' + quoted(o.name) + ' gets a variable';\n",
    "      lines.push(grantLine(o));\n",
    "      break;\n",
    "    case 'delete':\n",
    "      deleteVar(s, ev0);\n",
    "      title = varName(ev0.v) + ' is deleted';\n",
    "      lines.push('Every earlier use of it is over, and its slot is freed.');\n",
    "      break;\n",
    "    default:\n",
    "      title = 'event ' + ev0.k;\n",
    "    }\n",
    "    return { title: title, lines: lines };\n",
    "  }\n",
    "  function deleteVar(s, ev) { var v = addVar(s, ev.v); v.deleted = true; v.holders = []; v.mode = ''; v.q = []; v.qlen = 0; v.unknown = false; }\n",
    "  function clone(s) { return JSON.parse(JSON.stringify(s)); }\n",
    "  var snaps = [], texts = [];\n",
    "  (function () { var s = fresh(), i; snaps.push(clone(s)); for (i = 0; i < N; i++) { texts.push(applyStep(s, steps[i])); if ((i + 1) % SNAP === 0) snaps.push(clone(s)); } })();\n",
    "  function stateAt(k) {\n",
    "    var s = clone(snaps[Math.floor(k / SNAP)]), i;\n",
    "    for (i = Math.floor(k / SNAP) * SNAP; i < k; i++) applyStep(s, steps[i]);\n",
    "    return s;\n",
    "  }\n",
    "  function markBefore(i) {   /* the program's last caption at or before event i */\n",
    "    for (; i >= 0; i--) if (has(marks, i)) return marks[i];\n",
    "    return '';\n",
    "  }\n",
    "  function captionAt(k) { return k ? markBefore(steps[k - 1].first) : has(marks, 0) ? 'next: ' + marks[0] : ''; }\n",
    "\n",
    "  /* ---- words for the tables ---- */\n",
    "  function varState(v) {\n",
    "    if (v.deleted) return ['deleted', 'deleted'];\n",
    "    if (v.mode === 'w') return ['held for writing', 'writing'];\n",
    "    if (v.mode === 'r') return ['held for reading', 'reading'];\n",
    "    return ['free', 'free'];\n",
    "  }\n",
    "  function holdersText(s, v) {\n",
    "    if (v.unknown) return '(an op not in this replay)';\n",
    "    return v.holders.map(function (h) { return '#' + h + ' ' + (s.ops[h] ? s.ops[h].name : '?'); }).join(', ');\n",
    "  }\n",
    "  function queueText(v) {\n",
    "    var t = v.q.map(function (e) { return e.name + ' (' + (e.w ? 'W' : 'R') + ')'; });\n",
    "    if (v.qlen > v.q.length) t.push('... ' + (v.qlen - v.q.length) + ' more');\n",
    "    return '[' + t.join(', ') + ']';\n",
    "  }\n",
    "  function opState(o) {\n",
    "    if (o.state === 'waiting') return o.pending > 0 ? 'waiting for ' + o.pending : 'ready';\n",
    "    if (o.state === 'failed') return 'failed (status ' + o.status + ')';\n",
    "    return o.state;\n",
    "  }\n",
    "\n",
    "  /* ---- the dependency graph: laid out once (rows by depth, each row in the\n",
    "     order with the fewest crossings), ops shown as they are pushed ---- */\n",
    "  var SVGNS = 'http://www.w3.org/2000/svg', nodes = {}, gedges = [];\n",
    "  function svg(tag, attrs, text) {\n",
    "    var e = document.createElementNS(SVGNS, tag), a;\n",
    "    for (a in attrs) if (has(attrs, a)) e.setAttribute(a, attrs[a]);\n",
    "    if (text !== undefined) e.textContent = text;\n",
    "    return e;\n",
    "  }\n",
    "  var inc = {};   /* each op's incoming edges */\n",
    "  function crossings(d, order, pos) {   /* edge pairs that cross between row d-1 and row d */\n",
    "    var n = 0, es = [];\n",
    "    order.forEach(function (op, i) { (inc[op.seq] || []).forEach(function (e) { if (pos[e.from].d === d - 1) es.push([pos[e.from].i, i]); }); });\n",
    "    es.forEach(function (a, i) { es.slice(i + 1).forEach(function (b) { if ((a[0] - b[0]) * (a[1] - b[1]) < 0) n++; }); });\n",
    "    return n;\n",
    "  }\n",
    "  function permutations(a) {\n",
    "    if (a.length < 2) return [a];\n",
    "    var out = [];\n",
    "    a.forEach(function (x, i) { permutations(a.slice(0, i).concat(a.slice(i + 1))).forEach(function (p) { out.push([x].concat(p)); }); });\n",
    "    return out;\n",
    "  }\n",
    "  function drawGraph() {\n",
    "    var box = $('graph'), ops = T.graph, last = {}, depth = {}, rows = [], W = 170, H = 38, GX = 30, GY = 70, LM = 70;\n",
    "    if (!ops) { box.appendChild(el('div', 'note', 'The graph was not recorded (set desc.trace.record_graph).')); return; }\n",
    "    function slotOf(v) { if (!last[v]) last[v] = { writer: 0, readers: [] }; return last[v]; }\n",
    "    ops.forEach(function (op) {\n",
    "      op.r.forEach(function (v) { var s = slotOf(v); if (s.writer && s.writer !== op.seq) gedges.push({ from: s.writer, to: op.seq, v: v, dashed: false }); s.readers.push(op.seq); });\n",
    "      op.w.forEach(function (v) {\n",
    "        var s = slotOf(v);\n",
    "        if (s.writer && s.writer !== op.seq) gedges.push({ from: s.writer, to: op.seq, v: v, dashed: false });\n",
    "        s.readers.forEach(function (r) { if (r !== op.seq) gedges.push({ from: r, to: op.seq, v: v, dashed: true }); });\n",
    "        s.writer = op.seq; s.readers = [];\n",
    "      });\n",
    "    });\n",
    "    ops.forEach(function (op) { depth[op.seq] = 0; });\n",
    "    gedges.forEach(function (e) { (inc[e.to] = inc[e.to] || []).push(e); });\n",
    "    gedges.forEach(function (e) { if (depth[e.from] + 1 > depth[e.to]) depth[e.to] = depth[e.from] + 1; });\n",
    "    ops.forEach(function (op) { var d = depth[op.seq]; (rows[d] = rows[d] || []).push(op); });\n",
    "    var pos = {}, widest = 0;\n",
    "    rows.forEach(function (r) { widest = Math.max(widest, r.length); });\n",
    "    rows.forEach(function (r, d) {\n",
    "      if (d > 0) {   /* parents' mean position first, then (small rows) the order with the fewest crossings */\n",
    "        var bary = {};\n",
    "        r.forEach(function (op) {\n",
    "          var xs = (inc[op.seq] || []).map(function (e) { return pos[e.from].x; });\n",
    "          bary[op.seq] = xs.length ? xs.reduce(function (a, b) { return a + b; }, 0) / xs.length : 0;\n",
    "        });\n",
    "        r.sort(function (a, b) { return bary[a.seq] - bary[b.seq] || a.seq - b.seq; });\n",
    "        if (r.length <= 6 && ops.length <= 500) {   /* at most 720 orders a row, for small graphs */\n",
    "          var best = r, bc = crossings(d, r, pos);\n",
    "          permutations(r).forEach(function (p) { var c = crossings(d, p, pos); if (c < bc) { bc = c; best = p; } });\n",
    "          rows[d] = r = best;\n",
    "        }\n",
    "      }\n",
    "      r.forEach(function (op, i) { pos[op.seq] = { x: LM + ((widest - r.length) / 2 + i) * (W + GX), y: 16 + d * (H + GY), d: d, i: i }; });\n",
    "    });\n",
    "    var width = LM + widest * (W + GX), height = 16 + rows.length * (H + GY) - GY + 16;\n",
    "    var root = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, width: width, height: height, role: 'img', 'aria-label': 'dependency graph' });\n",
    "    var defs = svg('defs', {}), mk = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });\n",
    "    mk.appendChild(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#5b6578' }));\n",
    "    defs.appendChild(mk); root.appendChild(defs);\n",
    "    /* ports: each op's edges to the next row leave its bottom spread out in\n",
    "       the order of their targets, and arrive at the top in the order of\n",
    "       their sources; an edge that skips rows goes around the left side */\n",
    "    var outs = {}, ins = {}, lefts = {};\n",
    "    gedges.forEach(function (e) {\n",
    "      e.far = pos[e.to].d - pos[e.from].d > 1;\n",
    "      if (e.far) { (lefts[e.from] = lefts[e.from] || []).push(e); (lefts[e.to] = lefts[e.to] || []).push(e); return; }\n",
    "      (outs[e.from] = outs[e.from] || []).push(e); (ins[e.to] = ins[e.to] || []).push(e);\n",
    "    });\n",
    "    function spread(list, key, set) {\n",
    "      list.sort(function (a, b) { return pos[a[key]].x - pos[b[key]].x; });\n",
    "      list.forEach(function (e, k) { set(e, (k + 1) / (list.length + 1)); });\n",
    "    }\n",
    "    Object.keys(outs).forEach(function (s) { spread(outs[s], 'to', function (e, f) { e.x1 = pos[e.from].x + W * f; e.y1 = pos[e.from].y + H; }); });\n",
    "    Object.keys(ins).forEach(function (s) { spread(ins[s], 'from', function (e, f) { e.x2 = pos[e.to].x + W * f; e.y2 = pos[e.to].y; }); });\n",
    "    Object.keys(lefts).forEach(function (s) {\n",
    "      lefts[s].forEach(function (e, k) {\n",
    "        var f = (k + 1) / (lefts[s].length + 1);\n",
    "        if (e.from === Number(s)) { e.x1 = pos[e.from].x; e.y1 = pos[e.from].y + H * f; } else { e.x2 = pos[e.to].x; e.y2 = pos[e.to].y + H * f; }\n",
    "      });\n",
    "    });\n",
    "    gedges.forEach(function (e) {\n",
    "      var c1x, c1y, c2x, c2y, g = svg('g', { 'class': 'edge' });\n",
    "      if (e.far) { c1x = LM / 2 - 20; c1y = e.y1 + GY; c2x = LM / 2 - 20; c2y = e.y2 - GY; }\n",
    "      else { c1x = e.x1; c1y = (e.y1 + e.y2) / 2; c2x = e.x2; c2y = c1y; }\n",
    "      var p = svg('path', { d: 'M ' + e.x1 + ' ' + e.y1 + ' C ' + c1x + ' ' + c1y + ', ' + c2x + ' ' + c2y + ', ' + e.x2 + ' ' + e.y2,\n",
    "                            fill: 'none', stroke: '#5b6578', 'stroke-width': 1.5, 'marker-end': 'url(#arrow)' });\n",
    "      if (e.dashed) p.setAttribute('stroke-dasharray', '5 4');\n",
    "      g.appendChild(p);\n",
    "      var t = 0.5, u = 1 - t;\n",
    "      var lx = u * u * u * e.x1 + 3 * u * u * t * c1x + 3 * u * t * t * c2x + t * t * t * e.x2;\n",
    "      var ly = u * u * u * e.y1 + 3 * u * u * t * c1y + 3 * u * t * t * c2y + t * t * t * e.y2;\n",
    "      var label = varName(e.v), lw = 10 + 7 * label.length;\n",
    "      g.appendChild(svg('rect', { 'class': 'label', x: lx - lw / 2, y: ly - 10, width: lw, height: 18, rx: 4, fill: '#fff', stroke: '#c4cad4' }));\n",
    "      g.appendChild(svg('text', { x: lx, y: ly + 4, 'text-anchor': 'middle', 'font-size': 12, fill: '#1d2330' }, label));\n",
    "      g.appendChild(svg('title', {}, quoted(varName(e.v)) + ': #' + e.to + ' waits for #' + e.from));\n",
    "      root.appendChild(g);\n",
    "      e.g = g;\n",
    "    });\n",
    "    ops.forEach(function (op) {\n",
    "      var p = pos[op.seq], g = svg('g', { 'class': 'op' }), label = '#' + op.seq + ' ' + op.op;\n",
    "      if (label.length > 22) label = label.slice(0, 21) + '\\u2026';\n",
    "      var r = svg('rect', { x: p.x, y: p.y, width: W, height: H, rx: 8, 'stroke-width': 1.5 });\n",
    "      g.appendChild(r);\n",
    "      g.appendChild(svg('title', {}, '#' + op.seq + ' ' + op.op));\n",
    "      var t = svg('text', { x: p.x + W / 2, y: p.y + H / 2 + 5, 'text-anchor': 'middle', 'font-size': 14 }, label);\n",
    "      g.appendChild(t);\n",
    "      root.appendChild(g);\n",
    "      nodes[op.seq] = { g: g, rect: r, text: t };\n",
    "    });\n",
    "    box.appendChild(root);\n",
    "  }\n",
    "  var fills = { waiting: ['#fff3cd', '#d4a017', '#5c4300'], ready: ['#efe3ff', '#7b4cc2', '#3f1f73'], running: ['#d6e8ff', '#1f5fae', '#123a6b'],\n",
    "                done: ['#e3f6e8', '#2e9e5b', '#17693a'], failed: ['#fde2e2', '#c03030', '#7a1414'] };\n",
    "  function colourGraph(s, st) {\n",
    "    var seq, o, f;\n",
    "    for (seq in nodes) if (has(nodes, seq)) {\n",
    "      o = s.ops[seq];\n",
    "      if (!o) { nodes[seq].g.setAttribute('display', 'none'); continue; }\n",
    "      nodes[seq].g.removeAttribute('display');\n",
    "      nodes[seq].state = o.state === 'waiting' && o.pending <= 0 ? 'ready' : o.state;\n",
    "      f = fills[nodes[seq].state] || fills.waiting;\n",
    "      nodes[seq].rect.setAttribute('fill', f[0]);\n",
    "      nodes[seq].rect.setAttribute('stroke', st && st.seq === Number(seq) && st.kind !== 'var' && st.kind !== 'delete' ? '#1d2330' : f[1]);\n",
    "      nodes[seq].rect.setAttribute('stroke-width', st && st.seq === Number(seq) && st.kind !== 'var' && st.kind !== 'delete' ? 4 : 1.5);\n",
    "      nodes[seq].text.setAttribute('fill', f[2]);\n",
    "    }\n",
    "    gedges.forEach(function (e) { if (s.ops[e.from] && s.ops[e.to]) e.g.removeAttribute('display'); else e.g.setAttribute('display', 'none'); });\n",
    "  }\n",
    "\n",
    "  /* ---- the events list: the program's captions, each step under its own heading ---- */\n",
    "  var logItems = [];\n",
    "  function buildLog() {\n",
    "    var ol = $('log'), prev = -1;\n",
    "    steps.forEach(function (st, k) {\n",
    "      var i;\n",
    "      for (i = prev + 1; i <= st.first; i++) if (has(marks, i)) ol.appendChild(el('li', 'mark', 'program: ' + marks[i]));\n",
    "      prev = Math.max(prev, st.first);\n",
    "      var li = el('li');\n",
    "      li.appendChild(el('span', 'head', texts[k].title));\n",
    "      texts[k].lines.forEach(function (l) { li.appendChild(el('span', 'sub', l)); });\n",
    "      li.value = k + 1;\n",
    "      li.addEventListener('click', function () { go(k + 1); });\n",
    "      ol.appendChild(li);\n",
    "      logItems.push(li);\n",
    "    });\n",
    "  }\n",
    "\n",
    "  /* ---- one step on screen ---- */\n",
    "  function render() {\n",
    "    var s = stateAt(cur), st = cur > 0 ? steps[cur - 1] : null, tx = cur > 0 ? texts[cur - 1] : null, lines = [];\n",
    "    $('pos').textContent = 'step ' + cur + ' of ' + N;\n",
    "    $('first').disabled = $('back').disabled = cur === 0;\n",
    "    $('next').disabled = $('last').disabled = cur === N;\n",
    "    $('caption').textContent = '';\n",
    "    if (captionAt(cur)) { $('caption').appendChild(el('span', 'prog', 'program: ')); $('caption').appendChild(document.createTextNode(captionAt(cur))); }\n",
    "    $('event').textContent = tx ? tx.title : 'Before the first event. Press Next (or the right arrow) to replay.';\n",
    "    $('explain').textContent = '';\n",
    "    if (tx) tx.lines.forEach(function (l) { $('explain').appendChild(el('div', '', l)); });\n",
    "    var vb = $('vars').tBodies[0], ob = $('ops').tBodies[0];\n",
    "    vb.textContent = ''; ob.textContent = '';\n",
    "    s.vorder.forEach(function (slot) {\n",
    "      var v = s.vars[slot], vs = varState(v), tr = el('tr'), qd = el('td');\n",
    "      tr.appendChild(el('td', 'name', varName(slot)));\n",
    "      var sd = el('td'); sd.appendChild(el('span', 'badge ' + vs[1], vs[0])); tr.appendChild(sd);\n",
    "      var hd = el('td', 'holders', holdersText(s, v));\n",
    "      if (!hd.textContent) hd.appendChild(el('span', 'empty', 'nobody'));\n",
    "      tr.appendChild(hd);\n",
    "      if (!v.q.length) qd.appendChild(el('span', 'empty', 'empty'));\n",
    "      v.q.forEach(function (e) { var c = el('span', 'chip', e.name); c.appendChild(el('b', e.w ? 'W' : 'R', e.w ? 'W' : 'R')); qd.appendChild(c); });\n",
    "      if (v.qlen > v.q.length) qd.appendChild(el('span', 'empty', '... ' + (v.qlen - v.q.length) + ' more'));\n",
    "      tr.appendChild(qd);\n",
    "      if (st && st.idx.some(function (i) { return (E[i].k === 'var' || E[i].k === 'delete') && E[i].v === Number(slot); })) tr.className = 'changed';\n",
    "      tr.setAttribute('data-var', varName(slot));\n",
    "      tr.setAttribute('data-state', vs[0]);\n",
    "      tr.setAttribute('data-holders', holdersText(s, v));\n",
    "      tr.setAttribute('data-queue', queueText(v));\n",
    "      vb.appendChild(tr);\n",
    "    });\n",
    "    s.oorder.forEach(function (seq) {\n",
    "      var o = s.ops[seq], tr = el('tr'), sd = el('td'), hq = holdsOf(s, seq), os = opState(o);\n",
    "      tr.appendChild(el('td', '', '#' + seq));\n",
    "      tr.appendChild(el('td', 'name', o.name));\n",
    "      sd.appendChild(el('span', 'badge ' + (os === 'ready' ? 'ready' : o.state), os));\n",
    "      tr.appendChild(sd);\n",
    "      tr.appendChild(el('td', '', hq[0].join(', ')));\n",
    "      tr.appendChild(el('td', '', hq[1].join(', ')));\n",
    "      if (st && st.idx.some(function (i) { return E[i].k !== 'var' && E[i].k !== 'delete' && E[i].seq === seq; })) tr.className = 'changed';\n",
    "      tr.setAttribute('data-op', o.name);\n",
    "      tr.setAttribute('data-state', os);\n",
    "      ob.appendChild(tr);\n",
    "    });\n",
    "    colourGraph(s, st);\n",
    "    logItems.forEach(function (li, i) { li.className = i + 1 === cur ? 'cur' : i + 1 < cur ? 'past' : ''; });\n",
    "    if (cur > 0) {   /* keep the current step in the list's view, without scrolling the page */\n",
    "      var li = logItems[cur - 1], ol = $('log');\n",
    "      if (li.offsetTop < ol.scrollTop) ol.scrollTop = li.offsetTop;\n",
    "      else if (li.offsetTop + li.offsetHeight > ol.scrollTop + ol.clientHeight) ol.scrollTop = li.offsetTop + li.offsetHeight - ol.clientHeight;\n",
    "    }\n",
    "    /* what the page shows, as text (read by tests through the DOM) */\n",
    "    lines.push('step ' + cur + ' of ' + N);\n",
    "    lines.push('events: ' + (st ? st.idx.map(function (i) { return i + 1; }).join(',') : ''));\n",
    "    lines.push('caption: ' + captionAt(cur));\n",
    "    lines.push('title: ' + $('event').textContent);\n",
    "    (tx ? tx.lines : []).forEach(function (l) { lines.push('line: ' + l); });\n",
    "    Array.prototype.forEach.call(vb.rows, function (tr) {\n",
    "      lines.push('var ' + tr.getAttribute('data-var') + ' | ' + tr.getAttribute('data-state') + ' | ' + tr.getAttribute('data-holders') + ' | ' + tr.getAttribute('data-queue'));\n",
    "    });\n",
    "    Array.prototype.forEach.call(ob.rows, function (tr) { lines.push('op ' + tr.cells[0].textContent + ' ' + tr.getAttribute('data-op') + ' | ' + tr.getAttribute('data-state')); });\n",
    "    Object.keys(nodes).forEach(function (seq) {\n",
    "      var n = nodes[seq];\n",
    "      if (n.g.getAttribute('display') !== 'none') lines.push('node #' + seq + ' | ' + n.state + ' | ' + n.rect.getAttribute('fill') + ' | ' + n.rect.getAttribute('stroke-width'));\n",
    "    });\n",
    "    gedges.forEach(function (e) { if (e.g.getAttribute('display') !== 'none') lines.push('edge #' + e.from + ' -> #' + e.to + ' | ' + varName(e.v) + ' | ' + (e.dashed ? 'dashed' : 'solid')); });\n",
    "    $('dp-state').textContent = lines.join('\\n') + '\\n';\n",
    "  }\n",
    "  function go(k) {\n",
    "    cur = Math.max(0, Math.min(N, k));\n",
    "    render();\n",
    "    if (!selftest) try { history.replaceState(null, '', '#step=' + cur); } catch (e) { /* file: URLs may refuse */ }\n",
    "  }\n",
    "  function fromHash() {\n",
    "    var m = /^#step=(\\d+)$/.exec(location.hash);\n",
    "    return m ? parseInt(m[1], 10) : null;\n",
    "  }\n",
    "\n",
    "  $('title').textContent = T.title;\n",
    "  document.title = T.title;\n",
    "  if (T.dropped || T.lost) $('warn').textContent = (T.dropped + T.lost) + ' events are missing from this replay (' +\n",
    "      (T.dropped ? T.dropped + ' past the recorder\\'s limit of ' + T.max : '') + (T.dropped && T.lost ? ', ' : '') + (T.lost ? T.lost + ' lost for lack of memory' : '') + '): what follows them may look inconsistent.';\n",
    "  $('first').addEventListener('click', function () { go(0); });\n",
    "  $('back').addEventListener('click', function () { go(cur - 1); });\n",
    "  $('next').addEventListener('click', function () { go(cur + 1); });\n",
    "  $('last').addEventListener('click', function () { go(N); });\n",
    "  document.addEventListener('keydown', function (e) {\n",
    "    var k = { ArrowRight: cur + 1, ArrowLeft: cur - 1, Home: 0, End: N }[e.key];\n",
    "    if (k === undefined || e.altKey || e.ctrlKey || e.metaKey) return;\n",
    "    e.preventDefault();\n",
    "    go(k);\n",
    "  });\n",
    "  window.addEventListener('hashchange', function () { var k = fromHash(); if (k !== null && k !== cur) go(k); });\n",
    "  var selftest = location.hash === '#selftest';\n",
    "  drawGraph();\n",
    "  buildLog();\n",
    "  go(fromHash() || 0);\n",
    "\n",
    "  /* #selftest: drives the controls as a person would (keys and buttons)\n",
    "     and keeps what the page showed after each press, for a browser test. */\n",
    "  if (selftest) {\n",
    "    var out = [], i;\n",
    "    var press = function (key) { document.dispatchEvent(new KeyboardEvent('keydown', { key: key, bubbles: true, cancelable: true })); };\n",
    "    var keep = function (tag) { out.push('=== ' + tag); out.push($('dp-state').textContent); };\n",
    "    press('End'); keep('End');\n",
    "    $('first').click(); keep('First');\n",
    "    for (i = 1; i <= N; i++) { if (i % 2) press('ArrowRight'); else $('next').click(); keep('forward ' + i); }\n",
    "    press('ArrowRight'); keep('past the end');\n",
    "    for (i = N - 1; i >= 0; i--) { if (i % 2) press('ArrowLeft'); else $('back').click(); keep('back ' + i); }\n",
    "    $('last').click(); keep('Last');\n",
    "    press('Home'); keep('Home');\n",
    "    $('dp-selftest').textContent = out.join('\\n');\n",
    "  }\n",
    "})();\n",
    "</script>\n",
    "</body>\n",
    "</html>\n",
    NULL
};
/* END GENERATED from tools/trace_page.html */
static void dp__html_lines(FILE *out, const char *const *lines) { for (; *lines; lines++) fputs(*lines, out); }
DP_IMPL dp_result dp_trace_write_html(dp_engine *eng, dp_trace_recorder *r, const char *title, FILE *out) {
    size_t i, lost;
    if (!r || !out) { DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "dp_trace_write_html: recorder or file"); return DP_ERROR_INVALID_ARGS; }
    dp__mutex_lock(&r->m);
    dp__html_lines(out, dp__html_head);
    fputs("{\"title\":", out);
    dp__json_string(out, title ? title : "depeng trace");
    fprintf(out, ",\"max\":%llu,\"dropped\":%llu,\"lost\":%llu,\n\"vars\":[", (unsigned long long)r->max_events,
            (unsigned long long)r->dropped, (unsigned long long)r->lost);
    for (i = 0; i < r->nvars; i++) {
        fprintf(out, "%s[%u,", i ? "," : "", (unsigned)r->vars[i].slot);
        dp__json_string(out, r->str[r->vars[i].name]);
        fputc(']', out);
    }
    fputs("],\n\"marks\":[", out);
    for (i = 0; i < r->nmarks; i++) {
        fprintf(out, "%s[%llu,", i ? "," : "", (unsigned long long)r->marks[i].at);
        dp__json_string(out, r->str[r->marks[i].text]);
        fputc(']', out);
    }
    fputs("],\n\"events\":[", out);
    for (i = 0; i < r->nev; i++) {
        fputs(i ? ",\n" : "\n", out);
        dp__html_event(out, r, &r->ev[i]);
    }
    fputs("],\n\"graph\":", out);
    dp__html_graph(out, eng);
    fputs("}\n", out);
    dp__html_lines(out, dp__html_tail);
    lost = r->lost;
    dp__mutex_unlock(&r->m);
    if (ferror(out)) { DP__LOG(eng, DP_LOG_ERROR, IO, "dp_trace_write_html: write error"); return DP_ERROR_IO; }
    if (lost) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_trace_write_html: %llu trace events were lost; the page says so", (unsigned long long)lost);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    return DP_OK;
}
#endif /* DEPENG_TRACE_HTML */

/* >>extensions --------------------------------------------------------------
   A lookup reads next_ext (acquire) and scans the published entries, so it
   takes no lock; making a state takes ext_mtx, fills the next entry, then
   publishes it (release). A create function may need another extension
   (the array layer's, when it makes an array), or push an op that the naive
   engine runs at once and that asks for one: the thread that holds ext_mtx
   then makes it without locking again, and only a create that asks for its
   own extension is refused (it would wait for itself). */
static void *dp__extension_find(dp_engine *eng, const dp_extension *ext) {
    int32_t i, n = dp__load(&eng->next_ext, DP__ACQUIRE);
    for (i = 0; i < n; i++) if (eng->ext[i].key == ext) return eng->ext[i].state;
    return NULL;
}
DP__COLD static void *dp__extension_make(dp_engine *eng, const dp_extension *ext) {
    void *state;
    int32_t n;
    if (!eng || !ext || !ext->create) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "dp_engine_extension needs an engine and an extension with a create function");
        return NULL;
    }
    int nested = dp__tls_ext_engine == eng, i;
    const dp_engine *outer = dp__tls_ext_engine;
    if (!nested) dp__mutex_lock(&eng->ext_mtx);
    state = dp__extension_find(eng, ext);
    for (i = 0; !state && i < dp__tls_ext_depth; i++) {
        if (dp__tls_ext_making[i] == ext) {
            DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "extension '%s': its create function asks for itself", ext->name ? ext->name : "?");
            if (!nested) dp__mutex_unlock(&eng->ext_mtx);
            return NULL;
        }
    }
    if (!state && eng->ext_closed) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "extension '%s' asked for while dp_engine_destroy tears the extensions down", ext->name ? ext->name : "?");
    } else if (!state && dp__load(&eng->next_ext, DP__RELAXED) == DP_MAX_EXTENSIONS) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "extension '%s': this engine has %d already (DP_MAX_EXTENSIONS)",
                ext->name ? ext->name : "?", DP_MAX_EXTENSIONS);
    } else if (!state) {
        dp__tls_ext_engine = eng;
        dp__tls_ext_making[dp__tls_ext_depth++] = ext;
        state = ext->create(eng, ext->user);
        dp__tls_ext_depth--;
        dp__tls_ext_engine = outer;
        n = dp__load(&eng->next_ext, DP__RELAXED);   /* a nested create may have taken a slot */
        if (state && n == DP_MAX_EXTENSIONS) {
            DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "extension '%s': this engine has %d already (DP_MAX_EXTENSIONS)",
                    ext->name ? ext->name : "?", DP_MAX_EXTENSIONS);
            if (ext->destroy) ext->destroy(eng, state, ext->user);
            state = NULL;
        } else if (state) {
            eng->ext[n].key = ext;
            eng->ext[n].state = state;
            dp__store(&eng->next_ext, n + 1, DP__RELEASE);
        }
    }
    if (!nested) dp__mutex_unlock(&eng->ext_mtx);
    return state;
}
DP_IMPL void *dp_engine_extension(dp_engine *eng, const dp_extension *ext) {
    void *state = eng && ext ? dp__extension_find(eng, ext) : NULL;
    return state ? state : dp__extension_make(eng, ext);
}
/* At destroy, every op done: the newest state first, as it may use older
   ones. No state is made from here on, and each is unpublished before its
   destroy runs, so a lookup during teardown finds only live states. */
static void dp__extensions_destroy(dp_engine *eng) {
    int32_t i;
    dp__mutex_lock(&eng->ext_mtx);
    eng->ext_closed = 1;
    dp__mutex_unlock(&eng->ext_mtx);
    for (i = dp__load(&eng->next_ext, DP__ACQUIRE) - 1; i >= 0; i--) {
        dp__store(&eng->next_ext, i, DP__RELEASE);
        if (eng->ext[i].key->destroy) eng->ext[i].key->destroy(eng, eng->ext[i].state, eng->ext[i].key->user);
    }
}

#ifndef DEPENG_NO_NDARRAY
/* ====================================================================== NDARRAY
   >>files (codec) >>dtypes >>storage >>arrays >>resources >>files >>data
   >>registry >>params >>invoke >>extending >>builtin operators (element-wise,
   gradients, reductions, nn, random, gemm, dot, copy and the optimizer
   updates, take, accuracy). The layer drives the engine through its public
   calls: an array's chunk is a variable, filling and copying are pushed
   operations, and freeing is a variable delete. It shares the engine's
   private helpers (allocation, atomics, locks, logging) but reads none of
   an engine's fields. What it keeps per engine (its storage settings,
   storage managers, resources, arrays kept for destroy) is one extension
   state (dp__nd_state, see >>storage). */

/* The layer's log items (DP_LOGITEM_ND_ARGS...): their texts are
   registered once, before the layer's first message. */
static const char *const dp__nd_item_msgs[] = {
    "invalid array argument (shape, dtype, size, count or context)",
    "file contents are malformed or unsupported",
    "engine destroyed while arrays still hold storage",
    "no operator is registered under this name",
    "invalid operator parameter (unknown, repeated, missing, mistyped or out of range)",
    "arrays that an operator writes share bytes",
};
static dp__a32 dp__nd_items_state, dp__nd_items_claim;    /* 2: registered */
static void dp__nd_items_once(void) {
    if (dp__load(&dp__nd_items_state, DP__ACQUIRE) == 2) return;
    if (dp__exchange(&dp__nd_items_claim, 1, DP__ACQ_REL) == 0) {
        dp_log_add_items(DP_LOGITEM_EXTENSION, (int)(sizeof dp__nd_item_msgs / sizeof dp__nd_item_msgs[0]), dp__nd_item_msgs);
        dp__store(&dp__nd_items_state, 2, DP__RELEASE);
    } else while (dp__load(&dp__nd_items_state, DP__ACQUIRE) != 2) dp__thread_yield();
}
DP__COLD static void dp__nd_log(const dp_engine *eng, uint32_t level, dp_log_item item, uint32_t line, const char *fmt, ...) {
    va_list ap;
    dp__nd_items_once();
    va_start(ap, fmt);
    dp__vlog(eng, level, item, __FILE__, line, fmt, ap);
    va_end(ap);
}
#undef DP__LOG
#define DP__LOG(eng, level, item, ...) dp__nd_log(eng, level, DP_LOGITEM_##item, __LINE__, __VA_ARGS__)

/* Element math that nvcc also compiles for the device (depeng_cuda.h), so
   the CPU tests check the formulas a GPU runs. */
#if defined(__CUDACC__)
#define DP__HD __host__ __device__
#else
#define DP__HD
#endif

/* The one conversion of a double to an integer element (see dp_dtype):
   NaN gives 0, values beyond the type's range (infinities included) give
   its nearest end, the rest truncate toward zero. The bounds compare
   exactly in double: 2^31 - 1 and 255 are doubles; INT64_MAX is not, so
   int64 saturates from 2^63 (the first double above it) and from -2^63. A
   plain C cast of an out-of-range value is undefined behaviour. */
static DP__HD int32_t dp__to_int32(double v) {
    if (v != v) return 0;
    if (v >= 2147483647.0) return 2147483647;
    if (v <= -2147483648.0) return -2147483647 - 1;
    return (int32_t)v;
}
static DP__HD int64_t dp__to_int64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return 9223372036854775807LL;
    if (v <= -9223372036854775808.0) return -9223372036854775807LL - 1;
    return (int64_t)v;
}
static DP__HD uint8_t dp__to_uint8(double v) {
    if (v != v || v <= 0.0) return 0;
    if (v >= 255.0) return 255;
    return (uint8_t)v;
}
static DP__HD int8_t dp__to_int8(double v) {
    if (v != v) return 0;
    if (v >= 127.0) return 127;
    if (v <= -128.0) return -128;
    return (int8_t)v;
}
/* IEEE binary16 (float16), stored as its 16 bits. From float: rounded to
   nearest, ties to even, as NumPy's conversion does: values from 65520 on
   become infinity, values down to 2^-24 become subnormals, NaN stays NaN
   (its top payload bits kept, the quiet bit set). */
static DP__HD uint16_t dp__half_from_float(float f) {
    uint32_t x, sign, ax, h, rem;
    memcpy(&x, &f, sizeof x);
    sign = (x >> 16) & 0x8000u; ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
    if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);         /* infinity, and what rounds to it */
    if (ax < 0x38800000u) {                                            /* below 2^-14: subnormal or zero */
        uint32_t e = ax >> 23, m = (ax & 0x7FFFFFu) | 0x800000u, shift;
        if (ax <= 0x33000000u) return (uint16_t)sign;                 /* up to 2^-25 (a tie) rounds to 0 */
        shift = 126u - e;
        h = m >> shift; rem = m & ((1u << shift) - 1u);
        if (rem > (1u << (shift - 1u)) || (rem == (1u << (shift - 1u)) && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    h = (ax - 0x38000000u) >> 13; rem = ax & 0x1FFFu;                 /* rebias 127 -> 15 */
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}
/* From double in one rounding, as NumPy's cast from float64 (through
   float32 it could round twice): float32 rounded to odd (toward zero, the
   last bit set when inexact) keeps enough bits for the second rounding to
   be the right one. */
static DP__HD uint16_t dp__half_from_double(double d) {
    float f = (float)d;
    if (f == f && (double)f != d) {
        uint32_t x;
        memcpy(&x, &f, sizeof x);
        if ((f < 0 ? -(double)f : (double)f) > (d < 0 ? -d : d)) x -= 1;   /* toward zero */
        x |= 1u;
        memcpy(&f, &x, sizeof f);
    }
    return dp__half_from_float(f);
}
static DP__HD float dp__half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, x;
    float f;
    if (e == 0x1Fu) x = sign | 0x7F800000u | (m << 13);
    else if (e) x = sign | ((e + 112u) << 23) | (m << 13);
    else if (!m) x = sign;
    else {                                                             /* subnormal: normalise */
        e = 113u;
        while (!(m & 0x400u)) { m <<= 1; e--; }
        x = sign | (e << 23) | ((m & 0x3FFu) << 13);
    }
    memcpy(&f, &x, sizeof f);
    return f;
}
/* Element access every kernel shares, in two forms. As double: any dtype
   loads; a store converts by the rule above (float16 through float32, as
   NumPy computes it; bool is v != 0, so NaN is true, as NumPy's cast). As
   int64, for the integer dtypes (bool, int8, uint8, int32, int64): exact,
   and a store into a narrower dtype keeps the low bits (wraps around, as
   NumPy's integer arithmetic and casts do); bool stores v != 0. Both
   compile for the device too: the GPU kernels load and store with them. */
static DP__HD int dp__dtype_is_int(dp_dtype dt) {
    return dt == DP_INT32 || dt == DP_INT64 || dt == DP_UINT8 || dt == DP_BOOL || dt == DP_INT8;
}
static DP__HD double dp__load_elem(const void *p, dp_dtype dt, int64_t i) {
    switch (dt) {
    case DP_FLOAT32: return ((const float *)p)[i];
    case DP_FLOAT64: return ((const double *)p)[i];
    case DP_INT32: return ((const int32_t *)p)[i];
    case DP_INT64: return (double)((const int64_t *)p)[i];
    case DP_FLOAT16: return dp__half_to_float(((const uint16_t *)p)[i]);
    case DP_BOOL: return ((const uint8_t *)p)[i] != 0;
    case DP_INT8: return ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}
/* Stores v by req: write (and in-place) replaces, add-to adds, null skips. */
static DP__HD void dp__store_elem(void *p, dp_dtype dt, int64_t i, double v, dp_req req) {
    if (req == DP_REQ_NULL) return;
    if (req == DP_REQ_ADD) v += dp__load_elem(p, dt, i);
    switch (dt) {
    case DP_FLOAT32: ((float *)p)[i] = (float)v; break;
    case DP_FLOAT64: ((double *)p)[i] = v; break;
    case DP_INT32: ((int32_t *)p)[i] = dp__to_int32(v); break;
    case DP_INT64: ((int64_t *)p)[i] = dp__to_int64(v); break;
    case DP_FLOAT16: ((uint16_t *)p)[i] = dp__half_from_float((float)v); break;
    case DP_BOOL: ((uint8_t *)p)[i] = (uint8_t)(v != 0); break;
    case DP_INT8: ((int8_t *)p)[i] = dp__to_int8(v); break;
    default: ((uint8_t *)p)[i] = dp__to_uint8(v); break;
    }
}
static DP__HD int64_t dp__load_int(const void *p, dp_dtype dt, int64_t i) {
    switch (dt) {
    case DP_INT32: return ((const int32_t *)p)[i];
    case DP_INT64: return ((const int64_t *)p)[i];
    case DP_BOOL: return ((const uint8_t *)p)[i] != 0;
    case DP_INT8: return ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}
/* Two's complement wrap-around without signed overflow (which C leaves
   undefined): the sum, difference or product modulo 2^64. */
static DP__HD int64_t dp__wrap(uint64_t v) { return v <= (uint64_t)INT64_MAX ? (int64_t)v : -(int64_t)(~v) - 1; }
static DP__HD void dp__store_int(void *p, dp_dtype dt, int64_t i, int64_t v, dp_req req) {
    if (req == DP_REQ_NULL) return;
    if (req == DP_REQ_ADD) v = dp__wrap((uint64_t)v + (uint64_t)dp__load_int(p, dt, i));
    switch (dt) {
    case DP_INT32: { uint32_t u = (uint32_t)(uint64_t)v; ((int32_t *)p)[i] = u <= 0x7FFFFFFFu ? (int32_t)u : -(int32_t)(~u) - 1; break; }
    case DP_INT64: ((int64_t *)p)[i] = v; break;
    case DP_BOOL: ((uint8_t *)p)[i] = (uint8_t)(v != 0); break;
    case DP_INT8: { uint8_t u = (uint8_t)(uint64_t)v; ((int8_t *)p)[i] = (int8_t)(u <= 127u ? (int)u : (int)u - 256); break; }
    default: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    }
}
/* dst[j] = src[i] (or +=, by req), converted from src's dtype to dst's:
   the bytes themselves for one dtype (bit-exact: NaN payloads, -0, int64
   beyond 2^53), integers as integers, an integer into a float rounded once,
   float64 into float16 rounded once, anything else through double. Every
   kernel that only moves data uses it. */
static DP__HD void dp__move_elem(void *dst, dp_dtype dt, int64_t j, const void *src, dp_dtype st, int64_t i, dp_req req) {
    int si = dp__dtype_is_int(st), di = dp__dtype_is_int(dt);
    if (req == DP_REQ_NULL) return;
    if (dt == st && req != DP_REQ_ADD) {
        switch (dt) {
        case DP_FLOAT64: case DP_INT64: ((uint64_t *)dst)[j] = ((const uint64_t *)src)[i]; return;
        case DP_FLOAT32: case DP_INT32: ((uint32_t *)dst)[j] = ((const uint32_t *)src)[i]; return;
        case DP_FLOAT16: ((uint16_t *)dst)[j] = ((const uint16_t *)src)[i]; return;
        default: ((uint8_t *)dst)[j] = ((const uint8_t *)src)[i]; return;
        }
    }
    if (si && di) dp__store_int(dst, dt, j, dp__load_int(src, st, i), req);
    else if (st == DP_FLOAT64 && dt == DP_FLOAT16 && req != DP_REQ_ADD) ((uint16_t *)dst)[j] = dp__half_from_double(((const double *)src)[i]);
    else if (si && req != DP_REQ_ADD && dt == DP_FLOAT32) ((float *)dst)[j] = (float)dp__load_int(src, st, i);
    else if (si && req != DP_REQ_ADD && dt == DP_FLOAT16) ((uint16_t *)dst)[j] = dp__half_from_float((float)dp__load_int(src, st, i));
    else dp__store_elem(dst, dt, j, dp__load_elem(src, st, i), req);
}


/* >>files: the .npy / .npz codec ===========================================
 * .npy / .npz codec, and the deflate codec (RFC 1951) of compressed members
 *
 * Host assumption: LITTLE-ENDIAN. Array bytes are written verbatim and the
 * descrs emitted here ('<f4', '<i8', ...) declare little-endian data; read
 * back verbatim too, but for big-endian or Fortran-order files, which
 * dp__npy_to_c_order rearranges.
 * (The integer fields of the .npy preamble and of ZIP records are packed
 * byte by byte, so those alone would be right on any host.)
 *
 * Nothing here allocates: callers own every buffer. The parsers never read
 * outside [buf, buf + len) and report bad input as DP_ERROR_FORMAT plus a
 * one-line message, so corrupt or truncated files cannot crash the caller.
 * Messages go to (msg, msgcap); msg may be NULL when msgcap is 0.
 * ========================================================================= */

/* ---- byte helpers shared by .npy and ZIP ---------------------------------- */

static uint32_t dp__npy_get_le16(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t dp__npy_get_le32(const unsigned char *p) {
    return dp__npy_get_le16(p) | dp__npy_get_le16(p + 2) << 16;
}

static uint64_t dp__npy_get_le64(const unsigned char *p) {
    return (uint64_t)dp__npy_get_le32(p) | (uint64_t)dp__npy_get_le32(p + 4) << 32;
}

static void dp__npy_put_le16(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v & 0xFFu);
    p[1] = (unsigned char)(v >> 8 & 0xFFu);
}

static void dp__npy_put_le32(unsigned char *p, uint32_t v) {
    dp__npy_put_le16(p, v & 0xFFFFu);
    dp__npy_put_le16(p + 2, v >> 16);
}

/* Whether [off, off + size) lies inside [0, len). Written so that no sum can
 * overflow: every bounds check on untrusted offsets goes through here. */
static int dp__npy_fits(uint64_t off, uint64_t size, uint64_t len) {
    return off <= len && size <= len - off;
}

/* Sets the error message and returns DP_ERROR_FORMAT, so that error paths
 * read `return dp__npy_fail(...)`. */
static dp_result dp__npy_fail(char *msg, size_t msgcap, const char *text) {
    if (msgcap > 0) snprintf(msg, msgcap, "%s", text);
    return DP_ERROR_FORMAT;
}

/* Copies untrusted bytes (a descr, a member name) for quoting in a message.
 * Non-printable bytes become '?' so the message stays on one line; text too
 * long for dst is cut and marked with "...". cap must be at least 4. */
static void dp__npy_printable(char *dst, size_t cap, const unsigned char *src, size_t n) {
    size_t keep = n < cap ? n : cap - 4, i;
    for (i = 0; i < keep; i++)
        dst[i] = (src[i] >= 0x20 && src[i] < 0x7F) ? (char)src[i] : '?';
    if (keep < n) {
        memcpy(dst + keep, "...", 3);
        keep += 3;
    }
    dst[keep] = '\0';
}

/* ---- dtypes and sizes ------------------------------------------------------ */

/* The descr NumPy writes for dt (and its element size), or NULL if dt is not
 * a valid dtype. The single table of supported dtypes: parsing looks codes
 * up here too. */
static const char *dp__npy_descr(dp_dtype dt, size_t *itemsize) {
    switch (dt) {
    case DP_FLOAT32: *itemsize = 4; return "<f4";
    case DP_FLOAT64: *itemsize = 8; return "<f8";
    case DP_INT32:   *itemsize = 4; return "<i4";
    case DP_INT64:   *itemsize = 8; return "<i8";
    case DP_UINT8:   *itemsize = 1; return "|u1";
    case DP_FLOAT16: *itemsize = 2; return "<f2";
    case DP_BOOL:    *itemsize = 1; return "|b1";
    case DP_INT8:    *itemsize = 1; return "|i1";
    default: break;
    }
    *itemsize = 0;
    return NULL;
}

static int dp__npy_shape_ok(const dp_shape *s) {
    int32_t i;
    if (s->ndim < 0 || s->ndim > DP_MAX_DIMS) return 0;
    for (i = 0; i < s->ndim; i++)
        if (s->dims[i] < 0) return 0;
    return 1;
}

/* Bytes of array data for dtype dt and shape s (a 0-d shape holds one
 * element). DP_ERROR_INVALID_ARGS for a bad dtype or shape, or when the size
 * does not fit in size_t. */
static dp_result dp__npy_nbytes(dp_dtype dt, const dp_shape *s, size_t *nbytes) {
    size_t total;
    int32_t i;
    if (!s || !nbytes || !dp__npy_descr(dt, &total) || !dp__npy_shape_ok(s))
        return DP_ERROR_INVALID_ARGS;
    /* A zero dim makes the array empty however large the other dims are,
     * so look for one before multiplying (which could overflow first). */
    for (i = 0; i < s->ndim; i++)
        if (s->dims[i] == 0) {
            *nbytes = 0;
            return DP_OK;
        }
    for (i = 0; i < s->ndim; i++) {
        uint64_t d = (uint64_t)s->dims[i];
        if (d > SIZE_MAX / total) return DP_ERROR_INVALID_ARGS;
        total *= (size_t)d;
    }
    *nbytes = total;
    return DP_OK;
}

/* ---- .npy header writing ------------------------------------------------------ */

/* Appends to a fixed buffer. len keeps counting past cap, so one check of
 * len <= cap at the end tells whether everything fitted. */
typedef struct dp__npy_text {
    char *buf;
    size_t cap, len;
} dp__npy_text;

static void dp__npy_text_put(dp__npy_text *t, const char *s, size_t n) {
    if (t->len <= t->cap && n <= t->cap - t->len) memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void dp__npy_text_put_dim(dp__npy_text *t, int64_t v) /* v >= 0 */
{
    char digits[24];
    size_t i = sizeof digits;
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    dp__npy_text_put(t, digits + i, sizeof digits - i);
}

/* The header dict exactly as numpy.lib.format._write_array_header builds it:
 * sorted keys, "'key': repr(value), " each, then "}". Recent NumPy then adds
 * 21 - len(repr(shape[0])) spaces so shape[0] can later grow in place; those
 * are included because they change where the 64-byte padding lands.
 * Returns the length (> cap means it did not fit). */
static size_t dp__npy_dict(const char *descr, const dp_shape *s, char *buf, size_t cap) {
    static const char spaces[] = "                     "; /* 21 */
    dp__npy_text t;
    size_t first_dim_digits = 0;
    int32_t i;
    t.buf = buf;
    t.cap = cap;
    t.len = 0;
    dp__npy_text_put(&t, "{'descr': '", 11);
    dp__npy_text_put(&t, descr, strlen(descr));
    dp__npy_text_put(&t, "', 'fortran_order': False, 'shape': (", 37);
    for (i = 0; i < s->ndim; i++) {
        size_t before = t.len;
        if (i > 0) dp__npy_text_put(&t, ", ", 2);
        dp__npy_text_put_dim(&t, s->dims[i]);
        if (i == 0) first_dim_digits = t.len - before;
    }
    if (s->ndim == 1) dp__npy_text_put(&t, ",", 1); /* Python's 1-tuple: (6,) */
    dp__npy_text_put(&t, "), }", 4);
    if (s->ndim > 0) dp__npy_text_put(&t, spaces, 21 - first_dim_digits);
    return t.len;
}

/* Total preamble length as numpy.lib.format._wrap_header computes it: text
 * plus '\n' is padded with spaces so the data starts at a multiple of 64.
 * NumPy's pad is 1..64, never 0; copied so the bytes match exactly. */
static size_t dp__npy_preamble_len(size_t prefix_len, size_t text_len) {
    size_t hlen = text_len + 1;
    return prefix_len + hlen + (64 - (prefix_len + hlen) % 64);
}

/* Writes the complete .npy preamble (magic, version, header length, dict,
 * padding, '\n') for an array of dtype dt and shape s into out; *len gets
 * its size, always a multiple of 64. Version 1.0 unless the header needs
 * more than 65535 bytes (impossible with DP_MAX_DIMS 8, kept for fidelity
 * to NumPy), then 2.0. DP_ERROR_INVALID_ARGS for a bad dtype, ndim outside
 * 0..DP_MAX_DIMS, a negative dim or cap too small (256 always suffices). */
static dp_result dp__npy_header(dp_dtype dt, const dp_shape *s, char *out, size_t cap, size_t *len) {
    char dict[256]; /* longest possible: 8 dims of 19 digits, about 225 */
    size_t itemsize, dict_len, prefix_len = 10, total;
    unsigned char *u = (unsigned char *)out;
    const char *descr = dp__npy_descr(dt, &itemsize);

    if (!descr || !s || !out || !len || !dp__npy_shape_ok(s)) return DP_ERROR_INVALID_ARGS;
    dict_len = dp__npy_dict(descr, s, dict, sizeof dict);
    if (dict_len > sizeof dict) return DP_ERROR_INVALID_ARGS;
    total = dp__npy_preamble_len(prefix_len, dict_len);
    if (total - prefix_len > 0xFFFFu) { /* version 1.0 stores a uint16 length */
        prefix_len = 12;
        total = dp__npy_preamble_len(prefix_len, dict_len);
    }
    if (cap < total) return DP_ERROR_INVALID_ARGS;

    memcpy(out, "\x93NUMPY", 6);
    u[6] = (unsigned char)(prefix_len == 10 ? 1 : 2);
    u[7] = 0;
    if (prefix_len == 10)
        dp__npy_put_le16(u + 8, (uint32_t)(total - prefix_len));
    else
        dp__npy_put_le32(u + 8, (uint32_t)(total - prefix_len));
    memcpy(out + prefix_len, dict, dict_len);
    memset(out + prefix_len + dict_len, ' ', total - prefix_len - dict_len - 1);
    out[total - 1] = '\n';
    *len = total;
    return DP_OK;
}

/* ---- .npy header parsing ------------------------------------------------------ */

/* Reads the header dict, a Python literal, within [p, end). */
typedef struct dp__npy_cursor {
    const unsigned char *p, *end;
    char *msg;
    size_t msgcap;
} dp__npy_cursor;

/* What the dict said, plus which keys were seen (to catch missing and
 * duplicate keys). */
typedef struct dp__npy_fields {
    dp_dtype dtype;
    dp_shape shape;
    unsigned convert; /* DP__NPY_FORTRAN, DP__NPY_SWAP: how the data differs from C order, little-endian */
    int seen_descr, seen_order, seen_shape;
} dp__npy_fields;
enum { DP__NPY_FORTRAN = 1u, DP__NPY_SWAP = 2u };

static int dp__npy_is_space(unsigned char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static int dp__npy_is_word_char(unsigned char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

static void dp__npy_skip_space(dp__npy_cursor *c) {
    while (c->p < c->end && dp__npy_is_space(*c->p)) c->p++;
}

/* Consumes ch (after optional whitespace) if it is next. */
static int dp__npy_accept(dp__npy_cursor *c, char ch) {
    dp__npy_skip_space(c);
    if (c->p < c->end && *c->p == (unsigned char)ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* Consumes a whole identifier such as True, not a prefix of a longer one. */
static int dp__npy_accept_word(dp__npy_cursor *c, const char *word) {
    size_t n = strlen(word);
    dp__npy_skip_space(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    if ((size_t)(c->end - c->p) > n && dp__npy_is_word_char(c->p[n])) return 0;
    c->p += n;
    return 1;
}

/* Reports what the parser expected. Running out of header text is how a
 * truncated or unclosed dict shows up, so that case says "unterminated". */
static dp_result dp__npy_syntax_error(dp__npy_cursor *c, const char *expected) {
    char seen[24];
    if (c->p >= c->end) {
        snprintf(c->msg, c->msgcap, "unterminated .npy header dict: it ends where %s was expected", expected);
        return DP_ERROR_FORMAT;
    }
    dp__npy_printable(seen, sizeof seen, c->p, (size_t)(c->end - c->p));
    snprintf(c->msg, c->msgcap, "malformed .npy header dict: expected %s at \"%s\"", expected, seen);
    return DP_ERROR_FORMAT;
}

/* A '...' or "..." string without escapes (NumPy never writes any). */
static dp_result dp__npy_string(dp__npy_cursor *c, const char *what, const unsigned char **s, size_t *n) {
    const unsigned char *close;
    dp__npy_skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return dp__npy_syntax_error(c, what);
    close = (const unsigned char *)memchr(c->p + 1, *c->p, (size_t)(c->end - c->p - 1));
    if (!close) {
        c->p = c->end;
        return dp__npy_syntax_error(c, "a closing quote");
    }
    *s = c->p + 1;
    *n = (size_t)(close - *s);
    c->p = close + 1;
    return DP_OK;
}

static int dp__npy_equals(const unsigned char *s, size_t n, const char *lit) {
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* Maps a descr to a dtype: optional byte-order char then a code from
 * dp__npy_descr's table ('<u1', '>i1' and '|f4' are fine: order is moot or
 * native). A big-endian type of more than one byte sets *swap. */
static dp_result dp__npy_dtype_of(const unsigned char *s, size_t n, dp_dtype *dt, int *swap, char *msg, size_t msgcap) {
    char shown[40];
    size_t itemsize, skip = (n > 0 && (s[0] == '<' || s[0] == '|' || s[0] == '=' || s[0] == '>')) ? 1 : 0;
    int i;
    dp__npy_printable(shown, sizeof shown, s, n);
    for (i = 0; i < (int)DP_DTYPE_COUNT; i++) {
        const char *known = dp__npy_descr((dp_dtype)i, &itemsize);
        if (n - skip == 2 && memcmp(s + skip, known + 1, 2) == 0) break;
    }
    if (i == (int)DP_DTYPE_COUNT) {
        snprintf(msg, msgcap, "unsupported dtype '%s' (supported: <f4 <f8 <f2 <i4 <i8 |u1 |i1 |b1)", shown);
        return DP_ERROR_FORMAT;
    }
    *swap = s[0] == '>' && itemsize > 1;  /* one byte has no order: '>u1' is as is */
    *dt = (dp_dtype)i;
    return DP_OK;
}

/* One shape dimension: a non-negative integer literal. */
static dp_result dp__npy_dim(dp__npy_cursor *c, int64_t *out) {
    int64_t v = 0;
    int digits = 0;
    dp__npy_skip_space(c);
    if (c->p < c->end && *c->p == '-') return dp__npy_fail(c->msg, c->msgcap, "negative dimension in .npy shape");
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++, digits++) {
        int d = *c->p - '0';
        if (v > (INT64_MAX - d) / 10) return dp__npy_fail(c->msg, c->msgcap, "dimension in .npy shape overflows int64");
        v = v * 10 + d;
    }
    if (digits == 0) return dp__npy_syntax_error(c, "a dimension (a non-negative integer)");
    if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 NumPy wrote longs as 3L */
    *out = v;
    return DP_OK;
}

/* A tuple of dims: (), (n,), (a, b) or (a, b,). */
static dp_result dp__npy_shape(dp__npy_cursor *c, dp_shape *s) {
    int commas = 0;
    int64_t d = 0;
    dp_result r;
    s->ndim = 0;
    if (!dp__npy_accept(c, '(')) return dp__npy_syntax_error(c, "'(' opening the shape tuple");
    while (!dp__npy_accept(c, ')')) {
        if ((r = dp__npy_dim(c, &d)) != DP_OK) return r;
        if (s->ndim == DP_MAX_DIMS) {
            snprintf(c->msg, c->msgcap, "shape has more than %d dimensions, the most supported", DP_MAX_DIMS);
            return DP_ERROR_FORMAT;
        }
        s->dims[s->ndim++] = d;
        if (dp__npy_accept(c, ',')) {
            commas++;
            continue;
        }
        if (dp__npy_accept(c, ')')) break;
        return dp__npy_syntax_error(c, "',' or ')' in the shape tuple");
    }
    /* In Python (6) is the number 6, not a tuple; NumPy rejects it too. */
    if (s->ndim == 1 && commas == 0) return dp__npy_fail(c->msg, c->msgcap, "shape (n) is not a tuple; expected (n,)");
    return DP_OK;
}

static dp_result dp__npy_first_time(dp__npy_cursor *c, int *seen, const char *key) {
    if (!*seen) {
        *seen = 1;
        return DP_OK;
    }
    snprintf(c->msg, c->msgcap, "duplicate key '%s' in .npy header dict", key);
    return DP_ERROR_FORMAT;
}

/* Parses the value of one key into f. */
static dp_result dp__npy_value(dp__npy_cursor *c, const unsigned char *key, size_t key_len, dp__npy_fields *f) {
    const unsigned char *s;
    size_t n;
    dp_result r;
    char shown[40];
    if (dp__npy_equals(key, key_len, "descr")) {
        int swap = 0;
        if ((r = dp__npy_first_time(c, &f->seen_descr, "descr")) != DP_OK) return r;
        if (dp__npy_accept(c, '['))
            return dp__npy_fail(c->msg, c->msgcap, "structured dtypes (a list as 'descr') are not supported");
        if ((r = dp__npy_string(c, "a dtype string for 'descr'", &s, &n)) != DP_OK) return r;
        if ((r = dp__npy_dtype_of(s, n, &f->dtype, &swap, c->msg, c->msgcap)) != DP_OK) return r;
        if (swap) f->convert |= DP__NPY_SWAP;
        return DP_OK;
    }
    if (dp__npy_equals(key, key_len, "fortran_order")) {
        if ((r = dp__npy_first_time(c, &f->seen_order, "fortran_order")) != DP_OK) return r;
        if (dp__npy_accept_word(c, "False")) return DP_OK;
        if (dp__npy_accept_word(c, "True")) {
            f->convert |= DP__NPY_FORTRAN;
            return DP_OK;
        }
        return dp__npy_syntax_error(c, "True or False for 'fortran_order'");
    }
    if (dp__npy_equals(key, key_len, "shape")) {
        if ((r = dp__npy_first_time(c, &f->seen_shape, "shape")) != DP_OK) return r;
        return dp__npy_shape(c, &f->shape);
    }
    dp__npy_printable(shown, sizeof shown, key, key_len);
    snprintf(c->msg, c->msgcap, "unexpected key '%s' in .npy header dict", shown);
    return DP_ERROR_FORMAT;
}

/* The whole header text: { key: value, ... } then only whitespace. Keys in
 * any order, trailing comma optional, all three keys required. */
static dp_result dp__npy_dict_parse(dp__npy_cursor *c, dp__npy_fields *f) {
    const unsigned char *key;
    size_t key_len;
    dp_result r;
    if (!dp__npy_accept(c, '{')) return dp__npy_syntax_error(c, "'{' opening the header dict");
    while (!dp__npy_accept(c, '}')) {
        if ((r = dp__npy_string(c, "a quoted key or '}'", &key, &key_len)) != DP_OK) return r;
        if (!dp__npy_accept(c, ':')) return dp__npy_syntax_error(c, "':' after a key");
        if ((r = dp__npy_value(c, key, key_len, f)) != DP_OK) return r;
        if (dp__npy_accept(c, ',')) continue;
        if (dp__npy_accept(c, '}')) break;
        return dp__npy_syntax_error(c, "',' or '}' after a value");
    }
    dp__npy_skip_space(c);
    if (c->p != c->end) return dp__npy_fail(c->msg, c->msgcap, "unexpected text after the .npy header dict");
    if (!f->seen_descr) return dp__npy_fail(c->msg, c->msgcap, ".npy header dict is missing the 'descr' key");
    if (!f->seen_order) return dp__npy_fail(c->msg, c->msgcap, ".npy header dict is missing the 'fortran_order' key");
    if (!f->seen_shape) return dp__npy_fail(c->msg, c->msgcap, ".npy header dict is missing the 'shape' key");
    return DP_OK;
}

/* Checks magic and version; finds the header text at [*prefix_len,
 * *prefix_len + *header_len), which is inside the buffer on success. */
static dp_result dp__npy_preamble(const unsigned char *buf, size_t len, size_t *prefix_len, size_t *header_len,
                                  char *msg, size_t msgcap) {
    static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    unsigned major, minor;
    if (len == 0) return dp__npy_fail(msg, msgcap, "empty file (0 bytes), not a .npy file");
    if (memcmp(buf, magic, len < 6 ? len : 6) != 0)
        return dp__npy_fail(msg, msgcap, "not a .npy file (bad magic; expected \\x93NUMPY)");
    if (len < 10) {
        snprintf(msg, msgcap, "truncated .npy file: %zu bytes, shorter than the preamble", len);
        return DP_ERROR_FORMAT;
    }
    major = buf[6];
    minor = buf[7];
    if (major < 1 || major > 3 || minor != 0) {
        snprintf(msg, msgcap, "unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are supported)", major, minor);
        return DP_ERROR_FORMAT;
    }
    /* 1.0 stores the header length as uint16, 2.0 and 3.0 as uint32. */
    *prefix_len = major == 1 ? 10 : 12;
    if (len < *prefix_len) {
        snprintf(msg, msgcap, "truncated .npy file: %zu bytes, shorter than the preamble", len);
        return DP_ERROR_FORMAT;
    }
    *header_len = major == 1 ? dp__npy_get_le16(buf + 8) : dp__npy_get_le32(buf + 8);
    if (*header_len > len - *prefix_len) {
        snprintf(msg, msgcap, "truncated .npy file: the preamble declares a %zu-byte header but only %zu bytes follow",
                 *header_len, len - *prefix_len);
        return DP_ERROR_FORMAT;
    }
    return DP_OK;
}

/* The bytes after the header must be exactly the array data. */
static dp_result dp__npy_check_data(const dp__npy_fields *f, size_t data_len, char *msg, size_t msgcap) {
    size_t expected;
    if (dp__npy_nbytes(f->dtype, &f->shape, &expected) != DP_OK)
        return dp__npy_fail(msg, msgcap, ".npy shape is too large: its byte size overflows size_t");
    if (data_len < expected) {
        snprintf(msg, msgcap, "truncated .npy data: expected %zu bytes of array data, found %zu", expected, data_len);
        return DP_ERROR_FORMAT;
    }
    if (data_len > expected) {
        snprintf(msg, msgcap, "trailing bytes after .npy data: expected %zu bytes of array data, found %zu", expected,
                 data_len);
        return DP_ERROR_FORMAT;
    }
    return DP_OK;
}

/* Parses a whole .npy file image. On success fills *dt, *s,
 * *data_offset (where the array bytes start; they run to buf + len) and
 * *convert (DP__NPY_FORTRAN for column-major data, DP__NPY_SWAP for
 * big-endian elements: dp__npy_to_c_order makes them C order,
 * little-endian). On bad input returns DP_ERROR_FORMAT with a message and
 * leaves the outputs alone. Versions 1.0, 2.0 and 3.0; the eight dtypes of
 * dp__npy_descr's table in either byte order; C or Fortran order. */
static dp_result dp__npy_parse(const unsigned char *buf, size_t len, dp_dtype *dt, dp_shape *s, size_t *data_offset,
                               unsigned *convert, char *msg, size_t msgcap) {
    size_t prefix_len = 0, header_len = 0;
    dp__npy_cursor c;
    dp__npy_fields f;
    dp_result r;

    if (!msg) msgcap = 0;
    if (msgcap > 0) msg[0] = '\0';
    if ((!buf && len > 0) || !dt || !s || !data_offset || !convert) {
        dp__npy_fail(msg, msgcap, "invalid arguments to the .npy parser");
        return DP_ERROR_INVALID_ARGS;
    }
    if ((r = dp__npy_preamble(buf, len, &prefix_len, &header_len, msg, msgcap)) != DP_OK) return r;

    memset(&f, 0, sizeof f);
    c.p = buf + prefix_len;
    c.end = c.p + header_len;
    c.msg = msg;
    c.msgcap = msgcap;
    if ((r = dp__npy_dict_parse(&c, &f)) != DP_OK) return r;
    if ((r = dp__npy_check_data(&f, len - prefix_len - header_len, msg, msgcap)) != DP_OK) return r;

    *dt = f.dtype;
    *s = f.shape;
    *data_offset = prefix_len + header_len;
    *convert = f.convert;
    return DP_OK;
}

/* Writes the nbytes of array data at src, laid out as convert says, to dst
 * in C order and little-endian (dst and src do not overlap). dst[i] is the
 * element at the i-th multi-index in C order (the last index fastest); in
 * Fortran order that element is at sum(index[d] * stride[d]) with the first
 * index fastest, which `off` follows as the C-order index counts up. Every
 * read is below nbytes: off <= the element count - 1. */
static void dp__npy_to_c_order(const unsigned char *src, unsigned char *dst, size_t nbytes, dp_dtype dt,
                               const dp_shape *s, unsigned convert) {
    size_t k = dp_dtype_size(dt), n = k ? nbytes / k : 0, stride[DP_MAX_DIMS], index[DP_MAX_DIMS], off = 0, i, b;
    int d, nd = s->ndim, swap = (convert & DP__NPY_SWAP) != 0, fortran = (convert & DP__NPY_FORTRAN) != 0;
    for (d = 0, i = 1; d < nd; d++) {
        stride[d] = i;
        index[d] = 0;
        i *= (size_t)s->dims[d];
    }
    for (i = 0; i < n; i++) {
        const unsigned char *from = src + (fortran ? off : i) * k;
        for (b = 0; b < k; b++) dst[i * k + b] = from[swap ? k - 1 - b : b];
        for (d = nd - 1; fortran && d >= 0; d--) {  /* the next C-order index, and its Fortran offset */
            off += stride[d];
            if (++index[d] < (size_t)s->dims[d]) break;
            off -= stride[d] * index[d];
            index[d] = 0;
        }
    }
}

/* ---- CRC-32 ------------------------------------------------------------------- */

/* zlib's CRC-32 (reflected, polynomial 0xEDB88320): start with crc = 0 and
 * pass each result back in to continue a stream, as with zlib's crc32().
 * Only a 16-entry table is stored; each call expands it into a byte-wise
 * table on the stack (512 steps, under a microsecond), which roughly doubles
 * throughput on large arrays (about 400 MB/s here) over half-byte steps. */
static uint32_t dp__crc32(uint32_t crc, const void *data, size_t len) {
    static const uint32_t half_byte[16] = {
        0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu, 0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
        0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu, 0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu};
    uint32_t byte[256], i;
    const unsigned char *p = (const unsigned char *)data;
    for (i = 0; i < 256; i++) {
        uint32_t c = half_byte[i & 15u] ^ (i >> 4);
        byte[i] = half_byte[c & 15u] ^ (c >> 4);
    }
    crc = ~crc;
    while (len-- > 0) crc = byte[(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}

/* ---- inflate (RFC 1951) --------------------------------------------------------- */

/* The raw deflate format of ZIP method 8, as numpy.savez_compressed writes
 * it through Python's zipfile and zlib. Every input bit is read through a
 * bounds check and every output byte is written through one, so a hostile
 * stream can only fail: DP_ERROR_FORMAT with a message. Decisions that
 * zlib makes on malformed streams are made the same way here, so the two
 * accept and refuse the same inputs: an over-subscribed code, an
 * incomplete one (except a single code of one bit, or no distance codes at
 * all), the reserved literal/length symbols 286-287 and distances 30-31,
 * more than 286 literal/length or 30 distance code lengths, a repeat with
 * nothing to repeat or running past the lengths, a block without an
 * end-of-block code, and a distance reaching before the first output byte
 * are all refused. Bytes after the final block are ignored, as zlib does. */
enum {
    DP__HUFF_FAST = 10,     /* bits looked up at once; longer codes are walked */
    DP__HUFF_MAXBITS = 15,  /* longest code deflate allows */
    DP__HUFF_MAXSYMS = 288  /* literal/length alphabet incl. the two reserved */
};

/* A canonical Huffman code for decoding. count[l] codes have length l;
 * symbol[] lists the symbols by (length, value), the canonical order.
 * fast[] maps the next DP__HUFF_FAST input bits (first bit lowest) to
 * length << 9 | symbol for codes that short, or 0: longer, or no code. */
typedef struct dp__huff {
    uint16_t fast[1u << DP__HUFF_FAST];
    uint16_t count[DP__HUFF_MAXBITS + 1];
    uint16_t symbol[DP__HUFF_MAXSYMS];
} dp__huff;

static uint32_t dp__bit_reverse(uint32_t code, unsigned len) {
    uint32_t r = 0;
    while (len-- > 0) {
        r = r << 1 | (code & 1u);
        code >>= 1;
    }
    return r;
}

/* Builds h from the code lengths of n symbols (0: unused). Returns 0 for a
 * complete code, 1 for an incomplete one, -1 for an over-subscribed one (no
 * prefix code has these lengths); *max_len gets the longest length. */
static int dp__huff_build(dp__huff *h, const uint8_t *lens, int n, unsigned *max_len) {
    uint16_t offset[DP__HUFF_MAXBITS + 2];
    uint32_t next_code[DP__HUFF_MAXBITS + 1], code = 0;
    int32_t left = 1;
    int sym;
    unsigned l;
    memset(h, 0, sizeof *h);
    for (sym = 0; sym < n; sym++) h->count[lens[sym]]++;
    h->count[0] = 0;
    *max_len = 0;
    for (l = 1; l <= DP__HUFF_MAXBITS; l++) {
        left = left * 2 - h->count[l];
        if (left < 0) return -1;
        if (h->count[l]) *max_len = l;
    }
    offset[1] = 0;
    for (l = 1; l <= DP__HUFF_MAXBITS; l++) {
        offset[l + 1] = (uint16_t)(offset[l] + h->count[l]);
        code = (code + h->count[l - 1]) << 1;
        next_code[l] = code;
    }
    for (sym = 0; sym < n; sym++) {
        unsigned len = lens[sym];
        uint32_t rev, step;
        if (len == 0) continue;
        h->symbol[offset[len]++] = (uint16_t)sym;
        if (len > DP__HUFF_FAST) { next_code[len]++; continue; }
        rev = dp__bit_reverse(next_code[len]++, len);
        for (step = 0; (rev | step << len) < (1u << DP__HUFF_FAST); step++)
            h->fast[rev | step << len] = (uint16_t)(len << 9 | (unsigned)sym);
    }
    return left > 0;
}

typedef struct dp__inflater {
    const unsigned char *in;
    size_t in_len, in_pos;
    uint64_t bits;  /* unread input bits, the next one lowest */
    unsigned nbits;
    unsigned char *out;
    size_t out_cap, out_pos;
    const char *error; /* set by the step that failed */
} dp__inflater;

static void dp__inf_refill(dp__inflater *s) {
    while (s->nbits <= 56 && s->in_pos < s->in_len) {
        s->bits |= (uint64_t)s->in[s->in_pos++] << s->nbits;
        s->nbits += 8;
    }
}

/* Takes n (at most 32) bits into *v, or fails when the input runs out. */
static int dp__inf_bits(dp__inflater *s, unsigned n, uint32_t *v) {
    if (s->nbits < n) dp__inf_refill(s);
    if (s->nbits < n) {
        s->error = "the deflate stream is truncated";
        return 0;
    }
    *v = (uint32_t)(s->bits & ((1ull << n) - 1u));
    s->bits >>= n;
    s->nbits -= n;
    return 1;
}

/* The next symbol of code h, or -1 (s->error set). Missing input bits read
 * as zeros for the lookup, then the code's length is checked against the
 * bits there really are. */
static int dp__inf_symbol(dp__inflater *s, const dp__huff *h) {
    int code = 0, first = 0, index = 0;
    unsigned len, e;
    if (s->nbits < DP__HUFF_MAXBITS) dp__inf_refill(s);
    e = h->fast[s->bits & ((1u << DP__HUFF_FAST) - 1u)];
    if (e != 0) {
        len = e >> 9;
        if (len > s->nbits) {
            s->error = "the deflate stream is truncated";
            return -1;
        }
        s->bits >>= len;
        s->nbits -= len;
        return (int)(e & 511u);
    }
    for (len = 1; len <= DP__HUFF_MAXBITS; len++) { /* canonical codes, first bit first */
        int count = h->count[len];
        if (len > s->nbits) {
            s->error = "the deflate stream is truncated";
            return -1;
        }
        code |= (int)(s->bits >> (len - 1) & 1u);
        if (code - first < count) {
            s->bits >>= len;
            s->nbits -= len;
            return h->symbol[index + code - first];
        }
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    s->error = "the deflate stream holds a code its Huffman table does not define";
    return -1;
}

static const uint16_t dp__deflate_len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                                  31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t dp__deflate_len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                                  2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dp__deflate_dist_base[30] = {1,    2,    3,    4,    5,    7,     9,     13,    17,  25,
                                                   33,   49,   65,   97,   129,  193,   257,   385,   513, 769,
                                                   1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dp__deflate_dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                                   6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
/* The order in which a dynamic block lists the code length code's lengths. */
static const uint8_t dp__deflate_clen_order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

/* A stored block: byte-aligned LEN, its complement NLEN, LEN raw bytes. */
static int dp__inf_stored(dp__inflater *s) {
    uint32_t len, nlen;
    s->bits >>= s->nbits % 8u; /* to a byte boundary */
    s->nbits -= s->nbits % 8u;
    if (!dp__inf_bits(s, 16, &len) || !dp__inf_bits(s, 16, &nlen)) return 0;
    if (len != (~nlen & 0xFFFFu)) {
        s->error = "a stored deflate block's length fails its complement check";
        return 0;
    }
    s->in_pos -= s->nbits / 8u; /* hand the whole bytes still buffered back */
    s->bits = 0;
    s->nbits = 0;
    if (len > s->in_len - s->in_pos) {
        s->error = "the deflate stream is truncated inside a stored block";
        return 0;
    }
    if (len > s->out_cap - s->out_pos) {
        s->error = "the deflate stream inflates to more than the size the archive declares";
        return 0;
    }
    if (len > 0) memcpy(s->out + s->out_pos, s->in + s->in_pos, len);
    s->in_pos += len;
    s->out_pos += len;
    return 1;
}

/* The symbols of one compressed block, up to its end-of-block code. */
static int dp__inf_codes(dp__inflater *s, const dp__huff *lit, const dp__huff *dist) {
    for (;;) {
        int sym = dp__inf_symbol(s, lit);
        uint32_t extra, len, d;
        if (sym < 0) return 0;
        if (sym < 256) {
            if (s->out_pos == s->out_cap) {
                s->error = "the deflate stream inflates to more than the size the archive declares";
                return 0;
            }
            s->out[s->out_pos++] = (unsigned char)sym;
            continue;
        }
        if (sym == 256) return 1;
        if (sym > 285) {
            s->error = "the deflate stream uses a reserved length code (286 or 287)";
            return 0;
        }
        if (!dp__inf_bits(s, dp__deflate_len_extra[sym - 257], &extra)) return 0;
        len = dp__deflate_len_base[sym - 257] + extra;
        if ((sym = dp__inf_symbol(s, dist)) < 0) return 0;
        if (sym > 29) {
            s->error = "the deflate stream uses a reserved distance code (30 or 31)";
            return 0;
        }
        if (!dp__inf_bits(s, dp__deflate_dist_extra[sym], &extra)) return 0;
        d = dp__deflate_dist_base[sym] + extra;
        if (d > s->out_pos) {
            s->error = "the deflate stream refers to data before its start (distance too far back)";
            return 0;
        }
        if (len > s->out_cap - s->out_pos) {
            s->error = "the deflate stream inflates to more than the size the archive declares";
            return 0;
        }
        {
            unsigned char *to = s->out + s->out_pos;
            const unsigned char *from = to - d;
            uint32_t i;
            if (d >= len) memcpy(to, from, len);
            else for (i = 0; i < len; i++) to[i] = from[i]; /* the copy overlaps what it writes */
            s->out_pos += len;
        }
    }
}

/* zlib's rule: a code may be incomplete only if it is a single code of one
 * bit (or, for distances, empty: a block of literals only). */
static int dp__inf_table(dp__inflater *s, dp__huff *h, const uint8_t *lens, int n, int is_lengths_code,
                         const char *what) {
    unsigned max_len;
    int shape = dp__huff_build(h, lens, n, &max_len);
    if (shape < 0 || (shape > 0 && (is_lengths_code || max_len > 1))) {
        s->error = what;
        return 0;
    }
    return 1;
}

/* The code lengths of a dynamic block's two codes: HLIT, HDIST, HCLEN, the
 * code length code, then the lengths it encodes with repeats. */
static int dp__inf_dynamic_tables(dp__inflater *s, dp__huff *lit, dp__huff *dist) {
    uint8_t lens[286 + 30], clens[19];
    uint32_t hlit, hdist, hclen, v, i = 0;
    dp__huff clen_code;
    if (!dp__inf_bits(s, 5, &hlit) || !dp__inf_bits(s, 5, &hdist) || !dp__inf_bits(s, 4, &hclen)) return 0;
    hlit += 257;
    hdist += 1;
    hclen += 4;
    if (hlit > 286 || hdist > 30) {
        s->error = "a dynamic deflate block declares more than 286 length or 30 distance codes";
        return 0;
    }
    memset(clens, 0, sizeof clens);
    for (i = 0; i < hclen; i++) {
        if (!dp__inf_bits(s, 3, &v)) return 0;
        clens[dp__deflate_clen_order[i]] = (uint8_t)v;
    }
    if (!dp__inf_table(s, &clen_code, clens, 19, 1, "a dynamic deflate block has an invalid code length code"))
        return 0;
    for (i = 0; i < hlit + hdist;) {
        int sym = dp__inf_symbol(s, &clen_code);
        uint32_t repeat, fill = 0;
        if (sym < 0) return 0;
        if (sym < 16) {
            lens[i++] = (uint8_t)sym;
            continue;
        }
        if (sym == 16) {
            if (i == 0) {
                s->error = "a dynamic deflate block repeats a code length before the first one";
                return 0;
            }
            fill = lens[i - 1];
            if (!dp__inf_bits(s, 2, &repeat)) return 0;
            repeat += 3;
        } else if (sym == 17) {
            if (!dp__inf_bits(s, 3, &repeat)) return 0;
            repeat += 3;
        } else {
            if (!dp__inf_bits(s, 7, &repeat)) return 0;
            repeat += 11;
        }
        if (repeat > hlit + hdist - i) {
            s->error = "a dynamic deflate block repeats code lengths past the last one";
            return 0;
        }
        while (repeat-- > 0) lens[i++] = (uint8_t)fill;
    }
    if (lens[256] == 0) {
        s->error = "a dynamic deflate block has no end-of-block code";
        return 0;
    }
    if (!dp__inf_table(s, lit, lens, (int)hlit, 0, "a dynamic deflate block has an invalid literal/length code"))
        return 0;
    return dp__inf_table(s, dist, lens + hlit, (int)hdist, 0, "a dynamic deflate block has an invalid distance code");
}

/* The fixed codes of RFC 1951 section 3.2.6, all 288 and 32 symbols so the
 * reserved ones decode (and are then refused) as in zlib. */
static void dp__inf_fixed_tables(dp__huff *lit, dp__huff *dist) {
    uint8_t lens[DP__HUFF_MAXSYMS];
    unsigned max_len;
    int i;
    for (i = 0; i < 288; i++) lens[i] = (uint8_t)(i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8);
    (void)dp__huff_build(lit, lens, 288, &max_len);
    for (i = 0; i < 32; i++) lens[i] = 5;
    (void)dp__huff_build(dist, lens, 32, &max_len);
}

/* Inflates the raw deflate stream in [in, in + in_len) into out, writing at
 * most out_cap bytes; *out_len gets how many were written. DP_ERROR_FORMAT
 * with a message for a malformed or truncated stream, or one that would
 * write more than out_cap bytes; out's contents are then unspecified. */
static dp_result dp__inflate(const unsigned char *in, size_t in_len, unsigned char *out, size_t out_cap, size_t *out_len,
                             char *msg, size_t msgcap) {
    dp__inflater s;
    dp__huff lit, dist;
    uint32_t final = 0, type = 0;
    memset(&s, 0, sizeof s);
    s.in = in;
    s.in_len = in ? in_len : 0;
    s.out = out;
    s.out_cap = out ? out_cap : 0;
    *out_len = 0;
    do {
        int ok;
        if (!dp__inf_bits(&s, 1, &final) || !dp__inf_bits(&s, 2, &type)) break;
        if (type == 0) ok = dp__inf_stored(&s);
        else if (type == 1) {
            dp__inf_fixed_tables(&lit, &dist);
            ok = dp__inf_codes(&s, &lit, &dist);
        } else if (type == 2) ok = dp__inf_dynamic_tables(&s, &lit, &dist) && dp__inf_codes(&s, &lit, &dist);
        else {
            s.error = "the deflate stream has a block of the reserved type 3";
            ok = 0;
        }
        if (!ok) break;
    } while (!final);
    *out_len = s.out_pos;
    if (s.error) return dp__npy_fail(msg, msgcap, s.error);
    return DP_OK;
}
DP_IMPL dp_result dp_inflate(const void *in, size_t in_len, void *out, size_t out_cap, size_t *out_len, char *msg, size_t msgcap) {
    if (!out_len || (!in && in_len) || (!out && out_cap)) {
        if (out_len) *out_len = 0;
        if (msgcap > 0) snprintf(msg, msgcap, "dp_inflate: NULL in, out or out_len");
        return DP_ERROR_INVALID_ARGS;
    }
    return dp__inflate((const unsigned char *)in, in_len, (unsigned char *)out, out_cap, out_len, msg, msgcap) == DP_OK ? DP_OK : DP_ERROR_FORMAT;
}
DP_IMPL uint32_t dp_crc32(uint32_t crc, const void *data, size_t len) { return data ? dp__crc32(crc, data, len) : crc; }

/* ---- deflate (RFC 1951) --------------------------------------------------------- */

/* LZ77 over a 32 KiB window with hash chains (three-byte hashes, positions
 * chained newest first), one step of lazy matching, and blocks of up to
 * DP__DEF_BLOCK symbols, each written in whichever form is smallest:
 * Huffman codes built for the block (dynamic), the fixed codes, or stored.
 * Because stored is always a candidate, the output never exceeds
 * dp__deflate_bound(n). The caller owns the working memory. */
enum {
    DP__DEF_WINDOW = 32768,
    DP__DEF_HASH_BITS = 15,
    DP__DEF_BLOCK = 16384,   /* symbols per block */
    DP__DEF_MIN_MATCH = 3,
    DP__DEF_MAX_MATCH = 258
};

typedef struct dp__deflate_work {
    uint32_t head[1u << DP__DEF_HASH_BITS]; /* newest position + 1 per hash, 0: none */
    uint32_t prev[DP__DEF_WINDOW];          /* the position + 1 chained before it */
    uint32_t symbols[DP__DEF_BLOCK];        /* a literal byte, or 1 << 31 | length << 16 | distance */
} dp__deflate_work;

/* The most bytes dp__deflate writes for n input bytes: every block is at
 * most its bytes stored, five bytes of framing per 65535 of them. */
static size_t dp__deflate_bound(size_t n) {
    return n + 6u * (n / DP__DEF_BLOCK + n / 65535u + 2u) + 16u;
}

typedef struct dp__bit_writer {
    unsigned char *out;
    size_t cap, pos;
    uint64_t bits;
    unsigned nbits;
    int overflow;
} dp__bit_writer;

static void dp__bw_put(dp__bit_writer *w, uint32_t value, unsigned n) { /* n <= 32 */
    w->bits |= (uint64_t)value << w->nbits;
    w->nbits += n;
    while (w->nbits >= 8) {
        if (w->pos < w->cap) w->out[w->pos++] = (unsigned char)w->bits;
        else w->overflow = 1;
        w->bits >>= 8;
        w->nbits -= 8;
    }
}

static void dp__bw_align(dp__bit_writer *w) {
    if (w->nbits % 8u) dp__bw_put(w, 0, 8u - w->nbits % 8u);
}

/* Code lengths, at most limit bits, for the symbols' frequencies (a Huffman
 * code; when its longest code is too long, the frequencies are halved and
 * it is built again, which flattens the tree). At least two symbols get a
 * code, so every code is complete, as all inflaters accept. */
static void dp__huff_lengths(const uint32_t *freq_in, int n, unsigned limit, uint8_t *lens) {
    uint32_t freq[DP__HUFF_MAXSYMS], weight[2 * DP__HUFF_MAXSYMS];
    uint16_t order[DP__HUFF_MAXSYMS], parent[2 * DP__HUFF_MAXSYMS];
    uint8_t depth[2 * DP__HUFF_MAXSYMS];
    int i, used = 0;
    for (i = 0; i < n; i++) {
        freq[i] = freq_in[i];
        lens[i] = 0;
    }
    for (i = 0; i < n && used < 2; i++) used += freq[i] != 0;
    for (i = 0; i < n && used < 2; i++)
        if (freq[i] == 0) {
            freq[i] = 1;
            used++;
        }
    for (;;) {
        int leaves = 0, next_leaf = 0, next_node, nodes, j;
        unsigned longest = 0;
        for (i = 0; i < n; i++) /* the used symbols by frequency, ascending (insertion sort: n <= 288) */
            if (freq[i]) {
                for (j = leaves++; j > 0 && freq[order[j - 1]] > freq[i]; j--) order[j] = order[j - 1];
                order[j] = (uint16_t)i;
            }
        for (i = 0; i < leaves; i++) weight[i] = freq[order[i]];
        /* Leaves are nodes 0..leaves-1 in order; merged nodes are appended
         * in non-decreasing weight, so the two lightest are always at the
         * fronts of the two queues. */
        if (leaves < 2) return; /* not reached: two symbols were made used above */
        next_node = nodes = leaves;
        for (j = 0; j < leaves - 1; j++) {
            int pick[2], k;
            for (k = 0; k < 2; k++) {
                if (next_leaf < leaves && (next_node == nodes || weight[next_leaf] <= weight[next_node]))
                    pick[k] = next_leaf++;
                else pick[k] = next_node++;
            }
            weight[nodes] = weight[pick[0]] + weight[pick[1]];
            parent[pick[0]] = parent[pick[1]] = (uint16_t)nodes;
            nodes++;
        }
        depth[nodes - 1] = 0;
        for (i = nodes - 2; i >= 0; i--) {
            depth[i] = (uint8_t)(depth[parent[i]] + 1);
            if (i < leaves && depth[i] > longest) longest = depth[i];
        }
        if (longest <= limit) {
            for (i = 0; i < leaves; i++) lens[order[i]] = depth[i];
            return;
        }
        for (i = 0; i < n; i++)
            if (freq[i]) freq[i] = (freq[i] + 1) / 2;
    }
}

/* Canonical codes for the lengths (RFC 1951 section 3.2.2), bit-reversed
 * because deflate sends a Huffman code's first bit first. */
static void dp__huff_codes(const uint8_t *lens, int n, uint16_t *codes) {
    uint32_t count[DP__HUFF_MAXBITS + 1], next[DP__HUFF_MAXBITS + 1], code = 0;
    int i;
    memset(count, 0, sizeof count);
    for (i = 0; i < n; i++) count[lens[i]]++;
    count[0] = 0;
    for (i = 1; i <= DP__HUFF_MAXBITS; i++) {
        code = (code + count[i - 1]) << 1;
        next[i] = code;
    }
    for (i = 0; i < n; i++) codes[i] = lens[i] ? (uint16_t)dp__bit_reverse(next[lens[i]]++, lens[i]) : 0;
}

static int dp__deflate_len_code(uint32_t len) { /* 0..28 for a length 3..258 */
    int lo = 0, hi = 28;
    while (lo < hi) { /* the last base not above len */
        int mid = (lo + hi + 1) / 2;
        if (dp__deflate_len_base[mid] <= len) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static int dp__deflate_dist_code(uint32_t dist) { /* 0..29 for a distance 1..32768 */
    int lo = 0, hi = 29;
    while (lo < hi) { /* the last base not above dist */
        int mid = (lo + hi + 1) / 2;
        if (dp__deflate_dist_base[mid] <= dist) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* A block's two codes and how its code lengths are sent. */
typedef struct dp__deflate_codes {
    uint8_t lit_len[288], dist_len[30], clen_len[19]; /* 288: the fixed code's two reserved ones */
    uint16_t lit_code[288], dist_code[30], clen_code[19];
    uint8_t rle[286 + 30], rle_extra[286 + 30]; /* code length symbols and their extra bits */
    int nrle, hlit, hdist, hclen;
} dp__deflate_codes;

/* Run-length codes the lengths of both codes with symbols 16 (repeat the
 * previous length 3-6 times), 17 (3-10 zeros) and 18 (11-138 zeros). */
static void dp__deflate_rle(dp__deflate_codes *c, uint32_t *clen_freq) {
    uint8_t all[286 + 30];
    int i = 0, n = c->hlit + c->hdist;
    memcpy(all, c->lit_len, (size_t)c->hlit);
    memcpy(all + c->hlit, c->dist_len, (size_t)c->hdist);
    c->nrle = 0;
    while (i < n) {
        int run = 1;
        while (i + run < n && all[i + run] == all[i]) run++;
        if (all[i] == 0 && run >= 3) {
            int take = run > 138 ? 138 : run;
            c->rle[c->nrle] = (uint8_t)(take >= 11 ? 18 : 17);
            c->rle_extra[c->nrle++] = (uint8_t)(take - (take >= 11 ? 11 : 3));
            i += take;
        } else if (all[i] != 0 && run >= 4) {
            int take = run - 1 > 6 ? 6 : run - 1;
            c->rle[c->nrle] = all[i];
            c->rle_extra[c->nrle++] = 0;
            c->rle[c->nrle] = 16;
            c->rle_extra[c->nrle++] = (uint8_t)(take - 3);
            i += 1 + take;
        } else {
            c->rle[c->nrle] = all[i];
            c->rle_extra[c->nrle++] = 0;
            i++;
        }
    }
    memset(clen_freq, 0, 19 * sizeof *clen_freq);
    for (i = 0; i < c->nrle; i++) clen_freq[c->rle[i]]++;
}

/* Builds the dynamic codes for the frequencies; returns the block's size in
 * bits with them (header included), but for the extra bits of lengths and
 * distances. */
static uint64_t dp__deflate_dynamic(dp__deflate_codes *c, const uint32_t *lit_freq, const uint32_t *dist_freq) {
    static const uint8_t rle_extra_bits[19] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 7};
    uint32_t clen_freq[19];
    uint64_t bits = 3 + 5 + 5 + 4;
    int i;
    dp__huff_lengths(lit_freq, 286, 15, c->lit_len);
    dp__huff_lengths(dist_freq, 30, 15, c->dist_len);
    for (c->hlit = 286; c->hlit > 257 && c->lit_len[c->hlit - 1] == 0; c->hlit--) {}
    for (c->hdist = 30; c->hdist > 1 && c->dist_len[c->hdist - 1] == 0; c->hdist--) {}
    dp__deflate_rle(c, clen_freq);
    dp__huff_lengths(clen_freq, 19, 7, c->clen_len);
    for (c->hclen = 19; c->hclen > 4 && c->clen_len[dp__deflate_clen_order[c->hclen - 1]] == 0; c->hclen--) {}
    dp__huff_codes(c->lit_len, 286, c->lit_code);
    dp__huff_codes(c->dist_len, 30, c->dist_code);
    dp__huff_codes(c->clen_len, 19, c->clen_code);
    bits += 3u * (unsigned)c->hclen;
    for (i = 0; i < 19; i++) bits += (uint64_t)clen_freq[i] * (c->clen_len[i] + rle_extra_bits[i]);
    for (i = 0; i < 286; i++) bits += (uint64_t)lit_freq[i] * c->lit_len[i];
    for (i = 0; i < 30; i++) bits += (uint64_t)dist_freq[i] * c->dist_len[i];
    return bits;
}

/* The fixed codes; the reserved literal/length symbols 286 and 287 take
 * part in numbering the codes (RFC 1951 section 3.2.6), though never sent. */
static void dp__deflate_fixed(dp__deflate_codes *c) {
    int i;
    for (i = 0; i < 288; i++) c->lit_len[i] = (uint8_t)(i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8);
    for (i = 0; i < 30; i++) c->dist_len[i] = 5;
    dp__huff_codes(c->lit_len, 288, c->lit_code);
    dp__huff_codes(c->dist_len, 30, c->dist_code);
}

static void dp__deflate_put_symbols(dp__bit_writer *w, const dp__deflate_codes *c, const uint32_t *symbols, int n) {
    int i;
    for (i = 0; i < n; i++) {
        uint32_t s = symbols[i];
        if (!(s >> 31)) {
            dp__bw_put(w, c->lit_code[s], c->lit_len[s]);
        } else {
            uint32_t len = s >> 16 & 0x1FFu, dist = s & 0xFFFFu;
            int lc = dp__deflate_len_code(len), dc = dp__deflate_dist_code(dist);
            dp__bw_put(w, c->lit_code[257 + lc], c->lit_len[257 + lc]);
            dp__bw_put(w, len - dp__deflate_len_base[lc], dp__deflate_len_extra[lc]);
            dp__bw_put(w, c->dist_code[dc], c->dist_len[dc]);
            dp__bw_put(w, dist - dp__deflate_dist_base[dc], dp__deflate_dist_extra[dc]);
        }
    }
    dp__bw_put(w, c->lit_code[256], c->lit_len[256]);
}

static void dp__deflate_put_stored(dp__bit_writer *w, const unsigned char *raw, size_t n, int final) {
    do {
        size_t take = n > 65535u ? 65535u : n;
        dp__bw_put(w, (final && take == n) ? 1u : 0u, 1);
        dp__bw_put(w, 0, 2);
        dp__bw_align(w);
        dp__bw_put(w, (uint32_t)take, 16);
        dp__bw_put(w, (uint32_t)take ^ 0xFFFFu, 16);
        if (take > w->cap - w->pos) w->overflow = 1;
        else {
            if (take) memcpy(w->out + w->pos, raw, take);
            w->pos += take;
        }
        raw += take;
        n -= take;
    } while (n > 0);
}

/* Writes one block of nsym symbols standing for raw[0..raw_len) in the
 * smallest of the three forms. */
static void dp__deflate_block(dp__bit_writer *w, const uint32_t *symbols, int nsym, const unsigned char *raw,
                              size_t raw_len, int final) {
    static const uint8_t fixed_lit_len_bits[4] = {8, 9, 7, 8};
    uint32_t lit_freq[286], dist_freq[30];
    dp__deflate_codes dyn, fixed;
    uint64_t dyn_bits, fixed_bits = 3, stored_bits, extra_bits = 0; /* extra bits: the same in both codes */
    int i;
    memset(lit_freq, 0, sizeof lit_freq);
    memset(dist_freq, 0, sizeof dist_freq);
    for (i = 0; i < nsym; i++) {
        uint32_t s = symbols[i];
        if (!(s >> 31)) lit_freq[s]++;
        else {
            int lc = dp__deflate_len_code(s >> 16 & 0x1FFu), dc = dp__deflate_dist_code(s & 0xFFFFu);
            lit_freq[257 + lc]++;
            dist_freq[dc]++;
            extra_bits += (uint64_t)dp__deflate_len_extra[lc] + dp__deflate_dist_extra[dc];
            fixed_bits += 5u; /* the fixed distance code */
        }
    }
    lit_freq[256] = 1;
    for (i = 0; i < 286; i++)
        fixed_bits += (uint64_t)lit_freq[i] * fixed_lit_len_bits[i < 144 ? 0 : i < 256 ? 1 : i < 280 ? 2 : 3];
    fixed_bits += extra_bits;
    dyn_bits = dp__deflate_dynamic(&dyn, lit_freq, dist_freq) + extra_bits;
    stored_bits = 8u * (uint64_t)raw_len + 48u * (raw_len / 65535u + 1u);
    if (stored_bits <= dyn_bits && stored_bits <= fixed_bits) {
        dp__deflate_put_stored(w, raw, raw_len, final);
        return;
    }
    dp__bw_put(w, final ? 1u : 0u, 1);
    if (fixed_bits <= dyn_bits) {
        dp__bw_put(w, 1, 2);
        dp__deflate_fixed(&fixed);
        dp__deflate_put_symbols(w, &fixed, symbols, nsym);
        return;
    }
    dp__bw_put(w, 2, 2);
    dp__bw_put(w, (uint32_t)dyn.hlit - 257u, 5);
    dp__bw_put(w, (uint32_t)dyn.hdist - 1u, 5);
    dp__bw_put(w, (uint32_t)dyn.hclen - 4u, 4);
    for (i = 0; i < dyn.hclen; i++) dp__bw_put(w, dyn.clen_len[dp__deflate_clen_order[i]], 3);
    for (i = 0; i < dyn.nrle; i++) {
        uint8_t s = dyn.rle[i];
        dp__bw_put(w, dyn.clen_code[s], dyn.clen_len[s]);
        if (s >= 16) dp__bw_put(w, dyn.rle_extra[i], s == 16 ? 2u : s == 17 ? 3u : 7u);
    }
    dp__deflate_put_symbols(w, &dyn, symbols, nsym);
}

static uint32_t dp__deflate_hash(const unsigned char *p) {
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
    return (v * 2654435761u) >> (32 - DP__DEF_HASH_BITS);
}

/* Makes pos findable by later matches (it needs two bytes after it). */
static void dp__deflate_insert(dp__deflate_work *wk, const unsigned char *in, size_t n, size_t pos) {
    uint32_t h;
    if (pos + DP__DEF_MIN_MATCH > n) return;
    h = dp__deflate_hash(in + pos);
    wk->prev[pos % DP__DEF_WINDOW] = wk->head[h];
    wk->head[h] = (uint32_t)pos + 1u;
}

/* How hard each level searches: chain links followed, the match length
 * that ends a search early, and the longest match still worth trying one
 * byte later (0: no lazy matching). */
typedef struct dp__deflate_effort { unsigned max_chain, nice, max_lazy; } dp__deflate_effort;

/* The longest earlier match for pos, following at most max_chain links and
 * stopping at one of nice bytes; *dist gets its distance. Returns its length
 * (0 below DP__DEF_MIN_MATCH). */
static uint32_t dp__deflate_longest(const dp__deflate_work *wk, const unsigned char *in, size_t n, size_t pos,
                                    const dp__deflate_effort *effort, uint32_t *dist) {
    size_t limit = n - pos < (size_t)DP__DEF_MAX_MATCH ? n - pos : (size_t)DP__DEF_MAX_MATCH;
    unsigned max_chain = effort->max_chain;
    uint32_t best = 0, link;
    if (limit < DP__DEF_MIN_MATCH) return 0;
    link = wk->head[dp__deflate_hash(in + pos)];
    while (link != 0 && max_chain-- > 0) {
        size_t cand = link - 1u, len = 0;
        if (pos - cand > DP__DEF_WINDOW) break;
        if (in[cand + best] == in[pos + best]) {
            while (len < limit && in[cand + len] == in[pos + len]) len++;
            if (len > best) {
                best = (uint32_t)len;
                *dist = (uint32_t)(pos - cand);
                if (len == limit || len >= effort->nice) break;
            }
        }
        link = wk->prev[cand % DP__DEF_WINDOW];
        if (link > cand) break; /* a slot reused by a newer position: the chain ends */
    }
    return best >= DP__DEF_MIN_MATCH ? best : 0;
}

/* Compresses in[0..n) into out (cap at least dp__deflate_bound(n)) as one
 * raw deflate stream; *out_len gets its size. level 1..9 trades speed for
 * size like zlib's (how far hash chains are followed; 1-3 take the first
 * good match, 4-9 also try one byte later); other values mean 6.
 * DP_ERROR_INVALID_ARGS if cap is too small or n reaches 4 GiB (positions
 * are 32-bit). */
static dp_result dp__deflate(dp__deflate_work *wk, const unsigned char *in, size_t n, unsigned char *out, size_t cap,
                             int level, size_t *out_len) {
    static const dp__deflate_effort efforts[10] = {{0, 0, 0},      {4, 16, 0},     {8, 32, 0},     {16, 64, 0},
                                                   {16, 32, 8},    {32, 64, 16},   {96, 128, 24},  {256, 160, 64},
                                                   {1024, 258, 128}, {4096, 258, 258}};
    dp__bit_writer w;
    size_t pos = 0, block_start = 0;
    const dp__deflate_effort *effort;
    uint32_t next_len = 0, next_dist = 0;
    int nsym = 0, final_written = 0, have_next = 0;
    *out_len = 0;
    if (!wk || (!in && n > 0) || !out || cap < dp__deflate_bound(n) || (uint64_t)n >= 0xFFFFFFFFu)
        return DP_ERROR_INVALID_ARGS;
    if (level < 1 || level > 9) level = 6;
    effort = &efforts[level];
    memset(wk->head, 0, sizeof wk->head);
    memset(&w, 0, sizeof w);
    w.out = out;
    w.cap = cap;
    while (pos < n) {
        uint32_t dist = next_dist, len = have_next ? next_len : dp__deflate_longest(wk, in, n, pos, effort, &dist);
        have_next = 0;
        dp__deflate_insert(wk, in, n, pos);
        if (len && len < effort->max_lazy && pos + 1 < n) { /* the match one byte later, found as the next step would */
            next_len = dp__deflate_longest(wk, in, n, pos + 1, effort, &next_dist);
            have_next = next_len > len;
        }
        if (len == 0 || have_next) { /* a literal (and, when have_next, the longer match next) */
            wk->symbols[nsym++] = in[pos++];
        } else {
            wk->symbols[nsym++] = 1u << 31 | len << 16 | dist;
            for (pos++; --len > 0; pos++) dp__deflate_insert(wk, in, n, pos);
        }
        if (nsym == DP__DEF_BLOCK) {
            final_written = pos == n;
            dp__deflate_block(&w, wk->symbols, nsym, in + block_start, pos - block_start, final_written);
            block_start = pos;
            nsym = 0;
        }
    }
    if (!final_written) dp__deflate_block(&w, wk->symbols, nsym, in + block_start, n - block_start, 1);
    dp__bw_align(&w);
    if (w.overflow) return DP_ERROR_INVALID_ARGS;
    *out_len = w.pos;
    return DP_OK;
}

/* ---- ZIP (the .npz container) ------------------------------------------------ */

/* What numpy.savez and numpy.savez_compressed produce: stored (method 0)
 * or deflated (method 8) members, one disk. Writing never uses zip64 or
 * data descriptors; reading also accepts the zip64 extra fields Python's
 * zipfile adds (numpy.savez forces one into every local header) and data
 * descriptors, but not zip64 end records. */
enum dp__zip_layout {
    DP__ZIP_LOCAL_SIG = 0x04034b50,
    DP__ZIP_CENTRAL_SIG = 0x02014b50,
    DP__ZIP_END_SIG = 0x06054b50,
    DP__ZIP_LOCAL_LEN = 30,   /* fixed part of a local file header */
    DP__ZIP_CENTRAL_LEN = 46, /* fixed part of a central directory entry */
    DP__ZIP_END_LEN = 22,     /* end-of-central-directory record without comment */
    DP__ZIP_MAX_MEMBERS = 0xFFFE, /* 0xFFFF in the end record means "see zip64" */
    DP__ZIP_CRC_CACHE = 64
};

/* One member. Writing: name is NUL-terminated and name_len is ignored.
 * Reading: name and data point into the archive buffer, and name is NOT
 * NUL-terminated; use name_len. A deflated member (method 8) read from an
 * archive is data[0..len) compressed: dp__zip_inflate_member gives its
 * plain_len bytes and checks them against crc. */
typedef struct dp__zip_member {
    const char *name;
    const unsigned char *data;
    size_t len;
    size_t name_len;
    uint32_t method, crc;
    size_t plain_len;
} dp__zip_member;

/* A member written from two pieces, e.g. a .npy preamble and the array bytes,
 * so callers need not concatenate them. name is NUL-terminated. With packed
 * set, the member is written deflated (method 8): packed[0..packed_len) is
 * the raw deflate stream of head then body, which still give its CRC. */
typedef struct dp__zip_piece_member {
    const char *name;
    const unsigned char *head;
    size_t head_len;
    const unsigned char *body;
    size_t body_len;
    const unsigned char *packed;
    size_t packed_len;
} dp__zip_piece_member;

/* The member list of either writer; exactly one of plain/pieces is used. */
typedef struct dp__zip_entries {
    const dp__zip_member *plain;
    const dp__zip_piece_member *pieces;
    int n;
} dp__zip_entries;

/* The fields that local headers (at offset 4) and central directory entries
 * (at offset 6) share, in the same 26-byte layout:
 * +0 version needed, +2 flags, +4 method, +6 time, +8 date, +10 CRC-32,
 * +14 compressed size, +18 uncompressed size, +22 name length, +24 extra length. */
typedef struct dp__zip_common {
    uint32_t flags, method, crc;
    uint64_t csize, usize; /* 64-bit so zip64 extra values fit */
    size_t name_len, extra_len;
} dp__zip_common;

/* A stored ZIP cannot record 0xFFFFFFFF or more in a 32-bit field without
 * zip64 (that value means "see the zip64 extra field"). */
static int dp__zip_fits32(uint64_t v) {
    return v < 0xFFFFFFFFu;
}

static dp__zip_piece_member dp__zip_entry_at(const dp__zip_entries *list, int i) {
    dp__zip_piece_member e;
    if (list->pieces) return list->pieces[i];
    e.name = list->plain[i].name;
    e.head = list->plain[i].data;
    e.head_len = list->plain[i].len;
    e.body = NULL;
    e.body_len = 0;
    e.packed = NULL;
    e.packed_len = 0;
    return e;
}

/* The member's bytes in the archive: compressed or plain. */
static uint64_t dp__zip_entry_size(const dp__zip_piece_member *e) {
    return e->packed ? (uint64_t)e->packed_len : (uint64_t)e->head_len + e->body_len;
}

static uint32_t dp__zip_entry_crc(const dp__zip_piece_member *e) {
    return dp__crc32(dp__crc32(0, e->head, e->head_len), e->body, e->body_len);
}

/* Bit 11 tells readers the name is UTF-8; Python's zipfile sets it exactly
 * when the name is not plain ASCII. */
static uint32_t dp__zip_name_flags(const char *name) {
    for (; *name; name++)
        if ((unsigned char)*name >= 0x80) return 0x800;
    return 0;
}

/* Everything is checked before the first byte is written, so a refused
 * archive leaves the file untouched. */
static dp_result dp__zip_check_entries(FILE *f, const dp__zip_entries *list) {
    uint64_t total = DP__ZIP_END_LEN;
    int i;
    if (!f || list->n < 0 || list->n > DP__ZIP_MAX_MEMBERS || (list->n > 0 && !list->plain && !list->pieces))
        return DP_ERROR_INVALID_ARGS;
    for (i = 0; i < list->n; i++) {
        dp__zip_piece_member e = dp__zip_entry_at(list, i);
        size_t name_len;
        if (!e.name || !e.name[0] || (e.head_len > 0 && !e.head) || (e.body_len > 0 && !e.body))
            return DP_ERROR_INVALID_ARGS;
        name_len = strlen(e.name);
        if (name_len > 0xFFFF || !dp__zip_fits32(e.head_len) || !dp__zip_fits32(e.body_len) ||
            !dp__zip_fits32((uint64_t)e.head_len + e.body_len) || !dp__zip_fits32(e.packed_len))
            return DP_ERROR_INVALID_ARGS;
        /* Each addend is below 2^34, so the running total cannot overflow. */
        total += DP__ZIP_LOCAL_LEN + DP__ZIP_CENTRAL_LEN + 2 * (uint64_t)name_len + dp__zip_entry_size(&e);
        if (!dp__zip_fits32(total)) return DP_ERROR_INVALID_ARGS; /* offsets must fit in 32 bits */
    }
    return DP_OK;
}

static void dp__zip_put_common(unsigned char *p, const dp__zip_piece_member *e, uint32_t crc) {
    uint32_t size = (uint32_t)(e->head_len + e->body_len);
    dp__npy_put_le16(p + 0, 20); /* version needed: 2.0, stored or deflated files */
    dp__npy_put_le16(p + 2, dp__zip_name_flags(e->name));
    dp__npy_put_le16(p + 4, e->packed ? 8 : 0); /* method: deflated or stored */
    dp__npy_put_le16(p + 6, 0);    /* time 00:00:00, a fixed value keeps output reproducible */
    dp__npy_put_le16(p + 8, 0x21); /* date 1980-01-01, the DOS epoch */
    dp__npy_put_le32(p + 10, crc);
    dp__npy_put_le32(p + 14, (uint32_t)dp__zip_entry_size(e));
    dp__npy_put_le32(p + 18, size);
    dp__npy_put_le16(p + 22, (uint32_t)strlen(e->name));
    dp__npy_put_le16(p + 24, 0); /* no extra field */
}

static dp_result dp__zip_fwrite(FILE *f, const void *p, size_t n) {
    return (n == 0 || fwrite(p, 1, n, f) == n) ? DP_OK : DP_ERROR_IO;
}

/* Writes a fixed-size record followed by the member name. */
static dp_result dp__zip_write_record(FILE *f, const unsigned char *rec, size_t rec_len, const char *name) {
    dp_result r = dp__zip_fwrite(f, rec, rec_len);
    return r != DP_OK ? r : dp__zip_fwrite(f, name, strlen(name));
}

static dp_result dp__zip_write_local(FILE *f, const dp__zip_piece_member *e, uint32_t crc) {
    unsigned char rec[DP__ZIP_LOCAL_LEN];
    dp_result r;
    dp__npy_put_le32(rec, DP__ZIP_LOCAL_SIG);
    dp__zip_put_common(rec + 4, e, crc);
    if ((r = dp__zip_write_record(f, rec, sizeof rec, e->name)) != DP_OK) return r;
    if (e->packed) return dp__zip_fwrite(f, e->packed, e->packed_len);
    if ((r = dp__zip_fwrite(f, e->head, e->head_len)) != DP_OK) return r;
    return dp__zip_fwrite(f, e->body, e->body_len);
}

static dp_result dp__zip_write_central(FILE *f, const dp__zip_piece_member *e, uint32_t crc, uint32_t local_offset) {
    unsigned char rec[DP__ZIP_CENTRAL_LEN];
    dp__npy_put_le32(rec, DP__ZIP_CENTRAL_SIG);
    dp__npy_put_le16(rec + 4, 20); /* made by: version 2.0, MS-DOS attributes */
    dp__zip_put_common(rec + 6, e, crc);
    dp__npy_put_le16(rec + 32, 0); /* comment length */
    dp__npy_put_le16(rec + 34, 0); /* disk number */
    dp__npy_put_le16(rec + 36, 0); /* internal attributes */
    dp__npy_put_le32(rec + 38, 0); /* external attributes */
    dp__npy_put_le32(rec + 42, local_offset);
    return dp__zip_write_record(f, rec, sizeof rec, e->name);
}

static dp_result dp__zip_write_end(FILE *f, int n, uint64_t cd_offset, uint64_t cd_size) {
    unsigned char rec[DP__ZIP_END_LEN];
    dp__npy_put_le32(rec, DP__ZIP_END_SIG);
    dp__npy_put_le16(rec + 4, 0); /* this disk */
    dp__npy_put_le16(rec + 6, 0); /* disk holding the central directory */
    dp__npy_put_le16(rec + 8, (uint32_t)n);
    dp__npy_put_le16(rec + 10, (uint32_t)n);
    dp__npy_put_le32(rec + 12, (uint32_t)cd_size);
    dp__npy_put_le32(rec + 16, (uint32_t)cd_offset);
    dp__npy_put_le16(rec + 20, 0); /* comment length */
    return dp__zip_fwrite(f, rec, sizeof rec);
}

/* The one writer behind both public entry points. The CRC must precede the
 * data (no data descriptors), and again goes into the central directory; with
 * no allocation it is cached for the first DP__ZIP_CRC_CACHE members and
 * recomputed for any beyond. */
static dp_result dp__zip_write_entries(FILE *f, const dp__zip_entries *list) {
    uint32_t crc_cache[DP__ZIP_CRC_CACHE];
    uint64_t local_offset = 0, cd_offset, cd_size = 0;
    dp_result r;
    int i;
    if ((r = dp__zip_check_entries(f, list)) != DP_OK) return r;
    for (i = 0; i < list->n; i++) {
        dp__zip_piece_member e = dp__zip_entry_at(list, i);
        uint32_t crc = dp__zip_entry_crc(&e);
        if (i < DP__ZIP_CRC_CACHE) crc_cache[i] = crc;
        if ((r = dp__zip_write_local(f, &e, crc)) != DP_OK) return r;
        local_offset += DP__ZIP_LOCAL_LEN + strlen(e.name) + dp__zip_entry_size(&e);
    }
    cd_offset = local_offset;
    local_offset = 0;
    for (i = 0; i < list->n; i++) {
        dp__zip_piece_member e = dp__zip_entry_at(list, i);
        uint32_t crc = i < DP__ZIP_CRC_CACHE ? crc_cache[i] : dp__zip_entry_crc(&e);
        if ((r = dp__zip_write_central(f, &e, crc, (uint32_t)local_offset)) != DP_OK) return r;
        local_offset += DP__ZIP_LOCAL_LEN + strlen(e.name) + dp__zip_entry_size(&e);
        cd_size += DP__ZIP_CENTRAL_LEN + strlen(e.name);
    }
    if ((r = dp__zip_write_end(f, list->n, cd_offset, cd_size)) != DP_OK) return r;
    /* Buffered write errors (a full disk) often surface only here. */
    return fflush(f) == 0 ? DP_OK : DP_ERROR_IO;
}

/* Writes a complete ZIP archive of n members (n may be 0) to f, which
 * should be at the start of a file (offsets count from there).
 * DP_ERROR_INVALID_ARGS, with nothing written, for bad arguments, an empty
 * or over-long name, more than 65534 members, or an archive that would reach
 * 4 GiB - 1 bytes (that needs zip64, which is not written). DP_ERROR_IO if a
 * write or the final fflush fails. f stays open. */
static dp_result dp__zip_write_pieces(FILE *f, const dp__zip_piece_member *m, int n) {
    dp__zip_entries list;
    list.plain = NULL;
    list.pieces = m;
    list.n = n;
    return dp__zip_write_entries(f, &list);
}


/* ---- ZIP reading ---------------------------------------------------------------- */

typedef struct dp__zip_reader {
    const unsigned char *buf;
    size_t len;
    char *msg;
    size_t msgcap;
} dp__zip_reader;

static dp__zip_common dp__zip_get_common(const unsigned char *p) {
    dp__zip_common c;
    c.flags = dp__npy_get_le16(p + 2);
    c.method = dp__npy_get_le16(p + 4);
    c.crc = dp__npy_get_le32(p + 10);
    c.csize = dp__npy_get_le32(p + 14);
    c.usize = dp__npy_get_le32(p + 18);
    c.name_len = dp__npy_get_le16(p + 22);
    c.extra_len = dp__npy_get_le16(p + 24);
    return c;
}

/* Replaces 0xFFFFFFFF placeholders among *fields[0..n) with the 64-bit values
 * of the zip64 extra field (id 1), which lists just the placeholder fields in
 * the order uncompressed size, compressed size, local header offset.
 * Returns 0 if the extra field is malformed or a value is missing. */
static int dp__zip_resolve_zip64(const unsigned char *extra, size_t extra_len, uint64_t *const *fields, int n) {
    size_t pos = 0;
    int i, placeholders = 0;
    for (i = 0; i < n; i++) placeholders += *fields[i] == 0xFFFFFFFFu;
    if (placeholders == 0) return 1;
    while (extra_len - pos >= 4) {
        size_t id = dp__npy_get_le16(extra + pos), size = dp__npy_get_le16(extra + pos + 2), used = 0;
        const unsigned char *value = extra + pos + 4;
        if (size > extra_len - pos - 4) return 0;
        if (id == 1) {
            for (i = 0; i < n; i++) {
                if (*fields[i] != 0xFFFFFFFFu) continue;
                if (size - used < 8) return 0;
                *fields[i] = dp__npy_get_le64(value + used);
                used += 8;
            }
            return 1;
        }
        pos += 4 + size;
    }
    return 0;
}

/* Member-specific error: "member 'name': what". */
static dp_result dp__zip_member_error(const dp__zip_reader *z, const unsigned char *name, size_t name_len,
                                      const char *what) {
    char shown[64];
    dp__npy_printable(shown, sizeof shown, name, name_len);
    snprintf(z->msg, z->msgcap, "member '%s' of the .npz archive %s", shown, what);
    return DP_ERROR_FORMAT;
}

/* Finds the end-of-central-directory record, searching backwards because it
 * may be followed by a comment of up to 65535 bytes. The comment length must
 * reach exactly the end of the buffer, which skips signature look-alikes. */
static int dp__zip_find_end(const unsigned char *buf, size_t len, size_t *end_at) {
    size_t pos, lowest;
    if (len < DP__ZIP_END_LEN) return 0;
    pos = len - DP__ZIP_END_LEN;
    lowest = pos > 0xFFFF ? pos - 0xFFFF : 0;
    for (;; pos--) {
        if (dp__npy_get_le32(buf + pos) == DP__ZIP_END_SIG &&
            dp__npy_get_le16(buf + pos + 20) == len - pos - DP__ZIP_END_LEN) {
            *end_at = pos;
            return 1;
        }
        if (pos == lowest) return 0;
    }
}

/* Reads the end record: where the central directory is and how many entries
 * it has; the directory must lie before the end record. */
static dp_result dp__zip_directory(const dp__zip_reader *z, size_t end_at, size_t *cd_offset, size_t *cd_end,
                                   uint32_t *count) {
    const unsigned char *e = z->buf + end_at;
    uint32_t cd_size = dp__npy_get_le32(e + 12), offset = dp__npy_get_le32(e + 16);
    *count = dp__npy_get_le16(e + 10);
    if (*count == 0xFFFFu || cd_size == 0xFFFFFFFFu || offset == 0xFFFFFFFFu)
        return dp__npy_fail(z->msg, z->msgcap,
                            "zip64 .npz archives (4 GiB or more, or 65535+ members) are not supported");
    if (dp__npy_get_le16(e + 4) != 0 || dp__npy_get_le16(e + 6) != 0 || dp__npy_get_le16(e + 8) != *count)
        return dp__npy_fail(z->msg, z->msgcap, "multi-disk (split) zip archives are not supported");
    if (!dp__npy_fits(offset, cd_size, end_at))
        return dp__npy_fail(z->msg, z->msgcap,
                            "truncated or corrupt .npz: the zip central directory lies outside the file");
    *cd_offset = offset;
    *cd_end = (size_t)offset + cd_size;
    return DP_OK;
}

/* Deflate turns each bit into at most 258 / 2 bytes (a length and a
 * distance code take at least a bit each), so a plain size above this is a
 * lie, refused before any memory is sized by it. */
#define DP__DEFLATE_MAX_RATIO 1032u

/* Only what numpy.savez and savez_compressed write can be read: unencrypted
 * stored or deflated members. */
static dp_result dp__zip_check_method(const dp__zip_reader *z, const dp__zip_common *cd, const unsigned char *name) {
    char what[160];
    if (cd->flags & 1u) return dp__zip_member_error(z, name, cd->name_len, "is encrypted, which is not supported");
    if (cd->method != 0 && cd->method != 8) {
        snprintf(what, sizeof what,
                 "is compressed with method %lu; only stored (0) and deflated (8) members are supported",
                 (unsigned long)cd->method);
        return dp__zip_member_error(z, name, cd->name_len, what);
    }
    if (cd->method == 0 && cd->csize != cd->usize)
        return dp__zip_member_error(z, name, cd->name_len, "is stored but its compressed and plain sizes differ");
    if (cd->method == 8 && cd->usize / DP__DEFLATE_MAX_RATIO > cd->csize)
        return dp__zip_member_error(z, name, cd->name_len,
                                    "declares a plain size no deflate stream of its compressed size can reach");
    return DP_OK;
}

/* Checks the local header at offset against the directory entry cd and
 * finds where the member's data starts. */
static dp_result dp__zip_check_local(const dp__zip_reader *z, uint64_t offset, const dp__zip_common *cd,
                                     const unsigned char *name, size_t *data_at) {
    const unsigned char *h;
    dp__zip_common local;
    uint64_t *sizes[2];
    if (!dp__npy_fits(offset, DP__ZIP_LOCAL_LEN, z->len) || dp__npy_get_le32(z->buf + offset) != DP__ZIP_LOCAL_SIG)
        return dp__zip_member_error(z, name, cd->name_len, "has no local header where the directory says");
    h = z->buf + offset;
    local = dp__zip_get_common(h + 4);
    if (!dp__npy_fits(offset + DP__ZIP_LOCAL_LEN, local.name_len + local.extra_len, z->len))
        return dp__zip_member_error(z, name, cd->name_len, "has a local header running past the end of the file");
    if (local.name_len != cd->name_len || memcmp(h + DP__ZIP_LOCAL_LEN, name, cd->name_len) != 0)
        return dp__zip_member_error(z, name, cd->name_len, "has a different name in its local header");
    sizes[0] = &local.usize;
    sizes[1] = &local.csize;
    if (!dp__zip_resolve_zip64(h + DP__ZIP_LOCAL_LEN + local.name_len, local.extra_len, sizes, 2))
        return dp__zip_member_error(z, name, cd->name_len, "has a malformed zip64 field in its local header");
    /* With a data descriptor (flag bit 3) the local CRC and sizes are zero
     * and the directory's values are the ones to trust. */
    if (local.method != cd->method ||
        (!(local.flags & 8u) && (local.crc != cd->crc || local.usize != cd->usize || local.csize != cd->csize)))
        return dp__zip_member_error(z, name, cd->name_len, "has a local header disagreeing with the directory");
    *data_at = (size_t)(offset + DP__ZIP_LOCAL_LEN + local.name_len + local.extra_len);
    return DP_OK;
}

/* Validates the directory entry at *pos (which must end by cd_end), its local
 * header, data bounds and CRC; fills *out and advances *pos past the entry. */
static dp_result dp__zip_read_entry(const dp__zip_reader *z, size_t cd_end, size_t *pos, dp__zip_member *out) {
    const unsigned char *h = z->buf + *pos, *name;
    dp__zip_common cd;
    uint64_t local_offset, *zip64_fields[3];
    size_t comment_len, data_at = 0;
    uint32_t crc;
    char what[96];
    dp_result r;

    if (!dp__npy_fits(*pos, DP__ZIP_CENTRAL_LEN, cd_end) || dp__npy_get_le32(h) != DP__ZIP_CENTRAL_SIG)
        return dp__npy_fail(z->msg, z->msgcap, "corrupt .npz: bad entry in the zip central directory");
    cd = dp__zip_get_common(h + 6);
    comment_len = dp__npy_get_le16(h + 32);
    local_offset = dp__npy_get_le32(h + 42);
    if (!dp__npy_fits(*pos + DP__ZIP_CENTRAL_LEN, (uint64_t)cd.name_len + cd.extra_len + comment_len, cd_end))
        return dp__npy_fail(z->msg, z->msgcap, "corrupt .npz: a zip directory entry runs past the directory");
    name = h + DP__ZIP_CENTRAL_LEN;
    zip64_fields[0] = &cd.usize;
    zip64_fields[1] = &cd.csize;
    zip64_fields[2] = &local_offset;
    if (!dp__zip_resolve_zip64(name + cd.name_len, cd.extra_len, zip64_fields, 3))
        return dp__zip_member_error(z, name, cd.name_len, "has a malformed zip64 field in the directory");
    if ((r = dp__zip_check_method(z, &cd, name)) != DP_OK) return r;
    if ((r = dp__zip_check_local(z, local_offset, &cd, name, &data_at)) != DP_OK) return r;
    if (!dp__npy_fits(data_at, cd.csize, z->len))
        return dp__zip_member_error(z, name, cd.name_len, "runs past the end of the file (truncated?)");
    out->method = cd.method;
    out->crc = cd.crc;
    out->plain_len = (size_t)cd.usize;
    crc = cd.method == 0 ? dp__crc32(0, z->buf + data_at, (size_t)cd.usize) : cd.crc; /* deflated: once inflated */
    if (crc != cd.crc) {
        snprintf(what, sizeof what, "fails its CRC-32 check (stored %08lx, computed %08lx): the file is corrupt",
                 (unsigned long)cd.crc, (unsigned long)crc);
        return dp__zip_member_error(z, name, cd.name_len, what);
    }
    out->name = (const char *)name;
    out->name_len = cd.name_len;
    out->data = z->buf + data_at;
    out->len = (size_t)cd.csize;
    *pos += DP__ZIP_CENTRAL_LEN + cd.name_len + cd.extra_len + comment_len;
    return DP_OK;
}

/* How many members the archive's end record lists, so a caller can size its
 * list before dp__zip_read. A count the central directory is too short to
 * hold is DP_ERROR_FORMAT (so a tiny file cannot ask for a large list). */
static dp_result dp__zip_count(const unsigned char *buf, size_t len, uint32_t *count, char *msg, size_t msgcap) {
    dp__zip_reader z;
    size_t end_at, cd_offset = 0, cd_end = 0;
    dp_result r;
    z.buf = buf; z.len = len; z.msg = msg; z.msgcap = msgcap;
    *count = 0;
    if (!buf || !dp__zip_find_end(buf, len, &end_at))
        return dp__npy_fail(msg, msgcap,
                            "not a zip archive (no end-of-central-directory record): truncated or not an .npz");
    if ((r = dp__zip_directory(&z, end_at, &cd_offset, &cd_end, count)) != DP_OK) return r;
    if ((uint64_t)*count * DP__ZIP_CENTRAL_LEN > cd_end - cd_offset)
        return dp__npy_fail(msg, msgcap, "corrupt .npz: the zip central directory is too short for its entry count");
    return DP_OK;
}

/* Lists the members of a ZIP (.npz) image held in memory, checking every
 * offset, size, local header and the CRC of stored members (deflated ones:
 * see dp__zip_inflate_member). out[i].name and .data point into
 * buf (names are not NUL-terminated: use name_len). On success *n is the
 * member count. If there are more than cap members, returns DP_ERROR_FORMAT
 * with *n set to the count needed; on other errors *n is 0. */
static dp_result dp__zip_read(const unsigned char *buf, size_t len, dp__zip_member *out, int cap, int *n, char *msg,
                              size_t msgcap) {
    dp__zip_reader z;
    size_t end_at, pos = 0, cd_end = 0;
    uint32_t count, i;
    dp_result r;

    if (!msg) msgcap = 0;
    if (msgcap > 0) msg[0] = '\0';
    if ((!buf && len > 0) || !n || cap < 0 || (cap > 0 && !out)) {
        dp__npy_fail(msg, msgcap, "invalid arguments to the .npz reader");
        return DP_ERROR_INVALID_ARGS;
    }
    *n = 0;
    z.buf = buf;
    z.len = len;
    z.msg = msg;
    z.msgcap = msgcap;
    if (!dp__zip_find_end(buf, len, &end_at))
        return dp__npy_fail(msg, msgcap,
                            "not a zip archive (no end-of-central-directory record): truncated or not an .npz");
    if ((r = dp__zip_directory(&z, end_at, &pos, &cd_end, &count)) != DP_OK) return r;
    if (count > (uint32_t)cap) {
        snprintf(msg, msgcap, ".npz archive has %lu members, more than the %d this call can take", (unsigned long)count,
                 cap);
        *n = (int)count;
        return DP_ERROR_FORMAT;
    }
    for (i = 0; i < count; i++)
        if ((r = dp__zip_read_entry(&z, cd_end, &pos, &out[i])) != DP_OK) return r;
    *n = (int)count;
    return DP_OK;
}

/* Inflates deflated member m into out (room for m->plain_len bytes, which
 * the archive declares and dp__zip_read bounded) and checks that it fills
 * exactly that much and matches its CRC-32. DP_ERROR_FORMAT with a message
 * otherwise. */
static dp_result dp__zip_inflate_member(const dp__zip_member *m, unsigned char *out, char *msg, size_t msgcap) {
    char reason[160];
    size_t got = 0;
    uint32_t crc;
    if (dp__inflate(m->data, m->len, out, m->plain_len, &got, reason, sizeof reason) != DP_OK) {
        snprintf(msg, msgcap, "corrupt deflated data: %s", reason);
        return DP_ERROR_FORMAT;
    }
    if (got != m->plain_len) {
        snprintf(msg, msgcap, "deflated data inflates to %zu bytes, not the %zu the archive declares", got, m->plain_len);
        return DP_ERROR_FORMAT;
    }
    if ((crc = dp__crc32(0, out, got)) != m->crc) {
        snprintf(msg, msgcap, "fails its CRC-32 check once inflated (stored %08lx, computed %08lx): the file is corrupt",
                 (unsigned long)m->crc, (unsigned long)crc);
        return DP_ERROR_FORMAT;
    }
    return DP_OK;
}

/* >>dtypes ----------------------------------------------------------------- */
static const size_t dp__dtype_sizes[DP_DTYPE_COUNT] = {4, 8, 4, 8, 1, 2, 1, 1};
DP_IMPL size_t dp_dtype_size(dp_dtype dt) { return (unsigned)dt < DP_DTYPE_COUNT ? dp__dtype_sizes[dt] : 0; }
DP_IMPL const char *dp_dtype_name(dp_dtype dt) {
    static const char *names[DP_DTYPE_COUNT] = {"float32", "float64", "int32", "int64", "uint8", "float16", "bool", "int8"};
    return (unsigned)dt < DP_DTYPE_COUNT ? names[dt] : "unknown";
}
DP_IMPL int64_t dp_shape_size(const dp_shape *s) {
    int64_t n = 1;
    int i;
    if (!s || s->ndim < 0 || s->ndim > DP_MAX_DIMS) return -1;
    for (i = 0; i < s->ndim; i++) {
        if (s->dims[i] < 0) return -1;
        if (s->dims[i] > 0 && n > INT64_MAX / s->dims[i]) return -1;
        n *= s->dims[i];
    }
    return n;
}
/* "(2, 3)" into buf, for messages */
static const char *dp__shape_str(const dp_shape *s, char *buf, size_t cap) {
    size_t n = 0;
    int i;
    if (!s) { snprintf(buf, cap, "(null)"); return buf; }
    n += (size_t)snprintf(buf, cap, "(");
    for (i = 0; i < s->ndim && i < DP_MAX_DIMS && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %lld" : "%lld", (long long)s->dims[i]);
    if (n < cap) snprintf(buf + n, cap - n, s->ndim == 1 ? ",)" : ")");
    return buf;
}

/* >>storage ----------------------------------------------------------------
   One manager per device, made on first use. CPU memory is 64-byte aligned
   (the desc allocator is asked for 64, else aligned_alloc). Pooled (the
   default): a freed block goes on the free list of its size class and is
   handed out again for that class, as MXNet's pooled storage manager does.
   Classes are powers of two from 64 B to 1 MiB and multiples of 1 MiB above,
   so a block is at most twice (small) or 1 MiB (large) bigger than asked.
   Plain: blocks come from and go back to the allocator every time. The free
   lists use nodes of their own, since device memory cannot hold a link. */
#define DP__STORAGE_SMALL_CLASSES 15            /* 64 B .. 1 MiB */
#define DP__STORAGE_LARGE_STEP ((size_t)1 << 20)
typedef struct dp__free_node { struct dp__free_node *next; void *ptr; size_t size; } dp__free_node;
typedef struct dp__storage {
    dp__mutex m;
    dp_ctx ctx;
    int pooled;
    const dp_memory_backend *memory;             /* the state's, for device memory; NULL on the CPU */
    dp__free_node *small[DP__STORAGE_SMALL_CLASSES];
    dp__free_node *large;                        /* any class above 1 MiB */
    dp_storage_stats stats;
} dp__storage;

/* The class a request of bytes is served from; 0 if it would overflow. */
static size_t dp__storage_class(size_t bytes) {
    size_t c = 64;
    if (bytes > DP__STORAGE_LARGE_STEP) {
        if (bytes > SIZE_MAX - DP__STORAGE_LARGE_STEP) return 0;
        return (bytes + DP__STORAGE_LARGE_STEP - 1) / DP__STORAGE_LARGE_STEP * DP__STORAGE_LARGE_STEP;
    }
    while (c < bytes) c <<= 1;
    return c;
}
static dp__free_node **dp__storage_list(dp__storage *st, size_t cls) {
    int k = 0;
    if (cls > DP__STORAGE_LARGE_STEP) return &st->large;
    while (((size_t)64 << k) < cls) k++;
    return &st->small[k];
}
static const dp_memory_backend *dp__memory(dp_engine *eng);   /* with the state, below */
static int dp__gpu_memory(dp_engine *eng) {
    const dp_memory_backend *m = dp__memory(eng);
    return m && m->mem_alloc && m->mem_free && m->mem_copy;
}
static int dp__pinned_memory(dp_engine *eng) {
    const dp_memory_backend *m = dp__memory(eng);
    return m && m->host_alloc && m->host_free;
}
/* quiet: a failure is not logged (the caller will try again) */
/* Device memory comes from m (the state's dp_memory_backend: the state is
   unpublished while it is torn down, so it is handed in, not looked up). */
static void *dp__device_alloc_q(dp_engine *eng, const dp_memory_backend *m, dp_ctx ctx, size_t size, int quiet) {
    if (ctx.dev_type == DP_DEV_GPU) {
        const dp_memory_backend *be = m;
        void *p = NULL;
        int err = be->mem_alloc(ctx.dev_id, size, &p, be->user);
        if (err && !quiet) DP__LOG(eng, DP_LOG_ERROR, BACKEND, "GPU %d: allocating %zu bytes: %s", (int)ctx.dev_id, size, dp__backend_error(eng, err));
        return err ? NULL : p;
    }
    if (ctx.dev_type == DP_DEV_CPU_PINNED) {
        const dp_memory_backend *be = m;
        void *p = NULL;
        int err = be->host_alloc(size, &p, be->user);
        if (err && !quiet) DP__LOG(eng, DP_LOG_ERROR, BACKEND, "pinned host memory: allocating %zu bytes: %s", size, dp__backend_error(eng, err));
        return err ? NULL : p;
    }
    return dp__alloc_aligned(eng, size);          /* size is a class: a multiple of 64 */
}
static void *dp__device_alloc(dp_engine *eng, const dp_memory_backend *m, dp_ctx ctx, size_t size) { return dp__device_alloc_q(eng, m, ctx, size, 0); }
static void dp__device_free(dp_engine *eng, const dp_memory_backend *m, dp_ctx ctx, void *p, size_t size) {
    if (ctx.dev_type == DP_DEV_GPU) { m->mem_free(ctx.dev_id, p, m->user); return; }
    if (ctx.dev_type == DP_DEV_CPU_PINNED) { m->host_free(p, m->user); return; }
    dp__free_aligned(eng, p, size);
}
/* The array layer's part of an engine (its dp_engine_extension state): made
   with the first array, storage or resource call on the engine, torn down
   by dp_engine_destroy once every operation is done. m guards making the
   managers and resources (on first use per device). */
typedef struct dp__nd_state {
    dp__mutex m;
    int pooled;                     /* dp_storage_desc.kind, resolved */
    dp__a32 has_memory;             /* set (release) after memory is written: read without m */
    int started;                    /* under m: an array or manager exists, so no more configuring */
    dp_memory_backend memory;
    dp__storage *storage[3][DP__MAX_DEV];           /* [CPU, GPU, pinned][device] */
    struct dp__resources *resources[2][DP__MAX_DEV]; /* [CPU, GPU][device]: see >>resources */
    dp__spinlock orphan_lock;
    struct dp__chunk *orphans;  /* arrays whose release could not be queued: freed at destroy */
    dp__spinlock invoke_lock;
    void *invokes;              /* finished invocations' records, linked through their first bytes, for the next ones */
    int num_invokes;
    dp__spinlock gemm_lock;
    struct dp__gemm_ws *gemm_ws; /* the GEMM's idle workspaces (dp__gemm_ws_get), num_gemm_ws of them */
    int num_gemm_ws, gemm_ws_total;   /* idle; idle and held */
    size_t gemm_ws_max;          /* the largest asked for since the last release: new ones' size */
} dp__nd_state;
/* DEPENG_STORAGE_POOL, unless the engine ignores the environment: 1
   pooled, 0 plain, unset pooled; -1 (logged) for anything else. */
static int dp__storage_pool_env(dp_engine *eng) {
    dp_engine_desc d;
    const char *t = dp_engine_desc_get(eng, &d) != DP_OK || d.ignore_env ? NULL : getenv("DEPENG_STORAGE_POOL");
    if (!t || !*t || !strcmp(t, "1")) return 1;
    if (!strcmp(t, "0")) return 0;
    DP__LOG(eng, DP_LOG_ERROR, BAD_DESC, "DEPENG_STORAGE_POOL='%s' (1 or 0)", t);
    return -1;
}
static void *dp__nd_state_create(dp_engine *eng, void *user) {
    dp__nd_state *s = (dp__nd_state *)dp__alloc(eng, sizeof *s);
    (void)user;
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    s->pooled = dp__storage_pool_env(eng) != 0;    /* a bad value was logged: the default stands */
    if (dp__mutex_init(&s->m)) { dp__free(eng, s, sizeof *s); return NULL; }
    return s;
}
static void dp__nd_state_destroy(dp_engine *eng, void *state, void *user);   /* after >>resources */
static void dp__gemm_ws_free_all(dp_engine *eng, dp__nd_state *s);           /* with the GEMM */
static void dp__gemm_ws_free_idle(dp_engine *eng, dp__nd_state *s);
static const dp_extension dp__nd_extension = {"ndarray", dp__nd_state_create, dp__nd_state_destroy, NULL};
/* NULL if out of memory */
static dp__nd_state *dp__nd_state_of(dp_engine *eng) { return (dp__nd_state *)dp_engine_extension(eng, &dp__nd_extension); }
/* The memory functions dp_storage_configure gave, or NULL. */
static const dp_memory_backend *dp__memory(dp_engine *eng) {
    dp__nd_state *s = dp__nd_state_of(eng);
    return s && dp__load(&s->has_memory, DP__ACQUIRE) ? &s->memory : NULL;
}
DP_IMPL dp_result dp_storage_configure(dp_engine *eng, const dp_storage_desc *desc) {
    dp__nd_state *s;
    dp_result r = DP_OK;
    int pooled;
    if (!eng || !desc || (int)desc->kind < 0 || desc->kind > DP_STORAGE_PLAIN) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_storage_configure: NULL engine or desc, or storage kind %d", desc ? (int)desc->kind : -1);
        return DP_ERROR_INVALID_ARGS;
    }
    pooled = desc->kind == DP_STORAGE_DEFAULT ? dp__storage_pool_env(eng) : desc->kind == DP_STORAGE_POOLED;
    if (pooled < 0) return DP_ERROR_INVALID_ARGS;
    if ((s = dp__nd_state_of(eng)) == NULL) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_storage_configure"); return DP_ERROR_OUT_OF_MEMORY; }
    dp__mutex_lock(&s->m);
    if (s->started) r = DP_ERROR_INVALID_ARGS;
    else {
        s->pooled = pooled;
        dp__store(&s->has_memory, 0, DP__RELAXED);
        if (desc->memory) { s->memory = *desc->memory; dp__store(&s->has_memory, 1, DP__RELEASE); }
    }
    dp__mutex_unlock(&s->m);
    if (r != DP_OK) DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_storage_configure: the engine's arrays have started; configure storage before the first one");
    return r;
}
/* The manager of ctx (made on first use), or NULL if out of memory. */
static dp__storage *dp__storage_of(dp_engine *eng, dp_ctx ctx) {
    dp__nd_state *s = dp__nd_state_of(eng);
    dp__storage **slot, *st;
    if (!s) return NULL;
    slot = &s->storage[ctx.dev_type == DP_DEV_GPU ? 1 : ctx.dev_type == DP_DEV_CPU_PINNED ? 2 : 0][ctx.dev_id];
    dp__mutex_lock(&s->m);
    s->started = 1;
    st = *slot;
    if (!st && (st = (dp__storage *)dp__alloc(eng, sizeof *st)) != NULL) {
        memset(st, 0, sizeof *st);
        st->ctx = ctx;
        st->pooled = s->pooled;
        st->memory = dp__load(&s->has_memory, DP__RELAXED) && ctx.dev_type != DP_DEV_CPU ? &s->memory : NULL;
        if (dp__mutex_init(&st->m)) { dp__free(eng, st, sizeof *st); st = NULL; }
        else *slot = st;
    }
    dp__mutex_unlock(&s->m);
    return st;
}
static void dp__storage_drain(dp_engine *eng, dp__storage *st);
/* A block of at least bytes; *size is what it really holds (its class). */
static void *dp__storage_get(dp_engine *eng, dp__storage *st, size_t bytes, size_t *size) {
    size_t cls = dp__storage_class(bytes ? bytes : 1);
    void *p = NULL;
    if (!cls) return NULL;
    dp__mutex_lock(&st->m);
    if (st->pooled) {
        dp__free_node **pp = dp__storage_list(st, cls), *n;
        for (; (n = *pp) != NULL; pp = &n->next) {
            if (n->size != cls) continue;
            *pp = n->next;
            p = n->ptr;
            dp__free(eng, n, sizeof *n);
            st->stats.bytes_pooled -= cls;
            st->stats.pool_hits++;
            break;
        }
    }
    dp__mutex_unlock(&st->m);
    if (!p) {
        int pooled;
        dp__mutex_lock(&st->m);
        pooled = st->stats.bytes_pooled > 0;
        dp__mutex_unlock(&st->m);
        if ((p = dp__device_alloc_q(eng, st->memory, st->ctx, cls, pooled)) != NULL) goto got;
        if (!pooled) return NULL;
        dp__storage_drain(eng, st);      /* as MXNet's pool: give the kept blocks back, then try once more */
        if ((p = dp__device_alloc(eng, st->memory, st->ctx, cls)) == NULL) return NULL;
    }
got:
    dp__mutex_lock(&st->m);
    st->stats.bytes_in_use += cls;
    st->stats.allocations++;
    dp__mutex_unlock(&st->m);
    *size = cls;
    return p;
}
static void dp__storage_put(dp_engine *eng, dp__storage *st, void *p, size_t size) {
    dp__free_node *n = st->pooled ? (dp__free_node *)dp__alloc(eng, sizeof *n) : NULL;
    dp__mutex_lock(&st->m);
    st->stats.bytes_in_use -= size;
    if (n) {
        dp__free_node **list = dp__storage_list(st, size);
        n->ptr = p; n->size = size; n->next = *list;
        *list = n;
        st->stats.bytes_pooled += size;
    }
    dp__mutex_unlock(&st->m);
    if (!n) dp__device_free(eng, st->memory, st->ctx, p, size);   /* plain, or no memory for a node */
}
static void dp__storage_drain(dp_engine *eng, dp__storage *st) {
    int k;
    for (k = 0; k <= DP__STORAGE_SMALL_CLASSES; k++) {
        dp__free_node **list, *n;
        dp__mutex_lock(&st->m);
        list = k < DP__STORAGE_SMALL_CLASSES ? &st->small[k] : &st->large;
        n = *list;
        *list = NULL;
        for (; n; ) {
            dp__free_node *next = n->next;
            st->stats.bytes_pooled -= n->size;
            dp__device_free(eng, st->memory, st->ctx, n->ptr, n->size);
            dp__free(eng, n, sizeof *n);
            n = next;
        }
        dp__mutex_unlock(&st->m);
    }
}
static void dp__storage_destroy(dp_engine *eng, dp__storage *st) {
    if (!st) return;
    dp__storage_drain(eng, st);
    if (st->stats.bytes_in_use)
        DP__LOG(eng, DP_LOG_WARN, LEAKED_ARRAYS, "%s %d: %llu bytes are still held by arrays nobody released; they are not freed",
                st->ctx.dev_type == DP_DEV_GPU ? "GPU" : "CPU", (int)st->ctx.dev_id, (unsigned long long)st->stats.bytes_in_use);
    dp__mutex_destroy(&st->m);
    dp__free(eng, st, sizeof *st);
}
static dp_result dp__storage_ctx(dp_engine *eng, dp_ctx *ctx, const char *what) {
    dp_result r;
    if (!eng) return DP_ERROR_INVALID_ARGS;
    if ((r = dp__check_ctx(eng, *ctx, what)) != DP_OK) return r;
    if (ctx->dev_type == DP_DEV_DEFAULT) ctx->dev_type = DP_DEV_CPU;
    if (ctx->dev_type == DP_DEV_GPU && !dp__gpu_memory(eng)) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "%s: no memory functions for GPU arrays (dp_storage_configure with mem_alloc, mem_free, mem_copy)", what);
        return DP_ERROR_BAD_CONTEXT;
    }
    if (ctx->dev_type == DP_DEV_CPU_PINNED && !dp__pinned_memory(eng)) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "%s: no memory functions for pinned arrays (dp_storage_configure with host_alloc, host_free)", what);
        return DP_ERROR_BAD_CONTEXT;
    }
    return DP_OK;
}
DP_IMPL dp_result dp_storage_stats_get(dp_engine *eng, dp_ctx ctx, dp_storage_stats *out) {
    dp__storage *st;
    dp_result r;
    if (!out) return DP_ERROR_INVALID_ARGS;
    memset(out, 0, sizeof *out);
    if ((r = dp__storage_ctx(eng, &ctx, "dp_storage_stats_get")) != DP_OK) return r;
    if ((st = dp__storage_of(eng, ctx)) == NULL) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_storage_stats_get"); return DP_ERROR_OUT_OF_MEMORY; }
    dp__mutex_lock(&st->m);
    *out = st->stats;
    dp__mutex_unlock(&st->m);
    return DP_OK;
}
static dp_result dp__temp_space_release(dp_engine *eng, dp_ctx ctx);   /* >>resources */
DP_IMPL dp_result dp_storage_release_pool(dp_engine *eng, dp_ctx ctx) {
    dp__storage *st;
    dp_result r;
    if ((r = dp__storage_ctx(eng, &ctx, "dp_storage_release_pool")) != DP_OK) return r;
    if ((st = dp__storage_of(eng, ctx)) == NULL) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_storage_release_pool"); return DP_ERROR_OUT_OF_MEMORY; }
    dp__storage_drain(eng, st);
    if (ctx.dev_type == DP_DEV_CPU) dp__gemm_ws_free_idle(eng, dp__nd_state_of(eng));   /* made with the storage */
    return dp__temp_space_release(eng, ctx);
}

/* >>arrays -----------------------------------------------------------------
   A chunk is a block of device memory and the variable that guards it,
   shared by an array and its views. */
typedef struct dp__chunk {
    dp__a32 refs;              /* arrays using it */
    dp_engine *eng;
    dp__storage *st;
    dp_var var;
    void *data;
    size_t size;               /* the block's class size */
    dp_ctx ctx;
    dp__a32 version;           /* writes pushed so far (autograd checks saved arrays) */
    struct dp__chunk *next_orphan;   /* on the engine's orphans, see dp__chunk_release */
    struct dp__chunk *owner;   /* data borrowed from this chunk (dp__nd_borrow), else NULL */
} dp__chunk;
struct dp_ndarray {
    dp__a32 refs;
    dp__chunk *chunk;
    size_t offset;             /* bytes into the chunk: views */
    dp_shape shape;
    dp_dtype dtype;
    void *tag;                 /* the tracker's (autograd's node), see dp_nd_tag */
    int tag_index;
};
/* The process's tracker (dp_set_tracker): set while setting up, then read. */
static dp_tracker dp__tracker;
static void dp__chunk_bump(dp__chunk *c) { dp__fetch_add(&c->version, 1, DP__RELAXED); }

/* Runs once the chunk's variable is free: every operation on it is done. */
static void dp__chunk_release(dp__chunk *c);
static int dp__chunk_free_op(dp_run_ctx *rc, void *arg) {
    dp__chunk *c = (dp__chunk *)arg, *owner = c->owner;
    (void)rc;
    if (!owner) dp__storage_put(c->eng, c->st, c->data, c->size);
    dp__free(c->eng, c, sizeof *c);
    if (owner) dp__chunk_release(owner);     /* the lender's bytes go once no borrower uses them */
    return 0;
}
static void dp__chunk_release(dp__chunk *c) {
    if (dp__fetch_add(&c->refs, -1, DP__ACQ_REL) != 1) return;
    dp_result r = dp_var_delete_fn(c->eng, c->var, dp__chunk_free_op, c, c->ctx);
    if (r == DP_ERROR_INVALID_HANDLE) dp__chunk_free_op(NULL, c);   /* the variable is gone already: nothing can be using the data */
    else if (r != DP_OK) {   /* out of memory: ops may still use the data, so it stays until the engine goes */
        dp__nd_state *s = dp__nd_state_of(c->eng);     /* made with the chunk's storage: a lookup */
        DP__LOG(c->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "array of %zu bytes kept until the engine is destroyed: its release could not be queued", c->size);
        dp__spin_lock(&s->orphan_lock);
        c->next_orphan = s->orphans;
        s->orphans = c;
        dp__spin_unlock(&s->orphan_lock);
    }
}
/* At destroy, with every op done: the arrays dp__chunk_release had to keep.
   A kept array that was its lender's last borrower frees the lender here
   too, not through dp__chunk_release: a delete pushed now would be run by
   a worker after the storage managers are gone. */
static void dp__orphans_free(dp__nd_state *s) {
    while (s->orphans) {
        dp__chunk *c = s->orphans;
        s->orphans = c->next_orphan;
        while (c) {
            dp__chunk *owner = c->owner;
            if (!owner) dp__storage_put(c->eng, c->st, c->data, c->size);
            dp__free(c->eng, c, sizeof *c);
            c = owner && dp__fetch_add(&owner->refs, -1, DP__ACQ_REL) == 1 ? owner : NULL;
        }
    }
}
DP_IMPL dp_ndarray *dp_nd_retain(dp_ndarray *a) {
    if (a) dp__fetch_add(&a->refs, 1, DP__RELAXED);
    return a;
}
DP_IMPL void dp_nd_release(dp_ndarray *a) {
    dp__chunk *c;
    if (!a || dp__fetch_add(&a->refs, -1, DP__ACQ_REL) != 1) return;
    c = a->chunk;
    if (a->tag && dp__tracker.tag_released) dp__tracker.tag_released(a->tag);
    dp__free(c->eng, a, sizeof *a);
    dp__chunk_release(c);
}
DP_IMPL const dp_shape *dp_nd_shape(const dp_ndarray *a) { return a ? &a->shape : NULL; }
DP_IMPL dp_dtype dp_nd_dtype(const dp_ndarray *a) { return a ? a->dtype : DP_DTYPE_INVALID; }
DP_IMPL dp_ctx dp_nd_ctx(const dp_ndarray *a) { dp_ctx none = {0, 0}; return a ? a->chunk->ctx : none; }
DP_IMPL dp_engine *dp_nd_engine(const dp_ndarray *a) { return a ? a->chunk->eng : NULL; }
DP_IMPL dp_var dp_nd_var(const dp_ndarray *a) { dp_var none = {0}; return a ? a->chunk->var : none; }
DP_IMPL void *dp_nd_data(const dp_ndarray *a) { return a ? (char *)a->chunk->data + a->offset : NULL; }
DP_IMPL size_t dp_nd_bytes(const dp_ndarray *a) {
    return a ? (size_t)dp_shape_size(&a->shape) * dp_dtype_size(a->dtype) : 0;
}

/* Checks the arguments every constructor shares; logs what is wrong. */
static dp_result dp__nd_check(dp_engine *eng, const char *what, const dp_shape *shape, dp_dtype dtype,
                              dp_ctx *ctx, dp_ndarray **out, size_t *bytes) {
    char sb[160];
    int64_t n;
    dp_result r;
    if (out) *out = NULL;
    if (!eng || !out) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: NULL engine or out", what); return DP_ERROR_INVALID_ARGS; }
    n = dp_shape_size(shape);
    if (n < 0 || !dp_dtype_size(dtype) || (uint64_t)n > SIZE_MAX / 8 / dp_dtype_size(dtype)) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: shape %s (ndim 0..%d, dims >= 0), dtype %d (%s)", what,
                dp__shape_str(shape, sb, sizeof sb), DP_MAX_DIMS, (int)dtype, dp_dtype_name(dtype));
        return DP_ERROR_INVALID_ARGS;
    }
    if ((r = dp__storage_ctx(eng, ctx, what)) != DP_OK) return r;
    *bytes = (size_t)n * dp_dtype_size(dtype);
    return DP_OK;
}
/* An array on fresh storage (contents undefined), after dp__nd_check. */
static dp_result dp__nd_new(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, size_t bytes, dp_ndarray **out) {
    dp__chunk *c = (dp__chunk *)dp__alloc(eng, sizeof *c);
    dp_ndarray *a = (dp_ndarray *)dp__alloc(eng, sizeof *a);
    int i;
    if (c) memset(c, 0, sizeof *c);
    if (!c || !a || (c->st = dp__storage_of(eng, ctx)) == NULL
        || (c->data = dp__storage_get(eng, c->st, bytes, &c->size)) == NULL) goto oom;
    c->var = dp_var_create(eng);
    if (!c->var.id) { dp__storage_put(eng, c->st, c->data, c->size); goto oom; }
    c->eng = eng; c->ctx = ctx;
    dp__store(&c->refs, 1, DP__RELAXED);
    memset(a, 0, sizeof *a);
    dp__store(&a->refs, 1, DP__RELAXED);
    a->chunk = c;
    a->dtype = dtype;
    a->shape.ndim = shape->ndim;
    for (i = 0; i < shape->ndim; i++) a->shape.dims[i] = shape->dims[i];
    *out = a;
    return DP_OK;
oom:
    DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "array of %zu bytes", bytes);
    dp__free(eng, c, sizeof *c);
    dp__free(eng, a, sizeof *a);
    return DP_ERROR_OUT_OF_MEMORY;
}

/* Element-wise fill: x[i] = value + i * step, converted to the dtype. One
   loop per dtype; the GPU path fills a host buffer and copies it. */
static void dp__fill_host(void *data, dp_dtype dt, int64_t n, double value, double step) {
    int64_t i;
    switch (dt) {
    case DP_FLOAT32: for (i = 0; i < n; i++) ((float *)data)[i] = (float)(value + step * (double)i); break;
    case DP_FLOAT64: for (i = 0; i < n; i++) ((double *)data)[i] = value + step * (double)i; break;
    case DP_INT32: for (i = 0; i < n; i++) ((int32_t *)data)[i] = dp__to_int32(value + step * (double)i); break;
    case DP_INT64: for (i = 0; i < n; i++) ((int64_t *)data)[i] = dp__to_int64(value + step * (double)i); break;
    case DP_UINT8: for (i = 0; i < n; i++) ((uint8_t *)data)[i] = dp__to_uint8(value + step * (double)i); break;
    case DP_FLOAT16: for (i = 0; i < n; i++) ((uint16_t *)data)[i] = dp__half_from_float((float)(value + step * (double)i)); break;
    case DP_INT8: for (i = 0; i < n; i++) ((int8_t *)data)[i] = dp__to_int8(value + step * (double)i); break;
    default: for (i = 0; i < n; i++) ((uint8_t *)data)[i] = (uint8_t)(value + step * (double)i != 0); break;   /* bool, as dp__store_elem */
    }
}
/* Copies bytes between two places; kind as dp_device_backend.mem_copy, or
   -1 for host to host. */
static int dp__copy_bytes(dp_engine *eng, void *dst, const void *src, size_t bytes, int kind, int dev, void *stream) {
    const dp_memory_backend *m;
    if (kind < 0) { if (bytes) memcpy(dst, src, bytes); return 0; }
    m = dp__memory(eng);
    return m->mem_copy(dst, src, bytes, kind, dev, stream, m->user);
}
static int dp__copy_kind(dp_ctx dst, dp_ctx src) {
    if (dst.dev_type == DP_DEV_GPU) return src.dev_type == DP_DEV_GPU ? 2 : 0;
    return src.dev_type == DP_DEV_GPU ? 1 : -1;
}

/* The operations the array layer pushes. They are NO_SKIP so that their
   argument is always freed; on failed input they pass the failure on. */
typedef struct dp__fill_arg { dp_ndarray *a; double value, step; } dp__fill_arg;
static int dp__fill_op(dp_run_ctx *rc, void *arg) {
    dp__fill_arg *f = (dp__fill_arg *)arg;
    dp_ndarray *a = f->a;
    dp_engine *eng = a->chunk->eng;
    size_t bytes = dp_nd_bytes(a);
    int status = rc->input_status;
    if (!status && a->chunk->ctx.dev_type == DP_DEV_GPU) {
        void *host = dp__alloc(eng, bytes ? bytes : 1);
        if (!host) { dp_set_error(rc, "out of memory for the fill buffer"); status = DP_ERROR_OUT_OF_MEMORY; }
        else {
            dp__fill_host(host, a->dtype, dp_shape_size(&a->shape), f->value, f->step);
            dp_engine_desc d;
            const dp_device_backend *be = dp_engine_desc_get(eng, &d) == DP_OK ? d.gpu_backend : NULL;
            status = dp__copy_bytes(eng, dp_nd_data(a), host, bytes, 0, a->chunk->ctx.dev_id, rc->stream);
            if (!status && rc->stream && be->stream_synchronize)   /* before the host buffer goes */
                status = be->stream_synchronize(a->chunk->ctx.dev_id, rc->stream, be->user);
            if (status) dp_set_error(rc, dp__backend_error(eng, status));
            dp__free(eng, host, bytes ? bytes : 1);
        }
    } else if (!status) dp__fill_host(dp_nd_data(a), a->dtype, dp_shape_size(&a->shape), f->value, f->step);
    dp_nd_release(a);
    dp__free(eng, f, sizeof *f);
    return status;
}
static dp_result dp__nd_push_fill(dp_ndarray *a, double value, double step, const char *name) {
    dp_engine *eng = a->chunk->eng;
    dp__fill_arg *f = (dp__fill_arg *)dp__alloc(eng, sizeof *f);
    dp_push_desc d;
    dp_result r;
    if (!f) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: the fill operation", name); return DP_ERROR_OUT_OF_MEMORY; }
    f->a = dp_nd_retain(a); f->value = value; f->step = step;
    memset(&d, 0, sizeof d);
    d.fn = dp__fill_op; d.arg = f; d.writes = &a->chunk->var; d.num_writes = 1;
    d.ctx = a->chunk->ctx; d.prop = DP_PROP_NO_SKIP; d.name = name;
    if ((r = dp_push(eng, &d)) != DP_OK) { dp_nd_release(a); dp__free(eng, f, sizeof *f); }
    return r;
}
static dp_result dp__nd_filled(dp_engine *eng, const char *what, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx,
                               double value, double step, dp_ndarray **out) {
    size_t bytes;
    dp_result r = dp__nd_check(eng, what, shape, dtype, &ctx, out, &bytes);
    if (r == DP_OK) r = dp__nd_new(eng, shape, dtype, ctx, bytes, out);
    if (r == DP_OK && (r = dp__nd_push_fill(*out, value, step, what)) != DP_OK) { dp_nd_release(*out); *out = NULL; }
    return r;
}
DP_IMPL dp_result dp_nd_empty(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out) {
    size_t bytes;
    dp_result r = dp__nd_check(eng, "dp_nd_empty", shape, dtype, &ctx, out, &bytes);
    return r == DP_OK ? dp__nd_new(eng, shape, dtype, ctx, bytes, out) : r;
}
DP_IMPL dp_result dp_nd_full(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, double value, dp_ndarray **out) {
    return dp__nd_filled(eng, "dp_nd_full", shape, dtype, ctx, value, 0.0, out);
}
DP_IMPL dp_result dp_nd_zeros(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out) {
    return dp__nd_filled(eng, "dp_nd_zeros", shape, dtype, ctx, 0.0, 0.0, out);
}
DP_IMPL dp_result dp_nd_ones(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out) {
    return dp__nd_filled(eng, "dp_nd_ones", shape, dtype, ctx, 1.0, 0.0, out);
}
DP_IMPL dp_result dp_nd_arange(dp_engine *eng, double start, double stop, double step, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out) {
    dp_shape s;
    double n;
    int64_t len;
    memset(&s, 0, sizeof s);
    if (out) *out = NULL;
    n = step != 0.0 ? (stop - start) / step : -1.0;
    if (!(n > -1.0) || n > 9.0e15) {   /* also catches NaN and infinities */
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_arange: start %g stop %g step %g gives no valid length", start, stop, step);
        return DP_ERROR_INVALID_ARGS;
    }
    len = n > 0.0 ? (int64_t)n : 0;
    if ((double)len < n) len++;          /* the ceiling, without libm */
    s.ndim = 1; s.dims[0] = len;
    return dp__nd_filled(eng, "dp_nd_arange", &s, dtype, ctx, start, step, out);
}
DP_IMPL dp_result dp_nd_from_host(dp_engine *eng, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, const void *data, dp_ndarray **out) {
    size_t bytes;
    dp_result r = dp__nd_check(eng, "dp_nd_from_host", shape, dtype, &ctx, out, &bytes);
    if (r != DP_OK) return r;
    if (!data && bytes) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_from_host: NULL data for %zu bytes", bytes); return DP_ERROR_INVALID_ARGS; }
    if ((r = dp__nd_new(eng, shape, dtype, ctx, bytes, out)) != DP_OK) return r;
    /* a new array: no operation can be using it yet, so copy now */
    if (dp__copy_bytes(eng, dp_nd_data(*out), data, bytes, ctx.dev_type == DP_DEV_GPU ? 0 : -1, ctx.dev_id, NULL)) {
        DP__LOG(eng, DP_LOG_ERROR, BACKEND, "dp_nd_from_host: copying %zu bytes to GPU %d", bytes, (int)ctx.dev_id);
        dp_nd_release(*out); *out = NULL;
        return DP_ERROR_BACKEND;
    }
    return DP_OK;
}
/* Waits, then copies between the array and host memory (to_host: out). */
static dp_result dp__nd_host_io(dp_ndarray *a, void *host, size_t bytes, int to_host, dp_failure *failure, const char *what) {
    dp_engine *eng = a ? a->chunk->eng : NULL;
    dp_result r;
    int on_gpu;
    if (!a || (!host && bytes)) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: NULL array or buffer", what); return DP_ERROR_INVALID_ARGS; }
    if (bytes != dp_nd_bytes(a)) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: buffer of %zu bytes for an array of %zu", what, bytes, dp_nd_bytes(a));
        return DP_ERROR_INVALID_ARGS;
    }
    if ((r = dp_wait_var(eng, a->chunk->var, failure)) != DP_OK) return r;
    if (!to_host) { dp__chunk_bump(a->chunk); if (dp__tracker.written) dp__tracker.written(a); }
    on_gpu = a->chunk->ctx.dev_type == DP_DEV_GPU;
    if (dp__copy_bytes(eng, to_host ? host : dp_nd_data(a), to_host ? dp_nd_data(a) : host, bytes,
                       on_gpu ? (to_host ? 1 : 0) : -1, a->chunk->ctx.dev_id, NULL)) {
        DP__LOG(eng, DP_LOG_ERROR, BACKEND, "%s: copying %zu bytes with GPU %d", what, bytes, (int)a->chunk->ctx.dev_id);
        return DP_ERROR_BACKEND;
    }
    return DP_OK;
}
DP_IMPL dp_result dp_nd_read(dp_ndarray *a, void *dst, size_t bytes, dp_failure *failure) {
    return dp__nd_host_io(a, dst, bytes, 1, failure, "dp_nd_read");
}
DP_IMPL dp_result dp_nd_write(dp_ndarray *a, const void *src, size_t bytes, dp_failure *failure) {
    return dp__nd_host_io(a, (void *)(uintptr_t)src, bytes, 0, failure, "dp_nd_write");
}
DP_IMPL dp_result dp_nd_wait_to_read(dp_ndarray *a, dp_failure *failure) {
    return a ? dp_wait_var(a->chunk->eng, a->chunk->var, failure) : DP_ERROR_INVALID_ARGS;
}
DP_IMPL dp_result dp_nd_wait_to_write(dp_ndarray *a, dp_failure *failure) {
    return a ? dp_wait_var(a->chunk->eng, a->chunk->var, failure) : DP_ERROR_INVALID_ARGS;
}
/* A view: a's chunk (one more reference) at offset, in shape. */
static dp_result dp__nd_view(dp_ndarray *a, const dp_shape *shape, size_t offset, dp_ndarray **out) {
    dp_engine *eng = a->chunk->eng;
    dp_ndarray *v = (dp_ndarray *)dp__alloc(eng, sizeof *v);
    if (!v) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "array view"); return DP_ERROR_OUT_OF_MEMORY; }
    memset(v, 0, sizeof *v);
    dp__store(&v->refs, 1, DP__RELAXED);
    dp__fetch_add(&a->chunk->refs, 1, DP__RELAXED);
    v->chunk = a->chunk; v->offset = offset; v->dtype = a->dtype; v->shape = *shape;
    *out = v;
    return DP_OK;
}
/* A uint8 array over bytes [offset, offset + bytes) of a's storage with a
   variable of its own: operations on it are ordered apart from a's. The
   borrower holds a reference to a's chunk until its own last operation is
   done. The executor places its intermediate results so. */
static dp_result dp__nd_borrow(dp_ndarray *a, size_t offset, size_t bytes, dp_ndarray **out) {
    dp_engine *eng = a->chunk->eng;
    dp__chunk *c = (dp__chunk *)dp__alloc(eng, sizeof *c);
    dp_ndarray *v = (dp_ndarray *)dp__alloc(eng, sizeof *v);
    if (c) memset(c, 0, sizeof *c);
    if (!c || !v || !(c->var = dp_var_create(eng)).id) {
        dp__free(eng, c, sizeof *c); dp__free(eng, v, sizeof *v);
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "a part of an array");
        return DP_ERROR_OUT_OF_MEMORY;
    }
    c->eng = eng; c->ctx = a->chunk->ctx; c->size = bytes;
    c->data = (char *)a->chunk->data + a->offset + offset;
    c->owner = a->chunk;
    dp__fetch_add(&a->chunk->refs, 1, DP__RELAXED);
    dp__store(&c->refs, 1, DP__RELAXED);
    memset(v, 0, sizeof *v);
    dp__store(&v->refs, 1, DP__RELAXED);
    v->chunk = c; v->dtype = DP_UINT8; v->shape.ndim = 1; v->shape.dims[0] = (int64_t)bytes;
    *out = v;
    return DP_OK;
}
DP_IMPL dp_result dp_nd_reshape(dp_ndarray *a, const dp_shape *shape, dp_ndarray **out) {
    dp_engine *eng = a ? a->chunk->eng : NULL;
    char s1[160], s2[160];
    if (out) *out = NULL;
    if (!a || !out) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_reshape: NULL array or out"); return DP_ERROR_INVALID_ARGS; }
    if (dp_shape_size(shape) < 0 || dp_shape_size(shape) != dp_shape_size(&a->shape)) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_reshape: %s to %s changes the element count", dp__shape_str(&a->shape, s1, sizeof s1),
                dp__shape_str(shape, s2, sizeof s2));
        return DP_ERROR_INVALID_ARGS;
    }
    return dp__nd_view(a, shape, a->offset, out);
}
DP_IMPL dp_result dp_nd_slice(dp_ndarray *a, int64_t begin, int64_t end, dp_ndarray **out) {
    dp_engine *eng = a ? a->chunk->eng : NULL;
    dp_shape s;
    char sb[160];
    if (out) *out = NULL;
    if (!a || !out) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_slice: NULL array or out"); return DP_ERROR_INVALID_ARGS; }
    if (a->shape.ndim < 1 || begin < 0 || begin > end || end > a->shape.dims[0]) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_slice: rows [%lld, %lld) of shape %s", (long long)begin, (long long)end,
                dp__shape_str(&a->shape, sb, sizeof sb));
        return DP_ERROR_INVALID_ARGS;
    }
    s = a->shape;
    s.dims[0] = end - begin;
    return dp__nd_view(a, &s, a->offset + (size_t)begin * (a->shape.dims[0] ? dp_nd_bytes(a) / (size_t)a->shape.dims[0] : 0), out);
}
/* copy_to pushes one op that runs even on failed input (no_skip), so it
   always frees its argument: on the CPU a normal op, with a GPU end on that
   GPU's copy queue. */
typedef struct dp__copy_arg { dp_ndarray *src, *dst; } dp__copy_arg;
static void dp__copy_arg_free(dp__copy_arg *c) {
    dp_engine *eng = c->src->chunk->eng;
    dp_nd_release(c->src);
    dp_nd_release(c->dst);
    dp__free(eng, c, sizeof *c);
}
static int dp__copy_run(dp_run_ctx *rc, dp__copy_arg *c) {
    dp_engine *eng = c->src->chunk->eng;
    int kind = dp__copy_kind(c->dst->chunk->ctx, c->src->chunk->ctx);
    int dev = c->dst->chunk->ctx.dev_type == DP_DEV_GPU ? c->dst->chunk->ctx.dev_id : c->src->chunk->ctx.dev_id;
    int status = dp__copy_bytes(eng, dp_nd_data(c->dst), dp_nd_data(c->src), dp_nd_bytes(c->src), kind, dev, rc->stream);
    if (status) dp_set_error(rc, dp__backend_error(eng, status));
    return status;
}
static int dp__copy_op(dp_run_ctx *rc, void *arg) {
    dp__copy_arg *c = (dp__copy_arg *)arg;
    int status = rc->input_status ? rc->input_status : dp__copy_run(rc, c);
    dp__copy_arg_free(c);
    return status;
}
/* Pushes the op that copies src's bytes into dst: routed as how says
   (NULL: a GPU end on that GPU's copy queue), named name unless how names
   it. The caller has checked the arrays. */
static dp_result dp__push_copy(dp_engine *eng, dp_ndarray *src, dp_ndarray *dst, const dp_push_desc *how, const char *name) {
    dp__copy_arg *c;
    dp_push_desc d;
    dp_result r;
    if ((c = (dp__copy_arg *)dp__alloc(eng, sizeof *c)) == NULL) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", name); return DP_ERROR_OUT_OF_MEMORY; }
    c->src = dp_nd_retain(src); c->dst = dp_nd_retain(dst);
    memset(&d, 0, sizeof d);
    if (how) { d.ctx = how->ctx; d.prop = how->prop; d.priority = how->priority; d.name = how->name; }
    else if (dp__copy_kind(dst->chunk->ctx, src->chunk->ctx) >= 0) {          /* a GPU end: its copy queue */
        d.ctx = dst->chunk->ctx.dev_type == DP_DEV_GPU ? dst->chunk->ctx : src->chunk->ctx;
        d.prop = dst->chunk->ctx.dev_type == DP_DEV_GPU ? DP_PROP_COPY_TO_GPU : DP_PROP_COPY_FROM_GPU;
    }
    if (!d.name) d.name = name;
    d.fn = dp__copy_op; d.arg = c; d.no_skip = 1;    /* dp__copy_op frees c and passes a failure on */
    d.reads = &src->chunk->var; d.num_reads = 1; d.writes = &dst->chunk->var; d.num_writes = 1;
    if ((r = dp_push(eng, &d)) != DP_OK) dp__copy_arg_free(c);
    return r;
}
DP_IMPL dp_result dp_nd_copy_to(dp_ndarray *a, dp_ctx ctx, dp_ndarray **out) {
    dp_engine *eng = a ? a->chunk->eng : NULL;
    size_t bytes;
    dp_result r;
    if (out) *out = NULL;
    if (!a) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_copy_to: NULL array"); return DP_ERROR_INVALID_ARGS; }
    if ((r = dp__nd_check(eng, "dp_nd_copy_to", &a->shape, a->dtype, &ctx, out, &bytes)) != DP_OK) return r;
    if ((r = dp__nd_new(eng, &a->shape, a->dtype, ctx, bytes, out)) != DP_OK) return r;
    if ((r = dp__push_copy(eng, a, *out, NULL, "copy_to")) != DP_OK) { dp_nd_release(*out); *out = NULL; }
    return r;
}
static int dp__nd_overlap(const dp_ndarray *a, const dp_ndarray *b);   /* with the invocation, below */
DP_IMPL dp_result dp_nd_copy_into(dp_ndarray *src, dp_ndarray *dst, const dp_push_desc *how) {
    dp_engine *eng = src ? src->chunk->eng : NULL;
    dp_result r;
    if (!src || !dst || dst->chunk->eng != eng || dp_nd_bytes(src) != dp_nd_bytes(dst) || dp__nd_overlap(src, dst)) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_copy_into: NULL arrays, arrays of other sizes or engines, or overlapping bytes");
        return DP_ERROR_INVALID_ARGS;
    }
    dp__chunk_bump(dst->chunk);                      /* a value saved from dst is stale from here */
    if ((r = dp__push_copy(eng, src, dst, how, "copy_into")) != DP_OK) { dp__fetch_add(&dst->chunk->version, -1, DP__RELAXED); return r; }
    if (dp__tracker.written) dp__tracker.written(dst);
    return DP_OK;
}

/* >>resources ---------------------------------------------------------------
   The generator is xoshiro256** seeded through splitmix64: small, fast and
   well tested; its state is touched only by operations that hold the write
   grant of its variable, so it needs no lock. */
typedef struct dp__resources {
    dp_ctx ctx;
    const dp_memory_backend *memory;             /* as the storage's */
    dp_var rng_var, temp_var;
    uint64_t rng[4];
    void *temp; size_t temp_size;
} dp__resources;
static uint64_t dp__splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static void dp__rng_seed(uint64_t *s, uint64_t seed) {
    int i;
    for (i = 0; i < 4; i++) s[i] = dp__splitmix(&seed);
}
static uint64_t dp__rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t dp__rng_next(uint64_t *s) {
    uint64_t result = dp__rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = dp__rotl(s[3], 45);
    return result;
}
static double dp__rng_uniform01(uint64_t *s) { return (double)(dp__rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }
/* The resources of a device, made on first use. A GPU's random generator
   state lives on the host: a GPU kernel takes a key from it (dp_random_next)
   and draws from a counter-based generator on the device; its workspace is
   device memory (the backend's mem_alloc). Errors, logged for what:
   DP_ERROR_INVALID_ARGS (no engine), DP_ERROR_BAD_CONTEXT (a device with no
   resources: unknown, or a GPU without a memory backend),
   DP_ERROR_OUT_OF_MEMORY (nothing made: a variable made before the failure
   is deleted again). */
static dp_result dp__resources_get(dp_engine *eng, dp_ctx ctx, const char *what, dp__resources **out) {
    dp__resources *r;
    dp__nd_state *s;
    int gpu = ctx.dev_type == DP_DEV_GPU;
    *out = NULL;
    if (!eng) { DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "%s: NULL engine", what); return DP_ERROR_INVALID_ARGS; }
    if (ctx.dev_type == DP_DEV_CPU_PINNED) { ctx.dev_type = DP_DEV_CPU; ctx.dev_id = 0; }   /* its ops run on CPU 0 */
    if ((ctx.dev_type != DP_DEV_DEFAULT && ctx.dev_type != DP_DEV_CPU && !gpu) || ctx.dev_id < 0 || ctx.dev_id >= DP__MAX_DEV
        || (gpu && (ctx.dev_id >= dp_engine_gpu_count(eng) || !dp__gpu_memory(eng)))) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "%s: no such device (%d, %d), or a GPU without a memory backend", what, (int)ctx.dev_type, ctx.dev_id);
        return DP_ERROR_BAD_CONTEXT;
    }
    if ((s = dp__nd_state_of(eng)) == NULL) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: the array layer's state", what); return DP_ERROR_OUT_OF_MEMORY; }
    dp__mutex_lock(&s->m);
    s->started = 1;
    r = s->resources[gpu][ctx.dev_id];
    if (!r && (r = (dp__resources *)dp__alloc(eng, sizeof *r)) != NULL) {
        memset(r, 0, sizeof *r);
        r->ctx.dev_type = gpu ? DP_DEV_GPU : DP_DEV_CPU; r->ctx.dev_id = ctx.dev_id;
        r->memory = gpu && dp__load(&s->has_memory, DP__RELAXED) ? &s->memory : NULL;
        r->rng_var = dp_var_create(eng);
        r->temp_var = dp_var_create(eng);
        dp__rng_seed(r->rng, 0);
        if (!r->rng_var.id || !r->temp_var.id) {
            if (r->rng_var.id) dp_var_delete(eng, r->rng_var);
            if (r->temp_var.id) dp_var_delete(eng, r->temp_var);
            dp__free(eng, r, sizeof *r);
            r = NULL;
        } else s->resources[gpu][ctx.dev_id] = r;
    }
    dp__mutex_unlock(&s->m);
    if (!r) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: the device's resources", what); return DP_ERROR_OUT_OF_MEMORY; }
    *out = r;
    return DP_OK;
}
/* The resources for the calls that return a handle or a pointer: NULL on
   an error, which is logged. */
static dp__resources *dp__resources_of(dp_engine *eng, dp_ctx ctx, const char *what) {
    dp__resources *r;
    dp__resources_get(eng, ctx, what, &r);
    return r;
}
static void dp__resources_destroy(dp_engine *eng, dp__resources *r) {
    if (!r) return;
    if (r->temp) dp__device_free(eng, r->memory, r->ctx, r->temp, r->temp_size);
    dp__free(eng, r, sizeof *r);
}
/* The layer's teardown (dp__nd_extension's destroy): every op is done, so the
   kept arrays go first, then the managers (which report arrays nobody
   released), then the resources. */
static void dp__invoke_records_free(dp_engine *eng, dp__nd_state *s);   /* after >>invoke */
static void dp__nd_state_destroy(dp_engine *eng, void *state, void *user) {
    dp__nd_state *s = (dp__nd_state *)state;
    int i;
    (void)user;
    dp__orphans_free(s);
    dp__invoke_records_free(eng, s);
    dp__gemm_ws_free_all(eng, s);
    for (i = 0; i < 3 * DP__MAX_DEV; i++) dp__storage_destroy(eng, s->storage[i / DP__MAX_DEV][i % DP__MAX_DEV]);
    for (i = 0; i < DP__MAX_DEV; i++) { dp__resources_destroy(eng, s->resources[0][i]); dp__resources_destroy(eng, s->resources[1][i]); }
    dp__mutex_destroy(&s->m);
    dp__free(eng, s, sizeof *s);
}
DP_IMPL dp_var dp_random_var(dp_engine *eng, dp_ctx ctx) {
    dp__resources *r = dp__resources_of(eng, ctx, "dp_random_var");
    dp_var none = {0};
    return r ? r->rng_var : none;
}
DP_IMPL uint64_t dp_random_next(dp_engine *eng, dp_ctx ctx) {
    dp__resources *r = dp__resources_of(eng, ctx, "dp_random_next");
    return r ? dp__rng_next(r->rng) : 0;
}
DP_IMPL double dp_random_uniform01(dp_engine *eng, dp_ctx ctx) {
    dp__resources *r = dp__resources_of(eng, ctx, "dp_random_uniform01");
    return r ? dp__rng_uniform01(r->rng) : 0.0;
}
DP_IMPL dp_var dp_temp_space_var(dp_engine *eng, dp_ctx ctx) {
    dp__resources *r = dp__resources_of(eng, ctx, "dp_temp_space_var");
    dp_var none = {0};
    return r ? r->temp_var : none;
}
DP_IMPL void *dp_temp_space(dp_engine *eng, dp_ctx ctx, size_t bytes) {
    dp__resources *r = dp__resources_of(eng, ctx, "dp_temp_space");
    if (!r) return NULL;
    if (bytes > r->temp_size) {   /* grow: the old contents need not survive */
        size_t size = dp__storage_class(bytes);
        void *p = size ? dp__device_alloc(eng, r->memory, r->ctx, size) : NULL;   /* 64-byte aligned on the CPU */
        if (!p) return NULL;
        if (r->temp) dp__device_free(eng, r->memory, r->ctx, r->temp, r->temp_size);
        r->temp = p; r->temp_size = size;
    }
    return r->temp;
}
/* dp_storage_release_pool's part: the workspace is the ops' that write
   temp_var, so it is freed by one more of them, pushed, after those before
   it are done. Nothing to do for a device whose resources were never made
   (they are not made here). */
static int dp__temp_release_op(dp_run_ctx *rc, void *arg) {
    dp__resources *r = (dp__resources *)arg;
    if (r->temp) dp__device_free(rc->engine, r->memory, r->ctx, r->temp, r->temp_size);
    r->temp = NULL; r->temp_size = 0;
    return 0;
}
static dp_result dp__temp_space_release(dp_engine *eng, dp_ctx ctx) {
    dp__nd_state *s = dp__nd_state_of(eng);
    dp__resources *r;
    dp_push_desc d;
    dp_result res;
    if (!s || ctx.dev_type == DP_DEV_CPU_PINNED) return DP_OK;   /* pinned memory has no workspace of its own */
    dp__mutex_lock(&s->m);
    r = s->resources[ctx.dev_type == DP_DEV_GPU][ctx.dev_id];
    dp__mutex_unlock(&s->m);
    if (!r) return DP_OK;
    memset(&d, 0, sizeof d);
    d.fn = dp__temp_release_op; d.arg = r; d.writes = &r->temp_var; d.num_writes = 1; d.prop = DP_PROP_NO_SKIP;
    d.name = "release_temp_space";
    if ((res = dp_push(eng, &d)) != DP_OK) DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_storage_release_pool: the temporary workspace's release");
    return res;
}
typedef struct dp__seed_arg { dp__resources *r; uint64_t seed; } dp__seed_arg;
static int dp__seed_op(dp_run_ctx *rc, void *arg) {
    dp__seed_arg *a = (dp__seed_arg *)arg;
    dp__rng_seed(a->r->rng, a->seed);
    dp__free(rc->engine, a, sizeof *a);
    return 0;
}
DP_IMPL dp_result dp_random_seed(dp_engine *eng, dp_ctx ctx, uint64_t seed) {
    dp__resources *r;
    dp__seed_arg *a;
    dp_push_desc d;
    dp_result res = dp__resources_get(eng, ctx, "dp_random_seed", &r);
    if (res != DP_OK) return res;
    if ((a = (dp__seed_arg *)dp__alloc(eng, sizeof *a)) == NULL) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_random_seed"); return DP_ERROR_OUT_OF_MEMORY; }
    a->r = r; a->seed = seed;
    memset(&d, 0, sizeof d);
    d.fn = dp__seed_op; d.arg = a; d.writes = &r->rng_var; d.num_writes = 1; d.prop = DP_PROP_NO_SKIP; d.name = "random_seed";
    if ((res = dp_push(eng, &d)) != DP_OK) dp__free(eng, a, sizeof *a);
    return res;
}
/* Random fills: kind 0 uniform [p0, p1), kind 1 normal (mean p0, stddev p1,
   Box-Muller: two uniforms give two normals). */
typedef struct dp__random_arg { dp_ndarray *a; dp__resources *r; int kind; double p0, p1; } dp__random_arg;
/* Box-Muller: two uniforms (u1 in (0, 1]) give two normals; `second`
   picks the sine one. */
static DP__HD double dp__box_muller(double u1, double u2, int second) {
    double radius = sqrt(-2.0 * log(u1)), angle = 6.283185307179586 * u2;
    return radius * (second ? sin(angle) : cos(angle));
}
static double dp__draw(dp__random_arg *g, int64_t i, double *spare) {
    if (g->kind == 0) return g->p0 + (g->p1 - g->p0) * dp__rng_uniform01(g->r->rng);
    if (i & 1) return g->p0 + g->p1 * *spare;
    {
        double u1 = 1.0 - dp__rng_uniform01(g->r->rng), u2 = dp__rng_uniform01(g->r->rng);  /* u1 in (0, 1] */
        *spare = dp__box_muller(u1, u2, 1);
        return g->p0 + g->p1 * dp__box_muller(u1, u2, 0);
    }
}
static int dp__random_op(dp_run_ctx *rc, void *arg) {
    dp__random_arg *g = (dp__random_arg *)arg;
    dp_ndarray *a = g->a;
    void *x = dp_nd_data(a);
    int64_t i, n = dp_shape_size(&a->shape);
    double spare = 0;
    if (!rc->input_status) {
        for (i = 0; i < n; i++) {
            double v = dp__draw(g, i, &spare);
            switch (a->dtype) {
            case DP_FLOAT32: ((float *)x)[i] = (float)v; break;
            case DP_FLOAT64: ((double *)x)[i] = v; break;
            case DP_INT32: ((int32_t *)x)[i] = dp__to_int32(v); break;
            default: dp__store_elem(x, a->dtype, i, v, DP_REQ_WRITE); break;
            }
        }
    }
    dp_nd_release(a);
    dp__free(rc->engine, g, sizeof *g);
    return rc->input_status;
}
/* On a GPU, the random operator's GPU kernel (depeng_cuda.h) draws into a
   new device array: a counter-based generator keyed from the device's
   host-side generator state. */
static dp_result dp__nd_random_gpu(dp_engine *eng, int kind, double p0, double p1, const dp_shape *shape, dp_dtype dtype,
                                   dp_ctx ctx, dp_ndarray **out) {
    dp_invoke_desc d;
    dp_result r;
    memset(&d, 0, sizeof d);
    d.op = kind == 0 ? "random_uniform" : "random_normal";
    d.params[0].name = "shape"; d.params[0].shape = *shape;
    d.params[1].name = kind == 0 ? "low" : "loc"; d.params[1].f = p0;
    d.params[2].name = kind == 0 ? "high" : "scale"; d.params[2].f = p1;
    d.params[3].name = "dtype"; d.params[3].s = dp_dtype_name(dtype);
    if ((r = dp_nd_empty(eng, shape, dtype, ctx, out)) != DP_OK) return r;
    d.outputs[0] = *out;
    if ((r = dp_invoke(eng, &d, NULL)) != DP_OK) {
        dp_nd_release(*out);
        *out = NULL;
    }
    return r;
}
static dp_result dp__nd_random(dp_engine *eng, const char *what, int kind, double p0, double p1, const dp_shape *shape,
                               dp_dtype dtype, dp_ctx ctx, dp_ndarray **out) {
    size_t bytes;
    dp__random_arg *g;
    dp__resources *res;
    dp_push_desc d;
    dp_var writes[2];
    dp_result r = dp__nd_check(eng, what, shape, dtype, &ctx, out, &bytes);
    if (r != DP_OK) return r;
    if (!(p0 == p0) || !(p1 == p1) || (kind == 0 && p1 < p0) || (kind == 1 && p1 < 0)) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: parameters %g, %g", what, p0, p1);
        return DP_ERROR_INVALID_ARGS;
    }
    if (ctx.dev_type == DP_DEV_GPU) return dp__nd_random_gpu(eng, kind, p0, p1, shape, dtype, ctx, out);
    if (ctx.dev_type != DP_DEV_CPU) {   /* the fill writes host memory */
        DP__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "%s: random arrays are made on CPU or GPU devices", what);
        return DP_ERROR_BAD_CONTEXT;
    }
    if ((r = dp__resources_get(eng, ctx, what, &res)) != DP_OK) return r;
    if ((r = dp__nd_new(eng, shape, dtype, ctx, bytes, out)) != DP_OK) return r;
    if ((g = (dp__random_arg *)dp__alloc(eng, sizeof *g)) == NULL) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what);
        dp_nd_release(*out); *out = NULL;
        return DP_ERROR_OUT_OF_MEMORY;
    }
    g->a = dp_nd_retain(*out); g->r = res; g->kind = kind; g->p0 = p0; g->p1 = p1;
    writes[0] = (*out)->chunk->var; writes[1] = res->rng_var;      /* a draw writes the generator */
    memset(&d, 0, sizeof d);
    d.fn = dp__random_op; d.arg = g; d.writes = writes; d.num_writes = 2; d.ctx = ctx; d.prop = DP_PROP_NO_SKIP; d.name = what;
    if ((r = dp_push(eng, &d)) != DP_OK) { dp_nd_release(g->a); dp__free(eng, g, sizeof *g); dp_nd_release(*out); *out = NULL; }
    return r;
}
DP_IMPL dp_result dp_nd_random_uniform(dp_engine *eng, double low, double high, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out) {
    return dp__nd_random(eng, "dp_nd_random_uniform", 0, low, high, shape, dtype, ctx, out);
}
DP_IMPL dp_result dp_nd_random_normal(dp_engine *eng, double mean, double stddev, const dp_shape *shape, dp_dtype dtype, dp_ctx ctx, dp_ndarray **out) {
    return dp__nd_random(eng, "dp_nd_random_normal", 1, mean, stddev, shape, dtype, ctx, out);
}

/* >>files: arrays to and from .npy / .npz ------------------------------------- */
/* Reads a whole file into memory it allocates (*len bytes, and one more:
   free *len + 1). The size the file reports is only a first guess: reading
   goes on to the end of the file, so files that report 0 or no size at all
   (/proc files, pipes) are read whole too, and a file that grows while it
   is read is read to where it then ends. A directory opens like a file on
   POSIX systems (and may report a size of LONG_MAX), but reading it fails:
   one byte is read before the guess is trusted. Logs and returns
   DP_ERROR_IO if the file cannot be read, DP_ERROR_OUT_OF_MEMORY (logged)
   if it does not fit in memory. */
static dp_result dp__read_file(dp_engine *eng, const char *path, unsigned char **buf, size_t *len) {
    FILE *f = path ? fopen(path, "rb") : NULL;
    long size = -1;
    size_t cap, want, n = 0;
    unsigned char *more = NULL;
    int c, failed;
    *buf = NULL; *len = 0;
    if (!f) { DP__LOG(eng, DP_LOG_ERROR, IO, "cannot open '%s' for reading", path ? path : "(null)"); return DP_ERROR_IO; }
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) { size = 0; clearerr(f); }   /* a pipe: no size */
    if ((c = getc(f)) == EOF && ferror(f)) { fclose(f); DP__LOG(eng, DP_LOG_ERROR, IO, "cannot read '%s' (a directory?)", path); return DP_ERROR_IO; }
    want = cap = size > 0 ? (size_t)size + 1 : 4096;   /* + 1: the end is seen without growing */
    if ((*buf = (unsigned char *)dp__alloc(eng, cap)) != NULL) {
        if (c != EOF) (*buf)[n++] = (unsigned char)c;
        while ((n += fread(*buf + n, 1, cap - n, f)) == cap
               && (want = cap <= SIZE_MAX / 2 ? cap * 2 : SIZE_MAX) != SIZE_MAX
               && (more = (unsigned char *)dp__realloc(eng, *buf, cap, want)) != NULL) {
            *buf = more;
            cap = want;
        }
        /* the callers free *len + 1 bytes */
        if (n < cap && !ferror(f) && (cap == (want = n + 1) || (more = (unsigned char *)dp__realloc(eng, *buf, cap, want)) != NULL)) {
            fclose(f);
            if (cap != want) *buf = more;
            *len = n;
            return DP_OK;
        }
    }
    failed = ferror(f);
    fclose(f);
    dp__free(eng, *buf, cap);
    *buf = NULL;
    if (failed) { DP__LOG(eng, DP_LOG_ERROR, IO, "cannot read '%s'", path); return DP_ERROR_IO; }
    DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "reading '%s': no memory for %zu bytes", path, want);
    return DP_ERROR_OUT_OF_MEMORY;
}
/* a's bytes in host memory, once its writes are done: the array's own for a
   CPU array, else a staging copy (*owned set: free it with dp__free). */
static dp_result dp__nd_host_bytes(dp_ndarray *a, const unsigned char **bytes, int *owned, dp_failure *failure) {
    dp_engine *eng = a->chunk->eng;
    size_t n = dp_nd_bytes(a);
    dp_result r;
    *owned = 0;
    if (a->chunk->ctx.dev_type != DP_DEV_GPU) {
        if ((r = dp_wait_var(eng, a->chunk->var, failure)) != DP_OK) return r;
        *bytes = (const unsigned char *)dp_nd_data(a);
        return DP_OK;
    }
    {
        unsigned char *copy = (unsigned char *)dp__alloc(eng, n ? n : 1);
        if (!copy) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "the host copy of a GPU array (%zu bytes) to save", n); return DP_ERROR_OUT_OF_MEMORY; }
        if ((r = dp_nd_read(a, copy, n, failure)) != DP_OK) { dp__free(eng, copy, n ? n : 1); return r; }
        *bytes = copy; *owned = 1;
        return DP_OK;
    }
}
#define DP__NPY_HEADER_MAX 1024     /* 8 dims of 19 digits fit with room to spare */
DP_IMPL dp_result dp_nd_save_npy(dp_ndarray *a, const char *path, dp_failure *failure) {
    dp_engine *eng = a ? a->chunk->eng : NULL;
    char head[DP__NPY_HEADER_MAX];
    size_t hlen, n;
    const unsigned char *bytes;
    int owned, bad;
    FILE *f;
    dp_result r;
    if (!a || !path) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_save_npy: NULL array or path"); return DP_ERROR_INVALID_ARGS; }
    if ((r = dp__npy_header(a->dtype, &a->shape, head, sizeof head, &hlen)) != DP_OK) return r;
    if ((r = dp__nd_host_bytes(a, &bytes, &owned, failure)) != DP_OK) return r;
    n = dp_nd_bytes(a);
    if ((f = fopen(path, "wb")) == NULL) bad = 1;
    else {
        bad = fwrite(head, 1, hlen, f) != hlen || (n && fwrite(bytes, 1, n, f) != n);
        bad |= fclose(f) != 0;
    }
    if (owned) dp__free(eng, (void *)(uintptr_t)bytes, n ? n : 1);
    if (bad) { DP__LOG(eng, DP_LOG_ERROR, IO, "cannot write '%s'", path); return DP_ERROR_IO; }
    return DP_OK;
}
/* An array from a whole .npy image (a file, or an .npz member). Fortran
   order or big-endian data is converted through a copy of its own. */
static dp_result dp__nd_from_npy(dp_engine *eng, const unsigned char *buf, size_t len, const char *where, dp_ctx ctx, dp_ndarray **out) {
    char msg[256];
    dp_dtype dt;
    dp_shape shape;
    size_t offset, n;
    unsigned convert;
    unsigned char *c_order;
    dp_result r;
    if (dp__npy_parse(buf, len, &dt, &shape, &offset, &convert, msg, sizeof msg) != DP_OK) {
        DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s: %s", where, msg);
        return DP_ERROR_FORMAT;
    }
    if (!convert || (n = len - offset) == 0) return dp_nd_from_host(eng, &shape, dt, ctx, buf + offset, out);
    if ((c_order = (unsigned char *)dp__alloc(eng, n)) == NULL) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: %zu bytes to convert %s data into", where, n,
                convert & DP__NPY_FORTRAN ? "Fortran-order" : "big-endian");
        return DP_ERROR_OUT_OF_MEMORY;
    }
    dp__npy_to_c_order(buf + offset, c_order, n, dt, &shape, convert);
    r = dp_nd_from_host(eng, &shape, dt, ctx, c_order, out);
    dp__free(eng, c_order, n);
    return r;
}
DP_IMPL dp_result dp_nd_load_npy(dp_engine *eng, const char *path, dp_ctx ctx, dp_ndarray **out) {
    unsigned char *buf;
    size_t len;
    dp_result r;
    if (out) *out = NULL;
    if (!eng || !out) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_load_npy: NULL engine or out"); return DP_ERROR_INVALID_ARGS; }
    if ((r = dp__read_file(eng, path, &buf, &len)) != DP_OK) return r;
    r = dp__nd_from_npy(eng, buf, len, path, ctx, out);
    dp__free(eng, buf, len + 1);
    return r;
}
/* Two of m[0..n) with the same name: *first < *second, the pair whose
   second comes first in m. 1 if there are, 0 if not, -1 without memory for
   the sort (n log n, so a large archive is not n squared string compares). */
static int dp__npz_cmp_named(const void *a, const void *b) {
    const dp_nd_named *x = *(const dp_nd_named *const *)a, *y = *(const dp_nd_named *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : x < y ? -1 : x > y;
}
static int dp__npz_duplicate(dp_engine *eng, const dp_nd_named *m, int n, int *first, int *second) {
    const dp_nd_named **by_name;
    int i, found = 0;
    if (n < 2) return 0;
    if ((by_name = (const dp_nd_named **)dp__alloc(eng, sizeof *by_name * (size_t)n)) == NULL) return -1;
    for (i = 0; i < n; i++) by_name[i] = &m[i];
    qsort((void *)by_name, (size_t)n, sizeof *by_name, dp__npz_cmp_named);
    for (i = 1; i < n; i++)
        if (strcmp(by_name[i - 1]->name, by_name[i]->name) == 0 && (!found || by_name[i] - m < *second)) {
            found = 1;
            *first = (int)(by_name[i - 1] - m);
            *second = (int)(by_name[i] - m);
        }
    dp__free(eng, (void *)by_name, sizeof *by_name * (size_t)n);
    return found;
}
/* One member's bytes while saving: its preamble, name and array bytes, and
   its deflated stream when compressing. */
typedef struct dp__npz_out { char head[DP__NPY_HEADER_MAX]; char name[sizeof(((dp_nd_named *)0)->name) + 4]; size_t hlen; const unsigned char *bytes; int owned; unsigned char *packed; size_t packed_len; } dp__npz_out;
/* Deflates member m (its preamble then its array bytes) into memory of its
   own: m->packed, exactly m->packed_len bytes. */
static dp_result dp__npz_deflate_member(dp_engine *eng, dp__deflate_work *wk, dp__npz_out *m, size_t body_len, int level) {
    size_t n = m->hlen + body_len, cap = dp__deflate_bound(n), got = 0;
    unsigned char *plain, *stream;
    dp_result r;
    if ((plain = (unsigned char *)dp__alloc(eng, n)) == NULL) return DP_ERROR_OUT_OF_MEMORY;
    if ((stream = (unsigned char *)dp__alloc(eng, cap)) == NULL) { dp__free(eng, plain, n); return DP_ERROR_OUT_OF_MEMORY; }
    memcpy(plain, m->head, m->hlen);
    if (body_len) memcpy(plain + m->hlen, m->bytes, body_len);
    r = dp__deflate(wk, plain, n, stream, cap, level, &got);
    dp__free(eng, plain, n);
    if (r == DP_OK && (m->packed = (unsigned char *)dp__alloc(eng, got ? got : 1)) == NULL) r = DP_ERROR_OUT_OF_MEMORY;
    if (r == DP_OK) { memcpy(m->packed, stream, got); m->packed_len = got; }
    dp__free(eng, stream, cap);
    return r;
}
DP_IMPL dp_result dp_nd_save_npz(const char *path, const dp_nd_named *arrays, int count, const dp_npz_desc *opts, dp_failure *failure) {
    dp_engine *eng = count > 0 && arrays && arrays[0].array ? arrays[0].array->chunk->eng : NULL;
    dp__npz_out *m = NULL;
    dp__zip_piece_member *z = NULL;
    dp__deflate_work *wk = NULL;
    dp_npz_desc o;
    dp_result r = DP_OK;
    FILE *f = NULL;
    int i, done = 0;
    if (!path || count < 0 || (count && !arrays)) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_save_npz: NULL path or arrays"); return DP_ERROR_INVALID_ARGS; }
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (o.compress < 0 || o.compress > 1 || o.level < 0 || o.level > 9) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_save_npz: compress %d (0 or 1), level %d (0..9)", o.compress, o.level);
        return DP_ERROR_INVALID_ARGS;
    }
    for (i = 0; i < count; i++) {
        if (!arrays[i].array || !arrays[i].name[0] || memchr(arrays[i].name, 0, sizeof arrays[i].name) == NULL) {
            DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_save_npz: member %d needs an array and a name of 1..127 characters", i);
            return DP_ERROR_INVALID_ARGS;
        }
    }
    switch (dp__npz_duplicate(eng, arrays, count, &i, &done)) {   /* a reader would load one of them, or refuse */
    case 1:
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_save_npz: members %d and %d are both named '%s'", i, done, arrays[i].name);
        return DP_ERROR_INVALID_ARGS;
    case -1:
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_nd_save_npz: sorting %d member names", count);
        return DP_ERROR_OUT_OF_MEMORY;
    default: done = 0; break;
    }
    if (count && ((m = (dp__npz_out *)dp__alloc(eng, sizeof *m * (size_t)count)) == NULL
                  || (z = (dp__zip_piece_member *)dp__alloc(eng, sizeof *z * (size_t)count)) == NULL
                  || (o.compress && (wk = (dp__deflate_work *)dp__alloc(eng, sizeof *wk)) == NULL))) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_nd_save_npz: the list of %d members%s", count, o.compress ? " and the deflater's tables" : "");
        r = DP_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    for (i = 0; i < count && r == DP_OK; i++, done++) {
        dp_ndarray *a = arrays[i].array;
        m[i].packed = NULL; m[i].packed_len = 0; m[i].owned = 0;
        snprintf(m[i].name, sizeof m[i].name, "%s.npy", arrays[i].name);
        if ((r = dp__npy_header(a->dtype, &a->shape, m[i].head, sizeof m[i].head, &m[i].hlen)) != DP_OK) break;
        if ((r = dp__nd_host_bytes(a, &m[i].bytes, &m[i].owned, failure)) != DP_OK) break;
        if (o.compress && (r = dp__npz_deflate_member(eng, wk, &m[i], dp_nd_bytes(a), o.level)) != DP_OK) {
            if (r == DP_ERROR_OUT_OF_MEMORY) DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_nd_save_npz: deflating member '%s'", arrays[i].name);
            else DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_save_npz: member '%s' is too large to deflate (4 GiB)", arrays[i].name);
            done++;
            break;
        }
        z[i].name = m[i].name;
        z[i].head = (const unsigned char *)m[i].head; z[i].head_len = m[i].hlen;
        z[i].body = m[i].bytes; z[i].body_len = dp_nd_bytes(a);
        z[i].packed = m[i].packed; z[i].packed_len = m[i].packed_len;
    }
    if (r == DP_OK) {
        if ((f = fopen(path, "wb")) == NULL) r = DP_ERROR_IO;
        else {
            r = dp__zip_write_pieces(f, z, count);
            if (fclose(f) != 0 && r == DP_OK) r = DP_ERROR_IO;
        }
        if (r == DP_ERROR_INVALID_ARGS) DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_save_npz: '%s' would reach 4 GiB, which needs zip64 (not supported)", path);
        else if (r != DP_OK) DP__LOG(eng, DP_LOG_ERROR, IO, "cannot write '%s'", path);
    }
out:
    for (i = 0; i < done; i++) {         /* a staging copy goes back to its own array's engine */
        if (m[i].owned) dp__free(arrays[i].array->chunk->eng, (void *)(uintptr_t)m[i].bytes, dp_nd_bytes(arrays[i].array) ? dp_nd_bytes(arrays[i].array) : 1);
        if (m[i].packed) dp__free(eng, m[i].packed, m[i].packed_len ? m[i].packed_len : 1);
    }
    dp__free(eng, wk, wk ? sizeof *wk : 0);
    dp__free(eng, m, sizeof *m * (size_t)count);
    dp__free(eng, z, sizeof *z * (size_t)count);
    return r;
}
/* The array of one member: straight from the archive when stored, from
   memory of its own (plain_len bytes, freed after) when deflated. */
static dp_result dp__npz_member_array(dp_engine *eng, const dp__zip_member *m, const char *where, dp_ctx ctx, dp_ndarray **out) {
    unsigned char *plain;
    char msg[256];
    dp_result r;
    if (m->method == 0) return dp__nd_from_npy(eng, m->data, m->len, where, ctx, out);
    if ((plain = (unsigned char *)dp__alloc(eng, m->plain_len ? m->plain_len : 1)) == NULL) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: %zu bytes to inflate into", where, m->plain_len);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    if (dp__zip_inflate_member(m, plain, msg, sizeof msg) != DP_OK) {
        DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s: %s", where, msg);
        r = DP_ERROR_FORMAT;
    } else r = dp__nd_from_npy(eng, plain, m->plain_len, where, ctx, out);
    dp__free(eng, plain, m->plain_len ? m->plain_len : 1);
    return r;
}
DP_IMPL dp_result dp_nd_load_npz(dp_engine *eng, const char *path, dp_ctx ctx, dp_nd_named *out, int cap, int *count) {
    unsigned char *buf = NULL;
    size_t len = 0;
    dp__zip_member *zm = NULL;
    char msg[256];
    uint32_t members = 0;
    int n = 0, i, loaded = 0, zcap = 0;
    dp_result r;
    if (count) *count = 0;
    if (!eng || !out || !count) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_load_npz: NULL engine, out or count"); return DP_ERROR_INVALID_ARGS; }
    if (cap < 0) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_load_npz: negative cap %d", cap); return DP_ERROR_INVALID_ARGS; }
    if ((r = dp__read_file(eng, path, &buf, &len)) != DP_OK) return r;
    /* room for the members the archive lists (at most cap), not for cap */
    if (dp__zip_count(buf, len, &members, msg, sizeof msg) != DP_OK) { DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s: %s", path, msg); r = DP_ERROR_FORMAT; goto out; }
    zcap = (int)members < cap ? (int)members : cap;
    if ((zm = (dp__zip_member *)dp__alloc(eng, sizeof *zm * (size_t)(zcap ? zcap : 1))) == NULL) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: a list of %d members", path, zcap);
        r = DP_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    if (dp__zip_read(buf, len, zm, zcap, &n, msg, sizeof msg) != DP_OK) {
        DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s: %s", path, msg);
        r = DP_ERROR_FORMAT;
        n = 0;
        goto out;
    }
    for (i = 0; i < n && r == DP_OK; i++) {   /* the names, all checked before any array is made */
        size_t nl = zm[i].name_len;
        if (nl > 4 && memcmp(zm[i].name + nl - 4, ".npy", 4) == 0) nl -= 4;
        if (nl == 0 || nl >= sizeof out[i].name) {
            DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s: member %d's name is empty or longer than %d characters", path, i, (int)sizeof out[i].name - 1);
            r = DP_ERROR_FORMAT;
        } else if (memchr(zm[i].name, 0, nl) != NULL) {       /* it would load under a shorter name */
            DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s: member %d's name holds a NUL byte", path, i);
            r = DP_ERROR_FORMAT;
        } else {
            memcpy(out[i].name, zm[i].name, nl);
            out[i].name[nl] = 0;
            out[i].array = NULL;
        }
    }
    if (r == DP_OK) {
        int first = 0, second = 0;
        switch (dp__npz_duplicate(eng, out, n, &first, &second)) {   /* which one would the caller get? */
        case 1:
            DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s: members %d and %d are both named '%s'", path, first, second, out[first].name);
            r = DP_ERROR_FORMAT;
            break;
        case -1:
            DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: sorting %d member names", path, n);
            r = DP_ERROR_OUT_OF_MEMORY;
            break;
        default: break;
        }
    }
    for (i = 0; i < n && r == DP_OK; i++, loaded++) {
        char where[300];
        snprintf(where, sizeof where, "%s, member '%s'", path, out[i].name);
        if ((r = dp__npz_member_array(eng, &zm[i], where, ctx, &out[i].array)) != DP_OK) break;
    }
    if (r != DP_OK) {   /* nothing is left allocated */
        for (i = 0; i < loaded; i++) { dp_nd_release(out[i].array); out[i].array = NULL; }
        n = 0;
    }
    *count = n;
out:
    dp__free(eng, zm, sizeof *zm * (size_t)(zcap ? zcap : 1));
    dp__free(eng, buf, len + 1);
    return r;
}

/* >>data: CSV files ---------------------------------- */
/* Why a CSV field was refused, and where it starts. */
typedef struct dp__csv_bad { const char *field; int out_of_range; } dp__csv_bad;
/* Parses the fields of one line [p, eol) as numbers into out (up to cap;
   *count is how many the line has). Returns 0, or the 1-based column of
   the first field that is not a number or is a finite number float32
   cannot hold (then *bad says which, and where). */
static int dp__csv_fields(const char *p, const char *eol, float *out, int cap, int *count, dp__csv_bad *bad) {
    int col = 0;
    for (;;) {
        char *end;
        double v;
        float f;
        while (p < eol && (*p == ' ' || *p == '\t')) p++;
        bad->field = p;
        bad->out_of_range = 0;
        errno = 0;
        v = strtod(p, &end);
        if (end == p || end > eol) return col + 1;
        /* inf from finite text: beyond double (ERANGE) or float32's range */
        f = (float)v;
        if ((isinf(v) && errno == ERANGE) || (isinf(f) && !isinf(v))) { bad->out_of_range = 1; return col + 1; }
        p = end;
        while (p < eol && (*p == ' ' || *p == '\t')) p++;
        if (p < eol && *p != ',') return col + 1;
        if (col < cap) out[col] = f;
        col++;
        if (p == eol) break;
        p++;                                   /* the comma */
    }
    *count = col;
    return 0;
}
/* A header names columns: it has a letter or a quote (a first data row
   with an empty or broken field is an error, not a header). */
static int dp__csv_header_like(const char *p, const char *eol) {
    for (; p < eol; p++) if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '"' || *p == '_') return 1;
    return 0;
}
static int dp__blank(const char *p, const char *eol) { while (p < eol && (*p == ' ' || *p == '\t')) p++; return p == eol; }
/* Logs a refused field: file, line, column and the field's text. */
static dp_result dp__csv_bad_field(dp_engine *eng, const char *path, int64_t line, int col, const dp__csv_bad *bad, const char *eol) {
    const char *stop = bad->field;
    char shown[40];
    while (stop < eol && *stop != ',') stop++;
    while (stop > bad->field && (stop[-1] == ' ' || stop[-1] == '\t')) stop--;
    dp__npy_printable(shown, sizeof shown, (const unsigned char *)bad->field, (size_t)(stop - bad->field));
    DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s:%lld: column %d (\"%s\") %s", path, (long long)line, col, shown,
            bad->out_of_range ? "is out of float32's range (it would be inf)" : "is not a number");
    return DP_ERROR_FORMAT;
}
/* The values of every data line after the first skip lines, row after
   row, and the row and column counts; with skip 0, a first line that is
   not numbers is a header. */
static dp_result dp__csv_oom(dp_engine *eng, const char *path, int64_t rows) {
    DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_nd_load_csv '%s': the values after %lld rows", path, (long long)rows);
    return DP_ERROR_OUT_OF_MEMORY;
}
static dp_result dp__csv_parse(dp_engine *eng, const char *path, char *text, size_t len, int64_t skip, float **vals, size_t *cap, int64_t *rows, int *cols) {
    char *p = text, *end = text + len;
    int64_t line = 0;
    size_t n = 0;
    dp__csv_bad why;
    *rows = 0; *cols = 0;
    while (p < end) {
        char *eol = (char *)memchr(p, '\n', (size_t)(end - p)), *next;
        int count = 0, bad;
        if (!eol) eol = end;
        next = eol < end ? eol + 1 : end;
        if (eol > p && eol[-1] == '\r') eol--;
        line++;
        if (line <= skip || dp__blank(p, eol)) { p = next; continue; }
        if (dp__reserve(eng, vals, cap, n + (size_t)(*cols > 0 ? *cols : 1024), sizeof **vals, 4096)) return dp__csv_oom(eng, path, *rows);
        *eol = 0;                              /* strtod stops here */
        bad = dp__csv_fields(p, eol, *vals + n, (int)(*cap - n > (size_t)INT32_MAX ? INT32_MAX : *cap - n), &count, &why);
        if (bad && skip == 0 && *rows == 0 && *cols == 0 && !why.out_of_range && dp__csv_header_like(p, eol)) { *cols = -1; p = next; continue; }
        if (bad) return dp__csv_bad_field(eng, path, line, bad, &why, eol);
        if (*cols <= 0) {
            *cols = count;
            if (dp__reserve(eng, vals, cap, n + (size_t)count, sizeof **vals, 4096)) return dp__csv_oom(eng, path, *rows);
            if (dp__csv_fields(p, eol, *vals + n, count, &count, &why)) return DP_ERROR_FORMAT;   /* again, all of it */
        } else if (count != *cols) {
            DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s:%lld: %d columns, the rows before have %d", path, (long long)line, count, *cols);
            return DP_ERROR_FORMAT;
        }
        n += (size_t)count;
        (*rows)++;
        p = next;
    }
    if (*rows == 0) {
        DP__LOG(eng, DP_LOG_ERROR, FORMAT, "%s: no rows of numbers%s", path, skip > 0 && line <= skip ? " (every line was skipped)" : "");
        return DP_ERROR_FORMAT;
    }
    return DP_OK;
}
DP_IMPL dp_result dp_nd_load_csv(dp_engine *eng, const char *path, int label_column, dp_ctx ctx, const dp_csv_desc *opts,
                                 dp_ndarray **data, dp_ndarray **label) {
    unsigned char *buf = NULL;
    float *vals = NULL, *x = NULL, *y = NULL;
    size_t len = 0, cap = 0;
    int64_t rows = 0, r;
    int cols = 0, lc = label_column, c, k;
    dp_shape ds, ls;
    dp_result res;
    if (data) *data = NULL;
    if (label) *label = NULL;
    if (!eng || !path || !data || (!label && label_column != DP_CSV_NO_LABEL)) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_load_csv: NULL engine, path, data, or label (with a label column)");
        return DP_ERROR_INVALID_ARGS;
    }
    if (opts && opts->skip_lines < 0) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_load_csv: skip_lines %d is negative", opts->skip_lines);
        return DP_ERROR_INVALID_ARGS;
    }
    if ((res = dp__read_file(eng, path, &buf, &len)) != DP_OK) return res;
    res = dp__csv_parse(eng, path, (char *)buf, len, opts ? opts->skip_lines : 0, &vals, &cap, &rows, &cols);
    if (res == DP_OK && label_column != DP_CSV_NO_LABEL) {
        if (lc < 0) lc += cols;
        if (lc < 0 || lc >= cols || cols < 2) {
            DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_load_csv: label column %d of %d columns (and one left for data)", label_column, cols);
            res = DP_ERROR_INVALID_ARGS;
        }
    }
    if (res == DP_OK && label_column != DP_CSV_NO_LABEL) {     /* split the label column off */
        int dcols = cols - 1;
        x = (float *)dp__alloc(eng, (size_t)rows * (size_t)dcols * sizeof *x);
        y = (float *)dp__alloc(eng, (size_t)rows * sizeof *y);
        if (!x || !y) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_nd_load_csv '%s': %lld rows", path, (long long)rows); res = DP_ERROR_OUT_OF_MEMORY; }
        for (r = 0; res == DP_OK && r < rows; r++)
            for (c = 0, k = 0; c < cols; c++) {
                float v = vals[(size_t)r * (size_t)cols + (size_t)c];
                if (c == lc) y[r] = v; else x[(size_t)r * (size_t)dcols + (size_t)k++] = v;
            }
        memset(&ds, 0, sizeof ds); ds.ndim = 2; ds.dims[0] = rows; ds.dims[1] = dcols;
        memset(&ls, 0, sizeof ls); ls.ndim = 1; ls.dims[0] = rows;
        if (res == DP_OK && (res = dp_nd_from_host(eng, &ds, DP_FLOAT32, ctx, x, data)) == DP_OK
            && (res = dp_nd_from_host(eng, &ls, DP_FLOAT32, ctx, y, label)) != DP_OK) { dp_nd_release(*data); *data = NULL; }
    } else if (res == DP_OK) {
        memset(&ds, 0, sizeof ds); ds.ndim = 2; ds.dims[0] = rows; ds.dims[1] = cols;
        res = dp_nd_from_host(eng, &ds, DP_FLOAT32, ctx, vals, data);
    }
    dp__free(eng, x, x ? (size_t)rows * (size_t)(cols - 1) * sizeof *x : 0);
    dp__free(eng, y, y ? (size_t)rows * sizeof *y : 0);
    dp__free(eng, vals, cap * sizeof *vals);
    dp__free(eng, buf, len + 1);
    return res;
}

/* >>registry ----------------------------------------------------------------
   A fixed table: registration happens once per process, lookups are reads.
   Built-in operators are registered on first use of the registry. */
#define DP__MAX_OPERATORS 256
#define DP__MAX_OP_ARRAYS DP_MAX_OP_ARRAYS
static dp_operator dp__operators[DP__MAX_OPERATORS];
static dp__a32 dp__num_operators;            /* published with release after the entry is copied */
static dp__spinlock dp__registry_lock;
static dp__a32 dp__builtins_state;           /* 0 not yet, 1 registering, 2 done */
static void dp__register_builtins(void);
static void dp__ensure_builtins(void) {
    int32_t expect = 0;
    dp__nd_items_once();        /* layers above log the array items from their start */
    if (dp__load(&dp__builtins_state, DP__ACQUIRE) == 2) return;
    if (dp__cas(&dp__builtins_state, &expect, 1, DP__ACQ_REL)) {
        dp__register_builtins();
        dp__store(&dp__builtins_state, 2, DP__RELEASE);
    } else while (dp__load(&dp__builtins_state, DP__ACQUIRE) != 2) dp__thread_yield();
}
static const dp_operator *dp__find_op(const char *name) {
    int i, n = dp__load(&dp__num_operators, DP__ACQUIRE);
    for (i = 0; name && i < n; i++) if (strcmp(dp__operators[i].name, name) == 0) return &dp__operators[i];
    return NULL;
}
static int dp__param_def_ok(const dp_param_def *d) {
    return d->name && d->name[0] && d->type >= DP_PARAM_INT && d->type <= DP_PARAM_ENUM && (d->type != DP_PARAM_ENUM || d->choices);
}
static dp_result dp__register(const dp_operator *op) {
    int i, has_num_args = 0, ok = op && op->name && op->name[0] && op->num_outputs >= -1 && op->num_outputs != 0
             && op->num_outputs <= DP__MAX_OP_ARRAYS && op->num_inputs >= -2 && op->num_inputs <= DP__MAX_OP_ARRAYS
             && op->num_params >= 0 && op->num_params <= DP_MAX_PARAMS && (op->params || !op->num_params)
             && (op->forward_cpu || op->forward_gpu);
    for (i = 0; ok && i < op->num_params; i++) {
        ok = dp__param_def_ok(&op->params[i]);
        has_num_args |= strcmp(op->params[i].name, "num_args") == 0 && op->params[i].type == DP_PARAM_INT;
    }
    if (ok && (op->num_inputs < 0 || op->num_outputs < 0) && !has_num_args) ok = 0;   /* counts from num_args need it */
    if (!ok) { DP__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_operator_register '%s': a name, 1..64 outputs (or -1), 0..64 inputs (or -1, -2 with an int "
                       "parameter num_args), <= %d valid parameters and a kernel are needed",
                       op && op->name ? op->name : "(null)", DP_MAX_PARAMS); return DP_ERROR_INVALID_ARGS; }
    dp__spin_lock(&dp__registry_lock);
    if (dp__find_op(op->name) || dp__load(&dp__num_operators, DP__RELAXED) == DP__MAX_OPERATORS) {
        dp__spin_unlock(&dp__registry_lock);
        DP__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_operator_register '%s': %s", op->name, dp__find_op(op->name) ? "registered already" : "the registry is full");
        return DP_ERROR_INVALID_ARGS;
    }
    dp__operators[dp__load(&dp__num_operators, DP__RELAXED)] = *op;
    dp__fetch_add(&dp__num_operators, 1, DP__RELEASE);     /* readers see the whole entry */
    dp__spin_unlock(&dp__registry_lock);
    return DP_OK;
}
DP_IMPL dp_result dp_operator_register(const dp_operator *op) { dp__ensure_builtins(); return dp__register(op); }
DP_IMPL const dp_operator *dp_operator_find(const char *name) { dp__ensure_builtins(); return dp__find_op(name); }
DP_IMPL dp_result dp_operator_set_kernel(const char *name, int dev_type, dp_kernel_fn kernel) {
    dp_operator *op;
    int ok;
    dp__ensure_builtins();
    dp__spin_lock(&dp__registry_lock);
    op = (dp_operator *)(uintptr_t)dp__find_op(name);
    ok = op && (dev_type == DP_DEV_CPU || dev_type == DP_DEV_GPU) && (kernel || (dev_type == DP_DEV_CPU ? op->forward_gpu : op->forward_cpu));
    if (ok) { if (dev_type == DP_DEV_CPU) op->forward_cpu = kernel; else op->forward_gpu = kernel; }
    dp__spin_unlock(&dp__registry_lock);
    if (!op) {
        DP__LOG(NULL, DP_LOG_ERROR, UNKNOWN_OPERATOR, "dp_operator_set_kernel '%s'", name ? name : "(null)");
        return DP_ERROR_INVALID_ARGS;
    }
    if (!ok) {
        DP__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_operator_set_kernel '%s': DP_DEV_CPU or DP_DEV_GPU, and a kernel "
                "(or another device kind's)", name);
        return DP_ERROR_INVALID_ARGS;
    }
    return DP_OK;
}
DP_IMPL int dp_operator_list(const dp_operator **out, int cap) {
    int i, n;
    dp__ensure_builtins();
    n = dp__load(&dp__num_operators, DP__ACQUIRE);
    for (i = 0; out && i < cap && i < n; i++) out[i] = &dp__operators[i];
    return n;
}

/* >>params: keyword parameters from strings ---------------------------------- */
static const char *dp__skip_space(const char *s) { while (*s == ' ' || *s == '\t') s++; return s; }
static int dp__parse_int(const char *s, int64_t *out) {
    char *end;
    long long v;
    s = dp__skip_space(s);
    if (!*s) return -1;
    v = strtoll(s, &end, 10);
    if (*dp__skip_space(end)) return -1;
    *out = (int64_t)v;
    return 0;
}
static int dp__parse_float(const char *s, double *out) {
    char *end;
    s = dp__skip_space(s);
    if (!*s) return -1;
    *out = strtod(s, &end);
    return *dp__skip_space(end) ? -1 : 0;
}
static int dp__parse_bool(const char *s, int64_t *out) {
    s = dp__skip_space(s);
    if (!strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "True")) { *out = 1; return 0; }
    if (!strcmp(s, "0") || !strcmp(s, "false") || !strcmp(s, "False")) { *out = 0; return 0; }
    return -1;
}
/* "(1, 2)", "[1,2]", "(3,)", "()" or a single int "5" */
static int dp__parse_shape(const char *s, dp_shape *out) {
    char close = 0;
    memset(out, 0, sizeof *out);
    s = dp__skip_space(s);
    if (*s == '(') close = ')'; else if (*s == '[') close = ']';
    if (close) s++;
    for (;;) {
        char *end;
        s = dp__skip_space(s);
        if (close && *s == close) { s++; break; }
        if (!close && !*s) break;
        if (out->ndim == DP_MAX_DIMS) return -1;
        out->dims[out->ndim++] = strtoll(s, &end, 10);
        if (end == s) return -1;
        s = dp__skip_space(end);
        if (*s == ',') s++;
        else if (close && *s != close) return -1;
        else if (!close && *s) return -1;
    }
    return *dp__skip_space(s) ? -1 : 0;
}
static int dp__parse_enum(const char *s, const char *choices, int64_t *out) {
    size_t n = strlen(s = dp__skip_space(s));
    int64_t k = 0;
    const char *c = choices;
    while (*c) {
        size_t len = strcspn(c, "|");
        if (len == n && strncmp(c, s, n) == 0) { *out = k; return 0; }
        c += len + (c[len] == '|');
        k++;
    }
    return -1;
}
static const char *dp__param_type_name(dp_param_type t) {
    static const char *names[] = {"?", "int", "float", "bool", "shape", "choice"};
    return names[(unsigned)t <= DP_PARAM_ENUM ? t : 0];
}
static int dp__param_in_range(const dp_param_def *d, const dp_param_value *v, char *why, size_t cap) {
    if ((d->type == DP_PARAM_INT || d->type == DP_PARAM_FLOAT) && d->min < d->max
        && (!(v->f >= d->min) || !(v->f <= d->max))) {
        snprintf(why, cap, "outside [%g, %g]", d->min, d->max);
        return -1;
    }
    return 0;
}
/* Parses one value; 0, or -1 with why filled. */
static int dp__parse_param(const dp_param_def *d, const char *s, dp_param_value *v, char *why, size_t cap) {
    int bad;
    memset(v, 0, sizeof *v);
    switch (d->type) {
    case DP_PARAM_INT: bad = dp__parse_int(s, &v->i); v->f = (double)v->i; break;
    case DP_PARAM_FLOAT: bad = dp__parse_float(s, &v->f); break;
    case DP_PARAM_BOOL: bad = dp__parse_bool(s, &v->i); break;
    case DP_PARAM_SHAPE: bad = dp__parse_shape(s, &v->shape); break;
    default: bad = dp__parse_enum(s, d->choices, &v->i); break;
    }
    if (bad) {
        if (d->type == DP_PARAM_ENUM) snprintf(why, cap, "not one of %s", d->choices);
        else snprintf(why, cap, "not a valid %s", dp__param_type_name(d->type));
        return -1;
    }
    return dp__param_in_range(d, v, why, cap);
}
/* One typed value (dp_param): the field of d's type, or the string in .s;
   a value in a field the type does not read is refused. 0, or -1 with why. */
static int dp__typed_param(const dp_param_def *d, const dp_param *t, dp_param_value *v, char *why, size_t cap) {
    int has_i = t->i != 0, has_f = t->f != 0, has_shape = t->shape.ndim != 0, ok;
    if (t->s) {
        if (has_i || has_f || has_shape) { snprintf(why, cap, "given both as a string (.s) and as a value"); return -1; }
        return dp__parse_param(d, t->s, v, why, cap);
    }
    memset(v, 0, sizeof *v);
    switch (d->type) {
    case DP_PARAM_INT:
        ok = !has_shape && (!has_f || (!has_i && t->f == floor(t->f) && fabs(t->f) < 9.2e18));
        v->i = has_f ? (int64_t)t->f : t->i; v->f = (double)v->i;
        break;
    case DP_PARAM_FLOAT: ok = !has_shape && !(has_i && has_f); v->f = has_f ? t->f : (double)t->i; break;
    case DP_PARAM_BOOL: ok = !has_shape && !has_f && (t->i == 0 || t->i == 1); v->i = t->i; break;
    case DP_PARAM_SHAPE:
        ok = !has_i && !has_f && t->shape.ndim >= 0 && t->shape.ndim <= DP_MAX_DIMS;
        if (ok) { v->shape.ndim = t->shape.ndim; memcpy(v->shape.dims, t->shape.dims, sizeof(int64_t) * (size_t)t->shape.ndim); }
        break;
    default: ok = 0; break;              /* ENUM: by name only, an index would go wrong silently */
    }
    if (!ok) {
        static const char *want[] = {"?", ".i (or an integral .f)", ".f (or .i)", ".i = 0 or 1", ".shape = {ndim, {dims}}", ".s, a choice's name"};
        snprintf(why, cap, "a %s: give %s, or a string in .s", dp__param_type_name(d->type), want[(unsigned)d->type <= DP_PARAM_ENUM ? d->type : 0]);
        return -1;
    }
    return dp__param_in_range(d, v, why, cap);
}
/* A parameter's value from its name, as a string (str) or typed (t, when
   str is NULL), into out->v; seen marks it. Logs and fails on an unknown,
   repeated or bad one. */
static dp_result dp__param_set(dp_engine *eng, const dp_operator *op, const char *key, const char *str, const dp_param *t,
                               dp_params *out, int *seen) {
    char why[128];
    int j;
    for (j = 0; j < op->num_params && (!key || strcmp(key, op->params[j].name) != 0); j++) {}
    if (j == op->num_params) {
        char list[256] = "";
        size_t len = 0;
        int m;
        for (m = 0; m < op->num_params && len < sizeof list; m++)
            len += (size_t)snprintf(list + len, sizeof list - len, m ? ", %s" : "%s", op->params[m].name);
        DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "operator '%s': unknown parameter '%s' (it takes: %s)", op->name,
                key ? key : "(null)", op->num_params ? list : "no parameters");
        return DP_ERROR_INVALID_ARGS;
    }
    if (seen[j]) { DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "operator '%s': parameter '%s' given twice", op->name, key); return DP_ERROR_INVALID_ARGS; }
    if (!t) {
        if (!str || dp__parse_param(&op->params[j], str, &out->v[j], why, sizeof why)) {
            DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "operator '%s': parameter '%s' = '%s' is %s", op->name, key,
                    str ? str : "(null)", str ? why : "missing");
            return DP_ERROR_INVALID_ARGS;
        }
    } else if (dp__typed_param(&op->params[j], t, &out->v[j], why, sizeof why)) {
        DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "operator '%s': parameter '%s'%s%s%s is %s", op->name, key,
                t->s ? " = '" : "", t->s ? t->s : "", t->s ? "'" : "", why);
        return DP_ERROR_INVALID_ARGS;
    }
    seen[j] = 1;
    return DP_OK;
}
/* The parameters not given: their defaults, or an error for a required one. */
static dp_result dp__params_defaults(dp_engine *eng, const dp_operator *op, dp_params *out, const int *seen) {
    char why[128];
    int j;
    for (j = 0; j < op->num_params; j++) {
        if (seen[j]) continue;
        if (!op->params[j].default_value) {
            DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "operator '%s': parameter '%s' (%s) is required", op->name, op->params[j].name,
                    dp__param_type_name(op->params[j].type));
            return DP_ERROR_INVALID_ARGS;
        }
        if (dp__parse_param(&op->params[j], op->params[j].default_value, &out->v[j], why, sizeof why)) {
            DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "operator '%s': the default of '%s' is %s", op->name, op->params[j].name, why);
            return DP_ERROR_INVALID_ARGS;
        }
    }
    return DP_OK;
}
/* dp_invoke_desc's parameters: those before the first without a name. */
static dp_result dp__params_from_desc(dp_engine *eng, const dp_operator *op, const dp_param *ps, dp_params *out) {
    int seen[DP_MAX_PARAMS] = {0}, i;
    dp_result r;
    memset(out, 0, sizeof *out);
    out->count = op->num_params;
    for (i = 0; i < DP_MAX_PARAMS && ps[i].name; i++)
        if ((r = dp__param_set(eng, op, ps[i].name, NULL, &ps[i], out, seen)) != DP_OK) return r;
    return dp__params_defaults(eng, op, out, seen);
}

/* >>invoke --------------------------------------------------------------------
   Everything is checked first; the one pushed operation holds references to
   its arrays and frees its argument whatever happens (NO_SKIP; on failed
   input it passes the failure on).
   Aliasing: a kernel reads its inputs while it writes its outputs and the
   inputs it mutates, so what it writes must not overlap what it reads, or
   it would read values it has already overwritten. An output that shares
   bytes with an input (the same array, or views of one storage that
   overlap), and a mutated input (dp_operator.mutate_inputs) that shares
   bytes with another input, get a temporary of their own: the kernel sees
   the temporary in its place, and the op copies it over the real array
   afterwards (copying the real array in first when the kernel reads it: a
   mutated input, an output whose request adds). The kernel thus reads
   every input as it was, as NumPy's out= does. The one overlap kept is the
   element-wise in place the operator declares (dp_operator.inplace bit i:
   output 0 exactly over input i, same dtype and shape); nothing declares a
   mutated input's alias safe, so any overlap of one, the exact one too,
   goes through a temporary. What the kernel writes must not overlap
   itself: two outputs, an output and a mutated input, or two mutated
   inputs that share bytes are refused. Without overlap nothing is
   allocated. */
typedef struct dp__invoke_arg {
    const dp_operator *op;
    dp_kernel_fn kernel;
    dp_params params;
    double scalar;
    int nin, nout;
    dp_ndarray *arrays[2 * DP__MAX_OP_ARRAYS];   /* inputs, then outputs */
    dp_ndarray *temps[2 * DP__MAX_OP_ARRAYS];    /* per array: where the kernel reads and writes instead, or NULL */
    dp_req req[DP__MAX_OP_ARRAYS];
} dp__invoke_arg;
/* A finished invocation's record goes back to a list of the engine's (up
   to DP__INVOKE_KEEP), not to the allocator, and the next invocation takes
   it: a warm loop of invocations (an optimizer's updates each step)
   allocates nothing. */
#define DP__INVOKE_KEEP 64
static dp__invoke_arg *dp__invoke_arg_new(dp_engine *eng) {
    dp__nd_state *s = dp__nd_state_of(eng);
    void *a = NULL;
    if (s) {
        dp__spin_lock(&s->invoke_lock);
        if ((a = s->invokes) != NULL) { memcpy(&s->invokes, a, sizeof(void *)); s->num_invokes--; }
        dp__spin_unlock(&s->invoke_lock);
    }
    return (dp__invoke_arg *)(a ? a : dp__alloc(eng, sizeof(dp__invoke_arg)));
}
static void dp__invoke_records_free(dp_engine *eng, dp__nd_state *s) {
    while (s->invokes) {
        void *a = s->invokes;
        memcpy(&s->invokes, a, sizeof(void *));
        dp__free(eng, a, sizeof(dp__invoke_arg));
    }
}
static void dp__invoke_arg_free(dp_engine *eng, dp__invoke_arg *a) {
    dp__nd_state *s = dp__nd_state_of(eng);
    int i, kept = 0;
    for (i = 0; i < a->nin + a->nout; i++) { dp_nd_release(a->arrays[i]); dp_nd_release(a->temps[i]); }
    if (s) {
        dp__spin_lock(&s->invoke_lock);
        if ((kept = s->num_invokes < DP__INVOKE_KEEP) != 0) { memcpy((void *)a, &s->invokes, sizeof(void *)); s->invokes = a; s->num_invokes++; }
        dp__spin_unlock(&s->invoke_lock);
    }
    if (!kept) dp__free(eng, a, sizeof *a);
}
/* Copies between the arrays and their temporaries (to_temp: the array
   into its temporary, where the kernel reads it: a mutated input, an
   output it adds to). */
static int dp__invoke_temps_copy(dp_run_ctx *rc, dp__invoke_arg *a, int to_temp) {
    int i, status = 0;
    for (i = 0; i < a->nin + a->nout && !status; i++) {
        dp_ndarray *x = a->arrays[i], *tmp = a->temps[i];
        dp_req req = i < a->nin ? DP_REQ_ADD : a->req[i - a->nin];
        if (!tmp || req == DP_REQ_NULL || (to_temp && req != DP_REQ_ADD)) continue;
        status = dp__copy_bytes(rc->engine, dp_nd_data(to_temp ? tmp : x), dp_nd_data(to_temp ? x : tmp), dp_nd_bytes(x),
                                x->chunk->ctx.dev_type == DP_DEV_GPU ? 2 : -1, x->chunk->ctx.dev_id, rc->stream);
        if (status) dp_set_error(rc, dp__backend_error(rc->engine, status));
    }
    return status;
}
static int dp__invoke_op(dp_run_ctx *rc, void *arg) {
    dp__invoke_arg *a = (dp__invoke_arg *)arg;
    int status = rc->input_status, i;
    if (!status) {
        dp_kernel_ctx k;
        dp_ndarray *seen[2 * DP__MAX_OP_ARRAYS];    /* the arrays as the kernel sees them */
        for (i = 0; i < a->nin + a->nout; i++) seen[i] = a->temps[i] ? a->temps[i] : a->arrays[i];
        k.rc = rc; k.params = &a->params; k.scalar = a->scalar;
        k.num_inputs = a->nin; k.num_outputs = a->nout;
        k.inputs = seen; k.outputs = seen + a->nin; k.req = a->req;
        status = dp__invoke_temps_copy(rc, a, 1);
        if (!status) status = a->kernel(&k);
        if (!status) status = dp__invoke_temps_copy(rc, a, 0);
    }
    dp__invoke_arg_free(rc->engine, a);
    return status;
}
/* Whether a's and b's bytes overlap: the same storage, intersecting ranges. */
static int dp__nd_overlap(const dp_ndarray *a, const dp_ndarray *b) {
    return a->chunk == b->chunk && dp_nd_bytes(a) && dp_nd_bytes(b)
        && a->offset < b->offset + dp_nd_bytes(b) && b->offset < a->offset + dp_nd_bytes(a);
}
/* Whether x, which the kernel writes (array j of the invocation: input j
   it mutates when j < nin, else output j - nin), must be a temporary: it
   overlaps an input other than itself, and not as the exact in place
   the operator allows for output 0. */
static int dp__needs_temp(const dp_operator *op, int nin, dp_ndarray *const *in, int j, const dp_ndarray *x) {
    int i;
    for (i = 0; i < nin; i++) {
        const dp_ndarray *y = in[i];
        int exact = y->chunk == x->chunk && y->offset == x->offset && y->dtype == x->dtype && y->shape.ndim == x->shape.ndim
                    && memcmp(y->shape.dims, x->shape.dims, sizeof(int64_t) * (size_t)y->shape.ndim) == 0;
        if (i != j && dp__nd_overlap(y, x) && !(j == nin && i < 32 && (op->inplace & (1u << i)) && exact)) return 1;
    }
    return 0;
}
static int dp__same_ctx(dp_ctx a, dp_ctx b) { return a.dev_type == b.dev_type && a.dev_id == b.dev_id; }
/* An operator's input or output count: as registered, or from num_args
   (-1: num_args, -2: num_args + 1). */
static int dp__arity(const dp_operator *op, const dp_params *p, int declared) {
    int i;
    if (declared >= 0) return declared;
    for (i = 0; i < op->num_params && strcmp(op->params[i].name, "num_args") != 0; i++) {}
    if (i == op->num_params || p->v[i].i < 0 || p->v[i].i > DP__MAX_OP_ARRAYS) return -1;   /* no huge counts through int */
    return (int)p->v[i].i + (declared == -2);
}
/* Input count, kernel and output shapes, checked; logs what is wrong. */
static dp_result dp__invoke_check(dp_engine *eng, const dp_operator *op, const dp_params *p, int nin, dp_ndarray *const *in,
                                  dp_ctx ctx, int nout, dp_shape *oshape, dp_dtype *odtype, dp_kernel_fn *kernel) {
    dp_shape ishape[DP__MAX_OP_ARRAYS];
    dp_dtype idtype[DP__MAX_OP_ARRAYS];
    char msg[256], sb[160];
    int want = dp__arity(op, p, op->num_inputs), want_out = dp__arity(op, p, op->num_outputs), i;
    if (nin > 0 && !in) {
        DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "operator '%s': the input list is NULL (%d inputs given)", op->name, nin);
        return DP_ERROR_INVALID_ARGS;
    }
    if (want < 0 || want_out < 0) {           /* an operator registered without a range for num_args */
        DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "operator '%s': num_args must be in 0..%d", op->name, DP__MAX_OP_ARRAYS);
        return DP_ERROR_INVALID_ARGS;
    }
    if (nin != want) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': %d inputs given, it takes %d", op->name, nin, want);
        return DP_ERROR_INVALID_ARGS;
    }
    if (nout != want_out) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': %d outputs given, it makes %d", op->name, nout, want_out);
        return DP_ERROR_INVALID_ARGS;
    }
    for (i = 0; i < nin; i++) {
        if (!in[i] || dp_nd_engine(in[i]) != eng) {
            DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': input %d is %s", op->name, i, in[i] ? "an array of another engine" : "NULL");
            return DP_ERROR_INVALID_ARGS;
        }
        if (i && !dp__same_ctx(dp_nd_ctx(in[i]), dp_nd_ctx(in[0]))) {
            DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': input %d is on another device than input 0", op->name, i);
            return DP_ERROR_INVALID_ARGS;
        }
        ishape[i] = *dp_nd_shape(in[i]);
        idtype[i] = dp_nd_dtype(in[i]);
    }
    *kernel = ctx.dev_type == DP_DEV_GPU ? op->forward_gpu : op->forward_cpu;
    if (!*kernel) {
        DP__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "operator '%s' has no kernel for %s", op->name,
                ctx.dev_type == DP_DEV_GPU ? "GPUs (include depeng_cuda.h)" : "the CPU");
        return DP_ERROR_BAD_CONTEXT;
    }
    msg[0] = 0;
    if (op->infer) {
        if (op->infer(p, nin, ishape, idtype, nout, oshape, odtype, msg, sizeof msg)) {
            DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': %s", op->name, msg[0] ? msg : "input shapes or dtypes do not fit");
            return DP_ERROR_INVALID_ARGS;
        }
    } else {
        if (!nin) { DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': no inputs and no shape inference", op->name); return DP_ERROR_INVALID_ARGS; }
        for (i = 0; i < nout; i++) { oshape[i] = ishape[0]; odtype[i] = idtype[0]; }
    }
    for (i = 0; i < nout; i++) {
        if (dp_shape_size(&oshape[i]) < 0 || !dp_dtype_size(odtype[i])) {
            DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': inferred output %d shape %s is invalid", op->name, i, dp__shape_str(&oshape[i], sb, sizeof sb));
            return DP_ERROR_INVALID_ARGS;
        }
    }
    return DP_OK;
}
/* A given output must match what inference says. */
static dp_result dp__check_output(dp_engine *eng, const dp_operator *op, int i, dp_ndarray *out, const dp_shape *s, dp_dtype dt, dp_ctx ctx) {
    char s1[160], s2[160];
    const dp_shape *have = dp_nd_shape(out);
    int same = dp_nd_engine(out) == eng && have->ndim == s->ndim && dp_nd_dtype(out) == dt
               && dp__same_ctx(dp_nd_ctx(out), ctx) && memcmp(have->dims, s->dims, sizeof(int64_t) * (size_t)s->ndim) == 0;
    if (same) return DP_OK;
    if (dp_nd_engine(out) != eng) DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': output %d is an array of another engine", op->name, i);
    else if (!dp__same_ctx(dp_nd_ctx(out), ctx))
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': output %d is on %s %d, the operation runs on %s %d", op->name, i,
                dp_nd_ctx(out).dev_type == DP_DEV_GPU ? "GPU" : "CPU", dp_nd_ctx(out).dev_id, ctx.dev_type == DP_DEV_GPU ? "GPU" : "CPU", ctx.dev_id);
    else DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': output %d is %s %s, it must be %s %s", op->name, i,
                 dp_dtype_name(dp_nd_dtype(out)), dp__shape_str(have, s1, sizeof s1), dp_dtype_name(dt), dp__shape_str(s, s2, sizeof s2));
    return DP_ERROR_INVALID_ARGS;
}
/* The tracker's side of an invocation (dp_set_tracker; autograd is one):
   whether to record it, asked before anything is made or pushed, the
   record made once the outputs exist, and the news after the push. */
static dp_result dp__track_check(dp_engine *eng, const dp_operator *op, const dp_params *params, int nin, dp_ndarray *const *inputs,
                                 double scalar, int nout, dp_ndarray *const *outputs, dp_invocation *inv, int *record) {
    inv->eng = eng; inv->op = op; inv->params = params; inv->scalar = scalar;
    inv->num_inputs = nin; inv->inputs = inputs; inv->num_outputs = nout; inv->outputs = outputs;
    *record = 0;
    return dp__tracker.check ? dp__tracker.check(inv, record) : DP_OK;
}

/* The invocation after lookup and parsing: checks, asks the tracker,
   makes missing outputs, pushes. */
static dp_result dp__invoke(dp_engine *eng, const dp_operator *op, const dp_params *params, int nin, dp_ndarray *const *inputs,
                            double scalar, int nout, dp_ndarray **outputs, const dp_req *req) {
    dp_shape oshape[DP__MAX_OP_ARRAYS];
    dp_dtype odtype[DP__MAX_OP_ARRAYS];
    dp_kernel_fn kernel;
    dp__invoke_arg *a;
    void *node = NULL;
    dp_invocation inv;
    int record;
    dp_var reads[DP__MAX_OP_ARRAYS], writes[2 * 32 + 2 * DP__MAX_OP_ARRAYS + 2];   /* mutated inputs and their temporaries,
                                                                                 outputs and theirs, two resources */
    dp_push_desc d;
    dp_ctx ctx = {DP_DEV_CPU, 0};
    int i, made[DP__MAX_OP_ARRAYS] = {0}, nw;
    dp_result r;
    if (!outputs) { DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "operator '%s': the output list is NULL", op->name); return DP_ERROR_INVALID_ARGS; }
    if (nout < 1 || nout > DP__MAX_OP_ARRAYS) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': %d outputs given, 1..%d are allowed", op->name, nout, DP__MAX_OP_ARRAYS);
        return DP_ERROR_INVALID_ARGS;
    }
    if (nin && inputs && inputs[0]) ctx = dp_nd_ctx(inputs[0]);
    else if (!nin && outputs[0]) ctx = dp_nd_ctx(outputs[0]);   /* no inputs: the given output's device */
    if ((r = dp__invoke_check(eng, op, params, nin, inputs, ctx, nout, oshape, odtype, &kernel)) != DP_OK) return r;
    for (i = 0; i < nout; i++) {
        int j;
        if (outputs[i] && (r = dp__check_output(eng, op, i, outputs[i], &oshape[i], odtype[i], ctx)) != DP_OK) return r;
        for (j = 0; outputs[i] && j < i; j++)
            if (outputs[j] && dp__nd_overlap(outputs[i], outputs[j])) {
                DP__LOG(eng, DP_LOG_ERROR, ND_OVERLAP, "operator '%s': outputs %d and %d share bytes", op->name, j, i);
                return DP_ERROR_INVALID_ARGS;
            }
        for (j = 0; outputs[i] && j < nin && j < 32; j++)    /* the kernel writes both: one would overwrite the other */
            if ((op->mutate_inputs & (1u << j)) && dp__nd_overlap(outputs[i], inputs[j])) {
                DP__LOG(eng, DP_LOG_ERROR, ND_OVERLAP, "operator '%s': output %d shares bytes with input %d, which it updates in place too",
                        op->name, i, j);
                return DP_ERROR_INVALID_ARGS;
            }
    }
    for (i = 0; i < nin && i < 32; i++) {
        int j;
        for (j = i + 1; (op->mutate_inputs & (1u << i)) && j < nin && j < 32; j++)
            if ((op->mutate_inputs & (1u << j)) && dp__nd_overlap(inputs[i], inputs[j])) {
                DP__LOG(eng, DP_LOG_ERROR, ND_OVERLAP, "operator '%s': inputs %d and %d share bytes, and it updates both in place", op->name, i, j);
                return DP_ERROR_INVALID_ARGS;
            }
    }
    if ((r = dp__track_check(eng, op, params, nin, inputs, scalar, nout, outputs, &inv, &record)) != DP_OK) return r;
    if ((a = dp__invoke_arg_new(eng)) == NULL) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "operator '%s': the invocation", op->name);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    memset(a, 0, sizeof *a);
    a->params = *params;
    for (i = 0; i < nin && i < 32; i++)       /* nothing can fail for bad input from here on */
        if ((op->mutate_inputs & (1u << i)) && dp__needs_temp(op, nin, inputs, i, inputs[i])
            && (r = dp_nd_empty(eng, dp_nd_shape(inputs[i]), dp_nd_dtype(inputs[i]), ctx, &a->temps[i])) != DP_OK) goto undo;
    for (i = 0; i < nout; i++) {
        if (outputs[i]) {
            if (dp__needs_temp(op, nin, inputs, nin + i, outputs[i])
                && (r = dp_nd_empty(eng, &oshape[i], odtype[i], ctx, &a->temps[nin + i])) != DP_OK) goto undo;
            continue;
        }
        if ((r = dp_nd_empty(eng, &oshape[i], odtype[i], ctx, &outputs[i])) != DP_OK) goto undo;
        made[i] = 1;
    }
    a->op = op; a->kernel = kernel; a->scalar = scalar; a->nin = nin; a->nout = nout;
    nw = 0;
    for (i = 0; i < nin; i++) {
        a->arrays[i] = dp_nd_retain(inputs[i]);
        reads[i] = dp_nd_var(inputs[i]);
        if (i < 32 && (op->mutate_inputs & (1u << i))) { writes[nw++] = reads[i]; dp__chunk_bump(inputs[i]->chunk); }
        if (a->temps[i]) writes[nw++] = dp_nd_var(a->temps[i]);
    }
    for (i = 0; i < nout; i++) {
        a->arrays[nin + i] = dp_nd_retain(outputs[i]);
        writes[nw++] = dp_nd_var(outputs[i]);
        if (a->temps[nin + i]) writes[nw++] = dp_nd_var(a->temps[nin + i]);
        dp__chunk_bump(outputs[i]->chunk);
        a->req[i] = req ? req[i] : DP_REQ_WRITE;
    }
    if (op->resources & (DP_RESOURCE_RANDOM | DP_RESOURCE_TEMP)) {
        dp__resources *res;
        if ((r = dp__resources_get(eng, ctx, op->name, &res)) != DP_OK) goto undo_arg;
        if (op->resources & DP_RESOURCE_RANDOM) writes[nw++] = res->rng_var;
        if (op->resources & DP_RESOURCE_TEMP) writes[nw++] = res->temp_var;
    }
    if (record && (node = dp__tracker.record(&inv)) == NULL) { r = DP_ERROR_OUT_OF_MEMORY; goto undo_arg; }
    memset(&d, 0, sizeof d);
    d.fn = dp__invoke_op; d.arg = a; d.reads = reads; d.num_reads = nin; d.writes = writes; d.num_writes = nw;
    d.ctx = ctx; d.prop = DP_PROP_NO_SKIP; d.name = op->name;
    if ((r = dp_push(eng, &d)) != DP_OK) goto undo_arg;
    if (dp__tracker.pushed) dp__tracker.pushed(&inv, node);
    return DP_OK;
undo_arg:                                   /* nothing was written: the versions go back */
    if (node) dp__tracker.discard(node);
    for (i = 0; i < nin; i++) if (i < 32 && (op->mutate_inputs & (1u << i))) dp__fetch_add(&inputs[i]->chunk->version, -1, DP__RELAXED);
    for (i = 0; i < nout; i++) dp__fetch_add(&outputs[i]->chunk->version, -1, DP__RELAXED);
    for (i = 0; i < a->nin + a->nout; i++) dp_nd_release(a->arrays[i]);
undo:
    for (i = 0; i < nout; i++) if (made[i]) { dp_nd_release(outputs[i]); outputs[i] = NULL; }
    for (i = 0; i < nin + nout; i++) dp_nd_release(a->temps[i]);
    dp__free(eng, a, sizeof *a);
    return r;
}
static const dp_operator *dp__find_or_log(dp_engine *eng, const char *name) {
    const dp_operator *op = dp_operator_find(name);
    if (!op) DP__LOG(eng, DP_LOG_ERROR, UNKNOWN_OPERATOR, "'%s'", name ? name : "(null)");
    return op;
}
/* A desc's count: as given, or the arrays before the first NULL. */
static int dp__desc_count(int given, dp_ndarray *const *a) {
    int n = 0;
    if (given) return given;
    while (n < DP_MAX_OP_ARRAYS && a[n]) n++;
    return n;
}
DP_IMPL dp_result dp_invoke(dp_engine *eng, const dp_invoke_desc *desc, dp_ndarray **out) {
    const dp_operator *op;
    dp_params params;
    dp_ndarray *outputs[DP_MAX_OP_ARRAYS];
    dp_req req[DP_MAX_OP_ARRAYS];
    int nin, nout, i;
    dp_result r;
    if (!eng || !desc) { DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "dp_invoke: NULL %s", eng ? "desc" : "engine"); return DP_ERROR_INVALID_ARGS; }
    if ((op = dp__find_or_log(eng, desc->op)) == NULL) return DP_ERROR_INVALID_ARGS;
    if ((r = dp__params_from_desc(eng, op, desc->params, &params)) != DP_OK) return r;
    if (dp__tracker.training) {            /* "is_train" not given: the thread's training mode (see dp_tracker) */
        for (i = 0; i < op->num_params && strcmp(op->params[i].name, "is_train"); i++) {}
        for (nin = 0; i < op->num_params && nin < DP_MAX_PARAMS && desc->params[nin].name && strcmp(desc->params[nin].name, "is_train"); nin++) {}
        if (i < op->num_params && op->params[i].type == DP_PARAM_BOOL && (nin == DP_MAX_PARAMS || !desc->params[nin].name))
            params.v[i].i = dp__tracker.training() != 0;
    }
    if (desc->scalar != 0 && !op->takes_scalar) {
        DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "operator '%s' takes no scalar (scalar = %g given; the \"_scalar\" operators do)", op->name, desc->scalar);
        return DP_ERROR_INVALID_ARGS;
    }
    nin = dp__desc_count(desc->num_inputs, desc->inputs);
    nout = desc->num_outputs ? desc->num_outputs : dp__arity(op, &params, op->num_outputs);
    if (!desc->num_outputs && nout < 0) {     /* an operator registered without a range for num_args */
        DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "operator '%s': num_args must be in 0..%d", op->name, DP_MAX_OP_ARRAYS);
        return DP_ERROR_INVALID_ARGS;
    }
    if (nin < 0 || nin > DP_MAX_OP_ARRAYS || nout < 1 || nout > DP_MAX_OP_ARRAYS) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': %d inputs and %d outputs: each count must be in 0..%d (outputs from 1)",
                op->name, nin, nout, DP_MAX_OP_ARRAYS);
        return DP_ERROR_INVALID_ARGS;
    }
    for (i = 0; i < nout; i++) {
        outputs[i] = desc->outputs[i];
        req[i] = desc->req[i] == DP_REQ_NULL ? DP_REQ_WRITE : desc->req[i];
        if (!outputs[i] && !out) {
            DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': output %d is to be made, but out (where it would go) is NULL", op->name, i);
            return DP_ERROR_INVALID_ARGS;
        }
    }
    if ((r = dp__invoke(eng, op, &params, nin, desc->inputs, desc->scalar, nout, outputs, req)) != DP_OK) return r;
    for (i = 0; out && i < nout; i++) out[i] = desc->outputs[i] ? NULL : outputs[i];
    return DP_OK;
}

/* >>extending: the calls a library built on depeng.h uses (see EXTENDING) -- */
static dp_result dp__register_differentiable(dp_operator *op, const char *grad_name, const char *grad_doc, dp_kernel_fn grad_kernel,
                                             unsigned grad_inplace);
DP_IMPL double dp_dtype_load(dp_dtype t, const void *data, int64_t i) { return dp__load_elem(data, t, i); }
DP_IMPL void dp_dtype_store(dp_dtype t, void *data, int64_t i, double v, dp_req req) { dp__store_elem(data, t, i, v, req); }
DP_IMPL const char *dp_shape_format(const dp_shape *s, char *buf, size_t cap) { return dp__shape_str(s, buf, cap); }
DP_IMPL dp_result dp_nd_view(dp_ndarray *a, const dp_shape *shape, dp_dtype dtype, size_t byte_offset, dp_ndarray **out) {
    int64_t n = shape ? dp_shape_size(shape) : -1;
    dp_result r;
    if (out) *out = NULL;
    if (!a || !shape || !out || n < 0 || !dp_dtype_size(dtype)
        || byte_offset > dp_nd_bytes(a) || (uint64_t)n > (dp_nd_bytes(a) - byte_offset) / dp_dtype_size(dtype)
        || (a->offset + byte_offset) % dp_dtype_size(dtype) != 0) {
        DP__LOG(a ? a->chunk->eng : NULL, DP_LOG_ERROR, ND_ARGS, "dp_nd_view: NULL array, shape or out, an unknown dtype, or a view past "
                "the storage's end or not aligned to its dtype");
        return DP_ERROR_INVALID_ARGS;
    }
    if ((r = dp__nd_view(a, shape, a->offset + byte_offset, out)) == DP_OK) (*out)->dtype = dtype;
    return r;
}
DP_IMPL dp_result dp_nd_borrow(dp_ndarray *a, size_t byte_offset, size_t bytes, dp_ndarray **out) {
    if (out) *out = NULL;
    if (!a || !out || byte_offset > dp_nd_bytes(a) || bytes > dp_nd_bytes(a) - byte_offset
        || (uint64_t)bytes > (uint64_t)INT64_MAX) {
        DP__LOG(a ? a->chunk->eng : NULL, DP_LOG_ERROR, ND_ARGS, "dp_nd_borrow: NULL array or out, or bytes [%zu, %zu + %zu) past the storage's end",
                byte_offset, byte_offset, bytes);
        return DP_ERROR_INVALID_ARGS;
    }
    return dp__nd_borrow(a, byte_offset, bytes, out);
}
DP_IMPL int dp_nd_same_storage(const dp_ndarray *a, const dp_ndarray *b) { return a && b && a->chunk == b->chunk; }
DP_IMPL int32_t dp_nd_version(const dp_ndarray *a) { return a ? (int32_t)dp__load(&a->chunk->version, DP__RELAXED) : 0; }
DP_IMPL dp_result dp_nd_check_ctx(dp_engine *eng, dp_ctx *ctx, const char *what) {
    if (!ctx) return DP_ERROR_INVALID_ARGS;
    return dp__storage_ctx(eng, ctx, what ? what : "dp_nd_check_ctx");
}
DP_IMPL int dp_operator_arity(const dp_operator *op, const dp_params *params, int declared) {
    return op && params ? dp__arity(op, params, declared) : -1;
}
DP_IMPL dp_result dp_operator_parse_params(dp_engine *eng, const dp_operator *op, const dp_param *params, dp_params *out) {
    static const dp_param none = {NULL, 0, 0.0, NULL, {0, {0}}};
    if (!op || !out) { DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "dp_operator_parse_params: NULL operator or out"); return DP_ERROR_INVALID_ARGS; }
    return dp__params_from_desc(eng, op, params ? params : &none, out);
}
DP_IMPL dp_result dp_operator_set_param(dp_engine *eng, const dp_operator *op, const dp_param *param, dp_params *params) {
    int seen[DP_MAX_PARAMS] = {0};
    dp_params p;
    dp_result r;
    if (!op || !param || !params) { DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "dp_operator_set_param: NULL operator, parameter or params"); return DP_ERROR_INVALID_ARGS; }
    p = *params;                           /* a failed set leaves them as they were */
    if ((r = dp__param_set(eng, op, param->name, NULL, param, &p, seen)) == DP_OK) *params = p;
    return r;
}
DP_IMPL dp_result dp_operator_register_with_gradient(dp_operator *op, const char *grad_name, const char *grad_doc,
                                                    dp_kernel_fn grad_kernel, unsigned grad_inplace) {
    dp__ensure_builtins();
    if (!op || !grad_name || !grad_kernel) { DP__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_operator_register_with_gradient: NULL operator, gradient name or kernel"); return DP_ERROR_INVALID_ARGS; }
    return dp__register_differentiable(op, grad_name, grad_doc, grad_kernel, grad_inplace);
}
DP_IMPL dp_result dp_invoke_parsed(dp_engine *eng, const dp_operator *op, const dp_params *params, int num_inputs,
                                  dp_ndarray *const *inputs, double scalar, int num_outputs, dp_ndarray **outputs,
                                  const dp_req *req) {
    if (!eng || !op || !params) {
        DP__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "dp_invoke_parsed: NULL %s", !eng ? "engine" : !op ? "operator" : "params");
        return DP_ERROR_INVALID_ARGS;
    }
    if (params->count != op->num_params) {
        DP__LOG(eng, DP_LOG_ERROR, ND_PARAM, "dp_invoke_parsed: params hold %d values, operator '%s' has %d parameters: parse them for it "
                "(dp_operator_parse_params)", params->count, op->name, op->num_params);
        return DP_ERROR_INVALID_ARGS;
    }
    if (num_inputs < 0 || num_inputs > DP_MAX_OP_ARRAYS) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': %d inputs given, 0..%d are allowed", op->name, num_inputs, DP_MAX_OP_ARRAYS);
        return DP_ERROR_INVALID_ARGS;
    }
    return dp__invoke(eng, op, params, num_inputs, inputs, scalar, num_outputs, outputs, req);
}
DP_IMPL dp_result dp_set_tracker(const dp_tracker *t) {
    if (t && (!t->check || !t->record || !t->pushed || !t->discard || !t->tag_released || !t->written)) {
        DP__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_set_tracker: every function of the tracker is needed");
        return DP_ERROR_INVALID_ARGS;
    }
    if (t && dp__tracker.check && memcmp(t, &dp__tracker, sizeof *t) != 0) {
        DP__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_set_tracker: another tracker is installed (one per process)");
        return DP_ERROR_INVALID_ARGS;
    }
    if (t) dp__tracker = *t;
    else memset(&dp__tracker, 0, sizeof dp__tracker);
    return DP_OK;
}
DP_IMPL void *dp_nd_tag(const dp_ndarray *a, int *index) {
    if (index) *index = a ? a->tag_index : 0;
    return a ? a->tag : NULL;
}
DP_IMPL void dp_nd_set_tag(dp_ndarray *a, void *tag, int index) {
    if (a) { a->tag = tag; a->tag_index = index; }
}

/* x86 with gcc or clang: the GEMM micro-kernels, the updates and the
   float32 activations have AVX2 versions, picked when run (functions
   compiled for that target only, so the rest of the program needs no
   -mavx2); DEPENG_NO_SIMD turns them off. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(__CUDACC__) && !defined(DEPENG_NO_SIMD)
#  define DP__GEMM_X86 1
#  include <immintrin.h>
#  define DP__TARGET_AVX2 __attribute__((target("avx2,fma")))
/* Whether this CPU runs the AVX2 kernels (gcc's and clang's CPU check). */
static int dp__cpu_avx2_fma(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif
/* gcc's -O2 vectorises only loops that need no run-time alias check; the
   update loops ask for the full cost model (and errno off, so sqrt may
   vectorise where gcc allows it). Not for loops that call the DP__HD
   element functions: gcc inlines nothing into a function whose optimize
   options differ (the math is spelled as macros for them). noinline: gcc
   does inline such a function into its caller, where its options no
   longer apply (relu's loop ran scalar, a branch per element, that way);
   no-trapping-math lets it turn selects on compares into blends. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__INTEL_COMPILER)
#  define DP__VEC_LOOPS __attribute__((noinline, optimize("tree-loop-vectorize", "vect-cost-model=dynamic", "no-math-errno", "no-trapping-math")))
#else
#  define DP__VEC_LOOPS
#endif
/* Element-wise kernels split their work over the engine's range loop from
   this many elements on (below it one core is faster than waking helpers),
   in chunks of DP__PAR_GRAIN, fixed by n alone: each element is computed
   the same way in any chunk, so results are bitwise the same at any worker
   count. */
#define DP__PAR_MIN (1 << 17)
#define DP__PAR_GRAIN (1 << 15)
/* Runs fn over [0, n) on k's engine's range loop when n is large enough and
   k runs on an engine, else on the calling thread. */
static void dp__kernel_range(const dp_kernel_ctx *k, int64_t n, dp_range_fn fn, void *user) {
    dp_engine *eng = k->rc ? k->rc->engine : NULL;
    if (n >= DP__PAR_MIN && eng) {
        dp_range_desc d;
        d.n = n; d.grain = DP__PAR_GRAIN; d.fn = fn; d.user = user; d.deterministic = 1;
        if (dp_parallel_for(eng, &d) == DP_OK) return;
    }
    if (n > 0) fn(0, n, user);
}
/* The same for rows of len elements each: split when rows len is large
   enough, about DP__PAR_GRAIN elements a chunk. */
static void dp__kernel_rows(const dp_kernel_ctx *k, int64_t rows, int64_t len, dp_range_fn fn, void *user) {
    dp_engine *eng = k->rc ? k->rc->engine : NULL;
    if ((double)rows * (double)len >= DP__PAR_MIN && rows > 1 && eng) {
        dp_range_desc d;
        d.n = rows; d.grain = len > 0 ? (DP__PAR_GRAIN + len - 1) / len : rows; d.fn = fn; d.user = user; d.deterministic = 1;
        if (dp_parallel_for(eng, &d) == DP_OK) return;
    }
    if (rows > 0) fn(0, rows, user);
}
/* >>builtin operators -----------------------------------------------------------
   The element-wise math is one line per operator, in functions that nvcc
   also compiles for the device (DP__HD), so the CPU tests check the formulas
   a GPU runs. Kernels compute in double and store in the output's dtype,
   except on integer arrays, where the operators that have an integer form
   (dp__i_*) compute in int64 and wrap around. NaN propagates as in NumPy:
   maximum and minimum return the NaN whichever side it is on, sign and
   relu of NaN are NaN. */
/* Spelled as macros too (DP__E1_<name>), for the host's loops (see
   DP__E_ below), which expand them; the functions serve the GPU kernels
   (depeng_cuda.h) and may go unused on the host (DP__PRIVATE). NaN
   passes relu; the selects compile without a branch (a branch on the
   sign, mispredicted on mixed data, made relu 4x slower). */
#define DP__E1_negative(x) (-(x))
#define DP__E1_abs(x) ((x) < 0 ? -(x) : (x))
#define DP__E1_sign(x) ((x) != (x) ? (x) : (double)(((x) > 0) - ((x) < 0)))
#define DP__E1_sqrt(x) sqrt(x)
#define DP__E1_square(x) ((x) * (x))
#define DP__E1_exp(x) exp(x)
#define DP__E1_log(x) log(x)
#define DP__E1_sin(x) sin(x)
#define DP__E1_cos(x) cos(x)
#define DP__E1_relu(x) ((x) != (x) ? (x) : (x) > 0 ? (x) : 0.0)
#define DP__E1_tanh(x) tanh(x)
#define DP__E1_sigmoid(x) (1.0 / (1.0 + exp(-(x))))
DP__PRIVATE DP__HD double dp__f_negative(double x) { return DP__E1_negative(x); }
DP__PRIVATE DP__HD double dp__f_abs(double x) { return DP__E1_abs(x); }
DP__PRIVATE DP__HD double dp__f_sign(double x) { return DP__E1_sign(x); }
DP__PRIVATE DP__HD double dp__f_sqrt(double x) { return DP__E1_sqrt(x); }
DP__PRIVATE DP__HD double dp__f_square(double x) { return DP__E1_square(x); }
DP__PRIVATE DP__HD double dp__f_exp(double x) { return DP__E1_exp(x); }
DP__PRIVATE DP__HD double dp__f_log(double x) { return DP__E1_log(x); }
DP__PRIVATE DP__HD double dp__f_sin(double x) { return DP__E1_sin(x); }
DP__PRIVATE DP__HD double dp__f_cos(double x) { return DP__E1_cos(x); }
DP__PRIVATE DP__HD double dp__f_tanh(double x) { return DP__E1_tanh(x); }
DP__PRIVATE DP__HD double dp__f_sigmoid(double x) { return DP__E1_sigmoid(x); }
DP__PRIVATE DP__HD double dp__f_relu(double x) { return DP__E1_relu(x); }
/* The binary operators' math is also spelled as macros (DP__E_<name>, on
   plain doubles): the broadcast kernels' loops expand them, since gcc
   inlines no function into the DP__VEC_LOOPS loops. maximum and minimum
   are NumPy's: a on a tie, a NaN on either side wins (written as two
   selects, which vectorise, rather than with ||, which does not). */
#define DP__E_add(a, b) ((a) + (b))
#define DP__E_sub(a, b) ((a) - (b))
#define DP__E_mul(a, b) ((a) * (b))
#define DP__E_div(a, b) ((a) / (b))
#define DP__E_maximum(a, b) ((b) != (b) ? (b) : (b) > (a) ? (b) : (a))
#define DP__E_minimum(a, b) ((b) != (b) ? (b) : (b) < (a) ? (b) : (a))
#define DP__E_power(a, b) pow(a, b)
#define DP__E_rsub(a, b) ((b) - (a))
#define DP__E_rdiv(a, b) ((b) / (a))
#define DP__E_rpower(a, b) pow(b, a)
static DP__HD double dp__f_add(double a, double b) { return DP__E_add(a, b); }
static DP__HD double dp__f_sub(double a, double b) { return DP__E_sub(a, b); }
static DP__HD double dp__f_mul(double a, double b) { return DP__E_mul(a, b); }
static DP__HD double dp__f_div(double a, double b) { return DP__E_div(a, b); }
static DP__HD double dp__f_maximum(double a, double b) { return DP__E_maximum(a, b); }
static DP__HD double dp__f_minimum(double a, double b) { return DP__E_minimum(a, b); }
static DP__HD double dp__f_power(double a, double b) { return DP__E_power(a, b); }
DP__PRIVATE DP__HD double dp__f_rsub(double a, double b) { return DP__E_rsub(a, b); }
DP__PRIVATE DP__HD double dp__f_rdiv(double a, double b) { return DP__E_rdiv(a, b); }
DP__PRIVATE DP__HD double dp__f_rpower(double a, double b) { return DP__E_rpower(a, b); }
/* The integer forms, modulo 2^64 (narrower dtypes keep the low bits when
   stored). An operator without one (sqrt, div, ...) computes an integer
   array in double, and its result is stored by the conversion rule (the
   GPU kernels use the same forms: depeng_cuda.h's dp__cu_int1/2). A
   negative exponent gives the truncated real power: 1 for base 1, +-1 for
   base -1, else 0 (NumPy refuses it). */
typedef int64_t (*dp__int_fn1)(int64_t);
typedef int64_t (*dp__int_fn2)(int64_t, int64_t);
static DP__HD int64_t dp__i_add(int64_t a, int64_t b) { return dp__wrap((uint64_t)a + (uint64_t)b); }
static DP__HD int64_t dp__i_sub(int64_t a, int64_t b) { return dp__wrap((uint64_t)a - (uint64_t)b); }
static DP__HD int64_t dp__i_mul(int64_t a, int64_t b) { return dp__wrap((uint64_t)a * (uint64_t)b); }
static DP__HD int64_t dp__i_maximum(int64_t a, int64_t b) { return a >= b ? a : b; }
static DP__HD int64_t dp__i_minimum(int64_t a, int64_t b) { return a <= b ? a : b; }
static DP__HD int64_t dp__i_power(int64_t a, int64_t b) {
    uint64_t r = 1, x = (uint64_t)a;
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    for (; b; b >>= 1, x *= x) if (b & 1) r *= x;
    return dp__wrap(r);
}
static DP__HD int64_t dp__i_rsub(int64_t a, int64_t b) { return dp__i_sub(b, a); }
static DP__HD int64_t dp__i_rpower(int64_t a, int64_t b) { return dp__i_power(b, a); }
static DP__HD int64_t dp__i_negative(int64_t x) { return dp__wrap(0u - (uint64_t)x); }
static DP__HD int64_t dp__i_abs(int64_t x) { return x < 0 ? dp__i_negative(x) : x; }
static DP__HD int64_t dp__i_sign(int64_t x) { return (x > 0) - (x < 0); }
static DP__HD int64_t dp__i_square(int64_t x) { return dp__i_mul(x, x); }
static DP__HD int64_t dp__i_relu(int64_t x) { return x > 0 ? x : 0; }
static const dp__int_fn1 dp__i_sqrt = NULL, dp__i_exp = NULL, dp__i_log = NULL, dp__i_sin = NULL, dp__i_cos = NULL,
                         dp__i_tanh = NULL, dp__i_sigmoid = NULL;
static const dp__int_fn2 dp__i_div = NULL, dp__i_rdiv = NULL;
/* The rest of the built-in operators' element math, shared with the GPU
   kernels in the same way. clip and its gradient: */
#define DP__E_clip(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))
#define DP__DE_clip(og, x, lo, hi) ((x) >= (lo) && (x) <= (hi) ? (og) : 0.0)
DP__PRIVATE DP__HD double dp__f_clip(double x, double lo, double hi) { return DP__E_clip(x, lo, hi); }
DP__PRIVATE DP__HD double dp__d_clip(double og, double x, double lo, double hi) { return DP__DE_clip(og, x, lo, hi); }
/* softmax, log_softmax and softmax_cross_entropy, per element of a row
   whose maximum is mx and whose sum of exp(x - mx) is sum; in the
   gradients y is the softmax, og the output gradient and dot the row's
   sum of og * y (softmax) or of og (log_softmax). */
static DP__HD double dp__f_softmax(double x, double mx, double sum) { return exp(x - mx) / sum; }
static DP__HD double dp__f_log_softmax(double x, double mx, double sum) { return (x - mx) - log(sum); }
static DP__HD double dp__d_softmax(double y, double og, double dot) { return y * (og - dot); }
static DP__HD double dp__d_log_softmax(double y, double og, double dot) { return og - y * dot; }
static DP__HD double dp__f_sce_row(double x_label, double mx, double sum) { return log(sum) - (x_label - mx); }
static DP__HD double dp__d_sce(double og, double y, int is_label) { return og * (y - is_label); }
/* A label names a class: an integer in 0..classes-1. */
static DP__HD int dp__label_ok(double v, int64_t classes) { return v >= 0 && v < (double)classes && v == (double)(int64_t)v; }

/* NumPy broadcasting: shapes aligned at the right; each dim equal, or 1. */
static int dp__infer_broadcast(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                               dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    const dp_shape *a = &is[0], *b = &is[1];
    int i, n = a->ndim > b->ndim ? a->ndim : b->ndim;
    char s1[160], s2[160];
    (void)p; (void)nin; (void)nout;
    if (it[0] != it[1]) { snprintf(msg, cap, "dtypes %s and %s differ", dp_dtype_name(it[0]), dp_dtype_name(it[1])); return -1; }
    os->ndim = n;
    for (i = 0; i < n; i++) {
        int64_t da = i < n - a->ndim ? 1 : a->dims[i - (n - a->ndim)], db = i < n - b->ndim ? 1 : b->dims[i - (n - b->ndim)];
        if (da != db && da != 1 && db != 1) {
            snprintf(msg, cap, "shapes %s and %s do not broadcast (axis %d: %lld vs %lld)", dp__shape_str(a, s1, sizeof s1),
                     dp__shape_str(b, s2, sizeof s2), i, (long long)da, (long long)db);
            return -1;
        }
        os->dims[i] = da == 1 ? db : da;
    }
    *ot = it[0];
    return 0;
}
/* The walk every shape-aware kernel shares: idx runs over an array of dims
   in C order, and each offset follows its own strides (an input's element
   offsets; a stride is 0 along axes the input is broadcast or reduced on).
   ob and sb may be NULL. */
static void dp__odometer_next(int nd, const int64_t *dims, int64_t *idx, const int64_t *sa, int64_t *oa,
                              const int64_t *sb, int64_t *ob) {
    int d;
    for (d = nd - 1; d >= 0; d--) {
        *oa += sa[d];
        if (sb) *ob += sb[d];
        if (++idx[d] < dims[d]) return;
        *oa -= sa[d] * idx[d];
        if (sb) *ob -= sb[d] * idx[d];
        idx[d] = 0;
    }
}
/* Element strides of inputs shaped as and bs over the broadcast shape os:
   0 where an input has size 1 (or lacks the axis). */
static void dp__broadcast_strides(const dp_shape *os, const dp_shape *as, const dp_shape *bs, int64_t *sa, int64_t *sb) {
    int64_t acc_a = 1, acc_b = 1;
    int d, nd = os->ndim;
    for (d = nd - 1; d >= 0; d--) {
        int ka = d - (nd - as->ndim), kb = d - (nd - bs->ndim);
        int64_t da = ka >= 0 ? as->dims[ka] : 1, db = kb >= 0 ? bs->dims[kb] : 1;
        sa[d] = da == 1 ? 0 : acc_a; sb[d] = db == 1 ? 0 : acc_b;
        acc_a *= da; acc_b *= db;
    }
}
/* The broadcast walk the binary kernels and their gradients share: the
   output's axes with size-1 ones dropped and neighbours merged where
   every array's strides allow (same shapes: one axis), each with the
   element strides of the output (C order), a and b (0 where broadcast).
   The innermost axis is a row: stride 1 in the output and 0 or 1 in a and
   b, so its loop is contiguous (or reads one value) and vectorises. */
typedef struct dp__bgeo {
    int nd;
    int64_t dims[DP_MAX_DIMS], s[3][DP_MAX_DIMS];   /* s[0] output, s[1] a, s[2] b */
} dp__bgeo;
static void dp__bgeo_plan(const dp_shape *os, const dp_shape *as, const dp_shape *bs, dp__bgeo *g) {
    int64_t sa[DP_MAX_DIMS], sb[DP_MAX_DIMS];
    int d, n = 0;
    dp__broadcast_strides(os, as, bs, sa, sb);
    for (d = 0; d < os->ndim; d++) {
        if (os->dims[d] == 1) continue;
        if (n > 0 && g->s[1][n - 1] == sa[d] * os->dims[d] && g->s[2][n - 1] == sb[d] * os->dims[d]) {
            g->dims[n - 1] *= os->dims[d]; g->s[1][n - 1] = sa[d]; g->s[2][n - 1] = sb[d];
        } else { g->dims[n] = os->dims[d]; g->s[1][n] = sa[d]; g->s[2][n] = sb[d]; n++; }
    }
    if (n == 0) { g->dims[0] = 1; g->s[1][0] = g->s[2][0] = 0; n = 1; }
    g->nd = n;
    g->s[0][n - 1] = 1;
    for (d = n - 2; d >= 0; d--) g->s[0][d] = g->s[0][d + 1] * g->dims[d + 1];
}
/* The index idx over axes ax[0..m-1] of g (the last fastest) at flat
   position flat, and its offsets off[3]; then the next position. */
static void dp__bgeo_seek(const dp__bgeo *g, const int *ax, int m, int64_t flat, int64_t *idx, int64_t *off) {
    int i, c;
    off[0] = off[1] = off[2] = 0;
    for (i = m - 1; i >= 0; i--) {
        idx[i] = flat % g->dims[ax[i]]; flat /= g->dims[ax[i]];
        for (c = 0; c < 3; c++) off[c] += idx[i] * g->s[c][ax[i]];
    }
}
static void dp__bgeo_next(const dp__bgeo *g, const int *ax, int m, int64_t *idx, int64_t *off) {
    int i, c;
    for (i = m - 1; i >= 0; i--) {
        for (c = 0; c < 3; c++) off[c] += g->s[c][ax[i]];
        if (++idx[i] < g->dims[ax[i]]) return;
        for (c = 0; c < 3; c++) off[c] -= g->s[c][ax[i]] * idx[i];
        idx[i] = 0;
    }
}
/* A binary kernel's job: each operator's row function computes n outputs
   from y + yo, a + ao and b + bo (a and b stepping by sa and sb, 0 or 1),
   one loop per float dtype with the math inlined; other dtypes go through
   dp__bin_row_any (the integer form in int64 where there is one, else in
   double, as dp__store_elem converts). */
typedef struct dp__bin_job dp__bin_job;
typedef void (*dp__bin_row_fn)(const dp__bin_job *j, int64_t yo, int64_t ao, int64_t bo, int64_t sa, int64_t sb, int64_t n);
struct dp__bin_job {
    dp__bgeo g;
    dp_dtype t;
    dp_req req;
    const void *a, *b;
    void *y;
    double (*f)(double, double);
    dp__int_fn2 fi;
    dp__bin_row_fn row;
};
/* The dtypes without loops of their own (float16, the integer dtypes,
   bool) run in blocks of DP__BLK doubles (or int64s), loaded and stored by
   dp__load_elem / dp__store_elem (dp__load_int / dp__store_int) in loops
   instantiated per dtype (DP__BY_DTYPE: T_ a constant, so the element
   functions' switch folds), the dtype switched on once a block. */
#define DP__BLK 256
#define DP__BY_DTYPE(t, S) do { switch (t) {                                                        \
    case DP_FLOAT32: { const dp_dtype T_ = DP_FLOAT32; S; break; }                                   \
    case DP_FLOAT64: { const dp_dtype T_ = DP_FLOAT64; S; break; }                                   \
    case DP_INT32: { const dp_dtype T_ = DP_INT32; S; break; }                                       \
    case DP_INT64: { const dp_dtype T_ = DP_INT64; S; break; }                                       \
    case DP_FLOAT16: { const dp_dtype T_ = DP_FLOAT16; S; break; }                                   \
    case DP_BOOL: { const dp_dtype T_ = DP_BOOL; S; break; }                                         \
    case DP_INT8: { const dp_dtype T_ = DP_INT8; S; break; }                                         \
    default: { const dp_dtype T_ = DP_UINT8; S; break; } } } while (0)
/* m elements from p + off stepping by st into v; v into p + off by req
   (write or add-to): as doubles (dp__blk_load, dp__blk_store) or as int64
   (the _int pair, the integer forms' wrapping stores). */
#define DP__BLK_IO(SUF, V, LOAD, STORE)                                                                                    \
    static void dp__blk_load##SUF(const void *p, dp_dtype t, int64_t off, int64_t st, int64_t m, V *v) {                   \
        int64_t i;                                                                                                         \
        DP__BY_DTYPE(t, for (i = 0; i < m; i++) v[i] = LOAD(p, T_, off + i * st));                                         \
    }                                                                                                                      \
    static void dp__blk_store##SUF(void *p, dp_dtype t, int64_t off, int64_t m, const V *v, dp_req req) {                  \
        int64_t i;                                                                                                         \
        if (req == DP_REQ_ADD) DP__BY_DTYPE(t, for (i = 0; i < m; i++) STORE(p, T_, off + i, v[i], DP_REQ_ADD));          \
        else DP__BY_DTYPE(t, for (i = 0; i < m; i++) STORE(p, T_, off + i, v[i], DP_REQ_WRITE));                           \
    }
DP__BLK_IO(, double, dp__load_elem, dp__store_elem)
DP__BLK_IO(_int, int64_t, dp__load_int, dp__store_int)
DP_IMPL void dp_dtype_load_n(dp_dtype t, const void *data, int64_t i, int64_t n, double *out) { if (n > 0) dp__blk_load(data, t, i, 1, n, out); }
DP_IMPL void dp_dtype_store_n(dp_dtype t, void *data, int64_t i, int64_t n, const double *v, dp_req req) {
    if (n > 0 && req != DP_REQ_NULL) dp__blk_store(data, t, i, n, v, req);
}
/* dp__move_elem over n elements (dst from j, src from i), with the case it
   picks (and the dtypes) decided once a block of DP__BLK, not once an
   element: the same bits. The runs may be the same memory (j == i, the
   same dtype), not overlap otherwise. */
static void dp__move_run(void *dst, dp_dtype dt, int64_t j, const void *src, dp_dtype st, int64_t i, int64_t n, dp_req req) {
    int si = dp__dtype_is_int(st), di = dp__dtype_is_int(dt), add = req == DP_REQ_ADD;
    int64_t k, m, q;
    if (req == DP_REQ_NULL || n <= 0) return;
    if (dt == st && !add) {
        size_t es = dp_dtype_size(dt);
        if ((const unsigned char *)src + (size_t)i * es != (unsigned char *)dst + (size_t)j * es)
            memcpy((unsigned char *)dst + (size_t)j * es, (const unsigned char *)src + (size_t)i * es, (size_t)n * es);
        return;
    }
    if (st == DP_FLOAT64 && dt == DP_FLOAT16 && !add) {
        for (k = 0; k < n; k++) ((uint16_t *)dst)[j + k] = dp__half_from_double(((const double *)src)[i + k]);
        return;
    }
    for (k = 0; k < n; k += m) {
        m = n - k < DP__BLK ? n - k : DP__BLK;
        if (si && (di || (!add && (dt == DP_FLOAT32 || dt == DP_FLOAT16)))) {
            int64_t v[DP__BLK];
            dp__blk_load_int(src, st, i + k, 1, m, v);
            if (di) dp__blk_store_int(dst, dt, j + k, m, v, req);
            else if (dt == DP_FLOAT32) for (q = 0; q < m; q++) ((float *)dst)[j + k + q] = (float)v[q];
            else for (q = 0; q < m; q++) ((uint16_t *)dst)[j + k + q] = dp__half_from_float((float)v[q]);
        } else {
            double v[DP__BLK];
            dp__blk_load(src, st, i + k, 1, m, v);
            dp__blk_store(dst, dt, j + k, m, v, req);
        }
    }
}
/* v's elements added one after another into p[off], rounded to the dtype
   after each (a gradient's sum over a broadcast row) */
static void dp__blk_sum_into(void *p, dp_dtype t, int64_t off, int64_t m, const double *v) {
    int64_t i;
    DP__BY_DTYPE(t, for (i = 0; i < m; i++) dp__store_elem(p, T_, off, v[i], DP_REQ_ADD));
}
static void dp__bin_row_any(const dp__bin_job *j, int64_t yo, int64_t ao, int64_t bo, int64_t sa, int64_t sb, int64_t n) {
    int64_t i, k, m;
    for (k = 0; k < n; k += m) {
        m = n - k < DP__BLK ? n - k : DP__BLK;
        if (j->fi && dp__dtype_is_int(j->t)) {
            int64_t x[DP__BLK], z[DP__BLK];
            dp__blk_load_int(j->a, j->t, ao + k * sa, sa, m, x); dp__blk_load_int(j->b, j->t, bo + k * sb, sb, m, z);
            for (i = 0; i < m; i++) x[i] = j->fi(x[i], z[i]);
            dp__blk_store_int(j->y, j->t, yo + k, m, x, j->req);
        } else {
            double x[DP__BLK], z[DP__BLK];
            dp__blk_load(j->a, j->t, ao + k * sa, sa, m, x); dp__blk_load(j->b, j->t, bo + k * sb, sb, m, z);
            for (i = 0; i < m; i++) x[i] = j->f(x[i], z[i]);
            dp__blk_store(j->y, j->t, yo + k, m, x, j->req);
        }
    }
}
/* Output elements [e0, e1) (dp_range_fn): row pieces in C order. */
static void dp__bin_range(int64_t e0, int64_t e1, void *user) {
    const dp__bin_job *j = (const dp__bin_job *)user;
    const dp__bgeo *g = &j->g;
    int nd = g->nd, ax[DP_MAX_DIMS], d;
    int64_t len = g->dims[nd - 1], sa = g->s[1][nd - 1], sb = g->s[2][nd - 1], idx[DP_MAX_DIMS], off[3], in = e0 % len, e = e0;
    for (d = 0; d < nd; d++) ax[d] = d;
    dp__bgeo_seek(g, ax, nd - 1, e0 / len, idx, off);
    while (e < e1) {
        int64_t m = len - in < e1 - e ? len - in : e1 - e;
        j->row(j, e, off[1] + in * sa, off[2] + in * sb, sa, sb, m);
        e += m; in = 0;
        dp__bgeo_next(g, ax, nd - 1, idx, off);
    }
}
/* out[i] = f(a[ia], b[ib]) over the broadcast shape, split over the range
   loop when large (each element computed alone: the same bits in any
   chunk). */
static int dp__binary_apply(const dp_kernel_ctx *k, dp__bin_row_fn row, double (*f)(double, double), dp__int_fn2 fi) {
    dp__bin_job j;
    const dp_shape *os = dp_nd_shape(k->outputs[0]);
    if (k->req[0] == DP_REQ_NULL || dp_shape_size(os) == 0) return 0;
    dp__bgeo_plan(os, dp_nd_shape(k->inputs[0]), dp_nd_shape(k->inputs[1]), &j.g);
    j.t = dp_nd_dtype(k->outputs[0]); j.req = k->req[0];
    j.a = dp_nd_data(k->inputs[0]); j.b = dp_nd_data(k->inputs[1]); j.y = dp_nd_data(k->outputs[0]);
    j.f = f; j.fi = fi; j.row = row;
    dp__kernel_range(k, dp_shape_size(os), dp__bin_range, &j);
    return 0;
}
/* >>element-wise kernels' loops ---------------------------------------------------
   The unary, _scalar and clip operators and their gradients share one job
   (dp_range_fn's user): y[i] = f(a[i]) or f(a[i], s), or for a gradient
   y[i] = a[i] f'(b[i], s) with a the output gradient and b the input, plus
   y[i] when add. Each operator has its own loops (the math inlined, as a
   macro: no call through a pointer per element), chosen once a call by
   dtype: float32 and float64 in typed loops (DP__EW_LOOP), every other
   dtype in blocks (DP__EW_BLOCKS), and integer arrays through an
   operator's integer form in int64 blocks (dp__ew_int_range). Each element
   is computed alone, so a chunk of the range loop gives the same bits as
   the whole, and y may be a or b (in place). */
typedef struct dp__ew_job {
    const void *a, *b;
    void *y;
    dp_dtype at, yt;               /* a's (and b's) dtype, y's */
    dp_req req;
    int add;                       /* req is add-to */
    double s, lo, hi;              /* the scalar; clip's bounds */
    int64_t si, ilo, ihi;          /* the same as integers (integer forms, integer clip) */
    dp__int_fn1 fi1;               /* the integer form taken by dp__ew_int_range */
    dp__int_fn2 fi2;
} dp__ew_job;
/* Fills j for k's element-wise call: a input 0 (b input 1 when nin is 2), y output 0. */
static void dp__ew_job_init(dp__ew_job *j, const dp_kernel_ctx *k, int nin) {
    memset(j, 0, sizeof *j);
    j->a = dp_nd_data(k->inputs[0]); j->b = nin > 1 ? dp_nd_data(k->inputs[1]) : NULL; j->y = dp_nd_data(k->outputs[0]);
    j->at = dp_nd_dtype(k->inputs[nin - 1]); j->yt = dp_nd_dtype(k->outputs[0]);
    j->req = k->req[0]; j->add = k->req[0] == DP_REQ_ADD; j->s = k->scalar;
}
/* [b, e) in dtype T (float or double), N inputs: 1 (x_ = a[i]) or 2
   (o_ = a[i], x_ = b[i]; b_ exists only then, as nvcc warns of a pointer
   that is set and never read); E is the element's value in double, from
   those and s_, lo_, hi_; stored rounded once, added to y[i] in double
   first for add-to: what dp__store_elem does. */
#define DP__EW_B1(T, j)
#define DP__EW_B2(T, j) const T *b_ = (const T *)(j)->b;
#define DP__EW_LD1 double x_ = (double)a_[i_];
#define DP__EW_LD2 double o_ = (double)a_[i_], x_ = (double)b_[i_];
#define DP__EW_LOOP(T, N, j, b, e, E) do {                                                                          \
        const T *a_ = (const T *)(j)->a;                                                                            \
        DP__EW_B##N(T, j)                                                                                           \
        T *y_ = (T *)(j)->y;                                                                                        \
        const double s_ = (j)->s, lo_ = (j)->lo, hi_ = (j)->hi;                                                     \
        int64_t i_;                                                                                                 \
        (void)s_; (void)lo_; (void)hi_;                                                                             \
        if ((j)->add) for (i_ = (b); i_ < (e); i_++) { DP__EW_LD##N y_[i_] = (T)((E) + (double)y_[i_]); }          \
        else for (i_ = (b); i_ < (e); i_++) { DP__EW_LD##N y_[i_] = (T)(E); }                                      \
    } while (0)
/* The same in blocks of DP__BLK elements for the other dtypes: a (and b)
   loaded as doubles once a block, S computed on v_[i_] (a's) and w_[i_]
   (b's) into v_[i_], stored by y's dtype and req; the dtype switched on
   once a block (DP__BY_DTYPE). */
#define DP__EW_BLOCKS(j, b, e, S) do {                                                                              \
        double v_[DP__BLK], w_[DP__BLK];                                                                            \
        const double s_ = (j)->s, lo_ = (j)->lo, hi_ = (j)->hi;                                                     \
        int64_t k_, m_, i_;                                                                                         \
        (void)s_; (void)lo_; (void)hi_;                                                                             \
        for (k_ = (b); k_ < (e); k_ += m_) {                                                                        \
            m_ = (e) - k_ < DP__BLK ? (e) - k_ : DP__BLK;                                                           \
            dp__blk_load((j)->a, (j)->at, k_, 1, m_, v_);                                                           \
            if ((j)->b) dp__blk_load((j)->b, (j)->at, k_, 1, m_, w_);                                               \
            for (i_ = 0; i_ < m_; i_++) { S; }                                                                      \
            dp__blk_store((j)->y, (j)->yt, k_, m_, v_, (j)->req);                                                   \
        }                                                                                                           \
    } while (0)
/* Integer arrays through an integer form (fi1, or fi2 with si), or
   clamped to [ilo, ihi] (neither): in int64 blocks, wrapping as
   dp__store_int does. One loop for every operator: the form is called
   through its pointer, as dp__bin_row_any does. */
static void dp__ew_int_range(int64_t b, int64_t e, void *user) {
    const dp__ew_job *j = (const dp__ew_job *)user;
    int64_t v[DP__BLK], k, m, i;
    for (k = b; k < e; k += m) {
        m = e - k < DP__BLK ? e - k : DP__BLK;
        dp__blk_load_int(j->a, j->at, k, 1, m, v);
        if (j->fi1) for (i = 0; i < m; i++) v[i] = j->fi1(v[i]);
        else if (j->fi2) for (i = 0; i < m; i++) v[i] = j->fi2(v[i], j->si);
        else for (i = 0; i < m; i++) v[i] = v[i] < j->ilo ? j->ilo : v[i] > j->ihi ? j->ihi : v[i];
        dp__blk_store_int(j->y, j->yt, k, m, v, j->req);
    }
}
/* An operator's loops, by its job's dtypes: f32 for float32, f64 for
   float64 (a, b and y of the one dtype), else any. */
static dp_range_fn dp__ew_pick(const dp__ew_job *j, dp_range_fn f32, dp_range_fn f64, dp_range_fn any) {
    if (j->at == j->yt && j->at == DP_FLOAT32) return f32;
    if (j->at == j->yt && j->at == DP_FLOAT64) return f64;
    return any;
}
/* unary: float32 in and out runs the operator's own float32 loop (f32,
   see DP__UNARY_KERNEL: tanh and sigmoid in float32), add-to too (y + f(x)
   in float is what the double path would round to: a sum of two floats
   rounded once either way); integer arrays the integer form where there
   is one (fi), else double. */
static int dp__unary_apply(const dp_kernel_ctx *k, dp_range_fn f32, dp_range_fn f64, dp_range_fn any, dp__int_fn1 fi) {
    dp__ew_job j;
    dp_range_fn fn;
    if (k->req[0] == DP_REQ_NULL) return 0;
    dp__ew_job_init(&j, k, 1);
    fn = dp__ew_pick(&j, f32, f64, any);
    if (fi && dp__dtype_is_int(j.at) && dp__dtype_is_int(j.yt)) { j.fi1 = fi; fn = dp__ew_int_range; }
    dp__kernel_range(k, dp_shape_size(dp_nd_shape(k->inputs[0])), fn, &j);
    return 0;
}
/* Whether v is an int64 exactly (so an integer array's operation with it
   can stay in integers). */
static int dp__double_is_int64(double v) { return v >= -9223372036854775808.0 && v < 9223372036854775808.0 && v == (double)(int64_t)v; }
/* _scalar: with an integer array and an integral scalar, in integers; else
   in double (float32 too, rounded once). */
static int dp__scalar_apply(const dp_kernel_ctx *k, dp_range_fn f32, dp_range_fn f64, dp_range_fn any, dp__int_fn2 fi) {
    dp__ew_job j;
    dp_range_fn fn;
    if (k->req[0] == DP_REQ_NULL) return 0;
    dp__ew_job_init(&j, k, 1);
    fn = dp__ew_pick(&j, f32, f64, any);
    if (fi && dp__dtype_is_int(j.at) && dp__dtype_is_int(j.yt) && dp__double_is_int64(k->scalar)) {
        j.fi2 = fi; j.si = (int64_t)k->scalar; fn = dp__ew_int_range;
    }
    dp__kernel_range(k, dp_shape_size(dp_nd_shape(k->inputs[0])), fn, &j);
    return 0;
}
/* gradients, inputs (ograd, x), both of x's dtype: xgrad = ograd * f'(x)
   (lo and hi: clip's bounds), in double for every dtype. */
static int dp__ew_grad_apply(const dp_kernel_ctx *k, dp_range_fn f32, dp_range_fn f64, dp_range_fn any, double lo, double hi) {
    dp__ew_job j;
    if (k->req[0] == DP_REQ_NULL) return 0;
    dp__ew_job_init(&j, k, 2);
    j.yt = j.at; j.lo = lo; j.hi = hi;
    dp__kernel_range(k, dp_shape_size(dp_nd_shape(k->inputs[1])), dp__ew_pick(&j, f32, f64, any), &j);
    return 0;
}
static const dp_param_def dp__clip_params[] = {
    {"a_min", DP_PARAM_FLOAT, NULL, 0, 0, NULL, "lower bound"},
    {"a_max", DP_PARAM_FLOAT, NULL, 0, 0, NULL, "upper bound"},
};
/* v limited to integer dtype t's range */
static int64_t dp__int_clamp(dp_dtype t, int64_t v) {
    int64_t lo = t == DP_INT32 ? INT32_MIN : t == DP_INT8 ? -128 : t == DP_INT64 ? INT64_MIN : 0;
    int64_t hi = t == DP_INT32 ? INT32_MAX : t == DP_INT8 ? 127 : t == DP_INT64 ? INT64_MAX : t == DP_BOOL ? 1 : 255;
    return v < lo ? lo : v > hi ? hi : v;
}
/* clip: float in double; an integer array in integers, since
   trunc(clip(x, lo, hi)) = clip(x, trunc lo, trunc hi) for an integer x
   (exact), the bounds brought into the dtype's range as the GPU kernel
   does. */
DP__VEC_LOOPS static void dp__clip_f32(int64_t b, int64_t e, void *user) { DP__EW_LOOP(float, 1, (const dp__ew_job *)user, b, e, DP__E_clip(x_, lo_, hi_)); }
DP__VEC_LOOPS static void dp__clip_f64(int64_t b, int64_t e, void *user) { DP__EW_LOOP(double, 1, (const dp__ew_job *)user, b, e, DP__E_clip(x_, lo_, hi_)); }
static void dp__clip_any(int64_t b, int64_t e, void *user) { DP__EW_BLOCKS((const dp__ew_job *)user, b, e, v_[i_] = DP__E_clip(v_[i_], lo_, hi_)); }
static int dp__k_clip(const dp_kernel_ctx *k) {
    dp__ew_job j;
    dp_range_fn fn;
    if (k->req[0] == DP_REQ_NULL) return 0;
    dp__ew_job_init(&j, k, 1);
    j.lo = k->params->v[0].f; j.hi = k->params->v[1].f;
    fn = dp__ew_pick(&j, dp__clip_f32, dp__clip_f64, dp__clip_any);
    if (dp__dtype_is_int(j.at) && j.at == j.yt) {
        j.ilo = dp__int_clamp(j.at, dp__to_int64(j.lo)); j.ihi = dp__int_clamp(j.at, dp__to_int64(j.hi));
        fn = dp__ew_int_range;
    }
    dp__kernel_range(k, dp_shape_size(dp_nd_shape(k->inputs[0])), fn, &j);
    return 0;
}
static int dp__infer_clip(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                          dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)nin; (void)nout;
    if (!(p->v[0].f <= p->v[1].f)) { snprintf(msg, cap, "parameter 'a_min' (%g) is above 'a_max' (%g)", p->v[0].f, p->v[1].f); return -1; }
    *os = is[0]; *ot = it[0];
    return 0;
}
#define DP__UNARY_OPS(X) X(negative, "y = -x") X(abs, "y = |x|") X(sign, "y = -1, 0 or 1 by the sign of x") \
    X(sqrt, "y = sqrt(x)") X(square, "y = x * x") X(exp, "y = e^x") X(log, "y = ln x") X(sin, "y = sin x") \
    X(cos, "y = cos x") X(tanh, "y = tanh x (float32: computed in float32, within 2 ulp of the correctly rounded result)") \
    X(sigmoid, "y = 1 / (1 + e^-x) (float32: computed in float32, within 2 ulp of the correctly rounded result)") X(relu, "y = max(x, 0)")
#define DP__BINARY_OPS(X) X(add, "y = a + b") X(sub, "y = a - b") X(mul, "y = a * b") X(div, "y = a / b") \
    X(maximum, "y = max(a, b)") X(minimum, "y = min(a, b)") X(power, "y = a ^ b")
#define DP__SCALAR_OPS(X) X(add, "y = x + scalar") X(sub, "y = x - scalar") X(mul, "y = x * scalar") \
    X(div, "y = x / scalar") X(maximum, "y = max(x, scalar)") X(minimum, "y = min(x, scalar)") X(power, "y = x ^ scalar") \
    X(rsub, "y = scalar - x") X(rdiv, "y = scalar / x") X(rpower, "y = scalar ^ x")
/* >>float32 activations --------------------------------------------------------
   tanh and sigmoid on float32 arrays in float32, in loops that gcc and
   clang vectorise (libm's tanh through a pointer cost 19 ns an element,
   half of a LeNet training step). Written for this header:
     e^t for t <= 0: t = k ln 2 + r, |r| <= ln 2 / 2 (k by the 1.5 * 2^23
       rounding trick, ln 2 in two parts so k ln2_hi is exact), e^r = 1 + r
       + r^2 P(r) with P a degree-4 fit to (e^r - 1 - r) / r^2 (weighted least
       squares on Chebyshev nodes, coefficients rounded to float), times 2^k
       in two steps (2^(k/2) 2^(k - k/2)), so that a subnormal result is
       rounded once; 0 below t = -104 (e^t under half the smallest subnormal);
     tanh |x| < 0.625: |x| + |x|^3 Q(x^2), Q a degree-4 fit likewise; above:
       (1 - e) / (1 + e), e = e^(-2 min(|x|, 9.5)): exactly 1 from |x| >= 9.01,
       where tanh rounds to 1; the sign of x put back (tanh -0 = -0);
     sigmoid: e = e^-|x| in (0, 1], 1 / (1 + e) for x >= 0, e / (1 + e)
       below, which never overflows and reaches the subnormals.
   NaN passes (x + x). Measured over all 2^32 float inputs against
   (float)tanh((double)x) and (float)(1 / (1 + exp(-(double)x))): at most 2
   units in the last place for both (bench/act_ulp.c, make act-ulp).
   Every operation is a plain float + - * / or a select, in one order, with
   no fused multiply-add (contraction off for these functions), so the
   portable loop (vectorised for the compiler's own target: SSE2, NEON)
   and the AVX2 loop picked when run give the same bits, and results do not
   depend on the CPU (test_kernels_exact's activations_f32). */
#if defined(__clang__)
#  define DP__NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#  define DP__NO_CONTRACT
#endif
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__INTEL_COMPILER)
#  define DP__ACT_ATTR __attribute__((optimize("tree-loop-vectorize", "vect-cost-model=dynamic", "no-math-errno", "fp-contract=off", "no-trapping-math")))
#else
#  define DP__ACT_ATTR
#endif
#define DP__ACT_F32(SUF, ATTR)                                                                                  \
ATTR static inline float dp__expneg_##SUF(float t) {                                                            \
    DP__NO_CONTRACT                                                                                             \
    float u, kf, r, p, s1, s2, e;                                                                               \
    int32_t k, k1;                                                                                              \
    uint32_t b1, b2;                                                                                            \
    u = t * 1.44269504f;                                                                                        \
    u = u >= -151.0f ? u : -151.0f;                    /* NaN too: kf stays an int */                           \
    kf = u + 12582912.0f;                                                                                       \
    kf = kf - 12582912.0f;                                                                                      \
    r = t - kf * 0.693145752f;                         /* 0x3f317200: 15 bits, k ln2_hi exact */               \
    r = r - kf * 1.42860677e-6f;                                                                                \
    p = 1.381461043e-3f * r + 8.368710056e-3f;                                                                  \
    p = p * r + 4.166838899e-2f;                                                                                \
    p = p * r + 1.666652113e-1f;                                                                                \
    p = p * r + 4.999999404e-1f;                                                                                \
    p = r * r * p + r;                                                                                          \
    p = p + 1.0f;                                                                                               \
    k = (int32_t)kf; k1 = k / 2;                                                                                \
    b1 = (uint32_t)(k1 + 127) << 23; b2 = (uint32_t)(k - k1 + 127) << 23;                                        \
    memcpy(&s1, &b1, sizeof s1); memcpy(&s2, &b2, sizeof s2);                                                   \
    e = p * s1 * s2;                                                                                            \
    return t < -104.0f ? 0.0f : e;                                                                              \
}                                                                                                               \
ATTR static inline float dp__tanhf_##SUF(float x) {                                                             \
    DP__NO_CONTRACT                                                                                             \
    float a, z, q, s, e, b, r;                                                                                  \
    a = x < 0 ? -x : x; z = a * a;                                                                              \
    q = -5.704978481e-3f * z + 2.063907869e-2f;                                                                 \
    q = q * z - 5.373971164e-2f;                                                                                \
    q = q * z + 1.333144158e-1f;                                                                                \
    q = q * z - 3.333328068e-1f;                                                                                \
    s = a * z * q + a;                                                                                          \
    e = dp__expneg_##SUF(-2.0f * (a > 9.5f ? 9.5f : a));                                                        \
    b = (1.0f - e) / (1.0f + e);                                                                                \
    r = a < 0.625f ? s : b;                                                                                     \
    r = x < 0 ? -r : r;                                                                                         \
    r = x == 0 ? x : r;                                /* -0 */                                                 \
    return x != x ? x + x : r;                                                                                  \
}                                                                                                               \
ATTR static inline float dp__sigmoidf_##SUF(float x) {                                                          \
    DP__NO_CONTRACT                                                                                             \
    float e, r;                                                                                                 \
    e = dp__expneg_##SUF(x < 0 ? x : -x);                                                                       \
    r = (x < 0 ? e : 1.0f) / (1.0f + e);                                                                        \
    return x != x ? x + x : r;                                                                                  \
}                                                                                                               \
ATTR static void dp__l1_tanh_##SUF(int64_t n, const float *a, float *y, int add) {                              \
    int64_t i;                                                                                                  \
    if (add) for (i = 0; i < n; i++) y[i] = y[i] + dp__tanhf_##SUF(a[i]);                                      \
    else for (i = 0; i < n; i++) y[i] = dp__tanhf_##SUF(a[i]);                                                  \
}                                                                                                               \
ATTR static void dp__l1_sigmoid_##SUF(int64_t n, const float *a, float *y, int add) {                           \
    int64_t i;                                                                                                  \
    if (add) for (i = 0; i < n; i++) y[i] = y[i] + dp__sigmoidf_##SUF(a[i]);                                   \
    else for (i = 0; i < n; i++) y[i] = dp__sigmoidf_##SUF(a[i]);                                               \
}
DP__ACT_F32(f32, DP__ACT_ATTR)
#ifdef DP__GEMM_X86
DP__ACT_F32(f32_avx2, DP__ACT_ATTR __attribute__((target("avx2"))))
#  define DP__ACT_PICK(name, ARGS) do { if (dp__cpu_avx2_fma()) dp__l1_##name##_f32_avx2 ARGS; else dp__l1_##name##_f32 ARGS; } while (0)
#else
#  define DP__ACT_PICK(name, ARGS) dp__l1_##name##_f32 ARGS
#endif
static void dp__l1_tanh(int64_t n, const float *a, float *y, int add) { DP__ACT_PICK(tanh, (n, a, y, add)); }
static void dp__l1_sigmoid(int64_t n, const float *a, float *y, int add) { DP__ACT_PICK(sigmoid, (n, a, y, add)); }
/* Each unary operator's float32 chunk calls dp__l1_<name>(n, x, y, add),
   its own loop: the element math inlined (through a function pointer, as
   it was, a call per element and no vectors; the math as a macro, which
   gcc inlines into a DP__VEC_LOOPS function, unlike a function). tanh and
   sigmoid have loops of their own in float32 (>>float32 activations); the
   others compute in double, as every dtype does, so their bits are the
   double path's. */
#define DP__F32_LOOP(name, doc) \
    DP__VEC_LOOPS static void dp__l1_##name(int64_t n, const float *a, float *y, int add) { \
        int64_t i; \
        if (add) for (i = 0; i < n; i++) { double x_ = (double)a[i]; y[i] = y[i] + (float)DP__E1_##name(x_); } \
        else for (i = 0; i < n; i++) { double x_ = (double)a[i]; y[i] = (float)DP__E1_##name(x_); } }
DP__F32_LOOP(negative, "") DP__F32_LOOP(abs, "") DP__F32_LOOP(sign, "") DP__F32_LOOP(sqrt, "") DP__F32_LOOP(square, "")
DP__F32_LOOP(exp, "") DP__F32_LOOP(log, "") DP__F32_LOOP(sin, "") DP__F32_LOOP(cos, "") DP__F32_LOOP(relu, "")
#undef DP__F32_LOOP
/* Each unary operator's loops (dp_range_fn, see >>element-wise kernels'
   loops): float32 (its dp__l1_ loop), float64, and the other dtypes in
   blocks. */
#define DP__UNARY_KERNEL(name, doc) \
    static void dp__r1_##name(int64_t begin, int64_t end, void *user) { \
        const dp__ew_job *j = (const dp__ew_job *)user; \
        dp__l1_##name(end - begin, (const float *)j->a + begin, (float *)j->y + begin, j->add); } \
    DP__VEC_LOOPS static void dp__r1d_##name(int64_t b, int64_t e, void *user) { \
        DP__EW_LOOP(double, 1, (const dp__ew_job *)user, b, e, DP__E1_##name(x_)); } \
    static void dp__r1b_##name(int64_t b, int64_t e, void *user) { \
        DP__EW_BLOCKS((const dp__ew_job *)user, b, e, v_[i_] = DP__E1_##name(v_[i_])); } \
    static int dp__k_##name(const dp_kernel_ctx *k) { return dp__unary_apply(k, dp__r1_##name, dp__r1d_##name, dp__r1b_##name, dp__i_##name); }
/* A binary operator's row (dp__bin_row_fn) in dtype T: one of a and b
   read once when it is broadcast along the row, each element computed in
   double and rounded once, as dp__store_elem does (add-to included). */
#define DP__BIN_ROW(T, E, j, yo, ao, bo, sa, sb, n) do {                                              \
        const T *a_ = (const T *)(j)->a + (ao), *b_ = (const T *)(j)->b + (bo);                        \
        T *y_ = (T *)(j)->y + (yo);                                                                    \
        int64_t i_;                                                                                    \
        if ((j)->req == DP_REQ_ADD) {                                                                  \
            if (!(sb) && (sa)) { double v_ = (double)b_[0]; for (i_ = 0; i_ < (n); i_++) { double x_ = (double)a_[i_]; y_[i_] = (T)(E(x_, v_) + (double)y_[i_]); } } \
            else if (!(sa) && (sb)) { double v_ = (double)a_[0]; for (i_ = 0; i_ < (n); i_++) { double x_ = (double)b_[i_]; y_[i_] = (T)(E(v_, x_) + (double)y_[i_]); } } \
            else for (i_ = 0; i_ < (n); i_++) { double x_ = (double)a_[i_], z_ = (double)b_[i_]; y_[i_] = (T)(E(x_, z_) + (double)y_[i_]); } \
        } else {                                                                                       \
            if (!(sb) && (sa)) { double v_ = (double)b_[0]; for (i_ = 0; i_ < (n); i_++) { double x_ = (double)a_[i_]; y_[i_] = (T)E(x_, v_); } } \
            else if (!(sa) && (sb)) { double v_ = (double)a_[0]; for (i_ = 0; i_ < (n); i_++) { double x_ = (double)b_[i_]; y_[i_] = (T)E(v_, x_); } } \
            else for (i_ = 0; i_ < (n); i_++) { double x_ = (double)a_[i_], z_ = (double)b_[i_]; y_[i_] = (T)E(x_, z_); } \
        }                                                                                              \
    } while (0)
#define DP__BINARY_KERNEL(name, doc) \
    DP__VEC_LOOPS static void dp__br_##name(const dp__bin_job *j, int64_t yo, int64_t ao, int64_t bo, int64_t sa, int64_t sb, int64_t n) { \
        if (j->t == DP_FLOAT32) DP__BIN_ROW(float, DP__E_##name, j, yo, ao, bo, sa, sb, n); \
        else if (j->t == DP_FLOAT64) DP__BIN_ROW(double, DP__E_##name, j, yo, ao, bo, sa, sb, n); \
        else dp__bin_row_any(j, yo, ao, bo, sa, sb, n); } \
    static int dp__k_##name(const dp_kernel_ctx *k) { return dp__binary_apply(k, dp__br_##name, dp__f_##name, dp__i_##name); }
/* A _scalar operator's loops: x op s in double, rounded once to the dtype
   (float32 too); the other dtypes in blocks. */
#define DP__SCALAR_KERNEL(name, doc) \
    DP__VEC_LOOPS static void dp__rs_##name(int64_t b, int64_t e, void *user) { \
        const dp__ew_job *j = (const dp__ew_job *)user; \
        if (j->at == DP_FLOAT32) DP__EW_LOOP(float, 1, j, b, e, DP__E_##name(x_, s_)); \
        else DP__EW_LOOP(double, 1, j, b, e, DP__E_##name(x_, s_)); } \
    static void dp__rsb_##name(int64_t b, int64_t e, void *user) { \
        DP__EW_BLOCKS((const dp__ew_job *)user, b, e, v_[i_] = DP__E_##name(v_[i_], s_)); } \
    static int dp__k_##name##_scalar(const dp_kernel_ctx *k) { return dp__scalar_apply(k, dp__rs_##name, dp__rs_##name, dp__rsb_##name, dp__i_##name); }
DP__UNARY_OPS(DP__UNARY_KERNEL)
DP__BINARY_OPS(DP__BINARY_KERNEL)
DP__SCALAR_OPS(DP__SCALAR_KERNEL)
/* >>gradients of the element-wise operators ------------------------------------
   Each forward operator names _backward_<name>, which takes (output
   gradient, the forward inputs) and makes the inputs' gradients: the output
   gradient times the partial derivative, summed back over the axes an input
   was broadcast along. Derivatives are one line each, like the forward.
   relu, tanh and sigmoid take the forward output y instead of the input
   (dp__unary_grad_needs), as MXNet's relu_grad, tanh_grad and
   sigmoid_grad do: 1 - y^2 as (1 - y)(1 + y), which keeps its accuracy
   where y is near +-1 (1 - y is exact there), and y (1 - y). */
#define DP__D1_negative(x) ((void)(x), -1.0)
#define DP__D1_abs(x) ((double)(((x) > 0) - ((x) < 0)))
#define DP__D1_sign(x) ((void)(x), 0.0)
#define DP__D1_sqrt(x) (0.5 / sqrt(x))
#define DP__D1_square(x) (2 * (x))
#define DP__D1_exp(x) exp(x)
#define DP__D1_log(x) (1 / (x))
#define DP__D1_sin(x) cos(x)
#define DP__D1_cos(x) (-sin(x))
#define DP__D1_tanh(y) ((1 - (y)) * (1 + (y)))
#define DP__D1_sigmoid(y) ((y) * (1 - (y)))
#define DP__D1_relu(y) ((y) > 0 ? 1.0 : 0.0)
DP__PRIVATE DP__HD double dp__d_negative(double x) { return DP__D1_negative(x); }
DP__PRIVATE DP__HD double dp__d_abs(double x) { return DP__D1_abs(x); }
DP__PRIVATE DP__HD double dp__d_sign(double x) { return DP__D1_sign(x); }
DP__PRIVATE DP__HD double dp__d_sqrt(double x) { return DP__D1_sqrt(x); }
DP__PRIVATE DP__HD double dp__d_square(double x) { return DP__D1_square(x); }
DP__PRIVATE DP__HD double dp__d_exp(double x) { return DP__D1_exp(x); }
DP__PRIVATE DP__HD double dp__d_log(double x) { return DP__D1_log(x); }
DP__PRIVATE DP__HD double dp__d_sin(double x) { return DP__D1_sin(x); }
DP__PRIVATE DP__HD double dp__d_cos(double x) { return DP__D1_cos(x); }
DP__PRIVATE DP__HD double dp__d_tanh(double y) { return DP__D1_tanh(y); }
DP__PRIVATE DP__HD double dp__d_sigmoid(double y) { return DP__D1_sigmoid(y); }
DP__PRIVATE DP__HD double dp__d_relu(double y) { return DP__D1_relu(y); }
/* partial derivatives of a binary f(a, b): by a (which 0) or by b (which
   1); as macros too (DP__DE_<name>), for the broadcast gradients' loops */
#define DP__DE_add(a, b, which) ((void)(a), (void)(b), (void)(which), 1.0)
#define DP__DE_sub(a, b, which) ((void)(a), (void)(b), (which) ? -1.0 : 1.0)
#define DP__DE_mul(a, b, which) ((which) ? (a) : (b))
#define DP__DE_div(a, b, which) ((which) ? -(a) / ((b) * (b)) : 1 / (b))
#define DP__DE_maximum(a, b, which) ((which) ? (double)((a) < (b)) : (double)((a) >= (b)))
#define DP__DE_minimum(a, b, which) ((which) ? (double)((a) > (b)) : (double)((a) <= (b)))
#define DP__DE_power(a, b, which) ((which) ? pow(a, b) * log(a) : (b) * pow(a, (b) - 1))
#define DP__DE_rsub(a, b, which) DP__DE_sub(b, a, !(which))
#define DP__DE_rdiv(a, b, which) DP__DE_div(b, a, !(which))
#define DP__DE_rpower(a, b, which) DP__DE_power(b, a, !(which))
static DP__HD double dp__d_add(double a, double b, int which) { return DP__DE_add(a, b, which); }
static DP__HD double dp__d_sub(double a, double b, int which) { return DP__DE_sub(a, b, which); }
static DP__HD double dp__d_mul(double a, double b, int which) { return DP__DE_mul(a, b, which); }
static DP__HD double dp__d_div(double a, double b, int which) { return DP__DE_div(a, b, which); }
static DP__HD double dp__d_maximum(double a, double b, int which) { return DP__DE_maximum(a, b, which); }
static DP__HD double dp__d_minimum(double a, double b, int which) { return DP__DE_minimum(a, b, which); }
static DP__HD double dp__d_power(double a, double b, int which) { return DP__DE_power(a, b, which); }
DP__PRIVATE DP__HD double dp__d_rsub(double a, double b, int which) { return DP__DE_rsub(a, b, which); }
DP__PRIVATE DP__HD double dp__d_rdiv(double a, double b, int which) { return DP__DE_rdiv(a, b, which); }
DP__PRIVATE DP__HD double dp__d_rpower(double a, double b, int which) { return DP__DE_rpower(a, b, which); }

/* inputs (ograd, x or y); output xgrad = ograd * f'(x), over element
   ranges (split over the range loop when large: each element as alone).
   Each operator has its own chunk functions (DP__UNARY_GRAD_KERNEL): a
   loop per float dtype and blocks for the others (>>element-wise kernels'
   loops), the derivative inlined; every dtype computes in double and
   rounds once, as dp__store_elem does (add-to included). */
#define DP__UNARY_GRAD_LOOP(T, og, x, g, add, DF, b, e) do {                                         \
        const T *o_ = (const T *)(og), *x_ = (const T *)(x);                                        \
        T *g_ = (T *)(g);                                                                            \
        int64_t i_;                                                                                  \
        if (add) for (i_ = (b); i_ < (e); i_++) g_[i_] = (T)((double)o_[i_] * DF((double)x_[i_]) + (double)g_[i_]); \
        else for (i_ = (b); i_ < (e); i_++) g_[i_] = (T)((double)o_[i_] * DF((double)x_[i_]));                        \
    } while (0)
/* inputs (ograd, a, b); outputs (agrad, bgrad): each partial times the
   output gradient, added into the input element it came from, so the axes
   an input was broadcast along are summed. Each input's gradient is made
   apart, split over its own elements (dp__kernel_rows: a chunk owns its
   elements), and every element sums its terms in the output's C order,
   rounding to the dtype after each, from 0 (write) or its value (add-to):
   the order the serial walk had, so the bits are the same at any worker
   count. Row by row along the output's innermost axis: where the input
   has that axis the row adds into as many elements at once (vectorised);
   where it was broadcast along it, the row sums into one. */
typedef struct dp__bgrad_job dp__bgrad_job;
/* n terms from og + oo, a + ao, b + bo (a, b stepping by sa, sb): into
   g[go + i] (red 0) or all into g[go] (red 1) */
typedef void (*dp__bgrad_row_fn)(const dp__bgrad_job *j, int64_t oo, int64_t ao, int64_t bo, int64_t go, int64_t sa, int64_t sb,
                                 int64_t n, int red);
struct dp__bgrad_job {
    dp__bgeo g;
    dp_dtype t;
    int which, write, nk, nr, kax[DP_MAX_DIMS], rax[DP_MAX_DIMS];   /* the input's kept and reduced axes */
    int64_t nred;                                                    /* the reduced axes' element count */
    const void *og, *a, *b;
    void *gx;
    double (*df)(double, double, int);
    dp__bgrad_row_fn row;
};
static void dp__bgrad_row_any(const dp__bgrad_job *j, int64_t oo, int64_t ao, int64_t bo, int64_t go, int64_t sa, int64_t sb,
                              int64_t n, int red) {
    double o[DP__BLK], x[DP__BLK], z[DP__BLK];
    int64_t i, k, m;
    for (k = 0; k < n; k += m) {
        m = n - k < DP__BLK ? n - k : DP__BLK;
        dp__blk_load(j->og, j->t, oo + k, 1, m, o); dp__blk_load(j->a, j->t, ao + k * sa, sa, m, x); dp__blk_load(j->b, j->t, bo + k * sb, sb, m, z);
        for (i = 0; i < m; i++) o[i] *= j->df(x[i], z[i], j->which);
        if (red) dp__blk_sum_into(j->gx, j->t, go, m, o);
        else dp__blk_store(j->gx, j->t, go + k, m, o, DP_REQ_ADD);
    }
}
/* The input gradient's elements [e0, e1) (dp_range_fn). */
static void dp__bgrad_range(int64_t e0, int64_t e1, void *user) {
    const dp__bgrad_job *j = (const dp__bgrad_job *)user;
    const dp__bgeo *g = &j->g;
    int nd = g->nd, c = 1 + j->which;
    int64_t len = g->dims[nd - 1], sa = g->s[1][nd - 1], sb = g->s[2][nd - 1], kidx[DP_MAX_DIMS], ridx[DP_MAX_DIMS], ko[3], ro[3], q, e;
    if (j->write) memset((char *)j->gx + (size_t)e0 * dp_dtype_size(j->t), 0, (size_t)(e1 - e0) * dp_dtype_size(j->t));
    if (g->s[c][nd - 1]) {                           /* kept along the rows: for each reduced index, the rows */
        dp__bgeo_seek(g, j->rax, j->nr, 0, ridx, ro);
        for (q = 0; q < j->nred; q++) {
            int64_t in = e0 % len;
            dp__bgeo_seek(g, j->kax, j->nk - 1, e0 / len, kidx, ko);
            for (e = e0; e < e1;) {
                int64_t m = len - in < e1 - e ? len - in : e1 - e;
                j->row(j, ro[0] + ko[0] + in, ro[1] + ko[1] + in * sa, ro[2] + ko[2] + in * sb, ko[c] + in, sa, sb, m, 0);
                e += m; in = 0;
                dp__bgeo_next(g, j->kax, j->nk - 1, kidx, ko);
            }
            dp__bgeo_next(g, j->rax, j->nr, ridx, ro);
        }
    } else {                                         /* reduced along the rows: each element sums its rows */
        dp__bgeo_seek(g, j->kax, j->nk, e0, kidx, ko);
        for (e = e0; e < e1; e++) {
            dp__bgeo_seek(g, j->rax, j->nr - 1, 0, ridx, ro);
            for (q = 0; q < j->nred / len; q++) {
                j->row(j, ro[0] + ko[0], ro[1] + ko[1], ro[2] + ko[2], ko[c], sa, sb, len, 1);
                dp__bgeo_next(g, j->rax, j->nr - 1, ridx, ro);
            }
            dp__bgeo_next(g, j->kax, j->nk, kidx, ko);
        }
    }
}
static int dp__binary_grad(const dp_kernel_ctx *k, dp__bgrad_row_fn row, double (*df)(double, double, int)) {
    dp__bgrad_job j;
    const dp_shape *os = dp_nd_shape(k->inputs[0]);
    int64_t n = dp_shape_size(os);
    int w, d;
    dp__bgeo_plan(os, dp_nd_shape(k->inputs[1]), dp_nd_shape(k->inputs[2]), &j.g);
    j.t = dp_nd_dtype(k->inputs[1]); j.df = df; j.row = row;
    j.og = dp_nd_data(k->inputs[0]); j.a = dp_nd_data(k->inputs[1]); j.b = dp_nd_data(k->inputs[2]);
    for (w = 0; w < 2; w++) {
        int64_t ne = dp_shape_size(dp_nd_shape(k->outputs[w]));
        if (k->req[w] == DP_REQ_NULL) continue;
        j.which = w; j.write = k->req[w] != DP_REQ_ADD; j.gx = dp_nd_data(k->outputs[w]);
        if (n == 0) {                                /* nothing to sum: zeros */
            if (j.write) memset(j.gx, 0, (size_t)ne * dp_dtype_size(j.t));
            continue;
        }
        j.nk = j.nr = 0; j.nred = 1;
        for (d = 0; d < j.g.nd; d++) {
            if (j.g.s[1 + w][d]) j.kax[j.nk++] = d;
            else { j.rax[j.nr++] = d; j.nred *= j.g.dims[d]; }
        }
        dp__kernel_rows(k, ne, n / ne, dp__bgrad_range, &j);
    }
    return 0;
}
/* a gradient operator's outputs: the shapes and dtypes of its forward inputs */
static int dp__infer_grad_inputs(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                 dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int i;
    (void)p; (void)msg; (void)cap;
    if (nin != nout + 1) return -1;
    for (i = 0; i < nout; i++) { os[i] = is[i + 1]; ot[i] = it[i + 1]; }
    return 0;
}
/* _backward_clip: the output gradient where lo <= x <= hi, else 0 (NaN x too) */
DP__VEC_LOOPS static void dp__clipg_f32(int64_t b, int64_t e, void *user) { DP__EW_LOOP(float, 2, (const dp__ew_job *)user, b, e, DP__DE_clip(o_, x_, lo_, hi_)); }
DP__VEC_LOOPS static void dp__clipg_f64(int64_t b, int64_t e, void *user) { DP__EW_LOOP(double, 2, (const dp__ew_job *)user, b, e, DP__DE_clip(o_, x_, lo_, hi_)); }
static void dp__clipg_any(int64_t b, int64_t e, void *user) { DP__EW_BLOCKS((const dp__ew_job *)user, b, e, v_[i_] = DP__DE_clip(v_[i_], w_[i_], lo_, hi_)); }
static int dp__k_clip_grad(const dp_kernel_ctx *k) {
    return dp__ew_grad_apply(k, dp__clipg_f32, dp__clipg_f64, dp__clipg_any, k->params->v[0].f, k->params->v[1].f);
}
#define DP__UNARY_GRAD_KERNEL(name, doc) \
    DP__VEC_LOOPS static void dp__rgf_##name(dp_dtype t, const void *og, const void *x, void *g, int add, int64_t b, int64_t e) { \
        if (t == DP_FLOAT32) DP__UNARY_GRAD_LOOP(float, og, x, g, add, DP__D1_##name, b, e); \
        else DP__UNARY_GRAD_LOOP(double, og, x, g, add, DP__D1_##name, b, e); } \
    static void dp__rg_##name(int64_t b, int64_t e, void *user) { \
        const dp__ew_job *j = (const dp__ew_job *)user; \
        dp__rgf_##name(j->at, j->a, j->b, j->y, j->add, b, e); } \
    static void dp__rgb_##name(int64_t b, int64_t e, void *user) { \
        DP__EW_BLOCKS((const dp__ew_job *)user, b, e, v_[i_] = v_[i_] * DP__D1_##name(w_[i_])); } \
    static int dp__kg_##name(const dp_kernel_ctx *k) { return dp__ew_grad_apply(k, dp__rg_##name, dp__rg_##name, dp__rgb_##name, 0, 0); }
/* A binary gradient's row (dp__bgrad_row_fn) in dtype T, with the
   partial for which (a constant in each loop, so it folds). */
#define DP__BGRAD_ROW(T, DE, W, j, oo, ao, bo, go, sa, sb, n, red) do {                               \
        const T *o_ = (const T *)(j)->og + (oo), *a_ = (const T *)(j)->a + (ao), *b_ = (const T *)(j)->b + (bo); \
        T *g_ = (T *)(j)->gx + (go);                                                                   \
        int64_t i_;                                                                                    \
        if (red) {                                                                                     \
            T s_ = g_[0];                                                                              \
            for (i_ = 0; i_ < (n); i_++) { double x_ = (double)a_[i_ * (sa)], z_ = (double)b_[i_ * (sb)]; s_ = (T)((double)s_ + (double)o_[i_] * DE(x_, z_, W)); } \
            g_[0] = s_;                                                                                \
        } else if (!(sb) && (sa)) { double z_ = (double)b_[0]; for (i_ = 0; i_ < (n); i_++) { double x_ = (double)a_[i_]; g_[i_] = (T)((double)g_[i_] + (double)o_[i_] * DE(x_, z_, W)); } } \
        else if (!(sa) && (sb)) { double x_ = (double)a_[0]; for (i_ = 0; i_ < (n); i_++) { double z_ = (double)b_[i_]; g_[i_] = (T)((double)g_[i_] + (double)o_[i_] * DE(x_, z_, W)); } } \
        else for (i_ = 0; i_ < (n); i_++) { double x_ = (double)a_[i_], z_ = (double)b_[i_]; g_[i_] = (T)((double)g_[i_] + (double)o_[i_] * DE(x_, z_, W)); } \
    } while (0)
#define DP__BGRAD_ROWS(T, name, j, oo, ao, bo, go, sa, sb, n, red) do { \
        if ((j)->which) DP__BGRAD_ROW(T, DP__DE_##name, 1, j, oo, ao, bo, go, sa, sb, n, red); \
        else DP__BGRAD_ROW(T, DP__DE_##name, 0, j, oo, ao, bo, go, sa, sb, n, red); } while (0)
#define DP__BINARY_GRAD_KERNEL(name, doc) \
    DP__VEC_LOOPS static void dp__bgr_##name(const dp__bgrad_job *j, int64_t oo, int64_t ao, int64_t bo, int64_t go, int64_t sa, \
                                             int64_t sb, int64_t n, int red) { \
        if (j->t == DP_FLOAT32) DP__BGRAD_ROWS(float, name, j, oo, ao, bo, go, sa, sb, n, red); \
        else if (j->t == DP_FLOAT64) DP__BGRAD_ROWS(double, name, j, oo, ao, bo, go, sa, sb, n, red); \
        else dp__bgrad_row_any(j, oo, ao, bo, go, sa, sb, n, red); } \
    static int dp__kg_##name(const dp_kernel_ctx *k) { return dp__binary_grad(k, dp__bgr_##name, dp__d_##name); }
/* A _scalar operator's gradient: og * d(x op s)/dx in double, rounded once. */
#define DP__SCALAR_GRAD_KERNEL(name, doc) \
    DP__VEC_LOOPS static void dp__rgs_##name(int64_t b, int64_t e, void *user) { \
        const dp__ew_job *j = (const dp__ew_job *)user; \
        if (j->at == DP_FLOAT32) DP__EW_LOOP(float, 2, j, b, e, o_ * DP__DE_##name(x_, s_, 0)); \
        else DP__EW_LOOP(double, 2, j, b, e, o_ * DP__DE_##name(x_, s_, 0)); } \
    static void dp__rgsb_##name(int64_t b, int64_t e, void *user) { \
        DP__EW_BLOCKS((const dp__ew_job *)user, b, e, v_[i_] = v_[i_] * DP__DE_##name(w_[i_], s_, 0)); } \
    static int dp__kg_##name##_scalar(const dp_kernel_ctx *k) { \
        return dp__ew_grad_apply(k, dp__rgs_##name, dp__rgs_##name, dp__rgsb_##name, 0, 0); }
DP__UNARY_OPS(DP__UNARY_GRAD_KERNEL)
DP__BINARY_OPS(DP__BINARY_GRAD_KERNEL)
DP__SCALAR_OPS(DP__SCALAR_GRAD_KERNEL)
/* Registers a differentiable forward operator together with its gradient
   operator grad_name: inputs (ograd, then the forward's inputs, or its
   outputs when op->grad_needs says DP_GRAD_OUTPUTS), outputs the inputs'
   gradients, with the forward's scalar, parameters and resources. Unless
   op->grad_needs is set, the gradient reads the output gradient and the
   inputs. grad_inplace
   is the gradient operator's inplace bits: 1 for the element-wise ones,
   which read each output-gradient element just before writing it. */
static dp_result dp__register_differentiable(dp_operator *op, const char *grad_name, const char *grad_doc, dp_kernel_fn grad_kernel,
                                             unsigned grad_inplace) {
    dp_operator g;
    dp_result r;
    op->gradient = grad_name;
    if (!op->grad_needs) op->grad_needs = DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS;
    if ((r = dp__register(op)) != DP_OK) return r;
    memset(&g, 0, sizeof g);
    g.name = grad_name; g.doc = grad_doc; g.num_inputs = 1 + op->num_inputs; g.num_outputs = op->num_inputs;
    g.infer = dp__infer_grad_inputs; g.forward_cpu = grad_kernel; g.takes_scalar = op->takes_scalar;
    g.params = op->params; g.num_params = op->num_params; g.resources = op->resources; g.inplace = grad_inplace;
    return dp__register(&g);
}
/* >>reductions ------------------------------------------------------------------
   sum, mean, max, min over the axes in "axis" (a tuple; empty: all axes;
   negative counts from the end), keeping them as size 1 with keepdims;
   argmax over one axis (or the flattened array), giving int64 indices. One
   walk serves them all: an odometer over the input, with each input
   element's output element found through strides that are 0 on the
   reduced axes. */
static const dp_param_def dp__reduce_params[] = {
    {"axis", DP_PARAM_SHAPE, "()", 0, 0, NULL, "the axes to reduce; () for all"},
    {"keepdims", DP_PARAM_BOOL, "false", 0, 0, NULL, "keep reduced axes, with size 1"},
};
/* Which axes of s are reduced (mask bits); -1 with msg if an axis is bad. */
static int dp__reduce_mask(const dp_params *p, const dp_shape *s, char *msg, size_t cap) {
    const dp_shape *ax = &p->v[0].shape;
    int i, mask = 0;
    if (ax->ndim == 0) return (1 << s->ndim) - 1;
    for (i = 0; i < ax->ndim; i++) {
        int64_t a = ax->dims[i] < 0 ? ax->dims[i] + s->ndim : ax->dims[i];
        if (a < 0 || a >= s->ndim || (mask & (1 << a))) {
            snprintf(msg, cap, "parameter 'axis': axis %lld is out of range or repeated for %d dims", (long long)ax->dims[i], (int)s->ndim);
            return -1;
        }
        mask |= 1 << a;
    }
    return mask;
}
static void dp__reduced_shape(const dp_shape *s, int mask, int keepdims, dp_shape *out) {
    int i;
    memset(out, 0, sizeof *out);
    for (i = 0; i < s->ndim; i++) {
        if (!(mask & (1 << i))) out->dims[out->ndim++] = s->dims[i];
        else if (keepdims) out->dims[out->ndim++] = 1;
    }
}
static int dp__infer_reduce(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                            dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int mask = dp__reduce_mask(p, &is[0], msg, cap);
    (void)nin; (void)nout;
    if (mask < 0) return -1;
    dp__reduced_shape(&is[0], mask, (int)p->v[1].i, os);
    *ot = it[0];
    return 0;
}
/* max, min and argmax have no identity: reducing an empty axis into a
   non-empty result is refused, as NumPy refuses it ("zero-size array to
   reduction operation maximum which has no identity"); an empty result
   reduces nothing and is fine. Returns -1 with msg. */
static int dp__no_identity_check(const char *what, const dp_shape *s, int mask, const dp_shape *out, char *msg, size_t cap) {
    int d;
    char sb[160];
    if (dp_shape_size(out) == 0) return 0;
    for (d = 0; d < s->ndim; d++)
        if ((mask & (1 << d)) && s->dims[d] == 0) {
            snprintf(msg, cap, "%s over axis %d of shape %s, which is empty: there is no identity to give (NumPy refuses it too)", what, d,
                     dp__shape_str(s, sb, sizeof sb));
            return -1;
        }
    return 0;
}
static int dp__infer_reduce_no_identity(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                        dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    if (dp__infer_reduce(p, nin, is, it, nout, os, ot, msg, cap)) return -1;
    return dp__no_identity_check("max or min", &is[0], dp__reduce_mask(p, &is[0], msg, cap), os, msg, cap);
}
/* Output-element strides over the input's axes (0 on reduced axes). */
static void dp__reduce_strides(const dp_shape *s, int mask, int64_t *st) {
    int64_t acc = 1;
    int d;
    for (d = s->ndim - 1; d >= 0; d--) {
        if (mask & (1 << d)) st[d] = 0;
        else { st[d] = acc; acc *= s->dims[d]; }
    }
}
enum { DP__RED_SUM, DP__RED_MEAN, DP__RED_MAX, DP__RED_MIN, DP__RED_ARGMAX };
/* acc[o] over the input; acc must hold the output's element count. The
   walks are instantiated per dtype (DP__BY_DTYPE: the element load's
   switch folds). */
#define DP__RED_WALK(T) do {                                                                                          \
        for (i = 0; i < n; i++) {                                                                                     \
            double v = dp__load_elem(x, T, i);                                                                        \
            if (kind == DP__RED_MAX) { if (v > acc[o] || v != v) acc[o] = v; }                                        \
            else if (kind == DP__RED_MIN) { if (v < acc[o] || v != v) acc[o] = v; }                                   \
            else acc[o] += v;                                                                                         \
            dp__odometer_next(s->ndim, s->dims, idx, st, &o, NULL, NULL);                                             \
        }                                                                                                             \
    } while (0)
static void dp__reduce_walk(const void *x, dp_dtype t, const dp_shape *s, int mask, int kind, double *acc, int64_t nout) {
    int64_t n = dp_shape_size(s), st[DP_MAX_DIMS], idx[DP_MAX_DIMS] = {0}, i, o = 0;
    dp__reduce_strides(s, mask, st);
    for (i = 0; i < nout; i++) acc[i] = kind == DP__RED_MAX ? -HUGE_VAL : kind == DP__RED_MIN ? HUGE_VAL : 0;
    DP__BY_DTYPE(t, DP__RED_WALK(T_));
    if (kind == DP__RED_MEAN && nout) {
        double count = nout ? (double)n / (double)nout : 0;
        for (i = 0; i < nout; i++) acc[i] = count ? acc[i] / count : NAN;
    }
}
/* The same walk in int64 for an integer array's sum (wrapping), max and
   min: exact where double would round beyond 2^53. */
#define DP__RED_WALK_INT(T) do {                                                                                      \
        for (i = 0; i < n; i++) {                                                                                     \
            int64_t v = dp__load_int(x, T, i);                                                                        \
            if (kind == DP__RED_MAX) { if (v > acc[o]) acc[o] = v; }                                                  \
            else if (kind == DP__RED_MIN) { if (v < acc[o]) acc[o] = v; }                                             \
            else acc[o] = dp__i_add(acc[o], v);                                                                       \
            dp__odometer_next(s->ndim, s->dims, idx, st, &o, NULL, NULL);                                             \
        }                                                                                                             \
    } while (0)
static void dp__reduce_walk_int(const void *x, dp_dtype t, const dp_shape *s, int mask, int kind, int64_t *acc, int64_t nout) {
    int64_t n = dp_shape_size(s), st[DP_MAX_DIMS], idx[DP_MAX_DIMS] = {0}, i, o = 0;
    dp__reduce_strides(s, mask, st);
    for (i = 0; i < nout; i++) acc[i] = kind == DP__RED_MAX ? INT64_MIN : kind == DP__RED_MIN ? INT64_MAX : 0;
    DP__BY_DTYPE(t, DP__RED_WALK_INT(T_));
}
/* Large reductions split over the range loop. When the reduced axes are
   one run (size-1 axes aside), the input is (outer, len, inner), output
   element o = a inner + b summing x[(a len + j) inner + b] over j. With
   several outputs per chunk's worth of input, chunks are runs of outputs
   and each output is reduced over j in order, as the serial walk does: the
   same bits. With few outputs, chunks are runs of j (at most 256, sized
   by the shape alone), each giving partial results that are combined in
   chunk order: the same bits at any worker count (but not the serial
   walk's, which serves arrays under DP__PAR_MIN elements and other axis
   sets). An integer array's sum, max and min in int64 and argmax split the
   same way, and there the grouping changes nothing: wrapping addition,
   max and min are associative and commutative, and argmax's partial
   results, combined in chunk order, keep the first best as the serial
   walk does. */
typedef struct dp__red_job {
    const void *x;
    dp_dtype t;
    int kind, in_int;                        /* DP__RED_*; in_int: reduced in int64 (argmax: compared as integers) */
    int64_t outer, len, inner, nout, og, jc; /* outputs per chunk; j per chunk (0: chunks are outputs) */
    double *acc, *part;                      /* the result; jc: partials, nout per chunk (int64 bits when in_int) */
    int64_t *where, *wpart;                  /* argmax: the index of each result and of each partial */
} dp__red_job;
/* (outer, len, inner) of s for mask, or 0 when the reduced axes are not one run */
static int dp__reduce_olen(const dp_shape *s, int mask, int64_t *outer, int64_t *len, int64_t *inner) {
    int d, seen = 0;                          /* 0: kept before, 1: in the run, 2: kept after */
    *outer = *len = *inner = 1;
    for (d = 0; d < s->ndim; d++) {
        int red = (mask >> d) & 1;
        if (s->dims[d] == 1) continue;
        if (red && seen == 2) return 0;
        if (red) seen = 1;
        else if (seen == 1) seen = 2;
        *(red ? len : seen ? inner : outer) *= s->dims[d];
    }
    return 1;
}
#define DP__RED_FOLD(A, V) do { double v_ = (V); \
        if (kind == DP__RED_MAX) { if (v_ > (A) || v_ != v_) (A) = v_; } \
        else if (kind == DP__RED_MIN) { if (v_ < (A) || v_ != v_) (A) = v_; } \
        else (A) += v_; } while (0)
#define DP__RED_LOOPS(LD) \
    if (J->inner == 1) { for (j = j0; j < j1; j++) DP__RED_FOLD(ac[0], LD(base + j)); } \
    else for (j = j0; j < j1; j++) for (b = b0; b < b1; b++) DP__RED_FOLD(ac[b], LD(base + j * J->inner + b));
/* acc[o] for outputs [o0, o1) over j in [j0, j1) */
static void dp__red_block(const dp__red_job *J, double *acc, int64_t o0, int64_t o1, int64_t j0, int64_t j1) {
    int kind = J->kind;
    int64_t a, o;
    const float *xf = (const float *)J->x;
    const double *xd = (const double *)J->x;
    for (o = o0; o < o1; o++) acc[o] = kind == DP__RED_MAX ? -HUGE_VAL : kind == DP__RED_MIN ? HUGE_VAL : 0;
    for (a = o0 / J->inner; a * J->inner < o1; a++) {
        int64_t b0 = o0 > a * J->inner ? o0 - a * J->inner : 0, b1 = o1 - a * J->inner < J->inner ? o1 - a * J->inner : J->inner;
        int64_t base = a * J->len * J->inner, j, b;
        double *ac = acc + a * J->inner;
#define DP__LD_F(i) xf[i]
#define DP__LD_D(i) xd[i]
#define DP__LD_G(i) dp__load_elem(J->x, T_, i)
        if (J->t == DP_FLOAT32) { DP__RED_LOOPS(DP__LD_F) }
        else if (J->t == DP_FLOAT64) { DP__RED_LOOPS(DP__LD_D) }
        else DP__BY_DTYPE(J->t, DP__RED_LOOPS(DP__LD_G));      /* per dtype: the load's switch folds */
#undef DP__LD_F
#undef DP__LD_D
#undef DP__LD_G
    }
}
#undef DP__RED_LOOPS
#define DP__RED_FOLD_INT(A, V) do { int64_t v_ = (V); \
        if (kind == DP__RED_MAX) { if (v_ > (A)) (A) = v_; } \
        else if (kind == DP__RED_MIN) { if (v_ < (A)) (A) = v_; } \
        else (A) = dp__i_add((A), v_); } while (0)
/* Whether argmax's candidate v (at a later index) beats the best so far:
   bigger, or a NaN where the best is not one (the first NaN wins) */
#define DP__ARGMAX_BEATS(V, BEST) ((BEST) == (BEST) && ((V) > (BEST) || (V) != (V)))
/* dp__red_block of an integer array in int64; argmax's the same way, its
   best values in acc (int64 bits when in_int) and their indices in where;
   per dtype (DP__BY_DTYPE) */
#define DP__RED_INT_LOOPS(T) do {                                                                                     \
        for (j = j0; j < j1; j++)                                                                                     \
            for (b = b0, o = a * J->inner + b0, i = base + j * J->inner + b0; b < b1; b++, o++, i++) {                \
                if (kind != DP__RED_ARGMAX) DP__RED_FOLD_INT(acc[o], dp__load_int(J->x, T, i));                       \
                else if (J->in_int) { int64_t v = dp__load_int(J->x, T, i); if (where[o] < 0 || v > acc[o]) { acc[o] = v; where[o] = j; } } \
                else { double v = dp__load_elem(J->x, T, i); if (where[o] < 0 || DP__ARGMAX_BEATS(v, accd[o])) { accd[o] = v; where[o] = j; } } \
            }                                                                                                         \
    } while (0)
static void dp__red_block_int(const dp__red_job *J, double *accd, int64_t *where, int64_t o0, int64_t o1, int64_t j0, int64_t j1) {
    int kind = J->kind;
    int64_t a, o, *acc = (int64_t *)(void *)accd;
    for (o = o0; o < o1; o++) {
        if (kind == DP__RED_ARGMAX) where[o] = -1;
        else acc[o] = kind == DP__RED_MAX ? INT64_MIN : kind == DP__RED_MIN ? INT64_MAX : 0;
    }
    for (a = o0 / J->inner; a * J->inner < o1; a++) {
        int64_t b0 = o0 > a * J->inner ? o0 - a * J->inner : 0, b1 = o1 - a * J->inner < J->inner ? o1 - a * J->inner : J->inner;
        int64_t base = a * J->len * J->inner, j, b, i;
        DP__BY_DTYPE(J->t, DP__RED_INT_LOOPS(T_));

    }
}
/* outputs [o0, o1) over j in [j0, j1), into the results (slot -1) or
   chunk slot's partial results */
static void dp__red_run(const dp__red_job *J, int64_t slot, int64_t o0, int64_t o1, int64_t j0, int64_t j1) {
    double *acc = slot < 0 ? J->acc : J->part + slot * J->nout;
    int64_t *where = J->kind != DP__RED_ARGMAX ? NULL : slot < 0 ? J->where : J->wpart + slot * J->nout;
    if (J->in_int || J->kind == DP__RED_ARGMAX) dp__red_block_int(J, acc, where, o0, o1, j0, j1);
    else dp__red_block(J, acc, o0, o1, j0, j1);
}
static void dp__red_range(int64_t begin, int64_t end, void *user) {
    const dp__red_job *J = (const dp__red_job *)user;
    int64_t c;
    if (!J->jc) { dp__red_run(J, -1, begin * J->og, end * J->og < J->nout ? end * J->og : J->nout, 0, J->len); return; }
    for (c = begin; c < end; c++) dp__red_run(J, c, 0, J->nout, c * J->jc, (c + 1) * J->jc < J->len ? (c + 1) * J->jc : J->len);
}
/* the results from the chunks' partial results, combined in chunk order */
static void dp__red_combine(const dp__red_job *J, int64_t chunks) {
    int kind = J->kind;
    int64_t o, c, *iacc = (int64_t *)(void *)J->acc, *ipart = (int64_t *)(void *)J->part;
    for (o = 0; o < J->nout; o++) {
        J->acc[o] = J->part[o];                                   /* chunk 0's, bytes as they are */
        if (kind == DP__RED_ARGMAX) J->where[o] = J->wpart[o];
        for (c = 1; c < chunks; c++) {
            int64_t p = c * J->nout + o;
            if (kind == DP__RED_ARGMAX) {
                int beats = J->in_int ? ipart[p] > iacc[o] : DP__ARGMAX_BEATS(J->part[p], J->acc[o]);
                if (beats) { J->acc[o] = J->part[p]; J->where[o] = J->wpart[p]; }
            } else if (J->in_int) DP__RED_FOLD_INT(iacc[o], ipart[p]);
            else { double v = J->part[p]; DP__RED_FOLD(J->acc[o], v); }
        }
    }
}
#undef DP__RED_FOLD_INT
/* acc[nout] as dp__reduce_walk leaves it (in_int: as dp__reduce_walk_int
   does, int64 bits; argmax: also the indices, in (*where)[nout]), over the
   range loop; returns where the result is (acc, or the temporary space
   when it had to grow: acc and *where are then moved), NULL when this
   reduction is not one for it. */
static double *dp__reduce_par(const dp_kernel_ctx *k, const void *x, dp_dtype t, const dp_shape *s, int mask, int kind, int in_int,
                              double *acc, int64_t **where, int64_t nout) {
    dp_engine *eng = k->rc ? k->rc->engine : NULL;
    dp__red_job J;
    int64_t n = dp_shape_size(s), chunks, o, slots = kind == DP__RED_ARGMAX ? 2 : 1;
    if (!eng || n < DP__PAR_MIN || !nout || !dp__reduce_olen(s, mask, &J.outer, &J.len, &J.inner)) return NULL;
    J.x = x; J.t = t; J.kind = kind; J.in_int = in_int; J.nout = nout; J.acc = acc; J.part = NULL; J.jc = 0;
    J.where = where ? *where : NULL; J.wpart = NULL;
    J.og = (DP__PAR_GRAIN + J.len - 1) / J.len;                  /* outputs per chunk */
    chunks = (nout + J.og - 1) / J.og;
    if (chunks < 4) {                                            /* few outputs: split along the axis */
        J.jc = (DP__PAR_GRAIN + nout - 1) / nout;
        if (J.jc < (J.len + 255) / 256) J.jc = (J.len + 255) / 256;
        chunks = (J.len + J.jc - 1) / J.jc;
        if (chunks < 2) return NULL;
        /* the temp space moves: acc first, then the partials (argmax: then
           the indices and theirs) */
        if ((J.part = (double *)dp_temp_space(eng, k->rc->ctx, sizeof(double) * (size_t)(slots * nout * (chunks + 1)))) == NULL) return NULL;
        J.acc = acc = J.part;
        J.part += nout;
        if (where) { J.where = *where = (int64_t *)(void *)(J.part + nout * chunks); J.wpart = J.where + nout; }
    }
    {
        dp_range_desc d;
        d.n = chunks; d.grain = 1; d.fn = dp__red_range; d.user = &J; d.deterministic = 1;
        if (dp_parallel_for(eng, &d) != DP_OK) dp__red_range(0, chunks, &J);
    }
    if (J.jc) dp__red_combine(&J, chunks);
    if (kind == DP__RED_MEAN) {
        double count = (double)n / (double)nout;
        for (o = 0; o < nout; o++) acc[o] /= count;
    }
    return acc;
}
#undef DP__RED_FOLD
/* The reduction's result in a temporary buffer of doubles. */
static double *dp__reduce_temp(const dp_kernel_ctx *k, int64_t n) {
    return (double *)dp_temp_space(k->rc->engine, k->rc->ctx, sizeof(double) * (size_t)(n ? n : 1));
}
static int dp__reduce_kernel(const dp_kernel_ctx *k, int kind) {
    const dp_shape *s = dp_nd_shape(k->inputs[0]);
    int64_t nout = dp_shape_size(dp_nd_shape(k->outputs[0])), i;
    double *acc = dp__reduce_temp(k, nout), *par;
    char msg[128];
    int mask = dp__reduce_mask(k->params, s, msg, sizeof msg);
    if (!acc) { dp_set_error(k->rc, "out of memory for the reduction"); return DP_ERROR_OUT_OF_MEMORY; }
    if (kind != DP__RED_MEAN && dp__dtype_is_int(dp_nd_dtype(k->inputs[0])) && dp__dtype_is_int(dp_nd_dtype(k->outputs[0]))) {
        int64_t *iacc = (int64_t *)(void *)acc;   /* the same 8 bytes per output */
        if ((par = dp__reduce_par(k, dp_nd_data(k->inputs[0]), dp_nd_dtype(k->inputs[0]), s, mask, kind, 1, acc, NULL, nout)) != NULL)
            iacc = (int64_t *)(void *)par;
        else dp__reduce_walk_int(dp_nd_data(k->inputs[0]), dp_nd_dtype(k->inputs[0]), s, mask, kind, iacc, nout);
        for (i = 0; i < nout && k->req[0] != DP_REQ_NULL; i += DP__BLK)
            dp__blk_store_int(dp_nd_data(k->outputs[0]), dp_nd_dtype(k->outputs[0]), i, nout - i < DP__BLK ? nout - i : DP__BLK, iacc + i, k->req[0]);
        return 0;
    }
    if ((par = dp__reduce_par(k, dp_nd_data(k->inputs[0]), dp_nd_dtype(k->inputs[0]), s, mask, kind, 0, acc, NULL, nout)) != NULL) acc = par;
    else dp__reduce_walk(dp_nd_data(k->inputs[0]), dp_nd_dtype(k->inputs[0]), s, mask, kind, acc, nout);
    for (i = 0; i < nout && k->req[0] != DP_REQ_NULL; i += DP__BLK)
        dp__blk_store(dp_nd_data(k->outputs[0]), dp_nd_dtype(k->outputs[0]), i, nout - i < DP__BLK ? nout - i : DP__BLK, acc + i, k->req[0]);
    return 0;
}
static int dp__k_sum(const dp_kernel_ctx *k) { return dp__reduce_kernel(k, DP__RED_SUM); }
static int dp__k_mean(const dp_kernel_ctx *k) { return dp__reduce_kernel(k, DP__RED_MEAN); }
static int dp__k_max(const dp_kernel_ctx *k) { return dp__reduce_kernel(k, DP__RED_MAX); }
static int dp__k_min(const dp_kernel_ctx *k) { return dp__reduce_kernel(k, DP__RED_MIN); }
/* Gradients, inputs (ograd, x): sum gives every element the output
   gradient, mean that over the count, max and min give it to the elements
   equal to the result (recomputed here) and 0 to the rest. */
typedef struct dp__rg_job { const void *og, *x; void *g; dp_dtype t; const double *best; double scale; int64_t len, inner; dp_req req; } dp__rg_job;
/* One row of n input elements from i, their output element from o stepping
   by so (1 along a kept axis, 0 along a reduced one): g[i] = og[o] * scale
   in double, 0 where x[i] is not best[o] (max, min), stored rounded once by
   req (add-to: added in double first). float32 and float64 in typed loops,
   the other dtypes in blocks (as doubles: what dp__store_elem converts). */
#define DP__RG_BEST(T) const T *x_ = (const T *)J->x + i; const double *b_ = J->best + o;
#define DP__RG_LOOP(T, DECL, V) do {                                                                                    \
        const T *og_ = (const T *)J->og + o;                                                                            \
        T *g_ = (T *)J->g + i;                                                                                          \
        const double sc_ = J->scale;                                                                                    \
        int64_t r_;                                                                                                     \
        DECL                                                                                                            \
        if (J->req == DP_REQ_ADD) for (r_ = 0; r_ < n; r_++) g_[r_] = (T)((V) + (double)g_[r_]);                        \
        else for (r_ = 0; r_ < n; r_++) g_[r_] = (T)(V);                                                                \
    } while (0)
#define DP__RG_V(SO) ((double)og_[(SO) * r_] * sc_)
#define DP__RG_VB(SO) ((double)x_[r_] != b_[(SO) * r_] ? 0.0 : (double)og_[(SO) * r_] * sc_)
#define DP__RG_TYPED(T, SUF)                                                                                            \
DP__VEC_LOOPS static void dp__rg_row_##SUF(const dp__rg_job *J, int64_t i, int64_t o, int64_t so, int64_t n) {          \
    if (so && J->best) DP__RG_LOOP(T, DP__RG_BEST(T), DP__RG_VB(1));                                                    \
    else if (so) DP__RG_LOOP(T, , DP__RG_V(1));                                                                         \
    else if (J->best) DP__RG_LOOP(T, DP__RG_BEST(T), DP__RG_VB(0));                                                     \
    else DP__RG_LOOP(T, , DP__RG_V(0));                                                                                 \
}
DP__RG_TYPED(float, f32)
DP__RG_TYPED(double, f64)
#undef DP__RG_TYPED
#undef DP__RG_V
#undef DP__RG_VB
#undef DP__RG_LOOP
static void dp__rg_row(const dp__rg_job *J, int64_t i, int64_t o, int64_t so, int64_t n) {
    double v[DP__BLK], x[DP__BLK];
    int64_t k, m, r;
    if (J->t == DP_FLOAT32) { dp__rg_row_f32(J, i, o, so, n); return; }
    if (J->t == DP_FLOAT64) { dp__rg_row_f64(J, i, o, so, n); return; }
    for (k = 0; k < n; k += m) {
        m = n - k < DP__BLK ? n - k : DP__BLK;
        dp__blk_load(J->og, J->t, o + k * so, so, m, v);
        for (r = 0; r < m; r++) v[r] *= J->scale;
        if (J->best) {
            dp__blk_load(J->x, J->t, i + k, 1, m, x);
            for (r = 0; r < m; r++) if (x[r] != J->best[o + (k + r) * so]) v[r] = 0;
        }
        dp__blk_store(J->g, J->t, i + k, m, v, J->req);
    }
}
/* input elements [begin, end) where the reduced axes are one run
   (outer, len, inner): rows of inner elements, or of len when inner is 1 */
static void dp__reduce_grad_range(int64_t begin, int64_t end, void *user) {
    const dp__rg_job *J = (const dp__rg_job *)user;
    int64_t i = begin, rl = J->inner > 1 ? J->inner : J->len;
    while (i < end) {
        int64_t in = i % rl, m = rl - in < end - i ? rl - in : end - i;
        int64_t o = J->inner > 1 ? i / (J->len * J->inner) * J->inner + in : i / J->len;
        dp__rg_row(J, i, o, J->inner > 1, m);
        i += m;
    }
}
static int dp__reduce_grad(const dp_kernel_ctx *k, int kind) {
    const dp_shape *s = dp_nd_shape(k->inputs[1]);
    const void *og = dp_nd_data(k->inputs[0]), *x = dp_nd_data(k->inputs[1]);
    void *g = dp_nd_data(k->outputs[0]);
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    int64_t nout = dp_shape_size(dp_nd_shape(k->inputs[0])), n = dp_shape_size(s), st[DP_MAX_DIMS], idx[DP_MAX_DIMS] = {0}, i, o = 0, outer, rl;
    double *best = NULL, scale = 1;
    char msg[128];
    int mask = dp__reduce_mask(k->params, s, msg, sizeof msg), nd = s->ndim;
    dp__rg_job J;
    if (k->req[0] == DP_REQ_NULL || n == 0) return 0;
    if (kind == DP__RED_MAX || kind == DP__RED_MIN) {
        double *par;
        if ((best = dp__reduce_temp(k, nout)) == NULL) { dp_set_error(k->rc, "out of memory for the reduction"); return DP_ERROR_OUT_OF_MEMORY; }
        if ((par = dp__reduce_par(k, x, t, s, mask, kind, 0, best, NULL, nout)) != NULL) best = par;
        else dp__reduce_walk(x, t, s, mask, kind, best, nout);
    }
    if (kind == DP__RED_MEAN && nout) scale = (double)nout / (double)(n ? n : 1);
    J.og = og; J.x = x; J.g = g; J.t = t; J.best = best; J.scale = scale; J.req = k->req[0];
    if (n >= DP__PAR_MIN && dp__reduce_olen(s, mask, &outer, &J.len, &J.inner)) {
        dp__kernel_range(k, n, dp__reduce_grad_range, &J);
        return 0;
    }
    /* rows along the innermost axis, their output elements by the strides
       (a 0-d array: one row of one) */
    dp__reduce_strides(s, mask, st);
    rl = nd ? s->dims[nd - 1] : 1;
    for (i = 0; i < n; i += rl) {
        dp__rg_row(&J, i, o, nd ? st[nd - 1] : 0, rl);
        if (nd > 1) dp__odometer_next(nd - 1, s->dims, idx, st, &o, NULL, NULL);
    }
    return 0;
}
static int dp__kg_sum(const dp_kernel_ctx *k) { return dp__reduce_grad(k, DP__RED_SUM); }
static int dp__kg_mean(const dp_kernel_ctx *k) { return dp__reduce_grad(k, DP__RED_MEAN); }
static int dp__kg_max(const dp_kernel_ctx *k) { return dp__reduce_grad(k, DP__RED_MAX); }
static int dp__kg_min(const dp_kernel_ctx *k) { return dp__reduce_grad(k, DP__RED_MIN); }
/* argmax: parameter axis is one axis, or () for the flattened array */
static int dp__infer_argmax(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                            dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int mask;
    (void)it; (void)nin; (void)nout;
    if (p->v[0].shape.ndim > 1) { snprintf(msg, cap, "parameter 'axis': argmax takes one axis or ()"); return -1; }
    if ((mask = dp__reduce_mask(p, &is[0], msg, cap)) < 0) return -1;
    dp__reduced_shape(&is[0], mask, (int)p->v[1].i, os);
    *ot = DP_INT64;
    return dp__no_identity_check("argmax", &is[0], mask, os, msg, cap);
}
/* The first largest element wins; for floats the first NaN, as NumPy's.
   Integers compare as integers. Per output: the best value (as the
   input's dtype says: double or int64, 8 bytes each) and its index. */
/* argmax's serial walk, per dtype (DP__BY_DTYPE) */
#define DP__ARGMAX_WALK(T) do {                                                                                       \
        for (i = 0; i < n; i++) {                                                                                     \
            int better;                                                                                               \
            if (in_int) {                                                                                             \
                int64_t v = dp__load_int(x, T, i);                                                                    \
                if ((better = where[o] < 0 || v > ibest[o]) != 0) ibest[o] = v;                                       \
            } else {                                                                                                  \
                double v = dp__load_elem(x, T, i);                                                                    \
                if ((better = where[o] < 0 || DP__ARGMAX_BEATS(v, best[o])) != 0) best[o] = v;                        \
            }                                                                                                         \
            if (better) where[o] = axis >= 0 ? idx[axis] : i;                                                         \
            dp__odometer_next(s->ndim, s->dims, idx, st, &o, NULL, NULL);                                             \
        }                                                                                                             \
    } while (0)
static int dp__k_argmax(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[0]);
    const void *x = dp_nd_data(k->inputs[0]);
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    int64_t nout = dp_shape_size(dp_nd_shape(k->outputs[0])), n = dp_shape_size(s), st[DP_MAX_DIMS], idx[DP_MAX_DIMS] = {0}, i, o = 0;
    double *best = dp__reduce_temp(k, 2 * nout);
    int64_t *ibest = (int64_t *)(void *)best, *where = ibest ? ibest + nout : NULL;
    char msg[128];
    int d, mask = dp__reduce_mask(k->params, s, msg, sizeof msg), axis = -1, in_int = dp__dtype_is_int(t);
    if (!best) { dp_set_error(k->rc, "out of memory for argmax"); return DP_ERROR_OUT_OF_MEMORY; }
    for (d = 0; d < s->ndim; d++) if (k->params->v[0].shape.ndim == 1 && (mask & (1 << d))) axis = d;
    /* split, the index along the run of reduced axes is the index argmax
       gives: the axis's own, or the flat one when every axis is reduced */
    if (dp__reduce_par(k, x, t, s, mask, DP__RED_ARGMAX, in_int, best, &where, nout)) {
        for (i = 0; i < nout; i++) dp__store_int(dp_nd_data(k->outputs[0]), DP_INT64, i, where[i], k->req[0]);
        return 0;
    }
    for (i = 0; i < nout; i++) where[i] = -1;
    dp__reduce_strides(s, mask, st);
    DP__BY_DTYPE(t, DP__ARGMAX_WALK(T_));
    for (i = 0; i < nout; i++) dp__store_int(dp_nd_data(k->outputs[0]), DP_INT64, i, where[i], k->req[0]);
    return 0;
}
#undef DP__ARGMAX_BEATS
static void dp__register_reductions(void) {
    static const struct { const char *name, *doc; dp_kernel_fn fwd, grad; } r[] = {
        {"sum", "the sum over the axes", dp__k_sum, dp__kg_sum}, {"mean", "the mean over the axes", dp__k_mean, dp__kg_mean},
        {"max", "the maximum over the axes; an empty axis (with a non-empty result) is refused, as NumPy refuses it", dp__k_max, dp__kg_max},
        {"min", "the minimum over the axes; an empty axis (with a non-empty result) is refused, as NumPy refuses it", dp__k_min, dp__kg_min}};
    static const char *grad_names[4] = {"_backward_sum", "_backward_mean", "_backward_max", "_backward_min"};
    dp_operator op;
    int i;
    for (i = 0; i < 4; i++) {
        memset(&op, 0, sizeof op);
        op.name = r[i].name; op.doc = r[i].doc; op.num_inputs = 1; op.num_outputs = 1;
        op.params = dp__reduce_params; op.num_params = 2; op.infer = i < 2 ? dp__infer_reduce : dp__infer_reduce_no_identity;
        op.forward_cpu = r[i].fwd;
        op.resources = DP_RESOURCE_TEMP;
        dp__register_differentiable(&op, grad_names[i], "gradient of a reduction", r[i].grad, 0);
    }
    memset(&op, 0, sizeof op);
    op.name = "argmax"; op.doc = "the index of the largest element along one axis (or of the flattened array), as int64; an empty axis "
                                 "(with a non-empty result) is refused, as NumPy refuses it";
    op.num_inputs = 1; op.num_outputs = 1; op.params = dp__reduce_params; op.num_params = 2;
    op.infer = dp__infer_argmax; op.forward_cpu = dp__k_argmax; op.resources = DP_RESOURCE_TEMP;
    dp__register(&op);
}
/* >>softmax, transpose, concat, one_hot ----------------------------------------
   A softmax over axis a sees the array as (outer, len, inner): element
   (o, j, i) is at (o * len + j) * inner + i. */
static const dp_param_def dp__axis_params[] = {{"axis", DP_PARAM_INT, "-1", -8, 7, NULL, "the axis (negative: from the end)"}};
static int dp__axis_split(const dp_shape *s, int64_t axis, int64_t *outer, int64_t *len, int64_t *inner) {
    int d;
    if (axis < 0) axis += s->ndim;
    if (axis < 0 || axis >= s->ndim) return -1;
    *outer = 1; *inner = 1; *len = s->dims[axis];
    for (d = 0; d < axis; d++) *outer *= s->dims[d];
    for (d = (int)axis + 1; d < s->ndim; d++) *inner *= s->dims[d];
    return 0;
}
static int dp__infer_axis(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                          dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int64_t o, l, i;
    (void)nin; (void)nout;
    if (dp__axis_split(&is[0], p->v[0].i, &o, &l, &i)) { snprintf(msg, cap, "parameter 'axis' = %lld: the input has %d dims", (long long)p->v[0].i, (int)is[0].ndim); return -1; }
    *os = is[0]; *ot = it[0];
    return 0;
}
/* y = softmax (log 0) or log_softmax (log 1) of x along the row (o, ., i);
   the row's maximum is subtracted first, so exp never overflows. */
/* A row's maximum and sum of exp(x - max): what every softmax form needs.
   The row functions are instantiated per dtype (DP__BY_DTYPE: T_ a
   constant, so the element functions' switch folds into a typed load or
   store), the dtype switched on once a row; the request once a row too. */
#define DP__SM_STATS(T, x, base, len, inner, mx, sum) do {                                                            \
        int64_t j_;                                                                                                   \
        *(mx) = -HUGE_VAL; *(sum) = 0;                                                                                \
        for (j_ = 0; j_ < (len); j_++) { double v_ = dp__load_elem(x, T, (base) + j_ * (inner)); if (v_ > *(mx)) *(mx) = v_; } \
        for (j_ = 0; j_ < (len); j_++) *(sum) += exp(dp__load_elem(x, T, (base) + j_ * (inner)) - *(mx));             \
    } while (0)
static void dp__row_stats(const void *x, dp_dtype t, int64_t base, int64_t len, int64_t inner, double *mx, double *sum) {
    DP__BY_DTYPE(t, DP__SM_STATS(T_, x, base, len, inner, mx, sum));
}
/* y's row by req (write or add-to, R a constant): softmax, or log_softmax */
#define DP__SM_ROW(T, R, x, y, base, len, inner, log_form) do {                                                        \
        double mx_, sum_;                                                                                             \
        int64_t j_;                                                                                                   \
        DP__SM_STATS(T, x, base, len, inner, &mx_, &sum_);                                                            \
        if (log_form) for (j_ = 0; j_ < (len); j_++)                                                                  \
            dp__store_elem(y, T, (base) + j_ * (inner), dp__f_log_softmax(dp__load_elem(x, T, (base) + j_ * (inner)), mx_, sum_), R); \
        else for (j_ = 0; j_ < (len); j_++)                                                                           \
            dp__store_elem(y, T, (base) + j_ * (inner), dp__f_softmax(dp__load_elem(x, T, (base) + j_ * (inner)), mx_, sum_), R); \
    } while (0)
static void dp__softmax_row(const void *x, void *y, dp_dtype t, int64_t base, int64_t len, int64_t inner, int log_form, dp_req req) {
    if (req == DP_REQ_ADD) DP__BY_DTYPE(t, DP__SM_ROW(T_, DP_REQ_ADD, x, y, base, len, inner, log_form));
    else if (req != DP_REQ_NULL) DP__BY_DTYPE(t, DP__SM_ROW(T_, DP_REQ_WRITE, x, y, base, len, inner, log_form));
}
/* rows (a, b) of (outer, len, inner), a chunk of them per range call (the
   range loop splits a large softmax by rows: each row as alone) */
typedef struct dp__sm_job { const dp_kernel_ctx *k; int64_t l, in; int log_form; } dp__sm_job;
static void dp__softmax_range(int64_t begin, int64_t end, void *user) {
    const dp__sm_job *J = (const dp__sm_job *)user;
    const dp_kernel_ctx *k = J->k;
    int64_t r;
    for (r = begin; r < end; r++)
        dp__softmax_row(dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), dp_nd_dtype(k->inputs[0]), (r / J->in) * J->l * J->in + r % J->in, J->l,
                        J->in, J->log_form, k->req[0]);
}
static int dp__softmax_kernel(const dp_kernel_ctx *k, int log_form) {
    int64_t o;
    dp__sm_job J;
    J.k = k; J.log_form = log_form;
    dp__axis_split(dp_nd_shape(k->inputs[0]), k->params->v[0].i, &o, &J.l, &J.in);
    dp__kernel_rows(k, o * J.in, J.l, dp__softmax_range, &J);
    return 0;
}
static int dp__k_softmax(const dp_kernel_ctx *k) { return dp__softmax_kernel(k, 0); }
static int dp__k_log_softmax(const dp_kernel_ctx *k) { return dp__softmax_kernel(k, 1); }
/* inputs (ograd, x). softmax: g = y * (og - sum(og * y)); log_softmax:
   g = og - softmax(x) * sum(og); y is recomputed per row. */
/* one row of the gradient by req (R a constant), y recomputed */
#define DP__SMG_ROW(T, R, og, x, g, base, l, in, log_form) do {                                                        \
        double mx_, sum_, dot_ = 0;                                                                                   \
        int64_t j_;                                                                                                   \
        DP__SM_STATS(T, x, base, l, in, &mx_, &sum_);                                                                 \
        for (j_ = 0; j_ < (l); j_++) {                                                                                \
            double y_ = dp__f_softmax(dp__load_elem(x, T, (base) + j_ * (in)), mx_, sum_), o_ = dp__load_elem(og, T, (base) + j_ * (in)); \
            dot_ += (log_form) ? o_ : o_ * y_;                                                                        \
        }                                                                                                             \
        for (j_ = 0; j_ < (l); j_++) {                                                                                \
            double y_ = dp__f_softmax(dp__load_elem(x, T, (base) + j_ * (in)), mx_, sum_), o_ = dp__load_elem(og, T, (base) + j_ * (in)); \
            dp__store_elem(g, T, (base) + j_ * (in), (log_form) ? dp__d_log_softmax(y_, o_, dot_) : dp__d_softmax(y_, o_, dot_), R); \
        }                                                                                                             \
    } while (0)
static void dp__softmax_grad_range(int64_t begin, int64_t end, void *user) {
    const dp__sm_job *J = (const dp__sm_job *)user;
    const dp_kernel_ctx *k = J->k;
    const void *og = dp_nd_data(k->inputs[0]), *x = dp_nd_data(k->inputs[1]);
    void *g = dp_nd_data(k->outputs[0]);
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    int64_t r, l = J->l, in = J->in;
    int log_form = J->log_form;
    for (r = begin; r < end; r++) {
        int64_t base = (r / in) * l * in + r % in;
        if (k->req[0] == DP_REQ_ADD) DP__BY_DTYPE(t, DP__SMG_ROW(T_, DP_REQ_ADD, og, x, g, base, l, in, log_form));
        else if (k->req[0] != DP_REQ_NULL) DP__BY_DTYPE(t, DP__SMG_ROW(T_, DP_REQ_WRITE, og, x, g, base, l, in, log_form));
    }
}
static int dp__softmax_grad(const dp_kernel_ctx *k, int log_form) {
    int64_t o;
    dp__sm_job J;
    J.k = k; J.log_form = log_form;
    dp__axis_split(dp_nd_shape(k->inputs[1]), k->params->v[0].i, &o, &J.l, &J.in);
    dp__kernel_rows(k, o * J.in, J.l, dp__softmax_grad_range, &J);
    return 0;
}
static int dp__kg_softmax(const dp_kernel_ctx *k) { return dp__softmax_grad(k, 0); }
static int dp__kg_log_softmax(const dp_kernel_ctx *k) { return dp__softmax_grad(k, 1); }
/* softmax_cross_entropy(data (n, c), label (n,)) = sum over rows of
   -log softmax(data)[row, label[row]], as a (1,) array (MXNet's form). */
static int dp__infer_sce(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                         dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    char s1[160], s2[160];
    (void)p; (void)nin; (void)nout;
    if (is[0].ndim != 2 || is[1].ndim != 1 || is[1].dims[0] != is[0].dims[0]) {
        snprintf(msg, cap, "data %s and label %s: data must be (n, classes) and label (n,)", dp__shape_str(&is[0], s1, sizeof s1), dp__shape_str(&is[1], s2, sizeof s2));
        return -1;
    }
    memset(os, 0, sizeof *os);
    os->ndim = 1; os->dims[0] = 1; *ot = it[0];
    return 0;
}
static int dp__label_at(const dp_kernel_ctx *k, dp_ndarray *label, int64_t r, int64_t classes, int64_t *out) {
    double v = dp__load_elem(dp_nd_data(label), dp_nd_dtype(label), r);
    if (!dp__label_ok(v, classes)) {
        char msg[96];
        snprintf(msg, sizeof msg, "label %g of row %lld is not a class in 0..%lld", v, (long long)r, (long long)classes - 1);
        dp_set_error(k->rc, msg);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}
static int dp__k_sce(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[0]);
    const void *x = dp_nd_data(k->inputs[0]);
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    int64_t n = s->dims[0], c = s->dims[1], r, lab;
    double loss = 0;
    for (r = 0; r < n; r++) {
        double mx, sum;
        if (dp__label_at(k, k->inputs[1], r, c, &lab)) return DP_ERROR_INVALID_ARGS;
        dp__row_stats(x, t, r * c, c, 1, &mx, &sum);
        loss += dp__f_sce_row(dp__load_elem(x, t, r * c + lab), mx, sum);
    }
    dp__store_elem(dp_nd_data(k->outputs[0]), t, 0, loss, k->req[0]);
    return 0;
}
/* inputs (ograd (1,), data, label); outputs (data grad, label grad = 0):
   d loss / d data = ograd * (softmax(data) - one_hot(label)); row r by req
   (R a constant) in dtype T (per dtype, as the softmax rows). */
#define DP__SCE_ROW(T, R) do {                                                                                         \
        void *g_ = dp_nd_data(k->outputs[0]);                                                                         \
        DP__SM_STATS(T, x, r * c, c, 1, &mx, &sum);                                                                   \
        for (j = 0; j < c; j++)                                                                                       \
            dp__store_elem(g_, T, r * c + j, dp__d_sce(og, dp__f_softmax(dp__load_elem(x, T, r * c + j), mx, sum), j == lab), R); \
    } while (0)
static int dp__kg_sce(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[1]);
    const void *x = dp_nd_data(k->inputs[1]);
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    double og = dp__load_elem(dp_nd_data(k->inputs[0]), t, 0);
    int64_t n = s->dims[0], c = s->dims[1], r, j, lab;
    for (r = 0; r < n; r++) {
        double mx, sum;
        if (dp__label_at(k, k->inputs[2], r, c, &lab)) return DP_ERROR_INVALID_ARGS;
        if (k->req[0] == DP_REQ_ADD) DP__BY_DTYPE(t, DP__SCE_ROW(T_, DP_REQ_ADD));
        else if (k->req[0] != DP_REQ_NULL) DP__BY_DTYPE(t, DP__SCE_ROW(T_, DP_REQ_WRITE));
        dp__store_elem(dp_nd_data(k->outputs[1]), dp_nd_dtype(k->inputs[2]), r, 0, k->req[1]);
    }
    return 0;
}
/* transpose: output axis d is input axis axes[d]; () reverses them. */
static const dp_param_def dp__transpose_params[] = {{"axes", DP_PARAM_SHAPE, "()", 0, 0, NULL, "the permutation; () reverses the axes"}};
static int dp__perm(const dp_params *p, const dp_shape *s, int *perm, char *msg, size_t cap) {
    const dp_shape *ax = &p->v[0].shape;
    int d, seen = 0;
    for (d = 0; d < s->ndim; d++) {
        int64_t a = ax->ndim ? ax->dims[d] : s->ndim - 1 - d;
        if (ax->ndim && ax->ndim != s->ndim) break;
        if (a < 0) a += s->ndim;
        if (a < 0 || a >= s->ndim || (seen & (1 << a))) break;
        seen |= 1 << a;
        perm[d] = (int)a;
    }
    if (d < s->ndim || (ax->ndim && ax->ndim != s->ndim)) { snprintf(msg, cap, "parameter 'axes' is not a permutation of the input's %d axes", (int)s->ndim); return -1; }
    return 0;
}
static int dp__infer_transpose(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                               dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int perm[DP_MAX_DIMS], d;
    (void)nin; (void)nout;
    if (dp__perm(p, &is[0], perm, msg, cap)) return -1;
    *os = is[0];
    for (d = 0; d < is[0].ndim; d++) os->dims[d] = is[0].dims[perm[d]];
    *ot = it[0];
    return 0;
}
/* Copies src (shape s) into dst with the axes permuted: odometer over the
   output, input offset through permuted strides. inverse: the opposite
   permutation (for the gradient). */
static void dp__permute(const void *src, void *dst, dp_dtype t, const dp_shape *s, const int *perm, int inverse, dp_req req) {
    int64_t in_stride[DP_MAX_DIMS], st[DP_MAX_DIMS], dims[DP_MAX_DIMS], idx[DP_MAX_DIMS] = {0}, acc = 1, n = dp_shape_size(s), i, off = 0;
    int d, nd = s->ndim;
    for (d = nd - 1; d >= 0; d--) { in_stride[d] = acc; acc *= s->dims[d]; }
    for (d = 0; d < nd; d++) {
        if (!inverse) { dims[d] = s->dims[perm[d]]; st[d] = in_stride[perm[d]]; }
        else { dims[perm[d]] = s->dims[d]; st[perm[d]] = in_stride[d]; }
    }
    for (i = 0; i < n; i++) {
        dp__move_elem(dst, t, i, src, t, off, req);
        dp__odometer_next(nd, dims, idx, st, &off, NULL, NULL);
    }
}
static int dp__k_transpose(const dp_kernel_ctx *k) {
    int perm[DP_MAX_DIMS];
    char msg[96];
    dp__perm(k->params, dp_nd_shape(k->inputs[0]), perm, msg, sizeof msg);
    dp__permute(dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), dp_nd_dtype(k->inputs[0]), dp_nd_shape(k->inputs[0]), perm, 0, k->req[0]);
    return 0;
}
/* inputs (ograd, x): ograd has the transposed shape; permute it back */
static int dp__kg_transpose(const dp_kernel_ctx *k) {
    int perm[DP_MAX_DIMS];
    char msg[96];
    dp__perm(k->params, dp_nd_shape(k->inputs[1]), perm, msg, sizeof msg);
    dp__permute(dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), dp_nd_dtype(k->inputs[1]), dp_nd_shape(k->inputs[0]), perm, 1, k->req[0]);
    return 0;
}
/* concat(num_args arrays, dim): equal shapes but along dim. */
static const dp_param_def dp__concat_params[] = {
    {"num_args", DP_PARAM_INT, NULL, 1, 64, NULL, "how many arrays"},
    {"dim", DP_PARAM_INT, "1", -8, 7, NULL, "the axis to join along"},
};
static int dp__infer_concat(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                            dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int64_t dim = p->v[1].i, total = 0;
    int i, d;
    char s1[160], s2[160];
    (void)nout;
    if (dim < 0) dim += is[0].ndim;
    if (dim < 0 || dim >= is[0].ndim) { snprintf(msg, cap, "parameter 'dim' = %lld: inputs have %d dims", (long long)p->v[1].i, (int)is[0].ndim); return -1; }
    for (i = 0; i < nin; i++) {
        int same = is[i].ndim == is[0].ndim && it[i] == it[0];
        for (d = 0; same && d < is[0].ndim; d++) same = d == dim || is[i].dims[d] == is[0].dims[d];
        if (!same) { snprintf(msg, cap, "input %d %s %s does not fit input 0 %s %s outside dim %lld", i, dp_dtype_name(it[i]), dp__shape_str(&is[i], s1, sizeof s1), dp_dtype_name(it[0]), dp__shape_str(&is[0], s2, sizeof s2), (long long)dim); return -1; }
        total += is[i].dims[dim];
    }
    *os = is[0]; os->dims[dim] = total; *ot = it[0];
    return 0;
}
/* Joins the parts: for each outer index, part i gives a run of len_i *
   inner elements. */
static void dp__concat_move(dp_ndarray *whole, dp_ndarray *const *parts, int nparts, int64_t dim, dp_req req) {
    const dp_shape *ws = dp_nd_shape(whole);
    dp_dtype t = dp_nd_dtype(whole);
    int64_t outer = 1, inner = 1, o, off = 0;
    int d, i;
    for (d = 0; d < dim; d++) outer *= ws->dims[d];
    for (d = (int)dim + 1; d < ws->ndim; d++) inner *= ws->dims[d];
    for (o = 0; o < outer; o++) {
        for (i = 0; i < nparts; i++) {
            int64_t run = dp_nd_shape(parts[i])->dims[dim] * inner;
            dp__move_run(dp_nd_data(whole), t, off, dp_nd_data(parts[i]), t, o * run, run, req);
            off += run;
        }
    }
}
static int64_t dp__concat_dim(const dp_kernel_ctx *k, const dp_shape *s) { int64_t d = k->params->v[1].i; return d < 0 ? d + s->ndim : d; }
static int dp__k_concat(const dp_kernel_ctx *k) {
    dp__concat_move(k->outputs[0], k->inputs, k->num_inputs, dp__concat_dim(k, dp_nd_shape(k->outputs[0])), k->req[0]);
    return 0;
}
/* inputs (ograd, the parts); outputs the parts' gradients: ograd cut back
   into the parts' blocks (the same walk as concat, reading instead). */
static int dp__kg_concat(const dp_kernel_ctx *k) {
    const dp_shape *ws = dp_nd_shape(k->inputs[0]);
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    int64_t dim = dp__concat_dim(k, ws), outer = 1, inner = 1, o, off = 0;
    int d, i;
    for (d = 0; d < dim; d++) outer *= ws->dims[d];
    for (d = (int)dim + 1; d < ws->ndim; d++) inner *= ws->dims[d];
    for (o = 0; o < outer; o++) {
        for (i = 0; i < k->num_outputs; i++) {
            int64_t run = dp_nd_shape(k->outputs[i])->dims[dim] * inner;
            dp__move_run(dp_nd_data(k->outputs[i]), t, o * run, dp_nd_data(k->inputs[0]), t, off, run, k->req[i]);
            off += run;
        }
    }
    return 0;
}
/* The "dtype" parameter of the operators that make arrays from nothing;
   the choices are in dp_dtype's order, so the index is the dtype. */
#define DP__DTYPE_CHOICES "float32|float64|int32|int64|uint8|float16|bool|int8"
#define DP__DTYPE_PARAM {"dtype", DP_PARAM_ENUM, "float32", 0, 0, DP__DTYPE_CHOICES, "the output's dtype"}
/* one_hot(indices, depth): a new last axis of length depth. */
static const dp_param_def dp__one_hot_params[] = {
    {"depth", DP_PARAM_INT, NULL, 1, 1e9, NULL, "the number of classes"},
    {"on_value", DP_PARAM_FLOAT, "1", 0, 0, NULL, "the value at the index"},
    {"off_value", DP_PARAM_FLOAT, "0", 0, 0, NULL, "the value elsewhere"},
    DP__DTYPE_PARAM,
};
static int dp__infer_one_hot(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                             dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)nin; (void)nout; (void)it;
    if (is[0].ndim >= DP_MAX_DIMS) { snprintf(msg, cap, "the indices already have %d dims", DP_MAX_DIMS); return -1; }
    *os = is[0]; os->dims[os->ndim++] = p->v[0].i; *ot = (dp_dtype)p->v[3].i;
    return 0;
}
/* Each index's hot position, in blocks of DP__BLK: an integer index
   compares as an integer (2^53 + 1 is not 2^53), a float one as a number
   (v == j for an integral v in [0, depth)); then each output row in the
   output's dtype (DP__BY_DTYPE), by req (R a constant). */
#define DP__ONE_HOT_ROWS(T, R) do {                                                                                    \
        for (r = 0; r < m; r++)                                                                                       \
            for (j = 0; j < depth; j++) dp__store_elem(y, T, (i + r) * depth + j, j == on[r] ? onv : offv, R);         \
    } while (0)
static int dp__k_one_hot(const dp_kernel_ctx *k) {
    int64_t n = dp_shape_size(dp_nd_shape(k->inputs[0])), depth = k->params->v[0].i, i, j, m, r, on[DP__BLK];
    dp_dtype t = dp_nd_dtype(k->outputs[0]), it = dp_nd_dtype(k->inputs[0]);
    const void *x = dp_nd_data(k->inputs[0]);
    void *y = dp_nd_data(k->outputs[0]);
    const double onv = k->params->v[1].f, offv = k->params->v[2].f;
    if (k->req[0] == DP_REQ_NULL) return 0;
    for (i = 0; i < n; i += m) {
        m = n - i < DP__BLK ? n - i : DP__BLK;
        if (dp__dtype_is_int(it)) {
            dp__blk_load_int(x, it, i, 1, m, on);
            for (r = 0; r < m; r++) on[r] = on[r] >= 0 && on[r] < depth ? on[r] : -1;
        } else {
            double v[DP__BLK];
            dp__blk_load(x, it, i, 1, m, v);
            for (r = 0; r < m; r++) on[r] = v[r] >= 0 && v[r] < (double)depth && v[r] == (double)(int64_t)v[r] ? (int64_t)v[r] : -1;
        }
        if (k->req[0] == DP_REQ_ADD) DP__BY_DTYPE(t, DP__ONE_HOT_ROWS(T_, DP_REQ_ADD));
        else DP__BY_DTYPE(t, DP__ONE_HOT_ROWS(T_, DP_REQ_WRITE));
    }
    return 0;
}
static void dp__register_nn(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "softmax"; op.doc = "exp(x) / sum(exp(x)) along an axis"; op.num_inputs = 1; op.num_outputs = 1;
    op.params = dp__axis_params; op.num_params = 1; op.infer = dp__infer_axis; op.forward_cpu = dp__k_softmax;
    dp__register_differentiable(&op, "_backward_softmax", "gradient of softmax", dp__kg_softmax, 0);
    op.name = "log_softmax"; op.doc = "x - log(sum(exp(x))) along an axis"; op.forward_cpu = dp__k_log_softmax;
    dp__register_differentiable(&op, "_backward_log_softmax", "gradient of log_softmax", dp__kg_log_softmax, 0);
    memset(&op, 0, sizeof op);
    op.name = "softmax_cross_entropy"; op.doc = "sum over rows of -log softmax(data)[label]: data (n, classes), label (n,); a (1,) array";
    op.num_inputs = 2; op.num_outputs = 1; op.infer = dp__infer_sce; op.forward_cpu = dp__k_sce;
    dp__register_differentiable(&op, "_backward_softmax_cross_entropy", "gradient of softmax_cross_entropy (the label's is 0)", dp__kg_sce, 0);
    memset(&op, 0, sizeof op);
    op.name = "transpose"; op.doc = "the axes permuted (parameter axes; () reverses them)"; op.num_inputs = 1; op.num_outputs = 1;
    op.params = dp__transpose_params; op.num_params = 1; op.infer = dp__infer_transpose; op.forward_cpu = dp__k_transpose;
    dp__register_differentiable(&op, "_backward_transpose", "gradient of transpose", dp__kg_transpose, 0);
    memset(&op, 0, sizeof op);
    op.name = "concat"; op.doc = "num_args arrays joined along dim"; op.num_inputs = -1; op.num_outputs = 1;
    op.params = dp__concat_params; op.num_params = 2; op.infer = dp__infer_concat; op.forward_cpu = dp__k_concat;
    op.gradient = "_backward_concat"; op.grad_needs = DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS;
    dp__register(&op);
    memset(&op, 0, sizeof op);   /* (ograd, the num_args parts) -> the parts' gradients */
    op.name = "_backward_concat"; op.doc = "gradient of concat"; op.num_inputs = -2; op.num_outputs = -1;
    op.params = dp__concat_params; op.num_params = 2; op.infer = dp__infer_grad_inputs; op.forward_cpu = dp__kg_concat;
    dp__register(&op);
    memset(&op, 0, sizeof op);
    op.name = "one_hot"; op.doc = "indices to vectors of length depth: on_value at the index, off_value elsewhere";
    op.num_inputs = 1; op.num_outputs = 1; op.params = dp__one_hot_params; op.num_params = 4;
    op.infer = dp__infer_one_hot; op.forward_cpu = dp__k_one_hot;
    dp__register(&op);
}
/* >>random operators: no inputs; shape and dtype from the parameters; on
   the device of a given output, else CPU 0. They ask
   for the random resource, so draws are ordered as dp_nd_random_* orders
   them. */
static const dp_param_def dp__uniform_params[] = {
    {"shape", DP_PARAM_SHAPE, NULL, 0, 0, NULL, "the output's shape"},
    {"low", DP_PARAM_FLOAT, "0", 0, 0, NULL, "lower bound"},
    {"high", DP_PARAM_FLOAT, "1", 0, 0, NULL, "upper bound (excluded)"},
    DP__DTYPE_PARAM,
};
static const dp_param_def dp__normal_params[] = {
    {"shape", DP_PARAM_SHAPE, NULL, 0, 0, NULL, "the output's shape"},
    {"loc", DP_PARAM_FLOAT, "0", 0, 0, NULL, "mean"},
    {"scale", DP_PARAM_FLOAT, "1", 0, 0, NULL, "standard deviation"},
    DP__DTYPE_PARAM,
};
static int dp__infer_random(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                            dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)nin; (void)is; (void)it; (void)nout;
    if (dp_shape_size(&p->v[0].shape) < 0) { snprintf(msg, cap, "parameter 'shape' is not a valid shape"); return -1; }
    if (!(p->v[2].f >= p->v[1].f)) { snprintf(msg, cap, "parameter '%s' (%g) is below '%s' (%g)", "high", p->v[2].f, "low", p->v[1].f); return -1; }
    *os = p->v[0].shape; *ot = (dp_dtype)p->v[3].i;
    return 0;
}
static int dp__infer_normal(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                            dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)nin; (void)is; (void)it; (void)nout;
    if (dp_shape_size(&p->v[0].shape) < 0) { snprintf(msg, cap, "parameter 'shape' is not a valid shape"); return -1; }
    if (!(p->v[2].f >= 0)) { snprintf(msg, cap, "parameter 'scale' (%g) is negative", p->v[2].f); return -1; }
    *os = p->v[0].shape; *ot = (dp_dtype)p->v[3].i;
    return 0;
}
static int dp__random_kernel(const dp_kernel_ctx *k, int kind) {
    dp__resources *res = dp__resources_of(k->rc->engine, k->rc->ctx, kind ? "random_normal" : "random_uniform");
    dp__random_arg g;
    int64_t i, n = dp_shape_size(dp_nd_shape(k->outputs[0]));
    double spare = 0;
    if (!res) { dp_set_error(k->rc, "no random generator on this device"); return DP_ERROR_BAD_CONTEXT; }
    g.a = k->outputs[0]; g.r = res; g.kind = kind; g.p0 = k->params->v[1].f; g.p1 = k->params->v[2].f;
    for (i = 0; i < n; i++) dp__store_elem(dp_nd_data(k->outputs[0]), dp_nd_dtype(k->outputs[0]), i, dp__draw(&g, i, &spare), k->req[0]);
    return 0;
}
static int dp__k_random_uniform(const dp_kernel_ctx *k) { return dp__random_kernel(k, 0); }
static int dp__k_random_normal(const dp_kernel_ctx *k) { return dp__random_kernel(k, 1); }
static void dp__register_random(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "random_uniform"; op.doc = "draws uniform in [low, high)"; op.num_inputs = 0; op.num_outputs = 1;
    op.params = dp__uniform_params; op.num_params = 4; op.infer = dp__infer_random; op.forward_cpu = dp__k_random_uniform;
    op.resources = DP_RESOURCE_RANDOM;
    dp__register(&op);
    op.name = "random_normal"; op.doc = "draws normal(loc, scale)"; op.params = dp__normal_params;
    op.infer = dp__infer_normal; op.forward_cpu = dp__k_random_normal;
    dp__register(&op);
}
/* >>gemm: portable cache-blocked matrix multiply (float32 / float64) ------- */
/*
 * C = alpha * op(A) * op(B) + beta * C, all matrices row-major.
 *
 * The portable micro-kernel, plain C11 (also valid C++): no intrinsics, no
 * asm. Speed comes from the classic Goto/BLIS structure (the packed GEMM
 * below, dp__gemm2_*, runs it), written so that a compiler's
 * auto-vectoriser at -O2 turns the micro-kernel into straight SIMD code
 * with every accumulator in a register:
 *
 *   for each NC-wide column block of B           (jc loop)
 *     for each KC-deep slice of k                (pc loop)
 *       pack op(B)[pc.., jc..] -> b_pack         (L2; reused by every A sliver)
 *       for each MR-row sliver of A              (ic loop)
 *         pack op(A)[ic.., pc..] -> a_pack       (L1; reused by every B panel)
 *         for each NR-wide panel of b_pack       (jr loop)
 *           micro-kernel: C tile (MR x NR) = alpha * a_pack * panel + beta * C
 *
 * Micro-kernel shape.  The tile is MR = 6 rows x NR = 2 SIMD vectors.  With
 * 16-byte vectors (SSE2, NEON) that is 6x8 floats or 6x4 doubles: 12 vector
 * accumulators + 2 vectors of B + 1 temporary = the 16 vector registers of
 * x86-64 (AArch64 has 32).  One more row spills; one fewer leaves the
 * multiply/add pipes idle.
 *
 * A is packed "pre-broadcast": each element of A is stored LANES times in a
 * row, so the kernel reads whole vectors of A instead of splatting scalars.
 * A baseline x86-64 build has no broadcast load, and the shuffle it would use
 * instead competes with the multiplies and adds for the same FP ports; this
 * costs a 4x (f32) / 2x (f64) larger A sliver, which still fits in L1.
 */

/* Bytes per SIMD register the kernel is shaped for.  16 is right for the
   portable baseline (SSE2 / NEON); when the compiler is told it may use AVX,
   32-byte tiles double the work per instruction.  Only predefined macros are
   inspected; the code itself stays plain C. */
#ifndef DP__GEMM_VEC_BYTES
#  if defined(__AVX__)
#    define DP__GEMM_VEC_BYTES 32
#  else
#    define DP__GEMM_VEC_BYTES 16
#  endif
#endif

#define DP__GEMM_MR 6 /* rows of the register tile (see above) */
#define DP__GEMM_NV 2 /* SIMD vectors per tile row: NR = NV * LANES */
#define DP__GEMM_LANES(T) ((int)(DP__GEMM_VEC_BYTES / sizeof(T)))
#define DP__GEMM_NR(T) (DP__GEMM_NV * DP__GEMM_LANES(T))

/* Loop-shape hints for the micro-kernel (see dp__gemm_kernel_*):
   DP__GEMM_UNROLL: the row and vector loops must be fully unrolled *before*
   vectorisation so each accumulator gets its own register; GCC does not do
   that by itself at -O2.  Clang honours the same pragma.  Other compilers
   just ignore the hints: the code stays correct, only slower.
   DP__GEMM_KEEP_LOOP: the lane loop must stay a loop so the loop vectoriser
   turns it into SIMD operations; GCC -O3 would otherwise unroll it first and
   vectorise the scalars badly (half speed).  Clang gets slower with it, so it
   is GCC-only.
   DP__GEMM_NO_JAM: GCC -O3's unroll-and-jam interleaves two k steps, which
   needs 16 live vectors + temporaries and spills (-25% for float). */
#if defined(__GNUC__) && !defined(__CUDACC__)     /* nvcc's front end does not know the pragma */
#  define DP__GEMM_UNROLL _Pragma("GCC unroll 16")
#else
#  define DP__GEMM_UNROLL
#endif
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#  define DP__GEMM_KEEP_LOOP _Pragma("GCC unroll 1")
#  define DP__GEMM_NO_JAM __attribute__((optimize("no-loop-unroll-and-jam")))
#else
#  define DP__GEMM_KEEP_LOOP
#  define DP__GEMM_NO_JAM
#endif

/* For the GEMM's functions that some configurations never call (by CPU,
   DEPENG_USE_CBLAS); keeps -Wunused-function quiet (what they call counts
   as used). */
#if defined(__GNUC__)
#  define DP__GEMM_MAYBE_UNUSED __attribute__((unused))
#else
#  define DP__GEMM_MAYBE_UNUSED
#endif

static int64_t dp__gemm_min(int64_t x, int64_t y) { return x < y ? x : y; }

/* Instantiates the portable micro-kernel and C = beta C for one element
   type T; SUF is the function-name suffix. */
#define DP__GEMM_DEFINE(T, SUF)                                                \
                                                                               \
/* C[0:MR, 0:NR] = alpha * (a_sliver * b_panel) + beta * C over kc steps;      \
   beta == 0 never reads C (it may hold NaN).  The loop over lanes is          \
   outermost inside p so the vectoriser turns it into whole SIMD operations;   \
   rows and vectors are unrolled into separate register accumulators.  Doing   \
   the C update here, with fixed trip counts, keeps it vectorised too. */      \
DP__GEMM_NO_JAM                                                                \
static void dp__gemm_kernel_##SUF(int64_t kc, const T *a, const T *b, T alpha, \
                                  T beta, T *c, int64_t ldc)                   \
{                                                                              \
    T acc[DP__GEMM_MR][DP__GEMM_NV][DP__GEMM_LANES(T)] = {{{0}}};              \
    for (int64_t p = 0; p < kc; ++p) {                                         \
        DP__GEMM_KEEP_LOOP                                                     \
        for (int l = 0; l < DP__GEMM_LANES(T); ++l) {                          \
            DP__GEMM_UNROLL                                                    \
            for (int i = 0; i < DP__GEMM_MR; ++i) {                            \
                DP__GEMM_UNROLL                                                \
                for (int v = 0; v < DP__GEMM_NV; ++v)                          \
                    acc[i][v][l] += a[i * DP__GEMM_LANES(T) + l] *             \
                                    b[v * DP__GEMM_LANES(T) + l];              \
            }                                                                  \
        }                                                                      \
        a += DP__GEMM_MR * DP__GEMM_LANES(T);                                  \
        b += DP__GEMM_NR(T);                                                   \
    }                                                                          \
    for (int i = 0; i < DP__GEMM_MR; ++i, c += ldc) {                          \
        for (int v = 0; v < DP__GEMM_NV; ++v) {                                \
            T *dst = c + v * DP__GEMM_LANES(T);                                \
            if (beta == (T)0)                                                  \
                for (int l = 0; l < DP__GEMM_LANES(T); ++l)                    \
                    dst[l] = alpha * acc[i][v][l];                             \
            else                                                               \
                for (int l = 0; l < DP__GEMM_LANES(T); ++l)                    \
                    dst[l] = alpha * acc[i][v][l] + beta * dst[l];             \
        }                                                                      \
    }                                                                          \
}                                                                              \
                                                                               \
/* C = beta * C, for k == 0 or alpha == 0 (A and B are then not read). */      \
static void dp__gemm_scale_##SUF(int64_t m, int64_t n, T beta, T *c,           \
                                 int64_t ldc)                                  \
{                                                                              \
    if (beta == (T)1) return;                                                  \
    for (int64_t i = 0; i < m; ++i, c += ldc)                                  \
        for (int64_t j = 0; j < n; ++j)                                        \
            c[j] = beta == (T)0 ? (T)0 : beta * c[j];                          \
}

DP__GEMM_DEFINE(float, f32)
DP__GEMM_DEFINE(double, f64)

/* The packed GEMM (Goto / BLIS structure, as above) with a run-time
   selected micro-kernel and the engine's range loop. Per KC-deep slice of
   k and NC-wide block of columns it packs all of op(A)'s rows and op(B)'s
   columns once into one workspace (phase 1, the slivers and panels split
   over the range loop), then computes C in tiles of MC rows by a fixed
   number of NR-wide panels (phase 2): each tile's A block stays in L2 and
   each B panel in L1 while the slivers of the tile pass over it. Every C
   element is summed over k in the same order whatever the tiles are, and
   the tiles are fixed by the shape alone, so the result is bitwise the same
   at any worker count (and with no engine). The micro-kernel is chosen
   when called: on x86 (gcc, clang) with AVX2 and FMA, 6x16 float / 6x8
   double tiles of 256-bit FMAs (functions compiled for that target only,
   so the rest of the program needs no -mavx2); else the portable kernel
   above (which the compiler vectorises for its own target: SSE2, NEON).
   When all of packed A is small (DP__GEMM2_SMALL_A: the layers' products
   at batch 64 to 256), it is packed once and each B panel is one range
   item over all of k: two range loops per call instead of two per slice,
   and items as many as panels, so 2 threads stay busy at m = 64.
   Float32 with B transposed and n narrow (or k deep and B small) skips
   packing altogether (dp__gemm_dot_avx2). Which path runs depends on the
   shape and the CPU only, never on the workers.
   The workspace (about (m + NC) x KC elements) is on the stack when small,
   else the engine's, kept (dp__gemm_ws_get); when there is none to be had,
   dp__gemm2_serial makes the same kernel calls with one sliver and one
   panel on the stack, so dp_gemm_on never fails and keeps its bits. */
#define DP__GEMM2_MR 6
#define DP__GEMM2_NR_MAX(T) (DP__GEMM_NR(T) > 64 / (int)sizeof(T) ? DP__GEMM_NR(T) : 64 / (int)sizeof(T))  /* portable or AVX2 panels */
#define DP__GEMM2_KC 256          /* depth of a slice: the A block MC x KC stays in L2 */
#define DP__GEMM2_NC 4096         /* columns packed at once */
#ifndef DP__GEMM2_MC
#  define DP__GEMM2_MC 384         /* bytes x rows of a tile: 96 float / 48 double rows, 96 KiB of A at KC */
#endif
#define DP__GEMM2_PAR_MIN (1 << 18)   /* m n k from which the range loop is used */
#define DP__GEMM2_TILES 16        /* tiles aimed at per slice (fixed: not the thread count) */
#ifndef DP__GEMM2_SMALL_A
#  define DP__GEMM2_SMALL_A (256 * 1024)  /* bytes of packed A up to which the small-A schedule runs */
#endif
#ifndef DP__GEMM2_DOT_N
#  define DP__GEMM2_DOT_N 32      /* B transposed and n up to this: dot products, no packing (dp__gemm_dot_avx2) */
#endif
#define DP__GEMM2_DOT_B (1 << 19) /* or k >= 256, m <= 256 and B (n x k) up to this many elements: packing
                                     costs more than it saves when A's rows pass over B only 64 times or fewer */
/* The shapes of that narrow path (float32, A not transposed, AVX2): the
   one rule, which dp_gemm_pack_b_on follows too. */
#define DP__GEMM2_NARROW(m, n, k) ((n) <= DP__GEMM2_DOT_N || ((k) >= 256 && (m) <= 256 && (n) * (k) <= DP__GEMM2_DOT_B))

/* The GEMM's workspaces (the packed operands; a staged op(B)) are the
   engine's, from its allocator, and kept for the next calls: a training
   step runs the same products every step, so a warm step allocates
   nothing. Calls at once (workers, callers, GEMMs inside another range
   loop's chunks, as a convolution's) each hold one. How many run at once
   depends on timing, so the first call that finds none idle to fit (a new
   largest size, or more calls at once than workspaces) makes the engine
   hold one per thread that can run them: its workers so far and one
   caller, every one of the largest size asked so far (one outgrown while
   held is replaced when given back). From then on, calls no larger and no
   more at once allocate nothing, whichever threads run them. Freed by
   dp_engine_destroy, the idle ones by dp_storage_release_pool (which also
   forgets the largest size); idle ones past DP__GEMM_WS_KEEP are freed at
   once.
   With no engine a call mallocs its own and frees it. A block is this
   header, then cap bytes. */
typedef struct dp__gemm_ws { struct dp__gemm_ws *next; size_t cap; } dp__gemm_ws;
#ifndef DP__GEMM_WS_KEEP
#  define DP__GEMM_WS_KEEP 64
#endif
static dp__gemm_ws *dp__gemm_ws_new(dp_engine *eng, size_t cap) {
    dp__gemm_ws *w = (dp__gemm_ws *)dp__alloc(eng, sizeof *w + cap);
    if (w) w->cap = cap;
    return w;
}
/* w (counted in gemm_ws_total) onto the idle list, or freed */
static void dp__gemm_ws_keep(dp_engine *eng, dp__nd_state *s, dp__gemm_ws *w) {
    int kept;
    dp__spin_lock(&s->gemm_lock);
    if ((kept = s->num_gemm_ws < DP__GEMM_WS_KEEP) != 0) { w->next = s->gemm_ws; s->gemm_ws = w; s->num_gemm_ws++; }
    else s->gemm_ws_total--;
    dp__spin_unlock(&s->gemm_lock);
    if (!kept) dp__free(eng, w, sizeof *w + w->cap);
}
static void dp__gemm_ws_put(dp_engine *eng, dp__gemm_ws *w) {
    dp__nd_state *s;
    size_t max;
    if (!w) return;
    if (!eng) { free(w); return; }
    if ((s = dp__nd_state_of(eng)) == NULL) { dp__free(eng, w, sizeof *w + w->cap); return; }   /* not reached: the get made it */
    dp__spin_lock(&s->gemm_lock);
    max = s->gemm_ws_max;
    dp__spin_unlock(&s->gemm_lock);
    if (w->cap < max) {              /* outgrown while held */
        dp__gemm_ws *big = dp__gemm_ws_new(eng, max);
        if (big) { dp__free(eng, w, sizeof *w + w->cap); w = big; }
    }
    dp__gemm_ws_keep(eng, s, w);
}
/* A workspace of at least bytes (after the header), or NULL when out of
   memory (the idle ones it would have replaced are kept). */
static dp__gemm_ws *dp__gemm_ws_get(dp_engine *eng, size_t bytes) {
    dp__nd_state *s;
    dp__gemm_ws *w = NULL, *small = NULL, *next, **p;
    size_t max;
    int nsmall = 0, want;
    if (!eng) {
        if ((w = (dp__gemm_ws *)malloc(sizeof *w + bytes)) != NULL) w->cap = bytes;
        return w;
    }
    if ((s = dp__nd_state_of(eng)) == NULL) return NULL;
    dp__spin_lock(&s->gemm_lock);
    max = bytes > s->gemm_ws_max ? bytes : s->gemm_ws_max;   /* the new largest once it is made */
    for (p = &s->gemm_ws; *p && (*p)->cap < bytes; p = &(*p)->next) {}
    if (*p) { w = *p; *p = w->next; s->num_gemm_ws--; }
    else { small = s->gemm_ws; nsmall = s->num_gemm_ws; s->gemm_ws = NULL; s->num_gemm_ws = 0; }   /* all too small: replaced */
    dp__spin_unlock(&s->gemm_lock);
    if (w) return w;
    if ((w = dp__gemm_ws_new(eng, max)) == NULL) {
        for (; small; small = next) { next = small->next; dp__gemm_ws_keep(eng, s, small); }
        return NULL;
    }
    for (; small; small = next) { next = small->next; dp__free(eng, small, sizeof *small + small->cap); }
    dp__spin_lock(&s->gemm_lock);
    if (max > s->gemm_ws_max) s->gemm_ws_max = max;
    s->gemm_ws_total += 1 - nsmall;
    want = (int)dp__load(&eng->worker_counter, DP__RELAXED) + 1 - s->gemm_ws_total;
    if (want > 0) s->gemm_ws_total += want;
    dp__spin_unlock(&s->gemm_lock);
    for (; want > 0; want--) {       /* one for each thread (a spare that finds no memory is not made) */
        dp__gemm_ws *spare = dp__gemm_ws_new(eng, max);
        if (spare) dp__gemm_ws_keep(eng, s, spare);
        else { dp__spin_lock(&s->gemm_lock); s->gemm_ws_total--; dp__spin_unlock(&s->gemm_lock); }
    }
    return w;
}
/* The idle ones freed; those held are counted still and kept when given
   back (no smaller than the new largest size, which starts again). */
static void dp__gemm_ws_free_idle(dp_engine *eng, dp__nd_state *s) {
    dp__gemm_ws *w, *next;
    dp__spin_lock(&s->gemm_lock);
    w = s->gemm_ws;
    s->gemm_ws_total -= s->num_gemm_ws;
    s->gemm_ws = NULL; s->num_gemm_ws = 0; s->gemm_ws_max = 0;
    dp__spin_unlock(&s->gemm_lock);
    for (; w; w = next) { next = w->next; dp__free(eng, w, sizeof *w + w->cap); }
}
static void dp__gemm_ws_free_all(dp_engine *eng, dp__nd_state *s) {
    dp__gemm_ws_free_idle(eng, s);
    s->gemm_ws_total = 0;
}

#ifdef DP__GEMM_X86
/* C (6 x 16) = alpha acc + beta C, acc = sum over kc of a (6 per step) x b (16 per step). */
#define DP__AVX_ROW(i)                                                          \
    { __m256 ai = _mm256_broadcast_ss(a + (i));                                 \
      c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0); c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1); }
#define DP__AVX_STORE(i)                                                        \
    { float *ci = c + (i) * ldc;                                                \
      if (beta == 0.0f) { _mm256_storeu_ps(ci, _mm256_mul_ps(va, c##i##0)); _mm256_storeu_ps(ci + 8, _mm256_mul_ps(va, c##i##1)); } \
      else { _mm256_storeu_ps(ci, _mm256_fmadd_ps(va, c##i##0, _mm256_mul_ps(vb, _mm256_loadu_ps(ci))));  \
             _mm256_storeu_ps(ci + 8, _mm256_fmadd_ps(va, c##i##1, _mm256_mul_ps(vb, _mm256_loadu_ps(ci + 8)))); } }
DP__TARGET_AVX2 static void dp__gemm_avx2_f32(int64_t kc, const float *a, const float *b, float alpha, float beta, float *c, int64_t ldc) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, va, vb;
    int64_t p;
    for (p = 0; p < kc; p++, a += 6, b += 16) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        DP__AVX_ROW(0) DP__AVX_ROW(1) DP__AVX_ROW(2) DP__AVX_ROW(3) DP__AVX_ROW(4) DP__AVX_ROW(5)
    }
    va = _mm256_set1_ps(alpha); vb = _mm256_set1_ps(beta);
    DP__AVX_STORE(0) DP__AVX_STORE(1) DP__AVX_STORE(2) DP__AVX_STORE(3) DP__AVX_STORE(4) DP__AVX_STORE(5)
}
#undef DP__AVX_ROW
#undef DP__AVX_STORE
#define DP__AVX_ROW(i)                                                          \
    { __m256d ai = _mm256_broadcast_sd(a + (i));                                \
      c##i##0 = _mm256_fmadd_pd(ai, b0, c##i##0); c##i##1 = _mm256_fmadd_pd(ai, b1, c##i##1); }
#define DP__AVX_STORE(i)                                                        \
    { double *ci = c + (i) * ldc;                                               \
      if (beta == 0.0) { _mm256_storeu_pd(ci, _mm256_mul_pd(va, c##i##0)); _mm256_storeu_pd(ci + 4, _mm256_mul_pd(va, c##i##1)); } \
      else { _mm256_storeu_pd(ci, _mm256_fmadd_pd(va, c##i##0, _mm256_mul_pd(vb, _mm256_loadu_pd(ci))));  \
             _mm256_storeu_pd(ci + 4, _mm256_fmadd_pd(va, c##i##1, _mm256_mul_pd(vb, _mm256_loadu_pd(ci + 4)))); } }
DP__TARGET_AVX2 static void dp__gemm_avx2_f64(int64_t kc, const double *a, const double *b, double alpha, double beta, double *c, int64_t ldc) {
    __m256d c00 = _mm256_setzero_pd(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256d c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, va, vb;
    int64_t p;
    for (p = 0; p < kc; p++, a += 6, b += 8) {
        __m256d b0 = _mm256_load_pd(b), b1 = _mm256_load_pd(b + 4);
        DP__AVX_ROW(0) DP__AVX_ROW(1) DP__AVX_ROW(2) DP__AVX_ROW(3) DP__AVX_ROW(4) DP__AVX_ROW(5)
    }
    va = _mm256_set1_pd(alpha); vb = _mm256_set1_pd(beta);
    DP__AVX_STORE(0) DP__AVX_STORE(1) DP__AVX_STORE(2) DP__AVX_STORE(3) DP__AVX_STORE(4) DP__AVX_STORE(5)
}
#undef DP__AVX_ROW
#undef DP__AVX_STORE
/* 8x8 float transpose: column q of rows r0..r7 into o[q]. */
#define DP__AVX_TRANSPOSE8(r, o)                                                                              \
    { __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);                        \
      __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);                        \
      __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);                        \
      __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);                        \
      __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);                      \
      __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);                      \
      __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);                      \
      __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);                      \
      o[0] = _mm256_permute2f128_ps(u0, u4, 0x20); o[1] = _mm256_permute2f128_ps(u1, u5, 0x20);               \
      o[2] = _mm256_permute2f128_ps(u2, u6, 0x20); o[3] = _mm256_permute2f128_ps(u3, u7, 0x20);               \
      o[4] = _mm256_permute2f128_ps(u0, u4, 0x31); o[5] = _mm256_permute2f128_ps(u1, u5, 0x31);               \
      o[6] = _mm256_permute2f128_ps(u2, u6, 0x31); o[7] = _mm256_permute2f128_ps(u3, u7, 0x31); }
/* Packing by 8x8 transposes where the source runs along k: a B panel of
   16 columns stored as rows (B transposed: column i at src + i cs), and an
   A sliver of 6 rows (A not transposed: row i at src + i rs). The packed
   layouts are the scalar loops' (dp__gemm2_pack_*): out[p * 16 + i] and
   out[p * 6 + i]; a tail of kc % 8 is left to the caller. */
DP__TARGET_AVX2 static int64_t dp__pack_rows16_avx2(const float *src, int64_t cs, int64_t kc, float *out) {
    int64_t p, h, q;
    for (p = 0; p + 8 <= kc; p += 8)
        for (h = 0; h < 16; h += 8) {
            __m256 r[8], o[8];
            for (q = 0; q < 8; q++) r[q] = _mm256_loadu_ps(src + (h + q) * cs + p);
            DP__AVX_TRANSPOSE8(r, o)
            for (q = 0; q < 8; q++) _mm256_store_ps(out + (p + q) * 16 + h, o[q]);
        }
    return p;
}
DP__TARGET_AVX2 static int64_t dp__pack_rows6_avx2(const float *src, int64_t rs, int64_t kc, float *out) {
    const __m256i six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
    int64_t p, q;
    for (p = 0; p + 8 <= kc; p += 8) {
        __m256 r[8], o[8];
        for (q = 0; q < 6; q++) r[q] = _mm256_loadu_ps(src + q * rs + p);
        r[6] = r[7] = _mm256_setzero_ps();
        DP__AVX_TRANSPOSE8(r, o)
        /* 6 of each 8 lanes: the masked store keeps the next sliver's bytes */
        for (q = 0; q < 8; q++) _mm256_maskstore_ps(out + (p + q) * 6, six, o[q]);
    }
    return p;
}
#undef DP__AVX_TRANSPOSE8
/* Narrow products with B transposed (a layer's y = x W^T with few outputs,
   a convolution's dW = dy cols^T): both operands run along k, so each C
   element is a dot product of two contiguous rows. Packing would cost as
   much as the product here, and a 16-wide panel wastes 6 of 16 columns at
   n = 10; this kernel reads A and B where they lie instead: 4 rows x 3
   columns of C at once, 8 k per step (the k tail by masked loads), 12
   vector sums reduced in a fixed order at the end. Missing rows and
   columns of an edge block repeat the last real one and are not stored.
   Every C element is one kernel's, so any split of the rows gives the same
   bits. */
typedef struct dp__gemm_dot_job { int64_t m, n, k, lda, ldb, ldc; const float *a, *b; float *c, alpha, beta; } dp__gemm_dot_job;
#define DP__DOT_ROW(i) { __m256 ai = _mm256_loadu_ps(a##i + p);            \
      s##i##0 = _mm256_fmadd_ps(ai, b0, s##i##0); s##i##1 = _mm256_fmadd_ps(ai, b1, s##i##1); s##i##2 = _mm256_fmadd_ps(ai, b2, s##i##2); }
#define DP__DOT_TAIL(i) { __m256 ai = _mm256_maskload_ps(a##i + p, tail);  \
      s##i##0 = _mm256_fmadd_ps(ai, b0, s##i##0); s##i##1 = _mm256_fmadd_ps(ai, b1, s##i##1); s##i##2 = _mm256_fmadd_ps(ai, b2, s##i##2); }
/* row i's three sums -> lanes 0..2 of one 128-bit vector; its first cols
   lanes go to C (a masked store: C's next column is not touched) */
#define DP__DOT_STORE(i)                                                        \
    if (i < rows) { __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(s##i##0, s##i##1), _mm256_hadd_ps(s##i##2, s##i##2)); \
      __m128 sum = _mm_mul_ps(va, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1))); \
      float *ci = j->c + (r0 + i) * j->ldc + c0;                               \
      if (beta != 0.0f) sum = _mm_fmadd_ps(vb, _mm_maskload_ps(ci, keep), sum); \
      _mm_maskstore_ps(ci, keep, sum); }
DP__TARGET_AVX2 static void dp__gemm_dot_avx2(int64_t begin, int64_t end, void *user) {
    const dp__gemm_dot_job *j = (const dp__gemm_dot_job *)user;
    const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(j->k % 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const float beta = j->beta;
    const __m128 va = _mm_set1_ps(j->alpha), vb = _mm_set1_ps(beta);
    int64_t r0, c0, p;
    for (r0 = begin * 4; r0 < j->m && r0 < end * 4; r0 += 4) {
        const int64_t rows = dp__gemm_min(4, j->m - r0);
        const float *a0 = j->a + r0 * j->lda, *a1 = a0 + (rows > 1) * j->lda;
        const float *a2 = a0 + (rows > 2 ? 2 : rows - 1) * j->lda, *a3 = a0 + (rows - 1) * j->lda;
        for (c0 = 0; c0 < j->n; c0 += 3) {
            const int64_t cols = dp__gemm_min(3, j->n - c0);
            const __m128i keep = _mm_cmpgt_epi32(_mm_set1_epi32((int)cols), _mm_setr_epi32(0, 1, 2, 3));
            const float *bp0 = j->b + c0 * j->ldb, *bp1 = bp0 + (cols > 1) * j->ldb, *bp2 = bp0 + (cols - 1) * j->ldb;
            __m256 s00 = _mm256_setzero_ps(), s01 = s00, s02 = s00, s10 = s00, s11 = s00, s12 = s00;
            __m256 s20 = s00, s21 = s00, s22 = s00, s30 = s00, s31 = s00, s32 = s00, b0, b1, b2;
            for (p = 0; p + 8 <= j->k; p += 8) {
                b0 = _mm256_loadu_ps(bp0 + p); b1 = _mm256_loadu_ps(bp1 + p); b2 = _mm256_loadu_ps(bp2 + p);
                DP__DOT_ROW(0) DP__DOT_ROW(1) DP__DOT_ROW(2) DP__DOT_ROW(3)
            }
            if (p < j->k) {
                b0 = _mm256_maskload_ps(bp0 + p, tail); b1 = _mm256_maskload_ps(bp1 + p, tail); b2 = _mm256_maskload_ps(bp2 + p, tail);
                DP__DOT_TAIL(0) DP__DOT_TAIL(1) DP__DOT_TAIL(2) DP__DOT_TAIL(3)
            }
            DP__DOT_STORE(0) DP__DOT_STORE(1) DP__DOT_STORE(2) DP__DOT_STORE(3)
        }
    }
}
#undef DP__DOT_ROW
#undef DP__DOT_TAIL
#undef DP__DOT_STORE
static void dp__gemm_dot_f32(dp_engine *eng, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                             const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    dp__gemm_dot_job j;
    dp_range_desc d;
    j.m = m; j.n = n; j.k = k; j.lda = lda; j.ldb = ldb; j.ldc = ldc; j.a = a; j.b = b; j.c = c; j.alpha = alpha; j.beta = beta;
    d.n = (m + 3) / 4; d.grain = 1; d.fn = dp__gemm_dot_avx2; d.user = &j; d.deterministic = 1;
    if (eng == NULL || (double)m * (double)n * (double)k < DP__GEMM2_PAR_MIN || d.n < 2 || dp_parallel_for(eng, &d) != DP_OK)
        dp__gemm_dot_avx2(0, d.n, &j);
}
/* dp_gemm_pack_b_on on a narrow shape: the dot products dp_gemm_on runs
   for B transposed, on op(B) staged transposed (dp__gemm_stage_t). */
static void dp__gemm_stage_t(dp_engine *eng, size_t es, int64_t m, int64_t n, int64_t k, dp_gemm_pack_fn fn, void *user, void *bt);
static int dp__gemm_dot_staged_f32(dp_engine *eng, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                                   dp_gemm_pack_fn bfn, void *buser, float beta, float *c, int64_t ldc) {
    dp__gemm_ws *ws = dp__gemm_ws_get(eng, sizeof(float) * (size_t)n * (size_t)k);
    if (!ws) return -1;
    dp__gemm_stage_t(eng, sizeof(float), m, n, k, bfn, buser, ws + 1);
    dp__gemm_dot_f32(eng, m, n, k, alpha, a, lda, (const float *)(const void *)(ws + 1), k, beta, c, ldc);
    dp__gemm_ws_put(eng, ws);
    return 0;
}
#endif

/* op(B) (k x n, elements of es bytes) staged transposed for
   dp_gemm_pack_b_on: into bt (n x k, a workspace), row j op(B)'s column
   j, from fn one column at a time (w and nr 1), the columns over the range
   loop when the product is large (a copy: the same bytes on any
   thread). */
typedef struct dp__gemm_stage_job { dp_gemm_pack_fn fn; void *user; int64_t k; size_t es; unsigned char *bt; } dp__gemm_stage_job;
static void dp__gemm_stage_range(int64_t begin, int64_t end, void *user) {
    const dp__gemm_stage_job *s = (const dp__gemm_stage_job *)user;
    int64_t j;
    for (j = begin; j < end; j++) s->fn(s->user, 0, s->k, j, 1, 1, s->bt + (size_t)(j * s->k) * s->es);
}
DP__GEMM_MAYBE_UNUSED static void dp__gemm_stage_t(dp_engine *eng, size_t es, int64_t m, int64_t n, int64_t k, dp_gemm_pack_fn fn, void *user, void *bt) {
    dp__gemm_stage_job s;
    dp_range_desc d;
    s.fn = fn; s.user = user; s.k = k; s.es = es; s.bt = (unsigned char *)bt;
    d.n = n; d.grain = 1; d.fn = dp__gemm_stage_range; d.user = &s; d.deterministic = 1;
    if (eng == NULL || (double)m * (double)n * (double)k < DP__GEMM2_PAR_MIN || n < 2 || dp_parallel_for(eng, &d) != DP_OK)
        dp__gemm_stage_range(0, n, &s);
}
#define DP__GEMM2_DEFINE(T, SUF)                                                                              \
typedef void (*dp__gemm_kernel_fn_##SUF)(int64_t kc, const T *a, const T *b, T alpha, T beta, T *c, int64_t ldc); \
/* One GEMM call's state: the micro-kernel's shape, the operands, the slice   \
   being worked on and the tiles (see above). */                                                              \
typedef struct dp__gemm_job_##SUF {                                                                           \
    dp__gemm_kernel_fn_##SUF kernel;                                                                          \
    int64_t nr, lanes, mc;            /* panel width, copies of each A value, rows per tile */                \
    int64_t m, n, k, a_rs, a_cs, b_rs, b_cs, ldc;                                                             \
    const T *a, *b;                                                                                           \
    T *c, *a_pack, *b_pack, alpha, beta;                                                                      \
    int64_t jc, nc, pc, kc, kc_max, slivers, panels, tile_cols, tiles_c;  /* the slice */                     \
    dp_gemm_pack_fn bfn; void *buser;  /* op(B)'s panels from the caller (dp_gemm_pack_b_on), or NULL */     \
} dp__gemm_job_##SUF;                                                                                         \
/* A sliver it (MR rows) of the slice [pc, pc + kc) -> out. */                                                \
static void dp__gemm2_pack_a1_##SUF(const dp__gemm_job_##SUF *j, int64_t it, int64_t pc, int64_t kc, T *out) {\
    const int64_t r0 = it * DP__GEMM2_MR, mr = dp__gemm_min(DP__GEMM2_MR, j->m - r0), rs = j->a_rs, cs = j->a_cs;\
    const T *src = j->a + r0 * rs + pc * cs;                                                                  \
    int64_t p, i, l;                                                                                          \
    if (mr == DP__GEMM2_MR && j->lanes == 1) {          /* the common case, unrolled */                       \
        p = 0;                                                                                                \
        DP__GEMM2_PACK_A6_##SUF                                                                               \
        for (; p < kc; p++, out += DP__GEMM2_MR, src += cs) {                                                 \
            out[0] = src[0]; out[1] = src[rs]; out[2] = src[2 * rs];                                          \
            out[3] = src[3 * rs]; out[4] = src[4 * rs]; out[5] = src[5 * rs];                                 \
        }                                                                                                     \
        return;                                                                                               \
    }                                                                                                         \
    for (p = 0; p < kc; p++)                                                                                  \
        for (i = 0; i < DP__GEMM2_MR; i++) {                                                                  \
            const T v = i < mr ? src[i * rs + p * cs] : (T)0;                                                 \
            for (l = 0; l < j->lanes; l++) *out++ = v;                                                        \
        }                                                                                                     \
}                                                                                                             \
/* B panel pn (nr columns of the block at jc, zero-padded) of the slice -> out. */                            \
static void dp__gemm2_pack_b1_##SUF(const dp__gemm_job_##SUF *j, int64_t pn, int64_t pc, int64_t kc, T *out) {\
    const int64_t c0 = pn * j->nr, w = dp__gemm_min(j->nr, j->nc - c0), rs = j->b_rs, cs = j->b_cs, nr = j->nr;\
    const T *src;                                                                                             \
    int64_t p, i;                                                                                             \
    if (j->bfn) { j->bfn(j->buser, pc, kc, j->jc + c0, w, nr, out); return; }                                 \
    src = j->b + pc * rs + (j->jc + c0) * cs;                                                                 \
    if (w == nr && cs == 1 && nr == 16)                 /* constant sizes: inlined moves */                   \
        for (p = 0; p < kc; p++, out += 16, src += rs) memcpy(out, src, 16 * sizeof(T));                      \
    else if (w == nr && cs == 1 && nr == 8)                                                                   \
        for (p = 0; p < kc; p++, out += 8, src += rs) memcpy(out, src, 8 * sizeof(T));                        \
    else if (w == nr && rs == 1) {                      /* B transposed: read each column in order */         \
        int64_t p0 = 0;                                                                                       \
        DP__GEMM2_PACK_B16_##SUF                                                                              \
        for (i = 0; i < nr; i++)                                                                              \
            for (p = p0; p < kc; p++) out[p * nr + i] = src[i * cs + p];                                      \
    }                                                                                                         \
    else                                                                                                      \
        for (p = 0; p < kc; p++, out += nr)                                                                   \
            for (i = 0; i < nr; i++) out[i] = i < w ? src[p * rs + i * cs] : (T)0;                            \
}                                                                                                             \
/* C (MR x nr at row ir, column col, w columns valid) from one packed sliver                                  \
   and panel; edge blocks go through a local tile. */                                                         \
static void dp__gemm2_block_##SUF(const dp__gemm_job_##SUF *j, const T *ap, const T *bp, int64_t kc, T beta,  \
                                  int64_t ir, int64_t col, int64_t w) {                                       \
    T edge[DP__GEMM2_MR * 16], *ct = j->c + ir * j->ldc + col;                                                \
    const int64_t mr = dp__gemm_min(DP__GEMM2_MR, j->m - ir);                                                 \
    int64_t i, q;                                                                                             \
    if (mr == DP__GEMM2_MR && w == j->nr) { j->kernel(kc, ap, bp, j->alpha, beta, ct, j->ldc); return; }      \
    j->kernel(kc, ap, bp, j->alpha, (T)0, edge, j->nr);                                                       \
    for (i = 0; i < mr; i++, ct += j->ldc)                                                                    \
        for (q = 0; q < w; q++) ct[q] = beta == (T)0 ? edge[i * j->nr + q] : edge[i * j->nr + q] + beta * ct[q];\
}                                                                                                             \
/* Phase 1: item i < slivers packs A sliver i, the others B panel i - slivers. */                             \
static void dp__gemm2_pack_##SUF(int64_t begin, int64_t end, void *user) {                                    \
    const dp__gemm_job_##SUF *j = (const dp__gemm_job_##SUF *)user;                                           \
    int64_t it;                                                                                               \
    for (it = begin; it < end; it++)                                                                          \
        if (it < j->slivers) dp__gemm2_pack_a1_##SUF(j, it, j->pc, j->kc, j->a_pack + it * DP__GEMM2_MR * j->lanes * j->kc);\
        else dp__gemm2_pack_b1_##SUF(j, it - j->slivers, j->pc, j->kc, j->b_pack + (it - j->slivers) * j->nr * j->kc);\
}                                                                                                             \
/* Phase 2: tile t, MC rows by tile_cols panels; B panels outer so each stays                                 \
   in L1 while the tile's A slivers pass. */                                                                  \
static void dp__gemm2_tiles_##SUF(int64_t begin, int64_t end, void *user) {                                   \
    const dp__gemm_job_##SUF *j = (const dp__gemm_job_##SUF *)user;                                           \
    int64_t t, jr, ir;                                                                                        \
    for (t = begin; t < end; t++) {                                                                           \
        const int64_t r0 = (t / j->tiles_c) * j->mc, r1 = dp__gemm_min(j->m, r0 + j->mc);                     \
        const int64_t p0 = (t % j->tiles_c) * j->tile_cols, p1 = dp__gemm_min(j->panels, p0 + j->tile_cols);  \
        for (jr = p0; jr < p1; jr++)                                                                          \
            for (ir = r0; ir < r1; ir += DP__GEMM2_MR)                                                        \
                dp__gemm2_block_##SUF(j, j->a_pack + ir * j->lanes * j->kc, j->b_pack + jr * j->nr * j->kc, j->kc, j->beta,\
                                      ir, j->jc + jr * j->nr, dp__gemm_min(j->nr, j->n - j->jc - jr * j->nr));\
    }                                                                                                         \
}                                                                                                             \
/* Small A (all of it packed fits DP__GEMM2_SMALL_A): two passes over the range                               \
   loop in all instead of two per slice. Pass 1, item s * slivers + i: sliver                                 \
   i of slice s, into slice s's region (kc_max rows of every sliver before it). */                            \
static void dp__gemm2_pack_all_a_##SUF(int64_t begin, int64_t end, void *user) {                              \
    const dp__gemm_job_##SUF *j = (const dp__gemm_job_##SUF *)user;                                           \
    int64_t it;                                                                                               \
    for (it = begin; it < end; it++) {                                                                        \
        const int64_t pc = it / j->slivers * j->kc_max, i = it % j->slivers, kc = dp__gemm_min(j->kc_max, j->k - pc);\
        dp__gemm2_pack_a1_##SUF(j, i, pc, kc, j->a_pack + (pc * j->slivers + i * kc) * DP__GEMM2_MR * j->lanes);\
    }                                                                                                         \
}                                                                                                             \
/* Pass 2, item jr: B panel jr over all of k, each slice packed just before                                   \
   its use (in L1), against every sliver; each block gets the kernel calls of                                 \
   the tiled schedule in the same order, so the bits are the same. */                                         \
static void dp__gemm2_panels_##SUF(int64_t begin, int64_t end, void *user) {                                  \
    const dp__gemm_job_##SUF *j = (const dp__gemm_job_##SUF *)user;                                           \
    int64_t jr, pc, ir;                                                                                       \
    for (jr = begin; jr < end; jr++) {                                                                        \
        T *bp = j->b_pack + jr * j->nr * j->kc_max;                                                           \
        for (pc = 0; pc < j->k; pc += j->kc_max) {                                                            \
            const int64_t kc = dp__gemm_min(j->kc_max, j->k - pc);                                            \
            const T *ap = j->a_pack + pc * j->slivers * DP__GEMM2_MR * j->lanes;                              \
            dp__gemm2_pack_b1_##SUF(j, jr, pc, kc, bp);                                                       \
            for (ir = 0; ir < j->m; ir += DP__GEMM2_MR, ap += DP__GEMM2_MR * j->lanes * kc)                   \
                dp__gemm2_block_##SUF(j, ap, bp, kc, pc == 0 ? j->beta : (T)1, ir, jr * j->nr, dp__gemm_min(j->nr, j->n - jr * j->nr));\
        }                                                                                                     \
    }                                                                                                         \
}                                                                                                             \
/* No workspace to be had (bfn NULL): the packed path's kernel calls on the                                   \
   same slices, one B panel and one A sliver at a time packed on the stack,                                   \
   on the calling thread: slower, the same bits, no memory (cold: its 40 to                                   \
   64 KiB of stack stay out of the caller's frame). */                                                        \
DP__COLD static void dp__gemm2_serial_##SUF(dp__gemm_job_##SUF *j, int64_t kc_max, T beta) {                  \
    unsigned char raw[sizeof(T) * (DP__GEMM2_MR * DP__GEMM_LANES(T) + DP__GEMM2_NR_MAX(T)) * DP__GEMM2_KC + 64];\
    T *bp = (T *)(void *)(raw + (64 - (uintptr_t)raw % 64) % 64), *ap = bp + j->nr * kc_max;                  \
    int64_t pn, pc, it, kc;                                                                                   \
    j->jc = 0; j->nc = j->n;                                                                                  \
    for (pn = 0; pn * j->nr < j->n; pn++)                                                                     \
        for (pc = 0; pc < j->k; pc += kc) {                                                                   \
            kc = dp__gemm_min(kc_max, j->k - pc);                                                             \
            dp__gemm2_pack_b1_##SUF(j, pn, pc, kc, bp);                                                       \
            for (it = 0; it < j->slivers; it++) {                                                             \
                dp__gemm2_pack_a1_##SUF(j, it, pc, kc, ap);                                                   \
                dp__gemm2_block_##SUF(j, ap, bp, kc, pc == 0 ? beta : (T)1, it * DP__GEMM2_MR, pn * j->nr,    \
                                      dp__gemm_min(j->nr, j->n - pn * j->nr));                                \
            }                                                                                                 \
        }                                                                                                     \
}                                                                                                             \
static void dp__gemm2_run_##SUF(dp_engine *eng, int par, int64_t n, dp_range_fn fn, void *job) {              \
    if (par && n > 1) {                                                                                       \
        dp_range_desc d;                                                                                      \
        d.n = n; d.grain = 1; d.fn = fn; d.user = job; d.deterministic = 1;                                   \
        if (dp_parallel_for(eng, &d) == DP_OK) return;                                                        \
    }                                                                                                         \
    fn(0, n, job);                                                                                            \
}                                                                                                             \
/* C = alpha op(A) op(B) + beta C; simd 0 forces the portable kernel; eng   \
   NULL runs on the caller alone. */                                                                          \
DP__GEMM_MAYBE_UNUSED static int dp__gemm2_##SUF(dp_engine *eng, int simd, int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha, \
                            const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc,      \
                            dp_gemm_pack_fn bfn, void *buser) {                                               \
    dp__gemm_job_##SUF j;                                                                                     \
    unsigned char local[16384 + 64], *mem;                                                                    \
    dp__gemm_ws *ws = NULL;                                                                                   \
    int64_t kc_max, nc_max, nslices, a_elems, b_elems;                                                        \
    size_t bytes;                                                                                             \
    int par, small;                                                                                           \
    if (m <= 0 || n <= 0) return 0;                                                                           \
    if (k <= 0 || alpha == (T)0) { dp__gemm_scale_##SUF(m, n, beta, c, ldc); return 0; }                     \
    DP__GEMM2_DOT_##SUF                                 /* the narrow path (bfn: op(B) staged transposed) */  \
    memset(&j, 0, sizeof j);                                                                                  \
    j.bfn = bfn; j.buser = buser;                                                                             \
    j.kernel = dp__gemm_kernel_##SUF; j.nr = DP__GEMM_NR(T); j.lanes = DP__GEMM_LANES(T);                     \
    j.mc = DP__GEMM2_MC / (int64_t)sizeof(T);                                                                 \
    (void)simd;                                                                                               \
    DP__GEMM2_PICK_##SUF                                                                                      \
    j.m = m; j.n = n; j.k = k; j.alpha = alpha; j.a = a; j.b = b; j.c = c; j.ldc = ldc;                       \
    j.a_rs = ta ? 1 : lda; j.a_cs = ta ? lda : 1; j.b_rs = tb ? 1 : ldb; j.b_cs = tb ? ldb : 1;               \
    nslices = (k + DP__GEMM2_KC - 1) / DP__GEMM2_KC;                                                          \
    kc_max = (k + nslices - 1) / nslices;               /* even slices: no thin last one */                   \
    nc_max = dp__gemm_min(n, DP__GEMM2_NC);                                                                   \
    j.slivers = (m + DP__GEMM2_MR - 1) / DP__GEMM2_MR;                                                        \
    a_elems = j.slivers * DP__GEMM2_MR * j.lanes * k;                 /* all of A, packed */                  \
    small = n <= DP__GEMM2_NC && (size_t)a_elems * sizeof(T) <= DP__GEMM2_SMALL_A;                            \
    if (!small) a_elems = j.slivers * DP__GEMM2_MR * j.lanes * kc_max;  /* one slice of it */                 \
    a_elems = (a_elems + 15) / 16 * 16;                                                                       \
    b_elems = (nc_max + j.nr - 1) / j.nr * j.nr * kc_max;                                                     \
    bytes = sizeof(T) * (size_t)(a_elems + b_elems) + 64;                                                     \
    if (bytes <= sizeof local) mem = local;                                                                   \
    else if ((ws = dp__gemm_ws_get(eng, bytes)) != NULL) mem = (unsigned char *)(ws + 1);                     \
    else if (bfn) return -1;                                                                                  \
    else { dp__gemm2_serial_##SUF(&j, kc_max, beta); return 0; }                                              \
    j.a_pack = (T *)(void *)(mem + (64 - (uintptr_t)mem % 64) % 64);                                          \
    j.b_pack = j.a_pack + a_elems;                                                                            \
    par = eng != NULL && (double)m * (double)n * (double)k >= DP__GEMM2_PAR_MIN;                              \
    if (small) {                                                                                              \
        j.nc = n; j.kc_max = kc_max; j.beta = beta; j.panels = (n + j.nr - 1) / j.nr;                         \
        dp__gemm2_run_##SUF(eng, par, j.slivers * ((k + kc_max - 1) / kc_max), dp__gemm2_pack_all_a_##SUF, &j);\
        dp__gemm2_run_##SUF(eng, par, j.panels, dp__gemm2_panels_##SUF, &j);                                  \
        dp__gemm_ws_put(eng, ws);                                                                             \
        return 0;                                                                                             \
    }                                                                                                         \
    for (j.jc = 0; j.jc < n; j.jc += DP__GEMM2_NC) {                                                          \
        int64_t tiles_r = (m + j.mc - 1) / j.mc;                                                              \
        j.nc = dp__gemm_min(DP__GEMM2_NC, n - j.jc);                                                          \
        j.panels = (j.nc + j.nr - 1) / j.nr;                                                                  \
        j.tiles_c = dp__gemm_min(j.panels, (DP__GEMM2_TILES + tiles_r - 1) / tiles_r);                        \
        j.tile_cols = (j.panels + j.tiles_c - 1) / j.tiles_c;                                                 \
        j.tiles_c = (j.panels + j.tile_cols - 1) / j.tile_cols;                                               \
        for (j.pc = 0; j.pc < k; j.pc += j.kc) {                                                              \
            j.kc = dp__gemm_min(kc_max, k - j.pc);                                                            \
            j.beta = j.pc == 0 ? beta : (T)1;                                                                 \
            dp__gemm2_run_##SUF(eng, par, j.slivers + j.panels, dp__gemm2_pack_##SUF, &j);                    \
            dp__gemm2_run_##SUF(eng, par, tiles_r * j.tiles_c, dp__gemm2_tiles_##SUF, &j);                    \
        }                                                                                                     \
    }                                                                                                         \
    dp__gemm_ws_put(eng, ws);                                                                                 \
    return 0;                                                                                                 \
}

#ifdef DP__GEMM_X86
#  define DP__GEMM2_PACK_A6_f32 if (cs == 1 && j->kernel == dp__gemm_avx2_f32) { p = dp__pack_rows6_avx2(src, rs, kc, out); out += p * 6; src += p; }
#  define DP__GEMM2_PACK_B16_f32 if (nr == 16 && j->kernel == dp__gemm_avx2_f32) p0 = dp__pack_rows16_avx2(src, cs, kc, out);
#  define DP__GEMM2_PICK_f32 if (simd && dp__cpu_avx2_fma()) { j.kernel = dp__gemm_avx2_f32; j.nr = 16; j.lanes = 1; }
#  define DP__GEMM2_PICK_f64 if (simd && dp__cpu_avx2_fma()) { j.kernel = dp__gemm_avx2_f64; j.nr = 8; j.lanes = 1; }
#  define DP__GEMM2_DOT_f32 if (simd && !ta && tb && DP__GEMM2_NARROW(m, n, k) && dp__cpu_avx2_fma()) {                               \
        if (bfn) return dp__gemm_dot_staged_f32(eng, m, n, k, alpha, a, lda, bfn, buser, beta, c, ldc);                               \
        dp__gemm_dot_f32(eng, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); return 0; }
#else
#  define DP__GEMM2_DOT_f32
#  define DP__GEMM2_PACK_A6_f32
#  define DP__GEMM2_PACK_B16_f32
#  define DP__GEMM2_PICK_f32
#  define DP__GEMM2_PICK_f64
#endif
#define DP__GEMM2_PACK_A6_f64
#define DP__GEMM2_PACK_B16_f64
#define DP__GEMM2_DOT_f64
DP__GEMM2_DEFINE(float, f32)
DP__GEMM2_DEFINE(double, f64)

/* >>dot product --------------------------------------------------------
   Both are matrix multiplies: the portable blocked kernel above, or CBLAS
   when DEPENG_USE_CBLAS is defined (link e.g. -lopenblas). */
#ifdef DEPENG_USE_CBLAS
#include <cblas.h>
#endif
/* C (m x n, row stride ldc) = op(A) op(B) + beta * C, float32 or float64,
   over eng's range loop when eng is not NULL (see dp__gemm2_*). */
static void dp__matmul(dp_engine *eng, dp_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                       const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
#ifdef DEPENG_USE_CBLAS
    /* m, n or k 0: BLAS wants each leading dimension >= max(1, its row's
       length) even for an empty operand and refuses the call otherwise
       (OpenBLAS leaves C as it was, the reference CBLAS exits), while dot
       passes 0 for an empty row; the portable path (nothing, or C = beta C)
       reads no operand and allocates nothing */
    if (m <= 0 || n <= 0 || k <= 0) {
        if (t == DP_FLOAT32) dp__gemm2_f32(NULL, 1, ta, tb, m, n, k, 1.0f, (const float *)a, lda, (const float *)b, ldb, (float)beta, (float *)c, ldc, NULL, NULL);
        else dp__gemm2_f64(NULL, 1, ta, tb, m, n, k, 1.0, (const double *)a, lda, (const double *)b, ldb, beta, (double *)c, ldc, NULL, NULL);
        return;
    }
    (void)eng;
    if (t == DP_FLOAT32) cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                                     1.0f, (const float *)a, (int)lda, (const float *)b, (int)ldb, (float)beta, (float *)c, (int)ldc);
    else cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                     1.0, (const double *)a, (int)lda, (const double *)b, (int)ldb, beta, (double *)c, (int)ldc);
#else
    if (t == DP_FLOAT32) dp__gemm2_f32(eng, 1, ta, tb, m, n, k, 1.0f, (const float *)a, lda, (const float *)b, ldb, (float)beta, (float *)c, ldc, NULL, NULL);
    else dp__gemm2_f64(eng, 1, ta, tb, m, n, k, 1.0, (const double *)a, lda, (const double *)b, ldb, beta, (double *)c, ldc, NULL, NULL);
#endif
}
DP_IMPL void dp_gemm(dp_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                    const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    dp__matmul(NULL, t, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
}
DP_IMPL void dp_gemm_on(dp_engine *eng, dp_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                        const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    dp__matmul(eng, t, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
}
DP_IMPL dp_result dp_gemm_pack_b_on(dp_engine *eng, dp_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a,
                                    int64_t lda, dp_gemm_pack_fn pack, void *user, double beta, void *c, int64_t ldc) {
    int r;
    if (!pack || (t != DP_FLOAT32 && t != DP_FLOAT64)) return DP_ERROR_INVALID_ARGS;
#ifdef DEPENG_USE_CBLAS
    {   /* op(B) whole for CBLAS, laid out as tb says (CBLAS's bits may depend on it) */
        dp__gemm_ws *ws = NULL;
        void *buf = NULL;
        if (m > 0 && n > 0 && k > 0) {
            if ((ws = dp__gemm_ws_get(eng, dp_dtype_size(t) * (size_t)n * (size_t)k)) == NULL) return DP_ERROR_OUT_OF_MEMORY;
            buf = ws + 1;
            if (tb) dp__gemm_stage_t(NULL, dp_dtype_size(t), m, n, k, pack, user, buf);
            else pack(user, 0, k, 0, n, n, buf);
        }
        dp__matmul(eng, t, ta, tb != 0, m, n, k, a, lda, buf, tb ? (k > 0 ? k : 1) : (n > 0 ? n : 1), beta, c, ldc);
        dp__gemm_ws_put(eng, ws);
        r = 0;
    }
#else
    if (t == DP_FLOAT32) r = dp__gemm2_f32(eng, 1, ta, tb != 0, m, n, k, 1.0f, (const float *)a, lda, NULL, 0, (float)beta, (float *)c, ldc, pack, user);
    else r = dp__gemm2_f64(eng, 1, ta, tb != 0, m, n, k, 1.0, (const double *)a, lda, NULL, 0, beta, (double *)c, ldc, pack, user);
#endif
    return r ? DP_ERROR_OUT_OF_MEMORY : DP_OK;
}
static double dp__beta_of(dp_req req) { return req == DP_REQ_ADD ? 1.0 : 0.0; }
static const dp_param_def dp__dot_params[] = {
    {"transpose_a", DP_PARAM_BOOL, "false", 0, 0, NULL, "use a's transpose"},
    {"transpose_b", DP_PARAM_BOOL, "false", 0, 0, NULL, "use b's transpose"},
};
static int dp__infer_dot(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                         dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int ta = (int)p->v[0].i, tb = (int)p->v[1].i;
    char s1[160], s2[160];
    (void)nin; (void)nout;
    if (it[0] != it[1] || (it[0] != DP_FLOAT32 && it[0] != DP_FLOAT64)) { snprintf(msg, cap, "dtypes %s and %s: both float32 or both float64", dp_dtype_name(it[0]), dp_dtype_name(it[1])); return -1; }
    if (is[0].ndim != 2 || is[1].ndim != 2 || is[0].dims[ta ? 0 : 1] != is[1].dims[tb ? 1 : 0]) {
        snprintf(msg, cap, "shapes %s and %s (transpose_a %d, transpose_b %d) do not multiply: 2-d, inner sizes equal",
                 dp__shape_str(&is[0], s1, sizeof s1), dp__shape_str(&is[1], s2, sizeof s2), ta, tb);
        return -1;
    }
    memset(os, 0, sizeof *os);
    os->ndim = 2; os->dims[0] = is[0].dims[ta ? 1 : 0]; os->dims[1] = is[1].dims[tb ? 0 : 1];
    *ot = it[0];
    return 0;
}
static int dp__k_dot(const dp_kernel_ctx *k) {
    const dp_shape *as = dp_nd_shape(k->inputs[0]), *bs = dp_nd_shape(k->inputs[1]);
    int ta = (int)k->params->v[0].i, tb = (int)k->params->v[1].i;
    int64_t m = as->dims[ta ? 1 : 0], kk = as->dims[ta ? 0 : 1], n = bs->dims[tb ? 0 : 1];
    if (k->req[0] == DP_REQ_NULL) return 0;
    dp__matmul(k->rc ? k->rc->engine : NULL, dp_nd_dtype(k->inputs[0]), ta, tb, m, n, kk, dp_nd_data(k->inputs[0]), as->dims[1], dp_nd_data(k->inputs[1]),
               bs->dims[1], dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0]), n);
    return 0;
}
/* inputs (og, A, B) with C = op(A) op(B): d op(A) = og op(B)^T and
   d op(B) = op(A)^T og, transposed back where A or B was. */
static int dp__kg_dot(const dp_kernel_ctx *k) {
    const dp_shape *as = dp_nd_shape(k->inputs[1]), *bs = dp_nd_shape(k->inputs[2]);
    const void *og = dp_nd_data(k->inputs[0]), *a = dp_nd_data(k->inputs[1]), *b = dp_nd_data(k->inputs[2]);
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    dp_engine *e = k->rc ? k->rc->engine : NULL;
    int ta = (int)k->params->v[0].i, tb = (int)k->params->v[1].i;
    int64_t m = as->dims[ta ? 1 : 0], kk = as->dims[ta ? 0 : 1], n = bs->dims[tb ? 0 : 1];
    if (k->req[0] != DP_REQ_NULL) {
        if (!ta) dp__matmul(e, t, 0, !tb, m, kk, n, og, n, b, bs->dims[1], dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0]), kk);
        else dp__matmul(e, t, tb, 1, kk, m, n, b, bs->dims[1], og, n, dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0]), m);
    }
    if (k->req[1] != DP_REQ_NULL) {
        if (!tb) dp__matmul(e, t, !ta, 0, kk, n, m, a, as->dims[1], og, n, dp__beta_of(k->req[1]), dp_nd_data(k->outputs[1]), n);
        else dp__matmul(e, t, 1, ta, n, kk, m, og, n, a, as->dims[1], dp__beta_of(k->req[1]), dp_nd_data(k->outputs[1]), kk);
    }
    return 0;
}
static void dp__register_linear(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "dot"; op.doc = "matrix product of 2-d a and b, each optionally transposed"; op.num_inputs = 2; op.num_outputs = 1;
    op.params = dp__dot_params; op.num_params = 2; op.infer = dp__infer_dot; op.forward_cpu = dp__k_dot;
    op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dp__register_differentiable(&op, "_backward_dot", "gradient of dot", dp__kg_dot, 0);
}
/* >>copy, reshape and the optimizer updates -------------------------------------
   _copy writes (or adds, by req) its input into its output; autograd uses
   it to seed and to sum gradients. reshape is a copy into another shape
   (MXNet's: 0 keeps that axis, one -1 is inferred), so unlike the view
   dp_nd_reshape it is recorded and differentiable. */
static int dp__k_copy(const dp_kernel_ctx *k) {
    dp__move_run(dp_nd_data(k->outputs[0]), dp_nd_dtype(k->outputs[0]), 0, dp_nd_data(k->inputs[0]), dp_nd_dtype(k->inputs[0]), 0,
                 dp_shape_size(dp_nd_shape(k->outputs[0])), k->req[0]);
    return 0;
}
/* the gradient of reshape and _copy: inputs (ograd, x), ograd copied in x's shape */
static int dp__kg_reshape(const dp_kernel_ctx *k) {
    dp_kernel_ctx c = *k;
    c.num_inputs = 1;
    return dp__k_copy(&c);
}
static const dp_param_def dp__reshape_params[] = {{"shape", DP_PARAM_SHAPE, NULL, 0, 0, NULL, "the new shape; 0 keeps the input's axis, one -1 is inferred"}};
static int dp__infer_reshape(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                             dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    const dp_shape *want = &p->v[0].shape;
    int64_t known = 1, n = dp_shape_size(&is[0]);
    int d, infer = -1;
    char s1[160], s2[160];
    (void)nin; (void)nout;
    memset(os, 0, sizeof *os);
    os->ndim = want->ndim;
    for (d = 0; d < want->ndim; d++) {
        int64_t v = want->dims[d];
        if (v == 0 && d < is[0].ndim) v = is[0].dims[d];
        if (v == -1 && infer < 0) { infer = d; continue; }
        if (v < 0 || (v == 0 && d >= is[0].ndim)) break;
        os->dims[d] = v;
        known *= v;
    }
    if (d == want->ndim && infer >= 0 && known > 0 && n % known == 0) os->dims[infer] = n / known;
    if (d < want->ndim || (infer >= 0 && (known <= 0 || n % known != 0)) || dp_shape_size(os) != n) {
        snprintf(msg, cap, "parameter 'shape' = %s does not fit the input %s", dp__shape_str(want, s1, sizeof s1), dp__shape_str(&is[0], s2, sizeof s2));
        return -1;
    }
    *ot = it[0];
    return 0;
}
/* cast(x, dtype): x converted element by element (dp__move_elem: a float
   into an integer by the conversion rule, integers into narrower ones
   wrapping, one dtype bit-exact); its gradient is the output gradient cast
   back to x's dtype. */
static const dp_param_def dp__cast_params[] = {{"dtype", DP_PARAM_ENUM, NULL, 0, 0, DP__DTYPE_CHOICES, "the output's dtype"}};
static int dp__infer_cast(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                          dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)nin; (void)nout; (void)it; (void)msg; (void)cap;
    *os = is[0]; *ot = (dp_dtype)p->v[0].i;
    return 0;
}
/* The updates' math, one element at a time, shared with the GPU kernels. */
static DP__HD double dp__opt_clip(double g, double clip) { return clip > 0 ? (g < -clip ? -clip : g > clip ? clip : g) : g; }
/* MXNet's order: SGD clips the rescaled gradient and adds the decay after;
   Adam adds the decay, then clips. */
static DP__HD double dp__opt_grad(double g, double w, double rescale, double clip, double wd, int decay_first) {
    return decay_first ? dp__opt_clip(g * rescale + wd * w, clip) : dp__opt_clip(g * rescale, clip) + wd * w;
}
static DP__HD double dp__f_sgd(double w, double g, double lr) { return w - lr * g; }
static DP__HD double dp__f_sgd_mom(double *mom, double g, double lr, double momentum) { *mom = momentum * *mom - lr * g; return *mom; }
static DP__HD double dp__f_adam(double *m, double *v, double g, double lr, double b1, double b2, double eps) {
    *m = b1 * *m + (1 - b1) * g;
    *v = b2 * *v + (1 - b2) * g * g;
    return lr * *m / (sqrt(*v) + eps);
}
enum { DP__OPT_SGD, DP__OPT_SGD_MOM, DP__OPT_ADAM };
/* Adam's bias correction (Kingma and Ba, "Adam", algorithm 1 written with
   one step size): at step t > 0 (parameter 7), lr times
   sqrt(1 - beta2^t) / (1 - beta1^t). Host code; the GPU kernels call it too. */
static void dp__opt_bias_correct(int kind, const dp_params *ps, double *p) {
    double t, c1;
    if (kind != DP__OPT_ADAM || ps->count < 8 || ps->v[7].i <= 0) return;
    t = (double)ps->v[7].i;
    c1 = 1 - pow(p[4], t);
    if (c1 > 0) p[0] *= sqrt(1 - pow(p[5], t)) / c1;
}
/* One element of an update: the new weight, from weight w and gradient g;
   *s1 (momentum, or Adam's mean) and *s2 (Adam's variance) are updated. p
   is the parameters in order: lr, wd, rescale_grad, clip_gradient, then
   momentum, or beta1, beta2, epsilon. The GPU kernels call it; the host's
   loops spell the same math out (DP__UPD_GEN_E). */
DP__PRIVATE DP__HD double dp__opt_step(int kind, double w, double g, double *s1, double *s2, const double *p) {
    double gi = dp__opt_grad(g, w, p[2], p[3], p[1], kind == DP__OPT_ADAM);
    if (kind == DP__OPT_SGD) return dp__f_sgd(w, gi, p[0]);
    if (kind == DP__OPT_SGD_MOM) return w + dp__f_sgd_mom(s1, gi, p[0], p[4]);
    return w - dp__f_adam(s1, s2, gi, p[0], p[4], p[5], p[6]);
}
/* lr, wd, rescale_grad, clip_gradient first in every update's parameters */
#define DP__OPT_COMMON_PARAMS \
    {"lr", DP_PARAM_FLOAT, NULL, 0, 0, NULL, "learning rate"}, \
    {"wd", DP_PARAM_FLOAT, "0", 0, 0, NULL, "weight decay: adds wd * weight to the gradient"}, \
    {"rescale_grad", DP_PARAM_FLOAT, "1", 0, 0, NULL, "the gradient is multiplied by it first"}, \
    {"clip_gradient", DP_PARAM_FLOAT, "-1", 0, 0, NULL, "then limited to [-clip, clip] if > 0"}
static const dp_param_def dp__sgd_params[] = {DP__OPT_COMMON_PARAMS, {"momentum", DP_PARAM_FLOAT, "0", 0, 0, NULL, "sgd_mom_update: the momentum"}};
static const dp_param_def dp__adam_params[] = {DP__OPT_COMMON_PARAMS,
    {"beta1", DP_PARAM_FLOAT, "0.9", 0, 1, NULL, "decay of the mean"}, {"beta2", DP_PARAM_FLOAT, "0.999", 0, 1, NULL, "decay of the variance"},
    {"epsilon", DP_PARAM_FLOAT, "1e-8", 0, 0, NULL, "added to the root of the variance"},
    {"t", DP_PARAM_INT, "0", 0, 1e15, NULL, "the step, from 1: lr is scaled by sqrt(1 - beta2^t) / (1 - beta1^t) (bias correction); 0: not"}};
static int dp__infer_update(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                            dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int i;
    char s1[160], s2[160];
    (void)p; (void)nout;
    for (i = 1; i < nin; i++)
        if (it[i] != it[0] || is[i].ndim != is[0].ndim || memcmp(is[i].dims, is[0].dims, sizeof(int64_t) * (size_t)is[0].ndim) != 0) {
            snprintf(msg, cap, "input %d is %s %s, the weight %s %s: they must match", i, dp_dtype_name(it[i]), dp__shape_str(&is[i], s1, sizeof s1),
                     dp_dtype_name(it[0]), dp__shape_str(&is[0], s2, sizeof s2));
            return -1;
        }
    if (it[0] != DP_FLOAT32 && it[0] != DP_FLOAT64) { snprintf(msg, cap, "the weight must be float32 or float64"); return -1; }
    *os = is[0]; *ot = it[0];
    return 0;
}
/* The updates on the CPU, one loop per kind and element type: no type
   switch per element, float32 computed in float32 (as PyTorch does; the
   float64 loops compute exactly what dp__opt_step does, so float64 results
   are unchanged), the rescale, clip, weight decay and state read and
   written in one pass over the arrays, the weight updated in place (out ==
   w; another output takes the generic loop below). The loops are plain C
   that gcc and clang vectorise; gcc's -O2 vectorises only loops that need
   no run-time alias check, hence DP__VEC_LOOPS (errno off so sqrt
   vectorises: the variance is never negative). A clip of 0 or less is
   turned into +infinity, which limits nothing (NaN stays NaN either way). */
#define DP__UPDATE_LOOPS(T, SUF, SQRT, ATTR)                                                                     \
DP__VEC_LOOPS ATTR static void dp__upd_sgd_##SUF(int64_t n, T *w, const T *g, const T *p) {                          \
    const T lr = p[0], wd = p[1], rs = p[2], clip = p[3];                                                       \
    int64_t i;                                                                                                  \
    for (i = 0; i < n; i++) {                                                                                   \
        T gi = g[i] * rs;                                                                                       \
        gi = -clip > gi ? -clip : gi;   /* one max and one min, NaN kept */                                     \
        gi = clip < gi ? clip : gi;                                                                             \
        w[i] = w[i] - lr * (gi + wd * w[i]);                                                                    \
    }                                                                                                           \
}                                                                                                               \
DP__VEC_LOOPS ATTR static void dp__upd_sgd_mom_##SUF(int64_t n, T *w, const T *g, T *mom, const T *p) {              \
    const T lr = p[0], wd = p[1], rs = p[2], clip = p[3], momentum = p[4];                                      \
    int64_t i;                                                                                                  \
    for (i = 0; i < n; i++) {                                                                                   \
        T gi = g[i] * rs, m;                                                                                    \
        gi = -clip > gi ? -clip : gi;   /* one max and one min, NaN kept */                                     \
        gi = clip < gi ? clip : gi;                                                                             \
        m = momentum * mom[i] - lr * (gi + wd * w[i]);                                                          \
        mom[i] = m;                                                                                             \
        w[i] = w[i] + m;                                                                                        \
    }                                                                                                           \
}                                                                                                               \
DP__VEC_LOOPS ATTR static void dp__upd_adam_##SUF(int64_t n, T *w, const T *g, T *mean, T *var, const T *p) {        \
    const T lr = p[0], wd = p[1], rs = p[2], clip = p[3], b1 = p[4], b2 = p[5], eps = p[6];                     \
    const T c1 = p[7], c2 = p[8];                                                                               \
    int64_t i;                                                                                                  \
    for (i = 0; i < n; i++) {                                                                                   \
        T gi = g[i] * rs + wd * w[i], m, v;                                                                     \
        gi = -clip > gi ? -clip : gi;   /* one max and one min, NaN kept */                                     \
        gi = clip < gi ? clip : gi;                                                                             \
        m = b1 * mean[i] + c1 * gi;                                                                             \
        v = b2 * var[i] + c2 * gi * gi;                                                                         \
        mean[i] = m;                                                                                            \
        var[i] = v;                                                                                             \
        w[i] = w[i] - lr * m / (SQRT(v) + eps);                                                                 \
    }                                                                                                           \
}
DP__UPDATE_LOOPS(float, f32, sqrtf, )
DP__UPDATE_LOOPS(double, f64, sqrt, )
#ifdef DP__GEMM_X86
/* The same loops in 256-bit vectors for CPUs with AVX2 (picked when run).
   Not FMA: gcc may contract a * b + c into one rounding where FMA is
   allowed, and the results must not depend on the CPU's features. */
DP__UPDATE_LOOPS(float, f32_avx2, sqrtf, __attribute__((target("avx2"))))
DP__UPDATE_LOOPS(double, f64_avx2, sqrt, __attribute__((target("avx2"))))
#  define DP__UPD_CALL(NAME, ARGS) do { if (dp__cpu_avx2_fma()) NAME##_avx2 ARGS; else NAME ARGS; } while (0)
/* gcc vectorises no sqrt that may set errno, whatever the function's
   optimize attribute says: Adam's float32 loop is written out. Every
   operation as in the loop above, in its order, so the bits are the same. */
__attribute__((target("avx2"))) static void dp__upd_adam_f32_avx2v(int64_t n, float *w, const float *g, float *mean, float *var, const float *p) {
    const __m256 lr = _mm256_set1_ps(p[0]), wd = _mm256_set1_ps(p[1]), rs = _mm256_set1_ps(p[2]), clip = _mm256_set1_ps(p[3]);
    const __m256 nclip = _mm256_set1_ps(-p[3]), b1 = _mm256_set1_ps(p[4]), b2 = _mm256_set1_ps(p[5]), eps = _mm256_set1_ps(p[6]);
    const __m256 c1 = _mm256_set1_ps(p[7]), c2 = _mm256_set1_ps(p[8]);
    int64_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 wi = _mm256_loadu_ps(w + i), gi, m, v;
        gi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(g + i), rs), _mm256_mul_ps(wd, wi));
        gi = _mm256_min_ps(clip, _mm256_max_ps(nclip, gi));     /* (a > b ? a : b), NaN gi kept */
        m = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(mean + i)), _mm256_mul_ps(c1, gi));
        v = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(var + i)), _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
        _mm256_storeu_ps(mean + i, m);
        _mm256_storeu_ps(var + i, v);
        _mm256_storeu_ps(w + i, _mm256_sub_ps(wi, _mm256_div_ps(_mm256_mul_ps(lr, m), _mm256_add_ps(_mm256_sqrt_ps(v), eps))));
    }
    dp__upd_adam_f32_avx2(n - i, w + i, g + i, mean + i, var + i, p);
}
#else
#  define DP__UPD_CALL(NAME, ARGS) NAME ARGS
#endif
/* One chunk of an update, [begin, end) (a dp_range_fn). */
typedef struct dp__upd_job {
    int kind;
    dp_dtype t;
    void *w, *s1, *s2, *y;             /* y: the general form's output (dp__upd_gen_range) */
    const void *g;
    dp_req req;
    float pf[9];
    double pd[9];
} dp__upd_job;
static void dp__upd_range(int64_t begin, int64_t end, void *user) {
    const dp__upd_job *j = (const dp__upd_job *)user;
    int64_t n = end - begin;
    if (j->t == DP_FLOAT32) {
        float *w = (float *)j->w + begin, *s1 = j->s1 ? (float *)j->s1 + begin : NULL, *s2 = j->s2 ? (float *)j->s2 + begin : NULL;
        const float *g = (const float *)j->g + begin;
        if (j->kind == DP__OPT_SGD) DP__UPD_CALL(dp__upd_sgd_f32, (n, w, g, j->pf));
        else if (j->kind == DP__OPT_SGD_MOM) DP__UPD_CALL(dp__upd_sgd_mom_f32, (n, w, g, s1, j->pf));
#ifdef DP__GEMM_X86
        else if (dp__cpu_avx2_fma()) dp__upd_adam_f32_avx2v(n, w, g, s1, s2, j->pf);
#endif
        else dp__upd_adam_f32(n, w, g, s1, s2, j->pf);
    } else {
        double *w = (double *)j->w + begin, *s1 = j->s1 ? (double *)j->s1 + begin : NULL, *s2 = j->s2 ? (double *)j->s2 + begin : NULL;
        const double *g = (const double *)j->g + begin;
        if (j->kind == DP__OPT_SGD) DP__UPD_CALL(dp__upd_sgd_f64, (n, w, g, j->pd));
        else if (j->kind == DP__OPT_SGD_MOM) DP__UPD_CALL(dp__upd_sgd_mom_f64, (n, w, g, s1, j->pd));
        else DP__UPD_CALL(dp__upd_adam_f64, (n, w, g, s1, s2, j->pd));
    }
}
/* The general form: an output other than the weight (out == w too when
   adding to it), any req, any dtype. Each element as dp__opt_step computes
   it, in double from the arrays' values, each value stored rounded once
   (the states by write, the output by req): float32 too, so its bits are
   not the in-place loops' above. The math is spelled out (DP__UPD_GEN_E:
   gcc inlines no function into DP__VEC_LOOPS loops), in dp__opt_step's
   order; a clip of 0 or less is +infinity (limits nothing, as
   dp__opt_clip's test does). float32 and float64 in typed loops, one per
   kind and req (add-to: y[i] read before it is written, so out == w is
   safe); other dtypes in blocks of DP__BLK. */
static void dp__discard(double v) { (void)v; }   /* req null: the weight computed, not stored (nvcc counts (void)v as unused) */
#define DP__UPD_CLIP_E(x, c) ((x) < -(c) ? -(c) : (x) > (c) ? (c) : (x))
#define DP__UPD_GEN_E(KIND, w_, g_, a_, b_, wi_) do {                                                                   \
        if ((KIND) == DP__OPT_ADAM) {                                                                                   \
            double gi_ = DP__UPD_CLIP_E((g_) * rs + wd * (w_), clip);                                                   \
            a_ = p4 * a_ + (1 - p4) * gi_;                                                                              \
            b_ = p5 * b_ + (1 - p5) * gi_ * gi_;                                                                        \
            wi_ = (w_) - lr * a_ / (sqrt(b_) + p6);                                                                     \
        } else {                                                                                                        \
            double gi_ = DP__UPD_CLIP_E((g_) * rs, clip) + wd * (w_);                                                   \
            if ((KIND) == DP__OPT_SGD) wi_ = (w_) - lr * gi_;                                                           \
            else { a_ = p4 * a_ - lr * gi_; wi_ = (w_) + a_; }                                                          \
        }                                                                                                               \
    } while (0)
#define DP__UPD_GEN_LOOP(T, KIND, STORE) do {                                                                           \
        for (i = b; i < e; i++) {                                                                                       \
            double a = (KIND) != DP__OPT_SGD ? (double)s1[i] : 0, c = (KIND) == DP__OPT_ADAM ? (double)s2[i] : 0, wi;    \
            DP__UPD_GEN_E(KIND, (double)w[i], (double)g[i], a, c, wi);                                                  \
            if ((KIND) != DP__OPT_SGD) s1[i] = (T)a;                                                                    \
            if ((KIND) == DP__OPT_ADAM) s2[i] = (T)c;                                                                   \
            STORE;                                                                                                      \
        }                                                                                                               \
    } while (0)
#define DP__UPD_GEN_KIND(T, KIND) do {                                                                                  \
        if (j->req == DP_REQ_ADD) DP__UPD_GEN_LOOP(T, KIND, y[i] = (T)(wi + (double)y[i]));                             \
        else if (j->req == DP_REQ_NULL) DP__UPD_GEN_LOOP(T, KIND, dp__discard(wi));                                     \
        else DP__UPD_GEN_LOOP(T, KIND, y[i] = (T)wi);                                                                   \
    } while (0)
#define DP__UPD_GEN_TYPED(T, SUF)                                                                                       \
DP__VEC_LOOPS static void dp__upd_gen_##SUF(const dp__upd_job *j, int64_t b, int64_t e) {                               \
    const T *w = (const T *)j->w, *g = (const T *)j->g;                                                                 \
    T *s1 = (T *)j->s1, *s2 = (T *)j->s2, *y = (T *)j->y;                                                               \
    const double lr = j->pd[0], wd = j->pd[1], rs = j->pd[2], clip = j->pd[3], p4 = j->pd[4], p5 = j->pd[5], p6 = j->pd[6]; \
    int64_t i;                                                                                                          \
    if (j->kind == DP__OPT_SGD) DP__UPD_GEN_KIND(T, DP__OPT_SGD);                                                       \
    else if (j->kind == DP__OPT_SGD_MOM) DP__UPD_GEN_KIND(T, DP__OPT_SGD_MOM);                                          \
    else DP__UPD_GEN_KIND(T, DP__OPT_ADAM);                                                                             \
}
DP__UPD_GEN_TYPED(float, f32)
DP__UPD_GEN_TYPED(double, f64)
static void dp__upd_gen_range(int64_t begin, int64_t end, void *user) {
    const dp__upd_job *j = (const dp__upd_job *)user;
    const double lr = j->pd[0], wd = j->pd[1], rs = j->pd[2], clip = j->pd[3], p4 = j->pd[4], p5 = j->pd[5], p6 = j->pd[6];
    double w[DP__BLK], g[DP__BLK], s1[DP__BLK], s2[DP__BLK];
    int64_t k, m, i;
    if (j->t == DP_FLOAT32) { dp__upd_gen_f32(j, begin, end); return; }
    if (j->t == DP_FLOAT64) { dp__upd_gen_f64(j, begin, end); return; }
    for (k = begin; k < end; k += m) {
        m = end - k < DP__BLK ? end - k : DP__BLK;
        dp__blk_load(j->w, j->t, k, 1, m, w); dp__blk_load(j->g, j->t, k, 1, m, g);
        if (j->s1) dp__blk_load(j->s1, j->t, k, 1, m, s1);
        if (j->s2) dp__blk_load(j->s2, j->t, k, 1, m, s2);
        for (i = 0; i < m; i++) {
            double a = j->s1 ? s1[i] : 0, c = j->s2 ? s2[i] : 0;
            if (j->kind == DP__OPT_SGD) DP__UPD_GEN_E(DP__OPT_SGD, w[i], g[i], a, c, w[i]);
            else if (j->kind == DP__OPT_SGD_MOM) DP__UPD_GEN_E(DP__OPT_SGD_MOM, w[i], g[i], a, c, w[i]);
            else DP__UPD_GEN_E(DP__OPT_ADAM, w[i], g[i], a, c, w[i]);
            s1[i] = a; s2[i] = c;
        }
        if (j->s1) dp__blk_store(j->s1, j->t, k, m, s1, DP_REQ_WRITE);
        if (j->s2) dp__blk_store(j->s2, j->t, k, m, s2, DP_REQ_WRITE);
        if (j->req != DP_REQ_NULL) dp__blk_store(j->y, j->t, k, m, w, j->req);
    }
}
static int dp__update(const dp_kernel_ctx *k, int kind) {
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    const void *w = dp_nd_data(k->inputs[0]), *g = dp_nd_data(k->inputs[1]);
    void *s1 = k->num_inputs > 2 ? dp_nd_data(k->inputs[2]) : NULL, *s2 = k->num_inputs > 3 ? dp_nd_data(k->inputs[3]) : NULL;
    void *out = dp_nd_data(k->outputs[0]);
    int64_t i, n = dp_shape_size(dp_nd_shape(k->inputs[0]));
    double p[7] = {0, 0, 0, 0, 0, 0, 0};
    for (i = 0; i < k->params->count && i < 7; i++) p[i] = k->params->v[i].f;
    dp__opt_bias_correct(kind, k->params, p);
    if (out == w && (k->req[0] == DP_REQ_WRITE || k->req[0] == DP_REQ_INPLACE) && (t == DP_FLOAT32 || t == DP_FLOAT64)) {
        dp__upd_job j;
        memset(&j, 0, sizeof j);
        j.kind = kind; j.t = t; j.w = out; j.g = g; j.s1 = s1; j.s2 = s2;
        for (i = 0; i < 7; i++) j.pd[i] = p[i];
        if (j.pd[3] <= 0) j.pd[3] = HUGE_VAL;                 /* no clip */
        j.pd[7] = 1 - p[4]; j.pd[8] = 1 - p[5];               /* Adam's (1 - beta) */
        for (i = 0; i < 9; i++) j.pf[i] = (float)j.pd[i];
        dp__kernel_range(k, n, dp__upd_range, &j);
        return 0;
    }
    {
        dp__upd_job j;
        memset(&j, 0, sizeof j);
        j.kind = kind; j.t = t; j.w = (void *)(uintptr_t)w; j.g = g; j.s1 = s1; j.s2 = s2; j.y = out; j.req = k->req[0];
        for (i = 0; i < 7; i++) j.pd[i] = p[i];
        if (!(j.pd[3] > 0)) j.pd[3] = HUGE_VAL;               /* no clip (dp__opt_clip) */
        dp__kernel_range(k, n, dp__upd_gen_range, &j);
    }
    return 0;
}
static int dp__k_sgd(const dp_kernel_ctx *k) { return dp__update(k, DP__OPT_SGD); }
static int dp__k_sgd_mom(const dp_kernel_ctx *k) { return dp__update(k, DP__OPT_SGD_MOM); }
static int dp__k_adam(const dp_kernel_ctx *k) { return dp__update(k, DP__OPT_ADAM); }
static void dp__register_copy_and_updates(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "_copy"; op.doc = "y = x (req add: y += x)"; op.num_inputs = 1; op.num_outputs = 1; op.forward_cpu = dp__k_copy; op.inplace = 1;
    dp__register_differentiable(&op, "_backward__copy", "gradient of _copy", dp__kg_reshape, 1);
    memset(&op, 0, sizeof op);
    op.name = "reshape"; op.doc = "a copy in another shape (0 keeps an axis, -1 is inferred)"; op.num_inputs = 1; op.num_outputs = 1;
    op.params = dp__reshape_params; op.num_params = 1; op.infer = dp__infer_reshape; op.forward_cpu = dp__k_copy;
    dp__register_differentiable(&op, "_backward_reshape", "gradient of reshape", dp__kg_reshape, 0);
    memset(&op, 0, sizeof op);
    op.name = "cast"; op.doc = "x converted to dtype (see dp_nd_astype)"; op.num_inputs = 1; op.num_outputs = 1;
    op.params = dp__cast_params; op.num_params = 1; op.infer = dp__infer_cast; op.forward_cpu = dp__k_copy;
    dp__register_differentiable(&op, "_backward_cast", "gradient of cast", dp__kg_reshape, 0);
    memset(&op, 0, sizeof op);
    op.name = "sgd_update"; op.doc = "weight - lr * gradient (see the header)"; op.num_inputs = 2; op.num_outputs = 1;
    op.params = dp__sgd_params; op.num_params = 4; op.infer = dp__infer_update; op.forward_cpu = dp__k_sgd; op.inplace = 1;
    op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dp__register(&op);
    op.name = "sgd_mom_update"; op.doc = "momentum SGD; mutates mom (input 2)"; op.num_inputs = 3; op.num_params = 5;
    op.forward_cpu = dp__k_sgd_mom; op.mutate_inputs = 1u << 2;
    dp__register(&op);
    op.name = "adam_update"; op.doc = "Adam; mutates mean and var (inputs 2, 3)"; op.num_inputs = 4; op.params = dp__adam_params;
    op.num_params = 8; op.forward_cpu = dp__k_adam; op.mutate_inputs = 3u << 2;
    dp__register(&op);
}
/* >>take and accuracy ------------------------------------
   take copies rows of its data (the first axis) picked by an integer index
   array: bytes are moved, so every dtype stays exact. Its gradient adds
   each output-gradient row into the row it came from (a row taken twice
   gets both). accuracy compares two arrays element by element as numbers
   (argmax's int64 against float labels). An optimizer object owns a
   weight's update: its gradient, its state arrays and its step count. */
static const dp_param_def dp__take_params[] = {
    {"mode", DP_PARAM_ENUM, "raise", 0, 0, "raise|clip|wrap", "an index outside [0, rows): the kernel fails, it is clipped, or taken modulo rows"}};
static int dp__is_index_dtype(dp_dtype t) { return t == DP_INT64 || t == DP_INT32 || t == DP_UINT8; }
static int dp__infer_take(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                          dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    char s1[160], s2[160];
    int d;
    (void)p; (void)nin; (void)nout;
    if (!dp__is_index_dtype(it[1])) { snprintf(msg, cap, "indices are %s: int64, int32 or uint8 needed", dp_dtype_name(it[1])); return -1; }
    if (is[0].ndim < 1 || is[1].ndim + is[0].ndim - 1 > DP_MAX_DIMS) {
        snprintf(msg, cap, "data %s, indices %s: data needs an axis, and the result at most %d", dp__shape_str(&is[0], s1, sizeof s1),
                 dp__shape_str(&is[1], s2, sizeof s2), DP_MAX_DIMS);
        return -1;
    }
    memset(os, 0, sizeof *os);
    *os = is[1];
    for (d = 1; d < is[0].ndim; d++) os->dims[os->ndim++] = is[0].dims[d];
    *ot = it[0];
    return 0;
}
/* Both compile for the device too: the GPU kernels of take use them. */
static DP__HD int64_t dp__load_index(const void *p, int t, int64_t i) {
    if (t == DP_INT64) return ((const int64_t *)p)[i];
    if (t == DP_INT32) return ((const int32_t *)p)[i];
    return ((const uint8_t *)p)[i];
}
/* The row index j stands for under mode (0 raise, 1 clip, 2 wrap); -1 when
   it is out of range under raise (or there are no rows). */
static DP__HD int64_t dp__take_map(int64_t j, int64_t rows, int64_t mode) {
    if (j >= 0 && j < rows) return j;
    if (rows > 0 && mode == 1) return j < 0 ? 0 : rows - 1;
    if (rows > 0 && mode == 2) return (j % rows + rows) % rows;
    return -1;
}
static int64_t dp__take_row(const dp_kernel_ctx *k, int64_t j, int64_t rows, int64_t mode) {
    char msg[128];
    int64_t r = dp__take_map(j, rows, mode);
    if (r >= 0) return r;
    snprintf(msg, sizeof msg, "take: index %lld outside [0, %lld)", (long long)j, (long long)rows);
    dp_set_error(k->rc, msg);
    return -1;
}
static int dp__k_take(const dp_kernel_ctx *k) {
    const dp_ndarray *x = k->inputs[0], *ix = k->inputs[1];
    const char *src = (const char *)dp_nd_data(x);
    char *dst = (char *)dp_nd_data(k->outputs[0]);
    dp_dtype t = dp_nd_dtype(x);
    int64_t rows = dp_nd_shape(x)->dims[0], n = dp_shape_size(dp_nd_shape(ix)), width = 1, i, e;
    size_t row_bytes;
    int d;
    for (d = 1; d < dp_nd_shape(x)->ndim; d++) width *= dp_nd_shape(x)->dims[d];
    row_bytes = (size_t)width * dp_dtype_size(t);
    for (i = 0; i < n; i++) {
        int64_t r = dp__take_row(k, dp__load_index(dp_nd_data(ix), dp_nd_dtype(ix), i), rows, k->params->v[0].i);
        if (r < 0) return DP_ERROR_INVALID_ARGS;
        if (k->req[0] == DP_REQ_WRITE || k->req[0] == DP_REQ_INPLACE) memcpy(dst + (size_t)i * row_bytes, src + (size_t)r * row_bytes, row_bytes);
        else if (k->req[0] == DP_REQ_ADD)   /* added in double, as dp__store_elem adds */
            DP__BY_DTYPE(t, for (e = 0; e < width; e++) dp__store_elem(dst, T_, i * width + e, dp__load_elem(src, T_, r * width + e), DP_REQ_ADD));
    }
    return 0;
}
/* inputs (ograd, data, indices) -> (data's gradient, the indices' (zero)) */
static int dp__kg_take(const dp_kernel_ctx *k) {
    const dp_ndarray *x = k->inputs[1], *ix = k->inputs[2];
    const void *og = dp_nd_data(k->inputs[0]);
    void *g = dp_nd_data(k->outputs[0]);
    dp_dtype t = dp_nd_dtype(x);
    int64_t rows = dp_nd_shape(x)->dims[0], n = dp_shape_size(dp_nd_shape(ix)), width = 1, i, e;
    int d;
    for (d = 1; d < dp_nd_shape(x)->ndim; d++) width *= dp_nd_shape(x)->dims[d];
    /* 0 is all zero bits in every dtype; the rows are added in double, as
       dp__store_elem adds (per dtype: DP__BY_DTYPE) */
    if ((k->req[0] == DP_REQ_WRITE || k->req[0] == DP_REQ_INPLACE) && rows * width > 0) memset(g, 0, (size_t)(rows * width) * dp_dtype_size(t));
    for (i = 0; k->req[0] != DP_REQ_NULL && i < n; i++) {
        int64_t r = dp__take_row(k, dp__load_index(dp_nd_data(ix), dp_nd_dtype(ix), i), rows, k->params->v[0].i);
        if (r < 0) return DP_ERROR_INVALID_ARGS;
        DP__BY_DTYPE(t, for (e = 0; e < width; e++) dp__store_elem(g, T_, r * width + e, dp__load_elem(og, T_, i * width + e), DP_REQ_ADD));
    }
    if (k->req[1] == DP_REQ_ADD) DP__BY_DTYPE(dp_nd_dtype(ix), for (i = 0; i < n; i++) dp__store_elem(dp_nd_data(k->outputs[1]), T_, i, 0, DP_REQ_ADD));
    else if (k->req[1] != DP_REQ_NULL && n > 0) memset(dp_nd_data(k->outputs[1]), 0, (size_t)n * dp_dtype_size(dp_nd_dtype(ix)));
    return 0;
}
static int dp__infer_accuracy(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                              dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    char s1[160], s2[160];
    (void)p; (void)nin; (void)nout; (void)it;
    if (dp_shape_size(&is[0]) != dp_shape_size(&is[1])) {
        snprintf(msg, cap, "predictions %s and labels %s: the same number of elements needed", dp__shape_str(&is[0], s1, sizeof s1),
                 dp__shape_str(&is[1], s2, sizeof s2));
        return -1;
    }
    memset(os, 0, sizeof *os);
    *ot = DP_FLOAT32;
    return 0;
}
/* Integers are compared exactly; a float label is compared with the
   integer's value as a double (class numbers are far below 2^53). */
static int dp__k_accuracy(const dp_kernel_ctx *k) {
    const dp_ndarray *a = k->inputs[0], *b = k->inputs[1];
    dp_dtype ta = dp_nd_dtype(a), tb = dp_nd_dtype(b);
    int64_t i, r, m, n = dp_shape_size(dp_nd_shape(a)), hits = 0;
    int ints = dp__is_index_dtype(ta) && dp__is_index_dtype(tb);
    for (i = 0; i < n; i += m) {                       /* in blocks of DP__BLK */
        m = n - i < DP__BLK ? n - i : DP__BLK;
        if (ints) {
            int64_t u[DP__BLK], v[DP__BLK];
            dp__blk_load_int(dp_nd_data(a), ta, i, 1, m, u); dp__blk_load_int(dp_nd_data(b), tb, i, 1, m, v);
            for (r = 0; r < m; r++) hits += u[r] == v[r];
        } else {
            double u[DP__BLK], v[DP__BLK];
            dp__blk_load(dp_nd_data(a), ta, i, 1, m, u); dp__blk_load(dp_nd_data(b), tb, i, 1, m, v);
            for (r = 0; r < m; r++) hits += u[r] == v[r];
        }
    }
    dp__store_elem(dp_nd_data(k->outputs[0]), DP_FLOAT32, 0, n ? (double)hits / (double)n : NAN, k->req[0]);
    return 0;
}
static void dp__register_training(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "take"; op.doc = "rows data[indices] of the first axis: data (rows, ...), integer indices of any shape; result indices.shape + data.shape[1:]";
    op.num_inputs = 2; op.num_outputs = 1; op.params = dp__take_params; op.num_params = 1; op.infer = dp__infer_take;
    op.forward_cpu = dp__k_take;
    dp__register_differentiable(&op, "_backward_take", "gradient of take: the output gradient's rows added into the rows they came from", dp__kg_take, 0);
    memset(&op, 0, sizeof op);
    op.name = "accuracy"; op.doc = "the fraction of elements where predictions equal labels, compared as numbers (argmax's int64 against float labels); NaN for none";
    op.num_inputs = 2; op.num_outputs = 1; op.infer = dp__infer_accuracy; op.forward_cpu = dp__k_accuracy;
    dp__register(&op);
}

DP_IMPL dp_result dp_nd_astype(dp_ndarray *a, dp_dtype dtype, dp_ndarray **out) {
    dp_invoke_desc d;
    if (out) *out = NULL;
    if (!a || !out || !dp_dtype_size(dtype)) {
        DP__LOG(a ? a->chunk->eng : NULL, DP_LOG_ERROR, ND_ARGS, "dp_nd_astype: NULL array or out, or dtype %d (%s)", (int)dtype, dp_dtype_name(dtype));
        return DP_ERROR_INVALID_ARGS;
    }
    memset(&d, 0, sizeof d);
    d.op = "cast"; d.inputs[0] = a; d.params[0].name = "dtype"; d.params[0].s = dp_dtype_name(dtype);
    return dp_invoke(a->chunk->eng, &d, out);
}
/* What a unary operator's gradient reads besides the output gradient: the
   input, except for relu, tanh and sigmoid, whose derivatives are taken
   from the output y (relu: y > 0 exactly when x > 0, NaN included; tanh:
   1 - y^2; sigmoid: y (1 - y)), as MXNet's are. Reading the output leaves
   the input dead once the function ran, so a planned graph runs it in place
   over the layer before it (>>memory planning), and the gradient costs no
   second exp or tanh. */
static unsigned dp__unary_grad_needs(const char *name) {
    return DP_GRAD_OUT_GRADS | (strcmp(name, "relu") && strcmp(name, "tanh") && strcmp(name, "sigmoid") ? DP_GRAD_INPUTS : DP_GRAD_OUTPUTS);
}
/* The gradient operators' doc lines: what each reads. */
static const char *dp__unary_grad_doc(const char *name) {
    if (!strcmp(name, "tanh")) return "gradient of tanh: (og, y) -> og (1 - y^2), from tanh's output y";
    if (!strcmp(name, "sigmoid")) return "gradient of sigmoid: (og, y) -> og y (1 - y), from sigmoid's output y";
    if (!strcmp(name, "relu")) return "gradient of relu: (og, y) -> og where y > 0, else 0, from relu's output y";
    return NULL;
}
static void dp__register_builtins(void) {
    dp_operator op;
    /* each forward operator with its gradient operator: (ograd, inputs) -> input gradients */
#define DP__REG_UNARY(nm, text) memset(&op, 0, sizeof op); op.name = #nm; op.doc = text; op.num_inputs = 1; op.num_outputs = 1; \
    op.forward_cpu = dp__k_##nm; op.inplace = 1; op.grad_needs = dp__unary_grad_needs(#nm); \
    dp__register_differentiable(&op, "_backward_" #nm, dp__unary_grad_doc(#nm) ? dp__unary_grad_doc(#nm) : "gradient of " #nm, dp__kg_##nm, 1);
#define DP__REG_BINARY(nm, text) memset(&op, 0, sizeof op); op.name = #nm; op.doc = text " (NumPy broadcasting)"; op.num_inputs = 2; \
    op.num_outputs = 1; op.infer = dp__infer_broadcast; op.forward_cpu = dp__k_##nm; op.inplace = 3; \
    dp__register_differentiable(&op, "_backward_" #nm, "gradient of " #nm, dp__kg_##nm, 0);
#define DP__REG_SCALAR(nm, text) memset(&op, 0, sizeof op); op.name = #nm "_scalar"; op.doc = text; op.num_inputs = 1; \
    op.num_outputs = 1; op.takes_scalar = 1; op.forward_cpu = dp__k_##nm##_scalar; op.inplace = 1; \
    dp__register_differentiable(&op, "_backward_" #nm "_scalar", "gradient of " #nm "_scalar", dp__kg_##nm##_scalar, 1);
    DP__UNARY_OPS(DP__REG_UNARY)
    DP__BINARY_OPS(DP__REG_BINARY)
    DP__SCALAR_OPS(DP__REG_SCALAR)
    memset(&op, 0, sizeof op);
    op.name = "clip"; op.doc = "y = x limited to [a_min, a_max]"; op.num_inputs = 1; op.num_outputs = 1;
    op.params = dp__clip_params; op.num_params = 2; op.infer = dp__infer_clip; op.forward_cpu = dp__k_clip; op.inplace = 1;
    dp__register_differentiable(&op, "_backward_clip", "gradient of clip", dp__k_clip_grad, 1);
#undef DP__REG_UNARY
#undef DP__REG_BINARY
#undef DP__REG_SCALAR
    dp__register_reductions();
    dp__register_nn();
    dp__register_random();
    dp__register_linear();
    dp__register_copy_and_updates();
    dp__register_training();
}


#endif /* DEPENG_NO_NDARRAY */
#endif /* DEPENG_IMPLEMENTATION */

/*
MIT License

Copyright (c) 2026 the depeng authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
*/
