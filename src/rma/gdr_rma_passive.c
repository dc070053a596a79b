#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L     /* clock_gettime, posix_memalign */
#endif
#include "gdr_rma_passive.h"
#include "gdr_rma_win.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { EPOCH_NONE, EPOCH_WANTED, EPOCH_HELD };

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

void gdr_rma_passive_configure(gdr_rma_passive_t *p, uint64_t min_ns, uint64_t max_ns)
{
    p->min_ns = min_ns;
    p->max_ns = max_ns;
}

int gdr_rma_passive_native(const gdr_rma_win_t *w, int target)
{
    return gdr_rma_ctl_native(w) && target >= 0 && target < w->n
        && w->targets[target].peer >= 0;
}

/* The window's per-target epoch states, made at the first lock. */
static int targets_ready(gdr_rma_win_t *w)
{
    if (w->passive.t == NULL)
        w->passive.t = calloc((size_t) w->n, sizeof(*w->passive.t));
    return w->passive.t != NULL;
}

static void step_done(void *arg, int status)
{
    gdr_rma_passive_target_t *t = arg;
    t->status = status;
    t->done = 1;
}

static int step_pending(const void *arg)
{
    return !((const volatile gdr_rma_passive_target_t *) arg)->done;
}

/* Issues t's step on target's lock word. */
static int post_step(gdr_rma_win_t *w, int target)
{
    gdr_rma_engine_t *eng = w->eng;
    gdr_rma_passive_target_t *t = &w->passive.t[target];
    t->operand = t->step.add;
    t->done = 0;
    t->status = 0;
    int rc;
    const gdr_rma_ctl_target_t *c = gdr_rma_ctl_target(w, target);
    uint64_t word = c->addr + GDR_RMA_CTL_LOCK;
    while ((rc = eng->net.atomicv(eng->net.ctx, w->targets[target].peer,
                                  GDR_RMA_ATOMIC_FETCH_ADD, &t->operand, 0, &t->result, &word,
                                  1, c->rkey, step_done, t))
           == GDR_RMA_BUSY) {
        if (eng->host.progress(eng->host.ctx) != 0)
            return GDR_RMA_HOST_ERROR;
    }
    if (rc != GDR_RMA_OK)
        return GDR_RMA_ERROR;
    eng->lock_atomics++;
    return GDR_RMA_OK;
}

/* Waits for the result of t's step. */
static int wait_step(gdr_rma_win_t *w, int target)
{
    gdr_rma_passive_target_t *t = &w->passive.t[target];
    int rc = gdr_rma_wait_until(w->eng, step_pending, t, "for an atomic on a lock word", target);
    if (rc != GDR_RMA_OK)
        return rc;
    return t->status == 0 ? GDR_RMA_OK : GDR_RMA_ERROR;
}

static int run_step(gdr_rma_win_t *w, int target)
{
    int rc = post_step(w, target);
    return rc == GDR_RMA_OK ? wait_step(w, target) : rc;
}

/* Progresses the host for ns: others' operations, and this rank's own lock word's
 * holders, move on meanwhile. */
static int back_off(const gdr_rma_engine_t *eng, uint64_t ns)
{
    uint64_t until = now_ns() + ns;
    while (now_ns() < until)
        if (eng->host.progress(eng->host.ctx) != 0)
            return GDR_RMA_HOST_ERROR;
    return GDR_RMA_OK;
}

static int acquire(gdr_rma_win_t *w, int target)
{
    gdr_rma_passive_t *p = &w->passive;
    gdr_rma_passive_target_t *t = &p->t[target];
    uint64_t delay = 0;
    gdr_rma_lock_acquire(&t->lk, t->lk.kind, p->min_ns, p->max_ns, &t->step);
    for (;;) {
        int rc = delay > 0 ? back_off(w->eng, delay) : GDR_RMA_OK;
        if (rc == GDR_RMA_OK)
            rc = run_step(w, target);
        if (rc != GDR_RMA_OK)
            return rc;
        if (gdr_rma_lock_on_result(&t->lk, t->result, &t->step, &delay) == GDR_RMA_LOCK_HELD) {
            t->state = EPOCH_HELD;
            w->eng->lock_retries += t->lk.tries;
            return GDR_RMA_OK;
        }
    }
}

int gdr_rma_passive_lock(gdr_rma_win_t *w, int target, gdr_rma_lock_kind_t kind)
{
    if (!gdr_rma_passive_native(w, target))
        return GDR_RMA_OK;
    if (!targets_ready(w))
        return GDR_RMA_NOMEM;
    gdr_rma_passive_target_t *t = &w->passive.t[target];
    t->lk.kind = kind;
    t->state = EPOCH_WANTED;
    return target == w->self ? acquire(w, target) : GDR_RMA_OK;
}

int gdr_rma_passive_need(gdr_rma_win_t *w, int target)
{
    if (!gdr_rma_passive_native(w, target) || w->passive.t == NULL
        || w->passive.t[target].state != EPOCH_WANTED)
        return GDR_RMA_OK;
    return acquire(w, target);
}

int gdr_rma_passive_need_all(gdr_rma_win_t *w)
{
    for (int i = 0; i < w->n; i++) {
        int rc = gdr_rma_passive_need(w, i);
        if (rc != GDR_RMA_OK)
            return rc;
    }
    return GDR_RMA_OK;
}

int gdr_rma_passive_held(const gdr_rma_win_t *w, int target)
{
    return gdr_rma_passive_native(w, target) && w->passive.t != NULL
        && w->passive.t[target].state == EPOCH_HELD;
}

/* Posts target's release if its lock is held (*posted); the epoch ends either way. */
static int release_post(gdr_rma_win_t *w, int target, int *posted)
{
    *posted = 0;
    if (!gdr_rma_passive_native(w, target) || w->passive.t == NULL)
        return GDR_RMA_OK;
    gdr_rma_passive_target_t *t = &w->passive.t[target];
    int held = t->state == EPOCH_HELD;
    t->state = EPOCH_NONE;      /* the epoch is over, whatever the release's fate */
    if (!held)
        return GDR_RMA_OK;
    gdr_rma_lock_release(&t->lk, &t->step);
    int rc = post_step(w, target);
    *posted = rc == GDR_RMA_OK;
    return rc;
}

static int release_wait(gdr_rma_win_t *w, int target)
{
    gdr_rma_passive_target_t *t = &w->passive.t[target];
    uint64_t delay;
    int rc = wait_step(w, target);
    if (rc == GDR_RMA_OK)
        (void) gdr_rma_lock_on_result(&t->lk, t->result, &t->step, &delay);
    return rc;
}

int gdr_rma_passive_unlock(gdr_rma_win_t *w, int target)
{
    int posted, rc = release_post(w, target, &posted);
    return rc == GDR_RMA_OK && posted ? release_wait(w, target) : rc;
}

int gdr_rma_passive_unlock_all(gdr_rma_win_t *w)
{
    int rc = GDR_RMA_OK;
    if (!gdr_rma_ctl_native(w) || w->passive.t == NULL)
        return GDR_RMA_OK;
    /* every release in flight, then every wait: one round trip, not one per target */
    uint8_t *posted = calloc((size_t) w->n, 1);
    for (int i = 0; i < w->n; i++) {
        int p = 0, r = release_post(w, i, &p);
        if (posted != NULL)
            posted[i] = (uint8_t) p;
        else if (p && r == GDR_RMA_OK)
            r = release_wait(w, i);     /* no memory to remember: one at a time */
        if (rc == GDR_RMA_OK)
            rc = r;
    }
    for (int i = 0; posted != NULL && i < w->n; i++) {
        int r = posted[i] ? release_wait(w, i) : GDR_RMA_OK;
        if (rc == GDR_RMA_OK)
            rc = r;
    }
    free(posted);
    return rc;
}

void gdr_rma_passive_free(gdr_rma_win_t *w)
{
    free(w->passive.t);
    memset(&w->passive, 0, sizeof(w->passive));
}
