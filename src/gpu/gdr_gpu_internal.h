/* Shared by the GPU layer's own files (gdr_gpu*.c) and the adapters over it in src/adapt
 * (gdr_gpu_rma_device.c, gdr_gpu_rma_stream.c); not for its other users. */
#ifndef GDR_GPU_INTERNAL_H
#define GDR_GPU_INTERNAL_H

#include <stdint.h>
#include "gdr_gpu.h"

/* Records "<call> failed (CUresult N NAME: text); <hint>" in g->error and returns the
 * negative errno value that matches rc (-ENOMEM, -ENOTSUP, -EINVAL, -ENOENT, -EIO...).
 * INVALID_CONTEXT and ILLEGAL_ADDRESS always get their own remedy (bind the thread; the
 * context is lost); hint NULL: a pointer to the driver's documentation. */
int gdr_gpu_fail(gdr_gpu_t *g, const char *call, gdr_cu_result_t rc, const char *hint);

/* Records a failure that is not a CUDA call's (printf-style) and returns -err. */
int gdr_gpu_refuse(gdr_gpu_t *g, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* -ENODEV for a context that is not on (never opened, failed, closed): every public
 * function's answer then, instead of calling a driver that is not there.  g->error keeps
 * the reason gdr_gpu_open gave, if any. */
int gdr_gpu_off(gdr_gpu_t *g);

/* An entry point the probe does not resolve (newer than the CUDA 12.0 ABI gdr needs),
 * looked up now in the loaded driver for `cuda_version`; NULL where it has none. */
void *gdr_gpu_driver_entry(const gdr_gpu_driver_t *drv, const char *name, int cuda_version);

/* A pointer as the driver takes it (unified addressing: any host or device address). */
static inline gdr_cu_ptr_t gdr_gpu_ptr(const void *p)
{
    return (gdr_cu_ptr_t) (uintptr_t) p;
}

#endif /* GDR_GPU_INTERNAL_H */
