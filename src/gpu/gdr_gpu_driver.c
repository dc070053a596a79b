#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* RTLD_* extensions */
#endif
#include "gdr_gpu_driver.h"
#include "gdr_gpu_internal.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Every entry point: its base name, where it goes in the table, and the feature it belongs
 * to (0: required, the driver is off without it). */
#define ENTRY(name, feature) { #name, offsetof(gdr_gpu_driver_table_t, name), feature }
#define OPTIONAL (-1)           /* neither required nor part of a feature */
static const struct driver_entry {
    const char *name;
    size_t offset;
    int feature;
} entries[] = {
    ENTRY(cuInit, 0),
    ENTRY(cuDriverGetVersion, 0),
    ENTRY(cuGetErrorString, 0),
    ENTRY(cuGetErrorName, OPTIONAL),
    ENTRY(cuDeviceGetCount, 0),
    ENTRY(cuDeviceGet, 0),
    ENTRY(cuDeviceGetPCIBusId, 0),
    ENTRY(cuDeviceGetAttribute, 0),
    ENTRY(cuDevicePrimaryCtxRetain, 0),
    ENTRY(cuDevicePrimaryCtxRelease, 0),
    ENTRY(cuCtxSetCurrent, 0),
    ENTRY(cuCtxGetCurrent, 0),
    ENTRY(cuCtxGetDevice, 0),
    ENTRY(cuPointerGetAttributes, 0),
    ENTRY(cuMemGetAddressRange, 0),
    ENTRY(cuMemGetHandleForAddressRange, GDR_GPU_DRIVER_DMABUF),
    ENTRY(cuMemAlloc, 0),
    ENTRY(cuMemFree, 0),
    ENTRY(cuMemHostAlloc, 0),
    ENTRY(cuMemFreeHost, 0),
    ENTRY(cuMemHostRegister, 0),
    ENTRY(cuMemHostUnregister, 0),
    ENTRY(cuMemHostGetDevicePointer, 0),
    ENTRY(cuMemcpy, 0),
    ENTRY(cuMemcpyAsync, 0),
    ENTRY(cuMemsetD8Async, 0),
    ENTRY(cuStreamCreate, 0),
    ENTRY(cuStreamDestroy, 0),
    ENTRY(cuStreamSynchronize, 0),
    ENTRY(cuStreamQuery, 0),
    ENTRY(cuStreamWaitEvent, 0),
    ENTRY(cuEventCreate, 0),
    ENTRY(cuEventRecord, 0),
    ENTRY(cuEventQuery, 0),
    ENTRY(cuEventSynchronize, 0),
    ENTRY(cuEventDestroy, 0),
    ENTRY(cuStreamWaitValue64, GDR_GPU_DRIVER_MEMOPS),
    ENTRY(cuStreamWriteValue64, GDR_GPU_DRIVER_MEMOPS),
    ENTRY(cuIpcGetMemHandle, GDR_GPU_DRIVER_IPC),
    ENTRY(cuIpcOpenMemHandle, GDR_GPU_DRIVER_IPC),
    ENTRY(cuIpcCloseMemHandle, GDR_GPU_DRIVER_IPC),
    ENTRY(cuModuleLoadData, GDR_GPU_DRIVER_KERNELS),
    ENTRY(cuModuleUnload, GDR_GPU_DRIVER_KERNELS),
    ENTRY(cuModuleGetFunction, GDR_GPU_DRIVER_KERNELS),
    ENTRY(cuLaunchKernel, GDR_GPU_DRIVER_KERNELS),
};
#undef ENTRY

static const char *const feature_names[] = { "dmabuf", "memops", "ipc", "kernels" };

static int off(gdr_gpu_driver_t *drv, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(drv->why_off, sizeof(drv->why_off), fmt, ap);
    va_end(ap);
    if (drv->handle != NULL)
        dlclose(drv->handle);
    drv->handle = NULL;
    memset(&drv->fn, 0, sizeof(drv->fn));
    drv->enabled = 0;
    drv->device_count = 0;
    drv->features = 0;
    drv->missing[0] = '\0';
    return 0;
}

const char *gdr_gpu_driver_result_text(const gdr_gpu_driver_t *drv, gdr_cu_result_t rc,
                                       char *buf, size_t len)
{
    const char *name = NULL, *text = NULL;
    if (drv->fn.cuGetErrorName == NULL || drv->fn.cuGetErrorName(rc, &name) != GDR_CUDA_SUCCESS)
        name = NULL;
    if (drv->fn.cuGetErrorString == NULL
        || drv->fn.cuGetErrorString(rc, &text) != GDR_CUDA_SUCCESS)
        text = NULL;
    snprintf(buf, len, "%s%s%s", name ? name : "", name && text ? ": " : "",
             text ? text : (name ? "" : "unknown CUDA error"));
    return buf;
}

/* Notes a feature without its entry point in drv->missing (once per feature). */
static void note_missing(gdr_gpu_driver_t *drv, int feature, const char *name)
{
    int bit = 0;
    while (bit < 4 && (1 << bit) != feature)
        bit++;
    if (!(drv->features & (unsigned) feature))
        return;
    drv->features &= ~(unsigned) feature;
    size_t used = strlen(drv->missing);
    snprintf(drv->missing + used, sizeof(drv->missing) - used, "%s%s off: the driver has no %s",
             used ? "; " : "", feature_names[bit], name);
}

int gdr_gpu_driver_probe(gdr_gpu_driver_t *drv, const char *soname)
{
    gdr_cu_result_t rc;
    char text[128];
    gdr_cuGetProcAddress_fn *get_proc;

    memset(drv, 0, sizeof(*drv));
    if (soname == NULL)
        soname = GDR_GPU_DRIVER_SONAME;
    drv->handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (drv->handle == NULL)
        return off(drv, "%s not found (no NVIDIA driver on this machine): %s", soname, dlerror());

    /* dlsym's object pointer to a function pointer: POSIX guarantees this conversion */
    void *sym = dlsym(drv->handle, "cuGetProcAddress_v2");
    memcpy(&get_proc, &sym, sizeof(get_proc));
    if (get_proc == NULL)
        return off(drv, "%s lacks cuGetProcAddress_v2: not an NVIDIA driver for CUDA 12 or newer",
                   soname);

    drv->features = GDR_GPU_DRIVER_DMABUF | GDR_GPU_DRIVER_MEMOPS | GDR_GPU_DRIVER_IPC
        | GDR_GPU_DRIVER_KERNELS;
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        const struct driver_entry *e = &entries[i];
        void *fn = NULL;
        unsigned int status = GDR_CU_GET_PROC_ADDRESS_SUCCESS;
        rc = get_proc(e->name, &fn, GDR_CUDA_ABI_VERSION, GDR_CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                      &status);
        if (rc == GDR_CUDA_ERROR_STUB_LIBRARY)
            return off(drv, "%s is the toolkit's stub library, not a driver", soname);
        if (rc != GDR_CUDA_SUCCESS)
            return off(drv, "cuGetProcAddress(%s, CUDA %d) failed with CUresult %u", e->name,
                       GDR_CUDA_ABI_VERSION, rc);
        if (fn == NULL || status != GDR_CU_GET_PROC_ADDRESS_SUCCESS) {
            if (e->feature == 0)
                return off(drv, "%s has no %s for CUDA %d (driver too old?)", soname, e->name,
                           GDR_CUDA_ABI_VERSION);
            if (e->feature > 0)
                note_missing(drv, e->feature, e->name);
            continue;
        }
        memcpy((char *) &drv->fn + e->offset, &fn, sizeof(fn));
    }

    rc = drv->fn.cuInit(0);
    if (rc == GDR_CUDA_ERROR_STUB_LIBRARY)
        return off(drv, "%s is the toolkit's stub library, not a driver", soname);
    if (rc != GDR_CUDA_SUCCESS)
        return off(drv, "cuInit failed (CUresult %u %s)", rc,
                   gdr_gpu_driver_result_text(drv, rc, text, sizeof(text)));
    rc = drv->fn.cuDeviceGetCount(&drv->device_count);
    if (rc != GDR_CUDA_SUCCESS)
        return off(drv, "cuDeviceGetCount failed (CUresult %u %s)", rc,
                   gdr_gpu_driver_result_text(drv, rc, text, sizeof(text)));
    if (drv->device_count <= 0)
        return off(drv, "the NVIDIA driver reports no device");
    (void) drv->fn.cuDriverGetVersion(&drv->driver_version);
    drv->enabled = 1;
    return 1;
}

int gdr_gpu_driver_pci_busid(const gdr_gpu_driver_t *drv, int ordinal, char *buf, size_t len)
{
    gdr_cu_device_t dev;
    if (!drv->enabled || len < 16 || drv->fn.cuDeviceGet(&dev, ordinal) != GDR_CUDA_SUCCESS
        || drv->fn.cuDeviceGetPCIBusId(buf, (int) len, dev) != GDR_CUDA_SUCCESS)
        return -1;
    return 0;
}

void gdr_gpu_driver_release(gdr_gpu_driver_t *drv)
{
    if (drv->handle != NULL)
        dlclose(drv->handle);
    memset(drv, 0, sizeof(*drv));
}

void *gdr_gpu_driver_entry(const gdr_gpu_driver_t *drv, const char *name, int cuda_version)
{
    gdr_cuGetProcAddress_fn *get_proc;
    void *fn = NULL, *sym = drv->handle != NULL ? dlsym(drv->handle, "cuGetProcAddress_v2") : NULL;
    unsigned int status = GDR_CU_GET_PROC_ADDRESS_SUCCESS;
    memcpy(&get_proc, &sym, sizeof(get_proc));
    if (get_proc == NULL
        || get_proc(name, &fn, cuda_version, GDR_CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status)
        != GDR_CUDA_SUCCESS || status != GDR_CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return fn;
}
