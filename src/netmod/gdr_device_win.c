/* Kernel-triggered RMA (DESIGN.md section 4): a window's device handle
 * (MPIX_Win_get_device_handle, maint/patches 0014) and the proxy that serves it.  The
 * handle is include/gdr/gdr_rma_kernel_api.h's gdr_dev_win_t, copied into the opaque
 * MPIX_Win_device: this rank's own window, and the device windows of ranks on this node
 * (their CUDA IPC handles came with the window's cards, gdr_win.c; mapped here when the
 * first handle is made, unmapped at the window's free), are reached by direct loads and
 * stores; every other rank through the descriptor ring (host-pinned memory the GPU
 * writes), which gdr's progress takes (gdr_rma_trigger_proxy.h) and carries out over the
 * RMA engine (gdr_rma_trigger_exec.h).  The ring's two producer counters (head, posted[])
 * live in device memory, where the kernels' atomics on them stay on the GPU: on an H100
 * over PCIe without host-native atomics, kernels of 128 threads posting through a ring
 * whose counters were host-pinned hung 2 times in 5 (test/device/dev_kernel_ring).  Ranks
 * the engine cannot reach by RDMA (windows whose operations go as messages, same-node
 * windows not in device memory) are refused by the executor with the reason. */
#include "gdr_triggered.h"

#include "gdr_engine_lock.h"
#include "gdr_notify.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_stream.h"
#include "gdr/gdr_rma_kernel_api.h"
#include "rma/gdr_rma_trigger_exec.h"

enum { DEV_SLOTS = 256 };       /* ring slots (a power of two) */

struct MPIDI_GDR_device_win {
    gdr_dev_win_t dw;           /* what the handle carries */
    void *ring_mem;             /* host-pinned: tail, stopped, done[], slots */
    void *counters;             /* device memory: head, posted[] (only kernels touch them) */
    gdr_dev_peer_t *peers;      /* host-pinned: per rank, its window here (base NULL: ring) */
    MPIR_Win *win;
    gdr_rma_device_t ids;       /* buffer ids of local memory, for the executor */
    gdr_trig_executor_t exec;
    gdr_trig_proxy_t proxy;
    gdr_dev_notify_t *notify;   /* host-pinned: this rank's counters as kernels reach them */
    int handles;                /* handles given out and not freed */
    int reported;               /* the proxy's failure was reported */
};

MPL_COMPILE_TIME_ASSERT(sizeof(gdr_dev_win_t) <= sizeof(MPIX_Win_device));

static uint64_t buffer_id(void *ctx, const void *p)
{
    (void) ctx;
    return MPIDI_GDR_gpu_buffer_id(p);
}

/* The executor's way to notified RMA's counters (gdr_notify.c), ctx the window. */
static int notify_check(void *ctx, int target, int64_t idx, char *why, size_t why_len)
{
    return MPIDI_GDR_notify_check_index(ctx, target, idx, why, why_len);
}

static int notify_send(void *ctx, int target, int64_t idx, char *why, size_t why_len)
{
    return MPIDI_GDR_notify_send_one(ctx, target, idx, why, why_len);
}

/* The handle's view of this rank's counters, from what is attached now (later attaches
 * and detaches keep it: gdr_notify.c). */
static void notify_view_fill(MPIR_Win * win, gdr_dev_notify_t * view)
{
    uint64_t *mine;
    int64_t count;
    MPIDI_GDR_notify_gpu_view(win, &mine, &count);
    view->mine = mine;
    view->count = count;
}

/* Whether kernels may lock: every rank's lock goes by the NIC's atomics. */
static int locks_native(MPIR_Win * win)
{
    for (int r = 0; r < win->comm_ptr->local_size; r++)
        if (!gdr_rma_passive_native(&GDR_WIN(win).rma, r))
            return 0;
    return 1;
}

static void device_win_release(struct MPIDI_GDR_device_win *d)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    if (d->proxy.done != NULL)
        gdr_trig_proxy_free(&d->proxy);
    gdr_trig_executor_free(&d->exec);
    if (d->peers != NULL)
        gdr_gpu_host_free(g, d->peers);     /* (a copy: the mappings are the window's) */
    if (d->ring_mem != NULL)
        gdr_gpu_host_free(g, d->ring_mem);
    if (d->counters != NULL)
        gdr_gpu_mem_free(g, d->counters);
    MPL_free(d);
}

static int device_win_new(MPIR_Win * win, struct MPIDI_GDR_device_win **out)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    int n = win->comm_ptr->local_size, me = win->comm_ptr->rank;
    size_t per_rank = (size_t) n * sizeof(uint64_t);
    /* host-pinned: tail at 0, the stopped word at 64, done[] at 128, then the slots;
     * device: head at 0, posted[] at 128 (each group on its own lines) */
    size_t at_done = 128, at_slots = (at_done + per_rank + 127) / 128 * 128;
    size_t at_posted = 128, counters_bytes = at_posted + per_rank;
    struct MPIDI_GDR_device_win *d = MPL_calloc(1, sizeof(*d), MPL_MEM_RMA);
    uint64_t *zeros = MPL_calloc(1, counters_bytes, MPL_MEM_RMA);
    if (d == NULL || zeros == NULL) {
        MPL_free(d);
        MPL_free(zeros);
        return MPIDI_GDR_triggered_error(MPI_ERR_NO_MEM, "out of memory for a device handle");
    }
    size_t at_notify = at_slots + DEV_SLOTS * sizeof(gdr_trig_slot_t);
    size_t ring_bytes = at_notify + sizeof(gdr_dev_notify_t);
    int rc = gdr_gpu_host_alloc(g, ring_bytes, &d->ring_mem);
    if (rc == 0 && (rc = gdr_gpu_host_alloc(g, (size_t) n * sizeof(gdr_dev_peer_t),
                                            (void **) &d->peers)) == 0)
        memset(d->peers, 0, (size_t) n * sizeof(gdr_dev_peer_t));
    if (rc == 0)
        rc = gdr_gpu_mem_alloc(g, counters_bytes, &d->counters);
    if (rc == 0)
        rc = gdr_gpu_copy(g, d->counters, zeros, counters_bytes);
    MPL_free(zeros);
    if (rc != 0) {
        int err = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "the device handle's ring: %s",
                                            g->error);
        device_win_release(d);
        return err;
    }
    char *m = d->ring_mem;
    memset(m, 0, ring_bytes);
    /* this rank's window and same-node peers' directly (a pageable host window of this
     * rank goes through the proxy like any other rank); the rest through the ring */
    d->win = win;
    d->dw.nranks = n;
    for (int r = 0; r < n; r++) {
        const gdr_dev_peer_t *p = MPIDI_GDR_peer_mapped(win, r);
        if (p != NULL)
            d->peers[r] = *p;
    }
    d->dw = (gdr_dev_win_t) {
        .ring = {.head = (uint64_t *) d->counters,.tail = (volatile uint64_t *) m,
                 .stopped = (volatile uint64_t *) (m + 64),
                 .posted = (uint64_t *) ((char *) d->counters + at_posted),
                 .done = (volatile uint64_t *) (m + at_done),
                 .slots = (gdr_trig_slot_t *) (m + at_slots),.nslots = DEV_SLOTS,.nranks = n},
        .handle = ++MPIDI_GDR_global.device_handles,.rank = me,.nranks = n,.peers = d->peers,
        .flags = locks_native(win) ? GDR_DEV_WIN_SYNC : 0,
        .notify = (gdr_dev_notify_t *) (m + at_notify)
    };
    d->notify = (gdr_dev_notify_t *) (m + at_notify);
    notify_view_fill(win, d->notify);
    GDR_WIN(win).kernel_counters = d->notify;
    d->ids = (gdr_rma_device_t) {.buffer_id = buffer_id };
    gdr_trig_executor_init(&d->exec, &GDR_WIN(win).rma, d->dw.handle, &d->ids,
                           MPIDI_GDR_nic_takes_gpu_memory());
    /* what the NIC cannot take with device memory (atomics where ranks share a node,
     * GPUDirect staged mode) goes through the staged protocol, as MPI calls' does */
    if (MPIDI_GDR_global.staged != NULL && GDR_WIN(win).staged != NULL) {
        gdr_trig_executor_set_staged(&d->exec, MPIDI_GDR_global.staged, GDR_WIN(win).staged);
        /* kernels' accumulates to device windows of ranks through the ring: every op and
         * type, by the target's GPU (what the NIC adds is SUM of 64-bit integers only) */
        for (int r = 0; r < n; r++)
            d->peers[r].acc_any = d->peers[r].base == NULL && GDR_WIN(win).rma.targets != NULL
                && GDR_WIN(win).rma.targets[r].device && GDR_WIN(win).rma.targets[r].peer >= 0;
    }
    if (gdr_trig_proxy_init(&d->proxy, &d->dw.ring, DEV_SLOTS, &gdr_trig_executor_ops,
                            &d->exec) != 0) {
        device_win_release(d);
        return MPIDI_GDR_triggered_error(MPI_ERR_NO_MEM, "out of memory for a device proxy");
    }
    gdr_trig_executor_bind(&d->exec, &d->proxy);
    const gdr_trig_notify_ops_t nops = {.check = notify_check,.send = notify_send,.ctx = win };
    gdr_trig_executor_set_notify(&d->exec, &nops);
    *out = d;
    return MPI_SUCCESS;
}

int MPIR_Win_get_device_handle_impl(MPIR_Win * win_ptr, MPIX_Win_device * dwin)
{
    int mpi_errno = MPI_SUCCESS, took = MPIDI_GDR_engine_enter();
    if (win_ptr->dev.netmod.gdr.s == NULL)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_WIN, "the window has no gdr state");
    else if (win_ptr->create_flavor == MPI_WIN_FLAVOR_DYNAMIC)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_RMA_FLAVOR, "device handles are for "
                                              "windows with memory (create, allocate), not "
                                              "dynamic ones");
    else if (!MPIDI_GDR_global.gpu.on)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "device handles need gdr's GPU "
                                              "support, which is off: %s",
                                              MPIDI_GDR_global.gpu.error);
    else if (GDR_WIN(win_ptr).device == NULL) {
        mpi_errno = device_win_new(win_ptr, &GDR_WIN(win_ptr).device);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = MPIDI_GDR_triggered_add(win_ptr);
    }
    /* its proxy moves data without passing through MPIDI_GDR_win_need: a native
     * lock_all epoch takes every lock now (and lock_all does, when the handle exists) */
    if (mpi_errno == MPI_SUCCESS
        && gdr_rma_passive_need_all(&GDR_WIN(win_ptr).rma) != GDR_RMA_OK)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_RMA_SYNC, "taking the passive-target "
                                              "locks of the epoch by remote atomics failed");
    if (mpi_errno == MPI_SUCCESS) {
        struct MPIDI_GDR_device_win *d = GDR_WIN(win_ptr).device;
        memset(dwin, 0, sizeof(*dwin));
        memcpy(dwin, &d->dw, sizeof(d->dw));
        d->handles++;
    }
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

int MPIR_Win_free_device_handle_impl(MPIX_Win_device * dwin)
{
    gdr_dev_win_t dw;
    memcpy(&dw, dwin, sizeof(dw));
    int mpi_errno = MPI_SUCCESS, took = MPIDI_GDR_engine_enter();
    struct MPIDI_GDR_win_state *s = MPIDI_GDR_global.triggered;
    while (s != NULL && (s->device == NULL || s->device->dw.handle != dw.handle))
        s = s->next_triggered;
    if (s == NULL || s->device->handles == 0)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_ARG, "not a device handle of a live "
                                              "window (freed twice, or its window freed?)");
    else {
        s->device->handles--;
        memset(dwin, 0, sizeof(*dwin));
    }
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}

int MPIDI_GDR_device_win_progress(MPIR_Win * win, int *made)
{
    struct MPIDI_GDR_device_win *d = GDR_WIN(win).device;
    int n = gdr_trig_proxy_progress(&d->proxy, 64);
    if (n > 0)
        *made = 1;
    if (n < 0 && !d->reported) {
        /* the kernels see no more progress (their calls return MPI_ERR_OTHER), and a peer
         * waiting for their signals may wait for ever before the window's free returns
         * the error: say it now, whatever the verbosity */
        d->reported = 1;
        fprintf(stderr, "gdr[%d]: kernel-triggered RMA on a window stopped (MPI_Win_free "
                "returns this error): %s\n", MPIR_Process.rank, gdr_trig_proxy_error(&d->proxy));
    }
    return MPI_SUCCESS;
}

/* Whether descriptors below ticket head are still to take or to finish. */
static int device_busy(const struct MPIDI_GDR_device_win *d, uint64_t head)
{
    if (d->proxy.failed)
        return gdr_trig_executor_inflight(&d->exec) != 0;
    return head != d->proxy.next || d->proxy.holding || gdr_trig_executor_inflight(&d->exec) != 0;
}

int MPIDI_GDR_device_win_free(MPIR_Win * win)
{
    struct MPIDI_GDR_device_win *d = GDR_WIN(win).device;
    int mpi_errno = MPI_SUCCESS;
    /* what kernels posted before the window's free is carried out first (they have
     * finished: the handle may not be used once the free began, so head stays) */
    uint64_t head = 0;
    if (gdr_gpu_copy(&MPIDI_GDR_global.gpu, &head, d->counters, sizeof(head)) != 0)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "reading the device ring's head: "
                                              "%s", MPIDI_GDR_global.gpu.error);
    while (mpi_errno == MPI_SUCCESS && device_busy(d, head))
        mpi_errno = MPIDI_GDR_progress_all();
    if (mpi_errno == MPI_SUCCESS && d->proxy.failed)
        mpi_errno = MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "kernel-triggered RMA on this "
                                              "window stopped: %s",
                                              gdr_trig_proxy_error(&d->proxy));
    int took = MPIDI_GDR_engine_enter();
    device_win_release(d);
    GDR_WIN(win).device = NULL;
    GDR_WIN(win).kernel_counters = NULL;
    MPIDI_GDR_engine_exit(took);
    return mpi_errno;
}
