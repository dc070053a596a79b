/* The staged protocol (gdr_rma_staged.h): its context, its windows, the dispatch of
 * arriving messages and the progress round. */
#include "gdr_rma_staged_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gdr_rma_staged_t *gdr_rma_staged_new(gdr_rma_engine_t *eng, const gdr_rma_device_t *dev,
                               const gdr_rma_staged_config_t *cfg, char *why, size_t why_len)
{
    size_t c = cfg->chunk_bytes;
    if (c < 64 || (c & (c - 1)) != 0 || c > UINT32_MAX || cfg->slots_per_pool == 0
        || cfg->inline_max > GDR_RMA_STAGED_INLINE_MAX || cfg->inline_max > c) {
        snprintf(why, why_len, "staged protocol configuration refused: chunks of %zu bytes "
                 "(a power of two, 64 or more), %u slots per pool (1 or more), inline up to "
                 "%zu bytes (at most %d and the chunk)", c, cfg->slots_per_pool,
                 cfg->inline_max, GDR_RMA_STAGED_INLINE_MAX);
        return NULL;
    }
    if (eng->host.send_msg == NULL || dev == NULL) {
        snprintf(why, why_len, "staged protocol: the host sends no protocol messages or "
                 "there is no device seam");
        return NULL;
    }
    gdr_rma_staged_t *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        snprintf(why, why_len, "out of memory for the staged protocol");
        return NULL;
    }
    d->eng = eng;
    d->dev = dev;
    d->cfg = *cfg;
    return d;
}

void gdr_rma_staged_free(gdr_rma_staged_t *d)
{
    if (d == NULL)
        return;
    while (d->self_head != NULL) {
        self_msg_t *m = d->self_head;
        d->self_head = m->next;
        free(m);
    }
    if (d->origin_queue != NULL)
        d->dev->queue_free(d->dev->ctx, d->origin_queue);
    if (d->staged)
        gdr_rma_stage_free(&d->stage);
    free(d->lent);
    free(d->ops);
    free(d);
}

const char *gdr_rma_staged_error(const gdr_rma_staged_t *d)
{
    return d->error;
}

const gdr_rma_staged_counts_t *gdr_rma_staged_counts(const gdr_rma_staged_t *d)
{
    return &d->counts;
}

const gdr_rma_stage_t *gdr_rma_staged_stage(const gdr_rma_staged_t *d)
{
    return d->staged ? &d->stage : NULL;
}

gdr_rma_staged_win_t *gdr_rma_staged_win_new(gdr_rma_staged_t *d, gdr_rma_win_t *w, uint64_t win_id,
                                       void *base, uint64_t size, int base_device)
{
    gdr_rma_staged_win_t *dw = calloc(1, sizeof(*dw));
    if (dw == NULL)
        return NULL;
    dw->seq_out = calloc((size_t) w->n, sizeof(*dw->seq_out));
    dw->in = calloc((size_t) w->n, sizeof(*dw->in));
    if (dw->seq_out == NULL || dw->in == NULL) {
        free(dw->seq_out);
        free(dw->in);
        free(dw);
        return NULL;
    }
    dw->d = d;
    dw->w = w;
    dw->win_id = win_id;
    dw->base = base;
    dw->size = size;
    dw->base_device = base_device;
    dw->next = d->wins;
    d->wins = dw;
    return dw;
}

void gdr_rma_staged_win_free(gdr_rma_staged_win_t *dw)
{
    if (dw == NULL)
        return;
    gdr_rma_staged_t *d = dw->d;
    /* slots lent on this window come back with TAKENs already on their way */
    gdr_rma_stall_t st = { 0 };
    while (gdr_staged_lent_to(d, dw) && d->eng->host.progress(d->eng->host.ctx) == 0)
        if (++st.polls % 4096 == 0 && d->eng->host.stalled != NULL)
            d->eng->host.stalled(d->eng->host.ctx, &st, "for staging slots at window free",
                                 -1);
    for (int r = 0; r < dw->w->n; r++)
        while (dw->in[r].head != NULL) {
            target_op_t *t = dw->in[r].head;
            dw->in[r].head = t->next;
            gdr_staged_target_op_free(t);
        }
    for (self_msg_t ** p = &d->self_head; *p != NULL;) {
        self_msg_t *m = *p;
        if (m->dw == dw) {
            *p = m->next;
            free(m);
        } else {
            p = &m->next;
        }
    }
    d->self_tail = NULL;
    for (self_msg_t * m = d->self_head; m != NULL; m = m->next)
        d->self_tail = m;
    for (gdr_rma_staged_win_t ** p = &d->wins; *p != NULL; p = &(*p)->next)
        if (*p == dw) {
            *p = dw->next;
            break;
        }
    if (dw->queue != NULL)
        d->dev->queue_free(d->dev->ctx, dw->queue);
    free(dw->seq_out);
    free(dw->in);
    free(dw);
}

int gdr_rma_staged_deliver(gdr_rma_staged_win_t *dw, const void *msg, size_t len)
{
    gdr_rma_staged_t *d = dw->d;
    gdr_rma_staged_hdr_t h;
    const uint8_t *pieces, *inl;
    const char *why;
    if (gdr_rma_staged_decode(msg, len, &h, &pieces, &inl, &why) != 0
        || h.win_id != dw->win_id || h.origin >= (uint32_t) dw->w->n) {
        d->counts.refused++;
        return GDR_RMA_OK;
    }
    int rc = gdr_staged_ensure_stage(d);
    if (rc != GDR_RMA_OK)
        return h.type == GDR_RMA_STAGED_REQ ? gdr_staged_send_done(dw, (int) h.origin, h.op_id,
                                                             GDR_RMA_STAGED_E_NOMEM) : rc;
    switch (h.type) {
    case GDR_RMA_STAGED_REQ:
        return gdr_staged_on_req(dw, &h, pieces, inl);
    case GDR_RMA_STAGED_CHUNK:
        return gdr_staged_on_chunk(dw, &h);
    case GDR_RMA_STAGED_ABORT:
        return gdr_staged_on_abort(dw, &h);
    case GDR_RMA_STAGED_TAKEN:
        if (gdr_staged_slot_returned(d, dw, (int) h.origin, h.slot) != GDR_RMA_OK)
            d->counts.refused++;
        return GDR_RMA_OK;
    case GDR_RMA_STAGED_RESULT:
        return gdr_staged_on_result(dw, &h, inl);
    case GDR_RMA_STAGED_DONE:
        return gdr_staged_on_done(dw, &h);
    default:
        d->counts.refused++;
        return GDR_RMA_OK;
    }
}

int gdr_rma_staged_progress(gdr_rma_staged_t *d)
{
    int rc;
    /* messages to self, those queued before this round */
    self_msg_t *m = d->self_head;
    d->self_head = d->self_tail = NULL;
    while (m != NULL) {
        self_msg_t *next = m->next;
        rc = gdr_rma_staged_deliver(m->dw, m->bytes, m->len);
        free(m);
        if (rc != GDR_RMA_OK) {
            while ((m = next) != NULL) {
                next = m->next;
                free(m);
            }
            return rc;
        }
        m = next;
    }
    /* in call order, so that slots go to earlier operations first: a target runs an
     * origin's operations in order and cannot read a later one's chunks before */
    for (origin_op_t *o = d->first, *next; o != NULL; o = next) {
        next = o->next;
        if ((rc = gdr_staged_origin_step(d, o)) != GDR_RMA_OK)
            return rc;
    }
    for (gdr_rma_staged_win_t * dw = d->wins; dw != NULL; dw = dw->next) {
        if (dw->n_target_ops == 0)
            continue;
        for (int r = 0; r < dw->w->n; r++)
            if (dw->in[r].head != NULL && (rc = gdr_staged_inbound_step(dw, &dw->in[r])) != GDR_RMA_OK)
                return rc;
    }
    return GDR_RMA_OK;
}
