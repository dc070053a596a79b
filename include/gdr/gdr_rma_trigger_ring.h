/* The device-trigger ring (DESIGN.md section 4, kernel-triggered RMA): GPU threads, or
 * CPU threads in tests, post RMA descriptors that one proxy thread takes and executes.
 * Written once as __host__ __device__ code: it compiles as C11 (the proxy, the unit
 * tests, the simulated GPU's host-compiled kernels) and as CUDA C++ (device code).
 *
 * Guarantees:
 * - Many producers, one consumer.  Each descriptor is taken exactly once; the
 *   descriptors of one producer are taken in the order it posted them.
 * - A full ring blocks its producers until the proxy takes descriptors (back-pressure,
 *   never loss or overwrite); a producer that reserved a slot holds up the ones behind it
 *   until it publishes, so reserve and publish are one call here.
 * - Completion is counted per target rank: every post takes the next number of its
 *   target (gdr_trig_post returns it); the proxy, whose operations may complete in any
 *   order, raises done[rank] to the count of the target's operations finished without a
 *   gap (gdr_rma_trigger_done.h).  Waiting for done[rank] >= posted[rank] is a flush.
 *
 * Where the words live on a real GPU: head and posted[] in device memory (only producers
 * touch them: device-scope atomics, no PCIe atomics needed); slots, tail and done[] in
 * host-pinned memory mapped into the device (the GPU writes descriptors across PCIe, the
 * proxy writes tail and done[]).  The struct below only holds pointers, so each word can
 * sit where its writers are. */
#ifndef GDR_RMA_TRIGGER_RING_H
#define GDR_RMA_TRIGGER_RING_H

#include <stdint.h>

#ifdef __CUDACC__
#define GDR_TRIG_HD __host__ __device__
#else
#define GDR_TRIG_HD
#endif
#if !defined(__CUDA_ARCH__)
#include <sched.h>
#endif

/* what a descriptor asks for */
enum {
    GDR_TRIG_PUT = 1,           /* bytes from local addr to (rank, disp) */
    GDR_TRIG_GET = 2,           /* bytes from (rank, disp) to local addr */
    GDR_TRIG_PUT_SIGNAL = 3,    /* a put, then the signal word updated once the data is visible */
    GDR_TRIG_FETCH_ADD = 4,     /* value added at (rank, disp) + signal_disp bytes; the old
                                 * value to local addr, or nowhere when addr is 0 (one
                                 * element of an accumulate: gdr_dev_accumulate) */
    GDR_TRIG_PUT_NOTIFY = 5,    /* a put, then 1 added to the target's notification counter
                                 * signal_disp once the data is complete there */
    GDR_TRIG_GET_NOTIFY = 6,    /* a get, then the same once the read is done */
    GDR_TRIG_NOTIFY = 7,        /* the notification alone: the kernel moved the data itself
                                 * (a target on this node) */
    GDR_TRIG_ACCUMULATE = 8,    /* one element of an accumulate: its bytes (at most 8) carried
                                 * in value, applied at (rank, disp) + signal_disp bytes with
                                 * signal_op = gdr_gpu_op_t | gdr_gpu_type_t << 16 by the
                                 * target's GPU (the staged protocol) */
    GDR_TRIG_LOCK = 9,          /* a passive-target epoch to rank begins: its lock taken
                                 * (value 1: exclusive, 0: shared), done once held */
    GDR_TRIG_UNLOCK = 10,       /* the epoch ends: done once every operation to rank before
                                 * it is complete there and the release is on its way */
    GDR_TRIG_FETCH_OP = 11,     /* one element at (rank, disp) of the type in signal_op
                                 * (gdr_gpu_op_t | gdr_gpu_type_t << 16), applied by the
                                 * target's GPU (the staged protocol) with the operand's bytes
                                 * in value and, for compare-and-swap, the compare's in
                                 * signal_disp; the old value to local addr (host memory) */
    GDR_TRIG_FENCE = 12         /* every operation before it complete at its target, then
                                 * the window's fence barrier with every rank (rank: this
                                 * one's own, for the sequence) */
};

/* One request: 64 bytes, written by the producer before it publishes the slot. */
typedef struct gdr_trig_desc {
    uint32_t op;                /* GDR_TRIG_* */
    int32_t rank;               /* target, in the window's communicator */
    uint64_t rank_seq;          /* this target's operation number (set by gdr_trig_post) */
    uint64_t addr;              /* local buffer: source of a put, destination of a get */
    uint64_t bytes;
    int64_t disp;               /* target displacement, in the window's units */
    int64_t signal_disp;        /* PUT_SIGNAL: the signal word; FETCH_ADD, ACCUMULATE: bytes
                                 * past disp; FETCH_OP: the compare value's bytes;
                                 * the *NOTIFY ops: the counter's index */
    uint64_t value;             /* PUT_SIGNAL: signal value; FETCH_ADD: the addend */
    uint32_t signal_op;         /* PUT_SIGNAL: GDR_SIGNAL_SET or GDR_SIGNAL_ADD; ACCUMULATE,
                                 * FETCH_OP: the op and type */
    uint32_t window;            /* which device handle (the proxy's table index) */
} gdr_trig_desc_t;

/* A slot: published when seq == ticket + 1 for the ticket that reserved it (so a value left
 * from an earlier lap never reads as published).  128 bytes: two slots never share a
 * cache line or a PCIe write. */
typedef struct gdr_trig_slot {
    uint64_t seq;
    uint64_t pad0[7];
    gdr_trig_desc_t desc;
} gdr_trig_slot_t;

typedef struct gdr_trig_ring {
    uint64_t *head;             /* next ticket (producers' fetch-add) */
    volatile uint64_t *tail;    /* tickets below it are taken (written by the proxy) */
    gdr_trig_slot_t *slots;
    uint64_t *posted;           /* per target rank: operations posted (producers' fetch-add) */
    volatile uint64_t *done;    /* per target rank: operations finished without a gap (proxy) */
    volatile uint64_t *stopped; /* nonzero once the proxy stopped for good (it failed), so that
                                 * producers waiting on it give up; NULL: none kept */
    uint32_t nslots;            /* a power of two */
    int32_t nranks;
} gdr_trig_ring_t;

/* ---- the few atomics the protocol needs, for each side ------------------------------- */

static inline GDR_TRIG_HD uint64_t gdr_trig_fetch_add(uint64_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    return (uint64_t) atomicAdd((unsigned long long *) p, (unsigned long long) v);
#else
    return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

static inline GDR_TRIG_HD uint64_t gdr_trig_load_acquire(const volatile uint64_t *p)
{
#if defined(__CUDA_ARCH__)
    uint64_t v = *p;
    __threadfence_system();
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

static inline GDR_TRIG_HD void gdr_trig_store_release(volatile uint64_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();     /* the descriptor reaches host memory before its seq */
    *p = v;
    __threadfence_system();     /* and the seq leaves the GPU now: a store to host memory
                                 * may otherwise wait in the GPU's caches, and the proxy,
                                 * which waits for it, with every producer behind it */
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

static inline GDR_TRIG_HD void gdr_trig_pause(void)
{
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 700
    __nanosleep(200);
#endif
#else
    sched_yield();              /* producer threads may outnumber the cores */
#endif
}

/* ---- producers ---------------------------------------------------------------------- */

/* gdr_trig_post's answer when the proxy stopped while the producer waited for a slot */
#define GDR_TRIG_STOPPED UINT64_MAX

/* Whether the proxy stopped for good: whoever waits on it gives up. */
static inline GDR_TRIG_HD int gdr_trig_stopped(const gdr_trig_ring_t *r)
{
    return r->stopped != NULL && gdr_trig_load_acquire(r->stopped) != 0;
}

/* A post in its two steps (gdr_trig_post runs both; tests run them apart, to script how
 * producers interleave).  gdr_trig_reserve takes the next ticket and waits for its slot to
 * be free: the ticket, or GDR_TRIG_STOPPED (no ticket is then held that matters: the proxy
 * is gone).  gdr_trig_publish gives *d the target's next operation number (returned),
 * writes it into the ticket's slot and publishes it.
 * The number is taken after the slot is free.  Numbers of one target therefore run at most
 * 2 * nslots - 3 ahead of a lower one that sits behind them in the ring: when a producer
 * takes a number, its ticket is in [tail, tail + nslots), and tail cannot pass a ticket
 * that is not published; so the tickets holding numbers r0 < r1, r1's ticket t1 ahead of
 * r0's t0, and every number between, lie in (t0 - nslots, t1 + nslots), which holds fewer
 * than 2 * nslots tickets.  A proxy that lets 2 * nslots operations per target be
 * unfinished (gdr_trig_proxy_init) thus never waits, at the head of the ring, for a
 * number that sits behind that head. */
static inline GDR_TRIG_HD uint64_t gdr_trig_reserve(const gdr_trig_ring_t *r)
{
    uint64_t ticket = gdr_trig_fetch_add(r->head, 1);
    while (ticket - gdr_trig_load_acquire(r->tail) >= r->nslots) {
        if (gdr_trig_stopped(r))
            return GDR_TRIG_STOPPED;    /* nothing will free a slot any more */
        gdr_trig_pause();       /* full: the proxy has not taken ticket - nslots yet */
    }
    return ticket;
}

static inline GDR_TRIG_HD uint64_t gdr_trig_publish(const gdr_trig_ring_t *r, uint64_t ticket,
                                                    gdr_trig_desc_t d)
{
    d.rank_seq = gdr_trig_fetch_add(&r->posted[d.rank], 1);
    gdr_trig_slot_t *s = &r->slots[ticket & (r->nslots - 1)];
    s->desc = d;
    gdr_trig_store_release((volatile uint64_t *) &s->seq, ticket + 1);
    return d.rank_seq;
}

/* Posts *d (its rank_seq is filled in) and returns the target's operation number, after
 * waiting for a free slot (GDR_TRIG_STOPPED, nothing posted, when the proxy stopped
 * meanwhile).  rank must be in [0, nranks): the caller checks. */
static inline GDR_TRIG_HD uint64_t gdr_trig_post(const gdr_trig_ring_t *r, gdr_trig_desc_t d)
{
    uint64_t ticket = gdr_trig_reserve(r);
    if (ticket == GDR_TRIG_STOPPED)
        return GDR_TRIG_STOPPED;
    return gdr_trig_publish(r, ticket, d);
}

/* The count to wait for in a flush of rank: every operation posted to it so far, by any
 * producer. */
static inline GDR_TRIG_HD uint64_t gdr_trig_posted(const gdr_trig_ring_t *r, int rank)
{
    return gdr_trig_load_acquire((volatile uint64_t *) &r->posted[rank]);
}

/* Whether the first n operations posted to rank have finished. */
static inline GDR_TRIG_HD int gdr_trig_finished(const gdr_trig_ring_t *r, int rank, uint64_t n)
{
    return gdr_trig_load_acquire(&r->done[rank]) >= n;
}

/* ---- the consumer (one thread) ------------------------------------------------------ */

/* Copies the descriptor of ticket *next into *out and frees its slot, when its producer
 * has published it: returns 1 and advances *next; else 0 (nothing to take yet). */
static inline GDR_TRIG_HD int gdr_trig_take(const gdr_trig_ring_t *r, uint64_t *next,
                                            gdr_trig_desc_t *out)
{
    gdr_trig_slot_t *s = &r->slots[*next & (r->nslots - 1)];
    if (gdr_trig_load_acquire((volatile uint64_t *) &s->seq) != *next + 1)
        return 0;
    *out = s->desc;
    *next += 1;
    gdr_trig_store_release(r->tail, *next);
    return 1;
}

#endif /* GDR_RMA_TRIGGER_RING_H */
