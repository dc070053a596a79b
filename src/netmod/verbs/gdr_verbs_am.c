#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* posix_memalign, MAP_ANONYMOUS */
#endif
#include "gdr_verbs_am.h"
#include "gdr_verbs_card.h"
#include "gdr_verbs_conn.h"
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
/* receive buffers the shared receive queue may hold when the caller names no bound
 * (the device's own bound can be far larger: rxe's takes 130 MB of queue) */
#define SRQ_DEPTH_DEFAULT 1024

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
/* While busy polling, the clock is read every so many empty polls, a count adapted so
 * that the reads come about every IDLE_LOOK_NS whatever a poll costs: under User-Mode
 * Linux (maint/rxe) a clock read is a system call, and one every 1024 polls kept the
 * guest kernel busy while ranks waited; with sched_yield in each poll
 * (MPIR_CVAR_CH4_GDR_YIELD_AFTER=1) a poll may take tens of microseconds. */
#define IDLE_LOOK_NS 4000000LL
#define IDLE_CLOCK_EVERY_FIRST 1024u
#define IDLE_CLOCK_EVERY_LEAST 16u
#define IDLE_CLOCK_EVERY_MOST (1u << 24)

/* A buffer of the shared receive queue: any peer's message may land in it. */
typedef struct recv_buf {
    wr_kind_t kind;
    uint32_t lkey;              /* of its chunk's registration */
    char *addr;
} recv_buf_t;

/* The shared receive queue grows in chunks of recv_depth buffers, one registration
 * each, as peers connect. */
typedef struct recv_chunk {
    struct recv_chunk *next;
    char *mem;
    struct ibv_mr *mr;
    recv_buf_t *bufs;
    uint32_t n;
} recv_chunk_t;

/* Datagrams of the connection handshake (gdr_verbs_conn.h): a few registered buffers
 * for receiving (each behind the 40-byte GRH the device writes first) and sending. */
#define UD_GRH_BYTES 40
#define UD_BUF_BYTES 128
#define UD_RECV_COUNT 64
#define UD_SEND_COUNT 16

typedef struct ud_buf {
    wr_kind_t kind;
    char *addr;
    struct ud_buf *next_free;   /* send buffers */
} ud_buf_t;

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

/* One piece of memory a payload is read into: a caller's (registered through the cache,
 * reg), or the landing buffer (reg NULL). */
typedef struct read_seg {
    char *addr;
    uint64_t len;
    uint32_t lkey;
    gdr_verbs_rcache_entry_t *reg;
} read_seg_t;

/* A payload this rank reads from a peer (receiver side of rendezvous).  Not taken: it
 * lands, and its message is delivered whole in order (drain_inbound).  Taken (ops->rts):
 * its message was handed up before the read; it goes where read_into said and
 * read_done reports it. */
typedef struct rndv_read {
    wr_kind_t kind;
    int done;                   /* not taken: payload landed, to be delivered in order */
    int offer;                  /* waits in the inbound queue for its turn at ops->rts */
    int taken;                  /* ops->rts took it */
    int placed;                 /* read_into said where it goes */
    int started;                /* holds one of its peer's read slots */
    landing_t *land;            /* the landing buffer it is read into, if any */
    struct rndv_read *next;     /* waiting for a read slot */
    struct rndv_read *t_prev, *t_next;  /* taken: in am->taken (freed at destroy) */
    int peer;
    uint32_t handler_id;
    void *am_hdr;               /* kept while it waits in the inbound queue */
    size_t am_hdr_sz;
    gdr_verbs_wire_rts_t rts;
    uint64_t data_sz;           /* as announced */
    uint64_t size;              /* bytes to read: data_sz, or less where the caller's
                                 * memory holds less */
    uint64_t posted;            /* bytes whose reads are posted: large payloads go in batches */
    uint64_t cookie;            /* read_into's */
    uint32_t nseg, seg;         /* destination pieces; the one the next read starts in */
    uint64_t seg_off;           /* ... and where in it */
    read_seg_t dst[GDR_VERBS_AM_READ_SEGS_MAX];
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
    struct ibv_qp *qp;          /* made on first use (conn), then connected */
    gdr_verbs_conn_t conn;
    gdr_verbs_card_t card;      /* how to reach the peer: valid if has_card */
    struct ibv_ah *ah;          /* for handshake datagrams, made on first use */
    uint8_t reach, has_card;
    uint8_t dynamic_only;       /* a rank of this node reached for connect/accept's dynamic
                                 * messages only: not a path for its windows */
    gdr_verbs_credit_t credit;
    pending_msg_t *q_head, *q_tail;
    rndv_read_t *r_head, *r_tail;
    inbound_t *in_head, *in_tail;       /* in-order delivery queue */
    uint32_t reads_in_flight;
    probe_t probe;
    int connected;              /* ready to send: messages and probes may go */
    int failed;
} ep_t;

/* A peer this rank never talks with costs its ep_t (and its card inside): DESIGN's
 * bound for idle-peer state. */
_Static_assert(sizeof(ep_t) <= 1024, "idle-peer state must stay within 1 KiB");

/* Which peer a receive came from: the local QP number a completion names, looked up. */
typedef struct qp_slot {
    uint32_t qpn;               /* 0: empty */
    int peer;
} qp_slot_t;

struct gdr_verbs_am {
    gdr_verbs_device_t *dev;
    int rank, nranks;
    int npeers;                 /* eps in use: the job's ranks, then processes of other jobs */
    uint64_t job;               /* this job's identity (gdr_verbs_am_set_job), 0 until known */
    gdr_verbs_am_config_t cfg;
    gdr_verbs_am_ops_t ops;
    void *ctx;
    struct ibv_cq *cq;
    struct ibv_comp_channel *events;    /* wakes gdr_verbs_am_wait(); NULL: cannot sleep */
    int armed;                  /* the CQ will raise an event at its next completion */
    ep_t *eps;
    int *active;                /* peers with a QP, in the order they got one */
    int nactive;
    qp_slot_t *qpmap;
    uint32_t qpmap_cap;         /* a power of two, at least twice nactive */
    struct ibv_srq *srq;
    uint32_t srq_cap;           /* receive buffers the SRQ may hold */
    recv_chunk_t *chunks;
    uint32_t cq_cap, cq_need;   /* completion queue entries: allocated, needed */
    uint32_t qp_send_wr;        /* send work requests of one RC QP */
    struct ibv_qp *ud;          /* connection requests */
    char *ud_mem;
    struct ibv_mr *ud_mr;
    ud_buf_t ud_bufs[UD_RECV_COUNT + UD_SEND_COUNT];
    ud_buf_t *ud_free;          /* send buffers not in flight */
    int connecting;             /* peers in the handshake */
    uint32_t timer_polls;       /* progress calls since the handshake timers were looked at */
    char *send_mem;
    struct ibv_mr *send_mr;
    send_slot_t *slots;
    send_slot_t *free_slots;
    rndv_send_t *rsend;
    uint32_t rsend_cap;
    gdr_verbs_rcache_t *rcache; /* registrations of rendezvous send buffers and of the
                                 * receive buffers payloads are read into */
    rndv_read_t *offering;      /* the payload ops->rts is deciding about now */
    rndv_read_t *taken;         /* payloads taken by ops->rts and not yet read */
    landing_t *landings;        /* idle landing buffers */
    size_t landing_bytes;
    uint32_t max_inline;
    uint32_t max_sge;           /* send gather entries every QP has */
    uint64_t queued;            /* messages in all ep queues */
    uint64_t reads_active;      /* rendezvous reads in flight or waiting, all peers */
    uint64_t rsend_active;
    gdr_verbs_am_stats_t stats;
    gdr_verbs_am_rma_cb_t rma_cb;       /* completions of one-sided work requests */
    gdr_verbs_am_rma_held_cb_t rma_held;        /* posts the ones it held back */
    void *rma_ctx;
    /* idle probing: when the channel last heard something (or last probed), whether it
     * heard anything since the clock was last read, empty polls since then, how many
     * make the next read, when the clock was last read */
    struct timespec quiet_since;
    int heard;
    uint32_t quiet_polls;
    uint32_t clock_every;
    struct timespec last_look;
    int failed;
    char error[320];
};

/* Rendezvous sources stay registered after use (until freed or evicted). */
#define RCACHE_UNUSED_MAX ((size_t) 256 << 20)

static void *reg_for_read(void *ctx, void *addr, size_t len, const void *asked, uint32_t *lkey,
                          uint32_t *rkey)
{
    gdr_verbs_device_t *dev = ctx;
    /* local write too: one-sided gets land in user buffers registered here */
    struct ibv_mr *mr = gdr_verbs_device_reg_mr(dev, addr, len, asked,
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

/* The one-sided engine's held work requests to peer (-1: any) go first: they were
 * posted before what the channel posts now, or are what a poll may be waited for. */
static int rma_held_out(gdr_verbs_am_t *am, int peer)
{
    return am->rma_held != NULL ? am->rma_held(am->rma_ctx, peer) : 0;
}

static int post_recv(gdr_verbs_am_t *am, recv_buf_t *rb)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t) rb->addr,.length = (uint32_t) am->cfg.buf_size,.lkey = rb->lkey
    };
    struct ibv_recv_wr wr = {.wr_id = (uintptr_t) rb,.sg_list = &sge,.num_sge = 1 }, *bad;
    if (ibv_post_srq_recv(am->srq, &wr, &bad) != 0)
        return fail(am, "posting a receive buffer to the shared receive queue of %s failed: %s",
                    am->dev->name, strerror(errno));
    return 0;
}

/* Adds up to recv_depth buffers to the shared receive queue (a peer is connecting),
 * as long as it holds fewer than srq_cap. */
static int grow_srq(gdr_verbs_am_t *am)
{
    uint32_t have = (uint32_t) am->stats.recv_buffers, n = am->cfg.recv_depth;
    if (have >= am->srq_cap)
        return 0;
    if (n > am->srq_cap - have)
        n = am->srq_cap - have;
    recv_chunk_t *c = calloc(1, sizeof(*c));
    size_t bytes = (size_t) n * am->cfg.buf_size;
    if (c == NULL || posix_memalign((void **) &c->mem, 4096, bytes) != 0
        || (c->bufs = calloc(n, sizeof(recv_buf_t))) == NULL) {
        if (c != NULL) {
            free(c->mem);
            free(c);
        }
        return fail(am, "out of memory for %u receive buffers", n);
    }
    c->mr = ibv_reg_mr(am->dev->pd, c->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
    if (c->mr == NULL) {
        free(c->bufs);
        free(c->mem);
        free(c);
        return fail(am, "registering %zu bytes of receive buffers on %s failed: %s (raise "
                    "ulimit -l, or lower MPIR_CVAR_CH4_GDR_SRQ_DEPTH)", bytes, am->dev->name,
                    strerror(errno));
    }
    c->n = n;
    c->next = am->chunks;
    am->chunks = c;
    am->stats.pinned_bytes += bytes;
    for (uint32_t k = 0; k < n; k++) {
        c->bufs[k].kind = WR_RECV;
        c->bufs[k].lkey = c->mr->lkey;
        c->bufs[k].addr = c->mem + (size_t) k * am->cfg.buf_size;
        if (post_recv(am, &c->bufs[k]) != 0)
            return -1;
        am->stats.recv_buffers++;
    }
    return 0;
}

/* Room in the completion queue for one more QP's sends (and the receive buffers it
 * brought): grown by doubling, so a job that talks to few peers keeps a small one. */
static int grow_cq(gdr_verbs_am_t *am)
{
    uint32_t need = am->cq_need + am->qp_send_wr + am->cfg.recv_depth;
    if (need > (uint32_t) am->dev->attr.max_cqe)
        need = (uint32_t) am->dev->attr.max_cqe;
    if (need > am->cq_cap) {
        uint32_t want = 2 * am->cq_cap > need ? 2 * am->cq_cap : need;
        if (want > (uint32_t) am->dev->attr.max_cqe)
            want = (uint32_t) am->dev->attr.max_cqe;
        if (ibv_resize_cq(am->cq, (int) want) != 0)
            return fail(am, "growing the completion queue of %s to %u entries failed: %s "
                        "(a peer more to talk to)", am->dev->name, want, strerror(errno));
        am->cq_cap = (uint32_t) am->cq->cqe;
    }
    am->cq_need = need;
    return 0;
}

static uint32_t qp_hash(uint32_t qpn, uint32_t cap)
{
    return (qpn * 2654435761u) & (cap - 1);
}

static void qpmap_put(qp_slot_t *map, uint32_t cap, uint32_t qpn, int peer)
{
    uint32_t i = qp_hash(qpn, cap);
    while (map[i].qpn != 0)
        i = (i + 1) & (cap - 1);
    map[i].qpn = qpn;
    map[i].peer = peer;
}

/* Remembers peer's QP, and which peers have one. */
static int add_active(gdr_verbs_am_t *am, int peer, uint32_t qpn)
{
    if (2 * (uint32_t) (am->nactive + 1) > am->qpmap_cap) {
        uint32_t cap = am->qpmap_cap ? 2 * am->qpmap_cap : 16;
        qp_slot_t *map = calloc(cap, sizeof(*map));
        int *act = realloc(am->active, (cap / 2) * sizeof(int));
        if (map == NULL || act == NULL) {
            free(map);
            if (act != NULL)
                am->active = act;
            return fail(am, "out of memory tracking %d connected peers", am->nactive + 1);
        }
        am->active = act;
        for (uint32_t i = 0; i < am->qpmap_cap; i++) {
            if (am->qpmap[i].qpn != 0)
                qpmap_put(map, cap, am->qpmap[i].qpn, am->qpmap[i].peer);
        }
        free(am->qpmap);
        am->qpmap = map;
        am->qpmap_cap = cap;
    }
    qpmap_put(am->qpmap, am->qpmap_cap, qpn, peer);
    am->active[am->nactive++] = peer;
    return 0;
}

/* The peer whose RC queue pair has local number qpn; -1 if none. */
static int peer_of_qp(const gdr_verbs_am_t *am, uint32_t qpn)
{
    if (am->qpmap_cap == 0)
        return -1;
    for (uint32_t i = qp_hash(qpn, am->qpmap_cap);; i = (i + 1) & (am->qpmap_cap - 1)) {
        if (am->qpmap[i].qpn == qpn)
            return am->qpmap[i].peer;
        if (am->qpmap[i].qpn == 0)
            return -1;
    }
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t) t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int ud_post_recv(gdr_verbs_am_t *am, ud_buf_t *b)
{
    struct ibv_sge sge = {.addr = (uintptr_t) b->addr,.length = UD_BUF_BYTES,
        .lkey = am->ud_mr->lkey };
    struct ibv_recv_wr wr = {.wr_id = (uintptr_t) b,.sg_list = &sge,.num_sge = 1 }, *bad;
    if (ibv_post_recv(am->ud, &wr, &bad) != 0)
        return fail(am, "posting a connection-request buffer on %s failed: %s", am->dev->name,
                    strerror(errno));
    return 0;
}

/* The UD queue pair and its buffers. */
static int ud_start(gdr_verbs_am_t *am, char *why, size_t why_len)
{
    am->ud = gdr_verbs_qp_create_ud(am->dev, am->cq, UD_SEND_COUNT, UD_RECV_COUNT, why, why_len);
    if (am->ud == NULL)
        return -1;
    size_t bytes = (size_t) (UD_RECV_COUNT + UD_SEND_COUNT) * UD_BUF_BYTES;
    if (posix_memalign((void **) &am->ud_mem, 4096, bytes) != 0
        || (am->ud_mr = ibv_reg_mr(am->dev->pd, am->ud_mem, bytes, IBV_ACCESS_LOCAL_WRITE)) == NULL) {
        snprintf(why, why_len, "registering %zu bytes of connection-request buffers on %s "
                 "failed: %s (raise ulimit -l)", bytes, am->dev->name, strerror(errno));
        return -1;
    }
    am->stats.pinned_bytes += bytes;
    for (int i = 0; i < UD_RECV_COUNT + UD_SEND_COUNT; i++) {
        ud_buf_t *b = &am->ud_bufs[i];
        b->addr = am->ud_mem + (size_t) i * UD_BUF_BYTES;
        if (i < UD_RECV_COUNT) {
            b->kind = WR_UD_RECV;
            if (ud_post_recv(am, b) != 0) {
                snprintf(why, why_len, "%s", am->error);
                return -1;
            }
        } else {
            b->kind = WR_UD_SEND;
            b->next_free = am->ud_free;
            am->ud_free = b;
        }
    }
    return 0;
}

static void ep_init(gdr_verbs_am_t *am, int peer, int reach)
{
    ep_t *ep = &am->eps[peer];
    ep->reach = reach != 0;
    gdr_verbs_credit_init(&ep->credit, am->cfg.recv_depth);
    ep->probe.kind = WR_PROBE;
    ep->probe.peer = peer;
}

/* A process of another job (past the job's ranks). */
static int is_foreign(const gdr_verbs_am_t *am, int peer)
{
    return peer >= am->nranks;
}

/* A process of another job is lost (it ended after MPI_Comm_disconnect, or its path broke):
 * only its connection fails, the channel stays up for every other peer; sends to it fail
 * from now on, saying so.  Returns 0. */
static int foreign_lost(gdr_verbs_am_t *am, int peer, const char *why)
{
    ep_t *ep = &am->eps[peer];
    ep->failed = 1;
    snprintf(am->error, sizeof(am->error), "the connection to rank %u of job %016llx (another "
             "job) failed: %s", ep->card.rank, (unsigned long long) ep->card.job,
             why != NULL ? why : "?");
    return 0;
}

/* The peer index of process `rank` of job `job`, made from its card if it is new; -1 when
 * there is no more room (GDR_VERBS_AM_FOREIGN_MAX). */
static int foreign_peer(gdr_verbs_am_t *am, const gdr_verbs_card_t *card)
{
    for (int i = am->nranks; i < am->npeers; i++) {
        if (am->eps[i].card.job == card->job && am->eps[i].card.rank == card->rank) {
            /* the same process: a new card only where the old one's queue pair is gone */
            if (am->eps[i].qp == NULL || am->eps[i].failed)
                am->eps[i].card = *card;
            return i;
        }
    }
    if (am->npeers - am->nranks >= GDR_VERBS_AM_FOREIGN_MAX)
        return -1;
    int peer = am->npeers++;
    ep_init(am, peer, 1);
    am->eps[peer].card = *card;
    am->eps[peer].has_card = 1;
    return peer;
}

/* A handshake datagram from another job's process: its peer index, made from the card it
 * carries if this is its first; -1 to drop it (not a card, or no room). */
static int foreign_from_msg(gdr_verbs_am_t *am, const gdr_verbs_conn_msg_t *m)
{
    gdr_verbs_card_t card;
    if (gdr_verbs_card_decode(m->card, sizeof(m->card), 0, &card) != 0 || card.job != m->job
        || card.rank != m->src_rank || card.job == 0)
        return -1;
    return foreign_peer(am, &card);
}

/* A rank of this job the channel did not reach (one of this node, which MPICH's shared
 * memory serves) is reached through card for the dynamic messages of a connect/accept
 * inside the job, never for its windows (dynamic_only). */
static void reach_for_dynamic(ep_t *ep, const gdr_verbs_card_t *card)
{
    if (ep->reach && ep->has_card)
        return;
    ep->reach = 1;
    ep->dynamic_only = 1;
    ep->card = *card;
    ep->has_card = 1;
}

/* A handshake datagram from a rank of this job: its peer.  A rank this one does not reach
 * (one of its node, which MPICH's shared memory serves) may still ask, for the dynamic
 * messages of a connect/accept between groups of the job: it is reached through the card
 * it sent, as gdr_verbs_am_add_foreign does from its upid on the other side. */
static int same_job_from_msg(gdr_verbs_am_t *am, const gdr_verbs_conn_msg_t *m)
{
    ep_t *ep = &am->eps[m->src_rank];
    gdr_verbs_card_t card;
    if (ep->reach && ep->has_card)
        return (int) m->src_rank;
    if (am->job == 0 || gdr_verbs_card_decode(m->card, sizeof(m->card), (uint32_t) am->nranks,
                                              &card) != 0 || card.rank != m->src_rank)
        return -1;
    reach_for_dynamic(ep, &card);
    return (int) m->src_rank;
}

int gdr_verbs_am_add_foreign(gdr_verbs_am_t *am, const void *buf, size_t len)
{
    gdr_verbs_card_t card;
    if (gdr_verbs_card_decode(buf, len, 0, &card) != 0 || card.job == 0)
        return fail(am, "the address of a process of another job is not a gdr card (version "
                    "%d; another build of gdr?)", GDR_VERBS_CARD_VERSION);
    if (card.job == am->job) {
        /* this job's rank, maybe one of this node that MPICH's shared memory serves: it is
         * reached through the NIC too, for the dynamic messages of connect/accept */
        if (card.rank >= (uint32_t) am->nranks || card.nranks != (uint32_t) am->nranks)
            return fail(am, "a card of this job names rank %u of %u", card.rank, card.nranks);
        reach_for_dynamic(&am->eps[card.rank], &card);
        return (int) card.rank;
    }
    int peer = foreign_peer(am, &card);
    if (peer < 0) {
        snprintf(am->error, sizeof(am->error), "this process already knows %d processes of "
                 "other jobs, the most gdr keeps (GDR_VERBS_AM_FOREIGN_MAX)",
                 GDR_VERBS_AM_FOREIGN_MAX);
        return -1;
    }
    return peer;
}

int gdr_verbs_am_peer_card(const gdr_verbs_am_t *am, int peer, void *buf)
{
    if (peer < 0 || peer >= am->npeers || !am->eps[peer].has_card)
        return -1;
    gdr_verbs_card_encode(&am->eps[peer].card, buf);
    return 0;
}

void gdr_verbs_am_set_job(gdr_verbs_am_t *am, uint64_t job)
{
    am->job = job;
}

/* The address handle for peer's handshake datagrams: 1 made, 0 the peer's address did
 * not resolve yet (under load a neighbour can miss the kernel's 1-s ARP wait: tried again
 * at the handshake's next datagram either way, until MPIR_CVAR_CH4_GDR_CONNECT_TIMEOUT),
 * -1 failed. */
static int peer_ah(gdr_verbs_am_t *am, int peer)
{
    ep_t *ep = &am->eps[peer];
    char why[256];
    int unresolved;
    if (ep->ah != NULL)
        return 1;
    ep->ah = gdr_verbs_qp_ah(am->dev, &ep->card, &unresolved, why, sizeof(why));
    if (ep->ah != NULL)
        return 1;
    if (!unresolved)
        return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d: %s", peer, why);
    am->stats.address_retries++;
    return 0;
}

/* One handshake datagram to peer.  With no send buffer free, or the peer's address not
 * resolved yet, it is not sent: the handshake's retransmission makes up for it, as for a
 * lost one. */
static int ud_send(gdr_verbs_am_t *am, int peer, gdr_verbs_conn_msg_kind_t kind)
{
    ep_t *ep = &am->eps[peer];
    int have_ah = peer_ah(am, peer);
    if (have_ah <= 0)
        return have_ah;
    ud_buf_t *b = am->ud_free;
    if (b == NULL)
        return 0;
    gdr_verbs_conn_msg_t m = {.kind = kind,.src_rank = (uint32_t) am->rank,
        .qpn = ep->qp->qp_num,.nranks = (uint32_t) am->nranks,.job = am->job };
    gdr_verbs_am_card(am, m.card);
    gdr_verbs_conn_msg_encode(&m, b->addr);
    struct ibv_sge sge = {.addr = (uintptr_t) b->addr,.length = GDR_CONN_WIRE_BYTES,
        .lkey = am->ud_mr->lkey };
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t) b;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ep->ah;
    wr.wr.ud.remote_qpn = ep->card.ud_qpn;
    wr.wr.ud.remote_qkey = GDR_VERBS_UD_QKEY;
    if (ibv_post_send(am->ud, &wr, &bad) != 0)
        return fail(am, "sending a connection request to rank %d failed: %s", peer,
                    strerror(errno));
    am->ud_free = b->next_free;
    am->stats.handshakes_sent++;
    return 0;
}

static gdr_verbs_qp_caps_t rc_caps(const gdr_verbs_am_t *am)
{
    gdr_verbs_qp_caps_t caps = {
        .max_send_wr = am->qp_send_wr,
        .max_inline = 128,
        .max_send_sge = 16,     /* one-sided gathers and scatters (gdr_verbs_rma_writev) */
    };
    return caps;
}

/* peer's RC queue pair, in INIT, its receives from the shared queue (grown for it). */
static int make_qp(gdr_verbs_am_t *am, int peer)
{
    ep_t *ep = &am->eps[peer];
    char why[256];
    if (grow_cq(am) != 0)
        return -1;
    gdr_verbs_qp_caps_t c = rc_caps(am);
    ep->qp = gdr_verbs_qp_create(am->dev, am->cq, am->srq, &c, why, sizeof(why));
    if (ep->qp == NULL)
        return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d: %s", peer, why);
    if (am->nactive == 0 || c.max_inline < am->max_inline)
        am->max_inline = c.max_inline;
    if (c.max_send_sge < am->max_sge)
        am->max_sge = c.max_send_sge;
    if (add_active(am, peer, ep->qp->qp_num) != 0)
        return -1;
    return grow_srq(am);
}

/* Carries out what the handshake asks for. */
static int conn_do(gdr_verbs_am_t *am, int peer, unsigned todo)
{
    ep_t *ep = &am->eps[peer];
    char why[256];
    if ((todo & GDR_CONN_DO_CREATE_QP) && make_qp(am, peer) != 0)
        return -1;
    if ((todo & GDR_CONN_DO_CREATE_QP) && !(todo & GDR_CONN_DO_READY))
        am->connecting++;
    if ((todo & GDR_CONN_DO_CONNECT_QP)
        && gdr_verbs_qp_connect(ep->qp, am->dev, &ep->card, ep->conn.remote_qpn,
                                am->cfg.qp_timeout, why, sizeof(why)) != 0)
        return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d: %s", peer, why);
    if ((todo & GDR_CONN_DO_SEND_REQ) && ud_send(am, peer, GDR_CONN_MSG_REQ) != 0)
        return -1;
    if ((todo & GDR_CONN_DO_SEND_REP) && ud_send(am, peer, GDR_CONN_MSG_REP) != 0)
        return -1;
    if ((todo & GDR_CONN_DO_SEND_RTU) && ud_send(am, peer, GDR_CONN_MSG_RTU) != 0)
        return -1;
    if (todo & GDR_CONN_DO_READY) {
        ep->connected = 1;
        am->connecting--;
        am->stats.connections++;
    }
    if (todo & GDR_CONN_DO_FAIL) {
        am->connecting--;
        if (is_foreign(am, peer)) {
            ep->failed = 1;
            return foreign_lost(am, peer, ep->conn.why);
        }
        /* any other address failure failed the peer at once, and a peer's datagrams are
         * answered only once its address resolved: no address handle means unresolved */
        if (ep->ah == NULL)
            return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d failed: its address "
                                          "did not resolve within %u s (%s: no ARP or "
                                          "neighbour answer; check that its interface is up "
                                          "and reachable from here, or raise "
                                          "MPIR_CVAR_CH4_GDR_CONNECT_TIMEOUT)", peer,
                                          am->cfg.connect_timeout_ms / 1000, am->dev->name);
        return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d failed: %s within %u s "
                                      "(is it alive, and calling MPI?  Raise "
                                      "MPIR_CVAR_CH4_GDR_CONNECT_TIMEOUT if ranks compute "
                                      "that long without MPI calls)", peer, ep->conn.why,
                                      am->cfg.connect_timeout_ms / 1000);
    }
    return 0;
}

/* The loopback QP: connected to itself, no handshake (one-sided atomics on our own
 * window; messages to ourselves too, if any). */
static int connect_self(gdr_verbs_am_t *am)
{
    ep_t *ep = &am->eps[am->rank];
    char why[256];
    if (make_qp(am, am->rank) != 0)
        return -1;
    if (gdr_verbs_qp_connect(ep->qp, am->dev, &ep->card, ep->qp->qp_num, am->cfg.qp_timeout,
                             why, sizeof(why)) != 0)
        return gdr_verbs_am_fail_peer(am, am->rank, "the loopback queue pair: %s", why);
    ep->conn.state = GDR_CONN_READY;
    ep->connected = 1;
    return 0;
}

int gdr_verbs_am_want_qp(gdr_verbs_am_t *am, int peer)
{
    if (peer < 0 || peer >= am->npeers || !am->eps[peer].reach || !am->eps[peer].has_card) {
        return fail(am, "no path to rank %d through %s for a queue pair", peer, am->dev->name);
    }
    ep_t *ep = &am->eps[peer];
    if (ep->failed || am->failed)
        return -1;
    if (ep->connected)
        return 1;
    if (peer == am->rank)
        return connect_self(am) == 0 ? 1 : -1;
    if (ep->conn.state == GDR_CONN_IDLE && conn_do(am, peer, gdr_verbs_conn_start(&ep->conn,
                                                                                now_ns())) != 0)
        return -1;
    return ep->connected;
}

/* A handshake datagram arrived (after the GRH): checked, then handed to its peer's
 * handshake.  Strays (another job, a garbled datagram) are dropped. */
static int on_ud_recv(gdr_verbs_am_t *am, ud_buf_t *b, const struct ibv_wc *wc)
{
    gdr_verbs_conn_msg_t m;
    int rc = 0;
    int peer = -1;
    if (wc->byte_len >= UD_GRH_BYTES
        && gdr_verbs_conn_msg_decode(b->addr + UD_GRH_BYTES, wc->byte_len - UD_GRH_BYTES,
                                     &m) == 0) {
        if (m.job == am->job && m.nranks == (uint32_t) am->nranks
            && m.src_rank < (uint32_t) am->nranks && (int) m.src_rank != am->rank)
            peer = same_job_from_msg(am, &m);
        else if (m.job != am->job && am->job != 0)
            peer = foreign_from_msg(am, &m);
    }
    if (peer >= 0) {
        ep_t *ep = &am->eps[peer];
        /* every answer needs the peer's address, and the queue pair's connection its MAC:
         * while that does not resolve the datagram is dropped, and the peer repeats it */
        int have_ah = 0;
        if (ep->reach && ep->has_card && ep->card.ud_qpn == wc->src_qp && !ep->failed)
            have_ah = peer_ah(am, peer);
        if (have_ah < 0)
            rc = -1;
        else if (have_ah > 0)
            rc = conn_do(am, peer, gdr_verbs_conn_on_msg(&ep->conn, m.kind, m.qpn, now_ns()));
    }
    if (rc == 0)
        rc = ud_post_recv(am, b);
    return rc;
}

/* Retransmissions and timeouts of the handshakes under way.  The clock is read every
 * few calls only: under User-Mode Linux (maint/rxe) a clock read is a system call. */
static int conn_timers(gdr_verbs_am_t *am)
{
    if (am->connecting == 0 || ++am->timer_polls < 64)
        return 0;
    am->timer_polls = 0;
    int64_t now = now_ns(), timeout = (int64_t) am->cfg.connect_timeout_ms * 1000000LL;
    for (int k = 0; k < am->nactive; k++) {
        int peer = am->active[k];
        ep_t *ep = &am->eps[peer];
        if (ep->failed || ep->connected)
            continue;
        if (conn_do(am, peer, gdr_verbs_conn_on_timer(&ep->conn, now, timeout)) != 0)
            return -1;
    }
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
    if (rma_held_out(am, peer) != 0 || ibv_post_send(am->eps[peer].qp, wr, &bad) != 0) {
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
    if (ep->connected && ep->q_head == NULL && gdr_verbs_credit_can_send_data(&ep->credit)
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

/* A message for peer may be queued: the peer is reachable, and its connection is made
 * or under way (started here: the message waits for it). */
static int check_peer(gdr_verbs_am_t *am, int peer)
{
    if (peer < 0 || peer >= am->npeers || !am->eps[peer].reach || !am->eps[peer].has_card)
        return fail(am, "no path to rank %d through %s", peer, am->dev->name);
    if (am->eps[peer].failed && is_foreign(am, peer)) {
        /* the channel stays up: only this process of another job is lost */
        snprintf(am->error, sizeof(am->error), "the connection to rank %u of job %016llx "
                 "(another job: spawned, or connected by MPI_Comm_connect/accept) has failed "
                 "earlier: it ended or its network path broke", am->eps[peer].card.rank,
                 (unsigned long long) am->eps[peer].card.job);
        return -1;
    }
    if (am->eps[peer].failed)
        return fail(am, "the connection to rank %d has failed earlier", peer);
    return gdr_verbs_am_want_qp(am, peer) < 0 ? -1 : 0;
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
                                    const uint8_t *reach, const gdr_verbs_am_config_t *cfg,
                                    const gdr_verbs_am_ops_t *ops, void *ctx,
                                    char *why, size_t why_len)
{
    gdr_verbs_am_t *am = calloc(1, sizeof(*am));

    if (am == NULL) {
        snprintf(why, why_len, "out of memory creating the AM channel");
        return NULL;
    }
    am->dev = dev;
    am->rank = rank;
    am->nranks = nranks;
    am->npeers = nranks;
    clock_gettime(CLOCK_MONOTONIC, &am->quiet_since);
    am->last_look = am->quiet_since;
    am->clock_every = IDLE_CLOCK_EVERY_FIRST;
    am->cfg = *cfg;
    am->ops = *ops;
    am->ctx = ctx;
    /* room for the processes of other jobs too, never moved: in-flight probes point
     * into it (untouched room costs no memory) */
    am->eps = calloc((size_t) nranks + GDR_VERBS_AM_FOREIGN_MAX, sizeof(ep_t));
    if (am->eps == NULL)
        goto oom;
    for (int i = 0; i < nranks; i++)
        ep_init(am, i, reach[i]);
    am->qp_send_wr = cfg->recv_depth + READ_CHUNKS_MAX * cfg->max_reads + 8 + cfg->rma_depth;
    am->max_sge = 16;

    /* the shared receive queue: buffers are added as peers connect, up to srq_cap */
    uint32_t dev_srq = dev->attr.max_srq_wr > 0 ? (uint32_t) dev->attr.max_srq_wr : 0;
    if (dev->attr.max_srq == 0 || dev_srq == 0) {
        snprintf(why, why_len, "%s has no shared receive queues, which gdr needs", dev->name);
        goto fail;
    }
    am->srq_cap = cfg->srq_depth > 0 ? cfg->srq_depth : SRQ_DEPTH_DEFAULT;
    if (am->srq_cap > dev_srq)
        am->srq_cap = dev_srq;
    /* one peer alone never meets a receiver-not-ready: its credits fit (Soft-RoCE pays
     * ~10 ms and a go-back-N resend per RNR NAK, measured) */
    if (am->srq_cap < cfg->recv_depth)
        am->srq_cap = cfg->recv_depth < dev_srq ? cfg->recv_depth : dev_srq;
    struct ibv_srq_init_attr sattr = {.attr = {.max_wr = am->srq_cap,.max_sge = 1 } };
    am->srq = ibv_create_srq(dev->pd, &sattr);
    if (am->srq == NULL) {
        snprintf(why, why_len, "ibv_create_srq(%s, %u buffers) failed: %s (lower "
                 "MPIR_CVAR_CH4_GDR_SRQ_DEPTH)", dev->name, am->srq_cap, strerror(errno));
        goto fail;
    }

    /* the completion queue starts with room for the handshake and the bounce buffers;
     * each QP made adds room for its sends and receives (grow_cq) */
    am->cq_need = UD_RECV_COUNT + UD_SEND_COUNT + cfg->send_slots + 16;
    uint32_t cqe = 2 * am->cq_need;
    if (cqe > (uint32_t) dev->attr.max_cqe)
        cqe = (uint32_t) dev->attr.max_cqe;
    /* without a completion channel the channel still works; gdr_verbs_am_wait() then
     * only yields */
    am->events = ibv_create_comp_channel(dev->context);
    am->cq = ibv_create_cq(dev->context, (int) cqe, NULL, am->events, 0);
    if (am->cq == NULL) {
        snprintf(why, why_len, "ibv_create_cq(%s, %u entries) failed: %s", dev->name, cqe,
                 strerror(errno));
        goto fail;
    }
    am->cq_cap = (uint32_t) am->cq->cqe;

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
    am->stats.pinned_bytes += send_bytes;
    for (uint32_t i = 0; i < cfg->send_slots; i++) {
        am->slots[i].kind = WR_SEND;
        am->slots[i].addr = am->send_mem + (size_t) i * cfg->buf_size;
        am->slots[i].next_free = am->free_slots;
        am->free_slots = &am->slots[i];
    }

    gdr_verbs_rcache_ops_t rops = {.reg = reg_for_read,.dereg = dereg_mr };
    am->rcache = gdr_verbs_rcache_create(&rops, dev, RCACHE_UNUSED_MAX, cfg->reg_cache_off);
    if (am->rcache == NULL)
        goto oom;
    if (gdr_verbs_memhooks_attach(am->rcache) != 0) {
        snprintf(why, why_len, "too many registration caches in this process");
        goto fail;
    }
    if (ud_start(am, why, why_len) != 0)
        goto fail;
    return am;

  oom:
    snprintf(why, why_len, "out of memory creating the AM channel for %d ranks", nranks);
  fail:
    gdr_verbs_am_destroy(am);
    return NULL;
}

size_t gdr_verbs_am_card_size(const gdr_verbs_am_t *am)
{
    (void) am;
    return GDR_VERBS_CARD_BYTES;
}

void gdr_verbs_am_card(const gdr_verbs_am_t *am, void *buf)
{
    gdr_verbs_card_t card = {
        .port_num = am->dev->port_num,.link_layer = (uint8_t) am->dev->link_layer,
        .mtu = (uint8_t) am->dev->active_mtu,.lid = am->dev->lid,
        .ud_qpn = am->ud->qp_num,.nranks = (uint32_t) am->nranks,.rank = (uint32_t) am->rank,
        .job = am->job
    };
    memcpy(card.gid, am->dev->gid, 16);
    gdr_verbs_card_encode(&card, buf);
}

int gdr_verbs_am_add_peer(gdr_verbs_am_t *am, int peer, const void *buf, size_t len)
{
    if (peer < 0 || peer >= am->nranks || !am->eps[peer].reach)
        return fail(am, "rank %d is not reached through %s", peer, am->dev->name);
    if (gdr_verbs_card_decode(buf, len, (uint32_t) am->nranks, &am->eps[peer].card) != 0)
        return fail(am, "the business card of rank %d is not a gdr card (version %d) for %d "
                    "ranks (mixed builds?)", peer, GDR_VERBS_CARD_VERSION, am->nranks);
    am->eps[peer].has_card = 1;
    return 0;
}

int gdr_verbs_am_connect_peer(gdr_verbs_am_t *am, int peer)
{
    return gdr_verbs_am_want_qp(am, peer);
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
    /* the common case first (an MPI_Send's whole cost is counted: bench/opcost): a healthy
     * connected peer with a credit, a free bounce buffer and nothing queued before this
     * message; built in the buffer and posted, as send_simple would, without its checks */
    if (peer >= 0 && peer < am->npeers && !am->failed) {
        ep_t *ep = &am->eps[peer];
        size_t len = gdr_verbs_wire_size(GDR_VERBS_MSG_EAGER, am_hdr_sz, data_sz);
        if (ep->connected && !ep->failed && ep->q_head == NULL && am->free_slots != NULL
            && len <= am->cfg.buf_size && gdr_verbs_credit_can_send_data(&ep->credit)) {
            send_slot_t *slot = take_slot(am);
            size_t at = gdr_verbs_wire_put_hdr(slot->addr, len, GDR_VERBS_MSG_EAGER, handler_id,
                                               0, am_hdr, am_hdr_sz, data_sz);
            if (data_sz > 0)
                memcpy(slot->addr + at, data, data_sz);
            am->stats.eager_sent++;
            return post_built(am, peer, slot, len);
        }
    }
    if (check_peer(am, peer) != 0)
        return -1;
    am->stats.eager_sent++;
    return send_simple(am, peer, GDR_VERBS_MSG_EAGER, handler_id, am_hdr, am_hdr_sz, data,
                       data_sz, data_sz);
}

int gdr_verbs_am_send_rndv(gdr_verbs_am_t *am, int peer, uint32_t handler_id,
                           const void *am_hdr, size_t am_hdr_sz, const void *data,
                           size_t data_sz, uint64_t device_id, uint64_t cookie)
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
    rs->reg = gdr_verbs_rcache_get_tagged(am->rcache, data, data_sz, device_id);
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
 * payload's reads; the first call takes a read slot, and a landing buffer when the
 * payload has no destination of the caller's. */
static int post_read(gdr_verbs_am_t *am, rndv_read_t *rr)
{
    ep_t *ep = &am->eps[rr->peer];
    uint64_t chunk = read_chunk(am);

    if (!rr->started) {
        if (rr->nseg == 0) {
            rr->land = landing_get(am, (size_t) rr->size);
            if (rr->land == NULL)
                return fail(am, "no %llu-byte landing buffer for a payload from rank %d: %s "
                            "(out of memory, or raise ulimit -l)",
                            (unsigned long long) rr->size, rr->peer, strerror(errno));
            rr->dst[0] = (read_seg_t) {.addr = rr->land->addr,.len = rr->size,
                .lkey = rr->land->mr->lkey };
            rr->nseg = 1;
        }
        rr->started = 1;
        ep->reads_in_flight++;
    }
    for (int k = 0; k < READ_CHUNKS_MAX && rr->posted < rr->size; k++) {
        read_seg_t *d = &rr->dst[rr->seg];
        uint64_t n = d->len - rr->seg_off < chunk ? d->len - rr->seg_off : chunk;
        struct ibv_sge sge = {
            .addr = (uintptr_t) (d->addr + rr->seg_off),.length = (uint32_t) n,.lkey = d->lkey
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
        if (rma_held_out(am, rr->peer) != 0 || ibv_post_send(ep->qp, &wr, &bad) != 0) {
            ep->failed = 1;
            return fail(am, "RDMA READ of %llu bytes from rank %d failed to post: %s",
                        (unsigned long long) rr->size, rr->peer, strerror(errno));
        }
        rr->posted += n;
        rr->seg_off += n;
        if (rr->seg_off == d->len) {
            rr->seg++;
            rr->seg_off = 0;
        }
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

static void pop_inbound(ep_t *ep)
{
    ep->in_head = ep->in_head->next;
    if (ep->in_head == NULL)
        ep->in_tail = NULL;
}

static void taken_link(gdr_verbs_am_t *am, rndv_read_t *rr)
{
    rr->t_prev = NULL;
    rr->t_next = am->taken;
    if (am->taken != NULL)
        am->taken->t_prev = rr;
    am->taken = rr;
}

static void taken_unlink(gdr_verbs_am_t *am, rndv_read_t *rr)
{
    if (rr->t_prev != NULL)
        rr->t_prev->t_next = rr->t_next;
    else
        am->taken = rr->t_next;
    if (rr->t_next != NULL)
        rr->t_next->t_prev = rr->t_prev;
}

/* Gives back what a payload holds (registrations, landing buffer) and frees it. */
static void read_free(gdr_verbs_am_t *am, rndv_read_t *rr, int keep_landing)
{
    for (uint32_t k = 0; k < rr->nseg; k++) {
        if (rr->dst[k].reg != NULL)
            gdr_verbs_rcache_put(am->rcache, rr->dst[k].reg);
    }
    if (rr->land != NULL) {
        if (keep_landing)
            landing_put(am, rr->land);
        else
            landing_release(rr->land);
    }
    free(rr->am_hdr);
    free(rr);
}

static int read_complete(gdr_verbs_am_t *am, rndv_read_t *rr);

/* Starts reading a payload, or queues it for one of its peer's read slots. */
static int queue_read(gdr_verbs_am_t *am, rndv_read_t *rr)
{
    ep_t *ep = &am->eps[rr->peer];
    if (rr->size == 0)
        return read_complete(am, rr);   /* taken into memory that holds none of it */
    if (ep->reads_in_flight < am->cfg.max_reads)
        return post_read(am, rr);
    rr->next = NULL;
    if (ep->r_tail)
        ep->r_tail->next = rr;
    else
        ep->r_head = rr;
    ep->r_tail = rr;
    return 0;
}

/* Offers a rendezvous message to ops->rts in its turn: 1 taken (the header was handed
 * up, its payload goes where read_into said), 0 declined, -1 the channel failed. */
static int offer(gdr_verbs_am_t *am, rndv_read_t *rr, const void *am_hdr, size_t am_hdr_sz)
{
    am->offering = rr;
    int r = am->ops.rts(am->ctx, rr->peer, rr->handler_id, am_hdr, am_hdr_sz,
                        (size_t) rr->data_sz, (gdr_verbs_am_rts_t *) rr);
    am->offering = NULL;
    if (am->failed)
        return -1;
    if ((r == 1) != (rr->placed != 0))
        return fail(am, "a rendezvous message from rank %d was %s without saying where its "
                    "payload goes (gdr_verbs_am_read_into once, inside ops->rts)", rr->peer,
                    r == 1 ? "taken" : "declined");
    if (r == 1) {
        rr->taken = 1;
        taken_link(am, rr);
    }
    return r == 1;
}

int gdr_verbs_am_read_into(gdr_verbs_am_t *am, gdr_verbs_am_rts_t *rts, const struct iovec *segs,
                           int nsegs, uint64_t device_id, uint64_t cookie)
{
    rndv_read_t *rr = (rndv_read_t *) rts;
    if (rr == NULL || rr != am->offering || rr->placed || nsegs < 0
        || nsegs > GDR_VERBS_AM_READ_SEGS_MAX)
        return fail(am, "gdr_verbs_am_read_into: not inside ops->rts for this message, "
                    "called twice, or %d pieces (at most %d)", nsegs,
                    GDR_VERBS_AM_READ_SEGS_MAX);
    rr->placed = 1;
    rr->cookie = cookie;
    rr->size = rr->data_sz;
    if (nsegs == 0)
        return 0;               /* a landing buffer, at the first read */
    uint64_t total = 0;
    for (int k = 0; k < nsegs && total < rr->data_sz; k++) {
        uint64_t n = segs[k].iov_len;
        if (n > rr->data_sz - total)
            n = rr->data_sz - total;
        if (n == 0)
            continue;
        gdr_verbs_rcache_entry_t *e = gdr_verbs_rcache_get_tagged(am->rcache, segs[k].iov_base,
                                                                  (size_t) n, device_id);
        if (e == NULL) {
            /* memory the NIC will not take (locked-memory limit, a mapping it cannot pin):
             * the payload lands instead, and read_done hands it over to copy */
            for (uint32_t j = 0; j < rr->nseg; j++)
                gdr_verbs_rcache_put(am->rcache, rr->dst[j].reg);
            rr->nseg = 0;
            am->stats.rndv_reg_fallbacks++;
            return 0;
        }
        rr->dst[rr->nseg++] = (read_seg_t) {.addr = segs[k].iov_base,.len = n,
            .lkey = e->lkey,.reg = e };
        total += n;
    }
    rr->size = total;
    return 0;
}

/* Hands up, in order, every message at the head of the queue that is complete, and
 * offers each rendezvous message that waits for its turn at ops->rts. */
static int drain_inbound(gdr_verbs_am_t *am, int peer)
{
    ep_t *ep = &am->eps[peer];
    while (ep->in_head != NULL) {
        inbound_t *in = ep->in_head;
        rndv_read_t *rr = in->rr;
        if (rr != NULL && rr->offer) {
            rr->offer = 0;
            int r = offer(am, rr, rr->am_hdr, rr->am_hdr_sz);
            if (r < 0)
                return -1;
            if (r == 0) {
                /* declined: it lands now, and holds the queue until it has */
                if (queue_read(am, rr) != 0)
                    return -1;
                break;
            }
            pop_inbound(ep);
            free(in);
            free(rr->am_hdr);
            rr->am_hdr = NULL;
            if (queue_read(am, rr) != 0)
                return -1;
            continue;
        }
        if (rr != NULL && !rr->done)
            break;
        pop_inbound(ep);
        if (rr != NULL) {
            am->ops.deliver(am->ctx, peer, rr->handler_id, rr->am_hdr, rr->am_hdr_sz,
                            rr->land->addr, (size_t) rr->size);
            read_free(am, rr, 1);
        } else {
            am->ops.deliver(am->ctx, peer, in->handler_id, in->am_hdr, in->am_hdr_sz,
                            in->am_hdr + gdr_verbs_wire_pad8(in->am_hdr_sz), in->data_sz);
            free(in->am_hdr);
        }
        free(in);
    }
    return 0;
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
    rr->data_sz = rr->size = m->data_sz;
    am->reads_active++;
    int wanted = am->ops.rts != NULL
        && (am->ops.rts_wanted == NULL || am->ops.rts_wanted(am->ctx, m->handler_id));
    if (wanted && ep->in_head == NULL) {
        /* its turn already: the upper layer says where the payload goes before any of it
         * is read */
        int r = offer(am, rr, m->am_hdr, m->am_hdr_sz);
        if (r < 0) {
            am->reads_active--;
            read_free(am, rr, 0);
            return -1;
        }
        if (r == 1)
            return queue_read(am, rr);
        wanted = 0;
    }
    rr->am_hdr_sz = m->am_hdr_sz;
    rr->am_hdr = malloc(m->am_hdr_sz ? m->am_hdr_sz : 1);
    inbound_t *in = calloc(1, sizeof(*in));
    if (rr->am_hdr == NULL || in == NULL) {
        am->reads_active--;
        free(in);
        free(rr->am_hdr);
        free(rr);
        return fail(am, "out of memory receiving from rank %d", peer);
    }
    if (m->am_hdr_sz)
        memcpy(rr->am_hdr, m->am_hdr, m->am_hdr_sz);
    in->rr = rr;
    append_inbound(ep, in);
    if (wanted) {
        rr->offer = 1;          /* unread until its turn: drain_inbound offers it */
        return 0;
    }
    /* the landing buffer is allocated when the read starts: thousands of waiting
     * announcements must not hold thousands of payload buffers */
    return queue_read(am, rr);
}

/* The whole payload is in: the sender is told, the peer's next waiting read starts, and
 * the payload goes up (taken: read_done; else delivered in order). */
static int read_complete(gdr_verbs_am_t *am, rndv_read_t *rr)
{
    ep_t *ep = &am->eps[rr->peer];
    gdr_verbs_wire_fin_t fin = {.cookie = rr->rts.cookie };
    int peer = rr->peer, rc;

    if (rr->started)
        ep->reads_in_flight--;
    am->reads_active--;
    am->stats.rndv_recv++;
    if (rr->land != NULL)
        am->stats.rndv_copied_bytes += rr->size;
    else
        am->stats.rndv_zcopy_bytes += rr->size;
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
    if (rr->taken) {
        taken_unlink(am, rr);
        am->ops.read_done(am->ctx, rr->cookie, rr->land != NULL ? rr->land->addr : NULL,
                          (size_t) rr->size);
        read_free(am, rr, 1);
        return rc;
    }
    rr->done = 1;
    if (drain_inbound(am, peer) != 0)
        rc = -1;
    return rc;
}

static int finish_read(gdr_verbs_am_t *am, rndv_read_t *rr)
{
    if (rr->posted < rr->size)
        return post_read(am, rr);       /* a batch landed; reads are ordered: next batch */
    return read_complete(am, rr);
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

static int on_recv(gdr_verbs_am_t *am, int peer, recv_buf_t *rb, uint32_t byte_len)
{
    gdr_verbs_msg_t m;
    ep_t *ep = &am->eps[peer];
    gdr_verbs_wire_status_t st = gdr_verbs_wire_parse(rb->addr, byte_len, &m);
    int rc = 0;

    if (st != GDR_VERBS_WIRE_OK)
        return fail(am, "rank %d sent a malformed message (%u bytes): %s", peer, byte_len,
                    gdr_verbs_wire_str(st));
    /* a message over the QP: the peer's side is up, if we did not know yet */
    if (!ep->connected && conn_do(am, peer, gdr_verbs_conn_on_traffic(&ep->conn)) != 0)
        return -1;
    gdr_verbs_credit_on_returned(&ep->credit, m.credits);
    switch (m.kind) {
        case GDR_VERBS_MSG_EAGER:
            am->stats.eager_recv++;
            if (ep->in_head != NULL)
                rc = defer_eager(am, peer, &m);
            else
                am->ops.deliver(am->ctx, peer, m.handler_id, m.am_hdr, m.am_hdr_sz, m.data,
                                (size_t) m.data_sz);
            break;
        case GDR_VERBS_MSG_RTS:
            rc = start_read(am, peer, &m);
            break;
        case GDR_VERBS_MSG_FIN:
            rc = finish_send(am, peer, m.cookie);
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
            /* a flushed receive of a QP in error names that QP too */
            peer = peer_of_qp(am, wc->qp_num);
            if (peer < 0)
                return fail(am, "a message arrived on queue pair %u, which is no peer's",
                            wc->qp_num);
            break;
        case WR_UD_RECV:
            if (wc->status != IBV_WC_SUCCESS)
                return fail(am, "receiving a connection request on %s failed: %s",
                            am->dev->name, ibv_wc_status_str(wc->status));
            return on_ud_recv(am, (ud_buf_t *) (uintptr_t) wc->wr_id, wc);
        case WR_UD_SEND:{
                ud_buf_t *b = (ud_buf_t *) (uintptr_t) wc->wr_id;
                b->next_free = am->ud_free;
                am->ud_free = b;
                if (wc->status != IBV_WC_SUCCESS)
                    return fail(am, "sending a connection request on %s failed: %s",
                                am->dev->name, ibv_wc_status_str(wc->status));
                return 0;
            }
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
        if (is_foreign(am, peer))
            return foreign_lost(am, peer, ibv_wc_status_str(wc->status));
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
        return on_recv(am, peer, (recv_buf_t *) (uintptr_t) wc->wr_id, wc->byte_len);
    if (kind == WR_READ)
        return finish_read(am, (rndv_read_t *) (uintptr_t) wc->wr_id);
    return 0;
}

static long long ns_between(const struct timespec *from, const struct timespec *to)
{
    return (to->tv_sec - from->tv_sec) * 1000000000LL + (to->tv_nsec - from->tv_nsec);
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
    long long since = ns_between(&ep->probe.last, &now);
    if (since < PROBE_INTERVAL_NS)
        return 0;
    ep->probe.last = now;
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t) &ep->probe;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (rma_held_out(am, peer) != 0 || ibv_post_send(ep->qp, &wr, &bad) != 0) {
        ep->failed = 1;
        if (is_foreign(am, peer))
            return foreign_lost(am, peer, strerror(errno));
        return fail(am, "probing rank %d failed: %s (queue pair in error?)", peer, strerror(errno));
    }
    ep->probe.in_flight = 1;
    am->stats.probes++;
    return 0;
}

/* A look at the clock now and then while nothing completes: after IDLE_PROBE_NS of
 * quiet, probe every connected peer once (a failed probe fails the channel, naming
 * the peer), then stay quiet as long again.  Returns the time read in *now. */
static int idle_look(gdr_verbs_am_t *am, struct timespec *now_out)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    am->stats.clock_reads++;
    *now_out = now;
    am->quiet_polls = 0;
    if (am->heard) {
        am->heard = 0;
        am->quiet_since = now;
        return 0;
    }
    long long quiet = ns_between(&am->quiet_since, &now);
    if (quiet < IDLE_PROBE_NS)
        return 0;
    am->quiet_since = now;
    for (int k = 0; k < am->nactive; k++) {
        int i = am->active[k];
        ep_t *ep = &am->eps[i];
        if (i != am->rank && ep->connected && !ep->failed && maybe_probe(am, i) != 0)
            return -1;
    }
    return 0;
}

/* The busy poller's look: the next one comes after twice or half as many empty polls
 * when this one came much sooner or later than IDLE_LOOK_NS after the last. */
static int busy_look(gdr_verbs_am_t *am)
{
    struct timespec now;
    int rc = idle_look(am, &now);
    long long since = ns_between(&am->last_look, &now);
    am->last_look = now;
    if (since < IDLE_LOOK_NS / 2 && am->clock_every < IDLE_CLOCK_EVERY_MOST)
        am->clock_every *= 2;
    else if (since > IDLE_LOOK_NS * 2 && am->clock_every > IDLE_CLOCK_EVERY_LEAST)
        am->clock_every /= 2;
    return rc;
}

/* Queued messages go out as credits and bounce buffers allow; then owed credits. */
static int flush(gdr_verbs_am_t *am, int *progressed)
{
    for (int k = 0; k < am->nactive; k++) {
        int i = am->active[k];
        ep_t *ep = &am->eps[i];
        if (!ep->connected || ep->failed)
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
    if (rma_held_out(am, -1) != 0)
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
        if (++am->quiet_polls >= am->clock_every && busy_look(am) != 0)
            return -1;
    }
    if (conn_timers(am) != 0)
        return -1;
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
    } else if (rc == 0) {
        struct timespec now;
        if (idle_look(am, &now) != 0)
            return -1;          /* slept its whole timeout: as quiet as it gets */
    }
    am->stats.sleeps++;
    return gdr_verbs_am_progress(am, progressed);
}

void gdr_verbs_am_attach_rma(gdr_verbs_am_t *am, gdr_verbs_am_rma_cb_t cb,
                             gdr_verbs_am_rma_held_cb_t held, void *ctx)
{
    am->rma_cb = cb;
    am->rma_held = held;
    am->rma_ctx = ctx;
}

struct ibv_qp *gdr_verbs_am_qp(gdr_verbs_am_t *am, int peer)
{
    if (peer < 0 || peer >= am->npeers || am->eps[peer].failed || !am->eps[peer].connected)
        return NULL;
    return am->eps[peer].qp;
}

int gdr_verbs_am_reaches(gdr_verbs_am_t *am, int peer)
{
    return peer >= 0 && peer < am->npeers && am->eps[peer].reach && am->eps[peer].has_card
        && !am->eps[peer].failed && !am->eps[peer].dynamic_only;
}

int gdr_verbs_am_connected_peers(const gdr_verbs_am_t *am)
{
    return (int) am->stats.connections;
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

void gdr_verbs_am_reg_cache_stats(gdr_verbs_am_t *am, gdr_verbs_rcache_stats_t *st)
{
    gdr_verbs_rcache_get_stats(am->rcache, st);
}

int gdr_verbs_am_fail_peer(gdr_verbs_am_t *am, int peer, const char *fmt, ...)
{
    va_list ap;
    if (peer >= 0 && peer < am->npeers)
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
    for (int i = 0; am->eps != NULL && i < am->npeers; i++) {
        ep_t *ep = &am->eps[i];
        if (ep->qp != NULL)
            ibv_destroy_qp(ep->qp);
        if (ep->ah != NULL)
            ibv_destroy_ah(ep->ah);
        while (ep->q_head != NULL) {
            pending_msg_t *pm = ep->q_head;
            ep->q_head = pm->next;
            free(pm);
        }
        /* every rendezvous read, waiting or in flight, has an inbound entry, or is in
         * am->taken */
        while (ep->in_head != NULL) {
            inbound_t *in = ep->in_head;
            ep->in_head = in->next;
            if (in->rr != NULL)
                read_free(am, in->rr, 0);
            free(in->am_hdr);
            free(in);
        }
    }
    while (am->taken != NULL) {
        rndv_read_t *rr = am->taken;
        taken_unlink(am, rr);
        read_free(am, rr, 0);
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
    if (am->ud != NULL)
        ibv_destroy_qp(am->ud);
    while (am->chunks != NULL) {
        recv_chunk_t *c = am->chunks;
        am->chunks = c->next;
        ibv_dereg_mr(c->mr);
        free(c->mem);
        free(c->bufs);
        free(c);
    }
    if (am->srq != NULL)
        ibv_destroy_srq(am->srq);   /* after every QP that used it */
    if (am->ud_mr != NULL)
        ibv_dereg_mr(am->ud_mr);
    free(am->ud_mem);
    if (am->cq != NULL)
        ibv_destroy_cq(am->cq);    /* every event was acknowledged in gdr_verbs_am_wait() */
    if (am->events != NULL)
        ibv_destroy_comp_channel(am->events);
    if (am->send_mr != NULL)
        ibv_dereg_mr(am->send_mr);
    free(am->send_mem);
    free(am->active);
    free(am->qpmap);
    free(am->slots);
    free(am->eps);
    free(am);
}
