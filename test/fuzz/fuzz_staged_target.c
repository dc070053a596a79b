/* A target of the staged protocol (src/rma/gdr_rma_staged.h) fed by a hostile origin: the
 * input is what rank 1 sends to rank 0's window, message by message, interleaved with
 * progress rounds and RDMA-read completions in any order.  Rank 0 runs the real protocol
 * over fakes: its device runs copies and accumulate kernels at once on host memory, its
 * transport reads rank 1's send slots from a pretend 64 KiB region (a read outside it
 * completes in error, as a remote access error would), and its host hands every message
 * rank 0 sends back to this file.
 *
 * Input: one configuration byte (bit 0: the window is device memory; bits 1-2: chunk
 * bytes 64 << k; bits 3-4: slots per pool 1 + k; bit 5: inline data up to the chunk),
 * then steps: 0 = a message (u16 length, bytes), 1 = reads completed in order and a
 * progress round, 2 = reads completed newest first, 3 = a progress round alone.
 *
 * Invariants: nothing written outside the window (guard pages around it, a canary before
 * it, every device work piece checked against the window and the staging block); every
 * message rank 0 sends decodes, goes to rank 1, and lends only staging memory; no more
 * DONEs than requests; after the origin returns what it was lent, freeing the window and
 * the protocol leaves no staging memory, queue, mark or read behind (and LSan: no heap).
 * GDR_FUZZ_VERBOSE=1 prints what rank 0 sends. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "gdr_fuzz.h"
#include "rma/gdr_rma_staged.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"

#define WIN_ID 0x5157ull
#define WIN_BYTES 1024
#define ORIGIN_PEER 101
#define ORIGIN_BASE 0x7000000000ull     /* rank 1's send slots, as rank 0 names them */
#define ORIGIN_BYTES 65536u
#define ORIGIN_RKEY 0x5151u
#define BLOCKS_MAX 8
#define READS_MAX 64
#define LENT_MAX 64
#define PROGRESS_MAX 100000             /* a wait that runs longer waits forever */

typedef struct read_op {
    void *dst;
    size_t len;
    uint64_t raddr;
    uint32_t rkey;
    gdr_rma_done_fn done;
    void *arg;
} read_op_t;

typedef struct fuzz_target {
    char *page;                 /* guard page, window page, guard page */
    char *win;                  /* the last WIN_BYTES of the window page */
    int device;
    gdr_rma_engine_t eng;
    gdr_rma_device_t seam;
    gdr_rma_win_t w;
    gdr_rma_staged_t *d;
    gdr_rma_staged_win_t *dw;
    struct { void *p; size_t n; uint32_t rkey; } blocks[BLOCKS_MAX];
    int queues_out, marks_out;
    read_op_t reads[READS_MAX];
    int n_reads;
    int in_progress;
    long progress_calls;
    unsigned long reqs, dones;
    uint32_t lent_slots[LENT_MAX];      /* RESULT slots lent to rank 1 */
    uint64_t lent_ops[LENT_MAX];
    int n_lent;
} fuzz_target_t;

static fuzz_target_t F;

/* ---- memory checks --------------------------------------------------------------------- */

static int in_window(const void *p, size_t n)
{
    const char *c = p;
    return c >= F.win && n <= WIN_BYTES && (size_t) (c - F.win) <= WIN_BYTES - n;
}

static int in_block(const void *p, size_t n)
{
    const char *c = p;
    for (int i = 0; i < BLOCKS_MAX; i++)
        if (F.blocks[i].p != NULL && c >= (char *) F.blocks[i].p && n <= F.blocks[i].n
            && (size_t) (c - (char *) F.blocks[i].p) <= F.blocks[i].n - n)
            return 1;
    return 0;
}

static void require_device_side(const void *p, size_t n, const char *what)
{
    FUZZ_REQUIRE(in_window(p, n) || in_block(p, n), "%s: %zu bytes at %p, neither window nor "
                 "staging memory", what, n, p);
}

/* ---- the device: runs work at once ------------------------------------------------------- */

static int d_host_alloc(void *ctx, size_t n, void **p)
{
    (void) ctx;
    for (int i = 0; i < BLOCKS_MAX; i++)
        if (F.blocks[i].p == NULL) {
            F.blocks[i].p = aligned_alloc(64, (n + 63) & ~(size_t) 63);
            F.blocks[i].n = n;
            *p = F.blocks[i].p;
            return *p != NULL ? GDR_RMA_OK : GDR_RMA_NOMEM;
        }
    return GDR_RMA_NOMEM;
}

static int d_host_free(void *ctx, void *p)
{
    (void) ctx;
    for (int i = 0; i < BLOCKS_MAX; i++)
        if (F.blocks[i].p == p && p != NULL) {
            free(p);
            F.blocks[i].p = NULL;
            return GDR_RMA_OK;
        }
    FUZZ_REQUIRE(0, "host_free of %p, never allocated", p);
    return GDR_RMA_ERROR;
}

static int d_queue_new(void *ctx, void **queue)
{
    (void) ctx;
    F.queues_out++;
    *queue = &F.queues_out;
    return GDR_RMA_OK;
}

static int d_queue_free(void *ctx, void *queue)
{
    (void) ctx;
    FUZZ_REQUIRE(queue == &F.queues_out && F.queues_out > 0, "queue_free of a foreign queue");
    F.queues_out--;
    return GDR_RMA_OK;
}

static int d_copyv(void *ctx, void *queue, const struct iovec *dst, size_t n_dst,
                   const struct iovec *src, size_t n_src)
{
    size_t total_d = 0, total_s = 0;
    (void) ctx;
    FUZZ_REQUIRE(queue == &F.queues_out, "copy on a foreign queue");
    for (size_t i = 0; i < n_dst; i++) {
        require_device_side(dst[i].iov_base, dst[i].iov_len, "copy destination");
        total_d += dst[i].iov_len;
    }
    for (size_t i = 0; i < n_src; i++) {
        require_device_side(src[i].iov_base, src[i].iov_len, "copy source");
        total_s += src[i].iov_len;
    }
    FUZZ_REQUIRE(total_d == total_s, "copy of %zu bytes into %zu", total_s, total_d);
    size_t di = 0, doff = 0, si = 0, soff = 0;
    while (di < n_dst && si < n_src) {
        size_t n = dst[di].iov_len - doff < src[si].iov_len - soff
            ? dst[di].iov_len - doff : src[si].iov_len - soff;
        memmove((char *) dst[di].iov_base + doff, (char *) src[si].iov_base + soff, n);
        doff += n;
        soff += n;
        if (doff == dst[di].iov_len)
            di++, doff = 0;
        if (soff == src[si].iov_len)
            si++, soff = 0;
    }
    return GDR_RMA_OK;
}

static int d_acc(void *ctx, void *queue, const gdr_gpu_acc_args_t *a)
{
    (void) ctx;
    FUZZ_REQUIRE(queue == &F.queues_out, "accumulate on a foreign queue");
    int op = a->op & GDR_GPU_ACC_OP_MASK;
    FUZZ_REQUIRE(gdr_gpu_acc_valid(op, a->type), "kernel op %d type %d", a->op, a->type);
    FUZZ_REQUIRE(op == a->op || gdr_gpu_acc_atomic_ok(a->type, a->target),
                 "atomic steps asked for where they cannot be (type %d)", a->type);
    size_t bytes = (size_t) a->count * gdr_gpu_type_size(a->type);
    FUZZ_REQUIRE(in_window(a->target, bytes), "accumulate of %zu bytes outside the window",
                 bytes);
    if (a->origin != NULL)
        require_device_side(a->origin, op == GDR_GPU_OP_CSWAP
                            ? gdr_gpu_type_size(a->type) : bytes, "accumulate origin");
    if (a->result != NULL)
        require_device_side(a->result, bytes, "accumulate result");
    if (a->compare != NULL)
        require_device_side(a->compare, gdr_gpu_type_size(a->type), "accumulate compare");
    gdr_gpu_acc_apply(a);
    return GDR_RMA_OK;
}

static int d_mark(void *ctx, void *queue, void **mark)
{
    (void) ctx, (void) queue;
    F.marks_out++;
    *mark = &F.marks_out;
    return GDR_RMA_OK;
}

static int d_reached(void *ctx, void *mark)
{
    (void) ctx;
    FUZZ_REQUIRE(mark == &F.marks_out, "a foreign mark");
    return 1;
}

static void d_mark_free(void *ctx, void *mark)
{
    (void) ctx;
    FUZZ_REQUIRE(mark == &F.marks_out && F.marks_out > 0, "mark_free of a foreign mark");
    F.marks_out--;
}

static uint64_t d_buffer_id(void *ctx, const void *p)
{
    (void) ctx;
    return F.device && in_window(p, 1) ? 0x77 : 0;
}

static const char *d_error(const void *ctx)
{
    (void) ctx;
    return "the fuzz target's device never fails";
}

/* ---- the transport: reads of rank 1's slots ----------------------------------------------- */

static int t_reg(void *ctx, void *addr, size_t len, unsigned access, gdr_rma_mr_t *out,
                 char *why, size_t why_len)
{
    (void) ctx, (void) access, (void) why, (void) why_len;
    FUZZ_REQUIRE(in_block(addr, len), "registration of non-staging memory");
    *out = (gdr_rma_mr_t) {.handle = &F,.addr = (uint64_t) (uintptr_t) addr,.len = len,
        .rkey = 0x3300 };
    return 0;
}

static void t_dereg(void *ctx, gdr_rma_mr_t *mr)
{
    (void) ctx;
    mr->handle = NULL;
}

static int t_pin(void *ctx, const void *addr, size_t len, uint64_t device_id, void **pin)
{
    (void) ctx, (void) addr, (void) len, (void) device_id;
    *pin = NULL;
    return GDR_RMA_OK;
}

static void t_unpin(void *ctx, void *pin)
{
    (void) ctx, (void) pin;
}

static int t_get(void *ctx, int peer, gdr_rma_proto_t proto, void *dst, size_t len,
                 uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    (void) ctx, (void) proto;
    FUZZ_REQUIRE(peer == ORIGIN_PEER, "a read from peer %d", peer);
    FUZZ_REQUIRE(in_block(dst, len), "a read of %zu bytes into non-staging memory", len);
    if (F.n_reads == READS_MAX)
        return GDR_RMA_BUSY;
    F.reads[F.n_reads++] = (read_op_t) {.dst = dst,.len = len,.raddr = raddr,.rkey = rkey,
        .done = done,.arg = arg };
    return GDR_RMA_OK;
}

static int t_unused(void)
{
    FUZZ_REQUIRE(0, "a target posted a write or an atomic");
    return GDR_RMA_ERROR;
}

static int t_put(void *c, int p, gdr_rma_proto_t pr, const void *s, size_t l, uint64_t ra,
                 uint32_t rk, unsigned f, gdr_rma_done_fn d, void *a)
{
    (void) c, (void) p, (void) s, (void) l, (void) ra, (void) rk, (void) f, (void) d, (void) a;
    (void) pr;
    return t_unused();
}

static int t_vec(void *c, int p, const struct iovec *v, size_t n, const void *pin, uint64_t ra,
                 uint32_t rk, gdr_rma_done_fn d, void *a)
{
    (void) c, (void) p, (void) v, (void) n, (void) pin, (void) ra, (void) rk, (void) d, (void) a;
    return t_unused();
}

static const char *t_error(const void *ctx)
{
    (void) ctx;
    return "the fuzz target's transport";
}

static void complete_read(int i)
{
    read_op_t r = F.reads[i];
    memmove(&F.reads[i], &F.reads[i + 1], (size_t) (F.n_reads - i - 1) * sizeof(r));
    F.n_reads--;
    int ok = r.rkey == ORIGIN_RKEY && r.raddr >= ORIGIN_BASE && r.len <= ORIGIN_BYTES
        && r.raddr - ORIGIN_BASE <= ORIGIN_BYTES - r.len;
    if (ok)
        for (size_t j = 0; j < r.len; j++)
            ((uint8_t *) r.dst)[j] = (uint8_t) ((r.raddr + j) * 31 + 7);
    r.done(r.arg, ok ? 0 : 1);
}

/* ---- the host ---------------------------------------------------------------------------- */

static int h_progress(void *ctx)
{
    (void) ctx;
    FUZZ_REQUIRE(++F.progress_calls < PROGRESS_MAX, "a wait of rank 0 never ends (%ld rounds)",
                 F.progress_calls);
    if (F.in_progress)
        return 0;
    F.in_progress = 1;
    while (F.n_reads > 0)
        complete_read(0);
    int rc = gdr_rma_staged_progress(F.d);
    F.in_progress = 0;
    return rc != GDR_RMA_OK;
}

static int h_send(void *ctx, void *host_win, int target, const void *msg, size_t len)
{
    gdr_rma_staged_hdr_t h;
    const uint8_t *pieces, *inl;
    const char *why = "";
    (void) ctx;
    FUZZ_REQUIRE(host_win == &F && target == 1, "a message to rank %d", target);
    FUZZ_REQUIRE(gdr_rma_staged_decode(msg, len, &h, &pieces, &inl, &why) == 0,
                 "rank 0 sent a message that does not decode: %s", why);
    FUZZ_REQUIRE(h.win_id == WIN_ID && h.origin == 0, "window %#llx, origin %u",
                 (unsigned long long) h.win_id, h.origin);
    FUZZ_REQUIRE(h.type == GDR_RMA_STAGED_DONE || h.type == GDR_RMA_STAGED_TAKEN
                 || h.type == GDR_RMA_STAGED_RESULT, "a target sent message type %d", h.type);
    if (getenv("GDR_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "rank 0 sends type %d op %#llx: status %d, off %llu len %u slot %u\n",
                h.type, (unsigned long long) h.op_id, h.status, (unsigned long long) h.off,
                h.len, h.slot);
    if (h.type == GDR_RMA_STAGED_DONE)
        FUZZ_REQUIRE(++F.dones <= F.reqs, "%lu DONEs for %lu requests", F.dones, F.reqs);
    if (h.type == GDR_RMA_STAGED_RESULT && !(h.flags & GDR_RMA_STAGED_F_INLINE)) {
        FUZZ_REQUIRE(in_block((void *) (uintptr_t) h.raddr, h.len) && h.rkey == 0x3300,
                     "a RESULT lends %u bytes outside the staging block", h.len);
        if (F.n_lent < LENT_MAX) {
            F.lent_slots[F.n_lent] = h.slot;
            F.lent_ops[F.n_lent++] = h.op_id;
        }
    }
    return 0;
}

static void deliver(const uint8_t *m, size_t len)
{
    gdr_rma_staged_hdr_t h;
    const uint8_t *pieces, *inl;
    const char *why;
    uint8_t *exact = fuzz_exact_copy(m, len);
    if (gdr_rma_staged_decode(exact, len, &h, &pieces, &inl, &why) == 0 && h.type == GDR_RMA_STAGED_REQ
        && h.win_id == WIN_ID && h.origin < 2)
        F.reqs++;
    int rc = gdr_rma_staged_deliver(F.dw, exact, len);
    FUZZ_REQUIRE(rc == GDR_RMA_OK, "deliver failed (%d): %s", rc, gdr_rma_staged_error(F.d));
    free(exact);
}

/* Rank 1 gives back what it was lent, as a live origin would before MPI_Win_free. */
static void return_lent(void)
{
    for (int i = 0; i < F.n_lent; i++) {
        gdr_rma_staged_hdr_t h = {.type = GDR_RMA_STAGED_TAKEN,.origin = 1,.win_id = WIN_ID,
            .op_id = F.lent_ops[i],.slot = F.lent_slots[i] };
        uint8_t m[GDR_RMA_STAGED_HDR_BYTES];
        size_t n = gdr_rma_staged_encode(m, sizeof(m), &h, NULL, NULL);
        FUZZ_REQUIRE(n == sizeof(m), "encoding a TAKEN");
        deliver(m, n);
    }
    F.n_lent = 0;
}

static void setup(uint8_t config)
{
    long pg = sysconf(_SC_PAGESIZE);
    if (F.page == NULL) {
        F.page = mmap(NULL, 3 * (size_t) pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
        FUZZ_REQUIRE(F.page != MAP_FAILED, "mmap");
        mprotect(F.page, (size_t) pg, PROT_NONE);
        mprotect(F.page + 2 * pg, (size_t) pg, PROT_NONE);
    }
    char *page = F.page;
    memset(&F, 0, sizeof(F));
    F.page = page;
    F.win = page + 2 * pg - WIN_BYTES;
    memset(page + pg, 0xa5, (size_t) pg - WIN_BYTES);
    for (int i = 0; i < WIN_BYTES; i++)
        F.win[i] = (char) i;
    F.device = config & 1;
    size_t chunk = (size_t) 64 << ((config >> 1) & 3);
    gdr_rma_staged_config_t cfg = {.chunk_bytes = chunk,.slots_per_pool = 1 + ((config >> 3) & 3),
        .inline_max = (config & 32) ? chunk : 0 };

    F.eng.net = (gdr_rma_transport_t) {.ctx = &F,.put = t_put,.get = t_get,.writev = t_vec,
        .readv = t_vec,.pin = t_pin,.unpin = t_unpin,.reg = t_reg,.dereg = t_dereg,
        .error = t_error };
    F.eng.host = (gdr_rma_host_t) {.ctx = &F,.progress = h_progress,.send_msg = h_send };
    F.seam = (gdr_rma_device_t) {.ctx = &F,.host_alloc = d_host_alloc,.host_free = d_host_free,
        .queue_new = d_queue_new,.queue_free = d_queue_free,.copyv = d_copyv,.acc = d_acc,
        .mark = d_mark,.reached = d_reached,.mark_free = d_mark_free,.buffer_id = d_buffer_id,
        .error = d_error };
    char why[256] = "";
    F.d = gdr_rma_staged_new(&F.eng, &F.seam, &cfg, why, sizeof(why));
    FUZZ_REQUIRE(F.d != NULL, "gdr_rma_staged_new: %s", why);
    FUZZ_REQUIRE(gdr_rma_win_init(&F.w, &F.eng, &F, 2, 0, 0, 1) == 0, "window registry");
    gdr_rma_win_set_peer(&F.w, 1, ORIGIN_PEER);
    F.dw = gdr_rma_staged_win_new(F.d, &F.w, WIN_ID, F.win, WIN_BYTES, F.device);
    FUZZ_REQUIRE(F.dw != NULL, "gdr_rma_staged_win_new");
}

static void teardown(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    for (int round = 0; round < 64; round++)
        FUZZ_REQUIRE(h_progress(NULL) == 0, "progress: %s", gdr_rma_staged_error(F.d));
    return_lent();
    for (int round = 0; round < 64; round++)
        FUZZ_REQUIRE(h_progress(NULL) == 0, "progress: %s", gdr_rma_staged_error(F.d));
    return_lent();
    gdr_rma_staged_win_free(F.dw);
    while (F.n_reads > 0)
        complete_read(0);
    FUZZ_REQUIRE(F.n_reads == 0, "%d reads still posted after the window was freed", F.n_reads);
    gdr_rma_staged_free(F.d);
    gdr_rma_win_free(&F.w);
    for (int i = 0; i < BLOCKS_MAX; i++)
        FUZZ_REQUIRE(F.blocks[i].p == NULL, "staging memory of %zu bytes left allocated",
                     F.blocks[i].n);
    FUZZ_REQUIRE(F.queues_out == 0 && F.marks_out == 0, "%d queues, %d marks left",
                 F.queues_out, F.marks_out);
    for (long i = 0; i < pg - WIN_BYTES; i++)
        FUZZ_REQUIRE((uint8_t) F.page[pg + i] == 0xa5, "the byte %ld before the window changed",
                     pg - WIN_BYTES - i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup((uint8_t) fuzz_take(&data, &size, 1));
    while (size > 0) {
        switch (fuzz_take(&data, &size, 1) % 4) {
        case 0:{
                size_t len = (size_t) fuzz_take(&data, &size, 2);
                if (len > size)
                    len = size;
                deliver(data, len);
                data += len;
                size -= len;
                break;
            }
        case 1:
            FUZZ_REQUIRE(h_progress(NULL) == 0, "progress: %s", gdr_rma_staged_error(F.d));
            break;
        case 2:
            while (F.n_reads > 0)
                complete_read(F.n_reads - 1);
            break;
        case 3:
            FUZZ_REQUIRE(gdr_rma_staged_progress(F.d) == GDR_RMA_OK, "progress: %s",
                         gdr_rma_staged_error(F.d));
            break;
        }
    }
    teardown();
    return 0;
}
