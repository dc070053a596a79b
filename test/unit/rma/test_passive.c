/* Passive-target epochs by remote atomics (gdr_rma_passive.h) over the fake transport,
 * whose atomics act on lock words in this process as the NIC would:
 * - lazy: lock posts nothing, the first operation's need takes the lock (one atomic),
 *   unlock releases it (one more); an epoch that moved nothing posts nothing;
 * - unlock leaves the release in flight: the next acquire on the word goes behind it,
 *   drain (and free) wait for it, a failed one is reported once by drain or the next
 *   acquire;
 * - the word while held: one reader, or the exclusive bit; 0 once each release landed;
 * - this rank's own window: taken at lock (local loads and stores are protected);
 * - an exclusive lock waits for a shared holder and a shared lock for an announced
 *   exclusive waiter, with back-off and progress, then gets it (other ranks act in the
 *   fake's progress);
 * - unlock_all releases every held lock, releases in flight together;
 * - a card without a control block turns the window's native locks off; off posts nothing;
 * - the control block registered for remote reads, writes and atomics and named in the
 *   card; freed with the window; a failed atomic fails the lock;
 * - the tracker tells writes-only targets from those with reads or atomics in flight;
 * - a release posted while the epoch's get is in flight goes after it (the post flagged
 *   GDR_RMA_POST_AFTER_READS, the fake completing newest first as a NIC may), one behind
 *   puts alone is not flagged, and a staged operation makes the release wait on the host. */
#include <stdlib.h>
#include <string.h>
#include "gdr_unit.h"
#include "fake_engine.h"
#include "rma/gdr_rma_issue.h"

static uint64_t blocks[4][128];         /* the "remote" control blocks of 4 ranks */
#define words(i) blocks[i][0]                   /* their lock words */

static void make_locked_win_missing(gdr_rma_win_t *w, int on, int missing)
{
    if (gdr_rma_win_init(w, &eng, NULL, 4, 0, 0, 1) != GDR_RMA_OK)
        exit(1);
    for (int i = 0; i < 4; i++)
        gdr_rma_win_set_peer(w, i, 10 + i);
    gdr_rma_win_set_policy(w, 1, GDR_RMA_DECLARES_SUM, 1);
    gdr_rma_ctl_configure(&w->ctl, on);
    gdr_rma_passive_configure(&w->passive, 1000, 20000);
    gdr_rma_card_t mine;
    char why[200];
    gdr_rma_win_expose(w, target_mem[0], sizeof(target_mem[0]), 8, 0, &mine, why, sizeof(why));
    memset(blocks, 0, sizeof(blocks));
    for (int i = 0; i < 4; i++) {
        /* (this rank's own card points at blocks[0] too: the fake reaches it there) */
        gdr_rma_card_t c = {.size = sizeof(target_mem[i]),.disp_unit = 8,
            .base = (uint64_t) (uintptr_t) target_mem[i],.rkey = 7,
            .ctl = {.addr = (uint64_t) (uintptr_t) blocks[i],.rkey = i == missing ? 0 : 9}
        };
        gdr_rma_win_set_card(w, i, &c);
    }
}

static void make_locked_win(gdr_rma_win_t *w, int on)
{
    make_locked_win_missing(w, on, -1);
}

static void test_lazy_shared(void)
{
    gdr_rma_win_t w;
    make_locked_win(&w, 1);
    int posts = fk.atomic_posts;
    unsigned long long atomics = eng.lock_atomics;
    GDR_CHECK(gdr_rma_passive_native(&w, 1) && gdr_rma_passive_lock(&w, 1, GDR_RMA_LOCK_SHARED)
              == GDR_RMA_OK && fk.atomic_posts == posts && !gdr_rma_passive_held(&w, 1),
              "shared lock of another rank: nothing posted yet");
    GDR_CHECK(gdr_rma_passive_need(&w, 1) == GDR_RMA_OK && fk.atomic_posts == posts + 1
              && words(1) == 1 && gdr_rma_passive_held(&w, 1),
              "first operation: one fetch-add, the word shows one reader");
    GDR_CHECK(gdr_rma_passive_need(&w, 1) == GDR_RMA_OK && fk.atomic_posts == posts + 1,
              "later operations: the lock is held, nothing posted");
    GDR_CHECK(gdr_rma_passive_unlock(&w, 1) == GDR_RMA_OK && fk.atomic_posts == posts + 2
              && fk.n == 1 && words(1) == 1 && !gdr_rma_passive_held(&w, 1)
              && eng.lock_atomics == atomics + 2,
              "unlock: one fetch-add releases, left in flight (not waited for); 2 lock-word "
              "atomics counted");
    GDR_CHECK(gdr_rma_passive_drain(&w) == GDR_RMA_OK && fk.n == 0 && words(1) == 0,
              "drain: the release landed, word 0");
    GDR_CHECK(gdr_rma_passive_lock(&w, 2, GDR_RMA_LOCK_EXCLUSIVE) == GDR_RMA_OK
              && gdr_rma_passive_unlock(&w, 2) == GDR_RMA_OK && fk.atomic_posts == posts + 2
              && words(2) == 0, "an epoch that moved nothing posts nothing");
    gdr_rma_win_free(&w);
}

static void test_exclusive_and_self(void)
{
    gdr_rma_win_t w;
    make_locked_win(&w, 1);
    int posts = fk.atomic_posts;
    gdr_rma_passive_lock(&w, 2, GDR_RMA_LOCK_EXCLUSIVE);
    GDR_CHECK(gdr_rma_passive_need(&w, 2) == GDR_RMA_OK && words(2) == GDR_RMA_LOCK_TICKET
              && fk.atomic_posts == posts + 1, "exclusive, uncontended: one fetch-add (a ticket)");
    GDR_CHECK(gdr_rma_passive_unlock(&w, 2) == GDR_RMA_OK && gdr_rma_passive_drain(&w) == 0
              && words(2) == GDR_RMA_LOCK_TICKET + GDR_RMA_LOCK_SERVED_ONE,
              "exclusive unlock: the ticket served, the lock free again");
    posts = fk.atomic_posts;
    GDR_CHECK(gdr_rma_passive_lock(&w, 0, GDR_RMA_LOCK_EXCLUSIVE) == GDR_RMA_OK
              && fk.atomic_posts == posts + 1 && words(0) == GDR_RMA_LOCK_TICKET
              && gdr_rma_passive_held(&w, 0), "this rank's own window: taken at lock");
    GDR_CHECK(gdr_rma_passive_unlock(&w, 0) == GDR_RMA_OK && gdr_rma_passive_drain(&w) == 0
              && GDR_RMA_LOCK_WRITERS(words(0)) == 0, "own window released");
    gdr_rma_win_free(&w);
}

static int other_after;         /* progress rounds until the other rank acts */
static uint64_t other_delta;
static int other_word;

static void other_rank(void)
{
    if (other_after > 0 && --other_after == 0)
        words(other_word) += other_delta;
}

static void test_contention(void)
{
    gdr_rma_win_t w;
    make_locked_win(&w, 1);
    /* another rank holds target 1 shared; it lets go after 200 rounds of our progress */
    words(1) = 1;
    other_word = 1;
    other_delta = (uint64_t) -1;
    other_after = 200;
    fk.on_progress = other_rank;
    gdr_rma_passive_lock(&w, 1, GDR_RMA_LOCK_EXCLUSIVE);
    GDR_CHECK(gdr_rma_passive_need(&w, 1) == GDR_RMA_OK && other_after == 0
              && words(1) == GDR_RMA_LOCK_TICKET && eng.lock_retries > 0,
              "exclusive waits for the shared holder, then holds alone (%llu retries)",
              eng.lock_retries);
    gdr_rma_passive_unlock(&w, 1);
    /* another rank holds target 2 exclusive (ticket 0 taken and served): a shared lock
     * stands back until it serves the next */
    words(2) = GDR_RMA_LOCK_TICKET;
    other_word = 2;
    other_delta = GDR_RMA_LOCK_SERVED_ONE;
    other_after = 200;
    unsigned long long retries = eng.lock_retries;
    gdr_rma_passive_lock(&w, 2, GDR_RMA_LOCK_SHARED);
    GDR_CHECK(gdr_rma_passive_need(&w, 2) == GDR_RMA_OK && other_after == 0
              && GDR_RMA_LOCK_READERS(words(2)) == 1 && GDR_RMA_LOCK_WRITERS(words(2)) == 0
              && eng.lock_retries > retries,
              "shared waits while an exclusive ticket is unserved, then reads");
    gdr_rma_passive_unlock(&w, 2);
    fk.on_progress = NULL;
    gdr_rma_passive_drain(&w);
    GDR_CHECK(GDR_RMA_LOCK_WRITERS(words(1)) == 0 && GDR_RMA_LOCK_READERS(words(1)) == 0
              && GDR_RMA_LOCK_WRITERS(words(2)) == 0 && GDR_RMA_LOCK_READERS(words(2)) == 0,
              "both released");
    gdr_rma_win_free(&w);
}

static void test_not_native(void)
{
    gdr_rma_win_t w;
    make_locked_win(&w, 1);
    int posts = fk.atomic_posts;
    gdr_rma_win_free(&w);
    make_locked_win_missing(&w, 1, 3);
    GDR_CHECK(!gdr_rma_passive_native(&w, 1) && !gdr_rma_passive_native(&w, 3)
              && gdr_rma_passive_lock(&w, 1, GDR_RMA_LOCK_SHARED) == GDR_RMA_OK
              && gdr_rma_passive_need(&w, 1) == GDR_RMA_OK
              && gdr_rma_passive_unlock(&w, 1) == GDR_RMA_OK && fk.atomic_posts == posts,
              "one card without a control block: the whole window locks by messages");
    gdr_rma_win_free(&w);
    make_locked_win(&w, 0);
    GDR_CHECK(!gdr_rma_passive_native(&w, 1) && gdr_rma_passive_lock(&w, 0, GDR_RMA_LOCK_SHARED)
              == GDR_RMA_OK && fk.atomic_posts == posts, "native locks off: nothing posted");
    gdr_rma_win_free(&w);
    gdr_rma_card_t card;
    char why[200];
    if (gdr_rma_win_init(&w, &eng, NULL, 4, 0, 0, 1) != GDR_RMA_OK)
        exit(1);
    int regs = fk.regs;
    gdr_rma_win_expose(&w, target_mem[0], 64, 8, 0, &card, why, sizeof(why));
    GDR_CHECK(card.ctl.rkey == 0 && fk.regs == regs + 1 && w.ctl.block == NULL,
              "off: no control block, only the window registered");
    gdr_rma_win_free(&w);
}

static void test_ctl_block(void)
{
    gdr_rma_win_t w;
    gdr_rma_card_t card;
    char why[200];
    if (gdr_rma_win_init(&w, &eng, NULL, 4, 0, 1, 1) != GDR_RMA_OK)
        exit(1);
    gdr_rma_ctl_configure(&w.ctl, 1);
    int regs = fk.regs, deregs = fk.deregs;
    /* (a dynamic window registers no memory of its own: the block is the only one) */
    gdr_rma_win_expose(&w, NULL, 0, 1, 0, &card, why, sizeof(why));
    int zero = 1;
    for (size_t i = 0; w.ctl.block != NULL && i < w.ctl.size / 8; i++)
        zero &= w.ctl.block[i] == 0;
    GDR_CHECK(fk.regs == regs + 1 && card.ctl.rkey == 0x1234
              && card.ctl.addr == (uint64_t) (uintptr_t) w.ctl.block
              && ((uintptr_t) w.ctl.block & 63) == 0 && zero
              && w.ctl.size >= gdr_rma_ctl_complete_word(4, 4),
              "on: a zeroed, aligned control block with a post and a complete word per rank, "
              "named in the card (%zu bytes)", w.ctl.size);
    GDR_CHECK(fk.last_access == (GDR_RMA_REMOTE_READ | GDR_RMA_REMOTE_WRITE
                                 | GDR_RMA_REMOTE_ATOMIC),
              "registered for remote reads, writes and atomics");
    gdr_rma_win_free(&w);
    GDR_CHECK(fk.deregs == deregs + 1, "free: the block deregistered");

    make_locked_win(&w, 1);
    fk.fail_next = 1;
    gdr_rma_passive_lock(&w, 1, GDR_RMA_LOCK_SHARED);
    GDR_CHECK(gdr_rma_passive_need(&w, 1) == GDR_RMA_ERROR,
              "an atomic that completes in error fails the lock");
    gdr_rma_win_free(&w);
}

static void test_release_in_flight(void)
{
    gdr_rma_win_t w;
    make_locked_win(&w, 1);
    gdr_rma_passive_lock(&w, 1, GDR_RMA_LOCK_EXCLUSIVE);
    gdr_rma_passive_need(&w, 1);
    gdr_rma_passive_unlock(&w, 1);
    gdr_rma_passive_lock(&w, 1, GDR_RMA_LOCK_EXCLUSIVE);
    unsigned long long retries = eng.lock_retries;
    GDR_CHECK(gdr_rma_passive_need(&w, 1) == GDR_RMA_OK && eng.lock_retries == retries
              && words(1) == 2 * GDR_RMA_LOCK_TICKET + GDR_RMA_LOCK_SERVED_ONE,
              "the next epoch's ticket goes behind the release in flight: served at once");
    gdr_rma_passive_unlock(&w, 1);
    fk.fail_next = 1;
    GDR_CHECK(gdr_rma_passive_drain(&w) == GDR_RMA_ERROR && gdr_rma_passive_drain(&w) == 0,
              "a release that completes in error: drain says so, once");
    gdr_rma_passive_lock(&w, 2, GDR_RMA_LOCK_SHARED);
    gdr_rma_passive_need(&w, 2);
    gdr_rma_passive_unlock(&w, 2);
    fk.fail_next = 1;
    complete_one();
    int posts = fk.atomic_posts;
    gdr_rma_passive_lock(&w, 2, GDR_RMA_LOCK_SHARED);
    GDR_CHECK(gdr_rma_passive_need(&w, 2) == GDR_RMA_ERROR && fk.atomic_posts == posts,
              "or the target's next acquire, before it posts anything");
    GDR_CHECK(gdr_rma_passive_need(&w, 2) == GDR_RMA_OK && words(2) == 2,
              "then the lock works again (the failed release left its reader in the word)");
    gdr_rma_passive_unlock(&w, 2);
    GDR_CHECK(fk.n == 1, "a release in flight at free");
    gdr_rma_win_free(&w);
    GDR_CHECK(fk.n == 0 && words(2) == 1, "free waited for it");
}

static void test_unlock_all(void)
{
    gdr_rma_win_t w;
    make_locked_win(&w, 1);
    int posts = fk.atomic_posts;
    for (int i = 0; i < 4; i++)
        gdr_rma_passive_lock(&w, i, GDR_RMA_LOCK_SHARED);
    GDR_CHECK(fk.atomic_posts == posts + 1 && words(0) == 1,
              "lock_all: only this rank's own lock taken at once");
    gdr_rma_passive_need(&w, 2);
    gdr_rma_passive_need(&w, 3);
    GDR_CHECK(gdr_rma_passive_unlock_all(&w) == GDR_RMA_OK && fk.atomic_posts == posts + 6
              && fk.n == 3, "unlock_all: the 3 releases in flight together, none waited for");
    GDR_CHECK(gdr_rma_passive_drain(&w) == GDR_RMA_OK && words(0) == 0 && words(1) == 0
              && words(2) == 0 && words(3) == 0,
              "drained: the 3 held locks released, target 1 (never used) untouched");
    gdr_rma_win_free(&w);
}

static void test_need_all(void)
{
    gdr_rma_win_t w;
    make_locked_win(&w, 1);
    for (int i = 0; i < 4; i++)
        gdr_rma_passive_lock(&w, i, GDR_RMA_LOCK_SHARED);
    GDR_CHECK(gdr_rma_passive_need_all(&w) == GDR_RMA_OK && words(0) == 1 && words(1) == 1
              && words(2) == 1 && words(3) == 1, "need_all: every wanted lock taken");
    gdr_rma_passive_unlock_all(&w);
    gdr_rma_win_free(&w);
}

static void test_reading(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 1);
    uint64_t v = 5, r = 0;
    struct iovec p = one_piece(0, 8);
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.tpieces = &p,.ntpieces = 1,
        .tbytes = 8,.origin = {.addr = &v }
    };
    gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 2,.tpieces = &p,.ntpieces = 1,
        .tbytes = 8,.result = {.addr = &r }
    };
    GDR_CHECK(run(&w, &put, NULL) == GDR_RMA_OK && w.tracker.remote[1] == 1
              && w.tracker.reading[1] == 0, "a put in flight: writes only");
    GDR_CHECK(run(&w, &get, NULL) == GDR_RMA_OK && w.tracker.remote[2] == 1
              && w.tracker.reading[2] == 1, "a get in flight: reading at the target");
    gdr_rma_wait_all(&w.tracker, &eng, 0);
    GDR_CHECK(w.tracker.reading[2] == 0 && w.tracker.remote[2] == 0, "done: nothing counted");
    gdr_rma_win_free(&w);
}

/* The index in the fake's completion log of the first completion of kind at addr. */
static int done_at(wr_kind_t kind, uint64_t addr, int from)
{
    for (int i = from; i < fk.done_n; i++)
        if (fk.done_kinds[i] == kind && fk.done_addrs[i] == addr)
            return i;
    return -1;
}

static void test_release_after_reads(void)
{
    gdr_rma_win_t w;
    make_locked_win(&w, 1);
    uint64_t v = 7, r = 0, lock_word = (uint64_t) (uintptr_t) &words(1);
    memcpy(target_mem[1] + 16, &(uint64_t) { 42 }, 8);
    struct iovec p0 = one_piece(0, 8), p16 = one_piece(16, 8);
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.tpieces = &p0,.ntpieces = 1,
        .tbytes = 8,.origin = {.addr = &v }
    };
    gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 1,.tpieces = &p16,.ntpieces = 1,
        .tbytes = 8,.result = {.addr = &r }
    };

    /* puts alone: the release is not flagged */
    gdr_rma_passive_lock(&w, 1, GDR_RMA_LOCK_EXCLUSIVE);
    gdr_rma_passive_need(&w, 1);
    int flagged = fk.after_reads_posts;
    GDR_CHECK(run(&w, &put, NULL) == GDR_RMA_OK && gdr_rma_passive_unlock(&w, 1) == GDR_RMA_OK
              && fk.after_reads_posts == flagged, "a release behind puts alone: not flagged");
    gdr_rma_wait_all(&w.tracker, &eng, 0);
    gdr_rma_passive_drain(&w);

    /* a get in flight: the release goes after it, even completing newest first */
    gdr_rma_passive_lock(&w, 1, GDR_RMA_LOCK_EXCLUSIVE);
    gdr_rma_passive_need(&w, 1);
    fk.done_n = 0;
    GDR_CHECK(run(&w, &get, NULL) == GDR_RMA_OK && run(&w, &put, NULL) == GDR_RMA_OK
              && !gdr_rma_tracker_by_messages(&w.tracker, 1)
              && gdr_rma_passive_unlock(&w, 1) == GDR_RMA_OK
              && fk.after_reads_posts == flagged + 1 && fk.n == 3,
              "a get and a put in flight: the release is posted at once, flagged");
    fk.lifo = 1;
    while (fk.n > 0)
        complete_one();
    fk.lifo = 0;
    int got = done_at(W_GET, (uint64_t) (uintptr_t) (target_mem[1] + 16), 0);
    int rel = done_at(W_ATOMICV, lock_word, 0);
    GDR_CHECK(got >= 0 && rel > got && r == 42,
              "the get read the window before the release acted (completions %d, %d)", got, rel);
    gdr_rma_wait_all(&w.tracker, &eng, 0);
    gdr_rma_passive_drain(&w);
    GDR_CHECK(GDR_RMA_LOCK_WRITERS(words(1)) == 0, "and the lock is free");

    /* an operation through the staged protocol: counted, so the host waits for it */
    gdr_rma_op_t *op = gdr_rma_op_new(&eng, &w.tracker, 1, 0);
    gdr_rma_op_by_messages(op);
    GDR_CHECK(gdr_rma_tracker_by_messages(&w.tracker, 1)
              && !gdr_rma_tracker_by_messages(&w.tracker, 2),
              "a staged operation to rank 1 in flight: a release there must wait for it");
    gdr_rma_op_posted(op);
    GDR_CHECK(!gdr_rma_tracker_by_messages(&w.tracker, 1), "done: no longer");
    gdr_rma_win_free(&w);
}

int main(void)
{
    fk.atomicv_max = 16;
    test_lazy_shared();
    test_exclusive_and_self();
    test_contention();
    test_not_native();
    test_ctl_block();
    test_unlock_all();
    test_release_in_flight();
    test_need_all();
    test_reading();
    test_release_after_reads();
    return gdr_unit_finish();
}
