/* libFuzzer harness for the Makefile parser of examples/make.c, compiled in
   here with -DMAKE_NO_MAIN (set below). The input is a Makefile, parsed from
   memory with include switched off (an input could otherwise name a file
   that blocks). A parse that fails must say why, as GNU make does
   ("file:line: *** message.  Stop."); one that succeeds must leave a graph
   whose prerequisites are known nodes and whose names are unique and
   non-empty. Everything is freed after each input, so LeakSanitizer checks
   the parser too. */
#define MAKE_NO_MAIN
#include "examples/make.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAKE_CHECK(c) do { if (!(c)) { fprintf(stderr, "MAKE_CHECK failed %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

static void check_graph(const mk_make *m) {
    int i, k;
    for (i = 0; i < m->nnodes; i++) {
        const node *d = &m->nodes[i];
        MAKE_CHECK(d->name != NULL && d->name[0] != '\0');
        for (k = 0; k < d->npre; k++) MAKE_CHECK(d->pre[k] >= 0 && d->pre[k] < m->nnodes);
        for (k = 0; k < d->noo; k++) MAKE_CHECK(d->oo[k] >= 0 && d->oo[k] < m->nnodes);
    }
    /* names are unique (the first 64, pairwise), but for a :: rule's nodes:
       they carry their target's name (their key in the map is an alias) */
    for (i = 0; i < m->nnodes && i < 64; i++)
        for (k = 0; k < i; k++)
            if (!m->nodes[i].dcolon && !m->nodes[k].dcolon) MAKE_CHECK(strcmp(m->nodes[k].name, m->nodes[i].name) != 0);
    MAKE_CHECK(m->default_goal >= -1 && m->default_goal < m->nnodes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mk_make *m = mk_new();
    m->refuse_includes = 1;
    if (mk_parse_buffer(m, "fuzz.mk", (const char *)data, size) == 0) check_graph(m);
    else MAKE_CHECK(strstr(mk_error(m), "fuzz.mk") != NULL && strstr(mk_error(m), "***") != NULL);
    mk_free(m);
    return 0;
}
