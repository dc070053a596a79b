#include "gdr_rma_trigger_exec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gdr_rma_issue.h"
#include "gdr/gdr_rma_signal.h"
#include "gdr/gpu/gdr_gpu_acc_body.h"

/* One descriptor being carried out. */
struct gdr_trig_exec_op {
    gdr_trig_executor_t *x;
    gdr_trig_desc_t d;
    uint64_t operand;           /* what the NIC reads: the signal value, the addend */
    uint64_t old;               /* a fetched value nobody asked for: a signal ADD's, an
                                 * accumulate element's */
    uint64_t compare;           /* a fetch_op's compare-and-swap value */
    uint64_t toff;              /* bytes past disp * unit where the target data starts */
    int signal_sent;
    struct iovec local;         /* the local buffer as a list of one (device memory) */
    gdr_trig_exec_op_t *next;   /* in x->signals */
};

static const char *op_name(uint32_t op)
{
    switch (op) {
        case GDR_TRIG_PUT:
            return "put";
        case GDR_TRIG_GET:
            return "get";
        case GDR_TRIG_PUT_SIGNAL:
            return "put_signal";
        case GDR_TRIG_FETCH_ADD:
            return "fetch_add";
        case GDR_TRIG_PUT_NOTIFY:
            return "put_notify";
        case GDR_TRIG_GET_NOTIFY:
            return "get_notify";
        case GDR_TRIG_NOTIFY:
            return "notify";
        case GDR_TRIG_ACCUMULATE:
            return "accumulate";
        case GDR_TRIG_LOCK:
            return "lock";
        case GDR_TRIG_UNLOCK:
            return "unlock";
        case GDR_TRIG_FETCH_OP:
            return "fetch_op";
        case GDR_TRIG_FENCE:
            return "fence";
        default:
            return "unknown operation";
    }
}

static int say(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return -1;
}

/* The first failure after start: reported by the next progress. */
static void exec_fail(gdr_trig_executor_t *x, const char *fmt, ...)
{
    if (x->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->error, sizeof(x->error), fmt, ap);
    va_end(ap);
    x->failed = 1;
}

void gdr_trig_executor_init(gdr_trig_executor_t *x, gdr_rma_win_t *win, uint32_t handle,
                            const gdr_rma_device_t *dev, int device_by_nic)
{
    memset(x, 0, sizeof(*x));
    x->win = win;
    x->handle = handle;
    x->dev = dev;
    x->device_by_nic = device_by_nic;
}

void gdr_trig_executor_set_staged(gdr_trig_executor_t *x, gdr_rma_staged_t *d,
                                  gdr_rma_staged_win_t *dw)
{
    x->staged = d;
    x->staged_win = dw;
}

void gdr_trig_executor_set_notify(gdr_trig_executor_t *x, const gdr_trig_notify_ops_t *ops)
{
    x->notify = *ops;
}

void gdr_trig_executor_bind(gdr_trig_executor_t *x, gdr_trig_proxy_t *proxy)
{
    x->proxy = proxy;
}

unsigned long gdr_trig_executor_inflight(const gdr_trig_executor_t *x)
{
    return x->inflight;
}

/* [disp * unit + off, + bytes) inside target's window; words (signals, fetch-add): 8
 * bytes at an 8-byte aligned address. */
static int check_target(const gdr_trig_executor_t *x, int rank, int64_t disp, uint64_t off,
                        uint64_t bytes, int word, const char *what, char *why, size_t why_len)
{
    const gdr_rma_win_t *w = x->win;
    gdr_rma_range_status_t st = off > UINT64_MAX - bytes ? GDR_RMA_RANGE_OVERFLOW
        : gdr_rma_win_check_range(w, rank, disp, 0, off + bytes);
    if (st != GDR_RMA_RANGE_OK)
        return say(why, why_len, "%s of %llu bytes at displacement %lld (+%llu bytes) of rank "
                   "%d: %s (its window has %llu bytes)", what, (unsigned long long) bytes,
                   (long long) disp, (unsigned long long) off, rank, gdr_rma_range_str(st),
                   (unsigned long long) w->targets[rank].size);
    uint64_t at = w->targets[rank].base + (uint64_t) disp * w->targets[rank].disp_unit + off;
    if (word && at % 8 != 0)
        return say(why, why_len, "%s at displacement %lld of rank %d is not 8-byte aligned "
                   "(signal and fetch-add words must be)", what, (long long) disp, rank);
    return 0;
}

static void op_done(void *arg, int status, const void *landed, size_t len);

/* op is over (complete, dropped or failed): no longer in flight. */
static void op_end(gdr_trig_executor_t *x, gdr_trig_exec_op_t *op)
{
    x->inflight--;
    if (x->to != NULL)
        x->to[op->d.rank]--;
    free(op);
}

/* op complete: the proxy told (so that the kernel's flush sees it), then over. */
static void op_complete(gdr_trig_executor_t *x, gdr_trig_exec_op_t *op)
{
    if (gdr_trig_proxy_complete(x->proxy, op->d.rank, op->d.rank_seq) != 0)
        exec_fail(x, "%s", gdr_trig_proxy_error(x->proxy));
    op_end(x, op);
}

/* A kernel's lock (GDR_TRIG_LOCK): this process's epoch to the rank begins, its lock taken
 * now by the NIC's atomics on the target's lock word, as MPI_Win_lock's native path takes
 * it (gdr_rma_passive.h), backing off while others hold it. */
static int take_lock(gdr_trig_executor_t *x, const gdr_trig_desc_t *d, char *why,
                     size_t why_len)
{
    gdr_rma_win_t *w = x->win;
    int rc = gdr_rma_passive_lock(w, d->rank, d->value ? GDR_RMA_LOCK_EXCLUSIVE
                                  : GDR_RMA_LOCK_SHARED);
    if (rc == GDR_RMA_OK)
        rc = gdr_rma_passive_need(w, d->rank);
    if (rc == GDR_RMA_OK)
        return 0;
    return say(why, why_len, "taking rank %d's lock by remote atomics failed (%s)", d->rank,
               rc == GDR_RMA_NOMEM ? "out of memory" : rc == GDR_RMA_HOST_ERROR
               ? "the host's progress failed" : "the connection to the target broke?");
}

/* A kernel's fence (GDR_TRIG_FENCE): first every other operation of the executor complete
 * (the kernel stopped posting before it) and nothing of the window still in flight to a
 * target, then the window's fence barrier (gdr_rma_active.h), begun and tested without
 * waiting.  1: not yet; 0: through; -1 with why. */
static int fence_step(gdr_trig_executor_t *x, gdr_trig_exec_op_t *op, char *why,
                      size_t why_len)
{
    gdr_rma_win_t *w = x->win;
    int rc, done = 0;
    if (!op->signal_sent) {
        if (x->inflight > 1 || w->tracker.total_remote != 0)
            return 1;
        rc = gdr_rma_active_barrier_begin(w);
        if (rc != GDR_RMA_OK)
            return say(why, why_len, "beginning the fence's barrier failed (%s)",
                       rc == GDR_RMA_HOST_ERROR ? "the host's progress failed"
                       : w->eng->net.error(w->eng->net.ctx));
        op->signal_sent = 1;    /* (the barrier begun) */
    }
    rc = gdr_rma_active_barrier_test(w, &done);
    if (rc != GDR_RMA_OK)
        return say(why, why_len, "the fence's barrier failed (%s)", rc == GDR_RMA_HOST_ERROR
                   ? "the host's progress failed" : w->eng->net.error(w->eng->net.ctx));
    return done ? 0 : 1;
}

/* A kernel's unlock (GDR_TRIG_UNLOCK), once every operation to the rank that began before
 * it is complete at the target: the release posted (nobody waits for it, as for
 * MPI_Win_unlock's).  1: not yet; 0: released; -1 with why. */
static int release_lock(gdr_trig_executor_t *x, const gdr_trig_exec_op_t *op, char *why,
                        size_t why_len)
{
    gdr_rma_win_t *w = x->win;
    int t = op->d.rank;
    if (x->to[t] > 1 || (w->tracker.remote != NULL && w->tracker.remote[t] != 0))
        return 1;
    int rc = gdr_rma_passive_unlock(w, t);
    if (rc == GDR_RMA_OK)
        return 0;
    return say(why, why_len, "posting the release of rank %d's lock failed (%s)", t,
               rc == GDR_RMA_HOST_ERROR ? "the host's progress failed"
               : w->eng->net.error(w->eng->net.ctx));
}

/* The staged protocol carries what RDMA cannot when device memory is involved (its
 * target applies it with the device's copies and atomic steps) and the target has a
 * queue pair (the protocol pulls data by RDMA reads between staging slots; the target's
 * window itself need not be registered). */
static int staged_takes(const gdr_trig_executor_t *x, const gdr_rma_access_t *a)
{
    const gdr_rma_win_t *w = x->win;
    return x->staged_win != NULL && w->rdma && w->targets[a->target].peer >= 0
        && (w->targets[a->target].device || a->origin.device_id != 0
            || a->result.device_id != 0);
}

static int post_staged(gdr_trig_exec_op_t *op, gdr_rma_access_t *a, char *why, size_t why_len)
{
    gdr_trig_executor_t *x = op->x;
    if (a->kind != GDR_RMA_PUT && a->kind != GDR_RMA_GET) {
        /* (the access names its op and type: gpu_op, gpu_type) */
        if (gdr_rma_switch_path(x->win, a->target, GDR_RMA_VIA_STAGED) != GDR_RMA_OK)
            return say(why, why_len, "waiting for earlier accumulates to rank %d failed",
                       a->target);
    }
    int rc = gdr_rma_staged_start(x->staged_win, a, op_done, op);
    if (rc == GDR_RMA_OK)
        return 0;
    return say(why, why_len, "the staged protocol refused it (%s)",
               rc == GDR_RMA_ERROR ? gdr_rma_staged_error(x->staged)
               : rc == GDR_RMA_NOMEM ? "out of memory" : "the host's progress failed");
}

/* Plans and posts one contiguous access for op.  0, or -1 with why (nothing posted). */
static int post(gdr_trig_exec_op_t *op, gdr_rma_access_t *a, char *why, size_t why_len)
{
    gdr_trig_executor_t *x = op->x;
    gdr_rma_win_t *w = x->win;
    struct iovec piece = {.iov_base = (void *) (uintptr_t) op->toff,.iov_len = a->tbytes };
    gdr_rma_plan_t plan;
    gdr_rma_op_t *eop;
    int not_attached;

    a->tpieces = &piece;
    a->ntpieces = 1;
    a->t_true_lb = (int64_t) op->toff;
    a->t_span = a->tbytes;
    if (!x->device_by_nic && (a->origin.device_id != 0 || a->result.device_id != 0)
        && staged_takes(x, a))
        return post_staged(op, a, why, why_len);        /* the NIC must not register it */
    int rc = gdr_rma_plan(w, a, &plan, &not_attached);
    if (not_attached)
        return say(why, why_len, "rank %d has not attached displacement %lld of its dynamic "
                   "window", a->target, (long long) a->disp);
    if (rc != GDR_RMA_OK)
        return say(why, why_len, "planning it failed (%s)",
                   rc == GDR_RMA_HOST_ERROR ? "the host's progress failed" : "transport error");
    if (!plan.by_rdma) {
        gdr_rma_plan_drop(w, &plan);
        if (staged_takes(x, a))
            return post_staged(op, a, why, why_len);
        return say(why, why_len, "it cannot go by RDMA (%s); triggered operations go by RDMA%s",
                   !gdr_rma_win_reaches(w, a->target)
                   ? "the target's window is not registered, or it has no queue pair"
                   : a->kind == GDR_RMA_FOP
                   ? "the window's accumulate rule keeps NIC atomics off: ranks share a node, "
                   "or which_accumulate_ops lacks sum"
                   : "GPUDirect RDMA is off: dmabuf or nvidia-peermem, MPIR_CVAR_CH4_GDR_GPUDIRECT",
                   x->staged_win != NULL ? ", or through the staged protocol with device memory"
                   : " only");
    }
    if (a->kind == GDR_RMA_FOP) {
        rc = gdr_rma_switch_path(w, a->target, GDR_RMA_VIA_NIC);
        if (rc != GDR_RMA_OK) {
            gdr_rma_plan_drop(w, &plan);
            return say(why, why_len, "waiting for earlier accumulates to rank %d failed",
                       a->target);
        }
    }
    rc = gdr_rma_issue(w, a, &plan, &eop);
    if (rc == GDR_RMA_NOREG)
        return say(why, why_len, "the local buffer cannot be registered (%s)",
                   w->eng->net.error(w->eng->net.ctx));
    if (rc != GDR_RMA_OK)
        return say(why, why_len, "posting it failed (%s)", rc == GDR_RMA_NOMEM ? "out of memory"
                   : rc == GDR_RMA_HOST_ERROR ? "the host's progress failed"
                   : w->eng->net.error(w->eng->net.ctx));
    gdr_rma_op_on_complete(eop, op_done, op, 0);
    gdr_rma_op_posted(eop);
    return 0;
}

/* The local buffer of a put or get: device memory as a list of one piece (the engine
 * moves it zero-copy or not at all), host memory contiguous. */
static int local_buf(gdr_trig_exec_op_t *op, gdr_rma_buf_t *b, char *why, size_t why_len)
{
    gdr_trig_executor_t *x = op->x;
    void *addr = (void *) (uintptr_t) op->d.addr;
    uint64_t id = x->dev != NULL ? x->dev->buffer_id(x->dev->ctx, addr) : 0;
    *b = (gdr_rma_buf_t) {.addr = addr,.device_id = id };
    if (id == 0)
        return 0;
    if (!x->device_by_nic && x->staged_win == NULL)
        return say(why, why_len, "its local buffer is device memory, GPUDirect RDMA is off "
                   "(dmabuf or nvidia-peermem, MPIR_CVAR_CH4_GDR_GPUDIRECT) and so is the staged "
                   "protocol (MPIR_CVAR_CH4_GDR_STAGED): use host-pinned buffers");
    op->local = (struct iovec) {.iov_base = addr,.iov_len = op->d.bytes };
    b->scattered = 1;
    b->iov = &op->local;
    b->n = 1;
    return 0;
}

static int post_data(gdr_trig_exec_op_t *op, char *why, size_t why_len)
{
    const gdr_trig_desc_t *d = &op->d;
    int get = d->op == GDR_TRIG_GET || d->op == GDR_TRIG_GET_NOTIFY;
    gdr_rma_access_t a = {.kind = get ? GDR_RMA_GET : GDR_RMA_PUT,.target = d->rank,
        .disp = d->disp,.tbytes = d->bytes
    };
    if (local_buf(op, get ? &a.result : &a.origin, why, why_len) != 0)
        return -1;
    return post(op, &a, why, why_len);
}

static int post_fetch_add(gdr_trig_exec_op_t *op, int64_t disp, void *result, char *why,
                          size_t why_len)
{
    gdr_trig_executor_t *x = op->x;
    if (x->dev != NULL && x->dev->buffer_id(x->dev->ctx, result) != 0)
        return say(why, why_len, "the result of a fetch_add must be host-pinned memory, not "
                   "device memory");
    /* (by the NIC; or the target's GPU, with the steps of MPI_Fetch_and_op's SUM on int64) */
    gdr_rma_access_t a = {.kind = GDR_RMA_FOP,.target = op->d.rank,.disp = disp,.tbytes = 8,
        .op = GDR_RMA_ACC_SUM,.int64_elements = 1,
        .origin = {.addr = &op->operand},.result = {.addr = result},
        .gpu_op = GDR_GPU_OP_SUM,.gpu_type = GDR_GPU_T_INT64
    };
    return post(op, &a, why, why_len);
}

static int post_signal(gdr_trig_exec_op_t *op, char *why, size_t why_len)
{
    op->signal_sent = 1;
    op->operand = op->d.value;
    op->toff = 0;               /* the signal word is at signal_disp itself */
    if (op->d.signal_op == GDR_SIGNAL_ADD)
        return post_fetch_add(op, op->d.signal_disp, &op->old, why, why_len);
    gdr_rma_access_t a = {.kind = GDR_RMA_PUT,.target = op->d.rank,.disp = op->d.signal_disp,
        .tbytes = 8,.origin = {.addr = &op->operand}
    };
    return post(op, &a, why, why_len);
}

/* A notification's counter: the host knows every target's count. */
static int check_counter(const gdr_trig_executor_t *x, const gdr_trig_desc_t *d, char *why,
                         size_t why_len)
{
    if (x->notify.check == NULL)
        return say(why, why_len, "this window takes no notified operations");
    return x->notify.check(x->notify.ctx, d->rank, d->signal_disp, why, why_len);
}

/* A kernel's lock or unlock: the window's locks by the NIC's atomics, and an epoch to the
 * rank that this process does not hold yet (lock) or does (unlock). */
static int check_sync(const gdr_trig_executor_t *x, const gdr_trig_desc_t *d, char *why,
                      size_t why_len)
{
    const gdr_rma_win_t *w = x->win;
    if (!gdr_rma_passive_native(w, d->rank))
        return say(why, why_len, "this window's locks go by MPICH's messages, which a kernel "
                   "cannot take (MPIR_CVAR_CH4_GDR_NATIVE_SYNC off, or a rank without RDMA)");
    int state = w->passive.t != NULL ? w->passive.t[d->rank].state : GDR_RMA_EPOCH_NONE;
    if (d->op == GDR_TRIG_LOCK && state != GDR_RMA_EPOCH_NONE)
        return say(why, why_len, "this process is already in an epoch to rank %d (the host's "
                   "MPI_Win_lock or lock_all, or a kernel's lock not yet released): one epoch "
                   "a target", d->rank);
    if (d->op == GDR_TRIG_UNLOCK && state == GDR_RMA_EPOCH_NONE)
        return say(why, why_len, "no epoch to rank %d to end (no lock taken)", d->rank);
    return 0;
}

/* A kernel's fetch_op: an op and type the atomic steps define (NO_OP and CSWAP too), one
 * element of its size, inside the target's window and aligned to its size; the result in
 * host memory, where the proxy writes it. */
static int check_fetch_op(const gdr_trig_executor_t *x, const gdr_trig_desc_t *d, char *why,
                          size_t why_len)
{
    int op = (int) (d->signal_op & 0xffff), type = (int) (d->signal_op >> 16);
    if (op >= GDR_GPU_OP_COUNT || type >= GDR_GPU_T_COUNT || !gdr_gpu_acc_defined(op, type)
        || gdr_gpu_word_type_size(type) != d->bytes)
        return say(why, why_len, "op %d on type %d (%llu bytes) is not a fetch_op of one "
                   "element", op, type, (unsigned long long) d->bytes);
    if (d->addr == 0 || (x->dev != NULL
                         && x->dev->buffer_id(x->dev->ctx, (void *) (uintptr_t) d->addr) != 0))
        return say(why, why_len, "the result of a fetch_op must be host-pinned memory");
    if (check_target(x, d->rank, d->disp, 0, d->bytes, 0, "the element", why, why_len))
        return -1;
    const gdr_rma_target_t *t = &x->win->targets[d->rank];
    if ((t->base + (uint64_t) d->disp * t->disp_unit) % d->bytes != 0)
        return say(why, why_len, "the element at displacement %lld of rank %d is not aligned "
                   "to its %llu bytes", (long long) d->disp, d->rank,
                   (unsigned long long) d->bytes);
    return 0;
}

static int check(const gdr_trig_executor_t *x, const gdr_trig_desc_t *d, char *why,
                 size_t why_len)
{
    if (d->window != x->handle)
        return say(why, why_len, "its window handle %u is not this window's (%u): a freed "
                   "window's device handle?", d->window, x->handle);
    if (d->rank < 0 || d->rank >= x->win->n)
        return say(why, why_len, "rank %d is not in the window (%d ranks)", d->rank, x->win->n);
    switch (d->op) {
        case GDR_TRIG_PUT:
        case GDR_TRIG_GET:
            return check_target(x, d->rank, d->disp, 0, d->bytes, 0, "the target", why, why_len);
        case GDR_TRIG_PUT_SIGNAL:
            if (!gdr_signal_op_valid((int) d->signal_op))
                return say(why, why_len, "signal op %u is neither SET nor ADD", d->signal_op);
            if (check_target(x, d->rank, d->disp, 0, d->bytes, 0, "the target", why, why_len))
                return -1;
            return check_target(x, d->rank, d->signal_disp, 0, 8, 1, "the signal word", why,
                                why_len);
        case GDR_TRIG_FETCH_ADD:
            if (d->signal_disp < 0)
                return say(why, why_len, "its word is %llu bytes before its displacement",
                           (unsigned long long) (0 - (uint64_t) d->signal_disp));   /* INT64_MIN too */
            return check_target(x, d->rank, d->disp, (uint64_t) d->signal_disp, 8, 1,
                                "the fetch_add word", why, why_len);
        case GDR_TRIG_PUT_NOTIFY:
        case GDR_TRIG_GET_NOTIFY:
            if (check_target(x, d->rank, d->disp, 0, d->bytes, 0, "the target", why, why_len))
                return -1;
            return check_counter(x, d, why, why_len);
        case GDR_TRIG_NOTIFY:
            return check_counter(x, d, why, why_len);
        case GDR_TRIG_ACCUMULATE: {
            int op = (int) (d->signal_op & 0xffff), type = (int) (d->signal_op >> 16);
            if (op >= GDR_GPU_OP_COUNT || type >= GDR_GPU_T_COUNT || op == GDR_GPU_OP_NO_OP
                || op == GDR_GPU_OP_CSWAP || !gdr_gpu_acc_defined(op, type)
                || gdr_gpu_word_type_size(type) != d->bytes)
                return say(why, why_len, "op %d on type %d (%llu bytes) is not an accumulate "
                           "of one element", op, type, (unsigned long long) d->bytes);
            if (d->signal_disp < 0)
                return say(why, why_len, "its element is before its displacement");
            if (check_target(x, d->rank, d->disp, (uint64_t) d->signal_disp, d->bytes, 0,
                             "the element", why, why_len))
                return -1;
            const gdr_rma_target_t *t = &x->win->targets[d->rank];
            uint64_t at = t->base + (uint64_t) d->disp * t->disp_unit + (uint64_t) d->signal_disp;
            if (at % d->bytes != 0)
                return say(why, why_len, "the element at displacement %lld of rank %d is not "
                           "aligned to its %llu bytes", (long long) d->disp, d->rank,
                           (unsigned long long) d->bytes);
            return 0;
        }
        case GDR_TRIG_LOCK:
        case GDR_TRIG_UNLOCK:
            return check_sync(x, d, why, why_len);
        case GDR_TRIG_FETCH_OP:
            return check_fetch_op(x, d, why, why_len);
        case GDR_TRIG_FENCE:
            if (!gdr_rma_ctl_native(x->win))
                return say(why, why_len, "this window's fence goes by MPICH's messages, which "
                           "a kernel cannot take (MPIR_CVAR_CH4_GDR_NATIVE_SYNC off, or a rank "
                           "without RDMA)");
            return 0;
        default:
            return say(why, why_len, "operation kind %u is unknown", d->op);
    }
}

static int exec_start(void *ctx, const gdr_trig_desc_t *d, char *why, size_t why_len)
{
    gdr_trig_executor_t *x = ctx;
    char what[256];
    if (check(x, d, what, sizeof(what)) != 0)
        return say(why, why_len, "%s refused: %s", op_name(d->op), what);
    gdr_trig_exec_op_t *op = calloc(1, sizeof(*op));
    if (op == NULL)
        return say(why, why_len, "out of memory for a triggered %s", op_name(d->op));
    op->x = x;
    op->d = *d;
    op->operand = d->value;
    if (x->to == NULL && (x->to = calloc((size_t) x->win->n, sizeof(*x->to))) == NULL) {
        free(op);
        return say(why, why_len, "out of memory for the executor's counts");
    }
    int rc;
    if (d->op == GDR_TRIG_LOCK || d->op == GDR_TRIG_UNLOCK || d->op == GDR_TRIG_FENCE) {
        /* the lock taken now; the release once the rank's operations before it are
         * complete: both told at the next progress */
        rc = d->op == GDR_TRIG_LOCK ? take_lock(x, d, what, sizeof(what)) : 0;
        if (rc == 0) {
            op->next = x->signals;
            x->signals = op;
        }
    } else if (d->op == GDR_TRIG_FETCH_ADD) {
        op->toff = (uint64_t) d->signal_disp;
        rc = post_fetch_add(op, d->disp, d->addr != 0 ? (void *) (uintptr_t) d->addr : &op->old,
                            what, sizeof(what));
    } else if (d->op == GDR_TRIG_FETCH_OP) {
        /* operand and compare by value in the operation; only the target's GPU applies it */
        int gop = (int) (d->signal_op & 0xffff);
        op->compare = (uint64_t) d->signal_disp;
        gdr_rma_access_t a = {.kind = gop == GDR_GPU_OP_CSWAP ? GDR_RMA_CAS : GDR_RMA_FOP,
            .target = d->rank,.disp = d->disp,.tbytes = d->bytes,
            .origin = {.addr = &op->operand},.result = {.addr = (void *) (uintptr_t) d->addr},
            .compare = &op->compare,.gpu_op = gop,.gpu_type = (int) (d->signal_op >> 16)
        };
        struct iovec piece = {.iov_base = 0,.iov_len = d->bytes };
        a.tpieces = &piece;
        a.ntpieces = 1;
        a.t_span = d->bytes;
        rc = staged_takes(x, &a) ? post_staged(op, &a, what, sizeof(what))
            : say(what, sizeof(what), "only the target's GPU applies it (the staged protocol, "
                  "to a device window), which does not reach rank %d's window", d->rank);
    } else if (d->op == GDR_TRIG_ACCUMULATE) {
        /* the element's bytes are the operand; only the target's GPU applies these */
        op->toff = (uint64_t) d->signal_disp;
        gdr_rma_access_t a = {.kind = GDR_RMA_ACC,.target = d->rank,.disp = d->disp,
            .tbytes = d->bytes,.origin = {.addr = &op->operand},
            .gpu_op = (int) (d->signal_op & 0xffff),.gpu_type = (int) (d->signal_op >> 16)
        };
        struct iovec piece = {.iov_base = (void *) (uintptr_t) op->toff,.iov_len = d->bytes };
        a.tpieces = &piece;
        a.ntpieces = 1;
        a.t_true_lb = (int64_t) op->toff;
        a.t_span = d->bytes;
        rc = staged_takes(x, &a) ? post_staged(op, &a, what, sizeof(what))
            : say(what, sizeof(what), "only the target's GPU applies it (the staged protocol, "
                  "to a device window), which does not reach rank %d's window", d->rank);
    } else if (d->op == GDR_TRIG_NOTIFY || ((d->op == GDR_TRIG_PUT_NOTIFY
                                              || d->op == GDR_TRIG_GET_NOTIFY) && d->bytes == 0)) {
        /* nothing to move: the notification goes at the next progress */
        op->next = x->signals;
        x->signals = op;
        rc = 0;
    } else {
        rc = post_data(op, what, sizeof(what));
    }
    if (rc != 0) {
        free(op);
        return say(why, why_len, "%s of %llu bytes: %s", op_name(d->op),
                   (unsigned long long) d->bytes, what);
    }
    x->inflight++;
    x->to[d->rank]++;
    return 0;
}

/* Engine completion (inside the host's progress): never posts from here. */
static void op_done(void *arg, int status, const void *landed, size_t len)
{
    gdr_trig_exec_op_t *op = arg;
    gdr_trig_executor_t *x = op->x;
    (void) landed;
    (void) len;
    if (status != 0) {
        exec_fail(x, "a triggered %s to rank %d failed in the transport (the peer died or "
                  "the queue pair broke; see the verbs error above)", op_name(op->d.op),
                  op->d.rank);
    } else if ((op->d.op == GDR_TRIG_PUT_SIGNAL && !op->signal_sent)
               || op->d.op == GDR_TRIG_PUT_NOTIFY || op->d.op == GDR_TRIG_GET_NOTIFY) {
        op->next = x->signals;
        x->signals = op;
        return;
    } else {
        op_complete(x, op);
        return;
    }
    op_end(x, op);
}

/* The operations whose next step waits for progress: signals and notifications to send,
 * locks taken, unlocks to release.  One that cannot go on yet stays for the next progress
 * (a notification the host cannot send now holds the later ones back too); the others go
 * on meanwhile (an unlock waits for a put_signal's signal to the same rank). */
static int exec_progress(void *ctx, char *why, size_t why_len)
{
    gdr_trig_executor_t *x = ctx;
    gdr_trig_exec_op_t *list = x->signals, *keep = NULL, **keep_tail = &keep;
    int notify_later = 0;
    x->signals = NULL;
    while (list != NULL) {
        gdr_trig_exec_op_t *op = list;
        char what[256];
        int later = 0, rc;
        list = op->next;
        op->next = NULL;
        if (x->failed) {
            /* the transport failed: the signal is dropped (the error says why), and the
             * operation ends, so that the window's free does not wait for it */
            op_end(x, op);
            continue;
        }
        switch (op->d.op) {
            case GDR_TRIG_PUT_SIGNAL:
                if (post_signal(op, what, sizeof(what)) != 0) {
                    exec_fail(x, "the signal of a put_signal to rank %d: %s", op->d.rank, what);
                    op_end(x, op);
                }
                break;
            case GDR_TRIG_LOCK:
                op_complete(x, op);
                break;
            case GDR_TRIG_FENCE:
            case GDR_TRIG_UNLOCK:
                rc = op->d.op == GDR_TRIG_FENCE ? fence_step(x, op, what, sizeof(what))
                    : release_lock(x, op, what, sizeof(what));
                if (rc > 0) {
                    later = 1;
                } else if (rc != 0) {
                    exec_fail(x, "the %s of rank %d: %s", op_name(op->d.op), op->d.rank, what);
                    op_end(x, op);      /* (not finished: the kernel sees the proxy stop) */
                } else {
                    op_complete(x, op);
                }
                break;
            default:
                /* a notification: sent by the host's way, the operation done once it is */
                rc = notify_later ? 1 : x->notify.send(x->notify.ctx, op->d.rank,
                                                       op->d.signal_disp, what, sizeof(what));
                if (rc > 0) {
                    later = notify_later = 1;   /* not now: at the next progress */
                } else if (rc != 0) {
                    exec_fail(x, "the notification of a %s to rank %d: %s", op_name(op->d.op),
                              op->d.rank, what);
                    op_end(x, op);
                } else {
                    op_complete(x, op);
                }
                break;
        }
        if (later) {
            *keep_tail = op;
            keep_tail = &op->next;
        }
    }
    *keep_tail = x->signals;    /* (what completions added meanwhile) */
    x->signals = keep;
    if (x->failed)
        return say(why, why_len, "%s", x->error);
    return 0;
}

const gdr_trig_exec_t gdr_trig_executor_ops = {.start = exec_start,.progress = exec_progress };

void gdr_trig_executor_free(gdr_trig_executor_t *x)
{
    /* (after a failure, operations may wait in the list for a progress that never came) */
    while (x->signals != NULL) {
        gdr_trig_exec_op_t *op = x->signals;
        x->signals = op->next;
        op_end(x, op);
    }
    free(x->to);
    x->to = NULL;
}
