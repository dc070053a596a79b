/* Registration cache: memory registered once is reused by later transfers and by
 * every window covering the same range (reference counted), and dropped when the
 * memory is freed or unmapped (gdr_verbs_memhooks.c calls _invalidate), so a
 * recycled virtual address never reuses a stale registration.  GPU memory is freed
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
    size_t entries, bytes;
} gdr_verbs_rcache_stats_t;

/* max_unused_bytes: registrations kept while nobody uses them (LRU beyond that). */
gdr_verbs_rcache_t *gdr_verbs_rcache_create(const gdr_verbs_rcache_ops_t *ops, void *ctx,
                                            size_t max_unused_bytes);

/* A registration covering [addr, addr+len), reference taken; NULL if registration
 * failed (errno from the provider). */
gdr_verbs_rcache_entry_t *gdr_verbs_rcache_get(gdr_verbs_rcache_t *rc, const void *addr,
                                               size_t len);
/* The same for memory identified by tag (a CUDA buffer id; 0 is host memory): an entry
 * made for another tag over the range is invalidated first, never handed out. */
gdr_verbs_rcache_entry_t *gdr_verbs_rcache_get_tagged(gdr_verbs_rcache_t *rc, const void *addr,
                                                      size_t len, uint64_t tag);

/* Drops the reference taken by _get. */
void gdr_verbs_rcache_put(gdr_verbs_rcache_t *rc, gdr_verbs_rcache_entry_t *e);

/* [addr, addr+len) no longer holds the memory it held: forget registrations that
 * overlap it (deregistered now if unused, else when the last user puts them). */
void gdr_verbs_rcache_invalidate(gdr_verbs_rcache_t *rc, const void *addr, size_t len);

void gdr_verbs_rcache_get_stats(gdr_verbs_rcache_t *rc, gdr_verbs_rcache_stats_t *st);

/* Deregisters everything; entries still referenced are released too. */
void gdr_verbs_rcache_destroy(gdr_verbs_rcache_t *rc);

#endif /* GDR_VERBS_RCACHE_H */
