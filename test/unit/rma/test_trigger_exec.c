/* The executor of kernel-triggered RMA (gdr_rma_trigger_exec.h) between a trigger ring
 * and the RMA engine over the in-memory transport of fake_engine.h: descriptors posted by
 * the device calls (gdr_rma_kernel_api.h) become RDMA writes, reads and NIC atomics whose
 * values are read back; a put_signal's signal is posted only after its data completed;
 * a descriptor completes at the ring only when its whole operation has; bad descriptors
 * and transport failures stop the proxy with a reason and post nothing; and producer
 * threads (the "kernel") running puts, put_signals, fetch_adds and flushes against the
 * proxy loop lose and duplicate nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gdr_unit.h"
#include "fake_engine.h"
#include "gdr/gdr_rma_kernel_api.h"
#include "rma/gdr_rma_trigger_exec.h"

#define NRANKS 4
#define SLOTS 16
#define HANDLE 7

typedef struct {
    uint64_t head, tail, posted[NRANKS], done[NRANKS];
    gdr_trig_slot_t slots[SLOTS];
} ring_mem_t;

static ring_mem_t ring;
static gdr_dev_peer_t no_peers[NRANKS];        /* every target on another node: all through the ring */

/* device memory, as a fake device seam sees it: one buffer of id 99 */
static uint8_t device_buf[256];

static uint64_t f_buffer_id(void *ctx, const void *p)
{
    (void) ctx;
    return (const uint8_t *) p >= device_buf && (const uint8_t *) p < device_buf + 256 ? 99 : 0;
}

static const gdr_rma_device_t fake_dev = {.buffer_id = f_buffer_id };

typedef struct {
    gdr_rma_win_t w;
    gdr_dev_win_t dw;
    gdr_trig_proxy_t proxy;
    gdr_trig_executor_t x;
} setup_t;

static void setup(setup_t *s, unsigned declared, int device_by_nic)
{
    memset(&ring, 0, sizeof(ring));
    memset(target_mem, 0, sizeof(target_mem));
    memset(&fk, 0, sizeof(fk));
    fk.atomicv_max = 16;
    make_win(&s->w, 0, declared, 1);
    s->dw = (gdr_dev_win_t) {.ring = {.head = &ring.head,.tail = &ring.tail,.slots = ring.slots,
                                      .posted = ring.posted,.done = ring.done,.nslots = SLOTS,
                                      .nranks = NRANKS},
        .handle = HANDLE,.rank = 0,.nranks = NRANKS,.peers = no_peers };
    gdr_trig_executor_init(&s->x, &s->w, HANDLE, &fake_dev, device_by_nic);
    if (gdr_trig_proxy_init(&s->proxy, &s->dw.ring, SLOTS, &gdr_trig_executor_ops, &s->x) != 0)
        abort();
    gdr_trig_executor_bind(&s->x, &s->proxy);
}

static void teardown(setup_t *s)
{
    gdr_trig_executor_free(&s->x);
    gdr_trig_proxy_free(&s->proxy);
    gdr_rma_win_free(&s->w);
}

/* proxy progress, then every queued work request completed, until nothing is left */
static int drain(setup_t *s)
{
    int rc = 0;
    for (int round = 0; round < 16 && rc >= 0; round++) {
        rc = gdr_trig_proxy_progress(&s->proxy, 64);
        while (fk.n > 0)
            complete_one();
    }
    return rc < 0 ? -1 : gdr_trig_proxy_progress(&s->proxy, 64);
}

static uint64_t word(int rank, int cell)
{
    uint64_t v;
    memcpy(&v, &target_mem[rank][cell * 8], 8);
    return v;
}

static void test_put_get(void)
{
    setup_t s;
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    uint64_t src[4] = { 11, 12, 13, 14 }, dst[4] = { 0 };
    memcpy(&target_mem[2][64], (uint64_t[4]) { 21, 22, 23, 24 }, 32);

    GDR_CHECK(gdr_dev_put(&s.dw, src, sizeof(src), 1, 3) == GDR_DEV_OK
              && gdr_dev_get(&s.dw, dst, sizeof(dst), 2, 8) == GDR_DEV_OK, "put and get posted");
    GDR_CHECK(gdr_trig_proxy_progress(&s.proxy, 64) == 2 && fk.n == 2 && fk.q[0].kind == W_PUT
              && fk.q[0].raddr == (uint64_t) (uintptr_t) &target_mem[1][24] && fk.q[0].rkey == 7
              && fk.q[0].peer == 11 && fk.q[1].kind == W_GET && fk.q[1].len == 32,
              "the proxy started both: an RDMA write to rank 1 at disp 3 (x8), a read from 2");
    GDR_CHECK(!gdr_trig_finished(&s.dw.ring, 1, 1) && !gdr_trig_finished(&s.dw.ring, 2, 1)
              && gdr_trig_executor_inflight(&s.x) == 2, "neither is finished before the NIC");
    complete_one();
    GDR_CHECK(gdr_trig_finished(&s.dw.ring, 1, 1) && word(1, 3) == 11 && word(1, 6) == 14
              && !gdr_trig_finished(&s.dw.ring, 2, 1), "the put finished: its data is at rank 1");
    complete_one();
    GDR_CHECK(gdr_trig_finished(&s.dw.ring, 2, 1) && dst[0] == 21 && dst[3] == 24
              && gdr_trig_executor_inflight(&s.x) == 0, "the get finished: rank 2's data here");
    GDR_CHECK(gdr_dev_flush(&s.dw, 1) == GDR_DEV_OK && gdr_dev_flush(&s.dw, 2) == GDR_DEV_OK
              && gdr_dev_flush_all(&s.dw) == GDR_DEV_OK,
              "flush and flush_all return at once when everything posted has finished");

    /* several to one target finished out of order: done moves only without a gap */
    uint64_t v[3] = { 1, 2, 3 };
    for (int i = 0; i < 3; i++)
        gdr_dev_put(&s.dw, &v[i], 8, 3, 10 + i);
    gdr_trig_proxy_progress(&s.proxy, 64);
    fk.lifo = 1;
    complete_one();
    complete_one();
    GDR_CHECK(ring.done[3] == 0, "two of three puts to rank 3 finished (the last two): done "
              "stays 0 (the first is still out)");
    complete_one();
    fk.lifo = 0;
    GDR_CHECK(ring.done[3] == 3 && word(3, 10) == 1 && word(3, 12) == 3,
              "the first finished too: done is 3 and all three values are there");
    teardown(&s);
}

static void test_signals(void)
{
    setup_t s;
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    uint64_t data[2] = { 5, 6 };

    gdr_dev_put_signal(&s.dw, data, sizeof(data), 1, 4, 0, 77, GDR_SIGNAL_SET);
    GDR_CHECK(gdr_trig_proxy_progress(&s.proxy, 64) == 1 && fk.n == 1 && fk.q[0].len == 16,
              "put_signal: only the data is posted first");
    complete_one();
    GDR_CHECK(fk.n == 0 && word(1, 4) == 5 && word(1, 0) == 0 && ring.done[1] == 0,
              "the data landed; the signal is not yet posted, the descriptor not finished");
    gdr_trig_proxy_progress(&s.proxy, 64);
    GDR_CHECK(fk.n == 1 && fk.q[0].kind == W_PUT && fk.q[0].len == 8
              && fk.q[0].raddr == (uint64_t) (uintptr_t) &target_mem[1][0],
              "the next progress posts the signal SET as an 8-byte write to the signal word");
    complete_one();
    GDR_CHECK(word(1, 0) == 77 && ring.done[1] == 1 && gdr_trig_executor_inflight(&s.x) == 0,
              "the signal is set, and only now the descriptor is finished");

    for (int i = 0; i < 3; i++)
        gdr_dev_put_signal(&s.dw, data, 8, 2, 8 + i, 1, 10, GDR_SIGNAL_ADD);
    GDR_CHECK(drain(&s) == 0 && word(2, 1) == 30 && word(2, 8) == 5 && word(2, 10) == 5
              && ring.done[2] == 3 && fk.atomic_posts == 3,
              "three put_signals ADD 10: three NIC fetch-adds, the word is 30, the data there");

    uint64_t old = 0;
    memcpy(&target_mem[3][16], (uint64_t[1]) { 1000 }, 8);
    gdr_trig_desc_t d = gdr_dev_desc(&s.dw, GDR_TRIG_FETCH_ADD, 3, (uint64_t) (uintptr_t) &old,
                                     8, 2);
    d.value = 5;
    gdr_trig_post(&s.dw.ring, d);
    GDR_CHECK(drain(&s) == 0 && old == 1000 && word(3, 2) == 1005 && ring.done[3] == 1,
              "fetch_add: the old value 1000 landed here, the word is 1005");

    uint64_t addends[3] = { 7, 8, 9 };
    GDR_CHECK(gdr_dev_accumulate(&s.dw, addends, 3, GDR_GPU_T_UINT64, GDR_GPU_OP_SUM, 3, 4, 0, 1)
              == GDR_DEV_OK && drain(&s) == 0 && word(3, 4) == 7 && word(3, 5) == 8
              && word(3, 6) == 9 && word(3, 7) == 0 && word(3, 3) == 0 && ring.done[3] == 4
              && fk.atomic_posts == 7, "accumulate of 3 uint64 (SUM) to another node: three NIC "
              "fetch-adds, 0, 8 and 16 bytes past the displacement, nothing beside");
    teardown(&s);
}

/* The host's notified RMA, faked: rank r has r counters; what was sent, in order. */
static int sent_target[16], nsent, send_fails, send_busy;
static int64_t sent_idx[16];

static int f_notify_check(void *ctx, int target, int64_t idx, char *why, size_t why_len)
{
    (void) ctx;
    if (idx < target)
        return 0;
    snprintf(why, why_len, "rank %d has %d counters, not index %lld", target, target,
             (long long) idx);
    return -1;
}

static int f_notify_send(void *ctx, int target, int64_t idx, char *why, size_t why_len)
{
    (void) ctx;
    if (send_fails) {
        snprintf(why, why_len, "the counters' window broke");
        return -1;
    }
    if (send_busy > 0) {
        send_busy--;
        return 1;               /* not now */
    }
    /* the data must be at the target before its notification goes */
    GDR_CHECK(fk.n == 0, "a notification is sent only once its data completed");
    sent_target[nsent] = target;
    sent_idx[nsent++] = idx;
    return 0;
}

static const gdr_trig_notify_ops_t fake_notify = {.check = f_notify_check,
    .send = f_notify_send
};

static void test_notify(void)
{
    setup_t s;
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    gdr_trig_executor_set_notify(&s.x, &fake_notify);
    nsent = send_fails = send_busy = 0;
    uint64_t data[2] = { 5, 6 }, got = 0;
    memcpy(&target_mem[3][40], (uint64_t[1]) { 99 }, 8);

    GDR_CHECK(gdr_dev_put_notify(&s.dw, data, sizeof(data), 2, 4, 1) == GDR_DEV_OK
              && gdr_dev_get_notify(&s.dw, &got, 8, 3, 5, 2) == GDR_DEV_OK,
              "put_notify and get_notify posted");
    GDR_CHECK(gdr_trig_proxy_progress(&s.proxy, 64) == 2 && fk.n == 2 && fk.q[0].len == 16
              && fk.q[1].kind == W_GET && nsent == 0,
              "the proxy starts the data only: a write of 16 bytes, a read of 8");
    complete_one();
    complete_one();
    GDR_CHECK(word(2, 4) == 5 && word(2, 5) == 6 && got == 99 && nsent == 0
              && ring.done[2] == 0 && ring.done[3] == 0,
              "the data moved; no notification yet, neither descriptor finished");
    gdr_trig_proxy_progress(&s.proxy, 64);
    GDR_CHECK(nsent == 2 && ring.done[2] == 1 && ring.done[3] == 1
              && gdr_trig_executor_inflight(&s.x) == 0
              && ((sent_target[0] == 2 && sent_idx[0] == 1 && sent_target[1] == 3
                   && sent_idx[1] == 2) || (sent_target[0] == 3 && sent_idx[0] == 2
                                            && sent_target[1] == 2 && sent_idx[1] == 1)),
              "the next progress sends both notifications (rank 2 counter 1, rank 3 counter "
              "2), and only then are the descriptors finished");

    /* the notification alone (a target on this node: the kernel moved the data) and a
     * zero-byte put_notify: nothing reaches the transport */
    gdr_trig_desc_t d = gdr_dev_desc(&s.dw, GDR_TRIG_NOTIFY, 1, 0, 0, 0);
    d.signal_disp = 0;
    gdr_trig_post(&s.dw.ring, d);
    gdr_dev_put_notify(&s.dw, data, 0, 3, 0, 0);
    GDR_CHECK(drain(&s) == 0 && fk.posts == 2 && nsent == 4 && ring.done[1] == 1
              && ring.done[3] == 2, "NOTIFY and a 0-byte put_notify: notifications only");
    GDR_CHECK(gdr_dev_put_notify(&s.dw, data, 8, 1, 0, -1) == GDR_DEV_ERR_ARG
              && gdr_dev_notify_value(&s.dw, 0, &got) == GDR_DEV_ERR_ARG,
              "a negative index is refused by the call; a handle with no counters reads none");

    /* "not now" (the host is sweeping its list): asked again at the next progress */
    send_busy = 1;
    gdr_dev_put_notify(&s.dw, data, 0, 2, 0, 1);
    gdr_trig_proxy_progress(&s.proxy, 64);
    GDR_CHECK(nsent == 4 && ring.done[2] == 1 && gdr_trig_executor_inflight(&s.x) == 1,
              "a notification the host cannot take now waits, its descriptor unfinished");
    gdr_trig_proxy_progress(&s.proxy, 64);
    GDR_CHECK(nsent == 5 && ring.done[2] == 2 && gdr_trig_executor_inflight(&s.x) == 0,
              "the next progress sends it and finishes the descriptor");

    /* a counter the target does not have: refused before the data moves */
    gdr_dev_put_notify(&s.dw, data, 8, 1, 0, 1);
    int rc = gdr_trig_proxy_progress(&s.proxy, 64);
    GDR_CHECK(rc == -1 && strstr(gdr_trig_proxy_error(&s.proxy), "rank 1 has 1 counters")
              && fk.n == 0, "index 1 of rank 1 (which has 1 counter): refused, nothing posted "
              "(%s)", gdr_trig_proxy_error(&s.proxy));
    teardown(&s);

    /* the send fails: the proxy stops saying why, the descriptor is not finished */
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    gdr_trig_executor_set_notify(&s.x, &fake_notify);
    send_fails = 1;
    gdr_dev_put_notify(&s.dw, data, 8, 2, 0, 0);
    GDR_CHECK(drain(&s) == -1 && strstr(gdr_trig_proxy_error(&s.proxy), "broke") != NULL
              && ring.done[2] == 0 && gdr_trig_executor_inflight(&s.x) == 0,
              "a failed notification stops the proxy with the reason (%s)",
              gdr_trig_proxy_error(&s.proxy));
    teardown(&s);

    /* an executor without notified RMA refuses the ops */
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    gdr_dev_put_notify(&s.dw, data, 8, 2, 0, 0);
    GDR_CHECK(gdr_trig_proxy_progress(&s.proxy, 64) == -1
              && strstr(gdr_trig_proxy_error(&s.proxy), "no notified") != NULL && fk.n == 0,
              "no notify ops: put_notify refused (%s)", gdr_trig_proxy_error(&s.proxy));
    teardown(&s);

    /* this rank's counters as a handle shows them */
    uint64_t mine[3] = { 4, 0, 0 }, seen = 0;
    gdr_dev_notify_t view = {.mine = mine,.count = 3 };
    s.dw.notify = &view;
    GDR_CHECK(gdr_dev_notify_value(&s.dw, 0, &seen) == GDR_DEV_OK && seen == 4
              && gdr_dev_notify_wait(&s.dw, 0, 3, &seen) == GDR_DEV_OK && seen == 4
              && gdr_dev_notify_value(&s.dw, 3, &seen) == GDR_DEV_ERR_ARG,
              "notify_value and notify_wait read this rank's counter; index 3 of 3 refused");
}

/* One descriptor the executor must refuse: the proxy fails with a reason containing
 * `expect`, and nothing reaches the transport. */
static void refused(gdr_trig_desc_t d, unsigned declared, int device_by_nic, const char *expect,
                    const char *what)
{
    setup_t s;
    setup(&s, declared, device_by_nic);
    d.window = d.window == 0 ? HANDLE : d.window;
    gdr_trig_post(&s.dw.ring, d);
    int rc = gdr_trig_proxy_progress(&s.proxy, 64);
    const char *why = gdr_trig_proxy_error(&s.proxy);
    GDR_CHECK(rc == -1 && strstr(why, expect) != NULL && fk.posts == 0 && fk.n == 0
              && gdr_trig_executor_inflight(&s.x) == 0, "%s: refused, nothing posted (%s)",
              what, why);
    teardown(&s);
}

static void test_refusals(void)
{
    static uint64_t buf[4], old;
    uint64_t a = (uint64_t) (uintptr_t) buf;
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_ACCUMULATE,.rank = 1,.bytes = 4,.disp = 2,
            .signal_op = GDR_GPU_OP_MAX | GDR_GPU_T_INT32 << 16 }, GDR_RMA_DECLARES_SUM, 0,
            "only the target's GPU", "an accumulate element where no staged protocol reaches");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_ACCUMULATE,.rank = 1,.bytes = 8,.disp = 2,
            .signal_op = GDR_GPU_OP_MAX | GDR_GPU_T_INT32 << 16 }, GDR_RMA_DECLARES_SUM, 0,
            "not an accumulate of one element", "an element whose size is not its type's");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_ACCUMULATE,.rank = 1,.bytes = 4,.disp = 2,
            .signal_op = GDR_GPU_OP_BAND | GDR_GPU_T_FLOAT << 16 }, GDR_RMA_DECLARES_SUM, 0,
            "not an accumulate", "BAND on float");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_ACCUMULATE,.rank = 1,.bytes = 4,.disp = 1,
            .signal_disp = 2,.signal_op = GDR_GPU_OP_SUM | GDR_GPU_T_INT32 << 16 },
            GDR_RMA_DECLARES_SUM, 0, "not aligned", "an element off its alignment");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_OP,.rank = 1,.addr = a,.bytes = 8,.disp = 2,
            .signal_op = GDR_GPU_OP_MAX | GDR_GPU_T_INT64 << 16 }, GDR_RMA_DECLARES_SUM, 0,
            "only the target's GPU", "a fetch_op where no staged protocol reaches");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_OP,.rank = 1,.addr = a,.bytes = 4,.disp = 2,
            .signal_op = GDR_GPU_OP_MAX | GDR_GPU_T_INT64 << 16 }, GDR_RMA_DECLARES_SUM, 0,
            "not a fetch_op of one element", "a fetch_op element whose size is not its type's");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_OP,.rank = 1,.addr = a,.bytes = 4,.disp = 2,
            .signal_op = GDR_GPU_OP_BXOR | GDR_GPU_T_FLOAT << 16 }, GDR_RMA_DECLARES_SUM, 0,
            "not a fetch_op", "a fetch_op of BXOR on float");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_OP,.rank = 1,.addr = 0,.bytes = 8,.disp = 2,
            .signal_op = GDR_GPU_OP_NO_OP | GDR_GPU_T_INT64 << 16 }, GDR_RMA_DECLARES_SUM, 0,
            "host-pinned", "a fetch_op without a result");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_OP,.rank = 1,.addr = a,.bytes = 8,.disp = 600,
            .signal_op = GDR_GPU_OP_SUM | GDR_GPU_T_INT64 << 16 }, GDR_RMA_DECLARES_SUM, 0,
            "past the target window", "a fetch_op past the end of the target's window");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_PUT,.rank = 1,.addr = a,.bytes = 16,.disp = 511 },
            GDR_RMA_DECLARES_SUM, 0, "past the target window", "a put past the end of the target's window");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_GET,.rank = 1,.addr = a,.bytes = 8,.disp = -1 },
            GDR_RMA_DECLARES_SUM, 0, "rank 1", "a get at a negative displacement");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_PUT_SIGNAL,.rank = 2,.addr = a,.bytes = 8,
            .signal_disp = 512,.signal_op = GDR_SIGNAL_SET }, GDR_RMA_DECLARES_SUM, 0,
            "the signal word", "a signal word past the window");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_PUT_SIGNAL,.rank = 2,.addr = a,.bytes = 8,
            .signal_op = 9 }, GDR_RMA_DECLARES_SUM, 0, "neither SET nor ADD",
            "an unknown signal op");
    refused((gdr_trig_desc_t) {.op = 42,.rank = 1 }, GDR_RMA_DECLARES_SUM, 0, "unknown",
            "an unknown operation kind");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_PUT,.rank = 1,.addr = a,.bytes = 8,
            .window = HANDLE + 1 }, GDR_RMA_DECLARES_SUM, 0, "freed window",
            "another window's (or a freed window's) handle");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_ADD,.rank = 1,
            .addr = (uint64_t) (uintptr_t) &old,.bytes = 8,.disp = 1 },
            GDR_RMA_DECLARES_OTHER, 0, "accumulate rule",
            "a fetch_add on a window whose accumulate rule keeps NIC atomics off");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_ADD,.rank = 1,
            .addr = (uint64_t) (uintptr_t) device_buf,.bytes = 8,.disp = 1 },
            GDR_RMA_DECLARES_SUM, 1, "host-pinned", "a fetch_add whose result is device memory");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_ADD,.rank = 1,.bytes = 8,.disp = 511,
            .signal_disp = 8 }, GDR_RMA_DECLARES_SUM, 0, "past the target window",
            "an accumulate element 8 bytes past the window's last word");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_ADD,.rank = 1,.bytes = 8,.disp = 4,
            .signal_disp = -8 }, GDR_RMA_DECLARES_SUM, 0, "before its displacement",
            "an accumulate element before its displacement");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_FETCH_ADD,.rank = 1,.bytes = 8,.disp = 4,
            .signal_disp = 4 }, GDR_RMA_DECLARES_SUM, 0, "not 8-byte aligned",
            "an accumulate element not 8-byte aligned");
    refused((gdr_trig_desc_t) {.op = GDR_TRIG_PUT,.rank = 1,
            .addr = (uint64_t) (uintptr_t) device_buf,.bytes = 64 }, GDR_RMA_DECLARES_SUM, 0,
            "GPUDirect", "a put from device memory without GPUDirect RDMA");
}

static void test_device_and_failures(void)
{
    setup_t s;
    setup(&s, GDR_RMA_DECLARES_SUM, 1);
    memset(device_buf, 0xab, 64);
    gdr_dev_put(&s.dw, device_buf, 64, 1, 0);
    GDR_CHECK(gdr_trig_proxy_progress(&s.proxy, 64) == 1 && fk.n == 1 && fk.q[0].kind == W_WRITEV
              && fk.q[0].n == 1 && fk.last_pin_id == 99,
              "GPUDirect on: a put from device memory goes zero-copy, a list of one pinned "
              "piece of buffer 99");
    complete_one();
    GDR_CHECK(ring.done[1] == 1 && target_mem[1][63] == 0xab, "and lands");

    gdr_dev_put(&s.dw, device_buf, 8, 2, 0);
    gdr_trig_proxy_progress(&s.proxy, 64);
    fk.fail_next = 1;
    complete_one();
    int rc = gdr_trig_proxy_progress(&s.proxy, 64);
    GDR_CHECK(rc == -1 && strstr(gdr_trig_proxy_error(&s.proxy), "failed in the transport")
              && ring.done[2] == 0 && gdr_trig_executor_inflight(&s.x) == 0,
              "a work request that fails stops the proxy at its next progress, the descriptor "
              "never finished (%s)", gdr_trig_proxy_error(&s.proxy));
    gdr_rma_wait_all(&s.w.tracker, &eng, 0);    /* takes the failure off the window */
    teardown(&s);
}

/* ---- a "kernel" of threads against the proxy loop ------------------------------------ */

#define THREADS 3
#define ROUNDS 200

static int kernels_finished;

typedef struct {
    setup_t *s;
    int id;
    uint64_t src[ROUNDS];
    uint64_t olds[ROUNDS];
} kernel_t;

static void *kernel(void *arg)
{
    kernel_t *k = arg;
    const gdr_dev_win_t *w = &k->s->dw;
    for (int i = 0; i < ROUNDS; i++) {
        int t = 1 + (i + k->id) % 3;
        k->src[i] = (uint64_t) (k->id + 1) << 32 | (uint64_t) i;
        /* cell 1 + id: this thread's data; cell 0: the ADD signal; cell 8: the counter */
        gdr_dev_put_signal(w, &k->src[i], 8, t, 1 + k->id, 0, 1, GDR_SIGNAL_ADD);
        gdr_dev_fetch_add(w, t, 8, 1, &k->olds[i]);
        if (i & 1)
            gdr_dev_flush_all(w);       /* waits on every rank's ring counters */
        else
            gdr_dev_flush(w, t);
    }
    __atomic_fetch_add(&kernels_finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_threads(void)
{
    setup_t s;
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    kernel_t k[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        k[i] = (kernel_t) {.s = &s,.id = i };
        pthread_create(&t[i], NULL, kernel, &k[i]);
    }
    int rc = 0;
    while (rc >= 0 && __atomic_load_n(&kernels_finished, __ATOMIC_ACQUIRE) < THREADS) {
        rc = gdr_trig_proxy_progress(&s.proxy, 8);
        fk.lifo = !fk.lifo;     /* alternate the completion order */
        for (int i = 0; i < 3 && fk.n > 0; i++)
            complete_one();
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    uint64_t signals = 0, counters = 0;
    for (int r = 1; r < NRANKS; r++) {
        signals += word(r, 0);
        counters += word(r, 8);
    }
    GDR_CHECK(rc >= 0 && signals == THREADS * ROUNDS && counters == THREADS * ROUNDS,
              "%d threads x %d rounds of put_signal ADD + fetch_add + flush: %llu signals, "
              "%llu counts (%s)", THREADS, ROUNDS, (unsigned long long) signals,
              (unsigned long long) counters, gdr_trig_proxy_error(&s.proxy));
    int dup = 0;
    for (int r = 1; r < NRANKS; r++) {
        uint8_t seen[THREADS * ROUNDS] = { 0 };
        for (int i = 0; i < THREADS; i++)
            for (int j = 0; j < ROUNDS; j++)
                if (1 + (j + k[i].id) % 3 == r) {
                    uint64_t o = k[i].olds[j];
                    dup += o >= THREADS * ROUNDS || seen[o]++;
                }
    }
    GDR_CHECK(dup == 0, "every fetch_add got a distinct old value (%d repeated)", dup);
    int last_ok = 1;
    for (int i = 0; i < THREADS; i++) {
        int id = k[i].id;
        last_ok &= word(1 + (ROUNDS - 1 + id) % 3, 1 + id) == k[i].src[ROUNDS - 1];
    }
    GDR_CHECK(last_ok, "each thread's last put is the value in its cell at its last target");
    GDR_CHECK(s.proxy.started == 2 * THREADS * ROUNDS && gdr_trig_executor_inflight(&s.x) == 0,
              "%llu descriptors started, none left in flight",
              (unsigned long long) s.proxy.started);
    teardown(&s);
}

/* Kernels' locks: LOCK takes the lock word by the NIC's atomics (the fake applies them to
 * blocks[]), UNLOCK releases it once the rank's earlier operations completed; refused on
 * windows whose locks go by messages, twice in one epoch, or without one. */
static uint64_t lock_blocks[NRANKS][128];

static void make_lockable(setup_t *s, int native)
{
    gdr_rma_ctl_configure(&s->w.ctl, native);
    gdr_rma_passive_configure(&s->w.passive, 10, 100);
    gdr_rma_card_t mine;
    char why[200];
    gdr_rma_win_expose(&s->w, target_mem[0], sizeof(target_mem[0]), 8, 0, &mine, why,
                       sizeof(why));
    memset(lock_blocks, 0, sizeof(lock_blocks));
    for (int i = 0; i < NRANKS; i++) {
        gdr_rma_card_t c = {.size = sizeof(target_mem[i]),.disp_unit = 8,
            .base = (uint64_t) (uintptr_t) target_mem[i],.rkey = 7,
            .ctl = {.addr = (uint64_t) (uintptr_t) lock_blocks[i],.rkey = 9}
        };
        gdr_rma_win_set_card(&s->w, i, &c);
    }
    s->dw.flags = native ? GDR_DEV_WIN_SYNC : 0;
}

static void post_sync(setup_t *s, uint32_t op, int rank, int exclusive)
{
    gdr_trig_desc_t d = gdr_dev_desc(&s->dw, op, rank, 0, 0, 0);
    d.value = (uint64_t) exclusive;
    gdr_trig_post(&s->dw.ring, d);
}

static void test_locks(void)
{
    setup_t s;
    uint64_t data = 42;
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    make_lockable(&s, 1);
    post_sync(&s, GDR_TRIG_LOCK, 1, 1);
    GDR_CHECK(drain(&s) == 0 && ring.done[1] == 1
              && GDR_RMA_LOCK_WRITERS(lock_blocks[1][0]) == 1
              && gdr_rma_passive_held(&s.w, 1), "lock: rank 1's word holds our exclusive ticket "
              "(%llx), the descriptor finished", (unsigned long long) lock_blocks[1][0]);
    /* a put, then the unlock: no release while the put is in flight */
    gdr_dev_put(&s.dw, &data, 8, 1, 3);
    post_sync(&s, GDR_TRIG_UNLOCK, 1, 0);
    gdr_trig_proxy_progress(&s.proxy, 64);
    gdr_trig_proxy_progress(&s.proxy, 64);
    GDR_CHECK(ring.done[1] == 1 && GDR_RMA_LOCK_WRITERS(lock_blocks[1][0]) == 1,
              "unlock waits for the put before it: lock still held, unlock unfinished");
    GDR_CHECK(drain(&s) == 0 && ring.done[1] == 3 && GDR_RMA_LOCK_WRITERS(lock_blocks[1][0]) == 0
              && memcmp(&target_mem[1][24], &data, 8) == 0 && !gdr_rma_passive_held(&s.w, 1),
              "once the put completed: released (word %llx), all three finished",
              (unsigned long long) lock_blocks[1][0]);
    /* shared locks on two ranks, released */
    post_sync(&s, GDR_TRIG_LOCK, 2, 0);
    post_sync(&s, GDR_TRIG_LOCK, 3, 0);
    GDR_CHECK(drain(&s) == 0 && GDR_RMA_LOCK_READERS(lock_blocks[2][0]) == 1
              && GDR_RMA_LOCK_READERS(lock_blocks[3][0]) == 1, "shared locks on ranks 2 and 3");
    post_sync(&s, GDR_TRIG_UNLOCK, 2, 0);
    post_sync(&s, GDR_TRIG_UNLOCK, 3, 0);
    GDR_CHECK(drain(&s) == 0 && lock_blocks[2][0] == 0 && lock_blocks[3][0] == 0
              && gdr_trig_executor_inflight(&s.x) == 0, "both released, nothing in flight");
    /* a second lock in one epoch */
    post_sync(&s, GDR_TRIG_LOCK, 1, 1);
    post_sync(&s, GDR_TRIG_LOCK, 1, 0);
    GDR_CHECK(drain(&s) == -1 && strstr(gdr_trig_proxy_error(&s.proxy), "already in an epoch")
              != NULL, "a second lock of rank 1 in one epoch: refused (%s)",
              gdr_trig_proxy_error(&s.proxy));
    teardown(&s);

    /* a fence: begins its barrier only once the put before it completed */
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    make_lockable(&s, 1);
    gdr_dev_put(&s.dw, &data, 8, 1, 3);
    post_sync(&s, GDR_TRIG_FENCE, 0, 0);
    gdr_trig_proxy_progress(&s.proxy, 64);
    gdr_trig_proxy_progress(&s.proxy, 64);
    int quiet = 1;
    for (int r = 1; r < NRANKS; r++)
        for (int i = 1; i < 128; i++)
            quiet &= lock_blocks[r][i] == 0;
    GDR_CHECK(quiet && ring.done[0] == 0, "fence: no barrier write while the put is in flight");
    while (fk.n > 0)
        complete_one();
    gdr_trig_proxy_progress(&s.proxy, 64);
    while (fk.n > 0)
        complete_one();
    int wrote = 0;
    for (int r = 1; r < NRANKS; r++)
        for (int i = 1; i < 128; i++)
            wrote |= lock_blocks[r][i] != 0;
    GDR_CHECK(wrote && ring.done[0] == 0 && gdr_trig_executor_inflight(&s.x) == 1,
              "then its barrier's first write went out; it waits for the other ranks");
    teardown(&s);

    /* an unlock without a lock */
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    make_lockable(&s, 1);
    post_sync(&s, GDR_TRIG_UNLOCK, 2, 0);
    GDR_CHECK(drain(&s) == -1 && strstr(gdr_trig_proxy_error(&s.proxy), "no epoch") != NULL,
              "an unlock without a lock: refused (%s)", gdr_trig_proxy_error(&s.proxy));
    teardown(&s);

    /* locks by messages: the calls refuse, nothing posted; a descriptor anyway is refused */
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    make_lockable(&s, 0);
    uint64_t head = ring.head;
    GDR_CHECK(gdr_dev_lock(&s.dw, 1, 1) == GDR_DEV_ERR_SYNC
              && gdr_dev_unlock(&s.dw, 1) == GDR_DEV_ERR_SYNC
              && gdr_dev_lock_all(&s.dw) == GDR_DEV_ERR_SYNC
              && gdr_dev_unlock_all(&s.dw) == GDR_DEV_ERR_SYNC && ring.head == head,
              "native locks off: GDR_DEV_ERR_SYNC, nothing on the ring");
    GDR_CHECK(gdr_dev_lock(&s.dw, 1, NRANKS) == GDR_DEV_ERR_RANK, "a rank outside: refused");
    GDR_CHECK(gdr_dev_win_fence(&s.dw) == GDR_DEV_ERR_SYNC && ring.head == head,
              "native sync off: the fence refused too");
    post_sync(&s, GDR_TRIG_LOCK, 1, 1);
    GDR_CHECK(drain(&s) == -1 && strstr(gdr_trig_proxy_error(&s.proxy), "messages") != NULL
              && lock_blocks[1][0] == 0, "a LOCK descriptor anyway: refused, no atomic (%s)",
              gdr_trig_proxy_error(&s.proxy));
    teardown(&s);
    setup(&s, GDR_RMA_DECLARES_SUM, 0);
    make_lockable(&s, 0);
    post_sync(&s, GDR_TRIG_FENCE, 0, 0);
    GDR_CHECK(drain(&s) == -1 && strstr(gdr_trig_proxy_error(&s.proxy), "messages") != NULL,
              "a FENCE descriptor anyway: refused (%s)", gdr_trig_proxy_error(&s.proxy));
    teardown(&s);
}

int main(void)
{
    alarm(120);                 /* a proxy or producer stuck for good kills the test, not CI */
    test_put_get();
    test_signals();
    test_notify();
    test_refusals();
    test_device_and_failures();
    test_threads();
    test_locks();
    return gdr_unit_finish();
}
