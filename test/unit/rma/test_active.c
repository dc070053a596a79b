/* Fence barriers and PSCW by RDMA writes into control blocks (gdr_rma_active.h): the
 * windows of 4 (or 3) ranks in this process over the fake transport, whose writes land
 * when its progress completes them, so each rank's steps can be interleaved:
 * - start waits for its targets' posts, not for a post another target sent early;
 *   a post that came early is used by the later start it belongs to;
 * - wait and test wait for every origin's complete, one epoch at a time;
 * - the barrier: nobody leaves before every rank has entered; 2 rounds (one write each)
 *   for 4 ranks and for 3; again for a second fence; at once for one rank;
 * - a fence's puts to the barrier's first partner need not complete before the barrier:
 *   the partner leaves only after they landed (gdr_rma_wait_all_except), and the later
 *   rounds wait for them; puts to other ranks are waited for, a get from the partner is
 *   not: the barrier's write goes behind it, flagged GDR_RMA_POST_AFTER_READS;
 * - a complete notice posted while a get from that target is in flight goes after it
 *   (flagged GDR_RMA_POST_AFTER_READS; the fake completing newest first as a NIC may);
 *   one to a target with nothing in flight is not flagged;
 * - ranks outside the window, and windows without control blocks, are refused. */
#include <stdlib.h>
#include <string.h>
#include "gdr_unit.h"
#include "fake_engine.h"

#define MAXR 4
static gdr_rma_win_t W[MAXR];

static void make_ranks(int n)
{
    gdr_rma_card_t cards[MAXR];
    char why[200];
    for (int r = 0; r < n; r++) {
        if (gdr_rma_win_init(&W[r], &eng, NULL, n, r, 0, 1) != GDR_RMA_OK)
            exit(1);
        for (int i = 0; i < n; i++)
            gdr_rma_win_set_peer(&W[r], i, 10 + i);
        gdr_rma_ctl_configure(&W[r].ctl, 1);
        gdr_rma_win_expose(&W[r], target_mem[r], 64, 8, 0, &cards[r], why, sizeof(why));
    }
    for (int r = 0; r < n; r++)
        for (int i = 0; i < n; i++)
            gdr_rma_win_set_card(&W[r], i, &cards[i]);
}

static void free_ranks(int n)
{
    for (int r = 0; r < n; r++)
        gdr_rma_win_free(&W[r]);
}

static void drain(void)
{
    while (fk.n > 0)
        complete_one();
}

static void test_pscw(void)
{
    make_ranks(4);
    int one[1] = { 1 }, two[1] = { 2 }, zero[1] = { 0 }, r12[2] = { 1, 2 }, r03[2] = { 0, 3 };
    int yes = -1, posts = fk.posts;
    GDR_CHECK(gdr_rma_active_post(&W[2], zero, 1) == GDR_RMA_OK && fk.posts == posts + 1,
              "post: one write to the origin");
    drain();
    GDR_CHECK(gdr_rma_active_start_test(&W[0], one, 1, &yes) == GDR_RMA_OK && !yes,
              "start(1) does not take rank 2's post");
    gdr_rma_active_post(&W[1], zero, 1);
    GDR_CHECK(gdr_rma_active_start_test(&W[0], one, 1, &yes) == GDR_RMA_OK && !yes,
              "start(1): the post still in flight");
    drain();
    GDR_CHECK(gdr_rma_active_start_test(&W[0], one, 1, &yes) == GDR_RMA_OK && yes,
              "start(1) once rank 1's post has landed");
    GDR_CHECK(gdr_rma_active_start_test(&W[0], one, 1, &yes) == GDR_RMA_OK && !yes,
              "a post is used once");
    GDR_CHECK(gdr_rma_active_start(&W[0], two, 1) == GDR_RMA_OK,
              "start(2) later takes the post rank 2 sent early");

    /* rank 0 completes to 1 and 2; rank 3 to 2 */
    GDR_CHECK(gdr_rma_active_complete(&W[0], r12, 2) == GDR_RMA_OK, "complete(1, 2)");
    GDR_CHECK(gdr_rma_active_wait_test(&W[1], zero, 1, &yes) == GDR_RMA_OK && !yes,
              "wait(0): the complete in flight");
    drain();
    GDR_CHECK(gdr_rma_active_wait_test(&W[1], zero, 1, &yes) == GDR_RMA_OK && yes,
              "wait(0) at rank 1 once it landed");
    GDR_CHECK(gdr_rma_active_wait_test(&W[2], r03, 2, &yes) == GDR_RMA_OK && !yes,
              "wait(0, 3) at rank 2: rank 3 has not completed");
    int two_only[1] = { 2 };
    gdr_rma_active_complete(&W[3], two_only, 1);
    GDR_CHECK(gdr_rma_active_wait(&W[2], r03, 2) == GDR_RMA_OK,
              "wait(0, 3) returns once rank 3's complete landed");
    GDR_CHECK(gdr_rma_active_wait_test(&W[2], r03, 2, &yes) == GDR_RMA_OK && !yes,
              "completes are used once");

    /* a second epoch between 0 and 1 */
    gdr_rma_active_post(&W[1], zero, 1);
    GDR_CHECK(gdr_rma_active_start(&W[0], one, 1) == GDR_RMA_OK
              && gdr_rma_active_complete(&W[0], one, 1) == GDR_RMA_OK
              && gdr_rma_active_wait(&W[1], zero, 1) == GDR_RMA_OK
              && gdr_rma_ctl_read(&W[1], gdr_rma_ctl_complete_word(4, 0)) == 2
              && gdr_rma_ctl_read(&W[0], gdr_rma_ctl_post_word(1)) == 2,
              "second epoch: the words count 2 posts and 2 completes");

    int bad[1] = { 4 };
    GDR_CHECK(gdr_rma_active_post(&W[0], bad, 1) == GDR_RMA_ERROR,
              "a rank outside the window is refused");
    drain();
    free_ranks(4);

    gdr_rma_win_t off;
    gdr_rma_win_init(&off, &eng, NULL, 2, 0, 0, 1);
    GDR_CHECK(gdr_rma_active_post(&off, zero, 1) == GDR_RMA_ERROR
              && gdr_rma_active_barrier_begin(&off) == GDR_RMA_ERROR,
              "a window without control blocks is refused");
    gdr_rma_win_free(&off);
}

static int barrier_all(int n, int enter, int *done, int *writes)
{
    int posts = fk.posts;
    for (int r = 0; r < enter; r++)
        if (gdr_rma_active_barrier_begin(&W[r]) != GDR_RMA_OK)
            return -1;
    for (int round = 0; round < 20; round++) {
        drain();
        for (int r = 0; r < n; r++)
            if (!done[r] && W[r].active.barrier_running
                && gdr_rma_active_barrier_test(&W[r], &done[r]) != GDR_RMA_OK)
                return -1;
    }
    drain();
    *writes = fk.posts - posts;
    return 0;
}

static void test_barrier(int n)
{
    make_ranks(n);
    int done[MAXR] = { 0 }, writes = 0, any = 0, posts0 = fk.posts;
    barrier_all(n, n - 1, done, &writes);
    for (int r = 0; r < n; r++)
        any |= done[r];
    GDR_CHECK(!any, "%d ranks: with one rank not yet in the fence, nobody leaves it", n);
    int w2 = 0;
    if (gdr_rma_active_barrier_begin(&W[n - 1]) == GDR_RMA_OK)
        barrier_all(n, 0, done, &w2);
    int all = 1;
    for (int r = 0; r < n; r++)
        all &= done[r];
    GDR_CHECK(all && fk.posts - posts0 == 2 * n, "%d ranks: all leave once all entered; "
              "2 rounds, %d writes", n, fk.posts - posts0);
    memset(done, 0, sizeof(done));
    barrier_all(n, n, done, &writes);
    all = 1;
    for (int r = 0; r < n; r++)
        all &= done[r] && W[r].active.fences == 2;
    GDR_CHECK(all && writes == 2 * n, "%d ranks: a second fence", n);
    free_ranks(n);
}

static void test_barrier_one(void)
{
    make_ranks(1);
    int posts = fk.posts;
    GDR_CHECK(gdr_rma_active_barrier(&W[0]) == GDR_RMA_OK && fk.posts == posts,
              "one rank: the barrier returns at once, nothing written");
    free_ranks(1);
}

/* Every rank of n in the barrier as the fake queue completes one request at a time (the
 * queue pair's order): whether, when rank `partner` could leave, the 8 bytes of data had
 * landed at off in its window (*left: it did leave). */
static int leaves_after_landing(int n, int partner, const void *data, size_t off, int *left)
{
    int done[MAXR] = { 0 }, ok = 1;
    for (int steps = 0; steps < 100 && !done[partner]; steps++) {
        for (int r = 0; r < n; r++) {
            if (done[r] || gdr_rma_active_barrier_test(&W[r], &done[r]) != GDR_RMA_OK)
                continue;
            if (r == partner && done[r])
                ok &= memcmp(target_mem[partner] + off, data, 8) == 0;
        }
        if (fk.n > 0)
            complete_one();
    }
    *left = done[partner];
    for (int steps = 0; steps < 100; steps++) {        /* the others leave too */
        drain();
        for (int r = 0; r < n; r++)
            if (!done[r])
                gdr_rma_active_barrier_test(&W[r], &done[r]);
    }
    return ok;
}

static void test_fence_spares_first_partner(void)
{
    make_ranks(4);
    GDR_CHECK(gdr_rma_active_barrier_first(&W[0]) == 1 && gdr_rma_active_barrier_first(&W[3]) == 0,
              "4 ranks: the first round's partner is the next rank");
    uint64_t v = 0x1122334455667788u, w2 = 0x99aabbccddeeff00u;
    struct iovec at0 = one_piece(0, 8), at8 = one_piece(8, 8);
    gdr_rma_access_t to1 = {.kind = GDR_RMA_PUT,.target = 1,.tpieces = &at0,.ntpieces = 1,
        .tbytes = 8,.origin = {.addr = &v }
    }, to2 = {.kind = GDR_RMA_PUT,.target = 2,.tpieces = &at8,.ntpieces = 1,.tbytes = 8,
        .origin = {.addr = &w2 }
    };
    memset(target_mem[1], 0, 16);
    memset(target_mem[2], 0, 16);
    GDR_CHECK(run(&W[0], &to2, NULL) == GDR_RMA_OK && run(&W[0], &to1, NULL) == GDR_RMA_OK
              && gdr_rma_wait_all_except(&W[0].tracker, &eng, 1) == GDR_RMA_OK,
              "puts to ranks 2 and 1, then the wait sparing rank 1");
    GDR_CHECK(memcmp(target_mem[2] + 8, &w2, 8) == 0 && W[0].tracker.remote[2] == 0
              && W[0].tracker.remote[1] == 1 && fk.n == 1,
              "the put to rank 2 landed; the (inlined) put to rank 1 is still in flight");
    for (int r = 0; r < 4; r++)
        gdr_rma_active_barrier_begin(&W[r]);
    /* rank 3's first-round write lands before rank 0's put (another queue pair) */
    fk.lifo = 1;
    complete_one();
    fk.lifo = 0;
    int left = 0, posts = fk.posts;
    GDR_CHECK(gdr_rma_active_barrier_test(&W[0], &left) == GDR_RMA_OK && !left
              && W[0].active.round == 1 && fk.posts == posts,
              "rank 0 passed the first round, but writes its second only after the put to "
              "its first partner has completed");
    GDR_CHECK(leaves_after_landing(4, 1, &v, 0, &left) && left,
              "rank 1 leaves the fence only once the put posted before rank 0's barrier "
              "write has landed");
    GDR_CHECK(gdr_rma_wait_all(&W[0].tracker, &eng, 0) == GDR_RMA_OK
              && W[0].tracker.total_remote == 0, "then rank 0's wait finds it complete");

    /* a get from the partner is not waited for either: the barrier's write goes behind
     * it, flagged, and the get lands before that write acts there */
    uint64_t got = 0;
    memcpy(target_mem[1] + 16, &v, 8);
    struct iovec at16 = one_piece(16, 8);
    gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 1,.tpieces = &at16,.ntpieces = 1,
        .tbytes = 8,.result = {.addr = &got }
    };
    GDR_CHECK(run(&W[0], &get, NULL) == GDR_RMA_OK
              && gdr_rma_wait_all_except(&W[0].tracker, &eng, 1) == GDR_RMA_OK && got == 0
              && W[0].tracker.remote[1] == 1, "a get from the spared rank is not waited for");
    int flagged = fk.after_reads_posts;
    GDR_CHECK(gdr_rma_active_barrier_begin(&W[0]) == GDR_RMA_OK
              && fk.after_reads_posts == flagged + 1 && fk.n == 2,
              "rank 0's barrier write to rank 1 is posted behind the get, flagged");
    fk.lifo = 1;
    complete_one();
    fk.lifo = 0;
    GDR_CHECK(got == v && fk.n == 1, "completing newest first, the get still went first");
    drain();
    int done[4] = { 0 };
    left = 4;
    for (int r = 1; r < 4; r++)
        gdr_rma_active_barrier_begin(&W[r]);
    for (int pass = 0; pass < 100 && left > 0; pass++) {
        drain();
        left = 0;
        for (int r = 0; r < 4; r++) {
            if (!done[r])
                gdr_rma_active_barrier_test(&W[r], &done[r]);
            left += !done[r];
        }
    }
    GDR_CHECK(left == 0 && gdr_rma_wait_all(&W[0].tracker, &eng, 0) == GDR_RMA_OK,
              "and the barrier completes on every rank");
    GDR_CHECK(gdr_rma_wait_all_except(&W[0].tracker, &eng, -1) == GDR_RMA_OK,
              "no rank spared: a plain wait");
    free_ranks(4);
    make_ranks(1);
    GDR_CHECK(gdr_rma_active_barrier_first(&W[0]) == -1, "one rank: no partner");
    free_ranks(1);
}

static void test_notice_after_reads(void)
{
    make_ranks(3);
    int one[1] = { 1 }, two[1] = { 2 }, zero[1] = { 0 }, yes = 0;
    uint64_t got = 0, v = 0x0102030405060708u;
    memcpy(target_mem[1] + 24, &v, 8);
    struct iovec at24 = one_piece(24, 8);
    gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 1,.tpieces = &at24,.ntpieces = 1,
        .tbytes = 8,.result = {.addr = &got }
    };
    int flagged = fk.after_reads_posts;
    GDR_CHECK(gdr_rma_active_complete(&W[0], two, 1) == GDR_RMA_OK
              && fk.after_reads_posts == flagged, "a notice to a rank with nothing in flight: "
              "not flagged");
    drain();
    GDR_CHECK(run(&W[0], &get, NULL) == GDR_RMA_OK
              && gdr_rma_active_complete(&W[0], one, 1) == GDR_RMA_OK
              && fk.after_reads_posts == flagged + 1 && fk.n == 2,
              "a get from rank 1 in flight: the complete notice posted at once, flagged");
    fk.lifo = 1;
    complete_one();
    fk.lifo = 0;
    GDR_CHECK(got == v && fk.n == 1
              && gdr_rma_active_wait_test(&W[1], zero, 1, &yes) == GDR_RMA_OK && !yes,
              "completing newest first, the get went first: rank 1 has not seen the notice");
    drain();
    GDR_CHECK(gdr_rma_active_wait_test(&W[1], zero, 1, &yes) == GDR_RMA_OK && yes,
              "then the notice lands");
    gdr_rma_wait_all(&W[0].tracker, &eng, 0);
    free_ranks(3);
}

int main(void)
{
    fk.inline_max = 8;
    test_pscw();
    test_barrier(4);
    test_barrier(3);
    test_barrier_one();
    test_fence_spares_first_partner();
    test_notice_after_reads();
    return gdr_unit_finish();
}
