/* Which path an accumulate-family operation takes: an RDMA atomic or read on the
 * NIC, or an active message executed by the target's CPU.
 *
 * The rule (per window, decided collectively at creation):
 *  - MPI makes concurrent accumulates to one location atomic only with each other,
 *    and only with one basic datatype; by default (accumulate_ops=same_op_no_op, and
 *    also same_op) they also use one op, plus MPI_NO_OP.  So the path may depend on
 *    (op, datatype, address) alone: every origin picks the same path for a location,
 *    and NIC atomics never race CPU read-modify-writes on it.
 *  - The NIC path is open only when every accumulate of the window reaches the NIC:
 *    no accumulate goes through shared memory (MPICH's ACCU_NO_SHM: no two ranks on
 *    one node, or disable_shm_accumulate) and every rank, this one included (loopback
 *    queue pair), has a queue pair.  And only if which_accumulate_ops names an op the
 *    NIC does: SUM (fetch-add), NO_OP (RDMA read, which never writes and so is safe
 *    next to CPU updates) or cswap (compare-and-swap).  Elements must be 8-byte
 *    integers at 8-byte aligned target addresses; anything else goes as an AM.
 *  - accumulate_ordering other than "none": an atomic that follows an accumulate's
 *    RDMA read to the same target goes after the read (posted fenced: an RC responder
 *    runs requests in order, but may fetch a read's data after later requests), and when
 *    which_accumulate_ops
 *    also allows AM-executed ops, an origin that switches paths to a target first
 *    waits for the other path's outstanding accumulates to that target.
 * Pure; thread safe. */
#ifndef GDR_RMA_PATH_H
#define GDR_RMA_PATH_H

#include <stdint.h>

typedef enum gdr_rma_acc_op {
    GDR_RMA_ACC_SUM,
    GDR_RMA_ACC_NO_OP,
    GDR_RMA_ACC_CSWAP,
    GDR_RMA_ACC_OTHER           /* REPLACE, MAX, PROD, bitwise, ...: the target's CPU */
} gdr_rma_acc_op_t;

typedef enum gdr_rma_path {
    GDR_RMA_PATH_AM = 0,
    GDR_RMA_PATH_FETCH_ADD,
    GDR_RMA_PATH_READ,
    GDR_RMA_PATH_CMP_SWAP
} gdr_rma_path_t;

/* Ops a window declares (which_accumulate_ops), as a set of these bits. */
enum {
    GDR_RMA_DECLARES_SUM = 1,
    GDR_RMA_DECLARES_NO_OP = 2,
    GDR_RMA_DECLARES_CSWAP = 4,
    GDR_RMA_DECLARES_OTHER = 8
};

typedef struct gdr_rma_atomics_policy {
    int native;                 /* the NIC path is open */
    int order_after_reads;      /* an atomic after an accumulate read goes after it */
    int switch_wait;            /* drain the other path before switching (ordering) */
} gdr_rma_atomics_policy_t;

/* all_reach_nic: every accumulate of the window, from every rank, reaches a QP
 * (agreed collectively).  declared: GDR_RMA_DECLARES_* bits.  ordered: the
 * window's accumulate_ordering is not "none". */
gdr_rma_atomics_policy_t gdr_rma_atomics_policy(int all_reach_nic, unsigned declared, int ordered);

/* The path of one element-wise accumulate: op, whether elements are 8-byte
 * integers, and whether every target element address is 8-byte aligned. */
gdr_rma_path_t gdr_rma_acc_path(const gdr_rma_atomics_policy_t *p, gdr_rma_acc_op_t op,
                                int int64_elements, int aligned8);

const char *gdr_rma_path_str(gdr_rma_path_t path);

#endif /* GDR_RMA_PATH_H */
