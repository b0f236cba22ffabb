/* tests/chrome_trace.c - writes a profiler trace (dp_profiler_dump_chrome)
   for tests/chrome_trace_check.sh to parse: ops on two CPU devices of the
   per-device engine (two processes in the trace) and on the naive engine
   (run inline on the caller's thread), with names that need escaping: a
   quote, a backslash, a control character, "</script>", U+2028 and a
   multi-byte character cut by the profiler's 39-byte name limit.
   Usage: chrome_trace PERDEVICE.json NAIVE.json */
#include "depeng.h"

#include <string.h>

static int nop(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; return 0; }

static const char *names[] = {
    "quote\" backslash\\ tab\t end",
    "</script><!-- & more",
    "line\xe2\x80\xa8separator",
    /* 38 ASCII bytes, then a 3-byte character: the kept 39 bytes cut it */
    "abcdefghijklmnopqrstuvwxyz0123456789AB\xe2\x82\xac",
};

static int push_all(dp_engine *eng, int dev_id, dp_var v) {
    dp_push_desc d;
    size_t i;
    memset(&d, 0, sizeof d);
    d.fn = nop; d.writes = &v; d.num_writes = 1;
    d.ctx.dev_type = DP_DEV_CPU; d.ctx.dev_id = dev_id;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        d.name = names[i];
        if (dp_push(eng, &d) != DP_OK) return -1;
    }
    return 0;
}

static int run(dp_engine_type type, int ndev, FILE *out) {
    dp_engine_desc desc;
    dp_engine *eng = NULL;
    dp_var v;
    int dev, bad = 0;
    memset(&desc, 0, sizeof desc);
    desc.type = type; desc.cpu_worker_nthreads = 2; desc.ignore_env = 1;
    if (dp_engine_create(&desc, &eng) != DP_OK) return -1;
    v = dp_var_create(eng);
    dp_profiler_start(eng);
    for (dev = 0; dev < ndev; dev++) bad |= push_all(eng, dev, v);
    bad |= dp_wait_all(eng, NULL) != DP_OK;
    dp_profiler_stop(eng);
    bad |= dp_profiler_dump_chrome(eng, out) != DP_OK;
    bad |= dp_engine_destroy(eng, NULL) != DP_OK;
    return bad ? -1 : 0;
}

int main(int argc, char **argv) {
    FILE *f;
    int bad;
    if (argc != 3) { fprintf(stderr, "usage: chrome_trace PERDEVICE.json NAIVE.json\n"); return 2; }
    if (!(f = fopen(argv[1], "w"))) { perror(argv[1]); return 1; }
    bad = run(DP_ENGINE_PERDEVICE, 2, f);
    bad |= fclose(f) != 0;
    if (!(f = fopen(argv[2], "w"))) { perror(argv[2]); return 1; }
    bad |= run(DP_ENGINE_NAIVE, 1, f);
    bad |= fclose(f) != 0;
    if (bad) fprintf(stderr, "chrome_trace: an engine call failed\n");
    return bad ? 1 : 0;
}
