/* The CUDA driver, reached at run time.  libmpi never links libcuda: on machines
 * without the NVIDIA driver (CI, login nodes) GPU support is simply off.  Every entry
 * point comes from the driver's cuGetProcAddress (CUDA 12+), asked for the ABI of
 * GDR_CUDA_ABI_VERSION (gdr_gpu_cuda.h), never by dlsym of a versioned name. */
#ifndef GDR_GPU_DRIVER_H
#define GDR_GPU_DRIVER_H

#include <stddef.h>
#include "gdr_gpu_cuda.h"

#define GDR_GPU_DRIVER_SONAME "libcuda.so.1"

/* Entry points by the base name cuGetProcAddress takes; NULL where the driver has none
 * (only the optional ones below can be NULL once the probe says enabled). */
typedef struct gdr_gpu_driver_table {
    gdr_cuInit_fn *cuInit;
    gdr_cuDriverGetVersion_fn *cuDriverGetVersion;
    gdr_cuGetErrorString_fn *cuGetErrorString;
    gdr_cuGetErrorName_fn *cuGetErrorName;                      /* optional */
    gdr_cuDeviceGetCount_fn *cuDeviceGetCount;
    gdr_cuDeviceGet_fn *cuDeviceGet;
    gdr_cuDeviceGetPCIBusId_fn *cuDeviceGetPCIBusId;
    gdr_cuDeviceGetAttribute_fn *cuDeviceGetAttribute;
    gdr_cuDevicePrimaryCtxRetain_fn *cuDevicePrimaryCtxRetain;
    gdr_cuDevicePrimaryCtxRelease_fn *cuDevicePrimaryCtxRelease;
    gdr_cuCtxSetCurrent_fn *cuCtxSetCurrent;
    gdr_cuCtxGetCurrent_fn *cuCtxGetCurrent;
    gdr_cuCtxGetDevice_fn *cuCtxGetDevice;
    gdr_cuPointerGetAttributes_fn *cuPointerGetAttributes;
    gdr_cuMemGetAddressRange_fn *cuMemGetAddressRange;
    gdr_cuMemGetHandleForAddressRange_fn *cuMemGetHandleForAddressRange;    /* DMABUF */
    gdr_cuMemAlloc_fn *cuMemAlloc;
    gdr_cuMemFree_fn *cuMemFree;
    gdr_cuMemHostAlloc_fn *cuMemHostAlloc;
    gdr_cuMemFreeHost_fn *cuMemFreeHost;
    gdr_cuMemHostRegister_fn *cuMemHostRegister;
    gdr_cuMemHostUnregister_fn *cuMemHostUnregister;
    gdr_cuMemHostGetDevicePointer_fn *cuMemHostGetDevicePointer;
    gdr_cuMemcpy_fn *cuMemcpy;
    gdr_cuMemcpyAsync_fn *cuMemcpyAsync;
    gdr_cuMemsetD8Async_fn *cuMemsetD8Async;
    gdr_cuStreamCreate_fn *cuStreamCreate;
    gdr_cuStreamDestroy_fn *cuStreamDestroy;
    gdr_cuStreamSynchronize_fn *cuStreamSynchronize;
    gdr_cuStreamQuery_fn *cuStreamQuery;
    gdr_cuStreamWaitEvent_fn *cuStreamWaitEvent;
    gdr_cuEventCreate_fn *cuEventCreate;
    gdr_cuEventRecord_fn *cuEventRecord;
    gdr_cuEventQuery_fn *cuEventQuery;
    gdr_cuEventSynchronize_fn *cuEventSynchronize;
    gdr_cuEventDestroy_fn *cuEventDestroy;
    gdr_cuStreamWaitValue64_fn *cuStreamWaitValue64;            /* MEMOPS */
    gdr_cuStreamWriteValue64_fn *cuStreamWriteValue64;          /* MEMOPS */
    gdr_cuIpcGetMemHandle_fn *cuIpcGetMemHandle;                /* IPC */
    gdr_cuIpcOpenMemHandle_fn *cuIpcOpenMemHandle;              /* IPC */
    gdr_cuIpcCloseMemHandle_fn *cuIpcCloseMemHandle;            /* IPC */
    gdr_cuModuleLoadData_fn *cuModuleLoadData;                  /* KERNELS */
    gdr_cuModuleUnload_fn *cuModuleUnload;                      /* KERNELS */
    gdr_cuModuleGetFunction_fn *cuModuleGetFunction;            /* KERNELS */
    gdr_cuLaunchKernel_fn *cuLaunchKernel;                      /* KERNELS */
} gdr_gpu_driver_table_t;

/* Features that need optional entry points (a driver without them still runs the rest). */
enum {
    GDR_GPU_DRIVER_DMABUF = 1 << 0,     /* cuMemGetHandleForAddressRange */
    GDR_GPU_DRIVER_MEMOPS = 1 << 1,     /* cuStreamWaitValue64, cuStreamWriteValue64 */
    GDR_GPU_DRIVER_IPC = 1 << 2,        /* cuIpcGetMemHandle/OpenMemHandle/CloseMemHandle */
    GDR_GPU_DRIVER_KERNELS = 1 << 3     /* cuModuleLoadData/Unload/GetFunction, cuLaunchKernel */
};

typedef struct gdr_gpu_driver {
    void *handle;               /* dlopen handle, NULL when off */
    gdr_gpu_driver_table_t fn;
    int enabled;                /* 1: a driver and at least one device */
    int device_count;
    int driver_version;         /* e.g. 13000 for CUDA 13.0 */
    unsigned features;          /* GDR_GPU_DRIVER_*: the optional entry points it has */
    char missing[192];          /* which optional features lack entry points, and which */
    char why_off[256];          /* when !enabled: one sentence, for the log */
} gdr_gpu_driver_t;

/* Loads `soname` (NULL: GDR_GPU_DRIVER_SONAME; a path loads that file, e.g. the simulated
 * GPU), resolves every entry point, initialises the driver and counts devices.
 * Never fails: any problem (no library, not a CUDA 12+ driver, the toolkit's stub library,
 * no device, a required entry point missing) leaves drv->enabled == 0 with why_off set
 * and the library unloaded.  A missing optional entry point only clears its bit in
 * drv->features and is named in drv->missing.  Returns drv->enabled. */
int gdr_gpu_driver_probe(gdr_gpu_driver_t *drv, const char *soname);

/* The driver's text for `rc` ("CUDA_ERROR_OUT_OF_MEMORY: out of memory"), or a fixed
 * string when the driver has none; never NULL. */
const char *gdr_gpu_driver_result_text(const gdr_gpu_driver_t *drv, gdr_cu_result_t rc,
                                       char *buf, size_t len);

/* PCI bus id ("dddd:bb:dd.f") of visible device `ordinal`; 0, or -1 if unknown. */
int gdr_gpu_driver_pci_busid(const gdr_gpu_driver_t *drv, int ordinal, char *buf, size_t len);

/* Unloads what probe loaded; safe on a zeroed or disabled driver. */
void gdr_gpu_driver_release(gdr_gpu_driver_t *drv);

#endif /* GDR_GPU_DRIVER_H */
