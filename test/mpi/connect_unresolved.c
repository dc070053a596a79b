/* A peer whose address does not resolve at first (issue 22's lazy connections; found as
 * an intermittent "address handle ... Connection timed out" at 8 ranks on 4 loaded
 * Soft-RoCE guests, where a guest can miss the kernel's 1-s ARP wait).  Rank 1's guest
 * turns ARP off on its interface for GDR_TEST_ARP_BLOCK_S seconds (default 6) right after
 * MPI_Init: it answers no ARP request and sends none.  Rank 0 forgets its neighbours and
 * talks to rank 1 at once, so its connection meets the kernel's address-resolution
 * timeout again and again.  The connection must wait for the address, then carry the
 * values; rank 0's MPI_T counter gdr_connect_address_retries must show the waits (else
 * the block did not happen and the test proves nothing).
 *
 * Runs only inside maint/rxe guests, one rank each (GDR_RXE_NODES >= 2, the interface is
 * vec0, ranks are root there): maint/check-rxe runs it with lazy connections. */
#include "gdr_mpi_test.h"

#include <unistd.h>

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

    gdr_test_set_context("blocking rank 1's address");
    if (rank == 1) {
        sh("ip link set dev vec0 arp off");
        sleep((unsigned) block_s);
        sh("ip link set dev vec0 arp on");
    } else {
        sleep(1);               /* rank 1 has gone quiet by then */
        sh("ip neigh flush dev vec0");
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
        gdr_check_long("the address was retried (rank 1 answered no ARP at first)", 0, 1,
                       retries > 0);

    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
