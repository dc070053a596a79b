/* Streams, events, copies and stream memory operations. */
#include "gdr_gpu_stream.h"
#include "gdr_gpu_internal.h"

#include <errno.h>

/* 0 on success, else the recorded failure. */
static int check(gdr_gpu_t *g, gdr_cu_result_t rc, const char *call)
{
    return rc == GDR_CUDA_SUCCESS ? 0 : gdr_gpu_fail(g, call, rc, NULL);
}

/* 1 done, 0 pending, or the recorded failure. */
static int done(gdr_gpu_t *g, gdr_cu_result_t rc, const char *call)
{
    if (rc == GDR_CUDA_ERROR_NOT_READY)
        return 0;
    return rc == GDR_CUDA_SUCCESS ? 1 : gdr_gpu_fail(g, call, rc, NULL);
}

int gdr_gpu_stream_create(gdr_gpu_t *g, gdr_gpu_stream_t *s)
{
    *s = NULL;
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuStreamCreate(s, GDR_CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

int gdr_gpu_stream_destroy(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuStreamDestroy(s), "cuStreamDestroy");
}

int gdr_gpu_stream_sync(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuStreamSynchronize(s), "cuStreamSynchronize");
}

int gdr_gpu_stream_query(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return done(g, g->drv.fn.cuStreamQuery(s), "cuStreamQuery");
}

int gdr_gpu_copy_async(gdr_gpu_t *g, gdr_gpu_stream_t s, void *dst, const void *src, size_t n)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuMemcpyAsync(gdr_gpu_ptr(dst), gdr_gpu_ptr(src), n, s),
                 "cuMemcpyAsync");
}

int gdr_gpu_copy(gdr_gpu_t *g, void *dst, const void *src, size_t n)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuMemcpy(gdr_gpu_ptr(dst), gdr_gpu_ptr(src), n), "cuMemcpy");
}

int gdr_gpu_memset_async(gdr_gpu_t *g, gdr_gpu_stream_t s, void *dst, unsigned char byte,
                         size_t n)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuMemsetD8Async(gdr_gpu_ptr(dst), byte, n, s), "cuMemsetD8Async");
}

int gdr_gpu_event_create(gdr_gpu_t *g, gdr_gpu_event_t *e)
{
    *e = NULL;
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuEventCreate(e, GDR_CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

int gdr_gpu_event_record(gdr_gpu_t *g, gdr_gpu_event_t e, gdr_gpu_stream_t s)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuEventRecord(e, s), "cuEventRecord");
}

int gdr_gpu_event_query(gdr_gpu_t *g, gdr_gpu_event_t e)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return done(g, g->drv.fn.cuEventQuery(e), "cuEventQuery");
}

int gdr_gpu_event_sync(gdr_gpu_t *g, gdr_gpu_event_t e)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuEventSynchronize(e), "cuEventSynchronize");
}

int gdr_gpu_event_destroy(gdr_gpu_t *g, gdr_gpu_event_t e)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuEventDestroy(e), "cuEventDestroy");
}

int gdr_gpu_stream_wait_event(gdr_gpu_t *g, gdr_gpu_stream_t s, gdr_gpu_event_t e)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return check(g, g->drv.fn.cuStreamWaitEvent(s, e, 0), "cuStreamWaitEvent");
}

static int memops_refused(gdr_gpu_t *g)
{
    if (!g->on)
        return gdr_gpu_off(g);
    return gdr_gpu_refuse(g, ENOTSUP, "stream memory operations are not supported here (%s)",
                          g->features_off);
}

int gdr_gpu_stream_write_u64(gdr_gpu_t *g, gdr_gpu_stream_t s, void *addr, uint64_t value)
{
    if (!(g->features & GDR_GPU_MEMOPS))
        return memops_refused(g);
    return check(g, g->drv.fn.cuStreamWriteValue64(s, gdr_gpu_ptr(addr), value,
                                                   GDR_CU_STREAM_WRITE_VALUE_DEFAULT),
                 "cuStreamWriteValue64");
}

int gdr_gpu_stream_wait_u64(gdr_gpu_t *g, gdr_gpu_stream_t s, const void *addr, uint64_t value,
                            gdr_gpu_wait_cmp_t cmp)
{
    if (!(g->features & GDR_GPU_MEMOPS))
        return memops_refused(g);
    return check(g, g->drv.fn.cuStreamWaitValue64(s, gdr_gpu_ptr(addr), value, (unsigned) cmp),
                 "cuStreamWaitValue64");
}
