/* put_bw: same-node MPI_Put bandwidth between device buffers, next to cudaMemcpy
 * device-to-device measured in the same process (DESIGN.md section 7: Put >= 0.9x
 * cudaMemcpy D2D at >= 4 MiB).
 *
 *   mpiexec -n 2 put_bw [-t TOOL] [-m MAX_BYTES] [-i ITERS]
 *
 * Rank 0 puts from a cudaMalloc'd buffer into rank 1's window (MPI_Win_create over
 * cudaMalloc'd memory), ITERS puts per MPI_Win_flush inside one MPI_Win_lock_all epoch,
 * then gets as many back, sizes 8 B .. MAX_BYTES (default 256 MiB; by 8 up to 64 KiB, then
 * by 2).  Rank 0 then times cudaMemcpy of the same sizes between two of its own device
 * buffers; and one 8-byte Put + flush at a time next to one 8-byte cudaMemcpyAsync +
 * stream synchronisation.  Both ranks use GPU 0 unless there are
 * more (rank % count).  CSV on stdout, bench/README.md columns:
 *   bw_put_device_create_flush,BYTES,us per put,MB/s,TOOL,p50 us
 *   bw_get_device_create_flush,BYTES,us per get,MB/s,TOOL,p50 us
 *   cudaMemcpy_d2d,BYTES,us per copy,MB/s,cuda,p50 us
 *   lat_put_flush_device_create,8,...  lat_cudaMemcpyAsync_sync,8,...
 * then MPI_Accumulate (SUM of doubles from device memory, 64 KiB .. 4 MiB, at most 10 per
 * flush) and Fetch_and_op + flush latency (int64 SUM, host operands) into the same window:
 *   bw_acc_sum_double_device_create_flush,BYTES,...
 *   lat_fetch_and_op_int64_device_create_flush,8,...
 * A benchmark: it prints numbers and never judges them.
 */
#define _POSIX_C_SOURCE 200809L     /* getopt */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPS 7          /* timed repetitions per size; p50 is their median */

static void cuda_check(const char *what, cudaError_t err)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "put_bw: %s: %s\n", what, cudaGetErrorString(err));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* mean and median of REPS samples, in microseconds per operation */
static void report(const char *bench, size_t bytes, const char *tool, double *us)
{
    double mean = 0;
    for (int r = 0; r < REPS; r++)
        mean += us[r] / REPS;
    qsort(us, REPS, sizeof(double), cmp_double);
    double p50 = us[REPS / 2];
    printf("%s,%zu,%.3f,%.1f,%s,%.3f\n", bench, bytes, mean, (double) bytes / p50, tool, p50);
    fflush(stdout);
}

/* One Put from buf into rank 1's window, or one Get from it into buf. */
static void one_way(int get, void *buf, size_t bytes, MPI_Win win)
{
    if (get)
        MPI_Get(buf, (int) bytes, MPI_BYTE, 1, 0, (int) bytes, MPI_BYTE, win);
    else
        MPI_Put(buf, (int) bytes, MPI_BYTE, 1, 0, (int) bytes, MPI_BYTE, win);
}

int main(int argc, char **argv)
{
    const char *tool = "gdr";
    size_t max_bytes = 256u << 20;
    int iters = 50, rank, size, ndev = 0, opt;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "t:m:i:")) != -1) {
        if (opt == 't')
            tool = optarg;
        else if (opt == 'm')
            max_bytes = strtoull(optarg, NULL, 0);
        else if (opt == 'i')
            iters = atoi(optarg);
        else {
            if (rank == 0)
                fprintf(stderr, "usage: put_bw [-t TOOL] [-m MAX_BYTES] [-i ITERS]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (size != 2 || iters < 1) {
        if (rank == 0)
            fprintf(stderr, "put_bw: needs exactly 2 ranks and -i >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    cuda_check("cudaGetDeviceCount", cudaGetDeviceCount(&ndev));
    cuda_check("cudaSetDevice", cudaSetDevice(rank % ndev));

    void *src, *win_mem, *copy_dst;
    cuda_check("cudaMalloc", cudaMalloc(&src, max_bytes));
    cuda_check("cudaMalloc", cudaMalloc(&win_mem, max_bytes));
    cuda_check("cudaMalloc", cudaMalloc(&copy_dst, max_bytes));
    cuda_check("cudaMemset", cudaMemset(src, rank + 1, max_bytes));
    cuda_check("cudaDeviceSynchronize", cudaDeviceSynchronize());
    MPI_Win win;
    MPI_Win_create(win_mem, (MPI_Aint) max_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    if (rank == 0)
        printf("benchmark,bytes,latency_us,bandwidth_MBps,tool,p50_us\n");
    double us[REPS];
    /* Put, then Get, both + flush, ITERS per flush; cudaMemcpyAsync of the same size */
    for (size_t bytes = 8; bytes <= max_bytes; bytes *= bytes < 65536 ? 8 : 2) {
        if (rank == 0) {
            for (int get = 0; get < 2; get++) {
                MPI_Win_lock_all(0, win);
                one_way(get, src, bytes, win);  /* warm-up */
                MPI_Win_flush(1, win);
                for (int r = 0; r < REPS; r++) {
                    double t = MPI_Wtime();
                    for (int i = 0; i < iters; i++)
                        one_way(get, src, bytes, win);
                    MPI_Win_flush(1, win);
                    us[r] = (MPI_Wtime() - t) * 1e6 / iters;
                }
                MPI_Win_unlock_all(win);
                report(get ? "bw_get_device_create_flush" : "bw_put_device_create_flush", bytes,
                       tool, us);
            }
            cuda_check("cudaMemcpy", cudaMemcpy(copy_dst, src, bytes, cudaMemcpyDeviceToDevice));
            for (int r = 0; r < REPS; r++) {
                double t = MPI_Wtime();
                for (int i = 0; i < iters; i++)
                    cudaMemcpyAsync(copy_dst, src, bytes, cudaMemcpyDeviceToDevice, 0);
                cuda_check("cudaDeviceSynchronize", cudaDeviceSynchronize());
                us[r] = (MPI_Wtime() - t) * 1e6 / iters;
            }
            report("cudaMemcpy_d2d", bytes, "cuda", us);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* one 8-byte Put + flush at a time, next to one 8-byte cudaMemcpyAsync + stream sync */
    if (rank == 0) {
        cudaStream_t s;
        cuda_check("cudaStreamCreate", cudaStreamCreate(&s));
        MPI_Win_lock_all(0, win);
        for (int r = 0; r < REPS; r++) {
            double t = MPI_Wtime();
            for (int i = 0; i < 100; i++) {
                MPI_Put(src, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }
            us[r] = (MPI_Wtime() - t) * 1e6 / 100;
        }
        MPI_Win_unlock_all(win);
        report("lat_put_flush_device_create", 8, tool, us);
        for (int r = 0; r < REPS; r++) {
            double t = MPI_Wtime();
            for (int i = 0; i < 100; i++) {
                cudaMemcpyAsync(copy_dst, src, 8, cudaMemcpyDeviceToDevice, s);
                cuda_check("cudaStreamSynchronize", cudaStreamSynchronize(s));
            }
            us[r] = (MPI_Wtime() - t) * 1e6 / 100;
        }
        report("lat_cudaMemcpyAsync_sync", 8, "cuda", us);
        cudaStreamDestroy(s);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* accumulates into the device window: MPI_SUM of doubles from the device buffer, 64 KiB
     * to 4 MiB; then Fetch_and_op (SUM of an int64, host operands) + flush, one at a time */
    int acc_iters = iters < 10 ? iters : 10;
    for (size_t bytes = 65536; rank == 0 && bytes <= max_bytes && bytes <= (4u << 20);
         bytes *= 4) {
        int n = (int) (bytes / sizeof(double));
        MPI_Win_lock_all(0, win);
        MPI_Accumulate(src, n, MPI_DOUBLE, 1, 0, n, MPI_DOUBLE, MPI_SUM, win);  /* warm-up */
        MPI_Win_flush(1, win);
        for (int r = 0; r < REPS; r++) {
            double t = MPI_Wtime();
            for (int i = 0; i < acc_iters; i++)
                MPI_Accumulate(src, n, MPI_DOUBLE, 1, 0, n, MPI_DOUBLE, MPI_SUM, win);
            MPI_Win_flush(1, win);
            us[r] = (MPI_Wtime() - t) * 1e6 / acc_iters;
        }
        MPI_Win_unlock_all(win);
        report("bw_acc_sum_double_device_create_flush", bytes, tool, us);
    }
    if (rank == 0) {
        int64_t one = 1, old;
        MPI_Win_lock_all(0, win);
        for (int r = 0; r < REPS; r++) {
            double t = MPI_Wtime();
            for (int i = 0; i < 100; i++) {
                MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, 0, MPI_SUM, win);
                MPI_Win_flush(1, win);
            }
            us[r] = (MPI_Wtime() - t) * 1e6 / 100;
        }
        MPI_Win_unlock_all(win);
        report("lat_fetch_and_op_int64_device_create_flush", 8, tool, us);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    cudaFree(src);
    cudaFree(win_mem);
    cudaFree(copy_dst);
    MPI_Finalize();
    return 0;
}
