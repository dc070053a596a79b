#include "gdr_rma_issue.h"

#include <stdlib.h>
#include <string.h>

/* A post said BUSY (the transport is full): one round of the host's progress, which
 * completes work and frees room, reporting a long wait.  GDR_RMA_OK: post again.  Each
 * post below loops on it, then leaves for not_posted on anything but GDR_RMA_OK. */
static int room_wait(const gdr_rma_engine_t *eng, gdr_rma_stall_t *st, int peer)
{
    if (eng->host.progress(eng->host.ctx) != 0)
        return GDR_RMA_HOST_ERROR;
    if (++st->polls % 4096 == 0 && eng->host.stalled != NULL)
        eng->host.stalled(eng->host.ctx, st, "for room to post", peer);
    return GDR_RMA_OK;
}

static uint64_t piece_addr(const gdr_rma_plan_t *plan, const struct iovec *p)
{
    return plan->tbase + (uint64_t) (uintptr_t) p->iov_base;
}

int gdr_rma_issue(gdr_rma_win_t *w, const gdr_rma_access_t *a, gdr_rma_plan_t *plan,
                  gdr_rma_op_t **out)
{
    gdr_rma_engine_t *eng = w->eng;
    const gdr_rma_transport_t *net = &eng->net;
    int t = a->target, peer = w->targets[t].peer, rc;
    uint32_t rkey = plan->rkey;
    int is_putget = a->kind == GDR_RMA_PUT || a->kind == GDR_RMA_GET;
    int fetches = a->kind != GDR_RMA_PUT && a->kind != GDR_RMA_ACC;
    gdr_rma_stall_t st = { 0 };

    *out = NULL;
    if (plan->path != GDR_RMA_PATH_AM) {
        rc = gdr_rma_switch_path(w, t, GDR_RMA_VIA_NIC);
        if (rc != GDR_RMA_OK)
            goto drop;
    }
    /* Ordered accumulates: responders run requests in order, except that a read's data
     * may be fetched after later requests ran.  The first atomic after an accumulate's
     * read goes after it (a fenced work request: the transport leaves the bit off on
     * Soft-RoCE, whose fenced streams stalled, and whose responder keeps the order); the
     * atomics behind that one run after it. */
    unsigned after_reads = 0;
    if ((plan->path == GDR_RMA_PATH_FETCH_ADD || plan->path == GDR_RMA_PATH_CMP_SWAP)
        && w->atomics.order_after_reads && w->acc_read_posted[t]) {
        after_reads = GDR_RMA_POST_AFTER_READS;
        w->acc_read_posted[t] = 0;
    }
    gdr_rma_op_t *op = gdr_rma_op_new(eng, &w->tracker, t, fetches);
    if (op == NULL) {
        rc = GDR_RMA_NOMEM;
        goto drop;
    }
    if (a->kind == GDR_RMA_PUT)
        gdr_rma_op_writes_only(op);
    /* the plan's buffers now belong to the op */
    op->pin = plan->pin;
    if (plan->result_bounce != NULL) {
        op->temp = plan->result_bounce;
        op->temp_len = (size_t) a->tbytes;
    }
    op->origin_temp = plan->origin_bounce;
    plan->pin = plan->origin_bounce = plan->result_bounce = NULL;
    plan->by_rdma = 0;          /* nothing left for gdr_rma_plan_drop */
    if (a->tbytes == 0)
        goto posted;

    /* each contiguous piece by the selector's rule for its size (gdr_rma_select.h) */
    const gdr_rma_route_t *r = &plan->route;
    char *land = plan->result_move == GDR_RMA_MOVE_DIRECT ? a->result.addr : op->temp;
    const char *src = plan->origin_move == GDR_RMA_MOVE_DIRECT ? a->origin.addr : op->origin_temp;
    size_t nt = a->ntpieces;

    /* pieces of one put or get must not fail half-way for want of a registration */
    if (is_putget && nt > 1) {
        do
            rc = net->pin(net->ctx, a->kind == GDR_RMA_PUT ? (const void *) src : land,
                          (size_t) a->tbytes, 0, &op->pin);
        while (rc == GDR_RMA_BUSY && (rc = room_wait(eng, &st, peer)) == GDR_RMA_OK);
        if (rc != GDR_RMA_OK)
            goto not_posted;
    }
    if (plan->origin_move == GDR_RMA_MOVE_SGE || plan->result_move == GDR_RMA_MOVE_SGE) {
        /* the NIC reads or fills the user's pieces until completion */
        gdr_rma_op_hold_local(op);
        gdr_rma_op_add_part(op);
        uint64_t raddr = piece_addr(plan, &a->tpieces[0]);
        do
            rc = a->kind == GDR_RMA_PUT
                ? net->writev(net->ctx, peer, a->origin.iov, a->origin.n, op->pin, raddr, rkey,
                              gdr_rma_op_part_done, op)
                : net->readv(net->ctx, peer, a->result.iov, a->result.n, op->pin, raddr, rkey,
                             gdr_rma_op_part_done, op);
        while (rc == GDR_RMA_BUSY && (rc = room_wait(eng, &st, peer)) == GDR_RMA_OK);
        if (rc != GDR_RMA_OK)
            goto not_posted;
        goto posted;
    }
    switch (a->kind) {
        case GDR_RMA_PUT:{
                int all_copied = 1;
                size_t off = 0;
                for (size_t i = 0; i < nt; off += a->tpieces[i].iov_len, i++) {
                    size_t len = a->tpieces[i].iov_len;
                    if (len == 0)
                        continue;
                    gdr_rma_proto_t proto = gdr_rma_select_contig(r, 1, len);
                    gdr_rma_op_add_part(op);
                    do
                        rc = net->put(net->ctx, peer, proto, src + off, len,
                                      piece_addr(plan, &a->tpieces[i]), rkey, 0,
                                      gdr_rma_op_part_done, op);
                    while (rc == GDR_RMA_BUSY && (rc = room_wait(eng, &st, peer)) == GDR_RMA_OK);
                    if (rc != GDR_RMA_OK)
                        goto not_posted;
                    all_copied &= proto != GDR_RMA_PROTO_RC_ZCOPY;
                }
                if (!all_copied && op->origin_temp == NULL)
                    gdr_rma_op_hold_local(op);  /* the origin buffer is read by the NIC */
                if (all_copied && op->origin_temp != NULL) {
                    if (op->pin != NULL)
                        net->unpin(net->ctx, op->pin);
                    op->pin = NULL;
                    free(op->origin_temp);
                    op->origin_temp = NULL;
                }
                break;
            }
        case GDR_RMA_GET:{
                size_t off = 0;
                for (size_t i = 0; i < nt; off += a->tpieces[i].iov_len, i++) {
                    if (a->tpieces[i].iov_len == 0)
                        continue;
                    gdr_rma_op_add_part(op);
                    do
                        rc = net->get(net->ctx, peer,
                                      gdr_rma_select_contig(r, 0, a->tpieces[i].iov_len),
                                      land + off, a->tpieces[i].iov_len,
                                      piece_addr(plan, &a->tpieces[i]), rkey, gdr_rma_op_part_done,
                                      op);
                    while (rc == GDR_RMA_BUSY && (rc = room_wait(eng, &st, peer)) == GDR_RMA_OK);
                    if (rc != GDR_RMA_OK)
                        goto not_posted;
                }
                break;
            }
        default:{
                /* element-wise atomics (or one read for NO_OP) at the pieces' addresses */
                if (plan->path == GDR_RMA_PATH_READ) {
                    w->acc_read_posted[t] = 1;
                    gdr_rma_op_add_part(op);
                    do
                        rc = net->get(net->ctx, peer, gdr_rma_select_contig(r, 0, a->tbytes),
                                      land, (size_t) a->tbytes,
                                      piece_addr(plan, &a->tpieces[0]), rkey, gdr_rma_op_part_done,
                                      op);
                    while (rc == GDR_RMA_BUSY && (rc = room_wait(eng, &st, peer)) == GDR_RMA_OK);
                    if (rc != GDR_RMA_OK)
                        goto not_posted;
                    break;
                }
                /* in batches, each posted with one doorbell */
                uint64_t raddrs[64];
                size_t batch_max = net->atomicv_max(net->ctx), nb = 0;
                uint64_t elem = 0, n_elems = a->tbytes / 8, compare = 0;
                if (batch_max > sizeof(raddrs) / sizeof(raddrs[0]))
                    batch_max = sizeof(raddrs) / sizeof(raddrs[0]);
                gdr_rma_atomic_t aop = plan->path == GDR_RMA_PATH_CMP_SWAP ?
                    GDR_RMA_ATOMIC_CMP_SWAP : GDR_RMA_ATOMIC_FETCH_ADD;
                if (aop == GDR_RMA_ATOMIC_CMP_SWAP)
                    memcpy(&compare, a->compare, 8);
                for (size_t i = 0; i < nt; i++) {
                    uint64_t addr = piece_addr(plan, &a->tpieces[i]);
                    for (size_t k = 0; k < a->tpieces[i].iov_len / 8; k++) {
                        raddrs[nb++] = addr + 8 * k;
                        if (nb < batch_max && elem + nb < n_elems)
                            continue;
                        gdr_rma_op_add_part(op);
                        do
                            rc = net->atomicv(net->ctx, peer, aop, src + 8 * elem, compare,
                                              fetches ? land + 8 * elem : NULL, raddrs, nb, rkey,
                                              after_reads, gdr_rma_op_part_done, op);
                        while (rc == GDR_RMA_BUSY
                               && (rc = room_wait(eng, &st, peer)) == GDR_RMA_OK);
                        if (rc != GDR_RMA_OK)
                            goto not_posted;
                        after_reads = 0;
                        elem += nb;
                        nb = 0;
                    }
                }
                break;
            }
    }
  posted:
    eng->count[GDR_RMA_BY_NIC][a->kind]++;
    *out = op;
    return GDR_RMA_OK;
  not_posted:
    if (rc != GDR_RMA_NOREG)
        return rc == GDR_RMA_HOST_ERROR ? GDR_RMA_HOST_ERROR : GDR_RMA_ERROR;
    /* a user buffer the transport cannot pin (only put and get register one, before
     * posting anything, or pin it first): the operation goes as a message instead */
    gdr_rma_op_abandon(op);
    return GDR_RMA_NOREG;
  drop:
    gdr_rma_plan_drop(w, plan);
    return rc;
}
