#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L     /* clock_gettime, posix_memalign */
#endif
#include "gdr_rma_passive.h"
#include "gdr_rma_win.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


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

static void release_done(void *arg, int status)
{
    gdr_rma_passive_target_t *t = arg;
    if (status != 0)
        t->release_status = status;
    t->release_pending = 0;
}

static int release_in_flight(const void *arg)
{
    return ((const volatile gdr_rma_passive_target_t *) arg)->release_pending;
}

/* A failed release of target's lock, once: the lock word stays taken for everyone. */
static int release_failed(gdr_rma_passive_target_t *t)
{
    int failed = t->release_status != 0;
    t->release_status = 0;
    return failed;
}

/* One fetch-add of *operand on target's lock word; done(t, status) when it completes.
 * flags: the transport's (a release goes after the epoch's reads and atomics). */
static int post_fetch_add(gdr_rma_win_t *w, int target, const uint64_t *operand,
                          uint64_t *result, unsigned flags, gdr_rma_done_fn done)
{
    gdr_rma_engine_t *eng = w->eng;
    int rc;
    const gdr_rma_ctl_target_t *c = gdr_rma_ctl_target(w, target);
    uint64_t word = c->addr + GDR_RMA_CTL_LOCK;
    while ((rc = eng->net.atomicv(eng->net.ctx, w->targets[target].peer,
                                  GDR_RMA_ATOMIC_FETCH_ADD, operand, 0, result, &word, 1,
                                  c->rkey, flags, done, &w->passive.t[target]))
           == GDR_RMA_BUSY) {
        if (eng->host.progress(eng->host.ctx) != 0)
            return GDR_RMA_HOST_ERROR;
    }
    if (rc != GDR_RMA_OK)
        return GDR_RMA_ERROR;
    eng->lock_atomics++;
    return GDR_RMA_OK;
}

/* Issues t's step on target's lock word. */
static int post_step(gdr_rma_win_t *w, int target)
{
    gdr_rma_passive_target_t *t = &w->passive.t[target];
    t->operand = t->step.add;
    t->done = 0;
    t->status = 0;
    return post_fetch_add(w, target, &t->operand, &t->result, 0, step_done);
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
    if (release_failed(t))
        return GDR_RMA_ERROR;
    gdr_rma_lock_acquire(&t->lk, t->lk.kind, p->min_ns, p->max_ns, &t->step);
    for (;;) {
        int rc = delay > 0 ? back_off(w->eng, delay) : GDR_RMA_OK;
        if (rc == GDR_RMA_OK)
            rc = run_step(w, target);
        if (rc != GDR_RMA_OK)
            return rc;
        if (gdr_rma_lock_on_result(&t->lk, t->result, &t->step, &delay) == GDR_RMA_LOCK_HELD) {
            t->state = GDR_RMA_EPOCH_HELD;
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
    t->state = GDR_RMA_EPOCH_WANTED;
    return target == w->self ? acquire(w, target) : GDR_RMA_OK;
}

int gdr_rma_passive_need(gdr_rma_win_t *w, int target)
{
    /* (every operation asks: the state first, as only native epochs are ever WANTED) */
    if (w->passive.t == NULL || target < 0 || target >= w->n
        || w->passive.t[target].state != GDR_RMA_EPOCH_WANTED || !gdr_rma_passive_native(w, target))
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
        && w->passive.t[target].state == GDR_RMA_EPOCH_HELD;
}

/* Posts target's release if its lock is held; the epoch ends either way.  Nobody waits
 * for its answer: the lock's state machine has nothing left to learn from it. */
int gdr_rma_passive_unlock(gdr_rma_win_t *w, int target)
{
    if (!gdr_rma_passive_native(w, target) || w->passive.t == NULL)
        return GDR_RMA_OK;
    gdr_rma_passive_target_t *t = &w->passive.t[target];
    int held = t->state == GDR_RMA_EPOCH_HELD;
    t->state = GDR_RMA_EPOCH_NONE;      /* the epoch is over, whatever the release's fate */
    if (!held)
        return GDR_RMA_OK;
    gdr_rma_lock_release(&t->lk, &t->step);
    /* (one release at most in flight: the next one needs an acquire, which completes
     * after it) */
    t->release_operand = t->step.add;
    t->release_pending = 1;
    unsigned flags = gdr_rma_tracker_post_flags(&w->tracker, target);
    int rc = post_fetch_add(w, target, &t->release_operand, &t->release_result, flags,
                            release_done);
    if (rc != GDR_RMA_OK)
        t->release_pending = 0;
    return rc;
}

int gdr_rma_passive_unlock_all(gdr_rma_win_t *w)
{
    int rc = GDR_RMA_OK;
    if (!gdr_rma_ctl_native(w) || w->passive.t == NULL)
        return GDR_RMA_OK;
    /* this rank's own lock last: the releases to the others go behind the writes still
     * held for them, and the own one, on the loopback queue pair, is one doorbell alone */
    for (int i = 0; i < w->n; i++) {
        int r = i != w->self ? gdr_rma_passive_unlock(w, i) : GDR_RMA_OK;
        if (rc == GDR_RMA_OK)
            rc = r;
    }
    int r = gdr_rma_passive_unlock(w, w->self);
    return rc != GDR_RMA_OK ? rc : r;
}

int gdr_rma_passive_drain(gdr_rma_win_t *w)
{
    int rc = GDR_RMA_OK;
    for (int i = 0; w->passive.t != NULL && i < w->n; i++) {
        gdr_rma_passive_target_t *t = &w->passive.t[i];
        int r = t->release_pending ? gdr_rma_wait_until(w->eng, release_in_flight, t,
                                                        "for a lock's release", i)
            : GDR_RMA_OK;
        if (r == GDR_RMA_OK && release_failed(t))
            r = GDR_RMA_ERROR;
        if (rc == GDR_RMA_OK)
            rc = r;
    }
    return rc;
}

void gdr_rma_passive_free(gdr_rma_win_t *w)
{
    (void) gdr_rma_passive_drain(w);
    for (int i = 0; w->passive.t != NULL && i < w->n; i++)
        if (w->passive.t[i].release_pending)
            return;             /* its completion still writes there: leak, never corrupt */
    free(w->passive.t);
    memset(&w->passive, 0, sizeof(w->passive));
}
