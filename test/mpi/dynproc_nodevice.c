/* dynproc_nodevice: connect/accept inside one job where gdr may have no RDMA channel.
 *
 * Rank 0 opens a port and hands its name to rank 1; rank 0 accepts, rank 1 connects, both
 * with MPI_ERRORS_RETURN.  Where this process has gdr's channel (MPI_T gdr_pinned_bytes > 0:
 * an RDMA device, as in maint/check-rxe) the intercommunicator must work: a value each way,
 * checked, and then a connect nobody accepts fails with MPI_ERR_PORT after the info key
 * "timeout" (3 s) and the program still finalizes.  Where it has none (the host's mpi-local tier: no device) both calls must fail
 * at once, not hang, with MPI_ERR_SPAWN or MPI_ERR_PORT and a message that says an RDMA
 * device is needed; MPI_Close_port still works, and the job goes on (a barrier, a value over
 * MPI_COMM_WORLD).  Exactly 2 ranks. */
#include "gdr_mpi_test.h"

static int has_channel(void)
{
    int provided;
    MPI_T_pvar_session session;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    unsigned long long pinned = gdr_pvar_value(session, "gdr_pinned_bytes");
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    return pinned > 0;
}

int main(int argc, char **argv)
{
    int me, n;
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter = MPI_COMM_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (n != 2) {
        gdr_test_fail("needs exactly 2 ranks (%d)", n);
        gdr_test_finish();
        MPI_Finalize();
        return 0;
    }
    int channel = has_channel();
    gdr_test_set_context("MPI_Open_port");
    if (me == 0)
        GDR_CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
    MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);

    gdr_test_set_context("%s (%s)", me == 0 ? "MPI_Comm_accept" : "MPI_Comm_connect",
                         channel ? "with gdr's channel" : "without an RDMA channel");
    int rc = me == 0 ? MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter)
        : MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
    if (channel) {
        if (gdr_check_mpi(me == 0 ? "MPI_Comm_accept" : "MPI_Comm_connect", rc)) {
            long mine = 4000 + me, theirs = -1;
            GDR_CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_LONG, 0, 3, &theirs, 1, MPI_LONG, 0, 3,
                                       inter, MPI_STATUS_IGNORE));
            gdr_check_long("value over the intercommunicator", 0, 4000 + (1 - me), theirs);
            GDR_CHECK_MPI(MPI_Comm_disconnect(&inter));
        }
        /* a connect nobody accepts: MPI_ERR_PORT after the info key's timeout, and the
         * program goes on and finalizes (rank 0 waits in the barrier below meanwhile) */
        gdr_test_set_context("MPI_Comm_connect to a port nobody accepts on (timeout 3 s)");
        if (me == 1) {
            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, "timeout", "3");
            MPI_Comm never = MPI_COMM_NULL;
            int rc2 = MPI_Comm_connect(port, info, 0, MPI_COMM_SELF, &never), cls = -1;
            MPI_Error_class(rc2, &cls);
            if (rc2 == MPI_SUCCESS || cls != MPI_ERR_PORT)
                gdr_test_fail("returned %d (class %d), not MPI_ERR_PORT", rc2, cls);
            MPI_Info_free(&info);
        }
    } else {
        int cls = -1, len = 0;
        char msg[MPI_MAX_ERROR_STRING] = "";
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        if (rc == MPI_SUCCESS)
            gdr_test_fail("succeeded without an RDMA channel");
        else if (cls != MPI_ERR_SPAWN && cls != MPI_ERR_PORT)
            gdr_test_fail("error class %d, not MPI_ERR_SPAWN or MPI_ERR_PORT: %s", cls, msg);
        else if (me == 0 && strstr(msg, "RDMA device") == NULL)
            /* the accepting side fails in gdr itself; the connecting side may see MPICH's
             * "connect failed" around gdr's reason */
            gdr_test_fail("the message does not say an RDMA device is needed: %s", msg);
    }
    gdr_test_set_context("after connect/accept");
    if (me == 0)
        GDR_CHECK_MPI(MPI_Close_port(port));
    long v = me == 0 ? 77 : 0;
    GDR_CHECK_MPI(MPI_Bcast(&v, 1, MPI_LONG, 0, MPI_COMM_WORLD));
    gdr_check_long("MPI_COMM_WORLD still works", 0, 77, v);
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
