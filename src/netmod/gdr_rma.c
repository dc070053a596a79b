/* One-sided operations: RDMA on the window when the target has a key and the
 * access maps onto the NIC (src/rma/gdr_rma_path.h says which accumulates may),
 * else MPICH's active-message RMA (MPIDIG).  Completion is counted per window and
 * target, for flush, unlock, fence and PSCW (the rma_*_cmpl_hook functions). */
#include "gdr_impl.h"
#include "gdr_noinline.h"
#include "gdr_rma.h"

/* One MPI operation in flight on the NIC: one or more verbs operations. */
typedef struct {
    MPIR_Win *win;
    int target;
    int local_pending;          /* counted in pending_local until done */
    unsigned subops;            /* verbs operations not yet complete (+1 while posting) */
    MPIR_Request *req;          /* request-based operations */
    void *tmp;                  /* packed origin data or landing area */
    void *unpack_to;            /* results: unpack tmp here at completion */
    MPI_Aint unpack_count;
    MPI_Datatype unpack_type;
    gdr_verbs_rma_pin_t *pin;   /* origin/result buffer held registered (pieces) */
} gdr_rma_op_t;

static const char *const pvar_names[MPIDI_GDR_PVAR_N][2] = {
    {"gdr_rma_put_native", "MPI_Put/Rput carried out as RDMA writes"},
    {"gdr_rma_get_native", "MPI_Get/Rget carried out as RDMA reads"},
    {"gdr_rma_acc_native", "MPI_Accumulate/Raccumulate carried out as RDMA atomics"},
    {"gdr_rma_get_acc_native", "MPI_Get_accumulate carried out as RDMA atomics or reads"},
    {"gdr_rma_fop_native", "MPI_Fetch_and_op carried out as an RDMA atomic or read"},
    {"gdr_rma_cas_native", "MPI_Compare_and_swap carried out as an RDMA compare-and-swap"},
    {"gdr_rma_put_am", "MPI_Put/Rput sent as active messages"},
    {"gdr_rma_get_am", "MPI_Get/Rget sent as active messages"},
    {"gdr_rma_acc_am", "MPI_Accumulate/Raccumulate sent as active messages"},
    {"gdr_rma_get_acc_am", "MPI_Get_accumulate sent as active messages"},
    {"gdr_rma_fop_am", "MPI_Fetch_and_op sent as an active message"},
    {"gdr_rma_cas_am", "MPI_Compare_and_swap sent as an active message"},
};

void MPIDI_GDR_rma_register_pvars(void)
{
    for (int i = 0; i < MPIDI_GDR_PVAR_N; i++)
        MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                                  pvar_names[i][0], &MPIDI_GDR_global.pvar[i], 1, NULL,
                                  MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                  MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS,
                                  NULL, NULL, "CH4_GDR", pvar_names[i][1]);
}

/* Waits drive all of MPICH's progress, not only ours: an operation to this rank
 * itself, or an acknowledgement through shared memory, completes elsewhere. */
typedef struct {
    unsigned long polls;
    int reported;
    MPL_time_t since;
} stall_t;

static void stall_tick(stall_t * st, const char *what, int peer);

static int wait_until_zero(const unsigned long *count)
{
    int mpi_errno = MPI_SUCCESS;
    stall_t st = { 0 };
    while (*count != 0 && mpi_errno == MPI_SUCCESS) {
        mpi_errno = MPID_Progress_test(NULL);
        stall_tick(&st, "for one-sided completions", -1);
    }
    return mpi_errno;
}

/* Remote completion also ends what an origin knows of dynamic windows' regions
 * (gdr_win_dynamic.c): the target may detach them from now on. */
int MPIDI_GDR_rma_wait_all(MPIR_Win * win, int local_only)
{
    if (GDR_WIN(win).pending_remote == NULL)
        return MPI_SUCCESS;
    if (!local_only)
        MPIDI_GDR_dynamic_forget(win, -1);
    return wait_until_zero(local_only ? &GDR_WIN(win).total_local : &GDR_WIN(win).total_remote);
}

int MPIDI_GDR_rma_wait_target(MPIR_Win * win, int rank, int local_only)
{
    if (GDR_WIN(win).pending_remote == NULL || rank < 0 || rank >= win->comm_ptr->local_size)
        return MPI_SUCCESS;
    if (!local_only)
        MPIDI_GDR_dynamic_forget(win, rank);
    return wait_until_zero(local_only ? &GDR_WIN(win).pending_local[rank]
                             : &GDR_WIN(win).pending_remote[rank]);
}

/* Counts an op in pending_local: its origin or result buffer is in the NIC's hands. */
static void op_hold_local(gdr_rma_op_t * op)
{
    if (op->local_pending)
        return;
    op->local_pending = 1;
    GDR_WIN(op->win).pending_local[op->target]++;
    GDR_WIN(op->win).total_local++;
}

static gdr_rma_op_t *op_new(MPIR_Win * win, int target, int local_pending)
{
    gdr_rma_op_t *op = MPL_calloc(1, sizeof(*op), MPL_MEM_RMA);
    if (op == NULL)
        return NULL;
    op->win = win;
    op->target = target;
    op->subops = 1;             /* held while posting */
    GDR_WIN(win).pending_remote[target]++;
    GDR_WIN(win).total_remote++;
    if (local_pending)
        op_hold_local(op);
    return op;
}

static void op_unpin(gdr_rma_op_t * op)
{
    gdr_verbs_rma_unpin(MPIDI_GDR_global.rma, op->pin);
    op->pin = NULL;
}

/* Undoes op_new: the counters, the result datatype held for unpacking, the buffers. */
static void op_release(gdr_rma_op_t * op)
{
    MPIDI_GDR_win_t *w = &GDR_WIN(op->win);
    w->pending_remote[op->target]--;
    w->total_remote--;
    if (op->local_pending) {
        w->pending_local[op->target]--;
        w->total_local--;
    }
    if (op->unpack_to != NULL)
        MPIR_Datatype_release_if_not_builtin(op->unpack_type);
    op_unpin(op);
    MPL_free(op->tmp);
    MPL_free(op);
}

static void op_finish(gdr_rma_op_t * op)
{
    MPIR_Request *req = op->req;
    if (op->unpack_to != NULL) {
        MPI_Aint actual, bytes;
        MPIR_Datatype_get_size_macro(op->unpack_type, bytes);
        MPIR_Typerep_unpack(op->tmp, bytes * op->unpack_count, op->unpack_to, op->unpack_count,
                            op->unpack_type, 0, &actual);
    }
    if (req != NULL && op->win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC)
        MPIDI_GDR_dynamic_forget(op->win, op->target);  /* a remote completion, too */
    op_release(op);
    if (req != NULL)
        MPID_Request_complete(req);
}

static void subop_done(void *arg)
{
    gdr_rma_op_t *op = arg;
    if (--op->subops == 0)
        op_finish(op);
}

/* Posting done: drop the hold (the op may finish right here). */
static void op_posted(gdr_rma_op_t * op)
{
    subop_done(op);
}

/* With MPIR_CVAR_CH4_GDR_VERBOSE > 0, a wait longer than 10 s says what it waits for
 * (once per wait): a stalled peer or NIC shows up in the job's output.  The clock is
 * read every 4096 polls only: under User-Mode Linux a clock read is a system call. */
static void stall_tick(stall_t * st, const char *what, int peer)
{
    MPL_time_t now;
    double secs;
    if (++st->polls % 4096 != 0 || st->reported || MPIR_CVAR_CH4_GDR_VERBOSE <= 0)
        return;
    MPL_wtime(&now);
    if (st->polls == 4096) {
        st->since = now;
        return;
    }
    MPL_wtime_diff(&st->since, &now, &secs);
    if (secs < 10)
        return;
    st->reported = 1;
    const gdr_verbs_rma_stats_t *rs = gdr_verbs_rma_stats(MPIDI_GDR_global.rma);
    fprintf(stderr, "gdr[%d]: waiting over %.0f s %s (rank %d: %u one-sided requests in "
            "flight; posted %llu writes, %llu reads, %llu atomics; channel %s)\n",
            MPIR_Process.rank, secs, what, peer,
            peer >= 0 ? gdr_verbs_rma_in_flight(MPIDI_GDR_global.rma, peer) : 0,
            (unsigned long long) rs->writes, (unsigned long long) rs->reads,
            (unsigned long long) rs->atomics,
            gdr_verbs_am_busy(MPIDI_GDR_global.am) ? "busy" : "idle");
}

/* Retries a post while the engine is full, progressing the channel. */
#define GDR_POST(call_)                                                          \
    do {                                                                         \
        int rc_;                                                                 \
        stall_t st_ = { 0 };                                                     \
        while ((rc_ = (call_)) == GDR_VERBS_RMA_BUSY) {                          \
            mpi_errno = MPID_Progress_test(NULL);                                \
            MPIR_ERR_CHECK(mpi_errno);                                           \
            stall_tick(&st_, "for room to post", peer);                          \
        }                                                                        \
        if (rc_ == GDR_VERBS_RMA_NOREG)                                          \
            goto noreg;                                                          \
        if (rc_ != 0) {                                                          \
            mpi_errno = MPIDI_GDR_transport_error();                             \
            goto fn_fail;                                                        \
        }                                                                        \
    } while (0)

static int is_int64(MPI_Datatype basic)
{
    MPI_Aint size;
    if (basic == MPI_DATATYPE_NULL || !HANDLE_IS_BUILTIN(basic))
        return 0;
    MPIR_Datatype_get_size_macro(basic, size);
    if (size != 8)
        return 0;
    return basic == MPI_LONG || basic == MPI_UNSIGNED_LONG || basic == MPI_LONG_LONG_INT
        || basic == MPI_LONG_LONG || basic == MPI_UNSIGNED_LONG_LONG || basic == MPI_INT64_T
        || basic == MPI_UINT64_T || basic == MPI_AINT || basic == MPI_OFFSET
        || basic == MPI_COUNT;
}

static gdr_rma_acc_op_t acc_op_of(MPI_Op op, int kind)
{
    if (kind == MPIDI_GDR_RMA_CAS)
        return GDR_RMA_ACC_CSWAP;
    if (op == MPI_SUM)
        return GDR_RMA_ACC_SUM;
    if (op == MPI_NO_OP)
        return GDR_RMA_ACC_NO_OP;
    return GDR_RMA_ACC_OTHER;
}

static const int native_pvar[] = {
    [MPIDI_GDR_RMA_PUT] = MPIDI_GDR_PVAR_PUT_NATIVE,[MPIDI_GDR_RMA_GET] = MPIDI_GDR_PVAR_GET_NATIVE,
    [MPIDI_GDR_RMA_ACC] = MPIDI_GDR_PVAR_ACC_NATIVE,
    [MPIDI_GDR_RMA_GET_ACC] = MPIDI_GDR_PVAR_GET_ACC_NATIVE,
    [MPIDI_GDR_RMA_FOP] = MPIDI_GDR_PVAR_FOP_NATIVE,[MPIDI_GDR_RMA_CAS] = MPIDI_GDR_PVAR_CAS_NATIVE,
};

/* With ordered accumulates and both paths in use, an origin that changes path to a
 * target first lets the other path's accumulates to it complete. */
static int switch_path(MPIR_Win * win, int target, int to_nic)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_GDR_win_t *w = &GDR_WIN(win);
    uint8_t want = to_nic ? 1 : 2;
    if (!w->atomics.switch_wait || w->last_acc_path == NULL || w->last_acc_path[target] == want)
        return MPI_SUCCESS;
    if (w->last_acc_path[target] == 1) {
        mpi_errno = wait_until_zero(&w->pending_remote[target]);
    } else if (w->last_acc_path[target] == 2) {
        MPIDIG_win_target_t *t = MPIDIG_win_target_find(win, target);
        stall_t st = { 0 };
        while (mpi_errno == MPI_SUCCESS
               && ((t != NULL && MPIR_cc_get(t->remote_acc_cmpl_cnts) != 0)
                   || MPIR_cc_get(MPIDIG_WIN(win, remote_acc_cmpl_cnts)) != 0)) {
            mpi_errno = MPID_Progress_test(NULL);
            stall_tick(&st, "for message accumulates before an RDMA atomic", -1);
        }
    }
    w->last_acc_path[target] = want;
    return mpi_errno;
}

int MPIDI_GDR_rma_prepare_am(MPIR_Win * win, int kind, int target)
{
    MPIDI_GDR_global.pvar[native_pvar[kind] - MPIDI_GDR_PVAR_PUT_NATIVE + MPIDI_GDR_PVAR_PUT_AM]++;
    if (kind == MPIDI_GDR_RMA_PUT || kind == MPIDI_GDR_RMA_GET || GDR_WIN(win).target_peer == NULL
        || target < 0 || target >= win->comm_ptr->local_size)
        return MPI_SUCCESS;
    return switch_path(win, target, 0);
}

/* A non-contiguous target is reached piece by piece (one RDMA operation per block of
 * its datatype, the origin side packed or landing contiguously) when it has at most
 * PIECES_ANY pieces, or at most PIECES_MAX of PIECES_MIN_AVG bytes on average; more
 * scattered targets get one message that MPICH unpacks there.  Accumulates need an
 * atomic per element, so they take at most ACC_IOV_MAX pieces. */
#define PIECES_ANY 64
#define PIECES_MAX 1024
#define PIECES_MIN_AVG 512
#define ACC_IOV_MAX 64

/* A non-contiguous origin (or get destination) of a put/get to a contiguous target as a
 * gather (scatter) list, when the NIC takes it in one work request: at most
 * SGE_PIECES_MAX pieces, pinned as one span.  Returns the piece count, 0 when the data
 * must be packed instead (more pieces, a span small enough to bounce, or no pin). */
#define SGE_PIECES_MAX 16
static int origin_sge(const void *buf, MPI_Aint count, MPI_Datatype type, MPI_Aint bytes,
                      struct iovec *iov, gdr_verbs_rma_pin_t ** pin)
{
    MPI_Aint n = 0, got = 0;
    *pin = NULL;
    if (MPIR_Typerep_iov_len(count, type, bytes, &n) != MPI_SUCCESS || n < 2
        || n > SGE_PIECES_MAX || !gdr_verbs_rma_sge_fits(MPIDI_GDR_global.rma, (size_t) n,
                                                         (size_t) bytes))
        return 0;
    if (MPIR_Typerep_to_iov_offset(buf, count, type, 0, iov, n, &got) != MPI_SUCCESS || got != n)
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (MPI_Aint i = 0; i < n; i++) {
        uintptr_t b = (uintptr_t) iov[i].iov_base;
        if (iov[i].iov_len == 0)
            return 0;   /* the NIC would take it, but keep lists simple */
        lo = b < lo ? b : lo;
        hi = b + iov[i].iov_len > hi ? b + iov[i].iov_len : hi;
    }
    if (gdr_verbs_rma_pin(MPIDI_GDR_global.rma, (void *) lo, hi - lo, pin) != 0 || *pin == NULL)
        return 0;
    return (int) n;
}

int MPIDI_GDR_rma_native(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                         int *handled)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_GDR_win_t *w = &GDR_WIN(win);
    gdr_rma_op_t *op = NULL;
    int t = a->target;
    struct iovec iov_small[1], *iov = iov_small;
    MPI_Aint niov = 1;
    void *land = NULL, *packed = NULL;
    const char *src = NULL;
    struct iovec sge[SGE_PIECES_MAX];
    int nsge = 0;               /* origin/destination as a gather/scatter list */
    int posted = 0;             /* verbs operations posted for this MPI operation */

    *handled = 0;
    int dynamic = win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC;
    if (MPIDI_GDR_global.rma == NULL || w->target_rkey == NULL || t < 0
        || t >= win->comm_ptr->local_size || w->target_peer[t] < 0
        || (w->target_rkey[t] == 0 && !dynamic))
        return MPI_SUCCESS;
    if ((a->origin != NULL && MPIR_GPU_query_pointer_is_dev(a->origin))
        || (a->result != NULL && MPIR_GPU_query_pointer_is_dev(a->result)))
        return MPI_SUCCESS;     /* device buffers: issue 6 */

    int t_contig;
    MPI_Aint t_size, t_lb;
    MPIDI_Datatype_check_contig_lb(a->ttype, t_contig, t_lb);
    MPIR_Datatype_get_size_macro(a->ttype, t_size);
    MPI_Aint t_bytes = t_size * a->tcount;
    uint64_t tbase = w->target_base[t] + (uint64_t) a->tdisp * (uint64_t) w->target_disp_unit[t];
    uint64_t taddr = tbase + (uint64_t) t_lb;
    int peer = w->target_peer[t];
    uint32_t rkey = w->target_rkey[t];
    gdr_rma_path_t path = GDR_RMA_PATH_AM;

    /* the target's pieces: absolute addresses and lengths */
    int is_putget = a->kind == MPIDI_GDR_RMA_PUT || a->kind == MPIDI_GDR_RMA_GET;
    if (!t_contig && a->tcount > 0) {
        mpi_errno = MPIR_Typerep_iov_len(a->tcount, a->ttype, t_bytes, &niov);
        MPIR_ERR_CHECK(mpi_errno);
        int scattered = is_putget ? niov > PIECES_ANY && (niov > PIECES_MAX
                                                          || t_bytes / niov < PIECES_MIN_AVG)
            : niov > ACC_IOV_MAX;
        if (scattered)
            goto fn_exit;       /* the target applies it */
        iov = MPL_malloc(niov * sizeof(struct iovec), MPL_MEM_RMA);
        MPIR_ERR_CHKANDJUMP1(iov == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem",
                             "**nomem %s", "gdr target pieces");
        MPI_Aint got;
        mpi_errno = MPIR_Typerep_to_iov_offset((void *) (uintptr_t) tbase, a->tcount,
                                               a->ttype, 0, iov, niov, &got);
        MPIR_ERR_CHECK(mpi_errno);
        niov = got;
    } else {
        iov[0].iov_base = (void *) (uintptr_t) taddr;
        iov[0].iov_len = (size_t) t_bytes;
    }
    if (!is_putget) {
        MPI_Datatype basic = MPI_DATATYPE_NULL;
        MPIR_Datatype_get_basic_type(a->ttype, basic);
        if (a->kind == MPIDI_GDR_RMA_FOP || a->kind == MPIDI_GDR_RMA_CAS)
            basic = a->ttype;
        int aligned = 1;
        for (MPI_Aint i = 0; aligned && i < niov; i++)
            aligned = (uintptr_t) iov[i].iov_base % 8 == 0 && iov[i].iov_len % 8 == 0;
        path = gdr_rma_acc_path(&w->atomics, acc_op_of(a->op, a->kind), is_int64(basic), aligned);
        if (path == GDR_RMA_PATH_READ && niov != 1)
            path = GDR_RMA_PATH_AM;     /* a read never conflicts: the AM path is as good */
        if (path == GDR_RMA_PATH_AM)
            goto fn_exit;
    }
    if (dynamic && a->tcount > 0) {
        /* (addresses are absolute: the window's base is 0 and its unit 1) */
        MPI_Aint true_lb;
        uint64_t span = MPIDI_GDR_target_span(a->tcount, a->ttype, &true_lb);
        mpi_errno = MPIDI_GDR_dynamic_lookup(win, t, tbase + (uint64_t) true_lb, span, &rkey);
        MPIR_ERR_CHECK(mpi_errno);
        if (rkey == 0)
            goto fn_exit;       /* as a message */
    }
    if (path != GDR_RMA_PATH_AM) {
        mpi_errno = switch_path(win, t, 1);
        MPIR_ERR_CHECK(mpi_errno);
    }

    MPIDIG_RMA_OP_CHECK_SYNC(t, win);
    /* Ordered accumulates: responders run requests in order, except that a read's data
     * may be fetched after later requests ran.  An atomic after an accumulate's read
     * waits for it here.  (Not with IBV_SEND_FENCE: Linux 6.1 rxe stalled for good
     * under streams of fenced atomics.) */
    if ((path == GDR_RMA_PATH_FETCH_ADD || path == GDR_RMA_PATH_CMP_SWAP) && w->atomics.order_after_reads
        && w->acc_read_posted[t]) {
        mpi_errno = wait_until_zero(&w->pending_remote[t]);
        MPIR_ERR_CHECK(mpi_errno);
        w->acc_read_posted[t] = 0;
    }
    int fetches = a->kind != MPIDI_GDR_RMA_PUT && a->kind != MPIDI_GDR_RMA_ACC;
    op = op_new(win, t, fetches);
    MPIR_ERR_CHKANDJUMP1(op == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                         "gdr RMA operation");
    if (t_bytes == 0)
        goto posted;

    /* where results land: the result/origin buffer itself when contiguous */
    if (fetches) {
        void *dst = a->kind == MPIDI_GDR_RMA_GET ? (void *) a->origin : a->result;
        MPI_Aint dcount = a->kind == MPIDI_GDR_RMA_GET ? a->ocount : a->rcount;
        MPI_Datatype dtype = a->kind == MPIDI_GDR_RMA_GET ? a->otype : a->rtype;
        int d_contig;
        MPI_Aint d_lb;
        MPIDI_Datatype_check_contig_lb(dtype, d_contig, d_lb);
        if (d_contig) {
            land = (char *) dst + d_lb;
        } else if (a->kind == MPIDI_GDR_RMA_GET && niov == 1
                   && (nsge = origin_sge(dst, dcount, dtype, t_bytes, sge, &op->pin)) > 0) {
            /* scattered by the NIC */
        } else {
            op->tmp = MPL_malloc(t_bytes, MPL_MEM_RMA);
            MPIR_ERR_CHKANDJUMP1(op->tmp == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem",
                                 "**nomem %s", "gdr RMA landing buffer");
            land = op->tmp;
            op->unpack_to = dst;
            op->unpack_count = dcount;
            op->unpack_type = dtype;
            MPIR_Datatype_add_ref_if_not_builtin(dtype);
        }
    }
    /* origin data: contiguous, a gather list, or packed */
    /* (origin may be MPI_BOTTOM with absolute displacements; NO_OP reads none) */
    if (a->kind != MPIDI_GDR_RMA_GET && !(a->kind != MPIDI_GDR_RMA_PUT && a->op == MPI_NO_OP)) {
        int o_contig;
        MPI_Aint o_lb;
        MPIDI_Datatype_check_contig_lb(a->otype, o_contig, o_lb);
        if (o_contig || a->kind == MPIDI_GDR_RMA_FOP || a->kind == MPIDI_GDR_RMA_CAS) {
            src = (const char *) a->origin + (o_contig ? o_lb : 0);
        } else if (a->kind == MPIDI_GDR_RMA_PUT && niov == 1
                   && (nsge = origin_sge(a->origin, a->ocount, a->otype, t_bytes, sge,
                                         &op->pin)) > 0) {
            /* gathered by the NIC */
        } else {
            MPI_Aint actual;
            packed = MPL_malloc(t_bytes, MPL_MEM_RMA);
            MPIR_ERR_CHKANDJUMP1(packed == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem",
                                 "**nomem %s", "gdr RMA packed origin");
            mpi_errno = MPIR_Typerep_pack(a->origin, a->ocount, a->otype, 0, packed, t_bytes,
                                          &actual);
            MPIR_ERR_CHECK(mpi_errno);
            src = packed;
        }
    }

    /* pieces of one put or get must not fail half-way for want of a registration */
    if (is_putget && niov > 1) {
        GDR_POST(gdr_verbs_rma_pin(MPIDI_GDR_global.rma,
                                   a->kind == MPIDI_GDR_RMA_PUT ? (const void *) src : land,
                                   (size_t) t_bytes, &op->pin));
    }
    if (nsge > 0) {
        /* the NIC reads or fills the user's pieces until completion */
        op_hold_local(op);
        op->subops++;
        if (a->kind == MPIDI_GDR_RMA_PUT)
            GDR_POST(gdr_verbs_rma_writev(MPIDI_GDR_global.rma, peer, sge, (size_t) nsge,
                                          op->pin, taddr, rkey, subop_done, op));
        else
            GDR_POST(gdr_verbs_rma_readv(MPIDI_GDR_global.rma, peer, sge, (size_t) nsge,
                                         op->pin, taddr, rkey, subop_done, op));
        goto posted;
    }
    switch (a->kind) {
        case MPIDI_GDR_RMA_PUT:{
                int all_copied = 1;
                size_t off = 0;
                for (MPI_Aint i = 0; i < niov; off += iov[i].iov_len, i++) {
                    int copied = 0;
                    if (iov[i].iov_len == 0)
                        continue;
                    op->subops++;
                    GDR_POST(gdr_verbs_rma_put(MPIDI_GDR_global.rma, peer, src + off,
                                               iov[i].iov_len, (uintptr_t) iov[i].iov_base,
                                               rkey, subop_done, op, &copied));
                    posted++;
                    all_copied &= copied;
                }
                if (!all_copied && packed == NULL)
                    op_hold_local(op);  /* the origin buffer is read by the NIC */
                if (packed != NULL) {
                    if (all_copied) {
                        op_unpin(op);
                        MPL_free(packed);
                    } else {
                        op->tmp = packed;       /* freed at completion */
                    }
                    packed = NULL;
                }
                break;
            }
        case MPIDI_GDR_RMA_GET:{
                size_t off = 0;
                for (MPI_Aint i = 0; i < niov; off += iov[i].iov_len, i++) {
                    if (iov[i].iov_len == 0)
                        continue;
                    op->subops++;
                    GDR_POST(gdr_verbs_rma_get(MPIDI_GDR_global.rma, peer, (char *) land + off,
                                               iov[i].iov_len, (uintptr_t) iov[i].iov_base,
                                               rkey, subop_done, op));
                    posted++;
                }
                break;
            }
        default:{
                /* element-wise atomics (or one read for NO_OP) at the pieces' addresses */
                MPI_Aint elem = 0;
                if (path == GDR_RMA_PATH_READ) {
                    w->acc_read_posted[t] = 1;
                    op->subops++;
                    GDR_POST(gdr_verbs_rma_get(MPIDI_GDR_global.rma, peer, land,
                                               (size_t) t_bytes, taddr, rkey, subop_done, op));
                    break;
                }
                /* in batches, each posted with one doorbell */
                uint64_t raddrs[GDR_VERBS_RMA_ATOMICV_MAX];
                size_t batch_max = gdr_verbs_rma_atomicv_max(MPIDI_GDR_global.rma), nb = 0;
                MPI_Aint n_elems = t_bytes / 8;
                uint64_t compare = 0;
                if (path == GDR_RMA_PATH_CMP_SWAP)
                    memcpy(&compare, a->compare, 8);
                for (MPI_Aint i = 0; i < niov; i++) {
                    uint64_t addr = (uint64_t) (uintptr_t) iov[i].iov_base;
                    for (size_t k = 0; k < iov[i].iov_len / 8; k++) {
                        raddrs[nb++] = addr + 8 * k;
                        if (nb < batch_max && elem + (MPI_Aint) nb < n_elems)
                            continue;
                        op->subops++;
                        GDR_POST(gdr_verbs_rma_atomicv(MPIDI_GDR_global.rma, peer,
                                                       path == GDR_RMA_PATH_CMP_SWAP ?
                                                       GDR_VERBS_RMA_CMP_SWAP :
                                                       GDR_VERBS_RMA_FETCH_ADD, src + 8 * elem,
                                                       compare,
                                                       fetches ? (char *) land + 8 * elem : NULL,
                                                       raddrs, nb, rkey, subop_done, op));
                        elem += (MPI_Aint) nb;
                        nb = 0;
                    }
                }
                break;
            }
    }
  posted:
    /* the op cannot finish before op_posted() drops its hold: attach the request now */
    if (req != NULL) {
        *req = MPIR_Request_create_from_pool(MPIR_REQUEST_KIND__RMA, 0, 2);
        MPIR_ERR_CHKANDJUMP(*req == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
        op->req = *req;
    }
    *handled = 1;
    MPIDI_GDR_global.pvar[native_pvar[a->kind]]++;
    op_posted(op);
    op = NULL;
    goto fn_exit;
  noreg:
    /* a user buffer the NIC cannot pin (only put and get register one, before posting
     * anything, or pin it first): this operation goes as a message instead */
    MPIR_Assert(posted == 0);
    if (MPIR_CVAR_CH4_GDR_VERBOSE > 1)
        fprintf(stderr, "gdr[%d]: %s; sending it as a message\n", MPIR_Process.rank,
                gdr_verbs_rma_error(MPIDI_GDR_global.rma));
    op_release(op);             /* nothing was posted */
    op = NULL;
  fn_exit:
    MPL_free(packed);
    if (iov != iov_small)
        MPL_free(iov);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
