/* Windows: created, synchronised and freed by MPICH's generic RMA layer (MPIDIG).
 * The hooks register window memory for RDMA, spread every target's size, base and
 * key (origin-side range checks, gdr_rma.c's RDMA path) and destroy the key at
 * MPI_Win_free. */
#include "gdr_impl.h"
#include "gdr_noinline.h"
#include "rma/gdr_rma_range.h"
#include "gdr_rma.h"

static void win_table_free(MPIR_Win * win)
{
    MPIDI_GDR_win_t *w = &GDR_WIN(win);
    MPL_free(w->target_size);
    MPL_free(w->target_disp_unit);
    MPL_free(w->target_base);
    MPL_free(w->target_rkey);
    MPL_free(w->target_peer);
    MPL_free(w->pending_remote);
    MPL_free(w->pending_local);
    MPL_free(w->last_acc_path);
    MPL_free(w->acc_read_posted);
    MPIDI_GDR_dynamic_free(win);
    if (w->region.mr != NULL)
        gdr_verbs_rma_deregister(MPIDI_GDR_global.rma, &w->region);
    memset(w, 0, sizeof(*w));
}

/* The ops a window declares (which_accumulate_ops), in gdr_rma_path's terms. */
static unsigned declared_ops(MPIR_Win * win)
{
    uint32_t which = MPIDIG_WIN(win, info_args).which_accumulate_ops;
    unsigned d = 0;
    for (int i = 0; i < MPIDIG_ACCU_NUM_OP; i++) {
        if (!(which & (1u << i)))
            continue;
        MPI_Op op = MPIDIU_win_acc_get_op(i);
        if (op == MPI_SUM)
            d |= GDR_RMA_DECLARES_SUM;
        else if (op == MPI_NO_OP)
            d |= GDR_RMA_DECLARES_NO_OP;
        else if (op == MPI_OP_NULL)
            d |= GDR_RMA_DECLARES_CSWAP;
        else
            d |= GDR_RMA_DECLARES_OTHER;
    }
    return d;
}

/* Remote access a window's memory grants: atomics only when the rule allows them. */
unsigned MPIDI_GDR_win_access(MPIR_Win * win)
{
    return GDR_VERBS_RMA_REMOTE_READ | GDR_VERBS_RMA_REMOTE_WRITE |
        (GDR_WIN(win).atomics.native ? GDR_VERBS_RMA_REMOTE_ATOMIC : 0);
}

uint64_t MPIDI_GDR_target_span(MPI_Aint count, MPI_Datatype type, MPI_Aint * true_lb)
{
    MPI_Aint extent, true_extent;
    MPIR_Datatype_get_extent_macro(type, extent);
    MPIR_Type_get_true_extent_impl(type, true_lb, &true_extent);
    MPI_Aint span = (count - 1) * extent + true_extent;
    return span < 0 ? 0 : (uint64_t) span;
}

/* Collective over the window's communicator: every rank learns every target's
 * size and displacement unit and, when RDMA can reach it, its registered base and
 * key.  The accumulate policy (gdr_rma_path.h) is agreed here too. */
static int win_table_init(MPIR_Win * win, int rdma)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    MPIDI_GDR_win_t *w = &GDR_WIN(win);
    int n = win->comm_ptr->local_size;
    struct {
        MPI_Aint size, disp_unit, base, rkey;
    } *all = NULL;

    memset(w, 0, sizeof(*w));
    all = MPL_malloc(n * sizeof(*all), MPL_MEM_RMA);
    w->target_size = MPL_malloc(n * sizeof(MPI_Aint), MPL_MEM_RMA);
    w->target_disp_unit = MPL_malloc(n * sizeof(int), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP1(all == NULL || w->target_size == NULL || w->target_disp_unit == NULL,
                         mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s", "gdr window table");

    /* RDMA needs the engine, and a queue pair to every rank it reaches */
    rdma = rdma && MPIDI_GDR_global.rma != NULL;
    int all_reach = rdma;
    if (rdma) {
        w->target_peer = MPL_malloc(n * sizeof(int), MPL_MEM_RMA);
        w->target_base = MPL_calloc(n, sizeof(uint64_t), MPL_MEM_RMA);
        w->target_rkey = MPL_calloc(n, sizeof(uint32_t), MPL_MEM_RMA);
        w->pending_remote = MPL_calloc(n, sizeof(unsigned long), MPL_MEM_RMA);
        w->pending_local = MPL_calloc(n, sizeof(unsigned long), MPL_MEM_RMA);
        w->last_acc_path = MPL_calloc(n, 1, MPL_MEM_RMA);
        w->acc_read_posted = MPL_calloc(n, 1, MPL_MEM_RMA);
        MPIR_ERR_CHKANDJUMP1(w->target_peer == NULL || w->target_base == NULL
                             || w->target_rkey == NULL || w->pending_remote == NULL
                             || w->pending_local == NULL || w->last_acc_path == NULL
                             || w->acc_read_posted == NULL, mpi_errno,
                             MPI_ERR_NO_MEM, "**nomem", "**nomem %s", "gdr window table");
        for (int i = 0; i < n; i++) {
            int lpid = -1, avtid = -1;
            MPIDIU_comm_rank_to_pid(win->comm_ptr, i, &lpid, &avtid);
            w->target_peer[i] = avtid == 0 && lpid >= 0
                && gdr_verbs_am_reaches(MPIDI_GDR_global.am, lpid) ? lpid : -1;
            all_reach &= w->target_peer[i] >= 0;
        }
    }
    /* NIC atomics only if every accumulate of the window, from anyone, reaches a NIC */
    all_reach &= (MPIDI_WIN(win, winattr) & MPIDI_WINATTR_ACCU_NO_SHM) != 0;
    int agreed = 0;
    mpi_errno = MPIR_Allreduce(&all_reach, &agreed, 1, MPI_INT, MPI_MIN, win->comm_ptr, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    w->atomics = gdr_rma_atomics_policy(agreed, declared_ops(win),
                                        MPIDIG_WIN(win, info_args).accumulate_ordering != 0);

    all[win->comm_ptr->rank].size = win->size;
    all[win->comm_ptr->rank].disp_unit = win->disp_unit;
    all[win->comm_ptr->rank].base = 0;
    all[win->comm_ptr->rank].rkey = 0;
    if (rdma && win->size > 0 && win->create_flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        char why[256];
        if (gdr_verbs_rma_register(MPIDI_GDR_global.rma, win->base, (size_t) win->size,
                                   MPIDI_GDR_win_access(win),
                                   &w->region, why, sizeof(why)) == 0) {
            all[win->comm_ptr->rank].base = (MPI_Aint) w->region.addr;
            all[win->comm_ptr->rank].rkey = (MPI_Aint) w->region.rkey;
        } else if (MPIR_CVAR_CH4_GDR_VERBOSE > 0) {
            /* still correct: every operation on this window then goes as a message */
            fprintf(stderr, "gdr[%d]: window without RDMA: %s\n", MPIR_Process.rank, why);
        }
    }
    mpi_errno = MPIR_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 4, MPI_AINT,
                               win->comm_ptr, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    for (int i = 0; i < n; i++) {
        w->target_size[i] = all[i].size;
        w->target_disp_unit[i] = (int) all[i].disp_unit;
        if (rdma) {
            w->target_base[i] = (uint64_t) all[i].base;
            w->target_rkey[i] = (uint32_t) all[i].rkey;
        }
    }
  fn_exit:
    MPL_free(all);
    return mpi_errno;
  fn_fail:
    win_table_free(win);
    goto fn_exit;
}

int MPIDI_GDR_rma_check_target(MPIR_Win * win, int target_rank, MPI_Aint target_disp,
                               MPI_Aint target_count, MPI_Datatype target_datatype)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint true_lb;
    uint64_t offset;

    if (target_rank == MPI_PROC_NULL || target_count <= 0 || GDR_WIN(win).target_size == NULL
        || target_rank < 0 || target_rank >= win->comm_ptr->local_size)
        return MPI_SUCCESS;     /* nothing touched, no table, or rank already refused */
    uint64_t span = MPIDI_GDR_target_span(target_count, target_datatype, &true_lb);
    if (win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        /* this rank's own regions are known here; others' on the RDMA path */
        if (target_rank == win->comm_ptr->rank
            && !MPIDI_GDR_dynamic_is_attached(win, (uint64_t) (target_disp + true_lb)))
            MPIR_ERR_SET1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                          "this rank has not attached the address to its dynamic window");
        return mpi_errno;
    }
    gdr_rma_range_status_t st =
        gdr_rma_range_check_span(target_disp, (uint64_t) GDR_WIN(win).target_disp_unit[target_rank],
                                 true_lb, span,
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
    return win_table_init(win, 1);
}

int MPIDI_GDR_mpi_win_allocate_hook(MPIR_Win * win)
{
    return win_table_init(win, 1);
}

int MPIDI_GDR_mpi_win_allocate_shared_hook(MPIR_Win * win)
{
    return win_table_init(win, 0);      /* one node: MPICH's shm module */
}

int MPIDI_GDR_mpi_win_create_dynamic_hook(MPIR_Win * win)
{
    /* no memory yet: this agrees on the accumulate rule and who has a queue pair */
    return win_table_init(win, 1);
}

int MPIDI_GDR_mpi_win_attach_hook(MPIR_Win * win, void *base, MPI_Aint size)
{
    return MPIDI_GDR_dynamic_attach(win, base, size);
}

int MPIDI_GDR_mpi_win_detach_hook(MPIR_Win * win, const void *base)
{
    return MPIDI_GDR_dynamic_detach(win, base);
}

int MPIDI_GDR_mpi_win_free_hook(MPIR_Win * win)
{
    /* epochs are closed, so nothing should be in flight; never free under the NIC */
    int mpi_errno = MPIDI_GDR_rma_wait_all(win, 0);
    win_table_free(win);        /* the key dies here */
    return mpi_errno;
}
