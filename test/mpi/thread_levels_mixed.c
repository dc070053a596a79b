/* Ranks of one job at different thread levels (legal MPI): even ranks ask for
 * MPI_THREAD_MULTIPLE, odd ones for MPI_THREAD_SINGLE.  MPICH 5.0.1 chose its shared-memory
 * collectives (release_gather) per process by thread level, so on one node the two kinds of
 * rank ran different algorithms in the same call and hung in the first MPI_Allreduce after a
 * few barriers (MPICH patch 0018: a node's ranks agree).  Every round one rank arrives late
 * at a barrier (the others wait in it), then a broadcast, a reduction and an allreduce from
 * that rank, each value checked; then the same on a node communicator made after MPI_Init.
 * A hang is the failure the runner's timeout reports. */
#define _GNU_SOURCE
#include "gdr_mpi_test.h"
#include <unistd.h>

static void rounds(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int late = 0; late < size; late++) {
        gdr_test_set_context("%s: round %d (rank %d late)", what, late, late);
        if (rank == late)
            usleep(20000);
        GDR_CHECK_MPI(MPI_Barrier(comm));
        long v = rank == late ? 1000 + late : -1;
        GDR_CHECK_MPI(MPI_Bcast(&v, 1, MPI_LONG, late, comm));
        gdr_check_long("bcast", 0, 1000 + late, v);
        long mine = rank + 1, sum = 0;
        GDR_CHECK_MPI(MPI_Reduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, late, comm));
        if (rank == late)
            gdr_check_long("reduce", 0, (long) size * (size + 1) / 2, sum);
        sum = 0;
        GDR_CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm));
        gdr_check_long("allreduce", 0, (long) size * (size + 1) / 2, sum);
    }
}

int main(int argc, char **argv)
{
    int launched_as, launched_of, provided;
    gdr_test_launcher_rank(&launched_as, &launched_of);
    int want = launched_as % 2 ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    gdr_test_set_context("MPI_Init_thread");
    gdr_check_long("provided thread level", 0, want, provided < want ? provided : want);

    rounds(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    MPI_Comm node;
    GDR_CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                      &node));
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    rounds(node, "node communicator");
    MPI_Comm_free(&node);

    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs != 0;
}
