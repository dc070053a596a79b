#include "gdr_rma_lock.h"

enum {
    S_IDLE,
    S_SHARED_ADD,               /* +1 holder issued */
    S_SHARED_UNDO,              /* -1 issued after an exclusive holder or waiter was seen */
    S_EXCL_FIRST,               /* CAS 0 -> held issued */
    S_EXCL_ANNOUNCE,            /* +1 waiter issued */
    S_EXCL_TRY,                 /* CAS guess -> held (one waiter fewer) issued */
    S_HELD,
    S_RELEASING
};

static void fadd(gdr_rma_lock_step_t *s, uint64_t add)
{
    s->op = GDR_RMA_LOCK_FADD;
    s->add = add;
    s->compare = s->swap = 0;
}

static void cas(gdr_rma_lock_step_t *s, uint64_t compare, uint64_t swap)
{
    s->op = GDR_RMA_LOCK_CAS;
    s->add = 0;
    s->compare = compare;
    s->swap = swap;
}

/* no holder of either kind, and at least the one waiter we announced */
static int lockable(uint64_t w)
{
    return !(w & GDR_RMA_LOCK_EXCL) && GDR_RMA_LOCK_READERS(w) == 0 && GDR_RMA_LOCK_WAITERS(w) > 0;
}

static gdr_rma_lock_next_t later(gdr_rma_lock_t *lk, uint64_t *delay_ns)
{
    lk->tries++;
    *delay_ns = lk->backoff_ns;
    lk->backoff_ns = lk->backoff_ns * 2 > lk->max_ns ? lk->max_ns : lk->backoff_ns * 2;
    return GDR_RMA_LOCK_LATER;
}

/* The word as an exclusive locker that has announced itself last saw it. */
static gdr_rma_lock_next_t exclusive_try(gdr_rma_lock_t *lk, uint64_t w, gdr_rma_lock_step_t *step,
                                         uint64_t *delay_ns)
{
    lk->state = S_EXCL_TRY;
    if (lockable(w)) {
        cas(step, w, w - GDR_RMA_LOCK_WAITER + GDR_RMA_LOCK_EXCL);
        return GDR_RMA_LOCK_NEXT;
    }
    fadd(step, 0);              /* held by others: look again later (a read) */
    return later(lk, delay_ns);
}

void gdr_rma_lock_acquire(gdr_rma_lock_t *lk, gdr_rma_lock_kind_t kind, uint64_t min_ns,
                          uint64_t max_ns, gdr_rma_lock_step_t *step)
{
    lk->kind = kind;
    lk->min_ns = min_ns > 0 ? min_ns : 1;
    lk->max_ns = max_ns > lk->min_ns ? max_ns : lk->min_ns;
    lk->backoff_ns = lk->min_ns;
    lk->tries = 0;
    if (kind == GDR_RMA_LOCK_SHARED) {
        lk->state = S_SHARED_ADD;
        fadd(step, 1);
    } else {
        lk->state = S_EXCL_FIRST;
        cas(step, 0, GDR_RMA_LOCK_EXCL);
    }
}

gdr_rma_lock_next_t gdr_rma_lock_on_result(gdr_rma_lock_t *lk, uint64_t old,
                                           gdr_rma_lock_step_t *step, uint64_t *delay_ns)
{
    *delay_ns = 0;
    switch (lk->state) {
        case S_SHARED_ADD:
            if (!(old & GDR_RMA_LOCK_EXCL) && GDR_RMA_LOCK_WAITERS(old) == 0) {
                lk->state = S_HELD;
                return GDR_RMA_LOCK_HELD;
            }
            lk->state = S_SHARED_UNDO;
            fadd(step, (uint64_t) -1);
            return GDR_RMA_LOCK_NEXT;
        case S_SHARED_UNDO:
            lk->state = S_SHARED_ADD;
            fadd(step, 1);
            return later(lk, delay_ns);
        case S_EXCL_FIRST:
            if (old == 0) {
                lk->state = S_HELD;
                return GDR_RMA_LOCK_HELD;
            }
            lk->state = S_EXCL_ANNOUNCE;
            fadd(step, GDR_RMA_LOCK_WAITER);
            return GDR_RMA_LOCK_NEXT;
        case S_EXCL_ANNOUNCE:
            return exclusive_try(lk, old + GDR_RMA_LOCK_WAITER, step, delay_ns);
        case S_EXCL_TRY:
            if (step->op == GDR_RMA_LOCK_CAS && old == step->compare) {
                lk->state = S_HELD;
                return GDR_RMA_LOCK_HELD;
            }
            return exclusive_try(lk, old, step, delay_ns);
        case S_RELEASING:
            lk->state = S_IDLE;
            return GDR_RMA_LOCK_RELEASED;
        default:
            return GDR_RMA_LOCK_HELD;   /* no step was outstanding */
    }
}

void gdr_rma_lock_release(gdr_rma_lock_t *lk, gdr_rma_lock_step_t *step)
{
    lk->state = S_RELEASING;
    /* exclusive: adding 2^63 clears bit 63 (the carry leaves the word) */
    fadd(step, lk->kind == GDR_RMA_LOCK_SHARED ? (uint64_t) -1 : GDR_RMA_LOCK_EXCL);
}
