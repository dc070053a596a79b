/* Passive-target epochs without messages (issue 22): MPI_Win_lock/unlock and
 * lock_all/unlock_all take a lock word at the target by remote atomics (the protocol of
 * gdr_rma_lock.h), so the target's CPU never takes part.
 *
 * Each rank's window has one lock word, registered for remote atomics, whose address and
 * key travel in its card.  A lock is taken lazily: lock records the wish and the first
 * operation to the target takes it (gdr_rma_passive_need), so an epoch that moves nothing
 * costs nothing and lock+put+unlock costs the acquire, the put and the release.  A lock
 * on this rank's own window is taken at once: MPI protects local loads and stores with it.
 * The lock word is reached by the NIC only, the rank's own through its loopback queue
 * pair, because a NIC's atomics are not atomic with the CPU's.
 *
 * Every rank must agree whether a window uses this (gdr_rma_passive_configure, from a
 * collective decision), or an exclusive lock taken here would not exclude one taken by
 * messages: a card without a lock word (its registration failed) turns the whole window's
 * native locks off, on every rank, since every rank sees every card. */
#ifndef GDR_RMA_PASSIVE_H
#define GDR_RMA_PASSIVE_H

#include "gdr_rma_lock.h"
#include "gdr_rma_transport.h"

struct gdr_rma_win;

typedef struct gdr_rma_passive_target {
    uint64_t lock_addr;         /* the target's lock word (card) */
    uint32_t lock_rkey;         /* 0: the target has none: MPICH's messages lock it */
    uint8_t state;              /* private: none, wanted, held */
    gdr_rma_lock_t lk;
    gdr_rma_lock_step_t step;   /* the atomic in flight: stays put until it completes */
    uint64_t operand, result;
    int done, status;
} gdr_rma_passive_target_t;

typedef struct gdr_rma_passive {
    int on;                     /* the window's locks go by remote atomics (agreed) */
    uint64_t min_ns, max_ns;    /* back-off between failed tries */
    uint64_t *word;             /* this rank's lock word, 64-byte aligned */
    gdr_rma_mr_t mr;            /* its registration (remote atomics) */
    gdr_rma_passive_target_t *t;
} gdr_rma_passive_t;

/* The part of a window's card that says where its lock word is. */
typedef struct gdr_rma_passive_card {
    uint64_t lock_addr, lock_rkey;
} gdr_rma_passive_card_t;

/* Whether the window's locks go by remote atomics (the same on every rank), with the
 * back-off bounds in nanoseconds.  Before gdr_rma_passive_expose. */
void gdr_rma_passive_configure(gdr_rma_passive_t *p, int on, uint64_t min_ns, uint64_t max_ns);
/* Allocates this rank's lock word and registers it when on; fills *card (zero when off or
 * when that failed: then every origin locks this rank by messages; *why says why and this
 * returns 1).  0 otherwise; GDR_RMA_NOMEM. */
int gdr_rma_passive_expose(struct gdr_rma_win *w, gdr_rma_passive_card_t *card, char *why,
                           size_t why_len);
/* Takes target's card (every target's, on every rank, before any epoch). */
void gdr_rma_passive_set_card(struct gdr_rma_win *w, int target,
                              const gdr_rma_passive_card_t *card);
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
/* The epoch to target ends: releases the lock if held and waits until the release is
 * done at the target.  Call once every operation of the epoch to target has completed
 * there, or at least once every one still in flight is an RDMA write (a responder runs a
 * write before a later atomic, but may read a read's data after it). */
int gdr_rma_passive_unlock(struct gdr_rma_win *w, int target);
/* unlock for every target whose lock is held, the releases in flight together. */
int gdr_rma_passive_unlock_all(struct gdr_rma_win *w);

void gdr_rma_passive_free(struct gdr_rma_win *w);

#endif /* GDR_RMA_PASSIVE_H */
