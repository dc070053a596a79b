#include "gdr_rma_lock.h"

enum {
    S_IDLE,
    S_SHARED_ADD,               /* +1 holder issued */
    S_SHARED_UNDO,              /* -1 issued after an exclusive ticket was seen unserved */
    S_SHARED_WAIT,              /* a read issued: waiting for every ticket to be served */
    S_EXCL_TICKET,              /* +1 ticket issued */
    S_EXCL_WAIT,                /* a read issued: waiting for our turn and no holders */
    S_HELD,
    S_RELEASING
};

static void fadd(gdr_rma_lock_step_t *s, uint64_t add)
{
    s->add = add;
}

/* Reads the word (a fetch-add of 0) after the back-off, which then doubles. */
static gdr_rma_lock_next_t look_later(gdr_rma_lock_t *lk, gdr_rma_lock_step_t *step,
                                      uint64_t *delay_ns)
{
    lk->tries++;
    fadd(step, 0);
    *delay_ns = lk->backoff_ns;
    lk->backoff_ns = lk->backoff_ns * 2 > lk->max_ns ? lk->max_ns : lk->backoff_ns * 2;
    return GDR_RMA_LOCK_LATER;
}

/* Held once the ticket served is ours and no shared holder is left; else look later. */
static gdr_rma_lock_next_t exclusive_look(gdr_rma_lock_t *lk, uint64_t w,
                                          gdr_rma_lock_step_t *step, uint64_t *delay_ns)
{
    if (GDR_RMA_LOCK_SERVING(w) == lk->ticket && GDR_RMA_LOCK_READERS(w) == 0) {
        lk->state = S_HELD;
        return GDR_RMA_LOCK_HELD;
    }
    return look_later(lk, step, delay_ns);
}

void gdr_rma_lock_acquire(gdr_rma_lock_t *lk, gdr_rma_lock_kind_t kind, uint64_t min_ns,
                          uint64_t max_ns, gdr_rma_lock_step_t *step)
{
    lk->kind = kind;
    lk->min_ns = min_ns > 0 ? min_ns : 1;
    lk->max_ns = max_ns > lk->min_ns ? max_ns : lk->min_ns;
    lk->backoff_ns = lk->min_ns;
    lk->tries = 0;
    lk->ticket = 0;
    if (kind == GDR_RMA_LOCK_SHARED) {
        lk->state = S_SHARED_ADD;
        fadd(step, 1);
    } else {
        lk->state = S_EXCL_TICKET;
        fadd(step, GDR_RMA_LOCK_TICKET);
    }
}

gdr_rma_lock_next_t gdr_rma_lock_on_result(gdr_rma_lock_t *lk, uint64_t old,
                                           gdr_rma_lock_step_t *step, uint64_t *delay_ns)
{
    *delay_ns = 0;
    switch (lk->state) {
        case S_SHARED_ADD:
            if (GDR_RMA_LOCK_WRITERS(old) == 0) {
                lk->state = S_HELD;
                return GDR_RMA_LOCK_HELD;
            }
            lk->state = S_SHARED_UNDO;
            fadd(step, (uint64_t) -1);
            return GDR_RMA_LOCK_NEXT;
        case S_SHARED_UNDO:
            lk->state = S_SHARED_WAIT;
            return look_later(lk, step, delay_ns);
        case S_SHARED_WAIT:
            if (GDR_RMA_LOCK_WRITERS(old) == 0) {
                lk->state = S_SHARED_ADD;
                fadd(step, 1);
                return GDR_RMA_LOCK_NEXT;
            }
            return look_later(lk, step, delay_ns);
        case S_EXCL_TICKET:
            /* the word before our ticket: it may already show our turn */
            lk->ticket = (uint16_t) GDR_RMA_LOCK_NEXT_TICKET(old);
            lk->state = S_EXCL_WAIT;
            return exclusive_look(lk, old, step, delay_ns);
        case S_EXCL_WAIT:
            return exclusive_look(lk, old, step, delay_ns);
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
    if (lk->kind == GDR_RMA_LOCK_SHARED) {
        fadd(step, (uint64_t) -1);
        return;
    }
    /* serve the next ticket; from 0xffff the field wraps to 0 (a subtraction, no carry) */
    fadd(step, lk->ticket == 0xffffu ? (uint64_t) 0 - 0xffffu * GDR_RMA_LOCK_SERVED_ONE
         : GDR_RMA_LOCK_SERVED_ONE);
}
