/* Ordered accumulates across paths: an origin whose accumulates to a target change way
 * (the NIC's atomics, MPICH's messages, the staged protocol) first lets the other way's
 * complete, where the window's accumulate_ordering asks for it (gdr_rma_path.h). */
#ifndef GDR_RMA_ACC_ORDER_H
#define GDR_RMA_ACC_ORDER_H

#include "gdr_rma_win.h"

/* The three ways an accumulate reaches a target. */
typedef enum gdr_rma_acc_via {
    GDR_RMA_VIA_NIC = 1,        /* NIC atomics (the engine) */
    GDR_RMA_VIA_MESSAGE = 2,    /* MPICH's active messages */
    GDR_RMA_VIA_STAGED = 3      /* gdr's staged protocol (device memory) */
} gdr_rma_acc_via_t;

/* Accumulates to target are about to go `via`: with ordered accumulates, an origin that
 * changes a target's way first waits for the accumulates it sent the other way (the NIC's
 * and the staged protocol's are both remote completions in the window's tracker; the
 * host says when its messages' have been applied).  NIC <-> message waits only when both
 * are in use (atomics.switch_wait); the staged protocol takes int64 SUM, NO_OP and CSWAP
 * whose operands are device memory, so any window with NIC atomics and ordered
 * accumulates (atomics.order_after_reads) waits at a switch to or from it. */
int gdr_rma_switch_path(gdr_rma_win_t *w, int target, gdr_rma_acc_via_t via);

/* A message-path operation: counted, and with ordered accumulates an origin that
 * switches a target from the NIC to messages first waits for its NIC accumulates. */
int gdr_rma_note_message(gdr_rma_win_t *w, gdr_rma_kind_t kind, int target);

#endif /* GDR_RMA_ACC_ORDER_H */
