/* The eager limit of gdr's active-message channel: 16 KiB of payload travel in one
 * eager buffer with MPIDIG's headers beside them, more by rendezvous (the receiver
 * reads the payload with RDMA READ).  Values are read back at every size; around the
 * limit: a 16-KiB send and a 64-KiB one, a 16-KiB Accumulate and a 16-KiB
 * Get_accumulate whose result comes back in the reply, under fence.
 *
 * With GDR_TEST_EXPECT_NATIVE=1 (maint/check-rxe: one rank per guest, NOLOCAL) it also
 * asserts, through MPI_T gdr_am_eager_sent and gdr_am_rndv_sent, that the 16-KiB
 * messages (and Get_accumulate's 16-KiB reply) went eagerly and the 64-KiB send by
 * rendezvous.  With a 16-KiB eager buffer (before MPICH patch 0019 let it grow) the
 * 16-KiB ones went by rendezvous.  Ranks pair up (0-1, 2-3, ...); an odd last rank
 * only takes part in the collective calls. */
#include "gdr_mpi_test.h"

#define KIB16 16384
#define NDBL (KIB16 / (int) sizeof(double))
#define BIG (64 * 1024)

static int rank, nranks;
static MPI_T_pvar_session session;

static unsigned long long pvar(const char *name)
{
    return gdr_pvar_value(session, name);
}

/* The job's total of a counter (every rank calls it). */
static unsigned long long job_pvar(const char *name)
{
    unsigned long long mine = pvar(name), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

static int partner(void)
{
    int p = rank ^ 1;
    return p < nranks ? p : MPI_PROC_NULL;
}

/* A send of n bytes from the even rank of each pair to the odd one, checked there. */
static void send_bytes(int n)
{
    unsigned char *buf = malloc((size_t) n);
    int peer = partner();
    gdr_test_set_context("MPI_Send of %d bytes", n);
    if (peer != MPI_PROC_NULL && rank % 2 == 0) {
        for (int i = 0; i < n; i++)
            buf[i] = (unsigned char) (i * 7 + rank);
        GDR_CHECK_MPI(MPI_Send(buf, n, MPI_BYTE, peer, 5, MPI_COMM_WORLD));
    } else if (peer != MPI_PROC_NULL) {
        memset(buf, 0, (size_t) n);
        GDR_CHECK_MPI(MPI_Recv(buf, n, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < n; i++)
            if (gdr_check_long("byte received", i, (unsigned char) (i * 7 + peer), buf[i]))
                break;
    }
    free(buf);
}

/* 16 KiB of doubles accumulated into the partner's window, and a 16-KiB Get_accumulate
 * whose result (the window before it) comes back in the target's reply. */
static void accumulates(void)
{
    double *base, *origin = malloc(KIB16), *result = malloc(KIB16);
    MPI_Win win;
    GDR_CHECK_MPI(MPI_Win_allocate(KIB16, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                                   &base, &win));
    for (int i = 0; i < NDBL; i++)
        base[i] = 1000.0 * rank + i;
    int peer = partner();
    for (int i = 0; i < NDBL; i++)
        origin[i] = 0.5 * i + rank;

    gdr_test_set_context("Accumulate of 16 KiB under fence");
    GDR_CHECK_MPI(MPI_Win_fence(0, win));
    if (peer != MPI_PROC_NULL)
        GDR_CHECK_MPI(MPI_Accumulate(origin, NDBL, MPI_DOUBLE, peer, 0, NDBL, MPI_DOUBLE,
                                     MPI_SUM, win));
    GDR_CHECK_MPI(MPI_Win_fence(0, win));
    if (peer != MPI_PROC_NULL)
        for (int i = 0; i < NDBL; i++)
            if (gdr_check_double("window after Accumulate", i,
                                 1000.0 * rank + i + 0.5 * i + peer, base[i]))
                break;
    /* every rank done reading its window before the partner's Get_accumulate may change it */
    GDR_CHECK_MPI(MPI_Win_fence(0, win));

    gdr_test_set_context("Get_accumulate of 16 KiB under fence");
    for (int i = 0; i < NDBL; i++)
        result[i] = -1.0;
    if (peer != MPI_PROC_NULL)
        GDR_CHECK_MPI(MPI_Get_accumulate(origin, NDBL, MPI_DOUBLE, result, NDBL, MPI_DOUBLE,
                                         peer, 0, NDBL, MPI_DOUBLE, MPI_SUM, win));
    GDR_CHECK_MPI(MPI_Win_fence(0, win));
    if (peer != MPI_PROC_NULL)
        for (int i = 0; i < NDBL; i++) {
            double before = 1000.0 * peer + i + 0.5 * i + rank;        /* after its Accumulate */
            if (gdr_check_double("Get_accumulate's result", i, before, result[i]) ||
                gdr_check_double("window after Get_accumulate", i,
                                 1000.0 * rank + i + 2 * (0.5 * i + peer), base[i]))
                break;
        }
    GDR_CHECK_MPI(MPI_Win_free(&win));
    free(origin);
    free(result);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    int expect_net = gdr_test_expect_native();
    int pairs = nranks / 2;

    /* connections first, so that the phases below count only their own messages */
    send_bytes(8);
    MPI_Barrier(MPI_COMM_WORLD);

    unsigned long long rndv0 = job_pvar("gdr_am_rndv_sent");
    unsigned long long eager0 = job_pvar("gdr_am_eager_sent");
    send_bytes(KIB16);
    unsigned long long rndv1 = job_pvar("gdr_am_rndv_sent");
    unsigned long long eager1 = job_pvar("gdr_am_eager_sent");
    send_bytes(BIG);
    unsigned long long rndv2 = job_pvar("gdr_am_rndv_sent");
    if (expect_net) {
        gdr_test_set_context("MPI_T counters, sends");
        gdr_check_long("16-KiB sends by rendezvous (job)", 0, 0, (long long) (rndv1 - rndv0));
        gdr_check_long("16-KiB sends sent eagerly (job, at least one a pair)", 0, 1,
                       eager1 - eager0 >= (unsigned long long) pairs);
        gdr_check_long("64-KiB sends by rendezvous (job, one a pair)", 0, pairs,
                       (long long) (rndv2 - rndv1));
    }

    unsigned long long acc0 = job_pvar("gdr_rma_acc_am") + job_pvar("gdr_rma_get_acc_am");
    rndv0 = job_pvar("gdr_am_rndv_sent");
    accumulates();
    rndv1 = job_pvar("gdr_am_rndv_sent");
    unsigned long long acc1 = job_pvar("gdr_rma_acc_am") + job_pvar("gdr_rma_get_acc_am");
    if (expect_net) {
        gdr_test_set_context("MPI_T counters, accumulates");
        gdr_check_long("16-KiB accumulates as active messages (job)", 0, 2L * 2 * pairs,
                       (long long) (acc1 - acc0));
        gdr_check_long("16-KiB accumulates and their replies by rendezvous (job)", 0, 0,
                       (long long) (rndv1 - rndv0));
    }

    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
