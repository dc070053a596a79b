/* The accumulate path rule (src/rma/gdr_rma_path.h). */
#include "gdr_unit.h"
#include "rma/gdr_rma_path.h"

int main(void)
{
    unsigned all = GDR_RMA_DECLARES_SUM | GDR_RMA_DECLARES_NO_OP | GDR_RMA_DECLARES_CSWAP |
        GDR_RMA_DECLARES_OTHER;
    gdr_rma_atomics_policy_t def = gdr_rma_atomics_policy(1, all, 1);
    GDR_CHECK(def.native && def.order_after_reads && def.switch_wait,
              "default window (any op, ordered), all ranks on the NIC: native, fenced, "
              "drains before switching paths");
    GDR_CHECK(gdr_rma_acc_path(&def, GDR_RMA_ACC_SUM, 1, 1) == GDR_RMA_PATH_FETCH_ADD,
              "SUM on aligned 8-byte integers: fetch-add");
    GDR_CHECK(gdr_rma_acc_path(&def, GDR_RMA_ACC_NO_OP, 1, 1) == GDR_RMA_PATH_READ,
              "NO_OP: RDMA read");
    GDR_CHECK(gdr_rma_acc_path(&def, GDR_RMA_ACC_CSWAP, 1, 1) == GDR_RMA_PATH_CMP_SWAP,
              "compare-and-swap: RDMA CAS");
    GDR_CHECK(gdr_rma_acc_path(&def, GDR_RMA_ACC_OTHER, 1, 1) == GDR_RMA_PATH_AM,
              "REPLACE/MAX/...: active message");
    GDR_CHECK(gdr_rma_acc_path(&def, GDR_RMA_ACC_SUM, 0, 1) == GDR_RMA_PATH_AM,
              "SUM on 4-byte ints or doubles: active message");
    GDR_CHECK(gdr_rma_acc_path(&def, GDR_RMA_ACC_SUM, 1, 0) == GDR_RMA_PATH_AM,
              "misaligned target: active message");

    gdr_rma_atomics_policy_t shm = gdr_rma_atomics_policy(0, all, 1);
    GDR_CHECK(!shm.native && gdr_rma_acc_path(&shm, GDR_RMA_ACC_SUM, 1, 1) == GDR_RMA_PATH_AM,
              "some accumulates go through shared memory: everything as messages");

    gdr_rma_atomics_policy_t nic_only =
        gdr_rma_atomics_policy(1, GDR_RMA_DECLARES_SUM | GDR_RMA_DECLARES_NO_OP, 1);
    GDR_CHECK(nic_only.native && nic_only.order_after_reads && !nic_only.switch_wait,
              "which_accumulate_ops=sum,no_op: native, no path switches to drain");
    gdr_rma_atomics_policy_t unordered = gdr_rma_atomics_policy(1, all, 0);
    GDR_CHECK(unordered.native && !unordered.order_after_reads && !unordered.switch_wait,
              "accumulate_ordering=none: no fence, no draining");
    gdr_rma_atomics_policy_t am_only = gdr_rma_atomics_policy(1, GDR_RMA_DECLARES_OTHER, 1);
    GDR_CHECK(!am_only.native, "which_accumulate_ops without sum/no_op/cswap: no NIC atomics "
              "(and no atomic access granted)");
    return gdr_unit_finish();
}
