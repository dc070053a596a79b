/* Leaks over many window lifetimes (issue 24): thousands of MPI_Win_create/free,
 * MPI_Win_allocate/free, attach/detach on a dynamic window and lock/unlock epochs, each
 * cycle moving a value to the next rank and checking it there.  After a warm-up, the
 * process's resources must stay flat: open file descriptors, and, where the RDMA
 * stack can be asked (the `rdma` tool of iproute2 in the Soft-RoCE guests), its memory
 * registrations, queue pairs and completion queues; resident memory may not grow by
 * more than RSS_SLACK.  Every difference is an error, and so is a registration count that
 * does not see one window come and go; GDR_TEST_VERBOSE=1 makes rank 0 print the counts.
 *
 *   rma_cycles [CYCLES]      (default 2000 of each kind) */
#define _GNU_SOURCE
#include <dirent.h>
#include <unistd.h>
#include "gdr_mpi_test.h"

#define WARMUP 20
#define RSS_SLACK (16L << 20)

typedef struct resources {
    long fds, rss;
    long mrs, qps, cqs;         /* -1: the RDMA stack cannot be asked here */
} resources_t;

static long count_fds(void)
{
    long n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;               /* the directory's own */
}

static long rss_bytes(void)
{
    long pages = -1, resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* This process's objects of one kind ("mr", "qp", "cq") as the kernel's RDMA netlink
 * lists them; -1 when it cannot be asked (no `rdma` tool, no RDMA device). */
static long rdma_objects(const char *kind)
{
    char cmd[128], key[64];
    snprintf(cmd, sizeof(cmd), "rdma -j resource show %s 2>/dev/null", kind);
    snprintf(key, sizeof(key), "\"pid\":%ld,", (long) getpid());
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    long n = 0, bytes = 0;
    char buf[65536];
    size_t klen = strlen(key), have = 0;
    for (size_t got; (got = fread(buf + have, 1, sizeof(buf) - 1 - have, p)) > 0;) {
        bytes += (long) got;
        have += got;
        buf[have] = '\0';
        char *at = buf;
        for (char *hit; (hit = strstr(at, key)) != NULL; at = hit + klen)
            n++;
        /* keep a tail that may hold the start of a key cut by the read */
        size_t keep = have < klen ? have : klen - 1;
        memmove(buf, buf + have - keep, keep);
        have = keep;
    }
    int st = pclose(p);
    return st == 0 && bytes > 0 ? n : -1;
}

static resources_t measure(void)
{
    /* rdma's popen opens and closes descriptors: count ours first */
    resources_t r = {.fds = count_fds(),.rss = rss_bytes() };
    r.mrs = rdma_objects("mr");
    r.qps = rdma_objects("qp");
    r.cqs = rdma_objects("cq");
    return r;
}

static void compare(const char *kind, int cycles, resources_t a, resources_t b)
{
    gdr_test_set_context("%d x %s", cycles, kind);
    gdr_check_long("open file descriptors", 0, a.fds, b.fds);
    if (a.mrs >= 0 && b.mrs >= 0)
        gdr_check_long("memory registrations", 0, a.mrs, b.mrs);
    if (a.qps >= 0 && b.qps >= 0)
        gdr_check_long("queue pairs", 0, a.qps, b.qps);
    if (a.cqs >= 0 && b.cqs >= 0)
        gdr_check_long("completion queues", 0, a.cqs, b.cqs);
    if (b.rss - a.rss > RSS_SLACK)
        gdr_test_fail("resident memory grew by %ld KiB (more than %ld KiB)",
                      (b.rss - a.rss) >> 10, RSS_SLACK >> 10);
}

/* One cycle of kind k: a window born, a value from every rank to the next, checked
 * there, the window gone. */
static void cycle(int k, int i, MPI_Win *held, MPI_Win dyn)
{
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    long value = (long) i * n + rank, expect = (long) i * n + left;
    long *mem = NULL;
    MPI_Win win = MPI_WIN_NULL;

    switch (k) {
    case 0:                    /* MPI_Win_create / free, fence epochs */
        mem = calloc(4, sizeof(long));
        if (!gdr_check_mpi("MPI_Win_create", MPI_Win_create(mem, 4 * sizeof(long), sizeof(long),
                                                            MPI_INFO_NULL, MPI_COMM_WORLD,
                                                            &win)))
            break;
        MPI_Win_fence(0, win);
        MPI_Put(&value, 1, MPI_LONG, right, 1, 1, MPI_LONG, win);
        MPI_Win_fence(0, win);
        gdr_check_long("window", 1, expect, mem[1]);
        MPI_Win_free(&win);
        free(mem);
        break;
    case 1:                    /* MPI_Win_allocate / free, lock_all epochs */
        if (!gdr_check_mpi("MPI_Win_allocate", MPI_Win_allocate(4 * sizeof(long), sizeof(long),
                                                                MPI_INFO_NULL, MPI_COMM_WORLD,
                                                                &mem, &win)))
            break;
        mem[2] = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        MPI_Put(&value, 1, MPI_LONG, right, 2, 1, MPI_LONG, win);
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);    /* see the window's memory */
        gdr_check_long("window", 2, expect, mem[2]);
        MPI_Win_unlock(rank, win);
        MPI_Win_free(&win);
        break;
    case 2:{                   /* attach / detach on one dynamic window */
            MPI_Aint mine, theirs[2] = { 0, 0 }, *all = malloc((size_t) n * sizeof(MPI_Aint));
            mem = calloc(4, sizeof(long));
            gdr_check_mpi("MPI_Win_attach", MPI_Win_attach(dyn, mem, 4 * sizeof(long)));
            MPI_Get_address(mem, &mine);
            MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
            theirs[0] = all[right];
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, dyn);
            MPI_Put(&value, 1, MPI_LONG, right, theirs[0] + 3 * (MPI_Aint) sizeof(long), 1,
                    MPI_LONG, dyn);
            MPI_Win_unlock(right, dyn);
            MPI_Barrier(MPI_COMM_WORLD);
            gdr_check_long("attached region", 3, expect, mem[3]);
            gdr_check_mpi("MPI_Win_detach", MPI_Win_detach(dyn, mem));
            MPI_Barrier(MPI_COMM_WORLD);        /* nobody reaches it any more */
            free(mem);
            free(all);
            break;
        }
    case 3:{                   /* lock / unlock epochs on one window */
            long *base;
            int flag;
            MPI_Win_get_attr(*held, MPI_WIN_BASE, &base, &flag);
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, *held);
            MPI_Put(&value, 1, MPI_LONG, right, 0, 1, MPI_LONG, *held);
            MPI_Win_unlock(right, *held);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, *held);
            gdr_check_long("window", 0, expect, base[0]);
            MPI_Win_unlock(rank, *held);
            MPI_Barrier(MPI_COMM_WORLD);
            break;
        }
    }
}

int main(int argc, char **argv)
{
    static const char *const kinds[] = { "MPI_Win_create/free", "MPI_Win_allocate/free",
        "MPI_Win_attach/detach", "MPI_Win_lock/unlock"
    };
    int cycles = argc > 1 ? atoi(argv[1]) : 2000, rank;
    MPI_Win held, dyn;
    long *held_mem;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* the counts must see a window: one registered while it lives, none after.  First a
     * message to every rank: with lazy connections, each rank's first message from a peer
     * grows its shared receive queue (one registration more, for good) */
    int nranks;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int *ones = calloc(2 * (size_t) nranks, sizeof(int));
    MPI_Alltoall(ones, 1, MPI_INT, ones + nranks, 1, MPI_INT, MPI_COMM_WORLD);
    free(ones);
    resources_t bare = measure();
    MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &held_mem, &held);
    resources_t with = measure();
    MPI_Win_free(&held);
    resources_t freed = measure();
    if (bare.mrs >= 0) {
        gdr_test_set_context("registrations of one window");
        if (!(with.mrs > bare.mrs && freed.mrs == bare.mrs))
            gdr_test_fail("MRs %ld before MPI_Win_allocate, %ld with the window, %ld after "
                          "MPI_Win_free: the count does not see windows", bare.mrs, with.mrs,
                          freed.mrs);
    }
    MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &held_mem, &held);
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < WARMUP; i++)
            cycle(k, i, &held, dyn);
        MPI_Barrier(MPI_COMM_WORLD);
        resources_t before = measure();
        double t0 = MPI_Wtime();
        for (int i = WARMUP; i < WARMUP + cycles && gdr_test_errors() == 0; i++)
            cycle(k, i, &held, dyn);
        double secs = MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
        resources_t after = measure();
        compare(kinds[k], cycles, before, after);
        if (rank == 0 && getenv("GDR_TEST_VERBOSE") != NULL)   /* the runners want only " No Errors" */
            printf("%d x %-22s %6.2f s: fds %ld -> %ld, RSS %ld -> %ld KiB, MRs %ld -> %ld, "
                   "QPs %ld -> %ld, CQs %ld -> %ld (-1: not asked)\n", cycles, kinds[k], secs,
                   before.fds, after.fds, before.rss >> 10, after.rss >> 10, before.mrs,
                   after.mrs, before.qps, after.qps, before.cqs, after.cqs);
    }
    MPI_Win_free(&dyn);
    MPI_Win_free(&held);
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
