#include "gdr_rma_select.h"
#include "gdr_rma_plan.h"

#include <stdio.h>

static gdr_rma_proto_t select_putget(const gdr_rma_route_t *r, const gdr_rma_select_in_t *in)
{
    if (gdr_rma_target_too_scattered(in->kind, in->tpieces, in->bytes))
        return GDR_RMA_PROTO_AM;        /* unpacked by the target */
    if (in->device) {
        /* never touched by the host: the NIC takes it as a list of one target piece */
        if (r->nic_gpu && in->tpieces == 1)
            return in->opieces == 1 ? GDR_RMA_PROTO_RC_ZCOPY : in->sge_fits
                ? GDR_RMA_PROTO_RC_IOV : r->staged ? GDR_RMA_PROTO_STAGED : GDR_RMA_PROTO_AM;
        return r->staged ? GDR_RMA_PROTO_STAGED : GDR_RMA_PROTO_AM;
    }
    if (in->opieces > 1)
        /* a list when the target is one piece and the NIC takes the list; else packed */
        return in->tpieces == 1 && in->sge_fits ? GDR_RMA_PROTO_RC_IOV : GDR_RMA_PROTO_RC_BCOPY;
    if (in->tpieces == 1)
        return gdr_rma_select_contig(r, in->kind == GDR_RMA_PUT, in->bytes);
    return in->bytes <= r->bcopy_max ? GDR_RMA_PROTO_RC_BCOPY : GDR_RMA_PROTO_RC_ZCOPY;
}

gdr_rma_proto_t gdr_rma_select(const gdr_rma_route_t *r, const gdr_rma_select_in_t *in)
{
    int putget = in->kind == GDR_RMA_PUT || in->kind == GDR_RMA_GET;
    if (r->ipc)
        return GDR_RMA_PROTO_IPC;
    if (r->node_am)
        return GDR_RMA_PROTO_AM;
    if (!r->rc)
        return in->device && r->staged ? GDR_RMA_PROTO_STAGED : GDR_RMA_PROTO_AM;
    if (putget)
        return select_putget(r, in);
    /* accumulates: NIC atomics read their operands on the host */
    if (in->device)
        return r->staged ? GDR_RMA_PROTO_STAGED : GDR_RMA_PROTO_AM;
    if (gdr_rma_target_too_scattered(in->kind, in->tpieces, in->bytes))
        return GDR_RMA_PROTO_AM;
    switch (in->acc_path) {
        case GDR_RMA_PATH_FETCH_ADD:
        case GDR_RMA_PATH_CMP_SWAP:
            return GDR_RMA_PROTO_RC_ATOMIC;
        case GDR_RMA_PATH_READ:
            return in->tpieces == 1 ? GDR_RMA_PROTO_RC_READ : GDR_RMA_PROTO_AM;
        default:
            return GDR_RMA_PROTO_AM;
    }
}

const char *gdr_rma_proto_name(gdr_rma_kind_t kind, gdr_rma_proto_t proto)
{
    static const char *const names[3][GDR_RMA_PROTOS] = {
        {"put/am", "put/rc/short", "put/rc/bcopy", "put/rc/zcopy", "put/rc/iov", "put/?",
         "put/?", "put/ipc", "put/staged"},
        {"get/am", "get/?", "get/rc/bcopy", "get/rc/zcopy", "get/rc/iov", "get/?", "get/?",
         "get/ipc", "get/staged"},
        {"acc/am", "acc/?", "acc/?", "acc/?", "acc/?", "acc/rc/atomic", "acc/rc/read",
         "acc/ipc", "acc/staged"},
    };
    int row = kind == GDR_RMA_PUT ? 0 : kind == GDR_RMA_GET ? 1 : 2;
    return proto >= 0 && proto < GDR_RMA_PROTOS ? names[row][proto] : "?";
}

int gdr_rma_route_str(const gdr_rma_route_t *r, char *buf, size_t len)
{
    if (r->ipc)
        return snprintf(buf, len, "same node, device window mapped: ipc for every operation");
    if (r->node_am)
        return snprintf(buf, len, "same node: am for every operation");
    if (!r->rc)
        return snprintf(buf, len, "no RDMA: am%s", r->staged ? " (device buffers: staged)" : "");
    const char *dev = r->nic_gpu ? "rc/zcopy" : r->staged ? "staged" : "am";
    if (r->short_max > 0)
        return snprintf(buf, len, "put: rc/short <= %u B < rc/bcopy <= %u B < rc/zcopy; get: "
                        "rc/bcopy <= %u B < rc/zcopy; device buffers: %s; accumulates: "
                        "rc/atomic where the NIC has the op, else am%s", r->short_max,
                        r->bcopy_max, r->bcopy_max, dev, r->dynamic ? "; dynamic" : "");
    return snprintf(buf, len, "put: rc/bcopy <= %u B < rc/zcopy; get: rc/bcopy <= %u B < "
                    "rc/zcopy; device buffers: %s; accumulates: rc/atomic where the NIC has "
                    "the op, else am%s", r->bcopy_max, r->bcopy_max, dev,
                    r->dynamic ? "; dynamic" : "");
}
