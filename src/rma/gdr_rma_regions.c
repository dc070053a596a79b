#include "gdr_rma_regions.h"
#include "gdr_rma_win.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gdr_rma_expose_may_register(unsigned expose, char *why, size_t why_len)
{
    if (!(expose & GDR_RMA_EXPOSE_IS_DEVICE) || (expose & GDR_RMA_EXPOSE_DEVICE_OK))
        return 1;
    if (why_len > 0)
        snprintf(why, why_len, "device memory is not registered with the NIC in this GPUDirect "
                 "mode (dmabuf or peermem only)");
    return 0;
}

static const gdr_rma_attached_t *attached_at(const gdr_rma_regions_t *r, uint64_t addr)
{
    for (const gdr_rma_attached_t *a = r->attached; a != NULL; a = a->next)
        if (addr >= a->base && addr - a->base < a->size)
            return a;
    return NULL;
}

int gdr_rma_regions_init(gdr_rma_regions_t *r, int n)
{
    r->asked = calloc((size_t) n, 1);
    r->n_ranks = n;
    return r->asked != NULL ? 0 : GDR_RMA_NOMEM;
}

gdr_rma_region_reply_t gdr_rma_regions_describe(const gdr_rma_regions_t *r, uint64_t addr)
{
    gdr_rma_region_reply_t out = { 0 };
    const gdr_rma_attached_t *a = attached_at(r, addr);
    if (a != NULL) {
        out.found = 1;
        out.base = a->base;
        out.size = a->size;
        out.rkey = a->mr.handle != NULL ? a->mr.rkey : 0;
        out.device = a->device;
    }
    return out;
}

gdr_rma_region_reply_t gdr_rma_regions_answer(gdr_rma_regions_t *r, int origin, uint64_t addr)
{
    /* counted before the answer leaves: a detach from now on reaches the origin */
    if (r->asked != NULL && origin >= 0 && origin < r->n_ranks)
        r->asked[origin] = 1;
    gdr_rma_region_reply_t out = gdr_rma_regions_describe(r, addr);
    out.detaches = r->detaches;
    return out;
}

int gdr_rma_regions_attach(gdr_rma_regions_t *r, const gdr_rma_engine_t *eng, void *base,
                           uint64_t size, unsigned access, unsigned expose, char *why,
                           size_t why_len)
{
    int rc = 0;
    gdr_rma_attached_t *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return GDR_RMA_NOMEM;
    a->base = (uint64_t) (uintptr_t) base;
    a->size = size;
    a->device = (expose & GDR_RMA_EXPOSE_IS_DEVICE) != 0;
    if (eng == NULL) {
        if (why_len > 0)
            snprintf(why, why_len, "the window has no RDMA (its ranks are reached by "
                     "messages and shared memory)");
        rc = 1;         /* recorded for origins' range checks only */
    } else if (!gdr_rma_expose_may_register(expose, why, why_len)) {
        rc = 1;         /* a->mr stays empty: rkey 0, accesses go as messages */
    } else if (eng->net.reg(eng->net.ctx, base, (size_t) size, access, &a->mr, why,
                            why_len) != 0) {
        memset(&a->mr, 0, sizeof(a->mr));
        rc = 1;
    }
    a->next = r->attached;
    r->attached = a;
    return rc;
}

int gdr_rma_regions_detach(gdr_rma_regions_t *r, const gdr_rma_engine_t *eng, uint64_t base)
{
    gdr_rma_attached_t **p = &r->attached;
    while (*p != NULL && (*p)->base != base)
        p = &(*p)->next;
    if (*p == NULL)
        return 0;       /* zero-length, or never attached (MPI does not ask us to check) */
    gdr_rma_attached_t *a = *p;
    *p = a->next;
    if (a->mr.handle != NULL)
        eng->net.dereg(eng->net.ctx, &a->mr);
    free(a);
    return 1;
}

int gdr_rma_win_detach(gdr_rma_win_t *w, uint64_t base)
{
    gdr_rma_regions_t *r = &w->regions;
    if (!gdr_rma_regions_detach(r, w->eng, base) || r->announced == NULL || r->asked == NULL)
        return GDR_RMA_OK;
    r->detaches++;
    for (int i = 0; i < r->n_ranks; i++) {       /* (n_ranks is w->n: regions_init) */
        if (!r->asked[i] || i == w->self)
            continue;
        int rc = gdr_rma_ctl_write(w, i, gdr_rma_ctl_detach_word(w->n, w->self), r->detaches);
        if (rc != GDR_RMA_OK)
            return rc;
    }
    return gdr_rma_ctl_quiesce(w);
}

void gdr_rma_regions_free(gdr_rma_regions_t *r, const gdr_rma_engine_t *eng)
{
    while (r->attached != NULL)
        gdr_rma_regions_detach(r, eng, r->attached->base);
    gdr_rma_regions_forget(r, -1);
    free(r->asked);
    r->asked = NULL;
    r->announced = NULL;
}

void gdr_rma_regions_forget(gdr_rma_regions_t *r, int target)
{
    int kept = 0;
    for (int i = 0; i < r->n_learned; i++)
        if (target >= 0 && r->learned[i].target != target)
            r->learned[kept++] = r->learned[i];
    r->n_learned = kept;
    r->next_evict = 0;
}

void gdr_rma_regions_epoch_done(gdr_rma_regions_t *r, int target)
{
    if (r->announced == NULL)
        gdr_rma_regions_forget(r, target);
}

/* Whether target has announced a detach since it told this rank of k */
static int stale(const gdr_rma_regions_t *r, const gdr_rma_learned_t *k)
{
    if (r->announced == NULL || k->target < 0 || k->target >= r->n_ranks)
        return 0;
    uint64_t now = r->announced[k->target];
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return now > k->detaches;
}

/* The region of target holding addr: one learned, or asked for and learned (*k stays valid
 * until the next call); this rank's own are looked up afresh each time into *own (it may
 * detach one without a flush of its own).  GDR_RMA_ERROR with *not_attached = 1 when the
 * target has not attached addr (or answers with a region that does not hold it). */
static int region_at(gdr_rma_regions_t *r, const gdr_rma_engine_t *eng, void *host_win,
                     int self, int target, uint64_t addr, gdr_rma_learned_t **k,
                     gdr_rma_learned_t *own, int *not_attached)
{
    if (target == self) {
        gdr_rma_region_reply_t mine = gdr_rma_regions_describe(r, addr);
        if (!mine.found) {
            *not_attached = 1;
            return GDR_RMA_ERROR;
        }
        *own = (gdr_rma_learned_t) {.target = self,.base = mine.base,.size = mine.size,
            .rkey = mine.rkey };
        *k = own;
        return GDR_RMA_OK;
    }
    for (int i = 0; i < r->n_learned; i++)
        if (r->learned[i].target == target && addr >= r->learned[i].base
            && addr - r->learned[i].base < r->learned[i].size) {
            if (stale(r, &r->learned[i])) {
                gdr_rma_regions_forget(r, target);  /* which one went is not said */
                break;
            }
            *k = &r->learned[i];
            return GDR_RMA_OK;
        }
    gdr_rma_region_reply_t rep = { 0 };
    r->queries++;
    if (eng->host.query_region(eng->host.ctx, host_win, target, addr, &rep) != 0)
        return GDR_RMA_HOST_ERROR;
    /* a region that does not hold addr is no answer (a confused target): learning it
     * would hand out its key for memory it never described */
    if (!rep.found || addr < rep.base || addr - rep.base >= rep.size
        || rep.size > UINT64_MAX - rep.base) {
        *not_attached = 1;
        return GDR_RMA_ERROR;
    }
    if (r->n_learned < GDR_RMA_LEARNED_MAX) {
        *k = &r->learned[r->n_learned++];
    } else {
        *k = &r->learned[r->next_evict];
        r->next_evict = (r->next_evict + 1) % GDR_RMA_LEARNED_MAX;
    }
    **k = (gdr_rma_learned_t) {.target = target,.base = rep.base,.size = rep.size,
        .rkey = rep.rkey,.detaches = rep.detaches };
    return GDR_RMA_OK;
}

/* (Beyond the header: GDR_RMA_ERROR with *not_attached = 1 also when any later byte of
 * the range is not attached; a range running past its region into the next attachment
 * gets *rkey 0.  The header is left alone: MPICH's whole build includes it.) */
int gdr_rma_regions_lookup(gdr_rma_regions_t *r, const gdr_rma_engine_t *eng, void *host_win,
                           int self, int target, uint64_t addr, uint64_t len, uint32_t *rkey,
                           int *not_attached)
{
    gdr_rma_learned_t *k, own;
    uint64_t end;

    *rkey = 0;
    *not_attached = 0;
    int rc = region_at(r, eng, host_win, self, target, addr, &k, &own, not_attached);
    if (rc != GDR_RMA_OK)
        return rc;
    if (len <= k->size - (addr - k->base)) {
        *rkey = k->rkey;
        return GDR_RMA_OK;
    }
    /* a range running past its region goes as a message, and only into attachments that
     * continue it: MPI makes an access to memory not attached erroneous, and the target's
     * message handlers would write it unchecked */
    if (__builtin_add_overflow(addr, len, &end)) {
        *not_attached = 1;
        return GDR_RMA_ERROR;
    }
    for (uint64_t next = k->base + k->size; next < end; next = k->base + k->size)
        if ((rc = region_at(r, eng, host_win, self, target, next, &k, &own, not_attached))
            != GDR_RMA_OK)
            return rc;
    return GDR_RMA_OK;
}
