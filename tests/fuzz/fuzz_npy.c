/* libFuzzer harness for dp_nd_load_npy. The input is the file. A load that
   succeeds must give an array whose bytes are exactly the file's last
   dp_nd_bytes bytes (the .npy data runs to the end of the file), and whose
   save and reload give the same array back; a load that fails must leave
   *out NULL and have logged an error. */
#include "depeng.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_engine *eng = fuzz_engine();
    const char *path = fuzz_write_input(".npy", data, size);
    unsigned long logged = fuzz_errors_logged;
    dp_ndarray *a = (dp_ndarray *)&logged, *b = NULL;
    dp_result r = dp_nd_load_npy(eng, path, cpu, &a);
    if (r != DP_OK) {
        FUZZ_CHECK(a == NULL && fuzz_errors_logged > logged);
        return 0;
    }
    FUZZ_CHECK(a != NULL);
    {
        unsigned char *bytes = fuzz_array_bytes(a), *again;
        size_t n = dp_nd_bytes(a);
        FUZZ_CHECK(n <= size && memcmp(bytes, data + size - n, n) == 0);
        FUZZ_CHECK(dp_nd_save_npy(a, path, NULL) == DP_OK);
        FUZZ_CHECK(dp_nd_load_npy(eng, path, cpu, &b) == DP_OK);
        FUZZ_CHECK(dp_nd_dtype(b) == dp_nd_dtype(a) && dp_nd_shape(b)->ndim == dp_nd_shape(a)->ndim);
        FUZZ_CHECK(memcmp(dp_nd_shape(b)->dims, dp_nd_shape(a)->dims, sizeof(int64_t) * (size_t)dp_nd_shape(a)->ndim) == 0);
        again = fuzz_array_bytes(b);
        FUZZ_CHECK(dp_nd_bytes(b) == n && memcmp(again, bytes, n) == 0);
        free(bytes); free(again);
    }
    dp_nd_release(a);
    dp_nd_release(b);
    return 0;
}
