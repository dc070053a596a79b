/* RMA over the RDMA path: values read back after every kind of synchronisation,
 * the accumulate path rule for both kinds of window (test/unit/rma/test_path.c has
 * the rule itself), request-based operations, and a stress phase with far more
 * operations in flight than the queue depth, on random derived datatypes.
 *
 * With GDR_TEST_EXPECT_NATIVE=1 (maint/check-rxe: one rank per guest, NOLOCAL) it
 * also asserts, through gdr's MPI_T counters, that Put, Get, Fetch_and_op and
 * Compare_and_swap took the RDMA path on a default window, and that a window whose
 * which_accumulate_ops names no NIC op sent Fetch_and_op as a message, and that a
 * dynamic window took RDMA too and refused an address nobody attached. */
#include "gdr_mpi_test.h"

#define BIG (1 << 20)

static int rank, nranks;

/* GDR_TEST_TRACE=1: say where each rank is (for a hang inside a phase). */
static void trace(const char *what)
{
    static int on = -1;
    if (on < 0)
        on = getenv("GDR_TEST_TRACE") != NULL;
    if (on)
        fprintf(stderr, "rank %d: %s\n", rank, what);
}

/* ---- MPI_T counters ---------------------------------------------------------- */
static MPI_T_pvar_session session;

static unsigned long long pvar(const char *name)
{
    return gdr_pvar_value(session, name);
}

/* ---- helpers ----------------------------------------------------------------- */
static uint8_t pat(int who, long i, int salt)
{
    return (uint8_t) (who * 29 + i * 7 + salt);
}

static MPI_Win make_win(MPI_Info info, MPI_Aint bytes, int unit, void **base, int allocate)
{
    MPI_Win win;
    if (allocate) {
        gdr_check_mpi("MPI_Win_allocate",
                      MPI_Win_allocate(bytes, unit, info, MPI_COMM_WORLD, base, &win));
    } else {
        *base = malloc((size_t) bytes);
        gdr_check_mpi("MPI_Win_create",
                      MPI_Win_create(*base, bytes, unit, info, MPI_COMM_WORLD, &win));
    }
    memset(*base, 0, (size_t) bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    return win;
}

static void free_win(MPI_Win * win, void *base, int allocate)
{
    MPI_Win_free(win);
    if (!allocate)
        free(base);
}

/* Puts of three size classes to the right neighbour, gets back from the left. */
static void put_get(int allocate, const char *sync)
{
    void *base;
    MPI_Win win = make_win(MPI_INFO_NULL, 3 * BIG, 1, &base, allocate);
    uint8_t *win_bytes = base;
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    static const int sizes[] = { 8, 3000, BIG };
    uint8_t *src = malloc(BIG), *back = malloc(BIG);

    gdr_test_set_context("put/get win=%s sync=%s", allocate ? "allocate" : "create", sync);
    trace(gdr_test_context());
    for (int k = 0; k < 3; k++) {
        for (long i = 0; i < sizes[k]; i++)
            src[i] = pat(rank, i, k);
        MPI_Aint disp = (MPI_Aint) k * BIG;
        if (!strcmp(sync, "lock")) {
            MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
            MPI_Put(src, sizes[k], MPI_BYTE, right, disp, sizes[k], MPI_BYTE, win);
            MPI_Win_unlock(right, win);
        } else if (!strcmp(sync, "fence")) {
            MPI_Win_fence(0, win);
            MPI_Put(src, sizes[k], MPI_BYTE, right, disp, sizes[k], MPI_BYTE, win);
            MPI_Win_fence(0, win);
        } else if (!strcmp(sync, "pscw")) {
            MPI_Group world, to, from;
            MPI_Comm_group(MPI_COMM_WORLD, &world);
            MPI_Group_incl(world, 1, &right, &to);
            MPI_Group_incl(world, 1, &left, &from);
            MPI_Win_post(from, 0, win);
            MPI_Win_start(to, 0, win);
            MPI_Put(src, sizes[k], MPI_BYTE, right, disp, sizes[k], MPI_BYTE, win);
            MPI_Win_complete(win);
            MPI_Win_wait(win);
            MPI_Group_free(&to);
            MPI_Group_free(&from);
            MPI_Group_free(&world);
        } else {                /* lock_all + Rput + flush_local, then flush */
            MPI_Request r;
            MPI_Win_lock_all(0, win);
            MPI_Rput(src, sizes[k], MPI_BYTE, right, disp, sizes[k], MPI_BYTE, win, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            memset(src, 0xee, (size_t) sizes[k]);       /* reusable after the request */
            MPI_Win_flush(right, win);
            MPI_Win_unlock_all(win);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 3; k++) {
        long bad = 0;
        for (long i = 0; i < sizes[k]; i++)
            bad += win_bytes[(long) k * BIG + i] != pat(left, i, k);
        gdr_check_long("bytes put by the left neighbour, wrong", k, 0, bad);
    }
    trace("puts checked");
    /* read them back from the right neighbour's window: what this rank put */
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < 3; k++) {
        memset(back, 0, (size_t) sizes[k]);
        MPI_Request r;
        MPI_Rget(back, sizes[k], MPI_BYTE, right, (MPI_Aint) k * BIG, sizes[k], MPI_BYTE, win,
                 &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        long bad = 0;
        for (long i = 0; i < sizes[k]; i++)
            bad += back[i] != pat(rank, i, k);
        gdr_check_long("bytes read back, wrong", k, 0, bad);
    }
    MPI_Win_unlock_all(win);
    free_win(&win, base, allocate);
    free(src);
    free(back);
}

/* Atomics on rank 0's counters from every rank; CAS; multi-element SUM; NO_OP. */
static void atomics(MPI_Info info, const char *what, int ordered)
{
    void *base;
    MPI_Win win = make_win(info, 64 * 8, 8, &base, 1);
    int64_t *w = base;
    const int n = 50;
    gdr_test_set_context("atomics %s", what);
    trace(gdr_test_context());

    MPI_Win_lock_all(0, win);
    int64_t one = 1, got, sum_got = 0;
    for (int i = 0; i < n; i++) {
        MPI_Fetch_and_op(&one, &got, MPI_INT64_T, 0, 0, MPI_SUM, win);
        MPI_Win_flush(0, win);
        sum_got += got >= 0 && got < (int64_t) n * nranks;
    }
    gdr_check_long("fetch-and-op results in range", 0, n, sum_got);
    /* every rank adds rank+1 to four words at once */
    int64_t add[4] = { rank + 1, rank + 1, rank + 1, rank + 1 };
    trace("accumulate");
    MPI_Accumulate(add, 4, MPI_INT64_T, 0, 8, 4, MPI_INT64_T, MPI_SUM, win);
    trace("flush_all");
    MPI_Win_flush_all(win);
    trace("unlock_all");
    MPI_Win_unlock_all(win);
    trace("barrier");
    MPI_Barrier(MPI_COMM_WORLD);
    trace("cas");

    /* a lock race: each rank CASes slot 20 from -1 to its rank once */
    if (rank == 0) {
        w[20] = -1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    int64_t expect = -1, mine = rank, old;
    trace("cas issue");
    MPI_Compare_and_swap(&mine, &expect, &old, MPI_INT64_T, 0, 20, win);
    trace("cas flush");
    MPI_Win_flush(0, win);
    trace("get_acc");
    int won = old == -1;
    /* NO_OP reads the final values */
    int64_t now[4];
    MPI_Get_accumulate(NULL, 0, MPI_INT64_T, now, 4, MPI_INT64_T, 0, 8, 4, MPI_INT64_T,
                       MPI_NO_OP, win);
    trace("get_acc flush");
    MPI_Win_flush(0, win);
    trace("get_acc unlock");
    MPI_Win_unlock_all(win);
    trace("allreduce");
    int winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    gdr_check_long("CAS winners", 0, 1, winners);
    int64_t tri = (int64_t) nranks * (nranks + 1) / 2;
    for (int i = 0; i < 4; i++)
        gdr_check_long("Accumulate SUM of rank+1 over ranks (read with NO_OP)", i, tri, now[i]);
    if (rank == 0)
        gdr_check_long("fetch-and-op total", 0, (long long) n * nranks, w[0]);

    /* one origin, two paths to one word, in order: REPLACE (message) then SUM (NIC) */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    int64_t five = 5, r = 0;
    for (int i = 0; i < 3; i++) {
        MPI_Accumulate(&five, 1, MPI_INT64_T, 0, 30 + rank, 1, MPI_INT64_T, MPI_REPLACE, win);
        if (!ordered)           /* accumulate_ordering=none: the order is the user's job */
            MPI_Win_flush(0, win);
        MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 30 + rank, 1, MPI_INT64_T, MPI_SUM, win);
        if (!ordered)           /* (and before the next REPLACE: the SUM may be held back
                                 * to share a doorbell, MPIR_CVAR_CH4_GDR_DOORBELL_BATCH) */
            MPI_Win_flush(0, win);
    }
    MPI_Fetch_and_op(NULL, &r, MPI_INT64_T, 0, 30 + rank, MPI_NO_OP, win);
    MPI_Win_unlock(0, win);
    gdr_check_long("REPLACE 5 then SUM 1, ordered across paths", 0, 6, r);
    MPI_Win_free(&win);
}

/* A strided target (16 blocks of 1000 B, 2000 B apart) from a contiguous origin, and
 * read back into a strided origin: the target's pieces go one RDMA operation each.
 * Then a strided origin to a contiguous target and back: gather/scatter lists. */
static void strided(int expect_native)
{
    void *base;
    MPI_Win win = make_win(MPI_INFO_NULL, 32 * 1000, 1, &base, 0);
    uint8_t *wb = base, *src = malloc(16 * 1000), *back = calloc(1, 32 * 1000);
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    MPI_Datatype vec;
    MPI_Type_vector(16, 1000, 2000, MPI_BYTE, &vec);
    MPI_Type_commit(&vec);
    gdr_test_set_context("strided target");
    trace(gdr_test_context());
    for (int i = 0; i < 16 * 1000; i++)
        src[i] = pat(rank, i, 9);
    unsigned long long put0 = pvar("gdr_rma_put_native"), get0 = pvar("gdr_rma_get_native");
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Put(src, 16 * 1000, MPI_BYTE, right, 0, 1, vec, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    long bad = 0;
    for (int b = 0; b < 16; b++)
        for (int i = 0; i < 2000; i++)
            bad += wb[b * 2000 + i] != (i < 1000 ? pat(left, b * 1000 + i, 9) : 0);
    gdr_check_long("strided put: bytes wrong (blocks and gaps)", 0, 0, bad);
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Get(back, 1, vec, right, 0, 1, vec, win);
    MPI_Win_unlock(right, win);
    bad = 0;
    for (int b = 0; b < 16; b++)
        for (int i = 0; i < 2000; i++)
            bad += back[b * 2000 + i] != (i < 1000 ? pat(rank, b * 1000 + i, 9) : 0);
    gdr_check_long("strided get: bytes wrong (blocks and gaps)", 0, 0, bad);
    if (expect_native) {
        gdr_check_long("strided Put over RDMA", 0, 1, pvar("gdr_rma_put_native") > put0);
        gdr_check_long("strided Get over RDMA", 0, 1, pvar("gdr_rma_get_native") > get0);
    }

    /* a strided origin (4 blocks of 2000 B, 3000 B apart) to a contiguous target (the
     * NIC gathers it), and read back into a strided buffer (the NIC scatters) */
    MPI_Datatype ovec;
    MPI_Type_vector(4, 2000, 3000, MPI_BYTE, &ovec);
    MPI_Type_commit(&ovec);
    uint8_t *o = malloc(12000), *ob = malloc(12000);
    for (int i = 0; i < 12000; i++)
        o[i] = pat(rank, i, 11);
    memset(ob, 0x5a, 12000);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Put(o, 1, ovec, right, 0, 8000, MPI_BYTE, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < 8000; i++)
        bad += wb[i] != pat(left, (i / 2000) * 3000 + i % 2000, 11);
    gdr_check_long("gathered put: bytes wrong", 0, 0, bad);
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Get(ob, 1, ovec, right, 0, 8000, MPI_BYTE, win);
    MPI_Win_unlock(right, win);
    bad = 0;
    for (int i = 0; i < 12000; i++)
        bad += ob[i] != (i % 3000 < 2000 && i < 11000 ? pat(rank, i, 11) : 0x5a);
    gdr_check_long("scattered get: bytes wrong (blocks and gaps)", 0, 0, bad);
    MPI_Type_free(&ovec);
    free(o);
    free(ob);
    MPI_Type_free(&vec);
    free_win(&win, base, 0);
    free(src);
    free(back);
}

/* ---- dynamic windows --------------------------------------------------------- */
static MPI_Aint right_addr(void *mine)
{
    MPI_Aint a, *all = malloc(nranks * sizeof(MPI_Aint));
    MPI_Get_address(mine, &a);
    MPI_Allgather(&a, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
    a = all[(rank + 1) % nranks];
    free(all);
    return a;
}

/* Puts/gets/atomics on attached memory; a region detached and attached again inside
 * one lock_all epoch (a new key at the same address: the origin must not use the
 * old one); an address nobody attached is refused with MPI_ERR_RMA_RANGE (only
 * where the RDMA path checks it: a message would be written blindly by MPICH). */
static void dynamic_win(int expect_native)
{
    MPI_Win win;
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    uint8_t *data = calloc(1, BIG + 64), *src = malloc(BIG), *back = malloc(BIG);
    int64_t *counters = calloc(8, sizeof(int64_t));
    static const int sizes[] = { 8, 3000, BIG };

    gdr_test_set_context("dynamic window");
    trace(gdr_test_context());
    gdr_check_mpi("MPI_Win_create_dynamic",
                  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_attach(win, data, BIG + 64);
    MPI_Win_attach(win, counters, 8 * sizeof(int64_t));
    counters[1] = counters[2] = -1;     /* CAS slots (rank 0's are used) */
    MPI_Aint rdata = right_addr(data);
    MPI_Aint zero_counters;     /* rank 0's counters */
    MPI_Get_address(counters, &zero_counters);
    MPI_Bcast(&zero_counters, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    unsigned long long put0 = pvar("gdr_rma_put_native"), fop0 = pvar("gdr_rma_fop_native");
    unsigned long long asked0 = pvar("gdr_rma_region_queries");

    int won[2] = { 0, 0 };
    MPI_Win_lock_all(0, win);
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < 3; k++) {
            for (long i = 0; i < sizes[k]; i++)
                src[i] = pat(rank, i, k + 3 * round);
            gdr_check_mpi("MPI_Put", MPI_Put(src, sizes[k], MPI_BYTE, right, rdata + 64,
                                             sizes[k], MPI_BYTE, win));
            gdr_check_mpi("MPI_Win_flush", MPI_Win_flush(right, win));
            memset(back, 0, (size_t) sizes[k]);
            gdr_check_mpi("MPI_Get", MPI_Get(back, sizes[k], MPI_BYTE, right, rdata + 64,
                                             sizes[k], MPI_BYTE, win));
            gdr_check_mpi("MPI_Win_flush", MPI_Win_flush(right, win));
            long bad = 0;
            for (long i = 0; i < sizes[k]; i++)
                bad += back[i] != pat(rank, i, k + 3 * round);
            gdr_check_long("dynamic: bytes read back, wrong", k + 3 * round, 0, bad);
        }
        int64_t one = 1, got = -1, mine = rank, expect = -1, old = 0;
        gdr_check_mpi("MPI_Fetch_and_op", MPI_Fetch_and_op(&one, &got, MPI_INT64_T, 0,
                                                           zero_counters, MPI_SUM, win));
        gdr_check_mpi("MPI_Compare_and_swap",
                      MPI_Compare_and_swap(&mine, &expect, &old, MPI_INT64_T, 0,
                                           zero_counters + 8 * (1 + round), win));
        gdr_check_mpi("MPI_Win_flush", MPI_Win_flush(0, win));
        won[round] = old == -1;
        if (round == 0) {
            /* every origin's flush is done: detach and attach the same memory again */
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Win_detach(win, data);
            MPI_Win_attach(win, data, BIG + 64);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    MPI_Win_unlock_all(win);
    unsigned long long asked = pvar("gdr_rma_region_queries") - asked0;

    /* PSCW epochs into the same region: what an origin learned outlives them too (the
     * complete once forgot it: a question to the target every epoch) */
    unsigned long long asked_pscw0 = pvar("gdr_rma_region_queries");
    MPI_Group world_g, to_g, from_g;
    MPI_Comm_group(MPI_COMM_WORLD, &world_g);
    MPI_Group_incl(world_g, 1, &right, &to_g);
    MPI_Group_incl(world_g, 1, &left, &from_g);
    for (int e = 0; e < 5; e++) {
        int64_t v = 1000 * (rank + 1) + e, landed;
        MPI_Win_post(from_g, 0, win);
        MPI_Win_start(to_g, 0, win);
        gdr_check_mpi("MPI_Put (PSCW)", MPI_Put(&v, 1, MPI_INT64_T, right, rdata + 8, 1,
                                                MPI_INT64_T, win));
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        memcpy(&landed, data + 8, sizeof(landed));
        gdr_check_long("dynamic: PSCW put from the left neighbour", e,
                       1000 * (left + 1) + e, landed);
    }
    MPI_Group_free(&to_g);
    MPI_Group_free(&from_g);
    MPI_Group_free(&world_g);
    if (expect_native)
        gdr_check_long("dynamic: questions about regions over 5 PSCW epochs at most 1", 0, 1,
                       pvar("gdr_rma_region_queries") - asked_pscw0 <= 1);
    int winners[2];
    MPI_Allreduce(won, winners, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    gdr_check_long("dynamic: CAS winners", 0, 1, winners[0]);
    gdr_check_long("dynamic: CAS winners after re-attach", 1, 1, winners[1]);
    if (rank == 0) {
        gdr_check_long("dynamic: fetch-and-op total", 0, 2 * nranks, counters[0]);
        gdr_check_long("dynamic: CAS slot holds a rank", 1, 1,
                       counters[1] >= 0 && counters[1] < nranks);
        gdr_check_long("dynamic: CAS slot after re-attach holds a rank", 2, 1,
                       counters[2] >= 0 && counters[2] < nranks);
    }
    long bad = 0;
    for (long i = 0; i < BIG; i++)
        bad += data[64 + i] != pat(left, i, 5);
    gdr_check_long("dynamic: bytes the left neighbour put after re-attach, wrong", 0, 0, bad);
    if (expect_native) {
        gdr_check_long("dynamic: Put over RDMA", 0, 1, pvar("gdr_rma_put_native") - put0 >= 6);
        gdr_check_long("dynamic: Fetch_and_op as an RDMA atomic", 0, 1,
                       pvar("gdr_rma_fop_native") - fop0 >= 2);
        /* what an origin learned outlives its flushes (control blocks announce detaches):
         * the data region and rank 0's counters once each, again after the re-attach;
         * forgotten at every flush it was 7 a round */
        gdr_check_long("dynamic: questions about regions at most 4", 0, 1, asked <= 4);
        /* the counters' memory detached (still allocated: a blind write would land
         * there), then accessed, by rank 0 too (checked before MPICH's self path):
         * refused at the origin, nothing written */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_detach(win, counters);
        memset(counters, 0, 8 * sizeof(int64_t));
        MPI_Barrier(MPI_COMM_WORLD);
        int64_t v = 77;
        MPI_Win_lock_all(0, win);
        int rc = MPI_Put(&v, 1, MPI_INT64_T, 0, zero_counters + 8, 1, MPI_INT64_T, win);
        int cls = MPI_SUCCESS;
        MPI_Error_class(rc, &cls);
        gdr_check_long("dynamic: Put to a detached address, error class MPI_ERR_RMA_RANGE", 0,
                       MPI_ERR_RMA_RANGE, cls);
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            gdr_check_long("dynamic: detached memory unchanged", 1, 0, counters[1]);
    } else {
        MPI_Win_detach(win, counters);
    }
    MPI_Win_detach(win, data);
    MPI_Win_free(&win);
    free(data);
    free(counters);
    free(src);
    free(back);
}

/* ---- random derived datatypes, many operations in flight ----------------------- */
static unsigned long long rng_state;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned) ((rng_state >> 33) % n);
}

/* A random type of `elems` int64 elements: vector, indexed or contiguous. */
static MPI_Datatype random_type(int elems, MPI_Aint * extent_elems)
{
    MPI_Datatype t;
    int kind = (int) rnd(3);
    if (kind == 0 && elems % 2 == 0) {
        int stride = 2 + (int) rnd(3);
        MPI_Type_vector(elems / 2, 2, stride, MPI_INT64_T, &t);
        *extent_elems = (MPI_Aint) (elems / 2 - 1) * stride + 2;
    } else if (kind == 1) {
        int bl[8], disp[8], nb = 0, at = 0, left = elems;
        while (left > 0 && nb < 8) {
            bl[nb] = nb == 7 ? left : 1 + (int) rnd((unsigned) left);
            disp[nb] = at;
            at += bl[nb] + (int) rnd(3);
            left -= bl[nb];
            nb++;
        }
        MPI_Type_indexed(nb, bl, disp, MPI_INT64_T, &t);
        *extent_elems = disp[nb - 1] + bl[nb - 1];
    } else {
        MPI_Type_contiguous(elems, MPI_INT64_T, &t);
        *extent_elems = elems;
    }
    MPI_Type_commit(&t);
    return t;
}

#define STRESS_OPS 1500
#define SLOT 64 /* int64 per slot: room for any random type's extent */

static void stress(void)
{
    void *base;
    int nslots = STRESS_OPS;
    MPI_Win win = make_win(MPI_INFO_NULL, (MPI_Aint) nslots * SLOT * 8, 8, &base, 1);
    int64_t *w = base;
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    int64_t *src = malloc((size_t) STRESS_OPS * SLOT * 8);
    int64_t *expect = calloc((size_t) nslots * SLOT, 8);
    gdr_test_set_context("stress: %d puts/accumulates on random types, one epoch", STRESS_OPS);
    trace(gdr_test_context());

    /* what the left neighbour does to this rank's window, replayed with its seed */
    for (int pass = 0; pass < 2; pass++) {
        int who = pass == 0 ? rank : left;
        rng_state = 1234567ull + (unsigned long long) who;
        if (pass == 0)
            MPI_Win_lock_all(0, win);
        for (int op = 0; op < STRESS_OPS; op++) {
            int elems = 2 * (1 + (int) rnd(8));
            MPI_Aint ext_o, ext_t;
            MPI_Datatype to = random_type(elems, &ext_o), tt = random_type(elems, &ext_t);
            int is_acc = rnd(3) == 0;
            int64_t *s = src + (size_t) op * SLOT;
            MPI_Aint disp = (MPI_Aint) op * SLOT;  /* in int64 units */
            /* target element k lives at the k-th element of tt's layout */
            MPI_Aint tdisp[SLOT];
            int nt = 0;
            {
                int64_t probe[SLOT];
                for (int i = 0; i < SLOT; i++)
                    probe[i] = i;
                int64_t packed[SLOT];
                int pos = 0;
                MPI_Pack(probe, 1, tt, packed, (int) sizeof(packed), &pos, MPI_COMM_SELF);
                for (int i = 0; i < elems; i++)
                    tdisp[nt++] = packed[i];
            }
            int64_t vals[SLOT];
            for (int i = 0; i < elems; i++)
                vals[i] = (int64_t) who * 100000 + op * 10 + i;
            if (pass == 0) {
                /* scatter vals into s through the origin type */
                int pos = 0;
                MPI_Unpack(vals, (int) sizeof(vals), &pos, s, 1, to, MPI_COMM_SELF);
                if (is_acc)
                    MPI_Accumulate(s, 1, to, right, disp, 1, tt, MPI_SUM, win);
                else
                    MPI_Put(s, 1, to, right, disp, 1, tt, win);
            } else {
                for (int i = 0; i < nt; i++)
                    expect[(size_t) op * SLOT + (size_t) tdisp[i]] += vals[i];
            }
            MPI_Type_free(&to);
            MPI_Type_free(&tt);
        }
        if (pass == 0) {
            trace("stress: all issued");
            MPI_Win_flush_all(win);
            MPI_Win_unlock_all(win);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    long bad = 0;
    for (long i = 0; i < (long) nslots * SLOT; i++)
        bad += w[i] != expect[i];
    gdr_check_long("window words differing from the replayed operations", 0, 0, bad);
    MPI_Win_free(&win);
    free(src);
    free(expect);
}

/* Doorbells (MPIR_CVAR_CH4_GDR_DOORBELL_BATCH, on by default): lock+Put+unlock rings
 * twice, the acquire, then the Put with the release behind it; so does lock+Get+unlock,
 * its release posted behind the Get without waiting for it (MPI_T gdr_rma_fenced: once
 * an epoch); at 2 ranks a fence epoch of one Put rings once, the Put with the barrier
 * write, and so does one of a Get, the barrier write posted behind it.  Without
 * batching, three, three, two and two.  The Puts land and the Gets read what the target
 * holds either way. */
static void doorbells(void)
{
    enum { EPOCHS = 50 };
    int64_t *base, v = 0;
    MPI_Win win;
    MPI_Win_allocate(8 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    base[0] = -1;
    base[2] = 4242 + rank;
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned long long lock_bells = 0, fence_bells = 0, get_bells = 0, get_fenced = 0;
    long get_wrong = 0;
    if (rank == 0) {
        for (int i = 0; i <= EPOCHS; i++) {     /* (the first connects: not counted) */
            unsigned long long d0 = pvar("gdr_rma_doorbells");
            v = i;
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            MPI_Put(&v, 1, MPI_INT64_T, 1, 0, 1, MPI_INT64_T, win);
            MPI_Win_unlock(1, win);
            lock_bells += i > 0 ? pvar("gdr_rma_doorbells") - d0 : 0;
        }
        for (int i = 0; i <= EPOCHS; i++) {
            unsigned long long d0 = pvar("gdr_rma_doorbells"), f0 = pvar("gdr_rma_fenced");
            int64_t got = -1;
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            MPI_Get(&got, 1, MPI_INT64_T, 1, 2, 1, MPI_INT64_T, win);
            MPI_Win_unlock(1, win);
            get_wrong += got != 4242 + 1;
            get_bells += i > 0 ? pvar("gdr_rma_doorbells") - d0 : 0;
            get_fenced += i > 0 ? pvar("gdr_rma_fenced") - f0 : 0;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t after_locks = base[0];
    MPI_Win_fence(0, win);
    for (int i = 0; i < EPOCHS; i++) {
        unsigned long long d0 = pvar("gdr_rma_doorbells");
        v = 1000 + i;
        if (rank == 0)
            MPI_Put(&v, 1, MPI_INT64_T, 1, 1, 1, MPI_INT64_T, win);
        MPI_Win_fence(0, win);
        fence_bells += pvar("gdr_rma_doorbells") - d0;
    }
    /* fence epochs of one Get: its barrier write goes behind the Get, one doorbell */
    unsigned long long fget_bells = 0, fget_fenced = 0;
    long fget_wrong = 0;
    for (int i = 0; i < EPOCHS; i++) {
        unsigned long long d0 = pvar("gdr_rma_doorbells"), f0 = pvar("gdr_rma_fenced");
        int64_t got = -1;
        if (rank == 0)
            MPI_Get(&got, 1, MPI_INT64_T, 1, 2, 1, MPI_INT64_T, win);
        MPI_Win_fence(0, win);
        fget_wrong += rank == 0 && got != 4242 + 1;
        fget_bells += pvar("gdr_rma_doorbells") - d0;
        fget_fenced += pvar("gdr_rma_fenced") - f0;
    }
    gdr_test_set_context("doorbell batching");
    if (rank == 1) {
        gdr_check_long("the last locked Put landed", 0, EPOCHS, after_locks);
        gdr_check_long("the last fenced Put landed", 0, 1000 + EPOCHS - 1, base[1]);
    }
    /* what gdr applied: by default 16 on Soft-RoCE, 0 on a NIC (MMIO doorbells) */
    int batching = pvar("gdr_rma_doorbell_hold") > 0;
    if (rank == 0) {
        gdr_check_long("doorbells of lock+Put+unlock epochs", 0, (batching ? 2 : 3) * EPOCHS,
                       (long long) lock_bells);
        gdr_check_long("Gets of lock+Get+unlock epochs reading another value", 0, 0, get_wrong);
        gdr_check_long("doorbells of lock+Get+unlock epochs", 0, (batching ? 2 : 3) * EPOCHS,
                       (long long) get_bells);
        gdr_check_long("releases posted behind a Get of lock+Get+unlock epochs", 0, EPOCHS,
                       (long long) get_fenced);
        gdr_check_long("Gets of fence epochs reading another value", 0, 0, fget_wrong);
        if (nranks == 2) {
            gdr_check_long("doorbells of fence epochs of one Put", 0, (batching ? 1 : 2) * EPOCHS,
                           (long long) fence_bells);
            gdr_check_long("doorbells of fence epochs of one Get", 0, (batching ? 1 : 2) * EPOCHS,
                           (long long) fget_bells);
            gdr_check_long("barrier writes posted behind a Get", 0, EPOCHS,
                           (long long) fget_fenced);
        }
    }
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);

    int expect_native = gdr_test_expect_native();
    unsigned long long put0 = pvar("gdr_rma_put_native"), get0 = pvar("gdr_rma_get_native");
    unsigned long long fop0 = pvar("gdr_rma_fop_native"), cas0 = pvar("gdr_rma_cas_native");
    unsigned long long inl0 = pvar("gdr_rma_inline_puts"), bnc0 = pvar("gdr_rma_bounced");
    unsigned long long reg0 = pvar("gdr_rma_registered");

    put_get(1, "lock");
    put_get(0, "fence");
    put_get(1, "pscw");
    put_get(0, "lock_all+rput");
    atomics(MPI_INFO_NULL, "default window", 1);
    unsigned long long put1 = pvar("gdr_rma_put_native"), get1 = pvar("gdr_rma_get_native");
    unsigned long long fop1 = pvar("gdr_rma_fop_native"), cas1 = pvar("gdr_rma_cas_native");
    if (expect_native) {
        gdr_test_set_context("MPI_T counters, default windows");
        gdr_check_long("Put over RDMA", 0, 1, put1 > put0);
        gdr_check_long("Get over RDMA", 0, 1, get1 > get0);
        gdr_check_long("Fetch_and_op as an RDMA atomic", 0, 1, fop1 > fop0);
        gdr_check_long("Compare_and_swap as an RDMA atomic", 0, 1, cas1 > cas0);
        /* put_get's 8-byte puts (one a synchronisation) inline, its 3000-byte ones through
         * a bounce buffer, its BIG ones from the registered buffer */
        gdr_check_long("8-byte puts inline", 0, 1, pvar("gdr_rma_inline_puts") - inl0 >= 4);
        gdr_check_long("3000-byte puts bounced", 0, 1, pvar("gdr_rma_bounced") - bnc0 >= 4);
        gdr_check_long("large puts from registered memory", 0, 1,
                       pvar("gdr_rma_registered") - reg0 >= 4);
    }
    if (expect_native && nranks >= 2)
        doorbells();

    /* the other choice: no NIC op declared, unordered */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "which_accumulate_ops", "max,replace,no_op,sum,cswap");
    MPI_Info_set(info, "accumulate_ordering", "none");
    atomics(info, "unordered window", 0);
    MPI_Info_free(&info);
    MPI_Info_create(&info);
    MPI_Info_set(info, "which_accumulate_ops", "max,replace");
    {
        void *base;
        MPI_Win win = make_win(info, 64, 8, &base, 1);
        unsigned long long am0 = pvar("gdr_rma_fop_am"), nat0 = pvar("gdr_rma_fop_native");
        int64_t v = rank + 1, old;
        gdr_test_set_context("which_accumulate_ops=max,replace");
        trace(gdr_test_context());
        MPI_Win_lock_all(0, win);
        MPI_Fetch_and_op(&v, &old, MPI_INT64_T, 0, 0, MPI_MAX, win);
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            gdr_check_long("MAX over ranks", 0, nranks, ((int64_t *) base)[0]);
        if (expect_native) {
            gdr_check_long("Fetch_and_op(MAX) as a message", 0, 1, pvar("gdr_rma_fop_am") > am0);
            gdr_check_long("no RDMA atomics on this window", 0, 0,
                           pvar("gdr_rma_fop_native") - nat0);
        }
        MPI_Win_free(&win);
    }
    MPI_Info_free(&info);

    strided(expect_native);
    dynamic_win(expect_native);
    stress();

    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    gdr_test_finish();
    MPI_Finalize();
    return 0;
}
