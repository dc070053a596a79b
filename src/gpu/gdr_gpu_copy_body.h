/* The piece-copy kernel's loop (GDR_GPU_COPY_KERNEL, gdr_gpu_module.h), written once as
 * __host__ __device__ code: gdr_gpu_kernels.cu runs it as a grid-stride kernel and the
 * simulated GPU on the host.  One launch copies up to GDR_GPU_COPY_PIECES_MAX pieces,
 * where as many copy-engine transfers would each cost a call and the engine's start-up:
 * small operations and scattered ones (a vector datatype's pieces) between memory the GPU
 * reaches.  It compiles as C11 and as CUDA C++.
 *
 * Each piece moves in the widest unit that its destination, source and length are all
 * aligned to (16, 8, 4 or 1 bytes), thread k of the grid taking units k, k + N, ... of
 * every piece in turn (N: the grid's threads).  Pieces must not overlap one another's
 * destinations or a destination another's source: the threads run in no order. */
#ifndef GDR_GPU_COPY_BODY_H
#define GDR_GPU_COPY_BODY_H

#include <stdint.h>

#ifndef GDR_GPU_HD
#ifdef __CUDACC__
#define GDR_GPU_HD __host__ __device__
#else
#define GDR_GPU_HD
#endif
#endif

#define GDR_GPU_COPY_PIECES_MAX 64      /* the kernel's parameters: 1544 bytes of 4 KiB */

typedef struct gdr_gpu_copy_piece {
    uint64_t dst, src;          /* addresses the GPU reaches */
    uint64_t len;               /* bytes */
} gdr_gpu_copy_piece_t;

typedef struct gdr_gpu_copy_args {
    uint64_t n;                 /* pieces used, at most GDR_GPU_COPY_PIECES_MAX */
    gdr_gpu_copy_piece_t p[GDR_GPU_COPY_PIECES_MAX];
} gdr_gpu_copy_args_t;

#ifdef __CUDACC__
typedef uint4 gdr_gpu_copy_unit16_t;    /* one 16-byte load and store */
#else
typedef struct {
    _Alignas(16) uint64_t w[2];
} gdr_gpu_copy_unit16_t;
#endif

/* The widest unit (16, 8, 4 or 1 bytes) that dst, src and len are all multiples of. */
static inline GDR_GPU_HD uint64_t gdr_gpu_copy_unit(const gdr_gpu_copy_piece_t *p)
{
    uint64_t all = p->dst | p->src | p->len;
    return all % 16 == 0 ? 16 : all % 8 == 0 ? 8 : all % 4 == 0 ? 4 : 1;
}

/* This thread's share (units first, first + stride, ...) of every piece of a. */
static inline GDR_GPU_HD void gdr_gpu_copy_range(const gdr_gpu_copy_args_t *a, uint64_t first,
                                                 uint64_t stride)
{
    uint64_t n = a->n < GDR_GPU_COPY_PIECES_MAX ? a->n : GDR_GPU_COPY_PIECES_MAX;
    for (uint64_t i = 0; i < n; i++) {
        const gdr_gpu_copy_piece_t *p = &a->p[i];
        uint64_t unit = gdr_gpu_copy_unit(p), units = p->len / unit;
        for (uint64_t k = first; k < units; k += stride) {
            switch (unit) {
                case 16:
                    ((gdr_gpu_copy_unit16_t *) (uintptr_t) p->dst)[k] =
                        ((const gdr_gpu_copy_unit16_t *) (uintptr_t) p->src)[k];
                    break;
                case 8:
                    ((uint64_t *) (uintptr_t) p->dst)[k] =
                        ((const uint64_t *) (uintptr_t) p->src)[k];
                    break;
                case 4:
                    ((uint32_t *) (uintptr_t) p->dst)[k] =
                        ((const uint32_t *) (uintptr_t) p->src)[k];
                    break;
                default:
                    ((uint8_t *) (uintptr_t) p->dst)[k] = ((const uint8_t *) (uintptr_t) p->src)[k];
            }
        }
    }
}

#endif /* GDR_GPU_COPY_BODY_H */
