/* bench/tbb.cpp - oneTBB as a peer of depeng in `make bench` (g++ -ltbb,
   Debian's libtbb-dev, installed by bench/deps.sh).

   Two systems, each running the workloads of bench/WORKLOADS.md:

   tbb-taskgroup: the dependence-graph pattern of oneTBB's documentation,
     streaming. The main thread walks the tasks in submission order and keeps,
     per datum, the last task that modified it and the tasks that read it
     since. From those it derives each new task's predecessors, and gives the
     task a counter: 1 (held while it is being submitted) + one per
     predecessor still unfinished. A finished task takes its successor list
     in one atomic exchange (which also closes it), decrements each
     successor's counter and runs, through one tbb::task_group, those that
     reach zero. An edge is added by a compare-and-swap onto the
     predecessor's list, which fails once the list is closed (the
     predecessor is done: no edge). The task is handed to task_group::run as
     soon as its own count drops to zero, so execution overlaps submission.
     A task that declares no data (W1) is run at once, without a node.

   tbb-flowgraph: one tbb::flow::continue_node per task, make_edge from each
     predecessor (the same rule), then try_put to every node without
     predecessors and graph::wait_for_all. A continue_node counts its
     predecessors when the edge is made and fires after as many messages,
     so an edge from a node that has already fired would never be
     satisfied: the graph is built first and started afterwards (W1's nodes
     have no edges and are started as they are made). Building the graph is
     timed, as is deleting its nodes.

   Threads: tbb::global_control limits the process to 2 (the main thread,
   which submits and then joins in at the wait, and one TBB worker). Nodes
   and edges are allocated in chunks inside the timed region and freed
   before its end (WORKLOADS.md: an object per task is timed until freed).

   Usage: bench_tbb [-n N] [-s taskgroup|flowgraph]
                    [W1 W2 W3 W4 W5 W5-1us W5-10us ...] (default all).
   BENCH_W5_LOOPS="A,B" fixes W5's loop counts (see bench/seq.c). */
#define BENCH_IMPLEMENTATION
#include "bench/common.h"
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/flow_graph.h>
#include <atomic>
#include <memory>
#include <vector>

enum { WL_W1, WL_W2, WL_W3, WL_W4, WL_W5_1, WL_W5_10, WL_COUNT };
static const char *const wl_name[WL_COUNT] = {"W1", "W2", "W3", "W4", "W5-1us", "W5-10us"};
static const long wl_nominal[WL_COUNT] = {
    BENCH_N, BENCH_N, (long)BENCH_W3_ROUNDS * (BENCH_W3_FAN + 1), BENCH_N,
    BENCH_W5_1US_N, BENCH_W5_10US_N};

/* ---- command line (the same small parser as the other peer drivers) ---- */
static int wl_on[WL_COUNT];
static long opt_n = 0; /* 0: each workload's own N */
static int sys_on[2] = {1, 1}; /* taskgroup, flowgraph */

static void usage(const char *prog) {
    fprintf(stderr, "usage: %s [-n N] [-s taskgroup|flowgraph] [W1 W2 W3 W4 W5 W5-1us W5-10us ...]\n", prog);
    exit(2);
}
static void parse_args(int argc, char **argv) {
    int any = 0;
    for (int a = 1; a < argc; a++) {
        const char *s = argv[a];
        if (strcmp(s, "-n") == 0 && a + 1 < argc) {
            char *end;
            opt_n = strtol(argv[++a], &end, 10);
            if (*end || opt_n < 1) usage(argv[0]);
            continue;
        }
        if (strcmp(s, "-s") == 0 && a + 1 < argc) {
            const char *which = argv[++a];
            if (strcmp(which, "taskgroup") == 0) { sys_on[0] = 1; sys_on[1] = 0; }
            else if (strcmp(which, "flowgraph") == 0) { sys_on[0] = 0; sys_on[1] = 1; }
            else usage(argv[0]);
            continue;
        }
        if (strcmp(s, "W2-op") == 0) { /* depeng's pre-created op: no peer equivalent */
            printf("# W2-op: not applicable to system=tbb-* (depeng only)\n");
            any = 1;
            continue;
        }
        if (strcmp(s, "W5") == 0) { wl_on[WL_W5_1] = wl_on[WL_W5_10] = 1; any = 1; continue; }
        int k = 0;
        while (k < WL_COUNT && strcmp(s, wl_name[k]) != 0) k++;
        if (k == WL_COUNT) usage(argv[0]);
        wl_on[k] = 1;
        any = 1;
    }
    if (!any)
        for (int k = 0; k < WL_COUNT; k++) wl_on[k] = 1;
}
static long wl_n(int k) {
    long dflt = wl_nominal[k];
    long n = opt_n ? opt_n : dflt;
    if ((k == WL_W5_1 || k == WL_W5_10) && n > dflt) n = dflt; /* -n only lowers W5's N */
    if (k == WL_W3) {
        long r = n / (BENCH_W3_FAN + 1);
        n = (r < 1 ? 1 : r) * (BENCH_W3_FAN + 1);
    }
    return n;
}

/* ---- the workloads as task lists --------------------------------------- */
/* Task i of the current workload: which data it reads and modifies, and its
   body. W1 has no data; W2 modifies datum 0; W3 round r is task 65r (modifies
   X = datum 0) and 64 tasks reading X and modifying Y_j = datum 1 + j; W4/W5
   follow bench_w4_task. */
static int g_work;                    /* WL_* being run */
static const bench_w4_task *g_tasks;  /* W4/W5 */
static int g_loops;
static uint64_t g_val[BENCH_W4_VARS];

struct access { int nreads, nwrites; int reads[2], writes[1]; };
static inline access task_access(long i) {
    access a;
    a.nreads = 0; a.nwrites = 0;
    switch (g_work) {
    case WL_W1: break;
    case WL_W2: a.nwrites = 1; a.writes[0] = 0; break;
    case WL_W3: {
        long j = i % (BENCH_W3_FAN + 1);
        a.nwrites = 1;
        if (j == 0) a.writes[0] = 0;
        else { a.nreads = 1; a.reads[0] = 0; a.writes[0] = (int)j; }
        break;
    }
    default: {
        const bench_w4_task *k = &g_tasks[i];
        a.nwrites = 1; a.writes[0] = k->w;
        a.nreads = k->nreads; a.reads[0] = k->reads[0]; a.reads[1] = k->reads[1];
        break;
    }
    }
    return a;
}
static inline void task_body(long i) {
    if (g_work >= WL_W4) bench_w4_body(g_val, &g_tasks[i], g_loops);
    else empty_body();
}
static int ndata(int work) {
    return work == WL_W1 ? 0 : work == WL_W2 ? 1 : work == WL_W3 ? BENCH_W3_FAN + 1 : BENCH_W4_VARS;
}

/* Chunked storage that never moves what it handed out, freed at once. */
template <class T> struct arena {
    enum { CHUNK = 4096 };
    std::vector<T *> chunks;
    size_t used = CHUNK;
    T *get() {
        if (used == CHUNK) { chunks.push_back(new T[CHUNK]); used = 0; }
        return &chunks.back()[used++];
    }
    void clear() {
        for (T *c : chunks) delete[] c;
        chunks.clear();
        used = CHUNK;
    }
};

/* The rule of WORKLOADS.md, streaming: calls edge(pred) for each
   predecessor of the task with access a, then records the task as the
   latest access. N is whatever stands for a task (a node pointer). */
template <class N> struct tracker {
    struct datum { N last_writer = nullptr; std::vector<N> readers; };
    std::vector<datum> d;
    explicit tracker(int n) : d((size_t)n) {}
    template <class F> void add(const access &a, N self, F edge) {
        for (int r = 0; r < a.nreads; r++) {
            datum &x = d[(size_t)a.reads[r]];
            if (x.last_writer) edge(x.last_writer);
        }
        for (int w = 0; w < a.nwrites; w++) {
            datum &x = d[(size_t)a.writes[w]];
            if (!x.readers.empty()) for (N p : x.readers) edge(p);
            else if (x.last_writer) edge(x.last_writer);
        }
        for (int r = 0; r < a.nreads; r++) d[(size_t)a.reads[r]].readers.push_back(self);
        for (int w = 0; w < a.nwrites; w++) {
            datum &x = d[(size_t)a.writes[w]];
            x.readers.clear();
            x.last_writer = self;
        }
    }
};

/* ---- tbb-taskgroup ------------------------------------------------------ */
struct tg_node;
struct tg_edge { tg_node *to; tg_edge *next; };
struct tg_node {
    std::atomic<int> count;
    std::atomic<tg_edge *> succ;   /* successors; closed once the task is done */
    long task;
};
static tg_edge g_closed;             /* the closed list's head */
static oneapi::tbb::task_group *g_tg;

static void tg_execute(tg_node *n);
static void tg_spawn(tg_node *n) { g_tg->run([n] { tg_execute(n); }); }
static void tg_execute(tg_node *n) {
    task_body(n->task);
    tg_edge *e = n->succ.exchange(&g_closed, std::memory_order_acq_rel);
    for (; e; e = e->next)
        if (e->to->count.fetch_sub(1, std::memory_order_acq_rel) == 1) tg_spawn(e->to);
}

static double run_taskgroup(long n) {
    arena<tg_node> nodes;
    arena<tg_edge> edges;
    oneapi::tbb::task_group tg;
    g_tg = &tg;
    double t0 = bench_now_ns();
    {
        tracker<tg_node *> tr(ndata(g_work));
        for (long i = 0; i < n; i++) {
            access a = task_access(i);
            if (a.nreads + a.nwrites == 0) { tg.run([i] { task_body(i); }); continue; }
            tg_node *self = nodes.get();
            self->count.store(1, std::memory_order_relaxed);
            self->succ.store(nullptr, std::memory_order_relaxed);
            self->task = i;
            tr.add(a, self, [&](tg_node *pred) {
                tg_edge *e = edges.get();
                tg_edge *head = pred->succ.load(std::memory_order_acquire);
                e->to = self;
                self->count.fetch_add(1, std::memory_order_relaxed);
                do {
                    if (head == &g_closed) { self->count.fetch_sub(1, std::memory_order_relaxed); return; }
                    e->next = head;
                } while (!pred->succ.compare_exchange_weak(head, e, std::memory_order_release,
                                                            std::memory_order_acquire));
            });
            if (self->count.fetch_sub(1, std::memory_order_acq_rel) == 1) tg_spawn(self);
        }
        tg.wait();
    }
    nodes.clear();
    edges.clear();
    return (bench_now_ns() - t0) / (double)n;
}

/* ---- tbb-flowgraph ------------------------------------------------------ */
namespace flow = oneapi::tbb::flow;
typedef flow::continue_node<flow::continue_msg> fg_node;

static double run_flowgraph(long n) {
    std::vector<fg_node *> nodes;
    std::vector<fg_node *> roots;
    double t0 = bench_now_ns();
    {
        flow::graph g;
        tracker<fg_node *> tr(ndata(g_work));
        nodes.reserve((size_t)n);
        for (long i = 0; i < n; i++) {
            access a = task_access(i);
            fg_node *self = new fg_node(g, [i](const flow::continue_msg &) { task_body(i); });
            nodes.push_back(self);
            if (a.nreads + a.nwrites == 0) { self->try_put(flow::continue_msg()); continue; }
            bool has_pred = false;
            tr.add(a, self, [&](fg_node *pred) { flow::make_edge(*pred, *self); has_pred = true; });
            if (!has_pred) roots.push_back(self);
        }
        for (fg_node *r : roots) r->try_put(flow::continue_msg());
        g.wait_for_all();
        for (fg_node *x : nodes) delete x;
    }
    return (bench_now_ns() - t0) / (double)n;
}

/* ---- driver ------------------------------------------------------------- */
static int failures = 0;
static int verbose = 0;

static void bench_one(int k, const char *system, double (*run)(long), int loops, const uint64_t *ref) {
    double ns[BENCH_REPS];
    char note[64];
    long n = wl_n(k);
    g_work = k;
    g_loops = loops;
    for (int r = -1; r < BENCH_REPS; r++) { /* r = -1: warm-up */
        if (ref) bench_w4_init(g_val);
        double x = run(n);
        if (ref) failures += bench_w4_check(system, wl_name[k], g_val, ref);
        if (verbose) fprintf(stderr, "# %s system=%s rep %d: %.1f ns/task\n", wl_name[k], system, r, x);
        if (r >= 0) ns[r] = x;
    }
    if (n != wl_nominal[k]) snprintf(note, sizeof note, "N_scaled_from_%ld", wl_nominal[k]);
    bench_report(wl_name[k], system, ns, BENCH_REPS, n, n != wl_nominal[k] ? note : NULL);
}

static void bench_workload(int k, int loops) {
    uint64_t ref[BENCH_W4_VARS];
    bench_w4_task *t = NULL;
    if (k >= WL_W4) {
        long n = wl_n(k);
        t = bench_w4_generate((uint32_t)n);
        bench_w4_reference(ref, t, (uint32_t)n, loops);
        g_tasks = t;
    }
    if (sys_on[0]) bench_one(k, "tbb-taskgroup", run_taskgroup, loops, t ? ref : NULL);
    if (sys_on[1]) bench_one(k, "tbb-flowgraph", run_flowgraph, loops, t ? ref : NULL);
    free(t);
    g_tasks = NULL;
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    verbose = getenv("BENCH_VERBOSE") != NULL;
    /* the main thread and one TBB worker */
    oneapi::tbb::global_control threads(oneapi::tbb::global_control::max_allowed_parallelism, 2);
    if (wl_on[WL_W1]) bench_workload(WL_W1, 0);
    if (wl_on[WL_W2]) bench_workload(WL_W2, 0);
    if (wl_on[WL_W3]) bench_workload(WL_W3, 0);
    if (wl_on[WL_W4]) bench_workload(WL_W4, BENCH_W4_LOOPS);
    if (wl_on[WL_W5_1] || wl_on[WL_W5_10]) {
        int l1, l10;
        bench_w5_loops(&l1, &l10);
        printf("# W5 loops 1us=%d 10us=%d system=tbb\n", l1, l10);
        fflush(stdout);
        if (wl_on[WL_W5_1]) bench_workload(WL_W5_1, l1);
        if (wl_on[WL_W5_10]) bench_workload(WL_W5_10, l10);
    }
    return failures ? 1 : 0;
}
