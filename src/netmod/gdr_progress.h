/* Progress: poll the AM channel, if this job has ranks on other nodes. */
#ifndef GDR_PROGRESS_H_INCLUDED
#define GDR_PROGRESS_H_INCLUDED

#include "gdr_impl.h"

int MPIDI_GDR_progress_am(int *made_progress);
/* gdr_rma_staged.c: the staged protocol's round (never waits) */
int MPIDI_GDR_staged_progress(void);

/* One channel serves every VCI (gdr grants no extra ones: gdr_comm.c), so any VCI's
 * progress polls it; *made_progress is raised only when something completed. */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_progress(int vci, int *made_progress)
{
    if (MPIDI_global.nm.gdr.am == NULL)
        return MPI_SUCCESS;
    int mpi_errno = MPIDI_GDR_progress_am(made_progress);
    if (mpi_errno == MPI_SUCCESS && MPIDI_global.nm.gdr.staged != NULL)
        mpi_errno = MPIDI_GDR_staged_progress();
    return mpi_errno;
}

#endif /* GDR_PROGRESS_H_INCLUDED */
