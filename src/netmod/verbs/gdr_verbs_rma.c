#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* posix_memalign */
#endif
#include "gdr_verbs_rma.h"
#include "gdr_verbs_am_internal.h"
#include "gdr_verbs_rcache.h"
#include "gdr_verbs_small_copy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MAX (1u << 30)

/* On Soft-RoCE, a fetching atomic's result slot holds this until the NIC writes the
 * target's value there: rxe in Linux 6.1 completes an atomic without writing it when its
 * responder acks a retried write up to it (packet loss; maint/rxe.d/patches/0004 fixes
 * it in maint/rxe's guests, not in a host's own kernel), and the operation then fails,
 * naming the cause, instead of returning the slot's stale value.  (A target value equal to it fails too:
 * 1 in 2^64.) */
#define UNWRITTEN_RESULT 0x9e3779b97f4a7c15ULL

/* Small work requests held back so that the next ones to the same peer share their
 * doorbell: on Soft-RoCE an ibv_post_send is a system call (~20 us in a maint/rxe guest),
 * on a NIC an MMIO write.  Held: writes whose data went inline (copied here) or through a
 * bounce buffer, and atomics; at most cfg.hold of them, to one peer at a time.  They go
 * out with the next post that is not held, before a post to another peer, at the
 * channel's next progress, and before the channel posts anything of its own to that
 * peer (gdr_verbs_rma_post_held): whoever waits for one progresses first, and the queue
 * pair's order is kept. */
#define HOLD_DATA 256           /* inline bytes a held write may carry */
#define HOLD_SGE 1              /* pieces of a held work request */

typedef struct held_wr {
    struct ibv_send_wr wr;
    struct ibv_sge sge[HOLD_SGE];
    char data[HOLD_DATA];
} held_wr_t;

typedef struct bounce {
    char *addr;
    struct bounce *next_free;
} bounce_t;

/* One operation: one or more work requests, completed when the last one is. */
typedef struct rma_op {
    gdr_verbs_wr_head_t head;   /* kind WR_RMA, peer */
    uint32_t wrs_left;
    bounce_t *bounce;
    void *copy_to;              /* get or atomic result: copied out of the bounce buffer */
    size_t copy_len;
    gdr_verbs_rcache_entry_t *reg;
    gdr_verbs_rma_done_fn done;
    void *arg;
    int failed;                 /* a work request completed in error */
    int check_results;          /* atomics on rxe: look for UNWRITTEN_RESULT */
    struct rma_op *next_free;
} rma_op_t;

struct gdr_verbs_rma {
    gdr_verbs_iface_t *am;
    gdr_verbs_device_t *dev;
    gdr_verbs_rma_config_t cfg;
    uint32_t *in_flight;        /* per peer */
    int nranks;
    int soft_roce;              /* the device is rxe: check atomic results */
    char *bounce_mem;
    struct ibv_mr *bounce_mr;
    bounce_t *bounces, *free_bounces;
    rma_op_t *free_ops;
    held_wr_t *held;            /* cfg.hold slots */
    uint32_t nheld;
    int held_peer;              /* whose work requests are held (-1: none) */
    gdr_verbs_rma_stats_t stats;
    char error[200];
};

static int post_held_cb(void *ctx, int peer);

static int on_complete(void *ctx, const struct ibv_wc *wc)
{
    gdr_verbs_rma_t *rma = ctx;
    rma_op_t *op = (rma_op_t *) (uintptr_t) wc->wr_id;

    rma->in_flight[op->head.peer]--;
    if (wc->status != IBV_WC_SUCCESS)
        op->failed = 1;
    if (--op->wrs_left > 0)
        return 0;
    if (op->copy_to != NULL && !op->failed && op->check_results)
        for (size_t i = 0; i < op->copy_len; i += 8) {
            uint64_t v;
            memcpy(&v, op->bounce->addr + i, 8);
            if (v == UNWRITTEN_RESULT) {
                op->failed = 1;
                gdr_verbs_am_fail_peer(rma->am, op->head.peer, "%s completed an atomic to rank "
                                       "%d without writing its result (a Soft-RoCE bug under "
                                       "packet loss in Linux 6.1's rxe; gdr's fix for "
                                       "that kernel: maint/rxe.d/patches/0004)", rma->dev->name,
                                       op->head.peer);
                break;
            }
        }
    if (op->copy_to != NULL && !op->failed)
        memcpy(op->copy_to, op->bounce->addr, op->copy_len);
    if (op->bounce != NULL) {
        op->bounce->next_free = rma->free_bounces;
        rma->free_bounces = op->bounce;
    }
    if (op->reg != NULL)
        gdr_verbs_rcache_put(gdr_verbs_am_rcache(rma->am), op->reg);
    gdr_verbs_rma_done_fn done = op->done;
    void *arg = op->arg;
    int status = op->failed ? -1 : 0;
    op->next_free = rma->free_ops;
    rma->free_ops = op;
    if (done != NULL)
        done(arg, status);
    return 0;
}

gdr_verbs_rma_t *gdr_verbs_rma_create(gdr_verbs_iface_t *am, const gdr_verbs_rma_config_t *cfg,
                                      char *why, size_t why_len)
{
    gdr_verbs_rma_t *rma = calloc(1, sizeof(*rma));
    if (rma == NULL)
        goto oom;
    rma->am = am;
    rma->dev = gdr_verbs_am_device(am);
    rma->cfg = *cfg;
    rma->stats.hold_limit = cfg->hold;
    rma->nranks = gdr_verbs_am_nranks(am);
    rma->soft_roce = strncmp(rma->dev->name, "rxe", 3) == 0;
    rma->in_flight = calloc((size_t) rma->nranks, sizeof(uint32_t));
    rma->bounces = calloc(cfg->bounce_count ? cfg->bounce_count : 1, sizeof(bounce_t));
    rma->held_peer = -1;
    if (cfg->hold > 0 && (rma->held = calloc(cfg->hold, sizeof(held_wr_t))) == NULL)
        goto oom;
    if (rma->in_flight == NULL || rma->bounces == NULL)
        goto oom;
    size_t bytes = (size_t) cfg->bounce_count * cfg->bounce_size;
    if (bytes > 0) {
        if (posix_memalign((void **) &rma->bounce_mem, 4096, bytes) != 0)
            goto oom;
        rma->bounce_mr = ibv_reg_mr(rma->dev->pd, rma->bounce_mem, bytes, IBV_ACCESS_LOCAL_WRITE);
        if (rma->bounce_mr == NULL) {
            snprintf(why, why_len, "registering %zu bytes of RMA bounce buffers on %s failed: "
                     "%s (raise ulimit -l)", bytes, rma->dev->name, strerror(errno));
            gdr_verbs_rma_destroy(rma);
            return NULL;
        }
    }
    for (uint32_t i = 0; i < cfg->bounce_count; i++) {
        rma->bounces[i].addr = rma->bounce_mem + (size_t) i * cfg->bounce_size;
        rma->bounces[i].next_free = rma->free_bounces;
        rma->free_bounces = &rma->bounces[i];
    }
    gdr_verbs_am_attach_rma(am, on_complete, post_held_cb, &rma->nheld, rma);
    return rma;
  oom:
    snprintf(why, why_len, "out of memory creating the RMA engine");
    gdr_verbs_rma_destroy(rma);
    return NULL;
}

int gdr_verbs_rma_register(gdr_verbs_rma_t *rma, void *addr, size_t len, unsigned access,
                           gdr_verbs_rma_region_t *out, char *why, size_t why_len)
{
    int flags = 0;
    memset(out, 0, sizeof(*out));
    out->addr = (uintptr_t) addr;
    out->len = len;
    if (len == 0)
        return 0;
    if (access & GDR_VERBS_RMA_REMOTE_READ)
        flags |= IBV_ACCESS_REMOTE_READ;
    if (access & GDR_VERBS_RMA_REMOTE_WRITE)
        flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if (access & GDR_VERBS_RMA_REMOTE_ATOMIC)
        flags |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
    struct ibv_mr *mr = gdr_verbs_device_reg_mr(rma->dev, addr, len, addr, flags);
    if (mr == NULL) {
        snprintf(why, why_len, "registering a %zu-byte window at %p on %s failed: %s (raise "
                 "ulimit -l, or the memory is not host memory the NIC can reach)", len, addr,
                 rma->dev->name, strerror(errno));
        return -1;
    }
    out->mr = mr;
    out->rkey = mr->rkey;
    return 0;
}

void gdr_verbs_rma_deregister(gdr_verbs_rma_t *rma, gdr_verbs_rma_region_t *region)
{
    (void) rma;
    if (region->mr != NULL)
        ibv_dereg_mr(region->mr);
    memset(region, 0, sizeof(*region));
}

/* Read from the channel at each use: its queue pairs, which grant the limits, are made
 * after this layer (lazily, per peer), so a copy taken at creation would be 0. */
static uint32_t inline_limit(const gdr_verbs_rma_t *rma)
{
    return gdr_verbs_am_max_inline(rma->am);
}

static uint64_t chunk_size(const gdr_verbs_rma_t *rma)
{
    return rma->dev->max_msg_sz && rma->dev->max_msg_sz < CHUNK_MAX ? rma->dev->max_msg_sz
        : CHUNK_MAX;
}

/* The chunk of a contiguous transfer of len bytes: the configured one, but never less
 * than what goes inline or through a bounce buffer (one work request), and larger where
 * len would need more work requests than may be in flight to a peer. */
static uint64_t chunk_for(const gdr_verbs_rma_t *rma, size_t len)
{
    uint64_t most = chunk_size(rma), c = rma->cfg.chunk;
    if (c == 0 || c > most)
        return most;
    uint64_t least = (len + rma->cfg.depth - 1) / rma->cfg.depth;
    if (least < rma->cfg.bounce_size)
        least = rma->cfg.bounce_size;
    uint32_t inline_max = inline_limit(rma);
    if (least < inline_max)
        least = inline_max;
    if (c < least)
        c = least < most ? least : most;
    return c;
}

/* An operation of nwr work requests to peer, with room reserved; NULL if none. */
static rma_op_t *op_start(gdr_verbs_rma_t *rma, int peer, uint32_t nwr, int want_bounce,
                          gdr_verbs_rma_done_fn done, void *arg, int *rc)
{
    *rc = 0;
    int ready = gdr_verbs_am_want_qp(rma->am, peer);
    if (ready < 0) {            /* the channel says why */
        *rc = -1;
        return NULL;
    }
    if (ready == 0) {           /* the first operation to peer waits for the connection */
        rma->stats.busy++;
        *rc = GDR_VERBS_RMA_BUSY;
        return NULL;
    }
    if (nwr > rma->cfg.depth) {
        *rc = gdr_verbs_am_fail_peer(rma->am, -1, "a one-sided operation to rank %d needs %u "
                                     "work requests, more than the %u allowed in flight", peer,
                                     nwr, rma->cfg.depth);
        return NULL;
    }
    if (rma->in_flight[peer] + nwr > rma->cfg.depth || (want_bounce && rma->free_bounces == NULL)) {
        rma->stats.busy++;
        *rc = GDR_VERBS_RMA_BUSY;
        return NULL;
    }
    rma_op_t *op = rma->free_ops;
    if (op != NULL)
        rma->free_ops = op->next_free;
    else if ((op = malloc(sizeof(*op))) == NULL) {
        *rc = gdr_verbs_am_fail_peer(rma->am, -1, "out of memory starting a one-sided operation");
        return NULL;
    }
    memset(op, 0, sizeof(*op));
    op->head.kind = WR_RMA;
    op->head.peer = peer;
    op->wrs_left = nwr;
    op->done = done;
    op->arg = arg;
    if (want_bounce) {
        op->bounce = rma->free_bounces;
        rma->free_bounces = op->bounce->next_free;
    }
    return op;
}

static void op_abandon(gdr_verbs_rma_t *rma, rma_op_t *op)
{
    if (op->bounce != NULL) {
        op->bounce->next_free = rma->free_bounces;
        rma->free_bounces = op->bounce;
    }
    if (op->reg != NULL)
        gdr_verbs_rcache_put(gdr_verbs_am_rcache(rma->am), op->reg);
    op->next_free = rma->free_ops;
    rma->free_ops = op;
}

/* n of op's work requests will never be posted (the channel has failed): those in
 * flight still count the op down, but it is never reported done. */
static void op_drop_unposted(gdr_verbs_rma_t *rma, rma_op_t *op, uint32_t n)
{
    op->done = NULL;
    op->wrs_left -= n;
    if (op->wrs_left == 0)
        op_abandon(rma, op);
}

/* The work requests of a chain from wr on will never be posted: each one's operation
 * is counted down without being reported done (the channel has failed). */
static void drop_chain(gdr_verbs_rma_t *rma, int peer, struct ibv_send_wr *wr)
{
    for (; wr != NULL; wr = wr->next) {
        rma->in_flight[peer]--;
        op_drop_unposted(rma, (rma_op_t *) (uintptr_t) wr->wr_id, 1);
    }
}

/* Posts the held work requests with the chain tail (NULL: none) behind them, one
 * doorbell; tail's work requests are already counted in flight. */
/* One doorbell for the chain from head on peer's queue pair qp (NULL: there is none), whose
 * work requests are counted in flight; those a failure leaves unposted are dropped. */
static inline int ring(gdr_verbs_rma_t *rma, int peer, struct ibv_qp *qp,
                       struct ibv_send_wr *head)
{
    struct ibv_send_wr *bad = NULL;
    rma->stats.doorbells++;
    if (qp == NULL || ibv_post_send(qp, head, &bad) != 0) {
        int err = qp == NULL ? ENOTCONN : errno;
        drop_chain(rma, peer, bad != NULL ? bad : head);
        return gdr_verbs_am_fail_peer(rma->am, peer, "posting one-sided operations to rank %d "
                                      "failed: %s (queue pair in error?)", peer, strerror(err));
    }
    return 0;
}

static int post_chain(gdr_verbs_rma_t *rma, int peer, struct ibv_send_wr *tail)
{
    struct ibv_send_wr *head = tail;
    if (rma->nheld > 0) {
        for (uint32_t i = 0; i < rma->nheld; i++)
            rma->held[i].wr.next = i + 1 < rma->nheld ? &rma->held[i + 1].wr : tail;
        head = &rma->held[0].wr;
        rma->nheld = 0;
        rma->held_peer = -1;
    }
    if (head == NULL)
        return 0;
    return ring(rma, peer, gdr_verbs_am_qp(rma->am, peer), head);
}

int gdr_verbs_rma_post_held(gdr_verbs_rma_t *rma, int peer)
{
    if (rma->nheld == 0 || (peer >= 0 && peer != rma->held_peer))
        return 0;
    return post_chain(rma, rma->held_peer, NULL);
}

static int post_held_cb(void *ctx, int peer)
{
    return gdr_verbs_rma_post_held(ctx, peer);
}

/* Whether wr may wait in a held slot: one piece at most, and inline data that fits. */
static int fits_slot(const struct ibv_send_wr *wr)
{
    return wr->num_sge <= HOLD_SGE && (!(wr->send_flags & IBV_SEND_INLINE)
                                       || wr->num_sge == 0 || wr->sg_list[0].length <= HOLD_DATA);
}

/* Holds the chain wr (n work requests; an inline one's data is copied) if holdable (its
 * data stays valid until done: inline, a bounce buffer, an atomic's), every one fits a
 * slot and cfg.hold leaves room, else posts it behind the held ones.  Either way its work
 * requests count in flight from now on, and a failure leaves none of them to the caller. */
static int submit(gdr_verbs_rma_t *rma, int peer, struct ibv_send_wr *wr, uint32_t n,
                  int holdable)
{
    rma->in_flight[peer] += n;
    if (rma->nheld > 0 && rma->held_peer != peer && post_chain(rma, rma->held_peer, NULL) != 0) {
        drop_chain(rma, peer, wr);
        return -1;
    }
    for (const struct ibv_send_wr *w = wr; holdable && w != NULL; w = w->next)
        holdable = fits_slot(w);
    if (!holdable || rma->nheld + n > rma->cfg.hold)
        return post_chain(rma, peer, wr);
    for (; wr != NULL; wr = wr->next) {
        held_wr_t *h = &rma->held[rma->nheld++];
        h->wr = *wr;
        h->wr.sg_list = h->sge;
        if (wr->num_sge == 1) {
            h->sge[0] = wr->sg_list[0];
            if (wr->send_flags & IBV_SEND_INLINE) {
                memcpy(h->data, (const void *) (uintptr_t) wr->sg_list[0].addr,
                       wr->sg_list[0].length);
                h->sge[0].addr = (uintptr_t) h->data;
            }
        }
    }
    rma->held_peer = peer;
    rma->stats.held += n;
    return 0;
}

/* The send flag of a work request that must act after the queue pair's earlier reads
 * and atomics (gdr_verbs_rma.h: none on Soft-RoCE, whose responder keeps that order). */
static unsigned fence_flag(gdr_verbs_rma_t *rma, int fence)
{
    if (!fence)
        return 0;
    rma->stats.fenced++;
    return rma->soft_roce ? 0 : IBV_SEND_FENCE;
}

/* Posts a contiguous transfer in chunks; the op's WR count was reserved.  fence: the
 * first chunk's (gdr_verbs_rma.h). */
static int post_chunks(gdr_verbs_rma_t *rma, rma_op_t *op, enum ibv_wr_opcode opcode,
                       uint64_t laddr, uint32_t lkey, size_t len, uint64_t raddr, uint32_t rkey,
                       int send_inline, int holdable, int fence)
{
    uint64_t chunk = chunk_for(rma, len), done = 0;
    while (done < len) {
        uint64_t n = len - done < chunk ? len - done : chunk;
        struct ibv_sge sge = {.addr = laddr + done,.length = (uint32_t) n,.lkey = lkey };
        struct ibv_send_wr wr;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id = (uintptr_t) op;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = opcode;
        wr.send_flags = IBV_SEND_SIGNALED | (send_inline ? IBV_SEND_INLINE : 0)
            | fence_flag(rma, fence && done == 0);
        wr.wr.rdma.remote_addr = raddr + done;
        wr.wr.rdma.rkey = rkey;
        if (submit(rma, op->head.peer, &wr, 1, holdable) != 0) {
            uint32_t later = (uint32_t) ((len - done - n + chunk - 1) / chunk);
            if (later > 0)
                op_drop_unposted(rma, op, later);
            return -1;
        }
        rma->stats.chunks++;
        done += n;
    }
    return 0;
}

static uint32_t chunks_of(const gdr_verbs_rma_t *rma, size_t len)
{
    uint64_t c = chunk_for(rma, len);
    return (uint32_t) ((len + c - 1) / c);
}

/* A user buffer through the registration cache; on failure the op is abandoned and
 * rma->error says why (the caller returns GDR_VERBS_RMA_NOREG). */
static int register_user(gdr_verbs_rma_t *rma, rma_op_t *op, const void *addr, size_t len,
                         const char *what)
{
    op->reg = gdr_verbs_rcache_get(gdr_verbs_am_rcache(rma->am), addr, len);
    if (op->reg == NULL) {
        snprintf(rma->error, sizeof(rma->error), "registering a %zu-byte %s at %p failed: %s",
                 len, what, addr, strerror(errno));
        op_abandon(rma, op);
        return -1;
    }
    rma->stats.registered++;
    return 0;
}

/* Whether len fits how's limit (else rma->error says so).  An inline write over the
 * inline limit is bounced instead: the limit is the smallest of the connected peers'
 * queue pairs and may have dropped since the caller read it. */
static int how_fits(gdr_verbs_rma_t *rma, gdr_verbs_rma_how_t *how, size_t len)
{
    if (*how == GDR_VERBS_RMA_INLINE && len > inline_limit(rma))
        *how = GDR_VERBS_RMA_BOUNCE;
    if (*how != GDR_VERBS_RMA_BOUNCE || len <= rma->cfg.bounce_size)
        return 1;
    snprintf(rma->error, sizeof(rma->error), "a %zu-byte bounced transfer is over the bounce "
             "buffers' %u bytes", len, (unsigned) rma->cfg.bounce_size);
    return 0;
}

int gdr_verbs_rma_put(gdr_verbs_rma_t *rma, int peer, gdr_verbs_rma_how_t how, const void *src,
                      size_t len, uint64_t raddr, uint32_t rkey, int fence,
                      gdr_verbs_rma_done_fn done, void *arg)
{
    int rc;
    if (!how_fits(rma, &how, len))
        return GDR_VERBS_RMA_NOREG;
    int by_inline = how == GDR_VERBS_RMA_INLINE, by_bounce = how == GDR_VERBS_RMA_BOUNCE;
    rma_op_t *op = op_start(rma, peer, by_inline || by_bounce ? 1 : chunks_of(rma, len),
                            by_bounce, done, arg, &rc);
    if (op == NULL)
        return rc;
    uint64_t laddr = (uintptr_t) src;
    uint32_t lkey = 0;
    if (by_bounce) {
        memcpy(op->bounce->addr, src, len);
        laddr = (uintptr_t) op->bounce->addr;
        lkey = rma->bounce_mr->lkey;
        rma->stats.bounced++;
    } else if (!by_inline) {
        if (register_user(rma, op, src, len, "put source") != 0)
            return GDR_VERBS_RMA_NOREG;
        lkey = op->reg->lkey;
    } else {
        rma->stats.inline_puts++;
    }
    rma->stats.writes++;
    rma->stats.bytes_written += len;
    return post_chunks(rma, op, IBV_WR_RDMA_WRITE, laddr, lkey, len, raddr, rkey, by_inline,
                       by_inline || by_bounce, fence);
}

/* One work request of a small transfer (rc/short or rc/bcopy): built once, submitted. */
static int post_one(gdr_verbs_rma_t *rma, rma_op_t *op, enum ibv_wr_opcode opcode,
                    uint64_t laddr, uint32_t lkey, uint32_t len, uint64_t raddr, uint32_t rkey,
                    unsigned flags)
{
    struct ibv_sge sge = {.addr = laddr,.length = len,.lkey = lkey };
    struct ibv_send_wr wr = {.wr_id = (uintptr_t) op,.sg_list = &sge,.num_sge = 1,
        .opcode = opcode,.send_flags = IBV_SEND_SIGNALED | flags,
        .wr.rdma = {.remote_addr = raddr,.rkey = rkey }
    };
    rma->stats.chunks++;
    return submit(rma, op->head.peer, &wr, 1, 1);
}

/* The hot paths' operation (rc/short, rc/bcopy): one work request, from the free list
 * (the caller checked there is one). */
static inline rma_op_t *op_take(gdr_verbs_rma_t *rma, int peer, bounce_t *bounce,
                                gdr_verbs_rma_done_fn done, void *arg)
{
    rma_op_t *op = rma->free_ops;
    rma->free_ops = op->next_free;
    op->head.kind = WR_RMA;
    op->head.peer = peer;
    op->wrs_left = 1;
    op->bounce = bounce;
    op->copy_to = NULL;
    op->reg = NULL;
    op->done = done;
    op->arg = arg;
    op->failed = op->check_results = 0;
    rma->stats.chunks++;
    return op;
}

/* Whether a hot path's work request to peer waits in a held slot for the next doorbell
 * (MPIR_CVAR_CH4_GDR_DOORBELL_BATCH): room, and nothing held for another peer. */
static inline int hold_room(const gdr_verbs_rma_t *rma, int peer)
{
    return rma->nheld < rma->cfg.hold && (rma->nheld == 0 || rma->held_peer == peer);
}

/* A hot path's work request in the next held slot (its sge set by the caller). */
static inline held_wr_t *hold_one(gdr_verbs_rma_t *rma, int peer, rma_op_t *op,
                                  enum ibv_wr_opcode opcode, unsigned flags, uint64_t raddr,
                                  uint32_t rkey)
{
    held_wr_t *h = &rma->held[rma->nheld++];
    /* (field by field, as in ring_one; next is set when the chain is posted) */
    h->wr.wr_id = (uintptr_t) op;
    h->wr.sg_list = h->sge;
    h->wr.num_sge = 1;
    h->wr.opcode = opcode;
    h->wr.send_flags = IBV_SEND_SIGNALED | flags;
    h->wr.imm_data = 0;
    h->wr.wr.rdma.remote_addr = raddr;
    h->wr.wr.rdma.rkey = rkey;
    rma->held_peer = peer;
    rma->in_flight[peer]++;
    rma->stats.held++;
    return h;
}

/* A hot path's work request posted now, nothing held (one doorbell: one MMIO write on a
 * NIC); the fields a transfer reads, set one by one (an initializer zeroes 128 bytes). */
static inline int ring_one(gdr_verbs_rma_t *rma, int peer, struct ibv_qp *qp, rma_op_t *op,
                           enum ibv_wr_opcode opcode, unsigned flags, uint64_t laddr,
                           uint32_t lkey, uint32_t len, uint64_t raddr, uint32_t rkey)
{
    struct ibv_sge sge;
    struct ibv_send_wr wr;
    sge.addr = laddr;
    sge.length = len;
    sge.lkey = lkey;
    wr.next = NULL;
    wr.wr_id = (uintptr_t) op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = IBV_SEND_SIGNALED | flags;
    wr.imm_data = 0;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    rma->in_flight[peer]++;
    return ring(rma, peer, qp, &wr);
}

int gdr_verbs_rma_put_short(gdr_verbs_rma_t *rma, int peer, const void *src, size_t len,
                            uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg)
{
    /* the hot path of an 8-byte MPI_Put (bench/opcost): anything unusual is the general
     * path's, which waits for the connection or room, or says what failed */
    struct ibv_qp *qp;
    if (rma->free_ops == NULL || len > inline_limit(rma)
        || (qp = gdr_verbs_am_qp(rma->am, peer)) == NULL
        || rma->in_flight[peer] >= rma->cfg.depth)
        return GDR_VERBS_RMA_NOREG;
    rma_op_t *op = op_take(rma, peer, NULL, done, arg);
    rma->stats.inline_puts++;
    rma->stats.writes++;
    rma->stats.bytes_written += len;
    if (len <= HOLD_DATA && hold_room(rma, peer)) {
        /* built where it waits for the doorbell (submit's hold, without the copy) */
        held_wr_t *h = hold_one(rma, peer, op, IBV_WR_RDMA_WRITE, IBV_SEND_INLINE, raddr, rkey);
        gdr_verbs_small_copy(h->data, src, len);
        h->sge[0].addr = (uintptr_t) h->data;
        h->sge[0].length = (uint32_t) len;
        h->sge[0].lkey = 0;
        return 0;
    }
    if (rma->nheld > 0) {
        rma->stats.chunks--;    /* (post_one counts it) */
        return post_one(rma, op, IBV_WR_RDMA_WRITE, (uintptr_t) src, 0, (uint32_t) len, raddr,
                        rkey, IBV_SEND_INLINE);
    }
    /* (inline: the lkey is not checked) */
    return ring_one(rma, peer, qp, op, IBV_WR_RDMA_WRITE, IBV_SEND_INLINE, (uintptr_t) src, 0,
                    (uint32_t) len, raddr, rkey);
}

/* rc/bcopy's operation op (its bounce buffer taken): a write's src copied into the bounce
 * buffer, a read's dst kept for on_complete's copy out, counted; the opcode. */
static inline enum ibv_wr_opcode bcopy_fill(gdr_verbs_rma_t *rma, rma_op_t *op,
                                            const void *src, void *dst, size_t len)
{
    rma->stats.bounced++;
    if (dst != NULL) {
        op->copy_to = dst;
        op->copy_len = len;
        rma->stats.reads++;
        rma->stats.bytes_read += len;
        return IBV_WR_RDMA_READ;
    }
    gdr_verbs_small_copy(op->bounce->addr, src, len);
    rma->stats.writes++;
    rma->stats.bytes_written += len;
    return IBV_WR_RDMA_WRITE;
}

/* rc/bcopy's one work request through a bounce buffer: a write copies src into it first,
 * a read (dst) copies out of it at completion (on_complete).  The general way: waits for
 * the connection or room, or says what failed. */
static __attribute__((noinline))
int post_bcopy_general(gdr_verbs_rma_t *rma, int peer, const void *src, void *dst, size_t len,
                       uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg)
{
    int rc;
    rma_op_t *op = op_start(rma, peer, 1, 1, done, arg, &rc);
    if (op == NULL)
        return rc;
    return post_one(rma, op, bcopy_fill(rma, op, src, dst, len), (uintptr_t) op->bounce->addr,
                    rma->bounce_mr->lkey, (uint32_t) len, raddr, rkey, 0);
}

/* The same, the hot path of an 8-byte MPI_Get (bench/opcost): a free operation and bounce
 * buffer, a connected queue pair with room, built where it goes (held slot or stack). */
static int post_bcopy(gdr_verbs_rma_t *rma, int peer, const void *src, void *dst, size_t len,
                      uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg)
{
    if (len > rma->cfg.bounce_size)
        return GDR_VERBS_RMA_NOREG;
    bounce_t *b = rma->free_bounces;
    struct ibv_qp *qp;
    if (b == NULL || rma->free_ops == NULL || (qp = gdr_verbs_am_qp(rma->am, peer)) == NULL
        || rma->in_flight[peer] >= rma->cfg.depth)
        return post_bcopy_general(rma, peer, src, dst, len, raddr, rkey, done, arg);
    rma->free_bounces = b->next_free;
    rma_op_t *op = op_take(rma, peer, b, done, arg);
    enum ibv_wr_opcode opcode = bcopy_fill(rma, op, src, dst, len);
    uint32_t lkey = rma->bounce_mr->lkey;
    if (hold_room(rma, peer)) {
        held_wr_t *h = hold_one(rma, peer, op, opcode, 0, raddr, rkey);
        h->sge[0].addr = (uintptr_t) b->addr;
        h->sge[0].length = (uint32_t) len;
        h->sge[0].lkey = lkey;
        return 0;
    }
    if (rma->nheld > 0) {
        rma->stats.chunks--;    /* (post_one counts it) */
        return post_one(rma, op, opcode, (uintptr_t) b->addr, lkey, (uint32_t) len, raddr, rkey,
                        0);
    }
    return ring_one(rma, peer, qp, op, opcode, 0, (uintptr_t) b->addr, lkey, (uint32_t) len,
                    raddr, rkey);
}

int gdr_verbs_rma_put_bcopy(gdr_verbs_rma_t *rma, int peer, const void *src, size_t len,
                            uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg)
{
    return post_bcopy(rma, peer, src, NULL, len, raddr, rkey, done, arg);
}

int gdr_verbs_rma_get_bcopy(gdr_verbs_rma_t *rma, int peer, void *dst, size_t len,
                            uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg)
{
    return post_bcopy(rma, peer, NULL, dst, len, raddr, rkey, done, arg);
}

uint32_t gdr_verbs_rma_short_max(const gdr_verbs_rma_t *rma)
{
    return inline_limit(rma);
}

uint32_t gdr_verbs_rma_bcopy_max(const gdr_verbs_rma_t *rma)
{
    return rma->cfg.bounce_size;
}

int gdr_verbs_rma_get(gdr_verbs_rma_t *rma, int peer, gdr_verbs_rma_how_t how, void *dst,
                      size_t len, uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done,
                      void *arg)
{
    int rc;
    if (how == GDR_VERBS_RMA_INLINE)
        how = GDR_VERBS_RMA_BOUNCE;     /* (a read's data cannot travel inline) */
    if (!how_fits(rma, &how, len))
        return GDR_VERBS_RMA_NOREG;
    int by_bounce = how == GDR_VERBS_RMA_BOUNCE;
    rma_op_t *op = op_start(rma, peer, by_bounce ? 1 : chunks_of(rma, len), by_bounce, done,
                            arg, &rc);
    if (op == NULL)
        return rc;
    uint64_t laddr;
    uint32_t lkey;
    if (by_bounce) {
        op->copy_to = dst;
        op->copy_len = len;
        laddr = (uintptr_t) op->bounce->addr;
        lkey = rma->bounce_mr->lkey;
        rma->stats.bounced++;
    } else {
        if (register_user(rma, op, dst, len, "get destination") != 0)
            return GDR_VERBS_RMA_NOREG;
        laddr = (uintptr_t) dst;
        lkey = op->reg->lkey;
    }
    rma->stats.reads++;
    rma->stats.bytes_read += len;
    /* a bounced read may wait for a later doorbell too: lock+Get+unlock rings twice */
    return post_chunks(rma, op, IBV_WR_RDMA_READ, laddr, lkey, len, raddr, rkey, 0, by_bounce,
                       0);
}

int gdr_verbs_rma_pin(gdr_verbs_rma_t *rma, const void *addr, size_t len, uint64_t device_id,
                      gdr_verbs_rma_pin_t **pin)
{
    *pin = NULL;
    if (len <= rma->cfg.bounce_size && device_id == 0)
        return 0;               /* every piece is inlined or bounced */
    *pin = gdr_verbs_rcache_get_tagged(gdr_verbs_am_rcache(rma->am), addr, len, device_id);
    if (*pin == NULL) {
        snprintf(rma->error, sizeof(rma->error), "registering a %zu-byte buffer at %p "
                 "failed: %s", len, addr, strerror(errno));
        return GDR_VERBS_RMA_NOREG;
    }
    return 0;
}

void gdr_verbs_rma_unpin(gdr_verbs_rma_t *rma, gdr_verbs_rma_pin_t *pin)
{
    if (pin != NULL)
        gdr_verbs_rcache_put(gdr_verbs_am_rcache(rma->am), pin);
}

#define SGE_MAX 16

int gdr_verbs_rma_sge_fits(const gdr_verbs_rma_t *rma, size_t n, size_t total)
{
    return n >= 1 && n <= gdr_verbs_am_max_sge(rma->am) && n <= SGE_MAX && total > 0
        && total <= chunk_size(rma);
}

static int post_sge_list(gdr_verbs_rma_t *rma, int peer, enum ibv_wr_opcode opcode,
                         const struct iovec *iov, size_t n, const gdr_verbs_rma_pin_t *pin,
                         uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg)
{
    struct ibv_sge sge[SGE_MAX];
    size_t total = 0;
    for (size_t i = 0; i < n && i < SGE_MAX; i++)
        total += iov[i].iov_len;
    if (pin == NULL || !gdr_verbs_rma_sge_fits(rma, n, total)) {
        return gdr_verbs_am_fail_peer(rma->am, -1, "a gather/scatter list of %zu pieces "
                                      "(%zu bytes) to rank %d does not fit one work request "
                                      "or is not pinned (the caller must pack it)", n, total,
                                      peer);
    }
    int rc;
    rma_op_t *op = op_start(rma, peer, 1, 0, done, arg, &rc);
    if (op == NULL)
        return rc;
    for (size_t i = 0; i < n; i++) {
        sge[i].addr = (uintptr_t) iov[i].iov_base;
        sge[i].length = (uint32_t) iov[i].iov_len;
        sge[i].lkey = pin->lkey;
    }
    struct ibv_send_wr wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t) op;
    wr.sg_list = sge;
    wr.num_sge = (int) n;
    wr.opcode = opcode;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    if (opcode == IBV_WR_RDMA_WRITE) {
        rma->stats.writes++;
        rma->stats.bytes_written += total;
    } else {
        rma->stats.reads++;
        rma->stats.bytes_read += total;
    }
    rma->stats.gathered++;
    return submit(rma, peer, &wr, 1, 0);
}

int gdr_verbs_rma_writev(gdr_verbs_rma_t *rma, int peer, const struct iovec *src, size_t n,
                         const gdr_verbs_rma_pin_t *pin, uint64_t raddr, uint32_t rkey,
                         gdr_verbs_rma_done_fn done, void *arg)
{
    return post_sge_list(rma, peer, IBV_WR_RDMA_WRITE, src, n, pin, raddr, rkey, done, arg);
}

int gdr_verbs_rma_readv(gdr_verbs_rma_t *rma, int peer, const struct iovec *dst, size_t n,
                        const gdr_verbs_rma_pin_t *pin, uint64_t raddr, uint32_t rkey,
                        gdr_verbs_rma_done_fn done, void *arg)
{
    return post_sge_list(rma, peer, IBV_WR_RDMA_READ, dst, n, pin, raddr, rkey, done, arg);
}

size_t gdr_verbs_rma_atomicv_max(const gdr_verbs_rma_t *rma)
{
    /* one bounce buffer holds the results; half the depth, so that one batch is posted
     * while the one before it is in flight */
    size_t n = rma->cfg.bounce_size / 8, half = rma->cfg.depth / 2;
    if (n > half)
        n = half;
    if (n > GDR_VERBS_RMA_ATOMICV_MAX)
        n = GDR_VERBS_RMA_ATOMICV_MAX;
    return n > 0 ? n : 1;
}

/* n atomics as one chain of work requests: one doorbell (on rxe, one system call)
 * instead of n. */
static int post_atomics(gdr_verbs_rma_t *rma, int peer, gdr_verbs_rma_atomic_op_t aop,
                        const void *operands, uint64_t compare, void *results,
                        const uint64_t *raddrs, size_t n, uint32_t rkey, int fence,
                        gdr_verbs_rma_done_fn done, void *arg)
{
    struct ibv_sge sge[GDR_VERBS_RMA_ATOMICV_MAX];
    struct ibv_send_wr wr[GDR_VERBS_RMA_ATOMICV_MAX];
    int rc;
    if (n == 0 || n > gdr_verbs_rma_atomicv_max(rma)) {
        return gdr_verbs_am_fail_peer(rma->am, -1, "%zu atomics to rank %d in one post; 1 to "
                                      "%zu fit (the caller must split them)", n, peer,
                                      gdr_verbs_rma_atomicv_max(rma));
    }
    for (size_t i = 0; i < n; i++) {
        if (raddrs[i] % 8 != 0) {
            return gdr_verbs_am_fail_peer(rma->am, -1, "an 8-byte atomic to rank %d at %#llx "
                                          "is not 8-byte aligned (the caller must send it as "
                                          "a message)", peer, (unsigned long long) raddrs[i]);
        }
    }
    rma_op_t *op = op_start(rma, peer, (uint32_t) n, 1, done, arg, &rc);
    if (op == NULL)
        return rc;
    op->copy_to = results;
    op->copy_len = results != NULL ? 8 * n : 0;
    op->check_results = rma->soft_roce;
    memset(wr, 0, n * sizeof(wr[0]));
    for (size_t i = 0; i < n; i++) {
        uint64_t operand;
        memcpy(&operand, (const char *) operands + 8 * i, 8);
        sge[i].addr = (uintptr_t) op->bounce->addr + 8 * i;
        if (op->check_results)
            memcpy(op->bounce->addr + 8 * i, &(uint64_t) { UNWRITTEN_RESULT }, 8);
        sge[i].length = 8;
        sge[i].lkey = rma->bounce_mr->lkey;
        wr[i].wr_id = (uintptr_t) op;
        wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
        wr[i].sg_list = &sge[i];
        wr[i].num_sge = 1;
        wr[i].opcode = aop == GDR_VERBS_RMA_FETCH_ADD ? IBV_WR_ATOMIC_FETCH_AND_ADD
            : IBV_WR_ATOMIC_CMP_AND_SWP;
        wr[i].send_flags = IBV_SEND_SIGNALED | fence_flag(rma, fence && i == 0);
        wr[i].wr.atomic.remote_addr = raddrs[i];
        wr[i].wr.atomic.rkey = rkey;
        wr[i].wr.atomic.compare_add = aop == GDR_VERBS_RMA_FETCH_ADD ? operand : compare;
        wr[i].wr.atomic.swap = operand;
    }
    rma->stats.atomics += n;
    rma->stats.atomic_posts++;
    /* (the results land in the bounce buffer, which stays: atomics may be held) */
    return submit(rma, peer, wr, (uint32_t) n, 1);
}

int gdr_verbs_rma_atomic(gdr_verbs_rma_t *rma, int peer, gdr_verbs_rma_atomic_op_t aop,
                         uint64_t operand, uint64_t compare, void *result, uint64_t raddr,
                         uint32_t rkey, int fence, gdr_verbs_rma_done_fn done, void *arg)
{
    return post_atomics(rma, peer, aop, &operand, compare, result, &raddr, 1, rkey, fence, done,
                        arg);
}

int gdr_verbs_rma_atomicv(gdr_verbs_rma_t *rma, int peer, gdr_verbs_rma_atomic_op_t aop,
                          const void *operands, uint64_t compare, void *results,
                          const uint64_t *raddrs, size_t n, uint32_t rkey, int fence,
                          gdr_verbs_rma_done_fn done, void *arg)
{
    return post_atomics(rma, peer, aop, operands, compare, results, raddrs, n, rkey, fence,
                        done, arg);
}

const char *gdr_verbs_rma_error(const gdr_verbs_rma_t *rma)
{
    return rma->error;
}

uint32_t gdr_verbs_rma_in_flight(const gdr_verbs_rma_t *rma, int peer)
{
    return rma->in_flight[peer];
}

const gdr_verbs_rma_stats_t *gdr_verbs_rma_stats(const gdr_verbs_rma_t *rma)
{
    return &rma->stats;
}

void gdr_verbs_rma_destroy(gdr_verbs_rma_t *rma)
{
    if (rma == NULL)
        return;
    if (rma->am != NULL)
        gdr_verbs_am_attach_rma(rma->am, NULL, NULL, NULL, NULL);
    while (rma->free_ops != NULL) {
        rma_op_t *op = rma->free_ops;
        rma->free_ops = op->next_free;
        free(op);
    }
    if (rma->bounce_mr != NULL)
        ibv_dereg_mr(rma->bounce_mr);
    free(rma->bounce_mem);
    free(rma->bounces);
    free(rma->in_flight);
    free(rma->held);
    free(rma);
}
