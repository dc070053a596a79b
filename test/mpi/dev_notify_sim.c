/* Notified RMA from kernels (MPIX_Dev_put_notify, _get_notify, _notify_wait; gdr's
 * __host__ __device__ protocol in gdr/gdr_rma_kernel_api.h) on the simulated GPU
 * (test/gpusim, host-visible mode), host threads playing the kernels, as device_api_sim.
 *
 * Every rank exposes a window in device memory (cuMemAlloc, MPI_Win_create), takes its
 * device handle, and only then attaches two notification counters (the handle shows
 * counters attached after it).  THREADS "kernel" threads, rounds rounds each (100, or
 * GDR_TEST_ROUNDS), to the right neighbour: a put_notify of one 8-byte cell (each thread
 * and round its own cell) on counter 0, and a get_notify of one cell of the neighbour's
 * read-only area on counter 1; then a flush.  Meanwhile a "kernel" thread on every rank
 * waits on its own counter 0 for THREADS x rounds (notify_wait) and, at once, checks every
 * cell its left neighbour put (a notification follows its data); then waits on counter 1
 * for the left neighbour's gets.  The gets' values are checked after the flush, the
 * counters by MPIX_Win_notify_get_value too.  A neighbour on this node is reached through
 * its window's IPC mapping (the kernel copies, the proxy sends the notification), one on
 * another node through the ring.  Misuse: a negative index is refused by the call; a
 * counter the handle does not have reads as GDR_DEV_ERR_ARG, and every counter once they
 * are detached.  Needs GDR_GPUSIM_MODE=host-visible and a driver
 * (MPIR_CVAR_CH4_GDR_CUDA_DRIVER). */
#include <pthread.h>

#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"
#include "gdr/gdr_rma_kernel_api.h"

enum { THREADS = 2, MAX_ROUNDS = 250 };

static int rounds = 100;
static size_t cells;            /* per area: THREADS x rounds */

typedef struct {
    const gdr_dev_win_t *w;
    int id, right, rank;
    uint64_t *src;              /* host-pinned: the values put (live until the flush) */
    uint64_t *got;              /* host-pinned: the gets land here */
    int errors;
} kernel_t;

typedef struct {
    const gdr_dev_win_t *w;
    const uint64_t *window;     /* this rank's window (host-visible device memory) */
    int left;
    long bad;
    uint64_t seen_put, seen_get;
} consumer_t;

static uint64_t put_value(int rank, size_t cell)
{
    return ((uint64_t) (rank + 1) << 40) | (uint64_t) cell << 1;
}

static uint64_t ro_value(int rank, size_t cell)
{
    return ((uint64_t) (rank + 1) << 40) | (uint64_t) cell << 1 | 1;
}

static void *kernel(void *arg)
{
    kernel_t *k = arg;
    for (int i = 0; i < rounds; i++) {
        size_t cell = (size_t) k->id * rounds + i;
        k->src[cell] = put_value(k->rank, cell);
        k->errors += gdr_dev_put_notify(k->w, &k->src[cell], 8, k->right,
                                        (int64_t) (8 * cell), 0) != GDR_DEV_OK;
        k->errors += gdr_dev_get_notify(k->w, &k->got[cell], 8, k->right,
                                        (int64_t) (8 * (cells + cell)), 1) != GDR_DEV_OK;
    }
    k->errors += gdr_dev_flush(k->w, k->right) != GDR_DEV_OK;
    return NULL;
}

static void *consumer(void *arg)
{
    consumer_t *c = arg;
    if (gdr_dev_notify_wait(c->w, 0, cells, &c->seen_put) != GDR_DEV_OK) {
        c->bad = -1;
        return NULL;
    }
    /* no flush by anyone: the count alone says the data is here */
    for (size_t cell = 0; cell < cells; cell++)
        c->bad += __atomic_load_n(&c->window[cell], __ATOMIC_RELAXED) != put_value(c->left, cell);
    if (gdr_dev_notify_wait(c->w, 1, cells, &c->seen_get) != GDR_DEV_OK)
        c->bad = -1;
    return NULL;
}

int main(int argc, char **argv)
{
    int rank, size;
    const char *r = getenv("GDR_TEST_ROUNDS");
    if (r != NULL && atoi(r) >= 1 && atoi(r) <= MAX_ROUNDS)
        rounds = atoi(r);
    cells = (size_t) THREADS * rounds;
    size_t win_bytes = 2 * cells * 8;
    dev_api_test_init(&argc, &argv, &rank, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    uint64_t winmem;
    uint64_t *pinned;
    if (cu.alloc(&winmem, win_bytes) != 0
        || cu.host_alloc((void **) &pinned, 2 * cells * 8, 0) != 0)
        gdr_test_die("cuMemAlloc", MPI_ERR_NO_MEM);
    memset(pinned, 0, 2 * cells * 8);
    uint64_t *init = calloc(2 * cells, 8);
    for (size_t c = 0; c < cells; c++)
        init[cells + c] = ro_value(rank, c);    /* the area the neighbour gets from */
    cu.copy(winmem, (uint64_t) (uintptr_t) init, win_bytes);

    MPI_Win win;
    GDR_CHECK_MPI(MPI_Win_create((void *) (uintptr_t) winmem, win_bytes, 1, MPI_INFO_NULL,
                             MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(0, win);
    MPIX_Win_device dwin;
    gdr_test_set_context("the device handle, then the counters");
    GDR_CHECK_MPI(MPIX_Win_get_device_handle(win, &dwin));
    const gdr_dev_win_t *w = (const gdr_dev_win_t *) &dwin;
    uint64_t v = 0;
    if (gdr_dev_notify_value(w, 0, &v) != GDR_DEV_ERR_ARG)
        gdr_test_fail("a handle shows a counter before any was attached");
    GDR_CHECK_MPI(MPIX_Win_notify_attach(win, 2, MPI_INFO_NULL));
    if (gdr_dev_notify_value(w, 0, &v) != GDR_DEV_OK || v != 0
        || gdr_dev_notify_value(w, 2, &v) != GDR_DEV_ERR_ARG)
        gdr_test_fail("after the attach the handle should show 2 counters at 0");
    uint64_t head = *w->ring.head;
    if (gdr_dev_put_notify(w, pinned, 8, right, 0, -1) != GDR_DEV_ERR_ARG
        || *w->ring.head != head)
        gdr_test_fail("a negative notification index was not refused, or reached the ring");
    MPI_Barrier(MPI_COMM_WORLD);

    gdr_test_set_context("the kernel threads");
    consumer_t c = {.w = w,.window = (const uint64_t *) (uintptr_t) winmem,.left = left };
    pthread_t ct, t[THREADS];
    kernel_t k[THREADS];
    pthread_create(&ct, NULL, consumer, &c);
    for (int i = 0; i < THREADS; i++) {
        k[i] = (kernel_t) {.w = w,.id = i,.right = right,.rank = rank,.src = pinned,
            .got = pinned + cells
        };
        pthread_create(&t[i], NULL, kernel, &k[i]);
    }
    int failed_calls = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failed_calls += k[i].errors;
    }
    if (failed_calls) {
        /* gdr's proxy stopped (it said why on stderr): the neighbour would wait for ever */
        fprintf(stderr, "rank %d: %d device calls failed: ending the job\n", rank, failed_calls);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    pthread_join(ct, NULL);
    if (c.bad != 0)
        gdr_test_fail("the waiting kernel: %ld cells from rank %d wrong once counter 0 said "
                      "%llu (-1: a wait failed)", c.bad, left, (unsigned long long) c.seen_put);
    gdr_check_long("counter 0 as the kernel saw it", 0, (long long) cells, (long long) c.seen_put);
    gdr_check_long("counter 1 as the kernel saw it", 1, (long long) cells, (long long) c.seen_get);
    for (size_t cell = 0; cell < cells; cell++)
        gdr_check_long("got", (long) cell, (long long) ro_value(right, cell),
                       (long long) pinned[cells + cell]);
    MPI_Count n0 = 0, n1 = 0;
    GDR_CHECK_MPI(MPIX_Win_notify_get_value(win, 0, &n0));
    GDR_CHECK_MPI(MPIX_Win_notify_get_value(win, 1, &n1));
    gdr_check_long("MPIX_Win_notify_get_value", 0, (long long) cells, (long long) n0);
    gdr_check_long("MPIX_Win_notify_get_value", 1, (long long) cells, (long long) n1);
    MPI_Barrier(MPI_COMM_WORLD);

    gdr_test_set_context("after the detach");
    GDR_CHECK_MPI(MPIX_Win_notify_detach(win));
    if (gdr_dev_notify_value(w, 0, &v) != GDR_DEV_ERR_ARG)
        gdr_test_fail("the handle still shows counters after the detach");
    GDR_CHECK_MPI(MPIX_Win_free_device_handle(&dwin));
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    cu.free(winmem);
    cu.free_host(pinned);
    free(init);
    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs != 0;
}
