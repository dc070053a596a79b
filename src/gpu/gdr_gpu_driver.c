#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* RTLD_* extensions */
#endif
#include "gdr_gpu_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define CUDA_SUCCESS_CODE 0
#define CUDA_ERROR_STUB_LIBRARY_CODE 34

static const char *result_text(const gdr_gpu_driver_t *drv, int rc)
{
    const char *s = NULL;
    if (drv->fn.cuGetErrorString != NULL && drv->fn.cuGetErrorString(rc, &s) == 0 && s != NULL)
        return s;
    return "unknown CUDA error";
}

static int off(gdr_gpu_driver_t *drv, const char *fmt, const char *a, const char *b)
{
    snprintf(drv->why_off, sizeof(drv->why_off), fmt, a, b);
    if (drv->handle != NULL)
        dlclose(drv->handle);
    drv->handle = NULL;
    memset(&drv->fn, 0, sizeof(drv->fn));
    drv->enabled = 0;
    drv->device_count = 0;
    return 0;
}

int gdr_gpu_driver_probe(gdr_gpu_driver_t *drv, const char *soname)
{
    int rc;
    char code[32];

    memset(drv, 0, sizeof(*drv));
    if (soname == NULL)
        soname = GDR_GPU_DRIVER_SONAME;
    drv->handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (drv->handle == NULL)
        return off(drv, "%s not found (no NVIDIA driver on this machine): %s", soname, dlerror());

    drv->fn.cuInit = (int (*)(unsigned int)) dlsym(drv->handle, "cuInit");
    drv->fn.cuDeviceGetCount = (int (*)(int *)) dlsym(drv->handle, "cuDeviceGetCount");
    drv->fn.cuDriverGetVersion = (int (*)(int *)) dlsym(drv->handle, "cuDriverGetVersion");
    drv->fn.cuGetErrorString = (int (*)(int, const char **)) dlsym(drv->handle, "cuGetErrorString");
    drv->fn.cuDeviceGet = (int (*)(int *, int)) dlsym(drv->handle, "cuDeviceGet");
    drv->fn.cuDeviceGetPCIBusId = (int (*)(char *, int, int)) dlsym(drv->handle,
                                                                    "cuDeviceGetPCIBusId");
    if (drv->fn.cuInit == NULL || drv->fn.cuDeviceGetCount == NULL)
        return off(drv, "%s lacks cuInit/cuDeviceGetCount%s: not an NVIDIA driver", soname, "");

    rc = drv->fn.cuInit(0);
    if (rc == CUDA_ERROR_STUB_LIBRARY_CODE)
        return off(drv, "%s is the toolkit's stub library, not a driver%s", soname, "");
    if (rc != CUDA_SUCCESS_CODE) {
        snprintf(code, sizeof(code), "%d", rc);
        return off(drv, "cuInit failed (CUresult %s: %s)", code, result_text(drv, rc));
    }
    rc = drv->fn.cuDeviceGetCount(&drv->device_count);
    if (rc != CUDA_SUCCESS_CODE) {
        snprintf(code, sizeof(code), "%d", rc);
        return off(drv, "cuDeviceGetCount failed (CUresult %s: %s)", code, result_text(drv, rc));
    }
    if (drv->device_count <= 0)
        return off(drv, "the NVIDIA driver reports no device%s%s", "", "");
    if (drv->fn.cuDriverGetVersion != NULL)
        (void) drv->fn.cuDriverGetVersion(&drv->driver_version);
    drv->enabled = 1;
    return 1;
}

int gdr_gpu_driver_pci_busid(const gdr_gpu_driver_t *drv, int ordinal, char *buf, size_t len)
{
    int dev;
    if (!drv->enabled || drv->fn.cuDeviceGet == NULL || drv->fn.cuDeviceGetPCIBusId == NULL
        || len < 16 || drv->fn.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS_CODE
        || drv->fn.cuDeviceGetPCIBusId(buf, (int) len, dev) != CUDA_SUCCESS_CODE)
        return -1;
    return 0;
}

void gdr_gpu_driver_release(gdr_gpu_driver_t *drv)
{
    if (drv->handle != NULL)
        dlclose(drv->handle);
    memset(drv, 0, sizeof(*drv));
}
