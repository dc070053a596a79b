/* The device API from real CUDA kernels on an MPI window (maint/check-gpu; no GPU: compiled
 * only, by maint/check-device-header): ranks of one node sharing a GPU, each window in
 * device memory, the right neighbour reached through its CUDA IPC mapping.
 *
 * One kernel a rank, 64 threads: MPIX_Dev_put_notify_block of 256 bytes into the right
 * neighbour's window (counter 0), MPIX_Dev_put_notify_warp of 128 more by warp 0
 * (counter 1), then thread 0 runs a NO_OP, +5, CAS 5 -> 7, MAX 3, NO_OP sequence of
 * MPIX_Dev_fetch_op / MPIX_Dev_compare_swap on the neighbour's word and asks for locks and a
 * fence (MPI_ERR_RMA_SYNC where the window's synchronisation goes by messages: a node
 * without an RDMA device).  After a barrier a second kernel waits on this rank's counters
 * (MPIX_Dev_notify_wait) and reads them.  The host checks every byte the left neighbour
 * wrote, the word, the counters (MPIX_Win_notify_get_value too) and the kernels' answers.
 *
 *   nvcc -arch=sm_90 -I$PREFIX/include -o dev_mpi_kernels dev_mpi_kernels.cu \
 *        -L$PREFIX/lib -lmpi -Xlinker -rpath=$PREFIX/lib
 *   mpiexec -n 2 ./dev_mpi_kernels */
#include <mpi.h>
#include <mpix_gdr_device.cuh>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

enum { BLOCK = 256, WARP = 128, WORD = 512, WIN = 1024, THREADS = 64 };

/* answers[0..4]: the fetch_op sequence's old values; [5..7]: lock, lock_all, fence status */
__global__ void send_kernel(MPIX_Win_device w, const char *src, int right, long long *answers,
                            int *status)
{
    int bad = MPIX_Dev_put_notify_block(w, src, BLOCK, right, 0, 0) != MPI_SUCCESS;
    if (threadIdx.x < 32)
        bad |= MPIX_Dev_put_notify_warp(w, src + BLOCK, WARP, right, BLOCK, 1) != MPI_SUCCESS;
    if (bad)
        atomicAdd(&status[0], 1);
    if (threadIdx.x != 0)
        return;
    long long five = 5, seven = 7, three = 3;
    int rc = MPIX_Dev_fetch_op(w, NULL, &answers[0], MPI_LONG_LONG, right, WORD, MPI_NO_OP);
    rc |= MPIX_Dev_fetch_op(w, &five, &answers[1], MPI_LONG_LONG, right, WORD, MPI_SUM);
    rc |= MPIX_Dev_compare_swap(w, &seven, &five, &answers[2], MPI_LONG_LONG, right, WORD);
    rc |= MPIX_Dev_fetch_op(w, &three, &answers[3], MPI_LONG_LONG, right, WORD, MPI_MAX);
    rc |= MPIX_Dev_fetch_op(w, NULL, &answers[4], MPI_LONG_LONG, right, WORD, MPI_NO_OP);
    if (rc != MPI_SUCCESS)
        atomicAdd(&status[0], 1);
    MPIX_Dev_flush(w, right);
    status[1] = MPIX_Dev_win_lock(w, MPI_LOCK_EXCLUSIVE, right);
    if (status[1] == MPI_SUCCESS)
        MPIX_Dev_win_unlock(w, right);
    status[2] = MPIX_Dev_win_lock_all(w);
    if (status[2] == MPI_SUCCESS)
        MPIX_Dev_win_unlock_all(w);
    status[3] = MPIX_Dev_win_fence(w);
}

__global__ void wait_kernel(MPIX_Win_device w, unsigned long long *counts)
{
    counts[0] = MPIX_Dev_notify_wait(w, 0, 1);
    uint64_t v = 0;
    if (MPIX_Dev_notify_get_value(w, 1, &v) == MPI_SUCCESS)
        counts[1] = v;
}

static int errors;

static void check(int ok, const char *what, int rank)
{
    if (!ok) {
        errors++;
        fprintf(stderr, "rank %d: %s\n", rank, what);
    }
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    char *winmem, *src;
    long long *answers;
    int *status;
    unsigned long long *counts;
    if (cudaMalloc(&winmem, WIN) != cudaSuccess || cudaMalloc(&src, BLOCK + WARP) != cudaSuccess
        || cudaMallocManaged(&answers, 8 * sizeof(long long)) != cudaSuccess
        || cudaMallocManaged(&status, 4 * sizeof(int)) != cudaSuccess
        || cudaHostAlloc(&counts, 2 * sizeof(*counts), cudaHostAllocMapped) != cudaSuccess) {
        fprintf(stderr, "rank %d: no GPU memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 77);
    }
    char pattern[BLOCK + WARP];
    for (int i = 0; i < BLOCK + WARP; i++)
        pattern[i] = (char) (rank * 31 + i);
    cudaMemcpy(src, pattern, sizeof(pattern), cudaMemcpyHostToDevice);
    cudaMemset(winmem, 0, WIN);
    memset(status, 0, 4 * sizeof(int));
    memset(counts, 0, 2 * sizeof(*counts));

    MPI_Win win;
    MPI_Win_create(winmem, WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPIX_Win_notify_attach(win, 2, MPI_INFO_NULL);
    MPI_Win_lock_all(0, win);
    MPIX_Win_device dw;
    check(MPIX_Win_get_device_handle(win, &dw) == MPI_SUCCESS, "MPIX_Win_get_device_handle",
          rank);
    MPI_Barrier(MPI_COMM_WORLD);
    send_kernel<<<1, THREADS>>>(dw, src, right, answers, status);
    check(cudaDeviceSynchronize() == cudaSuccess, "the sending kernel failed", rank);
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    wait_kernel<<<1, 1>>>(dw, counts);
    check(cudaDeviceSynchronize() == cudaSuccess, "the waiting kernel failed", rank);

    char got[WIN];
    cudaMemcpy(got, winmem, WIN, cudaMemcpyDeviceToHost);
    int bytes_ok = 1;
    for (int i = 0; i < BLOCK + WARP; i++)
        bytes_ok &= got[i] == (char) (left * 31 + i);
    check(bytes_ok, "the left neighbour's block and warp bytes", rank);
    long long word;
    memcpy(&word, got + WORD, sizeof(word));
    check(word == 7, "the word after NO_OP, +5, CAS 5 -> 7, MAX 3, NO_OP is not 7", rank);
    const long long want[5] = { 0, 0, 5, 7, 7 };
    for (int i = 0; i < 5; i++)
        check(answers[i] == want[i], "a fetch_op's old value", rank);
    check(status[0] == 0, "a put_notify or fetch_op returned an error", rank);
    for (int i = 1; i <= 3; i++)
        check(status[i] == MPI_SUCCESS || status[i] == MPI_ERR_RMA_SYNC,
              "a lock, lock_all or fence returned neither success nor MPI_ERR_RMA_SYNC", rank);
    check(counts[0] == 1 && counts[1] == 1, "the counters as kernels read them", rank);
    MPI_Count c0 = 0, c1 = 0;
    MPIX_Win_notify_get_value(win, 0, &c0);
    MPIX_Win_notify_get_value(win, 1, &c1);
    check(c0 == 1 && c1 == 1, "the counters as the host reads them", rank);

    MPIX_Win_free_device_handle(&dw);
    MPI_Win_unlock_all(win);
    MPIX_Win_notify_detach(win);
    MPI_Win_free(&win);
    cudaFree(winmem);
    cudaFree(src);
    cudaFree(answers);
    cudaFree(status);
    cudaFreeHost(counts);
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return all != 0;
}
