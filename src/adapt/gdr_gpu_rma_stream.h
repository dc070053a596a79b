/* The stream queue's stream seam (gdr_sq_stream_t, src/rma/gdr_rma_stream_queue.h) over
 * the GPU layer (src/gpu): write_u64 and wait_geq_u64 are stream memory operations
 * (cuStreamWriteValue64, cuStreamWaitValue64 GEQ), copy is gdr_gpu_copy_async; errors
 * are g->error's sentences.  The stream is the application's (a CUstream), used as is;
 * the calling thread has g's context current. */
#ifndef GDR_GPU_RMA_STREAM_H
#define GDR_GPU_RMA_STREAM_H

#include "gpu/gdr_gpu.h"
#include "gpu/gdr_gpu_stream.h"
#include "rma/gdr_rma_stream_queue.h"

/* Fills *seam for stream s of g (seam->ctx = g).  -ENOTSUP (g->error says why) when the
 * driver has no 64-bit stream memory operations, else 0. */
int gdr_gpu_rma_stream_init(gdr_gpu_t *g, gdr_gpu_stream_t s, gdr_sq_stream_t *seam);

#endif /* GDR_GPU_RMA_STREAM_H */
