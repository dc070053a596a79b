/* Dynamic windows over RDMA.  A target registers every region it attaches (remote
 * access as the window allows) and deregisters it at detach.  An origin learns the
 * region around a target address on first use (the host's query message, answered by
 * the target) and keeps what it learned as long as it knows the target has not detached
 * anything since:
 * - with control blocks (gdr_rma_ctl.h), a target that detaches writes its count of
 *   detaches into the detach word of every rank that ever asked it, and waits for those
 *   writes before MPI_Win_detach returns.  An origin compares that word with the count
 *   its answer carried: the memory may be used again only after the detach returned and
 *   some synchronisation ordered the origin after it, so the word has landed by then.
 *   Learning costs one question per region, not one per epoch (OSU's dynamic-window
 *   latency rows asked every iteration, 2026-11-29);
 * - without them, it forgets at the next remote completion of its operations to that
 *   target (flush, unlock, fence, PSCW complete, a request-based operation): a target may
 *   detach memory only after the origin's operations on it completed. */
#ifndef GDR_RMA_REGIONS_H
#define GDR_RMA_REGIONS_H

#include "gdr_rma_engine.h"

/* What the host says of memory it exposes (gdr_rma_win_expose, gdr_rma_regions_attach),
 * a mask.  Device memory is registered with the NIC only under EXPOSE_DEVICE_OK
 * (GPUDirect peermem): otherwise remote accesses to it go as messages, so the NIC never
 * touches GPU memory in staged mode. */
enum {
    GDR_RMA_EXPOSE_IS_DEVICE = 1,       /* the memory is device (GPU) memory */
    GDR_RMA_EXPOSE_DEVICE_OK = 2,       /* device memory may be registered with the NIC */
    GDR_RMA_EXPOSE_GPU = 4              /* this rank's GPU layer is on (windows' cards only) */
};

/* Whether memory described by expose may be registered: 1, or 0 with why set (device
 * memory without DEVICE_OK). */
int gdr_rma_expose_may_register(unsigned expose, char *why, size_t why_len);

/* A region this rank attached (registered unless mr.handle is NULL). */
typedef struct gdr_rma_attached {
    struct gdr_rma_attached *next;
    uint64_t base, size;
    int device;                 /* device memory (registered only under EXPOSE_DEVICE_OK) */
    gdr_rma_mr_t mr;
} gdr_rma_attached_t;

/* A target's region this rank learned. */
typedef struct gdr_rma_learned {
    int target;
    uint64_t base, size;
    uint32_t rkey;              /* 0: the target could not register it (messages) */
    uint64_t detaches;          /* the target's detaches when it answered */
} gdr_rma_learned_t;

#define GDR_RMA_LEARNED_MAX 8

typedef struct gdr_rma_regions {
    gdr_rma_attached_t *attached;
    gdr_rma_learned_t learned[GDR_RMA_LEARNED_MAX];
    int n_learned, next_evict;
    unsigned long queries;      /* questions sent to targets (tests, diagnostics) */
    /* detaches announced through control blocks (gdr_rma_win_detach) */
    int n_ranks;
    uint8_t *asked;             /* target side: per rank, it asked about a region */
    uint64_t detaches;          /* target side: this rank's detaches so far */
    const volatile uint64_t *announced; /* origin side: per target, its detach word here;
                                         * NULL: forget at remote completion instead */
} gdr_rma_regions_t;

struct gdr_rma_win;

/* Sets up the per-rank table of a dynamic window of n ranks (GDR_RMA_NOMEM). */
int gdr_rma_regions_init(gdr_rma_regions_t *r, int n);

/* Target side.  attach: registers [base, base+size) with access; expose is the
 * GDR_RMA_EXPOSE_ mask (IS_DEVICE, DEVICE_OK; GPU is ignored).  A registration that fails,
 * or device memory without DEVICE_OK (nothing registered), leaves the region reachable by
 * messages only (*why says why; returns 1).  eng NULL (a window without RDMA): the region
 * is only recorded, for the range checks of origins that reach it by messages or shared
 * memory (returns 1).  0 registered, GDR_RMA_NOMEM.  (detach and free take eng NULL too.) */
int gdr_rma_regions_attach(gdr_rma_regions_t *r, const gdr_rma_engine_t *eng, void *base,
                           uint64_t size, unsigned access, unsigned expose, char *why,
                           size_t why_len);
/* Deregisters and drops the region attached at base: 1, or 0 when none was. */
int gdr_rma_regions_detach(gdr_rma_regions_t *r, const gdr_rma_engine_t *eng, uint64_t base);
/* MPI_Win_detach: regions_detach, then, on a window with control blocks, announces the
 * detach to every rank that ever asked this one about a region and waits until those
 * writes are complete.  GDR_RMA_OK, or GDR_RMA_ERROR (a write failed) or HOST_ERROR. */
int gdr_rma_win_detach(struct gdr_rma_win *w, uint64_t base);
void gdr_rma_regions_free(gdr_rma_regions_t *r, const gdr_rma_engine_t *eng);
/* The attached region holding addr, described as a query's answer (rkey 0 when it is
 * not registered; device says whether it is device memory). */
gdr_rma_region_reply_t gdr_rma_regions_describe(const gdr_rma_regions_t *r, uint64_t addr);
/* describe, answering origin's question: counts origin among the ranks told of detaches. */
gdr_rma_region_reply_t gdr_rma_regions_answer(gdr_rma_regions_t *r, int origin, uint64_t addr);

/* Origin side.  The key for [addr, addr+len) at target: *rkey 0 when the access must
 * go as a message (unregistered, or running past the region).  GDR_RMA_ERROR with
 * *not_attached = 1 when the target has not attached addr; GDR_RMA_HOST_ERROR when
 * the query failed. */
int gdr_rma_regions_lookup(gdr_rma_regions_t *r, const gdr_rma_engine_t *eng, void *host_win,
                           int self, int target, uint64_t addr, uint64_t len, uint32_t *rkey,
                           int *not_attached);
/* Forgets what this rank learned of target's regions (-1: of every target). */
void gdr_rma_regions_forget(gdr_rma_regions_t *r, int target);
/* This rank's operations to target (-1: every target) completed remotely: forgets, unless
 * detaches are announced. */
void gdr_rma_regions_epoch_done(gdr_rma_regions_t *r, int target);

#endif /* GDR_RMA_REGIONS_H */
