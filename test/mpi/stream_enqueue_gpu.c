/* MPIX_Send_enqueue / MPIX_Recv_enqueue on a CUDA stream, ch4:gdr (maint/check-gpu).
 *
 * A GPU MPIX_Stream (info type "cudaStream_t", value: the stream in hex) attached to a
 * stream communicator; each rank enqueues, in stream order: a copy of host data to a
 * device buffer, a send of it to the right neighbour and a receive from the left one into
 * a second device buffer (odd ranks receive first: see below), and a copy back; then
 * synchronises the stream and checks the values.  Both a host and a device send buffer
 * are tried (MPICH packs device data to pinned host memory on the stream).  Exit 77
 * ("skipped: ...") without a usable GPU. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <cuda_runtime.h>
#include "gdr_mpi_test.h"

#define N 4096

int main(int argc, char **argv)
{
    setenv("MPIR_CVAR_CH4_RESERVE_VCIS", "1", 0);
    MPI_Init(&argc, &argv);
    int rank, size, ndev = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!MPIX_Query_cuda_support() || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        if (rank == 0)
            printf("skipped: no usable GPU (MPIX_Query_cuda_support() %d, devices %d)\n",
                   MPIX_Query_cuda_support(), ndev);
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(rank % ndev);

    cudaStream_t cs;
    cudaStreamCreate(&cs);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &cs, sizeof(cs));
    MPIX_Stream stream;
    gdr_test_set_context("MPIX_Stream_create(cudaStream_t)");
    int rc = MPIX_Stream_create(info, &stream);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS)
        gdr_test_die("MPIX_Stream_create", rc);
    MPI_Comm scomm;
    MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, &scomm);

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *host = malloc(N * sizeof(int)), *back = malloc(N * sizeof(int));
    int *dsend, *drecv;
    cudaMalloc((void **) &dsend, N * sizeof(int));
    cudaMalloc((void **) &drecv, N * sizeof(int));
    for (int round = 0; round < 2; round++) {
        int from_device = round == 1;
        for (int i = 0; i < N; i++) {
            host[i] = rank * 100000 + i + round;
            back[i] = -1;
        }
        cudaMemsetAsync(drecv, 0xff, N * sizeof(int), cs);
        cudaMemcpyAsync(dsend, host, N * sizeof(int), cudaMemcpyHostToDevice, cs);
        /* A blocking send runs to completion in stream order before the stream moves on,
         * as MPI_Send does: on a ring where every rank sent first, a send too large to go
         * eagerly would wait for a receive its peer has not reached (a deadlock MPI allows),
         * so odd ranks receive first. */
        void *sbuf = from_device ? (void *) dsend : (void *) host;
        if (rank % 2 == 1)
            MPIX_Recv_enqueue(drecv, N, MPI_INT, left, round, scomm, MPI_STATUS_IGNORE);
        MPIX_Send_enqueue(sbuf, N, MPI_INT, right, round, scomm);
        if (rank % 2 == 0)
            MPIX_Recv_enqueue(drecv, N, MPI_INT, left, round, scomm, MPI_STATUS_IGNORE);
        cudaMemcpyAsync(back, drecv, N * sizeof(int), cudaMemcpyDeviceToHost, cs);
        cudaStreamSynchronize(cs);
        gdr_test_set_context("enqueue ring, send buffer in %s memory",
                             from_device ? "device" : "host");
        for (int i = 0; i < N; i++)
            gdr_check_long("received", i, left * 100000 + i + round, back[i]);
    }
    cudaFree(dsend);
    cudaFree(drecv);
    free(host);
    free(back);
    MPI_Comm_free(&scomm);
    MPIX_Stream_free(&stream);
    cudaStreamDestroy(cs);
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
