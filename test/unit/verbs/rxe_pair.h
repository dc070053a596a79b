/* The harness of the two-process verbs tests run inside maint/rxe: rank 0 on DEV_A in
 * this process, rank 1 on DEV_B in a forked child, joined by a socket pair for cards
 * and barriers.  main() of such a test is one call to gdr_rxe_pair_main(). */
#ifndef GDR_RXE_PAIR_H
#define GDR_RXE_PAIR_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* run(rank, device name, socket to the other rank) returns the rank's exit status. */
static inline int gdr_rxe_pair_main(int argc, char **argv, int (*run)(int, const char *, int))
{
    int sv[2];
    if (argc != 3) {
        fprintf(stderr, "usage: %s DEV_A DEV_B (two RDMA devices, e.g. rxe0 rxe1)\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 2;
    pid_t child = fork();
    if (child == 0) {
        close(sv[0]);
        _exit(run(1, argv[2], sv[1]));
    }
    close(sv[1]);
    int rc = run(0, argv[1], sv[0]);
    int status = 0;
    waitpid(child, &status, 0);
    int child_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    return rc || child_rc;
}

#endif /* GDR_RXE_PAIR_H */
