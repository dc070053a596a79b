/* Which named protocol carries one RMA operation.  What reaches a target of a window is
 * decided once (its route: the NIC, the node's GPU mapping, the staged protocol, or only
 * messages) and kept per (window, target); an operation then picks a protocol of that
 * route by its kind, size, memory and shape, against thresholds the host sets from CVARs.
 * The names read as UCX's: kind/transport/method, e.g. "put/rc/short".
 *
 * The protocols:
 *   rc/short   the data inside the work request (inline): no copy the NIC waits for,
 *              the origin buffer free on return (puts up to the NIC's inline limit)
 *   rc/bcopy   through a registered bounce buffer: one host copy, the buffer free at once
 *   rc/zcopy   the user's contiguous buffer, registered through the cache (device memory
 *              too when the NIC reaches it)
 *   rc/iov     the user's pieces as one gather/scatter work request
 *   rc/atomic  NIC atomics, one per 8-byte element; rc/read: a NO_OP accumulate's read
 *   ipc        the same node's GPU path: the target's device window mapped here
 *   staged     device memory the NIC cannot reach: the staged protocol's pinned chunks
 *   am         MPICH's active messages, carried out by the target's CPU
 * Pure; thread safe. */
#ifndef GDR_RMA_SELECT_H
#define GDR_RMA_SELECT_H

#include <stddef.h>
#include <stdint.h>
#include "gdr_rma_kind.h"
#include "gdr_rma_path.h"

typedef enum gdr_rma_proto {
    GDR_RMA_PROTO_AM = 0,
    GDR_RMA_PROTO_RC_SHORT,
    GDR_RMA_PROTO_RC_BCOPY,
    GDR_RMA_PROTO_RC_ZCOPY,
    GDR_RMA_PROTO_RC_IOV,
    GDR_RMA_PROTO_RC_ATOMIC,
    GDR_RMA_PROTO_RC_READ,
    GDR_RMA_PROTO_IPC,
    GDR_RMA_PROTO_STAGED,
    GDR_RMA_PROTOS
} gdr_rma_proto_t;

/* What reaches one target of a window, decided at its first operation. */
typedef struct gdr_rma_route {
    uint8_t known;              /* decided (0: ask gdr_rma_route_decide) */
    uint8_t rc;                 /* the NIC reaches the target's window: a peer and a key */
    uint8_t ipc;                /* same node, the target's device window is mapped here */
    uint8_t node_am;            /* same node, and the node's operations go as messages */
    uint8_t staged;             /* the staged protocol reaches the target */
    uint8_t nic_gpu;            /* the NIC reads and writes device memory (dmabuf, peermem) */
    uint8_t dynamic;            /* addresses found per region: no cached key or base */
    uint8_t small;              /* rc, and none of ipc, node_am, dynamic: the hot path's */
    uint32_t short_max;         /* rc/short up to this many bytes (0: none) */
    uint32_t bcopy_max;         /* rc/bcopy up to this many bytes */
} gdr_rma_route_t;

/* One operation, as the selector sees it. */
typedef struct gdr_rma_select_in {
    gdr_rma_kind_t kind;
    uint64_t bytes;
    int device;                 /* the buffer this rank's side reads or fills is GPU memory */
    size_t opieces;             /* pieces of that buffer (1: contiguous) */
    size_t tpieces;             /* pieces at the target (1: contiguous) */
    int sge_fits;               /* the transport takes opieces in one work request */
    gdr_rma_path_t acc_path;    /* accumulates: gdr_rma_acc_path's answer */
} gdr_rma_select_in_t;

gdr_rma_proto_t gdr_rma_select(const gdr_rma_route_t *r, const gdr_rma_select_in_t *in);

/* gdr_rma_select's answer for a contiguous host buffer to a contiguous target of a route
 * with rc: the rule itself, inline for the hot path (a cached route's small operations). */
static inline gdr_rma_proto_t gdr_rma_select_contig(const gdr_rma_route_t *r, int put,
                                                    uint64_t bytes)
{
    if (put && bytes <= r->short_max)
        return GDR_RMA_PROTO_RC_SHORT;
    return bytes <= r->bcopy_max ? GDR_RMA_PROTO_RC_BCOPY : GDR_RMA_PROTO_RC_ZCOPY;
}

/* "put/rc/short", "acc/am", ...: the protocol's name for an operation of kind. */
const char *gdr_rma_proto_name(gdr_rma_kind_t kind, gdr_rma_proto_t proto);

/* The route's protocols in one line (MPIR_CVAR_CH4_GDR_VERBOSE=2 prints it per window and
 * target), e.g. "put: rc/short <= 64 B < rc/bcopy <= 8192 B < rc/zcopy; get: ...".  Returns
 * what snprintf would. */
int gdr_rma_route_str(const gdr_rma_route_t *r, char *buf, size_t len);

#endif /* GDR_RMA_SELECT_H */
