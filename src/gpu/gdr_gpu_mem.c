/* Memory queries, allocation, pinned and registered host memory, dmabuf export. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* sysconf's _SC_PAGESIZE */
#endif
#include "gdr_gpu_mem.h"
#include "gdr_gpu_internal.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int gdr_gpu_mem_query(gdr_gpu_t *g, const void *p, gdr_gpu_mem_info_t *info)
{
    unsigned int type = 0, managed = 0;
    int ordinal = -1;
    unsigned long long buffer_id = 0;
    gdr_cu_ptr_t start = 0;
    size_t size = 0;
    unsigned int attrs[] = {
        GDR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, GDR_CU_POINTER_ATTRIBUTE_IS_MANAGED,
        GDR_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, GDR_CU_POINTER_ATTRIBUTE_BUFFER_ID,
        GDR_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, GDR_CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    };
    void *data[] = { &type, &managed, &ordinal, &buffer_id, &start, &size };

    memset(info, 0, sizeof(*info));
    info->device = -1;
    if (!g->on)
        return 0;               /* no GPU: all memory is host memory */
    gdr_cu_result_t rc = g->drv.fn.cuPointerGetAttributes(sizeof(attrs) / sizeof(attrs[0]),
                                                          attrs, data, gdr_gpu_ptr(p));
    /* Memory no context knows: the driver answers success with zeroed attributes, or (the
     * documentation allows both) INVALID_VALUE / INVALID_CONTEXT. */
    if (rc == GDR_CUDA_ERROR_INVALID_VALUE || rc == GDR_CUDA_ERROR_INVALID_CONTEXT)
        return 0;
    if (rc != GDR_CUDA_SUCCESS)
        return gdr_gpu_fail(g, "cuPointerGetAttributes", rc, "cannot tell host from device"
                            " memory");
    info->is_device = type == GDR_CU_MEMORYTYPE_DEVICE;
    info->is_managed = managed != 0;
    info->is_pinned_host = type == GDR_CU_MEMORYTYPE_HOST;
    if (type == 0)
        return 0;
    info->device = info->is_device ? ordinal : -1;
    info->buffer_id = buffer_id;
    info->base = (uintptr_t) start;
    info->size = size;
    return 0;
}

int gdr_gpu_mem_alloc(gdr_gpu_t *g, size_t n, void **p)
{
    gdr_cu_ptr_t d = 0;

    *p = NULL;
    if (!g->on)
        return gdr_gpu_off(g);
    gdr_cu_result_t rc = g->drv.fn.cuMemAlloc(&d, n);
    if (rc != GDR_CUDA_SUCCESS)
        return gdr_gpu_fail(g, "cuMemAlloc", rc, "free device memory or ask for less");
    *p = (void *) (uintptr_t) d;
    return 0;
}

int gdr_gpu_mem_free(gdr_gpu_t *g, void *p)
{
    if (!g->on)
        return gdr_gpu_off(g);
    gdr_cu_result_t rc = g->drv.fn.cuMemFree(gdr_gpu_ptr(p));
    return rc == GDR_CUDA_SUCCESS ? 0 : gdr_gpu_fail(g, "cuMemFree", rc, "the pointer must be"
                                                     " one gdr_gpu_mem_alloc returned");
}

int gdr_gpu_host_alloc(gdr_gpu_t *g, size_t n, void **p)
{
    *p = NULL;
    if (!g->on)
        return gdr_gpu_off(g);
    gdr_cu_result_t rc = g->drv.fn.cuMemHostAlloc(p, n, GDR_CU_MEMHOSTALLOC_PORTABLE
                                                  | GDR_CU_MEMHOSTALLOC_DEVICEMAP);
    if (rc != GDR_CUDA_SUCCESS) {
        *p = NULL;
        return gdr_gpu_fail(g, "cuMemHostAlloc", rc, "pinned memory is limited by RLIMIT_MEMLOCK"
                            " and the machine's memory");
    }
    return 0;
}

int gdr_gpu_host_free(gdr_gpu_t *g, void *p)
{
    if (!g->on)
        return gdr_gpu_off(g);
    gdr_cu_result_t rc = g->drv.fn.cuMemFreeHost(p);
    return rc == GDR_CUDA_SUCCESS ? 0 : gdr_gpu_fail(g, "cuMemFreeHost", rc, "the pointer must"
                                                     " be one gdr_gpu_host_alloc returned");
}

int gdr_gpu_host_register(gdr_gpu_t *g, void *p, size_t n, void **dev_p)
{
    gdr_cu_ptr_t d = 0;

    if (!g->on)
        return gdr_gpu_off(g);
    gdr_cu_result_t rc = g->drv.fn.cuMemHostRegister(p, n, GDR_CU_MEMHOSTREGISTER_PORTABLE
                                                     | GDR_CU_MEMHOSTREGISTER_DEVICEMAP);
    if (rc != GDR_CUDA_SUCCESS)
        return gdr_gpu_fail(g, "cuMemHostRegister", rc, "the range must not overlap one"
                            " registered already");
    if (dev_p == NULL)
        return 0;
    rc = g->drv.fn.cuMemHostGetDevicePointer(&d, p, 0);
    if (rc != GDR_CUDA_SUCCESS) {
        (void) g->drv.fn.cuMemHostUnregister(p);
        return gdr_gpu_fail(g, "cuMemHostGetDevicePointer", rc, "the range was not registered");
    }
    *dev_p = (void *) (uintptr_t) d;
    return 0;
}

int gdr_gpu_host_unregister(gdr_gpu_t *g, void *p)
{
    if (!g->on)
        return gdr_gpu_off(g);
    gdr_cu_result_t rc = g->drv.fn.cuMemHostUnregister(p);
    return rc == GDR_CUDA_SUCCESS ? 0 : gdr_gpu_fail(g, "cuMemHostUnregister", rc, "the"
                                                     " pointer must be one registered");
}

/* GPU on and exporting dmabufs, and what holds p: 0, else the refusal. */
static int dmabuf_query(gdr_gpu_t *g, const void *p, gdr_gpu_mem_info_t *info)
{
    if (!g->on)
        return gdr_gpu_off(g);
    if (!(g->features & GDR_GPU_DMABUF))
        return gdr_gpu_refuse(g, ENOTSUP, "dmabuf export is not supported here (%s); use"
                              " GPUDirect through nvidia-peermem or staging", g->features_off);
    return gdr_gpu_mem_query(g, p, info);
}

/* The driver exports whole host pages: those the allocation spans (a small allocation may
 * share its first and last page with others; they are device memory too). */
static void allocation_pages(const gdr_gpu_mem_info_t *info, uintptr_t *first, uintptr_t *end)
{
    uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
    *first = info->base / page * page;
    *end = (info->base + info->size + page - 1) / page * page;
}

/* [p, p+n), inside the pages from first to end, as a dmabuf of those pages. */
static int export_pages(gdr_gpu_t *g, uintptr_t first, uintptr_t end, uintptr_t p, int *fd,
                        uint64_t *offset)
{
    gdr_cu_result_t cr = g->drv.fn.cuMemGetHandleForAddressRange(
        fd, (gdr_cu_ptr_t) first, end - first, GDR_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (cr != GDR_CUDA_SUCCESS) {
        *fd = -1;
        return gdr_gpu_fail(g, "cuMemGetHandleForAddressRange", cr, "dmabuf export failed; use"
                            " GPUDirect through nvidia-peermem or staging");
    }
    *offset = p - first;
    return 0;
}

int gdr_gpu_dmabuf_export(gdr_gpu_t *g, const void *p, size_t n, int *fd, uint64_t *offset)
{
    gdr_gpu_mem_info_t info;
    uintptr_t first, end;

    *fd = -1;
    *offset = 0;
    int rc = dmabuf_query(g, p, &info);
    if (rc != 0)
        return rc;
    allocation_pages(&info, &first, &end);
    if (!info.is_device || (uintptr_t) p < first || (uintptr_t) p + n > end)
        return gdr_gpu_refuse(g, EINVAL, "dmabuf export of %p+%zu: not inside one device"
                              " allocation's pages", p, n);
    return export_pages(g, first, end, (uintptr_t) p, fd, offset);
}

int gdr_gpu_dmabuf_export_around(gdr_gpu_t *g, const void *asked, void **p, size_t *n, int *fd,
                                 uint64_t *offset)
{
    gdr_gpu_mem_info_t info;
    uintptr_t first, end;

    *fd = -1;
    *offset = 0;
    int rc = dmabuf_query(g, asked, &info);
    if (rc != 0)
        return rc;
    if (!info.is_device || info.is_managed)
        return 1;
    allocation_pages(&info, &first, &end);
    uintptr_t lo = (uintptr_t) *p, hi = lo + *n;
    lo = lo > first ? lo : first;
    hi = hi < end ? hi : end;
    if (lo >= hi || (uintptr_t) asked < lo || (uintptr_t) asked >= hi)
        return gdr_gpu_refuse(g, EINVAL, "dmabuf export around %p: the range %p+%zu misses its"
                              " allocation's pages", asked, *p, *n);
    rc = export_pages(g, first, end, lo, fd, offset);
    if (rc == 0) {
        *p = (void *) lo;
        *n = hi - lo;
    }
    return rc;
}
