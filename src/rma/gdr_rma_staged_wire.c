#include "gdr_rma_staged_wire.h"

#include <string.h>

/* version type kind op elem pad: 6; flags: 2; origin seq: 8; win_id op_id taddr tbytes: 32;
 * npieces slot: 8; off raddr: 16; len rkey status inline_len: 16. */
_Static_assert(6 * 1 + 2 + 2 * 4 + 4 * 8 + 2 * 4 + 2 * 8 + 4 * 4 == GDR_RMA_STAGED_HDR_BYTES,
               "the encoded header is 88 bytes");

/* Little-endian fields, written and read through a cursor. */
static void put(uint8_t **p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        (*p)[i] = (uint8_t) (v >> (8 * i));
    *p += bytes;
}

static uint64_t get(const uint8_t **p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t) (*p)[i] << (8 * i);
    *p += bytes;
    return v;
}

/* Two's complement, without the implementation-defined conversion of a large unsigned. */
static int32_t to_i32(uint32_t u)
{
    return u <= INT32_MAX ? (int32_t) u : -(int32_t) (UINT32_MAX - u) - 1;
}

static void put_hdr(uint8_t *p, const gdr_rma_staged_hdr_t *h)
{
    put(&p, GDR_RMA_STAGED_WIRE_VERSION, 1);
    put(&p, h->type, 1);
    put(&p, h->kind, 1);
    put(&p, h->op, 1);
    put(&p, h->elem, 1);
    put(&p, 0, 1);
    put(&p, h->flags, 2);
    put(&p, h->origin, 4);
    put(&p, h->seq, 4);
    put(&p, h->win_id, 8);
    put(&p, h->op_id, 8);
    put(&p, h->taddr, 8);
    put(&p, h->tbytes, 8);
    put(&p, h->npieces, 4);
    put(&p, h->slot, 4);
    put(&p, h->off, 8);
    put(&p, h->raddr, 8);
    put(&p, h->len, 4);
    put(&p, h->rkey, 4);
    put(&p, (uint32_t) h->status, 4);
    put(&p, h->inline_len, 4);
}

/* The header's fields into h; the pad byte into *pad. */
static void get_hdr(const uint8_t *p, gdr_rma_staged_hdr_t *h, unsigned *pad)
{
    h->version = (uint8_t) get(&p, 1);
    h->type = (uint8_t) get(&p, 1);
    h->kind = (uint8_t) get(&p, 1);
    h->op = (uint8_t) get(&p, 1);
    h->elem = (uint8_t) get(&p, 1);
    *pad = (unsigned) get(&p, 1);
    h->flags = (uint16_t) get(&p, 2);
    h->origin = (uint32_t) get(&p, 4);
    h->seq = (uint32_t) get(&p, 4);
    h->win_id = get(&p, 8);
    h->op_id = get(&p, 8);
    h->taddr = get(&p, 8);
    h->tbytes = get(&p, 8);
    h->npieces = (uint32_t) get(&p, 4);
    h->slot = (uint32_t) get(&p, 4);
    h->off = get(&p, 8);
    h->raddr = get(&p, 8);
    h->len = (uint32_t) get(&p, 4);
    h->rkey = (uint32_t) get(&p, 4);
    h->status = to_i32((uint32_t) get(&p, 4));
    h->inline_len = (uint32_t) get(&p, 4);
}

/* At most 88 + 16 * (2^32 - 1) + 2^32 - 1 < 2^37: no overflow in 64 bits. */
static uint64_t wire_bytes(const gdr_rma_staged_hdr_t *h)
{
    return GDR_RMA_STAGED_HDR_BYTES + (uint64_t) h->npieces * GDR_RMA_STAGED_PIECE_BYTES
        + h->inline_len;
}

size_t gdr_rma_staged_msg_bytes(const gdr_rma_staged_hdr_t *h)
{
    uint64_t n = wire_bytes(h);
    return n > SIZE_MAX ? SIZE_MAX : (size_t) n;
}

size_t gdr_rma_staged_encode(void *buf, size_t cap, const gdr_rma_staged_hdr_t *h,
                          const gdr_rma_staged_piece_t *pieces, const void *inline_data)
{
    uint64_t n = wire_bytes(h);
    uint8_t *p = buf;

    if (n > cap || n > GDR_RMA_STAGED_MSG_MAX)
        return 0;
    put_hdr(p, h);
    p += GDR_RMA_STAGED_HDR_BYTES;
    for (uint32_t i = 0; i < h->npieces; i++) {
        put(&p, pieces[i].off, 8);
        put(&p, pieces[i].len, 8);
    }
    if (h->inline_len > 0)
        memcpy(p, inline_data, h->inline_len);
    return (size_t) n;
}

/* Why h, read from a message of len bytes, is malformed; NULL when it is not. */
static const char *malformed(const gdr_rma_staged_hdr_t *h, unsigned pad, size_t len)
{
    int inl = (h->flags & GDR_RMA_STAGED_F_INLINE) != 0;

    if (h->version != GDR_RMA_STAGED_WIRE_VERSION)
        return "unknown wire version of a device RMA message";
    if (h->type < GDR_RMA_STAGED_REQ || h->type > GDR_RMA_STAGED_ABORT)
        return "unknown device RMA message type";
    if (h->flags & ~GDR_RMA_STAGED_F_ALL)
        return "unknown flags in a device RMA message";
    if (pad != 0)
        return "nonzero pad byte in a device RMA message header";
    if (wire_bytes(h) != len)
        return "device RMA message length disagrees with its piece count and inline length";
    if (len > GDR_RMA_STAGED_MSG_MAX)
        return "device RMA message longer than GDR_RMA_STAGED_MSG_MAX";
    if (h->npieces > GDR_RMA_STAGED_PIECES_MAX)
        return "more than GDR_RMA_STAGED_PIECES_MAX target pieces in a device RMA message";
    if (h->type == GDR_RMA_STAGED_REQ && h->npieces == 0)
        return "device RMA request without target pieces";
    if (h->type != GDR_RMA_STAGED_REQ && h->npieces != 0)
        return "target pieces on a device RMA message other than a request";
    if (inl && h->type != GDR_RMA_STAGED_REQ && h->type != GDR_RMA_STAGED_RESULT)
        return "INLINE flag on a device RMA message other than a request or result";
    if ((h->flags & GDR_RMA_STAGED_F_DYNAMIC) && h->type != GDR_RMA_STAGED_REQ)
        return "DYNAMIC flag on a device RMA message other than a request";
    if ((h->type == GDR_RMA_STAGED_CHUNK || h->type == GDR_RMA_STAGED_RESULT) && h->len == 0)
        return "device RMA chunk or result of no bytes";
    if (h->type == GDR_RMA_STAGED_REQ && (h->inline_len > 0) != inl)
        return "device RMA request whose inline data disagrees with its INLINE flag";
    if (h->type == GDR_RMA_STAGED_RESULT && h->inline_len != (inl ? h->len : 0))
        return "device RMA result whose inline length disagrees with its INLINE flag and len";
    if (h->type != GDR_RMA_STAGED_REQ && h->type != GDR_RMA_STAGED_RESULT && h->inline_len != 0)
        return "inline data on a device RMA message other than a request or result";
    if (h->type == GDR_RMA_STAGED_DONE && h->status > 0)
        return "device RMA DONE with a positive status";
    if (h->type != GDR_RMA_STAGED_DONE && h->status != 0)
        return "nonzero status on a device RMA message other than DONE";
    return NULL;
}

int gdr_rma_staged_decode(const void *msg, size_t len, gdr_rma_staged_hdr_t *h,
                       const uint8_t **pieces, const uint8_t **inline_data, const char **why)
{
    const uint8_t *p = msg;
    gdr_rma_staged_hdr_t d;
    unsigned pad;

    if (len < GDR_RMA_STAGED_HDR_BYTES) {
        *why = "device RMA message shorter than its header";
        return -1;
    }
    get_hdr(p, &d, &pad);
    *why = malformed(&d, pad, len);
    if (*why != NULL)
        return -1;
    *h = d;
    *pieces = d.npieces > 0 ? p + GDR_RMA_STAGED_HDR_BYTES : NULL;
    *inline_data = d.inline_len > 0 ? p + len - d.inline_len : NULL;
    return 0;
}

gdr_rma_staged_piece_t gdr_rma_staged_piece_at(const uint8_t *pieces, uint32_t i)
{
    const uint8_t *p = pieces + (size_t) i * GDR_RMA_STAGED_PIECE_BYTES;
    gdr_rma_staged_piece_t pc;

    pc.off = get(&p, 8);
    pc.len = get(&p, 8);
    return pc;
}

int gdr_rma_staged_peek(const void *msg, size_t len, uint64_t *win_id, uint32_t *origin)
{
    const uint8_t *p = msg;

    if (len < GDR_RMA_STAGED_HDR_BYTES)
        return -1;
    p += 8;     /* version .. flags */
    *origin = (uint32_t) get(&p, 4);
    p += 4;     /* seq */
    *win_id = get(&p, 8);
    return 0;
}
