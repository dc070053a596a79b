/* The staged protocol: RMA on device memory without the host touching it, and without
 * the NIC touching it either (maint/gpu-windows-plan.md sections 2-3).  Any operation
 * whose window, origin, result or compare buffer is device memory, and that the NIC
 * cannot take zero-copy, goes here instead of to MPICH's active messages.
 *
 * An origin sends a REQ (gdr_rma_staged_wire.h) in call order.  Small data travels inside
 * it; larger data is staged chunk by chunk into the origin's pinned send slots (a
 * device-to-host copy on the device seam), announced by CHUNK, and pulled by the target
 * with an RDMA read into its own recv slot.  The target runs each origin's operations in
 * order on its window's one device queue: copies for Put and Get, the accumulate kernel
 * for the rest, so accumulates from different origins never overlap and never leave the
 * GPU.  Results come back the same way (RESULT, the origin pulls), then DONE once the
 * target's device queue has passed the operation's work.
 *
 * Completion goes through the window's tracker (gdr_rma_completion.h): remote at DONE and
 * once the results are in place; local once the origin data is staged (Put-type) or at
 * remote completion (Get-type).  A freed or reallocated device origin buffer (its CUDA
 * buffer id changed) aborts the operation: the target is never asked to read user memory,
 * only gdr's slots, so it cannot fault; the tracker fails and the error says why.
 *
 * Progress never waits on the device (marks are polled); gdr_rma_staged_start waits only to
 * stage small device data it sends inline.  Not thread safe: the caller serialises, as
 * for the engine. */
#ifndef GDR_RMA_STAGED_H
#define GDR_RMA_STAGED_H

#include "gdr_rma_staged_wire.h"
#include "gdr_rma_plan.h"
#include "gdr_rma_stage.h"

typedef struct gdr_rma_staged gdr_rma_staged_t;
typedef struct gdr_rma_staged_win gdr_rma_staged_win_t;

typedef struct gdr_rma_staged_config {
    size_t inline_max;          /* data up to this size travels inside REQ or RESULT (at
                                   most GDR_RMA_STAGED_INLINE_MAX and chunk_bytes; 0: never) */
    size_t chunk_bytes;         /* a slot: a power of two, at least 64 */
    unsigned slots_per_pool;    /* at least 1, in each of the three pools */
} gdr_rma_staged_config_t;

/* What fits in one message beside the largest piece list. */
#define GDR_RMA_STAGED_INLINE_MAX 8192

/* For MPI_T and tests. */
typedef struct gdr_rma_staged_counts {
    unsigned long long started[GDR_RMA_KINDS];  /* operations this rank sent */
    unsigned long long served[GDR_RMA_KINDS];   /* operations this rank applied as target */
    unsigned long long chunks_staged, chunks_read, results_read;
    unsigned long long refused;                 /* requests or chunks a target refused */
    unsigned long long aborted;                 /* operations an origin gave up */
} gdr_rma_staged_counts_t;

/* The protocol's context for one process, over eng's transport and host (its send_msg)
 * and a device seam (dev outlives it).  Slots are allocated on first use.  NULL when out
 * of memory or the configuration is invalid (*why says which). */
gdr_rma_staged_t *gdr_rma_staged_new(gdr_rma_engine_t *eng, const gdr_rma_device_t *dev,
                               const gdr_rma_staged_config_t *cfg, char *why, size_t why_len);
/* Frees the context: every window freed, nothing in flight. */
void gdr_rma_staged_free(gdr_rma_staged_t *d);

/* The protocol's side of a window.  w: the engine's registry (its tracker counts this
 * protocol's operations; targets' disp_unit and transport peers come from it).  win_id:
 * the same at every rank.  This rank's window memory: [base, base+size), device memory
 * when base_device (a dynamic window: base NULL, size 0, its attached regions instead,
 * each asked of the device seam).  NULL when out of memory. */
gdr_rma_staged_win_t *gdr_rma_staged_win_new(gdr_rma_staged_t *d, gdr_rma_win_t *w, uint64_t win_id,
                                       void *base, uint64_t size, int base_device);
/* After every operation from and to this rank completed (the host's barrier). */
void gdr_rma_staged_win_free(gdr_rma_staged_win_t *dw);

/* Starts a->kind to a->target through the protocol (a->tbytes 0: completes here).  The
 * access as the plan takes it, with buffers listed (scattered: iov; else addr, tbytes long;
 * FOP and CAS: one element) and device buffers named by their CUDA buffer id; accumulates
 * name a->gpu_op and a->gpu_type.  More target pieces than one request carries
 * (GDR_RMA_STAGED_PIECES_MAX) go as several requests, in order, each of whole elements.
 * fn(arg, status, NULL, 0) runs at remote completion (may be NULL), once.  GDR_RMA_OK once
 * the operation is counted in the window's tracker; GDR_RMA_ERROR (a bad argument or a
 * failed device call: gdr_rma_staged_error says which), GDR_RMA_NOMEM or
 * GDR_RMA_HOST_ERROR with nothing started, or, for an operation of several requests, with
 * the requests sent before the failure still counted in the tracker (fn runs for none). */
int gdr_rma_staged_start(gdr_rma_staged_win_t *dw, const gdr_rma_access_t *a, gdr_rma_complete_fn fn,
                      void *arg);

/* A message of the protocol for dw, as the host's send_msg sent it (the host found dw by
 * gdr_rma_staged_peek's window id).  Malformed or out-of-place messages are refused
 * (counted; the origin's operation fails), never applied.  GDR_RMA_OK, or GDR_RMA_HOST_ERROR
 * when an answer could not be sent. */
int gdr_rma_staged_deliver(gdr_rma_staged_win_t *dw, const void *msg, size_t len);

/* One round: messages to self, slots to take, reads and device work to start, marks
 * reached, answers to send.  Called from the host's progress; never waits.  GDR_RMA_OK,
 * or an error that the host reports as fatal. */
int gdr_rma_staged_progress(gdr_rma_staged_t *d);

/* The last failure, one sentence. */
const char *gdr_rma_staged_error(const gdr_rma_staged_t *d);
const gdr_rma_staged_counts_t *gdr_rma_staged_counts(const gdr_rma_staged_t *d);
/* The staging pools (NULL before the first operation), for MPI_T and tests. */
const gdr_rma_stage_t *gdr_rma_staged_stage(const gdr_rma_staged_t *d);

#endif /* GDR_RMA_STAGED_H */
