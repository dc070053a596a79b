/* The device seam over streams, events, pinned memory and the accumulate kernel. */
#include "gdr_gpu_rma_device.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"
#include "gpu/gdr_gpu_internal.h"
#include "gpu/gdr_gpu_kernels_image.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_module.h"
#include "gpu/gdr_gpu_stream.h"

#include <errno.h>
#include <stdlib.h>

struct gdr_gpu_rma_mark {
    gdr_gpu_event_t event;
    gdr_gpu_rma_mark_t *next_spare;
    gdr_gpu_rma_mark_t *next_made;
};

/* The seam's answer for one of the GPU layer's (0 or a negative errno value). */
static int seam_rc(int rc)
{
    if (rc >= 0)
        return GDR_RMA_OK;
    return rc == -ENOMEM ? GDR_RMA_NOMEM : GDR_RMA_ERROR;
}

static int d_host_alloc(void *ctx, size_t n, void **p)
{
    gdr_gpu_rma_device_t *d = ctx;
    return seam_rc(gdr_gpu_host_alloc(d->g, n, p));
}

static int d_host_free(void *ctx, void *p)
{
    gdr_gpu_rma_device_t *d = ctx;
    return seam_rc(gdr_gpu_host_free(d->g, p));
}

static int d_queue_new(void *ctx, void **queue)
{
    gdr_gpu_rma_device_t *d = ctx;
    gdr_gpu_stream_t s;
    int rc = gdr_gpu_stream_create(d->g, &s);
    *queue = s;
    return seam_rc(rc);
}

static int d_queue_free(void *ctx, void *queue)
{
    gdr_gpu_rma_device_t *d = ctx;
    return seam_rc(gdr_gpu_stream_destroy(d->g, queue));
}

/* The bytes of n pieces at *total; -1 when they overflow a size_t. */
static int iov_total(const struct iovec *v, size_t n, size_t *total)
{
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].iov_len > SIZE_MAX - *total)
            return -1;
        *total += v[i].iov_len;
    }
    return 0;
}

static int d_copyv(void *ctx, void *queue, const struct iovec *dst, size_t n_dst,
                   const struct iovec *src, size_t n_src)
{
    gdr_gpu_rma_device_t *d = ctx;
    size_t to = 0, from = 0, i = 0, j = 0, di = 0, sj = 0;

    if (iov_total(dst, n_dst, &to) != 0 || iov_total(src, n_src, &from) != 0 || to != from)
        return seam_rc(gdr_gpu_refuse(d->g, EINVAL, "staged copy refused: %zu destination "
                                      "pieces hold %zu bytes but %zu source pieces hold %zu "
                                      "(a bug in gdr's RMA engine)", n_dst, to, n_src, from));
    /* both lists walked at once: each copy ends where a destination or source piece does */
    while (i < n_dst && j < n_src) {
        size_t left_d = dst[i].iov_len - di, left_s = src[j].iov_len - sj;
        size_t n = left_d < left_s ? left_d : left_s;
        if (n > 0) {
            int rc = gdr_gpu_copy_async(d->g, queue, (char *) dst[i].iov_base + di,
                                        (const char *) src[j].iov_base + sj, n);
            if (rc != 0)
                return seam_rc(rc);
        }
        di += n;
        sj += n;
        if (di == dst[i].iov_len) {
            i++;
            di = 0;
        }
        if (sj == src[j].iov_len) {
            j++;
            sj = 0;
        }
    }
    return GDR_RMA_OK;
}

/* Whether gdr's kernel `name` is loaded (*known: 0 not asked yet, 1 yes, -1 no; asked
 * once, as the lookup takes the GPU layer's lock). */
static int kernel_loaded(gdr_gpu_rma_device_t *d, const char *name, int *known)
{
    if (*known == 0)
        *known = gdr_gpu_kernel_ready(d->g, name, gdr_gpu_kernels_image,
                                      gdr_gpu_kernels_image_size) == 0 ? 1 : -1;
    return *known > 0;
}

static int d_acc(void *ctx, void *queue, const gdr_gpu_acc_args_t *args)
{
    gdr_gpu_rma_device_t *d = ctx;
    if (!gdr_gpu_acc_valid(args->op & GDR_GPU_ACC_OP_MASK, args->type))
        return seam_rc(gdr_gpu_refuse(d->g, EINVAL, "accumulate refused: op %d is not defined"
                                      " on element type %d (gdr_gpu_acc_valid)",
                                      (int) args->op, (int) args->type));
    if (d->acc_kernel <= 0 && !kernel_loaded(d, GDR_GPU_ACC_KERNEL, &d->acc_kernel)) {
        d->acc_kernel = 0;      /* asked again next time: the failure is reported each time */
        return GDR_RMA_ERROR;
    }
    return seam_rc(gdr_gpu_acc_launch(d->g, queue, args));
}

static int d_addressable(void *ctx, const void *p)
{
    gdr_gpu_rma_device_t *d = ctx;
    gdr_gpu_mem_info_t info;
    return gdr_gpu_mem_query(d->g, p, &info) == 0 && (info.is_device || info.is_pinned_host);
}

_Static_assert(GDR_RMA_COPY_RUNS_MAX == GDR_GPU_COPY_PIECES_MAX,
               "a seam's copy_runs is one launch of gdr's copy kernel");

static int d_copy_runs(void *ctx, void *queue, const gdr_rma_copy_run_t *runs, size_t n)
{
    gdr_gpu_rma_device_t *d = ctx;
    gdr_gpu_copy_piece_t p[GDR_GPU_COPY_PIECES_MAX];
    if (n == 0 || n > GDR_GPU_COPY_PIECES_MAX)
        return seam_rc(gdr_gpu_refuse(d->g, EINVAL, "kernel copy refused: %zu runs (1 to %d)"
                                      " (a bug in gdr's RMA engine)", n,
                                      GDR_GPU_COPY_PIECES_MAX));
    if (!kernel_loaded(d, GDR_GPU_COPY_KERNEL, &d->copy_kernel))
        return GDR_RMA_NOREG;   /* the copy engine carries everything */
    for (size_t i = 0; i < n; i++)
        p[i] = (gdr_gpu_copy_piece_t) {.dst = (uint64_t) (uintptr_t) runs[i].dst,
            .src = (uint64_t) (uintptr_t) runs[i].src,.len = runs[i].len };
    return seam_rc(gdr_gpu_copy_pieces_launch(d->g, queue, p, (unsigned) n));
}

static int d_mem_alloc(void *ctx, size_t n, void **p)
{
    gdr_gpu_rma_device_t *d = ctx;
    return seam_rc(gdr_gpu_mem_alloc(d->g, n, p));
}

static int d_mem_free(void *ctx, void *p)
{
    gdr_gpu_rma_device_t *d = ctx;
    return seam_rc(gdr_gpu_mem_free(d->g, p));
}

/* A spare mark, or a new one with an event of its own; NULL with g->error on failure. */
static gdr_gpu_rma_mark_t *mark_get(gdr_gpu_rma_device_t *d)
{
    gdr_gpu_rma_mark_t *m = d->spare;
    if (m != NULL) {
        d->spare = m->next_spare;
        return m;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        gdr_gpu_refuse(d->g, ENOMEM, "out of host memory for a GPU event");
        return NULL;
    }
    if (gdr_gpu_event_create(d->g, &m->event) != 0) {
        free(m);
        return NULL;
    }
    m->next_made = d->made;
    d->made = m;
    d->marks_made++;
    return m;
}

static void d_mark_free(void *ctx, void *mark)
{
    gdr_gpu_rma_device_t *d = ctx;
    gdr_gpu_rma_mark_t *m = mark;
    if (m == NULL)
        return;
    m->next_spare = d->spare;
    d->spare = m;
    d->marks_out--;
}

static int d_mark(void *ctx, void *queue, void **mark)
{
    gdr_gpu_rma_device_t *d = ctx;
    gdr_gpu_rma_mark_t *m = mark_get(d);
    *mark = NULL;
    if (m == NULL)
        return GDR_RMA_ERROR;
    d->marks_out++;
    int rc = gdr_gpu_event_record(d->g, m->event, queue);
    if (rc != 0) {
        d_mark_free(d, m);
        return seam_rc(rc);
    }
    *mark = m;
    return GDR_RMA_OK;
}

static int d_reached(void *ctx, void *mark)
{
    gdr_gpu_rma_device_t *d = ctx;
    gdr_gpu_rma_mark_t *m = mark;
    int rc = gdr_gpu_event_query(d->g, m->event);
    return rc >= 0 ? rc : seam_rc(rc);
}

static uint64_t d_buffer_id(void *ctx, const void *ptr)
{
    gdr_gpu_rma_device_t *d = ctx;
    gdr_gpu_mem_info_t info;
    return gdr_gpu_mem_query(d->g, ptr, &info) == 0 ? info.buffer_id : 0;
}

static const char *d_error(const void *ctx)
{
    const gdr_gpu_rma_device_t *d = ctx;
    return d->g->error;
}

int gdr_gpu_rma_device_init(gdr_gpu_rma_device_t *d, gdr_gpu_t *g, gdr_rma_device_t *seam)
{
    *d = (gdr_gpu_rma_device_t) {.g = g };
    *seam = (gdr_rma_device_t) {
        .ctx = d,.host_alloc = d_host_alloc,.host_free = d_host_free,.queue_new = d_queue_new,
        .queue_free = d_queue_free,.copyv = d_copyv,.acc = d_acc,.mark = d_mark,
        .reached = d_reached,.mark_free = d_mark_free,.buffer_id = d_buffer_id,
        .addressable = d_addressable,.copy_runs = d_copy_runs,.mem_alloc = d_mem_alloc,
        .mem_free = d_mem_free,.error = d_error
    };
    return 0;
}

void gdr_gpu_rma_device_fini(gdr_gpu_rma_device_t *d)
{
    while (d->made != NULL) {
        gdr_gpu_rma_mark_t *m = d->made;
        d->made = m->next_made;
        gdr_gpu_event_destroy(d->g, m->event);
        free(m);
    }
    d->spare = NULL;
    d->marks_made = d->marks_out = 0;
}
