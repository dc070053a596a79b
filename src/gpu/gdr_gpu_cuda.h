/* The part of the CUDA driver's ABI that gdr uses, written out so that gdr builds without
 * cuda.h and never links libcuda (DESIGN.md section 1).  Every constant is cuda.h's name
 * with "GDR_" in front; types are gdr_cu_* with the cuda.h type named beside them.
 * test/unit/gpu/test_cuda_abi checks every value and every entry point's type against
 * cuda.h where the toolkit is installed.
 *
 * Entry points are the ABI versions cuGetProcAddress returns for CUDA 12.0
 * (GDR_CUDA_ABI_VERSION): "cuMemAlloc" is cuMemAlloc_v2, as cuda.h's
 * `#define cuMemAlloc cuMemAlloc_v2` says; gdr_cu<Name>_fn is that version's type. */
#ifndef GDR_GPU_CUDA_H
#define GDR_GPU_CUDA_H

#include <stddef.h>
#include <stdint.h>

/* The CUDA version gdr asks cuGetProcAddress for (1000 * major + 10 * minor). */
#define GDR_CUDA_ABI_VERSION 12000

/* ---- types ------------------------------------------------------------------------- */

typedef unsigned int gdr_cu_result_t;  /* CUresult: an enum of non-negative values, the
                                          type unsigned int has for GCC and Clang */
typedef int gdr_cu_device_t;           /* CUdevice */
typedef unsigned long long gdr_cu_ptr_t;        /* CUdeviceptr (CUdeviceptr_v2, 64-bit) */
/* Handles: the same incomplete structs as cuda.h's, so that a CUstream (or the runtime's
 * cudaStream_t) passes to gdr without a cast. */
typedef struct CUctx_st *gdr_cu_context_t;      /* CUcontext */
typedef struct CUstream_st *gdr_cu_stream_t;    /* CUstream */
typedef struct CUevent_st *gdr_cu_event_t;      /* CUevent */
typedef struct CUmod_st *gdr_cu_module_t;       /* CUmodule */
typedef struct CUfunc_st *gdr_cu_function_t;    /* CUfunction */

#define GDR_CU_IPC_HANDLE_SIZE 64
typedef struct gdr_cu_ipc_mem_handle {          /* CUipcMemHandle (CUipcMemHandle_v1) */
    char reserved[GDR_CU_IPC_HANDLE_SIZE];
} gdr_cu_ipc_mem_handle_t;

/* ---- constants --------------------------------------------------------------------- */

enum {                                  /* cudaError_enum (CUresult) */
    GDR_CUDA_SUCCESS = 0,
    GDR_CUDA_ERROR_INVALID_VALUE = 1,
    GDR_CUDA_ERROR_OUT_OF_MEMORY = 2,
    GDR_CUDA_ERROR_NOT_INITIALIZED = 3,
    GDR_CUDA_ERROR_DEINITIALIZED = 4,
    GDR_CUDA_ERROR_STUB_LIBRARY = 34,
    GDR_CUDA_ERROR_NO_DEVICE = 100,
    GDR_CUDA_ERROR_INVALID_DEVICE = 101,
    GDR_CUDA_ERROR_INVALID_IMAGE = 200,
    GDR_CUDA_ERROR_INVALID_CONTEXT = 201,
    GDR_CUDA_ERROR_MAP_FAILED = 205,
    GDR_CUDA_ERROR_INVALID_HANDLE = 400,
    GDR_CUDA_ERROR_NOT_FOUND = 500,
    GDR_CUDA_ERROR_NOT_READY = 600,
    GDR_CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    GDR_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    GDR_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    GDR_CUDA_ERROR_LAUNCH_FAILED = 719,
    GDR_CUDA_ERROR_NOT_SUPPORTED = 801,
    GDR_CUDA_ERROR_UNKNOWN = 999
};

enum {                                  /* CUdriverProcAddress_flags */
    GDR_CU_GET_PROC_ADDRESS_DEFAULT = 0,
    GDR_CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1
};

enum {                                  /* CUdriverProcAddressQueryResult */
    GDR_CU_GET_PROC_ADDRESS_SUCCESS = 0,
    GDR_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    GDR_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
};

enum {                                  /* CUdevice_attribute (those gdr asks) */
    GDR_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    GDR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    GDR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    GDR_CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    GDR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    GDR_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
    GDR_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    GDR_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    GDR_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
    GDR_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
    GDR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    GDR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    GDR_CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM = 91,
    GDR_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116,
    GDR_CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS = 122,
    GDR_CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR = 123,
    GDR_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124
};

enum {                                  /* CUpointer_attribute (those gdr asks) */
    GDR_CU_POINTER_ATTRIBUTE_CONTEXT = 1,               /* CUcontext */
    GDR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,           /* unsigned int: CUmemorytype */
    GDR_CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,        /* CUdeviceptr */
    GDR_CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,          /* void * */
    GDR_CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,             /* unsigned long long */
    GDR_CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,            /* unsigned int (a boolean) */
    GDR_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,        /* int */
    GDR_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,     /* CUdeviceptr */
    GDR_CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,           /* size_t */
    GDR_CU_POINTER_ATTRIBUTE_MAPPED = 13                /* unsigned int (a boolean) */
};

enum {                                  /* CUmemorytype */
    GDR_CU_MEMORYTYPE_HOST = 1,
    GDR_CU_MEMORYTYPE_DEVICE = 2,
    GDR_CU_MEMORYTYPE_ARRAY = 3,
    GDR_CU_MEMORYTYPE_UNIFIED = 4
};

enum {                                  /* CUstream_flags */
    GDR_CU_STREAM_DEFAULT = 0,
    GDR_CU_STREAM_NON_BLOCKING = 1
};
/* Special stream handles (cuda.h's CU_STREAM_LEGACY, CU_STREAM_PER_THREAD). */
#define GDR_CU_STREAM_LEGACY ((gdr_cu_stream_t) 0x1)
#define GDR_CU_STREAM_PER_THREAD ((gdr_cu_stream_t) 0x2)

enum {                                  /* CUevent_flags */
    GDR_CU_EVENT_DEFAULT = 0,
    GDR_CU_EVENT_BLOCKING_SYNC = 1,
    GDR_CU_EVENT_DISABLE_TIMING = 2
};

enum {                                  /* CUstreamWaitValue_flags */
    GDR_CU_STREAM_WAIT_VALUE_GEQ = 0,   /* (int64_t)(*addr - value) >= 0: cyclic >= */
    GDR_CU_STREAM_WAIT_VALUE_EQ = 1,
    GDR_CU_STREAM_WAIT_VALUE_AND = 2,   /* (*addr & value) != 0 */
    GDR_CU_STREAM_WAIT_VALUE_NOR = 3,   /* ~(*addr | value) != 0 */
    GDR_CU_STREAM_WAIT_VALUE_FLUSH = 1 << 30
};

enum {                                  /* CUstreamWriteValue_flags */
    GDR_CU_STREAM_WRITE_VALUE_DEFAULT = 0,
    GDR_CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER = 1
};

/* cuMemHostAlloc and cuMemHostRegister flags (cuda.h's #defines) */
#define GDR_CU_MEMHOSTALLOC_PORTABLE 0x01
#define GDR_CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define GDR_CU_MEMHOSTREGISTER_PORTABLE 0x01
#define GDR_CU_MEMHOSTREGISTER_DEVICEMAP 0x02

enum {                                  /* CUipcMem_flags */
    GDR_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
};

enum {                                  /* CUmemRangeHandleType */
    GDR_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1
};

/* ---- entry points: the type of each, as cuGetProcAddress returns it for
 * GDR_CUDA_ABI_VERSION (the exported name, where it differs, in the comment) ---------- */

typedef gdr_cu_result_t gdr_cuGetProcAddress_fn(const char *symbol, void **pfn, int cudaVersion,
                                                uint64_t flags, unsigned int *symbolStatus);
                                                /* cuGetProcAddress_v2 */
typedef gdr_cu_result_t gdr_cuInit_fn(unsigned int flags);
typedef gdr_cu_result_t gdr_cuDriverGetVersion_fn(int *driverVersion);
typedef gdr_cu_result_t gdr_cuGetErrorString_fn(gdr_cu_result_t error, const char **pStr);
typedef gdr_cu_result_t gdr_cuGetErrorName_fn(gdr_cu_result_t error, const char **pStr);
typedef gdr_cu_result_t gdr_cuDeviceGetCount_fn(int *count);
typedef gdr_cu_result_t gdr_cuDeviceGet_fn(gdr_cu_device_t *device, int ordinal);
typedef gdr_cu_result_t gdr_cuDeviceGetPCIBusId_fn(char *pciBusId, int len, gdr_cu_device_t dev);
typedef gdr_cu_result_t gdr_cuDeviceGetAttribute_fn(int *pi, unsigned int attrib,
                                                    gdr_cu_device_t dev);
typedef gdr_cu_result_t gdr_cuDevicePrimaryCtxRetain_fn(gdr_cu_context_t *pctx,
                                                        gdr_cu_device_t dev);
typedef gdr_cu_result_t gdr_cuDevicePrimaryCtxRelease_fn(gdr_cu_device_t dev);   /* _v2 */
typedef gdr_cu_result_t gdr_cuCtxSetCurrent_fn(gdr_cu_context_t ctx);
typedef gdr_cu_result_t gdr_cuCtxGetCurrent_fn(gdr_cu_context_t *pctx);
typedef gdr_cu_result_t gdr_cuCtxGetDevice_fn(gdr_cu_device_t *device);

typedef gdr_cu_result_t gdr_cuPointerGetAttributes_fn(unsigned int numAttributes,
                                                      unsigned int *attributes, void **data,
                                                      gdr_cu_ptr_t ptr);
typedef gdr_cu_result_t gdr_cuMemGetAddressRange_fn(gdr_cu_ptr_t *pbase, size_t *psize,
                                                    gdr_cu_ptr_t dptr);          /* _v2 */
typedef gdr_cu_result_t gdr_cuMemGetHandleForAddressRange_fn(void *handle, gdr_cu_ptr_t dptr,
                                                             size_t size,
                                                             unsigned int handleType,
                                                             unsigned long long flags);
typedef gdr_cu_result_t gdr_cuMemAlloc_fn(gdr_cu_ptr_t *dptr, size_t bytesize);  /* _v2 */
typedef gdr_cu_result_t gdr_cuMemFree_fn(gdr_cu_ptr_t dptr);                     /* _v2 */
typedef gdr_cu_result_t gdr_cuMemHostAlloc_fn(void **pp, size_t bytesize, unsigned int Flags);
typedef gdr_cu_result_t gdr_cuMemFreeHost_fn(void *p);
typedef gdr_cu_result_t gdr_cuMemHostRegister_fn(void *p, size_t bytesize,
                                                 unsigned int Flags);             /* _v2 */
typedef gdr_cu_result_t gdr_cuMemHostUnregister_fn(void *p);
typedef gdr_cu_result_t gdr_cuMemHostGetDevicePointer_fn(gdr_cu_ptr_t *pdptr, void *p,
                                                         unsigned int Flags);     /* _v2 */
typedef gdr_cu_result_t gdr_cuMemcpy_fn(gdr_cu_ptr_t dst, gdr_cu_ptr_t src, size_t ByteCount);
typedef gdr_cu_result_t gdr_cuMemcpyAsync_fn(gdr_cu_ptr_t dst, gdr_cu_ptr_t src,
                                             size_t ByteCount, gdr_cu_stream_t hStream);
typedef gdr_cu_result_t gdr_cuMemsetD8Async_fn(gdr_cu_ptr_t dstDevice, unsigned char uc,
                                               size_t N, gdr_cu_stream_t hStream);

typedef gdr_cu_result_t gdr_cuStreamCreate_fn(gdr_cu_stream_t *phStream, unsigned int Flags);
typedef gdr_cu_result_t gdr_cuStreamDestroy_fn(gdr_cu_stream_t hStream);          /* _v2 */
typedef gdr_cu_result_t gdr_cuStreamSynchronize_fn(gdr_cu_stream_t hStream);
typedef gdr_cu_result_t gdr_cuStreamQuery_fn(gdr_cu_stream_t hStream);
typedef gdr_cu_result_t gdr_cuStreamWaitEvent_fn(gdr_cu_stream_t hStream, gdr_cu_event_t hEvent,
                                                 unsigned int Flags);
typedef gdr_cu_result_t gdr_cuEventCreate_fn(gdr_cu_event_t *phEvent, unsigned int Flags);
typedef gdr_cu_result_t gdr_cuEventRecord_fn(gdr_cu_event_t hEvent, gdr_cu_stream_t hStream);
typedef gdr_cu_result_t gdr_cuEventQuery_fn(gdr_cu_event_t hEvent);
typedef gdr_cu_result_t gdr_cuEventSynchronize_fn(gdr_cu_event_t hEvent);
typedef gdr_cu_result_t gdr_cuEventDestroy_fn(gdr_cu_event_t hEvent);             /* _v2 */
typedef gdr_cu_result_t gdr_cuStreamWaitValue64_fn(gdr_cu_stream_t stream, gdr_cu_ptr_t addr,
                                                   uint64_t value, unsigned int flags);
                                                   /* _v2 */
typedef gdr_cu_result_t gdr_cuStreamWriteValue64_fn(gdr_cu_stream_t stream, gdr_cu_ptr_t addr,
                                                    uint64_t value, unsigned int flags);
                                                    /* _v2 */

typedef gdr_cu_result_t gdr_cuIpcGetMemHandle_fn(gdr_cu_ipc_mem_handle_t *pHandle,
                                                 gdr_cu_ptr_t dptr);
typedef gdr_cu_result_t gdr_cuIpcOpenMemHandle_fn(gdr_cu_ptr_t *pdptr,
                                                  gdr_cu_ipc_mem_handle_t handle,
                                                  unsigned int Flags);             /* _v2 */
typedef gdr_cu_result_t gdr_cuIpcCloseMemHandle_fn(gdr_cu_ptr_t dptr);

typedef gdr_cu_result_t gdr_cuModuleLoadData_fn(gdr_cu_module_t *module, const void *image);
typedef gdr_cu_result_t gdr_cuModuleUnload_fn(gdr_cu_module_t hmod);
typedef gdr_cu_result_t gdr_cuModuleGetFunction_fn(gdr_cu_function_t *hfunc,
                                                   gdr_cu_module_t hmod, const char *name);
typedef gdr_cu_result_t gdr_cuLaunchKernel_fn(gdr_cu_function_t f, unsigned int gridDimX,
                                              unsigned int gridDimY, unsigned int gridDimZ,
                                              unsigned int blockDimX, unsigned int blockDimY,
                                              unsigned int blockDimZ,
                                              unsigned int sharedMemBytes,
                                              gdr_cu_stream_t hStream, void **kernelParams,
                                              void **extra);

#endif /* GDR_GPU_CUDA_H */
