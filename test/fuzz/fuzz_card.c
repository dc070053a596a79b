/* The connection card (src/netmod/verbs/gdr_verbs_card.h): what every rank publishes
 * through PMI and every peer decodes before connecting a queue pair.  Input: 2 bytes of
 * job size, then the card's bytes.  Invariants: a decoded card needs all the bytes of a
 * card of that job size, fills exactly that many queue pair numbers, and encodes back to
 * the same bytes (the reserved pair apart). */
#include <string.h>
#include "gdr_fuzz.h"
#include "verbs/gdr_verbs_card.h"

#define RANKS_MAX 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t nranks = (uint32_t) fuzz_take(&data, &size, 2) % (RANKS_MAX + 1);
    uint8_t *buf = fuzz_exact_copy(data, size);
    uint32_t *qpn = malloc((nranks + 1) * sizeof(*qpn));
    FUZZ_REQUIRE(qpn != NULL, "out of memory");
    qpn[nranks] = 0xfeedf00d;   /* one past the end: must stay untouched */
    gdr_verbs_card_t card = {.qpn = qpn };

    if (gdr_verbs_card_decode(buf, size, nranks, &card) == 0) {
        size_t need = gdr_verbs_card_size(nranks);
        FUZZ_REQUIRE(size >= need, "a card of %u ranks decoded from %zu of its %zu bytes",
                     nranks, size, need);
        FUZZ_REQUIRE(card.nranks == nranks && card.version == GDR_VERBS_CARD_VERSION,
                     "nranks %u, version %u", card.nranks, card.version);
        uint8_t *again = malloc(need);
        FUZZ_REQUIRE(again != NULL, "out of memory");
        gdr_verbs_card_encode(&card, again);
        FUZZ_REQUIRE(memcmp(again, buf, 6) == 0 && memcmp(again + 8, buf + 8, need - 8) == 0,
                     "the card does not encode back to its bytes");
        free(again);
    }
    FUZZ_REQUIRE(qpn[nranks] == 0xfeedf00d, "decode wrote past the caller's %u entries", nranks);
    free(qpn);
    free(buf);
    return 0;
}
