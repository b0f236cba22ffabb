/* depeng memory planning tests: the planner (dpn__plan_memory, in the
   header's >>memory planning section) against a checker written here from
   the definition of liveness alone, on hand-made and thousands of random
   graphs; the checker itself shown to reject broken plans; the planner's
   choices (in place, best fit, early release); argument errors; and the
   bytes planned against one buffer per entry for MLP training graphs
   (forward and backward), built with the operators' registered in-place
   bits and gradient inputs. The last line is
   "memory_plan: N passed, M failed". */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
#include "tests/test_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

/* ---- graphs ---------------------------------------------------------------- */
enum { MAX_ENTRIES = 512, MAX_NODES = 256, MAX_IDS = 4096 };
typedef struct graph {
    int ne, nn, nids;
    size_t bytes[MAX_ENTRIES];
    unsigned char ext[MAX_ENTRIES];
    dpn__plan_node nodes[MAX_NODES];
    int ids[MAX_IDS];
} graph;
typedef struct plan {
    dp_result rc;
    int64_t offset[MAX_ENTRIES];
    size_t arena, unplanned;
} plan;

static graph *graph_new(void) { graph *g = (graph *)calloc(1, sizeof *g); if (!g) abort(); return g; }
static int add_entry(graph *g, size_t bytes, int external) {
    if (g->ne >= MAX_ENTRIES) abort();
    g->bytes[g->ne] = bytes; g->ext[g->ne] = (unsigned char)(external != 0);
    return g->ne++;
}
static void add_node(graph *g, int nin, const int *in, int nout, const int *out, unsigned inplace) {
    dpn__plan_node *d;
    if (g->nn >= MAX_NODES || g->nids + nin + nout > MAX_IDS) abort();
    d = &g->nodes[g->nn++];
    memcpy(g->ids + g->nids, in, sizeof(int) * (size_t)nin);
    d->inputs = g->ids + g->nids; d->num_inputs = nin; g->nids += nin;
    memcpy(g->ids + g->nids, out, sizeof(int) * (size_t)nout);
    d->outputs = g->ids + g->nids; d->num_outputs = nout; g->nids += nout;
    d->inplace = inplace;
}
static void plan_graph(const graph *g, plan *p) {
    p->arena = p->unplanned = 12345;
    p->rc = dpn__plan_memory(g->ne, g->bytes, g->ext, g->nn, g->nodes, p->offset, &p->arena, &p->unplanned);
}
static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

/* ---- the independent checker ---------------------------------------------------
   Liveness from the definition: a planned entry is alive from the node that
   writes it to the last node that reads it (just that node if nobody reads
   it); one that no node writes is alive throughout. Two entries alive at the
   same node must not share a byte, except output 0 of node n over an input
   of n whose last read is n, with n's inplace bit for that input, the input
   written by an earlier node and at least as large, at the same offset. */
typedef struct liveness { int first[MAX_ENTRIES], last[MAX_ENTRIES]; } liveness;
static void compute_liveness(const graph *g, liveness *lv) {
    int e, n, j;
    for (e = 0; e < g->ne; e++) { lv->first[e] = -1; lv->last[e] = -1; }
    for (n = 0; n < g->nn; n++) {
        for (j = 0; j < g->nodes[n].num_outputs; j++) lv->first[g->nodes[n].outputs[j]] = n;
        for (j = 0; j < g->nodes[n].num_inputs; j++) lv->last[g->nodes[n].inputs[j]] = n;
    }
    for (e = 0; e < g->ne; e++) {
        if (lv->first[e] < 0) { lv->first[e] = -1; lv->last[e] = INT_MAX; }   /* never written: throughout */
        else if (lv->last[e] < lv->first[e]) lv->last[e] = lv->first[e];      /* never read: its node only */
    }
}
/* b is output 0 of node n and may sit on a, an input of n (see above). */
static int legal_inplace(const graph *g, const liveness *lv, const int64_t *off, int a, int b) {
    int n = lv->first[b], i;
    const dpn__plan_node *d;
    if (n < 0 || off[a] != off[b] || lv->last[a] != n || lv->first[a] < 0 || lv->first[a] >= n || g->bytes[b] > g->bytes[a]) return 0;
    d = &g->nodes[n];
    if (d->num_outputs < 1 || d->outputs[0] != b) return 0;
    for (i = 0; i < d->num_inputs && i < 32; i++)
        if (d->inputs[i] == a && (d->inplace >> i & 1u)) return 1;
    return 0;
}
/* 0 if the plan is sound; else -1 with the reason in why. *concurrent (may be
   NULL) gets the number of pairs of planned non-empty entries alive at the
   same time that are not a legal in-place pair. */
static int check_plan(const graph *g, const int64_t *off, size_t arena, size_t unplanned, char *why, size_t cap, long *concurrent) {
    liveness lv;
    size_t sum = 0;
    long pairs = 0;
    int a, b, bad = 0;
    compute_liveness(g, &lv);
    why[0] = 0;
    for (a = 0; a < g->ne; a++) {
        if (g->ext[a]) {
            if (off[a] != -1 && !bad) { snprintf(why, cap, "external entry %d has offset %lld", a, (long long)off[a]); bad = 1; }
            continue;
        }
        sum += round64(g->bytes[a]);
        if (!bad && (off[a] < 0 || off[a] % 64 != 0 || (uint64_t)off[a] + g->bytes[a] > arena)) {
            snprintf(why, cap, "entry %d: offset %lld (+%zu bytes) is not 64-aligned inside the arena of %zu", a, (long long)off[a], g->bytes[a], arena);
            bad = 1;
        }
    }
    if (!bad && sum != unplanned) { snprintf(why, cap, "unplanned bytes %zu, the entries add up to %zu", unplanned, sum); bad = 1; }
    if (!bad && arena > unplanned) { snprintf(why, cap, "arena %zu larger than one buffer per entry (%zu)", arena, unplanned); bad = 1; }
    for (a = 0; a < g->ne; a++)
        for (b = a + 1; b < g->ne; b++) {
            if (g->ext[a] || g->ext[b] || g->bytes[a] == 0 || g->bytes[b] == 0) continue;
            if (lv.last[a] < lv.first[b] || lv.last[b] < lv.first[a]) continue;         /* never alive together */
            if (legal_inplace(g, &lv, off, a, b) || legal_inplace(g, &lv, off, b, a)) continue;
            pairs++;
            if (!bad && off[a] < off[b] + (int64_t)g->bytes[b] && off[b] < off[a] + (int64_t)g->bytes[a]) {
                snprintf(why, cap, "entries %d (nodes %d..%d, bytes %lld+%zu) and %d (nodes %d..%d, bytes %lld+%zu) are alive together and overlap",
                         a, lv.first[a], lv.last[a], (long long)off[a], g->bytes[a], b, lv.first[b], lv.last[b], (long long)off[b], g->bytes[b]);
                bad = 1;
            }
        }
    if (concurrent) *concurrent = pairs;
    return bad ? -1 : 0;
}
/* The most bytes alive at one node, an in-place pair counted once: no
   layout with the same in-place choices can use less. */
static size_t peak_live_bytes(const graph *g, const int64_t *off) {
    liveness lv;
    size_t peak = 0;
    int t, e, a;
    compute_liveness(g, &lv);
    for (t = 0; t < g->nn; t++) {
        size_t live = 0;
        for (e = 0; e < g->ne; e++) {
            if (g->ext[e] || lv.first[e] > t || lv.last[e] < t) continue;
            live += round64(g->bytes[e]);
            for (a = 0; a < g->ne && lv.first[e] == t; a++)   /* e is born on a, which dies here: count one */
                if (a != e && !g->ext[a] && legal_inplace(g, &lv, off, a, e)) { live -= round64(g->bytes[e]); break; }
        }
        if (live > peak) peak = live;
    }
    return peak;
}

/* ---- random graphs ------------------------------------------------------------- */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17; return g_rng; }
static int rnd_below(int n) { return (int)(rnd() % (uint64_t)n); }
static size_t random_size(const graph *g, int like) {
    static const size_t common[] = {64, 100, 256, 1000, 4096, 4096, 8192, 65536};
    switch (rnd_below(6)) {
    case 0: return common[rnd_below(8)];
    case 1: return like >= 0 ? g->bytes[like] : 4096;                      /* element-wise: as large as its input */
    case 2: return like >= 0 && g->bytes[like] > 1 ? g->bytes[like] / 2 : 1;
    case 3: return rnd_below(20) == 0 ? 0 : (size_t)rnd_below(5000);
    case 4: return (size_t)rnd_below(200000);
    default: return common[rnd_below(5)];
    }
}
/* Arguments (external), maybe constants, then nodes reading mostly recent
   entries and writing one to three new ones, some of them external (heads,
   gradients the caller gives); random in-place bits. */
static void random_graph(graph *g) {
    int nargs = 1 + rnd_below(4), nconst = rnd_below(3), nnodes = 1 + rnd_below(48), i, n;
    memset(g, 0, sizeof *g);
    for (i = 0; i < nargs; i++) add_entry(g, random_size(g, -1), 1);
    for (i = 0; i < nconst; i++) add_entry(g, random_size(g, -1), 0);
    for (n = 0; n < nnodes; n++) {
        int in[6], out[3], nin = rnd_below(5) + (rnd_below(4) == 0 ? 0 : 1), nout = 1 + rnd_below(3) / 2 + (rnd_below(8) == 0);
        unsigned inplace = rnd_below(2) ? (unsigned)rnd() & ((1u << nin) - 1u) : 0;
        if (nin > 5) nin = 5;
        for (i = 0; i < nin; i++) {
            int back = rnd_below(3) ? rnd_below(4) : rnd_below(g->ne);   /* mostly the last few */
            in[i] = g->ne - 1 - (back < g->ne ? back : g->ne - 1);
            if (i > 0 && rnd_below(10) == 0) in[i] = in[0];              /* the same input twice */
        }
        for (i = 0; i < nout; i++) out[i] = add_entry(g, random_size(g, nin > 0 ? in[0] : -1), rnd_below(10) == 0);
        add_node(g, nin, in, nout, out, inplace);
    }
}

static graph *g_graph;
static plan g_plan;
static char g_why[512];

static void test_random_graphs_checked(void) {
    int k, planned_inplace = 0;
    double ratio_sum = 0, peak_sum = 0;
    int counted = 0;
    const int runs = 5000;
    g_rng = 0x5EEDull;
    for (k = 0; k < runs; k++) {
        random_graph(g_graph);
        plan_graph(g_graph, &g_plan);
        CHECK(g_plan.rc == DP_OK);
        if (g_plan.rc != DP_OK) return;
        if (check_plan(g_graph, g_plan.offset, g_plan.arena, g_plan.unplanned, g_why, sizeof g_why, NULL) != 0) {
            fprintf(stderr, "  graph %d: %s\n", k, g_why);
            CHECK(!"the checker rejects a plan");
            return;
        }
        if (g_plan.unplanned > 0) {
            size_t peak = peak_live_bytes(g_graph, g_plan.offset);
            liveness lv;
            int e, a;
            compute_liveness(g_graph, &lv);
            for (e = 0; e < g_graph->ne; e++)
                for (a = 0; a < g_graph->ne; a++)
                    if (a != e && !g_graph->ext[a] && !g_graph->ext[e] && g_graph->bytes[e] && legal_inplace(g_graph, &lv, g_plan.offset, a, e)) planned_inplace++;
            CHECK(g_plan.arena >= peak);
            ratio_sum += (double)g_plan.arena / (double)g_plan.unplanned;
            if (g_plan.arena > 0) peak_sum += (double)peak / (double)g_plan.arena;
            counted++;
        }
    }
    CHECK(planned_inplace > runs / 10);   /* the random graphs do exercise in-place reuse */
    printf("  %d random graphs: arena / unplanned %.3f on average, peak live / arena %.3f, %d outputs written in place\n", runs,
           ratio_sum / counted, peak_sum / counted, planned_inplace);
}

/* The checker must be able to say no: every offset 0, two entries alive
   together put on each other, a misaligned offset, an arena too small, a
   false in-place claim. */
static void test_checker_rejects_broken_plans(void) {
    int k, zero_rejected = 0, zero_expected = 0, moved_rejected = 0, moved_tried = 0;
    g_rng = 0xBADull;
    for (k = 0; k < 2000; k++) {
        long pairs = 0;
        liveness lv;
        int a, b, e, done = 0;
        int64_t saved;
        random_graph(g_graph);
        plan_graph(g_graph, &g_plan);
        CHECK(g_plan.rc == DP_OK);
        CHECK(check_plan(g_graph, g_plan.offset, g_plan.arena, g_plan.unplanned, g_why, sizeof g_why, &pairs) == 0);
        if (pairs > 0) {   /* all offsets 0 */
            static int64_t zero[MAX_ENTRIES];
            for (e = 0; e < g_graph->ne; e++) zero[e] = g_graph->ext[e] ? -1 : 0;
            zero_expected++;
            zero_rejected += check_plan(g_graph, zero, g_plan.arena, g_plan.unplanned, g_why, sizeof g_why, NULL) != 0;
        }
        compute_liveness(g_graph, &lv);   /* one entry moved onto another alive with it */
        for (a = 0; a < g_graph->ne && !done; a++)
            for (b = 0; b < g_graph->ne && !done; b++) {
                if (a == b || g_graph->ext[a] || g_graph->ext[b] || !g_graph->bytes[a] || !g_graph->bytes[b]) continue;
                if (lv.last[a] < lv.first[b] || lv.last[b] < lv.first[a] || g_plan.offset[a] == g_plan.offset[b]) continue;
                saved = g_plan.offset[b];
                g_plan.offset[b] = g_plan.offset[a];
                moved_tried++;
                moved_rejected += check_plan(g_graph, g_plan.offset, g_plan.arena, g_plan.unplanned, g_why, sizeof g_why, NULL) != 0;
                g_plan.offset[b] = saved;
                done = 1;
            }
        for (e = 0; e < g_graph->ne; e++)   /* misaligned, then past the arena */
            if (!g_graph->ext[e] && g_graph->bytes[e]) {
                g_plan.offset[e] += 8;
                CHECK(check_plan(g_graph, g_plan.offset, g_plan.arena, g_plan.unplanned, g_why, sizeof g_why, NULL) != 0);
                g_plan.offset[e] -= 8;
                CHECK(check_plan(g_graph, g_plan.offset, g_plan.offset[e] + g_graph->bytes[e] - 1, g_plan.unplanned, g_why, sizeof g_why, NULL) != 0);
                break;
            }
    }
    CHECK(zero_expected > 1000 && zero_rejected == zero_expected);
    CHECK(moved_tried > 1000 && moved_rejected == moved_tried);
    printf("  all-zero plans rejected %d/%d, one entry moved onto a live one rejected %d/%d\n", zero_rejected, zero_expected, moved_rejected, moved_tried);
    {   /* b claims a's bytes in place, but a node after b's still reads a */
        graph *g = g_graph;
        int x, a, b, c;
        memset(g, 0, sizeof *g);
        x = add_entry(g, 4096, 1); a = add_entry(g, 4096, 0); b = add_entry(g, 4096, 0); c = add_entry(g, 4096, 1);
        add_node(g, 1, &x, 1, &a, 0);
        add_node(g, 1, &a, 1, &b, 1);
        { int in[2]; in[0] = a; in[1] = b; add_node(g, 2, in, 1, &c, 0); }
        g_plan.offset[x] = -1; g_plan.offset[c] = -1; g_plan.offset[a] = 0; g_plan.offset[b] = 0;
        CHECK(check_plan(g, g_plan.offset, 4096, 8192, g_why, sizeof g_why, NULL) != 0);
        g_plan.offset[b] = 4096;
        CHECK(check_plan(g, g_plan.offset, 8192, 8192, g_why, sizeof g_why, NULL) == 0);
        plan_graph(g, &g_plan);
        CHECK(g_plan.rc == DP_OK && g_plan.offset[a] != g_plan.offset[b] && g_plan.arena == 8192);
    }
}

/* ---- the planner's choices ------------------------------------------------------- */
/* x (external) -> e1 -> ... -> e5, each node element-wise; in place: one block */
static void chain(graph *g, unsigned inplace, int *e) {
    int i, x;
    memset(g, 0, sizeof *g);
    x = add_entry(g, 4000, 1);
    for (i = 0; i < 5; i++) { e[i] = add_entry(g, 4000, 0); add_node(g, 1, i ? &e[i - 1] : &x, 1, &e[i], inplace); }
}
static void test_inplace_chain(void) {
    int e[5], i;
    chain(g_graph, 1, e);
    plan_graph(g_graph, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.arena == 4032 && g_plan.unplanned == 5 * 4032);
    for (i = 1; i < 5; i++) CHECK(g_plan.offset[e[i]] == g_plan.offset[e[0]]);
    chain(g_graph, 0, e);   /* no in-place: two blocks taking turns */
    plan_graph(g_graph, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.arena == 2 * 4032);
    for (i = 2; i < 5; i++) CHECK(g_plan.offset[e[i]] == g_plan.offset[e[i - 2]] && g_plan.offset[e[i]] != g_plan.offset[e[i - 1]]);
    CHECK(check_plan(g_graph, g_plan.offset, g_plan.arena, g_plan.unplanned, g_why, sizeof g_why, NULL) == 0);
}
/* in place refused: the input is read later, is external, is a constant, is
   smaller than the output, or the bit is for another input */
static void test_inplace_refused(void) {
    graph *g = g_graph;
    int x, a, b, c, k, in[2];
    memset(g, 0, sizeof *g);   /* read later */
    x = add_entry(g, 1024, 1); a = add_entry(g, 1024, 0); b = add_entry(g, 1024, 0); c = add_entry(g, 1024, 1);
    add_node(g, 1, &x, 1, &a, 0); add_node(g, 1, &a, 1, &b, 1); in[0] = a; in[1] = b; add_node(g, 2, in, 1, &c, 0);
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.offset[a] != g_plan.offset[b]);
    memset(g, 0, sizeof *g);   /* external input: the output gets its own bytes, x none */
    x = add_entry(g, 1024, 1); a = add_entry(g, 1024, 0); c = add_entry(g, 64, 1);
    add_node(g, 1, &x, 1, &a, 1); add_node(g, 1, &a, 1, &c, 0);
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.offset[x] == -1 && g_plan.offset[a] == 0 && g_plan.arena == 1024);
    memset(g, 0, sizeof *g);   /* a constant (planned, never written) is never overwritten */
    k = add_entry(g, 1024, 0); a = add_entry(g, 1024, 0); b = add_entry(g, 1024, 0); c = add_entry(g, 64, 1);
    add_node(g, 1, &k, 1, &a, 1); add_node(g, 1, &a, 1, &b, 0); add_node(g, 1, &b, 1, &c, 0);
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.offset[a] != g_plan.offset[k] && g_plan.offset[b] != g_plan.offset[k] && g_plan.arena == 3 * 1024);
    CHECK(check_plan(g, g_plan.offset, g_plan.arena, g_plan.unplanned, g_why, sizeof g_why, NULL) == 0);
    memset(g, 0, sizeof *g);   /* smaller input */
    x = add_entry(g, 64, 1); a = add_entry(g, 1000, 0); b = add_entry(g, 1001, 0); c = add_entry(g, 64, 1);
    add_node(g, 1, &x, 1, &a, 0); add_node(g, 1, &a, 1, &b, 1); add_node(g, 1, &b, 1, &c, 0);
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.offset[a] != g_plan.offset[b]);
    memset(g, 0, sizeof *g);   /* the bit names input 1 (external); input 0 dies here but is not offered */
    x = add_entry(g, 64, 1); a = add_entry(g, 1024, 0); b = add_entry(g, 1024, 0); c = add_entry(g, 64, 1);
    add_node(g, 1, &x, 1, &a, 0); in[0] = a; in[1] = x; add_node(g, 2, in, 1, &b, 2); add_node(g, 1, &b, 1, &c, 0);
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.offset[a] != g_plan.offset[b]);
    g->ids[2] = x; g->ids[3] = a;   /* node 1 reads (x, a): now the bit names a, taken */
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.offset[a] == g_plan.offset[b] && g_plan.arena == 1024);
}
/* An output nobody reads gives its block back right after its node; the
   pool gives the best fit; a much smaller free block grows only within the
   factor. */
static void test_release_and_best_fit(void) {
    graph *g = g_graph;
    int x, a, u, b, p, q, r, s, t, out[2], in[2];
    memset(g, 0, sizeof *g);
    x = add_entry(g, 64, 1); a = add_entry(g, 2048, 0); u = add_entry(g, 2048, 0); b = add_entry(g, 2048, 0);
    out[0] = a; out[1] = u; add_node(g, 1, &x, 2, out, 0);
    add_node(g, 1, &a, 1, &b, 0);
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.offset[b] == g_plan.offset[u] && g_plan.arena == 2 * 2048);
    memset(g, 0, sizeof *g);
    x = add_entry(g, 64, 1); p = add_entry(g, 4096, 0); q = add_entry(g, 2048, 0); r = add_entry(g, 64, 0);
    s = add_entry(g, 1000, 0); t = add_entry(g, 64, 1);
    out[0] = p; out[1] = q; add_node(g, 1, &x, 2, out, 0);
    in[0] = p; in[1] = q; add_node(g, 2, in, 1, &r, 0);
    add_node(g, 1, &r, 1, &s, 0);   /* p and q are free: q fits best */
    add_node(g, 1, &s, 1, &t, 0);
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.offset[s] == g_plan.offset[q] && g_plan.arena == 4096 + 2048 + 64);
    g->bytes[s] = 8192;              /* larger than both: p (half its size) grows */
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.offset[s] == g_plan.offset[p] && g_plan.arena == 8192 + 2048 + 64);
    g->bytes[s] = 4096 * 17;         /* more than 16 times p: a new block */
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.arena == 4096 + 2048 + 64 + 4096 * 17);
    g->bytes[s] = 64;                /* p and q are more than 16 times larger, r is read by this node: a new block */
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK && g_plan.arena == 4096 + 2048 + 64 + 64);
    CHECK(check_plan(g, g_plan.offset, g_plan.arena, g_plan.unplanned, g_why, sizeof g_why, NULL) == 0);
}
static void test_bad_arguments(void) {
    graph *g = g_graph;
    int x, a, b, bad, in[2];
    size_t arena, unplanned;
    memset(g, 0, sizeof *g);
    x = add_entry(g, 64, 1); a = add_entry(g, 64, 0); b = add_entry(g, 64, 0);
    add_node(g, 1, &x, 1, &a, 0); add_node(g, 1, &a, 1, &b, 0);
    plan_graph(g, &g_plan);
    CHECK(g_plan.rc == DP_OK);
    CHECK(dpn__plan_memory(-1, g->bytes, g->ext, g->nn, g->nodes, g_plan.offset, &arena, &unplanned) == DP_ERROR_INVALID_ARGS);
    CHECK(dpn__plan_memory(g->ne, g->bytes, g->ext, -1, g->nodes, g_plan.offset, &arena, &unplanned) == DP_ERROR_INVALID_ARGS);
    CHECK(dpn__plan_memory(g->ne, NULL, g->ext, g->nn, g->nodes, g_plan.offset, &arena, &unplanned) == DP_ERROR_INVALID_ARGS);
    CHECK(dpn__plan_memory(g->ne, g->bytes, g->ext, g->nn, NULL, g_plan.offset, &arena, &unplanned) == DP_ERROR_INVALID_ARGS);
    CHECK(dpn__plan_memory(g->ne, g->bytes, g->ext, g->nn, g->nodes, NULL, &arena, &unplanned) == DP_ERROR_INVALID_ARGS);
    CHECK(dpn__plan_memory(g->ne, g->bytes, g->ext, g->nn, g->nodes, g_plan.offset, NULL, &unplanned) == DP_ERROR_INVALID_ARGS);
    CHECK(dpn__plan_memory(g->ne, g->bytes, g->ext, g->nn, g->nodes, g_plan.offset, &arena, NULL) == DP_ERROR_INVALID_ARGS);
    CHECK(dpn__plan_memory(0, NULL, NULL, 0, NULL, NULL, &arena, &unplanned) == DP_OK && arena == 0 && unplanned == 0);
    CHECK(dpn__plan_memory(g->ne, g->bytes, NULL, g->nn, g->nodes, g_plan.offset, &arena, &unplanned) == DP_OK);   /* none external */
    CHECK(g_plan.offset[x] == 0 && arena == 3 * 64);   /* x, never written, is a constant now */
    bad = 3; g->ids[0] = bad;        /* input out of range */
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->ids[0] = -1; plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->ids[0] = x; g->ids[1] = 7;    /* output out of range */
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->ids[1] = a; g->ids[3] = a;    /* a written by both nodes */
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->ids[3] = b; g->ids[0] = b;    /* node 0 reads b before node 1 writes it */
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->ids[0] = a;                   /* node 0 reads what it writes */
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->ext[a] = 1;                   /* ... fine for the caller's array (updated in place) */
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_OK && g_plan.offset[a] == -1);
    g->ext[a] = 0; g->ids[0] = x;
    g->nodes[1].num_inputs = -1;     /* negative count, NULL list */
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->nodes[1].num_inputs = 1; g->nodes[1].outputs = NULL;
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->nodes[1].outputs = g->ids + 3;
    g->bytes[b] = SIZE_MAX - 10;     /* too large to round */
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->bytes[b] = SIZE_MAX / 2; g->bytes[a] = SIZE_MAX / 2;   /* adds up past the limits */
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_ERROR_INVALID_ARGS);
    g->bytes[a] = g->bytes[b] = 64;
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_OK);
    memset(g, 0, sizeof *g);         /* the same entry read twice by one node, in place over it */
    x = add_entry(g, 64, 1); a = add_entry(g, 640, 0); b = add_entry(g, 640, 0);
    add_node(g, 1, &x, 1, &a, 0); in[0] = a; in[1] = a; add_node(g, 2, in, 1, &b, 2);
    plan_graph(g, &g_plan); CHECK(g_plan.rc == DP_OK && g_plan.offset[a] == g_plan.offset[b] && g_plan.arena == 640);
}

/* ---- MLP training graphs ---------------------------------------------------------
   data (batch, in) -> [FullyConnected -> relu] per hidden layer ->
   FullyConnected (classes) -> softmax_cross_entropy with the labels, then
   the gradient nodes in reverse. Every node's in-place bits and every
   gradient node's inputs are the registered ones (dp_operator_find): a gradient
   operator reads the output gradients (DP_GRAD_OUT_GRADS), then the forward
   inputs (DP_GRAD_INPUTS), then the forward outputs (DP_GRAD_OUTPUTS), and
   writes one gradient per forward input. External: the data, labels,
   weights, biases, their gradient arrays, the loss (a head) and its head
   gradient. The data's and labels' gradients are not asked for, so those
   outputs are left out. float32. relu's gradient reads relu's output (as
   MXNet's Activation does), so relu may run in place. */
typedef struct fwd_rec { const dp_operator *op; int nin, in[3], out; } fwd_rec;
static void mlp_graph(graph *g, int batch, int in_dim, const int *hidden, int nhidden, int classes) {
    fwd_rec rec[64];
    int nrec = 0, layer, x, label, loss, head, cur, curdim = in_dim, i, j;
    int grad_of[MAX_ENTRIES];
    const dp_operator *fc = dp_operator_find("FullyConnected"), *relu = dp_operator_find("relu"), *sce = dp_operator_find("softmax_cross_entropy");
    memset(g, 0, sizeof *g);
    for (i = 0; i < MAX_ENTRIES; i++) grad_of[i] = -1;
    x = add_entry(g, (size_t)batch * (size_t)in_dim * 4, 1);
    label = add_entry(g, (size_t)batch * 4, 1);
    cur = x;
    for (layer = 0; layer <= nhidden; layer++) {
        int dim = layer < nhidden ? hidden[layer] : classes;
        int w = add_entry(g, (size_t)dim * (size_t)curdim * 4, 1), b = add_entry(g, (size_t)dim * 4, 1);
        int in[3], y = add_entry(g, (size_t)batch * (size_t)dim * 4, 0);
        grad_of[w] = add_entry(g, g->bytes[w], 1); grad_of[b] = add_entry(g, g->bytes[b], 1);
        in[0] = cur; in[1] = w; in[2] = b;
        add_node(g, 3, in, 1, &y, fc->inplace);
        rec[nrec].op = fc; rec[nrec].nin = 3; memcpy(rec[nrec].in, in, sizeof in); rec[nrec++].out = y;
        if (layer < nhidden) {
            int h = add_entry(g, g->bytes[y], 0);
            add_node(g, 1, &y, 1, &h, relu->inplace);
            rec[nrec].op = relu; rec[nrec].nin = 1; rec[nrec].in[0] = y; rec[nrec++].out = h;
            y = h;
        }
        cur = y; curdim = dim;
    }
    loss = add_entry(g, 4, 1);
    { int in[2]; in[0] = cur; in[1] = label; add_node(g, 2, in, 1, &loss, sce->inplace);
      rec[nrec].op = sce; rec[nrec].nin = 2; memcpy(rec[nrec].in, in, sizeof in); rec[nrec++].out = loss; }
    head = add_entry(g, 4, 1);
    grad_of[loss] = head;
    for (i = nrec - 1; i >= 0; i--) {   /* the gradient nodes, last forward node first */
        const dp_operator *gop = dp_operator_find(rec[i].op->gradient);
        int in[8], nin = 0, out[3], nout = 0;
        unsigned needs = rec[i].op->grad_needs;
        if (needs & DP_GRAD_OUT_GRADS) in[nin++] = grad_of[rec[i].out];
        if (needs & DP_GRAD_INPUTS) for (j = 0; j < rec[i].nin; j++) in[nin++] = rec[i].in[j];
        if (needs & DP_GRAD_OUTPUTS) in[nin++] = rec[i].out;
        for (j = 0; j < rec[i].nin; j++) {
            int e = rec[i].in[j];
            if (e == x || e == label) continue;   /* not asked for */
            if (grad_of[e] < 0) grad_of[e] = add_entry(g, g->bytes[e], 0);
            out[nout++] = grad_of[e];
        }
        add_node(g, nin, in, nout, out, gop->inplace);
    }
}
typedef struct mlp_figures { size_t planned, unplanned, peak; } mlp_figures;
static mlp_figures plan_mlp(const char *name, int batch, int in_dim, const int *hidden, int nhidden, int classes) {
    mlp_figures f;
    mlp_graph(g_graph, batch, in_dim, hidden, nhidden, classes);
    plan_graph(g_graph, &g_plan);
    CHECK(g_plan.rc == DP_OK);
    CHECK(check_plan(g_graph, g_plan.offset, g_plan.arena, g_plan.unplanned, g_why, sizeof g_why, NULL) == 0);
    f.planned = g_plan.arena; f.unplanned = g_plan.unplanned; f.peak = peak_live_bytes(g_graph, g_plan.offset);
    printf("  %-17s batch %3d: %2d nodes, planned %8zu bytes of %8zu unplanned (%4.1f%%), most bytes alive at one node %8zu\n", name, batch,
           g_graph->nn, f.planned, f.unplanned, 100.0 * (double)f.planned / (double)f.unplanned, f.peak);
    return f;
}
/* The digits example's network (64 -> 64 relu -> 10) and a deeper one, at
   batch 32 and 256: the plan takes at most half of one buffer per entry,
   and stays within 1% of the most bytes alive at one node (no plan can go
   below that). Were relu's gradient to read relu's input, every layer's
   FullyConnected output and its relu output would both stay alive until
   the backward pass reached the layer: 73% and 53% at best. */
static void test_mlp_figures(void) {
    static const int digits_hidden[1] = {64}, deep_hidden[8] = {256, 256, 256, 256, 256, 256, 256, 256};
    static const int batches[2] = {32, 256};
    int i;
    CHECK(dp_operator_find("relu")->grad_needs == (DP_GRAD_OUT_GRADS | DP_GRAD_OUTPUTS));
    for (i = 0; i < 2; i++) {
        mlp_figures d = plan_mlp("digits 64-64-10", batches[i], 64, digits_hidden, 1, 10);
        mlp_figures m = plan_mlp("deep 64-8x256-10", batches[i], 64, deep_hidden, 8, 10);
        CHECK(d.peak <= d.planned && d.planned <= d.peak + d.peak / 100);
        CHECK(m.peak <= m.planned && m.planned <= m.peak + m.peak / 100);
        CHECK(2 * d.planned <= d.unplanned);
        CHECK(2 * m.planned <= m.unplanned);
    }
}

int main(void) {
    static const test_case tests[] = {
        {"random_graphs_checked", test_random_graphs_checked}, {"checker_rejects_broken_plans", test_checker_rejects_broken_plans},
        {"inplace_chain", test_inplace_chain}, {"inplace_refused", test_inplace_refused}, {"release_and_best_fit", test_release_and_best_fit},
        {"bad_arguments", test_bad_arguments}, {"mlp_figures", test_mlp_figures},
    };
    int rc;
    (void)quiet_logger;   /* the planner has no engine: its error lines go to stderr */
    g_graph = graph_new();
    rc = run_tests("memory_plan", tests, (int)(sizeof tests / sizeof tests[0]));
    free(g_graph);
    return rc;
}
