/* MPI_THREAD_MULTIPLE (issue 24): THREADS threads per rank issue RMA at once, values
 * checked at the end.
 *  - separate windows: thread t of every rank uses window t only, each operation in its
 *    own exclusive lock epoch on a rank chosen round-robin: Put of a stamp into the
 *    origin's slot, Accumulate(SUM, 1) into a counter;
 *  - one shared window in a lock_all epoch that the main thread opens: every thread
 *    Fetch_and_op(SUM, 1) on one counter at rank 0 (the values fetched across the job must
 *    be exactly 0 .. total-1: nothing lost or duplicated), Put into its own slot on a
 *    round-robin target, Accumulate(SUM) into that target's counter, then Win_flush;
 *  - window lifetimes: every thread creates, uses and frees windows on its own duplicate
 *    of MPI_COMM_WORLD while the others do the same (created, allocated and dynamic in
 *    turn): a Put to the right neighbour, read back after a barrier, the element beside
 *    it untouched.
 *
 *   rma_threads [ITERATIONS]     (default 500 per thread and phase) */
#include <pthread.h>
#include "gdr_mpi_test.h"

#define THREADS 4

typedef struct {
    int t, rank, n, iters;
    MPI_Win own, shared;
    long *fetched;              /* iters values fetched by this thread */
    MPI_Comm comm;              /* window lifetimes: this thread's communicator */
    int cycles, bad;            /* window lifetimes run, wrong values seen */
    char first_bad[160];
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

static void lifetime_bad(thread_arg_t *a, int cycle, const char *what, long want, long got)
{
    if (a->bad++ == 0)
        snprintf(a->first_bad, sizeof(a->first_bad), "cycle %d: %s is %ld, expected %ld",
                 cycle, what, got, want);
}

static void *lifetimes(void *p)
{
    thread_arg_t *a = p;
    int right = (a->rank + 1) % a->n, left = (a->rank + a->n - 1) % a->n;
    const MPI_Aint len = 2 * sizeof(long);
    for (int i = 0; i < a->cycles; i++) {
        long *mem = NULL, stamp = (long) i * 1000 + a->rank * THREADS + a->t;
        MPI_Aint disp = 1;      /* element 1 of the neighbour's window */
        MPI_Win win;
        int kind = i % 3;
        if (kind == 1) {
            MPI_Win_allocate(len, sizeof(long), MPI_INFO_NULL, a->comm, &mem, &win);
        } else {
            mem = malloc(len);
            if (kind == 0) {
                MPI_Win_create(mem, len, sizeof(long), MPI_INFO_NULL, a->comm, &win);
            } else {
                MPI_Aint mine, theirs;
                MPI_Win_create_dynamic(MPI_INFO_NULL, a->comm, &win);
                MPI_Win_attach(win, mem, len);
                MPI_Get_address(&mem[1], &mine);
                MPI_Sendrecv(&mine, 1, MPI_AINT, left, 0, &theirs, 1, MPI_AINT, right, 0,
                             a->comm, MPI_STATUS_IGNORE);
                disp = theirs;
            }
        }
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, a->rank, 0, win);
        mem[0] = mem[1] = -1;
        MPI_Win_unlock(a->rank, win);
        MPI_Barrier(a->comm);
        MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
        MPI_Put(&stamp, 1, MPI_LONG, right, disp, 1, MPI_LONG, win);
        MPI_Win_unlock(right, win);
        MPI_Barrier(a->comm);
        MPI_Win_lock(MPI_LOCK_SHARED, a->rank, 0, win);
        long want = (long) i * 1000 + left * THREADS + a->t;
        if (mem[1] != want)
            lifetime_bad(a, i, "the element the left neighbour put", want, mem[1]);
        if (mem[0] != -1)
            lifetime_bad(a, i, "the element beside it", -1, mem[0]);
        MPI_Win_unlock(a->rank, win);
        if (kind == 2)
            MPI_Win_detach(win, mem);
        MPI_Win_free(&win);
        if (kind != 1)
            free(mem);
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

    /* window lifetimes, all threads at once, each on its own communicator */
    for (int t = 0; t < THREADS; t++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &args[t].comm);
        /* 25 windows each by default: the races of MPICH's window map and shared-memory
         * segment list (MPICH patch 0020) showed about once in 200 runs at 40 */
        args[t].cycles = iters / 20 > 3 ? iters / 20 : 3;
        pthread_create(&tid[t], NULL, lifetimes, &args[t]);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(tid[t], NULL);
        gdr_test_set_context("window lifetimes of thread %d (%d windows): %s", t,
                             args[t].cycles, args[t].bad ? args[t].first_bad : "all right");
        gdr_check_long("wrong values", t, 0, args[t].bad);
        MPI_Comm_free(&args[t].comm);
    }
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
