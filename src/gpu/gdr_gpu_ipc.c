/* CUDA IPC handles: export, open, close. */
#include "gdr_gpu_ipc.h"
#include "gdr_gpu_internal.h"
#include "gdr_gpu_mem.h"

#include <errno.h>
#include <string.h>

static int ipc_refused(gdr_gpu_t *g)
{
    return gdr_gpu_refuse(g, ENOTSUP, "CUDA IPC is not supported here (%s)", g->features_off);
}

int gdr_gpu_ipc_handle_get(gdr_gpu_t *g, const void *p, gdr_gpu_ipc_handle_t *h)
{
    gdr_gpu_mem_info_t info;
    int rc;

    memset(h, 0, sizeof(*h));
    if (!g->on)
        return gdr_gpu_off(g);
    if (!(g->features & GDR_GPU_IPC))
        return ipc_refused(g);
    rc = gdr_gpu_mem_query(g, p, &info);
    if (rc != 0)
        return rc;
    if (!info.is_device || info.is_managed)
        return gdr_gpu_refuse(g, EINVAL, "CUDA IPC of %p: not memory from cuMemAlloc", p);
    gdr_cu_result_t cr = g->drv.fn.cuIpcGetMemHandle(&h->cuda, (gdr_cu_ptr_t) info.base);
    if (cr != GDR_CUDA_SUCCESS)
        return gdr_gpu_fail(g, "cuIpcGetMemHandle", cr, "the memory cannot be shared");
    h->buffer_id = info.buffer_id;
    h->offset = (uintptr_t) p - info.base;
    h->size = info.size;
    return 0;
}

int gdr_gpu_ipc_open(gdr_gpu_t *g, const gdr_gpu_ipc_handle_t *h, void **p)
{
    gdr_cu_ptr_t base = 0;

    *p = NULL;
    if (!g->on)
        return gdr_gpu_off(g);
    if (!(g->features & GDR_GPU_IPC))
        return ipc_refused(g);
    gdr_cu_result_t cr = g->drv.fn.cuIpcOpenMemHandle(&base, h->cuda,
                                                      GDR_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (cr == GDR_CUDA_ERROR_INVALID_CONTEXT)
        return gdr_gpu_refuse(g, EBADF, "cuIpcOpenMemHandle failed (CUresult %u, invalid"
                              " context): either the handle comes from this very process (use"
                              " its pointer directly) or this thread has no current context"
                              " (gdr_gpu_bind_thread)", cr);
    if (cr != GDR_CUDA_SUCCESS)
        return gdr_gpu_fail(g, "cuIpcOpenMemHandle", cr, "the exporter may have freed the"
                            " memory or exited");
    *p = (void *) (uintptr_t) (base + h->offset);
    return 0;
}

int gdr_gpu_ipc_close(gdr_gpu_t *g, void *p)
{
    gdr_cu_ptr_t base = 0;

    if (!g->on)
        return gdr_gpu_off(g);
    gdr_cu_result_t cr = g->drv.fn.cuMemGetAddressRange(&base, NULL, gdr_gpu_ptr(p));
    if (cr != GDR_CUDA_SUCCESS)
        return gdr_gpu_fail(g, "cuMemGetAddressRange", cr, "the pointer must be one"
                            " gdr_gpu_ipc_open returned");
    cr = g->drv.fn.cuIpcCloseMemHandle(base);
    return cr == GDR_CUDA_SUCCESS ? 0 : gdr_gpu_fail(g, "cuIpcCloseMemHandle", cr, "the"
                                                     " pointer must be one gdr_gpu_ipc_open"
                                                     " returned");
}
