/* The netmod's RMA entry points: each operation tries the RDMA path (gdr_rma.c, the
 * engine in src/rma) and otherwise goes to MPICH's active-message RMA.  Synchronisation
 * goes out of line to gdr_win_sync.c (MPIDIG's today, which calls the completion hooks
 * below: they wait for this rank's RDMA operations), so that changing it recompiles
 * only gdr's files: MPICH includes this header nearly everywhere. */
#ifndef GDR_RMA_H_INCLUDED
#define GDR_RMA_H_INCLUDED

#include "gdr_impl.h"
#include "rma/gdr_rma_kind.h"

typedef struct {
    gdr_rma_kind_t kind;
    const void *origin;
    MPI_Aint ocount;
    MPI_Datatype otype;
    void *result;
    MPI_Aint rcount;
    MPI_Datatype rtype;
    const void *compare;
    int target;
    MPI_Aint tdisp;
    MPI_Aint tcount;
    MPI_Datatype ttype;
    MPI_Op op;
} MPIDI_GDR_rma_args_t;

/* Every RMA operation's way (gdr_rma.c): *handled = 1 when gdr carried it out (same-node
 * GPU path, RDMA, the staged protocol; a request made when req != NULL) or refused it with
 * the MPI error returned; 0: the caller sends it through MPIDIG's messages (counted, and
 * accumulate ordering kept, here). */
int MPIDI_GDR_rma(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                  int *handled);
/* The hot path of MPI_Put and MPI_Get: count > 0 elements of one predefined
 * type, contiguous on both sides, to a target the NIC reaches, small (gdr_rma_select.h's
 * rc/short and rc/bcopy): MPI_SUCCESS once posted, an MPI error for a call in no epoch;
 * MPIDI_GDR_RMA_GENERAL: not this way, nothing done (MPIDI_GDR_rma takes it). */
#define MPIDI_GDR_RMA_GENERAL (-1)
int MPIDI_GDR_put_small(const void *buf, MPI_Aint count, MPI_Datatype type, int target,
                        MPI_Aint disp, MPIR_Win * win);
int MPIDI_GDR_get_small(void *buf, MPI_Aint count, MPI_Datatype type, int target,
                        MPI_Aint disp, MPIR_Win * win);
/* Its staged part (gdr_rma_staged.c): *handled = 1 when device memory the NIC cannot
 * take went through gdr's staged protocol; 0: host memory only, or the protocol is off. */
int MPIDI_GDR_rma_staged(const MPIDI_GDR_rma_args_t * a, MPIR_Win * win, MPIR_Request ** req,
                         int *handled);
/* Waits for this rank's RDMA operations on win: all targets or one; remote or local
 * completion. */
int MPIDI_GDR_rma_wait_all(MPIR_Win * win, int local_only);
int MPIDI_GDR_rma_wait_target(MPIR_Win * win, int rank, int local_only);
/* MPIDI_GDR_rma_wait_all(win, 0) but for spared's operations, which complete only locally. */
int MPIDI_GDR_rma_wait_all_except(MPIR_Win * win, int spared);

/* gdr_win_sync.c: window synchronisation, one function per MPI call. */
int MPIDI_GDR_win_start(MPIR_Group * group, int assert, MPIR_Win * win);
int MPIDI_GDR_win_complete(MPIR_Win * win);
int MPIDI_GDR_win_post(MPIR_Group * group, int assert, MPIR_Win * win);
int MPIDI_GDR_win_wait(MPIR_Win * win);
int MPIDI_GDR_win_test(MPIR_Win * win, int *flag);
int MPIDI_GDR_win_lock(int lock_type, int rank, int assert, MPIR_Win * win);
int MPIDI_GDR_win_unlock(int rank, MPIR_Win * win);
int MPIDI_GDR_win_lock_all(int assert, MPIR_Win * win);
int MPIDI_GDR_win_unlock_all(MPIR_Win * win);
int MPIDI_GDR_win_fence(int assert, MPIR_Win * win);
int MPIDI_GDR_win_flush(int rank, MPIR_Win * win);
int MPIDI_GDR_win_flush_local(int rank, MPIR_Win * win);
int MPIDI_GDR_win_flush_all(MPIR_Win * win);
int MPIDI_GDR_win_flush_local_all(MPIR_Win * win);
int MPIDI_GDR_win_sync(MPIR_Win * win);

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_start(MPIR_Group * group, int assert, MPIR_Win * win)
{
    return MPIDI_GDR_win_start(group, assert, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_complete(MPIR_Win * win)
{
    return MPIDI_GDR_win_complete(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_post(MPIR_Group * group, int assert, MPIR_Win * win)
{
    return MPIDI_GDR_win_post(group, assert, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_wait(MPIR_Win * win)
{
    return MPIDI_GDR_win_wait(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_test(MPIR_Win * win, int *flag)
{
    return MPIDI_GDR_win_test(win, flag);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_lock(int lock_type, int rank, int assert,
                                                   MPIR_Win * win, MPIDI_av_entry_t * addr)
{
    return MPIDI_GDR_win_lock(lock_type, rank, assert, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_unlock(int rank, MPIR_Win * win,
                                                     MPIDI_av_entry_t * addr)
{
    return MPIDI_GDR_win_unlock(rank, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_fence(int assert, MPIR_Win * win)
{
    return MPIDI_GDR_win_fence(assert, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_shared_query(MPIR_Win * win, int rank,
                                                           MPI_Aint * size, int *disp_unit,
                                                           void *baseptr)
{
    return MPIDIG_mpi_win_shared_query(win, rank, size, disp_unit, baseptr);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_flush(int rank, MPIR_Win * win,
                                                    MPIDI_av_entry_t * addr)
{
    return MPIDI_GDR_win_flush(rank, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_flush_local_all(MPIR_Win * win)
{
    return MPIDI_GDR_win_flush_local_all(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_unlock_all(MPIR_Win * win)
{
    return MPIDI_GDR_win_unlock_all(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_flush_local(int rank, MPIR_Win * win,
                                                          MPIDI_av_entry_t * addr)
{
    return MPIDI_GDR_win_flush_local(rank, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_sync(MPIR_Win * win)
{
    return MPIDI_GDR_win_sync(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_flush_all(MPIR_Win * win)
{
    return MPIDI_GDR_win_flush_all(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_lock_all(int assert, MPIR_Win * win)
{
    return MPIDI_GDR_win_lock_all(assert, win);
}

/* RC completions are remote completions: a write's or atomic's acknowledgement
 * means the target NIC placed the data. */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rma_win_cmpl_hook(MPIR_Win * win)
{
    return MPIDI_GDR_rma_wait_all(win, 0);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rma_win_local_cmpl_hook(MPIR_Win * win)
{
    return MPIDI_GDR_rma_wait_all(win, 1);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rma_target_cmpl_hook(int rank, MPIR_Win * win)
{
    return MPIDI_GDR_rma_wait_target(win, rank, 0);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rma_target_local_cmpl_hook(int rank, MPIR_Win * win)
{
    return MPIDI_GDR_rma_wait_target(win, rank, 1);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_put(const void *origin_addr, MPI_Aint origin_count,
                                              MPI_Datatype origin_datatype, int target_rank,
                                              MPI_Aint target_disp, MPI_Aint target_count,
                                              MPI_Datatype target_datatype, MPIR_Win * win,
                                              MPIDI_av_entry_t * addr, MPIDI_winattr_t winattr)
{
    if (origin_datatype == target_datatype && origin_count == target_count
        && HANDLE_IS_BUILTIN(origin_datatype)) {
        int rc = MPIDI_GDR_put_small(origin_addr, origin_count, origin_datatype, target_rank,
                                     target_disp, win);
        if (rc != MPIDI_GDR_RMA_GENERAL)
            return rc;
    }
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_PUT,.origin = origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, NULL, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_get(void *origin_addr, MPI_Aint origin_count,
                                              MPI_Datatype origin_datatype, int target_rank,
                                              MPI_Aint target_disp, MPI_Aint target_count,
                                              MPI_Datatype target_datatype, MPIR_Win * win,
                                              MPIDI_av_entry_t * addr, MPIDI_winattr_t winattr)
{
    if (origin_datatype == target_datatype && origin_count == target_count
        && HANDLE_IS_BUILTIN(origin_datatype)) {
        int rc = MPIDI_GDR_get_small(origin_addr, origin_count, origin_datatype, target_rank,
                                     target_disp, win);
        if (rc != MPIDI_GDR_RMA_GENERAL)
            return rc;
    }
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_GET,.origin = origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, NULL, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_rput(const void *origin_addr, MPI_Aint origin_count,
                                               MPI_Datatype origin_datatype, int target_rank,
                                               MPI_Aint target_disp, MPI_Aint target_count,
                                               MPI_Datatype target_datatype, MPIR_Win * win,
                                               MPIDI_av_entry_t * addr, MPIDI_winattr_t winattr,
                                               MPIR_Request ** request)
{
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_PUT,.origin = origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, request, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_rput(origin_addr, origin_count, origin_datatype, target_rank,
                           target_disp, target_count, target_datatype, win, request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_rget(void *origin_addr, MPI_Aint origin_count,
                                               MPI_Datatype origin_datatype, int target_rank,
                                               MPI_Aint target_disp, MPI_Aint target_count,
                                               MPI_Datatype target_datatype, MPIR_Win * win,
                                               MPIDI_av_entry_t * addr, MPIDI_winattr_t winattr,
                                               MPIR_Request ** request)
{
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_GET,.origin = origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, request, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_rget(origin_addr, origin_count, origin_datatype, target_rank,
                           target_disp, target_count, target_datatype, win, request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_accumulate(const void *origin_addr, MPI_Aint origin_count,
                                                     MPI_Datatype origin_datatype,
                                                     int target_rank, MPI_Aint target_disp,
                                                     MPI_Aint target_count,
                                                     MPI_Datatype target_datatype, MPI_Op op,
                                                     MPIR_Win * win, MPIDI_av_entry_t * addr,
                                                     MPIDI_winattr_t winattr)
{
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_ACC,.origin = origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype,.op = op
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, NULL, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_accumulate(origin_addr, origin_count, origin_datatype, target_rank,
                                 target_disp, target_count, target_datatype, op, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_raccumulate(const void *origin_addr, MPI_Aint origin_count,
                                                      MPI_Datatype origin_datatype,
                                                      int target_rank, MPI_Aint target_disp,
                                                      MPI_Aint target_count,
                                                      MPI_Datatype target_datatype, MPI_Op op,
                                                      MPIR_Win * win, MPIDI_av_entry_t * addr,
                                                      MPIDI_winattr_t winattr,
                                                      MPIR_Request ** request)
{
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_ACC,.origin = origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype,.op = op
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, request, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_raccumulate(origin_addr, origin_count, origin_datatype, target_rank,
                                  target_disp, target_count, target_datatype, op, win, request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_get_accumulate(const void *origin_addr,
                                                         MPI_Aint origin_count,
                                                         MPI_Datatype origin_datatype,
                                                         void *result_addr, MPI_Aint result_count,
                                                         MPI_Datatype result_datatype,
                                                         int target_rank, MPI_Aint target_disp,
                                                         MPI_Aint target_count,
                                                         MPI_Datatype target_datatype, MPI_Op op,
                                                         MPIR_Win * win, MPIDI_av_entry_t * addr,
                                                         MPIDI_winattr_t winattr)
{
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_GET_ACC,.origin = origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.result = result_addr,
        .rcount = result_count,.rtype = result_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype,.op = op
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, NULL, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_get_accumulate(origin_addr, origin_count, origin_datatype, result_addr,
                                     result_count, result_datatype, target_rank, target_disp,
                                     target_count, target_datatype, op, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_rget_accumulate(const void *origin_addr,
                                                          MPI_Aint origin_count,
                                                          MPI_Datatype origin_datatype,
                                                          void *result_addr, MPI_Aint result_count,
                                                          MPI_Datatype result_datatype,
                                                          int target_rank, MPI_Aint target_disp,
                                                          MPI_Aint target_count,
                                                          MPI_Datatype target_datatype,
                                                          MPI_Op op, MPIR_Win * win,
                                                          MPIDI_av_entry_t * addr,
                                                          MPIDI_winattr_t winattr,
                                                          MPIR_Request ** request)
{
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_GET_ACC,.origin = origin_addr,
        .ocount = origin_count,.otype = origin_datatype,.result = result_addr,
        .rcount = result_count,.rtype = result_datatype,.target = target_rank,
        .tdisp = target_disp,.tcount = target_count,.ttype = target_datatype,.op = op
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, request, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_rget_accumulate(origin_addr, origin_count, origin_datatype, result_addr,
                                      result_count, result_datatype, target_rank, target_disp,
                                      target_count, target_datatype, op, win, request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_fetch_and_op(const void *origin_addr, void *result_addr,
                                                       MPI_Datatype datatype, int target_rank,
                                                       MPI_Aint target_disp, MPI_Op op,
                                                       MPIR_Win * win, MPIDI_av_entry_t * addr,
                                                       MPIDI_winattr_t winattr)
{
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_FOP,.origin = origin_addr,.ocount = 1,
        .otype = datatype,.result = result_addr,.rcount = 1,.rtype = datatype,
        .target = target_rank,.tdisp = target_disp,.tcount = 1,.ttype = datatype,.op = op
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, NULL, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_fetch_and_op(origin_addr, result_addr, datatype, target_rank, target_disp,
                                   op, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_compare_and_swap(const void *origin_addr,
                                                           const void *compare_addr,
                                                           void *result_addr,
                                                           MPI_Datatype datatype,
                                                           int target_rank, MPI_Aint target_disp,
                                                           MPIR_Win * win,
                                                           MPIDI_av_entry_t * addr,
                                                           MPIDI_winattr_t winattr)
{
    MPIDI_GDR_rma_args_t a = {.kind = GDR_RMA_CAS,.origin = origin_addr,.ocount = 1,
        .otype = datatype,.result = result_addr,.rcount = 1,.rtype = datatype,
        .compare = compare_addr,.target = target_rank,.tdisp = target_disp,.tcount = 1,
        .ttype = datatype
    };
    int handled, mpi_errno = MPIDI_GDR_rma(&a, win, NULL, &handled);
    if (mpi_errno != MPI_SUCCESS || handled)
        return mpi_errno;
    return MPIDIG_mpi_compare_and_swap(origin_addr, compare_addr, result_addr, datatype,
                                       target_rank, target_disp, win);
}

#endif /* GDR_RMA_H_INCLUDED */
