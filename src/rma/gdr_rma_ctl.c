#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L     /* posix_memalign */
#endif
#include "gdr_rma_ctl.h"
#include "gdr_rma_win.h"

#include <stdlib.h>
#include <string.h>

void gdr_rma_ctl_configure(gdr_rma_ctl_t *c, int on)
{
    c->on = on;
}

static int targets_ready(gdr_rma_win_t *w)
{
    if (w->ctl.t == NULL)
        w->ctl.t = calloc((size_t) w->n, sizeof(*w->ctl.t));
    return w->ctl.t != NULL;
}

int gdr_rma_ctl_expose(gdr_rma_win_t *w, gdr_rma_ctl_card_t *card, char *why, size_t why_len)
{
    gdr_rma_ctl_t *c = &w->ctl;
    memset(card, 0, sizeof(*card));
    if (!c->on || !w->rdma)
        return 0;
    size_t end = w->dynamic ? gdr_rma_ctl_detach_word(w->n, w->n)
        : gdr_rma_ctl_complete_word(w->n, w->n);
    size_t size = (end + 63) & ~(size_t) 63;
    void *block = NULL;
    if (!targets_ready(w) || posix_memalign(&block, 64, size) != 0)
        return GDR_RMA_NOMEM;
    memset(block, 0, size);
    if (w->eng->net.reg(w->eng->net.ctx, block, size, GDR_RMA_REMOTE_READ | GDR_RMA_REMOTE_WRITE
                        | GDR_RMA_REMOTE_ATOMIC, &c->mr, why, why_len) != 0) {
        memset(&c->mr, 0, sizeof(c->mr));
        free(block);
        return 1;
    }
    c->block = block;
    c->size = size;
    card->addr = c->mr.addr;
    card->rkey = c->mr.rkey;
    return 0;
}

void gdr_rma_ctl_set_card(gdr_rma_win_t *w, int target, const gdr_rma_ctl_card_t *card)
{
    if (!w->ctl.on || target < 0 || target >= w->n || !targets_ready(w))
        return;
    if (card->rkey == 0) {
        w->ctl.on = 0;          /* every rank sees this card: all turn it off together */
        return;
    }
    w->ctl.t[target] = (gdr_rma_ctl_target_t) {.addr = card->addr,.rkey = (uint32_t) card->rkey };
}

int gdr_rma_ctl_native(const gdr_rma_win_t *w)
{
    return w->ctl.on && w->rdma && w->ctl.t != NULL && w->ctl.block != NULL;
}

uint64_t gdr_rma_ctl_read(const gdr_rma_win_t *w, size_t offset)
{
    uint64_t v = w->ctl.block[offset / 8];
    __atomic_thread_fence(__ATOMIC_ACQUIRE);   /* what the NIC wrote before it, seen after */
    return v;
}

static void write_done(void *arg, int status)
{
    gdr_rma_ctl_t *c = arg;
    c->writes--;
    if (status != 0)
        c->failed = 1;
}

int gdr_rma_ctl_write(gdr_rma_win_t *w, int target, size_t offset, uint64_t value)
{
    gdr_rma_engine_t *eng = w->eng;
    const gdr_rma_ctl_target_t *t = &w->ctl.t[target];
    int rc;
    /* behind the epoch's reads and atomics on the NIC, not the host (gdr_rma_ctl.h) */
    unsigned flags = gdr_rma_tracker_post_flags(&w->tracker, target);
    gdr_rma_proto_t proto = gdr_rma_select_contig(gdr_rma_route_rc(w, target), 1, 8);
    while ((rc = eng->net.put(eng->net.ctx, w->targets[target].peer, proto, &value, 8,
                              t->addr + offset, t->rkey, flags, write_done,
                              &w->ctl)) == GDR_RMA_BUSY) {
        if (eng->host.progress(eng->host.ctx) != 0)
            return GDR_RMA_HOST_ERROR;
    }
    if (rc != GDR_RMA_OK)
        return GDR_RMA_ERROR;
    w->ctl.writes++;
    eng->sync_writes++;
    /* 8 bytes are always inlined or bounced; else wait before value goes out of scope */
    if (proto == GDR_RMA_PROTO_RC_ZCOPY)
        return gdr_rma_ctl_quiesce(w);
    return GDR_RMA_OK;
}

int gdr_rma_ctl_quiesce(gdr_rma_win_t *w)
{
    int rc = gdr_rma_wait_zero(w->eng, &w->ctl.writes, "for synchronisation writes", -1);
    if (rc != GDR_RMA_OK)
        return rc;
    if (w->ctl.failed) {
        w->ctl.failed = 0;
        return GDR_RMA_ERROR;
    }
    return GDR_RMA_OK;
}

const gdr_rma_ctl_target_t *gdr_rma_ctl_target(const gdr_rma_win_t *w, int target)
{
    return &w->ctl.t[target];
}

void gdr_rma_ctl_free(gdr_rma_win_t *w)
{
    gdr_rma_ctl_t *c = &w->ctl;
    if (c->writes > 0 && w->eng != NULL)
        (void) gdr_rma_ctl_quiesce(w);
    if (c->mr.handle != NULL && w->eng != NULL)
        w->eng->net.dereg(w->eng->net.ctx, &c->mr);
    free((void *) c->block);
    free(c->t);
    memset(c, 0, sizeof(*c));
}
