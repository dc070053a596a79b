/*
 * rma_lat: one-sided latency between rank 0 and rank 1, for the side-by-side tables of
 * bench/raw-verbs (peer: any MPI, e.g. Debian's MPICH ch4:ucx over rxe).
 *
 *   mpiexec -n 2 rma_lat [-t TOOL] [-i ITERS] [-m MAX_BYTES]
 *
 * Rank 0 times, per message size, ITERS repetitions of
 *   put      MPI_Put + MPI_Win_flush            (passive target, MPI_Win_lock_all)
 *   get      MPI_Get + MPI_Win_flush
 *   acc      MPI_Accumulate(MPI_SUM, MPI_INT64_T) + MPI_Win_flush
 *   fop      MPI_Fetch_and_op(MPI_SUM, MPI_INT64_T) + MPI_Win_flush   (8 bytes only)
 *   cas      MPI_Compare_and_swap(MPI_INT64_T) + MPI_Win_flush         (8 bytes only)
 *   sendrecv half of a MPI_Send/MPI_Recv round trip
 * and prints CSV rows "benchmark,bytes,latency_us,bandwidth_MBps,tool,p50_us" (no header):
 * latency_us is the mean over ITERS, p50_us the median, bandwidth_MBps = bytes / mean (1e6 B/s).
 * Rank 1 is passive except for the send/recv round trips.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum op { OP_PUT, OP_GET, OP_ACC, OP_FOP, OP_CAS };
static const char *const op_name[] = {"mpi_put", "mpi_get", "mpi_acc", "mpi_fetch_op", "mpi_cas"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean and median of the per-iteration times t[0..n). */
struct lat {
    double mean, median;
};

static struct lat summarize(double *t, int n)
{
    struct lat s = {0.0, 0.0};

    for (int i = 0; i < n; i++)
        s.mean += t[i];
    s.mean /= n;
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    s.median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2.0;
    return s;
}

static struct lat time_rma(enum op op, MPI_Win win, char *buf, char *res, int bytes, int iters,
                            double *t)
{
    int count = bytes / 8;
    int64_t one = 1, cmp = 0;
    double t0 = 0.0;

    for (int i = -iters / 10 - 1; i < iters; i++) {   /* negative i: warm-up */
        t0 = MPI_Wtime();
        switch (op) {
        case OP_PUT: MPI_Put(buf, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, win); break;
        case OP_GET: MPI_Get(buf, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, win); break;
        case OP_ACC:
            MPI_Accumulate(buf, count, MPI_INT64_T, 1, 0, count, MPI_INT64_T, MPI_SUM, win);
            break;
        case OP_FOP: MPI_Fetch_and_op(&one, res, MPI_INT64_T, 1, 0, MPI_SUM, win); break;
        case OP_CAS: MPI_Compare_and_swap(&one, &cmp, res, MPI_INT64_T, 1, 0, win); break;
        }
        MPI_Win_flush(1, win);
        if (i >= 0)
            t[i] = MPI_Wtime() - t0;
    }
    return summarize(t, iters);
}

static struct lat time_sendrecv(int rank, char *buf, int bytes, int iters, double *t)
{
    double t0;

    for (int i = -iters / 10 - 1; i < iters; i++) {
        t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
        }
        if (i >= 0)
            t[i] = (MPI_Wtime() - t0) / 2.0;
    }
    return summarize(t, iters);
}

static void row(const char *bench, int bytes, struct lat s, const char *tool)
{
    printf("%s,%d,%.2f,%.2f,%s,%.2f\n", bench, bytes, s.mean * 1e6,
           s.mean > 0 ? bytes / s.mean / 1e6 : 0.0, tool, s.median * 1e6);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *tool = "peer";
    int iters = 200, max_bytes = 65536, rank, size, opt;
    MPI_Win win;
    char *base, *buf, res[8];
    double *t;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "t:i:m:")) != -1) {
        switch (opt) {
        case 't': tool = optarg; break;
        case 'i': iters = atoi(optarg); break;
        case 'm': max_bytes = atoi(optarg); break;
        default:
            if (rank == 0)
                fprintf(stderr, "usage: rma_lat [-t TOOL] [-i ITERS] [-m MAX_BYTES]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (size != 2 || iters < 1 || max_bytes < 8) {
        if (rank == 0)
            fprintf(stderr, "rma_lat: needs exactly 2 ranks, -i >= 1 and -m >= 8 (got %d ranks)\n",
                    size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    buf = malloc((size_t)max_bytes);
    t = malloc((size_t)iters * sizeof *t);
    if (!buf || !t)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, 1, (size_t)max_bytes);
    MPI_Win_allocate(max_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, (size_t)max_bytes);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    if (rank == 0) {
        for (enum op op = OP_PUT; op <= OP_CAS; op++) {
            int top = op >= OP_FOP ? 8 : max_bytes;
            for (int bytes = 8; bytes <= top; bytes *= 8)
                row(op_name[op], bytes, time_rma(op, win, buf, res, bytes, iters, t), tool);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int bytes = 8; bytes <= max_bytes; bytes *= 8) {
        struct lat s = time_sendrecv(rank, buf, bytes, iters, t);
        if (rank == 0)
            row("mpi_sendrecv_half_rtt", bytes, s, tool);
    }
    MPI_Win_free(&win);
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}
