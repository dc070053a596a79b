/* pt2pt_coll: two-sided and collective sanity, values checked.
 *
 *   - MPI_Send/MPI_Recv of 0 B, 1 B, 16 kB (eager limit), 64 KiB, 4 and 16 MiB around the ring (eager
 *     and rendezvous sizes), every byte, the status source/tag and
 *     MPI_Get_count checked;
 *   - MPI_ANY_SOURCE: rank 0 receives one message from every other rank and
 *     checks each source exactly once;
 *   - MPI_Iprobe: polls for a message from the left neighbour, checks the
 *     probed status (source, tag, count) before receiving it;
 *   - MPI_Isend/MPI_Irecv to and from every rank, MPI_Waitall;
 *   - MPI_Bcast, MPI_Allreduce (SUM on int, MAX on double), MPI_Alltoall;
 *   - MPI_Barrier: nobody sends to rank 0 before the barrier, and rank 0 must
 *     not see such a message before it enters the barrier.
 * Any number of ranks >= 2.
 */
#include "gdr_mpi_test.h"

#define TAG_RING 11
#define TAG_ANY 12
#define TAG_PROBE 13
#define TAG_NB 14
#define TAG_BARRIER 15

static int me, n;

static unsigned char byte_val(int src, int size_idx, size_t i)
{
    return (unsigned char) (i * 7 + (size_t) src * 13 + (size_t) size_idx * 29 + 1);
}

static void check_status(const char *what, const MPI_Status *st, int src, int tag,
                         MPI_Datatype type, int count)
{
    int got = -1;
    gdr_check_long(what, 0, src, st->MPI_SOURCE);
    gdr_check_long(what, 1, tag, st->MPI_TAG);
    MPI_Get_count(st, type, &got);
    gdr_check_long(what, 2, count, got);
}

/* Ring: rank 0 sends first, every other rank receives before it sends, so
 * blocking calls cannot deadlock even at rendezvous sizes. */
static void send_recv_sizes(void)
{
    static const size_t sizes[] = { 0, 1, 16000, 64 * 1024, 4 * 1024 * 1024, 16 * 1024 * 1024 };
    int right = (me + 1) % n, left = (me + n - 1) % n;

    for (int s = 0; s < (int) (sizeof(sizes) / sizeof(sizes[0])); s++) {
        size_t len = sizes[s];
        unsigned char *out = malloc(len + 1), *in = malloc(len + 1);
        MPI_Status st;
        long bad = 0;

        if (!out || !in)
            gdr_test_die("malloc", MPI_ERR_NO_MEM);
        gdr_test_set_context("op=Send/Recv bytes=%zu", len);
        for (size_t i = 0; i <= len; i++) {
            out[i] = byte_val(me, s, i);
            in[i] = 0xEE;
        }
        if (me == 0) {
            gdr_check_mpi("MPI_Send", MPI_Send(out, (int) len, MPI_BYTE, right, TAG_RING,
                                               MPI_COMM_WORLD));
            gdr_check_mpi("MPI_Recv", MPI_Recv(in, (int) len, MPI_BYTE, left, TAG_RING,
                                               MPI_COMM_WORLD, &st));
        } else {
            gdr_check_mpi("MPI_Recv", MPI_Recv(in, (int) len, MPI_BYTE, left, TAG_RING,
                                               MPI_COMM_WORLD, &st));
            gdr_check_mpi("MPI_Send", MPI_Send(out, (int) len, MPI_BYTE, right, TAG_RING,
                                               MPI_COMM_WORLD));
        }
        check_status("status(source,tag,count)", &st, left, TAG_RING, MPI_BYTE, (int) len);
        for (size_t i = 0; i < len && bad < 5; i++)
            if (!gdr_check_long("received byte", (long) i, byte_val(left, s, i), in[i]))
                bad++;
        gdr_check_long("byte past the message", (long) len, 0xEE, in[len]);
        free(out);
        free(in);
    }
}

static void any_source(void)
{
    gdr_test_set_context("op=Recv(MPI_ANY_SOURCE)");
    if (me != 0) {
        int v = 1000 + me;
        gdr_check_mpi("MPI_Send", MPI_Send(&v, 1, MPI_INT, 0, TAG_ANY, MPI_COMM_WORLD));
        return;
    }
    char *seen = calloc((size_t) n, 1);
    for (int k = 1; k < n; k++) {
        int v = -1;
        MPI_Status st;
        gdr_check_mpi("MPI_Recv", MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, TAG_ANY,
                                           MPI_COMM_WORLD, &st));
        if (st.MPI_SOURCE < 1 || st.MPI_SOURCE >= n || seen[st.MPI_SOURCE]) {
            gdr_test_fail("message %d: unexpected or repeated source %d", k, st.MPI_SOURCE);
            continue;
        }
        seen[st.MPI_SOURCE] = 1;
        gdr_check_long("value from status.MPI_SOURCE", st.MPI_SOURCE, 1000 + st.MPI_SOURCE, v);
    }
    free(seen);
}

static void iprobe(void)
{
    enum { COUNT = 100 };
    int out[COUNT], in[COUNT], flag = 0, right = (me + 1) % n, left = (me + n - 1) % n;
    MPI_Request req;
    MPI_Status st;

    gdr_test_set_context("op=Iprobe");
    for (int i = 0; i < COUNT; i++) {
        out[i] = 10000 * me + i;
        in[i] = -1;
    }
    gdr_check_mpi("MPI_Isend", MPI_Isend(out, COUNT, MPI_INT, right, TAG_PROBE,
                                         MPI_COMM_WORLD, &req));
    /* no poll limit: a message that never shows is a hang, which mpiexec --timeout ends
     * (a limit was a timed assertion: 4 Soft-RoCE guests on 2 cores took 100M polls) */
    while (!flag)
        gdr_check_mpi("MPI_Iprobe", MPI_Iprobe(left, TAG_PROBE, MPI_COMM_WORLD, &flag, &st));
    check_status("probed status(source,tag,count)", &st, left, TAG_PROBE, MPI_INT, COUNT);
    gdr_check_mpi("MPI_Recv", MPI_Recv(in, COUNT, MPI_INT, left, TAG_PROBE, MPI_COMM_WORLD,
                                       &st));
    gdr_check_mpi("MPI_Wait", MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < COUNT; i++)
        gdr_check_long("received", i, 10000 * left + i, in[i]);
}

static void nonblocking(void)
{
    enum { COUNT = 257 };
    int *out = malloc(sizeof(int) * COUNT * (size_t) n);
    int *in = malloc(sizeof(int) * COUNT * (size_t) n);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t) n);
    MPI_Status *sts = malloc(sizeof(MPI_Status) * 2 * (size_t) n);

    if (!out || !in || !reqs || !sts)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    gdr_test_set_context("op=Isend/Irecv/Waitall");
    for (int p = 0; p < n; p++)
        for (int i = 0; i < COUNT; i++) {
            out[p * COUNT + i] = 100000 * me + 1000 * p + i;
            in[p * COUNT + i] = -1;
        }
    for (int p = 0; p < n; p++)
        gdr_check_mpi("MPI_Irecv", MPI_Irecv(in + p * COUNT, COUNT, MPI_INT, p, TAG_NB,
                                             MPI_COMM_WORLD, &reqs[p]));
    for (int p = 0; p < n; p++)
        gdr_check_mpi("MPI_Isend", MPI_Isend(out + p * COUNT, COUNT, MPI_INT, p, TAG_NB,
                                             MPI_COMM_WORLD, &reqs[n + p]));
    gdr_check_mpi("MPI_Waitall", MPI_Waitall(2 * n, reqs, sts));
    for (int p = 0; p < n; p++) {
        check_status("irecv status(source,tag,count)", &sts[p], p, TAG_NB, MPI_INT, COUNT);
        for (int i = 0; i < COUNT; i++)
            gdr_check_long("received", p * COUNT + i, 100000 * p + 1000 * me + i,
                           in[p * COUNT + i]);
    }
    free(out);
    free(in);
    free(reqs);
    free(sts);
}

static void collectives(void)
{
    enum { COUNT = 1000, K = 3 };
    int buf[COUNT], sum[COUNT];
    double dmax = -1.0, dval = 0.5 * me;
    int root = 1 % n;

    gdr_test_set_context("op=Bcast root=%d", root);
    for (int i = 0; i < COUNT; i++)
        buf[i] = me == root ? 7 * i + 3 : -1;
    gdr_check_mpi("MPI_Bcast", MPI_Bcast(buf, COUNT, MPI_INT, root, MPI_COMM_WORLD));
    for (int i = 0; i < COUNT; i++)
        gdr_check_long("bcast buffer", i, 7 * i + 3, buf[i]);

    gdr_test_set_context("op=Allreduce(SUM,INT)");
    for (int i = 0; i < COUNT; i++)
        buf[i] = (me + 1) * i;
    gdr_check_mpi("MPI_Allreduce", MPI_Allreduce(buf, sum, COUNT, MPI_INT, MPI_SUM,
                                                 MPI_COMM_WORLD));
    for (int i = 0; i < COUNT; i++)
        gdr_check_long("sum", i, (long long) i * n * (n + 1) / 2, sum[i]);

    gdr_test_set_context("op=Allreduce(MAX,DOUBLE)");
    gdr_check_mpi("MPI_Allreduce", MPI_Allreduce(&dval, &dmax, 1, MPI_DOUBLE, MPI_MAX,
                                                 MPI_COMM_WORLD));
    gdr_check_double("max", 0, 0.5 * (n - 1), dmax);

    gdr_test_set_context("op=Alltoall");
    int *send = malloc(sizeof(int) * K * (size_t) n), *recv = malloc(sizeof(int) * K * (size_t) n);
    if (!send || !recv)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    for (int p = 0; p < n; p++)
        for (int k = 0; k < K; k++) {
            send[p * K + k] = 1000 * me + 10 * p + k;
            recv[p * K + k] = -1;
        }
    gdr_check_mpi("MPI_Alltoall", MPI_Alltoall(send, K, MPI_INT, recv, K, MPI_INT,
                                               MPI_COMM_WORLD));
    for (int p = 0; p < n; p++)
        for (int k = 0; k < K; k++)
            gdr_check_long("alltoall block", p * K + k, 1000 * p + 10 * me + k, recv[p * K + k]);
    free(send);
    free(recv);
}

static void barrier(void)
{
    gdr_test_set_context("op=Barrier");
    if (me == 0) {
        /* Give the others time to (wrongly) get past the barrier and send. */
        int flag = 0;
        double until = MPI_Wtime() + 0.01;
        while (MPI_Wtime() < until && !flag)
            MPI_Iprobe(MPI_ANY_SOURCE, TAG_BARRIER, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (flag)
            gdr_test_fail("a message sent after MPI_Barrier arrived before rank 0 entered it");
    }
    gdr_check_mpi("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
    if (me != 0) {
        int v = me;
        gdr_check_mpi("MPI_Send", MPI_Send(&v, 1, MPI_INT, 0, TAG_BARRIER, MPI_COMM_WORLD));
    } else {
        for (int k = 1; k < n; k++) {
            int v = -1;
            MPI_Status st;
            gdr_check_mpi("MPI_Recv", MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, TAG_BARRIER,
                                               MPI_COMM_WORLD, &st));
            gdr_check_long("value from status.MPI_SOURCE", st.MPI_SOURCE, st.MPI_SOURCE, v);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (n < 2) {
        fprintf(stderr, "pt2pt_coll: needs 2 or more ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    send_recv_sizes();
    any_source();
    iprobe();
    nonblocking();
    collectives();
    barrier();

    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs ? 1 : 0;
}
