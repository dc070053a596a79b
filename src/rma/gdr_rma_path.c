#include "gdr_rma_path.h"

gdr_rma_atomics_policy_t gdr_rma_atomics_policy(int all_reach_nic, unsigned declared, int ordered)
{
    gdr_rma_atomics_policy_t p = { 0, 0, 0 };
    unsigned nic_ops = GDR_RMA_DECLARES_SUM | GDR_RMA_DECLARES_NO_OP | GDR_RMA_DECLARES_CSWAP;
    p.native = all_reach_nic && (declared & nic_ops) != 0;
    p.order_after_reads = p.native && ordered;
    p.switch_wait = p.native && ordered && (declared & GDR_RMA_DECLARES_OTHER) != 0;
    return p;
}

gdr_rma_path_t gdr_rma_acc_path(const gdr_rma_atomics_policy_t *p, gdr_rma_acc_op_t op,
                                int int64_elements, int aligned8)
{
    if (!p->native || !int64_elements || !aligned8)
        return GDR_RMA_PATH_AM;
    switch (op) {
        case GDR_RMA_ACC_SUM:
            return GDR_RMA_PATH_FETCH_ADD;
        case GDR_RMA_ACC_NO_OP:
            return GDR_RMA_PATH_READ;
        case GDR_RMA_ACC_CSWAP:
            return GDR_RMA_PATH_CMP_SWAP;
        default:
            return GDR_RMA_PATH_AM;
    }
}

const char *gdr_rma_path_str(gdr_rma_path_t path)
{
    switch (path) {
        case GDR_RMA_PATH_FETCH_ADD:
            return "RDMA fetch-add";
        case GDR_RMA_PATH_READ:
            return "RDMA read";
        case GDR_RMA_PATH_CMP_SWAP:
            return "RDMA compare-and-swap";
        default:
            return "active message";
    }
}
