/* The RMA engine's three seams, as structs of function pointers:
 *  - the transport (src/adapt implements it over src/netmod/verbs): post RDMA writes, reads and
 *    8-byte atomics on a peer's registered memory, with gather/scatter lists; register
 *    memory for remote access; pin origin buffers.  Every posted operation completes
 *    once, through its done callback, inside the host's progress;
 *  - the host (src/netmod implements it over MPICH): drive progress, send the small
 *    control message that asks a target about a dynamic window's region, say whether
 *    message-path accumulates are still in flight, report a long wait;
 *  - the device (src/adapt implements it over src/gpu): pinned host memory, ordered work
 *    queues of copies and accumulate kernels, and marks polled without waiting: what the
 *    staged protocol (gdr_rma_staged.h) and the ipc transport (gdr_rma_ipc.h) need of a
 *    GPU.
 * Only types here (and gdr_rma_iov_bytes): the engine, the adapters and the tests include
 * it. */
#ifndef GDR_RMA_TRANSPORT_H
#define GDR_RMA_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "gdr/gpu/gdr_gpu_acc.h"       /* types only: the accumulate kernel's arguments */
#include "common/gdr_status.h"
#include "gdr_rma_proto.h"

/* The bytes of n pieces. */
static inline uint64_t gdr_rma_iov_bytes(const struct iovec *v, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i].iov_len;
    return sum;
}

/* Results of posts and of the engine's calls: common/gdr_status.h's, by the engine's
 * names.  BUSY: no room (progress, then post again).  NOREG: the origin buffer cannot be
 * registered; nothing was posted, send the data another way.  ERROR: the transport
 * failed (its error says why), or a transport operation completed in error.  HOST_ERROR:
 * a host callback failed (the host keeps its own error).  NOMEM: out of memory. */
enum {
    GDR_RMA_OK = GDR_STATUS_OK, GDR_RMA_BUSY = GDR_STATUS_BUSY, GDR_RMA_NOREG = GDR_STATUS_NOREG,
    GDR_RMA_ERROR = GDR_STATUS_ERROR, GDR_RMA_HOST_ERROR = GDR_STATUS_HOST_ERROR,
    GDR_RMA_NOMEM = GDR_STATUS_NOMEM
};

/* status 0: completed (writes and atomics: at the target); else the work failed. */
typedef void (*gdr_rma_done_fn)(void *arg, int status);

/* Remote access a registration grants. */
enum { GDR_RMA_REMOTE_READ = 1, GDR_RMA_REMOTE_WRITE = 2, GDR_RMA_REMOTE_ATOMIC = 4 };

typedef enum gdr_rma_atomic {
    GDR_RMA_ATOMIC_FETCH_ADD,   /* *remote += operand, old value returned */
    GDR_RMA_ATOMIC_CMP_SWAP     /* *remote == compare ? *remote = operand; old returned */
} gdr_rma_atomic_t;

typedef struct gdr_rma_mr {
    void *handle;               /* NULL: nothing registered */
    uint64_t addr, len;
    uint32_t rkey;
} gdr_rma_mr_t;

/* A post's flags.  AFTER_READS: it acts at the target only after every read and atomic
 * posted to that peer before it has completed (on verbs IBV_SEND_FENCE): a release or
 * a synchronisation write behind an epoch's reads and atomics, without waiting for
 * them on the host. */
#define GDR_RMA_POST_AFTER_READS 1u

typedef struct gdr_rma_transport {
    void *ctx;
    /* a contiguous write or read by the engine's protocol (gdr_rma_proto.h), which the
     * transport carries out and never changes: put takes rc/short (len <= short_max),
     * rc/bcopy (len <= bcopy_max; both leave src free on return) or rc/zcopy (src read
     * by the NIC until done); get rc/bcopy or rc/zcopy.  Waits for the peer's connection;
     * NOREG: this protocol cannot take it (over a limit, a buffer that cannot be
     * registered), nothing posted, error() says why */
    int (*put)(void *ctx, int peer, gdr_rma_proto_t proto, const void *src, size_t len,
               uint64_t raddr, uint32_t rkey, unsigned flags, gdr_rma_done_fn done, void *arg);
    int (*get)(void *ctx, int peer, gdr_rma_proto_t proto, void *dst, size_t len,
               uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg);
    /* the hot path's forms of rc/short and rc/bcopy (gdr_rma_small.h), NULL where the
     * transport has none: they never wait, NOREG where they would (no free operation,
     * no connection or room yet: the general path takes it); src free on return, a
     * read's data in dst before done */
    int (*put_short)(void *ctx, int peer, const void *src, size_t len, uint64_t raddr,
                     uint32_t rkey, gdr_rma_done_fn done, void *arg);
    int (*put_bcopy)(void *ctx, int peer, const void *src, size_t len, uint64_t raddr,
                     uint32_t rkey, gdr_rma_done_fn done, void *arg);
    int (*get_bcopy)(void *ctx, int peer, void *dst, size_t len, uint64_t raddr,
                     uint32_t rkey, gdr_rma_done_fn done, void *arg);
    /* the limits of those (short_max 0 until the transport knows its inline limit) */
    void (*small_limits)(const void *ctx, uint32_t *short_max, uint32_t *bcopy_max);
    /* one work request over n local pieces, all inside pin */
    int (*writev)(void *ctx, int peer, const struct iovec *src, size_t n, const void *pin,
                  uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg);
    int (*readv)(void *ctx, int peer, const struct iovec *dst, size_t n, const void *pin,
                 uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg);
    /* n atomics of one kind with one doorbell; done once for all (flags: the first's) */
    int (*atomicv)(void *ctx, int peer, gdr_rma_atomic_t op, const void *operands,
                   uint64_t compare, void *results, const uint64_t *raddrs, size_t n,
                   uint32_t rkey, unsigned flags, gdr_rma_done_fn done, void *arg);
    size_t (*atomicv_max)(const void *ctx);
    int (*sge_fits)(const void *ctx, size_t n, size_t total);
    /* keeps [addr, addr+len) registered until unpin; *pin NULL: nothing needed (the
     * transport copies so little).  device_id != 0: GPU memory of that CUDA buffer id,
     * always registered (the host cannot copy it), never through a registration made
     * for another buffer at the same address */
    int (*pin)(void *ctx, const void *addr, size_t len, uint64_t device_id, void **pin);
    void (*unpin)(void *ctx, void *pin);
    int (*reg)(void *ctx, void *addr, size_t len, unsigned access, gdr_rma_mr_t *out,
               char *why, size_t why_len);
    void (*dereg)(void *ctx, gdr_rma_mr_t *mr);
    const char *(*error)(const void *ctx);      /* why the last post said NOREG */
} gdr_rma_transport_t;

/* What a target says of the dynamic-window region around an address. */
typedef struct gdr_rma_region_reply {
    int found;
    uint64_t base, size;
    uint32_t rkey;              /* 0: not registered (accesses go as messages) */
    int device;                 /* the region is device (GPU) memory */
    uint64_t detaches;          /* the target's detaches so far (gdr_rma_win_detach) */
} gdr_rma_region_reply_t;

/* A wait that is taking long: counted polls, for the host's report. */
typedef struct gdr_rma_stall {
    unsigned long polls;
    int reported;
    double since;
} gdr_rma_stall_t;

typedef struct gdr_rma_host {
    void *ctx;
    /* one round of progress of everything (other paths complete operations too);
     * 0, or nonzero on failure (the engine returns GDR_RMA_HOST_ERROR) */
    int (*progress)(void *ctx);
    /* asks target (a rank of host_win) about its region around addr; blocks; 0 or
     * nonzero on failure */
    int (*query_region)(void *ctx, void *host_win, int target, uint64_t addr,
                        gdr_rma_region_reply_t *out);
    /* message-path accumulates from this rank to target still in flight */
    int (*am_accumulates_pending)(void *ctx, void *host_win, int target);
    /* called every 4096 polls of a wait (may be NULL) */
    void (*stalled)(void *ctx, gdr_rma_stall_t *st, const char *what, int peer);
    /* the staged protocol (gdr_rma_staged.h): sends len <= GDR_RMA_STAGED_MSG_MAX bytes to
     * target (another rank of host_win), copied before return, delivered in send order
     * per (sender, target) to the target's gdr_rma_staged_deliver; never waits for progress
     * (handlers may call it).  0, or nonzero on failure.  NULL: no staged protocol */
    int (*send_msg)(void *ctx, void *host_win, int target, const void *msg, size_t len);
} gdr_rma_host_t;

/* One run of a kernel copy: len bytes from src to dst. */
typedef struct gdr_rma_copy_run {
    void *dst;
    const void *src;
    size_t len;
} gdr_rma_copy_run_t;
#define GDR_RMA_COPY_RUNS_MAX 64

/* The device: every member returns at once, never waiting for queued work.  Work queued
 * on one queue runs in order, asynchronously to the caller; queues are ordered with each
 * other only through marks the caller polls.  Members return GDR_RMA_OK, or a negative
 * GDR_RMA_ERROR or GDR_RMA_NOMEM with error(ctx) saying why (reached: see there).
 * Queues and marks are opaque.  Not thread safe: the caller serialises, as for the engine. */
typedef struct gdr_rma_device {
    void *ctx;
    /* n > 0 bytes at *p, 64-byte aligned, that the NIC can register and the device address */
    int (*host_alloc)(void *ctx, size_t n, void **p);
    /* frees host_alloc's p; the marks after the last work queued on p have been reached */
    int (*host_free)(void *ctx, void *p);
    /* a new, empty queue at *queue */
    int (*queue_new)(void *ctx, void **queue);
    /* frees queue at once; work already queued on it still completes */
    int (*queue_free)(void *ctx, void *queue);
    /* queues copying src's pieces into dst's, in order (equal totals; device or host memory;
     * host pieces host_alloc'ed, else a real driver may copy before returning); the pieces
     * stay untouched by the caller until a mark queued after this is reached */
    int (*copyv)(void *ctx, void *queue, const struct iovec *dst, size_t n_dst,
                 const struct iovec *src, size_t n_src);
    /* queues the accumulate kernel over *args (copied; gdr_gpu_acc_valid's op and type,
     * pointers the device can address: device or host_alloc'ed memory) */
    int (*acc)(void *ctx, void *queue, const gdr_gpu_acc_args_t *args);
    /* *mark: the point after everything queued on queue so far */
    int (*mark)(void *ctx, void *queue, void **mark);
    /* 1: all work before mark has completed; 0: some is pending; negative: it failed */
    int (*reached)(void *ctx, void *mark);
    /* gives mark back, reached or not */
    void (*mark_free)(void *ctx, void *mark);
    /* CUDA's id of the allocation holding ptr (never reused); 0 for other memory or when
     * the query failed: compare it with the id seen earlier to detect a freed buffer */
    uint64_t (*buffer_id)(void *ctx, const void *ptr);
    /* the ipc transport's (gdr_rma_ipc.h; NULL where a device has none of it): */
    /* 1 when the device addresses p as it is (device memory, page-locked host memory) */
    int (*addressable)(void *ctx, const void *p);
    /* queues one launch of the device's copy kernel over n runs (1 <= n <=
     * GDR_RMA_COPY_RUNS_MAX, every address addressable, no overlaps): a small or scattered
     * copy without a copy-engine transfer per run.  GDR_RMA_NOREG: no such kernel here
     * (queue copyv instead), nothing queued */
    int (*copy_runs)(void *ctx, void *queue, const gdr_rma_copy_run_t *runs, size_t n);
    /* n > 0 bytes of device memory at *p; mem_free gives it back (the marks after the
     * last work on it reached) */
    int (*mem_alloc)(void *ctx, size_t n, void **p);
    int (*mem_free)(void *ctx, void *p);
    /* the last failure, one sentence */
    const char *(*error)(const void *ctx);
} gdr_rma_device_t;

#endif /* GDR_RMA_TRANSPORT_H */
