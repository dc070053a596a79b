/* Process identities and dynamic processes (MPI_Comm_spawn, MPI_Comm_connect/accept,
 * MPI_Comm_join).  A process's upid is its channel card (gdr_verbs_card.h): its address,
 * its rank, and its job's identity.  A process of another job becomes a peer of the
 * channel when MPICH inserts its upid, or when its first handshake datagram arrives,
 * numbered past the job's own ranks; the lpids MPICH gives such processes map to those
 * peers (gdr_peers.c), and queue pairs are made on first use, as between the job's own
 * ranks.
 *
 * Before an intercommunicator exists, the roots of connect/accept exchange their cards and
 * groups by dynamic messages: eager messages of the channel under a handler number MPIDIG
 * never uses (MPIDI_GDR_DYNPROC_HANDLER), in pieces when large, kept in arrival order
 * (gdr_dynmsg.c) until a dynamic receive takes them by tag (and by source, for the
 * exchange of groups). */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "verbs/gdr_verbs_card.h"

static int spawn_error(int errclass, const char *what)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, errclass, "**gdr_dynproc", "**gdr_dynproc %s", what);
    return mpi_errno;
}

/* Processes of other jobs are reached through the channel only. */
static int need_channel(void)
{
    if (MPIDI_GDR_global.am != NULL)
        return MPI_SUCCESS;
    char what[512];
    snprintf(what, sizeof(what), "processes of other jobs are reached through an RDMA device, "
             "and this process has no channel on one (%s; MPIR_CVAR_CH4_GDR_VERBOSE=1 says "
             "which device gdr tried)", MPIDI_GDR_global.no_channel_why[0] ?
             MPIDI_GDR_global.no_channel_why : "none was made");
    return spawn_error(MPI_ERR_SPAWN, what);
}

/* ---- upids ------------------------------------------------------------------------------- */

/* The card of world rank r, with this job's identity (published before it was set). */
static int world_card(int r, void *out)
{
    gdr_verbs_card_t c;
    const uint8_t *b = MPIDI_GDR_global.world_cards;
    if (b == NULL || gdr_verbs_card_decode(b + (size_t) r * MPIDI_GDR_global.world_card_stride,
                                           GDR_VERBS_CARD_BYTES, (uint32_t) MPIR_Process.size,
                                           &c) != 0)
        return -1;
    c.job = MPIDI_GDR_global.job;
    gdr_verbs_card_encode(&c, out);
    return 0;
}

int MPIDI_GDR_get_local_upids(MPIR_Comm * comm, int **local_upid_size, char **local_upids)
{
    int mpi_errno = MPI_SUCCESS, n = comm->local_size;
    int *sizes = MPL_malloc(n * sizeof(int), MPL_MEM_ADDRESS);
    char *upids = MPL_calloc(n, GDR_VERBS_CARD_BYTES, MPL_MEM_ADDRESS);
    if (sizes == NULL || upids == NULL) {
        MPL_free(sizes);
        MPL_free(upids);
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s", "gdr upids");
    }
    uint64_t job = MPIDI_GDR_global.am == NULL ? MPIDI_GDR_job_id() : 0;
    for (int i = 0; i < n; i++) {
        MPIR_Lpid lpid = (comm->comm_kind == MPIR_COMM_KIND__INTERCOMM) ?
            MPIR_Group_rank_to_lpid(comm->local_group, i) : MPIR_comm_rank_to_lpid(comm, i);
        char *out = upids + (size_t) i * GDR_VERBS_CARD_BYTES;
        int ok;
        sizes[i] = GDR_VERBS_CARD_BYTES;
        if (!(lpid & MPIR_LPID_DYNAMIC_MASK) && MPIR_LPID_WORLD_INDEX(lpid) == 0)
            ok = world_card((int) MPIR_LPID_WORLD_RANK(lpid), out) == 0;
        else
            ok = MPIDI_GDR_global.am != NULL
                && gdr_verbs_am_peer_card(MPIDI_GDR_global.am, MPIDI_GDR_foreign_peer(lpid),
                                          out) == 0;
        if (!ok && MPIDI_GDR_global.am == NULL) {
            /* no channel anywhere here (no device, or a one-node job without one): the upid
             * names the world rank only; good for groups of this job, which is all such a
             * process can reach (MPIDI_GDR_insert_upid) */
            gdr_verbs_card_t c = {.nranks = (uint32_t) MPIR_Process.size,
                .rank = (uint32_t) MPIR_LPID_WORLD_RANK(lpid),.job = job
            };
            gdr_verbs_card_encode(&c, out);
            ok = MPIR_LPID_WORLD_INDEX(lpid) == 0 && !(lpid & MPIR_LPID_DYNAMIC_MASK);
        }
        if (!ok) {
            MPL_free(sizes);
            MPL_free(upids);
            char what[200];
            snprintf(what, sizeof(what), "process %d of the group has no RDMA channel, so "
                     "processes of other jobs cannot reach it", i);
            mpi_errno = spawn_error(MPI_ERR_SPAWN, what);
            goto fn_fail;
        }
    }
    *local_upid_size = sizes;
    *local_upids = upids;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* MPICH names a process of another group by lpid: one of this job (world 0) is a world
 * rank already; another job's becomes a peer of the channel, found again by its lpid. */
int MPIDI_GDR_insert_upid(MPIR_Lpid lpid, const char *upid, int upid_len)
{
    int mpi_errno = MPI_SUCCESS;
    if (!(lpid & MPIR_LPID_DYNAMIC_MASK) && MPIR_LPID_WORLD_INDEX(lpid) == 0)
        return MPI_SUCCESS;
    /* a new world's address table is made here (CH4 reads it directly from then on: every
     * send looks at its entry's locality, 0 for other worlds) */
    (void) MPIDIU_lpid_to_av_slow(lpid);
    mpi_errno = need_channel();
    MPIR_ERR_CHECK(mpi_errno);
    int peer = gdr_verbs_am_add_foreign(MPIDI_GDR_global.am, upid, (size_t) upid_len);
    if (peer < 0) {
        mpi_errno = spawn_error(MPI_ERR_SPAWN, gdr_verbs_am_error(MPIDI_GDR_global.am));
        goto fn_fail;
    }
    mpi_errno = MPIDI_GDR_foreign_peer_put(lpid, peer);
    MPIR_ERR_CHKANDJUMP1(mpi_errno != MPI_SUCCESS, mpi_errno, MPI_ERR_NO_MEM, "**nomem",
                         "**nomem %s", "gdr lpid map");
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* ---- dynamic messages -------------------------------------------------------------------- */

/* Waiting, under VCI 0's lock (MPICH holds it around these calls): one progress poll of
 * the channel, and whether the timeout (seconds; 0: none) passed since start. */
static int wait_step(MPL_time_t * start, int timeout, const char *what)
{
    int progressed = 0;
    int mpi_errno = MPIDI_GDR_progress_am(&progressed);
    if (mpi_errno != MPI_SUCCESS || timeout <= 0)
        return mpi_errno;
    MPL_time_t now;
    double secs;
    MPL_wtime(&now);
    MPL_wtime_diff(start, &now, &secs);
    if (secs <= (double) timeout)
        return MPI_SUCCESS;
    char msg[300];
    snprintf(msg, sizeof(msg), "%s: no answer within the %d-s timeout (the info key "
             "\"timeout\", or MPIR_CVAR_CH4_COMM_CONNECT_TIMEOUT for MPI_Comm_connect)", what,
             timeout);
    return spawn_error(MPIX_ERR_TIMEOUT, msg);
}

static int dyn_send(int peer, int tag, int context_id, const void *buf, size_t size, int timeout)
{
    int mpi_errno = MPI_SUCCESS;
    gdr_verbs_iface_t *am = MPIDI_GDR_global.am;
    size_t piece = gdr_verbs_am_eager_limit(am, sizeof(MPIDI_GDR_dynmsg_hdr_t)), off = 0;
    if (size > MPIDI_GDR_DYNMSG_MAX)
        return spawn_error(MPI_ERR_OTHER, "a dynamic-process message too large");
    do {
        size_t len = size - off < piece ? size - off : piece;
        MPIDI_GDR_dynmsg_hdr_t h = {.tag = tag,.context_id = context_id,.size = (uint32_t) size,
            .offset = (uint32_t) off
        };
        if (gdr_verbs_am_send_eager(am, peer, MPIDI_GDR_DYNPROC_HANDLER, &h, sizeof(h),
                                    (const char *) buf + off, len) != 0)
            return spawn_error(MPI_ERR_PORT, gdr_verbs_am_error(am));
        off += len;
    } while (off < size);
    /* sent once the queue pair is up (the messages wait for it): a port whose process is
     * gone fails here, by the connection's timeout or the caller's */
    MPL_time_t start;
    MPL_wtime(&start);
    for (;;) {
        int r = gdr_verbs_am_connect_peer(am, peer);
        if (r < 0)
            return spawn_error(MPI_ERR_PORT, gdr_verbs_am_error(am));
        if (r > 0)
            break;
        mpi_errno = wait_step(&start, timeout, "connecting to the port's process");
        if (mpi_errno != MPI_SUCCESS)
            return mpi_errno;
    }
    return MPI_SUCCESS;
}

static int dyn_recv(int src, int tag, int context_id, void *buf, size_t size, int timeout)
{
    int mpi_errno = MPI_SUCCESS;
    struct MPIDI_GDR_dynmsg *m;
    MPL_time_t start;
    MPL_wtime(&start);
    while ((m = MPIDI_GDR_dynmsg_take(src, tag, context_id)) == NULL) {
        mpi_errno = wait_step(&start, timeout, "waiting for the other side of connect/accept");
        if (mpi_errno != MPI_SUCCESS)
            return mpi_errno;
    }
    if (m->size > size) {
        MPL_free(m);
        return spawn_error(MPI_ERR_TRUNCATE, "a dynamic-process message larger than its receive");
    }
    memcpy(buf, m->data, m->size);
    MPL_free(m);
    return MPI_SUCCESS;
}

static int dyn_peer(MPIR_Lpid lpid, int *peer)
{
    int mpi_errno = need_channel();
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    *peer = MPIDI_GDR_foreign_peer(lpid);
    if (*peer < 0)
        return spawn_error(MPI_ERR_INTERN, "a dynamic process whose address was never given");
    return MPI_SUCCESS;
}

int MPIDI_GDR_dynamic_send(MPIR_Lpid remote_lpid, int tag, const void *buf, int size,
                           int timeout)
{
    int peer, mpi_errno = dyn_peer(remote_lpid, &peer);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = dyn_send(peer, tag, 0, buf, (size_t) size, timeout);
    /* MPICH's establish_peer_conn (ch4_spawn.c) keeps the dynamic address it made for the
     * port's process when this fails, and MPI_Finalize asserts that none is left: a failed
     * MPI_Comm_connect (no channel, the port's process gone) would abort the program at its
     * end.  The caller, holding VCI 0's lock, never uses the address after a failure. */
    if (mpi_errno != MPI_SUCCESS && (remote_lpid & MPIR_LPID_DYNAMIC_MASK))
        MPIDIU_free_dynamic_lpid(remote_lpid);
    return mpi_errno;
}

int MPIDI_GDR_dynamic_recv(int tag, void *buf, int size, int timeout)
{
    int mpi_errno = need_channel();
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = dyn_recv(-1, tag, 0, buf, (size_t) size, timeout);
    return mpi_errno;
}

/* The leaders of MPI_Intercomm_create exchange their groups.  Through connect/accept (a
 * dynamic lpid, peer_comm a stand-in without a context): dynamic messages, from the
 * leader's peer only.  Through a real peer_comm: a plain send-receive there.
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
    if (remote_lpid & MPIR_LPID_DYNAMIC_MASK) {
        mpi_errno = dyn_peer(remote_lpid, &peer);
        if (mpi_errno == MPI_SUCCESS && send_size > 0)
            mpi_errno = dyn_send(peer, tag, peer_comm->context_id, send_buf, (size_t) send_size,
                                 timeout);
        if (mpi_errno == MPI_SUCCESS && recv_size > 0)
            mpi_errno = dyn_recv(peer, tag, peer_comm->recvcontext_id, recv_buf,
                                 (size_t) recv_size, timeout);
        return mpi_errno;
    }
    for (int r = 0; r < peer_comm->remote_size; r++) {
        if (MPIR_comm_rank_to_lpid(peer_comm, r) == remote_lpid) {
            peer = r;
            break;
        }
    }
    if (peer < 0)
        return spawn_error(MPI_ERR_INTERN, "the remote leader is not in the peer communicator");
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
