/* Kernels: images loaded into the context, launched by name on a stream. */
#ifndef GDR_GPU_MODULE_H
#define GDR_GPU_MODULE_H

#include "gdr_gpu.h"
#include "gdr/gpu/gdr_gpu_acc.h"
#include "gdr_gpu_copy_body.h"
#include "gdr_gpu_stream.h"

#define GDR_GPU_ACC_BLOCK 256           /* threads per block of the accumulate kernel */
#define GDR_GPU_ACC_GRID_MAX 1024       /* its most blocks (the kernel loops grid-stride) */

/* Loads a kernel image (fatbin, cubin or PTX; the simulated GPU takes any bytes) into g's
 * context: its kernels become launchable by name until gdr_gpu_close.  size: the image's
 * bytes, for messages (the driver reads the image's own headers).  At most
 * GDR_GPU_MODULES_MAX images; -ENOTSUP without GDR_GPU_KERNELS. */
int gdr_gpu_module_load(gdr_gpu_t *g, const void *image, size_t size);

/* Queues kernel `name` of a loaded image on s: grid_x blocks of block_x threads, params as
 * cuLaunchKernel's kernelParams (params[i] points to argument i; the values are copied
 * by the call, so they may change once it returns).  -ENOENT when no loaded image has the
 * kernel.  Functions found are cached in g. */
int gdr_gpu_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, const char *name, unsigned grid_x,
                   unsigned block_x, void **params);

/* Blocks of GDR_GPU_ACC_BLOCK threads for `count` elements: one per block's worth, at most
 * GDR_GPU_ACC_GRID_MAX (the kernel loops grid-stride over the rest); 0 for 0. */
unsigned gdr_gpu_acc_grid(uint64_t count);

/* Queues GDR_GPU_ACC_KERNEL over args->count elements on s (gdr_gpu_acc_grid blocks);
 * *args is copied by the call.  args must be valid (gdr_gpu_acc_valid) with pointers the
 * device can reach (device memory, pinned or registered host memory).  count 0 queues
 * nothing; -EINVAL when args->op asks for atomic steps that gdr_gpu_acc_atomic_ok
 * refuses on args->target. */
int gdr_gpu_acc_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, const gdr_gpu_acc_args_t *args);

/* 0 when kernel `name` can be launched: found in a loaded image, else found after
 * loading `image` (size bytes); else the error of gdr_gpu_module_load or -ENOENT.  For
 * users that may come before (or without) whoever loads gdr's image at start-up. */
int gdr_gpu_kernel_ready(gdr_gpu_t *g, const char *name, const void *image, size_t size);

/* Every kernel of `names` found (loading `image` if none has them) and loaded onto the
 * device now, with cuFuncLoad where the driver has it (CUDA 12.4).  Under lazy loading
 * (CUDA's default since 12.2) a kernel's code otherwise goes to the device at its first
 * launch, which waits for work already queued in the context: a first launch made while
 * another stream waits for something only that launch would bring about never returns.
 * So gdr loads its kernels at start-up.  0, or the error of gdr_gpu_kernel_ready or of
 * cuFuncLoad. */
int gdr_gpu_kernels_load_now(gdr_gpu_t *g, const char *const *names, int n, const void *image,
                             size_t size);

#define GDR_GPU_SIGNAL_ADD_KERNEL "gdr_gpu_signal_add_kernel"

/* Queues an atomic add of value to the 8-byte aligned word (device memory, a peer's
 * memory mapped through CUDA IPC, or pinned host memory) on s: atomic with respect to
 * other adds from any GPU or process, after the work queued before it on s. */
int gdr_gpu_signal_add_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, uint64_t *word, uint64_t value);

#define GDR_GPU_SIGNAL_WAIT_KERNEL "gdr_gpu_signal_wait_kernel"

/* Queues a kernel of one thread that polls the 8-byte aligned word until it meets
 * comparison cmp (GDR_CMP_*, gdr/gdr_rma_signal.h: unsigned) against value: the work
 * queued after it on s waits.  It holds a slot of the GPU while it polls. */
int gdr_gpu_signal_wait_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, const uint64_t *word,
                               uint64_t value, int cmp);

#define GDR_GPU_COPY_KERNEL "gdr_gpu_copy_kernel"
#define GDR_GPU_COPY_BLOCK 256          /* threads per block of the copy kernel */
#define GDR_GPU_COPY_GRID_MAX 64        /* its most blocks: it is for small copies */

/* Queues one launch of GDR_GPU_COPY_KERNEL on s that copies the n pieces (each len bytes
 * from src to dst, addresses the GPU reaches: device memory, a peer's mapped through CUDA
 * IPC, pinned or registered host memory), for copies too small or too scattered for the
 * copy engine to pay.  1 <= n <= GDR_GPU_COPY_PIECES_MAX (-EINVAL otherwise); pieces of 0
 * bytes are dropped, and when all are, nothing is queued; pieces must not overlap. */
int gdr_gpu_copy_pieces_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, const gdr_gpu_copy_piece_t *p,
                               unsigned n);

#endif /* GDR_GPU_MODULE_H */
