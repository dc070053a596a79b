/* One-sided operations over the AM channel's RC queue pairs: RDMA WRITE, RDMA READ
 * and 8-byte atomics on a peer's registered memory, and the registrations that
 * expose a window.
 *
 * The caller says how each transfer moves (gdr_verbs_rma_how_t: src/rma's selector
 * decides, this layer carries it out): inline or through registered bounce buffers (the
 * origin buffer is free at return), or the user's buffer registered through the AM
 * channel's registration cache.  Small work requests (and atomics) may be held back
 * until the next post, progress or wait, so that several share a doorbell (cfg.hold).  Transfers larger than the port's message limit
 * are split.  Every operation completes once, through its done callback, inside
 * gdr_verbs_am_progress(): for writes and atomics that is completion at the target
 * (the RC acknowledgement), for reads that the data has landed; an operation whose
 * work request failed completes with a nonzero status.
 *
 * Plain C, no MPICH; not thread safe (the caller serialises, like the AM channel). */
#ifndef GDR_VERBS_RMA_H
#define GDR_VERBS_RMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "common/gdr_status.h"
#include "gdr_verbs_am.h"

typedef struct gdr_verbs_rma gdr_verbs_rma_t;

typedef struct gdr_verbs_rma_config {
    uint32_t depth;             /* work requests in flight per peer: the AM config's rma_depth */
    uint32_t bounce_size;       /* puts and gets up to this size go through bounce buffers */
    uint32_t bounce_count;      /* bounce buffers, shared by all peers */
    uint64_t chunk;             /* largest work request of a put or get (0: the device's
                                 * largest message); an operation of more than depth
                                 * such chunks takes larger ones */
    uint32_t hold;              /* small work requests held back to share a doorbell with
                                 * the next ones (0: every post rings at once) */
} gdr_verbs_rma_config_t;

/* Remote access a registration grants (the window decides). */
enum {
    GDR_VERBS_RMA_REMOTE_READ = 1,
    GDR_VERBS_RMA_REMOTE_WRITE = 2,
    GDR_VERBS_RMA_REMOTE_ATOMIC = 4
};

typedef struct gdr_verbs_rma_region {
    void *mr;                   /* NULL: nothing registered (zero length) */
    uint64_t addr, len;
    uint32_t rkey;
} gdr_verbs_rma_region_t;

typedef enum gdr_verbs_rma_atomic_op {
    GDR_VERBS_RMA_FETCH_ADD,    /* *remote += operand, returns the old value */
    GDR_VERBS_RMA_CMP_SWAP      /* if *remote == compare then *remote = operand; returns old */
} gdr_verbs_rma_atomic_op_t;

/* status 0: done; nonzero: a work request of the operation failed (the channel
 * reports why); either way the operation's resources are released. */
typedef void (*gdr_verbs_rma_done_fn)(void *arg, int status);

typedef struct gdr_verbs_rma_stats {
    uint64_t writes, reads, atomics;    /* operations posted */
    uint64_t atomic_posts;      /* doorbells that posted them (atomicv batches several) */
    uint64_t bytes_written, bytes_read;
    uint64_t inline_puts, bounced, registered;  /* how origin data travelled */
    uint64_t gathered;          /* writes/reads with a gather/scatter list */
    uint64_t chunks;            /* work requests of contiguous puts and gets */
    uint64_t busy;              /* posts refused for want of room (caller retried) */
    uint64_t doorbells;         /* ibv_post_send calls */
    uint64_t held;              /* work requests held back for a later doorbell */
    uint64_t fenced;            /* work requests posted behind earlier reads and atomics */
    uint64_t hold_limit;        /* cfg.hold: work requests one doorbell may wait for */
} gdr_verbs_rma_stats_t;

/* Post results are common/gdr_status.h's (-1 is GDR_STATUS_ERROR), so that the RMA
 * engine's transport seam hands them on unchanged. */
/* Returned by the post functions when the peer's send queue or the bounce buffers are
 * full: progress the channel and post again. */
#define GDR_VERBS_RMA_BUSY GDR_STATUS_BUSY
/* Returned by put and get when the origin buffer cannot be registered (not memory the
 * NIC can pin, or over the locked-memory limit): nothing was posted, the channel is
 * fine; send the data another way.  gdr_verbs_rma_error() says why. */
#define GDR_VERBS_RMA_NOREG GDR_STATUS_NOREG

/* Attaches to am (whose config has rma_depth == cfg->depth).  NULL with why set. */
gdr_verbs_rma_t *gdr_verbs_rma_create(gdr_verbs_iface_t *am, const gdr_verbs_rma_config_t *cfg,
                                      char *why, size_t why_len);

/* Registers [addr, addr+len) for remote access (GDR_VERBS_RMA_REMOTE_* flags).
 * len 0 registers nothing and succeeds.  Returns 0 or -1 with why set. */
int gdr_verbs_rma_register(gdr_verbs_rma_t *rma, void *addr, size_t len, unsigned access,
                           gdr_verbs_rma_region_t *out, char *why, size_t why_len);

/* Destroys the registration: its key is refused by the NIC from now on. */
void gdr_verbs_rma_deregister(gdr_verbs_rma_t *rma, gdr_verbs_rma_region_t *region);

/* fence, for the posts below that take it: the work request acts at the target only
 * after this queue pair's earlier reads and atomics have completed (IBV_SEND_FENCE;
 * a responder may read a read's data after later requests ran).  On Soft-RoCE the bit
 * is left off: rxe's responder finishes a read before it takes the next request
 * (drivers/infiniband/sw/rxe/rxe_resp.c, get_req), and under streams of fenced work
 * requests Linux 6.1's rxe stalled for good.  Counted in stats.fenced either way. */

/* How a write or read moves its local bytes; the caller decides (src/rma's selector)
 * and this layer carries it out: INLINE, inside the work request (writes of len <=
 * gdr_verbs_rma_short_max()); BOUNCE, through a bounce buffer (len <=
 * gdr_verbs_rma_bcopy_max(): a write's src copied at post, a read's data copied to dst
 * before done); REGISTERED, the user's buffer through the registration cache, in chunks. */
typedef enum gdr_verbs_rma_how {
    GDR_VERBS_RMA_INLINE, GDR_VERBS_RMA_BOUNCE, GDR_VERBS_RMA_REGISTERED
} gdr_verbs_rma_how_t;

/* RDMA WRITE of len > 0 bytes from src to (raddr, rkey) at peer, moved as how says (src
 * reusable at once unless REGISTERED).  0, GDR_VERBS_RMA_BUSY, GDR_VERBS_RMA_NOREG (over
 * how's limit, or the buffer cannot be registered: nothing posted, rma's error says why)
 * or -1. */
int gdr_verbs_rma_put(gdr_verbs_rma_t *rma, int peer, gdr_verbs_rma_how_t how, const void *src,
                      size_t len, uint64_t raddr, uint32_t rkey, int fence,
                      gdr_verbs_rma_done_fn done, void *arg);

/* RDMA READ of len > 0 bytes from (raddr, rkey) at peer into dst (how: BOUNCE or
 * REGISTERED). */
int gdr_verbs_rma_get(gdr_verbs_rma_t *rma, int peer, gdr_verbs_rma_how_t how, void *dst,
                      size_t len, uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done,
                      void *arg);

/* The selector's small protocols (src/rma/gdr_rma_select.h), one work request each, no
 * chunking and no registration: rc/short, a write of len <= gdr_verbs_rma_short_max()
 * bytes inside the work request; rc/bcopy, a write or read of len <= gdr_verbs_rma_bcopy_max()
 * bytes through a bounce buffer (a read's data is copied to dst before done).  src is free
 * on return.  0, GDR_VERBS_RMA_BUSY, GDR_VERBS_RMA_NOREG (len over the limit: nothing
 * posted, take the general path) or -1. */
int gdr_verbs_rma_put_short(gdr_verbs_rma_t *rma, int peer, const void *src, size_t len,
                            uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg);
int gdr_verbs_rma_put_bcopy(gdr_verbs_rma_t *rma, int peer, const void *src, size_t len,
                            uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg);
int gdr_verbs_rma_get_bcopy(gdr_verbs_rma_t *rma, int peer, void *dst, size_t len,
                            uint64_t raddr, uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg);
/* 0 until the first queue pair is made (its inline limit). */
uint32_t gdr_verbs_rma_short_max(const gdr_verbs_rma_t *rma);
uint32_t gdr_verbs_rma_bcopy_max(const gdr_verbs_rma_t *rma);

/* Keeps [addr, addr+len) registered until _unpin, so that puts from and gets into
 * parts of it never return GDR_VERBS_RMA_NOREG: for a transfer posted piece by piece,
 * which must not fail half-way.  *pin is NULL when no piece would need registering,
 * unless device_id is set: GPU memory of that CUDA buffer id, never copied on the host,
 * and never reached through a registration made for another buffer
 * (gdr_verbs_rcache_get_tagged).
 * 0, or GDR_VERBS_RMA_NOREG (gdr_verbs_rma_error() says why). */
typedef struct gdr_verbs_rcache_entry gdr_verbs_rma_pin_t;
int gdr_verbs_rma_pin(gdr_verbs_rma_t *rma, const void *addr, size_t len, uint64_t device_id,
                      gdr_verbs_rma_pin_t **pin);
void gdr_verbs_rma_unpin(gdr_verbs_rma_t *rma, gdr_verbs_rma_pin_t *pin);

/* Gather and scatter lists: an RDMA WRITE of n pieces of local memory to one remote
 * range, or an RDMA READ of one remote range into n pieces, as one work request (no
 * packing).  Every piece lies inside pin's registration (gdr_verbs_rma_pin) and stays
 * in use until done.  _sge_fits says whether n pieces of total bytes can go so. */
int gdr_verbs_rma_sge_fits(const gdr_verbs_rma_t *rma, size_t n, size_t total);
int gdr_verbs_rma_writev(gdr_verbs_rma_t *rma, int peer, const struct iovec *src, size_t n,
                         const gdr_verbs_rma_pin_t *pin, uint64_t raddr, uint32_t rkey,
                         gdr_verbs_rma_done_fn done, void *arg);
int gdr_verbs_rma_readv(gdr_verbs_rma_t *rma, int peer, const struct iovec *dst, size_t n,
                        const gdr_verbs_rma_pin_t *pin, uint64_t raddr, uint32_t rkey,
                        gdr_verbs_rma_done_fn done, void *arg);

/* An 8-byte atomic on the naturally aligned word at raddr; the old value goes to
 * result (8 bytes, any alignment) unless NULL.  fence: as above. */
int gdr_verbs_rma_atomic(gdr_verbs_rma_t *rma, int peer, gdr_verbs_rma_atomic_op_t op,
                         uint64_t operand, uint64_t compare, void *result, uint64_t raddr,
                         uint32_t rkey, int fence, gdr_verbs_rma_done_fn done, void *arg);

/* n (1 to gdr_verbs_rma_atomicv_max()) atomics of one kind, posted with one doorbell:
 * element i applies the 8 bytes at operands + 8*i (any alignment; for CMP_SWAP the
 * value swapped in, compared with compare) to the aligned word at raddrs[i]; the old
 * values go to results (8*n bytes) unless NULL.  done(arg) runs once, when all have
 * completed. */
#define GDR_VERBS_RMA_ATOMICV_MAX 32
size_t gdr_verbs_rma_atomicv_max(const gdr_verbs_rma_t *rma);
int gdr_verbs_rma_atomicv(gdr_verbs_rma_t *rma, int peer, gdr_verbs_rma_atomic_op_t op,
                          const void *operands, uint64_t compare, void *results,
                          const uint64_t *raddrs, size_t n, uint32_t rkey, int fence,
                          gdr_verbs_rma_done_fn done, void *arg);

/* Posts the work requests held back for peer (-1: whichever peer has some), one
 * doorbell.  The channel calls it before it polls and before it posts to that peer
 * itself; a caller that waits without progressing the channel calls it first.  0 or -1
 * (the channel failed: the held operations never complete). */
int gdr_verbs_rma_post_held(gdr_verbs_rma_t *rma, int peer);

/* Why the last post returned GDR_VERBS_RMA_NOREG. */
const char *gdr_verbs_rma_error(const gdr_verbs_rma_t *rma);

/* One-sided work requests to peer still in flight. */
uint32_t gdr_verbs_rma_in_flight(const gdr_verbs_rma_t *rma, int peer);

const gdr_verbs_rma_stats_t *gdr_verbs_rma_stats(const gdr_verbs_rma_t *rma);

/* Detaches from the channel; call with nothing in flight. */
void gdr_verbs_rma_destroy(gdr_verbs_rma_t *rma);

#endif /* GDR_VERBS_RMA_H */
