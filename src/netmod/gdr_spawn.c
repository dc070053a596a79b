/* Process identities and dynamic processes.  gdr reaches the ranks of its own job
 * only (MPI_COMM_WORLD's channel): a process's upid is its world rank.  Intercommunicators
 * between groups of the job work (the leaders exchange through the peer communicator);
 * MPI_Comm_spawn and connect/accept need a connection to a process outside the job,
 * which the verbs channel cannot make yet: said so. */
#include "gdr_internal.h"
#include "gdr_noinline.h"

static int not_supported(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET(mpi_errno, MPI_ERR_SPAWN, "**gdr_nm_notsupported");
    return mpi_errno;
}

int MPIDI_GDR_dynamic_send(MPIR_Lpid remote_lpid, int tag, const void *buf, int size,
                           int timeout)
{
    return not_supported();
}

int MPIDI_GDR_dynamic_recv(int tag, void *buf, int size, int timeout)
{
    return not_supported();
}

/* The leaders of MPI_Intercomm_create exchange their groups through peer_comm, whose
 * ranks are all in the world: a plain send-receive there.
 *
 * MPICH calls this holding VCI 0's lock (ch4_comm.c's leader_exchange, which also keeps
 * the exchange's static world table to itself).  ucx and ofi drive their own transport
 * under it; a send-receive through MPICH takes that lock again in the receive
 * (gdr_pt2pt.h) and in every progress pass of its wait, and the lock is not recursive:
 * under MPI_THREAD_MULTIPLE (errorcheck mutexes) "pthread_mutex_lock: Resource deadlock
 * avoided" (issue 72).  So the lock is left for the send-receive, as MPICH's own
 * MPIDI_progress_test_vci leaves it around a progress pass; leader_exchange only uses
 * its world table before this call. */
int MPIDI_GDR_dynamic_sendrecv(MPIR_Lpid remote_lpid, MPIR_Comm * peer_comm, int tag,
                               const void *send_buf, int send_size, void *recv_buf,
                               int recv_size, int timeout)
{
    int mpi_errno = MPI_SUCCESS, peer = -1;
    if (remote_lpid & MPIR_LPID_DYNAMIC_MASK)
        return not_supported();
    for (int r = 0; r < peer_comm->remote_size; r++) {
        if (MPIR_comm_rank_to_lpid(peer_comm, r) == remote_lpid) {
            peer = r;
            break;
        }
    }
    if (peer < 0)
        return not_supported();
#ifdef MPICH_DEBUG_MUTEX
    MPID_THREAD_ASSERT_IN_CS(VCI, MPIDI_VCI_LOCK(0));
#endif
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(0));
    mpi_errno = MPIC_Sendrecv(send_buf, send_size, MPIR_BYTE_INTERNAL, peer, tag, recv_buf,
                              recv_size, MPIR_BYTE_INTERNAL, peer, tag, peer_comm,
                              MPI_STATUS_IGNORE, MPIR_COLL_ATTR_SYNC);
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(0));
    MPIR_ERR_CHECK(mpi_errno);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_GDR_get_local_upids(MPIR_Comm * comm, int **local_upid_size, char **local_upids)
{
    int mpi_errno = MPI_SUCCESS, n = comm->local_size;
    int *sizes = MPL_malloc(n * sizeof(int), MPL_MEM_ADDRESS);
    int32_t *ids = MPL_malloc(n * sizeof(int32_t), MPL_MEM_ADDRESS);
    if (sizes == NULL || ids == NULL) {
        MPL_free(sizes);
        MPL_free(ids);
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s", "gdr upids");
    }
    for (int i = 0; i < n; i++) {
        MPIR_Lpid lpid = (comm->comm_kind == MPIR_COMM_KIND__INTERCOMM) ?
            MPIR_Group_rank_to_lpid(comm->local_group, i) : MPIR_comm_rank_to_lpid(comm, i);
        sizes[i] = (int) sizeof(int32_t);
        ids[i] = MPIR_LPID_WORLD_INDEX(lpid) == 0 ? (int32_t) MPIR_LPID_WORLD_RANK(lpid) : -1;
    }
    *local_upid_size = sizes;
    *local_upids = (char *) ids;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A world process is reached through the world's channel already; a process of
 * another world would need a new connection. */
int MPIDI_GDR_insert_upid(MPIR_Lpid lpid, const char *upid, int upid_len)
{
    if ((lpid & MPIR_LPID_DYNAMIC_MASK) || MPIR_LPID_WORLD_INDEX(lpid) != 0)
        return not_supported();
    return MPI_SUCCESS;
}
