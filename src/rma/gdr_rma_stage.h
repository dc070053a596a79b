/* Staging slots: pinned host memory through which the staged protocol moves device data
 * between nodes (maint/gpu-windows-plan.md section 2).  Three pools of equal slots, carved
 * from one block the device seam allocates and the transport registers once:
 *   - send: an origin's data leaving this process, which the target reads (RDMA read)
 *     before it says TAKEN;
 *   - recv: data arriving, read from a peer's send or result slot, then copied by local
 *     work only;
 *   - result: a target's results, which the origin reads before it says TAKEN.
 * A recv slot never waits on a peer, so two ranks moving data at each other cannot
 * deadlock on slots.  Results have their own pool because a target serves an origin's
 * operations in order: were its results to wait for send slots held by its own staged
 * data, which the peer reads only after serving its own earlier Get, two ranks doing
 * Get-then-Put at each other would wait on each other for ever.
 * Accounting only: no protocol.  Not thread safe: the caller serialises (as the engine). */
#ifndef GDR_RMA_STAGE_H
#define GDR_RMA_STAGE_H

#include "gdr_rma_transport.h"

typedef enum gdr_rma_stage_pool {
    GDR_RMA_STAGE_SEND, GDR_RMA_STAGE_RECV, GDR_RMA_STAGE_RESULT, GDR_RMA_STAGE_POOLS
} gdr_rma_stage_pool_t;

typedef struct gdr_rma_slot {
    void *addr;                 /* slot_bytes, 64-byte aligned, the device can address it */
    uint64_t raddr;             /* addr as a peer names it with rkey */
    uint32_t rkey;              /* the block's remote key (remote read and write) */
    const void *pin;            /* the block's local registration for readv/writev (may be
                                   NULL: the transport needs none) */
    unsigned index;             /* 0 .. POOLS * slots_per_pool - 1, pool by pool */
    gdr_rma_stage_pool_t pool;
    int taken;
} gdr_rma_slot_t;

/* Per pool, for MPI_T. */
typedef struct gdr_rma_stage_counts {
    unsigned long long taken;   /* slots handed out */
    unsigned long long busy;    /* takes refused: every slot of the pool was out */
    unsigned in_use;            /* out now */
    unsigned high_water;        /* the most out at once */
} gdr_rma_stage_counts_t;

typedef struct gdr_rma_stage {
    const gdr_rma_transport_t *net;
    const gdr_rma_device_t *dev;
    size_t slot_bytes;          /* as asked, rounded up to a multiple of 64 */
    unsigned slots_per_pool;
    void *block;                /* the device's host_alloc: every slot, send pool first */
    gdr_rma_mr_t mr;            /* the block's registration */
    void *pin;                  /* the block's pin (NULL when the transport needs none) */
    gdr_rma_slot_t *slots;      /* GDR_RMA_STAGE_POOLS * slots_per_pool */
    unsigned *free_ids;         /* pool p's free slot indices at p * slots_per_pool */
    unsigned n_free[GDR_RMA_STAGE_POOLS];
    gdr_rma_stage_counts_t counts[GDR_RMA_STAGE_POOLS];
    char error[256];            /* why init failed, one sentence */
} gdr_rma_stage_t;

/* Allocates GDR_RMA_STAGE_POOLS * slots_per_pool slots of slot_bytes (> 0, rounded up to a multiple of 64)
 * through dev, registers them once through net for remote read and write, and pins them
 * for local use.  net and dev outlive the stage.  GDR_RMA_OK; else GDR_RMA_NOMEM or
 * GDR_RMA_ERROR with st->error saying why, nothing held (gdr_rma_stage_free is still
 * safe). */
int gdr_rma_stage_init(gdr_rma_stage_t *st, const gdr_rma_transport_t *net,
                       const gdr_rma_device_t *dev, size_t slot_bytes, unsigned slots_per_pool);

/* A free slot of pool at *slot: GDR_RMA_OK, or GDR_RMA_BUSY when every slot of that pool
 * is out (*slot NULL; progress, then take again).  The other pool is never consulted. */
int gdr_rma_stage_take(gdr_rma_stage_t *st, gdr_rma_stage_pool_t pool, gdr_rma_slot_t **slot);

/* Gives a taken slot back to its pool; the caller has reached every device mark and
 * completed every transport operation on it.  GDR_RMA_ERROR for a slot not taken. */
int gdr_rma_stage_give(gdr_rma_stage_t *st, gdr_rma_slot_t *slot);

/* The slot with this index (as a message names it), or NULL when out of range. */
gdr_rma_slot_t *gdr_rma_stage_slot(gdr_rma_stage_t *st, uint64_t index);

/* Unpins, deregisters and frees the block.  Every slot has been given back.  Safe on a
 * zeroed stage and after a failed init. */
void gdr_rma_stage_free(gdr_rma_stage_t *st);

#endif /* GDR_RMA_STAGE_H */
