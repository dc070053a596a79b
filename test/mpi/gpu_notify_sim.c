/* Notified RMA on device windows, run on the simulated GPU (test/gpusim) or a real one:
 * device memory comes from the CUDA driver gdr loads (MPIR_CVAR_CH4_GDR_CUDA_DRIVER).
 * Every rank exposes a window in device memory (MPI_Win_create over cuMemAlloc, and
 * MPI_Win_allocate with mpi_memory_alloc_kinds=cuda:device), attaches two counters (which
 * gdr keeps in host memory), and in one lock_all epoch:
 *  - MPIX_Put_notify of a host buffer into its right neighbour's window, counter 0: the
 *    neighbour waits on its counter, then copies its window to the host and checks every
 *    value (no flush by anyone before that);
 *  - MPIX_Get_notify of the left neighbour's window, counter 1: the left neighbour waits
 *    for the count; the data is checked after the origin's flush.
 * Without a GPU or driver: prints why and fails. */
#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

enum { N = 4096 };              /* ints per window */

static int rank, nranks;

static int val(int who, int i)
{
    return who * 100003 + i;
}

static void wait_for(MPI_Win win, int idx, MPI_Count want)
{
    MPI_Count v = 0;
    double t0 = MPI_Wtime();
    while (v < want) {
        GDR_CHECK_MPI(MPIX_Win_notify_get_value(win, idx, &v));
        if (MPI_Wtime() - t0 > 60) {
            gdr_test_fail("counter %d stuck at %lld, waiting for %lld", idx, (long long) v,
                          (long long) want);
            return;
        }
    }
}

static void run(MPI_Win win, void *dev, const char *kind)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    int *src = malloc(sizeof(int) * N), *host = malloc(sizeof(int) * N);
    int *got = malloc(sizeof(int) * N);
    gdr_test_set_context("device window=%s", kind);
    memset(host, 0, sizeof(int) * N);
    dev_copy(dev, host, sizeof(int) * N);
    GDR_CHECK_MPI(MPIX_Win_notify_attach(win, 2, MPI_INFO_NULL));
    for (int i = 0; i < N; i++)
        src[i] = val(rank, i);
    GDR_CHECK_MPI(MPI_Win_lock_all(0, win));
    GDR_CHECK_MPI(MPIX_Put_notify(src, N, MPI_INT, right, 0, N, MPI_INT, 0, win));
    wait_for(win, 0, 1);
    dev_copy(host, dev, sizeof(int) * N);
    long bad = 0;
    for (int i = 0; i < N; i++)
        if (host[i] != val(left, i) && bad++ < 3)
            gdr_check_long("window after the count", i, val(left, i), host[i]);
    /* every window holds its left neighbour's data now: read the left one's */
    MPI_Barrier(MPI_COMM_WORLD);
    GDR_CHECK_MPI(MPIX_Get_notify(got, N, MPI_INT, left, 0, N, MPI_INT, 1, win));
    wait_for(win, 1, 1);
    GDR_CHECK_MPI(MPI_Win_flush(left, win));
    int owner = (left + nranks - 1) % nranks;
    bad = 0;
    for (int i = 0; i < N; i++)
        if (got[i] != val(owner, i) && bad++ < 3)
            gdr_check_long("got", i, val(owner, i), got[i]);
    GDR_CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int c = 0; c < 2; c++) {
        MPI_Count v = -1;
        GDR_CHECK_MPI(MPIX_Win_notify_get_value(win, c, &v));
        gdr_check_long("counter", c, 1, v);
    }
    free(src);
    free(host);
    free(got);
}

int main(int argc, char **argv)
{
    MPI_T_pvar_session session;
    gpu_mpi_test_init(&argc, &argv, &session, &rank, &nranks);
    void *dev = dev_alloc(sizeof(int) * N);
    MPI_Win win;
    GDR_CHECK_MPI(MPI_Win_create(dev, sizeof(int) * N, sizeof(int), MPI_INFO_NULL,
                                 MPI_COMM_WORLD, &win));
    run(win, dev, "create");
    MPI_Win_free(&win);         /* detaches */
    dev_free(dev);

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_memory_alloc_kinds", "cuda:device");
    GDR_CHECK_MPI(MPI_Win_allocate(sizeof(int) * N, sizeof(int), info, MPI_COMM_WORLD, &dev,
                                   &win));
    MPI_Info_free(&info);
    run(win, dev, "allocate cuda:device");
    MPI_Win_free(&win);

    gdr_test_finish();
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
