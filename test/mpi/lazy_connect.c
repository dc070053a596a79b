/* Lazy connections and the shared receive queue (issue 22), values checked.  Ranks pair
 * up (0-1, 2-3, ...) and exchange messages, then ranks 0 and 3 send bursts to rank 2; the
 * MPI_T counters say which queue pairs exist.  Over Soft-RoCE with every rank its own
 * node (check-rxe), GDR_TEST_EXPECT_CONNECT says what must be seen:
 * - lazy: no queue pair after MPI_Init; exactly one per partner after the pairs talk; rank
 *   0 and rank 2 one more after the bursts, the others none; each connection grew the
 *   shared receive queue by MPIR_CVAR_CH4_GDR_RECV_DEPTH buffers, never past
 *   MPIR_CVAR_CH4_GDR_SRQ_DEPTH;
 *   (lazy mode needs exactly 4 ranks: the ranks wait for each other's counts before
 *   MPI_Finalize, over the connections the test made);
 * - eager (MPIR_CVAR_CH4_GDR_LAZY_CONNECT=0): every pair connected in MPI_Init.
 * Without it (one node, shared memory) only the values are checked. */
#include "gdr_mpi_test.h"

#define BURST 300
#define BURST_INTS 256          /* 1 KiB messages: eager */

static MPI_T_pvar_session session;

static unsigned long long counter(const char *name)
{
    return gdr_pvar_value(session, name);
}

static long env_long(const char *name, long dflt)
{
    const char *e = getenv(name);
    return e != NULL && *e != '\0' ? atol(e) : dflt;
}

/* Connections now (conns, or up to most where a peer may already have asked), and the
 * receive buffers they must have brought. */
static void expect_range(const char *when, int mode_lazy, long conns, long most)
{
    long depth = env_long("MPIR_CVAR_CH4_GDR_RECV_DEPTH", 32);
    long cap = env_long("MPIR_CVAR_CH4_GDR_SRQ_DEPTH", 1024);
    if (cap < depth)
        cap = depth;
    long have = (long) counter("gdr_connections");
    gdr_test_set_context("%s connections, %s", mode_lazy ? "lazy" : "eager", when);
    if (have > conns && have <= most)
        conns = have;
    /* a connection under way (a peer's request answered, not yet confirmed) has its
     * receive buffers already: up to most connections' worth */
    long got = (long) counter("gdr_recv_buffers"), bufs = conns * depth < cap ? conns * depth : cap;
    long most_bufs = most * depth < cap ? most * depth : cap;
    if (got > bufs && got == most_bufs)
        bufs = got;
    gdr_check_long("queue pairs to other ranks", 0, conns, have);
    gdr_check_long("receive buffers (RECV_DEPTH per connection, at most SRQ_DEPTH)", 0, bufs, got);
}

static void expect(const char *when, int mode_lazy, long conns)
{
    expect_range(when, mode_lazy, conns, conns);
}

/* Lazy mode, 4 ranks: returns once every rank has counted its connections, passing only
 * over the connections the test made (1 -> 0 and 3 -> 2 "counted", 0 <-> 2, 0 -> 1 and
 * 2 -> 3 "go on").  Before it, nobody may ask anyone for a new one: MPI_Finalize's
 * barrier would (rank 1, done first, asked rank 3, which answered before it counted: one
 * connection's receive buffers more, 2026-11-29). */
static void all_counted(int rank)
{
    int token = rank, other = -1, partner = rank ^ 1;
    if (rank == 1 || rank == 3) {
        MPI_Send(&token, 1, MPI_INT, partner, 4, MPI_COMM_WORLD);
        MPI_Recv(&other, 1, MPI_INT, partner, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&other, 1, MPI_INT, partner, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&token, 1, MPI_INT, rank ^ 2, 6, &other, 1, MPI_INT, rank ^ 2, 6,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&token, 1, MPI_INT, partner, 5, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    int rank, nranks, provided;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    if (nranks < 4 || nranks % 2 != 0)
        gdr_test_die("lazy_connect needs an even number of ranks, at least 4", MPI_ERR_OTHER);
    const char *mode = getenv("GDR_TEST_EXPECT_CONNECT");
    int lazy = mode != NULL && strcmp(mode, "lazy") == 0;
    int eager = mode != NULL && strcmp(mode, "eager") == 0;
    if (lazy && nranks != 4)
        gdr_test_die("lazy_connect counts connections exactly with 4 ranks only",
                     MPI_ERR_OTHER);

    if (lazy)
        expect("after MPI_Init", 1, 0);
    if (eager)
        expect("after MPI_Init", 0, nranks - 1);

    /* the pairs talk: a value each way */
    int partner = rank ^ 1, got = -1, mine = 1000 + rank;
    MPI_Sendrecv(&mine, 1, MPI_INT, partner, 1, &got, 1, MPI_INT, partner, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    gdr_test_set_context("pairs");
    gdr_check_long("value from the partner", 0, 1000 + partner, got);
    /* rank 0 may already be asking rank 2 for the connection of its burst below */
    if (lazy)
        expect_range("after each rank talked with its partner", 1, 1, rank == 2 ? 2 : 1);

    /* ranks 0 and 3 flood rank 2 at once with eager messages, all sent before any is
     * received: up to twice RECV_DEPTH in flight to rank 2.  Where SRQ_DEPTH holds less
     * than that, rank 0 alone (more would meet the NIC's receiver-not-ready retries,
     * which Soft-RoCE serves at ~10 ms each: correct, but slow) */
    long depth = env_long("MPIR_CVAR_CH4_GDR_RECV_DEPTH", 32);
    int nsend = env_long("MPIR_CVAR_CH4_GDR_SRQ_DEPTH", 1024) >= 2 * depth ? 2 : 1;
    static int buf[2][BURST][BURST_INTS];
    if (rank == 0 || (rank == 3 && nsend == 2)) {
        MPI_Request req[BURST];
        for (int m = 0; m < BURST; m++) {
            for (int i = 0; i < BURST_INTS; i++)
                buf[0][m][i] = rank * 100000 + m * 7 + i;
            MPI_Isend(buf[0][m], BURST_INTS, MPI_INT, 2, 2, MPI_COMM_WORLD, &req[m]);
        }
        MPI_Waitall(BURST, req, MPI_STATUSES_IGNORE);
        /* the answer comes over the connection: both ends have it by then */
        MPI_Recv(&got, 1, MPI_INT, 2, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        gdr_test_set_context("burst to rank 2");
        gdr_check_long("rank 2's answer", 0, nsend * BURST, got);
    } else if (rank == 2) {
        static MPI_Request req[2 * BURST];
        const int from[2] = { 0, 3 };
        for (int m = 0; m < BURST; m++)
            for (int k = 0; k < nsend; k++)
                MPI_Irecv(buf[k][m], BURST_INTS, MPI_INT, from[k], 2, MPI_COMM_WORLD,
                          &req[nsend * m + k]);
        MPI_Waitall(nsend * BURST, req, MPI_STATUSES_IGNORE);
        gdr_test_set_context("burst from ranks 0 and 3 to rank 2");
        long bad = 0;
        for (int k = 0; k < nsend; k++)
            for (int m = 0; m < BURST; m++)
                for (int i = 0; i < BURST_INTS; i++)
                    bad += buf[k][m][i] != from[k] * 100000 + m * 7 + i;
        gdr_check_long("wrong ints in the bursts, in message order", 0, 0, bad);
        int answer = nsend * BURST;
        for (int k = 0; k < nsend; k++)
            MPI_Send(&answer, 1, MPI_INT, from[k], 3, MPI_COMM_WORLD);
    }
    /* rank 0 and rank 2 made one connection more; 3 already had 2, 1 talked to no one new */
    if (lazy) {
        expect("after the bursts to rank 2", 1, rank == 0 || rank == 2 ? 2 : 1);
        all_counted(rank);
    }
    if (lazy || eager) {
        gdr_test_set_context("handshakes");
        gdr_check_long("connection datagrams sent", 0, 1,
                       eager || counter("gdr_connect_handshakes") > 0);
        gdr_check_long("pinned bytes reported", 0, 1, counter("gdr_pinned_bytes") > 0);
    }

    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
