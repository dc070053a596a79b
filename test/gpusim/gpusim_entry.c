/* The simulated GPU's front: cuGetProcAddress and its name table, cuInit and the
 * environment, devices, primary contexts, error strings, and unloading. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "gpusim.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gpusim gpusim = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .progress = PTHREAD_COND_INITIALIZER,
};
_Thread_local struct CUctx_st *gpusim_current;

void gpusim_debug(const char *fmt, ...)
{
    va_list ap;
    if (getenv("GDR_GPUSIM_DEBUG") == NULL)
        return;
    va_start(ap, fmt);
    fprintf(stderr, "gpusim[%d]: ", (int) getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- entry points by name ---------------------------------------------------------- */

typedef void gpusim_any_fn(void);       /* any function pointer, cast back by the caller */
#define ENTRY(base, fn) { base, (gpusim_any_fn *) fn }
static const struct {
    const char *name;                   /* the base name cuGetProcAddress is asked for */
    gpusim_any_fn *fn;                  /* the CUDA 12 ABI version */
} entry_points[] = {
    ENTRY("cuGetProcAddress", cuGetProcAddress_v2),
    ENTRY("cuInit", cuInit),
    ENTRY("cuDriverGetVersion", cuDriverGetVersion),
    ENTRY("cuGetErrorString", cuGetErrorString),
    ENTRY("cuGetErrorName", cuGetErrorName),
    ENTRY("cuDeviceGetCount", cuDeviceGetCount),
    ENTRY("cuDeviceGet", cuDeviceGet),
    ENTRY("cuDeviceGetPCIBusId", cuDeviceGetPCIBusId),
    ENTRY("cuDeviceGetAttribute", cuDeviceGetAttribute),
    ENTRY("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    ENTRY("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2),
    ENTRY("cuCtxSetCurrent", cuCtxSetCurrent),
    ENTRY("cuCtxGetCurrent", cuCtxGetCurrent),
    ENTRY("cuCtxGetDevice", cuCtxGetDevice),
    ENTRY("cuPointerGetAttributes", cuPointerGetAttributes),
    ENTRY("cuMemGetAddressRange", cuMemGetAddressRange_v2),
    ENTRY("cuMemGetHandleForAddressRange", cuMemGetHandleForAddressRange),
    ENTRY("cuMemAlloc", cuMemAlloc_v2),
    ENTRY("cuMemFree", cuMemFree_v2),
    ENTRY("cuMemHostAlloc", cuMemHostAlloc),
    ENTRY("cuMemFreeHost", cuMemFreeHost),
    ENTRY("cuMemHostRegister", cuMemHostRegister_v2),
    ENTRY("cuMemHostUnregister", cuMemHostUnregister),
    ENTRY("cuMemHostGetDevicePointer", cuMemHostGetDevicePointer_v2),
    ENTRY("cuMemcpy", cuMemcpy),
    ENTRY("cuMemcpyAsync", cuMemcpyAsync),
    ENTRY("cuMemsetD8Async", cuMemsetD8Async),
    ENTRY("cuStreamCreate", cuStreamCreate),
    ENTRY("cuStreamDestroy", cuStreamDestroy_v2),
    ENTRY("cuStreamSynchronize", cuStreamSynchronize),
    ENTRY("cuCtxSynchronize", cuCtxSynchronize),
    ENTRY("cuStreamQuery", cuStreamQuery),
    ENTRY("cuStreamWaitEvent", cuStreamWaitEvent),
    ENTRY("cuEventCreate", cuEventCreate),
    ENTRY("cuEventRecord", cuEventRecord),
    ENTRY("cuEventQuery", cuEventQuery),
    ENTRY("cuEventSynchronize", cuEventSynchronize),
    ENTRY("cuEventDestroy", cuEventDestroy_v2),
    ENTRY("cuStreamWaitValue64", cuStreamWaitValue64_v2),
    ENTRY("cuStreamWriteValue64", cuStreamWriteValue64_v2),
    ENTRY("cuIpcGetMemHandle", cuIpcGetMemHandle),
    ENTRY("cuIpcOpenMemHandle", cuIpcOpenMemHandle_v2),
    ENTRY("cuIpcCloseMemHandle", cuIpcCloseMemHandle),
    ENTRY("cuModuleLoadData", cuModuleLoadData),
    ENTRY("cuModuleUnload", cuModuleUnload),
    ENTRY("cuModuleGetFunction", cuModuleGetFunction),
    ENTRY("cuLaunchKernel", cuLaunchKernel),
    ENTRY("cuFuncLoad", cuFuncLoad),
};
#undef ENTRY

/* What every driver entry point the simulator does not implement does. */
static gdr_cu_result_t not_simulated(void)
{
    return GDR_CUDA_ERROR_NOT_SUPPORTED;
}

static int init_mode_is(const char *what)
{
    const char *m = getenv("GDR_GPUSIM_INIT");
    return m != NULL && strcmp(m, what) == 0;
}

/* GDR_GPUSIM_HIDE: comma-separated base names the driver pretends not to have (entry
 * points, and kernels of loaded modules). */
int gpusim_hidden(const char *base)
{
    const char *p = getenv("GDR_GPUSIM_HIDE");
    size_t n = strlen(base);
    while (p != NULL && *p != '\0') {
        if (strncmp(p, base, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
        p = strchr(p, ',');
        if (p != NULL)
            p++;
    }
    return 0;
}

gdr_cu_result_t cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    uint64_t flags, unsigned int *symbolStatus)
{
    char base[128];
    unsigned int status = GDR_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    gpusim_any_fn *fn = NULL;

    (void) flags;               /* the per-thread default stream is the legacy one here */
    if (init_mode_is("stub"))
        return GDR_CUDA_ERROR_STUB_LIBRARY;
    if (symbol == NULL || pfn == NULL || cudaVersion > GPUSIM_DRIVER_VERSION)
        return GDR_CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    /* gdr asks base names ("cuMemAlloc"), as the driver wants; "cuMemAlloc_v2" works too */
    snprintf(base, sizeof(base), "%s", symbol);
    char *v = strrchr(base, '_');
    if (v != NULL && v[1] == 'v' && isdigit((unsigned char) v[2]))
        *v = '\0';
    if (gpusim_hidden(base)) {
        status = GDR_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    } else if (cudaVersion < GDR_CUDA_ABI_VERSION) {
        status = GDR_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;   /* only the 12+ ABI here */
    } else {
        for (size_t i = 0; i < sizeof(entry_points) / sizeof(entry_points[0]); i++)
            if (strcmp(entry_points[i].name, base) == 0)
                fn = entry_points[i].fn;
        if (fn == NULL && base[0] == 'c' && base[1] == 'u' && isupper((unsigned char) base[2])) {
            gpusim_debug("%s is not simulated: it will return CUDA_ERROR_NOT_SUPPORTED", base);
            fn = (gpusim_any_fn *) not_simulated;
        }
        if (fn != NULL)
            status = GDR_CU_GET_PROC_ADDRESS_SUCCESS;
    }
    memcpy(pfn, &fn, sizeof(*pfn));
    if (symbolStatus != NULL)
        *symbolStatus = status;
    return GDR_CUDA_SUCCESS;
}

gdr_cu_result_t cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, uint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- initialisation ---------------------------------------------------------------- */

static int env_int(const char *name, long dflt, long lo, long hi, long *out)
{
    const char *s = getenv(name);
    char *end;
    *out = dflt;
    if (s == NULL || *s == '\0')
        return 0;
    *out = strtol(s, &end, 10);
    if (*end != '\0' || *out < lo || *out > hi) {
        fprintf(stderr, "gpusim: %s=%s: not an integer in [%ld, %ld]\n", name, s, lo, hi);
        return -1;
    }
    return 0;
}

gdr_cu_result_t cuInit(unsigned int flags)
{
    long ndev, va_mb;
    gdr_cu_result_t rc = GDR_CUDA_SUCCESS;

    if (flags != 0)
        return GDR_CUDA_ERROR_INVALID_VALUE;
    if (init_mode_is("stub"))
        return GDR_CUDA_ERROR_STUB_LIBRARY;
    if (init_mode_is("nodevice"))
        return GDR_CUDA_ERROR_NO_DEVICE;
    pthread_mutex_lock(&gpusim.lock);
    if (gpusim.initialized) {
        /* a child forked after cuInit cannot use its parent's driver (as with CUDA) */
        rc = gpusim.pid == getpid() ? GDR_CUDA_SUCCESS : GDR_CUDA_ERROR_NOT_INITIALIZED;
        goto out;
    }
    const char *mode = getenv("GDR_GPUSIM_MODE");
    if (mode == NULL || *mode == '\0' || strcmp(mode, "strict") == 0) {
        gpusim.mode = GPUSIM_STRICT;
    } else if (strcmp(mode, "host-visible") == 0) {
        gpusim.mode = GPUSIM_HOST_VISIBLE;
    } else {
        fprintf(stderr, "gpusim: GDR_GPUSIM_MODE=%s: use strict or host-visible\n", mode);
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    long peer, dmabuf;
    if (env_int("GDR_GPUSIM_DEVICES", 1, 0, GPUSIM_MAX_DEVICES, &ndev) != 0
        || env_int("GDR_GPUSIM_VA_MB", 4096, 1, 1L << 24, &va_mb) != 0
        || env_int("GDR_GPUSIM_PEER_ACCESS", 1, 0, 1, &peer) != 0
        || env_int("GDR_GPUSIM_DMABUF", 1, 0, 1, &dmabuf) != 0) {
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    gpusim.ndev = (int) ndev;
    gpusim.peer_access = (int) peer;
    /* dmabuf export needs the kernel's udmabuf (maint/rxe's guests have it) */
    gpusim.dmabuf = dmabuf && access("/dev/udmabuf", R_OK | W_OK) == 0;
    gpusim.va_size = (size_t) va_mb << 20;
    for (int i = 0; i < GPUSIM_MAX_DEVICES; i++)
        gpusim.ctx[i].device = i;
    if (gpusim_memory_init() != 0) {
        rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    gpusim.pid = getpid();
    gpusim.next_id = 1;
    gpusim.initialized = 1;
    gpusim_debug("%s mode, %d device(s), %ld MiB of device addresses", mode ? mode : "strict",
                 gpusim.ndev, va_mb);
  out:
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t gpusim_need_init(void)
{
    return gpusim.initialized && gpusim.pid == getpid() ? GDR_CUDA_SUCCESS
        : GDR_CUDA_ERROR_NOT_INITIALIZED;
}

gdr_cu_result_t gpusim_need_current(void)
{
    if (gpusim_need_init() != GDR_CUDA_SUCCESS)
        return GDR_CUDA_ERROR_NOT_INITIALIZED;
    if (gpusim_current == NULL || gpusim_current->refs == 0)
        return GDR_CUDA_ERROR_INVALID_CONTEXT;
    return GDR_CUDA_SUCCESS;
}

gdr_cu_result_t gpusim_need_ctx(void)
{
    gdr_cu_result_t rc = gpusim_need_current();
    return rc != GDR_CUDA_SUCCESS ? rc : gpusim.sticky;
}

/* Unloading (dlclose, exit): workers stopped, memory unmapped, state as if never loaded. */
__attribute__((destructor)) static void gpusim_unload(void)
{
    if (!gpusim.initialized || gpusim.pid != getpid())
        return;
    gpusim_streams_fini();
    pthread_mutex_lock(&gpusim.lock);
    gpusim_memory_fini();
    gpusim_modules_fini();
    gpusim.initialized = 0;
    pthread_mutex_unlock(&gpusim.lock);
}

/* ---- versions, errors, devices, contexts -------------------------------------------- */

gdr_cu_result_t cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return GDR_CUDA_ERROR_INVALID_VALUE;
    *driverVersion = GPUSIM_DRIVER_VERSION;
    return GDR_CUDA_SUCCESS;
}

static const struct {
    gdr_cu_result_t rc;
    const char *name, *text;            /* the real driver's words */
} results[] = {
    { GDR_CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
    { GDR_CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
    { GDR_CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
    { GDR_CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
    { GDR_CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down" },
    { GDR_CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
      "CUDA driver is a stub library" },
    { GDR_CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
    { GDR_CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
    { GDR_CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
      "device kernel image is invalid" },
    { GDR_CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
    { GDR_CUDA_ERROR_MAP_FAILED, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed" },
    { GDR_CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
    { GDR_CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
    { GDR_CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
    { GDR_CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
      "an illegal memory access was encountered" },
    { GDR_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
      "part or all of the requested memory range is already mapped" },
    { GDR_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
      "pointer does not correspond to a registered memory region" },
    { GDR_CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure" },
    { GDR_CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
    { GDR_CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static gdr_cu_result_t result_words(gdr_cu_result_t rc, const char **str, int text)
{
    if (str == NULL)
        return GDR_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
        if (results[i].rc == rc) {
            *str = text ? results[i].text : results[i].name;
            return GDR_CUDA_SUCCESS;
        }
    *str = NULL;
    return GDR_CUDA_ERROR_INVALID_VALUE;
}

gdr_cu_result_t cuGetErrorString(gdr_cu_result_t error, const char **pStr)
{
    return result_words(error, pStr, 1);
}

gdr_cu_result_t cuGetErrorName(gdr_cu_result_t error, const char **pStr)
{
    return result_words(error, pStr, 0);
}

gdr_cu_result_t cuDeviceGetCount(int *count)
{
    gdr_cu_result_t rc = gpusim_need_init();
    if (rc == GDR_CUDA_SUCCESS && count == NULL)
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS)
        *count = gpusim.ndev;
    return rc;
}

static gdr_cu_result_t need_device(gdr_cu_device_t dev)
{
    gdr_cu_result_t rc = gpusim_need_init();
    if (rc == GDR_CUDA_SUCCESS && (dev < 0 || dev >= gpusim.ndev))
        rc = GDR_CUDA_ERROR_INVALID_DEVICE;
    return rc;
}

gdr_cu_result_t cuDeviceGet(gdr_cu_device_t *device, int ordinal)
{
    gdr_cu_result_t rc = need_device(ordinal);
    if (rc == GDR_CUDA_SUCCESS && device == NULL)
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS)
        *device = ordinal;
    return rc;
}

static int pci_bus(gdr_cu_device_t dev)
{
    return 0x11 + 0x10 * dev;           /* 0000:11:00.0, 0000:21:00.0, ... */
}

gdr_cu_result_t cuDeviceGetPCIBusId(char *pciBusId, int len, gdr_cu_device_t dev)
{
    gdr_cu_result_t rc = need_device(dev);
    if (rc == GDR_CUDA_SUCCESS && (pciBusId == NULL || len < 13))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS)
        snprintf(pciBusId, (size_t) len, "0000:%02x:00.0", pci_bus(dev));
    return rc;
}

gdr_cu_result_t cuDeviceGetAttribute(int *pi, unsigned int attrib, gdr_cu_device_t dev)
{
    gdr_cu_result_t rc = need_device(dev);
    if (rc != GDR_CUDA_SUCCESS)
        return rc;
    if (pi == NULL)
        return GDR_CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case GDR_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case GDR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
        *pi = 1024;
        break;
    case GDR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        *pi = 2147483647;
        break;
    case GDR_CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        *pi = 32;
        break;
    case GDR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *pi = 4;
        break;
    case GDR_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        *pi = pci_bus(dev);
        break;
    case GDR_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
    case GDR_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
    case GDR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    case GDR_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
        *pi = gpusim.dmabuf;
        break;
    case GDR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *pi = 9;
        break;
    case GDR_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case GDR_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case GDR_CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case GDR_CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
    case GDR_CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
        *pi = 1;
        break;
    case GDR_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:     /* what nvidia-peermem needs */
        *pi = gpusim.mode == GPUSIM_HOST_VISIBLE;
        break;
    default:
        return GDR_CUDA_ERROR_NOT_SUPPORTED;
    }
    return GDR_CUDA_SUCCESS;
}

gdr_cu_result_t cuDevicePrimaryCtxRetain(gdr_cu_context_t *pctx, gdr_cu_device_t dev)
{
    gdr_cu_result_t rc = need_device(dev);
    if (rc == GDR_CUDA_SUCCESS && pctx == NULL)
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc != GDR_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&gpusim.lock);
    gpusim.ctx[dev].refs++;
    *pctx = &gpusim.ctx[dev];
    pthread_mutex_unlock(&gpusim.lock);
    return GDR_CUDA_SUCCESS;
}

/* The last release leaves the context unusable (INVALID_CONTEXT) but, unlike the real
 * driver, frees nothing made in it. */
gdr_cu_result_t cuDevicePrimaryCtxRelease_v2(gdr_cu_device_t dev)
{
    gdr_cu_result_t rc = need_device(dev);
    if (rc != GDR_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&gpusim.lock);
    if (gpusim.ctx[dev].refs == 0)
        rc = GDR_CUDA_ERROR_INVALID_CONTEXT;
    else
        gpusim.ctx[dev].refs--;
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuCtxSetCurrent(gdr_cu_context_t ctx)
{
    gdr_cu_result_t rc = gpusim_need_init();
    if (rc != GDR_CUDA_SUCCESS)
        return rc;
    if (ctx != NULL && (ctx < &gpusim.ctx[0] || ctx >= &gpusim.ctx[gpusim.ndev] || ctx->refs == 0))
        return GDR_CUDA_ERROR_INVALID_CONTEXT;
    gpusim_current = ctx;
    return GDR_CUDA_SUCCESS;
}

gdr_cu_result_t cuCtxGetCurrent(gdr_cu_context_t *pctx)
{
    gdr_cu_result_t rc = gpusim_need_init();
    if (rc == GDR_CUDA_SUCCESS && pctx == NULL)
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS)
        *pctx = gpusim_current;
    return rc;
}

gdr_cu_result_t cuCtxGetDevice(gdr_cu_device_t *device)
{
    gdr_cu_result_t rc = gpusim_need_current();
    if (rc == GDR_CUDA_SUCCESS && device == NULL)
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS)
        *device = gpusim_current->device;
    return rc;
}
