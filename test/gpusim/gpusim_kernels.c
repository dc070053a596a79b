/* The kernels the simulated GPU runs: gdr's __host__ __device__ sources compiled for the
 * host, each behind a trampoline that does what the GPU would: it reads the parameters
 * and reaches memory only through device addresses (a pointer outside device memory must
 * be pinned or registered host memory; anything else is the GPU's illegal address). */
#include "gpusim.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"
#include "gpu/gdr_gpu_copy_body.h"
#include "gpu/gdr_gpu_module.h"
#include "gdr/gdr_rma_signal.h"

#include <string.h>

/* Translates one pointer argument of `bytes` bytes; 0, or -1 when a GPU would fault. */
static int reach_arg(const char *kernel, const void *p, size_t bytes, const char *what,
                     void **out)
{
    pthread_mutex_lock(&gpusim.lock);
    *out = gpusim_reach((uintptr_t) p, bytes, 0);
    pthread_mutex_unlock(&gpusim.lock);
    if (*out == NULL) {
        gpusim_debug("%s: %s %p+%zu is neither device memory nor pinned host memory",
                     kernel, what, p, bytes);
        return -1;
    }
    return 0;
}

/* gdr_gpu_acc_kernel(gdr_gpu_acc_args_t args): the whole grid-stride loop at once. */
static gdr_cu_result_t run_acc(const gpusim_launch_t *launch)
{
    gdr_gpu_acc_args_t a, h;
    void *target, *origin = NULL, *result = NULL, *compare = NULL;

    memcpy(&a, launch->params, sizeof(a));
    int op = a.op & GDR_GPU_ACC_OP_MASK;    /* without GDR_GPU_ACC_ATOMIC */
    size_t size = gdr_gpu_type_size(a.type);
    if (size == 0 || a.count > SIZE_MAX / size)
        return GDR_CUDA_ERROR_LAUNCH_FAILED;
    size_t bytes = (size_t) a.count * size;
    const char *k = GDR_GPU_ACC_KERNEL;
    if (reach_arg(k, a.target, bytes, "target", &target) != 0
        || (op != GDR_GPU_OP_NO_OP && reach_arg(k, a.origin, bytes, "origin", &origin) != 0)
        || (a.result != NULL && reach_arg(k, a.result, bytes, "result", &result) != 0)
        || (op == GDR_GPU_OP_CSWAP && reach_arg(k, a.compare, bytes, "compare", &compare) != 0))
        return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;
    h = a;
    h.target = target;
    h.origin = origin;
    h.result = result;
    h.compare = compare;
    gdr_gpu_acc_apply(&h);
    return GDR_CUDA_SUCCESS;
}

/* gdr_gpu_signal_add_kernel(uint64_t *word, uint64_t value): a host atomic, which other
 * processes mapping the same memfd see as the GPU's system-scope atomic. */
static gdr_cu_result_t run_signal_add(const gpusim_launch_t *launch)
{
    uint64_t *word, value;
    void *at;

    memcpy(&word, launch->params, sizeof(word));
    memcpy(&value, launch->params + sizeof(word), sizeof(value));
    if ((uintptr_t) word % 8 != 0)
        return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;  /* (a GPU: misaligned address) */
    if (reach_arg(GDR_GPU_SIGNAL_ADD_KERNEL, word, sizeof(*word), "signal word", &at) != 0)
        return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;
    __atomic_fetch_add((uint64_t *) at, value, __ATOMIC_SEQ_CST);
    return GDR_CUDA_SUCCESS;
}

/* gdr_gpu_copy_kernel(gdr_gpu_copy_args_t args): every piece at once, each address
 * translated as the GPU reaches it. */
static gdr_cu_result_t run_copy(const gpusim_launch_t *launch)
{
    gdr_gpu_copy_args_t a;
    memcpy(&a, launch->params, sizeof(a));
    if (a.n > GDR_GPU_COPY_PIECES_MAX)
        return GDR_CUDA_ERROR_LAUNCH_FAILED;
    for (uint64_t i = 0; i < a.n; i++) {
        void *dst, *src;
        if (a.p[i].len == 0)
            continue;
        if (reach_arg(GDR_GPU_COPY_KERNEL, (void *) (uintptr_t) a.p[i].dst, a.p[i].len,
                      "destination", &dst) != 0
            || reach_arg(GDR_GPU_COPY_KERNEL, (void *) (uintptr_t) a.p[i].src, a.p[i].len,
                         "source", &src) != 0)
            return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;
        a.p[i].dst = (uint64_t) (uintptr_t) dst;
        a.p[i].src = (uint64_t) (uintptr_t) src;
    }
    gdr_gpu_copy_range(&a, 0, 1);
    return GDR_CUDA_SUCCESS;
}

typedef struct signal_wait {
    const uint64_t *word;
    uint64_t value;
    int cmp;
} signal_wait_t;

static int signal_wait_done(const void *arg)
{
    const signal_wait_t *w = arg;
    return gdr_signal_met(w->cmp, __atomic_load_n(w->word, __ATOMIC_ACQUIRE), w->value);
}

/* gdr_gpu_signal_wait_kernel(const uint64_t *word, uint64_t value, int cmp): the one
 * thread polls until the word meets the comparison, holding its stream as the GPU's does. */
static gdr_cu_result_t run_signal_wait(const gpusim_launch_t *launch)
{
    signal_wait_t w;
    const uint64_t *word;
    void *at;

    memcpy(&word, launch->params, sizeof(word));
    memcpy(&w.value, launch->params + 8, sizeof(w.value));
    memcpy(&w.cmp, launch->params + 16, sizeof(w.cmp));
    if ((uintptr_t) word % 8 != 0)
        return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;  /* (a GPU: misaligned address) */
    if (reach_arg(GDR_GPU_SIGNAL_WAIT_KERNEL, word, sizeof(*word), "signal word", &at) != 0)
        return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;
    w.word = at;
    gpusim_spin_until(signal_wait_done, &w);
    return GDR_CUDA_SUCCESS;
}

struct CUfunc_st gpusim_kernels[] = {
    { GDR_GPU_ACC_KERNEL, 1, { sizeof(gdr_gpu_acc_args_t) }, run_acc },
    { GDR_GPU_SIGNAL_ADD_KERNEL, 2, { sizeof(uint64_t *), sizeof(uint64_t) }, run_signal_add },
    { GDR_GPU_SIGNAL_WAIT_KERNEL, 3, { sizeof(uint64_t *), sizeof(uint64_t), sizeof(int) },
      run_signal_wait },
    { GDR_GPU_COPY_KERNEL, 1, { sizeof(gdr_gpu_copy_args_t) }, run_copy },
};
const size_t gpusim_nkernels = sizeof(gpusim_kernels) / sizeof(gpusim_kernels[0]);
