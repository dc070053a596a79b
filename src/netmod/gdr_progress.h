/* Progress: poll the AM channel, if this job has ranks on other nodes. */
#ifndef GDR_PROGRESS_H_INCLUDED
#define GDR_PROGRESS_H_INCLUDED

#include "gdr_impl.h"

int MPIDI_GDR_progress_am(int *made_progress);
/* gdr_rma_staged.c: the staged protocol's round (never waits) */
int MPIDI_GDR_staged_progress(void);
/* gdr_triggered.c: the stream queues and trigger proxies of every window that has one */
int MPIDI_GDR_triggered_progress(int *made_progress);

/* One channel serves every VCI (gdr grants no extra ones: gdr_comm.c), so any VCI's
 * progress polls it; *made_progress is raised only when something completed. */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_progress(int vci, int *made_progress)
{
    if (MPIDI_global.nm.gdr.ctx == NULL)
        return MPI_SUCCESS;
    int mpi_errno = MPI_SUCCESS;
    if (MPIDI_GDR_global.am != NULL)
        mpi_errno = MPIDI_GDR_progress_am(made_progress);
    if (mpi_errno == MPI_SUCCESS && MPIDI_GDR_global.am != NULL && MPIDI_GDR_global.staged != NULL)
        mpi_errno = MPIDI_GDR_staged_progress();
    if (mpi_errno == MPI_SUCCESS && vci == 0 && MPIDI_GDR_global.triggered != NULL)
        mpi_errno = MPIDI_GDR_triggered_progress(made_progress);
    return mpi_errno;
}

#endif /* GDR_PROGRESS_H_INCLUDED */
