/* The small protocols by a cached route (src/rma/gdr_rma_small.h) over the fake
 * transport: data at the right address, counted in flight until completion, nothing done
 * for what they refuse. */
#include <string.h>
#include "gdr_unit.h"
#include "fake_engine.h"
#include "rma/gdr_rma_small.h"

int main(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 1);
    fk.inline_max = 8;
    fk.bcopy_max = 8;

    gdr_rma_route_t r = { 0 };
    gdr_rma_route_fill(&w, 1, UINT32_MAX, UINT32_MAX, &r);
    GDR_CHECK(r.rc && !r.dynamic && r.short_max == 8 && r.bcopy_max == 8,
              "route: the NIC reaches target 1, limits from the transport");
    gdr_rma_route_fill(&w, 1, 4, 2, &r);
    GDR_CHECK(r.short_max == 4 && r.bcopy_max == 2, "the host's caps lower the limits");

    /* a put: posted, counted, data copied at post, placed at disp * unit */
    memset(target_mem[1], 0, sizeof(target_mem[1]));
    uint64_t v = 0x1122334455667788ull;
    unsigned long long puts = eng.count[GDR_RMA_BY_NIC][GDR_RMA_PUT];
    int rc = gdr_rma_put_small(&w, 1, GDR_RMA_PROTO_RC_SHORT, &v, 8, 3);
    GDR_CHECK(rc == GDR_RMA_OK && fk.n == 1 && fk.small_posts == 1, "put/rc/short posted");
    GDR_CHECK(w.tracker.remote[1] == 1 && w.tracker.total_remote == 1
              && w.tracker.local[1] == 0 && w.tracker.reading[1] == 0,
              "in flight remotely only (a write: the origin buffer is free at once)");
    GDR_CHECK(eng.count[GDR_RMA_BY_NIC][GDR_RMA_PUT] == puts + 1, "counted as an RDMA put");
    v = 0;                      /* the caller reuses its buffer at once */
    GDR_CHECK(gdr_rma_wait_target(&w.tracker, &eng, 1, 0) == GDR_RMA_OK,
              "flush: waits until the write completed");
    uint64_t got;
    memcpy(&got, target_mem[1] + 24, 8);
    GDR_CHECK(got == 0x1122334455667788ull && w.tracker.remote[1] == 0,
              "the value posted is at disp 3 x unit 8, and nothing is in flight");

    /* a get: remote, local and reading until it completes; the value lands in dst */
    uint64_t dst = 0;
    rc = gdr_rma_get_small(&w, 1, &dst, 8, 3);
    GDR_CHECK(rc == GDR_RMA_OK && w.tracker.local[1] == 1 && w.tracker.reading[1] == 1
              && w.tracker.remote[1] == 1, "get/rc/bcopy posted and counted three ways");
    GDR_CHECK(gdr_rma_wait_target(&w.tracker, &eng, 1, 1) == GDR_RMA_OK
              && dst == 0x1122334455667788ull && w.tracker.local[1] == 0
              && w.tracker.reading[1] == 0 && w.tracker.total_remote == 0,
              "flush_local: the value read back, all counts back to 0");

    /* refused: outside the window, over the transport's limit, no room */
    int posts = fk.posts;
    GDR_CHECK(gdr_rma_put_small(&w, 1, GDR_RMA_PROTO_RC_SHORT, &v, 8, 512) == GDR_RMA_NOREG
              && gdr_rma_put_small(&w, 1, GDR_RMA_PROTO_RC_SHORT, &v, 8, -1) == GDR_RMA_NOREG
              && gdr_rma_get_small(&w, 1, &dst, 8, INT64_MAX / 4) == GDR_RMA_NOREG,
              "past the window's end, a negative or overflowing displacement: not this way");
    char big[16] = { 0 };
    GDR_CHECK(gdr_rma_put_small(&w, 2, GDR_RMA_PROTO_RC_BCOPY, big, 16, 0) == GDR_RMA_NOREG,
              "over the transport's limit: not this way");
    fk.busy = 1;
    GDR_CHECK(gdr_rma_put_small(&w, 2, GDR_RMA_PROTO_RC_SHORT, &v, 8, 0) == GDR_RMA_BUSY,
              "no room: BUSY");
    GDR_CHECK(fk.posts == posts && w.tracker.total_remote == 0 && w.tracker.remote[2] == 0,
              "nothing posted and nothing counted for any of them");

    /* a failed write fails the flush that covers it, once */
    fk.fail_next = 1;
    GDR_CHECK(gdr_rma_put_small(&w, 2, GDR_RMA_PROTO_RC_BCOPY, &v, 8, 0) == GDR_RMA_OK,
              "put/rc/bcopy posted");
    GDR_CHECK(gdr_rma_wait_target(&w.tracker, &eng, 2, 0) == GDR_RMA_ERROR
              && gdr_rma_wait_target(&w.tracker, &eng, 2, 0) == GDR_RMA_OK,
              "its failure is reported by the next flush, and only there");

    /* a dynamic window's route has no cached key: not the small protocols' */
    gdr_rma_win_t d;
    make_win(&d, 1, GDR_RMA_DECLARES_SUM, 1);
    gdr_rma_route_fill(&d, 1, UINT32_MAX, UINT32_MAX, &r);
    GDR_CHECK(r.dynamic, "dynamic window: the route says so");
    gdr_rma_win_free(&d);
    gdr_rma_win_free(&w);
    return gdr_unit_finish();
}
