/* Notified RMA's bookkeeping at an origin and at a target (docs/notified-rma.md): how
 * many counters every rank of a window attached, this rank's own counters, and the
 * notified operations whose data is still moving, each waiting to send its notification
 * (an ADD of 1 on the target's counter word, as a signal, gdr_rma_signal.h) once its
 * operation is complete at the target.
 *
 * Pure bookkeeping: what an operation is, how its completion is seen and how a
 * notification is sent are the caller's (callbacks).  Not thread safe: the caller
 * serialises, as for the engine. */
#ifndef GDR_RMA_NOTIFY_H
#define GDR_RMA_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

/* One notified operation in flight: op is the caller's handle of it. */
typedef struct gdr_rma_notify_pending {
    void *op;
    int target, idx;
} gdr_rma_notify_pending_t;

typedef struct gdr_rma_notify {
    int nranks;
    int *counts;                /* [nranks]: counters each rank attached (0: none) */
    uint64_t *mine;             /* this rank's counters, counts[me] 8-byte words */
    int me;
    gdr_rma_notify_pending_t *pending;  /* in the order they were started */
    size_t npending, cap;
} gdr_rma_notify_t;

/* Sets t up for nranks ranks whose counts are copied from counts; this rank is me, its
 * counters (counts[me] words, zeroed here) at mine.  GDR_STATUS_OK, or GDR_STATUS_NOMEM
 * (t left empty), or GDR_STATUS_ERROR for a negative count or me out of range. */
int gdr_rma_notify_init(gdr_rma_notify_t *t, int nranks, const int *counts, int me,
                        uint64_t *mine);
/* Frees what init allocated (not mine); pending operations are forgotten. */
void gdr_rma_notify_fini(gdr_rma_notify_t *t);

/* Whether counter idx of target exists: GDR_STATUS_OK, or GDR_STATUS_ERROR with a
 * sentence in why naming the index and the target's count. */
int gdr_rma_notify_check(const gdr_rma_notify_t *t, int target, int idx, char *why,
                         size_t why_len);

/* Remembers a notified operation started to (target, idx), already checked.
 * GDR_STATUS_OK or GDR_STATUS_NOMEM (nothing remembered). */
int gdr_rma_notify_add(gdr_rma_notify_t *t, void *op, int target, int idx);

/* For every pending operation (of target; -1: any) for which done(ctx, op) is nonzero,
 * in the order they were started: send(ctx, op, target, idx), which sends the
 * notification and releases op, and forget it.  Stops at the first send that fails and
 * returns its nonzero result (that operation stays forgotten: its op was released);
 * else 0.  *sent (may be NULL) += the notifications sent. */
int gdr_rma_notify_sweep(gdr_rma_notify_t *t, int target, int (*done)(void *ctx, void *op),
                         int (*send)(void *ctx, void *op, int target, int idx), void *ctx,
                         size_t *sent);

/* Pending operations to target (-1: to any). */
size_t gdr_rma_notify_pending(const gdr_rma_notify_t *t, int target);

/* This rank's counter idx (< counts[me]): an atomic load with acquire order, so data a
 * notification counted is visible after it; and an atomic store. */
uint64_t gdr_rma_notify_load(const gdr_rma_notify_t *t, int idx);
void gdr_rma_notify_store(gdr_rma_notify_t *t, int idx, uint64_t value);

#endif /* GDR_RMA_NOTIFY_H */
