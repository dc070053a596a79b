#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank; size_t n = 4u << 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *b = malloc(n); memset(b, rank, n);
    for (int i = 0; i < 8; i++) {
        if (rank == 0) MPI_Send(b, (int) n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        else MPI_Recv(b, (int) n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 1) printf("got %d\n", b[n - 1]);
    MPI_Finalize();
    return 0;
}
