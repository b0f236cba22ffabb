/* tests/html_pages.c - writes replay pages (dp_trace_write_html) that
   tests/html_check.sh opens in a headless browser:
     DIR/html_hostile.html  op names, a variable name, a caption and a title
                            that try to end the script or inject markup, a
                            U+2028, bytes that are not UTF-8, a long name;
     DIR/html_capped.html   a recorder capped at 5 events, no graph recorded.
   Usage: html_pages DIR */
#define DEPENG_TRACE_HTML      /* the replay page (dp_trace_write_html) */
#include "depeng.h"

#include <string.h>

static int nop(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; return 0; }

static const char *hostile[] = {
    "</script><script>document.title='pwned'</script>",
    "<!-- <script>",
    "line\xe2\x80\xa8separator",
    "quote\" apostrophe' backslash\\",
    "bad \xff\xfe bytes",
};

static int write_page(const char *dir, const char *file, size_t max_events, int graph, const char *title) {
    char path[512], longname[301];
    dp_trace_recorder *rec = NULL;
    dp_engine_desc desc;
    dp_engine *eng = NULL;
    dp_push_desc d;
    dp_var v[2];
    FILE *f;
    size_t i;
    int bad = 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    memset(longname, 'x', 300); longname[300] = 0;
    if (dp_trace_recorder_create(NULL, max_events, &rec) != DP_OK) return 1;
    memset(&desc, 0, sizeof desc);
    desc.type = DP_ENGINE_NAIVE; desc.ignore_env = 1;
    desc.trace.func = dp_trace_recorder_event; desc.trace.user = rec; desc.trace.record_graph = graph;
    if (dp_engine_create(&desc, &eng) != DP_OK) { dp_trace_recorder_destroy(rec); return 1; }
    v[0] = dp_var_create(eng); v[1] = dp_var_create(eng);
    bad |= dp_trace_recorder_name_var(rec, v[0], "<b>bold</b> & <i>") != DP_OK;
    bad |= dp_trace_recorder_mark(rec, "</pre><h1>injected</h1>") != DP_OK;
    memset(&d, 0, sizeof d);
    d.fn = nop; d.reads = &v[1]; d.num_reads = 1; d.writes = &v[0]; d.num_writes = 1;
    for (i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        d.name = hostile[i];
        bad |= dp_push(eng, &d) != DP_OK;
    }
    d.name = longname;
    bad |= dp_push(eng, &d) != DP_OK;
    bad |= dp_wait_all(eng, NULL) != DP_OK;
    if (!(f = fopen(path, "w"))) { perror(path); bad = 1; }
    else {
        bad |= dp_trace_write_html(eng, rec, title, f) != DP_OK;
        bad |= fclose(f) != 0;
    }
    bad |= dp_engine_destroy(eng, NULL) != DP_OK;
    dp_trace_recorder_destroy(rec);
    return bad;
}

int main(int argc, char **argv) {
    int bad;
    if (argc != 2) { fprintf(stderr, "usage: html_pages DIR\n"); return 2; }
    bad = write_page(argv[1], "html_hostile.html", 0, 1, "</title><script>document.title='pwned'</script>");
    bad |= write_page(argv[1], "html_capped.html", 5, 0, NULL);
    if (bad) fprintf(stderr, "html_pages: an engine or recorder call failed\n");
    return bad;
}
