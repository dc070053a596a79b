/* The selector: the rule (gdr_rma_select), and its answer for one operation bound to what
 * it needs (gdr_rma_plan: the target's key and address, pinned lists, bounce buffers). */
#include "gdr_rma_select.h"
#include "gdr_rma_plan.h"

#include <stdio.h>
#include <stdlib.h>

int gdr_rma_target_too_scattered(gdr_rma_kind_t kind, size_t n, uint64_t bytes)
{
    if (kind == GDR_RMA_PUT || kind == GDR_RMA_GET)
        return n > GDR_RMA_PIECES_ANY && (n > GDR_RMA_PIECES_MAX
                                          || bytes / n < GDR_RMA_PIECES_MIN_AVG);
    return n > GDR_RMA_ACC_PIECES_MAX;
}

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

/* The user's pieces as one gather/scatter list: none empty, pinned as one span (the
 * selector has checked their number).  Returns 1 with *pin set. */
static int pin_list(const gdr_rma_engine_t *eng, const gdr_rma_buf_t *b, void **pin)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    *pin = NULL;
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

/* The selector's view of one side's buffer: its pieces (a scattered buffer the host did
 * not list is packed: as many as can be), and whether the transport takes them as one
 * work request. */
static void buf_shape(const gdr_rma_engine_t *eng, const gdr_rma_buf_t *b, uint64_t bytes,
                      gdr_rma_select_in_t *in)
{
    in->device = b->device_id != 0;
    in->opieces = !b->scattered ? 1 : b->n > 0 ? b->n : SIZE_MAX;
    in->sge_fits = b->scattered && b->n >= (in->device ? 1u : 2u) && b->n <= GDR_RMA_SGE_MAX
        && eng->net.sge_fits(eng->net.ctx, b->n, bytes);
}

/* How one side's data moves under proto: the contiguous buffer, the user's pieces as a
 * list (rc/iov; a contiguous device buffer is a list of one piece, never touched by the
 * host: sge_fits, buf_shape's answer, says whether the transport takes it), or packed into
 * an engine buffer.  GDR_RMA_NOREG: device memory that cannot be pinned (send a message);
 * GDR_RMA_NOMEM. */
static int bind_move(const gdr_rma_engine_t *eng, const gdr_rma_buf_t *b, uint64_t bytes,
                     gdr_rma_proto_t proto, int sge_fits, gdr_rma_plan_t *plan,
                     gdr_rma_move_t *move, void **bounce)
{
    if (b->device_id != 0) {
        if (!sge_fits || !pin_list(eng, b, &plan->pin))
            return GDR_RMA_NOREG;
        *move = GDR_RMA_MOVE_SGE;
        return GDR_RMA_OK;
    }
    if (!b->scattered) {
        *move = GDR_RMA_MOVE_DIRECT;
        return GDR_RMA_OK;
    }
    if (proto == GDR_RMA_PROTO_RC_IOV && pin_list(eng, b, &plan->pin)) {
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
        if (plan->rkey == 0)
            return GDR_RMA_OK;  /* unregistered, or across attachments: a message */
    }
    int is_putget = a->kind == GDR_RMA_PUT || a->kind == GDR_RMA_GET;
    int fetches = a->kind != GDR_RMA_PUT && a->kind != GDR_RMA_ACC;
    int sends = a->kind != GDR_RMA_GET && !(a->kind != GDR_RMA_PUT
                                             && a->op == GDR_RMA_ACC_NO_OP);
    const gdr_rma_buf_t *mine = a->kind == GDR_RMA_PUT ? &a->origin : &a->result;
    gdr_rma_select_in_t in = {.kind = a->kind,.bytes = a->tbytes,.tpieces = a->ntpieces };
    if (is_putget) {
        buf_shape(eng, mine, a->tbytes, &in);
    } else {
        /* NIC atomics read their operands on the host, 8-byte elements at aligned places */
        in.device = a->origin.device_id != 0 || a->result.device_id != 0;
        in.opieces = 1;
        int aligned = 1;
        for (size_t i = 0; aligned && i < a->ntpieces; i++)
            aligned = (plan->tbase + (uint64_t) (uintptr_t) a->tpieces[i].iov_base) % 8 == 0
                && a->tpieces[i].iov_len % 8 == 0;
        in.acc_path = gdr_rma_acc_path(&w->atomics, a->op, a->int64_elements, aligned);
    }
    /* the selector, on the route as the engine sees it: the host sends same-node and
     * staged operations elsewhere before asking, and a device buffer only where the NIC
     * takes GPU memory (whether it takes this one is the pin's answer); the small
     * protocols' limits where data moves (kept in the plan for the issue) */
    gdr_rma_route_t *r = &plan->route;
    *r = (gdr_rma_route_t) {.rc = 1,.nic_gpu = 1 };
    if (is_putget || in.acc_path == GDR_RMA_PATH_READ) {
        const gdr_rma_route_t *limits = gdr_rma_route_rc(w, t);
        r->short_max = limits->short_max;
        r->bcopy_max = limits->bcopy_max;
    }
    plan->proto = gdr_rma_select(r, &in);
    switch (plan->proto) {
        case GDR_RMA_PROTO_RC_ATOMIC:
        case GDR_RMA_PROTO_RC_READ:
            plan->path = in.acc_path;
            break;
        case GDR_RMA_PROTO_AM:
        case GDR_RMA_PROTO_STAGED:
        case GDR_RMA_PROTO_IPC:
            return GDR_RMA_OK;  /* not the NIC's: the host sends it its way */
        default:
            break;
    }
    if (a->tbytes > 0) {
        rc = GDR_RMA_OK;
        if (fetches)
            rc = bind_move(eng, &a->result, a->tbytes, a->kind == GDR_RMA_GET ? plan->proto
                           : GDR_RMA_PROTO_RC_BCOPY, in.sge_fits, plan, &plan->result_move,
                           &plan->result_bounce);
        if (rc == GDR_RMA_OK && sends)
            rc = bind_move(eng, &a->origin, a->tbytes, a->kind == GDR_RMA_PUT ? plan->proto
                           : GDR_RMA_PROTO_RC_BCOPY, in.sge_fits, plan, &plan->origin_move,
                           &plan->origin_bounce);
        if (rc != GDR_RMA_OK) {
            /* out of memory, or device memory that cannot move zero-copy: a message */
            gdr_rma_plan_drop(w, plan);
            return GDR_RMA_OK;
        }
    }
    plan->by_rdma = 1;
    return GDR_RMA_OK;
}
