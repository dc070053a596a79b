/* Queue pairs: RC ones (creation and the INIT -> RTR -> RTS walk) and the UD one
 * that carries connection requests, with its address handles. */
#ifndef GDR_VERBS_QP_H
#define GDR_VERBS_QP_H

#include <stddef.h>
#include <infiniband/verbs.h>
#include "gdr_verbs_device.h"
#include "gdr_verbs_card.h"

typedef struct gdr_verbs_qp_caps {
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_inline;        /* granted, may be less than asked */
    uint32_t max_send_sge;      /* asked (0: 1), granted: at most the device's */
} gdr_verbs_qp_caps_t;

/* Creates an RC QP on cq (send and receive) and moves it to INIT with remote read,
 * write and atomic access enabled (memory regions decide what is really allowed).
 * srq != NULL: its receives come from that shared receive queue (caps->max_recv_wr
 * is then ignored). */
struct ibv_qp *gdr_verbs_qp_create(gdr_verbs_device_t *dev, struct ibv_cq *cq,
                                   struct ibv_srq *srq, gdr_verbs_qp_caps_t *caps,
                                   char *why, size_t why_len);

/* The Q_Key of gdr's UD queue pairs (below 2^31: not a privileged key). */
#define GDR_VERBS_UD_QKEY 0x47445231u

/* Creates a UD QP on cq and brings it to RTS.  Receive buffers may be posted once it
 * is returned; each receive lands 40 bytes of GRH before the datagram. */
struct ibv_qp *gdr_verbs_qp_create_ud(gdr_verbs_device_t *dev, struct ibv_cq *cq,
                                      uint32_t send_wr, uint32_t recv_wr, char *why,
                                      size_t why_len);

/* An address handle for sending datagrams to the port described by card.  On RoCE the
 * kernel resolves the peer's MAC (ARP or neighbour discovery) here and gives up after
 * 1 s: then NULL with *unresolved = 1, a state worth trying again (the neighbour may
 * answer later); any other failure NULL with *unresolved = 0.  why says which. */
struct ibv_ah *gdr_verbs_qp_ah(gdr_verbs_device_t *dev, const gdr_verbs_card_t *card,
                               int *unresolved, char *why, size_t why_len);

/* Retransmission timer 4.096 us * 2^18 = 1.07 s (UCX's RC default is 1 s): with 6
 * retries a peer is declared lost after ~6.4 s of silence.  Shorter timers (14, 67 ms)
 * broke connections on oversubscribed hosts, where a Soft-RoCE guest can go unscheduled
 * for longer than the 0.4 s they allowed. */
#define GDR_VERBS_QP_TIMEOUT_DEFAULT 18

/* Moves qp to RTR then RTS, connected to QP `remote_qpn` of the peer described by
 * `card`; timeout is the IB local ACK timeout exponent (1..31, else the default).
 * Receive buffers must be posted before. Returns 0 or -1 with why set. */
int gdr_verbs_qp_connect(struct ibv_qp *qp, const gdr_verbs_device_t *dev,
                         const gdr_verbs_card_t *card, uint32_t remote_qpn,
                         uint8_t timeout, char *why, size_t why_len);

#endif /* GDR_VERBS_QP_H */
