/* Nothing lands outside a window (issue 24).  The target window ends right before a
 * PROT_NONE guard page: MPI_Win_create over the last 1000 bytes of a page.  Each RMA call
 * (Put, Get, Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap, and the
 * request-based Rput, Rget, Raccumulate, Rget_accumulate) is aimed at the next rank three
 * ways: at the last element (must work, value checked), at the last element with one
 * element too many, and wholly past the end.  The two bad ones must fail with
 * MPI_ERR_RMA_RANGE, write nothing (the whole window is compared with a model at the end)
 * and never reach the guard page (the target would die of SIGSEGV).
 *
 * The same on a dynamic window, its region attached right before a guard page, between
 * ranks on other nodes and between ranks sharing a node alike: gdr checks every access
 * against the target's attachments at the origin (asking the target about the region on
 * first use), whichever way the operation then goes.  Before, ranks sharing a node reached
 * each other through MPICH's shared-memory and active-message code, whose target
 * handlers write a dynamic window unchecked: MPI_Put one element past the region returned
 * MPI_SUCCESS and the target died of SIGSEGV. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>
#include "gdr_mpi_test.h"

#define WIN_BYTES 1000
#define N_LONG (WIN_BYTES / 8)          /* 125 longs */

typedef struct {
    char *map;                  /* 2 pages: data, guard */
    long *win;                  /* the last WIN_BYTES of the data page */
} guarded_t;

static guarded_t guarded_new(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    guarded_t g;
    g.map = mmap(NULL, 2 * (size_t) pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
    if (g.map == MAP_FAILED || mprotect(g.map + pg, (size_t) pg, PROT_NONE) != 0) {
        perror("mmap/mprotect");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    g.win = (long *) (g.map + pg - WIN_BYTES);
    return g;
}

/* A bad call must fail with MPI_ERR_RMA_RANGE: else a failure naming what came back. */
static void expect_range_error(int rc, const char *what)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_RMA_RANGE)
        gdr_test_fail("%s: %s", what, rc == MPI_SUCCESS ? "MPI_SUCCESS" : "wrong error class");
}

static const char *const op_names[] = { "Put", "Get", "Accumulate", "Get_accumulate",
    "Fetch_and_op", "Compare_and_swap", "Rput", "Rget", "Raccumulate", "Rget_accumulate"
};
#define N_OPS 10

/* Issues op k of count longs at target displacement disp; returns its error code. */
static int issue(int k, int count, int target, MPI_Aint disp, long *src, long *res, MPI_Win win)
{
    MPI_Request req = MPI_REQUEST_NULL;
    long cmp = 0;
    int rc;
    switch (k) {
    case 0: rc = MPI_Put(src, count, MPI_LONG, target, disp, count, MPI_LONG, win); break;
    case 1: rc = MPI_Get(res, count, MPI_LONG, target, disp, count, MPI_LONG, win); break;
    case 2: rc = MPI_Accumulate(src, count, MPI_LONG, target, disp, count, MPI_LONG, MPI_SUM,
                                win); break;
    case 3: rc = MPI_Get_accumulate(src, count, MPI_LONG, res, count, MPI_LONG, target, disp,
                                    count, MPI_LONG, MPI_SUM, win); break;
    case 4: rc = MPI_Fetch_and_op(src, res, MPI_LONG, target, disp, MPI_SUM, win); break;
    case 5: rc = MPI_Compare_and_swap(src, &cmp, res, MPI_LONG, target, disp, win); break;
    case 6: rc = MPI_Rput(src, count, MPI_LONG, target, disp, count, MPI_LONG, win, &req); break;
    case 7: rc = MPI_Rget(res, count, MPI_LONG, target, disp, count, MPI_LONG, win, &req); break;
    case 8: rc = MPI_Raccumulate(src, count, MPI_LONG, target, disp, count, MPI_LONG, MPI_SUM,
                                 win, &req); break;
    default: rc = MPI_Rget_accumulate(src, count, MPI_LONG, res, count, MPI_LONG, target, disp,
                                      count, MPI_LONG, MPI_SUM, win, &req); break;
    }
    if (rc == MPI_SUCCESS && req != MPI_REQUEST_NULL)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    return rc;
}

/* The window of kind `dynamic` at every rank; base_disp: where the window starts at
 * target (0, or its attached address). */
static void run(int dynamic)
{
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (rank + 1) % n;
    guarded_t g = guarded_new();
    MPI_Win win;
    MPI_Aint base = 0;

    for (int i = 0; i < N_LONG; i++)
        g.win[i] = 1000 * rank + i;
    if (dynamic) {
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, g.win, WIN_BYTES);
        MPI_Aint mine, *all = malloc((size_t) n * sizeof(*all));
        MPI_Get_address(g.win, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
        base = all[right];
        free(all);
    } else {
        MPI_Win_create(g.win, WIN_BYTES, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Aint unit = dynamic ? (MPI_Aint) sizeof(long) : 1;      /* dynamic: bytes */
    MPI_Aint last = base + (N_LONG - 1) * unit, past = base + (N_LONG + 8) * unit;
    long src[2] = { 1, 1 }, res[2];

    MPI_Win_lock_all(0, win);
    for (int k = 0; k < N_OPS; k++) {
        int one = k == 4 || k == 5;             /* Fetch_and_op, Compare_and_swap: 1 element */
        gdr_test_set_context("%s window, %s", dynamic ? "dynamic" : "created", op_names[k]);
        int rc = issue(k, 1, right, last, src, res, win);
        gdr_check_mpi("at the last element", rc);
        MPI_Win_flush(right, win);
        if (!one) {
            expect_range_error(issue(k, 2, right, last, src, res, win),
                               "one element past the end");
            MPI_Win_flush(right, win);
        }
        expect_range_error(issue(k, 1, right, past, src, res, win), "wholly past the end");
        MPI_Win_flush(right, win);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* the left rank's operations on my last element, in order: Put 1, Accumulate +1,
     * Get_accumulate +1, Fetch_and_op +1 (4), Compare_and_swap (compare 0: unchanged),
     * Rput 1, Raccumulate +1, Rget_accumulate +1: 3 */
    long expect_last = 3;
    gdr_test_set_context("%s window, after every operation", dynamic ? "dynamic" : "created");
    for (int i = 0; i < N_LONG - 1; i++)
        if (!gdr_check_long("window", i, 1000 * rank + i, g.win[i]))
            break;
    gdr_check_long("window", N_LONG - 1, expect_last, g.win[N_LONG - 1]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic) {
        /* what the origin learned of the region ended with its epoch: once the target
         * detached it, the same address is refused and nothing lands there */
        MPI_Win_detach(win, g.win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        for (int k = 0; k < N_OPS; k++) {
            gdr_test_set_context("dynamic window, after the target detached the region, %s",
                                 op_names[k]);
            expect_range_error(issue(k, 1, right, last, src, res, win), "to the detached region");
            MPI_Win_flush(right, win);
        }
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        gdr_check_long("detached window", N_LONG - 1, expect_last, g.win[N_LONG - 1]);
    }
    MPI_Win_free(&win);
    munmap(g.map, 2 * (size_t) sysconf(_SC_PAGESIZE));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    run(0);
    run(1);
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
