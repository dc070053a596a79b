#include "gdr_rma_stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOT_ALIGN 64

int gdr_rma_stage_init(gdr_rma_stage_t *st, const gdr_rma_transport_t *net,
                       const gdr_rma_device_t *dev, size_t slot_bytes, unsigned slots_per_pool)
{
    size_t n = (size_t) slots_per_pool * GDR_RMA_STAGE_POOLS;
    char why[160] = "";

    memset(st, 0, sizeof(*st));
    st->net = net;
    st->dev = dev;
    if (slot_bytes == 0 || slots_per_pool == 0 || slot_bytes > SIZE_MAX / 2
        || (slot_bytes + SLOT_ALIGN - 1) / SLOT_ALIGN > SIZE_MAX / SLOT_ALIGN / n) {
        snprintf(st->error, sizeof(st->error), "staging slots refused: %u slots of %zu bytes "
                 "per pool (both must be positive, and the block must fit in memory)",
                 slots_per_pool, slot_bytes);
        return GDR_RMA_ERROR;
    }
    st->slot_bytes = (slot_bytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
    st->slots_per_pool = slots_per_pool;
    size_t bytes = st->slot_bytes * n;

    st->slots = calloc(n, sizeof(*st->slots));
    st->free_ids = calloc(n, sizeof(*st->free_ids));
    if (st->slots == NULL || st->free_ids == NULL) {
        snprintf(st->error, sizeof(st->error), "out of memory for %zu staging slots", n);
        gdr_rma_stage_free(st);
        return GDR_RMA_NOMEM;
    }
    int rc = dev->host_alloc(dev->ctx, bytes, &st->block);
    if (rc != GDR_RMA_OK) {
        snprintf(st->error, sizeof(st->error), "allocating %zu bytes of pinned staging "
                 "memory failed: %s", bytes, dev->error(dev->ctx));
        st->block = NULL;
        gdr_rma_stage_free(st);
        return rc == GDR_RMA_NOMEM ? GDR_RMA_NOMEM : GDR_RMA_ERROR;
    }
    if ((uintptr_t) st->block % SLOT_ALIGN != 0) {
        snprintf(st->error, sizeof(st->error), "the device's host_alloc returned %p, not "
                 "aligned to %d bytes", st->block, SLOT_ALIGN);
        gdr_rma_stage_free(st);
        return GDR_RMA_ERROR;
    }
    if (net->reg(net->ctx, st->block, bytes, GDR_RMA_REMOTE_READ | GDR_RMA_REMOTE_WRITE,
                 &st->mr, why, sizeof(why)) != 0) {
        snprintf(st->error, sizeof(st->error), "registering %zu bytes of staging slots for "
                 "remote read and write failed: %s", bytes, why);
        memset(&st->mr, 0, sizeof(st->mr));
        gdr_rma_stage_free(st);
        return GDR_RMA_ERROR;
    }
    if (net->pin(net->ctx, st->block, bytes, 0, &st->pin) != GDR_RMA_OK) {
        snprintf(st->error, sizeof(st->error), "pinning %zu bytes of staging slots failed: "
                 "%s", bytes, net->error(net->ctx));
        st->pin = NULL;
        gdr_rma_stage_free(st);
        return GDR_RMA_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        gdr_rma_slot_t *s = &st->slots[i];
        s->addr = (char *) st->block + i * st->slot_bytes;
        s->raddr = (uint64_t) (uintptr_t) s->addr;
        s->rkey = st->mr.rkey;
        s->pin = st->pin;
        s->index = (unsigned) i;
        s->pool = (gdr_rma_stage_pool_t) (i / slots_per_pool);
        /* each pool's stack of free indices pops its lowest index first */
        size_t base = (size_t) s->pool * slots_per_pool;
        st->free_ids[i] = (unsigned) (base + slots_per_pool - 1 - (i - base));
    }
    for (int p = 0; p < GDR_RMA_STAGE_POOLS; p++)
        st->n_free[p] = slots_per_pool;
    return GDR_RMA_OK;
}

int gdr_rma_stage_take(gdr_rma_stage_t *st, gdr_rma_stage_pool_t pool, gdr_rma_slot_t **slot)
{
    gdr_rma_stage_counts_t *c = &st->counts[pool];
    *slot = NULL;
    if (st->n_free[pool] == 0) {
        c->busy++;
        return GDR_RMA_BUSY;
    }
    unsigned id = st->free_ids[pool * st->slots_per_pool + --st->n_free[pool]];
    *slot = &st->slots[id];
    (*slot)->taken = 1;
    c->taken++;
    if (++c->in_use > c->high_water)
        c->high_water = c->in_use;
    return GDR_RMA_OK;
}

int gdr_rma_stage_give(gdr_rma_stage_t *st, gdr_rma_slot_t *slot)
{
    if (slot == NULL || slot != gdr_rma_stage_slot(st, slot->index) || !slot->taken)
        return GDR_RMA_ERROR;
    gdr_rma_stage_pool_t pool = slot->pool;
    slot->taken = 0;
    st->free_ids[pool * st->slots_per_pool + st->n_free[pool]++] = slot->index;
    st->counts[pool].in_use--;
    return GDR_RMA_OK;
}

gdr_rma_slot_t *gdr_rma_stage_slot(gdr_rma_stage_t *st, uint64_t index)
{
    if (st->slots == NULL || index >= (uint64_t) st->slots_per_pool * GDR_RMA_STAGE_POOLS)
        return NULL;
    return &st->slots[index];
}

void gdr_rma_stage_free(gdr_rma_stage_t *st)
{
    if (st->pin != NULL)
        st->net->unpin(st->net->ctx, st->pin);
    if (st->mr.handle != NULL)
        st->net->dereg(st->net->ctx, &st->mr);
    if (st->block != NULL)
        st->dev->host_free(st->dev->ctx, st->block);
    free(st->slots);
    free(st->free_ids);
    char error[sizeof(st->error)];
    memcpy(error, st->error, sizeof(error));
    memset(st, 0, sizeof(*st));
    memcpy(st->error, error, sizeof(error));
}
