/* depeng_nn.h's data and checkpoint files: MNIST's idx files (plain and
   gzipped, built byte by byte here, and refused when malformed), the image
   iterator (every last-batch mode, shuffling, sharding, normalisation,
   padding, cropping and mirroring, the same batches on every engine for a
   seed), and MXNet's .params files and checkpoints (a file written byte by
   byte from the format's description, round trips, malformed files, and
   parameters that do not fit the symbol). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/test_common.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const dp_ctx CPU0 = {DP_DEV_CPU, 0};

static dp_engine *make_engine(dp_engine_type type) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.ignore_env = 1; d.cpu_worker_nthreads = 2;
    d.logger.func = quiet_logger;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}
static void temp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/depeng_data_%ld_%s", test_temp_dir(), (long)getpid(), name);
}
static int write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    if (n && fwrite(p, 1, n, f) != n) { fclose(f); return 0; }
    return fclose(f) == 0;
}
/* a growable byte buffer for building files */
typedef struct { unsigned char b[8192]; size_t n; } bytes_t;
static void put(bytes_t *o, const void *p, size_t n) { if (o->n + n <= sizeof o->b) { memcpy(o->b + o->n, p, n); o->n += n; } }
static void put_be32(bytes_t *o, uint32_t v) { unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v}; put(o, b, 4); }
static void put_le(bytes_t *o, uint64_t v, int n) { int i; for (i = 0; i < n; i++) { unsigned char c = (unsigned char)(v >> (8 * i)); put(o, &c, 1); } }
/* an idx header: magic, type, dims */
static void idx_header(bytes_t *o, unsigned type, int ndim, const uint32_t *dims) {
    unsigned char m[4] = {0, 0, (unsigned char)type, (unsigned char)ndim};
    int i;
    o->n = 0;
    put(o, m, 4);
    for (i = 0; i < ndim; i++) put_be32(o, dims[i]);
}
/* CRC-32 written here, bit by bit, from its definition (not the header's) */
static uint32_t crc32_ref(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int k;
    for (i = 0; i < n; i++) { c ^= p[i]; for (k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1; }
    return ~c;
}
/* gzip of data as one stored deflate block (RFC 1951 3.2.4), with a file
   name field, built byte by byte */
static void gzip_stored(bytes_t *o, const unsigned char *data, size_t n) {
    unsigned char head[10] = {0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3};
    unsigned char blk[5];
    o->n = 0;
    put(o, head, 10);
    put(o, "x.idx", 6);
    blk[0] = 1; blk[1] = (unsigned char)n; blk[2] = (unsigned char)(n >> 8); blk[3] = (unsigned char)~n; blk[4] = (unsigned char)(~n >> 8);
    put(o, blk, 5);
    put(o, data, n);
    put_le(o, crc32_ref(data, n), 4);
    put_le(o, n, 4);
}
static int last_error_has(const char *a, const char *b) {
    const char *e = dp_last_error();
    return strstr(e, a) != NULL && (!b || strstr(e, b) != NULL);
}

/* ---- idx ------------------------------------------------------------------ */
static void test_idx_types(void) {
    dp_engine *eng = make_engine(DP_ENGINE_NAIVE);
    char path[512];
    bytes_t o;
    dp_ndarray *a = NULL;
    uint32_t dims2[2] = {2, 3}, dims1[1] = {3};
    unsigned char u8[6] = {0, 1, 2, 253, 254, 255};
    int i;
    temp_path(path, sizeof path, "types.idx");
    idx_header(&o, 0x08, 2, dims2); put(&o, u8, 6);
    CHECK(write_bytes(path, o.b, o.n));
    CHECK(dp_nd_load_idx(eng, path, CPU0, &a) == DP_OK);
    if (a) {
        unsigned char got[6];
        CHECK(dp_nd_dtype(a) == DP_UINT8 && dp_nd_shape(a)->ndim == 2 && dp_nd_shape(a)->dims[0] == 2 && dp_nd_shape(a)->dims[1] == 3);
        CHECK(dp_nd_read(a, got, 6, NULL) == DP_OK && memcmp(got, u8, 6) == 0);
        dp_nd_release(a); a = NULL;
    }
    {   /* int16 (widened), int32, float32, float64: big-endian */
        unsigned char i16[6] = {0xFF, 0xFE, 0x00, 0x05, 0x80, 0x00};
        unsigned char i32[12] = {0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 1, 0, 0x7F, 0xFF, 0xFF, 0xFF};
        unsigned char f32[12] = {0x3F, 0x80, 0, 0, 0xC0, 0x20, 0, 0, 0, 0, 0, 0};
        unsigned char f64[24] = {0x3F, 0xF0, 0, 0, 0, 0, 0, 0, 0xC0, 0x04, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0};
        int32_t gi[3];
        float gf[3];
        double gd[3];
        idx_header(&o, 0x0B, 1, dims1); put(&o, i16, 6);
        CHECK(write_bytes(path, o.b, o.n) && dp_nd_load_idx(eng, path, CPU0, &a) == DP_OK);
        if (a) { CHECK(dp_nd_dtype(a) == DP_INT32 && dp_nd_read(a, gi, sizeof gi, NULL) == DP_OK && gi[0] == -2 && gi[1] == 5 && gi[2] == -32768); dp_nd_release(a); a = NULL; }
        idx_header(&o, 0x0C, 1, dims1); put(&o, i32, 12);
        CHECK(write_bytes(path, o.b, o.n) && dp_nd_load_idx(eng, path, CPU0, &a) == DP_OK);
        if (a) { CHECK(dp_nd_read(a, gi, sizeof gi, NULL) == DP_OK && gi[0] == -2 && gi[1] == 256 && gi[2] == 2147483647); dp_nd_release(a); a = NULL; }
        idx_header(&o, 0x0D, 1, dims1); put(&o, f32, 12);
        CHECK(write_bytes(path, o.b, o.n) && dp_nd_load_idx(eng, path, CPU0, &a) == DP_OK);
        if (a) { CHECK(dp_nd_dtype(a) == DP_FLOAT32 && dp_nd_read(a, gf, sizeof gf, NULL) == DP_OK && gf[0] == 1.0f && gf[1] == -2.5f && gf[2] == 0.0f); dp_nd_release(a); a = NULL; }
        idx_header(&o, 0x0E, 1, dims1); put(&o, f64, 24);
        CHECK(write_bytes(path, o.b, o.n) && dp_nd_load_idx(eng, path, CPU0, &a) == DP_OK);
        if (a) { CHECK(dp_nd_dtype(a) == DP_FLOAT64 && dp_nd_read(a, gd, sizeof gd, NULL) == DP_OK && gd[0] == 1.0 && gd[1] == -2.5 && gd[2] == 0.0 && signbit(gd[2])); dp_nd_release(a); a = NULL; }
        idx_header(&o, 0x09, 1, dims1); put(&o, i16, 3);
        CHECK(write_bytes(path, o.b, o.n) && dp_nd_load_idx(eng, path, CPU0, &a) == DP_OK);
        if (a) { signed char g8[3]; CHECK(dp_nd_dtype(a) == DP_INT8 && dp_nd_read(a, g8, 3, NULL) == DP_OK && g8[0] == -1 && g8[1] == -2 && g8[2] == 0); dp_nd_release(a); a = NULL; }
    }
    for (i = 0; i < 1; i++) {   /* an empty array: a dimension of 0 */
        uint32_t d0[3] = {0, 28, 28};
        idx_header(&o, 0x08, 3, d0);
        CHECK(write_bytes(path, o.b, o.n) && dp_nd_load_idx(eng, path, CPU0, &a) == DP_OK);
        if (a) { CHECK(dp_nd_shape(a)->dims[0] == 0 && dp_nd_shape(a)->dims[2] == 28); dp_nd_release(a); a = NULL; }
    }
    remove(path);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_idx_gzip(void) {
    dp_engine *eng = make_engine(DP_ENGINE_NAIVE);
    char path[600], plain[512], cmd[1200];
    bytes_t o, gz;
    dp_ndarray *a = NULL;
    uint32_t dims[3] = {4, 5, 6};
    unsigned char px[120], got[120];
    int i;
    for (i = 0; i < 120; i++) px[i] = (unsigned char)(i * 7);
    idx_header(&o, 0x08, 3, dims); put(&o, px, 120);
    gzip_stored(&gz, o.b, o.n);
    temp_path(path, sizeof path, "stored.idx.gz");
    CHECK(write_bytes(path, gz.b, gz.n) && dp_nd_load_idx(eng, path, CPU0, &a) == DP_OK);
    if (a) { CHECK(dp_nd_shape(a)->ndim == 3 && dp_nd_read(a, got, 120, NULL) == DP_OK && memcmp(got, px, 120) == 0); dp_nd_release(a); a = NULL; }
    /* a bad CRC, a size that differs from the trailer's, a truncated file */
    gz.b[gz.n - 8] ^= 1;
    CHECK(write_bytes(path, gz.b, gz.n));
    dp_clear_last_error();
    CHECK(dp_nd_load_idx(eng, path, CPU0, &a) == DP_ERROR_FORMAT && a == NULL && last_error_has(path, "CRC-32"));
    gz.b[gz.n - 8] ^= 1;
    gz.b[gz.n - 4] ^= 1;
    CHECK(write_bytes(path, gz.b, gz.n));
    dp_clear_last_error();
    CHECK(dp_nd_load_idx(eng, path, CPU0, &a) == DP_ERROR_FORMAT && last_error_has(path, "trailer"));
    gz.b[gz.n - 4] ^= 1;
    CHECK(write_bytes(path, gz.b, gz.n - 30));
    dp_clear_last_error();
    CHECK(dp_nd_load_idx(eng, path, CPU0, &a) == DP_ERROR_FORMAT && last_error_has(path, NULL) && dp_last_error_item() == DP_LOGITEM_FORMAT);
    gz.b[3] = 0x20;           /* a reserved flag bit */
    CHECK(write_bytes(path, gz.b, gz.n));
    dp_clear_last_error();
    CHECK(dp_nd_load_idx(eng, path, CPU0, &a) == DP_ERROR_FORMAT && last_error_has(path, "reserved"));
    /* a dynamic-Huffman stream from the gzip program (part of every Debian) */
    temp_path(plain, sizeof plain, "real.idx");
    CHECK(write_bytes(plain, o.b, o.n));
    snprintf(cmd, sizeof cmd, "gzip -9 -f -k '%s' 2>/dev/null", plain);
    if (system(cmd) == 0) {
        snprintf(path, sizeof path, "%s.gz", plain);
        CHECK(dp_nd_load_idx(eng, path, CPU0, &a) == DP_OK);
        if (a) { CHECK(dp_nd_read(a, got, 120, NULL) == DP_OK && memcmp(got, px, 120) == 0); dp_nd_release(a); a = NULL; }
        remove(path);
    } else printf("SKIP: the gzip program is not installed (test_idx_gzip's gzip -9 part)\n");
    remove(plain);
    temp_path(path, sizeof path, "stored.idx.gz");
    remove(path);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_idx_malformed(void) {
    dp_engine *eng = make_engine(DP_ENGINE_NAIVE);
    char path[512];
    bytes_t o;
    dp_ndarray *a = NULL;
    uint32_t dims[2] = {2, 3};
    unsigned char px[7] = {1, 2, 3, 4, 5, 6, 7};
    struct { const char *what; int kind; } cases[] = {
        {"truncated", 0}, {"bad magic", 1}, {"unknown data type", 2}, {"0 dimensions", 3}, {"9 dimensions", 4},
        {"truncated", 5}, {"truncated", 6}, {"size mismatch", 7},
    };
    int i;
    temp_path(path, sizeof path, "bad.idx");
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        switch (cases[i].kind) {
        case 0: o.n = 0; put(&o, "\0\0", 2); break;                                  /* shorter than the magic */
        case 1: idx_header(&o, 0x08, 2, dims); o.b[1] = 8; put(&o, px, 6); break;
        case 2: idx_header(&o, 0x0A, 2, dims); put(&o, px, 6); break;
        case 3: idx_header(&o, 0x08, 0, dims); break;
        case 4: idx_header(&o, 0x08, 2, dims); o.b[3] = 9; break;
        case 5: idx_header(&o, 0x08, 2, dims); o.n -= 2; break;                      /* inside the dimensions */
        case 6: idx_header(&o, 0x08, 2, dims); put(&o, px, 5); break;                /* one pixel short */
        case 7: idx_header(&o, 0x08, 2, dims); put(&o, px, 7); break;                /* one byte too many */
        }
        CHECK(write_bytes(path, o.b, o.n));
        dp_clear_last_error();
        a = (dp_ndarray *)&a;
        if (dp_nd_load_idx(eng, path, CPU0, &a) != DP_ERROR_FORMAT || a != NULL || !last_error_has(path, cases[i].what) || dp_last_error_item() != DP_LOGITEM_FORMAT) {
            fprintf(stderr, "  case %d (%s): %s\n", i, cases[i].what, dp_last_error());
            CHECK(0);
        }
    }
    dp_clear_last_error();
    CHECK(dp_nd_load_idx(eng, "/nonexistent/depeng.idx", CPU0, &a) == DP_ERROR_IO && last_error_has("/nonexistent/depeng.idx", NULL));
    CHECK(dp_nd_load_idx(eng, NULL, CPU0, &a) == DP_ERROR_INVALID_ARGS && dp_last_error_item() == DP_LOGITEM_ND_ARGS);
    remove(path);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_mnist_pair(void) {
    dp_engine *eng = make_engine(DP_ENGINE_NAIVE);
    char ip[512], lp[512];
    bytes_t o;
    dp_ndarray *d = NULL, *l = NULL;
    uint32_t idims[3] = {3, 2, 2}, ldims[1] = {3}, lbad[1] = {4};
    unsigned char px[12] = {0}, lab[4] = {7, 8, 9, 1};
    temp_path(ip, sizeof ip, "images-idx3-ubyte");
    temp_path(lp, sizeof lp, "labels-idx1-ubyte");
    idx_header(&o, 0x08, 3, idims); put(&o, px, 12); CHECK(write_bytes(ip, o.b, o.n));
    idx_header(&o, 0x08, 1, ldims); put(&o, lab, 3); CHECK(write_bytes(lp, o.b, o.n));
    CHECK(dp_nd_load_mnist(eng, ip, lp, CPU0, &d, &l) == DP_OK && d && l);
    if (l) { unsigned char g[3]; CHECK(dp_nd_read(l, g, 3, NULL) == DP_OK && g[0] == 7 && g[2] == 9); }
    dp_nd_release(d); dp_nd_release(l);
    idx_header(&o, 0x08, 1, lbad); put(&o, lab, 4); CHECK(write_bytes(lp, o.b, o.n));
    dp_clear_last_error();
    CHECK(dp_nd_load_mnist(eng, ip, lp, CPU0, &d, &l) == DP_ERROR_FORMAT && !d && !l && last_error_has("count mismatch", lp) && last_error_has(ip, "4 labels"));
    remove(ip); remove(lp);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}

/* ---- the image iterator ---------------------------------------------------- */
/* n images of 1 x 2 x 3 whose pixel p of row r is r * 6 + p, and labels
   100 + r */
static void make_images(dp_engine *eng, int n, dp_ndarray **data, dp_ndarray **label) {
    unsigned char px[64 * 6];
    float lab[64];
    dp_shape s = {3, {n, 2, 3}}, ls = {1, {n}};
    int i;
    for (i = 0; i < n * 6; i++) px[i] = (unsigned char)i;
    for (i = 0; i < n; i++) lab[i] = (float)(100 + i);
    CHECK(dp_nd_from_host(eng, &s, DP_UINT8, CPU0, px, data) == DP_OK);
    CHECK(dp_nd_from_host(eng, &ls, DP_FLOAT32, CPU0, lab, label) == DP_OK);
}
/* The rows of one epoch's batches (from the labels), and each batch's pad;
   returns the batch count. Checks that every image is its row's. */
static int epoch_rows(dp_image_iter *it, int *rows, int *pads, int batch) {
    int nb = 0;
    for (;;) {
        dp_ndarray *d = NULL, *l = NULL;
        int pad = -1, i, p;
        float lab[16], img[16 * 6];
        if (dp_image_iter_next(it, &d, &l, &pad) != DP_OK || !d) break;
        CHECK(dp_nd_shape(d)->ndim == 4 && dp_nd_shape(d)->dims[0] == batch && dp_nd_shape(d)->dims[1] == 1 && dp_nd_dtype(d) == DP_FLOAT32);
        CHECK(dp_nd_read(l, lab, (size_t)batch * sizeof(float), NULL) == DP_OK);
        CHECK(dp_nd_read(d, img, (size_t)batch * 6 * sizeof(float), NULL) == DP_OK);
        for (i = 0; i < batch; i++) {
            rows[nb * batch + i] = (int)lab[i] - 100;
            for (p = 0; p < 6; p++) CHECK(img[i * 6 + p] == (float)(rows[nb * batch + i] * 6 + p));
        }
        pads[nb++] = pad;
        dp_nd_release(d); dp_nd_release(l);
    }
    return nb;
}
static void test_image_iter_last_batch(void) {
    dp_engine *eng = make_engine(DP_ENGINE_POOLED);
    dp_ndarray *data, *label;
    dp_image_iter *it = NULL;
    dp_image_iter_desc d;
    int rows[64], pads[16], nb, i;
    make_images(eng, 10, &data, &label);
    memset(&d, 0, sizeof d);
    d.data = data; d.label = label; d.batch_size = 4;
    /* PAD: 3 batches, the last is rows 8, 9 then 0, 1 (pad 2) */
    d.last_batch = DP_LAST_BATCH_PAD;
    CHECK(dp_image_iter_create(&d, &it) == DP_OK && dp_image_iter_num_batches(it) == 3);
    nb = epoch_rows(it, rows, pads, 4);
    CHECK(nb == 3 && pads[0] == 0 && pads[1] == 0 && pads[2] == 2);
    for (i = 0; i < 10; i++) CHECK(rows[i] == i);
    CHECK(rows[10] == 0 && rows[11] == 1);
    CHECK(dp_image_iter_reset(it) == DP_OK && epoch_rows(it, rows, pads, 4) == 3 && rows[8] == 8 && rows[11] == 1);
    dp_image_iter_destroy(it);
    /* DISCARD: 2 batches */
    d.last_batch = DP_LAST_BATCH_DISCARD;
    CHECK(dp_image_iter_create(&d, &it) == DP_OK && dp_image_iter_num_batches(it) == 2);
    nb = epoch_rows(it, rows, pads, 4);
    CHECK(nb == 2 && rows[7] == 7 && pads[1] == 0);
    dp_image_iter_destroy(it);
    /* ROLL_OVER: 0-3, 4-7 | 8, 9, 0, 1 | 2-5 | 6-9 | then 0-3, 4-7 again */
    d.last_batch = DP_LAST_BATCH_ROLL_OVER;
    CHECK(dp_image_iter_create(&d, &it) == DP_OK && dp_image_iter_num_batches(it) == 2);
    CHECK(epoch_rows(it, rows, pads, 4) == 2 && rows[7] == 7);
    CHECK(dp_image_iter_reset(it) == DP_OK && dp_image_iter_num_batches(it) == 3);
    nb = epoch_rows(it, rows, pads, 4);
    CHECK(nb == 3 && rows[0] == 8 && rows[1] == 9 && rows[2] == 0 && rows[3] == 1 && rows[4] == 2 && rows[11] == 9);
    CHECK(dp_image_iter_reset(it) == DP_OK && dp_image_iter_num_batches(it) == 2 && epoch_rows(it, rows, pads, 4) == 2 && rows[0] == 0);
    /* a reset before the end carries nothing over */
    CHECK(dp_image_iter_reset(it) == DP_OK);
    { dp_ndarray *x = NULL; CHECK(dp_image_iter_next(it, &x, NULL, NULL) == DP_OK && x); dp_nd_release(x); }
    CHECK(dp_image_iter_reset(it) == DP_OK && dp_image_iter_num_batches(it) == 2 && epoch_rows(it, rows, pads, 4) == 2 && rows[0] == 0);
    dp_image_iter_destroy(it);
    /* PAD with fewer rows than a batch wraps around */
    d.batch_size = 12; d.last_batch = DP_LAST_BATCH_PAD;
    CHECK(dp_image_iter_create(&d, &it) == DP_OK && epoch_rows(it, rows, pads, 12) == 1 && pads[0] == 2 && rows[10] == 0 && rows[11] == 1);
    dp_image_iter_destroy(it);
    dp_nd_release(data); dp_nd_release(label);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
/* one epoch's rows with shuffle for a seed, on an engine of a type */
static void shuffled_epochs(dp_engine_type type, uint64_t seed, int parts, int part, int *rows, int *count) {
    dp_engine *eng = make_engine(type);
    dp_ndarray *data, *label;
    dp_image_iter *it = NULL;
    dp_image_iter_desc d;
    int pads[16], e;
    make_images(eng, 10, &data, &label);
    memset(&d, 0, sizeof d);
    d.data = data; d.label = label; d.batch_size = 1; d.shuffle = 1; d.seed = seed; d.num_parts = parts; d.part_index = part;
    *count = 0;
    CHECK(dp_image_iter_create(&d, &it) == DP_OK);
    for (e = 0; it && e < 3; e++) {
        *count += epoch_rows(it, rows + *count, pads, 1);
        CHECK(dp_image_iter_reset(it) == DP_OK);
    }
    dp_image_iter_destroy(it);
    dp_nd_release(data); dp_nd_release(label);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_image_iter_shuffle_and_parts(void) {
    int a[64], b[64], c[64], na, nb, nc, e, i, seen[10], parts[10] = {0}, p, total = 0;
    shuffled_epochs(DP_ENGINE_NAIVE, 7, 1, 0, a, &na);
    shuffled_epochs(DP_ENGINE_POOLED, 7, 1, 0, b, &nb);
    shuffled_epochs(DP_ENGINE_PERDEVICE, 8, 1, 0, c, &nc);
    CHECK(na == 30 && nb == 30 && nc == 30);
    CHECK(memcmp(a, b, sizeof(int) * 30) == 0);            /* the same seed: the same order on every engine */
    CHECK(memcmp(a, c, sizeof(int) * 30) != 0);            /* another seed: another */
    CHECK(memcmp(a, a + 10, sizeof(int) * 10) != 0);        /* a new permutation every epoch */
    for (e = 0; e < 3; e++) {                               /* each a permutation */
        memset(seen, 0, sizeof seen);
        for (i = 0; i < 10; i++) if (a[e * 10 + i] >= 0 && a[e * 10 + i] < 10) seen[a[e * 10 + i]]++;
        for (i = 0; i < 10; i++) CHECK(seen[i] == 1);
    }
    /* three parts: rows [0, 3), [3, 6), [6, 10), every row in exactly one */
    for (p = 0; p < 3; p++) {
        shuffled_epochs(DP_ENGINE_NAIVE, 1, 3, p, a, &na);
        CHECK(na == 3 * (p == 2 ? 4 : 3));
        for (i = 0; i < na / 3; i++) {
            CHECK(a[i] >= (p * 10) / 3 && a[i] < ((p + 1) * 10) / 3);
            if (a[i] >= 0 && a[i] < 10) parts[a[i]]++;
        }
        total += na / 3;
    }
    CHECK(total == 10);
    for (i = 0; i < 10; i++) CHECK(parts[i] == 1);
}
static void test_image_iter_augment(void) {
    dp_engine *eng = make_engine(DP_ENGINE_POOLED);
    dp_ndarray *data, *label, *x = NULL, *y = NULL;
    dp_image_iter *it = NULL;
    dp_image_iter_desc d;
    float img[64 * 4 * 5], mean[1] = {3}, std[1] = {2};
    int i, r, yy, xx, flips = 0, offsets = 0;
    make_images(eng, 10, &data, &label);
    memset(&d, 0, sizeof d);
    d.data = data; d.label = label; d.batch_size = 10; d.last_batch = DP_LAST_BATCH_DISCARD;
    /* normalisation: (x - 3) / 2 * 4; flat */
    d.mean = mean; d.std = std; d.scale = 4; d.flat = 1;
    CHECK(dp_image_iter_create(&d, &it) == DP_OK);
    CHECK(dp_image_iter_next(it, &x, &y, NULL) == DP_OK && x && dp_nd_shape(x)->ndim == 2 && dp_nd_shape(x)->dims[1] == 6);
    if (x) { CHECK(dp_nd_read(x, img, 60 * sizeof(float), NULL) == DP_OK); for (i = 0; i < 60; i++) CHECK(img[i] == (float)((i - 3.0) / 2 * 4)); }
    dp_nd_release(x); dp_nd_release(y); x = y = NULL;
    dp_image_iter_destroy(it);
    /* pad 1 with fill 200, a centre crop of 4 x 5: the image inside a frame */
    d.mean = d.std = NULL; d.scale = 0; d.flat = 0; d.pad = 1; d.fill_value = 200; d.crop_h = 4; d.crop_w = 5;
    CHECK(dp_image_iter_create(&d, &it) == DP_OK);
    CHECK(dp_image_iter_next(it, &x, NULL, NULL) == DP_OK && x && dp_nd_shape(x)->dims[2] == 4 && dp_nd_shape(x)->dims[3] == 5);
    if (x) {
        CHECK(dp_nd_read(x, img, 10 * 20 * sizeof(float), NULL) == DP_OK);
        for (r = 0; r < 10; r++)
            for (yy = 0; yy < 4; yy++)
                for (xx = 0; xx < 5; xx++) {
                    float want = yy == 0 || yy == 3 || xx == 0 || xx == 4 ? 200.0f : (float)(r * 6 + (yy - 1) * 3 + xx - 1);
                    CHECK(img[r * 20 + yy * 5 + xx] == want);
                }
    }
    dp_nd_release(x); x = NULL;
    dp_image_iter_destroy(it);
    /* random crops of 2 x 2 from the padded 4 x 5, and flips: each output is
       one of the crops (flipped or not) of its row, and both kinds happen */
    d.crop_h = 2; d.crop_w = 2; d.rand_crop = 1; d.rand_mirror = 1; d.seed = 3; d.batch_size = 10;
    CHECK(dp_image_iter_create(&d, &it) == DP_OK);
    for (i = 0; i < 5; i++) {
        if (i) CHECK(dp_image_iter_reset(it) == DP_OK);
        CHECK(dp_image_iter_next(it, &x, NULL, NULL) == DP_OK && x);
        if (!x) break;
        CHECK(dp_nd_read(x, img, 10 * 4 * sizeof(float), NULL) == DP_OK);
        for (r = 0; r < 10; r++) {
            int oy, ox, f, found = 0;
            for (oy = 0; oy <= 2 && !found; oy++)
                for (ox = 0; ox <= 3 && !found; ox++)
                    for (f = 0; f < 2 && !found; f++) {
                        int ok = 1;
                        for (yy = 0; yy < 2; yy++)
                            for (xx = 0; xx < 2; xx++) {
                                int sy = yy + oy - 1, sx = (f ? 1 - xx : xx) + ox - 1;
                                float want = sy < 0 || sy >= 2 || sx < 0 || sx >= 3 ? 200.0f : (float)(r * 6 + sy * 3 + sx);
                                if (img[r * 4 + yy * 2 + xx] != want) ok = 0;
                            }
                        if (ok) { found = 1; flips += f; offsets += oy != 1 || ox != 1; }
                    }
            CHECK(found);
        }
        dp_nd_release(x); x = NULL;
    }
    CHECK(flips > 0 && flips < 50 && offsets > 0);
    dp_image_iter_destroy(it);
    dp_nd_release(data); dp_nd_release(label);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_image_iter_refused(void) {
    dp_engine *eng = make_engine(DP_ENGINE_NAIVE);
    dp_ndarray *data, *label, *flat2 = NULL;
    dp_image_iter *it = (dp_image_iter *)&it;
    dp_image_iter_desc d, base;
    float zero[1] = {0};
    dp_shape s2 = {2, {10, 6}};
    int i;
    make_images(eng, 10, &data, &label);
    CHECK(dp_nd_zeros(eng, &s2, DP_FLOAT32, CPU0, &flat2) == DP_OK);
    memset(&base, 0, sizeof base);
    base.data = data; base.label = label; base.batch_size = 4;
    for (i = 0; i < 9; i++) {
        d = base;
        switch (i) {
        case 0: d.batch_size = 0; break;
        case 1: d.data = flat2; break;
        case 2: d.pad = -1; break;
        case 3: d.crop_h = 5; break;                         /* 5 > 2 + 2 * 0 */
        case 4: d.std = zero; break;
        case 5: d.num_parts = 2; d.part_index = 2; break;
        case 6: d.num_parts = 20; d.part_index = 0; break;   /* no rows */
        case 7: d.last_batch = DP_LAST_BATCH_DISCARD; d.batch_size = 11; break;
        case 8: d.last_batch = (dp_last_batch)7; break;
        }
        dp_clear_last_error();
        if (dp_image_iter_create(&d, &it) != DP_ERROR_INVALID_ARGS || it != NULL || dp_last_error_item() != DP_LOGITEM_ND_ARGS) {
            fprintf(stderr, "  case %d: %s\n", i, dp_last_error());
            CHECK(0);
        }
    }
    CHECK(dp_image_iter_create(NULL, &it) == DP_ERROR_INVALID_ARGS);
    CHECK(dp_image_iter_next(NULL, NULL, NULL, NULL) == DP_ERROR_INVALID_ARGS);
    dp_image_iter_destroy(NULL);
    dp_nd_release(flat2); dp_nd_release(data); dp_nd_release(label);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}

/* ---- the real files: Fashion-MNIST from Debian's dataset-fashion-mnist ------ */
static int g_skipped;
#ifndef FASHION_DIR
#define FASHION_DIR "/usr/share/datasets/fashion-mnist/"
#endif
static void test_fashion_mnist_files(void) {
    dp_engine *eng;
    dp_ndarray *d = NULL, *l = NULL, *x = NULL, *y = NULL;
    dp_image_iter *it = NULL;
    dp_image_iter_desc desc;
    float mean[1] = {72.94f}, std[1] = {90.02f};
    int counts[10] = {0}, i, batches = 0;
    if (access(FASHION_DIR "train-images-idx3-ubyte.gz", R_OK) != 0) { g_skipped = 1; return; }
    eng = make_engine(DP_ENGINE_POOLED);
    CHECK(dp_nd_load_mnist(eng, FASHION_DIR "train-images-idx3-ubyte.gz", FASHION_DIR "train-labels-idx1-ubyte.gz", CPU0, &d, &l) == DP_OK);
    CHECK(d && dp_nd_dtype(d) == DP_UINT8 && dp_nd_shape(d)->ndim == 3 && dp_nd_shape(d)->dims[0] == 60000 && dp_nd_shape(d)->dims[1] == 28 && dp_nd_shape(d)->dims[2] == 28);
    dp_nd_release(d); dp_nd_release(l); d = l = NULL;
    CHECK(dp_nd_load_mnist(eng, FASHION_DIR "t10k-images-idx3-ubyte.gz", FASHION_DIR "t10k-labels-idx1-ubyte.gz", CPU0, &d, &l) == DP_OK);
    /* the test set through the iterator: 10 batches of 1,000, 1,000 of each class */
    memset(&desc, 0, sizeof desc);
    desc.data = d; desc.label = l; desc.batch_size = 1000; desc.shuffle = 1; desc.seed = 1; desc.mean = mean; desc.std = std;
    CHECK(d && dp_image_iter_create(&desc, &it) == DP_OK && dp_image_iter_num_batches(it) == 10);
    while (it && dp_image_iter_next(it, &x, &y, NULL) == DP_OK && x) {
        static float lab[1000];
        CHECK(dp_nd_shape(x)->dims[1] == 1 && dp_nd_shape(x)->dims[2] == 28 && dp_nd_read(y, lab, sizeof lab, NULL) == DP_OK);
        for (i = 0; i < 1000; i++) if (lab[i] >= 0 && lab[i] < 10 && lab[i] == (int)lab[i]) counts[(int)lab[i]]++;
        dp_nd_release(x); dp_nd_release(y);
        batches++;
    }
    CHECK(batches == 10);
    for (i = 0; i < 10; i++) CHECK(counts[i] == 1000);
    dp_image_iter_destroy(it);
    dp_nd_release(d); dp_nd_release(l);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}

/* ---- .params and checkpoints ------------------------------------------------ */
/* The bytes mx.nd.save({'arg:w': a 2 x 2 float32 [1, 2, 3, 4], 'aux:m': an
   int64 [5, -6]}) writes, built here from the format's description: the
   list magic 0x112 and a reserved 0 (uint64 each), the array count, each
   array as NDArray::Save (version-2 magic 0xF993fac9, storage type 0, ndim
   as uint32 and the dims as int64, context cpu(0) as int32 1 and 0, type
   flag int32: 0 float32, 6 int64, then the data), then the names. */
static void params_vector(bytes_t *o) {
    float w[4] = {1, 2, 3, 4};
    int64_t m[2] = {5, -6};
    o->n = 0;
    put_le(o, 0x112, 8); put_le(o, 0, 8); put_le(o, 2, 8);
    put_le(o, 0xF993fac9u, 4); put_le(o, 0, 4); put_le(o, 2, 4); put_le(o, 2, 8); put_le(o, 2, 8);
    put_le(o, 1, 4); put_le(o, 0, 4); put_le(o, 0, 4); put(o, w, sizeof w);
    put_le(o, 0xF993fac9u, 4); put_le(o, 0, 4); put_le(o, 1, 4); put_le(o, 2, 8);
    put_le(o, 1, 4); put_le(o, 0, 4); put_le(o, 6, 4); put(o, m, sizeof m);
    put_le(o, 2, 8); put_le(o, 5, 8); put(o, "arg:w", 5); put_le(o, 5, 8); put(o, "aux:m", 5);
}
static void test_params_byte_vector(void) {
    dp_engine *eng = make_engine(DP_ENGINE_NAIVE);
    char path[512], path2[512];
    bytes_t o;
    dp_nd_named got[4];
    int n = -1;
    temp_path(path, sizeof path, "vector.params");
    temp_path(path2, sizeof path2, "ours.params");
    params_vector(&o);
    CHECK(write_bytes(path, o.b, o.n));
    CHECK(dp_nd_load_params(eng, path, CPU0, got, 4, &n) == DP_OK && n == 2);
    if (n == 2) {
        float w[4];
        int64_t m[2];
        FILE *f;
        unsigned char back[8192];
        size_t blen;
        CHECK(strcmp(got[0].name, "arg:w") == 0 && strcmp(got[1].name, "aux:m") == 0);
        CHECK(dp_nd_dtype(got[0].array) == DP_FLOAT32 && dp_nd_shape(got[0].array)->ndim == 2 && dp_nd_dtype(got[1].array) == DP_INT64);
        CHECK(dp_nd_read(got[0].array, w, sizeof w, NULL) == DP_OK && w[0] == 1 && w[3] == 4);
        CHECK(dp_nd_read(got[1].array, m, sizeof m, NULL) == DP_OK && m[0] == 5 && m[1] == -6);
        /* our writer gives the same bytes */
        CHECK(dp_nd_save_params(path2, got, 2, NULL) == DP_OK);
        f = fopen(path2, "rb");
        blen = f ? fread(back, 1, sizeof back, f) : 0;
        if (f) fclose(f);
        CHECK(blen == o.n && memcmp(back, o.b, o.n) == 0);
        dp_nd_release(got[0].array); dp_nd_release(got[1].array);
    }
    {   /* version 1 and the oldest layout (uint32 ndim and dims), unnamed */
        float v[3] = {7, 8, 9};
        o.n = 0;
        put_le(&o, 0x112, 8); put_le(&o, 0, 8); put_le(&o, 2, 8);
        put_le(&o, 0xF993fac8u, 4); put_le(&o, 1, 4); put_le(&o, 3, 8); put_le(&o, 1, 4); put_le(&o, 0, 4); put_le(&o, 0, 4); put(&o, v, sizeof v);
        put_le(&o, 1, 4); put_le(&o, 3, 4); put_le(&o, 2, 4); put_le(&o, 1, 4); put_le(&o, 0, 4); put(&o, v, sizeof v);
        put_le(&o, 0, 8);
        CHECK(write_bytes(path, o.b, o.n));
        CHECK(dp_nd_load_params(eng, path, CPU0, got, 4, &n) == DP_OK && n == 2);
        if (n == 2) {
            float g[3];
            CHECK(got[0].name[0] == 0 && dp_nd_shape(got[1].array)->dims[0] == 3 && dp_nd_ctx(got[1].array).dev_type == DP_DEV_CPU);
            CHECK(dp_nd_read(got[1].array, g, sizeof g, NULL) == DP_OK && g[2] == 9);
            dp_nd_release(got[0].array); dp_nd_release(got[1].array);
        }
    }
    remove(path); remove(path2);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_params_round_trip(void) {
    dp_engine *eng = make_engine(DP_ENGINE_POOLED);
    char path[512];
    dp_nd_named in[8], out[8];
    dp_dtype types[8] = {DP_FLOAT32, DP_FLOAT64, DP_INT32, DP_INT64, DP_UINT8, DP_FLOAT16, DP_BOOL, DP_INT8};
    dp_shape s = {3, {2, 3, 4}}, scalar = {0, {0}};
    int i, n = 0;
    temp_path(path, sizeof path, "round.params");
    for (i = 0; i < 8; i++) {
        snprintf(in[i].name, sizeof in[i].name, "arg:p%d_%s", i, dp_dtype_name(types[i]));
        CHECK(dp_nd_arange(eng, 0, 24, 1, types[i], CPU0, &in[i].array) == DP_OK);
        if (i == 7) { dp_ndarray *t = in[i].array; CHECK(dp_nd_full(eng, &scalar, DP_INT8, CPU0, -3, &in[i].array) == DP_OK); dp_nd_release(t); }
        else { dp_ndarray *t = NULL; CHECK(dp_nd_reshape(in[i].array, &s, &t) == DP_OK); dp_nd_release(in[i].array); in[i].array = t; }
    }
    CHECK(dp_nd_save_params(path, in, 8, NULL) == DP_OK);
    CHECK(dp_nd_load_params(eng, path, CPU0, out, 8, &n) == DP_OK && n == 8);
    for (i = 0; i < n; i++) {
        unsigned char a[256], b[256];
        size_t bytes = dp_nd_bytes(in[i].array);
        CHECK(strcmp(in[i].name, out[i].name) == 0 && dp_nd_dtype(out[i].array) == types[i] && dp_nd_shape(out[i].array)->ndim == dp_nd_shape(in[i].array)->ndim);
        CHECK(dp_nd_bytes(out[i].array) == bytes && dp_nd_read(in[i].array, a, bytes, NULL) == DP_OK && dp_nd_read(out[i].array, b, bytes, NULL) == DP_OK && memcmp(a, b, bytes) == 0);
        dp_nd_release(out[i].array);
    }
    dp_clear_last_error();
    CHECK(dp_nd_load_params(eng, path, CPU0, out, 7, &n) == DP_ERROR_FORMAT && n == 0 && last_error_has(path, "more than"));
    for (i = 0; i < 8; i++) dp_nd_release(in[i].array);
    remove(path);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
static void test_params_malformed(void) {
    dp_engine *eng = make_engine(DP_ENGINE_NAIVE);
    char path[512];
    bytes_t o, good;
    dp_nd_named got[4];
    int i, n;
    /* offsets in the vector: 24 the first array's magic, 28 its storage
       type, 32 its ndim, 52 its device type, 60 its type flag; 80 the
       second array; 128 the name count */
    struct { const char *what; size_t at; uint32_t value; size_t cut; } cases[] = {
        {"bad magic", 0, 0x113, 0}, {"unknown array magic", 24, 0xF993fa00u, 0}, {"storage type 1", 28, 1, 0},
        {"9 dimensions", 32, 9, 0}, {"type flag 8", 60, 8, 0}, {"unknown device type 4", 52, 4, 0},
        {"none array", 32, 0, 0}, {"1 names for 2 arrays", 128, 1, 0}, {"truncated", 0, 0, 1}, {"truncated", 0, 0, 100},
        {"truncated", 0, 0, 150}, {"past the last name", 0, 0, (size_t)-1},
    };
    params_vector(&good);
    temp_path(path, sizeof path, "bad.params");
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        o = good;
        if (cases[i].cut == (size_t)-1) put(&o, "x", 1);
        else if (cases[i].cut) o.n = cases[i].cut;
        else { o.b[cases[i].at] = (unsigned char)cases[i].value; o.b[cases[i].at + 1] = (unsigned char)(cases[i].value >> 8);
               o.b[cases[i].at + 2] = (unsigned char)(cases[i].value >> 16); o.b[cases[i].at + 3] = (unsigned char)(cases[i].value >> 24); }
        CHECK(write_bytes(path, o.b, o.n));
        dp_clear_last_error();
        n = -1;
        if (dp_nd_load_params(eng, path, CPU0, got, 4, &n) != DP_ERROR_FORMAT || n != 0 || !last_error_has(path, cases[i].what) || dp_last_error_item() != DP_LOGITEM_FORMAT) {
            fprintf(stderr, "  case %d (%s): %s\n", i, cases[i].what, dp_last_error());
            CHECK(0);
        }
    }
    /* an empty name in a named list (the fuzzer's find: "" and "aux:m") */
    o = good; o.n = 128;
    put_le(&o, 2, 8); put_le(&o, 0, 8); put_le(&o, 5, 8); put(&o, "aux:m", 5);
    CHECK(write_bytes(path, o.b, o.n));
    n = -1;
    CHECK(dp_nd_load_params(eng, path, CPU0, got, 4, &n) == DP_ERROR_FORMAT && n == 0 && last_error_has(path, "name 0 is empty"));
    CHECK(dp_nd_load_params(eng, "/nonexistent/x.params", CPU0, got, 4, &n) == DP_ERROR_IO);
    CHECK(dp_nd_load_params(eng, path, CPU0, got, -1, &n) == DP_ERROR_INVALID_ARGS);
    remove(path);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}
/* data (batch, 4) -> FullyConnected fc1 (3) -> BatchNorm bn (its moving
   statistics auxiliary states) -> SoftmaxOutput */
static dp_symbol *small_net(void) {
    dp_symbol *in[5] = {NULL, NULL, NULL, NULL, NULL}, *fc = NULL, *bn = NULL, *out = NULL;
    const char *k[1] = {"num_hidden"}, *v[1] = {"3"};
    CHECK(dp_sym_var("data", &in[0]) == DP_OK);
    CHECK(sym_op("FullyConnected", "fc1", 3, in, 1, k, v, &fc) == DP_OK);
    dp_sym_release(in[0]);
    in[0] = fc;
    CHECK(sym_op("BatchNorm", "bn", 5, in, 0, NULL, NULL, &bn) == DP_OK);
    in[0] = bn;
    CHECK(sym_op("SoftmaxOutput", "softmax", 2, in, 0, NULL, NULL, &out) == DP_OK);
    dp_sym_release(fc); dp_sym_release(bn);
    return out;
}
static void test_checkpoint(void) {
    dp_engine *eng = make_engine(DP_ENGINE_POOLED);
    char prefix[512], path[600];
    dp_symbol *net = small_net();
    dp_nd_named args[2], aux[1];
    dp_shape ws = {2, {3, 4}}, bs = {1, {3}}, wbad = {2, {3, 5}}, ms = {1, {3}};
    dp_checkpoint ck;
    dp_checkpoint_desc cd;
    const char *in_names[1] = {"data"};
    dp_shape in_shapes[1] = {{2, {8, 4}}};
    int i;
    temp_path(prefix, sizeof prefix, "net");
    snprintf(args[0].name, sizeof args[0].name, "fc1_weight"); snprintf(args[1].name, sizeof args[1].name, "fc1_bias");
    snprintf(aux[0].name, sizeof aux[0].name, "bn_moving_mean");
    CHECK(dp_nd_random_uniform(eng, -1, 1, &ws, DP_FLOAT32, CPU0, &args[0].array) == DP_OK);
    CHECK(dp_nd_full(eng, &bs, DP_FLOAT32, CPU0, 0.5, &args[1].array) == DP_OK);
    CHECK(dp_nd_full(eng, &ms, DP_FLOAT32, CPU0, 2, &aux[0].array) == DP_OK);
    CHECK(dp_checkpoint_save(prefix, 3, net, args, 2, aux, 1, NULL) == DP_OK);
    snprintf(path, sizeof path, "%s-0003.params", prefix);
    CHECK(access(path, F_OK) == 0);
    memset(&cd, 0, sizeof cd);
    cd.num_inputs = 1; cd.input_names = in_names; cd.input_shapes = in_shapes;
    CHECK(dp_checkpoint_load(eng, prefix, 3, CPU0, &cd, &ck) == DP_OK);
    CHECK(ck.symbol && ck.num_args == 2 && ck.num_aux == 1 && strcmp(ck.args[0].name, "fc1_weight") == 0 && strcmp(ck.aux[0].name, "bn_moving_mean") == 0);
    if (ck.num_args == 2) {
        float a[12], b[12];
        CHECK(dp_nd_read(args[0].array, a, sizeof a, NULL) == DP_OK && dp_nd_read(ck.args[0].array, b, sizeof b, NULL) == DP_OK && memcmp(a, b, sizeof a) == 0);
        CHECK(dp_sym_list_arguments(ck.symbol, NULL, 0) == 6 && dp_sym_list_auxiliary_states(ck.symbol, NULL, 0) == 2);
    }
    dp_checkpoint_free(&ck);
    CHECK(ck.symbol == NULL && ck.args == NULL);
    CHECK(dp_checkpoint_load(eng, prefix, 3, CPU0, NULL, &ck) == DP_OK);   /* no input shapes: names checked only */
    dp_checkpoint_free(&ck);
    /* a weight of another shape: refused naming it and both shapes */
    dp_nd_release(args[0].array);
    CHECK(dp_nd_zeros(eng, &wbad, DP_FLOAT32, CPU0, &args[0].array) == DP_OK);
    CHECK(dp_checkpoint_save(prefix, 4, net, args, 2, aux, 1, NULL) == DP_OK);
    dp_clear_last_error();
    CHECK(dp_checkpoint_load(eng, prefix, 4, CPU0, &cd, &ck) == DP_ERROR_FORMAT && ck.symbol == NULL && ck.args == NULL);
    CHECK(last_error_has("'arg:fc1_weight'", "(3, 5)") && last_error_has("(3, 4)", "-0004.params"));
    in_shapes[0].dims[1] = 7;                 /* inputs the symbol refuses */
    dp_clear_last_error();
    CHECK(dp_checkpoint_load(eng, prefix, 3, CPU0, &cd, &ck) == DP_ERROR_FORMAT && ck.symbol == NULL && last_error_has("fc1_weight", "(3, 4)"));
    in_shapes[0].dims[1] = 4;
    /* a parameter the symbol does not have */
    snprintf(args[1].name, sizeof args[1].name, "fc2_bias");
    CHECK(dp_checkpoint_save(prefix, 5, net, args, 2, aux, 1, NULL) == DP_OK);
    dp_clear_last_error();
    CHECK(dp_checkpoint_load(eng, prefix, 5, CPU0, &cd, &ck) == DP_ERROR_FORMAT && last_error_has("'arg:fc2_bias'", "not an argument"));
    /* a name without arg: / aux: */
    {
        dp_nd_named one[1];
        one[0] = aux[0];
        snprintf(path, sizeof path, "%s-0006.params", prefix);
        CHECK(dp_nd_save_params(path, one, 1, NULL) == DP_OK);
        dp_clear_last_error();
        CHECK(dp_checkpoint_load(eng, prefix, 6, CPU0, NULL, &ck) == DP_ERROR_FORMAT && last_error_has("bn_moving_mean", "arg:NAME"));
        remove(path);
    }
    CHECK(dp_checkpoint_load(eng, prefix, 9, CPU0, NULL, &ck) == DP_ERROR_IO);
    CHECK(dp_checkpoint_save(prefix, -1, net, args, 2, aux, 1, NULL) == DP_ERROR_INVALID_ARGS);
    for (i = 3; i <= 5; i++) { snprintf(path, sizeof path, "%s-%04d.params", prefix, i); remove(path); }
    snprintf(path, sizeof path, "%s-symbol.json", prefix); remove(path);
    dp_nd_release(args[0].array); dp_nd_release(args[1].array); dp_nd_release(aux[0].array);
    dp_sym_release(net);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
}

/* Out of memory at every allocation of each call in turn (a fresh engine
   whose allocator fails the k-th allocation, for every k until one run
   fails none): each call returns DP_OK or DP_ERROR_OUT_OF_MEMORY with an
   OUT_OF_MEMORY log line, and destroy gets every byte back. */
static void test_out_of_memory(void) {
    dp_engine *eng = make_engine(DP_ENGINE_NAIVE);
    char gz[600], params[512], prefix[512];
    bytes_t o, g;
    uint32_t dims[3] = {5, 2, 3};
    unsigned char px[30];
    dp_nd_named arg[2];
    dp_shape ws = {2, {3, 4}}, bs = {1, {3}};
    dp_symbol *net = small_net();
    int which, i;
    for (i = 0; i < 30; i++) px[i] = (unsigned char)i;
    temp_path(gz, sizeof gz, "oom.idx.gz"); temp_path(params, sizeof params, "oom.params"); temp_path(prefix, sizeof prefix, "oomnet");
    idx_header(&o, 0x08, 3, dims); put(&o, px, 30); gzip_stored(&g, o.b, o.n);
    CHECK(write_bytes(gz, g.b, g.n));
    snprintf(arg[0].name, sizeof arg[0].name, "fc1_weight"); snprintf(arg[1].name, sizeof arg[1].name, "fc1_bias");
    CHECK(dp_nd_zeros(eng, &ws, DP_FLOAT32, CPU0, &arg[0].array) == DP_OK && dp_nd_zeros(eng, &bs, DP_FLOAT32, CPU0, &arg[1].array) == DP_OK);
    CHECK(dp_nd_save_params(params, arg, 2, NULL) == DP_OK && dp_checkpoint_save(prefix, 1, net, arg, 2, NULL, 0, NULL) == DP_OK);
    dp_nd_release(arg[0].array); dp_nd_release(arg[1].array);
    CHECK(dp_engine_destroy(eng, NULL) == DP_OK);
    for (which = 0; which < 4; which++) {
        long at;
        int failed_some = 0;
        for (at = 1; at < 400; at++) {
            dp_engine_desc d;
            dp_engine *e = NULL;
            dp_result r = DP_OK;
            memset(&d, 0, sizeof d);
            d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.logger.func = quiet_logger;
            d.allocator.alloc = failing_alloc; d.allocator.free = failing_free;
            if (dp_engine_create(&d, &e) != DP_OK) { CHECK(0); return; }
            __atomic_store_n(&g_alloc_calls, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_alloc_failures, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_fail_at, at, __ATOMIC_RELEASE);
            g_last_item = 0;
            if (which == 0) { dp_ndarray *a = NULL; r = dp_nd_load_idx(e, gz, CPU0, &a); CHECK((r == DP_OK) == (a != NULL)); dp_nd_release(a); }
            else if (which == 1) { dp_nd_named got[2]; int n = 0; r = dp_nd_load_params(e, params, CPU0, got, 2, &n); for (i = 0; i < n; i++) dp_nd_release(got[i].array); }
            else if (which == 2) { dp_checkpoint ck; r = dp_checkpoint_load(e, prefix, 1, CPU0, NULL, &ck); dp_checkpoint_free(&ck); }
            else {
                dp_ndarray *data = NULL, *x = NULL, *y = NULL;
                dp_shape s = {3, {5, 2, 3}};
                dp_image_iter *it = NULL;
                dp_image_iter_desc id;
                __atomic_store_n(&g_fail_at, 0, __ATOMIC_RELEASE);
                CHECK(dp_nd_from_host(e, &s, DP_UINT8, CPU0, px, &data) == DP_OK);
                __atomic_store_n(&g_alloc_calls, 0, __ATOMIC_RELEASE);
                __atomic_store_n(&g_fail_at, at, __ATOMIC_RELEASE);
                memset(&id, 0, sizeof id);
                id.data = data; id.batch_size = 2; id.shuffle = 1;
                r = dp_image_iter_create(&id, &it);
                for (i = 0; r == DP_OK && i < 4; i++) {
                    r = dp_image_iter_next(it, &x, &y, NULL);
                    dp_nd_release(x); dp_nd_release(y); x = y = NULL;
                }
                dp_image_iter_destroy(it);
                dp_nd_release(data);
            }
            __atomic_store_n(&g_fail_at, 0, __ATOMIC_RELEASE);
            if (r != DP_OK) {
                failed_some = 1;
                if (r != DP_ERROR_OUT_OF_MEMORY || g_last_item != DP_LOGITEM_OUT_OF_MEMORY) {
                    fprintf(stderr, "  call %d, allocation %ld failed: %s, log item %u\n", which, at, dp_result_string(r), (unsigned)g_last_item);
                    CHECK(0);
                }
            }
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
            CHECK(__atomic_load_n(&g_live_alloc_bytes, __ATOMIC_ACQUIRE) == 0);
            if (__atomic_load_n(&g_alloc_failures, __ATOMIC_ACQUIRE) == 0) break;   /* past the last allocation */
        }
        CHECK(failed_some);
    }
    remove(gz); remove(params);
    snprintf(gz, sizeof gz, "%s-0001.params", prefix); remove(gz);
    snprintf(gz, sizeof gz, "%s-symbol.json", prefix); remove(gz);
    dp_sym_release(net);
}

int main(void) {
    dp_logger quiet;
    static const test_case tests[] = {
        {"idx_types", test_idx_types},
        {"idx_gzip", test_idx_gzip},
        {"idx_malformed", test_idx_malformed},
        {"mnist_pair", test_mnist_pair},
        {"fashion_mnist_files", test_fashion_mnist_files},
        {"image_iter_last_batch", test_image_iter_last_batch},
        {"image_iter_shuffle_and_parts", test_image_iter_shuffle_and_parts},
        {"image_iter_augment", test_image_iter_augment},
        {"image_iter_refused", test_image_iter_refused},
        {"params_byte_vector", test_params_byte_vector},
        {"params_round_trip", test_params_round_trip},
        {"params_malformed", test_params_malformed},
        {"checkpoint", test_checkpoint},
        {"out_of_memory", test_out_of_memory},
    };
    memset(&quiet, 0, sizeof quiet);
    quiet.func = quiet_logger;
    dp_set_default_logger(&quiet);      /* NULL-argument errors go there; the tests read dp_last_error */
    (void)run_tests;
    return run_tests_with_skips("test_data", tests, (int)(sizeof tests / sizeof tests[0]), &g_skipped,
                                "Fashion-MNIST not installed (tests/fashion_mnist_deps.sh installs dataset-fashion-mnist)");
}
