#include "gdr_rma_ipc.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"

#include <stdlib.h>

int gdr_rma_ipc_init(gdr_rma_ipc_t *x, const gdr_rma_device_t *dev, int nranks,
                     size_t kernel_copy_max)
{
    *x = (gdr_rma_ipc_t) {.dev = dev,.nranks = nranks,.kernel_copy_max = kernel_copy_max,
        .scratch_max = GDR_RMA_IPC_SCRATCH_MAX };
    x->lanes = calloc(nranks > 0 ? (size_t) nranks : 1, sizeof(*x->lanes));
    return x->lanes != NULL ? GDR_RMA_OK : GDR_RMA_NOMEM;
}

void gdr_rma_ipc_fini(gdr_rma_ipc_t *x)
{
    const gdr_rma_device_t *d = x->dev;
    for (int r = 0; x->lanes != NULL && r < x->nranks; r++) {
        gdr_rma_ipc_lane_t *lane = &x->lanes[r];
        if (lane->done != NULL)
            d->mark_free(d->ctx, lane->done);
        if (lane->queue != NULL)
            (void) d->queue_free(d->ctx, lane->queue);
        if (lane->scratch != NULL)
            (void) d->mem_free(d->ctx, lane->scratch);
    }
    free(x->lanes);
    x->lanes = NULL;
}

int gdr_rma_ipc_inside(int64_t disp, uint64_t disp_unit, uint64_t size, const struct iovec *t,
                       size_t tn)
{
    uint64_t at;
    if (disp < 0 || __builtin_mul_overflow((uint64_t) disp, disp_unit, &at))
        return 0;
    for (size_t i = 0; i < tn; i++) {
        uint64_t off, len = t[i].iov_len;
        if (__builtin_add_overflow(at, (uint64_t) (uintptr_t) t[i].iov_base, &off)
            || len > size || off > size - len)
            return 0;
    }
    return 1;
}

/* target's lane with its queue made, or NULL (error() says why). */
static gdr_rma_ipc_lane_t *lane_ready(gdr_rma_ipc_t *x, int target)
{
    gdr_rma_ipc_lane_t *lane = &x->lanes[target];
    if (lane->queue == NULL && x->dev->queue_new(x->dev->ctx, &lane->queue) != GDR_RMA_OK) {
        lane->queue = NULL;
        return NULL;
    }
    return lane;
}

/* The lane's work so far is what its next wait waits for: a new mark, the old one given
 * back (it comes before the new one on the same queue). */
static int lane_marked(gdr_rma_ipc_t *x, gdr_rma_ipc_lane_t *lane, int acc)
{
    const gdr_rma_device_t *d = x->dev;
    void *mark;
    int rc = d->mark(d->ctx, lane->queue, &mark);
    if (rc != GDR_RMA_OK)
        return rc;
    if (lane->done != NULL)
        d->mark_free(d->ctx, lane->done);
    lane->done = mark;
    lane->acc_here |= acc;
    return GDR_RMA_OK;
}

static int lane_wait(gdr_rma_ipc_t *x, gdr_rma_ipc_lane_t *lane)
{
    const gdr_rma_device_t *d = x->dev;
    if (lane->done == NULL)
        return GDR_RMA_OK;
    int rc;
    while ((rc = d->reached(d->ctx, lane->done)) == 0)
        ;
    if (rc < 0)
        return GDR_RMA_ERROR;   /* the mark stays: a later wait reports it again */
    d->mark_free(d->ctx, lane->done);
    lane->done = NULL;
    lane->acc_here = 0;
    return GDR_RMA_OK;
}

int gdr_rma_ipc_wait(gdr_rma_ipc_t *x, int target)
{
    int lo = target < 0 ? 0 : target, hi = target < 0 ? x->nranks : target + 1;
    for (int r = lo; r < hi && r < x->nranks; r++) {
        int rc = lane_wait(x, &x->lanes[r]);
        if (rc != GDR_RMA_OK)
            return rc;
    }
    return GDR_RMA_OK;
}

int gdr_rma_ipc_acc_pending(const gdr_rma_ipc_t *x, int target)
{
    return target >= 0 && target < x->nranks && x->lanes[target].acc_here;
}

/* ---- Put and Get ---------------------------------------------------------------------- */

/* Where a walk of one operation's runs stands: origin pieces against target pieces, each
 * stretch where both are contiguous one run. */
typedef struct {
    int put;                    /* from origin to target */
    char *tbase;
    const struct iovec *o, *t;
    size_t on, tn, oi, ti, ooff, toff;
} run_walk_t;

/* The walk's next runs into runs[0..max); how many (fewer than max only at the end). */
static size_t next_runs(run_walk_t *w, gdr_rma_copy_run_t *runs, size_t max)
{
    size_t n = 0;
    while (n < max && w->oi < w->on && w->ti < w->tn) {
        size_t left_o = w->o[w->oi].iov_len - w->ooff, left_t = w->t[w->ti].iov_len - w->toff;
        size_t len = left_o < left_t ? left_o : left_t;
        if (len > 0) {
            char *mine = (char *) w->o[w->oi].iov_base + w->ooff;
            char *theirs = w->tbase + (uintptr_t) w->t[w->ti].iov_base + w->toff;
            runs[n++] = w->put ? (gdr_rma_copy_run_t) {.dst = theirs,.src = mine,.len = len }
            : (gdr_rma_copy_run_t) {.dst = mine,.src = theirs,.len = len };
        }
        w->ooff += len;
        w->toff += len;
        if (w->ooff == w->o[w->oi].iov_len) {
            w->oi++;
            w->ooff = 0;
        }
        if (w->toff == w->t[w->ti].iov_len) {
            w->ti++;
            w->toff = 0;
        }
    }
    return n;
}

/* Whether the device addresses every piece (the target's window it always does). */
static int all_addressable(const gdr_rma_device_t *d, const struct iovec *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].iov_len > 0 && !d->addressable(d->ctx, v[i].iov_base))
            return 0;
    return 1;
}

/* One launch of the copy kernel, when the operation of `bytes` is one's; else
 * GDR_RMA_NOREG with the walk where it was. */
static int kernel_copy(gdr_rma_ipc_t *x, gdr_rma_ipc_lane_t *lane, run_walk_t *w,
                       uint64_t bytes)
{
    const gdr_rma_device_t *d = x->dev;
    gdr_rma_copy_run_t runs[GDR_RMA_COPY_RUNS_MAX + 1];
    if (d->copy_runs == NULL || bytes > x->kernel_copy_max || !all_addressable(d, w->o, w->on))
        return GDR_RMA_NOREG;
    run_walk_t start = *w;
    size_t n = next_runs(w, runs, GDR_RMA_COPY_RUNS_MAX + 1);
    /* more runs than one launch takes, or no kernel loaded: the copy engine, from the start */
    int rc = n > GDR_RMA_COPY_RUNS_MAX ? GDR_RMA_NOREG
        : d->copy_runs(d->ctx, lane->queue, runs, n);
    if (rc == GDR_RMA_NOREG)
        *w = start;
    return rc;
}

/* The copy engine, a batch of runs a call: nothing allocated whatever the pieces. */
static int engine_copy(gdr_rma_ipc_t *x, gdr_rma_ipc_lane_t *lane, run_walk_t *w)
{
    const gdr_rma_device_t *d = x->dev;
    enum { BATCH = 16 };
    gdr_rma_copy_run_t runs[BATCH];
    struct iovec dst[BATCH], src[BATCH];
    size_t n;
    while ((n = next_runs(w, runs, BATCH)) > 0) {
        for (size_t i = 0; i < n; i++) {
            dst[i] = (struct iovec) {.iov_base = runs[i].dst,.iov_len = runs[i].len };
            src[i] = (struct iovec) {.iov_base = (void *) runs[i].src,.iov_len = runs[i].len };
        }
        int rc = d->copyv(d->ctx, lane->queue, dst, n, src, n);
        if (rc != GDR_RMA_OK)
            return rc;
    }
    return GDR_RMA_OK;
}

int gdr_rma_ipc_copy(gdr_rma_ipc_t *x, int target, int put, char *tbase, const struct iovec *o,
                     size_t on, const struct iovec *t, size_t tn, int *by_kernel)
{
    *by_kernel = 0;
    gdr_rma_ipc_lane_t *lane = lane_ready(x, target);
    if (lane == NULL)
        return GDR_RMA_ERROR;
    uint64_t bytes = gdr_rma_iov_bytes(o, on);
    if (bytes == 0)
        return GDR_RMA_OK;
    run_walk_t w = {.put = put,.tbase = tbase,.o = o,.on = on,.t = t,.tn = tn };
    int rc = kernel_copy(x, lane, &w, bytes);
    if (rc == GDR_RMA_OK)
        *by_kernel = 1;
    else if (rc == GDR_RMA_NOREG)
        rc = engine_copy(x, lane, &w);
    return rc != GDR_RMA_OK ? rc : lane_marked(x, lane, 0);
}

/* ---- the accumulate family ------------------------------------------------------------ */

int gdr_rma_ipc_acc_takes(const gdr_rma_ipc_acc_t *a, const char *tbase)
{
    for (size_t i = 0; i < a->tn; i++)
        if (!gdr_gpu_acc_atomic_ok(a->type, tbase + (uintptr_t) a->t[i].iov_base))
            return 0;           /* 16-byte elements, misaligned */
    return 1;
}

/* Queues copying bytes [from, from + len) of what the pieces p[0..n) hold, in their
 * order, into the contiguous buf (gather) or out of it (scatter). */
static int range_copy(gdr_rma_ipc_t *x, gdr_rma_ipc_lane_t *lane, const struct iovec *p,
                      size_t n, size_t from, size_t len, char *buf, int gather)
{
    const gdr_rma_device_t *d = x->dev;
    size_t pos = 0;
    for (size_t i = 0; i < n && len > 0; pos += p[i].iov_len, i++) {
        if (pos + p[i].iov_len <= from)
            continue;
        size_t skip = from - pos, take = p[i].iov_len - skip < len ? p[i].iov_len - skip : len;
        struct iovec at = {.iov_base = (char *) p[i].iov_base + skip,.iov_len = take };
        struct iovec b = {.iov_base = buf,.iov_len = take };
        int rc = gather ? d->copyv(d->ctx, lane->queue, &b, 1, &at, 1)
            : d->copyv(d->ctx, lane->queue, &at, 1, &b, 1);
        if (rc != GDR_RMA_OK)
            return rc;
        buf += take;
        from += take;
        len -= take;
    }
    return GDR_RMA_OK;
}

/* The kernel on the target pieces' part of bytes [from, from + len): one launch per piece
 * (or part of one), origin and result at o_at and r_at for byte `from`. */
static int launch_range(gdr_rma_ipc_t *x, gdr_rma_ipc_lane_t *lane,
                        const gdr_gpu_acc_args_t *tmpl, char *tbase, const gdr_rma_ipc_acc_t *a,
                        size_t from, size_t len, const char *o_at, char *r_at)
{
    const gdr_rma_device_t *d = x->dev;
    size_t pos = 0, end = from + len;
    for (size_t i = 0; i < a->tn && pos < end; pos += a->t[i].iov_len, i++) {
        size_t ps = pos, pe = pos + a->t[i].iov_len;
        if (pe <= from)
            continue;
        size_t b = ps > from ? ps : from, e = pe < end ? pe : end;
        gdr_gpu_acc_args_t args = *tmpl;
        args.target = tbase + (uintptr_t) a->t[i].iov_base + (b - ps);
        args.origin = o_at != NULL ? o_at + (b - from) : NULL;
        args.result = r_at != NULL ? r_at + (b - from) : NULL;
        args.count = (e - b) / a->elem;
        int rc = d->acc(d->ctx, lane->queue, &args);
        if (rc != GDR_RMA_OK)
            return rc;
    }
    return GDR_RMA_OK;
}

/* At least `need` bytes of the lane's scratch (each lane its own: its queue alone orders
 * the scratch's reuse); a smaller one is given back once the lane's work is done. */
static int scratch_ready(gdr_rma_ipc_t *x, gdr_rma_ipc_lane_t *lane, size_t need)
{
    const gdr_rma_device_t *d = x->dev;
    if (need <= lane->scratch_size)
        return GDR_RMA_OK;
    int rc = lane_wait(x, lane);
    if (rc != GDR_RMA_OK)
        return rc;
    if (lane->scratch != NULL)
        (void) d->mem_free(d->ctx, lane->scratch);
    lane->scratch = NULL;
    lane->scratch_size = 0;
    size_t size = need < (64 << 10) ? (64 << 10) : need;
    void *p;
    rc = d->mem_alloc(d->ctx, size, &p);
    if (rc != GDR_RMA_OK)
        return rc;
    lane->scratch = p;
    lane->scratch_size = size;
    return GDR_RMA_OK;
}

static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t) 15;
}

int gdr_rma_ipc_acc(gdr_rma_ipc_t *x, int target, char *tbase, const gdr_rma_ipc_acc_t *a)
{
    const gdr_rma_device_t *d = x->dev;
    size_t bytes = (size_t) gdr_rma_iov_bytes(a->t, a->tn);
    int has_o = a->on > 0, has_r = a->rn > 0;
    int o_direct = has_o && a->on == 1 && d->addressable(d->ctx, a->o[0].iov_base);
    int r_direct = has_r && a->rn == 1 && d->addressable(d->ctx, a->r[0].iov_base);
    int c_bounce = a->compare != NULL && !d->addressable(d->ctx, a->compare);
    int nbuf = (has_o && !o_direct) + (has_r && !r_direct);
    /* bytes per round: whole 16-byte units (every element size divides 16) */
    size_t cap = nbuf == 0 ? bytes : x->scratch_max / (size_t) nbuf;
    if (cap > round16(bytes))
        cap = round16(bytes);
    if (bytes == 0)
        return GDR_RMA_OK;
    gdr_rma_ipc_lane_t *lane = lane_ready(x, target);
    if (lane == NULL)
        return GDR_RMA_ERROR;
    int rc = scratch_ready(x, lane, (size_t) nbuf * cap + (c_bounce ? 16 : 0));
    if (rc != GDR_RMA_OK)
        return rc;
    char *o_buf = lane->scratch, *r_buf = lane->scratch + (has_o && !o_direct ? cap : 0);
    gdr_gpu_acc_args_t tmpl = {.compare = a->compare,.op = a->op | GDR_GPU_ACC_ATOMIC,
        .type = a->type
    };
    if (c_bounce) {
        char *c_buf = lane->scratch + (size_t) nbuf * cap;
        struct iovec to = {.iov_base = c_buf,.iov_len = a->elem };
        struct iovec from = {.iov_base = (void *) a->compare,.iov_len = a->elem };
        rc = d->copyv(d->ctx, lane->queue, &to, 1, &from, 1);
        tmpl.compare = c_buf;
    }
    for (size_t from = 0; rc == GDR_RMA_OK && from < bytes; from += cap) {
        size_t len = bytes - from < cap ? bytes - from : cap;
        const char *o_at = !has_o ? NULL : o_direct ? (const char *) a->o[0].iov_base + from
            : o_buf;
        char *r_at = !has_r ? NULL : r_direct ? (char *) a->r[0].iov_base + from : r_buf;
        if (has_o && !o_direct)
            rc = range_copy(x, lane, a->o, a->on, from, len, o_buf, 1);
        if (rc == GDR_RMA_OK)
            rc = launch_range(x, lane, &tmpl, tbase, a, from, len, o_at, r_at);
        if (rc == GDR_RMA_OK && has_r && !r_direct)
            rc = range_copy(x, lane, a->r, a->rn, from, len, r_buf, 0);
    }
    return rc != GDR_RMA_OK ? rc : lane_marked(x, lane, 1);
}
