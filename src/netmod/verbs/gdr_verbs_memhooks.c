#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* mremap, MADV_*, malloc_usable_size */
#endif
#include "gdr_verbs_memhooks.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Interposition needs these exported even where the library is built with
 * -fvisibility=hidden (MPICH is).  Not instrumented by the sanitizers: free runs while
 * ASan starts, before its shadow memory exists. */
#define GDR_EXPORT __attribute__((visibility("default"), no_sanitize("address", "undefined")))

/* The allocator's own entry points, so our wrappers need no dlsym (which may allocate):
 * glibc's, or under AddressSanitizer (configure --enable-sanitizers) its interceptors,
 * since then the heap is ASan's and our free/realloc preempt its. */
#if defined(__SANITIZE_ADDRESS__)
extern void __interceptor_free(void *ptr);
extern void *__interceptor_realloc(void *ptr, size_t size);
#define gdr_real_free __interceptor_free
#define gdr_real_realloc __interceptor_realloc
#else
extern void __libc_free(void *ptr);
extern void *__libc_realloc(void *ptr, size_t size);
#define gdr_real_free __libc_free
#define gdr_real_realloc __libc_realloc
#endif

/* The layer's one piece of process state: the caches the hooks feed.  Hooks run
 * on any thread at any time, hence atomics and no locks here. */
static struct {
    _Atomic(gdr_verbs_rcache_t *) caches[GDR_VERBS_MEMHOOKS_MAX];
    atomic_int active;
} gdr_verbs_memhooks_ctx;

int gdr_verbs_memhooks_attach(gdr_verbs_rcache_t *rc)
{
    for (int i = 0; i < GDR_VERBS_MEMHOOKS_MAX; i++) {
        gdr_verbs_rcache_t *expected = NULL;
        if (atomic_compare_exchange_strong(&gdr_verbs_memhooks_ctx.caches[i], &expected, rc)) {
            atomic_fetch_add(&gdr_verbs_memhooks_ctx.active, 1);
            return 0;
        }
    }
    return -1;
}

void gdr_verbs_memhooks_detach(gdr_verbs_rcache_t *rc)
{
    for (int i = 0; i < GDR_VERBS_MEMHOOKS_MAX; i++) {
        gdr_verbs_rcache_t *expected = rc;
        if (atomic_compare_exchange_strong(&gdr_verbs_memhooks_ctx.caches[i], &expected, NULL))
            atomic_fetch_sub(&gdr_verbs_memhooks_ctx.active, 1);
    }
}

static void released(const void *addr, size_t len)
{
    if (atomic_load_explicit(&gdr_verbs_memhooks_ctx.active, memory_order_relaxed) == 0)
        return;
    for (int i = 0; i < GDR_VERBS_MEMHOOKS_MAX; i++) {
        gdr_verbs_rcache_t *rc = atomic_load(&gdr_verbs_memhooks_ctx.caches[i]);
        if (rc != NULL)
            gdr_verbs_rcache_invalidate(rc, addr, len);
    }
}

GDR_EXPORT void free(void *ptr)
{
    if (ptr != NULL && atomic_load_explicit(&gdr_verbs_memhooks_ctx.active, memory_order_relaxed))
        released(ptr, malloc_usable_size(ptr));
    gdr_real_free(ptr);
}

GDR_EXPORT void *realloc(void *ptr, size_t size)
{
    /* the block may move (or be unmapped and remapped): the old range is gone */
    if (ptr != NULL && atomic_load_explicit(&gdr_verbs_memhooks_ctx.active, memory_order_relaxed))
        released(ptr, malloc_usable_size(ptr));
    return gdr_real_realloc(ptr, size);
}

GDR_EXPORT int munmap(void *addr, size_t len)
{
    released(addr, len);
    return (int) syscall(SYS_munmap, addr, len);
}

GDR_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *new_addr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    released(old, old_len);
    if (new_addr != NULL)
        released(new_addr, new_len);
    return (void *) syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}

GDR_EXPORT int madvise(void *addr, size_t len, int advice)
{
    if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE)
        released(addr, len);
    return (int) syscall(SYS_madvise, addr, len, advice);
}
