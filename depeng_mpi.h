/* depeng_mpi.h - the MPI half of depeng: training across processes. A
   dist_sync key-value store (every rank initialises a key and gets rank
   0's value, every rank pushes its gradients for a key, every rank pulls
   the update of the sum over all ranks), allreduce of an
   array as an engine operation, rank, size and a barrier.
   version 0.2.0 - MIT license (full text at the end of depeng.h)

   In exactly one C file, compiled with mpicc:
       #define DEPENG_IMPLEMENTATION
       #define DEPENG_MPI_IMPLEMENTATION
       #include "depeng.h"
       #include "depeng_nn.h"
       #include "depeng_mpi.h"
   Other files include depeng_mpi.h for the declarations (it includes
   depeng_nn.h, whose KVStore it extends, which includes depeng.h)
   (they need <mpi.h> only in the implementation file). Nothing in depeng.h
   needs MPI. Tested with Open MPI 4.1 (Debian's libopenmpi-dev and
   openmpi-bin; tests/mpi_deps.sh installs them).

   CONTENTS
     1. Quick start
     2. How it works: the progress thread, ordering, thread level
     3. Errors, and a rank that dies
     4. Building and running (README.md, "Training on several machines")
     5. Limits
     8. API (declarations)
     9. Implementation (sections tagged >>mpi_state >>mpi_progress
        >>mpi_collectives >>mpi_public)

   1. QUICK START (run with mpirun -np 4 ./train)

       dp_mpi *mpi;
       dp_kvstore *kv;
       dp_engine_create(NULL, &eng);
       dp_mpi_create(eng, NULL, &mpi);            // initialises MPI
       dp_mpi_kv_create(mpi, NULL, &kv);          // dist_sync store
       dp_kv_set_optimizer(kv, "sgd_update", 1, keys, values);
       dp_kv_init(kv, 0, w);                      // every rank: rank 0's w
       ... backward on this rank's share of the batch ...
       dp_kv_push(kv, 0, &grad, 1, 0);            // sum over devices, then ranks
       dp_kv_pull(kv, 0, &w, 1, 0);
       ...
       dp_kv_destroy(kv); dp_wait_all(eng, NULL);
       dp_mpi_destroy(mpi);                       // finalises MPI
       dp_engine_destroy(eng, NULL);

   2. HOW IT WORKS
     dp_mpi_allreduce(mpi, a, priority) pushes one asynchronous engine
     operation that writes a's variable: once a's earlier writes are done
     (the gradient is computed) it hands a to the progress thread and
     returns; the progress thread starts MPI_Iallreduce (MPI_IN_PLACE,
     MPI_SUM) on a's memory and polls it with MPI_Testsome, completing the
     operation when it is done. So communication of one layer's gradient
     overlaps the backward pass of the layers before it, and nothing else
     waits for it but the ops that use a (the update, then the pulls).
     Ordering: MPI needs every rank to start collectives on a communicator
     in the same order, but engine ops become ready in different orders on
     different ranks. Every collective gets a sequence number when it is
     pushed (dp_mpi_allreduce, dp_kv_push, dp_mpi_barrier); the progress
     thread starts them strictly in that order. Hence the rule: every rank
     makes the same collective calls in the same order (as with MPI
     itself); the engine is free to compute in any order.
     Initialisation: dp_kv_init on the dist_sync store is collective and
     blocking. It waits for the value, then one allgather gives every rank
     every rank's key, shape, dtype and outcome, so that all reach the same
     verdict: a key, shape or dtype that differs from rank 0's, or a
     failure on any rank, fails the call on every rank and adds the key
     nowhere; otherwise rank 0's value is broadcast into every rank's
     stored copy (MXNet's rule: the store holds rank 0's initial values,
     whatever the others passed). It allocates nothing on the way, so a
     rank never drops out of the sequence of collectives for want of
     memory.
     Thread level: all MPI calls are made by the progress thread. When
     dp_mpi_create initialises MPI it does so on that thread and asks for
     MPI_THREAD_FUNNELED (the least level that allows a second thread in
     the process; it checks what MPI provides). When the application has
     initialised MPI itself (it calls MPI too), MPI_THREAD_MULTIPLE is
     required and checked (MPI_Query_thread). The store uses its own
     duplicate of MPI_COMM_WORLD.
     Reduction order: each rank's local sum is the fixed-order sum of
     depeng.h's store; the sum over ranks is MPI's. Open MPI gives every
     rank the same bytes (the tests check it), but the sum over 2 ranks is
     not bitwise the sum of one process's combined batch: compare within a
     tolerance.

   3. ERRORS AND DEAD RANKS
     MPI errors are returned (MPI_ERRORS_RETURN on the store's
     communicator) and become the failure of the operation, with MPI's
     error text (MPI_Error_string): dp_nd_read of a pulled array, or
     dp_wait_all, reports it. A collective not finished within timeout_ms
     (desc, else DEPENG_MPI_TIMEOUT_MS, default 60000) fails with
     DP_ERROR_TIMEOUT and "a rank may have died"; from then on every
     collective fails at once (MPI cannot cancel a started collective).
     After such a failure, call dp_mpi_abort: it ends every rank of the
     job (MPI_Abort) with the code given. A rank killed by a signal is
     usually noticed by mpirun first, which then ends the others; the
     timeout covers a rank that hangs, and runtimes that do not.
     dp_kv_init's verdicts (every rank returns the same code, and the
     collectives stay paired, so the program can go on): a key, shape or
     dtype that differs from rank 0's is DP_ERROR_INVALID_ARGS, logged on
     every rank as "rank R: dp_kv_init key K: rank Q gives float32 (3, 2),
     rank 0 gives float32 (2, 3): ..." (or the two keys); a rank whose own
     call failed (NULL value, key initialised already, out of memory, the
     value's op failed: DP_ERROR_OP_FAILED, more than INT_MAX elements)
     logs why, and every rank returns that rank's code, the others logging
     "rank Q failed to initialise key K". A NULL store fails on its rank
     alone: the others' dp_kv_init then times out. A dp_kv_push that
     failed (out of memory) may have left this rank's stored array behind
     the others': end the job. Functions
     return dp_result as depeng.h's do, and log through the engine's
     logger.

   4. BUILDING AND RUNNING
       mpicc -std=c11 -O2 -I. train.c -o train -pthread -lm
       mpirun -np 4 ./train                           # one machine
       mpirun -H node1:2,node2:2 -np 4 ./train        # two machines
     As root add --allow-run-as-root; more ranks than cores need
     --oversubscribe. make mpi-test runs tests/mpi_check.sh.

   5. LIMITS
     CPU arrays only (a GPU gradient is summed into the store's CPU copy
     first, which depeng.h's store does); no CUDA-aware MPI. One dp_mpi per
     process, one communicator (MPI_COMM_WORLD's duplicate). Arrays and
     dist_sync keys of at most INT_MAX elements. Sums (allreduce, and so a
     dist_sync push) of float32, float64, int32, int64, uint8 and int8
     only: a float16 or bool array is refused. Synchronous data
     parallelism only (dist_sync); no parameter server, no asynchronous
     updates. */
#ifndef DEPENG_MPI_H
#define DEPENG_MPI_H

#include "depeng_nn.h"
#ifdef DEPENG_NO_NDARRAY
#error "depeng_mpi.h needs depeng.h's array half: include depeng.h without DEPENG_NO_NDARRAY"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================== 8. API
   At a glance:
     setup        dp_mpi_create dp_mpi_destroy dp_mpi_abort
     ranks        dp_mpi_rank dp_mpi_size
     collectives  dp_mpi_allreduce dp_mpi_barrier
     kvstore      dp_mpi_kv_create                                          */
typedef struct dp_mpi dp_mpi;
typedef struct dp_mpi_desc {
    int timeout_ms;     /* a collective not done by then fails (0: DEPENG_MPI_TIMEOUT_MS, else 60000) */
    size_t chunk_bytes; /* an allreduce larger than this is started as pieces of about this
                           size that proceed together (0: DEPENG_MPI_CHUNK_BYTES, else 4 MB;
                           at most 32 pieces) */
} dp_mpi_desc;
/* Starts the progress thread, which initialises MPI (unless the
   application has, with MPI_THREAD_MULTIPLE) and duplicates
   MPI_COMM_WORLD. One per process. Errors: DP_ERROR_INVALID_ARGS (NULL
   eng or out, a second dp_mpi, a negative timeout), DP_ERROR_BACKEND (MPI
   failed to initialise, or gives too low a thread level: the log says
   which), DP_ERROR_THREAD, DP_ERROR_OUT_OF_MEMORY. Any thread. */
DP_API dp_result dp_mpi_create(dp_engine *eng, const dp_mpi_desc *desc, dp_mpi **out);
/* Waits for the collectives pushed so far (at most the timeout each),
   frees the communicator, finalises MPI if dp_mpi_create initialised it,
   and stops the progress thread. After a collective failed it does not
   finalise (that could hang): call dp_mpi_abort instead. Returns DP_OK or
   the failure. Call after the engine's work on mpi's collectives is done
   (dp_wait_all), from the thread that created it. NULL is fine. */
DP_API dp_result dp_mpi_destroy(dp_mpi *mpi);
/* Ends the whole job: MPI_Abort(code) on every rank. Does not return
   (exits with code if MPI_Abort returns). Any thread. */
DP_API void dp_mpi_abort(dp_mpi *mpi, int code);
/* This process's rank and the number of ranks (-1 for NULL). Any thread. */
DP_API int dp_mpi_rank(const dp_mpi *mpi);
DP_API int dp_mpi_size(const dp_mpi *mpi);
/* Pushes an operation that replaces a (a CPU array of float32, float64,
   int32, int64, uint8 or int8, at most INT_MAX elements; integers wrap
   around) by its sum over all ranks, in place, as described
   above. Returns once it is pushed. Every rank must make the same
   collective calls in the same order. Errors: DP_ERROR_INVALID_ARGS (NULL,
   a GPU array, too many elements, a float16 or bool array: MPI has no
   half-precision sum, and a sum of bools is no bool), the errors of
   dp_push. One thread at a time per dp_mpi. */
DP_API dp_result dp_mpi_allreduce(dp_mpi *mpi, dp_ndarray *a, int priority);
/* Blocks until every rank has called it (MPI_Ibarrier, in sequence after
   the collectives pushed before it, so also after those have started).
   Errors: DP_ERROR_TIMEOUT, DP_ERROR_BACKEND (MPI's text logged), or the
   failure of an earlier collective. Not from inside an engine operation;
   one thread at a time per dp_mpi. */
DP_API dp_result dp_mpi_barrier(dp_mpi *mpi);
/* A dist_sync store: dp_kv_create on mpi's engine with the global
   reduction set to dp_mpi_allreduce and the global initialisation to the
   check and broadcast of section 2 (desc->global_reduce and global_init
   must be NULL; desc NULL: CPU 0). Every rank calls dp_kv_init for the
   same keys in the same order, not from inside an engine operation; each
   key then holds rank 0's value on every rank. Errors:
   DP_ERROR_INVALID_ARGS (NULL mpi, a hook set), dp_kv_create's. The
   dp_mpi's thread; the store then as dp_kv_create's. */
DP_API dp_result dp_mpi_kv_create(dp_mpi *mpi, const dp_kvstore_desc *desc, dp_kvstore **out);

#ifdef __cplusplus
}
#endif
#endif /* DEPENG_MPI_H */

/* ====================================================================== 9. IMPLEMENTATION */
#if defined(DEPENG_MPI_IMPLEMENTATION) && !defined(DEPENG_MPI_IMPL_INCLUDED)
#define DEPENG_MPI_IMPL_INCLUDED 1
#if !defined(DEPENG_IMPL_INCLUDED)
#error "define DEPENG_IMPLEMENTATION in the file that defines DEPENG_MPI_IMPLEMENTATION, and include depeng.h first"
#endif
/* the C API only: Open MPI's and MPICH's C++ bindings warn under -Wextra */
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#include <pthread.h>
#include <limits.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

/* >>mpi_state: the queue between engine ops and the progress thread ------ */
/* An allreduce completes an engine op; the others are blocking: their
   caller waits on wait_status (its item lives on the caller's stack). */
enum { DP__MPI_ALLREDUCE, DP__MPI_BARRIER, DP__MPI_ALLGATHER, DP__MPI_BCAST };
typedef struct dp__mpi_item {
    int kind;
    uint64_t seq;                /* the order in which every rank starts it */
    void *data;                  /* allreduce: the array's memory, in place; bcast: the
                                    buffer (rank 0's is sent); allgather: this rank's block */
    void *recv;                  /* allgather: every rank's block, in rank order */
    int count;
    MPI_Datatype type;
    dp_completion done;          /* allreduce: the engine op to complete */
    int input_status;            /* the failure its input carried: passed on */
    int *wait_status;            /* blocking kinds: where the result goes (under the lock) */
    int pending;                 /* its requests not done yet */
    double since;                /* handed over (seconds) */
    struct dp__mpi_item *next;
} dp__mpi_item;
struct dp_mpi {
    dp_engine *eng;
    int rank, size, timeout_ms;
    size_t chunk_bytes;          /* a larger allreduce is started in pieces */
    int own_init;                /* MPI was initialised by the progress thread */
    MPI_Comm comm;
    pthread_t thread;
    pthread_mutex_t m;
    pthread_cond_t cv;           /* wakes the progress thread and barrier waiters */
    dp__mpi_item *ready;         /* handed over, not started; any seq order */
    uint64_t next_push_seq;      /* the caller's: the next collective's number */
    int stop, started, init_status, abort_code, abort_requested;
    char init_error[MPI_MAX_ERROR_STRING + 64];
    int broken;                  /* a collective failed: every later one fails */
    char broken_why[MPI_MAX_ERROR_STRING + 96];
    int64_t *init_records;       /* dp_kv_init's allgather: size records, made with the
                                    dp_mpi so that the check allocates nothing */
};
static int dp__mpi_exists;       /* one dp_mpi per process */

static double dp__mpi_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static void dp__mpi_error_text(int err, char *buf, size_t cap, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", err);
    snprintf(buf, cap, "%s: %s", what, text);
}
static const char *dp__mpi_kind_name(int kind) {
    return kind == DP__MPI_ALLREDUCE ? "allreduce" : kind == DP__MPI_BARRIER ? "barrier" : kind == DP__MPI_ALLGATHER ? "allgather" : "broadcast";
}
/* The MPI type that sums dtype t; MPI_DATATYPE_NULL for float16 (MPI has
   no half-precision sum) and bool (a sum of bools is not a bool). */
static MPI_Datatype dp__mpi_type(dp_dtype t) {
    switch (t) {
    case DP_FLOAT32: return MPI_FLOAT;
    case DP_FLOAT64: return MPI_DOUBLE;
    case DP_INT32: return MPI_INT32_T;
    case DP_INT64: return MPI_INT64_T;
    case DP_UINT8: return MPI_UINT8_T;
    case DP_INT8: return MPI_INT8_T;
    default: return MPI_DATATYPE_NULL;
    }
}

/* >>mpi_progress: the one thread that calls MPI ------------------------------
   It starts handed-over collectives in sequence order, polls the started
   ones, completes their engine ops, and fails what outlives the timeout. */
static void dp__mpi_finish(dp_mpi *mpi, dp__mpi_item *it, int status, const char *why) {
    if (it->kind == DP__MPI_ALLREDUCE) {
        if (!status && it->input_status) { status = it->input_status; why = "an input of the allreduce had failed"; }
        dp_complete(it->done, status, why);
        dp_engine_free(mpi->eng, it, sizeof *it);
        return;
    }
    pthread_mutex_lock(&mpi->m);              /* its caller owns it */
    *it->wait_status = status ? status : 1;
    pthread_cond_broadcast(&mpi->cv);
    pthread_mutex_unlock(&mpi->m);
}
static void dp__mpi_break(dp_mpi *mpi, const char *why) {
    pthread_mutex_lock(&mpi->m);
    if (!mpi->broken) { mpi->broken = 1; snprintf(mpi->broken_why, sizeof mpi->broken_why, "%s", why); }
    pthread_mutex_unlock(&mpi->m);
}
/* The requests started and not yet done; a large allreduce has several
   (its chunks), all naming its item. */
enum { DP__MPI_MAX_ACTIVE = 64, DP__MPI_MAX_CHUNKS = 32 };
typedef struct dp__mpi_active { dp__mpi_item *item[DP__MPI_MAX_ACTIVE]; MPI_Request req[DP__MPI_MAX_ACTIVE]; int n; } dp__mpi_active;
/* An allreduce of more than chunk_bytes is started as several
   Iallreduce's of about that size, so that they proceed at once: Open
   MPI's non-blocking allreduce of one large buffer is slower than its
   blocking one, and pieces of a few MB are not. Every rank cuts the same. */
static int dp__mpi_chunks(const dp_mpi *mpi, const dp__mpi_item *it, int *per_chunk) {
    int sz = 1;
    size_t per, n = (size_t)it->count;
    int chunks;
    if (it->kind == DP__MPI_ALLREDUCE || it->kind == DP__MPI_BCAST) MPI_Type_size(it->type, &sz);
    per = mpi->chunk_bytes / (size_t)(sz > 0 ? sz : 1);
    if ((it->kind != DP__MPI_ALLREDUCE && it->kind != DP__MPI_BCAST) || per == 0 || n <= per) { *per_chunk = it->count; return 1; }
    if ((n + per - 1) / per > DP__MPI_MAX_CHUNKS) per = (n + DP__MPI_MAX_CHUNKS - 1) / DP__MPI_MAX_CHUNKS;
    chunks = (int)((n + per - 1) / per);
    *per_chunk = (int)per;
    return chunks;
}
/* Starts it (as its chunks) into a; on an MPI error completes it as
   failed, abandoning the chunks started (MPI is broken from then on). */
static void dp__mpi_start(dp_mpi *mpi, dp__mpi_item *it, dp__mpi_active *a) {
    char why[MPI_MAX_ERROR_STRING + 96];
    int per, chunks = dp__mpi_chunks(mpi, it, &per), k, err = MPI_SUCCESS, first = a->n;
    size_t elem = 0;
    if (it->kind == DP__MPI_ALLREDUCE || it->kind == DP__MPI_BCAST) { int sz = 0; MPI_Type_size(it->type, &sz); elem = (size_t)sz; }
    for (k = 0; k < chunks && err == MPI_SUCCESS; k++) {
        MPI_Request req;
        int count = k == chunks - 1 ? it->count - per * k : per;
        void *at = it->data ? (char *)it->data + (size_t)per * (size_t)k * elem : NULL;
        if (it->kind == DP__MPI_ALLREDUCE) err = MPI_Iallreduce(MPI_IN_PLACE, at, count, it->type, MPI_SUM, mpi->comm, &req);
        else if (it->kind == DP__MPI_BCAST) err = MPI_Ibcast(at, count, it->type, 0, mpi->comm, &req);
        else if (it->kind == DP__MPI_ALLGATHER) err = MPI_Iallgather(it->data, it->count, it->type, it->recv, it->count, it->type, mpi->comm, &req);
        else err = MPI_Ibarrier(mpi->comm, &req);
        if (err == MPI_SUCCESS) { a->item[a->n] = it; a->req[a->n] = req; a->n++; }
    }
    it->pending = chunks;
    if (err == MPI_SUCCESS) return;
    a->n = first;
    dp__mpi_error_text(err, why, sizeof why, it->kind == DP__MPI_ALLREDUCE ? "MPI_Iallreduce" : it->kind == DP__MPI_BCAST ? "MPI_Ibcast"
                       : it->kind == DP__MPI_ALLGATHER ? "MPI_Iallgather" : "MPI_Ibarrier");
    dp__mpi_break(mpi, why);
    dp__mpi_finish(mpi, it, DP_ERROR_BACKEND, why);
}
/* Finishes every item with a request in a, each once, and empties a. */
static void dp__mpi_fail_active(dp_mpi *mpi, dp__mpi_active *a, int status, const char *why) {
    int i, j;
    for (i = 0; i < a->n; i++) {
        for (j = 0; j < i && a->item[j] != a->item[i]; j++) {}
        if (j == i) dp__mpi_finish(mpi, a->item[i], status, why);
    }
    a->n = 0;
}
/* Takes the next handed-over items in sequence order (under the lock). */
static dp__mpi_item *dp__mpi_take_next(dp_mpi *mpi, uint64_t seq) {
    dp__mpi_item **p;
    for (p = &mpi->ready; *p; p = &(*p)->next)
        if ((*p)->seq == seq) { dp__mpi_item *it = *p; *p = it->next; return it; }
    return NULL;
}
/* Fails every item still handed over (broken, or stopping). */
static void dp__mpi_fail_ready(dp_mpi *mpi, const char *why) {
    dp__mpi_item *list;
    pthread_mutex_lock(&mpi->m);
    list = mpi->ready; mpi->ready = NULL;
    pthread_mutex_unlock(&mpi->m);
    while (list) { dp__mpi_item *it = list; list = it->next; dp__mpi_finish(mpi, it, DP_ERROR_BACKEND, why); }
}
/* Polls the started collectives once; completes the finished ones. */
static void dp__mpi_poll(dp_mpi *mpi, dp__mpi_active *a) {
    int idx[DP__MPI_MAX_ACTIVE], outcount = 0, i, j, err;
    char why[MPI_MAX_ERROR_STRING + 96];
    if (!a->n) return;
    err = MPI_Testsome(a->n, a->req, &outcount, idx, MPI_STATUSES_IGNORE);
    if (err != MPI_SUCCESS || outcount == MPI_UNDEFINED) {
        dp__mpi_error_text(err, why, sizeof why, "MPI_Testsome");
        dp__mpi_break(mpi, why);
        dp__mpi_fail_active(mpi, a, DP_ERROR_BACKEND, why);
        return;
    }
    for (i = 0; i < outcount; i++) {
        dp__mpi_item *it = a->item[idx[i]];
        a->item[idx[i]] = NULL;
        if (--it->pending == 0) dp__mpi_finish(mpi, it, 0, NULL);
    }
    for (i = j = 0; i < a->n; i++) if (a->item[i]) { a->item[j] = a->item[i]; a->req[j] = a->req[i]; j++; }
    a->n = j;
}
/* Fails the collectives that outlived the timeout, and marks MPI broken. */
static void dp__mpi_expire(dp_mpi *mpi, dp__mpi_active *a) {
    double now = dp__mpi_now(), limit = mpi->timeout_ms / 1000.0;
    char why[MPI_MAX_ERROR_STRING + 96];
    int i, oldest = -1;
    for (i = 0; i < a->n; i++) if (now - a->item[i]->since > limit && (oldest < 0 || a->item[i]->seq < a->item[oldest]->seq)) oldest = i;
    if (oldest < 0) return;
    snprintf(why, sizeof why, "rank %d: %s number %llu not done after %d ms: a rank may have died or stopped (DEPENG_MPI_TIMEOUT_MS)",
             mpi->rank, dp__mpi_kind_name(a->item[oldest]->kind), (unsigned long long)a->item[oldest]->seq, mpi->timeout_ms);
    dp__mpi_break(mpi, why);
    dp__mpi_fail_active(mpi, a, DP_ERROR_TIMEOUT, why);   /* their requests are abandoned */
}
static int dp__mpi_init(dp_mpi *mpi) {
    int inited = 0, provided = 0, err;
    MPI_Initialized(&inited);
    if (!inited) {
        if ((err = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided)) != MPI_SUCCESS) {
            snprintf(mpi->init_error, sizeof mpi->init_error, "MPI_Init_thread failed (error %d)", err);
            return 0;
        }
        mpi->own_init = 1;
        if (provided < MPI_THREAD_FUNNELED) {
            snprintf(mpi->init_error, sizeof mpi->init_error, "MPI provides thread level %d; depeng_mpi.h needs MPI_THREAD_FUNNELED (%d)", provided, MPI_THREAD_FUNNELED);
            return 0;
        }
    } else {
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            snprintf(mpi->init_error, sizeof mpi->init_error, "MPI was initialised by the application at thread level %d; "
                     "depeng_mpi.h then needs MPI_THREAD_MULTIPLE (%d), or let dp_mpi_create initialise MPI", provided, MPI_THREAD_MULTIPLE);
            return 0;
        }
    }
    if ((err = MPI_Comm_dup(MPI_COMM_WORLD, &mpi->comm)) != MPI_SUCCESS) {
        dp__mpi_error_text(err, mpi->init_error, sizeof mpi->init_error, "MPI_Comm_dup");
        return 0;
    }
    MPI_Comm_set_errhandler(mpi->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(mpi->comm, &mpi->rank);
    MPI_Comm_size(mpi->comm, &mpi->size);
    return 1;
}
/* Whether the thread has something to do now (under the lock). */
static int dp__mpi_has_work(dp_mpi *mpi, uint64_t next_seq) {
    dp__mpi_item *it;
    if (mpi->stop || mpi->abort_requested) return 1;
    for (it = mpi->ready; it; it = it->next) if (mpi->broken || it->seq == next_seq) return 1;
    return 0;
}
static void *dp__mpi_thread(void *arg) {
    dp_mpi *mpi = (dp_mpi *)arg;
    dp__mpi_active active;
    uint64_t next_seq = 0;
    int ok = dp__mpi_init(mpi), idle_polls = 0;
    pthread_mutex_lock(&mpi->m);
    mpi->init_status = ok ? 1 : -1;
    mpi->started = 1;
    pthread_cond_broadcast(&mpi->cv);
    pthread_mutex_unlock(&mpi->m);
    if (!ok) {
        if (mpi->own_init) MPI_Finalize();
        return NULL;
    }
    active.n = 0;
    for (;;) {
        dp__mpi_item *it;
        int stop, broken, abort_requested;
        pthread_mutex_lock(&mpi->m);
        while (active.n == 0 && !dp__mpi_has_work(mpi, next_seq)) pthread_cond_wait(&mpi->cv, &mpi->m);
        stop = mpi->stop; broken = mpi->broken; abort_requested = mpi->abort_requested;
        pthread_mutex_unlock(&mpi->m);
        if (abort_requested) MPI_Abort(mpi->own_init ? MPI_COMM_WORLD : mpi->comm, mpi->abort_code);
        if (broken) dp__mpi_fail_ready(mpi, mpi->broken_why);
        while (!broken && active.n + DP__MPI_MAX_CHUNKS <= DP__MPI_MAX_ACTIVE) {      /* start what is next in sequence */
            pthread_mutex_lock(&mpi->m);
            it = dp__mpi_take_next(mpi, next_seq);
            pthread_mutex_unlock(&mpi->m);
            if (!it) break;
            next_seq++;
            dp__mpi_start(mpi, it, &active);
        }
        dp__mpi_poll(mpi, &active);
        dp__mpi_expire(mpi, &active);
        if (stop && active.n == 0) {
            pthread_mutex_lock(&mpi->m);
            stop = mpi->ready == NULL || mpi->broken;
            pthread_mutex_unlock(&mpi->m);
            if (stop) break;
        }
        /* polling is what moves MPI's non-blocking collectives on: yield
           between polls, and sleep a little while nothing finishes */
        if (active.n) {
            if (++idle_polls > 1000) { struct timespec ts = {0, 20000}; nanosleep(&ts, NULL); }
            else sched_yield();
        } else idle_polls = 0;
    }
    dp__mpi_fail_ready(mpi, "dp_mpi_destroy: the collective was never started");
    if (!mpi->broken) {
        MPI_Comm_free(&mpi->comm);
        if (mpi->own_init) MPI_Finalize();
    }
    return NULL;
}

/* >>mpi_collectives: the engine op of an allreduce, the barrier --------------- */
typedef struct dp__mpi_op_arg { dp_mpi *mpi; dp_ndarray *a; uint64_t seq; } dp__mpi_op_arg;
static void dp__mpi_op_free(void *arg) {
    dp__mpi_op_arg *o = (dp__mpi_op_arg *)arg;
    dp_nd_release(o->a);
    dp_engine_free(o->mpi->eng, o, sizeof *o);
}
/* Hands the item to the progress thread (or fails it when MPI is broken). */
static void dp__mpi_hand_over(dp_mpi *mpi, dp__mpi_item *it) {
    int broken;
    char why[sizeof mpi->broken_why];
    pthread_mutex_lock(&mpi->m);
    broken = mpi->broken;
    if (broken) memcpy(why, mpi->broken_why, sizeof why);
    else { it->since = dp__mpi_now(); it->next = mpi->ready; mpi->ready = it; pthread_cond_broadcast(&mpi->cv); }
    pthread_mutex_unlock(&mpi->m);
    if (broken) dp__mpi_finish(mpi, it, DP_ERROR_BACKEND, why);
}
/* Runs on failed input too (no_skip): the other ranks start this
   collective whatever happened here, so this rank must as well, or every
   later one would be paired with the wrong one; the failure is passed on
   when it completes. Out of memory breaks the sequence: MPI is marked
   broken, the later collectives fail. */
static void dp__mpi_allreduce_op(dp_run_ctx *rc, void *arg, dp_completion done) {
    dp__mpi_op_arg *o = (dp__mpi_op_arg *)arg;
    dp__mpi_item *it = (dp__mpi_item *)dp_engine_alloc(o->mpi->eng, sizeof *it);
    if (it) memset(it, 0, sizeof *it);
    if (!it) {
        dp__mpi_break(o->mpi, "allreduce: out of memory for its record");
        dp_complete(done, DP_ERROR_OUT_OF_MEMORY, "allreduce: out of memory");
        return;
    }
    it->kind = DP__MPI_ALLREDUCE; it->seq = o->seq; it->done = done; it->input_status = rc->input_status;
    it->data = dp_nd_data(o->a); it->count = (int)dp_shape_size(dp_nd_shape(o->a)); it->type = dp__mpi_type(dp_nd_dtype(o->a));
    dp__mpi_hand_over(o->mpi, it);
}
DP_IMPL dp_result dp_mpi_allreduce(dp_mpi *mpi, dp_ndarray *a, int priority) {
    dp__mpi_op_arg *o;
    dp_push_desc d;
    dp_var v;
    dp_result r;
    if (!mpi || !a || dp_nd_ctx(a).dev_type == DP_DEV_GPU || dp_shape_size(dp_nd_shape(a)) > INT_MAX || dp_nd_engine(a) != mpi->eng) {
        DP__LOG(mpi ? mpi->eng : NULL, DP_LOG_ERROR, ND_ARGS, "dp_mpi_allreduce: %s", !mpi || !a ? "NULL argument" : "a CPU array of at most INT_MAX elements on the dp_mpi's engine is needed");
        return DP_ERROR_INVALID_ARGS;
    }
    if (dp__mpi_type(dp_nd_dtype(a)) == MPI_DATATYPE_NULL) {
        DP__LOG(mpi->eng, DP_LOG_ERROR, ND_ARGS, "dp_mpi_allreduce: MPI cannot sum %s arrays (float32, float64, int32, int64, uint8 and int8 it can)",
                dp_dtype_name(dp_nd_dtype(a)));
        return DP_ERROR_INVALID_ARGS;
    }
    if ((o = (dp__mpi_op_arg *)dp_engine_alloc(mpi->eng, sizeof *o)) == NULL) {
        DP__LOG(mpi->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "rank %d: dp_mpi_allreduce: out of memory for its operation", mpi->rank);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    o->mpi = mpi; o->a = dp_nd_retain(a);
    pthread_mutex_lock(&mpi->m);
    o->seq = mpi->next_push_seq;
    pthread_mutex_unlock(&mpi->m);
    v = dp_nd_var(a);
    memset(&d, 0, sizeof d);
    d.async_fn = dp__mpi_allreduce_op; d.arg = o; d.cleanup = dp__mpi_op_free;
    d.writes = &v; d.num_writes = 1; d.ctx = dp_nd_ctx(a); d.priority = priority; d.name = "mpi_allreduce";
    d.no_skip = 1;            /* every rank starts every collective, see dp__mpi_allreduce_op */
    if (d.ctx.dev_type == DP_DEV_CPU_PINNED) d.ctx.dev_type = DP_DEV_CPU;
    if ((r = dp_push(mpi->eng, &d)) != DP_OK) return r;   /* the cleanup freed o */
    pthread_mutex_lock(&mpi->m);
    mpi->next_push_seq++;
    pthread_mutex_unlock(&mpi->m);
    return DP_OK;
}
/* Runs a blocking collective (it on the caller's stack: nothing to
   allocate, so a rank never drops out of the sequence for want of memory)
   and waits for it; the progress thread times it out. DP_OK, else
   DP_ERROR_TIMEOUT or DP_ERROR_BACKEND, logged with what (MPI's text). */
static dp_result dp__mpi_blocking(dp_mpi *mpi, dp__mpi_item *it, const char *what) {
    int status = 0;
    char why[sizeof mpi->broken_why];
    it->wait_status = &status;
    pthread_mutex_lock(&mpi->m);
    it->seq = mpi->next_push_seq++;
    pthread_mutex_unlock(&mpi->m);
    dp__mpi_hand_over(mpi, it);
    pthread_mutex_lock(&mpi->m);
    while (!status) pthread_cond_wait(&mpi->cv, &mpi->m);
    memcpy(why, mpi->broken_why, sizeof why);
    pthread_mutex_unlock(&mpi->m);
    if (status == 1) return DP_OK;
    DP__LOG(mpi->eng, DP_LOG_ERROR, BACKEND, "rank %d: %s: %s", mpi->rank, what, why);
    return status == DP_ERROR_TIMEOUT ? DP_ERROR_TIMEOUT : DP_ERROR_BACKEND;
}
DP_IMPL dp_result dp_mpi_barrier(dp_mpi *mpi) {
    dp__mpi_item it;
    if (!mpi) { DP__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_mpi_barrier: NULL dp_mpi"); return DP_ERROR_INVALID_ARGS; }
    memset(&it, 0, sizeof it);
    it.kind = DP__MPI_BARRIER;
    return dp__mpi_blocking(mpi, &it, "dp_mpi_barrier");
}

/* >>mpi_public: setup, ranks, the dist_sync store ------------------------------ */
static dp_result dp__mpi_kv_reduce(dp_kvstore *kv, int key, dp_ndarray *merged, int priority, void *user) {
    (void)kv; (void)key;
    return dp_mpi_allreduce((dp_mpi *)user, merged, priority);
}
/* dp_kv_init's record of a rank: key, status (dp_result), dtype, ndim, dims */
enum { DP__MPI_REC_KEY, DP__MPI_REC_STATUS, DP__MPI_REC_DTYPE, DP__MPI_REC_NDIM, DP__MPI_REC_DIMS, DP__MPI_REC = DP__MPI_REC_DIMS + DP_MAX_DIMS };
static void dp__mpi_rec_text(const int64_t *rec, char *buf, size_t cap) {
    dp_shape s;
    char sb[160];
    int i;
    memset(&s, 0, sizeof s);
    s.ndim = (int32_t)rec[DP__MPI_REC_NDIM];
    for (i = 0; i < s.ndim && i < DP_MAX_DIMS; i++) s.dims[i] = rec[DP__MPI_REC_DIMS + i];
    snprintf(buf, cap, "%s %s", dp_dtype_name((dp_dtype)rec[DP__MPI_REC_DTYPE]), dp_shape_format(&s, sb, sizeof sb));
}
/* The dist_sync store's global initialisation: every rank's key, shape,
   dtype and outcome go to every rank (one allgather), so every rank reaches
   the same verdict; then rank 0's value is broadcast into stored. The value
   is waited for first, so that its failure counts as this rank's. */
static dp_result dp__mpi_kv_init(dp_kvstore *kv, int key, dp_ndarray *stored, dp_result local, void *user) {
    dp_mpi *mpi = (dp_mpi *)user;
    int64_t rec[DP__MPI_REC];
    const int64_t *all = mpi->init_records, *bad = NULL;
    dp__mpi_item it;
    dp_failure f;
    dp_result r;
    char mine[200], theirs[200];
    int q, i;
    (void)kv;
    memset(rec, 0, sizeof rec);
    rec[DP__MPI_REC_KEY] = key; rec[DP__MPI_REC_STATUS] = local;
    if (local == DP_OK && dp_shape_size(dp_nd_shape(stored)) > INT_MAX) {
        DP__LOG(mpi->eng, DP_LOG_ERROR, ND_ARGS, "rank %d: dp_kv_init key %d: more than INT_MAX elements, the limit of a dist_sync key", mpi->rank, key);
        rec[DP__MPI_REC_STATUS] = DP_ERROR_INVALID_ARGS;
    }
    memset(&f, 0, sizeof f);
    if (rec[DP__MPI_REC_STATUS] == DP_OK && dp_wait_var(mpi->eng, dp_nd_var(stored), &f) != DP_OK) {
        DP__LOG(mpi->eng, DP_LOG_ERROR, ND_ARGS, "rank %d: dp_kv_init key %d: its value failed (%s: %s)", mpi->rank, key,
                f.op_name[0] ? f.op_name : "?", f.message[0] ? f.message : "no message");
        rec[DP__MPI_REC_STATUS] = DP_ERROR_OP_FAILED;
    }
    if (stored) {
        rec[DP__MPI_REC_DTYPE] = dp_nd_dtype(stored); rec[DP__MPI_REC_NDIM] = dp_nd_shape(stored)->ndim;
        for (i = 0; i < dp_nd_shape(stored)->ndim; i++) rec[DP__MPI_REC_DIMS + i] = dp_nd_shape(stored)->dims[i];
    }
    memset(&it, 0, sizeof it);
    it.kind = DP__MPI_ALLGATHER; it.data = rec; it.recv = mpi->init_records; it.count = DP__MPI_REC; it.type = MPI_INT64_T;
    if ((r = dp__mpi_blocking(mpi, &it, "dp_kv_init")) != DP_OK) return r;
    for (q = 0; q < mpi->size && !bad; q++) if (all[q * DP__MPI_REC + DP__MPI_REC_STATUS] != DP_OK) bad = all + q * DP__MPI_REC;
    if (bad) {
        q = (int)((bad - all) / DP__MPI_REC);
        r = (dp_result)bad[DP__MPI_REC_STATUS];
        if (q != mpi->rank)
            DP__LOG(mpi->eng, DP_LOG_ERROR, ND_ARGS, "rank %d: dp_kv_init key %d: rank %d failed to initialise key %lld (%s, logged there), so no rank adds it",
                    mpi->rank, key, q, (long long)bad[DP__MPI_REC_KEY], dp_result_string(r));
        return r;
    }
    for (q = 1; q < mpi->size && !bad; q++) {
        const int64_t *o = all + q * DP__MPI_REC;
        if (o[DP__MPI_REC_KEY] != all[DP__MPI_REC_KEY] || o[DP__MPI_REC_DTYPE] != all[DP__MPI_REC_DTYPE] || o[DP__MPI_REC_NDIM] != all[DP__MPI_REC_NDIM]
            || memcmp(o + DP__MPI_REC_DIMS, all + DP__MPI_REC_DIMS, sizeof *o * (size_t)all[DP__MPI_REC_NDIM]) != 0) bad = o;
    }
    if (bad) {
        q = (int)((bad - all) / DP__MPI_REC);
        dp__mpi_rec_text(all, mine, sizeof mine); dp__mpi_rec_text(bad, theirs, sizeof theirs);
        if (bad[DP__MPI_REC_KEY] != all[DP__MPI_REC_KEY])
            DP__LOG(mpi->eng, DP_LOG_ERROR, ND_ARGS, "rank %d: dp_kv_init: rank %d initialises key %lld (%s) where rank 0 initialises key %lld (%s): "
                    "every rank must initialise the same keys in the same order; no rank adds either", mpi->rank, q, (long long)bad[DP__MPI_REC_KEY], theirs,
                    (long long)all[DP__MPI_REC_KEY], mine);
        else
            DP__LOG(mpi->eng, DP_LOG_ERROR, ND_ARGS, "rank %d: dp_kv_init key %d: rank %d gives %s, rank 0 gives %s: every rank must initialise a key "
                    "with the same shape and dtype; no rank adds it", mpi->rank, key, q, theirs, mine);
        return DP_ERROR_INVALID_ARGS;
    }
    /* every rank agrees: rank 0's value into stored, which nothing else
       uses yet (the key is not in the store, its copy is done) */
    memset(&it, 0, sizeof it);
    it.kind = DP__MPI_BCAST; it.data = dp_nd_data(stored); it.count = (int)dp_shape_size(dp_nd_shape(stored));
    switch (dp_dtype_size(dp_nd_dtype(stored))) {
    case 8: it.type = MPI_UINT64_T; break;
    case 4: it.type = MPI_UINT32_T; break;
    case 2: it.type = MPI_UINT16_T; break;
    default: it.type = MPI_UINT8_T; break;
    }
    return dp__mpi_blocking(mpi, &it, "dp_kv_init");
}
/* The init check's records: DP__MPI_REC numbers per rank. */
static size_t dp__mpi_records_bytes(const dp_mpi *mpi) { return (size_t)mpi->size * sizeof(int64_t) * DP__MPI_REC; }
DP_IMPL dp_result dp_mpi_create(dp_engine *eng, const dp_mpi_desc *desc, dp_mpi **out) {
    dp_mpi *mpi;
    const char *env = getenv("DEPENG_MPI_TIMEOUT_MS");
    int ok;
    if (out) *out = NULL;
    if (!eng || !out || (desc && desc->timeout_ms < 0) || dp__mpi_exists) {
        DP__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_mpi_create: %s", dp__mpi_exists ? "one dp_mpi per process" : "NULL engine or out, or a negative timeout");
        return DP_ERROR_INVALID_ARGS;
    }
    if ((mpi = (dp_mpi *)dp_engine_alloc(eng, sizeof *mpi)) == NULL) { DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_mpi_create"); return DP_ERROR_OUT_OF_MEMORY; }
    memset(mpi, 0, sizeof *mpi);
    mpi->eng = eng;
    mpi->timeout_ms = desc && desc->timeout_ms ? desc->timeout_ms : env && atoi(env) > 0 ? atoi(env) : 60000;
    env = getenv("DEPENG_MPI_CHUNK_BYTES");
    mpi->chunk_bytes = desc && desc->chunk_bytes ? desc->chunk_bytes : env && atol(env) > 0 ? (size_t)atol(env) : (size_t)4 << 20;
    pthread_mutex_init(&mpi->m, NULL);
    pthread_cond_init(&mpi->cv, NULL);
    if (pthread_create(&mpi->thread, NULL, dp__mpi_thread, mpi) != 0) {
        DP__LOG(eng, DP_LOG_ERROR, THREAD_CREATE, "dp_mpi_create: the progress thread could not be started");
        pthread_mutex_destroy(&mpi->m); pthread_cond_destroy(&mpi->cv); dp_engine_free(eng, mpi, sizeof *mpi);
        return DP_ERROR_THREAD;
    }
    pthread_mutex_lock(&mpi->m);
    while (!mpi->started) pthread_cond_wait(&mpi->cv, &mpi->m);
    ok = mpi->init_status == 1;
    pthread_mutex_unlock(&mpi->m);
    if (!ok) {
        DP__LOG(eng, DP_LOG_ERROR, BACKEND, "dp_mpi_create: %s", mpi->init_error);
        pthread_join(mpi->thread, NULL);
        pthread_mutex_destroy(&mpi->m); pthread_cond_destroy(&mpi->cv); dp_engine_free(eng, mpi, sizeof *mpi);
        return DP_ERROR_BACKEND;
    }
    dp__mpi_exists = 1;
    if ((mpi->init_records = (int64_t *)dp_engine_alloc(eng, dp__mpi_records_bytes(mpi))) == NULL) {
        DP__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_mpi_create: out of memory for %d ranks' records", mpi->size);
        dp_mpi_destroy(mpi);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    *out = mpi;
    return DP_OK;
}
DP_IMPL dp_result dp_mpi_destroy(dp_mpi *mpi) {
    int broken;
    if (!mpi) return DP_OK;
    pthread_mutex_lock(&mpi->m);
    mpi->stop = 1;
    pthread_cond_broadcast(&mpi->cv);
    pthread_mutex_unlock(&mpi->m);
    pthread_join(mpi->thread, NULL);
    broken = mpi->broken;
    if (broken) DP__LOG(mpi->eng, DP_LOG_ERROR, BACKEND, "rank %d: MPI left unfinalised after a failed collective: %s", mpi->rank, mpi->broken_why);
    pthread_mutex_destroy(&mpi->m); pthread_cond_destroy(&mpi->cv);
    dp_engine_free(mpi->eng, mpi->init_records, dp__mpi_records_bytes(mpi));
    dp_engine_free(mpi->eng, mpi, sizeof *mpi);
    dp__mpi_exists = 0;
    return broken ? DP_ERROR_BACKEND : DP_OK;
}
DP_IMPL void dp_mpi_abort(dp_mpi *mpi, int code) {
    if (mpi) {
        pthread_mutex_lock(&mpi->m);
        mpi->abort_code = code; mpi->abort_requested = 1;
        pthread_cond_broadcast(&mpi->cv);
        pthread_mutex_unlock(&mpi->m);
        sleep(10);            /* MPI_Abort on the progress thread ends the process */
    }
    exit(code);
}
DP_IMPL int dp_mpi_rank(const dp_mpi *mpi) { return mpi ? mpi->rank : -1; }
DP_IMPL int dp_mpi_size(const dp_mpi *mpi) { return mpi ? mpi->size : -1; }
DP_IMPL dp_result dp_mpi_kv_create(dp_mpi *mpi, const dp_kvstore_desc *desc, dp_kvstore **out) {
    dp_kvstore_desc d;
    if (out) *out = NULL;
    if (!mpi || (desc && (desc->global_reduce || desc->global_init))) {
        DP__LOG(mpi ? mpi->eng : NULL, DP_LOG_ERROR, ND_ARGS, "dp_mpi_kv_create: %s", !mpi ? "NULL dp_mpi" : "desc->global_reduce or global_init is set already");
        return DP_ERROR_INVALID_ARGS;
    }
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    d.global_reduce = dp__mpi_kv_reduce; d.global_init = dp__mpi_kv_init; d.global_user = mpi;
    return dp_kv_create(mpi->eng, &d, out);
}
#endif /* DEPENG_MPI_IMPLEMENTATION */
