/*
 * rma_bench: OSU-style one-sided benchmarks between rank 0 (origin) and rank 1 (target),
 * for any MPI (gdr, and the peers measured next to it by bench/rma-vs-raw).
 *
 *   mpiexec -n 2 rma_bench [-t TOOL] [-k lat|bw|rate] [-o OPS] [-w WINS] [-s SYNCS]
 *                          [-n MIN_BYTES] [-m MAX_BYTES] [-i ITERS] [-W WINDOW] [-d TYPE]
 *
 *   OPS   comma list of put,get,acc,get_acc,fop,cas         (default put)
 *   WINS  comma list of allocate,create,dynamic             (default allocate)
 *   SYNCS comma list of flush,flush_local,lock,lock_all,fence,pscw  (default flush)
 *
 * lat:  ITERS times one operation then its synchronisation: flush and flush_local inside
 *       one MPI_Win_lock_all epoch; lock, lock_all: an epoch per operation; fence: a
 *       fence pair per operation; pscw: start/complete (origin) against post/wait.
 * bw:   ITERS times WINDOW operations then one synchronisation; MB/s.
 * Sizes go from MIN_BYTES (default 1, or 8 for the accumulates) up to MAX_BYTES, four times
 * larger each step.
 * rate: like bw at the smallest size; latency_us is the time per operation.
 * acc and get_acc use MPI_SUM on TYPE; fop and cas move one TYPE.  TYPE: int64 (the
 * default, MPI_INT64_T: what a NIC's atomics take), int (MPI_INT) or char (MPI_CHAR, OSU's
 * default type, which no NIC atomic takes); any but int64 names its rows OP-TYPE.
 *
 * CSV rows (no header), the columns of bench/README.md:
 *   benchmark,bytes,latency_us,bandwidth_MBps,tool,p50_us
 * with benchmark = KIND_OP_WIN_SYNC, e.g. lat_put_allocate_flush.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

enum { OP_PUT, OP_GET, OP_ACC, OP_GET_ACC, OP_FOP, OP_CAS, N_OPS };
static const char *const op_names[] = { "put", "get", "acc", "get_acc", "fop", "cas" };
enum { WIN_ALLOCATE, WIN_CREATE, WIN_DYNAMIC, N_WINS };
static const char *const win_names[] = { "allocate", "create", "dynamic" };
enum { S_FLUSH, S_FLUSH_LOCAL, S_LOCK, S_LOCK_ALL, S_FENCE, S_PSCW, N_SYNCS };
static const char *const sync_names[] = { "flush", "flush_local", "lock", "lock_all", "fence",
    "pscw"
};

static int rank;
static MPI_Group peer_group;
static MPI_Datatype elem = MPI_INT64_T;   /* -d: the accumulates' element type */
static int elem_size = 8;
static const char *elem_suffix = "";

static int lookup(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

/* "a,b,c" -> mask of known names; exits on an unknown one */
static unsigned parse_list(const char *list, const char *const *names, int n)
{
    unsigned mask = 0;
    char *copy = strdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i = lookup(tok, names, n);
        if (i < 0) {
            if (rank == 0)
                fprintf(stderr, "rma_bench: unknown name '%s'\n", tok);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        mask |= 1u << i;
    }
    free(copy);
    return mask;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

typedef struct {
    MPI_Win win;
    void *base;                 /* this rank's window memory */
    MPI_Aint target_disp;       /* where rank 1's window starts, for rank 0 */
    int kind;
} win_t;

static void win_open(win_t * w, int kind, MPI_Aint bytes)
{
    w->kind = kind;
    w->target_disp = 0;
    if (kind == WIN_ALLOCATE) {
        MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->base, &w->win);
    } else if (kind == WIN_CREATE) {
        w->base = malloc((size_t) bytes);
        MPI_Win_create(w->base, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
    } else {
        w->base = malloc((size_t) bytes);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        MPI_Win_attach(w->win, w->base, bytes);
        MPI_Aint mine;
        MPI_Get_address(w->base, &mine);
        MPI_Aint all[2];
        MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
        w->target_disp = all[1];
    }
    memset(w->base, 0, (size_t) bytes);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void win_close(win_t * w)
{
    if (w->kind == WIN_DYNAMIC)
        MPI_Win_detach(w->win, w->base);
    MPI_Win_free(&w->win);
    if (w->kind != WIN_ALLOCATE)
        free(w->base);
}

static void issue(int op, win_t * w, char *src, char *dst, int bytes)
{
    int n8 = bytes / elem_size > 0 ? bytes / elem_size : 1;
    int64_t cmp = 0;
    switch (op) {
        case OP_PUT:
            MPI_Put(src, bytes, MPI_BYTE, 1, w->target_disp, bytes, MPI_BYTE, w->win);
            break;
        case OP_GET:
            MPI_Get(dst, bytes, MPI_BYTE, 1, w->target_disp, bytes, MPI_BYTE, w->win);
            break;
        case OP_ACC:
            MPI_Accumulate(src, n8, elem, 1, w->target_disp, n8, elem, MPI_SUM, w->win);
            break;
        case OP_GET_ACC:
            MPI_Get_accumulate(src, n8, elem, dst, n8, elem, 1, w->target_disp, n8, elem, MPI_SUM,
                               w->win);
            break;
        case OP_FOP:
            MPI_Fetch_and_op(src, dst, elem, 1, w->target_disp, MPI_SUM, w->win);
            break;
        case OP_CAS:
            MPI_Compare_and_swap(src, &cmp, dst, elem, 1, w->target_disp, w->win);
            break;
    }
}

/* Epoch helpers: the origin (rank 0) accesses, the target (rank 1) exposes. */
static void epoch_open(int sync, win_t * w)
{
    if (sync == S_LOCK && rank == 0)
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w->win);
    else if (sync == S_LOCK_ALL && rank == 0)
        MPI_Win_lock_all(0, w->win);
    else if (sync == S_FENCE)
        MPI_Win_fence(0, w->win);
    else if (sync == S_PSCW) {
        if (rank == 0)
            MPI_Win_start(peer_group, 0, w->win);
        else
            MPI_Win_post(peer_group, 0, w->win);
    }
}

static void epoch_close(int sync, win_t * w)
{
    if (sync == S_LOCK && rank == 0)
        MPI_Win_unlock(1, w->win);
    else if (sync == S_LOCK_ALL && rank == 0)
        MPI_Win_unlock_all(w->win);
    else if (sync == S_FENCE)
        MPI_Win_fence(0, w->win);
    else if (sync == S_PSCW) {
        if (rank == 0)
            MPI_Win_complete(w->win);
        else
            MPI_Win_wait(w->win);
    }
}

/* The clock of the timed rounds.  MPI_Wtime is clock_gettime, a system call of ~28 us in a
 * maint/rxe guest (User-Mode Linux gives its processes no vDSO), read around every timed
 * round; perftest, the raw limit these rows are set against, reads the TSC.  With
 * GDR_BENCH_TSC_MHZ set (the TSC's rate: bench/rma-vs-raw passes the host's, which the
 * guests read directly), x86 reads the TSC too. */
static double tsc_mhz;

static double now(void)
{
#if defined(__x86_64__)
    if (tsc_mhz > 0)
        return (double) __rdtsc() / (tsc_mhz * 1e6);
#endif
    return MPI_Wtime();
}

/* One timed round: `count` operations then the synchronisation of `sync`. */
static double round_trip(int op, int sync, win_t * w, char *src, char *dst, int bytes, int count)
{
    double t0 = now();
    int passive = sync == S_FLUSH || sync == S_FLUSH_LOCAL;
    if (!passive)
        epoch_open(sync, w);
    if (rank == 0) {
        for (int k = 0; k < count; k++)
            issue(op, w, src, dst, bytes);
        if (sync == S_FLUSH)
            MPI_Win_flush(1, w->win);
        else if (sync == S_FLUSH_LOCAL)
            MPI_Win_flush_local(1, w->win);
    }
    if (!passive)
        epoch_close(sync, w);
    return now() - t0;
}

static void run(const char *tool, const char *kind, int op, int wk, int sync, int from_bytes,
                int max_bytes, int iters, int window)
{
    int fixed = op == OP_FOP || op == OP_CAS;
    int min_bytes = op == OP_PUT || op == OP_GET ? 1 : elem_size;
    if (from_bytes > min_bytes && !fixed)
        min_bytes = from_bytes;
    int rate = !strcmp(kind, "rate"), lat = !strcmp(kind, "lat");
    int top = fixed || rate ? min_bytes : max_bytes;
    win_t w;
    char *src = malloc((size_t) max_bytes), *dst = malloc((size_t) max_bytes);
    double *t = malloc(sizeof(double) * (size_t) iters);
    memset(src, 1, (size_t) max_bytes);

    win_open(&w, wk, max_bytes);
    if (rank == 0 && (sync == S_FLUSH || sync == S_FLUSH_LOCAL))
        MPI_Win_lock_all(0, w.win);
    for (int bytes = fixed ? elem_size : min_bytes; bytes <= top; bytes *= (bytes < 8 ? 8 : 4)) {
        int count = lat ? 1 : window;
        int warm = iters / 10 + 1;
        for (int i = 0; i < warm; i++)
            round_trip(op, sync, &w, src, dst, bytes, count);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < iters; i++)
            t[i] = round_trip(op, sync, &w, src, dst, bytes, count);
        if (rank == 0) {
            double sum = 0;
            for (int i = 0; i < iters; i++)
                sum += t[i];
            qsort(t, (size_t) iters, sizeof(double), cmp_double);
            double mean_us = sum / iters * 1e6 / count, p50_us = t[iters / 2] * 1e6 / count;
            int typed = op != OP_PUT && op != OP_GET;
            printf("%s_%s%s_%s_%s,%d,%.2f,%.2f,%s,%.2f\n", kind, op_names[op],
                   typed ? elem_suffix : "", win_names[wk], sync_names[sync], bytes, mean_us,
                   bytes / mean_us, tool, p50_us);
            fflush(stdout);
        }
        if (bytes < 8 && !fixed && bytes * 8 > top)
            break;
    }
    if (rank == 0 && (sync == S_FLUSH || sync == S_FLUSH_LOCAL))
        MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    win_close(&w);
    free(src);
    free(dst);
    free(t);
}

int main(int argc, char **argv)
{
    const char *tool = "gdr", *kind = "lat";
    unsigned ops = 1u << OP_PUT, wins = 1u << WIN_ALLOCATE, syncs = 1u << S_FLUSH;
    int min_bytes = 1, max_bytes = 1 << 20, iters = 200, window = 64, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mhz = getenv("GDR_BENCH_TSC_MHZ");
    tsc_mhz = mhz != NULL ? atof(mhz) : 0;
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "rma_bench: run with exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *v = argv[i + 1];
        switch (argv[i][1]) {
            case 't': tool = v; break;
            case 'k': kind = v; break;
            case 'o': ops = parse_list(v, op_names, N_OPS); break;
            case 'w': wins = parse_list(v, win_names, N_WINS); break;
            case 's': syncs = parse_list(v, sync_names, N_SYNCS); break;
            case 'n': min_bytes = atoi(v); break;
            case 'm': max_bytes = atoi(v); break;
            case 'i': iters = atoi(v); break;
            case 'W': window = atoi(v); break;
            case 'd':
                if (!strcmp(v, "char"))
                    elem = MPI_CHAR, elem_size = 1, elem_suffix = "-char";
                else if (!strcmp(v, "int"))
                    elem = MPI_INT, elem_size = (int) sizeof(int), elem_suffix = "-int";
                else if (strcmp(v, "int64") != 0) {
                    if (rank == 0)
                        fprintf(stderr, "rma_bench: -d takes int64, int or char\n");
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
                break;
            default:
                if (rank == 0)
                    fprintf(stderr, "rma_bench: unknown option %s\n", argv[i]);
                MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (max_bytes < 8 || min_bytes < 1 || min_bytes > max_bytes || iters < 1 || window < 1)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int other = 1 - rank;
    MPI_Group_incl(world, 1, &other, &peer_group);
    MPI_Group_free(&world);

    for (int op = 0; op < N_OPS; op++)
        for (int wk = 0; wk < N_WINS; wk++)
            for (int s = 0; s < N_SYNCS; s++)
                if ((ops >> op & 1) && (wins >> wk & 1) && (syncs >> s & 1))
                    run(tool, kind, op, wk, s, min_bytes, max_bytes, iters, window);
    MPI_Group_free(&peer_group);
    MPI_Finalize();
    return 0;
}
