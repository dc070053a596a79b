/* internode_bw: Put/Get bandwidth and 8-byte Put+flush latency between two nodes, into a
 * window in host memory and into one in device memory, in one run, so that a GPUDirect
 * mode (MPIR_CVAR_CH4_GDR_GPUDIRECT) is seen next to the host figure on the same link
 * (issue 19: staged device-window Put >= 0.9x the host window's at >= 1 MiB).
 *
 *   mpiexec -n 2 internode_bw [-t TOOL] [-m MAX_BYTES] [-i ITERS]
 *
 * The CUDA driver is reached as gdr's tests reach it (test/mpi/gdr_cuda_test.h): the
 * library MPIR_CVAR_CH4_GDR_CUDA_DRIVER names (the simulated GPU over maint/rxe) or
 * libcuda.so.1.  Rank 0 puts from (gets into) a buffer of the window's kind, ITERS
 * operations per MPI_Win_flush in one MPI_Win_lock_all epoch, 4 KiB .. MAX_BYTES (default
 * 4 MiB) by 4; REPS timed repetitions per size, p50 their median.  CSV on stdout
 * (bench/README.md columns):
 *   bw_put_{host,device}_create_flush,BYTES,us per put,MB/s,TOOL,p50 us
 *   bw_get_{host,device}_create_flush,BYTES,us per get,MB/s,TOOL,p50 us
 *   lat_put_flush_{host,device}_create,8,us,,TOOL,p50 us
 * A benchmark: it prints numbers and never judges them. */
#define _POSIX_C_SOURCE 200809L     /* getopt */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

#define REPS 5

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* seconds per operation: mean over REPS and their median */
static void timed(MPI_Win win, int rank, int put, void *buf, size_t n, int iters, double *mean,
                  double *p50)
{
    double t[REPS], sum = 0;
    for (int r = 0; r < REPS; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        if (rank == 0) {
            for (int i = 0; i < iters; i++) {
                if (put)
                    MPI_Put(buf, (int) n, MPI_BYTE, 1, 0, (int) n, MPI_BYTE, win);
                else
                    MPI_Get(buf, (int) n, MPI_BYTE, 1, 0, (int) n, MPI_BYTE, win);
            }
            MPI_Win_flush(1, win);
        }
        t[r] = (now() - t0) / iters;
        sum += t[r];
    }
    qsort(t, REPS, sizeof(double), cmp_double);
    *mean = sum / REPS;
    *p50 = t[REPS / 2];
}

int main(int argc, char **argv)
{
    const char *tool = "gdr";
    size_t max = (size_t) 4 << 20;
    int iters = 16, opt, rank, size;
    while ((opt = getopt(argc, argv, "t:m:i:")) != -1) {
        if (opt == 't')
            tool = optarg;
        else if (opt == 'm')
            max = (size_t) strtoull(optarg, NULL, 0);
        else if (opt == 'i')
            iters = atoi(optarg);
    }
    int cuda_rc = cuda_open();  /* before MPI_Init: gdr takes the device current then */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "internode_bw: run with 2 ranks on 2 nodes\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (cuda_rc != 0) {
        if (rank == 0)
            fprintf(stderr, "internode_bw: no CUDA driver: device rows left out\n");
    }
    if (rank == 0)
        printf("benchmark,bytes,latency_us,bandwidth_MBps,tool,p50_us\n");
    for (int device = 0; device <= (cuda_rc == 0); device++) {
        const char *kind = device ? "device" : "host";
        void *mem = device ? dev_alloc(max) : malloc(max);
        void *buf = device ? dev_alloc(max) : malloc(max);
        if (!device) {
            memset(mem, 0, max);
            memset(buf, rank + 1, max);
        }
        MPI_Win win;
        MPI_Win_create(mem, (MPI_Aint) max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_lock_all(0, win);
        for (int put = 1; put >= 0; put--) {
            for (size_t n = 4096; n <= max; n *= 4) {
                double mean, p50;
                timed(win, rank, put, buf, n, iters, &mean, &p50);
                if (rank == 0)
                    printf("bw_%s_%s_create_flush,%zu,%.3f,%.2f,%s,%.3f\n", put ? "put" : "get",
                           kind, n, mean * 1e6, n / p50 / 1e6, tool, p50 * 1e6);
            }
        }
        double mean, p50;
        timed(win, rank, 1, buf, 8, 1, &mean, &p50);
        if (rank == 0)
            printf("lat_put_flush_%s_create,8,%.3f,,%s,%.3f\n", kind, mean * 1e6, tool, p50 * 1e6);
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
        if (device) {
            dev_free(mem);
            dev_free(buf);
        } else {
            free(mem);
            free(buf);
        }
    }
    MPI_Finalize();
    return 0;
}
