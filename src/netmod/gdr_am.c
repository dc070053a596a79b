/* Active messages over the verbs channel: MPIDIG's sends in, MPIDIG's handlers out.
 * Eager sends are copied before return, so the origin callback runs at once;
 * larger payloads are read by the target (rendezvous) and complete at its FIN. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include <sched.h>
#include "verbs/gdr_verbs_card.h"
#include "gpu/gdr_gpu_stream.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH4_GDR_YIELD_AFTER
      category    : CH4_GDR
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        If positive, a rank calls sched_yield() after this many consecutive
        progress polls that found no network completion (like Open MPI's
        mpi_yield_when_idle).  For oversubscribed nodes and the Soft-RoCE test
        machine; 0 (the default) spins.

    - name        : MPIR_CVAR_CH4_GDR_IDLE_SLEEP_US
      category    : CH4_GDR
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        If positive, where MPIR_CVAR_CH4_GDR_YIELD_AFTER would yield (after at
        least one empty poll), the rank instead sleeps in the kernel until a
        network completion arrives or this many microseconds pass.  For three or
        more ranks per core (MPICH's rma/large_acc_flush_local, 3 ranks on one
        vCPU: twice as fast); with two, yielding hands the core straight to the
        peer and is faster (rma/rma_contig: 13 s yielding, 20 s sleeping).  Events that
        do not come from the network (shared memory from ranks of the same node,
        progress hooks) wait up to this long.  0 (the default) never sleeps.

    - name        : MPIR_CVAR_CH4_GDR_RMA_DEPTH
      category    : CH4_GDR
      type        : int
      default     : 64
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        One-sided work requests (RDMA writes, reads, atomics) in flight per
        remote rank.  More outstanding operations wait inside the MPI call
        until earlier ones complete.

    - name        : MPIR_CVAR_CH4_GDR_RMA_CHUNK
      category    : CH4_GDR
      type        : int
      default     : 262144
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Largest RDMA write or read work request of a contiguous Put or Get, in
        bytes; a larger operation is posted as several, each signalled.  The
        default, 256 KiB, keeps a long Put from leaving so many packets
        unacknowledged that a lost ACK costs a retransmission timer (measured
        by bench/large-put on Soft-RoCE: 1.7x the bandwidth of one work request
        at 1 MiB).  0: the device's largest message, so one work request.  An
        operation that would need more than MPIR_CVAR_CH4_GDR_RMA_DEPTH work
        requests takes larger ones.

    - name        : MPIR_CVAR_CH4_GDR_RMA_SHORT_MAX
      category    : CH4_GDR
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Largest contiguous Put, in bytes, whose data goes inside the RDMA
        write's work request (protocol put/rc/short: no copy for the NIC to
        read, the origin buffer free at once).  -1: the inline limit the
        queue pairs were granted (gdr asks for 128 bytes; Soft-RoCE grants
        256); 0: none, such Puts take put/rc/bcopy.

    - name        : MPIR_CVAR_CH4_GDR_RMA_BCOPY_MAX
      category    : CH4_GDR
      type        : int
      default     : 8192
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Largest contiguous Put or Get, in bytes, copied through a registered
        bounce buffer (protocols put/rc/bcopy and get/rc/bcopy: one host copy,
        the origin buffer free at once); larger ones move zero-copy from or
        into the user's buffer, registered through the cache (rc/zcopy).  The
        default is UCX's RC bcopy threshold; 128 bounce buffers of this size
        are pinned per process.  At least 64.

    - name        : MPIR_CVAR_CH4_GDR_DOORBELL_BATCH
      category    : CH4_GDR
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Small one-sided work requests (writes and reads of up to 8 KiB,
        atomics) held back so that those that follow to the same rank share
        one doorbell (one ibv_post_send: on Soft-RoCE a system call, on a NIC
        an MMIO write), up to this many; they leave at the next larger
        operation, a synchronisation, a wait, or any progress of this rank.
        Lock+Put+unlock and lock+Get+unlock then ring twice (the acquire; the
        Put or Get and the release), a fence's Put goes with its barrier
        write.  0: every operation rings at once, which
        also moves a Put before the next MPI call when a rank computes after
        it without calling MPI.  -1 (the default): 16 where a doorbell is a
        system call (the software providers rxe and siw), 0 on NICs, whose
        doorbell is one MMIO store: there a Put reaches the NIC before its
        call returns, and a burst posted in one call (an accumulate's
        atomics, a datatype's pieces) still shares one doorbell.

    - name        : MPIR_CVAR_CH4_GDR_QP_TIMEOUT
      category    : CH4_GDR
      type        : int
      default     : 18
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Retransmission timer of the RC queue pairs, as the InfiniBand exponent
        (4.096 us * 2^N, 1..31; 18 is about 1 s).  After 6 silent timers the
        connection to that rank fails.  Lower it to notice dead peers sooner;
        raise it if connections fail on heavily oversubscribed hosts.

    - name        : MPIR_CVAR_CH4_GDR_REG_CACHE
      category    : CH4_GDR
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Keep registrations of user buffers (rendezvous sends, large Put
        origins, Get results) for reuse.  gdr drops one whenever the pages
        under it can change through the C library (free, munmap, mmap, mremap,
        madvise, shmat/shmdt, brk) and tells device allocations apart by CUDA
        buffer id.  Set it to false (each transfer registers and deregisters
        its buffer) when a program or a library it uses changes memory by
        direct system calls that gdr cannot see.

    - name        : MPIR_CVAR_CH4_GDR_RNDV_ZCOPY_MIN
      category    : CH4_GDR
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        A rendezvous message (larger than the 16-KiB eager buffer) of at least
        this many bytes whose receive is matched is read with RDMA READ
        straight into the receive buffer when that buffer is contiguous or in
        at most 8 pieces, host memory or device memory the NIC registers
        (GPUDirect dmabuf or peermem); other payloads land in gdr's buffers
        and are copied (MPI_T gdr_am_rndv_zcopy_bytes, gdr_am_rndv_copied_bytes).
        0 (the default): every such payload.  -1: none (every payload lands
        and is copied, as before gdr read into receive buffers).

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define GDR_AM_REQ(req) ((req)->dev.ch4.am.netmod_am.gdr)

/* The channel's 32-bit handler word: MPIDIG's handler and both VCIs, 8 bits each
 * (MPIDI_AM_HANDLERS_MAX and MPIDI_CH4_MAX_VCIS are at most 256). */
#define GDR_AM_WORD(handler, src_vci, dst_vci) \
    ((uint32_t) (handler) | ((uint32_t) (src_vci) << 8) | ((uint32_t) (dst_vci) << 16))
#define GDR_AM_WORD_HANDLER(w) ((int) ((w) & 0xff))
#define GDR_AM_WORD_SRC_VCI(w) ((int) (((w) >> 8) & 0xff))
#define GDR_AM_WORD_DST_VCI(w) ((int) (((w) >> 16) & 0xff))
_Static_assert(MPIDI_AM_HANDLERS_MAX <= MPIDI_GDR_PIPE_HANDLER
               && MPIDI_GDR_PIPE_HANDLER < MPIDI_GDR_DYNPROC_HANDLER && MPIDI_CH4_MAX_VCIS <= 256,
               "gdr's AM word holds the handler and the VCIs in 8 bits each, and the "
               "fragments' and dynamic-process messages' handlers are none of MPIDIG's");

/* The channel's peer for rank of comm: its world rank, or, for a process of another job
 * (spawned, connected), the peer its upid was given (gdr_spawn.c). */
static int peer_of(MPIR_Comm * comm, int rank, int *peer)
{
    int mpi_errno = MPI_SUCCESS;
    int p = MPIDIU_get_grank(rank, comm);       /* -1: not in MPI_COMM_WORLD */

    if (p < 0)
        p = MPIDI_GDR_foreign_peer(MPIR_comm_rank_to_lpid(comm, rank));
    MPIR_ERR_CHKANDJUMP1(p < 0 || MPIDI_GDR_global.am == NULL, mpi_errno,
                         MPI_ERR_OTHER, "**gdr_no_transport", "**gdr_no_transport %d", rank);
    *peer = p;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Work requests one doorbell may wait for (MPIR_CVAR_CH4_GDR_DOORBELL_BATCH): holding
 * saves a system call per operation on Soft-RoCE, and on a NIC only delays the Put (an
 * MMIO doorbell costs about what holding does), so by default only software providers
 * hold. */
static uint32_t doorbell_hold(const gdr_verbs_device_t *dev)
{
    if (MPIR_CVAR_CH4_GDR_DOORBELL_BATCH >= 0)
        return (uint32_t) MPIR_CVAR_CH4_GDR_DOORBELL_BATCH;
    return gdr_verbs_device_doorbell_is_syscall(dev) ? 16u : 0u;
}

MPI_Aint MPIDI_GDR_am_eager_payload_limit(void)
{
    return MPIDI_GDR_AM_EAGER_BUF_SZ - MPIDI_GDR_AM_WIRE_HDR_SZ;
}

int MPIDI_GDR_transport_error(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                  gdr_verbs_am_error(MPIDI_GDR_global.am));
    return mpi_errno;
}

static int origin_done(MPIR_Request * sreq)
{
    MPL_free(GDR_AM_REQ(sreq).pack_buf);
    GDR_AM_REQ(sreq).pack_buf = NULL;
    return MPIDIG_global.origin_cbs[GDR_AM_REQ(sreq).handler_id] (sreq);
}

/* Moves n bytes between host and device memory with gdr's GPU copy (never MPICH's, which
 * cannot see the simulated GPU and would treat its memory as host memory). */
static int gpu_copy(void *dst, const void *src, size_t n, const char *what)
{
    int mpi_errno = MPI_SUCCESS;
    if (n > 0 && gdr_gpu_copy(&MPIDI_GDR_global.gpu, dst, src, n) != 0)
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**gdr_msg_gpu", "**gdr_msg_gpu %s %s", what,
                      MPIDI_GDR_global.gpu.error);
    return mpi_errno;
}

/* Packs count x datatype from device memory into host buf (data_sz bytes). */
static int pack_device(const void *data, MPI_Aint count, MPI_Datatype datatype, int dt_contig,
                       MPI_Aint dt_true_lb, void *buf, MPI_Aint data_sz)
{
    int mpi_errno = MPI_SUCCESS;
    if (dt_contig)
        return gpu_copy(buf, MPIR_get_contig_ptr(data, dt_true_lb), (size_t) data_sz,
                        "a message from");
    if (MPIDI_GDR_msg_device_copy((void *) data, count, datatype, buf, (size_t) data_sz, 1)
        != 0)
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**gdr_msg_gpu", "**gdr_msg_gpu %s %s",
                      "a message from", MPIDI_GDR_global.gpu.error);
    return mpi_errno;
}

/* An eager message whose contiguous data_sz bytes of device data gdr's GPU copy writes
 * straight into a send slot of the channel (*sent 1); *sent 0: no slot or credit is free
 * now (the caller copies into a host buffer and the channel queues it). */
static int send_device_eager(int peer, int handler_id, int src_vci, int dst_vci,
                             const void *am_hdr, MPI_Aint am_hdr_sz, const void *data,
                             MPI_Aint data_sz, int *sent)
{
    gdr_verbs_iface_t *am = MPIDI_GDR_global.am;
    void *h = gdr_verbs_am_eager_reserve(am, peer, GDR_AM_WORD(handler_id, src_vci, dst_vci),
                                         (size_t) am_hdr_sz, (size_t) data_sz);
    *sent = 0;
    if (h == NULL)
        return MPI_SUCCESS;
    memcpy(h, am_hdr, (size_t) am_hdr_sz);
    int mpi_errno = gpu_copy(gdr_verbs_am_eager_data(am), data, (size_t) data_sz,
                             "a message from");
    if (mpi_errno != MPI_SUCCESS) {
        gdr_verbs_am_eager_unreserve(am);
        return mpi_errno;
    }
    if (gdr_verbs_am_eager_post_filled(am, (size_t) data_sz) != 0)
        return MPIDI_GDR_transport_error();
    MPIDI_GDR_global.am_device_copied_bytes += (unsigned long long) data_sz;
    *sent = 1;
    return MPI_SUCCESS;
}

int MPIDI_GDR_am_send(int rank, MPIR_Comm * comm, int handler_id, const void *am_hdr,
                      MPI_Aint am_hdr_sz, const void *data, MPI_Aint count,
                      MPI_Datatype datatype, int src_vci, int dst_vci, MPIR_Request * sreq)
{
    int mpi_errno = MPI_SUCCESS, peer, dt_contig, rc;
    MPI_Aint data_sz = 0, dt_true_lb = 0;
    MPIR_Datatype *dt_ptr;
    const void *payload = NULL;
    void *pack_buf = NULL;
    uint64_t device_id = 0;

    mpi_errno = peer_of(comm, rank, &peer);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP2(am_hdr_sz > MPIDI_GDR_AM_HDR_MAX_SZ, mpi_errno, MPI_ERR_OTHER,
                         "**gdr_am_hdr", "**gdr_am_hdr %d %d", (int) am_hdr_sz,
                         (int) MPIDI_GDR_AM_HDR_MAX_SZ);
    size_t eager_max = gdr_verbs_am_eager_limit(MPIDI_GDR_global.am, (size_t) am_hdr_sz);

    if (sreq != NULL) {
        MPIDI_Datatype_get_info(count, datatype, dt_contig, data_sz, dt_ptr, dt_true_lb);
        if (data_sz > 0) {
            /* gdr's own query: MPICH's cannot see the simulated GPU */
            const void *first = MPIR_get_contig_ptr(data, dt_true_lb);
            if (MPIDI_GDR_global.gpu.on || MPIR_CVAR_ENABLE_GPU)
                device_id = MPIDI_GDR_gpu_buffer_id(first);
            /* contiguous device data that goes eagerly: gdr's GPU copy writes it straight
             * into the channel's send slot when one is free now */
            if (device_id != 0 && dt_contig && MPIDI_GDR_global.gpu.on
                && (size_t) data_sz <= eager_max) {
                int sent;
                mpi_errno = send_device_eager(peer, handler_id, src_vci, dst_vci, am_hdr,
                                              am_hdr_sz, first, data_sz, &sent);
                MPIR_ERR_CHECK(mpi_errno);
                if (sent) {
                    GDR_AM_REQ(sreq).handler_id = handler_id;
                    GDR_AM_REQ(sreq).pack_buf = NULL;
                    mpi_errno = origin_done(sreq);
                    MPIR_ERR_CHECK(mpi_errno);
                    goto fn_exit;
                }
            }
            /* contiguous device data of a rendezvous is read by the peer's NIC in place
             * where the NIC takes GPU memory (dmabuf, peermem: registered by buffer id) */
            int in_place = dt_contig && (device_id == 0 || (MPIDI_GDR_nic_takes_gpu_memory()
                                                            && (size_t) data_sz > eager_max));
            if (!in_place && device_id != 0 && MPIDI_GDR_global.gpu.on
                && handler_id == MPIDIG_SEND_DATA && (size_t) data_sz > eager_max) {
                /* the rest of a device message the NIC cannot read in place: in fragments
                 * through pinned chunks (its receive is matched) */
                GDR_AM_REQ(sreq).handler_id = handler_id;
                GDR_AM_REQ(sreq).pack_buf = NULL;
                mpi_errno = MPIDI_GDR_pipe_send(peer, GDR_AM_WORD(MPIDI_GDR_PIPE_HANDLER,
                                                                  src_vci, dst_vci),
                                                am_hdr, data, count, datatype, data_sz, sreq);
                MPIR_ERR_CHECK(mpi_errno);
                goto fn_exit;
            }
            if (in_place) {
                payload = first;
            } else {
                /* the NIC reads host memory here: device data copied by gdr's GPU copy
                 * (eager data, and the payloads of MPIDIG's other handlers: an accumulate's
                 * or a Put's, delivered whole), host data packed; with gdr's GPU layer
                 * off, MPICH packs device memory it knows itself */
                pack_buf = MPL_malloc(data_sz, MPL_MEM_BUFFER);
                MPIR_ERR_CHKANDJUMP1(pack_buf == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem",
                                     "**nomem %s", "gdr AM pack buffer");
                if (device_id != 0 && MPIDI_GDR_global.gpu.on) {
                    mpi_errno = pack_device(data, count, datatype, dt_contig, dt_true_lb,
                                            pack_buf, data_sz);
                    MPIR_ERR_CHECK(mpi_errno);
                    MPIDI_GDR_global.am_device_copied_bytes += (unsigned long long) data_sz;
                } else {
                    MPI_Aint packed;
                    mpi_errno = MPIR_Typerep_pack(data, count, datatype, 0, pack_buf, data_sz,
                                                  &packed, MPIR_TYPEREP_FLAG_NONE);
                    MPIR_ERR_CHECK(mpi_errno);
                    MPIR_Assert(packed == data_sz);
                }
                device_id = 0;
                payload = pack_buf;
                MPIDI_GDR_global.am_packed_bytes += (unsigned long long) data_sz;
            }
        }
        GDR_AM_REQ(sreq).handler_id = handler_id;
        GDR_AM_REQ(sreq).pack_buf = pack_buf;
    }

    uint32_t word = GDR_AM_WORD(handler_id, src_vci, dst_vci);
    if ((size_t) data_sz <= eager_max) {
        rc = gdr_verbs_am_send_eager(MPIDI_GDR_global.am, peer, word, am_hdr,
                                     (size_t) am_hdr_sz, payload, (size_t) data_sz);
        if (rc != 0)
            goto fn_transport;
        if (sreq != NULL) {
            mpi_errno = origin_done(sreq);      /* copied: the buffer is free again */
            MPIR_ERR_CHECK(mpi_errno);
        }
    } else {
        /* device memory the NIC reads in place is registered by its buffer id, so a
         * reallocated address never reuses a registration */
        rc = gdr_verbs_am_send_rndv(MPIDI_GDR_global.am, peer, word, am_hdr,
                                    (size_t) am_hdr_sz, payload, (size_t) data_sz, device_id,
                                    (uint64_t) (uintptr_t) sreq);
        if (rc != 0)
            goto fn_transport;
    }

  fn_exit:
    return mpi_errno;
  fn_transport:
    mpi_errno = MPIDI_GDR_transport_error();
  fn_fail:
    if (sreq != NULL && GDR_AM_REQ(sreq).pack_buf == pack_buf)
        GDR_AM_REQ(sreq).pack_buf = NULL;
    MPL_free(pack_buf);
    goto fn_exit;
}

/* What MPIDIG_isend_impl sends for an eager standard-mode message (no request: the
 * receiver answers only synchronous and rendezvous sends, which never come here). */
static inline void eager_hdr(MPIDIG_hdr_t * h, MPIR_Comm * comm, int tag, int attr,
                             MPI_Aint data_sz)
{
    h->src_rank = comm->rank;
    h->tag = tag;
    h->context_id = comm->context_id + MPIR_PT2PT_ATTR_CONTEXT_OFFSET(attr);
    h->error_bits = MPIR_PT2PT_ATTR_GET_ERRFLAG(attr);
    h->flags = MPIDIG_AM_SEND_FLAGS_NONE;
    h->sreq_ptr = NULL;
    h->data_sz = data_sz;
    h->rndv_hdr_sz = 0;
}

/* An immediate send that cannot go at once: the channel queues a copy, or says why it
 * cannot (out of line: the hot path keeps no header of its own on the stack). */
static __attribute__((noinline))
int send_eager_queued(int peer, uint32_t word, const void *buf, MPI_Aint data_sz,
                      MPIR_Comm * comm, int tag, int attr)
{
    MPIDIG_hdr_t h;
    eager_hdr(&h, comm, tag, attr, data_sz);
    return gdr_verbs_am_send_eager(MPIDI_GDR_global.am, peer, word, &h, sizeof(h), buf,
                                   (size_t) data_sz);
}

int MPIDI_GDR_send_eager(const void *buf, MPI_Aint count, MPI_Datatype datatype, int rank,
                         int tag, MPIR_Comm * comm, int attr, int src_vci, int dst_vci,
                         int *sent)
{
    /* every check is a fall back to MPIDIG's send, which says what is wrong, packs, or
     * reaches processes of other jobs (send_eager_max is -1 without a channel) */
    *sent = 0;
    if (!HANDLE_IS_BUILTIN(datatype) || count < 0)
        return MPI_SUCCESS;
    MPI_Aint data_sz = count * (MPI_Aint) MPIR_Datatype_get_basic_size(datatype);
    int peer = MPIDIU_get_grank(rank, comm);
    if (data_sz > MPIDI_GDR_global.send_eager_max || peer < 0
        || (data_sz > 0 && MPIDI_GDR_is_device(buf)))
        return MPI_SUCCESS;
    /* built where the channel sends it from */
    gdr_verbs_iface_t *am = MPIDI_GDR_global.am;
    uint32_t word = GDR_AM_WORD(MPIDIG_SEND, src_vci, dst_vci);
    MPIDIG_hdr_t *h = gdr_verbs_am_eager_reserve(am, peer, word, sizeof(*h), (size_t) data_sz);
    int rc;
    if (h != NULL) {
        eager_hdr(h, comm, tag, attr, data_sz);
        rc = gdr_verbs_am_eager_post(am, buf, (size_t) data_sz);
    } else {
        rc = send_eager_queued(peer, word, buf, data_sz, comm, tag, attr);
    }
    if (rc != 0)
        return MPIDI_GDR_transport_error();
    MPIDI_GDR_global.am_sends_immediate++;
    *sent = 1;                  /* copied (posted or queued in order): buf is free again */
    return MPI_SUCCESS;
}

static void am_error(int err)
{
    if (err != MPI_SUCCESS && MPIDI_GDR_global.am_errno == MPI_SUCCESS)
        MPIDI_GDR_global.am_errno = err;
}

/* A message's handler word from src names a VCI and handler this rank has: 1, else the
 * error is kept for the next progress call and 0. */
static int word_ok(int src, uint32_t word)
{
    int handler_id = GDR_AM_WORD_HANDLER(word), dst_vci = GDR_AM_WORD_DST_VCI(word);
    int mpi_errno = MPI_SUCCESS;
    if (dst_vci >= MPIDI_global.n_total_vcis) {
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_INTERN, "**gdr_bad_vci", "**gdr_bad_vci %d %d",
                      dst_vci, src);
    } else if (handler_id >= MPIDI_AM_HANDLERS_MAX
               || MPIDIG_global.target_msg_cbs[handler_id] == NULL) {
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_INTERN, "**gdr_bad_handler", "**gdr_bad_handler %d %d",
                      handler_id, src);
    }
    am_error(mpi_errno);
    return mpi_errno == MPI_SUCCESS;
}

/* MPIDIG_recv_copy of in (p->in_data_sz bytes) into a receive buffer in device memory,
 * with gdr's GPU copy; the same status (count, truncation, type mismatch). */
static int recv_copy_device(const void *in, MPIR_Request * rreq)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDIG_rreq_async_t *p = &MPIDIG_REQUEST(rreq, req->recv_async);
    MPI_Aint in_sz = p->in_data_sz, done = 0;

    if (p->recv_type == MPIDIG_RECV_DATATYPE) {
        int dt_contig;
        MPI_Aint room, dt_true_lb;
        MPIR_Datatype *dt_ptr;
        void *buf = MPIDIG_REQUEST(rreq, buffer);
        MPI_Aint count = MPIDIG_REQUEST(rreq, count);
        MPI_Datatype type = MPIDIG_REQUEST(rreq, datatype);
        MPIDI_Datatype_get_info(count, type, dt_contig, room, dt_ptr, dt_true_lb);
        /* (a truncation was reported by MPIDIG_recv_type_init) */
        MPI_Aint n = MPL_MIN(in_sz, room);
        if (dt_contig) {
            mpi_errno = gpu_copy(MPIR_get_contig_ptr(buf, dt_true_lb), in, (size_t) n,
                                 "a message into");
            done = n;
        } else {
            /* only the type's blocks written (its gaps are not the receive's to touch),
             * whole elements only, as MPICH's unpack writes them */
            MPI_Aint elem = HANDLE_IS_BUILTIN(type) ? MPIR_Datatype_get_basic_size(type)
                : dt_ptr->builtin_element_size;
            done = elem > 1 ? n - n % elem : n;
            if (MPIDI_GDR_msg_device_copy(buf, count, type, (char *) in, (size_t) done, 0) != 0)
                MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**gdr_msg_gpu", "**gdr_msg_gpu %s %s",
                              "a message into", MPIDI_GDR_global.gpu.error);
            if (mpi_errno == MPI_SUCCESS && !rreq->status.MPI_ERROR && n > done)
                rreq->status.MPI_ERROR =
                    MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                         MPI_ERR_TYPE, "**dtypemismatch", 0);
        }
    } else {
        struct iovec *iov = p->recv_type == MPIDIG_RECV_CONTIG ? &p->iov_one : p->iov_ptr;
        int iov_num = p->recv_type == MPIDIG_RECV_CONTIG ? 1 : p->iov_num;
        for (int i = 0; i < iov_num && done < in_sz && mpi_errno == MPI_SUCCESS; i++) {
            MPI_Aint len = MPL_MIN(in_sz - done, (MPI_Aint) iov[i].iov_len);
            mpi_errno = gpu_copy(iov[i].iov_base, (const char *) in + done, (size_t) len,
                                 "a message into");
            done += len;
        }
        if (done < in_sz)
            rreq->status.MPI_ERROR = MPIDIG_ERR_TRUNCATE(done, in_sz);
    }
    /* a copy from pageable memory may return before the device has the bytes (the real
     * driver): the receive completes once they are there */
    if (mpi_errno == MPI_SUCCESS && done > 0
        && gdr_gpu_stream_sync(&MPIDI_GDR_global.gpu, NULL) != 0)
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**gdr_msg_gpu", "**gdr_msg_gpu %s %s",
                      "a message into", MPIDI_GDR_global.gpu.error);
    if (mpi_errno != MPI_SUCCESS) {
        rreq->status.MPI_ERROR = mpi_errno;
        done = 0;
    }
    MPIR_STATUS_SET_COUNT(rreq->status, done);
    MPIDI_GDR_global.am_device_copied_bytes += (unsigned long long) done;
    return mpi_errno;
}

/* MPIDIG_recv_copy, except that a receive buffer in device memory is written by gdr's GPU
 * copy (MPICH's would write device memory it cannot see, the simulated GPU's, as host
 * memory).  With gdr's GPU layer off MPICH copies, into device memory it knows. */
static int recv_copy(const void *in, MPIR_Request * rreq)
{
    if (MPIDI_GDR_global.gpu.on && MPIDIG_REQUEST(rreq, req->recv_async).in_data_sz > 0
        && MPIDI_GDR_gpu_buffer_id(MPIDI_GDR_recv_first_byte(rreq)) != 0)
        return recv_copy_device(in, rreq);
    MPIDIG_recv_copy((void *) in, rreq);
    return MPI_SUCCESS;
}

/* MPIDIG's callback for an unexpected message that deliver_to_recv kept, once a receive
 * matched it (MPIDIG_recv_type_init has set the receive buffer): its payload is copied
 * there and the receive completes. */
int MPIDI_GDR_unexp_data_copy(MPIR_Request * rreq)
{
    void *kept = GDR_AM_REQ(rreq).pack_buf;
    int mpi_errno = MPI_SUCCESS;
    GDR_AM_REQ(rreq).pack_buf = NULL;
    if (kept != NULL) {
        mpi_errno = recv_copy(kept, rreq);
        MPL_free(kept);
    } else {
        /* its copy could not be made when it arrived (that error was reported then) */
        MPIR_ERR_SET1(rreq->status.MPI_ERROR, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                      "gdr copy of an unexpected message");
        MPIR_STATUS_SET_COUNT(rreq->status, 0);
    }
    int err = MPIDIG_REQUEST(rreq, req->target_cmpl_cb) (rreq);
    return mpi_errno != MPI_SUCCESS ? mpi_errno : err;
}

/* A message whose payload is for a receive buffer (MPIDIG_SEND's eager data, MPIDIG_SEND_DATA
 * delivered whole), while gdr's GPU layer is on: the buffer may be device memory that only
 * gdr's copy may write.  MPIDIG takes it as the transport's own rendezvous (IS_ASYNC |
 * IS_RNDV): matched, it returns the receive and the payload is copied here; unexpected, it
 * keeps no copy of its own (which it would later unpack on the host) and asks through
 * MPIDI_NM_am_get_data_copy_cb's callback once a receive matches, so the payload is kept
 * here until then. */
static void deliver_to_recv(int handler_id, uint32_t attr, const void *am_hdr,
                            const void *data, size_t data_sz)
{
    MPIR_Request *rreq = NULL;
    int mpi_errno = MPIDIG_global.target_msg_cbs[handler_id] ((void *) am_hdr, (void *) data,
                                                              (MPI_Aint) data_sz,
                                                              attr | MPIDIG_AM_ATTR__IS_ASYNC |
                                                              MPIDIG_AM_ATTR__IS_RNDV, &rreq);
    if (mpi_errno != MPI_SUCCESS || rreq == NULL) {
        am_error(mpi_errno);
        return;
    }
    if (MPIDIG_REQUEST(rreq, req->status) & MPIDIG_REQ_UNEXPECTED) {
        void *kept = MPL_malloc(data_sz, MPL_MEM_BUFFER);
        GDR_AM_REQ(rreq).pack_buf = kept;
        if (kept == NULL) {
            MPIR_ERR_SET1(mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                          "gdr copy of an unexpected message");
            am_error(mpi_errno);
            return;
        }
        memcpy(kept, data, data_sz);
        return;
    }
    am_error(recv_copy(data, rreq));
    am_error(MPIDIG_REQUEST(rreq, req->target_cmpl_cb) (rreq));
}

/* Channel callbacks: run inside gdr_verbs_am_progress(). */
static void deliver(void *ctx, int src, uint32_t word, const void *am_hdr,
                    size_t am_hdr_sz, const void *data, size_t data_sz)
{
    uint32_t attr = 0;
    int handler_id = GDR_AM_WORD_HANDLER(word);
    if (handler_id == MPIDI_GDR_DYNPROC_HANDLER) {
        am_error(MPIDI_GDR_dynmsg_deliver(src, am_hdr, am_hdr_sz, data, data_sz));
        return;
    }
    if (!word_ok(src, word))
        return;
    MPIDIG_AM_ATTR_SET_VCIS(attr, GDR_AM_WORD_SRC_VCI(word), GDR_AM_WORD_DST_VCI(word));
    if (data_sz > 0 && MPIDI_GDR_global.gpu.on
        && (handler_id == MPIDIG_SEND || handler_id == MPIDIG_SEND_DATA)) {
        deliver_to_recv(handler_id, attr, am_hdr, data, data_sz);
        return;
    }
    am_error(MPIDIG_global.target_msg_cbs[handler_id] ((void *) am_hdr, (void *) data,
                                                       (MPI_Aint) data_sz, attr, NULL));
}

/* Rendezvous into the matched receive buffer.  MPIDIG sends a large message as its own
 * RTS (eager here), the receiver answers CTS once the receive is matched, and the data
 * follows as MPIDIG_SEND_DATA, a rendezvous of this channel: so when the data's RTS
 * arrives its receive is always matched, even for a message that arrived before its
 * receive was posted.  Handed to MPIDIG with MPIDIG_AM_ATTR__IS_ASYNC, its handler
 * (like the partitioned one's) only finds the request named in its header, and the
 * transport places the data (mpidig_pt2pt_callbacks.c, MPIDIG_send_data_target_msg_cb).
 * Every other handler acts on its whole message when it is delivered (an accumulate in
 * order, a Put's acknowledgement), so those are delivered whole, after landing. */
static int rts_wanted(void *ctx, uint32_t word)
{
    int handler_id = GDR_AM_WORD_HANDLER(word);
    if (handler_id == MPIDI_GDR_PIPE_HANDLER)
        return 1;               /* a fragment (gdr_msg_pipe.c): always placed by its receive */
    return MPIR_CVAR_CH4_GDR_RNDV_ZCOPY_MIN >= 0
        && (handler_id == MPIDIG_SEND_DATA || handler_id == MPIDIG_PART_SEND_DATA);
}

/* Where the payload of a matched receive rreq can be read straight into: the pieces of
 * its buffer (MPIDIG_get_recv_data), at most GDR_VERBS_AM_READ_SEGS_MAX, host memory or
 * device memory the NIC registers (*device_id its buffer id).  0 pieces: the payload
 * lands in the channel's buffer and is copied (a smaller message than
 * MPIR_CVAR_CH4_GDR_RNDV_ZCOPY_MIN, a datatype of many pieces, device memory the NIC
 * cannot reach, an empty buffer). */
static int zcopy_segs(MPIR_Request * rreq, size_t data_sz, struct iovec *segs,
                      uint64_t * device_id)
{
    int is_contig, is_gpu, n;
    void *p;
    MPI_Aint sz, room = 0;

    *device_id = 0;
    if ((MPI_Aint) data_sz < MPIR_CVAR_CH4_GDR_RNDV_ZCOPY_MIN)
        return 0;
    n = MPIDIG_get_recv_iov_count(rreq);
    if (n < 1 || n > GDR_VERBS_AM_READ_SEGS_MAX)
        return 0;
    MPIDIG_get_recv_data(&is_contig, &is_gpu, &p, &sz, rreq);
    if (is_contig) {
        segs[0].iov_base = p;
        segs[0].iov_len = (size_t) sz;
        n = 1;
    } else {
        if (sz < 1 || sz > GDR_VERBS_AM_READ_SEGS_MAX)
            return 0;
        n = (int) sz;
        memcpy(segs, p, (size_t) n * sizeof(struct iovec));
    }
    /* gdr's own query: MPICH's (is_gpu) cannot see the simulated GPU */
    uint64_t id = MPIDI_GDR_gpu_buffer_id(segs[0].iov_base);
    for (int k = 0; k < n; k++) {
        if (MPIDI_GDR_gpu_buffer_id(segs[k].iov_base) != id)
            return 0;           /* pieces of several device allocations: one tag each */
        room += (MPI_Aint) segs[k].iov_len;
    }
    if (id != 0 && !MPIDI_GDR_nic_takes_gpu_memory())
        return 0;
    if (room == 0)
        return 0;
    /* a buffer too small: its part is read, the rest dropped (MPIDIG_recv_type_init may
     * have said so already) */
    if ((MPI_Aint) data_sz > room && rreq->status.MPI_ERROR == MPI_SUCCESS)
        rreq->status.MPI_ERROR = MPIDIG_ERR_TRUNCATE(room, (MPI_Aint) data_sz);
    *device_id = id;
    return n;
}

/* A rendezvous message rts_wanted took, in its turn: MPIDIG matches nothing here (the
 * receive was matched at MPIDIG's RTS) and returns the request the data belongs to. */
static int rts_offered(void *ctx, int src, uint32_t word, const void *am_hdr, size_t am_hdr_sz,
                       size_t data_sz, gdr_verbs_am_rts_t * rts)
{
    uint32_t attr = MPIDIG_AM_ATTR__IS_ASYNC;
    MPIR_Request *rreq = NULL;
    struct iovec segs[GDR_VERBS_AM_READ_SEGS_MAX];
    uint64_t device_id = 0;
    int nsegs = 0;

    if (GDR_AM_WORD_HANDLER(word) == MPIDI_GDR_PIPE_HANDLER) {
        am_error(MPIDI_GDR_pipe_offered(am_hdr, am_hdr_sz, data_sz, rts));
        return 1;
    }
    if (!word_ok(src, word))
        return 0;               /* delivered whole later, and refused again there */
    MPIDIG_AM_ATTR_SET_VCIS(attr, GDR_AM_WORD_SRC_VCI(word), GDR_AM_WORD_DST_VCI(word));
    am_error(MPIDIG_global.target_msg_cbs[GDR_AM_WORD_HANDLER(word)] ((void *) am_hdr, NULL,
                                                                      (MPI_Aint) data_sz, attr,
                                                                      &rreq));
    if (rreq != NULL)
        nsegs = zcopy_segs(rreq, data_sz, segs, &device_id);
    /* no request (the handler failed): the payload is read and dropped, so that the
     * sender's buffer is released */
    if (gdr_verbs_am_read_into(MPIDI_GDR_global.am, rts, segs, nsegs, device_id,
                               (uint64_t) (uintptr_t) rreq) != 0)
        am_error(MPIDI_GDR_transport_error());
    return 1;
}

/* The payload of a message rts_offered took is in: copied from the landing buffer, or
 * read in place; then MPIDIG completes the receive (recv_target_cmpl_cb). */
static void read_done(void *ctx, uint64_t cookie, const void *landed, size_t len)
{
    MPIR_Request *rreq = (MPIR_Request *) (uintptr_t) cookie;
    if (cookie & MPIDI_GDR_PIPE_COOKIE) {
        am_error(MPIDI_GDR_pipe_read_done(cookie, landed, len));
        return;
    }
    if (rreq == NULL)
        return;
    if (landed != NULL)
        am_error(recv_copy(landed, rreq));
    else
        MPIDIG_recv_done((MPI_Aint) len, rreq);
    am_error(MPIDIG_REQUEST(rreq, req->target_cmpl_cb) (rreq));
}

static void rndv_done(void *ctx, uint64_t cookie)
{
    if (cookie & MPIDI_GDR_PIPE_COOKIE) {
        am_error(MPIDI_GDR_pipe_fin(cookie, origin_done));
        return;
    }
    MPIR_Request *sreq = (MPIR_Request *) (uintptr_t) cookie;
    am_error(origin_done(sreq));
}

/* One poll of the channel; may_idle: it may yield or sleep after many empty polls */
static int am_poll(int *made_progress, int may_idle)
{
    int progressed = 0, rc, mpi_errno;
    int sleep_us = MPIR_CVAR_CH4_GDR_IDLE_SLEEP_US;
    unsigned idle_after = MPIR_CVAR_CH4_GDR_YIELD_AFTER > 0 ?
        (unsigned) MPIR_CVAR_CH4_GDR_YIELD_AFTER : (sleep_us > 0 ? 1u : 0u);

    if (MPIDI_GDR_pipe_copying())
        may_idle = 0;           /* the pipeline's GPU copies end without a channel event */
    if (!may_idle) {
        /* another source has work (gdr_progress.c's guard): one poll, no yield or sleep,
         * and an empty one is not counted towards idling */
        rc = gdr_verbs_am_progress(MPIDI_GDR_global.am, &progressed);
        idle_after = 0;
    } else if (idle_after > 0 && MPIDI_GDR_global.empty_polls >= idle_after) {
        /* the last idle_after polls found nothing: leave the core to ranks with work */
        MPIDI_GDR_global.empty_polls = 0;
        if (sleep_us > 0) {
            rc = gdr_verbs_am_wait(MPIDI_GDR_global.am, sleep_us, &progressed);
        } else {
            sched_yield();
            rc = gdr_verbs_am_progress(MPIDI_GDR_global.am, &progressed);
        }
    } else {
        rc = gdr_verbs_am_progress(MPIDI_GDR_global.am, &progressed);
    }
    if (rc != 0)
        return MPIDI_GDR_transport_error();
    mpi_errno = MPIDI_GDR_global.am_errno;
    if (mpi_errno != MPI_SUCCESS) {
        MPIDI_GDR_global.am_errno = MPI_SUCCESS;
        return mpi_errno;
    }
    if (MPIDI_GDR_pipe_copying()) {
        mpi_errno = MPIDI_GDR_pipe_progress(&progressed);
        if (mpi_errno != MPI_SUCCESS)
            return mpi_errno;
    }
    if (progressed) {
        MPIDI_GDR_global.empty_polls = 0;
        *made_progress = 1;
    }
    else if (idle_after > 0)
        MPIDI_GDR_global.empty_polls++;
    return MPI_SUCCESS;
}

int MPIDI_GDR_progress_am(int *made_progress)
{
    return am_poll(made_progress, 1);
}

int MPIDI_GDR_poll_am(int *made_progress)
{
    return am_poll(made_progress, 0);
}

/* The VCIs (1 + reserved) a rank has when MPICH asks for num_reserved (gdr_comm.c's
 * comm_set_vcis; here because the cards carry it). */
int MPIDI_GDR_total_vcis(int num_reserved)
{
    if (num_reserved < 0 || MPIR_ThreadInfo.isThreaded)
        num_reserved = 0;
    if (1 + num_reserved > MPIDI_CH4_MAX_VCIS)
        num_reserved = MPIDI_CH4_MAX_VCIS - 1;
    return 1 + num_reserved;
}

/* MPI_T: the channel's connection and memory counters, live or as the channel left
 * them. */
static void am_stat_value(void *addr, void *obj_handle, int count, void *buf)
{
    (void) obj_handle;
    (void) count;
    MPIDI_GDR_stat_value(MPIDI_GDR_global.am != NULL ? gdr_verbs_am_stats(MPIDI_GDR_global.am)
                         : &MPIDI_GDR_global.am_stats_kept, addr, buf);
}

/* MPI_T: the registration cache's counters, live or as the channel left them. */
static void reg_cache_stat_value(void *addr, void *obj_handle, int count, void *buf)
{
    gdr_verbs_rcache_stats_t st;
    (void) obj_handle;
    (void) count;
    if (MPIDI_GDR_global.am != NULL)
        gdr_verbs_am_reg_cache_stats(MPIDI_GDR_global.am, &st);
    else
        st = MPIDI_GDR_global.reg_cache_stats_kept;
    MPIDI_GDR_stat_value(&st, addr, buf);
}

static void register_reg_cache_pvars(void)
{
#define GDR_RC_CAUSE(cause) offsetof(gdr_verbs_rcache_stats_t, invalidated_by) \
        + (cause) * sizeof(uint64_t)
    static const MPIDI_GDR_stat_pvar_t pv[] = {
        {"gdr_reg_cache_hits", "transfers from or into user buffers that reused a cached "
         "registration (MPIR_CVAR_CH4_GDR_REG_CACHE)", offsetof(gdr_verbs_rcache_stats_t, hits),
         0},
        {"gdr_reg_cache_misses", "user buffers registered and kept for reuse",
         offsetof(gdr_verbs_rcache_stats_t, misses), 0},
        {"gdr_reg_cache_once", "user buffers registered for one transfer only (the cache is "
         "off, or device memory without a CUDA buffer id)",
         offsetof(gdr_verbs_rcache_stats_t, once), 0},
        {"gdr_reg_cache_evicted", "unused registrations dropped to stay within the cache's "
         "size", offsetof(gdr_verbs_rcache_stats_t, evicted), 0},
        {"gdr_reg_cache_entries", "registrations cached now",
         offsetof(gdr_verbs_rcache_stats_t, entries), 1},
        {"gdr_reg_cache_bytes", "bytes under the registrations cached now",
         offsetof(gdr_verbs_rcache_stats_t, bytes), 1},
        {"gdr_reg_cache_invalidated", "registrations dropped because the pages under them "
         "could change (every cause)", offsetof(gdr_verbs_rcache_stats_t, invalidated), 0},
        {"gdr_reg_cache_invalidated_free", "... by free() or realloc() of their heap block",
         GDR_RC_CAUSE(GDR_VERBS_RCACHE_FREE), 0},
        {"gdr_reg_cache_invalidated_munmap", "... by munmap()",
         GDR_RC_CAUSE(GDR_VERBS_RCACHE_MUNMAP), 0},
        {"gdr_reg_cache_invalidated_mremap", "... by mremap()",
         GDR_RC_CAUSE(GDR_VERBS_RCACHE_MREMAP), 0},
        {"gdr_reg_cache_invalidated_madvise", "... by madvise() that drops pages (DONTNEED, "
         "FREE, REMOVE)", GDR_RC_CAUSE(GDR_VERBS_RCACHE_MADVISE), 0},
        {"gdr_reg_cache_invalidated_mmap", "... by mmap() or remap_file_pages() putting new "
         "pages under them", GDR_RC_CAUSE(GDR_VERBS_RCACHE_MMAP), 0},
        {"gdr_reg_cache_invalidated_shm", "... by shmat() over them or shmdt() of them",
         GDR_RC_CAUSE(GDR_VERBS_RCACHE_SHM), 0},
        {"gdr_reg_cache_invalidated_brk", "... by brk() or sbrk() moving the break across "
         "them", GDR_RC_CAUSE(GDR_VERBS_RCACHE_BRK), 0},
        {"gdr_reg_cache_invalidated_device", "... because another CUDA allocation (a new "
         "buffer id) now lies at their address", GDR_RC_CAUSE(GDR_VERBS_RCACHE_DEVICE), 0},
    };
#undef GDR_RC_CAUSE
    MPIDI_GDR_register_stat_pvars(pv, sizeof(pv) / sizeof(pv[0]), reg_cache_stat_value);
}

void MPIDI_GDR_am_register_pvars(void)
{
    static const MPIDI_GDR_stat_pvar_t pv[] = {
        {"gdr_connections", "queue pairs this rank made ready to other ranks (one per rank "
         "it talked with: MPIR_CVAR_CH4_GDR_LAZY_CONNECT)",
         offsetof(gdr_verbs_am_stats_t, connections), 0},
        {"gdr_connect_handshakes", "connection datagrams this rank sent (requests, answers, "
         "confirmations, repeats)", offsetof(gdr_verbs_am_stats_t, handshakes_sent), 0},
        {"gdr_connect_address_retries", "times a peer's address (ARP, neighbour discovery) "
         "had not resolved when a connection needed it, and was tried again later",
         offsetof(gdr_verbs_am_stats_t, address_retries), 0},
        {"gdr_recv_buffers", "receive buffers in this rank's shared receive queue "
         "(MPIR_CVAR_CH4_GDR_SRQ_DEPTH)", offsetof(gdr_verbs_am_stats_t, recv_buffers), 1},
        {"gdr_pinned_bytes", "bytes of the channel's own registered buffers (send, receive, "
         "handshake)", offsetof(gdr_verbs_am_stats_t, pinned_bytes), 1},
        {"gdr_am_eager_sent", "active messages this rank sent whole in one eager buffer "
         "(payload and headers up to 16 KiB and 512 bytes)",
         offsetof(gdr_verbs_am_stats_t, eager_sent), 0},
        {"gdr_am_rndv_sent", "active messages this rank sent by rendezvous (the receiver "
         "reads the payload with RDMA READ)", offsetof(gdr_verbs_am_stats_t, rndv_sent), 0},
        {"gdr_am_rndv_zcopy_bytes", "rendezvous payload bytes this rank read straight into "
         "the matched receive buffer, no host copy (MPIR_CVAR_CH4_GDR_RNDV_ZCOPY_MIN), or "
         "into a pinned staging chunk for a device buffer the NIC cannot reach (those also "
         "in gdr_am_staged_bytes)",
         offsetof(gdr_verbs_am_stats_t, rndv_zcopy_bytes), 0},
        {"gdr_am_rndv_copied_bytes", "rendezvous payload bytes this rank read into gdr's "
         "landing buffers and then copied on the host (receive buffers of many pieces or "
         "that the NIC cannot reach, one-sided and other messages delivered whole)",
         offsetof(gdr_verbs_am_stats_t, rndv_copied_bytes), 0},
    };
    MPIDI_GDR_register_stat_pvars(pv, sizeof(pv) / sizeof(pv[0]), am_stat_value);
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                              "gdr_am_send_packed_bytes", &MPIDI_GDR_global.am_packed_bytes, 1,
                              NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "message payload bytes this rank packed into a "
                              "host buffer before sending (a host copy on the sender: "
                              "non-contiguous datatypes, device data of a rendezvous the NIC "
                              "cannot read in place, device data that goes eagerly when no "
                              "send slot is free at once); contiguous host data, contiguous "
                              "device rendezvous data under GPUDirect dmabuf or peermem, and "
                              "contiguous eager device data copied straight into a send slot "
                              "are not");
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                              "gdr_am_device_copied_bytes",
                              &MPIDI_GDR_global.am_device_copied_bytes, 1, NULL,
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "message payload bytes gdr's GPU copy moved "
                              "between device memory and host memory on this rank: device "
                              "data sent from a host copy (eager, or rendezvous the NIC cannot "
                              "read in place: GPUDirect staged), and payloads written into "
                              "device receive buffers from host memory (eager, unexpected, "
                              "or landed rendezvous); 0 for device messages read in place");
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                              "gdr_am_sends_immediate", &MPIDI_GDR_global.am_sends_immediate, 1,
                              NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "standard-mode sends of a predefined type from "
                              "host memory within the eager limit that gdr sent itself, "
                              "complete at once, without MPIDIG's send request (the rest go "
                              "through MPIDIG)");
    register_reg_cache_pvars();
}

/* Eager connections (MPIR_CVAR_CH4_GDR_LAZY_CONNECT=false): every rank connects to
 * every rank it reaches, all inside MPI_Init, so each answers the others' requests. */
static int connect_all(const uint8_t *reach)
{
    int size = MPIR_Process.size, pending;
    do {
        pending = 0;
        for (int i = 0; i < size; i++) {
            if (i == MPIR_Process.rank || !reach[i])
                continue;
            int r = gdr_verbs_am_connect_peer(MPIDI_GDR_global.am, i);
            if (r < 0)
                return MPIDI_GDR_transport_error();
            pending += r == 0;
        }
        int progressed;
        if (pending > 0 && gdr_verbs_am_progress(MPIDI_GDR_global.am, &progressed) != 0)
            return MPIDI_GDR_transport_error();
    } while (pending > 0);
    return MPI_SUCCESS;
}

/* Init: a channel that reaches every rank on another node through the business cards
 * that PMI spreads; queue pairs are made when first needed (or all here). */
int MPIDI_GDR_am_start(void)
{
    int mpi_errno = MPI_SUCCESS;
    int size = MPIR_Process.size, rank = MPIR_Process.rank;
    uint8_t *need_qp = NULL;
    void *card = NULL, *table = NULL;
    int remote = 0, bc_len = 0;
    char why[256];

    need_qp = MPL_calloc(size, 1, MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP1(need_qp == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                         "gdr peer map");
    for (int i = 0; i < size; i++) {
        need_qp[i] = (i != rank && MPIR_Process.node_map[i] != MPIR_Process.node_map[rank]);
        remote += need_qp[i];
    }
    /* one node: MPICH's shm module carries everything; a channel without peers is made
     * only where a device is, for processes of other jobs (MPI_Comm_spawn, connect/accept),
     * and its failure then only says why those cannot be reached */
    if (remote == 0 && !MPIDI_GDR_global.have_device) {
        snprintf(MPIDI_GDR_global.no_channel_why, sizeof(MPIDI_GDR_global.no_channel_why),
                 "no RDMA device: %s", MPIDI_GDR_global.no_device_why);
        goto fn_exit;
    }
    if (remote > 0)
        need_qp[rank] = 1;      /* loopback: atomics on our own window go through the NIC too */

    MPIR_ERR_CHKANDJUMP1(!MPIDI_GDR_global.have_device, mpi_errno, MPI_ERR_OTHER,
                         "**gdr_nodevice", "**gdr_nodevice %s", MPIDI_GDR_global.no_device_why);
    int have_gid = gdr_verbs_device_pick_gid(&MPIDI_GDR_global.device,
                                             MPIR_CVAR_CH4_GDR_GID_INDEX, why, sizeof(why)) == 0;
    MPIR_ERR_CHKANDJUMP1(!have_gid && remote > 0, mpi_errno, MPI_ERR_OTHER, "**gdr_device",
                         "**gdr_device %s", why);

    gdr_verbs_am_config_t cfg = {
        .buf_size = MPIDI_GDR_AM_EAGER_BUF_SZ,
        .recv_depth = MPIR_CVAR_CH4_GDR_RECV_DEPTH > 2 ? MPIR_CVAR_CH4_GDR_RECV_DEPTH : 2,
        .send_slots = 64,
        .max_reads = 8,
        .rma_depth = MPIR_CVAR_CH4_GDR_RMA_DEPTH > 1 ? MPIR_CVAR_CH4_GDR_RMA_DEPTH : 1,
        .qp_timeout = MPIR_CVAR_CH4_GDR_QP_TIMEOUT >= 1 && MPIR_CVAR_CH4_GDR_QP_TIMEOUT <= 31 ?
            (uint8_t) MPIR_CVAR_CH4_GDR_QP_TIMEOUT : 0,
        .srq_depth = MPIR_CVAR_CH4_GDR_SRQ_DEPTH > 0 ? (uint32_t) MPIR_CVAR_CH4_GDR_SRQ_DEPTH : 0,
        .connect_timeout_ms = MPIR_CVAR_CH4_GDR_CONNECT_TIMEOUT > 0 ?
            (uint32_t) MPIR_CVAR_CH4_GDR_CONNECT_TIMEOUT * 1000u : 0,
        .reg_cache_off = !MPIR_CVAR_CH4_GDR_REG_CACHE,
    };
    gdr_verbs_am_ops_t ops = {.deliver = deliver,.rndv_done = rndv_done,
        .rts_wanted = rts_wanted,.rts = rts_offered,.read_done = read_done
    };
    if (have_gid)
        MPIDI_GDR_global.am = gdr_verbs_am_create(&MPIDI_GDR_global.device, rank, size,
                                                  need_qp, &cfg, &ops, NULL, why, sizeof(why));
    MPIR_ERR_CHKANDJUMP1(MPIDI_GDR_global.am == NULL && remote > 0, mpi_errno, MPI_ERR_OTHER,
                         "**gdr_device", "**gdr_device %s", why);
    MPIDI_GDR_global.send_eager_max = MPIDI_GDR_global.am == NULL ? -1 :
        (MPI_Aint) gdr_verbs_am_eager_limit(MPIDI_GDR_global.am, sizeof(MPIDIG_hdr_t));
    if (MPIDI_GDR_global.am == NULL) {
        /* one node: its ranks still exchange cards (this one's empty), as every rank of
         * the job does; only processes of other jobs are out of this rank's reach */
        snprintf(MPIDI_GDR_global.no_channel_why, sizeof(MPIDI_GDR_global.no_channel_why),
                 "%s", why);
        if (MPIR_CVAR_CH4_GDR_VERBOSE > 0)
            fprintf(stderr, "gdr[%d]: no channel for processes of other jobs: %s\n", rank,
                    why);
    } else {
        /* this job, as processes of other jobs tell it apart: the process manager's name for
         * it (hydra's holds its host, pid and a random number; Slurm's its job and step) */
        MPIDI_GDR_global.job = MPIDI_GDR_job_id();
        gdr_verbs_am_set_job(MPIDI_GDR_global.am, MPIDI_GDR_global.job);
    }

    /* the channel's card, then one byte: the VCIs this rank will have (so that setting
     * MPI_COMM_WORLD's VCIs needs no allgather over it, which would connect every rank
     * to log(n) others before the program sends anything) */
    int card_len = GDR_VERBS_CARD_BYTES;
    bc_len = card_len + 1;
    card = MPL_malloc(bc_len, MPL_MEM_OTHER);
    MPIDI_GDR_global.world_vcis = MPL_malloc(size, MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP1(card == NULL || MPIDI_GDR_global.world_vcis == NULL, mpi_errno,
                         MPI_ERR_NO_MEM, "**nomem", "**nomem %s", "gdr business card");
    memset(card, 0, bc_len);
    if (MPIDI_GDR_global.am != NULL)
        gdr_verbs_am_card(MPIDI_GDR_global.am, card);
    ((uint8_t *) card)[card_len] = (uint8_t) MPIDI_GDR_total_vcis(MPIR_CVAR_CH4_RESERVE_VCIS);
    /* every rank's card, in rank order: a few bytes each, whatever the job size */
    table = MPL_malloc((size_t) bc_len * size, MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP1(table == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                         "gdr business card table");
    mpi_errno = MPIR_pmi_allgather(card, bc_len, table, bc_len, MPIR_PMI_DOMAIN_ALL);
    MPIR_ERR_CHECK(mpi_errno);
    for (int i = 0; i < size; i++)
        MPIDI_GDR_global.world_vcis[i] = ((uint8_t *) table)[(size_t) i * bc_len + card_len];
    /* kept: the upids of this job's ranks (gdr_spawn.c) */
    MPIDI_GDR_global.world_cards = table;
    MPIDI_GDR_global.world_card_stride = (size_t) bc_len;
    table = NULL;
    for (int i = 0; i < size; i++) {
        if (!need_qp[i])
            continue;
        if (gdr_verbs_am_add_peer(MPIDI_GDR_global.am, i,
                                  (char *) MPIDI_GDR_global.world_cards + (size_t) i * bc_len,
                                  (size_t) card_len) != 0) {
            mpi_errno = MPIDI_GDR_transport_error();
            goto fn_fail;
        }
    }
    /* Puts of up to 8 KiB are copied (as UCX's RC bcopy threshold): their origin buffer is
     * free at once, so flush_local and a fence's local part wait for no acknowledgement;
     * zero-copy 8-KiB Puts made OMB's flush_local row 1.7x ch4:ucx's.  128 of them: the
     * same 1 MiB pinned as 256 of 4 KiB. */
    gdr_verbs_rma_config_t rcfg = {
        .depth = cfg.rma_depth,.bounce_size = MPIR_CVAR_CH4_GDR_RMA_BCOPY_MAX > 64
            ? (uint32_t) MPIR_CVAR_CH4_GDR_RMA_BCOPY_MAX : 64,.bounce_count = 128,
        .chunk = MPIR_CVAR_CH4_GDR_RMA_CHUNK > 0 ? (uint64_t) MPIR_CVAR_CH4_GDR_RMA_CHUNK : 0,
        .hold = doorbell_hold(&MPIDI_GDR_global.device)
    };
    /* (one node: no one-sided operations through the NIC, windows as without a channel) */
    if (remote > 0) {
        MPIDI_GDR_global.rma = gdr_verbs_rma_create(MPIDI_GDR_global.am, &rcfg, why,
                                                    sizeof(why));
        MPIR_ERR_CHKANDJUMP1(MPIDI_GDR_global.rma == NULL, mpi_errno, MPI_ERR_OTHER,
                             "**gdr_device", "**gdr_device %s", why);
    }
    /* every rank knows every card before anyone asks for a connection */
    mpi_errno = MPIR_pmi_barrier();
    MPIR_ERR_CHECK(mpi_errno);
    if (!MPIR_CVAR_CH4_GDR_LAZY_CONNECT) {
        mpi_errno = connect_all(need_qp);
        MPIR_ERR_CHECK(mpi_errno);
    }

  fn_exit:
    MPL_free(table);
    MPL_free(card);
    MPL_free(need_qp);
    return mpi_errno;
  fn_fail:
    MPL_free(MPIDI_GDR_global.world_cards);
    MPIDI_GDR_global.world_cards = NULL;
    MPL_free(MPIDI_GDR_global.world_vcis);
    MPIDI_GDR_global.world_vcis = NULL;
    gdr_verbs_rma_destroy(MPIDI_GDR_global.rma);
    MPIDI_GDR_global.rma = NULL;
    if (MPIDI_GDR_global.am != NULL) {
        gdr_verbs_am_destroy(MPIDI_GDR_global.am);
        MPIDI_GDR_global.am = NULL;
    }
    MPIDI_GDR_global.send_eager_max = -1;
    goto fn_exit;
}

/* Finalize: finish what peers still read from us, then let everyone get there. */
int MPIDI_GDR_am_stop(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPL_free(MPIDI_GDR_global.world_cards);
    MPIDI_GDR_global.world_cards = NULL;
    if (MPIDI_GDR_global.am == NULL)
        return MPI_SUCCESS;
    while (gdr_verbs_am_busy(MPIDI_GDR_global.am) || MPIDI_GDR_pipe_busy()) {
        int made_progress = 0;
        mpi_errno = MPIDI_GDR_progress_am(&made_progress);
        MPIR_ERR_CHECK(mpi_errno);
    }
    mpi_errno = MPIR_pmi_barrier();
    MPIR_ERR_CHECK(mpi_errno);
  fn_exit:
    if (MPIR_CVAR_CH4_GDR_VERBOSE >= 2) {
        const gdr_verbs_am_stats_t *st = gdr_verbs_am_stats(MPIDI_GDR_global.am);
        fprintf(stderr, "gdr: rank %d channel: %llu eager + %llu rendezvous sent, %llu + %llu "
                "received, %llu queued for credits (%llu chained posts), %llu credit messages, "
                "%llu empty polls, %llu sleeps (%llu woken by a completion); %llu connections "
                "(%llu handshake datagrams, %llu address retries), %llu receive buffers, "
                "%llu bytes pinned; rendezvous bytes %llu read in place, %llu landed and "
                "copied (%llu receive buffers would not register)\n",
                MPIR_Process.rank, (unsigned long long) st->eager_sent,
                (unsigned long long) st->rndv_sent, (unsigned long long) st->eager_recv,
                (unsigned long long) st->rndv_recv, (unsigned long long) st->queued,
                (unsigned long long) st->send_chains, (unsigned long long) st->credit_sent,
                (unsigned long long) st->empty_polls, (unsigned long long) st->sleeps,
                (unsigned long long) st->wakeups, (unsigned long long) st->connections,
                (unsigned long long) st->handshakes_sent,
                (unsigned long long) st->address_retries, (unsigned long long) st->recv_buffers,
                (unsigned long long) st->pinned_bytes, (unsigned long long) st->rndv_zcopy_bytes,
                (unsigned long long) st->rndv_copied_bytes,
                (unsigned long long) st->rndv_reg_fallbacks);
    }
    gdr_verbs_rma_destroy(MPIDI_GDR_global.rma);
    MPIDI_GDR_global.rma = NULL;
    MPIDI_GDR_global.am_stats_kept = *gdr_verbs_am_stats(MPIDI_GDR_global.am);
    gdr_verbs_am_reg_cache_stats(MPIDI_GDR_global.am, &MPIDI_GDR_global.reg_cache_stats_kept);
    MPL_free(MPIDI_GDR_global.world_vcis);
    MPIDI_GDR_global.world_vcis = NULL;
    MPIDI_GDR_dynmsg_free_all();
    MPIDI_GDR_peers_free();
    MPIDI_GDR_global.send_eager_max = -1;
    gdr_verbs_am_destroy(MPIDI_GDR_global.am);
    MPIDI_GDR_global.am = NULL;
    MPIDI_GDR_pipe_free();      /* (after the channel: its cache held the chunks' keys) */
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
