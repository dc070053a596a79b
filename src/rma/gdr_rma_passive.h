/* Passive-target epochs without messages (issue 22): MPI_Win_lock/unlock and
 * lock_all/unlock_all take the lock word in the target's control block (gdr_rma_ctl.h) by
 * remote atomics (the protocol of gdr_rma_lock.h), so the target's CPU never takes part.
 *
 * A lock is taken lazily: lock records the wish and the first operation to the target
 * takes it (gdr_rma_passive_need), so an epoch that moves nothing costs nothing and
 * lock+put+unlock costs the acquire and the put: the release goes behind the put, and
 * unlock waits for the put only.  A lock on this rank's own window is taken at once: MPI
 * protects local loads and stores with it.  Windows whose control blocks are off lock by
 * MPICH's messages (every call here then does nothing). */
#ifndef GDR_RMA_PASSIVE_H
#define GDR_RMA_PASSIVE_H

#include "gdr_rma_lock.h"
#include "gdr_rma_transport.h"

struct gdr_rma_win;

/* An epoch's lock to one target: not wanted, wanted (the next operation takes it), held. */
enum { GDR_RMA_EPOCH_NONE, GDR_RMA_EPOCH_WANTED, GDR_RMA_EPOCH_HELD };

typedef struct gdr_rma_passive_target {
    uint8_t state;              /* GDR_RMA_EPOCH_*: set only in gdr_rma_passive.c */
    gdr_rma_lock_t lk;
    gdr_rma_lock_step_t step;   /* the atomic in flight: stays put until it completes */
    uint64_t operand, result;
    int done, status;
    /* the release unlock left in flight: unlock waits for the epoch's own operations, not
     * for it (the next atomic on the word, on the same queue pair, runs after it) */
    uint64_t release_operand, release_result;
    int release_pending, release_status;
} gdr_rma_passive_target_t;

typedef struct gdr_rma_passive {
    uint64_t min_ns, max_ns;    /* back-off between failed tries */
    gdr_rma_passive_target_t *t;
} gdr_rma_passive_t;

/* The back-off bounds in nanoseconds. */
void gdr_rma_passive_configure(gdr_rma_passive_t *p, uint64_t min_ns, uint64_t max_ns);
/* Whether target's lock goes by remote atomics (else by MPICH's messages); the same for
 * every target of a window once all cards are in. */
int gdr_rma_passive_native(const struct gdr_rma_win *w, int target);

/* An epoch to target begins (kind); the lock is taken at the first operation, or now when
 * target is this rank.  GDR_RMA_OK, or GDR_RMA_ERROR/HOST_ERROR from the transport. */
int gdr_rma_passive_lock(struct gdr_rma_win *w, int target, gdr_rma_lock_kind_t kind);
/* Before an operation to target: takes the lock the epoch wants, if not yet held. */
int gdr_rma_passive_need(struct gdr_rma_win *w, int target);
/* Takes every lock the epoch wants (operations that do not pass through need: a device
 * handle's proxy). */
int gdr_rma_passive_need_all(struct gdr_rma_win *w);
/* Whether the epoch to target holds the lock (else nothing has to be released). */
int gdr_rma_passive_held(const struct gdr_rma_win *w, int target);
/* The epoch to target ends: posts the release of the lock if held, and returns without
 * waiting for it.  Call once every operation of the epoch to target has completed there,
 * or at least once none still in flight goes by messages (gdr_rma_tracker_by_messages):
 * a responder runs a write before a later atomic, and the release goes after the
 * epoch's reads and atomics on the queue pair (GDR_RMA_POST_AFTER_READS; a responder may
 * read a read's data after a later request ran); the caller then waits for the epoch's
 * operations, which complete before the release does.  A release that fails is
 * reported by the next lock need of that target or by gdr_rma_passive_drain. */
int gdr_rma_passive_unlock(struct gdr_rma_win *w, int target);
/* unlock for every target whose lock is held. */
int gdr_rma_passive_unlock_all(struct gdr_rma_win *w);
/* Waits until no release is in flight: before the window's memory may go (its free's
 * barrier), since a release that reached a deregistered lock word would break the
 * connection.  GDR_RMA_ERROR if one failed since the last report. */
int gdr_rma_passive_drain(struct gdr_rma_win *w);

/* Frees the epoch states (after gdr_rma_passive_drain; waits itself if it was not). */
void gdr_rma_passive_free(struct gdr_rma_win *w);

#endif /* GDR_RMA_PASSIVE_H */
