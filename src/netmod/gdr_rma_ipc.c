/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH4_GDR_LOCAL_DEVICE
      category    : CH4_GDR
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Same-node windows in device memory: gdr carries MPI_Put, MPI_Get, MPI_Rput
        and MPI_Rget to ranks of this node (and to this rank) itself, as copies on
        the GPU's copy engine straight between the origin buffer and the target's
        window (mapped once through CUDA IPC at window creation), and the
        accumulate family as gdr's accumulate kernel applied to the target's window
        with element-wise atomic steps.  Off: MPICH's shared-memory path carries
        them, as before gdr had this path.

    - name        : MPIR_CVAR_CH4_GDR_LOCAL_KERNEL_COPY
      category    : CH4_GDR
      type        : int
      default     : 16384
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Same-node device windows (MPIR_CVAR_CH4_GDR_LOCAL_DEVICE): a Put or Get
        of at most this many bytes, in at most 64 contiguous runs, between
        memory the GPU reaches (device or page-locked host memory) is one
        launch of gdr's copy kernel on the GPU's cores instead of one
        copy-engine transfer per run. 0: always the copy engine.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/
/* Same-node windows in device memory (DESIGN.md section 3), the netmod's side of the ipc
 * transport (src/rma/gdr_rma_ipc.h, which queues the copies and kernels): which windows
 * take it (claimed at creation, so that ch4 hands their same-node operations to gdr:
 * MPIDI_WINATTR_NM_LOCAL, MPICH patch 0015), the MPI call translated once
 * (gdr_access.h) and checked against the target's window as mapped here
 * (gdr_peer_map.c), request completion, MPI_T counters, and MPI's default accumulate
 * ordering kept with the other paths: with it, an origin that changes a target's path
 * first waits for the other path's accumulates to it.  What the transport cannot take
 * (more than LOCAL_PIECES_MAX pieces, 16-byte or misaligned elements, user-defined ops,
 * a node on several GPUs) goes as MPIDIG's messages as before: a choice by op, type and
 * address alone, never by layout. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_engine_lock.h"
#include "gdr_rma_ipc.h"
#include "gdr_access.h"
#include "gdr_triggered.h"
#include "rma/gdr_rma_ipc.h"
#include "gpu/gdr_gpu_mem.h"

enum { LOCAL_PIECES_MAX = 1024 };       /* more pieces: MPIDIG's messages pack them */

struct MPIDI_GDR_ipc_win {
    gdr_rma_ipc_t x;            /* the lanes: one device queue per target rank */
    unsigned char *acc_elsewhere;       /* per rank: accumulates by another path since */
    int one_gpu;                /* every rank of this node uses this GPU: accumulates here */
    int self_device;            /* this rank's window is device memory (not page-locked) */
};

void MPIDI_GDR_ipc_register_pvars(void)
{
    static const char *const names[GDR_RMA_KINDS][2] = {
        {"gdr_rma_put_local", "MPI_Put/Rput to a same-node device window as GPU copies"},
        {"gdr_rma_get_local", "MPI_Get/Rget from a same-node device window as GPU copies"},
        {"gdr_rma_acc_local", "MPI_Accumulate to a same-node device window, gdr's kernel"},
        {"gdr_rma_get_acc_local", "MPI_Get_accumulate on a same-node device window, gdr's "
         "kernel"},
        {"gdr_rma_fop_local", "MPI_Fetch_and_op on a same-node device window, gdr's kernel"},
        {"gdr_rma_cas_local", "MPI_Compare_and_swap on a same-node device window, gdr's "
         "kernel"},
    };
    for (int k = 0; k < GDR_RMA_KINDS; k++)
        MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, names[k][0],
                                  &MPIDI_GDR_global.local_count[k], 1, NULL,
                                  MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                  MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS,
                                  NULL, NULL, "CH4_GDR", names[k][1]);
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                              "gdr_rma_local_kernel_copies",
                              &MPIDI_GDR_global.local_kernel_copies, 1, NULL,
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "same-node Put/Get/Rput/Rget as one launch of "
                              "gdr's copy kernel (MPIR_CVAR_CH4_GDR_LOCAL_KERNEL_COPY)");
}

static void local_release(struct MPIDI_GDR_ipc_win *l)
{
    if (l->x.lanes != NULL)
        gdr_rma_ipc_fini(&l->x);
    MPL_free(l->acc_elsewhere);
    MPL_free(l);
}

int MPIDI_GDR_ipc_claims(MPIR_Win * win, int one_gpu)
{
    if (!MPIR_CVAR_CH4_GDR_LOCAL_DEVICE || !MPIDI_GDR_global.gpu.on)
        return 0;
    /* a dynamic window may have device memory attached at any time: always claimed */
    int n = win->comm_ptr->local_size, any = win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC;
    const struct MPIDI_GDR_peer_ipc *ipc = GDR_WIN(win).peer_ipc;
    for (int r = 0; ipc != NULL && r < n; r++)
        any |= ipc[r].ok;
    gdr_gpu_mem_info_t info = { 0 };
    int self = win->size > 0 && gdr_gpu_mem_query(&MPIDI_GDR_global.gpu, win->base, &info) == 0
        && (info.is_device || info.is_pinned_host);
    if (!any && !self)
        return 0;
    struct MPIDI_GDR_ipc_win *l = MPL_calloc(1, sizeof(*l), MPL_MEM_RMA);
    if (l != NULL) {
        l->acc_elsewhere = MPL_calloc(n, 1, MPL_MEM_RMA);
        l->one_gpu = one_gpu;
        l->self_device = self && info.is_device;
    }
    size_t kernel_max = (size_t) MPL_MAX(0, MPIR_CVAR_CH4_GDR_LOCAL_KERNEL_COPY);
    if (l == NULL || l->acc_elsewhere == NULL
        || gdr_rma_ipc_init(&l->x, &MPIDI_GDR_global.device_seam, n, kernel_max) != GDR_RMA_OK) {
        if (l != NULL)
            local_release(l);
        return 0;               /* only a shortcut lost: MPICH's shared memory carries them */
    }
    GDR_WIN(win).ipc = l;
    return 1;
}

/* The transport's failure as an MPI error: class, and the device's sentence. */
static int ipc_error(int rc)
{
    if (rc == GDR_RMA_NOMEM)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPI_ERR_NO_MEM, "**gdr_transport", "**gdr_transport %s",
                                    MPIDI_GDR_global.gpu.error);
    return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                                MPIDI_GDR_global.gpu.error);
}

/* A request-based operation completes before it returns (the copies and launches are
 * short; no request stays pending on a device queue): a completed request in *req. */
static int complete_at_once(struct MPIDI_GDR_ipc_win *l, int target, MPIR_Request ** req)
{
    int rc = gdr_rma_ipc_wait(&l->x, target);
    if (rc != GDR_RMA_OK)
        return ipc_error(rc);
    *req = MPIR_Request_create_from_pool(MPIR_REQUEST_KIND__RMA, 0, 2);
    if (*req == NULL)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPIX_ERR_NOREQ, "**nomemreq", NULL);
    MPID_Request_complete(*req);
    return MPI_SUCCESS;
}

/* The access reaches outside the target's window (as mapped here). */
static int outside(const gdr_dev_peer_t * peer, MPI_Aint tdisp, const MPIDI_GDR_access_t * d)
{
    return !gdr_rma_ipc_inside(tdisp, peer->disp_unit, peer->size, d->t, d->tn);
}

/* ---- the accumulate family ------------------------------------------------------------ */

static int is_accumulate(gdr_rma_kind_t kind)
{
    return kind != GDR_RMA_PUT && kind != GDR_RMA_GET;
}

/* Accumulates this rank sent to target another way (staged protocol, MPIDIG's messages)
 * have been applied: MPI's default accumulate ordering, kept across the change of path. */
static int wait_elsewhere(MPIR_Win * win, int target)
{
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    int mpi_errno = w->eng == NULL ? MPI_SUCCESS
        : MPIDI_GDR_rma_error(gdr_rma_wait_target(&w->tracker, w->eng, target, 0));
    while (mpi_errno == MPI_SUCCESS && MPIDI_GDR_am_accumulates_pending(win, target))
        mpi_errno = MPIDI_GDR_progress_all();
    return mpi_errno;
}

/* One accumulate-family operation by the transport's kernel on the target's mapped
 * window, whatever its layout or size (element-wise atomicity with the other same-node
 * origins needs every element of a type the kernel takes to go this way). */
static int local_acc(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win,
                     struct MPIDI_GDR_ipc_win *l, const gdr_dev_peer_t * peer,
                     MPIR_Request ** req, int *handled)
{
    int dynamic = GDR_WIN(win).rma.dynamic;
    int mpi_errno = MPI_SUCCESS;
    MPIDI_GDR_access_t s;
    int why;

    /* Every origin must apply accumulates to an element the same way (element-wise
     * atomicity): not where the node's ranks use several GPUs (a peer mapping of another
     * GPU's memory may not take the atomics natively: all go as messages), nor where the
     * window's accumulates all reach the NIC (its atomics are then the only ones on this
     * memory), nor to this rank's page-locked host window (the staged protocol, as
     * before). */
    if (!l->one_gpu || (GDR_WIN(win).rma.eng != NULL && GDR_WIN(win).rma.atomics.native)
        || (a->target == win->comm_ptr->rank && !l->self_device && !dynamic))
        return MPI_SUCCESS;
    /* what the kernel does not take as described goes as MPIDIG's messages, which also
     * report what is wrong with it */
    mpi_errno = MPIDI_GDR_access_describe(a, SIZE_MAX, &s, &why);
    if (mpi_errno != MPI_SUCCESS || why != MPIDI_GDR_ACCESS_OK || s.split)
        goto fn_exit;
    if (outside(peer, a->tdisp, &s)) {
        if (dynamic)
            goto fn_exit;       /* past the region: MPIDIG's messages (checked at the call) */
        *handled = 1;
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                             "the operation reaches outside the target's window");
    }
    char *tbase = peer->base + a->tdisp * (MPI_Aint) peer->disp_unit;
    gdr_rma_ipc_acc_t op = {.op = s.op,.type = s.type,.elem = s.elem,
        .compare = a->kind == GDR_RMA_CAS ? a->compare : NULL,.t = s.t,.tn = s.tn,
        .o = s.o,.on = s.op != GDR_GPU_OP_NO_OP ? s.on : 0,.r = s.r,
        .rn = a->kind != GDR_RMA_ACC ? s.rn : 0
    };
    if (!gdr_rma_ipc_acc_takes(&op, tbase))
        goto fn_exit;           /* 16-byte elements, misaligned: MPIDIG's messages */
    MPIDIG_RMA_OP_CHECK_SYNC(a->target, win);
    *handled = 1;
    if (l->acc_elsewhere[a->target]) {
        mpi_errno = wait_elsewhere(win, a->target);
        MPIR_ERR_CHECK(mpi_errno);
        l->acc_elsewhere[a->target] = 0;
    }
    int rc = gdr_rma_ipc_acc(&l->x, a->target, tbase, &op);
    if (rc != GDR_RMA_OK) {
        mpi_errno = ipc_error(rc);
        goto fn_fail;
    }
    MPIDI_GDR_global.local_count[a->kind]++;
    if (req != NULL)
        mpi_errno = complete_at_once(l, a->target, req);
  fn_exit:
    MPIDI_GDR_access_free(&s);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* An accumulate this path does not take goes another way: with MPI's default ordering,
 * this path's accumulates to that target land first, and the next one here waits for
 * the other way's. */
static int acc_goes_elsewhere(struct MPIDI_GDR_ipc_win *l, int target)
{
    l->acc_elsewhere[target] = 1;
    if (!gdr_rma_ipc_acc_pending(&l->x, target))
        return MPI_SUCCESS;
    int rc = gdr_rma_ipc_wait(&l->x, target);
    return rc == GDR_RMA_OK ? MPI_SUCCESS : ipc_error(rc);
}

int MPIDI_GDR_ipc_rma(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                        int *handled)
{
    int mpi_errno = MPI_SUCCESS, by_kernel;
    struct MPIDI_GDR_ipc_win *l = GDR_WIN(win).ipc;
    const gdr_dev_peer_t *peer;
    MPIDI_GDR_access_t d;
    int why;

    *handled = 0;
    if (l == NULL || a->target < 0 || a->target >= l->x.nranks)
        return MPI_SUCCESS;
    /* NULL: not this path */
    MPIDI_GDR_rma_args_t in_region;
    if (GDR_WIN(win).rma.dynamic) {
        /* the displacement is an address at the target: from its region's start here */
        uint64_t region;
        peer = MPIDI_GDR_peer_region_mapped(win, a->target, (uint64_t) a->tdisp, &region,
                                            &mpi_errno);
        if (mpi_errno != MPI_SUCCESS) {
            *handled = 1;
            return mpi_errno;
        }
        if (peer != NULL) {
            in_region = *a;
            in_region.tdisp = a->tdisp - (MPI_Aint) region;
            a = &in_region;
        }
    } else {
        peer = MPIDI_GDR_peer_mapped(win, a->target);
    }
    if (is_accumulate(a->kind)) {
        if (peer != NULL)
            mpi_errno = local_acc(a, win, l, peer, req, handled);
        if (mpi_errno == MPI_SUCCESS && !*handled)
            mpi_errno = acc_goes_elsewhere(l, a->target);
        return mpi_errno;
    }
    if (peer == NULL)
        return MPI_SUCCESS;
    mpi_errno = MPIDI_GDR_access_describe(a, LOCAL_PIECES_MAX, &d, &why);
    MPIR_ERR_CHECK(mpi_errno);
    if (why != MPIDI_GDR_ACCESS_OK || d.on + d.tn > LOCAL_PIECES_MAX)
        goto fn_exit;           /* (sizes that differ: MPIDIG reports the mismatch) */
    if (outside(peer, a->tdisp, &d)) {
        if (GDR_WIN(win).rma.dynamic)
            goto fn_exit;       /* past the region: MPIDIG's messages (checked at the call) */
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                             "the operation reaches outside the target's window");
    }
    MPIDIG_RMA_OP_CHECK_SYNC(a->target, win);
    *handled = 1;
    int rc = gdr_rma_ipc_copy(&l->x, a->target, a->kind == GDR_RMA_PUT,
                              peer->base + a->tdisp * (MPI_Aint) peer->disp_unit, d.o, d.on,
                              d.t, d.tn, &by_kernel);
    if (rc != GDR_RMA_OK) {
        mpi_errno = ipc_error(rc);
        goto fn_fail;
    }
    MPIDI_GDR_global.local_count[a->kind]++;
    MPIDI_GDR_global.local_kernel_copies += (unsigned) by_kernel;
    if (req != NULL)
        mpi_errno = complete_at_once(l, a->target, req);
  fn_exit:
    MPIDI_GDR_access_free(&d);
    return mpi_errno;
  fn_fail:
    *handled = 1;
    goto fn_exit;
}

int MPIDI_GDR_ipc_maps(MPIR_Win * win, int target)
{
    struct MPIDI_GDR_ipc_win *l = GDR_WIN(win).ipc;
    return l != NULL && target >= 0 && target < l->x.nranks
        && MPIDI_GDR_peer_mapped(win, target) != NULL;
}

int MPIDI_GDR_ipc_only_by_message(MPIR_Win * win, int target)
{
    /* (this rank itself stays with the engine when the node is on one GPU, as the other
     * ranks' accumulates are then GPU atomics too; with several GPUs the node's
     * accumulates all go as messages, this rank's own as well) */
    return (MPIDI_WIN(win, winattr) & MPIDI_WINATTR_NM_LOCAL)
        && target >= 0 && target < win->comm_ptr->local_size
        && (target != win->comm_ptr->rank || !GDR_WIN(win).ipc->one_gpu)
        && MPIDI_av_is_local(MPIDIU_comm_rank_to_av(win->comm_ptr, target));
}

int MPIDI_GDR_ipc_wait_target(MPIR_Win * win, int target)
{
    struct MPIDI_GDR_ipc_win *l = win->dev.netmod.gdr.s != NULL ? GDR_WIN(win).ipc : NULL;
    if (l == NULL)
        return MPI_SUCCESS;
    /* (under the engine lock: another thread's copies may be marking the lanes) */
    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_ipc_wait(&l->x, target);
    if (rc == GDR_RMA_OK)
        MPIDI_GDR_peer_regions_close(win, target);      /* (dynamic windows) */
    MPIDI_GDR_engine_exit(took);
    return rc == GDR_RMA_OK ? MPI_SUCCESS : ipc_error(rc);
}

int MPIDI_GDR_ipc_wait(MPIR_Win * win)
{
    return MPIDI_GDR_ipc_wait_target(win, -1);
}

void MPIDI_GDR_ipc_free(MPIR_Win * win)
{
    struct MPIDI_GDR_ipc_win *l = GDR_WIN(win).ipc;
    if (l == NULL)
        return;
    /* (a failed wait leaves copies that may still use the mappings: they stay) */
    if (MPIDI_GDR_ipc_wait(win) == MPI_SUCCESS)
        local_release(l);
    else
        MPIDI_GDR_peer_maps_hold(win);
    GDR_WIN(win).ipc = NULL;
}
