/* One-sided communication through the MPI 5.0 standard ABI (libmpi_abi.so, built by
 * maint/graft with --enable-mpi-abi; compiled here with mpicc_abi).
 *
 * The ABI gives handles and constants fixed values that every conforming MPI shares
 * (MPI_INT is 0x209, handles are pointers), and MPICH's ABI library converts them to
 * its own at each call before gdr sees them.  Checked:
 * - the program was compiled against the standard ABI header (MPI_ABI_VERSION) and the
 *   library agrees (MPI_Abi_get_version: 1.0);
 * - Put, Get, Accumulate (SUM on MPI_INT, on MPI_INT64_T), Fetch_and_op and
 *   Compare_and_swap between all ranks under fence and under lock_all + flush, every
 *   value read back; so the datatype and op handles reach gdr's RMA paths converted
 *   (NIC atomics take 8-byte integers: a conversion that lost MPI_INT64_T would still
 *   give right values through the message path, which rma_native's counters check;
 *   here the values are the point). */
#include <stddef.h>

#include "gdr_mpi_test.h"

#ifndef MPI_ABI_VERSION
#error "abi_rma.c must be compiled against the standard ABI: use mpicc_abi (or mpicc -mpi-abi)"
#endif

enum { N = 64 };

static void check_abi(void)
{
    int major = -1, minor = -1;
    if (MPI_Abi_get_version(&major, &minor) != MPI_SUCCESS || major != 1 || minor != 0)
        gdr_test_fail("MPI_Abi_get_version: %d.%d, expected 1.0", major, minor);
    if (sizeof(MPI_Comm) != sizeof(void *))
        gdr_test_fail("MPI_Comm is %zu bytes: not the standard ABI's pointer handle",
                      sizeof(MPI_Comm));
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_abi();

    /* window layout: N ints (put target), N ints (accumulate target), one int64
     * (accumulate), one int64 (fetch_and_op), one int64 (compare_and_swap) */
    struct slab { int put[N]; int acc[N]; int64_t acc64; int64_t fop; int64_t cas; } *w;
    MPI_Win win;
    MPI_Win_allocate(sizeof(*w), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win);
    memset(w, 0, sizeof(*w));
    MPI_Barrier(MPI_COMM_WORLD);

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int src[N], got[N];
    for (int i = 0; i < N; i++)
        src[i] = rank * 1000 + i;

    /* fence: every rank puts into its right neighbour, adds into every rank */
    gdr_test_set_context("fence");
    MPI_Win_fence(0, win);
    MPI_Put(src, N, MPI_INT, right, offsetof(struct slab, put), N, MPI_INT, win);
    for (int t = 0; t < size; t++) {
        int64_t one = 1;
        MPI_Accumulate(src, N, MPI_INT, t, offsetof(struct slab, acc), N, MPI_INT, MPI_SUM, win);
        MPI_Accumulate(&one, 1, MPI_INT64_T, t, offsetof(struct slab, acc64), 1, MPI_INT64_T,
                       MPI_SUM, win);
    }
    MPI_Win_fence(0, win);
    for (int i = 0; i < N; i++) {
        int want_acc = 1000 * (size * (size - 1) / 2) + size * i;
        if (w->put[i] != left * 1000 + i)
            gdr_test_fail("put: index %d: expected %d, got %d", i, left * 1000 + i, w->put[i]);
        if (w->acc[i] != want_acc)
            gdr_test_fail("accumulate: index %d: expected %d, got %d", i, want_acc, w->acc[i]);
    }
    if (w->acc64 != size)
        gdr_test_fail("accumulate int64: expected %d, got %lld", size, (long long) w->acc64);
    MPI_Win_fence(0, win);

    /* lock_all + flush: get the right neighbour's put area back, fetch-add and CAS on rank 0 */
    gdr_test_set_context("lock_all+flush");
    MPI_Win_lock_all(0, win);
    MPI_Get(got, N, MPI_INT, right, offsetof(struct slab, put), N, MPI_INT, win);
    int64_t add = rank + 1, old = -1;
    MPI_Fetch_and_op(&add, &old, MPI_INT64_T, 0, offsetof(struct slab, fop), MPI_SUM, win);
    MPI_Win_flush_all(win);
    for (int i = 0; i < N; i++)
        if (got[i] != rank * 1000 + i)
            gdr_test_fail("get: index %d: expected %d, got %d", i, rank * 1000 + i, got[i]);
    if (old < 0 || old > (int64_t) size * (size + 1) / 2)
        gdr_test_fail("fetch_and_op: old value %lld out of range", (long long) old);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && w->fop != (int64_t) size * (size + 1) / 2)
        gdr_test_fail("fetch_and_op: sum %lld, expected %d", (long long) w->fop,
                      size * (size + 1) / 2);

    /* compare_and_swap: ranks race to swap 0 -> rank+1 on rank 0; exactly one wins */
    MPI_Win_lock_all(0, win);
    int64_t mine = rank + 1, expect0 = 0, prev = -1;
    MPI_Compare_and_swap(&mine, &expect0, &prev, MPI_INT64_T, 0, offsetof(struct slab, cas), win);
    MPI_Win_flush(0, win);
    MPI_Win_unlock_all(win);
    int won = prev == 0, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (winners != 1)
        gdr_test_fail("compare_and_swap: %d ranks won, expected 1", winners);
    if (rank == 0 && (w->cas < 1 || w->cas > size))
        gdr_test_fail("compare_and_swap: final %lld", (long long) w->cas);

    MPI_Win_free(&win);
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
