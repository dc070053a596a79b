/* The staged protocol at the origin: an operation's request, its data staged into send
 * slots and announced in order, its results pulled into recv slots and copied into the
 * result buffer, and its completion once the target said DONE. */
#include "gdr_rma_staged_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int spans_from_buf(spans_t *s, const gdr_rma_buf_t *b, uint64_t bytes)
{
    size_t n = b->scattered ? b->n : 1;
    s->v = calloc(n ? n : 1, sizeof(*s->v));
    if (s->v == NULL)
        return GDR_RMA_NOMEM;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        char *a = b->scattered ? b->iov[i].iov_base : b->addr;
        uint64_t len = b->scattered ? b->iov[i].iov_len : bytes;
        s->v[i] = (span_t) {.addr = a,.len = len,.device_id = b->device_id };
        total += len;
    }
    s->n = n;
    s->bytes = total;
    return total == bytes ? GDR_RMA_OK : GDR_RMA_ERROR;
}

static void origin_op_free(gdr_rma_staged_t *d, origin_op_t *o)
{
    uint32_t idx = (uint32_t) o->op_id;
    if (idx < d->ops_cap && d->ops[idx] == o) {
        d->ops[idx] = NULL;
        d->n_ops--;
        if (o->prev != NULL)
            o->prev->next = o->next;
        else
            d->first = o->next;
        if (o->next != NULL)
            o->next->prev = o->prev;
        else
            d->last = o->prev;
    }
    while (o->ann_head != NULL) {
        announced_t *a = o->ann_head;
        o->ann_head = a->next;
        free(a);
    }
    gdr_staged_spans_free(&o->data);
    gdr_staged_spans_free(&o->result);
    free(o);
}

static int op_register(gdr_rma_staged_t *d, origin_op_t *o)
{
    uint32_t idx = 0;
    while (idx < d->ops_cap && d->ops[idx] != NULL)
        idx++;
    if (idx == d->ops_cap) {
        uint32_t cap = d->ops_cap ? 2 * d->ops_cap : 64;
        origin_op_t **ops = realloc(d->ops, cap * sizeof(*ops));
        if (ops == NULL)
            return GDR_RMA_NOMEM;
        memset(ops + d->ops_cap, 0, (cap - d->ops_cap) * sizeof(*ops));
        d->ops = ops;
        d->ops_cap = cap;
    }
    d->ops[idx] = o;
    d->n_ops++;
    o->prev = d->last;
    if (d->last != NULL)
        d->last->next = o;
    else
        d->first = o;
    d->last = o;
    o->op_id = (uint64_t) ++d->generation << 32 | idx;
    return GDR_RMA_OK;
}

static origin_op_t *op_lookup(gdr_rma_staged_t *d, gdr_rma_staged_win_t *dw, int target,
                              uint64_t op_id)
{
    uint32_t idx = (uint32_t) op_id;
    if (idx >= d->ops_cap || d->ops[idx] == NULL)
        return NULL;
    origin_op_t *o = d->ops[idx];
    return o->op_id == op_id && o->dw == dw && o->target == target ? o : NULL;
}

static int check_access(gdr_rma_staged_t *d, const gdr_rma_staged_win_t *dw, const gdr_rma_access_t *a,
                        uint64_t *elem)
{
    const gdr_rma_win_t *w = dw->w;
    *elem = 1;
    if (a->kind < 0 || a->kind >= GDR_RMA_KINDS || a->target < 0 || a->target >= w->n) {
        gdr_staged_set_error(d, "staged protocol: operation kind %d or target %d out of range",
                          (int) a->kind, a->target);
        return GDR_RMA_ERROR;
    }
    if ((a->ntpieces == 0 && a->tbytes != 0) || a->ntpieces > GDR_RMA_STAGED_PIECES_MAX) {
        gdr_staged_set_error(d, "staged protocol: %zu target pieces for %llu bytes (1 to %d "
                          "per request)", a->ntpieces, (unsigned long long) a->tbytes,
                          GDR_RMA_STAGED_PIECES_MAX);
        return GDR_RMA_ERROR;
    }
    if (is_acc_kind(a->kind)) {
        *elem = gdr_gpu_type_size(a->gpu_type);
        int cas = a->kind == GDR_RMA_CAS;
        if (*elem == 0 || !gdr_gpu_acc_valid(a->gpu_op, a->gpu_type)
            || cas != (a->gpu_op == GDR_GPU_OP_CSWAP) || a->tbytes % *elem != 0
            || ((a->kind == GDR_RMA_FOP || cas) && a->tbytes != *elem)) {
            gdr_staged_set_error(d, "staged protocol: op %d is not defined on element type %d "
                              "here, or %llu bytes are not whole elements", a->gpu_op, a->gpu_type,
                              (unsigned long long) a->tbytes);
            return GDR_RMA_ERROR;
        }
    }
    if (w->tracker.remote == NULL) {
        gdr_staged_set_error(d, "staged protocol: the window has no operation tracker (no RDMA "
                          "engine)");
        return GDR_RMA_ERROR;
    }
    return GDR_RMA_OK;
}

/* One REQ's operation: at most GDR_RMA_STAGED_PIECES_MAX target pieces. */
static int start_one(gdr_rma_staged_win_t *dw, const gdr_rma_access_t *a, gdr_rma_complete_fn fn,
                     void *arg)
{
    gdr_rma_staged_t *d = dw->d;
    gdr_rma_win_t *w = dw->w;
    uint64_t elem;
    int rc = check_access(d, dw, a, &elem);
    if (rc != GDR_RMA_OK)
        return rc;
    if (a->tbytes == 0) {
        if (fn != NULL)
            fn(arg, 0, NULL, 0);
        return GDR_RMA_OK;
    }
    rc = gdr_staged_ensure_stage(d);
    if (rc != GDR_RMA_OK)
        return rc;

    origin_op_t *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return GDR_RMA_NOMEM;
    o->dw = dw;
    o->target = a->target;
    o->kind = a->kind;
    uint64_t data_bytes = data_bytes_of(a->kind, a->gpu_op, elem, a->tbytes);
    rc = GDR_RMA_OK;
    if (data_bytes > 0) {
        if (a->kind == GDR_RMA_CAS) {
            o->data.v = calloc(2, sizeof(span_t));
            if (o->data.v == NULL) {
                rc = GDR_RMA_NOMEM;
            } else {
                o->data.v[0] = (span_t) {.addr = a->origin.addr,.len = elem,
                    .device_id = a->origin.device_id };
                o->data.v[1] = (span_t) {.addr = (char *) a->compare,.len = elem,
                    .device_id = a->compare_device_id };
                o->data.n = 2;
                o->data.bytes = 2 * elem;
            }
        } else {
            rc = spans_from_buf(&o->data, &a->origin, data_bytes);
        }
    }
    if (rc == GDR_RMA_OK && has_results(a->kind))
        rc = spans_from_buf(&o->result, &a->result, a->tbytes);
    if (rc == GDR_RMA_OK)
        rc = op_register(d, o);
    if (rc != GDR_RMA_OK) {
        if (rc == GDR_RMA_ERROR)
            gdr_staged_set_error(d, "staged protocol: the origin or result buffer does not hold the "
                              "operation's %llu bytes", (unsigned long long) a->tbytes);
        else
            gdr_staged_set_error(d, "out of memory for a staged operation");
        origin_op_free(d, o);
        return rc;
    }

    /* the request, with small data inline (device data staged through a slot first) */
    gdr_rma_staged_hdr_t h = gdr_staged_hdr_of(dw, GDR_RMA_STAGED_REQ, o->op_id);
    h.kind = (uint8_t) a->kind;
    h.op = (uint8_t) (is_acc_kind(a->kind) ? a->gpu_op : 0);
    h.elem = (uint8_t) (is_acc_kind(a->kind) ? a->gpu_type : 0);
    h.tbytes = a->tbytes;
    if (w->dynamic) {
        h.flags |= GDR_RMA_STAGED_F_DYNAMIC;
        h.taddr = (uint64_t) a->disp;
    } else {
        h.taddr = (uint64_t) a->disp * w->targets[a->target].disp_unit;
    }
    h.npieces = (uint32_t) a->ntpieces;
    uint8_t inl[GDR_RMA_STAGED_INLINE_MAX];
    /* CAS always inline (origin and compare, 32 bytes at most: a slot holds them): the
     * target applies it from one REQ and takes no CHUNK for it */
    if (data_bytes > 0 && (data_bytes <= d->cfg.inline_max || a->kind == GDR_RMA_CAS)) {
        /* the progress below runs origin_step on this operation, whose REQ is not sent:
         * it must find nothing to stage (else it stages into a second send slot that it
         * never announces: o->sent has moved past it, the slot leaks) */
        o->staged = o->sent = data_bytes;
        gdr_rma_slot_t *slot = NULL;
        void *mark = NULL;
        rc = gdr_staged_take_waiting(d, GDR_RMA_STAGE_SEND, &slot);
        if (rc == GDR_RMA_OK)
            rc = gdr_staged_slot_copy(d, &d->origin_queue, &o->data, 0, data_bytes, slot->addr, 1, 0,
                                   &mark);
        if (rc == GDR_RMA_OK)
            rc = gdr_staged_wait_mark(d, &mark);
        if (rc == GDR_RMA_OK)
            memcpy(inl, slot->addr, data_bytes);
        gdr_staged_give(d, &slot);
        if (rc != GDR_RMA_OK) {
            origin_op_free(d, o);
            return rc;
        }
        h.flags |= GDR_RMA_STAGED_F_INLINE;
        h.inline_len = (uint32_t) data_bytes;
        o->staged = o->sent = data_bytes;
    }
    h.seq = dw->seq_out[a->target];
    /* d->pieces is filled only now: staging above may have progressed other messages */
    for (size_t i = 0; i < a->ntpieces; i++)
        d->pieces[i] = (gdr_rma_staged_piece_t) {
            .off = (uint64_t) (uintptr_t) a->tpieces[i].iov_base,.len = a->tpieces[i].iov_len};
    rc = gdr_staged_send_hdr(dw, a->target, &h, d->pieces, inl);
    if (rc != GDR_RMA_OK) {
        origin_op_free(d, o);
        return rc;
    }
    dw->seq_out[a->target]++;
    o->track = gdr_rma_op_new(d->eng, &w->tracker, a->target, 1);
    if (o->track == NULL) {
        /* sent already: the operation runs, only our count of it is lost */
        gdr_staged_set_error(d, "out of memory for a staged operation's completion");
        o->status = GDR_RMA_NOMEM;
    } else {
        gdr_rma_op_by_messages(o->track);
        gdr_rma_op_on_complete(o->track, fn, arg, 1);
        if (o->sent == data_bytes && !has_results(a->kind))
            gdr_rma_op_local_done(o->track);
    }
    d->counts.started[a->kind]++;
    return GDR_RMA_OK;
}

/* ---- an operation of more target pieces than one request carries ------------------ */

/* It goes as several operations, in order, each of whole target pieces and whole
 * elements with its share of the origin and result bytes: MPI makes an RMA operation
 * atomic per element only, and a target applies one origin's requests in order
 * (gdr_rma_staged_target.c), so accumulates keep MPI's ordering.  fn runs once, after
 * the last part; never when starting a later part failed (the caller reports that). */
typedef struct split {
    gdr_rma_complete_fn fn;
    void *arg;
    unsigned left;              /* parts not completed, and one held until all are started */
    int status;
} split_t;

static void split_release(split_t *s, int status)
{
    if (status != GDR_RMA_OK && s->status == GDR_RMA_OK)
        s->status = status;
    if (--s->left > 0)
        return;
    if (s->fn != NULL)
        s->fn(s->arg, s->status, NULL, 0);
    free(s);
}

static void part_done(void *arg, int status, const void *landed, size_t len)
{
    (void) landed;
    (void) len;
    split_release(arg, status);
}

/* Walks a buffer's bytes in order: each part takes the next len of them, as an address
 * or as pieces written into room (at most b->n of them). */
typedef struct cursor {
    const gdr_rma_buf_t *b;
    uint64_t off;               /* bytes taken */
    size_t i;                   /* scattered: the piece at off, and off's place in it */
    uint64_t in;
    struct iovec *room;
} cursor_t;

static gdr_rma_buf_t cursor_take(cursor_t *c, uint64_t len)
{
    gdr_rma_buf_t p = *c->b;
    if (!c->b->scattered) {
        if (c->b->addr != NULL)
            p.addr = (char *) c->b->addr + c->off;
        c->off += len;
        return p;
    }
    p.iov = c->room;
    p.n = 0;
    while (len > 0 && c->i < c->b->n) {
        const struct iovec *v = &c->b->iov[c->i];
        uint64_t take = v->iov_len - c->in < len ? v->iov_len - c->in : len;
        c->room[p.n++] = (struct iovec) {.iov_base = (char *) v->iov_base + c->in,
            .iov_len = (size_t) take };
        len -= take;
        c->off += take;
        c->in += take;
        if (c->in == v->iov_len) {
            c->i++;
            c->in = 0;
        }
    }
    return p;
}

/* The end of the part that begins at target piece i0: at most GDR_RMA_STAGED_PIECES_MAX
 * pieces ending on a whole element (*bytes: its bytes); i0 when none does. */
static size_t part_end(const gdr_rma_access_t *a, size_t i0, uint64_t elem, uint64_t *bytes)
{
    size_t end = i0;
    uint64_t sum = 0;
    *bytes = 0;
    for (size_t i = i0; i < a->ntpieces && i - i0 < GDR_RMA_STAGED_PIECES_MAX; i++) {
        sum += a->tpieces[i].iov_len;
        if (sum % elem == 0) {
            end = i + 1;
            *bytes = sum;
        }
    }
    return end;
}

static int start_split(gdr_rma_staged_win_t *dw, const gdr_rma_access_t *a,
                       gdr_rma_complete_fn fn, void *arg)
{
    gdr_rma_staged_t *d = dw->d;
    uint64_t elem = is_acc_kind(a->kind) ? gdr_gpu_type_size(a->gpu_type) : 1;
    int has_o = data_bytes_of(a->kind, a->gpu_op, elem, a->tbytes) > 0;
    /* a bad argument is refused before any part is sent */
    if (elem == 0 || a->kind == GDR_RMA_FOP || a->kind == GDR_RMA_CAS
        || gdr_rma_iov_bytes(a->tpieces, a->ntpieces) != a->tbytes
        || (has_o && a->origin.scattered
            && gdr_rma_iov_bytes(a->origin.iov, a->origin.n) != a->tbytes)
        || (has_results(a->kind) && a->result.scattered
            && gdr_rma_iov_bytes(a->result.iov, a->result.n) != a->tbytes)) {
        gdr_staged_set_error(d, "staged protocol: %zu target pieces of operation kind %d, whose "
                          "target, origin or result pieces do not hold its %llu bytes",
                          a->ntpieces, (int) a->kind, (unsigned long long) a->tbytes);
        return GDR_RMA_ERROR;
    }
    /* (bytes, elem 1, end a part at any piece) */
    for (size_t i0 = 0, end; elem > 1 && i0 < a->ntpieces; i0 = end) {
        uint64_t bytes;
        end = part_end(a, i0, elem, &bytes);
        if (end == i0) {
            gdr_staged_set_error(d, "staged protocol: %d target pieces from piece %zu hold no "
                              "whole element of %llu bytes", GDR_RMA_STAGED_PIECES_MAX, i0,
                              (unsigned long long) elem);
            return GDR_RMA_ERROR;
        }
    }
    size_t on = a->origin.scattered ? a->origin.n : 0, rn = a->result.scattered ? a->result.n : 0;
    struct iovec *room = malloc((on + rn + 1) * sizeof(*room));
    split_t *s = fn != NULL ? calloc(1, sizeof(*s)) : NULL;
    if (room == NULL || (fn != NULL && s == NULL)) {
        free(room);
        free(s);
        gdr_staged_set_error(d, "out of memory for a staged operation's parts");
        return GDR_RMA_NOMEM;
    }
    if (s != NULL)
        *s = (split_t) {.fn = fn,.arg = arg,.left = 1,.status = GDR_RMA_OK };
    cursor_t ocur = {.b = &a->origin,.room = room }, rcur = {.b = &a->result,.room = room + on };
    int rc = GDR_RMA_OK;
    for (size_t i0 = 0, end; i0 < a->ntpieces && rc == GDR_RMA_OK; i0 = end) {
        uint64_t bytes;
        end = part_end(a, i0, elem, &bytes);
        gdr_rma_access_t p = *a;
        p.tpieces = a->tpieces + i0;
        p.ntpieces = end - i0;
        p.tbytes = bytes;
        p.origin = cursor_take(&ocur, bytes);
        p.result = cursor_take(&rcur, bytes);
        if (s != NULL)
            s->left++;
        rc = start_one(dw, &p, s != NULL ? part_done : NULL, s);
        if (rc != GDR_RMA_OK && s != NULL)
            s->left--;
    }
    free(room);
    if (s != NULL) {
        if (rc != GDR_RMA_OK)
            s->fn = NULL;       /* (out of memory, a device or host failure) the parts sent
                                 * complete in the tracker, unreported */
        split_release(s, GDR_RMA_OK);
    }
    return rc;
}

int gdr_rma_staged_start(gdr_rma_staged_win_t *dw, const gdr_rma_access_t *a,
                         gdr_rma_complete_fn fn, void *arg)
{
    if (a->ntpieces > GDR_RMA_STAGED_PIECES_MAX)
        return start_split(dw, a, fn, arg);
    return start_one(dw, a, fn, arg);
}

/* Stages the next chunks and announces those staged, in order. */
static int origin_stage(gdr_rma_staged_t *d, origin_op_t *o)
{
    gdr_rma_staged_win_t *dw = o->dw;
    uint64_t total = o->data.bytes;
    int rc;
    for (int i = 0; i < DEPTH && !o->stop && o->staged < total; i++) {
        staging_t *s = &o->stg[i];
        if (s->used)
            continue;
        if (gdr_rma_stage_take(&d->stage, GDR_RMA_STAGE_SEND, &s->slot) != GDR_RMA_OK)
            break;
        uint64_t len = total - o->staged < d->cfg.chunk_bytes ? total - o->staged
            : d->cfg.chunk_bytes;
        rc = gdr_staged_slot_copy(d, &d->origin_queue, &o->data, o->staged, len, s->slot->addr, 1, 1,
                               &s->mark);
        if (rc == GDR_RMA_BUSY) {
            /* the buffer was freed or reallocated since the call: give up */
            gdr_staged_give(d, &s->slot);
            gdr_staged_set_error(d, "an origin buffer in device memory was freed before the operation "
                              "completed locally (flush_local, or the request's completion)");
            o->stop = 1;
            o->status = GDR_RMA_ERROR;
            d->counts.aborted++;
            gdr_rma_staged_hdr_t h = gdr_staged_hdr_of(dw, GDR_RMA_STAGED_ABORT, o->op_id);
            h.seq = 0;
            rc = gdr_staged_send_hdr(dw, o->target, &h, NULL, NULL);
            if (rc != GDR_RMA_OK)
                return rc;
            break;
        }
        if (rc != GDR_RMA_OK) {
            gdr_staged_give(d, &s->slot);
            return rc;
        }
        s->used = 1;
        s->off = o->staged;
        s->len = (uint32_t) len;
        o->staged += len;
        d->counts.chunks_staged++;
    }
    for (int progressed = 1; progressed;) {
        progressed = 0;
        for (int i = 0; i < DEPTH; i++) {
            staging_t *s = &o->stg[i];
            if (!s->used || (!o->stop && s->off != o->sent))
                continue;
            int r = gdr_staged_mark_reached(d, &s->mark);
            if (r == 0)
                continue;
            s->used = 0;
            progressed = 1;
            if (r < 0 || o->stop) {
                if (r < 0 && !o->stop) {
                    o->stop = 1;
                    o->status = GDR_RMA_ERROR;
                    gdr_rma_staged_hdr_t h = gdr_staged_hdr_of(dw, GDR_RMA_STAGED_ABORT, o->op_id);
                    rc = gdr_staged_send_hdr(dw, o->target, &h, NULL, NULL);
                    if (rc != GDR_RMA_OK)
                        return rc;
                }
                gdr_staged_give(d, &s->slot);
                continue;
            }
            gdr_rma_staged_hdr_t h = gdr_staged_hdr_of(dw, GDR_RMA_STAGED_CHUNK, o->op_id);
            h.slot = s->slot->index;
            h.off = s->off;
            h.len = s->len;
            h.raddr = s->slot->raddr;
            h.rkey = s->slot->rkey;
            gdr_staged_lend(d, s->slot, dw, o->target);
            s->slot = NULL;
            o->sent += s->len;
            rc = gdr_staged_send_hdr(dw, o->target, &h, NULL, NULL);
            if (rc != GDR_RMA_OK)
                return rc;
        }
    }
    if (o->sent == total && o->track != NULL && !has_results(o->kind))
        gdr_rma_op_local_done(o->track);
    return GDR_RMA_OK;
}

typedef struct result_ctx {
    gdr_rma_staged_t *d;
    int freed;
} result_ctx_t;

static int result_ids_part(void *arg, const span_t *sp, char *addr, uint64_t n)
{
    result_ctx_t *c = arg;
    (void) n;
    if (sp->device_id != 0 && c->d->dev->buffer_id(c->d->dev->ctx, addr) != sp->device_id)
        c->freed = 1;
    return c->freed;
}

/* Reads announced results into recv slots and copies them into the result buffer. */
static int origin_results(gdr_rma_staged_t *d, origin_op_t *o)
{
    gdr_rma_staged_win_t *dw = o->dw;
    int rc;
    for (int i = 0; i < DEPTH; i++) {
        work_t *wk = &o->rw[i];
        if (wk->state == W_READ) {
            if (wk->take_slot) {
                wk->take_slot = 0;
                rc = gdr_staged_send_taken(dw, o->target, o->op_id, wk->src_slot);
                if (rc != GDR_RMA_OK)
                    return rc;
            }
            result_ctx_t rc_ids = {.d = d };
            gdr_staged_spans_each(&o->result, wk->off, wk->len, result_ids_part, &rc_ids);
            if (wk->status != 0 || rc_ids.freed) {
                if (o->status == 0)
                    gdr_staged_set_error(d, wk->status != 0 ? "reading a staged result failed" :
                                      "a result buffer in device memory was freed before the "
                                      "operation completed");
                o->status = GDR_RMA_ERROR;
                gdr_staged_give(d, &wk->in);
                wk->state = W_FREE;
                o->result_landed += wk->len;
                continue;
            }
            rc = gdr_staged_slot_copy(d, &d->origin_queue, &o->result, wk->off, wk->len, wk->in->addr,
                                   0, 0, &wk->mark);
            if (rc != GDR_RMA_OK)
                return rc;
            wk->state = W_QUEUED;
        }
        if (wk->state == W_QUEUED) {
            int r = gdr_staged_mark_reached(d, &wk->mark);
            if (r == 0)
                continue;
            if (r < 0)
                o->status = GDR_RMA_ERROR;
            gdr_staged_give(d, &wk->in);
            wk->state = W_FREE;
            o->result_landed += wk->len;
            d->counts.results_read++;
        }
    }
    for (int i = 0; i < DEPTH && o->ann_head != NULL; i++) {
        work_t *wk = &o->rw[i];
        if (wk->state != W_FREE)
            continue;
        if (gdr_rma_stage_take(&d->stage, GDR_RMA_STAGE_RECV, &wk->in) != GDR_RMA_OK)
            break;
        announced_t *a = o->ann_head;
        wk->off = a->off;
        wk->len = a->len;
        wk->status = 0;
        if (a->data != NULL) {
            memcpy(wk->in->addr, a->data, a->len);
            wk->state = W_READ;
            wk->take_slot = 0;
        } else {
            rc = gdr_staged_read_slot(dw, o->target, a->raddr, a->rkey, a->slot, wk->in, a->len, wk);
            if (rc == GDR_RMA_BUSY) {
                gdr_staged_give(d, &wk->in);
                break;
            }
            if (rc != GDR_RMA_OK) {
                gdr_staged_give(d, &wk->in);
                return rc;
            }
        }
        o->ann_head = a->next;
        if (o->ann_head == NULL)
            o->ann_tail = NULL;
        free(a);
        i = -1;                 /* a read to self completes at once: look again */
    }
    return GDR_RMA_OK;
}

static int origin_busy(const origin_op_t *o)
{
    for (int i = 0; i < DEPTH; i++)
        if (o->stg[i].used || o->rw[i].state != W_FREE)
            return 1;
    return o->ann_head != NULL;
}

/* Progresses one operation; completes it when DONE came and nothing is left. */
int gdr_staged_origin_step(gdr_rma_staged_t *d, origin_op_t *o)
{
    int rc = origin_stage(d, o);
    if (rc == GDR_RMA_OK)
        rc = origin_results(d, o);
    if (rc != GDR_RMA_OK || !o->done || origin_busy(o))
        return rc;
    if (o->status == 0 && o->result_landed != o->result.bytes) {
        gdr_staged_set_error(d, "staged protocol: rank %d completed an operation with %llu of %llu "
                          "result bytes sent", o->target, (unsigned long long) o->result_landed,
                          (unsigned long long) o->result.bytes);
        o->status = GDR_RMA_ERROR;
    }
    if (o->track != NULL)
        gdr_rma_op_part_done(o->track, o->status);
    origin_op_free(d, o);
    return GDR_RMA_OK;
}

int gdr_staged_on_result(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h, const uint8_t *inl)
{
    gdr_rma_staged_t *d = dw->d;
    int target = (int) h->origin;
    origin_op_t *o = op_lookup(d, dw, target, h->op_id);
    int inline_result = (h->flags & GDR_RMA_STAGED_F_INLINE) != 0;
    if (o == NULL || o->result.bytes == 0 || h->off != o->result_expect
        || h->len > o->result.bytes - o->result_expect || h->len > d->stage.slot_bytes) {
        d->counts.refused++;
        if (o != NULL && o->status == 0) {
            gdr_staged_set_error(d, "staged protocol: rank %d sent results out of place", target);
            o->status = GDR_RMA_ERROR;
        }
        if (inline_result)
            return GDR_RMA_OK;
        return target == dw->w->self ? (gdr_staged_slot_returned(d, dw, target, h->slot), GDR_RMA_OK)
            : gdr_staged_send_taken(dw, target, h->op_id, h->slot);
    }
    announced_t *a = calloc(1, sizeof(*a) + (inline_result ? h->len : 0));
    if (a == NULL) {
        gdr_staged_set_error(d, "out of memory for a staged result");
        return GDR_RMA_NOMEM;
    }
    a->off = h->off;
    a->len = h->len;
    a->raddr = h->raddr;
    a->rkey = h->rkey;
    a->slot = h->slot;
    if (inline_result) {
        a->data = (uint8_t *) (a + 1);
        memcpy(a->data, inl, h->len);
    }
    if (o->ann_tail != NULL)
        o->ann_tail->next = a;
    else
        o->ann_head = a;
    o->ann_tail = a;
    o->result_expect += h->len;
    return GDR_RMA_OK;
}

static const char *status_text(int status)
{
    switch (status) {
    case GDR_RMA_STAGED_E_RANGE:
        return "the target range lies outside the target's window or attached memory";
    case GDR_RMA_STAGED_E_OP:
        return "the target cannot apply this operation to this element type (or the "
            "target address is misaligned for it)";
    case GDR_RMA_STAGED_E_PROTO:
        return "the target refused a malformed or out-of-sequence message";
    case GDR_RMA_STAGED_E_ABORTED:
        return "the operation was aborted";
    case GDR_RMA_STAGED_E_DEVICE:
        return "the target's device or transport failed";
    case GDR_RMA_STAGED_E_NOMEM:
        return "the target ran out of memory";
    default:
        return "the target failed";
    }
}

int gdr_staged_on_done(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h)
{
    gdr_rma_staged_t *d = dw->d;
    origin_op_t *o = op_lookup(d, dw, (int) h->origin, h->op_id);
    if (o == NULL || o->done) {
        d->counts.refused++;
        return GDR_RMA_OK;
    }
    o->done = 1;
    if (h->status != 0) {
        if (o->status == 0 || h->status != GDR_RMA_STAGED_E_ABORTED)
            gdr_staged_set_error(d, "staged operation to rank %d failed: %s", o->target,
                              status_text(h->status));
        o->status = GDR_RMA_ERROR;
        o->stop = 1;
    }
    return GDR_RMA_OK;
}
