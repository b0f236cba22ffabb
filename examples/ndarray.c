/* examples/ndarray.c - arrays on the engine, the first program to read.

   Every call below that computes something pushes an operation to the
   engine and returns at once; the engine runs it when the arrays it reads
   are ready, in parallel with whatever does not depend on it. The program
   only waits where it reads a result back (dp_nd_read) or saves it.

   Build: cc -std=c11 -I. examples/ndarray.c -o ndarray -pthread -lm
   Run:   ./ndarray [out.npy]      (default: ndarray_example.npy)
   The file is a whole program: the one command above builds it, the
   implementation included. The repository's Makefile and CMake define
   DEPENG_EXAMPLE_SEPARATE_IMPL and link the implementation compiled once
   (tests/impl/depeng_impl.c) instead. */
#ifndef DEPENG_EXAMPLE_SEPARATE_IMPL   /* see above: make links the implementation */
#define DEPENG_IMPLEMENTATION
#endif
#include "depeng.h"
#include <stdio.h>

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "ndarray_example.npy";
    dp_engine *eng;
    dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_shape shape = {2, {2, 3}};
    float data[6] = {1, 2, 3, 4, 5, 6}, z_host[6], rows[2];
    dp_ndarray *x, *ones, *doubled = NULL, *z = NULL, *row_sums = NULL;
    dp_failure failure;
    int i;

    if (dp_engine_create(NULL, &eng) != DP_OK) return 1;

    /* Two arrays: one from host memory (copied now), one filled by the engine. */
    if (dp_nd_from_host(eng, &shape, DP_FLOAT32, cpu, data, &x) != DP_OK) return 1;
    if (dp_nd_ones(eng, &shape, DP_FLOAT32, cpu, &ones) != DP_OK) return 1;

    /* z = 2 * x + 1: two operations; the second waits for the first because
       it reads what the first writes. A desc names the operator and its
       inputs; the output is made and returned through the last argument. */
    if (dp_invoke(eng, &(dp_invoke_desc){ .op = "mul_scalar", .inputs = {x}, .scalar = 2 }, &doubled) != DP_OK) return 1;
    if (dp_invoke(eng, &(dp_invoke_desc){ .op = "add", .inputs = {doubled, ones} }, &z) != DP_OK) return 1;

    /* A reduction with a keyword parameter (docs/operators.md lists them). */
    if (dp_invoke(eng, &(dp_invoke_desc){ .op = "sum", .inputs = {z}, .params = {{"axis", .shape = {1, {1}}}} }, &row_sums) != DP_OK) return 1;

    /* Reading back waits for the operations that write the array. */
    if (dp_nd_read(z, z_host, sizeof z_host, &failure) != DP_OK
        || dp_nd_read(row_sums, rows, sizeof rows, &failure) != DP_OK) {
        fprintf(stderr, "%s failed: %s\n", failure.op_name, failure.message);
        return 1;
    }
    printf("x        = [1 2 3; 4 5 6]\n");
    printf("z        = 2 * x + 1 = [");
    for (i = 0; i < 6; i++) printf(i == 3 ? "; %g" : i ? " %g" : "%g", z_host[i]);
    printf("]\n");
    printf("sum(z, axis=1) = [%g %g]\n", rows[0], rows[1]);

    /* Save for NumPy: numpy.load(path) gives the same 2x3 float32 array. */
    if (dp_nd_save_npy(z, path, NULL) != DP_OK) return 1;
    printf("saved z to %s (numpy.load reads it)\n", path);

    /* Release the arrays: their memory goes back once nothing uses it. */
    dp_nd_release(x); dp_nd_release(ones); dp_nd_release(doubled);
    dp_nd_release(z); dp_nd_release(row_sums);
    return dp_engine_destroy(eng, NULL) == DP_OK ? 0 : 1;
}
