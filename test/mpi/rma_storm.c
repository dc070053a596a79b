/* A storm of mixed RMA on one target (issue 24): every rank but 0 hammers rank 0's window
 * for SECONDS with a random mix, in one lock_all epoch:
 *   - Put of a stamped block into the origin's own region, flushed, then Get and compare;
 *   - Accumulate(SUM) of a known amount into one of K shared counters;
 *   - Fetch_and_op(SUM, 1) on one global counter (the fetched values must only grow);
 * each origin keeps what it added where.  At the end the counters at rank 0 must equal
 * the sums of every origin's tally (a checksum over every accumulate of the run), and
 * the global counter the number of Fetch_and_ops.
 *
 *   rma_storm [SECONDS]      (default 5; maint/check-rxe --full: 600 s at 8 ranks)
 * GDR_TEST_VERBOSE=1: rank 0 prints what the origins did. */
#include "gdr_mpi_test.h"

#define K 64                    /* shared counters */
#define BLOCK 512               /* longs in an origin's region */

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

int main(int argc, char **argv)
{
    int rank, n;
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* [0]: global counter, [1, 1+K): shared counters, then a BLOCK per rank */
    MPI_Aint len = (MPI_Aint) (1 + K + (size_t) n * BLOCK) * (MPI_Aint) sizeof(long);
    long *mem, tally[K + 1] = { 0 }, ops[4] = { 0 };
    MPI_Win win;
    MPI_Win_allocate(rank == 0 ? len : 0, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    if (rank == 0)
        memset(mem, 0, (size_t) len);
    MPI_Barrier(MPI_COMM_WORLD);

    long *blk = malloc(BLOCK * sizeof(long)), *back = malloc(BLOCK * sizeof(long));
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t) (rank + 1);
    long last_fetched = -1;
    MPI_Win_lock_all(0, win);
    if (rank != 0) {
        double t0 = MPI_Wtime();
        MPI_Aint mine = 1 + K + (MPI_Aint) rank * BLOCK;
        for (long it = 0; MPI_Wtime() - t0 < seconds && gdr_test_errors() == 0; it++) {
            switch (next(&s) % 4) {
            case 0:{
                    int cnt = 1 + (int) (next(&s) % BLOCK);
                    for (int j = 0; j < cnt; j++)
                        blk[j] = (it << 20) ^ ((long) rank << 12) ^ j;
                    MPI_Put(blk, cnt, MPI_LONG, 0, mine, cnt, MPI_LONG, win);
                    MPI_Win_flush(0, win);
                    MPI_Get(back, cnt, MPI_LONG, 0, mine, cnt, MPI_LONG, win);
                    MPI_Win_flush(0, win);
                    gdr_test_set_context("Put then Get of %d longs, iteration %ld", cnt, it);
                    for (int j = 0; j < cnt; j++)
                        if (!gdr_check_long("read back", j, blk[j], back[j]))
                            break;
                    ops[0]++;
                    break;
                }
            case 1:
            case 2:{
                    int c = (int) (next(&s) % K);
                    long add = 1 + (long) (next(&s) % 1000);
                    MPI_Accumulate(&add, 1, MPI_LONG, 0, 1 + c, 1, MPI_LONG, MPI_SUM, win);
                    tally[c] += add;
                    ops[1]++;
                    if (ops[1] % 64 == 0)
                        MPI_Win_flush(0, win);
                    break;
                }
            default:{
                    long one = 1, got;
                    MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, 0, MPI_SUM, win);
                    MPI_Win_flush(0, win);
                    gdr_test_set_context("Fetch_and_op, iteration %ld", it);
                    if (got <= last_fetched)
                        gdr_test_fail("fetched %ld after %ld: the counter went back", got,
                                      last_fetched);
                    last_fetched = got;
                    tally[K]++;
                    ops[2]++;
                    break;
                }
            }
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    long sums[K + 1], all_ops[4];
    MPI_Reduce(tally, sums, K + 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(ops, all_ops, 4, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        gdr_test_set_context("counters after the storm");
        for (int c = 0; c < K; c++)
            gdr_check_long("shared counter", c, sums[c], mem[1 + c]);
        gdr_check_long("Fetch_and_op counter", 0, sums[K], mem[0]);
        if (getenv("GDR_TEST_VERBOSE") != NULL)     /* the runners want only " No Errors" */
            printf("%d origins, %.0f s: %ld Put+Get pairs checked, %ld accumulates (checksum over "
               "%d counters), %ld Fetch_and_ops\n", n - 1, seconds, all_ops[0], all_ops[1], K,
               all_ops[2]);
    }
    free(blk);
    free(back);
    MPI_Win_free(&win);
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
