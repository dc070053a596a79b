/* Progress: poll the AM channel, if this job has ranks on other nodes. */
#ifndef GDR_PROGRESS_H_INCLUDED
#define GDR_PROGRESS_H_INCLUDED

#include "gdr_impl.h"

int MPIDI_GDR_progress_am(int *made_progress);
/* gdr_rma_staged.c: the staged protocol's round (never waits) */
int MPIDI_GDR_staged_progress(void);
/* gdr_triggered.c: the stream queues and trigger proxies of every window that has one
 * (from vci's progress) */
int MPIDI_GDR_triggered_progress(int vci, int *made_progress);

/* gdr_progress.c: one round of all of gdr's progress (any VCI's progress polls the one
 * channel; stream queues and device rings only in VCI 0's). */
int MPIDI_GDR_progress(int vci, int *made_progress);

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_progress(int vci, int *made_progress)
{
    return MPIDI_GDR_progress(vci, made_progress);
}

#endif /* GDR_PROGRESS_H_INCLUDED */
