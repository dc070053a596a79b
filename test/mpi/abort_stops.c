/* MPI_Abort on MPI_COMM_WORLD does not return (MPICH patch 0021).
 *
 *   mpiexec -n N abort_stops MARKER_FILE
 *
 * The last rank calls MPI_Abort(MPI_COMM_WORLD, 7) while the others wait in a barrier.
 * MPICH 5.0.1's MPI_Abort sent the launcher the abort request and returned, so the caller
 * ran on until the launcher's SIGKILL came.  Whether the call returns must not depend on
 * how fast the launcher kills: the aborting rank stops its hydra proxy (its parent) before
 * the call, and a watcher process it forked resumes the proxy once the rank has either
 * died (the pipe between them closes: the call did not return) or said that the call
 * returned; in that case the watcher creates MARKER_FILE.  maint/check passes the run when
 * mpiexec exits 7 and MARKER_FILE does not exist (not in testlist: a passing run prints no
 * " No Errors").  Under another launcher the proxy is not stopped and a return is caught
 * only when it beats the kill. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The rank's parent when it is hydra's proxy (which forwards the abort and kills the job),
 * else 0. */
static pid_t hydra_proxy(void)
{
    char path[64], comm[64] = "";
    pid_t parent = getppid();
    snprintf(path, sizeof(path), "/proc/%d/comm", (int) parent);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
    fclose(f);
    return strncmp(comm, "hydra_pmi_proxy", 15) == 0 ? parent : 0;
}

/* The watcher: waits until the aborting rank says "returned" or dies, resumes the proxy,
 * records a return in marker. */
static void watch(int from_rank, pid_t proxy, const char *marker)
{
    char c;
    if (read(from_rank, &c, 1) == 1) {        /* before the job can end: mpiexec's caller looks */
        int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const char *line = "MPI_Abort returned\n";
        if (fd < 0 || write(fd, line, strlen(line)) < 0)
            perror("abort_stops: the marker file");
        if (fd >= 0)
            close(fd);
    }
    if (proxy != 0)
        kill(proxy, SIGCONT);
    _exit(0);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (rank == 0)
            fprintf(stderr, "usage: abort_stops MARKER_FILE\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        int link[2];
        pid_t proxy = hydra_proxy();
        if (pipe(link) != 0) {
            perror("abort_stops: pipe");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        pid_t watcher = fork();
        if (watcher < 0) {
            perror("abort_stops: fork");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (watcher == 0) {
            setsid();           /* outside the process group the proxy kills */
            close(link[1]);
            watch(link[0], proxy, argv[1]);
        }
        close(link[0]);
        if (proxy != 0)
            kill(proxy, SIGSTOP);       /* the abort request waits until the watcher resumes it */
        MPI_Abort(MPI_COMM_WORLD, 7);
        if (write(link[1], "r", 1) < 0)
            perror("abort_stops: write");
        sleep(5);               /* the resumed launcher's kill ends it */
    } else {
        MPI_Barrier(MPI_COMM_WORLD);    /* never completes: the last rank does not come */
        fprintf(stderr, "rank %d passed a barrier its aborting peer never entered\n", rank);
    }
    MPI_Finalize();
    return 0;
}
