/* The AM channel as one object, gdr_verbs_iface_t: it owns every queue pair, completion
 * queue and receive queue the channel has (UCX's anchor: uct_rc_verbs_iface).  This file
 * makes and unmakes it and answers questions about it (the one-sided engine's accessors
 * among them); what it does lives beside it, one concern a file (gdr_verbs_iface_priv.h
 * lists them). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* posix_memalign, clock_gettime */
#endif
#include "gdr_verbs_iface_priv.h"
#include "gdr_verbs_memhooks.h"
#include "gdr_verbs_rcache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* receive buffers the shared receive queue may hold when the caller names no bound
 * (the device's own bound can be far larger: rxe's takes 130 MB of queue) */
#define SRQ_DEPTH_DEFAULT 1024

/* Rendezvous sources stay registered after use (until freed or evicted). */
#define RCACHE_UNUSED_MAX ((size_t) 256 << 20)

static void *reg_for_read(void *ctx, void *addr, size_t len, const void *asked, uint32_t *lkey,
                          uint32_t *rkey)
{
    gdr_verbs_device_t *dev = ctx;
    /* local write too: one-sided gets land in user buffers registered here */
    struct ibv_mr *mr = gdr_verbs_device_reg_mr(dev, addr, len, asked,
                                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    if (mr == NULL)
        return NULL;
    *lkey = mr->lkey;
    *rkey = mr->rkey;
    return mr;
}

static void dereg_mr(void *ctx, void *handle)
{
    (void) ctx;
    ibv_dereg_mr(handle);
}

gdr_verbs_iface_t *gdr_verbs_am_create(gdr_verbs_device_t *dev, int rank, int nranks,
                                       const uint8_t *reach, const gdr_verbs_am_config_t *cfg,
                                       const gdr_verbs_am_ops_t *ops, void *ctx,
                                       char *why, size_t why_len)
{
    gdr_verbs_iface_t *am = calloc(1, sizeof(*am));

    if (am == NULL) {
        snprintf(why, why_len, "out of memory creating the AM channel");
        return NULL;
    }
    am->dev = dev;
    am->rank = rank;
    am->nranks = nranks;
    am->npeers = nranks;
    clock_gettime(CLOCK_MONOTONIC, &am->quiet_since);
    am->last_look = am->quiet_since;
    am->clock_every = IDLE_CLOCK_EVERY_FIRST;
    am->cfg = *cfg;
    am->cfg.buf_size &= ~(size_t) 7;    /* slots 8-byte aligned: AM headers are built in them */
    am->ops = *ops;
    am->ctx = ctx;
    /* room for the processes of other jobs too, never moved: in-flight probes point
     * into it (untouched room costs no memory) */
    am->eps = calloc((size_t) nranks + GDR_VERBS_AM_FOREIGN_MAX, sizeof(ep_t));
    am->hot.ready_qp = calloc((size_t) nranks + GDR_VERBS_AM_FOREIGN_MAX, sizeof(struct ibv_qp *));
    if (am->eps == NULL || am->hot.ready_qp == NULL)
        goto oom;
    am->hot.n = nranks + GDR_VERBS_AM_FOREIGN_MAX;
    for (int i = 0; i < nranks; i++)
        gdr_verbs_iface_ep_init(am, i, reach[i]);
    am->qp_send_wr = cfg->recv_depth + READ_CHUNKS_MAX * cfg->max_reads + 8 + cfg->rma_depth;
    am->max_sge = 16;

    /* the shared receive queue: buffers are added as peers connect, up to srq_cap */
    uint32_t dev_srq = dev->attr.max_srq_wr > 0 ? (uint32_t) dev->attr.max_srq_wr : 0;
    if (dev->attr.max_srq == 0 || dev_srq == 0) {
        snprintf(why, why_len, "%s has no shared receive queues, which gdr needs", dev->name);
        goto fail;
    }
    am->srq_cap = cfg->srq_depth > 0 ? cfg->srq_depth : SRQ_DEPTH_DEFAULT;
    if (am->srq_cap > dev_srq)
        am->srq_cap = dev_srq;
    /* one peer alone never meets a receiver-not-ready: its credits fit (Soft-RoCE pays
     * ~10 ms and a go-back-N resend per RNR NAK, measured) */
    if (am->srq_cap < cfg->recv_depth)
        am->srq_cap = cfg->recv_depth < dev_srq ? cfg->recv_depth : dev_srq;
    struct ibv_srq_init_attr sattr = {.attr = {.max_wr = am->srq_cap,.max_sge = 1 } };
    am->srq = ibv_create_srq(dev->pd, &sattr);
    if (am->srq == NULL) {
        snprintf(why, why_len, "ibv_create_srq(%s, %u buffers) failed: %s (lower "
                 "MPIR_CVAR_CH4_GDR_SRQ_DEPTH)", dev->name, am->srq_cap, strerror(errno));
        goto fail;
    }

    /* the completion queue starts with room for the handshake and the bounce buffers;
     * each QP made adds room for its sends and receives (gdr_verbs_iface_grow_cq) */
    am->cq_need = UD_RECV_COUNT + UD_SEND_COUNT + cfg->send_slots + 16;
    uint32_t cqe = 2 * am->cq_need;
    if (cqe > (uint32_t) dev->attr.max_cqe)
        cqe = (uint32_t) dev->attr.max_cqe;
    /* without a completion channel the channel still works; gdr_verbs_am_wait() then
     * only yields */
    am->events = ibv_create_comp_channel(dev->context);
    am->cq = ibv_create_cq(dev->context, (int) cqe, NULL, am->events, 0);
    if (am->cq == NULL) {
        snprintf(why, why_len, "ibv_create_cq(%s, %u entries) failed: %s", dev->name, cqe,
                 strerror(errno));
        goto fail;
    }
    am->cq_cap = (uint32_t) am->cq->cqe;

    /* bounce buffers for outgoing messages */
    size_t send_bytes = (size_t) cfg->send_slots * am->cfg.buf_size;
    if (posix_memalign((void **) &am->send_mem, 4096, send_bytes) != 0)
        goto oom;
    am->send_mr = ibv_reg_mr(dev->pd, am->send_mem, send_bytes, IBV_ACCESS_LOCAL_WRITE);
    am->slots = calloc(cfg->send_slots, sizeof(send_slot_t));
    if (am->send_mr == NULL || am->slots == NULL) {
        snprintf(why, why_len, "registering %zu bytes of send buffers on %s failed: %s "
                 "(raise ulimit -l)", send_bytes, dev->name, strerror(errno));
        goto fail;
    }
    am->stats.pinned_bytes += send_bytes;
    for (uint32_t i = 0; i < cfg->send_slots; i++) {
        am->slots[i].kind = WR_SEND;
        am->slots[i].addr = am->send_mem + (size_t) i * am->cfg.buf_size;
        am->slots[i].next_free = am->free_slots;
        am->free_slots = &am->slots[i];
    }

    gdr_verbs_rcache_ops_t rops = {.reg = reg_for_read,.dereg = dereg_mr };
    am->rcache = gdr_verbs_rcache_create(&rops, dev, RCACHE_UNUSED_MAX, cfg->reg_cache_off);
    if (am->rcache == NULL)
        goto oom;
    if (gdr_verbs_memhooks_attach(am->rcache) != 0) {
        snprintf(why, why_len, "too many registration caches in this process");
        goto fail;
    }
    if (gdr_verbs_iface_ud_start(am, why, why_len) != 0)
        goto fail;
    return am;

  oom:
    snprintf(why, why_len, "out of memory creating the AM channel for %d ranks", nranks);
  fail:
    gdr_verbs_am_destroy(am);
    return NULL;
}

void gdr_verbs_am_attach_rma(gdr_verbs_iface_t *am, gdr_verbs_am_rma_cb_t cb,
                             gdr_verbs_am_rma_held_cb_t held, const uint32_t *held_count,
                             void *ctx)
{
    static const uint32_t none;
    am->rma_cb = cb;
    am->rma_held = held;
    am->rma_held_count = held != NULL && held_count != NULL ? held_count : &none;
    am->rma_ctx = ctx;
}

int gdr_verbs_am_reaches(gdr_verbs_iface_t *am, int peer)
{
    return peer >= 0 && peer < am->npeers && am->eps[peer].reach && am->eps[peer].has_card
        && !am->eps[peer].failed && !am->eps[peer].dynamic_only;
}

int gdr_verbs_am_connected_peers(const gdr_verbs_iface_t *am)
{
    return (int) am->stats.connections;
}

gdr_verbs_device_t *gdr_verbs_am_device(gdr_verbs_iface_t *am)
{
    return am->dev;
}

int gdr_verbs_am_nranks(const gdr_verbs_iface_t *am)
{
    return am->nranks;
}

uint32_t gdr_verbs_am_max_sge(const gdr_verbs_iface_t *am)
{
    return am->max_sge;
}

gdr_verbs_rcache_t *gdr_verbs_am_rcache(gdr_verbs_iface_t *am)
{
    return am->rcache;
}

void gdr_verbs_am_reg_cache_stats(gdr_verbs_iface_t *am, gdr_verbs_rcache_stats_t *st)
{
    gdr_verbs_rcache_get_stats(am->rcache, st);
}

int gdr_verbs_am_busy(const gdr_verbs_iface_t *am)
{
    return am->queued > 0 || am->reads_active > 0 || am->rsend_active > 0;
}

const gdr_verbs_am_stats_t *gdr_verbs_am_stats(const gdr_verbs_iface_t *am)
{
    return &am->stats;
}

void gdr_verbs_am_destroy(gdr_verbs_iface_t *am)
{
    if (am == NULL)
        return;
    for (int i = 0; am->eps != NULL && i < am->npeers; i++) {
        ep_t *ep = &am->eps[i];
        if (ep->qp != NULL)
            ibv_destroy_qp(ep->qp);
        if (ep->ah != NULL)
            ibv_destroy_ah(ep->ah);
        while (ep->q_head != NULL) {
            pending_msg_t *pm = ep->q_head;
            ep->q_head = pm->next;
            free(pm);
        }
        /* every rendezvous read, waiting or in flight, has an inbound entry, or is in
         * am->taken */
        while (ep->in_head != NULL) {
            inbound_t *in = ep->in_head;
            ep->in_head = in->next;
            if (in->rr != NULL)
                gdr_verbs_iface_read_free(am, in->rr, 0);
            free(in->am_hdr);
            free(in);
        }
    }
    while (am->taken != NULL) {
        rndv_read_t *rr = am->taken;
        gdr_verbs_iface_taken_unlink(am, rr);
        gdr_verbs_iface_read_free(am, rr, 0);
    }
    for (uint32_t i = 0; i < am->rsend_cap; i++) {
        if (am->rsend[i].reg != NULL)
            gdr_verbs_rcache_put(am->rcache, am->rsend[i].reg);
    }
    free(am->rsend);
    while (am->landings != NULL) {
        landing_t *l = am->landings;
        am->landings = l->next;
        gdr_verbs_iface_landing_release(l);
    }
    if (am->rcache != NULL) {
        gdr_verbs_memhooks_detach(am->rcache);
        gdr_verbs_rcache_destroy(am->rcache);
    }
    if (am->ud != NULL)
        ibv_destroy_qp(am->ud);
    while (am->chunks != NULL) {
        recv_chunk_t *c = am->chunks;
        am->chunks = c->next;
        ibv_dereg_mr(c->mr);
        free(c->mem);
        free(c->bufs);
        free(c);
    }
    if (am->srq != NULL)
        ibv_destroy_srq(am->srq);   /* after every QP that used it */
    if (am->ud_mr != NULL)
        ibv_dereg_mr(am->ud_mr);
    free(am->ud_mem);
    if (am->cq != NULL)
        ibv_destroy_cq(am->cq);    /* every event was acknowledged in gdr_verbs_am_wait() */
    if (am->events != NULL)
        ibv_destroy_comp_channel(am->events);
    if (am->send_mr != NULL)
        ibv_dereg_mr(am->send_mr);
    free(am->send_mem);
    free(am->active);
    free(am->qpmap);
    free(am->slots);
    free(am->eps);
    free(am->hot.ready_qp);
    free(am);
}
