/* The accumulate executor for device windows: MPI's predefined reductions applied to
 * window memory by one kernel, so a device window is never staged through host memory
 * (DESIGN.md section 3).  The element loop is written once (gdr_gpu_acc_body.h) as
 * __host__ __device__ code: nvcc builds it into the fatbin gdr loads through the driver,
 * and the same source compiles for the host, where the unit tests and the simulated GPU
 * run it.  Plain C; knows nothing of MPI's handles: the netmod maps MPI_Op and the
 * predefined datatypes onto the enums below.
 *
 * Guarantees: element i of the result gets the target's element i as it was before
 * the operation; the target then holds op(target, origin) per element, with the
 * target as MPI's "inout" operand (the same operand order and the same arithmetic as
 * MPICH's host reductions, so a value does not depend on which side applied it).
 * No atomics: gdr runs every accumulate of a window on one internal stream, so
 * accumulates to a window never overlap each other. */
#ifndef GDR_GPU_ACC_H
#define GDR_GPU_ACC_H

#include <stddef.h>
#include <stdint.h>

typedef enum gdr_gpu_op {
    GDR_GPU_OP_SUM,
    GDR_GPU_OP_PROD,
    GDR_GPU_OP_MAX,
    GDR_GPU_OP_MIN,
    GDR_GPU_OP_LAND,
    GDR_GPU_OP_LOR,
    GDR_GPU_OP_LXOR,
    GDR_GPU_OP_BAND,
    GDR_GPU_OP_BOR,
    GDR_GPU_OP_BXOR,
    GDR_GPU_OP_MAXLOC,
    GDR_GPU_OP_MINLOC,
    GDR_GPU_OP_REPLACE,         /* MPI_REPLACE: target = origin */
    GDR_GPU_OP_NO_OP,           /* MPI_NO_OP: target unchanged (a fetch) */
    GDR_GPU_OP_CSWAP,           /* compare-and-swap: target = origin where target == compare */
    GDR_GPU_OP_COUNT
} gdr_gpu_op_t;

/* Element types, by representation (the netmod maps e.g. MPI_INT and MPI_INT32_T to
 * INT32, MPI_LONG to INT64 on LP64).  The pair types are MPI's MINLOC/MAXLOC types with
 * C's layout: struct { value; int index; }. */
typedef enum gdr_gpu_type {
    GDR_GPU_T_INT8,
    GDR_GPU_T_INT16,
    GDR_GPU_T_INT32,
    GDR_GPU_T_INT64,
    GDR_GPU_T_UINT8,
    GDR_GPU_T_UINT16,
    GDR_GPU_T_UINT32,
    GDR_GPU_T_UINT64,
    GDR_GPU_T_FLOAT,
    GDR_GPU_T_DOUBLE,
    GDR_GPU_T_BOOL,             /* C _Bool, one byte */
    GDR_GPU_T_FLOAT_COMPLEX,    /* float _Complex */
    GDR_GPU_T_DOUBLE_COMPLEX,   /* double _Complex */
    GDR_GPU_T_FLOAT_INT,        /* MPI_FLOAT_INT */
    GDR_GPU_T_DOUBLE_INT,       /* MPI_DOUBLE_INT */
    GDR_GPU_T_LONG_INT,         /* MPI_LONG_INT (long is 8 bytes) */
    GDR_GPU_T_2INT,             /* MPI_2INT */
    GDR_GPU_T_SHORT_INT,        /* MPI_SHORT_INT */
    GDR_GPU_T_COUNT
} gdr_gpu_type_t;

/* One launch's arguments, passed by value as the kernel's only parameter.  Pointers are
 * device addresses (or host memory the device can address: pinned, registered), each
 * aligned for its element type, as MPICH's host reductions assume too (a misaligned
 * device access faults). */
typedef struct gdr_gpu_acc_args {
    void *target;               /* `count` elements of window memory */
    const void *origin;         /* `count` operand elements; unused for NO_OP */
    void *result;               /* NULL, or `count` elements: the target's values before */
    const void *compare;        /* CSWAP only: `count` elements to compare with */
    uint64_t count;
    int32_t op;                 /* gdr_gpu_op_t */
    int32_t type;               /* gdr_gpu_type_t */
} gdr_gpu_acc_args_t;

/* The kernel's name in the fatbin (extern "C"), for cuModuleGetFunction. */
#define GDR_GPU_ACC_KERNEL "gdr_gpu_acc_kernel"

/* Bytes of one element of `type`; 0 for a value outside the enum. */
size_t gdr_gpu_type_size(int type);

/* 1 when MPI defines `op` on `type` (e.g. BAND on integers, not on bool or floats; LAND
 * on integers and bool; MAXLOC/MINLOC on the pair types only; SUM/PROD/REPLACE/NO_OP on
 * complex; CSWAP on integers and bool), else 0. */
int gdr_gpu_acc_valid(int op, int type);

/* Applies the whole operation on the host, in the calling thread (unit tests, the
 * simulated GPU).  The arguments must be valid (gdr_gpu_acc_valid); pointers are host
 * addresses here. */
void gdr_gpu_acc_apply(const gdr_gpu_acc_args_t *args);

#endif /* GDR_GPU_ACC_H */
