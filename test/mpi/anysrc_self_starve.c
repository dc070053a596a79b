/* anysrc_self_starve (issue 72, item 1): a rank that keeps sending to itself still receives
 * from the network.
 *
 * Reduced from OSHMPI's active-message atomics (a PE spinning on an atomic fetch of its own
 * variable sends itself a request each time while another PE's atomic set arrives from
 * another node; SOS unit/set_fetch and unit/test_lock_cswap hung): rank 1 keeps one
 * MPI_Irecv(MPI_ANY_SOURCE, tag 7) posted and feeds it MPI_Isends to itself, reposting both
 * each time the receive completes, polling with MPI_Test; rank 0 sends one tag-7 message
 * 0.5 s after a barrier.  Rank 1's own messages go through MPICH's shared memory even with
 * MPIR_CVAR_NOLOCAL=1, and CH4 polls the netmod only in passes where shared memory made no
 * progress: before gdr's progress guard, rank 0's message never matched (20 s, 930,000
 * self-messages over Soft-RoCE).  Twice: an eager message (one long) and a rendezvous one
 * (64 KiB, which rank 1 must also read and acknowledge while it feeds itself).
 *
 * Checked: rank 0's message matches within LIMIT_S of the barrier, with its source, count
 * and every value; the self-messages arrive in order (non-overtaking) with their values;
 * and, where every rank is remote (GDR_TEST_EXPECT_NATIVE=1, maint/check-rxe), that the
 * guard did run (MPI_T gdr_progress_guard_rounds > 0 on rank 1: the run reproduced the
 * starvation).  On one node without NOLOCAL both sources are shared memory and it passes
 * trivially.  After LIMIT_S rank 1 stops feeding and waits, so a failure still ends.
 * Two or more ranks (ranks above 1 only take part in the barriers). */
#define _GNU_SOURCE
#include "gdr_mpi_test.h"
#include <unistd.h>

#define TAG 7
#define BIG 8192                /* longs: 64 KiB, above gdr's 16-KiB eager limit */
#define DELAY_US 500000         /* rank 0 sends this long after the barrier */
#define LIMIT_S 10.0

static long remote_val(long i)
{
    return 1000003L * (i + 1) + 17;
}

/* rank 0 */
static void send_late(long count)
{
    long *out = malloc(sizeof(long) * (size_t) count);
    if (out == NULL)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    for (long i = 0; i < count; i++)
        out[i] = remote_val(i);
    usleep(DELAY_US);
    GDR_CHECK_MPI(MPI_Send(out, (int) count, MPI_LONG, 1, TAG, MPI_COMM_WORLD));
    free(out);
}

/* rank 1: what one completed receive held; returns 1 when it was rank 0's message */
static int received(const MPI_Status *st, const long *buf, long remote_count, long *seq_got)
{
    int got = -1;
    MPI_Get_count(st, MPI_LONG, &got);
    if (st->MPI_SOURCE == 0) {
        gdr_check_long("remote message: count", 0, remote_count, got);
        for (long i = 0; i < remote_count && i < got; i++)
            if (!gdr_check_long("remote message", i, remote_val(i), buf[i]))
                break;
        return 1;
    }
    gdr_check_long("self-message: source", 0, 1, st->MPI_SOURCE);
    gdr_check_long("self-message: count", 0, 1, got);
    gdr_check_long("self-message: sequence", *seq_got, *seq_got, buf[0]);
    (*seq_got)++;
    return 0;
}

/* rank 1: t0 is when it left the barrier */
static void feed_self(long remote_count, double t0)
{
    long *buf = malloc(sizeof(long) * BIG);
    long seq_sent = 0, seq_got = 0, out = 0;
    int remote = 0;
    MPI_Request rreq, sreq;
    MPI_Status st;
    if (buf == NULL)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);

    GDR_CHECK_MPI(MPI_Irecv(buf, BIG, MPI_LONG, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, &rreq));
    out = seq_sent++;
    GDR_CHECK_MPI(MPI_Isend(&out, 1, MPI_LONG, 1, TAG, MPI_COMM_WORLD, &sreq));
    double waited = 0;
    while (!remote) {
        int done = 0;
        GDR_CHECK_MPI(MPI_Test(&rreq, &done, &st));
        waited = MPI_Wtime() - t0;
        if (!done) {
            if (waited > LIMIT_S)
                break;
            continue;
        }
        remote = received(&st, buf, remote_count, &seq_got);
        if (remote)
            break;
        /* the self-message matched: send the next and receive again */
        GDR_CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        GDR_CHECK_MPI(MPI_Irecv(buf, BIG, MPI_LONG, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD,
                                &rreq));
        out = seq_sent++;
        GDR_CHECK_MPI(MPI_Isend(&out, 1, MPI_LONG, 1, TAG, MPI_COMM_WORLD, &sreq));
    }
    if (!remote) {
        gdr_test_fail("rank 0's message (%ld longs) not matched %.1f s after the barrier "
                      "(sent at %.1f s), after %ld self-messages", remote_count, waited,
                      DELAY_US * 1e-6, seq_got);
        /* stop feeding and wait for what is still posted, so that the job ends */
        while (!remote) {
            GDR_CHECK_MPI(MPI_Wait(&rreq, &st));
            remote = received(&st, buf, remote_count, &seq_got);
            if (!remote) {
                GDR_CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
                GDR_CHECK_MPI(MPI_Irecv(buf, BIG, MPI_LONG, MPI_ANY_SOURCE, TAG,
                                        MPI_COMM_WORLD, &rreq));
            }
        }
    } else if (getenv("GDR_TEST_TRACE") != NULL) {
        fprintf(stderr, "rank 1: %ld longs from rank 0 matched %.3f s after the barrier, "
                "after %ld self-messages\n", remote_count, waited, seq_got);
    }
    /* the last self-message is still on its way to a receive */
    if (sreq != MPI_REQUEST_NULL && seq_got < seq_sent) {
        GDR_CHECK_MPI(MPI_Recv(buf, BIG, MPI_LONG, 1, TAG, MPI_COMM_WORLD, &st));
        received(&st, buf, remote_count, &seq_got);
    }
    GDR_CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    gdr_check_long("self-messages received", 0, seq_sent, seq_got);
    free(buf);
}

int main(int argc, char **argv)
{
    int me, n, provided;
    MPI_T_pvar_session session;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    if (n < 2) {
        if (me == 0)
            fprintf(stderr, "anysrc_self_starve needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    static const long counts[] = { 1, BIG };
    for (int k = 0; k < 2; k++) {
        gdr_test_set_context("ANY_SOURCE receive fed by self-sends, %ld long(s) from rank 0",
                             counts[k]);
        GDR_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        double t0 = MPI_Wtime();
        if (me == 0)
            send_late(counts[k]);
        else if (me == 1)
            feed_self(counts[k], t0);
    }

    gdr_test_set_context("progress guard");
    if (me == 1 && gdr_test_expect_native()) {
        unsigned long long rounds = gdr_pvar_value(session, "gdr_progress_guard_rounds");
        if (rounds == 0)
            gdr_test_fail("gdr_progress_guard_rounds is 0: MPICH never skipped the netmod, "
                          "so this run did not reproduce the starvation");
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs != 0;
}
