/* Which named protocol carries one RMA operation.  What reaches a target of a window is
 * decided once (its route: the NIC, the node's GPU mapping, the staged protocol, or only
 * messages) and kept per (window, target); an operation then picks a protocol of that
 * route by its kind, size, memory and shape, against thresholds the host sets from CVARs.
 * The names read as UCX's: kind/transport/method, e.g. "put/rc/short".
 * The protocols are gdr_rma_proto.h's.
 * Pure; thread safe. */
#ifndef GDR_RMA_SELECT_H
#define GDR_RMA_SELECT_H

#include <stddef.h>
#include <stdint.h>
#include "gdr_rma_kind.h"
#include "gdr_rma_path.h"
#include "gdr_rma_proto.h"

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

/* What the engine knows of target's route: rc (a peer and a key), dynamic, and the
 * small protocols' limits (capped by short_cap and bcopy_cap, the host's thresholds); the
 * host adds the rest and sets known.  (gdr_rma_route.c; w is a gdr_rma_win_t) */
struct gdr_rma_win;
void gdr_rma_route_fill(const struct gdr_rma_win *w, int target, uint32_t short_cap,
                        uint32_t bcopy_cap, gdr_rma_route_t *r);

/* target's route as far as the engine needs it (the above under eng->short_cap): filled
 * while the host has not decided it, and again while the NIC's inline limit is unknown
 * (no queue pair yet).  The general path and the synchronisation writes ask it per
 * operation; the hot path reads the route the host keeps. */
const gdr_rma_route_t *gdr_rma_route_rc(struct gdr_rma_win *w, int target);

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
