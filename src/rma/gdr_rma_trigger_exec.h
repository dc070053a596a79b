/* The executor of kernel-triggered RMA (DESIGN.md section 4): what the trigger proxy
 * (gdr_rma_trigger_proxy.h) calls to carry out one descriptor of one window's ring, over
 * the RMA engine (plan, issue, completion), for targets on other nodes.
 *
 *   PUT, GET     one RDMA write or read of the contiguous local buffer; device memory
 *                moves zero-copy when the transport may register it (device_by_nic)
 *   PUT_SIGNAL   the write, then, once it completed at the target, the signal: SET as an
 *                8-byte write, ADD as the NIC's fetch-add
 *   FETCH_ADD    the NIC's fetch-add on the word signal_disp bytes past disp; the old
 *                value lands at the descriptor's address, or nowhere when that is 0 (an
 *                element of a device-API accumulate)
 *   PUT_NOTIFY,  the write or read, then, once it completed, the notification of counter
 *   GET_NOTIFY   signal_disp of the target, sent by the host's notify callback
 *                (gdr_trig_executor_set_notify: notified RMA's own way, whatever path
 *                its counters take); NOTIFY: the notification alone
 *   ACCUMULATE   one element (its bytes in the descriptor) applied by the target's GPU
 *                through the staged protocol, any op and type its atomic steps take
 *   FETCH_OP     one element of any op and type the atomic steps take (NO_OP and
 *                compare-and-swap too), applied by the target's GPU through the staged
 *                protocol, the old value into host memory
 *   LOCK         this process's passive-target epoch to the rank begins: its lock taken
 *                by the NIC's atomics (gdr_rma_passive.h, as MPI_Win_lock's native path),
 *                backing off while others hold it; refused where the window's locks go
 *                by messages, or an epoch to the rank is open already (the host's or a
 *                kernel's)
 *   UNLOCK       the epoch ends once every operation to the rank that began before it is
 *                complete at the target: the release posted behind them
 *   FENCE        once every other operation of the executor is complete (the kernel
 *                stopped posting) and none of the window's in flight, the window's fence
 *                barrier with every rank (gdr_rma_active.h), begun and tested by progress
 *
 * What the NIC cannot take goes through the staged protocol (gdr_rma_staged.h) when the
 * executor has one (gdr_trig_executor_set_staged) and device memory is involved: a device
 * target window whose accumulate rule keeps NIC atomics off (ranks sharing a node: the
 * target's GPU then applies the fetch-add with the same atomic steps as those ranks' own
 * accumulates), or device memory the NIC may not register (GPUDirect staged mode).
 *
 * A descriptor completes (gdr_trig_proxy_complete) when its operation is complete at the
 * target (get, fetch-add: landed here), signal included.  Every descriptor is checked
 * before anything moves: its window handle, op, the target range in the target's window
 * (signal words and fetch-add words: 8 bytes, 8-byte aligned), and that the engine takes
 * it by RDMA; a refused one fails the proxy with the reason and nothing is posted.  A
 * transport failure, or a completion the proxy refuses, fails it at the next progress.
 *
 * Completion callbacks never post (the transport may be full there): a signal waits in
 * a list the next progress posts.  Single-threaded, like the engine: the caller runs the
 * proxy's progress and the engine's on one thread (or serialises them). */
#ifndef GDR_RMA_TRIGGER_EXEC_H
#define GDR_RMA_TRIGGER_EXEC_H

#include "gdr_rma_staged.h"
#include "gdr_rma_trigger_proxy.h"
#include "gdr_rma_win.h"

typedef struct gdr_trig_exec_op gdr_trig_exec_op_t;

/* Notified RMA's counters, the host's: check whether target has counter idx (0, or -1
 * with a sentence in why), and send one notification to it (0, -1 with why, or 1: not
 * now, asked again at the next progress). */
typedef struct gdr_trig_notify_ops {
    int (*check)(void *ctx, int target, int64_t idx, char *why, size_t why_len);
    int (*send)(void *ctx, int target, int64_t idx, char *why, size_t why_len);
    void *ctx;
} gdr_trig_notify_ops_t;

typedef struct gdr_trig_executor {
    gdr_rma_win_t *win;
    uint32_t handle;            /* the window's device handle: descriptors must name it */
    const gdr_rma_device_t *dev;        /* buffer ids of local memory; NULL: all host memory */
    int device_by_nic;          /* the transport may register device memory (GPUDirect) */
    gdr_trig_proxy_t *proxy;    /* where completions go (gdr_trig_executor_bind) */
    gdr_rma_staged_t *staged;      /* the staged protocol and this window's side of it, or */
    gdr_rma_staged_win_t *staged_win;      /* NULL: RDMA only */
    gdr_trig_exec_op_t *signals;        /* puts whose signal or notification is next (sent
                                         * by progress) */
    gdr_trig_notify_ops_t notify;       /* no check: the *NOTIFY ops are refused */
    unsigned long inflight;     /* descriptors started, not complete */
    unsigned long *to;          /* the same per target (an unlock waits for its rank's) */
    int failed;
    char error[224];
} gdr_trig_executor_t;

/* The callbacks to give gdr_trig_proxy_init, with the executor as ctx. */
extern const gdr_trig_exec_t gdr_trig_executor_ops;

void gdr_trig_executor_init(gdr_trig_executor_t *x, gdr_rma_win_t *win, uint32_t handle,
                            const gdr_rma_device_t *dev, int device_by_nic);
/* The proxy whose descriptors this executor runs, before its first progress. */
void gdr_trig_executor_bind(gdr_trig_executor_t *x, gdr_trig_proxy_t *proxy);
/* Lets what the NIC cannot take go through the staged protocol d (dw: this window's side
 * of it), before the first progress. */
void gdr_trig_executor_set_staged(gdr_trig_executor_t *x, gdr_rma_staged_t *d,
                                  gdr_rma_staged_win_t *dw);
/* Lets the *NOTIFY ops through, sent by ops, before the first progress. */
void gdr_trig_executor_set_notify(gdr_trig_executor_t *x, const gdr_trig_notify_ops_t *ops);
/* Descriptors started and not complete: the window may be freed at 0 only. */
unsigned long gdr_trig_executor_inflight(const gdr_trig_executor_t *x);
/* Frees what the executor allocated, once the transport completes none of its operations
 * any more (they are done, or the proxy failed and the window goes). */
void gdr_trig_executor_free(gdr_trig_executor_t *x);

#endif /* GDR_RMA_TRIGGER_EXEC_H */
