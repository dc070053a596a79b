/* The simulated GPU's insides, shared by its files (README.md says what it is).
 *
 *   gpusim_entry.c    cuGetProcAddress and the name table, cuInit, devices, contexts,
 *                     error strings, unload
 *   gpusim_memory.c   the device address space, allocations, pointer queries, pinned and
 *                     registered host memory, translation of device addresses
 *   gpusim_ipc.c      IPC handles (memfds opened through /proc/<pid>/fd)
 *   gpusim_stream.c   streams (a worker thread each), events, copies, stream memory ops
 *   gpusim_module.c   modules, functions, launches;  gpusim_kernels.c  the kernels
 *
 * One lock (gpusim.lock) guards all state; one condition (gpusim.progress) is broadcast
 * whenever work completes, so that any waiter re-checks what it waits for. */
#ifndef GPUSIM_H
#define GPUSIM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpu/gdr_gpu_cuda.h"

#define GPUSIM_API __attribute__((visibility("default")))
#define GPUSIM_MAX_DEVICES 8
#define GPUSIM_DRIVER_VERSION 13000
#define GPUSIM_PARAMS_MAX 4096          /* bytes of kernel parameters one launch carries (CUDA: 4 KiB) */

enum gpusim_mode { GPUSIM_STRICT, GPUSIM_HOST_VISIBLE };

/* A primary context: one per device. */
struct CUctx_st {
    int device;
    int refs;                           /* cuDevicePrimaryCtxRetain count */
    struct CUstream_st *null_stream;    /* the legacy default stream, made on first use */
};

enum gpusim_range_kind {
    GPUSIM_DEVICE,                      /* cuMemAlloc */
    GPUSIM_IPC,                         /* cuIpcOpenMemHandle of another process's memory */
    GPUSIM_HOST_ALLOC,                  /* cuMemHostAlloc */
    GPUSIM_HOST_REGISTERED              /* cuMemHostRegister */
};

/* Memory CUDA knows, by the address its users see. */
typedef struct gpusim_range {
    uintptr_t base;
    size_t size;                        /* as asked */
    size_t mapped;                      /* page-rounded; device kinds only */
    int kind;                           /* enum gpusim_range_kind */
    int device;
    int memfd;                          /* GPUSIM_DEVICE: its memfd (IPC exports it) */
    uint64_t buffer_id;
    pid_t ipc_pid;                      /* GPUSIM_IPC: the exporter and its buffer id */
    uint64_t ipc_buffer_id;
    int ipc_refs;                       /* GPUSIM_IPC: opens not yet closed */
} gpusim_range_t;

struct gpusim {
    pthread_mutex_t lock;               /* everything below */
    pthread_cond_t progress;            /* broadcast when work completes, and at unload */
    int initialized;                    /* cuInit succeeded in process `pid` */
    pid_t pid;
    int mode;                           /* enum gpusim_mode */
    int ndev;
    int peer_access;                    /* devices map each other's memory (IPC) */
    int dmabuf;                         /* /dev/udmabuf exports device memory as dmabufs */
    struct CUctx_st ctx[GPUSIM_MAX_DEVICES];
    char *dev_base;                     /* the reserved device address range */
    char *alias_base;                   /* where the simulator reaches it (strict: another
                                           range; host-visible: dev_base) */
    size_t va_size;
    gpusim_range_t *ranges;             /* sorted by base */
    size_t nranges, cap;
    uint64_t next_id;                   /* buffer ids: pid << 32 | counter */
    struct CUstream_st *streams;        /* live streams, and destroyed ones still draining */
    struct CUevent_st *events;          /* live events */
    struct CUmod_st *modules;           /* loaded modules */
    int shutdown;                       /* the library is being unloaded */
    gdr_cu_result_t sticky;             /* a fault of queued work: every later call says so */
};

extern struct gpusim gpusim;
extern _Thread_local struct CUctx_st *gpusim_current;

/* gpusim_entry.c */
gdr_cu_result_t gpusim_need_init(void);         /* NOT_INITIALIZED unless cuInit ran here */
gdr_cu_result_t gpusim_need_current(void);      /* ... and a current, live context */
gdr_cu_result_t gpusim_need_ctx(void);          /* ... and no sticky error */
void gpusim_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int gpusim_hidden(const char *name);            /* named in GDR_GPUSIM_HIDE */

/* gpusim_memory.c (callers hold gpusim.lock unless said otherwise) */
int gpusim_memory_init(void);                   /* reserves the address space; 0 or -1 */
void gpusim_memory_fini(void);
int gpusim_in_device_va(uintptr_t addr);
gpusim_range_t *gpusim_range_find(uintptr_t addr);      /* the range holding addr */
gpusim_range_t *gpusim_range_insert(const gpusim_range_t *r);
void gpusim_range_remove(gpusim_range_t *r);
uint64_t gpusim_new_buffer_id(void);
int gpusim_va_take(size_t mapped, uintptr_t *addr);     /* a free device range; 0 or -1 */
void gpusim_va_give_back(uintptr_t addr, size_t mapped);  /* unmaps: the range reserved again */
int gpusim_va_map(uintptr_t addr, size_t mapped, int fd);  /* maps fd's pages there; 0 or -1 */
/* The simulator's host address for [addr, addr+len): device memory through its alias;
 * host memory as is, when `pageable_ok` or CUDA knows it (pinned, registered).  NULL when
 * the range is not all inside one of those (the real GPU would fault). */
void *gpusim_reach(uintptr_t addr, size_t len, int pageable_ok);

/* gpusim_stream.c */
/* Polls like the GPU (yielding, then backing off to 1 ms) until done(arg) or the
 * simulator shuts down: stream waits and waiting kernels. */
void gpusim_spin_until(int (*done)(const void *arg), const void *arg);
void gpusim_streams_fini(void);                 /* stops and joins every worker */
void gpusim_wait_idle(void);                    /* until no stream has work (lock held) */
gdr_cu_result_t gpusim_stream_resolve(gdr_cu_stream_t h, struct CUstream_st **s);  /* lock held */

/* gpusim_module.c */
void gpusim_modules_fini(void);                 /* frees every module (lock held) */

/* The launch of a kernel as its host function sees it. */
typedef struct gpusim_launch {
    unsigned grid[3], block[3];
    const unsigned char *params;        /* the parameters, packed at natural alignment */
} gpusim_launch_t;

/* A kernel the simulator can run: its name, its parameters' sizes, and its host function,
 * which returns GDR_CUDA_SUCCESS or the fault a GPU would report (ILLEGAL_ADDRESS). */
struct CUfunc_st {
    const char *name;
    unsigned nparams;
    size_t param_size[4];
    gdr_cu_result_t (*run)(const gpusim_launch_t *launch);
};
extern struct CUfunc_st gpusim_kernels[];
extern const size_t gpusim_nkernels;
/* Queues a launch (gpusim_stream.c); params already packed (GPUSIM_PARAMS_MAX bytes). */
gdr_cu_result_t gpusim_stream_launch(struct CUstream_st *s, struct CUfunc_st *f,
                                     const gpusim_launch_t *launch, size_t params_len);

/* The entry points, by the names cuda.h maps them to (what a program built against cuda.h
 * links to); their types are gdr's, which test_cuda_abi checks against cuda.h. */
GPUSIM_API gdr_cuGetProcAddress_fn cuGetProcAddress_v2;
GPUSIM_API gdr_cu_result_t cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                            uint64_t flags);    /* the CUDA 11 ABI */
GPUSIM_API gdr_cuInit_fn cuInit;
GPUSIM_API gdr_cuDriverGetVersion_fn cuDriverGetVersion;
GPUSIM_API gdr_cuGetErrorString_fn cuGetErrorString;
GPUSIM_API gdr_cuGetErrorName_fn cuGetErrorName;
GPUSIM_API gdr_cuDeviceGetCount_fn cuDeviceGetCount;
GPUSIM_API gdr_cuDeviceGet_fn cuDeviceGet;
GPUSIM_API gdr_cuDeviceGetPCIBusId_fn cuDeviceGetPCIBusId;
GPUSIM_API gdr_cuDeviceGetAttribute_fn cuDeviceGetAttribute;
GPUSIM_API gdr_cuDevicePrimaryCtxRetain_fn cuDevicePrimaryCtxRetain;
GPUSIM_API gdr_cuDevicePrimaryCtxRelease_fn cuDevicePrimaryCtxRelease_v2;
GPUSIM_API gdr_cuCtxSetCurrent_fn cuCtxSetCurrent;
GPUSIM_API gdr_cuCtxGetCurrent_fn cuCtxGetCurrent;
GPUSIM_API gdr_cuCtxGetDevice_fn cuCtxGetDevice;
GPUSIM_API gdr_cuPointerGetAttributes_fn cuPointerGetAttributes;
GPUSIM_API gdr_cuMemGetAddressRange_fn cuMemGetAddressRange_v2;
GPUSIM_API gdr_cuMemGetHandleForAddressRange_fn cuMemGetHandleForAddressRange;
GPUSIM_API gdr_cuMemAlloc_fn cuMemAlloc_v2;
GPUSIM_API gdr_cuMemFree_fn cuMemFree_v2;
GPUSIM_API gdr_cuMemHostAlloc_fn cuMemHostAlloc;
GPUSIM_API gdr_cuMemFreeHost_fn cuMemFreeHost;
GPUSIM_API gdr_cuMemHostRegister_fn cuMemHostRegister_v2;
GPUSIM_API gdr_cuMemHostUnregister_fn cuMemHostUnregister;
GPUSIM_API gdr_cuMemHostGetDevicePointer_fn cuMemHostGetDevicePointer_v2;
GPUSIM_API gdr_cuMemcpy_fn cuMemcpy;
GPUSIM_API gdr_cuMemcpyAsync_fn cuMemcpyAsync;
GPUSIM_API gdr_cuMemsetD8Async_fn cuMemsetD8Async;
GPUSIM_API gdr_cuStreamCreate_fn cuStreamCreate;
GPUSIM_API gdr_cuStreamDestroy_fn cuStreamDestroy_v2;
GPUSIM_API gdr_cuStreamSynchronize_fn cuStreamSynchronize;
typedef gdr_cu_result_t gdr_cuCtxSynchronize_fn(void);     /* the tests' (gdr uses streams) */
GPUSIM_API gdr_cuCtxSynchronize_fn cuCtxSynchronize;
GPUSIM_API gdr_cuStreamQuery_fn cuStreamQuery;
GPUSIM_API gdr_cuStreamWaitEvent_fn cuStreamWaitEvent;
GPUSIM_API gdr_cuEventCreate_fn cuEventCreate;
GPUSIM_API gdr_cuEventRecord_fn cuEventRecord;
GPUSIM_API gdr_cuEventQuery_fn cuEventQuery;
GPUSIM_API gdr_cuEventSynchronize_fn cuEventSynchronize;
GPUSIM_API gdr_cuEventDestroy_fn cuEventDestroy_v2;
GPUSIM_API gdr_cuStreamWaitValue64_fn cuStreamWaitValue64_v2;
GPUSIM_API gdr_cuStreamWriteValue64_fn cuStreamWriteValue64_v2;
GPUSIM_API gdr_cuIpcGetMemHandle_fn cuIpcGetMemHandle;
GPUSIM_API gdr_cuIpcOpenMemHandle_fn cuIpcOpenMemHandle_v2;
GPUSIM_API gdr_cuIpcCloseMemHandle_fn cuIpcCloseMemHandle;
GPUSIM_API gdr_cuModuleLoadData_fn cuModuleLoadData;
GPUSIM_API gdr_cuModuleUnload_fn cuModuleUnload;
GPUSIM_API gdr_cuModuleGetFunction_fn cuModuleGetFunction;
GPUSIM_API gdr_cuLaunchKernel_fn cuLaunchKernel;
typedef gdr_cu_result_t gdr_cuFuncLoad_fn(gdr_cu_function_t f);   /* CUDA 12.4 */
GPUSIM_API gdr_cuFuncLoad_fn cuFuncLoad;

#endif /* GPUSIM_H */
