/* Room for what peers send: the shared receive queue's buffers and the completion
 * queue's entries grow as peers connect (by a chunk of recv_depth buffers, one registration
 * each; the completion queue by doubling), so a job that talks to few peers keeps both
 * small.  A received buffer goes back to the queue here too. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* posix_memalign */
#endif
#include "gdr_verbs_iface_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gdr_verbs_iface_post_recv(gdr_verbs_iface_t *am, recv_buf_t *rb)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t) rb->addr,.length = (uint32_t) am->cfg.buf_size,.lkey = rb->lkey
    };
    struct ibv_recv_wr wr = {.wr_id = (uintptr_t) rb,.sg_list = &sge,.num_sge = 1 }, *bad;
    if (ibv_post_srq_recv(am->srq, &wr, &bad) != 0)
        return fail(am, "posting a receive buffer to the shared receive queue of %s failed: %s",
                    am->dev->name, strerror(errno));
    return 0;
}

/* Adds up to recv_depth buffers to the shared receive queue (a peer is connecting),
 * as long as it holds fewer than srq_cap. */
int gdr_verbs_iface_grow_srq(gdr_verbs_iface_t *am)
{
    uint32_t have = (uint32_t) am->stats.recv_buffers, n = am->cfg.recv_depth;
    if (have >= am->srq_cap)
        return 0;
    if (n > am->srq_cap - have)
        n = am->srq_cap - have;
    recv_chunk_t *c = calloc(1, sizeof(*c));
    size_t bytes = (size_t) n * am->cfg.buf_size;
    if (c == NULL || posix_memalign((void **) &c->mem, 4096, bytes) != 0
        || (c->bufs = calloc(n, sizeof(recv_buf_t))) == NULL) {
        if (c != NULL) {
            free(c->mem);
            free(c);
        }
        return fail(am, "out of memory for %u receive buffers", n);
    }
    c->mr = ibv_reg_mr(am->dev->pd, c->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
    if (c->mr == NULL) {
        free(c->bufs);
        free(c->mem);
        free(c);
        return fail(am, "registering %zu bytes of receive buffers on %s failed: %s (raise "
                    "ulimit -l, or lower MPIR_CVAR_CH4_GDR_SRQ_DEPTH)", bytes, am->dev->name,
                    strerror(errno));
    }
    c->n = n;
    c->next = am->chunks;
    am->chunks = c;
    am->stats.pinned_bytes += bytes;
    for (uint32_t k = 0; k < n; k++) {
        c->bufs[k].kind = WR_RECV;
        c->bufs[k].lkey = c->mr->lkey;
        c->bufs[k].addr = c->mem + (size_t) k * am->cfg.buf_size;
        if (gdr_verbs_iface_post_recv(am, &c->bufs[k]) != 0)
            return -1;
        am->stats.recv_buffers++;
    }
    return 0;
}

/* Room in the completion queue for one more QP's sends (and the receive buffers it
 * brought): grown by doubling, so a job that talks to few peers keeps a small one. */
int gdr_verbs_iface_grow_cq(gdr_verbs_iface_t *am)
{
    uint32_t need = am->cq_need + am->qp_send_wr + am->cfg.recv_depth;
    if (need > (uint32_t) am->dev->attr.max_cqe)
        need = (uint32_t) am->dev->attr.max_cqe;
    if (need > am->cq_cap) {
        uint32_t want = 2 * am->cq_cap > need ? 2 * am->cq_cap : need;
        if (want > (uint32_t) am->dev->attr.max_cqe)
            want = (uint32_t) am->dev->attr.max_cqe;
        if (ibv_resize_cq(am->cq, (int) want) != 0)
            return fail(am, "growing the completion queue of %s to %u entries failed: %s "
                        "(a peer more to talk to)", am->dev->name, want, strerror(errno));
        am->cq_cap = (uint32_t) am->cq->cqe;
    }
    am->cq_need = need;
    return 0;
}
