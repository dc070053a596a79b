/* The kernel-triggered RMA calls (DESIGN.md section 4: MPIX_Dev_*), written once as
 * __host__ __device__ code: the public device header wraps these for CUDA kernels, and
 * tests and the simulated GPU run them on CPU threads.  One window's device handle
 * reaches each target one of two ways:
 * - same node (and this rank): peers[rank] maps the target's window here (CUDA IPC), so
 *   the call moves the data itself with loads and stores, inside the window's bounds;
 * - other nodes: a descriptor on the trigger ring (gdr_rma_trigger_ring.h) that the proxy
 *   executes; completion through the ring's per-target counters.
 *
 * Guarantees, per call:
 * - put / get / put_signal return once the operation is started.  Same node: the data has
 *   moved.  Other nodes: the source of a put must stay unchanged, and the destination of
 *   a get unread, until gdr_dev_flush(rank) returns (as an MPI_Put before MPI_Win_flush).
 * - put_signal: the signal is applied at the target after the data is visible there.
 * - flush(rank): every operation this handle started to rank before it is complete at the
 *   target (other nodes: also every one other threads started before; never fewer);
 *   flush_all: the same for every rank.
 * - fetch_add returns the target's old value, the add applied atomically with every other
 *   fetch_add and signal ADD on that word (same node: system-scope atomics; other nodes:
 *   the proxy's NIC atomic).  result must be memory the proxy can write (host-pinned).
 * - accumulate applies op element-wise, each element atomic with respect to every other
 *   accumulate and fetch_add on it (same node: gdr's atomic accumulate steps, system scope,
 *   every predefined op MPI defines on the type but NO_OP and compare-and-swap, elements
 *   of at most 8 bytes aligned to their size; other nodes: SUM of 64-bit integers as one
 *   NIC fetch-add per element, every other such op and type on a device window the
 *   staged protocol reaches (peers[rank].acc_any) as one descriptor per element applied by
 *   the target's GPU with the same atomic steps; complete at the next flush; src is free
 *   on return).
 * - signal_wait_until waits on this rank's own window word and returns the value that met
 *   the comparison.
 * - put_notify / get_notify: a put or get, then 1 added to the target's notification
 *   counter (MPIX_Win_notify_attach) once the data is complete there or the read done;
 *   the proxy sends the notification; flush(rank) returns once it has been sent (from
 *   then on it is as a host MPIX_Put_notify's: docs/notified-rma.md).  notify_value and
 *   notify_wait read this rank's own counters.
 * - fetch_op (compare-and-swap too) returns the target's old value, atomic as fetch_add
 *   (same node: every op and type the atomic steps take; other nodes: SUM of 64-bit
 *   integers on the NIC, and every op and type the atomic steps take on a device window
 *   the staged protocol reaches (peers[rank].acc_any), applied by the target's GPU; result
 *   host-pinned there).
 * - lock(rank) opens this process's passive-target epoch to rank for the kernel, as
 *   MPI_Win_lock(type, rank) would: returns once the lock is held, exclusive or shared,
 *   the same lock every rank's MPI_Win_lock and kernels take (the proxy takes it by the
 *   NIC's atomics; windows whose locks go by messages return GDR_DEV_ERR_SYNC).  The
 *   process must hold no other epoch to rank meanwhile (the host's lock or lock_all, or
 *   another thread's lock: one epoch a target, as in MPI): one thread of the kernel takes
 *   it for all.  unlock(rank): this thread's direct stores fenced, every operation to rank
 *   started before it (by any thread) complete at the target, then the release posted;
 *   returns once that is done.  lock_all / unlock_all: shared locks on every rank.
 *   While it holds a lock, a kernel may put, get, accumulate and flush to that rank; it
 *   must not wait for another process's kernel or host to act (that one may be waiting
 *   for the lock).
 * - win_fence(): MPI_Win_fence's meaning among the window's kernels: collective, one thread
 *   of every rank's kernel calls it once the kernel's threads have stopped posting to the
 *   window (a grid or block sync before it); it returns once every operation this process
 *   started before it is complete at its target and every rank's kernel has reached its
 *   fence.  The hosts make no fence, lock or PSCW epoch on the window meanwhile (the
 *   kernels own its synchronisation); GDR_DEV_ERR_SYNC where it goes by messages.
 * Bad input (rank out of range, an unknown signal op or comparison, a displacement
 * outside a directly mapped window) returns an error and touches nothing; the proxy checks
 * the ranges of what goes through the ring (it stops, and the host says why).  A call that would wait on a proxy that stopped for good (it failed: the
 * host's next MPI call on the window says why) returns GDR_DEV_ERR_STOPPED instead of
 * waiting for ever. */
#ifndef GDR_RMA_KERNEL_API_H
#define GDR_RMA_KERNEL_API_H

#include <stddef.h>
#include <stdint.h>
#include "gdr_rma_signal.h"
#include "gdr_rma_trigger_ring.h"
#include "gpu/gdr_gpu_acc_body.h"       /* element-wise atomic steps (accumulate) */

#if !defined(__CUDA_ARCH__)
#include <string.h>
#endif

enum {
    GDR_DEV_OK = 0, GDR_DEV_ERR_RANK = -1, GDR_DEV_ERR_ARG = -2,
    GDR_DEV_ERR_STOPPED = -3,   /* the proxy stopped (it failed; the host reports why) */
    GDR_DEV_ERR_RANGE = -4,     /* outside the target's window */
    GDR_DEV_ERR_SYNC = -6,      /* the window's locks go by messages: none from kernels */
    GDR_DEV_ERR_OP = -5         /* an accumulate this path cannot apply (op, type) */
};

/* A target's window as a kernel reaches it directly (this rank, or a peer on the node
 * through its IPC mapping); base NULL: through the ring. */
typedef struct gdr_dev_peer {
    char *base;
    uint64_t size;              /* bytes */
    uint64_t disp_unit;
    uint64_t acc_any;           /* through the ring: the proxy applies every accumulate
                                 * there (a device window the staged protocol reaches) */
} gdr_dev_peer_t;

/* This rank's notification counters as kernels reach them: page-locked and mapped for
 * the GPU by MPIX_Win_notify_attach (count 0: none attached, or the GPU cannot reach
 * them); kept by the host, read at each call, so that attach and detach may come before
 * or after the handle. */
typedef struct gdr_dev_notify {
    volatile uint64_t *mine;
    int64_t count;
} gdr_dev_notify_t;

/* gdr_dev_win_t.flags */
#define GDR_DEV_WIN_SYNC 1u     /* every rank's locks and the fence go by the NIC: kernels
                                 * may lock and fence */

typedef struct gdr_dev_win {
    gdr_trig_ring_t ring;       /* to the proxy (targets on other nodes) */
    uint32_t handle;            /* this window in the proxy's table */
    int32_t rank, nranks;
    const gdr_dev_peer_t *peers;        /* per rank, in memory the kernel reads */
    const volatile gdr_dev_notify_t *notify;    /* in memory the kernel reads */
    uint32_t flags;             /* GDR_DEV_WIN_* */
} gdr_dev_win_t;

static inline GDR_TRIG_HD void gdr_dev_copy(char *dst, const char *src, size_t n)
{
#if defined(__CUDA_ARCH__)
    if ((((uintptr_t) dst | (uintptr_t) src) & 7) == 0) {
        for (; n >= 8; n -= 8, dst += 8, src += 8)
            *(uint64_t *) dst = *(const uint64_t *) src;
    }
    for (; n > 0; n--)
        *dst++ = *src++;
#else
    memcpy(dst, src, n);
#endif
}

/* the stores before it are visible to other GPUs, the host and the NIC before those after */
static inline GDR_TRIG_HD void gdr_dev_fence(void)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Whether rank is reached by loads and stores (rank already checked). */
static inline GDR_TRIG_HD int gdr_dev_direct(const gdr_dev_win_t *w, int rank)
{
    return w->peers[rank].base != NULL;
}

/* The address of bytes at disp in rank's directly mapped window, or NULL when they are
 * not all inside it. */
static inline GDR_TRIG_HD char *gdr_dev_at(const gdr_dev_win_t *w, int rank, int64_t disp,
                                           uint64_t bytes)
{
    const gdr_dev_peer_t *p = &w->peers[rank];
    if (disp < 0 || bytes > p->size
        || (p->disp_unit != 0 && (uint64_t) disp > (p->size - bytes) / p->disp_unit))
        return NULL;
    return p->base + (uint64_t) disp * p->disp_unit;
}

static inline GDR_TRIG_HD gdr_trig_desc_t gdr_dev_desc(const gdr_dev_win_t *w, uint32_t op,
                                                     int rank, uint64_t addr, uint64_t bytes,
                                                     int64_t disp)
{
    gdr_trig_desc_t d = { 0 };
    d.op = op;
    d.rank = rank;
    d.addr = addr;
    d.bytes = bytes;
    d.disp = disp;
    d.window = w->handle;
    return d;
}

static inline GDR_TRIG_HD int gdr_dev_rank_ok(const gdr_dev_win_t *w, int rank)
{
    return rank >= 0 && rank < w->nranks;
}

static inline GDR_TRIG_HD int gdr_dev_put(const gdr_dev_win_t *w, const void *src, size_t bytes,
                                          int rank, int64_t disp)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (gdr_dev_direct(w, rank)) {
        char *dst = gdr_dev_at(w, rank, disp, bytes);
        if (dst == NULL)
            return GDR_DEV_ERR_RANGE;
        gdr_dev_copy(dst, (const char *) src, bytes);
    } else if (gdr_trig_post(&w->ring, gdr_dev_desc(w, GDR_TRIG_PUT, rank,
                                                  (uint64_t) (uintptr_t) src, bytes, disp))
             == GDR_TRIG_STOPPED)
        return GDR_DEV_ERR_STOPPED;
    return GDR_DEV_OK;
}

static inline GDR_TRIG_HD int gdr_dev_get(const gdr_dev_win_t *w, void *dst, size_t bytes,
                                          int rank, int64_t disp)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (gdr_dev_direct(w, rank)) {
        const char *src = gdr_dev_at(w, rank, disp, bytes);
        if (src == NULL)
            return GDR_DEV_ERR_RANGE;
        gdr_dev_copy((char *) dst, src, bytes);
    } else if (gdr_trig_post(&w->ring, gdr_dev_desc(w, GDR_TRIG_GET, rank,
                                                  (uint64_t) (uintptr_t) dst, bytes, disp))
             == GDR_TRIG_STOPPED)
        return GDR_DEV_ERR_STOPPED;
    return GDR_DEV_OK;
}

static inline GDR_TRIG_HD int gdr_dev_put_signal(const gdr_dev_win_t *w, const void *src,
                                                 size_t bytes, int rank, int64_t disp,
                                                 int64_t signal_disp, uint64_t value,
                                                 int signal_op)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (!gdr_signal_op_valid(signal_op))
        return GDR_DEV_ERR_ARG;
    if (gdr_dev_direct(w, rank)) {
        char *dst = gdr_dev_at(w, rank, disp, bytes), *sig = gdr_dev_at(w, rank, signal_disp, 8);
        if (dst == NULL || sig == NULL)
            return GDR_DEV_ERR_RANGE;
        gdr_dev_copy(dst, (const char *) src, bytes);
        gdr_dev_fence();        /* the data before the signal, for whoever waits on it */
        gdr_signal_apply(signal_op, (uint64_t *) sig, value);
        return GDR_DEV_OK;
    }
    gdr_trig_desc_t d = gdr_dev_desc(w, GDR_TRIG_PUT_SIGNAL, rank, (uint64_t) (uintptr_t) src,
                                     bytes, disp);
    d.signal_disp = signal_disp;
    d.value = value;
    d.signal_op = (uint32_t) signal_op;
    return gdr_trig_post(&w->ring, d) == GDR_TRIG_STOPPED ? GDR_DEV_ERR_STOPPED : GDR_DEV_OK;
}

/* Waits until the ring's operations to rank posted so far have finished. */
static inline GDR_TRIG_HD int gdr_dev_ring_drain(const gdr_dev_win_t *w, int rank)
{
    uint64_t n = gdr_trig_posted(&w->ring, rank);
    while (!gdr_trig_finished(&w->ring, rank, n)) {
        if (gdr_trig_stopped(&w->ring))
            return GDR_DEV_ERR_STOPPED;
        gdr_trig_pause();
    }
    return GDR_DEV_OK;
}

static inline GDR_TRIG_HD int gdr_dev_flush(const gdr_dev_win_t *w, int rank)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (gdr_dev_direct(w, rank)) {
        gdr_dev_fence();
        return GDR_DEV_OK;
    }
    return gdr_dev_ring_drain(w, rank);
}

/* flush(rank) for every rank of the window. */
static inline GDR_TRIG_HD int gdr_dev_flush_all(const gdr_dev_win_t *w)
{
    int direct = 0;
    for (int r = 0; r < w->nranks; r++) {
        if (gdr_dev_direct(w, r))
            direct = 1;
        else if (gdr_dev_ring_drain(w, r) != GDR_DEV_OK)
            return GDR_DEV_ERR_STOPPED;
    }
    if (direct)
        gdr_dev_fence();
    return GDR_DEV_OK;
}

/* lock(rank): a GDR_TRIG_LOCK descriptor through the ring, whatever the rank (same-node
 * windows too: their lock words are the NIC's), then waits until the proxy holds it. */
static inline GDR_TRIG_HD int gdr_dev_lock(const gdr_dev_win_t *w, int exclusive, int rank)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (!(w->flags & GDR_DEV_WIN_SYNC))
        return GDR_DEV_ERR_SYNC;
    gdr_trig_desc_t d = gdr_dev_desc(w, GDR_TRIG_LOCK, rank, 0, 0, 0);
    d.value = exclusive != 0;
    if (gdr_trig_post(&w->ring, d) == GDR_TRIG_STOPPED)
        return GDR_DEV_ERR_STOPPED;
    return gdr_dev_ring_drain(w, rank);
}

static inline GDR_TRIG_HD int gdr_dev_unlock(const gdr_dev_win_t *w, int rank)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (!(w->flags & GDR_DEV_WIN_SYNC))
        return GDR_DEV_ERR_SYNC;
    gdr_dev_fence();            /* direct stores to a same-node window before the release */
    if (gdr_trig_post(&w->ring, gdr_dev_desc(w, GDR_TRIG_UNLOCK, rank, 0, 0, 0))
        == GDR_TRIG_STOPPED)
        return GDR_DEV_ERR_STOPPED;
    return gdr_dev_ring_drain(w, rank);
}

/* op (GDR_TRIG_LOCK shared, GDR_TRIG_UNLOCK) to every rank, all asked at once behind this
 * thread's fenced stores, then waited for. */
static inline GDR_TRIG_HD int gdr_dev_sync_all(const gdr_dev_win_t *w, uint32_t op)
{
    if (!(w->flags & GDR_DEV_WIN_SYNC))
        return GDR_DEV_ERR_SYNC;
    gdr_dev_fence();
    for (int r = 0; r < w->nranks; r++)
        if (gdr_trig_post(&w->ring, gdr_dev_desc(w, op, r, 0, 0, 0)) == GDR_TRIG_STOPPED)
            return GDR_DEV_ERR_STOPPED;
    for (int r = 0; r < w->nranks; r++)
        if (gdr_dev_ring_drain(w, r) != GDR_DEV_OK)
            return GDR_DEV_ERR_STOPPED;
    return GDR_DEV_OK;
}

static inline GDR_TRIG_HD int gdr_dev_lock_all(const gdr_dev_win_t *w)
{
    return gdr_dev_sync_all(w, GDR_TRIG_LOCK);
}

static inline GDR_TRIG_HD int gdr_dev_unlock_all(const gdr_dev_win_t *w)
{
    return gdr_dev_sync_all(w, GDR_TRIG_UNLOCK);
}

/* fence: a GDR_TRIG_FENCE descriptor (to this rank, for its sequence), then waits until
 * the proxy has completed every operation before it and met every other rank's fence. */
static inline GDR_TRIG_HD int gdr_dev_win_fence(const gdr_dev_win_t *w)
{
    if (!(w->flags & GDR_DEV_WIN_SYNC))
        return GDR_DEV_ERR_SYNC;
    gdr_dev_fence();            /* direct stores visible before the others leave the fence */
    if (gdr_trig_post(&w->ring, gdr_dev_desc(w, GDR_TRIG_FENCE, w->rank, 0, 0, 0))
        == GDR_TRIG_STOPPED)
        return GDR_DEV_ERR_STOPPED;
    return gdr_dev_ring_drain(w, w->rank);
}

/* Posts d and waits until the proxy finished it (a fetched value has landed). */
static inline GDR_TRIG_HD int gdr_dev_post_wait(const gdr_dev_win_t *w, gdr_trig_desc_t d)
{
    uint64_t seq = gdr_trig_post(&w->ring, d);
    if (seq == GDR_TRIG_STOPPED)
        return GDR_DEV_ERR_STOPPED;
    while (!gdr_trig_finished(&w->ring, d.rank, seq + 1)) {
        if (gdr_trig_stopped(&w->ring))
            return GDR_DEV_ERR_STOPPED;
        gdr_trig_pause();
    }
    return GDR_DEV_OK;
}

static inline GDR_TRIG_HD int gdr_dev_fetch_add(const gdr_dev_win_t *w, int rank, int64_t disp,
                                                uint64_t value, uint64_t *result)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (gdr_dev_direct(w, rank)) {
        uint64_t *word = (uint64_t *) gdr_dev_at(w, rank, disp, 8);
        if (word == NULL)
            return GDR_DEV_ERR_RANGE;
#if defined(__CUDA_ARCH__)
        *result = (uint64_t) atomicAdd_system((unsigned long long *) word,
                                              (unsigned long long) value);
#else
        *result = __atomic_fetch_add(word, value, __ATOMIC_ACQ_REL);
#endif
        return GDR_DEV_OK;
    }
    gdr_trig_desc_t d = gdr_dev_desc(w, GDR_TRIG_FETCH_ADD, rank, (uint64_t) (uintptr_t) result,
                                     8, disp);
    d.value = value;
    return gdr_dev_post_wait(w, d);
}

/* The atomic steps of a (target set here) on rank's directly mapped window at disp: the
 * caller's share (first, stride) of its elements.  GDR_DEV_ERR_RANGE when they are not all
 * inside the window, GDR_DEV_ERR_ARG when the address is not aligned for the type. */
static inline GDR_TRIG_HD int gdr_dev_acc_direct(const gdr_dev_win_t *w, int rank, int64_t disp,
                                                 gdr_gpu_acc_args_t a, uint64_t first,
                                                 uint64_t stride)
{
    char *dst = gdr_dev_at(w, rank, disp, a.count * gdr_gpu_word_type_size(a.type));
    if (dst == NULL)
        return GDR_DEV_ERR_RANGE;
    if (!gdr_gpu_atomic_capable(a.type, (uintptr_t) dst))
        return GDR_DEV_ERR_ARG;
    a.target = dst;
    a.op |= GDR_GPU_ACC_ATOMIC;
    gdr_gpu_acc_range(&a, first, stride);
    return GDR_DEV_OK;
}

/* One element at disp of rank's window: *result = its old value, the new one old op
 * *origin (NO_OP: a read; origin may be NULL then), or for GDR_GPU_OP_CSWAP *origin where
 * old == *compare; atomic with every other accumulate, fetch_add and fetch_op on it.
 * Same node: every op and type the atomic steps take (elements of at most 8 bytes, aligned
 * to their size).  Other nodes (result in memory the proxy writes: host-pinned): SUM of
 * 64-bit integers as the NIC's fetch-add; every other op and type the same way as on one
 * node where the target's GPU applies it (peers[rank].acc_any: GDR_TRIG_FETCH_OP), else
 * GDR_DEV_ERR_OP.  Returns once *result holds the old value. */
static inline GDR_TRIG_HD int gdr_dev_fetch_op(const gdr_dev_win_t *w, const void *origin,
                                               const void *compare, void *result, int type,
                                               int op, int rank, int64_t disp)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (!gdr_gpu_acc_defined(op, type) || (op == GDR_GPU_OP_CSWAP && compare == NULL)
        || (op != GDR_GPU_OP_NO_OP && origin == NULL) || result == NULL)
        return GDR_DEV_ERR_ARG;
    uint64_t size = gdr_gpu_word_type_size(type);
    if (size == 0)
        return GDR_DEV_ERR_OP;          /* 16 bytes: no atomic step takes it */
    if (gdr_dev_direct(w, rank)) {
        gdr_gpu_acc_args_t a = { 0 };
        a.origin = origin;
        a.compare = compare;
        a.result = result;
        a.count = 1;
        a.op = op;
        a.type = type;
        return gdr_dev_acc_direct(w, rank, disp, a, 0, 1);
    }
    if (op == GDR_GPU_OP_SUM && (type == GDR_GPU_T_INT64 || type == GDR_GPU_T_UINT64)) {
        uint64_t v;
        gdr_dev_copy((char *) &v, (const char *) origin, 8);
        return gdr_dev_fetch_add(w, rank, disp, v, (uint64_t *) result);
    }
    if (!w->peers[rank].acc_any)
        return GDR_DEV_ERR_OP;
    /* the target's GPU applies it (the staged protocol): operand and compare by value, the
     * old value written by the proxy into result (host-pinned), waited for */
    uint64_t operand = 0, cmp = 0;
    if (op != GDR_GPU_OP_NO_OP)
        gdr_dev_copy((char *) &operand, (const char *) origin, size);
    if (op == GDR_GPU_OP_CSWAP)
        gdr_dev_copy((char *) &cmp, (const char *) compare, size);
    gdr_trig_desc_t d = gdr_dev_desc(w, GDR_TRIG_FETCH_OP, rank, (uint64_t) (uintptr_t) result,
                                     size, disp);
    d.value = operand;
    d.signal_disp = (int64_t) cmp;
    d.signal_op = (uint32_t) op | (uint32_t) type << 16;
    return gdr_dev_post_wait(w, d);
}

/* Accumulates elements first, first + stride, ... below count of src (gdr_gpu_type_t
 * type) into rank's window at disp with op (gdr_gpu_op_t): the caller's share, so that
 * the threads of a warp or block split one accumulate (one thread: 0, 1).  Every caller
 * of one accumulate passes the same other arguments and gets the same answer.  Bad input
 * touches nothing: GDR_DEV_ERR_ARG (an op not defined on the type, NO_OP, compare-and-swap,
 * a window address not aligned to the element), GDR_DEV_ERR_OP (an element of 16 bytes, or
 * to another node anything but SUM of 64-bit integers where the target's GPU cannot apply
 * it: not peers[rank].acc_any), GDR_DEV_ERR_RANGE. */
static inline GDR_TRIG_HD int gdr_dev_accumulate(const gdr_dev_win_t *w, const void *src,
                                                 uint64_t count, int type, int op, int rank,
                                                 int64_t disp, uint64_t first, uint64_t stride)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (stride == 0 || op == GDR_GPU_OP_NO_OP || op == GDR_GPU_OP_CSWAP
        || !gdr_gpu_acc_defined(op, type))
        return GDR_DEV_ERR_ARG;
    uint64_t size = gdr_gpu_word_type_size(type);
    if (size == 0)
        return GDR_DEV_ERR_OP;          /* 16 bytes: no atomic step takes it */
    if (count > (uint64_t) INT64_MAX / size)
        return GDR_DEV_ERR_RANGE;
    if (gdr_dev_direct(w, rank)) {
        gdr_gpu_acc_args_t a = { 0 };
        a.origin = src;
        a.count = count;
        a.op = op;
        a.type = type;
        return gdr_dev_acc_direct(w, rank, disp, a, first, stride);
    }
    if (op != GDR_GPU_OP_SUM || (type != GDR_GPU_T_INT64 && type != GDR_GPU_T_UINT64)) {
        /* the target's GPU applies it, one element a descriptor, its bytes by value */
        if (!w->peers[rank].acc_any)
            return GDR_DEV_ERR_OP;
        for (uint64_t i = first; i < count; i += stride) {
            gdr_trig_desc_t d = gdr_dev_desc(w, GDR_TRIG_ACCUMULATE, rank, 0, size, disp);
            d.signal_disp = (int64_t) (i * size);
            d.signal_op = (uint32_t) op | (uint32_t) type << 16;
            gdr_dev_copy((char *) &d.value, (const char *) src + i * size, size);
            if (gdr_trig_post(&w->ring, d) == GDR_TRIG_STOPPED)
                return GDR_DEV_ERR_STOPPED;
        }
        return GDR_DEV_OK;
    }
    for (uint64_t i = first; i < count; i += stride) {
        /* one fetch-add per element, its addend by value (src may be device memory), the
         * old value dropped (addr 0), the element signal_disp bytes past disp */
        gdr_trig_desc_t d = gdr_dev_desc(w, GDR_TRIG_FETCH_ADD, rank, 0, 8, disp);
        d.signal_disp = (int64_t) (i * 8);
        d.value = ((const uint64_t *) src)[i];
        if (gdr_trig_post(&w->ring, d) == GDR_TRIG_STOPPED)
            return GDR_DEV_ERR_STOPPED;
    }
    return GDR_DEV_OK;
}

/* A put (get: is_get 1) followed by a notification: 1 added to counter idx of the
 * target once the data is complete there (the get's read done).  On this node the kernel
 * moves the data and the proxy sends the notification behind it; otherwise the proxy
 * does both.  The proxy checks idx against the target's count (it stops, and the host
 * says why). */
static inline GDR_TRIG_HD int gdr_dev_rma_notify(const gdr_dev_win_t *w, int is_get, void *buf,
                                                 size_t bytes, int rank, int64_t disp,
                                                 int64_t idx)
{
    if (!gdr_dev_rank_ok(w, rank))
        return GDR_DEV_ERR_RANK;
    if (idx < 0)
        return GDR_DEV_ERR_ARG;
    uint32_t op = is_get ? GDR_TRIG_GET_NOTIFY : GDR_TRIG_PUT_NOTIFY;
    if (gdr_dev_direct(w, rank)) {
        char *at = gdr_dev_at(w, rank, disp, bytes);
        if (at == NULL)
            return GDR_DEV_ERR_RANGE;
        if (is_get)
            gdr_dev_copy((char *) buf, at, bytes);
        else
            gdr_dev_copy(at, (const char *) buf, bytes);
        gdr_dev_fence();        /* the data before the notification, for whoever counts it */
        op = GDR_TRIG_NOTIFY;
        bytes = 0;
    }
    gdr_trig_desc_t d = gdr_dev_desc(w, op, rank, (uint64_t) (uintptr_t) buf, bytes, disp);
    d.signal_disp = idx;
    return gdr_trig_post(&w->ring, d) == GDR_TRIG_STOPPED ? GDR_DEV_ERR_STOPPED : GDR_DEV_OK;
}

static inline GDR_TRIG_HD int gdr_dev_put_notify(const gdr_dev_win_t *w, const void *src,
                                                 size_t bytes, int rank, int64_t disp,
                                                 int64_t idx)
{
    return gdr_dev_rma_notify(w, 0, (void *) (uintptr_t) src, bytes, rank, disp, idx);
}

static inline GDR_TRIG_HD int gdr_dev_get_notify(const gdr_dev_win_t *w, void *dst,
                                                 size_t bytes, int rank, int64_t disp,
                                                 int64_t idx)
{
    return gdr_dev_rma_notify(w, 1, dst, bytes, rank, disp, idx);
}

/* This rank's counter idx, read with acquire order (data a notification counted is
 * visible after it): *value.  GDR_DEV_ERR_ARG when no such counter reaches the GPU. */
static inline GDR_TRIG_HD int gdr_dev_notify_value(const gdr_dev_win_t *w, int64_t idx,
                                                   uint64_t *value)
{
    const volatile gdr_dev_notify_t *n = w->notify;
    if (n == NULL || n->mine == NULL || idx < 0 || idx >= n->count)
        return GDR_DEV_ERR_ARG;
    *value = gdr_trig_load_acquire(n->mine + idx);
    return GDR_DEV_OK;
}

/* Waits until this rank's counter idx is at least value; *seen is what it read then. */
static inline GDR_TRIG_HD int gdr_dev_notify_wait(const gdr_dev_win_t *w, int64_t idx,
                                                  uint64_t value, uint64_t *seen)
{
    uint64_t cur = 0;
    int rc;
    while ((rc = gdr_dev_notify_value(w, idx, &cur)) == GDR_DEV_OK && cur < value)
        gdr_trig_pause();
    if (rc == GDR_DEV_OK)
        *seen = cur;
    return rc;
}

/* Waits until this rank's word at signal_disp meets (cmp, value); *seen is that value.

 * The window must be one kernels reach directly (device or page-locked memory). */
static inline GDR_TRIG_HD int gdr_dev_signal_wait_until(const gdr_dev_win_t *w,
                                                        int64_t signal_disp, int cmp,
                                                        uint64_t value, uint64_t *seen)
{
    if (!gdr_signal_cmp_valid(cmp))
        return GDR_DEV_ERR_ARG;
    const volatile uint64_t *word = (const volatile uint64_t *) gdr_dev_at(w, w->rank,
                                                                          signal_disp, 8);
    if (word == NULL)
        return GDR_DEV_ERR_RANGE;
    uint64_t cur;
    while (!gdr_signal_met(cmp, cur = gdr_trig_load_acquire(word), value))
        gdr_trig_pause();
    *seen = cur;
    return GDR_DEV_OK;
}

#endif /* GDR_RMA_KERNEL_API_H */
