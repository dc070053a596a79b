/* The kinds of one-sided operation.  Its own header because the netmod's inline RMA
 * entry points (which MPICH includes nearly everywhere) need only this of the engine. */
#ifndef GDR_RMA_KIND_H
#define GDR_RMA_KIND_H

typedef enum gdr_rma_kind {
    GDR_RMA_PUT, GDR_RMA_GET, GDR_RMA_ACC, GDR_RMA_GET_ACC, GDR_RMA_FOP, GDR_RMA_CAS,
    GDR_RMA_KINDS
} gdr_rma_kind_t;

#endif /* GDR_RMA_KIND_H */
