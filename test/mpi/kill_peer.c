/* A rank dies mid-run (SIGKILL) while the other waits for it: the job must end
 * promptly with a message naming the dead rank, not hang.  Run by maint/check-rxe,
 * which times it; not in the testlist (it is meant to fail). */
#include <signal.h>
#include <stdio.h>
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, buf = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int iter = 0; iter < 1000000; iter++) {
        if (rank == 0) {
            MPI_Send(&iter, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&buf, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(&buf, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (iter == 20) {
                fprintf(stderr, "kill_peer: SIGKILL now\n");
                raise(SIGKILL);
            }
            MPI_Send(&iter, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
