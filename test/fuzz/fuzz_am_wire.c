/* The AM channel's messages (src/netmod/verbs/gdr_verbs_wire.h): every RC SEND a peer
 * posts to this rank is parsed by gdr_verbs_wire_parse before anything else reads it.
 * Invariants: a parsed message lies inside the bytes received and re-encodes to the same
 * fields and body; a refusal has a reason; the credits it returns never let this rank
 * overrun the peer (gdr_verbs_credit.h). */
#include <string.h>
#include "gdr_fuzz.h"
#include "verbs/gdr_verbs_credit.h"
#include "verbs/gdr_verbs_wire.h"

static int inside(const void *p, size_t n, const uint8_t *buf, size_t len)
{
    const uint8_t *q = p;
    return n == 0 || (q != NULL && q >= buf && n <= len && (size_t) (q - buf) <= len - n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = fuzz_exact_copy(data, size);
    gdr_verbs_msg_t m;
    gdr_verbs_wire_status_t st = gdr_verbs_wire_parse(buf, size, &m);

    if (st != GDR_VERBS_WIRE_OK) {
        FUZZ_REQUIRE(st == GDR_VERBS_WIRE_SHORT || st == GDR_VERBS_WIRE_BAD_MAGIC
                     || st == GDR_VERBS_WIRE_BAD_KIND || st == GDR_VERBS_WIRE_TRAILING,
                     "status %d", (int) st);
        FUZZ_REQUIRE(strcmp(gdr_verbs_wire_str(st), "unknown wire status") != 0, "no reason");
        free(buf);
        return 0;
    }
    FUZZ_REQUIRE(m.kind >= GDR_VERBS_MSG_EAGER && m.kind <= GDR_VERBS_MSG_CREDIT, "kind %d",
                 (int) m.kind);
    FUZZ_REQUIRE(inside(m.am_hdr, m.am_hdr_sz, buf, size), "AM header outside the message");
    if (m.kind == GDR_VERBS_MSG_EAGER)
        FUZZ_REQUIRE(inside(m.data, (size_t) m.data_sz, buf, size),
                     "EAGER payload of %llu bytes outside the message",
                     (unsigned long long) m.data_sz);
    FUZZ_REQUIRE(gdr_verbs_wire_size(m.kind, m.am_hdr_sz, m.data_sz) == size,
                 "%zu bytes parsed as a message of %zu", size,
                 gdr_verbs_wire_size(m.kind, m.am_hdr_sz, m.data_sz));

    /* the same fields, written again, parse to the same message */
    uint8_t *again = calloc(1, size);
    FUZZ_REQUIRE(again != NULL, "out of memory");
    size_t body = gdr_verbs_wire_put_hdr(again, size, m.kind, m.handler_id, m.credits, m.am_hdr,
                                         m.am_hdr_sz, m.data_sz);
    FUZZ_REQUIRE(body > 0 && body <= size, "re-encoding refused (%zu)", body);
    memcpy(again + body, buf + body, size - body);
    gdr_verbs_msg_t m2;
    FUZZ_REQUIRE(gdr_verbs_wire_parse(again, size, &m2) == GDR_VERBS_WIRE_OK,
                 "the re-encoded message does not parse");
    FUZZ_REQUIRE(m2.kind == m.kind && m2.handler_id == m.handler_id && m2.credits == m.credits
                 && m2.am_hdr_sz == m.am_hdr_sz && m2.data_sz == m.data_sz
                 && (m.am_hdr_sz == 0 || memcmp(m2.am_hdr, m.am_hdr, m.am_hdr_sz) == 0)
                 && memcmp(&m2.rts, &m.rts, sizeof(m.rts)) == 0 && m2.cookie == m.cookie,
                 "the re-encoded message differs");
    free(again);

    /* the credits it carries, on a connection of any depth in any state */
    gdr_verbs_credit_t c;
    uint32_t depth = 1 + (m.handler_id & 0x3ff);
    gdr_verbs_credit_init(&c, depth);
    for (uint32_t i = 0; i < (m.handler_id >> 10) % (depth + 1); i++)
        (void) gdr_verbs_credit_on_send(&c);
    gdr_verbs_credit_on_returned(&c, m.credits);
    FUZZ_REQUIRE(c.send_credits <= depth, "%u credits returned: %u to send on a depth of %u",
                 m.credits, c.send_credits, depth);
    free(buf);
    return 0;
}
