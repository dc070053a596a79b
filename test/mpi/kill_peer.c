/* A rank dies mid-run (SIGKILL) while the other waits for it: the job must end
 * promptly with a message naming the dead rank, not hang.  Run by maint/check-rxe,
 * which times it; not in the testlist (it is meant to fail).
 *
 *   kill_peer          rank 1 dies between a receive and its reply (rank 0 waits in MPI_Recv)
 *   kill_peer lock     rank 1 dies holding an exclusive lock on rank 0's window while
 *                      rank 0 waits to lock it too (MPI_Win_lock + Put + MPI_Win_unlock) */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>

static void die_holding_lock(int rank)
{
    int *base, one = 1;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (rank == 1) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_flush(0, win);                  /* the lock is held now */
        MPI_Send(&one, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        sleep(1);                               /* rank 0 is waiting for the lock */
        fprintf(stderr, "kill_peer: SIGKILL now, holding the lock\n");
        raise(SIGKILL);
    } else if (rank == 0) {
        MPI_Recv(&one, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);                 /* never granted */
    }
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    int rank, size, buf = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "lock") == 0) {
        die_holding_lock(rank);
        MPI_Finalize();
        return 0;
    }
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
