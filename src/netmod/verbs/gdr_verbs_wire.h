/* Wire format of gdr's active-message channel: what one RC SEND carries.
 *
 *   [gdr_verbs_wire_hdr_t][am_hdr, padded to 8 bytes][body]
 *
 * body: EAGER: data_sz bytes of payload; RTS: gdr_verbs_wire_rts_t (the receiver
 * RDMA-reads data_sz bytes from the sender); FIN: gdr_verbs_wire_fin_t; CREDIT: none.
 * Host byte order: both ends run the same build on the same architecture. */
#ifndef GDR_VERBS_WIRE_H
#define GDR_VERBS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define GDR_VERBS_WIRE_MAGIC 0x6764u    /* "gd" */

typedef enum gdr_verbs_msg_kind {
    GDR_VERBS_MSG_EAGER = 1,    /* AM header and payload inline */
    GDR_VERBS_MSG_RTS = 2,      /* AM header; payload to be RDMA-read from the sender */
    GDR_VERBS_MSG_FIN = 3,      /* the receiver finished reading an RTS payload */
    GDR_VERBS_MSG_CREDIT = 4    /* only returns receive credits */
} gdr_verbs_msg_kind_t;

typedef struct gdr_verbs_wire_hdr {
    uint16_t magic;
    uint8_t kind;               /* gdr_verbs_msg_kind_t */
    uint8_t reserved;
    uint16_t credits;           /* receive buffers re-posted for the peer since last told */
    uint16_t reserved2;
    uint32_t am_hdr_sz;
    uint32_t handler_id;        /* the receiver's handler, opaque to the channel; EAGER and RTS */
    uint64_t data_sz;           /* EAGER: payload bytes; RTS: bytes to read */
} gdr_verbs_wire_hdr_t;

typedef struct gdr_verbs_wire_rts {
    uint64_t addr;              /* sender's registered buffer */
    uint32_t rkey;
    uint32_t reserved;
    uint64_t cookie;            /* sender's handle, echoed in the FIN */
} gdr_verbs_wire_rts_t;

typedef struct gdr_verbs_wire_fin {
    uint64_t cookie;
} gdr_verbs_wire_fin_t;

/* A parsed message: pointers into the receive buffer. */
typedef struct gdr_verbs_msg {
    gdr_verbs_msg_kind_t kind;
    uint32_t handler_id;
    uint16_t credits;
    const void *am_hdr;
    size_t am_hdr_sz;
    const void *data;           /* EAGER payload */
    uint64_t data_sz;
    gdr_verbs_wire_rts_t rts;   /* RTS */
    uint64_t cookie;            /* FIN */
} gdr_verbs_msg_t;

typedef enum gdr_verbs_wire_status {
    GDR_VERBS_WIRE_OK = 0,
    GDR_VERBS_WIRE_SHORT,       /* fewer bytes than the header says */
    GDR_VERBS_WIRE_BAD_MAGIC,
    GDR_VERBS_WIRE_BAD_KIND,
    GDR_VERBS_WIRE_TRAILING     /* more bytes than the header says */
} gdr_verbs_wire_status_t;

static inline size_t gdr_verbs_wire_pad8(size_t n)
{
    return (n + 7) & ~(size_t) 7;
}

/* Bytes a message of this kind occupies on the wire. */
size_t gdr_verbs_wire_size(gdr_verbs_msg_kind_t kind, size_t am_hdr_sz, uint64_t data_sz);

/* Writes header and AM header into buf (capacity cap); returns the offset at which the
 * body goes, or 0 when the whole message (size from gdr_verbs_wire_size) does not fit. */
size_t gdr_verbs_wire_put_hdr(void *buf, size_t cap, gdr_verbs_msg_kind_t kind,
                              uint32_t handler_id, uint16_t credits, const void *am_hdr,
                              size_t am_hdr_sz, uint64_t data_sz);

/* Validates len received bytes and fills msg.  Never reads outside [buf, buf+len). */
gdr_verbs_wire_status_t gdr_verbs_wire_parse(const void *buf, size_t len, gdr_verbs_msg_t *msg);

const char *gdr_verbs_wire_str(gdr_verbs_wire_status_t status);

#endif /* GDR_VERBS_WIRE_H */
