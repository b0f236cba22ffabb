/* libFuzzer harness for dp_nd_load_idx (MNIST's idx files, gzipped or
   not). A load that fails must leave *out NULL and have logged an error. A
   load that succeeds must give an array whose byte size is its shape times
   its dtype's size; for a plain (not gzip) input its shape is the header's
   and its values are the file's big-endian data, decoded here
   independently of the loader, index by index. */
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/fuzz/fuzz_common.h"

static double fuzz_be_value(const uint8_t *p, int type) {
    uint64_t u = 0;
    int i, n = type == 0x08 || type == 0x09 ? 1 : type == 0x0B ? 2 : type == 0x0E ? 8 : 4;
    for (i = 0; i < n; i++) u = u << 8 | p[i];
    switch (type) {
    case 0x08: return (double)(uint8_t)u;
    case 0x09: return (double)(int8_t)(uint8_t)u;
    case 0x0B: return (double)(int16_t)(uint16_t)u;
    case 0x0C: return (double)(int32_t)(uint32_t)u;
    case 0x0D: { uint32_t w = (uint32_t)u; float f; memcpy(&f, &w, 4); return (double)f; }
    default: { double d; memcpy(&d, &u, 8); return d; }
    }
}
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_engine *eng = fuzz_engine();
    unsigned long logged = fuzz_errors_logged;
    dp_ndarray *a = (dp_ndarray *)&a;
    const char *path = fuzz_write_input(".idx", data, size);
    dp_result r = dp_nd_load_idx(eng, path, cpu, &a);
    unsigned char *bytes;
    int64_t n, i;
    if (r != DP_OK) {
        FUZZ_CHECK(a == NULL && fuzz_errors_logged > logged);
        return 0;
    }
    bytes = fuzz_array_bytes(a);
    n = dp_shape_size(dp_nd_shape(a));
    if (!(size >= 2 && data[0] == 0x1f && data[1] == 0x8b)) {
        int type = data[2], ndim = data[3], k, esize;
        FUZZ_CHECK(size >= 4 && data[0] == 0 && data[1] == 0 && dp_nd_shape(a)->ndim == ndim);
        for (k = 0; k < ndim; k++)
            FUZZ_CHECK(dp_nd_shape(a)->dims[k] == (int64_t)((uint32_t)data[4 + 4 * k] << 24 | (uint32_t)data[5 + 4 * k] << 16 | (uint32_t)data[6 + 4 * k] << 8 | data[7 + 4 * k]));
        esize = type == 0x08 || type == 0x09 ? 1 : type == 0x0B ? 2 : type == 0x0E ? 8 : 4;
        FUZZ_CHECK(size == 4 + 4 * (size_t)ndim + (size_t)n * (size_t)esize);
        for (i = 0; i < n; i++) {
            double want = fuzz_be_value(data + 4 + 4 * ndim + i * esize, type), got = dp_dtype_load(dp_nd_dtype(a), bytes, i);
            FUZZ_CHECK(memcmp(&want, &got, sizeof want) == 0 || (want != want && got != got));
        }
    }
    free(bytes);
    dp_nd_release(a);
    return 0;
}
