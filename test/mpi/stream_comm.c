/* MPIX streams on ch4:gdr: stream communicators carry messages on reserved VCIs.
 *
 * An MPIX_Stream (MPICH 4.1+) owns a reserved VCI; a stream communicator sends from
 * and delivers to that VCI's queues, so gdr must put the VCIs on its wire and grant
 * reserved VCIs (MPIR_CVAR_CH4_RESERVE_VCIS, set below before MPI_Init).  Checked,
 * between every pair of ranks (on one node: MPICH's shm; over the network: gdr):
 * - a stream communicator of one stream per rank: a ring of eager and rendezvous
 *   messages, values read back;
 * - a multiplex stream communicator of two streams per rank: MPIX_Stream_send from
 *   stream i to stream j arrives at stream j only (the message to the other index,
 *   same tag, must not match), for every (i, j).  MPICH matches by rank, tag and
 *   destination stream, not by source stream, so the tag names the source stream.
 *   Odd ranks own one stream more, so the streams' VCI numbers differ between ranks;
 * - receives from MPI_ANY_SOURCE, and plain sends and receives on the multiplex
 *   communicator (each rank's first stream);
 * - a window on the stream communicator: Put + fence and Accumulate, values read back;
 * - MPI_Comm_free of both (it probes for MPI_ANY_SOURCE: MPICH patch 0010);
 * - MPI_COMM_WORLD traffic still works after the streams are freed.
 * GPU streams (type "cudaStream_t") and MPIX_Send_enqueue need a GPU: maint/check-gpu. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include "gdr_mpi_test.h"

#define RING_SIZES 3
static const int ring_counts[RING_SIZES] = {1, 1000, 300000}; /* 4 B, 4 KB, 1.2 MB */

static int value_of(int src, int idx, int salt)
{
    return src * 1000003 + idx * 7 + salt;
}

static void ring_on(MPI_Comm comm, int rank, int size, int salt)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int s = 0; s < RING_SIZES; s++) {
        int n = ring_counts[s];
        int *out = malloc(n * sizeof(int)), *in = malloc(n * sizeof(int));
        for (int i = 0; i < n; i++) {
            out[i] = value_of(rank, i, salt + s);
            in[i] = -1;
        }
        MPI_Request req[2];
        MPI_Status st[2];
        /* the largest one from MPI_ANY_SOURCE: a receive without a source rank */
        MPI_Irecv(in, n, MPI_INT, s == RING_SIZES - 1 ? MPI_ANY_SOURCE : left, 10 + s, comm,
                  &req[0]);
        MPI_Isend(out, n, MPI_INT, right, 10 + s, comm, &req[1]);
        gdr_test_set_context("stream ring count=%d from rank %d", n, left);
        if (!gdr_check_mpi("MPI_Waitall", MPI_Waitall(2, req, st))) {
            free(out);  /* no data to check: the error says why */
            free(in);
            continue;
        }
        gdr_check_long("status.MPI_SOURCE", 0, left, st[0].MPI_SOURCE);
        for (int i = 0; i < n; i++)
            gdr_check_long("received", i, value_of(left, i, salt + s), in[i]);
        free(out);
        free(in);
    }
}

static void multiplex(MPI_Comm comm, int rank, int size)
{
    /* every rank sends to every other rank from each of its 2 streams to each of the
     * peer's 2 streams; both messages of a tag differ only in their destination stream */
    for (int peer = 0; peer < size; peer++) {
        if (peer == rank)
            continue;
        for (int si = 0; si < 2; si++)
            for (int di = 0; di < 2; di++) {
                int v = value_of(rank, si * 2 + di, 77);
                MPIX_Stream_send(&v, 1, MPI_INT, peer, 5 + si, comm, si, di);
            }
    }
    /* posting order opposite to sending order: a mix-up of streams shows */
    for (int peer = 0; peer < size; peer++) {
        if (peer == rank)
            continue;
        for (int di = 1; di >= 0; di--)
            for (int si = 1; si >= 0; si--) {
                int v = -1;
                MPIX_Stream_recv(&v, 1, MPI_INT, peer, 5 + si, comm, si, di, MPI_STATUS_IGNORE);
                gdr_test_set_context("multiplex from rank %d stream %d to my stream %d", peer,
                                     si, di);
                gdr_check_long("received", 0, value_of(peer, si * 2 + di, 77), v);
            }
    }
}

static void window_on(MPI_Comm comm, int rank, int size)
{
    int *base;
    MPI_Win win;
    gdr_test_set_context("window on a stream communicator");
    if (!gdr_check_mpi("MPI_Win_allocate", MPI_Win_allocate(size * sizeof(int) * 2, sizeof(int),
                                                            MPI_INFO_NULL, comm, &base, &win)))
        return;
    for (int i = 0; i < 2 * size; i++)
        base[i] = 0;
    MPI_Win_fence(0, win);
    for (int t = 0; t < size; t++) {
        int v = value_of(rank, t, 3), one = rank + 1;
        MPI_Put(&v, 1, MPI_INT, t, rank, 1, MPI_INT, win);
        MPI_Accumulate(&one, 1, MPI_INT, t, size, 1, MPI_INT, MPI_SUM, win);
    }
    MPI_Win_fence(0, win);
    for (int o = 0; o < size; o++)
        gdr_check_long("window", o, value_of(o, rank, 3), base[o]);
    gdr_check_long("window", size, size * (size + 1) / 2, base[size]);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    /* up to four streams per rank need four reserved VCIs */
    setenv("MPIR_CVAR_CH4_RESERVE_VCIS", "4", 0);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* odd ranks create a spacer stream first, so that a stream's VCI number differs
     * between ranks: a message must be addressed by the destination's table */
    MPIX_Stream streams[3], spacer = MPIX_STREAM_NULL;
    gdr_test_set_context("streams with MPIR_CVAR_CH4_RESERVE_VCIS=4");
    if (rank % 2 == 1) {
        int rc = MPIX_Stream_create(MPI_INFO_NULL, &spacer);
        if (rc != MPI_SUCCESS)
            gdr_test_die("MPIX_Stream_create", rc);
    }
    for (int i = 0; i < 3; i++) {
        int rc = MPIX_Stream_create(MPI_INFO_NULL, &streams[i]);
        if (rc != MPI_SUCCESS)
            gdr_test_die("MPIX_Stream_create", rc);
    }

    MPI_Comm scomm, mcomm;
    MPIX_Stream_comm_create(MPI_COMM_WORLD, streams[0], &scomm);
    MPIX_Stream_comm_create_multiplex(MPI_COMM_WORLD, 2, &streams[1], &mcomm);

    ring_on(scomm, rank, size, 0);
    multiplex(mcomm, rank, size);
    ring_on(mcomm, rank, size, 30);     /* no stream indices: each rank's first stream */
    window_on(scomm, rank, size);
    /* the plain world still works, also interleaved with stream traffic */
    ring_on(MPI_COMM_WORLD, rank, size, 50);
    ring_on(scomm, rank, size, 90);

    MPI_Comm_free(&scomm);
    MPI_Comm_free(&mcomm);
    for (int i = 0; i < 3; i++)
        MPIX_Stream_free(&streams[i]);
    if (spacer != MPIX_STREAM_NULL)
        MPIX_Stream_free(&spacer);
    ring_on(MPI_COMM_WORLD, rank, size, 120);
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
