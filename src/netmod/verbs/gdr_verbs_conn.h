/* Lazy connections: the handshake that makes an RC queue pair between two ranks the
 * first time either needs it, over unreliable datagrams (a UD queue pair per rank,
 * named in its card).  Pure logic and wire format, no verbs: the AM channel keeps a
 * gdr_verbs_conn_t per peer, feeds it events and carries out the actions it returns.
 *
 *   initiator A                         responder B
 *   create QP, REQ(qpA)     ------->    create QP, connect to qpA (RTS), REP(qpB)
 *   connect to qpB (RTS),   <-------    waits: A's QP may not be ready to receive yet
 *   RTU; ready              ------->    ready on RTU, or on A's first message
 *
 * Both may start at once: each then answers the other's REQ as a responder and takes
 * the other's REP as the sign that the peer's QP is up.  Every message carries the
 * sender's QP number for the pair, so duplicates and crossings are harmless; lost
 * datagrams are made up for by retransmission (REQ and REP on a timer; RTU in answer
 * to a repeated REP). */
#ifndef GDR_VERBS_CONN_H
#define GDR_VERBS_CONN_H

#include <stddef.h>
#include <stdint.h>
#include "gdr_verbs_card.h"

typedef enum {
    GDR_CONN_IDLE = 0,          /* no queue pair */
    GDR_CONN_REQ_SENT,          /* QP made, asked the peer for its QP */
    GDR_CONN_REP_SENT,          /* QP connected and answered; peer's QP maybe not up yet */
    GDR_CONN_READY,             /* both QPs up: send */
    GDR_CONN_FAILED
} gdr_verbs_conn_state_t;

/* What the caller must do, in this order (bits of the value the calls return). */
enum {
    GDR_CONN_DO_CREATE_QP = 1 << 0,
    GDR_CONN_DO_CONNECT_QP = 1 << 1,    /* to conn->remote_qpn */
    GDR_CONN_DO_SEND_REQ = 1 << 2,
    GDR_CONN_DO_SEND_REP = 1 << 3,
    GDR_CONN_DO_SEND_RTU = 1 << 4,
    GDR_CONN_DO_READY = 1 << 5,         /* send what waited for the connection */
    GDR_CONN_DO_FAIL = 1 << 6           /* conn->why says why */
};

typedef enum { GDR_CONN_MSG_REQ = 1, GDR_CONN_MSG_REP, GDR_CONN_MSG_RTU } gdr_verbs_conn_msg_kind_t;

/* Retransmission: first after this long, doubling up to the most. */
#define GDR_CONN_RETRY_FIRST_NS 20000000LL      /* 20 ms */
#define GDR_CONN_RETRY_MOST_NS 1000000000LL     /* 1 s */

typedef struct gdr_verbs_conn {
    uint8_t state;              /* gdr_verbs_conn_state_t */
    uint8_t initiated;          /* this side sent the first REQ */
    uint16_t sends;             /* REQs or REPs sent in the current state */
    uint32_t remote_qpn;        /* the peer's QP for this pair, 0 until known */
    int64_t started_ns;         /* when this side first acted: the timeout counts from it */
    int64_t retry_ns;           /* next retransmission; 0: none due */
    const char *why;            /* on failure */
} gdr_verbs_conn_t;

/* This side wants the connection (it has something to send).  From IDLE: create the
 * QP and send a REQ; otherwise nothing (already under way or done). */
unsigned gdr_verbs_conn_start(gdr_verbs_conn_t *c, int64_t now_ns);

/* A handshake message from the peer, naming its QP for this pair. */
unsigned gdr_verbs_conn_on_msg(gdr_verbs_conn_t *c, gdr_verbs_conn_msg_kind_t kind,
                               uint32_t remote_qpn, int64_t now_ns);

/* A message arrived from the peer on the RC queue pair: its QP is up. */
unsigned gdr_verbs_conn_on_traffic(gdr_verbs_conn_t *c);

/* Time passed: retransmit what is due, or fail once timeout_ns (> 0) has passed since
 * this side started without the connection being made (0: never give up). */
unsigned gdr_verbs_conn_on_timer(gdr_verbs_conn_t *c, int64_t now_ns, int64_t timeout_ns);

/* Handshake datagrams: GDR_CONN_WIRE_BYTES, little-endian: magic "gC", version, kind,
 * the sender's rank, its QP number for the pair, its job's size and identity, then the
 * sender's card as it publishes it (gdr_verbs_card.h): a process of another job
 * (MPI_Comm_spawn, connect/accept) may ask first, and is answered through that card. */
#define GDR_CONN_WIRE_HDR_BYTES 24
#define GDR_CONN_WIRE_BYTES (GDR_CONN_WIRE_HDR_BYTES + GDR_VERBS_CARD_BYTES)
#define GDR_CONN_WIRE_VERSION 2

typedef struct gdr_verbs_conn_msg {
    gdr_verbs_conn_msg_kind_t kind;
    uint32_t src_rank;
    uint32_t qpn;
    uint32_t nranks;
    uint64_t job;
    uint8_t card[GDR_VERBS_CARD_BYTES]; /* encoded, as the sender sent it */
} gdr_verbs_conn_msg_t;

void gdr_verbs_conn_msg_encode(const gdr_verbs_conn_msg_t *m, void *buf);

/* Decodes len bytes: 0, or -1 if not a handshake message of this version. */
int gdr_verbs_conn_msg_decode(const void *buf, size_t len, gdr_verbs_conn_msg_t *m);

const char *gdr_verbs_conn_state_str(gdr_verbs_conn_state_t s);

#endif /* GDR_VERBS_CONN_H */
