/* Notified RMA (docs/notified-rma.md): the counters a window carries, and what the
 * window's synchronisation, free and gdr's progress call so that a notification leaves
 * once its operation is complete at the target and is applied before the call that
 * completes the operation returns.  The MPIX_ calls' bodies (MPIR_*_impl of patch 0022)
 * are in gdr_notify.c. */
#ifndef GDR_NOTIFY_H_INCLUDED
#define GDR_NOTIFY_H_INCLUDED

#include "gdr_internal.h"

/* Sends the notifications of win's notified operations to rank (-1: every rank), waiting
 * for their data, and waits until they are applied at their targets.  Called first by
 * MPI_Win_flush(_all), _unlock(_all), _fence and _complete; at once when win has no
 * counters.  Returns the first error of a notified operation since the last call. */
int MPIDI_GDR_notify_drain_counters(MPIR_Win * win, int rank);
static inline int MPIDI_GDR_notify_drain(MPIR_Win * win, int rank)
{
    /* inline: every flush asks, and almost every window has no counters */
    if (win->dev.netmod.gdr.s == NULL || GDR_WIN(win).notify == NULL)
        return MPI_SUCCESS;
    return MPIDI_GDR_notify_drain_counters(win, rank);
}
/* gdr's progress: sends the notifications whose operations have completed, of every
 * window (never waits; not re-entered). */
int MPIDI_GDR_notify_progress(int *made_progress);
/* MPI_Win_free (gdr_win.c, before MPICH frees the window): detaches the counters, if
 * any (collective, as MPI_Win_free). */
int MPIDI_GDR_notify_win_free(MPIR_Win * win);

/* For kernels (gdr_device_win.c): this rank's counters as the GPU reaches them (page-locked
 * at attach; NULL and 0: none, or not reachable); whether target has counter idx, and one
 * notification to it, whose operation is complete, handed to the host's list, which sends
 * it as a MPIX_Put_notify's at its next sweep (0, -1 with a sentence in why, or 1 while a
 * sweep runs: ask again later). */
void MPIDI_GDR_notify_gpu_view(MPIR_Win * win, uint64_t ** mine, int64_t * count);
int MPIDI_GDR_notify_check_index(MPIR_Win * win, int target, int64_t idx, char *why,
                                 size_t why_len);
int MPIDI_GDR_notify_send_one(MPIR_Win * win, int target, int64_t idx, char *why,
                              size_t why_len);

#endif /* GDR_NOTIFY_H_INCLUDED */
