/* Small contiguous puts and gets of host memory, by the target's cached route: the
 * selector's rc/short and rc/bcopy (gdr_rma_select.h) posted with no plan and no operation
 * object, counted per target in the window's tracker.  What an MPI_Put of 8 bytes costs is
 * mostly this path's (bench/opcost); everything else goes through gdr_rma_plan and
 * gdr_rma_issue. */
#ifndef GDR_RMA_SMALL_H
#define GDR_RMA_SMALL_H

#include "gdr_rma_select.h"
#include "gdr_rma_win.h"
#include "gdr_rma_completion.h"

/* The target address of [disp * unit, + len) inside target's window, or 0 when outside
 * (MPICH's range check runs first: this only keeps a wrong call from writing anywhere). */
static inline uint64_t gdr_rma_small_target_addr(const gdr_rma_target_t *tg, int64_t disp,
                                                 size_t len)
{
    uint64_t off;
    if (gdr_rma_range_check(disp, tg->disp_unit, len, tg->size, &off) != GDR_RMA_RANGE_OK)
        return 0;
    return tg->base + off;
}

/* A put of len > 0 bytes from src, or a get into dst, at disp (in the target's units) of
 * target's window, by proto (put: GDR_RMA_PROTO_RC_SHORT or _RC_BCOPY; get: _RC_BCOPY).
 * GDR_RMA_OK: posted.  GDR_RMA_NOREG: not this way, nothing done (outside the window, over
 * a limit, no such protocol): the general path takes it.  GDR_RMA_BUSY: no room now,
 * nothing done.  GDR_RMA_ERROR: the transport failed (its error says why).  Inline:
 * the hot path of an 8-byte MPI_Put or MPI_Get (bench/opcost). */
static inline int gdr_rma_put_small(gdr_rma_win_t *w, int target, gdr_rma_proto_t proto,
                                    const void *src, size_t len, int64_t disp)
{
    const gdr_rma_transport_t *net = &w->eng->net;
    const gdr_rma_target_t *tg = &w->targets[target];
    uint64_t raddr = gdr_rma_small_target_addr(tg, disp, len);
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

static inline int gdr_rma_get_small(gdr_rma_win_t *w, int target, void *dst, size_t len,
                                    int64_t disp)
{
    const gdr_rma_transport_t *net = &w->eng->net;
    const gdr_rma_target_t *tg = &w->targets[target];
    uint64_t raddr = gdr_rma_small_target_addr(tg, disp, len);
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

#endif /* GDR_RMA_SMALL_H */
