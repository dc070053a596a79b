/* The staged protocol's internals, shared by its four files (src/rma/gdr_rma_staged.h):
 *   gdr_rma_staged_core.c    span lists, slots, messages, copies between spans and slots
 *   gdr_rma_staged_origin.c  an origin's operations: request, staging, results, completion
 *   gdr_rma_staged_target.c  a target's operations: validation, reads, work, answers
 *   gdr_rma_staged.c         the context, windows, message dispatch and progress
 * Not part of the API: only these files include it. */
#ifndef GDR_RMA_STAGED_INTERNAL_H
#define GDR_RMA_STAGED_INTERNAL_H

#include "gdr_rma_staged.h"

/* Chunks of one operation in flight per direction and side: one is copied while the
 * next is read (double buffering). */
#define DEPTH 2

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

/* Visits the parts of s inside [off, off+len), in order: n bytes at addr.  Stops at the
 * first nonzero return. */
typedef int (*part_fn)(void *arg, const span_t *sp, char *addr, uint64_t n);

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
    gdr_rma_staged_win_t *dw;
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
    int status;                 /* 0, or GDR_RMA_STAGED_E_*: feed no more */
} target_op_t;

typedef struct inbound {
    uint32_t next_seq;
    target_op_t *head, *tail;
} inbound_t;

struct gdr_rma_staged_win {
    gdr_rma_staged_t *d;
    gdr_rma_win_t *w;
    uint64_t win_id;
    char *base;
    uint64_t size;
    int base_device;
    void *queue;                /* the window's device queue, made on first use */
    uint32_t *seq_out;          /* per target */
    inbound_t *in;              /* per origin */
    unsigned long n_target_ops;
    gdr_rma_staged_win_t *next;
};

typedef struct self_msg {
    struct self_msg *next;
    gdr_rma_staged_win_t *dw;
    size_t len;
    uint8_t bytes[];
} self_msg_t;

/* Who may say TAKEN for a send slot lent with CHUNK or RESULT. */
typedef struct lent {
    gdr_rma_staged_win_t *dw;      /* NULL: not lent */
    int rank;
} lent_t;

struct gdr_rma_staged {
    gdr_rma_engine_t *eng;
    const gdr_rma_device_t *dev;
    gdr_rma_staged_config_t cfg;
    int staged;                 /* stage set up */
    gdr_rma_stage_t stage;
    lent_t *lent;
    void *origin_queue;
    origin_op_t **ops;          /* by op_id's low 32 bits */
    origin_op_t *first, *last;  /* in call order */
    uint32_t ops_cap, n_ops;
    uint32_t generation;
    gdr_rma_staged_win_t *wins;
    self_msg_t *self_head, *self_tail;
    gdr_rma_staged_counts_t counts;
    uint8_t msg[GDR_RMA_STAGED_MSG_MAX];
    gdr_rma_staged_piece_t pieces[GDR_RMA_STAGED_PIECES_MAX];
    char error[256];
};

static inline int has_origin_data(gdr_rma_kind_t kind, int op)
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

static inline int has_results(gdr_rma_kind_t kind)
{
    return kind == GDR_RMA_GET || kind == GDR_RMA_GET_ACC || kind == GDR_RMA_FOP
        || kind == GDR_RMA_CAS;
}

static inline uint64_t data_bytes_of(gdr_rma_kind_t kind, int op, uint64_t elem, uint64_t tbytes)
{
    if (!has_origin_data(kind, op))
        return 0;
    return kind == GDR_RMA_CAS ? 2 * elem : tbytes;
}

/* The alignment the kernel needs of an element (C's, for the types it knows). */
static inline uint64_t elem_align(int type)
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

static inline int is_acc_kind(gdr_rma_kind_t kind)
{
    return kind != GDR_RMA_PUT && kind != GDR_RMA_GET;
}

/* Matching pieces of two sides of one device copy (the device side and a slot or window
 * side), grown as a chunk is walked; one copyv takes them all. */
typedef struct iov_pairs {
    struct iovec *dv, *sv;
    size_t n, cap;
} iov_pairs_t;

/* gdr_rma_staged_core.c */
/* Appends (d, s) of n bytes each; -1 when out of memory. */
int gdr_staged_pairs_add(iov_pairs_t *p, void *d, void *s, uint64_t n);
void gdr_staged_pairs_free(iov_pairs_t *p);
int gdr_staged_spans_each(spans_t *s, uint64_t off, uint64_t len, part_fn fn, void *arg);
void gdr_staged_spans_free(spans_t *s);
void gdr_staged_set_error(gdr_rma_staged_t *d, const char *fmt, ...);
int gdr_staged_ensure_stage(gdr_rma_staged_t *d);
int gdr_staged_ensure_queue(gdr_rma_staged_t *d, void **queue);
int gdr_staged_mark_reached(gdr_rma_staged_t *d, void **mark);
void gdr_staged_give(gdr_rma_staged_t *d, gdr_rma_slot_t **slot);
gdr_rma_staged_hdr_t gdr_staged_hdr_of(const gdr_rma_staged_win_t *dw, int type, uint64_t op_id);
int gdr_staged_send_hdr(gdr_rma_staged_win_t *dw, int rank, const gdr_rma_staged_hdr_t *h,
                     const gdr_rma_staged_piece_t *pieces, const void *inline_data);
int gdr_staged_send_taken(gdr_rma_staged_win_t *dw, int rank, uint64_t op_id, uint32_t slot);
int gdr_staged_send_done(gdr_rma_staged_win_t *dw, int rank, uint64_t op_id, int status);
void gdr_staged_lend(gdr_rma_staged_t *d, const gdr_rma_slot_t *s, gdr_rma_staged_win_t *dw, int rank);
int gdr_staged_slot_returned(gdr_rma_staged_t *d, gdr_rma_staged_win_t *dw, int rank, uint32_t index);
int gdr_staged_read_slot(gdr_rma_staged_win_t *dw, int rank, uint64_t raddr, uint32_t rkey,
                      uint32_t index, gdr_rma_slot_t *into, uint32_t len, work_t *wk);
int gdr_staged_slot_copy(gdr_rma_staged_t *d, void **queue, spans_t *s, uint64_t off, uint64_t len,
                      char *slot, int to_slot, int check_ids, void **mark);
int gdr_staged_take_waiting(gdr_rma_staged_t *d, gdr_rma_stage_pool_t pool, gdr_rma_slot_t **slot);
int gdr_staged_wait_mark(gdr_rma_staged_t *d, void **mark);
int gdr_staged_lent_to(const gdr_rma_staged_t *d, const gdr_rma_staged_win_t *dw);

/* gdr_rma_staged_origin.c */
int gdr_staged_origin_step(gdr_rma_staged_t *d, origin_op_t *o);
int gdr_staged_on_result(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h, const uint8_t *inl);
int gdr_staged_on_done(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h);

/* gdr_rma_staged_target.c */
void gdr_staged_target_op_free(target_op_t *t);
int gdr_staged_on_req(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h, const uint8_t *pieces,
                   const uint8_t *inl);
int gdr_staged_on_chunk(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h);
int gdr_staged_inbound_step(gdr_rma_staged_win_t *dw, inbound_t *q);
int gdr_staged_on_abort(gdr_rma_staged_win_t *dw, const gdr_rma_staged_hdr_t *h);

#endif /* GDR_RMA_STAGED_INTERNAL_H */
