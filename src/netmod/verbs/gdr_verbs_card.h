/* Business card: what a rank publishes (through PMI) so that every peer can
 * connect an RC queue pair to it.  All-to-all for now: the card lists, for every
 * rank of the job, the number of the QP this rank created for that peer (0: none).
 * Encoded explicitly little-endian, so the bytes are the same on every host. */
#ifndef GDR_VERBS_CARD_H
#define GDR_VERBS_CARD_H

#include <stddef.h>
#include <stdint.h>

#define GDR_VERBS_CARD_VERSION 1

typedef struct gdr_verbs_card {
    uint8_t version;
    uint8_t port_num;
    uint8_t link_layer;         /* IBV_LINK_LAYER_* */
    uint8_t mtu;                /* enum ibv_mtu */
    uint16_t lid;               /* InfiniBand only */
    uint8_t gid[16];            /* RoCE: the GID the peer must address */
    uint32_t nranks;
    uint32_t *qpn;              /* [nranks], owned by the caller */
} gdr_verbs_card_t;

/* Bytes of an encoded card for a job of nranks. */
size_t gdr_verbs_card_size(uint32_t nranks);

/* Encodes card into buf (gdr_verbs_card_size(card->nranks) bytes). */
void gdr_verbs_card_encode(const gdr_verbs_card_t *card, void *buf);

/* Decodes len bytes; card->qpn must have room for expect_nranks entries.
 * Returns 0, or -1 if the bytes are not a card of this version for that job size. */
int gdr_verbs_card_decode(const void *buf, size_t len, uint32_t expect_nranks,
                          gdr_verbs_card_t *card);

#endif /* GDR_VERBS_CARD_H */
