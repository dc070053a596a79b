/* The GPU layer's context: opening one device, threads, features, error sentences. */
#include "gdr_gpu_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int errno_of(gdr_cu_result_t rc)
{
    switch (rc) {
    case GDR_CUDA_ERROR_OUT_OF_MEMORY:
        return ENOMEM;
    case GDR_CUDA_ERROR_NOT_SUPPORTED:
        return ENOTSUP;
    case GDR_CUDA_ERROR_INVALID_VALUE:
    case GDR_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
    case GDR_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
        return EINVAL;
    case GDR_CUDA_ERROR_NOT_FOUND:
        return ENOENT;
    case GDR_CUDA_ERROR_NOT_READY:
        return EAGAIN;
    case GDR_CUDA_ERROR_INVALID_HANDLE:
    case GDR_CUDA_ERROR_INVALID_CONTEXT:
        return EBADF;
    case GDR_CUDA_ERROR_NOT_INITIALIZED:
    case GDR_CUDA_ERROR_DEINITIALIZED:
    case GDR_CUDA_ERROR_NO_DEVICE:
    case GDR_CUDA_ERROR_INVALID_DEVICE:
        return ENODEV;
    case GDR_CUDA_ERROR_ILLEGAL_ADDRESS:
        return EFAULT;
    default:
        return EIO;
    }
}

int gdr_gpu_fail(gdr_gpu_t *g, const char *call, gdr_cu_result_t rc, const char *hint)
{
    char text[160];
    if (rc == GDR_CUDA_ERROR_INVALID_CONTEXT)
        hint = "call gdr_gpu_bind_thread on this thread first (no current context)";
    else if (rc == GDR_CUDA_ERROR_ILLEGAL_ADDRESS)
        hint = "a copy or kernel touched memory outside any allocation; the context is"
            " unusable from now on";
    else if (hint == NULL)
        hint = "see the CUDA driver's documentation of the call";
    pthread_mutex_lock(&g->lock);
    snprintf(g->error, sizeof(g->error), "%s failed (CUresult %u %s); %s", call, rc,
             gdr_gpu_driver_result_text(&g->drv, rc, text, sizeof(text)), hint);
    pthread_mutex_unlock(&g->lock);
    return -errno_of(rc);
}

int gdr_gpu_refuse(gdr_gpu_t *g, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&g->lock);
    vsnprintf(g->error, sizeof(g->error), fmt, ap);
    pthread_mutex_unlock(&g->lock);
    va_end(ap);
    return -err;
}

int gdr_gpu_off(gdr_gpu_t *g)
{
    if (g->error[0] == '\0')
        snprintf(g->error, sizeof(g->error), "GPU support is off (no gdr_gpu_open succeeded)");
    return -ENODEV;
}

/* The ordinal of the device whose context is current on this thread, or 0. */
static int current_ordinal(const gdr_gpu_driver_t *drv)
{
    gdr_cu_context_t cur = NULL;
    gdr_cu_device_t dev, d;
    if (drv->fn.cuCtxGetCurrent(&cur) != GDR_CUDA_SUCCESS || cur == NULL
        || drv->fn.cuCtxGetDevice(&dev) != GDR_CUDA_SUCCESS)
        return 0;
    for (int i = 0; i < drv->device_count; i++)
        if (drv->fn.cuDeviceGet(&d, i) == GDR_CUDA_SUCCESS && d == dev)
            return i;
    return 0;
}

static int attribute(gdr_gpu_t *g, unsigned int attr)
{
    int v = 0;
    if (g->drv.fn.cuDeviceGetAttribute(&v, attr, g->device) != GDR_CUDA_SUCCESS)
        return 0;
    return v;
}

static void feature_off(gdr_gpu_t *g, const char *why)
{
    size_t used = strlen(g->features_off);
    snprintf(g->features_off + used, sizeof(g->features_off) - used, "%s%s", used ? "; " : "",
             why);
}

/* Which features work: the driver's entry points and the device's attributes. */
static void find_features(gdr_gpu_t *g)
{
    unsigned has = g->drv.features;
    if (g->drv.missing[0] != '\0')
        feature_off(g, g->drv.missing);
    if ((has & GDR_GPU_DRIVER_DMABUF)
        && !attribute(g, GDR_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)) {
        feature_off(g, "dmabuf off: the device reports DMA_BUF_SUPPORTED 0");
        has &= ~(unsigned) GDR_GPU_DRIVER_DMABUF;
    }
    if ((has & GDR_GPU_DRIVER_MEMOPS)
        && !attribute(g, GDR_CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS)) {
        feature_off(g, "memops off: the device reports CAN_USE_64_BIT_STREAM_MEM_OPS 0");
        has &= ~(unsigned) GDR_GPU_DRIVER_MEMOPS;
    }
    g->features = ((has & GDR_GPU_DRIVER_DMABUF) ? GDR_GPU_DMABUF : 0)
        | ((has & GDR_GPU_DRIVER_MEMOPS) ? GDR_GPU_MEMOPS : 0)
        | ((has & GDR_GPU_DRIVER_IPC) ? GDR_GPU_IPC : 0)
        | ((has & GDR_GPU_DRIVER_KERNELS) ? GDR_GPU_KERNELS : 0);
}

/* Undoes a partial open, keeping g->error. */
static int open_failed(gdr_gpu_t *g, int rc)
{
    if (g->ctx != NULL)
        (void) g->drv.fn.cuDevicePrimaryCtxRelease(g->device);
    g->ctx = NULL;
    gdr_gpu_driver_release(&g->drv);
    g->on = 0;
    return rc;
}

int gdr_gpu_open(gdr_gpu_t *g, const char *driver_path, int device_ordinal)
{
    gdr_cu_result_t rc;
    gdr_cu_context_t ctx;

    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->lock, NULL);
    if (!gdr_gpu_driver_probe(&g->drv, driver_path))
        return gdr_gpu_refuse(g, ENODEV, "GPU support off: %s", g->drv.why_off);
    if (device_ordinal == GDR_GPU_DEVICE_CURRENT)
        device_ordinal = current_ordinal(&g->drv);
    if (device_ordinal < 0 || device_ordinal >= g->drv.device_count)
        return open_failed(g, gdr_gpu_refuse(g, ENODEV, "GPU support off: device %d does not"
                                             " exist (the driver sees %d)", device_ordinal,
                                             g->drv.device_count));
    g->ordinal = device_ordinal;
    rc = g->drv.fn.cuDeviceGet(&g->device, device_ordinal);
    if (rc != GDR_CUDA_SUCCESS)
        return open_failed(g, gdr_gpu_fail(g, "cuDeviceGet", rc, "GPU support off"));
    rc = g->drv.fn.cuDevicePrimaryCtxRetain(&ctx, g->device);
    if (rc != GDR_CUDA_SUCCESS)
        return open_failed(g, gdr_gpu_fail(g, "cuDevicePrimaryCtxRetain", rc,
                                           "GPU support off (is the device in exclusive or"
                                           " prohibited compute mode?)"));
    g->ctx = ctx;
    rc = g->drv.fn.cuCtxSetCurrent(ctx);
    if (rc != GDR_CUDA_SUCCESS)
        return open_failed(g, gdr_gpu_fail(g, "cuCtxSetCurrent", rc, "GPU support off"));
    if (!attribute(g, GDR_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING))
        return open_failed(g, gdr_gpu_refuse(g, ENODEV, "GPU support off: device %d lacks"
                                             " unified addressing", device_ordinal));
    g->cc_major = attribute(g, GDR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    g->cc_minor = attribute(g, GDR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    if (g->drv.fn.cuDeviceGetPCIBusId(g->busid, (int) sizeof(g->busid), g->device)
        != GDR_CUDA_SUCCESS)
        snprintf(g->busid, sizeof(g->busid), "unknown");
    find_features(g);
    g->on = 1;
    return 0;
}

void gdr_gpu_close(gdr_gpu_t *g)
{
    if (g->on) {
        gdr_cu_context_t prev = NULL;
        (void) g->drv.fn.cuCtxGetCurrent(&prev);
        (void) g->drv.fn.cuCtxSetCurrent(g->ctx);     /* modules go in their context */
        for (int i = 0; i < g->n_modules; i++)
            (void) g->drv.fn.cuModuleUnload(g->modules[i]);
        (void) g->drv.fn.cuCtxSetCurrent(prev);
        (void) g->drv.fn.cuDevicePrimaryCtxRelease(g->device);
    }
    gdr_gpu_driver_release(&g->drv);
    pthread_mutex_destroy(&g->lock);
    memset(g, 0, sizeof(*g));
}

int gdr_gpu_bind_thread(gdr_gpu_t *g)
{
    if (!g->on)
        return gdr_gpu_off(g);
    gdr_cu_result_t rc = g->drv.fn.cuCtxSetCurrent(g->ctx);
    return rc == GDR_CUDA_SUCCESS ? 0 : gdr_gpu_fail(g, "cuCtxSetCurrent", rc,
                                                     "this thread cannot use the GPU");
}

void gdr_gpu_describe(const gdr_gpu_t *g, char *buf, size_t len)
{
    static const struct { unsigned bit; const char *name; } names[] = {
        { GDR_GPU_DMABUF, "dmabuf" }, { GDR_GPU_MEMOPS, "memops" },
        { GDR_GPU_IPC, "ipc" }, { GDR_GPU_KERNELS, "kernels" },
    };
    char on[64] = "";
    if (!g->on) {
        snprintf(buf, len, "%s", g->error[0] ? g->error : "GPU support off");
        return;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (g->features & names[i].bit) {
            size_t used = strlen(on);
            snprintf(on + used, sizeof(on) - used, "%s%s", used ? " " : "", names[i].name);
        }
    snprintf(buf, len, "GPU %d (%s, sm_%d%d, driver %d.%d): %s%s%s", g->ordinal, g->busid,
             g->cc_major, g->cc_minor, g->drv.driver_version / 1000,
             g->drv.driver_version % 1000 / 10, on[0] ? on : "no optional features",
             g->features_off[0] ? "; " : "", g->features_off);
}
