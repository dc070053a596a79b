/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH4_GDR_NATIVE_LOCKS
      category    : CH4_GDR
      type        : int
      default     : 1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Passive-target epochs (MPI_Win_lock/unlock, MPI_Win_lock_all/unlock_all)
        by remote atomics on a lock word at each target, without messages, on
        windows every rank of which reaches every other by RDMA (no two of
        them share a node).  A lock is taken with the first operation to its
        target, a rank's lock on its own window at once.  0: MPICH's active
        messages.  The window's ranks agree: one rank's 0 turns it off for
        the window.

    - name        : MPIR_CVAR_CH4_GDR_LOCK_BACKOFF_MAX_US
      category    : CH4_GDR
      type        : int
      default     : 100
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Native passive-target locks (MPIR_CVAR_CH4_GDR_NATIVE_LOCKS): the
        longest pause, in microseconds, between two tries at a lock that
        others hold (pauses double from 1 microsecond up to this).

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/
/* Window synchronisation, one function per MPI call, out of line (gdr_rma.h says why).
 * Fence, PSCW and the flushes are MPIDIG's active-message epochs, which call gdr's
 * completion hooks for the RDMA operations.  Passive-target epochs on windows with native
 * locks (src/rma/gdr_rma_passive.h) take a lock word at the target by remote atomics
 * instead of MPIDIG's lock messages: MPIDIG keeps the epoch's bookkeeping as under
 * MPI_MODE_NOCHECK (no message), and gdr takes the lock with the epoch's first operation
 * (MPIDI_GDR_rma_native calls MPIDI_GDR_win_need) and gives it back at unlock, once
 * everything the release could overtake has completed. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_rma.h"
#include "gdr_triggered.h"
#include "gdr_engine_lock.h"

/* Whether win's passive-target epochs lock by remote atomics (the same for every target
 * and on every rank: gdr_rma_passive.h). */
static int native_locks(MPIR_Win * win)
{
    return win->dev.netmod.gdr.s != NULL && gdr_rma_passive_native(&GDR_WIN(win).rma, 0);
}

static int passive_error(int rc, const char *what)
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
 * now: RDMA reads and atomics (a responder may run a later atomic before a read has read),
 * the staged protocol, MPICH's messages; this rank's own window (its shared-memory and
 * GPU paths complete elsewhere).  RDMA writes alone never are. */
static int release_must_wait(MPIR_Win * win, int rank)
{
    const gdr_rma_win_t *w = &GDR_WIN(win).rma;
    if (rank == w->self || (w->tracker.reading != NULL && w->tracker.reading[rank] != 0))
        return 1;
    MPIDIG_win_target_t *t = MPIDIG_win_target_find(win, rank);
    return t != NULL && (MPIR_cc_get(t->remote_cmpl_cnts) != 0
                         || MPIR_cc_get(t->remote_acc_cmpl_cnts) != 0);
}

int MPIDI_GDR_win_start(MPIR_Group * group, int assert, MPIR_Win * win)
{
    return MPIDIG_mpi_win_start(group, assert, win);
}

int MPIDI_GDR_win_complete(MPIR_Win * win)
{
    return MPIDIG_mpi_win_complete(win);
}

int MPIDI_GDR_win_post(MPIR_Group * group, int assert, MPIR_Win * win)
{
    return MPIDIG_mpi_win_post(group, assert, win);
}

int MPIDI_GDR_win_wait(MPIR_Win * win)
{
    return MPIDIG_mpi_win_wait(win);
}

int MPIDI_GDR_win_test(MPIR_Win * win, int *flag)
{
    return MPIDIG_mpi_win_test(win, flag);
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
    return passive_error(rc, "taking a lock on this rank's own window by remote atomics "
                         "failed (through the loopback queue pair)");
}

int MPIDI_GDR_win_unlock(int rank, MPIR_Win * win)
{
    if (!native_locks(win))
        return MPIDIG_mpi_win_unlock(rank, win);
    int mpi_errno = MPI_SUCCESS;
    if (gdr_rma_passive_held(&GDR_WIN(win).rma, rank) && release_must_wait(win, rank))
        mpi_errno = MPIDIG_mpi_win_flush(rank, win);
    /* (ends the epoch's lock state even when nothing was taken: no traffic then) */
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_passive_unlock(&GDR_WIN(win).rma, rank);
    MPIDI_GDR_engine_exit(took);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = passive_error(rc, "releasing a passive-target lock by remote atomics "
                                  "failed (the connection to the target broke?)");
    /* the release came back after the writes it followed: this finds them complete */
    int unlock_errno = MPIDIG_mpi_win_unlock(rank, win);
    return mpi_errno != MPI_SUCCESS ? mpi_errno : unlock_errno;
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
    return passive_error(rc, "taking passive-target locks by remote atomics failed");
}

int MPIDI_GDR_win_unlock_all(MPIR_Win * win)
{
    int mpi_errno = MPIDI_GDR_enqueue_drain(win);
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
        mpi_errno = passive_error(rc, "releasing passive-target locks by remote atomics "
                                  "failed (a connection broke?)");
    int unlock_errno = MPIDIG_mpi_win_unlock_all(win);
    return mpi_errno != MPI_SUCCESS ? mpi_errno : unlock_errno;
}

int MPIDI_GDR_win_fence(int assert, MPIR_Win * win)
{
    return MPIDIG_mpi_win_fence(assert, win);
}

int MPIDI_GDR_win_flush(int rank, MPIR_Win * win)
{
    return MPIDIG_mpi_win_flush(rank, win);
}

int MPIDI_GDR_win_flush_local(int rank, MPIR_Win * win)
{
    return MPIDIG_mpi_win_flush_local(rank, win);
}

int MPIDI_GDR_win_flush_all(MPIR_Win * win)
{
    return MPIDIG_mpi_win_flush_all(win);
}

int MPIDI_GDR_win_flush_local_all(MPIR_Win * win)
{
    return MPIDIG_mpi_win_flush_local_all(win);
}

int MPIDI_GDR_win_sync(MPIR_Win * win)
{
    return MPIDIG_mpi_win_sync(win);
}
