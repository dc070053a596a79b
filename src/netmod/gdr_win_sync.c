/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH4_GDR_NATIVE_SYNC
      category    : CH4_GDR
      type        : int
      default     : 2
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Window synchronisation by RDMA on a small control block of each rank,
        without messages, on windows every rank of which reaches every other
        by RDMA (no two of them share a node).  2: passive-target locks
        (MPI_Win_lock/unlock, lock_all/unlock_all) by remote atomics on a lock
        word, fence by a barrier of RDMA writes, PSCW's post and complete as
        RDMA writes.  1: locks only.  0: MPICH's active messages for all.  A
        lock is taken with the first operation to its target, a rank's lock
        on its own window at once.  The window's ranks agree: it takes the
        lowest.

    - name        : MPIR_CVAR_CH4_GDR_LOCK_BACKOFF_MAX_US
      category    : CH4_GDR
      type        : int
      default     : 100
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Native passive-target locks (MPIR_CVAR_CH4_GDR_NATIVE_SYNC): the
        longest pause, in microseconds, between two tries at a lock that
        others hold (pauses double from 1 microsecond up to this).

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/
/* Window synchronisation, one function per MPI call, out of line (gdr_rma.h says why).
 * The flushes are MPIDIG's, which call gdr's completion hooks for the RDMA operations.
 * Windows whose ranks all reach each other by RDMA synchronise through control blocks
 * (MPIR_CVAR_CH4_GDR_NATIVE_SYNC, src/rma/gdr_rma_ctl.h) instead of MPIDIG's messages,
 * while MPIDIG keeps the epochs' bookkeeping:
 * - lock epochs (gdr_rma_passive.h) open in MPIDIG as under MPI_MODE_NOCHECK (no
 *   message); gdr takes the lock word with the epoch's first operation
 *   (MPIDI_GDR_rma calls MPIDI_GDR_win_need) and gives it back at unlock, once
 *   everything the release could overtake has completed; unlock then waits for the
 *   epoch's writes but not for the release behind them (MPIDI_GDR_mpi_win_free does);
 * - post and start open as under NOCHECK, with gdr's post notices (gdr_rma_active.h);
 *   complete is MPIDIG's with gdr's complete notices for its messages, and wait and test
 *   let MPIDIG close the epoch once the notices are in;
 * - fence is MPIDIG's with a barrier of RDMA writes for MPIR_Barrier. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_rma.h"
#include "gdr_rma_ipc.h"
#include "gdr_triggered.h"
#include "gdr_engine_lock.h"
#include "gdr_notify.h"

/* Whether win's passive-target epochs lock by remote atomics (the same for every target
 * and on every rank: gdr_rma_passive.h). */
static int native_locks(MPIR_Win * win)
{
    return win->dev.netmod.gdr.s != NULL && gdr_rma_ctl_native(&GDR_WIN(win).rma);
}

static int sync_error(int rc, const char *what)
{
    if (rc == GDR_RMA_OK)
        return MPI_SUCCESS;
    int mpi_errno = MPIDI_GDR_rma_error(rc);
    if (rc == GDR_RMA_ERROR)
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_RMA_SYNC, "**gdr_transport", "**gdr_transport %s",
                      what);
    return mpi_errno;
}

/* Whether something of the epoch to rank could still be overtaken by a release posted
 * now: the staged protocol, MPICH's messages; this rank's own window (its shared-memory
 * and GPU paths complete elsewhere).  RDMA writes never are, nor RDMA reads and atomics:
 * a release or notice posted behind them goes after them (GDR_RMA_POST_AFTER_READS),
 * where a responder could otherwise run it before a read has read. */
static int release_must_wait(MPIR_Win * win, int rank)
{
    const gdr_rma_win_t *w = &GDR_WIN(win).rma;
    if (rank == w->self || gdr_rma_tracker_by_messages(&w->tracker, rank))
        return 1;
    MPIDIG_win_target_t *t = MPIDIG_win_target_find(win, rank);
    return t != NULL && (MPIR_cc_get(t->remote_cmpl_cnts) != 0
                         || MPIR_cc_get(t->remote_acc_cmpl_cnts) != 0);
}

/* The work requests this call left held (MPIR_CVAR_CH4_GDR_DOORBELL_BATCH: a release,
 * a notice, the writes before them) leave now, one doorbell: peers wait for them, and
 * this rank may not call MPI again for a while.  Keeps an earlier error. */
static int post_held(int mpi_errno)
{
    if (MPIDI_GDR_global.rma == NULL)
        return mpi_errno;
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_verbs_rma_post_held(MPIDI_GDR_global.rma, -1);
    MPIDI_GDR_engine_exit(took);
    return mpi_errno == MPI_SUCCESS && rc != 0 ? MPIDI_GDR_transport_error() : mpi_errno;
}

/* Whether win's fence and PSCW go through control blocks (agreed by its ranks). */
static int native_active(MPIR_Win * win)
{
    return win->dev.netmod.gdr.s != NULL && GDR_WIN(win).native_active
        && gdr_rma_ctl_native(&GDR_WIN(win).rma);
}

/* group's ranks in the window, in *ranks (MPL_free it). */
static int group_ranks(MPIR_Win * win, MPIR_Group * group, int **ranks)
{
    int mpi_errno = MPI_SUCCESS;
    *ranks = MPL_malloc(sizeof(int) * (size_t) (group->size > 0 ? group->size : 1), MPL_MEM_RMA);
    if (*ranks == NULL)
        MPIR_ERR_SETANDSTMT1(mpi_errno, MPI_ERR_NO_MEM, return mpi_errno, "**nomem",
                             "**nomem %s", "gdr PSCW group");
    return MPIDIG_fill_ranks_in_win_grp(win, group, *ranks);
}

typedef enum { STEP_POST, STEP_START, STEP_WAIT, STEP_TEST } group_step_t;

/* A PSCW step over group's ranks in the window, under the engine lock (STEP_TEST sets
 * *done); what says what failed. */
static int group_step(MPIR_Win * win, MPIR_Group * group, group_step_t step, int *done,
                      const char *what)
{
    int *ranks = NULL;
    int mpi_errno = group_ranks(win, group, &ranks);
    if (mpi_errno == MPI_SUCCESS) {
        gdr_rma_win_t *w = &GDR_WIN(win).rma;
        int took = MPIDI_GDR_engine_enter(), n = group->size, rc;
        switch (step) {
            case STEP_POST:
                rc = gdr_rma_active_post(w, ranks, n);
                break;
            case STEP_START:
                rc = gdr_rma_active_start(w, ranks, n);
                break;
            case STEP_WAIT:
                rc = gdr_rma_active_wait(w, ranks, n);
                break;
            default:
                rc = gdr_rma_active_wait_test(w, ranks, n, done);
                break;
        }
        MPIDI_GDR_engine_exit(took);
        mpi_errno = sync_error(rc, what);
    }
    MPL_free(ranks);
    return mpi_errno;
}

int MPIDI_GDR_win_post(MPIR_Group * group, int assert, MPIR_Win * win)
{
    if (!native_active(win))
        return MPIDIG_mpi_win_post(group, assert, win);
    /* MPIDIG's exposure epoch without its post messages */
    int mpi_errno = MPIDIG_mpi_win_post(group, assert | MPI_MODE_NOCHECK, win);
    if (mpi_errno != MPI_SUCCESS || (assert & MPI_MODE_NOCHECK))
        return mpi_errno;
    return post_held(group_step(win, group, STEP_POST, NULL, "writing a post notice into "
                                "an origin's control block failed (the connection broke?)"));
}

int MPIDI_GDR_win_start(MPIR_Group * group, int assert, MPIR_Win * win)
{
    if (!native_active(win))
        return MPIDIG_mpi_win_start(group, assert, win);
    int mpi_errno = MPIDIG_mpi_win_start(group, assert | MPI_MODE_NOCHECK, win);
    if (mpi_errno != MPI_SUCCESS || (assert & MPI_MODE_NOCHECK))
        return mpi_errno;
    return group_step(win, group, STEP_START, NULL, "waiting for the targets' post notices "
                      "failed");
}

/* MPIDIG_mpi_win_complete with complete notices written into the targets' control blocks
 * instead of its messages, each once everything it could overtake has completed there. */
int MPIDI_GDR_win_complete(MPIR_Win * win)
{
    int mpi_errno = MPIDI_GDR_notify_drain(win, -1);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    if (!native_active(win))
        return MPIDIG_mpi_win_complete(win);
    int *ranks = NULL, need_unlock = 0;
    MPIDIG_ACCESS_EPOCH_CHECK(win, MPIDIG_EPOTYPE_START, mpi_errno, return mpi_errno);
    MPIR_Group *group = MPIDIG_WIN(win, sync).sc.group;
    int vci = MPIDI_WIN(win, am_vci);
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(vci));
    need_unlock = 1;
    mpi_errno = group_ranks(win, group, &ranks);
    MPIR_ERR_CHECK(mpi_errno);
    /* same-node copies land before the notices (they do not go on the queue pairs) */
    mpi_errno = MPIDI_GDR_ipc_wait(win);
    MPIR_ERR_CHECK(mpi_errno);
    for (int i = 0; i < group->size; i++) {
        if (!release_must_wait(win, ranks[i]))
            continue;
        mpi_errno = MPIDI_GDR_rma_wait_target(win, ranks[i], 0);
        MPIR_ERR_CHECK(mpi_errno);
#ifndef MPIDI_CH4_DIRECT_NETMOD
        mpi_errno = MPIDI_SHM_rma_target_cmpl_hook(ranks[i], win);
        MPIR_ERR_CHECK(mpi_errno);
#endif
        MPIDIG_win_target_t *t = MPIDIG_win_target_find(win, ranks[i]);
        MPIDIU_PROGRESS_DO_WHILE(t != NULL && (MPIR_cc_get(t->remote_cmpl_cnts) != 0
                                               || MPIR_cc_get(t->remote_acc_cmpl_cnts) != 0),
                                 vci);
    }
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_active_complete(&GDR_WIN(win).rma, ranks, group->size);
    MPIDI_GDR_engine_exit(took);
    mpi_errno = post_held(sync_error(rc, "writing a complete notice into a target's control "
                                     "block failed (the connection broke?)"));
    MPIR_ERR_CHECK(mpi_errno);
    /* Only now the local completions (Gets' data, origin buffers), as the fence does: each
     * notice went behind its target's writes on the same queue pair and fenced behind its
     * reads and atomics, so the target's wait ends after they acted there; waiting for
     * them before the notices cost the origin a round trip an epoch. */
    mpi_errno = MPIDI_GDR_rma_wait_all(win, 1);
    MPIR_ERR_CHECK(mpi_errno);
    if (MPIR_CVAR_CH4_RMA_MEM_EFFICIENT)
        MPIDIG_win_target_cleanall(win);
    MPIDIG_WIN(win, sync).access_epoch_type = MPIDIG_EPOTYPE_NONE;
    MPIR_Group_release(MPIDIG_WIN(win, sync).sc.group);
    MPIDIG_WIN(win, sync).sc.group = NULL;
  fn_exit:
    MPL_free(ranks);
    if (need_unlock)
        MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(vci));
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Waits (or tests, *flag) for the complete notices of the exposure epoch's origins, then
 * lets MPIDIG close the epoch as if its complete messages had come. */
static int native_wait(MPIR_Win * win, int *flag)
{
    MPIR_Group *group = MPIDIG_WIN(win, sync).pw.group;
    if (group == NULL)          /* no exposure epoch: MPIDIG says so */
        return flag != NULL ? MPIDIG_mpi_win_test(win, flag) : MPIDIG_mpi_win_wait(win);
    int done = 0;
    int mpi_errno = group_step(win, group, flag != NULL ? STEP_TEST : STEP_WAIT, &done,
                               "waiting for the origins' complete notices failed");
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    if (flag == NULL || done) {
        int vci = MPIDI_WIN(win, am_vci);
        MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(vci));
        MPIDIG_WIN(win, sync).sc.count = (unsigned) group->size;
        MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(vci));
    }
    return flag != NULL ? MPIDIG_mpi_win_test(win, flag) : MPIDIG_mpi_win_wait(win);
}

int MPIDI_GDR_win_wait(MPIR_Win * win)
{
    return native_active(win) ? native_wait(win, NULL) : MPIDIG_mpi_win_wait(win);
}

int MPIDI_GDR_win_test(MPIR_Win * win, int *flag)
{
    return native_active(win) ? native_wait(win, flag) : MPIDIG_mpi_win_test(win, flag);
}

int MPIDI_GDR_win_lock(int lock_type, int rank, int assert, MPIR_Win * win)
{
    if (!native_locks(win))
        return MPIDIG_mpi_win_lock(lock_type, rank, assert, win);
    /* MPIDIG's epoch without its lock message; NOCHECK stays as the user said it */
    int mpi_errno = MPIDIG_mpi_win_lock(lock_type, rank, assert | MPI_MODE_NOCHECK, win);
    if (mpi_errno != MPI_SUCCESS || (assert & MPI_MODE_NOCHECK))
        return mpi_errno;
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_passive_lock(&GDR_WIN(win).rma, rank, lock_type == MPI_LOCK_EXCLUSIVE
                                  ? GDR_RMA_LOCK_EXCLUSIVE : GDR_RMA_LOCK_SHARED);
    MPIDI_GDR_engine_exit(took);
    return sync_error(rc, "taking a lock on this rank's own window by remote atomics "
                      "failed (through the loopback queue pair)");
}

int MPIDI_GDR_win_drain_releases(MPIR_Win * win)
{
    if (win->dev.netmod.gdr.s == NULL)
        return MPI_SUCCESS;
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_passive_drain(&GDR_WIN(win).rma);
    MPIDI_GDR_engine_exit(took);
    return sync_error(rc, "releasing a passive-target lock by remote atomics failed (the "
                      "connection to the target broke?)");
}

int MPIDI_GDR_win_unlock(int rank, MPIR_Win * win)
{
    int mpi_errno = MPIDI_GDR_notify_drain(win, rank);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    if (!native_locks(win))
        return MPIDIG_mpi_win_unlock(rank, win);
    if (gdr_rma_passive_held(&GDR_WIN(win).rma, rank) && release_must_wait(win, rank))
        mpi_errno = MPIDIG_mpi_win_flush(rank, win);
    /* (ends the epoch's lock state even when nothing was taken: no traffic then) */
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_passive_unlock(&GDR_WIN(win).rma, rank);
    MPIDI_GDR_engine_exit(took);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = sync_error(rc, "releasing a passive-target lock by remote atomics "
                               "failed (the connection to the target broke?)");
    /* waits for the epoch's writes, which leave with the release behind them (one
     * doorbell); the release is left in flight */
    int unlock_errno = MPIDIG_mpi_win_unlock(rank, win);
    return post_held(mpi_errno != MPI_SUCCESS ? mpi_errno : unlock_errno);
}

int MPIDI_GDR_win_lock_all(int assert, MPIR_Win * win)
{
    if (!native_locks(win))
        return MPIDIG_mpi_win_lock_all(assert, win);
    int mpi_errno = MPIDIG_mpi_win_lock_all(assert | MPI_MODE_NOCHECK, win);
    if (mpi_errno != MPI_SUCCESS || (assert & MPI_MODE_NOCHECK))
        return mpi_errno;
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    int took = MPIDI_GDR_engine_enter(), rc = GDR_RMA_OK;
    for (int i = 0; i < w->n && rc == GDR_RMA_OK; i++)
        rc = gdr_rma_passive_lock(w, i, GDR_RMA_LOCK_SHARED);
    /* a device handle's proxy moves data without passing through MPIDI_GDR_win_need */
    if (rc == GDR_RMA_OK && GDR_WIN(win).device != NULL)
        rc = gdr_rma_passive_need_all(w);
    MPIDI_GDR_engine_exit(took);
    return sync_error(rc, "taking passive-target locks by remote atomics failed");
}

int MPIDI_GDR_win_unlock_all(MPIR_Win * win)
{
    int mpi_errno = MPIDI_GDR_enqueue_drain(win);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = MPIDI_GDR_notify_drain(win, -1);
    if (mpi_errno != MPI_SUCCESS || !native_locks(win))
        return mpi_errno != MPI_SUCCESS ? mpi_errno : MPIDIG_mpi_win_unlock_all(win);
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    int wait = 0;
    for (int i = 0; i < w->n && !wait; i++)
        wait = gdr_rma_passive_held(w, i) && release_must_wait(win, i);
    if (wait)
        mpi_errno = MPIDIG_mpi_win_flush_all(win);
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_passive_unlock_all(w);
    MPIDI_GDR_engine_exit(took);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = sync_error(rc, "releasing passive-target locks by remote atomics "
                               "failed (a connection broke?)");
    int unlock_errno = MPIDIG_mpi_win_unlock_all(win);
    return post_held(mpi_errno != MPI_SUCCESS ? mpi_errno : unlock_errno);
}

/* MPIDIG_mpi_win_fence with a barrier of RDMA writes into the ranks' control blocks
 * instead of MPIR_Barrier's messages. */
int MPIDI_GDR_win_fence(int assert, MPIR_Win * win)
{
    int mpi_errno = MPIDI_GDR_notify_drain(win, -1), need_unlock = 0;
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    if (!native_active(win))
        return MPIDIG_mpi_win_fence(assert, win);
    MPIDIG_FENCE_EPOCH_CHECK(win, mpi_errno, goto fn_fail);
    int vci = MPIDI_WIN(win, am_vci);
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(vci));
    need_unlock = 1;
    /* every operation of the epoch complete at its target before this rank's barrier
     * writes (the barrier's partners are not the operations' targets), except those to
     * the first round's partner: that round's write goes behind them on the same queue
     * pair (behind reads and atomics fenced), and the partner leaves only after they
     * have acted.  (Two ranks: the epoch's operations and the barrier in one round trip,
     * not two.) */
    int first = gdr_rma_active_barrier_first(&GDR_WIN(win).rma);
    int spared = first >= 0 && !release_must_wait(win, first);
    mpi_errno = spared ? MPIDI_GDR_rma_wait_all_except(win, first)
        : MPIDI_GDR_rma_wait_all(win, 0);
    MPIR_ERR_CHECK(mpi_errno);
#ifndef MPIDI_CH4_DIRECT_NETMOD
    mpi_errno = MPIDI_SHM_rma_win_cmpl_hook(win);
    MPIR_ERR_CHECK(mpi_errno);
#endif
    /* (no progress when nothing is pending: held writes to the partner then leave with
     * the barrier's first write, one doorbell) */
    MPIDIU_PROGRESS_WHILE(MPIR_cc_get(MPIDIG_WIN(win, local_cmpl_cnts)) != 0 ||
                          MPIR_cc_get(MPIDIG_WIN(win, remote_acc_cmpl_cnts)) != 0 ||
                          !MPIDIG_win_check_all_targets_remote_completed(win), vci);
    MPIDIG_EPOCH_FENCE_EVENT(win, assert);
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(vci));
    need_unlock = 0;
    /* (a barrier even with MPI_MODE_NOPRECEDE: MPIDIG's fence explains why) */
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_active_barrier(&GDR_WIN(win).rma);
    MPIDI_GDR_engine_exit(took);
    mpi_errno = sync_error(rc, "the fence's barrier by RDMA writes failed (a connection "
                           "broke?)");
    /* The spared operations need only be done here, as PSCW's complete leaves them: the
     * partner left the barrier after they acted (they went before this rank's write),
     * and with more ranks the later rounds waited for them.  Waiting for them before the
     * barrier cost the origin a round trip a fence.  Gets land here. */
    if (spared && mpi_errno == MPI_SUCCESS)
        mpi_errno = MPIDI_GDR_rma_wait_all(win, 1);
    /* (the barrier's last write may still be held when the partner's came first) */
    mpi_errno = post_held(mpi_errno);
  fn_exit:
    if (need_unlock)
        MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(vci));
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_GDR_win_flush(int rank, MPIR_Win * win)
{
    int mpi_errno = MPIDI_GDR_notify_drain(win, rank);
    return mpi_errno != MPI_SUCCESS ? mpi_errno : MPIDIG_mpi_win_flush(rank, win);
}

int MPIDI_GDR_win_flush_local(int rank, MPIR_Win * win)
{
    return MPIDIG_mpi_win_flush_local(rank, win);
}

int MPIDI_GDR_win_flush_all(MPIR_Win * win)
{
    int mpi_errno = MPIDI_GDR_notify_drain(win, -1);
    return mpi_errno != MPI_SUCCESS ? mpi_errno : MPIDIG_mpi_win_flush_all(win);
}

int MPIDI_GDR_win_flush_local_all(MPIR_Win * win)
{
    return MPIDIG_mpi_win_flush_local_all(win);
}

int MPIDI_GDR_win_sync(MPIR_Win * win)
{
    return MPIDIG_mpi_win_sync(win);
}
