/* vadd: the reference for put_bw's accumulate rows: a plain vector-add kernel, y[i] += x[i]
 * on doubles in device memory, 10 launches per stream synchronisation, 64 KiB to 4 MiB by
 * 4 (issue 20: MPI_Accumulate SUM of doubles into a same-node window >= 0.8x of it).
 *
 *   nvcc -arch=sm_90 -O2 -o vadd bench/gpu/vadd.cu && ./vadd
 *
 * CSV on stdout with put_bw's columns: vadd_double_kernel,BYTES,us per launch,MB/s,cuda,p50.
 * A benchmark: it prints numbers and never judges them. */
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#define REPS 7

__global__ void vadd(double *y, const double *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x)
        y[i] += x[i];
}

static void check(const char *what, cudaError_t e)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "vadd: %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

int main()
{
    const size_t max = 4u << 20;
    double *x, *y;
    check("cudaMalloc", cudaMalloc(&x, max));
    check("cudaMalloc", cudaMalloc(&y, max));
    check("cudaMemset", cudaMemset(x, 0, max));
    check("cudaMemset", cudaMemset(y, 0, max));
    printf("benchmark,bytes,latency_us,bandwidth_MBps,tool,p50_us\n");
    for (size_t bytes = 65536; bytes <= max; bytes *= 4) {
        size_t n = bytes / sizeof(double);
        unsigned blocks = (unsigned) std::min<size_t>((n + 255) / 256, 1024);
        double us[REPS], mean = 0;
        vadd<<<blocks, 256>>>(y, x, n);
        check("warm-up", cudaDeviceSynchronize());
        for (int r = 0; r < REPS; r++) {
            auto t = std::chrono::steady_clock::now();
            for (int i = 0; i < 10; i++)
                vadd<<<blocks, 256>>>(y, x, n);
            check("cudaDeviceSynchronize", cudaDeviceSynchronize());
            us[r] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now()
                                                              - t).count() / 10;
            mean += us[r] / REPS;
        }
        std::sort(us, us + REPS);
        printf("vadd_double_kernel,%zu,%.3f,%.1f,cuda,%.3f\n", bytes, mean, bytes / us[REPS / 2],
               us[REPS / 2]);
    }
    return 0;
}
