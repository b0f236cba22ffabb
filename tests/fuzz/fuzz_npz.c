/* libFuzzer harness for dp_nd_load_npz. The input is the file. Random
   mutations of a ZIP almost never keep its CRC-32s and sizes right, so the
   loader would stop at the CRC check; the custom mutator below re-frames
   most mutants (7 in 8; the rest keep their stale CRCs to test that check):
   each local header's member runs to the next ZIP signature, its sizes and
   CRC are rewritten in the local header and in the directory entry that
   points at it, and the end record points at the directory again. A
   deflated member (method 8) keeps its stream as mutated: when the header's
   inflater takes it, its plain size and CRC become those of what it
   inflates to (so mutants get past the CRC check into the .npy parser),
   and otherwise they are left for the loader to refuse. A load
   that succeeds must give at most cap named members whose arrays' byte
   sizes match their shapes; a failed load must leave *count 0 and have
   logged an error. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "tests/fuzz/fuzz_common.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { LOCAL_SIG = 0x04034b50, CENTRAL_SIG = 0x02014b50, END_SIG = 0x06054b50, MAX_MEMBERS = 16 };

static uint32_t get16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t get32(const uint8_t *p) { return get16(p) | get16(p + 2) << 16; }
static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }
static int is_sig(const uint8_t *data, size_t size, size_t at) {
    uint32_t s;
    if (at + 4 > size) return 0;
    s = get32(data + at);
    return s == LOCAL_SIG || s == CENTRAL_SIG || s == END_SIG;
}
/* Writes the CRC and sizes at a header's common fields (crc_field: the CRC
   field; packed: the member's bytes in the archive, plain: inflated), or
   into its zip64 extra field where the 32-bit ones are placeholders. */
static void set_sizes(uint8_t *crc_field, uint8_t *extra, size_t extra_len, uint32_t crc, uint64_t packed, uint64_t plain) {
    put32(crc_field, crc);
    if (get32(crc_field + 4) == 0xFFFFFFFFu && get32(crc_field + 8) == 0xFFFFFFFFu) {
        size_t pos = 0;
        while (pos + 4 <= extra_len) {
            size_t len = get16(extra + pos + 2);
            if (get16(extra + pos) == 1 && len >= 16 && pos + 4 + len <= extra_len) {
                put64(extra + pos + 4, plain); put64(extra + pos + 12, packed);
                return;
            }
            pos += 4 + len;
        }
    }
    put32(crc_field + 4, (uint32_t)packed); put32(crc_field + 8, (uint32_t)plain);
}
/* The CRC and plain size of a member's bytes: the bytes themselves when
   stored, what they inflate to (into at most 1 MiB) when deflated. A
   stream that does not inflate keeps the member's stored CRC and size. */
static void member_sums(const uint8_t *method_field, const uint8_t *bytes, size_t n, uint32_t *crc, uint64_t *plain) {
    static unsigned char room[1u << 20];
    char msg[160];
    size_t got = 0;
    if (get16(method_field) != 8) {
        *crc = dp__crc32(0, bytes, n);
        *plain = n;
    } else if (dp__inflate(bytes, n, room, sizeof room, &got, msg, sizeof msg) == DP_OK) {
        *crc = dp__crc32(0, room, got);
        *plain = got;
    } else {
        *crc = get32(method_field + 6);
        *plain = get32(method_field + 14);
    }
}
static void reframe(uint8_t *data, size_t size) {
    size_t local_at[MAX_MEMBERS], data_end[MAX_MEMBERS], pos, cd = 0, end = 0;
    uint32_t crcs[MAX_MEMBERS];
    uint64_t plains[MAX_MEMBERS];
    int n = 0, entries = 0;
    for (pos = 0; pos + 30 <= size && n < MAX_MEMBERS; pos++) {
        size_t start, stop, name_len, extra_len;
        if (get32(data + pos) != LOCAL_SIG) continue;
        name_len = get16(data + pos + 26); extra_len = get16(data + pos + 28);
        start = pos + 30 + name_len + extra_len;
        if (start > size) break;
        for (stop = start; stop < size && !is_sig(data, size, stop); stop++) {}
        member_sums(data + pos + 8, data + start, stop - start, &crcs[n], &plains[n]);
        set_sizes(data + pos + 14, data + pos + 30 + name_len, extra_len, crcs[n], stop - start, plains[n]);
        local_at[n] = pos; data_end[n++] = stop;
        pos = stop - 1;
    }
    for (pos = 0; pos + 46 <= size; pos++) {
        size_t name_len, extra_len, comment_len;
        if (get32(data + pos) != CENTRAL_SIG) continue;
        if (!entries) cd = pos;
        entries++;
        name_len = get16(data + pos + 28); extra_len = get16(data + pos + 30); comment_len = get16(data + pos + 32);
        if (entries <= n) {                /* the k-th directory entry describes the k-th member */
            int k = entries - 1;
            size_t extra_at = pos + 46 + name_len;
            if (get32(data + pos + 42) != 0xFFFFFFFFu) put32(data + pos + 42, (uint32_t)local_at[k]);
            if (extra_at + extra_len <= size)
                set_sizes(data + pos + 16, data + extra_at, extra_len, crcs[k],
                          data_end[k] - (local_at[k] + 30 + get16(data + local_at[k] + 26) + get16(data + local_at[k] + 28)),
                          plains[k]);
        }
        end = pos + 46 + name_len + extra_len + comment_len;
    }
    for (pos = size >= 22 ? size - 22 : 0; size >= 22; pos--) {   /* the end record */
        if (get32(data + pos) == END_SIG) {
            if (entries) {
                data[pos + 8] = data[pos + 10] = (uint8_t)entries;
                data[pos + 9] = data[pos + 11] = (uint8_t)(entries >> 8);
                put32(data + pos + 12, (uint32_t)((end < pos ? end : pos) - cd));
                put32(data + pos + 16, (uint32_t)cd);
            }
            break;
        }
        if (pos == 0) break;
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    size = LLVMFuzzerMutate(data, size, max_size);
    if (seed % 8 != 0) reframe(data, size);
    return size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const dp_ctx cpu = {DP_DEV_CPU, 0};
    dp_engine *eng = fuzz_engine();
    const char *path = fuzz_write_input(".npz", data, size);
    unsigned long logged = fuzz_errors_logged;
    dp_nd_named out[MAX_MEMBERS];
    int count = -1, i;
    dp_result r = dp_nd_load_npz(eng, path, cpu, out, MAX_MEMBERS, &count);
    if (r != DP_OK) {
        FUZZ_CHECK(count == 0 && fuzz_errors_logged > logged);
        return 0;
    }
    FUZZ_CHECK(count >= 0 && count <= MAX_MEMBERS);
    for (i = 0; i < count; i++) {
        unsigned char *bytes;
        FUZZ_CHECK(out[i].array != NULL && out[i].name[0] != 0 && memchr(out[i].name, 0, sizeof out[i].name) != NULL);
        bytes = fuzz_array_bytes(out[i].array);
        free(bytes);
        dp_nd_release(out[i].array);
    }
    return 0;
}
