/* IPC handles.  A handle names the exporter's memfd by process and descriptor number; the
 * importer opens /proc/<pid>/fd/<n> (same user, same node), checks by the memfd's name that
 * it is still the same allocation, and maps it at a device address of its own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "gpusim.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IPC_MAGIC "gpusim1"

typedef struct ipc_wire {               /* inside CUipcMemHandle's 64 bytes */
    char magic[8];
    int32_t pid;
    int32_t memfd;
    uint64_t size;
    uint64_t mapped;
    uint64_t buffer_id;
    int32_t device;                     /* the exporter's device */
    int32_t pad;
} ipc_wire_t;

_Static_assert(sizeof(ipc_wire_t) <= GDR_CU_IPC_HANDLE_SIZE, "IPC handle too small");

gdr_cu_result_t cuIpcGetMemHandle(gdr_cu_ipc_mem_handle_t *pHandle, gdr_cu_ptr_t dptr)
{
    ipc_wire_t w;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    const gpusim_range_t *r = gpusim_range_find(dptr);
    if (rc == GDR_CUDA_SUCCESS && (pHandle == NULL || r == NULL || r->kind != GPUSIM_DEVICE))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;     /* only cuMemAlloc memory can be exported */
    if (rc == GDR_CUDA_SUCCESS) {
        memset(&w, 0, sizeof(w));
        memcpy(w.magic, IPC_MAGIC, sizeof(w.magic));
        w.pid = (int32_t) getpid();
        w.memfd = r->memfd;
        w.size = r->size;
        w.mapped = r->mapped;
        w.buffer_id = r->buffer_id;
        w.device = r->device;
        memset(pHandle, 0, sizeof(*pHandle));
        memcpy(pHandle->reserved, &w, sizeof(w));
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* The exporter's memfd, if it is still the allocation the handle names; else -1. */
static int open_exported(const ipc_wire_t *w)
{
    char path[64], link[128], want[64];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) w->pid, (int) w->memfd);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n < 0) {
        gpusim_debug("IPC open: %s: the exporter has exited or closed it", path);
        return -1;
    }
    link[n] = '\0';
    snprintf(want, sizeof(want), "/memfd:gpusim:%llx ", (unsigned long long) w->buffer_id);
    if (strncmp(link, want, strlen(want)) != 0) {
        gpusim_debug("IPC open: %s is %s, not buffer %llx (freed?)", path, link,
                     (unsigned long long) w->buffer_id);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0 && (fstat(fd, &st) != 0 || (uint64_t) st.st_size < w->mapped)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

gdr_cu_result_t cuIpcOpenMemHandle_v2(gdr_cu_ptr_t *pdptr, gdr_cu_ipc_mem_handle_t handle,
                                      unsigned int Flags)
{
    ipc_wire_t w;
    gpusim_range_t r = { .kind = GPUSIM_IPC, .memfd = -1, .ipc_refs = 1 };

    memcpy(&w, handle.reserved, sizeof(w));
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (pdptr == NULL || Flags != GDR_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
                                   || memcmp(w.magic, IPC_MAGIC, sizeof(w.magic)) != 0))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS && w.pid == (int32_t) getpid())
        rc = GDR_CUDA_ERROR_INVALID_CONTEXT;   /* the real driver's answer in the exporter */
    /* another device's memory maps only with peer access (GDR_GPUSIM_PEER_ACCESS=0: none) */
    if (rc == GDR_CUDA_SUCCESS && w.device != gpusim_current->device && !gpusim.peer_access)
        rc = GDR_CUDA_ERROR_INVALID_DEVICE;
    if (rc != GDR_CUDA_SUCCESS)
        goto out;
    /* opened already: the same mapping, one more reference */
    for (size_t i = 0; i < gpusim.nranges; i++) {
        gpusim_range_t *o = &gpusim.ranges[i];
        if (o->kind == GPUSIM_IPC && o->ipc_pid == w.pid && o->ipc_buffer_id == w.buffer_id) {
            o->ipc_refs++;
            *pdptr = o->base;
            goto out;
        }
    }
    int fd = open_exported(&w);
    if (fd < 0) {
        rc = GDR_CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    r.size = w.size;
    r.mapped = w.mapped;
    r.device = w.device;                /* the memory stays the exporter's device's */
    r.buffer_id = gpusim_new_buffer_id();     /* ids are per process, as CUDA documents */
    r.ipc_pid = w.pid;
    r.ipc_buffer_id = w.buffer_id;
    rc = GDR_CUDA_ERROR_MAP_FAILED;
    if (gpusim_va_take(r.mapped, &r.base) == 0 && gpusim_va_map(r.base, r.mapped, fd) == 0) {
        if (gpusim_range_insert(&r) != NULL) {
            *pdptr = r.base;
            rc = GDR_CUDA_SUCCESS;
        } else {
            gpusim_va_give_back(r.base, r.mapped);
        }
    }
    close(fd);                          /* the mapping keeps the memory */
  out:
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuIpcCloseMemHandle(gdr_cu_ptr_t dptr)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_current();
    gpusim_range_t *r = gpusim_range_find(dptr);
    if (rc == GDR_CUDA_SUCCESS && (r == NULL || r->kind != GPUSIM_IPC || r->base != dptr))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS && --r->ipc_refs == 0) {
        gpusim_wait_idle();
        r = gpusim_range_find(dptr);    /* the table may have changed while waiting */
        if (r != NULL && r->kind == GPUSIM_IPC && r->ipc_refs == 0) {
            gpusim_va_give_back(r->base, r->mapped);
            gpusim_range_remove(r);
        }
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}
