/* Dynamic windows' regions across epochs (gdr_rma_regions.h): three ranks' windows in this
 * process over the fake transport, the target's answers made by its own regions
 * (gdr_rma_regions_answer) and handed to the fake host's query.
 * - with control blocks, an origin keeps a learned region across a flush, a fence-like
 *   wait and a PSCW complete: one question;
 * - a detach writes the target's count of detaches into the detach word of the ranks that
 *   asked it, and of no other, and is complete when detach returns;
 * - after it, the origin asks again: a smaller region attached at the same address
 *   refuses an access the old one held;
 * - an answer given before a detach but learned after its announcement is stale at once;
 * - a detach of an address never attached tells nobody;
 * - without control blocks, a flush forgets and a detach tells nobody. */
#include <stdlib.h>
#include <string.h>
#include "gdr_unit.h"
#include "fake_engine.h"

#define N 3
static gdr_rma_win_t W[N];
static uint8_t buf[256];

static void make_ranks(int with_ctl)
{
    gdr_rma_card_t cards[N];
    char why[200];
    for (int r = 0; r < N; r++) {
        if (gdr_rma_win_init(&W[r], &eng, NULL, N, r, 1, 1) != GDR_RMA_OK)
            exit(1);
        for (int i = 0; i < N; i++)
            gdr_rma_win_set_peer(&W[r], i, 10 + i);
        gdr_rma_ctl_configure(&W[r].ctl, with_ctl);
        gdr_rma_win_expose(&W[r], NULL, 0, 1, 0, &cards[r], why, sizeof(why));
    }
    for (int r = 0; r < N; r++)
        for (int i = 0; i < N; i++)
            gdr_rma_win_set_card(&W[r], i, &cards[i]);
}

static void free_ranks(void)
{
    for (int r = 0; r < N; r++)
        gdr_rma_win_free(&W[r]);
}

static void attach(int rank, uint64_t size)
{
    char why[200];
    if (gdr_rma_regions_attach(&W[rank].regions, &eng, buf, size, gdr_rma_win_access(&W[rank]),
                               0, why, sizeof(why)) != 0)
        exit(1);
}

/* rank 0 looks up [at, at + len) at rank 1, whose answer is `answer` if it must ask */
static int lookup(uint64_t at, uint64_t len, int *not_attached)
{
    uint32_t rkey;
    return gdr_rma_regions_lookup(&W[0].regions, &eng, NULL, 0, 1, at, len, &rkey, not_attached);
}

static void test_announced(void)
{
    make_ranks(1);
    uint64_t base = (uint64_t) (uintptr_t) buf;
    int na = 0;
    GDR_CHECK(W[0].regions.announced != NULL && W[1].regions.announced != NULL,
              "control blocks: detaches are announced on a dynamic window");
    attach(1, 256);
    fk.queries = 0;
    fk.region = gdr_rma_regions_answer(&W[1].regions, 0, base);
    GDR_CHECK(lookup(base + 100, 8, &na) == GDR_RMA_OK && fk.queries == 1,
              "the first access asks the target");
    GDR_CHECK(gdr_rma_wait_target(&W[0].tracker, &eng, 1, 0) == GDR_RMA_OK
              && gdr_rma_wait_all(&W[0].tracker, &eng, 0) == GDR_RMA_OK
              && lookup(base + 100, 8, &na) == GDR_RMA_OK && fk.queries == 1,
              "after a flush and a fence-like wait the region is still known: no question");
    int one[1] = { 1 };
    GDR_CHECK(gdr_rma_active_complete(&W[0], one, 1) == GDR_RMA_OK
              && lookup(base + 100, 8, &na) == GDR_RMA_OK && fk.queries == 1,
              "... and after a PSCW complete to the target: no question");
    while (fk.n > 0)
        complete_one();

    int posts = fk.posts;
    GDR_CHECK(gdr_rma_win_detach(&W[1], base) == GDR_RMA_OK && fk.posts == posts + 1 && fk.n == 0,
              "detach: one write (to the one rank that asked), complete when detach returns");
    GDR_CHECK(gdr_rma_ctl_read(&W[0], gdr_rma_ctl_detach_word(N, 1)) == 1
              && gdr_rma_ctl_read(&W[2], gdr_rma_ctl_detach_word(N, 1)) == 0
              && gdr_rma_ctl_read(&W[1], gdr_rma_ctl_detach_word(N, 1)) == 0,
              "detach: the count landed in rank 0's word for rank 1, nowhere else");

    attach(1, 64);      /* smaller, same address */
    fk.region = gdr_rma_regions_answer(&W[1].regions, 0, base);
    GDR_CHECK(lookup(base + 100, 8, &na) == GDR_RMA_ERROR && na == 1 && fk.queries == 2,
              "after the detach the origin asks again; the smaller region refuses +100");
    GDR_CHECK(lookup(base + 8, 8, &na) == GDR_RMA_OK && fk.queries == 3
              && lookup(base + 8, 8, &na) == GDR_RMA_OK && fk.queries == 3,
              "... holds +8, learned once");

    /* an answer from before a detach, arriving after its announcement */
    gdr_rma_region_reply_t early = gdr_rma_regions_answer(&W[1].regions, 0, base);
    GDR_CHECK(gdr_rma_win_detach(&W[1], base) == GDR_RMA_OK
              && gdr_rma_ctl_read(&W[0], gdr_rma_ctl_detach_word(N, 1)) == 2,
              "second detach: rank 0's word says 2");
    attach(1, 256);
    gdr_rma_regions_forget(&W[0].regions, -1);
    fk.region = early;
    GDR_CHECK(lookup(base + 8, 8, &na) == GDR_RMA_OK && fk.queries == 4,
              "the early answer (detaches 1) is learned");
    fk.region = gdr_rma_regions_answer(&W[1].regions, 0, base);
    GDR_CHECK(lookup(base + 8, 8, &na) == GDR_RMA_OK && fk.queries == 5
              && lookup(base + 100, 8, &na) == GDR_RMA_OK && fk.queries == 5,
              "... and is stale at its next use: asked again, the new region learned");

    posts = fk.posts;
    GDR_CHECK(gdr_rma_win_detach(&W[1], base + 1) == GDR_RMA_OK && fk.posts == posts
              && gdr_rma_ctl_read(&W[0], gdr_rma_ctl_detach_word(N, 1)) == 2,
              "a detach of an address never attached tells nobody");
    gdr_rma_win_detach(&W[1], base);
    free_ranks();
}

static void test_without_ctl(void)
{
    make_ranks(0);
    uint64_t base = (uint64_t) (uintptr_t) buf;
    int na = 0;
    GDR_CHECK(W[0].regions.announced == NULL, "no control blocks: nothing is announced");
    attach(1, 256);
    fk.queries = 0;
    fk.region = gdr_rma_regions_answer(&W[1].regions, 0, base);
    GDR_CHECK(lookup(base, 8, &na) == GDR_RMA_OK && fk.queries == 1
              && gdr_rma_wait_target(&W[0].tracker, &eng, 1, 0) == GDR_RMA_OK
              && lookup(base, 8, &na) == GDR_RMA_OK && fk.queries == 2,
              "no control blocks: a flush forgets, the next access asks again");
    int posts = fk.posts;
    GDR_CHECK(gdr_rma_win_detach(&W[1], base) == GDR_RMA_OK && fk.posts == posts,
              "no control blocks: a detach writes nothing");
    free_ranks();
}

int main(void)
{
    fk.inline_max = 8;     /* the control words go inline, as over verbs */
    test_announced();
    test_without_ctl();
    return gdr_unit_finish();
}
