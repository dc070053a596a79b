/* PLACEHOLDER, to be replaced by src/gpu/gdr_gpu_acc.c (issue 19, written in parallel):
 * only INT64 with REPLACE, SUM and NO_OP, enough for the simulator's own tests.  Weak
 * definitions, so that the real ones win when both are linked; to switch, set GPUSIM_ACC
 * in Makefile.am to the real file. */
#include "gpu/gdr_gpu_acc.h"

#include <string.h>

__attribute__((weak)) size_t gdr_gpu_type_size(int type)
{
    return type == GDR_GPU_T_INT64 ? sizeof(int64_t) : 0;
}

__attribute__((weak)) void gdr_gpu_acc_apply(const gdr_gpu_acc_args_t *args)
{
    int64_t *t = args->target, *r = args->result;
    const int64_t *o = args->origin;
    for (uint64_t i = 0; i < args->count; i++) {
        if (r != NULL)
            r[i] = t[i];
        if (args->op == GDR_GPU_OP_REPLACE)
            t[i] = o[i];
        else if (args->op == GDR_GPU_OP_SUM)
            t[i] = (int64_t) ((uint64_t) t[i] + (uint64_t) o[i]);
    }
}
