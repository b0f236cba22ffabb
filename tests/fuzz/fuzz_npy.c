/* libFuzzer harness for dp_nd_load_npy. The input is the file. A load that
   succeeds must give an array whose bytes are the file's last dp_nd_bytes
   bytes (the .npy data runs to the end of the file): the same bytes for a
   C-order little-endian file, and for a Fortran-order or big-endian one
   those bytes rearranged as computed here, index by index, independently
   of the loader; its save and reload must give the same array back. A
   load that fails must leave *out NULL and have logged an error. */
#include "depeng.h"
#include "tests/fuzz/fuzz_common.h"

/* Where the value of key starts in the header text [p, end), after its
   closing quote, spaces and the colon; NULL if the key is not there. The
   loader accepted the header, so the key names appear only as keys. */
static const uint8_t *value_of(const uint8_t *p, const uint8_t *end, const char *key) {
    size_t n = strlen(key);
    for (; p + n + 1 < end; p++)
        if (memcmp(p, key, n) == 0 && (p[n] == '\'' || p[n] == '"')) {
            p += n + 1;
            while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ':')) p++;
            return p;
        }
    return NULL;
}
/* The bytes the loader must give for data laid out as the header says:
   element i in C order (the last index fastest) comes from the Fortran
   offset of its indices (the first fastest), found by division. */
static void expected_bytes(const uint8_t *data, size_t size, const dp_shape *s, size_t k, uint8_t *want, size_t n) {
    size_t hlen = data[6] == 1 ? (size_t)data[8] | (size_t)data[9] << 8
                               : (size_t)data[8] | (size_t)data[9] << 8 | (size_t)data[10] << 16 | (size_t)data[11] << 24;
    const uint8_t *head = data + (data[6] == 1 ? 10 : 12), *end = head + hlen, *v;
    const uint8_t *src = data + size - n;
    int fortran = (v = value_of(head, end, "fortran_order")) != NULL && *v == 'T';
    int swap = (v = value_of(head, end, "descr")) != NULL && (*v == '\'' || *v == '"') && v[1] == '>' && k > 1;
    size_t i, b;
    for (i = 0; i < n / k; i++) {
        size_t from = i, rest = i, stride = 1;
        int d;
        if (fortran) {
            size_t idx[DP_MAX_DIMS];
            for (d = s->ndim - 1; d >= 0; d--) { idx[d] = rest % (size_t)s->dims[d]; rest /= (size_t)s->dims[d]; }
            for (d = 0, from = 0; d < s->ndim; d++) { from += idx[d] * stride; stride *= (size_t)s->dims[d]; }
        }
        for (b = 0; b < k; b++) want[i * k + b] = src[from * k + (swap ? k - 1 - b : b)];
    }
}

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
        unsigned char *bytes = fuzz_array_bytes(a), *again, *want;
        size_t n = dp_nd_bytes(a);
        FUZZ_CHECK(n <= size && size >= 12 && (want = (unsigned char *)malloc(n ? n : 1)) != NULL);
        expected_bytes(data, size, dp_nd_shape(a), dp_dtype_size(dp_nd_dtype(a)), want, n);
        FUZZ_CHECK(memcmp(bytes, want, n) == 0);
        free(want);
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
