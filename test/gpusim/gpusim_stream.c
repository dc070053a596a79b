/* Streams: a worker thread each, running its queue in submission order.  Events count
 * generations: cuEventRecord queues generation n, the worker marks it done; a wait or a
 * query looks at the generation recorded last (when it was called).  Stream memory
 * operations poll the word.  The legacy default stream (NULL) is one more stream per
 * context, made on first use, without the legacy stream's implicit synchronisation with
 * other blocking streams (gdr's streams are non-blocking anyway). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "gpusim.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum op_kind { OP_COPY, OP_MEMSET, OP_KERNEL, OP_RECORD, OP_WAIT_EVENT, OP_WAIT_VALUE,
    OP_WRITE_VALUE };

typedef struct gpusim_op {
    struct gpusim_op *next;
    int kind;                           /* enum op_kind */
    uintptr_t dst, src;                 /* device or host addresses, as the user gave them */
    size_t n;
    uint64_t value;                     /* memset byte, or the memory operation's value */
    unsigned flags;                     /* the memory operation's flags */
    struct CUevent_st *event;           /* OP_RECORD, OP_WAIT_EVENT: holds a reference */
    uint64_t gen;
    struct CUfunc_st *kernel;
    gpusim_launch_t launch;
    unsigned char params[GPUSIM_PARAMS_MAX];
} gpusim_op_t;

struct CUstream_st {
    struct CUstream_st *next;           /* gpusim.streams */
    int is_null;                        /* a context's legacy default stream */
    int destroyed;                      /* cuStreamDestroy'ed: drains its queue, then exits */
    int exited;                         /* the worker has returned: join and free */
    pthread_t worker;
    gpusim_op_t *head, *tail;           /* queued; head is running */
    uint64_t submitted, completed;
};

struct CUevent_st {
    struct CUevent_st *next;            /* gpusim.events */
    uint64_t recorded;                  /* the last cuEventRecord's generation */
    uint64_t done;                      /* the highest generation completed */
    int refs;                           /* the user's, plus one per queued op naming it */
};

/* ---- running work ------------------------------------------------------------------- */

static int shutting_down(void)
{
    return __atomic_load_n(&gpusim.shutdown, __ATOMIC_ACQUIRE);
}

static int value_satisfies(uint64_t v, uint64_t value, unsigned cmp)
{
    switch (cmp) {
    case GDR_CU_STREAM_WAIT_VALUE_GEQ:
        return (int64_t) (v - value) >= 0;
    case GDR_CU_STREAM_WAIT_VALUE_EQ:
        return v == value;
    case GDR_CU_STREAM_WAIT_VALUE_AND:
        return (v & value) != 0;
    default:
        return ~(v | value) != 0;       /* NOR */
    }
}

void gpusim_spin_until(int (*done)(const void *arg), const void *arg)
{
    long ns = 1000;
    for (int spins = 0; !shutting_down(); spins++) {
        if (done(arg))
            return;
        if (spins < 64) {
            sched_yield();
            continue;
        }
        struct timespec ts = { 0, ns };
        nanosleep(&ts, NULL);
        if (ns < 1000000)
            ns *= 2;
    }
}

typedef struct value_wait {
    const uint64_t *word;
    uint64_t value;
    unsigned cmp;
} value_wait_t;

static int value_wait_done(const void *arg)
{
    const value_wait_t *w = arg;
    return value_satisfies(__atomic_load_n(w->word, __ATOMIC_ACQUIRE), w->value, w->cmp);
}

/* Polls the word like the GPU's front end. */
static void wait_value(const uint64_t *word, uint64_t value, unsigned cmp)
{
    value_wait_t w = { word, value, cmp };
    gpusim_spin_until(value_wait_done, &w);
}

static void *reach(uintptr_t addr, size_t len, int pageable_ok)
{
    pthread_mutex_lock(&gpusim.lock);
    void *p = gpusim_reach(addr, len, pageable_ok);
    pthread_mutex_unlock(&gpusim.lock);
    return p;
}

static gdr_cu_result_t run(gpusim_op_t *op)
{
    void *d, *s;
    switch (op->kind) {
    case OP_COPY:
        d = reach(op->dst, op->n, 1);
        s = reach(op->src, op->n, 1);
        if (d == NULL || s == NULL)
            return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;
        memmove(d, s, op->n);
        return GDR_CUDA_SUCCESS;
    case OP_MEMSET:
        d = reach(op->dst, op->n, 0);
        if (d == NULL)
            return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;
        memset(d, (int) op->value, op->n);
        return GDR_CUDA_SUCCESS;
    case OP_KERNEL:
        op->launch.params = op->params;
        return op->kernel->run(&op->launch);
    case OP_RECORD:
        pthread_mutex_lock(&gpusim.lock);
        if (op->gen > op->event->done)
            op->event->done = op->gen;
        pthread_mutex_unlock(&gpusim.lock);
        return GDR_CUDA_SUCCESS;
    case OP_WAIT_EVENT:
        pthread_mutex_lock(&gpusim.lock);
        while (op->event->done < op->gen && !gpusim.shutdown)
            pthread_cond_wait(&gpusim.progress, &gpusim.lock);
        pthread_mutex_unlock(&gpusim.lock);
        return GDR_CUDA_SUCCESS;
    case OP_WAIT_VALUE:
    case OP_WRITE_VALUE:
        d = reach(op->dst, 8, 0);
        if (d == NULL)
            return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;
        if (op->kind == OP_WAIT_VALUE)
            wait_value(d, op->value, op->flags);
        else
            __atomic_store_n((uint64_t *) d, op->value, __ATOMIC_RELEASE);
        return GDR_CUDA_SUCCESS;
    }
    return GDR_CUDA_ERROR_UNKNOWN;
}

static void event_release(struct CUevent_st *e)
{
    if (--e->refs == 0)
        free(e);
}

static void *worker(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&gpusim.lock);
    for (;;) {
        while (s->head == NULL && !s->destroyed && !gpusim.shutdown)
            pthread_cond_wait(&gpusim.progress, &gpusim.lock);
        if (gpusim.shutdown || s->head == NULL)
            break;
        gpusim_op_t *op = s->head;
        /* after a fault the context is lost: later work does not run (it completes) */
        int skip = gpusim.sticky != GDR_CUDA_SUCCESS;
        pthread_mutex_unlock(&gpusim.lock);
        gdr_cu_result_t rc = skip ? GDR_CUDA_SUCCESS : run(op);
        pthread_mutex_lock(&gpusim.lock);
        if (rc != GDR_CUDA_SUCCESS && gpusim.sticky == GDR_CUDA_SUCCESS) {
            gpusim_debug("queued work (kind %d) failed with %u: the context is lost", op->kind, rc);
            gpusim.sticky = rc;
        }
        s->head = op->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->completed++;
        if (op->event != NULL)
            event_release(op->event);
        free(op);
        pthread_cond_broadcast(&gpusim.progress);
    }
    s->exited = 1;
    pthread_cond_broadcast(&gpusim.progress);
    pthread_mutex_unlock(&gpusim.lock);
    return NULL;
}

/* ---- streams ------------------------------------------------------------------------ */

/* Joins and frees destroyed streams whose workers have returned (lock held). */
static void reap(void)
{
    for (struct CUstream_st **pp = &gpusim.streams; *pp != NULL;) {
        struct CUstream_st *s = *pp;
        if (s->exited && s->destroyed) {
            *pp = s->next;
            pthread_join(s->worker, NULL);
            free(s);
        } else {
            pp = &s->next;
        }
    }
}

static gdr_cu_result_t stream_new(int is_null, struct CUstream_st **out)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return GDR_CUDA_ERROR_OUT_OF_MEMORY;
    s->is_null = is_null;
    if (pthread_create(&s->worker, NULL, worker, s) != 0) {
        free(s);
        return GDR_CUDA_ERROR_OUT_OF_MEMORY;
    }
    s->next = gpusim.streams;
    gpusim.streams = s;
    *out = s;
    return GDR_CUDA_SUCCESS;
}

gdr_cu_result_t gpusim_stream_resolve(gdr_cu_stream_t h, struct CUstream_st **s)
{
    if (h == NULL || h == GDR_CU_STREAM_LEGACY || h == GDR_CU_STREAM_PER_THREAD) {
        if (gpusim_current->null_stream == NULL) {
            gdr_cu_result_t rc = stream_new(1, &gpusim_current->null_stream);
            if (rc != GDR_CUDA_SUCCESS)
                return rc;
        }
        *s = gpusim_current->null_stream;
        return GDR_CUDA_SUCCESS;
    }
    for (struct CUstream_st *t = gpusim.streams; t != NULL; t = t->next)
        if (t == h && !t->is_null && !t->destroyed) {
            *s = t;
            return GDR_CUDA_SUCCESS;
        }
    return GDR_CUDA_ERROR_INVALID_HANDLE;
}

/* Appends op to s; returns its sequence number (lock held). */
static uint64_t enqueue(struct CUstream_st *s, gpusim_op_t *op)
{
    op->next = NULL;
    if (s->tail != NULL)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    pthread_cond_broadcast(&gpusim.progress);
    return ++s->submitted;
}

static struct CUevent_st *event_find(gdr_cu_event_t h)
{
    for (struct CUevent_st *e = gpusim.events; e != NULL; e = e->next)
        if (e == h)
            return e;
    return NULL;
}

/* Checks the context and the handles asked for (lock held): stream hs into *sp if sp,
 * event he into *ep if ep. */
static gdr_cu_result_t check_handles(gdr_cu_stream_t hs, struct CUstream_st **sp,
                                     gdr_cu_event_t he, struct CUevent_st **ep)
{
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && ep != NULL && (*ep = event_find(he)) == NULL)
        rc = GDR_CUDA_ERROR_INVALID_HANDLE;
    if (rc == GDR_CUDA_SUCCESS && sp != NULL)
        rc = gpusim_stream_resolve(hs, sp);
    return rc;
}

/* Waits until s has completed its op number seq; the context's sticky error (lock held). */
static gdr_cu_result_t wait_done(struct CUstream_st *s, uint64_t seq)
{
    while (s->completed < seq && !gpusim.shutdown)
        pthread_cond_wait(&gpusim.progress, &gpusim.lock);
    return gpusim.sticky;
}

void gpusim_wait_idle(void)
{
    for (;;) {
        int busy = 0;
        for (struct CUstream_st *s = gpusim.streams; s != NULL; s = s->next)
            busy |= s->completed < s->submitted && !s->exited;
        if (!busy || gpusim.shutdown)
            return;
        pthread_cond_wait(&gpusim.progress, &gpusim.lock);
    }
}

void gpusim_streams_fini(void)
{
    pthread_mutex_lock(&gpusim.lock);
    __atomic_store_n(&gpusim.shutdown, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&gpusim.progress);
    struct CUstream_st *list = gpusim.streams;
    gpusim.streams = NULL;
    pthread_mutex_unlock(&gpusim.lock);
    while (list != NULL) {
        struct CUstream_st *s = list;
        list = s->next;
        pthread_join(s->worker, NULL);
        for (gpusim_op_t *op = s->head, *next; op != NULL; op = next) {
            next = op->next;
            if (op->event != NULL)
                event_release(op->event);
            free(op);
        }
        free(s);
    }
    while (gpusim.events != NULL) {
        struct CUevent_st *e = gpusim.events;
        gpusim.events = e->next;
        free(e);
    }
    for (int i = 0; i < GPUSIM_MAX_DEVICES; i++)
        gpusim.ctx[i].null_stream = NULL;
}

gdr_cu_result_t cuStreamCreate(gdr_cu_stream_t *phStream, unsigned int Flags)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (phStream == NULL || (Flags & ~1u) != 0))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS) {
        reap();
        rc = stream_new(0, phStream);
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* Returns at once; the worker finishes what is queued, then exits. */
gdr_cu_result_t cuStreamDestroy_v2(gdr_cu_stream_t hStream)
{
    struct CUstream_st *s = NULL;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_current();
    if (rc == GDR_CUDA_SUCCESS && (hStream == NULL || hStream == GDR_CU_STREAM_LEGACY
                                   || hStream == GDR_CU_STREAM_PER_THREAD))
        rc = GDR_CUDA_ERROR_INVALID_HANDLE;
    if (rc == GDR_CUDA_SUCCESS)
        rc = gpusim_stream_resolve(hStream, &s);
    if (rc == GDR_CUDA_SUCCESS) {
        s->destroyed = 1;
        pthread_cond_broadcast(&gpusim.progress);
        reap();
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuStreamSynchronize(gdr_cu_stream_t hStream)
{
    struct CUstream_st *s = NULL;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = check_handles(hStream, &s, NULL, NULL);
    if (rc == GDR_CUDA_SUCCESS)
        rc = wait_done(s, s->submitted);
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* The context's every stream: one context per process here, so all of them. */
gdr_cu_result_t cuCtxSynchronize(void)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS) {
        gpusim_wait_idle();
        rc = gpusim.sticky;             /* a fault in the work waited for */
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuStreamQuery(gdr_cu_stream_t hStream)
{
    struct CUstream_st *s = NULL;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = check_handles(hStream, &s, NULL, NULL);
    if (rc == GDR_CUDA_SUCCESS && s->completed < s->submitted)
        rc = GDR_CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* ---- events ------------------------------------------------------------------------- */

gdr_cu_result_t cuEventCreate(gdr_cu_event_t *phEvent, unsigned int Flags)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_ctx();
    if (rc == GDR_CUDA_SUCCESS && (phEvent == NULL || (Flags & ~7u) != 0))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS && (Flags & 4))         /* CU_EVENT_INTERPROCESS */
        rc = GDR_CUDA_ERROR_NOT_SUPPORTED;
    if (rc == GDR_CUDA_SUCCESS) {
        struct CUevent_st *e = calloc(1, sizeof(*e));
        if (e == NULL) {
            rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            e->refs = 1;
            e->next = gpusim.events;
            gpusim.events = e;
            *phEvent = e;
        }
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* Queues an op that names event e (lock held). */
static gdr_cu_result_t queue_event_op(struct CUstream_st *s, int kind, struct CUevent_st *e,
                                      uint64_t gen)
{
    gpusim_op_t *op = calloc(1, sizeof(*op));
    if (op == NULL)
        return GDR_CUDA_ERROR_OUT_OF_MEMORY;
    op->kind = kind;
    op->event = e;
    op->gen = gen;
    e->refs++;
    enqueue(s, op);
    return GDR_CUDA_SUCCESS;
}

gdr_cu_result_t cuEventRecord(gdr_cu_event_t hEvent, gdr_cu_stream_t hStream)
{
    struct CUstream_st *s = NULL;
    struct CUevent_st *e = NULL;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = check_handles(hStream, &s, hEvent, &e);
    if (rc == GDR_CUDA_SUCCESS) {
        rc = queue_event_op(s, OP_RECORD, e, e->recorded + 1);
        if (rc == GDR_CUDA_SUCCESS)
            e->recorded++;
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuEventQuery(gdr_cu_event_t hEvent)
{
    struct CUevent_st *e = NULL;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = check_handles(NULL, NULL, hEvent, &e);
    if (rc == GDR_CUDA_SUCCESS && e->done < e->recorded)
        rc = GDR_CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuEventSynchronize(gdr_cu_event_t hEvent)
{
    struct CUevent_st *e = NULL;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = check_handles(NULL, NULL, hEvent, &e);
    if (rc == GDR_CUDA_SUCCESS) {
        uint64_t gen = e->recorded;
        e->refs++;                      /* it may be destroyed while we wait */
        while (e->done < gen && !gpusim.shutdown)
            pthread_cond_wait(&gpusim.progress, &gpusim.lock);
        event_release(e);
        rc = gpusim.sticky;
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* May be called while recorded work is pending: queued ops keep the event alive. */
gdr_cu_result_t cuEventDestroy_v2(gdr_cu_event_t hEvent)
{
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = gpusim_need_current();
    struct CUevent_st **pp = &gpusim.events;
    while (rc == GDR_CUDA_SUCCESS && *pp != NULL && *pp != hEvent)
        pp = &(*pp)->next;
    if (rc == GDR_CUDA_SUCCESS && *pp == NULL)
        rc = GDR_CUDA_ERROR_INVALID_HANDLE;
    if (rc == GDR_CUDA_SUCCESS) {
        struct CUevent_st *e = *pp;
        *pp = e->next;
        event_release(e);
    }
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuStreamWaitEvent(gdr_cu_stream_t hStream, gdr_cu_event_t hEvent,
                                  unsigned int Flags)
{
    struct CUstream_st *s = NULL;
    struct CUevent_st *e = NULL;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = check_handles(hStream, &s, hEvent, &e);
    if (rc == GDR_CUDA_SUCCESS && Flags != 0)
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    /* an event never recorded is complete: nothing to wait for */
    if (rc == GDR_CUDA_SUCCESS && e->recorded > 0)
        rc = queue_event_op(s, OP_WAIT_EVENT, e, e->recorded);
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

/* ---- copies, memset, memory operations, launches ------------------------------------ */

/* Checks and queues op on hStream (lock taken here); *seq: its sequence number. */
static gdr_cu_result_t submit(gdr_cu_stream_t hStream, gpusim_op_t *op, struct CUstream_st **sp,
                              uint64_t *seq)
{
    struct CUstream_st *s = NULL;
    gdr_cu_result_t rc = check_handles(hStream, &s, NULL, NULL);
    /* the driver refuses, at the call, addresses it does not know */
    if (rc == GDR_CUDA_SUCCESS && op->kind == OP_COPY
        && (gpusim_reach(op->dst, op->n, 1) == NULL || gpusim_reach(op->src, op->n, 1) == NULL))
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc == GDR_CUDA_SUCCESS && op->kind != OP_COPY && op->kind != OP_KERNEL
        && gpusim_reach(op->dst, op->n, 0) == NULL)
        rc = GDR_CUDA_ERROR_INVALID_VALUE;
    if (rc != GDR_CUDA_SUCCESS) {
        free(op);
        return rc;
    }
    *seq = enqueue(s, op);
    if (sp != NULL)
        *sp = s;
    return GDR_CUDA_SUCCESS;
}

static gpusim_op_t *op_new(int kind, gdr_cu_ptr_t dst, gdr_cu_ptr_t src, size_t n)
{
    gpusim_op_t *op = calloc(1, sizeof(*op));
    if (op != NULL) {
        op->kind = kind;
        op->dst = dst;
        op->src = src;
        op->n = n;
    }
    return op;
}

static gdr_cu_result_t submit_new(gdr_cu_stream_t hStream, int kind, gdr_cu_ptr_t dst,
                                  gdr_cu_ptr_t src, size_t n, uint64_t value, unsigned flags)
{
    uint64_t seq;
    gpusim_op_t *op = op_new(kind, dst, src, n);
    if (op == NULL)
        return GDR_CUDA_ERROR_OUT_OF_MEMORY;
    op->value = value;
    op->flags = flags;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = submit(hStream, op, NULL, &seq);
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuMemcpyAsync(gdr_cu_ptr_t dst, gdr_cu_ptr_t src, size_t ByteCount,
                              gdr_cu_stream_t hStream)
{
    if (ByteCount == 0)
        return GDR_CUDA_SUCCESS;
    return submit_new(hStream, OP_COPY, dst, src, ByteCount, 0, 0);
}

gdr_cu_result_t cuMemsetD8Async(gdr_cu_ptr_t dstDevice, unsigned char uc, size_t N,
                                gdr_cu_stream_t hStream)
{
    if (N == 0)
        return GDR_CUDA_SUCCESS;
    return submit_new(hStream, OP_MEMSET, dstDevice, 0, N, uc, 0);
}

/* Synchronous with the host: queued on the legacy stream, and waited for. */
gdr_cu_result_t cuMemcpy(gdr_cu_ptr_t dst, gdr_cu_ptr_t src, size_t ByteCount)
{
    struct CUstream_st *s = NULL;
    uint64_t seq;
    if (ByteCount == 0)
        return GDR_CUDA_SUCCESS;
    gpusim_op_t *op = op_new(OP_COPY, dst, src, ByteCount);
    if (op == NULL)
        return GDR_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&gpusim.lock);
    gdr_cu_result_t rc = submit(NULL, op, &s, &seq);
    if (rc == GDR_CUDA_SUCCESS)
        rc = wait_done(s, seq);
    pthread_mutex_unlock(&gpusim.lock);
    return rc;
}

gdr_cu_result_t cuStreamWaitValue64_v2(gdr_cu_stream_t stream, gdr_cu_ptr_t addr,
                                       uint64_t value, unsigned int flags)
{
    if (flags & GDR_CU_STREAM_WAIT_VALUE_FLUSH)
        return GDR_CUDA_ERROR_NOT_SUPPORTED;    /* no remote writes to flush here */
    if ((flags & ~3u) != 0 || (addr & 7) != 0)
        return GDR_CUDA_ERROR_INVALID_VALUE;
    return submit_new(stream, OP_WAIT_VALUE, addr, 0, 8, value, flags);
}

gdr_cu_result_t cuStreamWriteValue64_v2(gdr_cu_stream_t stream, gdr_cu_ptr_t addr,
                                        uint64_t value, unsigned int flags)
{
    if ((flags & ~1u) != 0 || (addr & 7) != 0)
        return GDR_CUDA_ERROR_INVALID_VALUE;
    return submit_new(stream, OP_WRITE_VALUE, addr, 0, 8, value, flags);
}

gdr_cu_result_t gpusim_stream_launch(struct CUstream_st *s, struct CUfunc_st *f,
                                     const gpusim_launch_t *launch, size_t params_len)
{
    gpusim_op_t *op = op_new(OP_KERNEL, 0, 0, 0);
    if (op == NULL)
        return GDR_CUDA_ERROR_OUT_OF_MEMORY;
    op->kernel = f;
    op->launch = *launch;
    memcpy(op->params, launch->params, params_len);
    enqueue(s, op);
    return GDR_CUDA_SUCCESS;
}
