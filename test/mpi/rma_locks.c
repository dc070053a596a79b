/* Window synchronisation, values checked (issue 22).  Over Soft-RoCE, where every rank is its
 * own node, gdr takes locks by remote atomics on a lock word and runs fence and PSCW by RDMA
 * writes into control blocks (MPIR_CVAR_CH4_GDR_NATIVE_SYNC); with GDR_TEST_EXPECT_NATIVE=1
 * the MPI_T counters gdr_rma_lock_atomics and gdr_rma_sync_writes must show it.
 * - exclusive excludes: every rank, its own window's owner included, adds 1 to a counter at
 *   rank 0 by Get + flush + Put under MPI_LOCK_EXCLUSIVE, GDR_TEST_LOCK_ROUNDS times
 *   (default 10000): the total is exact (two ranks inside at once lose an update);
 * - shared locks overlap: rank 1 holds a shared lock on rank 0 (a Get done under it)
 *   while rank 0 takes a shared lock on its own window and reads; were shared locks
 *   exclusive, the two would wait for each other for ever (the run's timeout fails it);
 * - an exclusive lock waits for a shared one: rank 1 writes a mark under its shared lock
 *   after rank 0 has asked for an exclusive lock on its own window, which rank 0 gets only
 *   after rank 1's unlock, and then sees the mark;
 * - MPI_MODE_NOCHECK and an epoch that moves nothing cost no lock-word atomics; an epoch
 *   with one Put costs two (take and give back) when native;
 * - lock_all with a Put to every rank and a Fetch_and_op: values;
 * - fence epochs (Puts around a ring, 50 rounds) and PSCW epochs with each rank's
 *   neighbours (Puts, 50 rounds, some posts early): values every round; natively, each
 *   fence and each PSCW epoch writes control blocks and sends no message. */
#define _POSIX_C_SOURCE 200809L     /* nanosleep */
#include <time.h>
#include "gdr_mpi_test.h"

static int rank, nranks, expect_native;
static MPI_T_pvar_session session;

static unsigned long long counter(const char *name)
{
    unsigned long long v = 0;
    gdr_pvar_read(session, name, &v);
    return v;
}

static unsigned long long lock_atomics(void)
{
    return counter("gdr_rma_lock_atomics");
}

static void exclusive_counter(MPI_Win win, long *base)
{
    const char *e = getenv("GDR_TEST_LOCK_ROUNDS");
    long rounds = e != NULL && atol(e) > 0 ? atol(e) : 10000;
    gdr_test_set_context("exclusive locks, %ld increments per rank", rounds);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        base[0] = 0;
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < rounds; i++) {
        long v = -1;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        MPI_Win_flush(0, win);
        v++;
        MPI_Put(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        gdr_check_long("counter after every rank's increments", 0, rounds * nranks, base[0]);
        MPI_Win_unlock(0, win);
    }
}

static void shared_overlap(MPI_Win win, long *base)
{
    gdr_test_set_context("shared locks overlap");
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        base[1] = 41;
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long v = -1;
    if (rank == 1) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(&v, 1, MPI_LONG, 0, 1, 1, MPI_LONG, win);
        MPI_Win_flush(0, win);  /* the lock is held now */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);    /* rank 0 reads under its own shared lock */
        MPI_Win_unlock(0, win);
        gdr_check_long("rank 1's Get under its shared lock", 1, 41, v);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);   /* taken at once: its own window */
            MPI_Get(&v, 1, MPI_LONG, 0, 1, 1, MPI_LONG, win);
            MPI_Win_unlock(0, win);
            gdr_check_long("rank 0's Get under a shared lock rank 1 shares", 1, 41, v);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

static void exclusive_waits(MPI_Win win, long *base)
{
    gdr_test_set_context("an exclusive lock waits for a shared holder");
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        base[2] = 0;
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        long mark = 7, v;
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(&v, 1, MPI_LONG, 0, 2, 1, MPI_LONG, win);
        MPI_Win_flush(0, win);
        MPI_Barrier(MPI_COMM_WORLD);    /* rank 0 now asks for its exclusive lock */
        struct timespec pause = {.tv_sec = 0,.tv_nsec = 200 * 1000 * 1000 };
        nanosleep(&pause, NULL);
        MPI_Put(&mark, 1, MPI_LONG, 0, 2, 1, MPI_LONG, win);
        MPI_Win_unlock(0, win);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            gdr_check_long("the mark rank 1 wrote before its unlock", 2, 7, base[2]);
            MPI_Win_unlock(0, win);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void lock_traffic(MPI_Win win)
{
    gdr_test_set_context("lock-word atomics");
    int target = (rank + 1) % nranks;
    long one = 1;
    unsigned long long a0 = lock_atomics();
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, MPI_MODE_NOCHECK, win);
    MPI_Put(&one, 1, MPI_LONG, target, 8 + rank, 1, MPI_LONG, win);
    MPI_Win_unlock(target, win);
    gdr_check_long("atomics for a NOCHECK epoch", 0, 0, (long long) (lock_atomics() - a0));
    a0 = lock_atomics();
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    MPI_Win_unlock(target, win);
    gdr_check_long("atomics for an epoch that moves nothing", 0, 0,
                   (long long) (lock_atomics() - a0));
    a0 = lock_atomics();
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    MPI_Put(&one, 1, MPI_LONG, target, 8 + rank, 1, MPI_LONG, win);
    MPI_Win_unlock(target, win);
    if (expect_native)
        gdr_check_long("atomics for a shared epoch with one Put (take, give back)", 0, 2,
                       (long long) (lock_atomics() - a0));
}

static void lock_all_values(MPI_Win win, long *base)
{
    gdr_test_set_context("lock_all");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < nranks; t++) {
        long v = 1000 + rank;
        MPI_Put(&v, 1, MPI_LONG, t, 16 + rank, 1, MPI_LONG, win);
    }
    long one = 1, old;
    MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 3, MPI_SUM, win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int r = 0; r < nranks; r++)
        gdr_check_long("Put from each rank under lock_all", r, 1000 + r, base[16 + r]);
    if (rank == 0)
        gdr_check_long("Fetch_and_op from every rank", 3, nranks, base[3]);
    MPI_Win_unlock(rank, win);
}

static void fence_rounds(MPI_Win win, long *base)
{
    gdr_test_set_context("fence epochs");
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    unsigned long long w0 = counter("gdr_rma_sync_writes");
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    for (long round = 1; round <= 50; round++) {
        long v = round * 100 + rank;
        MPI_Put(&v, 1, MPI_LONG, right, 96, 1, MPI_LONG, win);
        MPI_Win_fence(0, win);
        if (base[96] != round * 100 + left)
            gdr_check_long("value from the left after a fence", round, round * 100 + left,
                           base[96]);
        MPI_Win_fence(0, win);  /* nobody writes again before everyone read */
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    if (expect_native)
        gdr_check_long("fences wrote control blocks", 0, 1,
                       counter("gdr_rma_sync_writes") > w0);
}

static void pscw_rounds(MPI_Win win, long *base)
{
    gdr_test_set_context("PSCW epochs");
    MPI_Group world, both;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    int peers[2] = { left, right };
    MPI_Group_incl(world, left == right ? 1 : 2, peers, &both);
    unsigned long long w0 = counter("gdr_rma_sync_writes");
    for (long round = 1; round <= 50; round++) {
        MPI_Win_post(both, 0, win);     /* my neighbours may write me */
        MPI_Win_start(both, 0, win);
        long v = round * 1000 + rank;
        MPI_Put(&v, 1, MPI_LONG, right, 97, 1, MPI_LONG, win);
        MPI_Put(&v, 1, MPI_LONG, left, 98, 1, MPI_LONG, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        if (base[97] != round * 1000 + left)
            gdr_check_long("value from the left after wait", round, round * 1000 + left,
                           base[97]);
        if (base[98] != round * 1000 + right)
            gdr_check_long("value from the right after wait", round, round * 1000 + right,
                           base[98]);
    }
    if (expect_native)
        gdr_check_long("PSCW wrote control blocks", 0, 1, counter("gdr_rma_sync_writes") > w0);
    MPI_Group_free(&both);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    expect_native = gdr_test_expect_native();
    if (nranks < 2 || nranks > 64)
        gdr_test_die("rma_locks needs 2 to 64 ranks", MPI_ERR_OTHER);

    long *base;
    MPI_Win win;
    MPI_Win_allocate(128 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    memset(base, 0, 128 * sizeof(long));
    MPI_Barrier(MPI_COMM_WORLD);

    unsigned long long a0 = lock_atomics();
    exclusive_counter(win, base);
    if (expect_native) {
        gdr_test_set_context("native locks");
        gdr_check_long("lock-word atomics were used", 0, 1, lock_atomics() > a0);
    }
    shared_overlap(win, base);
    exclusive_waits(win, base);
    lock_traffic(win);
    lock_all_values(win, base);
    MPI_Barrier(MPI_COMM_WORLD);
    fence_rounds(win, base);
    pscw_rounds(win, base);

    MPI_Win_free(&win);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
