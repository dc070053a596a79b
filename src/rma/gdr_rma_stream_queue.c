#include "gdr_rma_stream_queue.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gdr/gdr_rma_trigger_ring.h"      /* the acquire/release word accessors */

#define STAGE_ALIGN 64
/* what `completed` jumps to past every entry at a failure: every stream wait is released
 * (waits compare as signed differences, so not UINT64_MAX) */
#define RELEASE_ALL (UINT64_C(1) << 40)

static void publish(gdr_stream_queue_t *q, uint64_t n)
{
    q->published = n;
    gdr_trig_store_release(q->completed, n);
}

static int fail(gdr_stream_queue_t *q, const char *fmt, ...)
{
    if (!q->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(q->error, sizeof(q->error), fmt, ap);
        va_end(ap);
        q->failed = 1;
        gdr_trig_store_release(q->completed, q->issued + RELEASE_ALL);
    }
    return GDR_SQ_FAILED;
}

static int stream_fail(gdr_stream_queue_t *q, const char *call)
{
    return fail(q, "queueing %s on the window's stream failed: %s", call,
                q->stream.error(q->stream.ctx));
}

int gdr_sq_init(gdr_stream_queue_t *q, const gdr_sq_stream_t *stream, const gdr_sq_exec_t *exec,
                void *ctx, volatile uint64_t *reached, volatile uint64_t *completed,
                void *stage, size_t stage_size, size_t stage_max, uint32_t cap)
{
    memset(q, 0, sizeof(*q));
    q->stream = *stream;
    q->exec = *exec;
    q->ctx = ctx;
    q->reached = reached;
    q->completed = completed;
    *reached = 0;
    *completed = 0;
    q->stage = stage;
    q->stage_size = stage == NULL ? 0 : stage_size - stage_size % STAGE_ALIGN;
    q->stage_max = stage_max < q->stage_size ? stage_max : q->stage_size;
    q->cap = cap;
    q->entries = calloc(cap, sizeof(*q->entries));
    if (q->entries == NULL || gdr_trig_done_init(&q->done, cap) != 0) {
        free(q->entries);
        return GDR_SQ_NOMEM;
    }
    return GDR_SQ_OK;
}

void gdr_sq_free(gdr_stream_queue_t *q)
{
    gdr_trig_done_free(&q->done);
    free(q->entries);
    q->entries = NULL;
}

static gdr_sq_entry_t *entry(const gdr_stream_queue_t *q, uint64_t seq)
{
    return &q->entries[seq % q->cap];
}

/* Room for bytes in the staging ring: [*start, *end) as running counts.  The ring
 * positions it takes were last used by earlier entries; the stream must not copy over
 * them before those completed: returns the entry to wait for (0: none). */
static uint64_t stage_alloc(gdr_stream_queue_t *q, size_t bytes, uint64_t *start, uint64_t *end)
{
    uint64_t s = q->stage_head, S = q->stage_size;
    if (s % S + bytes > S)
        s += S - s % S;         /* does not fit before the end: the next lap */
    *start = s;
    *end = s + (bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
    /* previous lap's image of [start, end): an entry that staged below end - S is in it */
    for (uint64_t seq = q->issued; seq > q->published; seq--) {
        const gdr_sq_entry_t *e = entry(q, seq);
        if (e->staged && e->stage_end - (uint64_t) ((e->bytes + STAGE_ALIGN - 1)
                                                    / STAGE_ALIGN * STAGE_ALIGN) + S < *end)
            return seq;
    }
    return 0;
}

static int enqueue(gdr_stream_queue_t *q, gdr_sq_kind_t kind, int rank, const void *origin,
                   size_t bytes, void *op)
{
    if (q->failed)
        return GDR_SQ_FAILED;
    if (q->issued - q->published >= q->cap)
        return GDR_SQ_FULL;
    uint64_t seq = q->issued + 1;
    gdr_sq_entry_t *e = entry(q, seq);
    *e = (gdr_sq_entry_t) {.seq = seq,.kind = kind,.rank = rank,.origin = origin,.bytes = bytes,
        .op = op,.stage_end = q->stage_head
    };
    int sends = kind != GDR_SQ_GET && kind != GDR_SQ_FLUSH && bytes > 0;
    if (sends && bytes <= q->stage_max) {
        uint64_t start, end, wait_for = stage_alloc(q, bytes, &start, &end);
        if (wait_for != 0 && q->stream.wait_geq_u64(q->stream.ctx, q->stream.stream,
                                                    q->completed, wait_for) != 0)
            return stream_fail(q, "a wait for staging room");
        char *copy = q->stage + start % q->stage_size;
        if (q->stream.copy(q->stream.ctx, q->stream.stream, copy, origin, bytes) != 0)
            return stream_fail(q, "the copy of an origin buffer");
        e->origin = copy;
        e->staged = 1;
        e->stage_end = q->stage_head = end;
    }
    if (q->stream.write_u64(q->stream.ctx, q->stream.stream, q->reached, seq) != 0)
        return stream_fail(q, "the write that hands an operation to gdr");
    q->issued = seq;
    /* later stream work may touch what this entry reads or writes: wait for it */
    if (!e->staged && q->stream.wait_geq_u64(q->stream.ctx, q->stream.stream, q->completed, seq) != 0)
        return stream_fail(q, "the wait for an operation's completion");
    return GDR_SQ_OK;
}

int gdr_sq_enqueue(gdr_stream_queue_t *q, gdr_sq_kind_t kind, int rank, const void *origin,
                   size_t bytes, void *op)
{
    if (kind == GDR_SQ_FLUSH)
        return fail(q, "gdr_sq_enqueue: a flush goes through gdr_sq_enqueue_flush");
    return enqueue(q, kind, rank, origin, bytes, op);
}

int gdr_sq_enqueue_flush(gdr_stream_queue_t *q, int rank)
{
    return enqueue(q, GDR_SQ_FLUSH, rank, NULL, 0, NULL);
}

static void mark(gdr_stream_queue_t *q, uint64_t seq)
{
    int moved = gdr_trig_done_mark(&q->done, seq - 1);
    if (moved < 0)
        fail(q, "operation %llu of the stream completed twice, or before it started (a gdr "
             "bug)", (unsigned long long) seq);
    else if (moved > 0)
        publish(q, q->done.next);
}

void gdr_sq_complete(gdr_stream_queue_t *q, uint64_t seq, int status, const char *why)
{
    if (status != 0) {
        fail(q, "stream operation %llu (to rank %d) failed: %s", (unsigned long long) seq,
             entry(q, seq)->rank, why != NULL ? why : "the transport reported an error");
        return;
    }
    if (!q->failed)
        mark(q, seq);
}

int gdr_sq_progress(gdr_stream_queue_t *q)
{
    int n = 0;
    if (q->failed)
        return GDR_SQ_FAILED;
    uint64_t reached = gdr_trig_load_acquire(q->reached);
    if (reached > q->issued)
        return fail(q, "the stream reached operation %llu, but only %llu were enqueued (the "
                    "queue's words were overwritten?)", (unsigned long long) reached,
                    (unsigned long long) q->issued);
    char why[200] = "";
    while (q->started < reached) {
        const gdr_sq_entry_t *e = entry(q, q->started + 1);
        if (e->kind == GDR_SQ_FLUSH) {
            if (q->published < e->seq - 1)
                break;          /* the entries before it first */
            int rc = q->exec.flushed(q->ctx, e->rank, why, sizeof(why));
            if (rc < 0)
                return fail(q, "the flush of rank %d on the stream failed: %s", e->rank, why);
            if (rc == 0)
                break;
            q->started++;
            mark(q, e->seq);
        } else {
            if (q->exec.start(q->ctx, e, why, sizeof(why)) != 0)
                return fail(q, "starting stream operation %llu (to rank %d) failed: %s",
                            (unsigned long long) e->seq, e->rank, why);
            q->started++;
        }
        n++;
    }
    return q->failed ? GDR_SQ_FAILED : n;
}

const gdr_sq_entry_t *gdr_sq_entry(const gdr_stream_queue_t *q, uint64_t seq)
{
    return seq > q->published && seq <= q->issued ? entry(q, seq) : NULL;
}

int gdr_sq_idle(const gdr_stream_queue_t *q)
{
    return q->failed || q->published == q->issued;
}

const char *gdr_sq_error(const gdr_stream_queue_t *q)
{
    return q->failed ? q->error : "";
}
