/* Atomic steps for the accumulate executor (gdr_gpu_acc.h), asked for in args.op so that
 * the kernel's argument struct, which every MPICH file sees through gdr's transport seam,
 * stays as it is.  gdr_gpu_acc.h's "no atomics" holds for a window's own internal stream
 * alone: same-node origins apply accumulates through CUDA IPC at the same time, and the
 * target's staged protocol beside them.
 *
 * args.op | GDR_GPU_ACC_ATOMIC: each element is one atomic step (a native atomic or a
 * compare-and-swap loop on the aligned word holding it, system scope), so origins that
 * apply accumulates to one window at once never lose an update.  That takes elements of at
 * most 8 bytes at addresses aligned to their size (gdr_gpu_acc_atomic_ok); a launch asking
 * for more is refused, and the executor touches nothing for it. */
#ifndef GDR_GPU_ACC_ATOMIC_H
#define GDR_GPU_ACC_ATOMIC_H

#include "gdr_gpu_acc.h"

#define GDR_GPU_ACC_ATOMIC 0x10000      /* or'ed into args.op */
#define GDR_GPU_ACC_OP_MASK 0xffff      /* args.op & this: the gdr_gpu_op_t */

/* 1 when GDR_GPU_ACC_ATOMIC may be asked for on `type` at `target`: elements of 1, 2, 4
 * or 8 bytes (not double complex, DOUBLE_INT, LONG_INT) at an address aligned to the
 * element's size (8-byte types: to 8, though some of them need only 4 for plain access). */
int gdr_gpu_acc_atomic_ok(int type, const void *target);

#endif /* GDR_GPU_ACC_ATOMIC_H */
