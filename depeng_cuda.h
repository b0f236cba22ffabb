/* depeng_cuda.h - the CUDA half of depeng: a device backend (streams, events,
   device memory, copies) for the engine's GPU workers, and a CUDA kernel for
   every built-in operator of depeng.h.
   version 0.2.0 - MIT license (full text at the end of depeng.h)

   In exactly one .cu file, compiled by nvcc:
       #define DEPENG_IMPLEMENTATION
       #define DEPENG_CUDA_IMPLEMENTATION
       #include "depeng.h"
       #include "depeng_nn.h"      // optional: its layers get GPU kernels too
       #include "depeng_cuda.h"
   nvcc links the CUDA runtime; add -lcublas with DEPENG_CUDA_USE_CUBLAS.
   depeng_nn.h's operators get their GPU kernels only when its
   implementation is compiled in that file, before this header (chapter 4).
   Other files, C or C++, include depeng.h then depeng_cuda.h for the
   declarations only. Nothing in depeng.h needs CUDA: without this header
   everything on the CPU works as before.

   CONTENTS
     1. Quick start
     2. What runs where: workers, streams, completion, errors
     3. Memory and copies
     4. Kernels
     5. Machines without a GPU, and running kernels on the host
     6. Compile-time options
     7. Limits and non-goals (and what would need depeng.h changes)
     8. API (declarations)
     9. Implementation (sections tagged >>cuda_backend >>cuda_memory
        >>cuda_launch >>cuda_index >>cuda_elementwise >>cuda_reduce
        >>cuda_nn >>cuda_take >>cuda_random >>cuda_gemm >>cuda_linear >>cuda_updates
        >>cuda_nn_layers >>cuda_register)

   1. QUICK START

       char why[256];
       dp_engine_desc desc = {0};
       dp_engine *eng;
       dp_ctx gpu = {DP_DEV_GPU, 0};
       if (dp_cuda_check_ctx(gpu, why, sizeof why) != DP_OK) { puts(why); return 0; }  // no GPU here
       dp_cuda_register_kernels();                 // once per process, before invoking on a GPU
       desc.gpu_backend = dp_cuda_backend();       // streams and events, for the engine
       dp_engine_create(&desc, &eng);
       dp_storage_desc mem = {DP_STORAGE_DEFAULT, dp_cuda_memory()};
       dp_storage_configure(eng, &mem);            // device memory, for the arrays
       // arrays on `gpu` now live in device memory, and dp_invoke on them
       // runs the CUDA kernels on the GPU workers' streams.

   2. WHAT RUNS WHERE
     depeng's per-device engine (MXNet's ThreadedEnginePerDevice) gives
     every GPU a pool of compute workers and a pool of copy workers
     (DP_PROP_COPY_TO_GPU / FROM_GPU, one per device by default). Each
     worker thread makes its device current and
     creates its own stream through this backend when it starts (non-blocking
     streams: they never wait for the legacy default stream), and destroys it
     when the engine stops. An operation on a GPU context runs on a worker of
     its device with dp_run_ctx.stream set to that worker's cudaStream_t; a
     kernel launches there and returns at once.
     Completion: an operation is complete (and its dependants may start) only
     when its GPU work is done. The backend gives the engine CUDA events
     (cudaEventDisableTiming): after the operation's function returns, its
     worker records an event behind the work on its stream and takes its next
     operation; the operation completes when cudaEventQuery says the event
     has passed (depeng keeps up to 8 in flight per worker). Where events
     cannot be used (the naive and pooled engines, which run GPU operations
     on other threads with one shared stream per device) the engine
     synchronizes the stream after each operation instead. Every kernel here
     makes the operation's device current first, so all engines work.
     Errors: a failed launch is reported by the kernel function (the
     operation fails with the CUDA error text, e.g. "kernel launch: too many
     resources requested for launch"); an error while the kernel runs shows
     up when its event is queried ("GPU 0 stream work: <CUDA error text>")
     or at the stream synchronization ("stream synchronize: <text>"). Both
     reach dp_wait_var / dp_nd_read as a dp_failure. Errors that CUDA calls
     "sticky" (an illegal address) break the device's context for the rest
     of the process: every later operation on that device fails too.

   3. MEMORY AND COPIES
     Arrays on a GPU context get device memory through the backend's
     mem_alloc / mem_free (cudaMalloc / cudaFree), pooled by depeng's storage
     manager: a released array's block goes to its size class and is reused
     once every operation on it has finished (MXNet's GPU pooled storage
     manager; cudaFree synchronizes the whole device, which is why the pool
     exists). dp_storage_stats_get(eng, gpu ctx) gives the counters and
     dp_storage_release_pool(eng, gpu ctx) gives the pool back to CUDA.
     Pinned (page-locked) host memory is its own context, DP_DEV_CPU_PINNED:
     arrays there (cudaMallocHost, pooled like any array's memory) are CPU
     arrays whose dp_nd_copy_to to and from a GPU runs asynchronously on the
     copy worker's stream at full bus speed. For plain buffers there are
     dp_cuda_pinned_alloc / dp_cuda_pinned_free: host buffers handed to
     dp_nd_from_host, dp_nd_read and dp_nd_write copy at full bus speed from
     it, and asynchronous copies from it do not stage through a bounce buffer.
     Copies: mem_copy uses cudaMemcpyAsync on the operation's stream (a copy
     worker's for dp_nd_copy_to), or a synchronous cudaMemcpy without one.
     Device-to-device copies use cudaMemcpyDefault (unified addressing), so
     a copy between two GPUs goes peer to peer where the devices allow it:
     peer access is enabled between such devices when the first stream of a
     device is created.

   4. KERNELS
     dp_cuda_register_kernels attaches a GPU kernel (dp_operator_set_kernel with
     DP_DEV_GPU) to every built-in operator, forward and gradient:
       element-wise  unary, binary (NumPy broadcasting), scalar, clip, _copy,
                     reshape and their gradients: grid-stride loops
       reductions    sum mean max min argmax over any axes, and the gradients
                     (broadcast gradients are reductions too): one thread
                     block per output element, combined with warp shuffles
                     (one thread per output for 32 elements or fewer); long
                     reductions split into slices and a second pass
       nn            softmax, log_softmax, softmax_cross_entropy, SoftmaxOutput
                     (one block per row), transpose, concat, one_hot, with
                     gradients
       random        random_uniform / random_normal: element i is a hash of
                     (key, i) with key = dp_random_next on the host, so the
                     values do not depend on the launch shape
       linear        dot, FullyConnected and their gradients: cuBLAS with
                     DEPENG_CUDA_USE_CUBLAS, else a 16x16 tiled shared-memory
                     GEMM
       optimizers    sgd_update, sgd_mom_update, adam_update
       take          take (bytes copied per element; an out-of-range index
                     under mode raise fails with the CPU's message) and its
                     gradient (each element sums its row's uses, no atomics);
                     accuracy (one GPU thread counts)
     and, when depeng_nn.h's implementation is compiled in the same file
     before this header (section >>cuda_nn_layers says why it needs that),
     every operator depeng_nn.h registers, forward and gradient, one
     thread per element written (gathers: no atomics, so the result does
     not depend on thread order):
       layers        Convolution, Deconvolution (1-D and 2-D: stride, pad,
                     dilate, num_group, bias, adj, target_shape) by the
                     implementation the CPU picks for the same parameters
                     (algo): im2col + GEMM (one image and group at a time,
                     its columns in the workspace; col2im as a gather) or
                     direct gathers for the output, the data's and the
                     weight's gradient; the bias gradient per channel.
                     Pooling (max, avg, sum; valid and full; global_pool;
                     count_include_pad): one thread per window, the
                     gradient one thread per input element over the windows
                     that cover it. Activation (relu sigmoid tanh softrelu
                     softsign), LeakyReLU (leaky elu selu gelu prelu, with
                     prelu's gamma gradient per channel), Flatten,
                     BatchNorm (one team of threads per channel: batch
                     statistics and the moving ones' update in training,
                     the moving ones otherwise; its gradient), Dropout (see
                     below) and their gradients
       tensors       expand_dims, slice_axis, broadcast_to, where, stack,
                     SliceChannel, batch_dot (dot's GEMM, one call per
                     matrix), Embedding (a value that is not a row fails
                     with the CPU's message) and their gradients
       losses        BlockGrad, MakeLoss (normalization null, batch, valid),
                     LinearRegressionOutput, LogisticRegressionOutput,
                     MAERegressionOutput and their gradients
       updates       rmsprop_update, rmspropalex_update, adagrad_update,
                     nag_mom_update, adamw_update
     Dropout's mask on the GPU is drawn like random_uniform (a hash of the
     generator's key and the element's draw), as the CPU kernel draws it:
     for one seed the same masks on the CPU and the GPU.
     (FullyConnected and SoftmaxOutput, also depeng_nn.h's, have kernels in
     the list above: they need nothing of its implementation.)
     Like the CPU kernels they compute in double and store in the output's
     dtype (all eight dtypes; float16 stored through float32, as on the
     CPU); transpose, concat and _copy / reshape / cast move elements with
     depeng.h's dp__move_elem, bit-exact for one dtype as on the CPU, and
     the element-wise integer arithmetic, clip and one_hot's index are done
     in int64 as on the CPU, and so are the reductions of integer arrays
     (sum, max, min, argmax; exact for every value, int64 beyond 2^53
     included, sums wrapping around as NumPy's; mean stays a floating-point
     mean); and they call the same formulas: depeng.h's
     DP__HD functions (dp__f_*, dp__d_*, dp__opt_grad, dp__f_sgd, ...), which
     nvcc compiles for the device too, so the CPU tests check the math the GPU
     runs. Results equal the CPU's up to the order of floating-point sums
     and the last bits of the device's exp, log, pow (the GEMM, like the
     CPU's, accumulates in the element type).
     Workspace (partial sums, error flags) is device memory that each thread
     keeps for itself and grows on demand: a thread runs one operation at a
     time and launches on one stream per device, so the stream orders every
     use of it, also while earlier operations are still in flight.
     dp_cuda_missing_kernels lists registered operators without a GPU kernel.

   5. MACHINES WITHOUT A GPU
     The backend reports 0 devices when CUDA finds none, also when no driver
     is installed (cudaErrorInsufficientDriver, cudaErrorNoDevice): the
     engine then refuses GPU contexts with DP_ERROR_BAD_CONTEXT, and
     dp_cuda_check_ctx says why. Everything compiles and links without one.
     Running a kernel on the host: called on an operation whose context is a
     CPU device, each GPU kernel runs its per-element code on the host, one
     element at a time, with a single thread doing a block's work (the tiled
     GEMM replays its blocks' threads one by one; cuBLAS is not called). That
     is how tests check the kernels'
     indexing, broadcasting, reductions and error paths against the CPU
     kernels where no GPU exists (tests/test_cuda.cu); it is slow and meant
     for nothing else. What it cannot check: warp shuffles and races on
     shared memory (the combine step the shuffles use is tested on its own;
     BatchNorm's per-channel teams use them), cuBLAS (batch_dot goes through
     it too with DEPENG_CUDA_USE_CUBLAS). Dropout: the tests check both
     kernels' masks for the fraction, the scaling and the sharing, and that
     a seed repeats them.

   6. COMPILE-TIME OPTIONS
     DEPENG_CUDA_USE_CUBLAS   dot and FullyConnected through cuBLAS (link
                              -lcublas). Define in the implementation file.
                              One cuBLAS handle per thread and device.
     depeng.h's DEPENG_NO_NDARRAY is refused (#error): the kernels and the
     memory functions work on arrays, so this header needs the array half.

   7. LIMITS AND NON-GOALS
     - Pinned memory is an allocation API, not an array context: arrays on the
       CPU are allocated by the engine's allocator.
     - random_uniform / random_normal have no inputs: they run on the GPU
       when their output is given on one (dp_nd_random_* on a GPU context
       does that).
     - No cuDNN, no multi-GPU kernels, no half precision.
     - depeng_nn.h's layers run simple one-thread-per-element kernels
       (convolution: im2col + GEMM or direct gathers, no Winograd, one
       image and group per GEMM): correct, not tuned.
*/
#ifndef DEPENG_CUDA_H
#define DEPENG_CUDA_H

#ifndef DEPENG_H
#error "include depeng.h before depeng_cuda.h"
#endif
#ifdef DEPENG_NO_NDARRAY
#error "depeng_cuda.h needs depeng.h's array half (its kernels work on arrays): include depeng.h without DEPENG_NO_NDARRAY"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================== 8. API
   At a glance:
     backend   dp_cuda_backend dp_cuda_device_count dp_cuda_check_ctx
     kernels   dp_cuda_register_kernels dp_cuda_missing_kernels
     memory    dp_cuda_memory dp_cuda_pinned_alloc dp_cuda_pinned_free        */

/* The most GPUs the backend reports (depeng's device limit). */
#define DP_CUDA_MAX_DEVICES 16

/* The CUDA device backend, for dp_engine_desc.gpu_backend: device discovery,
   one non-blocking stream per GPU worker, events for completion (see
   chapter 2). Its error codes are cudaError_t values (event_query answers
   DP_EVENT_PENDING for "not yet"). Returns: a pointer to a constant that
   lives as long as the process. Thread safety: any thread. */
DP_API const dp_device_backend *dp_cuda_backend(void);
/* CUDA's memory for arrays, for dp_storage_configure's desc.memory: device
   memory (cudaMalloc, cudaFree), copies (cudaMemcpyAsync on the op's
   stream), and page-locked host memory for DP_DEV_CPU_PINNED (see chapter
   3). Returns a pointer to a constant that lives as long as the process.
   Thread safety: any thread. */
DP_API const dp_memory_backend *dp_cuda_memory(void);

/* How many CUDA devices there are (at most DP_CUDA_MAX_DEVICES).
   Parameters: why (out, optional, why_cap bytes): when the answer is 0, the
   reason, e.g. "no CUDA device: CUDA driver version is insufficient for
   CUDA runtime version (cudaErrorInsufficientDriver)"; else "".
   Returns: the count; 0 when CUDA reports an error (no driver, no device).
   Thread safety: any thread. */
DP_API int dp_cuda_device_count(char *why, size_t why_cap);

/* Whether ctx is a GPU this process can use.
   Parameters: ctx (in); why (out, optional): the reason when it is not
   ("no CUDA device: ...", "GPU 3 requested, 1 present"), or the device's
   name and compute capability when it is.
   Returns: DP_OK, or DP_ERROR_BAD_CONTEXT.
   Thread safety: any thread.
   Remarks: the engine refuses such contexts by itself (DP_ERROR_BAD_CONTEXT,
   logged); this call gives the reason before anything is made. */
DP_API dp_result dp_cuda_check_ctx(dp_ctx ctx, char *why, size_t why_cap);

/* Attaches the CUDA kernel of every built-in operator for DP_DEV_GPU
   (dp_operator_set_kernel), replacing any: depeng.h's, and depeng_nn.h's
   when its implementation was compiled before this header's (chapter 4);
   operators not registered are skipped. Calling it again does the same again.
   Returns: DP_OK, or DP_ERROR_INVALID_ARGS when depeng.h no longer has an
   operator this header knows (its name is logged).
   Thread safety: like dp_operator_register: once, from one thread, before GPU
   operators are invoked. It needs no GPU. */
DP_API dp_result dp_cuda_register_kernels(void);

/* The registered operators that have no GPU kernel.
   Parameters: names (out, optional): up to cap of their names.
   Returns: how many there are (0 after dp_cuda_register_kernels when only
   built-in operators are registered; depeng_nn.h's count as missing when its
   implementation was not compiled before this header's), or -1 if out of
   memory.
   Thread safety: any thread, but not while operators are being registered. */
DP_API int dp_cuda_missing_kernels(const char **names, int cap);

/* Pinned (page-locked) host memory, for fast and asynchronous transfers to
   and from GPU arrays (cudaMallocHost / cudaFreeHost).
   Returns: DP_OK and *out (bytes 0 gives a valid 1-byte block);
   DP_ERROR_OUT_OF_MEMORY; DP_ERROR_BACKEND when CUDA cannot be used (no
   driver); DP_ERROR_INVALID_ARGS for a NULL out. *out is NULL after an error.
   Thread safety: any thread. Free with dp_cuda_pinned_free (NULL is fine). */
DP_API dp_result dp_cuda_pinned_alloc(size_t bytes, void **out);
DP_API dp_result dp_cuda_pinned_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif /* DEPENG_CUDA_H */

/* ====================================================================== 9. IMPLEMENTATION */
#if defined(DEPENG_CUDA_IMPLEMENTATION) && !defined(DEPENG_CUDA_IMPL_INCLUDED)
#define DEPENG_CUDA_IMPL_INCLUDED 1
#if !defined(__CUDACC__)
#error "DEPENG_CUDA_IMPLEMENTATION needs nvcc: define it in a .cu file"
#endif
#if !defined(DEPENG_IMPL_INCLUDED)
#error "define DEPENG_IMPLEMENTATION in the file that defines DEPENG_CUDA_IMPLEMENTATION, and include depeng.h first: the kernels call depeng's shared formulas, which exist only there"
#endif
#include <cuda_runtime.h>
#include <mutex>
#ifdef DEPENG_CUDA_USE_CUBLAS
#include <cublas_v2.h>
#endif

static_assert(DP_CUDA_MAX_DEVICES <= DP__MAX_DEV, "the backend must not report more GPUs than the engine has slots for");
#define DP__CU_HD __host__ __device__
#define DP__CU_THREADS 256        /* threads per block of element-wise kernels */
#define DP__CU_MAX_BLOCKS 4096    /* grid-stride loops cover the rest */
#define DP__CU_MAX_TEAMS 32768    /* blocks of a one-block-per-item kernel */
#define DP__CU_TRY(call) do { int dp__cu_status = (call); if (dp__cu_status) return dp__cu_status; } while (0)

/* A failed CUDA call leaves its code as the thread's "last error"; clearing
   it keeps the next launch check from blaming the wrong operation. */
static int dp__cu_fail(cudaError_t e) {
    (void)cudaGetLastError();
    return (int)e;
}

/* >>cuda_backend -------------------------------------------------------------
   The functions of dp_device_backend. Every one returns 0 or a cudaError_t. */
static int dp__cu_count(char *why, size_t cap) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (why && cap) why[0] = 0;
    if (e != cudaSuccess) {
        dp__cu_fail(e);
        if (why && cap) snprintf(why, cap, "no CUDA device: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        return 0;
    }
    if (n <= 0) { if (why && cap) snprintf(why, cap, "no CUDA device: the driver reports none"); return 0; }
    return n < DP_CUDA_MAX_DEVICES ? n : DP_CUDA_MAX_DEVICES;
}
static int dp__cu_device_count(void *user) { (void)user; return dp__cu_count(NULL, 0); }
static int dp__cu_set_device(int dev, void *user) {
    cudaError_t e = cudaSetDevice(dev);
    (void)user;
    return e == cudaSuccess ? 0 : dp__cu_fail(e);
}
/* Lets dev read and write the memory of every GPU it can reach directly, so
   device-to-device copies between them go peer to peer. Once per device. */
static void dp__cu_enable_peers(int dev) {
    static std::once_flag once[DP_CUDA_MAX_DEVICES];
    if (dev < 0 || dev >= DP_CUDA_MAX_DEVICES) return;
    std::call_once(once[dev], [dev] {
        int n = dp__cu_count(NULL, 0), p, can = 0;
        for (p = 0; p < n; p++) {
            if (p == dev || cudaDeviceCanAccessPeer(&can, dev, p) != cudaSuccess || !can) { (void)cudaGetLastError(); continue; }
            if (cudaDeviceEnablePeerAccess(p, 0) != cudaSuccess) (void)cudaGetLastError();   /* already enabled is fine */
        }
    });
}
/* Compute and copy workers alike get a non-blocking stream: work on it
   never waits for the legacy default stream (the synchronous copies of
   dp_nd_from_host / dp_nd_read use that one), and vice versa. The calling
   thread keeps dev as its current device: it is the worker's thread. */
static int dp__cu_stream_create(int dev, int is_copy, void **out, void *user) {
    cudaStream_t s = NULL;
    cudaError_t e = cudaSetDevice(dev);
    (void)is_copy; (void)user;
    if (e != cudaSuccess) return dp__cu_fail(e);
    dp__cu_enable_peers(dev);
    if ((e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) != cudaSuccess) return dp__cu_fail(e);
    *out = (void *)s;
    return 0;
}
static int dp__cu_stream_destroy(int dev, void *stream, void *user) {
    cudaError_t e = cudaStreamDestroy((cudaStream_t)stream);
    (void)dev; (void)user;
    return e == cudaSuccess ? 0 : dp__cu_fail(e);
}
static int dp__cu_stream_synchronize(int dev, void *stream, void *user) {
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    (void)dev; (void)user;
    return e == cudaSuccess ? 0 : dp__cu_fail(e);
}
static const char *dp__cu_error_string(int err, void *user) { (void)user; return cudaGetErrorString((cudaError_t)err); }
/* Events mark where an operation's work ends on its stream. No timing: a
   timed event costs more to record and query. */
static int dp__cu_event_create(int dev, void **out, void *user) {
    cudaEvent_t ev = NULL;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    (void)dev; (void)user;
    if (e != cudaSuccess) return dp__cu_fail(e);
    *out = (void *)ev;
    return 0;
}
static int dp__cu_event_destroy(int dev, void *event, void *user) {
    cudaError_t e = cudaEventDestroy((cudaEvent_t)event);
    (void)dev; (void)user;
    return e == cudaSuccess ? 0 : dp__cu_fail(e);
}
static int dp__cu_event_record(int dev, void *event, void *stream, void *user) {
    cudaError_t e = cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
    (void)dev; (void)user;
    return e == cudaSuccess ? 0 : dp__cu_fail(e);
}
/* 0 passed, DP_EVENT_PENDING not yet, else the error of the work before
   the event (a cudaError_t, always positive). */
static int dp__cu_event_query(int dev, void *event, void *user) {
    cudaError_t e = cudaEventQuery((cudaEvent_t)event);
    (void)dev; (void)user;
    if (e == cudaSuccess) return 0;
    if (e == cudaErrorNotReady) return DP_EVENT_PENDING;
    dp__cu_fail(e);
    return (int)e;
}

/* >>cuda_memory ------------------------------------------------------------- */
/* Makes dev current for the guard's life and then restores the thread's
   previous device: mem_alloc and the synchronous copies run on the caller's
   thread, whose current device should not change under it. */
struct dp__cu_device_guard {
    int prev, changed, err;
    explicit dp__cu_device_guard(int dev) : prev(-1), changed(0), err(0) {
        cudaError_t e = cudaGetDevice(&prev);
        if (e == cudaSuccess && prev == dev) return;
        e = cudaSetDevice(dev);
        if (e != cudaSuccess) err = dp__cu_fail(e);
        else changed = prev >= 0;
    }
    ~dp__cu_device_guard() { if (changed) (void)cudaSetDevice(prev); }
};
static int dp__cu_mem_alloc(int dev, size_t size, void **out, void *user) {
    dp__cu_device_guard guard(dev);
    cudaError_t e;
    (void)user;
    if (guard.err) return guard.err;
    e = cudaMalloc(out, size ? size : 1);
    return e == cudaSuccess ? 0 : dp__cu_fail(e);
}
static int dp__cu_mem_free(int dev, void *ptr, void *user) {
    dp__cu_device_guard guard(dev);
    cudaError_t e;
    (void)user;
    if (guard.err) return guard.err;
    e = cudaFree(ptr);
    return e == cudaSuccess ? 0 : dp__cu_fail(e);
}
/* kind 0 host to device, 1 device to host, 2 device to device (any two
   GPUs: unified addressing finds the devices). */
static int dp__cu_mem_copy(void *dst, const void *src, size_t bytes, int kind, int dev, void *stream, void *user) {
    static const cudaMemcpyKind kinds[3] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDefault};
    dp__cu_device_guard guard(dev);
    cudaError_t e;
    (void)user;
    if (kind < 0 || kind > 2) return (int)cudaErrorInvalidValue;
    if (guard.err) return guard.err;
    if (!bytes) return 0;
    e = stream ? cudaMemcpyAsync(dst, src, bytes, kinds[kind], (cudaStream_t)stream) : cudaMemcpy(dst, src, bytes, kinds[kind]);
    return e == cudaSuccess ? 0 : dp__cu_fail(e);
}
static int dp__cu_host_alloc(size_t size, void **out, void *user);
static int dp__cu_host_free(void *ptr, void *user);
static dp_device_backend dp__cu_make_backend(void) {
    dp_device_backend b;
    memset(&b, 0, sizeof b);
    b.name = "cuda";
    b.device_count = dp__cu_device_count;
    b.set_device = dp__cu_set_device;
    b.stream_create = dp__cu_stream_create;
    b.stream_destroy = dp__cu_stream_destroy;
    b.stream_synchronize = dp__cu_stream_synchronize;
    b.error_string = dp__cu_error_string;
    b.event_create = dp__cu_event_create;
    b.event_destroy = dp__cu_event_destroy;
    b.event_record = dp__cu_event_record;
    b.event_query = dp__cu_event_query;
    return b;
}
static dp_memory_backend dp__cu_make_memory(void) {
    dp_memory_backend m;
    memset(&m, 0, sizeof m);
    m.mem_alloc = dp__cu_mem_alloc;
    m.mem_free = dp__cu_mem_free;
    m.mem_copy = dp__cu_mem_copy;
    m.host_alloc = dp__cu_host_alloc;
    m.host_free = dp__cu_host_free;
    return m;
}
DP_IMPL const dp_device_backend *dp_cuda_backend(void) {
    static const dp_device_backend backend = dp__cu_make_backend();   /* thread-safe since C++11 */
    return &backend;
}
DP_IMPL const dp_memory_backend *dp_cuda_memory(void) {
    static const dp_memory_backend memory = dp__cu_make_memory();
    return &memory;
}
DP_IMPL int dp_cuda_device_count(char *why, size_t why_cap) { return dp__cu_count(why, why_cap); }
DP_IMPL dp_result dp_cuda_check_ctx(dp_ctx ctx, char *why, size_t why_cap) {
    char reason[200];
    cudaDeviceProp prop;
    int n;
    if (why && why_cap) why[0] = 0;
    if (ctx.dev_type != DP_DEV_GPU) {
        if (why && why_cap) snprintf(why, why_cap, "device type %d is not DP_DEV_GPU", (int)ctx.dev_type);
        return DP_ERROR_BAD_CONTEXT;
    }
    if ((n = dp__cu_count(reason, sizeof reason)) == 0) {
        if (why && why_cap) snprintf(why, why_cap, "%s", reason);
        return DP_ERROR_BAD_CONTEXT;
    }
    if (ctx.dev_id < 0 || ctx.dev_id >= n) {
        if (why && why_cap) snprintf(why, why_cap, "GPU %d requested, %d present", (int)ctx.dev_id, n);
        return DP_ERROR_BAD_CONTEXT;
    }
    if (why && why_cap) {
        cudaError_t e = cudaGetDeviceProperties(&prop, ctx.dev_id);
        if (e == cudaSuccess) snprintf(why, why_cap, "GPU %d: %s (compute capability %d.%d)", (int)ctx.dev_id, prop.name, prop.major, prop.minor);
        else { dp__cu_fail(e); snprintf(why, why_cap, "GPU %d", (int)ctx.dev_id); }
    }
    return DP_OK;
}
DP_IMPL dp_result dp_cuda_pinned_alloc(size_t bytes, void **out) {
    cudaError_t e;
    if (!out) return DP_ERROR_INVALID_ARGS;
    *out = NULL;
    if ((e = cudaMallocHost(out, bytes ? bytes : 1)) == cudaSuccess) return DP_OK;
    dp__cu_fail(e);
    *out = NULL;
    return e == cudaErrorMemoryAllocation ? DP_ERROR_OUT_OF_MEMORY : DP_ERROR_BACKEND;
}
DP_IMPL dp_result dp_cuda_pinned_free(void *ptr) {
    cudaError_t e;
    if (!ptr) return DP_OK;
    e = cudaFreeHost(ptr);
    if (e == cudaSuccess) return DP_OK;
    dp__cu_fail(e);
    return DP_ERROR_BACKEND;
}
/* The backend's host_alloc / host_free: arrays on DP_DEV_CPU_PINNED. */
static int dp__cu_host_alloc(size_t size, void **out, void *user) {
    cudaError_t e = cudaMallocHost(out, size ? size : 1);
    (void)user;
    if (e == cudaSuccess) return 0;
    *out = NULL;
    return dp__cu_fail(e);
}
static int dp__cu_host_free(void *ptr, void *user) {
    cudaError_t e = cudaFreeHost(ptr);
    (void)user;
    return e == cudaSuccess ? 0 : dp__cu_fail(e);
}

/* >>cuda_launch --------------------------------------------------------------
   How a kernel function (dp_kernel_fn) reaches the device. Its per-element
   work is a small struct with a __host__ __device__ operator(): dp__cu_each
   runs body(i) for every i in a grid-stride loop, dp__cu_teams runs
   body(team, t) with one thread block (a "team") per item t. On an
   operation whose context is not a GPU both run on the host instead, one
   element after another, with teams of one thread: chapter 5. */
static int dp__cu_on_device(const dp_kernel_ctx *k) { return k->rc->ctx.dev_type == DP_DEV_GPU; }
static cudaStream_t dp__cu_stream(const dp_kernel_ctx *k) { return (cudaStream_t)k->rc->stream; }
static int64_t dp__cu_count_of(const dp_ndarray *a) { return dp_shape_size(dp_nd_shape(a)); }

/* Fails the operation with CUDA's text for e, prefixed by what failed. */
static int dp__cu_report(const dp_kernel_ctx *k, const char *what, cudaError_t e) {
    char msg[240];
    dp__cu_fail(e);
    snprintf(msg, sizeof msg, "%s: %s", what, cudaGetErrorString(e));
    dp_set_error(k->rc, msg);
    return DP_ERROR_BACKEND;
}
static int dp__cu_check_launch(const dp_kernel_ctx *k) {
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : dp__cu_report(k, "kernel launch", e);
}
/* The eight dtypes dp__cu_load / dp__cu_store know; a dtype added to depeng
   later is refused here instead of being misread. */
static int dp__cu_dtype_known(dp_dtype t) {
    return t == DP_FLOAT32 || t == DP_FLOAT64 || t == DP_INT32 || t == DP_INT64 || t == DP_UINT8 || t == DP_FLOAT16
        || t == DP_BOOL || t == DP_INT8;
}
/* Every GPU kernel function starts here: the arrays' dtypes checked, the
   operation's device made current (the naive and pooled engines run GPU
   operations on threads that did not choose it), and any stale error of an
   unrelated earlier call cleared, so the launch check reports this one's. */
static int dp__cu_enter(const dp_kernel_ctx *k) {
    int i, cur = -1;
    cudaError_t e;
    for (i = 0; i < k->num_inputs + k->num_outputs; i++) {
        const dp_ndarray *a = i < k->num_inputs ? k->inputs[i] : k->outputs[i - k->num_inputs];
        if (!dp__cu_dtype_known(dp_nd_dtype(a))) {
            char msg[120];
            snprintf(msg, sizeof msg, "dtype %s is not supported by the CUDA kernels", dp_dtype_name(dp_nd_dtype(a)));
            dp_set_error(k->rc, msg);
            return DP_ERROR_INVALID_ARGS;
        }
    }
    if (!dp__cu_on_device(k)) return 0;
    e = cudaGetDevice(&cur);
    if (e == cudaSuccess && cur != k->rc->ctx.dev_id) e = cudaSetDevice(k->rc->ctx.dev_id);
    if (e != cudaSuccess) return dp__cu_report(k, "cudaSetDevice", e);
    (void)cudaGetLastError();
    return 0;
}

template <class Body> __global__ void dp__cu_each_kernel(Body body, int64_t n) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) body(i);
}
template <class Body> static int dp__cu_each(const dp_kernel_ctx *k, int64_t n, const Body &body) {
    int64_t blocks = (n + DP__CU_THREADS - 1) / DP__CU_THREADS, i;
    if (n <= 0) return 0;
    if (!dp__cu_on_device(k)) { for (i = 0; i < n; i++) body(i); return 0; }
    dp__cu_each_kernel<<<(unsigned)(blocks < DP__CU_MAX_BLOCKS ? blocks : DP__CU_MAX_BLOCKS), DP__CU_THREADS, 0, dp__cu_stream(k)>>>(body, n);
    return dp__cu_check_launch(k);
}

/* A partial result of a reduction: a value, and for argmax its index (-1:
   none yet). Sum, max and min leave i at -1.
   The integer kinds (DP__CU_ISUM ..., in the order of the floating-point
   ones) reduce an integer array as the CPU does: in int64, sums wrapping
   around. v holds their int64 value's bits (dp__cu_bits_in): it is only
   moved, never computed with as a double, so warp shuffles and shared
   memory carry it unchanged and every int64 stays exact. */
struct dp__cu_acc { double v; long long i; };
enum { DP__CU_SUM, DP__CU_MAX, DP__CU_MIN, DP__CU_ARGMAX, DP__CU_ISUM, DP__CU_IMAX, DP__CU_IMIN, DP__CU_IARGMAX };
static int dp__cu_int_kind(int kind) { return kind + (DP__CU_ISUM - DP__CU_SUM); }
static DP__CU_HD int dp__cu_kind_is_int(int kind) { return kind >= DP__CU_ISUM; }
static DP__CU_HD double dp__cu_bits_in(int64_t x) { double d; memcpy(&d, &x, sizeof d); return d; }
static DP__CU_HD int64_t dp__cu_bits_out(double d) { int64_t x; memcpy(&x, &d, sizeof x); return x; }
static DP__CU_HD dp__cu_acc dp__cu_identity(int kind) {
    dp__cu_acc a;
    if (dp__cu_kind_is_int(kind)) a.v = dp__cu_bits_in(kind == DP__CU_ISUM ? 0 : kind == DP__CU_IMIN ? INT64_MAX : INT64_MIN);
    else a.v = kind == DP__CU_MIN ? HUGE_VAL : kind == DP__CU_SUM ? 0.0 : -HUGE_VAL;
    a.i = -1;
    return a;
}
/* The CPU kernels scan in order: max and min keep the first NaN they meet,
   argmax keeps the first NaN, else the first largest element (NumPy's
   rule). dp__cu_candidate turns an element into a partial result, and
   dp__cu_combine merges two partial results in any order with the same
   outcome as the scan: for argmax the lower index wins between two NaNs
   and between ties, and a NaN wins over any number. */
static DP__CU_HD dp__cu_acc dp__cu_candidate(int kind, double v, long long i) {
    dp__cu_acc a;
    (void)kind;
    a.v = v;
    a.i = i;
    return a;
}
/* The same for the integer kinds: v is the element's exact int64 value. */
static DP__CU_HD dp__cu_acc dp__cu_candidate_int(int kind, int64_t v, long long i) { return dp__cu_candidate(kind, dp__cu_bits_in(v), i); }
/* Integers have no NaN: max and min keep either of two equal values,
   argmax the lower index of two equal values. */
static DP__CU_HD dp__cu_acc dp__cu_combine_int(int kind, dp__cu_acc a, dp__cu_acc b) {
    int64_t x = dp__cu_bits_out(a.v), y = dp__cu_bits_out(b.v);
    if (kind == DP__CU_ISUM) { a.v = dp__cu_bits_in(dp__i_add(x, y)); return a; }
    if (kind == DP__CU_IMAX) return y > x ? b : a;
    if (kind == DP__CU_IMIN) return y < x ? b : a;
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (a.i < b.i) return y > x ? b : a;
    return x > y ? a : b;
}
static DP__CU_HD dp__cu_acc dp__cu_combine(int kind, dp__cu_acc a, dp__cu_acc b) {
    if (dp__cu_kind_is_int(kind)) return dp__cu_combine_int(kind, a, b);
    if (kind == DP__CU_SUM) { a.v += b.v; return a; }
    if (kind == DP__CU_MAX || kind == DP__CU_MIN) {
        if (a.v != a.v) return a;
        if (b.v != b.v) return b;
        return (kind == DP__CU_MAX ? b.v > a.v : b.v < a.v) ? b : a;
    }
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    {
        dp__cu_acc first = a.i < b.i ? a : b, later = a.i < b.i ? b : a;
        if (first.v != first.v) return first;
        if (later.v != later.v) return later;
        return later.v > first.v ? later : first;
    }
}
/* The threads of one block working on one item, or a team of one thread
   (sv NULL: on the host, or for items too small to share). all_reduce
   combines every member's partial result with warp shuffles and gives the
   result to every member; all members must call it. */
struct dp__cu_team {
    double *sv;        /* the block's shared memory: one slot per warp */
    long long *si;
    DP__CU_HD int rank() const {
#ifdef __CUDA_ARCH__
        if (sv) return (int)threadIdx.x;
#endif
        return 0;
    }
    DP__CU_HD int size() const {
#ifdef __CUDA_ARCH__
        if (sv) return (int)blockDim.x;
#endif
        return 1;
    }
    DP__CU_HD dp__cu_acc all_reduce(int kind, dp__cu_acc a) const {
#ifdef __CUDA_ARCH__
        if (sv) {
            const unsigned all = 0xFFFFFFFFu;
            int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5), nwarps = (int)(blockDim.x >> 5), off;
            for (off = 16; off > 0; off >>= 1) {
                dp__cu_acc b;
                b.v = __shfl_down_sync(all, a.v, off);
                b.i = __shfl_down_sync(all, a.i, off);
                a = dp__cu_combine(kind, a, b);
            }
            __syncthreads();                     /* everyone has read the previous result */
            if (lane == 0) { sv[warp] = a.v; si[warp] = a.i; }
            __syncthreads();
            if (warp == 0) {
                if (lane < nwarps) { a.v = sv[lane]; a.i = si[lane]; }
                else a = dp__cu_identity(kind);
                for (off = 16; off > 0; off >>= 1) {
                    dp__cu_acc b;
                    b.v = __shfl_down_sync(all, a.v, off);
                    b.i = __shfl_down_sync(all, a.i, off);
                    a = dp__cu_combine(kind, a, b);
                }
                if (lane == 0) { sv[0] = a.v; si[0] = a.i; }
            }
            __syncthreads();
            a.v = sv[0]; a.i = si[0];
        }
#endif
        (void)kind;
        return a;
    }
};
/* Combines elem(o, r) for r in [r0, r1) across the team: each member takes
   every size()-th r, then all_reduce. elem gives a dp__cu_acc. */
template <class Elem> static DP__CU_HD dp__cu_acc dp__cu_team_reduce(const dp__cu_team &team, int kind, const Elem &elem, int64_t o,
                                                                     int64_t r0, int64_t r1) {
    dp__cu_acc acc = dp__cu_identity(kind);
    for (int64_t r = r0 + team.rank(); r < r1; r += team.size()) acc = dp__cu_combine(kind, acc, elem(o, r));
    return team.all_reduce(kind, acc);
}
template <class Body> __global__ void dp__cu_team_kernel(Body body, int64_t count) {
    __shared__ double sv[32];
    __shared__ long long si[32];
    dp__cu_team team = {sv, si};
    for (int64_t t = blockIdx.x; t < count; t += gridDim.x) body(team, t);   /* the same trip count in every thread */
}
template <class Body> struct dp__cu_solo {
    Body body;
    DP__CU_HD void operator()(int64_t t) const { dp__cu_team one = {NULL, NULL}; body(one, t); }
};
/* Threads per team for `work` elements per item: a multiple of 32 up to 256,
   or 1 when a thread alone is faster than a block that mostly idles. */
static int dp__cu_team_size(int64_t work) {
    if (work <= 32) return 1;
    return work >= 256 ? 256 : (int)((work + 31) / 32 * 32);
}
template <class Body> static int dp__cu_teams(const dp_kernel_ctx *k, int64_t count, int threads, const Body &body) {
    dp__cu_solo<Body> solo = {body};
    if (count <= 0) return 0;
    if (!dp__cu_on_device(k) || threads <= 1) return dp__cu_each(k, count, solo);
    dp__cu_team_kernel<<<(unsigned)(count < DP__CU_MAX_TEAMS ? count : DP__CU_MAX_TEAMS), (unsigned)threads, 0, dp__cu_stream(k)>>>(body, count);
    return dp__cu_check_launch(k);
}

/* Per-thread workspace: device memory per GPU (and host memory for
   kernels run on the host), in two independent slots so a kernel can hold
   one buffer while dp__cu_reduce uses the other for its partial results.
   Safe without locks: only this thread's kernels use it, and they are
   ordered on its stream, also while earlier operations are still in flight
   (events). Growing it waits for that stream first. Freed when the thread
   ends. */
enum { DP__CU_SLOT_REDUCE = 0, DP__CU_SLOT_KERNEL = 1 };
struct dp__cu_workspace {
    void *ptr[DP_CUDA_MAX_DEVICES + 1][2];   /* [device, or DP_CUDA_MAX_DEVICES: host][slot] */
    size_t size[DP_CUDA_MAX_DEVICES + 1][2];
    ~dp__cu_workspace() {
        int d, s;
        for (d = 0; d <= DP_CUDA_MAX_DEVICES; d++)
            for (s = 0; s < 2; s++) {
                if (!ptr[d][s]) continue;
                if (d == DP_CUDA_MAX_DEVICES) free(ptr[d][s]);
                else { (void)cudaSetDevice(d); (void)cudaFree(ptr[d][s]); }   /* errors at process exit do not matter */
            }
    }
};
static thread_local dp__cu_workspace dp__cu_tls_workspace;
/* At least bytes of the slot (old contents are not kept), or NULL with the
   operation's error set. */
static void *dp__cu_workspace_get(const dp_kernel_ctx *k, int slot, size_t bytes) {
    dp__cu_workspace *w = &dp__cu_tls_workspace;
    int on = dp__cu_on_device(k), d = on ? (int)k->rc->ctx.dev_id : DP_CUDA_MAX_DEVICES;
    size_t size = 4096;
    void *p = NULL;
    if (d < 0 || d > DP_CUDA_MAX_DEVICES) { dp_set_error(k->rc, "no workspace for this device"); return NULL; }
    if (bytes <= w->size[d][slot]) return w->ptr[d][slot];
    while (size < bytes) size *= 2;
    if (w->ptr[d][slot]) {
        if (on) { (void)cudaStreamSynchronize(dp__cu_stream(k)); (void)cudaFree(w->ptr[d][slot]); }   /* no kernel of ours still uses it */
        else free(w->ptr[d][slot]);
        w->ptr[d][slot] = NULL; w->size[d][slot] = 0;
    }
    if (on) { cudaError_t e = cudaMalloc(&p, size); if (e != cudaSuccess) { dp__cu_fail(e); p = NULL; } }
    else p = malloc(size);
    if (!p) { dp_set_error(k->rc, "out of memory for the kernel's workspace"); return NULL; }
    w->ptr[d][slot] = p; w->size[d][slot] = size;
    return p;
}
/* Small memory operations on the operation's stream (host: plain calls). */
static int dp__cu_fill_bytes(const dp_kernel_ctx *k, void *dst, int value, size_t bytes) {
    cudaError_t e;
    if (!dp__cu_on_device(k)) { memset(dst, value, bytes); return 0; }
    e = cudaMemsetAsync(dst, value, bytes, dp__cu_stream(k));
    return e == cudaSuccess ? 0 : dp__cu_report(k, "cudaMemsetAsync", e);
}
static int dp__cu_copy_device(const dp_kernel_ctx *k, void *dst, const void *src, size_t bytes) {
    cudaError_t e;
    if (!dp__cu_on_device(k)) { memmove(dst, src, bytes); return 0; }
    e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, dp__cu_stream(k));
    return e == cudaSuccess ? 0 : dp__cu_report(k, "cudaMemcpyAsync", e);
}
/* Copies device bytes to the host once the stream's earlier work is done:
   for results a kernel function must look at (an error flag). */
static int dp__cu_read_back(const dp_kernel_ctx *k, void *host, const void *src, size_t bytes) {
    cudaError_t e;
    if (!dp__cu_on_device(k)) { memcpy(host, src, bytes); return 0; }
    e = cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, dp__cu_stream(k));
    if (e == cudaSuccess) e = cudaStreamSynchronize(dp__cu_stream(k));
    return e == cudaSuccess ? 0 : dp__cu_report(k, "reading a kernel's result back", e);
}

/* >>cuda_index ---------------------------------------------------------------
   Elements are loaded as double and stored in the array's dtype by req with
   depeng.h's dp__load_elem / dp__store_elem (DP__HD, the CPU kernels' own);
   these take the dtype and req as the ints the kernel bodies carry. */
static DP__CU_HD double dp__cu_load(const void *p, int dt, int64_t i) { return dp__load_elem(p, (dp_dtype)dt, i); }
static DP__CU_HD void dp__cu_store(void *p, int dt, int64_t i, double v, int req) { dp__store_elem(p, (dp_dtype)dt, i, v, (dp_req)req); }
/* Where element i of an nd-dim index space (C order) is in two operands:
   the kernels' replacement for the CPU's odometer walk (dp__odometer_next),
   which is sequential. A stride is 0 along an axis an operand is broadcast
   or reduced on. Passed to kernels by value. */
struct dp__cu_map {
    int nd;
    int64_t dims[DP_MAX_DIMS];
    int64_t st[2][DP_MAX_DIMS];
};
static DP__CU_HD void dp__cu_map_at(const dp__cu_map &m, int64_t i, int64_t *off) {
    int d;
    off[0] = 0; off[1] = 0;
    for (d = m.nd - 1; d >= 0; d--) {
        int64_t q = i / m.dims[d], digit = i - q * m.dims[d];
        off[0] += digit * m.st[0][d];
        off[1] += digit * m.st[1][d];
        i = q;
    }
}
/* A reduction's index space: the axes of an nd-dim space split into kept
   axes (o, the output element, in C order over them) and reduced axes (r,
   in C order over them); the operands' offsets of (o, r). */
struct dp__cu_walk {
    int nk, nr;
    int64_t kdim[DP_MAX_DIMS], rdim[DP_MAX_DIMS];
    int64_t kst[2][DP_MAX_DIMS], rst[2][DP_MAX_DIMS];
};
static DP__CU_HD void dp__cu_walk_at(const dp__cu_walk &w, int64_t o, int64_t r, int64_t *off) {
    int d;
    off[0] = 0; off[1] = 0;
    for (d = w.nk - 1; d >= 0; d--) {
        int64_t q = o / w.kdim[d], digit = o - q * w.kdim[d];
        off[0] += digit * w.kst[0][d]; off[1] += digit * w.kst[1][d];
        o = q;
    }
    for (d = w.nr - 1; d >= 0; d--) {
        int64_t q = r / w.rdim[d], digit = r - q * w.rdim[d];
        off[0] += digit * w.rst[0][d]; off[1] += digit * w.rst[1][d];
        r = q;
    }
}
static void dp__cu_c_strides(const dp_shape *s, int64_t *st) {
    int64_t acc = 1;
    int d;
    for (d = s->ndim - 1; d >= 0; d--) { st[d] = acc; acc *= s->dims[d]; }
}
/* The walk over dims with the axes in mask reduced; st0, st1 (NULL: none)
   are the operands' strides over the space. */
static dp__cu_walk dp__cu_walk_make(int nd, const int64_t *dims, int mask, const int64_t *st0, const int64_t *st1) {
    dp__cu_walk w;
    int d;
    memset(&w, 0, sizeof w);
    for (d = 0; d < nd; d++) {
        int red = (mask >> d) & 1, j = red ? w.nr++ : w.nk++;
        (red ? w.rdim : w.kdim)[j] = dims[d];
        (red ? w.rst[0] : w.kst[0])[j] = st0[d];
        (red ? w.rst[1] : w.kst[1])[j] = st1 ? st1[d] : 0;
    }
    return w;
}
static dp__cu_map dp__cu_map_make(const dp_shape *s, const int64_t *st0, const int64_t *st1) {
    dp__cu_map m;
    int d;
    memset(&m, 0, sizeof m);
    m.nd = s->ndim;
    for (d = 0; d < s->ndim; d++) { m.dims[d] = s->dims[d]; m.st[0][d] = st0[d]; m.st[1][d] = st1 ? st1[d] : 0; }
    return m;
}

/* >>cuda_reduce --------------------------------------------------------------
   dp__cu_reduce combines elem(o, r) over r in [0, R) for each of nout
   outputs and stores the result in out (its dtype, by req): one team per
   output; when there are few outputs with long rows, each row is cut into
   slices reduced by their own teams, then a second pass combines the
   slices. elem(o, r) gives a dp__cu_acc (see dp__cu_candidate). Mean is a
   sum divided by R; argmax stores the index. Integer results (an index,
   the integer kinds' values) are stored as integers into an integer
   array, as the CPU's dp__store_int does (req add wraps around too). */
static DP__CU_HD void dp__cu_store_exact(void *p, int dt, int64_t i, int64_t v, int req) {
    if (dp__dtype_is_int((dp_dtype)dt)) dp__store_int(p, (dp_dtype)dt, i, v, (dp_req)req);
    else dp__cu_store(p, dt, i, (double)v, req);
}
template <class Elem> struct dp__cu_reduce_final {
    Elem elem;
    int kind, mean;
    int64_t count, R;      /* count: the range combined here (R, or the number of slices) */
    void *out; int out_t, req;
    DP__CU_HD void operator()(const dp__cu_team &team, int64_t o) const {
        dp__cu_acc acc = dp__cu_team_reduce(team, kind, elem, o, 0, count);
        if (team.rank() != 0) return;
        if (kind == DP__CU_ARGMAX || kind == DP__CU_IARGMAX) dp__cu_store_exact(out, out_t, o, acc.i, req);
        else if (dp__cu_kind_is_int(kind)) dp__cu_store_exact(out, out_t, o, dp__cu_bits_out(acc.v), req);
        else dp__cu_store(out, out_t, o, mean ? (R ? acc.v / (double)R : NAN) : acc.v, req);
    }
};
template <class Elem> struct dp__cu_reduce_slice {
    Elem elem;
    int kind;
    int64_t slices, chunk, R;
    dp__cu_acc *part;      /* [o * slices + s] */
    DP__CU_HD void operator()(const dp__cu_team &team, int64_t t) const {
        int64_t o = t / slices, r0 = t % slices * chunk, r1 = r0 + chunk < R ? r0 + chunk : R;
        dp__cu_acc acc = dp__cu_team_reduce(team, kind, elem, o, r0, r1);
        if (team.rank() == 0) part[t] = acc;
    }
};
struct dp__cu_elem_partials {
    const dp__cu_acc *part; int64_t slices;
    DP__CU_HD dp__cu_acc operator()(int64_t o, int64_t s) const { return part[o * slices + s]; }
};
/* Slices per output: 1 unless the outputs are too few to keep the GPU busy
   and the rows long; then about 4096 elements each, up to ~2048 teams. */
static int64_t dp__cu_slices(int64_t nout, int64_t R) {
    int64_t want, cap;
    if (R <= 8192 || nout >= 1024) return 1;
    want = (R + 4095) / 4096;
    cap = 2048 / nout > 1 ? 2048 / nout : 1;
    return want < cap ? want : cap;
}
template <class Elem> static int dp__cu_reduce(const dp_kernel_ctx *k, int kind, int mean, const Elem &elem, int64_t nout, int64_t R,
                                               void *out, int out_t, int req) {
    int64_t slices = dp__cu_slices(nout, R), chunk;
    dp__cu_acc *part;
    if (nout <= 0 || req == DP_REQ_NULL) return 0;
    if (slices == 1) {
        dp__cu_reduce_final<Elem> once = {elem, kind, mean, R, R, out, out_t, req};
        return dp__cu_teams(k, nout, dp__cu_team_size(R), once);
    }
    chunk = (R + slices - 1) / slices;
    if ((part = (dp__cu_acc *)dp__cu_workspace_get(k, DP__CU_SLOT_REDUCE, sizeof(dp__cu_acc) * (size_t)(nout * slices))) == NULL)
        return DP_ERROR_OUT_OF_MEMORY;
    {
        dp__cu_reduce_slice<Elem> first = {elem, kind, slices, chunk, R, part};
        dp__cu_elem_partials partials = {part, slices};
        dp__cu_reduce_final<dp__cu_elem_partials> second = {partials, kind, mean, slices, R, out, out_t, req};
        DP__CU_TRY(dp__cu_teams(k, nout * slices, dp__cu_team_size(chunk), first));
        return dp__cu_teams(k, nout, dp__cu_team_size(slices), second);
    }
}
/* elem: operand 0 of a walk, loaded */
struct dp__cu_elem_load {
    const void *x; int t, kind;
    dp__cu_walk w;
    DP__CU_HD dp__cu_acc operator()(int64_t o, int64_t r) const {
        int64_t off[2];
        dp__cu_walk_at(w, o, r, off);
        if (dp__cu_kind_is_int(kind)) return dp__cu_candidate_int(kind, dp__load_int(x, (dp_dtype)t, off[0]), r);
        return dp__cu_candidate(kind, dp__cu_load(x, t, off[0]), r);
    }
};
/* x reduced over the axes in mask into nout = out's elements. For argmax
   over one axis r is the index along it; over all axes, the flat index. */
static int dp__cu_reduce_array(const dp_kernel_ctx *k, int kind, int mean, const dp_ndarray *x, int mask, void *out, int out_t, int req) {
    const dp_shape *s = dp_nd_shape(x);
    int64_t st[DP_MAX_DIMS] = {0}, n = dp_shape_size(s), nout = 1;
    dp__cu_elem_load elem;
    int d;
    for (d = 0; d < s->ndim; d++) if (!((mask >> d) & 1)) nout *= s->dims[d];
    dp__cu_c_strides(s, st);
    elem.x = dp_nd_data(x); elem.t = dp_nd_dtype(x); elem.kind = kind;
    elem.w = dp__cu_walk_make(s->ndim, s->dims, mask, st, NULL);
    return dp__cu_reduce(k, kind, mean, elem, nout, nout ? n / nout : 0, out, out_t, req);
}
/* sum, mean, max, min, argmax: (x) -> out. An integer x is reduced in
   int64 (not mean: NumPy's mean of integers is a floating-point mean),
   where the CPU kernels do: sum, max and min into an integer out, argmax
   always. */
static int dp__cu_reduce_op(const dp_kernel_ctx *k, int kind, int mean) {
    char msg[128];
    int mask = dp__reduce_mask(k->params, dp_nd_shape(k->inputs[0]), msg, sizeof msg);
    int in_int = dp__dtype_is_int(dp_nd_dtype(k->inputs[0])), out_int = dp__dtype_is_int(dp_nd_dtype(k->outputs[0]));
    if (mask < 0) { dp_set_error(k->rc, msg); return DP_ERROR_INVALID_ARGS; }
    if (!mean && in_int && (out_int || kind == DP__CU_ARGMAX)) kind = dp__cu_int_kind(kind);
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_reduce_array(k, kind, mean, k->inputs[0], mask, dp_nd_data(k->outputs[0]), dp_nd_dtype(k->outputs[0]), k->req[0]);
}
static int dp__cu_k_sum(const dp_kernel_ctx *k) { return dp__cu_reduce_op(k, DP__CU_SUM, 0); }
static int dp__cu_k_mean(const dp_kernel_ctx *k) { return dp__cu_reduce_op(k, DP__CU_SUM, 1); }
static int dp__cu_k_max(const dp_kernel_ctx *k) { return dp__cu_reduce_op(k, DP__CU_MAX, 0); }
static int dp__cu_k_min(const dp_kernel_ctx *k) { return dp__cu_reduce_op(k, DP__CU_MIN, 0); }
static int dp__cu_k_argmax(const dp_kernel_ctx *k) { return dp__cu_reduce_op(k, DP__CU_ARGMAX, 0); }
/* Gradients, inputs (ograd, x): every element gets its output's gradient
   (over the count for mean); for max and min only the elements equal to
   the result, recomputed first into workspace. As dp__reduce_grad. */
struct dp__cu_reduce_grad_body {
    const void *og, *x; const double *best; void *g;
    int t, req;
    double scale;
    dp__cu_map m;          /* x's element -> its output element */
    DP__CU_HD void operator()(int64_t i) const {
        int64_t off[2];
        double v;
        dp__cu_map_at(m, i, off);
        v = dp__cu_load(og, t, off[0]) * scale;
        if (best && dp__cu_load(x, t, i) != best[off[0]]) v = 0;
        dp__cu_store(g, t, i, v, req);
    }
};
static int dp__cu_reduce_grad(const dp_kernel_ctx *k, int kind, int mean) {
    const dp_shape *s = dp_nd_shape(k->inputs[1]);
    int64_t st[DP_MAX_DIMS] = {0}, nout = dp__cu_count_of(k->inputs[0]), n = dp_shape_size(s);
    dp__cu_reduce_grad_body b;
    char msg[128];
    int mask = dp__reduce_mask(k->params, s, msg, sizeof msg);
    double *best = NULL;
    if (mask < 0) { dp_set_error(k->rc, msg); return DP_ERROR_INVALID_ARGS; }
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    if (kind == DP__CU_MAX || kind == DP__CU_MIN) {
        if ((best = (double *)dp__cu_workspace_get(k, DP__CU_SLOT_KERNEL, sizeof(double) * (size_t)(nout ? nout : 1))) == NULL)
            return DP_ERROR_OUT_OF_MEMORY;
        DP__CU_TRY(dp__cu_reduce_array(k, kind, 0, k->inputs[1], mask, best, DP_FLOAT64, DP_REQ_WRITE));
    }
    dp__reduce_strides(s, mask, st);
    b.og = dp_nd_data(k->inputs[0]); b.x = dp_nd_data(k->inputs[1]); b.best = best; b.g = dp_nd_data(k->outputs[0]);
    b.t = dp_nd_dtype(k->inputs[1]); b.req = k->req[0];
    b.scale = mean && nout ? (double)nout / (double)(n ? n : 1) : 1.0;
    b.m = dp__cu_map_make(s, st, NULL);
    return dp__cu_each(k, n, b);
}
static int dp__cu_kg_sum(const dp_kernel_ctx *k) { return dp__cu_reduce_grad(k, DP__CU_SUM, 0); }
static int dp__cu_kg_mean(const dp_kernel_ctx *k) { return dp__cu_reduce_grad(k, DP__CU_SUM, 1); }
static int dp__cu_kg_max(const dp_kernel_ctx *k) { return dp__cu_reduce_grad(k, DP__CU_MAX, 0); }
static int dp__cu_kg_min(const dp_kernel_ctx *k) { return dp__cu_reduce_grad(k, DP__CU_MIN, 0); }

/* >>cuda_elementwise ---------------------------------------------------------
   One template per shape of operator, instantiated with depeng's formula
   (a function pointer known at compile time, so nvcc inlines it). */
typedef double (*dp__cu_f1)(double);
typedef double (*dp__cu_f2)(double, double);
typedef double (*dp__cu_df2)(double, double, int);
/* A formula's integer form (depeng.h's dp__i_*), where it has one: integer
   arrays then compute in int64 and wrap around, as the CPU kernels do. */
template <dp__cu_f1 F> struct dp__cu_int1 { static const bool has = false; static DP__CU_HD int64_t f(int64_t x) { return x; } };
template <dp__cu_f2 F> struct dp__cu_int2 { static const bool has = false; static DP__CU_HD int64_t f(int64_t a, int64_t b) { (void)b; return a; } };
#define DP__CU_INT1(nm) template <> struct dp__cu_int1<dp__f_##nm> { \
        static const bool has = true; static DP__CU_HD int64_t f(int64_t x) { return dp__i_##nm(x); } };
#define DP__CU_INT2(nm) template <> struct dp__cu_int2<dp__f_##nm> { \
        static const bool has = true; static DP__CU_HD int64_t f(int64_t a, int64_t b) { return dp__i_##nm(a, b); } };
DP__CU_INT1(negative) DP__CU_INT1(abs) DP__CU_INT1(sign) DP__CU_INT1(square) DP__CU_INT1(relu)
DP__CU_INT2(add) DP__CU_INT2(sub) DP__CU_INT2(mul) DP__CU_INT2(maximum) DP__CU_INT2(minimum) DP__CU_INT2(power)
DP__CU_INT2(rsub) DP__CU_INT2(rpower)
#undef DP__CU_INT1
#undef DP__CU_INT2

template <dp__cu_f1 F> struct dp__cu_unary_body {
    const void *x; void *y; int xt, yt, req;
    DP__CU_HD void operator()(int64_t i) const {
        if (dp__cu_int1<F>::has && dp__dtype_is_int((dp_dtype)xt) && dp__dtype_is_int((dp_dtype)yt))
            dp__store_int(y, (dp_dtype)yt, i, dp__cu_int1<F>::f(dp__load_int(x, (dp_dtype)xt, i)), (dp_req)req);
        else dp__cu_store(y, yt, i, F(dp__cu_load(x, xt, i)), req);
    }
};
template <dp__cu_f1 F> static int dp__cu_k_unary(const dp_kernel_ctx *k) {
    dp__cu_unary_body<F> b = {dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), dp_nd_dtype(k->inputs[0]), dp_nd_dtype(k->outputs[0]), k->req[0]};
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_each(k, dp__cu_count_of(k->inputs[0]), b);
}
/* y = F(x, scalar); in integers for integer arrays and an integral scalar */
template <dp__cu_f2 F> struct dp__cu_scalar_body {
    const void *x; void *y; int xt, yt, req; double s; int in_int; int64_t si;
    DP__CU_HD void operator()(int64_t i) const {
        if (dp__cu_int2<F>::has && in_int) dp__store_int(y, (dp_dtype)yt, i, dp__cu_int2<F>::f(dp__load_int(x, (dp_dtype)xt, i), si), (dp_req)req);
        else dp__cu_store(y, yt, i, F(dp__cu_load(x, xt, i), s), req);
    }
};
template <dp__cu_f2 F> static int dp__cu_k_scalar(const dp_kernel_ctx *k) {
    int in_int = dp__dtype_is_int(dp_nd_dtype(k->inputs[0])) && dp__dtype_is_int(dp_nd_dtype(k->outputs[0])) && dp__double_is_int64(k->scalar);
    dp__cu_scalar_body<F> b = {dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), dp_nd_dtype(k->inputs[0]), dp_nd_dtype(k->outputs[0]), k->req[0], k->scalar,
                               in_int, in_int ? (int64_t)k->scalar : 0};
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_each(k, dp__cu_count_of(k->inputs[0]), b);
}
/* y = F(a, b) with broadcasting: the operands' offsets of output element i
   through their broadcast strides (flat: both have the output's size). */
template <dp__cu_f2 F> struct dp__cu_binary_body {
    const void *a, *b; void *y; int t, req, flat;
    dp__cu_map m;
    DP__CU_HD void operator()(int64_t i) const {
        int64_t off[2] = {i, i};
        if (!flat) dp__cu_map_at(m, i, off);
        if (dp__cu_int2<F>::has && dp__dtype_is_int((dp_dtype)t))
            dp__store_int(y, (dp_dtype)t, i, dp__cu_int2<F>::f(dp__load_int(a, (dp_dtype)t, off[0]), dp__load_int(b, (dp_dtype)t, off[1])), (dp_req)req);
        else dp__cu_store(y, t, i, F(dp__cu_load(a, t, off[0]), dp__cu_load(b, t, off[1])), req);
    }
};
template <dp__cu_f2 F> static int dp__cu_k_binary(const dp_kernel_ctx *k) {
    const dp_shape *os = dp_nd_shape(k->outputs[0]), *as = dp_nd_shape(k->inputs[0]), *bs = dp_nd_shape(k->inputs[1]);
    int64_t n = dp_shape_size(os), sa[DP_MAX_DIMS] = {0}, sb[DP_MAX_DIMS] = {0};
    dp__cu_binary_body<F> body;
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    dp__broadcast_strides(os, as, bs, sa, sb);
    body.a = dp_nd_data(k->inputs[0]); body.b = dp_nd_data(k->inputs[1]); body.y = dp_nd_data(k->outputs[0]);
    body.t = dp_nd_dtype(k->outputs[0]); body.req = k->req[0];
    body.flat = dp_shape_size(as) == n && dp_shape_size(bs) == n;
    body.m = dp__cu_map_make(os, sa, sb);
    return dp__cu_each(k, n, body);
}
/* Gradients: inputs (ograd, x) give xgrad = ograd * DF(x) (unary) or
   ograd * DF(x, scalar, 0) (scalar forms). Each element reads its output
   gradient just before writing, so the output may be that array (inplace). */
template <dp__cu_f1 DF> struct dp__cu_unary_grad_body {
    const void *og, *x; void *g; int t, req;
    DP__CU_HD void operator()(int64_t i) const { dp__cu_store(g, t, i, dp__cu_load(og, t, i) * DF(dp__cu_load(x, t, i)), req); }
};
template <dp__cu_f1 DF> static int dp__cu_kg_unary(const dp_kernel_ctx *k) {
    dp__cu_unary_grad_body<DF> b = {dp_nd_data(k->inputs[0]), dp_nd_data(k->inputs[1]), dp_nd_data(k->outputs[0]), dp_nd_dtype(k->inputs[1]), k->req[0]};
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_each(k, dp__cu_count_of(k->inputs[1]), b);
}
template <dp__cu_df2 DF> struct dp__cu_scalar_grad_body {
    const void *og, *x; void *g; int t, req; double s;
    DP__CU_HD void operator()(int64_t i) const { dp__cu_store(g, t, i, dp__cu_load(og, t, i) * DF(dp__cu_load(x, t, i), s, 0), req); }
};
template <dp__cu_df2 DF> static int dp__cu_kg_scalar(const dp_kernel_ctx *k) {
    dp__cu_scalar_grad_body<DF> b = {dp_nd_data(k->inputs[0]), dp_nd_data(k->inputs[1]), dp_nd_data(k->outputs[0]), dp_nd_dtype(k->inputs[1]), k->req[0], k->scalar};
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_each(k, dp__cu_count_of(k->inputs[1]), b);
}
/* Binary gradients, inputs (ograd, a, b): an input's gradient sums
   ograd * dF/d(input) over the output elements it was broadcast to. The
   input's own elements are the kept axes of a walk over the output (its
   flat index is o), the axes it was broadcast along are reduced; without
   broadcasting every r range has length 1. One reduction per input. */
template <dp__cu_df2 DF> struct dp__cu_elem_binary_grad {
    const void *og, *own, *other; int t, which;
    dp__cu_walk w;         /* operand 0: ograd, operand 1: the other input */
    DP__CU_HD dp__cu_acc operator()(int64_t o, int64_t r) const {
        int64_t off[2];
        double mine, theirs;
        dp__cu_acc a;
        dp__cu_walk_at(w, o, r, off);
        mine = dp__cu_load(own, t, o); theirs = dp__cu_load(other, t, off[1]);
        a.v = dp__cu_load(og, t, off[0]) * (which ? DF(theirs, mine, 1) : DF(mine, theirs, 0));
        a.i = -1;
        return a;
    }
};
template <dp__cu_df2 DF> static int dp__cu_kg_binary(const dp_kernel_ctx *k) {
    const dp_shape *os = dp_nd_shape(k->inputs[0]);
    int64_t s[2][DP_MAX_DIMS] = {{0}}, oc[DP_MAX_DIMS] = {0}, n = dp_shape_size(os);
    int which;
    DP__CU_TRY(dp__cu_enter(k));
    dp__broadcast_strides(os, dp_nd_shape(k->inputs[1]), dp_nd_shape(k->inputs[2]), s[0], s[1]);
    dp__cu_c_strides(os, oc);
    for (which = 0; which < 2; which++) {
        dp__cu_elem_binary_grad<DF> elem;
        int64_t nown = dp__cu_count_of(k->inputs[1 + which]);
        int d, mask = 0;
        if (k->req[which] == DP_REQ_NULL || nown == 0) continue;
        for (d = 0; d < os->ndim; d++) if (s[which][d] == 0) mask |= 1 << d;   /* broadcast (or size-1) axes */
        elem.og = dp_nd_data(k->inputs[0]); elem.own = dp_nd_data(k->inputs[1 + which]); elem.other = dp_nd_data(k->inputs[2 - which]);
        elem.t = dp_nd_dtype(k->inputs[1]); elem.which = which;
        elem.w = dp__cu_walk_make(os->ndim, os->dims, mask, oc, s[1 - which]);
        DP__CU_TRY(dp__cu_reduce(k, DP__CU_SUM, 0, elem, nown, n / nown, dp_nd_data(k->outputs[which]), dp_nd_dtype(k->outputs[which]), k->req[which]));
    }
    return 0;
}
/* clip and its gradient (depeng.h's dp__f_clip, dp__d_clip): the bounds are
   parameters a_min, a_max. */
struct dp__cu_clip_body {
    const void *og, *x; void *y; int t, req; double lo, hi;   /* og NULL: forward */
    int64_t ilo, ihi;                                         /* an integer x's bounds (dp__k_clip's) */
    DP__CU_HD void operator()(int64_t i) const {
        double v = dp__cu_load(x, t, i);
        if (!og && dp__dtype_is_int((dp_dtype)t)) {
            int64_t xi = dp__load_int(x, (dp_dtype)t, i);
            dp__store_int(y, (dp_dtype)t, i, xi < ilo ? ilo : xi > ihi ? ihi : xi, (dp_req)req);
        } else if (!og) dp__cu_store(y, t, i, dp__f_clip(v, lo, hi), req);
        else dp__cu_store(y, t, i, dp__d_clip(dp__cu_load(og, t, i), v, lo, hi), req);
    }
};
static int dp__cu_clip(const dp_kernel_ctx *k, int grad) {
    const dp_ndarray *x = k->inputs[grad ? 1 : 0];
    dp__cu_clip_body b = {grad ? dp_nd_data(k->inputs[0]) : NULL, dp_nd_data(x), dp_nd_data(k->outputs[0]), dp_nd_dtype(x), k->req[0],
                          k->params->v[0].f, k->params->v[1].f, 0, 0};
    if (dp__dtype_is_int((dp_dtype)b.t)) { b.ilo = dp__int_clamp((dp_dtype)b.t, dp__to_int64(b.lo)); b.ihi = dp__int_clamp((dp_dtype)b.t, dp__to_int64(b.hi)); }
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_each(k, dp__cu_count_of(x), b);
}
static int dp__cu_k_clip(const dp_kernel_ctx *k) { return dp__cu_clip(k, 0); }
static int dp__cu_kg_clip(const dp_kernel_ctx *k) { return dp__cu_clip(k, 1); }
/* _copy, reshape and cast: y = x (or y += x), converted as dp__move_elem
   does; the same dtype written whole is one device-to-device copy. Their
   gradients (_backward__copy, _backward_reshape, _backward_cast) copy
   their ograd, input 0, the same way. */
struct dp__cu_convert_body {
    const void *x; void *y; int xt, yt, req;
    DP__CU_HD void operator()(int64_t i) const { dp__move_elem(y, (dp_dtype)yt, i, x, (dp_dtype)xt, i, (dp_req)req); }
};
static int dp__cu_k_copy(const dp_kernel_ctx *k) {
    const dp_ndarray *x = k->inputs[0], *y = k->outputs[0];
    dp__cu_convert_body b = {dp_nd_data(x), dp_nd_data(y), dp_nd_dtype(x), dp_nd_dtype(y), k->req[0]};
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    if (b.xt == b.yt && (b.req == DP_REQ_WRITE || b.req == DP_REQ_INPLACE))
        return b.x == b.y ? 0 : dp__cu_copy_device(k, b.y, b.x, dp_nd_bytes(y));
    return dp__cu_each(k, dp__cu_count_of(y), b);
}

/* >>cuda_nn --------------------------------------------------------------------
   softmax over an axis sees the array as (outer, len, inner) (dp__axis_split);
   one team per row (o, ., i). The row's maximum is subtracted first so exp
   never overflows, as in dp__row_stats. */
struct dp__cu_elem_row {              /* x[base + j * inner], or exp of it less mx */
    const void *x; int t; int64_t base, inner; int use_exp; double mx;
    DP__CU_HD dp__cu_acc operator()(int64_t o, int64_t j) const {
        double v = dp__cu_load(x, t, base + j * inner);
        dp__cu_acc a;
        (void)o;
        a.v = use_exp ? exp(v - mx) : v; a.i = -1;
        return a;
    }
};
/* A row's maximum and sum of exp(x - max), combined across the team. */
static DP__CU_HD void dp__cu_row_stats(const dp__cu_team &team, const void *x, int t, int64_t base, int64_t len, int64_t inner,
                                       double *mx, double *sum) {
    dp__cu_elem_row e = {x, t, base, inner, 0, 0.0};
    *mx = dp__cu_team_reduce(team, DP__CU_MAX, e, 0, 0, len).v;
    e.use_exp = 1; e.mx = *mx;
    *sum = dp__cu_team_reduce(team, DP__CU_SUM, e, 0, 0, len).v;
}
struct dp__cu_softmax_body {
    const void *x; void *y; int t, req, log_form; int64_t len, inner;
    DP__CU_HD void operator()(const dp__cu_team &team, int64_t row) const {
        int64_t base = row / inner * len * inner + row % inner, j;
        double mx, sum;
        dp__cu_row_stats(team, x, t, base, len, inner, &mx, &sum);
        for (j = team.rank(); j < len; j += team.size()) {
            double v = dp__cu_load(x, t, base + j * inner);
            dp__cu_store(y, t, base + j * inner, log_form ? dp__f_log_softmax(v, mx, sum) : dp__f_softmax(v, mx, sum), req);
        }
    }
};
/* inputs (ograd, x). softmax: g = y * (og - sum(og * y)); log_softmax:
   g = og - softmax(x) * sum(og); y recomputed per row (dp__softmax_grad). */
struct dp__cu_elem_softmax_dot {
    const void *og, *x; int t, log_form; int64_t base, inner; double mx, sum;
    DP__CU_HD dp__cu_acc operator()(int64_t o, int64_t j) const {
        int64_t at = base + j * inner;
        double o1 = dp__cu_load(og, t, at);
        dp__cu_acc a;
        (void)o;
        a.v = log_form ? o1 : o1 * dp__f_softmax(dp__cu_load(x, t, at), mx, sum); a.i = -1;
        return a;
    }
};
struct dp__cu_softmax_grad_body {
    const void *og, *x; void *g; int t, req, log_form; int64_t len, inner;
    DP__CU_HD void operator()(const dp__cu_team &team, int64_t row) const {
        int64_t base = row / inner * len * inner + row % inner, j;
        double mx, sum, dot;
        dp__cu_row_stats(team, x, t, base, len, inner, &mx, &sum);
        {
            dp__cu_elem_softmax_dot e = {og, x, t, log_form, base, inner, mx, sum};
            dot = dp__cu_team_reduce(team, DP__CU_SUM, e, 0, 0, len).v;
        }
        for (j = team.rank(); j < len; j += team.size()) {
            int64_t at = base + j * inner;
            double y = dp__f_softmax(dp__cu_load(x, t, at), mx, sum), o1 = dp__cu_load(og, t, at);
            dp__cu_store(g, t, at, log_form ? dp__d_log_softmax(y, o1, dot) : dp__d_softmax(y, o1, dot), req);
        }
    }
};
static int dp__cu_softmax(const dp_kernel_ctx *k, int log_form, int grad) {
    const dp_ndarray *x = k->inputs[grad ? 1 : 0];
    int64_t outer, len, inner;
    if (dp__axis_split(dp_nd_shape(x), k->params->v[0].i, &outer, &len, &inner)) { dp_set_error(k->rc, "softmax: bad axis"); return DP_ERROR_INVALID_ARGS; }
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    if (!grad) {
        dp__cu_softmax_body b = {dp_nd_data(x), dp_nd_data(k->outputs[0]), dp_nd_dtype(x), k->req[0], log_form, len, inner};
        return dp__cu_teams(k, outer * inner, dp__cu_team_size(len), b);
    } else {
        dp__cu_softmax_grad_body b = {dp_nd_data(k->inputs[0]), dp_nd_data(x), dp_nd_data(k->outputs[0]), dp_nd_dtype(x), k->req[0], log_form, len, inner};
        return dp__cu_teams(k, outer * inner, dp__cu_team_size(len), b);
    }
}
static int dp__cu_k_softmax(const dp_kernel_ctx *k) { return dp__cu_softmax(k, 0, 0); }
static int dp__cu_k_log_softmax(const dp_kernel_ctx *k) { return dp__cu_softmax(k, 1, 0); }
static int dp__cu_kg_softmax(const dp_kernel_ctx *k) { return dp__cu_softmax(k, 0, 1); }
static int dp__cu_kg_log_softmax(const dp_kernel_ctx *k) { return dp__cu_softmax(k, 1, 1); }

/* softmax_cross_entropy(data (n, c), label (n,)): a (1,) loss, the sum over
   rows of log(sum exp(x - max)) - (x[label] - max) (dp__k_sce). A row whose
   label is not a class records its index in a flag (the lowest wins, as the
   CPU's scan stops at the first); the kernel function reads the flag back
   and fails with the CPU's message. */
static DP__CU_HD void dp__cu_flag_row(unsigned long long *flag, unsigned long long row) {
#ifdef __CUDA_ARCH__
    atomicMin(flag, row);
#else
    if (row < *flag) *flag = row;
#endif
}
struct dp__cu_sce_body {
    const void *x, *label, *og; void *g, *lg;     /* og NULL: forward (rowloss), else the gradient */
    double *rowloss; unsigned long long *bad;
    int t, lt, req, lreq; int64_t c;
    DP__CU_HD void operator()(const dp__cu_team &team, int64_t r) const {
        double lv = dp__cu_load(label, lt, r), mx, sum;
        int64_t lab, j;
        if (!dp__label_ok(lv, c)) {             /* the same for the whole team */
            if (team.rank() == 0) { dp__cu_flag_row(bad, (unsigned long long)r); if (!og) rowloss[r] = 0; }
            return;
        }
        lab = (int64_t)lv;
        dp__cu_row_stats(team, x, t, r * c, c, 1, &mx, &sum);
        if (!og) {
            if (team.rank() == 0) rowloss[r] = dp__f_sce_row(dp__cu_load(x, t, r * c + lab), mx, sum);
            return;
        }
        {
            double o = dp__cu_load(og, t, 0);
            for (j = team.rank(); j < c; j += team.size())
                dp__cu_store(g, t, r * c + j, dp__d_sce(o, dp__f_softmax(dp__cu_load(x, t, r * c + j), mx, sum), j == lab), req);
            if (team.rank() == 0) dp__cu_store(lg, lt, r, 0, lreq);
        }
    }
};
static int dp__cu_sce(const dp_kernel_ctx *k, int grad) {
    const dp_ndarray *x = k->inputs[grad ? 1 : 0], *label = k->inputs[grad ? 2 : 1];
    const dp_shape *s = dp_nd_shape(x);
    int64_t n = s->dims[0], c = s->dims[1];
    unsigned long long *bad, bad_row = 0;
    dp__cu_sce_body b;
    DP__CU_TRY(dp__cu_enter(k));
    if ((bad = (unsigned long long *)dp__cu_workspace_get(k, DP__CU_SLOT_KERNEL, sizeof(double) * (size_t)(n + 1))) == NULL)
        return DP_ERROR_OUT_OF_MEMORY;
    memset(&b, 0, sizeof b);
    b.x = dp_nd_data(x); b.label = dp_nd_data(label); b.bad = bad; b.rowloss = (double *)(bad + 1);
    b.t = dp_nd_dtype(x); b.lt = dp_nd_dtype(label); b.c = c;
    if (grad) {
        b.og = dp_nd_data(k->inputs[0]); b.g = dp_nd_data(k->outputs[0]); b.lg = dp_nd_data(k->outputs[1]);
        b.req = k->req[0]; b.lreq = k->req[1];
    }
    DP__CU_TRY(dp__cu_fill_bytes(k, bad, 0xFF, sizeof *bad));        /* no bad row yet */
    DP__CU_TRY(dp__cu_teams(k, n, dp__cu_team_size(c), b));
    if (!grad) {                                                       /* the rows' losses summed */
        int64_t one = 1;
        dp__cu_elem_load e;
        e.x = b.rowloss; e.t = DP_FLOAT64; e.kind = DP__CU_SUM;
        e.w = dp__cu_walk_make(1, &n, 1, &one, NULL);
        DP__CU_TRY(dp__cu_reduce(k, DP__CU_SUM, 0, e, 1, n, dp_nd_data(k->outputs[0]), dp_nd_dtype(k->outputs[0]), k->req[0]));
    }
    DP__CU_TRY(dp__cu_read_back(k, &bad_row, bad, sizeof bad_row));
    if (bad_row != ~0ull) {
        unsigned char raw[8];
        char msg[160];
        size_t esize = dp_dtype_size(dp_nd_dtype(label));
        DP__CU_TRY(dp__cu_read_back(k, raw, (const unsigned char *)dp_nd_data(label) + bad_row * esize, esize));
        snprintf(msg, sizeof msg, "label %g of row %lld is not a class in 0..%lld", dp__load_elem(raw, dp_nd_dtype(label), 0),
                 (long long)bad_row, (long long)c - 1);
        dp_set_error(k->rc, msg);
        return DP_ERROR_INVALID_ARGS;
    }
    return 0;
}
static int dp__cu_k_sce(const dp_kernel_ctx *k) { return dp__cu_sce(k, 0); }
static int dp__cu_kg_sce(const dp_kernel_ctx *k) { return dp__cu_sce(k, 1); }

/* SoftmaxOutput (MXNet's; >>layers in depeng_nn.h): the forward is the
   softmax along the classes of data taken as (rows, classes): by default
   (n, product of the other axes), with preserve_shape (product of the
   leading axes, last axis); the gradient, from (og, data, label, output),
   is (output - target) * scale, target one_hot(label) or smoothed by
   smooth_alpha, times og with out_grad, 0 for a label ignored (use_ignore)
   and for the label. A label that is not a class fails the operation with
   the CPU's message, the lowest such row named. Limits (refused with a
   message; the CPU runs them): multi_output over data of more than two
   axes (classes not contiguous), and normalization "valid" with
   use_ignore (a count of the labels kept). */
static int dp__cu_so_rows(const dp_kernel_ctx *k, const dp_shape *s, int64_t *rows, int64_t *c) {
    int i, multi = (int)k->params->v[4].i, preserve = (int)k->params->v[5].i;
    if (multi && s->ndim > 2) { dp_set_error(k->rc, "SoftmaxOutput multi_output over more than two axes: the CPU's only"); return -1; }
    *rows = s->ndim ? s->dims[0] : 1; *c = 1;
    if (preserve) { *rows = 1; for (i = 0; i + 1 < s->ndim; i++) *rows *= s->dims[i]; *c = s->ndim ? s->dims[s->ndim - 1] : 1; }
    else for (i = 1; i < s->ndim; i++) *c *= s->dims[i];
    return 0;
}
static int dp__cu_k_softmax_output(const dp_kernel_ctx *k) {
    int64_t rows, c;
    if (k->req[0] == DP_REQ_NULL) return 0;
    if (dp__cu_so_rows(k, dp_nd_shape(k->inputs[0]), &rows, &c)) return DP_ERROR_INVALID_ARGS;
    DP__CU_TRY(dp__cu_enter(k));
    dp__cu_softmax_body b = {dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), dp_nd_dtype(k->inputs[0]), k->req[0], 0, c, 1};
    return dp__cu_teams(k, rows, dp__cu_team_size(c), b);
}
struct dp__cu_softmax_output_grad_body {
    const void *og, *y, *label; void *g, *lg; unsigned long long *bad;
    int t, lt, req, lreq, use_ignore; int64_t c; double scale, alpha, off, ignore;
    DP__CU_HD void operator()(int64_t i) const {
        int64_t r = i / c, j = i % c;
        double lv = dp__cu_load(label, lt, r), v;
        int skip = use_ignore && lv == ignore;
        if (!skip && !dp__label_ok(lv, c)) { dp__cu_flag_row(bad, (unsigned long long)r); return; }
        v = skip ? 0 : (dp__cu_load(y, t, i) - (j == (int64_t)lv ? 1 - alpha : off)) * scale;
        if (og) v *= dp__cu_load(og, t, i);
        if (req != DP_REQ_NULL) dp__cu_store(g, t, i, v, req);
        if (j == 0 && lreq != DP_REQ_NULL) dp__cu_store(lg, lt, r, 0, lreq);
    }
};
static int dp__cu_kg_softmax_output(const dp_kernel_ctx *k) {
    const dp_params *p = k->params;
    int64_t rows, c;
    unsigned long long *bad, bad_row = 0;
    dp__cu_softmax_output_grad_body b;
    if (dp__cu_so_rows(k, dp_nd_shape(k->inputs[1]), &rows, &c)) return DP_ERROR_INVALID_ARGS;
    if (p->v[1].i == 2 && p->v[3].i) { dp_set_error(k->rc, "SoftmaxOutput normalization valid with use_ignore: the CPU's only"); return DP_ERROR_INVALID_ARGS; }
    DP__CU_TRY(dp__cu_enter(k));
    if ((bad = (unsigned long long *)dp__cu_workspace_get(k, DP__CU_SLOT_KERNEL, sizeof *bad)) == NULL) return DP_ERROR_OUT_OF_MEMORY;
    memset(&b, 0, sizeof b);
    b.og = p->v[6].i ? dp_nd_data(k->inputs[0]) : NULL;
    b.y = dp_nd_data(k->inputs[3]); b.label = dp_nd_data(k->inputs[2]); b.g = dp_nd_data(k->outputs[0]); b.lg = dp_nd_data(k->outputs[1]);
    b.bad = bad; b.t = dp_nd_dtype(k->inputs[1]); b.lt = dp_nd_dtype(k->inputs[2]); b.req = k->req[0]; b.lreq = k->req[1]; b.c = c;
    b.use_ignore = (int)p->v[3].i; b.ignore = p->v[2].f; b.alpha = p->v[7].f; b.off = c > 1 ? b.alpha / (double)(c - 1) : 0;
    b.scale = p->v[0].f / (p->v[1].i && dp_nd_shape(k->inputs[1])->dims[0] ? (double)(p->v[1].i == 1 ? dp_nd_shape(k->inputs[1])->dims[0] : rows) : 1.0);
    DP__CU_TRY(dp__cu_fill_bytes(k, bad, 0xFF, sizeof *bad));
    if (c > 0) DP__CU_TRY(dp__cu_each(k, rows * c, b));
    DP__CU_TRY(dp__cu_read_back(k, &bad_row, bad, sizeof bad_row));
    if (bad_row != ~0ull) {
        unsigned char raw[8];
        char msg[160];
        size_t esize = dp_dtype_size(dp_nd_dtype(k->inputs[2]));
        DP__CU_TRY(dp__cu_read_back(k, raw, (const unsigned char *)dp_nd_data(k->inputs[2]) + bad_row * esize, esize));
        snprintf(msg, sizeof msg, "label %g of row %lld is not a class in 0..%lld", dp__load_elem(raw, dp_nd_dtype(k->inputs[2]), 0),
                 (long long)bad_row, (long long)c - 1);
        dp_set_error(k->rc, msg);
        return DP_ERROR_INVALID_ARGS;
    }
    return 0;
}

/* transpose: output element i reads the input at its permuted offset. The
   map is dp__permute's: output dims and the input strides they follow
   (inverse: the opposite permutation, for the gradient). */
struct dp__cu_gather_body {
    const void *x; void *y; int t, req;
    dp__cu_map m;
    DP__CU_HD void operator()(int64_t i) const {
        int64_t off[2];
        dp__cu_map_at(m, i, off);
        dp__move_elem(y, (dp_dtype)t, i, x, (dp_dtype)t, off[0], (dp_req)req);
    }
};
static int dp__cu_transpose(const dp_kernel_ctx *k, int grad) {
    const dp_shape *xs = dp_nd_shape(k->inputs[grad ? 1 : 0]), *s = dp_nd_shape(k->inputs[0]);
    int64_t in_stride[DP_MAX_DIMS] = {0};
    int perm[DP_MAX_DIMS], d;
    char msg[128];
    dp__cu_gather_body b;
    if (dp__perm(k->params, xs, perm, msg, sizeof msg)) { dp_set_error(k->rc, msg); return DP_ERROR_INVALID_ARGS; }
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    dp__cu_c_strides(s, in_stride);
    b.m.nd = s->ndim;
    for (d = 0; d < s->ndim; d++) {
        if (!grad) { b.m.dims[d] = s->dims[perm[d]]; b.m.st[0][d] = in_stride[perm[d]]; }
        else { b.m.dims[perm[d]] = s->dims[d]; b.m.st[0][perm[d]] = in_stride[d]; }
    }
    b.x = dp_nd_data(k->inputs[0]); b.y = dp_nd_data(k->outputs[0]); b.t = dp_nd_dtype(k->inputs[0]); b.req = k->req[0];
    return dp__cu_each(k, dp_shape_size(s), b);
}
static int dp__cu_k_transpose(const dp_kernel_ctx *k) { return dp__cu_transpose(k, 0); }
static int dp__cu_kg_transpose(const dp_kernel_ctx *k) { return dp__cu_transpose(k, 1); }

/* concat: every element of the whole belongs to one part: for an outer
   index o the whole's row holds each part's run of dims[dim] * inner
   elements in turn (dp__concat_move). The gradient moves the other way,
   each part by its own req. */
#define DP__CU_MAX_PARTS 64
struct dp__cu_concat_body {
    void *whole; void *part[DP__CU_MAX_PARTS];
    int64_t run[DP__CU_MAX_PARTS], start[DP__CU_MAX_PARTS], row;
    int req[DP__CU_MAX_PARTS];
    int nparts, t, to_parts;
    DP__CU_HD void operator()(int64_t i) const {
        int64_t o = i / row, at = i - o * row;
        int p = 0;
        while (p < nparts - 1 && at >= start[p] + run[p]) p++;
        if (!to_parts) dp__move_elem(whole, (dp_dtype)t, i, part[p], (dp_dtype)t, o * run[p] + at - start[p], (dp_req)req[0]);
        else dp__move_elem(part[p], (dp_dtype)t, o * run[p] + at - start[p], whole, (dp_dtype)t, i, (dp_req)req[p]);
    }
};
static int dp__cu_concat(const dp_kernel_ctx *k, int grad) {
    dp_ndarray *whole = grad ? k->inputs[0] : k->outputs[0];
    dp_ndarray *const *parts = grad ? k->outputs : k->inputs;
    int nparts = grad ? k->num_outputs : k->num_inputs, d, i;
    const dp_shape *ws = dp_nd_shape(whole);
    int64_t dim = dp__concat_dim(k, ws), inner = 1;
    dp__cu_concat_body b;
    if (nparts < 1 || nparts > DP__CU_MAX_PARTS) { dp_set_error(k->rc, "concat: 1 to 64 parts"); return DP_ERROR_INVALID_ARGS; }
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    for (d = (int)dim + 1; d < ws->ndim; d++) inner *= ws->dims[d];
    b.whole = dp_nd_data(whole); b.nparts = nparts; b.t = dp_nd_dtype(whole); b.to_parts = grad;
    for (i = 0; i < nparts; i++) {
        b.part[i] = dp_nd_data(parts[i]);
        b.run[i] = dp_nd_shape(parts[i])->dims[dim] * inner;
        b.start[i] = b.row;
        b.row += b.run[i];
        b.req[i] = grad ? k->req[i] : k->req[0];
    }
    if (!b.row) return 0;
    return dp__cu_each(k, dp_shape_size(ws), b);
}
static int dp__cu_k_concat(const dp_kernel_ctx *k) { return dp__cu_concat(k, 0); }
static int dp__cu_kg_concat(const dp_kernel_ctx *k) { return dp__cu_concat(k, 1); }

/* one_hot(indices, depth): element (r, j) is on_value where index r equals
   j, else off_value (dp__k_one_hot). */
struct dp__cu_one_hot_body {
    const void *idx; void *y; int it, yt, req; int64_t depth; double on, off;
    DP__CU_HD void operator()(int64_t i) const {
        int64_t r = i / depth, j = i - r * depth;
        int hit = dp__dtype_is_int((dp_dtype)it) ? dp__load_int(idx, (dp_dtype)it, r) == j : dp__cu_load(idx, it, r) == (double)j;
        dp__cu_store(y, yt, i, hit ? on : off, req);
    }
};
static int dp__cu_k_one_hot(const dp_kernel_ctx *k) {
    dp__cu_one_hot_body b = {dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), dp_nd_dtype(k->inputs[0]), dp_nd_dtype(k->outputs[0]),
                             k->req[0], k->params->v[0].i, k->params->v[1].f, k->params->v[2].f};
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_each(k, dp__cu_count_of(k->outputs[0]), b);
}

/* >>cuda_take ------------------------------------------------------------------
   take(data, indices): output element i copies its row's element byte for
   byte (every dtype exact; req add goes through dp__cu_load/store). An
   index outside the rows under mode raise records the lowest output row
   in a flag, read back for the CPU's message (as softmax_cross_entropy's
   labels). Its gradient: each data-gradient element sums the output
   gradient over the indices naming its row (no atomics, so the sum's order
   is fixed: the same on every run). accuracy counts with one GPU thread. */
struct dp__cu_take_body {
    const void *x, *idx; void *y; unsigned long long *bad;
    int t, it, req; int64_t rows, width, mode; size_t esize;
    DP__CU_HD void operator()(int64_t i) const {
        int64_t k = i / width, e = i - k * width, r = dp__take_map(dp__load_index(idx, it, k), rows, mode);
        size_t b;
        if (r < 0) { dp__cu_flag_row(bad, (unsigned long long)k); return; }
        if (req == DP_REQ_WRITE || req == DP_REQ_INPLACE)
            for (b = 0; b < esize; b++)
                ((unsigned char *)y)[(size_t)i * esize + b] = ((const unsigned char *)x)[(size_t)(r * width + e) * esize + b];
        else dp__cu_store(y, t, i, dp__cu_load(x, t, r * width + e), req);
    }
};
struct dp__cu_take_grad_body {
    const void *og, *idx; void *g;
    int t, it, req; int64_t n, rows, width, mode;
    DP__CU_HD void operator()(int64_t i) const {
        int64_t r = i / width, e = i - r * width, k;
        double sum = 0;
        for (k = 0; k < n; k++)
            if (dp__take_map(dp__load_index(idx, it, k), rows, mode) == r) sum += dp__cu_load(og, t, k * width + e);
        dp__cu_store(g, t, i, sum, req);
    }
};
struct dp__cu_zero_body {
    void *y; int t, req;
    DP__CU_HD void operator()(int64_t i) const { dp__cu_store(y, t, i, 0, req); }
};
static int dp__cu_take(const dp_kernel_ctx *k, int grad) {
    const dp_ndarray *x = k->inputs[grad ? 1 : 0], *ix = k->inputs[grad ? 2 : 1];
    const dp_shape *s = dp_nd_shape(x);
    int64_t width = 1, n = dp__cu_count_of(ix);
    int d;
    DP__CU_TRY(dp__cu_enter(k));
    for (d = 1; d < s->ndim; d++) width *= s->dims[d];
    if (grad) {
        dp__cu_take_grad_body b = {dp_nd_data(k->inputs[0]), dp_nd_data(ix), dp_nd_data(k->outputs[0]), (int)dp_nd_dtype(x),
                                   (int)dp_nd_dtype(ix), (int)k->req[0], n, s->dims[0], width, k->params->v[0].i};
        dp__cu_zero_body z = {dp_nd_data(k->outputs[1]), (int)dp_nd_dtype(ix), (int)k->req[1]};
        if (k->req[0] != DP_REQ_NULL) DP__CU_TRY(dp__cu_each(k, dp__cu_count_of(x), b));
        if (k->req[1] != DP_REQ_NULL) DP__CU_TRY(dp__cu_each(k, n, z));
        return 0;
    }
    {
        dp__cu_take_body b;
        unsigned long long *bad, bad_row = 0;
        if (k->req[0] == DP_REQ_NULL) return 0;
        if ((bad = (unsigned long long *)dp__cu_workspace_get(k, DP__CU_SLOT_KERNEL, sizeof *bad)) == NULL) return DP_ERROR_OUT_OF_MEMORY;
        b.x = dp_nd_data(x); b.idx = dp_nd_data(ix); b.y = dp_nd_data(k->outputs[0]); b.bad = bad;
        b.t = (int)dp_nd_dtype(x); b.it = (int)dp_nd_dtype(ix); b.req = (int)k->req[0];
        b.rows = s->dims[0]; b.width = width; b.mode = k->params->v[0].i; b.esize = dp_dtype_size(dp_nd_dtype(x));
        DP__CU_TRY(dp__cu_fill_bytes(k, bad, 0xFF, sizeof *bad));
        DP__CU_TRY(dp__cu_each(k, dp__cu_count_of(k->outputs[0]), b));
        DP__CU_TRY(dp__cu_read_back(k, &bad_row, bad, sizeof bad_row));
        if (bad_row != ~0ull) {
            unsigned char raw[8];
            char msg[128];
            size_t esize = dp_dtype_size(dp_nd_dtype(ix));
            DP__CU_TRY(dp__cu_read_back(k, raw, (const unsigned char *)dp_nd_data(ix) + bad_row * esize, esize));
            snprintf(msg, sizeof msg, "take: index %lld outside [0, %lld)", (long long)dp__load_index(raw, (int)dp_nd_dtype(ix), 0),
                     (long long)s->dims[0]);
            dp_set_error(k->rc, msg);
            return DP_ERROR_INVALID_ARGS;
        }
    }
    return 0;
}
static int dp__cu_k_take(const dp_kernel_ctx *k) { return dp__cu_take(k, 0); }
static int dp__cu_kg_take(const dp_kernel_ctx *k) { return dp__cu_take(k, 1); }
struct dp__cu_accuracy_body {
    const void *a, *b; void *y; int ta, tb, req; int64_t n;
    DP__CU_HD void operator()(int64_t) const {
        int64_t i, hits = 0;
        int exact = (ta == DP_INT64 || ta == DP_INT32 || ta == DP_UINT8) && (tb == DP_INT64 || tb == DP_INT32 || tb == DP_UINT8);
        for (i = 0; i < n; i++)
            hits += exact ? dp__load_index(a, ta, i) == dp__load_index(b, tb, i) : dp__cu_load(a, ta, i) == dp__cu_load(b, tb, i);
        dp__cu_store(y, DP_FLOAT32, 0, n ? (double)hits / (double)n : NAN, req);
    }
};
static int dp__cu_k_accuracy(const dp_kernel_ctx *k) {
    dp__cu_accuracy_body b = {dp_nd_data(k->inputs[0]), dp_nd_data(k->inputs[1]), dp_nd_data(k->outputs[0]), (int)dp_nd_dtype(k->inputs[0]),
                              (int)dp_nd_dtype(k->inputs[1]), (int)k->req[0], dp__cu_count_of(k->inputs[0])};
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_each(k, 1, b);
}

/* >>cuda_random ----------------------------------------------------------------
   Counter-based: element i of a draw is splitmix64's output at position i
   of the stream started at key (key + (i + 1) * golden, mixed), so it is the
   same whatever the launch shape or thread order. The key is 64 bits from
   the device's generator (dp_random_next, on the host), so draws are
   reproducible for a seed and ordered by the generator's variable. Normal
   draws use Box-Muller on the pair (2p, 2p + 1), the cosine for the even
   element and the sine for the odd one, as the CPU's dp__draw does. */
static DP__CU_HD double dp__cu_uniform01(uint64_t key, uint64_t counter) {
    uint64_t z = key + (counter + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}
struct dp__cu_random_body {
    void *y; int t, req, normal; uint64_t key; double p0, p1;
    DP__CU_HD void operator()(int64_t i) const {
        double v;
        if (!normal) v = p0 + (p1 - p0) * dp__cu_uniform01(key, (uint64_t)i);
        else {
            uint64_t pair = (uint64_t)i >> 1;
            double u1 = 1.0 - dp__cu_uniform01(key, 2 * pair), u2 = dp__cu_uniform01(key, 2 * pair + 1);   /* u1 in (0, 1] */
            v = p0 + p1 * dp__box_muller(u1, u2, (int)(i & 1));
        }
        dp__cu_store(y, t, i, v, req);
    }
};
static int dp__cu_random(const dp_kernel_ctx *k, int normal) {
    dp__cu_random_body b;
    if (!dp_random_var(k->rc->engine, k->rc->ctx).id) { dp_set_error(k->rc, "no random generator on this device"); return DP_ERROR_BAD_CONTEXT; }
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    b.y = dp_nd_data(k->outputs[0]); b.t = dp_nd_dtype(k->outputs[0]); b.req = k->req[0]; b.normal = normal;
    b.key = dp_random_next(k->rc->engine, k->rc->ctx);
    b.p0 = k->params->v[1].f; b.p1 = k->params->v[2].f;
    return dp__cu_each(k, dp__cu_count_of(k->outputs[0]), b);
}
static int dp__cu_k_random_uniform(const dp_kernel_ctx *k) { return dp__cu_random(k, 0); }
static int dp__cu_k_random_normal(const dp_kernel_ctx *k) { return dp__cu_random(k, 1); }

/* >>cuda_gemm --------------------------------------------------------------------
   C (m x n, row stride ldc) = op(A) op(B) + beta C, row-major, as depeng's
   dp__matmul: op(X)(r, c) is X[r * ld + c], or X[c * ld + r] transposed. */
#define DP__CU_TILE 16
/* A 16x16 tile of C per block and pass: each thread owns one element of C
   and accumulates over k in tiles of A and B staged in shared memory. The
   steps are __host__ __device__ functions of one thread (tx, ty), so the
   host run (chapter 5) replays the same algorithm thread by thread. */
template <typename T> struct dp__cu_gemm_args {
    int ta, tb;
    int64_t m, n, kk, lda, ldb, ldc;
    const T *a, *b; T *c; T beta;
};
/* Thread (tx, ty)'s part of staging the tiles at (row0, col0, k0):
   as[i][q] = op(A)(row0 + i, k0 + q), bs[q][j] = op(B)(k0 + q, col0 + j),
   zero outside the matrices. A transposed operand is loaded with the roles
   of tx and ty swapped, so neighbouring threads still read neighbouring
   addresses (+1 column in the tiles avoids shared-memory bank conflicts). */
template <typename T> static DP__CU_HD void dp__cu_gemm_stage(const dp__cu_gemm_args<T> &g, T (*as)[DP__CU_TILE + 1], T (*bs)[DP__CU_TILE + 1],
                                                              int64_t row0, int64_t col0, int64_t k0, int tx, int ty) {
    if (!g.ta) as[ty][tx] = row0 + ty < g.m && k0 + tx < g.kk ? g.a[(row0 + ty) * g.lda + k0 + tx] : (T)0;
    else as[tx][ty] = row0 + tx < g.m && k0 + ty < g.kk ? g.a[(k0 + ty) * g.lda + row0 + tx] : (T)0;
    if (!g.tb) bs[ty][tx] = k0 + ty < g.kk && col0 + tx < g.n ? g.b[(k0 + ty) * g.ldb + col0 + tx] : (T)0;
    else bs[tx][ty] = k0 + tx < g.kk && col0 + ty < g.n ? g.b[(col0 + ty) * g.ldb + k0 + tx] : (T)0;
}
template <typename T> static DP__CU_HD T dp__cu_gemm_accumulate(T acc, const T (*as)[DP__CU_TILE + 1], const T (*bs)[DP__CU_TILE + 1], int tx, int ty) {
    for (int q = 0; q < DP__CU_TILE; q++) acc += as[ty][q] * bs[q][tx];
    return acc;
}
/* C = acc + beta C for thread (tx, ty)'s element; beta 0 never reads C (it
   may hold NaN). */
template <typename T> static DP__CU_HD void dp__cu_gemm_store(const dp__cu_gemm_args<T> &g, int64_t row0, int64_t col0, int tx, int ty, T acc) {
    if (row0 + ty < g.m && col0 + tx < g.n) {
        T *out = g.c + (row0 + ty) * g.ldc + col0 + tx;
        *out = g.beta == (T)0 ? acc : acc + g.beta * *out;
    }
}
template <typename T> __global__ void dp__cu_gemm_tiled(dp__cu_gemm_args<T> g) {
    __shared__ T as[DP__CU_TILE][DP__CU_TILE + 1];
    __shared__ T bs[DP__CU_TILE][DP__CU_TILE + 1];
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    for (int64_t rb = blockIdx.y; rb * DP__CU_TILE < g.m; rb += gridDim.y) {
        for (int64_t cb = blockIdx.x; cb * DP__CU_TILE < g.n; cb += gridDim.x) {   /* the same trips in every thread */
            T acc = 0;
            for (int64_t k0 = 0; k0 < g.kk; k0 += DP__CU_TILE) {
                dp__cu_gemm_stage(g, as, bs, rb * DP__CU_TILE, cb * DP__CU_TILE, k0, tx, ty);
                __syncthreads();
                acc = dp__cu_gemm_accumulate<T>(acc, as, bs, tx, ty);
                __syncthreads();                  /* before the next tiles overwrite these */
            }
            dp__cu_gemm_store(g, rb * DP__CU_TILE, cb * DP__CU_TILE, tx, ty, acc);
        }
    }
}
/* The host run of the tiled kernel: each block's threads one after another,
   in the same steps, with the barriers between the steps. */
template <typename T> static void dp__cu_gemm_host(const dp__cu_gemm_args<T> &g) {
    T as[DP__CU_TILE][DP__CU_TILE + 1], bs[DP__CU_TILE][DP__CU_TILE + 1], acc[DP__CU_TILE][DP__CU_TILE];
    int tx, ty;
    for (int64_t row0 = 0; row0 < g.m; row0 += DP__CU_TILE)
        for (int64_t col0 = 0; col0 < g.n; col0 += DP__CU_TILE) {
            memset(acc, 0, sizeof acc);
            for (int64_t k0 = 0; k0 < g.kk; k0 += DP__CU_TILE) {
                for (ty = 0; ty < DP__CU_TILE; ty++) for (tx = 0; tx < DP__CU_TILE; tx++) dp__cu_gemm_stage(g, as, bs, row0, col0, k0, tx, ty);
                for (ty = 0; ty < DP__CU_TILE; ty++) for (tx = 0; tx < DP__CU_TILE; tx++) acc[ty][tx] = dp__cu_gemm_accumulate<T>(acc[ty][tx], as, bs, tx, ty);
            }
            for (ty = 0; ty < DP__CU_TILE; ty++) for (tx = 0; tx < DP__CU_TILE; tx++) dp__cu_gemm_store(g, row0, col0, tx, ty, acc[ty][tx]);
        }
}
template <typename T> static int dp__cu_gemm_tiles(const dp_kernel_ctx *k, int ta, int tb, int64_t m, int64_t n, int64_t kk, const void *a,
                                                   int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    dp__cu_gemm_args<T> g;
    int64_t gx = (n + DP__CU_TILE - 1) / DP__CU_TILE, gy = (m + DP__CU_TILE - 1) / DP__CU_TILE;
    g.ta = ta; g.tb = tb; g.m = m; g.n = n; g.kk = kk; g.lda = lda; g.ldb = ldb; g.ldc = ldc;
    g.a = (const T *)a; g.b = (const T *)b; g.c = (T *)c; g.beta = (T)beta;
    if (!dp__cu_on_device(k)) { dp__cu_gemm_host<T>(g); return 0; }
    {
        dim3 grid((unsigned)(gx < 65535 ? gx : 65535), (unsigned)(gy < 65535 ? gy : 65535)), block(DP__CU_TILE, DP__CU_TILE);
        dp__cu_gemm_tiled<T><<<grid, block, 0, dp__cu_stream(k)>>>(g);
        return dp__cu_check_launch(k);
    }
}
#ifdef DEPENG_CUDA_USE_CUBLAS
/* One cuBLAS handle per thread and device: a handle must not be used by two
   threads at once, and a worker thread keeps its stream. Destroyed when the
   thread ends. */
struct dp__cu_cublas_handles {
    cublasHandle_t h[DP_CUDA_MAX_DEVICES];
    ~dp__cu_cublas_handles() { for (int d = 0; d < DP_CUDA_MAX_DEVICES; d++) if (h[d]) { (void)cudaSetDevice(d); (void)cublasDestroy(h[d]); } }
};
static thread_local dp__cu_cublas_handles dp__cu_tls_cublas;
static int dp__cu_cublas_fail(const dp_kernel_ctx *k, const char *what, cublasStatus_t st) {
    char msg[200];
    snprintf(msg, sizeof msg, "%s: %s", what, cublasGetStatusString(st));
    dp_set_error(k->rc, msg);
    return DP_ERROR_BACKEND;
}
/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
   same call with A and B swapped, no copies. */
static int dp__cu_gemm_cublas(const dp_kernel_ctx *k, dp_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t kk, const void *a,
                              int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    int dev = (int)k->rc->ctx.dev_id;
    cublasHandle_t *h;
    cublasStatus_t st;
    if (dev < 0 || dev >= DP_CUDA_MAX_DEVICES) { dp_set_error(k->rc, "cuBLAS: bad device"); return DP_ERROR_BAD_CONTEXT; }
    if (m > INT32_MAX || n > INT32_MAX || kk > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX || ldc > INT32_MAX) {
        dp_set_error(k->rc, "cuBLAS: a matrix dimension does not fit in an int");
        return DP_ERROR_INVALID_ARGS;
    }
    h = &dp__cu_tls_cublas.h[dev];
    if (!*h && (st = cublasCreate(h)) != CUBLAS_STATUS_SUCCESS) { *h = NULL; return dp__cu_cublas_fail(k, "cublasCreate", st); }
    if ((st = cublasSetStream(*h, dp__cu_stream(k))) != CUBLAS_STATUS_SUCCESS) return dp__cu_cublas_fail(k, "cublasSetStream", st);
    if (t == DP_FLOAT32) {
        const float one = 1.0f, fbeta = (float)beta;
        st = cublasSgemm(*h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)kk, &one,
                         (const float *)b, (int)ldb, (const float *)a, (int)lda, &fbeta, (float *)c, (int)ldc);
    } else {
        const double one = 1.0;
        st = cublasDgemm(*h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)kk, &one,
                         (const double *)b, (int)ldb, (const double *)a, (int)lda, &beta, (double *)c, (int)ldc);
    }
    return st == CUBLAS_STATUS_SUCCESS ? 0 : dp__cu_cublas_fail(k, t == DP_FLOAT32 ? "cublasSgemm" : "cublasDgemm", st);
}
#endif
/* C = beta * C, for k == 0 (dp__gemm_scale) */
struct dp__cu_scale_body {
    void *c; int t; int64_t n, ldc; double beta;
    DP__CU_HD void operator()(int64_t i) const {
        int64_t at = i / n * ldc + i % n;
        dp__cu_store(c, t, at, beta == 0 ? 0.0 : beta * dp__cu_load(c, t, at), DP_REQ_WRITE);
    }
};
static int dp__cu_matmul(const dp_kernel_ctx *k, dp_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t kk, const void *a, int64_t lda,
                         const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return 0;
    if (kk <= 0) {                                 /* no products: C = beta C (A and B are not read) */
        dp__cu_scale_body s = {c, (int)t, n, ldc, beta};
        return beta == 1.0 ? 0 : dp__cu_each(k, m * n, s);
    }
#ifdef DEPENG_CUDA_USE_CUBLAS
    if (dp__cu_on_device(k)) return dp__cu_gemm_cublas(k, t, ta, tb, m, n, kk, a, lda, b, ldb, beta, c, ldc);
#endif
    if (t == DP_FLOAT32) return dp__cu_gemm_tiles<float>(k, ta, tb, m, n, kk, a, lda, b, ldb, beta, c, ldc);
    return dp__cu_gemm_tiles<double>(k, ta, tb, m, n, kk, a, lda, b, ldb, beta, c, ldc);
}

/* >>cuda_linear ------------------------------------------------------------------
   dot and FullyConnected: dp__k_dot, dp__kg_dot, dp__k_fc and dp__kg_fc
   with dp__cu_matmul for dp__matmul, call for call. */
static int dp__cu_k_dot(const dp_kernel_ctx *k) {
    const dp_shape *as = dp_nd_shape(k->inputs[0]), *bs = dp_nd_shape(k->inputs[1]);
    int ta = (int)k->params->v[0].i, tb = (int)k->params->v[1].i;
    int64_t m = as->dims[ta ? 1 : 0], kk = as->dims[ta ? 0 : 1], n = bs->dims[tb ? 0 : 1];
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_matmul(k, dp_nd_dtype(k->inputs[0]), ta, tb, m, n, kk, dp_nd_data(k->inputs[0]), as->dims[1], dp_nd_data(k->inputs[1]),
                         bs->dims[1], dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0]), n);
}
/* inputs (og, A, B) with C = op(A) op(B): d op(A) = og op(B)^T and
   d op(B) = op(A)^T og, transposed back where A or B was. */
static int dp__cu_kg_dot(const dp_kernel_ctx *k) {
    const dp_shape *as = dp_nd_shape(k->inputs[1]), *bs = dp_nd_shape(k->inputs[2]);
    const void *og = dp_nd_data(k->inputs[0]), *a = dp_nd_data(k->inputs[1]), *b = dp_nd_data(k->inputs[2]);
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    int ta = (int)k->params->v[0].i, tb = (int)k->params->v[1].i;
    int64_t m = as->dims[ta ? 1 : 0], kk = as->dims[ta ? 0 : 1], n = bs->dims[tb ? 0 : 1];
    DP__CU_TRY(dp__cu_enter(k));
    if (k->req[0] != DP_REQ_NULL) {
        if (!ta) DP__CU_TRY(dp__cu_matmul(k, t, 0, !tb, m, kk, n, og, n, b, bs->dims[1], dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0]), kk));
        else DP__CU_TRY(dp__cu_matmul(k, t, tb, 1, kk, m, n, b, bs->dims[1], og, n, dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0]), m));
    }
    if (k->req[1] != DP_REQ_NULL) {
        if (!tb) DP__CU_TRY(dp__cu_matmul(k, t, !ta, 0, kk, n, m, a, as->dims[1], og, n, dp__beta_of(k->req[1]), dp_nd_data(k->outputs[1]), n));
        else DP__CU_TRY(dp__cu_matmul(k, t, 1, ta, n, kk, m, og, n, a, as->dims[1], dp__beta_of(k->req[1]), dp_nd_data(k->outputs[1]), kk));
    }
    return 0;
}
/* y[r, j] += bias[j] */
struct dp__cu_bias_body {
    const void *bias; void *y; int t; int64_t h;
    DP__CU_HD void operator()(int64_t i) const { dp__cu_store(y, t, i, dp__cu_load(bias, t, i % h), DP_REQ_ADD); }
};
/* FullyConnected(data, weight (hidden, in)[, bias (hidden,)]) = data
   weight^T + bias, data taken as (rows, in) by flatten (parameter 2) as
   depeng_nn.h's dpn__fc_rows: (batch, product of the other axes), or with
   flatten false (product of the leading axes, last axis); no bias with
   two inputs. */
static void dp__cu_fc_rows(const dp_kernel_ctx *k, const dp_shape *d, int64_t *rows, int64_t *in) {
    int i, flatten = k->params->count > 2 ? (int)k->params->v[2].i : 1;
    *rows = 1; *in = 1;
    if (flatten) { *rows = d->ndim ? d->dims[0] : 1; for (i = 1; i < d->ndim; i++) *in *= d->dims[i]; }
    else { for (i = 0; i + 1 < d->ndim; i++) *rows *= d->dims[i]; *in = d->ndim ? d->dims[d->ndim - 1] : 1; }
}
static int dp__cu_k_fc(const dp_kernel_ctx *k) {
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    int64_t batch, in, h = k->params->v[0].i;
    dp__cu_fc_rows(k, dp_nd_shape(k->inputs[0]), &batch, &in);
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    DP__CU_TRY(dp__cu_matmul(k, t, 0, 1, batch, h, in, dp_nd_data(k->inputs[0]), in, dp_nd_data(k->inputs[1]), in, dp__beta_of(k->req[0]),
                             dp_nd_data(k->outputs[0]), h));
    if (k->num_inputs < 3) return 0;
    {
        dp__cu_bias_body b = {dp_nd_data(k->inputs[2]), dp_nd_data(k->outputs[0]), (int)t, h};
        return dp__cu_each(k, batch * h, b);
    }
}
/* inputs (og, data, weight[, bias]): d data = og W, d W = og^T data,
   d bias = og summed over every axis but its last (the rows). */
static int dp__cu_kg_fc(const dp_kernel_ctx *k) {
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    int64_t batch, in, h = dp_nd_shape(k->inputs[2])->dims[0];
    const void *og = dp_nd_data(k->inputs[0]);
    dp__cu_fc_rows(k, dp_nd_shape(k->inputs[1]), &batch, &in);
    DP__CU_TRY(dp__cu_enter(k));
    if (k->req[0] != DP_REQ_NULL)
        DP__CU_TRY(dp__cu_matmul(k, t, 0, 0, batch, in, h, og, h, dp_nd_data(k->inputs[2]), in, dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0]), in));
    if (k->req[1] != DP_REQ_NULL)
        DP__CU_TRY(dp__cu_matmul(k, t, 1, 0, h, in, batch, og, h, dp_nd_data(k->inputs[1]), in, dp__beta_of(k->req[1]), dp_nd_data(k->outputs[1]), in));
    if (k->num_outputs > 2 && k->req[2] != DP_REQ_NULL)
        DP__CU_TRY(dp__cu_reduce_array(k, DP__CU_SUM, 0, k->inputs[0], (1 << (dp_nd_shape(k->inputs[0])->ndim - 1)) - 1, dp_nd_data(k->outputs[2]), (int)t, k->req[2]));
    return 0;
}

/* >>cuda_updates ---------------------------------------------------------------
   sgd_update, sgd_mom_update, adam_update: depeng's dp__opt_step per
   element, as dp__update does on the CPU. Each element reads the weight
   before writing the output, which may be the weight itself (in place). */
struct dp__cu_update_body {
    const void *w, *g; void *s1, *s2, *out;
    int t, req, kind;
    double p[7];     /* lr, wd, rescale_grad, clip_gradient, then momentum or beta1, beta2, epsilon */
    DP__CU_HD void operator()(int64_t i) const {
        double a = s1 ? dp__cu_load(s1, t, i) : 0, b = s2 ? dp__cu_load(s2, t, i) : 0;
        double wi = dp__opt_step(kind, dp__cu_load(w, t, i), dp__cu_load(g, t, i), &a, &b, p);
        if (s1) dp__cu_store(s1, t, i, a, DP_REQ_WRITE);
        if (s2) dp__cu_store(s2, t, i, b, DP_REQ_WRITE);
        dp__cu_store(out, t, i, wi, req);
    }
};
static int dp__cu_update(const dp_kernel_ctx *k, int kind) {
    dp__cu_update_body b;
    int i;
    DP__CU_TRY(dp__cu_enter(k));
    b.w = dp_nd_data(k->inputs[0]); b.g = dp_nd_data(k->inputs[1]);
    b.s1 = k->num_inputs > 2 ? dp_nd_data(k->inputs[2]) : NULL; b.s2 = k->num_inputs > 3 ? dp_nd_data(k->inputs[3]) : NULL;
    b.out = dp_nd_data(k->outputs[0]); b.t = dp_nd_dtype(k->inputs[0]); b.req = k->req[0]; b.kind = kind;
    for (i = 0; i < 7; i++) b.p[i] = i < k->params->count ? k->params->v[i].f : 0;
    dp__opt_bias_correct(kind, k->params, b.p);
    return dp__cu_each(k, dp__cu_count_of(k->inputs[0]), b);
}
static int dp__cu_k_sgd(const dp_kernel_ctx *k) { return dp__cu_update(k, DP__OPT_SGD); }
static int dp__cu_k_sgd_mom(const dp_kernel_ctx *k) { return dp__cu_update(k, DP__OPT_SGD_MOM); }
static int dp__cu_k_adam(const dp_kernel_ctx *k) { return dp__cu_update(k, DP__OPT_ADAM); }

/* >>cuda_nn_layers -------------------------------------------------------------
   The GPU kernels of depeng_nn.h's layers, tensor operators, losses and
   updates (chapter 4 lists them). This header sits on depeng.h and does not
   need depeng_nn.h; this section is compiled only when depeng_nn.h's
   implementation is in the same file, included before this one
   (DEPENG_NN_IMPL_INCLUDED), because it calls that implementation's own
   host-side geometry and parameter code (dpn__conv_geo_of,
   dpn__deconv_geo_of, dpn__pool_window, dpn__slice_range, its parameter
   indices): the GPU kernels read a layer's window, pads and axes exactly
   as its CPU kernel does, and depeng_nn.h stays free of CUDA. Only the
   per-element work is written again here, as __host__ __device__ bodies,
   one thread per output element (gathers, no atomics), so results do not
   depend on the thread order. Without depeng_nn.h's implementation in this
   file those operators stay CPU-only and dp_cuda_missing_kernels names them. */
#if defined(DEPENG_NN_IMPL_INCLUDED)
/* y = v by req; v divided by *count (when given and above 0): a gradient
   normalised by a count a kernel computed on the device. */
struct dp__cu_nn_fill_body {
    void *y; int t, req; double v; const double *count;
    DP__CU_HD void operator()(int64_t i) const { dp__cu_store(y, t, i, count && *count > 0 ? v / *count : v, req); }
};
static int dp__cu_nn_fill(const dp_kernel_ctx *k, dp_ndarray *a, double v, int req) {
    dp__cu_nn_fill_body b = {dp_nd_data(a), dp_nd_dtype(a), req, v, NULL};
    return req == DP_REQ_NULL ? 0 : dp__cu_each(k, dp__cu_count_of(a), b);
}
/* _backward_BlockGrad: every output 0 */
static int dp__cu_kg_block(const dp_kernel_ctx *k) {
    int i;
    DP__CU_TRY(dp__cu_enter(k));
    for (i = 0; i < k->num_outputs; i++) DP__CU_TRY(dp__cu_nn_fill(k, k->outputs[i], 0, k->req[i]));
    return 0;
}

/* Convolution and Deconvolution on depeng_nn.h's geometry (dpn__cgeo: the
   convolution x (n, c, h, w) * w (f, c / g, kh, kw) -> y (n, f, oh, ow); a
   deconvolution is that convolution's transpose). The direct
   implementation: three gathers, one thread per element written: mode 0 y
   from (x, w), mode 1 x from (y, w), mode 2 w from (y, x); the sum is
   stored by req, with the bias of the element's channel added when bias is
   given (modes 0 and 1). */
struct dp__cu_conv_body {
    dpn__cgeo g; const void *a, *b, *bias; void *out; int t, req, mode;
    DP__CU_HD void operator()(int64_t e) const {
        int64_t cg = g.c / g.g, fg = g.f / g.g, ki, kj;
        double acc = 0;
        if (mode == 0) {               /* a = x, b = w */
            int64_t ox = e % g.ow, oy = e / g.ow % g.oh, o = e / (g.ow * g.oh) % g.f, n = e / (g.ow * g.oh * g.f), ci;
            int64_t x0 = (n * g.c + o / fg * cg) * g.h;
            for (ci = 0; ci < cg; ci++) for (ki = 0; ki < g.kh; ki++) {
                int64_t iy = oy * g.sh - g.ph + ki * g.dh;
                if (iy < 0 || iy >= g.h) continue;
                for (kj = 0; kj < g.kw; kj++) {
                    int64_t ix = ox * g.sw - g.pw + kj * g.dw;
                    if (ix < 0 || ix >= g.w) continue;
                    acc += dp__cu_load(b, t, ((o * cg + ci) * g.kh + ki) * g.kw + kj) * dp__cu_load(a, t, ((x0 + ci * g.h) + iy) * g.w + ix);
                }
            }
            if (bias) acc += dp__cu_load(bias, t, o);
        } else if (mode == 1) {        /* a = y, b = w */
            int64_t ix = e % g.w, iy = e / g.w % g.h, cc = e / (g.w * g.h) % g.c, n = e / (g.w * g.h * g.c), grp = cc / cg, ci = cc % cg, of;
            for (of = 0; of < fg; of++) {
                int64_t o = grp * fg + of;
                for (ki = 0; ki < g.kh; ki++) {
                    int64_t ty = iy + g.ph - ki * g.dh, oy;
                    if (ty < 0 || ty % g.sh) continue;
                    if ((oy = ty / g.sh) >= g.oh) continue;
                    for (kj = 0; kj < g.kw; kj++) {
                        int64_t tx = ix + g.pw - kj * g.dw, ox;
                        if (tx < 0 || tx % g.sw) continue;
                        if ((ox = tx / g.sw) >= g.ow) continue;
                        acc += dp__cu_load(b, t, ((o * cg + ci) * g.kh + ki) * g.kw + kj) * dp__cu_load(a, t, ((n * g.f + o) * g.oh + oy) * g.ow + ox);
                    }
                }
            }
            if (bias) acc += dp__cu_load(bias, t, cc);
        } else {                       /* a = y, b = x */
            int64_t wj = e % g.kw, wi = e / g.kw % g.kh, ci = e / (g.kw * g.kh) % cg, o = e / (g.kw * g.kh * cg), grp = o / fg, n, oy, ox;
            for (n = 0; n < g.n; n++) for (oy = 0; oy < g.oh; oy++) {
                int64_t iy = oy * g.sh - g.ph + wi * g.dh;
                if (iy < 0 || iy >= g.h) continue;
                for (ox = 0; ox < g.ow; ox++) {
                    int64_t ix = ox * g.sw - g.pw + wj * g.dw;
                    if (ix < 0 || ix >= g.w) continue;
                    acc += dp__cu_load(a, t, ((n * g.f + o) * g.oh + oy) * g.ow + ox) * dp__cu_load(b, t, ((n * g.c + grp * cg + ci) * g.h + iy) * g.w + ix);
                }
            }
        }
        dp__cu_store(out, t, e, acc, req);
    }
};
/* db[ch] = the sum of og (n, chans, P) over the batch and the plane, by req */
struct dp__cu_chan_sum_body {
    const void *og; void *db; int t, req; int64_t n, chans, plane;
    DP__CU_HD void operator()(int64_t ch) const {
        double s = 0;
        for (int64_t i = 0; i < n; i++) for (int64_t p = 0; p < plane; p++) s += dp__cu_load(og, t, (i * chans + ch) * plane + p);
        dp__cu_store(db, t, ch, s, req);
    }
};
/* y (n, chans, plane) += bias[channel] */
struct dp__cu_chan_bias_body {
    void *y; const void *bias; int t; int64_t chans, plane;
    DP__CU_HD void operator()(int64_t e) const { dp__cu_store(y, t, e, dp__cu_load(bias, t, e / plane % chans), DP_REQ_ADD); }
};
/* The im2col + GEMM implementation, dpn__conv_gemm's steps on the GPU: one
   image's columns of one group ((c/g) kh kw x oh ow, in the kernel slot of
   the workspace) gathered by im2col, or scattered back by col2im as a
   gather per input element (each written once, by req); the products by
   dp__cu_matmul (the tiled GEMM, or cuBLAS). A pointwise convolution uses
   its input as the columns. */
struct dp__cu_im2col_body {
    dpn__cgeo g; const void *x; void *col; int t, req, back;   /* back: col2im into x (cg h w elements), by req */
    DP__CU_HD void operator()(int64_t e) const {
        int64_t P = g.oh * g.ow;
        if (!back) {
            int64_t row = e / P, p = e % P, ci = row / (g.kh * g.kw), ki = row / g.kw % g.kh, kj = row % g.kw;
            int64_t iy = p / g.ow * g.sh - g.ph + ki * g.dh, ix = p % g.ow * g.sw - g.pw + kj * g.dw;
            dp__cu_store(col, t, e, iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? dp__cu_load(x, t, (ci * g.h + iy) * g.w + ix) : 0.0, DP_REQ_WRITE);
            return;
        }
        {
            int64_t ix = e % g.w, iy = e / g.w % g.h, ci = e / (g.w * g.h), ki, kj;
            double acc = 0;
            for (ki = 0; ki < g.kh; ki++) {
                int64_t ty = iy + g.ph - ki * g.dh, oy;
                if (ty < 0 || ty % g.sh || (oy = ty / g.sh) >= g.oh) continue;
                for (kj = 0; kj < g.kw; kj++) {
                    int64_t tx = ix + g.pw - kj * g.dw, ox;
                    if (tx < 0 || tx % g.sw || (ox = tx / g.sw) >= g.ow) continue;
                    acc += dp__cu_load(col, t, ((ci * g.kh + ki) * g.kw + kj) * P + oy * g.ow + ox);
                }
            }
            dp__cu_store((void *)x, t, e, acc, req);
        }
    }
};
static int dp__cu_conv_gemm(const dp_kernel_ctx *k, const dpn__cgeo *g, int mode, dp_dtype t, void *x, void *w, void *y, int req) {
    int64_t cg = g->c / g->g, fg = g->f / g->g, K = cg * g->kh * g->kw, P = g->oh * g->ow, n, gi;
    size_t es = dp_dtype_size(t);
    int pw = dpn__cgeo_pointwise(g);
    void *col = NULL;
    if (!pw && (col = dp__cu_workspace_get(k, DP__CU_SLOT_KERNEL, (size_t)(K * P) * es)) == NULL) return DP_ERROR_OUT_OF_MEMORY;
    for (gi = 0; gi < g->g; gi++) for (n = 0; n < g->n; n++) {
        char *xg = (char *)x + (size_t)((n * g->c + gi * cg) * g->h * g->w) * es, *wg = (char *)w + (size_t)(gi * fg * K) * es;
        char *yg = (char *)y + (size_t)((n * g->f + gi * fg) * P) * es;
        dp__cu_im2col_body ic;
        void *cols = pw ? (void *)xg : col;
        ic.g = *g; ic.x = xg; ic.col = col; ic.t = (int)t; ic.req = req; ic.back = mode == 1;
        if (mode == 1) {
            if (pw) { DP__CU_TRY(dp__cu_matmul(k, t, 1, 0, K, P, fg, wg, K, yg, P, dp__beta_of((dp_req)req), xg, P)); continue; }
            DP__CU_TRY(dp__cu_matmul(k, t, 1, 0, K, P, fg, wg, K, yg, P, 0.0, col, P));
            DP__CU_TRY(dp__cu_each(k, cg * g->h * g->w, ic));
            continue;
        }
        if (!pw) DP__CU_TRY(dp__cu_each(k, K * P, ic));
        if (mode == 0) DP__CU_TRY(dp__cu_matmul(k, t, 0, 0, fg, P, K, wg, K, cols, P, dp__beta_of((dp_req)req), yg, P));
        else DP__CU_TRY(dp__cu_matmul(k, t, 0, 1, fg, K, P, yg, P, cols, P, n == 0 ? dp__beta_of((dp_req)req) : 1.0, wg, K));
    }
    return 0;
}
/* One of the three products (mode as dp__cu_conv_body's; a, b its operands
   in that body's roles, out the written one), by the implementation the
   CPU kernel picks for the same parameters (dpn__conv_direct): im2col +
   GEMM or the direct gathers. The bias of the written array's channels is
   added (modes 0 and 1). */
static int dp__cu_conv_mode(const dp_kernel_ctx *k, const dpn__cgeo *g, int mode, int direct, const void *a, const void *b, const void *bias,
                            void *out, int req) {
    dp__cu_conv_body body;
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    int64_t count = mode == 0 ? g->n * g->f * g->oh * g->ow : mode == 1 ? g->n * g->c * g->h * g->w : g->f * (g->c / g->g) * g->kh * g->kw;
    if (req == DP_REQ_NULL) return 0;
    if (!direct) {
        void *x = mode == 0 ? (void *)a : mode == 1 ? out : (void *)b, *w = mode == 2 ? out : (void *)b, *y = mode == 0 ? out : (void *)a;
        DP__CU_TRY(dp__cu_conv_gemm(k, g, mode, t, x, w, y, req));
        if (bias) {
            dp__cu_chan_bias_body bb = {out, bias, (int)t, mode == 0 ? g->f : g->c, mode == 0 ? g->oh * g->ow : g->h * g->w};
            DP__CU_TRY(dp__cu_each(k, count, bb));
        }
        return 0;
    }
    body.g = *g; body.a = a; body.b = b; body.bias = bias; body.out = out; body.t = t; body.req = req; body.mode = mode;
    return dp__cu_each(k, count, body);
}
static int dp__cu_conv_algo(const dp_kernel_ctx *k, const dpn__cgeo *g, int deconv) {
    return dpn__conv_direct(g, k->params->v[deconv ? DPN__DC_ALGO : DPN__CV_ALGO].i, k->params->v[deconv ? DPN__DC_WORKSPACE : DPN__CV_WORKSPACE].i,
                            dp_dtype_size(dp_nd_dtype(k->inputs[0])), DPN__CONV_IMAGE);
}
static int dp__cu_k_conv(const dp_kernel_ctx *k) {
    dpn__cgeo g;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__conv_geo_of(k->params, dp_nd_shape(k->inputs[0]), dp_nd_shape(k->outputs[0]), &g);
    return dp__cu_conv_mode(k, &g, 0, dp__cu_conv_algo(k, &g, 0), dp_nd_data(k->inputs[0]), dp_nd_data(k->inputs[1]),
                            k->num_inputs == 3 ? dp_nd_data(k->inputs[2]) : NULL, dp_nd_data(k->outputs[0]), k->req[0]);
}
/* inputs (og, data, weight[, bias]); outputs (d data, d weight[, d bias]) */
static int dp__cu_kg_conv(const dp_kernel_ctx *k) {
    dpn__cgeo g;
    const void *og = dp_nd_data(k->inputs[0]);
    int direct;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__conv_geo_of(k->params, dp_nd_shape(k->inputs[1]), dp_nd_shape(k->inputs[0]), &g);
    direct = dp__cu_conv_algo(k, &g, 0);
    DP__CU_TRY(dp__cu_conv_mode(k, &g, 1, direct, og, dp_nd_data(k->inputs[2]), NULL, dp_nd_data(k->outputs[0]), k->req[0]));
    DP__CU_TRY(dp__cu_conv_mode(k, &g, 2, direct, og, dp_nd_data(k->inputs[1]), NULL, dp_nd_data(k->outputs[1]), k->req[1]));
    if (k->num_outputs == 3 && k->req[2] != DP_REQ_NULL) {
        dp__cu_chan_sum_body b = {og, dp_nd_data(k->outputs[2]), dp_nd_dtype(k->inputs[1]), k->req[2], g.n, g.f, g.oh * g.ow};
        DP__CU_TRY(dp__cu_each(k, g.f, b));
    }
    return 0;
}
/* Deconvolution(data, weight[, bias]) is the convolution's mode 1 with
   data as its y; its gradient is mode 2 (weight) and mode 0 (data). */
static int dp__cu_k_deconv(const dp_kernel_ctx *k) {
    dpn__cgeo g;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__deconv_geo_of(k->params, dp_nd_shape(k->inputs[0]), dp_nd_shape(k->outputs[0]), &g);
    return dp__cu_conv_mode(k, &g, 1, dp__cu_conv_algo(k, &g, 1), dp_nd_data(k->inputs[0]), dp_nd_data(k->inputs[1]),
                            k->num_inputs == 3 ? dp_nd_data(k->inputs[2]) : NULL, dp_nd_data(k->outputs[0]), k->req[0]);
}
static int dp__cu_kg_deconv(const dp_kernel_ctx *k) {
    dpn__cgeo g;
    const void *og = dp_nd_data(k->inputs[0]);
    int direct;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__deconv_geo_of(k->params, dp_nd_shape(k->inputs[1]), dp_nd_shape(k->inputs[0]), &g);
    direct = dp__cu_conv_algo(k, &g, 1);
    DP__CU_TRY(dp__cu_conv_mode(k, &g, 0, direct, og, dp_nd_data(k->inputs[2]), NULL, dp_nd_data(k->outputs[0]), k->req[0]));
    DP__CU_TRY(dp__cu_conv_mode(k, &g, 2, direct, dp_nd_data(k->inputs[1]), og, NULL, dp_nd_data(k->outputs[1]), k->req[1]));
    if (k->num_outputs == 3 && k->req[2] != DP_REQ_NULL) {
        dp__cu_chan_sum_body b = {og, dp_nd_data(k->outputs[2]), dp_nd_dtype(k->inputs[1]), k->req[2], g.n, g.c, g.h * g.w};
        DP__CU_TRY(dp__cu_each(k, g.c, b));
    }
    return 0;
}

/* Pooling: the windows of dpn__pool_window, each clipped as dpn__pool_run
   clips it. Forward: one thread per output; max keeps the first largest
   element (a NaN wins), as the CPU's scan. Gradient: one thread per input
   element, summing the shares of the windows that cover it (max: only a
   window whose first maximum it is). */
struct dp__cu_pool_body {
    const void *x, *og; void *out; int t, req, type, incl, grad;
    int64_t h, w, oh, ow, k0, k1, s0, s1, p0, p1;
    /* window (oy, ox) of plane o: its input rows and columns, and the
       divisor of avg; 0 when it holds no input element */
    DP__CU_HD int window(int64_t oy, int64_t ox, int64_t *yi0, int64_t *yi1, int64_t *xi0, int64_t *xi1, double *div) const {
        int64_t y0 = oy * s0 - p0, x0 = ox * s1 - p1;
        int64_t y1 = y0 + k0 < h + p0 ? y0 + k0 : h + p0, x1 = x0 + k1 < w + p1 ? x0 + k1 : w + p1;
        *yi0 = y0 < 0 ? 0 : y0; *xi0 = x0 < 0 ? 0 : x0; *yi1 = y1 < h ? y1 : h; *xi1 = x1 < w ? x1 : w;
        if (*yi1 <= *yi0 || *xi1 <= *xi0) return 0;
        *div = type == 1 ? (double)(incl ? (y1 - y0) * (x1 - x0) : (*yi1 - *yi0) * (*xi1 - *xi0)) : 1.0;
        return 1;
    }
    /* the first maximum of a window (its element's index), and its value */
    DP__CU_HD int64_t first_max(int64_t o, int64_t yi0, int64_t yi1, int64_t xi0, int64_t xi1, double *best_v) const {
        int64_t best = -1, iy, ix;
        double acc = 0;
        for (iy = yi0; iy < yi1; iy++) for (ix = xi0; ix < xi1; ix++) {
            int64_t xi = (o * h + iy) * w + ix;
            double v = dp__cu_load(x, t, xi);
            if (best < 0 || v > acc || (v != v && acc == acc)) { acc = v; best = xi; }
        }
        *best_v = acc;
        return best;
    }
    DP__CU_HD void operator()(int64_t e) const {
        int64_t yi0, yi1, xi0, xi1, iy, ix;
        double div = 1, acc = 0;
        if (!grad) {
            int64_t ox = e % ow, oy = e / ow % oh, o = e / (ow * oh);
            if (window(oy, ox, &yi0, &yi1, &xi0, &xi1, &div)) {
                if (type == 0) first_max(o, yi0, yi1, xi0, xi1, &acc);
                else {
                    for (iy = yi0; iy < yi1; iy++) for (ix = xi0; ix < xi1; ix++) acc += dp__cu_load(x, t, (o * h + iy) * w + ix);
                    acc /= div;
                }
            }
        } else {
            int64_t ix0 = e % w, iy0 = e / w % h, o = e / (w * h), lo_y = iy0 + p0 - k0 + 1, lo_x = ix0 + p1 - k1 + 1, oy, ox;
            int64_t oy0 = lo_y <= 0 ? 0 : (lo_y + s0 - 1) / s0, ox0 = lo_x <= 0 ? 0 : (lo_x + s1 - 1) / s1;
            int64_t oy1 = (iy0 + p0) / s0, ox1 = (ix0 + p1) / s1;
            if (oy1 > oh - 1) oy1 = oh - 1;
            if (ox1 > ow - 1) ox1 = ow - 1;
            for (oy = oy0; oy <= oy1; oy++) for (ox = ox0; ox <= ox1; ox++) {
                double v;
                if (!window(oy, ox, &yi0, &yi1, &xi0, &xi1, &div) || iy0 < yi0 || iy0 >= yi1 || ix0 < xi0 || ix0 >= xi1) continue;
                if (type != 0) acc += dp__cu_load(og, t, (o * oh + oy) * ow + ox) / div;
                else if (first_max(o, yi0, yi1, xi0, xi1, &v) == e) acc += dp__cu_load(og, t, (o * oh + oy) * ow + ox);
            }
        }
        dp__cu_store(out, t, e, acc, req);
    }
};
static int dp__cu_pool(const dp_kernel_ctx *k, int grad) {
    const dp_shape *xs = dp_nd_shape(k->inputs[grad]), *ys = dp_nd_shape(grad ? k->inputs[0] : k->outputs[0]);
    dpn__win w;
    int64_t out[2];
    char msg[8];
    dp__cu_pool_body b;
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__pool_window(k->params, xs, &w, out, msg, sizeof msg);
    memset(&b, 0, sizeof b);
    b.x = dp_nd_data(k->inputs[grad]); b.og = grad ? dp_nd_data(k->inputs[0]) : NULL; b.out = dp_nd_data(k->outputs[0]);
    b.t = dp_nd_dtype(k->inputs[grad]); b.req = k->req[0]; b.type = (int)k->params->v[DPN__PL_TYPE].i;
    b.incl = (int)k->params->v[DPN__PL_INCLUDE_PAD].i; b.grad = grad;
    dpn__spatial(xs, w.nd, &b.h, &b.w);
    dpn__spatial(ys, w.nd, &b.oh, &b.ow);
    b.k0 = w.k[0]; b.k1 = w.k[1]; b.s0 = w.s[0]; b.s1 = w.s[1]; b.p0 = w.p[0]; b.p1 = w.p[1];
    return dp__cu_each(k, dp__cu_count_of(grad ? k->inputs[1] : k->outputs[0]), b);
}
static int dp__cu_k_pool(const dp_kernel_ctx *k) { return dp__cu_pool(k, 0); }
static int dp__cu_kg_pool(const dp_kernel_ctx *k) { return dp__cu_pool(k, 1); }

/* Activation (types 0..4) and LeakyReLU (10 + its type): dpn__act_fn's
   formulas, f(x) or f'(x); for relu, sigmoid and tanh f' is taken at the
   output (x is y then), as depeng.h's _backward_relu / sigmoid / tanh
   (dp__d_relu, dp__d_sigmoid, dp__d_tanh), which the CPU's Activation runs. */
static DP__CU_HD double dp__cu_act_fn(int type, double x, double a, int grad) {
    const double selu_l = 1.0507009873554804934, selu_a = 1.6732632423543772848;
    double s;
    switch (type) {
    case 0: return grad ? dp__d_relu(x) : (x > 0 ? x : 0);
    case 1: return grad ? dp__d_sigmoid(x) : 1 / (1 + exp(-x));
    case 2: return grad ? dp__d_tanh(x) : tanh(x);
    case 3: return grad ? 1 / (1 + exp(-x)) : (x > 20 ? x : log1p(exp(x)));
    case 4: s = 1 + fabs(x); return grad ? 1 / (s * s) : x / s;
    case 10: return grad ? (x > 0 ? 1 : a) : (x > 0 ? x : a * x);
    case 11: return grad ? (x > 0 ? 1 : a * exp(x)) : (x > 0 ? x : a * expm1(x));
    case 12: return grad ? selu_l * (x > 0 ? 1 : selu_a * exp(x)) : selu_l * (x > 0 ? x : selu_a * expm1(x));
    case 13: s = 0.5 * (1 + erf(x / sqrt(2.0)));
        return grad ? s + x * exp(-0.5 * x * x) / sqrt(2 * 3.14159265358979323846) : x * s;
    }
    return 0;
}
/* y = f(x), or dx = og f'(x), f' in double as the CPU kernel (from the
   output for relu, sigmoid and tanh: depeng.h's _backward_relu / sigmoid /
   tanh; from the input for the others). prelu: gamma
   given, the slope of element i is gamma[its channel] (dpn__prelu_channel). */
struct dp__cu_act_body {
    const void *x, *og, *gamma; void *out; int t, req, type, grad; double a; int64_t gn, chans, inner;
    DP__CU_HD void operator()(int64_t i) const {
        double v = dp__cu_load(x, t, i), r;
        if (gamma) {
            double gm = dp__cu_load(gamma, t, gn == 1 ? 0 : (i / inner) % chans);
            r = grad ? (v > 0 ? 1.0 : gm) * dp__cu_load(og, t, i) : v > 0 ? v : v * gm;
        } else {
            r = dp__cu_act_fn(type, v, a, grad);
            if (grad) r *= dp__cu_load(og, t, i);
        }
        dp__cu_store(out, t, i, r, req);
    }
};
/* prelu's gamma gradient: channel ch's sum of x og over x <= 0 */
struct dp__cu_prelu_grad_body {
    const void *x, *og; void *dg; int t, req; int64_t n, gn, chans, inner;
    DP__CU_HD void operator()(int64_t ch) const {
        double s = 0;
        int64_t per = gn == 1 ? n : inner, outer = gn == 1 ? 1 : n / (chans * inner), o, j;
        for (o = 0; o < outer; o++) for (j = 0; j < per; j++) {
            int64_t e = gn == 1 ? j : (o * chans + ch) * inner + j;
            double v = dp__cu_load(x, t, e);
            if (v <= 0) s += v * dp__cu_load(og, t, e);
        }
        dp__cu_store(dg, t, ch, s, req);
    }
};
static int dp__cu_act(const dp_kernel_ctx *k, int type, double slope, int grad) {
    const dp_ndarray *x = k->inputs[grad && type >= 0 && type <= 2 ? 2 : grad];   /* (og, data, output) */
    const dp_shape *s = dp_nd_shape(x);
    dp__cu_act_body b;
    int d;
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    b.x = dp_nd_data(x); b.og = grad ? dp_nd_data(k->inputs[0]) : NULL; b.out = dp_nd_data(k->outputs[0]);
    b.t = dp_nd_dtype(x); b.req = k->req[0]; b.type = type; b.grad = grad; b.a = slope;
    if (type == 14) {                                   /* prelu */
        b.gamma = dp_nd_data(k->inputs[grad + 1]); b.gn = dp_nd_shape(k->inputs[grad + 1])->dims[0];
        b.chans = s->ndim > 1 ? s->dims[1] : 1; b.inner = 1;
        for (d = 2; d < s->ndim; d++) b.inner *= s->dims[d];
    }
    if (k->req[0] != DP_REQ_NULL) DP__CU_TRY(dp__cu_each(k, dp__cu_count_of(x), b));
    if (grad && type == 14 && k->req[1] != DP_REQ_NULL) {
        dp__cu_prelu_grad_body g = {b.x, b.og, dp_nd_data(k->outputs[1]), b.t, k->req[1], dp__cu_count_of(x), b.gn, b.chans, b.inner};
        DP__CU_TRY(dp__cu_each(k, b.gn, g));
    }
    return 0;
}
static int dp__cu_k_act(const dp_kernel_ctx *k) { return dp__cu_act(k, (int)k->params->v[0].i, 0, 0); }
static int dp__cu_kg_act(const dp_kernel_ctx *k) { return dp__cu_act(k, (int)k->params->v[0].i, 0, 1); }
static int dp__cu_k_leaky(const dp_kernel_ctx *k) { return dp__cu_act(k, 10 + (int)k->params->v[DPN__LR_TYPE].i, k->params->v[DPN__LR_SLOPE].f, 0); }
static int dp__cu_kg_leaky(const dp_kernel_ctx *k) { return dp__cu_act(k, 10 + (int)k->params->v[DPN__LR_TYPE].i, k->params->v[DPN__LR_SLOPE].f, 1); }

/* BatchNorm: one team per channel (dp__cu_teams). A channel's elements are
   (o, ch, j) for o < outer, j < inner; r numbers them o * inner + j. */
struct dp__cu_bn_elem {
    const void *x, *og; int t, kind; int64_t c, inner, ch; double mean, is;   /* kind 0: x, 1: (x - mean)^2, 2: og, 3: og (x - mean) is */
    DP__CU_HD dp__cu_acc operator()(int64_t o, int64_t r) const {
        int64_t e = (r / inner * c + ch) * inner + r % inner;
        double v = kind == 2 ? 0 : dp__cu_load(x, t, e) - (kind == 0 ? 0 : mean);
        dp__cu_acc a;
        (void)o;
        a.v = kind == 0 ? v : kind == 1 ? v * v : kind == 2 ? dp__cu_load(og, t, e) : dp__cu_load(og, t, e) * v * is;
        a.i = -1;
        return a;
    }
};
struct dp__cu_bn_body {
    const void *x, *og, *gm, *bt; void *mm, *mv, *y, *dg, *db, *dmm, *dmv;
    int t, req, reqg, reqb, reqmm, reqmv, batch, fix, grad; int64_t c, inner, n; double eps, mom;
    DP__CU_HD void operator()(const dp__cu_team &team, int64_t ch) const {
        double mean, var, is, g = fix ? 1 : dp__cu_load(gm, t, ch), sg = 0, sgx = 0;
        int64_t r;
        dp__cu_bn_elem el = {x, og, t, 0, c, inner, ch, 0.0, 0.0};
        if (batch) {
            mean = dp__cu_team_reduce(team, DP__CU_SUM, el, 0, 0, n).v;
            mean = n ? mean / (double)n : 0;
            el.kind = 1; el.mean = mean;
            var = dp__cu_team_reduce(team, DP__CU_SUM, el, 0, 0, n).v;
            var = n ? var / (double)n : 0;
        } else { mean = dp__cu_load(mm, t, ch); var = dp__cu_load(mv, t, ch); }
        is = 1 / sqrt(var + eps);
        if (!grad) {
            if (batch && team.rank() == 0) {      /* only this member reads or writes the moving statistics */
                dp__cu_store(mm, t, ch, dp__cu_load(mm, t, ch) * mom + mean * (1 - mom), DP_REQ_WRITE);
                dp__cu_store(mv, t, ch, dp__cu_load(mv, t, ch) * mom + var * (1 - mom), DP_REQ_WRITE);
            }
            for (r = team.rank(); req != DP_REQ_NULL && r < n; r += team.size()) {
                int64_t e = (r / inner * c + ch) * inner + r % inner;
                dp__cu_store(y, t, e, g * (dp__cu_load(x, t, e) - mean) * is + dp__cu_load(bt, t, ch), req);
            }
            return;
        }
        el.mean = mean; el.is = is;
        el.kind = 2; sg = dp__cu_team_reduce(team, DP__CU_SUM, el, 0, 0, n).v;
        el.kind = 3; sgx = dp__cu_team_reduce(team, DP__CU_SUM, el, 0, 0, n).v;
        for (r = team.rank(); req != DP_REQ_NULL && r < n; r += team.size()) {
            int64_t e = (r / inner * c + ch) * inner + r % inner;
            double gv = dp__cu_load(og, t, e), xh = (dp__cu_load(x, t, e) - mean) * is;
            dp__cu_store(y, t, e, batch ? g * is / (double)n * ((double)n * gv - sg - xh * sgx) : g * is * gv, req);
        }
        if (team.rank() == 0) {
            dp__cu_store(dg, t, ch, fix ? 0 : sgx, reqg);
            dp__cu_store(db, t, ch, sg, reqb);
            dp__cu_store(dmm, t, ch, 0, reqmm);
            dp__cu_store(dmv, t, ch, 0, reqmv);
        }
    }
};
static int dp__cu_bn(const dp_kernel_ctx *k, int grad) {
    const dp_params *p = k->params;
    const dp_ndarray *x = k->inputs[grad];
    int64_t outer, c, inner;
    dp__cu_bn_body b;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__bn_split(dp_nd_shape(x), p->v[DPN__BN_AXIS].i, &outer, &c, &inner);
    memset(&b, 0, sizeof b);
    b.x = dp_nd_data(x); b.gm = dp_nd_data(k->inputs[grad + 1]); b.bt = dp_nd_data(k->inputs[grad + 2]);
    b.mm = dp_nd_data(k->inputs[grad + 3]); b.mv = dp_nd_data(k->inputs[grad + 4]); b.y = dp_nd_data(k->outputs[0]);
    b.t = dp_nd_dtype(x); b.req = k->req[0]; b.batch = p->v[DPN__BN_IS_TRAIN].i && !p->v[DPN__BN_GLOBAL].i;
    b.fix = (int)p->v[DPN__BN_FIX_GAMMA].i; b.grad = grad; b.c = c; b.inner = inner; b.n = outer * inner;
    b.eps = p->v[DPN__BN_EPS].f; b.mom = p->v[DPN__BN_MOMENTUM].f;
    if (grad) {
        b.og = dp_nd_data(k->inputs[0]);
        b.dg = dp_nd_data(k->outputs[1]); b.db = dp_nd_data(k->outputs[2]); b.dmm = dp_nd_data(k->outputs[3]); b.dmv = dp_nd_data(k->outputs[4]);
        b.reqg = k->req[1]; b.reqb = k->req[2]; b.reqmm = k->req[3]; b.reqmv = k->req[4];
    } else b.reqg = b.reqb = b.reqmm = b.reqmv = DP_REQ_NULL;
    return dp__cu_teams(k, c, dp__cu_team_size(b.n), b);
}
static int dp__cu_k_bn(const dp_kernel_ctx *k) { return dp__cu_bn(k, 0); }
static int dp__cu_kg_bn(const dp_kernel_ctx *k) { return dp__cu_bn(k, 1); }

/* Dropout: the mask element of e is drawn once per group of elements that
   share a draw (the axes in `shared`), counter-based like random_uniform
   (dp__cu_uniform01 at the group's first element), so every element
   computes its own mask value without waiting for another's; the CPU
   kernel draws the same way (depeng_nn.h's dpn__draw53), so the masks
   for a key are the same on both. */
struct dp__cu_dropout_body {
    const void *x; void *y, *mask; int t, req, on, nd; int shared[DP_MAX_DIMS]; int64_t dims[DP_MAX_DIMS]; uint64_t key; double p;
    DP__CU_HD void operator()(int64_t e) const {
        double m = 1;
        if (on) {
            int64_t rest = e, src = 0, stride = 1;
            for (int d = nd - 1; d >= 0; d--) {
                int64_t coord = rest % dims[d];
                rest /= dims[d];
                if (!shared[d]) src += coord * stride;
                stride *= dims[d];
            }
            m = dp__cu_uniform01(key, (uint64_t)src) >= p ? 1 / (1 - p) : 0;
        }
        dp__cu_store(mask, t, e, m, DP_REQ_WRITE);
        dp__cu_store(y, t, e, dp__cu_load(x, t, e) * m, req);
    }
};
static int dp__cu_k_dropout(const dp_kernel_ctx *k) {
    const dp_params *p = k->params;
    const dp_shape *s = dp_nd_shape(k->inputs[0]), *axes = &p->v[DPN__DO_AXES].shape;
    dp__cu_dropout_body b;
    int i;
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    b.x = dp_nd_data(k->inputs[0]); b.y = dp_nd_data(k->outputs[0]); b.mask = dp_nd_data(k->outputs[1]);
    b.t = dp_nd_dtype(k->inputs[0]); b.req = k->req[0]; b.p = p->v[DPN__DO_P].f; b.nd = s->ndim;
    b.on = (p->v[DPN__DO_MODE].i == 1 || p->v[DPN__DO_IS_TRAIN].i) && b.p > 0;
    for (i = 0; i < s->ndim; i++) b.dims[i] = s->dims[i];
    for (i = 0; i < axes->ndim; i++) b.shared[axes->dims[i] < 0 ? axes->dims[i] + s->ndim : axes->dims[i]] = 1;
    if (b.on) {
        if (!dp_random_var(k->rc->engine, k->rc->ctx).id) { dp_set_error(k->rc, "Dropout: no random generator on this device"); return DP_ERROR_BAD_CONTEXT; }
        b.key = dp_random_next(k->rc->engine, k->rc->ctx);
    }
    return dp__cu_each(k, dp__cu_count_of(k->inputs[0]), b);
}

/* Element-wise products and selections: _backward_Dropout (og * mask),
   where and its gradient, the regression outputs and their gradients. */
struct dp__cu_pick_body {
    const void *a, *b, *c; void *y, *y2; int t, ct, req, req2, kind; int64_t per; double scale;
    DP__CU_HD void operator()(int64_t i) const {
        switch (kind) {
        case 0: dp__cu_store(y, t, i, dp__cu_load(a, t, i) * dp__cu_load(b, t, i), req); break;   /* og * mask */
        case 1: {                                                                                   /* where */
            int pick = dp__cu_load(c, ct, i / per) != 0;
            dp__cu_store(y, t, i, dp__cu_load(pick ? a : b, t, i), req);
            break;
        }
        case 2: {                                                                                   /* where's gradient */
            int pick = dp__cu_load(c, ct, i / per) != 0;
            double g = dp__cu_load(a, t, i);
            dp__cu_store(y, t, i, pick ? g : 0, req);
            dp__cu_store(y2, t, i, pick ? 0 : g, req2);
            break;
        }
        default: {                                                                                  /* regression: kind 3 + which */
            int which = kind - 3;
            double x = dp__cu_load(a, t, i), out = which == 1 ? 1 / (1 + exp(-x)) : x;
            if (!b) { dp__cu_store(y, t, i, out, req); break; }
            double d = out - dp__cu_load(b, ct, i);
            dp__cu_store(y, t, i, (which == 2 ? (double)((d > 0) - (d < 0)) : d) * scale, req);
        }
        }
    }
};
static int dp__cu_kg_dropout(const dp_kernel_ctx *k) {
    dp__cu_pick_body b;
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    b.a = dp_nd_data(k->inputs[0]); b.b = dp_nd_data(k->inputs[3]); b.y = dp_nd_data(k->outputs[0]);
    b.t = dp_nd_dtype(k->inputs[0]); b.req = k->req[0]; b.kind = 0;
    return dp__cu_each(k, dp__cu_count_of(k->inputs[0]), b);
}
/* where(condition, x, y): condition of x's shape, or (rows,) choosing rows */
static int dp__cu_where(const dp_kernel_ctx *k, int grad) {
    const dp_ndarray *cond = k->inputs[grad], *x = k->inputs[grad + 1];
    int64_t n = dp__cu_count_of(x), cn = dp__cu_count_of(cond), rows = dp_nd_shape(x)->dims[0];
    dp__cu_pick_body b;
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    b.c = dp_nd_data(cond); b.ct = dp_nd_dtype(cond); b.t = dp_nd_dtype(x); b.per = cn == n ? 1 : n / (rows ? rows : 1);
    if (b.per < 1) b.per = 1;
    if (!grad) {
        if (k->req[0] == DP_REQ_NULL) return 0;
        b.a = dp_nd_data(x); b.b = dp_nd_data(k->inputs[2]); b.y = dp_nd_data(k->outputs[0]); b.req = k->req[0]; b.kind = 1;
        return dp__cu_each(k, n, b);
    }
    DP__CU_TRY(dp__cu_nn_fill(k, k->outputs[0], 0, k->req[0]));
    b.a = dp_nd_data(k->inputs[0]); b.y = dp_nd_data(k->outputs[1]); b.y2 = dp_nd_data(k->outputs[2]);
    b.req = k->req[1]; b.req2 = k->req[2]; b.kind = 2;
    return dp__cu_each(k, n, b);
}
static int dp__cu_k_where(const dp_kernel_ctx *k) { return dp__cu_where(k, 0); }
static int dp__cu_kg_where(const dp_kernel_ctx *k) { return dp__cu_where(k, 1); }
/* LinearRegressionOutput (0), LogisticRegressionOutput (1),
   MAERegressionOutput (2); the gradient's inputs (og, data, label) */
static int dp__cu_regression(const dp_kernel_ctx *k, int which, int grad) {
    const dp_ndarray *x = k->inputs[grad];
    int64_t n = dp__cu_count_of(x), rows = dp_nd_shape(x)->dims[0];
    dp__cu_pick_body b;
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    b.a = dp_nd_data(x); b.y = dp_nd_data(k->outputs[0]); b.t = dp_nd_dtype(x); b.req = k->req[0]; b.kind = 3 + which;
    if (grad) {
        b.b = dp_nd_data(k->inputs[2]); b.ct = dp_nd_dtype(k->inputs[2]);
        b.scale = k->params->v[0].f / (rows > 0 && n / rows > 0 ? (double)(n / rows) : 1.0);
    }
    if (k->req[0] != DP_REQ_NULL) DP__CU_TRY(dp__cu_each(k, n, b));
    return grad ? dp__cu_nn_fill(k, k->outputs[1], 0, k->req[1]) : 0;
}
static int dp__cu_k_linreg(const dp_kernel_ctx *k) { return dp__cu_regression(k, 0, 0); }
static int dp__cu_kg_linreg(const dp_kernel_ctx *k) { return dp__cu_regression(k, 0, 1); }
static int dp__cu_k_logreg(const dp_kernel_ctx *k) { return dp__cu_regression(k, 1, 0); }
static int dp__cu_kg_logreg(const dp_kernel_ctx *k) { return dp__cu_regression(k, 1, 1); }
static int dp__cu_k_maereg(const dp_kernel_ctx *k) { return dp__cu_regression(k, 2, 0); }
static int dp__cu_kg_maereg(const dp_kernel_ctx *k) { return dp__cu_regression(k, 2, 1); }

/* MakeLoss's gradient: grad_scale, divided by the batch or by the count
   of elements above valid_thresh, which one GPU thread counts into the
   workspace (read there by the fill, on the same stream). */
struct dp__cu_count_above_body {
    const void *x; int t; int64_t n; double thresh; double *count;
    DP__CU_HD void operator()(int64_t) const {
        double c = 0;
        for (int64_t i = 0; i < n; i++) c += dp__cu_load(x, t, i) > thresh;
        *count = c;
    }
};
static int dp__cu_kg_make_loss(const dp_kernel_ctx *k) {
    const dp_ndarray *x = k->inputs[1];
    const dp_shape *s = dp_nd_shape(x);
    dp__cu_nn_fill_body f = {dp_nd_data(k->outputs[0]), dp_nd_dtype(k->outputs[0]), k->req[0], k->params->v[0].f, NULL};
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    if (k->params->v[2].i == 1 && s->ndim > 0 && s->dims[0] > 0) f.v /= (double)s->dims[0];
    if (k->params->v[2].i == 2) {
        double *count = (double *)dp__cu_workspace_get(k, DP__CU_SLOT_KERNEL, sizeof(double));
        dp__cu_count_above_body c = {dp_nd_data(x), dp_nd_dtype(x), dp__cu_count_of(x), k->params->v[1].f, count};
        if (!count) return DP_ERROR_OUT_OF_MEMORY;
        DP__CU_TRY(dp__cu_each(k, 1, c));
        f.count = count;
    }
    return dp__cu_each(k, dp__cu_count_of(k->outputs[0]), f);
}

/* Embedding(data, weight (rows, d)): output element (i, j) is weight[data[i], j];
   a data value that is not a row is flagged (the lowest element wins) and
   the kernel function fails with the CPU's message. The weight's gradient:
   element (r, j) sums og[i, j] over the i with data[i] = r. */
struct dp__cu_embed_body {
    const void *data, *w, *og; void *y; unsigned long long *bad; int dt, t, req, mode; int64_t rows, d, n;   /* mode 0 forward, 1 check, 2 weight's gradient */
    DP__CU_HD int64_t row_of(int64_t i) const {
        double v = dp__cu_load(data, dt, i);
        return v >= 0 && v < (double)rows && v == (double)(int64_t)v ? (int64_t)v : -1;
    }
    DP__CU_HD void operator()(int64_t e) const {
        if (mode == 1) { if (row_of(e) < 0) dp__cu_flag_row(bad, (unsigned long long)e); return; }
        if (mode == 0) {
            int64_t r = row_of(e / d);
            if (r >= 0) dp__cu_store(y, t, e, dp__cu_load(w, t, r * d + e % d), req);
            return;
        }
        {
            int64_t r = e / d, j = e % d, i;
            double s = 0;
            for (i = 0; i < n; i++) if (row_of(i) == r) s += dp__cu_load(og, t, i * d + j);
            dp__cu_store(y, t, e, s, req);
        }
    }
};
static int dp__cu_embedding(const dp_kernel_ctx *k, int grad) {
    const dp_ndarray *data = k->inputs[grad], *w = k->inputs[grad + 1];
    dp__cu_embed_body b;
    unsigned long long bad_at = ~0ull;
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    b.data = dp_nd_data(data); b.w = dp_nd_data(w); b.dt = dp_nd_dtype(data); b.t = dp_nd_dtype(w);
    b.rows = dp_nd_shape(w)->dims[0]; b.d = dp_nd_shape(w)->dims[1]; b.n = dp__cu_count_of(data);
    if (grad) {
        DP__CU_TRY(dp__cu_nn_fill(k, k->outputs[0], 0, k->req[0]));
        if (k->req[1] == DP_REQ_NULL) return 0;
    } else if (k->req[0] == DP_REQ_NULL) return 0;
    if ((b.bad = (unsigned long long *)dp__cu_workspace_get(k, DP__CU_SLOT_KERNEL, sizeof bad_at)) == NULL) return DP_ERROR_OUT_OF_MEMORY;
    DP__CU_TRY(dp__cu_fill_bytes(k, b.bad, 0xFF, sizeof bad_at));
    b.mode = 1;
    DP__CU_TRY(dp__cu_each(k, b.n, b));
    DP__CU_TRY(dp__cu_read_back(k, &bad_at, b.bad, sizeof bad_at));
    if (bad_at != ~0ull) {
        unsigned char raw[8];
        char msg[128];
        size_t es = dp_dtype_size((dp_dtype)b.dt);
        DP__CU_TRY(dp__cu_read_back(k, raw, (const char *)b.data + (size_t)bad_at * es, es));
        snprintf(msg, sizeof msg, "Embedding: index %g (element %lld of data) is not a row of 0..%lld", dp__load_elem(raw, (dp_dtype)b.dt, 0),
                 (long long)bad_at, (long long)b.rows - 1);
        dp_set_error(k->rc, msg);
        return DP_ERROR_INVALID_ARGS;
    }
    b.mode = grad ? 2 : 0;
    b.og = grad ? dp_nd_data(k->inputs[0]) : NULL;
    b.y = dp_nd_data(k->outputs[grad]); b.req = k->req[grad];
    return dp__cu_each(k, grad ? b.rows * b.d : b.n * b.d, b);
}
static int dp__cu_k_embedding(const dp_kernel_ctx *k) { return dp__cu_embedding(k, 0); }
static int dp__cu_kg_embedding(const dp_kernel_ctx *k) { return dp__cu_embedding(k, 1); }

/* A block [outer, n, inner] and its part [outer, m, inner] at offset b of
   the middle axis: dir 0 gathers the part (one thread per part element),
   dir 1 gathers the block from the part, 0 outside it (one thread per
   block element), dir 2 scatters the part into its place in the block
   (parts that tile the block write each element once). Stored by req.
   slice_axis, SliceChannel and stack are these. */
struct dp__cu_part_body {
    const void *src; void *dst; int t, req, dir; int64_t n, m, inner, b;
    DP__CU_HD void operator()(int64_t e) const {
        if (dir == 1) {
            int64_t j = e % inner, i = e / inner % n, o = e / (inner * n);
            dp__cu_store(dst, t, e, i >= b && i < b + m ? dp__cu_load(src, t, (o * m + i - b) * inner + j) : 0.0, req);
            return;
        }
        {
            int64_t j = e % inner, i = e / inner % m, o = e / (inner * m), big = (o * n + b + i) * inner + j;
            if (dir == 0) dp__cu_store(dst, t, e, dp__cu_load(src, t, big), req);
            else dp__cu_store(dst, t, big, dp__cu_load(src, t, e), req);
        }
    }
};
static int dp__cu_part(const dp_kernel_ctx *k, const dp_ndarray *src, dp_ndarray *dst, int req, int dir, int64_t outer, int64_t n, int64_t m,
                       int64_t inner, int64_t b) {
    dp__cu_part_body body = {dp_nd_data(src), dp_nd_data(dst), dp_nd_dtype(src), req, dir, n, m, inner, b};
    if (req == DP_REQ_NULL) return 0;
    return dp__cu_each(k, outer * (dir == 1 ? n : m) * inner, body);
}
static int dp__cu_k_slice_axis(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[0]);
    int axis;
    int64_t b, e, outer, inner;
    char msg[8];
    DP__CU_TRY(dp__cu_enter(k));
    dpn__slice_range(k->params, s, &axis, &b, &e, msg, sizeof msg);
    dpn__split_axis(s, axis, &outer, &inner);
    return dp__cu_part(k, k->inputs[0], k->outputs[0], k->req[0], 0, outer, s->dims[axis], e - b, inner, b);
}
static int dp__cu_kg_slice_axis(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[1]);
    int axis;
    int64_t b, e, outer, inner;
    char msg[8];
    DP__CU_TRY(dp__cu_enter(k));
    dpn__slice_range(k->params, s, &axis, &b, &e, msg, sizeof msg);
    dpn__split_axis(s, axis, &outer, &inner);
    return dp__cu_part(k, k->inputs[0], k->outputs[0], k->req[0], 1, outer, s->dims[axis], e - b, inner, b);
}
static int dp__cu_k_slice_channel(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[0]);
    int a = (int)(k->params->v[1].i < 0 ? k->params->v[1].i + s->ndim : k->params->v[1].i), i;
    int64_t outer, inner, m = s->dims[a] / k->num_outputs;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__split_axis(s, a, &outer, &inner);
    for (i = 0; i < k->num_outputs; i++) DP__CU_TRY(dp__cu_part(k, k->inputs[0], k->outputs[i], k->req[i], 0, outer, s->dims[a], m, inner, i * m));
    return 0;
}
/* inputs (the parts' gradients, data): each part scattered into its place */
static int dp__cu_kg_slice_channel(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[k->num_inputs - 1]);
    int n = k->num_inputs - 1, a = (int)(k->params->v[1].i < 0 ? k->params->v[1].i + s->ndim : k->params->v[1].i), i;
    int64_t outer, inner, m = s->dims[a] / n;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__split_axis(s, a, &outer, &inner);
    for (i = 0; i < n; i++) DP__CU_TRY(dp__cu_part(k, k->inputs[i], k->outputs[0], k->req[0], 2, outer, s->dims[a], m, inner, i * m));
    return 0;
}
/* stack: input i is part i (of 1) of the output's new axis */
static int dp__cu_k_stack(const dp_kernel_ctx *k) {
    int64_t outer, inner;
    int i;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__stack_dims(k->params, dp_nd_shape(k->inputs[0]), &outer, &inner);
    for (i = 0; i < k->num_inputs; i++) DP__CU_TRY(dp__cu_part(k, k->inputs[i], k->outputs[0], k->req[0], 2, outer, k->num_inputs, 1, inner, i));
    return 0;
}
static int dp__cu_kg_stack(const dp_kernel_ctx *k) {
    int64_t outer, inner;
    int i;
    DP__CU_TRY(dp__cu_enter(k));
    dpn__stack_dims(k->params, dp_nd_shape(k->inputs[1]), &outer, &inner);
    for (i = 0; i < k->num_outputs; i++) DP__CU_TRY(dp__cu_part(k, k->inputs[0], k->outputs[i], k->req[i], 0, outer, k->num_outputs, 1, inner, i));
    return 0;
}

/* broadcast_to: output element i reads data's element of the same
   coordinates (0 along data's axes of size 1); the gradient's element of
   data sums the output gradient over those axes' repeats. */
struct dp__cu_bcast_body {
    dp_shape small, big; const void *src; void *dst; int t, req, grad;
    DP__CU_HD void operator()(int64_t e) const {
        int d;
        if (!grad) {
            int64_t rest = e, src_i = 0, stride = 1;
            for (d = big.ndim - 1; d >= 0; d--) {
                int64_t c = rest % big.dims[d];
                rest /= big.dims[d];
                if (small.dims[d] != 1) src_i += c * stride;
                stride *= small.dims[d];
            }
            dp__cu_store(dst, t, e, dp__cu_load(src, t, src_i), req);
            return;
        }
        {
            int64_t coord[DP_MAX_DIMS], rest = e, reps = 1, r;
            double s = 0;
            for (d = small.ndim - 1; d >= 0; d--) { coord[d] = rest % small.dims[d]; rest /= small.dims[d]; }
            for (d = 0; d < big.ndim; d++) if (small.dims[d] == 1) reps *= big.dims[d];
            for (r = 0; r < reps; r++) {             /* r's digits along the repeated axes, in C order */
                int64_t q = r, at = 0, stride = 1;
                for (d = big.ndim - 1; d >= 0; d--) {
                    int64_t c = small.dims[d] == 1 ? q % big.dims[d] : coord[d];
                    if (small.dims[d] == 1) q /= big.dims[d];
                    at += c * stride;
                    stride *= big.dims[d];
                }
                s += dp__cu_load(src, t, at);
            }
            dp__cu_store(dst, t, e, s, req);
        }
    }
};
static int dp__cu_broadcast_to(const dp_kernel_ctx *k, int grad) {
    dp__cu_bcast_body b;
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    b.small = *dp_nd_shape(k->inputs[grad]); b.big = *dp_nd_shape(grad ? k->inputs[0] : k->outputs[0]);
    b.src = dp_nd_data(k->inputs[0]); b.dst = dp_nd_data(k->outputs[0]); b.t = dp_nd_dtype(k->inputs[0]); b.req = k->req[0]; b.grad = grad;
    return dp__cu_each(k, dp__cu_count_of(k->outputs[0]), b);
}
static int dp__cu_k_broadcast_to(const dp_kernel_ctx *k) { return dp__cu_broadcast_to(k, 0); }
static int dp__cu_kg_broadcast_to(const dp_kernel_ctx *k) { return dp__cu_broadcast_to(k, 1); }

/* batch_dot: dpn__k_batch_dot and dpn__kg_batch_dot with dp__cu_matmul for
   dp_gemm, one GEMM per matrix of the batch. */
static int dp__cu_batch_gemm(const dp_kernel_ctx *k, dp_dtype t, int64_t batch, int ta, int tb, int64_t m, int64_t n, int64_t kk, const void *a,
                             int64_t lda, const void *b, int64_t ldb, double beta, void *c) {
    size_t e = dp_dtype_size(t);
    for (int64_t i = 0; i < batch; i++)
        DP__CU_TRY(dp__cu_matmul(k, t, ta, tb, m, n, kk, (const char *)a + (size_t)(i * m * kk) * e, lda, (const char *)b + (size_t)(i * kk * n) * e,
                                 ldb, beta, (char *)c + (size_t)(i * m * n) * e, n));
    return 0;
}
static int dp__cu_k_batch_dot(const dp_kernel_ctx *k) {
    const dp_shape *as = dp_nd_shape(k->inputs[0]), *ys = dp_nd_shape(k->outputs[0]);
    int ta = (int)k->params->v[0].i, tb = (int)k->params->v[1].i;
    if (k->req[0] == DP_REQ_NULL) return 0;
    DP__CU_TRY(dp__cu_enter(k));
    return dp__cu_batch_gemm(k, dp_nd_dtype(k->inputs[0]), ys->dims[0], ta, tb, ys->dims[1], ys->dims[2], as->dims[ta ? 1 : 2], dp_nd_data(k->inputs[0]),
                             as->dims[2], dp_nd_data(k->inputs[1]), dp_nd_shape(k->inputs[1])->dims[2], dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0]));
}
static int dp__cu_kg_batch_dot(const dp_kernel_ctx *k) {
    const dp_shape *gs = dp_nd_shape(k->inputs[0]), *as = dp_nd_shape(k->inputs[1]), *bs = dp_nd_shape(k->inputs[2]);
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    int ta = (int)k->params->v[0].i, tb = (int)k->params->v[1].i;
    int64_t B = gs->dims[0], M = gs->dims[1], N = gs->dims[2], K = as->dims[ta ? 1 : 2];
    const void *og = dp_nd_data(k->inputs[0]), *a = dp_nd_data(k->inputs[1]), *b = dp_nd_data(k->inputs[2]);
    DP__CU_TRY(dp__cu_enter(k));
    if (k->req[0] != DP_REQ_NULL) {
        if (!ta) DP__CU_TRY(dp__cu_batch_gemm(k, t, B, 0, !tb, M, K, N, og, N, b, bs->dims[2], dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0])));
        else DP__CU_TRY(dp__cu_batch_gemm(k, t, B, tb, 1, K, M, N, b, bs->dims[2], og, N, dp__beta_of(k->req[0]), dp_nd_data(k->outputs[0])));
    }
    if (k->req[1] != DP_REQ_NULL) {
        if (!tb) DP__CU_TRY(dp__cu_batch_gemm(k, t, B, !ta, 0, K, N, M, a, as->dims[2], og, N, dp__beta_of(k->req[1]), dp_nd_data(k->outputs[1])));
        else DP__CU_TRY(dp__cu_batch_gemm(k, t, B, 1, ta, N, K, M, og, N, a, as->dims[2], dp__beta_of(k->req[1]), dp_nd_data(k->outputs[1])));
    }
    return 0;
}

/* rmsprop_update, rmspropalex_update, adagrad_update, nag_mom_update,
   adamw_update: dpn__update's step per element (AdamW's bias correction
   of lr computed once, on the host, as there). */
struct dp__cu_nn_update_body {
    const void *w, *g; void *s0, *s1, *s2, *out; int t, req, kind; double p[8];   /* lr wd rescale clip, then v[4..7] */
    DP__CU_HD void operator()(int64_t i) const {
        double lr = p[0], wd = p[1], clip = p[3];
        double wi = dp__cu_load(w, t, i), gr = p[2] * dp__cu_load(g, t, i), a = s0 ? dp__cu_load(s0, t, i) : 0;
        double b = s1 ? dp__cu_load(s1, t, i) : 0, c = s2 ? dp__cu_load(s2, t, i) : 0;
        if (kind == DPN__OPT_RMSPROP || kind == DPN__OPT_RMSPROPALEX) gr += wd * wi;
        if (clip > 0) gr = gr < -clip ? -clip : gr > clip ? clip : gr;
        if (kind == DPN__OPT_NAG) gr += wd * wi;
        switch (kind) {
        case DPN__OPT_RMSPROP:
            a = (1 - p[4]) * gr * gr + p[4] * a;
            wi -= lr * gr / sqrt(a + p[5]);
            break;
        case DPN__OPT_RMSPROPALEX:
            a = (1 - p[4]) * gr * gr + p[4] * a;
            b = (1 - p[4]) * gr + p[4] * b;
            c = p[6] * c - lr * gr / sqrt(a - b * b + p[5]);
            wi += c;
            break;
        case DPN__OPT_ADAGRAD:
            a += gr * gr;
            wi -= lr * (gr / sqrt(a + p[4]) + wd * wi);
            break;
        case DPN__OPT_NAG:
            a = p[4] * a - lr * gr;
            wi += p[4] * a - lr * gr;
            break;
        default:
            a = p[4] * a + (1 - p[4]) * gr;
            b = p[5] * b + (1 - p[5]) * gr * gr;
            wi -= p[7] * (lr * a / (sqrt(b) + p[6]) + wd * wi);
            break;
        }
        if (s0) dp__cu_store(s0, t, i, a, DP_REQ_WRITE);
        if (s1) dp__cu_store(s1, t, i, b, DP_REQ_WRITE);
        if (s2) dp__cu_store(s2, t, i, c, DP_REQ_WRITE);
        dp__cu_store(out, t, i, wi, req);
    }
};
static int dp__cu_nn_update(const dp_kernel_ctx *k, int kind) {
    const dp_params *p = k->params;
    dp__cu_nn_update_body b;
    int i;
    DP__CU_TRY(dp__cu_enter(k));
    memset(&b, 0, sizeof b);
    b.w = dp_nd_data(k->inputs[0]); b.g = dp_nd_data(k->inputs[1]);
    b.s0 = k->num_inputs > 2 ? dp_nd_data(k->inputs[2]) : NULL; b.s1 = k->num_inputs > 3 ? dp_nd_data(k->inputs[3]) : NULL;
    b.s2 = k->num_inputs > 4 ? dp_nd_data(k->inputs[4]) : NULL;
    b.out = dp_nd_data(k->outputs[0]); b.t = dp_nd_dtype(k->inputs[0]); b.req = k->req[0]; b.kind = kind;
    for (i = 0; i < 8 && i < p->count; i++) b.p[i] = p->v[i].f;
    if (kind == DPN__OPT_ADAMW && p->v[8].i > 0) {
        double c1 = 1 - pow(p->v[4].f, (double)p->v[8].i);
        if (c1 > 0) b.p[0] *= sqrt(1 - pow(p->v[5].f, (double)p->v[8].i)) / c1;
    }
    return dp__cu_each(k, dp__cu_count_of(k->inputs[0]), b);
}
static int dp__cu_k_rmsprop(const dp_kernel_ctx *k) { return dp__cu_nn_update(k, DPN__OPT_RMSPROP); }
static int dp__cu_k_rmspropalex(const dp_kernel_ctx *k) { return dp__cu_nn_update(k, DPN__OPT_RMSPROPALEX); }
static int dp__cu_k_adagrad(const dp_kernel_ctx *k) { return dp__cu_nn_update(k, DPN__OPT_ADAGRAD); }
static int dp__cu_k_nag(const dp_kernel_ctx *k) { return dp__cu_nn_update(k, DPN__OPT_NAG); }
static int dp__cu_k_adamw(const dp_kernel_ctx *k) { return dp__cu_nn_update(k, DPN__OPT_ADAMW); }

#define DP__CU_NN_KERNELS \
    {"Convolution", dp__cu_k_conv}, {"_backward_Convolution", dp__cu_kg_conv}, \
    {"Deconvolution", dp__cu_k_deconv}, {"_backward_Deconvolution", dp__cu_kg_deconv}, \
    {"Pooling", dp__cu_k_pool}, {"_backward_Pooling", dp__cu_kg_pool}, \
    {"Activation", dp__cu_k_act}, {"_backward_Activation", dp__cu_kg_act}, \
    {"LeakyReLU", dp__cu_k_leaky}, {"_backward_LeakyReLU", dp__cu_kg_leaky}, \
    {"Flatten", dp__cu_k_copy}, {"_backward_Flatten", dp__cu_k_copy}, \
    {"BatchNorm", dp__cu_k_bn}, {"_backward_BatchNorm", dp__cu_kg_bn}, \
    {"Dropout", dp__cu_k_dropout}, {"_backward_Dropout", dp__cu_kg_dropout}, \
    {"BlockGrad", dp__cu_k_copy}, {"_backward_BlockGrad", dp__cu_kg_block}, \
    {"MakeLoss", dp__cu_k_copy}, {"_backward_MakeLoss", dp__cu_kg_make_loss}, \
    {"LinearRegressionOutput", dp__cu_k_linreg}, {"_backward_LinearRegressionOutput", dp__cu_kg_linreg}, \
    {"LogisticRegressionOutput", dp__cu_k_logreg}, {"_backward_LogisticRegressionOutput", dp__cu_kg_logreg}, \
    {"MAERegressionOutput", dp__cu_k_maereg}, {"_backward_MAERegressionOutput", dp__cu_kg_maereg}, \
    {"Embedding", dp__cu_k_embedding}, {"_backward_Embedding", dp__cu_kg_embedding}, \
    {"expand_dims", dp__cu_k_copy}, {"_backward_expand_dims", dp__cu_k_copy}, \
    {"slice_axis", dp__cu_k_slice_axis}, {"_backward_slice_axis", dp__cu_kg_slice_axis}, \
    {"broadcast_to", dp__cu_k_broadcast_to}, {"_backward_broadcast_to", dp__cu_kg_broadcast_to}, \
    {"where", dp__cu_k_where}, {"_backward_where", dp__cu_kg_where}, \
    {"batch_dot", dp__cu_k_batch_dot}, {"_backward_batch_dot", dp__cu_kg_batch_dot}, \
    {"stack", dp__cu_k_stack}, {"_backward_stack", dp__cu_kg_stack}, \
    {"SliceChannel", dp__cu_k_slice_channel}, {"_backward_SliceChannel", dp__cu_kg_slice_channel}, \
    {"rmsprop_update", dp__cu_k_rmsprop}, {"rmspropalex_update", dp__cu_k_rmspropalex}, {"adagrad_update", dp__cu_k_adagrad}, \
    {"nag_mom_update", dp__cu_k_nag}, {"adamw_update", dp__cu_k_adamw},
#else
#define DP__CU_NN_KERNELS
#endif /* DEPENG_NN_IMPL_INCLUDED */

/* >>cuda_register ------------------------------------------------------------------
   Every built-in operator's GPU kernel, by name. The element-wise ones
   follow depeng.h's own operator lists (DP__UNARY_OPS, DP__BINARY_OPS,
   DP__SCALAR_OPS), so an operator added there gets its GPU kernel here
   without a change. */
struct dp__cu_kernel_entry { const char *name; dp_kernel_fn fn; };
#define DP__CU_REG_UNARY(nm, doc) {#nm, dp__cu_k_unary<dp__f_##nm>}, {"_backward_" #nm, dp__cu_kg_unary<dp__d_##nm>},
#define DP__CU_REG_BINARY(nm, doc) {#nm, dp__cu_k_binary<dp__f_##nm>}, {"_backward_" #nm, dp__cu_kg_binary<dp__d_##nm>},
#define DP__CU_REG_SCALAR(nm, doc) {#nm "_scalar", dp__cu_k_scalar<dp__f_##nm>}, {"_backward_" #nm "_scalar", dp__cu_kg_scalar<dp__d_##nm>},
static const dp__cu_kernel_entry dp__cu_kernels[] = {
    DP__UNARY_OPS(DP__CU_REG_UNARY)
    DP__BINARY_OPS(DP__CU_REG_BINARY)
    DP__SCALAR_OPS(DP__CU_REG_SCALAR)
    {"clip", dp__cu_k_clip}, {"_backward_clip", dp__cu_kg_clip},
    {"sum", dp__cu_k_sum}, {"_backward_sum", dp__cu_kg_sum}, {"mean", dp__cu_k_mean}, {"_backward_mean", dp__cu_kg_mean},
    {"max", dp__cu_k_max}, {"_backward_max", dp__cu_kg_max}, {"min", dp__cu_k_min}, {"_backward_min", dp__cu_kg_min},
    {"argmax", dp__cu_k_argmax},
    {"softmax", dp__cu_k_softmax}, {"_backward_softmax", dp__cu_kg_softmax},
    {"log_softmax", dp__cu_k_log_softmax}, {"_backward_log_softmax", dp__cu_kg_log_softmax},
    {"softmax_cross_entropy", dp__cu_k_sce}, {"_backward_softmax_cross_entropy", dp__cu_kg_sce},
    {"SoftmaxOutput", dp__cu_k_softmax_output}, {"_backward_SoftmaxOutput", dp__cu_kg_softmax_output},
    {"transpose", dp__cu_k_transpose}, {"_backward_transpose", dp__cu_kg_transpose},
    {"concat", dp__cu_k_concat}, {"_backward_concat", dp__cu_kg_concat},
    {"one_hot", dp__cu_k_one_hot},
    {"random_uniform", dp__cu_k_random_uniform}, {"random_normal", dp__cu_k_random_normal},
    {"dot", dp__cu_k_dot}, {"_backward_dot", dp__cu_kg_dot},
    {"FullyConnected", dp__cu_k_fc}, {"_backward_FullyConnected", dp__cu_kg_fc},
    {"_copy", dp__cu_k_copy}, {"_backward__copy", dp__cu_k_copy}, {"reshape", dp__cu_k_copy}, {"_backward_reshape", dp__cu_k_copy},
    {"cast", dp__cu_k_copy}, {"_backward_cast", dp__cu_k_copy},
    {"sgd_update", dp__cu_k_sgd}, {"sgd_mom_update", dp__cu_k_sgd_mom}, {"adam_update", dp__cu_k_adam},
    {"take", dp__cu_k_take}, {"_backward_take", dp__cu_kg_take}, {"accuracy", dp__cu_k_accuracy},
    DP__CU_NN_KERNELS
};
#undef DP__CU_REG_UNARY
#undef DP__CU_REG_BINARY
#undef DP__CU_REG_SCALAR
DP_IMPL dp_result dp_cuda_register_kernels(void) {
    dp_result r = DP_OK;
    size_t i;
    for (i = 0; i < sizeof dp__cu_kernels / sizeof dp__cu_kernels[0]; i++) {
        if (!dp_operator_find(dp__cu_kernels[i].name)) continue;   /* a layer of depeng_nn.h that is not compiled in */
        if (dp_operator_set_kernel(dp__cu_kernels[i].name, DP_DEV_GPU, dp__cu_kernels[i].fn) != DP_OK) r = DP_ERROR_INVALID_ARGS;   /* logged */
    }
    return r;
}
DP_IMPL int dp_cuda_missing_kernels(const char **names, int cap) {
    int n = dp_operator_list(NULL, 0), i, missing = 0;
    const dp_operator **ops = (const dp_operator **)malloc(sizeof *ops * (size_t)(n > 0 ? n : 1));
    if (!ops) return -1;
    n = dp_operator_list(ops, n);
    for (i = 0; i < n; i++) {
        if (ops[i]->forward_gpu) continue;
        if (names && missing < cap) names[missing] = ops[i]->name;
        missing++;
    }
    free(ops);
    return missing;
}

#endif /* DEPENG_CUDA_IMPLEMENTATION */
