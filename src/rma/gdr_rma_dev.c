#include "gdr_rma_dev.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Chunks of one operation in flight per direction and side: one is copied while the
 * next is read (double buffering). */
#define DEPTH 2

/* ---- memory lists ----------------------------------------------------------------- */

/* One side of an operation as a list of spans, each host memory (device_id 0) or device
 * memory; walked in order with a hint, since chunks are visited in increasing order. */
typedef struct span {
    char *addr;
    uint64_t len;
    uint64_t device_id;
} span_t;

typedef struct spans {
    span_t *v;
    size_t n;
    uint64_t bytes;
    size_t hint_i;              /* v[hint_i] starts at hint_off */
    uint64_t hint_off;
} spans_t;

/* Visits the parts of s inside [off, off+len): part at addr of n bytes, at bytes into
 * the range.  Stops at the first nonzero return. */
typedef int (*part_fn)(void *arg, const span_t *sp, char *addr, uint64_t n, uint64_t at);

static int spans_each(spans_t *s, uint64_t off, uint64_t len, part_fn fn, void *arg)
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
        int rc = fn(arg, sp, sp->addr + skip, n, 0);
        if (rc != 0)
            return rc;
        off += n;
        len -= n;
    }
    return 0;
}

static void spans_free(spans_t *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* ---- state -------------------------------------------------------------------------- */

/* A chunk staged at the origin: in a send slot, announced once its mark is reached. */
typedef struct staging {
    int used;
    gdr_rma_slot_t *slot;
    void *mark;                 /* NULL: nothing queued on the device */
    uint64_t off;
    uint32_t len;
} staging_t;

/* A RESULT announced to the origin, not yet read. */
typedef struct announced {
    struct announced *next;
    uint64_t off, raddr;
    uint32_t len, rkey, slot;
    uint8_t *data;              /* inline results (len bytes), else NULL */
} announced_t;

enum { W_FREE, W_READING, W_READ, W_QUEUED };

/* One chunk of work: results landing at the origin, or a piece of an operation at the
 * target: its data read into `in`, its work queued, its results staged in `out`. */
typedef struct work {
    int state;
    int status;                 /* the read's */
    gdr_rma_slot_t *in, *out;
    void *mark;
    uint64_t off;
    uint32_t len;
    int take_slot;              /* TAKEN owed to the peer for its slot src_slot */
    uint32_t src_slot;
} work_t;

typedef struct origin_op {
    struct origin_op *prev, *next;      /* in call order: earlier operations stage first */
    gdr_rma_dev_win_t *dw;
    int target;
    gdr_rma_kind_t kind;
    uint64_t op_id;
    gdr_rma_op_t *track;
    spans_t data, result;       /* data: CAS has origin then compare */
    uint64_t staged, sent;      /* data bytes staged into slots, announced by CHUNK */
    staging_t stg[DEPTH];
    announced_t *ann_head, *ann_tail;
    uint64_t result_expect, result_landed;
    work_t rw[DEPTH];
    int done;                   /* DONE arrived */
    int stop;                   /* stage no more: aborted or refused */
    int status;
} origin_op_t;

typedef struct chunk_note {
    struct chunk_note *next;
    uint64_t off, raddr;
    uint32_t len, rkey, slot;
} chunk_note_t;

typedef struct target_op {
    struct target_op *next;
    int origin;
    gdr_rma_kind_t kind;
    int op, type;
    uint64_t elem;
    uint64_t op_id;
    spans_t tgt;                /* window memory, this process's addresses */
    int device;                 /* the window memory is device memory */
    uint64_t tbytes, data_bytes, result_bytes;
    uint8_t *inl;               /* inline data */
    chunk_note_t *ch_head, *ch_tail;
    uint64_t ch_end;            /* data announced so far */
    uint64_t next_off;          /* next byte taken into work */
    uint64_t queued_off;        /* work queued up to here, in order */
    uint64_t finished;          /* work retired up to here (retired in order) */
    work_t wk[DEPTH];
    int status;                 /* 0, or GDR_RMA_DEV_E_*: feed no more */
} target_op_t;

typedef struct inbound {
    uint32_t next_seq;
    target_op_t *head, *tail;
} inbound_t;

struct gdr_rma_dev_win {
    gdr_rma_dev_t *d;
    gdr_rma_win_t *w;
    uint64_t win_id;
    char *base;
    uint64_t size;
    int base_device;
    void *queue;                /* the window's device queue, made on first use */
    uint32_t *seq_out;          /* per target */
    inbound_t *in;              /* per origin */
    unsigned long n_target_ops;
    gdr_rma_dev_win_t *next;
};

typedef struct self_msg {
    struct self_msg *next;
    gdr_rma_dev_win_t *dw;
    size_t len;
    uint8_t bytes[];
} self_msg_t;

/* Who may say TAKEN for a send slot lent with CHUNK or RESULT. */
typedef struct lent {
    gdr_rma_dev_win_t *dw;      /* NULL: not lent */
    int rank;
} lent_t;

struct gdr_rma_dev {
    gdr_rma_engine_t *eng;
    const gdr_rma_device_t *dev;
    gdr_rma_dev_config_t cfg;
    int staged;                 /* stage set up */
    gdr_rma_stage_t stage;
    lent_t *lent;
    void *origin_queue;
    origin_op_t **ops;          /* by op_id's low 32 bits */
    origin_op_t *first, *last;  /* in call order */
    uint32_t ops_cap, n_ops;
    uint32_t generation;
    gdr_rma_dev_win_t *wins;
    self_msg_t *self_head, *self_tail;
    gdr_rma_dev_counts_t counts;
    uint8_t msg[GDR_RMA_DEV_MSG_MAX];
    gdr_rma_dev_piece_t pieces[GDR_RMA_DEV_PIECES_MAX];
    char error[256];
};

static void set_error(gdr_rma_dev_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->error, sizeof(d->error), fmt, ap);
    va_end(ap);
}

/* ---- sizes ------------------------------------------------------------------------ */

static int has_origin_data(gdr_rma_kind_t kind, int op)
{
    switch (kind) {
    case GDR_RMA_PUT: case GDR_RMA_ACC: case GDR_RMA_CAS:
        return 1;
    case GDR_RMA_GET_ACC: case GDR_RMA_FOP:
        return op != GDR_GPU_OP_NO_OP;
    default:
        return 0;
    }
}

static int has_results(gdr_rma_kind_t kind)
{
    return kind == GDR_RMA_GET || kind == GDR_RMA_GET_ACC || kind == GDR_RMA_FOP
        || kind == GDR_RMA_CAS;
}

static uint64_t data_bytes_of(gdr_rma_kind_t kind, int op, uint64_t elem, uint64_t tbytes)
{
    if (!has_origin_data(kind, op))
        return 0;
    return kind == GDR_RMA_CAS ? 2 * elem : tbytes;
}

/* The alignment the kernel needs of an element (C's, for the types it knows). */
static uint64_t elem_align(int type)
{
    switch (type) {
    case GDR_GPU_T_INT8: case GDR_GPU_T_UINT8: case GDR_GPU_T_BOOL:
        return 1;
    case GDR_GPU_T_INT16: case GDR_GPU_T_UINT16:
        return 2;
    case GDR_GPU_T_INT64: case GDR_GPU_T_UINT64: case GDR_GPU_T_DOUBLE:
    case GDR_GPU_T_DOUBLE_COMPLEX: case GDR_GPU_T_DOUBLE_INT: case GDR_GPU_T_LONG_INT:
        return 8;
    default:
        return 4;
    }
}

static int is_acc_kind(gdr_rma_kind_t kind)
{
    return kind != GDR_RMA_PUT && kind != GDR_RMA_GET;
}

/* ---- the context -------------------------------------------------------------------- */

gdr_rma_dev_t *gdr_rma_dev_new(gdr_rma_engine_t *eng, const gdr_rma_device_t *dev,
                               const gdr_rma_dev_config_t *cfg, char *why, size_t why_len)
{
    size_t c = cfg->chunk_bytes;
    if (c < 64 || (c & (c - 1)) != 0 || c > UINT32_MAX || cfg->slots_per_pool == 0
        || cfg->inline_max > GDR_RMA_DEV_INLINE_MAX || cfg->inline_max > c) {
        snprintf(why, why_len, "staged protocol configuration refused: chunks of %zu bytes "
                 "(a power of two, 64 or more), %u slots per pool (1 or more), inline up to "
                 "%zu bytes (at most %d and the chunk)", c, cfg->slots_per_pool,
                 cfg->inline_max, GDR_RMA_DEV_INLINE_MAX);
        return NULL;
    }
    if (eng->host.send_msg == NULL || dev == NULL) {
        snprintf(why, why_len, "staged protocol: the host sends no protocol messages or "
                 "there is no device seam");
        return NULL;
    }
    gdr_rma_dev_t *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        snprintf(why, why_len, "out of memory for the staged protocol");
        return NULL;
    }
    d->eng = eng;
    d->dev = dev;
    d->cfg = *cfg;
    return d;
}

void gdr_rma_dev_free(gdr_rma_dev_t *d)
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

const char *gdr_rma_dev_error(const gdr_rma_dev_t *d)
{
    return d->error;
}

const gdr_rma_dev_counts_t *gdr_rma_dev_counts(const gdr_rma_dev_t *d)
{
    return &d->counts;
}

const gdr_rma_stage_t *gdr_rma_dev_stage(const gdr_rma_dev_t *d)
{
    return d->staged ? &d->stage : NULL;
}

static int ensure_stage(gdr_rma_dev_t *d)
{
    if (d->staged)
        return GDR_RMA_OK;
    int rc = gdr_rma_stage_init(&d->stage, &d->eng->net, d->dev, d->cfg.chunk_bytes,
                                d->cfg.slots_per_pool);
    if (rc != GDR_RMA_OK) {
        set_error(d, "%s", d->stage.error);
        gdr_rma_stage_free(&d->stage);
        return rc;
    }
    d->lent = calloc((size_t) d->cfg.slots_per_pool * GDR_RMA_STAGE_POOLS, sizeof(*d->lent));
    if (d->lent == NULL) {
        gdr_rma_stage_free(&d->stage);
        set_error(d, "out of memory for the staging slots' owners");
        return GDR_RMA_NOMEM;
    }
    d->staged = 1;
    return GDR_RMA_OK;
}

static int ensure_queue(gdr_rma_dev_t *d, void **queue)
{
    if (*queue != NULL)
        return GDR_RMA_OK;
    if (d->dev->queue_new(d->dev->ctx, queue) != GDR_RMA_OK) {
        *queue = NULL;
        set_error(d, "creating a device queue failed: %s", d->dev->error(d->dev->ctx));
        return GDR_RMA_ERROR;
    }
    return GDR_RMA_OK;
}

/* 1 reached (or no mark), 0 pending, negative failed. */
static int mark_reached(gdr_rma_dev_t *d, void **mark)
{
    if (*mark == NULL)
        return 1;
    int r = d->dev->reached(d->dev->ctx, *mark);
    if (r != 0) {
        d->dev->mark_free(d->dev->ctx, *mark);
        *mark = NULL;
        if (r < 0)
            set_error(d, "device work of the staged protocol failed: %s",
                      d->dev->error(d->dev->ctx));
    }
    return r;
}

static void give(gdr_rma_dev_t *d, gdr_rma_slot_t **slot)
{
    if (*slot != NULL)
        gdr_rma_stage_give(&d->stage, *slot);
    *slot = NULL;
}

/* ---- messages ----------------------------------------------------------------------- */

static int send_to(gdr_rma_dev_win_t *dw, int rank, const void *msg, size_t len)
{
    gdr_rma_dev_t *d = dw->d;
    if (rank == dw->w->self) {
        self_msg_t *m = malloc(sizeof(*m) + len);
        if (m == NULL) {
            set_error(d, "out of memory for a message to self");
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
        set_error(d, "sending a staged-protocol message to rank %d failed", rank);
        return GDR_RMA_HOST_ERROR;
    }
    return GDR_RMA_OK;
}

static gdr_rma_dev_hdr_t hdr_of(const gdr_rma_dev_win_t *dw, int type, uint64_t op_id)
{
    return (gdr_rma_dev_hdr_t) {.type = (uint8_t) type,.origin = (uint32_t) dw->w->self,
        .win_id = dw->win_id,.op_id = op_id };
}

static int send_hdr(gdr_rma_dev_win_t *dw, int rank, const gdr_rma_dev_hdr_t *h,
                    const gdr_rma_dev_piece_t *pieces, const void *inline_data)
{
    gdr_rma_dev_t *d = dw->d;
    size_t n = gdr_rma_dev_encode(d->msg, sizeof(d->msg), h, pieces, inline_data);
    if (n == 0) {
        set_error(d, "a staged-protocol message of %zu bytes does not fit one message",
                  gdr_rma_dev_msg_bytes(h));
        return GDR_RMA_ERROR;
    }
    return send_to(dw, rank, d->msg, n);
}

static int send_taken(gdr_rma_dev_win_t *dw, int rank, uint64_t op_id, uint32_t slot)
{
    gdr_rma_dev_hdr_t h = hdr_of(dw, GDR_RMA_DEV_TAKEN, op_id);
    h.slot = slot;
    return send_hdr(dw, rank, &h, NULL, NULL);
}

static int send_done(gdr_rma_dev_win_t *dw, int rank, uint64_t op_id, int status)
{
    gdr_rma_dev_hdr_t h = hdr_of(dw, GDR_RMA_DEV_DONE, op_id);
    h.status = status;
    return send_hdr(dw, rank, &h, NULL, NULL);
}

static void lend(gdr_rma_dev_t *d, const gdr_rma_slot_t *s, gdr_rma_dev_win_t *dw, int rank)
{
    d->lent[s->index] = (lent_t) {.dw = dw,.rank = rank };
}

/* A send slot comes back: TAKEN from rank, or a read of our own slot. */
static int slot_returned(gdr_rma_dev_t *d, gdr_rma_dev_win_t *dw, int rank, uint32_t index)
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
static int read_slot(gdr_rma_dev_win_t *dw, int rank, uint64_t raddr, uint32_t rkey,
                     uint32_t index, gdr_rma_slot_t *into, uint32_t len, work_t *wk)
{
    gdr_rma_dev_t *d = dw->d;
    if (rank == dw->w->self) {
        gdr_rma_slot_t *s = gdr_rma_stage_slot(&d->stage, index);
        if (s == NULL || s->pool == GDR_RMA_STAGE_RECV || len > d->stage.slot_bytes
            || d->lent[index].dw != dw || d->lent[index].rank != rank)
            return GDR_RMA_ERROR;
        memcpy(into->addr, s->addr, len);
        slot_returned(d, dw, rank, index);
        wk->state = W_READ;
        wk->take_slot = 0;
        return GDR_RMA_OK;
    }
    int peer = dw->w->targets[rank].peer;
    if (peer < 0) {
        set_error(d, "rank %d has no transport peer for the staged protocol's reads", rank);
        return GDR_RMA_ERROR;
    }
    wk->state = W_READING;
    wk->take_slot = 1;
    wk->src_slot = index;
    int rc = d->eng->net.get(d->eng->net.ctx, peer, into->addr, len, raddr, rkey,
                             read_done, wk);
    if (rc != GDR_RMA_OK)
        wk->state = W_FREE;
    return rc;
}


/* ---- copies between a span list and a slot ------------------------------------------ */

typedef struct copy_ctx {
    gdr_rma_dev_t *d;
    char *slot;                 /* the slot's bytes for this range */
    int to_slot;
    struct iovec *dv, *sv;      /* device pieces, slot pieces */
    size_t n, cap;
    uint64_t at;
    uint64_t bad_id;            /* a device span whose buffer id changed */
    int check_ids;
} copy_ctx_t;

static int copy_part(void *arg, const span_t *sp, char *addr, uint64_t n, uint64_t at)
{
    copy_ctx_t *c = arg;
    (void) at;
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
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct iovec *dv = realloc(c->dv, cap * sizeof(*dv));
        if (dv == NULL)
            return -1;
        c->dv = dv;
        struct iovec *sv = realloc(c->sv, cap * sizeof(*sv));
        if (sv == NULL)
            return -1;
        c->sv = sv;
        c->cap = cap;
    }
    c->dv[c->n] = (struct iovec) {.iov_base = addr,.iov_len = n };
    c->sv[c->n] = (struct iovec) {.iov_base = s,.iov_len = n };
    c->n++;
    return 0;
}

/* Copies [off, off+len) of s into slot bytes (to_slot) or back out: host spans at once,
 * device spans on queue with *mark after them (NULL when none).  check_ids: refuse
 * (GDR_RMA_BUSY, nothing queued) when a device span's buffer was freed. */
static int slot_copy(gdr_rma_dev_t *d, void **queue, spans_t *s, uint64_t off, uint64_t len,
                     char *slot, int to_slot, int check_ids, void **mark)
{
    copy_ctx_t c = {.d = d,.slot = slot,.to_slot = to_slot,.check_ids = check_ids };
    int rc = spans_each(s, off, len, copy_part, &c);
    *mark = NULL;
    if (rc == 1) {
        free(c.dv);
        free(c.sv);
        return GDR_RMA_BUSY;
    }
    if (rc != 0) {
        free(c.dv);
        free(c.sv);
        set_error(d, "out of memory for a copy list");
        return GDR_RMA_NOMEM;
    }
    rc = GDR_RMA_OK;
    if (c.n > 0) {
        rc = ensure_queue(d, queue);
        if (rc == GDR_RMA_OK) {
            rc = to_slot ? d->dev->copyv(d->dev->ctx, *queue, c.sv, c.n, c.dv, c.n)
                : d->dev->copyv(d->dev->ctx, *queue, c.dv, c.n, c.sv, c.n);
            if (rc == GDR_RMA_OK)
                rc = d->dev->mark(d->dev->ctx, *queue, mark);
            if (rc != GDR_RMA_OK) {
                *mark = NULL;
                set_error(d, "queueing a staging copy failed: %s", d->dev->error(d->dev->ctx));
                rc = GDR_RMA_ERROR;
            }
        }
    }
    free(c.dv);
    free(c.sv);
    return rc;
}

/* Waits (progress) for a free slot of pool. */
static int take_waiting(gdr_rma_dev_t *d, gdr_rma_stage_pool_t pool, gdr_rma_slot_t **slot)
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

static int wait_mark(gdr_rma_dev_t *d, void **mark)
{
    gdr_rma_stall_t st = { 0 };
    int r;
    while ((r = mark_reached(d, mark)) == 0) {
        if (d->eng->host.progress(d->eng->host.ctx) != 0)
            return GDR_RMA_HOST_ERROR;
        if (++st.polls % 4096 == 0 && d->eng->host.stalled != NULL)
            d->eng->host.stalled(d->eng->host.ctx, &st, "for a device copy", -1);
    }
    return r < 0 ? GDR_RMA_ERROR : GDR_RMA_OK;
}

/* ---- windows ------------------------------------------------------------------------ */

gdr_rma_dev_win_t *gdr_rma_dev_win_new(gdr_rma_dev_t *d, gdr_rma_win_t *w, uint64_t win_id,
                                       void *base, uint64_t size, int base_device)
{
    gdr_rma_dev_win_t *dw = calloc(1, sizeof(*dw));
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

static void target_op_free(target_op_t *t)
{
    while (t->ch_head != NULL) {
        chunk_note_t *c = t->ch_head;
        t->ch_head = c->next;
        free(c);
    }
    spans_free(&t->tgt);
    free(t->inl);
    free(t);
}

static int lent_to(const gdr_rma_dev_t *d, const gdr_rma_dev_win_t *dw)
{
    if (!d->staged)
        return 0;
    for (unsigned i = 0; i < d->cfg.slots_per_pool * GDR_RMA_STAGE_POOLS; i++)
        if (d->lent[i].dw == dw)
            return 1;
    return 0;
}

void gdr_rma_dev_win_free(gdr_rma_dev_win_t *dw)
{
    if (dw == NULL)
        return;
    gdr_rma_dev_t *d = dw->d;
    /* slots lent on this window come back with TAKENs already on their way */
    gdr_rma_stall_t st = { 0 };
    while (lent_to(d, dw) && d->eng->host.progress(d->eng->host.ctx) == 0)
        if (++st.polls % 4096 == 0 && d->eng->host.stalled != NULL)
            d->eng->host.stalled(d->eng->host.ctx, &st, "for staging slots at window free",
                                 -1);
    for (int r = 0; r < dw->w->n; r++)
        while (dw->in[r].head != NULL) {
            target_op_t *t = dw->in[r].head;
            dw->in[r].head = t->next;
            target_op_free(t);
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
    for (gdr_rma_dev_win_t ** p = &d->wins; *p != NULL; p = &(*p)->next)
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

/* ---- origin ------------------------------------------------------------------------- */

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

static void origin_op_free(gdr_rma_dev_t *d, origin_op_t *o)
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
    spans_free(&o->data);
    spans_free(&o->result);
    free(o);
}

static int op_register(gdr_rma_dev_t *d, origin_op_t *o)
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

static origin_op_t *op_lookup(gdr_rma_dev_t *d, gdr_rma_dev_win_t *dw, int target,
                              uint64_t op_id)
{
    uint32_t idx = (uint32_t) op_id;
    if (idx >= d->ops_cap || d->ops[idx] == NULL)
        return NULL;
    origin_op_t *o = d->ops[idx];
    return o->op_id == op_id && o->dw == dw && o->target == target ? o : NULL;
}

static int check_access(gdr_rma_dev_t *d, const gdr_rma_dev_win_t *dw, const gdr_rma_access_t *a,
                        uint64_t *elem)
{
    const gdr_rma_win_t *w = dw->w;
    *elem = 1;
    if (a->kind < 0 || a->kind >= GDR_RMA_KINDS || a->target < 0 || a->target >= w->n) {
        set_error(d, "staged protocol: operation kind %d or target %d out of range",
                  (int) a->kind, a->target);
        return GDR_RMA_ERROR;
    }
    if ((a->ntpieces == 0 && a->tbytes != 0) || a->ntpieces > GDR_RMA_DEV_PIECES_MAX) {
        set_error(d, "staged protocol: %zu target pieces (1 to %d per operation; the caller "
                  "splits larger ones)", a->ntpieces, GDR_RMA_DEV_PIECES_MAX);
        return GDR_RMA_ERROR;
    }
    if (is_acc_kind(a->kind)) {
        *elem = gdr_gpu_type_size(a->gpu_type);
        int cas = a->kind == GDR_RMA_CAS;
        if (*elem == 0 || !gdr_gpu_acc_valid(a->gpu_op, a->gpu_type)
            || cas != (a->gpu_op == GDR_GPU_OP_CSWAP) || a->tbytes % *elem != 0
            || ((a->kind == GDR_RMA_FOP || cas) && a->tbytes != *elem)) {
            set_error(d, "staged protocol: op %d is not defined on element type %d here, or "
                      "%llu bytes are not whole elements", a->gpu_op, a->gpu_type,
                      (unsigned long long) a->tbytes);
            return GDR_RMA_ERROR;
        }
    }
    if (w->tracker.remote == NULL) {
        set_error(d, "staged protocol: the window has no operation tracker (no RDMA engine)");
        return GDR_RMA_ERROR;
    }
    return GDR_RMA_OK;
}

int gdr_rma_dev_start(gdr_rma_dev_win_t *dw, const gdr_rma_access_t *a, gdr_rma_complete_fn fn,
                      void *arg)
{
    gdr_rma_dev_t *d = dw->d;
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
    rc = ensure_stage(d);
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
            set_error(d, "staged protocol: the origin or result buffer does not hold the "
                      "operation's %llu bytes", (unsigned long long) a->tbytes);
        else
            set_error(d, "out of memory for a staged operation");
        origin_op_free(d, o);
        return rc;
    }

    /* the request, with small data inline (device data staged through a slot first) */
    gdr_rma_dev_hdr_t h = hdr_of(dw, GDR_RMA_DEV_REQ, o->op_id);
    h.kind = (uint8_t) a->kind;
    h.op = (uint8_t) (is_acc_kind(a->kind) ? a->gpu_op : 0);
    h.elem = (uint8_t) (is_acc_kind(a->kind) ? a->gpu_type : 0);
    h.tbytes = a->tbytes;
    if (w->dynamic) {
        h.flags |= GDR_RMA_DEV_F_DYNAMIC;
        h.taddr = (uint64_t) a->disp;
    } else {
        h.taddr = (uint64_t) a->disp * w->targets[a->target].disp_unit;
    }
    h.npieces = (uint32_t) a->ntpieces;
    uint8_t inl[GDR_RMA_DEV_INLINE_MAX];
    /* CAS always inline (origin and compare, 32 bytes at most: a slot holds them): the
     * target applies it from one REQ and takes no CHUNK for it */
    if (data_bytes > 0 && (data_bytes <= d->cfg.inline_max || a->kind == GDR_RMA_CAS)) {
        /* the progress below runs origin_step on this operation, whose REQ is not sent:
         * it must find nothing to stage (else it stages into a second send slot that it
         * never announces: o->sent has moved past it, the slot leaks) */
        o->staged = o->sent = data_bytes;
        gdr_rma_slot_t *slot = NULL;
        void *mark = NULL;
        rc = take_waiting(d, GDR_RMA_STAGE_SEND, &slot);
        if (rc == GDR_RMA_OK)
            rc = slot_copy(d, &d->origin_queue, &o->data, 0, data_bytes, slot->addr, 1, 0,
                           &mark);
        if (rc == GDR_RMA_OK)
            rc = wait_mark(d, &mark);
        if (rc == GDR_RMA_OK)
            memcpy(inl, slot->addr, data_bytes);
        give(d, &slot);
        if (rc != GDR_RMA_OK) {
            origin_op_free(d, o);
            return rc;
        }
        h.flags |= GDR_RMA_DEV_F_INLINE;
        h.inline_len = (uint32_t) data_bytes;
        o->staged = o->sent = data_bytes;
    }
    h.seq = dw->seq_out[a->target];
    /* d->pieces is filled only now: staging above may have progressed other messages */
    for (size_t i = 0; i < a->ntpieces; i++)
        d->pieces[i] = (gdr_rma_dev_piece_t) {
            .off = (uint64_t) (uintptr_t) a->tpieces[i].iov_base,.len = a->tpieces[i].iov_len};
    rc = send_hdr(dw, a->target, &h, d->pieces, inl);
    if (rc != GDR_RMA_OK) {
        origin_op_free(d, o);
        return rc;
    }
    dw->seq_out[a->target]++;
    o->track = gdr_rma_op_new(d->eng, &w->tracker, a->target, 1);
    if (o->track == NULL) {
        /* sent already: the operation runs, only our count of it is lost */
        set_error(d, "out of memory for a staged operation's completion");
        o->status = GDR_RMA_NOMEM;
    } else {
        gdr_rma_op_on_complete(o->track, fn, arg, 1);
        if (o->sent == data_bytes && !has_results(a->kind))
            gdr_rma_op_local_done(o->track);
    }
    d->counts.started[a->kind]++;
    return GDR_RMA_OK;
}

/* Stages the next chunks and announces those staged, in order. */
static int origin_stage(gdr_rma_dev_t *d, origin_op_t *o)
{
    gdr_rma_dev_win_t *dw = o->dw;
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
        rc = slot_copy(d, &d->origin_queue, &o->data, o->staged, len, s->slot->addr, 1, 1,
                       &s->mark);
        if (rc == GDR_RMA_BUSY) {
            /* the buffer was freed or reallocated since the call: give up */
            give(d, &s->slot);
            set_error(d, "an origin buffer in device memory was freed before the operation "
                      "completed locally (flush_local, or the request's completion)");
            o->stop = 1;
            o->status = GDR_RMA_ERROR;
            d->counts.aborted++;
            gdr_rma_dev_hdr_t h = hdr_of(dw, GDR_RMA_DEV_ABORT, o->op_id);
            h.seq = 0;
            rc = send_hdr(dw, o->target, &h, NULL, NULL);
            if (rc != GDR_RMA_OK)
                return rc;
            break;
        }
        if (rc != GDR_RMA_OK) {
            give(d, &s->slot);
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
            int r = mark_reached(d, &s->mark);
            if (r == 0)
                continue;
            s->used = 0;
            progressed = 1;
            if (r < 0 || o->stop) {
                if (r < 0 && !o->stop) {
                    o->stop = 1;
                    o->status = GDR_RMA_ERROR;
                    gdr_rma_dev_hdr_t h = hdr_of(dw, GDR_RMA_DEV_ABORT, o->op_id);
                    rc = send_hdr(dw, o->target, &h, NULL, NULL);
                    if (rc != GDR_RMA_OK)
                        return rc;
                }
                give(d, &s->slot);
                continue;
            }
            gdr_rma_dev_hdr_t h = hdr_of(dw, GDR_RMA_DEV_CHUNK, o->op_id);
            h.slot = s->slot->index;
            h.off = s->off;
            h.len = s->len;
            h.raddr = s->slot->raddr;
            h.rkey = s->slot->rkey;
            lend(d, s->slot, dw, o->target);
            s->slot = NULL;
            o->sent += s->len;
            rc = send_hdr(dw, o->target, &h, NULL, NULL);
            if (rc != GDR_RMA_OK)
                return rc;
        }
    }
    if (o->sent == total && o->track != NULL && !has_results(o->kind))
        gdr_rma_op_local_done(o->track);
    return GDR_RMA_OK;
}

typedef struct result_ctx {
    gdr_rma_dev_t *d;
    int freed;
} result_ctx_t;

static int result_ids_part(void *arg, const span_t *sp, char *addr, uint64_t n, uint64_t at)
{
    result_ctx_t *c = arg;
    (void) n;
    (void) at;
    if (sp->device_id != 0 && c->d->dev->buffer_id(c->d->dev->ctx, addr) != sp->device_id)
        c->freed = 1;
    return c->freed;
}

/* Reads announced results into recv slots and copies them into the result buffer. */
static int origin_results(gdr_rma_dev_t *d, origin_op_t *o)
{
    gdr_rma_dev_win_t *dw = o->dw;
    int rc;
    for (int i = 0; i < DEPTH; i++) {
        work_t *wk = &o->rw[i];
        if (wk->state == W_READ) {
            if (wk->take_slot) {
                wk->take_slot = 0;
                rc = send_taken(dw, o->target, o->op_id, wk->src_slot);
                if (rc != GDR_RMA_OK)
                    return rc;
            }
            result_ctx_t rc_ids = {.d = d };
            spans_each(&o->result, wk->off, wk->len, result_ids_part, &rc_ids);
            if (wk->status != 0 || rc_ids.freed) {
                if (o->status == 0)
                    set_error(d, wk->status != 0 ? "reading a staged result failed" :
                              "a result buffer in device memory was freed before the "
                              "operation completed");
                o->status = GDR_RMA_ERROR;
                give(d, &wk->in);
                wk->state = W_FREE;
                o->result_landed += wk->len;
                continue;
            }
            rc = slot_copy(d, &d->origin_queue, &o->result, wk->off, wk->len, wk->in->addr,
                           0, 0, &wk->mark);
            if (rc != GDR_RMA_OK)
                return rc;
            wk->state = W_QUEUED;
        }
        if (wk->state == W_QUEUED) {
            int r = mark_reached(d, &wk->mark);
            if (r == 0)
                continue;
            if (r < 0)
                o->status = GDR_RMA_ERROR;
            give(d, &wk->in);
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
            rc = read_slot(dw, o->target, a->raddr, a->rkey, a->slot, wk->in, a->len, wk);
            if (rc == GDR_RMA_BUSY) {
                give(d, &wk->in);
                break;
            }
            if (rc != GDR_RMA_OK) {
                give(d, &wk->in);
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
static int origin_step(gdr_rma_dev_t *d, origin_op_t *o)
{
    int rc = origin_stage(d, o);
    if (rc == GDR_RMA_OK)
        rc = origin_results(d, o);
    if (rc != GDR_RMA_OK || !o->done || origin_busy(o))
        return rc;
    if (o->status == 0 && o->result_landed != o->result.bytes) {
        set_error(d, "staged protocol: rank %d completed an operation with %llu of %llu "
                  "result bytes sent", o->target, (unsigned long long) o->result_landed,
                  (unsigned long long) o->result.bytes);
        o->status = GDR_RMA_ERROR;
    }
    if (o->track != NULL)
        gdr_rma_op_part_done(o->track, o->status);
    origin_op_free(d, o);
    return GDR_RMA_OK;
}

/* ---- target ------------------------------------------------------------------------- */

static int span_search(const gdr_rma_regions_t *r, uint64_t addr, uint64_t len)
{
    gdr_rma_region_reply_t rep = gdr_rma_regions_describe(r, addr);
    return rep.found && len <= rep.size && addr - rep.base <= rep.size - len;
}

/* Builds t's target spans from the REQ's pieces, refusing anything outside the window. */
static int target_spans(gdr_rma_dev_win_t *dw, target_op_t *t, const gdr_rma_dev_hdr_t *h,
                        const uint8_t *pieces)
{
    gdr_rma_dev_t *d = dw->d;
    t->tgt.v = calloc(h->npieces, sizeof(span_t));
    if (t->tgt.v == NULL)
        return GDR_RMA_DEV_E_NOMEM;
    uint64_t total = 0, align = is_acc_kind(t->kind) ? elem_align(t->type) : 1;
    for (uint32_t i = 0; i < h->npieces; i++) {
        gdr_rma_dev_piece_t p = gdr_rma_dev_piece_at(pieces, i);
        if (p.len == 0)
            continue;
        if (p.off > UINT64_MAX - h->taddr || p.len > UINT64_MAX - total
            || p.len % t->elem != 0)
            return GDR_RMA_DEV_E_RANGE;
        uint64_t at = h->taddr + p.off;
        char *addr;
        if (h->flags & GDR_RMA_DEV_F_DYNAMIC) {
            if (!dw->w->dynamic || !span_search(&dw->w->regions, at, p.len))
                return GDR_RMA_DEV_E_RANGE;
            addr = (char *) (uintptr_t) at;
        } else {
            if (dw->w->dynamic || p.len > dw->size || at > dw->size - p.len)
                return GDR_RMA_DEV_E_RANGE;
            addr = dw->base + at;
        }
        if ((uintptr_t) addr % align != 0)
            return GDR_RMA_DEV_E_OP;
        t->tgt.v[t->tgt.n++] = (span_t) {.addr = addr,.len = p.len };
        total += p.len;
    }
    if (total != h->tbytes || t->tgt.n == 0)
        return GDR_RMA_DEV_E_RANGE;
    t->tgt.bytes = total;
    if (h->flags & GDR_RMA_DEV_F_DYNAMIC)
        t->device = d->dev->buffer_id(d->dev->ctx, t->tgt.v[0].addr) != 0;
    else
        t->device = dw->base_device;
    return 0;
}

static int on_req(gdr_rma_dev_win_t *dw, const gdr_rma_dev_hdr_t *h, const uint8_t *pieces,
                  const uint8_t *inl)
{
    gdr_rma_dev_t *d = dw->d;
    int origin = (int) h->origin, status = 0;
    inbound_t *q = &dw->in[origin];
    target_op_t *t = calloc(1, sizeof(*t));

    if (h->seq != q->next_seq)
        status = GDR_RMA_DEV_E_PROTO;
    q->next_seq = h->seq + 1;
    if (t == NULL)
        return send_done(dw, origin, h->op_id, GDR_RMA_DEV_E_NOMEM);
    t->origin = origin;
    t->kind = (gdr_rma_kind_t) h->kind;
    t->op = h->op;
    t->type = h->elem;
    t->op_id = h->op_id;
    t->tbytes = h->tbytes;
    t->elem = 1;
    if (status == 0 && h->kind >= GDR_RMA_KINDS)
        status = GDR_RMA_DEV_E_OP;
    if (status == 0 && is_acc_kind(t->kind)) {
        t->elem = gdr_gpu_type_size(t->type);
        int cas = t->kind == GDR_RMA_CAS;
        if (t->elem == 0 || !gdr_gpu_acc_valid(t->op, t->type)
            || cas != (t->op == GDR_GPU_OP_CSWAP)
            || ((t->kind == GDR_RMA_FOP || cas) && t->tbytes != t->elem))
            status = GDR_RMA_DEV_E_OP;
    }
    if (status == 0) {
        t->data_bytes = data_bytes_of(t->kind, t->op, t->elem, t->tbytes);
        t->result_bytes = has_results(t->kind) ? t->tbytes : 0;
        int inline_ok = (h->flags & GDR_RMA_DEV_F_INLINE)
            ? t->data_bytes > 0 && h->inline_len == t->data_bytes
            && t->data_bytes <= d->stage.slot_bytes : 1;
        if (!inline_ok || (t->kind == GDR_RMA_CAS && !(h->flags & GDR_RMA_DEV_F_INLINE)))
            status = GDR_RMA_DEV_E_PROTO;
    }
    if (status == 0)
        status = target_spans(dw, t, h, pieces);
    if (status == 0 && (h->flags & GDR_RMA_DEV_F_INLINE)) {
        t->inl = malloc(h->inline_len);
        if (t->inl == NULL)
            status = GDR_RMA_DEV_E_NOMEM;
        else
            memcpy(t->inl, inl, h->inline_len);
        t->ch_end = t->data_bytes;
    }
    if (status != 0) {
        target_op_free(t);
        d->counts.refused++;
        return send_done(dw, origin, h->op_id, status);
    }
    if (q->tail != NULL)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
    dw->n_target_ops++;
    return GDR_RMA_OK;
}

static target_op_t *target_lookup(gdr_rma_dev_win_t *dw, int origin, uint64_t op_id)
{
    for (target_op_t *t = dw->in[origin].head; t != NULL; t = t->next)
        if (t->op_id == op_id)
            return t;
    return NULL;
}

static int on_chunk(gdr_rma_dev_win_t *dw, const gdr_rma_dev_hdr_t *h)
{
    gdr_rma_dev_t *d = dw->d;
    int origin = (int) h->origin;
    target_op_t *t = target_lookup(dw, origin, h->op_id);
    if (t == NULL || t->status != 0 || h->off != t->ch_end || h->len > d->stage.slot_bytes
        || h->len > t->data_bytes - t->ch_end) {
        /* not ours to read (refused, aborted, or malformed): free the origin's slot */
        d->counts.refused++;
        if (t != NULL && t->status == 0)
            t->status = GDR_RMA_DEV_E_PROTO;
        return origin == dw->w->self ? (slot_returned(d, dw, origin, h->slot), GDR_RMA_OK)
            : send_taken(dw, origin, h->op_id, h->slot);
    }
    chunk_note_t *c = malloc(sizeof(*c));
    if (c == NULL) {
        t->status = GDR_RMA_DEV_E_NOMEM;
        return send_taken(dw, origin, h->op_id, h->slot);
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
static int release_chunks(gdr_rma_dev_win_t *dw, target_op_t *t)
{
    while (t->ch_head != NULL) {
        chunk_note_t *c = t->ch_head;
        t->ch_head = c->next;
        int rc = t->origin == dw->w->self ? (slot_returned(dw->d, dw, t->origin, c->slot),
                                             GDR_RMA_OK)
            : send_taken(dw, t->origin, t->op_id, c->slot);
        free(c);
        if (rc != GDR_RMA_OK)
            return rc;
    }
    t->ch_tail = NULL;
    return GDR_RMA_OK;
}

typedef struct apply_ctx {
    gdr_rma_dev_t *d;
    target_op_t *t;
    void *queue;
    char *in, *out;
    uint64_t at;
    struct iovec *tv, *sv;
    size_t n, cap;
    int failed;
} apply_ctx_t;

/* One target part of a chunk: an accumulate launch, or a piece of a copy list. */
static int apply_part(void *arg, const span_t *sp, char *addr, uint64_t n, uint64_t at)
{
    apply_ctx_t *c = arg;
    target_op_t *t = c->t;
    (void) sp;
    (void) at;
    uint64_t off = c->at;
    c->at += n;
    if (is_acc_kind(t->kind)) {
        int cas = t->kind == GDR_RMA_CAS;
        gdr_gpu_acc_args_t args = {.target = addr,
            .origin = c->in != NULL ? c->in + (cas ? 0 : off) : NULL,
            .result = c->out != NULL ? c->out + off : NULL,
            .compare = cas ? c->in + t->elem : NULL,.count = n / t->elem,.op = t->op,
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
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct iovec *tv = realloc(c->tv, cap * sizeof(*tv));
        if (tv == NULL)
            return -1;
        c->tv = tv;
        struct iovec *sv = realloc(c->sv, cap * sizeof(*sv));
        if (sv == NULL)
            return -1;
        c->sv = sv;
        c->cap = cap;
    }
    c->tv[c->n] = (struct iovec) {.iov_base = addr,.iov_len = n };
    c->sv[c->n] = (struct iovec) {.iov_base = s,.iov_len = n };
    c->n++;
    return 0;
}

/* Applies one chunk of work to the window: on its device queue (a mark after it), or at
 * once for host memory. */
static int target_apply(gdr_rma_dev_win_t *dw, target_op_t *t, work_t *wk)
{
    gdr_rma_dev_t *d = dw->d;
    apply_ctx_t c = {.d = d,.t = t,.in = wk->in != NULL ? wk->in->addr : NULL,
        .out = wk->out != NULL ? wk->out->addr : NULL
    };
    int rc = GDR_RMA_OK;
    wk->mark = NULL;
    if (t->device) {
        rc = ensure_queue(d, &dw->queue);
        if (rc != GDR_RMA_OK)
            return GDR_RMA_DEV_E_DEVICE;
        c.queue = dw->queue;
    }
    uint64_t tlen = t->kind == GDR_RMA_CAS ? t->elem : wk->len;
    int r = spans_each(&t->tgt, wk->off, tlen, apply_part, &c);
    if (r == 0 && c.n > 0) {
        rc = t->kind == GDR_RMA_PUT ? d->dev->copyv(d->dev->ctx, dw->queue, c.tv, c.n, c.sv, c.n)
            : d->dev->copyv(d->dev->ctx, dw->queue, c.sv, c.n, c.tv, c.n);
        if (rc != GDR_RMA_OK)
            c.failed = 1;
    }
    free(c.tv);
    free(c.sv);
    if (r < 0)
        return GDR_RMA_DEV_E_NOMEM;
    if (c.failed) {
        set_error(d, "queueing staged work on the window's device queue failed: %s",
                  d->dev->error(d->dev->ctx));
        return GDR_RMA_DEV_E_DEVICE;
    }
    if (t->device && d->dev->mark(d->dev->ctx, dw->queue, &wk->mark) != GDR_RMA_OK) {
        wk->mark = NULL;
        return GDR_RMA_DEV_E_DEVICE;
    }
    return 0;
}

/* The work of a chunk completed: free its data slot, send its results. */
static int target_retire(gdr_rma_dev_win_t *dw, target_op_t *t, work_t *wk)
{
    gdr_rma_dev_t *d = dw->d;
    int rc = GDR_RMA_OK;
    give(d, &wk->in);
    if (wk->out != NULL) {
        gdr_rma_dev_hdr_t h = hdr_of(dw, GDR_RMA_DEV_RESULT, t->op_id);
        uint32_t rlen = t->kind == GDR_RMA_CAS ? (uint32_t) t->elem : wk->len;
        h.off = wk->off;
        h.len = rlen;
        if (t->status != 0) {
            give(d, &wk->out);
        } else if (rlen <= d->cfg.inline_max) {
            h.flags = GDR_RMA_DEV_F_INLINE;
            h.inline_len = rlen;
            rc = send_hdr(dw, t->origin, &h, NULL, wk->out->addr);
            give(d, &wk->out);
        } else {
            h.slot = wk->out->index;
            h.raddr = wk->out->raddr;
            h.rkey = wk->out->rkey;
            lend(d, wk->out, dw, t->origin);
            wk->out = NULL;
            rc = send_hdr(dw, t->origin, &h, NULL, NULL);
        }
    }
    t->finished += t->kind == GDR_RMA_CAS ? t->elem : wk->len;
    wk->state = W_FREE;
    return rc;
}

/* Moves t along: takes chunks into work, queues read work in order, retires completed
 * work.  *fed: everything of t is queued (the next operation of the origin may start). */
static int target_step(gdr_rma_dev_win_t *dw, target_op_t *t, int *fed)
{
    gdr_rma_dev_t *d = dw->d;
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
            int r = mark_reached(d, &wk->mark);
            if (r == 0)
                continue;
            if (r < 0 && t->status == 0)
                t->status = GDR_RMA_DEV_E_DEVICE;
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
                rc = send_taken(dw, t->origin, t->op_id, wk->src_slot);
                if (rc != GDR_RMA_OK)
                    return rc;
            }
            if (wk->status != 0 && t->status == 0)
                t->status = GDR_RMA_DEV_E_DEVICE;
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
                give(d, &wk->out);
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
                rc = read_slot(dw, t->origin, c->raddr, c->rkey, c->slot, wk->in, c->len, wk);
                if (rc == GDR_RMA_BUSY) {
                    give(d, &wk->in);
                    give(d, &wk->out);
                    break;
                }
                if (rc != GDR_RMA_OK) {
                    give(d, &wk->in);
                    give(d, &wk->out);
                    t->status = GDR_RMA_DEV_E_DEVICE;
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

static int inbound_step(gdr_rma_dev_win_t *dw, inbound_t *q)
{
    gdr_rma_dev_t *d = dw->d;
    target_op_t **p = &q->head, *prev = NULL;
    while (*p != NULL) {
        target_op_t *t = *p;
        int fed = 0, rc = target_step(dw, t, &fed);
        if (rc == GDR_RMA_OK) {
            /* complete: its work reached, its results sent */
            rc = send_done(dw, t->origin, t->op_id, t->status);
            d->counts.served[t->kind]++;
            *p = t->next;
            if (q->tail == t)
                q->tail = prev;
            dw->n_target_ops--;
            target_op_free(t);
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

static int on_abort(gdr_rma_dev_win_t *dw, const gdr_rma_dev_hdr_t *h)
{
    target_op_t *t = target_lookup(dw, (int) h->origin, h->op_id);
    if (t == NULL) {
        dw->d->counts.refused++;
        return GDR_RMA_OK;
    }
    if (t->status == 0)
        t->status = GDR_RMA_DEV_E_ABORTED;
    return release_chunks(dw, t);
}

/* ---- origin: answers ---------------------------------------------------------------- */

static int on_result(gdr_rma_dev_win_t *dw, const gdr_rma_dev_hdr_t *h, const uint8_t *inl)
{
    gdr_rma_dev_t *d = dw->d;
    int target = (int) h->origin;
    origin_op_t *o = op_lookup(d, dw, target, h->op_id);
    int inline_result = (h->flags & GDR_RMA_DEV_F_INLINE) != 0;
    if (o == NULL || o->result.bytes == 0 || h->off != o->result_expect
        || h->len > o->result.bytes - o->result_expect || h->len > d->stage.slot_bytes) {
        d->counts.refused++;
        if (o != NULL && o->status == 0) {
            set_error(d, "staged protocol: rank %d sent results out of place", target);
            o->status = GDR_RMA_ERROR;
        }
        if (inline_result)
            return GDR_RMA_OK;
        return target == dw->w->self ? (slot_returned(d, dw, target, h->slot), GDR_RMA_OK)
            : send_taken(dw, target, h->op_id, h->slot);
    }
    announced_t *a = calloc(1, sizeof(*a) + (inline_result ? h->len : 0));
    if (a == NULL) {
        set_error(d, "out of memory for a staged result");
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
    case GDR_RMA_DEV_E_RANGE:
        return "the target range lies outside the target's window or attached memory";
    case GDR_RMA_DEV_E_OP:
        return "the target cannot apply this operation to this element type (or the "
            "target address is misaligned for it)";
    case GDR_RMA_DEV_E_PROTO:
        return "the target refused a malformed or out-of-sequence message";
    case GDR_RMA_DEV_E_ABORTED:
        return "the operation was aborted";
    case GDR_RMA_DEV_E_DEVICE:
        return "the target's device or transport failed";
    case GDR_RMA_DEV_E_NOMEM:
        return "the target ran out of memory";
    default:
        return "the target failed";
    }
}

static int on_done(gdr_rma_dev_win_t *dw, const gdr_rma_dev_hdr_t *h)
{
    gdr_rma_dev_t *d = dw->d;
    origin_op_t *o = op_lookup(d, dw, (int) h->origin, h->op_id);
    if (o == NULL || o->done) {
        d->counts.refused++;
        return GDR_RMA_OK;
    }
    o->done = 1;
    if (h->status != 0) {
        if (o->status == 0 || h->status != GDR_RMA_DEV_E_ABORTED)
            set_error(d, "staged operation to rank %d failed: %s", o->target,
                      status_text(h->status));
        o->status = GDR_RMA_ERROR;
        o->stop = 1;
    }
    return GDR_RMA_OK;
}

int gdr_rma_dev_deliver(gdr_rma_dev_win_t *dw, const void *msg, size_t len)
{
    gdr_rma_dev_t *d = dw->d;
    gdr_rma_dev_hdr_t h;
    const uint8_t *pieces, *inl;
    const char *why;
    if (gdr_rma_dev_decode(msg, len, &h, &pieces, &inl, &why) != 0
        || h.win_id != dw->win_id || h.origin >= (uint32_t) dw->w->n) {
        d->counts.refused++;
        return GDR_RMA_OK;
    }
    int rc = ensure_stage(d);
    if (rc != GDR_RMA_OK)
        return h.type == GDR_RMA_DEV_REQ ? send_done(dw, (int) h.origin, h.op_id,
                                                     GDR_RMA_DEV_E_NOMEM) : rc;
    switch (h.type) {
    case GDR_RMA_DEV_REQ:
        return on_req(dw, &h, pieces, inl);
    case GDR_RMA_DEV_CHUNK:
        return on_chunk(dw, &h);
    case GDR_RMA_DEV_ABORT:
        return on_abort(dw, &h);
    case GDR_RMA_DEV_TAKEN:
        if (slot_returned(d, dw, (int) h.origin, h.slot) != GDR_RMA_OK)
            d->counts.refused++;
        return GDR_RMA_OK;
    case GDR_RMA_DEV_RESULT:
        return on_result(dw, &h, inl);
    case GDR_RMA_DEV_DONE:
        return on_done(dw, &h);
    default:
        d->counts.refused++;
        return GDR_RMA_OK;
    }
}

/* ---- progress ----------------------------------------------------------------------- */

int gdr_rma_dev_progress(gdr_rma_dev_t *d)
{
    int rc;
    /* messages to self, those queued before this round */
    self_msg_t *m = d->self_head;
    d->self_head = d->self_tail = NULL;
    while (m != NULL) {
        self_msg_t *next = m->next;
        rc = gdr_rma_dev_deliver(m->dw, m->bytes, m->len);
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
        if ((rc = origin_step(d, o)) != GDR_RMA_OK)
            return rc;
    }
    for (gdr_rma_dev_win_t * dw = d->wins; dw != NULL; dw = dw->next) {
        if (dw->n_target_ops == 0)
            continue;
        for (int r = 0; r < dw->w->n; r++)
            if (dw->in[r].head != NULL && (rc = inbound_step(dw, &dw->in[r])) != GDR_RMA_OK)
                return rc;
    }
    return GDR_RMA_OK;
}
