/* Fence orders every rank's accesses, not only those of the ranks that exchanged them.
 *
 * In each round every rank r puts a value into slot r of rank r+1's window (r+1 is also
 * r's partner in the first round of gdr's fence barrier, which may leave that put in
 * flight when the barrier begins) and then, after the fence, reads slot r+1 of rank
 * r+2's window: what rank r+1 put there, a rank it did not exchange anything with.
 * MPI-3.1 section 11.5.1: the puts of an epoch are complete at their targets before the
 * fence returns there, and an access of the next epoch sees them; the second fence
 * closes the read.  Every rank also checks its own slot r-1 after the first fence.
 * With 2 ranks (r+2 is r) a rank reads back its own put from its target instead: gdr's
 * fence lets the origin leave before the put's acknowledgement (its target cannot leave
 * before the put landed), so this checks both sides of that.  Window kinds: create,
 * allocate, dynamic.
 *
 * The race this guards against is short (a put still on the wire while a third rank
 * is told the writer entered the fence), so a wrong fence fails only sometimes; a
 * correct one passes whatever the timing. */
#include "gdr_mpi_test.h"

#define ROUNDS 300

static void rounds(gdr_win_kind kind, int rank, int size)
{
    gdr_win w;
    gdr_win_open(&w, kind, (MPI_Aint) (size * sizeof(long)), (int) sizeof(long), MPI_COMM_WORLD);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int after = size == 2 ? next : (rank + 2) % size, slot = size == 2 ? rank : next;
    long *mine = w.base;
    gdr_test_set_context("win=%s", gdr_win_kind_name(kind));
    gdr_check_mpi("MPI_Win_fence", MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win));
    for (long k = 0; k < ROUNDS; k++) {
        long value = k * size + rank, got = -1;
        gdr_check_mpi("MPI_Put", MPI_Put(&value, 1, MPI_LONG, next,
                                         gdr_win_disp(&w, next, rank * (MPI_Aint) sizeof(long)),
                                         1, MPI_LONG, w.win));
        gdr_check_mpi("MPI_Win_fence", MPI_Win_fence(0, w.win));
        gdr_check_long("own window after the fence", prev, k * size + prev, mine[prev]);
        gdr_check_mpi("MPI_Get", MPI_Get(&got, 1, MPI_LONG, after,
                                         gdr_win_disp(&w, after, slot * (MPI_Aint) sizeof(long)),
                                         1, MPI_LONG, w.win));
        gdr_check_mpi("MPI_Win_fence", MPI_Win_fence(0, w.win));
        if (!gdr_check_long(size == 2 ? "own put read back" : "read from two ranks on", k,
                            k * size + slot, got))
            break;
    }
    gdr_check_mpi("MPI_Win_fence", MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    gdr_win_close(&w);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "rma_fence_order needs 2 or more ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int kind = 0; kind < GDR_WIN_NKINDS; kind++)
        rounds((gdr_win_kind) kind, rank, size);
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
