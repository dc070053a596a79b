/* Notified RMA (docs/notified-rma.md): MPIX_Put_notify / MPIX_Get_notify and the
 * counters of MPIX_Win_notify_attach, on create, allocate and dynamic windows.
 *  - a producer/consumer ring: each rank streams messages into slots of its right
 *    neighbour's window and reads its left neighbour's once the slot's counter says so
 *    (no flush completes anything at a target: the consumer only polls its counter),
 *    checking every value; slots are reused once the consumer's 0-element notification (a credit)
 *    came back;
 *  - every rank notifying one counter of rank 0: the count is exact after unlock_all;
 *  - flush implies applied: after MPI_Win_flush a message tells the target, whose
 *    counter must already show the notification;
 *  - Get_notify: the target overwrites the region once its counter says it was read;
 *    the origin's data (checked after its flush) is the old one;
 *  - 0-element notifications, MPI_PROC_NULL, the _c form, set_value / get_value;
 *  - errors: an index outside the target's count (MPI_ERR_ARG, nothing sent), a
 *    target with no counters, no counters attached, outside an epoch
 *    (MPI_ERR_RMA_SYNC), attach twice (MPI_ERR_RMA_ATTACH), a negative value;
 *  - ranks attach different counts (0 included); detach, then attach again;
 *  - every synchronisation mode: lock, lock_all, fence, PSCW; MPI_Win_free detaches.
 * With GDR_TEST_EXPECT_NATIVE=1 (maint/rxe, one rank per guest, NOLOCAL) it also asserts,
 * through gdr's MPI_T counters, that the notifications of the many-to-one phase went as
 * the NIC's atomics (gdr_rma_acc_native: one per notification). */
#include "gdr_mpi_test.h"

enum {
    SLOTS = 4,                  /* ring slots per rank */
    SLOT_INTS = 4096,           /* 16 KiB a message */
    MESSAGES = 40,
    FROM_ALL = 25,              /* notifications every rank sends to rank 0 */
    GET_INTS = 512
};

/* counters every rank attaches in the main phases: one per ring slot (notifications
 * are applied in no particular order, so a counter says how many, not which) */
enum { C_CREDIT, C_ALL, C_GET, C_SYNC, C_ZERO, C_SLOT0, NCOUNTERS = C_SLOT0 + SLOTS };

static int rank, nranks, right, left, expect_native;
static MPI_T_pvar_session session;

static MPI_Count value(MPI_Win win, int idx)
{
    MPI_Count v = -1;
    GDR_CHECK_MPI(MPIX_Win_notify_get_value(win, idx, &v));
    return v;
}

/* Polls counter idx until it reaches at least want (progress is get_value's). */
static MPI_Count wait_for(MPI_Win win, int idx, MPI_Count want)
{
    MPI_Count v;
    double t0 = MPI_Wtime();
    while ((v = value(win, idx)) < want) {
        if (MPI_Wtime() - t0 > 60) {
            gdr_test_fail("counter %d stuck at %lld, waiting for %lld", idx, (long long) v,
                          (long long) want);
            return v;
        }
    }
    return v;
}

static int msg_val(int from, int msg, int i)
{
    return from * 1000003 + msg * 4099 + i;
}

/* The ring: slots at byte 0 of every window; no flush that completes at the target
 * anywhere (the producer's flush_local only lets it refill an origin buffer). */
static void ring(gdr_win *w)
{
    int *srcs = malloc(sizeof(int) * SLOT_INTS * SLOTS);
    int *mine = w->base;
    gdr_test_set_context("ring win=%s", gdr_win_kind_name(w->kind));
    GDR_CHECK_MPI(MPI_Win_lock_all(0, w->win));
    for (int m = 0; m < MESSAGES; m++) {
        /* produce message m into the right neighbour's slot m % SLOTS */
        int *src = srcs + (m % SLOTS) * SLOT_INTS;
        if (m >= SLOTS) {
            wait_for(w->win, C_CREDIT, m - SLOTS + 1);
            GDR_CHECK_MPI(MPI_Win_flush_local(right, w->win));  /* src may be refilled */
        }
        int n = (m % 3 == 0) ? SLOT_INTS : 17 + m;      /* large and small messages */
        for (int i = 0; i < n; i++)
            src[i] = msg_val(rank, m, i);
        MPI_Aint disp = gdr_win_disp(w, right, (MPI_Aint) (m % SLOTS) * SLOT_INTS * 4);
        GDR_CHECK_MPI(MPIX_Put_notify(src, n, MPI_INT, right, disp, n, MPI_INT,
                                      C_SLOT0 + m % SLOTS, w->win));
        /* consume message m from the left neighbour: its slot's counter counts it */
        wait_for(w->win, C_SLOT0 + m % SLOTS, m / SLOTS + 1);
        const int *slot = mine + (m % SLOTS) * SLOT_INTS;
        long bad = 0;
        for (int i = 0; i < n; i++)
            if (slot[i] != msg_val(left, m, i) && bad++ < 3)
                gdr_check_long("slot", i, msg_val(left, m, i), slot[i]);
        if (bad > 3)
            gdr_test_fail("message %d: %ld values wrong", m, bad);
        /* the slot is free again: a pure notification back */
        GDR_CHECK_MPI(MPIX_Put_notify(NULL, 0, MPI_INT, left, gdr_win_disp(w, left, 0), 0,
                                      MPI_INT, C_CREDIT, w->win));
    }
    GDR_CHECK_MPI(MPI_Win_unlock_all(w->win));
    for (int k = 0; k < SLOTS; k++)
        gdr_check_long("slot counter", k, (MESSAGES - k + SLOTS - 1) / SLOTS,
                       value(w->win, C_SLOT0 + k));
    MPI_Barrier(MPI_COMM_WORLD);
    gdr_check_long("credit counter", 0, MESSAGES, value(w->win, C_CREDIT));
    free(srcs);
}

/* Every rank notifies rank 0's counter C_ALL FROM_ALL times (Puts and Gets); exact after
 * unlock_all and a barrier, with no waiting. */
static void many_to_one(gdr_win *w)
{
    int v[4] = { rank, rank, rank, rank }, back[4];
    gdr_test_set_context("many-to-one win=%s", gdr_win_kind_name(w->kind));
    MPI_Count before = rank == 0 ? value(w->win, C_ALL) : 0;
    unsigned long long atomics = expect_native ? gdr_pvar_value(session, "gdr_rma_acc_native")
        : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    GDR_CHECK_MPI(MPI_Win_lock_all(0, w->win));
    for (int k = 0; k < FROM_ALL; k++) {
        MPI_Aint disp = gdr_win_disp(w, 0, (MPI_Aint) (SLOTS * SLOT_INTS + 16 * rank) * 4);
        if (k % 5 == 4)
            GDR_CHECK_MPI(MPIX_Get_notify(back, 4, MPI_INT, 0, disp, 4, MPI_INT, C_ALL,
                                          w->win));
        else
            GDR_CHECK_MPI(MPIX_Put_notify(v, 4, MPI_INT, 0, disp, 4, MPI_INT, C_ALL,
                                          w->win));
    }
    GDR_CHECK_MPI(MPI_Win_unlock_all(w->win));
    if (expect_native)
        gdr_check_long("notifications sent as NIC atomics (gdr_rma_acc_native)", 0, FROM_ALL,
                       (long long) (gdr_pvar_value(session, "gdr_rma_acc_native") - atomics));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        gdr_check_long("counter of rank 0 (no wait)", 0, before + (long long) FROM_ALL * nranks,
                       value(w->win, C_ALL));
}

/* MPI_Win_flush returns after the notification was applied: the target, told by a
 * message, finds it counted without waiting. */
static void flush_implies_applied(gdr_win *w)
{
    int x = 7;
    gdr_test_set_context("flush-implies-applied win=%s", gdr_win_kind_name(w->kind));
    MPI_Count before = value(w->win, C_SYNC);
    MPI_Barrier(MPI_COMM_WORLD);
    GDR_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w->win));
    GDR_CHECK_MPI(MPIX_Put_notify(&x, 1, MPI_INT, right,
                                  gdr_win_disp(w, right, (SLOTS * SLOT_INTS + 1000) * 4), 1,
                                  MPI_INT, C_SYNC, w->win));
    GDR_CHECK_MPI(MPI_Win_flush(right, w->win));
    GDR_CHECK_MPI(MPI_Send(&x, 1, MPI_INT, right, 5, MPI_COMM_WORLD));
    GDR_CHECK_MPI(MPI_Recv(&x, 1, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    gdr_check_long("counter after the origin's flush", 0, before + 1, value(w->win, C_SYNC));
    GDR_CHECK_MPI(MPI_Win_unlock(right, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Get_notify: the right neighbour reads this rank's region; this rank overwrites it once
 * counted, the reader's data (after its flush) is the old one. */
static void get_notify(gdr_win *w)
{
    int *region = (int *) w->base + SLOTS * SLOT_INTS + 2048;
    int *got = malloc(sizeof(int) * GET_INTS);
    gdr_test_set_context("get-notify win=%s", gdr_win_kind_name(w->kind));
    MPI_Count before = value(w->win, C_GET);
    GDR_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win));
    for (int i = 0; i < GET_INTS; i++)
        region[i] = msg_val(rank, 999, i);
    GDR_CHECK_MPI(MPI_Win_unlock(rank, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    GDR_CHECK_MPI(MPI_Win_lock_all(0, w->win));
    GDR_CHECK_MPI(MPIX_Get_notify(got, GET_INTS, MPI_INT, left,
                                  gdr_win_disp(w, left, (SLOTS * SLOT_INTS + 2048) * 4),
                                  GET_INTS, MPI_INT, C_GET, w->win));
    /* the reader of this rank's region is the right neighbour */
    wait_for(w->win, C_GET, before + 1);
    for (int i = 0; i < GET_INTS; i++)
        region[i] = -1;         /* allowed now: the read is done */
    GDR_CHECK_MPI(MPI_Win_flush(left, w->win));
    long bad = 0;
    for (int i = 0; i < GET_INTS; i++)
        if (got[i] != msg_val(left, 999, i) && bad++ < 3)
            gdr_check_long("got", i, msg_val(left, 999, i), got[i]);
    GDR_CHECK_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    free(got);
}

/* 0 elements notify; MPI_PROC_NULL does nothing; the large-count form. */
static void zero_and_null(gdr_win *w)
{
    int x = 3;
    gdr_test_set_context("zero/proc_null/_c win=%s", gdr_win_kind_name(w->kind));
    MPI_Count before = value(w->win, C_ZERO);
    MPI_Barrier(MPI_COMM_WORLD);
    GDR_CHECK_MPI(MPI_Win_lock_all(0, w->win));
    GDR_CHECK_MPI(MPIX_Put_notify(&x, 0, MPI_INT, right, gdr_win_disp(w, right, 0), 0,
                                  MPI_INT, C_ZERO, w->win));
    GDR_CHECK_MPI(MPIX_Get_notify(&x, 0, MPI_INT, right, gdr_win_disp(w, right, 0), 0,
                                  MPI_INT, C_ZERO, w->win));
    GDR_CHECK_MPI(MPIX_Put_notify(&x, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, C_ZERO,
                                  w->win));
    GDR_CHECK_MPI(MPIX_Put_notify_c(&x, 1, MPI_INT, right,
                                    gdr_win_disp(w, right, (SLOTS * SLOT_INTS + 1001) * 4),
                                    1, MPI_INT, C_ZERO, w->win));
    GDR_CHECK_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    gdr_check_long("counter after 2 empty and 1 _c notification", 0, before + 3,
                   value(w->win, C_ZERO));
    /* set_value / get_value on this rank's own counter */
    GDR_CHECK_MPI(MPIX_Win_notify_set_value(w->win, C_ZERO, 42));
    gdr_check_long("get after set", 0, 42, value(w->win, C_ZERO));
    GDR_CHECK_MPI(MPIX_Win_notify_set_value(w->win, C_ZERO, 0));
    gdr_check_long("get after reset", 0, 0, value(w->win, C_ZERO));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Errors, each with nothing sent. */
static void errors(gdr_win *w)
{
    int x = 1;
    MPI_Count v;
    gdr_test_set_context("errors win=%s", gdr_win_kind_name(w->kind));
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    MPI_Count before = value(w->win, C_SLOT0);
    MPI_Aint d = gdr_win_disp(w, right, 0);
    gdr_check_class("Put_notify outside an epoch",
                    MPIX_Put_notify(&x, 1, MPI_INT, right, d, 1, MPI_INT, C_SLOT0, w->win),
                    MPI_ERR_RMA_SYNC);
    GDR_CHECK_MPI(MPI_Win_lock_all(0, w->win));
    gdr_check_class("index = the target's count",
                    MPIX_Put_notify(&x, 1, MPI_INT, right, d, 1, MPI_INT, NCOUNTERS, w->win),
                    MPI_ERR_ARG);
    gdr_check_class("negative index",
                    MPIX_Get_notify(&x, 1, MPI_INT, right, d, 1, MPI_INT, -1, w->win),
                    MPI_ERR_ARG);
    GDR_CHECK_MPI(MPI_Win_unlock_all(w->win));
    gdr_check_class("attach twice", MPIX_Win_notify_attach(w->win, 2, MPI_INFO_NULL),
                    MPI_ERR_RMA_ATTACH);
    gdr_check_class("set_value negative", MPIX_Win_notify_set_value(w->win, 0, -5),
                    MPI_ERR_ARG);
    gdr_check_class("get_value outside this rank's counters",
                    MPIX_Win_notify_get_value(w->win, NCOUNTERS, &v), MPI_ERR_ARG);
    MPI_Barrier(MPI_COMM_WORLD);
    gdr_check_long("counter after refused notifications", 0, before, value(w->win, C_SLOT0));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_ARE_FATAL);
}

/* One notified Put to the right neighbour in each synchronisation mode, counted (and
 * its data there) once the closing call and a barrier are over. */
static void sync_modes(gdr_win *w)
{
    static const char *const modes[] = { "lock", "lock_all", "fence", "pscw" };
    MPI_Group lg, rg;
    gdr_ring_groups(&lg, &rg);
    for (int m = 0; m < 4; m++) {
        int x = 100 + m;
        gdr_test_set_context("sync=%s win=%s", modes[m], gdr_win_kind_name(w->kind));
        MPI_Count before = value(w->win, C_SYNC);
        MPI_Aint off = (SLOTS * SLOT_INTS + 1002) * 4;
        MPI_Aint d = gdr_win_disp(w, right, off);
        MPI_Barrier(MPI_COMM_WORLD);
        switch (m) {
        case 0:
            GDR_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w->win));
            GDR_CHECK_MPI(MPIX_Put_notify(&x, 1, MPI_INT, right, d, 1, MPI_INT, C_SYNC,
                                          w->win));
            GDR_CHECK_MPI(MPI_Win_unlock(right, w->win));
            break;
        case 1:
            GDR_CHECK_MPI(MPI_Win_lock_all(0, w->win));
            GDR_CHECK_MPI(MPIX_Put_notify(&x, 1, MPI_INT, right, d, 1, MPI_INT, C_SYNC,
                                          w->win));
            GDR_CHECK_MPI(MPI_Win_unlock_all(w->win));
            break;
        case 2:
            GDR_CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win));
            GDR_CHECK_MPI(MPIX_Put_notify(&x, 1, MPI_INT, right, d, 1, MPI_INT, C_SYNC,
                                          w->win));
            GDR_CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
            break;
        case 3:
            GDR_CHECK_MPI(MPI_Win_post(lg, 0, w->win));
            GDR_CHECK_MPI(MPI_Win_start(rg, 0, w->win));
            GDR_CHECK_MPI(MPIX_Put_notify(&x, 1, MPI_INT, right, d, 1, MPI_INT, C_SYNC,
                                          w->win));
            GDR_CHECK_MPI(MPI_Win_complete(w->win));
            GDR_CHECK_MPI(MPI_Win_wait(w->win));
            break;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        gdr_check_long("counter", m, before + 1, value(w->win, C_SYNC));
        GDR_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win));
        gdr_check_long("data", m, 100 + m, ((int *) w->base)[off / 4]);
        GDR_CHECK_MPI(MPI_Win_unlock(rank, w->win));
    }
    gdr_ring_groups_free(&lg, &rg);
}

/* Ranks attach different counts (rank 1 none); after a detach, counters start at 0. */
static void counts_and_reattach(gdr_win *w)
{
    int x = 5, mine = rank == 1 ? 0 : 2 + rank;
    gdr_test_set_context("detach/attach win=%s", gdr_win_kind_name(w->kind));
    GDR_CHECK_MPI(MPIX_Win_notify_detach(w->win));
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    gdr_check_class("detach twice", MPIX_Win_notify_detach(w->win), MPI_ERR_RMA_ATTACH);
    GDR_CHECK_MPI(MPI_Win_lock_all(0, w->win));
    gdr_check_class("Put_notify with no counters attached",
                    MPIX_Put_notify(&x, 1, MPI_INT, right, gdr_win_disp(w, right, 0), 1,
                                    MPI_INT, 0, w->win), MPI_ERR_ARG);
    GDR_CHECK_MPI(MPI_Win_unlock_all(w->win));
    GDR_CHECK_MPI(MPIX_Win_notify_attach(w->win, mine, MPI_INFO_NULL));
    int right_count = right == 1 ? 0 : 2 + right;
    GDR_CHECK_MPI(MPI_Win_lock_all(0, w->win));
    if (right_count == 0)
        gdr_check_class("a target that attached no counters",
                        MPIX_Put_notify(&x, 1, MPI_INT, right, gdr_win_disp(w, right, 0), 1,
                                        MPI_INT, 0, w->win), MPI_ERR_ARG);
    else {
        gdr_check_class("index = the target's own count",
                        MPIX_Put_notify(&x, 1, MPI_INT, right, gdr_win_disp(w, right, 0), 1,
                                        MPI_INT, right_count, w->win), MPI_ERR_ARG);
        GDR_CHECK_MPI(MPIX_Put_notify(&x, 1, MPI_INT, right, gdr_win_disp(w, right, 0), 1,
                                      MPI_INT, right_count - 1, w->win));
    }
    GDR_CHECK_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < mine; i++)
        gdr_check_long("counter after re-attach", i, i == mine - 1 ? 1 : 0,
                       value(w->win, i));
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_ARE_FATAL);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    expect_native = gdr_test_expect_native();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    right = (rank + 1) % nranks;
    left = (rank + nranks - 1) % nranks;
    for (int k = 0; k < GDR_WIN_NKINDS; k++) {
        gdr_win w;
        gdr_win_open(&w, (gdr_win_kind) k, (SLOTS * SLOT_INTS + 4096) * 4, 4, MPI_COMM_WORLD);
        GDR_CHECK_MPI(MPIX_Win_notify_attach(w.win, NCOUNTERS, MPI_INFO_NULL));
        gdr_test_set_context("attach win=%s", gdr_win_kind_name(w.kind));
        for (int i = 0; i < NCOUNTERS; i++)
            gdr_check_long("fresh counter", i, 0, value(w.win, i));
        MPI_Barrier(MPI_COMM_WORLD);    /* before anyone notifies */
        ring(&w);
        many_to_one(&w);
        flush_implies_applied(&w);
        get_notify(&w);
        zero_and_null(&w);
        errors(&w);
        sync_modes(&w);
        counts_and_reattach(&w);
        gdr_win_close(&w);      /* MPI_Win_free detaches the counters */
    }
    gdr_test_finish();
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
