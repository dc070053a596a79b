/* The accumulate family on same-node device windows (gdr's same-node path, issue 20), on
 * the simulated GPU or a real one: every rank on one node, or two nodes of two ranks.
 *
 * 1. A matrix: window {MPI_Win_create over cuMemAlloc, MPI_Win_allocate with
 *    mpi_memory_alloc_kinds=cuda:device} x origin and result buffers {host, device} x sync
 *    {fence, PSCW, lock, lock_all + flush}; in each cell every rank applies to its right
 *    neighbour's window Accumulate (SUM of int32, double and int8, MAX of int32, BXOR of
 *    uint64, REPLACE of int16), Get_accumulate (SUM of int64 with the old values fetched,
 *    NO_OP), Fetch_and_op (SUM of int64) and Compare_and_swap (int32, one that swaps and
 *    one that does not); every target value and every fetched value checked.
 * 2. Contention: every rank at once, many rounds, on one window of rank 0: sums of 1 on
 *    int32, int8 neighbours (which share words) and float; Fetch_and_op tickets that must
 *    come out as a permutation; compare-and-swap increments that must all count.
 * 3. Raccumulate and Rget_accumulate: the result is there when MPI_Wait returns.
 *    Non-contiguous layouts (vector target types, vector origins in host and device
 *    memory, a vector result) from every rank at once on the same elements: exact sums.
 *    18 MiB from pageable memory: more than one round of gdr's device scratch.
 * 4. MPI_T: every one of those operations went as gdr's kernel on the peer's window
 *    (gdr_rma_{acc,get_acc,fop,cas}_local) when all ranks share the node; over Soft-RoCE
 *    with two ranks per guest, those to the other node through the staged protocol, whose
 *    target applies them with the same atomic steps (so the contention runs mix both).
 *    With GDR_TEST_DEVICE_BY_RANK (and GDR_GPUSIM_DEVICES=2, host-visible) the node's
 *    ranks take its GPUs in turn: then all of the node's accumulates go as MPIDIG's
 *    messages (every origin of an element one way), values all the same.
 * 5. Unless the simulated GPU runs strict (MPICH's message path touches device memory on
 *    the host there): a double complex accumulate, which the kernel's atomic steps do not
 *    take (16 bytes), goes as a message, and a later accumulate by gdr's kernel to the
 *    same bytes sees it (MPI's default accumulate ordering across the two paths).
 * Without a GPU or driver: prints why and fails. */

#include <complex.h>
#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

enum { N = 64 };                        /* elements per operation */
enum { WIN_BYTES = 64 * 1024 };
/* byte offsets of each operation's region in a window */
enum { AT_SUM32 = 0, AT_SUMD = 1024, AT_SUM8 = 2048, AT_MAX32 = 3072, AT_BXOR = 4096,
    AT_REPL16 = 5120, AT_GACC = 6144, AT_NOOP = 7168, AT_FOP = 8192, AT_CAS = 8200,
    AT_CAS_NO = 8204, AT_CPLX = 8208, AT_HOT = 16384
};

static MPI_T_pvar_session session;

static unsigned long long pvar(const char *name)
{
    unsigned long long v;
    (void) gdr_pvar_read(session, name, &v);
    return v;
}

/* MPI_T: accumulate-family operations that took one path ("local", "staged") */
static unsigned long long accumulates_by(const char *path)
{
    static const char *const kinds[] = { "acc", "get_acc", "fop", "cas" };
    char name[64];
    unsigned long long n = 0;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        snprintf(name, sizeof(name), "gdr_rma_%s_%s", kinds[k], path);
        n += pvar(name);
    }
    return n;
}

static unsigned long long local_accumulates(void)
{
    return accumulates_by("local");
}

static unsigned long long issued;      /* accumulate-family operations this rank issued */
static unsigned long long expect_local;        /* ... of them to a window on this GPU */
static int *same_gpu;                   /* per rank: on this node, which is all on one GPU */

/* n operations issued to target t */
static void count_ops(int t, int n)
{
    issued += (unsigned long long) n;
    expect_local += same_gpu[t] ? (unsigned long long) n : 0;
}

/* ---- windows ------------------------------------------------------------------------- */
typedef struct {
    MPI_Win win;
    unsigned char *base;                /* device memory */
    int allocated;
} dwin_t;

static void dwin_open(dwin_t *w, int allocated)
{
    w->allocated = allocated;
    if (allocated) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_memory_alloc_kinds", "cuda:device");
        if (!gdr_check_mpi("MPI_Win_allocate", MPI_Win_allocate(WIN_BYTES, 1, info,
                                                                 MPI_COMM_WORLD, &w->base,
                                                                 &w->win)))
            gdr_test_die("MPI_Win_allocate", MPI_ERR_OTHER);
        MPI_Info_free(&info);
    } else {
        w->base = dev_alloc(WIN_BYTES);
        if (!gdr_check_mpi("MPI_Win_create", MPI_Win_create(w->base, WIN_BYTES, 1,
                                                             MPI_INFO_NULL, MPI_COMM_WORLD,
                                                             &w->win)))
            gdr_test_die("MPI_Win_create", MPI_ERR_OTHER);
    }
}

static void dwin_close(dwin_t *w)
{
    MPI_Win_free(&w->win);
    if (!w->allocated)
        dev_free(w->base);
}

/* ---- 1. the matrix ------------------------------------------------------------------- */
typedef enum { SYNC_FENCE, SYNC_PSCW, SYNC_LOCK, SYNC_FLUSH, SYNC_N } sync_t;
static const char *sync_names[] = { "fence", "pscw", "lock", "lock_all+flush" };

/* What rank r's window holds before a cell, and what r's left neighbour sends. */
typedef struct {
    int32_t sum32[N], max32[N], cas[2];
    double sumd[N];
    int8_t sum8[N];
    uint64_t bxor[N];
    int16_t repl16[N];
    int64_t gacc[N], noop[N], fop;
} region_t;

static void fill(region_t *v, int r, int origin)
{
    int s = origin ? 7 : 3;
    for (int i = 0; i < N; i++) {
        v->sum32[i] = s * r + i;
        v->max32[i] = (i % 2 == origin) ? 1000 + r + i : -r - i;
        v->sumd[i] = s * r + 0.5 * i;
        v->sum8[i] = (int8_t) (s * r + i);
        v->bxor[i] = ((uint64_t) (r + 1) << (i % 60)) ^ (uint64_t) (s * i);
        v->repl16[i] = (int16_t) (s * 100 + r * 10 + i);
        v->gacc[i] = (int64_t) s * r * 1000 + i;
        v->noop[i] = -(int64_t) s * r - i;
    }
    v->fop = (int64_t) s * 11 + r;
    v->cas[0] = s * 5 + r;
    v->cas[1] = s * 6 + r;
}

/* The window's layout of a region (offsets above), from a host copy of the window. */
static void put_region(unsigned char *w, const region_t *v)
{
    memcpy(w + AT_SUM32, v->sum32, sizeof(v->sum32));
    memcpy(w + AT_SUMD, v->sumd, sizeof(v->sumd));
    memcpy(w + AT_SUM8, v->sum8, sizeof(v->sum8));
    memcpy(w + AT_MAX32, v->max32, sizeof(v->max32));
    memcpy(w + AT_BXOR, v->bxor, sizeof(v->bxor));
    memcpy(w + AT_REPL16, v->repl16, sizeof(v->repl16));
    memcpy(w + AT_GACC, v->gacc, sizeof(v->gacc));
    memcpy(w + AT_NOOP, v->noop, sizeof(v->noop));
    memcpy(w + AT_FOP, &v->fop, 8);
    memcpy(w + AT_CAS, &v->cas[0], 4);
    memcpy(w + AT_CAS_NO, &v->cas[1], 4);
}

static void get_region(const unsigned char *w, region_t *v)
{
    memcpy(v->sum32, w + AT_SUM32, sizeof(v->sum32));
    memcpy(v->sumd, w + AT_SUMD, sizeof(v->sumd));
    memcpy(v->sum8, w + AT_SUM8, sizeof(v->sum8));
    memcpy(v->max32, w + AT_MAX32, sizeof(v->max32));
    memcpy(v->bxor, w + AT_BXOR, sizeof(v->bxor));
    memcpy(v->repl16, w + AT_REPL16, sizeof(v->repl16));
    memcpy(v->gacc, w + AT_GACC, sizeof(v->gacc));
    memcpy(v->noop, w + AT_NOOP, sizeof(v->noop));
    memcpy(&v->fop, w + AT_FOP, 8);
    memcpy(&v->cas[0], w + AT_CAS, 4);
    memcpy(&v->cas[1], w + AT_CAS_NO, 4);
}

/* Fetched values, in host or device memory like the origin. */
typedef struct {
    int64_t gacc[N], noop[N], fop;
    int32_t cas[2];
} fetched_t;

static void issue_all(const region_t *o, fetched_t *f, int t, MPI_Win win)
{
    MPI_Accumulate(o->sum32, N, MPI_INT32_T, t, AT_SUM32, N, MPI_INT32_T, MPI_SUM, win);
    MPI_Accumulate(o->sumd, N, MPI_DOUBLE, t, AT_SUMD, N, MPI_DOUBLE, MPI_SUM, win);
    MPI_Accumulate(o->sum8, N, MPI_INT8_T, t, AT_SUM8, N, MPI_INT8_T, MPI_SUM, win);
    MPI_Accumulate(o->max32, N, MPI_INT, t, AT_MAX32, N, MPI_INT, MPI_MAX, win);
    MPI_Accumulate(o->bxor, N, MPI_UINT64_T, t, AT_BXOR, N, MPI_UINT64_T, MPI_BXOR, win);
    MPI_Accumulate(o->repl16, N, MPI_SHORT, t, AT_REPL16, N, MPI_SHORT, MPI_REPLACE, win);
    MPI_Get_accumulate(o->gacc, N, MPI_INT64_T, f->gacc, N, MPI_INT64_T, t, AT_GACC, N,
                       MPI_INT64_T, MPI_SUM, win);
    MPI_Get_accumulate(NULL, 0, MPI_INT64_T, f->noop, N, MPI_INT64_T, t, AT_NOOP, N,
                       MPI_INT64_T, MPI_NO_OP, win);
    MPI_Fetch_and_op(&o->fop, &f->fop, MPI_INT64_T, t, AT_FOP, MPI_SUM, win);
    /* the target holds fill(t, 0)'s cas values: the first compare matches, the second not */
    MPI_Compare_and_swap(&o->cas[0], &o->cas[1], &f->cas[1], MPI_INT32_T, t, AT_CAS_NO, win);
    count_ops(t, 10);
}

static void run_cell(dwin_t *w, int rank, int size, int dev, sync_t s, MPI_Group left,
                     MPI_Group right)
{
    int t = (rank + 1) % size, l = (rank + size - 1) % size;
    region_t mine, theirs, got, sent;
    fill(&mine, rank, 0);                       /* this window's values before */
    fill(&sent, rank, 1);                       /* what this rank sends */
    fill(&theirs, l, 1);                        /* what the left neighbour sends */
    unsigned char *host = calloc(1, WIN_BYTES);
    put_region(host, &mine);
    dev_copy(w->base, host, WIN_BYTES);

    region_t *o = &sent;
    fetched_t fh, *f = &fh;
    memset(&fh, 0x5a, sizeof(fh));
    region_t *od = NULL;
    fetched_t *fd = NULL;
    if (dev) {
        od = dev_alloc(sizeof(*od));
        fd = dev_alloc(sizeof(*fd));
        dev_copy(od, &sent, sizeof(sent));
        dev_copy(fd, &fh, sizeof(fh));
        o = od;
        f = fd;
    }
    region_t target_now;
    fill(&target_now, t, 0);
    int32_t cas_new = sent.cas[0], cas_cmp = target_now.cas[0];
    int32_t *cas_dev = NULL;
    if (dev) {
        cas_dev = dev_alloc(2 * sizeof(int32_t));
        int32_t two[2] = { cas_new, cas_cmp };
        dev_copy(cas_dev, two, sizeof(two));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    switch (s) {
    case SYNC_FENCE:
        MPI_Win_fence(0, w->win);
        break;
    case SYNC_PSCW:
        MPI_Win_post(left, 0, w->win);
        MPI_Win_start(right, 0, w->win);
        break;
    case SYNC_LOCK:
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w->win);
        break;
    default:
        MPI_Win_lock_all(0, w->win);
    }
    issue_all(o, f, t, w->win);
    /* the swap that matches: the target's own cas[0] as the compare value */
    if (dev)
        MPI_Compare_and_swap(&cas_dev[0], &cas_dev[1], &f->cas[0], MPI_INT32_T, t, AT_CAS,
                             w->win);
    else
        MPI_Compare_and_swap(&cas_new, &cas_cmp, &f->cas[0], MPI_INT32_T, t, AT_CAS, w->win);
    count_ops(t, 1);
    switch (s) {
    case SYNC_FENCE:
        MPI_Win_fence(0, w->win);
        break;
    case SYNC_PSCW:
        MPI_Win_complete(w->win);
        MPI_Win_wait(w->win);
        break;
    case SYNC_LOCK:
        MPI_Win_unlock(t, w->win);
        break;
    default:
        MPI_Win_flush(t, w->win);
        MPI_Win_unlock_all(w->win);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* this window, as the left neighbour's operations left it */
    dev_copy(host, w->base, WIN_BYTES);
    get_region(host, &got);
    int bad = 0;
    for (int i = 0; i < N && !bad; i++) {
        bad |= !gdr_check_long("SUM int32", i, (int32_t) ((uint32_t) mine.sum32[i]
                                                          + (uint32_t) theirs.sum32[i]),
                               got.sum32[i]);
        bad |= !gdr_check_double("SUM double", i, mine.sumd[i] + theirs.sumd[i], got.sumd[i]);
        bad |= !gdr_check_long("SUM int8", i, (int8_t) (uint8_t) (mine.sum8[i] + theirs.sum8[i]),
                               got.sum8[i]);
        bad |= !gdr_check_long("MAX int", i, mine.max32[i] > theirs.max32[i] ? mine.max32[i]
                               : theirs.max32[i], got.max32[i]);
        bad |= !gdr_check_long("BXOR uint64", i, (long long) (mine.bxor[i] ^ theirs.bxor[i]),
                               (long long) got.bxor[i]);
        bad |= !gdr_check_long("REPLACE short", i, theirs.repl16[i], got.repl16[i]);
        bad |= !gdr_check_long("Get_accumulate SUM int64", i, mine.gacc[i] + theirs.gacc[i],
                               got.gacc[i]);
        bad |= !gdr_check_long("Get_accumulate NO_OP leaves the target", i, mine.noop[i],
                               got.noop[i]);
    }
    gdr_check_long("Fetch_and_op SUM", 0, mine.fop + theirs.fop, got.fop);
    gdr_check_long("Compare_and_swap that matches", 0, theirs.cas[0], got.cas[0]);
    gdr_check_long("Compare_and_swap that does not", 0, mine.cas[1], got.cas[1]);

    /* what this rank fetched from its right neighbour's window */
    if (dev)
        dev_copy(&fh, fd, sizeof(fh));
    for (int i = 0; i < N; i++) {
        if (!gdr_check_long("Get_accumulate SUM fetched the old value", i, target_now.gacc[i],
                            fh.gacc[i])
            || !gdr_check_long("Get_accumulate NO_OP fetched", i, target_now.noop[i],
                               fh.noop[i]))
            break;
    }
    gdr_check_long("Fetch_and_op fetched", 0, target_now.fop, fh.fop);
    gdr_check_long("Compare_and_swap (matching) fetched", 0, target_now.cas[0], fh.cas[0]);
    gdr_check_long("Compare_and_swap (not matching) fetched", 0, target_now.cas[1], fh.cas[1]);
    if (dev) {
        dev_free(od);
        dev_free(fd);
        dev_free(cas_dev);
    }
    free(host);
}

static void matrix(int rank, int size, MPI_Group left, MPI_Group right)
{
    for (int allocated = 0; allocated < 2; allocated++) {
        dwin_t w;
        dwin_open(&w, allocated);
        for (int dev = 0; dev < 2; dev++)
            for (int s = 0; s < SYNC_N; s++) {
                gdr_test_set_context("matrix: window=%s origin=%s sync=%s",
                                     allocated ? "allocate(cuda:device)" : "create",
                                     dev ? "device" : "host", sync_names[s]);
                run_cell(&w, rank, size, dev, (sync_t) s, left, right);
            }
        dwin_close(&w);
    }
}

/* ---- 2. contention ------------------------------------------------------------------- */
/* Every rank at once on rank 0's window: ROUNDS accumulates of HOT elements each, issued
 * back to back (so that the ranks' launches overlap), then ROUNDS Fetch_and_op tickets,
 * then ROUNDS compare-and-swap increments (each read first). */
enum { ROUNDS = 100, HOT = 4096 };
enum { HOT_I32 = AT_HOT, HOT_I8 = HOT_I32 + 4 * HOT, HOT_F = HOT_I8 + HOT + 64,
    HOT_FOP = HOT_F + 4 * HOT, HOT_CAS = HOT_FOP + 8, HOT_END = HOT_CAS + 8
};

static void contention(int rank, int size)
{
    dwin_t w;
    dwin_open(&w, 0);
    unsigned char *zero = calloc(1, HOT_END - AT_HOT);
    dev_copy(w.base + AT_HOT, zero, HOT_END - AT_HOT);
    int32_t *ones32 = malloc(HOT * sizeof(int32_t));
    int8_t *ones8 = malloc(HOT);
    float *onesf = malloc(HOT * sizeof(float));
    for (int i = 0; i < HOT; i++)
        ones32[i] = 1, ones8[i] = 1, onesf[i] = 1;
    int64_t one = 1, *tickets = calloc(ROUNDS, sizeof(int64_t));
    int32_t cas_wins = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    gdr_test_set_context("contention: %d ranks x %d rounds on rank 0's window", size, ROUNDS);
    MPI_Win_lock_all(0, w.win);
    for (int r = 0; r < ROUNDS; r++) {
        MPI_Accumulate(ones32, HOT, MPI_INT32_T, 0, HOT_I32, HOT, MPI_INT32_T, MPI_SUM, w.win);
        /* int8 elements: odd ranks one byte on, so that neighbours share words */
        MPI_Accumulate(ones8, HOT - 1, MPI_INT8_T, 0, HOT_I8 + rank % 2, HOT - 1, MPI_INT8_T,
                       MPI_SUM, w.win);
        MPI_Accumulate(onesf, HOT, MPI_FLOAT, 0, HOT_F, HOT, MPI_FLOAT, MPI_SUM, w.win);
    }
    for (int r = 0; r < ROUNDS; r++)
        MPI_Fetch_and_op(&one, &tickets[r], MPI_INT64_T, 0, HOT_FOP, MPI_SUM, w.win);
    MPI_Win_flush(0, w.win);
    for (int r = 0; r < ROUNDS; r++) {
        /* a compare-and-swap increment: read, then swap in one more if unchanged */
        int32_t seen, next, was;
        MPI_Fetch_and_op(&one, &seen, MPI_INT32_T, 0, HOT_CAS, MPI_NO_OP, w.win);
        MPI_Win_flush(0, w.win);
        next = seen + 1;
        MPI_Compare_and_swap(&next, &seen, &was, MPI_INT32_T, 0, HOT_CAS, w.win);
        MPI_Win_flush(0, w.win);
        cas_wins += was == seen;
    }
    count_ops(0, 6 * ROUNDS);
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);

    int64_t *all = rank == 0 ? calloc((size_t) size * ROUNDS, sizeof(int64_t)) : NULL;
    MPI_Gather(tickets, ROUNDS, MPI_INT64_T, all, ROUNDS, MPI_INT64_T, 0, MPI_COMM_WORLD);
    int32_t wins = 0;
    MPI_Reduce(&cas_wins, &wins, 1, MPI_INT32_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        unsigned char *hot = malloc(HOT_END - AT_HOT);
        dev_copy(hot, w.base + AT_HOT, HOT_END - AT_HOT);
        const int32_t *s32 = (const int32_t *) hot;
        const int8_t *s8 = (const int8_t *) (hot + (HOT_I8 - AT_HOT));
        const float *sf = (const float *) (hot + (HOT_F - AT_HOT));
        int odd = size / 2, even = size - odd;  /* ranks starting at +1 and at +0 */
        long short32 = 0, short8 = 0, shortf = 0;
        for (int i = 0; i < HOT; i++) {
            short32 += s32[i] != size * ROUNDS;
            shortf += sf[i] != (float) (size * ROUNDS);
        }
        for (int i = 0; i <= HOT; i++) {
            long long want = (long long) ROUNDS * ((i < HOT - 1 ? even : 0)
                                                   + (i >= 1 && i < HOT ? odd : 0));
            short8 += s8[i] != (int8_t) (uint8_t) want;
        }
        gdr_check_long("int32 sums: elements with an update lost", 0, 0, short32);
        gdr_check_long("float sums: elements with an update lost", 0, 0, shortf);
        gdr_check_long("int8 sums on neighbours sharing words: elements wrong", 0, 0, short8);
        char *seen = calloc((size_t) size * ROUNDS, 1);
        int dup = 0;
        for (long k = 0; k < (long) size * ROUNDS; k++) {
            int64_t v = all[k];
            if (v < 0 || v >= (int64_t) size * ROUNDS || seen[v])
                dup++;
            else
                seen[v] = 1;
        }
        gdr_check_long("Fetch_and_op tickets: each of 0 .. size*rounds-1 once (bad ones)", 0, 0,
                       dup);
        int64_t counter;
        int32_t cas_counter;
        memcpy(&counter, hot + (HOT_FOP - AT_HOT), 8);
        memcpy(&cas_counter, hot + (HOT_CAS - AT_HOT), 4);
        gdr_check_long("Fetch_and_op counter", 0, (long long) size * ROUNDS, counter);
        gdr_check_long("compare-and-swap increments all counted", 0, wins, cas_counter);
        gdr_check_long("compare-and-swap increments won", 0, 1, wins >= ROUNDS);
        free(seen);
        free(all);
        free(hot);
    }
    free(tickets);
    free(zero);
    free(ones32);
    free(ones8);
    free(onesf);
    dwin_close(&w);
}

/* ---- 3. request-based ---------------------------------------------------------------- */
static void requests(int rank, int size)
{
    dwin_t w;
    dwin_open(&w, 0);
    int t = (rank + 1) % size;
    int64_t init[N], add[N], old[N];
    for (int i = 0; i < N; i++)
        init[i] = rank * 100 + i, add[i] = 1000 + i, old[i] = -1;
    dev_copy(w.base + AT_GACC, init, sizeof(init));
    MPI_Barrier(MPI_COMM_WORLD);
    gdr_test_set_context("Raccumulate, Rget_accumulate");
    MPI_Win_lock_all(0, w.win);
    MPI_Request req[2];
    MPI_Raccumulate(add, N, MPI_INT64_T, t, AT_GACC, N, MPI_INT64_T, MPI_SUM, w.win, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Rget_accumulate(add, N, MPI_INT64_T, old, N, MPI_INT64_T, t, AT_GACC, N, MPI_INT64_T,
                        MPI_SUM, w.win, &req[1]);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
    count_ops(t, 2);
    for (int i = 0; i < N; i++)
        if (!gdr_check_long("Rget_accumulate: the old value is there at MPI_Wait", i,
                            t * 100 + i + 1000 + i, old[i]))
            break;
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    dev_copy(old, w.base + AT_GACC, sizeof(old));
    for (int i = 0; i < N; i++)
        if (!gdr_check_long("after Raccumulate and Rget_accumulate", i,
                            rank * 100 + i + 2 * (1000 + i), old[i]))
            break;
    dwin_close(&w);
}

/* ---- 3b. non-contiguous layouts -------------------------------------------------------- */
/* Every rank at once on rank 0's window, S_ROUNDS rounds: +1 to the int32 elements 4j and
 * 4j + 1 (a vector target type, the origin contiguous), and +1 to every element (the
 * target contiguous, the origin every other int of an array, host memory in even rounds
 * and device memory in odd ones), so that each layout meets the others on the same
 * elements (atomic only if every layout takes the same way); then each rank reads the
 * elements back with Get_accumulate(MPI_NO_OP) into every other int of a host array. */
enum { SK = 64, SM = 4 * SK, S_ROUNDS = 20, AT_STRIDE = 49152 };

static void strided(int size)
{
    dwin_t w;
    dwin_open(&w, 0);
    int32_t zeros[SM] = { 0 }, ones[2 * SK], spread[2 * SM], back[2 * SM];
    dev_copy(w.base + AT_STRIDE, zeros, sizeof(zeros));
    for (int i = 0; i < 2 * SK; i++)
        ones[i] = 1;
    for (int i = 0; i < 2 * SM; i++)
        spread[i] = i % 2 == 0 ? 1 : 999, back[i] = -7;     /* odd ints: never read */
    int32_t *dspread = dev_alloc(sizeof(spread));
    dev_copy(dspread, spread, sizeof(spread));
    MPI_Datatype pairs, every_other;
    MPI_Type_vector(SK, 2, 4, MPI_INT32_T, &pairs);
    MPI_Type_vector(SM, 1, 2, MPI_INT32_T, &every_other);
    MPI_Type_commit(&pairs);
    MPI_Type_commit(&every_other);
    MPI_Barrier(MPI_COMM_WORLD);
    gdr_test_set_context("non-contiguous: %d ranks x %d rounds on rank 0's window", size,
                         S_ROUNDS);
    MPI_Win_lock_all(0, w.win);
    for (int r = 0; r < S_ROUNDS; r++) {
        MPI_Accumulate(ones, 2 * SK, MPI_INT32_T, 0, AT_STRIDE, 1, pairs, MPI_SUM, w.win);
        MPI_Accumulate(r % 2 ? (void *) dspread : (void *) spread, 1, every_other, 0, AT_STRIDE,
                       SM, MPI_INT32_T, MPI_SUM, w.win);
    }
    count_ops(0, 2 * S_ROUNDS);
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w.win);
    MPI_Get_accumulate(NULL, 0, MPI_INT32_T, back, 1, every_other, 0, AT_STRIDE, SM,
                       MPI_INT32_T, MPI_NO_OP, w.win);
    MPI_Win_unlock_all(w.win);
    count_ops(0, 1);
    for (int i = 0; i < SM; i++)
        if (!gdr_check_long("element (read back into every other int)", i,
                            (long long) size * S_ROUNDS * (i % 4 < 2 ? 2 : 1), back[2 * i]))
            break;
    int touched = 0;
    for (int i = 0; i < SM; i++)
        touched += back[2 * i + 1] != -7;
    gdr_check_long("result ints between the datatype's elements written", 0, 0, touched);
    MPI_Type_free(&pairs);
    MPI_Type_free(&every_other);
    dev_free(dspread);
    dwin_close(&w);
}

/* ---- 3c. larger than one round of the device scratch --------------------------------- */
/* 18 MiB of int32 on rank 0's window: every rank adds 1 from pageable memory (two rounds of
 * the 16-MiB scratch), then Get_accumulate adds 1 more and fetches the old values into
 * pageable memory (origin and result bounced: three rounds of 8 MiB). */
enum { BIG = (18 << 20) / 4 };

static void large(int rank, int size)
{
    int32_t *ones = malloc(BIG * sizeof(int32_t)), *old = malloc(BIG * sizeof(int32_t));
    MPI_Win win;
    int32_t *base = NULL;
    if (ones == NULL || old == NULL)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    MPI_Aint bytes = rank == 0 ? (MPI_Aint) BIG * 4 : 0;
    if (bytes > 0) {
        base = dev_alloc((size_t) bytes);
        memset(old, 0, BIG * sizeof(int32_t));
        dev_copy(base, old, (size_t) bytes);
    }
    if (!gdr_check_mpi("MPI_Win_create", MPI_Win_create(base, bytes, 4, MPI_INFO_NULL,
                                                         MPI_COMM_WORLD, &win)))
        gdr_test_die("MPI_Win_create", MPI_ERR_OTHER);
    for (int i = 0; i < BIG; i++)
        ones[i] = 1, old[i] = -1;
    gdr_test_set_context("18 MiB accumulates from pageable memory (scratch rounds)");
    MPI_Win_lock_all(0, win);
    MPI_Accumulate(ones, BIG, MPI_INT32_T, 0, 0, BIG, MPI_INT32_T, MPI_SUM, win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {    /* one at a time: each fetch has one expected value */
        if (r == rank) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            MPI_Get_accumulate(ones, BIG, MPI_INT32_T, old, BIG, MPI_INT32_T, 0, 0, BIG,
                               MPI_INT32_T, MPI_SUM, win);
            MPI_Win_unlock(0, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    count_ops(0, 2);
    long wrong = 0;
    for (int i = 0; i < BIG; i++)
        wrong += old[i] != size + rank;
    gdr_check_long("Get_accumulate's old values not size + rank", 0, 0, wrong);
    if (rank == 0) {
        dev_copy(old, base, (size_t) bytes);
        wrong = 0;
        for (int i = 0; i < BIG; i++)
            wrong += old[i] != 2 * size;
        gdr_check_long("elements not 2 x size at the end", 0, 0, wrong);
    }
    MPI_Win_free(&win);
    if (base != NULL)
        dev_free(base);
    free(ones);
    free(old);
}

/* ---- 5. across paths ----------------------------------------------------------------- */
static void across_paths(int rank, int size)
{
    dwin_t w;
    dwin_open(&w, 0);
    int t = (rank + 1) % size;
    double _Complex z = 3.0 + 4.0 * I;
    double zero[2] = { 0, 0 }, add[2] = { 10, 20 }, got[2] = { -1, -1 };
    dev_copy(w.base + AT_CPLX, zero, sizeof(zero));
    MPI_Barrier(MPI_COMM_WORLD);
    gdr_test_set_context("double complex REPLACE (message), then double SUM (gdr's kernel)");
    unsigned long long before = local_accumulates();
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w.win);
    MPI_Accumulate(&z, 1, MPI_C_DOUBLE_COMPLEX, t, AT_CPLX, 1, MPI_C_DOUBLE_COMPLEX,
                   MPI_REPLACE, w.win);
    MPI_Get_accumulate(add, 2, MPI_DOUBLE, got, 2, MPI_DOUBLE, t, AT_CPLX, 2, MPI_DOUBLE,
                       MPI_SUM, w.win);
    MPI_Win_unlock(t, w.win);
    gdr_check_long("the complex accumulate went another way", 0, same_gpu[t],
                   (long long) (local_accumulates() - before));
    gdr_check_double("the kernel's Get_accumulate fetched the complex REPLACE (real)", 0, 3,
                     got[0]);
    gdr_check_double("the kernel's Get_accumulate fetched the complex REPLACE (imag)", 1, 4,
                     got[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    dev_copy(got, w.base + AT_CPLX, sizeof(got));
    gdr_check_double("target after both (real)", 0, 13, got[0]);
    gdr_check_double("target after both (imag)", 1, 24, got[1]);
    dwin_close(&w);
}

int main(int argc, char **argv)
{
    int rank, size;
    gpu_mpi_test_init(&argc, &argv, &session, &rank, &size);
    MPI_Group left, right;
    gdr_ring_groups(&left, &right);

    /* which ranks' windows are on this node and this GPU: gdr's kernel reaches those */
    MPI_Comm node;
    size_t n = (unsigned) size;
    int *node_of = calloc(n, sizeof(int)), *gpu_of = calloc(n, sizeof(int));
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_leader = rank;
    MPI_Allreduce(MPI_IN_PLACE, &node_leader, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    MPI_Allgather(&node_leader, 1, MPI_INT, node_of, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgather(&cuda_device, 1, MPI_INT, gpu_of, 1, MPI_INT, MPI_COMM_WORLD);
    /* (only where every rank of the node uses one GPU: else all of its accumulates go as
     * messages, so that every origin of an element applies it the same way) */
    int one_gpu = 1;
    for (int t = 0; t < size; t++)
        one_gpu &= node_of[t] != node_leader || gpu_of[t] == cuda_device;
    same_gpu = calloc(n, sizeof(int));
    for (int t = 0; t < size; t++)
        same_gpu[t] = one_gpu && node_of[t] == node_leader;
    free(node_of);
    free(gpu_of);
    unsigned long long local0 = local_accumulates(), staged0 = accumulates_by("staged");
    matrix(rank, size, left, right);
    contention(rank, size);
    requests(rank, size);
    strided(size);
    large(rank, size);
    int node_ranks = 0;
    for (int t = 0; t < size; t++)
        node_ranks += same_gpu[t];
    gdr_test_set_context("MPI_T counters (%d of %d ranks' windows on this node's one GPU)",
                         node_ranks, size);
    unsigned long long local = local_accumulates() - local0;
    unsigned long long staged = accumulates_by("staged") - staged0;
    /* this node and this GPU: gdr's kernel on the peer's window; other nodes (over
     * Soft-RoCE): the staged protocol, whose target applies them with the same atomic
     * steps; another GPU of this node: MPIDIG's messages */
    gdr_check_long("accumulate-family operations to windows on this node's GPU as gdr's"
                   " kernel on the peer's window", 0, (long long) expect_local,
                   (long long) local);
    if (getenv("GDR_TEST_DEVICE_BY_RANK") == NULL)
        gdr_check_long("the others through the staged protocol, none as messages", 0,
                       (long long) (issued - expect_local), (long long) staged);
    const char *mode = getenv("GDR_GPUSIM_MODE");
    if (mode == NULL || strcmp(mode, "strict") != 0)
        across_paths(rank, size);

    gdr_ring_groups_free(&left, &right);
    free(same_gpu);
    /* (the verdict first: MPICH 5.0.1's MPI_T_finalize frees the string CVARs, and a
     * collective that first reads one afterwards, as the shared-memory allreduce's
     * release_gather set-up does, crashes) */
    long errors = gdr_test_finish();
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return errors != 0;
}
