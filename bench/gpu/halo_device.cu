/* halo_device: halo.c's loop with the device API from a real CUDA kernel (issue 21): one
 * block per rank runs every iteration without returning to the host: its threads write the
 * halo, MPIX_Dev_put_block sends it to the right neighbour's window, MPIX_Dev_put_signal
 * adds 1 to the neighbour's signal word, MPIX_Dev_flush_block completes both, and the
 * block waits (MPIX_Dev_signal_wait_until) for its left neighbour's signal before the next
 * iteration reads what arrived.  Same-node neighbours are reached by stores and atomics
 * through CUDA IPC; other ranks through gdr's descriptor ring.
 *
 *   nvcc -arch=sm_90 -I$PREFIX/include -o halo_device bench/gpu/halo_device.cu \
 *        -L$PREFIX/lib -lmpi -Xlinker -rpath=$PREFIX/lib
 *   mpiexec -n 2 ./halo_device [-t TOOL] [-m MAX_BYTES] [-i ITERS]
 *
 * CSV on rank 0's stdout, as halo.c's: halo_device,BYTES,us per iteration,MB/s,TOOL,p50,
 * 8 B to MAX_BYTES (default 1 MiB) by factors of 8; the time of one kernel of ITERS
 * iterations (default 1000), median of 5.  The values that arrive are checked (a wrong
 * one ends the run with a message), never the times. */
#include <mpi.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "mpix_gdr_device.cuh"

#define REPS 5
enum { SIGNAL = 0, HALO = 64 };         /* byte offsets in the window */

static void die(int rank, const char *what)
{
    fprintf(stderr, "halo_device: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CUDA(rank_, call_) \
    do { if ((call_) != cudaSuccess) die((rank_), #call_); } while (0)

/* One block: iterations first .. first + iters - 1 (signal values count on from the
 * earlier kernels').  *bad gets the first wrong value that arrived, else stays 0. */
__global__ void halo_loop(MPIX_Win_device w, const unsigned char *win, uint64_t *src,
                          size_t bytes, int right, uint64_t first, int iters,
                          unsigned long long *bad)
{
    size_t words = bytes / 8, t = threadIdx.x, nt = blockDim.x;
    const uint64_t *arrived = reinterpret_cast<const uint64_t *>(win + HALO);
    for (int k = 0; k < iters; k++) {
        uint64_t it = first + (uint64_t) k;
        /* the "kernel": read what the left neighbour sent last (it, or already it + 1:
         * the neighbour may be one iteration ahead once it has this rank's signal), then
         * write the next halo */
        if (k > 0)
            for (size_t i = t; i < words; i += nt) {
                uint64_t v = ((volatile const uint64_t *) arrived)[i];
                if (v != it && v != it + 1 && *bad == 0)
                    *bad = it;
            }
        for (size_t i = t; i < words; i += nt)
            src[i] = it + 1;
        __syncthreads();
        MPIX_Dev_put_block(w, src, bytes, right, HALO);
        __threadfence_system();
        __syncthreads();
        if (t == 0)
            MPIX_Dev_put_signal(w, src, 0, right, HALO, SIGNAL, 1, MPIX_SIGNAL_ADD);
        MPIX_Dev_flush_block(w, right);
        if (t == 0)
            MPIX_Dev_signal_wait_until(w, SIGNAL, MPIX_CMP_GE, it + 1);
        __syncthreads();
    }
}

int main(int argc, char **argv)
{
    int provided, rank, size, iters = 1000;
    size_t max = 1 << 20;
    const char *tool = "gdr";
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int c; (c = getopt(argc, argv, "t:m:i:")) != -1;) {
        if (c == 't')
            tool = optarg;
        else if (c == 'm')
            max = strtoull(optarg, NULL, 0);
        else if (c == 'i')
            iters = atoi(optarg);
        else
            die(rank, "usage: halo_device [-t TOOL] [-m MAX_BYTES] [-i ITERS]");
    }
    size_t win_bytes = HALO + max;
    unsigned char *winmem;
    uint64_t *src;
    unsigned long long *bad;
    CUDA(rank, cudaMalloc(&winmem, win_bytes));
    CUDA(rank, cudaMalloc(&src, max));
    CUDA(rank, cudaHostAlloc(&bad, sizeof(*bad), cudaHostAllocMapped));
    CUDA(rank, cudaMemset(winmem, 0, win_bytes));
    *bad = 0;
    CUDA(rank, cudaDeviceSynchronize());
    MPI_Win win;
    MPI_Win_create(winmem, (MPI_Aint) win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    MPIX_Win_device dwin;
    if (MPIX_Win_get_device_handle(win, &dwin) != MPI_SUCCESS)
        die(rank, "MPIX_Win_get_device_handle");
    int right = (rank + 1) % size;
    cudaStream_t stream;
    CUDA(rank, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (rank == 0)
        printf("benchmark,bytes,latency_us,bandwidth_MBps,tool,stat\n");

    uint64_t first = 0;
    for (size_t bytes = 8; bytes <= max; bytes *= 8) {
        double us[REPS];
        /* one untimed kernel, then REPS timed ones (each a whole loop) */
        for (int r = -1; r < REPS; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            halo_loop<<<1, 256, 0, stream>>>(dwin, winmem, src, bytes, right, first, iters, bad);
            CUDA(rank, cudaStreamSynchronize(stream));
            double t = MPI_Wtime() - t0;
            first += (uint64_t) iters;
            if (*bad != 0) {
                char msg[128];
                snprintf(msg, sizeof(msg), "a halo of %zu bytes held a wrong value at iteration"
                         " %llu", bytes, *bad);
                die(rank, msg);
            }
            if (r >= 0)
                us[r] = t * 1e6 / iters;
        }
        std::sort(us, us + REPS);
        double p50 = us[REPS / 2];
        if (rank == 0)
            printf("halo_device,%zu,%.3f,%.1f,%s,p50\n", bytes, p50, bytes / p50, tool);
        fflush(stdout);
    }
    MPIX_Win_free_device_handle(&dwin);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    cudaFree(winmem);
    cudaFree(src);
    cudaFreeHost(bad);
    MPI_Finalize();
    return 0;
}
