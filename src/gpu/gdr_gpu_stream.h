/* Streams and their ordering: async copies, events, stream memory operations.
 * A stream runs its work in submission order, asynchronously to the host; work on
 * different streams is ordered only through events or stream memory operations.  A
 * gdr_gpu_stream_t is a CUstream (and a runtime cudaStream_t): an application's stream
 * can be passed in as is. */
#ifndef GDR_GPU_STREAM_H
#define GDR_GPU_STREAM_H

#include <stdint.h>
#include "gdr_gpu.h"

typedef gdr_cu_stream_t gdr_gpu_stream_t;
typedef gdr_cu_event_t gdr_gpu_event_t;

/* Conditions of gdr_gpu_stream_wait_u64 (those of cuStreamWaitValue64). */
typedef enum gdr_gpu_wait_cmp {
    GDR_GPU_WAIT_GEQ = GDR_CU_STREAM_WAIT_VALUE_GEQ,    /* (int64_t)(*addr - value) >= 0 */
    GDR_GPU_WAIT_EQ = GDR_CU_STREAM_WAIT_VALUE_EQ,      /* *addr == value */
    GDR_GPU_WAIT_AND = GDR_CU_STREAM_WAIT_VALUE_AND,    /* (*addr & value) != 0 */
    GDR_GPU_WAIT_NOR = GDR_CU_STREAM_WAIT_VALUE_NOR     /* ~(*addr | value) != 0 */
} gdr_gpu_wait_cmp_t;

/* A stream that does not synchronise with the legacy default stream (NULL): gdr's work
 * never waits for, nor delays, an application's default-stream work. */
int gdr_gpu_stream_create(gdr_gpu_t *g, gdr_gpu_stream_t *s);
/* Returns at once; work already queued still completes. */
int gdr_gpu_stream_destroy(gdr_gpu_t *g, gdr_gpu_stream_t s);
/* Blocks until all work queued on s so far has completed. */
int gdr_gpu_stream_sync(gdr_gpu_t *g, gdr_gpu_stream_t s);
/* 1: all work queued on s has completed; 0: some is pending; negative: an error. */
int gdr_gpu_stream_query(gdr_gpu_t *g, gdr_gpu_stream_t s);

/* Queues a copy of n bytes; dst and src are any host or device pointers.  The source
 * must stay unchanged and the destination untouched until the copy completes on s. */
int gdr_gpu_copy_async(gdr_gpu_t *g, gdr_gpu_stream_t s, void *dst, const void *src, size_t n);
/* Copies n bytes and returns when they are in dst (on the legacy default stream: it also
 * waits for work queued there and on blocking streams). */
int gdr_gpu_copy(gdr_gpu_t *g, void *dst, const void *src, size_t n);
/* Queues setting n bytes at dst (device memory or pinned host memory) to `byte`. */
int gdr_gpu_memset_async(gdr_gpu_t *g, gdr_gpu_stream_t s, void *dst, unsigned char byte,
                         size_t n);

/* Events mark a point in a stream (without timing). */
int gdr_gpu_event_create(gdr_gpu_t *g, gdr_gpu_event_t *e);
/* Marks the point after all work queued on s so far; recording again moves the mark. */
int gdr_gpu_event_record(gdr_gpu_t *g, gdr_gpu_event_t e, gdr_gpu_stream_t s);
/* 1: the work before the last record has completed (or e was never recorded); 0: not yet;
 * negative: an error. */
int gdr_gpu_event_query(gdr_gpu_t *g, gdr_gpu_event_t e);
/* Blocks until the work before the last record has completed. */
int gdr_gpu_event_sync(gdr_gpu_t *g, gdr_gpu_event_t e);
/* May be called while the recorded work is pending. */
int gdr_gpu_event_destroy(gdr_gpu_t *g, gdr_gpu_event_t e);
/* Work queued on s after this call waits for e's last record (as of this call). */
int gdr_gpu_stream_wait_event(gdr_gpu_t *g, gdr_gpu_stream_t s, gdr_gpu_event_t e);

/* Stream memory operations (GDR_GPU_MEMOPS; -ENOTSUP without).  addr: 8-byte aligned
 * device memory, or the device address of pinned/registered host memory
 * (gdr_gpu_host_register's *dev_p). */
/* Writes value to *addr once the work queued before it has completed (and is visible). */
int gdr_gpu_stream_write_u64(gdr_gpu_t *g, gdr_gpu_stream_t s, void *addr, uint64_t value);
/* Work queued on s after this waits until *addr satisfies cmp against value; the host
 * thread does not wait. */
int gdr_gpu_stream_wait_u64(gdr_gpu_t *g, gdr_gpu_stream_t s, const void *addr, uint64_t value,
                            gdr_gpu_wait_cmp_t cmp);

#endif /* GDR_GPU_STREAM_H */
