/* Dynamic windows: MPICH's side of the engine's regions (src/rma/gdr_rma_regions.h).
 * MPI_Win_attach registers the region (a window without RDMA only records it) and
 * MPI_Win_detach destroys its key and, with control blocks, tells the ranks that learned
 * this rank's regions (so that they keep what they learned across epochs); an origin
 * asks the target about the region around an address with a small active message,
 * answered by the target's progress engine, over gdr's channel or, to a rank of the same
 * node, over MPICH's shared memory.  Every access to a dynamic window is checked so at the
 * origin (gdr_win.c, from MPICH patch 0004's hook) whichever way it then goes: MPICH's
 * message handlers at the target write a dynamic window unchecked. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_engine_lock.h"
#include "gdr_am.h"
#include "gpu/gdr_gpu_ipc.h"

typedef struct {
    uint64_t win_id;
    uint64_t addr;
    uint64_t reply_to;          /* the origin's region_wait_t */
    int origin;                 /* rank in the window's communicator */
    int want_ipc;               /* a same-node origin asks for a device region's handle */
} region_query_t;

typedef struct {
    uint64_t reply_to;
    gdr_rma_region_reply_t region;
    gdr_gpu_ipc_handle_t ipc;   /* of the region's first byte, when ipc_ok */
    int ipc_ok;
} region_reply_t;

typedef struct {
    volatile int done;
    region_reply_t reply;
} region_wait_t;

static int region_query_cb(void *am_hdr, void *data, MPI_Aint data_sz, uint32_t attr,
                           MPIR_Request ** req)
{
    const region_query_t *q = am_hdr;
    region_reply_t r = {.reply_to = q->reply_to };
    MPIR_Win *win = MPIDIU_map_lookup_shared(MPIDI_global.win_map, q->win_id);

    if (attr & MPIDIG_AM_ATTR__IS_ASYNC)
        *req = NULL;
    if (win == MPIDIU_MAP_NOT_FOUND)
        return MPI_SUCCESS;     /* cannot happen: windows are created collectively */
    int mpi_errno, took = MPIDI_GDR_engine_enter();
    r.region = gdr_rma_regions_answer(&GDR_WIN(win).rma.regions, q->origin, q->addr);
    r.ipc_ok = q->want_ipc && r.region.found && r.region.device && MPIDI_GDR_global.gpu.on
        && gdr_gpu_ipc_handle_get(&MPIDI_GDR_global.gpu, (void *) (uintptr_t) r.region.base,
                                  &r.ipc) == 0;
    MPIDI_GDR_engine_exit(took);
    /* the answer goes back the way the question came */
    CH4_CALL(am_send_hdr_reply(win->comm_ptr, q->origin, MPIDI_GDR_global.region_reply_handler,
                               &r, sizeof(r), 0, 0), (attr & MPIDIG_AM_ATTR__IS_LOCAL) != 0,
             mpi_errno);
    return mpi_errno;
}

static int region_reply_cb(void *am_hdr, void *data, MPI_Aint data_sz, uint32_t attr,
                           MPIR_Request ** req)
{
    const region_reply_t *r = am_hdr;
    region_wait_t *w = (region_wait_t *) (uintptr_t) r->reply_to;

    if (attr & MPIDIG_AM_ATTR__IS_ASYNC)
        *req = NULL;
    w->reply = *r;
    w->done = 1;
    return MPI_SUCCESS;
}

int MPIDI_GDR_dynamic_register_handlers(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_GDR_global.region_query_handler = MPIDIG_am_reg_cb_dynamic(NULL, region_query_cb);
    MPIDI_GDR_global.region_reply_handler = MPIDIG_am_reg_cb_dynamic(NULL, region_reply_cb);
    MPIR_ERR_CHKANDJUMP1(MPIDI_GDR_global.region_query_handler < 0
                         || MPIDI_GDR_global.region_reply_handler < 0, mpi_errno, MPI_ERR_INTERN,
                         "**gdr_transport", "**gdr_transport %s",
                         "no free MPICH active-message handler id for dynamic windows");
  fn_fail:
    return mpi_errno;
}

int MPIDI_GDR_dynamic_attach(MPIR_Win * win, void *base, MPI_Aint size)
{
    int mpi_errno = MPI_SUCCESS;
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    char why[256];

    if (win->dev.netmod.gdr.s == NULL || w->targets == NULL || size <= 0)
        return MPI_SUCCESS;     /* no gdr table for this window, or nothing to reach */
    /* the target's progress reads the regions (region_query_cb), maybe in another thread;
     * without RDMA the region is only recorded, for origins' checks */
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_regions_attach(&w->regions, w->rdma ? w->eng : NULL, base,
                                    (uint64_t) size, gdr_rma_win_access(w),
                                    MPIDI_GDR_gpu_expose_flags(base), why, sizeof(why));
    MPIDI_GDR_engine_exit(took);
    MPIR_ERR_CHKANDJUMP1(rc == GDR_RMA_NOMEM, mpi_errno, MPI_ERR_NO_MEM, "**nomem",
                         "**nomem %s", "gdr attached region");
    if (rc != 0 && w->rdma && MPIR_CVAR_CH4_GDR_VERBOSE > 0)
        /* still correct: accesses to this region go as messages */
        fprintf(stderr, "gdr[%d]: attached region without RDMA: %s\n", MPIR_Process.rank, why);
  fn_fail:
    return mpi_errno;
}

int MPIDI_GDR_dynamic_detach(MPIR_Win * win, const void *base)
{
    int mpi_errno = MPI_SUCCESS;
    if (win->dev.netmod.gdr.s == NULL)
        return MPI_SUCCESS;
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_win_detach(w, (uint64_t) (uintptr_t) base);
    MPIDI_GDR_engine_exit(took);
    /* the region is gone either way; an origin not told keeps a key that no longer works */
    MPIR_ERR_CHKANDJUMP1(rc != GDR_RMA_OK, mpi_errno, MPI_ERR_OTHER, "**gdr_transport",
                         "**gdr_transport %s", "telling the ranks that learned this dynamic "
                         "window's regions of the detach failed (an RDMA write into their "
                         "control blocks: see the verbs error above; "
                         "MPIR_CVAR_CH4_GDR_NATIVE_SYNC=0 avoids control blocks)");
  fn_fail:
    return mpi_errno;
}

/* Asks target about its region around addr and waits for the answer in *wait. */
static int query(MPIR_Win * win, int target, uint64_t addr, int want_ipc, region_wait_t * wait)
{
    int mpi_errno = MPI_SUCCESS;
    region_query_t q = {.win_id = MPIDIG_WIN(win, win_id),.addr = addr,
        .reply_to = (uint64_t) (uintptr_t) wait,.origin = win->comm_ptr->rank,
        .want_ipc = want_ipc
    };

    MPIDI_GDR_global.region_queries++;
    CH4_CALL(am_send_hdr(target, win->comm_ptr, MPIDI_GDR_global.region_query_handler, &q,
                         sizeof(q), 0, 0), MPIDI_rank_is_local(target, win->comm_ptr), mpi_errno);
    while (mpi_errno == MPI_SUCCESS && !wait->done)
        mpi_errno = MPIDI_GDR_progress_all();
    return mpi_errno;
}

int MPIDI_GDR_dynamic_query(void *host_win, int target, uint64_t addr,
                            gdr_rma_region_reply_t * out)
{
    region_wait_t wait = { 0 };
    int mpi_errno = query(host_win, target, addr, 0, &wait);
    *out = wait.reply.region;
    return mpi_errno;
}

int MPIDI_GDR_dynamic_query_ipc(MPIR_Win * win, int target, uint64_t addr,
                                gdr_rma_region_reply_t * out, gdr_gpu_ipc_handle_t * h, int *ok)
{
    region_wait_t wait = { 0 };
    int mpi_errno = query(win, target, addr, 1, &wait);
    *out = wait.reply.region;
    *h = wait.reply.ipc;
    *ok = mpi_errno == MPI_SUCCESS && wait.reply.ipc_ok;
    return mpi_errno;
}

void MPIDI_GDR_dynamic_forget(MPIR_Win * win, int target)
{
    if (win->dev.netmod.gdr.s == NULL || !GDR_WIN(win).rma.dynamic)
        return;
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    int took = MPIDI_GDR_engine_enter();
    gdr_rma_regions_forget(&w->regions, target);
    MPIDI_GDR_engine_exit(took);
}
