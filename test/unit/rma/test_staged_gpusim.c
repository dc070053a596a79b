/* The staged protocol (src/rma/gdr_rma_staged.h) over the real device seam
 * (src/adapt/gdr_gpu_rma_device.h) on the simulated GPU, in both of its modes.  In strict
 * mode device memory is PROT_NONE for the host: if the protocol dereferenced window,
 * origin or result memory on the host, this test would die of SIGSEGV.  Accumulates run
 * through the simulator's kernel (gdr_gpu_acc_launch).
 *
 * Two ranks live in this process, each with its own GPU context, device seam, engine,
 * protocol context and window (device memory).  The world between them is in memory:
 * send_msg queues a copy per (sender, receiver); the transport's read is a memcpy from a
 * peer's registered staging slots (pinned host memory, never device memory: the read
 * checks that it lies inside the peer's registration), completed one world tick after it
 * was posted.  One tick delivers the messages queued before it, in order, completes the
 * reads posted before it, then runs each rank's protocol progress.  The test fills and
 * reads device memory only with gdr_gpu_copy, and checks every window byte against a
 * host model after each case, and that every staging slot and device mark came back.
 * The seam's acc and copyv are wrapped to count kernels and to check that every host
 * piece of a device copy is a staging slot (pinned), as the seam requires.
 *
 * Cases: Put and Get at 1 B, inline_max, inline_max + 1 and 3.5 chunks (chunks of 4 KiB,
 * 2 slots per pool), device and host buffers, scattered target and origin pieces, to
 * self; Accumulate (SUM int32/double, MAX, REPLACE), Get_accumulate, Fetch_and_op,
 * Compare_and_swap (hit, miss); two origins on one element; both ranks at each other at
 * once; device origins and results freed before completion (the operation fails,
 * nothing crashes, the next one works). */
#include "gpu/gpusim_modes.h"
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_module.h"
#include "adapt/gdr_gpu_rma_device.h"
#include "gpu/gdr_gpu_stream.h"
#include "rma/gdr_rma_staged.h"

enum {
    RANKS = 2,
    CHUNK = 4096,
    INLINE = 256,
    SLOTS = 2,
    UNIT = 8,                   /* the window's displacement unit */
    WIN_BYTES = 64 * 1024,
    WIN_ID = 0x5eed,
    BIG = 3 * CHUNK + CHUNK / 2 /* 3.5 chunks */
};

/* ---- the world ---------------------------------------------------------------------- */

typedef struct msg {
    struct msg *next;
    size_t len;
    uint8_t bytes[];
} msg_t;

typedef struct rank {
    int id;
    gdr_gpu_t g;
    gdr_gpu_rma_device_t gd;
    gdr_rma_device_t dev;
    gdr_rma_engine_t eng;
    gdr_rma_win_t w;
    gdr_rma_staged_t *d;
    gdr_rma_staged_win_t *dw;
    void *base;                 /* the window: device memory */
    gdr_rma_mr_t reg;           /* the one registration (the staging block) */
    int regs, pins, unpins;
    /* the seam's own acc and copyv, under counting wrappers */
    int (*acc)(void *ctx, void *queue, const gdr_gpu_acc_args_t *args);
    int (*copyv)(void *ctx, void *queue, const struct iovec *dst, size_t n_dst,
                 const struct iovec *src, size_t n_src);
    unsigned long accs;         /* accumulate kernels queued through the seam */
    unsigned long copyvs;       /* copy lists queued */
    unsigned long unpinned;     /* copy pieces neither device memory nor staging slots */
} rank_t;

typedef struct read_req {
    rank_t *reader;
    int peer;
    void *dst;
    size_t len;
    uint64_t raddr;
    uint32_t rkey;
    gdr_rma_done_fn done;
    void *arg;
} read_req_t;

static struct {
    rank_t r[RANKS];
    msg_t *head[RANKS][RANKS], *tail[RANKS][RANKS];     /* [from][to] */
    unsigned queued[RANKS][RANKS];
    read_req_t reads[64];
    int n_reads;
    unsigned long ticks, sent, self_sends, bad_reads, bad_peeks, delivered;
    int progress_rc;            /* the first failing gdr_rma_staged_progress */
    struct timespec deadline;
    int timed_out;
} W;

static void arm(int seconds)
{
    clock_gettime(CLOCK_MONOTONIC, &W.deadline);
    W.deadline.tv_sec += seconds;
    W.timed_out = 0;
    W.progress_rc = 0;
}

static int past_deadline(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > W.deadline.tv_sec
        || (now.tv_sec == W.deadline.tv_sec && now.tv_nsec > W.deadline.tv_nsec);
}

/* Delivers one message from -> to: the receiver's window found by the message's id. */
static void deliver(int from, int to)
{
    msg_t *m = W.head[from][to];
    W.head[from][to] = m->next;
    if (W.head[from][to] == NULL)
        W.tail[from][to] = NULL;
    W.queued[from][to]--;
    uint64_t win_id;
    uint32_t origin;
    rank_t *r = &W.r[to];
    if (gdr_rma_staged_peek(m->bytes, m->len, &win_id, &origin) != 0 || win_id != WIN_ID
        || origin != (uint32_t) from) {
        W.bad_peeks++;
    } else {
        int rc = gdr_rma_staged_deliver(r->dw, m->bytes, m->len);
        if (rc != GDR_RMA_OK && W.progress_rc == 0)
            W.progress_rc = rc;
        W.delivered++;
    }
    free(m);
}

/* Whether [a, a+n) lies inside r's registration under key. */
static int registered(const rank_t *r, uint64_t a, size_t n, uint32_t key)
{
    return r->reg.handle != NULL && key == r->reg.rkey && a >= r->reg.addr
        && n <= r->reg.len && a - r->reg.addr <= r->reg.len - n;
}

static void complete_read(read_req_t q)
{
    rank_t *peer = &W.r[q.peer];
    int ok = registered(peer, q.raddr, q.len, q.rkey)
        && registered(q.reader, (uint64_t) (uintptr_t) q.dst, q.len, q.reader->reg.rkey);
    if (ok)
        memcpy(q.dst, (const void *) (uintptr_t) q.raddr, q.len);
    else
        W.bad_reads++;
    q.done(q.arg, ok ? 0 : -1);
}

/* One world tick; nonzero once the case's deadline has passed or a progress failed. */
static int tick(void)
{
    W.ticks++;
    unsigned n[RANKS][RANKS];
    memcpy(n, W.queued, sizeof(n));
    for (int from = 0; from < RANKS; from++)
        for (int to = 0; to < RANKS; to++)
            for (unsigned k = 0; k < n[from][to]; k++)
                deliver(from, to);
    int reads = W.n_reads;
    for (int k = 0; k < reads; k++) {
        read_req_t q = W.reads[0];
        memmove(&W.reads[0], &W.reads[1], (size_t) (W.n_reads - 1) * sizeof(W.reads[0]));
        W.n_reads--;
        complete_read(q);
    }
    for (int i = 0; i < RANKS; i++) {
        int rc = gdr_rma_staged_progress(W.r[i].d);
        if (rc != GDR_RMA_OK && W.progress_rc == 0)
            W.progress_rc = rc;
    }
    sched_yield();              /* the simulator's stream workers need the CPU */
    if (past_deadline()) {
        W.timed_out = 1;
        return 1;
    }
    return W.progress_rc != 0;
}

static int h_progress(void *ctx)
{
    (void) ctx;
    return tick();
}

static int h_send_msg(void *ctx, void *host_win, int target, const void *bytes, size_t len)
{
    rank_t *r = ctx;
    if (host_win != r || target < 0 || target >= RANKS || len > GDR_RMA_STAGED_MSG_MAX)
        return -1;
    if (target == r->id)
        W.self_sends++;         /* the protocol keeps messages to self in its own inbox */
    msg_t *m = malloc(sizeof(*m) + len);
    if (m == NULL)
        return -1;
    m->next = NULL;
    m->len = len;
    memcpy(m->bytes, bytes, len);
    if (W.tail[r->id][target] != NULL)
        W.tail[r->id][target]->next = m;
    else
        W.head[r->id][target] = m;
    W.tail[r->id][target] = m;
    W.queued[r->id][target]++;
    W.sent++;
    return 0;
}

static int f_get(void *ctx, int peer, gdr_rma_proto_t proto, void *dst, size_t len,
                 uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    (void) proto;
    if (W.n_reads == (int) (sizeof(W.reads) / sizeof(W.reads[0])))
        return GDR_RMA_BUSY;
    if (peer < 0 || peer >= RANKS)
        return GDR_RMA_ERROR;
    W.reads[W.n_reads++] = (read_req_t) {.reader = ctx,.peer = peer,.dst = dst,.len = len,
        .raddr = raddr,.rkey = rkey,.done = done,.arg = arg };
    return GDR_RMA_OK;
}

static int f_pin(void *ctx, const void *addr, size_t len, uint64_t device_id, void **pin)
{
    rank_t *r = ctx;
    (void) addr;
    (void) len;
    (void) device_id;
    r->pins++;
    *pin = r;
    return GDR_RMA_OK;
}

static void f_unpin(void *ctx, void *pin)
{
    rank_t *r = ctx;
    r->unpins += pin == r;
}

/* Registers only pinned host memory: device memory here would be a protocol bug. */
static int f_reg(void *ctx, void *addr, size_t len, unsigned access, gdr_rma_mr_t *out,
                 char *why, size_t why_len)
{
    rank_t *r = ctx;
    gdr_gpu_mem_info_t info;
    (void) access;
    if (r->reg.handle != NULL || gdr_gpu_mem_query(&r->g, addr, &info) != 0
        || !info.is_pinned_host) {
        snprintf(why, why_len, "the fake NIC registers one block of pinned host memory");
        return GDR_RMA_ERROR;
    }
    r->regs++;
    r->reg = (gdr_rma_mr_t) {.handle = r,.addr = (uint64_t) (uintptr_t) addr,.len = len,
        .rkey = 0x100u + (uint32_t) r->id };
    *out = r->reg;
    return 0;
}

static void f_dereg(void *ctx, gdr_rma_mr_t *mr)
{
    rank_t *r = ctx;
    if (mr->handle == r)
        memset(&r->reg, 0, sizeof(r->reg));
    memset(mr, 0, sizeof(*mr));
}

static const char *f_error(const void *ctx)
{
    (void) ctx;
    return "the in-memory transport";
}

/* ---- ranks -------------------------------------------------------------------------- */

static rank_t *rank_of(void *seam_ctx)
{
    return (rank_t *) ((char *) seam_ctx - offsetof(rank_t, gd));
}

/* The seam's acc, counted: accumulates on a device window take the kernel. */
static int counted_acc(void *ctx, void *queue, const gdr_gpu_acc_args_t *args)
{
    rank_t *r = rank_of(ctx);
    r->accs++;
    return r->acc(ctx, queue, args);
}

/* Host pieces of a device copy must be the staging slots (pinned), as the seam asks. */
static void check_pieces(rank_t *r, const struct iovec *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gdr_gpu_mem_info_t info;
        uint64_t a = (uint64_t) (uintptr_t) v[i].iov_base;
        int in_slots = r->reg.handle != NULL && a >= r->reg.addr
            && v[i].iov_len <= r->reg.len && a - r->reg.addr <= r->reg.len - v[i].iov_len;
        if (!in_slots && (gdr_gpu_mem_query(&r->g, v[i].iov_base, &info) != 0
                          || !info.is_device))
            r->unpinned++;
    }
}

static int counted_copyv(void *ctx, void *queue, const struct iovec *dst, size_t n_dst,
                         const struct iovec *src, size_t n_src)
{
    rank_t *r = rank_of(ctx);
    r->copyvs++;
    check_pieces(r, dst, n_dst);
    check_pieces(r, src, n_src);
    return r->copyv(ctx, queue, dst, n_dst, src, n_src);
}

static const gdr_rma_staged_config_t cfg = {.inline_max = INLINE,.chunk_bytes = CHUNK,
    .slots_per_pool = SLOTS
};

static int rank_open(rank_t *r, int id, const char *lib)
{
    static const unsigned char image[16];
    char why[256] = "";
    memset(r, 0, sizeof(*r));
    r->id = id;
    if (gdr_gpu_open(&r->g, lib, 0) != 0) {
        GDR_CHECK(0, "rank %d: open the simulated GPU: %s", id, r->g.error);
        return -1;
    }
    if (gdr_gpu_module_load(&r->g, image, sizeof(image)) != 0
        || gdr_gpu_rma_device_init(&r->gd, &r->g, &r->dev) != 0) {
        GDR_CHECK(0, "rank %d: kernel image and device seam: %s", id, r->g.error);
        return -1;
    }
    r->acc = r->dev.acc;
    r->dev.acc = counted_acc;
    r->copyv = r->dev.copyv;
    r->dev.copyv = counted_copyv;
    r->eng = (gdr_rma_engine_t) {
        .net = {.ctx = r,.get = f_get,.pin = f_pin,.unpin = f_unpin,.reg = f_reg,
                .dereg = f_dereg,.error = f_error},
        .host = {.ctx = r,.progress = h_progress,.send_msg = h_send_msg},
    };
    if (gdr_gpu_mem_alloc(&r->g, WIN_BYTES, &r->base) != 0) {
        GDR_CHECK(0, "rank %d: window memory: %s", id, r->g.error);
        return -1;
    }
    if (gdr_rma_win_init(&r->w, &r->eng, r, RANKS, id, 0, 1) != GDR_RMA_OK)
        return -1;
    for (int t = 0; t < RANKS; t++)
        gdr_rma_win_set_peer(&r->w, t, t);
    r->d = gdr_rma_staged_new(&r->eng, &r->dev, &cfg, why, sizeof(why));
    if (r->d == NULL) {
        GDR_CHECK(0, "rank %d: protocol context: %s", id, why);
        return -1;
    }
    r->dw = gdr_rma_staged_win_new(r->d, &r->w, WIN_ID, r->base, WIN_BYTES, 1);
    return r->dw != NULL ? 0 : -1;
}

/* The cards of every rank's window (device memory, not registered) to every rank. */
static int exchange_cards(void)
{
    gdr_rma_card_t cards[RANKS];
    char why[256];
    for (int i = 0; i < RANKS; i++) {
        rank_t *r = &W.r[i];
        int rc = gdr_rma_win_expose(&r->w, r->base, WIN_BYTES, UNIT,
                                    GDR_RMA_EXPOSE_IS_DEVICE | GDR_RMA_EXPOSE_GPU, &cards[i],
                                    why, sizeof(why));
        if (rc < 0 || !(cards[i].flags & GDR_RMA_CARD_DEVICE) || cards[i].rkey != 0)
            return -1;
    }
    for (int i = 0; i < RANKS; i++)
        for (int t = 0; t < RANKS; t++)
            gdr_rma_win_set_card(&W.r[i].w, t, &cards[t]);
    return 0;
}

static void rank_close(rank_t *r)
{
    if (r->dw != NULL)
        gdr_rma_staged_win_free(r->dw);
    r->dw = NULL;
}

static void rank_free(rank_t *r)
{
    gdr_rma_staged_free(r->d);
    gdr_rma_win_free(&r->w);
    if (r->base != NULL)
        gdr_gpu_mem_free(&r->g, r->base);
    gdr_gpu_rma_device_fini(&r->gd);
    gdr_gpu_close(&r->g);
}

/* ---- device memory and the model ---------------------------------------------------- */

static uint8_t model[RANKS][WIN_BYTES];       /* what each window must hold */

static void pattern(void *p, size_t n, unsigned seed)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t) ((i * 131u + seed * 7919u + (i >> 8) * 17u) ^ (seed >> 3));
}

/* Sets rank t's window to a pattern (by copy) and the model with it. */
static int win_reset(int t, unsigned seed)
{
    pattern(model[t], WIN_BYTES, seed);
    return gdr_gpu_copy(&W.r[t].g, W.r[t].base, model[t], WIN_BYTES);
}

/* Every byte of rank t's window against the model; the first difference in *at. */
static int win_matches(int t, size_t *at)
{
    static uint8_t back[WIN_BYTES];
    *at = SIZE_MAX;
    if (gdr_gpu_copy(&W.r[t].g, back, W.r[t].base, WIN_BYTES) != 0)
        return 0;
    for (size_t i = 0; i < WIN_BYTES; i++)
        if (back[i] != model[t][i]) {
            *at = i;
            return 0;
        }
    return 1;
}

static void *dev_alloc(rank_t *r, size_t n, const void *init)
{
    void *p = NULL;
    if (gdr_gpu_mem_alloc(&r->g, n, &p) != 0)
        return NULL;
    if (init != NULL && gdr_gpu_copy(&r->g, p, init, n) != 0)
        return NULL;
    return p;
}

static int dev_read(rank_t *r, void *host, const void *dev, size_t n)
{
    return gdr_gpu_copy(&r->g, host, dev, n);
}

/* A buffer as the protocol names it: device memory by its CUDA buffer id. */
static gdr_rma_buf_t buf_of(rank_t *r, void *p, int device)
{
    return (gdr_rma_buf_t) {.addr = p,.device_id = device ? r->dev.buffer_id(r->dev.ctx, p) : 0};
}

/* ---- operations --------------------------------------------------------------------- */

typedef struct done {
    int calls, status;
} done_t;

static void on_done(void *arg, int status, const void *landed, size_t len)
{
    done_t *c = arg;
    (void) landed;
    (void) len;
    c->calls++;
    c->status = status;
}

static struct iovec piece(size_t off, size_t len)
{
    return (struct iovec) {.iov_base = (void *) (uintptr_t) off,.iov_len = len };
}

/* An access of kind from origin o to target t at disp, over the target pieces. */
static gdr_rma_access_t access_of(gdr_rma_kind_t kind, int t, int64_t disp,
                                  const struct iovec *tp, size_t ntp)
{
    gdr_rma_access_t a = {.kind = kind,.target = t,.disp = disp,.tpieces = tp,.ntpieces = ntp };
    for (size_t i = 0; i < ntp; i++)
        a.tbytes += tp[i].iov_len;
    a.t_span = a.tbytes;
    return a;
}

/* Waits for remote completion at o of everything to t, then lets the world go quiet
 * (TAKENs of the last slots in flight); the wait's result. */
static int finish(rank_t *o, int t)
{
    int rc = gdr_rma_wait_target(&o->w.tracker, &o->eng, t, 0);
    if (rc != GDR_RMA_OK && (W.timed_out || W.progress_rc != 0))
        printf("# wait %d: progress %d%s; rank 0: %s; rank 1: %s\n", rc, W.progress_rc,
               W.timed_out ? ", timed out" : "", gdr_rma_staged_error(W.r[0].d),
               gdr_rma_staged_error(W.r[1].d));
    for (int k = 0; k < 100000 && !past_deadline(); k++) {
        int quiet = W.n_reads == 0;
        for (int i = 0; i < RANKS; i++)
            for (int j = 0; j < RANKS; j++)
                quiet &= W.queued[i][j] == 0;
        for (int i = 0; i < RANKS; i++) {
            const gdr_rma_stage_t *st = gdr_rma_staged_stage(W.r[i].d);
            for (int p = 0; st != NULL && p < GDR_RMA_STAGE_POOLS; p++)
                quiet &= st->counts[p].in_use == 0;
            quiet &= W.r[i].gd.marks_out == 0;
        }
        if (quiet)
            break;
        tick();
    }
    return rc;
}

/* Every slot of every pool back, every device mark given back. */
static int all_back(void)
{
    int ok = 1;
    for (int i = 0; i < RANKS; i++) {
        const gdr_rma_stage_t *st = gdr_rma_staged_stage(W.r[i].d);
        for (int p = 0; st != NULL && p < GDR_RMA_STAGE_POOLS; p++)
            ok &= st->counts[p].in_use == 0;
        ok &= W.r[i].gd.marks_out == 0;
    }
    return ok && W.n_reads == 0;
}

/* ---- Put and Get -------------------------------------------------------------------- */

/* A put of n bytes from rank `from` (device or host origin) to rank 1 at disp, as one
 * piece or scattered over three; checks every byte of the window. */
static void put_case(int from, size_t n, int device, int scattered)
{
    rank_t *o = &W.r[from];
    const int64_t disp = 16;
    uint8_t *src = malloc(n);
    pattern(src, n, (unsigned) n + 99);
    arm(30);
    GDR_CHECK(win_reset(1, (unsigned) n) == 0, "put %zu B: window reset", n);
    void *dsrc = device ? dev_alloc(o, n, src) : NULL;
    struct iovec tp[3];
    size_t ntp = 1;
    tp[0] = piece(0, n);
    if (scattered) {
        /* three pieces with gaps, the last crossing the chunks' boundaries */
        size_t a = n / 5, b = n / 2;
        tp[0] = piece(0, a);
        tp[1] = piece(a + 1000, b);
        tp[2] = piece(a + b + 5000, n - a - b);
        ntp = 3;
    }
    gdr_rma_access_t a = access_of(GDR_RMA_PUT, 1, disp, tp, ntp);
    a.origin = buf_of(o, device ? dsrc : src, device);
    gdr_rma_staged_counts_t before = *gdr_rma_staged_counts(o->d);
    done_t cb = { 0 };
    int rc = gdr_rma_staged_start(o->dw, &a, on_done, &cb);
    for (size_t i = 0, at = 0; i < ntp; at += tp[i].iov_len, i++)
        memcpy(model[1] + disp * UNIT + (size_t) tp[i].iov_base, src + at, tp[i].iov_len);
    int wrc = rc == GDR_RMA_OK ? finish(o, 1) : rc;
    size_t bad;
    GDR_CHECK(rc == GDR_RMA_OK && wrc == GDR_RMA_OK && cb.calls == 1 && cb.status == 0,
              "put %zu B from rank %d (%s origin, %s target): remote completion (start %d, "
              "wait %d, callback %d/%d%s%s)", n, from, device ? "device" : "host",
              scattered ? "3 pieces" : "1 piece", rc, wrc, cb.calls, cb.status,
              W.timed_out ? ", timed out: " : "", W.timed_out ? gdr_rma_staged_error(o->d) : "");
    GDR_CHECK(win_matches(1, &bad), "put %zu B: the window holds the data at its pieces and "
              "nothing else changed (first difference at %zd)", n, (ssize_t) bad);
    const gdr_rma_staged_counts_t *c = gdr_rma_staged_counts(o->d);
    uint64_t chunks = n <= INLINE ? 0 : (n + CHUNK - 1) / CHUNK;
    GDR_CHECK(c->started[GDR_RMA_PUT] == before.started[GDR_RMA_PUT] + 1
              && c->chunks_staged == before.chunks_staged + chunks && c->aborted == 0,
              "put %zu B: %s (%llu chunks staged)", n, n <= INLINE ? "inline" : "in chunks",
              c->chunks_staged - before.chunks_staged);
    GDR_CHECK(all_back(), "put %zu B: every staging slot and device mark is back", n);
    if (dsrc != NULL)
        gdr_gpu_mem_free(&o->g, dsrc);
    free(src);
}

/* A get of n bytes of rank 1's window at disp into a device or host result at `from`. */
static void get_case(int from, size_t n, int device, int scattered)
{
    rank_t *o = &W.r[from];
    const int64_t disp = 40;
    uint8_t *expect = malloc(n), *back = malloc(n + 64);
    arm(30);
    GDR_CHECK(win_reset(1, (unsigned) n + 5) == 0, "get %zu B: window reset", n);
    struct iovec tp[3];
    size_t ntp = 1;
    tp[0] = piece(0, n);
    if (scattered) {
        size_t a = n / 3, b = n / 4;
        tp[0] = piece(300, a);
        tp[1] = piece(300 + a + 4500, b);
        tp[2] = piece(300 + a + b + 9000, n - a - b);
        ntp = 3;
    }
    for (size_t i = 0, at = 0; i < ntp; at += tp[i].iov_len, i++)
        memcpy(expect + at, model[1] + disp * UNIT + (size_t) tp[i].iov_base, tp[i].iov_len);
    /* the result buffer with guard bytes on both sides */
    uint8_t *host_res = malloc(n + 64);
    memset(host_res, 0xa5, n + 64);
    void *dres = device ? dev_alloc(o, n + 64, host_res) : NULL;
    uint8_t *res = device ? dres : host_res;
    gdr_rma_access_t a = access_of(GDR_RMA_GET, 1, disp, tp, ntp);
    a.result = buf_of(o, res + 32, device);
    done_t cb = { 0 };
    int rc = gdr_rma_staged_start(o->dw, &a, on_done, &cb);
    int wrc = rc == GDR_RMA_OK ? finish(o, 1) : rc;
    GDR_CHECK(rc == GDR_RMA_OK && wrc == GDR_RMA_OK && cb.calls == 1 && cb.status == 0,
              "get %zu B to rank %d (%s result, %s target): remote completion (start %d, "
              "wait %d, callback %d/%d: %s)", n, from, device ? "device" : "host",
              scattered ? "3 pieces" : "1 piece", rc, wrc, cb.calls, cb.status,
              gdr_rma_staged_error(o->d));
    int ok = device ? dev_read(o, back, dres, n + 64) == 0 : (memcpy(back, host_res, n + 64),
                                                             1);
    ok = ok && memcmp(back + 32, expect, n) == 0;
    int guards = 1;
    for (int i = 0; i < 32; i++)
        guards &= back[i] == 0xa5 && back[32 + n + i] == 0xa5;
    GDR_CHECK(ok && guards, "get %zu B: the result holds the window's bytes, its guards are "
              "untouched", n);
    size_t bad;
    GDR_CHECK(win_matches(1, &bad), "get %zu B: the window is unchanged", n);
    GDR_CHECK(all_back(), "get %zu B: every staging slot and device mark is back", n);
    if (dres != NULL)
        gdr_gpu_mem_free(&o->g, dres);
    free(host_res);
    free(expect);
    free(back);
}

/* Scattered device origins: a put from two pieces of one device buffer (out of the
 * window's order) and one of another, then a get back into the first buffer's pieces. */
static void scattered_origin_case(void)
{
    rank_t *o = &W.r[0];
    const size_t n = BIG;
    uint8_t *src = malloc(n), *back = malloc(n), *zero = calloc(1, 16384);
    pattern(src, n, 4242);
    arm(30);
    GDR_CHECK(win_reset(1, 77) == 0, "scattered origin: window reset");
    void *x = dev_alloc(o, 16384, NULL), *y = dev_alloc(o, 8192, NULL);
    /* src[0, 5000) at x+100, src[5000, 11000) at y, src[11000, n) at x+6000 */
    struct iovec xv[2] = { {(char *) x + 100, 5000}, {(char *) x + 6000, n - 11000} };
    struct iovec yv[1] = { {y, 6000} };
    struct iovec xt[2] = { piece(0, 5000), piece(11000, n - 11000) }, yt[1] = { piece(5000,
                                                                                    6000) };
    GDR_CHECK(x != NULL && y != NULL && gdr_gpu_copy(&o->g, xv[0].iov_base, src, 5000) == 0
              && gdr_gpu_copy(&o->g, yv[0].iov_base, src + 5000, 6000) == 0
              && gdr_gpu_copy(&o->g, xv[1].iov_base, src + 11000, n - 11000) == 0,
              "scattered origin: the data in three pieces of two device buffers");
    gdr_rma_access_t ax = access_of(GDR_RMA_PUT, 1, 0, xt, 2), ay = access_of(GDR_RMA_PUT, 1,
                                                                               0, yt, 1);
    ax.origin = (gdr_rma_buf_t) {.scattered = 1,.iov = xv,.n = 2,
        .device_id = o->dev.buffer_id(o->dev.ctx, x) };
    ay.origin = (gdr_rma_buf_t) {.scattered = 1,.iov = yv,.n = 1,
        .device_id = o->dev.buffer_id(o->dev.ctx, y) };
    done_t c1 = { 0 }, c2 = { 0 };
    int rc = gdr_rma_staged_start(o->dw, &ax, on_done, &c1);
    int rc2 = gdr_rma_staged_start(o->dw, &ay, on_done, &c2);
    memcpy(model[1], src, n);
    int wrc = finish(o, 1);
    size_t bad;
    GDR_CHECK(rc == GDR_RMA_OK && rc2 == GDR_RMA_OK && wrc == GDR_RMA_OK && c1.status == 0
              && c2.status == 0 && win_matches(1, &bad), "put from scattered device origins "
              "(two pieces of one buffer to two target pieces, one of another): the window "
              "holds the %zu B", n);

    /* back: the window's bytes into x's two pieces, cleared first */
    GDR_CHECK(gdr_gpu_copy(&o->g, x, zero, 16384) == 0, "scattered result: cleared");
    gdr_rma_access_t g = access_of(GDR_RMA_GET, 1, 0, xt, 2);
    g.result = ax.origin;
    done_t c3 = { 0 };
    rc = gdr_rma_staged_start(o->dw, &g, on_done, &c3);
    wrc = finish(o, 1);
    int ok = rc == GDR_RMA_OK && wrc == GDR_RMA_OK && c3.status == 0
        && dev_read(o, back, xv[0].iov_base, 5000) == 0 && memcmp(back, src, 5000) == 0
        && dev_read(o, back, xv[1].iov_base, n - 11000) == 0
        && memcmp(back, src + 11000, n - 11000) == 0;
    GDR_CHECK(ok, "get into scattered device results (two pieces of one buffer)");
    GDR_CHECK(all_back(), "scattered origins: every slot and mark is back");
    gdr_gpu_mem_free(&o->g, x);
    gdr_gpu_mem_free(&o->g, y);
    free(src);
    free(back);
    free(zero);
}

/* ---- accumulates -------------------------------------------------------------------- */

/* Accumulate (or Get_accumulate with a device result) of count elements of type from a
 * device origin on rank 0 into rank 1's window at byte offset 8*disp; the model applies
 * the same op on the host (gdr_gpu_acc_apply on host copies). */
static void acc_case(int from, const char *what, gdr_rma_kind_t kind, int op, int type,
                     size_t count, const void *origin_vals, int result_device)
{
    rank_t *o = &W.r[from];
    const int64_t disp = 64;
    size_t es = gdr_gpu_type_size(type), n = count * es;
    arm(30);
    GDR_CHECK(win_reset(1, (unsigned) (n + (size_t) op * 3 + (size_t) type)) == 0,
              "%s: window reset", what);
    /* expected: the model's target and the old values */
    uint8_t *old = malloc(n), *back = malloc(n);
    memcpy(old, model[1] + disp * UNIT, n);
    gdr_gpu_acc_args_t host = {.target = model[1] + disp * UNIT,.origin = origin_vals,
        .count = count,.op = op,.type = type };
    gdr_gpu_acc_apply(&host);
    void *dorig = dev_alloc(o, n, origin_vals);
    uint8_t *hres = NULL;
    void *dres = NULL;
    gdr_rma_access_t a = access_of(kind, 1, disp, (struct iovec[]) { piece(0, n) }, 1);
    a.gpu_op = op;
    a.gpu_type = type;
    a.origin = buf_of(o, dorig, 1);
    if (kind == GDR_RMA_GET_ACC) {
        if (result_device) {
            dres = dev_alloc(o, n, NULL);
            a.result = buf_of(o, dres, 1);
        } else {
            hres = calloc(1, n);
            a.result = buf_of(o, hres, 0);
        }
    }
    gdr_rma_staged_counts_t before = *gdr_rma_staged_counts(W.r[1].d);
    unsigned long accs = W.r[1].accs;
    done_t cb = { 0 };
    int rc = gdr_rma_staged_start(o->dw, &a, on_done, &cb);
    int wrc = rc == GDR_RMA_OK ? finish(o, 1) : rc;
    size_t bad;
    GDR_CHECK(rc == GDR_RMA_OK && wrc == GDR_RMA_OK && cb.calls == 1 && cb.status == 0,
              "%s: remote completion (start %d, wait %d, callback %d/%d: %s)", what, rc, wrc,
              cb.calls, cb.status, gdr_rma_staged_error(o->d));
    GDR_CHECK(win_matches(1, &bad), "%s: the window holds op(target, origin) for %zu elements,"
              " nothing else changed (first difference at %zd)", what, count, (ssize_t) bad);
    const gdr_rma_staged_counts_t *c = gdr_rma_staged_counts(W.r[1].d);
    GDR_CHECK(c->served[kind] == before.served[kind] + 1
              && c->chunks_read - before.chunks_read == (n <= INLINE ? 0 : (n + CHUNK - 1)
                                                         / CHUNK),
              "%s: the target served it from %llu chunks read", what,
              c->chunks_read - before.chunks_read);
    GDR_CHECK(W.r[1].accs - accs == (n + CHUNK - 1) / CHUNK, "%s: the target launched the "
              "accumulate kernel once per chunk on its device (%lu)", what, W.r[1].accs - accs);
    if (kind == GDR_RMA_GET_ACC) {
        int ok = result_device ? dev_read(o, back, dres, n) == 0 : (memcpy(back, hres, n), 1);
        GDR_CHECK(ok && memcmp(back, old, n) == 0, "%s: the %s result holds the old values",
                  what, result_device ? "device" : "host");
    }
    GDR_CHECK(all_back(), "%s: every staging slot and device mark is back", what);
    gdr_gpu_mem_free(&o->g, dorig);
    if (dres != NULL)
        gdr_gpu_mem_free(&o->g, dres);
    free(hres);
    free(old);
    free(back);
}

static void acc_cases(void)
{
    enum { N32 = BIG / 4, ND = BIG / 8 };
    static int32_t i32[N32];
    static double dbl[ND];
    for (int i = 0; i < N32; i++)
        i32[i] = (i % 7 == 0 ? -1 : 1) * (i * 37 % 1001);
    for (int i = 0; i < ND; i++)
        dbl[i] = (i % 5) * 0.5 - 1.25 + i;
    acc_case(0, "accumulate SUM int32, 3.5 chunks", GDR_RMA_ACC, GDR_GPU_OP_SUM,
             GDR_GPU_T_INT32, N32, i32, 0);
    acc_case(0, "accumulate SUM double, 3.5 chunks", GDR_RMA_ACC, GDR_GPU_OP_SUM,
             GDR_GPU_T_DOUBLE, ND, dbl, 0);
    acc_case(0, "accumulate MAX int32, 3.5 chunks", GDR_RMA_ACC, GDR_GPU_OP_MAX,
             GDR_GPU_T_INT32, N32, i32, 0);
    acc_case(0, "accumulate REPLACE int32, 3.5 chunks", GDR_RMA_ACC, GDR_GPU_OP_REPLACE,
             GDR_GPU_T_INT32, N32, i32, 0);
    acc_case(0, "accumulate SUM int32, 10 elements (inline)", GDR_RMA_ACC, GDR_GPU_OP_SUM,
             GDR_GPU_T_INT32, 10, i32, 0);
    acc_case(0, "get_accumulate SUM int32, 3.5 chunks, device result", GDR_RMA_GET_ACC,
             GDR_GPU_OP_SUM, GDR_GPU_T_INT32, N32, i32, 1);
    acc_case(0, "get_accumulate SUM double, 200 B, device result", GDR_RMA_GET_ACC,
             GDR_GPU_OP_SUM, GDR_GPU_T_DOUBLE, 25, dbl, 1);
    acc_case(0, "get_accumulate SUM int32, 3.5 chunks, host result", GDR_RMA_GET_ACC,
             GDR_GPU_OP_SUM, GDR_GPU_T_INT32, N32, i32, 0);
    acc_case(1, "self: get_accumulate SUM double, 3.5 chunks, device result",
             GDR_RMA_GET_ACC, GDR_GPU_OP_SUM, GDR_GPU_T_DOUBLE, ND, dbl, 1);
    acc_case(1, "self: accumulate MAX int32, 3.5 chunks", GDR_RMA_ACC, GDR_GPU_OP_MAX,
             GDR_GPU_T_INT32, N32, i32, 0);
}

/* Fetch_and_op SUM int64 and compare-and-swap int64 (hit and miss) on one element. */
static void fop_cas_cases(void)
{
    rank_t *o = &W.r[0];
    const int64_t disp = 200;       /* the element at byte 1600 */
    int64_t *elem = (int64_t *) (model[1] + disp * UNIT), v, got;
    arm(30);
    GDR_CHECK(win_reset(1, 31337) == 0, "fop/cas: window reset");
    int64_t start = -123456789012345LL;
    memcpy(elem, &start, 8);
    GDR_CHECK(gdr_gpu_copy(&o->g, (char *) W.r[1].base + disp * UNIT, &start, 8) == 0,
              "fop/cas: the element is %lld", (long long) start);
    struct iovec one = piece(0, 8);

    /* fetch_and_op SUM: device origin and result */
    v = 1000000007LL;
    void *dv = dev_alloc(o, 8, &v), *dr = dev_alloc(o, 8, NULL), *dc = dev_alloc(o, 8, NULL);
    gdr_rma_access_t a = access_of(GDR_RMA_FOP, 1, disp, &one, 1);
    a.gpu_op = GDR_GPU_OP_SUM;
    a.gpu_type = GDR_GPU_T_INT64;
    a.int64_elements = 1;
    a.origin = buf_of(o, dv, 1);
    a.result = buf_of(o, dr, 1);
    done_t cb = { 0 };
    int rc = gdr_rma_staged_start(o->dw, &a, on_done, &cb);
    int wrc = rc == GDR_RMA_OK ? finish(o, 1) : rc;
    int64_t now = start + v;
    memcpy(elem, &now, 8);
    size_t bad;
    GDR_CHECK(rc == GDR_RMA_OK && wrc == GDR_RMA_OK && cb.status == 0 && cb.calls == 1
              && dev_read(o, &got, dr, 8) == 0 && got == start, "fetch_and_op SUM int64: "
              "the device result holds the old value (%lld; %s)", (long long) got,
              gdr_rma_staged_error(o->d));
    GDR_CHECK(win_matches(1, &bad), "fetch_and_op SUM int64: the element is %lld, nothing "
              "else changed", (long long) now);

    /* compare-and-swap, hit: device origin and compare, device result */
    int64_t swap = 4242424242LL, cmp = now;
    GDR_CHECK(gdr_gpu_copy(&o->g, dv, &swap, 8) == 0 && gdr_gpu_copy(&o->g, dc, &cmp, 8) == 0,
              "cas: origin %lld, compare %lld", (long long) swap, (long long) cmp);
    a = access_of(GDR_RMA_CAS, 1, disp, &one, 1);
    a.gpu_op = GDR_GPU_OP_CSWAP;
    a.gpu_type = GDR_GPU_T_INT64;
    a.int64_elements = 1;
    a.origin = buf_of(o, dv, 1);
    a.compare = dc;
    a.compare_device_id = o->dev.buffer_id(o->dev.ctx, dc);
    a.result = buf_of(o, dr, 1);
    cb = (done_t) { 0 };
    rc = gdr_rma_staged_start(o->dw, &a, on_done, &cb);
    wrc = rc == GDR_RMA_OK ? finish(o, 1) : rc;
    memcpy(elem, &swap, 8);
    GDR_CHECK(rc == GDR_RMA_OK && wrc == GDR_RMA_OK && cb.status == 0
              && dev_read(o, &got, dr, 8) == 0 && got == now && win_matches(1, &bad),
              "compare_and_swap int64, hit: swapped in %lld, the result holds the old %lld "
              "(got %lld)", (long long) swap, (long long) now, (long long) got);

    /* miss: the compare is stale (host compare and result this time) */
    int64_t swap2 = 7, stale = now, hres = 0;
    GDR_CHECK(gdr_gpu_copy(&o->g, dv, &swap2, 8) == 0, "cas miss: origin 7");
    a.compare = &stale;
    a.compare_device_id = 0;
    a.result = buf_of(o, &hres, 0);
    cb = (done_t) { 0 };
    rc = gdr_rma_staged_start(o->dw, &a, on_done, &cb);
    wrc = rc == GDR_RMA_OK ? finish(o, 1) : rc;
    GDR_CHECK(rc == GDR_RMA_OK && wrc == GDR_RMA_OK && cb.status == 0 && hres == swap
              && win_matches(1, &bad), "compare_and_swap int64, miss (host compare and "
              "result): the element stays %lld, the result holds it (%lld)", (long long) swap,
              (long long) hres);
    GDR_CHECK(all_back(), "fop/cas: every staging slot and device mark is back");
    gdr_gpu_mem_free(&o->g, dv);
    gdr_gpu_mem_free(&o->g, dr);
    gdr_gpu_mem_free(&o->g, dc);
}

/* Ranks 0 and 1 both add into one int64 element of rank 1's window, interleaved; rank 1
 * reaches its own window through the protocol's self inbox. */
static void two_origins_case(void)
{
    enum { ROUNDS = 40 };
    const int64_t disp = 1000;
    int64_t zero = 0, got = 0, expect = 0;
    void *src[RANKS];
    done_t cb[RANKS][ROUNDS];
    int started = 1;
    arm(60);
    GDR_CHECK(win_reset(1, 555) == 0 && gdr_gpu_copy(&W.r[1].g, (char *) W.r[1].base
                                                     + disp * UNIT, &zero, 8) == 0,
              "two origins: the element is 0");
    memset(model[1] + disp * UNIT, 0, 8);
    unsigned long self_before = W.self_sends;
    memset(cb, 0, sizeof(cb));
    struct iovec one = piece(0, 8);
    for (int i = 0; i < RANKS; i++) {
        int64_t v[ROUNDS];
        for (int k = 0; k < ROUNDS; k++) {
            v[k] = (i + 1) * 1000003LL * (k + 1) - 17 * k;
            expect += v[k];
        }
        src[i] = dev_alloc(&W.r[i], sizeof(v), v);
    }
    for (int k = 0; k < ROUNDS; k++)
        for (int i = 0; i < RANKS; i++) {
            rank_t *o = &W.r[i];
            gdr_rma_access_t a = access_of(GDR_RMA_ACC, 1, disp, &one, 1);
            a.gpu_op = GDR_GPU_OP_SUM;
            a.gpu_type = GDR_GPU_T_INT64;
            a.int64_elements = 1;
            a.origin = buf_of(o, (int64_t *) src[i] + k, 1);
            started &= gdr_rma_staged_start(o->dw, &a, on_done, &cb[i][k]) == GDR_RMA_OK;
            if (k % 3 == 0)
                tick();
        }
    int w0 = gdr_rma_wait_all(&W.r[0].w.tracker, &W.r[0].eng, 0);
    int w1 = finish(&W.r[1], 1);
    int calls = 1;
    for (int i = 0; i < RANKS; i++)
        for (int k = 0; k < ROUNDS; k++)
            calls &= cb[i][k].calls == 1 && cb[i][k].status == 0;
    GDR_CHECK(started && w0 == GDR_RMA_OK && w1 == GDR_RMA_OK && calls,
              "two origins: %d accumulates each, all complete (%s)", ROUNDS,
              gdr_rma_staged_error(W.r[1].d));
    memcpy(model[1] + disp * UNIT, &expect, 8);
    size_t bad;
    GDR_CHECK(dev_read(&W.r[1], &got, (char *) W.r[1].base + disp * UNIT, 8) == 0
              && got == expect && win_matches(1, &bad), "two origins: the element holds the "
              "exact sum %lld (got %lld), nothing else changed", (long long) expect,
              (long long) got);
    GDR_CHECK(W.self_sends == self_before, "rank 1 to itself never went through the host's "
              "send_msg (the self inbox)");
    GDR_CHECK(all_back(), "two origins: every staging slot and device mark is back");
    for (int i = 0; i < RANKS; i++)
        gdr_gpu_mem_free(&W.r[i].g, src[i]);
}

/* A multi-chunk put whose device origin is freed after the call, before any progress:
 * the operation fails, nothing crashes, the window is untouched, and the next put on the
 * same window works.  Last: the window's tracker keeps the failure (waits report it). */
static void freed_origin_case(void)
{
    rank_t *o = &W.r[0];
    const size_t n = BIG;
    uint8_t *src = malloc(n);
    pattern(src, n, 808);
    arm(30);
    GDR_CHECK(win_reset(1, 909) == 0, "freed origin: window reset");
    void *dsrc = dev_alloc(o, n, src);
    gdr_rma_access_t a = access_of(GDR_RMA_PUT, 1, 0, (struct iovec[]) { piece(0, n) }, 1);
    a.origin = buf_of(o, dsrc, 1);
    gdr_rma_staged_counts_t before = *gdr_rma_staged_counts(o->d);
    done_t cb = { 0 };
    int rc = gdr_rma_staged_start(o->dw, &a, on_done, &cb);
    GDR_CHECK(rc == GDR_RMA_OK && gdr_gpu_mem_free(&o->g, dsrc) == 0,
              "freed origin: a put of %zu B started, then its device origin freed", n);
    int wrc = finish(o, 1);
    size_t bad;
    GDR_CHECK(wrc == GDR_RMA_ERROR && cb.calls == 1 && cb.status == GDR_RMA_ERROR,
              "freed origin: the wait says GDR_RMA_ERROR (%d), the callback too (%d/%d): %s",
              wrc, cb.calls, cb.status, gdr_rma_staged_error(o->d));
    GDR_CHECK(gdr_rma_staged_counts(o->d)->aborted == before.aborted + 1,
              "freed origin: the origin aborted the operation");
    GDR_CHECK(win_matches(1, &bad), "freed origin: the window is untouched");
    GDR_CHECK(all_back(), "freed origin: every staging slot and device mark is back");

    /* a get whose device result is freed after the call: its results are dropped, never
     * copied to the freed address (that would be a sticky device fault) */
    arm(30);
    void *dres = dev_alloc(o, n, NULL);
    gdr_rma_access_t g = access_of(GDR_RMA_GET, 1, 0, (struct iovec[]) { piece(0, n) }, 1);
    g.result = buf_of(o, dres, 1);
    cb = (done_t) { 0 };
    rc = gdr_rma_staged_start(o->dw, &g, on_done, &cb);
    GDR_CHECK(rc == GDR_RMA_OK && gdr_gpu_mem_free(&o->g, dres) == 0,
              "freed result: a get of %zu B started, then its device result freed", n);
    wrc = finish(o, 1);
    GDR_CHECK(wrc == GDR_RMA_ERROR && cb.calls == 1 && cb.status == GDR_RMA_ERROR,
              "freed result: the operation fails (wait %d, callback %d/%d): %s", wrc, cb.calls,
              cb.status, gdr_rma_staged_error(o->d));
    GDR_CHECK(win_matches(1, &bad) && all_back(), "freed result: the window is untouched, "
              "every slot and mark is back");

    /* a put of 6 chunks whose origin is freed once some chunks have gone: the chunks
     * applied form a prefix, the rest never comes */
    enum { N6 = 6 * CHUNK };
    uint8_t *src6 = malloc(N6);
    pattern(src6, N6, 6);
    arm(30);
    GDR_CHECK(win_reset(1, 910) == 0, "freed mid-way: window reset");
    void *d6 = dev_alloc(o, N6, src6);
    gdr_rma_access_t a6 = access_of(GDR_RMA_PUT, 1, 0, (struct iovec[]) { piece(0, N6) }, 1);
    a6.origin = buf_of(o, d6, 1);
    before = *gdr_rma_staged_counts(o->d);
    cb = (done_t) { 0 };
    rc = gdr_rma_staged_start(o->dw, &a6, on_done, &cb);
    while (rc == GDR_RMA_OK && gdr_rma_staged_counts(o->d)->chunks_staged < before.chunks_staged + 2
           && !tick()) ;
    unsigned long long staged = gdr_rma_staged_counts(o->d)->chunks_staged - before.chunks_staged;
    GDR_CHECK(rc == GDR_RMA_OK && staged >= 2 && staged < 6 && gdr_gpu_mem_free(&o->g, d6) == 0,
              "freed mid-way: a put of 6 chunks, its origin freed after %llu were staged",
              staged);
    wrc = finish(o, 1);
    GDR_CHECK(wrc == GDR_RMA_ERROR && cb.calls == 1 && cb.status == GDR_RMA_ERROR
              && gdr_rma_staged_counts(o->d)->aborted == before.aborted + 1,
              "freed mid-way: aborted, the operation fails (callback %d/%d): %s", cb.calls,
              cb.status, gdr_rma_staged_error(o->d));
    static uint8_t back6[N6];
    int prefix = gdr_gpu_copy(&W.r[1].g, back6, W.r[1].base, N6) == 0, k = 0;
    while (k < 6 && memcmp(back6 + k * CHUNK, src6 + k * CHUNK, CHUNK) == 0)
        k++;
    for (int j = k; j < 6; j++)
        prefix &= memcmp(back6 + j * CHUNK, model[1] + j * CHUNK, CHUNK) == 0;
    memcpy(model[1], src6, (size_t) k * CHUNK);
    GDR_CHECK(prefix && k <= (int) staged && win_matches(1, &bad), "freed mid-way: the window "
              "holds the first %d chunks, the rest as before, nothing else changed", k);
    GDR_CHECK(all_back(), "freed mid-way: every staging slot and device mark is back");
    free(src6);

    /* the next put on the same window, from a new buffer */
    arm(30);
    void *again = dev_alloc(o, n, src);
    a.origin = buf_of(o, again, 1);
    cb = (done_t) { 0 };
    rc = gdr_rma_staged_start(o->dw, &a, on_done, &cb);
    memcpy(model[1], src, n);
    wrc = finish(o, 1);
    GDR_CHECK(rc == GDR_RMA_OK && cb.calls == 1 && cb.status == 0 && win_matches(1, &bad),
              "freed origin: a later put on the same window completes with the right bytes "
              "(callback %d/%d; the tracker still reports the earlier failure: %d)", cb.calls,
              cb.status, wrc);
    GDR_CHECK(all_back(), "freed origin: every slot and mark is back after the later put");
    gdr_gpu_mem_free(&o->g, again);
    free(src);
}

/* Both ranks at each other at once, each with a Get_accumulate (device result) and then a
 * Put of 3.5 chunks: no deadlock on slots, both windows right. */
static void both_ways_case(void)
{
    enum { N = BIG / 4 };
    const int64_t disp = 100;
    static int32_t vals[RANKS][N];
    void *orig[RANKS], *res[RANKS], *put_src[RANKS];
    static uint8_t old[RANKS][BIG], data[RANKS][BIG], back[BIG];
    done_t cb[RANKS][2];
    int started = 1;
    arm(60);
    memset(cb, 0, sizeof(cb));
    GDR_CHECK(win_reset(0, 1234) == 0 && win_reset(1, 1235) == 0, "both ways: windows reset");
    for (int i = 0; i < RANKS; i++) {
        int peer = 1 - i;
        for (int k = 0; k < N; k++)
            vals[i][k] = (i + 2) * k - 999;
        pattern(data[i], BIG, 50 + (unsigned) i);
        orig[i] = dev_alloc(&W.r[i], BIG, vals[i]);
        res[i] = dev_alloc(&W.r[i], BIG, NULL);
        put_src[i] = dev_alloc(&W.r[i], BIG, data[i]);
        /* the model at the peer: SUM at disp, then the put right after it */
        uint8_t *t = model[peer] + disp * UNIT;
        memcpy(old[i], t, BIG);
        gdr_gpu_acc_args_t host = {.target = t,.origin = vals[i],.count = N,
            .op = GDR_GPU_OP_SUM,.type = GDR_GPU_T_INT32 };
        gdr_gpu_acc_apply(&host);
        memcpy(t + BIG, data[i], BIG);
    }
    for (int i = 0; i < RANKS; i++) {
        rank_t *o = &W.r[i];
        gdr_rma_access_t a = access_of(GDR_RMA_GET_ACC, 1 - i, disp,
                                       (struct iovec[]) { piece(0, BIG) }, 1);
        a.gpu_op = GDR_GPU_OP_SUM;
        a.gpu_type = GDR_GPU_T_INT32;
        a.origin = buf_of(o, orig[i], 1);
        a.result = buf_of(o, res[i], 1);
        started &= gdr_rma_staged_start(o->dw, &a, on_done, &cb[i][0]) == GDR_RMA_OK;
    }
    for (int i = 0; i < RANKS; i++) {
        rank_t *o = &W.r[i];
        gdr_rma_access_t a = access_of(GDR_RMA_PUT, 1 - i, disp,
                                       (struct iovec[]) { piece(BIG, BIG) }, 1);
        a.origin = buf_of(o, put_src[i], 1);
        started &= gdr_rma_staged_start(o->dw, &a, on_done, &cb[i][1]) == GDR_RMA_OK;
    }
    int w0 = finish(&W.r[0], 1), w1 = finish(&W.r[1], 0), ok = 1;
    for (int i = 0; i < RANKS; i++)
        ok &= cb[i][0].calls == 1 && cb[i][0].status == 0 && cb[i][1].calls == 1
            && cb[i][1].status == 0;
    GDR_CHECK(started && w0 == GDR_RMA_OK && w1 == GDR_RMA_OK && ok, "both ways: each rank's "
              "get_accumulate and put of %d B to the other complete (%s / %s)", BIG,
              gdr_rma_staged_error(W.r[0].d), gdr_rma_staged_error(W.r[1].d));
    for (int i = 0; i < RANKS; i++) {
        size_t bad;
        GDR_CHECK(win_matches(1 - i, &bad), "both ways: rank %d's window holds the sums and "
                  "the put, nothing else changed (first difference at %zd)", 1 - i,
                  (ssize_t) bad);
        GDR_CHECK(dev_read(&W.r[i], back, res[i], BIG) == 0 && memcmp(back, old[i], BIG) == 0,
                  "both ways: rank %d's device result holds the old values", i);
        gdr_gpu_mem_free(&W.r[i].g, orig[i]);
        gdr_gpu_mem_free(&W.r[i].g, res[i]);
        gdr_gpu_mem_free(&W.r[i].g, put_src[i]);
    }
    GDR_CHECK(all_back(), "both ways: every staging slot and device mark is back");
}

/* ---- the strict premise ------------------------------------------------------------- */

static void touch(void *p)
{
    volatile uint8_t *b = p;
    (void) b[0];
}

static void body(const char *lib, const char *mode)
{
    int strict = strcmp(mode, "strict") == 0;
    memset(&W, 0, sizeof(W));
    alarm(600);
    for (int i = 0; i < RANKS; i++)
        if (rank_open(&W.r[i], i, lib) != 0) {
            GDR_CHECK(0, "rank %d set up", i);
            return;
        }
    GDR_CHECK(exchange_cards() == 0, "two ranks, each with a GPU context, device seam, engine,"
              " protocol and a %d KiB device window (cards: device, not registered)",
              WIN_BYTES / 1024);
    int st = gpusim_run_child(touch, W.r[1].base);
    if (strict)
        GDR_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "strict: a host read of window "
                  "memory faults, so every host dereference of device memory would (status "
                  "%#x)", st);
    else
        GDR_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host-visible: a host read of window "
                  "memory works (status %#x)", st);

    static const size_t sizes[] = { 1, INLINE, INLINE + 1, BIG };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (int device = 1; device >= 0; device--) {
            put_case(0, sizes[i], device, 0);
            get_case(0, sizes[i], device, 0);
        }
    put_case(0, BIG, 1, 1);
    get_case(0, BIG, 1, 1);
    put_case(0, 1000, 0, 1);
    get_case(0, 1000, 0, 1);
    put_case(1, BIG, 1, 0);     /* rank 1 to its own window: the self inbox */
    get_case(1, BIG, 1, 1);
    put_case(1, 1, 1, 0);
    scattered_origin_case();
    acc_cases();
    fop_cas_cases();
    two_origins_case();
    both_ways_case();
    freed_origin_case();

    GDR_CHECK(W.bad_reads == 0 && W.bad_peeks == 0, "every read lay inside a peer's staging "
              "slots; every message named the window and its sender (%lu messages, %lu ticks)",
              W.sent, W.ticks);
    for (int i = 0; i < RANKS; i++) {
        const gdr_rma_staged_counts_t *c = gdr_rma_staged_counts(W.r[i].d);
        GDR_CHECK(c->refused == 0, "rank %d refused nothing", i);
        GDR_CHECK(W.r[i].copyvs > 0 && W.r[i].unpinned == 0, "rank %d: every piece of its %lu "
                  "device copies was device memory or a staging slot", i, W.r[i].copyvs);
    }
    for (int i = RANKS - 1; i >= 0; i--)
        rank_close(&W.r[i]);
    for (int i = 0; i < RANKS; i++) {
        rank_free(&W.r[i]);
        GDR_CHECK(W.r[i].regs == 1 && W.r[i].reg.handle == NULL && W.r[i].pins == W.r[i].unpins,
                  "rank %d: the staging block was registered once, deregistered and unpinned",
                  i);
    }
    alarm(0);
}

int main(int argc, char **argv)
{
    gpusim_run_modes(argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so", body);
    return gdr_unit_finish();
}
