#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* mremap, remap_file_pages, MADV_*, malloc_usable_size */
#endif
#include "gdr_verbs_memhooks.h"

#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The wrappers enter the kernel themselves (glibc's own mmap is not exported under
 * another name): SYS_mmap with a byte offset, SYS_shmat as a call of its own. */
#if !defined(__LP64__) || !defined(SYS_mmap) || !defined(SYS_shmat)
#error "gdr's memory hooks need a 64-bit Linux with SYS_mmap and SYS_shmat"
#endif

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
/* glibc's break: it keeps its own idea of where the break is (malloc's main arena moves
 * it), so brk and sbrk must go through it, not the system call */
extern void *__sbrk(intptr_t increment);

/* shmdt names only an address: the sizes of the segments shmat attached */
#define SHM_TRACKED 64

/* The layer's one piece of process state: the caches the hooks feed.  Hooks run
 * on any thread at any time, hence atomics and no locks here. */
static struct {
    _Atomic(gdr_verbs_rcache_t *) caches[GDR_VERBS_MEMHOOKS_MAX];
    atomic_int active;
    pthread_mutex_t shm_lock;
    struct {
        uintptr_t addr;
        size_t len;
    } shm[SHM_TRACKED];
} gdr_verbs_memhooks_ctx = {.shm_lock = PTHREAD_MUTEX_INITIALIZER };

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

/* The pages under [addr, addr+len) change now (or just did): a mapping goes, or new
 * pages arrive where a stale registration may still stand (an unmapping that bypassed
 * the hooks: a direct system call).  Both ends are checked. */
static void released(const void *addr, size_t len, gdr_verbs_rcache_cause_t cause)
{
    if (atomic_load_explicit(&gdr_verbs_memhooks_ctx.active, memory_order_relaxed) == 0)
        return;
    for (int i = 0; i < GDR_VERBS_MEMHOOKS_MAX; i++) {
        gdr_verbs_rcache_t *rc = atomic_load(&gdr_verbs_memhooks_ctx.caches[i]);
        if (rc != NULL)
            gdr_verbs_rcache_invalidate(rc, addr, len, cause);
    }
}

GDR_EXPORT void free(void *ptr)
{
    if (ptr != NULL && atomic_load_explicit(&gdr_verbs_memhooks_ctx.active, memory_order_relaxed))
        released(ptr, malloc_usable_size(ptr), GDR_VERBS_RCACHE_FREE);
    gdr_real_free(ptr);
}

GDR_EXPORT void *realloc(void *ptr, size_t size)
{
    /* the block may move (or be unmapped and remapped): the old range is gone */
    if (ptr != NULL && atomic_load_explicit(&gdr_verbs_memhooks_ctx.active, memory_order_relaxed))
        released(ptr, malloc_usable_size(ptr), GDR_VERBS_RCACHE_FREE);
    return gdr_real_realloc(ptr, size);
}

GDR_EXPORT int munmap(void *addr, size_t len)
{
    released(addr, len, GDR_VERBS_RCACHE_MUNMAP);
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
    released(old, old_len, GDR_VERBS_RCACHE_MREMAP);
    if (new_addr != NULL)
        released(new_addr, new_len, GDR_VERBS_RCACHE_MREMAP);
    void *p = (void *) syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
    if (p != MAP_FAILED && p != new_addr)
        released(p, new_len, GDR_VERBS_RCACHE_MREMAP);  /* moved, or grown in place */
    return p;
}

GDR_EXPORT int madvise(void *addr, size_t len, int advice)
{
    if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE
#ifdef MADV_DONTNEED_LOCKED
        || advice == MADV_DONTNEED_LOCKED
#endif
        )
        released(addr, len, GDR_VERBS_RCACHE_MADVISE);
    return (int) syscall(SYS_madvise, addr, len, advice);
}

/* New pages: MAP_FIXED replaces what was there; without it the kernel may still hand
 * out an address whose old mapping went away unseen. */
GDR_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset)
{
    void *p = (void *) syscall(SYS_mmap, addr, len, prot, flags, fd, offset);
    if (p != MAP_FAILED)
        released(p, len, GDR_VERBS_RCACHE_MMAP);
    return p;
}

GDR_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t offset)
{
    return mmap(addr, len, prot, flags, fd, offset);
}

GDR_EXPORT int remap_file_pages(void *addr, size_t len, int prot, size_t pgoff, int flags)
{
    int rc = (int) syscall(SYS_remap_file_pages, addr, len, prot, pgoff, flags);
    if (rc == 0)
        released(addr, len, GDR_VERBS_RCACHE_MMAP);
    return rc;
}

static void shm_track(uintptr_t addr, size_t len)
{
    pthread_mutex_lock(&gdr_verbs_memhooks_ctx.shm_lock);
    for (int i = 0; i < SHM_TRACKED; i++) {
        if (gdr_verbs_memhooks_ctx.shm[i].addr == 0 || gdr_verbs_memhooks_ctx.shm[i].addr == addr) {
            gdr_verbs_memhooks_ctx.shm[i].addr = addr;
            gdr_verbs_memhooks_ctx.shm[i].len = len;
            break;
        }
    }   /* full: shmdt of it invalidates its first page; the next mapping there the rest */
    pthread_mutex_unlock(&gdr_verbs_memhooks_ctx.shm_lock);
}

static size_t shm_untrack(uintptr_t addr)
{
    size_t len = 1;
    pthread_mutex_lock(&gdr_verbs_memhooks_ctx.shm_lock);
    for (int i = 0; i < SHM_TRACKED; i++) {
        if (gdr_verbs_memhooks_ctx.shm[i].addr == addr) {
            len = gdr_verbs_memhooks_ctx.shm[i].len;
            gdr_verbs_memhooks_ctx.shm[i].addr = 0;
            break;
        }
    }
    pthread_mutex_unlock(&gdr_verbs_memhooks_ctx.shm_lock);
    return len;
}

GDR_EXPORT void *shmat(int shmid, const void *addr, int flags)
{
    void *p = (void *) syscall(SYS_shmat, shmid, addr, flags);
    struct shmid_ds ds;
    if (p != (void *) -1 && shmctl(shmid, IPC_STAT, &ds) == 0) {
        shm_track((uintptr_t) p, ds.shm_segsz);
        released(p, ds.shm_segsz, GDR_VERBS_RCACHE_SHM);
    } else if (p != (void *) -1) {
        released(p, 1, GDR_VERBS_RCACHE_SHM);
    }
    return p;
}

GDR_EXPORT int shmdt(const void *addr)
{
    released(addr, shm_untrack((uintptr_t) addr), GDR_VERBS_RCACHE_SHM);
    return (int) syscall(SYS_shmdt, addr);
}

/* The break moved from old to now (both valid): pages between them came or went. */
static void break_moved(char *old, char *now)
{
    if (now != old)
        released(now < old ? now : old, (size_t) (now < old ? old - now : now - old),
                 GDR_VERBS_RCACHE_BRK);
}

GDR_EXPORT void *sbrk(intptr_t increment)
{
    char *old = __sbrk(increment);
    if (old != (char *) -1)
        break_moved(old, old + increment);
    return old;
}

GDR_EXPORT int brk(void *addr)
{
    char *old = __sbrk(0);
    if (old == (char *) -1 || __sbrk((char *) addr - old) == (void *) -1)
        return -1;
    break_moved(old, addr);
    return 0;
}
