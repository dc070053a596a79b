#include "gdr_rma_acc_order.h"
#include "gdr_rma_engine.h"

/* With ordered accumulates and both paths in use, an origin that changes path to a
 * target first lets the other path's accumulates to it complete. */
typedef struct {
    const gdr_rma_win_t *w;
    int target;
} acc_target_t;

static int am_acc_pending(const void *arg)
{
    const acc_target_t *at = arg;
    return at->w->eng->host.am_accumulates_pending(at->w->eng->host.ctx, at->w->host_win,
                                                   at->target);
}

int gdr_rma_switch_path(gdr_rma_win_t *w, int target, gdr_rma_acc_via_t via)
{
    int rc = GDR_RMA_OK;
    if (w->last_acc_path == NULL || w->last_acc_path[target] == via)
        return GDR_RMA_OK;
    uint8_t last = w->last_acc_path[target];
    int staged = via == GDR_RMA_VIA_STAGED || last == GDR_RMA_VIA_STAGED;
    w->last_acc_path[target] = (uint8_t) via;   /* the way taken, waited for or not */
    if (!(staged ? w->atomics.order_after_reads : w->atomics.switch_wait))
        return GDR_RMA_OK;
    if (last == GDR_RMA_VIA_NIC || last == GDR_RMA_VIA_STAGED) {
        rc = gdr_rma_wait_zero(w->eng, &w->tracker.remote[target], last == GDR_RMA_VIA_NIC
                               ? "for RDMA accumulates before switching paths"
                               : "for staged accumulates before switching paths", target);
    } else if (last == GDR_RMA_VIA_MESSAGE) {
        acc_target_t at = {.w = w,.target = target };
        rc = gdr_rma_wait_until(w->eng, am_acc_pending, &at,
                                "for message accumulates before switching paths", target);
    }
    return rc;
}

int gdr_rma_note_message(gdr_rma_win_t *w, gdr_rma_kind_t kind, int target)
{
    w->eng->count[GDR_RMA_BY_MESSAGE][kind]++;
    if (kind == GDR_RMA_PUT || kind == GDR_RMA_GET || !w->rdma || target < 0 || target >= w->n)
        return GDR_RMA_OK;
    return gdr_rma_switch_path(w, target, GDR_RMA_VIA_MESSAGE);
}
