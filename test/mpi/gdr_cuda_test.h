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
#include <string.h>

typedef int (*gdr_cu_get_proc_fn)(const char *, void **, int, uint64_t, int *);

static struct {
    int (*init)(unsigned);
    int (*device_count)(int *);
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

static int cuda_device, cuda_devices = 1;     /* cuda_open's device, and how many */

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
    RESOLVE(device_count, "cuDeviceGetCount");
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
    int dev, count = 1, ordinal = 0;
    void *ctx;
    if (cu.init(0) != 0 || cu.device_count(&count) != 0 || count < 1) {
        fprintf(stderr, "no usable CUDA device\n");
        return -1;
    }
    /* GDR_TEST_DEVICE_BY_RANK: the node's ranks take its devices in turn (called before
     * MPI_Init, this context is the one gdr takes: hydra's MPI_LOCALRANKID says which) */
    const char *local = getenv("MPI_LOCALRANKID");
    if (getenv("GDR_TEST_DEVICE_BY_RANK") != NULL && local != NULL)
        ordinal = atoi(local) % count;
    if (cu.device_get(&dev, ordinal) != 0 || cu.ctx_retain(&ctx, dev) != 0
        || cu.ctx_set(ctx) != 0) {
        fprintf(stderr, "no usable CUDA device\n");
        return -1;
    }
    cuda_device = ordinal;
    cuda_devices = count;
    return 0;
}

#ifdef GDR_MPI_TEST_H_INCLUDED
/* Device memory for MPI tests: failures end the job (gdr_test_die). */
static inline void *dev_alloc(size_t n)
{
    uint64_t p = 0;
    if (cu.alloc(&p, n) != 0)
        gdr_test_die("cuMemAlloc", MPI_ERR_NO_MEM);
    return (void *) (uintptr_t) p;
}

static inline void dev_free(void *p)
{
    cu.free((uint64_t) (uintptr_t) p);
}

/* Any direction (unified addressing), then a context synchronisation: a cuMemcpy from
 * pageable host memory may return before the device has the data, and MPI reads device
 * buffers on streams of its own (CUDA-aware MPI wants buffers complete when handed over). */
static inline void dev_copy(void *dst, const void *src, size_t n)
{
    if (cu.copy((uint64_t) (uintptr_t) dst, (uint64_t) (uintptr_t) src, n) != 0
        || cu.ctx_sync() != 0)
        gdr_test_die("cuMemcpy", MPI_ERR_OTHER);
}

/* In an MPI test after MPI_Init, with cuda_open's result (rc; cuda_open_or_end calls it
 * here): nothing if it opened, else the job's verdict given (a failure: these tests need
 * a GPU or the simulated one), MPI finalized and the process ended. */
static inline void cuda_opened_or_end(int rc)
{
    if (rc == 0)
        return;
    gdr_test_fail("no usable CUDA driver: this test needs a GPU or the simulated one");
    long e = gdr_test_finish();
    MPI_Finalize();
    exit(e != 0);
}

static inline void cuda_open_or_end(void)
{
    cuda_opened_or_end(cuda_open());
}

/* The start of a GPU test that reads MPI_T counters: the driver opened before MPI_Init (gdr
 * takes the device whose context is current then), MPI and an MPI_T session up, this rank
 * and the job's size; without a driver, the verdict given and the process ended. */
static inline void gpu_mpi_test_init(int *argc, char ***argv, MPI_T_pvar_session *session,
                                     int *rank, int *size)
{
    int provided, cuda_rc = cuda_open();
    MPI_Init(argc, argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(session);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    cuda_opened_or_end(cuda_rc);
}

/* The start of a device-API test (host threads play the kernel, gdr's progress thread serves
 * the ring): MPI at MPI_THREAD_MULTIPLE and the driver open, this rank and the job's size;
 * the job ends (abort) without either. */
static inline void dev_api_test_init(int *argc, char ***argv, int *rank, int *size)
{
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    if (provided != MPI_THREAD_MULTIPLE || cuda_open() != 0) {
        fprintf(stderr, "rank %d: needs MPI_THREAD_MULTIPLE (got %d) and a CUDA driver\n", *rank,
                provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}
#endif

/* Whether the driver lacks gdr's copy kernel: the simulated GPU hides it when
 * GDR_GPUSIM_HIDE names it (gdr then copies with the copy engine). */
static inline int gdr_test_copy_kernel_hidden(void)
{
    const char *hide = getenv("GDR_GPUSIM_HIDE");
    return hide != NULL && strstr(hide, "gdr_gpu_copy_kernel") != NULL;
}

/* Whether gdr's copy kernel packs a message's device blocks of block bytes:
 * MPIR_CVAR_CH4_GDR_PACK_KERNEL_MAX (default 16384) at least that, the kernel not hidden. */
static inline int gdr_test_pack_kernel(size_t block)
{
    const char *max = getenv("MPIR_CVAR_CH4_GDR_PACK_KERNEL_MAX");
    return (max == NULL || atoll(max) >= (long long) block) && !gdr_test_copy_kernel_hidden();
}

#endif /* GDR_CUDA_TEST_H_INCLUDED */
