/* Compiled (not run) by maint/check's install tier with nvcc against the installed mpi.h
 * and mpix_gdr_device.cuh: every MPIX_Dev_ call of DESIGN.md section 4 in one kernel, so a
 * change that breaks the public device header fails the check.  maint/check-gpu runs
 * kernels for real. */
#include <mpi.h>
#include <mpix_gdr_device.cuh>

__global__ void every_call(MPIX_Win_device w, const double *src, double *dst, uint64_t *result)
{
    int me = MPIX_Dev_gdr(w)->rank, right = (me + 1) % MPIX_Dev_gdr(w)->nranks;
    MPIX_Dev_put(w, src, 8, right, 0);
    MPIX_Dev_put_signal(w, src, 8, right, 8, 0, 1, MPIX_SIGNAL_ADD);
    MPIX_Dev_get(w, dst, 8, right, 0);
    MPIX_Dev_fetch_add(w, right, 16, 1, result);
    MPIX_Dev_flush(w, right);
    MPIX_Dev_put_warp(w, src, 256, right, 64);
    MPIX_Dev_flush_warp(w, right);
    MPIX_Dev_put_block(w, src, 1024, right, 64);
    MPIX_Dev_flush_block(w, right);
    MPIX_Dev_accumulate(w, src, 1, MPI_DOUBLE, right, 0, MPI_SUM);
    MPIX_Dev_accumulate_warp(w, src, 32, MPI_DOUBLE, right, 0, MPI_MAX);
    MPIX_Dev_accumulate_block(w, src, 128, MPI_DOUBLE, right, 0, MPI_REPLACE);
    (void) MPIX_Dev_signal_wait_until(w, 0, MPIX_CMP_GE, 1);
    MPIX_Dev_put_notify(w, src, 8, right, 0, 0);
    MPIX_Dev_get_notify(w, dst, 8, right, 0, 1);
    uint64_t count = 0;
    MPIX_Dev_notify_get_value(w, 0, &count);
    (void) MPIX_Dev_notify_wait(w, 0, count + 1);
    MPIX_Dev_put_notify_warp(w, src, 256, right, 64, 0);
    MPIX_Dev_get_notify_warp(w, dst, 256, right, 64, 1);
    MPIX_Dev_put_notify_block(w, src, 1024, right, 64, 0);
    MPIX_Dev_get_notify_block(w, dst, 1024, right, 64, 1);
    MPIX_Dev_get_warp(w, dst, 256, right, 64);
    MPIX_Dev_get_block(w, dst, 1024, right, 64);
    MPIX_Dev_flush_all(w);
    MPIX_Dev_fetch_op(w, src, dst, MPI_DOUBLE, right, 0, MPI_MAX);
    long long cmp = 0, swap = 1, old = 0;
    MPIX_Dev_compare_swap(w, &swap, &cmp, &old, MPI_LONG_LONG, right, 0);
    if (MPIX_Dev_win_lock(w, MPI_LOCK_EXCLUSIVE, right) == MPI_SUCCESS) {
        MPIX_Dev_put(w, src, 8, right, 0);
        MPIX_Dev_win_unlock(w, right);
    }
    if (MPIX_Dev_win_lock_all(w) == MPI_SUCCESS)
        MPIX_Dev_win_unlock_all(w);
    MPIX_Dev_win_fence(w);
}
