/* Active-message entry points.  CH4 calls them only for ranks on other nodes;
 * until the verbs AM channel exists, such jobs are refused at init
 * (gdr_init.c), and these report the missing transport if ever reached. */
#ifndef GDR_AM_H_INCLUDED
#define GDR_AM_H_INCLUDED

#include "gdr_impl.h"

/* Wire limits of the future AM channel; MPIDIG checks its headers against them. */
#define MPIDI_GDR_AM_EAGER_BUF_SZ 16384
#define MPIDI_GDR_AM_WIRE_HDR_SZ  32

/* The MPI error for an operation that needs the inter-node transport (gdr_init.c). */
int MPIDI_GDR_no_transport(int rank, MPIR_Comm * comm);

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr(int rank, MPIR_Comm * comm, int handler_id,
                                                  const void *am_hdr, MPI_Aint am_hdr_sz,
                                                  int src_vci, int dst_vci)
{
    return MPIDI_GDR_no_transport(rank, comm);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend(int rank, MPIR_Comm * comm, int handler_id,
                                               const void *am_hdr, MPI_Aint am_hdr_sz,
                                               const void *data, MPI_Aint count,
                                               MPI_Datatype datatype, int src_vci, int dst_vci,
                                               MPIR_Request * sreq)
{
    return MPIDI_GDR_no_transport(rank, comm);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr_reply(MPIR_Comm * comm, int src_rank,
                                                        int handler_id, const void *am_hdr,
                                                        MPI_Aint am_hdr_sz, int src_vci,
                                                        int dst_vci)
{
    return MPIDI_GDR_no_transport(src_rank, comm);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend_reply(MPIR_Comm * comm, int src_rank,
                                                     int handler_id, const void *am_hdr,
                                                     MPI_Aint am_hdr_sz, const void *data,
                                                     MPI_Aint count, MPI_Datatype datatype,
                                                     int src_vci, int dst_vci,
                                                     MPIR_Request * sreq)
{
    return MPIDI_GDR_no_transport(src_rank, comm);
}

MPL_STATIC_INLINE_PREFIX MPIDIG_recv_data_copy_cb MPIDI_NM_am_get_data_copy_cb(uint32_t attr)
{
    return NULL;        /* MPIDIG's default copy */
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_hdr_max_sz(void)
{
    return MPIDI_GDR_AM_EAGER_BUF_SZ - MPIDI_GDR_AM_WIRE_HDR_SZ;
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_limit(void)
{
    return MPIDI_GDR_AM_EAGER_BUF_SZ - MPIDI_GDR_AM_WIRE_HDR_SZ;
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_buf_limit(void)
{
    return MPIDI_GDR_AM_EAGER_BUF_SZ;
}

MPL_STATIC_INLINE_PREFIX bool MPIDI_NM_am_check_eager(MPI_Aint am_hdr_sz, MPI_Aint data_sz,
                                                      const void *data, MPI_Aint count,
                                                      MPI_Datatype datatype, MPIR_Request * sreq)
{
    return am_hdr_sz + data_sz <= MPIDI_NM_am_eager_limit();
}

#endif /* GDR_AM_H_INCLUDED */
