/* proto_dep.c - issue 29 point 5's variable design in miniature, outside
   the engine, for W2 (a chain of writes on one variable) and W3 (one writer
   of X, then 64 readers of X each writing its own Y_j, 10,000 rounds).

   The variable keeps no lock and no queue. What waits for it is a chain of
   elements: a write (the op block's slot for that variable) or a read run
   (the reads between two writes, an object from the pusher's pool). Each
   element has a successor word. The pusher appends with CAS(NULL -> next)
   on the last element's word; the completion closes the element with
   XCHG(word, CLOSED) and grants whatever it took out. Exactly one of the
   two sees the other: a pusher that meets CLOSED grants the new element
   itself. A read run counts its readers' completions down from 0 and is
   closed by the next write: the pusher adds the number of readers it gave
   the run (kept privately) and whoever brings the count to 0 grants the
   write. Readers added to a run that is not granted yet wait on its list;
   the write before the run grants the list with XCHG(list, GRANTED).

   Per op the pusher writes only its new block, the last element's word
   (a line it wrote itself, unless the worker has already run that
   element), and once per run the run's counter; a worker writes the words
   it closes, the wait counts of what it grants, and its own ready list.

   What it leaves out, which the engine would need: failures carried with
   the grants, waits (dp_wait_var's wait block is a read element), deleting
   a variable while ops wait for it (drop_var here is the end of a
   workload), trace events, allocation failure, more than one pusher per
   variable at a time (the engine's pushes lock an op's variables). It
   measures one thing: the hand-off's cost per op, against the engine's
   W2 and W3 and bench_depeng's floor figures in the same sitting (make
   bench-proto runs all three).

     cc -std=c11 -O2 -pthread proto_dep.c -o proto_dep
     ./proto_dep [W2|W3] [WORKERS [REPS [N]]]     defaults W2 2 5 1000000
   (W2: N ops; W3: N / 100 rounds of 65)     */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXV 2
typedef struct elem elem;
typedef struct op op;
typedef struct run run;
struct elem {                          /* an op's place in one variable's chain */
    _Atomic(uintptr_t) succ;           /* 0, the next element (a run: low bit set), or CLOSED */
    op *owner;
    elem *next_reader;                 /* on its run's list, for a read */
    run *in_run;                       /* the run of a read */
};
struct run {                           /* the reads between two writes */
    _Atomic(uintptr_t) list;           /* readers waiting for the grant, or GRANTED */
    atomic_long remaining;             /* completions count down; the closing write adds the count */
    elem *succ;                        /* the write that closed it (set before the count is added) */
    run *next_free;
    char pad[64 - 2 * sizeof(long) - 2 * sizeof(void *)];
};
struct op {
    atomic_int wait;                   /* unmet dependencies + 1 while pushed */
    atomic_int refs;                   /* 1 for the run + 1 per variable whose last element it is */
    int nvars, nwrite;                 /* elems[0, nread) reads, then writes */
    long *data[MAXV];                  /* what each write touches */
    long seq;
    op *next;                          /* ready list / free list */
    elem e[MAXV];
};
#define CLOSED ((uintptr_t)1)
#define GRANTED ((uintptr_t)1)
#define RUN_BIT ((uintptr_t)2)

typedef struct var {                   /* the pusher's side only */
    uintptr_t last;                    /* the last element (RUN_BIT: a run), 0: none */
    long run_readers;                  /* readers given to the open run */
} var;

static _Alignas(64) _Atomic(op *) op_returned;
static _Alignas(64) _Atomic(run *) run_returned;
static _Alignas(64) op *op_free;
static run *run_free;
static _Alignas(64) atomic_flag rq_lock = ATOMIC_FLAG_INIT;
static op *_Atomic rq_head;
static op *rq_tail;
static _Alignas(64) atomic_int go, quit;
static _Alignas(64) atomic_long finished_seq;

static double now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static void *alloc64(size_t n) { void *p = aligned_alloc(64, (n + 63) / 64 * 64); if (!p) abort(); return p; }

static void rq_push(op *b) {
    b->next = NULL;
    while (atomic_flag_test_and_set_explicit(&rq_lock, memory_order_acquire)) {}
    if (rq_tail) rq_tail->next = b; else atomic_store_explicit(&rq_head, b, memory_order_relaxed);
    rq_tail = b;
    atomic_flag_clear_explicit(&rq_lock, memory_order_release);
}
static op *rq_take(void) {
    op *b;
    if (!atomic_load_explicit(&rq_head, memory_order_relaxed)) return NULL;
    while (atomic_flag_test_and_set_explicit(&rq_lock, memory_order_acquire)) {}
    b = atomic_load_explicit(&rq_head, memory_order_relaxed);
    if (b) { atomic_store_explicit(&rq_head, b->next, memory_order_relaxed); if (!b->next) rq_tail = NULL; }
    atomic_flag_clear_explicit(&rq_lock, memory_order_release);
    return b;
}
/* A grant: the op's count goes down; the grant that takes it to 0 makes it
   ready, on the granting thread's own list (a worker runs it next). */
static void grant(op *b, op **ready) {
    if (atomic_fetch_sub_explicit(&b->wait, 1, memory_order_acq_rel) == 1) { b->next = *ready; *ready = b; }
}
static void op_unref(op *b) {
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
        op *h = atomic_load_explicit(&op_returned, memory_order_relaxed);
        do b->next = h; while (!atomic_compare_exchange_weak_explicit(&op_returned, &h, b, memory_order_release, memory_order_relaxed));
    }
}
static void run_put(run *r) {
    run *h = atomic_load_explicit(&run_returned, memory_order_relaxed);
    do r->next_free = h; while (!atomic_compare_exchange_weak_explicit(&run_returned, &h, r, memory_order_release, memory_order_relaxed));
}
static op *op_get(void) {
    op *b = op_free;
    if (!b && !(b = atomic_exchange_explicit(&op_returned, NULL, memory_order_acquire))) { b = alloc64(sizeof *b); b->next = NULL; }
    op_free = b->next;
    return b;
}
static run *run_get(void) {
    run *r = run_free;
    if (!r && !(r = atomic_exchange_explicit(&run_returned, NULL, memory_order_acquire))) { r = alloc64(sizeof *r); r->next_free = NULL; }
    run_free = r->next_free;
    return r;
}
/* Grants what a closed write found as its successor: a write, or a run
   (every reader on its list). */
static void grant_succ(uintptr_t s, op **ready) {
    if (!s) return;
    if (s & RUN_BIT) {
        run *r = (run *)(s & ~RUN_BIT);
        elem *e = (elem *)atomic_exchange_explicit(&r->list, GRANTED, memory_order_acq_rel);
        while (e) { elem *n = e->next_reader; grant(e->owner, ready); e = n; }
    } else grant(((elem *)s)->owner, ready);
}

/* ---- the pusher: append read, append write ---------------------------- */
/* Links element s (RUN_BIT for a run) after v's last write element; 1 if
   that write had already completed (the caller grants s). */
static int link_after_write(var *v, uintptr_t s) {
    elem *last = (elem *)v->last;
    uintptr_t expect = 0;
    int closed = !atomic_compare_exchange_strong_explicit(&last->succ, &expect, s, memory_order_release, memory_order_acquire);
    op_unref(last->owner);                                   /* it is no longer v's last */
    return closed;
}
static void append_read(var *v, elem *e, op **ready) {
    run *r;
    if (v->last & RUN_BIT) {                                 /* the open run takes one more reader */
        uintptr_t h;
        r = (run *)(v->last & ~RUN_BIT);
        e->in_run = r;
        v->run_readers++;
        h = atomic_load_explicit(&r->list, memory_order_acquire);
        do {
            if (h == GRANTED) { grant(e->owner, ready); return; }
            e->next_reader = (elem *)h;
        } while (!atomic_compare_exchange_weak_explicit(&r->list, &h, (uintptr_t)e, memory_order_release, memory_order_acquire));
        return;
    }
    r = run_get();                                           /* a new run after the last write */
    atomic_store_explicit(&r->remaining, 0, memory_order_relaxed);
    r->succ = NULL;
    e->in_run = r;
    e->next_reader = NULL;
    atomic_store_explicit(&r->list, (uintptr_t)e, memory_order_relaxed);   /* before the CAS publishes r */
    v->run_readers = 1;
    if (!v->last || link_after_write(v, (uintptr_t)r | RUN_BIT)) {   /* no write before it, or it is done */
        atomic_store_explicit(&r->list, GRANTED, memory_order_relaxed);
        grant(e->owner, ready);
    }
    v->last = (uintptr_t)r | RUN_BIT;
}
static void append_write(var *v, elem *e, op **ready) {
    atomic_store_explicit(&e->succ, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->owner->refs, 1, memory_order_relaxed);   /* v's last */
    if (!v->last) grant(e->owner, ready);
    else if (v->last & RUN_BIT) {                            /* close the run */
        run *r = (run *)(v->last & ~RUN_BIT);
        r->succ = e;
        if (atomic_fetch_add_explicit(&r->remaining, v->run_readers, memory_order_acq_rel) + v->run_readers == 0) {
            run_put(r);
            grant(e->owner, ready);
        }
    } else if (link_after_write(v, (uintptr_t)e)) grant(e->owner, ready);
    v->last = (uintptr_t)e;
}
/* ---- the worker: complete read, complete write ------------------------ */
static void complete(op *b, op **ready) {
    int i;
    for (i = 0; i < b->nvars - b->nwrite; i++) {             /* reads */
        run *r = b->e[i].in_run;
        if (atomic_fetch_sub_explicit(&r->remaining, 1, memory_order_acq_rel) == 1) {   /* the last reader of a closed run */
            elem *w = r->succ;
            run_put(r);
            if (w) grant(w->owner, ready);                   /* NULL: closed by the variable's deletion */
        }
    }
    for (; i < b->nvars; i++) grant_succ(atomic_exchange_explicit(&b->e[i].succ, CLOSED, memory_order_acq_rel), ready);
    if (b->seq >= 0) atomic_store_explicit(&finished_seq, b->seq, memory_order_release);
    op_unref(b);
}
static void *worker(void *arg) {
    int idle = 0;
    (void)arg;
    while (!atomic_load_explicit(&quit, memory_order_relaxed)) {
        op *b, *ready = NULL;
        if (!atomic_load_explicit(&go, memory_order_acquire) || !(b = rq_take())) {
            if (++idle >= 256) { idle = 0; sched_yield(); }   /* let the pusher have a core the worker cannot use */
            continue;
        }
        idle = 0;
        while (b) {
            int i;
            for (i = b->nvars - b->nwrite; i < b->nvars; i++) (*b->data[i])++;   /* the op writes its outputs */
            complete(b, &ready);
            b = ready;                                       /* run one made ready here, share the rest */
            if (b) { ready = b->next; while (ready) { op *n = ready->next; rq_push(ready); ready = n; } }
        }
    }
    return NULL;
}
/* Pushes an op reading r (NULL: none) and writing w[0..nw). */
static void push(var *rv, var **wv, long **wd, int nw, long seq) {
    op *b = op_get(), *ready = NULL;
    int i, k = 0;
    atomic_store_explicit(&b->wait, (rv ? 1 : 0) + nw + 1, memory_order_relaxed);
    atomic_store_explicit(&b->refs, 1, memory_order_relaxed);
    b->seq = seq;
    if (rv) { b->e[k].owner = b; k++; }
    for (i = 0; i < nw; i++, k++) { b->e[k].owner = b; b->data[k] = wd[i]; }
    b->nvars = k; b->nwrite = nw;
    if (rv) append_read(rv, &b->e[0], &ready);
    for (i = 0; i < nw; i++) append_write(wv[i], &b->e[(rv ? 1 : 0) + i], &ready);
    grant(b, &ready);                                        /* the pusher's own count */
    while (ready) { op *n = ready->next; rq_push(ready); ready = n; }
}
static void drop_var(var *v) {                               /* the variable's reference on its last element */
    if (v->last & RUN_BIT) {
        run *r = (run *)(v->last & ~RUN_BIT);
        r->succ = NULL;
        if (atomic_fetch_add_explicit(&r->remaining, v->run_readers, memory_order_acq_rel) + v->run_readers == 0) run_put(r);
        /* else the last reader frees it: it sees succ NULL */
    } else if (v->last) op_unref(((elem *)v->last)->owner);
    v->last = 0; v->run_readers = 0;
}

static long g_x, g_y[64], g_n = 1000000;
static long work_w2(void) {
    var x = {0, 0}, *wv[1] = {&x};
    long *wd[1] = {&g_x};
    long n = g_n;
    for (long i = 0; i < n; i++) push(NULL, wv, wd, 1, i == n - 1 ? i : -1);
    drop_var(&x);
    return n;
}
static long work_w3(void) {
    static var x, y[64];
    long rounds = g_n / 100, seq = 0;
    for (long r = 0; r < rounds; r++) {
        var *wx[1] = {&x};
        long *dx[1] = {&g_x};
        push(NULL, wx, dx, 1, -1); seq++;
        for (int j = 0; j < 64; j++) {
            var *wy[1] = {&y[j]};
            long *dy[1] = {&g_y[j]};
            push(&x, wy, dy, 1, r == rounds - 1 && j == 63 ? seq : -1); seq++;
        }
    }
    drop_var(&x);
    for (int j = 0; j < 64; j++) drop_var(&y[j]);
    return seq;
}

static _Atomic long ball;
static void *pong(void *arg) {
    long rounds = *(long *)arg;
    for (long i = 0; i < rounds; i++) {
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 1) {}
        atomic_store_explicit(&ball, 2 * i + 2, memory_order_release);
    }
    return NULL;
}
static double line_ns(void) {
    long rounds = 200000;
    pthread_t t;
    atomic_store(&ball, 0);
    pthread_create(&t, NULL, pong, &rounds);
    double t0 = now_ns();
    for (long i = 0; i < rounds; i++) {
        atomic_store_explicit(&ball, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 2) {}
    }
    double ns = (now_ns() - t0) / (2.0 * rounds);
    pthread_join(t, NULL);
    return ns;
}

int main(int argc, char **argv) {
    int w3 = argc > 1 && strcmp(argv[1], "W3") == 0;
    int nw = argc > 2 ? atoi(argv[2]) : 2, reps = argc > 3 ? atoi(argv[3]) : 5;
    long (*work)(void) = w3 ? work_w3 : work_w2;
    pthread_t th[16];
    if (argc > 4) g_n = atol(argv[4]);
    if (nw < 1 || nw > 16 || g_n < 100) return 2;
    for (int i = 0; i < nw; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (int r = 0; r < reps; r++) {
        double t0, t1, t2, s_ns, p_ns, d_ns;
        long n;
        atomic_store(&finished_seq, -1);
        atomic_store(&go, 1);
        t0 = now_ns(); n = work(); while (atomic_load(&finished_seq) != n - 1) {} s_ns = (now_ns() - t0) / n;
        atomic_store(&go, 0);                                /* workers held: the push alone */
        atomic_store(&finished_seq, -1);
        t0 = now_ns(); n = work(); t1 = now_ns();
        atomic_store(&go, 1);
        while (atomic_load(&finished_seq) != n - 1) {}
        t2 = now_ns();
        p_ns = (t1 - t0) / n; d_ns = (t2 - t1) / n;
        printf("proto %s round %d streaming_ns=%.1f push_alone_ns=%.1f drain_alone_ns=%.1f line_transfer_ns=%.1f\n",
               w3 ? "W3" : "W2", r + 1, s_ns, p_ns, d_ns, line_ns());
    }
    atomic_store(&quit, 1);
    for (int i = 0; i < nw; i++) pthread_join(th[i], NULL);
    if (w3) { long want = 2L * (g_n / 100) * reps; for (int j = 0; j < 64; j++) if (g_y[j] != want) return 1; return g_x == want ? 0 : 1; }
    return g_x == 2L * g_n * reps ? 0 : 1;
}
