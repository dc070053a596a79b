/* The stream queue of stream-ordered RMA (src/rma/gdr_rma_stream_queue.h) on the simulated
 * GPU's streams (src/adapt/gdr_gpu_rma_stream.h), in both of its modes.  The executor is a
 * fake "transport" that applies puts and gets to a host array (the target) when it starts
 * them and completes them later, newest first (so completion is out of order).  The
 * stream stands in for the application's: memsets play the kernels that write origin
 * buffers, copies the kernels that read results.
 *
 * Cases: the enqueue calls return while the stream is still blocked (the host never waits
 * on the stream); 100 staged puts of a device buffer that the stream overwrites after
 * each put: each carried the value it had at its put, through a staging ring that wraps
 * (the stream waited for room); a put too large to stage: the stream waits before
 * overwriting it; a get: later stream work sees the data; a flush: later stream work
 * passes it only after every entry before it completed and the host said flushed; cap
 * entries in flight: the next enqueue says FULL; an entry the executor refuses: the queue
 * fails with the reason, the stream is released (no hang), later enqueues are refused. */
#include "gpu/gpusim_modes.h"
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include "gpu/gdr_gpu_mem.h"
#include "adapt/gdr_gpu_rma_stream.h"
#include "gpu/gdr_gpu_stream.h"
#include "rma/gdr_rma_stream_queue.h"

enum { STAGE = 4096, STAGE_MAX = 1024, CAP = 64, PUT_BYTES = 256, PUTS = 100, BIG = 2048 };

typedef struct {
    gdr_gpu_t *g;
    gdr_stream_queue_t *q;
    uint8_t target[64 * 1024];  /* rank 1's window, in host memory */
    uint64_t pending[CAP];      /* started, not yet completed */
    int npending;
    int refuse;                 /* start() refuses */
    int flushed_answer;         /* what flushed() says */
    uint64_t flushed_calls, flushed_seen_published;
    int bad_put;                /* a put whose bytes were not all its own value */
    uint64_t puts_seen;
} world_t;

typedef struct {
    size_t disp;
    void *dst;                  /* get: where the data goes (device memory) */
} op_t;

static int ex_start(void *ctx, const gdr_sq_entry_t *e, char *why, size_t why_len)
{
    world_t *w = ctx;
    const op_t *op = e->op;
    if (w->refuse) {
        snprintf(why, why_len, "the fake refuses entry %llu", (unsigned long long) e->seq);
        return -1;
    }
    if (e->kind == GDR_SQ_PUT) {
        /* staged: pinned host memory; else the user's (device) buffer */
        if (gdr_gpu_copy(w->g, w->target + op->disp, e->origin, e->bytes) != 0)
            return snprintf(why, why_len, "copy: %s", w->g->error), -1;
        for (size_t i = 1; i < e->bytes; i++)
            w->bad_put += w->target[op->disp + i] != w->target[op->disp];
        w->puts_seen++;
    } else if (e->kind == GDR_SQ_GET) {
        if (gdr_gpu_copy(w->g, op->dst, w->target + op->disp, PUT_BYTES) != 0)
            return snprintf(why, why_len, "copy: %s", w->g->error), -1;
    }
    w->pending[w->npending++] = e->seq;
    return 0;
}

static int ex_flushed(void *ctx, int rank, char *why, size_t why_len)
{
    world_t *w = ctx;
    (void) rank, (void) why, (void) why_len;
    w->flushed_calls++;
    w->flushed_seen_published = w->q->published;
    return w->flushed_answer;
}

/* one round: start what the stream reached, complete what started (newest first) */
static int round_trip(world_t *w)
{
    int rc = gdr_sq_progress(w->q);
    while (rc >= 0 && w->npending > 0)
        gdr_sq_complete(w->q, w->pending[--w->npending], 0, NULL);
    return rc;
}

/* rounds until the queue is idle and the stream done, or 10 s */
static int drain(world_t *w, gdr_gpu_stream_t s)
{
    for (int i = 0; i < 100000; i++) {
        if (round_trip(w) < 0)
            return -1;
        if (gdr_sq_idle(w->q) && gdr_gpu_stream_query(w->g, s) == 1)
            return 0;
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
    return -2;
}

static void body(const char *lib, const char *mode)
{
    gdr_gpu_t g;
    gdr_gpu_stream_t s;
    gdr_sq_stream_t seam;
    gdr_stream_queue_t q;
    static world_t w;
    uint64_t *words;
    void *stage, *dbuf, *host;
    (void) mode;
    if (gdr_gpu_open(&g, lib, 0) != 0) {
        GDR_CHECK(0, "open the simulated GPU: %s", g.error);
        return;
    }
    GDR_CHECK(gdr_gpu_stream_create(&g, &s) == 0 && gdr_gpu_host_alloc(&g, 64, (void **) &words) == 0
              && gdr_gpu_host_alloc(&g, STAGE, &stage) == 0
              && gdr_gpu_mem_alloc(&g, 64 * 1024, &dbuf) == 0
              && gdr_gpu_host_alloc(&g, 4096, &host) == 0
              && gdr_gpu_rma_stream_init(&g, s, &seam) == 0,
              "a stream, pinned words, a staging ring, a device buffer: %s", g.error);
    memset(&w, 0, sizeof(w));
    w.g = &g;
    w.q = &q;
    w.flushed_answer = 1;
    gdr_sq_exec_t ex = {.start = ex_start,.flushed = ex_flushed };
    volatile uint64_t *gate = &words[2];
    *gate = 0;
    GDR_CHECK(gdr_sq_init(&q, &seam, &ex, &w, &words[0], &words[1], stage, STAGE, STAGE_MAX,
                          CAP) == GDR_SQ_OK, "the queue");

    /* staged puts, the origin overwritten after each */
    static op_t ops[PUTS + 8];
    int rc = gdr_gpu_stream_wait_u64(&g, s, (const void *) gate, 1, GDR_GPU_WAIT_GEQ);
    int saw_full = 0;
    for (int i = 0; i < PUTS && rc == 0; i++) {
        ops[i].disp = (size_t) i * PUT_BYTES;
        rc = gdr_gpu_memset_async(&g, s, dbuf, (unsigned char) (i + 1), PUT_BYTES);
        rc = rc ? rc : gdr_sq_enqueue(&q, GDR_SQ_PUT, 1, dbuf, PUT_BYTES, &ops[i]);
        if (rc == GDR_SQ_FULL && !saw_full) {
            saw_full = 1;
            GDR_CHECK(i == CAP && gdr_gpu_stream_query(&g, s) == 0 && q.published == 0,
                      "%d enqueue calls returned while the stream is still blocked at its "
                      "first work (the host never waits on the stream); the next one, with "
                      "%d in flight, says FULL", CAP, CAP);
            __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
        }
        while (rc == GDR_SQ_FULL) {     /* progress, then again */
            rc = round_trip(&w) < 0 ? -1 : 0;
            rc = rc ? rc : gdr_sq_enqueue(&q, GDR_SQ_PUT, 1, dbuf, PUT_BYTES, &ops[i]);
        }
    }
    GDR_CHECK(rc == 0 && drain(&w, s) == 0, "%d staged puts enqueued and done (%s)", PUTS,
              gdr_sq_error(&q));
    int values = 1;
    for (int i = 0; i < PUTS; i++)
        values &= w.target[i * PUT_BYTES] == (uint8_t) (i + 1)
            && w.target[i * PUT_BYTES + PUT_BYTES - 1] == (uint8_t) (i + 1);
    GDR_CHECK(values && w.bad_put == 0 && w.puts_seen == PUTS,
              "each put carried the value its origin had at the put, though the stream "
              "overwrote it right after (%llu puts, %d mixed)",
              (unsigned long long) w.puts_seen, w.bad_put);
    GDR_CHECK(q.stage_head > STAGE, "the staging ring wrapped (%llu bytes staged in %d)",
              (unsigned long long) q.stage_head, STAGE);

    /* too large to stage: the stream waits for it before overwriting the origin */
    ops[PUTS] = (op_t) {.disp = 32 * 1024 };
    rc = gdr_gpu_memset_async(&g, s, dbuf, 0x77, BIG);
    rc = rc ? rc : gdr_sq_enqueue(&q, GDR_SQ_PUT, 1, dbuf, BIG, &ops[PUTS]);
    rc = rc ? rc : gdr_gpu_memset_async(&g, s, dbuf, 0x88, BIG);
    GDR_CHECK(rc == 0 && drain(&w, s) == 0 && w.target[32 * 1024] == 0x77
              && w.target[32 * 1024 + BIG - 1] == 0x77 && w.bad_put == 0,
              "a %d-byte put (over the %d staged): sent from the origin itself, before the "
              "stream overwrote it", BIG, STAGE_MAX);

    /* a get: later stream work sees the data */
    memset(w.target + 40 * 1024, 0x5a, PUT_BYTES);
    memset(host, 0, PUT_BYTES);
    ops[PUTS + 1] = (op_t) {.disp = 40 * 1024,.dst = (char *) dbuf + 8192 };
    rc = gdr_gpu_memset_async(&g, s, (char *) dbuf + 8192, 0, PUT_BYTES);
    rc = rc ? rc : gdr_sq_enqueue(&q, GDR_SQ_GET, 1, NULL, 0, &ops[PUTS + 1]);
    rc = rc ? rc : gdr_gpu_copy_async(&g, s, host, (char *) dbuf + 8192, PUT_BYTES);
    GDR_CHECK(rc == 0 && drain(&w, s) == 0 && ((uint8_t *) host)[0] == 0x5a
              && ((uint8_t *) host)[PUT_BYTES - 1] == 0x5a,
              "a get, then a stream copy of its destination: the copy has the data");

    /* a flush holds later stream work until the host says flushed */
    volatile uint64_t *after = &words[3];
    *after = 0;
    for (int i = 0; i < 3; i++) {
        ops[PUTS + 2 + i] = (op_t) {.disp = 48 * 1024 + (size_t) i * 64 };
        rc = rc ? rc : gdr_sq_enqueue(&q, GDR_SQ_PUT, 1, dbuf, 64, &ops[PUTS + 2 + i]);
    }
    rc = rc ? rc : gdr_sq_enqueue_flush(&q, -1);
    rc = rc ? rc : gdr_gpu_stream_write_u64(&g, s, (void *) after, 1);
    w.flushed_answer = 0;
    uint64_t first = q.issued - 3;      /* the three puts */
    for (int i = 0; i < 200 && rc == 0 && w.flushed_calls == 0; i++) {
        rc = round_trip(&w) < 0 ? -1 : 0;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < 20 && rc == 0; i++) {
        rc = round_trip(&w) < 0 ? -1 : 0;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    GDR_CHECK(rc == 0 && w.flushed_calls > 0 && w.flushed_seen_published == first + 2
              && __atomic_load_n(after, __ATOMIC_ACQUIRE) == 0,
              "a flush after 3 puts: asked only once all 3 completed (published %llu of "
              "%llu); while the host says not yet, the stream's next work waits",
              (unsigned long long) w.flushed_seen_published, (unsigned long long) first + 2);
    w.flushed_answer = 1;
    GDR_CHECK(drain(&w, s) == 0 && __atomic_load_n(after, __ATOMIC_ACQUIRE) == 1,
              "flushed: the stream goes on");

    /* a refused entry fails the queue and releases the stream */
    *gate = 0;
    rc = gdr_gpu_stream_wait_u64(&g, s, (const void *) gate, 1, GDR_GPU_WAIT_GEQ);
    ops[PUTS + 5] = (op_t) {.disp = 0 };
    rc = rc ? rc : gdr_sq_enqueue(&q, GDR_SQ_GET, 1, NULL, 0, &ops[PUTS + 5]);
    rc = rc ? rc : gdr_sq_enqueue(&q, GDR_SQ_PUT, 1, dbuf, BIG, &ops[PUTS]);
    w.refuse = 1;
    __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
    int failed = 0;
    for (int i = 0; i < 2000 && !failed; i++) {
        failed = gdr_sq_progress(&q) == GDR_SQ_FAILED;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    GDR_CHECK(rc == 0 && failed && strstr(gdr_sq_error(&q), "the fake refuses") != NULL,
              "an entry the executor refuses fails the queue: %s", gdr_sq_error(&q));
    GDR_CHECK(gdr_gpu_stream_sync(&g, s) == 0, "the stream's waits are released: it finishes");
    GDR_CHECK(gdr_sq_enqueue(&q, GDR_SQ_PUT, 1, dbuf, 8, &ops[0]) == GDR_SQ_FAILED
              && gdr_sq_enqueue_flush(&q, 1) == GDR_SQ_FAILED, "later enqueues are refused");

    gdr_sq_free(&q);
    GDR_CHECK(gdr_gpu_mem_free(&g, dbuf) == 0 && gdr_gpu_host_free(&g, stage) == 0
              && gdr_gpu_host_free(&g, words) == 0 && gdr_gpu_host_free(&g, host) == 0
              && gdr_gpu_stream_destroy(&g, s) == 0, "free");
    gdr_gpu_close(&g);
}

int main(int argc, char **argv)
{
    alarm(120);                 /* a stream that hangs kills the test, not CI */
    gpusim_run_modes(argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so", body);
    return gdr_unit_finish();
}
