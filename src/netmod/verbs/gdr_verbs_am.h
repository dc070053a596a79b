/* The active-message channel over RC queue pairs: one QP per remote peer, made the
 * first time either side needs it (a handshake over a UD queue pair, gdr_verbs_conn.h),
 * receive buffers in one shared receive queue with per-peer credit flow control, eager
 * messages copied through registered bounce buffers, large payloads read by the
 * receiver with RDMA READ from the sender's registered buffer (rendezvous): into a
 * landing buffer of the channel, or straight where the upper layer says (ops->rts).
 *
 * Plain C, no MPICH: the upper layer gets messages through gdr_verbs_am_ops_t.
 * Not thread safe: the caller serialises all calls (MPICH's VCI lock). Callbacks
 * run inside gdr_verbs_am_progress() and may send. */
#ifndef GDR_VERBS_AM_H
#define GDR_VERBS_AM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "gdr_verbs_device.h"
#include "gdr_verbs_rcache.h"

/* The channel: it owns every queue pair, completion queue and shared receive queue of its
 * device, not only the active messages' (UCX's uct_rc_verbs_iface); its functions are
 * gdr_verbs_am_*. */
typedef struct gdr_verbs_iface gdr_verbs_iface_t;

/* A rendezvous message whose payload is not read yet, as ops->rts offers it. */
typedef struct gdr_verbs_am_rts gdr_verbs_am_rts_t;

/* Most pieces one payload is read into (gdr_verbs_am_read_into). */
#define GDR_VERBS_AM_READ_SEGS_MAX 8

typedef struct gdr_verbs_am_ops {
    /* A message from `src`: am_hdr and data are valid only during the call. */
    void (*deliver)(void *ctx, int src, uint32_t handler_id, const void *am_hdr,
                    size_t am_hdr_sz, const void *data, size_t data_sz);
    /* The peer has read the payload of gdr_verbs_am_send_rndv(..., cookie): the
     * sender's buffer may be reused. */
    void (*rndv_done)(void *ctx, uint64_t cookie);
    /* Optional (NULL: every rendezvous payload lands in the channel's buffers and its
     * message is delivered whole, by deliver).  Asked when a rendezvous message arrives:
     * may ops->rts take it?  One it may not is read at once into a landing buffer; one
     * it may waits, unread, for its turn (every earlier message from src handed up). */
    int (*rts_wanted)(void *ctx, uint32_t handler_id);
    /* In its turn, a rendezvous message that rts_wanted said yes to (am_hdr valid only
     * during the call).  Returns 1 after calling gdr_verbs_am_read_into() on rts once:
     * the message counts as handed up (later ones from src may be delivered before its
     * payload is in) and read_done reports its payload.  Returns 0 to decline: the
     * payload lands and deliver hands the message up whole, in order. */
    int (*rts)(void *ctx, int src, uint32_t handler_id, const void *am_hdr,
               size_t am_hdr_sz, size_t data_sz, gdr_verbs_am_rts_t *rts);
    /* The payload of a message taken by ops->rts is in, and the sender has been told.
     * cookie: read_into's.  landed NULL: len bytes are where read_into said; else the
     * payload (len bytes) is at landed, valid only during the call, for the caller to
     * copy (read_into named no destination, or its registration failed). */
    void (*read_done)(void *ctx, uint64_t cookie, const void *landed, size_t len);
} gdr_verbs_am_ops_t;

typedef struct gdr_verbs_am_config {
    size_t buf_size;            /* bytes of one eager message on the wire */
    uint32_t recv_depth;        /* messages in flight to one peer (its credits); the shared
                                 * receive queue grows by this much per connected peer */
    uint32_t srq_depth;         /* ... up to this many receive buffers in all (0: 1024; at
                                 * least recv_depth, at most the device's); past it, peers
                                 * sending at once are paced by RNR retries */
    uint32_t send_slots;        /* registered bounce buffers for outgoing messages */
    uint32_t max_reads;         /* rendezvous reads in flight per peer */
    uint32_t rma_depth;         /* one-sided work requests in flight per peer (gdr_verbs_rma) */
    uint8_t qp_timeout;         /* ACK timeout exponent, 0: GDR_VERBS_QP_TIMEOUT_DEFAULT */
    uint32_t connect_timeout_ms;        /* a peer that does not answer a connection request
                                         * this long fails it (0: wait for ever) */
    int reg_cache_off;          /* register user buffers for each transfer, keep none */
} gdr_verbs_am_config_t;

/* Operation counts, for MPI_T and tests. */
typedef struct gdr_verbs_am_stats {
    uint64_t eager_sent, rndv_sent, fin_sent, credit_sent;
    uint64_t eager_recv, rndv_recv;
    uint64_t queued;            /* messages that waited for a credit or a bounce buffer */
    uint64_t send_chains;       /* doorbells that posted waiting messages (several each) */
    uint64_t empty_polls;
    uint64_t clock_reads;       /* looks at the clock while idle (a system call under UML) */
    uint64_t probes;            /* liveness probes of peers we wait on */
    uint64_t sleeps, wakeups;   /* gdr_verbs_am_wait() slept / was woken by a completion */
    uint64_t connections;       /* RC queue pairs made ready to peers (not the loopback) */
    uint64_t handshakes_sent;   /* connection datagrams sent (REQ, REP, RTU, repeats) */
    uint64_t address_retries;   /* a peer's address did not resolve yet: tried again later */
    uint64_t recv_buffers;      /* receive buffers in the shared receive queue */
    uint64_t pinned_bytes;      /* the channel's own registered buffers */
    uint64_t rndv_zcopy_bytes;  /* rendezvous payload read straight where ops->rts said */
    uint64_t rndv_copied_bytes; /* ... read into a landing buffer, for the caller to copy */
    uint64_t rndv_reg_fallbacks;        /* read_into destinations that would not register
                                         * (landed instead) */
} gdr_verbs_am_stats_t;

/* Creates the channel for `rank` of `nranks`; reach[i] != 0 for every peer that is
 * reached through this device (reach[rank]: a loopback queue pair, made when first
 * wanted: one-sided atomics on a rank's own window must go through the NIC too, to stay
 * atomic with those of its peers; no messages use it).  No RC queue pair is made here:
 * each is made the first time this rank or the peer sends to the other.  dev must be
 * open with a GID picked.  Returns NULL with why set on failure. */
gdr_verbs_iface_t *gdr_verbs_am_create(gdr_verbs_device_t *dev, int rank, int nranks,
                                       const uint8_t *reach, const gdr_verbs_am_config_t *cfg,
                                       const gdr_verbs_am_ops_t *ops, void *ctx,
                                       char *why, size_t why_len);

/* This rank's business card (GDR_VERBS_CARD_BYTES bytes into buf, whatever the job
 * size): publish it to every peer before any of them sends. */
size_t gdr_verbs_am_card_size(const gdr_verbs_iface_t *am);
void gdr_verbs_am_card(const gdr_verbs_iface_t *am, void *buf);

/* Learns how to reach peer (its card; rank itself: our own).  Makes no connection.
 * Returns 0 or -1 (see error). */
int gdr_verbs_am_add_peer(gdr_verbs_iface_t *am, int peer, const void *card, size_t len);

/* Processes of other jobs (MPI_Comm_spawn, connect/accept, join) a channel may know:
 * their peer numbers follow the job's ranks, nranks and up. */
#define GDR_VERBS_AM_FOREIGN_MAX 1024

/* This job's identity, the same on every rank and different in every other job (drawn by
 * rank 0, spread with the cards): set it before any peer connects.  Cards and handshakes
 * carry it; a handshake from another job's process makes it a peer. */
void gdr_verbs_am_set_job(gdr_verbs_iface_t *am, uint64_t job);

/* The peer number of the process whose card (any job's) is buf: this job's rank for a card
 * of this job, or a number past the job's ranks for another job's process (the same one
 * each time it is given, and the one its own first handshake got).  Makes no connection.
 * Returns -1 if buf is no card (see error) or too many processes of other jobs are known.
 * Failures on such a peer's connection (it ends after MPI_Comm_disconnect) fail only sends
 * to it, never the channel. */
int gdr_verbs_am_add_foreign(gdr_verbs_iface_t *am, const void *buf, size_t len);

/* peer's card (GDR_VERBS_CARD_BYTES into buf) as this channel knows it: 0, or -1 if none. */
int gdr_verbs_am_peer_card(const gdr_verbs_iface_t *am, int peer, void *buf);

/* Starts connecting to peer now, as its first message would (for connecting every
 * peer at start-up).  Returns 1 once connected, 0 while connecting (progress and ask
 * again), -1 if it cannot be or failed. */
int gdr_verbs_am_connect_peer(gdr_verbs_iface_t *am, int peer);

/* Largest eager payload that fits with an AM header of am_hdr_sz bytes. */
size_t gdr_verbs_am_eager_limit(const gdr_verbs_iface_t *am, size_t am_hdr_sz);

/* Sends handler_id + am_hdr + data (copied before return: the caller may reuse both).
 * data_sz must be <= gdr_verbs_am_eager_limit().  Returns 0 or -1. */
int gdr_verbs_am_send_eager(gdr_verbs_iface_t *am, int peer, uint32_t handler_id,
                            const void *am_hdr, size_t am_hdr_sz, const void *data,
                            size_t data_sz);

/* The same message built in place, for a caller that would otherwise build its AM header
 * only to have it copied (the immediate send: bench/opcost counts it).  _reserve takes a
 * send slot and a credit for it and returns where the am_hdr_sz-byte AM header goes (8-byte
 * aligned), or NULL when the message must take gdr_verbs_am_send_eager instead (the peer
 * is not connected yet or has failed, no credit or slot is free, messages to the peer are
 * queued, or it is too long).  _post then sends the header and data_sz bytes of data, which
 * may be reused on return; nothing else may be sent between the two calls.  Returns 0 or
 * -1. */
void *gdr_verbs_am_eager_reserve(gdr_verbs_iface_t *am, int peer, uint32_t handler_id,
                                 size_t am_hdr_sz, size_t data_sz);
int gdr_verbs_am_eager_post(gdr_verbs_iface_t *am, const void *data, size_t data_sz);
/* For a caller that fills the data itself (a copy from device memory): after _reserve,
 * _data is where the data_sz bytes go; _post_filled then sends them, or _unreserve gives
 * the slot and its credit back (the fill failed; nothing is sent). */
void *gdr_verbs_am_eager_data(gdr_verbs_iface_t *am);
int gdr_verbs_am_eager_post_filled(gdr_verbs_iface_t *am, size_t data_sz);
void gdr_verbs_am_eager_unreserve(gdr_verbs_iface_t *am);

/* Sends handler_id + am_hdr now; the peer reads data (any size) with RDMA READ and
 * then ops->rndv_done(cookie) runs here.  data is host memory (device_id 0) or device
 * memory the NIC can reach, by its CUDA buffer id (never through a registration made for
 * another allocation at that address).  Returns 0 or -1. */
int gdr_verbs_am_send_rndv(gdr_verbs_iface_t *am, int peer, uint32_t handler_id,
                           const void *am_hdr, size_t am_hdr_sz, const void *data,
                           size_t data_sz, uint64_t device_id, uint64_t cookie);

/* Only inside ops->rts, once for its rts: where the payload goes.  segs (nsegs of them,
 * at most GDR_VERBS_AM_READ_SEGS_MAX) is memory of this process, in order: host memory
 * (device_id 0) or device memory the NIC reaches, by its CUDA buffer id, registered
 * through the channel's cache.  The first data_sz bytes of the payload are read into
 * them; what does not fit is not read (the caller reports the truncation).  nsegs 0:
 * into a landing buffer of the channel, handed to read_done.  Returns 0, or -1 when
 * called outside ops->rts or twice (the channel fails). */
int gdr_verbs_am_read_into(gdr_verbs_iface_t *am, gdr_verbs_am_rts_t *rts, const struct iovec *segs,
                           int nsegs, uint64_t device_id, uint64_t cookie);

/* The registration cache's counters (hits, invalidations by cause, ...). */
void gdr_verbs_am_reg_cache_stats(gdr_verbs_iface_t *am, gdr_verbs_rcache_stats_t *st);

/* Polls completions (bounded work) and delivers messages.  *progressed is set when
 * anything happened.  Returns 0, or -1 once a connection failed (see error). */
int gdr_verbs_am_progress(gdr_verbs_iface_t *am, int *progressed);

/* For ranks that share cores: progress like gdr_verbs_am_progress(), but if nothing
 * is there, sleep in the kernel until a completion arrives (a message, a send or
 * one-sided operation finishing) or timeout_us passes, then progress once more.
 * Without completion events from the device it yields instead.  Returns 0 or -1. */
int gdr_verbs_am_wait(gdr_verbs_iface_t *am, int timeout_us, int *progressed);

/* Is peer (or rank itself: loopback) reached through this channel (connected or not
 * yet) and healthy?  (A rank of this node reached only for the dynamic messages of a
 * connect/accept inside the job is not: its windows go as before.) */
int gdr_verbs_am_reaches(gdr_verbs_iface_t *am, int peer);

/* Peers with a ready RC queue pair now (the loopback not counted). */
int gdr_verbs_am_connected_peers(const gdr_verbs_iface_t *am);

/* Is there outgoing work (queued messages, unread payloads) not yet finished? */
int gdr_verbs_am_busy(const gdr_verbs_iface_t *am);

/* The last failure, one sentence naming the peer; "" if none. */
const char *gdr_verbs_am_error(const gdr_verbs_iface_t *am);

const gdr_verbs_am_stats_t *gdr_verbs_am_stats(const gdr_verbs_iface_t *am);

void gdr_verbs_am_destroy(gdr_verbs_iface_t *am);

#endif /* GDR_VERBS_AM_H */
