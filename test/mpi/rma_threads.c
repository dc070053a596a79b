/* MPI_THREAD_MULTIPLE (issue 24): THREADS threads per rank issue RMA at once, values
 * checked at the end.
 *  - separate windows: thread t of every rank uses window t only, each operation in its
 *    own exclusive lock epoch on a rank chosen round-robin: Put of a stamp into the
 *    origin's slot, Accumulate(SUM, 1) into a counter;
 *  - one shared window in a lock_all epoch that the main thread opens: every thread
 *    Fetch_and_op(SUM, 1) on one counter at rank 0 (the values fetched across the job must
 *    be exactly 0 .. total-1: nothing lost or duplicated), Put into its own slot on a
 *    round-robin target, Accumulate(SUM) into that target's counter, then Win_flush.
 *
 *   rma_threads [ITERATIONS]     (default 500 per thread and phase) */
#include <pthread.h>
#include "gdr_mpi_test.h"

#define THREADS 4

typedef struct {
    int t, rank, n, iters;
    MPI_Win own, shared;
    long *fetched;              /* iters values fetched by this thread */
} thread_arg_t;

static void *separate(void *p)
{
    thread_arg_t *a = p;
    for (int i = 0; i < a->iters; i++) {
        int target = (a->rank + 1 + i) % a->n;
        long stamp = (long) i * 1000 + a->rank, one = 1;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, a->own);
        MPI_Put(&stamp, 1, MPI_LONG, target, 1 + a->rank, 1, MPI_LONG, a->own);
        MPI_Accumulate(&one, 1, MPI_LONG, target, 0, 1, MPI_LONG, MPI_SUM, a->own);
        MPI_Win_unlock(target, a->own);
    }
    return NULL;
}

static void *shared(void *p)
{
    thread_arg_t *a = p;
    for (int i = 0; i < a->iters; i++) {
        int target = (a->rank + i) % a->n;
        long one = 1, stamp = (long) i * 1000 + a->rank * THREADS + a->t;
        MPI_Fetch_and_op(&one, &a->fetched[i], MPI_LONG, 0, 0, MPI_SUM, a->shared);
        MPI_Put(&stamp, 1, MPI_LONG, target, 2 + a->rank * THREADS + a->t, 1, MPI_LONG,
                a->shared);
        MPI_Accumulate(&one, 1, MPI_LONG, target, 1, 1, MPI_LONG, MPI_SUM, a->shared);
        MPI_Win_flush(target, a->shared);
        MPI_Win_flush(0, a->shared);
    }
    return NULL;
}

static int cmp_long(const void *x, const void *y)
{
    long a = *(const long *) x, b = *(const long *) y;
    return (a > b) - (a < b);
}

/* the last i in [0, iters) with (base + i) % n == me, or -1 */
static long last_i(int base, int me, int n, int iters)
{
    for (int i = iters - 1; i >= 0; i--)
        if ((base + i) % n == me)
            return i;
    return -1;
}

int main(int argc, char **argv)
{
    int provided, rank, n, iters = argc > 1 ? atoi(argv[1]) : 500;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (provided != MPI_THREAD_MULTIPLE) {
        gdr_test_fail("MPI_Init_thread gave thread level %d, not MPI_THREAD_MULTIPLE", provided);
        gdr_test_finish();
        MPI_Finalize();
        return 0;
    }
    long *own_mem[THREADS], *sh_mem;
    size_t own_len = (size_t) (1 + n), sh_len = (size_t) (2 + n * THREADS);
    thread_arg_t args[THREADS];
    pthread_t tid[THREADS];
    MPI_Win own[THREADS], sh;

    for (int t = 0; t < THREADS; t++) {
        MPI_Win_allocate((MPI_Aint) (own_len * sizeof(long)), sizeof(long), MPI_INFO_NULL,
                         MPI_COMM_WORLD, &own_mem[t], &own[t]);
        memset(own_mem[t], 0xff, own_len * sizeof(long));
        own_mem[t][0] = 0;
    }
    MPI_Win_allocate((MPI_Aint) (sh_len * sizeof(long)), sizeof(long), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &sh_mem, &sh);
    memset(sh_mem, 0xff, sh_len * sizeof(long));
    sh_mem[0] = sh_mem[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    /* separate windows */
    for (int t = 0; t < THREADS; t++) {
        args[t] = (thread_arg_t) {.t = t,.rank = rank,.n = n,.iters = iters,.own = own[t],
            .shared = sh,.fetched = calloc((size_t) iters, sizeof(long)) };
        pthread_create(&tid[t], NULL, separate, &args[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int t = 0; t < THREADS; t++) {
        long received = 0;
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, own[t]);
        for (int o = 0; o < n; o++) {
            for (int i = 0; i < iters; i++)
                received += (o + 1 + i) % n == rank;
            long li = last_i(o + 1, rank, n, iters);
            gdr_test_set_context("separate window %d, slot of rank %d", t, o);
            gdr_check_long("window", 1 + o, li < 0 ? -1 : li * 1000 + o, own_mem[t][1 + o]);
        }
        gdr_test_set_context("separate window %d, counter", t);
        gdr_check_long("window", 0, received, own_mem[t][0]);
        MPI_Win_unlock(rank, own[t]);
    }

    /* one shared window, one lock_all epoch */
    MPI_Win_lock_all(0, sh);
    for (int t = 0; t < THREADS; t++)
        pthread_create(&tid[t], NULL, shared, &args[t]);
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
    MPI_Win_unlock_all(sh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, sh);
    long received = 0;
    for (int o = 0; o < n; o++) {
        for (int i = 0; i < iters; i++)
            received += THREADS * ((o + i) % n == rank);
        long li = last_i(o, rank, n, iters);
        for (int t = 0; t < THREADS; t++) {
            gdr_test_set_context("shared window, slot of rank %d thread %d", o, t);
            gdr_check_long("window", 2 + o * THREADS + t,
                           li < 0 ? -1 : li * 1000 + o * THREADS + t, sh_mem[2 + o * THREADS + t]);
        }
    }
    gdr_test_set_context("shared window, counter");
    gdr_check_long("window", 1, received, sh_mem[1]);
    long total = (long) n * THREADS * iters;
    if (rank == 0) {
        gdr_test_set_context("shared window, Fetch_and_op counter");
        gdr_check_long("window", 0, total, sh_mem[0]);
    }
    MPI_Win_unlock(rank, sh);

    /* the fetched values: a permutation of 0 .. total-1 */
    long mine = (long) THREADS * iters, *all = rank == 0 ? malloc((size_t) total * sizeof(long))
        : NULL, *local = malloc((size_t) mine * sizeof(long));
    for (int t = 0; t < THREADS; t++)
        memcpy(local + (size_t) t * iters, args[t].fetched, (size_t) iters * sizeof(long));
    MPI_Gather(local, (int) mine, MPI_LONG, all, (int) mine, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(all, (size_t) total, sizeof(long), cmp_long);
        gdr_test_set_context("values fetched by Fetch_and_op, sorted");
        for (long i = 0; i < total; i++)
            if (!gdr_check_long("fetched", i, i, all[i]))
                break;
        free(all);
    }
    free(local);
    for (int t = 0; t < THREADS; t++) {
        free(args[t].fetched);
        MPI_Win_free(&own[t]);
    }
    MPI_Win_free(&sh);
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
