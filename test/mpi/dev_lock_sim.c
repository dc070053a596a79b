/* Passive-target locks taken by kernels (MPIX_Dev_win_lock / _unlock / _lock_all /
 * _unlock_all: gdr_dev_lock and the rest, gdr's __host__ __device__ protocol) on the
 * simulated GPU (host-visible: a host thread plays the kernel), against the host's
 * MPI_Win_lock on the same window.
 *
 * Every rank exposes a window in device memory; rank 0's first word is a counter.  The
 * host opens no epoch on the window.  rounds times (20, or GDR_TEST_ROUNDS) each rank adds
 * 1 to the counter by read, add, write under an exclusive lock of rank 0: even ranks from
 * a "kernel" thread (lock, get, flush, put, unlock), odd ranks from the host
 * (MPI_Win_lock, MPI_Get, MPI_Win_flush, MPI_Put, MPI_Win_unlock).  Without mutual
 * exclusion between all of them updates are lost: the counter must end at size x rounds.
 * Then every even rank's kernel reads it under lock_all / unlock_all, and every rank's
 * kernel passes rounds values around the ring between kernel fences (MPIX_Dev_win_fence:
 * gdr_dev_win_fence), each read after its fence checked.
 *
 * Where the window's locks go by messages (one node without an RDMA device, or
 * MPIR_CVAR_CH4_GDR_NATIVE_SYNC=0) kernels cannot lock: every call returns
 * GDR_DEV_ERR_SYNC with nothing on the ring, and every rank counts from the host instead.
 * GDR_TEST_EXPECT_DEV_LOCKS=1 (maint/check-rxe) makes that a failure.  Needs
 * MPI_THREAD_MULTIPLE (gdr's progress thread serves the ring), GDR_GPUSIM_MODE=host-visible
 * and a driver (MPIR_CVAR_CH4_GDR_CUDA_DRIVER). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"
#include "gdr/gdr_rma_kernel_api.h"

static int rounds = 20;

typedef struct {
    const gdr_dev_win_t *w;
    uint64_t *io;               /* host-pinned: what a get lands in, what a put sends */
    int errors;
    uint64_t seen_all;          /* the counter read under lock_all */
} kernel_t;

/* rounds increments of rank 0's counter, each under an exclusive lock. */
static void *count_kernel(void *arg)
{
    kernel_t *k = arg;
    for (int i = 0; i < rounds; i++) {
        k->errors += gdr_dev_lock(k->w, 1, 0) != GDR_DEV_OK;
        k->errors += gdr_dev_get(k->w, &k->io[0], 8, 0, 0) != GDR_DEV_OK;
        k->errors += gdr_dev_flush(k->w, 0) != GDR_DEV_OK;
        k->io[1] = k->io[0] + 1;
        k->errors += gdr_dev_put(k->w, &k->io[1], 8, 0, 0) != GDR_DEV_OK;
        k->errors += gdr_dev_unlock(k->w, 0) != GDR_DEV_OK;
    }
    return NULL;
}

/* fence_rounds rounds of a ring exchange between fences: this rank's value for round i
 * into the right neighbour's slot i % 2, a fence, then the left's value for round i read
 * from this rank's own window (the slot of the other parity takes round i + 1 meanwhile). */
typedef struct {
    const gdr_dev_win_t *w;
    uint64_t *io;
    int rank, left, right, rounds, errors, wrong;
} fence_kernel_t;

static void *fence_kernel(void *arg)
{
    fence_kernel_t *k = arg;
    for (int i = 0; i < k->rounds; i++) {
        k->io[3] = (uint64_t) k->rank * 1000 + (uint64_t) i;
        k->errors += gdr_dev_put(k->w, &k->io[3], 8, k->right, 8 + 8 * (i % 2)) != GDR_DEV_OK;
        k->errors += gdr_dev_win_fence(k->w) != GDR_DEV_OK;
        k->errors += gdr_dev_get(k->w, &k->io[4], 8, k->rank, 8 + 8 * (i % 2)) != GDR_DEV_OK;
        k->errors += gdr_dev_flush(k->w, k->rank) != GDR_DEV_OK;
        k->wrong += k->io[4] != (uint64_t) k->left * 1000 + (uint64_t) i;
    }
    return NULL;
}

static void *read_kernel(void *arg)
{
    kernel_t *k = arg;
    k->errors += gdr_dev_lock_all(k->w) != GDR_DEV_OK;
    k->errors += gdr_dev_get(k->w, &k->io[2], 8, 0, 0) != GDR_DEV_OK;
    k->errors += gdr_dev_flush(k->w, 0) != GDR_DEV_OK;
    k->seen_all = k->io[2];
    k->errors += gdr_dev_unlock_all(k->w) != GDR_DEV_OK;
    return NULL;
}

static void run_kernel(void *(*fn)(void *), kernel_t *k)
{
    pthread_t t;
    pthread_create(&t, NULL, fn, k);
    pthread_join(t, NULL);
}

static void host_count(MPI_Win win)
{
    for (int i = 0; i < rounds; i++) {
        uint64_t v = 0, next;
        GDR_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        GDR_CHECK_MPI(MPI_Get(&v, 1, MPI_UINT64_T, 0, 0, 1, MPI_UINT64_T, win));
        GDR_CHECK_MPI(MPI_Win_flush(0, win));
        next = v + 1;
        GDR_CHECK_MPI(MPI_Put(&next, 1, MPI_UINT64_T, 0, 0, 1, MPI_UINT64_T, win));
        GDR_CHECK_MPI(MPI_Win_unlock(0, win));
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    const char *r = getenv("GDR_TEST_ROUNDS");
    if (r != NULL && atoi(r) >= 1 && atoi(r) <= 1000)
        rounds = atoi(r);
    dev_api_test_init(&argc, &argv, &rank, &size);
    const size_t win_bytes = 64;
    uint64_t winmem, *io, zero[8] = { 0 };
    if (cu.alloc(&winmem, win_bytes) != 0 || cu.host_alloc((void **) &io, 64, 0) != 0)
        gdr_test_die("cuMemAlloc", MPI_ERR_NO_MEM);
    memset(io, 0, 64);
    cu.copy(winmem, (uint64_t) (uintptr_t) zero, win_bytes);
    MPI_Win win;
    GDR_CHECK_MPI(MPI_Win_create((void *) (uintptr_t) winmem, win_bytes, 1, MPI_INFO_NULL,
                                 MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPIX_Win_device dwin;
    gdr_test_set_context("MPIX_Win_get_device_handle");
    GDR_CHECK_MPI(MPIX_Win_get_device_handle(win, &dwin));
    const gdr_dev_win_t *w = (const gdr_dev_win_t *) &dwin;
    int locks = (w->flags & GDR_DEV_WIN_SYNC) != 0, all_locks = 0;
    MPI_Allreduce(&locks, &all_locks, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    const char *want = getenv("GDR_TEST_EXPECT_DEV_LOCKS");
    if (want != NULL && atoi(want) && !locks)
        gdr_test_fail("the device handle says kernels cannot lock this window");

    gdr_test_set_context("kernel locks refused");
    if (!locks) {
        /* refused by the call, nothing on the ring */
        uint64_t before = *w->ring.head;
        if (gdr_dev_lock(w, 1, 0) != GDR_DEV_ERR_SYNC || gdr_dev_unlock(w, 0) != GDR_DEV_ERR_SYNC
            || gdr_dev_lock_all(w) != GDR_DEV_ERR_SYNC
            || gdr_dev_unlock_all(w) != GDR_DEV_ERR_SYNC || gdr_dev_win_fence(w) != GDR_DEV_ERR_SYNC
            || *w->ring.head != before)
            gdr_test_fail("a window whose locks go by messages: the kernel's lock calls did not "
                          "all return GDR_DEV_ERR_SYNC, or reached the ring");
    }
    if (gdr_dev_lock(w, 1, size) != GDR_DEV_ERR_RANK)
        gdr_test_fail("a lock of a rank outside the window was not refused");

    gdr_test_set_context("counting under exclusive locks");
    int tprov;
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &tprov);
    MPI_T_pvar_session session;
    MPI_T_pvar_session_create(&session);
    unsigned long long atomics0 = gdr_pvar_value(session, "gdr_rma_lock_atomics");
    kernel_t k = {.w = w,.io = io };
    MPI_Barrier(MPI_COMM_WORLD);
    if (all_locks && rank % 2 == 0)
        run_kernel(count_kernel, &k);
    else
        host_count(win);
    if (k.errors)
        gdr_test_fail("%d device calls failed while counting", k.errors);
    /* the kernel's locks are the NIC's: an acquire (at least one atomic) and a release a
     * round */
    unsigned long long atomics = gdr_pvar_value(session, "gdr_rma_lock_atomics") - atomics0;
    if (all_locks && rank % 2 == 0 && atomics < 2ull * (unsigned long long) rounds)
        gdr_test_fail("%llu lock atomics for %d kernel lock rounds", atomics, rounds);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Barrier(MPI_COMM_WORLD);
    if (all_locks && rank % 2 == 0) {
        run_kernel(read_kernel, &k);
        if (k.errors)
            gdr_test_fail("%d device calls failed under lock_all", k.errors);
        gdr_check_long("the counter read by a kernel under lock_all", 0,
                       (long long) size * rounds, (long long) k.seen_all);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (all_locks) {
        /* every rank's kernel: a ring exchange between kernel fences, values checked */
        gdr_test_set_context("kernel fences");
        fence_kernel_t f = {.w = w,.io = io,.rank = rank,.left = (rank + size - 1) % size,
            .right = (rank + 1) % size,.rounds = rounds
        };
        pthread_t t;
        pthread_create(&t, NULL, fence_kernel, &f);
        pthread_join(t, NULL);
        if (f.errors || f.wrong)
            gdr_test_fail("%d device calls failed, %d of %d values read after a fence were not "
                          "the left neighbour's", f.errors, f.wrong, rounds);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        uint64_t v = 0;
        cu.copy((uint64_t) (uintptr_t) &v, winmem, 8);
        gdr_check_long("the counter (every increment under an exclusive lock)", 0,
                       (long long) size * rounds, (long long) v);
    }
    GDR_CHECK_MPI(MPIX_Win_free_device_handle(&dwin));
    MPI_Win_free(&win);
    cu.free(winmem);
    cu.free_host(io);
    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs != 0;
}
