/* The RMA engine's device seam (gdr_rma_device_t, src/rma/gdr_rma_transport.h) over the
 * GPU layer (src/gpu), as gdr_verbs_rma_transport.h implements the transport seam over
 * verbs: host_alloc is gdr_gpu_host_alloc (pinned, mapped for the device at the same
 * address), a queue is a gdr_gpu_stream_t of its own, copyv one gdr_gpu_copy_async per
 * piece pair, acc gdr_gpu_acc_launch, copy_runs gdr_gpu_copy_pieces_launch, a mark an
 * event (recycled), buffer_id gdr_gpu_mem_query's id, addressable its device or
 * page-locked memory, mem_alloc gdr_gpu_mem_alloc.
 * Errors are g->error's sentences.  Not thread safe (as the seam); the calling thread
 * has g's context current (gdr_gpu_bind_thread). */
#ifndef GDR_GPU_RMA_DEVICE_H
#define GDR_GPU_RMA_DEVICE_H

#include "gpu/gdr_gpu.h"
#include "rma/gdr_rma_transport.h"

typedef struct gdr_gpu_rma_mark gdr_gpu_rma_mark_t;

typedef struct gdr_gpu_rma_device {
    gdr_gpu_t *g;
    gdr_gpu_rma_mark_t *spare;          /* marks given back, their events kept for reuse */
    gdr_gpu_rma_mark_t *made;           /* every mark made, for fini */
    unsigned long marks_made;           /* events created */
    unsigned long marks_out;            /* marks not given back */
    int acc_kernel, copy_kernel;        /* gdr's kernels: 0 not asked yet, 1 loaded, -1 not */
} gdr_gpu_rma_device_t;

/* Fills *seam with d's members (seam->ctx = d); g is open and stays so until
 * gdr_gpu_rma_device_fini.  A queue the seam hands out is a gdr_gpu_stream_t (non-blocking), so stream memory
 * operations may be queued on it too.  acc and copy_runs load gdr's kernel image at
 * their first use.  Allocates nothing yet; 0. */
int gdr_gpu_rma_device_init(gdr_gpu_rma_device_t *d, gdr_gpu_t *g, gdr_rma_device_t *seam);

/* Destroys the events of every mark, given back or not.  The caller has freed its queues
 * and host memory. */
void gdr_gpu_rma_device_fini(gdr_gpu_rma_device_t *d);

#endif /* GDR_GPU_RMA_DEVICE_H */
