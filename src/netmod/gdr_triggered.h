/* What stream-ordered RMA (gdr_enqueue.c) and kernel-triggered RMA (gdr_device_win.c)
 * share: the windows that have a stream queue or a device handle, their progress (from
 * MPICH's progress, never re-entered), the progress thread, the check that a target's
 * operations are complete there without waiting for it, and the windows GPU work
 * reaches directly (this rank's, same-node peers' through CUDA IPC). */
#ifndef GDR_TRIGGERED_H_INCLUDED
#define GDR_TRIGGERED_H_INCLUDED

#include "gdr_internal.h"
#include "gdr/gdr_rma_kernel_api.h"

/* Puts win on the progress list (its state's enqueue or device part is being set up)
 * and starts the progress thread when MPIR_CVAR_CH4_GDR_ENQUEUE_PROGRESS asks for one. */
int MPIDI_GDR_triggered_add(MPIR_Win * win);
/* Every operation this rank started on win to rank (-1: every rank) is complete at its
 * target: gdr's RDMA operations and MPICH's active messages.  Never waits. */
int MPIDI_GDR_triggered_remote_done(MPIR_Win * win, int rank);
/* An MPI error (MPI_ERR_OTHER, **gdr_triggered) carrying a sentence. */
int MPIDI_GDR_triggered_error(int err_class, const char *fmt, ...);

/* gdr_peer_map.c: rank's window as this rank's GPU work reaches it directly: this rank's
 * own window in device or page-locked memory, or a same-node rank's device window
 * through the CUDA IPC handle its card carried, mapped at the first ask and kept for the
 * window's life (one mapping a peer, shared by every path).  NULL: not reachable so (the
 * ring, the stream queue or the NIC then).  The engine lock held. */
const gdr_dev_peer_t *MPIDI_GDR_peer_mapped(MPIR_Win * win, int rank);
/* A dynamic window's region at rank holding addr, as this rank's GPU work reaches it:
 * this rank's own attached device memory, or a same-node rank's, mapped through the CUDA
 * IPC handle its answer carried (gdr_win_dynamic.c) at the first access and kept until
 * MPIDI_GDR_peer_regions_close: *at_target is the region's address at rank, and the
 * view's base its first byte here (disp_unit 1).  NULL: not reachable so (host memory,
 * another node, not attached, no IPC): messages carry the access.  *mpi_errno: asking
 * the target failed.  The engine lock held. */
const gdr_dev_peer_t *MPIDI_GDR_peer_region_mapped(MPIR_Win * win, int rank, uint64_t addr,
                                                   uint64_t * at_target, int *mpi_errno);
/* Unmaps what peer_region_mapped mapped of rank's regions (-1: every rank's), once the
 * operations there completed: the target may detach and free the memory only after
 * that, so nothing mapped outlives an access epoch. */
void MPIDI_GDR_peer_regions_close(MPIR_Win * win, int rank);
/* A path's GPU work may still use the mappings (its wait failed): they stay mapped. */
void MPIDI_GDR_peer_maps_hold(MPIR_Win * win);
/* At the window's free, after every path has waited for its GPU work. */
void MPIDI_GDR_peer_maps_free(MPIR_Win * win);
/* MPI_T gdr_peer_windows_mapped. */
void MPIDI_GDR_peer_maps_register_pvars(void);

/* gdr_enqueue.c / gdr_device_win.c: one round of a window's part (never waits); the part
 * freed at window free (waits for what is in flight).  made: set when anything moved. */
int MPIDI_GDR_enqueue_progress(MPIR_Win * win, int *made);
int MPIDI_GDR_enqueue_free(MPIR_Win * win);
/* gdr_enqueue.c: waits until the stream has reached every operation enqueued on win and
 * they are complete (the epoch they belong to ends after them). */
int MPIDI_GDR_enqueue_drain(MPIR_Win * win);
/* gdr_enqueue.c, for gdr_notify.c: a notified put (or get, is_get) on win's stream whose
 * notification is a SUM of 1 on counter idx of the target in the counters' window
 * counters, sent once the data is complete at the target (arguments checked). */
int MPIDI_GDR_enqueue_notified(int is_get, void *origin_addr, MPI_Aint origin_count,
                               MPI_Datatype origin_datatype, int target_rank,
                               MPI_Aint target_disp, MPI_Aint target_count,
                               MPI_Datatype target_datatype, MPIR_Win * win,
                               MPIR_Win * counters, int idx);
/* Later work on win's stream waits until *word (device or page-locked memory) compares
 * as cmp (GDR_CMP_*, checked) with value. */
int MPIDI_GDR_enqueue_wait(MPIR_Win * win, const uint64_t * word, int cmp, uint64_t value);
int MPIDI_GDR_device_win_progress(MPIR_Win * win, int *made);
int MPIDI_GDR_device_win_free(MPIR_Win * win);

/* The window's free hook: both parts freed, the window off the list. */
int MPIDI_GDR_triggered_win_free(MPIR_Win * win);
/* The progress thread stopped (when the last window with work is freed, and at
 * finalize); the next MPIDI_GDR_triggered_add starts it again. */
void MPIDI_GDR_triggered_stop(void);

#endif /* GDR_TRIGGERED_H_INCLUDED */
