/* PSCW: a post for a later access epoch arrives before this epoch's start.
 *
 * Rank 0 opens one access epoch per target, in order: start({1}), put, complete;
 * start({2}), put, complete; ...  The last target posts at once; the others post
 * only after a delay (rank k after k * DELAY), having first set their window word
 * to -1.  So when rank 0 calls start({1}), the post it holds is the last target's,
 * meant for a later epoch.  MPI-3.1 section 11.5.2: a put of the epoch to target k
 * may not land before k's post.  A start that counts posts instead of matching
 * them by rank returns at once (the put lands before target 1 writes -1, which
 * then survives: an error below) or never (a count past its group size: a hang,
 * which the runner's timeout catches).  Needs 3 or more ranks.
 *
 * The timing only makes the wrong order likely; a correct MPI passes whatever the
 * scheduler does. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "gdr_mpi_test.h"

#include <time.h>

#define DELAY_NS 300000000L

static void sleep_ns(long ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000L,.tv_nsec = ns % 1000000000L };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int value_for(int target)
{
    return 1000 + target;
}

static void origin(MPI_Win win, MPI_Group world, int size)
{
    for (int target = 1; target < size; target++) {
        MPI_Group one;
        int value = value_for(target);
        MPI_Group_incl(world, 1, &target, &one);
        gdr_check_mpi("MPI_Win_start", MPI_Win_start(one, 0, win));
        gdr_check_mpi("MPI_Put", MPI_Put(&value, 1, MPI_INT, target, 0, 1, MPI_INT, win));
        gdr_check_mpi("MPI_Win_complete", MPI_Win_complete(win));
        MPI_Group_free(&one);
    }
}

static void target(MPI_Win win, MPI_Group world, int *word, int me, int size)
{
    MPI_Group zero;
    int rank0 = 0;

    if (me != size - 1)
        sleep_ns(DELAY_NS * me);
    *word = -1;         /* not exposed yet: no put may have landed */
    MPI_Group_incl(world, 1, &rank0, &zero);
    gdr_check_mpi("MPI_Win_post", MPI_Win_post(zero, 0, win));
    gdr_check_mpi("MPI_Win_wait", MPI_Win_wait(win));
    gdr_check_long("window word after the epoch", 0, value_for(me), *word);
    MPI_Group_free(&zero);
}

int main(int argc, char **argv)
{
    int me, size, *word;
    MPI_Win win;
    MPI_Group world;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 3) {
        if (me == 0)
            fprintf(stderr, "rma_pscw_early_post needs 3 or more ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &word, &win);
    *word = 0;
    gdr_test_set_context("nprocs=%d", size);
    MPI_Barrier(MPI_COMM_WORLD);

    if (me == 0)
        origin(win, world, size);
    else
        target(win, world, word, me, size);

    MPI_Win_free(&win);
    MPI_Group_free(&world);
    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs ? 1 : 0;
}
