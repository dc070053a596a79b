/* Notified RMA's bookkeeping (gdr_rma_notify.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gdr_rma_notify.h"
#include "common/gdr_status.h"
#include "gdr/gdr_rma_signal.h"

int gdr_rma_notify_init(gdr_rma_notify_t *t, int nranks, const int *counts, int me,
                        uint64_t *mine)
{
    memset(t, 0, sizeof(*t));
    if (nranks <= 0 || me < 0 || me >= nranks)
        return GDR_STATUS_ERROR;
    for (int r = 0; r < nranks; r++)
        if (counts[r] < 0)
            return GDR_STATUS_ERROR;
    t->counts = malloc(sizeof(int) * (size_t) nranks);
    if (t->counts == NULL)
        return GDR_STATUS_NOMEM;
    memcpy(t->counts, counts, sizeof(int) * (size_t) nranks);
    t->nranks = nranks;
    t->me = me;
    t->mine = mine;
    for (int i = 0; i < counts[me]; i++)
        gdr_signal_apply(GDR_SIGNAL_SET, &mine[i], 0);
    return GDR_STATUS_OK;
}

void gdr_rma_notify_fini(gdr_rma_notify_t *t)
{
    free(t->counts);
    free(t->pending);
    memset(t, 0, sizeof(*t));
}

int gdr_rma_notify_check(const gdr_rma_notify_t *t, int target, int idx, char *why,
                         size_t why_len)
{
    if (target < 0 || target >= t->nranks) {
        snprintf(why, why_len, "rank %d is not in the window's group of %d", target,
                 t->nranks);
        return GDR_STATUS_ERROR;
    }
    int n = t->counts[target];
    if (idx >= 0 && idx < n)
        return GDR_STATUS_OK;
    if (n == 0)
        snprintf(why, why_len, "notification_idx %d: rank %d attached no notification "
                 "counters to this window (MPIX_Win_notify_attach with 0)", idx, target);
    else
        snprintf(why, why_len, "notification_idx %d is outside rank %d's %d notification "
                 "counters (valid: 0 to %d)", idx, target, n, n - 1);
    return GDR_STATUS_ERROR;
}

int gdr_rma_notify_add(gdr_rma_notify_t *t, void *op, int target, int idx)
{
    if (t->npending == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        gdr_rma_notify_pending_t *p = realloc(t->pending, cap * sizeof(*p));
        if (p == NULL)
            return GDR_STATUS_NOMEM;
        t->pending = p;
        t->cap = cap;
    }
    t->pending[t->npending++] = (gdr_rma_notify_pending_t) {.op = op,.target = target,
        .idx = idx
    };
    return GDR_STATUS_OK;
}

int gdr_rma_notify_sweep(gdr_rma_notify_t *t, int target, int (*done)(void *ctx, void *op),
                         int (*send)(void *ctx, void *op, int target, int idx), void *ctx,
                         size_t *sent)
{
    size_t keep = 0, i = 0;
    int rc = 0;
    /* kept entries slide down in place, so the order of the rest stays as started */
    for (; i < t->npending; i++) {
        gdr_rma_notify_pending_t p = t->pending[i];
        if (rc == 0 && (target < 0 || p.target == target) && done(ctx, p.op)) {
            rc = send(ctx, p.op, p.target, p.idx);
            if (rc == 0 && sent != NULL)
                (*sent)++;
            continue;
        }
        t->pending[keep++] = p;
    }
    t->npending = keep;
    return rc;
}

size_t gdr_rma_notify_pending(const gdr_rma_notify_t *t, int target)
{
    if (target < 0)
        return t->npending;
    size_t n = 0;
    for (size_t i = 0; i < t->npending; i++)
        n += t->pending[i].target == target;
    return n;
}

uint64_t gdr_rma_notify_load(const gdr_rma_notify_t *t, int idx)
{
    return __atomic_load_n(&t->mine[idx], __ATOMIC_ACQUIRE);
}

void gdr_rma_notify_store(gdr_rma_notify_t *t, int idx, uint64_t value)
{
    gdr_signal_apply(GDR_SIGNAL_SET, &t->mine[idx], value);
}
