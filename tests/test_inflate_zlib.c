/* The header's inflater and deflater against zlib (the reference deflate
   implementation, linked for this test only: tests/zlib_deps.sh installs
   zlib1g-dev when it is missing; the library itself never needs zlib).
   - zlib's raw deflate output, for every level and strategy and several
     window sizes, over random, text-like, run-heavy and float inputs and
     edge sizes, inflates to the input;
   - our deflate output, every level, inflates in zlib to the input;
   - mutated and truncated streams get the same verdict from both: ours
     succeeds exactly when zlib ends the stream (Z_STREAM_END) within the
     same output room, and then with the same bytes.
   The last line is "test_inflate_zlib: N passed, M failed". */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "tests/test_common.h"
#include <string.h>
#include <time.h>
#include <zlib.h>

static dp__deflate_work g_work;
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

/* Input kinds: 0 random bytes, 1 text-like (few symbols, repeats), 2 long
   runs, 3 float32 values of a noisy signal, 4 all zeros. */
static void fill(unsigned char *p, size_t n, int kind) {
    size_t i;
    for (i = 0; i < n; i++) {
        switch (kind) {
        case 0: p[i] = (unsigned char)rnd(); break;
        case 1: p[i] = (unsigned char)("the quick brown fox, "[(i * 7 + rnd() % 3) % 21]); break;
        case 2: p[i] = (unsigned char)(i / (1 + rnd() % 300) % 4); break;
        case 3:
            if (i % 4 == 0 && i + 4 <= n) {
                float f = (float)((double)(i % 4096) * 0.25 + (double)(rnd() % 8));
                memcpy(p + i, &f, 4);
                i += 3;
            } else p[i] = 0;
            break;
        default: p[i] = 0; break;
        }
    }
}

/* zlib's raw deflate of in (window 2^wbits). Returns the size. */
static size_t zlib_deflate(const unsigned char *in, size_t n, unsigned char *out, size_t cap, int level, int strategy, int wbits) {
    z_stream z;
    size_t got;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, level, Z_DEFLATED, -wbits, 8, strategy) != Z_OK) return 0;
    z.next_in = (Bytef *)(uintptr_t)in; z.avail_in = (uInt)n;
    z.next_out = out; z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) { deflateEnd(&z); return 0; }
    got = z.total_out;
    deflateEnd(&z);
    return got;
}

/* zlib's verdict on a raw stream with cap bytes of room: 1 and *got when
   it reaches the end of the stream, 0 otherwise. */
static int zlib_inflate(const unsigned char *in, size_t n, unsigned char *out, size_t cap, size_t *got) {
    z_stream z;
    int r;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK) return 0;
    z.next_in = (Bytef *)(uintptr_t)in; z.avail_in = (uInt)n;
    z.next_out = out; z.avail_out = (uInt)cap;
    r = inflate(&z, Z_FINISH);
    *got = z.total_out;
    inflateEnd(&z);
    return r == Z_STREAM_END;
}

static const size_t g_sizes[] = {0, 1, 2, 3, 4, 257, 258, 259, 1000, 32767, 32768, 32769, 65535, 65536, 65537, 200000};

static void test_zlib_streams_inflate(void) {
    static const int strategies[] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
    size_t si, cap = 300000;
    unsigned char *in = (unsigned char *)malloc(cap), *packed = (unsigned char *)malloc(cap * 2), *out = (unsigned char *)malloc(cap);
    int kind, level, st, cases = 0, bad = 0;
    for (si = 0; si < sizeof g_sizes / sizeof g_sizes[0]; si++)
        for (kind = 0; kind < 5; kind++) {
            fill(in, g_sizes[si], kind);
            for (level = 0; level <= 9; level++)
                for (st = 0; st < 5; st++) {
                    int wbits = 9 + (level + st) % 7;         /* windows of 512 B .. 32 KiB */
                    size_t plen = zlib_deflate(in, g_sizes[si], packed, cap * 2, level, strategies[st], wbits), got = 0;
                    char msg[200];
                    int ok;
                    if (plen == 0 && g_sizes[si] > 0) { bad++; continue; }
                    ok = dp__inflate(packed, plen, out, g_sizes[si], &got, msg, sizeof msg) == DP_OK && got == g_sizes[si]
                         && (got == 0 || memcmp(out, in, got) == 0);
                    if (!ok && bad++ < 5) fprintf(stderr, "  size %zu kind %d level %d strategy %d: %s\n", g_sizes[si], kind, level, st, msg);
                    cases++;
                }
        }
    CHECK(bad == 0);
    printf("  %d zlib streams inflated\n", cases);
    free(in); free(packed); free(out);
}

static void test_our_streams_in_zlib(void) {
    size_t si, cap = 300000;
    unsigned char *in = (unsigned char *)malloc(cap), *packed = (unsigned char *)malloc(dp__deflate_bound(cap)), *out = (unsigned char *)malloc(cap);
    int kind, level, bad = 0, cases = 0;
    for (si = 0; si < sizeof g_sizes / sizeof g_sizes[0]; si++)
        for (kind = 0; kind < 5; kind++) {
            fill(in, g_sizes[si], kind);
            for (level = 1; level <= 9; level++) {
                size_t plen = 0, got = 0;
                int ok = dp__deflate(&g_work, in, g_sizes[si], packed, dp__deflate_bound(g_sizes[si]), level, &plen) == DP_OK
                         && plen <= dp__deflate_bound(g_sizes[si])
                         && zlib_inflate(packed, plen, out, g_sizes[si], &got) && got == g_sizes[si] && (got == 0 || memcmp(out, in, got) == 0);
                if (!ok && bad++ < 5) fprintf(stderr, "  size %zu kind %d level %d: zlib does not get the input back\n", g_sizes[si], kind, level);
                cases++;
            }
        }
    CHECK(bad == 0);
    printf("  %d of our streams inflated by zlib\n", cases);
    free(in); free(packed); free(out);
}

/* Flipped bits, replaced bytes and cut streams, from both deflaters, and
   pure noise: the same verdict as zlib, within the same output room. */
static void test_hostile_streams_same_verdict(void) {
    enum { N = 6000, ROOM = 9000 };
    static unsigned char in[N], packed[2 * N + 64], mutated[2 * N + 64], ours[ROOM], theirs[ROOM];
    int trial, disagree = 0, accepted = 0;
    for (trial = 0; trial < 30000; trial++) {
        size_t n = 1 + rnd() % N, plen = 0, cut, room, got_ours = 0, got_theirs = 0, k;
        int kind = (int)(rnd() % 5), z_ok, d_ok;
        char msg[200];
        fill(in, n, kind);
        if (trial % 3 == 0) (void)dp__deflate(&g_work, in, n, packed, sizeof packed, 1 + (int)(rnd() % 9), &plen);
        else plen = zlib_deflate(in, n, packed, sizeof packed, (int)(rnd() % 10), trial % 3 == 1 ? Z_DEFAULT_STRATEGY : Z_FIXED, 15);
        if (trial % 50 == 0) { plen = 1 + rnd() % 200; for (k = 0; k < plen; k++) packed[k] = (unsigned char)rnd(); }
        memcpy(mutated, packed, plen);
        for (k = rnd() % 4; k > 0 && plen > 0; k--) {
            size_t at = rnd() % plen;
            if (rnd() % 2) mutated[at] ^= (unsigned char)(1u << (rnd() % 8));
            else mutated[at] = (unsigned char)rnd();
        }
        cut = rnd() % 8 == 0 && plen > 0 ? rnd() % plen : plen;
        room = rnd() % 6 == 0 ? rnd() % (n + 1) : ROOM;
        d_ok = dp__inflate(mutated, cut, ours, room, &got_ours, msg, sizeof msg) == DP_OK;
        z_ok = zlib_inflate(mutated, cut, theirs, room, &got_theirs);
        if (d_ok != z_ok || (d_ok && (got_ours != got_theirs || memcmp(ours, theirs, got_ours) != 0))) {
            if (disagree++ < 5) fprintf(stderr, "  trial %d: ours %s (%zu bytes: %s), zlib %s (%zu bytes)\n", trial, d_ok ? "ok" : "refused",
                                        got_ours, d_ok ? "" : msg, z_ok ? "ok" : "refused", got_theirs);
        }
        accepted += d_ok;
    }
    CHECK(disagree == 0);
    printf("  30000 hostile streams: same verdict as zlib (%d accepted by both)\n", accepted);
}

/* The compression ratio and speed next to zlib's, on the digits data set
   and on a noisy float32 signal (figures only: machines differ). */
static void test_ratio_next_to_zlib(void) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    dp_ndarray *x = NULL, *y = NULL;
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    size_t n = 1u << 22, k;
    float *sig = (float *)malloc(n);
    int which;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_NAIVE; d.ignore_env = 1; d.logger.func = quiet_logger;
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    CHECK(dp_nd_load_csv(e, "data/digits.csv", -1, cpu, NULL, &x, &y) == DP_OK);
    for (k = 0; k < n / 4; k++) sig[k] = (float)(sin((double)k / 500.0) * 50.0 + (double)(rnd() % 100) / 10.0);
    for (which = 0; x && which < 2; which++) {
        const unsigned char *in = which == 0 ? (const unsigned char *)dp_nd_data(x) : (const unsigned char *)sig;
        size_t len = which == 0 ? dp_nd_bytes(x) : n, ours = 0, theirs, cap = dp__deflate_bound(len) + compressBound((uLong)len);
        unsigned char *buf = (unsigned char *)malloc(cap);
        clock_t t0 = clock(), t1, t2;
        CHECK(dp__deflate(&g_work, in, len, buf, cap, 6, &ours) == DP_OK);
        t1 = clock();
        theirs = zlib_deflate(in, len, buf, cap, 6, Z_DEFAULT_STRATEGY, 15);
        t2 = clock();
        CHECK(ours < theirs + theirs / 10);   /* within 10% of zlib's size */
        printf("  level 6, %s (%zu bytes): ours %zu (%.3f, %.0f MB/s), zlib %zu (%.3f, %.0f MB/s)\n",
               which == 0 ? "digits float32" : "noisy sine float32", len, ours, (double)ours / (double)len,
               (double)len / 1e6 / ((double)(t1 - t0) / CLOCKS_PER_SEC + 1e-9), theirs, (double)theirs / (double)len,
               (double)len / 1e6 / ((double)(t2 - t1) / CLOCKS_PER_SEC + 1e-9));
        free(buf);
    }
    free(sig);
    dp_nd_release(x); dp_nd_release(y);
    dp_engine_destroy(e, NULL);
}

int main(void) {
    static const test_case tests[] = {
        {"zlib_streams_inflate", test_zlib_streams_inflate},
        {"our_streams_in_zlib", test_our_streams_in_zlib},
        {"hostile_streams_same_verdict", test_hostile_streams_same_verdict},
        {"ratio_next_to_zlib", test_ratio_next_to_zlib},
    };
    return run_tests("test_inflate_zlib", tests, (int)(sizeof tests / sizeof tests[0]));
}
