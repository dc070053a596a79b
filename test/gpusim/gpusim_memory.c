/* Device memory and what CUDA knows about memory.
 *
 * Device addresses lie in one reserved range (dev_base, va_size bytes, PROT_NONE).  Each
 * cuMemAlloc is a memfd of its own, mapped RW at the same offset of alias_base: the
 * simulator reaches device memory only there.  In strict mode alias_base is a second
 * reserved range, so the device address itself stays PROT_NONE and a host dereference
 * crashes; in host-visible mode alias_base is dev_base and the host may touch it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* memfd_create, MAP_NORESERVE */
#endif
#include "gpusim.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static size_t page_size(void)
{
    return (size_t) sysconf(_SC_PAGESIZE);
}

static size_t page_round(size_t n)
{
    return (n + page_size() - 1) / page_size() * page_size();
}

static void *reserve(size_t size)
{
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int gpusim_memory_init(void)
{
    gpusim.dev_base = reserve(gpusim.va_size);
    if (gpusim.dev_base == NULL)
        return -1;
    gpusim.alias_base = gpusim.dev_base;
    if (gpusim.mode == GPUSIM_STRICT) {
        gpusim.alias_base = reserve(gpusim.va_size);
        if (gpusim.alias_base == NULL) {
            munmap(gpusim.dev_base, gpusim.va_size);
            return -1;
        }
    }
    return 0;
}

void gpusim_memory_fini(void)
{
    for (size_t i = 0; i < gpusim.nranges; i++) {
        gpusim_range_t *r = &gpusim.ranges[i];
        if (r->kind == GPUSIM_DEVICE)
            close(r->memfd);
        else if (r->kind == GPUSIM_HOST_ALLOC)
            munmap((void *) r->base, r->mapped);
    }
    free(gpusim.ranges);
    gpusim.ranges = NULL;
    gpusim.nranges = gpusim.cap = 0;
    if (gpusim.alias_base != gpusim.dev_base)
        munmap(gpusim.alias_base, gpusim.va_size);
    munmap(gpusim.dev_base, gpusim.va_size);
    gpusim.dev_base = gpusim.alias_base = NULL;
}

int gpusim_in_device_va(uintptr_t addr)
{
    return addr >= (uintptr_t) gpusim.dev_base
        && addr - (uintptr_t) gpusim.dev_base < gpusim.va_size;
}

/* Index of the first range with base > addr. */
static size_t upper_bound(uintptr_t addr)
{
    size_t lo = 0, hi = gpusim.nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (gpusim.ranges[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

gpusim_range_t *gpusim_range_find(uintptr_t addr)
{
    size_t i = upper_bound(addr);
    if (i == 0)
        return NULL;
    gpusim_range_t *r = &gpusim.ranges[i - 1];
    return addr - r->base < r->size ? r : NULL;
}

gpusim_range_t *gpusim_range_insert(const gpusim_range_t *r)
{
    if (gpusim.nranges == gpusim.cap) {
        size_t cap = gpusim.cap ? 2 * gpusim.cap : 64;
        gpusim_range_t *a = realloc(gpusim.ranges, cap * sizeof(*a));
        if (a == NULL)
            return NULL;
        gpusim.ranges = a;
        gpusim.cap = cap;
    }
    size_t i = upper_bound(r->base);
    memmove(&gpusim.ranges[i + 1], &gpusim.ranges[i], (gpusim.nranges - i) * sizeof(*r));
    gpusim.ranges[i] = *r;
    gpusim.nranges++;
    return &gpusim.ranges[i];
}

void gpusim_range_remove(gpusim_range_t *r)
{
    size_t i = (size_t) (r - gpusim.ranges);
    memmove(r, r + 1, (gpusim.nranges - i - 1) * sizeof(*r));
    gpusim.nranges--;
}

uint64_t gpusim_new_buffer_id(void)
{
    return (uint64_t) gpusim.pid << 32 | gpusim.next_id++;     /* unique across processes */
}

int gpusim_va_take(size_t mapped, uintptr_t *addr)
{
    uintptr_t cursor = (uintptr_t) gpusim.dev_base, end = cursor + gpusim.va_size;
    for (size_t i = 0; i < gpusim.nranges; i++) {
        const gpusim_range_t *r = &gpusim.ranges[i];
        if (!gpusim_in_device_va(r->base))
            continue;
        if (r->base - cursor >= mapped)
            break;
        cursor = r->base + r->mapped;
    }
    if (end - cursor < mapped)
        return -1;
    *addr = cursor;
    return 0;
}

static char *alias_of(uintptr_t addr)
{
    return gpusim.alias_base + (addr - (uintptr_t) gpusim.dev_base);
}

/* Device memory comes and goes by direct system calls: a real GPU's allocations change
 * nothing the host's C library sees, so gdr's memory hooks must not see these either
 * (its caches tell device allocations apart by buffer id alone). */
static void *map_unseen(void *addr, size_t len, int prot, int flags, int fd)
{
    return (void *) syscall(SYS_mmap, addr, len, prot, flags, fd, (off_t) 0);
}

int gpusim_va_map(uintptr_t addr, size_t mapped, int fd)
{
    void *p = map_unseen(alias_of(addr), mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                         fd);
    return p == MAP_FAILED ? -1 : 0;
}

void gpusim_va_give_back(uintptr_t addr, size_t mapped)
{
    (void) map_unseen(alias_of(addr), mapped, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1);
}

void *gpusim_reach(uintptr_t addr, size_t len, int pageable_ok)
{
    const gpusim_range_t *r = gpusim_range_find(addr);
    int known = r != NULL && len <= r->base + r->size - addr;
    if (gpusim_in_device_va(addr))
        return known && (r->kind == GPUSIM_DEVICE || r->kind == GPUSIM_IPC) ? alias_of(addr)
            : NULL;
    if (addr == 0)
        return NULL;
    return pageable_ok || known ? (void *) addr : NULL;
}

/* ---- allocation --------------------------------------------------------------------- */

gdr_cu_result_t cuMemAlloc_v2(gdr_cu_ptr_t *dptr, size_t bytesize)
{
    gpusim_range_t r = { .kind = GPUSIM_DEVICE, .memfd = -1 };
    char name[64];
    gdr_cu_result_t rc;

    pthread_mutex_lock(&gpusim.lock);
    rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (dptr == NULL || bytesize == 0))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc != GDR_CUDA_SUCCESS)
        goto out;
    rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
    r.size = bytesize;
    r.mapped = page_round(bytesize);
    r.device = gpusim_current->device;
    r.buffer_id = gpusim_new_buffer_id();
    /* the name lets an importer check that /proc/<pid>/fd/<n> is still this allocation */
    snprintf(name, sizeof(name), "gpusim:%llx", (unsigned long long) r.buffer_id);
    /* sealed against shrinking: udmabuf exports only such memfds */
    r.memfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (r.memfd < 0 || ftruncate(r.memfd, (off_t) r.mapped) != 0
        || fcntl(r.memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0
        || gpusim_va_take(r.mapped, &r.base) != 0 || gpusim_va_map(r.base, r.mapped, r.memfd) != 0)
        goto fail;
    if (gpusim_range_insert(&r) == NULL) {
        gpusim_va_give_back(r.base, r.mapped);
        goto fail;
    }
    *dptr = r.base;
    rc = GDR_CUDA_SUCCESS;
    goto out;
  fail:
    if (r.memfd >= 0)
        close(r.memfd);
  out:
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* Frees the range of `kind` that starts at addr, after all queued work (like the real
 * driver, freeing waits for the device).  Lock held. */
static gdr_cu_result_t free_range(uintptr_t addr, int kind, gdr_cu_result_t not_found)
{
    gpusim_range_t *r = gpusim_range_find(addr);
    if (r == NULL || r->kind != kind || r->base != addr)
        return not_found;
    gpusim_wait_idle();
    r = gpusim_range_find(addr);        /* the table may have changed while waiting */
    if (r == NULL || r->kind != kind || r->base != addr)
        return not_found;
    if (kind == GPUSIM_DEVICE) {
        gpusim_va_give_back(r->base, r->mapped);
        close(r->memfd);
    } else if (kind == GPUSIM_HOST_ALLOC) {
        munmap((void *) r->base, r->mapped);
    }
    gpusim_range_remove(r);
    return GDR_CUDA_SUCCESS;
}

gdr_cu_result_t cuMemFree_v2(gdr_cu_ptr_t dptr)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_current();
    if (rc == GDR_CUDA_SUCCESS)
        rc = free_range(dptr, GPUSIM_DEVICE, GDR_CUDA_ERROR_INVALID_VALUE);
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    gpusim_range_t r = { .kind = GPUSIM_HOST_ALLOC, .memfd = -1 };

    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (pp == NULL || bytesize == 0 || (Flags & ~7u) != 0))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc != GDR_CUDA_SUCCESS)
        goto out;
    r.size = bytesize;
    r.mapped = page_round(bytesize);
    r.device = gpusim_current->device;
    void *p = mmap(NULL, r.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
    if (p == MAP_FAILED)
        goto out;
    r.base = (uintptr_t) p;
    r.buffer_id = gpusim_new_buffer_id();
    if (gpusim_range_insert(&r) == NULL) {
        munmap(p, r.mapped);
        goto out;
    }
    *pp = p;
    rc = GDR_CUDA_SUCCESS;
  out:
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuMemFreeHost(void *p)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_current();
    if (rc == GDR_CUDA_SUCCESS)
        rc = free_range((uintptr_t) p, GPUSIM_HOST_ALLOC, GDR_CUDA_ERROR_INVALID_VALUE);
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    gpusim_range_t r = { .kind = GPUSIM_HOST_REGISTERED, .memfd = -1 };
    uintptr_t a = (uintptr_t) p;

    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (p == NULL || bytesize == 0 || (Flags & ~0xfu) != 0
                                   || gpusim_in_device_va(a)))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS && (Flags & 0x4))        /* CU_MEMHOSTREGISTER_IOMEMORY */
        rc = GDR_CUDA_ERROR_NOT_SUPPORTED;
    for (size_t i = 0; rc == GDR_CUDA_SUCCESS && i < gpusim.nranges; i++) {
        const gpusim_range_t *o = &gpusim.ranges[i];
        if (o->base < a + bytesize && a < o->base + o->size)
            rc = GDR_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    if (rc == GDR_CUDA_SUCCESS) {
        r.base = a;
        r.size = bytesize;
        r.device = gpusim_current->device;
        r.buffer_id = gpusim_new_buffer_id();
        if (gpusim_range_insert(&r) == NULL)
            rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuMemHostUnregister(void *p)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_current();
    if (rc == GDR_CUDA_SUCCESS)
        rc = free_range((uintptr_t) p, GPUSIM_HOST_REGISTERED,
                        GDR_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuMemHostGetDevicePointer_v2(gdr_cu_ptr_t *pdptr, void *p, unsigned int Flags)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    const gpusim_range_t *r = gpusim_range_find((uintptr_t) p);
    if (rc == GDR_CUDA_SUCCESS && (pdptr == NULL || Flags != 0 || r == NULL
                                   || (r->kind != GPUSIM_HOST_ALLOC
                                       && r->kind != GPUSIM_HOST_REGISTERED)))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS)
        *pdptr = (uintptr_t) p;         /* unified addressing: the same address */
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* ---- queries ------------------------------------------------------------------------ */

/* Like the real driver under unified addressing: memory no context knows gets success
 * and zeroed attributes, not an error. */
gdr_cu_result_t cuPointerGetAttributes(unsigned int numAttributes, unsigned int *attributes,
                                       void **data, gdr_cu_ptr_t ptr)
{
    gdr_cu_result_t rc = gpusim_need_init();
    if (rc != GDR_CUDA_SUCCESS)
        return rc;
    if (numAttributes == 0 || attributes == NULL || data == NULL)
        return GDR_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&gpusim.lock);
    const gpusim_range_t *r = gpusim_range_find(ptr);
    int device = r != NULL && (r->kind == GPUSIM_DEVICE || r->kind == GPUSIM_IPC);
    for (unsigned int i = 0; i < numAttributes && rc == GDR_CUDA_SUCCESS; i++) {
        void *d = data[i];
        if (d == NULL) {
            rc = GDR_CUDA_ERROR_INVALID_VALUE;
            continue;
        }
        switch (attributes[i]) {
        case GDR_CU_POINTER_ATTRIBUTE_CONTEXT:
            *(gdr_cu_context_t *) d = r ? &gpusim.ctx[r->device] : NULL;
            break;
        case GDR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned int *) d = r == NULL ? 0 : device ? GDR_CU_MEMORYTYPE_DEVICE
                : GDR_CU_MEMORYTYPE_HOST;
            break;
        case GDR_CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
            *(gdr_cu_ptr_t *) d = r ? ptr : 0;
            break;
        case GDR_CU_POINTER_ATTRIBUTE_HOST_POINTER:
            *(void **) d = r && !device ? (void *) (uintptr_t) ptr : NULL;
            break;
        case GDR_CU_POINTER_ATTRIBUTE_BUFFER_ID:
            *(unsigned long long *) d = r ? r->buffer_id : 0;
            break;
        case GDR_CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *(unsigned int *) d = 0;
            break;
        case GDR_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *(int *) d = r ? r->device : 0;
            break;
        case GDR_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(gdr_cu_ptr_t *) d = r ? r->base : 0;
            break;
        case GDR_CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            *(size_t *) d = r ? r->size : 0;
            break;
        case GDR_CU_POINTER_ATTRIBUTE_MAPPED:
            *(unsigned int *) d = r != NULL;
            break;
        default:
            rc = GDR_CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuMemGetAddressRange_v2(gdr_cu_ptr_t *pbase, size_t *psize, gdr_cu_ptr_t dptr)
{
    gdr_cu_result_t rc = gpusim_need_init();
    if (rc != GDR_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&gpusim.lock);
    const gpusim_range_t *r = gpusim_range_find(dptr);
    if (r == NULL) {
        rc = GDR_CUDA_ERROR_NOT_FOUND;
    } else {
        if (pbase != NULL)
            *pbase = r->base;
        if (psize != NULL)
            *psize = r->size;
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* A dmabuf of [dptr, dptr+size) inside one allocation, page aligned as the driver wants:
 * the allocation's memfd made a udmabuf (the kernel pins its pages, so the NIC reaches
 * device memory the host cannot touch in strict mode).  Without /dev/udmabuf (or with
 * GDR_GPUSIM_DMABUF=0) DMA_BUF_SUPPORTED is 0 and this answers NOT_SUPPORTED. */
gdr_cu_result_t cuMemGetHandleForAddressRange(void *handle, gdr_cu_ptr_t dptr, size_t size,
                                              unsigned int handleType, unsigned long long flags)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    const gpusim_range_t *r = rc == GDR_CUDA_SUCCESS ? gpusim_range_find(dptr) : NULL;
    if (rc != GDR_CUDA_SUCCESS)
        goto out;
    rc = GDR_CUDA_ERROR_NOT_SUPPORTED;
    if (!gpusim.dmabuf || handleType != GDR_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD)
        goto out;
    rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (handle == NULL || flags != 0 || r == NULL || r->kind != GPUSIM_DEVICE || size == 0
        || dptr % page_size() != 0 || size % page_size() != 0
        || dptr + size > r->base + r->mapped) {
        gpusim_debug("cuMemGetHandleForAddressRange(%#llx, %zu): not a page-aligned range of one"
                     " allocation", (unsigned long long) dptr, size);
        goto out;
    }
    int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    struct udmabuf_create c = {.memfd = (uint32_t) r->memfd,.flags = UDMABUF_FLAGS_CLOEXEC,
        .offset = dptr - r->base,.size = size };
    int fd = dev < 0 ? -1 : ioctl(dev, UDMABUF_CREATE, &c);
    if (fd < 0) {
        gpusim_debug("udmabuf of %zu bytes at %#llx: %s", size, (unsigned long long) dptr,
                     strerror(errno));
        rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        *(int *) handle = fd;
        rc = GDR_CUDA_SUCCESS;
    }
    if (dev >= 0)
        close(dev);
  out:
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}
