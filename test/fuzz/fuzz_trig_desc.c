/* Kernel-triggered RMA's descriptors as a kernel may write them (a bug in the user's kernel,
 * or memory it corrupted): the trigger proxy (gdr_rma_trigger_proxy.h) and its executor
 * over the RMA engine (gdr_rma_trigger_exec.h) take whatever the ring holds.  The engine's
 * transport and host are test/unit/rma/fake_engine.c's: 4 ranks' windows of 4096 bytes,
 * side by side in one array, so that a write past one window would land unseen in the
 * next one: every work request is checked against its own window before it is carried out.
 *
 * Input: one configuration byte (bit 0: GPUDirect RDMA on; bit 1: the window's accumulate
 * rule allows the NIC's atomics), then steps: 0-2 = a descriptor (op, rank, displacement,
 * bytes, signal displacement and op, value, window handle, which local buffer), posted on
 * the ring; 3 = progress, every queued work request completed (in order, or newest first).
 * Local buffers are the target's own (the executor cannot check a kernel's pointers): a
 * host arena, a "device" one (the fake device seam's buffer id), or 0 (an accumulate's
 * dropped fetch-add result).
 *
 * Invariants: every work request stays inside the window of the rank it goes to (atomics:
 * 8 bytes, 8-byte aligned); a refused descriptor stops the proxy with a reason; after the
 * last step everything started finishes, the executor has nothing in flight, and (LSan)
 * nothing stays allocated. */
#include <string.h>
#include "gdr_fuzz.h"
#include "fake_engine.h"
#include "rma/gdr_rma_trigger_exec.h"

#define NRANKS 4
#define SLOTS 16
#define HANDLE 7
#define ARENA (64 << 10)
#define STEPS_MAX 256

static uint8_t host_arena[ARENA], device_arena[ARENA];

static uint64_t f_buffer_id(void *ctx, const void *p)
{
    (void) ctx;
    return (const uint8_t *) p >= device_arena && (const uint8_t *) p < device_arena + ARENA
        ? 99 : 0;
}

static const gdr_rma_device_t fake_dev = {.buffer_id = f_buffer_id };

typedef struct {
    uint64_t head, tail, stopped, posted[NRANKS], done[NRANKS];
    gdr_trig_slot_t slots[SLOTS];
} ring_mem_t;

static ring_mem_t ring;

/* [at, at + len) inside rank's window (peers are 10 + rank in fake_engine's window) */
static void require_inside(const wr_t *w, uint64_t at, uint64_t len, const char *what)
{
    int rank = w->peer - 10;
    FUZZ_REQUIRE(rank >= 0 && rank < NRANKS, "a %s to peer %d, no rank of the window", what,
                 w->peer);
    uint64_t lo = (uint64_t) (uintptr_t) target_mem[rank], hi = lo + sizeof(target_mem[rank]);
    FUZZ_REQUIRE(at >= lo && len <= hi - lo && at - lo <= hi - lo - len,
                 "a %s of %llu bytes at offset %lld of rank %d's window of %zu bytes", what,
                 (unsigned long long) len, (long long) (at - lo), rank, sizeof(target_mem[rank]));
}

static void check_wr(const wr_t *w)
{
    uint64_t total = 0;
    switch (w->kind) {
        case W_PUT:
        case W_GET:
            require_inside(w, w->raddr, w->len, w->kind == W_PUT ? "write" : "read");
            break;
        case W_WRITEV:
        case W_READV:
            for (size_t k = 0; k < w->n; k++)
                total += w->iov[k].iov_len;
            require_inside(w, w->raddr, total, "gathered write or scattered read");
            break;
        case W_ATOMICV:
            for (size_t k = 0; k < w->n; k++) {
                require_inside(w, w->raddrs[k], 8, "NIC atomic");
                FUZZ_REQUIRE(w->raddrs[k] % 8 == 0, "a NIC atomic at an address not 8-aligned");
            }
            break;
    }
}

/* every queued work request checked, then carried out */
static void complete_all(int lifo)
{
    fk.lifo = lifo;
    for (int guard = 0; fk.n > 0 && guard < 100000; guard++) {
        check_wr(&fk.q[fk.lifo ? fk.n - 1 : 0]);
        complete_one();
    }
}

static void progress(gdr_trig_proxy_t *p, int lifo)
{
    for (int round = 0; round < 8; round++) {
        int rc = gdr_trig_proxy_progress(p, 64);
        FUZZ_REQUIRE(rc >= 0 || strlen(gdr_trig_proxy_error(p)) > 0,
                     "the proxy stopped without a reason");
        complete_all(lifo);
    }
}

static gdr_trig_desc_t descriptor(const uint8_t **d, size_t *n)
{
    gdr_trig_desc_t t;
    memset(&t, 0, sizeof(t));
    t.op = (uint32_t) (fuzz_take(d, n, 1) % 7);        /* 1..4, and unknown ones */
    uint8_t how = (uint8_t) fuzz_take(d, n, 1);
    /* mostly sensible numbers, sometimes anything */
    t.rank = how & 1 ? (int32_t) fuzz_take(d, n, 4) : (int32_t) (fuzz_take(d, n, 1) % 6) - 1;
    t.disp = how & 2 ? (int64_t) fuzz_take(d, n, 8) : (int64_t) (fuzz_take(d, n, 2) % 600) - 40;
    t.bytes = how & 4 ? fuzz_take(d, n, 4) % ARENA : fuzz_take(d, n, 2) % 5000;
    t.signal_disp = how & 8 ? (int64_t) fuzz_take(d, n, 8)
        : (int64_t) (fuzz_take(d, n, 2) % 5000) - 40;
    t.signal_op = (uint32_t) (fuzz_take(d, n, 1) % 4);
    t.value = fuzz_take(d, n, 8);
    t.window = how & 16 ? (uint32_t) fuzz_take(d, n, 4) : HANDLE;
    /* room for the data, and for a fetch-add's 8-byte result whatever bytes says */
    uint64_t off = fuzz_take(d, n, 2) % ARENA, room = t.bytes < 8 ? 8 : t.bytes;
    if (room > ARENA - off)
        off = ARENA - room;
    switch ((how >> 5) & 3) {
        case 0:
        case 1:
            t.addr = (uint64_t) (uintptr_t) (host_arena + off);
            break;
        case 2:
            t.addr = (uint64_t) (uintptr_t) (device_arena + off);
            break;
        default:
            t.addr = 0;         /* a fetch-add's dropped result; for a put or get: refused */
            if (t.op != GDR_TRIG_FETCH_ADD)
                t.addr = (uint64_t) (uintptr_t) host_arena;
            break;
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = fuzz_exact_copy(data, size);
    const uint8_t *d = copy;
    size_t n = size;
    unsigned config = (unsigned) fuzz_take(&d, &n, 1);
    memset(&ring, 0, sizeof(ring));
    memset(target_mem, 0, sizeof(target_mem));
    memset(&fk, 0, sizeof(fk));
    fk.atomicv_max = 16;
    gdr_rma_win_t w;
    make_win(&w, 0, config & 2 ? GDR_RMA_DECLARES_SUM : GDR_RMA_DECLARES_OTHER, 1);
    gdr_trig_ring_t r = {.head = &ring.head,.tail = &ring.tail,.slots = ring.slots,
        .posted = ring.posted,.done = ring.done,.stopped = &ring.stopped,.nslots = SLOTS,
        .nranks = NRANKS };
    gdr_trig_executor_t x;
    gdr_trig_proxy_t p;
    gdr_trig_executor_init(&x, &w, HANDLE, &fake_dev, (int) (config & 1));
    FUZZ_REQUIRE(gdr_trig_proxy_init(&p, &r, SLOTS, &gdr_trig_executor_ops, &x) == 0,
                 "out of memory for the proxy");
    gdr_trig_executor_bind(&x, &p);

    for (int step = 0; step < STEPS_MAX && n > 0; step++) {
        unsigned what = (unsigned) fuzz_take(&d, &n, 1);
        if (what % 4 == 3) {
            progress(&p, (int) (what >> 2) & 1);
            continue;
        }
        gdr_trig_desc_t t = descriptor(&d, &n);
        int32_t raw_rank = t.rank;
        if (t.rank < 0 || t.rank >= NRANKS)
            t.rank = t.rank < 0 ? 0 : NRANKS - 1;       /* the device calls check ranks */
        if (ring.head - ring.tail >= SLOTS)
            progress(&p, 0);    /* a full ring: a producer would wait for the proxy */
        if (ring.head - ring.tail >= SLOTS)
            break;              /* the proxy stopped: producers give up (not tested here) */
        /* posted raw, as a kernel writes it: the rank check of the device calls passed,
         * anything else as the input says (a descriptor is not re-validated on the ring) */
        uint64_t ticket = gdr_trig_reserve(&r);
        gdr_trig_publish(&r, ticket, t);
        ring.slots[ticket % SLOTS].desc.rank = raw_rank;        /* then corrupted, maybe */
    }
    /* everything started finishes: started operations whose signal is still to be posted
     * too, also when the proxy stopped meanwhile */
    progress(&p, 0);
    FUZZ_REQUIRE(gdr_trig_executor_inflight(&x) == 0, "%lu triggered operations still in "
                 "flight after the last progress (proxy %s)", gdr_trig_executor_inflight(&x),
                 p.failed ? gdr_trig_proxy_error(&p) : "running");
    gdr_trig_executor_free(&x);
    gdr_trig_proxy_free(&p);
    gdr_rma_win_free(&w);
    free(copy);
    return 0;
}
