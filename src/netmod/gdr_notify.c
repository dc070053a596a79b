/* Notified RMA (docs/notified-rma.md): the bodies of patch 0022's MPIX_ calls.
 *
 * Counters: MPIX_Win_notify_attach allocates them as a window of its own over the same
 * group (the counters' window: host memory gdr registers for the NIC's atomics, mapped by
 * same-node ranks through MPICH's shared memory), learns every rank's count, and opens a
 * passive epoch on it that lasts until detach.  A notification is an accumulate of
 * MPI_SUM of 1 on one 8-byte counter there, a signal ADD (gdr_rma_signal.h) as
 * MPIX_Put_signal_enqueue sends it: between nodes a NIC fetch-add when the window's
 * accumulates all reach the NIC (gdr_rma_path.h), otherwise the target applies it.
 *
 * Order: MPIX_Put_notify / MPIX_Get_notify start the data as MPI_Rput / MPI_Rget would
 * (whatever path: RDMA, same-node copies, the staged protocol, messages) and remember the
 * request (src/rma/gdr_rma_notify.h).  Once the request is complete, the Put's data is
 * at the target (gdr's requests and MPICH's complete on the target's acknowledgement) or
 * the Get's read is done, and only then is the notification sent: from gdr's progress, or
 * from the synchronisation call that must wait for it (MPIDI_GDR_notify_drain). */
#include "gdr_notify.h"
#include "gdr_engine_lock.h"
#include "gdr_triggered.h"
#include "gpu/gdr_gpu_mem.h"
#include "gdr/gdr_rma_signal.h"
#include "rma/gdr_rma_notify.h"

#include <limits.h>
#include <stdarg.h>

struct MPIDI_GDR_notify {
    gdr_rma_notify_t t;
    MPIR_Win *win;              /* the user's window */
    MPIR_Win *cwin;             /* the counters' window */
    int err;                    /* first MPI error of a notified operation, for the next drain */
    int sweeping;               /* a sweep is running: a notification it sends may progress
                                 * MPICH, whose progress must not sweep the list under it */
    uint64_t *stream_mine;      /* this rank's counters as streams reach them (page-locked
                                 * for the GPU at attach), or NULL */
    char stream_why[200];       /* why streams cannot reach them */
    struct MPIDI_GDR_notify *next;      /* in MPIDI_GDR_global.notify */
};

/* A request-less operation that completed at once (MPICH returns no request then). */
static char done_at_once;

static const uint64_t one = 1;

/* An MPI error of class err_class carrying a sentence. */
static int notify_error(int err_class, const char *fmt, ...)
{
    char what[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    /* (MPICH's message extractor wants each class spelled out) */
    switch (err_class) {
        case MPI_ERR_ARG:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_ARG, "**gdr_notify", "**gdr_notify %s", what);
        case MPI_ERR_RMA_ATTACH:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_RMA_ATTACH, "**gdr_notify", "**gdr_notify %s",
                                        what);
        case MPI_ERR_NO_MEM:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_NO_MEM, "**gdr_notify", "**gdr_notify %s",
                                        what);
        default:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_OTHER, "**gdr_notify", "**gdr_notify %s",
                                        what);
    }
}

static struct MPIDI_GDR_notify *notify_of(MPIR_Win * win)
{
    return win->dev.netmod.gdr.s != NULL ? GDR_WIN(win).notify : NULL;
}

static int no_counters(void)
{
    return notify_error(MPI_ERR_ARG, "this window has no notification counters: call "
                        "MPIX_Win_notify_attach first (collectively)");
}

/* ---- notifications leaving -------------------------------------------------------------- */

static int op_done(void *ctx, void *op)
{
    (void) ctx;
    return op == &done_at_once || MPIR_Request_is_complete((MPIR_Request *) op);
}

/* 1 added to target's counter idx.  A sweep runs in gdr's progress, where this thread
 * holds VCI 0's lock under MPI_THREAD_MULTIPLE (MPICH's progress took it), or in a
 * synchronisation call, where it does not.  With the lock held, MPID_Accumulate would
 * take it again through MPIDIG (an abort: "Resource deadlock avoided"): gdr's own way
 * first (the NIC's fetch-add), else MPIDIG's message under the lock held. */
static int send_one(struct MPIDI_GDR_notify *nt, int target, int idx)
{
    /* the data (same-node copies included) before the counter, on every CPU */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!MPIDI_GDR_engine_held())
        return MPID_Accumulate(&one, 1, MPIR_UINT64_T_INTERNAL, target, idx, 1,
                               MPIR_UINT64_T_INTERNAL, MPI_SUM, nt->cwin);
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_ACC,.origin = &one,.ocount = 1,
        .otype = MPIR_UINT64_T_INTERNAL,.target = target,.tdisp = idx,.tcount = 1,
        .ttype = MPIR_UINT64_T_INTERNAL,.op = MPI_SUM
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, nt->cwin, NULL, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    int vci = MPIDI_WIN(nt->cwin, am_vci);
    if (vci != 0)               /* another VCI's lock, not held here */
        return MPIDIG_mpi_accumulate(&one, 1, MPIR_UINT64_T_INTERNAL, target, idx, 1,
                                     MPIR_UINT64_T_INTERNAL, MPI_SUM, nt->cwin);
    return MPIDIG_do_accumulate(&one, 1, MPIR_UINT64_T_INTERNAL, target, idx, 1,
                                MPIR_UINT64_T_INTERNAL, MPI_SUM, nt->cwin, vci, NULL);
}

/* The operation op is complete at the target: release its request and add 1 to the
 * target's counter (not if the operation failed: its error waits for the next drain). */
static int op_send(void *ctx, void *op, int target, int idx)
{
    struct MPIDI_GDR_notify *nt = ctx;
    if (op != &done_at_once) {
        MPIR_Request *req = op;
        int err = req->status.MPI_ERROR;
        /* (the pool's lock is VCI 0's for pool 0: not taken again where it is held) */
        int unused;
        MPIR_Request_free_with_safety(req, !(MPIDI_GDR_engine_held()
                                             && MPIR_REQUEST_POOL(req) == 0), &unused);
        if (err != MPI_SUCCESS) {
            if (nt->err == MPI_SUCCESS)
                nt->err = err;
            return 0;
        }
    }
    return send_one(nt, target, idx);
}

static int sweep(struct MPIDI_GDR_notify *nt, int target, size_t *sent)
{
    int took = MPIDI_GDR_engine_enter(), mpi_errno = MPI_SUCCESS;
    if (!nt->sweeping) {
        nt->sweeping = 1;
        mpi_errno = gdr_rma_notify_sweep(&nt->t, target, op_done, op_send, nt, sent);
        nt->sweeping = 0;
    }
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

int MPIDI_GDR_notify_progress(int *made_progress)
{
    int idle = 0, mpi_errno = MPI_SUCCESS;
    /* a notification sent below may progress MPICH again */
    if (!__atomic_compare_exchange_n(&MPIDI_GDR_global.notify_progressing, &idle, 1, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return MPI_SUCCESS;
    for (struct MPIDI_GDR_notify * nt = MPIDI_GDR_global.notify;
         nt != NULL && mpi_errno == MPI_SUCCESS; nt = nt->next) {
        if (gdr_rma_notify_pending(&nt->t, -1) == 0)
            continue;
        size_t sent = 0;
        mpi_errno = sweep(nt, -1, &sent);
        if (sent > 0 && made_progress != NULL)
            *made_progress = 1;
    }
    __atomic_store_n(&MPIDI_GDR_global.notify_progressing, 0, __ATOMIC_RELEASE);
    return mpi_errno;
}

int MPIDI_GDR_notify_drain_counters(MPIR_Win * win, int rank)
{
    struct MPIDI_GDR_notify *nt = notify_of(win);
    if (nt == NULL)
        return MPI_SUCCESS;
    int mpi_errno = MPI_SUCCESS;
    while (gdr_rma_notify_pending(&nt->t, rank) > 0) {
        mpi_errno = sweep(nt, rank, NULL);
        if (mpi_errno != MPI_SUCCESS)
            return mpi_errno;
        if (gdr_rma_notify_pending(&nt->t, rank) > 0) {
            mpi_errno = MPID_Progress_test(NULL);
            if (mpi_errno != MPI_SUCCESS)
                return mpi_errno;
        }
    }
    /* the notifications sent now and before (from progress) applied at their targets */
    mpi_errno = rank < 0 ? MPID_Win_flush_all(nt->cwin) : MPID_Win_flush(rank, nt->cwin);
    if (mpi_errno == MPI_SUCCESS && nt->err != MPI_SUCCESS) {
        mpi_errno = nt->err;
        nt->err = MPI_SUCCESS;
    }
    return mpi_errno;
}

/* ---- the counters as streams see them ------------------------------------------------- */

/* This rank's n bytes of counters at mine, page-locked and mapped for the GPU where there
 * is one, so that a stream can wait on them (MPIX_Win_notify_wait_enqueue); where that
 * fails only stream waits are refused, saying why. */
static void pin_for_streams(struct MPIDI_GDR_notify *nt, void *mine, size_t n)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    void *dev = NULL;
    if (!g->on) {
        snprintf(nt->stream_why, sizeof(nt->stream_why), "this process has no GPU (%s)",
                 g->error);
        return;
    }
    if (n == 0) {
        snprintf(nt->stream_why, sizeof(nt->stream_why), "this rank attached no counters");
        return;
    }
    int took = MPIDI_GDR_engine_enter();
    if (gdr_gpu_host_register(g, mine, n, &dev) == 0)
        nt->stream_mine = dev;
    else
        snprintf(nt->stream_why, sizeof(nt->stream_why), "page-locking them for the GPU "
                 "failed: %s", g->error);
    MPIDI_GDR_engine_exit(took);
}

static void unpin_for_streams(struct MPIDI_GDR_notify *nt)
{
    if (nt->stream_mine == NULL)
        return;
    int took = MPIDI_GDR_engine_enter();
    (void) gdr_gpu_host_unregister(&MPIDI_GDR_global.gpu, nt->t.mine);
    MPIDI_GDR_engine_exit(took);
    nt->stream_mine = NULL;
}

/* A device handle's view of this rank's counters (gdr_device_win.c made it), if win has
 * a handle: what is attached now (engine lock held). */
static void kernel_view(MPIR_Win * win)
{
    gdr_dev_notify_t *v = GDR_WIN(win).kernel_counters;
    if (v == NULL)
        return;
    uint64_t *mine;
    int64_t count;
    MPIDI_GDR_notify_gpu_view(win, &mine, &count);
    /* (count first to 0, so that no kernel pairs the new count with the old pointer) */
    __atomic_store_n(&v->count, 0, __ATOMIC_SEQ_CST);
    v->mine = mine;
    __atomic_store_n(&v->count, count, __ATOMIC_SEQ_CST);
}

/* ---- the calls ------------------------------------------------------------------------ */

int MPIR_Win_notify_attach_impl(MPIR_Win * win, int notification_num, MPIR_Info * info_ptr)
{
    (void) info_ptr;            /* no key read yet */
    int mpi_errno = MPI_SUCCESS;
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    MPIR_Comm *comm = win->comm_ptr;
    int n = comm->local_size, me = comm->rank;
    int *counts = NULL;
    MPIR_Info *cinfo = NULL;
    struct MPIDI_GDR_notify *nt = NULL;
    void *base = NULL;

    if (s == NULL)
        return notify_error(MPI_ERR_OTHER, "this window has no gdr state (its creation "
                            "did not reach the gdr netmod)");
    if (s->notify != NULL)
        return notify_error(MPI_ERR_RMA_ATTACH, "notification counters are already "
                            "attached to this window: MPIX_Win_notify_detach them first");
    counts = MPL_malloc(sizeof(int) * (size_t) n, MPL_MEM_RMA);
    nt = MPL_calloc(1, sizeof(*nt), MPL_MEM_RMA);
    if (counts == NULL || nt == NULL) {
        mpi_errno = notify_error(MPI_ERR_NO_MEM, "no memory for the notification counters' "
                                 "table of %d ranks", n);
        goto fn_fail;
    }
    /* every origin range-checks its notifications: it learns every target's count */
    mpi_errno = MPIR_Allgather_impl(&notification_num, 1, MPIR_INT_INTERNAL, counts, 1,
                                    MPIR_INT_INTERNAL, comm, MPIR_COLL_ATTR_SYNC);
    MPIR_ERR_CHECK(mpi_errno);

    /* only SUM reaches the counters, so the NIC's fetch-add may carry it between nodes */
    mpi_errno = MPIR_Info_alloc(&cinfo);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIR_Info_set_impl(cinfo, "which_accumulate_ops", "sum");
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIR_Info_set_impl(cinfo, "accumulate_ordering", "none");
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPID_Win_allocate((MPI_Aint) notification_num * 8, 8, cinfo, comm, &base,
                                  &nt->cwin);
    MPIR_ERR_CHECK(mpi_errno);
    nt->cwin->name[0] = 0;
    nt->cwin->errhandler = NULL;

    int rc = gdr_rma_notify_init(&nt->t, n, counts, me, base);
    if (rc != GDR_STATUS_OK) {
        mpi_errno = notify_error(rc == GDR_STATUS_NOMEM ? MPI_ERR_NO_MEM : MPI_ERR_OTHER,
                                 "the notification counters' table could not be made");
        goto fn_fail;
    }
    pin_for_streams(nt, base, (size_t) notification_num * 8);
    mpi_errno = MPID_Win_lock_all(MPI_MODE_NOCHECK, nt->cwin);
    MPIR_ERR_CHECK(mpi_errno);
    /* nobody notifies a counter before its owner has zeroed it */
    mpi_errno = MPIR_Barrier_impl(comm, MPIR_COLL_ATTR_SYNC);
    MPIR_ERR_CHECK(mpi_errno);

    nt->win = win;
    int took = MPIDI_GDR_engine_enter();
    s->notify = nt;
    nt->next = MPIDI_GDR_global.notify;
    MPIDI_GDR_global.notify = nt;
    kernel_view(win);           /* kernels reach the counters now */
    MPIDI_GDR_engine_exit(took);
  fn_exit:
    MPL_free(counts);
    if (cinfo != NULL)
        MPIR_Info_free_impl(cinfo);
    return mpi_errno;
  fn_fail:
    if (nt != NULL) {
        unpin_for_streams(nt);
        gdr_rma_notify_fini(&nt->t);
        if (nt->cwin != NULL)
            MPID_Win_free(&nt->cwin);
        MPL_free(nt);
    }
    goto fn_exit;
}

static int detach(MPIR_Win * win, struct MPIDI_GDR_notify *nt)
{
    /* by MPI's rules nothing is in flight; a notification still pending leaves first
     * (the stream's too: its queue may still hold notified operations) */
    int mpi_errno = MPIDI_GDR_enqueue_drain(win);
    int err = MPIDI_GDR_notify_drain_counters(win, -1);
    mpi_errno = mpi_errno ? mpi_errno : err;
    int took = MPIDI_GDR_engine_enter();
    for (struct MPIDI_GDR_notify ** p = &MPIDI_GDR_global.notify; *p != NULL; p = &(*p)->next)
        if (*p == nt) {
            *p = nt->next;
            break;
        }
    GDR_WIN(win).notify = NULL;
    kernel_view(win);           /* before the counters are unpinned */
    MPIDI_GDR_engine_exit(took);
    err = MPID_Win_unlock_all(nt->cwin);
    mpi_errno = mpi_errno ? mpi_errno : err;
    unpin_for_streams(nt);
    /* collective: every rank's notifications have been applied when it returns */
    err = MPID_Win_free(&nt->cwin);
    mpi_errno = mpi_errno ? mpi_errno : err;
    gdr_rma_notify_fini(&nt->t);
    MPL_free(nt);
    return mpi_errno;
}

int MPIR_Win_notify_detach_impl(MPIR_Win * win)
{
    struct MPIDI_GDR_notify *nt = notify_of(win);
    if (nt == NULL)
        return notify_error(MPI_ERR_RMA_ATTACH, "no notification counters are attached to "
                            "this window (MPIX_Win_notify_attach)");
    return detach(win, nt);
}

int MPIDI_GDR_notify_win_free(MPIR_Win * win)
{
    struct MPIDI_GDR_notify *nt = notify_of(win);
    return nt != NULL ? detach(win, nt) : MPI_SUCCESS;
}

/* ---- for kernels (gdr_device_win.c) ---------------------------------------------------- */

void MPIDI_GDR_notify_gpu_view(MPIR_Win * win, uint64_t ** mine, int64_t * count)
{
    struct MPIDI_GDR_notify *nt = notify_of(win);
    *mine = nt != NULL ? nt->stream_mine : NULL;
    *count = *mine != NULL ? nt->t.counts[nt->t.me] : 0;
}

int MPIDI_GDR_notify_check_index(MPIR_Win * win, int target, int64_t idx, char *why,
                                 size_t why_len)
{
    struct MPIDI_GDR_notify *nt = notify_of(win);
    if (nt == NULL) {
        snprintf(why, why_len, "the window has no notification counters "
                 "(MPIX_Win_notify_attach first)");
        return -1;
    }
    if (idx > INT_MAX) {
        snprintf(why, why_len, "notification index %lld is out of range", (long long) idx);
        return -1;
    }
    return gdr_rma_notify_check(&nt->t, target, (int) idx, why, why_len) == GDR_STATUS_OK
        ? 0 : -1;
}

int MPIDI_GDR_notify_send_one(MPIR_Win * win, int target, int64_t idx, char *why,
                              size_t why_len)
{
    if (MPIDI_GDR_notify_check_index(win, target, idx, why, why_len) != 0)
        return -1;      /* (detached since the check: nothing is sent) */
    if (notify_of(win)->sweeping)
        return 1;       /* a sweep below us in this thread walks the list: not now */
    /* its operation is complete: the host's list sends it at the next sweep, which the
     * same progress pass runs (the proxy runs under the engine lock, where MPICH's
     * messages may not be sent) */
    if (gdr_rma_notify_add(&notify_of(win)->t, &done_at_once, target, (int) idx)
        != GDR_STATUS_OK) {
        snprintf(why, why_len, "out of memory for a notification");
        return -1;
    }
    return 0;
}

/* Counter idx of target exists (nothing is sent otherwise). */
static int check_target(MPIR_Win * win, int target, int idx, struct MPIDI_GDR_notify **out)
{
    struct MPIDI_GDR_notify *nt = notify_of(win);
    if (nt == NULL)
        return no_counters();
    char why[200];
    if (gdr_rma_notify_check(&nt->t, target, idx, why, sizeof(why)) != GDR_STATUS_OK)
        return notify_error(MPI_ERR_ARG, "%s", why);
    *out = nt;
    return MPI_SUCCESS;
}

/* The data of a notified operation has started as req: its notification follows it. */
static int started(struct MPIDI_GDR_notify *nt, MPIR_Request * req, int target, int idx)
{
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_notify_add(&nt->t, req != NULL ? (void *) req : (void *) &done_at_once,
                                target, idx);
    MPIDI_GDR_engine_exit(took);
    if (rc != GDR_STATUS_OK) {
        if (req != NULL)
            MPIR_Request_free(req);
        return notify_error(MPI_ERR_NO_MEM, "no memory to remember a notified operation "
                            "(its data was sent, its notification will not be)");
    }
    /* done already (no data, this rank, a copy): the notification leaves now */
    return sweep(nt, target, NULL);
}

int MPIR_Put_notify_impl(const void *origin_addr, MPI_Aint origin_count,
                         MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Aint target_count, MPI_Datatype target_datatype,
                         int notification_idx, MPIR_Win * win_ptr)
{
    struct MPIDI_GDR_notify *nt = NULL;
    int mpi_errno = check_target(win_ptr, target_rank, notification_idx, &nt);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    MPIR_Request *req = NULL;
    mpi_errno = MPID_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win_ptr, &req);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    return started(nt, req, target_rank, notification_idx);
}

int MPIR_Get_notify_impl(void *origin_addr, MPI_Aint origin_count,
                         MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Aint target_count, MPI_Datatype target_datatype,
                         int notification_idx, MPIR_Win * win_ptr)
{
    struct MPIDI_GDR_notify *nt = NULL;
    int mpi_errno = check_target(win_ptr, target_rank, notification_idx, &nt);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    MPIR_Request *req = NULL;
    mpi_errno = MPID_Rget(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win_ptr, &req);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    return started(nt, req, target_rank, notification_idx);
}

/* ---- the stream-ordered forms (gdr_enqueue.c queues them) ----------------------------- */

int MPIR_Put_notify_enqueue_impl(const void *origin_addr, MPI_Aint origin_count,
                                 MPI_Datatype origin_datatype, int target_rank,
                                 MPI_Aint target_disp, MPI_Aint target_count,
                                 MPI_Datatype target_datatype, int notification_idx,
                                 MPIR_Win * win_ptr)
{
    struct MPIDI_GDR_notify *nt = NULL;
    int mpi_errno = check_target(win_ptr, target_rank, notification_idx, &nt);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    return MPIDI_GDR_enqueue_notified(0, (void *) origin_addr, origin_count, origin_datatype,
                                      target_rank, target_disp, target_count, target_datatype,
                                      win_ptr, nt->cwin, notification_idx);
}

int MPIR_Get_notify_enqueue_impl(void *origin_addr, MPI_Aint origin_count,
                                 MPI_Datatype origin_datatype, int target_rank,
                                 MPI_Aint target_disp, MPI_Aint target_count,
                                 MPI_Datatype target_datatype, int notification_idx,
                                 MPIR_Win * win_ptr)
{
    struct MPIDI_GDR_notify *nt = NULL;
    int mpi_errno = check_target(win_ptr, target_rank, notification_idx, &nt);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    return MPIDI_GDR_enqueue_notified(1, origin_addr, origin_count, origin_datatype,
                                      target_rank, target_disp, target_count, target_datatype,
                                      win_ptr, nt->cwin, notification_idx);
}

static int check_own(MPIR_Win * win, int idx, struct MPIDI_GDR_notify **out);

int MPIR_Win_notify_wait_enqueue_impl(MPIR_Win * win_ptr, int notification_idx,
                                      MPI_Count value)
{
    struct MPIDI_GDR_notify *nt = NULL;
    int mpi_errno = check_own(win_ptr, notification_idx, &nt);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    if (nt->stream_mine == NULL)
        return notify_error(MPI_ERR_OTHER, "a stream cannot wait on this rank's notification "
                            "counters: %s", nt->stream_why);
    return MPIDI_GDR_enqueue_wait(win_ptr, nt->stream_mine + notification_idx, GDR_CMP_GE,
                                  (uint64_t) value);
}

/* Counter idx of this rank exists. */
static int check_own(MPIR_Win * win, int idx, struct MPIDI_GDR_notify **out)
{
    struct MPIDI_GDR_notify *nt = notify_of(win);
    if (nt == NULL)
        return no_counters();
    int n = nt->t.counts[nt->t.me];
    if (idx < 0 || idx >= n)
        return notify_error(MPI_ERR_ARG, "notification_idx %d is not one of this rank's %d "
                            "notification counters", idx, n);
    *out = nt;
    return MPI_SUCCESS;
}

int MPIR_Win_notify_get_value_impl(MPIR_Win * win_ptr, int notification_idx, MPI_Count * value)
{
    struct MPIDI_GDR_notify *nt = NULL;
    int mpi_errno = check_own(win_ptr, notification_idx, &nt);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    /* callers poll this: notifications that the target's CPU applies (messages) and this
     * rank's own notifications waiting for their data move on here */
    mpi_errno = MPID_Progress_test(NULL);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    *value = (MPI_Count) gdr_rma_notify_load(&nt->t, notification_idx);
    return MPI_SUCCESS;
}

int MPIR_Win_notify_set_value_impl(MPIR_Win * win_ptr, int notification_idx, MPI_Count value)
{
    struct MPIDI_GDR_notify *nt = NULL;
    int mpi_errno = check_own(win_ptr, notification_idx, &nt);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    if (value < 0)
        return notify_error(MPI_ERR_ARG, "value %lld is negative: a notification counter "
                            "holds 0 to 2^63-1", (long long) value);
    gdr_rma_notify_store(&nt->t, notification_idx, (uint64_t) value);
    return MPI_SUCCESS;
}
