/* MPI's predefined ops and datatypes as the accumulate kernel's enums (gdr_gpu_acc.h), for
 * the paths that apply accumulates with it (the staged protocol, the same-node path).
 * Defined in gdr_layout.c; gdr's own files only. */
#ifndef GDR_ACC_MAP_H_INCLUDED
#define GDR_ACC_MAP_H_INCLUDED

#include "gdr_internal.h"

/* gdr_gpu_type_t of the netmod's internal datatype handle t; -1 where the kernel has none
 * (long double, derived types). */
int MPIDI_GDR_gpu_type_of(MPI_Datatype t);
/* The element type an accumulate of t applies (gdr's kernel, the staged protocol, the
 * stream's copies): t's basic type, but the value-index pairs (MPI_FLOAT_INT, MPI_DOUBLE_INT,
 * MPI_LONG_INT, MPI_SHORT_INT) are their own: MPICH 5.0.1 records no basic type for them
 * (MPI_DATATYPE_NULL), nor for a derived type built of them, which stays without one. */
MPI_Datatype MPIDI_GDR_acc_elem_type(MPI_Datatype t);
/* gdr_gpu_op_t of op for an operation of `kind` (GDR_RMA_CAS: compare-and-swap); -1 for
 * user-defined ops. */
int MPIDI_GDR_gpu_op_of(MPI_Op op, gdr_rma_kind_t kind);

#endif /* GDR_ACC_MAP_H_INCLUDED */
