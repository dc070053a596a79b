/* The CUDA driver for test programs, reached as gdr reaches it: dlopen the library that
 * MPIR_CVAR_CH4_GDR_CUDA_DRIVER names (the simulated GPU, test/gpusim) or libcuda.so.1,
 * then cuGetProcAddress for each entry point; the primary context of device 0 made
 * current.  Header-only, for gpu_rma_sim, stream_rma_sim and device_api_sim. */
#ifndef GDR_CUDA_TEST_H_INCLUDED
#define GDR_CUDA_TEST_H_INCLUDED

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*gdr_cu_get_proc_fn)(const char *, void **, int, uint64_t, int *);

static struct {
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*ctx_retain)(void **, int);
    int (*ctx_set)(void *);
    int (*alloc)(uint64_t *, size_t);
    int (*free)(uint64_t);
    int (*host_alloc)(void **, size_t, unsigned);
    int (*free_host)(void *);
    int (*copy)(uint64_t, uint64_t, size_t);
    int (*copy_async)(uint64_t, uint64_t, size_t, void *);
    int (*memset_async)(uint64_t, unsigned char, size_t, void *);
    int (*stream_create)(void **, unsigned);
    int (*stream_sync)(void *);
    int (*stream_query)(void *);
    int (*stream_destroy)(void *);
    int (*ctx_sync)(void);
    int (*ptr_attrs)(unsigned, unsigned *, void **, uint64_t);
} cu;

/* 0, or -1 with the reason on stderr */
static inline int cuda_open(void)
{
    const char *path = getenv("MPIR_CVAR_CH4_GDR_CUDA_DRIVER");
    void *h = dlopen(path != NULL && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gdr_cu_get_proc_fn gp = h != NULL ? (gdr_cu_get_proc_fn) dlsym(h, "cuGetProcAddress_v2")
        : NULL;
    if (gp == NULL) {
        fprintf(stderr, "no CUDA driver (%s): set MPIR_CVAR_CH4_GDR_CUDA_DRIVER\n",
                h == NULL ? dlerror() : "no cuGetProcAddress_v2");
        return -1;
    }
#define RESOLVE(field, name) \
    if (gp(name, (void **) &cu.field, 12000, 0, NULL) != 0) { \
        fprintf(stderr, "the CUDA driver has no %s\n", name); \
        return -1; \
    }
    RESOLVE(init, "cuInit");
    RESOLVE(device_get, "cuDeviceGet");
    RESOLVE(ctx_retain, "cuDevicePrimaryCtxRetain");
    RESOLVE(ctx_set, "cuCtxSetCurrent");
    RESOLVE(alloc, "cuMemAlloc");
    RESOLVE(free, "cuMemFree");
    RESOLVE(host_alloc, "cuMemHostAlloc");
    RESOLVE(free_host, "cuMemFreeHost");
    RESOLVE(copy, "cuMemcpy");
    RESOLVE(copy_async, "cuMemcpyAsync");
    RESOLVE(memset_async, "cuMemsetD8Async");
    RESOLVE(stream_create, "cuStreamCreate");
    RESOLVE(stream_sync, "cuStreamSynchronize");
    RESOLVE(stream_query, "cuStreamQuery");
    RESOLVE(stream_destroy, "cuStreamDestroy");
    RESOLVE(ctx_sync, "cuCtxSynchronize");
    RESOLVE(ptr_attrs, "cuPointerGetAttributes");
#undef RESOLVE
    int dev;
    void *ctx;
    if (cu.init(0) != 0 || cu.device_get(&dev, 0) != 0 || cu.ctx_retain(&ctx, dev) != 0
        || cu.ctx_set(ctx) != 0) {
        fprintf(stderr, "no usable CUDA device\n");
        return -1;
    }
    return 0;
}

#endif /* GDR_CUDA_TEST_H_INCLUDED */
