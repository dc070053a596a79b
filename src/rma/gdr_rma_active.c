#include "gdr_rma_active.h"
#include "gdr_rma_win.h"

#include <stdlib.h>
#include <string.h>

static int counters_ready(gdr_rma_win_t *w)
{
    gdr_rma_active_t *a = &w->active;
    if (a->posts_sent != NULL)
        return 1;
    uint64_t *all = calloc(4 * (size_t) w->n, sizeof(uint64_t));
    if (all == NULL)
        return 0;
    a->posts_sent = all;
    a->posts_used = all + w->n;
    a->completes_sent = all + 2 * (size_t) w->n;
    a->completes_used = all + 3 * (size_t) w->n;
    return 1;
}

/* GDR_RMA_OK when the window's control blocks are usable and ranks are its ranks. */
static int usable(gdr_rma_win_t *w, const int *ranks, int n)
{
    if (!gdr_rma_ctl_native(w))
        return GDR_RMA_ERROR;
    if (!counters_ready(w))
        return GDR_RMA_NOMEM;
    for (int i = 0; i < n; i++)
        if (ranks[i] < 0 || ranks[i] >= w->n || w->targets[ranks[i]].peer < 0)
            return GDR_RMA_ERROR;
    return GDR_RMA_OK;
}

/* Adds one to each rank's sent count and writes it into the rank's word for this rank. */
static int notify(gdr_rma_win_t *w, const int *ranks, int n, uint64_t *sent, int completes)
{
    int rc = GDR_RMA_OK;
    for (int i = 0; i < n && rc == GDR_RMA_OK; i++) {
        int r = ranks[i];
        size_t word = completes ? gdr_rma_ctl_complete_word(w->n, w->self)
            : gdr_rma_ctl_post_word(w->self);
        rc = gdr_rma_ctl_write(w, r, word, ++sent[r]);
    }
    return rc;
}

/* Whether each rank's word here shows one more notice than used; if so, uses them. */
static int arrived(gdr_rma_win_t *w, const int *ranks, int n, uint64_t *used, int completes,
                   int *yes)
{
    *yes = 0;
    for (int i = 0; i < n; i++) {
        int r = ranks[i];
        size_t word = completes ? gdr_rma_ctl_complete_word(w->n, r) : gdr_rma_ctl_post_word(r);
        if (gdr_rma_ctl_read(w, word) <= used[r])
            return GDR_RMA_OK;
    }
    for (int i = 0; i < n; i++)
        used[ranks[i]]++;
    *yes = 1;
    return GDR_RMA_OK;
}

int gdr_rma_active_post(gdr_rma_win_t *w, const int *ranks, int n)
{
    int rc = usable(w, ranks, n);
    return rc == GDR_RMA_OK ? notify(w, ranks, n, w->active.posts_sent, 0) : rc;
}

int gdr_rma_active_start_test(gdr_rma_win_t *w, const int *ranks, int n, int *ready)
{
    int rc = usable(w, ranks, n);
    *ready = 0;
    return rc == GDR_RMA_OK ? arrived(w, ranks, n, w->active.posts_used, 0, ready) : rc;
}

int gdr_rma_active_complete(gdr_rma_win_t *w, const int *ranks, int n)
{
    /* what the epoch learned of dynamic targets stays (their detaches are announced):
     * forgetting it here cost a question to the target every epoch */
    gdr_rma_regions_epoch_done(&w->regions, -1);
    int rc = usable(w, ranks, n);
    return rc == GDR_RMA_OK ? notify(w, ranks, n, w->active.completes_sent, 1) : rc;
}

int gdr_rma_active_wait_test(gdr_rma_win_t *w, const int *ranks, int n, int *done)
{
    int rc = usable(w, ranks, n);
    *done = 0;
    return rc == GDR_RMA_OK ? arrived(w, ranks, n, w->active.completes_used, 1, done) : rc;
}

/* A blocking wait on one of the tests above. */
typedef struct {
    gdr_rma_win_t *w;
    const int *ranks;
    int n, rc, yes;
    int (*test)(gdr_rma_win_t *w, const int *ranks, int n, int *yes);
} waiting_t;

static int not_yet(const void *arg)
{
    waiting_t *s = (waiting_t *) arg;
    s->rc = s->test(s->w, s->ranks, s->n, &s->yes);
    return s->rc == GDR_RMA_OK && !s->yes;
}

static int wait_for(gdr_rma_win_t *w, const int *ranks, int n, const char *what,
                    int (*test)(gdr_rma_win_t *, const int *, int, int *))
{
    waiting_t s = {.w = w,.ranks = ranks,.n = n,.test = test };
    int rc = gdr_rma_wait_until(w->eng, not_yet, &s, what, n == 1 ? ranks[0] : -1);
    return rc != GDR_RMA_OK ? rc : s.rc;
}

int gdr_rma_active_start(gdr_rma_win_t *w, const int *ranks, int n)
{
    return wait_for(w, ranks, n, "for the targets' posts", gdr_rma_active_start_test);
}

int gdr_rma_active_wait(gdr_rma_win_t *w, const int *ranks, int n)
{
    return wait_for(w, ranks, n, "for the origins' completes", gdr_rma_active_wait_test);
}

static int rounds_of(int n)
{
    int r = 0;
    while (r < GDR_RMA_CTL_BARRIER_ROUNDS && (1L << r) < n)
        r++;
    return r;
}

static int partner_in_round(const gdr_rma_win_t *w, int k)
{
    return (int) (((long) w->self + (1L << k)) % w->n);
}

/* This rank's write of round k of the current fence. */
static int barrier_send(gdr_rma_win_t *w, int k)
{
    return gdr_rma_ctl_write(w, partner_in_round(w, k), GDR_RMA_CTL_BARRIER + 8 * (size_t) k,
                             w->active.fences);
}

int gdr_rma_active_barrier_first(const gdr_rma_win_t *w)
{
    return rounds_of(w->n) > 0 ? partner_in_round(w, 0) : -1;
}

int gdr_rma_active_barrier_begin(gdr_rma_win_t *w)
{
    int rc = usable(w, NULL, 0);
    if (rc != GDR_RMA_OK)
        return rc;
    gdr_rma_active_t *a = &w->active;
    a->fences++;
    a->round = 0;
    a->sent = 0;
    a->barrier_running = 1;
    if (rounds_of(w->n) == 0)
        return GDR_RMA_OK;
    a->sent = 1;
    return barrier_send(w, 0);
}

/* Whether RDMA writes to the first partner that a fence left in flight have completed.
 * Until they have, this rank's later rounds wait: the partner has them before it passes
 * on that this rank entered, but a later round would tell others directly, and one of
 * them could then read the partner's window before they landed. */
static int spared_done(const gdr_rma_win_t *w)
{
    const volatile unsigned long *remote = w->tracker.remote;
    int first = gdr_rma_active_barrier_first(w);
    return remote == NULL || first < 0 || remote[first] == 0;
}

int gdr_rma_active_barrier_test(gdr_rma_win_t *w, int *done)
{
    gdr_rma_active_t *a = &w->active;
    int rounds = rounds_of(w->n), rc = GDR_RMA_OK;
    *done = 0;
    if (!a->barrier_running)
        return GDR_RMA_ERROR;   /* no barrier begun */
    while (rc == GDR_RMA_OK && a->round < rounds) {
        if (a->sent == a->round) {
            if (!spared_done(w))
                return GDR_RMA_OK;
            rc = barrier_send(w, a->round);
            a->sent++;
            continue;
        }
        if (gdr_rma_ctl_read(w, GDR_RMA_CTL_BARRIER + 8 * (size_t) a->round) < a->fences)
            break;
        a->round++;
    }
    if (rc == GDR_RMA_OK && a->round >= rounds) {
        a->barrier_running = 0;
        *done = 1;
    }
    return rc;
}

static int barrier_test(gdr_rma_win_t *w, const int *ranks, int n, int *done)
{
    (void) ranks;
    (void) n;
    return gdr_rma_active_barrier_test(w, done);
}

int gdr_rma_active_barrier(gdr_rma_win_t *w)
{
    int rc = gdr_rma_active_barrier_begin(w);
    return rc == GDR_RMA_OK ? wait_for(w, NULL, 0, "for the fence's barrier", barrier_test) : rc;
}

void gdr_rma_active_free(gdr_rma_win_t *w)
{
    free(w->active.posts_sent);
    memset(&w->active, 0, sizeof(w->active));
}
