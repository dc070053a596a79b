#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* posix_memalign, MAP_ANONYMOUS */
#endif
#include "gdr_verbs_am.h"
#include "gdr_verbs_card.h"
#include "gdr_verbs_credit.h"
#include "gdr_verbs_memhooks.h"
#include "gdr_verbs_rcache.h"
#include "gdr_verbs_qp.h"
#include "gdr_verbs_wire.h"
#include "gdr_verbs_am_internal.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#define POLL_BATCH 32
#define READ_CHUNK_MAX (1u << 30)
#define READ_CHUNKS_MAX 4      /* read work requests in flight per payload */
#define RNDV_MAX ((uint64_t) 1 << 40)   /* sanity bound on an announced payload */

/* Every work request's wr_id points at a context whose first member is its kind
 * (gdr_verbs_wr_kind_t, shared with gdr_verbs_rma.c). */
typedef gdr_verbs_wr_kind_t wr_kind_t;

/* A zero-length RDMA WRITE (no receive buffer, no key check at the target) sent to
 * a peer we are waiting on: it completes if the peer is alive, fails if not. */
typedef struct probe {
    wr_kind_t kind;
    int peer;
    int in_flight;
    struct timespec last;
} probe_t;

#define PROBE_INTERVAL_NS 1000000000LL
/* A rank that hears nothing for this long while it waits probes every connected peer:
 * a peer whose host or link died takes its queue pair with it silently, and a rank
 * with nothing to send would otherwise wait for it forever (the launcher may never
 * hear either, if the peer's node went down). */
#define IDLE_PROBE_NS 5000000000LL
/* empty polls between two looks at the clock while busy polling */
#define IDLE_CLOCK_EVERY 1024

typedef struct recv_buf {
    wr_kind_t kind;
    int peer;
    char *addr;
} recv_buf_t;

typedef struct send_slot {
    wr_kind_t kind;
    int peer;
    char *addr;
    struct send_slot *next_free;
} send_slot_t;

/* A message that waits for a credit or a bounce buffer, fully built. */
typedef struct pending_msg {
    struct pending_msg *next;
    size_t len;
    unsigned char bytes[];
} pending_msg_t;

/* A registered landing buffer for rendezvous reads, kept for reuse: mapped, not
 * malloc'ed, so transient payload buffers never fragment the heap. */
typedef struct landing {
    struct landing *next;
    char *addr;
    size_t cap;
    struct ibv_mr *mr;
} landing_t;

#define LANDING_POOL_BYTES ((size_t) 64 << 20)

/* A payload this rank reads from a peer (receiver side of rendezvous). */
typedef struct rndv_read {
    wr_kind_t kind;
    int done;                   /* payload landed; delivered in order by drain_inbound */
    landing_t *land;            /* where it lands; NULL until the read is posted */
    struct rndv_read *next;
    int peer;
    uint32_t handler_id;
    void *am_hdr;
    size_t am_hdr_sz;
    gdr_verbs_wire_rts_t rts;
    uint64_t size;
    uint64_t posted;            /* bytes whose reads are posted: large payloads go in batches */
} rndv_read_t;

/* Messages from one peer are handed up in the order they were sent (MPI's
 * accumulate ordering depends on it): while a rendezvous payload is still being
 * read, later messages from that peer wait here, eager ones copied. */
typedef struct inbound {
    struct inbound *next;
    rndv_read_t *rr;            /* a rendezvous message, or NULL: an eager one below */
    uint32_t handler_id;
    size_t am_hdr_sz;
    size_t data_sz;
    char *am_hdr;               /* eager: am_hdr then data, one allocation */
} inbound_t;

/* A payload a peer reads from this rank (sender side), found again by its cookie. */
typedef struct rndv_send {
    gdr_verbs_rcache_entry_t *reg;
    uint64_t user_cookie;
    uint32_t gen;
    int peer;
    int in_use;
} rndv_send_t;

typedef struct ep {
    struct ibv_qp *qp;
    gdr_verbs_credit_t credit;
    pending_msg_t *q_head, *q_tail;
    rndv_read_t *r_head, *r_tail;
    inbound_t *in_head, *in_tail;       /* in-order delivery queue */
    uint32_t reads_in_flight;
    probe_t probe;
    int connected;              /* ready to send: probes may go */
    int failed;
} ep_t;

struct gdr_verbs_am {
    gdr_verbs_device_t *dev;
    int rank, nranks;
    gdr_verbs_am_config_t cfg;
    gdr_verbs_am_ops_t ops;
    void *ctx;
    struct ibv_cq *cq;
    struct ibv_comp_channel *events;    /* wakes gdr_verbs_am_wait(); NULL: cannot sleep */
    int armed;                  /* the CQ will raise an event at its next completion */
    ep_t *eps;
    char *recv_mem;
    struct ibv_mr *recv_mr;
    recv_buf_t *recv_bufs;
    char *send_mem;
    struct ibv_mr *send_mr;
    send_slot_t *slots;
    send_slot_t *free_slots;
    rndv_send_t *rsend;
    uint32_t rsend_cap;
    gdr_verbs_rcache_t *rcache; /* registrations of rendezvous send buffers */
    landing_t *landings;        /* idle landing buffers */
    size_t landing_bytes;
    uint32_t max_inline;
    uint32_t max_sge;           /* send gather entries every QP has */
    uint64_t queued;            /* messages in all ep queues */
    uint64_t reads_active;      /* rendezvous reads in flight or waiting, all peers */
    uint64_t rsend_active;
    gdr_verbs_am_stats_t stats;
    gdr_verbs_am_rma_cb_t rma_cb;       /* completions of one-sided work requests */
    void *rma_ctx;
    /* idle probing: when the channel last heard something (or last probed), whether it
     * heard anything since the clock was last read, empty polls since then */
    struct timespec quiet_since;
    int heard;
    uint32_t quiet_polls;
    int failed;
    char error[320];
};

/* Rendezvous sources stay registered after use (until freed or evicted). */
#define RCACHE_UNUSED_MAX ((size_t) 256 << 20)

static void *reg_for_read(void *ctx, void *addr, size_t len, uint32_t *lkey, uint32_t *rkey)
{
    gdr_verbs_device_t *dev = ctx;
    /* local write too: one-sided gets land in user buffers registered here */
    struct ibv_mr *mr = ibv_reg_mr(dev->pd, addr, len,
                                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    if (mr == NULL)
        return NULL;
    *lkey = mr->lkey;
    *rkey = mr->rkey;
    return mr;
}

static void dereg_mr(void *ctx, void *handle)
{
    (void) ctx;
    ibv_dereg_mr(handle);
}

static int vfail(gdr_verbs_am_t *am, const char *fmt, va_list ap)
{
    vsnprintf(am->error, sizeof(am->error), fmt, ap);
    am->failed = 1;
    return -1;
}

static int fail(gdr_verbs_am_t *am, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(am, fmt, ap);
    va_end(ap);
    return -1;
}

static int post_recv(gdr_verbs_am_t *am, recv_buf_t *rb)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t) rb->addr,.length = (uint32_t) am->cfg.buf_size,.lkey = am->recv_mr->lkey
    };
    struct ibv_recv_wr wr = {.wr_id = (uintptr_t) rb,.sg_list = &sge,.num_sge = 1 }, *bad;
    if (ibv_post_recv(am->eps[rb->peer].qp, &wr, &bad) != 0)
        return fail(am, "posting a receive buffer for rank %d failed: %s", rb->peer,
                    strerror(errno));
    return 0;
}

/* Messages posted with one doorbell when a backlog drains (on rxe, one system call). */
#define SEND_CHAIN_MAX 16

/* Readies a built message in a bounce buffer as wr/sge (not posted): takes its credit
 * now, so that the next message's credit check sees it.  The caller checked credit and
 * slot. */
static void build_send_wr(gdr_verbs_am_t *am, int peer, send_slot_t *slot, size_t len,
                          struct ibv_send_wr *wr, struct ibv_sge *sge)
{
    ep_t *ep = &am->eps[peer];
    uint16_t credits = gdr_verbs_credit_on_send(&ep->credit);
    memcpy(slot->addr + offsetof(gdr_verbs_wire_hdr_t, credits), &credits, sizeof(credits));
    slot->peer = peer;
    sge->addr = (uintptr_t) slot->addr;
    sge->length = (uint32_t) len;
    sge->lkey = am->send_mr->lkey;
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = (uintptr_t) slot;
    wr->sg_list = sge;
    wr->num_sge = 1;
    wr->opcode = IBV_WR_SEND;
    wr->send_flags = IBV_SEND_SIGNALED | (len <= am->max_inline ? IBV_SEND_INLINE : 0);
}

/* Posts n readied messages to peer as one chain. */
static int post_send_chain(gdr_verbs_am_t *am, int peer, struct ibv_send_wr *wr, int n)
{
    struct ibv_send_wr *bad = NULL;
    for (int k = 0; k + 1 < n; k++)
        wr[k].next = &wr[k + 1];
    if (ibv_post_send(am->eps[peer].qp, wr, &bad) != 0) {
        /* the slots from bad on were not posted: give them back */
        int first = bad != NULL && bad >= wr && bad < wr + n ? (int) (bad - wr) : 0;
        for (int k = first; k < n; k++) {
            send_slot_t *slot = (send_slot_t *) (uintptr_t) wr[k].wr_id;
            slot->next_free = am->free_slots;
            am->free_slots = slot;
        }
        am->eps[peer].failed = 1;
        return fail(am, "sending to rank %d failed: %s (queue pair in error?)", peer,
                    strerror(errno));
    }
    return 0;
}

/* Posts one built message from a bounce buffer; the caller checked credit and slot. */
static int post_built(gdr_verbs_am_t *am, int peer, send_slot_t *slot, size_t len)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    build_send_wr(am, peer, slot, len, &wr, &sge);
    return post_send_chain(am, peer, &wr, 1);
}

static send_slot_t *take_slot(gdr_verbs_am_t *am)
{
    send_slot_t *s = am->free_slots;
    if (s != NULL)
        am->free_slots = s->next_free;
    return s;
}

/* Where to build a data message of len bytes for peer: a bounce buffer when it can
 * go now (order kept: never ahead of queued ones), else a new queue entry. */
static void *reserve(gdr_verbs_am_t *am, int peer, size_t len, send_slot_t **slot,
                     pending_msg_t **pm)
{
    ep_t *ep = &am->eps[peer];
    *slot = NULL;
    *pm = NULL;
    if (ep->q_head == NULL && gdr_verbs_credit_can_send_data(&ep->credit)
        && am->free_slots != NULL) {
        *slot = take_slot(am);
        return (*slot)->addr;
    }
    *pm = malloc(sizeof(pending_msg_t) + len);
    if (*pm == NULL)
        return NULL;
    (*pm)->next = NULL;
    (*pm)->len = len;
    return (*pm)->bytes;
}

static int commit(gdr_verbs_am_t *am, int peer, size_t len, send_slot_t *slot, pending_msg_t *pm)
{
    ep_t *ep = &am->eps[peer];
    if (slot != NULL)
        return post_built(am, peer, slot, len);
    if (ep->q_tail != NULL)
        ep->q_tail->next = pm;
    else
        ep->q_head = pm;
    ep->q_tail = pm;
    am->queued++;
    am->stats.queued++;
    return 0;
}

static int check_peer(gdr_verbs_am_t *am, int peer)
{
    if (peer < 0 || peer >= am->nranks || am->eps[peer].qp == NULL)
        return fail(am, "no connection to rank %d through %s", peer, am->dev->name);
    if (am->eps[peer].failed)
        return fail(am, "the connection to rank %d has failed earlier", peer);
    return 0;
}

static int send_simple(gdr_verbs_am_t *am, int peer, gdr_verbs_msg_kind_t kind, uint32_t handler,
                       const void *am_hdr, size_t am_hdr_sz, const void *body, size_t body_sz,
                       uint64_t data_sz)
{
    size_t len = gdr_verbs_wire_size(kind, am_hdr_sz, data_sz);
    send_slot_t *slot;
    pending_msg_t *pm;

    if (len > am->cfg.buf_size)
        return fail(am, "a %zu-byte message to rank %d exceeds the %zu-byte eager buffer", len,
                    peer, am->cfg.buf_size);
    char *p = reserve(am, peer, len, &slot, &pm);
    if (p == NULL)
        return fail(am, "out of memory queueing a %zu-byte message to rank %d", len, peer);
    size_t at = gdr_verbs_wire_put_hdr(p, len, kind, handler, 0, am_hdr, am_hdr_sz, data_sz);
    if (body_sz > 0)
        memcpy(p + at, body, body_sz);
    return commit(am, peer, len, slot, pm);
}

gdr_verbs_am_t *gdr_verbs_am_create(gdr_verbs_device_t *dev, int rank, int nranks,
                                    const uint8_t *need_qp, const gdr_verbs_am_config_t *cfg,
                                    const gdr_verbs_am_ops_t *ops, void *ctx,
                                    char *why, size_t why_len)
{
    gdr_verbs_am_t *am = calloc(1, sizeof(*am));
    int npeers = 0;

    if (am == NULL) {
        snprintf(why, why_len, "out of memory creating the AM channel");
        return NULL;
    }
    am->dev = dev;
    am->rank = rank;
    am->nranks = nranks;
    clock_gettime(CLOCK_MONOTONIC, &am->quiet_since);
    am->cfg = *cfg;
    am->ops = *ops;
    am->ctx = ctx;
    am->eps = calloc((size_t) nranks, sizeof(ep_t));
    if (am->eps == NULL)
        goto oom;
    for (int i = 0; i < nranks; i++)
        npeers += need_qp[i] != 0;

    size_t cqe = (size_t) npeers * (2 * cfg->recv_depth + READ_CHUNKS_MAX * cfg->max_reads + 8
                                    + cfg->rma_depth) + cfg->send_slots + 16;
    if (cqe > (size_t) dev->attr.max_cqe)
        cqe = (size_t) dev->attr.max_cqe;
    /* without a completion channel the channel still works; gdr_verbs_am_wait() then
     * only yields */
    am->events = ibv_create_comp_channel(dev->context);
    am->cq = ibv_create_cq(dev->context, (int) cqe, NULL, am->events, 0);
    if (am->cq == NULL) {
        snprintf(why, why_len, "ibv_create_cq(%s, %zu entries) failed: %s", dev->name, cqe,
                 strerror(errno));
        goto fail;
    }

    /* bounce buffers for outgoing messages */
    size_t send_bytes = (size_t) cfg->send_slots * cfg->buf_size;
    if (posix_memalign((void **) &am->send_mem, 4096, send_bytes) != 0)
        goto oom;
    am->send_mr = ibv_reg_mr(dev->pd, am->send_mem, send_bytes, IBV_ACCESS_LOCAL_WRITE);
    am->slots = calloc(cfg->send_slots, sizeof(send_slot_t));
    if (am->send_mr == NULL || am->slots == NULL) {
        snprintf(why, why_len, "registering %zu bytes of send buffers on %s failed: %s "
                 "(raise ulimit -l)", send_bytes, dev->name, strerror(errno));
        goto fail;
    }
    for (uint32_t i = 0; i < cfg->send_slots; i++) {
        am->slots[i].kind = WR_SEND;
        am->slots[i].addr = am->send_mem + (size_t) i * cfg->buf_size;
        am->slots[i].next_free = am->free_slots;
        am->free_slots = &am->slots[i];
    }

    /* receive buffers, recv_depth per peer */
    size_t nrecv = (size_t) npeers * cfg->recv_depth;
    size_t recv_bytes = nrecv * cfg->buf_size;
    if (nrecv > 0) {
        if (posix_memalign((void **) &am->recv_mem, 4096, recv_bytes) != 0)
            goto oom;
        am->recv_mr = ibv_reg_mr(dev->pd, am->recv_mem, recv_bytes, IBV_ACCESS_LOCAL_WRITE);
        am->recv_bufs = calloc(nrecv, sizeof(recv_buf_t));
        if (am->recv_mr == NULL || am->recv_bufs == NULL) {
            snprintf(why, why_len, "registering %zu bytes of receive buffers on %s failed: %s "
                     "(raise ulimit -l)", recv_bytes, dev->name, strerror(errno));
            goto fail;
        }
    }

    gdr_verbs_rcache_ops_t rops = {.reg = reg_for_read,.dereg = dereg_mr };
    am->rcache = gdr_verbs_rcache_create(&rops, dev, RCACHE_UNUSED_MAX);
    if (am->rcache == NULL)
        goto oom;
    if (gdr_verbs_memhooks_attach(am->rcache) != 0) {
        snprintf(why, why_len, "too many registration caches in this process");
        goto fail;
    }

    gdr_verbs_qp_caps_t caps = {
        .max_send_wr = cfg->recv_depth + READ_CHUNKS_MAX * cfg->max_reads + 8 + cfg->rma_depth,
        .max_recv_wr = cfg->recv_depth,
        .max_inline = 128,
        .max_send_sge = 16,     /* one-sided gathers and scatters (gdr_verbs_rma_writev) */
    };
    am->max_sge = caps.max_send_sge;
    size_t next = 0;
    for (int i = 0; i < nranks; i++) {
        ep_t *ep = &am->eps[i];
        if (!need_qp[i])
            continue;
        gdr_verbs_qp_caps_t c = caps;
        ep->qp = gdr_verbs_qp_create(dev, am->cq, &c, why, why_len);
        if (ep->qp == NULL)
            goto fail;
        am->max_inline = c.max_inline;
        if (c.max_send_sge < am->max_sge)
            am->max_sge = c.max_send_sge;
        gdr_verbs_credit_init(&ep->credit, cfg->recv_depth);
        ep->probe.kind = WR_PROBE;
        ep->probe.peer = i;
        for (uint32_t k = 0; k < cfg->recv_depth; k++, next++) {
            recv_buf_t *rb = &am->recv_bufs[next];
            rb->kind = WR_RECV;
            rb->peer = i;
            rb->addr = am->recv_mem + next * cfg->buf_size;
            if (post_recv(am, rb) != 0) {
                snprintf(why, why_len, "%s", am->error);
                goto fail;
            }
        }
    }
    return am;

  oom:
    snprintf(why, why_len, "out of memory creating the AM channel for %d ranks", nranks);
  fail:
    gdr_verbs_am_destroy(am);
    return NULL;
}

size_t gdr_verbs_am_card_size(const gdr_verbs_am_t *am)
{
    return gdr_verbs_card_size((uint32_t) am->nranks);
}

void gdr_verbs_am_card(const gdr_verbs_am_t *am, void *buf)
{
    uint32_t *qpn = calloc((size_t) am->nranks, sizeof(uint32_t));
    gdr_verbs_card_t card = {
        .port_num = am->dev->port_num,.link_layer = (uint8_t) am->dev->link_layer,
        .mtu = (uint8_t) am->dev->active_mtu,.lid = am->dev->lid,
        .nranks = (uint32_t) am->nranks,.qpn = qpn
    };
    memcpy(card.gid, am->dev->gid, 16);
    for (int i = 0; qpn != NULL && i < am->nranks; i++)
        qpn[i] = am->eps[i].qp ? am->eps[i].qp->qp_num : 0;
    if (qpn != NULL)
        gdr_verbs_card_encode(&card, buf);
    else
        memset(buf, 0, gdr_verbs_card_size(card.nranks));      /* decodes as invalid */
    free(qpn);
}

int gdr_verbs_am_connect(gdr_verbs_am_t *am, int peer, const void *buf, size_t len)
{
    gdr_verbs_card_t card;
    char why[256];
    int rc = -1;

    if (check_peer(am, peer) != 0)
        return -1;
    card.qpn = calloc((size_t) am->nranks, sizeof(uint32_t));
    if (card.qpn == NULL)
        return fail(am, "out of memory decoding the card of rank %d", peer);
    if (gdr_verbs_card_decode(buf, len, (uint32_t) am->nranks, &card) != 0)
        fail(am, "the business card of rank %d is not a gdr card for %d ranks (mixed builds?)",
             peer, am->nranks);
    else if (card.qpn[am->rank] == 0)
        fail(am, "rank %d has no queue pair for rank %d (it sees no RDMA path to us)", peer,
             am->rank);
    else if (gdr_verbs_qp_connect(am->eps[peer].qp, am->dev, &card, card.qpn[am->rank],
                                  am->cfg.qp_timeout, why, sizeof(why)) != 0)
        fail(am, "connecting to rank %d: %s", peer, why);
    else {
        am->eps[peer].connected = 1;
        rc = 0;
    }
    free(card.qpn);
    return rc;
}

size_t gdr_verbs_am_eager_limit(const gdr_verbs_am_t *am, size_t am_hdr_sz)
{
    size_t overhead = gdr_verbs_wire_size(GDR_VERBS_MSG_EAGER, am_hdr_sz, 0);
    return am->cfg.buf_size > overhead ? am->cfg.buf_size - overhead : 0;
}

int gdr_verbs_am_send_eager(gdr_verbs_am_t *am, int peer, uint32_t handler_id,
                            const void *am_hdr, size_t am_hdr_sz, const void *data,
                            size_t data_sz)
{
    if (check_peer(am, peer) != 0)
        return -1;
    am->stats.eager_sent++;
    return send_simple(am, peer, GDR_VERBS_MSG_EAGER, handler_id, am_hdr, am_hdr_sz, data,
                       data_sz, data_sz);
}

int gdr_verbs_am_send_rndv(gdr_verbs_am_t *am, int peer, uint32_t handler_id,
                           const void *am_hdr, size_t am_hdr_sz, const void *data,
                           size_t data_sz, uint64_t cookie)
{
    uint32_t idx;

    if (check_peer(am, peer) != 0)
        return -1;
    for (idx = 0; idx < am->rsend_cap && am->rsend[idx].in_use; idx++);
    if (idx == am->rsend_cap) {
        uint32_t cap = am->rsend_cap ? 2 * am->rsend_cap : 16;
        rndv_send_t *t = realloc(am->rsend, cap * sizeof(*t));
        if (t == NULL)
            return fail(am, "out of memory tracking rendezvous sends");
        memset(t + am->rsend_cap, 0, (cap - am->rsend_cap) * sizeof(*t));
        am->rsend = t;
        am->rsend_cap = cap;
    }
    rndv_send_t *rs = &am->rsend[idx];
    rs->reg = gdr_verbs_rcache_get(am->rcache, data, data_sz);
    if (rs->reg == NULL)
        return fail(am, "registering a %zu-byte send buffer for rank %d failed: %s "
                    "(raise ulimit -l)", data_sz, peer, strerror(errno));
    rs->gen++;
    rs->in_use = 1;
    rs->peer = peer;
    rs->user_cookie = cookie;
    am->rsend_active++;

    gdr_verbs_wire_rts_t rts = {
        .addr = (uintptr_t) data,.rkey = rs->reg->rkey,
        .cookie = ((uint64_t) rs->gen << 32) | idx
    };
    am->stats.rndv_sent++;
    return send_simple(am, peer, GDR_VERBS_MSG_RTS, handler_id, am_hdr, am_hdr_sz, &rts,
                       sizeof(rts), data_sz);
}

/* Bytes one RDMA READ work request may carry. */
static uint64_t read_chunk(const gdr_verbs_am_t *am)
{
    return am->dev->max_msg_sz < READ_CHUNK_MAX ? am->dev->max_msg_sz : READ_CHUNK_MAX;
}

static landing_t *landing_get(gdr_verbs_am_t *am, size_t size)
{
    landing_t **best = NULL;
    for (landing_t ** pp = &am->landings; *pp; pp = &(*pp)->next) {
        if ((*pp)->cap >= size && (best == NULL || (*pp)->cap < (*best)->cap))
            best = pp;
    }
    if (best != NULL) {
        landing_t *l = *best;
        *best = l->next;
        am->landing_bytes -= l->cap;
        return l;
    }
    landing_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->cap = (size + 4095) & ~(size_t) 4095;
    l->addr = mmap(NULL, l->cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (l->addr == MAP_FAILED) {
        free(l);
        return NULL;
    }
    l->mr = ibv_reg_mr(am->dev->pd, l->addr, l->cap, IBV_ACCESS_LOCAL_WRITE);
    if (l->mr == NULL) {
        munmap(l->addr, l->cap);
        free(l);
        return NULL;
    }
    return l;
}

static void landing_release(landing_t *l)
{
    ibv_dereg_mr(l->mr);
    munmap(l->addr, l->cap);
    free(l);
}

static void landing_put(gdr_verbs_am_t *am, landing_t *l)
{
    if (am->landing_bytes + l->cap > LANDING_POOL_BYTES) {
        landing_release(l);
        return;
    }
    l->next = am->landings;
    am->landings = l;
    am->landing_bytes += l->cap;
}

/* Posts the next batch (at most READ_CHUNKS_MAX chunks, the last one signalled) of a
 * payload's reads; the first call takes a landing buffer and a read slot. */
static int post_read(gdr_verbs_am_t *am, rndv_read_t *rr)
{
    ep_t *ep = &am->eps[rr->peer];
    uint64_t chunk = read_chunk(am);

    if (rr->land == NULL) {
        rr->land = landing_get(am, (size_t) rr->size);
        if (rr->land == NULL)
            return fail(am, "no %llu-byte landing buffer for a payload from rank %d: %s (out "
                        "of memory, or raise ulimit -l)", (unsigned long long) rr->size,
                        rr->peer, strerror(errno));
        ep->reads_in_flight++;
    }
    for (int k = 0; k < READ_CHUNKS_MAX && rr->posted < rr->size; k++) {
        uint64_t n = rr->size - rr->posted < chunk ? rr->size - rr->posted : chunk;
        struct ibv_sge sge = {
            .addr = (uintptr_t) (rr->land->addr + rr->posted),.length = (uint32_t) n,
            .lkey = rr->land->mr->lkey
        };
        struct ibv_send_wr wr, *bad;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id = (uintptr_t) rr;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_READ;
        wr.send_flags = k == READ_CHUNKS_MAX - 1 || rr->posted + n == rr->size ?
            IBV_SEND_SIGNALED : 0;
        wr.wr.rdma.remote_addr = rr->rts.addr + rr->posted;
        wr.wr.rdma.rkey = rr->rts.rkey;
        if (ibv_post_send(ep->qp, &wr, &bad) != 0) {
            ep->failed = 1;
            return fail(am, "RDMA READ of %llu bytes from rank %d failed to post: %s",
                        (unsigned long long) rr->size, rr->peer, strerror(errno));
        }
        rr->posted += n;
    }
    return 0;
}

static void append_inbound(ep_t *ep, inbound_t *in)
{
    in->next = NULL;
    if (ep->in_tail)
        ep->in_tail->next = in;
    else
        ep->in_head = in;
    ep->in_tail = in;
}

/* Hands up, in order, every message at the head of the queue that is complete. */
static void drain_inbound(gdr_verbs_am_t *am, int peer)
{
    ep_t *ep = &am->eps[peer];
    while (ep->in_head != NULL && (ep->in_head->rr == NULL || ep->in_head->rr->done)) {
        inbound_t *in = ep->in_head;
        ep->in_head = in->next;
        if (ep->in_head == NULL)
            ep->in_tail = NULL;
        if (in->rr != NULL) {
            rndv_read_t *rr = in->rr;
            am->ops.deliver(am->ctx, peer, rr->handler_id, rr->am_hdr, rr->am_hdr_sz,
                            rr->land->addr, (size_t) rr->size);
            landing_put(am, rr->land);
            free(rr->am_hdr);
            free(rr);
        } else {
            am->ops.deliver(am->ctx, peer, in->handler_id, in->am_hdr, in->am_hdr_sz,
                            in->am_hdr + gdr_verbs_wire_pad8(in->am_hdr_sz), in->data_sz);
            free(in->am_hdr);
        }
        free(in);
    }
}

/* An eager message arriving behind an unfinished rendezvous one waits, copied. */
static int defer_eager(gdr_verbs_am_t *am, int peer, const gdr_verbs_msg_t *m)
{
    inbound_t *in = calloc(1, sizeof(*in));
    size_t off = gdr_verbs_wire_pad8(m->am_hdr_sz);
    if (in == NULL || (in->am_hdr = malloc(off + (size_t) m->data_sz + 1)) == NULL) {
        free(in);
        return fail(am, "out of memory holding a message from rank %d in order", peer);
    }
    in->handler_id = m->handler_id;
    in->am_hdr_sz = m->am_hdr_sz;
    in->data_sz = (size_t) m->data_sz;
    if (m->am_hdr_sz)
        memcpy(in->am_hdr, m->am_hdr, m->am_hdr_sz);
    if (m->data_sz)
        memcpy(in->am_hdr + off, m->data, (size_t) m->data_sz);
    append_inbound(&am->eps[peer], in);
    return 0;
}

static int start_read(gdr_verbs_am_t *am, int peer, const gdr_verbs_msg_t *m)
{
    ep_t *ep = &am->eps[peer];

    if (m->data_sz == 0 || m->data_sz > RNDV_MAX)
        return fail(am, "rank %d announced a %llu-byte rendezvous payload (limit %llu)", peer,
                    (unsigned long long) m->data_sz, (unsigned long long) RNDV_MAX);
    rndv_read_t *rr = calloc(1, sizeof(*rr));
    if (rr == NULL)
        return fail(am, "out of memory receiving from rank %d", peer);
    rr->kind = WR_READ;
    rr->peer = peer;
    rr->handler_id = m->handler_id;
    rr->rts = m->rts;
    rr->size = m->data_sz;
    rr->am_hdr_sz = m->am_hdr_sz;
    rr->am_hdr = malloc(m->am_hdr_sz ? m->am_hdr_sz : 1);
    if (rr->am_hdr == NULL) {
        free(rr);
        return fail(am, "out of memory receiving from rank %d", peer);
    }
    if (m->am_hdr_sz)
        memcpy(rr->am_hdr, m->am_hdr, m->am_hdr_sz);
    inbound_t *in = calloc(1, sizeof(*in));
    if (in == NULL) {
        free(rr->am_hdr);
        free(rr);
        return fail(am, "out of memory receiving from rank %d", peer);
    }
    in->rr = rr;
    append_inbound(ep, in);
    am->reads_active++;
    /* the landing buffer is allocated when the read starts: thousands of waiting
     * announcements must not hold thousands of payload buffers */
    if (ep->reads_in_flight < am->cfg.max_reads)
        return post_read(am, rr);
    if (ep->r_tail)
        ep->r_tail->next = rr;
    else
        ep->r_head = rr;
    ep->r_tail = rr;
    return 0;
}

static int finish_read(gdr_verbs_am_t *am, rndv_read_t *rr)
{
    ep_t *ep = &am->eps[rr->peer];
    gdr_verbs_wire_fin_t fin = {.cookie = rr->rts.cookie };
    int peer = rr->peer, rc;

    if (rr->posted < rr->size)
        return post_read(am, rr);       /* a batch landed; reads are ordered: next batch */

    ep->reads_in_flight--;
    am->reads_active--;
    am->stats.rndv_recv++;
    rr->done = 1;
    /* the sender's buffer is free as soon as the data is here */
    am->stats.fin_sent++;
    rc = send_simple(am, peer, GDR_VERBS_MSG_FIN, 0, NULL, 0, &fin, sizeof(fin), 0);
    if (rc == 0 && ep->r_head != NULL && ep->reads_in_flight < am->cfg.max_reads) {
        rndv_read_t *next = ep->r_head;
        ep->r_head = next->next;
        if (ep->r_head == NULL)
            ep->r_tail = NULL;
        next->next = NULL;
        rc = post_read(am, next);
    }
    drain_inbound(am, peer);
    return rc;
}

static int finish_send(gdr_verbs_am_t *am, int peer, uint64_t cookie)
{
    uint32_t idx = (uint32_t) cookie, gen = (uint32_t) (cookie >> 32);
    if (idx >= am->rsend_cap || !am->rsend[idx].in_use || am->rsend[idx].gen != gen
        || am->rsend[idx].peer != peer)
        return fail(am, "rank %d finished a rendezvous transfer that this rank never started "
                    "(cookie %#llx)", peer, (unsigned long long) cookie);
    rndv_send_t *rs = &am->rsend[idx];
    gdr_verbs_rcache_put(am->rcache, rs->reg);
    rs->reg = NULL;
    rs->in_use = 0;
    am->rsend_active--;
    am->ops.rndv_done(am->ctx, rs->user_cookie);
    return 0;
}

static int on_recv(gdr_verbs_am_t *am, recv_buf_t *rb, uint32_t byte_len)
{
    gdr_verbs_msg_t m;
    ep_t *ep = &am->eps[rb->peer];
    gdr_verbs_wire_status_t st = gdr_verbs_wire_parse(rb->addr, byte_len, &m);
    int rc = 0;

    if (st != GDR_VERBS_WIRE_OK)
        return fail(am, "rank %d sent a malformed message (%u bytes): %s", rb->peer, byte_len,
                    gdr_verbs_wire_str(st));
    gdr_verbs_credit_on_returned(&ep->credit, m.credits);
    switch (m.kind) {
        case GDR_VERBS_MSG_EAGER:
            am->stats.eager_recv++;
            if (ep->in_head != NULL)
                rc = defer_eager(am, rb->peer, &m);
            else
                am->ops.deliver(am->ctx, rb->peer, m.handler_id, m.am_hdr, m.am_hdr_sz, m.data,
                                (size_t) m.data_sz);
            break;
        case GDR_VERBS_MSG_RTS:
            rc = start_read(am, rb->peer, &m);
            break;
        case GDR_VERBS_MSG_FIN:
            rc = finish_send(am, rb->peer, m.cookie);
            break;
        case GDR_VERBS_MSG_CREDIT:
            break;
    }
    if (rc != 0)
        return rc;
    if (post_recv(am, rb) != 0)
        return -1;
    gdr_verbs_credit_on_reposted(&ep->credit);
    return 0;
}

static int on_completion(gdr_verbs_am_t *am, const struct ibv_wc *wc)
{
    wr_kind_t kind = *(const wr_kind_t *) (uintptr_t) wc->wr_id;
    int peer;

    switch (kind) {
        case WR_RECV:
            peer = ((recv_buf_t *) (uintptr_t) wc->wr_id)->peer;
            break;
        case WR_SEND:{
                send_slot_t *s = (send_slot_t *) (uintptr_t) wc->wr_id;
                peer = s->peer;
                s->next_free = am->free_slots;
                am->free_slots = s;
                break;
            }
        case WR_READ:
            peer = ((rndv_read_t *) (uintptr_t) wc->wr_id)->peer;
            break;
        case WR_PROBE:
            peer = ((probe_t *) (uintptr_t) wc->wr_id)->peer;
            ((probe_t *) (uintptr_t) wc->wr_id)->in_flight = 0;
            break;
        case WR_RMA:
            peer = ((const gdr_verbs_wr_head_t *) (uintptr_t) wc->wr_id)->peer;
            break;
        default:
            return fail(am, "completion with an unknown work request id");
    }
    if (wc->status != IBV_WC_SUCCESS) {
        /* a failed one-sided work request still ends its operation, in error */
        if (kind == WR_RMA && am->rma_cb != NULL)
            (void) am->rma_cb(am->rma_ctx, wc);
        if (wc->status == IBV_WC_WR_FLUSH_ERR && am->eps[peer].failed)
            return 0;           /* the rest of a failed queue pair, already reported */
        am->eps[peer].failed = 1;
        if (wc->status == IBV_WC_REM_ACCESS_ERR)
            return fail(am, "rank %d refused a one-sided access (%s, status %d) on %s: the "
                        "window key is stale (window freed or region detached) or the range "
                        "is outside the registered window", peer,
                        ibv_wc_status_str(wc->status), (int) wc->status, am->dev->name);
        return fail(am, "the connection to rank %d failed: %s (status %d, vendor error %#x) on "
                    "%s: rank %d died or the network path to it broke", peer,
                    ibv_wc_status_str(wc->status), (int) wc->status, wc->vendor_err,
                    am->dev->name, peer);
    }
    if (kind == WR_RMA)
        return am->rma_cb != NULL ? am->rma_cb(am->rma_ctx, wc) :
            fail(am, "a one-sided completion arrived with no RMA engine attached");
    if (kind == WR_RECV)
        return on_recv(am, (recv_buf_t *) (uintptr_t) wc->wr_id, wc->byte_len);
    if (kind == WR_READ)
        return finish_read(am, (rndv_read_t *) (uintptr_t) wc->wr_id);
    return 0;
}

/* Messages wait for credits that only the peer can return: check, at most once a
 * second, that it is still there, so a dead peer becomes an error, not a hang. */
static int maybe_probe(gdr_verbs_am_t *am, int peer)
{
    ep_t *ep = &am->eps[peer];
    struct timespec now;

    if (ep->probe.in_flight)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long since = (now.tv_sec - ep->probe.last.tv_sec) * 1000000000LL +
        (now.tv_nsec - ep->probe.last.tv_nsec);
    if (since < PROBE_INTERVAL_NS)
        return 0;
    ep->probe.last = now;
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t) &ep->probe;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (ibv_post_send(ep->qp, &wr, &bad) != 0) {
        ep->failed = 1;
        return fail(am, "probing rank %d failed: %s (queue pair in error?)", peer, strerror(errno));
    }
    ep->probe.in_flight = 1;
    am->stats.probes++;
    return 0;
}

/* A look at the clock now and then while nothing completes: after IDLE_PROBE_NS of
 * quiet, probe every connected peer once (a failed probe fails the channel, naming
 * the peer), then stay quiet as long again. */
static int idle_look(gdr_verbs_am_t *am)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    am->quiet_polls = 0;
    if (am->heard) {
        am->heard = 0;
        am->quiet_since = now;
        return 0;
    }
    long long quiet = (now.tv_sec - am->quiet_since.tv_sec) * 1000000000LL +
        (now.tv_nsec - am->quiet_since.tv_nsec);
    if (quiet < IDLE_PROBE_NS)
        return 0;
    am->quiet_since = now;
    for (int i = 0; i < am->nranks; i++) {
        ep_t *ep = &am->eps[i];
        if (i != am->rank && ep->qp != NULL && ep->connected && !ep->failed
            && maybe_probe(am, i) != 0)
            return -1;
    }
    return 0;
}

/* Queued messages go out as credits and bounce buffers allow; then owed credits. */
static int flush(gdr_verbs_am_t *am, int *progressed)
{
    for (int i = 0; i < am->nranks; i++) {
        ep_t *ep = &am->eps[i];
        if (ep->qp == NULL || ep->failed)
            continue;
        /* the backlog, in order, up to SEND_CHAIN_MAX messages per doorbell */
        struct ibv_send_wr wr[SEND_CHAIN_MAX];
        struct ibv_sge sge[SEND_CHAIN_MAX];
        int n = 0;
        while (ep->q_head != NULL && gdr_verbs_credit_can_send_data(&ep->credit)
               && am->free_slots != NULL) {
            pending_msg_t *pm = ep->q_head;
            send_slot_t *slot = take_slot(am);
            memcpy(slot->addr, pm->bytes, pm->len);
            build_send_wr(am, i, slot, pm->len, &wr[n], &sge[n]);
            n++;
            ep->q_head = pm->next;
            if (ep->q_head == NULL)
                ep->q_tail = NULL;
            am->queued--;
            free(pm);
            *progressed = 1;
            if (n == SEND_CHAIN_MAX || ep->q_head == NULL
                || !gdr_verbs_credit_can_send_data(&ep->credit) || am->free_slots == NULL) {
                am->stats.send_chains++;
                if (post_send_chain(am, i, wr, n) != 0)
                    return -1;
                n = 0;
            }
        }
        if (ep->q_head != NULL && !gdr_verbs_credit_can_send_data(&ep->credit)
            && maybe_probe(am, i) != 0)
            return -1;
        /* owed credits ride on data when data can go; when it cannot (both sides
         * queued and dry), the kept last credit carries them in a CREDIT message */
        if (gdr_verbs_credit_want_update(&ep->credit) && am->free_slots != NULL
            && (ep->q_head == NULL || !gdr_verbs_credit_can_send_data(&ep->credit))) {
            send_slot_t *slot = take_slot(am);
            size_t len = gdr_verbs_wire_put_hdr(slot->addr, am->cfg.buf_size,
                                                GDR_VERBS_MSG_CREDIT, 0, 0, NULL, 0, 0);
            am->stats.credit_sent++;
            if (post_built(am, i, slot, len) != 0)
                return -1;
            *progressed = 1;
        }
    }
    return 0;
}

int gdr_verbs_am_progress(gdr_verbs_am_t *am, int *progressed)
{
    struct ibv_wc wc[POLL_BATCH];

    *progressed = 0;
    if (am->failed)
        return -1;
    int n = ibv_poll_cq(am->cq, POLL_BATCH, wc);
    if (n < 0)
        return fail(am, "polling the completion queue of %s failed", am->dev->name);
    for (int i = 0; i < n; i++) {
        if (on_completion(am, &wc[i]) != 0)
            return -1;
    }
    if (n > 0) {
        *progressed = 1;
        am->heard = 1;
    } else {
        am->stats.empty_polls++;
        if (++am->quiet_polls == IDLE_CLOCK_EVERY && idle_look(am) != 0)
            return -1;
    }
    /* queues only grow or need credit updates after traffic; skip the scan otherwise */
    if (n > 0 || am->queued > 0)
        return flush(am, progressed);
    return 0;
}

int gdr_verbs_am_wait(gdr_verbs_am_t *am, int timeout_us, int *progressed)
{
    *progressed = 0;
    if (am->failed)
        return -1;
    if (am->events == NULL) {
        sched_yield();
        return gdr_verbs_am_progress(am, progressed);
    }
    /* arm first, then look once more: a completion that lands after the look raises
     * the event we sleep on, so none is missed */
    if (!am->armed) {
        if (ibv_req_notify_cq(am->cq, 0) != 0)
            return fail(am, "arming completion events on %s failed: %s", am->dev->name,
                        strerror(errno));
        am->armed = 1;
    }
    if (gdr_verbs_am_progress(am, progressed) != 0)
        return -1;
    if (*progressed)
        return 0;
    struct pollfd pfd = {.fd = am->events->fd,.events = POLLIN };
    int rc = poll(&pfd, 1, timeout_us > 0 ? (timeout_us + 999) / 1000 : 0);
    if (rc < 0 && errno != EINTR)
        return fail(am, "waiting for completions on %s failed: %s", am->dev->name,
                    strerror(errno));
    if (rc > 0) {
        struct ibv_cq *cq;
        void *cq_ctx;
        if (ibv_get_cq_event(am->events, &cq, &cq_ctx) != 0)
            return fail(am, "reading a completion event of %s failed: %s", am->dev->name,
                        strerror(errno));
        ibv_ack_cq_events(cq, 1);
        am->armed = 0;
        am->stats.wakeups++;
    } else if (rc == 0 && idle_look(am) != 0) {
        return -1;              /* slept its whole timeout: as quiet as it gets */
    }
    am->stats.sleeps++;
    return gdr_verbs_am_progress(am, progressed);
}

void gdr_verbs_am_attach_rma(gdr_verbs_am_t *am, gdr_verbs_am_rma_cb_t cb, void *ctx)
{
    am->rma_cb = cb;
    am->rma_ctx = ctx;
}

struct ibv_qp *gdr_verbs_am_qp(gdr_verbs_am_t *am, int peer)
{
    if (peer < 0 || peer >= am->nranks || am->eps[peer].failed)
        return NULL;
    return am->eps[peer].qp;
}

int gdr_verbs_am_reaches(gdr_verbs_am_t *am, int peer)
{
    return gdr_verbs_am_qp(am, peer) != NULL;
}

gdr_verbs_device_t *gdr_verbs_am_device(gdr_verbs_am_t *am)
{
    return am->dev;
}

int gdr_verbs_am_nranks(const gdr_verbs_am_t *am)
{
    return am->nranks;
}

uint32_t gdr_verbs_am_max_inline(const gdr_verbs_am_t *am)
{
    return am->max_inline;
}

uint32_t gdr_verbs_am_max_sge(const gdr_verbs_am_t *am)
{
    return am->max_sge;
}

gdr_verbs_rcache_t *gdr_verbs_am_rcache(gdr_verbs_am_t *am)
{
    return am->rcache;
}

int gdr_verbs_am_fail_peer(gdr_verbs_am_t *am, int peer, const char *fmt, ...)
{
    va_list ap;
    if (peer >= 0 && peer < am->nranks)
        am->eps[peer].failed = 1;
    va_start(ap, fmt);
    vfail(am, fmt, ap);
    va_end(ap);
    return -1;
}

int gdr_verbs_am_busy(const gdr_verbs_am_t *am)
{
    return am->queued > 0 || am->reads_active > 0 || am->rsend_active > 0;
}

const char *gdr_verbs_am_error(const gdr_verbs_am_t *am)
{
    return am->error;
}

const gdr_verbs_am_stats_t *gdr_verbs_am_stats(const gdr_verbs_am_t *am)
{
    return &am->stats;
}

void gdr_verbs_am_destroy(gdr_verbs_am_t *am)
{
    if (am == NULL)
        return;
    for (int i = 0; am->eps != NULL && i < am->nranks; i++) {
        ep_t *ep = &am->eps[i];
        if (ep->qp != NULL)
            ibv_destroy_qp(ep->qp);
        while (ep->q_head != NULL) {
            pending_msg_t *pm = ep->q_head;
            ep->q_head = pm->next;
            free(pm);
        }
        /* every rendezvous read, waiting or in flight, has an inbound entry */
        while (ep->in_head != NULL) {
            inbound_t *in = ep->in_head;
            ep->in_head = in->next;
            if (in->rr != NULL) {
                if (in->rr->land != NULL)
                    landing_release(in->rr->land);
                free(in->rr->am_hdr);
                free(in->rr);
            }
            free(in->am_hdr);
            free(in);
        }
    }
    for (uint32_t i = 0; i < am->rsend_cap; i++) {
        if (am->rsend[i].reg != NULL)
            gdr_verbs_rcache_put(am->rcache, am->rsend[i].reg);
    }
    free(am->rsend);
    while (am->landings != NULL) {
        landing_t *l = am->landings;
        am->landings = l->next;
        landing_release(l);
    }
    if (am->rcache != NULL) {
        gdr_verbs_memhooks_detach(am->rcache);
        gdr_verbs_rcache_destroy(am->rcache);
    }
    if (am->cq != NULL)
        ibv_destroy_cq(am->cq);    /* every event was acknowledged in gdr_verbs_am_wait() */
    if (am->events != NULL)
        ibv_destroy_comp_channel(am->events);
    if (am->recv_mr != NULL)
        ibv_dereg_mr(am->recv_mr);
    if (am->send_mr != NULL)
        ibv_dereg_mr(am->send_mr);
    free(am->recv_mem);
    free(am->send_mem);
    free(am->recv_bufs);
    free(am->slots);
    free(am->eps);
    free(am);
}
