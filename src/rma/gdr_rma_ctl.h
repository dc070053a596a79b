/* A window's control block: a little registered memory of each rank that the other ranks
 * of the window reach by RDMA to synchronise without messages (issue 22): the lock word of
 * passive-target epochs (gdr_rma_passive.h), and for active-target epochs
 * (gdr_rma_active.h) the fence barrier's words and one post word and one complete word
 * per rank of the window, and on dynamic windows one detach word per rank
 * (gdr_rma_regions.h).  Its address and key travel in the window's card.
 *
 * Every rank must agree whether a window uses it (gdr_rma_ctl_configure, from a collective
 * decision): a card without a control block (its registration failed) turns it off for the
 * whole window, on every rank, since every rank sees every card.  Only the NIC writes it
 * (a rank's own through its loopback queue pair): a NIC's atomics are not atomic with the
 * CPU's, and its writes land in any order with the CPU's. */
#ifndef GDR_RMA_CTL_H
#define GDR_RMA_CTL_H

#include "gdr_rma_transport.h"

struct gdr_rma_win;

/* Where things are in a control block (bytes). */
enum {
    GDR_RMA_CTL_LOCK = 0,               /* the lock word */
    GDR_RMA_CTL_BARRIER = 64,           /* fence: a word per round of the barrier */
    GDR_RMA_CTL_BARRIER_ROUNDS = 32,
    GDR_RMA_CTL_POSTS = GDR_RMA_CTL_BARRIER + 8 * GDR_RMA_CTL_BARRIER_ROUNDS,
    /* then POSTS: a word per rank (its posts to this rank so far), COMPLETES likewise,
     * and on dynamic windows DETACHES (its detaches so far, once this rank asked it about
     * a region) */
};

typedef struct gdr_rma_ctl_card {
    uint64_t addr, rkey;                /* rkey 0: none */
} gdr_rma_ctl_card_t;

typedef struct gdr_rma_ctl_target {
    uint64_t addr;
    uint32_t rkey;
} gdr_rma_ctl_target_t;

typedef struct gdr_rma_ctl {
    int on;                     /* the window synchronises through control blocks */
    volatile uint64_t *block;   /* this rank's, 64-byte aligned, zeroed */
    size_t size;
    gdr_rma_mr_t mr;
    gdr_rma_ctl_target_t *t;    /* every rank's block */
    unsigned long writes;       /* writes to other blocks not yet complete */
    int failed;                 /* one of them failed */
} gdr_rma_ctl_t;

/* Whether the window uses control blocks (the same on every rank).  Before expose. */
void gdr_rma_ctl_configure(gdr_rma_ctl_t *c, int on);
/* Allocates and registers this rank's block when on (remote reads, writes, atomics);
 * fills *card (zero when off or when registration failed: *why says why, returns 1).
 * 0 otherwise; GDR_RMA_NOMEM. */
int gdr_rma_ctl_expose(struct gdr_rma_win *w, gdr_rma_ctl_card_t *card, char *why,
                       size_t why_len);
/* Takes target's card (every target's, on every rank, before any epoch). */
void gdr_rma_ctl_set_card(struct gdr_rma_win *w, int target, const gdr_rma_ctl_card_t *card);
/* Whether the window synchronises through control blocks (then every target has one). */
int gdr_rma_ctl_native(const struct gdr_rma_win *w);

/* Offsets of rank's post, complete and detach words in a block of a window of n ranks. */
static inline size_t gdr_rma_ctl_post_word(int rank)
{
    return GDR_RMA_CTL_POSTS + 8 * (size_t) rank;
}

static inline size_t gdr_rma_ctl_complete_word(int n, int rank)
{
    return GDR_RMA_CTL_POSTS + 8 * (size_t) n + 8 * (size_t) rank;
}

static inline size_t gdr_rma_ctl_detach_word(int n, int rank)
{
    return GDR_RMA_CTL_POSTS + 16 * (size_t) n + 8 * (size_t) rank;
}

/* This rank's word at offset, as the NIC last wrote it. */
uint64_t gdr_rma_ctl_read(const struct gdr_rma_win *w, size_t offset);
/* Writes value into target's word at offset (an inline RDMA write; completes in the
 * background, counted in writes), after the reads and atomics to target still in
 * flight (GDR_RMA_POST_AFTER_READS): a notice or barrier write never lets the target
 * go on while one of them may still read or change its window.  GDR_RMA_OK, BUSY never
 * (it progresses), ERROR. */
int gdr_rma_ctl_write(struct gdr_rma_win *w, int target, size_t offset, uint64_t value);
/* Waits until every write is complete; GDR_RMA_ERROR if one failed. */
int gdr_rma_ctl_quiesce(struct gdr_rma_win *w);
/* The target's block (address, key) for atomics on it. */
const gdr_rma_ctl_target_t *gdr_rma_ctl_target(const struct gdr_rma_win *w, int target);

void gdr_rma_ctl_free(struct gdr_rma_win *w);

#endif /* GDR_RMA_CTL_H */
