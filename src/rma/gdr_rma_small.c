#include "gdr_rma_small.h"

void gdr_rma_route_fill(const gdr_rma_win_t *w, int target, uint32_t short_cap,
                        uint32_t bcopy_cap, gdr_rma_route_t *r)
{
    const gdr_rma_transport_t *net = &w->eng->net;
    uint32_t short_max = 0, bcopy_max = 0;
    r->dynamic = (uint8_t) w->dynamic;
    r->rc = (uint8_t) gdr_rma_win_reaches(w, target);
    if (net->small_limits != NULL)
        net->small_limits(net->ctx, &short_max, &bcopy_max);
    r->short_max = short_max < short_cap ? short_max : short_cap;
    r->bcopy_max = bcopy_max < bcopy_cap ? bcopy_max : bcopy_cap;
}

/* The target address of [disp * unit, + len) inside target's window, or 0 when outside
 * (MPICH's range check runs first: this only keeps a wrong call from writing anywhere). */
static uint64_t target_addr(const gdr_rma_target_t *tg, int64_t disp, size_t len)
{
    uint64_t off;
    if (gdr_rma_range_check(disp, tg->disp_unit, len, tg->size, &off) != GDR_RMA_RANGE_OK)
        return 0;
    return tg->base + off;
}

int gdr_rma_put_small(gdr_rma_win_t *w, int target, gdr_rma_proto_t proto, const void *src,
                      size_t len, int64_t disp)
{
    const gdr_rma_transport_t *net = &w->eng->net;
    const gdr_rma_target_t *tg = &w->targets[target];
    uint64_t raddr = target_addr(tg, disp, len);
    if (raddr == 0 || net->put_short == NULL)
        return GDR_RMA_NOREG;
    gdr_rma_tracker_slot_t *slot = gdr_rma_tracker_write_begin(&w->tracker, target);
    int rc = proto == GDR_RMA_PROTO_RC_SHORT
        ? net->put_short(net->ctx, tg->peer, src, len, raddr, tg->rkey,
                         gdr_rma_tracker_write_done, slot)
        : net->put_bcopy(net->ctx, tg->peer, src, len, raddr, tg->rkey,
                         gdr_rma_tracker_write_done, slot);
    if (rc != GDR_RMA_OK) {
        gdr_rma_tracker_write_done(slot, 0);    /* never posted */
        return rc > 0 ? rc : GDR_RMA_ERROR;
    }
    w->eng->count[GDR_RMA_BY_NIC][GDR_RMA_PUT]++;
    return GDR_RMA_OK;
}

int gdr_rma_get_small(gdr_rma_win_t *w, int target, void *dst, size_t len, int64_t disp)
{
    const gdr_rma_transport_t *net = &w->eng->net;
    const gdr_rma_target_t *tg = &w->targets[target];
    uint64_t raddr = target_addr(tg, disp, len);
    if (raddr == 0 || net->get_bcopy == NULL)
        return GDR_RMA_NOREG;
    gdr_rma_tracker_slot_t *slot = gdr_rma_tracker_read_begin(&w->tracker, target);
    int rc = net->get_bcopy(net->ctx, tg->peer, dst, len, raddr, tg->rkey,
                            gdr_rma_tracker_read_done, slot);
    if (rc != GDR_RMA_OK) {
        gdr_rma_tracker_read_done(slot, 0);     /* never posted */
        return rc > 0 ? rc : GDR_RMA_ERROR;
    }
    w->eng->count[GDR_RMA_BY_NIC][GDR_RMA_GET]++;
    return GDR_RMA_OK;
}
