/* Registration cache: sharing, reuse, eviction, and invalidation when memory is
 * freed or unmapped (through the real free()/munmap()/madvise() hooks), so a
 * recycled address is registered anew.  The registration functions are fakes
 * that record calls. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "gdr_unit.h"
#include "verbs/gdr_verbs_memhooks.h"
#include "verbs/gdr_verbs_rcache.h"

typedef struct {
    int regs, deregs, live;
    int asked_outside;          /* registrations whose asked-for address lay outside them */
} fake_t;

static void *fake_reg(void *ctx, void *addr, size_t len, const void *asked, uint32_t *lkey,
                      uint32_t *rkey)
{
    fake_t *f = ctx;
    f->regs++;
    f->live++;
    *lkey = *rkey = (uint32_t) f->regs;
    if ((uintptr_t) asked < (uintptr_t) addr || (uintptr_t) asked >= (uintptr_t) addr + len)
        f->asked_outside++;
    return (void *) (uintptr_t) f->regs;
}

static void fake_dereg(void *ctx, void *handle)
{
    fake_t *f = ctx;
    (void) handle;
    f->deregs++;
    f->live--;
}

int main(void)
{
    fake_t f = { 0 };
    gdr_verbs_rcache_ops_t ops = {.reg = fake_reg,.dereg = fake_dereg };
    gdr_verbs_rcache_stats_t st;
    long ps = sysconf(_SC_PAGESIZE);
    gdr_verbs_rcache_t *rc = gdr_verbs_rcache_create(&ops, &f, 64 * (size_t) ps);
    char *a = mmap(NULL, 16 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    gdr_verbs_rcache_entry_t *w1 = gdr_verbs_rcache_get(rc, a, 4 * ps);
    gdr_verbs_rcache_entry_t *w2 = gdr_verbs_rcache_get(rc, a, 4 * ps);
    GDR_CHECK(w1 != NULL && w1 == w2 && f.regs == 1 && w1->refcount == 2,
              "two windows on one range share one registration (refcount 2)");
    gdr_verbs_rcache_entry_t *sub = gdr_verbs_rcache_get(rc, a + ps + 10, 100);
    GDR_CHECK(sub == w1 && f.regs == 1, "a sub-range reuses the registration");
    gdr_verbs_rcache_put(rc, sub);
    gdr_verbs_rcache_put(rc, w1);
    gdr_verbs_rcache_put(rc, w2);
    GDR_CHECK(f.deregs == 0, "unused registrations stay cached");
    gdr_verbs_rcache_entry_t *again = gdr_verbs_rcache_get(rc, a, 100);
    GDR_CHECK(again == w1 && f.regs == 1, "a later transfer from the same buffer hits the cache");
    GDR_CHECK(w1->start == (uintptr_t) a && w1->end == (uintptr_t) a + 4 * ps,
              "registrations cover whole pages");

    /* invalidation while in use: handed out no more, deregistered at the last put */
    gdr_verbs_rcache_invalidate(rc, a + 2 * ps, 1);
    GDR_CHECK(again->invalid && f.deregs == 0, "invalidated in use: kept until put");
    gdr_verbs_rcache_entry_t *fresh = gdr_verbs_rcache_get(rc, a, 100);
    GDR_CHECK(fresh != again && f.regs == 2, "the same address after invalidation registers anew");
    gdr_verbs_rcache_put(rc, again);
    GDR_CHECK(f.deregs == 1, "the stale registration is released at its last put");
    gdr_verbs_rcache_put(rc, fresh);

    /* GPU memory is freed and allocated again at the same address without the host
     * seeing it: the CUDA buffer id (the tag) tells the allocations apart */
    char *d = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    gdr_verbs_rcache_entry_t *g1 = gdr_verbs_rcache_get_tagged(rc, d, ps, 7);
    gdr_verbs_rcache_put(rc, g1);
    int regs = f.regs;
    gdr_verbs_rcache_entry_t *g1b = gdr_verbs_rcache_get_tagged(rc, d, 100, 7);
    GDR_CHECK(g1b == g1 && f.regs == regs, "device memory: the same buffer id hits the cache");
    gdr_verbs_rcache_put(rc, g1b);
    int deregs = f.deregs;
    gdr_verbs_rcache_entry_t *g2 = gdr_verbs_rcache_get_tagged(rc, d, ps, 8);
    GDR_CHECK(g2 != NULL && g2 != g1 && g2->tag == 8 && f.regs == regs + 1,
              "device memory: another buffer id at the same address registers anew");
    gdr_verbs_rcache_put(rc, g2);
    GDR_CHECK(f.deregs == deregs + 1, "device memory: the old buffer's registration is released");
    gdr_verbs_rcache_entry_t *h = gdr_verbs_rcache_get(rc, d, 100);
    GDR_CHECK(h != g2 && h->tag == 0, "host memory never takes a device registration");
    gdr_verbs_rcache_put(rc, h);
    gdr_verbs_rcache_invalidate(rc, d, 2 * ps);
    munmap(d, 2 * ps);

    /* the hooks: munmap, madvise(DONTNEED), free, realloc */
    GDR_CHECK(gdr_verbs_memhooks_attach(rc) == 0, "hooks attached");
    gdr_verbs_rcache_get_stats(rc, &st);
    uint64_t inv0 = st.invalidated;
    munmap(a, 16 * ps);
    gdr_verbs_rcache_get_stats(rc, &st);
    GDR_CHECK(st.invalidated == inv0 + 1 && st.entries == 0, "munmap() invalidates (%llu)",
              (unsigned long long) st.invalidated);

    char *m = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    gdr_verbs_rcache_put(rc, gdr_verbs_rcache_get(rc, m, ps));
    madvise(m, ps, MADV_DONTNEED);
    gdr_verbs_rcache_get_stats(rc, &st);
    GDR_CHECK(st.invalidated == inv0 + 2, "madvise(MADV_DONTNEED) invalidates");
    madvise(m, ps, MADV_WILLNEED);
    gdr_verbs_rcache_get_stats(rc, &st);
    GDR_CHECK(st.invalidated == inv0 + 2, "madvise(MADV_WILLNEED) does not");
    munmap(m, 4 * ps);

    size_t big = 4 << 20;       /* above glibc's mmap threshold: free() unmaps it */
    char *p = malloc(big);
    memset(p, 1, big);
    /* kept referenced: 4 MiB exceeds the unused limit and would be evicted at put */
    gdr_verbs_rcache_entry_t *ep = gdr_verbs_rcache_get(rc, p, big);
    int regs_before = f.regs;
    free(p);
    gdr_verbs_rcache_get_stats(rc, &st);
    GDR_CHECK(st.invalidated == inv0 + 3 && ep->invalid, "free() of a 4 MiB block invalidates");
    gdr_verbs_rcache_put(rc, ep);
    char *q = malloc(big);
    gdr_verbs_rcache_entry_t *eq = gdr_verbs_rcache_get(rc, q, big);
    GDR_CHECK(f.regs == regs_before + 1, "a new block (%s address) is registered anew",
              q == p ? "the same" : "another");
    q = realloc(q, 2 * big);
    gdr_verbs_rcache_get_stats(rc, &st);
    GDR_CHECK(st.invalidated == inv0 + 4 && eq->invalid, "realloc() invalidates the old block");
    gdr_verbs_rcache_put(rc, eq);
    free(q);
    char *small = malloc(100);
    free(small);
    GDR_CHECK(1, "free() of memory nobody registered is harmless");

    /* eviction: unused registrations beyond the limit go, least recently used first */
    gdr_verbs_memhooks_detach(rc);
    char *e = mmap(NULL, 200 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int deregs_before = f.deregs;
    for (int i = 0; i < 5; i++)
        gdr_verbs_rcache_put(rc, gdr_verbs_rcache_get(rc, e + (size_t) i * 40 * ps, 20 * ps));
    gdr_verbs_rcache_get_stats(rc, &st);
    GDR_CHECK(f.deregs > deregs_before && st.bytes <= 64 * (size_t) ps,
              "beyond 64 unused pages the oldest are evicted (%zu bytes cached)", st.bytes);
    gdr_verbs_rcache_entry_t *newest = gdr_verbs_rcache_get(rc, e + 4 * 40 * ps, ps);
    GDR_CHECK(newest != NULL && newest->start == (uintptr_t) (e + 4 * 40 * ps),
              "the most recent one is still cached");
    gdr_verbs_rcache_put(rc, newest);
    munmap(e, 200 * ps);
    gdr_verbs_rcache_destroy(rc);
    GDR_CHECK(f.live == 0, "destroy deregisters everything (%d left)", f.live);
    GDR_CHECK(f.regs > 0 && f.asked_outside == 0, "every registration names the address asked"
              " for, inside its page-rounded range (%d of %d outside)", f.asked_outside, f.regs);
    return gdr_unit_finish();
}
