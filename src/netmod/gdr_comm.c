/* Communicator hooks.  MPI_COMM_WORLD's first commit (BOOTSTRAP) brings the channel to
 * every rank on another node up, and gdr's progress guard on (gdr_progress.c); gdr keeps
 * no other per-communicator state. */
#include "gdr_internal.h"
#include "gdr_noinline.h"

int MPIDI_GDR_mpi_comm_commit_pre_hook(MPIR_Comm * comm)
{
    int mpi_errno = MPI_SUCCESS;
    if (!(comm->attr & MPIR_COMM_ATTR__BOOTSTRAP))
        return MPI_SUCCESS;
    /* gdr_pre.h sets MPID_SESSION_USE_WORLD: the world is the only comm to bootstrap */
    MPIR_ERR_CHKANDJUMP1(comm != MPIR_Process.comm_world, mpi_errno, MPI_ERR_OTHER,
                         "**gdr_bootstrap", "**gdr_bootstrap %d", comm->local_size);
    mpi_errno = MPIDI_GDR_am_start();
    MPIR_ERR_CHECK(mpi_errno);
    MPIDI_GDR_rma_engine_start();
    MPIDI_GDR_staged_start();
    mpi_errno = MPIDI_GDR_progress_guard_start();
    MPIR_ERR_CHECK(mpi_errno);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_GDR_mpi_comm_commit_post_hook(MPIR_Comm * comm)
{
    return MPI_SUCCESS;
}

int MPIDI_GDR_mpi_comm_free_hook(MPIR_Comm * comm)
{
    return MPI_SUCCESS;
}

int MPIDI_GDR_comm_set_hints(MPIR_Comm * comm, MPIR_Info * info)
{
    return MPI_SUCCESS;
}

/* VCIs.  gdr has one channel, polled from whatever VCI progresses; messages carry
 * their VCIs (gdr_am.c), so reserved VCIs (MPIX_Stream, MPIR_CVAR_CH4_RESERVE_VCIS)
 * get their own MPIDIG queues.  The channel delivers a message for any VCI from any
 * VCI's progress, which is safe only while one thread calls MPI: with
 * MPI_THREAD_MULTIPLE no VCI is reserved (MPIX_Stream_create then reports MPICH's
 * "out of streams").  More than one implicit VCI (MPIR_CVAR_CH4_NUM_VCIS > 1) fails
 * MPI_Init with a message naming the CVAR. */
int MPIDI_GDR_comm_set_vcis(MPIR_Comm * comm, int num_implicit, int num_reserved,
                            MPIDI_num_vci_t * all_num_vcis)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_CHKANDJUMP1(num_implicit > 1, mpi_errno, MPI_ERR_OTHER, "**gdr_vcis",
                         "**gdr_vcis %d", num_implicit);
    int total = MPIDI_GDR_total_vcis(num_reserved);
    /* the world's counts came with the business cards (gdr_am.c): no messages, so no
     * connections before the program's own */
    if (comm == MPIR_Process.comm_world && MPIDI_GDR_global.world_vcis != NULL
        && MPIDI_GDR_global.world_vcis[comm->rank] == total) {
        for (int i = 0; i < comm->local_size; i++) {
            all_num_vcis[i].n_vcis = 1;
            all_num_vcis[i].n_total_vcis = MPIDI_GDR_global.world_vcis[i];
        }
        return MPI_SUCCESS;
    }
    all_num_vcis[comm->rank].n_vcis = 1;
    all_num_vcis[comm->rank].n_total_vcis = total;
    mpi_errno = MPIR_Allgather_fallback(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all_num_vcis,
                                        sizeof(MPIDI_num_vci_t), MPIR_BYTE_INTERNAL, comm,
                                        MPIR_COLL_ATTR_SYNC);
    MPIR_ERR_CHECK(mpi_errno);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
