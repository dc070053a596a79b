/* dev_put_issue: how long a device-API put to a same-node window takes from the call to
 * its data landing (issue 21: <= 2 us on a real GPU).  One thread of rank 0's kernel runs
 * ITERS times MPIX_Dev_put of BYTES to rank 1 % size (the peer's window through CUDA IPC,
 * or with one rank its own window) and MPIX_Dev_flush of that rank, which returns once the
 * stores are visible to the whole system; the GPU's global timer brackets the loop.  The
 * _block rows do the same with MPIX_Dev_put_block and MPIX_Dev_flush_block from 256
 * threads.  The last value put is read back on the host and checked (a wrong one ends
 * the run), never the times.
 *
 *   nvcc -arch=sm_90 -I$PREFIX/include -o dev_put_issue bench/gpu/dev_put_issue.cu \
 *        -L$PREFIX/lib -lmpi -Xlinker -rpath=$PREFIX/lib
 *   mpiexec -n 2 ./dev_put_issue [-t TOOL] [-m MAX_BYTES] [-i ITERS]
 *
 * CSV on rank 0's stdout (bench/README.md columns): dev_put_issue[_block],BYTES,us per put
 * (call to landed, the loop's mean),MB/s,TOOL,mean; 8 B to MAX_BYTES (default 64 KiB) by
 * factors of 8, ITERS default 10000. */
#include <mpi.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "mpix_gdr_device.cuh"

static void die(int rank, const char *what)
{
    fprintf(stderr, "dev_put_issue: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CUDA(rank_, call_) \
    do { if ((call_) != cudaSuccess) die((rank_), #call_); } while (0)

__device__ inline unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* ITERS puts of bytes from src (its first word set to the iteration + 1 before each) to
 * target's window at 0, each followed by a flush; *ns gets the loop's length, *rc the
 * first error. */
__global__ void put_loop(MPIX_Win_device w, uint64_t *src, size_t bytes, int target, int iters,
                         int block, unsigned long long *ns, int *rc)
{
    __shared__ int err;
    if (threadIdx.x == 0)
        err = MPI_SUCCESS;
    __syncthreads();
    unsigned long long t0 = global_ns();
    for (int k = 0; k < iters && err == MPI_SUCCESS; k++) {
        if (threadIdx.x == 0)
            src[0] = (uint64_t) k + 1;
        __syncthreads();
        int e;
        if (block) {
            e = MPIX_Dev_put_block(w, src, bytes, target, 0);
            if (e == MPI_SUCCESS)
                e = MPIX_Dev_flush_block(w, target);
        } else if (threadIdx.x == 0) {
            e = MPIX_Dev_put(w, src, bytes, target, 0);
            if (e == MPI_SUCCESS)
                e = MPIX_Dev_flush(w, target);
        } else {
            e = MPI_SUCCESS;
        }
        if (e != MPI_SUCCESS)
            err = e;
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        *ns = global_ns() - t0;
        *rc = err;
    }
}

int main(int argc, char **argv)
{
    int provided, rank, size, iters = 10000;
    size_t max = 64 << 10;
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
            die(rank, "usage: dev_put_issue [-t TOOL] [-m MAX_BYTES] [-i ITERS]");
    }
    if (max < 8 || iters < 1)
        die(rank, "MAX_BYTES must be at least 8 and ITERS at least 1");
    unsigned char *winmem;
    uint64_t *src;
    unsigned long long *ns;
    int *rc;
    CUDA(rank, cudaMalloc(&winmem, max));
    CUDA(rank, cudaMalloc(&src, max));
    CUDA(rank, cudaMemset(winmem, 0, max));
    CUDA(rank, cudaMemset(src, 0, max));
    CUDA(rank, cudaHostAlloc(&ns, sizeof(*ns), cudaHostAllocMapped));
    CUDA(rank, cudaHostAlloc(&rc, sizeof(*rc), cudaHostAllocMapped));
    CUDA(rank, cudaDeviceSynchronize());
    MPI_Win win;
    MPI_Win_create(winmem, (MPI_Aint) max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    MPIX_Win_device dwin;
    if (MPIX_Win_get_device_handle(win, &dwin) != MPI_SUCCESS)
        die(rank, "MPIX_Win_get_device_handle");
    int target = 1 % size;
    if (rank == 0)
        printf("benchmark,bytes,latency_us,bandwidth_MBps,tool,stat\n");
    for (int block = 0; block < 2; block++)
        for (size_t bytes = 8; bytes <= max; bytes *= 8) {
            if (rank == 0) {
                /* one untimed loop, then the timed one */
                for (int r = 0; r < 2; r++) {
                    put_loop<<<1, 256>>>(dwin, src, bytes, target, iters, block, ns, rc);
                    CUDA(rank, cudaDeviceSynchronize());
                    if (*rc != MPI_SUCCESS)
                        die(rank, "a device put or flush failed");
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == target) {       /* what landed last: the last iteration's number */
                uint64_t last = 0;
                CUDA(rank, cudaMemcpy(&last, winmem, 8, cudaMemcpyDeviceToHost));
                if (last != (uint64_t) iters)
                    die(rank, "the last put did not land in the window");
            }
            if (rank == 0) {
                double us = (double) *ns / 1e3 / iters;
                printf("dev_put_issue%s,%zu,%.3f,%.1f,%s,mean\n", block ? "_block" : "", bytes,
                       us, bytes / us, tool);
                fflush(stdout);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    MPIX_Win_free_device_handle(&dwin);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    cudaFree(winmem);
    cudaFree(src);
    cudaFreeHost(ns);
    cudaFreeHost(rc);
    MPI_Finalize();
    return 0;
}
