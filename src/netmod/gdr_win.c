/* Windows: created, synchronised and freed by MPICH's generic RMA layer (MPIDIG),
 * which runs every operation as an active message.  The hooks record every
 * target's window size for origin-side range checks; native RDMA registration
 * will attach here too. */
#include "gdr_impl.h"
#include "gdr_noinline.h"
#include "rma/gdr_rma_range.h"

#define GDR_WIN(win) ((win)->dev.netmod.gdr)

/* Collective over the window's communicator: every rank learns every size. */
static int record_target_sizes(MPIR_Win * win)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    int n = win->comm_ptr->local_size;
    struct {
        MPI_Aint size;
        MPI_Aint disp_unit;
    } *all = NULL;

    all = MPL_malloc(n * sizeof(*all), MPL_MEM_RMA);
    GDR_WIN(win).target_size = MPL_malloc(n * sizeof(MPI_Aint), MPL_MEM_RMA);
    GDR_WIN(win).target_disp_unit = MPL_malloc(n * sizeof(int), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP1(all == NULL || GDR_WIN(win).target_size == NULL
                         || GDR_WIN(win).target_disp_unit == NULL, mpi_errno, MPI_ERR_NO_MEM,
                         "**nomem", "**nomem %s", "gdr window table");
    all[win->comm_ptr->rank].size = win->size;
    all[win->comm_ptr->rank].disp_unit = win->disp_unit;
    mpi_errno = MPIR_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_AINT,
                               win->comm_ptr, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    for (int i = 0; i < n; i++) {
        GDR_WIN(win).target_size[i] = all[i].size;
        GDR_WIN(win).target_disp_unit[i] = (int) all[i].disp_unit;
    }
  fn_exit:
    MPL_free(all);
    return mpi_errno;
  fn_fail:
    MPL_free(GDR_WIN(win).target_size);
    MPL_free(GDR_WIN(win).target_disp_unit);
    GDR_WIN(win).target_size = NULL;
    GDR_WIN(win).target_disp_unit = NULL;
    goto fn_exit;
}

int MPIDI_GDR_rma_check_target(MPIR_Win * win, int target_rank, MPI_Aint target_disp,
                               MPI_Aint target_count, MPI_Datatype target_datatype)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint extent, true_lb, true_extent;
    uint64_t offset;

    if (target_rank == MPI_PROC_NULL || target_count <= 0 || GDR_WIN(win).target_size == NULL
        || target_rank < 0 || target_rank >= win->comm_ptr->local_size)
        return MPI_SUCCESS;     /* nothing touched, dynamic window, or rank already refused */
    MPIR_Datatype_get_extent_macro(target_datatype, extent);
    MPIR_Type_get_true_extent_impl(target_datatype, &true_lb, &true_extent);
    MPI_Aint span = (target_count - 1) * extent + true_extent;
    gdr_rma_range_status_t st =
        gdr_rma_range_check_span(target_disp, (uint64_t) GDR_WIN(win).target_disp_unit[target_rank],
                                 true_lb, span < 0 ? 0 : (uint64_t) span,
                                 (uint64_t) GDR_WIN(win).target_size[target_rank], &offset);
    if (st == GDR_RMA_RANGE_NEGATIVE_DISP)
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_DISP, "**gdr_range", "**gdr_range %s",
                      gdr_rma_range_str(st));
    else if (st != GDR_RMA_RANGE_OK)
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                      gdr_rma_range_str(st));
    return mpi_errno;
}

int MPIDI_GDR_mpi_win_create(void *base, MPI_Aint length, int disp_unit, MPIR_Info * info,
                             MPIR_Comm * comm_ptr, MPIR_Win ** win_ptr)
{
    return MPIDIG_mpi_win_create(base, length, disp_unit, info, comm_ptr, win_ptr);
}

int MPIDI_GDR_mpi_win_allocate(MPI_Aint length, int disp_unit, MPIR_Info * info,
                               MPIR_Comm * comm_ptr, void *baseptr, MPIR_Win ** win_ptr)
{
    return MPIDIG_mpi_win_allocate(length, disp_unit, info, comm_ptr, baseptr, win_ptr);
}

int MPIDI_GDR_mpi_win_allocate_shared(MPI_Aint size, int disp_unit, MPIR_Info * info,
                                      MPIR_Comm * comm_ptr, void **base_ptr, MPIR_Win ** win_ptr)
{
    return MPIDIG_mpi_win_allocate_shared(size, disp_unit, info, comm_ptr, base_ptr, win_ptr);
}

int MPIDI_GDR_mpi_win_create_dynamic(MPIR_Info * info, MPIR_Comm * comm, MPIR_Win ** win)
{
    return MPIDIG_mpi_win_create_dynamic(info, comm, win);
}

int MPIDI_GDR_mpi_win_attach(MPIR_Win * win, void *base, MPI_Aint size)
{
    return MPIDIG_mpi_win_attach(win, base, size);
}

int MPIDI_GDR_mpi_win_detach(MPIR_Win * win, const void *base)
{
    return MPIDIG_mpi_win_detach(win, base);
}

int MPIDI_GDR_mpi_win_free(MPIR_Win ** win_ptr)
{
    return MPIDIG_mpi_win_free(win_ptr);
}

int MPIDI_GDR_mpi_win_set_info(MPIR_Win * win, MPIR_Info * info)
{
    return MPIDIG_mpi_win_set_info(win, info);
}

int MPIDI_GDR_mpi_win_get_info(MPIR_Win * win, MPIR_Info ** info_p_p)
{
    return MPIDIG_mpi_win_get_info(win, info_p_p);
}

int MPIDI_GDR_mpi_win_create_hook(MPIR_Win * win)
{
    return record_target_sizes(win);
}

int MPIDI_GDR_mpi_win_allocate_hook(MPIR_Win * win)
{
    return record_target_sizes(win);
}

int MPIDI_GDR_mpi_win_allocate_shared_hook(MPIR_Win * win)
{
    return record_target_sizes(win);
}

int MPIDI_GDR_mpi_win_create_dynamic_hook(MPIR_Win * win)
{
    GDR_WIN(win).target_size = NULL;    /* regions unknown at the origin: not checked */
    GDR_WIN(win).target_disp_unit = NULL;
    return MPI_SUCCESS;
}

int MPIDI_GDR_mpi_win_attach_hook(MPIR_Win * win, void *base, MPI_Aint size)
{
    return MPI_SUCCESS;
}

int MPIDI_GDR_mpi_win_detach_hook(MPIR_Win * win, const void *base)
{
    return MPI_SUCCESS;
}

int MPIDI_GDR_mpi_win_free_hook(MPIR_Win * win)
{
    MPL_free(GDR_WIN(win).target_size);
    MPL_free(GDR_WIN(win).target_disp_unit);
    GDR_WIN(win).target_size = NULL;
    GDR_WIN(win).target_disp_unit = NULL;
    return MPI_SUCCESS;
}
