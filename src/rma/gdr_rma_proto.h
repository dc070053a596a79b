/* The named protocols of one-sided operations (gdr_rma_select.h picks one).  Its own
 * header because the transport seam takes the rc protocols too: the engine decides how
 * a write or read moves its local bytes, the transport only carries it out.
 *   rc/short   the data inside the work request (inline): no copy the NIC waits for,
 *              the origin buffer free on return (puts up to the NIC's inline limit)
 *   rc/bcopy   through a registered bounce buffer: one host copy, the buffer free at once
 *   rc/zcopy   the user's contiguous buffer, registered through the cache (device memory
 *              too when the NIC reaches it)
 *   rc/iov     the user's pieces as one gather/scatter work request
 *   rc/atomic  NIC atomics, one per 8-byte element; rc/read: a NO_OP accumulate's read
 *   ipc        the same node's GPU path: the target's device window mapped here
 *   staged     device memory the NIC cannot reach: the staged protocol's pinned chunks
 *   am         MPICH's active messages, carried out by the target's CPU
 */
#ifndef GDR_RMA_PROTO_H
#define GDR_RMA_PROTO_H

typedef enum gdr_rma_proto {
    GDR_RMA_PROTO_AM = 0,
    GDR_RMA_PROTO_RC_SHORT,
    GDR_RMA_PROTO_RC_BCOPY,
    GDR_RMA_PROTO_RC_ZCOPY,
    GDR_RMA_PROTO_RC_IOV,
    GDR_RMA_PROTO_RC_ATOMIC,
    GDR_RMA_PROTO_RC_READ,
    GDR_RMA_PROTO_IPC,
    GDR_RMA_PROTO_STAGED,
    GDR_RMA_PROTOS
} gdr_rma_proto_t;

#endif /* GDR_RMA_PROTO_H */
