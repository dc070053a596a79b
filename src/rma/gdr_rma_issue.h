/* One planned operation (gdr_rma_plan.h) as transport work: an RDMA write or read per
 * target piece (or one gather/scatter work request), element-wise atomics in batches
 * of one doorbell, or one read for an accumulate's NO_OP.  Large user buffers the
 * transport cannot register make the operation go as a message instead (NOREG), before
 * anything was posted. */
#ifndef GDR_RMA_ISSUE_H
#define GDR_RMA_ISSUE_H

#include "gdr_rma_plan.h"

/* Posts a as planned (the plan's buffers and pin pass to the operation, and the host
 * has packed the origin into plan->origin_bounce).  GDR_RMA_OK with *op held: the host
 * sets its completion (gdr_rma_op_on_complete), then calls gdr_rma_op_posted.
 * GDR_RMA_NOREG: nothing posted, send it as a message.  GDR_RMA_ERROR, _HOST_ERROR,
 * _NOMEM otherwise. */
int gdr_rma_issue(gdr_rma_win_t *w, const gdr_rma_access_t *a, gdr_rma_plan_t *plan,
                  gdr_rma_op_t **op);

#endif /* GDR_RMA_ISSUE_H */
