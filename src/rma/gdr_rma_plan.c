#include "gdr_rma_plan.h"

#include <stdlib.h>

int gdr_rma_target_too_scattered(gdr_rma_kind_t kind, size_t n, uint64_t bytes)
{
    if (kind == GDR_RMA_PUT || kind == GDR_RMA_GET)
        return n > GDR_RMA_PIECES_ANY && (n > GDR_RMA_PIECES_MAX
                                          || bytes / n < GDR_RMA_PIECES_MIN_AVG);
    return n > GDR_RMA_ACC_PIECES_MAX;
}

/* The user's pieces as one gather/scatter list: few enough, none empty, and pinned as
 * one span.  Returns 1 with *pin set. */
static int sge_usable(const gdr_rma_engine_t *eng, const gdr_rma_buf_t *b, uint64_t bytes,
                      void **pin)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    *pin = NULL;
    if (b->n < (b->device_id != 0 ? 1u : 2u) || b->n > GDR_RMA_SGE_MAX
        || !eng->net.sge_fits(eng->net.ctx, b->n, bytes))
        return 0;
    for (size_t i = 0; i < b->n; i++) {
        uintptr_t p = (uintptr_t) b->iov[i].iov_base;
        if (b->iov[i].iov_len == 0)
            return 0;   /* the NIC would take it, but keep lists simple */
        lo = p < lo ? p : lo;
        hi = p + b->iov[i].iov_len > hi ? p + b->iov[i].iov_len : hi;
    }
    if (eng->net.pin(eng->net.ctx, (const void *) lo, hi - lo, b->device_id, pin) != GDR_RMA_OK
        || *pin == NULL)
        return 0;
    return 1;
}

/* How one side's data moves: the contiguous buffer, a list (when sge_ok), or bounced.
 * Device memory only as a list (GDR_RMA_NOREG when it cannot be: send a message). */
static int choose_move(const gdr_rma_engine_t *eng, const gdr_rma_buf_t *b, uint64_t bytes,
                       int sge_ok, gdr_rma_plan_t *plan, gdr_rma_move_t *move, void **bounce)
{
    if (b->device_id != 0) {
        if (!sge_ok || !b->scattered || !sge_usable(eng, b, bytes, &plan->pin))
            return GDR_RMA_NOREG;
        *move = GDR_RMA_MOVE_SGE;
        return GDR_RMA_OK;
    }
    if (!b->scattered) {
        *move = GDR_RMA_MOVE_DIRECT;
        return GDR_RMA_OK;
    }
    if (sge_ok && sge_usable(eng, b, bytes, &plan->pin)) {
        *move = GDR_RMA_MOVE_SGE;
        return GDR_RMA_OK;
    }
    *bounce = malloc(bytes);
    if (*bounce == NULL)
        return GDR_RMA_NOMEM;
    *move = GDR_RMA_MOVE_BOUNCE;
    return GDR_RMA_OK;
}

void gdr_rma_plan_drop(gdr_rma_win_t *w, gdr_rma_plan_t *plan)
{
    if (plan->pin != NULL)
        w->eng->net.unpin(w->eng->net.ctx, plan->pin);
    free(plan->origin_bounce);
    free(plan->result_bounce);
    *plan = (gdr_rma_plan_t) { 0 };
}

int gdr_rma_plan(gdr_rma_win_t *w, const gdr_rma_access_t *a, gdr_rma_plan_t *plan,
                 int *not_attached)
{
    const gdr_rma_engine_t *eng = w->eng;
    int t = a->target, rc;

    *plan = (gdr_rma_plan_t) { 0 };
    *not_attached = 0;
    if (!gdr_rma_win_reaches(w, t))
        return GDR_RMA_OK;
    plan->tbase = w->targets[t].base + (uint64_t) a->disp * w->targets[t].disp_unit;
    plan->rkey = w->targets[t].rkey;
    plan->path = GDR_RMA_PATH_AM;

    /* every access to a dynamic window is checked against the target's attachments first,
     * whatever path it takes: the target's message handlers write unchecked */
    if (w->dynamic && a->tbytes > 0) {
        rc = gdr_rma_regions_lookup(&w->regions, eng, w->host_win, w->self, t,
                                    plan->tbase + (uint64_t) a->t_true_lb, a->t_span,
                                    &plan->rkey, not_attached);
        if (rc != GDR_RMA_OK)
            return rc;
    }
    int is_putget = a->kind == GDR_RMA_PUT || a->kind == GDR_RMA_GET;
    if (!is_putget && (a->origin.device_id != 0 || a->result.device_id != 0))
        return GDR_RMA_OK;      /* NIC atomics read operands on the host: by message */
    if (!is_putget) {
        int aligned = 1;
        for (size_t i = 0; aligned && i < a->ntpieces; i++)
            aligned = (plan->tbase + (uint64_t) (uintptr_t) a->tpieces[i].iov_base) % 8 == 0
                && a->tpieces[i].iov_len % 8 == 0;
        plan->path = gdr_rma_acc_path(&w->atomics, a->op, a->int64_elements, aligned);
        if (plan->path == GDR_RMA_PATH_READ && a->ntpieces != 1)
            plan->path = GDR_RMA_PATH_AM;       /* a read never conflicts: a message is as good */
        if (plan->path == GDR_RMA_PATH_AM)
            return GDR_RMA_OK;
    }
    if (w->dynamic && a->tbytes > 0 && plan->rkey == 0)
        return GDR_RMA_OK;      /* unregistered, or across attachments: a message */
    if (a->tbytes > 0) {
        int fetches = a->kind != GDR_RMA_PUT && a->kind != GDR_RMA_ACC;
        int sends = a->kind != GDR_RMA_GET && !(a->kind != GDR_RMA_PUT
                                                 && a->op == GDR_RMA_ACC_NO_OP);
        rc = GDR_RMA_OK;
        if (fetches)
            rc = choose_move(eng, &a->result, a->tbytes,
                             a->kind == GDR_RMA_GET && a->ntpieces == 1, plan,
                             &plan->result_move, &plan->result_bounce);
        if (rc == GDR_RMA_OK && sends)
            rc = choose_move(eng, &a->origin, a->tbytes,
                             a->kind == GDR_RMA_PUT && a->ntpieces == 1, plan,
                             &plan->origin_move, &plan->origin_bounce);
        if (rc != GDR_RMA_OK) {
            /* out of memory, or device memory that cannot move zero-copy: a message */
            gdr_rma_plan_drop(w, plan);
            return GDR_RMA_OK;
        }
    }
    plan->by_rdma = 1;
    return GDR_RMA_OK;
}

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
