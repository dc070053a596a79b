/* The AM wire format: round trips, and every malformed or truncated message
 * refused without reading outside the received bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gdr_unit.h"
#include "verbs/gdr_verbs_wire.h"

static unsigned char buf[4096];

int main(void)
{
    gdr_verbs_msg_t m;
    const char am_hdr[13] = "hello, rank!";
    const char data[100] = "payload";

    /* eager round trip */
    size_t len = gdr_verbs_wire_size(GDR_VERBS_MSG_EAGER, sizeof(am_hdr), sizeof(data));
    GDR_CHECK(len == 24 + 16 + 100, "eager size: header 24 + am_hdr padded to 16 + 100 (%zu)", len);
    size_t at = gdr_verbs_wire_put_hdr(buf, sizeof(buf), GDR_VERBS_MSG_EAGER, 7, 3, am_hdr,
                                       sizeof(am_hdr), sizeof(data));
    GDR_CHECK(at == 40, "eager body starts 8-aligned after the AM header (%zu)", at);
    memcpy(buf + at, data, sizeof(data));
    GDR_CHECK(gdr_verbs_wire_parse(buf, len, &m) == GDR_VERBS_WIRE_OK, "eager parses");
    GDR_CHECK(m.kind == GDR_VERBS_MSG_EAGER && m.handler_id == 7 && m.credits == 3,
              "eager fields: kind, handler 7, credits 3");
    GDR_CHECK(m.am_hdr_sz == sizeof(am_hdr) && memcmp(m.am_hdr, am_hdr, sizeof(am_hdr)) == 0,
              "eager AM header bytes");
    GDR_CHECK(((uintptr_t) m.am_hdr & 7) == 0, "AM header 8-aligned in an aligned buffer");
    GDR_CHECK(m.data_sz == sizeof(data) && memcmp(m.data, data, sizeof(data)) == 0, "eager payload");

    /* the handler word is 32 bits, carried untouched (gdr_am.c packs VCIs in its upper bytes) */
    unsigned char word_buf[64];
    gdr_verbs_msg_t w;
    gdr_verbs_wire_put_hdr(word_buf, sizeof(word_buf), GDR_VERBS_MSG_EAGER, 0xfe030207u, 0, NULL,
                           0, 0);
    GDR_CHECK(gdr_verbs_wire_parse(word_buf, 24, &w) == GDR_VERBS_WIRE_OK
              && w.handler_id == 0xfe030207u,
              "all 32 bits of the handler word round-trip (0x%x)", (unsigned) w.handler_id);

    /* every truncation of a valid message is refused */
    int truncations_refused = 1;
    for (size_t n = 0; n < len; n++)
        truncations_refused &= gdr_verbs_wire_parse(buf, n, &m) != GDR_VERBS_WIRE_OK;
    GDR_CHECK(truncations_refused, "all %zu truncations refused", len);
    GDR_CHECK(gdr_verbs_wire_parse(buf, len + 1, &m) == GDR_VERBS_WIRE_TRAILING,
              "extra trailing byte refused");

    /* corrupted header fields */
    unsigned char bad[sizeof(buf)];
    memcpy(bad, buf, len);
    bad[0] ^= 0xff;
    GDR_CHECK(gdr_verbs_wire_parse(bad, len, &m) == GDR_VERBS_WIRE_BAD_MAGIC, "bad magic refused");
    memcpy(bad, buf, len);
    bad[2] = 99;
    GDR_CHECK(gdr_verbs_wire_parse(bad, len, &m) == GDR_VERBS_WIRE_BAD_KIND, "bad kind refused");
    memcpy(bad, buf, len);
    uint64_t huge = UINT64_MAX;
    memcpy(bad + 16, &huge, 8);
    GDR_CHECK(gdr_verbs_wire_parse(bad, len, &m) == GDR_VERBS_WIRE_SHORT,
              "data_sz larger than the message refused");
    memcpy(bad, buf, len);
    uint32_t big_hdr = 0xfffffff0u;
    memcpy(bad + 8, &big_hdr, 4);
    GDR_CHECK(gdr_verbs_wire_parse(bad, len, &m) == GDR_VERBS_WIRE_SHORT,
              "am_hdr_sz larger than the message refused");

    /* RTS and FIN */
    gdr_verbs_wire_rts_t rts = {.addr = 0x1234000,.rkey = 77,.cookie = 0x500000002ull };
    len = gdr_verbs_wire_size(GDR_VERBS_MSG_RTS, 8, 1 << 20);
    at = gdr_verbs_wire_put_hdr(buf, sizeof(buf), GDR_VERBS_MSG_RTS, 9, 0, "abcdefgh", 8, 1 << 20);
    memcpy(buf + at, &rts, sizeof(rts));
    GDR_CHECK(len == 24 + 8 + 24 && gdr_verbs_wire_parse(buf, len, &m) == GDR_VERBS_WIRE_OK,
              "RTS of 1 MiB is a 56-byte message and parses");
    GDR_CHECK(m.data_sz == (1 << 20) && m.rts.addr == rts.addr && m.rts.rkey == 77
              && m.rts.cookie == rts.cookie, "RTS fields round trip");
    gdr_verbs_wire_fin_t fin = {.cookie = 42 };
    len = gdr_verbs_wire_size(GDR_VERBS_MSG_FIN, 0, 0);
    at = gdr_verbs_wire_put_hdr(buf, sizeof(buf), GDR_VERBS_MSG_FIN, 0, 5, NULL, 0, 0);
    memcpy(buf + at, &fin, sizeof(fin));
    GDR_CHECK(gdr_verbs_wire_parse(buf, len, &m) == GDR_VERBS_WIRE_OK && m.cookie == 42
              && m.credits == 5, "FIN carries its cookie and credits");
    len = gdr_verbs_wire_size(GDR_VERBS_MSG_CREDIT, 0, 0);
    gdr_verbs_wire_put_hdr(buf, sizeof(buf), GDR_VERBS_MSG_CREDIT, 0, 8, NULL, 0, 0);
    GDR_CHECK(len == 24 && gdr_verbs_wire_parse(buf, len, &m) == GDR_VERBS_WIRE_OK
              && m.kind == GDR_VERBS_MSG_CREDIT && m.credits == 8, "CREDIT is a bare header");

    /* a message that does not fit the buffer is not built */
    GDR_CHECK(gdr_verbs_wire_put_hdr(buf, 100, GDR_VERBS_MSG_EAGER, 1, 0, am_hdr, sizeof(am_hdr),
                                     100) == 0, "put_hdr refuses a message larger than the buffer");

    /* random bytes never crash the parser and are refused or consistent */
    srand(12345);
    int consistent = 1;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = (size_t) (rand() % 96);
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char) rand();
        if (iter % 3 == 0 && n >= 24) {
            buf[0] = 0x64;
            buf[1] = 0x67;
            buf[2] = (unsigned char) (1 + rand() % 4);
        }
        if (gdr_verbs_wire_parse(buf, n, &m) == GDR_VERBS_WIRE_OK)
            consistent &= gdr_verbs_wire_size(m.kind, m.am_hdr_sz, m.data_sz) == n;
    }
    GDR_CHECK(consistent, "20000 random messages: anything accepted has exactly its own size");
    return gdr_unit_finish();
}
