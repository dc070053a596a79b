/* A target's route as the engine fills it (gdr_rma_select.h). */
#include "gdr_rma_select.h"
#include "gdr_rma_win.h"

void gdr_rma_route_fill(const gdr_rma_win_t *w, int target, uint32_t short_cap,
                        uint32_t bcopy_cap, gdr_rma_route_t *r)
{
    const gdr_rma_transport_t *net = &w->eng->net;
    uint32_t short_max = 0, bcopy_max = 0;
    r->dynamic = (uint8_t) w->dynamic;
    r->rc = (uint8_t) gdr_rma_win_reaches(w, target);
    if (net->small_limits != NULL)
        net->small_limits(net->ctx, &short_max, &bcopy_max);
    r->short_max = short_max < short_cap ? short_max : short_cap;
    r->bcopy_max = bcopy_max < bcopy_cap ? bcopy_max : bcopy_cap;
}

const gdr_rma_route_t *gdr_rma_route_rc(gdr_rma_win_t *w, int target)
{
    gdr_rma_route_t *r = &w->targets[target].route;
    if (!r->known || (r->short_max == 0 && r->rc && w->eng->short_cap != 0))
        gdr_rma_route_fill(w, target, w->eng->short_cap, UINT32_MAX, r);
    return r;
}
