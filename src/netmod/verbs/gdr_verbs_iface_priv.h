/* The AM channel's state, and the functions the files that make it up share with each
 * other: gdr_verbs_iface.c (make, unmake, accessors) and one file a concern beside it,
 * listed below with what each offers.  Not for gdr_verbs_rma.c (gdr_verbs_am_internal.h)
 * nor the netmod (gdr_verbs_am.h).
 *
 * The files call each other without loops (maint/check-layers): fail, srq, qpmap,
 * landing and peers call none of the others; handshake calls srq, qpmap and peers; idle
 * calls peers; eager calls handshake and idle; rndv calls eager and landing; progress and
 * iface sit on top. */
#ifndef GDR_VERBS_IFACE_PRIV_H
#define GDR_VERBS_IFACE_PRIV_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <infiniband/verbs.h>
#include "gdr_verbs_am.h"
#include "gdr_verbs_am_internal.h"
#include "gdr_verbs_card.h"
#include "gdr_verbs_conn.h"
#include "gdr_verbs_credit.h"
#include "gdr_verbs_device.h"
#include "gdr_verbs_rcache.h"
#include "gdr_verbs_wire.h"

#define READ_CHUNKS_MAX 4      /* read work requests in flight per payload */

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

struct gdr_verbs_iface {
    gdr_verbs_am_hot_t hot;     /* first: read inline (gdr_verbs_am_internal.h) */
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
    send_slot_t *reserved;      /* the message between _eager_reserve and _eager_post */
    rndv_send_t *rsend;
    uint32_t rsend_cap;
    gdr_verbs_rcache_t *rcache; /* registrations of rendezvous send buffers and of the
                                 * receive buffers payloads are read into */
    rndv_read_t *offering;      /* the payload ops->rts is deciding about now */
    rndv_read_t *taken;         /* payloads taken by ops->rts and not yet read */
    landing_t *landings;        /* idle landing buffers */
    size_t landing_bytes;
    uint32_t max_sge;           /* send gather entries every QP has */
    uint64_t queued;            /* messages in all ep queues */
    uint64_t reads_active;      /* rendezvous reads in flight or waiting, all peers */
    uint64_t rsend_active;
    gdr_verbs_am_stats_t stats;
    gdr_verbs_am_rma_cb_t rma_cb;       /* completions of one-sided work requests */
    gdr_verbs_am_rma_held_cb_t rma_held;        /* posts the ones it held back */
    const uint32_t *rma_held_count;     /* how many it holds (never NULL once attached) */
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

/* gdr_verbs_fail.c: the channel fails (fail() below, gdr_verbs_am_fail_peer) */
int gdr_verbs_iface_vfail(gdr_verbs_iface_t *am, const char *fmt, va_list ap);

/* Every change of a peer's connected or failed goes through these two, which keep the
 * ready table (gdr_verbs_am_qp) equal to "connected, and neither peer nor channel failed". */
static inline void ep_connected(gdr_verbs_iface_t *am, int peer)
{
    am->eps[peer].connected = 1;
    am->hot.ready_qp[peer] = am->failed || am->eps[peer].failed ? NULL : am->eps[peer].qp;
}

static inline void ep_failed(gdr_verbs_iface_t *am, int peer)
{
    am->eps[peer].failed = 1;
    am->hot.ready_qp[peer] = NULL;
}

/* Fails the channel with a printf-style message; returns -1. */
static inline int fail(gdr_verbs_iface_t *am, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gdr_verbs_iface_vfail(am, fmt, ap);
    va_end(ap);
    return -1;
}

/* The one-sided engine's held work requests to peer (-1: any) go first: they were
 * posted before what the channel posts now, or are what a poll may be waited for. */
static inline int rma_held_out(gdr_verbs_iface_t *am, int peer)
{
    return am->rma_held != NULL && *am->rma_held_count != 0 ? am->rma_held(am->rma_ctx, peer)
        : 0;
}

/* A process of another job (past the job's ranks). */
static inline int is_foreign(const gdr_verbs_iface_t *am, int peer)
{
    return peer >= am->nranks;
}

/* gdr_verbs_srq.c: receive buffers and completion-queue room, grown as peers connect */
int gdr_verbs_iface_post_recv(gdr_verbs_iface_t *am, recv_buf_t *rb);
int gdr_verbs_iface_grow_srq(gdr_verbs_iface_t *am);
int gdr_verbs_iface_grow_cq(gdr_verbs_iface_t *am);

/* gdr_verbs_qpmap.c: the peer of a local QP number; the peers that have a queue pair */
int gdr_verbs_iface_add_active(gdr_verbs_iface_t *am, int peer, uint32_t qpn);
int gdr_verbs_iface_peer_of_qp(const gdr_verbs_iface_t *am, uint32_t qpn);

/* gdr_verbs_peers.c: cards, this job's ranks and other jobs' processes */
void gdr_verbs_iface_ep_init(gdr_verbs_iface_t *am, int peer, int reach);
int gdr_verbs_iface_foreign_lost(gdr_verbs_iface_t *am, int peer, const char *why);
int gdr_verbs_iface_foreign_from_msg(gdr_verbs_iface_t *am, const gdr_verbs_conn_msg_t *m);
int gdr_verbs_iface_same_job_from_msg(gdr_verbs_iface_t *am, const gdr_verbs_conn_msg_t *m);

/* gdr_verbs_handshake.c: connecting peers (the UD queue pair, the handshake's steps) */
int gdr_verbs_iface_ud_start(gdr_verbs_iface_t *am, char *why, size_t why_len);
int gdr_verbs_iface_conn_do(gdr_verbs_iface_t *am, int peer, unsigned todo);
int gdr_verbs_iface_on_ud_recv(gdr_verbs_iface_t *am, ud_buf_t *b, const struct ibv_wc *wc);
int gdr_verbs_iface_conn_timers(gdr_verbs_iface_t *am);

/* gdr_verbs_eager.c: messages through send slots, paced by credits */
int gdr_verbs_iface_check_peer(gdr_verbs_iface_t *am, int peer);
int gdr_verbs_iface_send_simple(gdr_verbs_iface_t *am, int peer, gdr_verbs_msg_kind_t kind,
                                uint32_t handler, const void *am_hdr, size_t am_hdr_sz,
                                const void *body, size_t body_sz, uint64_t data_sz);
int gdr_verbs_iface_flush(gdr_verbs_iface_t *am, int *progressed);

/* gdr_verbs_rndv.c: rendezvous reads and in-order delivery */
void gdr_verbs_iface_taken_unlink(gdr_verbs_iface_t *am, rndv_read_t *rr);
void gdr_verbs_iface_read_free(gdr_verbs_iface_t *am, rndv_read_t *rr, int keep_landing);
int gdr_verbs_iface_defer_eager(gdr_verbs_iface_t *am, int peer, const gdr_verbs_msg_t *m);
int gdr_verbs_iface_start_read(gdr_verbs_iface_t *am, int peer, const gdr_verbs_msg_t *m);
int gdr_verbs_iface_finish_read(gdr_verbs_iface_t *am, rndv_read_t *rr);
int gdr_verbs_iface_finish_send(gdr_verbs_iface_t *am, int peer, uint64_t cookie);

/* gdr_verbs_landing.c: the pool of registered landing buffers */
landing_t *gdr_verbs_iface_landing_get(gdr_verbs_iface_t *am, size_t size);
void gdr_verbs_iface_landing_release(landing_t *l);
void gdr_verbs_iface_landing_put(gdr_verbs_iface_t *am, landing_t *l);

/* gdr_verbs_idle.c: probing peers while waiting */
int gdr_verbs_iface_maybe_probe(gdr_verbs_iface_t *am, int peer);
int gdr_verbs_iface_idle_look(gdr_verbs_iface_t *am, struct timespec *now_out);
int gdr_verbs_iface_busy_look(gdr_verbs_iface_t *am);

/* gdr_verbs_progress.c: gdr_verbs_am_progress and gdr_verbs_am_wait only (gdr_verbs_am.h) */

#endif /* GDR_VERBS_IFACE_PRIV_H */
