/* Kernel images, function lookup (cached per context) and launches. */
#include "gdr_gpu_module.h"
#include "gdr_gpu_internal.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"
#include "gdr/gdr_rma_signal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int gdr_gpu_module_load(gdr_gpu_t *g, const void *image, size_t size)
{
    gdr_cu_module_t mod;
    char hint[96];

    if (!g->on)
        return gdr_gpu_off(g);
    if (!(g->features & GDR_GPU_KERNELS))
        return gdr_gpu_refuse(g, ENOTSUP, "kernels are not supported here (%s)", g->features_off);
    pthread_mutex_lock(&g->lock);
    int full = g->n_modules == GDR_GPU_MODULES_MAX;
    pthread_mutex_unlock(&g->lock);
    if (full)
        return gdr_gpu_refuse(g, ENOSPC, "cannot load a kernel image: %d are loaded already",
                              GDR_GPU_MODULES_MAX);
    gdr_cu_result_t rc = g->drv.fn.cuModuleLoadData(&mod, image);
    if (rc != GDR_CUDA_SUCCESS) {
        snprintf(hint, sizeof(hint), "the %zu-byte image has no code for sm_%d%d?", size,
                 g->cc_major, g->cc_minor);
        return gdr_gpu_fail(g, "cuModuleLoadData", rc, hint);
    }
    pthread_mutex_lock(&g->lock);
    full = g->n_modules == GDR_GPU_MODULES_MAX;        /* another thread loaded meanwhile */
    if (!full)
        g->modules[g->n_modules++] = mod;
    pthread_mutex_unlock(&g->lock);
    if (full) {
        (void) g->drv.fn.cuModuleUnload(mod);
        return gdr_gpu_refuse(g, ENOSPC, "cannot load a kernel image: %d are loaded already",
                              GDR_GPU_MODULES_MAX);
    }
    return 0;
}

/* The function `name`, from the cache or the loaded images (g->lock held). */
static gdr_cu_result_t find_function(gdr_gpu_t *g, const char *name, gdr_cu_function_t *fn)
{
    gdr_cu_result_t rc = GDR_CUDA_ERROR_NOT_FOUND;
    for (int i = 0; i < g->n_kernels; i++)
        if (strcmp(g->kernels[i].name, name) == 0) {
            *fn = g->kernels[i].fn;
            return GDR_CUDA_SUCCESS;
        }
    for (int i = 0; i < g->n_modules; i++) {
        rc = g->drv.fn.cuModuleGetFunction(fn, g->modules[i], name);
        if (rc != GDR_CUDA_ERROR_NOT_FOUND)
            break;
    }
    if (rc == GDR_CUDA_SUCCESS && g->n_kernels < GDR_GPU_KERNELS_MAX
        && strlen(name) < GDR_GPU_KERNEL_NAME_MAX) {
        strcpy(g->kernels[g->n_kernels].name, name);
        g->kernels[g->n_kernels++].fn = *fn;
    }
    return rc;
}

int gdr_gpu_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, const char *name, unsigned grid_x,
                   unsigned block_x, void **params)
{
    gdr_cu_function_t fn = NULL;

    if (!g->on)
        return gdr_gpu_off(g);
    if (!(g->features & GDR_GPU_KERNELS))
        return gdr_gpu_refuse(g, ENOTSUP, "kernels are not supported here (%s)", g->features_off);
    pthread_mutex_lock(&g->lock);
    int loaded = g->n_modules;
    gdr_cu_result_t rc = find_function(g, name, &fn);
    pthread_mutex_unlock(&g->lock);
    if (rc == GDR_CUDA_ERROR_NOT_FOUND)
        return gdr_gpu_refuse(g, ENOENT, "kernel %s is in none of the %d loaded kernel images"
                              "%s", name, loaded, loaded ? "" : " (gdr_gpu_module_load)");
    if (rc != GDR_CUDA_SUCCESS)
        return gdr_gpu_fail(g, "cuModuleGetFunction", rc, NULL);
    rc = g->drv.fn.cuLaunchKernel(fn, grid_x, 1, 1, block_x, 1, 1, 0, s, params, NULL);
    return rc == GDR_CUDA_SUCCESS ? 0 : gdr_gpu_fail(g, "cuLaunchKernel", rc, NULL);
}

int gdr_gpu_kernel_ready(gdr_gpu_t *g, const char *name, const void *image, size_t size)
{
    gdr_cu_function_t fn;

    if (!g->on)
        return gdr_gpu_off(g);
    if (!(g->features & GDR_GPU_KERNELS))
        return gdr_gpu_refuse(g, ENOTSUP, "kernels are not supported here (%s)", g->features_off);
    pthread_mutex_lock(&g->lock);
    gdr_cu_result_t rc = find_function(g, name, &fn);
    pthread_mutex_unlock(&g->lock);
    if (rc == GDR_CUDA_SUCCESS)
        return 0;
    if (rc != GDR_CUDA_ERROR_NOT_FOUND)
        return gdr_gpu_fail(g, "cuModuleGetFunction", rc, NULL);
    int err = gdr_gpu_module_load(g, image, size);
    if (err != 0)
        return err;
    pthread_mutex_lock(&g->lock);
    rc = find_function(g, name, &fn);
    pthread_mutex_unlock(&g->lock);
    if (rc == GDR_CUDA_ERROR_NOT_FOUND)
        return gdr_gpu_refuse(g, ENOENT, "kernel %s is not in gdr's kernel image (%zu bytes)",
                              name, size);
    return rc == GDR_CUDA_SUCCESS ? 0 : gdr_gpu_fail(g, "cuModuleGetFunction", rc, NULL);
}

typedef gdr_cu_result_t gdr_cuFuncLoad_fn(gdr_cu_function_t f);    /* CUDA 12.4 */

int gdr_gpu_kernels_load_now(gdr_gpu_t *g, const char *const *names, int n, const void *image,
                             size_t size)
{
    void *entry = g->on ? gdr_gpu_driver_entry(&g->drv, "cuFuncLoad", 12040) : NULL;
    gdr_cuFuncLoad_fn *load;
    memcpy(&load, &entry, sizeof(load));
    for (int i = 0; i < n; i++) {
        int err = gdr_gpu_kernel_ready(g, names[i], image, size);
        if (err != 0)
            return err;
        if (load == NULL)
            continue;
        gdr_cu_function_t fn = NULL;
        pthread_mutex_lock(&g->lock);
        gdr_cu_result_t rc = find_function(g, names[i], &fn);
        pthread_mutex_unlock(&g->lock);
        if (rc == GDR_CUDA_SUCCESS)
            rc = load(fn);
        if (rc != GDR_CUDA_SUCCESS)
            return gdr_gpu_fail(g, "cuFuncLoad", rc, names[i]);
    }
    return 0;
}

int gdr_gpu_signal_add_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, uint64_t *word, uint64_t value)
{
    void *params[] = { &word, &value };

    if (word == NULL || (uintptr_t) word % 8 != 0)
        return gdr_gpu_refuse(g, EINVAL, "signal add: the word %p is not 8-byte aligned",
                              (void *) word);
    return gdr_gpu_launch(g, s, GDR_GPU_SIGNAL_ADD_KERNEL, 1, 1, params);
}

int gdr_gpu_signal_wait_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, const uint64_t *word,
                               uint64_t value, int cmp)
{
    void *params[] = { &word, &value, &cmp };

    if (word == NULL || (uintptr_t) word % 8 != 0)
        return gdr_gpu_refuse(g, EINVAL, "signal wait: the word %p is not 8-byte aligned",
                              (const void *) word);
    if (!gdr_signal_cmp_valid(cmp))
        return gdr_gpu_refuse(g, EINVAL, "signal wait: comparison %d is none of GDR_CMP_*", cmp);
    return gdr_gpu_launch(g, s, GDR_GPU_SIGNAL_WAIT_KERNEL, 1, 1, params);
}

int gdr_gpu_copy_pieces_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, const gdr_gpu_copy_piece_t *p,
                               unsigned n)
{
    gdr_gpu_copy_args_t args;
    void *params[] = { &args };
    uint64_t widest = 0;

    if (n == 0 || n > GDR_GPU_COPY_PIECES_MAX || p == NULL)
        return gdr_gpu_refuse(g, EINVAL, "piece copy: %u pieces (1 to %d in one launch)", n,
                              GDR_GPU_COPY_PIECES_MAX);
    args.n = 0;
    for (unsigned i = 0; i < n; i++) {
        if (p[i].len == 0)
            continue;
        if (p[i].dst == 0 || p[i].src == 0)
            return gdr_gpu_refuse(g, EINVAL, "piece copy: piece %u has a NULL address", i);
        args.p[args.n++] = p[i];
        uint64_t units = p[i].len / gdr_gpu_copy_unit(&p[i]);
        widest = units > widest ? units : widest;
    }
    if (args.n == 0)
        return 0;
    /* enough threads for the longest piece, in whole blocks, at most the grid's cap */
    uint64_t blocks = (widest + GDR_GPU_COPY_BLOCK - 1) / GDR_GPU_COPY_BLOCK;
    if (blocks > GDR_GPU_COPY_GRID_MAX)
        blocks = GDR_GPU_COPY_GRID_MAX;
    return gdr_gpu_launch(g, s, GDR_GPU_COPY_KERNEL, (unsigned) blocks, GDR_GPU_COPY_BLOCK,
                          params);
}

unsigned gdr_gpu_acc_grid(uint64_t count)
{
    uint64_t blocks = count / GDR_GPU_ACC_BLOCK + (count % GDR_GPU_ACC_BLOCK != 0);
    return blocks < GDR_GPU_ACC_GRID_MAX ? (unsigned) blocks : GDR_GPU_ACC_GRID_MAX;
}

int gdr_gpu_acc_launch(gdr_gpu_t *g, gdr_gpu_stream_t s, const gdr_gpu_acc_args_t *args)
{
    gdr_gpu_acc_args_t copy = *args;
    void *params[] = { &copy };

    if (args->count == 0)
        return 0;
    if ((args->op & GDR_GPU_ACC_ATOMIC) && !gdr_gpu_acc_atomic_ok(args->type, args->target))
        return gdr_gpu_refuse(g, EINVAL, "accumulate: atomic steps on type %d at %p need an "
                              "element of at most 8 bytes aligned to its size", args->type,
                              args->target);
    return gdr_gpu_launch(g, s, GDR_GPU_ACC_KERNEL, gdr_gpu_acc_grid(args->count),
                          GDR_GPU_ACC_BLOCK, params);
}
