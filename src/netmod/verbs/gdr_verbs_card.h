/* Business card: what a rank publishes (through PMI) so that any peer can reach it.
 * One fixed-size card per rank, whatever the job size: the port's address and the
 * number of the rank's UD queue pair, through which peers ask for an RC queue pair
 * when they first need one (gdr_verbs_conn.h), and who the rank is: its rank, its job's
 * size and its job's identity (a number drawn at random by the job's rank 0), so that
 * a process of another job (MPI_Comm_spawn, connect/accept) is told apart from a rank of
 * this one.  Encoded explicitly little-endian, so the bytes are the same on every host. */
#ifndef GDR_VERBS_CARD_H
#define GDR_VERBS_CARD_H

#include <stddef.h>
#include <stdint.h>

#define GDR_VERBS_CARD_VERSION 3
#define GDR_VERBS_CARD_BYTES 48

typedef struct gdr_verbs_card {
    uint8_t version;
    uint8_t port_num;
    uint8_t link_layer;         /* IBV_LINK_LAYER_* */
    uint8_t mtu;                /* enum ibv_mtu */
    uint16_t lid;               /* InfiniBand only */
    uint8_t gid[16];            /* RoCE: the GID the peer must address */
    uint32_t ud_qpn;            /* connection requests go here */
    uint32_t nranks;            /* the job size the card was made for */
    uint32_t rank;              /* the rank in that job */
    uint64_t job;               /* the job's identity (0: not known yet) */
} gdr_verbs_card_t;

/* Encodes card into buf (GDR_VERBS_CARD_BYTES bytes). */
void gdr_verbs_card_encode(const gdr_verbs_card_t *card, void *buf);

/* Decodes len bytes.  Returns 0, or -1 if the bytes are not a card of this version
 * (another build) or, when expect_nranks is not 0, not made for a job of expect_nranks
 * ranks (0: a card of any job, as another job's process brings). */
int gdr_verbs_card_decode(const void *buf, size_t len, uint32_t expect_nranks,
                          gdr_verbs_card_t *card);

#endif /* GDR_VERBS_CARD_H */
