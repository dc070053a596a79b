/* Communicator hooks: gdr keeps no per-communicator state yet. */
#include "gdr_impl.h"
#include "gdr_noinline.h"

int MPIDI_GDR_mpi_comm_commit_pre_hook(MPIR_Comm * comm)
{
    return MPI_SUCCESS;
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
