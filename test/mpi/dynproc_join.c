/* dynproc_join: two single-process jobs joined by MPI_Comm_join over a TCP socket.
 *
 *   dynproc_join server PORT READY          (the first job: prints the verdict)
 *   dynproc_join client HOST PORT READY     (the second job, started separately)
 *
 * The server listens on TCP PORT (any address), then writes the file READY (READY.tmp,
 * renamed); the client waits for READY (up to GDR_TEST_WAIT_S seconds, default 120),
 * connects to HOST:PORT (maint/check-rxe: node0 10.11.0.1), and both call MPI_Comm_join on
 * the socket.  Then, checked on both sides: remote size 1; one value and a BIG-long message
 * (above 64 KiB: rendezvous) each way; the client's error count to the server;
 * MPI_Comm_disconnect.  The client prints nothing on success and exits non-zero after a
 * mismatch. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include "gdr_mpi_test.h"

#define BIG 20000               /* longs: 160 KiB */

static long val(int side, long k)
{
    return side * 10000000L + k * 3 + 1;
}

static void die_errno(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int wait_limit_ms(void)
{
    const char *w = getenv("GDR_TEST_WAIT_S");
    return (w != NULL ? atoi(w) : 120) * 1000;
}

static int server_socket(const char *port, const char *ready)
{
    int ls, fd, one = 1;
    struct sockaddr_in a;
    char tmp[4096];
    FILE *f;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons((unsigned short) atoi(port));
    ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0)
        die_errno("server: socket");
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(ls, (struct sockaddr *) &a, sizeof(a)) != 0)
        die_errno("server: bind");
    if (listen(ls, 1) != 0)
        die_errno("server: listen");
    snprintf(tmp, sizeof(tmp), "%s.tmp", ready);
    f = fopen(tmp, "w");
    if (f == NULL || fputs("ready\n", f) < 0 || fclose(f) != 0 || rename(tmp, ready) != 0)
        die_errno("server: writing the ready file");
    fd = accept(ls, NULL, NULL);
    if (fd < 0)
        die_errno("server: accept");
    close(ls);
    return fd;
}

static int client_socket(const char *host, const char *port, const char *ready)
{
    struct addrinfo hints, *ai = NULL;
    int fd = -1, waited = 0, limit = wait_limit_ms();

    while (access(ready, F_OK) != 0) {
        if (waited >= limit) {
            fprintf(stderr, "client: no %s after %d s\n", ready, limit / 1000);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        usleep(20000);
        waited += 20;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "client: getaddrinfo %s:%s: %s\n", host, port, gai_strerror(rc));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* the server listens before it writes the ready file: a few tries for a slow network */
    for (int tries = 0; tries < 50; tries++) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            die_errno("client: socket");
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
        usleep(100000);
    }
    freeaddrinfo(ai);
    if (fd < 0)
        die_errno("client: connect");
    return fd;
}

int main(int argc, char **argv)
{
    int server, side, fd, rsize = -1, rc;
    MPI_Comm ic;
    long *big;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    server = argc == 4 && strcmp(argv[1], "server") == 0;
    if (!server && !(argc == 5 && strcmp(argv[1], "client") == 0)) {
        fprintf(stderr, "usage: dynproc_join server PORT READY | client HOST PORT READY\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    side = server ? 1 : 2;
    fd = server ? server_socket(argv[2], argv[3]) : client_socket(argv[2], argv[3], argv[4]);

    gdr_test_set_context("%s: MPI_Comm_join", argv[1]);
    rc = MPI_Comm_join(fd, &ic);
    if (!gdr_check_mpi("MPI_Comm_join", rc))
        gdr_test_die("MPI_Comm_join", rc);
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    GDR_CHECK_MPI(MPI_Comm_remote_size(ic, &rsize));
    gdr_check_long("remote size", 0, 1, rsize);

    gdr_test_set_context("%s: a value each way", argv[1]);
    long out = val(side, -1), in = -1;
    GDR_CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_LONG, 0, 1, &in, 1, MPI_LONG, 0, 1, ic,
                               MPI_STATUS_IGNORE));
    gdr_check_long("value from the other job", 0, val(3 - side, -1), in);

    gdr_test_set_context("%s: %d longs each way", argv[1], BIG);
    big = malloc(sizeof(long) * BIG * 2);
    if (big == NULL)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    for (long k = 0; k < BIG; k++) {
        big[k] = val(side, k);
        big[BIG + k] = -1;
    }
    /* the server sends first, the client receives first: no reliance on buffering */
    if (server) {
        GDR_CHECK_MPI(MPI_Send(big, BIG, MPI_LONG, 0, 2, ic));
        GDR_CHECK_MPI(MPI_Recv(big + BIG, BIG, MPI_LONG, 0, 3, ic, MPI_STATUS_IGNORE));
    } else {
        GDR_CHECK_MPI(MPI_Recv(big + BIG, BIG, MPI_LONG, 0, 2, ic, MPI_STATUS_IGNORE));
        GDR_CHECK_MPI(MPI_Send(big, BIG, MPI_LONG, 0, 3, ic));
    }
    for (long k = 0; k < BIG; k++)
        if (!gdr_check_long("big message from the other job", k, val(3 - side, k), big[BIG + k]))
            break;
    free(big);

    gdr_test_set_context("%s: the client's error count", argv[1]);
    long mine = server ? 0 : gdr_test_errors(), theirs = -1;
    GDR_CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_LONG, 0, 4, &theirs, 1, MPI_LONG, 0, 4, ic,
                               MPI_STATUS_IGNORE));
    if (server && theirs != 0)
        gdr_test_fail("the client job found %ld errors (its lines above)", theirs);
    gdr_test_set_context("%s: MPI_Comm_disconnect", argv[1]);
    GDR_CHECK_MPI(MPI_Comm_disconnect(&ic));
    close(fd);

    if (server) {
        long total = gdr_test_finish();
        MPI_Finalize();
        return total != 0;
    }
    long errs = gdr_test_errors();
    MPI_Finalize();
    return errs != 0;
}
