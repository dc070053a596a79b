/* Operations in flight, counted per target: remote completion (flush, unlock, fence,
 * complete wait for it) and local completion (flush_local: the origin or result buffer
 * is free again).  One MPI operation is one gdr_rma_op_t, made of one or more
 * transport operations; it completes when the last of them has.  A transport
 * operation that fails still counts down, and the failure stays with the window's
 * tracker until a wait reports it (GDR_RMA_ERROR, once): a freed origin buffer fails the
 * flush that covers it, not every later one. */
#ifndef GDR_RMA_COMPLETION_H
#define GDR_RMA_COMPLETION_H

#include "gdr_rma_engine.h"
#include "gdr_rma_regions.h"

struct gdr_rma_tracker;
/* One target of a tracker: the done argument of the small protocols' work requests. */
typedef struct gdr_rma_tracker_slot {
    struct gdr_rma_tracker *tracker;
    int target;
} gdr_rma_tracker_slot_t;

typedef struct gdr_rma_tracker {
    int n;                      /* targets */
    gdr_rma_tracker_slot_t *slots;      /* per target */
    unsigned long *remote, *local;      /* per target */
    unsigned long *reading;     /* per target: in flight and not known to be writes only */
    unsigned long *by_messages; /* per target: in flight through the staged protocol */
    unsigned long total_remote, total_local;
    int failed;                 /* a transport operation failed: waits report it */
    gdr_rma_regions_t *regions; /* dynamic windows: told of remote completions */
    struct gdr_rma_op *free_ops;        /* finished operations kept for the next ones: no
                                         * heap allocation per operation once warm */
    unsigned free_count;
} gdr_rma_tracker_t;

/* Finished operations a tracker keeps for reuse, at most (more are freed). */
#define GDR_RMA_OP_POOL_MAX 256

/* The host's callback when an operation completes: status 0 or GDR_RMA_ERROR; landed is
 * the engine's landing buffer (results to unpack), or NULL. */
typedef void (*gdr_rma_complete_fn)(void *arg, int status, const void *landed, size_t len);

typedef struct gdr_rma_op {
    const gdr_rma_engine_t *eng;
    gdr_rma_tracker_t *tracker;
    int target;
    int local_held;             /* counted in local[] until done */
    int reads_target;           /* counted in reading[] until done (the default) */
    int by_messages;            /* counted in by_messages[] until done */
    int status;
    unsigned parts;             /* transport operations not complete, +1 while posting */
    void *temp;                 /* engine buffer where results land (passed to complete) */
    size_t temp_len;
    void *origin_temp;          /* engine buffer of packed origin data the NIC reads */
    void *pin;                  /* user buffer held registered */
    gdr_rma_complete_fn complete;
    void *complete_arg;
    int remote_news;            /* completion tells the host it is remote: forget regions */
    struct gdr_rma_op *next_free;       /* in the tracker's pool, once finished */
} gdr_rma_op_t;

int gdr_rma_tracker_init(gdr_rma_tracker_t *t, int n, gdr_rma_regions_t *regions);
void gdr_rma_tracker_free(gdr_rma_tracker_t *t);

/* A new operation to target, held until gdr_rma_op_posted; NULL when out of memory. */
gdr_rma_op_t *gdr_rma_op_new(const gdr_rma_engine_t *eng, gdr_rma_tracker_t *t, int target,
                             int holds_local);
/* The op is RDMA writes only.  Every other op counts as reading at the target (RDMA
 * reads, atomics, the staged protocol): a later atomic on the same queue pair may run
 * before such an op is done there, never before a write (gdr_rma_passive_unlock). */
void gdr_rma_op_writes_only(gdr_rma_op_t *op);
/* The op runs through the staged protocol's messages and the target's own work, not
 * as this rank's work requests: nothing posted on the queue pair after it (a fenced
 * one included) is ordered behind it, so a release waits for it on the host. */
void gdr_rma_op_by_messages(gdr_rma_op_t *op);
/* The flags of a synchronisation post to target (a release, a notice): after the reads
 * and atomics in flight to it, if any. */
static inline unsigned gdr_rma_tracker_post_flags(const gdr_rma_tracker_t *t, int target)
{
    return t->reading != NULL && t->reading[target] != 0 ? GDR_RMA_POST_AFTER_READS : 0;
}

/* Whether an op to target in flight goes by messages (a release waits for it). */
static inline int gdr_rma_tracker_by_messages(const gdr_rma_tracker_t *t, int target)
{
    return t->by_messages != NULL && t->by_messages[target] != 0;
}
/* The op's origin or result buffer is in the transport's hands until completion. */
void gdr_rma_op_hold_local(gdr_rma_op_t *op);
/* The op's origin buffer is free again before the op completes (the staged protocol
 * copied it out): flush_local stops waiting for it. */
void gdr_rma_op_local_done(gdr_rma_op_t *op);
/* One more transport operation; its done callback is gdr_rma_op_part_done(op, status). */
void gdr_rma_op_add_part(gdr_rma_op_t *op);
void gdr_rma_op_part_done(void *op, int status);
/* What to call at completion; remote_news: the host learns of remote completion from
 * it (a request), so the regions learned of the target are forgotten then. */
void gdr_rma_op_on_complete(gdr_rma_op_t *op, gdr_rma_complete_fn fn, void *arg,
                            int remote_news);
/* Posting finished: drops the hold (the op may complete right here). */
void gdr_rma_op_posted(gdr_rma_op_t *op);
/* Nothing was posted: undo the op without completing it. */
void gdr_rma_op_abandon(gdr_rma_op_t *op);

/* The small protocols (gdr_rma_small.h) count a transfer without an operation object: a
 * write is in flight remotely, a read remotely, locally and as reading, from _begin until
 * the done callback (its argument: the slot _begin returns; called with status 0 when
 * the transfer was never posted). */
static inline gdr_rma_tracker_slot_t *gdr_rma_tracker_write_begin(gdr_rma_tracker_t *t,
                                                                  int target)
{
    t->remote[target]++;
    t->total_remote++;
    return &t->slots[target];
}

void gdr_rma_tracker_write_done(void *slot, int status);

static inline gdr_rma_tracker_slot_t *gdr_rma_tracker_read_begin(gdr_rma_tracker_t *t,
                                                                 int target)
{
    t->local[target]++;
    t->total_local++;
    t->reading[target]++;
    return gdr_rma_tracker_write_begin(t, target);
}

void gdr_rma_tracker_read_done(void *slot, int status);

/* Waits: remote or local completion of every operation, or of those to one target.
 * Waiting for remote completion forgets learned regions (gdr_rma_regions.h).
 * GDR_RMA_OK, GDR_RMA_ERROR after a failed transport operation, or GDR_RMA_HOST_ERROR. */
int gdr_rma_wait_all(gdr_rma_tracker_t *t, const gdr_rma_engine_t *eng, int local_only);
int gdr_rma_wait_target(gdr_rma_tracker_t *t, const gdr_rma_engine_t *eng, int target,
                        int local_only);
/* Remote completion of every operation but those to spared, which are not waited for:
 * the caller's next write to spared goes behind them on the same queue pair (a fence's
 * barrier write; behind reads and atomics fenced, GDR_RMA_POST_AFTER_READS), and the
 * caller waits for their local completion after it. */
int gdr_rma_wait_all_except(gdr_rma_tracker_t *t, const gdr_rma_engine_t *eng, int spared);

#endif /* GDR_RMA_COMPLETION_H */
