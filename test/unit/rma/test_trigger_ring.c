/* The device-trigger ring, its completion tracker and the signal words, driven by CPU
 * threads (the protocol is the same __host__ __device__ code a kernel runs):
 * - descriptors come out intact and in order; an empty ring gives nothing;
 * - wrap-around: a 4-slot ring carries 1000 descriptors;
 * - a full ring blocks its producer (back-pressure) and loses nothing;
 * - 8 producer threads x 20000 descriptors through 64 slots to one consumer: each taken
 *   exactly once, each producer's in its order, payloads intact;
 * - completions in any order raise done only over a prefix without gaps; flush
 *   (posted/finished) waits for every earlier operation;
 * - signal SET/ADD and all six comparisons. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gdr_unit.h"
#include "gdr/gdr_rma_signal.h"
#include "rma/gdr_rma_trigger_done.h"
#include "gdr/gdr_rma_trigger_ring.h"

typedef struct {
    gdr_trig_ring_t r;
    uint64_t head, tail;
    uint64_t *posted, *done;
} ring_mem_t;

static void ring_new(ring_mem_t *m, uint32_t nslots, int nranks)
{
    memset(m, 0, sizeof(*m));
    m->posted = calloc((size_t) nranks, sizeof(uint64_t));
    m->done = calloc((size_t) nranks, sizeof(uint64_t));
    m->r.head = &m->head;
    m->r.tail = &m->tail;
    m->r.slots = aligned_alloc(128, nslots * sizeof(gdr_trig_slot_t));
    memset(m->r.slots, 0, nslots * sizeof(gdr_trig_slot_t));
    m->r.posted = m->posted;
    m->r.done = m->done;
    m->r.nslots = nslots;
    m->r.nranks = nranks;
}

static void ring_free(ring_mem_t *m)
{
    free(m->r.slots);
    free(m->posted);
    free(m->done);
}

static gdr_trig_desc_t desc_of(int producer, uint64_t i, int nranks)
{
    gdr_trig_desc_t d = {.op = GDR_TRIG_PUT,.rank = (int32_t) ((uint64_t) producer + i) % nranks,
        .addr = ((uint64_t) producer << 40) | i,.bytes = i * 7 + 1,.disp = (int64_t) i * 3,
        .value = i ^ 0x5a5a5a5a5a5a5a5aULL,.window = (uint32_t) producer
    };
    return d;
}

static int desc_intact(const gdr_trig_desc_t *d, int *producer, uint64_t *i, int nranks)
{
    *producer = (int) (d->addr >> 40);
    *i = d->addr & ((1ULL << 40) - 1);
    gdr_trig_desc_t want = desc_of(*producer, *i, nranks);
    return d->op == want.op && d->rank == want.rank && d->bytes == want.bytes
        && d->disp == want.disp && d->value == want.value && d->window == want.window;
}

static void basics(void)
{
    ring_mem_t m;
    ring_new(&m, 8, 2);
    uint64_t next = 0;
    gdr_trig_desc_t out;
    GDR_CHECK(gdr_trig_take(&m.r, &next, &out) == 0 && next == 0, "an empty ring gives nothing");
    uint64_t s0 = gdr_trig_post(&m.r, desc_of(0, 0, 2));
    uint64_t s1 = gdr_trig_post(&m.r, desc_of(0, 1, 2));
    uint64_t s2 = gdr_trig_post(&m.r, desc_of(0, 2, 2));
    GDR_CHECK(s0 == 0 && s1 == 0 && s2 == 1, "each target numbers its operations: rank 0 gets "
              "0 and 1, rank 1 gets 0 (%llu %llu %llu)", (unsigned long long) s0,
              (unsigned long long) s1, (unsigned long long) s2);
    GDR_CHECK(gdr_trig_posted(&m.r, 0) == 2 && gdr_trig_posted(&m.r, 1) == 1,
              "posted counts per target");
    int ok = 1, producer;
    uint64_t i;
    for (uint64_t k = 0; k < 3; k++)
        ok &= gdr_trig_take(&m.r, &next, &out) == 1 && desc_intact(&out, &producer, &i, 2)
            && i == k && out.rank_seq == (k == 2 ? 1 : 0);
    GDR_CHECK(ok && next == 3 && m.tail == 3, "three descriptors out intact, in order, with "
              "their target numbers; tail follows");
    GDR_CHECK(gdr_trig_take(&m.r, &next, &out) == 0, "then empty again");
    ring_free(&m);
}

static void wrap_around(void)
{
    ring_mem_t m;
    ring_new(&m, 4, 1);
    uint64_t next = 0;
    int ok = 1;
    for (uint64_t i = 0; i < 1000; i++) {
        gdr_trig_post(&m.r, desc_of(1, i, 1));
        if (i % 3 == 2) {       /* take in bursts, so the ring fills to 3 of 4 */
            for (int k = 0; k < 3; k++) {
                gdr_trig_desc_t out;
                int producer;
                uint64_t j;
                ok &= gdr_trig_take(&m.r, &next, &out) == 1 && desc_intact(&out, &producer, &j, 1)
                    && j == next - 1 && out.rank_seq == j;
            }
        }
    }
    gdr_trig_desc_t out;
    while (gdr_trig_take(&m.r, &next, &out))
        ;
    GDR_CHECK(ok && next == 1000, "a 4-slot ring carries 1000 descriptors in order (%llu taken)",
              (unsigned long long) next);
    ring_free(&m);
}

typedef struct {
    ring_mem_t *m;
    int producer, nranks;
    uint64_t count;
    volatile uint64_t progress;  /* descriptors posted so far */
} producer_arg_t;

static void *producer(void *p)
{
    producer_arg_t *a = p;
    for (uint64_t i = 0; i < a->count; i++) {
        gdr_trig_post(&a->m->r, desc_of(a->producer, i, a->nranks));
        __atomic_store_n(&a->progress, i + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,.tv_nsec = (long) (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* gdr_trig_take, retried for up to 5 s (a lost descriptor fails the test, not hangs it) */
static int take_wait(const gdr_trig_ring_t *r, uint64_t *next, gdr_trig_desc_t *out)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!gdr_trig_take(r, next, out)) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > 5)
            return 0;
    }
    return 1;
}

static void full_ring(void)
{
    ring_mem_t m;
    ring_new(&m, 8, 1);
    producer_arg_t a = {.m = &m,.producer = 2,.nranks = 1,.count = 100 };
    pthread_t t;
    pthread_create(&t, NULL, producer, &a);
    uint64_t seen;
    for (int k = 0; k < 100; k++) {     /* until it has stopped moving */
        sleep_ms(5);
        if (__atomic_load_n(&a.progress, __ATOMIC_ACQUIRE) == 8)
            break;
    }
    sleep_ms(50);
    seen = __atomic_load_n(&a.progress, __ATOMIC_ACQUIRE);
    GDR_CHECK(seen == 8, "a producer facing a full 8-slot ring stops after 8 (posted %llu)",
              (unsigned long long) seen);
    uint64_t next = 0;
    int ok = 1;
    while (ok && next < 100) {
        gdr_trig_desc_t out;
        int producer_id;
        uint64_t i;
        ok = take_wait(&m.r, &next, &out) && desc_intact(&out, &producer_id, &i, 1)
            && producer_id == 2 && i == next - 1;
    }
    GDR_CHECK(ok, "once the proxy takes, all 100 arrive intact and in order (%llu taken)",
              (unsigned long long) next);
    if (!ok)
        exit(gdr_unit_finish());        /* the producer may be stuck for good */
    pthread_join(t, NULL);
    ring_free(&m);
}

#define PRODUCERS 8
#define PER_PRODUCER 20000

static void many_producers(void)
{
    ring_mem_t m;
    const int nranks = 5;
    ring_new(&m, 64, nranks);
    producer_arg_t a[PRODUCERS];
    pthread_t t[PRODUCERS];
    for (int p = 0; p < PRODUCERS; p++) {
        a[p] = (producer_arg_t) {.m = &m,.producer = p,.nranks = nranks,.count = PER_PRODUCER };
        pthread_create(&t[p], NULL, producer, &a[p]);
    }
    uint64_t expect[PRODUCERS] = { 0 }, next = 0, rank_seen[5] = { 0 };
    uint8_t *rank_seq_seen[5];
    for (int r = 0; r < nranks; r++)
        rank_seq_seen[r] = calloc(PRODUCERS * PER_PRODUCER, 1);
    int intact = 1, in_order = 1, seq_unique = 1;
    while (next < (uint64_t) PRODUCERS * PER_PRODUCER) {
        gdr_trig_desc_t out;
        int p;
        uint64_t i;
        if (!take_wait(&m.r, &next, &out)) {
            GDR_CHECK(0, "the consumer waited 5 s for descriptor %llu", (unsigned long long) next);
            exit(gdr_unit_finish());    /* producers may be stuck for good */
        }
        if (!desc_intact(&out, &p, &i, nranks) || p < 0 || p >= PRODUCERS) {
            intact = 0;
            continue;
        }
        in_order &= i == expect[p];
        expect[p] = i + 1;
        if (out.rank_seq >= PRODUCERS * PER_PRODUCER || rank_seq_seen[out.rank][out.rank_seq]++)
            seq_unique = 0;
        rank_seen[out.rank]++;
    }
    for (int p = 0; p < PRODUCERS; p++)
        pthread_join(t[p], NULL);
    int complete = 1;
    for (int p = 0; p < PRODUCERS; p++)
        complete &= expect[p] == PER_PRODUCER;
    for (int r = 0; r < nranks; r++) {
        /* every number below the target's count was handed out once */
        for (uint64_t k = 0; k < rank_seen[r]; k++)
            seq_unique &= rank_seq_seen[r][k] == 1;
        seq_unique &= gdr_trig_posted(&m.r, r) == rank_seen[r];
        free(rank_seq_seen[r]);
    }
    GDR_CHECK(intact && complete, "%d producers x %d descriptors through 64 slots: every one "
              "taken once, intact", PRODUCERS, PER_PRODUCER);
    GDR_CHECK(in_order, "each producer's descriptors come out in the order it posted them");
    GDR_CHECK(seq_unique, "each target's operation numbers are 0 .. posted-1, each once");
    ring_free(&m);
}

static void completion_order(void)
{
    gdr_trig_done_t t;
    GDR_CHECK(gdr_trig_done_init(&t, 100) == 0 && t.window == 128, "window rounded up to 128");
    enum { N = 1000 };
    uint64_t order[N];
    for (uint64_t i = 0; i < N; i++)
        order[i] = i;
    /* shuffle within blocks of 100 (each block fits the window once the one before it is
     * done), fixed seed */
    unsigned seed = 12345;
    for (int b = 0; b < N; b += 100)
        for (int i = 99; i > 0; i--) {
            seed = seed * 1103515245u + 12345u;
            int j = (int) ((seed >> 8) % (unsigned) (i + 1));
            uint64_t x = order[b + i];
            order[b + i] = order[b + j];
            order[b + j] = x;
        }
    int ok = 1;
    uint8_t fin[N] = { 0 };
    uint64_t prefix = 0;
    for (int k = 0; k < N; k++) {
        uint64_t before = prefix;
        int rc = gdr_trig_done_mark(&t, order[k]);
        fin[order[k]] = 1;
        while (prefix < N && fin[prefix])
            prefix++;
        ok &= t.next == prefix && rc == (prefix != before ? 1 : 0);
    }
    GDR_CHECK(ok && t.next == N, "1000 completions in shuffled order: next is always the "
              "first unfinished one (%llu)", (unsigned long long) t.next);
    GDR_CHECK(gdr_trig_done_mark(&t, 5) == -1, "finishing an old one again is refused");
    GDR_CHECK(gdr_trig_done_mark(&t, N + 128) == -1 && !gdr_trig_done_room(&t, N + 128)
              && gdr_trig_done_room(&t, N + 127), "one window past the first unfinished is "
              "refused and has no room; the last inside has room");
    GDR_CHECK(gdr_trig_done_mark(&t, N + 1) == 0 && gdr_trig_done_mark(&t, N + 1) == -1
              && t.next == N, "a gap holds next; the same one twice is refused");
    GDR_CHECK(gdr_trig_done_mark(&t, N) == 1 && t.next == N + 2, "filling the gap moves next "
              "over both");
    gdr_trig_done_free(&t);
}

/* The proxy's loop in small: take, finish out of order, publish done; a flush waits. */
static void flush_waits(void)
{
    ring_mem_t m;
    ring_new(&m, 16, 1);
    gdr_trig_done_t t;
    gdr_trig_done_init(&t, 64);
    for (uint64_t i = 0; i < 10; i++)
        gdr_trig_post(&m.r, desc_of(0, i, 1));
    uint64_t want = gdr_trig_posted(&m.r, 0), next = 0, taken[10];
    gdr_trig_desc_t out;
    int n = 0;
    while (gdr_trig_take(&m.r, &next, &out))
        taken[n++] = out.rank_seq;
    /* finish all but operation 3, last first */
    int early = 0;
    for (int k = n - 1; k >= 0; k--)
        if (taken[k] != 3 && gdr_trig_done_mark(&t, taken[k]) == 1)
            gdr_trig_store_release(&m.r.done[0], t.next);
    early = gdr_trig_finished(&m.r, 0, want);
    GDR_CHECK(n == 10 && !early && m.done[0] == 3, "9 of 10 finished, one early one not: the "
              "flush still waits (done = %llu)", (unsigned long long) m.done[0]);
    if (gdr_trig_done_mark(&t, 3) == 1)
        gdr_trig_store_release(&m.r.done[0], t.next);
    GDR_CHECK(gdr_trig_finished(&m.r, 0, want), "the last one finishes the flush");
    gdr_trig_done_free(&t);
    ring_free(&m);
}

static void signals(void)
{
    uint64_t w = 5;
    GDR_CHECK(gdr_signal_apply(GDR_SIGNAL_ADD, &w, 3) == 5 && w == 8, "ADD returns the old "
              "value and adds");
    GDR_CHECK(gdr_signal_apply(GDR_SIGNAL_SET, &w, 42) == 8 && w == 42, "SET returns the old "
              "value and stores");
    GDR_CHECK(gdr_signal_apply(7, &w, 1) == 42 && w == 42 && !gdr_signal_op_valid(7),
              "an unknown op leaves the word");
    w = UINT64_MAX;
    gdr_signal_apply(GDR_SIGNAL_ADD, &w, 2);
    GDR_CHECK(w == 1, "ADD wraps around");
    /* every comparison against a smaller, an equal and a larger word */
    static const struct { int cmp; const char *name; int lt, eq, gt; } c[] = {
        {GDR_CMP_EQ, "EQ", 0, 1, 0}, {GDR_CMP_NE, "NE", 1, 0, 1}, {GDR_CMP_GT, "GT", 0, 0, 1},
        {GDR_CMP_GE, "GE", 0, 1, 1}, {GDR_CMP_LT, "LT", 1, 0, 0}, {GDR_CMP_LE, "LE", 1, 1, 0},
    };
    for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++)
        GDR_CHECK(gdr_signal_cmp_valid(c[k].cmp) && gdr_signal_met(c[k].cmp, 9, 10) == c[k].lt
                  && gdr_signal_met(c[k].cmp, 10, 10) == c[k].eq
                  && gdr_signal_met(c[k].cmp, 11, 10) == c[k].gt
                  && gdr_signal_met(c[k].cmp, UINT64_MAX, 10) == c[k].gt,
                  "wait %s 10: word 9 -> %d, 10 -> %d, 11 and 2^64-1 -> %d (unsigned)",
                  c[k].name, c[k].lt, c[k].eq, c[k].gt);
    GDR_CHECK(!gdr_signal_cmp_valid(6) && !gdr_signal_met(6, 1, 1), "an unknown comparison "
              "is invalid and never met");
}

int main(void)
{
    basics();
    wrap_around();
    full_ring();
    many_producers();
    completion_order();
    flush_waits();
    signals();
    return gdr_unit_finish();
}
