/* opcost: the MPI calls whose instructions bench/opcost/run counts with callgrind.
 *
 *   mpiexec -n 2 opcost N
 *
 * Rank 0 is the origin, rank 1 the target; every operation moves 8 bytes (one int64) into or
 * out of an MPI_Win_allocate window inside one MPI_Win_lock_all epoch.  Each phase repeats one
 * operation N times; after each phase rank 0 calls a marker function (opcost_end_<phase>),
 * which `valgrind --tool=callgrind --dump-before=opcost_end_*` turns into one dump per phase,
 * so a phase's dump holds the instructions of the calls that phase measures (the run script
 * collects only inside them: --toggle-collect).  The operations that complete a measured call
 * without being measured are MPI_Win_flush_all (after Put, Get, Accumulate, Fetch_and_op,
 * Compare_and_swap) and MPI_Recv (rank 0 waits for rank 1's reply after each Send).
 * MPI_Win_flush is measured twice: right after a Put (its count includes the polls until the
 * completion arrives, which follow the link's timing, not the code), and after the Put has
 * been posted and completed (MPI_Iprobe, a 20-ms sleep, MPI_Iprobe: meant to leave no wait,
 * though a guest the host schedules late still makes some flushes poll); the first SAMPLES
 * flushes of each loop get a dump each (opcost_end_flush1, opcost_end_flushdone1), so
 * that the cheapest flush, the one that did not wait, can be read.  A warm-up of one of
 * each call comes first, in its own dump.
 *
 * Every value is checked (Get's results, Fetch_and_op's and Compare_and_swap's old values,
 * the target's window and the received messages at the end), so a run that did nothing
 * fails instead of counting nothing: exit status 1 and a line on stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { SLOT_PUT, SLOT_GET, SLOT_ACC, SLOT_FOP, SLOT_CAS, SLOT_WARM, NSLOTS };

static const int64_t GET_PATTERN = INT64_C(0x0123456789abcdef);

/* Markers: distinct bodies, so that no compiler folds two into one symbol. */
volatile int opcost_phase;
__attribute__((noinline)) void opcost_end_put(void) { opcost_phase = 1; }
__attribute__((noinline)) void opcost_end_flush(void) { opcost_phase = 2; }
__attribute__((noinline)) void opcost_end_get(void) { opcost_phase = 3; }
__attribute__((noinline)) void opcost_end_acc(void) { opcost_phase = 4; }
__attribute__((noinline)) void opcost_end_fop(void) { opcost_phase = 5; }
__attribute__((noinline)) void opcost_end_cas(void) { opcost_phase = 6; }
__attribute__((noinline)) void opcost_end_send(void) { opcost_phase = 7; }
__attribute__((noinline)) void opcost_end_flushdone(void) { opcost_phase = 8; }
__attribute__((noinline)) void opcost_end_warmup(void) { opcost_phase = 9; }
/* After each of the first SAMPLES iterations of the two flush loops: a dump per flush. */
__attribute__((noinline)) void opcost_end_flush1(void) { opcost_phase = 10; }
__attribute__((noinline)) void opcost_end_flushdone1(void) { opcost_phase = 11; }
enum { SAMPLES = 50 };

/* The settle time before a flush whose Put has completed: the Soft-RoCE round trip is
 * 20-100 us, callgrind's rank 0 does not slow the link, and 20 ms covers a guest that the
 * host schedules late (5 ms left a third of gdr's flushes polling once). */
static void settle(void)
{
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
}

static int failures;

static void check(int ok, const char *what, long i, int64_t got, int64_t want)
{
    if (!ok && failures++ < 5)
        fprintf(stderr, "opcost: %s at %ld: got %lld, want %lld\n", what, i, (long long) got,
                (long long) want);
}

static void origin(MPI_Win win, long n)
{
    int64_t v, r, one = 1, old, cmp;
    int flag;

    /* One of each first, into a slot of its own: connections, registrations and pools are
     * made here, in a dump of its own, and not in a measured call (a wait for a connection
     * polls a number of times that follows the link's timing, and would not cancel). */
    v = 1;
    MPI_Put(&v, 1, MPI_INT64_T, 1, SLOT_WARM, 1, MPI_INT64_T, win);
    MPI_Win_flush(1, win);
    MPI_Get(&r, 1, MPI_INT64_T, 1, SLOT_WARM, 1, MPI_INT64_T, win);
    MPI_Accumulate(&one, 1, MPI_INT64_T, 1, SLOT_WARM, 1, MPI_INT64_T, MPI_SUM, win);
    MPI_Win_flush_all(win);
    MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, SLOT_WARM, MPI_SUM, win);
    MPI_Win_flush_all(win);
    cmp = 3;
    MPI_Compare_and_swap(&v, &cmp, &old, MPI_INT64_T, 1, SLOT_WARM, win);
    MPI_Win_flush_all(win);
    check(old == 3, "warm-up MPI_Compare_and_swap", 0, old, 3);
    MPI_Send(&v, 1, MPI_INT64_T, 1, 6, MPI_COMM_WORLD);
    MPI_Recv(&r, 1, MPI_INT64_T, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    opcost_end_warmup();
    MPI_Barrier(MPI_COMM_WORLD);

    for (long i = 0; i < n; i++) {
        v = i + 1;
        MPI_Put(&v, 1, MPI_INT64_T, 1, SLOT_PUT, 1, MPI_INT64_T, win);
        MPI_Win_flush_all(win);
    }
    opcost_end_put();
    MPI_Barrier(MPI_COMM_WORLD);

    for (long i = 0; i < n; i++) {
        v = i + 1;
        MPI_Put(&v, 1, MPI_INT64_T, 1, SLOT_PUT, 1, MPI_INT64_T, win);
        MPI_Win_flush(1, win);
        if (i < SAMPLES)
            opcost_end_flush1();
    }
    opcost_end_flush();
    MPI_Barrier(MPI_COMM_WORLD);

    /* The same flush without its wait: a progress call (MPI_Iprobe, not measured) posts a Put
     * that gdr held for a later doorbell, the rank sleeps until the Put has completed, and a
     * second MPI_Iprobe takes its completion (else whether the first one already did follows
     * the link's timing), so the flush finds nothing left to wait for.  The flush above spins
     * until the completion arrives, a number of polls that follows the link's timing. */
    for (long i = 0; i < n; i++) {
        v = i + 1;
        MPI_Put(&v, 1, MPI_INT64_T, 1, SLOT_PUT, 1, MPI_INT64_T, win);
        MPI_Iprobe(1, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        settle();
        MPI_Iprobe(1, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        MPI_Win_flush(1, win);
        if (i < SAMPLES)
            opcost_end_flushdone1();
    }
    opcost_end_flushdone();
    MPI_Barrier(MPI_COMM_WORLD);

    for (long i = 0; i < n; i++) {
        r = 0;
        MPI_Get(&r, 1, MPI_INT64_T, 1, SLOT_GET, 1, MPI_INT64_T, win);
        MPI_Win_flush_all(win);
        check(r == GET_PATTERN, "MPI_Get", i, r, GET_PATTERN);
    }
    opcost_end_get();
    MPI_Barrier(MPI_COMM_WORLD);

    for (long i = 0; i < n; i++) {
        MPI_Accumulate(&one, 1, MPI_INT64_T, 1, SLOT_ACC, 1, MPI_INT64_T, MPI_SUM, win);
        MPI_Win_flush_all(win);
    }
    opcost_end_acc();
    MPI_Barrier(MPI_COMM_WORLD);

    for (long i = 0; i < n; i++) {
        old = -1;
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, SLOT_FOP, MPI_SUM, win);
        MPI_Win_flush_all(win);
        check(old == i, "MPI_Fetch_and_op", i, old, i);
    }
    opcost_end_fop();
    MPI_Barrier(MPI_COMM_WORLD);

    for (long i = 0; i < n; i++) {
        cmp = i;
        v = i + 1;
        old = -1;
        MPI_Compare_and_swap(&v, &cmp, &old, MPI_INT64_T, 1, SLOT_CAS, win);
        MPI_Win_flush_all(win);
        check(old == i, "MPI_Compare_and_swap", i, old, i);
    }
    opcost_end_cas();
    MPI_Barrier(MPI_COMM_WORLD);

    for (long i = 0; i < n; i++) {
        v = i;
        MPI_Send(&v, 1, MPI_INT64_T, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(&r, 1, MPI_INT64_T, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(r == -i, "reply to MPI_Send", i, r, -i);
    }
    opcost_end_send();
    MPI_Barrier(MPI_COMM_WORLD);
}

static void target(const int64_t *base, MPI_Win win, long n)
{
    int64_t v;

    MPI_Recv(&v, 1, MPI_INT64_T, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check(v == 1, "warm-up MPI_Send's message", 0, v, 1);
    MPI_Send(&v, 1, MPI_INT64_T, 0, 6, MPI_COMM_WORLD);
    for (int phase = 0; phase < 8; phase++)
        MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < n; i++) {
        MPI_Recv(&v, 1, MPI_INT64_T, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(v == i, "MPI_Send's message", i, v, i);
        v = -i;
        MPI_Send(&v, 1, MPI_INT64_T, 0, 8, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    check(base[SLOT_PUT] == n, "window after MPI_Put", n, base[SLOT_PUT], n);
    check(base[SLOT_GET] == GET_PATTERN, "window after MPI_Get", n, base[SLOT_GET], GET_PATTERN);
    check(base[SLOT_ACC] == n, "window after MPI_Accumulate", n, base[SLOT_ACC], n);
    check(base[SLOT_FOP] == n, "window after MPI_Fetch_and_op", n, base[SLOT_FOP], n);
    check(base[SLOT_CAS] == n, "window after MPI_Compare_and_swap", n, base[SLOT_CAS], n);
    check(base[SLOT_WARM] == 1, "window after the warm-up", 0, base[SLOT_WARM], 1);
}

int main(int argc, char **argv)
{
    int rank, size;
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 200;
    int64_t *base;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || n < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n 2 opcost N (N >= 1)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Win_allocate(NSLOTS * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &base, &win);
    for (int s = 0; s < NSLOTS; s++)
        base[s] = s == SLOT_GET ? GET_PATTERN : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);

    if (rank == 0)
        origin(win, n);
    else
        target(base, win, n);

    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("opcost: N=%ld, %s\n", n, total ? "CHECKS FAILED" : "every value checked");
    MPI_Finalize();
    return total ? 1 : 0;
}
