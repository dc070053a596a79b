/* Stream-ordered RMA (DESIGN.md section 4, MPIX_*_enqueue): the queue between a window's
 * stream and gdr's progress, without host callbacks and without the calling thread ever
 * waiting for the stream.
 *
 * Each enqueued operation is an entry numbered 1, 2, ...  On the stream, gdr queues a write
 * of the entry's number to `reached` (a host-pinned word) after the work before it; the
 * progress (gdr_sq_progress) starts entries the stream has reached, in order, through the
 * host's executor, and publishes in `completed` how many entries are complete without a
 * gap; stream work that must see an entry complete waits on `completed`.  So:
 * - put, accumulate, put_signal: the origin is reusable by later stream work at once.  Up
 *   to stage_max bytes are copied by the stream into the queue's staging ring (host-pinned,
 *   or memory the NIC reaches) before `reached`, and the operation sends the copy; larger
 *   origins make the stream wait for the entry's completion.  A full staging ring makes
 *   the stream wait until enough earlier entries completed (back-pressure on the stream,
 *   never on the host).
 * - get: later stream work waits for the data (the entry's completion).
 * - flush (one rank or all): later stream work waits until every entry before it is
 *   complete and the host says its operations are complete at their targets.
 * A failure (the executor refuses an entry, an operation fails, a stream call fails) stops
 * the queue with the reason, releases every stream wait (`completed` jumps far ahead: the
 * stream never hangs on gdr) and refuses later enqueues; the host reports it at its next
 * MPI call.  Not thread safe: the caller serialises enqueue, progress and completion. */
#ifndef GDR_RMA_STREAM_QUEUE_H
#define GDR_RMA_STREAM_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include "gdr_rma_trigger_done.h"

/* The stream, as src/gpu (through src/adapt, or a test) drives it: every call queues work
 * and returns. */
typedef struct gdr_sq_stream {
    void *ctx;
    void *stream;               /* the window's stream (a CUstream), opaque here */
    /* *word = value once the work queued before has completed */
    int (*write_u64)(void *ctx, void *stream, volatile uint64_t *word, uint64_t value);
    /* later work waits until (int64_t) (*word - value) >= 0 */
    int (*wait_geq_u64)(void *ctx, void *stream, volatile uint64_t *word, uint64_t value);
    /* copies n bytes (device or host memory) in stream order */
    int (*copy)(void *ctx, void *stream, void *dst, const void *src, size_t n);
    const char *(*error)(const void *ctx);      /* why the last call failed */
} gdr_sq_stream_t;

typedef enum gdr_sq_kind {
    GDR_SQ_PUT, GDR_SQ_GET, GDR_SQ_ACC, GDR_SQ_PUT_SIGNAL, GDR_SQ_FLUSH
} gdr_sq_kind_t;

typedef struct gdr_sq_entry {
    uint64_t seq;
    gdr_sq_kind_t kind;
    int rank;                   /* the target; FLUSH: -1 for every rank */
    const void *origin;         /* the data to send: the staged copy, or the user's buffer */
    size_t bytes;               /* of origin */
    int staged;                 /* origin is the queue's copy */
    void *op;                   /* the host's description of the operation (the host's) */
    uint64_t stage_end;         /* staging bytes used up to the end of this entry's copy */
} gdr_sq_entry_t;

typedef struct gdr_sq_exec {
    /* Starts e (not FLUSH); completion comes later, through gdr_sq_complete(seq).  0, or
     * -1 with why. */
    int (*start)(void *ctx, const gdr_sq_entry_t *e, char *why, size_t why_len);
    /* FLUSH reached, every entry before it complete: 1 once the operations to rank (-1:
     * every rank) are complete at their targets, 0 not yet, -1 failed (why). */
    int (*flushed)(void *ctx, int rank, char *why, size_t why_len);
} gdr_sq_exec_t;

enum { GDR_SQ_OK = 0, GDR_SQ_FULL = 1, GDR_SQ_FAILED = -1, GDR_SQ_NOMEM = -2 };

typedef struct gdr_stream_queue {
    gdr_sq_stream_t stream;
    gdr_sq_exec_t exec;
    void *ctx;
    volatile uint64_t *reached;         /* host-pinned; the stream writes it */
    volatile uint64_t *completed;       /* host-pinned; the queue publishes it */
    char *stage;                /* the staging ring (stage_size bytes) */
    size_t stage_size, stage_max;
    uint64_t stage_head;        /* staging bytes handed out (a running count) */
    gdr_sq_entry_t *entries;    /* by seq % cap: entries not yet complete */
    uint32_t cap;
    uint64_t issued, started, published;
    gdr_trig_done_t done;       /* entry seq - 1, complete in any order */
    int failed;
    char error[256];
} gdr_stream_queue_t;

/* reached and completed: two 8-byte words of host-pinned memory the stream can address,
 * zeroed here; stage: stage_size bytes the stream can copy into and the transport can
 * read (may be NULL with stage_size 0: nothing is staged); stage_max: the largest origin
 * staged; cap: entries in flight at most (a power of two).  0, or GDR_SQ_NOMEM. */
int gdr_sq_init(gdr_stream_queue_t *q, const gdr_sq_stream_t *stream, const gdr_sq_exec_t *exec,
                void *ctx, volatile uint64_t *reached, volatile uint64_t *completed,
                void *stage, size_t stage_size, size_t stage_max, uint32_t cap);
/* Every entry must be complete (gdr_sq_idle), or the queue failed. */
void gdr_sq_free(gdr_stream_queue_t *q);

/* Enqueues an operation of kind (not FLUSH) to rank, sending bytes at origin (put, acc,
 * put_signal; a get sends nothing: origin NULL, bytes 0).  GDR_SQ_OK; GDR_SQ_FULL (cap
 * entries in flight: progress, then again); GDR_SQ_FAILED (gdr_sq_error says why). */
int gdr_sq_enqueue(gdr_stream_queue_t *q, gdr_sq_kind_t kind, int rank, const void *origin,
                   size_t bytes, void *op);
/* Enqueues a flush of rank (-1: every rank). */
int gdr_sq_enqueue_flush(gdr_stream_queue_t *q, int rank);

/* Starts what the stream reached, completes flushes, publishes.  The number of entries
 * started or completed here, or GDR_SQ_FAILED. */
int gdr_sq_progress(gdr_stream_queue_t *q);
/* The executor finished entry seq (status 0), or it failed (the queue fails with why). */
void gdr_sq_complete(gdr_stream_queue_t *q, uint64_t seq, int status, const char *why);

/* The entry of seq, enqueued and not yet complete (for reports); NULL otherwise. */
const gdr_sq_entry_t *gdr_sq_entry(const gdr_stream_queue_t *q, uint64_t seq);

/* 1: every entry enqueued is complete (or the queue failed). */
int gdr_sq_idle(const gdr_stream_queue_t *q);
const char *gdr_sq_error(const gdr_stream_queue_t *q);

#endif /* GDR_RMA_STREAM_QUEUE_H */
