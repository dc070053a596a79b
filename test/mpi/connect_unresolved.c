/* A peer whose address does not resolve at first (issue 22's lazy connections; found as
 * an intermittent "address handle ... Connection timed out" at 8 ranks on 4 loaded
 * Soft-RoCE guests, where a guest can miss the kernel's 1-s ARP wait).  Right after
 * MPI_Init rank 0 forgets its guest's neighbours and lets that guest send no ARP request
 * for GDR_TEST_ARP_BLOCK_S seconds (default 6; vec0's ARP solicitation counts set to 0,
 * restored by a background shell), then talks to rank 1: every resolution of rank 1's
 * address times out, as an unanswered one does.  All of it on rank 0's own guest, in
 * order, so the block cannot miss.  The connection must wait for the address, then carry
 * the values; rank 0's MPI_T counter gdr_connect_address_retries must show the waits.
 *
 * Runs only inside maint/rxe guests, one rank each (GDR_RXE_NODES >= 2, the interface is
 * vec0, ranks are root there): maint/check-rxe runs it with lazy connections. */
#include "gdr_mpi_test.h"

static void sh(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0)
        gdr_test_fail("'%s' exited with %d (needs root and iproute2 in a maint/rxe guest)", cmd,
                      rc);
}

int main(int argc, char **argv)
{
    int rank, nranks, provided;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *nodes = getenv("GDR_RXE_NODES");
    if (nranks != 2 || nodes == NULL || atoi(nodes) < 2)
        gdr_test_die("connect_unresolved runs as 2 ranks on 2 maint/rxe guests", MPI_ERR_OTHER);
    const char *b = getenv("GDR_TEST_ARP_BLOCK_S");
    int block_s = b != NULL && atoi(b) > 0 ? atoi(b) : 6;
    MPI_T_pvar_session session;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    unsigned long long conns = 0, retries = 0;

    /* no queue pair yet: the first exchange below makes the connection */
    gdr_test_set_context("after MPI_Init (lazy connections)");
    if (gdr_pvar_read(session, "gdr_connections", &conns) != 0)
        gdr_test_fail("MPI_T has no gdr_connections");
    gdr_check_long("queue pairs to other ranks", 0, 0, (long long) conns);

    gdr_test_set_context("blocking rank 1's address at rank 0");
    if (rank == 0) {
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "cd /proc/sys/net/ipv4/neigh/vec0 && m=$(cat mcast_solicit) "
                 "&& u=$(cat ucast_solicit) && echo 0 > mcast_solicit && echo 0 > ucast_solicit "
                 "&& ip neigh flush dev vec0 && { (sleep %d; echo $m > mcast_solicit; "
                 "echo $u > ucast_solicit) > /dev/null 2>&1 & }", block_s);
        sh(cmd);
    }

    int partner = 1 - rank, got = -1, mine = 1000 + rank;
    MPI_Sendrecv(&mine, 1, MPI_INT, partner, 1, &got, 1, MPI_INT, partner, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    gdr_test_set_context("first exchange");
    gdr_check_long("value from the partner", 0, 1000 + partner, got);
    if (gdr_pvar_read(session, "gdr_connections", &conns) != 0
        || gdr_pvar_read(session, "gdr_connect_address_retries", &retries) != 0)
        gdr_test_fail("MPI_T has no gdr_connections or gdr_connect_address_retries");
    gdr_check_long("queue pairs to other ranks", 0, 1, (long long) conns);
    if (rank == 0)
        gdr_check_long("the address was retried (no ARP from rank 0's guest at first)", 0, 1,
                       retries > 0);

    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
