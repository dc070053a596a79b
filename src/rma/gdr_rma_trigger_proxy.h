/* The proxy of kernel-triggered RMA: takes descriptors off the trigger ring
 * (gdr_rma_trigger_ring.h), starts each through an executor (the RMA engine, or a fake in
 * tests), and publishes per-target completion as the executor reports it, in any order.
 *
 * Guarantees: descriptors start in ring order; at most `window` operations per target
 * are unfinished at once (the rest wait in the ring: back-pressure reaches the producers);
 * done[rank] counts the target's operations finished without a gap, so a producer's flush
 * (done >= posted) covers everything posted before it.  A descriptor the executor refuses
 * stops the proxy with the reason (gdr_trig_proxy_error): the device side sees no more
 * progress, the host reports the error at its next MPI call.  Single-threaded: the caller
 * runs progress and completion on one thread (or serialises them). */
#ifndef GDR_RMA_TRIGGER_PROXY_H
#define GDR_RMA_TRIGGER_PROXY_H

#include <stddef.h>
#include <stdint.h>
#include "gdr_rma_trigger_done.h"
#include "gdr/gdr_rma_trigger_ring.h"

typedef struct gdr_trig_exec {
    /* Starts d; its completion comes later through gdr_trig_proxy_complete(rank,
     * rank_seq), from any callback of the executor's progress.  0, or -1 with why set. */
    int (*start)(void *ctx, const gdr_trig_desc_t *d, char *why, size_t why_len);
    /* Lets started operations progress (may call gdr_trig_proxy_complete).  0 or -1. */
    int (*progress)(void *ctx, char *why, size_t why_len);
} gdr_trig_exec_t;

typedef struct gdr_trig_proxy {
    const gdr_trig_ring_t *ring;
    uint64_t next;              /* the next ticket to take */
    gdr_trig_desc_t held;       /* taken, waiting for room at its target */
    int holding;
    gdr_trig_done_t *done;      /* per target */
    gdr_trig_exec_t exec;
    void *ctx;
    uint64_t started, finished;
    uint64_t window_waits;      /* times the head descriptor waited for room at its target */
    int failed;
    char error[384];
} gdr_trig_proxy_t;

/* window: unfinished operations per target (raised to twice the ring's slot count, which
 * the ring's numbering needs to be free of waits that never end (gdr_trig_reserve), and
 * rounded up to 64).  0, or -1 out of memory. */
int gdr_trig_proxy_init(gdr_trig_proxy_t *p, const gdr_trig_ring_t *ring, uint32_t window,
                        const gdr_trig_exec_t *exec, void *ctx);
void gdr_trig_proxy_free(gdr_trig_proxy_t *p);

/* Starts what the ring holds (at most max descriptors) and runs the executor's progress,
 * also once the proxy failed (what was started still finishes).  Returns the number
 * started, or -1 once the proxy failed. */
int gdr_trig_proxy_progress(gdr_trig_proxy_t *p, int max);

/* The executor finished operation rank_seq of rank.  0, or -1 (a completion that was never
 * started or came twice: the proxy fails). */
int gdr_trig_proxy_complete(gdr_trig_proxy_t *p, int rank, uint64_t rank_seq);

const char *gdr_trig_proxy_error(const gdr_trig_proxy_t *p);

#endif /* GDR_RMA_TRIGGER_PROXY_H */
