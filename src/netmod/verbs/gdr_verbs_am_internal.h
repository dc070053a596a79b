/* What the AM channel shares with the one-sided engine (gdr_verbs_rma.c), which
 * posts on the same queue pairs and completion queue.  Not for the netmod. */
#ifndef GDR_VERBS_AM_INTERNAL_H
#define GDR_VERBS_AM_INTERNAL_H

#include <infiniband/verbs.h>
#include "gdr_verbs_am.h"
#include "gdr_verbs_rcache.h"

/* Every work request's wr_id points at a context that starts with its kind. */
typedef enum {
    WR_RECV = 1, WR_SEND, WR_READ, WR_PROBE, WR_RMA, WR_UD_RECV, WR_UD_SEND
} gdr_verbs_wr_kind_t;

/* The head of a one-sided operation's context (kind WR_RMA). */
typedef struct gdr_verbs_wr_head {
    gdr_verbs_wr_kind_t kind;
    int peer;
} gdr_verbs_wr_head_t;

/* Called for each successful WR_RMA completion; returns 0 or -1. */
typedef int (*gdr_verbs_am_rma_cb_t)(void *ctx, const struct ibv_wc *wc);

/* Posts the one-sided work requests held back for peer (-1: any), before the channel
 * polls or posts to peer itself (the queue pair's order); returns 0 or -1. */
typedef int (*gdr_verbs_am_rma_held_cb_t)(void *ctx, int peer);

/* held_count: how many work requests the engine holds (read by the channel before each
 * post, so that a send pays the callback only when something is held). */
void gdr_verbs_am_attach_rma(gdr_verbs_iface_t *am, gdr_verbs_am_rma_cb_t cb,
                             gdr_verbs_am_rma_held_cb_t held, const uint32_t *held_count,
                             void *ctx);

/* What the one-sided hot path reads inline, first in the channel's state: each peer's
 * queue pair while it is connected and neither it nor the channel has failed, else NULL
 * (kept where a peer connects or fails: gdr_verbs_iface_priv.h), and the inline limit
 * every queue pair grants (0 until the first one exists). */
typedef struct gdr_verbs_am_hot {
    struct ibv_qp **ready_qp;
    int n;                      /* entries: every peer the channel can ever have */
    uint32_t max_inline;
} gdr_verbs_am_hot_t;

/* The connected queue pair to peer (rank itself: the loopback QP); NULL if none yet, or
 * the peer or the channel failed. */
static inline struct ibv_qp *gdr_verbs_am_qp(const gdr_verbs_iface_t *am, int peer)
{
    const gdr_verbs_am_hot_t *h = (const gdr_verbs_am_hot_t *) (const void *) am;
    return (unsigned) peer < (unsigned) h->n ? h->ready_qp[peer] : NULL;
}

static inline uint32_t gdr_verbs_am_max_inline(const gdr_verbs_iface_t *am)
{
    return ((const gdr_verbs_am_hot_t *) (const void *) am)->max_inline;
}

/* The queue pair to peer is wanted: 1 if it is ready (gdr_verbs_am_qp() gives it),
 * 0 if it is being connected (progress the channel and ask again), -1 if it cannot be
 * (unreachable, failed: see gdr_verbs_am_error()). */
int gdr_verbs_am_want_qp(gdr_verbs_iface_t *am, int peer);

gdr_verbs_device_t *gdr_verbs_am_device(gdr_verbs_iface_t *am);
int gdr_verbs_am_nranks(const gdr_verbs_iface_t *am);
uint32_t gdr_verbs_am_max_sge(const gdr_verbs_iface_t *am);
gdr_verbs_rcache_t *gdr_verbs_am_rcache(gdr_verbs_iface_t *am);

/* Fails the channel with a printf-style message, and the connection to peer with it
 * (peer -1: no particular peer); returns -1. */
int gdr_verbs_am_fail_peer(gdr_verbs_iface_t *am, int peer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* GDR_VERBS_AM_INTERNAL_H */
