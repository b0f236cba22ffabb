/* The CPU pools' per-worker deques and stealing (see >>queues in depeng.h):
   the deque alone under concurrency (the owner stealing from itself too),
   every engine against a sequential reference on workloads whose
   completions make many ops ready, work made ready on one worker reaching
   the others, and the fairness bound: no op waits for a whole run of ops
   on one worker, in a FIFO pool or a priority pool. The last line is
   "N passed, M failed". */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "tests/test_common.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

static dp_engine *make(dp_engine_type type, int workers) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    memset(&d, 0, sizeof d);
    d.type = type; d.cpu_worker_nthreads = workers; d.ignore_env = 1; d.logger.func = quiet_logger;
    if (dp_engine_create(&d, &e) != DP_OK) return NULL;
    return e;
}
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static void spin_ns(uint64_t ns) { uint64_t end = now_ns() + ns; while (now_ns() < end) { } }

/* ---- the deque alone ---------------------------------------------------- */
/* Items are addresses in one array of blocks (never dereferenced by the
   deque); an item's number is its index there. */
static dp__block *items;
static dp__deque deque_under_test;

/* One thread: LIFO for the owner, FIFO for a thief, and a full deque
   refuses the push after DP__DEQUE_SLOTS. */
static void test_deque_order_and_full(void) {
    dp__deque *d = &deque_under_test;
    int i, lost = 0, more = 0;
    memset(d, 0, sizeof *d);
    items = (dp__block *)calloc(DP__DEQUE_SLOTS + 1, sizeof *items);
    CHECK(items != NULL);
    if (!items) return;
    CHECK(dp__deque_pop(d) == NULL);
    CHECK(dp__deque_steal(d, &lost, &more) == NULL && !lost);
    for (i = 0; i < DP__DEQUE_SLOTS; i++) CHECK(dp__deque_push(d, &items[i]) == 1);
    CHECK(dp__deque_push(d, &items[DP__DEQUE_SLOTS]) == 0);      /* full */
    CHECK(dp__deque_steal(d, &lost, &more) == &items[0] && more && !lost);   /* oldest */
    CHECK(dp__deque_pop(d) == &items[DP__DEQUE_SLOTS - 1]);       /* newest */
    CHECK(dp__deque_push(d, &items[DP__DEQUE_SLOTS]) == 1);       /* room again */
    CHECK(dp__deque_pop(d) == &items[DP__DEQUE_SLOTS]);
    for (i = DP__DEQUE_SLOTS - 2; i >= 1; i--) CHECK(dp__deque_pop(d) == &items[i]);
    CHECK(dp__deque_pop(d) == NULL);
    more = 1;
    CHECK(dp__deque_steal(d, &lost, &more) == NULL);
    free(items);
    items = NULL;
}

/* The owner pushes bursts (what does not fit goes to an "overflow" count,
   as the engine sends it to the shared queue) and pops some back, while
   thieves steal: every item is taken exactly once. */
#define DQ_ITEMS 200000
#define DQ_THIEVES 3
static atomic_int taken_count[DQ_ITEMS];
static atomic_int owner_done;
static atomic_long thief_steals, thief_lost;
static void take(dp__block *b) { atomic_fetch_add(&taken_count[b - items], 1); }
static void *thief(void *arg) {
    (void)arg;
    for (;;) {
        int lost = 0, more = 0;
        dp__block *b = dp__deque_steal(&deque_under_test, &lost, &more);
        if (b) { take(b); atomic_fetch_add(&thief_steals, 1); continue; }
        if (lost) { atomic_fetch_add(&thief_lost, 1); continue; }
        if (atomic_load(&owner_done)) return NULL;   /* the owner finished pushing, and it is empty */
        sched_yield();
    }
}
static int owner_self_steals;      /* the owner takes some items by stealing its own oldest */
static void test_deque_concurrent_exactly_once(void) {
    pthread_t th[DQ_THIEVES];
    uint32_t rng = 12345;
    int next = 0, i, overflow = 0, popped = 0, ok = 1;
    memset(&deque_under_test, 0, sizeof deque_under_test);
    items = (dp__block *)calloc(DQ_ITEMS, sizeof *items);
    CHECK(items != NULL);
    if (!items) return;
    for (i = 0; i < DQ_ITEMS; i++) atomic_store(&taken_count[i], 0);
    atomic_store(&owner_done, 0);
    atomic_store(&thief_steals, 0);
    atomic_store(&thief_lost, 0);
    for (i = 0; i < DQ_THIEVES; i++) CHECK(pthread_create(&th[i], NULL, thief, NULL) == 0);
    while (next < DQ_ITEMS) {
        int burst, pops;
        rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
        burst = 1 + (int)(rng % 400u);          /* now and then more than fits */
        pops = (int)((rng >> 9) % 300u);
        for (i = 0; i < burst && next < DQ_ITEMS; i++, next++) {
            if (!dp__deque_push(&deque_under_test, &items[next])) { take(&items[next]); overflow++; }
        }
        for (i = 0; i < pops; i++) {
            dp__block *b;
            if (owner_self_steals && ((rng >> (i % 24)) & 1)) {   /* the owner steals its own oldest */
                int lost = 0, more = 0;
                b = dp__deque_steal(&deque_under_test, &lost, &more);
                if (!b && lost) continue;
            } else b = dp__deque_pop(&deque_under_test);
            if (!b) break;
            take(b); popped++;
        }
    }
    {   /* on a loaded machine the thieves may not have run yet: give them
           what is left for up to 30 s before the owner takes it back */
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            sched_yield();
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while (atomic_load(&thief_steals) == 0 && now.tv_sec - t0.tv_sec < 30);
    }
    for (;;) {   /* the owner's share of what is left */
        dp__block *b = dp__deque_pop(&deque_under_test);
        if (!b) break;
        take(b); popped++;
    }
    atomic_store(&owner_done, 1);
    for (i = 0; i < DQ_THIEVES; i++) pthread_join(th[i], NULL);
    for (i = 0; i < DQ_ITEMS; i++) if (atomic_load(&taken_count[i]) != 1) { ok = 0; fprintf(stderr, "  item %d taken %d times\n", i, atomic_load(&taken_count[i])); break; }
    CHECK(ok);
    CHECK(overflow > 0);                 /* the bursts did fill it */
    CHECK(popped > 0);
    CHECK(atomic_load(&thief_steals) > 0);
    CHECK(popped + overflow + atomic_load(&thief_steals) == DQ_ITEMS);
    free(items);
    items = NULL;
}

/* ---- the engines against a sequential reference ------------------------- */
/* An op writes one variable from its old value, its inputs and its number;
   run in push order (the reference) or by an engine, the variables must end
   the same: the engines may reorder only ops that share no variable. */
#define MAXV 512
#define MAXIN 3
typedef struct { int id, nin, in[MAXIN], out; uint64_t *vals; int body_ns; } sop;
static void sop_apply(const sop *o) {
    uint64_t v = o->vals[o->out] * 1000003u + (uint64_t)o->id;
    int i;
    for (i = 0; i < o->nin; i++) v ^= o->vals[o->in[i]] * (uint64_t)(i + 7);
    o->vals[o->out] = v;
}
static int sop_fn(dp_run_ctx *rc, void *arg) {
    const sop *o = (const sop *)arg;
    (void)rc;
    if (o->body_ns) spin_ns((uint64_t)o->body_ns);
    sop_apply(o);
    return 0;
}
typedef struct { sop *ops; int nops, nvars; } workload;
static int wl_add(workload *w, int out, int nin, const int *in, int body_ns) {
    sop *o = &w->ops[w->nops];
    int i;
    o->id = w->nops; o->out = out; o->nin = nin; o->body_ns = body_ns;
    for (i = 0; i < nin; i++) o->in[i] = in[i];
    return w->nops++;
}
/* A tree: node k (variable k) reads its parent's variable; fan-out f. */
static void wl_tree(workload *w, int nodes, int fanout) {
    int k;
    w->nvars = nodes;
    wl_add(w, 0, 0, NULL, 2000);
    for (k = 1; k < nodes; k++) { int parent = (k - 1) / fanout; wl_add(w, k, 1, &parent, 300); }
}
/* Chains: 16 chains, each on its own variable, pushed interleaved, every
   link also reading the previous chain's variable now and then. */
static void wl_chains(workload *w, int links) {
    int k, c;
    w->nvars = 16;
    for (k = 0; k < links; k++) for (c = 0; c < 16; c++) {
        int prev = (c + 15) % 16;
        wl_add(w, c, k % 5 == 0 ? 1 : 0, &prev, 100);
    }
}
/* A random DAG: each op writes one of nvars variables, reading up to 3. */
static void wl_random(workload *w, int nops, int nvars, uint32_t seed) {
    int k;
    w->nvars = nvars;
    for (k = 0; k < nops; k++) {
        int in[MAXIN], nin, i;
        seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5;
        nin = (int)(seed % 4u);
        for (i = 0; i < nin; i++) in[i] = (int)((seed >> (8 + 6 * i)) % (uint32_t)nvars);
        wl_add(w, (int)((seed >> 26) % (uint32_t)nvars), nin, in, (int)(seed % 7u) * 100);
    }
}
/* Pushes w on e and compares with the sequential run. */
static int wl_check(dp_engine *e, workload *w, const char *what) {
    uint64_t ref[MAXV], got[MAXV];
    dp_var vars[MAXV];
    int k, i, bad = 0;
    for (i = 0; i < w->nvars; i++) ref[i] = got[i] = (uint64_t)i + 1;
    for (k = 0; k < w->nops; k++) { w->ops[k].vals = ref; sop_apply(&w->ops[k]); w->ops[k].vals = got; }
    for (i = 0; i < w->nvars; i++) vars[i] = dp_var_create(e);
    for (k = 0; k < w->nops; k++) {
        const sop *o = &w->ops[k];
        dp_var in[MAXIN], out = vars[o->out];
        int nin = 0;
        for (i = 0; i < o->nin; i++) {   /* a variable is read or written once per op */
            int j, dup = o->in[i] == o->out;
            for (j = 0; j < nin; j++) if (in[j].id == vars[o->in[i]].id) dup = 1;
            if (!dup) in[nin++] = vars[o->in[i]];
        }
        if (dp_push_sync(e, sop_fn, &w->ops[k], in, nin, &out, 1) != DP_OK) bad = 1;
    }
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    for (i = 0; i < w->nvars; i++) { dp_var_delete(e, vars[i]); if (got[i] != ref[i]) bad = 1; }
    if (bad) fprintf(stderr, "  %s: differs from the sequential run\n", what);
    return !bad;
}
static void test_engines_match_sequential(void) {
    static const dp_engine_type types[] = {DP_ENGINE_NAIVE, DP_ENGINE_POOLED, DP_ENGINE_PERDEVICE};
    static sop ops[20000];
    workload w;
    int t, round;
    for (t = 0; t < 3; t++) {
        for (round = 0; round < 2; round++) {
            dp_engine *e = make(types[t], round == 0 ? 2 : 4);
            CHECK(e != NULL);
            if (!e) continue;
            memset(&w, 0, sizeof w); w.ops = ops; wl_tree(&w, 500, 8);
            CHECK(wl_check(e, &w, "tree 1->8"));
            memset(&w, 0, sizeof w); w.ops = ops; wl_tree(&w, 500, 200);
            CHECK(wl_check(e, &w, "tree 1->200 (more than a deque holds with the rest)"));
            memset(&w, 0, sizeof w); w.ops = ops; wl_chains(&w, 300);
            CHECK(wl_check(e, &w, "chains"));
            memset(&w, 0, sizeof w); w.ops = ops; wl_random(&w, 20000, 64, 99u + (uint32_t)round);
            CHECK(wl_check(e, &w, "random DAG"));
            CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        }
    }
}

/* ---- work made ready on one worker reaches the others ------------------- */
/* One op fans out to many, all made ready by its completion on one worker:
   they go to that worker's deque, and its peers steal them; the shared
   queue's take lock is hardly used. */
static int slow_fn(dp_run_ctx *rc, void *arg) { (void)rc; spin_ns((uint64_t)(size_t)arg); return 0; }
static void test_fan_out_is_stolen(void) {
    enum { CHILDREN = 255 };
    int round, stolen = 0;
    for (round = 0; round < 10 && !stolen; round++) {
        dp_engine *e = make(DP_ENGINE_PERDEVICE, 4);
        dp_engine_stats s;
        dp_var root, outs[CHILDREN];
        int k;
        CHECK(e != NULL);
        if (!e) return;
        root = dp_var_create(e);
        CHECK(dp_push_sync(e, slow_fn, (void *)(size_t)20000000, NULL, 0, &root, 1) == DP_OK);   /* 20 ms */
        for (k = 0; k < CHILDREN; k++) {
            outs[k] = dp_var_create(e);
            CHECK(dp_push_sync(e, slow_fn, (void *)(size_t)20000, &root, 1, &outs[k], 1) == DP_OK);
        }
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        dp_engine_stats_get(e, &s);
        if (s.steals > 0) {
            stolen = 1;
            CHECK(s.deque_pushes >= CHILDREN - 1 - s.deque_overflows);   /* all but the one run next */
            CHECK(s.queue_takes < CHILDREN / 2);   /* with one shared queue: one take per child at least */
        }
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
    CHECK(stolen);
}

/* Two ops made ready by one completion must run at the same time: each
   waits for the other to start. One runs next on the completing worker, the
   other sits in its deque: a peer must be woken to steal it, else the first
   waits for ever (here: gives up after 10 s and fails). */
typedef struct { atomic_int started; atomic_int gave_up; } meet_state;
typedef struct { meet_state *st; } meet_arg;
static int meet_fn(dp_run_ctx *rc, void *arg) {
    meet_state *st = ((meet_arg *)arg)->st;
    uint64_t deadline = now_ns() + 10000000000u;
    (void)rc;
    atomic_fetch_add(&st->started, 1);
    while (atomic_load(&st->started) < 2) {
        if (now_ns() > deadline) { atomic_store(&st->gave_up, 1); return 0; }
        sched_yield();
    }
    return 0;
}
static void test_blocked_owner_deque_is_found(void) {
    int round;
    for (round = 0; round < 3; round++) {
        dp_engine *e = make(DP_ENGINE_PERDEVICE, 3);
        meet_state st;
        meet_arg a;
        dp_var root, x, y;
        CHECK(e != NULL);
        if (!e) return;
        atomic_store(&st.started, 0);
        atomic_store(&st.gave_up, 0);
        a.st = &st;
        root = dp_var_create(e); x = dp_var_create(e); y = dp_var_create(e);
        /* the workers go to sleep; the one woken for root spins no more once
           it runs it, and its peers, if woken too, sleep again meanwhile */
        spin_ns(200000000);
        CHECK(dp_push_sync(e, slow_fn, (void *)(size_t)200000000, NULL, 0, &root, 1) == DP_OK);
        CHECK(dp_push_sync(e, meet_fn, &a, &root, 1, &x, 1) == DP_OK);
        CHECK(dp_push_sync(e, meet_fn, &a, &root, 1, &y, 1) == DP_OK);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        CHECK(atomic_load(&st.gave_up) == 0);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* ---- nothing waits for ever behind a worker's own run of ops ------------- */
/* A worker runs next what its completion made ready and pops its deque
   newest first. Both can go on for as long as the pushes keep coming; an op
   elsewhere must still get its turn within a bounded number of ops (see
   Fairness under >>queues). Each test builds a long run on one worker and
   records how many of the run's ops had finished when the other op ran:
   without the bound it runs only after the whole run. */
enum { RUN_LINKS = 3000, RUN_BOUND = 600 };
static atomic_int run_done, other_ran_after;
static int link_fn(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; spin_ns(20000); atomic_fetch_add(&run_done, 1); return 0; }
static int other_fn(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; atomic_store(&other_ran_after, atomic_load(&run_done)); return 0; }
static int noop_fn(dp_run_ctx *rc, void *arg) { (void)rc; (void)arg; return 0; }
/* Holds its worker until the test has pushed everything (at most 10 s),
   so that the run is all queued when it starts, however slow the pushes. */
static atomic_int all_pushed, hold_started;
static int hold_fn(dp_run_ctx *rc, void *arg) {
    uint64_t deadline = now_ns() + 10000000000u;
    (void)rc; (void)arg;
    atomic_store(&hold_started, 1);
    while (!atomic_load(&all_pushed) && now_ns() < deadline) sched_yield();
    return 0;
}
/* Keeps a peer busy until the run is over (at most 10 s). */
static int busy_fn(dp_run_ctx *rc, void *arg) {
    uint64_t deadline = now_ns() + 10000000000u;
    (void)rc;
    while (atomic_load(&run_done) < *(const int *)arg && now_ns() < deadline) sched_yield();
    return 0;
}

/* A chain (every link writes c) runs next, link after link, on the only
   worker; an unrelated op pushed meanwhile waits in the shared queue. */
static void test_chain_lets_pushed_op_run(void) {
    static const dp_engine_type types[] = {DP_ENGINE_PERDEVICE, DP_ENGINE_POOLED};
    size_t t;
    for (t = 0; t < sizeof types / sizeof types[0]; t++) {
        dp_engine *e = make(types[t], 1);
        dp_var c, z;
        int i;
        CHECK(e != NULL);
        if (!e) return;
        atomic_store(&run_done, 0);
        atomic_store(&other_ran_after, -1);
        atomic_store(&all_pushed, 0);
        c = dp_var_create(e); z = dp_var_create(e);
        CHECK(dp_push_sync(e, hold_fn, NULL, NULL, 0, &c, 1) == DP_OK);
        for (i = 0; i < RUN_LINKS; i++) CHECK(dp_push_sync(e, link_fn, NULL, NULL, 0, &c, 1) == DP_OK);
        CHECK(dp_push_sync(e, other_fn, NULL, NULL, 0, &z, 1) == DP_OK);
        atomic_store(&all_pushed, 1);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        if (atomic_load(&other_ran_after) >= RUN_BOUND)
            printf("  %s: the pushed op ran after %d of %d links\n", types[t] == DP_ENGINE_POOLED ? "pooled" : "per-device",
                   atomic_load(&other_ran_after), RUN_LINKS);
        CHECK(atomic_load(&other_ran_after) >= 0 && atomic_load(&other_ran_after) < RUN_BOUND);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* Each link's completion makes two ops ready: a no-op, run next, and the
   next link, pushed on the deque, popped next (newest first). An op made
   ready with the first link sits at the bottom of the same deque, under
   all of them, and no peer is idle to steal it. */
static void test_deque_bottom_op_runs(void) {
    static const int workers[] = {1, 2};
    static const int links = RUN_LINKS + 1;
    size_t t;
    for (t = 0; t < sizeof workers / sizeof workers[0]; t++) {
        dp_engine *e = make(DP_ENGINE_PERDEVICE, workers[t]);
        dp_var r, x, k, *ys;
        int i;
        CHECK(e != NULL);
        if (!e) return;
        ys = (dp_var *)malloc((RUN_LINKS + 1) * sizeof *ys);
        CHECK(ys != NULL);
        if (!ys) { dp_engine_destroy(e, NULL); return; }
        atomic_store(&run_done, 0);
        atomic_store(&other_ran_after, -1);
        atomic_store(&all_pushed, 0);
        for (i = 1; i < workers[t]; i++) {   /* the peers stay busy for the whole run */
            dp_var busy = dp_var_create(e);
            CHECK(dp_push_sync(e, busy_fn, (void *)&links, NULL, 0, &busy, 1) == DP_OK);
        }
        spin_ns(5000000);
        r = dp_var_create(e); x = dp_var_create(e); k = dp_var_create(e);
        for (i = 0; i <= RUN_LINKS; i++) ys[i] = dp_var_create(e);
        CHECK(dp_push_sync(e, hold_fn, NULL, NULL, 0, &r, 1) == DP_OK);
        /* r's completion makes these three ready; whichever runs next, the
           other two go on the deque, and the first link's successors pile
           up above them */
        CHECK(dp_push_sync(e, link_fn, NULL, &r, 1, &ys[0], 1) == DP_OK);
        CHECK(dp_push_sync(e, other_fn, NULL, &r, 1, &x, 1) == DP_OK);
        CHECK(dp_push_sync(e, noop_fn, NULL, &r, 1, &k, 1) == DP_OK);
        for (i = 0; i < RUN_LINKS; i++) {
            dp_var a = dp_var_create(e);
            CHECK(dp_push_sync(e, link_fn, NULL, &ys[i], 1, &ys[i + 1], 1) == DP_OK);
            CHECK(dp_push_sync(e, noop_fn, NULL, &ys[i], 1, &a, 1) == DP_OK);
        }
        atomic_store(&all_pushed, 1);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        if (atomic_load(&other_ran_after) >= RUN_BOUND)
            printf("  %d worker(s): the op at the bottom ran after %d of %d links\n", workers[t],
                   atomic_load(&other_ran_after), links);
        CHECK(atomic_load(&other_ran_after) >= 0 && atomic_load(&other_ran_after) < RUN_BOUND);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
        free(ys);
    }
}

/* One worker. hold's completion makes 300 ops ready at once: the first
   link of a chain runs next, 256 fillers fill the deque and the rest go to
   the shared queue. Then the chain runs next link after link with the deque
   full, so the set-aside link has to go to the shared queue, and neither
   the fillers nor a pushed op may wait for the whole chain. (A completed
   write grants its first 64 readers last, each put at the head of the
   ready list: reader 63 comes first and runs next.) */
static atomic_int filler_first_after;
static int filler_fn(dp_run_ctx *rc, void *arg) {
    int none = -1;
    (void)rc; (void)arg;
    atomic_compare_exchange_strong(&filler_first_after, &none, atomic_load(&run_done));
    return 0;
}
static void test_full_deque_chain(void) {
    static const dp_engine_type types[] = {DP_ENGINE_PERDEVICE, DP_ENGINE_POOLED};
    size_t t;
    for (t = 0; t < sizeof types / sizeof types[0]; t++) {
        dp_engine *e = make(types[t], 1);
        dp_var c, z, r;
        int i;
        CHECK(e != NULL);
        if (!e) return;
        atomic_store(&run_done, 0);
        atomic_store(&other_ran_after, -1);
        atomic_store(&filler_first_after, -1);
        atomic_store(&all_pushed, 0);
        c = dp_var_create(e); z = dp_var_create(e); r = dp_var_create(e);
        CHECK(dp_push_sync(e, hold_fn, NULL, NULL, 0, &r, 1) == DP_OK);
        for (i = 0; i < 300; i++) {
            dp_var a = dp_var_create(e);
            if (i == 63) CHECK(dp_push_sync(e, link_fn, NULL, &r, 1, &c, 1) == DP_OK);
            else CHECK(dp_push_sync(e, filler_fn, NULL, &r, 1, &a, 1) == DP_OK);
        }
        for (i = 0; i < RUN_LINKS; i++) CHECK(dp_push_sync(e, link_fn, NULL, NULL, 0, &c, 1) == DP_OK);
        CHECK(dp_push_sync(e, other_fn, NULL, NULL, 0, &z, 1) == DP_OK);
        atomic_store(&all_pushed, 1);
        CHECK(dp_wait_all(e, NULL) == DP_OK);
        if (atomic_load(&other_ran_after) >= RUN_BOUND || atomic_load(&filler_first_after) >= RUN_BOUND)
            printf("  %s: the pushed op ran after %d links, the first filler after %d (of %d)\n",
                   types[t] == DP_ENGINE_POOLED ? "pooled" : "per-device",
                   atomic_load(&other_ran_after), atomic_load(&filler_first_after), RUN_LINKS + 1);
        CHECK(atomic_load(&other_ran_after) >= 0 && atomic_load(&other_ran_after) < RUN_BOUND);
        CHECK(atomic_load(&filler_first_after) >= 0 && atomic_load(&filler_first_after) < RUN_BOUND);
        CHECK(dp_engine_destroy(e, NULL) == DP_OK);
    }
}

/* The priority pool has no deques; its one worker runs a chain (links of
   priority 0, each writing c) op after op as each completion makes the next
   ready. An op of higher priority pushed meanwhile waits in the heap; it
   must come before the rest of the chain. */
static void test_priority_op_cuts_into_chain(void) {
    dp_engine_desc d;
    dp_engine *e = NULL;
    dp_push_desc p;
    dp_var c, z;
    int i;
    memset(&d, 0, sizeof d);
    d.type = DP_ENGINE_PERDEVICE; d.cpu_worker_nthreads = 1; d.cpu_priority_nthreads = 1;
    d.ignore_env = 1; d.logger.func = quiet_logger;
    CHECK(dp_engine_create(&d, &e) == DP_OK);
    if (!e) return;
    atomic_store(&run_done, 0);
    atomic_store(&other_ran_after, -1);
    atomic_store(&all_pushed, 0);
    c = dp_var_create(e); z = dp_var_create(e);
    memset(&p, 0, sizeof p);
    p.prop = DP_PROP_CPU_PRIORITIZED;
    p.writes = &c; p.num_writes = 1;
    p.fn = hold_fn;
    atomic_store(&hold_started, 0);
    CHECK(dp_push(e, &p) == DP_OK);
    while (!atomic_load(&hold_started)) sched_yield();   /* else the priority 10 op may simply go first */
    p.fn = link_fn;
    for (i = 0; i < RUN_LINKS; i++) CHECK(dp_push(e, &p) == DP_OK);
    p.fn = other_fn; p.writes = &z; p.priority = 10;
    CHECK(dp_push(e, &p) == DP_OK);
    atomic_store(&all_pushed, 1);
    CHECK(dp_wait_all(e, NULL) == DP_OK);
    if (atomic_load(&other_ran_after) > DP__SHARED_EVERY)   /* one worker: it ran after 63, every time */
        printf("  the priority 10 op ran after %d of %d links of priority 0\n", atomic_load(&other_ran_after), RUN_LINKS);
    CHECK(atomic_load(&other_ran_after) >= 0 && atomic_load(&other_ran_after) <= DP__SHARED_EVERY);
    CHECK(dp_engine_destroy(e, NULL) == DP_OK);
}

/* The owner may steal from its own deque (the fairness rule does): the
   exactly-once test again with the owner mixing pops and steals. */
static void test_deque_self_steal(void) { owner_self_steals = 1; test_deque_concurrent_exactly_once(); owner_self_steals = 0; }
int main(void) {
    static const test_case tests[] = {
        {"deque: owner LIFO, thief FIFO, full refuses", test_deque_order_and_full},
        {"deque: owner and 3 thieves, each item taken exactly once", test_deque_concurrent_exactly_once},
        {"deque: owner also steals its own oldest, each item taken exactly once", test_deque_self_steal},
        {"engines: trees, chains, random DAGs match the sequential run", test_engines_match_sequential},
        {"stealing: a fan-out made ready on one worker is stolen", test_fan_out_is_stolen},
        {"stealing: an op in a busy worker's deque wakes a peer", test_blocked_owner_deque_is_found},
        {"fairness: a chain run next lets a pushed op run", test_chain_lets_pushed_op_run},
        {"fairness: the op at the bottom of a busy deque runs", test_deque_bottom_op_runs},
        {"fairness: a chain run next with a full deque", test_full_deque_chain},
        {"fairness: a higher priority op cuts into a chain on the priority pool", test_priority_op_cuts_into_chain},
    };
    return run_tests("stealing", tests, (int)(sizeof tests / sizeof tests[0]));
}
