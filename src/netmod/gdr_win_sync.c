/* Window synchronisation, one function per MPI call, out of line (gdr_rma.h says why).
 * Today MPIDIG's active-message epochs, which call gdr's completion hooks for the RDMA
 * operations; unlock_all first waits for the stream-ordered operations of the epoch.
 * Native passive-target locks, fence and PSCW (issue 22) replace these bodies. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_rma.h"
#include "gdr_triggered.h"

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
    return MPIDIG_mpi_win_lock(lock_type, rank, assert, win);
}

int MPIDI_GDR_win_unlock(int rank, MPIR_Win * win)
{
    return MPIDIG_mpi_win_unlock(rank, win);
}

int MPIDI_GDR_win_lock_all(int assert, MPIR_Win * win)
{
    return MPIDIG_mpi_win_lock_all(assert, win);
}

int MPIDI_GDR_win_unlock_all(MPIR_Win * win)
{
    int mpi_errno = MPIDI_GDR_enqueue_drain(win);
    return mpi_errno != MPI_SUCCESS ? mpi_errno : MPIDIG_mpi_win_unlock_all(win);
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
