/* Small contiguous puts and gets of host memory, by the target's cached route: the
 * selector's rc/short and rc/bcopy (gdr_rma_select.h) posted with no plan and no operation
 * object, counted per target in the window's tracker.  What an MPI_Put of 8 bytes costs is
 * mostly this path's (bench/opcost); everything else goes through gdr_rma_plan and
 * gdr_rma_issue. */
#ifndef GDR_RMA_SMALL_H
#define GDR_RMA_SMALL_H

#include "gdr_rma_select.h"
#include "gdr_rma_win.h"

/* What the engine knows of target's route: rc (a peer and a key, not dynamic), dynamic,
 * and the small protocols' limits (capped by short_cap and bcopy_cap, the host's
 * thresholds); the host adds the rest and sets known. */
void gdr_rma_route_fill(const gdr_rma_win_t *w, int target, uint32_t short_cap,
                        uint32_t bcopy_cap, gdr_rma_route_t *r);

/* A put of len > 0 bytes from src, or a get into dst, at disp (in the target's units) of
 * target's window, by proto (put: GDR_RMA_PROTO_RC_SHORT or _RC_BCOPY; get: _RC_BCOPY).
 * GDR_RMA_OK: posted.  GDR_RMA_NOREG: not this way, nothing done (outside the window, over
 * a limit, no such protocol): the general path takes it.  GDR_RMA_BUSY: no room now,
 * nothing done.  GDR_RMA_ERROR: the transport failed (its error says why). */
int gdr_rma_put_small(gdr_rma_win_t *w, int target, gdr_rma_proto_t proto, const void *src,
                      size_t len, int64_t disp);
int gdr_rma_get_small(gdr_rma_win_t *w, int target, void *dst, size_t len, int64_t disp);

#endif /* GDR_RMA_SMALL_H */
