#include "gdr_gpu_rma_stream.h"

#include <errno.h>
#include "gpu/gdr_gpu_internal.h"

static int s_write(void *ctx, void *stream, volatile uint64_t *word, uint64_t value)
{
    return gdr_gpu_stream_write_u64(ctx, (gdr_gpu_stream_t) stream, (void *) word, value);
}

static int s_wait_geq(void *ctx, void *stream, volatile uint64_t *word, uint64_t value)
{
    return gdr_gpu_stream_wait_u64(ctx, (gdr_gpu_stream_t) stream, (const void *) word, value,
                                   GDR_GPU_WAIT_GEQ);
}

static int s_copy(void *ctx, void *stream, void *dst, const void *src, size_t n)
{
    return gdr_gpu_copy_async(ctx, (gdr_gpu_stream_t) stream, dst, src, n);
}

static const char *s_error(const void *ctx)
{
    return ((const gdr_gpu_t *) ctx)->error;
}

int gdr_gpu_rma_stream_init(gdr_gpu_t *g, gdr_gpu_stream_t s, gdr_sq_stream_t *seam)
{
    if (!g->on)
        return gdr_gpu_off(g);
    if (!(g->features & GDR_GPU_MEMOPS))
        return gdr_gpu_refuse(g, ENOTSUP, "stream-ordered RMA needs 64-bit stream memory "
                              "operations (%s)", g->features_off);
    *seam = (gdr_sq_stream_t) {.ctx = g,.stream = (void *) s,.write_u64 = s_write,
        .wait_geq_u64 = s_wait_geq,.copy = s_copy,.error = s_error
    };
    return 0;
}
