/* The staged protocol (src/rma/gdr_rma_staged.h) between two or three fake ranks in one
 * process.  Every rank has its own engine, transport, host and device seam, all fakes over
 * this process's memory (the ranks share one address space, as if RDMA reached it):
 *
 *  - messages (the host's send_msg) wait in one FIFO per (sender, target) until a world
 *    tick hands them to the target's gdr_rma_staged_deliver, found by gdr_rma_staged_peek's
 *    window id;
 *  - an RDMA read (the transport's get) checks its key against the ranks' registrations
 *    and copies at completion, in a later tick: in posting order, or newest first when a
 *    test asks;
 *  - device memory is mmap'ed PROT_NONE: the host touching it faults, and the fault is
 *    reported as a failure.  Device work (copyv, acc) runs only when the test lets it: at
 *    a tick some ticks after it was queued (the device's latency), or when the test runs
 *    a held device by hand, so a test can show that progress never waits for the device.
 *
 * A tick: deliver the queued messages, complete the reads posted before it, run the due
 * device work, then gdr_rma_staged_progress on every rank.  The trackers' waits run ticks
 * through the host's progress; a bounded wait gives up after so many (the host's progress
 * fails, the wait returns GDR_RMA_HOST_ERROR): "does not complete while ...".
 *
 * Misuse of a seam (a read with a wrong key, a message to oneself, device work on another
 * rank's memory, a mark never given back, ...) is counted as a violation and checked at
 * the end of every section. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "gdr_unit.h"
#include "rma/gdr_rma_staged.h"
#include "gdr/gdr_rma_kernel_api.h"
#include "rma/gdr_rma_trigger_exec.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"

#define NR 3                    /* ranks at most */
#define PEER0 100               /* rank r's transport peer is PEER0 + r */
#define MEM_MAX 256
#define REG_MAX 64
#define WIN_MAX 32
#define QUEUE_MAX 32
#define BUF_BYTES 16384         /* each rank's host and device test buffers */
#define WAIT_TICKS 5000         /* a wait that runs longer has deadlocked */

/* ---- memory: what each rank owns, and of which kind --------------------------------- */

typedef enum { M_HOST, M_PINNED, M_DEV } mkind_t;

typedef struct {
    int live, rank;
    mkind_t kind;               /* a test's host buffer, the device's host_alloc, device */
    char *base;
    size_t len, map_len;
    uint64_t id;                /* M_DEV: the "CUDA buffer id" buffer_id answers */
} mem_t;

typedef struct {
    int live, rank;
    uint64_t addr, len;
    uint32_t rkey;
} reg_t;

typedef struct msg {
    struct msg *next;
    size_t len;
    unsigned char data[];
} msg_t;

typedef struct {
    msg_t *head, *tail;
    unsigned n;
} fifo_t;

typedef struct {
    int rank, peer;
    void *dst;
    size_t len;
    uint64_t raddr, tick;
    uint32_t rkey;
    gdr_rma_done_fn done;
    void *arg;
} rd_t;

/* ---- the fake device ------------------------------------------------------------------ */

typedef struct work {
    struct work *next;
    int is_acc;
    struct iovec *dst, *src;
    size_t n_dst, n_src;
    gdr_gpu_acc_args_t args;
    uint64_t due;               /* the tick from which it may run */
} work_t;

typedef struct {
    work_t *head, *tail;
    uint64_t queued, done;      /* work items */
    int freed;
} fqueue_t;

typedef struct {
    fqueue_t *q;
    uint64_t pos;               /* reached when q->done >= pos */
    uint64_t spin_tick;
    unsigned long spins;
} fmark_t;

typedef struct {
    int rank;
    int held;                   /* work runs only by device_run */
    unsigned latency;           /* else work queued at tick k runs at tick k + latency */
    fqueue_t *queues[QUEUE_MAX];
    int nq, queues_out, marks_out;
    unsigned long copies, accs;
    char error[200];
} fdev_t;

typedef struct {
    int id;
    gdr_rma_engine_t eng;
    gdr_rma_device_t seam;
    fdev_t dev;
    gdr_rma_staged_t *d;
    int pins_out;
    char *hbuf, *dbuf;          /* BUF_BYTES of host and of device memory for tests */
} rank_t;

/* A window: every rank's registry, protocol side, memory and a model of that memory. */
typedef struct {
    uint64_t id;
    int dynamic;
    size_t size;
    uint64_t unit;
    struct {
        gdr_rma_win_t w;
        gdr_rma_staged_win_t *dw;
        char *base;
        int device;
        unsigned char *model;
    } at[NR];
} twin_t;

static struct {
    int n;
    gdr_rma_staged_config_t cfg;
    rank_t r[NR];
    fifo_t fifo[NR][NR];
    rd_t *reads;
    size_t n_reads, cap_reads;
    int lifo_reads;
    unsigned long reads_done, reads_reordered;
    uint64_t tick;
    long budget;                /* ticks a wait may still run; -1: no limit */
    twin_t *wins[WIN_MAX];
    reg_t regs[REG_MAX];
    unsigned long sent, delivered[8], undeliverable, pageable_pieces, dev_regs, catchups;
    unsigned long violations;
    char violation[400];
} W;

static mem_t mem[MEM_MAX];      /* across worlds: ids are never reused */
static uint64_t next_buf_id = 0x1000, next_win_id = 0x5700;
static uint32_t next_rkey = 0x300;
static int unlocked;
static const char *section_name = "start";

static void violate(const char *fmt, ...)
{
    va_list ap;
    if (W.violations++ == 0) {
        va_start(ap, fmt);
        vsnprintf(W.violation, sizeof(W.violation), fmt, ap);
        va_end(ap);
        printf("     (harness: %s)\n", W.violation);
    }
}

static mem_t *mem_add(int rank, mkind_t kind, char *base, size_t len, size_t map_len)
{
    for (int i = 0; i < MEM_MAX; i++)
        if (!mem[i].live) {
            mem[i] = (mem_t) {.live = 1,.rank = rank,.kind = kind,.base = base,.len = len,
                .map_len = map_len,.id = kind == M_DEV ? ++next_buf_id : 0 };
            return &mem[i];
        }
    printf("FAIL %s: the harness's memory table is full\n", section_name);
    exit(1);
}

/* The live allocation holding p, or NULL. */
static mem_t *mem_at(const void *p)
{
    const char *c = p;
    for (int i = 0; i < MEM_MAX; i++)
        if (mem[i].live && c >= mem[i].base && c < mem[i].base + mem[i].len)
            return &mem[i];
    return NULL;
}

/* The live allocation holding all of [p, p+n), or NULL. */
static mem_t *mem_span(const void *p, size_t n)
{
    mem_t *m = mem_at(p);
    if (m == NULL || n > (size_t) (m->base + m->len - (const char *) p))
        return NULL;
    return m;
}

static int overlaps_device(const void *p, size_t n)
{
    const char *c = p;
    for (int i = 0; i < MEM_MAX; i++)
        if (mem[i].live && mem[i].kind == M_DEV && c < mem[i].base + mem[i].len
            && c + n > mem[i].base)
            return 1;
    return 0;
}

static void protect_devices(int prot)
{
    for (int i = 0; i < MEM_MAX; i++)
        if (mem[i].live && mem[i].kind == M_DEV)
            mprotect(mem[i].base, mem[i].map_len, prot);
}

/* Device memory is readable only between unlock and lock: by the fake device's work and
 * by the test's own peek and poke. */
static void unlock(void)
{
    if (unlocked++ == 0)
        protect_devices(PROT_READ | PROT_WRITE);
}

static void lock(void)
{
    if (--unlocked == 0)
        protect_devices(PROT_NONE);
}

static void peek(void *out, const void *p, size_t n)
{
    unlock();
    memcpy(out, p, n);
    lock();
}

static void poke(void *p, const void *in, size_t n)
{
    unlock();
    memcpy(p, in, n);
    lock();
}

static char *dev_alloc(int rank, size_t len)
{
    size_t page = (size_t) sysconf(_SC_PAGESIZE), map_len = (len + page - 1) / page * page;
    char *p = mmap(NULL, map_len, unlocked ? PROT_READ | PROT_WRITE : PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        printf("FAIL %s: mmap\n", section_name);
        exit(1);
    }
    mem_add(rank, M_DEV, p, len, map_len);
    return p;
}

static char *host_buf(int rank, size_t len)
{
    char *p = aligned_alloc(64, (len + 63) / 64 * 64);
    if (p == NULL) {
        printf("FAIL %s: out of memory\n", section_name);
        exit(1);
    }
    mem_add(rank, M_HOST, p, len, len);
    return p;
}

/* Frees a test's allocation (host or device). */
static void buf_free(char *p)
{
    mem_t *m = mem_at(p);
    if (m == NULL || m->base != p)
        return;
    m->live = 0;
    if (m->kind == M_DEV)
        munmap(p, m->map_len);
    else
        free(p);
}

/* "cuMemFree then cuMemAlloc at the same address": the range gets a new buffer id. */
static void dev_reallocate(char *p)
{
    mem_at(p)->id = ++next_buf_id;
}

static uint64_t dev_id(const void *p)
{
    mem_t *m = mem_at(p);
    return m != NULL && m->kind == M_DEV ? m->id : 0;
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    char line[400];
    int n;
    (void) uc;
    mem_t *m = sig == SIGSEGV ? mem_at(si->si_addr) : NULL;
    if (sig == SIGALRM)
        n = snprintf(line, sizeof(line), "FAIL %s: hung for 120 s (a wait that never ends, or "
                     "a busy loop inside the protocol)\n", section_name);
    else if (m != NULL && m->kind == M_DEV)
        n = snprintf(line, sizeof(line), "FAIL %s: the host touched rank %d's device memory at "
                     "%p (buffer id %llu): only the device seam may\n", section_name, m->rank,
                     si->si_addr, (unsigned long long) m->id);
    else
        n = snprintf(line, sizeof(line), "FAIL %s: signal %d at %p\n", section_name, sig,
                     sig == SIGSEGV ? si->si_addr : NULL);
    if (write(1, line, (size_t) n) < 0)
        _exit(3);
    void *bt[32];
    backtrace_symbols_fd(bt, backtrace(bt, 32), 1);
    _exit(2);
}

static void section(const char *name)
{
    section_name = name;
    alarm(120);
    printf("---- %s\n", name);
}

/* ---- the fake transport (ctx: the rank) ---------------------------------------------- */

static int f_put(void *c, int peer, gdr_rma_proto_t proto, const void *src, size_t len,
                 uint64_t raddr, uint32_t rkey, unsigned flags, gdr_rma_done_fn done, void *arg)
{
    (void) c, (void) peer, (void) src, (void) len, (void) raddr, (void) rkey, (void) done;
    (void) flags, (void) proto;
    (void) arg;
    violate("the staged protocol posted an RDMA write");
    return GDR_RMA_ERROR;
}

static int f_vec(void *c, int peer, const struct iovec *v, size_t n, const void *pin,
                 uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    (void) c, (void) peer, (void) v, (void) n, (void) pin, (void) raddr, (void) rkey;
    (void) done, (void) arg;
    violate("the staged protocol posted a gather/scatter RDMA operation");
    return GDR_RMA_ERROR;
}

static int f_atomicv(void *c, int peer, gdr_rma_atomic_t op, const void *operands,
                     uint64_t compare, void *results, const uint64_t *raddrs, size_t n,
                     uint32_t rkey, unsigned flags, gdr_rma_done_fn done, void *arg)
{
    (void) c, (void) peer, (void) op, (void) operands, (void) compare, (void) results;
    (void) raddrs, (void) n, (void) rkey, (void) flags, (void) done, (void) arg;
    violate("the staged protocol posted an RDMA atomic");
    return GDR_RMA_ERROR;
}

static size_t f_atomicv_max(const void *c)
{
    (void) c;
    return 0;
}

static int f_sge_fits(const void *c, size_t n, size_t total)
{
    (void) c, (void) n, (void) total;
    return 0;
}

static int f_get(void *c, int peer, gdr_rma_proto_t proto, void *dst, size_t len,
                 uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    rank_t *r = c;
    (void) proto;
    mem_t *m = mem_span(dst, len);
    if (len == 0)
        violate("rank %d posted a read of 0 bytes", r->id);
    if (m == NULL || m->rank != r->id || m->kind != M_PINNED)
        violate("rank %d reads into %p, not into its own staging slots", r->id, dst);
    if (W.n_reads == W.cap_reads) {
        W.cap_reads = W.cap_reads ? 2 * W.cap_reads : 64;
        W.reads = realloc(W.reads, W.cap_reads * sizeof(*W.reads));
    }
    W.reads[W.n_reads++] = (rd_t) {.rank = r->id,.peer = peer,.dst = dst,.len = len,
        .raddr = raddr,.tick = W.tick,.rkey = rkey,.done = done,.arg = arg };
    return GDR_RMA_OK;
}

static int f_pin(void *c, const void *addr, size_t len, uint64_t device_id, void **pin)
{
    rank_t *r = c;
    if (device_id != 0 || overlaps_device(addr, len))
        violate("rank %d pinned device memory for the NIC (staged mode never does)", r->id);
    r->pins_out++;
    *pin = r;
    return GDR_RMA_OK;
}

static void f_unpin(void *c, void *pin)
{
    rank_t *r = c;
    if (pin != NULL)
        r->pins_out--;
}

static int f_reg(void *c, void *addr, size_t len, unsigned access, gdr_rma_mr_t *out, char *why,
                 size_t why_len)
{
    rank_t *r = c;
    mem_t *m = mem_span(addr, len);
    (void) access;
    if (overlaps_device(addr, len)) {
        W.dev_regs++;
        snprintf(why, why_len, "the fake NIC registers no device memory (staged mode)");
        return GDR_RMA_ERROR;
    }
    if (m == NULL || m->rank != r->id)
        violate("rank %d registers memory that is not its own (%p)", r->id, addr);
    for (int i = 0; i < REG_MAX; i++)
        if (!W.regs[i].live) {
            W.regs[i] = (reg_t) {.live = 1,.rank = r->id,.addr = (uint64_t) (uintptr_t) addr,
                .len = len,.rkey = next_rkey++ };
            *out = (gdr_rma_mr_t) {.handle = &W.regs[i],.addr = W.regs[i].addr,.len = len,
                .rkey = W.regs[i].rkey };
            return 0;
        }
    snprintf(why, why_len, "the fake NIC's table is full");
    return GDR_RMA_ERROR;
}

static void f_dereg(void *c, gdr_rma_mr_t *mr)
{
    rank_t *r = c;
    reg_t *g = mr->handle;
    if (g == NULL || !g->live || g->rank != r->id)
        violate("rank %d deregistered what it never registered", r->id);
    else
        g->live = 0;
    memset(mr, 0, sizeof(*mr));
}

static const char *f_error(const void *c)
{
    (void) c;
    return "the fake transport refused";
}

/* A read completes: the source must be the owner's registered staging slots. */
static void read_complete(rd_t *x)
{
    int owner = x->peer - PEER0, status = -1;
    reg_t *g = NULL;
    mem_t *src = mem_span((void *) (uintptr_t) x->raddr, x->len);
    for (int i = 0; i < REG_MAX; i++)
        if (W.regs[i].live && W.regs[i].rkey == x->rkey)
            g = &W.regs[i];
    if (g == NULL || g->rank != owner || x->raddr < g->addr || x->len > g->len
        || x->raddr - g->addr > g->len - x->len)
        violate("rank %d read %zu bytes at %#llx with key %#x from peer %d: not inside that "
                "rank's registrations", x->rank, x->len, (unsigned long long) x->raddr,
                x->rkey, x->peer);
    else if (src == NULL || src->kind != M_PINNED)
        violate("rank %d read user memory of rank %d by RDMA (only staging slots are read)",
                x->rank, owner);
    else {
        memcpy(x->dst, (void *) (uintptr_t) x->raddr, x->len);
        status = 0;
    }
    W.reads_done++;
    x->done(x->arg, status);
}

/* Completes the reads posted before this tick, oldest or newest first. */
static void reads_tick(void)
{
    size_t k = 0;
    while (k < W.n_reads && W.reads[k].tick < W.tick)
        k++;
    if (k == 0)
        return;
    rd_t *now = malloc(k * sizeof(*now));
    memcpy(now, W.reads, k * sizeof(*now));
    memmove(W.reads, W.reads + k, (W.n_reads - k) * sizeof(*now));
    W.n_reads -= k;
    if (W.lifo_reads)
        W.reads_reordered += k - 1;
    for (size_t i = 0; i < k; i++)
        read_complete(&now[W.lifo_reads ? k - 1 - i : i]);
    free(now);
}

/* ---- the fake device (ctx: fdev_t) ---------------------------------------------------- */

static void copy_lists(const struct iovec *dst, size_t n_dst, const struct iovec *src,
                       size_t n_src)
{
    size_t i = 0, j = 0, di = 0, sj = 0;
    while (i < n_dst && j < n_src) {
        size_t ld = dst[i].iov_len - di, ls = src[j].iov_len - sj, n = ld < ls ? ld : ls;
        memcpy((char *) dst[i].iov_base + di, (const char *) src[j].iov_base + sj, n);
        di += n;
        sj += n;
        if (di == dst[i].iov_len) {
            i++;
            di = 0;
        }
        if (sj == src[j].iov_len) {
            j++;
            sj = 0;
        }
    }
}

/* Runs up to max work items of rank's device (due ones only unless all). */
static long dev_run(int rank, int all, long max)
{
    fdev_t *dv = &W.r[rank].dev;
    long ran = 0;
    int due = 0;
    for (int qi = 0; qi < dv->nq && !due; qi++)
        due = dv->queues[qi]->head != NULL && (all || dv->queues[qi]->head->due <= W.tick);
    if (!due)
        return 0;
    unlock();
    for (int qi = 0; qi < dv->nq; qi++) {
        fqueue_t *q = dv->queues[qi];
        while (q->head != NULL && ran < max && (all || q->head->due <= W.tick)) {
            work_t *w = q->head;
            q->head = w->next;
            if (q->head == NULL)
                q->tail = NULL;
            if (w->is_acc)
                gdr_gpu_acc_apply(&w->args);
            else
                copy_lists(w->dst, w->n_dst, w->src, w->n_src);
            q->done++;
            ran++;
            free(w->dst);
            free(w->src);
            free(w);
        }
    }
    lock();
    return ran;
}

static long dev_pending(int rank)
{
    fdev_t *dv = &W.r[rank].dev;
    long n = 0;
    for (int qi = 0; qi < dv->nq; qi++)
        n += (long) (dv->queues[qi]->queued - dv->queues[qi]->done);
    return n;
}

/* The test holds rank's device (work waits) or lets it run at every tick. */
static void device_hold(int rank, int held)
{
    W.r[rank].dev.held = held;
}

/* Runs everything rank's device holds. */
static long device_run_all(int rank)
{
    return dev_run(rank, 1, 1L << 40);
}

static void dev_refuse(fdev_t *dv, const char *what)
{
    snprintf(dv->error, sizeof(dv->error), "fake device: %s", what);
    violate("rank %d's device: %s", dv->rank, what);
}

/* A piece the device is given: this rank's memory only (another rank's memory is on
 * another node); host memory that is not host_alloc'ed is allowed but counted. */
static int dev_piece_ok(fdev_t *dv, const void *p, size_t n, int must_address)
{
    mem_t *m;
    if (n == 0)
        return 1;
    m = mem_span(p, n);
    if (m == NULL) {
        if (mem_at(p) != NULL) {
            dev_refuse(dv, "a piece runs past the end of its allocation");
            return 0;
        }
        W.pageable_pieces++;
        return !must_address;
    }
    if (m->rank != dv->rank) {
        violate("rank %d's device was given rank %d's memory (%p): another node's", dv->rank,
                m->rank, p);
        return 0;
    }
    if (m->kind == M_HOST) {
        W.pageable_pieces++;
        if (must_address) {
            dev_refuse(dv, "the accumulate kernel was given pageable host memory");
            return 0;
        }
    }
    return 1;
}

static int d_host_alloc(void *c, size_t n, void **p)
{
    fdev_t *dv = c;
    size_t len = (n + 63) / 64 * 64;
    char *b = n > 0 ? aligned_alloc(64, len) : NULL;
    if (b == NULL) {
        snprintf(dv->error, sizeof(dv->error), "fake device: no %zu bytes of pinned memory", n);
        return GDR_RMA_NOMEM;
    }
    mem_add(dv->rank, M_PINNED, b, len, len);
    *p = b;
    return GDR_RMA_OK;
}

static int d_host_free(void *c, void *p)
{
    fdev_t *dv = c;
    mem_t *m = mem_at(p);
    if (m == NULL || m->base != p || m->kind != M_PINNED || m->rank != dv->rank) {
        dev_refuse(dv, "host_free of memory host_alloc did not give");
        return GDR_RMA_ERROR;
    }
    for (int qi = 0; qi < dv->nq; qi++)
        for (work_t *w = dv->queues[qi]->head; w != NULL; w = w->next)
            for (size_t k = 0; k < w->n_dst + w->n_src; k++) {
                const struct iovec *v = k < w->n_dst ? &w->dst[k] : &w->src[k - w->n_dst];
                if ((char *) v->iov_base < m->base + m->len
                    && (char *) v->iov_base + v->iov_len > m->base)
                    dev_refuse(dv, "host_free of memory that queued work still uses");
            }
    m->live = 0;
    free(p);
    return GDR_RMA_OK;
}

static int d_queue_new(void *c, void **queue)
{
    fdev_t *dv = c;
    if (dv->nq == QUEUE_MAX) {
        snprintf(dv->error, sizeof(dv->error), "fake device: out of queues");
        return GDR_RMA_ERROR;
    }
    fqueue_t *q = calloc(1, sizeof(*q));
    dv->queues[dv->nq++] = q;
    dv->queues_out++;
    *queue = q;
    return GDR_RMA_OK;
}

static int d_queue_free(void *c, void *queue)
{
    fdev_t *dv = c;
    fqueue_t *q = queue;
    if (q == NULL || q->freed) {
        dev_refuse(dv, "queue freed twice");
        return GDR_RMA_ERROR;
    }
    q->freed = 1;               /* queued work still runs; the memory goes at world end */
    dv->queues_out--;
    return GDR_RMA_OK;
}

static void enqueue(fdev_t *dv, fqueue_t *q, work_t *w)
{
    w->due = W.tick + dv->latency;
    if (q->tail != NULL)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    q->queued++;
}

static int d_copyv(void *c, void *queue, const struct iovec *dst, size_t n_dst,
                   const struct iovec *src, size_t n_src)
{
    fdev_t *dv = c;
    fqueue_t *q = queue;
    size_t to = 0, from = 0;
    int ok = 1;
    if (q == NULL || q->freed) {
        dev_refuse(dv, "copyv on a queue not (or no longer) made");
        return GDR_RMA_ERROR;
    }
    for (size_t i = 0; i < n_dst; i++) {
        to += dst[i].iov_len;
        ok &= dev_piece_ok(dv, dst[i].iov_base, dst[i].iov_len, 0);
    }
    for (size_t i = 0; i < n_src; i++) {
        from += src[i].iov_len;
        ok &= dev_piece_ok(dv, src[i].iov_base, src[i].iov_len, 0);
    }
    if (to != from) {
        dev_refuse(dv, "copyv's destination and source totals differ");
        return GDR_RMA_ERROR;
    }
    if (!ok)
        return GDR_RMA_ERROR;
    work_t *w = calloc(1, sizeof(*w));
    w->dst = malloc((n_dst + 1) * sizeof(*dst));
    w->src = malloc((n_src + 1) * sizeof(*src));
    memcpy(w->dst, dst, n_dst * sizeof(*dst));
    memcpy(w->src, src, n_src * sizeof(*src));
    w->n_dst = n_dst;
    w->n_src = n_src;
    enqueue(dv, q, w);
    dv->copies++;
    return GDR_RMA_OK;
}

static int d_acc(void *c, void *queue, const gdr_gpu_acc_args_t *args)
{
    fdev_t *dv = c;
    fqueue_t *q = queue;
    size_t n = args->count * gdr_gpu_type_size(args->type);
    if (q == NULL || q->freed) {
        dev_refuse(dv, "acc on a queue not (or no longer) made");
        return GDR_RMA_ERROR;
    }
    int op = args->op & GDR_GPU_ACC_OP_MASK;    /* (GDR_GPU_ACC_ATOMIC: the target's steps) */
    if (!gdr_gpu_acc_valid(op, args->type)) {
        dev_refuse(dv, "acc with an op the kernel does not define on the type");
        return GDR_RMA_ERROR;
    }
    mem_t *t = mem_span(args->target, n);
    if (t == NULL || t->kind != M_DEV || t->rank != dv->rank) {
        dev_refuse(dv, "acc's target is not this rank's device memory");
        return GDR_RMA_ERROR;
    }
    if ((op != GDR_GPU_OP_NO_OP && !dev_piece_ok(dv, args->origin, n, 1))
        || (args->result != NULL && !dev_piece_ok(dv, args->result, n, 1))
        || (op == GDR_GPU_OP_CSWAP && !dev_piece_ok(dv, args->compare, n, 1)))
        return GDR_RMA_ERROR;
    work_t *w = calloc(1, sizeof(*w));
    w->is_acc = 1;
    w->args = *args;
    enqueue(dv, q, w);
    dv->accs++;
    return GDR_RMA_OK;
}

static int d_mark(void *c, void *queue, void **mark)
{
    fdev_t *dv = c;
    fqueue_t *q = queue;
    if (q == NULL || q->freed) {
        dev_refuse(dv, "mark on a queue not (or no longer) made");
        return GDR_RMA_ERROR;
    }
    fmark_t *m = calloc(1, sizeof(*m));
    m->q = q;
    m->pos = q->queued;
    dv->marks_out++;
    *mark = m;
    return GDR_RMA_OK;
}

/* A mark polled over and over within one tick: a loop that waits for the device.  A
 * running device catches up then (it would finish by itself); a held one cannot. */
static int d_reached(void *c, void *mark)
{
    fdev_t *dv = c;
    fmark_t *m = mark;
    if (m->q->done >= m->pos)
        return 1;
    if (m->spin_tick != W.tick) {
        m->spin_tick = W.tick;
        m->spins = 0;
    }
    if (++m->spins == 100000) {
        if (dv->held) {
            printf("FAIL %s: rank %d busy-waits on a mark of its held device (progress must "
                   "never wait for the device)\n", section_name, dv->rank);
            printf("%d passed, %d failed\n", gdr_unit_passed, gdr_unit_failed + 1);
            exit(1);
        }
        W.catchups++;
        dev_run(dv->rank, 1, 1L << 40);
        return 1;
    }
    return 0;
}

static void d_mark_free(void *c, void *mark)
{
    fdev_t *dv = c;
    if (mark == NULL)
        return;
    free(mark);
    dv->marks_out--;
}

static uint64_t d_buffer_id(void *c, const void *ptr)
{
    (void) c;
    return dev_id(ptr);
}

static const char *d_error(const void *c)
{
    const fdev_t *dv = c;
    return dv->error;
}

/* ---- the fake host (ctx: the rank) and the world's tick ------------------------------ */

static twin_t *win_find(uint64_t id)
{
    for (int i = 0; i < WIN_MAX; i++)
        if (W.wins[i] != NULL && W.wins[i]->id == id)
            return W.wins[i];
    return NULL;
}

static void deliver(int s, int d, msg_t *m)
{
    gdr_rma_staged_hdr_t h;
    const uint8_t *pieces, *inl;
    const char *why = "";
    uint64_t id;
    uint32_t origin;
    if (gdr_rma_staged_decode(m->data, m->len, &h, &pieces, &inl, &why) == 0 && h.type < 8)
        W.delivered[h.type]++;
    else
        violate("rank %d sent rank %d a message the wire cannot decode (%s)", s, d, why);
    if (gdr_rma_staged_peek(m->data, m->len, &id, &origin) != 0)
        return;
    twin_t *tw = win_find(id);
    if (tw == NULL || tw->at[d].dw == NULL) {
        W.undeliverable++;
        return;
    }
    int rc = gdr_rma_staged_deliver(tw->at[d].dw, m->data, m->len);
    if (rc != GDR_RMA_OK)
        violate("gdr_rma_staged_deliver at rank %d returned %d (%s)", d, rc,
                gdr_rma_staged_error(W.r[d].d));
}

static void world_tick(void)
{
    unsigned snap[NR][NR];
    W.tick++;
    for (int s = 0; s < W.n; s++)
        for (int d = 0; d < W.n; d++)
            snap[s][d] = W.fifo[s][d].n;
    for (int s = 0; s < W.n; s++)
        for (int d = 0; d < W.n; d++)
            for (unsigned i = 0; i < snap[s][d]; i++) {
                fifo_t *f = &W.fifo[s][d];
                msg_t *m = f->head;
                f->head = m->next;
                if (f->head == NULL)
                    f->tail = NULL;
                f->n--;
                deliver(s, d, m);
                free(m);
            }
    reads_tick();
    for (int r = 0; r < W.n; r++)
        if (!W.r[r].dev.held)
            dev_run(r, 0, 1L << 40);
    for (int r = 0; r < W.n; r++) {
        int rc = gdr_rma_staged_progress(W.r[r].d);
        if (rc != GDR_RMA_OK)
            violate("gdr_rma_staged_progress at rank %d returned %d (%s)", r, rc,
                    gdr_rma_staged_error(W.r[r].d));
    }
}

static int h_progress(void *c)
{
    (void) c;
    if (W.budget == 0)
        return 1;
    if (W.budget > 0)
        W.budget--;
    world_tick();
    return 0;
}

static int h_query(void *c, void *host_win, int target, uint64_t addr,
                   gdr_rma_region_reply_t *out)
{
    (void) c, (void) host_win, (void) target, (void) addr;
    *out = (gdr_rma_region_reply_t) { 0 };
    return 0;
}

static int h_am_acc(void *c, void *host_win, int target)
{
    (void) c, (void) host_win, (void) target;
    return 0;
}

static int h_send(void *c, void *host_win, int target, const void *msg, size_t len)
{
    rank_t *r = c;
    twin_t *tw = host_win;
    uint64_t id;
    uint32_t origin;
    if (target < 0 || target >= W.n) {
        violate("rank %d sent a message to rank %d, which does not exist", r->id, target);
        return 1;
    }
    if (target == r->id)
        violate("rank %d sent itself a message through the host (self messages are the "
                "protocol's own business)", r->id);
    if (len > GDR_RMA_STAGED_MSG_MAX)
        violate("rank %d sent %zu bytes (more than GDR_RMA_STAGED_MSG_MAX)", r->id, len);
    if (gdr_rma_staged_peek(msg, len, &id, &origin) != 0 || tw == NULL || id != tw->id
        || origin != (uint32_t) r->id)
        violate("rank %d sent a message whose window id or origin is not its own", r->id);
    msg_t *m = malloc(sizeof(*m) + len);
    m->next = NULL;
    m->len = len;
    memcpy(m->data, msg, len);
    fifo_t *f = &W.fifo[r->id][target];
    if (f->tail != NULL)
        f->tail->next = m;
    else
        f->head = m;
    f->tail = m;
    f->n++;
    W.sent++;
    return 0;
}

/* Nothing in flight anywhere: no message, no read, no device work. */
static int quiet(void)
{
    for (int s = 0; s < W.n; s++)
        for (int d = 0; d < W.n; d++)
            if (W.fifo[s][d].n > 0)
                return 0;
    if (W.n_reads > 0)
        return 0;
    for (int r = 0; r < W.n; r++)
        if (dev_pending(r) > 0)
            return 0;
    return 1;
}

static int settle(void)
{
    for (int i = 0; i < 2000; i++) {
        if (quiet()) {
            for (int k = 0; k < 3; k++)
                world_tick();
            if (quiet())
                return 1;
        }
        world_tick();
    }
    return 0;
}

/* ---- worlds and windows ---------------------------------------------------------------- */

static int world_init(int n, size_t inline_max, size_t chunk, unsigned slots, unsigned latency,
                      int lifo_reads)
{
    memset(&W, 0, sizeof(W));
    W.n = n;
    W.budget = -1;
    W.lifo_reads = lifo_reads;
    W.cfg = (gdr_rma_staged_config_t) {.inline_max = inline_max,.chunk_bytes = chunk,
        .slots_per_pool = slots };
    for (int i = 0; i < n; i++) {
        rank_t *r = &W.r[i];
        char why[256] = "";
        r->id = i;
        r->dev.rank = i;
        r->dev.latency = latency;
        r->eng.net = (gdr_rma_transport_t) {.ctx = r,.put = f_put,.get = f_get,.writev = f_vec,
            .readv = f_vec,.atomicv = f_atomicv,.atomicv_max = f_atomicv_max,
            .sge_fits = f_sge_fits,.pin = f_pin,.unpin = f_unpin,.reg = f_reg,
            .dereg = f_dereg,.error = f_error };
        r->eng.host = (gdr_rma_host_t) {.ctx = r,.progress = h_progress,.query_region = h_query,
            .am_accumulates_pending = h_am_acc,.send_msg = h_send };
        r->seam = (gdr_rma_device_t) {.ctx = &r->dev,.host_alloc = d_host_alloc,
            .host_free = d_host_free,.queue_new = d_queue_new,.queue_free = d_queue_free,
            .copyv = d_copyv,.acc = d_acc,.mark = d_mark,.reached = d_reached,
            .mark_free = d_mark_free,.buffer_id = d_buffer_id,.error = d_error };
        r->d = gdr_rma_staged_new(&r->eng, &r->seam, &W.cfg, why, sizeof(why));
        if (r->d == NULL) {
            GDR_CHECK(0, "gdr_rma_staged_new for rank %d (inline %zu, chunk %zu, %u slots): %s", i,
                      inline_max, chunk, slots, why);
            W.n = i;
            return 0;
        }
        r->hbuf = host_buf(i, BUF_BYTES);
        r->dbuf = dev_alloc(i, BUF_BYTES);
    }
    return 1;
}

static unsigned char pattern(uint64_t id, int rank, size_t j)
{
    return (unsigned char) (j * 13 + (size_t) rank * 7 + id);
}

/* A window of size bytes at every rank, displacement unit `unit`; rank r's memory is
 * device memory when bit r of dev_mask is set.  Cards exchanged as MPI_Win_create's
 * allgather would. */
static twin_t *win_new(size_t size, uint64_t unit, unsigned dev_mask)
{
    twin_t *tw = calloc(1, sizeof(*tw));
    gdr_rma_card_t cards[NR];
    char why[256];
    tw->id = ++next_win_id;
    tw->size = size;
    tw->unit = unit;
    for (int r = 0; r < W.n; r++) {
        tw->at[r].device = (dev_mask >> r) & 1;
        tw->at[r].base = tw->at[r].device ? dev_alloc(r, size) : host_buf(r, size);
        tw->at[r].model = malloc(size);
        for (size_t j = 0; j < size; j++)
            tw->at[r].model[j] = pattern(tw->id, r, j);
        poke(tw->at[r].base, tw->at[r].model, size);
        gdr_rma_win_init(&tw->at[r].w, &W.r[r].eng, tw, W.n, r, 0, 1);
        for (int i = 0; i < W.n; i++)
            gdr_rma_win_set_peer(&tw->at[r].w, i, PEER0 + i);
        gdr_rma_win_set_policy(&tw->at[r].w, 1, 0, 1);
        gdr_rma_win_expose(&tw->at[r].w, tw->at[r].base, size, unit, GDR_RMA_EXPOSE_GPU
                           | (tw->at[r].device ? GDR_RMA_EXPOSE_IS_DEVICE : 0), &cards[r], why,
                           sizeof(why));
    }
    for (int r = 0; r < W.n; r++)
        for (int i = 0; i < W.n; i++)
            gdr_rma_win_set_card(&tw->at[r].w, i, &cards[i]);
    for (int r = 0; r < W.n; r++) {
        tw->at[r].dw = gdr_rma_staged_win_new(W.r[r].d, &tw->at[r].w, tw->id, tw->at[r].base, size,
                                           tw->at[r].device);
        if (tw->at[r].dw == NULL)
            GDR_CHECK(0, "gdr_rma_staged_win_new at rank %d", r);
    }
    for (int i = 0; i < WIN_MAX; i++)
        if (W.wins[i] == NULL) {
            W.wins[i] = tw;
            break;
        }
    return tw;
}

/* A dynamic window: nothing at creation, regions attached later. */
static twin_t *win_new_dynamic(void)
{
    twin_t *tw = calloc(1, sizeof(*tw));
    gdr_rma_card_t card = {.size = 0,.disp_unit = 1,.flags = GDR_RMA_CARD_GPU };
    tw->id = ++next_win_id;
    tw->dynamic = 1;
    tw->unit = 1;
    for (int r = 0; r < W.n; r++) {
        gdr_rma_win_init(&tw->at[r].w, &W.r[r].eng, tw, W.n, r, 1, 1);
        for (int i = 0; i < W.n; i++)
            gdr_rma_win_set_peer(&tw->at[r].w, i, PEER0 + i);
    }
    for (int r = 0; r < W.n; r++)
        for (int i = 0; i < W.n; i++)
            gdr_rma_win_set_card(&tw->at[r].w, i, &card);
    for (int r = 0; r < W.n; r++) {
        tw->at[r].dw = gdr_rma_staged_win_new(W.r[r].d, &tw->at[r].w, tw->id, NULL, 0, 0);
        if (tw->at[r].dw == NULL)
            GDR_CHECK(0, "gdr_rma_staged_win_new (dynamic) at rank %d", r);
    }
    for (int i = 0; i < WIN_MAX; i++)
        if (W.wins[i] == NULL) {
            W.wins[i] = tw;
            break;
        }
    return tw;
}

static void win_free(twin_t *tw)
{
    settle();
    for (int r = 0; r < W.n; r++) {
        W.budget = WAIT_TICKS;  /* it waits for its lent slots: bounded */
        if (tw->at[r].dw != NULL)
            gdr_rma_staged_win_free(tw->at[r].dw);
        W.budget = -1;
        tw->at[r].dw = NULL;
        gdr_rma_win_free(&tw->at[r].w);
        if (tw->at[r].base != NULL)
            buf_free(tw->at[r].base);
        free(tw->at[r].model);
    }
    for (int i = 0; i < WIN_MAX; i++)
        if (W.wins[i] == tw)
            W.wins[i] = NULL;
    free(tw);
}

/* First byte where rank r's window differs from its model, or -1. */
static long win_diff(twin_t *tw, int r)
{
    unsigned char *now = malloc(tw->size);
    long at = -1;
    peek(now, tw->at[r].base, tw->size);
    for (size_t j = 0; j < tw->size && at < 0; j++)
        if (now[j] != tw->at[r].model[j])
            at = (long) j;
    free(now);
    return at;
}

/* The model learns what the window holds over [off, off+n) (after an aborted operation). */
static void model_sync(twin_t *tw, int r, size_t off, size_t n)
{
    peek(tw->at[r].model + off, tw->at[r].base + off, n);
}

static int slots_out(int r)
{
    const gdr_rma_stage_t *st = gdr_rma_staged_stage(W.r[r].d);
    return st == NULL ? 0 : (int) (st->counts[GDR_RMA_STAGE_SEND].in_use
                                   + st->counts[GDR_RMA_STAGE_RECV].in_use);
}

/* Frees every window and context, then checks that each seam got back all it handed out. */
static void world_end(void)
{
    int quiet_ok = settle(), slots = 0, leaks = 0;
    char leak[200] = "";
    for (int r = 0; r < W.n; r++)
        slots += slots_out(r);
    GDR_CHECK(quiet_ok && slots == 0, "%s: at the end nothing is in flight and every staging "
              "slot is back in its pool (%d out)", section_name, slots);
    for (int i = 0; i < WIN_MAX; i++)
        if (W.wins[i] != NULL)
            win_free(W.wins[i]);
    for (int r = 0; r < W.n; r++) {
        gdr_rma_staged_free(W.r[r].d);
        W.r[r].d = NULL;
    }
    for (int r = 0; r < W.n; r++) {
        fdev_t *dv = &W.r[r].dev;
        int pinned = 0, regs = 0;
        for (int i = 0; i < MEM_MAX; i++)
            pinned += mem[i].live && mem[i].kind == M_PINNED && mem[i].rank == r;
        for (int i = 0; i < REG_MAX; i++)
            regs += W.regs[i].live && W.regs[i].rank == r;
        if (dv->marks_out || dv->queues_out || pinned || regs || W.r[r].pins_out) {
            leaks++;
            snprintf(leak, sizeof(leak), "rank %d: %d marks, %d queues, %d pinned blocks, %d "
                     "registrations, %d pins", r, dv->marks_out, dv->queues_out, pinned, regs,
                     W.r[r].pins_out);
        }
    }
    GDR_CHECK(leaks == 0, "%s: the contexts gave back every mark, queue, pinned block, "
              "registration and pin%s%s", section_name, leaks ? ": " : "", leak);
    GDR_CHECK(W.violations == 0, "%s: no misuse of the transport, host or device seams (%lu%s%s)",
              section_name, W.violations, W.violations ? "; first: " : "", W.violation);
    for (int r = 0; r < W.n; r++) {
        fdev_t *dv = &W.r[r].dev;
        for (int qi = 0; qi < dv->nq; qi++) {
            work_t *w = dv->queues[qi]->head;
            while (w != NULL) {
                work_t *next = w->next;
                free(w->dst);
                free(w->src);
                free(w);
                w = next;
            }
            free(dv->queues[qi]);
        }
        buf_free(W.r[r].hbuf);
        buf_free(W.r[r].dbuf);
        for (int d = 0; d < W.n; d++)
            while (W.fifo[r][d].head != NULL) {
                msg_t *m = W.fifo[r][d].head;
                W.fifo[r][d].head = m->next;
                free(m);
            }
    }
    free(W.reads);
    W.reads = NULL;
}

/* ---- operations ------------------------------------------------------------------------- */

typedef struct {
    int calls, status;
} done_t;

static void on_done(void *arg, int status, const void *landed, size_t len)
{
    done_t *d = arg;
    (void) landed, (void) len;
    d->calls++;
    d->status = status;
}

/* Waits at rank o for target t (-1: every target), remote or local completion, running at
 * most max_ticks ticks (then GDR_RMA_HOST_ERROR: it did not complete). */
static int wait_for(twin_t *tw, int o, int t, int local_only, long max_ticks)
{
    gdr_rma_win_t *w = &tw->at[o].w;
    W.budget = max_ticks;
    int rc = t < 0 ? gdr_rma_wait_all(&w->tracker, &W.r[o].eng, local_only)
        : gdr_rma_wait_target(&w->tracker, &W.r[o].eng, t, local_only);
    W.budget = -1;
    return rc;
}

/* gdr_rma_staged_start, whose own waits (a slot, inline device data) are bounded too. */
static int dstart(gdr_rma_staged_win_t *dw, const gdr_rma_access_t *a, gdr_rma_complete_fn fn,
                  void *arg)
{
    W.budget = WAIT_TICKS;
    int rc = gdr_rma_staged_start(dw, a, fn, arg);
    W.budget = -1;
    return rc;
}

static int flush(twin_t *tw, int o, int t)
{
    return wait_for(tw, o, t, 0, WAIT_TICKS);
}

static gdr_rma_staged_counts_t counts(int r)
{
    return *gdr_rma_staged_counts(W.r[r].d);
}

/* n bytes as k pieces (fewer when n has fewer elements) of whole elements, `gap` bytes
 * apart, from `start`; the piece count. */
static size_t split(struct iovec *v, size_t k, uintptr_t start, size_t n, size_t elem,
                    size_t gap)
{
    size_t elems = n / elem, np = 0;
    uintptr_t at = start;
    if (k > elems)
        k = elems;
    for (size_t i = 0; i < k; i++) {
        size_t e = elems / k + (i < elems % k);
        v[np++] = (struct iovec) {.iov_base = (void *) at,.iov_len = e * elem };
        at += e * elem + gap;
    }
    return np;
}

static size_t pieces_span(const struct iovec *v, size_t n)
{
    return (size_t) ((char *) v[n - 1].iov_base + v[n - 1].iov_len - (char *) v[0].iov_base);
}

/* Pieces' bytes to and from a stream (the user buffer may be device memory). */
static void scatter(const struct iovec *v, size_t n, const unsigned char *stream)
{
    for (size_t i = 0, pos = 0; i < n; pos += v[i].iov_len, i++)
        poke(v[i].iov_base, stream + pos, v[i].iov_len);
}

static void gather(const struct iovec *v, size_t n, unsigned char *stream)
{
    for (size_t i = 0, pos = 0; i < n; pos += v[i].iov_len, i++)
        peek(stream + pos, v[i].iov_base, v[i].iov_len);
}

/* 1 when [p, p+n) minus the pieces still holds `fill` (the gaps were not written). */
static int gaps_hold(const char *p, size_t n, const struct iovec *v, size_t nv, unsigned char fill)
{
    unsigned char *now = malloc(n);
    int ok = 1;
    peek(now, p, n);
    for (size_t j = 0; j < n; j++) {
        int inside = 0;
        for (size_t i = 0; i < nv; i++)
            inside |= p + j >= (char *) v[i].iov_base
                && p + j < (char *) v[i].iov_base + v[i].iov_len;
        ok &= inside || now[j] == fill;
    }
    free(now);
    return ok;
}

static unsigned long long chunks_of(size_t n)
{
    return n > W.cfg.inline_max ? (n + W.cfg.chunk_bytes - 1) / W.cfg.chunk_bytes : 0;
}

static const char *const kind_name[GDR_RMA_KINDS] = {
    "Put", "Get", "Accumulate", "Get_accumulate", "Fetch_and_op", "Compare_and_swap"
};

typedef struct {
    int cases, fails;
    char first[400];
} verdict_t;

static void fail(verdict_t *v, const char *fmt, ...)
{
    va_list ap;
    if (v->fails++ == 0) {
        va_start(ap, fmt);
        vsnprintf(v->first, sizeof(v->first), fmt, ap);
        va_end(ap);
    }
}

static unsigned seed;

/* One Put or Get of n bytes from rank o to rank t's window at disp 3: origin (result) in
 * device or host memory, contiguous or in 3 pieces; target contiguous or in 3 pieces.
 * Data checked in v, counters in vc. */
static void xfer_case(verdict_t *v, verdict_t *vc, gdr_rma_kind_t kind, twin_t *tw, int o,
                      int t, size_t n, int odev, int oscat, int tscat)
{
    rank_t *ro = &W.r[o];
    gdr_rma_win_t *w = &tw->at[o].w;
    int64_t disp = 3;
    size_t tbase = (size_t) disp * tw->unit;
    struct iovec tp[4], ov[4];
    char *obuf = (odev ? ro->dbuf : ro->hbuf) + 64;
    size_t ntp = split(tp, tscat ? 3 : 1, 0, n, 1, 5);
    size_t nov = split(ov, oscat ? 3 : 1, (uintptr_t) obuf, n, 1, 3);
    size_t ospan = pieces_span(ov, nov);
    unsigned char *stream = malloc(n), *got = malloc(n), *fill = malloc(ospan + 16);
    char desc[160];
    done_t dn = { 0 };

    w->tracker.failed = 0;      /* each case on its own: an earlier failure is reported */
    snprintf(desc, sizeof(desc), "%zu bytes, %s origin, %s target", n,
             oscat ? "scattered" : "contiguous", tscat ? "scattered" : "contiguous");
    v->cases++;
    seed++;
    if (kind == GDR_RMA_PUT) {
        for (size_t j = 0; j < n; j++)
            stream[j] = (unsigned char) (seed * 37 + j * 31 + 1);
        memset(fill, 0xdd, ospan + 16);
        poke(obuf, fill, ospan + 16);
        scatter(ov, nov, stream);
    } else {
        memset(fill, 0xee, ospan + 16);
        poke(obuf, fill, ospan + 16);
    }
    gdr_rma_staged_counts_t co = counts(o), ct = counts(t);
    gdr_rma_buf_t b = {.scattered = oscat,.device_id = odev ? dev_id(obuf) : 0,.addr = obuf,
        .iov = oscat ? ov : NULL,.n = oscat ? nov : 0
    };
    gdr_rma_access_t a = {.kind = kind,.target = t,.disp = disp,.tpieces = tp,.ntpieces = ntp,
        .tbytes = n,.t_span = pieces_span(tp, ntp)
    };
    if (kind == GDR_RMA_PUT)
        a.origin = b;
    else
        a.result = b;
    int rc = dstart(tw->at[o].dw, &a, on_done, &dn);
    if (rc != GDR_RMA_OK) {
        fail(v, "%s: start returned %d (%s)", desc, rc, gdr_rma_staged_error(ro->d));
        goto out;
    }
    if (w->tracker.remote[t] != 1 && dn.calls == 0)
        fail(v, "%s: after start the tracker counts %lu operations to rank %d, not 1", desc,
             w->tracker.remote[t], t);
    rc = flush(tw, o, t);
    if (rc != GDR_RMA_OK || dn.calls != 1 || dn.status != 0) {
        fail(v, "%s: flush returned %d%s, completion ran %d times with status %d (%s)", desc,
             rc, rc == GDR_RMA_HOST_ERROR ? " (deadlock: it never completed)" : "", dn.calls,
             dn.status, gdr_rma_staged_error(ro->d));
        goto out;
    }
    if (w->tracker.remote[t] != 0 || w->tracker.local[t] != 0)
        fail(v, "%s: after flush the tracker still counts %lu remote, %lu local", desc,
             w->tracker.remote[t], w->tracker.local[t]);
    if (kind == GDR_RMA_PUT)
        for (size_t i = 0, pos = 0; i < ntp; pos += tp[i].iov_len, i++)
            memcpy(tw->at[t].model + tbase + (uintptr_t) tp[i].iov_base, stream + pos,
                   tp[i].iov_len);
    else {
        for (size_t i = 0, pos = 0; i < ntp; pos += tp[i].iov_len, i++)
            memcpy(stream + pos, tw->at[t].model + tbase + (uintptr_t) tp[i].iov_base,
                   tp[i].iov_len);
        gather(ov, nov, got);
        if (memcmp(got, stream, n) != 0)
            fail(v, "%s: the result differs from the window's bytes", desc);
        if (!gaps_hold(obuf, ospan + 16, ov, nov, 0xee))
            fail(v, "%s: the get wrote between or after the result's pieces", desc);
    }
    long at = win_diff(tw, t);
    if (at >= 0)
        fail(v, "%s: rank %d's window differs from the model at byte %ld (%s)", desc, t, at,
             kind == GDR_RMA_PUT ? "put" : "a get changed the window");
    gdr_rma_staged_counts_t co2 = counts(o), ct2 = counts(t);
    unsigned long long ch = chunks_of(n);
    if (co2.started[kind] != co.started[kind] + 1 || ct2.served[kind] != ct.served[kind] + 1)
        fail(vc, "%s %s: started +%llu at the origin, served +%llu at the target (1 each)",
             kind_name[kind], desc, co2.started[kind] - co.started[kind],
             ct2.served[kind] - ct.served[kind]);
    if (kind == GDR_RMA_PUT && (co2.chunks_staged - co.chunks_staged != ch
                                || ct2.chunks_read - ct.chunks_read != ch))
        fail(vc, "Put %s: %llu chunks staged, %llu read (%llu each expected)", desc,
             co2.chunks_staged - co.chunks_staged, ct2.chunks_read - ct.chunks_read, ch);
    unsigned long long rch = (n + W.cfg.chunk_bytes - 1) / W.cfg.chunk_bytes;
    if (kind == GDR_RMA_GET && co2.results_read - co.results_read != rch)
        fail(vc, "Get %s: %llu result chunks landed (%llu expected)", desc,
             co2.results_read - co.results_read, rch);
  out:
    free(stream);
    free(got);
    free(fill);
}

/* Put and Get at sizes 1, inline_max, inline_max + 1, chunk, chunk + 1 and many chunks,
 * every layout, from device and host buffers, to windows in device and host memory. */
static void xfer_matrix(const char *mode, twin_t *devw, twin_t *hostw, int o, int t)
{
    size_t im = W.cfg.inline_max, ch = W.cfg.chunk_bytes;
    size_t sizes[6] = { 1, im, im + 1, ch, ch + 1, 7 * ch + 13 };
    verdict_t vc = { 0 };
    unsigned long long refused = 0;
    for (int r = 0; r < W.n; r++)
        refused += counts(r).refused;
    for (int k = 0; k < 2; k++) {
        gdr_rma_kind_t kind = k == 0 ? GDR_RMA_PUT : GDR_RMA_GET;
        for (int wi = 0; wi < 2; wi++) {
            twin_t *tw = wi == 0 ? devw : hostw;
            if (tw == NULL)
                continue;
            for (int odev = 1; odev >= 0; odev--) {
                verdict_t v = { 0 };
                for (int sc = 0; sc < 4; sc++)
                    for (int si = 0; si < 6; si++)
                        if (sizes[si] > 0 && (si == 0 || sizes[si] != sizes[si - 1]))
                            xfer_case(&v, &vc, kind, tw, o, t, sizes[si], odev, sc & 1, sc >> 1);
                GDR_CHECK(v.fails == 0, "%s: %s %s %s, rank %d -> rank %d's %s window: sizes 1 "
                          "to %zu, contiguous and scattered both sides (%d of %d cases "
                          "failed%s%s)", mode, kind_name[kind],
                          kind == GDR_RMA_PUT ? "from a" : "into a", odev ? "device buffer" :
                          "host buffer", o, t, wi == 0 ? "device" : "host", sizes[5], v.fails,
                          v.cases, v.fails ? "; first: " : "", v.first);
            }
        }
    }
    for (int r = 0; r < W.n; r++)
        refused -= counts(r).refused;
    GDR_CHECK(refused == 0, "%s: no message refused anywhere in that traffic (%llu)", mode,
              -refused);
    GDR_CHECK(vc.fails == 0, "%s: counts: each operation started once and served once; chunks "
              "staged and read = ceil(bytes / chunk) above inline_max, else 0; result chunks "
              "landed (inline or read) = ceil(bytes / chunk) (%d wrong%s%s)", mode, vc.fails,
              vc.fails ? "; first: " : "", vc.first);
}

/* ---- accumulates --------------------------------------------------------------------------- */

static void fill_vals(int type, void *buf, size_t count, unsigned s)
{
    for (size_t i = 0; i < count; i++) {
        long v = (long) ((s * 7 + i * 3) % 97) - 40;
        switch (type) {
            case GDR_GPU_T_INT16:
                ((int16_t *) buf)[i] = (int16_t) v;
                break;
            case GDR_GPU_T_INT32:
                ((int32_t *) buf)[i] = (int32_t) v;
                break;
            case GDR_GPU_T_INT64:
                ((int64_t *) buf)[i] = (int64_t) v * 1000003;
                break;
            case GDR_GPU_T_DOUBLE:
                ((double *) buf)[i] = (double) v * 0.25;
                break;
            default:
                memset((char *) buf + i * gdr_gpu_type_size(type), (int) v,
                       gdr_gpu_type_size(type));
        }
    }
}

static gdr_rma_acc_op_t nic_op(int op)
{
    return op == GDR_GPU_OP_SUM ? GDR_RMA_ACC_SUM : op == GDR_GPU_OP_NO_OP ? GDR_RMA_ACC_NO_OP
        : op == GDR_GPU_OP_CSWAP ? GDR_RMA_ACC_CSWAP : GDR_RMA_ACC_OTHER;
}

typedef struct {
    const char *name;
    gdr_rma_kind_t kind;
    int op, type;
    size_t count;
    int tscat, rscat, cas_equal;
} acc_spec_t;

/* Fills an access for spec c of rank o's buffers at offset boff (device or host) to rank
 * t at disp 2; *stream receives the origin's values, cmp the compare value. */
typedef struct {
    gdr_rma_access_t a;
    struct iovec tp[4], rv[4];
    size_t ntp, nrv, n, es;
    char *ob, *rb, *cb;
    unsigned char ostream[512], cmp[16];
} acc_op_t;

static void acc_build(acc_op_t *x, const acc_spec_t *c, twin_t *tw, int o, int t, int odev,
                      size_t boff)
{
    rank_t *ro = &W.r[o];
    char *buf = (odev ? ro->dbuf : ro->hbuf) + boff;
    unsigned char fill[600];
    int has_origin = c->op != GDR_GPU_OP_NO_OP, has_result = c->kind != GDR_RMA_ACC;
    memset(x, 0, sizeof(*x));
    x->es = gdr_gpu_type_size(c->type);
    x->n = c->count * x->es;
    x->ob = buf;
    x->rb = buf + 1024;
    x->cb = buf + 2048;
    x->ntp = split(x->tp, c->tscat ? 3 : 1, 0, x->n, x->es, 2 * x->es);
    x->nrv = split(x->rv, c->rscat ? 3 : 1, (uintptr_t) x->rb, x->n, x->es, x->es);
    fill_vals(c->type, x->ostream, c->count, ++seed);
    poke(x->ob, x->ostream, x->n);
    memset(fill, 0xee, sizeof(fill));
    poke(x->rb, fill, sizeof(fill));
    if (c->kind == GDR_RMA_CAS) {
        memcpy(x->cmp, tw->at[t].model + 2 * tw->unit, x->es);
        if (!c->cas_equal)
            x->cmp[0] ^= 1;
        poke(x->cb, x->cmp, x->es);
    }
    uint64_t id = odev ? dev_id(buf) : 0;
    x->a = (gdr_rma_access_t) {.kind = c->kind,.target = t,.disp = 2,.tpieces = x->tp,
        .ntpieces = x->ntp,.tbytes = x->n,.t_span = pieces_span(x->tp, x->ntp),
        .op = nic_op(c->op),.int64_elements = c->type == GDR_GPU_T_INT64,
        .gpu_op = c->op,.gpu_type = c->type
    };
    if (has_origin)
        x->a.origin = (gdr_rma_buf_t) {.device_id = id,.addr = x->ob };
    if (has_result)
        x->a.result = c->rscat ? (gdr_rma_buf_t) {.scattered = 1,.device_id = id,.addr = x->rb,
            .iov = x->rv,.n = x->nrv } : (gdr_rma_buf_t) {.device_id = id,.addr = x->rb };
    if (c->kind == GDR_RMA_CAS) {
        x->a.compare = x->cb;
        x->a.compare_device_id = id;
    }
}

/* Applies x to rank t's model with the same kernel; the expected results in res. */
static void acc_model(const acc_op_t *x, const acc_spec_t *c, twin_t *tw, int t,
                      unsigned char *res)
{
    size_t tbase = 2 * tw->unit;
    for (size_t i = 0, pos = 0; i < x->ntp; pos += x->tp[i].iov_len, i++) {
        gdr_gpu_acc_args_t g = {.target = tw->at[t].model + tbase + (uintptr_t) x->tp[i].iov_base,
            .origin = c->op == GDR_GPU_OP_NO_OP ? NULL : x->ostream + pos,
            .result = c->kind == GDR_RMA_ACC ? NULL : res + pos,
            .compare = c->kind == GDR_RMA_CAS ? x->cmp : NULL,
            .count = x->tp[i].iov_len / x->es,.op = c->op,.type = c->type
        };
        gdr_gpu_acc_apply(&g);
    }
}

static void acc_case(verdict_t *v, const acc_spec_t *c, twin_t *tw, int o, int t, int odev)
{
    acc_op_t x;
    unsigned char res[512], got[512];
    done_t dn = { 0 };
    acc_build(&x, c, tw, o, t, odev, 4096);
    memset(res, 0, sizeof(res));
    tw->at[o].w.tracker.failed = 0;     /* each case on its own */
    v->cases++;
    int rc = dstart(tw->at[o].dw, &x.a, on_done, &dn);
    if (rc != GDR_RMA_OK) {
        fail(v, "%s buffers, %s window: start returned %d (%s)", odev ? "device" : "host",
             tw->at[t].device ? "device" : "host", rc, gdr_rma_staged_error(W.r[o].d));
        return;
    }
    rc = flush(tw, o, t);
    if (rc != GDR_RMA_OK || dn.calls != 1 || dn.status != 0) {
        fail(v, "%s buffers, %s window: flush returned %d, completion ran %d times with status "
             "%d (%s)", odev ? "device" : "host", tw->at[t].device ? "device" : "host", rc,
             dn.calls, dn.status, gdr_rma_staged_error(W.r[o].d));
        return;
    }
    acc_model(&x, c, tw, t, res);
    long at = win_diff(tw, t);
    if (at >= 0)
        fail(v, "%s buffers, %s window: the window differs from the kernel's answer at byte "
             "%ld", odev ? "device" : "host", tw->at[t].device ? "device" : "host", at);
    if (c->kind != GDR_RMA_ACC) {
        gather(x.rv, x.nrv, got);
        if (memcmp(got, res, x.n) != 0)
            fail(v, "%s buffers, %s window: the results differ from the target's values "
                 "before", odev ? "device" : "host", tw->at[t].device ? "device" : "host");
        if (!gaps_hold(x.rb, 600, x.rv, x.nrv, 0xee))
            fail(v, "%s buffers, %s window: results written outside the result's pieces",
                 odev ? "device" : "host", tw->at[t].device ? "device" : "host");
    }
}

/* ---- sections ----------------------------------------------------------------------------- */

static void test_config(void)
{
    section("configuration");
    if (!world_init(1, 32, 64, 1, 0, 0))
        return;
    struct {
        gdr_rma_staged_config_t cfg;
        const char *what;
    } bad[] = {
        {{32, 100, 2}, "a chunk of 100 bytes (not a power of two)"},
        {{16, 32, 2}, "a chunk of 32 bytes (below 64)"},
        {{32, 64, 0}, "no slots"},
        {{128, 64, 2}, "inline_max 128 above the 64-byte chunk"},
        {{GDR_RMA_STAGED_INLINE_MAX + 1, 65536, 2}, "inline_max above GDR_RMA_STAGED_INLINE_MAX"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char why[256] = "";
        gdr_rma_staged_t *d = gdr_rma_staged_new(&W.r[0].eng, &W.r[0].seam, &bad[i].cfg, why,
                                           sizeof(why));
        GDR_CHECK(d == NULL && why[0] != '\0', "config: %s is refused (%s)", bad[i].what, why);
        if (d != NULL)
            gdr_rma_staged_free(d);
    }
    char why[256] = "";
    gdr_rma_staged_config_t never = {.inline_max = 0,.chunk_bytes = 64,.slots_per_pool = 1 };
    gdr_rma_staged_t *d = gdr_rma_staged_new(&W.r[0].eng, &W.r[0].seam, &never, why, sizeof(why));
    GDR_CHECK(d != NULL && gdr_rma_staged_stage(d) == NULL, "config: inline_max 0 (never inline) "
              "is valid, and no slots are allocated before the first operation (%s)", why);
    if (d != NULL)
        gdr_rma_staged_free(d);
    world_end();
}

/* The Put/Get matrix under three configurations. */
static void test_matrix(void)
{
    section("Put/Get, 1 slot per pool, chunk 64, inline 32, reads in order");
    if (world_init(3, 32, 64, 1, 0, 0)) {
        twin_t *devw = win_new(4096, 8, 0x7), *hostw = win_new(4096, 4, 0);
        xfer_matrix("1 slot", devw, hostw, 0, 1);
        world_end();
    }

    section("Put/Get, 2 slots per pool, reads completed newest first, device latency 3 ticks");
    if (world_init(3, 32, 64, 2, 3, 1)) {
        twin_t *devw = win_new(4096, 8, 0x7), *hostw = win_new(4096, 4, 0);
        xfer_matrix("out of order", devw, hostw, 0, 1);
        xfer_matrix("out of order, 2 -> 0", devw, NULL, 2, 0);
        GDR_CHECK(W.reads_reordered > 0, "out of order: reads really completed out of order "
                  "(%lu reordered of %lu)", W.reads_reordered, W.reads_done);
        world_end();
    }

    section("Put/Get, chunk 256, never inline, 2 slots per pool");
    if (world_init(2, 0, 256, 2, 1, 0)) {
        twin_t *devw = win_new(4096, 8, 0x3), *hostw = win_new(4096, 8, 0);
        xfer_matrix("never inline", devw, hostw, 1, 0);
        world_end();
    }

    section("Put/Get to this rank's own window (messages to self stay in the protocol)");
    if (world_init(2, 32, 64, 1, 1, 0)) {
        twin_t *devw = win_new(4096, 8, 0x3), *hostw = win_new(4096, 8, 0);
        xfer_matrix("self", devw, hostw, 1, 1);
        world_end();
    }
}

/* An indexed target whose pieces are not in address order. */
static void test_indexed(void)
{
    section("indexed target, pieces out of address order");
    if (!world_init(2, 32, 64, 1, 0, 0))
        return;
    twin_t *tw = win_new(1024, 1, 0x3);
    struct iovec tp[3] = {
        {.iov_base = (void *) 300,.iov_len = 70}, {.iov_base = (void *) 7,.iov_len = 10},
        {.iov_base = (void *) 150,.iov_len = 1}
    };
    unsigned char src[81], got[81];
    for (int i = 0; i < 81; i++)
        src[i] = (unsigned char) (200 - i);
    poke(W.r[0].dbuf, src, 81);
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.disp = 100,.tpieces = tp,
        .ntpieces = 3,.tbytes = 81,.origin = {.device_id = dev_id(W.r[0].dbuf),
                                               .addr = W.r[0].dbuf}
    };
    int rc = dstart(tw->at[0].dw, &put, NULL, NULL);
    rc = rc ? rc : flush(tw, 0, 1);
    memcpy(tw->at[1].model + 400, src, 70);
    memcpy(tw->at[1].model + 107, src + 70, 10);
    tw->at[1].model[250] = src[80];
    GDR_CHECK(rc == GDR_RMA_OK && win_diff(tw, 1) < 0, "indexed put (offsets 300, 7, 150 from "
              "disp 100): each piece filled in list order, nothing else touched (rc %d)", rc);
    gdr_rma_access_t get = put;
    get.kind = GDR_RMA_GET;
    get.origin = (gdr_rma_buf_t) { 0 };
    get.result = (gdr_rma_buf_t) {.device_id = dev_id(W.r[0].dbuf),.addr = W.r[0].dbuf + 512 };
    rc = dstart(tw->at[0].dw, &get, NULL, NULL);
    rc = rc ? rc : flush(tw, 0, 1);
    peek(got, W.r[0].dbuf + 512, 81);
    GDR_CHECK(rc == GDR_RMA_OK && memcmp(got, src, 81) == 0, "indexed get: the pieces come back "
              "in list order (rc %d)", rc);
    world_end();
}

/* A target of more pieces than one request carries (GDR_RMA_STAGED_PIECES_MAX) goes as
 * several requests in order, each of whole elements with its share of the origin and
 * result, whose pieces (10 bytes every 12) straddle the parts' boundaries; one completion. */
#define MANY 1100               /* int32 target pieces, 4 bytes every 12: 3 requests */

/* The result pieces (10 bytes every 12 from rank 0's device buffer + 8192) as one array. */
static void many_results(int32_t *out, size_t npieces)
{
    unsigned char img[6000];
    peek(img, W.r[0].dbuf + 8192, sizeof(img));
    for (size_t i = 0; i < npieces; i++)
        memcpy((char *) out + 10 * i, img + 12 * i, 10);
}

static void test_many_pieces(void)
{
    section("a target of 1100 pieces: 3 requests, in order, one completion");
    if (!world_init(2, 32, 256, 2, 1, 0))
        return;
    twin_t *tw = win_new(16384, 1, 0x3);
    static struct iovec tp[MANY], op[MANY], rp[MANY];
    const size_t bytes = MANY * 4, on = bytes / 10;
    for (size_t i = 0; i < MANY; i++)
        tp[i] = (struct iovec) {.iov_base = (void *) (uintptr_t) (12 * i),.iov_len = 4 };
    for (size_t i = 0; i < on; i++) {
        op[i] = (struct iovec) {.iov_base = W.r[0].dbuf + 12 * i,.iov_len = 10 };
        rp[i] = (struct iovec) {.iov_base = W.r[0].dbuf + 8192 + 12 * i,.iov_len = 10 };
    }
    int32_t src[MANY], got[MANY], want[MANY];
    unsigned char img[6000];
    for (size_t i = 0; i < MANY; i++)
        src[i] = (int32_t) i * 7 - 3000;
    memset(img, 0, sizeof(img));
    for (size_t i = 0; i < on; i++)
        memcpy(img + 12 * i, (char *) src + 10 * i, 10);
    poke(W.r[0].dbuf, img, sizeof(img));
    gdr_rma_win_t *w = &tw->at[0].w;
    gdr_rma_buf_t origin = {.scattered = 1,.iov = op,.n = on,.device_id = dev_id(W.r[0].dbuf) };
    gdr_rma_buf_t result = {.scattered = 1,.iov = rp,.n = on,.device_id = dev_id(W.r[0].dbuf) };

    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.disp = 16,.tpieces = tp,
        .ntpieces = MANY,.tbytes = bytes,.origin = origin };
    done_t dn = { 0 };
    gdr_rma_staged_counts_t c0 = counts(0);
    int rc = dstart(tw->at[0].dw, &put, on_done, &dn);
    int frc = rc ? rc : flush(tw, 0, 1);
    for (size_t i = 0; i < MANY; i++)
        memcpy(tw->at[1].model + 16 + 12 * i, &src[i], 4);
    GDR_CHECK(rc == GDR_RMA_OK && frc == GDR_RMA_OK && win_diff(tw, 1) < 0 && dn.calls == 1
              && dn.status == GDR_RMA_OK && counts(0).started[GDR_RMA_PUT]
              - c0.started[GDR_RMA_PUT] == 3 && w->tracker.remote[1] == 0,
              "Put to 1100 pieces from 440 origin pieces: every piece written, nothing else, "
              "as 3 requests, completed once (rc %d, flush %d, first wrong byte %ld, %d "
              "completions, %llu requests)", rc, frc, win_diff(tw, 1), dn.calls,
              counts(0).started[GDR_RMA_PUT] - c0.started[GDR_RMA_PUT]);

    gdr_rma_access_t get = put;
    get.kind = GDR_RMA_GET;
    get.origin = (gdr_rma_buf_t) { 0 };
    get.result = result;
    dn = (done_t) { 0 };
    rc = dstart(tw->at[0].dw, &get, on_done, &dn);
    frc = rc ? rc : flush(tw, 0, 1);
    many_results(got, on);
    GDR_CHECK(rc == GDR_RMA_OK && frc == GDR_RMA_OK && dn.calls == 1
              && memcmp(got, src, bytes) == 0, "Get of 1100 pieces into 440 result pieces: "
              "the values in order, completed once (rc %d, flush %d, %d completions)", rc, frc,
              dn.calls);

    gdr_rma_access_t acc = put;
    acc.kind = GDR_RMA_ACC;
    acc.op = GDR_RMA_ACC_OTHER;
    acc.gpu_op = GDR_GPU_OP_SUM;
    acc.gpu_type = GDR_GPU_T_INT32;
    dn = (done_t) { 0 };
    rc = dstart(tw->at[0].dw, &acc, on_done, &dn);
    frc = rc ? rc : flush(tw, 0, 1);
    for (size_t i = 0; i < MANY; i++) {
        want[i] = 2 * src[i];
        memcpy(tw->at[1].model + 16 + 12 * i, &want[i], 4);
    }
    GDR_CHECK(rc == GDR_RMA_OK && frc == GDR_RMA_OK && dn.calls == 1 && win_diff(tw, 1) < 0,
              "Accumulate SUM int32 to 1100 pieces: each element summed once (rc %d, flush "
              "%d, %d completions, first wrong byte %ld)", rc, frc, dn.calls, win_diff(tw, 1));

    gdr_rma_access_t gacc = acc;
    gacc.kind = GDR_RMA_GET_ACC;
    gacc.result = result;
    dn = (done_t) { 0 };
    rc = dstart(tw->at[0].dw, &gacc, on_done, &dn);
    frc = rc ? rc : flush(tw, 0, 1);
    many_results(got, on);
    for (size_t i = 0; i < MANY; i++) {
        int32_t v = want[i] + src[i];
        memcpy(tw->at[1].model + 16 + 12 * i, &v, 4);
    }
    GDR_CHECK(rc == GDR_RMA_OK && frc == GDR_RMA_OK && dn.calls == 1
              && memcmp(got, want, bytes) == 0 && win_diff(tw, 1) < 0,
              "Get_accumulate SUM int32 on 1100 pieces: results = the target before, the "
              "target summed (rc %d, flush %d, %d completions)", rc, frc, dn.calls);

    /* refused with nothing sent: an origin short of the operation's bytes, and int64
     * elements that the first 512 pieces (4 bytes, then 8s) never end */
    unsigned long sent = W.sent;
    gdr_rma_access_t shrt = put;
    shrt.origin.n = on - 1;
    dn = (done_t) { 0 };
    rc = dstart(tw->at[0].dw, &shrt, on_done, &dn);
    GDR_CHECK(rc == GDR_RMA_ERROR && W.sent == sent && dn.calls == 0
              && w->tracker.remote[1] == 0, "Put from an origin 10 bytes short: refused at the "
              "call, no message (rc %d, %lu messages): %s", rc, W.sent - sent,
              gdr_rma_staged_error(W.r[0].d));
    static struct iovec odd[600];
    odd[0] = (struct iovec) {.iov_base = 0,.iov_len = 4 };
    for (size_t i = 1; i < 599; i++)
        odd[i] = (struct iovec) {.iov_base = (void *) (uintptr_t) (16 * i),.iov_len = 8 };
    odd[599] = (struct iovec) {.iov_base = (void *) (uintptr_t) (16 * 599),.iov_len = 4 };
    gdr_rma_access_t mis = {.kind = GDR_RMA_ACC,.target = 1,.tpieces = odd,.ntpieces = 600,
        .tbytes = 4 + 598 * 8 + 4,.op = GDR_RMA_ACC_OTHER,.gpu_op = GDR_GPU_OP_SUM,
        .gpu_type = GDR_GPU_T_INT64,.origin = {.device_id = dev_id(W.r[0].dbuf),
                                               .addr = W.r[0].dbuf }
    };
    rc = dstart(tw->at[0].dw, &mis, on_done, &dn);
    GDR_CHECK(rc == GDR_RMA_ERROR && W.sent == sent && dn.calls == 0
              && strstr(gdr_rma_staged_error(W.r[0].d), "whole element") != NULL
              && win_diff(tw, 1) < 0, "Accumulate int64 whose first 512 target pieces end "
              "inside an element: refused at the call, no message (rc %d): %s", rc,
              gdr_rma_staged_error(W.r[0].d));
    world_end();
}

/* Zero bytes complete at once; bad arguments are refused at the call. */
static void test_trivial(void)
{
    section("zero bytes and bad arguments");
    if (!world_init(2, 32, 64, 1, 0, 0))
        return;
    twin_t *tw = win_new(1024, 8, 0x3);
    gdr_rma_win_t *w = &tw->at[0].w;
    for (int k = 0; k < 2; k++) {
        done_t dn = { 0 };
        unsigned long sent = W.sent;
        gdr_rma_access_t a = {.kind = k ? GDR_RMA_GET : GDR_RMA_PUT,.target = 1,.disp = 1,
            .tbytes = 0
        };
        if (k)
            a.result = (gdr_rma_buf_t) {.device_id = dev_id(W.r[0].dbuf),.addr = W.r[0].dbuf };
        else
            a.origin = (gdr_rma_buf_t) {.device_id = dev_id(W.r[0].dbuf),.addr = W.r[0].dbuf };
        int rc = dstart(tw->at[0].dw, &a, on_done, &dn);
        GDR_CHECK(rc == GDR_RMA_OK && dn.calls == 1 && dn.status == 0
                  && w->tracker.remote[1] == 0 && w->tracker.local[1] == 0 && W.sent == sent,
                  "%s of 0 bytes: complete when start returns, nothing counted, no message "
                  "(rc %d, %d completions, %lu messages)", kind_name[a.kind], rc, dn.calls,
                  W.sent - sent);
    }
    struct iovec tp = {.iov_base = 0,.iov_len = 8 };
    double d8 = 1.0;
    done_t dn = { 0 };
    gdr_rma_access_t band = {.kind = GDR_RMA_ACC,.target = 1,.tpieces = &tp,.ntpieces = 1,
        .tbytes = 8,.op = GDR_RMA_ACC_OTHER,.gpu_op = GDR_GPU_OP_BAND,
        .gpu_type = GDR_GPU_T_DOUBLE,.origin = {.addr = &d8 }
    };
    int rc = dstart(tw->at[0].dw, &band, on_done, &dn);
    int frc = flush(tw, 0, 1);
    GDR_CHECK((rc == GDR_RMA_ERROR && w->tracker.remote[1] == 0 && dn.calls == 0)
              || (rc == GDR_RMA_OK && frc == GDR_RMA_ERROR),
              "Accumulate BAND on doubles (undefined): refused at the call, or failed by the "
              "target (start %d, flush %d: %s)", rc, frc, gdr_rma_staged_error(W.r[0].d));
    GDR_CHECK(win_diff(tw, 1) < 0, "Accumulate BAND on doubles: the window is untouched");
    w->tracker.failed = 0;
    gdr_rma_access_t far = band;
    far.target = 5;
    rc = dstart(tw->at[0].dw, &far, NULL, NULL);
    GDR_CHECK(rc == GDR_RMA_ERROR, "a target rank outside the window is refused at the call "
              "(%d)", rc);
    world_end();
}

/* Puts one way and gets the other way at once, one slot per pool: no deadlock. */
static void test_both_ways(void)
{
    section("puts and gets both ways at once, 1 slot per pool");
    if (!world_init(2, 32, 64, 1, 1, 0))
        return;
    twin_t *tw = win_new(4096, 1, 0x3);
    size_t n = 7 * 64 + 13;
    done_t dn[2][4];
    memset(dn, 0, sizeof(dn));
    unsigned char src[2][2][600];
    for (int r = 0; r < 2; r++) {
        int t = 1 - r;
        for (int k = 0; k < 2; k++) {
            for (size_t j = 0; j < n; j++)
                src[r][k][j] = (unsigned char) (r * 100 + k * 50 + j * 3);
            char *ob = W.r[r].dbuf + k * 1024;
            poke(ob, src[r][k], n);
            struct iovec tp = {.iov_base = 0,.iov_len = n };
            gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = t,.disp = k * 1024,
                .tpieces = &tp,.ntpieces = 1,.tbytes = n,
                .origin = {.device_id = dev_id(ob),.addr = ob }
            };
            gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = t,.disp = 2048 + k * 512,
                .tpieces = &tp,.ntpieces = 1,.tbytes = n,
                .result = {.device_id = dev_id(W.r[r].dbuf),.addr = W.r[r].dbuf + 4096 + k * 1024 }
            };
            GDR_CHECK(dstart(tw->at[r].dw, &put, on_done, &dn[r][2 * k]) == GDR_RMA_OK
                      && dstart(tw->at[r].dw, &get, on_done, &dn[r][2 * k + 1])
                      == GDR_RMA_OK, "both ways: rank %d starts put and get %d of 2", r, k + 1);
        }
    }
    int rc0 = flush(tw, 0, -1), rc1 = flush(tw, 1, -1), all = 1;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 4; i++)
            all &= dn[r][i].calls == 1 && dn[r][i].status == 0;
    GDR_CHECK(rc0 == GDR_RMA_OK && rc1 == GDR_RMA_OK && all, "both ways: every operation "
              "completes, no deadlock over the two slots (flush %d, %d)", rc0, rc1);
    int ok = 1;
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 2; k++) {
            unsigned char got[600];
            int t = 1 - r;
            memcpy(tw->at[t].model + k * 1024, src[r][k], n);
            peek(got, W.r[r].dbuf + 4096 + k * 1024, n);
            ok &= memcmp(got, tw->at[t].model + 2048 + k * 512, n) == 0;
        }
    GDR_CHECK(ok && win_diff(tw, 0) < 0 && win_diff(tw, 1) < 0, "both ways: puts landed, gets "
              "read the untouched regions");
    world_end();
}

/* Each rank gets from the other, then puts k chunked operations to it: a target runs an
 * origin's operations in order, so the puts' chunks wait behind the get, whose results
 * need a send slot at the other rank. */
static void get_then_puts(unsigned slots, int puts)
{
    char name[120];
    snprintf(name, sizeof(name), "Get then %d Puts, both ways, %u slot%s per pool", puts, slots,
             slots > 1 ? "s" : "");
    section(name);
    if (!world_init(2, 32, 64, slots, 1, 0))
        return;
    twin_t *tw = win_new(8192, 1, 0x3);
    size_t n = 2 * 64;
    int ok = 1;
    for (int r = 0; r < 2; r++) {
        struct iovec tp = {.iov_base = 0,.iov_len = n };
        gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 1 - r,.disp = 4096,
            .tpieces = &tp,.ntpieces = 1,.tbytes = n,
            .result = {.device_id = dev_id(W.r[r].dbuf),.addr = W.r[r].dbuf + 8192 }
        };
        ok &= dstart(tw->at[r].dw, &get, NULL, NULL) == GDR_RMA_OK;
        for (int k = 0; k < puts; k++) {
            gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1 - r,.disp = k * 256,
                .tpieces = &tp,.ntpieces = 1,.tbytes = n,
                .origin = {.device_id = dev_id(W.r[r].dbuf),.addr = W.r[r].dbuf + k * 256 }
            };
            ok &= dstart(tw->at[r].dw, &put, NULL, NULL) == GDR_RMA_OK;
        }
    }
    int rc0 = flush(tw, 0, -1), rc1 = flush(tw, 1, -1);
    GDR_CHECK(ok && rc0 == GDR_RMA_OK && rc1 == GDR_RMA_OK, "%s: every operation completes "
              "(flush %d, %d; -2: deadlock)", name, rc0, rc1);
    world_end();
}

/* Local completion comes before remote completion, and progress never waits for the
 * device: while the target's device holds the put's copies, flush does not complete. */
static void test_local_completion(void)
{
    section("local before remote completion; progress never waits for the device");
    if (!world_init(2, 32, 64, 2, 0, 0))
        return;
    twin_t *tw = win_new(2048, 8, 0x3);
    gdr_rma_win_t *w = &tw->at[0].w;
    for (int odev = 0; odev < 2; odev++) {
        size_t n = 3 * 64;
        char *ob = (odev ? W.r[0].dbuf : W.r[0].hbuf) + 256;
        unsigned char src[192], junk[192];
        done_t dn = { 0 };
        for (size_t j = 0; j < n; j++)
            src[j] = (unsigned char) (j * 5 + odev);
        memset(junk, 0x5a, sizeof(junk));
        poke(ob, src, n);
        struct iovec tp = {.iov_base = 0,.iov_len = n };
        gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.disp = 4,.tpieces = &tp,
            .ntpieces = 1,.tbytes = n,.origin = {.device_id = odev ? dev_id(ob) : 0,.addr = ob }
        };
        const char *o = odev ? "device" : "host";
        device_hold(1, 1);
        int rc = dstart(tw->at[0].dw, &put, on_done, &dn);
        int lrc = rc ? rc : wait_for(tw, 0, 1, 1, 2000);
        GDR_CHECK(rc == GDR_RMA_OK && lrc == GDR_RMA_OK && w->tracker.local[1] == 0
                  && w->tracker.remote[1] == 1, "3-chunk put from a %s buffer, target's device "
                  "held: flush_local completes, the operation is still counted remote (start "
                  "%d, flush_local %d, remote %lu)", o, rc, lrc, w->tracker.remote[1]);
        poke(ob, junk, n);      /* locally complete: the buffer is the user's again */
        int frc = wait_for(tw, 0, 1, 0, 500);
        GDR_CHECK(frc == GDR_RMA_HOST_ERROR && dn.calls == 0 && w->tracker.remote[1] == 1
                  && win_diff(tw, 1) < 0, "%s origin: while the target's device holds the "
                  "copies, 500 ticks of flush do not complete it and the window is untouched "
                  "(flush %d, %d completions, %ld device items held)", o, frc, dn.calls,
                  dev_pending(1));
        device_hold(1, 0);
        frc = flush(tw, 0, 1);
        memcpy(tw->at[1].model + 32, src, n);
        GDR_CHECK(frc == GDR_RMA_OK && dn.calls == 1 && dn.status == 0 && win_diff(tw, 1) < 0,
                  "%s origin: once the device runs, flush completes with the data staged "
                  "before the buffer was reused (flush %d)", o, frc);

        /* inline: staged into the request by start itself */
        done_t di = { 0 };
        put.tbytes = tp.iov_len = 16;
        poke(ob, src, 16);
        device_hold(1, 1);
        rc = dstart(tw->at[0].dw, &put, on_done, &di);
        GDR_CHECK(rc == GDR_RMA_OK && w->tracker.local[1] == 0 && w->tracker.remote[1] == 1,
                  "16-byte put from a %s buffer: locally complete when start returns (local "
                  "%lu, remote %lu)", o, w->tracker.local[1], w->tracker.remote[1]);
        poke(ob, junk, 16);
        frc = wait_for(tw, 0, 1, 0, 300);
        GDR_CHECK(frc == GDR_RMA_HOST_ERROR && di.calls == 0, "16-byte put: not remotely "
                  "complete while the target's device holds it (%d)", frc);
        long ran = device_run_all(1);  /* by hand: the device stays held */
        frc = flush(tw, 0, 1);
        device_hold(1, 0);
        memcpy(tw->at[1].model + 32, src, 16);
        GDR_CHECK(frc == GDR_RMA_OK && di.calls == 1 && ran > 0 && win_diff(tw, 1) < 0,
                  "16-byte put: completes once the test runs the held device's %ld items (%d)",
                  ran, frc);
    }

    /* the origin's device held: nothing may be announced before its staging copy ran */
    {
        size_t n = 3 * 64;
        char *ob = W.r[0].dbuf + 2048;
        unsigned char src[192];
        done_t dn = { 0 };
        for (size_t j = 0; j < n; j++)
            src[j] = (unsigned char) (j ^ 0xa5);
        poke(ob, src, n);
        struct iovec tp = {.iov_base = 0,.iov_len = n };
        gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.disp = 64,.tpieces = &tp,
            .ntpieces = 1,.tbytes = n,.origin = {.device_id = dev_id(ob),.addr = ob }
        };
        gdr_rma_staged_counts_t ct = counts(1);
        unsigned long chunks = W.delivered[GDR_RMA_STAGED_CHUNK];
        device_hold(0, 1);
        int rc = dstart(tw->at[0].dw, &put, on_done, &dn);
        int lrc = wait_for(tw, 0, 1, 1, 300);
        GDR_CHECK(rc == GDR_RMA_OK && lrc == GDR_RMA_HOST_ERROR && w->tracker.local[1] == 1
                  && W.delivered[GDR_RMA_STAGED_CHUNK] == chunks
                  && counts(1).chunks_read == ct.chunks_read, "3-chunk put, the origin's device "
                  "held: not locally complete, and no CHUNK announced before its staging copy "
                  "ran (flush_local %d, %lu CHUNKs)", lrc,
                  W.delivered[GDR_RMA_STAGED_CHUNK] - chunks);
        device_hold(0, 0);
        int frc = flush(tw, 0, 1);
        memcpy(tw->at[1].model + 512, src, n);
        GDR_CHECK(frc == GDR_RMA_OK && dn.calls == 1 && win_diff(tw, 1) < 0, "origin's device "
                  "released: the put completes with its data (%d)", frc);
    }

    /* Get-type: locally complete only at remote completion */
    for (int held = 0; held < 2; held++) {
        size_t n = 3 * 64 + 5;
        char *rb = W.r[0].dbuf + 4096;
        unsigned char fill[200], got[200];
        done_t dn = { 0 };
        memset(fill, 0xee, sizeof(fill));
        poke(rb, fill, sizeof(fill));
        struct iovec tp = {.iov_base = 0,.iov_len = n };
        gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 1,.disp = 100,.tpieces = &tp,
            .ntpieces = 1,.tbytes = n,.result = {.device_id = dev_id(rb),.addr = rb }
        };
        const char *who = held ? "the origin's" : "the target's";
        device_hold(held ? 0 : 1, 1);
        int rc = dstart(tw->at[0].dw, &get, on_done, &dn);
        int lrc = wait_for(tw, 0, 1, 1, 400);
        peek(got, rb, sizeof(got));
        GDR_CHECK(rc == GDR_RMA_OK && lrc == GDR_RMA_HOST_ERROR && dn.calls == 0
                  && w->tracker.local[1] == 1 && memcmp(got, fill, sizeof(got)) == 0,
                  "Get into a device buffer, %s device held: not even locally complete, the "
                  "result untouched (flush_local %d)", who, lrc);
        device_hold(held ? 0 : 1, 0);
        lrc = wait_for(tw, 0, 1, 1, WAIT_TICKS);
        peek(got, rb, n);
        GDR_CHECK(lrc == GDR_RMA_OK && dn.calls == 1 && w->tracker.remote[1] == 0
                  && memcmp(got, tw->at[1].model + 800, n) == 0, "Get, device released: "
                  "flush_local completes it remotely too, with the data (%d)", lrc);
    }
    world_end();
}

static const acc_spec_t acc_specs[] = {
    {"Accumulate SUM int32, 40 elements (3 chunks), 3 target pieces", GDR_RMA_ACC,
     GDR_GPU_OP_SUM, GDR_GPU_T_INT32, 40, 1, 0, 0},
    {"Accumulate SUM double, 20 elements (3 chunks)", GDR_RMA_ACC, GDR_GPU_OP_SUM,
     GDR_GPU_T_DOUBLE, 20, 0, 0, 0},
    {"Accumulate MAX int32, 8 elements (inline), 3 target pieces", GDR_RMA_ACC, GDR_GPU_OP_MAX,
     GDR_GPU_T_INT32, 8, 1, 0, 0},
    {"Accumulate MIN int16, 33 elements (66 bytes)", GDR_RMA_ACC, GDR_GPU_OP_MIN,
     GDR_GPU_T_INT16, 33, 1, 0, 0},
    {"Accumulate REPLACE int64, 6 elements", GDR_RMA_ACC, GDR_GPU_OP_REPLACE, GDR_GPU_T_INT64, 6,
     0, 0, 0},
    {"Get_accumulate SUM int64, 24 elements (3 chunks), scattered target and result",
     GDR_RMA_GET_ACC, GDR_GPU_OP_SUM, GDR_GPU_T_INT64, 24, 1, 1, 0},
    {"Get_accumulate NO_OP int32, 40 elements (a fetch)", GDR_RMA_GET_ACC, GDR_GPU_OP_NO_OP,
     GDR_GPU_T_INT32, 40, 1, 0, 0},
    {"Get_accumulate MAX double, 4 elements (inline)", GDR_RMA_GET_ACC, GDR_GPU_OP_MAX,
     GDR_GPU_T_DOUBLE, 4, 0, 1, 0},
    {"Fetch_and_op SUM int64", GDR_RMA_FOP, GDR_GPU_OP_SUM, GDR_GPU_T_INT64, 1, 0, 0, 0},
    {"Fetch_and_op NO_OP int32", GDR_RMA_FOP, GDR_GPU_OP_NO_OP, GDR_GPU_T_INT32, 1, 0, 0, 0},
    {"Compare_and_swap int64, compare equal: swapped", GDR_RMA_CAS, GDR_GPU_OP_CSWAP,
     GDR_GPU_T_INT64, 1, 0, 0, 1},
    {"Compare_and_swap int32, compare different: unchanged", GDR_RMA_CAS, GDR_GPU_OP_CSWAP,
     GDR_GPU_T_INT32, 1, 0, 0, 0},
};

static void test_accumulate(void)
{
    section("accumulates: every kind, device and host windows and buffers");
    if (!world_init(3, 32, 64, 2, 1, 0))
        return;
    twin_t *devw = win_new(4096, 8, 0x7), *hostw = win_new(4096, 8, 0);
    for (size_t i = 0; i < sizeof(acc_specs) / sizeof(acc_specs[0]); i++) {
        verdict_t v = { 0 };
        gdr_rma_staged_counts_t ct = counts(1);
        for (int wi = 0; wi < 2; wi++)
            for (int odev = 1; odev >= 0; odev--)
                acc_case(&v, &acc_specs[i], wi ? hostw : devw, 0, 1, odev);
        unsigned long long served = counts(1).served[acc_specs[i].kind]
            - ct.served[acc_specs[i].kind];
        GDR_CHECK(v.fails == 0 && served == 4, "%s: values as the kernel computes them, results "
                  "= the target before (%d of %d combinations failed, %llu served%s%s)",
                  acc_specs[i].name, v.fails, v.cases, served, v.fails ? "; first: " : "",
                  v.first);
    }
    world_end();
}

/* Accumulates whose data does not travel inline: inline_max 0 (never), and 8 (a CAS of
 * int64 carries 16 bytes: origin and compare). */
static void test_acc_not_inline(void)
{
    static const size_t inl[2] = { 0, 8 };
    for (int k = 0; k < 2; k++) {
        char name[80];
        snprintf(name, sizeof(name), "accumulates with inline_max %zu", inl[k]);
        section(name);
        if (!world_init(2, inl[k], 64, 1, 1, 0))
            continue;
        twin_t *devw = win_new(4096, 8, 0x3), *hostw = win_new(4096, 8, 0);
        for (size_t i = 0; i < sizeof(acc_specs) / sizeof(acc_specs[0]); i++) {
            verdict_t v = { 0 };
            for (int wi = 0; wi < 2; wi++)
                for (int odev = 1; odev >= 0; odev--)
                    acc_case(&v, &acc_specs[i], wi ? hostw : devw, 0, 1, odev);
            GDR_CHECK(v.fails == 0, "inline_max %zu: %s (%d of %d combinations failed%s%s)",
                      inl[k], acc_specs[i].name, v.fails, v.cases, v.fails ? "; first: " : "",
                      v.first);
        }
        world_end();
    }
}

/* A device result buffer freed and reallocated before the results land: the operation
 * fails and the reallocated buffer is not written. */
static void test_result_reallocated(void)
{
    section("a device result buffer reallocated before the results land");
    if (!world_init(2, 32, 64, 2, 0, 0))
        return;
    twin_t *tw = win_new(2048, 8, 0x3);
    for (int n = 16; n <= 200; n += 184) {
        char *rb = dev_alloc(0, 512);
        unsigned char fill[256], got[256];
        done_t dn = { 0 };
        memset(fill, 0xee, sizeof(fill));
        poke(rb, fill, sizeof(fill));
        struct iovec tp = {.iov_base = 0,.iov_len = (size_t) n };
        gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 1,.disp = 8,.tpieces = &tp,
            .ntpieces = 1,.tbytes = (uint64_t) n,.result = {.device_id = dev_id(rb),.addr = rb }
        };
        device_hold(1, 1);
        int rc = dstart(tw->at[0].dw, &get, on_done, &dn);
        wait_for(tw, 0, 1, 0, 50);
        dev_reallocate(rb);
        device_hold(1, 0);
        int frc = rc ? rc : flush(tw, 0, 1);
        peek(got, rb, sizeof(got));
        GDR_CHECK(rc == GDR_RMA_OK && frc == GDR_RMA_ERROR && dn.calls == 1 && dn.status != 0
                  && memcmp(got, fill, sizeof(got)) == 0, "Get of %d bytes into a device "
                  "buffer reallocated meanwhile: the flush fails and the new buffer is not "
                  "written (flush %d: %s)", n, frc, gdr_rma_staged_error(W.r[0].d));
        tw->at[0].w.tracker.failed = 0;
        buf_free(rb);
    }
    world_end();
}

/* One origin's accumulate, then its get_accumulate (and put, then get), no flush between:
 * the later operation sees the earlier one (one queue per (window, origin), in order). */
static void test_own_order(void)
{
    section("one origin's operations apply in order");
    if (!world_init(2, 32, 64, 2, 2, 1))
        return;
    twin_t *devw = win_new(4096, 8, 0x3), *hostw = win_new(4096, 8, 0);
    for (int wi = 0; wi < 2; wi++) {
        twin_t *tw = wi ? hostw : devw;
        const char *wk = wi ? "host" : "device";
        acc_spec_t acc = {"", GDR_RMA_ACC, GDR_GPU_OP_SUM, GDR_GPU_T_INT32, 40, 1, 0, 0};
        acc_spec_t fetch = {"", GDR_RMA_GET_ACC, GDR_GPU_OP_NO_OP, GDR_GPU_T_INT32, 40, 1, 0, 0};
        acc_op_t xa, xf;
        unsigned char res[512], got[512];
        acc_build(&xa, &acc, tw, 0, 1, 1, 0);
        acc_build(&xf, &fetch, tw, 0, 1, 1, 4096);
        int rc = dstart(tw->at[0].dw, &xa.a, NULL, NULL);
        int rc2 = dstart(tw->at[0].dw, &xf.a, NULL, NULL);
        int frc = flush(tw, 0, 1);
        acc_model(&xa, &acc, tw, 1, res);
        acc_model(&xf, &fetch, tw, 1, res);
        gather(xf.rv, xf.nrv, got);
        GDR_CHECK(rc == 0 && rc2 == 0 && frc == 0 && memcmp(got, res, xf.n) == 0
                  && win_diff(tw, 1) < 0, "%s window: Accumulate SUM (3 chunks) then "
                  "Get_accumulate NO_OP from the same origin, no flush between: the fetch sees "
                  "the sum (%d %d %d)", wk, rc, rc2, frc);

        acc_spec_t gsum = {"", GDR_RMA_GET_ACC, GDR_GPU_OP_SUM, GDR_GPU_T_INT64, 3, 0, 0, 0};
        acc_op_t g1, g2;
        unsigned char r1[64], r2[64], e1[64], e2[64];
        acc_build(&g1, &gsum, tw, 0, 1, 0, 0);
        acc_build(&g2, &gsum, tw, 0, 1, 1, 4096);
        rc = dstart(tw->at[0].dw, &g1.a, NULL, NULL);
        rc2 = dstart(tw->at[0].dw, &g2.a, NULL, NULL);
        frc = flush(tw, 0, 1);
        acc_model(&g1, &gsum, tw, 1, e1);
        acc_model(&g2, &gsum, tw, 1, e2);
        gather(g1.rv, g1.nrv, r1);
        gather(g2.rv, g2.nrv, r2);
        GDR_CHECK(rc == 0 && rc2 == 0 && frc == 0 && memcmp(r1, e1, 24) == 0
                  && memcmp(r2, e2, 24) == 0 && win_diff(tw, 1) < 0, "%s window: two "
                  "Get_accumulate SUMs back to back: the second fetches the first's sum", wk);

        /* put then get, no flush between */
        size_t n = 5 * 64 + 3;
        unsigned char src[400], back[400];
        for (size_t j = 0; j < n; j++)
            src[j] = (unsigned char) (j * 11 + wi);
        poke(W.r[0].dbuf + 8192, src, n);
        struct iovec tp = {.iov_base = 0,.iov_len = n };
        gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.disp = 200,.tpieces = &tp,
            .ntpieces = 1,.tbytes = n,.origin = {.device_id = dev_id(W.r[0].dbuf),
                                                   .addr = W.r[0].dbuf + 8192}
        };
        gdr_rma_access_t get = put;
        get.kind = GDR_RMA_GET;
        get.origin = (gdr_rma_buf_t) { 0 };
        get.result = (gdr_rma_buf_t) {.addr = W.r[0].hbuf + 8192 };
        rc = dstart(tw->at[0].dw, &put, NULL, NULL);
        rc2 = dstart(tw->at[0].dw, &get, NULL, NULL);
        frc = flush(tw, 0, 1);
        memcpy(tw->at[1].model + 1600, src, n);
        peek(back, W.r[0].hbuf + 8192, n);
        GDR_CHECK(rc == 0 && rc2 == 0 && frc == 0 && memcmp(back, src, n) == 0
                  && win_diff(tw, 1) < 0, "%s window: a 6-chunk Put then a Get of the same "
                  "bytes, no flush between: the get reads the put's data", wk);
    }
    world_end();
}

/* Two origins on one location: atomic per element, the exact sum; CAS: one winner. */
static void test_two_origins(void)
{
    section("two origins on one location");
    if (!world_init(3, 32, 64, 2, 1, 1))
        return;
    twin_t *devw = win_new(4096, 8, 0x2), *hostw = win_new(4096, 8, 0);
    for (int wi = 0; wi < 2; wi++) {
        twin_t *tw = wi ? hostw : devw;
        const char *wk = wi ? "host" : "device";
        int64_t one[2][3];
        int32_t many[2][40];
        int ok = 1;
        for (int r = 0; r < 2; r++) {
            for (int i = 0; i < 3; i++)
                one[r][i] = r ? 1000 : 1;
            for (int i = 0; i < 40; i++)
                many[r][i] = r ? -i : 3 * i + 1;
        }
        poke(W.r[0].dbuf, one[0], 24);
        memcpy(W.r[2].hbuf, one[1], 24);
        poke(W.r[0].dbuf + 1024, many[0], 160);
        memcpy(W.r[2].hbuf + 1024, many[1], 160);
        struct iovec t3 = {.iov_base = 0,.iov_len = 24 }, t40[3];
        size_t n40 = split(t40, 3, 0, 160, 4, 12);
        for (int round = 0; round < 25; round++)
            for (int r = 0; r < 2; r++) {
                int o = r ? 2 : 0;
                char *b = r ? W.r[2].hbuf : W.r[0].dbuf;
                gdr_rma_access_t a = {.kind = GDR_RMA_ACC,.target = 1,.disp = 4,.tpieces = &t3,
                    .ntpieces = 1,.tbytes = 24,.op = GDR_RMA_ACC_SUM,.int64_elements = 1,
                    .gpu_op = GDR_GPU_OP_SUM,.gpu_type = GDR_GPU_T_INT64,
                    .origin = {.device_id = dev_id(b),.addr = b }
                };
                ok &= dstart(tw->at[o].dw, &a, NULL, NULL) == GDR_RMA_OK;
                if (round % 5 == 0) {
                    gdr_rma_access_t m = {.kind = GDR_RMA_ACC,.target = 1,.disp = 40,
                        .tpieces = t40,.ntpieces = n40,.tbytes = 160,.op = GDR_RMA_ACC_SUM,
                        .gpu_op = GDR_GPU_OP_SUM,.gpu_type = GDR_GPU_T_INT32,
                        .origin = {.device_id = dev_id(b),.addr = b + 1024 }
                    };
                    ok &= dstart(tw->at[o].dw, &m, NULL, NULL) == GDR_RMA_OK;
                }
            }
        int rc0 = flush(tw, 0, 1), rc2 = flush(tw, 2, 1);
        for (int i = 0; i < 3; i++) {
            int64_t *m = (int64_t *) (tw->at[1].model + 32) + i;
            *m += 25 * 1001;
        }
        for (size_t p = 0, e = 0; p < n40; p++)
            for (size_t k = 0; k < t40[p].iov_len / 4; k++, e++) {
                int32_t *m = (int32_t *) (tw->at[1].model + 320 + (uintptr_t) t40[p].iov_base) + k;
                *m += 5 * (many[0][e] + many[1][e]);
            }
        long at = win_diff(tw, 1);
        GDR_CHECK(ok && rc0 == 0 && rc2 == 0 && at < 0, "%s window: ranks 0 (device buffer) and "
                  "2 (host buffer) interleave 25 int64 SUMs on 3 words and 5 three-chunk int32 "
                  "SUMs on 40: the exact sums (flush %d %d, first difference at byte %ld)", wk,
                  rc0, rc2, at);

        /* CAS: both compare with the current value; exactly one swaps */
        int64_t cur, res[2], swap[2] = { 7000001, 7000002 };
        memcpy(&cur, tw->at[1].model + 16, 8);
        poke(W.r[0].dbuf + 2048, &swap[0], 8);
        poke(W.r[0].dbuf + 2056, &cur, 8);
        memcpy(W.r[2].hbuf + 2048, &swap[1], 8);
        memcpy(W.r[2].hbuf + 2056, &cur, 8);
        struct iovec t1 = {.iov_base = 0,.iov_len = 8 };
        int cas_ok = 1;
        for (int r = 0; r < 2; r++) {
            int o = r ? 2 : 0;
            char *b = r ? W.r[2].hbuf : W.r[0].dbuf;
            gdr_rma_access_t c = {.kind = GDR_RMA_CAS,.target = 1,.disp = 2,.tpieces = &t1,
                .ntpieces = 1,.tbytes = 8,.op = GDR_RMA_ACC_CSWAP,.int64_elements = 1,
                .gpu_op = GDR_GPU_OP_CSWAP,.gpu_type = GDR_GPU_T_INT64,
                .origin = {.device_id = dev_id(b),.addr = b + 2048 },
                .result = {.device_id = dev_id(b),.addr = b + 2064 },
                .compare = b + 2056,.compare_device_id = dev_id(b)
            };
            cas_ok &= dstart(tw->at[o].dw, &c, NULL, NULL) == GDR_RMA_OK;
        }
        rc0 = flush(tw, 0, 1);
        rc2 = flush(tw, 2, 1);
        peek(&res[0], W.r[0].dbuf + 2064, 8);
        memcpy(&res[1], W.r[2].hbuf + 2064, 8);
        int64_t now;
        peek(&now, tw->at[1].base + 16, 8);
        int win0 = res[0] == cur, win1 = res[1] == cur;
        GDR_CHECK(cas_ok && rc0 == 0 && rc2 == 0 && win0 + win1 == 1
                  && now == (win0 ? swap[0] : swap[1]) && res[win0 ? 1 : 0] == now,
                  "%s window: two Compare_and_swaps with the current value: exactly one wins, "
                  "the loser fetches the winner's value (results %lld %lld, window %lld)", wk,
                  (long long) res[0], (long long) res[1], (long long) now);
        memcpy(tw->at[1].model + 16, &now, 8);
    }
    world_end();
}

/* A device origin freed and reallocated between chunks: the operation aborts, the flush
 * fails, the target survives, and the window works afterwards. */
static void test_abort(void)
{
    section("a device origin reallocated between chunks");
    if (!world_init(2, 32, 64, 1, 0, 0))
        return;
    twin_t *tw = win_new(2048, 8, 0x3);
    gdr_rma_win_t *w = &tw->at[0].w;
    size_t n = 8 * 64;
    char *ob = dev_alloc(0, 1024);
    unsigned char src[512];
    done_t dn = { 0 };
    for (size_t j = 0; j < n; j++)
        src[j] = (unsigned char) (j * 3 + 1);
    poke(ob, src, n);
    struct iovec tp = {.iov_base = 0,.iov_len = n };
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.disp = 16,.tpieces = &tp,
        .ntpieces = 1,.tbytes = n,.origin = {.device_id = dev_id(ob),.addr = ob }
    };
    gdr_rma_staged_counts_t co = counts(0);
    int rc = dstart(tw->at[0].dw, &put, on_done, &dn);
    for (int i = 0; i < 100 && counts(0).chunks_staged == co.chunks_staged; i++)
        world_tick();
    unsigned long long staged = counts(0).chunks_staged - co.chunks_staged;
    dev_reallocate(ob);
    int frc = flush(tw, 0, 1);
    const char *err = gdr_rma_staged_error(W.r[0].d);
    GDR_CHECK(rc == GDR_RMA_OK && staged >= 1 && staged < 8, "abort: the buffer id changes "
              "after %llu of 8 chunks were staged", staged);
    GDR_CHECK(frc == GDR_RMA_ERROR && dn.calls == 1 && dn.status != 0
              && w->tracker.remote[1] == 0 && w->tracker.local[1] == 0,
              "abort: flush returns GDR_RMA_ERROR, the operation completed once in error, "
              "nothing counted any more (flush %d, %d completions, status %d)", frc, dn.calls,
              dn.status);
    GDR_CHECK(err != NULL && err[0] != '\0' && counts(0).aborted == co.aborted + 1,
              "abort: counted (%llu) and said: \"%s\"", counts(0).aborted - co.aborted,
              err ? err : "(null)");
    GDR_CHECK(counts(0).chunks_staged - co.chunks_staged < 8, "abort: no chunk staged from the "
              "reallocated buffer (%llu staged)", counts(0).chunks_staged - co.chunks_staged);
    model_sync(tw, 1, 128, n);  /* what landed before the abort is MPI's undefined */
    GDR_CHECK(win_diff(tw, 1) < 0 && settle(), "abort: the target survives, nothing written "
              "outside the operation's bytes");
    GDR_CHECK(W.violations == 0, "abort: the target read only staging slots, no seam misused");

    /* the same window afterwards (a new epoch: the test clears the tracker's sticky error) */
    w->tracker.failed = 0;
    char *ob2 = dev_alloc(0, 1024);
    for (size_t j = 0; j < n; j++)
        src[j] = (unsigned char) (j * 7 + 2);
    poke(ob2, src, n);
    put.origin = (gdr_rma_buf_t) {.device_id = dev_id(ob2),.addr = ob2 };
    done_t d2 = { 0 };
    rc = dstart(tw->at[0].dw, &put, on_done, &d2);
    frc = rc ? rc : flush(tw, 0, 1);
    memcpy(tw->at[1].model + 128, src, n);
    GDR_CHECK(frc == GDR_RMA_OK && d2.calls == 1 && d2.status == 0 && win_diff(tw, 1) < 0,
              "abort: a later 8-chunk put on the same window completes with its data (%d)",
              frc);
    /* the target rank still originates: it reads the origin's window back */
    gdr_rma_access_t get = put;
    get.kind = GDR_RMA_GET;
    get.target = 0;
    get.origin = (gdr_rma_buf_t) { 0 };
    get.result = (gdr_rma_buf_t) {.addr = W.r[1].hbuf };
    rc = dstart(tw->at[1].dw, &get, NULL, NULL);
    frc = rc ? rc : flush(tw, 1, 0);
    GDR_CHECK(frc == GDR_RMA_OK && memcmp(W.r[1].hbuf, tw->at[0].model + 128, n) == 0,
              "abort: the target rank still originates operations (%d)", frc);
    buf_free(ob);
    buf_free(ob2);

    /* a host origin has no buffer id: nothing aborts */
    memcpy(W.r[0].hbuf, src, n);
    put.origin = (gdr_rma_buf_t) {.addr = W.r[0].hbuf };
    co = counts(0);
    rc = dstart(tw->at[0].dw, &put, NULL, NULL);
    frc = rc ? rc : flush(tw, 0, 1);
    GDR_CHECK(frc == GDR_RMA_OK && counts(0).aborted == co.aborted, "a host origin never "
              "aborts (%d)", frc);
    world_end();
}

/* ---- validation: hand-built messages --------------------------------------------------- */

static const char ABC[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";

/* A fresh 1024-byte device window at every rank; msg (win_id filled in) is delivered to
 * rank `to` directly, cut short by `cut` bytes.  Refused: counted there, no window byte
 * changed anywhere, and the ranks go on. */
static void refuse(const char *what, gdr_rma_staged_hdr_t h, const gdr_rma_staged_piece_t *p,
                   const void *inl, size_t cut, int to, int expect_refused)
{
    twin_t *tw = win_new(1024, 8, 0x7);
    unsigned char buf[GDR_RMA_STAGED_MSG_MAX];
    h.win_id = tw->id;
    size_t len = gdr_rma_staged_encode(buf, sizeof(buf), &h, p, inl);
    if (len == 0) {
        GDR_CHECK(0, "validation: %s: the message could not be encoded", what);
        win_free(tw);
        return;
    }
    gdr_rma_staged_counts_t c = counts(to);
    unsigned long v = W.violations;
    int rc = gdr_rma_staged_deliver(tw->at[to].dw, buf, len - cut);
    settle();
    unsigned long long refused = counts(to).refused - c.refused;
    long at = -1;
    for (int r = 0; r < W.n && at < 0; r++)
        at = win_diff(tw, r);
    if (expect_refused)
        GDR_CHECK(rc == GDR_RMA_OK && refused >= 1 && at < 0 && W.violations == v,
                  "validation: %s: refused (deliver %d, refused +%llu), no window byte "
                  "touched%s", what, rc, refused, at >= 0 ? " (WRITTEN)" : "");
    else
        GDR_CHECK(rc == GDR_RMA_OK && refused == 0 && at >= 0, "validation: control: %s is "
                  "applied (deliver %d, refused +%llu)", what, rc, refused);
    win_free(tw);
}

static void test_validation(void)
{
    section("validation of hand-built messages");
    if (!world_init(3, 32, 64, 2, 0, 0))
        return;
    /* make every rank's stage exist: a chunked put 0 -> 1 and 1 -> 2 */
    {
        twin_t *tw = win_new(1024, 8, 0x7);
        struct iovec tp = {.iov_base = 0,.iov_len = 200 };
        for (int o = 0; o < 2; o++) {
            gdr_rma_access_t a = {.kind = GDR_RMA_PUT,.target = o + 1,.tpieces = &tp,
                .ntpieces = 1,.tbytes = 200,.origin = {.addr = W.r[o].hbuf }
            };
            dstart(tw->at[o].dw, &a, NULL, NULL);
            flush(tw, o, o + 1);
        }
        win_free(tw);
    }
    gdr_rma_staged_hdr_t req = {.type = GDR_RMA_STAGED_REQ,.kind = GDR_RMA_PUT,
        .flags = GDR_RMA_STAGED_F_INLINE,.origin = 2,.seq = 0,.op_id = 0x42,.taddr = 16,
        .tbytes = 8,.npieces = 1,.inline_len = 8
    };
    gdr_rma_staged_piece_t p8 = {.off = 0,.len = 8 };
    refuse("an inline 8-byte Put REQ at byte 16", req, &p8, ABC, 0, 1, 0);

    gdr_rma_staged_piece_t past = {.off = 1024 - 16 - 4,.len = 8 };
    refuse("a piece running 4 bytes past the window's end", req, &past, ABC, 0, 1, 1);
    gdr_rma_staged_piece_t wrap = {.off = UINT64_MAX - 3,.len = 8 };
    refuse("a piece offset that wraps around", req, &wrap, ABC, 0, 1, 1);
    gdr_rma_staged_hdr_t h = req;
    h.taddr = 1024 + 8;
    refuse("taddr past the window's end", h, &p8, ABC, 0, 1, 1);
    h.taddr = UINT64_MAX - 7;
    refuse("taddr near 2^64", h, &p8, ABC, 0, 1, 1);
    h = req;
    h.seq = 5;
    refuse("seq 5 where 0 is next", h, &p8, ABC, 0, 1, 1);
    h = req;
    h.origin = 7;
    refuse("origin rank 7 of 3", h, &p8, ABC, 0, 1, 1);
    h = req;
    h.kind = GDR_RMA_ACC;
    h.op = GDR_GPU_OP_BAND;
    h.elem = GDR_GPU_T_DOUBLE;
    refuse("Accumulate BAND on doubles", h, &p8, ABC, 0, 1, 1);
    h.op = 99;
    h.elem = GDR_GPU_T_INT32;
    refuse("Accumulate op 99", h, &p8, ABC, 0, 1, 1);
    h.op = GDR_GPU_OP_SUM;
    h.elem = 77;
    refuse("Accumulate on element type 77", h, &p8, ABC, 0, 1, 1);
    h = req;
    h.kind = 9;
    refuse("kind 9", h, &p8, ABC, 0, 1, 1);
    h = req;
    h.tbytes = 16;
    h.inline_len = 16;
    refuse("tbytes 16 over pieces of 8 bytes", h, &p8, ABC, 0, 1, 1);
    h = req;
    h.inline_len = 4;
    refuse("inline data of 4 bytes for tbytes 8", h, &p8, ABC, 0, 1, 1);
    h = req;
    h.kind = GDR_RMA_ACC;
    h.op = GDR_GPU_OP_SUM;
    h.elem = GDR_GPU_T_INT32;
    h.tbytes = h.inline_len = 6;
    gdr_rma_staged_piece_t p6 = {.off = 0,.len = 6 };
    refuse("Accumulate int32 over 6 bytes (not whole elements)", h, &p6, ABC, 0, 1, 1);
    refuse("a REQ cut one byte short", req, &p8, ABC, 1, 1, 1);

    /* CHUNK, TAKEN, RESULT, DONE out of place.  A registered slot-like buffer of rank 2
     * full of junk: if anything read it into the window, the window would change. */
    void *junk = NULL;
    gdr_rma_mr_t mr;
    char why[128];
    W.r[2].seam.host_alloc(W.r[2].seam.ctx, 256, &junk);
    memset(junk, 0x77, 256);
    W.r[2].eng.net.reg(W.r[2].eng.net.ctx, junk, 256, GDR_RMA_REMOTE_READ, &mr, why,
                       sizeof(why));
    gdr_rma_staged_hdr_t chunk = {.type = GDR_RMA_STAGED_CHUNK,.origin = 2,.op_id = 0x999,.slot = 0,
        .off = 0,.raddr = mr.addr,.len = 64,.rkey = mr.rkey
    };
    refuse("a CHUNK for an operation never requested", chunk, NULL, NULL, 0, 1, 1);
    gdr_rma_staged_hdr_t taken = {.type = GDR_RMA_STAGED_TAKEN,.origin = 2,.op_id = 0x42,.slot = 0 };
    refuse("TAKEN for a send slot never lent to that rank", taken, NULL, NULL, 0, 1, 1);
    taken.slot = 1000;
    refuse("TAKEN for slot 1000 (no such slot)", taken, NULL, NULL, 0, 1, 1);
    gdr_rma_staged_hdr_t result = {.type = GDR_RMA_STAGED_RESULT,.origin = 1,.op_id = 0x4242,
        .flags = GDR_RMA_STAGED_F_INLINE,.off = 0,.len = 8,.inline_len = 8
    };
    refuse("a RESULT for an operation this origin never started", result, NULL, ABC, 0, 0, 1);
    result.flags = 0;
    result.inline_len = 0;
    result.raddr = mr.addr;
    result.rkey = mr.rkey;
    refuse("a RESULT in a slot, for no operation", result, NULL, NULL, 0, 0, 1);
    gdr_rma_staged_hdr_t done = {.type = GDR_RMA_STAGED_DONE,.origin = 1,.op_id = 0x4243,.status = 0 };
    refuse("a DONE for no operation", done, NULL, NULL, 0, 0, 1);

    /* a valid non-inline REQ, then CHUNKs outside it */
    {
        twin_t *tw = win_new(1024, 8, 0x7);
        unsigned char buf[GDR_RMA_STAGED_MSG_MAX];
        gdr_rma_staged_hdr_t r = {.type = GDR_RMA_STAGED_REQ,.kind = GDR_RMA_PUT,.origin = 2,.seq = 0,
            .op_id = 0x51,.win_id = tw->id,.taddr = 64,.tbytes = 128,.npieces = 1
        };
        gdr_rma_staged_piece_t p128 = {.off = 0,.len = 128 };
        size_t len = gdr_rma_staged_encode(buf, sizeof(buf), &r, &p128, NULL);
        int rc = gdr_rma_staged_deliver(tw->at[1].dw, buf, len);
        settle();
        struct {
            uint64_t off;
            uint32_t len;
            const char *what;
        } bad[] = {
            {96, 64, "a CHUNK running past tbytes (96 + 64 > 128)"},
            {0, 128, "a CHUNK longer than a slot (128 > 64)"},
            {UINT64_MAX - 31, 64, "a CHUNK offset that wraps"},
        };
        for (size_t i = 0; i < 3; i++) {
            gdr_rma_staged_hdr_t c = chunk;
            c.win_id = tw->id;
            c.op_id = 0x51;
            c.off = bad[i].off;
            c.len = bad[i].len;
            gdr_rma_staged_counts_t c0 = counts(1);
            len = gdr_rma_staged_encode(buf, sizeof(buf), &c, NULL, NULL);
            int drc = gdr_rma_staged_deliver(tw->at[1].dw, buf, len);
            settle();
            GDR_CHECK(rc == 0 && drc == 0 && counts(1).refused > c0.refused && win_diff(tw, 1) < 0,
                      "validation: %s: refused, the window untouched", bad[i].what);
        }
        gdr_rma_staged_hdr_t ab = {.type = GDR_RMA_STAGED_ABORT,.origin = 2,.seq = 0,.op_id = 0x51,
            .win_id = tw->id
        };
        len = gdr_rma_staged_encode(buf, sizeof(buf), &ab, NULL, NULL);
        rc = gdr_rma_staged_deliver(tw->at[1].dw, buf, len);
        GDR_CHECK(rc == 0 && settle() && win_diff(tw, 1) < 0, "validation: an ABORT ends the "
                  "half-sent operation; the window untouched");
        /* the window still serves another origin */
        struct iovec tp = {.iov_base = 0,.iov_len = 100 };
        memcpy(W.r[0].hbuf, ABC, 26);
        gdr_rma_access_t a = {.kind = GDR_RMA_PUT,.target = 1,.disp = 3,.tpieces = &tp,
            .ntpieces = 1,.tbytes = 100,.origin = {.addr = W.r[0].hbuf }
        };
        unsigned char expect[100];
        memcpy(expect, W.r[0].hbuf, 100);
        rc = dstart(tw->at[0].dw, &a, NULL, NULL);
        int frc = rc ? rc : flush(tw, 0, 1);
        memcpy(tw->at[1].model + 24, expect, 100);
        GDR_CHECK(frc == GDR_RMA_OK && win_diff(tw, 1) < 0, "validation: after all that, rank "
                  "0's put to the same window works (%d)", frc);
        win_free(tw);
    }
    W.r[2].eng.net.dereg(W.r[2].eng.net.ctx, &mr);
    W.r[2].seam.host_free(W.r[2].seam.ctx, junk);

    /* out of range through the API: refused at the call or by the target, never written */
    {
        twin_t *tw = win_new(1024, 8, 0x7);
        struct iovec tp = {.iov_base = 0,.iov_len = 64 };
        done_t dn = { 0 };
        gdr_rma_access_t a = {.kind = GDR_RMA_PUT,.target = 1,.disp = 127,.tpieces = &tp,
            .ntpieces = 1,.tbytes = 64,.origin = {.addr = W.r[0].hbuf }
        };
        int rc = dstart(tw->at[0].dw, &a, on_done, &dn);
        int frc = rc ? rc : flush(tw, 0, 1);
        GDR_CHECK(frc == GDR_RMA_ERROR && win_diff(tw, 1) < 0, "a Put running past the target's "
                  "window: refused (start %d, flush %d), nothing written", rc, frc);
        tw->at[0].w.tracker.failed = 0;
        win_free(tw);
    }
    world_end();
}

/* A dynamic window: the target attached a device region; taddr is an address. */
static void test_dynamic(void)
{
    section("dynamic window");
    if (!world_init(2, 32, 64, 1, 0, 0))
        return;
    twin_t *tw = win_new_dynamic();
    char *region = dev_alloc(1, 1024), *other = dev_alloc(1, 256), why[128];
    unsigned char init[1024], src[300], got[300];
    for (int i = 0; i < 1024; i++)
        init[i] = (unsigned char) i;
    poke(region, init, 1024);
    poke(other, init, 256);
    gdr_rma_regions_attach(&tw->at[1].w.regions, &W.r[1].eng, region, 1024,
                           gdr_rma_win_access(&tw->at[1].w), GDR_RMA_EXPOSE_IS_DEVICE, why,
                           sizeof(why));
    for (int i = 0; i < 300; i++)
        src[i] = (unsigned char) (255 - i);
    poke(W.r[0].dbuf, src, 300);
    struct iovec tp = {.iov_base = 0,.iov_len = 300 };
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,
        .disp = (int64_t) (uintptr_t) (region + 100),.tpieces = &tp,.ntpieces = 1,.tbytes = 300,
        .t_span = 300,.origin = {.device_id = dev_id(W.r[0].dbuf),.addr = W.r[0].dbuf }
    };
    int rc = dstart(tw->at[0].dw, &put, NULL, NULL);
    int frc = rc ? rc : flush(tw, 0, 1);
    peek(got, region + 100, 300);
    GDR_CHECK(frc == GDR_RMA_OK && memcmp(got, src, 300) == 0, "dynamic: a 5-chunk put into an "
              "attached device region, by absolute address (%d: %s)", frc,
              gdr_rma_staged_error(W.r[0].d));
    gdr_rma_access_t get = put;
    get.kind = GDR_RMA_GET;
    get.origin = (gdr_rma_buf_t) { 0 };
    get.result = (gdr_rma_buf_t) {.addr = W.r[0].hbuf };
    get.disp = (int64_t) (uintptr_t) region;
    rc = dstart(tw->at[0].dw, &get, NULL, NULL);
    frc = rc ? rc : flush(tw, 0, 1);
    GDR_CHECK(frc == GDR_RMA_OK && memcmp(W.r[0].hbuf, init, 100) == 0
              && memcmp(W.r[0].hbuf + 100, src, 200) == 0, "dynamic: a get of the region "
              "(%d)", frc);
    put.disp = (int64_t) (uintptr_t) other;
    put.tbytes = tp.iov_len = 64;
    rc = dstart(tw->at[0].dw, &put, NULL, NULL);
    frc = rc ? rc : flush(tw, 0, 1);
    peek(got, other, 64);
    GDR_CHECK(frc == GDR_RMA_ERROR && memcmp(got, init, 64) == 0, "dynamic: a put to memory "
              "the target never attached fails (start %d, flush %d) and writes nothing", rc,
              frc);
    tw->at[0].w.tracker.failed = 0;
    put.disp = (int64_t) (uintptr_t) (region + 1000);
    rc = dstart(tw->at[0].dw, &put, NULL, NULL);
    frc = rc ? rc : flush(tw, 0, 1);
    peek(got, region + 1000, 24);
    GDR_CHECK(frc == GDR_RMA_ERROR && memcmp(got, init + 1000, 24) == 0, "dynamic: a put "
              "running past the attached region fails (start %d, flush %d) and writes nothing",
              rc, frc);
    tw->at[0].w.tracker.failed = 0;
    win_free(tw);
    buf_free(region);
    buf_free(other);
    world_end();
}

/* ---- kernel-triggered operations through the protocol ---------------------------------- */

#define TRIG_SLOTS 16
#define TRIG_HANDLE 9

typedef struct {
    uint64_t head, tail, stopped, posted[NR], done[NR];
    gdr_trig_slot_t slots[TRIG_SLOTS];
    gdr_dev_peer_t peers[NR];   /* none direct: every target through the ring */
    gdr_dev_win_t dw;
    gdr_trig_proxy_t proxy;
    gdr_trig_executor_t x;
} trig_t;

/* Rank o's device handle on tw with its proxy and executor (staged: over the protocol). */
static void trig_new(trig_t *t, twin_t *tw, int o, int staged)
{
    memset(t, 0, sizeof(*t));
    t->dw = (gdr_dev_win_t) {.ring = {.head = &t->head,.tail = &t->tail,.stopped = &t->stopped,
                                      .posted = t->posted,.done = t->done,.slots = t->slots,
                                      .nslots = TRIG_SLOTS,.nranks = W.n},
        .handle = TRIG_HANDLE,.rank = o,.nranks = W.n,.peers = t->peers };
    /* device_by_nic 0: GPUDirect staged mode, the NIC never registers device memory */
    gdr_trig_executor_init(&t->x, &tw->at[o].w, TRIG_HANDLE, &W.r[o].seam, 0);
    if (staged)
        gdr_trig_executor_set_staged(&t->x, W.r[o].d, tw->at[o].dw);
    if (gdr_trig_proxy_init(&t->proxy, &t->dw.ring, TRIG_SLOTS, &gdr_trig_executor_ops, &t->x))
        abort();
    gdr_trig_executor_bind(&t->x, &t->proxy);
}

/* The proxy's progress beside the world's ticks until rank t finished n descriptors (1), the
 * proxy failed (-1) or WAIT_TICKS passed (0). */
static int trig_run(trig_t *t, int target, uint64_t n)
{
    for (int i = 0; i < WAIT_TICKS; i++) {
        if (gdr_trig_proxy_progress(&t->proxy, 64) < 0)
            return -1;
        if (gdr_trig_finished(&t->dw.ring, target, n) && gdr_trig_executor_inflight(&t->x) == 0)
            return 1;
        world_tick();
    }
    return 0;
}

static void trig_fetch_add(trig_t *t, int target, int64_t disp, uint64_t value, uint64_t *old)
{
    gdr_trig_desc_t d = gdr_dev_desc(&t->dw, GDR_TRIG_FETCH_ADD, target,
                                     (uint64_t) (uintptr_t) old, 8, disp);
    d.value = value;
    gdr_trig_post(&t->dw.ring, d);
}

static int64_t model_word(twin_t *tw, int r, size_t at)
{
    int64_t v;
    memcpy(&v, tw->at[r].model + at, 8);
    return v;
}

/* The device API's operations to another node whose window is device memory, where the
 * NIC may take neither the atomics (ranks of the window share a node: its accumulate rule
 * keeps NIC atomics off) nor device memory (GPUDirect staged): the executor hands them to
 * the protocol, and the target's device applies them; without the protocol, or to a host
 * window, the proxy stops with the reason. */
static void test_triggered(void)
{
    section("kernel-triggered operations through the staged protocol");
    if (!world_init(2, 32, 64, 2, 1, 0))
        return;
    twin_t *tw = win_new(4096, 8, 0x2), *hostw = win_new(4096, 8, 0);
    trig_t *t = calloc(1, sizeof(*t));
    trig_new(t, tw, 0, 1);
    unsigned long long fops0 = counts(0).started[GDR_RMA_FOP];

    /* two fetch-adds on one word, then an accumulate of three int64: in ring order */
    uint64_t old[2] = { 0, 0 };
    int64_t v0 = model_word(tw, 1, 80), a0[3];
    int64_t addends[3] = { 5, -9, 1LL << 40 };
    for (int i = 0; i < 3; i++)
        a0[i] = model_word(tw, 1, 160 + 8 * (size_t) i);
    trig_fetch_add(t, 1, 10, 5, &old[0]);
    trig_fetch_add(t, 1, 10, 7, &old[1]);
    int arc = gdr_dev_accumulate(&t->dw, addends, 3, GDR_GPU_T_INT64, GDR_GPU_OP_SUM, 1, 20, 0, 1);
    int rc = trig_run(t, 1, 5);
    int64_t now[4];
    peek(&now[0], tw->at[1].base + 80, 8);
    peek(&now[1], tw->at[1].base + 160, 24);
    GDR_CHECK(arc == GDR_DEV_OK && rc == 1 && old[0] == (uint64_t) v0
              && old[1] == (uint64_t) v0 + 5 && now[0] == v0 + 12 && now[1] == a0[0] + 5
              && now[2] == a0[1] - 9 && now[3] == a0[2] + (1LL << 40)
              && counts(0).started[GDR_RMA_FOP] == fops0 + 5 && counts(1).served[GDR_RMA_FOP] == 5,
              "fetch_add and accumulate to a device window without NIC atomics: 5 fetch-adds "
              "through the protocol, applied by the target's device in ring order (run %d: %s; "
              "old %llu %llu, word %lld, want %lld)", rc, gdr_trig_proxy_error(&t->proxy),
              (unsigned long long) old[0], (unsigned long long) old[1], (long long) now[0],
              (long long) v0 + 12);
    memcpy(tw->at[1].model + 80, &now[0], 8);
    memcpy(tw->at[1].model + 160, &now[1], 24);

    /* put_signals from device memory, ADD signals, then a get into device memory */
    unsigned char src[48], back[48];
    for (size_t j = 0; j < sizeof(src); j++)
        src[j] = (unsigned char) (j * 29 + 3);
    poke(W.r[0].dbuf, src, sizeof(src));
    int64_t s0 = model_word(tw, 1, 400);
    int prc = gdr_dev_put_signal(&t->dw, W.r[0].dbuf, 32, 1, 40, 50, 3, GDR_SIGNAL_ADD);
    prc |= gdr_dev_put_signal(&t->dw, W.r[0].dbuf + 32, 16, 1, 44, 50, 4, GDR_SIGNAL_ADD);
    rc = trig_run(t, 1, 7);
    int64_t sig;
    peek(&sig, tw->at[1].base + 400, 8);
    memcpy(tw->at[1].model + 320, src, 48);
    memcpy(tw->at[1].model + 400, &sig, 8);
    long at = win_diff(tw, 1);
    GDR_CHECK(prc == GDR_DEV_OK && rc == 1 && sig == s0 + 7 && at < 0,
              "two put_signals from device memory with ADD signals: the data (48 bytes) and "
              "the signal (+7) at the device window, nothing else changed (run %d: %s; first "
              "difference at byte %ld)", rc, gdr_trig_proxy_error(&t->proxy), at);
    int grc = gdr_dev_get(&t->dw, W.r[0].dbuf + 1024, 48, 1, 40);
    rc = trig_run(t, 1, 8);
    peek(back, W.r[0].dbuf + 1024, sizeof(back));
    GDR_CHECK(grc == GDR_DEV_OK && rc == 1 && memcmp(back, src, sizeof(src)) == 0,
              "a get into device memory: the 48 bytes come back (run %d)", rc);

    /* a host window's target takes no device work: still refused, with the reason */
    gdr_trig_executor_free(&t->x);
    gdr_trig_proxy_free(&t->proxy);
    trig_new(t, hostw, 0, 1);
    trig_fetch_add(t, 1, 2, 1, &old[0]);
    rc = trig_run(t, 1, 1);
    const char *why = gdr_trig_proxy_error(&t->proxy);
    GDR_CHECK(rc == -1 && strstr(why, "NIC atomics off") != NULL
              && strstr(why, "staged protocol") != NULL,
              "a fetch_add to a host window without NIC atomics stops the proxy with the reason "
              "(%s)", why);
    gdr_trig_executor_free(&t->x);
    gdr_trig_proxy_free(&t->proxy);

    /* without the protocol: refused as before */
    trig_new(t, tw, 0, 0);
    trig_fetch_add(t, 1, 10, 1, &old[0]);
    rc = trig_run(t, 1, 1);
    why = gdr_trig_proxy_error(&t->proxy);
    GDR_CHECK(rc == -1 && strstr(why, "cannot go by RDMA") != NULL
              && strstr(why, "RDMA only") != NULL,
              "without the staged protocol the same fetch_add stops the proxy (%s)", why);
    gdr_trig_executor_free(&t->x);
    gdr_trig_proxy_free(&t->proxy);
    free(t);
    world_end();
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *bt[4];
    backtrace(bt, 4);           /* loads what backtrace needs before a signal might */

    test_config();
    test_matrix();
    test_indexed();
    test_many_pieces();
    test_trivial();
    test_both_ways();
    get_then_puts(1, 1);
    get_then_puts(2, 1);
    get_then_puts(8, 4);
    test_local_completion();
    test_accumulate();
    test_acc_not_inline();
    test_result_reallocated();
    test_own_order();
    test_two_origins();
    test_abort();
    test_validation();
    test_dynamic();
    test_triggered();
    return gdr_unit_finish();
}
