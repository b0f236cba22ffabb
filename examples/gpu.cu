/* examples/gpu.cu - examples/ndarray.c on a GPU.

   The same arrays and operations as the CPU example, on GPU 0: the engine
   gets depeng_cuda.h's backend, the built-in operators get their CUDA
   kernels, and every array made on the GPU context lives in device memory.
   Operations run on the GPU workers' streams; dp_nd_read copies a result to
   the host once the operations writing it are done. Where there is no GPU
   the program says so and exits 0.

   Build: nvcc -std=c++17 -I. examples/gpu.cu -o gpu     (make cuda)
   Run:   ./gpu [out.npy]      (default: gpu_example.npy) */
#define DEPENG_IMPLEMENTATION
#define DEPENG_CUDA_IMPLEMENTATION
#include "depeng.h"
#include "depeng_cuda.h"
#include <stdio.h>

/* dp_invoke for the common case: one or two inputs, no keyword parameters,
   one new output (on the inputs' device). C++: the desc is value-initialised
   and its fields assigned. */
static dp_ndarray *apply(dp_engine *eng, const char *op, dp_ndarray *a, dp_ndarray *b, double scalar) {
    dp_invoke_desc d = {};
    dp_ndarray *out = NULL;
    d.op = op; d.inputs[0] = a; d.inputs[1] = b; d.scalar = scalar;
    if (dp_invoke(eng, &d, &out) != DP_OK) return NULL;
    return out;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "gpu_example.npy";
    dp_engine_desc desc;
    dp_engine *eng;
    dp_ctx gpu = {DP_DEV_GPU, 0}, cpu = {DP_DEV_CPU, 0};
    dp_shape shape = {2, {2, 3}};
    float data[6] = {1, 2, 3, 4, 5, 6}, z_host[6], rows[2], back[6];
    dp_ndarray *x, *ones, *doubled, *z, *row_sums = NULL, *z_cpu = NULL;
    dp_storage_stats stats;
    dp_failure failure;
    char why[256];
    int i;

    /* Is there a GPU? dp_cuda_check_ctx says which, or why not. */
    if (dp_cuda_check_ctx(gpu, why, sizeof why) != DP_OK) {
        printf("no GPU to run on (%s); nothing to do. The CPU version is examples/ndarray.c.\n", why);
        return 0;
    }
    printf("running on %s\n", why);

    /* The CUDA kernels for the built-in operators, and an engine whose GPU
       workers use the CUDA backend (a stream each, device memory, copies). */
    if (dp_cuda_register_kernels() != DP_OK) return 1;
    memset(&desc, 0, sizeof desc);
    desc.gpu_backend = dp_cuda_backend();          /* streams and events, for the engine */
    if (dp_engine_create(&desc, &eng) != DP_OK) return 1;
    dp_storage_desc storage = {};
    storage.memory = dp_cuda_memory();              /* device memory, for the arrays */
    if (dp_storage_configure(eng, &storage) != DP_OK) return 1;

    /* Two arrays in device memory: one copied from the host now, one
       filled by the engine. */
    if (dp_nd_from_host(eng, &shape, DP_FLOAT32, gpu, data, &x) != DP_OK) return 1;
    if (dp_nd_ones(eng, &shape, DP_FLOAT32, gpu, &ones) != DP_OK) return 1;

    /* z = 2 * x + 1: two kernels on a GPU worker's stream; the second waits
       for the first because it reads what the first writes. */
    doubled = apply(eng, "mul_scalar", x, NULL, 2.0);
    z = doubled ? apply(eng, "add", doubled, ones, 0) : NULL;
    if (!z) return 1;

    /* A reduction: one thread block per output element on the GPU. */
    dp_invoke_desc sum = {};
    sum.op = "sum"; sum.inputs[0] = z; sum.params[0] = dp_param_str("axis", "1");
    if (dp_invoke(eng, &sum, &row_sums) != DP_OK) return 1;

    /* A copy to a CPU array runs on the GPU's copy worker, next to compute. */
    if (dp_nd_copy_to(z, cpu, &z_cpu) != DP_OK) return 1;

    /* Reading back waits for the operations that write the array, then
       copies device memory to the host. */
    if (dp_nd_read(z, z_host, sizeof z_host, &failure) != DP_OK
        || dp_nd_read(row_sums, rows, sizeof rows, &failure) != DP_OK
        || dp_nd_read(z_cpu, back, sizeof back, &failure) != DP_OK) {
        fprintf(stderr, "%s failed: %s\n", failure.op_name, failure.message);
        return 1;
    }
    printf("x        = [1 2 3; 4 5 6]\n");
    printf("z        = 2 * x + 1 = [");
    for (i = 0; i < 6; i++) printf(i == 3 ? "; %g" : i ? " %g" : "%g", z_host[i]);
    printf("]\n");
    printf("sum(z, axis=1) = [%g %g]\n", rows[0], rows[1]);
    for (i = 0; i < 6 && back[i] == z_host[i]; i++) {}
    printf("z copied to the CPU by the copy worker: %s\n", i == 6 ? "the same values" : "DIFFERENT VALUES");

    /* Saving a GPU array stages it through host memory. */
    if (dp_nd_save_npy(z, path, NULL) != DP_OK) return 1;
    printf("saved z to %s (numpy.load reads it)\n", path);

    /* Released arrays' device memory stays in depeng's pool for reuse. */
    dp_nd_release(x); dp_nd_release(ones); dp_nd_release(doubled);
    dp_nd_release(z); dp_nd_release(row_sums); dp_nd_release(z_cpu);
    dp_wait_all(eng, NULL);
    if (dp_storage_stats_get(eng, gpu, &stats) == DP_OK)
        printf("GPU memory: %llu blocks allocated, %llu bytes kept for reuse\n", (unsigned long long)stats.allocations,
               (unsigned long long)stats.bytes_pooled);
    return dp_engine_destroy(eng, NULL) == DP_OK ? 0 : 1;
}
