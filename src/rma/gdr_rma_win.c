#include "gdr_rma_win.h"

#include <stdlib.h>
#include <string.h>

int gdr_rma_win_init(gdr_rma_win_t *w, gdr_rma_engine_t *eng, void *host_win, int n,
                     int self, int dynamic, int rdma)
{
    memset(w, 0, sizeof(*w));
    w->eng = eng;
    w->host_win = host_win;
    w->n = n;
    w->self = self;
    w->dynamic = dynamic;
    w->rdma = rdma && eng != NULL;
    w->targets = calloc((size_t) n, sizeof(*w->targets));
    if (w->targets == NULL)
        goto oom;
    for (int i = 0; i < n; i++)
        w->targets[i].peer = -1;
    if (w->rdma) {
        w->last_acc_path = calloc((size_t) n, 1);
        w->acc_read_posted = calloc((size_t) n, 1);
        if (w->last_acc_path == NULL || w->acc_read_posted == NULL
            || gdr_rma_tracker_init(&w->tracker, n, dynamic ? &w->regions : NULL) != 0
            || (dynamic && gdr_rma_regions_init(&w->regions, n) != 0))
            goto oom;
    }
    return 0;
  oom:
    gdr_rma_win_free(w);
    return GDR_RMA_NOMEM;
}

void gdr_rma_win_set_peer(gdr_rma_win_t *w, int target, int peer)
{
    if (w->rdma && target >= 0 && target < w->n)
        w->targets[target].peer = peer;
}

int gdr_rma_win_all_reachable(const gdr_rma_win_t *w)
{
    if (!w->rdma)
        return 0;
    for (int i = 0; i < w->n; i++)
        if (w->targets[i].peer < 0)
            return 0;
    return 1;
}

void gdr_rma_win_set_policy(gdr_rma_win_t *w, int all_reach_nic, unsigned declared, int ordered)
{
    w->atomics = gdr_rma_atomics_policy(all_reach_nic, declared, ordered);
}

unsigned gdr_rma_win_access(const gdr_rma_win_t *w)
{
    return GDR_RMA_REMOTE_READ | GDR_RMA_REMOTE_WRITE |
        (w->atomics.native ? GDR_RMA_REMOTE_ATOMIC : 0);
}

int gdr_rma_win_expose(gdr_rma_win_t *w, void *base, uint64_t size, uint64_t disp_unit,
                       unsigned expose, gdr_rma_card_t *card, char *why, size_t why_len)
{
    *card = (gdr_rma_card_t) {.size = size,.disp_unit = disp_unit };
    char ctl_why[160];
    (void) gdr_rma_ctl_expose(w, &card->ctl, ctl_why, sizeof(ctl_why));
    if ((expose & GDR_RMA_EXPOSE_IS_DEVICE) && !w->dynamic)
        card->flags |= GDR_RMA_CARD_DEVICE;
    if (expose & GDR_RMA_EXPOSE_GPU)
        card->flags |= GDR_RMA_CARD_GPU;
    if (!w->rdma || size == 0 || w->dynamic)
        return 0;
    if (!gdr_rma_expose_may_register(expose, why, why_len))
        return 1;
    if (w->eng->net.reg(w->eng->net.ctx, base, (size_t) size, gdr_rma_win_access(w), &w->mr,
                        why, why_len) != 0) {
        memset(&w->mr, 0, sizeof(w->mr));
        return 1;
    }
    card->base = w->mr.addr;
    card->rkey = w->mr.rkey;
    return 0;
}

void gdr_rma_win_set_card(gdr_rma_win_t *w, int target, const gdr_rma_card_t *card)
{
    if (target < 0 || target >= w->n)
        return;
    gdr_rma_target_t *t = &w->targets[target];
    t->size = card->size;
    t->disp_unit = card->disp_unit;
    t->device = (card->flags & GDR_RMA_CARD_DEVICE) != 0;
    t->gpu = (card->flags & GDR_RMA_CARD_GPU) != 0;
    if (w->rdma) {
        t->base = card->base;
        t->rkey = (uint32_t) card->rkey;
        gdr_rma_ctl_set_card(w, target, &card->ctl);
        /* (control blocks on or off is final once every card is in: each one recomputes) */
        int announced = w->dynamic && gdr_rma_ctl_native(w);
        w->regions.announced = announced ? w->ctl.block + gdr_rma_ctl_detach_word(w->n, 0) / 8
            : NULL;
    }
}

gdr_rma_range_status_t gdr_rma_win_check_range(const gdr_rma_win_t *w, int target, int64_t disp,
                                               int64_t lb, uint64_t span)
{
    uint64_t offset;
    if (target < 0 || target >= w->n || w->targets == NULL)
        return GDR_RMA_RANGE_OK;        /* the host refuses bad ranks itself */
    if (w->dynamic) {
        /* (addresses are absolute: the window's base is 0 and its unit 1) */
        /* (only the sum's overflow here: attachments are gdr_rma_regions_lookup's, which
         * may have to ask the target) */
        int64_t addr;
        return __builtin_add_overflow(disp, lb, &addr) ? GDR_RMA_RANGE_OVERFLOW
            : GDR_RMA_RANGE_OK;
    }
    return gdr_rma_range_check_span(disp, w->targets[target].disp_unit, lb, span,
                                    w->targets[target].size, &offset);
}

void gdr_rma_win_free(gdr_rma_win_t *w)
{
    /* (a window without RDMA recorded its regions unregistered: freed all the same) */
    gdr_rma_regions_free(&w->regions, w->eng);
    if (w->eng != NULL && w->mr.handle != NULL)
        w->eng->net.dereg(w->eng->net.ctx, &w->mr);
    gdr_rma_passive_free(w);
    gdr_rma_active_free(w);
    gdr_rma_ctl_free(w);
    gdr_rma_tracker_free(&w->tracker);
    free(w->targets);
    free(w->last_acc_path);
    free(w->acc_read_posted);
    memset(w, 0, sizeof(*w));
}
