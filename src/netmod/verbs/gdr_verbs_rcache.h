/* Registration cache: memory registered once is reused by later transfers (reference
 * counted), and dropped whenever the pages under its range can change (the hooks of
 * gdr_verbs_memhooks.c call _invalidate: free, munmap, mmap, shmat, ...), so a recycled
 * virtual address never reuses a stale registration.  GPU memory is freed and allocated
 * without the host seeing it (cuMemFree unmaps nothing of the host's): its entries carry
 * the allocation's CUDA buffer id as a tag, and a lookup with another tag replaces them.
 *
 * Thread safe: _invalidate may run on any thread, from inside free()/munmap();
 * it never calls back into the registration functions. */
#ifndef GDR_VERBS_RCACHE_H
#define GDR_VERBS_RCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct gdr_verbs_rcache gdr_verbs_rcache_t;

/* Why entries were invalidated (MPI_T counts each). */
typedef enum gdr_verbs_rcache_cause {
    GDR_VERBS_RCACHE_FREE,      /* free() or realloc() of a heap block */
    GDR_VERBS_RCACHE_MUNMAP,
    GDR_VERBS_RCACHE_MREMAP,
    GDR_VERBS_RCACHE_MADVISE,   /* MADV_DONTNEED, _FREE, _REMOVE, _DONTNEED_LOCKED */
    GDR_VERBS_RCACHE_MMAP,      /* new pages mapped over the range (MAP_FIXED or not) */
    GDR_VERBS_RCACHE_SHM,       /* shmat over the range, shmdt of it */
    GDR_VERBS_RCACHE_BRK,       /* brk/sbrk moved the break across it */
    GDR_VERBS_RCACHE_DEVICE,    /* another CUDA buffer id at the address (a new allocation) */
    GDR_VERBS_RCACHE_CAUSES
} gdr_verbs_rcache_cause_t;

/* A tag for memory whose identity is unknown (device memory without a buffer id): its
 * registration serves one user and is never handed out again. */
#define GDR_VERBS_RCACHE_TAG_ONCE UINT64_MAX

typedef struct gdr_verbs_rcache_ops {
    /* Registers [addr, addr+len), the page-rounded range around `asked` (the address the
     * caller gave); returns a handle, NULL on failure. */
    void *(*reg)(void *ctx, void *addr, size_t len, const void *asked, uint32_t *lkey,
                 uint32_t *rkey);
    void (*dereg)(void *ctx, void *handle);
} gdr_verbs_rcache_ops_t;

typedef struct gdr_verbs_rcache_entry {
    uintptr_t start, end;       /* registered range, page aligned */
    void *handle;
    uint32_t lkey, rkey;
    int refcount;
    int invalid;                /* memory went away: never handed out again */
    uint64_t tag;               /* 0: host memory; else the CUDA buffer id it was made for */
    struct gdr_verbs_rcache_entry *next;
} gdr_verbs_rcache_entry_t;

typedef struct gdr_verbs_rcache_stats {
    uint64_t hits, misses, invalidated, evicted;
    uint64_t once;              /* registrations made for one user only (cache off, TAG_ONCE) */
    uint64_t invalidated_by[GDR_VERBS_RCACHE_CAUSES];
    uint64_t entries, bytes;
} gdr_verbs_rcache_stats_t;

/* max_unused_bytes: registrations kept while nobody uses them (LRU beyond that).
 * off: cache nothing; every registration dies with its last user. */
gdr_verbs_rcache_t *gdr_verbs_rcache_create(const gdr_verbs_rcache_ops_t *ops, void *ctx,
                                            size_t max_unused_bytes, int off);

/* A registration covering [addr, addr+len), reference taken; NULL if registration
 * failed (errno from the provider). */
gdr_verbs_rcache_entry_t *gdr_verbs_rcache_get(gdr_verbs_rcache_t *rc, const void *addr,
                                               size_t len);
/* The same for memory identified by tag (a CUDA buffer id; 0 is host memory): an entry
 * made for another tag over the range is invalidated first, never handed out.
 * GDR_VERBS_RCACHE_TAG_ONCE: a registration of its own, gone at its put. */
gdr_verbs_rcache_entry_t *gdr_verbs_rcache_get_tagged(gdr_verbs_rcache_t *rc, const void *addr,
                                                      size_t len, uint64_t tag);

/* Drops the reference taken by _get. */
void gdr_verbs_rcache_put(gdr_verbs_rcache_t *rc, gdr_verbs_rcache_entry_t *e);

/* [addr, addr+len) no longer holds the pages it held: forget registrations that
 * overlap it (deregistered now if unused, else when the last user puts them). */
void gdr_verbs_rcache_invalidate(gdr_verbs_rcache_t *rc, const void *addr, size_t len,
                                 gdr_verbs_rcache_cause_t cause);

void gdr_verbs_rcache_get_stats(gdr_verbs_rcache_t *rc, gdr_verbs_rcache_stats_t *st);

/* Deregisters everything; entries still referenced are released too. */
void gdr_verbs_rcache_destroy(gdr_verbs_rcache_t *rc);

#endif /* GDR_VERBS_RCACHE_H */
