/* Memory: what a pointer is, and memory the GPU layer allocates or pins.  Pointers are
 * plain void * in unified addressing: device and host memory share one address space,
 * but device memory must not be touched by the host (copy it with gdr_gpu_copy*). */
#ifndef GDR_GPU_MEM_H
#define GDR_GPU_MEM_H

#include <stdint.h>
#include "gdr_gpu.h"

typedef struct gdr_gpu_mem_info {
    int is_device;              /* device memory (cuMemAlloc, an IPC mapping, managed) */
    int is_managed;             /* managed memory (the host may touch it; also is_device) */
    int is_pinned_host;         /* host memory CUDA knows: cuMemHostAlloc or registered */
    int device;                 /* ordinal of its device; -1 for host memory */
    uint64_t buffer_id;         /* CUDA's id of the allocation, unique in this process for
                                   its lifetime; 0 for memory CUDA does not know */
    uintptr_t base;             /* the allocation holding the pointer (0 if unknown) */
    size_t size;                /* its size (0 if unknown) */
} gdr_gpu_mem_info_t;

/* What `p` is, from one driver query.  Host memory CUDA does not know (malloc, stack) is
 * is_device == 0 with buffer_id 0, never an error.  0, or negative when the driver fails
 * (e.g. after a sticky error), info then zeroed with device -1. */
int gdr_gpu_mem_query(gdr_gpu_t *g, const void *p, gdr_gpu_mem_info_t *info);

/* n bytes of device memory of g's device (n > 0), at *p.  The memory is not initialised. */
int gdr_gpu_mem_alloc(gdr_gpu_t *g, size_t n, void **p);
/* Frees what gdr_gpu_mem_alloc returned; work still queued on it must have completed. */
int gdr_gpu_mem_free(gdr_gpu_t *g, void *p);

/* n bytes of pinned host memory, mapped for every device at the same address (the host
 * and kernels both may touch it). */
int gdr_gpu_host_alloc(gdr_gpu_t *g, size_t n, void **p);
int gdr_gpu_host_free(gdr_gpu_t *g, void *p);

/* Pins [p, p+n) and maps it for the device.  *dev_p (if dev_p is not NULL): the address
 * kernels and stream memory operations must use for p (the driver may give another one
 * than p).  Registering overlapping ranges twice fails (-EINVAL). */
int gdr_gpu_host_register(gdr_gpu_t *g, void *p, size_t n, void **dev_p);
/* Unpins what gdr_gpu_host_register pinned; p is the pointer registered. */
int gdr_gpu_host_unregister(gdr_gpu_t *g, void *p);

/* A dmabuf file descriptor for the device allocation holding [p, p+n), for
 * ibv_reg_dmabuf_mr: *fd covers the host pages the allocation spans, [p, p+n) must lie
 * in them, and *offset is p's offset in the dmabuf.  The caller closes *fd.  -ENOTSUP, with the reason, where the driver or
 * device cannot (g->features lacks GDR_GPU_DMABUF). */
int gdr_gpu_dmabuf_export(gdr_gpu_t *g, const void *p, size_t n, int *fd, uint64_t *offset);

/* For a registration of [*p, *p + *n) made around `asked` (the range may be rounded out to
 * pages): 1 if `asked` is not device memory (register it by address); 0 with *fd as above
 * and [*p, *p + *n) narrowed to the pages of the allocation holding `asked`; negative with
 * the reason otherwise. */
int gdr_gpu_dmabuf_export_around(gdr_gpu_t *g, const void *asked, void **p, size_t *n, int *fd,
                                 uint64_t *offset);

#endif /* GDR_GPU_MEM_H */
