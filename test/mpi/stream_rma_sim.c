/* Stream-ordered RMA (MPIX_*_enqueue, maint/patches 0014) on the simulated GPU
 * (test/gpusim) or a real one, through the CUDA driver gdr loads
 * (MPIR_CVAR_CH4_GDR_CUDA_DRIVER; default libcuda.so.1), reached here the same way.
 *
 * Every rank makes a CUDA stream, an MPIX_Stream over it, a stream communicator, and a
 * window in device memory over that communicator (MPI_Win_lock_all on the host).  Then,
 * all in stream order and with no host wait inside the loop, ROUNDS rounds of a ring
 * exchange: the stream writes the round's values into a device buffer (a memset: the
 * "kernel"), MPIX_Put_signal_enqueue sends them to the right neighbour's slot of the
 * round and adds 1 to its signal word, MPIX_Win_signal_wait_enqueue waits until this
 * rank's word says round i arrived, and a stream copy takes the slot out (the "kernel"
 * that reads it).  One stream synchronisation at the end; every value of every round is
 * checked, so a lost, duplicated or early update shows.  The origin is overwritten by the
 * next round right after each put (the stream copied it: it must be reusable at once).
 * When every rank shares one node, the ring must complete on the streams alone, with no
 * MPI call while they run (gdr's direct path: copies and signal adds straight into the
 * neighbour's window through CUDA IPC); between nodes the host carries it (the queue).
 * Then MPIX_Get_enqueue of the right neighbour's last slot, a put_signal with
 * MPIX_SIGNAL_SET waited for with MPIX_CMP_EQ, three SETs waited for with MPIX_CMP_NE,
 * _LT and _LE, MPIX_Accumulate_enqueue (SUM of int64, and MINLOC of MPI_SHORT_INT, a pair
 * with padding, on rank 0) with MPIX_Win_flush_all_enqueue, and misuse: an enqueue outside lock_all (MPI_ERR_RMA_SYNC),
 * on a window over MPI_COMM_WORLD (MPI_ERR_ARG), a stream wait with an unknown comparison
 * (MPI_ERR_ARG), a bad rank (MPI_ERR_RANK), and on one node a put beyond the neighbour's
 * window (MPI_ERR_RMA_RANGE, at once).
 * MPI_THREAD_SINGLE, as MPIX streams need under gdr (one reserved VCI:
 * MPIR_CVAR_CH4_RESERVE_VCIS=1): gdr's progress then runs in MPI calls, so the host waits
 * for its stream by polling it between MPI calls (sync_stream), as such an application
 * must (MPIX_Stream_progress on the window's stream).  Without a GPU or driver: prints why
 * and fails.  GDR_TEST_TRACE=1 prints each phase as a rank enters it. */

#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

enum {
    ROUNDS = 1000,
    INTS = 16,                  /* per round */
    SLOT = INTS * 4,
    DATA = 64,                  /* the slots start here; the signal word at 0, a counter at 8,
                                   SET signals at 16 and 24 */
    WIN_BYTES = DATA + ROUNDS * SLOT
};

#define CU(call_) do { if ((call_) != 0) gdr_test_die(#call_, MPI_ERR_OTHER); } while (0)
#define DEV(p_) ((uint64_t) (uintptr_t) (p_))

/* Waits for the stream while MPI progresses the stream's VCI (gdr runs the stream's
 * operations in MPI calls here: a cuStreamSynchronize alone would wait for ever). */
static void sync_stream(void *stream, MPIX_Stream mstream)
{
    int rc;
    while ((rc = cu.stream_query(stream)) == 600 /* CUDA_ERROR_NOT_READY */ )
        MPIX_Stream_progress(mstream);  /* the window's operations move on its VCI */
    if (rc != 0)
        gdr_test_die("cuStreamQuery", MPI_ERR_OTHER);
}

/* Waits for the stream without any MPI call, up to `seconds`: 1 when it finished. */
static int stream_alone(void *stream, double seconds)
{
    double until = MPI_Wtime() + seconds;
    int rc;
    while ((rc = cu.stream_query(stream)) == 600 && MPI_Wtime() < until)
        ;
    return rc == 0;
}

static int value_of(int rank, int round)
{
    return ((rank + 1) * 10007 + round) & 0xff;        /* a memset writes bytes */
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cuda_open() != 0) {
        fprintf(stderr, "rank %d: no CUDA driver: set MPIR_CVAR_CH4_GDR_CUDA_DRIVER\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Comm node;
    int node_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    int one_node = node_size == size;

    void *stream;
    uint64_t winmem, origin;
    unsigned char *got;
    CU(cu.stream_create(&stream, 1 /* CU_STREAM_NON_BLOCKING */ ));
    CU(cu.alloc(&winmem, WIN_BYTES));
    CU(cu.alloc(&origin, SLOT));
    CU(cu.host_alloc((void **) &got, (size_t) ROUNDS * SLOT + SLOT, 0));
    CU(cu.memset_async(winmem, 0, WIN_BYTES, stream));
    CU(cu.stream_sync(stream));

    int rc;
    MPI_Info info;
    MPIX_Stream mstream;
    MPI_Comm scomm;
    MPI_Win win, plain;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &stream, sizeof(stream));
    gdr_test_set_context("MPIX_Stream_create(cudaStream_t) (needs MPIR_CVAR_CH4_RESERVE_VCIS=1)");
    rc = MPIX_Stream_create(info, &mstream);
    if (rc != MPI_SUCCESS)
        gdr_test_die("MPIX_Stream_create", rc); /* nothing after it can work */
    MPI_Info_free(&info);
    gdr_test_set_context("MPIX_Stream_comm_create");
    GDR_CHECK_MPI(MPIX_Stream_comm_create(MPI_COMM_WORLD, mstream, &scomm));
    gdr_test_set_context("MPI_Win_create over the stream communicator");
    GDR_CHECK_MPI(MPI_Win_create((void *) (uintptr_t) winmem, WIN_BYTES, 1, MPI_INFO_NULL, scomm,
                                  &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    /* misuse first: nothing may reach the stream */
    gdr_test_set_context("misuse");
    rc = MPIX_Put_enqueue((void *) (uintptr_t) origin, INTS, MPI_INT, right, DATA, INTS,
                              MPI_INT, win);
    gdr_check_class("enqueue outside MPI_Win_lock_all", rc, MPI_ERR_RMA_SYNC);
    GDR_CHECK_MPI(MPI_Win_create((void *) (uintptr_t) winmem, WIN_BYTES, 1, MPI_INFO_NULL,
                                  MPI_COMM_WORLD, &plain));
    MPI_Win_set_errhandler(plain, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(0, plain);
    rc = MPIX_Put_enqueue((void *) (uintptr_t) origin, INTS, MPI_INT, right, DATA, INTS, MPI_INT,
                          plain);
    gdr_check_class("enqueue on a window without a stream", rc, MPI_ERR_ARG);
    MPI_Win_unlock_all(plain);
    MPI_Win_free(&plain);

    MPI_Win_lock_all(0, win);
    rc = MPIX_Win_signal_wait_enqueue(win, 0, 99, 1);
    gdr_check_class("a stream wait with comparison 99", rc, MPI_ERR_ARG);
    rc = MPIX_Put_enqueue((void *) (uintptr_t) origin, INTS, MPI_INT, size, DATA, INTS, MPI_INT,
                          win);
    gdr_check_class("an enqueue to rank `size`", rc, MPI_ERR_RANK);

    /* the ring exchange */
    gdr_test_set_context("the ring exchange");
    for (int i = 0; i < ROUNDS; i++) {
        CU(cu.memset_async(origin, (unsigned char) value_of(rank, i), SLOT, stream));
        GDR_CHECK_MPI(MPIX_Put_signal_enqueue((void *) (uintptr_t) origin, INTS, MPI_INT,
                                               right, DATA + (MPI_Aint) i * SLOT, INTS, MPI_INT,
                                               0, 1, MPIX_SIGNAL_ADD, win));
        GDR_CHECK_MPI(MPIX_Win_signal_wait_enqueue(win, 0, MPIX_CMP_GE, (uint64_t) i + 1));
        CU(cu.copy_async(DEV(got + (size_t) i * SLOT), winmem + DATA + (uint64_t) i * SLOT, SLOT,
                         stream));
    }
    GDR_CHECK_MPI(MPIX_Win_flush_all_enqueue(win));
    gdr_test_set_context("the ring exchange: waiting for the stream");
    if (one_node && !stream_alone(stream, 120))
        gdr_test_fail("on one node the ring did not complete on the streams alone in 120 s: "
                      "an operation took the host's path instead of the direct one");
    sync_stream(stream, mstream);
    int bad = 0;
    for (int i = 0; i < ROUNDS; i++)
        for (int b = 0; b < SLOT; b++)
            bad += got[(size_t) i * SLOT + b] != value_of(left, i);
    if (bad)
        gdr_test_fail("%d of %d bytes from rank %d wrong after %d rounds", bad, ROUNDS * SLOT,
                      left, ROUNDS);
    MPI_Barrier(MPI_COMM_WORLD);        /* every rank's last round has landed */

    /* a get of the right neighbour's last slot (the round rank `rank` put there) */
    gdr_test_set_context("MPIX_Get_enqueue");
    uint64_t dst;
    CU(cu.alloc(&dst, SLOT));
    GDR_CHECK_MPI(MPIX_Get_enqueue((void *) (uintptr_t) dst, SLOT, MPI_BYTE, right,
                                    DATA + (MPI_Aint) (ROUNDS - 1) * SLOT, SLOT, MPI_BYTE, win));
    CU(cu.copy_async(DEV(got), dst, SLOT, stream));
    sync_stream(stream, mstream);
    bad = 0;
    for (int b = 0; b < SLOT; b++)
        bad += got[b] != value_of(rank, ROUNDS - 1);
    if (bad)
        gdr_test_fail("the get saw %d wrong bytes", bad);

    /* a SET signal: the right neighbour's word at 16 gets this rank's mark */
    gdr_test_set_context("MPIX_Put_signal_enqueue with MPIX_SIGNAL_SET");
    CU(cu.memset_async(dst, 0x5a, SLOT, stream));
    GDR_CHECK_MPI(MPIX_Put_signal_enqueue((void *) (uintptr_t) dst, INTS, MPI_INT, right, DATA,
                                           INTS, MPI_INT, 16, 0xabc00 + (uint64_t) rank,
                                           MPIX_SIGNAL_SET, win));
    GDR_CHECK_MPI(MPIX_Win_signal_wait_enqueue(win, 16, MPIX_CMP_EQ, 0xabc00 + (uint64_t) left));
    CU(cu.copy_async(DEV(got), winmem, DATA + SLOT, stream));
    sync_stream(stream, mstream);
    uint64_t word;
    memcpy(&word, got + 16, 8);
    gdr_check_long("the SET signal from the left", 0, 0xabc00 + left, (long long) word);
    bad = 0;
    for (int b = 0; b < SLOT; b++)
        bad += got[DATA + b] != 0x5a;
    if (bad)
        gdr_test_fail("the data of the SET put_signal: %d wrong bytes", bad);
    /* the comparisons stream memory operations lack (gdr's waiting kernel): the word at 24
     * goes 0 -> 100 -> 50 -> 10 by SETs from the left, each waited for */
    gdr_test_set_context("stream waits with MPIX_CMP_NE, _LT, _LE");
    static const struct { uint64_t set; int cmp; uint64_t than; } steps[] = {
        { 100, MPIX_CMP_NE, 0 }, { 50, MPIX_CMP_LT, 100 }, { 10, MPIX_CMP_LE, 10 }
    };
    for (int k = 0; k < 3; k++) {
        GDR_CHECK_MPI(MPIX_Put_signal_enqueue((void *) (uintptr_t) dst, 0, MPI_INT, right, DATA,
                                               0, MPI_INT, 24, steps[k].set, MPIX_SIGNAL_SET,
                                               win));
        GDR_CHECK_MPI(MPIX_Win_signal_wait_enqueue(win, 24, steps[k].cmp, steps[k].than));
    }
    CU(cu.copy_async(DEV(got), winmem + 24, 8, stream));
    sync_stream(stream, mstream);
    memcpy(&word, got, 8);
    gdr_check_long("the word after waits NE 0, LT 100, LE 10", 0, 10, (long long) word);
    if (one_node) {
        rc = MPIX_Put_enqueue((void *) (uintptr_t) dst, INTS, MPI_INT, right, WIN_BYTES - 8, INTS,
                              MPI_INT, win);
        gdr_check_class("a put beyond the neighbour's window", rc, MPI_ERR_RMA_RANGE);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* accumulates from every rank on one word of rank 0 */
    gdr_test_set_context("MPIX_Accumulate_enqueue");
    int64_t *one = (int64_t *) got;
    one[0] = rank + 1;
    GDR_CHECK_MPI(MPIX_Accumulate_enqueue(one, 1, MPI_INT64_T, 0, 8, 1, MPI_INT64_T, MPI_SUM,
                                           win));
    GDR_CHECK_MPI(MPIX_Win_flush_all_enqueue(win));
    sync_stream(stream, mstream);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int64_t sum = 0;
        CU(cu.copy(DEV(&sum), winmem + 8, 8));
        gdr_check_long("the accumulated word", 0, (long long) size * (size + 1) / 2, sum);
    }

    /* a value-index pair with padding (MPI_SHORT_INT: 6 bytes of data in an 8-byte
     * element, which gdr's kernels take whole) by MINLOC from every rank into rank 0's
     * bytes 32-39: the least value wins, with its rank */
    gdr_test_set_context("MPIX_Accumulate_enqueue, MPI_MINLOC on MPI_SHORT_INT");
    struct { short v; int i; } start = { 30000, -1 }, mine = { (short) (100 - rank), rank }, least;
    if (rank == 0)
        CU(cu.copy(winmem + 32, DEV(&start), sizeof(start)));
    MPI_Barrier(MPI_COMM_WORLD);
    memcpy(got, &mine, sizeof(mine));
    GDR_CHECK_MPI(MPIX_Accumulate_enqueue(got, 1, MPI_SHORT_INT, 0, 32, 1, MPI_SHORT_INT,
                                           MPI_MINLOC, win));
    GDR_CHECK_MPI(MPIX_Win_flush_all_enqueue(win));
    sync_stream(stream, mstream);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CU(cu.copy(DEV(&least), winmem + 32, sizeof(least)));
        gdr_check_long("MINLOC's value", 0, 100 - (size - 1), least.v);
        gdr_check_long("MINLOC's index", 0, size - 1, least.i);
    }
    gdr_test_set_context("MPI_Win_unlock_all, MPI_Win_free");
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&scomm);
    MPIX_Stream_free(&mstream);
    cu.free(dst);
    cu.free(origin);
    cu.free(winmem);
    cu.free_host(got);
    cu.stream_destroy(stream);
    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs != 0;
}
