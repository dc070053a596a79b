/* mpix_gdr_device.cuh: kernel-triggered RMA on MPI windows (MPICH with the ch4:gdr netmod;
 * gdr's DESIGN.md section 4).  Installed beside mpi.h; include it in CUDA code:
 *
 *     MPIX_Win_device dwin;
 *     MPIX_Win_get_device_handle(win, &dwin);        // host, inside MPI_Win_lock_all
 *     kernel<<<grid, block, 0, stream>>>(dwin, ...);  // MPIX_Dev_put(dwin, ...) etc.
 *     MPIX_Win_free_device_handle(&dwin);            // once the kernels finished
 *
 * This rank's own window, and the device windows of ranks on this node (CUDA IPC), are
 * reached by loads and stores; other ranks through a descriptor ring that gdr's progress
 * serves (a progress thread under MPI_THREAD_MULTIPLE, else the host's MPI calls:
 * MPIR_CVAR_CH4_GDR_ENQUEUE_PROGRESS).  Return values: MPI_SUCCESS, MPI_ERR_RANK /
 * MPI_ERR_ARG for a bad rank, signal op or comparison, MPI_ERR_RMA_RANGE for a
 * displacement outside a directly reached window (nothing is done), or MPI_ERR_OTHER when gdr's proxy stopped (it failed: MPI_Win_free on the host says why)
 * instead of waiting for ever.
 * Puts and gets to other ranks are started when the call returns: the source of a put must
 * stay unchanged, and the destination of a get unread, until MPIX_Dev_flush(rank).
 * fetch_add's result is written by gdr's proxy: `result` must be host-pinned memory
 * mapped for the device (cudaHostAlloc) when the target is another rank.
 * The _warp and _block variants are called by every thread of the warp or block with the
 * same arguments; one thread issues the operation, and all return after it. */
#ifndef MPIX_GDR_DEVICE_CUH
#define MPIX_GDR_DEVICE_CUH

#include <mpi.h>
#include "gdr/gdr_rma_dev_api.h"

static_assert(sizeof(gdr_dev_win_t) <= sizeof(MPIX_Win_device),
              "MPIX_Win_device must hold gdr's device handle");

__host__ __device__ inline const gdr_dev_win_t *MPIX_Dev_gdr(const MPIX_Win_device &w)
{
    return reinterpret_cast<const gdr_dev_win_t *>(&w);
}

__host__ __device__ inline int MPIX_Dev_status(int rc)
{
    return rc == GDR_DEV_OK ? MPI_SUCCESS : rc == GDR_DEV_ERR_RANK ? MPI_ERR_RANK
        : rc == GDR_DEV_ERR_ARG ? MPI_ERR_ARG : rc == GDR_DEV_ERR_RANGE ? MPI_ERR_RMA_RANGE
        : MPI_ERR_OTHER;
}

__device__ inline int MPIX_Dev_put(MPIX_Win_device w, const void *src, size_t bytes, int rank,
                                   MPI_Aint disp)
{
    return MPIX_Dev_status(gdr_dev_put(MPIX_Dev_gdr(w), src, bytes, rank, disp));
}

__device__ inline int MPIX_Dev_get(MPIX_Win_device w, void *dst, size_t bytes, int rank,
                                   MPI_Aint disp)
{
    return MPIX_Dev_status(gdr_dev_get(MPIX_Dev_gdr(w), dst, bytes, rank, disp));
}

__device__ inline int MPIX_Dev_put_signal(MPIX_Win_device w, const void *src, size_t bytes,
                                          int rank, MPI_Aint disp, MPI_Aint signal_disp,
                                          uint64_t value, int signal_op)
{
    return MPIX_Dev_status(gdr_dev_put_signal(MPIX_Dev_gdr(w), src, bytes, rank, disp,
                                              signal_disp, value, signal_op));
}

__device__ inline int MPIX_Dev_fetch_add(MPIX_Win_device w, int rank, MPI_Aint disp,
                                         uint64_t value, uint64_t *result)
{
    return MPIX_Dev_status(gdr_dev_fetch_add(MPIX_Dev_gdr(w), rank, disp, value, result));
}

__device__ inline int MPIX_Dev_flush(MPIX_Win_device w, int rank)
{
    return MPIX_Dev_status(gdr_dev_flush(MPIX_Dev_gdr(w), rank));
}

__device__ inline uint64_t MPIX_Dev_signal_wait_until(MPIX_Win_device w, MPI_Aint signal_disp,
                                                      int cmp, uint64_t value)
{
    uint64_t seen = 0;
    (void) gdr_dev_signal_wait_until(MPIX_Dev_gdr(w), signal_disp, cmp, value, &seen);
    return seen;
}

/* ---- cooperative variants ------------------------------------------------------------ */

__device__ inline int MPIX_Dev_put_warp(MPIX_Win_device w, const void *src, size_t bytes,
                                        int rank, MPI_Aint disp)
{
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    int lane = threadIdx.x % 32, rc = GDR_DEV_OK;
    char *dst = gdr_dev_rank_ok(d, rank) && gdr_dev_direct(d, rank)
        ? gdr_dev_at(d, rank, disp, bytes) : NULL;
    if (dst != NULL) {
        /* same node: the warp copies 8-byte words together, the tail by lane 0 */
        const char *s = static_cast<const char *>(src);
        size_t words = ((((uintptr_t) dst | (uintptr_t) s) & 7) == 0) ? bytes / 8 : 0;
        for (size_t i = lane; i < words; i += 32)
            reinterpret_cast<uint64_t *>(dst)[i] = reinterpret_cast<const uint64_t *>(s)[i];
        if (lane == 0)
            gdr_dev_copy(dst + words * 8, s + words * 8, bytes - words * 8);
    } else if (lane == 0) {
        rc = gdr_dev_put(d, src, bytes, rank, disp);
    }
    __syncwarp();
    return MPIX_Dev_status(__shfl_sync(0xffffffffu, rc, 0));
}

__device__ inline int MPIX_Dev_put_block(MPIX_Win_device w, const void *src, size_t bytes,
                                         int rank, MPI_Aint disp)
{
    __shared__ int rc;
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    if (t == 0)
        rc = GDR_DEV_OK;
    __syncthreads();
    char *dst = gdr_dev_rank_ok(d, rank) && gdr_dev_direct(d, rank)
        ? gdr_dev_at(d, rank, disp, bytes) : NULL;
    if (dst != NULL) {
        const char *s = static_cast<const char *>(src);
        size_t words = ((((uintptr_t) dst | (uintptr_t) s) & 7) == 0) ? bytes / 8 : 0;
        for (size_t i = t; i < words; i += nt)
            reinterpret_cast<uint64_t *>(dst)[i] = reinterpret_cast<const uint64_t *>(s)[i];
        if (t == 0)
            gdr_dev_copy(dst + words * 8, s + words * 8, bytes - words * 8);
    } else if (t == 0) {
        rc = gdr_dev_put(d, src, bytes, rank, disp);
    }
    __syncthreads();
    return MPIX_Dev_status(rc);
}

__device__ inline int MPIX_Dev_flush_warp(MPIX_Win_device w, int rank)
{
    int rc = GDR_DEV_OK;
    __syncwarp();
    if (threadIdx.x % 32 == 0)
        rc = gdr_dev_flush(MPIX_Dev_gdr(w), rank);
    __syncwarp();
    return MPIX_Dev_status(__shfl_sync(0xffffffffu, rc, 0));
}

__device__ inline int MPIX_Dev_flush_block(MPIX_Win_device w, int rank)
{
    __shared__ int rc;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
        rc = gdr_dev_flush(MPIX_Dev_gdr(w), rank);
    __syncthreads();
    return MPIX_Dev_status(rc);
}

#endif /* MPIX_GDR_DEVICE_CUH */
