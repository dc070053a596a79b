/* The netmod's progress (MPIDI_NM_progress, gdr_progress.h): the AM channel, the staged
 * protocol, and the stream queues and device rings of stream-ordered and kernel-triggered
 * RMA.  Out of line: MPICH's files, which include the inline header, need not see gdr's
 * context. */
#include "gdr_internal.h"
#include "gdr_progress.h"

/* One channel serves every VCI (gdr grants no extra ones: gdr_comm.c), so any VCI's
 * progress polls it; *made_progress is raised only when something completed.  The stream
 * queues and device rings too: a window over a stream communicator moves its operations
 * on the stream's VCI, whose progress (MPIX_Stream_progress) must also run them. */
int MPIDI_GDR_progress(int vci, int *made_progress)
{
    if (MPIDI_global.nm.gdr.ctx == NULL)
        return MPI_SUCCESS;
    int mpi_errno = MPI_SUCCESS;
    if (MPIDI_GDR_global.am != NULL)
        mpi_errno = MPIDI_GDR_progress_am(made_progress);
    if (mpi_errno == MPI_SUCCESS && MPIDI_GDR_global.am != NULL && MPIDI_GDR_global.staged != NULL)
        mpi_errno = MPIDI_GDR_staged_progress();
    if (mpi_errno == MPI_SUCCESS && MPIDI_GDR_global.triggered != NULL)
        mpi_errno = MPIDI_GDR_triggered_progress(vci, made_progress);
    /* what the staged protocol and the stream queues posted just now leaves at once */
    if (mpi_errno == MPI_SUCCESS && MPIDI_GDR_global.rma != NULL
        && gdr_verbs_rma_post_held(MPIDI_GDR_global.rma, -1) != 0)
        mpi_errno = MPIDI_GDR_transport_error();
    return mpi_errno;
}
