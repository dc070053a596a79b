/* dynproc_self: MPI_Comm_connect/accept between two groups of one job (mpi4py's
 * test_dynproc does this with the halves of MPI_COMM_WORLD), over the verbs channel.
 *
 * The even ranks accept, the odd ranks connect; the port name goes from world rank 0 to
 * world rank 1 over MPI_COMM_WORLD.  With two ranks per guest and MPIR_CVAR_NOLOCAL=0 the
 * two roots share a node: their dynamic messages go through the NIC's loopback while
 * MPICH's shared memory carries the job's other traffic between them.  Checks: the
 * intercommunicator's sizes, a value from every process of each side to every process of
 * the other (MPI_Sendrecv), an intercommunicator MPI_Allreduce, MPI_Intercomm_merge and
 * an MPI_Allreduce over the merged communicator, twice (a second port, a second
 * connection between the same processes), then MPI_Comm_disconnect and MPI_Close_port.
 * Needs an even number of ranks and an RDMA device on every node (maint/check-rxe). */
#include "gdr_mpi_test.h"

static void round_trip(int round)
{
    int wrank, wsize, lrank, lsize, rsize = -1;
    MPI_Comm half, inter, merged;
    char port[MPI_MAX_PORT_NAME] = "";

    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int side = wrank % 2;       /* 0 accepts, 1 connects */
    MPI_Comm_split(MPI_COMM_WORLD, side, wrank, &half);
    MPI_Comm_rank(half, &lrank);
    MPI_Comm_size(half, &lsize);

    gdr_test_set_context("round %d: port", round);
    if (wrank == 0)
        GDR_CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
    if (wrank == 0)
        MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
    else if (wrank == 1)
        MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    gdr_test_set_context("round %d: %s", round, side ? "MPI_Comm_connect" : "MPI_Comm_accept");
    if (side == 0)
        GDR_CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    else
        GDR_CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    GDR_CHECK_MPI(MPI_Comm_remote_size(inter, &rsize));
    gdr_check_long("remote size", 0, wsize - lsize, rsize);

    gdr_test_set_context("round %d: point-to-point over the intercommunicator", round);
    for (int r = 0; r < rsize; r++) {
        long mine = 1000000L * round + 1000L * (side * 100 + lrank) + r, theirs = -1;
        GDR_CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_LONG, r, 11, &theirs, 1, MPI_LONG, r, 11,
                                   inter, MPI_STATUS_IGNORE));
        gdr_check_long("value from the other side", r,
                       1000000L * round + 1000L * ((1 - side) * 100 + r) + lrank, theirs);
    }

    gdr_test_set_context("round %d: intercommunicator MPI_Allreduce", round);
    long one = side ? 100 : 1, sum = 0;
    GDR_CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, inter));
    gdr_check_long("the other side's sum", 0, (long) rsize * (side ? 1 : 100), sum);

    gdr_test_set_context("round %d: MPI_Intercomm_merge", round);
    GDR_CHECK_MPI(MPI_Intercomm_merge(inter, side, &merged));
    sum = 0;
    GDR_CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, merged));
    gdr_check_long("merged sum", 0, (long) (wsize - wsize / 2) * 1 + (long) (wsize / 2) * 100,
                   sum);
    MPI_Comm_free(&merged);
    GDR_CHECK_MPI(MPI_Comm_disconnect(&inter));
    if (wrank == 0)
        GDR_CHECK_MPI(MPI_Close_port(port));
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    int wsize;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2 || wsize % 2 != 0) {
        gdr_test_fail("needs an even number of ranks, got %d", wsize);
    } else {
        round_trip(1);
        round_trip(2);
    }
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
