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
        window (mapped once through CUDA IPC at window creation).  Off: MPICH's
        shared-memory path carries them, as before gdr had this path.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/
/* Same-node windows in device memory (DESIGN.md section 3): a Put or Get to a rank whose
 * window this process maps (its own in device or page-locked memory, or a same-node
 * device window through the CUDA IPC handle its card carried at creation) is one copy
 * per contiguous piece on the window's own stream, between the origin buffer and the
 * target's window: the copy engine, no host staging, no message to the target, and the
 * target's CPU not involved.  Completion is the stream's: flush, fence, unlock and
 * complete wait on the event recorded after the last copy (remote and local completion
 * are one here).  ch4 hands such windows' same-node operations to gdr because gdr marks
 * them at creation (MPIDI_WINATTR_NM_LOCAL, MPICH patch 0015).  Accumulates still go as
 * MPIDIG's messages, which the target applies: every origin's accumulates to an element
 * then take one path, as element-wise atomicity needs. */
#include "gdr_impl.h"
#include "gdr_noinline.h"
#include "gdr_engine_lock.h"
#include "gdr_rma_local.h"
#include "gdr_triggered.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_stream.h"

enum { LOCAL_PIECES_MAX = 1024 };       /* more pieces: MPIDIG's messages pack them */

struct MPIDI_GDR_local_win {
    int nranks;
    gdr_dev_peer_t *peers;      /* per rank, mapped on first use (base NULL: not this path) */
    unsigned char *seen;        /* per rank: looked at */
    gdr_gpu_stream_t stream;    /* the copies', made at the first one */
    gdr_gpu_event_t done;       /* recorded after the last copy */
    int pending;                /* copies since the last wait */
};

void MPIDI_GDR_local_register_pvars(void)
{
    static const char *const names[2][2] = {
        {"gdr_rma_put_local", "MPI_Put/Rput to a same-node device window as GPU copies"},
        {"gdr_rma_get_local", "MPI_Get/Rget from a same-node device window as GPU copies"},
    };
    for (int k = 0; k < 2; k++)
        MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, names[k][0],
                                  &MPIDI_GDR_global.local_count[k == 0 ? GDR_RMA_PUT :
                                                                GDR_RMA_GET], 1, NULL,
                                  MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                  MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS,
                                  NULL, NULL, "CH4_GDR", names[k][1]);
}

static void local_release(MPIR_Win * win, struct MPIDI_GDR_local_win *l)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    for (int r = 0; l->peers != NULL && r < l->nranks; r++)
        if (l->seen[r])
            MPIDI_GDR_peer_window_close(win, r, &l->peers[r]);
    if (l->done != NULL)
        (void) gdr_gpu_event_destroy(g, l->done);
    if (l->stream != NULL)
        (void) gdr_gpu_stream_destroy(g, l->stream);
    MPL_free(l->peers);
    MPL_free(l->seen);
    MPL_free(l);
}

int MPIDI_GDR_local_claims(MPIR_Win * win)
{
    if (!MPIR_CVAR_CH4_GDR_LOCAL_DEVICE || !MPIDI_GDR_global.gpu.on
        || win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC)
        return 0;
    int n = win->comm_ptr->local_size, any = 0;
    const struct MPIDI_GDR_peer_ipc *ipc = GDR_WIN(win).peer_ipc;
    for (int r = 0; ipc != NULL && r < n; r++)
        any |= ipc[r].ok;
    gdr_gpu_mem_info_t info;
    any |= win->size > 0 && gdr_gpu_mem_query(&MPIDI_GDR_global.gpu, win->base, &info) == 0
        && (info.is_device || info.is_pinned_host);
    if (!any)
        return 0;
    struct MPIDI_GDR_local_win *l = MPL_calloc(1, sizeof(*l), MPL_MEM_RMA);
    if (l != NULL) {
        l->nranks = n;
        l->peers = MPL_calloc(n, sizeof(*l->peers), MPL_MEM_RMA);
        l->seen = MPL_calloc(n, 1, MPL_MEM_RMA);
    }
    if (l == NULL || l->peers == NULL || l->seen == NULL) {
        if (l != NULL)
            local_release(win, l);
        return 0;               /* only a shortcut lost: MPICH's shared memory carries them */
    }
    GDR_WIN(win).local = l;
    return 1;
}

/* Rank's window as mapped here, or NULL: not this path. */
static const gdr_dev_peer_t *peer_of(MPIR_Win * win, struct MPIDI_GDR_local_win *l, int rank)
{
    if (!l->seen[rank]) {
        l->seen[rank] = 1;
        (void) MPIDI_GDR_peer_window_open(win, rank, &l->peers[rank]);
    }
    return l->peers[rank].base != NULL ? &l->peers[rank] : NULL;
}

/* count x type at buf as pieces: one (contiguous) in *one, else an allocated list. */
static int pieces_of(const void *buf, MPI_Aint count, MPI_Datatype type, MPI_Aint bytes,
                     struct iovec *one, struct iovec **out, size_t *n)
{
    int contig;
    MPI_Aint lb;
    MPIDI_Datatype_check_contig_lb(type, contig, lb);
    if (contig || count == 0) {
        /* (as integers: buf is NULL for the target's offsets) */
        *one = (struct iovec) {.iov_base = (void *) ((uintptr_t) buf + (uintptr_t) lb),
            .iov_len = (size_t) bytes };
        *out = one;
        *n = 1;
        return MPI_SUCCESS;
    }
    gdr_rma_buf_t list;
    int mpi_errno = MPIDI_GDR_list_buf(buf, count, type, bytes, 0, &list);
    *out = (struct iovec *) list.iov;
    *n = list.n;
    return mpi_errno;
}

/* The copies of one operation: origin pieces against target pieces, each run where both
 * are contiguous one copy (target pieces as offsets in the target's window). */
static int queue_copies(struct MPIDI_GDR_local_win *l, int put, char *tbase,
                        const struct iovec *o, size_t on, const struct iovec *t, size_t tn)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    size_t oi = 0, ti = 0, ooff = 0, toff = 0;
    while (oi < on && ti < tn) {
        size_t left_o = o[oi].iov_len - ooff, left_t = t[ti].iov_len - toff;
        size_t len = left_o < left_t ? left_o : left_t;
        if (len > 0) {
            char *mine = (char *) o[oi].iov_base + ooff;
            char *theirs = tbase + (uintptr_t) t[ti].iov_base + toff;
            int rc = put ? gdr_gpu_copy_async(g, l->stream, theirs, mine, len)
                : gdr_gpu_copy_async(g, l->stream, mine, theirs, len);
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

int MPIDI_GDR_local_rma(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                        int *handled)
{
    int mpi_errno = MPI_SUCCESS, put = a->kind == GDR_RMA_PUT;
    struct MPIDI_GDR_local_win *l = GDR_WIN(win).local;
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    struct iovec o_one, t_one, *o = &o_one, *t = &t_one;
    size_t on = 0, tn = 0;
    const gdr_dev_peer_t *peer;

    *handled = 0;
    if (l == NULL || (!put && a->kind != GDR_RMA_GET) || a->target < 0
        || a->target >= l->nranks || (peer = peer_of(win, l, a->target)) == NULL)
        return MPI_SUCCESS;
    MPI_Aint t_size, o_size;
    MPIR_Datatype_get_size_macro(a->ttype, t_size);
    MPIR_Datatype_get_size_macro(a->otype, o_size);
    MPI_Aint bytes = t_size * a->tcount;
    if (o_size * a->ocount != bytes)
        return MPI_SUCCESS;     /* MPIDIG reports the mismatch */
    mpi_errno = pieces_of(a->origin, a->ocount, a->otype, bytes, &o_one, &o, &on);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = pieces_of(NULL, a->tcount, a->ttype, bytes, &t_one, &t, &tn);
    MPIR_ERR_CHECK(mpi_errno);
    if (on + tn > LOCAL_PIECES_MAX)
        goto fn_exit;
    /* every target piece inside the target's window, in its own displacement unit */
    MPI_Aint at = a->tdisp * (MPI_Aint) peer->disp_unit, size = (MPI_Aint) peer->size;
    for (size_t i = 0; i < tn; i++) {
        MPI_Aint off = at + (MPI_Aint) (intptr_t) t[i].iov_base, len = (MPI_Aint) t[i].iov_len;
        if (a->tdisp < 0 || off < 0 || len > size || off > size - len)
            MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                                 "the operation reaches outside the target's window");
    }
    MPIDIG_RMA_OP_CHECK_SYNC(a->target, win);
    *handled = 1;
    if (l->stream == NULL && (gdr_gpu_stream_create(g, &l->stream) != 0
                              || gdr_gpu_event_create(g, &l->done) != 0))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                             g->error);
    if (bytes > 0 && (queue_copies(l, put, peer->base + at, o, on, t, tn) != 0
                      || gdr_gpu_event_record(g, l->done, l->stream) != 0))
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                             g->error);
    l->pending |= bytes > 0;
    MPIDI_GDR_global.local_count[a->kind]++;
    if (req != NULL) {
        /* a request-based operation completes here (the copies are short; no request
         * stays pending on a stream) */
        mpi_errno = MPIDI_GDR_local_wait(win);
        MPIR_ERR_CHECK(mpi_errno);
        *req = MPIR_Request_create_from_pool(MPIR_REQUEST_KIND__RMA, 0, 2);
        MPIR_ERR_CHKANDJUMP(*req == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
        MPID_Request_complete(*req);
    }
  fn_exit:
    if (o != &o_one)
        MPL_free(o);
    if (t != &t_one)
        MPL_free(t);
    return mpi_errno;
  fn_fail:
    *handled = 1;
    goto fn_exit;
}

int MPIDI_GDR_local_only_by_message(MPIR_Win * win, int target)
{
    /* (this rank itself stays with the engine: the staged protocol reaches it, and
     * MPIDIG would apply an accumulate to device memory on the host) */
    return (MPIDI_WIN(win, winattr) & MPIDI_WINATTR_NM_LOCAL)
        && target >= 0 && target < win->comm_ptr->local_size && target != win->comm_ptr->rank
        && MPIDI_av_is_local(MPIDIU_comm_rank_to_av(win->comm_ptr, target));
}

int MPIDI_GDR_local_wait(MPIR_Win * win)
{
    struct MPIDI_GDR_local_win *l = win->dev.netmod.gdr.s != NULL ? GDR_WIN(win).local : NULL;
    int mpi_errno = MPI_SUCCESS;
    if (l == NULL)
        return MPI_SUCCESS;
    /* (under the engine lock: another thread's copies may be recording the event) */
    int took = MPIDI_GDR_engine_enter();
    if (l->pending && gdr_gpu_event_sync(&MPIDI_GDR_global.gpu, l->done) != 0)
        mpi_errno = MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                         MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                                         MPIDI_GDR_global.gpu.error);
    else
        l->pending = 0;
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

void MPIDI_GDR_local_free(MPIR_Win * win)
{
    struct MPIDI_GDR_local_win *l = GDR_WIN(win).local;
    if (l == NULL)
        return;
    /* (a failed wait leaves copies that may still use the mappings: they stay) */
    if (MPIDI_GDR_local_wait(win) == MPI_SUCCESS)
        local_release(win, l);
    GDR_WIN(win).local = NULL;
}
