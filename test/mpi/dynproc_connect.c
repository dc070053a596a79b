/* dynproc_connect: two jobs joined by MPI_Open_port, MPI_Comm_accept and MPI_Comm_connect.
 *
 *   dynproc_connect server FILE     (the first job: prints the verdict)
 *   dynproc_connect client FILE     (the second job, started separately)
 *
 * The server's rank 0 opens a port and writes its name to FILE (to FILE.tmp, then renamed:
 * the client never reads half of it; "none" when MPI_Open_port failed); the client's rank 0
 * waits for FILE (up to GDR_TEST_WAIT_S seconds, default 120).  Then, checked on every rank:
 *  - the intercommunicator's local and remote sizes;
 *  - point-to-point both ways between every pair of processes of the two jobs: a value
 *    naming sender and receiver, and a BIG-long message (above 64 KiB: rendezvous);
 *  - an intercommunicator MPI_Allreduce (each side gets the other's sum);
 *  - MPI_Intercomm_merge (server first): ranks, MPI_Allreduce, a MPI_Sendrecv ring;
 *  - MPI_Comm_disconnect, MPI_Close_port.
 * The client's error count reaches the server before the disconnect, so the server's
 * " No Errors" covers both jobs; the client prints nothing on success and exits non-zero
 * after a mismatch (maint/check-rxe: node0 runs the server, node1 the client). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <unistd.h>
#include "gdr_mpi_test.h"

#define BIG 20000               /* longs: 160 KiB */

static long val(int side, int from, int to, long k)
{
    return ((long) side * 1000 + from * 31 + to) * 1000000L + k;
}

/* Writes the port name to file through file.tmp and a rename. */
static void write_port(const char *file, const char *port)
{
    char tmp[4096];
    FILE *f;
    snprintf(tmp, sizeof(tmp), "%s.tmp", file);
    f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%s\n", port) < 0 || fclose(f) != 0 || rename(tmp, file) != 0) {
        fprintf(stderr, "server: cannot write %s: %s\n", file, strerror(errno));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Waits for file and reads the port name from it (client rank 0). */
static void read_port(const char *file, char *port)
{
    const char *w = getenv("GDR_TEST_WAIT_S");
    long waited_ms = 0, limit_ms = (w != NULL ? atol(w) : 120) * 1000;
    FILE *f;
    while ((f = fopen(file, "r")) == NULL) {
        if (waited_ms >= limit_ms) {
            fprintf(stderr, "client: no port name in %s after %ld s\n", file, limit_ms / 1000);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        usleep(20000);
        waited_ms += 20;
    }
    if (fgets(port, MPI_MAX_PORT_NAME, f) == NULL) {
        fprintf(stderr, "client: %s is empty\n", file);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fclose(f);
    port[strcspn(port, "\n")] = '\0';
    if (strcmp(port, "none") == 0) {
        fprintf(stderr, "client: the server could not open a port (%s)\n", file);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    int wrank, wsize, rsize = -1, lsize = -1, server, side;
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm ic;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (argc != 3 || (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0)) {
        if (wrank == 0)
            fprintf(stderr, "usage: dynproc_connect server|client FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    server = strcmp(argv[1], "server") == 0;
    side = server ? 1 : 2;

    if (server) {
        gdr_test_set_context("server %d: MPI_Open_port, MPI_Comm_accept", wrank);
        if (wrank == 0) {
            int rc = MPI_Open_port(MPI_INFO_NULL, port);
            if (!gdr_check_mpi("MPI_Open_port", rc)) {
                write_port(argv[2], "none");    /* the client stops at once */
                gdr_test_die("MPI_Open_port", rc);
            }
            write_port(argv[2], port);
        }
        int rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic);
        if (!gdr_check_mpi("MPI_Comm_accept", rc))
            gdr_test_die("MPI_Comm_accept", rc);
    } else {
        gdr_test_set_context("client %d: MPI_Comm_connect", wrank);
        if (wrank == 0)
            read_port(argv[2], port);
        int rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic);
        if (!gdr_check_mpi("MPI_Comm_connect", rc))
            gdr_test_die("MPI_Comm_connect", rc);
    }
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    gdr_test_set_context("%s %d: sizes", argv[1], wrank);
    GDR_CHECK_MPI(MPI_Comm_remote_size(ic, &rsize));
    GDR_CHECK_MPI(MPI_Comm_size(ic, &lsize));
    gdr_check_long("local size", 0, wsize, lsize);
    if (rsize < 1 || rsize > 1024)
        gdr_test_die("MPI_Comm_remote_size (out of range)", MPI_ERR_OTHER);

    /* every pair both ways, nonblocking: a value and a big message to and from each */
    gdr_test_set_context("%s %d: point-to-point with every remote rank", argv[1], wrank);
    {
        long *small_out = calloc((size_t) rsize, sizeof(long));
        long *small_in = calloc((size_t) rsize, sizeof(long));
        long *big_out = malloc(sizeof(long) * BIG * (size_t) rsize);
        long *big_in = malloc(sizeof(long) * BIG * (size_t) rsize);
        MPI_Request *req = malloc(sizeof(MPI_Request) * 4 * (size_t) rsize);
        MPI_Status *st = malloc(sizeof(MPI_Status) * 4 * (size_t) rsize);
        if (!small_out || !small_in || !big_out || !big_in || !req || !st)
            gdr_test_die("malloc", MPI_ERR_NO_MEM);
        for (int j = 0; j < rsize; j++) {
            small_out[j] = val(side, wrank, j, -1);
            small_in[j] = -1;
            for (long k = 0; k < BIG; k++) {
                big_out[j * BIG + k] = val(side, wrank, j, k);
                big_in[j * BIG + k] = -1;
            }
            MPI_Irecv(&small_in[j], 1, MPI_LONG, j, 1, ic, &req[4 * j]);
            MPI_Irecv(&big_in[j * BIG], BIG, MPI_LONG, j, 2, ic, &req[4 * j + 1]);
            MPI_Isend(&small_out[j], 1, MPI_LONG, j, 1, ic, &req[4 * j + 2]);
            MPI_Isend(&big_out[j * BIG], BIG, MPI_LONG, j, 2, ic, &req[4 * j + 3]);
        }
        GDR_CHECK_MPI(MPI_Waitall(4 * rsize, req, st));
        for (int j = 0; j < rsize; j++) {
            gdr_check_long("value from remote rank", j, val(3 - side, j, wrank, -1), small_in[j]);
            for (long k = 0; k < BIG; k++)
                if (!gdr_check_long("big message from remote rank", j,
                                    val(3 - side, j, wrank, k), big_in[j * BIG + k]))
                    break;
        }
        free(small_out);
        free(small_in);
        free(big_out);
        free(big_in);
        free(req);
        free(st);
    }

    gdr_test_set_context("%s %d: intercommunicator MPI_Allreduce", argv[1], wrank);
    {
        long in = side * 100 + wrank, out = -1, want = 0;
        GDR_CHECK_MPI(MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, ic));
        for (int j = 0; j < rsize; j++)
            want += (3 - side) * 100 + j;
        gdr_check_long("sum of the other job's values", 0, want, out);
    }

    gdr_test_set_context("%s %d: MPI_Intercomm_merge", argv[1], wrank);
    {
        MPI_Comm merged;
        int mrank = -1, msize = -1, first = server ? 0 : rsize;
        GDR_CHECK_MPI(MPI_Intercomm_merge(ic, server ? 0 : 1, &merged));
        MPI_Comm_rank(merged, &mrank);
        MPI_Comm_size(merged, &msize);
        gdr_check_long("merged size", 0, wsize + rsize, msize);
        gdr_check_long("merged rank (server first)", 0, first + wrank, mrank);
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

    /* the client's errors to the server, then apart */
    gdr_test_set_context("%s %d: the client's error count", argv[1], wrank);
    long mine = server ? 0 : gdr_test_errors(), theirs = -1;
    GDR_CHECK_MPI(MPI_Allreduce(&mine, &theirs, 1, MPI_LONG, MPI_SUM, ic));
    if (server && theirs != 0 && wrank == 0)
        gdr_test_fail("the client job found %ld errors (its lines above)", theirs);
    gdr_test_set_context("%s %d: MPI_Comm_disconnect", argv[1], wrank);
    GDR_CHECK_MPI(MPI_Comm_disconnect(&ic));
    if (server && wrank == 0)
        GDR_CHECK_MPI(MPI_Close_port(port));

    if (server) {
        long total = gdr_test_finish();
        MPI_Finalize();
        return total != 0;
    }
    long total = 0;
    MPI_Allreduce(&(long) { gdr_test_errors() }, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return total != 0;
}
