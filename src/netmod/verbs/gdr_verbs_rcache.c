#include "gdr_verbs_rcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* A list is enough for the tens of live registrations an MPI process has; the
 * quick bounds test keeps free() cheap when nothing overlaps. */
/* Set while this thread is inside the cache: a free() that the provider does while
 * we register or deregister must not re-enter (it cannot concern cached memory). */
static _Thread_local int in_rcache;

static void enter(gdr_verbs_rcache_t *rc);
static void leave(gdr_verbs_rcache_t *rc);

struct gdr_verbs_rcache {
    gdr_verbs_rcache_ops_t ops;
    void *ctx;
    pthread_mutex_t lock;
    gdr_verbs_rcache_entry_t *live;     /* valid entries, most recently used first */
    gdr_verbs_rcache_entry_t *dead;     /* invalidated, to deregister outside free() */
    uintptr_t lo, hi;                   /* bounds of all live entries */
    size_t max_unused, unused_bytes;
    int off;                            /* cache nothing */
    gdr_verbs_rcache_stats_t st;
};

static uintptr_t page_size(void)
{
    static uintptr_t ps;
    if (ps == 0)
        ps = (uintptr_t) sysconf(_SC_PAGESIZE);
    return ps;
}

static void recompute_bounds(gdr_verbs_rcache_t *rc)
{
    rc->lo = UINTPTR_MAX;
    rc->hi = 0;
    for (gdr_verbs_rcache_entry_t * e = rc->live; e; e = e->next) {
        if (e->start < rc->lo)
            rc->lo = e->start;
        if (e->end > rc->hi)
            rc->hi = e->end;
    }
}

/* Deregisters dead entries nobody uses; called with the lock held, never from a hook. */
static void reap(gdr_verbs_rcache_t *rc)
{
    gdr_verbs_rcache_entry_t **pp = &rc->dead;
    while (*pp) {
        gdr_verbs_rcache_entry_t *e = *pp;
        if (e->refcount == 0) {
            *pp = e->next;
            rc->ops.dereg(rc->ctx, e->handle);
            free(e);
        } else {
            pp = &e->next;
        }
    }
}

static void unlink_live(gdr_verbs_rcache_t *rc, gdr_verbs_rcache_entry_t *e)
{
    for (gdr_verbs_rcache_entry_t ** pp = &rc->live; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            e->next = NULL;
            return;
        }
    }
}

/* Keeps unused registrations within max_unused: the least recently used go first. */
static void evict(gdr_verbs_rcache_t *rc)
{
    while (rc->unused_bytes > rc->max_unused) {
        gdr_verbs_rcache_entry_t *victim = NULL;
        for (gdr_verbs_rcache_entry_t * e = rc->live; e; e = e->next) {
            if (e->refcount == 0)
                victim = e;     /* last unused one in MRU order = least recently used */
        }
        if (victim == NULL)
            break;
        unlink_live(rc, victim);
        rc->unused_bytes -= victim->end - victim->start;
        rc->st.entries--;
        rc->st.bytes -= victim->end - victim->start;
        rc->st.evicted++;
        rc->ops.dereg(rc->ctx, victim->handle);
        free(victim);
    }
    recompute_bounds(rc);
}

/* Moves live entry *pp to the dead list (deregistered later, outside any hook). */
static void kill_entry(gdr_verbs_rcache_t *rc, gdr_verbs_rcache_entry_t **pp,
                       gdr_verbs_rcache_cause_t cause)
{
    gdr_verbs_rcache_entry_t *e = *pp;
    *pp = e->next;
    e->invalid = 1;
    e->next = rc->dead;
    rc->dead = e;
    if (e->refcount == 0)
        rc->unused_bytes -= e->end - e->start;
    rc->st.entries--;
    rc->st.bytes -= e->end - e->start;
    rc->st.invalidated++;
    rc->st.invalidated_by[cause]++;
}

static void enter(gdr_verbs_rcache_t *rc)
{
    in_rcache = 1;
    pthread_mutex_lock(&rc->lock);
}

static void leave(gdr_verbs_rcache_t *rc)
{
    pthread_mutex_unlock(&rc->lock);
    in_rcache = 0;
}

gdr_verbs_rcache_t *gdr_verbs_rcache_create(const gdr_verbs_rcache_ops_t *ops, void *ctx,
                                            size_t max_unused_bytes, int off)
{
    gdr_verbs_rcache_t *rc = calloc(1, sizeof(*rc));
    if (rc == NULL)
        return NULL;
    rc->ops = *ops;
    rc->ctx = ctx;
    rc->max_unused = max_unused_bytes;
    rc->off = off;
    rc->lo = UINTPTR_MAX;
    pthread_mutex_init(&rc->lock, NULL);
    return rc;
}

gdr_verbs_rcache_entry_t *gdr_verbs_rcache_get(gdr_verbs_rcache_t *rc, const void *addr,
                                               size_t len)
{
    return gdr_verbs_rcache_get_tagged(rc, addr, len, 0);
}

gdr_verbs_rcache_entry_t *gdr_verbs_rcache_get_tagged(gdr_verbs_rcache_t *rc, const void *addr,
                                                      size_t len, uint64_t tag)
{
    uintptr_t a = (uintptr_t) addr, ps = page_size();
    uintptr_t start = a & ~(ps - 1), end = (a + (len ? len : 1) + ps - 1) & ~(ps - 1);
    gdr_verbs_rcache_entry_t *e;

    enter(rc);
    reap(rc);
    for (gdr_verbs_rcache_entry_t ** pp = &rc->live; (e = *pp) != NULL;) {
        if (e->start < end && start < e->end && e->tag != tag) {
            kill_entry(rc, pp, GDR_VERBS_RCACHE_DEVICE);  /* that allocation was freed */
            recompute_bounds(rc);
            continue;
        }
        if (e->start <= start && end <= e->end && tag != GDR_VERBS_RCACHE_TAG_ONCE) {
            *pp = e->next;      /* move to the front: most recently used */
            e->next = rc->live;
            rc->live = e;
            if (e->refcount++ == 0)
                rc->unused_bytes -= e->end - e->start;
            rc->st.hits++;
            leave(rc);
            return e;
        }
        pp = &e->next;
    }
    reap(rc);                           /* what a changed tag replaced, if unused */
    e = calloc(1, sizeof(*e));
    if (e != NULL) {
        e->start = start;
        e->end = end;
        e->tag = tag;
        e->handle = rc->ops.reg(rc->ctx, (void *) start, end - start, addr, &e->lkey, &e->rkey);
        if (e->handle == NULL) {
            free(e);
            e = NULL;
        }
    }
    if (e != NULL && (rc->off || tag == GDR_VERBS_RCACHE_TAG_ONCE)) {
        e->refcount = 1;        /* born dead: deregistered at its put, never found */
        e->invalid = 1;
        e->next = rc->dead;
        rc->dead = e;
        rc->st.once++;
    } else if (e != NULL) {
        e->refcount = 1;
        e->next = rc->live;
        rc->live = e;
        rc->st.misses++;
        rc->st.entries++;
        rc->st.bytes += end - start;
        if (start < rc->lo)
            rc->lo = start;
        if (end > rc->hi)
            rc->hi = end;
    }
    leave(rc);
    return e;
}

void gdr_verbs_rcache_put(gdr_verbs_rcache_t *rc, gdr_verbs_rcache_entry_t *e)
{
    enter(rc);
    if (--e->refcount == 0) {
        if (e->invalid)
            reap(rc);
        else {
            rc->unused_bytes += e->end - e->start;
            evict(rc);
        }
    }
    leave(rc);
}

void gdr_verbs_rcache_invalidate(gdr_verbs_rcache_t *rc, const void *addr, size_t len,
                                 gdr_verbs_rcache_cause_t cause)
{
    uintptr_t a = (uintptr_t) addr, b = a + len;

    if (len == 0 || in_rcache || b <= rc->lo || a >= rc->hi)    /* bounds: a racy hint */
        return;
    pthread_mutex_lock(&rc->lock);
    gdr_verbs_rcache_entry_t **pp = &rc->live;
    while (*pp) {
        gdr_verbs_rcache_entry_t *e = *pp;
        if (e->start < b && a < e->end) {
            kill_entry(rc, pp, cause);
        } else {
            pp = &e->next;
        }
    }
    recompute_bounds(rc);
    pthread_mutex_unlock(&rc->lock);
}

void gdr_verbs_rcache_get_stats(gdr_verbs_rcache_t *rc, gdr_verbs_rcache_stats_t *st)
{
    enter(rc);
    *st = rc->st;
    leave(rc);
}

void gdr_verbs_rcache_destroy(gdr_verbs_rcache_t *rc)
{
    if (rc == NULL)
        return;
    enter(rc);
    for (gdr_verbs_rcache_entry_t ** list = &rc->live; list; list = list == &rc->live ? &rc->dead : NULL) {
        while (*list) {
            gdr_verbs_rcache_entry_t *e = *list;
            *list = e->next;
            rc->ops.dereg(rc->ctx, e->handle);
            free(e);
        }
    }
    leave(rc);
    pthread_mutex_destroy(&rc->lock);
    free(rc);
}
