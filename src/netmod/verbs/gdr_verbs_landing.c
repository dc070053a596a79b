/* The landing pool: registered buffers that rendezvous payloads with no destination of
 * the caller's are read into, kept for reuse up to LANDING_POOL_BYTES; mapped, not
 * malloc'ed, so transient payload buffers never fragment the heap. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* MAP_ANONYMOUS */
#endif
#include "gdr_verbs_iface_priv.h"

#include <stdlib.h>
#include <sys/mman.h>

#define LANDING_POOL_BYTES ((size_t) 64 << 20)

landing_t *gdr_verbs_iface_landing_get(gdr_verbs_iface_t *am, size_t size)
{
    landing_t **best = NULL;
    for (landing_t ** pp = &am->landings; *pp; pp = &(*pp)->next) {
        if ((*pp)->cap >= size && (best == NULL || (*pp)->cap < (*best)->cap))
            best = pp;
    }
    if (best != NULL) {
        landing_t *l = *best;
        *best = l->next;
        am->landing_bytes -= l->cap;
        return l;
    }
    landing_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->cap = (size + 4095) & ~(size_t) 4095;
    l->addr = mmap(NULL, l->cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (l->addr == MAP_FAILED) {
        free(l);
        return NULL;
    }
    l->mr = ibv_reg_mr(am->dev->pd, l->addr, l->cap, IBV_ACCESS_LOCAL_WRITE);
    if (l->mr == NULL) {
        munmap(l->addr, l->cap);
        free(l);
        return NULL;
    }
    return l;
}

void gdr_verbs_iface_landing_release(landing_t *l)
{
    ibv_dereg_mr(l->mr);
    munmap(l->addr, l->cap);
    free(l);
}

void gdr_verbs_iface_landing_put(gdr_verbs_iface_t *am, landing_t *l)
{
    if (am->landing_bytes + l->cap > LANDING_POOL_BYTES) {
        gdr_verbs_iface_landing_release(l);
        return;
    }
    l->next = am->landings;
    am->landings = l;
    am->landing_bytes += l->cap;
}
