/* One-sided operations: each MPI call becomes a flat description for the RMA engine
 * (src/rma), which plans it (RDMA, or a message through MPICH's active-message RMA,
 * MPIDIG) and posts it.  This file only translates: MPI datatypes, requests, epochs
 * and error classes. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_engine_lock.h"
#include "gdr_rma.h"
#include "gdr_rma_ipc.h"
#include "rma/gdr_rma_issue.h"
#include "rma/gdr_rma_small.h"

static const char *const pvar_names[2][GDR_RMA_KINDS][2] = {
    {
     {"gdr_rma_put_native", "MPI_Put/Rput carried out as RDMA writes"},
     {"gdr_rma_get_native", "MPI_Get/Rget carried out as RDMA reads"},
     {"gdr_rma_acc_native", "MPI_Accumulate/Raccumulate carried out as RDMA atomics"},
     {"gdr_rma_get_acc_native", "MPI_Get_accumulate carried out as RDMA atomics or reads"},
     {"gdr_rma_fop_native", "MPI_Fetch_and_op carried out as an RDMA atomic or read"},
     {"gdr_rma_cas_native", "MPI_Compare_and_swap carried out as an RDMA compare-and-swap"},
     },
    {
     {"gdr_rma_put_am", "MPI_Put/Rput sent as active messages"},
     {"gdr_rma_get_am", "MPI_Get/Rget sent as active messages"},
     {"gdr_rma_acc_am", "MPI_Accumulate/Raccumulate sent as active messages"},
     {"gdr_rma_get_acc_am", "MPI_Get_accumulate sent as active messages"},
     {"gdr_rma_fop_am", "MPI_Fetch_and_op sent as an active message"},
     {"gdr_rma_cas_am", "MPI_Compare_and_swap sent as an active message"},
     },
};

/* MPI_T: how RDMA writes and reads moved their origin data; 0 where this rank has no
 * RDMA device. */
static void verbs_rma_stat_value(void *addr, void *obj_handle, int count, void *buf)
{
    (void) obj_handle;
    (void) count;
    MPIDI_GDR_stat_value(MPIDI_GDR_global.rma != NULL ?
                         gdr_verbs_rma_stats(MPIDI_GDR_global.rma) : NULL, addr, buf);
}

void MPIDI_GDR_rma_register_pvars(void)
{
    static const MPIDI_GDR_stat_pvar_t origin_pv[] = {
        {"gdr_rma_inline_puts", "RDMA writes whose data went inside the work request "
         "(small puts: no copy, nothing for the NIC to read)",
         offsetof(gdr_verbs_rma_stats_t, inline_puts), 0},
        {"gdr_rma_bounced", "RDMA writes and reads whose data passed through a registered "
         "bounce buffer (a copy at the origin)", offsetof(gdr_verbs_rma_stats_t, bounced), 0},
        {"gdr_rma_registered", "RDMA writes and reads straight from or into the user's "
         "buffer, registered through the cache", offsetof(gdr_verbs_rma_stats_t, registered),
         0},
        {"gdr_rma_doorbells", "ibv_post_send calls of one-sided work requests (several "
         "share one: MPIR_CVAR_CH4_GDR_DOORBELL_BATCH)",
         offsetof(gdr_verbs_rma_stats_t, doorbells), 0},
        {"gdr_rma_held", "one-sided work requests held back to share a later doorbell",
         offsetof(gdr_verbs_rma_stats_t, held), 0},
        {"gdr_rma_doorbell_hold", "one-sided work requests a doorbell may wait for "
         "(MPIR_CVAR_CH4_GDR_DOORBELL_BATCH as applied: by default 16 where ibv_post_send is a "
         "system call, Soft-RoCE, and 0 on NICs)", offsetof(gdr_verbs_rma_stats_t, hold_limit),
         1},
        {"gdr_rma_fenced", "releases and synchronisation writes posted behind the epoch's "
         "RDMA reads and atomics to their target instead of after waiting for them "
         "(IBV_SEND_FENCE; Soft-RoCE keeps that order itself)",
         offsetof(gdr_verbs_rma_stats_t, fenced), 0},
    };
    MPIDI_GDR_register_stat_pvars(origin_pv, sizeof(origin_pv) / sizeof(origin_pv[0]),
                                  verbs_rma_stat_value);
    for (int path = 0; path < 2; path++)
        for (int k = 0; k < GDR_RMA_KINDS; k++)
            MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                                      pvar_names[path][k][0],
                                      &MPIDI_GDR_global.engine.count[path][k], 1, NULL,
                                      MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                      MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS,
                                      NULL, NULL, "CH4_GDR", pvar_names[path][k][1]);
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                              "gdr_rma_region_queries", &MPIDI_GDR_global.region_queries, 1,
                              NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "dynamic windows: questions to targets about "
                              "the region around an address (kept across epochs with "
                              "MPIR_CVAR_CH4_GDR_NATIVE_SYNC)");
    static const char *const lock_names[3][2] = {
        {"gdr_rma_lock_atomics", "atomics on lock words of passive-target epochs "
         "(MPIR_CVAR_CH4_GDR_NATIVE_SYNC): acquires, retries and releases"},
        {"gdr_rma_lock_retries", "tries at a passive-target lock word that found the lock "
         "held by others"},
        {"gdr_rma_sync_writes", "writes into control blocks for fence barriers and PSCW "
         "notices (MPIR_CVAR_CH4_GDR_NATIVE_SYNC)"},
    };
    unsigned long long *lock_counts[3] = {
        &MPIDI_GDR_global.engine.lock_atomics, &MPIDI_GDR_global.engine.lock_retries,
        &MPIDI_GDR_global.engine.sync_writes
    };
    for (int k = 0; k < 3; k++)
        MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                                  lock_names[k][0], lock_counts[k], 1, NULL,
                                  MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                  MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS,
                                  NULL, NULL, "CH4_GDR", lock_names[k][1]);
}

/* Every operation's completion, local or remote; spared >= 0: remote except for spared's,
 * whose operations need only complete locally. */
static int wait_all_sparing(MPIR_Win * win, int local_only, int spared)
{
    if (win->dev.netmod.gdr.s == NULL)
        return MPI_SUCCESS;     /* the window's gdr state was never made */
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    /* (the engine's wait forgets learned regions itself on windows with RDMA) */
    if (!local_only && !w->rdma)
        MPIDI_GDR_dynamic_forget(win, -1);
    int mpi_errno = MPIDI_GDR_ipc_wait(win);
    if (mpi_errno != MPI_SUCCESS || w->eng == NULL)
        return mpi_errno;
    int took = MPIDI_GDR_engine_enter();
    int rc = spared >= 0 ? gdr_rma_wait_all_except(&w->tracker, w->eng, spared)
        : gdr_rma_wait_all(&w->tracker, w->eng, local_only);
    mpi_errno = MPIDI_GDR_rma_error(rc);
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

int MPIDI_GDR_rma_wait_all(MPIR_Win * win, int local_only)
{
    return wait_all_sparing(win, local_only, -1);
}

int MPIDI_GDR_rma_wait_all_except(MPIR_Win * win, int spared)
{
    return wait_all_sparing(win, 0, spared);
}

int MPIDI_GDR_rma_wait_target(MPIR_Win * win, int rank, int local_only)
{
    if (win->dev.netmod.gdr.s == NULL)
        return MPI_SUCCESS;
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    if (!local_only && !w->rdma)
        MPIDI_GDR_dynamic_forget(win, rank);
    int mpi_errno = MPIDI_GDR_ipc_wait_target(win, rank);
    if (mpi_errno != MPI_SUCCESS || w->eng == NULL)
        return mpi_errno;
    int took = MPIDI_GDR_engine_enter();
    mpi_errno = MPIDI_GDR_rma_error(gdr_rma_wait_target(&w->tracker, w->eng, rank,
                                                        local_only));
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

/* A message-path operation: counted, and accumulate ordering kept across paths. */
static int prepare_am(MPIR_Win * win, gdr_rma_kind_t kind, int target)
{
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    if (w->eng == NULL)
        return MPI_SUCCESS;
    int took = MPIDI_GDR_engine_enter();
    int mpi_errno = MPIDI_GDR_rma_error(gdr_rma_note_message(w, kind, target));
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

/* What completion does besides counting: results to unpack, a request to complete. */
typedef struct {
    MPIR_Request *req;
    void *unpack_to;
    MPI_Aint unpack_count;
    MPI_Datatype unpack_type;
} rma_done_t;

static void rma_done(void *arg, int status, const void *landed, size_t len)
{
    rma_done_t *d = arg;
    if (d->unpack_to != NULL) {
        MPI_Aint actual;
        if (status == GDR_RMA_OK)
            MPIR_Typerep_unpack(landed, (MPI_Aint) len, d->unpack_to, d->unpack_count,
                                d->unpack_type, 0, &actual, MPIR_TYPEREP_FLAG_NONE);
        MPIR_Datatype_release_if_not_builtin(d->unpack_type);
    }
    if (d->req != NULL) {
        if (status != GDR_RMA_OK)
            d->req->status.MPI_ERROR = MPIDI_GDR_transport_error();
        MPID_Request_complete(d->req);
    }
    MPL_free(d);
}

static gdr_rma_acc_op_t acc_op_of(MPI_Op op, gdr_rma_kind_t kind)
{
    if (kind == GDR_RMA_CAS)
        return GDR_RMA_ACC_CSWAP;
    if (op == MPI_SUM)
        return GDR_RMA_ACC_SUM;
    if (op == MPI_NO_OP)
        return GDR_RMA_ACC_NO_OP;
    return GDR_RMA_ACC_OTHER;
}

/* What reaches target of win (gdr_rma_select.h), decided at its first operation and kept
 * for the window's life; printed with MPIR_CVAR_CH4_GDR_VERBOSE=2. */
static void route_decide(MPIR_Win * win, int t, gdr_rma_route_t * r);

static inline const gdr_rma_route_t *route_of(MPIR_Win * win, int t)
{
    gdr_rma_route_t *r = &GDR_WIN(win).rma.targets[t].route;
    if (!r->known || (r->short_max == 0 && r->rc && GDR_WIN(win).rma.eng->short_cap != 0))
        route_decide(win, t, r);
    return r;
}

static void route_decide(MPIR_Win * win, int t, gdr_rma_route_t * r)
{
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    /* (the NIC's inline limit is known once a queue pair exists: asked again until then) */
    int first = !r->known;
    gdr_rma_route_fill(&s->rma, t, s->rma.eng->short_cap, UINT32_MAX, r);
    if (first) {
        r->ipc = (uint8_t) MPIDI_GDR_ipc_maps(win, t);
        r->node_am = (uint8_t) MPIDI_GDR_ipc_only_by_message(win, t);
        r->staged = s->staged != NULL;
        r->nic_gpu = (uint8_t) MPIDI_GDR_nic_takes_gpu_memory();
        r->small = r->rc && !r->ipc && !r->node_am && !r->dynamic;
        r->known = 1;
        if (MPIR_CVAR_CH4_GDR_VERBOSE > 1) {
            char line[400];
            gdr_rma_route_str(r, line, sizeof(line));
            fprintf(stderr, "gdr[%d]: window 0x%x, target %d: %s\n", MPIR_Process.rank,
                    win->handle, t, line);
        }
    }
}

static int rma_native(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                      int *handled)
{
    int mpi_errno = MPI_SUCCESS, rc, not_attached = 0;
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    int t = a->target;
    struct iovec one, *pieces = &one, olist[GDR_RMA_SGE_MAX], rlist[GDR_RMA_SGE_MAX];
    gdr_rma_plan_t plan = { 0 };
    gdr_rma_op_t *op = NULL;

    *handled = 0;
    if (!gdr_rma_win_reaches(w, t))
        return MPI_SUCCESS;
    (void) route_of(win, t);    /* decided once (and printed), for the selector */
    /* device buffers: zero-copy when the NIC reaches GPU memory, else MPICH's messages */
    uint64_t o_dev = MPIDI_GDR_gpu_buffer_id(a->origin);
    uint64_t r_dev = MPIDI_GDR_gpu_buffer_id(a->result);
    if ((o_dev || r_dev) && !MPIDI_GDR_nic_takes_gpu_memory())
        return MPI_SUCCESS;
    if (MPIDI_GDR_gpu_buffer_id(a->compare) != 0)
        return MPI_SUCCESS;     /* the engine reads the compare value on the host */

    MPI_Aint t_size;
    MPIR_Datatype_get_size_macro(a->ttype, t_size);
    gdr_rma_access_t acc = {.kind = a->kind,.target = t,.disp = a->tdisp,
        .tbytes = (uint64_t) (t_size * a->tcount),.compare = a->compare
    };
    mpi_errno = MPIDI_GDR_target_pieces(a->tcount, a->ttype, t_size * a->tcount, a->kind, &one,
                                        &pieces, &acc.ntpieces);
    MPIR_ERR_CHECK(mpi_errno);
    if (acc.ntpieces == 0)
        goto fn_exit;           /* too scattered: the target applies it */
    acc.tpieces = pieces;
    int is_putget = a->kind == GDR_RMA_PUT || a->kind == GDR_RMA_GET;
    if (!is_putget) {
        MPI_Datatype basic = MPI_DATATYPE_NULL;
        MPIR_Datatype_get_basic_type(a->ttype, basic);
        if (a->kind == GDR_RMA_FOP || a->kind == GDR_RMA_CAS)
            basic = a->ttype;
        acc.int64_elements = MPIDI_GDR_is_int64(basic);
        acc.op = acc_op_of(a->op, a->kind);
    }
    if (w->dynamic && a->tcount > 0) {
        /* (addresses are absolute: the window's base is 0 and its unit 1) */
        MPI_Aint true_lb;
        acc.t_span = MPIDI_GDR_target_span(a->tcount, a->ttype, &true_lb);
        acc.t_true_lb = true_lb;
    }
    /* results land in the result buffer (get: the origin buffer) */
    void *dst = a->kind == GDR_RMA_GET ? (void *) a->origin : a->result;
    MPI_Aint dcount = a->kind == GDR_RMA_GET ? a->ocount : a->rcount;
    MPI_Datatype dtype = a->kind == GDR_RMA_GET ? a->otype : a->rtype;
    if (a->kind != GDR_RMA_PUT && a->kind != GDR_RMA_ACC)
        MPIDI_GDR_describe_buf(dst, dcount, dtype, t_size * a->tcount,
                               a->kind == GDR_RMA_GET && acc.ntpieces == 1,
                               a->kind == GDR_RMA_GET ? o_dev : r_dev, rlist, &acc.result);
    /* origin data (may be MPI_BOTTOM with absolute displacements; NO_OP reads none) */
    if (a->kind == GDR_RMA_FOP || a->kind == GDR_RMA_CAS) {
        int o_contig;
        MPI_Aint o_lb;
        MPIDI_Datatype_check_contig_lb(a->otype, o_contig, o_lb);
        acc.origin.addr = (char *) a->origin + (o_contig ? o_lb : 0);
        acc.origin.device_id = o_dev;
    } else if (a->kind != GDR_RMA_GET) {
        MPIDI_GDR_describe_buf(a->origin, a->ocount, a->otype, t_size * a->tcount,
                               a->kind == GDR_RMA_PUT && acc.ntpieces == 1, o_dev, olist,
                               &acc.origin);
    }

    rc = gdr_rma_plan(w, &acc, &plan, &not_attached);
    if (not_attached)
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                             "the target has not attached this address to its dynamic "
                             "window (MPI_Win_attach)");
    mpi_errno = MPIDI_GDR_rma_error(rc);
    MPIR_ERR_CHECK(mpi_errno);
    if (!plan.by_rdma)
        goto fn_exit;           /* as a message */
    MPIDIG_RMA_OP_CHECK_SYNC(t, win);
    if (plan.origin_move == GDR_RMA_MOVE_BOUNCE) {
        MPI_Aint actual;
        mpi_errno = MPIR_Typerep_pack(a->origin, a->ocount, a->otype, 0, plan.origin_bounce,
                                      t_size * a->tcount, &actual, MPIR_TYPEREP_FLAG_NONE);
        MPIR_ERR_CHECK(mpi_errno);
    }
    rma_done_t *d = NULL;
    if (req != NULL || plan.result_move == GDR_RMA_MOVE_BOUNCE) {
        d = MPL_calloc(1, sizeof(*d), MPL_MEM_RMA);
        MPIR_ERR_CHKANDJUMP1(d == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                             "gdr RMA completion");
        if (plan.result_move == GDR_RMA_MOVE_BOUNCE) {
            d->unpack_to = dst;
            d->unpack_count = dcount;
            d->unpack_type = dtype;
        }
    }
    rc = gdr_rma_issue(w, &acc, &plan, &op);
    if (rc != GDR_RMA_OK)
        MPL_free(d);
    if (rc == GDR_RMA_NOREG) {
        /* a user buffer the NIC cannot pin: this operation goes as a message instead */
        if (MPIR_CVAR_CH4_GDR_VERBOSE > 1)
            fprintf(stderr, "gdr[%d]: %s; sending it as a message\n", MPIR_Process.rank,
                    w->eng->net.error(w->eng->net.ctx));
        goto fn_exit;
    }
    mpi_errno = MPIDI_GDR_rma_error(rc);
    MPIR_ERR_CHECK(mpi_errno);

    /* the op cannot complete before gdr_rma_op_posted: attach the request now */
    if (d != NULL) {
        if (d->unpack_to != NULL)
            MPIR_Datatype_add_ref_if_not_builtin(dtype);
        if (req != NULL) {
            *req = MPIR_Request_create_from_pool(MPIR_REQUEST_KIND__RMA, 0, 2);
            MPIR_ERR_CHKANDJUMP(*req == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
            d->req = *req;
        }
        gdr_rma_op_on_complete(op, rma_done, d, req != NULL);
    }
    *handled = 1;
    gdr_rma_op_posted(op);
  fn_exit:
    if (pieces != &one)
        MPL_free(pieces);
    return mpi_errno;
  fn_fail:
    if (plan.by_rdma)
        gdr_rma_plan_drop(w, &plan);
    goto fn_exit;
}

/* put/rc/short, put/rc/bcopy and get/rc/bcopy (gdr_rma.h): the hot path's entry, its
 * own small frame (MPIDI_GDR_rma's is large); the operation posted by the cached route
 * with no plan (gdr_rma_small.h). */
static inline __attribute__((always_inline))
int rma_small(int is_get, void *buf, MPI_Aint count, MPI_Datatype type, int target,
              MPI_Aint disp, MPIR_Win * win)
{
    int mpi_errno = MPI_SUCCESS;
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;

    if (s == NULL || s->rma.eng == NULL || (unsigned) target >= (unsigned) s->rma.n
        || count <= 0)
        return MPIDI_GDR_RMA_GENERAL;
    uint64_t bytes = (uint64_t) count * (uint64_t) MPIR_Datatype_get_basic_size(type);
    int took = MPIDI_GDR_engine_enter();
    const gdr_rma_route_t *r = route_of(win, target);
    /* device memory is never read or filled by the host; a native lock epoch's first
     * operation takes the lock on the general path */
    if (!r->small || bytes > r->bcopy_max || MPIDI_GDR_is_device(buf)
        || gdr_rma_win_lock_wanted(&s->rma, target)) {
        MPIDI_GDR_engine_exit(took);
        return MPIDI_GDR_RMA_GENERAL;
    }
    MPIDIG_RMA_OP_CHECK_SYNC(target, win);
    int rc = !is_get
        ? gdr_rma_put_small(&s->rma, target, gdr_rma_select_contig(r, 1, bytes), buf,
                            (size_t) bytes, disp)
        : gdr_rma_get_small(&s->rma, target, buf, (size_t) bytes, disp);
    MPIDI_GDR_engine_exit(took);
    /* else the general path takes it (and waits, or reports the transport's failure) */
    return rc == GDR_RMA_OK ? MPI_SUCCESS : MPIDI_GDR_RMA_GENERAL;
  fn_fail:
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

/* (two entries, so that the six arguments travel in registers) */
int MPIDI_GDR_put_small(const void *buf, MPI_Aint count, MPI_Datatype type, int target,
                        MPI_Aint disp, MPIR_Win * win)
{
    return rma_small(0, (void *) buf, count, type, target, disp, win);
}

int MPIDI_GDR_get_small(void *buf, MPI_Aint count, MPI_Datatype type, int target,
                        MPI_Aint disp, MPIR_Win * win)
{
    return rma_small(1, buf, count, type, target, disp, win);
}

/* Called with the engine lock held (MPIDI_GDR_rma, enqueue calls). */
int MPIDI_GDR_win_need(MPIR_Win * win, int rank)
{
    if (win->dev.netmod.gdr.s == NULL)
        return MPI_SUCCESS;
    int rc = gdr_rma_passive_need(&GDR_WIN(win).rma, rank);
    if (rc == GDR_RMA_OK)
        return MPI_SUCCESS;
    int mpi_errno = MPIDI_GDR_rma_error(rc);
    if (rc == GDR_RMA_ERROR)
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_RMA_SYNC, "**gdr_transport", "**gdr_transport %s",
                      "taking a passive-target lock by remote atomics failed (the "
                      "connection to the target broke?)");
    return mpi_errno;
}

int MPIDI_GDR_rma(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                  int *handled)
{
    int took = MPIDI_GDR_engine_enter();
    /* every operation but the hot path's (which goes here when a lock is wanted) passes
     * here first: a native lock epoch takes its lock now (gdr_win_sync.c) */
    int mpi_errno = win->dev.netmod.gdr.s != NULL
        && gdr_rma_win_lock_wanted(&GDR_WIN(win).rma, a->target)
        ? MPIDI_GDR_win_need(win, a->target) : MPI_SUCCESS;
    *handled = 0;
    /* same-node device windows first: copies straight into the peer's window */
    if (mpi_errno == MPI_SUCCESS && !*handled)
        mpi_errno = MPIDI_GDR_ipc_rma(a, win, req, handled);
    if (mpi_errno == MPI_SUCCESS && !*handled
        && !MPIDI_GDR_ipc_only_by_message(win, a->target))
        mpi_errno = rma_native(a, win, req, handled);
    MPIDI_GDR_engine_exit(took);
    /* device memory the NIC cannot take: the staged protocol; else MPIDIG's messages */
    if (mpi_errno == MPI_SUCCESS && !*handled)
        mpi_errno = MPIDI_GDR_rma_staged(a, win, req, handled);
    if (mpi_errno == MPI_SUCCESS && !*handled)
        mpi_errno = prepare_am(win, a->kind, a->target);
    return mpi_errno;
}
