/* intercomm_threads (issue 72, item 2): intercommunicators under MPI_THREAD_MULTIPLE.
 *
 * mpi4py's default thread level is MPI_THREAD_MULTIPLE, and its test_comm_inter,
 * test_cco_obj_inter and test_util_pkl5 split MPI_COMM_WORLD into halves, join them with
 * MPI_Intercomm_create and talk across: on gdr every such job aborted ("pthread_mutex_lock:
 * Resource deadlock avoided", gdr_pt2pt.h line 52) because the leaders' exchange inside
 * MPI_Intercomm_create ran a send-receive under a VCI lock that CH4 already held.  This
 * program does the same and checks every value:
 *  - MPI_Comm_split into halves (ranks below size/2, the rest), MPI_Intercomm_create with
 *    MPI_COMM_WORLD as the peer communicator; the remote group's size and world ranks;
 *  - point-to-point across: blocking (one long, then 64 KiB: eager and rendezvous),
 *    nonblocking, MPI_ANY_SOURCE receives (each remote rank seen once), MPI_Probe,
 *    MPI_Iprobe from a given rank, MPI_Improbe + MPI_Mrecv;
 *  - collectives on the intercommunicator: MPI_Barrier, MPI_Bcast from each side
 *    (MPI_ROOT / MPI_PROC_NULL), MPI_Allreduce and MPI_Allgather (each side gets the
 *    other's contributions);
 *  - THREADS threads at once, each first making its own intercommunicator (concurrent
 *    MPI_Intercomm_create on per-thread duplicates) and then, ITERS times, nonblocking and
 *    any-source exchanges and the collectives on its own duplicate of the
 *    intercommunicator, plus tag-separated exchanges on the shared one.
 * Two or more ranks (testlist: 2 and 4). */
#include <pthread.h>
#include "gdr_mpi_test.h"

#define THREADS 4
#define ITERS 30
#define BIG 8192                /* longs: 64 KiB, above gdr's 16-KiB eager limit */

static int wrank, wsize, color, lrank, lsize, rsize;
static int *rworld;             /* world rank of each remote rank */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static long val(int from, int to, int tag, int it)
{
    return ((long) from * 1000 + to) * 1000000L + (long) tag * 1000 + it;
}

/* Checks for code that threads run: gdr_test_fail's state is shared, so under a lock, and
 * the context names the thread (-1: the main thread, context already set). */
static int check(int t, const char *what, long idx, long long want, long long got)
{
    if (want == got)
        return 1;
    pthread_mutex_lock(&fail_lock);
    if (t >= 0)
        gdr_test_set_context("thread %d", t);
    gdr_check_long(what, idx, want, got);
    pthread_mutex_unlock(&fail_lock);
    return 0;
}

static int check_mpi(int t, const char *call, int rc)
{
    if (rc == MPI_SUCCESS)
        return 1;
    pthread_mutex_lock(&fail_lock);
    if (t >= 0)
        gdr_test_set_context("thread %d", t);
    gdr_check_mpi(call, rc);
    pthread_mutex_unlock(&fail_lock);
    return 0;
}

#define CHECK_MPI(t_, call_) check_mpi((t_), #call_, (call_))

/* Blocking: pairs (local i, remote j) in order, the lower half sending first; no
 * deadlock at rendezvous sizes either (pair (i, j) waits only for pairs before it). */
static void p2p_blocking(int t, MPI_Comm ic, int tag, long count)
{
    long *out = malloc(sizeof(long) * (size_t) count), *in = malloc(sizeof(long) * (size_t) count);
    MPI_Status st;
    memset(&st, 0, sizeof(st));
    if (out == NULL || in == NULL)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    for (int j = 0; j < rsize; j++) {
        for (long k = 0; k < count; k++) {
            out[k] = val(wrank, rworld[j], tag, (int) (k % 1000));
            in[k] = -1;
        }
        if (color == 0) {
            CHECK_MPI(t, MPI_Send(out, (int) count, MPI_LONG, j, tag, ic));
            CHECK_MPI(t, MPI_Recv(in, (int) count, MPI_LONG, j, tag, ic, &st));
        } else {
            CHECK_MPI(t, MPI_Recv(in, (int) count, MPI_LONG, j, tag, ic, &st));
            CHECK_MPI(t, MPI_Send(out, (int) count, MPI_LONG, j, tag, ic));
        }
        int got = -1;
        MPI_Get_count(&st, MPI_LONG, &got);
        check(t, "blocking: source", j, j, st.MPI_SOURCE);
        check(t, "blocking: count", j, count, got);
        for (long k = 0; k < count; k++)
            if (!check(t, "blocking: value", k, val(rworld[j], wrank, tag, (int) (k % 1000)),
                       in[k]))
                break;
    }
    free(out);
    free(in);
}

/* Nonblocking: receive from and send to every remote rank, Waitall. */
static void p2p_nonblocking(int t, MPI_Comm ic, int tag, int it)
{
    long out[rsize], in[rsize];
    MPI_Request req[2 * rsize];
    for (int j = 0; j < rsize; j++) {
        in[j] = -1;
        out[j] = val(wrank, rworld[j], tag, it);
        CHECK_MPI(t, MPI_Irecv(&in[j], 1, MPI_LONG, j, tag, ic, &req[j]));
    }
    for (int j = 0; j < rsize; j++)
        CHECK_MPI(t, MPI_Isend(&out[j], 1, MPI_LONG, j, tag, ic, &req[rsize + j]));
    MPI_Status sts[2 * rsize];
    CHECK_MPI(t, MPI_Waitall(2 * rsize, req, sts));
    for (int j = 0; j < rsize; j++)
        check(t, "nonblocking: value", j, val(rworld[j], wrank, tag, it), in[j]);
}

/* MPI_ANY_SOURCE: every remote rank sends one message; each is seen exactly once. */
static void p2p_anysource(int t, MPI_Comm ic, int tag, int it)
{
    long out[rsize];
    int seen[rsize];
    MPI_Request req[rsize];
    for (int j = 0; j < rsize; j++) {
        seen[j] = 0;
        out[j] = val(wrank, rworld[j], tag, it);
        CHECK_MPI(t, MPI_Isend(&out[j], 1, MPI_LONG, j, tag, ic, &req[j]));
    }
    for (int k = 0; k < rsize; k++) {
        long v = -1;
        MPI_Status st;
        CHECK_MPI(t, MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, tag, ic, &st));
        int s = st.MPI_SOURCE;
        if (!check(t, "any-source: source in range", k, 1, s >= 0 && s < rsize))
            continue;
        check(t, "any-source: times seen", s, 0, seen[s]++);
        check(t, "any-source: value", s, val(rworld[s], wrank, tag, it), v);
    }
    MPI_Status sts[rsize];
    CHECK_MPI(t, MPI_Waitall(rsize, req, sts));
}

/* MPI_Probe (any source), MPI_Iprobe (given source), MPI_Improbe + MPI_Mrecv. */
static void p2p_probe(int t, MPI_Comm ic, int tag, int it)
{
    for (int way = 0; way < 3; way++) {
        long out[rsize];
        int seen[rsize];
        MPI_Request req[rsize];
        for (int j = 0; j < rsize; j++) {
            seen[j] = 0;
            out[j] = val(wrank, rworld[j], tag + way, it);
            CHECK_MPI(t, MPI_Isend(&out[j], 1, MPI_LONG, j, tag + way, ic, &req[j]));
        }
        for (int k = 0; k < rsize; k++) {
            MPI_Status st;
            memset(&st, 0, sizeof(st));
            st.MPI_SOURCE = -1;
            MPI_Message msg = MPI_MESSAGE_NULL;
            int flag = 0, s = k, count = -1;
            long v = -1;
            if (way == 0) {
                CHECK_MPI(t, MPI_Probe(MPI_ANY_SOURCE, tag, ic, &st));
                s = st.MPI_SOURCE;
            } else if (way == 1) {
                while (!flag && CHECK_MPI(t, MPI_Iprobe(k, tag + 1, ic, &flag, &st)))
                    continue;
                check(t, "Iprobe: source", k, k, st.MPI_SOURCE);
            } else {
                while (!flag && CHECK_MPI(t, MPI_Improbe(MPI_ANY_SOURCE, tag + 2, ic, &flag,
                                                         &msg, &st)))
                    continue;
                s = st.MPI_SOURCE;
            }
            MPI_Get_count(&st, MPI_LONG, &count);
            check(t, "probe: count", way, 1, count);
            if (!check(t, "probe: source in range", way, 1, s >= 0 && s < rsize))
                continue;
            check(t, "probe: times seen", s, 0, seen[s]++);
            if (way == 2)
                CHECK_MPI(t, MPI_Mrecv(&v, 1, MPI_LONG, &msg, &st));
            else
                CHECK_MPI(t, MPI_Recv(&v, 1, MPI_LONG, s, tag + way, ic, &st));
            check(t, "probe: value", way * 1000 + s, val(rworld[s], wrank, tag + way, it), v);
        }
        MPI_Status sts[rsize];
    CHECK_MPI(t, MPI_Waitall(rsize, req, sts));
    }
}

/* Barrier, Bcast from each side, Allreduce, Allgather on the intercommunicator. */
static void colls(int t, MPI_Comm ic, int it)
{
    CHECK_MPI(t, MPI_Barrier(ic));
    for (int side = 0; side < 2; side++) {
        long v = -1, want = 7000000L + side * 1000 + it;
        if (color == side) {
            int root = lrank == 0 ? MPI_ROOT : MPI_PROC_NULL;
            if (lrank == 0)
                v = want;
            CHECK_MPI(t, MPI_Bcast(&v, 1, MPI_LONG, root, ic));
            check(t, "Bcast: root's own value", side, lrank == 0 ? want : -1, v);
        } else {
            CHECK_MPI(t, MPI_Bcast(&v, 1, MPI_LONG, 0, ic));
            check(t, "Bcast: value", side, want, v);
        }
    }
    long mine = wrank + 1 + it, sum = -1, want = 0;
    for (int j = 0; j < rsize; j++)
        want += rworld[j] + 1 + it;
    CHECK_MPI(t, MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, ic));
    check(t, "Allreduce: sum of the other side", 0, want, sum);
    long g = (long) wrank * 10 + it, all[rsize];
    for (int j = 0; j < rsize; j++)
        all[j] = -1;
    CHECK_MPI(t, MPI_Allgather(&g, 1, MPI_LONG, all, 1, MPI_LONG, ic));
    for (int j = 0; j < rsize; j++)
        check(t, "Allgather: the other side's", j, (long) rworld[j] * 10 + it, all[j]);
}

typedef struct {
    int t;
    MPI_Comm own;               /* this thread's duplicate of the intercommunicator */
    MPI_Comm local, world;      /* and of the local group and the world, for its own */
    MPI_Comm shared;            /* the intercommunicator every thread uses */
} thread_arg_t;

static int remote_leader(void)
{
    return color == 0 ? wsize / 2 : 0;
}

static void *thread_main(void *p)
{
    thread_arg_t *a = p;
    int t = a->t;
    /* intercommunicators made by several threads at once */
    MPI_Comm mine = MPI_COMM_NULL;
    if (CHECK_MPI(t, MPI_Intercomm_create(a->local, 0, a->world, remote_leader(), 50 + t,
                                          &mine))) {
        int rs = -1;
        MPI_Comm_remote_size(mine, &rs);
        check(t, "own intercomm: remote size", 0, rsize, rs);
        p2p_nonblocking(t, mine, 40, 0);
        colls(t, mine, 0);
        CHECK_MPI(t, MPI_Comm_free(&mine));
    }
    for (int it = 0; it < ITERS; it++) {
        p2p_nonblocking(t, a->own, 1, it);
        p2p_anysource(t, a->own, 2, it);
        if (it % 5 == 0)
            p2p_probe(t, a->own, 10, it);
        colls(t, a->own, it);
        /* the shared intercommunicator: tags keep the threads' messages apart */
        p2p_nonblocking(t, a->shared, 100 + t, it);
        p2p_anysource(t, a->shared, 200 + t, it);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    gdr_test_set_context("MPI_Init_thread");
    gdr_check_long("provided thread level", 0, MPI_THREAD_MULTIPLE, provided);
    if (wsize < 2) {
        fprintf(stderr, "intercomm_threads needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_Comm local, inter;
    color = wrank < wsize / 2 ? 0 : 1;
    gdr_test_set_context("MPI_Comm_split + MPI_Intercomm_create");
    int rc = MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &local);
    if (rc != MPI_SUCCESS)
        gdr_test_die("MPI_Comm_split", rc);
    rc = MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, remote_leader(), 99, &inter);
    if (rc != MPI_SUCCESS)
        gdr_test_die("MPI_Intercomm_create", rc);
    int flag = 0;
    MPI_Comm_test_inter(inter, &flag);
    gdr_check_long("MPI_Comm_test_inter", 0, 1, flag);
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    int lo = wsize / 2;
    gdr_check_long("local size", 0, color == 0 ? lo : wsize - lo, lsize);
    gdr_check_long("remote size", 0, color == 0 ? wsize - lo : lo, rsize);
    gdr_check_long("local rank", 0, color == 0 ? wrank : wrank - lo, lrank);
    if (rsize != (color == 0 ? wsize - lo : lo))
        gdr_test_die("MPI_Comm_remote_size", MPI_ERR_COMM);
    rworld = malloc(sizeof(int) * (size_t) rsize);
    int *idx = malloc(sizeof(int) * (size_t) rsize);
    MPI_Group rg, wg;
    MPI_Comm_remote_group(inter, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int j = 0; j < rsize; j++)
        idx[j] = j;
    MPI_Group_translate_ranks(rg, rsize, idx, wg, rworld);
    for (int j = 0; j < rsize; j++)
        gdr_check_long("remote group's world rank", j, (color == 0 ? lo : 0) + j, rworld[j]);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    free(idx);

    gdr_test_set_context("main thread: blocking, 1 long");
    p2p_blocking(-1, inter, 1, 1);
    gdr_test_set_context("main thread: blocking, %d longs", BIG);
    p2p_blocking(-1, inter, 2, BIG);
    gdr_test_set_context("main thread: nonblocking");
    p2p_nonblocking(-1, inter, 3, 0);
    gdr_test_set_context("main thread: any source");
    p2p_anysource(-1, inter, 4, 0);
    gdr_test_set_context("main thread: probe");
    p2p_probe(-1, inter, 10, 0);
    gdr_test_set_context("main thread: collectives");
    colls(-1, inter, 0);

    thread_arg_t args[THREADS];
    pthread_t th[THREADS];
    gdr_test_set_context("duplicates for the threads");
    for (int t = 0; t < THREADS; t++) {
        args[t].t = t;
        args[t].shared = inter;
        if (MPI_Comm_dup(inter, &args[t].own) != MPI_SUCCESS
            || MPI_Comm_dup(local, &args[t].local) != MPI_SUCCESS
            || MPI_Comm_dup(MPI_COMM_WORLD, &args[t].world) != MPI_SUCCESS)
            gdr_test_die("MPI_Comm_dup", MPI_ERR_COMM);
    }
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, thread_main, &args[t]) != 0)
            gdr_test_die("pthread_create", MPI_ERR_OTHER);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        MPI_Comm_free(&args[t].own);
        MPI_Comm_free(&args[t].local);
        MPI_Comm_free(&args[t].world);
    }

    gdr_test_set_context("after the threads: collectives");
    colls(-1, inter, ITERS);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    free(rworld);
    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs != 0;
}
