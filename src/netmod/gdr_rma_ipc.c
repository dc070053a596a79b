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
/* Same-node windows in device memory (DESIGN.md section 3): a Put or Get to a rank whose
 * window this process maps (its own in device or page-locked memory, or a same-node
 * device window through the CUDA IPC handle its card carried at creation) is one copy
 * per contiguous piece on the target's own internal stream (a lane: one per target rank,
 * made at the first operation to it), between the origin buffer and the target's window:
 * the copy engine, no host staging, no message to the target, and the target's CPU not
 * involved.  Copies to different ranks overlap on the copy engines.  Small operations
 * (MPIR_CVAR_CH4_GDR_LOCAL_KERNEL_COPY) between memory the GPU reaches are one launch of
 * gdr's copy kernel instead, however many runs (up to 64) their datatypes make.  Completion is the
 * lane's: flush of a rank waits on the event recorded after that rank's last copy, fence,
 * unlock_all and complete on every lane's (remote and local completion are one here).
 * ch4 hands such windows' same-node operations to gdr because gdr marks them at creation
 * (MPIDI_WINATTR_NM_LOCAL, MPICH patch 0015).
 * Accumulate, Get_accumulate, Fetch_and_op and Compare_and_swap to a device window are
 * one launch of gdr's accumulate kernel on the target's lane (so they stay in order),
 * applied to the target's window through the mapping with element-wise atomic steps
 * (GDR_GPU_ACC_ATOMIC): other
 * same-node origins do the same at once, and the target's staged protocol applies
 * other nodes' accumulates atomically too.  Operands the GPU cannot reach (pageable
 * memory), and non-contiguous ones, go through the lane's device scratch buffer in
 * stream order;
 * a non-contiguous target is one launch per contiguous piece.  What the kernel cannot take
 * (16-byte elements, misaligned targets, user-defined ops) goes as MPIDIG's messages as
 * before: a choice by op, type and address alone, never by layout; with MPI's default
 * accumulate ordering an origin that changes a target's path first waits for the
 * other path's accumulates to it. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_engine_lock.h"
#include "gdr_rma_ipc.h"
#include "gdr_access.h"
#include "gdr_triggered.h"
#include "gpu/gdr_gpu_kernels_image.h"
#include "gpu/gdr_gpu_module.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_stream.h"

enum { LOCAL_PIECES_MAX = 1024 };       /* more pieces: MPIDIG's messages pack them */
enum { LOCAL_SCRATCH_MAX = 16 << 20 };  /* device scratch for operands, per round */

/* One target rank's work: its own stream, so that copies to different ranks overlap and
 * a flush of one rank waits for that rank's work alone. */
typedef struct {
    gdr_gpu_stream_t stream;    /* made at the first operation to the rank */
    gdr_gpu_event_t done;       /* recorded after its last copy or launch */
    int pending;                /* work since the last wait */
    int acc_here;               /* accumulates by this path among it */
    char *scratch;              /* device memory for operands the GPU cannot reach */
    size_t scratch_size;
} local_lane_t;

struct MPIDI_GDR_ipc_win {
    int nranks;
    local_lane_t *lanes;        /* per rank */
    unsigned char *acc_elsewhere;       /* per rank: accumulates by another path since */
    int one_gpu;                /* every rank of this node uses this GPU: accumulates here */
    int self_device;            /* this rank's window is device memory (not page-locked) */
    int kernel_ready;           /* the accumulate kernel was found loaded (asked once) */
    int copy_kernel;            /* the copy kernel: 0 not asked yet, 1 loaded, -1 not
                                 * available (the copy engine carries everything) */
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
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    for (int r = 0; l->lanes != NULL && r < l->nranks; r++) {
        local_lane_t *lane = &l->lanes[r];
        if (lane->done != NULL)
            (void) gdr_gpu_event_destroy(g, lane->done);
        if (lane->stream != NULL)
            (void) gdr_gpu_stream_destroy(g, lane->stream);
        if (lane->scratch != NULL)
            (void) gdr_gpu_mem_free(g, lane->scratch);
    }
    MPL_free(l->lanes);
    MPL_free(l->acc_elsewhere);
    MPL_free(l);
}

int MPIDI_GDR_ipc_claims(MPIR_Win * win, int one_gpu)
{
    if (!MPIR_CVAR_CH4_GDR_LOCAL_DEVICE || !MPIDI_GDR_global.gpu.on
        || win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC)
        return 0;
    int n = win->comm_ptr->local_size, any = 0;
    const struct MPIDI_GDR_peer_ipc *ipc = GDR_WIN(win).peer_ipc;
    for (int r = 0; ipc != NULL && r < n; r++)
        any |= ipc[r].ok;
    gdr_gpu_mem_info_t info;
    int self = win->size > 0 && gdr_gpu_mem_query(&MPIDI_GDR_global.gpu, win->base, &info) == 0
        && (info.is_device || info.is_pinned_host);
    if (!any && !self)
        return 0;
    struct MPIDI_GDR_ipc_win *l = MPL_calloc(1, sizeof(*l), MPL_MEM_RMA);
    if (l != NULL) {
        l->nranks = n;
        l->lanes = MPL_calloc(n, sizeof(*l->lanes), MPL_MEM_RMA);
        l->acc_elsewhere = MPL_calloc(n, 1, MPL_MEM_RMA);
        l->one_gpu = one_gpu;
        l->self_device = self && info.is_device;
    }
    if (l == NULL || l->lanes == NULL || l->acc_elsewhere == NULL) {
        if (l != NULL)
            local_release(l);
        return 0;               /* only a shortcut lost: MPICH's shared memory carries them */
    }
    GDR_WIN(win).ipc = l;
    return 1;
}

/* Whether every target piece (offsets from disp * unit) lies inside the peer's window. */
static int pieces_inside(const gdr_dev_peer_t * peer, MPI_Aint tdisp, const struct iovec *t,
                         size_t tn)
{
    MPI_Aint at = tdisp * (MPI_Aint) peer->disp_unit, size = (MPI_Aint) peer->size;
    for (size_t i = 0; i < tn; i++) {
        MPI_Aint off = at + (MPI_Aint) (intptr_t) t[i].iov_base, len = (MPI_Aint) t[i].iov_len;
        if (tdisp < 0 || off < 0 || len > size || off > size - len)
            return 0;
    }
    return 1;
}

/* The runs of one operation: origin pieces against target pieces, each stretch where
 * both are contiguous one run (target pieces as offsets in the target's window), passed to
 * run(arg, dst, src, len) in order; the first non-zero return stops the walk. */
static int for_each_run(int put, char *tbase, const struct iovec *o, size_t on,
                        const struct iovec *t, size_t tn,
                        int (*run)(void *arg, char *dst, const char *src, size_t len), void *arg)
{
    size_t oi = 0, ti = 0, ooff = 0, toff = 0;
    while (oi < on && ti < tn) {
        size_t left_o = o[oi].iov_len - ooff, left_t = t[ti].iov_len - toff;
        size_t len = left_o < left_t ? left_o : left_t;
        if (len > 0) {
            char *mine = (char *) o[oi].iov_base + ooff;
            char *theirs = tbase + (uintptr_t) t[ti].iov_base + toff;
            int rc = put ? run(arg, theirs, mine, len) : run(arg, mine, theirs, len);
            if (rc != 0)
                return rc;
        }
        ooff += len;
        toff += len;
        if (ooff == o[oi].iov_len) {
            oi++;
            ooff = 0;
        }
        if (toff == t[ti].iov_len) {
            ti++;
            toff = 0;
        }
    }
    return 0;
}

typedef struct {
    gdr_gpu_copy_piece_t p[GDR_GPU_COPY_PIECES_MAX];
    unsigned n;
} kernel_runs_t;

static int add_kernel_run(void *arg, char *dst, const char *src, size_t len)
{
    kernel_runs_t *k = arg;
    if (k->n == GDR_GPU_COPY_PIECES_MAX)
        return 1;               /* more runs than one launch takes: the copy engine */
    k->p[k->n++] = (gdr_gpu_copy_piece_t) {.dst = (uint64_t) (uintptr_t) dst,
        .src = (uint64_t) (uintptr_t) src,.len = len };
    return 0;
}

static int engine_copy(void *arg, char *dst, const char *src, size_t len)
{
    return gdr_gpu_copy_async(&MPIDI_GDR_global.gpu, ((local_lane_t *) arg)->stream, dst, src,
                              len);
}

/* Whether the GPU reaches p as it is (device memory, page-locked host memory). */
static int gpu_reaches(const void *p)
{
    gdr_gpu_mem_info_t info;
    return gdr_gpu_mem_query(&MPIDI_GDR_global.gpu, p, &info) == 0
        && (info.is_device || info.is_pinned_host);
}

/* Whether the copy kernel is loaded: asked once per window (a lookup under the GPU
 * layer's lock otherwise on every small operation); without it the copy engine carries
 * every operation. */
static int copy_kernel_usable(struct MPIDI_GDR_ipc_win *l)
{
    if (l->copy_kernel == 0)
        l->copy_kernel = gdr_gpu_kernel_ready(&MPIDI_GDR_global.gpu, GDR_GPU_COPY_KERNEL,
                                              gdr_gpu_kernels_image,
                                              gdr_gpu_kernels_image_size) == 0 ? 1 : -1;
    return l->copy_kernel > 0;
}

/* The copies of one operation of `bytes` on the lane: one launch of the copy kernel when
 * it is small (MPIR_CVAR_CH4_GDR_LOCAL_KERNEL_COPY), takes at most a launch's runs, the
 * GPU reaches the origin buffer (the target's window it always does) and the kernel is
 * loaded; else one copy-engine transfer per run. */
static int queue_copies(struct MPIDI_GDR_ipc_win *l, local_lane_t * lane, int put,
                        char *tbase, const void *origin, MPI_Aint bytes,
                        const struct iovec *o, size_t on, const struct iovec *t, size_t tn)
{
    if (bytes <= MPIR_CVAR_CH4_GDR_LOCAL_KERNEL_COPY && gpu_reaches(origin)
        && copy_kernel_usable(l)) {
        kernel_runs_t k;
        k.n = 0;
        if (for_each_run(put, tbase, o, on, t, tn, add_kernel_run, &k) == 0) {
            MPIDI_GDR_global.local_kernel_copies++;
            return k.n == 0 ? 0 : gdr_gpu_copy_pieces_launch(&MPIDI_GDR_global.gpu,
                                                             lane->stream, k.p, k.n);
        }
    }
    return for_each_run(put, tbase, o, on, t, tn, engine_copy, lane);
}

/* Target's lane with its stream and event made, or NULL (the GPU layer's error says why). */
static local_lane_t *lane_ready(struct MPIDI_GDR_ipc_win *l, int target)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    local_lane_t *lane = &l->lanes[target];
    if (lane->stream == NULL && gdr_gpu_stream_create(g, &lane->stream) != 0)
        return NULL;
    if (lane->done == NULL && gdr_gpu_event_create(g, &lane->done) != 0)
        return NULL;
    return lane;
}

/* Blocks until the lane's work completed (the engine lock is held). */
static int lane_wait(local_lane_t * lane)
{
    if (!lane->pending)
        return MPI_SUCCESS;
    if (gdr_gpu_event_sync(&MPIDI_GDR_global.gpu, lane->done) != 0)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                                    MPIDI_GDR_global.gpu.error);
    lane->pending = 0;
    lane->acc_here = 0;
    return MPI_SUCCESS;
}

/* A request-based operation completes before it returns (the copies and launches are
 * short; no request stays pending on a stream): a completed request in *req. */
static int complete_at_once(local_lane_t * lane, MPIR_Request ** req)
{
    int mpi_errno = lane_wait(lane);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    *req = MPIR_Request_create_from_pool(MPIR_REQUEST_KIND__RMA, 0, 2);
    if (*req == NULL)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPIX_ERR_NOREQ, "**nomemreq", NULL);
    MPID_Request_complete(*req);
    return MPI_SUCCESS;
}

/* ---- the accumulate family ------------------------------------------------------------ */

static int is_accumulate(gdr_rma_kind_t kind)
{
    return kind != GDR_RMA_PUT && kind != GDR_RMA_GET;
}

/* Copies bytes [from, from + len) of what the pieces p[0..n) hold, in their order, into
 * the contiguous buf (gather) or out of it (scatter), on the lane's stream. */
static int range_copy(local_lane_t * lane, const struct iovec *p, size_t n,
                      size_t from, size_t len, char *buf, int gather)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    size_t pos = 0;
    for (size_t i = 0; i < n && len > 0; pos += p[i].iov_len, i++) {
        if (pos + p[i].iov_len <= from)
            continue;
        size_t skip = from - pos, take = p[i].iov_len - skip < len ? p[i].iov_len - skip : len;
        char *at = (char *) p[i].iov_base + skip;
        if (gather ? gdr_gpu_copy_async(g, lane->stream, buf, at, take)
            : gdr_gpu_copy_async(g, lane->stream, at, buf, take))
            return -1;
        buf += take;
        from += take;
        len -= take;
    }
    return 0;
}

/* The kernel on the target pieces' part of bytes [from, from + len): one launch per piece
 * (or part of one), origin and result at o_at and r_at for byte `from`. */
static int launch_range(local_lane_t * lane, const gdr_gpu_acc_args_t * tmpl,
                        char *tbase, const MPIDI_GDR_access_t * s, size_t from, size_t len,
                        const char *o_at, char *r_at)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    size_t pos = 0, end = from + len;
    for (size_t i = 0; i < s->tn && pos < end; pos += s->t[i].iov_len, i++) {
        size_t ps = pos, pe = pos + s->t[i].iov_len;
        if (pe <= from)
            continue;
        size_t b = ps > from ? ps : from, e = pe < end ? pe : end;
        gdr_gpu_acc_args_t args = *tmpl;
        args.target = tbase + (uintptr_t) s->t[i].iov_base + (b - ps);
        args.origin = o_at != NULL ? o_at + (b - from) : NULL;
        args.result = r_at != NULL ? r_at + (b - from) : NULL;
        args.count = (e - b) / s->elem;
        if (gdr_gpu_acc_launch(g, lane->stream, &args) != 0)
            return -1;
    }
    return 0;
}

static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t) 15;
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

/* At least `need` bytes of the lane's scratch (each lane its own: its stream alone orders
 * the scratch's reuse); a smaller one is freed once the lane's work is done. */
static int scratch_ready(local_lane_t * lane, size_t need)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    if (need <= lane->scratch_size)
        return MPI_SUCCESS;
    int mpi_errno = lane_wait(lane);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    if (lane->scratch != NULL)
        (void) gdr_gpu_mem_free(g, lane->scratch);
    lane->scratch = NULL;
    lane->scratch_size = 0;
    size_t size = need < (64 << 10) ? (64 << 10) : need;
    if (gdr_gpu_mem_alloc(g, size, (void **) &lane->scratch) != 0)
        return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                    MPI_ERR_NO_MEM, "**gdr_transport", "**gdr_transport %s",
                                    g->error);
    lane->scratch_size = size;
    return MPI_SUCCESS;
}

/* One accumulate-family operation as the kernel on the target's mapped window: one launch
 * per contiguous target piece, origin and result straight from their buffers when the GPU
 * reaches them as one piece, else gathered into (scattered from) the lane's device scratch
 * in rounds of at most LOCAL_SCRATCH_MAX bytes, all in the target's lane's order.  So
 * every element of a type the kernel takes goes this way whatever the layout or size, as
 * element-wise atomicity with the other same-node origins needs. */
static int local_acc(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win,
                     struct MPIDI_GDR_ipc_win *l, const gdr_dev_peer_t * peer,
                     MPIR_Request ** req, int *handled)
{
    int mpi_errno = MPI_SUCCESS;
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    MPIDI_GDR_access_t s;
    int why;

    /* Every origin must apply accumulates to an element the same way (element-wise
     * atomicity): not where the node's ranks use several GPUs (a peer mapping of another
     * GPU's memory may not take the atomics natively: all go as messages), nor where the
     * window's accumulates all reach the NIC (its atomics are then the only ones on this
     * memory), nor to this rank's page-locked host window (the staged protocol, as
     * before). */
    if (!l->one_gpu || (GDR_WIN(win).rma.eng != NULL && GDR_WIN(win).rma.atomics.native)
        || (a->target == win->comm_ptr->rank && !l->self_device))
        return MPI_SUCCESS;
    /* what the kernel does not take as described goes as MPIDIG's messages, which also
     * report what is wrong with it */
    mpi_errno = MPIDI_GDR_access_describe(a, SIZE_MAX, &s, &why);
    if (mpi_errno != MPI_SUCCESS || why != MPIDI_GDR_ACCESS_OK || s.split)
        goto fn_exit;
    if (!pieces_inside(peer, a->tdisp, s.t, s.tn)) {
        *handled = 1;
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                             "the operation reaches outside the target's window");
    }
    MPI_Aint at = a->tdisp * (MPI_Aint) peer->disp_unit;
    for (size_t i = 0; i < s.tn; i++)
        if (!gdr_gpu_acc_atomic_ok(s.type, peer->base + at + (MPI_Aint) (intptr_t) s.t[i].iov_base))
            goto fn_exit;       /* 16-byte elements, misaligned: MPIDIG's messages */
    size_t bytes = (size_t) s.bytes;
    const char *compare = a->kind == GDR_RMA_CAS ? (const char *) a->compare : NULL;
    int has_o = s.op != GDR_GPU_OP_NO_OP, has_r = a->kind != GDR_RMA_ACC;
    int o_direct = has_o && s.on == 1 && gpu_reaches(s.o[0].iov_base);
    int r_direct = has_r && s.rn == 1 && gpu_reaches(s.r[0].iov_base);
    int c_bounce = compare != NULL && !gpu_reaches(compare);
    int nbuf = (has_o && !o_direct) + (has_r && !r_direct);
    /* bytes per round: whole 16-byte units (every element size divides 16) */
    size_t cap = nbuf == 0 ? bytes : LOCAL_SCRATCH_MAX / (size_t) nbuf;
    if (cap > round16(bytes))
        cap = round16(bytes);
    size_t need = (size_t) nbuf * cap + (c_bounce ? 16 : 0);
    MPIDIG_RMA_OP_CHECK_SYNC(a->target, win);
    *handled = 1;
    if (l->acc_elsewhere[a->target]) {
        mpi_errno = wait_elsewhere(win, a->target);
        MPIR_ERR_CHECK(mpi_errno);
        l->acc_elsewhere[a->target] = 0;
    }
    local_lane_t *lane = lane_ready(l, a->target);
    if (lane == NULL
        || (!l->kernel_ready && gdr_gpu_kernel_ready(g, GDR_GPU_ACC_KERNEL, gdr_gpu_kernels_image,
                                                     gdr_gpu_kernels_image_size) != 0))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                             g->error);
    l->kernel_ready = 1;
    mpi_errno = scratch_ready(lane, need);
    MPIR_ERR_CHECK(mpi_errno);
    char *o_buf = lane->scratch, *r_buf = lane->scratch + (has_o && !o_direct ? cap : 0);
    gdr_gpu_acc_args_t tmpl = {.compare = compare,.op = s.op | GDR_GPU_ACC_ATOMIC,
        .type = s.type
    };
    int rc = 0;
    if (bytes > 0 && c_bounce) {
        char *c_buf = lane->scratch + (size_t) nbuf * cap;
        rc = gdr_gpu_copy_async(g, lane->stream, c_buf, compare, s.elem);
        tmpl.compare = c_buf;
    }
    for (size_t from = 0; rc == 0 && from < bytes; from += cap) {
        size_t len = bytes - from < cap ? bytes - from : cap;
        const char *o_at = !has_o ? NULL : o_direct ? (const char *) s.o[0].iov_base + from : o_buf;
        char *r_at = !has_r ? NULL : r_direct ? (char *) s.r[0].iov_base + from : r_buf;
        rc = (has_o && !o_direct && range_copy(lane, s.o, s.on, from, len, o_buf, 1))
            || launch_range(lane, &tmpl, peer->base + at, &s, from, len, o_at, r_at)
            || (has_r && !r_direct && range_copy(lane, s.r, s.rn, from, len, r_buf, 0));
    }
    if (rc != 0 || (bytes > 0 && gdr_gpu_event_record(g, lane->done, lane->stream) != 0))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                             g->error);
    if (bytes > 0) {
        lane->pending = 1;
        lane->acc_here = 1;
    }
    MPIDI_GDR_global.local_count[a->kind]++;
    if (req != NULL)
        mpi_errno = complete_at_once(lane, req);
  fn_exit:
    MPIDI_GDR_access_free(&s);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* An accumulate this path does not take goes another way: with MPI's default ordering,
 * this path's accumulates to that target land first, and the next one here waits for
 * the other way's. */
static int acc_goes_elsewhere(MPIR_Win * win, struct MPIDI_GDR_ipc_win *l, int target)
{
    l->acc_elsewhere[target] = 1;
    if (!l->lanes[target].acc_here)
        return MPI_SUCCESS;
    return lane_wait(&l->lanes[target]);
}

int MPIDI_GDR_ipc_rma(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                        int *handled)
{
    int mpi_errno = MPI_SUCCESS, put = a->kind == GDR_RMA_PUT;
    struct MPIDI_GDR_ipc_win *l = GDR_WIN(win).ipc;
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    const gdr_dev_peer_t *peer;
    MPIDI_GDR_access_t d;
    int why;

    *handled = 0;
    if (l == NULL || a->target < 0 || a->target >= l->nranks)
        return MPI_SUCCESS;
    peer = MPIDI_GDR_peer_mapped(win, a->target);    /* NULL: not this path */
    if (is_accumulate(a->kind)) {
        if (peer != NULL)
            mpi_errno = local_acc(a, win, l, peer, req, handled);
        if (mpi_errno == MPI_SUCCESS && !*handled)
            mpi_errno = acc_goes_elsewhere(win, l, a->target);
        return mpi_errno;
    }
    if (peer == NULL)
        return MPI_SUCCESS;
    mpi_errno = MPIDI_GDR_access_describe(a, LOCAL_PIECES_MAX, &d, &why);
    MPIR_ERR_CHECK(mpi_errno);
    if (why != MPIDI_GDR_ACCESS_OK)
        goto fn_exit;           /* (sizes that differ: MPIDIG reports the mismatch) */
    MPI_Aint bytes = (MPI_Aint) d.bytes;
    if (d.on + d.tn > LOCAL_PIECES_MAX)
        goto fn_exit;
    if (!pieces_inside(peer, a->tdisp, d.t, d.tn))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                             "the operation reaches outside the target's window");
    MPI_Aint at = a->tdisp * (MPI_Aint) peer->disp_unit;
    MPIDIG_RMA_OP_CHECK_SYNC(a->target, win);
    *handled = 1;
    local_lane_t *lane = lane_ready(l, a->target);
    if (lane == NULL)
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                             g->error);
    if (bytes > 0 && (queue_copies(l, lane, put, peer->base + at, a->origin, bytes, d.o, d.on,
                                   d.t, d.tn) != 0
                      || gdr_gpu_event_record(g, lane->done, lane->stream) != 0))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                             g->error);
    lane->pending |= bytes > 0;
    MPIDI_GDR_global.local_count[a->kind]++;
    if (req != NULL)
        mpi_errno = complete_at_once(lane, req);
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
    return l != NULL && target >= 0 && target < l->nranks
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
    int mpi_errno = MPI_SUCCESS;
    if (l == NULL)
        return MPI_SUCCESS;
    /* (under the engine lock: another thread's copies may be recording the events) */
    int took = MPIDI_GDR_engine_enter();
    int lo = target < 0 ? 0 : target, hi = target < 0 ? l->nranks : target + 1;
    for (int r = lo; r < hi && r < l->nranks && mpi_errno == MPI_SUCCESS; r++)
        mpi_errno = lane_wait(&l->lanes[r]);
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
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
