/* Stream-ordered RMA (DESIGN.md section 4): MPIX_Put_enqueue and the other enqueue calls
 * of maint/patches 0014.  The window's communicator is a stream communicator whose local
 * stream is a CUDA stream; every call queues work on that stream and returns.
 *
 * Direct path: puts, gets and put_signals to a window the stream reaches itself (this
 * rank's in device or page-locked memory, a same-node rank's device window through the
 * CUDA IPC handle its card carried) are one copy on the stream, and for a put_signal a
 * stream write (SET) or gdr's atomic add kernel (ADD) after it: no host in the path, and
 * stream order is their completion (a flush of ranks reached only so queues nothing).
 *
 * Queue path, for everything else, over the stream queue of src/rma/gdr_rma_stream_queue.h:
 * the calls queue stream memory operations.  gdr's progress starts each operation
 * when the stream reaches it, as MPICH's own request-based RMA (MPID_Rput, MPID_Rget,
 * MPID_Raccumulate: RDMA, the staged protocol or active messages, whatever the window
 * takes), and completes it when its request has; a put_signal's signal is an accumulate
 * (REPLACE or SUM of one uint64) started once the put is complete at the target, and a
 * notified put's or get's notification (MPIX_Put_notify_enqueue, gdr_notify.c) a SUM of 1
 * on the target's counter, started the same way.  A flush completes when the window's
 * operations to the rank are complete at their targets, notifications applied. */
#include "gdr_acc_map.h"
#include "gdr_triggered.h"

#include "gdr_engine_lock.h"
#include "gdr_rma.h"
#include "gpu/gdr_gpu_kernels_image.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_module.h"
#include "adapt/gdr_gpu_rma_stream.h"
#include "gpu/gdr_gpu_stream.h"
#include "gdr/gdr_rma_signal.h"
#include "rma/gdr_rma_stream_queue.h"
#include "gdr/gdr_rma_trigger_ring.h"

enum {
    ENQ_ENTRIES = 1024,         /* operations in flight per window (a power of two) */
    ENQ_STAGE = 1 << 20,        /* staging ring: origins the stream copies, in bytes */
    ENQ_STAGE_MAX = 64 * 1024   /* the largest origin staged */
};

/* One enqueued operation, as MPICH will be asked to carry it out. */
typedef struct enq_op {
    gdr_sq_kind_t kind;
    void *origin;
    MPI_Aint ocount;
    MPI_Datatype otype;
    int target;
    MPI_Aint tdisp, tcount;
    MPI_Datatype ttype;
    MPI_Op op;
    MPI_Aint signal_disp;
    uint64_t signal_value;
    int signal_op;
    MPIR_Win *notify_win;       /* a notified put or get: the counters' window, else NULL */
    int notify_idx;
    /* at run time */
    uint64_t seq;
    enum { SIGNAL_NONE, SIGNAL_WAITS, SIGNAL_SENT } signal; /* put_signal: its signal's stage */
    MPIR_Request *req;
    struct enq_op *next;        /* in flight */
} enq_op_t;

struct MPIDI_GDR_enqueue {
    gdr_stream_queue_t q;
    gdr_sq_stream_t stream;
    uint64_t *words;            /* host-pinned: reached, completed */
    void *stage;                /* host-pinned staging ring */
    enq_op_t *inflight;
    MPIR_Win *win;
    int nranks;
    /* the direct path (peers' windows as mapped here: gdr_peer_map.c): per rank, told
     * (MPIR_CVAR_CH4_GDR_VERBOSE=2) which way its stream RMA goes; an event after the last
     * direct operation */
    unsigned char *direct_told;
    gdr_gpu_event_t direct_done;
    int direct_any;             /* direct_done was recorded */
    int add_kernel;             /* gdr's signal add kernel: 0 not tried, 1 ready, -1 not */
    /* per rank: the queue carries operations to it that no flush has covered yet */
    unsigned char *unflushed;
    int unflushed_any;
    /* MPIR_CVAR_CH4_GDR_VERBOSE: a queue that stops moving is described once */
    uint64_t seen_started, seen_published;
    double seen_at;
    int stall_told;
};

enum { ENQ_STALL_SECONDS = 10 };

static void op_free(enq_op_t * op)
{
    MPIR_Datatype_release_if_not_builtin(op->otype);
    MPIR_Datatype_release_if_not_builtin(op->ttype);
    MPL_free(op);
}

/* ---- the executor (gdr's progress, VCI 0's lock held) -------------------------------- */

static int ex_start(void *ctx, const gdr_sq_entry_t *e, char *why, size_t why_len)
{
    struct MPIDI_GDR_enqueue *eq = ctx;
    enq_op_t *op = e->op;
    MPIR_Win *win = eq->win;
    const void *origin = op->origin;
    MPI_Aint ocount = op->ocount;
    MPI_Datatype otype = op->otype;
    int mpi_errno;

    if (e->staged) {            /* the stream's contiguous copy, as elements of the basic type */
        MPI_Aint size;
        otype = MPIDI_GDR_acc_elem_type(op->otype);
        MPIR_Datatype_get_size_macro(otype, size);
        origin = e->origin;
        ocount = (MPI_Aint) e->bytes / size;
    }
    op->seq = e->seq;
    if (op->kind == GDR_SQ_GET)
        mpi_errno = MPID_Rget(op->origin, op->ocount, op->otype, op->target, op->tdisp,
                              op->tcount, op->ttype, win, &op->req);
    else if (op->kind == GDR_SQ_ACC)
        mpi_errno = MPID_Raccumulate(origin, ocount, otype, op->target, op->tdisp, op->tcount,
                                     op->ttype, op->op, win, &op->req);
    else
        mpi_errno = MPID_Rput(origin, ocount, otype, op->target, op->tdisp, op->tcount,
                              op->ttype, win, &op->req);
    if (mpi_errno != MPI_SUCCESS) {
        MPIR_Err_get_string(mpi_errno, why, why_len, NULL);
        op_free(op);            /* the queue fails and never looks at it again */
        return -1;
    }
    op->next = eq->inflight;
    eq->inflight = op;
    return 0;
}

static int ex_flushed(void *ctx, int rank, char *why, size_t why_len)
{
    struct MPIDI_GDR_enqueue *eq = ctx;
    (void) why, (void) why_len;
    return MPIDI_GDR_triggered_remote_done(eq->win, rank);
}

static const uint64_t notify_one = 1;

/* A put_signal whose put is complete at the target: its signal, as an accumulate; a
 * notified put or get complete there: its notification. */
static int start_signal(struct MPIDI_GDR_enqueue *eq, enq_op_t * op)
{
    op->signal = SIGNAL_SENT;
    if (op->notify_win != NULL) {
        /* the data (same-node copies included) before the counter, on every CPU */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        return MPID_Raccumulate(&notify_one, 1, MPIR_UINT64_T_INTERNAL, op->target,
                                op->notify_idx, 1, MPIR_UINT64_T_INTERNAL, MPI_SUM,
                                op->notify_win, &op->req);
    }
    return MPID_Raccumulate(&op->signal_value, 1, MPIR_UINT64_T_INTERNAL, op->target,
                            op->signal_disp, 1, MPIR_UINT64_T_INTERNAL,
                            op->signal_op == GDR_SIGNAL_ADD ? MPI_SUM : MPI_REPLACE, eq->win,
                            &op->req);
}

/* Completes the operations whose requests have; starts the signals whose puts are
 * complete at their targets. */
static int reap(struct MPIDI_GDR_enqueue *eq, int *made)
{
    for (enq_op_t ** p = &eq->inflight; *p != NULL;) {
        enq_op_t *op = *p;
        if (op->signal == SIGNAL_WAITS) {
            if (!MPIDI_GDR_triggered_remote_done(eq->win, op->target)) {
                p = &op->next;
                continue;
            }
            int mpi_errno = start_signal(eq, op);
            if (mpi_errno != MPI_SUCCESS) {
                char why[200];
                MPIR_Err_get_string(mpi_errno, why, sizeof(why), NULL);
                *p = op->next;
                gdr_sq_complete(&eq->q, op->seq, -1, why);
                op_free(op);
                return mpi_errno;
            }
            *made = 1;
        }
        if (op->req == NULL || !MPIR_Request_is_complete(op->req)) {
            p = &op->next;
            continue;
        }
        int err = op->req->status.MPI_ERROR;
        MPIR_Request_free(op->req);
        op->req = NULL;
        *made = 1;
        if (err == MPI_SUCCESS && (op->kind == GDR_SQ_PUT_SIGNAL || op->notify_win != NULL)
            && op->signal == SIGNAL_NONE) {
            op->signal = SIGNAL_WAITS;  /* the data first, complete at the target */
            continue;
        }
        *p = op->next;
        gdr_sq_complete(&eq->q, op->seq, err != MPI_SUCCESS, "the operation's request failed");
        op_free(op);
    }
    return MPI_SUCCESS;
}

static double seconds_now(void)
{
    MPL_time_t now;
    double secs;
    MPL_wtime(&now);
    MPL_wtime_todouble(&now, &secs);
    return secs;
}

/* With MPIR_CVAR_CH4_GDR_VERBOSE: once a queue with work has not moved for
 * ENQ_STALL_SECONDS, says where each operation stands (a hang becomes a diagnosis). */
static void tell_stall(struct MPIDI_GDR_enqueue *eq)
{
    const gdr_stream_queue_t *q = &eq->q;
    if (q->issued == q->published) {
        eq->seen_at = 0;        /* idle: no clock read (a system call under UML) */
        return;
    }
    if (q->started != eq->seen_started || q->published != eq->seen_published
        || eq->seen_at == 0) {
        eq->seen_started = q->started;
        eq->seen_published = q->published;
        eq->seen_at = seconds_now();
        eq->stall_told = 0;
        return;
    }
    if (eq->stall_told || seconds_now() - eq->seen_at < ENQ_STALL_SECONDS)
        return;
    eq->stall_told = 1;
    fprintf(stderr, "gdr[%d]: the stream queue of window 0x%x has not moved for %d s: "
            "enqueued %llu, reached by the stream %llu, started %llu, complete %llu%s%s\n",
            MPIR_Process.rank, eq->win->handle, ENQ_STALL_SECONDS,
            (unsigned long long) q->issued,
            (unsigned long long) gdr_trig_load_acquire(q->reached),
            (unsigned long long) q->started, (unsigned long long) q->published,
            q->failed ? "; failed: " : "", q->failed ? q->error : "");
    static const char *const kinds[] = { "put", "get", "accumulate", "put_signal", "flush" };
    static const char *const stages[] = { "", ", its signal or notification waits for the "
        "data at the target", ", its signal or notification sent"
    };
    int shown = 0;
    for (const enq_op_t * op = eq->inflight; op != NULL && shown < 8; op = op->next, shown++)
        fprintf(stderr, "gdr[%d]:   operation %llu, %s to rank %d: request %s%s\n",
                MPIR_Process.rank, (unsigned long long) op->seq, kinds[op->kind], op->target,
                op->req == NULL ? "none" : MPIR_Request_is_complete(op->req) ? "complete" :
                "pending", stages[op->signal]);
    const gdr_sq_entry_t *next = gdr_sq_entry(q, q->started + 1);
    if (next != NULL)
        fprintf(stderr, "gdr[%d]:   the next to start: operation %llu, %s to rank %d (%s)\n",
                MPIR_Process.rank, (unsigned long long) next->seq, kinds[next->kind],
                next->rank, q->started < gdr_trig_load_acquire(q->reached) ?
                "the stream reached it; a flush waits for completion at the targets" :
                "the stream has not reached it: the stream waits on earlier work");
}

int MPIDI_GDR_enqueue_progress(MPIR_Win * win, int *made)
{
    struct MPIDI_GDR_enqueue *eq = GDR_WIN(win).enqueue;
    int mpi_errno = reap(eq, made);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    int n = gdr_sq_progress(&eq->q);
    if (n > 0)
        *made = 1;
    if (MPIR_CVAR_CH4_GDR_VERBOSE > 0)
        tell_stall(eq);
    /* a failed queue has released the stream; the error reaches the next enqueue call */
    return MPI_SUCCESS;
}

/* ---- the direct path ---------------------------------------------------------------- */

/* Rank's window as the stream reaches it, mapped on first use; NULL: through the queue. */
static const gdr_dev_peer_t *direct_target(struct MPIDI_GDR_enqueue *eq, int rank)
{
    if (rank < 0 || rank >= eq->nranks)
        return NULL;
    const gdr_dev_peer_t *t = MPIDI_GDR_peer_mapped(eq->win, rank);
    if (!eq->direct_told[rank]) {
        eq->direct_told[rank] = 1;
        if (MPIR_CVAR_CH4_GDR_VERBOSE > 1)
            fprintf(stderr, "gdr[%d]: stream RMA on window 0x%x to rank %d: %s\n",
                    MPIR_Process.rank, eq->win->handle, rank, t != NULL ?
                    "straight from the stream (its window mapped here)" : "through gdr's progress");
    }
    return t;
}

/* count elements of type as one contiguous span: its first byte's offset and its bytes;
 * 0 when the type is not contiguous. */
static int contig_span(MPI_Aint count, MPI_Datatype type, MPI_Aint * lb, MPI_Aint * bytes)
{
    int contig;
    MPI_Aint size, extent;
    MPIR_Datatype_is_contig(type, &contig);
    if (!contig)
        return 0;
    MPIR_Datatype_get_size_macro(type, size);
    MPIR_Type_get_true_extent_impl(type, lb, &extent);
    *bytes = size * count;
    return 1;
}

/* Memory a stream copy reads or writes in stream order: device or page-locked. */
static int stream_memory(const void *p)
{
    gdr_gpu_mem_info_t info;
    return gdr_gpu_mem_query(&MPIDI_GDR_global.gpu, p, &info) == 0
        && (info.is_device || info.is_pinned_host);
}

/* op on the stream itself, when its target is reached directly and its buffers are
 * contiguous stream memory.  1: queued (or an error in *mpi_errno); 0: for the queue. */
static int try_direct(struct MPIDI_GDR_enqueue *eq, const enq_op_t * op, int *mpi_errno)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    gdr_gpu_stream_t s = (gdr_gpu_stream_t) eq->stream.stream;
    MPI_Aint o_lb, o_bytes, t_lb, t_bytes;
    *mpi_errno = MPI_SUCCESS;
    if (op->kind != GDR_SQ_PUT && op->kind != GDR_SQ_GET && op->kind != GDR_SQ_PUT_SIGNAL)
        return 0;               /* accumulates: element-wise atomic through the queue */
    if (op->notify_win != NULL)
        return 0;               /* counters are host memory of the target's process */
    const gdr_dev_peer_t *t = direct_target(eq, op->target);
    if (t == NULL || !contig_span(op->ocount, op->otype, &o_lb, &o_bytes)
        || !contig_span(op->tcount, op->ttype, &t_lb, &t_bytes) || o_bytes != t_bytes)
        return 0;
    char *mine = (char *) op->origin + o_lb;
    if (o_bytes > 0 && !stream_memory(mine))
        return 0;               /* pageable: the driver would copy it now, not in order */
    if (op->kind == GDR_SQ_PUT_SIGNAL && op->signal_op == GDR_SIGNAL_ADD && eq->add_kernel == 0)
        eq->add_kernel = gdr_gpu_kernel_ready(g, GDR_GPU_SIGNAL_ADD_KERNEL,
                                              gdr_gpu_kernels_image,
                                              gdr_gpu_kernels_image_size) == 0 ? 1 : -1;
    if (op->kind == GDR_SQ_PUT_SIGNAL && op->signal_op == GDR_SIGNAL_ADD && eq->add_kernel < 0)
        return 0;
    /* displacements as the target's window has them (its own unit) */
    MPI_Aint unit = (MPI_Aint) t->disp_unit, size = (MPI_Aint) t->size;
    MPI_Aint at = op->tdisp * unit + t_lb, sig = op->signal_disp * unit;
    if (op->tdisp < 0 || at < 0 || at > size || t_bytes > size - at
        || (op->kind == GDR_SQ_PUT_SIGNAL
            && (op->signal_disp < 0 || sig > size - 8 || ((uintptr_t) t->base + sig) % 8 != 0))) {
        *mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_RMA_RANGE, "rank %d's window (%ld "
                                               "bytes) does not hold the %s at displacement "
                                               "%ld", op->target, (long) size,
                                               op->kind == GDR_SQ_PUT_SIGNAL ?
                                               "data or the aligned 8-byte signal word" :
                                               "data", (long) op->tdisp);
        return 1;
    }
    char *theirs = t->base + at;
    int rc = 0;
    if (t_bytes > 0)
        rc = op->kind == GDR_SQ_GET ? gdr_gpu_copy_async(g, s, mine, theirs, (size_t) t_bytes)
            : gdr_gpu_copy_async(g, s, theirs, mine, (size_t) t_bytes);
    if (rc == 0 && op->kind == GDR_SQ_PUT_SIGNAL) {
        uint64_t *word = (uint64_t *) (t->base + sig);
        rc = op->signal_op == GDR_SIGNAL_ADD ? gdr_gpu_signal_add_launch(g, s, word,
                                                                         op->signal_value)
            : gdr_gpu_stream_write_u64(g, s, word, op->signal_value);
    }
    if (rc == 0)
        rc = gdr_gpu_event_record(g, eq->direct_done, s);
    if (rc != 0)
        *mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "queueing a stream RMA "
                                               "operation to rank %d on the stream: %s",
                                               op->target, g->error);
    else
        eq->direct_any = 1;
    return 1;
}

/* ---- the window's queue ----------------------------------------------------------------- */

static const gdr_sq_exec_t enqueue_exec = {.start = ex_start,.flushed = ex_flushed };

static void queue_free(struct MPIDI_GDR_enqueue *eq)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    /* mappings go (at the window's free) only once the stream is past every direct
     * operation (after a failed drain it may not be: they stay mapped, as freeing them
     * under the GPU would fault) */
    if (eq->direct_any && gdr_gpu_event_query(g, eq->direct_done) != 1)
        MPIDI_GDR_peer_maps_hold(eq->win);
    if (eq->direct_done != NULL)
        (void) gdr_gpu_event_destroy(g, eq->direct_done);
    MPL_free(eq->direct_told);
    MPL_free(eq->unflushed);
    if (eq->q.entries != NULL)
        gdr_sq_free(&eq->q);
    if (eq->stage != NULL)
        gdr_gpu_host_free(g, eq->stage);
    if (eq->words != NULL)
        gdr_gpu_host_free(g, eq->words);
    MPL_free(eq);
}

/* The window's queue, made at its first enqueue: the stream of its communicator. */
static int queue_of(MPIR_Win * win, struct MPIDI_GDR_enqueue **out)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    if (GDR_WIN(win).enqueue != NULL) {
        *out = GDR_WIN(win).enqueue;
        return MPI_SUCCESS;
    }
    MPIR_Stream *stream = MPIR_stream_comm_get_local_stream(win->comm_ptr);
    if (stream == NULL || stream->type != MPIR_STREAM_GPU)
        return MPIDI_GDR_triggered_error(MPI_ERR_ARG, "enqueue calls need a window created "
                                         "over a stream communicator (MPIX_Stream_comm_create) "
                                         "whose stream is a CUDA stream (info type=cudaStream_t)");
    if (!g->on)
        return MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "enqueue calls need gdr's GPU support, "
                                         "which is off: %s", g->error);
    struct MPIDI_GDR_enqueue *eq = MPL_calloc(1, sizeof(*eq), MPL_MEM_RMA);
    if (eq == NULL)
        return MPIDI_GDR_triggered_error(MPI_ERR_NO_MEM, "out of memory for a stream queue");
    eq->win = win;
    eq->nranks = win->comm_ptr->local_size;
    eq->direct_told = MPL_calloc(eq->nranks, 1, MPL_MEM_RMA);
    eq->unflushed = MPL_calloc(eq->nranks, 1, MPL_MEM_RMA);
    if (eq->direct_told == NULL || eq->unflushed == NULL) {
        queue_free(eq);
        return MPIDI_GDR_triggered_error(MPI_ERR_NO_MEM, "out of memory for a stream queue");
    }
    if (gdr_gpu_rma_stream_init(g, (gdr_gpu_stream_t) stream->u.gpu_stream, &eq->stream) != 0
        || gdr_gpu_event_create(g, &eq->direct_done) != 0
        || gdr_gpu_host_alloc(g, 64, (void **) &eq->words) != 0
        || gdr_gpu_host_alloc(g, ENQ_STAGE, &eq->stage) != 0) {
        int err = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "setting up the stream queue: %s",
                                            g->error);
        queue_free(eq);
        return err;
    }
    if (gdr_sq_init(&eq->q, &eq->stream, &enqueue_exec, eq, &eq->words[0], &eq->words[1],
                    eq->stage, ENQ_STAGE, ENQ_STAGE_MAX, ENQ_ENTRIES) != GDR_SQ_OK) {
        queue_free(eq);
        return MPIDI_GDR_triggered_error(MPI_ERR_NO_MEM, "out of memory for a stream queue");
    }
    GDR_WIN(win).enqueue = eq;
    int mpi_errno = MPIDI_GDR_triggered_add(win);
    *out = eq;
    return mpi_errno;
}

int MPIDI_GDR_enqueue_drain(MPIR_Win * win)
{
    int mpi_errno = MPI_SUCCESS;
    if (win->dev.netmod.gdr.s == NULL || GDR_WIN(win).enqueue == NULL)
        return MPI_SUCCESS;
    struct MPIDI_GDR_enqueue *eq = GDR_WIN(win).enqueue;
    /* the stream may still be on its way to work enqueued earlier: let it get there (the
     * window's operations move on its stream's VCI: progress that one too) */
    MPIR_Stream *stream = MPIR_stream_comm_get_local_stream(win->comm_ptr);
    int direct_past = !eq->direct_any;
    while (mpi_errno == MPI_SUCCESS
           && !(gdr_sq_idle(&eq->q) && eq->inflight == NULL && direct_past)) {
        mpi_errno = MPIDI_GDR_progress_all();
        if (mpi_errno == MPI_SUCCESS && stream != NULL)
            mpi_errno = MPID_Stream_progress(stream);
        if (!direct_past) {
            int rc = gdr_gpu_event_query(&MPIDI_GDR_global.gpu, eq->direct_done);
            if (rc < 0)
                mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "the stream failed before "
                                                      "its direct RMA operations completed: "
                                                      "%s", MPIDI_GDR_global.gpu.error);
            direct_past = rc == 1;
        }
    }
    if (mpi_errno == MPI_SUCCESS && eq->q.failed)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "the window's stream queue "
                                              "stopped: %s", gdr_sq_error(&eq->q));
    return mpi_errno;
}

int MPIDI_GDR_enqueue_free(MPIR_Win * win)
{
    struct MPIDI_GDR_enqueue *eq = GDR_WIN(win).enqueue;
    int mpi_errno = MPIDI_GDR_enqueue_drain(win);
    int took = MPIDI_GDR_engine_enter();
    while (eq->inflight != NULL) {      /* only after a failure */
        enq_op_t *op = eq->inflight;
        eq->inflight = op->next;
        if (op->req != NULL)
            MPIR_Request_free(op->req);
        op_free(op);
    }
    queue_free(eq);
    GDR_WIN(win).enqueue = NULL;
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

/* ---- the calls ---------------------------------------------------------------------- */

static int enqueue(enq_op_t * proto, MPIR_Win * win)
{
    int mpi_errno = MPI_SUCCESS, took = MPIDI_GDR_engine_enter();
    struct MPIDI_GDR_enqueue *eq;
    enq_op_t *op = NULL;
    const void *send = NULL;    /* what the stream copies, when it may */
    size_t bytes = 0;
    int rc;

    if (win->dev.netmod.gdr.s == NULL) {
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_WIN, "the window has no gdr state");
        goto fn_exit;
    }
    if (MPIDIG_WIN(win, sync).access_epoch_type != MPIDIG_EPOTYPE_LOCK_ALL) {
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_RMA_SYNC, "enqueue calls need a "
                                              "passive-target epoch opened with "
                                              "MPI_Win_lock_all on the host");
        goto fn_exit;
    }
    /* a native lock is taken here, by the caller: gdr's progress starts the operation
     * later and must not wait for a lock there */
    if (proto->target >= 0)
        mpi_errno = MPIDI_GDR_win_need(win, proto->target);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = queue_of(win, &eq);
    if (mpi_errno != MPI_SUCCESS)
        goto fn_exit;
    if (eq->q.failed) {
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "the window's stream queue "
                                              "stopped: %s", gdr_sq_error(&eq->q));
        goto fn_exit;
    }
    if (proto->kind == GDR_SQ_FLUSH) {
        /* operations that went straight through the stream are complete in stream order:
         * only those the queue carries need the flush (and its trip through the host) */
        int r = proto->target;
        if (r >= 0 ? !eq->unflushed[r] : !eq->unflushed_any)
            goto fn_exit;
        if (r >= 0)
            eq->unflushed[r] = 0;
        else {
            memset(eq->unflushed, 0, (size_t) eq->nranks);
            eq->unflushed_any = 0;
        }
        op = NULL;
        goto queue_it;
    }
    if (try_direct(eq, proto, &mpi_errno))
        goto fn_exit;
    op = MPL_malloc(sizeof(*op), MPL_MEM_RMA);
    if (op == NULL) {
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_NO_MEM, "out of memory for an enqueued "
                                              "operation");
        goto fn_exit;
    }
    *op = *proto;
    MPIR_Datatype_add_ref_if_not_builtin(op->otype);
    MPIR_Datatype_add_ref_if_not_builtin(op->ttype);

    /* a contiguous origin of one basic type is copied by the stream: reusable at once */
    if (op->kind != GDR_SQ_GET && op->ocount > 0) {
        int contig;
        MPI_Aint size, true_lb, extent;
        MPIR_Datatype_is_contig(op->otype, &contig);
        MPI_Datatype basic = MPIDI_GDR_acc_elem_type(op->otype);
        MPIR_Datatype_get_size_macro(op->otype, size);
        MPIR_Type_get_true_extent_impl(op->otype, &true_lb, &extent);
        if (contig && basic != MPI_DATATYPE_NULL) {
            send = (const char *) op->origin + true_lb;
            bytes = (size_t) (size * op->ocount);
        }
    }
  queue_it:
    while ((rc = op == NULL ? gdr_sq_enqueue_flush(&eq->q, proto->target)
            : gdr_sq_enqueue(&eq->q, op->kind, op->target, send, bytes, op)) == GDR_SQ_FULL) {
        /* ENQ_ENTRIES operations the stream has not reached: its own back-pressure */
        mpi_errno = MPIDI_GDR_progress_all();
        if (mpi_errno != MPI_SUCCESS)
            goto fn_exit;
    }
    if (rc != GDR_SQ_OK) {
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "%s", gdr_sq_error(&eq->q));
        goto fn_exit;
    }
    if (op != NULL && op->target >= 0 && op->target < eq->nranks) {
        eq->unflushed[op->target] = 1;
        eq->unflushed_any = 1;
    }
    op = NULL;
  fn_exit:
    if (op != NULL)
        op_free(op);
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

int MPIR_Put_enqueue_impl(const void *origin_addr, MPI_Aint origin_count,
                          MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                          MPI_Aint target_count, MPI_Datatype target_datatype, MPIR_Win * win_ptr)
{
    enq_op_t op = {.kind = GDR_SQ_PUT,.origin = (void *) origin_addr,.ocount = origin_count,
        .otype = origin_datatype,.target = target_rank,.tdisp = target_disp,
        .tcount = target_count,.ttype = target_datatype,.op = MPI_OP_NULL
    };
    return enqueue(&op, win_ptr);
}

int MPIR_Get_enqueue_impl(void *origin_addr, MPI_Aint origin_count, MPI_Datatype origin_datatype,
                          int target_rank, MPI_Aint target_disp, MPI_Aint target_count,
                          MPI_Datatype target_datatype, MPIR_Win * win_ptr)
{
    enq_op_t op = {.kind = GDR_SQ_GET,.origin = origin_addr,.ocount = origin_count,
        .otype = origin_datatype,.target = target_rank,.tdisp = target_disp,
        .tcount = target_count,.ttype = target_datatype,.op = MPI_OP_NULL
    };
    return enqueue(&op, win_ptr);
}

int MPIR_Accumulate_enqueue_impl(const void *origin_addr, MPI_Aint origin_count,
                                 MPI_Datatype origin_datatype, int target_rank,
                                 MPI_Aint target_disp, MPI_Aint target_count,
                                 MPI_Datatype target_datatype, MPI_Op op, MPIR_Win * win_ptr)
{
    enq_op_t e = {.kind = GDR_SQ_ACC,.origin = (void *) origin_addr,.ocount = origin_count,
        .otype = origin_datatype,.target = target_rank,.tdisp = target_disp,
        .tcount = target_count,.ttype = target_datatype,.op = op
    };
    return enqueue(&e, win_ptr);
}

int MPIR_Put_signal_enqueue_impl(const void *origin_addr, MPI_Aint origin_count,
                                 MPI_Datatype origin_datatype, int target_rank,
                                 MPI_Aint target_disp, MPI_Aint target_count,
                                 MPI_Datatype target_datatype, MPI_Aint signal_disp,
                                 uint64_t signal_value, int signal_op, MPIR_Win * win_ptr)
{
    if (!gdr_signal_op_valid(signal_op))
        return MPIDI_GDR_triggered_error(MPI_ERR_ARG, "signal_op %d is neither MPIX_SIGNAL_SET "
                                         "nor MPIX_SIGNAL_ADD", signal_op);
    enq_op_t op = {.kind = GDR_SQ_PUT_SIGNAL,.origin = (void *) origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype,.op = MPI_OP_NULL,
        .signal_disp = signal_disp,.signal_value = signal_value,.signal_op = signal_op
    };
    return enqueue(&op, win_ptr);
}

int MPIDI_GDR_enqueue_notified(int is_get, void *origin_addr, MPI_Aint origin_count,
                               MPI_Datatype origin_datatype, int target_rank,
                               MPI_Aint target_disp, MPI_Aint target_count,
                               MPI_Datatype target_datatype, MPIR_Win * win,
                               MPIR_Win * counters, int idx)
{
    enq_op_t op = {.kind = is_get ? GDR_SQ_GET : GDR_SQ_PUT,.origin = origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype,.op = MPI_OP_NULL,
        .notify_win = counters,.notify_idx = idx
    };
    return enqueue(&op, win);
}

int MPIR_Win_flush_enqueue_impl(int rank, MPIR_Win * win_ptr)
{
    enq_op_t op = {.kind = GDR_SQ_FLUSH,.target = rank,.otype = MPI_DATATYPE_NULL,
        .ttype = MPI_DATATYPE_NULL };
    return enqueue(&op, win_ptr);
}

int MPIR_Win_flush_all_enqueue_impl(MPIR_Win * win_ptr)
{
    return MPIR_Win_flush_enqueue_impl(-1, win_ptr);
}

int MPIDI_GDR_enqueue_wait(MPIR_Win * win, const uint64_t * word, int cmp, uint64_t value)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    gdr_gpu_wait_cmp_t how = GDR_GPU_WAIT_EQ;
    /* EQ, GE and GT are stream memory operations; the others a polling kernel of gdr's */
    int by_kernel = 0;
    if (cmp == GDR_CMP_GE || cmp == GDR_CMP_GT)
        how = GDR_GPU_WAIT_GEQ;
    else if (cmp != GDR_CMP_EQ)
        by_kernel = 1;
    uint64_t v = cmp == GDR_CMP_GT ? value + 1 : value;
    int took = MPIDI_GDR_engine_enter(), mpi_errno = MPI_SUCCESS;
    struct MPIDI_GDR_enqueue *eq;
    gdr_gpu_mem_info_t info;
    mpi_errno = queue_of(win, &eq);
    if (mpi_errno == MPI_SUCCESS && (gdr_gpu_mem_query(g, word, &info) != 0
                                     || (!info.is_device && !info.is_pinned_host)))
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_ARG, "a stream can wait only on device "
                                              "or page-locked memory; this word is neither");
    gdr_gpu_stream_t s = mpi_errno == MPI_SUCCESS ? (gdr_gpu_stream_t) eq->stream.stream : NULL;
    if (mpi_errno == MPI_SUCCESS && by_kernel
        && gdr_gpu_kernel_ready(g, GDR_GPU_SIGNAL_WAIT_KERNEL, gdr_gpu_kernels_image,
                                gdr_gpu_kernels_image_size) != 0)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "a stream waits for MPIX_CMP_NE, "
                                              "_LT and _LE with gdr's kernel, which cannot run "
                                              "here (%s); EQ, GE and GT need none", g->error);
    else if (mpi_errno == MPI_SUCCESS
             && (by_kernel ? gdr_gpu_signal_wait_launch(g, s, word, value, cmp)
                 : gdr_gpu_stream_wait_u64(g, s, word, v, how)) != 0)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "queueing the wait: %s", g->error);
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

int MPIR_Win_signal_wait_enqueue_impl(MPIR_Win * win_ptr, MPI_Aint signal_disp, int cmp,
                                      uint64_t value)
{
    if (!gdr_signal_cmp_valid(cmp))
        return MPIDI_GDR_triggered_error(MPI_ERR_ARG, "comparison %d is none of MPIX_CMP_EQ, "
                                         "_NE, _GT, _GE, _LT, _LE", cmp);
    if (cmp == GDR_CMP_GT && value == UINT64_MAX)
        return MPIDI_GDR_triggered_error(MPI_ERR_ARG, "no value is greater than UINT64_MAX");
    MPI_Aint at = signal_disp * win_ptr->disp_unit;
    if (signal_disp < 0 || at + 8 > win_ptr->size || ((uintptr_t) win_ptr->base + at) % 8 != 0)
        return MPIDI_GDR_triggered_error(MPI_ERR_RMA_RANGE, "the signal word at displacement "
                                         "%ld is not an aligned 8-byte word inside this rank's "
                                         "window", (long) signal_disp);
    return MPIDI_GDR_enqueue_wait(win_ptr, (const uint64_t *) ((const char *) win_ptr->base + at),
                                  cmp, value);
}
