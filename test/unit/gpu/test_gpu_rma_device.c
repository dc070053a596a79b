/* The RMA engine's device seam over the GPU layer (src/adapt/gdr_gpu_rma_device.h), on the
 * simulated GPU in both modes (strict: the test never touches device memory on the
 * host; it reads device memory back with gdr_gpu_copy): scattered copies both ways, order
 * on one queue, marks that never wait, the accumulate kernel, buffer ids, refusals. */
#include "gpusim_modes.h"
#include <stdint.h>
#include <time.h>
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_module.h"
#include "adapt/gdr_gpu_rma_device.h"
#include "gpu/gdr_gpu_stream.h"

static void pause_ms(int ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, NULL);
}

/* Polls mark until it is reached (1), fails (< 0) or 5 s pass (0). */
static int poll_mark(const gdr_rma_device_t *dev, void *mark)
{
    int rc = 0;
    for (int i = 0; i < 5000 && (rc = dev->reached(dev->ctx, mark)) == 0; i++)
        pause_ms(1);
    return rc;
}

/* Marks the queue and waits for the mark by polling: 1 when reached. */
static int drain(const gdr_rma_device_t *dev, void *q)
{
    void *m;
    if (dev->mark(dev->ctx, q, &m) != GDR_RMA_OK)
        return -1;
    int rc = poll_mark(dev, m);
    dev->mark_free(dev->ctx, m);
    return rc;
}

#define IOV(base, off, len) { (char *) (base) + (off), (len) }

/* 1024 bytes between three device pieces (in two buffers) and five pieces of a pinned
 * buffer, both ways, plus a copy from a mix of host and device pieces. */
static void test_copyv(gdr_gpu_t *g, const gdr_rma_device_t *dev, void *q)
{
    unsigned char *h, *h2, pattern[1024], back[4096];
    void *a, *b;
    GDR_CHECK(dev->host_alloc(dev->ctx, 1024, (void **) &h) == GDR_RMA_OK
              && dev->host_alloc(dev->ctx, 2048, (void **) &h2) == GDR_RMA_OK
              && (uintptr_t) h % 64 == 0, "two pinned buffers, aligned");
    GDR_CHECK(gdr_gpu_mem_alloc(g, 4096, &a) == 0 && gdr_gpu_mem_alloc(g, 4096, &b) == 0,
              "two device buffers");
    for (int i = 0; i < 1024; i++)
        pattern[i] = (unsigned char) (i * 13 + 5);
    memcpy(h, pattern, 1024);
    memset(back, 0, sizeof(back));
    GDR_CHECK(gdr_gpu_copy(g, a, back, 4096) == 0 && gdr_gpu_copy(g, b, back, 4096) == 0,
              "device buffers zeroed");

    /* host (5 pieces, one empty) -> device (3 pieces) */
    struct iovec dd[] = { IOV(a, 0, 100), IOV(b, 200, 300), IOV(a, 1000, 624) };
    struct iovec hs[] = { IOV(h, 0, 10), IOV(h, 10, 250), IOV(h, 260, 0), IOV(h, 260, 501),
                          IOV(h, 761, 263) };
    GDR_CHECK(dev->copyv(dev->ctx, q, dd, 3, hs, 5) == GDR_RMA_OK && drain(dev, q) == 1,
              "copyv: 5 pinned pieces into 3 device pieces, then the mark is reached");
    int ok = gdr_gpu_copy(g, back, a, 4096) == 0;
    ok &= memcmp(back, pattern, 100) == 0 && memcmp(back + 1000, pattern + 400, 624) == 0;
    ok &= back[100] == 0 && back[999] == 0 && back[1624] == 0;
    GDR_CHECK(ok, "buffer a: bytes 0-99 and 1000-1623 hold pieces 1 and 3, nothing else");
    ok = gdr_gpu_copy(g, back, b, 4096) == 0;
    ok &= memcmp(back + 200, pattern + 100, 300) == 0 && back[199] == 0 && back[500] == 0;
    GDR_CHECK(ok, "buffer b: bytes 200-499 hold piece 2, nothing else");

    /* device (5 pieces) -> host (3 pieces with gaps) */
    memset(h2, 0xee, 2048);
    struct iovec ds[] = { IOV(a, 0, 60), IOV(a, 60, 40), IOV(b, 200, 300), IOV(a, 1000, 24),
                          IOV(a, 1024, 600) };
    struct iovec hd[] = { IOV(h2, 0, 512), IOV(h2, 600, 12), IOV(h2, 700, 500) };
    GDR_CHECK(dev->copyv(dev->ctx, q, hd, 3, ds, 5) == GDR_RMA_OK && drain(dev, q) == 1,
              "copyv: 5 device pieces into 3 pinned pieces");
    GDR_CHECK(memcmp(h2, pattern, 512) == 0 && memcmp(h2 + 600, pattern + 512, 12) == 0
              && memcmp(h2 + 700, pattern + 524, 500) == 0, "the pinned pieces hold the bytes"
              " in order");
    GDR_CHECK(h2[512] == 0xee && h2[599] == 0xee && h2[612] == 0xee && h2[699] == 0xee
              && h2[1200] == 0xee, "the gaps between pinned pieces are untouched");

    /* a host piece and a device piece into one device piece */
    struct iovec mix[] = { IOV(h, 512, 32), IOV(b, 200, 32) };
    struct iovec one[] = { IOV(b, 3000, 64) };
    GDR_CHECK(dev->copyv(dev->ctx, q, one, 1, mix, 2) == GDR_RMA_OK && drain(dev, q) == 1
              && gdr_gpu_copy(g, back, (char *) b + 3000, 64) == 0
              && memcmp(back, pattern + 512, 32) == 0 && memcmp(back + 32, pattern + 100, 32)
              == 0, "copyv: a pinned and a device piece into one device piece");

    /* refusals: nothing queued, a sentence */
    struct iovec short_src[] = { IOV(h, 0, 1023) };
    GDR_CHECK(dev->copyv(dev->ctx, q, dd, 3, short_src, 1) == GDR_RMA_ERROR
              && strstr(dev->error(dev->ctx), "3 destination pieces hold 1024 bytes but 1 "
                        "source pieces hold 1023"), "mismatched totals are refused (%s)",
              dev->error(dev->ctx));
    struct iovec huge[] = { IOV(h, 0, SIZE_MAX), IOV(h, 0, 2) };
    struct iovec one_byte[] = { IOV(h, 0, 1) };
    GDR_CHECK(dev->copyv(dev->ctx, q, one_byte, 1, huge, 2) == GDR_RMA_ERROR,
              "pieces whose total overflows are refused");
    GDR_CHECK(dev->copyv(dev->ctx, q, NULL, 0, NULL, 0) == GDR_RMA_OK, "nothing to copy: OK");

    GDR_CHECK(gdr_gpu_mem_free(g, a) == 0 && gdr_gpu_mem_free(g, b) == 0
              && dev->host_free(dev->ctx, h) == GDR_RMA_OK
              && dev->host_free(dev->ctx, h2) == GDR_RMA_OK, "free");
}

/* One queue, held by a stream wait until everything is queued: copy the origin in, SUM
 * it into the target (results saved), copy the target back.  The kernel must see the
 * first copy's data, and the last copy the kernel's. */
static void test_order_and_acc(gdr_gpu_t *g, const gdr_rma_device_t *dev, void *q)
{
    enum { N = 8 };
    int64_t t0[N], o[N], zero[N] = { 0 }, got[N], old[N];
    int64_t *pin_o, *pin_r;
    uint64_t *word;
    void *t, *x, *res;
    for (int i = 0; i < N; i++) {
        t0[i] = 1000 * i - 3;
        o[i] = i * i + 1;
    }
    GDR_CHECK(dev->host_alloc(dev->ctx, sizeof(o), (void **) &pin_o) == GDR_RMA_OK
              && dev->host_alloc(dev->ctx, sizeof(o), (void **) &pin_r) == GDR_RMA_OK
              && dev->host_alloc(dev->ctx, 8, (void **) &word) == GDR_RMA_OK,
              "pinned origin, result and a word");
    memcpy(pin_o, o, sizeof(o));
    memset(pin_r, 0, sizeof(o));
    *word = 0;
    GDR_CHECK(gdr_gpu_mem_alloc(g, sizeof(o), &t) == 0 && gdr_gpu_mem_alloc(g, sizeof(o), &x)
              == 0 && gdr_gpu_mem_alloc(g, sizeof(o), &res) == 0
              && gdr_gpu_copy(g, t, t0, sizeof(t0)) == 0 && gdr_gpu_copy(g, x, zero,
                                                                            sizeof(zero)) == 0,
              "device target t (known values), device origin x = 0, device result");

    GDR_CHECK(gdr_gpu_stream_wait_u64(g, q, word, 1, GDR_GPU_WAIT_EQ) == 0,
              "hold the queue on a pinned word");
    struct iovec xd[] = { { x, sizeof(o) } }, os[] = { { pin_o, sizeof(o) } };
    struct iovec rd[] = { { pin_r, sizeof(o) } }, ts[] = { { t, sizeof(o) } };
    gdr_gpu_acc_args_t args = {.target = t,.origin = x,.result = res,.count = N,
        .op = GDR_GPU_OP_SUM,.type = GDR_GPU_T_INT64 };
    void *m;
    GDR_CHECK(dev->copyv(dev->ctx, q, xd, 1, os, 1) == GDR_RMA_OK
              && dev->acc(dev->ctx, q, &args) == GDR_RMA_OK
              && dev->copyv(dev->ctx, q, rd, 1, ts, 1) == GDR_RMA_OK
              && dev->mark(dev->ctx, q, &m) == GDR_RMA_OK,
              "queue: copy origin to x, SUM x into t, copy t back; mark");
    pause_ms(20);
    GDR_CHECK(dev->reached(dev->ctx, m) == 0 && pin_r[N - 1] == 0, "held: nothing ran yet");
    __atomic_store_n(word, 1, __ATOMIC_RELEASE);
    GDR_CHECK(poll_mark(dev, m) == 1, "released: the mark is reached");
    dev->mark_free(dev->ctx, m);
    int sum_ok = 1;
    for (int i = 0; i < N; i++)
        sum_ok &= pin_r[i] == t0[i] + o[i];
    GDR_CHECK(sum_ok, "t = t0 + origin, as copied back on the same queue: the kernel saw the"
              " first copy and the last copy saw the kernel (t[7] %lld)",
              (long long) pin_r[N - 1]);
    int res_ok = gdr_gpu_copy(g, got, t, sizeof(got)) == 0 && gdr_gpu_copy(g, old, res,
                                                                               sizeof(old)) == 0;
    for (int i = 0; i < N; i++)
        res_ok &= got[i] == t0[i] + o[i] && old[i] == t0[i];
    GDR_CHECK(res_ok, "read back: the target holds the sums, the result the old values");

    args.op = GDR_GPU_OP_BAND;
    args.type = GDR_GPU_T_DOUBLE;
    GDR_CHECK(dev->acc(dev->ctx, q, &args) == GDR_RMA_ERROR
              && strstr(dev->error(dev->ctx), "is not defined on element type"),
              "BAND on doubles is refused (%s)", dev->error(dev->ctx));
    GDR_CHECK(gdr_gpu_mem_free(g, t) == 0 && gdr_gpu_mem_free(g, x) == 0
              && gdr_gpu_mem_free(g, res) == 0 && dev->host_free(dev->ctx, pin_o) == 0
              && dev->host_free(dev->ctx, pin_r) == 0 && dev->host_free(dev->ctx, word) == 0,
              "free");
}

/* reached answers at once, 0, while the queue is blocked on a word no one has written
 * (a reached that waited would hang here: the alarm ends the test then). */
static void test_marks(gdr_gpu_t *g, gdr_gpu_rma_device_t *d, const gdr_rma_device_t *dev)
{
    uint64_t *word;
    void *q, *m, *m2;
    GDR_CHECK(dev->queue_new(dev->ctx, &q) == GDR_RMA_OK
              && dev->host_alloc(dev->ctx, 8, (void **) &word) == GDR_RMA_OK, "a queue, a word");
    *word = 0;
    alarm(20);
    GDR_CHECK(gdr_gpu_stream_wait_u64(g, q, word, 7, GDR_GPU_WAIT_EQ) == 0
              && dev->mark(dev->ctx, q, &m) == GDR_RMA_OK, "block the queue on the word; mark");
    int pending = 1;
    for (int i = 0; i < 10; i++) {
        pending &= dev->reached(dev->ctx, m) == 0;
        pause_ms(5);
    }
    GDR_CHECK(pending, "reached: 0, ten times over 50 ms, each answered at once");
    GDR_CHECK(dev->mark(dev->ctx, q, &m2) == GDR_RMA_OK && dev->reached(dev->ctx, m2) == 0
              && d->marks_out == 2, "a second mark, pending too");
    unsigned long made = d->marks_made;
    __atomic_store_n(word, 7, __ATOMIC_RELEASE);
    GDR_CHECK(poll_mark(dev, m) == 1 && poll_mark(dev, m2) == 1,
              "the host writes the word: both marks are reached");
    alarm(0);
    dev->mark_free(dev->ctx, m);
    dev->mark_free(dev->ctx, m2);
    GDR_CHECK(dev->mark(dev->ctx, q, &m) == GDR_RMA_OK && poll_mark(dev, m) == 1
              && d->marks_made == made && d->marks_out == 1,
              "a mark given back is reused: no new event");
    dev->mark_free(dev->ctx, m);
    GDR_CHECK(dev->queue_free(dev->ctx, q) == GDR_RMA_OK
              && dev->host_free(dev->ctx, word) == GDR_RMA_OK, "free the queue and the word");
}

static void test_buffer_id(gdr_gpu_t *g, const gdr_rma_device_t *dev)
{
    void *host = malloc(64), *p;
    uint64_t id = 0, id2 = 0;
    GDR_CHECK(dev->buffer_id(dev->ctx, host) == 0, "malloc'ed memory: id 0");
    GDR_CHECK(gdr_gpu_mem_alloc(g, 4096, &p) == 0 && (id = dev->buffer_id(dev->ctx, p)) != 0
              && dev->buffer_id(dev->ctx, (char *) p + 100) == id,
              "device memory: a nonzero id, the same inside the buffer");
    GDR_CHECK(gdr_gpu_mem_free(g, p) == 0 && dev->buffer_id(dev->ctx, p) != id,
              "freed: no longer that id");
    GDR_CHECK(gdr_gpu_mem_alloc(g, 4096, &p) == 0 && (id2 = dev->buffer_id(dev->ctx, p)) != 0
              && id2 != id, "allocated again: a new id (%#llx, was %#llx)",
              (unsigned long long) id2, (unsigned long long) id);
    gdr_gpu_mem_free(g, p);
    free(host);
}

static void body(const char *lib, const char *mode)
{
    gdr_gpu_t g;
    gdr_gpu_rma_device_t d;
    gdr_rma_device_t dev;
    void *q;
    static const unsigned char image[16];
    (void) mode;
    if (gdr_gpu_open(&g, lib, 0) != 0) {
        GDR_CHECK(0, "open the simulated GPU: %s", g.error);
        return;
    }
    GDR_CHECK(gdr_gpu_module_load(&g, image, sizeof(image)) == 0, "load a kernel image");
    GDR_CHECK(gdr_gpu_rma_device_init(&d, &g, &dev) == 0 && dev.ctx == &d && d.marks_made == 0,
              "the seam over the open GPU");
    GDR_CHECK(dev.queue_new(dev.ctx, &q) == GDR_RMA_OK && q != NULL, "a queue");
    test_copyv(&g, &dev, q);
    test_order_and_acc(&g, &dev, q);
    test_marks(&g, &d, &dev);
    test_buffer_id(&g, &dev);
    GDR_CHECK(dev.queue_free(dev.ctx, q) == GDR_RMA_OK, "free the queue");
    gdr_gpu_rma_device_fini(&d);
    GDR_CHECK(d.made == NULL && d.spare == NULL, "fini destroys every mark's event");
    gdr_gpu_close(&g);
}

int main(int argc, char **argv)
{
    gpusim_run_modes(argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so", body);
    return gdr_unit_finish();
}
