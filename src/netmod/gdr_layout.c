/* MPI datatypes as flat descriptions: the RMA engine's (src/rma/gdr_rma_plan.h: target
 * pieces as offsets, origin and result buffers as spans or piece lists), the device
 * paths' (gdr_access.h) and where a receive's buffer starts; and predefined ops and types
 * as the accumulate kernel's enums. */
#include "gdr_internal.h"
#include "gdr_access.h"
#include "gdr_noinline.h"
#include "gpu/gdr_gpu_stream.h"

uint64_t MPIDI_GDR_target_span(MPI_Aint count, MPI_Datatype type, MPI_Aint * true_lb)
{
    MPI_Aint extent, true_extent;
    if (HANDLE_IS_BUILTIN(type)) {
        /* (every access of a predefined type checks its range: spare the type queries) */
        *true_lb = 0;
        return count > 0 ? (uint64_t) count * (uint64_t) MPIR_Datatype_get_basic_size(type) : 0;
    }
    MPIR_Datatype_get_extent_macro(type, extent);
    MPIR_Type_get_true_extent_impl(type, true_lb, &true_extent);
    MPI_Aint span = (count - 1) * extent + true_extent;
    return span < 0 ? 0 : (uint64_t) span;
}

/* MPICH maps every builtin datatype to an internal one (MPI_LONG on LP64 becomes
 * MPIR_INT64 plus its index): integers of 8 bytes are exactly the two raw internal
 * kinds below.  An external handle is mapped first, for callers inside MPICH. */
int MPIDI_GDR_is_int64(MPI_Datatype basic)
{
    if (basic == MPI_DATATYPE_NULL || !HANDLE_IS_BUILTIN(basic))
        return 0;
    MPIR_DATATYPE_REPLACE_BUILTIN(basic);
    MPI_Datatype raw = MPIR_DATATYPE_GET_RAW_INTERNAL(basic);
    return raw == MPIR_INT64 || raw == MPIR_UINT64;
}

void MPIDI_GDR_describe_buf(const void *buf, MPI_Aint count, MPI_Datatype type, MPI_Aint bytes,
                            int want_list, uint64_t device_id, struct iovec *small,
                            gdr_rma_buf_t * out)
{
    int contig;
    MPI_Aint lb, n = 0, got = 0;
    MPIDI_Datatype_check_contig_lb(type, contig, lb);
    *out = (gdr_rma_buf_t) {.device_id = device_id };
    if (contig && device_id != 0) {
        /* the engine moves device memory only as a pinned list: one piece */
        out->addr = (char *) buf + lb;
        out->scattered = 1;
        small[0] = (struct iovec) {.iov_base = out->addr,.iov_len = (size_t) bytes };
        out->iov = small;
        out->n = 1;
        return;
    }
    if (contig) {
        out->addr = (char *) buf + lb;
        return;
    }
    out->scattered = 1;
    MPI_Aint iov_bytes;
    if (!want_list || MPIR_Typerep_iov_len(count, type, bytes, &n, &iov_bytes) != MPI_SUCCESS
        || n < 2
        || n > GDR_RMA_SGE_MAX)
        return;         /* packed or unpacked through an engine buffer */
    if (MPIR_Typerep_to_iov_offset(buf, count, type, 0, small, n, &got) != MPI_SUCCESS
        || got != n)
        return;
    out->iov = small;
    out->n = (size_t) n;
}

/* count x type at buf (NULL: as offsets) as pieces: one in *one when contiguous or empty,
 * else an allocated list; when too_many(limit, pieces, bytes) says the list is too long:
 * *n 0 and nothing allocated. */
typedef int (*too_many_fn) (const void *limit, size_t n, uint64_t bytes);
static int pieces_of(const void *buf, MPI_Aint count, MPI_Datatype type, MPI_Aint bytes,
                     too_many_fn too_many, const void *limit, struct iovec *one,
                     struct iovec **out, size_t *n)
{
    int mpi_errno = MPI_SUCCESS, contig;
    MPI_Aint lb, niov = 0, iov_bytes = 0, got = 0;
    MPIDI_Datatype_check_contig_lb(type, contig, lb);
    *out = one;
    *n = 1;
    *one = (struct iovec) {.iov_base = (void *) ((uintptr_t) buf + (uintptr_t) lb),
        .iov_len = (size_t) bytes };
    if (contig || count <= 0)
        return MPI_SUCCESS;
    mpi_errno = MPIR_Typerep_iov_len(count, type, bytes, &niov, &iov_bytes);
    MPIR_ERR_CHECK(mpi_errno);
    if (too_many(limit, (size_t) niov, (uint64_t) bytes)) {
        *n = 0;
        return MPI_SUCCESS;
    }
    struct iovec *iov = MPL_malloc(MPL_MAX(niov, 1) * sizeof(*iov), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP1(iov == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                         "gdr piece list");
    mpi_errno = MPIR_Typerep_to_iov_offset(buf, count, type, 0, iov, niov, &got);
    if (mpi_errno != MPI_SUCCESS) {
        MPL_free(iov);
        goto fn_fail;
    }
    *out = iov;
    *n = (size_t) got;
  fn_fail:
    return mpi_errno;
}

/* too_many_fn: the engine's rule for a target of `*(gdr_rma_kind_t *) limit` */
static int too_scattered(const void *limit, size_t n, uint64_t bytes)
{
    return gdr_rma_target_too_scattered(*(const gdr_rma_kind_t *) limit, n, bytes);
}

/* too_many_fn: more than `*(size_t *) limit` pieces */
static int more_than(const void *limit, size_t n, uint64_t bytes)
{
    (void) bytes;
    return n > *(const size_t *) limit;
}

int MPIDI_GDR_target_pieces(MPI_Aint count, MPI_Datatype type, MPI_Aint bytes,
                            gdr_rma_kind_t kind, struct iovec *small, struct iovec **pieces,
                            size_t *n)
{
    /* laid out from address 0: the engine adds the target's address */
    return pieces_of(NULL, count, type, bytes, too_scattered, &kind, small, pieces, n);
}

const void *MPIDI_GDR_recv_first_byte(MPIR_Request * rreq)
{
    MPIDIG_rreq_async_t *p = &MPIDIG_REQUEST(rreq, req->recv_async);
    if (p->recv_type == MPIDIG_RECV_CONTIG)
        return p->iov_one.iov_base;
    if (p->recv_type == MPIDIG_RECV_IOV)
        return p->iov_num > 0 ? p->iov_ptr[0].iov_base : NULL;
    if (HANDLE_IS_BUILTIN(MPIDIG_REQUEST(rreq, datatype)))
        return MPIDIG_REQUEST(rreq, buffer);
    MPI_Aint true_lb, true_extent;
    MPIR_Type_get_true_extent_impl(MPIDIG_REQUEST(rreq, datatype), &true_lb, &true_extent);
    return MPIR_get_contig_ptr(MPIDIG_REQUEST(rreq, buffer), true_lb);
}

MPI_Datatype MPIDI_GDR_acc_elem_type(MPI_Datatype t)
{
    if (t == MPI_FLOAT_INT || t == MPI_DOUBLE_INT || t == MPI_LONG_INT || t == MPI_SHORT_INT)
        return t;
    MPI_Datatype basic = MPI_DATATYPE_NULL;
    MPIR_Datatype_get_basic_type(t, basic);
    return basic;
}

/* The value-index pairs with padding (MPI_SHORT_INT: 2 bytes; MPI_DOUBLE_INT and
 * MPI_LONG_INT: 4) hold 6 or 12 bytes of data in 8- or 16-byte elements, and gdr's kernel
 * applies whole elements.  For an accumulate a of element type elem: 0 when elem is no
 * such pair; 1 when a's origin (if read), result (if any) and target are plain arrays of
 * it, to be moved as count * *extent bytes, padding included (the struct's own); -1 for
 * any other layout of them. */
static int acc_whole_pairs(const MPIDI_GDR_rma_args_t * a, MPI_Datatype elem,
                           MPI_Aint * extent)
{
    if (elem != MPI_FLOAT_INT && elem != MPI_DOUBLE_INT && elem != MPI_LONG_INT
        && elem != MPI_SHORT_INT)
        return 0;
    MPI_Aint size;
    MPIR_Datatype_get_size_macro(elem, size);
    MPIR_Datatype_get_extent_macro(elem, *extent);
    if (size == *extent)
        return 0;
    int reads_origin = a->op != MPI_NO_OP, has_result = a->kind != GDR_RMA_ACC;
    return a->ttype == elem && (!reads_origin || (a->otype == elem && a->ocount == a->tcount))
        && (!has_result || (a->rtype == elem && a->rcount == a->tcount)) ? 1 : -1;
}

/* MPICH hands the netmod internal handles for builtin types (MPI_DOUBLE arrives as
 * MPIR_FLOAT64 plus an index, MPI_2INT as the builtin pair MPIR_2INT32): classify by the
 * raw internal kind, as MPIDI_GDR_is_int64 does; the value-index pairs and C bool by
 * their handles. */
int MPIDI_GDR_gpu_type_of(MPI_Datatype t)
{
    if (t == MPI_C_BOOL)
        return GDR_GPU_T_BOOL;
    if (t == MPI_FLOAT_INT)
        return GDR_GPU_T_FLOAT_INT;
    if (t == MPI_DOUBLE_INT)
        return GDR_GPU_T_DOUBLE_INT;
    if (t == MPI_LONG_INT && sizeof(long) == 8)
        return GDR_GPU_T_LONG_INT;
    if (t == MPI_2INT)
        return GDR_GPU_T_2INT;
    if (t == MPI_SHORT_INT)
        return GDR_GPU_T_SHORT_INT;
    if (t == MPI_DATATYPE_NULL || !HANDLE_IS_BUILTIN(t))
        return -1;
    MPIR_DATATYPE_REPLACE_BUILTIN(t);
    static const struct {
        MPI_Datatype raw;
        int gpu;
    } kinds[] = {
        {MPIR_INT8, GDR_GPU_T_INT8}, {MPIR_INT16, GDR_GPU_T_INT16},
        {MPIR_INT32, GDR_GPU_T_INT32}, {MPIR_INT64, GDR_GPU_T_INT64},
        {MPIR_UINT8, GDR_GPU_T_UINT8}, {MPIR_UINT16, GDR_GPU_T_UINT16},
        {MPIR_UINT32, GDR_GPU_T_UINT32}, {MPIR_UINT64, GDR_GPU_T_UINT64},
        {MPIR_FLOAT32, GDR_GPU_T_FLOAT}, {MPIR_FLOAT64, GDR_GPU_T_DOUBLE},
        {MPIR_COMPLEX32, GDR_GPU_T_FLOAT_COMPLEX}, {MPIR_COMPLEX64, GDR_GPU_T_DOUBLE_COMPLEX},
        {MPIR_2INT32, GDR_GPU_T_2INT},  /* MPI_2INT (int is 4 bytes: gdr_gpu_2int_t) */
    };
    MPI_Datatype raw = MPIR_DATATYPE_GET_RAW_INTERNAL(t);
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (kinds[i].raw == raw)
            return kinds[i].gpu;
    return -1;
}

int MPIDI_GDR_gpu_op_of(MPI_Op op, gdr_rma_kind_t kind)
{
    static const struct {
        MPI_Op op;
        int gpu;
    } ops[] = {
        {MPI_SUM, GDR_GPU_OP_SUM}, {MPI_PROD, GDR_GPU_OP_PROD}, {MPI_MAX, GDR_GPU_OP_MAX},
        {MPI_MIN, GDR_GPU_OP_MIN}, {MPI_LAND, GDR_GPU_OP_LAND}, {MPI_LOR, GDR_GPU_OP_LOR},
        {MPI_LXOR, GDR_GPU_OP_LXOR}, {MPI_BAND, GDR_GPU_OP_BAND}, {MPI_BOR, GDR_GPU_OP_BOR},
        {MPI_BXOR, GDR_GPU_OP_BXOR}, {MPI_MAXLOC, GDR_GPU_OP_MAXLOC},
        {MPI_MINLOC, GDR_GPU_OP_MINLOC}, {MPI_REPLACE, GDR_GPU_OP_REPLACE},
        {MPI_NO_OP, GDR_GPU_OP_NO_OP},
    };
    if (kind == GDR_RMA_CAS)
        return GDR_GPU_OP_CSWAP;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (ops[i].op == op)
            return ops[i].gpu;
    return -1;
}

void MPIDI_GDR_access_free(MPIDI_GDR_access_t * d)
{
    if (d->t != &d->t_one)
        MPL_free(d->t);
    if (d->o != &d->o_one)
        MPL_free(d->o);
    if (d->r != &d->r_one)
        MPL_free(d->r);
    d->t = &d->t_one;
    d->o = &d->o_one;
    d->r = &d->r_one;
    d->tn = d->on = d->rn = 0;
}

int MPIDI_GDR_access_describe(const MPIDI_GDR_rma_args_t * a, size_t max_tpieces,
                              MPIDI_GDR_access_t * d, int *why)
{
    static const size_t any = SIZE_MAX;
    int mpi_errno = MPI_SUCCESS, has_o = 1, has_r = 0;
    MPI_Datatype tt = a->ttype, ot = a->otype, rt = a->rtype;
    MPI_Aint tc = a->tcount, oc = a->ocount, rc = a->rcount, size;

    memset(d, 0, sizeof(*d));
    MPIDI_GDR_access_free(d);   /* (the inline pieces) */
    d->op = d->type = -1;
    d->elem = 1;
    *why = MPIDI_GDR_ACCESS_OK;
    if (a->kind != GDR_RMA_PUT && a->kind != GDR_RMA_GET) {
        MPI_Datatype basic = a->kind == GDR_RMA_ACC || a->kind == GDR_RMA_GET_ACC
            ? MPIDI_GDR_acc_elem_type(tt) : tt;
        MPI_Aint extent;
        d->op = MPIDI_GDR_gpu_op_of(a->op, a->kind);
        d->type = MPIDI_GDR_gpu_type_of(basic);
        if (d->op < 0) {
            *why = MPIDI_GDR_ACCESS_OP;
            return MPI_SUCCESS;
        }
        if (d->type < 0 || !gdr_gpu_acc_valid(d->op, d->type)) {
            *why = MPIDI_GDR_ACCESS_TYPE;
            return MPI_SUCCESS;
        }
        d->whole = acc_whole_pairs(a, basic, &extent);
        if (d->whole < 0) {
            *why = MPIDI_GDR_ACCESS_PAIRS;
            return MPI_SUCCESS;
        }
        if (d->whole) {         /* whole elements, padding included */
            tt = ot = rt = MPI_BYTE;
            tc = oc = rc = extent * a->tcount;
        }
        d->elem = gdr_gpu_type_size(d->type);
        has_o = d->op != GDR_GPU_OP_NO_OP;
        has_r = a->kind != GDR_RMA_ACC;
    }
    MPIR_Datatype_get_size_macro(tt, size);
    d->bytes = (uint64_t) (size * tc);
    mpi_errno = pieces_of(NULL, tc, tt, (MPI_Aint) d->bytes, more_than, &max_tpieces,
                          &d->t_one, &d->t, &d->tn);
    if (mpi_errno == MPI_SUCCESS && d->tn == 0 && d->bytes > 0)
        *why = MPIDI_GDR_ACCESS_PIECES;
    if (mpi_errno == MPI_SUCCESS && !*why && has_o) {
        MPIR_Datatype_get_size_macro(ot, size);
        if ((uint64_t) (size * oc) != d->bytes)
            *why = MPIDI_GDR_ACCESS_SIZES;
        else
            mpi_errno = pieces_of(a->origin, oc, ot, (MPI_Aint) d->bytes, more_than, &any,
                                  &d->o_one, &d->o, &d->on);
    }
    if (mpi_errno == MPI_SUCCESS && !*why && has_r) {
        MPIR_Datatype_get_size_macro(rt, size);
        if ((uint64_t) (size * rc) != d->bytes)
            *why = MPIDI_GDR_ACCESS_SIZES;
        else
            mpi_errno = pieces_of(a->result, rc, rt, (MPI_Aint) d->bytes, more_than, &any,
                                  &d->r_one, &d->r, &d->rn);
    }
    const struct iovec *lists[3] = { d->t, d->o, d->r };
    size_t counts[3] = { d->tn, d->on, d->rn };
    for (int k = 0; k < 3 && d->elem > 1; k++)
        for (size_t i = 0; i < counts[k]; i++)
            d->split |= lists[k][i].iov_len % d->elem != 0;
    if (mpi_errno != MPI_SUCCESS || *why)
        MPIDI_GDR_access_free(d);
    return mpi_errno;
}

/* ---- typed buffers copied in ranges ---------------------------------------------- */

int MPIDI_GDR_copy_bytes(void *dst, const void *src, size_t n, MPIDI_GDR_copy_way_t way)
{
    if (n == 0)
        return 0;
    if (!way.device)
        return MPIR_Typerep_copy(dst, src, n, MPIR_TYPEREP_FLAG_NONE) == MPI_SUCCESS ? 0 : -1;
    if (way.queue != NULL)
        return gdr_gpu_copy_async(&MPIDI_GDR_global.gpu, way.queue, dst, src, n);
    return gdr_gpu_copy(&MPIDI_GDR_global.gpu, dst, src, n);
}

/* Blocks gathered for one launch of the copy kernel (the device seam's copy_runs). */
typedef struct {
    gdr_rma_copy_run_t run[GDR_RMA_COPY_RUNS_MAX];
    size_t n;
    int off;                    /* the kernel is not loaded: the copy engine from now on */
} pack_runs_t;

/* Launches the gathered blocks (or copies them one by one without the kernel). */
static int pack_flush(pack_runs_t * k, MPIDI_GDR_copy_way_t way)
{
    const gdr_rma_device_t *d = &MPIDI_GDR_global.device_seam;
    int rc = k->n == 0 ? GDR_RMA_OK : d->copy_runs(d->ctx, way.queue, k->run, k->n);
    if (rc == GDR_RMA_NOREG) {
        k->off = 1;
        rc = 0;
        for (size_t i = 0; i < k->n && rc == 0; i++)
            rc = MPIDI_GDR_copy_bytes(k->run[i].dst, k->run[i].src, k->run[i].len, way);
    } else if (rc == GDR_RMA_OK && k->n > 0) {
        (*way.kernels)++;
    }
    k->n = 0;
    return rc;
}

/* One block: into the kernel's batch when it is small, else copied at once. */
static int pack_block(pack_runs_t * k, void *dst, const void *src, size_t n,
                      MPIDI_GDR_copy_way_t way)
{
    if (k == NULL || k->off || n > (size_t) MPIR_CVAR_CH4_GDR_PACK_KERNEL_MAX)
        return MPIDI_GDR_copy_bytes(dst, src, n, way);
    k->run[k->n++] = (gdr_rma_copy_run_t) {.dst = dst,.src = src,.len = n };
    return k->n == GDR_RMA_COPY_RUNS_MAX ? pack_flush(k, way) : 0;
}

int MPIDI_GDR_typed_copy(void *buf, MPI_Aint count, MPI_Datatype type,
                         MPIDI_GDR_type_cursor_t * cur, size_t from, char *flat, size_t len,
                         int gather, MPIDI_GDR_copy_way_t way)
{
    enum { PIECES = 64 };
    int contig, rc = 0;
    MPI_Aint lb;
    MPIDI_Datatype_check_contig_lb(type, contig, lb);
    if (contig) {
        char *at = (char *) buf + lb + from;
        return gather ? MPIDI_GDR_copy_bytes(flat, at, len, way)
            : MPIDI_GDR_copy_bytes(at, flat, len, way);
    }
    /* small blocks of a queued device copy: packed by gdr's copy kernel, 64 a launch */
    pack_runs_t batch, *k = NULL;
    if (way.device && way.queue != NULL && way.kernels != NULL
        && MPIR_CVAR_CH4_GDR_PACK_KERNEL_MAX > 0
        && MPIDI_GDR_global.device_seam.copy_runs != NULL) {
        batch.n = 0;
        batch.off = 0;
        k = &batch;
    }
    if (from < cur->pos)
        *cur = (MPIDI_GDR_type_cursor_t) { 0, 0 };
    size_t end = from + len;
    while (rc == 0 && cur->pos < end) {
        struct iovec iov[PIECES];
        MPI_Aint n = 0;
        if (MPIR_Typerep_to_iov_offset(buf, count, type, cur->piece, iov, PIECES, &n)
            != MPI_SUCCESS || n == 0) {
            rc = -1;
            break;
        }
        for (MPI_Aint i = 0; i < n && cur->pos < end && rc == 0; i++) {
            size_t b0 = cur->pos, bl = iov[i].iov_len;
            size_t lo = b0 > from ? b0 : from, hi = b0 + bl < end ? b0 + bl : end;
            if (lo < hi) {
                char *at = (char *) iov[i].iov_base + (lo - b0);
                rc = gather ? pack_block(k, flat + (lo - from), at, hi - lo, way)
                    : pack_block(k, at, flat + (lo - from), hi - lo, way);
            }
            if (b0 + bl > end)
                goto done;      /* the next range starts inside this piece */
            cur->piece++;
            cur->pos += bl;
        }
    }
  done:
    if (k != NULL && rc == 0)
        rc = pack_flush(k, way);
    return rc;
}
