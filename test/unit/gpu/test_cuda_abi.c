/* gdr's copy of the CUDA driver ABI (src/gpu/gdr_gpu_cuda.h) against the toolkit's cuda.h:
 * every constant's value, every entry point's type as cuda.h maps its name (cuMemAlloc is
 * cuMemAlloc_v2), and the simulated GPU exporting each under that name.  Built only where
 * configure found cuda.h (CUDA_HOME); gdr itself never includes it. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include "gdr_unit.h"
#include "gpu/gdr_gpu_cuda.h"

#define STR(x) #x
#define XSTR(x) STR(x)          /* the name after cuda.h's #define: the ABI version */

#define SAME(name) \
    GDR_CHECK((long long) GDR_##name == (long long) (name), "%s = %lld", #name, (long long) (name))

static void *sim;

/* The entry point's type as cuda.h declares it, and the simulator's export of that name. */
#define SAME_FN(fn)                                                                        \
    do {                                                                                   \
        GDR_CHECK(__builtin_types_compatible_p(gdr_##fn##_fn, __typeof__(fn)),             \
                  "gdr_%s_fn is the type of cuda.h's %s", #fn, XSTR(fn));                  \
        GDR_CHECK(sim == NULL || dlsym(sim, XSTR(fn)) != NULL,                             \
                  "the simulated GPU exports %s", XSTR(fn));                               \
    } while (0)

static void constants(void)
{
    SAME(CUDA_SUCCESS);
    SAME(CUDA_ERROR_INVALID_VALUE);
    SAME(CUDA_ERROR_OUT_OF_MEMORY);
    SAME(CUDA_ERROR_NOT_INITIALIZED);
    SAME(CUDA_ERROR_DEINITIALIZED);
    SAME(CUDA_ERROR_STUB_LIBRARY);
    SAME(CUDA_ERROR_NO_DEVICE);
    SAME(CUDA_ERROR_INVALID_DEVICE);
    SAME(CUDA_ERROR_INVALID_IMAGE);
    SAME(CUDA_ERROR_INVALID_CONTEXT);
    SAME(CUDA_ERROR_MAP_FAILED);
    SAME(CUDA_ERROR_INVALID_HANDLE);
    SAME(CUDA_ERROR_NOT_FOUND);
    SAME(CUDA_ERROR_NOT_READY);
    SAME(CUDA_ERROR_ILLEGAL_ADDRESS);
    SAME(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    SAME(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    SAME(CUDA_ERROR_LAUNCH_FAILED);
    SAME(CUDA_ERROR_NOT_SUPPORTED);
    SAME(CUDA_ERROR_UNKNOWN);
    SAME(CU_GET_PROC_ADDRESS_DEFAULT);
    SAME(CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    SAME(CU_GET_PROC_ADDRESS_SUCCESS);
    SAME(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    SAME(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    SAME(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    SAME(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    SAME(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    SAME(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    SAME(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    SAME(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
    SAME(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
    SAME(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
    SAME(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
    SAME(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
    SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    SAME(CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM);
    SAME(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED);
    SAME(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS);
    SAME(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR);
    SAME(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
    SAME(CU_POINTER_ATTRIBUTE_CONTEXT);
    SAME(CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
    SAME(CU_POINTER_ATTRIBUTE_DEVICE_POINTER);
    SAME(CU_POINTER_ATTRIBUTE_HOST_POINTER);
    SAME(CU_POINTER_ATTRIBUTE_BUFFER_ID);
    SAME(CU_POINTER_ATTRIBUTE_IS_MANAGED);
    SAME(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
    SAME(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
    SAME(CU_POINTER_ATTRIBUTE_RANGE_SIZE);
    SAME(CU_POINTER_ATTRIBUTE_MAPPED);
    SAME(CU_MEMORYTYPE_HOST);
    SAME(CU_MEMORYTYPE_DEVICE);
    SAME(CU_MEMORYTYPE_ARRAY);
    SAME(CU_MEMORYTYPE_UNIFIED);
    SAME(CU_STREAM_DEFAULT);
    SAME(CU_STREAM_NON_BLOCKING);
    SAME(CU_EVENT_DEFAULT);
    SAME(CU_EVENT_BLOCKING_SYNC);
    SAME(CU_EVENT_DISABLE_TIMING);
    SAME(CU_STREAM_WAIT_VALUE_GEQ);
    SAME(CU_STREAM_WAIT_VALUE_EQ);
    SAME(CU_STREAM_WAIT_VALUE_AND);
    SAME(CU_STREAM_WAIT_VALUE_NOR);
    SAME(CU_STREAM_WAIT_VALUE_FLUSH);
    SAME(CU_STREAM_WRITE_VALUE_DEFAULT);
    SAME(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
    SAME(CU_MEMHOSTALLOC_PORTABLE);
    SAME(CU_MEMHOSTALLOC_DEVICEMAP);
    SAME(CU_MEMHOSTREGISTER_PORTABLE);
    SAME(CU_MEMHOSTREGISTER_DEVICEMAP);
    SAME(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    SAME(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);
    SAME(CU_IPC_HANDLE_SIZE);
    GDR_CHECK(GDR_CU_STREAM_LEGACY == CU_STREAM_LEGACY
              && GDR_CU_STREAM_PER_THREAD == CU_STREAM_PER_THREAD,
              "the special stream handles");
}

static void types(void)
{
    GDR_CHECK(__builtin_types_compatible_p(gdr_cu_result_t, CUresult), "gdr_cu_result_t: CUresult");
    GDR_CHECK(__builtin_types_compatible_p(gdr_cu_device_t, CUdevice), "gdr_cu_device_t: CUdevice");
    GDR_CHECK(__builtin_types_compatible_p(gdr_cu_ptr_t, CUdeviceptr),
              "gdr_cu_ptr_t: CUdeviceptr");
    GDR_CHECK(__builtin_types_compatible_p(gdr_cu_context_t, CUcontext)
              && __builtin_types_compatible_p(gdr_cu_stream_t, CUstream)
              && __builtin_types_compatible_p(gdr_cu_event_t, CUevent)
              && __builtin_types_compatible_p(gdr_cu_module_t, CUmodule)
              && __builtin_types_compatible_p(gdr_cu_function_t, CUfunction),
              "handles are cuda.h's very types (a CUstream passes without a cast)");
    GDR_CHECK(sizeof(gdr_cu_ipc_mem_handle_t) == sizeof(CUipcMemHandle)
              && _Alignof(gdr_cu_ipc_mem_handle_t) == _Alignof(CUipcMemHandle),
              "gdr_cu_ipc_mem_handle_t: CUipcMemHandle's size and alignment");
}

static void entry_points(void)
{
    SAME_FN(cuGetProcAddress);
    SAME_FN(cuInit);
    SAME_FN(cuDriverGetVersion);
    SAME_FN(cuGetErrorString);
    SAME_FN(cuGetErrorName);
    SAME_FN(cuDeviceGetCount);
    SAME_FN(cuDeviceGet);
    SAME_FN(cuDeviceGetPCIBusId);
    SAME_FN(cuDeviceGetAttribute);
    SAME_FN(cuDevicePrimaryCtxRetain);
    SAME_FN(cuDevicePrimaryCtxRelease);
    SAME_FN(cuCtxSetCurrent);
    SAME_FN(cuCtxGetCurrent);
    SAME_FN(cuCtxGetDevice);
    SAME_FN(cuPointerGetAttributes);
    SAME_FN(cuMemGetAddressRange);
    SAME_FN(cuMemGetHandleForAddressRange);
    SAME_FN(cuMemAlloc);
    SAME_FN(cuMemFree);
    SAME_FN(cuMemHostAlloc);
    SAME_FN(cuMemFreeHost);
    SAME_FN(cuMemHostRegister);
    SAME_FN(cuMemHostUnregister);
    SAME_FN(cuMemHostGetDevicePointer);
    SAME_FN(cuMemcpy);
    SAME_FN(cuMemcpyAsync);
    SAME_FN(cuMemsetD8Async);
    SAME_FN(cuStreamCreate);
    SAME_FN(cuStreamDestroy);
    SAME_FN(cuStreamSynchronize);
    SAME_FN(cuStreamQuery);
    SAME_FN(cuStreamWaitEvent);
    SAME_FN(cuEventCreate);
    SAME_FN(cuEventRecord);
    SAME_FN(cuEventQuery);
    SAME_FN(cuEventSynchronize);
    SAME_FN(cuEventDestroy);
    SAME_FN(cuStreamWaitValue64);
    SAME_FN(cuStreamWriteValue64);
    SAME_FN(cuIpcCloseMemHandle);
    SAME_FN(cuModuleLoadData);
    SAME_FN(cuModuleUnload);
    SAME_FN(cuModuleGetFunction);
    SAME_FN(cuLaunchKernel);
    /* IPC handles: cuda.h's struct and gdr's differ in name only (types() checks their
     * layout), so these two are spelled out with cuda.h's struct in gdr's order */
    typedef CUresult get_fn(CUipcMemHandle *, CUdeviceptr);
    typedef CUresult open_fn(CUdeviceptr *, CUipcMemHandle, unsigned int);
    GDR_CHECK(__builtin_types_compatible_p(get_fn, __typeof__(cuIpcGetMemHandle)),
              "cuIpcGetMemHandle is %s(CUipcMemHandle *, CUdeviceptr)", XSTR(cuIpcGetMemHandle));
    GDR_CHECK(__builtin_types_compatible_p(open_fn, __typeof__(cuIpcOpenMemHandle)),
              "cuIpcOpenMemHandle is %s(CUdeviceptr *, CUipcMemHandle, unsigned int)",
              XSTR(cuIpcOpenMemHandle));
    GDR_CHECK(sim == NULL || (dlsym(sim, XSTR(cuIpcGetMemHandle)) != NULL
                              && dlsym(sim, XSTR(cuIpcOpenMemHandle)) != NULL),
              "the simulated GPU exports %s and %s", XSTR(cuIpcGetMemHandle),
              XSTR(cuIpcOpenMemHandle));
}

int main(int argc, char **argv)
{
    sim = dlopen(argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so", RTLD_NOW | RTLD_LOCAL);
    GDR_CHECK(sim != NULL, "load the simulated GPU (%s)", sim ? "ok" : dlerror());
    printf("# checked against cuda.h of CUDA %d.%d\n", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    constants();
    types();
    entry_points();
    if (sim != NULL)
        dlclose(sim);
    return gdr_unit_finish();
}
