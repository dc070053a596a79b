/* Memory-release hooks: free(), realloc(), munmap(), mremap() and madvise() are
 * wrapped (by symbol interposition from the library that contains this file) so
 * that registration caches learn when memory goes away before a new mapping can
 * take its address.  Inactive (one load and a branch) until a cache is attached. */
#ifndef GDR_VERBS_MEMHOOKS_H
#define GDR_VERBS_MEMHOOKS_H

#include "gdr_verbs_rcache.h"

/* Routes releases to rc's _invalidate.  At most GDR_VERBS_MEMHOOKS_MAX caches.
 * Returns 0, or -1 when full. */
#define GDR_VERBS_MEMHOOKS_MAX 4
int gdr_verbs_memhooks_attach(gdr_verbs_rcache_t *rc);
void gdr_verbs_memhooks_detach(gdr_verbs_rcache_t *rc);

#endif /* GDR_VERBS_MEMHOOKS_H */
