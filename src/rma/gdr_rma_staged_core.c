/* The staged protocol's common parts: span lists, slots lent and returned, messages,
 * reads of a peer's slot, copies between span lists and slots, and short waits. */
#include "gdr_rma_staged_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gdr_staged_spans_each(spans_t *s, uint64_t off, uint64_t len, part_fn fn, void *arg)
{
    size_t i = 0;
    uint64_t start = 0;
    if (off >= s->hint_off && s->hint_i < s->n) {
        i = s->hint_i;
        start = s->hint_off;
    }
    for (; i < s->n && len > 0; start += s->v[i].len, i++) {
        const span_t *sp = &s->v[i];
        if (off >= start + sp->len)
            continue;
        s->hint_i = i;
        s->hint_off = start;
        uint64_t skip = off - start, n = sp->len - skip < len ? sp->len - skip : len;
        int rc = fn(arg, sp, sp->addr + skip, n);
        if (rc != 0)
            return rc;
        off += n;
        len -= n;
    }
    return 0;
}

void gdr_staged_spans_free(spans_t *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

void gdr_staged_set_error(gdr_rma_staged_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->error, sizeof(d->error), fmt, ap);
    va_end(ap);
}

int gdr_staged_ensure_stage(gdr_rma_staged_t *d)
{
    if (d->staged)
        return GDR_RMA_OK;
    int rc = gdr_rma_stage_init(&d->stage, &d->eng->net, d->dev, d->cfg.chunk_bytes,
                                d->cfg.slots_per_pool);
    if (rc != GDR_RMA_OK) {
        gdr_staged_set_error(d, "%s", d->stage.error);
        gdr_rma_stage_free(&d->stage);
        return rc;
    }
    d->lent = calloc((size_t) d->cfg.slots_per_pool * GDR_RMA_STAGE_POOLS, sizeof(*d->lent));
    if (d->lent == NULL) {
        gdr_rma_stage_free(&d->stage);
        gdr_staged_set_error(d, "out of memory for the staging slots' owners");
        return GDR_RMA_NOMEM;
    }
    d->staged = 1;
    return GDR_RMA_OK;
}

int gdr_staged_ensure_queue(gdr_rma_staged_t *d, void **queue)
{
    if (*queue != NULL)
        return GDR_RMA_OK;
    if (d->dev->queue_new(d->dev->ctx, queue) != GDR_RMA_OK) {
        *queue = NULL;
        gdr_staged_set_error(d, "creating a device queue failed: %s", d->dev->error(d->dev->ctx));
        return GDR_RMA_ERROR;
    }
    return GDR_RMA_OK;
}

/* 1 reached (or no mark), 0 pending, negative failed. */
int gdr_staged_mark_reached(gdr_rma_staged_t *d, void **mark)
{
    if (*mark == NULL)
        return 1;
    int r = d->dev->reached(d->dev->ctx, *mark);
    if (r != 0) {
        d->dev->mark_free(d->dev->ctx, *mark);
        *mark = NULL;
        if (r < 0)
            gdr_staged_set_error(d, "device work of the staged protocol failed: %s",
                              d->dev->error(d->dev->ctx));
    }
    return r;
}

void gdr_staged_give(gdr_rma_staged_t *d, gdr_rma_slot_t **slot)
{
    if (*slot != NULL)
        gdr_rma_stage_give(&d->stage, *slot);
    *slot = NULL;
}

static int send_to(gdr_rma_staged_win_t *dw, int rank, const void *msg, size_t len)
{
    gdr_rma_staged_t *d = dw->d;
    if (rank == dw->w->self) {
        self_msg_t *m = malloc(sizeof(*m) + len);
        if (m == NULL) {
            gdr_staged_set_error(d, "out of memory for a message to self");
            return GDR_RMA_NOMEM;
        }
        m->next = NULL;
        m->dw = dw;
        m->len = len;
        memcpy(m->bytes, msg, len);
        if (d->self_tail != NULL)
            d->self_tail->next = m;
        else
            d->self_head = m;
        d->self_tail = m;
        return GDR_RMA_OK;
    }
    if (d->eng->host.send_msg(d->eng->host.ctx, dw->w->host_win, rank, msg, len) != 0) {
        gdr_staged_set_error(d, "sending a staged-protocol message to rank %d failed", rank);
        return GDR_RMA_HOST_ERROR;
    }
    return GDR_RMA_OK;
}

gdr_rma_staged_hdr_t gdr_staged_hdr_of(const gdr_rma_staged_win_t *dw, int type, uint64_t op_id)
{
    return (gdr_rma_staged_hdr_t) {.type = (uint8_t) type,.origin = (uint32_t) dw->w->self,
        .win_id = dw->win_id,.op_id = op_id };
}

int gdr_staged_send_hdr(gdr_rma_staged_win_t *dw, int rank, const gdr_rma_staged_hdr_t *h,
                     const gdr_rma_staged_piece_t *pieces, const void *inline_data)
{
    gdr_rma_staged_t *d = dw->d;
    size_t n = gdr_rma_staged_encode(d->msg, sizeof(d->msg), h, pieces, inline_data);
    if (n == 0) {
        gdr_staged_set_error(d, "a staged-protocol message of %zu bytes does not fit one message",
                          gdr_rma_staged_msg_bytes(h));
        return GDR_RMA_ERROR;
    }
    return send_to(dw, rank, d->msg, n);
}

int gdr_staged_send_taken(gdr_rma_staged_win_t *dw, int rank, uint64_t op_id, uint32_t slot)
{
    gdr_rma_staged_hdr_t h = gdr_staged_hdr_of(dw, GDR_RMA_STAGED_TAKEN, op_id);
    h.slot = slot;
    return gdr_staged_send_hdr(dw, rank, &h, NULL, NULL);
}

int gdr_staged_send_done(gdr_rma_staged_win_t *dw, int rank, uint64_t op_id, int status)
{
    gdr_rma_staged_hdr_t h = gdr_staged_hdr_of(dw, GDR_RMA_STAGED_DONE, op_id);
    h.status = status;
    return gdr_staged_send_hdr(dw, rank, &h, NULL, NULL);
}

void gdr_staged_lend(gdr_rma_staged_t *d, const gdr_rma_slot_t *s, gdr_rma_staged_win_t *dw, int rank)
{
    d->lent[s->index] = (lent_t) {.dw = dw,.rank = rank };
}

/* A send slot comes back: TAKEN from rank, or a read of our own slot. */
int gdr_staged_slot_returned(gdr_rma_staged_t *d, gdr_rma_staged_win_t *dw, int rank, uint32_t index)
{
    gdr_rma_slot_t *s = gdr_rma_stage_slot(&d->stage, index);
    if (s == NULL || s->pool == GDR_RMA_STAGE_RECV || !s->taken || d->lent[index].dw != dw
        || d->lent[index].rank != rank)
        return GDR_RMA_ERROR;
    d->lent[index].dw = NULL;
    gdr_rma_stage_give(&d->stage, s);
    return GDR_RMA_OK;
}

static void read_done(void *arg, int status)
{
    work_t *wk = arg;
    wk->status = status;
    wk->state = W_READ;
}

/* Reads len bytes of rank's send slot (raddr, rkey, index) into `into`; the origin's own
 * slot is copied and given back at once.  done(arg) fires later for a real read. */
int gdr_staged_read_slot(gdr_rma_staged_win_t *dw, int rank, uint64_t raddr, uint32_t rkey,
                      uint32_t index, gdr_rma_slot_t *into, uint32_t len, work_t *wk)
{
    gdr_rma_staged_t *d = dw->d;
    if (rank == dw->w->self) {
        gdr_rma_slot_t *s = gdr_rma_stage_slot(&d->stage, index);
        if (s == NULL || s->pool == GDR_RMA_STAGE_RECV || len > d->stage.slot_bytes
            || d->lent[index].dw != dw || d->lent[index].rank != rank)
            return GDR_RMA_ERROR;
        memcpy(into->addr, s->addr, len);
        gdr_staged_slot_returned(d, dw, rank, index);
        wk->state = W_READ;
        wk->take_slot = 0;
        return GDR_RMA_OK;
    }
    int peer = dw->w->targets[rank].peer;
    if (peer < 0) {
        gdr_staged_set_error(d, "rank %d has no transport peer for the staged protocol's reads", rank);
        return GDR_RMA_ERROR;
    }
    wk->state = W_READING;
    wk->take_slot = 1;
    wk->src_slot = index;
    int rc = d->eng->net.get(d->eng->net.ctx, peer,
                             gdr_rma_select_contig(gdr_rma_route_rc(dw->w, rank), 0, len),
                             into->addr, len, raddr, rkey, read_done, wk);
    if (rc != GDR_RMA_OK)
        wk->state = W_FREE;
    return rc;
}

int gdr_staged_pairs_add(iov_pairs_t *p, void *d, void *s, uint64_t n)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        struct iovec *dv = realloc(p->dv, cap * sizeof(*dv));
        if (dv == NULL)
            return -1;
        p->dv = dv;
        struct iovec *sv = realloc(p->sv, cap * sizeof(*sv));
        if (sv == NULL)
            return -1;
        p->sv = sv;
        p->cap = cap;
    }
    p->dv[p->n] = (struct iovec) {.iov_base = d,.iov_len = n };
    p->sv[p->n] = (struct iovec) {.iov_base = s,.iov_len = n };
    p->n++;
    return 0;
}

void gdr_staged_pairs_free(iov_pairs_t *p)
{
    free(p->dv);
    free(p->sv);
    *p = (iov_pairs_t) { 0 };
}

typedef struct copy_ctx {
    gdr_rma_staged_t *d;
    char *slot;                 /* the slot's bytes for this range */
    int to_slot;
    iov_pairs_t pairs;          /* device pieces, slot pieces */
    uint64_t at;
    uint64_t bad_id;            /* a device span whose buffer id changed */
    int check_ids;
} copy_ctx_t;

static int copy_part(void *arg, const span_t *sp, char *addr, uint64_t n)
{
    copy_ctx_t *c = arg;
    char *s = c->slot + c->at;
    c->at += n;
    if (sp->device_id == 0) {
        if (c->to_slot)
            memcpy(s, addr, n);
        else
            memcpy(addr, s, n);
        return 0;
    }
    if (c->check_ids && c->d->dev->buffer_id(c->d->dev->ctx, addr) != sp->device_id) {
        c->bad_id = sp->device_id;
        return 1;
    }
    return gdr_staged_pairs_add(&c->pairs, addr, s, n);
}

/* Copies [off, off+len) of s into slot bytes (to_slot) or back out: host spans at once,
 * device spans on queue with *mark after them (NULL when none).  check_ids: refuse
 * (GDR_RMA_BUSY, nothing queued) when a device span's buffer was freed. */
int gdr_staged_slot_copy(gdr_rma_staged_t *d, void **queue, spans_t *s, uint64_t off, uint64_t len,
                      char *slot, int to_slot, int check_ids, void **mark)
{
    copy_ctx_t c = {.d = d,.slot = slot,.to_slot = to_slot,.check_ids = check_ids };
    int rc = gdr_staged_spans_each(s, off, len, copy_part, &c);
    *mark = NULL;
    if (rc == 1) {
        gdr_staged_pairs_free(&c.pairs);
        return GDR_RMA_BUSY;
    }
    if (rc != 0) {
        gdr_staged_pairs_free(&c.pairs);
        gdr_staged_set_error(d, "out of memory for a copy list");
        return GDR_RMA_NOMEM;
    }
    rc = GDR_RMA_OK;
    if (c.pairs.n > 0) {
        rc = gdr_staged_ensure_queue(d, queue);
        if (rc == GDR_RMA_OK) {
            rc = to_slot ? d->dev->copyv(d->dev->ctx, *queue, c.pairs.sv, c.pairs.n, c.pairs.dv,
                                           c.pairs.n)
                : d->dev->copyv(d->dev->ctx, *queue, c.pairs.dv, c.pairs.n, c.pairs.sv,
                                 c.pairs.n);
            if (rc == GDR_RMA_OK)
                rc = d->dev->mark(d->dev->ctx, *queue, mark);
            if (rc != GDR_RMA_OK) {
                *mark = NULL;
                gdr_staged_set_error(d, "queueing a staging copy failed: %s",
                                  d->dev->error(d->dev->ctx));
                rc = GDR_RMA_ERROR;
            }
        }
    }
    gdr_staged_pairs_free(&c.pairs);
    return rc;
}

/* Waits (progress) for a free slot of pool. */
int gdr_staged_take_waiting(gdr_rma_staged_t *d, gdr_rma_stage_pool_t pool, gdr_rma_slot_t **slot)
{
    gdr_rma_stall_t st = { 0 };
    while (gdr_rma_stage_take(&d->stage, pool, slot) == GDR_RMA_BUSY) {
        if (d->eng->host.progress(d->eng->host.ctx) != 0)
            return GDR_RMA_HOST_ERROR;
        if (++st.polls % 4096 == 0 && d->eng->host.stalled != NULL)
            d->eng->host.stalled(d->eng->host.ctx, &st, "for a staging slot", -1);
    }
    return GDR_RMA_OK;
}

int gdr_staged_wait_mark(gdr_rma_staged_t *d, void **mark)
{
    gdr_rma_stall_t st = { 0 };
    int r;
    while ((r = gdr_staged_mark_reached(d, mark)) == 0) {
        if (d->eng->host.progress(d->eng->host.ctx) != 0)
            return GDR_RMA_HOST_ERROR;
        if (++st.polls % 4096 == 0 && d->eng->host.stalled != NULL)
            d->eng->host.stalled(d->eng->host.ctx, &st, "for a device copy", -1);
    }
    return r < 0 ? GDR_RMA_ERROR : GDR_RMA_OK;
}

int gdr_staged_lent_to(const gdr_rma_staged_t *d, const gdr_rma_staged_win_t *dw)
{
    if (!d->staged)
        return 0;
    for (unsigned i = 0; i < d->cfg.slots_per_pool * GDR_RMA_STAGE_POOLS; i++)
        if (d->lent[i].dw == dw)
            return 1;
    return 0;
}
