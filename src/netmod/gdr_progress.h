/* Progress: poll the AM channel, if this job has ranks on other nodes. */
#ifndef GDR_PROGRESS_H_INCLUDED
#define GDR_PROGRESS_H_INCLUDED

#include "gdr_impl.h"

int MPIDI_GDR_progress_am(void);

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_progress(int vci, int blocking)
{
    if (MPIDI_global.nm.gdr.am == NULL)
        return MPI_SUCCESS;
    return MPIDI_GDR_progress_am();
}

#endif /* GDR_PROGRESS_H_INCLUDED */
