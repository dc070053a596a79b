/* One operation as the engine sees it, and the plan for it: the selector's answer
 * (gdr_rma_select.h, which makes plans in gdr_rma_select.c) bound to what it needs.  The
 * host describes the operation flat (target pieces as offsets, origin and result buffers
 * as contiguous spans or piece lists) and the plan says: by message (the host's
 * active-message RMA, the staged protocol, the node's GPU path), or by RDMA with this key
 * at these addresses and this protocol, moving origin data contiguously, as a
 * gather/scatter list, or through an engine buffer the host packs (results: unpacks at
 * completion).
 *
 * Targets are reached piece by piece (one RDMA operation per piece) when they have at
 * most GDR_RMA_PIECES_ANY pieces, or at most GDR_RMA_PIECES_MAX of at least
 * GDR_RMA_PIECES_MIN_AVG bytes on average; accumulates, an atomic per element, at most
 * GDR_RMA_ACC_PIECES_MAX.  More scattered targets go as one message unpacked there.
 * A scattered origin of a put (or destination of a get) to one target piece goes as a
 * gather (scatter) list when it has at most GDR_RMA_SGE_MAX pieces and the transport
 * takes them in one work request; else it is packed.
 *
 * Device memory (a GPU buffer: buf.device_id set) is never touched by the host: a put or get
 * moves it zero-copy, as a pinned gather/scatter list of its pieces (a contiguous device
 * buffer is a list of one piece: never inlined nor bounced), to a target of one piece;
 * anything else with a device buffer goes by message. */
#ifndef GDR_RMA_PLAN_H
#define GDR_RMA_PLAN_H

#include "gdr_rma_win.h"
#include "gdr_rma_acc_order.h"

#define GDR_RMA_PIECES_ANY 64
#define GDR_RMA_PIECES_MAX 1024
#define GDR_RMA_PIECES_MIN_AVG 512
#define GDR_RMA_ACC_PIECES_MAX 64
#define GDR_RMA_SGE_MAX 16

/* One side's memory: a contiguous span at addr, or scattered: n pieces (iov, absolute
 * addresses) when the host listed them (n 0: not listed, so it packs or unpacks). */
typedef struct gdr_rma_buf {
    int scattered;
    uint64_t device_id;         /* 0: host memory; else GPU memory, by its CUDA buffer id:
                                 * the host must not read or write it */
    void *addr;
    const struct iovec *iov;
    size_t n;
} gdr_rma_buf_t;

typedef struct gdr_rma_access {
    gdr_rma_kind_t kind;
    int target;
    int64_t disp;               /* in the target's displacement units */
    /* the target side: pieces as offsets from disp * unit (iov_base holds the offset) */
    const struct iovec *tpieces;
    size_t ntpieces;
    uint64_t tbytes;
    int64_t t_true_lb;          /* the footprint, for dynamic windows' region lookup */
    uint64_t t_span;
    /* accumulates: the op, and whether elements are 8-byte integers */
    gdr_rma_acc_op_t op;
    int int64_elements;
    /* origin data (put, accumulates except NO_OP); results (get: the origin buffer) */
    gdr_rma_buf_t origin, result;
    const void *compare;        /* compare-and-swap */
    uint64_t compare_device_id; /* 0: compare is host memory */
    /* the staged protocol's accumulates (gdr_rma_staged.h): gdr_gpu_op_t, gdr_gpu_type_t */
    int gpu_op, gpu_type;
} gdr_rma_access_t;

typedef enum gdr_rma_move {
    GDR_RMA_MOVE_NONE,          /* no data this side */
    GDR_RMA_MOVE_DIRECT,        /* the contiguous user buffer */
    GDR_RMA_MOVE_SGE,           /* the user's pieces as a gather/scatter list (pinned) */
    GDR_RMA_MOVE_BOUNCE         /* an engine buffer: the host packs into it (origin), or
                                 * unpacks from it at completion (results) */
} gdr_rma_move_t;

typedef struct gdr_rma_plan {
    int by_rdma;                /* 0: by message; nothing else is set */
    gdr_rma_proto_t proto;      /* the selector's answer (put and get: how a contiguous
                                 * buffer to one target piece moves) */
    gdr_rma_route_t route;      /* what it was asked on: the small protocols' limits for
                                 * each piece the issue posts */
    gdr_rma_path_t path;        /* accumulates: the NIC path (put/get: GDR_RMA_PATH_AM) */
    uint32_t rkey;
    uint64_t tbase;             /* the target's address of disp */
    gdr_rma_move_t origin_move, result_move;
    void *pin;                  /* user pieces held registered (SGE) */
    void *origin_bounce;        /* engine buffers of tbytes (BOUNCE): the host packs the */
    void *result_bounce;        /* origin into the first; results land in the second */
} gdr_rma_plan_t;

/* Plans a.  GDR_RMA_OK (plan->by_rdma says whether RDMA takes it), GDR_RMA_ERROR with
 * *not_attached set (a dynamic window's target has not attached the address), or
 * GDR_RMA_HOST_ERROR; out of memory plans a message. */
int gdr_rma_plan(gdr_rma_win_t *w, const gdr_rma_access_t *a, gdr_rma_plan_t *plan,
                 int *not_attached);
/* The host cannot go on with a plan: release what it holds. */
void gdr_rma_plan_drop(gdr_rma_win_t *w, gdr_rma_plan_t *plan);
/* Whether a target of n pieces, bytes in all, is too scattered for RDMA (the host
 * asks before it lists the pieces). */
int gdr_rma_target_too_scattered(gdr_rma_kind_t kind, size_t n, uint64_t bytes);

#endif /* GDR_RMA_PLAN_H */
