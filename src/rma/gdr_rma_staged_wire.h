/* The staged protocol's messages (maint/gpu-windows-plan.md section 2): how an origin and
 * a target move data in and out of device memory, and accumulate into it, with pinned
 * staging slots in between.  One fixed header, little-endian on the wire whatever the
 * host, then the target pieces, then inline data.  Every message fits one header-only
 * active message of the host (GDR_RMA_STAGED_MSG_MAX bytes).
 *
 *   REQ     origin -> target  an operation: kind, op, element type, where (pieces),
 *                             inline data (small operations) or the promise of CHUNKs
 *   CHUNK   origin -> target  [off, off+len) of the origin data waits in the origin's
 *                             send slot `slot` at (raddr, rkey): read it, then say TAKEN
 *   TAKEN   either way        the reader has read send slot `slot`: its owner reuses it
 *   RESULT  target -> origin  [off, off+len) of the results: inline, or in the target's
 *                             send slot `slot` at (raddr, rkey) to read, then say TAKEN
 *   DONE    target -> origin  the operation is complete at the target (status 0) or
 *                             failed (a negative GDR_RMA_STAGED_E_* status)
 *   ABORT   origin -> target  the origin gives up an operation (its buffer was freed):
 *                             no more CHUNKs come; the target answers DONE
 *
 * Decoding checks sizes and field ranges only; what the fields mean for a window (ranges,
 * sequence, operation ids) the protocol checks (gdr_rma_staged.c).  Plain C, no state. */
#ifndef GDR_RMA_STAGED_WIRE_H
#define GDR_RMA_STAGED_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define GDR_RMA_STAGED_WIRE_VERSION 1
#define GDR_RMA_STAGED_HDR_BYTES 88        /* the encoded header */
#define GDR_RMA_STAGED_PIECE_BYTES 16      /* an encoded piece: u64 offset, u64 length */
#define GDR_RMA_STAGED_MSG_MAX 16320       /* the host's header-only messages carry this */
#define GDR_RMA_STAGED_PIECES_MAX 512      /* per REQ: more go as several operations */

typedef enum gdr_rma_staged_msg_type {
    GDR_RMA_STAGED_REQ = 1, GDR_RMA_STAGED_CHUNK, GDR_RMA_STAGED_TAKEN, GDR_RMA_STAGED_RESULT,
    GDR_RMA_STAGED_DONE, GDR_RMA_STAGED_ABORT
} gdr_rma_staged_msg_type_t;

/* flags */
enum {
    GDR_RMA_STAGED_F_INLINE = 1,   /* REQ: the origin data is inline; RESULT: the results are */
    GDR_RMA_STAGED_F_DYNAMIC = 2,  /* REQ: taddr is an absolute address (dynamic window) */
    GDR_RMA_STAGED_F_ALL = 3
};

/* DONE statuses: why a target refused or failed an operation. */
enum {
    GDR_RMA_STAGED_E_RANGE = -1,   /* a piece outside the window or an attached region */
    GDR_RMA_STAGED_E_OP = -2,      /* kind, op or element type the target cannot apply */
    GDR_RMA_STAGED_E_PROTO = -3,   /* malformed or out of sequence */
    GDR_RMA_STAGED_E_ABORTED = -4, /* the origin aborted it */
    GDR_RMA_STAGED_E_DEVICE = -5,  /* the target's device or transport failed */
    GDR_RMA_STAGED_E_NOMEM = -6
};

typedef struct gdr_rma_staged_hdr {
    uint8_t version, type;      /* GDR_RMA_STAGED_WIRE_VERSION, gdr_rma_staged_msg_type_t */
    uint8_t kind, op, elem;     /* REQ: gdr_rma_kind_t; gdr_gpu_op_t, gdr_gpu_type_t */
    uint16_t flags;
    uint32_t origin;            /* the sender's rank in the window */
    uint32_t seq;               /* REQ and ABORT: per (window, origin -> target), from 0 */
    uint64_t win_id;            /* the host's window id, the same at every rank */
    uint64_t op_id;             /* the origin's name for the operation */
    uint64_t taddr;             /* REQ: bytes from the window base, or an address (DYNAMIC) */
    uint64_t tbytes;            /* REQ: bytes of target data (sum of the pieces) */
    uint32_t npieces;           /* REQ: target pieces after the header (1..PIECES_MAX) */
    uint32_t slot;              /* CHUNK, RESULT (not inline), TAKEN: the sender's slot */
    uint64_t off;               /* CHUNK, RESULT: offset into the operation's data */
    uint64_t raddr;             /* CHUNK, RESULT: where the slot is, for an RDMA read */
    uint32_t len;               /* CHUNK, RESULT: bytes */
    uint32_t rkey;
    int32_t status;             /* DONE: 0 or GDR_RMA_STAGED_E_* */
    uint32_t inline_len;        /* bytes of inline data after the pieces */
} gdr_rma_staged_hdr_t;

/* A target piece: `len` bytes at `off` from taddr. */
typedef struct gdr_rma_staged_piece {
    uint64_t off, len;
} gdr_rma_staged_piece_t;

/* Bytes the message of h takes (header, h->npieces pieces, h->inline_len bytes). */
size_t gdr_rma_staged_msg_bytes(const gdr_rma_staged_hdr_t *h);

/* Writes h (its version is set here), h->npieces pieces and h->inline_len bytes of
 * inline (may be NULL when inline_len is 0) into buf of cap bytes.  Returns the bytes
 * written, or 0 when they do not fit cap or GDR_RMA_STAGED_MSG_MAX. */
size_t gdr_rma_staged_encode(void *buf, size_t cap, const gdr_rma_staged_hdr_t *h,
                          const gdr_rma_staged_piece_t *pieces, const void *inline_data);

/* Reads a message of len bytes: 0 with *h filled, *pieces pointing at the encoded pieces
 * (read them with gdr_rma_staged_piece_at) and *inline_data at the inline bytes (NULL when
 * none); or -1 when the message is malformed (wrong version, unknown type or flags,
 * sizes that disagree with len, npieces above GDR_RMA_STAGED_PIECES_MAX, a piece count or
 * inline data on a type that has none, len 0 on CHUNK or RESULT), with *why set to a
 * static sentence.  Never reads outside [msg, msg+len). */
int gdr_rma_staged_decode(const void *msg, size_t len, gdr_rma_staged_hdr_t *h,
                       const uint8_t **pieces, const uint8_t **inline_data, const char **why);

/* Piece i of the pieces gdr_rma_staged_decode found (i < h->npieces). */
gdr_rma_staged_piece_t gdr_rma_staged_piece_at(const uint8_t *pieces, uint32_t i);

/* The window id and origin of a message, for the host to find the window before decoding
 * (0, or -1 when len is below the header). */
int gdr_rma_staged_peek(const void *msg, size_t len, uint64_t *win_id, uint32_t *origin);

#endif /* GDR_RMA_STAGED_WIRE_H */
