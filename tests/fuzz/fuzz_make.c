/* libFuzzer harness for the Makefile parser of examples/make.c, which is
   compiled in here with its main renamed. The input is the rule file. A
   parse that succeeds must give rules whose targets point back at them,
   prerequisites that are known nodes, node names that are unique and hold
   no blank, and commands that are not empty or comments; a parse that
   fails has printed make's message. Everything is freed after each input
   (the example keeps it until exit), so LeakSanitizer checks the parser. */
#define main make_main
#include "examples/make.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAKE_CHECK(c) do { if (!(c)) { fprintf(stderr, "MAKE_CHECK failed %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

static void check_rules(void) {
    int i, k;
    for (i = 0; i < nnodes; i++) {
        MAKE_CHECK(nodes[i].name[0] != '\0' && strpbrk(nodes[i].name, " \t") == NULL);
        MAKE_CHECK(nodes[i].rule >= -1 && nodes[i].rule < nrules);
        for (k = 0; k < i; k++) MAKE_CHECK(strcmp(nodes[k].name, nodes[i].name) != 0);
    }
    for (i = 0; i < nrules; i++) {
        const rule *r = &rules[i];
        MAKE_CHECK(r->target >= 0 && r->target < nnodes && nodes[r->target].rule == i);
        MAKE_CHECK(strchr(nodes[r->target].name, ':') == NULL);
        for (k = 0; k < r->nprereqs; k++) MAKE_CHECK(r->prereqs[k] >= 0 && r->prereqs[k] < nnodes);
        for (k = 0; k < r->ncmds; k++) MAKE_CHECK(r->cmds[k][0] != '\0' && r->cmds[k][0] != '#');
    }
}
static void free_rules(void) {
    int i, k;
    for (i = 0; i < nrules; i++) {
        for (k = 0; k < rules[i].ncmds; k++) free(rules[i].cmds[k]);
        free(rules[i].cmds);
        free(rules[i].prereqs);
    }
    for (i = 0; i < nnodes; i++) free(nodes[i].name);
    free(rules); free(nodes);
    rules = NULL; nodes = NULL; nrules = nnodes = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f;
    if (size == 0) return 0;                 /* fmemopen needs a buffer of at least one byte */
    f = fmemopen((void *)(uintptr_t)data, size, "r");
    MAKE_CHECK(f != NULL);
    if (parse_stream(f, "fuzz.dp") == 0) check_rules();
    fclose(f);
    free_rules();
    return 0;
}
