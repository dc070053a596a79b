#include "gdr_verbs_card.h"

#include <string.h>

#define CARD_FIXED_BYTES 28     /* version..nranks */

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

size_t gdr_verbs_card_size(uint32_t nranks)
{
    return CARD_FIXED_BYTES + 4 * (size_t) nranks;
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
    put32(p + 24, card->nranks);
    for (uint32_t i = 0; i < card->nranks; i++)
        put32(p + CARD_FIXED_BYTES + 4 * (size_t) i, card->qpn[i]);
}

int gdr_verbs_card_decode(const void *buf, size_t len, uint32_t expect_nranks,
                          gdr_verbs_card_t *card)
{
    const uint8_t *p = buf;
    if (len < CARD_FIXED_BYTES || p[0] != GDR_VERBS_CARD_VERSION)
        return -1;
    if (get32(p + 24) != expect_nranks || len < gdr_verbs_card_size(expect_nranks))
        return -1;
    card->version = p[0];
    card->port_num = p[1];
    card->link_layer = p[2];
    card->mtu = p[3];
    card->lid = get16(p + 4);
    memcpy(card->gid, p + 8, 16);
    card->nranks = expect_nranks;
    for (uint32_t i = 0; i < expect_nranks; i++)
        card->qpn[i] = get32(p + CARD_FIXED_BYTES + 4 * (size_t) i);
    return 0;
}
