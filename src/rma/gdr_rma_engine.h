/* The RMA engine (DESIGN.md section 2): windows, the path of every operation, its
 * decomposition into transport work, and completion for flush/unlock/fence/complete.
 * Plain C11, no MPICH: src/netmod translates MPI objects into these calls.
 *
 *   gdr_rma_engine.h      this context (one per process, owned by the netmod) and waits
 *   gdr_rma_kind.h        the kinds of operation
 *   gdr_rma_transport.h   the seams: transport (verbs) and host (MPICH progress, messages)
 *   gdr_rma_win.h         window registry: every target's size, unit, base, key, peer
 *   gdr_rma_regions.h     dynamic windows: attached regions and what origins learned
 *   gdr_rma_completion.h  operations in flight per target, and their completion
 *   gdr_rma_select.h      the selector: which named protocol (gdr_rma_proto.h) carries an
 *                         operation; gdr_rma_plan.h, its answer for one operation bound
 *   gdr_rma_issue.h       one planned operation as work requests
 *   gdr_rma_small.h       the hot path: small puts and gets by the cached route
 *   gdr_rma_acc_order.h   ordered accumulates across paths
 *   gdr_rma_path.h        the accumulate rule;  gdr_rma_range.h  target range checks
 * Not thread safe: the caller serialises, as MPICH does for the netmod. */
#ifndef GDR_RMA_ENGINE_H
#define GDR_RMA_ENGINE_H

#include "gdr_rma_kind.h"
#include "gdr_rma_transport.h"

enum { GDR_RMA_BY_NIC = 0, GDR_RMA_BY_MESSAGE = 1 };

typedef struct gdr_rma_engine {
    gdr_rma_transport_t net;
    gdr_rma_host_t host;
    /* the host's threshold for rc/short (MPIR_CVAR_CH4_GDR_RMA_SHORT_MAX): writes up to
     * this many bytes go inside the work request where the transport allows (0: none) */
    uint32_t short_cap;
    /* operations by kind and the path they took (the netmod's MPI_T counters) */
    unsigned long long count[2][GDR_RMA_KINDS];
    /* native passive-target locks (gdr_rma_passive.h): atomics on lock words, and tries
     * that found a lock taken (MPI_T) */
    unsigned long long lock_atomics, lock_retries;
    /* fence and PSCW (gdr_rma_active.h): writes into control blocks (MPI_T) */
    unsigned long long sync_writes;
} gdr_rma_engine_t;

/* Progresses until *count is 0.  what and peer (-1: any) name the wait in a stall
 * report.  GDR_RMA_OK, or GDR_RMA_HOST_ERROR when the host's progress failed. */
int gdr_rma_wait_zero(const gdr_rma_engine_t *eng, const unsigned long *count, const char *what,
                      int peer);

/* Progresses until pending(arg) returns 0. */
int gdr_rma_wait_until(const gdr_rma_engine_t *eng, int (*pending)(const void *arg),
                       const void *arg, const char *what, int peer);

#endif /* GDR_RMA_ENGINE_H */
