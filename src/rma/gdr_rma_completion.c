#include "gdr_rma_completion.h"

#include <stdlib.h>

int gdr_rma_tracker_init(gdr_rma_tracker_t *t, int n, gdr_rma_regions_t *regions)
{
    *t = (gdr_rma_tracker_t) {.n = n,.regions = regions };
    t->remote = calloc((size_t) n, sizeof(unsigned long));
    t->local = calloc((size_t) n, sizeof(unsigned long));
    t->reading = calloc((size_t) n, sizeof(unsigned long));
    t->by_messages = calloc((size_t) n, sizeof(unsigned long));
    t->slots = calloc((size_t) n, sizeof(*t->slots));
    for (int i = 0; t->slots != NULL && i < n; i++)
        t->slots[i] = (gdr_rma_tracker_slot_t) {.tracker = t,.target = i };
    if (t->slots == NULL || t->remote == NULL || t->local == NULL || t->reading == NULL || t->by_messages == NULL) {
        gdr_rma_tracker_free(t);
        return GDR_RMA_NOMEM;
    }
    return 0;
}

void gdr_rma_tracker_free(gdr_rma_tracker_t *t)
{
    while (t->free_ops != NULL) {
        gdr_rma_op_t *op = t->free_ops;
        t->free_ops = op->next_free;
        free(op);
    }
    t->free_count = 0;
    free(t->remote);
    free(t->local);
    free(t->reading);
    free(t->by_messages);
    free(t->slots);
    t->slots = NULL;
    t->remote = t->local = t->reading = t->by_messages = NULL;
}

void gdr_rma_op_hold_local(gdr_rma_op_t *op)
{
    if (op->local_held)
        return;
    op->local_held = 1;
    op->tracker->local[op->target]++;
    op->tracker->total_local++;
}

void gdr_rma_op_writes_only(gdr_rma_op_t *op)
{
    if (!op->reads_target)
        return;
    op->reads_target = 0;
    op->tracker->reading[op->target]--;
}

void gdr_rma_op_by_messages(gdr_rma_op_t *op)
{
    if (op->by_messages)
        return;
    op->by_messages = 1;
    op->tracker->by_messages[op->target]++;
}

void gdr_rma_op_local_done(gdr_rma_op_t *op)
{
    if (!op->local_held)
        return;
    op->local_held = 0;
    op->tracker->local[op->target]--;
    op->tracker->total_local--;
}

gdr_rma_op_t *gdr_rma_op_new(const gdr_rma_engine_t *eng, gdr_rma_tracker_t *t, int target,
                             int holds_local)
{
    gdr_rma_op_t *op = t->free_ops;
    if (op != NULL) {
        t->free_ops = op->next_free;
        t->free_count--;
        *op = (gdr_rma_op_t) { 0 };
    } else if ((op = calloc(1, sizeof(*op))) == NULL) {
        return NULL;
    }
    op->eng = eng;
    op->tracker = t;
    op->target = target;
    op->parts = 1;              /* held while posting */
    t->remote[target]++;
    t->total_remote++;
    op->reads_target = 1;
    t->reading[target]++;
    if (holds_local)
        gdr_rma_op_hold_local(op);
    return op;
}

void gdr_rma_op_add_part(gdr_rma_op_t *op)
{
    op->parts++;
}

static void op_release(gdr_rma_op_t *op)
{
    gdr_rma_tracker_t *t = op->tracker;
    t->remote[op->target]--;
    t->total_remote--;
    if (op->local_held) {
        t->local[op->target]--;
        t->total_local--;
    }
    if (op->reads_target)
        t->reading[op->target]--;
    if (op->by_messages)
        t->by_messages[op->target]--;
    if (op->pin != NULL)
        op->eng->net.unpin(op->eng->net.ctx, op->pin);
    free(op->temp);
    free(op->origin_temp);
    if (t->free_count < GDR_RMA_OP_POOL_MAX) {
        op->next_free = t->free_ops;
        t->free_ops = op;
        t->free_count++;
    } else {
        free(op);
    }
}

void gdr_rma_op_abandon(gdr_rma_op_t *op)
{
    op_release(op);
}

static void op_complete(gdr_rma_op_t *op)
{
    gdr_rma_complete_fn fn = op->complete;
    void *arg = op->complete_arg;
    int status = op->status;

    if (status != 0)
        op->tracker->failed = 1;
    if (fn != NULL)
        fn(arg, status, op->temp, op->temp_len);
    if (op->remote_news && op->tracker->regions != NULL)
        gdr_rma_regions_epoch_done(op->tracker->regions, op->target);
    op_release(op);
}

void gdr_rma_op_part_done(void *arg, int status)
{
    gdr_rma_op_t *op = arg;
    if (status != 0)
        op->status = GDR_RMA_ERROR;
    if (--op->parts == 0)
        op_complete(op);
}

void gdr_rma_op_on_complete(gdr_rma_op_t *op, gdr_rma_complete_fn fn, void *arg,
                            int remote_news)
{
    op->complete = fn;
    op->complete_arg = arg;
    op->remote_news = remote_news;
}

void gdr_rma_op_posted(gdr_rma_op_t *op)
{
    gdr_rma_op_part_done(op, 0);
}

void gdr_rma_tracker_write_done(void *slot, int status)
{
    gdr_rma_tracker_slot_t *s = slot;
    gdr_rma_tracker_t *t = s->tracker;
    t->remote[s->target]--;
    t->total_remote--;
    if (status != 0)
        t->failed = 1;
}

void gdr_rma_tracker_read_done(void *slot, int status)
{
    gdr_rma_tracker_slot_t *s = slot;
    gdr_rma_tracker_t *t = s->tracker;
    t->local[s->target]--;
    t->total_local--;
    t->reading[s->target]--;
    gdr_rma_tracker_write_done(slot, status);
}

/* A failed transport operation, reported once: later epochs start clean. */
static int failure_once(gdr_rma_tracker_t *t)
{
    if (!t->failed)
        return 0;
    t->failed = 0;
    return GDR_RMA_ERROR;
}

static int wait_counter(gdr_rma_tracker_t *t, const gdr_rma_engine_t *eng,
                        const unsigned long *count, int peer)
{
    int rc = gdr_rma_wait_zero(eng, count, "for one-sided completions", peer);
    return rc != 0 ? rc : failure_once(t);
}

int gdr_rma_wait_all(gdr_rma_tracker_t *t, const gdr_rma_engine_t *eng, int local_only)
{
    if (t->remote == NULL)
        return 0;               /* a window without RDMA */
    if (!local_only && t->regions != NULL)
        gdr_rma_regions_epoch_done(t->regions, -1);
    return wait_counter(t, eng, local_only ? &t->total_local : &t->total_remote, -1);
}

int gdr_rma_wait_target(gdr_rma_tracker_t *t, const gdr_rma_engine_t *eng, int target,
                        int local_only)
{
    if (t->remote == NULL || target < 0 || target >= t->n)
        return 0;
    if (!local_only && t->regions != NULL)
        gdr_rma_regions_epoch_done(t->regions, target);
    return wait_counter(t, eng, local_only ? &t->local[target] : &t->remote[target], target);
}

typedef struct {
    const gdr_rma_tracker_t *t;
    int spared;
} all_but_t;

static int pending_but_spared(const void *arg)
{
    const all_but_t *a = arg;
    const volatile gdr_rma_tracker_t *t = a->t;
    return t->total_remote != t->remote[a->spared];
}

int gdr_rma_wait_all_except(gdr_rma_tracker_t *t, const gdr_rma_engine_t *eng, int spared)
{
    if (t->remote == NULL)
        return 0;
    if (spared < 0 || spared >= t->n)
        return gdr_rma_wait_all(t, eng, 0);
    if (t->regions != NULL)
        gdr_rma_regions_epoch_done(t->regions, -1);
    all_but_t a = {.t = t,.spared = spared };
    int rc = gdr_rma_wait_until(eng, pending_but_spared, &a, "for one-sided completions", -1);
    return rc != 0 ? rc : failure_once(t);
}
