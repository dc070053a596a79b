/* Business cards: encode/decode round trip, and refusal of foreign bytes. */
#include <string.h>
#include "gdr_unit.h"
#include "verbs/gdr_verbs_card.h"

int main(void)
{
    gdr_verbs_card_t card = {.port_num = 1,.link_layer = 2,.mtu = 3,.lid = 0xbeef,
        .ud_qpn = 0x11223344,.nranks = 4,.rank = 3,.job = 0xfedcba9876543210ull
    };
    gdr_verbs_card_t got;
    unsigned char buf[GDR_VERBS_CARD_BYTES];

    for (int i = 0; i < 16; i++)
        card.gid[i] = (uint8_t) (0xa0 + i);
    gdr_verbs_card_encode(&card, buf);
    GDR_CHECK(buf[0] == GDR_VERBS_CARD_VERSION && buf[4] == 0xef && buf[5] == 0xbe
              && buf[24] == 0x44 && buf[27] == 0x11, "little-endian fixed layout");
    GDR_CHECK(gdr_verbs_card_decode(buf, sizeof(buf), 4, &got) == 0, "decodes");
    GDR_CHECK(got.port_num == 1 && got.link_layer == 2 && got.mtu == 3 && got.lid == 0xbeef,
              "port, link layer, mtu, lid round trip");
    GDR_CHECK(memcmp(got.gid, card.gid, 16) == 0, "gid round trips");
    GDR_CHECK(got.ud_qpn == 0x11223344 && got.nranks == 4, "UD QP number and job size round trip");
    GDR_CHECK(got.rank == 3 && got.job == 0xfedcba9876543210ull, "rank and job round trip");
    GDR_CHECK(gdr_verbs_card_decode(buf, sizeof(buf), 5, &got) != 0,
              "a card for another job size is refused");
    GDR_CHECK(gdr_verbs_card_decode(buf, sizeof(buf), 0, &got) == 0 && got.nranks == 4
              && got.rank == 3, "any job's card decodes when no job size is expected (another "
              "job's process)");
    buf[32] = 4;
    GDR_CHECK(gdr_verbs_card_decode(buf, sizeof(buf), 0, &got) != 0,
              "a card naming a rank past its job's size is refused");
    buf[32] = 3;
    buf[37] = 1;
    GDR_CHECK(gdr_verbs_card_decode(buf, sizeof(buf), 0, &got) != 0,
              "a card with its reserved bytes set is refused");
    buf[37] = 0;
    GDR_CHECK(gdr_verbs_card_decode(buf, sizeof(buf) - 1, 4, &got) != 0,
              "a truncated card is refused");
    buf[0] = 2;
    GDR_CHECK(gdr_verbs_card_decode(buf, sizeof(buf), 4, &got) != 0,
              "a version-2 card (no rank, no job) is refused");
    return gdr_unit_finish();
}
