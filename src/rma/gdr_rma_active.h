/* Active-target epochs without messages (issue 22): fence's barrier and PSCW's post and
 * complete notices as RDMA writes into the ranks' control blocks (gdr_rma_ctl.h).
 * - post(G): for each origin O in G, this rank's count of posts to O (one more) goes into
 *   O's post word for this rank;
 * - start(H): waits until each target's post word here shows a post not yet used, and
 *   uses it;
 * - complete(H): for each target T, this rank's count of completes to T goes into T's
 *   complete word for this rank.  The caller first completes the epoch's operations at the
 *   targets, or leaves only RDMA writes in flight there, which a later write on the same
 *   queue pair cannot overtake;
 * - wait(G) and test: until each origin's complete word here shows a complete not yet
 *   used;
 * - the fence's barrier: dissemination over the window's n ranks in ceil(log2 n) rounds;
 *   in round k a rank writes the fence's number into the round-k word of rank + 2^k and
 *   waits until its own round-k word reaches it.  The first round's partner may still have
 *   RDMA writes of this rank in flight (gdr_rma_active_barrier_first); the later rounds
 *   wait for them.
 * Every word only grows, so a notice that comes early (a post for an origin's next epoch)
 * waits in its word until it is used.  The steps never block; the blocking calls progress
 * the host until the step is done. */
#ifndef GDR_RMA_ACTIVE_H
#define GDR_RMA_ACTIVE_H

#include <stdint.h>

struct gdr_rma_win;

typedef struct gdr_rma_active {
    uint64_t *posts_sent, *posts_used;          /* per rank of the window */
    uint64_t *completes_sent, *completes_used;
    uint64_t fences;            /* barriers begun */
    int barrier_running;        /* begun, not yet done */
    int round;                  /* its next round to wait for */
    int sent;                   /* its rounds written so far */
} gdr_rma_active_t;

/* ranks: n ranks of the window (a group translated), no rank twice. */
int gdr_rma_active_post(struct gdr_rma_win *w, const int *ranks, int n);
/* *ready: every target of ranks has posted (and those posts are now used). */
int gdr_rma_active_start_test(struct gdr_rma_win *w, const int *ranks, int n, int *ready);
int gdr_rma_active_start(struct gdr_rma_win *w, const int *ranks, int n);
int gdr_rma_active_complete(struct gdr_rma_win *w, const int *ranks, int n);
/* *done: every origin of ranks has completed (and those completes are now used). */
int gdr_rma_active_wait_test(struct gdr_rma_win *w, const int *ranks, int n, int *done);
int gdr_rma_active_wait(struct gdr_rma_win *w, const int *ranks, int n);
/* The fence's barrier over every rank of the window: begin, then test until *done. */
int gdr_rma_active_barrier_begin(struct gdr_rma_win *w);
int gdr_rma_active_barrier_test(struct gdr_rma_win *w, int *done);
int gdr_rma_active_barrier(struct gdr_rma_win *w);
/* The rank this one writes to in the barrier's first round (-1 alone): it cannot leave the
 * barrier before that write lands, so RDMA writes to it posted earlier need not complete
 * there before the barrier begins. */
int gdr_rma_active_barrier_first(const struct gdr_rma_win *w);

void gdr_rma_active_free(struct gdr_rma_win *w);

#endif /* GDR_RMA_ACTIVE_H */
