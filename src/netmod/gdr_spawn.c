/* Dynamic processes need a connection to a process outside the job, which needs
 * the verbs transport: not supported yet, and said so. */
#include "gdr_impl.h"
#include "gdr_noinline.h"

static int not_supported(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET(mpi_errno, MPI_ERR_SPAWN, "**gdr_nm_notsupported");
    return mpi_errno;
}

int MPIDI_GDR_dynamic_send(uint64_t remote_gpid, int tag, const void *buf, int size, int timeout)
{
    return not_supported();
}

int MPIDI_GDR_dynamic_recv(int tag, void *buf, int size, int timeout)
{
    return not_supported();
}

int MPIDI_GDR_get_local_upids(MPIR_Comm * comm, int **local_upid_size, char **local_upids)
{
    return not_supported();
}

int MPIDI_GDR_upids_to_gpids(int size, int *remote_upid_size, char *remote_upids,
                             uint64_t * remote_gpids)
{
    return not_supported();
}
