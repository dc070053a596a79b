/* Notified RMA's bookkeeping: counters are range-checked per target with a sentence
 * naming the index and the count, counters start at 0 and read back what was stored,
 * and a notification leaves only once its operation is done, in the order started. */
#include <stdint.h>
#include <string.h>
#include "gdr_unit.h"
#include "common/gdr_status.h"
#include "rma/gdr_rma_notify.h"

/* An operation is done when its flag is set; sending records (target, idx) in order. */
typedef struct {
    int sent_target[64], sent_idx[64], nsent;
    int fail_at;                /* the send with this number fails (-1: none) */
} log_t;

static int op_done(void *ctx, void *op)
{
    (void) ctx;
    return *(int *) op;
}

static int op_send(void *ctx, void *op, int target, int idx)
{
    log_t *l = ctx;
    (void) op;
    if (l->nsent == l->fail_at) {
        l->fail_at = -1;
        return 7;
    }
    l->sent_target[l->nsent] = target;
    l->sent_idx[l->nsent++] = idx;
    return 0;
}

static void check_ranges(void)
{
    gdr_rma_notify_t t;
    uint64_t mine[3] = { 11, 22, 33 };  /* garbage that init must clear */
    int counts[3] = { 2, 0, 3 };
    char why[200];
    GDR_CHECK(gdr_rma_notify_init(&t, 3, counts, 2, mine) == GDR_STATUS_OK, "init");
    GDR_CHECK(mine[0] == 0 && mine[1] == 0 && mine[2] == 0, "counters start at 0");
    GDR_CHECK(gdr_rma_notify_check(&t, 0, 1, why, sizeof(why)) == GDR_STATUS_OK,
              "last counter of rank 0");
    GDR_CHECK(gdr_rma_notify_check(&t, 0, 2, why, sizeof(why)) == GDR_STATUS_ERROR
              && strstr(why, "notification_idx 2") && strstr(why, "rank 0's 2"),
              "one past rank 0's counters: %s", why);
    GDR_CHECK(gdr_rma_notify_check(&t, 1, 0, why, sizeof(why)) == GDR_STATUS_ERROR
              && strstr(why, "rank 1 attached no"), "a rank with no counters: %s", why);
    GDR_CHECK(gdr_rma_notify_check(&t, 2, -1, why, sizeof(why)) == GDR_STATUS_ERROR,
              "a negative index");
    GDR_CHECK(gdr_rma_notify_check(&t, 3, 0, why, sizeof(why)) == GDR_STATUS_ERROR
              && strstr(why, "rank 3"), "a rank outside the group: %s", why);
    /* counts are copied: the caller's array may go */
    counts[0] = 0;
    GDR_CHECK(gdr_rma_notify_check(&t, 0, 0, why, sizeof(why)) == GDR_STATUS_OK,
              "counts copied at init");
    gdr_rma_notify_store(&t, 1, 5);
    GDR_CHECK(gdr_rma_notify_load(&t, 1) == 5 && mine[1] == 5, "store then load");
    __atomic_fetch_add(&mine[1], 1, __ATOMIC_ACQ_REL);  /* as a notification lands */
    GDR_CHECK(gdr_rma_notify_load(&t, 1) == 6, "load sees an increment");
    mine[2] = UINT64_MAX;
    __atomic_fetch_add(&mine[2], 1, __ATOMIC_ACQ_REL);
    GDR_CHECK(gdr_rma_notify_load(&t, 2) == 0, "a counter wraps modulo 2^64");
    gdr_rma_notify_fini(&t);

    int bad[2] = { 1, -1 };
    GDR_CHECK(gdr_rma_notify_init(&t, 2, bad, 0, mine) == GDR_STATUS_ERROR,
              "a negative count is refused");
    GDR_CHECK(gdr_rma_notify_init(&t, 2, counts, 2, mine) == GDR_STATUS_ERROR,
              "me outside the group is refused");
}

static void check_sweep(void)
{
    gdr_rma_notify_t t;
    uint64_t mine[1];
    int counts[3] = { 1, 4, 4 };
    GDR_CHECK(gdr_rma_notify_init(&t, 3, counts, 0, mine) == GDR_STATUS_OK, "init");
    /* operation i goes to rank 1 + i % 2, counter i % 4; more than the first allocation */
    int done[40] = { 0 }, added = 0;
    for (int i = 0; i < 40; i++)
        added += gdr_rma_notify_add(&t, &done[i], 1 + (i % 2), i % 4) == GDR_STATUS_OK;
    GDR_CHECK(added == 40, "40 added");
    GDR_CHECK(gdr_rma_notify_pending(&t, -1) == 40 && gdr_rma_notify_pending(&t, 1) == 20
              && gdr_rma_notify_pending(&t, 0) == 0, "pending per target");
    log_t l = {.fail_at = -1 };
    size_t sent = 0;
    GDR_CHECK(gdr_rma_notify_sweep(&t, -1, op_done, op_send, &l, &sent) == 0 && sent == 0,
              "nothing done, nothing sent");
    done[5] = done[2] = done[3] = 1;
    GDR_CHECK(gdr_rma_notify_sweep(&t, 1, op_done, op_send, &l, &sent) == 0 && sent == 1
              && l.sent_target[0] == 1 && l.sent_idx[0] == 2,
              "a sweep of rank 1 sends only its done operation (#2)");
    GDR_CHECK(gdr_rma_notify_sweep(&t, -1, op_done, op_send, &l, &sent) == 0 && sent == 3
              && l.sent_target[1] == 2 && l.sent_idx[1] == 3 && l.sent_idx[2] == 1,
              "then #3 and #5, in the order started");
    GDR_CHECK(gdr_rma_notify_pending(&t, -1) == 37, "sent ones are forgotten");
    for (int i = 0; i < 40; i++)
        done[i] = 1;
    l.nsent = 0;
    l.fail_at = 2;
    GDR_CHECK(gdr_rma_notify_sweep(&t, -1, op_done, op_send, &l, &sent) == 7,
              "a failed send is reported");
    GDR_CHECK(gdr_rma_notify_pending(&t, -1) == 34, "the sweep stops there, the failed "
              "one forgotten: %zu left", gdr_rma_notify_pending(&t, -1));
    l.nsent = 0;
    GDR_CHECK(gdr_rma_notify_sweep(&t, -1, op_done, op_send, &l, &sent) == 0
              && gdr_rma_notify_pending(&t, -1) == 0 && l.nsent == 34, "then the rest");
    int ordered = 1;
    for (int k = 0; k < l.nsent; k++)
        ordered &= l.sent_idx[k] == (6 + k) % 4 && l.sent_target[k] == 1 + (6 + k) % 2;
    GDR_CHECK(ordered, "what stayed pending leaves in the order started (#6 to #39)");
    gdr_rma_notify_fini(&t);
}

int main(void)
{
    check_ranges();
    check_sweep();
    return gdr_unit_finish();
}
