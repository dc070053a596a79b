/* dynproc_spawn: MPI_Comm_spawn, the children on the host the parent names.
 *
 * The parent job (maint/check-rxe: -n 1 on node0 of two guests) spawns NCHILD copies of
 * this program (argv: "child ROUND HOST") with the info key "host" set to
 * GDR_TEST_SPAWN_HOST when that is set (none: hydra's choice), and checks:
 *  - MPI_Comm_get_parent: MPI_COMM_NULL in the parent, the intercommunicator in the
 *    children; local and remote sizes on both sides; every spawn error code MPI_SUCCESS;
 *  - the children run on the host asked for (gethostname, checked by the children and,
 *    from the names they send, by the parent);
 *  - point-to-point over the intercommunicator both ways: parent rank 0 sends child j a
 *    distinct value and a BIG-long message (above 64 KiB: rendezvous), child j answers
 *    with a function of each;
 *  - intercommunicator collectives: MPI_Bcast from the parent root (MPI_ROOT /
 *    MPI_PROC_NULL) and from child 0, MPI_Allreduce (each side gets the other's sum);
 *  - MPI_Intercomm_merge (parents first): ranks, MPI_Allreduce and a MPI_Sendrecv ring;
 *  - MPI_Comm_disconnect; then a second MPI_Comm_spawn of one child (task farms spawn
 *    again and again) with one value each way, and its disconnect.
 * The children's error counts reach the parent (an intercommunicator MPI_Allreduce) before
 * each disconnect, so the parent's " No Errors" covers them; a child also exits non-zero
 * after a mismatch.  Any number of parents; the harness runs one. */
#define _DEFAULT_SOURCE
#include <limits.h>
#include <unistd.h>
#include "gdr_mpi_test.h"

#define NCHILD 2
#define BIG 20000               /* longs: 160 KiB, above every eager limit */
#define HOSTLEN 256

static long val_down(int child, long k)
{
    return 7000000L + child * 100000L + k;
}

static long val_up(long got, int child)
{
    return got * 3 + child + 1;
}

/* This host's name into name (HOSTLEN bytes). */
static void my_host(char *name)
{
    if (gethostname(name, HOSTLEN) != 0)
        snprintf(name, HOSTLEN, "?");
    name[HOSTLEN - 1] = '\0';
}

/* Whether host name is the host want names ("node1" for "node1" or "node1.domain"). */
static int same_host(const char *want, const char *name)
{
    size_t n = strcspn(name, ".");
    return strcmp(want, name) == 0 || (strlen(want) == n && strncmp(want, name, n) == 0);
}

/* ---- the children ------------------------------------------------------------------ */

static int child_main(int round, const char *host)
{
    MPI_Comm parent;
    int rank, size, psize = -1, lsize = -1;
    char name[HOSTLEN];
    long mine, theirs = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gdr_test_set_context("child %d of round %d: MPI_Comm_get_parent", rank, round);
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        gdr_test_fail("MPI_Comm_get_parent returned MPI_COMM_NULL in a spawned process");
        return 1;
    }
    MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
    GDR_CHECK_MPI(MPI_Comm_remote_size(parent, &psize));
    GDR_CHECK_MPI(MPI_Comm_size(parent, &lsize));
    gdr_check_long("local size of the parent intercommunicator", 0, size, lsize);
    gdr_check_long("world size", 0, round == 1 ? NCHILD : 1, size);

    gdr_test_set_context("child %d of round %d: host", rank, round);
    my_host(name);
    if (strcmp(host, "-") != 0 && !same_host(host, name))
        gdr_test_fail("runs on %s, asked for %s", name, host);
    /* the parent checks the name too */
    GDR_CHECK_MPI(MPI_Send(name, HOSTLEN, MPI_CHAR, 0, 9, parent));

    if (round == 2) {
        gdr_test_set_context("child %d of round 2: one value each way", rank);
        GDR_CHECK_MPI(MPI_Recv(&theirs, 1, MPI_LONG, 0, 21, parent, MPI_STATUS_IGNORE));
        gdr_check_long("value from the parent", 0, val_down(100, 0), theirs);
        mine = val_up(theirs, 100);
        GDR_CHECK_MPI(MPI_Send(&mine, 1, MPI_LONG, 0, 22, parent));
    } else {
        long *big = malloc(sizeof(long) * BIG);
        if (big == NULL)
            gdr_test_die("malloc", MPI_ERR_NO_MEM);

        gdr_test_set_context("child %d: point-to-point with parent rank 0", rank);
        GDR_CHECK_MPI(MPI_Recv(&theirs, 1, MPI_LONG, 0, 1, parent, MPI_STATUS_IGNORE));
        gdr_check_long("value from the parent", 0, val_down(rank, -1), theirs);
        for (long k = 0; k < BIG; k++)
            big[k] = -1;
        GDR_CHECK_MPI(MPI_Recv(big, BIG, MPI_LONG, 0, 2, parent, MPI_STATUS_IGNORE));
        for (long k = 0; k < BIG; k++)
            if (!gdr_check_long("big message from the parent", k, val_down(rank, k), big[k]))
                break;
        mine = val_up(theirs, rank);
        GDR_CHECK_MPI(MPI_Send(&mine, 1, MPI_LONG, 0, 3, parent));
        for (long k = 0; k < BIG; k++)
            big[k] = val_up(big[k], rank);
        GDR_CHECK_MPI(MPI_Send(big, BIG, MPI_LONG, 0, 4, parent));
        free(big);

        gdr_test_set_context("child %d: intercommunicator MPI_Bcast", rank);
        long b[8];
        for (int i = 0; i < 8; i++)
            b[i] = -1;
        GDR_CHECK_MPI(MPI_Bcast(b, 8, MPI_LONG, 0, parent));
        for (int i = 0; i < 8; i++)
            gdr_check_long("broadcast from the parent root", i, 500 + i * i, b[i]);
        /* and back: child 0 is the root of the children's side */
        for (int i = 0; i < 8; i++)
            b[i] = 900 + i;
        GDR_CHECK_MPI(MPI_Bcast(b, 8, MPI_LONG, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, parent));

        gdr_test_set_context("child %d: intercommunicator MPI_Allreduce", rank);
        long in = 10 + rank, out = -1, want = 0;
        GDR_CHECK_MPI(MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, parent));
        for (int p = 0; p < psize; p++)
            want += 100 + p;
        gdr_check_long("sum of the parents' values", 0, want, out);

        gdr_test_set_context("child %d: MPI_Intercomm_merge", rank);
        MPI_Comm merged;
        int mrank = -1, msize = -1;
        GDR_CHECK_MPI(MPI_Intercomm_merge(parent, 1, &merged));
        MPI_Comm_rank(merged, &mrank);
        MPI_Comm_size(merged, &msize);
        gdr_check_long("merged size", 0, psize + size, msize);
        gdr_check_long("merged rank (parents first)", 0, psize + rank, mrank);
        long one = mrank + 1, sum = -1;
        GDR_CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, merged));
        gdr_check_long("merged MPI_Allreduce", 0, (long) msize * (msize + 1) / 2, sum);
        long ring = mrank * 7L + 1, left = -1;
        GDR_CHECK_MPI(MPI_Sendrecv(&ring, 1, MPI_LONG, (mrank + 1) % msize, 5, &left, 1,
                                   MPI_LONG, (mrank + msize - 1) % msize, 5, merged,
                                   MPI_STATUS_IGNORE));
        gdr_check_long("ring value from the left", 0, ((mrank + msize - 1) % msize) * 7L + 1, left);
        MPI_Comm_free(&merged);
    }

    /* every child's error count to the parent (which then reports them) */
    long errs = gdr_test_errors(), ignored;
    MPI_Allreduce(&errs, &ignored, 1, MPI_LONG, MPI_SUM, parent);
    gdr_test_set_context("child %d of round %d: MPI_Comm_disconnect", rank, round);
    GDR_CHECK_MPI(MPI_Comm_disconnect(&parent));
    return gdr_test_errors() != 0;
}

/* ---- the parent -------------------------------------------------------------------- */

/* MPI_Comm_spawn of n children of round round on host (NULL: hydra's choice); returns the
 * intercommunicator, or MPI_COMM_NULL after recording the error. */
static MPI_Comm spawn(int n, int round, const char *host)
{
    char exe[PATH_MAX], rstr[16];
    char *args[] = { "child", rstr, (char *) (host ? host : "-"), NULL };
    int errcodes[NCHILD], rc, wrank;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Comm ic = MPI_COMM_NULL;

    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (realpath("/proc/self/exe", exe) == NULL)
        gdr_test_die("realpath(/proc/self/exe)", MPI_ERR_OTHER);
    snprintf(rstr, sizeof(rstr), "%d", round);
    if (host != NULL) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "host", host);
    }
    for (int i = 0; i < NCHILD; i++)
        errcodes[i] = -1;
    gdr_test_set_context("round %d: MPI_Comm_spawn of %d on %s", round, n, host ? host : "any host");
    rc = MPI_Comm_spawn(exe, args, n, info, 0, MPI_COMM_WORLD, &ic, errcodes);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    if (!gdr_check_mpi("MPI_Comm_spawn", rc))
        return MPI_COMM_NULL;
    if (wrank == 0)
        for (int i = 0; i < n; i++)
            gdr_check_long("spawn error code", i, MPI_SUCCESS, errcodes[i]);
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    int rsize = -1;
    GDR_CHECK_MPI(MPI_Comm_remote_size(ic, &rsize));
    gdr_check_long("remote size of the spawned group", 0, n, rsize);
    return ic;
}

/* The children's host names (each sends its own) against the host asked for. */
static void children_hosts(MPI_Comm ic, int n, int wrank, const char *host)
{
    char name[HOSTLEN];
    if (wrank != 0)
        return;
    for (int j = 0; j < n; j++) {
        gdr_test_set_context("child %d: its host name", j);
        memset(name, 0, sizeof(name));
        GDR_CHECK_MPI(MPI_Recv(name, HOSTLEN, MPI_CHAR, j, 9, ic, MPI_STATUS_IGNORE));
        name[HOSTLEN - 1] = '\0';
        if (host != NULL && !same_host(host, name))
            gdr_test_fail("child runs on %s, asked for %s", name, host);
    }
}

/* The children's error counts (the collective before their disconnect) into ours. */
static void child_errors(MPI_Comm ic, int wrank)
{
    long zero = 0, theirs = -1;
    gdr_test_set_context("the children's own checks");
    GDR_CHECK_MPI(MPI_Allreduce(&zero, &theirs, 1, MPI_LONG, MPI_SUM, ic));
    if (theirs != 0 && wrank == 0)
        gdr_test_fail("the children found %ld errors (their lines above)", theirs);
}

int main(int argc, char **argv)
{
    int wrank, wsize;
    const char *host = getenv("GDR_TEST_SPAWN_HOST");
    MPI_Comm parent, ic;
    long *big;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (argc >= 4 && strcmp(argv[1], "child") == 0) {
        int bad = child_main(atoi(argv[2]), argv[3]);
        MPI_Finalize();
        return bad;
    }
    if (host != NULL && host[0] == '\0')
        host = NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    gdr_test_set_context("parent %d: MPI_Comm_get_parent", wrank);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL)
        gdr_test_fail("MPI_Comm_get_parent is not MPI_COMM_NULL in the parent job");

    /* round 1: NCHILD children, everything */
    ic = spawn(NCHILD, 1, host);
    if (ic == MPI_COMM_NULL)
        goto done;
    children_hosts(ic, NCHILD, wrank, host);
    big = malloc(sizeof(long) * BIG);
    if (big == NULL)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    if (wrank == 0) {
        for (int j = 0; j < NCHILD; j++) {
            gdr_test_set_context("parent 0: point-to-point with child %d", j);
            long v = val_down(j, -1), back = -1;
            GDR_CHECK_MPI(MPI_Send(&v, 1, MPI_LONG, j, 1, ic));
            for (long k = 0; k < BIG; k++)
                big[k] = val_down(j, k);
            GDR_CHECK_MPI(MPI_Send(big, BIG, MPI_LONG, j, 2, ic));
            GDR_CHECK_MPI(MPI_Recv(&back, 1, MPI_LONG, j, 3, ic, MPI_STATUS_IGNORE));
            gdr_check_long("answer of the child", 0, val_up(v, j), back);
            for (long k = 0; k < BIG; k++)
                big[k] = -1;
            GDR_CHECK_MPI(MPI_Recv(big, BIG, MPI_LONG, j, 4, ic, MPI_STATUS_IGNORE));
            for (long k = 0; k < BIG; k++)
                if (!gdr_check_long("big answer of the child", k, val_up(val_down(j, k), j), big[k]))
                    break;
        }
    }
    free(big);

    gdr_test_set_context("parent %d: intercommunicator MPI_Bcast", wrank);
    long b[8];
    for (int i = 0; i < 8; i++)
        b[i] = 500 + i * i;
    GDR_CHECK_MPI(MPI_Bcast(b, 8, MPI_LONG, wrank == 0 ? MPI_ROOT : MPI_PROC_NULL, ic));
    for (int i = 0; i < 8; i++)
        b[i] = -1;
    GDR_CHECK_MPI(MPI_Bcast(b, 8, MPI_LONG, 0, ic));
    for (int i = 0; i < 8; i++)
        gdr_check_long("broadcast from child 0", i, 900 + i, b[i]);

    gdr_test_set_context("parent %d: intercommunicator MPI_Allreduce", wrank);
    long in = 100 + wrank, out = -1, want = 0;
    GDR_CHECK_MPI(MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, ic));
    for (int c = 0; c < NCHILD; c++)
        want += 10 + c;
    gdr_check_long("sum of the children's values", 0, want, out);

    gdr_test_set_context("parent %d: MPI_Intercomm_merge", wrank);
    MPI_Comm merged;
    int mrank = -1, msize = -1;
    GDR_CHECK_MPI(MPI_Intercomm_merge(ic, 0, &merged));
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    gdr_check_long("merged size", 0, wsize + NCHILD, msize);
    gdr_check_long("merged rank (parents first)", 0, wrank, mrank);
    long one = mrank + 1, sum = -1;
    GDR_CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, merged));
    gdr_check_long("merged MPI_Allreduce", 0, (long) msize * (msize + 1) / 2, sum);
    long ring = mrank * 7L + 1, left = -1;
    GDR_CHECK_MPI(MPI_Sendrecv(&ring, 1, MPI_LONG, (mrank + 1) % msize, 5, &left, 1, MPI_LONG,
                               (mrank + msize - 1) % msize, 5, merged, MPI_STATUS_IGNORE));
    gdr_check_long("ring value from the left", 0, ((mrank + msize - 1) % msize) * 7L + 1, left);
    MPI_Comm_free(&merged);

    child_errors(ic, wrank);
    gdr_test_set_context("parent %d: MPI_Comm_disconnect (round 1)", wrank);
    GDR_CHECK_MPI(MPI_Comm_disconnect(&ic));

    /* round 2: one child, one value each way */
    ic = spawn(1, 2, host);
    if (ic == MPI_COMM_NULL)
        goto done;
    children_hosts(ic, 1, wrank, host);
    if (wrank == 0) {
        gdr_test_set_context("parent 0: round 2, one value each way");
        long v = val_down(100, 0), back = -1;
        GDR_CHECK_MPI(MPI_Send(&v, 1, MPI_LONG, 0, 21, ic));
        GDR_CHECK_MPI(MPI_Recv(&back, 1, MPI_LONG, 0, 22, ic, MPI_STATUS_IGNORE));
        gdr_check_long("answer of the round-2 child", 0, val_up(v, 100), back);
    }
    child_errors(ic, wrank);
    gdr_test_set_context("parent %d: MPI_Comm_disconnect (round 2)", wrank);
    GDR_CHECK_MPI(MPI_Comm_disconnect(&ic));

  done:
    {
        long total = gdr_test_finish();
        MPI_Finalize();
        return total != 0;
    }
}
