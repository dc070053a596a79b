/* The lock-word protocol of passive-target locks (gdr_rma_lock.h), its atomics applied
 * by CPU atomics on one word as a NIC would apply them:
 * - one locker: the word after each acquire and release, one atomic each;
 * - a waiting writer first: a new reader backs out while an exclusive ticket is unserved;
 * - tickets in order: an exclusive locker that releases and comes straight back (the target
 *   itself, whose atomics are fastest) waits behind the one that took a ticket before it;
 * - the served field wraps from 0xffff to 0 without touching the next ticket;
 * - exclusive excludes: 4 threads x 2500 exclusive epochs around a non-atomic increment
 *   give the exact total, and nobody is ever inside with another;
 * - shared overlap: two shared holders hold at the same time;
 * - a writer among 3 readers that re-lock without pause gets its 200 epochs (not starved),
 *   never together with a reader;
 * - back-off doubles from the minimum up to the maximum and stays there. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "gdr_unit.h"
#include "rma/gdr_rma_lock.h"

#define MIN_NS 1000
#define MAX_NS 200000

static uint64_t apply(uint64_t *word, const gdr_rma_lock_step_t *s)
{
    return __atomic_fetch_add(word, s->add, __ATOMIC_ACQ_REL);
}

static void pause_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = 0,.tv_nsec = (long) ns };
    nanosleep(&ts, NULL);
}

static unsigned lock(uint64_t *word, gdr_rma_lock_t *lk, gdr_rma_lock_kind_t kind)
{
    gdr_rma_lock_step_t step;
    unsigned atomics = 0;
    gdr_rma_lock_acquire(lk, kind, MIN_NS, MAX_NS, &step);
    for (;;) {
        uint64_t delay, old = apply(word, &step);
        atomics++;
        gdr_rma_lock_next_t next = gdr_rma_lock_on_result(lk, old, &step, &delay);
        if (next == GDR_RMA_LOCK_HELD)
            return atomics;
        if (next == GDR_RMA_LOCK_LATER)
            pause_ns(delay);
    }
}

static int unlock(uint64_t *word, gdr_rma_lock_t *lk)
{
    gdr_rma_lock_step_t step;
    uint64_t delay;
    gdr_rma_lock_release(lk, &step);
    return gdr_rma_lock_on_result(lk, apply(word, &step), &step, &delay) == GDR_RMA_LOCK_RELEASED;
}

static void one_locker(void)
{
    uint64_t w = 0;
    gdr_rma_lock_t a, b;
    unsigned n = lock(&w, &a, GDR_RMA_LOCK_EXCLUSIVE);
    GDR_CHECK(n == 1 && w == GDR_RMA_LOCK_TICKET, "exclusive on a free word: one fetch-add, "
              "ticket 0 taken and served (%u atomics, word %#llx)", n, (unsigned long long) w);
    GDR_CHECK(unlock(&w, &a) && w == GDR_RMA_LOCK_TICKET + GDR_RMA_LOCK_SERVED_ONE
              && GDR_RMA_LOCK_WRITERS(w) == 0, "its release serves the next ticket: free again");
    unsigned n1 = lock(&w, &a, GDR_RMA_LOCK_SHARED), n2 = lock(&w, &b, GDR_RMA_LOCK_SHARED);
    GDR_CHECK(n1 == 1 && n2 == 1 && GDR_RMA_LOCK_READERS(w) == 2, "two shared lockers: one "
              "fetch-add each, two holders");
    GDR_CHECK(unlock(&w, &a) && unlock(&w, &b) && GDR_RMA_LOCK_READERS(w) == 0
              && GDR_RMA_LOCK_WRITERS(w) == 0, "both releases: the word is free");
}

/* Each result through the machine: the next-step verdict. */
static gdr_rma_lock_next_t step_on(uint64_t *w, gdr_rma_lock_t *lk, gdr_rma_lock_step_t *s)
{
    uint64_t delay;
    return gdr_rma_lock_on_result(lk, apply(w, s), s, &delay);
}

/* The locker that comes back at once (A, the target itself) does not overtake the one that
 * took a ticket while A held the lock (B, across the network). */
static void tickets_in_order(void)
{
    uint64_t w = 0;
    gdr_rma_lock_t a, b;
    gdr_rma_lock_step_t as, bs;
    gdr_rma_lock_acquire(&a, GDR_RMA_LOCK_EXCLUSIVE, MIN_NS, MAX_NS, &as);
    gdr_rma_lock_next_t a1 = step_on(&w, &a, &as);
    gdr_rma_lock_acquire(&b, GDR_RMA_LOCK_EXCLUSIVE, MIN_NS, MAX_NS, &bs);
    gdr_rma_lock_next_t b1 = step_on(&w, &b, &bs);
    GDR_CHECK(a1 == GDR_RMA_LOCK_HELD && b1 == GDR_RMA_LOCK_LATER && GDR_RMA_LOCK_WRITERS(w) == 2,
              "A holds, B took the next ticket and waits (word %#llx)", (unsigned long long) w);
    GDR_CHECK(unlock(&w, &a), "A releases");
    gdr_rma_lock_acquire(&a, GDR_RMA_LOCK_EXCLUSIVE, MIN_NS, MAX_NS, &as);
    gdr_rma_lock_next_t a2 = step_on(&w, &a, &as), a3 = step_on(&w, &a, &as);
    GDR_CHECK(a2 == GDR_RMA_LOCK_LATER && a3 == GDR_RMA_LOCK_LATER, "A, straight back, waits "
              "behind B's ticket, however often it looks");
    gdr_rma_lock_next_t b2 = step_on(&w, &b, &bs);
    GDR_CHECK(b2 == GDR_RMA_LOCK_HELD, "B's next look finds its turn and holds");
    GDR_CHECK(unlock(&w, &b) && step_on(&w, &a, &as) == GDR_RMA_LOCK_HELD, "after B, A holds");
    GDR_CHECK(unlock(&w, &a) && GDR_RMA_LOCK_WRITERS(w) == 0 && GDR_RMA_LOCK_READERS(w) == 0,
              "and the word is free: 3 tickets taken, 3 served");
}

/* Ticket 0xffff served: the next is 0, and the next-ticket field is not disturbed. */
static void served_wraps(void)
{
    uint64_t w = 0xffffull * GDR_RMA_LOCK_TICKET + 0xffffull * GDR_RMA_LOCK_SERVED_ONE;
    gdr_rma_lock_t a;
    unsigned n = lock(&w, &a, GDR_RMA_LOCK_EXCLUSIVE);
    GDR_CHECK(n == 1 && a.ticket == 0xffff && GDR_RMA_LOCK_NEXT_TICKET(w) == 0,
              "ticket 0xffff taken at once; the next ticket wrapped to 0 (word %#llx)",
              (unsigned long long) w);
    GDR_CHECK(unlock(&w, &a) && w == 0, "its release serves ticket 0: the word is all zero, "
              "free (word %#llx)", (unsigned long long) w);
}

/* ---- exclusive excludes --------------------------------------------------------------- */

#define WRITERS 4
#define EPOCHS 2500

static uint64_t word;
static volatile long counter;
static int inside, overlaps;

static void *exclusive_worker(void *p)
{
    (void) p;
    gdr_rma_lock_t lk;
    for (int i = 0; i < EPOCHS; i++) {
        lock(&word, &lk, GDR_RMA_LOCK_EXCLUSIVE);
        if (__atomic_add_fetch(&inside, 1, __ATOMIC_ACQ_REL) != 1)
            __atomic_add_fetch(&overlaps, 1, __ATOMIC_RELAXED);
        long c = counter;       /* a non-atomic read-modify-write: lost without the lock */
        if (i % 64 == 0)
            sched_yield();
        counter = c + 1;
        __atomic_sub_fetch(&inside, 1, __ATOMIC_ACQ_REL);
        unlock(&word, &lk);
    }
    return NULL;
}

static void exclusive_excludes(void)
{
    pthread_t t[WRITERS];
    word = 0;
    counter = 0;
    for (int i = 0; i < WRITERS; i++)
        pthread_create(&t[i], NULL, exclusive_worker, NULL);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(t[i], NULL);
    GDR_CHECK(counter == WRITERS * EPOCHS && overlaps == 0 && GDR_RMA_LOCK_WRITERS(word) == 0
              && GDR_RMA_LOCK_READERS(word) == 0, "%d threads x %d "
              "exclusive epochs: counter %ld of %d, %d overlaps, word %#llx at the end", WRITERS,
              EPOCHS, counter, WRITERS * EPOCHS, overlaps, (unsigned long long) word);
}

/* ---- shared holders overlap ----------------------------------------------------------- */

static int holding;

static void *shared_holder(void *p)
{
    int *both = p;
    gdr_rma_lock_t lk;
    lock(&word, &lk, GDR_RMA_LOCK_SHARED);
    __atomic_add_fetch(&holding, 1, __ATOMIC_ACQ_REL);
    for (int k = 0; k < 2000 && __atomic_load_n(&holding, __ATOMIC_ACQUIRE) < 2; k++)
        pause_ns(1000000);      /* up to 2 s for the other to hold too */
    if (__atomic_load_n(&holding, __ATOMIC_ACQUIRE) == 2)
        __atomic_add_fetch(both, 1, __ATOMIC_RELAXED);
    pause_ns(20000000);         /* so the other sees both too */
    unlock(&word, &lk);
    return NULL;
}

static void shared_overlap(void)
{
    pthread_t t[2];
    int both = 0;
    word = 0;
    holding = 0;
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, shared_holder, &both);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    GDR_CHECK(both == 2 && GDR_RMA_LOCK_READERS(word) == 0, "two shared holders held at the same time (both saw it)");
}

/* ---- a writer among readers ----------------------------------------------------------- */

#define READERS 3
#define WRITER_EPOCHS 200

static int writer_done, readers_in, writer_in, mixed;
static long reader_epochs;

static void *reader(void *p)
{
    (void) p;
    gdr_rma_lock_t lk;
    while (!__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE)) {
        lock(&word, &lk, GDR_RMA_LOCK_SHARED);
        __atomic_add_fetch(&readers_in, 1, __ATOMIC_ACQ_REL);
        if (__atomic_load_n(&writer_in, __ATOMIC_ACQUIRE))
            __atomic_add_fetch(&mixed, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&reader_epochs, 1, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&readers_in, 1, __ATOMIC_ACQ_REL);
        unlock(&word, &lk);     /* and straight back for the next */
    }
    return NULL;
}

static void writer_not_starved(void)
{
    pthread_t t[READERS];
    word = 0;
    for (int i = 0; i < READERS; i++)
        pthread_create(&t[i], NULL, reader, NULL);
    pause_ns(20000000);         /* the readers get going first */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gdr_rma_lock_t lk;
    int done = 0;
    for (; done < WRITER_EPOCHS; done++) {
        lock(&word, &lk, GDR_RMA_LOCK_EXCLUSIVE);
        __atomic_store_n(&writer_in, 1, __ATOMIC_RELEASE);
        if (__atomic_load_n(&readers_in, __ATOMIC_ACQUIRE) != 0)
            __atomic_add_fetch(&mixed, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&writer_in, 0, __ATOMIC_RELEASE);
        unlock(&word, &lk);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > 20)
            break;              /* starved: report, do not hang */
    }
    __atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < READERS; i++)
        pthread_join(t[i], NULL);
    GDR_CHECK(done == WRITER_EPOCHS, "a writer among %d readers that re-lock at once gets all "
              "%d exclusive epochs (%d) while the readers had %ld", READERS, WRITER_EPOCHS, done,
              reader_epochs);
    GDR_CHECK(mixed == 0 && GDR_RMA_LOCK_WRITERS(word) == 0 && GDR_RMA_LOCK_READERS(word) == 0,
              "never a reader together with the writer (%d); the word "
              "is free at the end", mixed);
}

/* The rule that keeps writers from starving, step by step: a shared locker that finds an
 * exclusive ticket unserved takes its holder back instead of holding. */
static void waiting_writer_first(void)
{
    uint64_t w = 1;             /* one shared holder */
    gdr_rma_lock_t wr, rd;
    gdr_rma_lock_step_t ws, rs;
    gdr_rma_lock_acquire(&wr, GDR_RMA_LOCK_EXCLUSIVE, MIN_NS, MAX_NS, &ws);
    gdr_rma_lock_next_t n1 = step_on(&w, &wr, &ws);
    GDR_CHECK(n1 == GDR_RMA_LOCK_LATER && GDR_RMA_LOCK_WRITERS(w) == 1
              && GDR_RMA_LOCK_READERS(w) == 1, "a writer facing a shared holder takes a ticket "
              "and backs off (word %#llx)", (unsigned long long) w);
    gdr_rma_lock_acquire(&rd, GDR_RMA_LOCK_SHARED, MIN_NS, MAX_NS, &rs);
    gdr_rma_lock_next_t r1 = step_on(&w, &rd, &rs);
    GDR_CHECK(r1 == GDR_RMA_LOCK_NEXT && rs.add == (uint64_t) -1,
              "a new reader then does not hold: it takes its holder back");
    gdr_rma_lock_next_t r2 = step_on(&w, &rd, &rs), r3 = step_on(&w, &rd, &rs);
    GDR_CHECK(r2 == GDR_RMA_LOCK_LATER && r3 == GDR_RMA_LOCK_LATER && rs.add == 0
              && GDR_RMA_LOCK_READERS(w) == 1, "and only looks while the ticket is unserved; "
              "the word still has only the first holder");
    w -= 1;                     /* the first holder leaves */
    gdr_rma_lock_next_t n2 = step_on(&w, &wr, &ws);
    GDR_CHECK(n2 == GDR_RMA_LOCK_HELD && GDR_RMA_LOCK_READERS(w) == 0,
              "the writer's next look finds no holder and holds (word %#llx)",
              (unsigned long long) w);
    gdr_rma_lock_next_t r4 = step_on(&w, &rd, &rs);
    GDR_CHECK(r4 == GDR_RMA_LOCK_LATER, "the reader still waits while the writer holds");
    GDR_CHECK(unlock(&w, &wr), "the writer releases");
    gdr_rma_lock_next_t r5 = step_on(&w, &rd, &rs), r6 = step_on(&w, &rd, &rs);
    GDR_CHECK(r5 == GDR_RMA_LOCK_NEXT && r6 == GDR_RMA_LOCK_HELD && GDR_RMA_LOCK_READERS(w) == 1,
              "then the reader sees every ticket served, adds itself and holds");
}

static void backoff(void)
{
    uint64_t w = 0;
    gdr_rma_lock_t holder, lk;
    lock(&w, &holder, GDR_RMA_LOCK_EXCLUSIVE);  /* held by someone else, who never lets go */
    gdr_rma_lock_step_t step;
    uint64_t delay, seen[12];
    int n = 0, ok = 1;
    gdr_rma_lock_acquire(&lk, GDR_RMA_LOCK_EXCLUSIVE, MIN_NS, 8 * MIN_NS, &step);
    while (n < 12) {
        gdr_rma_lock_next_t next = gdr_rma_lock_on_result(&lk, apply(&w, &step), &step, &delay);
        ok &= next != GDR_RMA_LOCK_HELD;
        if (next == GDR_RMA_LOCK_LATER)
            seen[n++] = delay;
    }
    uint64_t want[12] = { 1, 2, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8 };
    for (int i = 0; i < 12; i++)
        ok &= seen[i] == want[i] * MIN_NS;
    GDR_CHECK(ok && GDR_RMA_LOCK_WRITERS(w) == 2 && lk.tries == 12, "against a holder that "
              "stays: back-off 1, 2, 4, 8, 8 ... us (the maximum), one ticket taken, 12 looks");
}

int main(void)
{
    alarm(120);                 /* a lock that never comes kills the test, not CI */
    one_locker();
    waiting_writer_first();
    tickets_in_order();
    served_wraps();
    exclusive_excludes();
    shared_overlap();
    writer_not_starved();
    backoff();
    return gdr_unit_finish();
}
