/* tests/fuzz/fuzz_common.h - what depeng's libFuzzer harnesses share: one
   engine per process (naive, so every op runs inside the call that pushes
   it; plain storage, so an array that is never freed is a leak
   LeakSanitizer sees), a logger that counts error lines (a failed load
   must have logged one), the input written to a file of its own (the
   loaders take a path), and FUZZ_CHECK, which aborts so that libFuzzer
   saves the input. Include after depeng.h with DEPENG_IMPLEMENTATION. */
#ifndef DEPENG_FUZZ_COMMON_H
#define DEPENG_FUZZ_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "FUZZ_CHECK failed %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

static unsigned long fuzz_errors_logged;
static void fuzz_logger(const char *tag, uint32_t level, uint32_t item, const char *msg, uint32_t line, const char *file, void *user) {
    (void)tag; (void)item; (void)msg; (void)line; (void)file; (void)user;
    if (level <= DP_LOG_ERROR) fuzz_errors_logged++;
}

static dp_engine *fuzz_engine(void) {
    static dp_engine *eng;
    if (!eng) {
        dp_engine_desc d;
        memset(&d, 0, sizeof d);
        dp_storage_desc sd;
        d.type = DP_ENGINE_NAIVE; d.ignore_env = 1;
        d.logger.func = fuzz_logger;
        FUZZ_CHECK(dp_engine_create(&d, &eng) == DP_OK);
        memset(&sd, 0, sizeof sd);
        sd.kind = DP_STORAGE_PLAIN;     /* an array never released is a leak LeakSanitizer sees */
        FUZZ_CHECK(dp_storage_configure(eng, &sd) == DP_OK);
    }
    return eng;
}

/* The file this process loads from: one per process, so that parallel
   fuzzing jobs do not share it. */
static const char *fuzz_path(const char *ext) {
    static char path[256];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/depeng_fuzz_%ld%s", dir && *dir ? dir : "/tmp", (long)getpid(), ext);
    }
    return path;
}
static const char *fuzz_write_input(const char *ext, const uint8_t *data, size_t size) {
    const char *path = fuzz_path(ext);
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    FUZZ_CHECK(fclose(f) == 0);
    return path;
}

/* A loaded array's bytes match its shape and dtype, and reading them back
   gives exactly dp_nd_bytes bytes. Returns the bytes (malloc'ed). */
static unsigned char *fuzz_array_bytes(dp_ndarray *a) {
    const dp_shape *s = dp_nd_shape(a);
    int64_t elems = dp_shape_size(s);
    size_t n = dp_nd_bytes(a);
    unsigned char *bytes;
    FUZZ_CHECK(s->ndim >= 0 && s->ndim <= DP_MAX_DIMS && elems >= 0);
    FUZZ_CHECK(n == (size_t)elems * dp_dtype_size(dp_nd_dtype(a)));
    bytes = (unsigned char *)malloc(n ? n : 1);
    FUZZ_CHECK(bytes != NULL);
    FUZZ_CHECK(dp_nd_read(a, bytes, n, NULL) == DP_OK);
    return bytes;
}
#endif
