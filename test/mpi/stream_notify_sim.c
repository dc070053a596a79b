/* Notified RMA in stream order (MPIX_Put_notify_enqueue, MPIX_Get_notify_enqueue,
 * MPIX_Win_notify_wait_enqueue: maint/patches 0022) on the simulated GPU (test/gpusim) or a
 * real one, through the CUDA driver gdr loads (MPIR_CVAR_CH4_GDR_CUDA_DRIVER).
 *
 * Every rank makes a CUDA stream, an MPIX_Stream over it, a stream communicator, and a
 * window in device memory over it with two notification counters.  Then, all in stream
 * order with no host wait inside the loop, ROUNDS rounds of a ring: the stream writes the
 * round's values into a device buffer (a memset), MPIX_Put_notify_enqueue sends them to the
 * right neighbour's slot of the round and counts on its counter 0, the stream waits until
 * this rank's counter 0 says round i arrived and copies the slot out.  One stream
 * synchronisation at the end; every byte of every round is checked (a notification that
 * overtook its data, or a lost or doubled one, shows), and counter 0 is exactly ROUNDS.
 * Then MPIX_Get_notify_enqueue of the right neighbour's last slot counting on its counter
 * 1 (each rank's stream waits for its left neighbour's read), a zero-count notified put
 * (it still counts), and misuse: outside MPI_Win_lock_all (MPI_ERR_RMA_SYNC), a counter the
 * target does not have and one this rank does not have (MPI_ERR_ARG), and before
 * MPIX_Win_notify_attach (MPI_ERR_ARG).  MPI_THREAD_SINGLE with one reserved VCI
 * (MPIR_CVAR_CH4_RESERVE_VCIS=1), as for every MPIX stream under gdr: the host waits for its
 * stream by polling it between MPI calls.  Without a GPU or driver: prints why and fails. */

#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

enum {
    ROUNDS = 200,
    INTS = 16,                  /* per round */
    SLOT = INTS * 4,
    DATA = 0,
    WIN_BYTES = ROUNDS * SLOT
};

#define CU(call_) do { if ((call_) != 0) gdr_test_die(#call_, MPI_ERR_OTHER); } while (0)
#define DEV(p_) ((uint64_t) (uintptr_t) (p_))

/* Waits for the stream while MPI progresses (the stream's notified operations leave from
 * gdr's progress in MPI calls). */
static void sync_stream(void *stream, MPIX_Stream mstream)
{
    int rc;
    double until = MPI_Wtime() + 120;
    while ((rc = cu.stream_query(stream)) == 600 /* CUDA_ERROR_NOT_READY */ ) {
        MPIX_Stream_progress(mstream);
        if (MPI_Wtime() > until)
            gdr_test_die("the stream did not finish in 120 s (a notification lost?)",
                         MPI_ERR_OTHER);
    }
    if (rc != 0)
        gdr_test_die("cuStreamQuery", MPI_ERR_OTHER);
}

static int value_of(int rank, int round)
{
    return ((rank + 1) * 10007 + round) & 0xff;        /* a memset writes bytes */
}

static MPI_Count counter(MPI_Win win, int idx)
{
    MPI_Count v = -1;
    GDR_CHECK_MPI(MPIX_Win_notify_get_value(win, idx, &v));
    return v;
}

int main(int argc, char **argv)
{
    int rank, size, rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cuda_open() != 0) {
        fprintf(stderr, "rank %d: no CUDA driver: set MPIR_CVAR_CH4_GDR_CUDA_DRIVER\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    void *stream;
    uint64_t winmem, origin, dst;
    unsigned char *got;
    CU(cu.stream_create(&stream, 1 /* CU_STREAM_NON_BLOCKING */ ));
    CU(cu.alloc(&winmem, WIN_BYTES));
    CU(cu.alloc(&origin, SLOT));
    CU(cu.alloc(&dst, SLOT));
    CU(cu.host_alloc((void **) &got, (size_t) ROUNDS * SLOT, 0));
    CU(cu.memset_async(winmem, 0, WIN_BYTES, stream));
    CU(cu.stream_sync(stream));

    MPI_Info info;
    MPIX_Stream mstream;
    MPI_Comm scomm;
    MPI_Win win;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &stream, sizeof(stream));
    gdr_test_set_context("MPIX_Stream_create(cudaStream_t) (needs MPIR_CVAR_CH4_RESERVE_VCIS=1)");
    rc = MPIX_Stream_create(info, &mstream);
    if (rc != MPI_SUCCESS)
        gdr_test_die("MPIX_Stream_create", rc);
    MPI_Info_free(&info);
    GDR_CHECK_MPI(MPIX_Stream_comm_create(MPI_COMM_WORLD, mstream, &scomm));
    gdr_test_set_context("MPI_Win_create over the stream communicator");
    GDR_CHECK_MPI(MPI_Win_create((void *) (uintptr_t) winmem, WIN_BYTES, 1, MPI_INFO_NULL, scomm,
                                  &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    gdr_test_set_context("misuse before MPIX_Win_notify_attach");
    rc = MPIX_Win_notify_wait_enqueue(win, 0, 1);
    gdr_check_class("a stream wait on a window without counters", rc, MPI_ERR_ARG);
    GDR_CHECK_MPI(MPIX_Win_notify_attach(win, 2, MPI_INFO_NULL));
    gdr_test_set_context("misuse");
    rc = MPIX_Put_notify_enqueue((void *) (uintptr_t) origin, INTS, MPI_INT, right, DATA, INTS,
                                 MPI_INT, 0, win);
    gdr_check_class("a notified enqueue outside MPI_Win_lock_all", rc, MPI_ERR_RMA_SYNC);
    GDR_CHECK_MPI(MPI_Win_lock_all(0, win));
    rc = MPIX_Put_notify_enqueue((void *) (uintptr_t) origin, INTS, MPI_INT, right, DATA, INTS,
                                 MPI_INT, 2, win);
    gdr_check_class("a notified put to the target's counter 2 (it has 2)", rc, MPI_ERR_ARG);
    rc = MPIX_Get_notify_enqueue((void *) (uintptr_t) dst, INTS, MPI_INT, right, DATA, INTS,
                                 MPI_INT, -1, win);
    gdr_check_class("a notified get to counter -1", rc, MPI_ERR_ARG);
    rc = MPIX_Win_notify_wait_enqueue(win, 5, 1);
    gdr_check_class("a stream wait on this rank's counter 5", rc, MPI_ERR_ARG);

    /* the ring */
    gdr_test_set_context("the notified ring");
    for (int i = 0; i < ROUNDS; i++) {
        CU(cu.memset_async(origin, (unsigned char) value_of(rank, i), SLOT, stream));
        GDR_CHECK_MPI(MPIX_Put_notify_enqueue((void *) (uintptr_t) origin, INTS, MPI_INT,
                                              right, DATA + (MPI_Aint) i * SLOT, INTS, MPI_INT,
                                              0, win));
        GDR_CHECK_MPI(MPIX_Win_notify_wait_enqueue(win, 0, (MPI_Count) i + 1));
        CU(cu.copy_async(DEV(got + (size_t) i * SLOT), winmem + DATA + (uint64_t) i * SLOT,
                         SLOT, stream));
    }
    GDR_CHECK_MPI(MPIX_Win_flush_all_enqueue(win));
    sync_stream(stream, mstream);
    long bad = 0;
    for (int i = 0; i < ROUNDS; i++)
        for (int b = 0; b < SLOT; b++)
            bad += got[(size_t) i * SLOT + b] != value_of(left, i);
    if (bad)
        gdr_test_fail("%ld of %d bytes from rank %d wrong after %d notified rounds", bad,
                      ROUNDS * SLOT, left, ROUNDS);
    gdr_check_long("counter 0 after the ring", 0, ROUNDS, (long long) counter(win, 0));
    MPI_Barrier(MPI_COMM_WORLD);        /* every rank's last round has landed */

    /* a notified get of the right neighbour's last slot (the round this rank put there);
     * this rank's counter 1 counts its left neighbour's read */
    gdr_test_set_context("MPIX_Get_notify_enqueue");
    GDR_CHECK_MPI(MPIX_Get_notify_enqueue((void *) (uintptr_t) dst, SLOT, MPI_BYTE, right,
                                          DATA + (MPI_Aint) (ROUNDS - 1) * SLOT, SLOT, MPI_BYTE,
                                          1, win));
    GDR_CHECK_MPI(MPIX_Win_notify_wait_enqueue(win, 1, 1));
    CU(cu.copy_async(DEV(got), dst, SLOT, stream));
    sync_stream(stream, mstream);
    bad = 0;
    for (int b = 0; b < SLOT; b++)
        bad += got[b] != value_of(rank, ROUNDS - 1);
    if (bad)
        gdr_test_fail("the notified get saw %ld wrong bytes", bad);
    gdr_check_long("counter 1 after the left neighbour's get", 0, 1,
                   (long long) counter(win, 1));

    /* no data: the notification still counts */
    gdr_test_set_context("a zero-count MPIX_Put_notify_enqueue");
    GDR_CHECK_MPI(MPIX_Put_notify_enqueue((void *) (uintptr_t) origin, 0, MPI_INT, right, DATA,
                                          0, MPI_INT, 0, win));
    GDR_CHECK_MPI(MPIX_Win_notify_wait_enqueue(win, 0, ROUNDS + 1));
    sync_stream(stream, mstream);
    gdr_check_long("counter 0 after a zero-count notified put", 0, ROUNDS + 1,
                   (long long) counter(win, 0));

    gdr_test_set_context("MPI_Win_unlock_all, MPIX_Win_notify_detach, MPI_Win_free");
    GDR_CHECK_MPI(MPI_Win_unlock_all(win));
    GDR_CHECK_MPI(MPIX_Win_notify_detach(win));
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
