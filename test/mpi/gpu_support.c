/* MPI_Init works and MPIX_Query_cuda_support() says whether GPU support is on.
 * argv[1]: the expected answer (0 on machines without an NVIDIA GPU and driver). */
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, errs = 0;
    int expect = argc > 1 ? atoi(argv[1]) : 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int got = MPIX_Query_cuda_support();
    if (got != expect) {
        fprintf(stderr, "rank %d: MPIX_Query_cuda_support() = %d, expected %d\n", rank, got, expect);
        errs++;
    }
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (errs == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", errs);
    }
    MPI_Finalize();
    return errs != 0;
}
