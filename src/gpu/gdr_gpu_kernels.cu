/* The GPU kernels, built by src/gpu/build-kernels into the fatbin that libgdr embeds
 * (gdr_gpu_kernels_image.h) and loads through the driver at run time.  The only CUDA C++
 * in gdr: each kernel is a thin launch shell around a __host__ __device__ header, so the
 * host (unit tests, the simulated GPU) runs the same element code. */
#include "gdr/gpu/gdr_gpu_acc_body.h"
#include "gdr_gpu_copy_body.h"
#include "gdr/gdr_rma_signal.h"

/* gdr_gpu_acc.h's executor (GDR_GPU_ACC_KERNEL): thread k of the grid applies the
 * operation to elements k, k + N, k + 2N, ... of the range, N being the grid's thread
 * count, so any 1-dimensional grid covers all args.count elements exactly once. */
extern "C" __global__ void gdr_gpu_acc_kernel(gdr_gpu_acc_args_t args)
{
    uint64_t first = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    gdr_gpu_acc_range(&args, first, (uint64_t)gridDim.x * blockDim.x);
}

/* gdr_gpu_module.h's signal add (GDR_GPU_SIGNAL_ADD_KERNEL): one thread adds to a 64-bit
 * signal word, which may be a same-node peer's window mapped through CUDA IPC, with a
 * system-scope atomic (the word's owner and other origins may add to it at once). */
extern "C" __global__ void gdr_gpu_signal_add_kernel(unsigned long long *word,
                                                     unsigned long long value)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        atomicAdd_system(word, value);
}

/* gdr_gpu_module.h's signal wait (GDR_GPU_SIGNAL_WAIT_KERNEL): one thread polls the word
 * until it meets the comparison (gdr_rma_signal.h), for the comparisons stream memory
 * operations lack; the work queued after it on the stream waits for it. */
extern "C" __global__ void gdr_gpu_signal_wait_kernel(const unsigned long long *word,
                                                      unsigned long long value, int cmp)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    while (!gdr_signal_met(cmp, *(volatile const unsigned long long *)word, value))
        __nanosleep(256);
}

/* gdr_gpu_module.h's piece copy (GDR_GPU_COPY_KERNEL): thread k of the grid copies units
 * k, k + N, ... of every piece (gdr_gpu_copy_body.h). */
extern "C" __global__ void gdr_gpu_copy_kernel(gdr_gpu_copy_args_t args)
{
    uint64_t first = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    gdr_gpu_copy_range(&args, first, (uint64_t)gridDim.x * blockDim.x);
}
