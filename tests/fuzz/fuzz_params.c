/* libFuzzer harness for dp_nd_load_params (MXNet's .params files). A load
   that fails must leave *count 0 and have logged an error. A load that
   succeeds must give at most cap arrays, each with its bytes its shape
   times its dtype's size, names all empty or all non-empty; saving them
   again (dp_nd_save_params) and loading that must give the same names,
   dtypes, shapes and bytes. */
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/fuzz/fuzz_common.h"

#define FUZZ_CAP 16
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    static dp_nd_named got[FUZZ_CAP], again[FUZZ_CAP];
    dp_engine *eng = fuzz_engine();
    unsigned long logged = fuzz_errors_logged;
    const char *path = fuzz_write_input(".params", data, size);
    int n = -1, m = -1, i, named = 0;
    if (dp_nd_load_params(eng, path, cpu, got, FUZZ_CAP, &n) != DP_OK) {
        FUZZ_CHECK(n == 0 && fuzz_errors_logged > logged);
        return 0;
    }
    FUZZ_CHECK(n >= 0 && n <= FUZZ_CAP);
    for (i = 0; i < n; i++) named += got[i].name[0] != 0;
    FUZZ_CHECK(named == 0 || named == n);
    FUZZ_CHECK(dp_nd_save_params(path, got, n, NULL) == DP_OK);
    FUZZ_CHECK(dp_nd_load_params(eng, path, cpu, again, FUZZ_CAP, &m) == DP_OK && m == n);
    for (i = 0; i < n; i++) {
        unsigned char *a = fuzz_array_bytes(got[i].array), *b = fuzz_array_bytes(again[i].array);
        const dp_shape *s = dp_nd_shape(got[i].array), *t = dp_nd_shape(again[i].array);
        FUZZ_CHECK(strcmp(got[i].name, again[i].name) == 0 && dp_nd_dtype(got[i].array) == dp_nd_dtype(again[i].array));
        FUZZ_CHECK(s->ndim == t->ndim && memcmp(s->dims, t->dims, (size_t)s->ndim * sizeof s->dims[0]) == 0);
        FUZZ_CHECK(memcmp(a, b, dp_nd_bytes(got[i].array)) == 0);
        free(a); free(b);
        dp_nd_release(got[i].array); dp_nd_release(again[i].array);
    }
    return 0;
}
