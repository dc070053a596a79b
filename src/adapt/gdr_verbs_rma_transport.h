/* The RMA engine's transport seam (src/rma/gdr_rma_transport.h) over gdr_verbs_rma
 * (src/netmod/verbs): RC queue pairs of the AM channel, the registration cache and bounce
 * buffers.  An adapter of src/adapt, where the engine's seams meet the layers below it. */
#ifndef GDR_VERBS_RMA_TRANSPORT_H
#define GDR_VERBS_RMA_TRANSPORT_H

#include "rma/gdr_rma_transport.h"
#include "verbs/gdr_verbs_rma.h"

/* Fills *net with rma's operations (net->ctx = rma). */
void gdr_verbs_rma_transport(gdr_verbs_rma_t *rma, gdr_rma_transport_t *net);

#endif /* GDR_VERBS_RMA_TRANSPORT_H */
