/* libFuzzer harness for dp_nd_load_csv. The first input byte picks the
   label column (none, the first, the last, or a byte-given one, which may
   be out of range); the rest is the file. A load that succeeds must give a
   float32 (rows, columns) data array and a (rows,) label array with
   matching byte sizes; a load that fails must leave both NULL and have
   logged an error. */
#include "depeng.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_engine *eng = fuzz_engine();
    unsigned long logged = fuzz_errors_logged;
    dp_ndarray *x = NULL, *y = NULL;
    int label_column;
    const char *path;
    dp_result r;
    if (size == 0) return 0;
    switch (data[0] & 3) {
    case 0: label_column = DP_CSV_NO_LABEL; break;
    case 1: label_column = 0; break;
    case 2: label_column = -1; break;
    default: label_column = (int)(data[0] >> 2) - 32; break;
    }
    path = fuzz_write_input(".csv", data + 1, size - 1);
    r = dp_nd_load_csv(eng, path, label_column, cpu, NULL, &x, label_column == DP_CSV_NO_LABEL ? NULL : &y);
    if (r != DP_OK) {
        FUZZ_CHECK(x == NULL && y == NULL && fuzz_errors_logged > logged);
        return 0;
    }
    {
        const dp_shape *s = dp_nd_shape(x);
        unsigned char *xb = fuzz_array_bytes(x);
        FUZZ_CHECK(dp_nd_dtype(x) == DP_FLOAT32 && s->ndim == 2 && s->dims[0] > 0 && s->dims[1] > 0);
        if (y) {
            unsigned char *yb = fuzz_array_bytes(y);
            FUZZ_CHECK(dp_nd_dtype(y) == DP_FLOAT32 && dp_nd_shape(y)->ndim == 1 && dp_nd_shape(y)->dims[0] == s->dims[0]);
            free(yb);
        } else FUZZ_CHECK(label_column == DP_CSV_NO_LABEL);
        free(xb);
    }
    dp_nd_release(x);
    dp_nd_release(y);
    return 0;
}
