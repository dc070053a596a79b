#include "gdr_verbs_card.h"

#include <string.h>

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t) v;
    p[1] = (uint8_t) (v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t) (p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) |
        ((uint32_t) p[3] << 24);
}

void gdr_verbs_card_encode(const gdr_verbs_card_t *card, void *buf)
{
    uint8_t *p = buf;
    p[0] = GDR_VERBS_CARD_VERSION;
    p[1] = card->port_num;
    p[2] = card->link_layer;
    p[3] = card->mtu;
    put16(p + 4, card->lid);
    p[6] = p[7] = 0;
    memcpy(p + 8, card->gid, 16);
    put32(p + 24, card->ud_qpn);
    put32(p + 28, card->nranks);
}

int gdr_verbs_card_decode(const void *buf, size_t len, uint32_t expect_nranks,
                          gdr_verbs_card_t *card)
{
    const uint8_t *p = buf;
    if (len < GDR_VERBS_CARD_BYTES || p[0] != GDR_VERBS_CARD_VERSION
        || get32(p + 28) != expect_nranks)
        return -1;
    card->version = p[0];
    card->port_num = p[1];
    card->link_layer = p[2];
    card->mtu = p[3];
    card->lid = get16(p + 4);
    memcpy(card->gid, p + 8, 16);
    card->ud_qpn = get32(p + 24);
    card->nranks = expect_nranks;
    return 0;
}
