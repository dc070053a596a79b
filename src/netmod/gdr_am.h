/* Active-message entry points: CH4 calls them for ranks on other nodes (every
 * rank with MPIR_CVAR_NOLOCAL=1).  They run over the verbs AM channel
 * (verbs/gdr_verbs_am.h): eager up to the eager buffer, rendezvous above. */
#ifndef GDR_AM_H_INCLUDED
#define GDR_AM_H_INCLUDED

#include "gdr_impl.h"

/* Eager buffer and wire overhead (gdr_verbs_wire.h: 24-byte header, AM header padded
 * to 8, 24-byte RTS body); the AM header always travels in one eager buffer.  16 KiB
 * of payload and room for MPIDIG's headers, so a 16-KiB Accumulate or Get_accumulate
 * result goes eagerly (MPICH patch 0019 sizes the pack buffers to match). */
#define MPIDI_GDR_AM_EAGER_BUF_SZ (16384 + 512)
#define MPIDI_GDR_AM_WIRE_HDR_SZ  56
#define MPIDI_GDR_AM_HDR_MAX_SZ   (MPIDI_GDR_AM_EAGER_BUF_SZ - MPIDI_GDR_AM_WIRE_HDR_SZ)

/* gdr_am.c: the paths behind the entry points below.  The VCIs travel with the
 * message: a reserved VCI (an MPIX_Stream's) has its own queues at the target. */
/* A standard-mode message of a predefined type from host memory that fits the channel's
 * eager limit, sent as MPIDIG's eager MPIDIG_SEND message with no request (*sent 1: the
 * data is copied, the send complete); *sent 0: MPIDIG's isend takes it. */
int MPIDI_GDR_send_eager(const void *buf, MPI_Aint count, MPI_Datatype datatype, int rank,
                         int tag, MPIR_Comm * comm, int attr, int src_vci, int dst_vci,
                         int *sent);
int MPIDI_GDR_am_send(int rank, MPIR_Comm * comm, int handler_id, const void *am_hdr,
                      MPI_Aint am_hdr_sz, const void *data, MPI_Aint count,
                      MPI_Datatype datatype, int src_vci, int dst_vci, MPIR_Request * sreq);
MPI_Aint MPIDI_GDR_am_eager_payload_limit(void);

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr(int rank, MPIR_Comm * comm, int handler_id,
                                                  const void *am_hdr, MPI_Aint am_hdr_sz,
                                                  int src_vci, int dst_vci)
{
    return MPIDI_GDR_am_send(rank, comm, handler_id, am_hdr, am_hdr_sz, NULL, 0, MPIR_BYTE_INTERNAL,
                             src_vci, dst_vci, NULL);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend(int rank, MPIR_Comm * comm, int handler_id,
                                               const void *am_hdr, MPI_Aint am_hdr_sz,
                                               const void *data, MPI_Aint count,
                                               MPI_Datatype datatype, int src_vci, int dst_vci,
                                               MPIR_Request * sreq)
{
    return MPIDI_GDR_am_send(rank, comm, handler_id, am_hdr, am_hdr_sz, data, count, datatype,
                             src_vci, dst_vci, sreq);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr_reply(MPIR_Comm * comm, int src_rank,
                                                        int handler_id, const void *am_hdr,
                                                        MPI_Aint am_hdr_sz, int src_vci,
                                                        int dst_vci)
{
    return MPIDI_GDR_am_send(src_rank, comm, handler_id, am_hdr, am_hdr_sz, NULL, 0,
                             MPIR_BYTE_INTERNAL, src_vci, dst_vci, NULL);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend_reply(MPIR_Comm * comm, int src_rank,
                                                     int handler_id, const void *am_hdr,
                                                     MPI_Aint am_hdr_sz, const void *data,
                                                     MPI_Aint count, MPI_Datatype datatype,
                                                     int src_vci, int dst_vci,
                                                     MPIR_Request * sreq)
{
    return MPIDI_GDR_am_send(src_rank, comm, handler_id, am_hdr, am_hdr_sz, data, count,
                             datatype, src_vci, dst_vci, sreq);
}

/* gdr_am.c: completes an unexpected message gdr kept once a receive matches it (the only
 * messages gdr hands MPIDIG as the transport's rendezvous: gdr_am.c's deliver_to_recv). */
int MPIDI_GDR_unexp_data_copy(MPIR_Request * rreq);

MPL_STATIC_INLINE_PREFIX MPIDIG_recv_data_copy_cb MPIDI_NM_am_get_data_copy_cb(uint32_t attr)
{
    return MPIDI_GDR_unexp_data_copy;
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_hdr_max_sz(void)
{
    return MPIDI_GDR_AM_HDR_MAX_SZ;
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_limit(void)
{
    return MPIDI_GDR_am_eager_payload_limit();
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_buf_limit(void)
{
    return MPIDI_GDR_AM_EAGER_BUF_SZ;
}

MPL_STATIC_INLINE_PREFIX bool MPIDI_NM_am_check_eager(MPI_Aint am_hdr_sz, MPI_Aint data_sz,
                                                      const void *data, MPI_Aint count,
                                                      MPI_Datatype datatype, MPIR_Request * sreq)
{
    return am_hdr_sz + data_sz <= MPIDI_GDR_am_eager_payload_limit();
}

/* No tagged transport under the AM channel: MPIDIG sends rendezvous data with
 * am_isend_reply and never calls the two below. */
MPL_STATIC_INLINE_PREFIX bool MPIDI_NM_am_can_do_tag(MPIR_Request * rreq)
{
    return false;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_tag_send(int rank, MPIR_Comm * comm, int handler_id,
                                                  int tag, const void *buf, MPI_Aint count,
                                                  MPI_Datatype datatype, int src_vci,
                                                  int dst_vci, MPIR_Request * sreq)
{
    MPIR_Assert(0);
    return MPI_ERR_INTERN;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_tag_recv(int rank, MPIR_Comm * comm, int handler_id,
                                                  int tag, void *buf, MPI_Aint count,
                                                  MPI_Datatype datatype, int src_vci,
                                                  int dst_vci, MPIR_Request * rreq)
{
    MPIR_Assert(0);
    return MPI_ERR_INTERN;
}

#endif /* GDR_AM_H_INCLUDED */
