/* The protocol selector (src/rma/gdr_rma_select.h): one row per case, the route, the
 * operation and the named protocol it must get. */
#include <string.h>
#include "gdr_unit.h"
#include "rma/gdr_rma_select.h"

enum { RC = 1, IPC, NODE_AM, NONE, RC_GPU, RC_STAGED, NONE_STAGED };

static gdr_rma_route_t route(int kind_of_route)
{
    gdr_rma_route_t r = {.known = 1,.short_max = 64,.bcopy_max = 8192 };
    switch (kind_of_route) {
        case RC:
            r.rc = 1;
            break;
        case IPC:
            r.ipc = 1;
            r.rc = 1;
            break;
        case NODE_AM:
            r.node_am = 1;
            break;
        case RC_GPU:
            r.rc = r.nic_gpu = 1;
            break;
        case RC_STAGED:
            r.rc = r.staged = 1;
            break;
        case NONE_STAGED:
            r.staged = 1;
            break;
        default:
            break;
    }
    return r;
}

static const struct row {
    int route;
    gdr_rma_kind_t kind;
    uint64_t bytes;
    int device;
    size_t opieces, tpieces;
    int sge_fits;
    gdr_rma_path_t acc_path;
    const char *want;
} rows[] = {
    /* host memory, contiguous, by size: short, bcopy, zcopy */
    {RC, GDR_RMA_PUT, 8, 0, 1, 1, 0, GDR_RMA_PATH_AM, "put/rc/short"},
    {RC, GDR_RMA_PUT, 64, 0, 1, 1, 0, GDR_RMA_PATH_AM, "put/rc/short"},
    {RC, GDR_RMA_PUT, 65, 0, 1, 1, 0, GDR_RMA_PATH_AM, "put/rc/bcopy"},
    {RC, GDR_RMA_PUT, 8192, 0, 1, 1, 0, GDR_RMA_PATH_AM, "put/rc/bcopy"},
    {RC, GDR_RMA_PUT, 8193, 0, 1, 1, 0, GDR_RMA_PATH_AM, "put/rc/zcopy"},
    {RC, GDR_RMA_GET, 8, 0, 1, 1, 0, GDR_RMA_PATH_AM, "get/rc/bcopy"},
    {RC, GDR_RMA_GET, 8192, 0, 1, 1, 0, GDR_RMA_PATH_AM, "get/rc/bcopy"},
    {RC, GDR_RMA_GET, 1 << 20, 0, 1, 1, 0, GDR_RMA_PATH_AM, "get/rc/zcopy"},
    /* scattered host buffers: a list when it fits, else packed; scattered targets */
    {RC, GDR_RMA_PUT, 4096, 0, 4, 1, 1, GDR_RMA_PATH_AM, "put/rc/iov"},
    {RC, GDR_RMA_PUT, 4096, 0, 40, 1, 0, GDR_RMA_PATH_AM, "put/rc/bcopy"},
    {RC, GDR_RMA_PUT, 4096, 0, 4, 2, 1, GDR_RMA_PATH_AM, "put/rc/bcopy"},
    {RC, GDR_RMA_PUT, 8, 0, 1, 2, 0, GDR_RMA_PATH_AM, "put/rc/bcopy"},
    {RC, GDR_RMA_GET, 10000, 0, 1, 100, 0, GDR_RMA_PATH_AM, "get/am"},
    {RC, GDR_RMA_PUT, 1 << 20, 0, 1, 100, 0, GDR_RMA_PATH_AM, "put/rc/zcopy"},
    /* device buffers: zero-copy when the NIC reaches GPU memory, else staged or messages */
    {RC_GPU, GDR_RMA_PUT, 8, 1, 1, 1, 0, GDR_RMA_PATH_AM, "put/rc/zcopy"},
    {RC_GPU, GDR_RMA_GET, 8, 1, 3, 1, 1, GDR_RMA_PATH_AM, "get/rc/iov"},
    {RC_GPU, GDR_RMA_PUT, 8, 1, 1, 2, 0, GDR_RMA_PATH_AM, "put/am"},
    {RC_STAGED, GDR_RMA_PUT, 8, 1, 1, 1, 0, GDR_RMA_PATH_AM, "put/staged"},
    {RC, GDR_RMA_PUT, 8, 1, 1, 1, 0, GDR_RMA_PATH_AM, "put/am"},
    {NONE_STAGED, GDR_RMA_GET, 8, 1, 1, 1, 0, GDR_RMA_PATH_AM, "get/staged"},
    {NONE_STAGED, GDR_RMA_GET, 8, 0, 1, 1, 0, GDR_RMA_PATH_AM, "get/am"},
    /* routes that decide alone */
    {IPC, GDR_RMA_PUT, 8, 1, 1, 1, 0, GDR_RMA_PATH_AM, "put/ipc"},
    {IPC, GDR_RMA_ACC, 8, 1, 1, 1, 0, GDR_RMA_PATH_FETCH_ADD, "acc/ipc"},
    {NODE_AM, GDR_RMA_PUT, 8, 0, 1, 1, 0, GDR_RMA_PATH_AM, "put/am"},
    {NONE, GDR_RMA_PUT, 8, 0, 1, 1, 0, GDR_RMA_PATH_AM, "put/am"},
    /* the accumulate family: the NIC's ops, else messages; device operands staged */
    {RC, GDR_RMA_ACC, 8, 0, 1, 1, 0, GDR_RMA_PATH_FETCH_ADD, "acc/rc/atomic"},
    {RC, GDR_RMA_CAS, 8, 0, 1, 1, 0, GDR_RMA_PATH_CMP_SWAP, "acc/rc/atomic"},
    {RC, GDR_RMA_FOP, 8, 0, 1, 1, 0, GDR_RMA_PATH_READ, "acc/rc/read"},
    {RC, GDR_RMA_GET_ACC, 64, 0, 1, 2, 0, GDR_RMA_PATH_READ, "acc/am"},
    {RC, GDR_RMA_ACC, 8, 0, 1, 1, 0, GDR_RMA_PATH_AM, "acc/am"},
    {RC, GDR_RMA_ACC, 8 * 65, 0, 1, 65, 0, GDR_RMA_PATH_FETCH_ADD, "acc/am"},
    {RC_STAGED, GDR_RMA_ACC, 8, 1, 1, 1, 0, GDR_RMA_PATH_FETCH_ADD, "acc/staged"},
    {RC_GPU, GDR_RMA_ACC, 8, 1, 1, 1, 0, GDR_RMA_PATH_FETCH_ADD, "acc/am"},
};

int main(void)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *w = &rows[i];
        gdr_rma_route_t r = route(w->route);
        gdr_rma_select_in_t in = {.kind = w->kind,.bytes = w->bytes,.device = w->device,
            .opieces = w->opieces,.tpieces = w->tpieces,.sge_fits = w->sge_fits,
            .acc_path = w->acc_path
        };
        const char *got = gdr_rma_proto_name(w->kind, gdr_rma_select(&r, &in));
        GDR_CHECK(strcmp(got, w->want) == 0, "row %zu: %s (got %s)", i, w->want, got);
    }
    /* no short protocol before the NIC's inline limit is known, or when turned off */
    gdr_rma_route_t r = route(RC);
    r.short_max = 0;
    gdr_rma_select_in_t in = {.kind = GDR_RMA_PUT,.bytes = 8,.opieces = 1,.tpieces = 1 };
    GDR_CHECK(gdr_rma_select(&r, &in) == GDR_RMA_PROTO_RC_BCOPY, "short_max 0: put/rc/bcopy");
    char line[400];
    r = route(RC);
    gdr_rma_route_str(&r, line, sizeof(line));
    GDR_CHECK(strstr(line, "put: rc/short <= 64 B < rc/bcopy <= 8192 B < rc/zcopy") != NULL,
              "the printed table: %s", line);
    r = route(IPC);
    gdr_rma_route_str(&r, line, sizeof(line));
    GDR_CHECK(strstr(line, "ipc") != NULL, "an ipc route prints as such: %s", line);
    GDR_CHECK(strcmp(gdr_rma_proto_name(GDR_RMA_PUT, GDR_RMA_PROTOS), "?") == 0,
              "an out-of-range protocol has no name");
    return gdr_unit_finish();
}
