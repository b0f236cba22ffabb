/* libFuzzer harness for the header's inflater and deflater (the codec
   behind deflated .npz members). The first input byte picks the output
   room (0..255 times 257 bytes) and the deflate level; the rest is used
   twice:
   - as a raw deflate stream: inflating it must either fail with a message
     or succeed having written no more than the room given, and the bytes
     past what it reports written must be untouched (a canary);
   - as plain data: deflating it must fit dp__deflate_bound, and inflating
     the result must give the data back exactly. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* aborts, so that libFuzzer saves the input (as in fuzz_common.h, whose
   engine and file helpers this harness has no use for) */
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "FUZZ_CHECK failed %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static dp__deflate_work work;

static void inflate_hostile(const uint8_t *in, size_t n, size_t room) {
    unsigned char *out = (unsigned char *)malloc(room + 64);
    char msg[200];
    size_t got = 12345, i;
    dp_result r;
    FUZZ_CHECK(out != NULL);
    memset(out, 0xA5, room + 64);
    msg[0] = 0;
    r = dp__inflate(in, n, out, room, &got, msg, sizeof msg);
    FUZZ_CHECK(got <= room);
    if (r != DP_OK) FUZZ_CHECK(r == DP_ERROR_FORMAT && msg[0] != 0);
    for (i = room; i < room + 64; i++) FUZZ_CHECK(out[i] == 0xA5);
    free(out);
}

static void round_trip(const uint8_t *in, size_t n, int level) {
    size_t cap = dp__deflate_bound(n), packed_len = 0, got = 0;
    unsigned char *packed = (unsigned char *)malloc(cap), *back = (unsigned char *)malloc(n + 1);
    char msg[200];
    FUZZ_CHECK(packed != NULL && back != NULL);
    FUZZ_CHECK(dp__deflate(&work, in, n, packed, cap, level, &packed_len) == DP_OK);
    FUZZ_CHECK(packed_len <= cap);
    FUZZ_CHECK(dp__inflate(packed, packed_len, back, n, &got, msg, sizeof msg) == DP_OK);
    FUZZ_CHECK(got == n && (n == 0 || memcmp(back, in, n) == 0));
    free(packed);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    inflate_hostile(data + 1, size - 1, (size_t)data[0] * 257u);
    round_trip(data + 1, size - 1, 1 + data[0] % 9);
    return 0;
}
