/* Memory hooks: every C-library call that can change the pages under an address is
 * wrapped (by symbol interposition from the library that contains this file) so that
 * registration caches drop what they hold there: free, realloc, munmap, mremap, madvise
 * (DONTNEED, FREE, REMOVE, DONTNEED_LOCKED) as memory goes; mmap (MAP_FIXED or not),
 * mmap64, remap_file_pages, shmat as new pages arrive; shmdt; brk and sbrk.  Device
 * memory is not the host's to see: caches tell its allocations apart by CUDA buffer id.
 * Not seen: direct system calls (syscall(SYS_munmap, ...)), libraries bound to the C
 * library's internal names, and pages a file's owner replaces through the descriptor
 * (truncate, fallocate's holes) under a shared mapping.  Inactive (one load and a
 * branch) until a cache is attached. */
#ifndef GDR_VERBS_MEMHOOKS_H
#define GDR_VERBS_MEMHOOKS_H

#include "gdr_verbs_rcache.h"

/* Routes releases to rc's _invalidate.  At most GDR_VERBS_MEMHOOKS_MAX caches.
 * Returns 0, or -1 when full. */
#define GDR_VERBS_MEMHOOKS_MAX 4
int gdr_verbs_memhooks_attach(gdr_verbs_rcache_t *rc);
void gdr_verbs_memhooks_detach(gdr_verbs_rcache_t *rc);

#endif /* GDR_VERBS_MEMHOOKS_H */
