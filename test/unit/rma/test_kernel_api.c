/* The kernel-triggered RMA calls (gdr_rma_kernel_api.h) run by CPU threads standing in for
 * GPU threads, as the simulated GPU runs kernels.  Three ranks: 0 (us) and 1 share a node
 * (their windows are mapped here), rank 2 is on another node, reached through the trigger
 * ring and a proxy thread whose executor applies each operation to rank 2's memory.
 * - bad rank, signal op or comparison: an error, nothing posted or written;
 * - put then flush, same node and other node: the values are there; get reads them back;
 * - fetch_add from 4 threads x 500 on one word of each: the old values are a permutation;
 * - put_signal: a waiter on the target sees the data of every signal it waited for;
 * - accumulate from 4 threads at once (int32, int8 sharing words, float, MAX; split between
 *   two "lanes"; int64 SUM to the other node): exact totals; what a path cannot apply is
 *   refused with nothing written. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gdr_unit.h"
#include "gdr/gdr_rma_kernel_api.h"
#include "rma/gdr_rma_trigger_proxy.h"

#define NRANKS 3
#define CELLS 256
#define SLOTS 32
#define SIG 0                   /* the signal word's cell */
#define COUNTER 1               /* fetch_add's word */
#define DATA 8                  /* 32 data cells from here */

static uint64_t mem[NRANKS][CELLS];     /* each rank's window */

typedef struct {
    uint64_t head, tail, posted[NRANKS], done[NRANKS];
    gdr_trig_slot_t slots[SLOTS];
} ring_mem_t;

static ring_mem_t ring;

/* ---- the proxy, executing on rank 2's memory in order -------------------------------- */

typedef struct {
    gdr_trig_desc_t q[SLOTS * 4];
    int n;
    gdr_trig_proxy_t *proxy;
} exec_t;

static int exec_start(void *ctx, const gdr_trig_desc_t *d, char *why, size_t len)
{
    exec_t *e = ctx;
    uint64_t off = d->op == GDR_TRIG_FETCH_ADD ? (uint64_t) d->signal_disp : 0;
    if (d->rank != 2 || d->disp < 0 || (uint64_t) d->disp * 8 + off + d->bytes > sizeof(mem[2])
        || e->n == (int) (sizeof(e->q) / sizeof(e->q[0]))) {
        snprintf(why, len, "rank %d disp %lld bytes %llu: not rank 2's window, or too many",
                 d->rank, (long long) d->disp, (unsigned long long) d->bytes);
        return -1;
    }
    e->q[e->n++] = *d;
    return 0;
}

static int exec_progress(void *ctx, char *why, size_t len)
{
    (void) why, (void) len;
    exec_t *e = ctx;
    for (int k = 0; k < e->n; k++) {
        const gdr_trig_desc_t *d = &e->q[k];
        char *at = (char *) &mem[2][0] + d->disp * 8;
        void *local = (void *) (uintptr_t) d->addr;
        if (d->op == GDR_TRIG_PUT || d->op == GDR_TRIG_PUT_SIGNAL)
            memcpy(at, local, d->bytes);
        else if (d->op == GDR_TRIG_GET)
            memcpy(local, at, d->bytes);
        else if (d->op == GDR_TRIG_FETCH_ADD) {
            uint64_t old = __atomic_fetch_add((uint64_t *) (at + d->signal_disp), d->value,
                                              __ATOMIC_ACQ_REL);
            if (local != NULL)  /* addr 0: an accumulate's element, the old value dropped */
                *(uint64_t *) local = old;
        }
        if (d->op == GDR_TRIG_PUT_SIGNAL) {
            __atomic_thread_fence(__ATOMIC_RELEASE);
            gdr_signal_apply((int) d->signal_op, &mem[2][d->signal_disp], d->value);
        }
        if (gdr_trig_proxy_complete(e->proxy, d->rank, d->rank_seq) != 0)
            return -1;
    }
    e->n = 0;
    return 0;
}

static volatile int proxy_stop;
static gdr_trig_proxy_t proxy;
static exec_t ex;

static void *proxy_thread(void *arg)
{
    (void) arg;
    while (!__atomic_load_n(&proxy_stop, __ATOMIC_ACQUIRE))
        if (gdr_trig_proxy_progress(&proxy, 16) < 0)
            break;
    return NULL;
}

/* ---- handles --------------------------------------------------------------------------- */

static gdr_dev_peer_t view0[NRANKS], view1[NRANKS], view2[NRANKS];

static gdr_dev_win_t handle(int rank, const gdr_dev_peer_t *view)
{
    gdr_dev_win_t w;
    memset(&w, 0, sizeof(w));
    w.ring = (gdr_trig_ring_t) {.head = &ring.head,.tail = &ring.tail,.slots = ring.slots,
        .posted = ring.posted,.done = ring.done,.nslots = SLOTS,.nranks = NRANKS };
    w.handle = 7;
    w.rank = rank;
    w.nranks = NRANKS;
    w.peers = view;
    return w;
}

static void bad_input(const gdr_dev_win_t *w)
{
    uint64_t v = 1, r = 0, seen;
    uint64_t before = ring.head;
    GDR_CHECK(gdr_dev_put(w, &v, 8, 3, DATA) == GDR_DEV_ERR_RANK
              && gdr_dev_get(w, &v, 8, -1, DATA) == GDR_DEV_ERR_RANK
              && gdr_dev_flush(w, NRANKS) == GDR_DEV_ERR_RANK
              && gdr_dev_fetch_add(w, 5, COUNTER, 1, &r) == GDR_DEV_ERR_RANK
              && gdr_dev_put_signal(w, &v, 8, 9, DATA, SIG, 1, GDR_SIGNAL_ADD) == GDR_DEV_ERR_RANK,
              "a rank outside the window's group is refused by every call");
    GDR_CHECK(gdr_dev_put_signal(w, &v, 8, 2, DATA, SIG, 1, 9) == GDR_DEV_ERR_ARG
              && gdr_dev_put_signal(w, &v, 8, 1, DATA, SIG, 1, 9) == GDR_DEV_ERR_ARG
              && gdr_dev_signal_wait_until(w, SIG, 17, 0, &seen) == GDR_DEV_ERR_ARG,
              "an unknown signal op or comparison is refused");
    uint64_t two[2] = { 1, 2 };
    GDR_CHECK(gdr_dev_put(w, &v, 8, 1, CELLS) == GDR_DEV_ERR_RANGE
              && gdr_dev_put(w, two, 16, 1, CELLS - 1) == GDR_DEV_ERR_RANGE
              && gdr_dev_get(w, &v, 8, 1, -1) == GDR_DEV_ERR_RANGE
              && gdr_dev_put_signal(w, &v, 8, 1, DATA, CELLS, 1, GDR_SIGNAL_ADD)
              == GDR_DEV_ERR_RANGE
              && gdr_dev_fetch_add(w, 1, INT64_MAX / 2, 1, &r) == GDR_DEV_ERR_RANGE
              && gdr_dev_signal_wait_until(w, CELLS, GDR_CMP_GE, 0, &seen) == GDR_DEV_ERR_RANGE,
              "same node: a displacement outside the mapped window is refused (RANGE)");
    GDR_CHECK(ring.head == before && mem[1][DATA] == 0 && mem[2][DATA] == 0 && mem[1][SIG] == 0
              && mem[1][CELLS - 1] == 0, "nothing was posted or written");
}

static void put_get(const gdr_dev_win_t *w)
{
    uint64_t src[2][4], back[2][4];
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 4; i++)
            src[t][i] = 0x1000u * (t + 1) + (uint64_t) i;
    gdr_dev_put(w, src[0], sizeof(src[0]), 1, DATA + 4);
    gdr_dev_put(w, src[1], sizeof(src[1]), 2, DATA + 4);
    gdr_dev_flush(w, 1);
    gdr_dev_flush(w, 2);
    GDR_CHECK(memcmp(&mem[1][DATA + 4], src[0], sizeof(src[0])) == 0
              && memcmp(&mem[2][DATA + 4], src[1], sizeof(src[1])) == 0
              && mem[2][DATA + 3] == 0 && mem[2][DATA + 8] == 0,
              "put + flush: 32 bytes at rank 1 (same node) and rank 2 (other node), the cells "
              "beside untouched");
    memset(back, 0, sizeof(back));
    gdr_dev_get(w, back[0], sizeof(back[0]), 1, DATA + 4);
    gdr_dev_get(w, back[1], sizeof(back[1]), 2, DATA + 4);
    gdr_dev_flush(w, 2);
    GDR_CHECK(memcmp(back, src, sizeof(src)) == 0, "get + flush reads both back");
}

#define THREADS 4
#define ADDS 500

static uint64_t results[THREADS][ADDS];        /* the proxy writes other-node results here */

typedef struct {
    const gdr_dev_win_t *w;
    int t;
    uint64_t same[ADDS];
    int errors;
} add_arg_t;

static void *add_thread(void *p)
{
    add_arg_t *a = p;
    for (int i = 0; i < ADDS; i++) {
        a->errors += gdr_dev_fetch_add(a->w, 1, COUNTER, 1, &a->same[i]) != GDR_DEV_OK;
        a->errors += gdr_dev_fetch_add(a->w, 2, COUNTER, 1, &results[a->t][i]) != GDR_DEV_OK;
    }
    return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *) x, b = *(const uint64_t *) y;
    return (a > b) - (a < b);
}

static void fetch_adds(const gdr_dev_win_t *w)
{
    static add_arg_t a[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i] = (add_arg_t) {.w = w,.t = i };
        pthread_create(&t[i], NULL, add_thread, &a[i]);
    }
    static uint64_t all[2][THREADS * ADDS];
    int errors = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        errors += a[i].errors;
        memcpy(&all[0][i * ADDS], a[i].same, sizeof(a[i].same));
        memcpy(&all[1][i * ADDS], results[i], sizeof(results[i]));
    }
    int perm[2] = { 1, 1 };
    for (int s = 0; s < 2; s++) {
        qsort(all[s], THREADS * ADDS, sizeof(uint64_t), cmp_u64);
        for (uint64_t k = 0; k < THREADS * ADDS; k++)
            perm[s] &= all[s][k] == k;
    }
    GDR_CHECK(errors == 0 && perm[0] && mem[1][COUNTER] == THREADS * ADDS, "%d threads x %d "
              "fetch_add on rank 1 (same node): the old values are 0 .. %d once each",
              THREADS, ADDS, THREADS * ADDS - 1);
    GDR_CHECK(perm[1] && mem[2][COUNTER] == THREADS * ADDS, "the same on rank 2 through the "
              "ring and the proxy");
}

#define SIGNALS 200

typedef struct {
    const gdr_dev_win_t *w;     /* the target's own handle */
    int bad;
} waiter_t;

static void *waiter(void *p)
{
    waiter_t *a = p;
    for (uint64_t k = 1; k <= SIGNALS; k++) {
        uint64_t seen;
        gdr_dev_signal_wait_until(a->w, SIG, GDR_CMP_GE, k, &seen);
        /* every signal up to seen has its data: cell (j % 32) holds j or a later one */
        uint64_t cell = __atomic_load_n(&mem[a->w->rank][DATA + (k - 1) % 32], __ATOMIC_ACQUIRE);
        a->bad += cell < k || (cell - k) % 32 != 0;
    }
    return NULL;
}

static void signals(const gdr_dev_win_t *w, const gdr_dev_win_t *w1, const gdr_dev_win_t *w2)
{
    static uint64_t src[SIGNALS + 1];
    waiter_t wa[2] = { {.w = w1 }, {.w = w2 } };
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, waiter, &wa[i]);
    for (uint64_t k = 1; k <= SIGNALS; k++) {
        src[k] = k;
        for (int rank = 1; rank <= 2; rank++)
            gdr_dev_put_signal(w, &src[k], 8, rank, DATA + (int64_t) ((k - 1) % 32), SIG, 1,
                               GDR_SIGNAL_ADD);
    }
    gdr_dev_flush(w, 2);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    GDR_CHECK(wa[0].bad == 0 && mem[1][SIG] == SIGNALS, "same node: %d put_signals, the waiter "
              "found the data of each signal it saw (%d missing)", SIGNALS, wa[0].bad);
    GDR_CHECK(wa[1].bad == 0 && mem[2][SIG] == SIGNALS, "other node, through the proxy: the "
              "same (%d missing)", wa[1].bad);
    uint64_t seen;
    GDR_CHECK(gdr_dev_signal_wait_until(w2, SIG, GDR_CMP_EQ, SIGNALS, &seen) == GDR_DEV_OK
              && seen == SIGNALS, "signal_wait_until returns the value that met the wait");
}

#define ACC 100                 /* the accumulates' cells */
#define ACC_ROUNDS 300

typedef struct {
    const gdr_dev_win_t *w;
    int t, errors;
} acc_arg_t;

/* cells of rank 1 from ACC: 4 int32, then 8 int8 (two words' worth, sharing them), then 2
 * floats, then one int32 MAX; rank 2 from ACC: 3 int64 */
static void *acc_thread(void *p)
{
    acc_arg_t *a = p;
    const int32_t i32[4] = { 1, -2, 3, 1000 };
    const int8_t i8[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    const float f[2] = { 0.5f, 2.0f };
    const uint64_t i64[3] = { 1, 2, 3 };
    for (int k = 0; k < ACC_ROUNDS; k++) {
        int32_t mx = a->t * ACC_ROUNDS + k;
        a->errors += gdr_dev_accumulate(a->w, i32, 4, GDR_GPU_T_INT32, GDR_GPU_OP_SUM, 1, ACC,
                                        0, 1) != GDR_DEV_OK;
        /* two "lanes" split one accumulate: threads 0 and 1 share one, 2 and 3 another */
        a->errors += gdr_dev_accumulate(a->w, i8, 8, GDR_GPU_T_INT8, GDR_GPU_OP_SUM, 1, ACC + 2,
                                        (uint64_t) (a->t & 1), 2) != GDR_DEV_OK;
        a->errors += gdr_dev_accumulate(a->w, f, 2, GDR_GPU_T_FLOAT, GDR_GPU_OP_SUM, 1, ACC + 3,
                                        0, 1) != GDR_DEV_OK;
        a->errors += gdr_dev_accumulate(a->w, &mx, 1, GDR_GPU_T_INT32, GDR_GPU_OP_MAX, 1,
                                        ACC + 4, 0, 1) != GDR_DEV_OK;
        a->errors += gdr_dev_accumulate(a->w, i64, 3, GDR_GPU_T_INT64, GDR_GPU_OP_SUM, 2, ACC,
                                        0, 1) != GDR_DEV_OK;
    }
    a->errors += gdr_dev_flush(a->w, 2) != GDR_DEV_OK;
    return NULL;
}

static void accumulates(const gdr_dev_win_t *w)
{
    uint64_t before = ring.head;
    int32_t v32[4] = { 1, 1, 1, 1 };
    double d2[2] = { 1, 1 };
    gdr_dev_peer_t bytes1[NRANKS];      /* rank 1's window with displacements in bytes */
    memcpy(bytes1, w->peers, sizeof(bytes1));
    bytes1[1].disp_unit = 1;
    gdr_dev_win_t wb = *w;
    wb.peers = bytes1;
    GDR_CHECK(gdr_dev_accumulate(w, v32, 4, GDR_GPU_T_INT32, GDR_GPU_OP_NO_OP, 1, ACC, 0, 1)
              == GDR_DEV_ERR_ARG
              && gdr_dev_accumulate(w, v32, 4, GDR_GPU_T_INT32, GDR_GPU_OP_CSWAP, 1, ACC, 0, 1)
              == GDR_DEV_ERR_ARG
              && gdr_dev_accumulate(w, v32, 4, GDR_GPU_T_FLOAT, GDR_GPU_OP_BAND, 1, ACC, 0, 1)
              == GDR_DEV_ERR_ARG
              && gdr_dev_accumulate(w, v32, 4, GDR_GPU_T_INT32, GDR_GPU_OP_SUM, 1, ACC, 0, 0)
              == GDR_DEV_ERR_ARG
              && gdr_dev_accumulate(&wb, v32, 1, GDR_GPU_T_INT32, GDR_GPU_OP_SUM, 1, ACC * 8 + 2,
                                    0, 1) == GDR_DEV_ERR_ARG,
              "accumulate: NO_OP, compare-and-swap, BAND on floats, no share of the elements and "
              "an int32 at an address not 4-aligned are refused (ARG)");
    GDR_CHECK(gdr_dev_accumulate(w, d2, 1, GDR_GPU_T_DOUBLE_COMPLEX, GDR_GPU_OP_SUM, 1, ACC, 0, 1)
              == GDR_DEV_ERR_OP
              && gdr_dev_accumulate(w, d2, 2, GDR_GPU_T_DOUBLE, GDR_GPU_OP_SUM, 2, ACC, 0, 1)
              == GDR_DEV_ERR_OP
              && gdr_dev_accumulate(w, d2, 2, GDR_GPU_T_INT64, GDR_GPU_OP_MAX, 2, ACC, 0, 1)
              == GDR_DEV_ERR_OP,
              "16-byte elements, and to the other node anything but SUM of 64-bit integers, are "
              "refused (OP)");
    GDR_CHECK(gdr_dev_accumulate(w, v32, 4, GDR_GPU_T_INT32, GDR_GPU_OP_SUM, 1, CELLS - 1, 0, 1)
              == GDR_DEV_ERR_RANGE
              && gdr_dev_accumulate(w, v32, 4, GDR_GPU_T_INT32, GDR_GPU_OP_SUM, 5, ACC, 0, 1)
              == GDR_DEV_ERR_RANK,
              "past the window's end (RANGE), a bad rank (RANK)");
    GDR_CHECK(ring.head == before && mem[1][ACC] == 0 && mem[1][CELLS - 1] == 0
              && mem[2][ACC] == 0, "nothing was posted or written");

    static acc_arg_t a[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i] = (acc_arg_t) {.w = w,.t = i };
        pthread_create(&t[i], NULL, acc_thread, &a[i]);
    }
    int errors = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        errors += a[i].errors;
    }
    const int n = THREADS * ACC_ROUNDS, pairs = THREADS / 2 * ACC_ROUNDS;
    int32_t s32[4], mx;
    int8_t s8[8];
    float sf[2];
    memcpy(s32, &mem[1][ACC], sizeof(s32));
    memcpy(s8, &mem[1][ACC + 2], sizeof(s8));
    memcpy(sf, &mem[1][ACC + 3], sizeof(sf));
    memcpy(&mx, &mem[1][ACC + 4], sizeof(mx));
    int ok8 = 1;
    for (int i = 0; i < 8; i++)
        ok8 &= s8[i] == (int8_t) pairs;
    GDR_CHECK(errors == 0 && s32[0] == n && s32[1] == -2 * n && s32[2] == 3 * n
              && s32[3] == 1000 * n, "same node, %d threads x %d: int32 SUM exact (%d %d %d %d)",
              THREADS, ACC_ROUNDS, s32[0], s32[1], s32[2], s32[3]);
    GDR_CHECK(ok8, "int8 SUM on neighbours sharing words, each accumulate split between two "
              "lanes: every element %d (first %d)", (int8_t) pairs, s8[0]);
    GDR_CHECK(sf[0] == 0.5f * (float) n && sf[1] == 2.0f * (float) n && mx == n - 1,
              "float SUM exact (%g %g), int32 MAX the largest (%d)", (double) sf[0],
              (double) sf[1], mx);
    GDR_CHECK(mem[2][ACC] == (uint64_t) n && mem[2][ACC + 1] == 2ULL * n
              && mem[2][ACC + 2] == 3ULL * n, "other node, int64 SUM as one fetch-add per "
              "element through the ring, complete after flush: %llu %llu %llu",
              (unsigned long long) mem[2][ACC], (unsigned long long) mem[2][ACC + 1],
              (unsigned long long) mem[2][ACC + 2]);
}

/* A proxy that stopped for good: flush and fetch_add give up with GDR_DEV_ERR_STOPPED,
 * and so does a put that waits for a slot of a full ring; a put with room still posts. */
static void stopped(void)
{
    static ring_mem_t r;
    static uint64_t stop_word;
    static gdr_dev_peer_t none[NRANKS];
    memset(&r, 0, sizeof(r));
    stop_word = 0;
    gdr_dev_win_t w = handle(0, none);
    w.ring = (gdr_trig_ring_t) {.head = &r.head,.tail = &r.tail,.slots = r.slots,
        .posted = r.posted,.done = r.done,.stopped = &stop_word,.nslots = SLOTS,.nranks = NRANKS };
    uint64_t v = 1, old = 0;
    int posted = 0;
    for (int i = 0; i < SLOTS; i++)
        posted += gdr_dev_put(&w, &v, 8, 1, 0) == GDR_DEV_OK;
    __atomic_store_n(&stop_word, 1, __ATOMIC_RELEASE);   /* as the proxy does when it fails */
    GDR_CHECK(posted == SLOTS && gdr_dev_put(&w, &v, 8, 1, 0) == GDR_DEV_ERR_STOPPED,
              "a full ring of %d puts and a stopped proxy: the next put gives up", SLOTS);
    GDR_CHECK(gdr_dev_flush(&w, 1) == GDR_DEV_ERR_STOPPED, "flush gives up");
    r.tail = SLOTS + 1;         /* room again (as if taken), still stopped */
    GDR_CHECK(gdr_dev_fetch_add(&w, 2, COUNTER, 1, &old) == GDR_DEV_ERR_STOPPED,
              "fetch_add posts, then gives up waiting for its result");
}

/* fetch_op and compare_swap: on a mapped rank (1) every op, old values returned; to the
 * other node (2) the NIC's 64-bit sum only. */
static void fetch_ops(const gdr_dev_win_t *w)
{
    enum { W = CELLS - 2 };
    int64_t r[6] = { -1, -1, -1, -1, -1, -1 }, five = 5, seven = 7, three = 3;
    double d = 2.5, dr = -1;
    mem[1][W] = 0;
    GDR_CHECK(gdr_dev_fetch_op(w, NULL, NULL, &r[0], GDR_GPU_T_INT64, GDR_GPU_OP_NO_OP, 1, W)
              == GDR_DEV_OK
              && gdr_dev_fetch_op(w, &five, NULL, &r[1], GDR_GPU_T_INT64, GDR_GPU_OP_SUM, 1, W)
              == GDR_DEV_OK
              && gdr_dev_fetch_op(w, &seven, &three, &r[2], GDR_GPU_T_INT64, GDR_GPU_OP_CSWAP, 1,
                                  W) == GDR_DEV_OK
              && gdr_dev_fetch_op(w, &seven, &five, &r[3], GDR_GPU_T_INT64, GDR_GPU_OP_CSWAP, 1,
                                  W) == GDR_DEV_OK
              && gdr_dev_fetch_op(w, &three, NULL, &r[4], GDR_GPU_T_INT64, GDR_GPU_OP_MAX, 1, W)
              == GDR_DEV_OK
              && gdr_dev_fetch_op(w, NULL, NULL, &r[5], GDR_GPU_T_INT64, GDR_GPU_OP_NO_OP, 1, W)
              == GDR_DEV_OK
              && r[0] == 0 && r[1] == 0 && r[2] == 5 && r[3] == 5 && r[4] == 7 && r[5] == 7
              && mem[1][W] == 7, "same node: NO_OP, SUM 5, CAS 3 (no swap), CAS 5 -> 7, MAX 3, "
              "NO_OP: old values 0 0 5 5 7 7, the word 7");
    memcpy(&mem[1][W + 1], &d, 8);
    GDR_CHECK(gdr_dev_fetch_op(w, &d, NULL, &dr, GDR_GPU_T_DOUBLE, GDR_GPU_OP_PROD, 1, W + 1)
              == GDR_DEV_OK && dr == 2.5 && memcmp(&mem[1][W + 1], &(double) { 6.25 }, 8) == 0,
              "same node: PROD on a double returns 2.5 and leaves 6.25");
    uint64_t before = ring.head;
    GDR_CHECK(gdr_dev_fetch_op(w, &three, NULL, &r[0], GDR_GPU_T_INT64, GDR_GPU_OP_MAX, 2, 0)
              == GDR_DEV_ERR_OP
              && gdr_dev_fetch_op(w, &seven, &five, &r[0], GDR_GPU_T_INT64, GDR_GPU_OP_CSWAP, 2,
                                  0) == GDR_DEV_ERR_OP
              && gdr_dev_fetch_op(w, &d, NULL, &dr, GDR_GPU_T_DOUBLE, GDR_GPU_OP_BAND, 1, W)
              == GDR_DEV_ERR_ARG
              && gdr_dev_fetch_op(w, &seven, NULL, &r[0], GDR_GPU_T_INT64, GDR_GPU_OP_CSWAP, 1,
                                  W) == GDR_DEV_ERR_ARG
              && gdr_dev_fetch_op(w, &seven, NULL, NULL, GDR_GPU_T_INT64, GDR_GPU_OP_SUM, 1, W)
              == GDR_DEV_ERR_ARG && ring.head == before,
              "refused, nothing posted: MAX and CAS to the other node (OP), BAND on a double, "
              "a CAS without its compare, no result (ARG)");
    mem[2][3] = 40;
    GDR_CHECK(gdr_dev_fetch_op(w, &five, NULL, &r[0], GDR_GPU_T_INT64, GDR_GPU_OP_SUM, 2, 3)
              == GDR_DEV_OK && r[0] == 40 && mem[2][3] == 45,
              "the other node: SUM of an int64 by the ring's fetch-add, old value 40");
}

int main(void)
{
    alarm(120);                 /* a proxy or producer stuck for good kills the test, not CI */
    for (int r = 0; r < 2; r++)
        view0[r] = view1[r] = (gdr_dev_peer_t) {.base = (char *) mem[r],.size = sizeof(mem[r]),
            .disp_unit = 8 };
    view2[2] = (gdr_dev_peer_t) {.base = (char *) mem[2],.size = sizeof(mem[2]),.disp_unit = 8 };
    /* rank 2 sees only itself */
    gdr_dev_win_t w = handle(0, view0), w1 = handle(1, view1), w2 = handle(2, view2);
    gdr_trig_exec_t ops = {.start = exec_start,.progress = exec_progress };
    ex.proxy = &proxy;
    gdr_trig_proxy_init(&proxy, &w.ring, SLOTS, &ops, &ex);
    pthread_t pt;
    pthread_create(&pt, NULL, proxy_thread, NULL);

    bad_input(&w);
    put_get(&w);
    fetch_adds(&w);
    signals(&w, &w1, &w2);
    accumulates(&w);
    fetch_ops(&w);

    __atomic_store_n(&proxy_stop, 1, __ATOMIC_RELEASE);
    pthread_join(pt, NULL);
    GDR_CHECK(!proxy.failed, "the proxy never failed (%s)", gdr_trig_proxy_error(&proxy));
    gdr_trig_proxy_free(&proxy);
    stopped();
    return gdr_unit_finish();
}
