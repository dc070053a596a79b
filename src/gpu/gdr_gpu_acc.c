/* The accumulate executor on the host (gdr_gpu_acc.h): gdr_gpu_acc_body.h's element
 * loop run by the calling thread, for the unit tests and the simulated GPU. */
#include "gdr/gpu/gdr_gpu_acc.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"
#include "gdr/gpu/gdr_gpu_acc_body.h"

size_t gdr_gpu_type_size(int type)
{
    switch (type) {
#define GDR_GPU_X(e, T) case e: return sizeof(T);
        GDR_GPU_ALL_TYPES(GDR_GPU_X)
#undef GDR_GPU_X
    }
    return 0;
}

int gdr_gpu_acc_valid(int op, int type)
{
    return gdr_gpu_acc_defined(op, type);
}

int gdr_gpu_acc_atomic_ok(int type, const void *target)
{
    return gdr_gpu_atomic_capable(type, (uintptr_t) target);
}

void gdr_gpu_acc_apply(const gdr_gpu_acc_args_t *args)
{
    gdr_gpu_acc_range(args, 0, 1);
}
