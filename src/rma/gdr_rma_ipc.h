/* The ipc transport (protocol "ipc", gdr_rma_proto.h): one-sided operations to a window
 * that this process's device reaches as it is (the target's own device or page-locked
 * window, or a same-node device window mapped here through CUDA IPC; the host maps it
 * and checks the access against it), as UCX's cuda_ipc is a transport of UCT.  A Put or
 * Get is one device copy per contiguous run between the origin buffer and the target's
 * window, or one launch of the device's copy kernel for small ones (ipc/kernel); the
 * accumulate family is the device's accumulate kernel applied to the target's window
 * with element-wise atomic steps, so that other same-node origins may apply theirs at
 * once.  No host staging, no message to the target, the target's CPU not involved.
 *
 * Work to one target runs in order on that target's lane (a device queue made at its
 * first operation): copies to different targets overlap, and a wait for one target waits
 * for that target's work alone.  Remote and local completion are one here.
 * Plain C11 over the device seam (gdr_rma_transport.h).  Not thread safe: the caller
 * serialises, as for the engine. */
#ifndef GDR_RMA_IPC_H
#define GDR_RMA_IPC_H

#include "gdr_rma_transport.h"

enum { GDR_RMA_IPC_SCRATCH_MAX = 16 << 20 };

typedef struct gdr_rma_ipc_lane {
    void *queue;                /* made at the target's first operation */
    void *done;                 /* the mark after its last work; NULL: nothing pending */
    int acc_here;               /* accumulates are among that work */
    char *scratch;              /* device memory for operands gathered or bounced */
    size_t scratch_size;
} gdr_rma_ipc_lane_t;

typedef struct gdr_rma_ipc {
    const gdr_rma_device_t *dev;
    int nranks;
    size_t kernel_copy_max;     /* ipc/kernel for copies of at most this many bytes (0: off) */
    size_t scratch_max;         /* scratch bytes per round of an accumulate: init sets
                                 * GDR_RMA_IPC_SCRATCH_MAX (tests lower it; a multiple of 32) */
    gdr_rma_ipc_lane_t *lanes;  /* per target rank */
} gdr_rma_ipc_t;

/* nranks lanes, none with a queue yet.  GDR_RMA_OK or GDR_RMA_NOMEM (nothing held). */
int gdr_rma_ipc_init(gdr_rma_ipc_t *x, const gdr_rma_device_t *dev, int nranks,
                     size_t kernel_copy_max);

/* Frees the lanes' queues, marks and scratch.  The caller has waited (gdr_rma_ipc_wait). */
void gdr_rma_ipc_fini(gdr_rma_ipc_t *x);

/* Whether every piece of t (offsets from disp * disp_unit) lies inside a window of size
 * bytes (disp >= 0, no overflow). */
int gdr_rma_ipc_inside(int64_t disp, uint64_t disp_unit, uint64_t size, const struct iovec *t,
                       size_t tn);

/* Put (put = 1: origin -> target) or Get of the origin pieces o against the target pieces
 * t, offsets from tbase (the target's window as mapped here, at the access's displacement;
 * equal totals).  One launch of the copy kernel when the bytes are at most
 * kernel_copy_max, the runs fit one launch and the device addresses every origin piece;
 * else one copy per run.  *by_kernel says which.  GDR_RMA_OK, or an error with the
 * device's sentence (error()). */
int gdr_rma_ipc_copy(gdr_rma_ipc_t *x, int target, int put, char *tbase, const struct iovec *o,
                     size_t on, const struct iovec *t, size_t tn, int *by_kernel);

/* One accumulate-family operation, as the host translated it. */
typedef struct gdr_rma_ipc_acc {
    int op, type;               /* the kernel's (gdr_gpu_acc_valid); GDR_GPU_ACC_ATOMIC is
                                 * added here */
    size_t elem;                /* bytes per element */
    const void *compare;        /* Compare_and_swap's compare value (any memory), or NULL */
    const struct iovec *t;      /* target pieces: offsets from tbase, whole elements */
    size_t tn;
    const struct iovec *o;      /* origin pieces (on = 0: none, as for NO_OP) */
    size_t on;
    const struct iovec *r;      /* result pieces (rn = 0: no result, as for Accumulate) */
    size_t rn;
} gdr_rma_ipc_acc_t;

/* 1 when every element a would touch at tbase takes an atomic step
 * (gdr_gpu_acc_atomic_ok): else the operation is not this transport's. */
int gdr_rma_ipc_acc_takes(const gdr_rma_ipc_acc_t *a, const char *tbase);

/* Queues a (which gdr_rma_ipc_acc_takes) on target's lane: one launch per target piece,
 * origin and result straight from their buffers when each is one piece the device
 * addresses, else gathered into (scattered from) the lane's scratch in rounds of at most
 * scratch_max bytes, in the lane's order.  GDR_RMA_OK, GDR_RMA_NOMEM (no scratch) or
 * GDR_RMA_ERROR, error() saying why. */
int gdr_rma_ipc_acc(gdr_rma_ipc_t *x, int target, char *tbase, const gdr_rma_ipc_acc_t *a);

/* Whether target's lane holds accumulates not yet waited for. */
int gdr_rma_ipc_acc_pending(const gdr_rma_ipc_t *x, int target);

/* Blocks until target's work (-1: every target's) has completed.  GDR_RMA_OK, or
 * GDR_RMA_ERROR when the device reports failed work (error()). */
int gdr_rma_ipc_wait(gdr_rma_ipc_t *x, int target);

#endif /* GDR_RMA_IPC_H */
