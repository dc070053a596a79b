/* MPI datatypes as the RMA engine's flat descriptions (src/rma/gdr_rma_plan.h): target
 * pieces as offsets, origin and result buffers as spans or piece lists. */
#include "gdr_impl.h"
#include "gdr_noinline.h"

uint64_t MPIDI_GDR_target_span(MPI_Aint count, MPI_Datatype type, MPI_Aint * true_lb)
{
    MPI_Aint extent, true_extent;
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

int MPIDI_GDR_target_pieces(MPI_Aint count, MPI_Datatype type, MPI_Aint bytes,
                            gdr_rma_kind_t kind, struct iovec *small, struct iovec **pieces,
                            size_t *n)
{
    int mpi_errno = MPI_SUCCESS, contig;
    MPI_Aint lb, niov = 0, got = 0, iov_bytes;
    MPIDI_Datatype_check_contig_lb(type, contig, lb);
    *pieces = small;
    *n = 1;
    small->iov_base = (void *) (uintptr_t) lb;
    small->iov_len = (size_t) bytes;
    if (contig || count <= 0)
        return MPI_SUCCESS;
    mpi_errno = MPIR_Typerep_iov_len(count, type, bytes, &niov, &iov_bytes);
    MPIR_ERR_CHECK(mpi_errno);
    if (gdr_rma_target_too_scattered(kind, (size_t) niov, (uint64_t) bytes)) {
        *n = 0;
        return MPI_SUCCESS;
    }
    struct iovec *iov = MPL_malloc(niov * sizeof(struct iovec), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP1(iov == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                         "gdr target pieces");
    /* laid out from address 0: the engine adds the target's address */
    mpi_errno = MPIR_Typerep_to_iov_offset(NULL, count, type, 0, iov, niov, &got);
    if (mpi_errno != MPI_SUCCESS) {
        MPL_free(iov);
        goto fn_fail;
    }
    *pieces = iov;
    *n = (size_t) got;
  fn_fail:
    return mpi_errno;
}

int MPIDI_GDR_list_buf(const void *buf, MPI_Aint count, MPI_Datatype type, MPI_Aint bytes,
                       uint64_t device_id, gdr_rma_buf_t * out)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint niov = 0, iov_bytes = 0, got = 0;
    *out = (gdr_rma_buf_t) {.device_id = device_id,.scattered = 1 };
    mpi_errno = MPIR_Typerep_iov_len(count, type, bytes, &niov, &iov_bytes);
    MPIR_ERR_CHECK(mpi_errno);
    struct iovec *iov = MPL_malloc(MPL_MAX(niov, 1) * sizeof(*iov), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP1(iov == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                         "gdr piece list");
    mpi_errno = MPIR_Typerep_to_iov_offset(buf, count, type, 0, iov, niov, &got);
    if (mpi_errno != MPI_SUCCESS) {
        MPL_free(iov);
        goto fn_fail;
    }
    out->iov = iov;
    out->n = (size_t) got;
  fn_fail:
    return mpi_errno;
}
