/* When a blocking MPI call gives its core away (MPICH patch 0017).  Each rank in turn waits
 * in MPI_Recv for a message its right neighbour sends after sleeping 100 ms; this program's
 * own sched_yield (it interposes the C library's, which libmpi calls) counts the waiter's
 * yields.  A waiter that is threaded, or whose node has more ranks than the CPUs it may run
 * on, must yield; a single-threaded rank alone on its cores must not yield at all (each
 * yield is a system call, a trap into the guest kernel under maint/rxe).  With two ranks,
 * rank 0 asks for MPI_THREAD_MULTIPLE, rank 1 for MPI_THREAD_SINGLE; with more, every rank
 * is single-threaded (mixed thread levels on one node hung in MPICH's shared-memory
 * collectives before MPICH patch 0018: test/mpi/thread_levels_mixed's subject, not this one).  gdr's own idle yields and sleeps
 * (MPIR_CVAR_CH4_GDR_YIELD_AFTER, _IDLE_SLEEP_US) are turned off before MPI_Init. */
#define _GNU_SOURCE
#include "gdr_mpi_test.h"
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_long yields;

int sched_yield(void)
{
    atomic_fetch_add(&yields, 1);
    return (int) syscall(SYS_sched_yield);
}

int main(int argc, char **argv)
{
    setenv("MPIR_CVAR_CH4_GDR_YIELD_AFTER", "0", 1);
    setenv("MPIR_CVAR_CH4_GDR_IDLE_SLEEP_US", "0", 1);
    setenv("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "0", 1);
    int world_rank, world_size, provided = MPI_THREAD_SINGLE;
    gdr_test_launcher_rank(&world_rank, &world_size);
    int want = world_rank == 0 && world_size == 2 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    GDR_CHECK_MPI(MPI_Init_thread(&argc, &argv, want, &provided));
    int rank, size, node_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    GDR_CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                      &node));
    MPI_Comm_size(node, &node_size);
    cpu_set_t mask;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof(mask), &mask) == 0)
        cpus = CPU_COUNT(&mask);
    int threaded = provided == MPI_THREAD_MULTIPLE;
    int crowded = node_size > cpus;

    long made = 0;
    for (int waiter = 0; waiter < size; waiter++) {
        int sender = (waiter + 1) % size, token = waiter;
        if (rank == sender && sender != waiter) {
            usleep(100 * 1000);
            GDR_CHECK_MPI(MPI_Send(&token, 1, MPI_INT, waiter, 7, MPI_COMM_WORLD));
        } else if (rank == waiter && sender != waiter) {
            long before = atomic_load(&yields);
            GDR_CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, sender, 7, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
            made = atomic_load(&yields) - before;
        }
        GDR_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    gdr_test_set_context("%s rank, %d ranks on its node, %ld CPUs to run on: %ld yields in a "
                         "100-ms wait", threaded ? "a threaded" : "a single-threaded",
                         node_size, cpus, made);
    if (size == 1)
        ;                       /* nobody to wait for */
    else if (threaded || crowded) {
        if (made == 0)
            gdr_test_fail("the wait never yielded its core");
    } else {
        gdr_check_long("yields while alone on its cores", 0, 0, made);
    }
    MPI_Comm_free(&node);
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
