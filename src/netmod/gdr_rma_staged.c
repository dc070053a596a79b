/* Device memory the NIC cannot reach goes through gdr's staged protocol (src/rma/
 * gdr_rma_staged.h), never through MPICH's active-message RMA, which would read and write
 * device memory on the host.  This file is the protocol's MPICH side: its CVARs, the
 * context at start-up over src/gpu's device seam, its one active-message handler, each
 * window's part, and the translation of an MPI call (datatypes as piece lists, MPI_Op
 * and basic types as the kernel's enums, requests, error classes). */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_engine_lock.h"
#include "gdr_am.h"
#include "gdr_rma.h"
#include "gdr_rma_ipc.h"
#include "gdr_access.h"
#include "rma/gdr_rma_staged.h"
#include "gpu/gdr_gpu_module.h"
#include "gpu/gdr_gpu_kernels_image.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH4_GDR_STAGED
      category    : CH4_GDR
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Whether one-sided operations on device memory that the NIC cannot
        reach go through gdr's staged protocol (pinned staging slots, device
        copies and the accumulate kernel on the GPU) instead of MPICH's
        active messages (0: MPICH's messages, which MPICH's own CUDA support
        carries). Needs gdr's GPU support on.

    - name        : MPIR_CVAR_CH4_GDR_STAGE_CHUNK
      category    : CH4_GDR
      type        : int
      default     : 524288
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Bytes of one staging slot: device data moves in chunks of this size
        (a power of two, 64 or more).  Messages whose device data the NIC
        cannot read in place move it in fragments of this size (at least
        4096) through pinned chunks of their own.

    - name        : MPIR_CVAR_CH4_GDR_STAGE_SLOTS
      category    : CH4_GDR
      type        : int
      default     : 8
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Staging slots per direction (send and receive pools), each
        MPIR_CVAR_CH4_GDR_STAGE_CHUNK bytes of pinned host memory.  Messages
        have as many chunks of their own per direction, taken at the first
        one that needs them (MPI_T gdr_am_stage_pinned_bytes): a process
        pins at most 2 x this x MPIR_CVAR_CH4_GDR_STAGE_CHUNK bytes for
        messages, whatever their size or number.

    - name        : MPIR_CVAR_CH4_GDR_STAGE_INLINE
      category    : CH4_GDR
      type        : int
      default     : 8192
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Device data up to this many bytes travels inside the staged
        protocol's request or result message (at most 8192).

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* The protocol's messages go header-only behind this prefix: MPICH's handlers are not
 * told a header's size. */
typedef struct {
    uint32_t len;
    uint32_t unused;
} staged_prefix_t;

static int staged_msg_cb(void *am_hdr, void *data, MPI_Aint data_sz, uint32_t attr,
                         MPIR_Request ** req)
{
    staged_prefix_t p;
    const uint8_t *msg = (const uint8_t *) am_hdr + sizeof(p);
    uint64_t win_id;
    uint32_t origin;

    if (attr & MPIDIG_AM_ATTR__IS_ASYNC)
        *req = NULL;
    memcpy(&p, am_hdr, sizeof(p));
    if (p.len > GDR_RMA_STAGED_MSG_MAX || gdr_rma_staged_peek(msg, p.len, &win_id, &origin) != 0)
        return MPI_SUCCESS;
    MPIR_Win *win = MPIDIU_map_lookup_shared(MPIDI_global.win_map, win_id);
    if (win == MPIDIU_MAP_NOT_FOUND || GDR_WIN(win).staged == NULL)
        return MPI_SUCCESS;
    if (gdr_rma_staged_deliver(GDR_WIN(win).staged, msg, p.len) != GDR_RMA_OK)
        return MPIDI_GDR_rma_error(GDR_RMA_HOST_ERROR);
    return MPI_SUCCESS;
}

/* The engine's host seam: send_msg. */
static int staged_send(void *ctx, void *host_win, int target, const void *msg, size_t len)
{
    (void) ctx;
    MPIR_Win *win = host_win;
    uint8_t buf[sizeof(staged_prefix_t) + GDR_RMA_STAGED_MSG_MAX];
    staged_prefix_t p = {.len = (uint32_t) len };
    if (len > GDR_RMA_STAGED_MSG_MAX)
        return 1;
    memcpy(buf, &p, sizeof(p));
    memcpy(buf + sizeof(p), msg, len);
    int mpi_errno = MPIDI_NM_am_send_hdr(target, win->comm_ptr, MPIDI_GDR_global.staged_handler,
                                         buf, (MPI_Aint) (sizeof(p) + len), 0, 0);
    if (mpi_errno != MPI_SUCCESS && MPIDI_GDR_global.engine_errno == MPI_SUCCESS)
        MPIDI_GDR_global.engine_errno = mpi_errno;
    return mpi_errno != MPI_SUCCESS;
}

int MPIDI_GDR_staged_register_handler(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_GDR_global.staged_handler = MPIDIG_am_reg_cb_dynamic(NULL, staged_msg_cb);
    MPIR_ERR_CHKANDJUMP1(MPIDI_GDR_global.staged_handler < 0, mpi_errno, MPI_ERR_INTERN,
                         "**gdr_transport", "**gdr_transport %s",
                         "no free MPICH active-message handler id for the staged protocol");
  fn_fail:
    return mpi_errno;
}

/* After the engine: the protocol runs only with the engine (RDMA reads between slots)
 * and gdr's GPU on, and only when asked for.  Never fails MPI_Init: without it, device
 * data goes as MPICH's messages, as before. */
void MPIDI_GDR_staged_start(void)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    char why[256] = "";
    if (!MPIR_CVAR_CH4_GDR_STAGED || !MPIDI_GDR_global.have_engine || !g->on)
        return;
    if (gdr_gpu_kernel_ready(g, GDR_GPU_ACC_KERNEL, gdr_gpu_kernels_image,
                             gdr_gpu_kernels_image_size) != 0)
        snprintf(why, sizeof(why), "loading gdr's kernels failed: %.200s", g->error);
    if (why[0] == '\0') {
        MPIDI_GDR_global.engine.host.send_msg = staged_send;
        gdr_rma_staged_config_t cfg = {
            .inline_max = (size_t) MPL_MAX(0, MPIR_CVAR_CH4_GDR_STAGE_INLINE),
            .chunk_bytes = (size_t) MPL_MAX(0, MPIR_CVAR_CH4_GDR_STAGE_CHUNK),
            .slots_per_pool = (unsigned) MPL_MAX(0, MPIR_CVAR_CH4_GDR_STAGE_SLOTS)
        };
        MPIDI_GDR_global.staged = gdr_rma_staged_new(&MPIDI_GDR_global.engine,
                                                  &MPIDI_GDR_global.device_seam, &cfg, why,
                                                  sizeof(why));
        if (MPIDI_GDR_global.staged == NULL)
            MPIDI_GDR_global.engine.host.send_msg = NULL;
    }
    if (MPIDI_GDR_global.staged == NULL)
        fprintf(stderr, "gdr[%d]: staged protocol off (MPIR_CVAR_CH4_GDR_STAGED): %s\n",
                MPIR_Process.rank, why);
}

void MPIDI_GDR_staged_stop(void)
{
    if (MPIDI_GDR_global.staged == NULL)
        return;
    gdr_rma_staged_free(MPIDI_GDR_global.staged);
    MPIDI_GDR_global.staged = NULL;
}

int MPIDI_GDR_staged_progress(void)
{
    if (MPIDI_GDR_global.staged == NULL)
        return MPI_SUCCESS;
    int rc = gdr_rma_staged_progress(MPIDI_GDR_global.staged);
    if (rc == GDR_RMA_OK)
        return MPI_SUCCESS;
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                  gdr_rma_staged_error(MPIDI_GDR_global.staged));
    return mpi_errno;
}

void MPIDI_GDR_staged_win_new(MPIR_Win * win)
{
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    if (MPIDI_GDR_global.staged == NULL || !w->rdma)
        return;
    /* NULL when out of memory: device data on this window then goes as MPICH's messages */
    GDR_WIN(win).staged =
        gdr_rma_staged_win_new(MPIDI_GDR_global.staged, w, MPIDIG_WIN(win, win_id),
                            w->dynamic ? NULL : win->base, w->dynamic ? 0 : (uint64_t) win->size,
                            !w->dynamic && MPIDI_GDR_gpu_buffer_id(win->base) != 0);
}

void MPIDI_GDR_staged_win_free(MPIR_Win * win)
{
    gdr_rma_staged_win_free(GDR_WIN(win).staged);
    GDR_WIN(win).staged = NULL;
}

/* ---- one operation ---------------------------------------------------------------- */

typedef struct {
    MPIR_Request *req;
} staged_done_t;

static void staged_done(void *arg, int status, const void *landed, size_t len)
{
    staged_done_t *d = arg;
    (void) landed;
    (void) len;
    if (status != GDR_RMA_OK)
        MPIR_ERR_SET1(d->req->status.MPI_ERROR, MPI_ERR_OTHER, "**gdr_transport",
                      "**gdr_transport %s", gdr_rma_staged_error(MPIDI_GDR_global.staged));
    MPID_Request_complete(d->req);
    MPL_free(d);
}

static int rma_staged(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                      int *handled)
{
    int mpi_errno = MPI_SUCCESS;
    gdr_rma_staged_win_t *dw = GDR_WIN(win).staged;
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    int t = a->target;
    gdr_rma_access_t acc = { 0 };
    MPIDI_GDR_access_t x;
    staged_done_t *d = NULL;

    *handled = 0;
    if (dw == NULL || t < 0 || t >= w->n)
        return MPI_SUCCESS;
    int is_get = a->kind == GDR_RMA_GET;
    uint64_t o_dev = is_get ? 0 : MPIDI_GDR_gpu_buffer_id(a->origin);
    uint64_t r_dev = MPIDI_GDR_gpu_buffer_id(is_get ? a->origin : a->result);
    uint64_t c_dev = MPIDI_GDR_gpu_buffer_id(a->compare);
    /* a dynamic window's card cannot say where its regions are: any of its targets with
     * gdr's GPU on may have attached device memory, so the protocol takes them all */
    int t_dev = w->targets[t].device || (w->dynamic && w->targets[t].gpu);
    if (!t_dev && !o_dev && !r_dev && !c_dev)
        return MPI_SUCCESS;     /* host memory only: MPICH's messages */

    int why;
    /* every target piece: the protocol sends more than one request carries as several */
    mpi_errno = MPIDI_GDR_access_describe(a, SIZE_MAX, &x, &why);
    MPIR_ERR_CHECK(mpi_errno);
    switch (why) {
    case MPIDI_GDR_ACCESS_OP:
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OP, "**gdr_transport", "**gdr_transport %s",
                             "this operation is not applied to device memory by gdr "
                             "(user-defined ops are not supported there)");
    case MPIDI_GDR_ACCESS_TYPE:
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_TYPE, "**gdr_transport", "**gdr_transport %s",
                             "this element type is not accumulated on device memory by gdr "
                             "(e.g. long double), or the op is not defined on it");
    case MPIDI_GDR_ACCESS_PAIRS:
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_UNSUPPORTED_OPERATION, "**gdr_transport",
                             "**gdr_transport %s", "MPI_SHORT_INT, MPI_DOUBLE_INT and "
                             "MPI_LONG_INT on device memory are taken as plain arrays of the "
                             "pair (origin, result and target) only");
    case MPIDI_GDR_ACCESS_PIECES:
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_UNSUPPORTED_OPERATION, "**gdr_transport",
                             "**gdr_transport %s", "MPICH listed no pieces for the target "
                             "datatype of this operation on device memory");
    case MPIDI_GDR_ACCESS_SIZES:
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_TYPE, "**gdr_transport", "**gdr_transport %s",
                             "the origin (or result) and target datatypes hold different "
                             "numbers of bytes: their type signatures must match");
    }
    acc.kind = a->kind;
    acc.target = t;
    acc.disp = a->tdisp;
    acc.tbytes = x.bytes;
    acc.tpieces = x.t;
    acc.ntpieces = x.tn;
    if (a->kind != GDR_RMA_PUT && a->kind != GDR_RMA_GET) {
        acc.gpu_type = x.type;
        acc.gpu_op = x.op;
    }
    /* origin, result, compare: single elements and whole pairs by address, else pieces */
    if (is_get) {
        acc.result = (gdr_rma_buf_t) {.iov = x.o,.n = x.on,.scattered = 1,.device_id = r_dev };
    } else if (a->kind == GDR_RMA_FOP || a->kind == GDR_RMA_CAS || x.whole) {
        acc.origin = (gdr_rma_buf_t) {.addr = (void *) a->origin,.device_id = o_dev };
        acc.result = (gdr_rma_buf_t) {.addr = a->result,.device_id = r_dev };
        acc.compare = a->compare;
        acc.compare_device_id = c_dev;
    } else {
        if (x.on > 0)
            acc.origin = (gdr_rma_buf_t) {.iov = x.o,.n = x.on,.scattered = 1,.device_id = o_dev };
        if (a->kind == GDR_RMA_GET_ACC)
            acc.result = (gdr_rma_buf_t) {.iov = x.r,.n = x.rn,.scattered = 1,
                .device_id = r_dev };
    }
    MPIR_ERR_CHECK(mpi_errno);

    MPIDIG_RMA_OP_CHECK_SYNC(t, win);
    if (a->kind != GDR_RMA_PUT && a->kind != GDR_RMA_GET) {
        /* after NIC atomics or message accumulates to t: let them land first (ordering) */
        mpi_errno = MPIDI_GDR_rma_error(gdr_rma_switch_path(w, t, GDR_RMA_VIA_STAGED));
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (req != NULL) {
        d = MPL_calloc(1, sizeof(*d), MPL_MEM_RMA);
        MPIR_ERR_CHKANDJUMP1(d == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                             "gdr staged completion");
        d->req = MPIR_Request_create_from_pool(MPIR_REQUEST_KIND__RMA, 0, 2);
        MPIR_ERR_CHKANDJUMP(d->req == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
    }
    /* an operation of no bytes completes inside gdr_rma_staged_start, and staged_done frees d:
     * its request is taken first (an enqueued zero-count put_signal read it from freed
     * memory, and its progress crashed on the garbage, 2026-11-29) */
    MPIR_Request *made = d != NULL ? d->req : NULL;
    int rc = gdr_rma_staged_start(dw, &acc, d != NULL ? staged_done : NULL, d);
    if (rc == GDR_RMA_ERROR)
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                             gdr_rma_staged_error(MPIDI_GDR_global.staged));
    mpi_errno = MPIDI_GDR_rma_error(rc);
    MPIR_ERR_CHECK(mpi_errno);
    if (req != NULL)
        *req = made;
    d = NULL;
    *handled = 1;
    MPIDI_GDR_global.staged_count[a->kind]++;

  fn_exit:
    MPIDI_GDR_access_free(&x);
    return mpi_errno;
  fn_fail:
    if (d != NULL) {
        if (d->req != NULL)
            MPIR_Request_free(d->req);
        MPL_free(d);
    }
    goto fn_exit;
}

void MPIDI_GDR_staged_register_pvars(void)
{
    static const char *const names[GDR_RMA_KINDS][2] = {
        {"gdr_rma_put_staged", "MPI_Put/Rput on device memory through the staged protocol"},
        {"gdr_rma_get_staged", "MPI_Get/Rget on device memory through the staged protocol"},
        {"gdr_rma_acc_staged", "MPI_Accumulate on device memory, applied by gdr's kernel"},
        {"gdr_rma_get_acc_staged", "MPI_Get_accumulate on device memory, gdr's kernel"},
        {"gdr_rma_fop_staged", "MPI_Fetch_and_op on device memory, gdr's kernel"},
        {"gdr_rma_cas_staged", "MPI_Compare_and_swap on device memory, gdr's kernel"},
    };
    for (int k = 0; k < GDR_RMA_KINDS; k++)
        MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, names[k][0],
                                  &MPIDI_GDR_global.staged_count[k], 1, NULL,
                                  MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                  MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS,
                                  NULL, NULL, "CH4_GDR", names[k][1]);
}

int MPIDI_GDR_rma_staged(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                         int *handled)
{
    *handled = 0;
    if (MPIDI_GDR_ipc_only_by_message(win, a->target))
        return MPI_SUCCESS;
    int took = MPIDI_GDR_engine_enter();
    int mpi_errno = rma_staged(a, win, req, handled);
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}
