#include "gdr_verbs_card.h"
#include "gdr_verbs_le.h"

#include <string.h>

void gdr_verbs_card_encode(const gdr_verbs_card_t *card, void *buf)
{
    uint8_t *p = buf;
    p[0] = GDR_VERBS_CARD_VERSION;
    p[1] = card->port_num;
    p[2] = card->link_layer;
    p[3] = card->mtu;
    gdr_le_put16(p + 4, card->lid);
    p[6] = p[7] = 0;
    memcpy(p + 8, card->gid, 16);
    gdr_le_put32(p + 24, card->ud_qpn);
    gdr_le_put32(p + 28, card->nranks);
    gdr_le_put32(p + 32, card->rank);
    gdr_le_put32(p + 36, 0);
    gdr_le_put32(p + 40, (uint32_t) card->job);
    gdr_le_put32(p + 44, (uint32_t) (card->job >> 32));
}

int gdr_verbs_card_decode(const void *buf, size_t len, uint32_t expect_nranks,
                          gdr_verbs_card_t *card)
{
    const uint8_t *p = buf;
    if (len < GDR_VERBS_CARD_BYTES || p[0] != GDR_VERBS_CARD_VERSION
        || (expect_nranks != 0 && gdr_le_get32(p + 28) != expect_nranks)
        || gdr_le_get32(p + 32) >= gdr_le_get32(p + 28) || gdr_le_get32(p + 36) != 0)
        return -1;
    card->version = p[0];
    card->port_num = p[1];
    card->link_layer = p[2];
    card->mtu = p[3];
    card->lid = gdr_le_get16(p + 4);
    memcpy(card->gid, p + 8, 16);
    card->ud_qpn = gdr_le_get32(p + 24);
    card->nranks = gdr_le_get32(p + 28);
    card->rank = gdr_le_get32(p + 32);
    card->job = (uint64_t) gdr_le_get32(p + 40) | ((uint64_t) gdr_le_get32(p + 44) << 32);
    return 0;
}
