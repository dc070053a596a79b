#include "gdr_rma_trigger_proxy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(gdr_trig_proxy_t *p, const char *fmt, ...)
{
    if (!p->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->error, sizeof(p->error), fmt, ap);
        va_end(ap);
        p->failed = 1;
        if (p->ring->stopped != NULL)   /* producers waiting on the proxy give up */
            gdr_trig_store_release(p->ring->stopped, 1);
    }
    return -1;
}

int gdr_trig_proxy_init(gdr_trig_proxy_t *p, const gdr_trig_ring_t *ring, uint32_t window,
                        const gdr_trig_exec_t *exec, void *ctx)
{
    memset(p, 0, sizeof(*p));
    p->ring = ring;
    p->exec = *exec;
    p->ctx = ctx;
    p->next = gdr_trig_load_acquire(ring->tail);
    p->done = calloc((size_t) ring->nranks, sizeof(*p->done));
    if (p->done == NULL)
        return -1;
    /* a descriptor at the ring's head may carry a number up to 2 * nslots - 3 above one
     * that sits behind it (gdr_trig_reserve): it must have room to start */
    if (window < 2 * ring->nslots)
        window = 2 * ring->nslots;
    for (int r = 0; r < ring->nranks; r++)
        if (gdr_trig_done_init(&p->done[r], window) != 0) {
            gdr_trig_proxy_free(p);
            return -1;
        }
    return 0;
}

void gdr_trig_proxy_free(gdr_trig_proxy_t *p)
{
    for (int r = 0; p->done != NULL && r < p->ring->nranks; r++)
        gdr_trig_done_free(&p->done[r]);
    free(p->done);
    p->done = NULL;
}

/* Starts the held descriptor if its target has room: 1 started, 0 no room, -1 failed. */
static int start_held(gdr_trig_proxy_t *p)
{
    const gdr_trig_desc_t *d = &p->held;
    if (!gdr_trig_done_room(&p->done[d->rank], d->rank_seq)) {
        p->window_waits++;
        return 0;
    }
    char why[320] = "";
    if (p->exec.start(p->ctx, d, why, sizeof(why)) != 0)
        return fail(p, "starting a triggered operation (kind %u) to rank %d failed: %s",
                    d->op, d->rank, why);
    p->holding = 0;
    p->started++;
    return 1;
}

int gdr_trig_proxy_progress(gdr_trig_proxy_t *p, int max)
{
    int n = 0;
    while (!p->failed && n < max) {
        if (!p->holding) {
            if (!gdr_trig_take(p->ring, &p->next, &p->held))
                break;
            p->holding = 1;
            if (p->held.rank < 0 || p->held.rank >= p->ring->nranks)
                return fail(p, "a triggered operation names rank %d of %d (the device handle "
                            "checks ranks: memory corrupted?)", p->held.rank, p->ring->nranks);
        }
        int rc = start_held(p);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;              /* its target is at its window: wait for completions */
        n++;
    }
    /* the executor's progress runs after a failure too: what it started must finish (a
     * put_signal's signal, posted from here), or the window's free would wait for ever */
    char why[320] = "";
    if (p->exec.progress != NULL && p->exec.progress(p->ctx, why, sizeof(why)) != 0)
        return fail(p, "progress of triggered operations failed: %s", why);
    return p->failed ? -1 : n;
}

int gdr_trig_proxy_complete(gdr_trig_proxy_t *p, int rank, uint64_t rank_seq)
{
    if (rank < 0 || rank >= p->ring->nranks)
        return fail(p, "a completion for rank %d of %d", rank, p->ring->nranks);
    int rc = gdr_trig_done_mark(&p->done[rank], rank_seq);
    if (rc < 0)
        return fail(p, "operation %llu to rank %d completed twice or was never started",
                    (unsigned long long) rank_seq, rank);
    p->finished++;
    if (rc == 1)
        gdr_trig_store_release(&p->ring->done[rank], p->done[rank].next);
    return 0;
}

const char *gdr_trig_proxy_error(const gdr_trig_proxy_t *p)
{
    return p->failed ? p->error : "";
}
