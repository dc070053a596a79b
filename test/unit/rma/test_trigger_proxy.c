/* The trigger proxy between the ring and a fake executor that finishes operations in a
 * shuffled order (the way RDMA writes, reads and staged copies of one target would):
 * - 4 producer threads post rounds of puts to 3 targets and flush (done >= posted); after
 *   every flush each value they put is in the target's memory;
 * - put_signal: every signal ADD arrives once;
 * - the window (raised to 64) never lets more than 64 operations of a target be
 *   unfinished; a full one makes the proxy hold the next descriptor until one finishes;
 * - producers interleaved so that the ring's head holds a number 2 * slots - 3 above one
 *   behind it: the proxy still starts it (its window is twice the slots);
 * - an operation the executor refuses, and a completion that comes twice, stop the proxy
 *   with a reason. */
#define _POSIX_C_SOURCE 200809L       /* clock_gettime */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gdr_unit.h"
#include "gdr/gdr_rma_signal.h"
#include "rma/gdr_rma_trigger_proxy.h"

#define RANKS 3
#define PRODUCERS 4
#define ROUNDS 300
#define SLOTS 16
#define CELLS (PRODUCERS * 2 + 1)       /* per target: a data cell per producer, a signal */
#define SIGNAL_CELL (CELLS - 1)

typedef struct fake {
    uint64_t mem[RANKS][CELLS];
    gdr_trig_desc_t inflight[RANKS * 64];
    int n_inflight, max_unfinished[RANKS], unfinished[RANKS];
    unsigned seed;
    gdr_trig_proxy_t *proxy;
    int refuse_op;              /* start() refuses this op kind */
    unsigned finish_every;      /* progress calls that finish anything: 1 in finish_every */
    unsigned calls;
} fake_t;

static int fake_start(void *ctx, const gdr_trig_desc_t *d, char *why, size_t len)
{
    fake_t *f = ctx;
    if ((int) d->op == f->refuse_op) {
        snprintf(why, len, "the fake refuses kind %u", d->op);
        return -1;
    }
    if (f->n_inflight == (int) (sizeof(f->inflight) / sizeof(f->inflight[0]))) {
        snprintf(why, len, "more in flight than 3 windows of 64 (the window leaks)");
        return -1;
    }
    f->inflight[f->n_inflight++] = *d;
    if (++f->unfinished[d->rank] > f->max_unfinished[d->rank])
        f->max_unfinished[d->rank] = f->unfinished[d->rank];
    return 0;
}

/* finishes about half of what is in flight, picked at random */
static int fake_progress(void *ctx, char *why, size_t len)
{
    (void) why, (void) len;
    fake_t *f = ctx;
    if (++f->calls % f->finish_every != 0)
        return 0;
    for (int k = 0; k < f->n_inflight;) {
        f->seed = f->seed * 1103515245u + 12345u;
        if ((f->seed >> 16) & 1) {
            k++;
            continue;
        }
        gdr_trig_desc_t d = f->inflight[k];
        f->inflight[k] = f->inflight[--f->n_inflight];
        uint64_t v;
        memcpy(&v, (const void *) (uintptr_t) d.addr, sizeof(v));
        __atomic_store_n(&f->mem[d.rank][d.disp], v, __ATOMIC_RELEASE);
        if (d.op == GDR_TRIG_PUT_SIGNAL)
            gdr_signal_apply((int) d.signal_op, &f->mem[d.rank][d.signal_disp], d.value);
        f->unfinished[d.rank]--;
        if (gdr_trig_proxy_complete(f->proxy, d.rank, d.rank_seq) != 0)
            return -1;
    }
    return 0;
}

typedef struct {
    gdr_trig_ring_t *r;
    fake_t *f;
    int producer;
    int flush_every;            /* rounds between flushes */
    int late;                   /* values not there after a flush */
    uint64_t src[ROUNDS][2][RANKS];     /* origin buffers: live until the flush after them */
} producer_arg_t;

static void *producer(void *p)
{
    producer_arg_t *a = p;
    for (int k = 0; k < ROUNDS; k++) {
        for (int t = 0; t < RANKS; t++) {
            a->src[k][0][t] = ((uint64_t) a->producer << 32) | (uint64_t) (k * RANKS + t);
            a->src[k][1][t] = a->src[k][0][t] | (1ULL << 60);
            gdr_trig_desc_t d = {.op = GDR_TRIG_PUT,.rank = t,.bytes = 8,
                .addr = (uint64_t) (uintptr_t) &a->src[k][0][t],.disp = 2 * a->producer };
            gdr_trig_post(a->r, d);
            d.op = GDR_TRIG_PUT_SIGNAL;
            d.addr = (uint64_t) (uintptr_t) &a->src[k][1][t];
            d.disp = 2 * a->producer + 1;
            d.signal_disp = SIGNAL_CELL;
            d.signal_op = GDR_SIGNAL_ADD;
            d.value = 1;
            gdr_trig_post(a->r, d);
        }
        if ((k + 1) % a->flush_every != 0)
            continue;
        for (int t = 0; t < RANKS; t++) {       /* flush every target */
            uint64_t n = gdr_trig_posted(a->r, t);
            while (!gdr_trig_finished(a->r, t, n))
                gdr_trig_pause();
            for (int c = 0; c < 2; c++)
                a->late += __atomic_load_n(&a->f->mem[t][2 * a->producer + c], __ATOMIC_ACQUIRE)
                    != a->src[k][c][t];
        }
    }
    return NULL;
}

typedef struct {
    uint64_t head, tail, posted[RANKS], done[RANKS], stopped;
    gdr_trig_slot_t slots[SLOTS];
    gdr_trig_ring_t r;
} ring_mem_t;

static void ring_init(ring_mem_t *m)
{
    memset(m, 0, sizeof(*m));
    m->r = (gdr_trig_ring_t) {.head = &m->head,.tail = &m->tail,.slots = m->slots,
        .posted = m->posted,.done = m->done,.stopped = &m->stopped,.nslots = SLOTS,
        .nranks = RANKS };
}

static double since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double) (t1.tv_sec - t0->tv_sec) + (double) (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* flush_every: rounds between a producer's flushes (1: the values are checked after each,
 * since a cell is then written once between flushes); finish_every: progress calls per
 * call that finishes about half of what is in flight (large: the window fills) */
static void end_to_end(int flush_every, unsigned finish_every)
{
    static ring_mem_t m;
    static fake_t f;
    gdr_trig_proxy_t p;
    ring_init(&m);
    memset(&f, 0, sizeof(f));
    f.seed = 7;
    f.refuse_op = -1;
    f.finish_every = finish_every;
    f.proxy = &p;
    gdr_trig_exec_t ex = {.start = fake_start,.progress = fake_progress };
    GDR_CHECK(gdr_trig_proxy_init(&p, &m.r, 1, &ex, &f) == 0 && p.done[0].window == 64,
              "flush every %d rounds, about 1 in %u finished per call: a window below the "
              "ring's 16 slots is raised (then rounded to 64)", flush_every, finish_every * 2);
    static producer_arg_t a[PRODUCERS];
    pthread_t t[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        a[i].r = &m.r;
        a[i].f = &f;
        a[i].producer = i;
        a[i].flush_every = flush_every;
        a[i].late = 0;
        pthread_create(&t[i], NULL, producer, &a[i]);
    }
    const uint64_t total = (uint64_t) PRODUCERS * ROUNDS * RANKS * 2;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int stuck = 0;
    while (p.finished < total && !p.failed) {
        uint64_t before = p.finished;
        gdr_trig_proxy_progress(&p, 8);
        if (p.finished != before)
            clock_gettime(CLOCK_MONOTONIC, &t0);
        else if (since(&t0) > 10) {
            stuck = 1;
            break;
        }
    }
    GDR_CHECK(!stuck && !p.failed && p.finished == total && p.started == total,
              "%llu operations from %d producers started and finished (%s)",
              (unsigned long long) p.finished, PRODUCERS, stuck ? "stuck 10 s" : p.error);
    if (stuck)
        exit(gdr_unit_finish());        /* producers wait for ever */
    int late = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_join(t[i], NULL);
        late += a[i].late;
    }
    if (flush_every == 1)
        GDR_CHECK(late == 0, "after every flush, every value put before it is at its target "
                  "(%d late)", late);
    int signals = 1, within = 1;
    for (int r = 0; r < RANKS; r++) {
        signals &= f.mem[r][SIGNAL_CELL] == (uint64_t) PRODUCERS * ROUNDS;
        within &= f.max_unfinished[r] <= 64;
        within &= m.done[r] == m.posted[r] && m.posted[r] == total / RANKS;
    }
    GDR_CHECK(signals, "every put_signal's ADD arrived once (%llu per target)",
              (unsigned long long) f.mem[0][SIGNAL_CELL]);
    GDR_CHECK(within, "at most 64 unfinished per target (seen %d %d %d); done == posted at "
              "the end", f.max_unfinished[0], f.max_unfinished[1], f.max_unfinished[2]);
    gdr_trig_proxy_free(&p);
}

/* One target's window full, deterministically: 64 started and none finished, the 65th
 * waits in the proxy (not started, not lost) until one finishes. */
static void full_window(void)
{
    static ring_mem_t m;
    static fake_t f;
    gdr_trig_proxy_t p;
    ring_init(&m);
    memset(&f, 0, sizeof(f));
    f.refuse_op = -1;
    f.proxy = &p;
    gdr_trig_exec_t ex = {.start = fake_start,.progress = NULL };
    gdr_trig_proxy_init(&p, &m.r, 64, &ex, &f);
    uint64_t v = 1;
    gdr_trig_desc_t d = {.op = GDR_TRIG_PUT,.rank = 2,.addr = (uint64_t) (uintptr_t) &v,.bytes = 8 };
    for (int i = 0; i < 64 + 1; i++) {
        gdr_trig_post(&m.r, d);         /* the ring has 16 slots: the proxy empties it */
        gdr_trig_proxy_progress(&p, 1);
    }
    GDR_CHECK(p.started == 64 && p.holding && p.window_waits > 0 && f.unfinished[2] == 64,
              "64 unfinished operations to rank 2: the 65th waits in the proxy (%llu waits)",
              (unsigned long long) p.window_waits);
    GDR_CHECK(gdr_trig_proxy_complete(&p, 2, 0) == 0 && gdr_trig_proxy_progress(&p, 4) == 1
              && p.started == 65 && !p.holding && m.done[2] == 1,
              "the first finishes: the 65th starts");
    gdr_trig_proxy_free(&p);
}

static void failures(void)
{
    static ring_mem_t m;
    static fake_t f;
    gdr_trig_proxy_t p;
    ring_init(&m);
    memset(&f, 0, sizeof(f));
    f.refuse_op = GDR_TRIG_GET;
    f.proxy = &p;
    gdr_trig_exec_t ex = {.start = fake_start,.progress = NULL };
    gdr_trig_proxy_init(&p, &m.r, 64, &ex, &f);
    uint64_t v = 1;
    gdr_trig_desc_t d = {.op = GDR_TRIG_PUT,.rank = 1,.addr = (uint64_t) (uintptr_t) &v,.bytes = 8 };
    gdr_trig_post(&m.r, d);
    GDR_CHECK(gdr_trig_proxy_progress(&p, 4) == 1 && gdr_trig_proxy_complete(&p, 1, 0) == 0
              && m.done[1] == 1, "a put starts and its completion is published");
    GDR_CHECK(gdr_trig_proxy_complete(&p, 1, 0) == -1 && p.failed
              && strstr(gdr_trig_proxy_error(&p), "completed twice") != NULL,
              "the same completion again stops the proxy: \"%s\"", gdr_trig_proxy_error(&p));
    gdr_trig_proxy_free(&p);

    ring_init(&m);
    gdr_trig_proxy_init(&p, &m.r, 64, &ex, &f);
    d.op = GDR_TRIG_GET;
    gdr_trig_post(&m.r, d);
    GDR_CHECK(gdr_trig_proxy_progress(&p, 4) == -1 && strstr(gdr_trig_proxy_error(&p),
                                                             "the fake refuses") != NULL
              && strstr(gdr_trig_proxy_error(&p), "rank 1") != NULL,
              "a refused operation stops the proxy, naming the rank and why: \"%s\"",
              gdr_trig_proxy_error(&p));
    GDR_CHECK(gdr_trig_proxy_progress(&p, 4) == -1, "and it stays stopped");
    int posted = 0;
    for (int i = 0; i < SLOTS; i++)
        posted += gdr_trig_post(&m.r, d) != GDR_TRIG_STOPPED;
    GDR_CHECK(m.stopped == 1 && posted == SLOTS && gdr_trig_post(&m.r, d) == GDR_TRIG_STOPPED,
              "the ring says stopped: a producer waiting for a slot gives up instead of "
              "waiting for ever");
    gdr_trig_proxy_free(&p);
}

/* Producers interleaved the worst way, scripted on one thread with the post's two steps:
 * with N slots, numbers of one target can run 2N - 3 ahead of a lower one that sits behind
 * them in the ring.  Q_i (tickets 0 .. N-2) and P (ticket N-1) reserve first; then, in
 * turn, Q_i publishes (number 2i) and the proxy takes it, which frees a slot for R_i
 * (ticket N + i), who publishes next (number 2i + 1); P publishes last, number 2N - 2, at
 * the ring's head, while R_0's number 1 waits behind it.  A proxy window of N (what it
 * was) held P for ever: the kernel-ring hang seen 1 run in 30 on an H100 with 128 threads
 * on 64 slots. */
static void numbers_ahead_of_the_head(void)
{
    enum { N = 64 };
    static struct {
        uint64_t head, tail, posted[1], done[1];
        gdr_trig_slot_t slots[N];
    } m;
    memset(&m, 0, sizeof(m));
    gdr_trig_ring_t r = {.head = &m.head,.tail = &m.tail,.slots = m.slots,.posted = m.posted,
        .done = m.done,.nslots = N,.nranks = 1 };
    static fake_t f;
    memset(&f, 0, sizeof(f));
    f.refuse_op = -1;
    gdr_trig_proxy_t p;
    f.proxy = &p;
    gdr_trig_exec_t ex = {.start = fake_start,.progress = NULL };
    gdr_trig_proxy_init(&p, &r, N, &ex, &f);
    uint64_t v = 1;
    gdr_trig_desc_t d = {.op = GDR_TRIG_PUT,.rank = 0,.addr = (uint64_t) (uintptr_t) &v,.bytes = 8 };
    uint64_t q[N - 1], late_ticket;
    for (int i = 0; i < N - 1; i++)
        q[i] = gdr_trig_reserve(&r);
    late_ticket = gdr_trig_reserve(&r);
    int scripted = late_ticket == N - 1;
    for (int i = 0; i < N - 1; i++) {
        scripted &= gdr_trig_publish(&r, q[i], d) == (uint64_t) (2 * i);
        gdr_trig_proxy_progress(&p, 1);
        if (m.tail != (uint64_t) i + 1) {
            scripted = 0;       /* the proxy held Q_i: R_i's reserve would wait for ever */
            break;
        }
        uint64_t t = gdr_trig_reserve(&r);      /* free now: returns at once */
        scripted &= t == (uint64_t) (N + i) && gdr_trig_publish(&r, t, d) == (uint64_t) (2 * i + 1);
    }
    if (scripted)
        scripted = gdr_trig_publish(&r, late_ticket, d) == 2 * N - 2;
    GDR_CHECK(scripted, "scripted: %d producers' numbers interleaved, the last ticket before "
              "the wrap holding number %d while number 1 waits behind it (the proxy took "
              "%llu tickets)", 2 * N - 1, 2 * N - 2, (unsigned long long) m.tail);
    /* the executor finishes everything it started, a few rounds of progress: all must start */
    for (int round = 0; round < 4 * N && p.started < 2 * N - 1; round++) {
        while (f.n_inflight > 0) {
            gdr_trig_desc_t done = f.inflight[--f.n_inflight];
            f.unfinished[done.rank]--;
            gdr_trig_proxy_complete(&p, done.rank, done.rank_seq);
        }
        gdr_trig_proxy_progress(&p, N);
    }
    while (f.n_inflight > 0) {
        gdr_trig_desc_t done = f.inflight[--f.n_inflight];
        gdr_trig_proxy_complete(&p, done.rank, done.rank_seq);
    }
    GDR_CHECK(p.started == 2 * N - 1 && !p.holding && m.done[0] == 2 * N - 1 && !p.failed,
              "the proxy starts number %d at the head and reaches the ones behind it: %llu of "
              "%d started, done %llu (%s)", 2 * N - 2, (unsigned long long) p.started,
              2 * N - 1, (unsigned long long) m.done[0], p.holding ? "still holding the head"
              : "not holding");
    gdr_trig_proxy_free(&p);
}

int main(void)
{
    alarm(120);                 /* a proxy or producer stuck for good kills the test, not CI */
    end_to_end(1, 1);
    end_to_end(ROUNDS, 2000);
    full_window();
    numbers_ahead_of_the_head();
    failures();
    return gdr_unit_finish();
}
