/* Registration cache: sharing, reuse, eviction, and invalidation whenever the pages
 * under a registration can change (through the real hooks: free, realloc, munmap,
 * mremap, madvise, mmap, remap_file_pages, shmat/shmdt, brk/sbrk), each counted by
 * cause, so a recycled address is registered anew; device memory by buffer id; the
 * cache turned off.  The registration functions are fakes that record calls. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
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

static uint64_t by(gdr_verbs_rcache_t *rc, gdr_verbs_rcache_cause_t cause)
{
    gdr_verbs_rcache_stats_t st;
    gdr_verbs_rcache_get_stats(rc, &st);
    return st.invalidated_by[cause];
}

/* A registration of [p, p+len) kept referenced (so that it is not evicted), then the
 * call under test, then: was it invalidated, and counted under cause? */
#define EXPECT_INVALIDATED(rc, p, len, cause, call, what) do {                           \
        gdr_verbs_rcache_entry_t *e_ = gdr_verbs_rcache_get(rc, p, len);                  \
        uint64_t n_ = by(rc, cause);                                                     \
        call;                                                                            \
        GDR_CHECK(e_ != NULL && e_->invalid && by(rc, cause) > n_, "%s", what);          \
        gdr_verbs_rcache_put(rc, e_);                                                    \
    } while (0)

/* The hooks for calls that put new pages under an address, and shm and brk. */
static void hooks_that_bring_pages(gdr_verbs_rcache_t *rc, fake_t *f)
{
    size_t ps = (size_t) sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, 8 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    EXPECT_INVALIDATED(rc, m + ps, 2 * ps, GDR_VERBS_RCACHE_MMAP,
                       mmap(m, 4 * ps, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
                       "mmap(MAP_FIXED) over a registered range invalidates it");
    /* unmapped behind the hooks' back (a direct system call), then mapped again at the
     * same address without MAP_FIXED: the new pages are seen as they arrive */
    gdr_verbs_rcache_entry_t *e = gdr_verbs_rcache_get(rc, m + 6 * ps, ps);
    syscall(SYS_munmap, m + 4 * ps, 4 * ps);
    GDR_CHECK(!e->invalid, "a direct munmap system call is not seen");
    char *again = mmap(m + 4 * ps, 4 * ps, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    GDR_CHECK(again == m + 4 * ps && e->invalid,
              "plain mmap() landing on a stale registration invalidates it");
    gdr_verbs_rcache_put(rc, e);
    int regs = f->regs;
    gdr_verbs_rcache_put(rc, gdr_verbs_rcache_get(rc, m + 6 * ps, ps));
    GDR_CHECK(f->regs == regs + 1, "the new pages are registered anew");
    if (again != m + 4 * ps)
        munmap(again, 4 * ps);

    EXPECT_INVALIDATED(rc, m, ps, GDR_VERBS_RCACHE_MMAP,
                       mmap64(m, ps, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
                       "mmap64(MAP_FIXED) too");
    char *grown;
    EXPECT_INVALIDATED(rc, m, 2 * ps, GDR_VERBS_RCACHE_MREMAP,
                       grown = mremap(m, 8 * ps, 64 * ps, MREMAP_MAYMOVE),
                       "mremap() invalidates the old range");
    munmap(grown, 64 * ps);

    /* a file's pages rearranged under a shared mapping */
    FILE *tf = tmpfile();
    if (tf != NULL && ftruncate(fileno(tf), (off_t) (2 * ps)) == 0) {
        char *fm = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(tf), 0);
        EXPECT_INVALIDATED(rc, fm, ps, GDR_VERBS_RCACHE_MMAP,
                           remap_file_pages(fm, ps, 0, 1, 0),
                           "remap_file_pages() invalidates");
        munmap(fm, 2 * ps);
    }
    if (tf != NULL)
        fclose(tf);

    /* System V shared memory: detached, and another segment attached at its address */
    int id1 = shmget(IPC_PRIVATE, 4 * ps, IPC_CREAT | 0600);
    int id2 = shmget(IPC_PRIVATE, 4 * ps, IPC_CREAT | 0600);
    GDR_CHECK(id1 >= 0 && id2 >= 0, "two shared memory segments");
    char *s1 = shmat(id1, NULL, 0);
    EXPECT_INVALIDATED(rc, s1 + 2 * ps, ps, GDR_VERBS_RCACHE_SHM, shmdt(s1),
                       "shmdt() invalidates registrations inside the segment, past its "
                       "first page too");
    s1 = shmat(id1, NULL, 0);
    e = gdr_verbs_rcache_get(rc, s1 + 3 * ps, 100);
    syscall(SYS_shmdt, s1);     /* unseen */
    char *s2 = shmat(id2, s1, 0);
    GDR_CHECK(s2 == s1 && e->invalid,
              "shmat() of another segment at that address invalidates what stood there");
    gdr_verbs_rcache_put(rc, e);
    EXPECT_INVALIDATED(rc, s2 + ps, ps, GDR_VERBS_RCACHE_SHM,
                       shmat(id1, s2, SHM_REMAP), "shmat(SHM_REMAP) over a registration");
    shmdt(s2);
    shmctl(id1, IPC_RMID, NULL);
    shmctl(id2, IPC_RMID, NULL);

#if !defined(__SANITIZE_ADDRESS__)
    /* the break: pages above it given back, then others taken.  malloc's main arena
     * grows the break too: leave it room so that it does not move in between */
    free(malloc(64 << 10));
    char *top = sbrk(0);
    char *base = sbrk((intptr_t) (4 * ps));
    if (base == top && base != (char *) -1) {
        memset(base, 1, 4 * ps);
        EXPECT_INVALIDATED(rc, base + 2 * ps, ps, GDR_VERBS_RCACHE_BRK,
                           sbrk(-(intptr_t) (2 * ps)), "sbrk() shrinking over it invalidates");
        EXPECT_INVALIDATED(rc, base, ps, GDR_VERBS_RCACHE_BRK, brk(base),
                           "brk() lowering the break over it invalidates");
        GDR_CHECK(sbrk(0) == base, "the C library's break follows (%p, %p)", sbrk(0),
                  (void *) base);
    } else {
        GDR_CHECK(1, "the break was moved by another thread: brk/sbrk not checked");
    }
#endif
    (void) f;
}

/* Turned off (MPIR_CVAR_CH4_GDR_REG_CACHE=0) or memory of unknown identity: each user
 * gets a registration of its own, released at its put. */
static void cache_off(void)
{
    fake_t f = { 0 };
    gdr_verbs_rcache_ops_t ops = {.reg = fake_reg,.dereg = fake_dereg };
    gdr_verbs_rcache_stats_t st;
    size_t ps = (size_t) sysconf(_SC_PAGESIZE);
    char *a = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    gdr_verbs_rcache_t *off = gdr_verbs_rcache_create(&ops, &f, 64 * ps, 1);
    gdr_verbs_rcache_entry_t *e1 = gdr_verbs_rcache_get(off, a, ps);
    gdr_verbs_rcache_entry_t *e2 = gdr_verbs_rcache_get(off, a, ps);
    GDR_CHECK(e1 != NULL && e2 != NULL && e1 != e2 && f.regs == 2,
              "cache off: two transfers from one buffer register twice");
    gdr_verbs_rcache_put(off, e1);
    GDR_CHECK(f.deregs == 1, "cache off: deregistered at the put");
    gdr_verbs_rcache_put(off, e2);
    gdr_verbs_rcache_get_stats(off, &st);
    GDR_CHECK(f.live == 0 && st.once == 2 && st.hits == 0 && st.entries == 0,
              "cache off: nothing kept (%d live, %llu once)", f.live,
              (unsigned long long) st.once);
    gdr_verbs_rcache_destroy(off);

    gdr_verbs_rcache_t *on = gdr_verbs_rcache_create(&ops, &f, 64 * ps, 0);
    int regs = f.regs;
    e1 = gdr_verbs_rcache_get_tagged(on, a, ps, GDR_VERBS_RCACHE_TAG_ONCE);
    gdr_verbs_rcache_put(on, e1);
    e2 = gdr_verbs_rcache_get_tagged(on, a, ps, GDR_VERBS_RCACHE_TAG_ONCE);
    gdr_verbs_rcache_put(on, e2);
    GDR_CHECK(f.regs == regs + 2 && f.live == 0,
              "device memory without a buffer id is registered for each use, never reused");
    gdr_verbs_rcache_destroy(on);
    munmap(a, 4 * ps);
}

int main(void)
{
    cache_off();

    fake_t f = { 0 };
    gdr_verbs_rcache_ops_t ops = {.reg = fake_reg,.dereg = fake_dereg };
    gdr_verbs_rcache_stats_t st;
    long ps = sysconf(_SC_PAGESIZE);
    gdr_verbs_rcache_t *rc = gdr_verbs_rcache_create(&ops, &f, 64 * (size_t) ps, 0);
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
    gdr_verbs_rcache_invalidate(rc, a + 2 * ps, 1, GDR_VERBS_RCACHE_MUNMAP);
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
    gdr_verbs_rcache_get_stats(rc, &st);
    GDR_CHECK(st.invalidated_by[GDR_VERBS_RCACHE_DEVICE] == 1,
              "device memory: counted as a new allocation at the address");
    gdr_verbs_rcache_entry_t *h = gdr_verbs_rcache_get(rc, d, 100);
    GDR_CHECK(h != g2 && h->tag == 0, "host memory never takes a device registration");
    gdr_verbs_rcache_put(rc, h);
    gdr_verbs_rcache_invalidate(rc, d, 2 * ps, GDR_VERBS_RCACHE_MUNMAP);
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

    hooks_that_bring_pages(rc, &f);

    /* eviction: unused registrations beyond the limit go, least recently used first */
    gdr_verbs_memhooks_detach(rc);
    char *e = mmap(NULL, 200 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int deregs_before = f.deregs;
    for (int i = 0; i < 5; i++)
        gdr_verbs_rcache_put(rc, gdr_verbs_rcache_get(rc, e + (size_t) i * 40 * ps, 20 * ps));
    gdr_verbs_rcache_get_stats(rc, &st);
    GDR_CHECK(f.deregs > deregs_before && st.bytes <= 64 * (size_t) ps,
              "beyond 64 unused pages the oldest are evicted (%llu bytes cached)",
              (unsigned long long) st.bytes);
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
