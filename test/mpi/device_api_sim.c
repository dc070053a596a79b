/* Kernel-triggered RMA (MPIX_Win_get_device_handle, the MPIX_Dev_ calls) on the simulated
 * GPU (test/gpusim, host-visible mode), with host threads playing the kernel: the device
 * calls are gdr's __host__ __device__ protocol (gdr/gdr_rma_kernel_api.h, installed beside
 * mpix_gdr_device.cuh), so a C thread runs the very code a CUDA thread would.
 *
 * Every rank exposes a window in device memory (cuMemAlloc, MPI_Win_create), opens a
 * lock_all epoch and takes a device handle.  THREADS "kernel" threads, rounds rounds each
 * (250, or GDR_TEST_ROUNDS),
 * to the right neighbour: a put of one 8-byte cell (each thread and round its own cell),
 * a put_signal (another cell) adding 1 to the neighbour's signal word, a fetch_add on its
 * counter (the old value into host-pinned memory), an accumulate (MPI_SUM) of two int64
 * elements (to another node: NIC fetch-adds), of four int32 ones and an MPI_MAX of one
 * double (to another node: applied by the target's GPU through the staged protocol, one
 * descriptor an element; refused where the staged protocol is off), and a flush.  Then each rank waits on
 * its own signal word for THREADS x rounds (signal_wait_until) and checks every cell its
 * left neighbour wrote, the counter, and that the fetch_adds it made saw distinct values
 * 0 .. THREADS x rounds - 1 (no lost or duplicated update), and the accumulated sums
 * exact; then a NO_OP, +5, CAS, MAX, NO_OP sequence of fetch_ops with every old value (to
 * another node's device window through the target's GPU where the staged protocol is on).
 * A neighbour on this node is
 * reached through its window's IPC mapping (nothing on the ring; a displacement past its
 * window refused), one on another node through the ring (5 descriptors a round: the
 * accumulate's elements are one fetch-add each).
 * Misuse: a bad rank and a bad signal op are refused by the call (nothing sent); a
 * handle freed twice, a device handle of a dynamic window: the MPI error classes.  gdr's progress thread serves the ring
 * (MPI_THREAD_MULTIPLE).  Needs GDR_GPUSIM_MODE=host-visible (the threads load and store
 * device memory of their own window) and a driver (MPIR_CVAR_CH4_GDR_CUDA_DRIVER). */
#include <pthread.h>

#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"
#include "gdr/gdr_rma_kernel_api.h"

enum {
    THREADS = 4,
    SIGNAL = 0,                 /* byte offsets in the window (displacement unit 1) */
    COUNTER = 8,
    ACC64 = 16,                 /* 2 int64 accumulated */
    ACC32 = 32,                 /* 4 int32 accumulated (MPI_SUM) */
    MAXD = 48,                  /* 1 double accumulated (MPI_MAX) */
    FOPW = 56,                  /* fetch_op and compare_swap's word (one thread) */
    CELLS = 64
};

/* rounds per thread: 250, or GDR_TEST_ROUNDS (1 to 250: maint/check-rxe's slower layouts) */
static int rounds = 250;
static size_t win_bytes;


typedef struct {
    const gdr_dev_win_t *w;
    int id, right, rank, right_same_node;
    uint64_t *src;              /* host-pinned: the values put (live until the flush) */
    uint64_t *olds;             /* host-pinned: fetch_add results */
    int errors;
} kernel_t;

static uint64_t cell_value(int rank, int id, int round, int which)
{
    return ((uint64_t) (rank + 1) << 40) | ((uint64_t) id << 24) | ((uint64_t) round << 1)
        | (uint64_t) which;
}

/* what each thread's round offers to MPI_MAX: the largest is the last round of the last
 * thread, whatever the order they land in */
static double max_value(int rank, int id, int round)
{
    return (double) (rank + 1) * 1e6 + (double) (id * rounds + round) + 0.5;
}

static void *kernel(void *arg)
{
    kernel_t *k = arg;
    for (int i = 0; i < rounds; i++) {
        int cell = k->id * rounds + i;
        k->src[2 * i] = cell_value(k->rank, k->id, i, 0);
        k->src[2 * i + 1] = cell_value(k->rank, k->id, i, 1);
        k->errors += gdr_dev_put(k->w, &k->src[2 * i], 8, k->right, CELLS + 8 * cell) != 0;
        k->errors += gdr_dev_put_signal(k->w, &k->src[2 * i + 1], 8, k->right,
                                        CELLS + 8 * (THREADS * rounds + cell), SIGNAL, 1,
                                        GDR_SIGNAL_ADD) != 0;
        k->errors += gdr_dev_fetch_add(k->w, k->right, COUNTER, 1, &k->olds[i]) != 0;
        const int64_t add64[2] = { 1, 3 };
        const int32_t add32[4] = { 1, -2, 3, 1 << 20 };
        k->errors += gdr_dev_accumulate(k->w, add64, 2, GDR_GPU_T_INT64, GDR_GPU_OP_SUM,
                                        k->right, ACC64, 0, 1) != 0;
        k->errors += gdr_dev_accumulate(k->w, add32, 4, GDR_GPU_T_INT32, GDR_GPU_OP_SUM,
                                        k->right, ACC32, 0, 1)
            != (k->right_same_node || k->w->peers[k->right].acc_any ? GDR_DEV_OK
                : GDR_DEV_ERR_OP);
        const double d = max_value(k->rank, k->id, i);
        k->errors += gdr_dev_accumulate(k->w, &d, 1, GDR_GPU_T_DOUBLE, GDR_GPU_OP_MAX,
                                        k->right, MAXD, 0, 1)
            != (k->right_same_node || k->w->peers[k->right].acc_any ? GDR_DEV_OK
                : GDR_DEV_ERR_OP);
        k->errors += gdr_dev_flush(k->w, k->right) != 0;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int rank, size;
    const char *r = getenv("GDR_TEST_ROUNDS");
    if (r != NULL && atoi(r) >= 1 && atoi(r) <= 250)
        rounds = atoi(r);
    win_bytes = CELLS + 2 * (size_t) THREADS * (size_t) rounds * 8 + 8;  /* + a spare word */
    dev_api_test_init(&argc, &argv, &rank, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);      /* handle-only calls */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    uint64_t winmem;
    uint64_t *pinned;
    if (cu.alloc(&winmem, win_bytes) != 0
        || cu.host_alloc((void **) &pinned, (size_t) THREADS * rounds * 8 * 3, 0) != 0)
        gdr_test_die("cuMemAlloc", MPI_ERR_NO_MEM);
    memset(pinned, 0, (size_t) THREADS * rounds * 8 * 3);
    char *zero = calloc(1, win_bytes);
    cu.copy(winmem, (uint64_t) (uintptr_t) zero, win_bytes);

    MPI_Win win, dyn;
    GDR_CHECK_MPI(MPI_Win_create((void *) (uintptr_t) winmem, win_bytes, 1, MPI_INFO_NULL,
                             MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(0, win);
    MPIX_Win_device dwin;
    gdr_test_set_context("MPIX_Win_get_device_handle");
    GDR_CHECK_MPI(MPIX_Win_get_device_handle(win, &dwin));
    const gdr_dev_win_t *w = (const gdr_dev_win_t *) &dwin;

    /* bad input: refused by the call, nothing posted */
    uint64_t before = *w->ring.head, v = 1;
    if (gdr_dev_put(w, &v, 8, size, 0) != GDR_DEV_ERR_RANK
        || gdr_dev_put_signal(w, &v, 8, right, CELLS, SIGNAL, 1, 7) != GDR_DEV_ERR_ARG
        || *w->ring.head != before)
        gdr_test_fail("a bad rank or signal op was not refused, or reached the ring");

    /* a right neighbour on this node is reached through its IPC mapping, never the ring */
    MPI_Comm node;
    MPI_Group world_group, node_group;
    int right_here = MPI_UNDEFINED;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_group(node, &node_group);
    MPI_Group_translate_ranks(world_group, 1, &right, node_group, &right_here);
    int same_node = right_here != MPI_UNDEFINED, left_here = MPI_UNDEFINED;
    MPI_Group_translate_ranks(world_group, 1, &left, node_group, &left_here);
    if (same_node && (gdr_dev_put(w, &v, 8, right, win_bytes) != GDR_DEV_ERR_RANGE
                      || gdr_dev_fetch_add(w, right, -8, 1, &v) != GDR_DEV_ERR_RANGE))
        gdr_test_fail("same node: a displacement outside the neighbour's window was not "
                      "refused with GDR_DEV_ERR_RANGE");

    /* each same-node rank's device window is mapped here once, whatever reaches it: the
     * handle did (its peers), and an MPI_Put to a mapped neighbour (into the spare word,
     * by the same-node GPU path) uses that mapping instead of its own */
    int tprov, handle_maps = 0;
    for (int r = 0; r < size; r++)
        handle_maps += r != rank && w->peers[r].base != NULL;
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &tprov);
    MPI_T_pvar_session session;
    MPI_T_pvar_session_create(&session);
    if (right != rank && w->peers[right].base != NULL) {
        uint64_t one = 1;
        unsigned long long local0 = gdr_pvar_value(session, "gdr_rma_put_local");
        GDR_CHECK_MPI(MPI_Put(&one, 1, MPI_UINT64_T, right, win_bytes - 8, 1, MPI_UINT64_T, win));
        GDR_CHECK_MPI(MPI_Win_flush(right, win));
        if (gdr_pvar_value(session, "gdr_rma_put_local") != local0 + 1)
            gdr_test_fail("an MPI_Put to the mapped neighbour did not take the same-node path");
    }
    unsigned long long mapped = gdr_pvar_value(session, "gdr_peer_windows_mapped");
    if (mapped != (unsigned long long) handle_maps)
        gdr_test_fail("%llu CUDA IPC mappings of same-node windows, expected %d: one for each "
                      "rank the handle reaches directly", mapped, handle_maps);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();

    /* GDR_TEST_EXPECT_ACC_ANY=1 (maint/check-rxe): the staged protocol is on, so a right
     * neighbour on another node takes every accumulate */
    const char *want_any = getenv("GDR_TEST_EXPECT_ACC_ANY");
    if (want_any != NULL && atoi(want_any) && !same_node && !w->peers[right].acc_any)
        gdr_test_fail("the handle says the proxy cannot apply every accumulate to rank %d's "
                      "device window", right);

    gdr_test_set_context("the kernel threads");
    kernel_t k[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        k[i] = (kernel_t) {.w = w,.id = i,.right = right,.rank = rank,.right_same_node = same_node,
            .src = pinned + (size_t) i * rounds * 2,
            .olds = pinned + (size_t) THREADS * rounds * 2 + (size_t) i * rounds
        };
        pthread_create(&t[i], NULL, kernel, &k[i]);
    }
    int failed_calls = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        if (k[i].errors)
            gdr_test_fail("thread %d: %d device calls failed", i, k[i].errors);
        failed_calls += k[i].errors;
    }
    if (failed_calls) {
        /* gdr's proxy stopped (it said why on stderr); the neighbour would wait for ever
         * for the signals, so the job ends here */
        fprintf(stderr, "rank %d: device calls failed: ending the job\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* to another node, a round: put, put_signal, fetch_add, the int64 accumulate's two
     * NIC fetch-adds, and where the target's GPU applies them the int32 one's four
     * elements and the double MAX */
    uint64_t posted = *w->ring.head - before;
    int per_round = 5 + (w->peers[right].acc_any ? 5 : 0);
    if (same_node ? posted != 0 : posted != (uint64_t) THREADS * rounds * per_round)
        gdr_test_fail("%llu descriptors on the ring, expected %d (right neighbour on %s)",
                      (unsigned long long) posted, same_node ? 0 : THREADS * rounds * per_round,
                      same_node ? "this node: IPC" : "another node");
    uint64_t seen = 0;
    gdr_dev_signal_wait_until(w, SIGNAL, GDR_CMP_GE, THREADS * rounds, &seen);

    /* fetch_op and compare_swap on the right neighbour's word (0 at first), one thread:
     * on this node every op; to another node's device window the staged protocol reaches
     * (acc_any) every op too, applied by its GPU; else the NIC's 64-bit sum only */
    gdr_test_set_context("fetch_op and compare_swap");
    int64_t *fr = (int64_t *) pinned;           /* results: host-pinned (the NIC writes) */
    const int64_t five = 5, seven = 7, three = 3;
    int every_op = same_node || w->peers[right].acc_any;
    int far = every_op ? GDR_DEV_OK : GDR_DEV_ERR_OP;
    fr[0] = fr[1] = fr[2] = fr[3] = fr[4] = -1;
    if (gdr_dev_fetch_op(w, NULL, NULL, &fr[0], GDR_GPU_T_INT64, GDR_GPU_OP_NO_OP, right,
                         FOPW) != far
        || gdr_dev_fetch_op(w, &five, NULL, &fr[1], GDR_GPU_T_INT64, GDR_GPU_OP_SUM, right,
                            FOPW) != GDR_DEV_OK
        || gdr_dev_fetch_op(w, &seven, &five, &fr[2], GDR_GPU_T_INT64, GDR_GPU_OP_CSWAP, right,
                            FOPW) != far
        || gdr_dev_fetch_op(w, &three, NULL, &fr[3], GDR_GPU_T_INT64, GDR_GPU_OP_MAX, right,
                            FOPW) != far
        || gdr_dev_fetch_op(w, NULL, NULL, &fr[4], GDR_GPU_T_INT64, GDR_GPU_OP_NO_OP, right,
                            FOPW) != far
        || (same_node && gdr_dev_fetch_op(w, &five, NULL, &fr[0], GDR_GPU_T_INT64,
                                          GDR_GPU_OP_BAND, right, FOPW + 4) != GDR_DEV_ERR_ARG)
        || (!every_op && gdr_dev_fetch_op(w, &five, NULL, &fr[0], GDR_GPU_T_INT64,
                                          GDR_GPU_OP_BAND, right, FOPW) != GDR_DEV_ERR_OP)
        || gdr_dev_flush(w, right) != GDR_DEV_OK)
        gdr_test_fail("a fetch_op or compare_swap returned the wrong status (right neighbour "
                      "on %s)", same_node ? "this node" : "another node");
    if (every_op) {
        const int64_t want[5] = { 0, 0, 5, 7, 7 };
        for (int i = 0; i < 5; i++)
            gdr_check_long("old value", i, want[i], fr[i]);
    } else {
        gdr_check_long("old value before the sum", 1, 0, fr[1]);
    }
    memset(pinned, 0, 5 * sizeof(int64_t));
    if (seen != (uint64_t) THREADS * rounds)
        gdr_test_fail("signal word %llu, expected %d", (unsigned long long) seen,
                      THREADS * rounds);
    MPI_Barrier(MPI_COMM_WORLD);

    gdr_test_set_context("the window after the kernels");
    uint64_t *mine = malloc(win_bytes);
    cu.copy((uint64_t) (uintptr_t) mine, winmem, win_bytes);
    gdr_check_long("counter", 0, THREADS * rounds, (long long) mine[COUNTER / 8]);
    gdr_check_long("int64 accumulated", 0, THREADS * rounds, (long long) mine[ACC64 / 8]);
    gdr_check_long("int64 accumulated", 1, 3 * THREADS * rounds, (long long) mine[ACC64 / 8 + 1]);
    const int32_t add32[4] = { 1, -2, 3, 1 << 20 };
    int32_t got32[4];
    memcpy(got32, (const char *) mine + ACC32, sizeof(got32));
    /* from the left neighbour: on this node, or where the proxy has the target's GPU
     * apply it (every rank's window is device memory: the left one sees this rank as this
     * rank sees it) */
    int acc32_here = left_here != MPI_UNDEFINED || w->peers[left].acc_any;
    for (int e = 0; e < 4; e++)
        gdr_check_long("int32 accumulated", e, acc32_here
                       ? (long long) add32[e] * THREADS * rounds : 0, got32[e]);
    /* from the left neighbour: NO_OP, +5, CAS 5 -> 7, MAX 3, NO_OP on this node or where
     * the proxy has the target's GPU apply them; +5 only otherwise */
    gdr_check_long("fetch_op word", 0, acc32_here ? 7 : 5, (long long) mine[FOPW / 8]);
    double maxd;
    memcpy(&maxd, (const char *) mine + MAXD, sizeof(maxd));
    double want_max = acc32_here ? max_value(left, THREADS - 1, rounds - 1) : 0.0;
    if (maxd != want_max)
        gdr_test_fail("double MPI_MAX: %.1f, expected %.1f", maxd, want_max);
    for (int id = 0; id < THREADS; id++)
        for (int i = 0; i < rounds; i++) {
            int cell = id * rounds + i;
            gdr_check_long("cell", cell, (long long) cell_value(left, id, i, 0),
                           (long long) mine[(CELLS + 8 * cell) / 8]);
            gdr_check_long("signalled cell", cell, (long long) cell_value(left, id, i, 1),
                           (long long) mine[(CELLS + 8 * (THREADS * rounds + cell)) / 8]);
        }
    unsigned char *hit = calloc(THREADS * rounds, 1);
    int dup = 0;
    for (int i = 0; i < THREADS * rounds; i++) {
        uint64_t o = pinned[(size_t) THREADS * rounds * 2 + i];
        dup += o >= (uint64_t) THREADS * rounds || hit[o]++;
    }
    if (dup)
        gdr_test_fail("%d fetch_add results repeated or out of range", dup);

    gdr_test_set_context("misuse");
    MPIX_Win_device copy = dwin;
    GDR_CHECK_MPI(MPIX_Win_free_device_handle(&dwin));
    gdr_check_class("a handle freed twice", MPIX_Win_free_device_handle(&copy), MPI_ERR_ARG);
    MPI_Win_unlock_all(win);
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
    MPI_Win_set_errhandler(dyn, MPI_ERRORS_RETURN);
    MPIX_Win_device dd;
    gdr_check_class("a device handle of a dynamic window", MPIX_Win_get_device_handle(dyn, &dd),
                    MPI_ERR_RMA_FLAVOR);
    MPI_Win_free(&dyn);
    MPI_Win_free(&win);
    MPI_Group_free(&world_group);
    MPI_Group_free(&node_group);
    MPI_Comm_free(&node);
    cu.free(winmem);
    cu.free_host(pinned);
    free(mine);
    free(zero);
    free(hit);
    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs != 0;
}
