/* Modules and launches.  A module's image is opaque (gdr's fatbin, or any bytes): its
 * kernels are the host-compiled ones of gpusim_kernels.c, found by name. */
#include "gpusim.h"

#include <stdlib.h>
#include <string.h>

struct CUmod_st {
    struct CUmod_st *next;              /* gpusim.modules */
};

gdr_cu_result_t cuModuleLoadData(gdr_cu_module_t *module, const void *image)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (module == NULL || image == NULL))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS) {
        struct CUmod_st *m = calloc(1, sizeof(*m));
        if (m == NULL) {
            rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            m->next = gpusim.modules;
            gpusim.modules = m;
            *module = m;
        }
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

static struct CUmod_st **module_slot(gdr_cu_module_t hmod)
{
    struct CUmod_st **pp = &gpusim.modules;
    while (*pp != NULL && *pp != hmod)
        pp = &(*pp)->next;
    return *pp != NULL ? pp : NULL;
}

gdr_cu_result_t cuModuleUnload(gdr_cu_module_t hmod)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_current();
    struct CUmod_st **pp = rc == GDR_CUDA_SUCCESS ? module_slot(hmod) : NULL;
    if (rc == GDR_CUDA_SUCCESS && pp == NULL)
        rc = GDR_CUDA_ERROR_INVALID_HANDLE;
    if (rc == GDR_CUDA_SUCCESS) {
        *pp = hmod->next;
        free(hmod);
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuModuleGetFunction(gdr_cu_function_t *hfunc, gdr_cu_module_t hmod,
                                    const char *name)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (hfunc == NULL || name == NULL))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS && module_slot(hmod) == NULL)
        rc = GDR_CUDA_ERROR_INVALID_HANDLE;
    if (rc == GDR_CUDA_SUCCESS) {
        rc = GDR_CUDA_ERROR_NOT_FOUND;
        for (size_t i = 0; i < gpusim_nkernels; i++)
            if (strcmp(gpusim_kernels[i].name, name) == 0 && !gpusim_hidden(name)) {
                *hfunc = &gpusim_kernels[i];
                rc = GDR_CUDA_SUCCESS;
            }
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* Packs the parameters at their natural alignment, as the kernel would see them. */
static gdr_cu_result_t pack_params(const struct CUfunc_st *f, void **kernelParams,
                                   unsigned char *buf, size_t *len)
{
    size_t off = 0;
    for (unsigned i = 0; i < f->nparams; i++) {
        size_t size = f->param_size[i], align = size >= 8 ? 8 : size;
        off = (off + align - 1) / align * align;
        if (kernelParams[i] == NULL)
            return GDR_CUDA_ERROR_INVALID_VALUE;
        if (off + size > GPUSIM_PARAMS_MAX)
            return GDR_CUDA_ERROR_NOT_SUPPORTED;
        memcpy(buf + off, kernelParams[i], size);
        off += size;
    }
    *len = off;
    return GDR_CUDA_SUCCESS;
}

gdr_cu_result_t cuLaunchKernel(gdr_cu_function_t f, unsigned int gridDimX, unsigned int gridDimY,
                               unsigned int gridDimZ, unsigned int blockDimX,
                               unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, gdr_cu_stream_t hStream,
                               void **kernelParams, void **extra)
{
    struct CUstream_st *s = NULL;
    unsigned char params[GPUSIM_PARAMS_MAX];
    size_t len = 0;
    gpusim_launch_t launch = {
        { gridDimX, gridDimY, gridDimZ }, { blockDimX, blockDimY, blockDimZ }, params
    };

    (void) sharedMemBytes;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (f < &gpusim_kernels[0] || f >= &gpusim_kernels[gpusim_nkernels]))
        rc = GDR_CUDA_ERROR_INVALID_HANDLE;
    if (rc == GDR_CUDA_SUCCESS && (gridDimX == 0 || gridDimY == 0 || gridDimZ == 0
                                   || blockDimX == 0 || blockDimY == 0 || blockDimZ == 0
                                   || (uint64_t) blockDimX * blockDimY * blockDimZ > 1024
                                   || (f->nparams > 0 && kernelParams == NULL)))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS && extra != NULL)
        rc = GDR_CUDA_ERROR_NOT_SUPPORTED;     /* parameters are passed by kernelParams */
    if (rc == GDR_CUDA_SUCCESS)
        rc = gpusim_stream_resolve(hStream, &s);
    if (rc == GDR_CUDA_SUCCESS)
        rc = pack_params(f, kernelParams, params, &len);
    if (rc == GDR_CUDA_SUCCESS)
        rc = gpusim_stream_launch(s, f, &launch, len);
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* Nothing to load (the kernels are the simulator's own); the handle is checked. */
gdr_cu_result_t cuFuncLoad(gdr_cu_function_t f)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (f < &gpusim_kernels[0] || f >= &gpusim_kernels[gpusim_nkernels]))
        rc = GDR_CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

void gpusim_modules_fini(void)
{
    while (gpusim.modules != NULL) {
        struct CUmod_st *m = gpusim.modules;
        gpusim.modules = m->next;
        free(m);
    }
}
