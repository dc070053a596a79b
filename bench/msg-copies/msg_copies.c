/* msg_copies: host copies per delivered byte of MPI_Send/MPI_Recv, by path, from gdr's MPI_T
 * counters (counts that hold on any machine; Soft-RoCE's timings are not used).  Rank 0
 * sends N messages of each size to rank 1, contiguous, from and into host memory and, with
 * a CUDA driver (MPIR_CVAR_CH4_GDR_CUDA_DRIVER: a GPU or the simulated one), device memory;
 * the sender's and the receiver's counters are read around each (memory, size):
 *   gdr_am_send_packed_bytes     payload packed into a pack buffer (by the CPU, or by gdr's
 *                                GPU copy for device data)
 *   gdr_am_rndv_copied_bytes     rendezvous payload landed in gdr's buffers, then copied
 *   gdr_am_device_copied_bytes   payload copied between host and device by gdr's GPU copy
 *   gdr_am_rndv_zcopy_bytes      rendezvous payload read straight into the receive buffer
 *   gdr_am_eager_sent            messages sent whole in one eager buffer
 *   gdr_am_staged_bytes          of the device copies, those through the bounded pool of
 *                                pinned chunks (GPUDirect staged: no whole-message buffer)
 * A host eager message's payload is copied twice by design (into the send slot, out of the
 * receive buffer: no counter has them); otherwise each side copies at most once, counted
 * in one or two of the counters above (a staged device pack is packed and device_copied).
 * copies_per_byte = (send_copies + recv_copies) / delivered: copies through host memory,
 * whether the CPU or the GPU's copy engine makes them.  CSV on rank 0's stdout:
 *   memory,bytes,messages,delivered,protocol,send_packed,send_device_copied,
 *   recv_landed_copied,recv_device_copied,recv_zcopy,send_copies,recv_copies,copies_per_byte,
 *   send_staged,recv_staged
 * A benchmark: it prints numbers and never judges them. */
#define _POSIX_C_SOURCE 200809L         /* clock_gettime (gdr_mpi_test.h) */
#include <stdlib.h>
#include <string.h>

#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

#define N 4
static const char *const names[] = {
    "gdr_am_send_packed_bytes", "gdr_am_rndv_copied_bytes", "gdr_am_device_copied_bytes",
    "gdr_am_rndv_zcopy_bytes", "gdr_am_eager_sent", "gdr_am_staged_bytes"
};
enum { PACKED, LANDED, DEVICE, ZCOPY, EAGER, STAGED, NCOUNT };

static void counters(MPI_T_pvar_session s, unsigned long long *v)
{
    for (int i = 0; i < NCOUNT; i++)
        if (gdr_pvar_read(s, names[i], &v[i]) != 0)
            v[i] = 0;
}

int main(int argc, char **argv)
{
    int rank, size, tprov;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "msg_copies: 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &tprov);
    MPI_T_pvar_session s;
    MPI_T_pvar_session_create(&s);
    int gpu = getenv("MPIR_CVAR_CH4_GDR_CUDA_DRIVER") != NULL && cuda_open() == 0;
    static const size_t sizes[] = { 8, 4096, 65536, 1u << 20, 4u << 20 };
    const size_t max = 4u << 20;
    char *host = malloc(max);
    uint64_t dev = 0;
    memset(host, rank, max);
    if (gpu && cu.alloc(&dev, max) != 0)
        gpu = 0;
    if (rank == 0)
        printf("memory,bytes,messages,delivered,protocol,send_packed,send_device_copied,"
               "recv_landed_copied,recv_device_copied,recv_zcopy,send_copies,recv_copies,"
               "copies_per_byte,send_staged,recv_staged\n");
    for (int m = 0; m < 1 + gpu; m++) {
        void *buf = m == 0 ? (void *) host : (void *) (uintptr_t) dev;
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            unsigned long long a[NCOUNT], b[NCOUNT], d[NCOUNT], all[2 * NCOUNT];
            MPI_Barrier(MPI_COMM_WORLD);
            counters(s, a);
            for (int i = 0; i < N; i++) {
                if (rank == 0)
                    MPI_Send(buf, (int) sizes[k], MPI_BYTE, 1, i, MPI_COMM_WORLD);
                else
                    MPI_Recv(buf, (int) sizes[k], MPI_BYTE, 0, i, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            counters(s, b);
            for (int i = 0; i < NCOUNT; i++)
                d[i] = b[i] - a[i];
            /* rank 0 sends, rank 1 receives: each side's copies of the payload */
            MPI_Gather(d, NCOUNT, MPI_UNSIGNED_LONG_LONG, all, NCOUNT, MPI_UNSIGNED_LONG_LONG, 0,
                       MPI_COMM_WORLD);
            if (rank != 0)
                continue;
            const unsigned long long *snd = all, *rcv = all + NCOUNT;
            unsigned long long delivered = (unsigned long long) N * sizes[k];
            int eager = snd[EAGER] >= N && rcv[ZCOPY] == 0 && rcv[LANDED] == 0;
            /* a host eager message: into the send slot, out of the receive buffer, by
             * design (no counter); otherwise a side's copy is its pack (the sender's: packed,
             * and device_copied for device data) or its landing copy (the receiver's:
             * landed_copied, and device_copied into device memory), counted once */
            unsigned long long sent = m == 0 && eager ? delivered
                : snd[PACKED] > snd[DEVICE] ? snd[PACKED] : snd[DEVICE];
            unsigned long long got = m == 0 && eager ? delivered
                : rcv[LANDED] > rcv[DEVICE] ? rcv[LANDED] : rcv[DEVICE];
            printf("%s,%zu,%d,%llu,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.2f,%llu,%llu\n",
                   m ? "device" : "host", sizes[k], N, delivered, eager ? "eager" : "rndv",
                   snd[PACKED], snd[DEVICE], rcv[LANDED], rcv[DEVICE], rcv[ZCOPY], sent, got,
                   (double) (sent + got) / (double) delivered, snd[STAGED], rcv[STAGED]);
            fflush(stdout);
        }
    }
    if (gpu)
        cu.free(dev);
    free(host);
    MPI_T_pvar_session_free(&s);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
