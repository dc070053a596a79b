/* The staged protocol's messages (src/rma/gdr_rma_staged_wire.h): every type round trips, the
 * header is the documented little-endian layout, every malformed message is refused with a
 * reason, and decoding random or mutated bytes accepts only what re-encodes to the same
 * bytes.  Every message sits in exactly its length of malloc'd memory, so valgrind or ASan
 * sees any read past it.  GDR_DEVWIN_WIRE_FUZZ sets the fuzz iterations (default 200000). */
#include <stdlib.h>
#include <string.h>
#include "gdr_unit.h"
#include "rma/gdr_rma_staged_wire.h"

#define HDR GDR_RMA_STAGED_HDR_BYTES
#define PIECE GDR_RMA_STAGED_PIECE_BYTES

static gdr_rma_staged_piece_t pool_pieces[GDR_RMA_STAGED_PIECES_MAX + 1];
static uint8_t pool_inline[GDR_RMA_STAGED_MSG_MAX];

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)    /* xorshift64* */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

static void set_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}

/* A copy of n bytes of src in exactly n bytes of malloc'd memory. */
static uint8_t *exact(const void *src, size_t n)
{
    uint8_t *p = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(p, src, n);
    return p;
}

/* h with the pools' pieces and inline bytes, in exactly its length; *n: the length. */
static uint8_t *encode_exact(const gdr_rma_staged_hdr_t *h, size_t *n)
{
    size_t want = gdr_rma_staged_msg_bytes(h);
    uint8_t *p = malloc(want);
    *n = gdr_rma_staged_encode(p, want, h, pool_pieces, pool_inline);
    return p;
}

/* A valid message of the type, every field distinctive. */
static gdr_rma_staged_hdr_t base(int type)
{
    gdr_rma_staged_hdr_t h = {
        .type = (uint8_t) type,.kind = (uint8_t) (0xa0 + type),.op = (uint8_t) (0xb0 + type),
        .elem = (uint8_t) (0xc0 + type),.origin = 0x01020304u * (uint32_t) type,
        .seq = 0x0a0b0c0du + (uint32_t) type,.win_id = 0x1122334455667788ull + (uint64_t) type,
        .op_id = 0x8877665544332211ull ^ (uint64_t) type,
        .taddr = 0xfedcba9876543210ull - (uint64_t) type,
        .tbytes = 0x0102030405060708ull * (uint64_t) type,.slot = 0x5a5a0000u + (uint32_t) type,
        .off = 0x7000000000000001ull + (uint64_t) type,
        .raddr = 0x00007fff12345678ull + (uint64_t) type,.len = 0x1000u + (uint32_t) type,
        .rkey = 0xdeadbe00u + (uint32_t) type
    };
    switch (type) {
        case GDR_RMA_STAGED_REQ:
            h.flags = GDR_RMA_STAGED_F_INLINE | GDR_RMA_STAGED_F_DYNAMIC;
            h.npieces = 3;
            h.inline_len = 40;
            break;
        case GDR_RMA_STAGED_RESULT:
            h.flags = GDR_RMA_STAGED_F_INLINE;
            h.len = h.inline_len = 24;
            break;
        case GDR_RMA_STAGED_DONE:
            h.status = GDR_RMA_STAGED_E_DEVICE;
            break;
    }
    return h;
}

/* The first field of a and b that differs, or NULL. */
static const char *hdr_diff(const gdr_rma_staged_hdr_t *a, const gdr_rma_staged_hdr_t *b)
{
    const struct {
        const char *name;
        uint64_t a, b;
    } f[] = {
        {"version", a->version, b->version}, {"type", a->type, b->type},
        {"kind", a->kind, b->kind}, {"op", a->op, b->op}, {"elem", a->elem, b->elem},
        {"flags", a->flags, b->flags}, {"origin", a->origin, b->origin},
        {"seq", a->seq, b->seq}, {"win_id", a->win_id, b->win_id},
        {"op_id", a->op_id, b->op_id}, {"taddr", a->taddr, b->taddr},
        {"tbytes", a->tbytes, b->tbytes}, {"npieces", a->npieces, b->npieces},
        {"slot", a->slot, b->slot}, {"off", a->off, b->off}, {"raddr", a->raddr, b->raddr},
        {"len", a->len, b->len}, {"rkey", a->rkey, b->rkey},
        {"status", (uint64_t) (int64_t) a->status, (uint64_t) (int64_t) b->status},
        {"inline_len", a->inline_len, b->inline_len}
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (f[i].a != f[i].b)
            return f[i].name;
    return NULL;
}

static void round_trip(const char *name, gdr_rma_staged_hdr_t h)
{
    size_t n;
    uint8_t *m = encode_exact(&h, &n);
    gdr_rma_staged_hdr_t d;
    const uint8_t *pc = NULL, *in = NULL;
    const char *why = "unset";

    GDR_CHECK(n == HDR + (size_t) h.npieces * PIECE + h.inline_len
              && n == gdr_rma_staged_msg_bytes(&h), "%s: encodes to %zu bytes", name, n);
    GDR_CHECK(gdr_rma_staged_decode(m, n, &d, &pc, &in, &why) == 0 && why == NULL,
              "%s: decodes (%s)", name, why ? why : "no reason");
    h.version = GDR_RMA_STAGED_WIRE_VERSION;
    const char *diff = hdr_diff(&h, &d);
    GDR_CHECK(diff == NULL, "%s: every header field as sent, version %d (%s differs)", name,
              d.version, diff ? diff : "none");
    int pieces_ok = h.npieces == 0 ? pc == NULL : pc == m + HDR;
    for (uint32_t i = 0; pieces_ok && i < h.npieces; i++) {
        gdr_rma_staged_piece_t p = gdr_rma_staged_piece_at(pc, i);
        pieces_ok = p.off == pool_pieces[i].off && p.len == pool_pieces[i].len;
    }
    GDR_CHECK(pieces_ok, "%s: %u pieces as sent, right after the header", name, h.npieces);
    GDR_CHECK(h.inline_len == 0 ? in == NULL : in == m + HDR + (size_t) h.npieces * PIECE
              && memcmp(in, pool_inline, h.inline_len) == 0,
              "%s: %u inline bytes as sent, after the pieces", name, h.inline_len);
    free(m);
}

static void test_round_trips(void)
{
    gdr_rma_staged_hdr_t h;

    round_trip("REQ, inline and dynamic", base(GDR_RMA_STAGED_REQ));
    round_trip("CHUNK", base(GDR_RMA_STAGED_CHUNK));
    round_trip("TAKEN", base(GDR_RMA_STAGED_TAKEN));
    round_trip("RESULT, inline", base(GDR_RMA_STAGED_RESULT));
    round_trip("DONE, status E_DEVICE", base(GDR_RMA_STAGED_DONE));
    round_trip("ABORT", base(GDR_RMA_STAGED_ABORT));

    h = base(GDR_RMA_STAGED_RESULT);
    h.flags = 0;
    h.inline_len = 0;
    h.len = 0xfffffff0u;
    round_trip("RESULT in a slot", h);
    h = base(GDR_RMA_STAGED_DONE);
    h.status = INT32_MIN;
    round_trip("DONE, status INT32_MIN", h);
    h = base(GDR_RMA_STAGED_REQ);
    h.flags = GDR_RMA_STAGED_F_INLINE;
    h.npieces = GDR_RMA_STAGED_PIECES_MAX;
    h.inline_len = GDR_RMA_STAGED_MSG_MAX - HDR - GDR_RMA_STAGED_PIECES_MAX * PIECE;
    round_trip("REQ at both limits: PIECES_MAX pieces, MSG_MAX bytes", h);
    h = base(GDR_RMA_STAGED_REQ);
    h.flags = 0;
    h.npieces = 1;
    h.inline_len = 0;
    h.version = 77;
    round_trip("REQ, one piece, no inline; version 77 given, 1 sent", h);
}

/* The exact bytes of one message; the meaning of the values is not encode's business. */
static void test_layout(void)
{
    static const uint8_t want[HDR + PIECE + 3] = {
        /*  0 */ 1, 1, 2, 3, 4, 0, 0x03, 0x00,    /* version type kind op elem pad flags */
        /*  8 */ 0x0a, 0x0b, 0x0c, 0x0d, 0x1a, 0x1b, 0x1c, 0x1d,  /* origin seq */
        /* 16 */ 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27,  /* win_id */
        /* 24 */ 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,  /* op_id */
        /* 32 */ 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,  /* taddr */
        /* 40 */ 0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f,  /* tbytes */
        /* 48 */ 0x01, 0x00, 0x00, 0x00, 0x40, 0x41, 0x42, 0x43,  /* npieces slot */
        /* 56 */ 0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,  /* off */
        /* 64 */ 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,  /* raddr */
        /* 72 */ 0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67,  /* len rkey */
        /* 80 */ 0xfe, 0xff, 0xff, 0xff, 0x03, 0x00, 0x00, 0x00,  /* status (-2) inline_len */
        /* 88 */ 0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77,  /* piece 0: off */
        /* 96 */ 0x78, 0x79, 0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f,  /* piece 0: len */
        /* 104 */ 0xe1, 0xe2, 0xe3 /* inline */
    };
    const gdr_rma_staged_hdr_t h = {
        .version = 9,.type = GDR_RMA_STAGED_REQ,.kind = 2,.op = 3,.elem = 4,
        .flags = GDR_RMA_STAGED_F_INLINE | GDR_RMA_STAGED_F_DYNAMIC,.origin = 0x0d0c0b0a,
        .seq = 0x1d1c1b1a,.win_id = 0x2726252423222120ull,.op_id = 0x2f2e2d2c2b2a2928ull,
        .taddr = 0x3736353433323130ull,.tbytes = 0x3f3e3d3c3b3a3938ull,.npieces = 1,
        .slot = 0x43424140,.off = 0x4f4e4d4c4b4a4948ull,.raddr = 0x5756555453525150ull,
        .len = 0x63626160,.rkey = 0x67666564,.status = -2,.inline_len = 3
    };
    const gdr_rma_staged_piece_t piece = {.off = 0x7776757473727170ull,.len = 0x7f7e7d7c7b7a7978ull };
    const uint8_t data[3] = { 0xe1, 0xe2, 0xe3 };
    uint8_t buf[sizeof(want) + 8];

    memset(buf, 0xa5, sizeof(buf));
    size_t n = gdr_rma_staged_encode(buf, sizeof(buf), &h, &piece, data);
    GDR_CHECK(n == sizeof(want), "the 1-piece, 3-byte message is %zu bytes (%zu)", sizeof(want),
              n);
    size_t at = 0;
    while (at < sizeof(want) && buf[at] == want[at])
        at++;
    GDR_CHECK(at == sizeof(want), "every byte little-endian at its offset: version 1 (not the"
              " 9 given), pad 0, status in two's complement (first difference at %zu)", at);
    GDR_CHECK(buf[sizeof(want)] == 0xa5, "nothing written past the message");
}

static void test_encode_limits(void)
{
    gdr_rma_staged_hdr_t h = base(GDR_RMA_STAGED_REQ);
    size_t n = gdr_rma_staged_msg_bytes(&h);
    uint8_t *buf = malloc(GDR_RMA_STAGED_MSG_MAX + 64);

    GDR_CHECK(n == HDR + 3 * PIECE + 40, "msg_bytes: header, 3 pieces, 40 inline bytes (%zu)",
              n);
    memset(buf, 0xa5, n + 8);
    int untouched = 1;
    GDR_CHECK(gdr_rma_staged_encode(buf, n - 1, &h, pool_pieces, pool_inline) == 0,
              "a cap one byte short: refused");
    for (size_t i = n - 1; i < n + 8; i++)
        untouched &= buf[i] == 0xa5;
    GDR_CHECK(untouched, "nothing written at or past the cap");
    GDR_CHECK(gdr_rma_staged_encode(buf, n, &h, pool_pieces, pool_inline) == n, "a cap of exactly"
              " the message: encoded");

    h.npieces = 1;
    h.inline_len = GDR_RMA_STAGED_MSG_MAX - HDR - PIECE + 1;
    GDR_CHECK(gdr_rma_staged_encode(buf, GDR_RMA_STAGED_MSG_MAX + 64, &h, pool_pieces,
                                 pool_inline) == 0, "one byte over GDR_RMA_STAGED_MSG_MAX: refused"
              " whatever the cap");
    h.inline_len--;
    GDR_CHECK(gdr_rma_staged_encode(buf, GDR_RMA_STAGED_MSG_MAX + 64, &h, pool_pieces,
                                 pool_inline) == GDR_RMA_STAGED_MSG_MAX,
              "exactly GDR_RMA_STAGED_MSG_MAX: encoded");

    h.npieces = UINT32_MAX;
    h.inline_len = UINT32_MAX;
    uint64_t huge = HDR + (uint64_t) UINT32_MAX * PIECE + UINT32_MAX;
    GDR_CHECK(sizeof(size_t) < 8 || gdr_rma_staged_msg_bytes(&h) == huge,
              "msg_bytes of 2^32-1 pieces and inline bytes does not wrap (%zu)",
              gdr_rma_staged_msg_bytes(&h));
    GDR_CHECK(gdr_rma_staged_encode(buf, SIZE_MAX, &h, NULL, NULL) == 0,
              "2^32-1 pieces and inline bytes with an unbounded cap: refused, nothing read");
    free(buf);
}

/* Decoding the len bytes at msg (malloc'd, exactly len) fails, the reason naming `word`. */
static void refused(const char *rule, const uint8_t *msg, size_t len, const char *word)
{
    gdr_rma_staged_hdr_t d;
    const uint8_t *pc, *in;
    const char *why = NULL;
    int rc = gdr_rma_staged_decode(msg, len, &d, &pc, &in, &why);

    GDR_CHECK(rc == -1 && why != NULL && strstr(why, word) != NULL, "refused: %s (%s)", rule,
              why ? why : "no reason");
}

/* h encoded (encode checks nothing but size), then the `bytes` at `at` set to v. */
static void refused_patched(const char *rule, gdr_rma_staged_hdr_t h, size_t at, int bytes,
                            uint64_t v, const char *word)
{
    size_t n;
    uint8_t *m = encode_exact(&h, &n);

    set_le(m + at, v, bytes);
    refused(rule, m, n, word);
    free(m);
}

static void refused_msg(const char *rule, gdr_rma_staged_hdr_t h, const char *word)
{
    refused_patched(rule, h, 0, 0, 0, word);
}

static gdr_rma_staged_hdr_t with(int type, uint16_t flags, uint32_t npieces, uint32_t inline_len,
                              uint32_t len, int32_t status)
{
    gdr_rma_staged_hdr_t h = base(type);
    h.flags = flags;
    h.npieces = npieces;
    h.inline_len = inline_len;
    h.len = len;
    h.status = status;
    return h;
}

static void test_refusals(void)
{
    const int REQ = GDR_RMA_STAGED_REQ, CHUNK = GDR_RMA_STAGED_CHUNK, TAKEN = GDR_RMA_STAGED_TAKEN,
        RESULT = GDR_RMA_STAGED_RESULT, DONE = GDR_RMA_STAGED_DONE, ABORT = GDR_RMA_STAGED_ABORT;
    const uint16_t INL = GDR_RMA_STAGED_F_INLINE, DYN = GDR_RMA_STAGED_F_DYNAMIC;
    gdr_rma_staged_hdr_t req = base(REQ);
    size_t n;
    uint8_t *m, *t;

    m = encode_exact(&req, &n);
    t = exact(m, HDR - 1);
    refused("87 bytes, below the header", t, HDR - 1, "shorter than its header");
    free(t);
    free(m);
    refused_patched("version 2", req, 0, 1, 2, "wire version");
    refused_patched("type 0", req, 1, 1, 0, "message type");
    refused_patched("type 7", req, 1, 1, 7, "message type");
    refused_msg("flag 0x100", with(REQ, INL | DYN | 0x100, 1, 8, 0, 0), "unknown flags");
    refused_patched("pad byte 1", req, 5, 1, 1, "pad byte");

    m = encode_exact(&req, &n);
    t = malloc(n + 1);
    memcpy(t, m, n);
    t[n] = 0;
    refused("a byte after the inline data", t, n + 1, "length disagrees");
    free(t);
    free(m);
    refused_patched("npieces one more than sent", req, 48, 4, req.npieces + 1,
                    "length disagrees");
    /* 88 + 16 + 0xffffffff is 103 in 32-bit arithmetic */
    m = encode_exact(&(gdr_rma_staged_hdr_t) {.type = (uint8_t) REQ,.flags = INL,.npieces = 1 },
                     &n);
    set_le(m + 84, UINT32_MAX, 4);
    t = exact(m, 103);
    refused("103 bytes claiming 1 piece and 2^32-1 inline bytes", t, 103, "length disagrees");
    free(t);
    free(m);
    m = malloc(GDR_RMA_STAGED_MSG_MAX + 1);
    gdr_rma_staged_hdr_t big = with(REQ, INL, 1, GDR_RMA_STAGED_MSG_MAX - HDR - PIECE, 0, 0);
    n = gdr_rma_staged_encode(m, GDR_RMA_STAGED_MSG_MAX, &big, pool_pieces, pool_inline);
    set_le(m + 84, big.inline_len + 1, 4);
    m[n] = 0;
    refused("GDR_RMA_STAGED_MSG_MAX + 1 bytes", m, n + 1, "longer than GDR_RMA_STAGED_MSG_MAX");
    free(m);
    refused_msg("PIECES_MAX + 1 pieces", with(REQ, 0, GDR_RMA_STAGED_PIECES_MAX + 1, 0, 0, 0),
                "more than GDR_RMA_STAGED_PIECES_MAX");

    refused_msg("REQ without pieces", with(REQ, INL, 0, 8, 0, 0), "without target");
    refused_msg("CHUNK with 2 pieces", with(CHUNK, 0, 2, 0, 100, 0), "target pieces on");
    refused_msg("INLINE on CHUNK", with(CHUNK, INL, 0, 0, 100, 0), "INLINE flag on");
    refused_msg("INLINE on ABORT", with(ABORT, INL, 0, 0, 0, 0), "INLINE flag on");
    refused_msg("DYNAMIC on RESULT", with(RESULT, INL | DYN, 0, 8, 8, 0), "DYNAMIC flag on");
    refused_msg("DYNAMIC on TAKEN", with(TAKEN, DYN, 0, 0, 0, 0), "DYNAMIC flag on");
    refused_msg("REQ, INLINE, no inline bytes", with(REQ, INL, 1, 0, 0, 0), "request whose inline");
    refused_msg("REQ, inline bytes, no INLINE", with(REQ, DYN, 1, 8, 0, 0), "request whose inline");
    refused_msg("inline RESULT: len 9, 8 bytes", with(RESULT, INL, 0, 8, 9, 0), "inline length");
    refused_msg("inline RESULT of no bytes", with(RESULT, INL, 0, 0, 0, 0), "of no bytes");
    refused_msg("RESULT in a slot with inline bytes", with(RESULT, 0, 0, 8, 8, 0), "inline length");
    refused_msg("RESULT in a slot of no bytes", with(RESULT, 0, 0, 0, 0, 0), "of no bytes");
    refused_msg("CHUNK of no bytes", with(CHUNK, 0, 0, 0, 0, 0), "of no bytes");
    refused_msg("CHUNK with inline bytes", with(CHUNK, 0, 0, 8, 100, 0), "inline data on");
    refused_msg("TAKEN with inline bytes", with(TAKEN, 0, 0, 8, 0, 0), "inline data on");
    refused_msg("DONE with inline bytes", with(DONE, 0, 0, 8, 0, -1), "inline data on");
    refused_msg("ABORT with inline bytes", with(ABORT, 0, 0, 8, 0, 0), "inline data on");
    refused_msg("DONE with status 1", with(DONE, 0, 0, 0, 0, 1), "positive status");
    refused_msg("REQ with status -1", with(REQ, 0, 1, 0, 0, -1), "nonzero status");
    refused_msg("TAKEN with status 3", with(TAKEN, 0, 0, 0, 0, 3), "nonzero status");
}

/* Every proper prefix of a valid message is refused, with a reason. */
static void test_truncation(void)
{
    gdr_rma_staged_hdr_t big = with(GDR_RMA_STAGED_REQ, GDR_RMA_STAGED_F_INLINE, 20, 300, 0, 0);

    for (int type = GDR_RMA_STAGED_REQ; type <= GDR_RMA_STAGED_ABORT + 1; type++) {
        gdr_rma_staged_hdr_t h = type <= GDR_RMA_STAGED_ABORT ? base(type) : big;
        size_t n, refusals = 0;
        uint8_t *m = encode_exact(&h, &n);
        for (size_t len = 0; len < n; len++) {
            uint8_t *t = exact(m, len);
            gdr_rma_staged_hdr_t d;
            const uint8_t *pc, *in;
            const char *why = NULL;
            refusals += gdr_rma_staged_decode(t, len, &d, &pc, &in, &why) == -1 && why != NULL;
            free(t);
        }
        GDR_CHECK(refusals == n, "type %d, %zu bytes: each of its %zu prefixes refused (%zu)",
                  h.type, n, n, refusals);
        free(m);
    }
}

/* A random valid message. */
static gdr_rma_staged_hdr_t random_valid(void)
{
    int type = GDR_RMA_STAGED_REQ + (int) (rnd() % 6);
    gdr_rma_staged_hdr_t h = {
        .type = (uint8_t) type,.kind = (uint8_t) rnd(),.op = (uint8_t) rnd(),
        .elem = (uint8_t) rnd(),.origin = (uint32_t) rnd(),.seq = (uint32_t) rnd(),
        .win_id = rnd(),.op_id = rnd(),.taddr = rnd(),.tbytes = rnd(),.slot = (uint32_t) rnd(),
        .off = rnd(),.raddr = rnd(),.len = (uint32_t) rnd(),.rkey = (uint32_t) rnd()
    };
    switch (type) {
        case GDR_RMA_STAGED_REQ:
            h.flags = (uint16_t) (rnd() % 4);
            h.npieces = 1 + (uint32_t) (rnd() % (rnd() % 8 == 0 ? GDR_RMA_STAGED_PIECES_MAX : 4));
            if (h.flags & GDR_RMA_STAGED_F_INLINE)
                h.inline_len = 1 + (uint32_t) (rnd() % 200);
            break;
        case GDR_RMA_STAGED_RESULT:
            h.flags = (uint16_t) (rnd() % 2);
            if (h.flags)
                h.len = h.inline_len = 1 + (uint32_t) (rnd() % 200);
            /* fall through */
        case GDR_RMA_STAGED_CHUNK:
            h.len += h.len == 0;
            break;
        case GDR_RMA_STAGED_DONE:
            h.status = rnd() % 8 == 0 ? INT32_MIN : -(int32_t) (rnd() % 7);
            break;
    }
    return h;
}

typedef struct fuzz_counts {
    unsigned long accepted, refused, bad, valid_refused;
} fuzz_counts_t;

/* Decodes the len bytes at m; an accepted message lies inside them and re-encodes to them. */
static void fuzz_one(const uint8_t *m, size_t len, fuzz_counts_t *c)
{
    static gdr_rma_staged_piece_t pieces[GDR_RMA_STAGED_PIECES_MAX];
    static uint8_t again[GDR_RMA_STAGED_MSG_MAX];
    gdr_rma_staged_hdr_t d;
    const uint8_t *pc, *in;
    const char *why = NULL;
    int rc = gdr_rma_staged_decode(m, len, &d, &pc, &in, &why);

    if (rc == -1) {
        c->refused++;
        c->bad += why == NULL;
        return;
    }
    c->accepted++;
    if (rc != 0 || d.npieces > GDR_RMA_STAGED_PIECES_MAX
        || (d.npieces > 0 && (pc != m + HDR || pc + (size_t) d.npieces * PIECE > m + len))
        || (d.inline_len > 0 && (in < m + HDR || in + d.inline_len != m + len))) {
        c->bad++;
        return;
    }
    for (uint32_t i = 0; i < d.npieces; i++)
        pieces[i] = gdr_rma_staged_piece_at(pc, i);
    c->bad += gdr_rma_staged_encode(again, sizeof(again), &d, pieces, in) != len
        || memcmp(again, m, len) != 0;
}

static void test_fuzz(void)
{
    const char *env = getenv("GDR_DEVWIN_WIRE_FUZZ");
    unsigned long iters = env ? strtoul(env, NULL, 10) : 200000;
    uint64_t seed = rng;
    fuzz_counts_t c = { 0 };
    uint8_t scratch[GDR_RMA_STAGED_MSG_MAX + 64];

    for (size_t i = 0; i < sizeof(pool_pieces) / sizeof(pool_pieces[0]); i++)
        pool_pieces[i] = (gdr_rma_staged_piece_t) {.off = rnd(),.len = rnd() };
    for (size_t i = 0; i < sizeof(pool_inline); i++)
        pool_inline[i] = (uint8_t) rnd();
    for (unsigned long it = 0; it < iters; it++) {
        size_t len;
        if (rnd() % 4 == 0) {   /* random bytes, half of them with a plausible start */
            len = rnd() % 400;
            for (size_t i = 0; i < len; i++)
                scratch[i] = (uint8_t) rnd();
            if (len >= HDR && rnd() % 2) {
                scratch[0] = GDR_RMA_STAGED_WIRE_VERSION;
                scratch[1] = (uint8_t) (1 + rnd() % 6);
                scratch[5] = 0;
                set_le(scratch + 6, rnd() % 4, 2);
                size_t np = rnd() % 2 ? 0 : (len - HDR) / PIECE;
                set_le(scratch + 48, np, 4);
                set_le(scratch + 84, len - HDR - np * PIECE, 4);
            }
        } else {                /* a valid message, then mutated */
            gdr_rma_staged_hdr_t h = random_valid();
            len = gdr_rma_staged_encode(scratch, sizeof(scratch), &h,
                                     pool_pieces + rnd() % 2, pool_inline + rnd() % 1000);
            uint8_t *m = exact(scratch, len);
            fuzz_counts_t v = { 0 };
            fuzz_one(m, len, &v);
            c.valid_refused += v.accepted != 1 || v.bad != 0;
            free(m);
            switch (rnd() % 3) {
                case 0:        /* one byte anywhere */
                    scratch[rnd() % len] = (uint8_t) rnd();
                    break;
                case 1:        /* one byte of the header, often the counts */
                    scratch[rnd() % 2 ? 48 + rnd() % 4 : rnd() % HDR] ^=
                        (uint8_t) (1 + rnd() % 255);
                    break;
                case 2:{       /* cut or extended */
                        size_t to = rnd() % (len + 32);
                        for (size_t i = len; i < to; i++)
                            scratch[i] = (uint8_t) rnd();
                        len = to;
                        break;
                    }
            }
        }
        uint8_t *m = exact(scratch, len);
        fuzz_one(m, len, &c);
        free(m);
    }
    GDR_CHECK(c.valid_refused == 0, "fuzz (seed %#llx, %lu iterations): every random valid "
              "message accepted (%lu not)", (unsigned long long) seed, iters, c.valid_refused);
    GDR_CHECK(c.bad == 0, "fuzz: every refusal has a reason; every accepted message lies "
              "inside its bytes and re-encodes to them (%lu not)", c.bad);
    GDR_CHECK(iters < 1000 || (c.accepted > iters / 20 && c.refused > iters / 20),
              "fuzz: both outcomes seen (%lu accepted, %lu refused)", c.accepted, c.refused);
}

static void test_peek(void)
{
    gdr_rma_staged_hdr_t h = base(GDR_RMA_STAGED_TAKEN);
    size_t n;
    uint8_t *m = encode_exact(&h, &n);
    int short_refused = 1;

    for (size_t len = 0; len < HDR; len++) {
        uint8_t *t = exact(m, len);
        uint64_t win = 1;
        uint32_t origin = 2;
        short_refused &= gdr_rma_staged_peek(t, len, &win, &origin) == -1 && win == 1
            && origin == 2;
        free(t);
    }
    GDR_CHECK(short_refused, "peek: each of the 88 lengths below the header: -1, nothing set");
    uint64_t win = 0;
    uint32_t origin = 0;
    GDR_CHECK(gdr_rma_staged_peek(m, n, &win, &origin) == 0 && win == h.win_id
              && origin == h.origin, "peek: window id %#llx and origin %#x",
              (unsigned long long) win, origin);
    m[0] = 2;
    win = origin = 0;
    GDR_CHECK(gdr_rma_staged_peek(m, n, &win, &origin) == 0 && win == h.win_id
              && origin == h.origin, "peek validates nothing: a version 2 message's ids");
    free(m);
}

int main(void)
{
    for (size_t i = 0; i < sizeof(pool_pieces) / sizeof(pool_pieces[0]); i++) {
        pool_pieces[i].off = 0x100000000ull * i + 0x11 * i;
        pool_pieces[i].len = 0x7f00000000000000ull + i;
    }
    for (size_t i = 0; i < sizeof(pool_inline); i++)
        pool_inline[i] = (uint8_t) (i * 7 + 3);
    test_round_trips();
    test_layout();
    test_encode_limits();
    test_refusals();
    test_truncation();
    test_peek();
    test_fuzz();
    return gdr_unit_finish();
}
