/* Point-to-point: MPICH's active-message implementation (MPIDIG) over gdr's channel,
 * like CH4's netmod fallback, except that the VCIs of stream communicators are kept.
 * The fallback always uses VCI 0; an MPIX_Stream's messages must be sent to and
 * matched in its reserved VCI's queues (the channel carries both VCIs: gdr_am.c), as
 * MPICH's shm module does.  Ordinary communicators use VCI 0: gdr runs one implicit
 * VCI (gdr_comm.c). */
#ifndef GDR_PT2PT_H_INCLUDED
#define GDR_PT2PT_H_INCLUDED

#include "gdr_impl.h"
#include "gdr_am.h"              /* MPIDI_GDR_send_eager */

/* MPI_Send takes a NULL request as a completed send (MPICH patch 0023) */
MPL_STATIC_INLINE_PREFIX int MPIDI_GDR_attr_takes_no_request(int attr)
{
#ifdef MPIR_PT2PT_ATTR_NOREQ
    return (attr & MPIR_PT2PT_ATTR_NOREQ) != 0;
#else
    (void) attr;
    return 0;
#endif
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_isend(const void *buf, MPI_Aint count,
                                                MPI_Datatype datatype, int rank, int tag,
                                                MPIR_Comm * comm, int attr,
                                                MPIDI_av_entry_t * addr, MPIR_Request ** request)
{
    int vci_src, vci_dst;
    MPIDI_EXPLICIT_VCIS(comm, attr, comm->rank, rank, vci_src, vci_dst);
    int mpi_errno = MPI_SUCCESS, sent = 0;
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(vci_src));
    /* small standard-mode messages skip MPIDIG's request (as ch4:ucx's immediate sends) */
    if (!MPIR_PT2PT_ATTR_GET_SYNCFLAG(attr))
        mpi_errno = MPIDI_GDR_send_eager(buf, count, datatype, rank, tag, comm, attr, vci_src,
                                         vci_dst, &sent);
    if (sent)
        *request = MPIDI_GDR_attr_takes_no_request(attr) ? NULL :
            MPIR_Request_create_complete(MPIR_REQUEST_KIND__SEND);
    else if (mpi_errno == MPI_SUCCESS)
        mpi_errno = MPIDIG_mpi_isend(buf, count, datatype, rank, tag, comm,
                                     MPIR_PT2PT_ATTR_CONTEXT_OFFSET(attr), addr, vci_src,
                                     vci_dst, request, MPIR_PT2PT_ATTR_GET_SYNCFLAG(attr),
                                     MPIR_PT2PT_ATTR_GET_ERRFLAG(attr));
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(vci_src));
    return mpi_errno;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_cancel_send(MPIR_Request * sreq)
{
    return MPIDIG_mpi_cancel_send(sreq);
}

/* the VCI whose queues a receive from rank on comm is matched in */
MPL_STATIC_INLINE_PREFIX int MPIDI_GDR_recv_vci(MPIR_Comm * comm, int attr, int rank)
{
    int vci_src, vci_dst;
    MPIDI_EXPLICIT_VCIS(comm, attr, rank, comm->rank, vci_src, vci_dst);
    (void) vci_src;
    return vci_dst;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_irecv(void *buf, MPI_Aint count, MPI_Datatype datatype,
                                                int rank, int tag, MPIR_Comm * comm, int attr,
                                                MPIDI_av_entry_t * addr, MPIR_Request ** request,
                                                MPIR_Request * partner)
{
    int vci = MPIDI_GDR_recv_vci(comm, attr, rank);
    /* an any-source receive arrives with the VCI lock already held (CH4 keeps shm from
     * progressing meanwhile) */
    bool need_cs = (rank != MPI_ANY_SOURCE);
    if (need_cs)
        MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(vci));
    int mpi_errno = MPIDIG_mpi_irecv(buf, count, datatype, rank, tag, comm,
                                     MPIR_PT2PT_ATTR_CONTEXT_OFFSET(attr), vci, request, 0,
                                     partner);
    if (need_cs)
        MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(vci));
    return mpi_errno;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_imrecv(void *buf, MPI_Aint count,
                                                 MPI_Datatype datatype, MPIR_Request * message)
{
    int vci = MPIDI_Request_get_vci(message);
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(vci));
    int mpi_errno = MPIDIG_mpi_imrecv(buf, count, datatype, message);
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(vci));
    (void) vci;
    return mpi_errno;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_cancel_recv(MPIR_Request * rreq, bool is_blocking)
{
    return MPIDIG_mpi_cancel_recv(rreq, false /* is_anysrc_partner */);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_improbe(int source, int tag, MPIR_Comm * comm, int attr,
                                                  MPIDI_av_entry_t * addr, int *flag,
                                                  MPIR_Request ** message, MPI_Status * status)
{
    int vci = MPIDI_GDR_recv_vci(comm, attr, source);
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(vci));
    int mpi_errno = MPIDIG_mpi_improbe(source, tag, comm, MPIR_PT2PT_ATTR_CONTEXT_OFFSET(attr),
                                       vci, flag, false /* is_local */ , message, status);
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(vci));
    return mpi_errno;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_iprobe(int source, int tag, MPIR_Comm * comm, int attr,
                                                 MPIDI_av_entry_t * addr, int *flag,
                                                 MPI_Status * status)
{
    int vci = MPIDI_GDR_recv_vci(comm, attr, source);
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(vci));
    int mpi_errno = MPIDIG_mpi_iprobe(source, tag, comm, MPIR_PT2PT_ATTR_CONTEXT_OFFSET(attr),
                                      vci, flag, false /* is_local */ , status);
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(vci));
    return mpi_errno;
}

#endif /* GDR_PT2PT_H_INCLUDED */
