/* The connection card (src/netmod/verbs/gdr_verbs_card.h): what every rank publishes
 * through PMI and every peer decodes before it asks for a queue pair.  Input: 2 bytes of
 * job size (0: any job's card, as another job's process brings), then the card's bytes.
 * Invariants: a decoded card needs all of a card's bytes, was made for that job size, names
 * a rank of it, and encodes back to the same bytes (the reserved pair apart). */
#include <string.h>
#include "gdr_fuzz.h"
#include "verbs/gdr_verbs_card.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t nranks = (uint32_t) fuzz_take(&data, &size, 2);
    uint8_t *buf = fuzz_exact_copy(data, size);
    gdr_verbs_card_t card;

    if (gdr_verbs_card_decode(buf, size, nranks, &card) == 0) {
        FUZZ_REQUIRE(size >= GDR_VERBS_CARD_BYTES, "a card decoded from %zu of its %d bytes",
                     size, GDR_VERBS_CARD_BYTES);
        FUZZ_REQUIRE((nranks == 0 || card.nranks == nranks) && card.rank < card.nranks
                     && card.version == GDR_VERBS_CARD_VERSION, "nranks %u, rank %u, version %u",
                     card.nranks, card.rank, card.version);
        uint8_t again[GDR_VERBS_CARD_BYTES];
        gdr_verbs_card_encode(&card, again);
        FUZZ_REQUIRE(memcmp(again, buf, 6) == 0
                     && memcmp(again + 8, buf + 8, GDR_VERBS_CARD_BYTES - 8) == 0,
                     "the card does not encode back to its bytes");
    }
    free(buf);
    return 0;
}
