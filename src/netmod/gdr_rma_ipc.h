/* The same-node path for windows in device memory (gdr_rma_ipc.c).  Included by gdr's
 * .c files only: MPICH's inline code never sees it. */
#ifndef GDR_RMA_IPC_H_INCLUDED
#define GDR_RMA_IPC_H_INCLUDED

#include "gdr_rma.h"

/* At window creation (every rank): 1 when this rank reaches some target of win straight
 * through GPU copies (its own window in device or page-locked memory, a same-node device
 * window by CUDA IPC; any dynamic window, whose attached device regions it maps at their
 * first access, gdr_peer_map.c), so that ch4 hands RMA to ranks of this node to gdr
 * (MPIDI_WINATTR_NM_LOCAL, MPICH patch 0015).  one_gpu: every rank of this node uses this
 * rank's GPU (the same on all of them), so that the node's accumulates to device windows
 * may all be the GPU's atomics; else they all go as MPIDIG's messages. */
int MPIDI_GDR_ipc_claims(MPIR_Win * win, int one_gpu);

/* *handled = 1: a Put/Rput/Get/Rget carried out (or refused with an MPI error) as GPU
 * copies straight into or out of the target's window, or an accumulate-family operation
 * as one atomic launch of the accumulate kernel on it; 0: not this path's (other nodes,
 * host windows, more pieces than it takes, what the atomic kernel cannot take, a node on
 * several GPUs): the caller goes on as before.  The engine lock is held. */
int MPIDI_GDR_ipc_rma(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                        int *handled);

/* 1 when this path has target's device window mapped here (it maps it at the first ask):
 * its puts and gets are this path's.  The engine lock is held. */
int MPIDI_GDR_ipc_maps(MPIR_Win * win, int target);

/* 1 when win is claimed (MPIDI_WINATTR_NM_LOCAL) and target is another rank of this node
 * (or this rank, when the node's ranks use several GPUs): an operation this path did not
 * take then goes as MPIDIG's messages over shared memory, as the shm module would have
 * sent it, never through the RDMA engine or the staged protocol (which reach ranks of
 * other nodes only). */
int MPIDI_GDR_ipc_only_by_message(MPIR_Win * win, int target);

/* Blocks until every copy this path started on win has completed (flush_all, fence,
 * unlock_all, complete: remote and local completion are the same here). */
int MPIDI_GDR_ipc_wait(MPIR_Win * win);
/* The same for the copies and launches to target alone (flush, unlock; -1: every rank). */
int MPIDI_GDR_ipc_wait_target(MPIR_Win * win, int target);

/* Whether accumulates this rank sent to target as MPIDIG's messages have not all been
 * applied yet (gdr_rma_host.c). */
int MPIDI_GDR_am_accumulates_pending(MPIR_Win * win, int target);

/* At window free, after MPIDI_GDR_ipc_wait: the mappings and the lanes' streams. */
void MPIDI_GDR_ipc_free(MPIR_Win * win);

#endif /* GDR_RMA_IPC_H_INCLUDED */
