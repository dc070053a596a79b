/* The netmod's progress (MPIDI_NM_progress, gdr_progress.h): the AM channel, the staged
 * protocol, and the stream queues and device rings of stream-ordered and kernel-triggered
 * RMA.  Out of line: MPICH's files, which include the inline header, need not see gdr's
 * context.
 *
 * What a progress pass services, in order (MPIDI_progress_test, ch4_progress.h): MPICH's
 * progress hooks, gdr's guard among them; then shared memory (the ranks of this node, and
 * this rank's messages to itself); then gdr (MPIDI_NM_progress), but only if neither
 * made progress in this pass.  A rank whose shared memory always has work (it keeps
 * sending to itself) would so never poll the network: issue 72's ANY_SOURCE receive
 * never matched the other node's message, and a peer's connection request would never
 * be answered.  The guard below is MPICH's hook that, when MPICH skipped gdr for a whole
 * pass, runs gdr's round itself in the next one; it never reports progress, so MPICH
 * still polls shared memory in that pass and neither side can starve the other. */
#include "gdr_internal.h"
#include "gdr_progress.h"
#include "gdr_notify.h"

/* One round of all of gdr's progress; may_idle: the channel may yield or sleep when it
 * has long been empty (MPIR_CVAR_CH4_GDR_YIELD_AFTER, _IDLE_SLEEP_US). */
static int progress_round(int vci, int *made_progress, int may_idle)
{
    int mpi_errno = MPI_SUCCESS;
    if (MPIDI_GDR_global.am != NULL)
        mpi_errno = may_idle ? MPIDI_GDR_progress_am(made_progress)
            : MPIDI_GDR_poll_am(made_progress);
    if (mpi_errno == MPI_SUCCESS && MPIDI_GDR_global.am != NULL && MPIDI_GDR_global.staged != NULL)
        mpi_errno = MPIDI_GDR_staged_progress();
    if (mpi_errno == MPI_SUCCESS && MPIDI_GDR_global.triggered != NULL)
        mpi_errno = MPIDI_GDR_triggered_progress(vci, made_progress);
    if (mpi_errno == MPI_SUCCESS && MPIDI_GDR_global.notify != NULL)
        mpi_errno = MPIDI_GDR_notify_progress(made_progress);
    /* what the staged protocol and the stream queues posted just now leaves at once */
    if (mpi_errno == MPI_SUCCESS && MPIDI_GDR_global.rma != NULL
        && gdr_verbs_rma_post_held(MPIDI_GDR_global.rma, -1) != 0)
        mpi_errno = MPIDI_GDR_transport_error();
    return mpi_errno;
}

/* One channel serves every VCI (gdr grants no extra ones: gdr_comm.c), so any VCI's
 * progress polls it; *made_progress is raised only when something completed.  The stream
 * queues and device rings too: a window over a stream communicator moves its operations
 * on the stream's VCI, whose progress (MPIX_Stream_progress) must also run them. */
int MPIDI_GDR_progress(int vci, int *made_progress)
{
    if (MPIDI_global.nm.gdr.ctx == NULL)
        return MPI_SUCCESS;
    /* MPICH ran gdr in this pass: the guard has nothing to do in the next */
    __atomic_store_n(&MPIDI_GDR_global.nm_passes,
                     __atomic_load_n(&MPIDI_GDR_global.nm_passes, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    return progress_round(vci, made_progress, 1);
}

/* The guard (a progress hook for every VCI, run at the start of each pass): if MPICH has
 * not called MPIDI_NM_progress since the guard's previous pass, that pass skipped gdr, so
 * the guard runs gdr's round now, as VCI 0's progress would, without idling (another
 * source is busy).  When nothing else has work MPICH calls gdr every pass and the guard
 * costs two loads. */
static int guard_hook_fn(int hook_vci, int *made_progress)
{
    (void) hook_vci;
    (void) made_progress;       /* never raised: a pass the guard served still polls shm */
    if (MPIDI_global.nm.gdr.ctx == NULL)
        return MPI_SUCCESS;
    unsigned now = __atomic_load_n(&MPIDI_GDR_global.nm_passes, __ATOMIC_RELAXED);
    unsigned seen = __atomic_load_n(&MPIDI_GDR_global.guard_seen, __ATOMIC_RELAXED);
    __atomic_store_n(&MPIDI_GDR_global.guard_seen, now, __ATOMIC_RELAXED);
    if (now != seen)
        return MPI_SUCCESS;
    if (MPIDI_GDR_global.am == NULL && MPIDI_GDR_global.triggered == NULL)
        return MPI_SUCCESS;     /* one node and no stream queues: gdr has no source */

    int mpi_errno = MPI_SUCCESS, progressed = 0;
    /* as MPICH's own pass does around MPIDI_NM_progress (with one VCI under threads) */
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(0));
    /* not re-entered: a stream VCI's progress inside the round runs the hooks again */
    if (!MPIDI_GDR_global.guard_running) {
        MPIDI_GDR_global.guard_running = 1;
        MPIDI_GDR_global.guard_rounds++;
        mpi_errno = progress_round(0, &progressed, 0);
        MPIDI_GDR_global.guard_running = 0;
    }
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(0));
    return mpi_errno;
}

/* MPICH's slot for the guard, kept for the process: MPIR_Progress_hook_deregister would
 * hide a hook registered after it (the table is walked up to the count of registered
 * hooks), so a finalized guard is only deactivated, and a new MPI_Init reuses the slot. */
static int guard_hook = -1;

int MPIDI_GDR_progress_guard_start(void)
{
    int mpi_errno = MPI_SUCCESS;
    if (guard_hook < 0) {
        mpi_errno = MPIR_Progress_hook_register(-1, guard_hook_fn, &guard_hook);
        MPIR_ERR_CHECK(mpi_errno);
    }
    /* the first pass has no pass before it that could have skipped gdr */
    MPIDI_GDR_global.guard_seen = MPIDI_GDR_global.nm_passes - 1;
    mpi_errno = MPIR_Progress_hook_activate(guard_hook);
    MPIR_ERR_CHECK(mpi_errno);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_GDR_progress_guard_stop(void)
{
    if (guard_hook >= 0)
        MPIR_Progress_hook_deactivate(guard_hook);
}

void MPIDI_GDR_progress_register_pvars(void)
{
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                              "gdr_progress_guard_rounds", &MPIDI_GDR_global.guard_rounds, 1,
                              NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "progress passes in which gdr's channel was "
                              "polled by its guard because MPICH had skipped the netmod in "
                              "the pass before (shared memory, such as a rank's messages to "
                              "itself, or a progress hook had work)");
}
