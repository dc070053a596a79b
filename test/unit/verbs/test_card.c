/* Business cards: encode/decode round trip, and refusal of foreign bytes. */
#include <string.h>
#include "gdr_unit.h"
#include "verbs/gdr_verbs_card.h"

int main(void)
{
    uint32_t qpn[4] = { 0, 0x11223344, 17, 0xffffff };
    uint32_t got_qpn[4];
    gdr_verbs_card_t card = {.port_num = 1,.link_layer = 2,.mtu = 3,.lid = 0xbeef,
        .nranks = 4,.qpn = qpn
    };
    gdr_verbs_card_t got = {.qpn = got_qpn };
    unsigned char buf[128];

    for (int i = 0; i < 16; i++)
        card.gid[i] = (uint8_t) (0xa0 + i);
    GDR_CHECK(gdr_verbs_card_size(4) == 28 + 16, "a 4-rank card is 44 bytes");
    gdr_verbs_card_encode(&card, buf);
    GDR_CHECK(buf[0] == GDR_VERBS_CARD_VERSION && buf[4] == 0xef && buf[5] == 0xbe,
              "little-endian fixed layout");
    GDR_CHECK(gdr_verbs_card_decode(buf, gdr_verbs_card_size(4), 4, &got) == 0, "decodes");
    GDR_CHECK(got.port_num == 1 && got.link_layer == 2 && got.mtu == 3 && got.lid == 0xbeef,
              "port, link layer, mtu, lid round trip");
    GDR_CHECK(memcmp(got.gid, card.gid, 16) == 0, "gid round trips");
    GDR_CHECK(memcmp(got_qpn, qpn, sizeof(qpn)) == 0, "per-rank QP numbers round trip");
    GDR_CHECK(gdr_verbs_card_decode(buf, gdr_verbs_card_size(4), 5, &got) != 0,
              "a card for another job size is refused");
    GDR_CHECK(gdr_verbs_card_decode(buf, gdr_verbs_card_size(4) - 1, 4, &got) != 0,
              "a truncated card is refused");
    buf[0] = 99;
    GDR_CHECK(gdr_verbs_card_decode(buf, gdr_verbs_card_size(4), 4, &got) != 0,
              "another card version is refused");
    return gdr_unit_finish();
}
