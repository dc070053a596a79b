/* The staged protocol at the target: requests checked against the window, each origin's
 * operations run in order, chunks read into recv slots, copies or the accumulate kernel
 * queued on the window's device queue (or applied at once to host memory), results
 * staged in result slots, DONE once the work is reached. */
#include "gdr_rma_staged_internal.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"

#include <stdlib.h>
#include <string.h>

static int span_search(const gdr_rma_regions_t *r, uint64_t addr, uint64_t len)
{
    gdr_rma_region_reply_t rep = gdr_rma_regions_describe(r, addr);
    return rep.found && len <= rep.size && addr - rep.base <= rep.size - len;
}

/* Builds t's target spans from the REQ's pieces, refusing anything outside the window. */
static int target_spans(gdr_rma_staged_win_t *dw, target_op_t *t, const gdr_rma_staged_hdr_t *h,
                        const uint8_t *pieces)
{
    gdr_rma_staged_t *d = dw->d;
    t->tgt.v = calloc(h->npieces, sizeof(span_t));
    if (t->tgt.v == NULL)
        return GDR_RMA_STAGED_E_NOMEM;
    uint64_t total = 0, align = is_acc_kind(t->kind) ? elem_align(t->type) : 1;
    for (uint32_t i = 0; i < h->npieces; i++) {
        gdr_rma_staged_piece_t p = gdr_rma_staged_piece_at(pieces, i);
        if (p.len == 0)
            continue;
        if (p.off > UINT64_MAX - h->taddr || p.len > UINT64_MAX - total
            || p.len % t->elem != 0)
            return GDR_RMA_STAGED_E_RANGE;
        uint64_t at = h->taddr + p.off;
        char *addr;
        if (h->flags & GDR_RMA_STAGED_F_DYNAMIC) {
            if (!dw->w->dynamic || !span_search(&dw->w->regions, at, p.len))
                return GDR_RMA_STAGED_E_RANGE;
            addr = (char *) (uintptr_t) at;
        } else {
            if (dw->w->dynamic || p.len > dw->size || at > dw->size - p.len)
                return GDR_RMA_STAGED_E_RANGE;
            addr = dw->base + at;
        }
        if ((uintptr_t) addr % align != 0)
            return GDR_RMA_STAGED_E_OP;
        t->tgt.v[t->tgt.n++] = (span_t) {.addr = addr,.len = p.len };
        total += p.len;
    }
    if (total != h->tbytes || t->tgt.n == 0)
        return GDR_RMA_STAGED_E_RANGE;
    t->tgt.bytes = total;
    if (h->flags & GDR_RMA_STAGED_F_DYNAMIC)
        t->device = d->dev->buffer_id(d->dev->ctx, t->tgt.v[0].addr) != 0;
    else
        t->device = dw->base_device;
    return 0;
}

int gdr_staged_on_req(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h, const uint8_t *pieces,
                   const uint8_t *inl)
{
    gdr_rma_staged_t *d = dw->d;
    int origin = (int) h->origin, status = 0;
    inbound_t *q = &dw->in[origin];
    target_op_t *t = calloc(1, sizeof(*t));

    if (h->seq != q->next_seq)
        status = GDR_RMA_STAGED_E_PROTO;
    q->next_seq = h->seq + 1;
    if (t == NULL)
        return gdr_staged_send_done(dw, origin, h->op_id, GDR_RMA_STAGED_E_NOMEM);
    t->origin = origin;
    t->kind = (gdr_rma_kind_t) h->kind;
    t->op = h->op;
    t->type = h->elem;
    t->op_id = h->op_id;
    t->tbytes = h->tbytes;
    t->elem = 1;
    if (status == 0 && h->kind >= GDR_RMA_KINDS)
        status = GDR_RMA_STAGED_E_OP;
    if (status == 0 && is_acc_kind(t->kind)) {
        t->elem = gdr_gpu_type_size(t->type);
        int cas = t->kind == GDR_RMA_CAS;
        if (t->elem == 0 || !gdr_gpu_acc_valid(t->op, t->type)
            || cas != (t->op == GDR_GPU_OP_CSWAP)
            || ((t->kind == GDR_RMA_FOP || cas) && t->tbytes != t->elem))
            status = GDR_RMA_STAGED_E_OP;
    }
    if (status == 0) {
        t->data_bytes = data_bytes_of(t->kind, t->op, t->elem, t->tbytes);
        t->result_bytes = has_results(t->kind) ? t->tbytes : 0;
        int inline_ok = (h->flags & GDR_RMA_STAGED_F_INLINE)
            ? t->data_bytes > 0 && h->inline_len == t->data_bytes
            && t->data_bytes <= d->stage.slot_bytes : 1;
        if (!inline_ok || (t->kind == GDR_RMA_CAS && !(h->flags & GDR_RMA_STAGED_F_INLINE)))
            status = GDR_RMA_STAGED_E_PROTO;
    }
    if (status == 0)
        status = target_spans(dw, t, h, pieces);
    if (status == 0 && (h->flags & GDR_RMA_STAGED_F_INLINE)) {
        t->inl = malloc(h->inline_len);
        if (t->inl == NULL)
            status = GDR_RMA_STAGED_E_NOMEM;
        else
            memcpy(t->inl, inl, h->inline_len);
        t->ch_end = t->data_bytes;
    }
    if (status != 0) {
        gdr_staged_target_op_free(t);
        d->counts.refused++;
        return gdr_staged_send_done(dw, origin, h->op_id, status);
    }
    if (q->tail != NULL)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
    dw->n_target_ops++;
    return GDR_RMA_OK;
}

static target_op_t *target_lookup(gdr_rma_staged_win_t *dw, int origin, uint64_t op_id)
{
    for (target_op_t *t = dw->in[origin].head; t != NULL; t = t->next)
        if (t->op_id == op_id)
            return t;
    return NULL;
}

int gdr_staged_on_chunk(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h)
{
    gdr_rma_staged_t *d = dw->d;
    int origin = (int) h->origin;
    target_op_t *t = target_lookup(dw, origin, h->op_id);
    if (t == NULL || t->status != 0 || h->off != t->ch_end || h->len > d->stage.slot_bytes
        || h->len > t->data_bytes - t->ch_end) {
        /* not ours to read (refused, aborted, or malformed): free the origin's slot */
        d->counts.refused++;
        if (t != NULL && t->status == 0)
            t->status = GDR_RMA_STAGED_E_PROTO;
        return origin == dw->w->self ? (gdr_staged_slot_returned(d, dw, origin, h->slot), GDR_RMA_OK)
            : gdr_staged_send_taken(dw, origin, h->op_id, h->slot);
    }
    chunk_note_t *c = malloc(sizeof(*c));
    if (c == NULL) {
        t->status = GDR_RMA_STAGED_E_NOMEM;
        return gdr_staged_send_taken(dw, origin, h->op_id, h->slot);
    }
    *c = (chunk_note_t) {.off = h->off,.raddr = h->raddr,.len = h->len,.rkey = h->rkey,
        .slot = h->slot };
    if (t->ch_tail != NULL)
        t->ch_tail->next = c;
    else
        t->ch_head = c;
    t->ch_tail = c;
    t->ch_end += h->len;
    return GDR_RMA_OK;
}

/* Chunks announced but never to be read: their slots go back to the origin. */
static int release_chunks(gdr_rma_staged_win_t *dw, target_op_t *t)
{
    while (t->ch_head != NULL) {
        chunk_note_t *c = t->ch_head;
        t->ch_head = c->next;
        int rc = t->origin == dw->w->self ? (gdr_staged_slot_returned(dw->d, dw, t->origin, c->slot),
                                             GDR_RMA_OK)
            : gdr_staged_send_taken(dw, t->origin, t->op_id, c->slot);
        free(c);
        if (rc != GDR_RMA_OK)
            return rc;
    }
    t->ch_tail = NULL;
    return GDR_RMA_OK;
}

typedef struct apply_ctx {
    gdr_rma_staged_t *d;
    target_op_t *t;
    void *queue;
    char *in, *out;
    uint64_t at;
    iov_pairs_t pairs;          /* window pieces, slot pieces */
    int failed;
} apply_ctx_t;

/* One target part of a chunk: an accumulate launch, or a piece of a copy list. */
static int apply_part(void *arg, const span_t *sp, char *addr, uint64_t n)
{
    apply_ctx_t *c = arg;
    target_op_t *t = c->t;
    (void) sp;
    uint64_t off = c->at;
    c->at += n;
    if (is_acc_kind(t->kind)) {
        int cas = t->kind == GDR_RMA_CAS;
        gdr_gpu_acc_args_t args = {.target = addr,
            .origin = c->in != NULL ? c->in + (cas ? 0 : off) : NULL,
            .result = c->out != NULL ? c->out + off : NULL,
            .compare = cas ? c->in + t->elem : NULL,.count = n / t->elem,
            /* same-node origins may apply accumulates to this window at once
             * (gdr_rma_ipc.c): element-wise atomic wherever the type allows */
            .op = t->op | (gdr_gpu_acc_atomic_ok(t->type, addr) ? GDR_GPU_ACC_ATOMIC : 0),
            .type = t->type
        };
        if (!t->device) {
            gdr_gpu_acc_apply(&args);
            return 0;
        }
        if (c->d->dev->acc(c->d->dev->ctx, c->queue, &args) != GDR_RMA_OK) {
            c->failed = 1;
            return 1;
        }
        return 0;
    }
    char *s = t->kind == GDR_RMA_PUT ? c->in + off : c->out + off;
    if (!t->device) {
        if (t->kind == GDR_RMA_PUT)
            memcpy(addr, s, n);
        else
            memcpy(s, addr, n);
        return 0;
    }
    return gdr_staged_pairs_add(&c->pairs, addr, s, n);
}

/* Applies one chunk of work to the window: on its device queue (a mark after it), or at
 * once for host memory. */
static int target_apply(gdr_rma_staged_win_t *dw, target_op_t *t, work_t *wk)
{
    gdr_rma_staged_t *d = dw->d;
    apply_ctx_t c = {.d = d,.t = t,.in = wk->in != NULL ? wk->in->addr : NULL,
        .out = wk->out != NULL ? wk->out->addr : NULL
    };
    int rc = GDR_RMA_OK;
    wk->mark = NULL;
    if (t->device) {
        rc = gdr_staged_ensure_queue(d, &dw->queue);
        if (rc != GDR_RMA_OK)
            return GDR_RMA_STAGED_E_DEVICE;
        c.queue = dw->queue;
    }
    uint64_t tlen = t->kind == GDR_RMA_CAS ? t->elem : wk->len;
    int r = gdr_staged_spans_each(&t->tgt, wk->off, tlen, apply_part, &c);
    iov_pairs_t *pp = &c.pairs;
    if (r == 0 && pp->n > 0) {
        rc = t->kind == GDR_RMA_PUT
            ? d->dev->copyv(d->dev->ctx, dw->queue, pp->dv, pp->n, pp->sv, pp->n)
            : d->dev->copyv(d->dev->ctx, dw->queue, pp->sv, pp->n, pp->dv, pp->n);
        if (rc != GDR_RMA_OK)
            c.failed = 1;
    }
    gdr_staged_pairs_free(&c.pairs);
    if (r < 0)
        return GDR_RMA_STAGED_E_NOMEM;
    if (c.failed) {
        gdr_staged_set_error(d, "queueing staged work on the window's device queue failed: %s",
                          d->dev->error(d->dev->ctx));
        return GDR_RMA_STAGED_E_DEVICE;
    }
    if (t->device && d->dev->mark(d->dev->ctx, dw->queue, &wk->mark) != GDR_RMA_OK) {
        wk->mark = NULL;
        return GDR_RMA_STAGED_E_DEVICE;
    }
    return 0;
}

/* The work of a chunk completed: free its data slot, send its results. */
static int target_retire(gdr_rma_staged_win_t *dw, target_op_t *t, work_t *wk)
{
    gdr_rma_staged_t *d = dw->d;
    int rc = GDR_RMA_OK;
    gdr_staged_give(d, &wk->in);
    if (wk->out != NULL) {
        gdr_rma_staged_hdr_t h = gdr_staged_hdr_of(dw, GDR_RMA_STAGED_RESULT, t->op_id);
        uint32_t rlen = t->kind == GDR_RMA_CAS ? (uint32_t) t->elem : wk->len;
        h.off = wk->off;
        h.len = rlen;
        if (t->status != 0) {
            gdr_staged_give(d, &wk->out);
        } else if (rlen <= d->cfg.inline_max) {
            h.flags = GDR_RMA_STAGED_F_INLINE;
            h.inline_len = rlen;
            rc = gdr_staged_send_hdr(dw, t->origin, &h, NULL, wk->out->addr);
            gdr_staged_give(d, &wk->out);
        } else {
            h.slot = wk->out->index;
            h.raddr = wk->out->raddr;
            h.rkey = wk->out->rkey;
            gdr_staged_lend(d, wk->out, dw, t->origin);
            wk->out = NULL;
            rc = gdr_staged_send_hdr(dw, t->origin, &h, NULL, NULL);
        }
    }
    t->finished += t->kind == GDR_RMA_CAS ? t->elem : wk->len;
    wk->state = W_FREE;
    return rc;
}

/* Moves t along: takes chunks into work, queues read work in order, retires completed
 * work.  *fed: everything of t is queued (the next operation of the origin may start). */
static int target_step(gdr_rma_staged_win_t *dw, target_op_t *t, int *fed)
{
    gdr_rma_staged_t *d = dw->d;
    int rc;
    uint64_t feed_end = t->kind == GDR_RMA_CAS ? t->elem : t->tbytes;

    for (int again = 1; again;) {
        again = 0;
        /* retire in order: the origin takes RESULTs in offset order only, and the work
         * slots are not (a freed slot takes the next chunk); one queue reaches its marks
         * in order, so waiting for the earlier one delays nothing */
        for (int i = 0; i < DEPTH; i++) {
            work_t *wk = &t->wk[i];
            if (wk->state != W_QUEUED || wk->off != t->finished)
                continue;
            int r = gdr_staged_mark_reached(d, &wk->mark);
            if (r == 0)
                continue;
            if (r < 0 && t->status == 0)
                t->status = GDR_RMA_STAGED_E_DEVICE;
            rc = target_retire(dw, t, wk);
            if (rc != GDR_RMA_OK)
                return rc;
            again = 1;
        }
        /* queue read work, in order */
        for (int i = 0; i < DEPTH; i++) {
            work_t *wk = &t->wk[i];
            if (wk->state != W_READ || wk->off != t->queued_off)
                continue;
            if (wk->take_slot) {
                wk->take_slot = 0;
                rc = gdr_staged_send_taken(dw, t->origin, t->op_id, wk->src_slot);
                if (rc != GDR_RMA_OK)
                    return rc;
            }
            if (wk->status != 0 && t->status == 0)
                t->status = GDR_RMA_STAGED_E_DEVICE;
            wk->mark = NULL;
            int st = t->status == 0 ? target_apply(dw, t, wk) : 0;
            if (st != 0)
                t->status = st;
            t->queued_off += wk->len;
            wk->state = W_QUEUED;
            again = 1;
        }
        /* take more into work */
        for (int i = 0; i < DEPTH && t->status == 0 && t->next_off < feed_end; i++) {
            work_t *wk = &t->wk[i];
            if (wk->state != W_FREE)
                continue;
            int needs_in = t->data_bytes > 0, needs_out = t->result_bytes > 0;
            chunk_note_t *c = t->ch_head;
            if (needs_in && t->inl == NULL && c == NULL)
                break;          /* the next chunk is not announced yet */
            if (needs_out && gdr_rma_stage_take(&d->stage, GDR_RMA_STAGE_RESULT, &wk->out)
                != GDR_RMA_OK)
                break;
            if (needs_in && gdr_rma_stage_take(&d->stage, GDR_RMA_STAGE_RECV, &wk->in)
                != GDR_RMA_OK) {
                gdr_staged_give(d, &wk->out);
                break;
            }
            wk->status = 0;
            wk->off = t->next_off;
            if (!needs_in || t->inl != NULL) {
                uint64_t left = feed_end - t->next_off;
                wk->len = (uint32_t) (left < d->cfg.chunk_bytes ? left : d->cfg.chunk_bytes);
                if (t->inl != NULL)
                    memcpy(wk->in->addr, t->inl, t->data_bytes);
                wk->take_slot = 0;
                wk->state = W_READ;
            } else {
                wk->len = c->len;
                rc = gdr_staged_read_slot(dw, t->origin, c->raddr, c->rkey, c->slot, wk->in,
                                       c->len, wk);
                if (rc == GDR_RMA_BUSY) {
                    gdr_staged_give(d, &wk->in);
                    gdr_staged_give(d, &wk->out);
                    break;
                }
                if (rc != GDR_RMA_OK) {
                    gdr_staged_give(d, &wk->in);
                    gdr_staged_give(d, &wk->out);
                    t->status = GDR_RMA_STAGED_E_DEVICE;
                    break;
                }
                d->counts.chunks_read++;
                t->ch_head = c->next;
                if (t->ch_head == NULL)
                    t->ch_tail = NULL;
                free(c);
            }
            t->next_off += wk->len;
            again = 1;
        }
    }
    if (t->status != 0) {
        rc = release_chunks(dw, t);
        if (rc != GDR_RMA_OK)
            return rc;
    }
    int busy = 0;
    for (int i = 0; i < DEPTH; i++)
        busy |= t->wk[i].state != W_FREE;
    *fed = t->status != 0 || t->queued_off == feed_end;
    return busy || (t->status == 0 && t->finished < feed_end) ? GDR_RMA_BUSY : GDR_RMA_OK;
}

int gdr_staged_inbound_step(gdr_rma_staged_win_t *dw, inbound_t *q)
{
    gdr_rma_staged_t *d = dw->d;
    target_op_t **p = &q->head, *prev = NULL;
    while (*p != NULL) {
        target_op_t *t = *p;
        int fed = 0, rc = target_step(dw, t, &fed);
        if (rc == GDR_RMA_OK) {
            /* complete: its work reached, its results sent */
            rc = gdr_staged_send_done(dw, t->origin, t->op_id, t->status);
            d->counts.served[t->kind]++;
            *p = t->next;
            if (q->tail == t)
                q->tail = prev;
            dw->n_target_ops--;
            gdr_staged_target_op_free(t);
            if (rc != GDR_RMA_OK)
                return rc;
            continue;
        }
        if (rc != GDR_RMA_BUSY)
            return rc;
        if (!fed)
            break;              /* later operations of this origin wait for it */
        prev = t;
        p = &t->next;
    }
    return GDR_RMA_OK;
}

int gdr_staged_on_abort(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h)
{
    target_op_t *t = target_lookup(dw, (int) h->origin, h->op_id);
    if (t == NULL) {
        dw->d->counts.refused++;
        return GDR_RMA_OK;
    }
    if (t->status == 0)
        t->status = GDR_RMA_STAGED_E_ABORTED;
    return release_chunks(dw, t);
}

void gdr_staged_target_op_free(target_op_t *t)
{
    while (t->ch_head != NULL) {
        chunk_note_t *c = t->ch_head;
        t->ch_head = c->next;
        free(c);
    }
    gdr_staged_spans_free(&t->tgt);
    free(t->inl);
    free(t);
}
