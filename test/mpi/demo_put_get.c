/* demo_put_get: the quick-start demo of one-sided communication.
 *
 * Every rank (2 or more) opens a window of 8 ints, then inside one
 * MPI_Win_lock_all epoch:
 *   1. puts its pattern [100*(rank+1) .. +7] into its right neighbour's window,
 *      MPI_Win_flush, and reads it back with MPI_Get + MPI_Win_flush;
 *   2. after a barrier (every put is flushed), gets its left neighbour's window,
 *      which holds the pattern the left neighbour's left neighbour put there.
 * Each rank checks both results and rank 0 prints one line per rank, e.g.
 *   rank 0: put 8 ints to rank 1, read back [100..107]: verified;
 *           got [300..307] from rank 3: verified   (4 ranks)
 * then " No Errors" (or " Found N errors", exit status 1).
 */
#include "gdr_mpi_test.h"

#define N 8
#define LINE 256

static int pattern(int rank, int i)
{
    return 100 * (rank + 1) + i;
}

/* Checks buf against origin's pattern; returns "verified" or "MISMATCH" and
 * writes "[first..last]" into range. */
static const char *verify(const char *what, const int *buf, int origin, char *range, size_t len)
{
    int bad = 0;
    for (int i = 0; i < N; i++)
        if (!gdr_check_long(what, i, pattern(origin, i), buf[i]))
            bad = 1;
    snprintf(range, len, "[%d..%d]", buf[0], buf[N - 1]);
    return bad ? "MISMATCH" : "verified";
}

int main(int argc, char **argv)
{
    int me, n, *base;
    int out[N], back[N], got[N];
    char line[LINE], range1[32], range2[32], *all = NULL;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 2) {
        fprintf(stderr, "demo_put_get: run with 2 or more ranks (mpiexec -n 2)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int right = (me + 1) % n, left = (me + n - 1) % n;
    gdr_test_set_context("demo lock_all+flush");

    if (MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                         &win) != MPI_SUCCESS)
        gdr_test_die("MPI_Win_allocate", MPI_ERR_OTHER);
    for (int i = 0; i < N; i++) {
        base[i] = -1;
        out[i] = pattern(me, i);
        back[i] = got[i] = -1;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    MPI_Put(out, N, MPI_INT, right, 0, N, MPI_INT, win);
    MPI_Win_flush(right, win);
    MPI_Get(back, N, MPI_INT, right, 0, N, MPI_INT, win);
    MPI_Win_flush(right, win);
    MPI_Barrier(MPI_COMM_WORLD);        /* every rank's put is complete */
    MPI_Get(got, N, MPI_INT, left, 0, N, MPI_INT, win);
    MPI_Win_flush(left, win);
    MPI_Win_unlock_all(win);

    const char *st1 = verify("read back", back, me, range1, sizeof(range1));
    const char *st2 = verify("get from left", got, (left + n - 1) % n, range2, sizeof(range2));
    snprintf(line, sizeof(line), "rank %d: put %d ints to rank %d, read back %s: %s; "
             "got %s from rank %d: %s", me, N, right, range1, st1, range2, left, st2);

    if (me == 0)
        all = malloc((size_t) n * LINE);
    MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (me == 0) {
        for (int r = 0; r < n; r++)
            printf("%s\n", all + (size_t) r * LINE);
        fflush(stdout);
        free(all);
    }

    MPI_Win_free(&win);
    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs ? 1 : 0;
}
