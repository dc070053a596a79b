/* The staged protocol's messages (src/rma/gdr_rma_staged_wire.h), decoded by every rank a
 * peer sends one to (gdr_rma_staged_peek first, to find the window).  Invariants: a
 * decoded message lies inside its bytes (pieces, inline data) and encodes back to them;
 * a refusal says why; peek reads only the header. */
#include <string.h>
#include "gdr_fuzz.h"
#include "rma/gdr_rma_staged_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gdr_rma_staged_piece_t pieces[GDR_RMA_STAGED_PIECES_MAX];
    static uint8_t again[GDR_RMA_STAGED_MSG_MAX];
    uint8_t *buf = fuzz_exact_copy(data, size);
    gdr_rma_staged_hdr_t h;
    const uint8_t *pc = NULL, *in = NULL;
    const char *why = NULL;
    uint64_t win_id;
    uint32_t origin;

    FUZZ_REQUIRE((gdr_rma_staged_peek(buf, size, &win_id, &origin) == 0)
                 == (size >= GDR_RMA_STAGED_HDR_BYTES), "peek of %zu bytes", size);
    if (gdr_rma_staged_decode(buf, size, &h, &pc, &in, &why) != 0) {
        FUZZ_REQUIRE(why != NULL && *why != '\0', "a refusal without a reason");
        free(buf);
        return 0;
    }
    FUZZ_REQUIRE(size <= GDR_RMA_STAGED_MSG_MAX && h.npieces <= GDR_RMA_STAGED_PIECES_MAX,
                 "%zu bytes, %u pieces", size, h.npieces);
    FUZZ_REQUIRE(gdr_rma_staged_msg_bytes(&h) == size, "%zu bytes decoded as %zu", size,
                 gdr_rma_staged_msg_bytes(&h));
    FUZZ_REQUIRE(h.npieces == 0 || (pc == buf + GDR_RMA_STAGED_HDR_BYTES
                                    && (size_t) h.npieces * GDR_RMA_STAGED_PIECE_BYTES
                                    <= size - GDR_RMA_STAGED_HDR_BYTES), "pieces outside");
    FUZZ_REQUIRE(h.inline_len == 0 || (in != NULL && in >= buf + GDR_RMA_STAGED_HDR_BYTES
                                       && in + h.inline_len == buf + size), "inline outside");
    FUZZ_REQUIRE(win_id == h.win_id && origin == h.origin, "peek and decode disagree");
    for (uint32_t i = 0; i < h.npieces; i++)
        pieces[i] = gdr_rma_staged_piece_at(pc, i);
    FUZZ_REQUIRE(gdr_rma_staged_encode(again, sizeof(again), &h, pieces, in) == size
                 && memcmp(again, buf, size) == 0, "does not encode back to its bytes");
    free(buf);
    return 0;
}
