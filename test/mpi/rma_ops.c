/* rma_ops: every RMA operation under every synchronisation mode on every window
 * kind, checking the values read back.
 *
 * For each window kind {create, allocate, dynamic} and each sync mode {fence,
 * PSCW, lock exclusive, lock shared, lock_all + flush, lock_all + flush_local +
 * flush_all}, two epochs run: one in which every rank targets its right
 * neighbour (RING; PSCW groups {right}/{left}) and one in which every rank
 * targets every rank, itself included (ALL; PSCW groups = all ranks).  In each
 * epoch every test of that pattern issues its operations into its own region
 * of the window, so one epoch mixes Put, Get, accumulates and atomics, as real
 * programs do.  After the epoch is closed (passive modes: flushed; the check
 * happens before unlock_all) every rank checks
 *   - the whole of its own window against an expected image, region by region
 *     (so writes to the wrong place are caught as well as missing ones), and
 *   - what its operations returned (Get results, fetched old values).
 * Under lock_all + flush_local the origin buffers are overwritten right after
 * MPI_Win_flush_local, so an implementation that still reads them is caught.
 *
 * Tests (one window region each):
 *   Put 1 int, Put 8 ints, Put 8 ints into an MPI_Type_vector target   RING
 *   Get 1 int, Get 8 ints, Get 8 ints from an MPI_Type_vector target   RING
 *   Accumulate SUM and REPLACE on MPI_INT and MPI_DOUBLE                ALL
 *   Get_accumulate SUM (int) ALL; Get_accumulate NO_OP (int)           RING
 *   Fetch_and_op SUM on MPI_INT64_T and MPI_LONG                        ALL
 *   Compare_and_swap hit + miss RING; contended (one winner)            ALL
 * Values depend on origin, target and index, so a value that went to the wrong
 * rank or offset is detected.  Create and allocate windows use disp_unit 4, so
 * the target displacement scaling is exercised; dynamic windows use absolute
 * addresses.  Concurrent fetching operations (Get_accumulate SUM, Fetch_and_op
 * SUM) add 1 << origin: each returned old value is then the set of origins
 * served before it, and the returned values of one element must form a chain
 * (some serial order of the origins) -- exactly what per-element atomicity
 * guarantees, independent of the order the implementation chose.
 *
 * Runs with 2..MAX_RANKS ranks.  Compile with -DRMA_OPS_BREAK_EXPECTED to
 * corrupt one expected value and see the test report the failure.
 */
#include "gdr_mpi_test.h"

#include <stdint.h>

_Static_assert(sizeof(long) == 8, "this test stores MPI_LONG in 8-byte window slots");

#define MAX_RANKS 30      /* masks 1 << rank must fit in an int */
#define REGION_BYTES 512  /* window bytes per test (its region) */
#define DISP_UNIT 4       /* create/allocate windows; dynamic windows use 1 */
#define NE 8              /* elements of the multi-element cases */
#define OFF 16            /* byte offset in a region of the 4-byte-element cases */
#define OFF8 64           /* byte offset in a region of the 8-byte atomics */
#define GUARD (-7)        /* fill of result buffers beyond what is fetched */
#define POISON (-999)     /* written into origin buffers after flush_local */

typedef enum {
    SYNC_FENCE,
    SYNC_PSCW,
    SYNC_LOCK_EXCLUSIVE,
    SYNC_LOCK_SHARED,
    SYNC_LOCK_ALL_FLUSH,
    SYNC_LOCK_ALL_FLUSH_LOCAL_ALL,
    SYNC_NMODES
} sync_mode;

static const char *const sync_names[SYNC_NMODES] = {
    "fence", "pscw", "lock_exclusive", "lock_shared", "lock_all+flush",
    "lock_all+flush_local+flush_all"
};

static int is_passive(sync_mode s)
{
    return s >= SYNC_LOCK_EXCLUSIVE;
}

typedef enum { RING, ALL } pattern;
typedef enum { ELEM_INT, ELEM_DOUBLE, ELEM_I64 } elem_kind;

typedef struct {
    gdr_win *w;
    sync_mode sync;
    int me, n, left, right;
    MPI_Aint region;    /* byte offset of the running test's region of the window */
    struct buffers *b;  /* the running test's origin and result buffers */
} env;

typedef struct {
    const char *name;
    pattern pat;
    elem_kind elem;                              /* how to compare the window */
    void (*init_window)(const env *e, void *img); /* initial contents of my region */
    void (*prepare)(const env *e);               /* fill origin and result buffers */
    void (*issue)(const env *e, int target);     /* this rank's operations to target */
    void (*poison)(const env *e, int target);    /* clobber origin buffers (flush_local) */
    void (*check_results)(const env *e);         /* collective: check returned values */
    void (*expect)(const env *e, void *img);     /* init image -> expected image */
} op_test;

/* Origin and result buffers of one test, one row per target so that buffers of
 * operations in flight to different targets never alias. */
typedef struct buffers {
    int orig_i[MAX_RANKS][NE + 1], res_i[MAX_RANKS][NE + 1];
    double orig_d[MAX_RANKS][NE + 1];
    int64_t orig_64[MAX_RANKS][2], cmp_64[MAX_RANKS][2], res_64[MAX_RANKS][2];
    long orig_l[MAX_RANKS], res_l[MAX_RANKS];
    int cas_winner;
} buffers;

static MPI_Datatype vec_type;   /* 4 blocks of 2 ints, stride 3 ints */

/* target_disp of byte `offset` of the running test's region in target's window. */
static MPI_Aint disp(const env *e, int target, MPI_Aint offset)
{
    return gdr_win_disp(e->w, target, e->region + offset);
}

static void call(const char *what, int rc)
{
    if (rc != MPI_SUCCESS)
        gdr_test_die(what, rc);
}

/* ---- value generators ---------------------------------------------------- */

static int put_val(int origin, int k)
{
    return 1000 * (origin + 1) + k;
}

static int win_val(int rank, int word)
{
    return 100000 * (rank + 1) + word;
}

static void fill_int(void *img, int rank, int (*f)(int rank, int word))
{
    int *p = img;
    for (int i = 0; i < REGION_BYTES / 4; i++)
        p[i] = f(rank, i);
}

static int sentinel_int(int rank, int word)
{
    return -(100000 * (rank + 1) + word);
}

static void init_sentinel_int(const env *e, void *img)
{
    fill_int(img, e->me, sentinel_int);
}

static void init_win_val(const env *e, void *img)
{
    fill_int(img, e->me, win_val);
}

static void init_sentinel_i64(const env *e, void *img)
{
    int64_t *p = img;
    for (int i = 0; i < REGION_BYTES / 8; i++)
        p[i] = -((int64_t) 1000000 * (e->me + 1) + i);
}

static void expect_unchanged(const env *e, void *img)
{
    (void) e;
    (void) img;
}

static void prepare_int_rows(const env *e)
{
    for (int t = 0; t < e->n; t++)
        for (int k = 0; k <= NE; k++) {
            e->b->orig_i[t][k] = put_val(e->me, k);
            e->b->res_i[t][k] = GUARD;
        }
}

static void poison_int_row(const env *e, int t)
{
    (void) e;
    for (int k = 0; k <= NE; k++)
        e->b->orig_i[t][k] = POISON;
}

/* ---- Put ----------------------------------------------------------------- */

static void put_issue(const env *e, int t, int count)
{
    call("MPI_Put", MPI_Put(e->b->orig_i[t], count, MPI_INT, t, disp(e, t, OFF), count, MPI_INT,
                            e->w->win));
}

static void put1_issue(const env *e, int t)
{
    put_issue(e, t, 1);
}

static void put8_issue(const env *e, int t)
{
    put_issue(e, t, NE);
}

static void put_expect(const env *e, void *img, int count)
{
    int *p = img;
    for (int k = 0; k < count; k++)
        p[OFF / 4 + k] = put_val(e->left, k);
#ifdef RMA_OPS_BREAK_EXPECTED
    p[OFF / 4] += 1;    /* deliberately wrong: proves mismatches are reported */
#endif
}

static void put1_expect(const env *e, void *img)
{
    put_expect(e, img, 1);
}

static void put8_expect(const env *e, void *img)
{
    put_expect(e, img, NE);
}

static void putvec_issue(const env *e, int t)
{
    call("MPI_Put(vector)", MPI_Put(e->b->orig_i[t], NE, MPI_INT, t, disp(e, t, OFF), 1, vec_type,
                                    e->w->win));
}

static void putvec_expect(const env *e, void *img)
{
    int *p = img;
    for (int b = 0; b < 4; b++)
        for (int j = 0; j < 2; j++)
            p[OFF / 4 + 3 * b + j] = put_val(e->left, 2 * b + j);
}

/* ---- Get ----------------------------------------------------------------- */

static void get1_issue(const env *e, int t)
{
    call("MPI_Get", MPI_Get(e->b->res_i[t], 1, MPI_INT, t, disp(e, t, OFF), 1, MPI_INT, e->w->win));
}

static void get8_issue(const env *e, int t)
{
    call("MPI_Get", MPI_Get(e->b->res_i[t], NE, MPI_INT, t, disp(e, t, OFF), NE, MPI_INT, e->w->win));
}

static void getvec_issue(const env *e, int t)
{
    call("MPI_Get(vector)", MPI_Get(e->b->res_i[t], NE, MPI_INT, t, disp(e, t, OFF), 1, vec_type,
                                    e->w->win));
}

/* e->b->res_i[right][k] for k < count must be the right neighbour's word word_of(k). */
static void get_check(const env *e, int count, int vector)
{
    for (int k = 0; k <= NE; k++) {
        int word = vector ? OFF / 4 + 3 * (k / 2) + k % 2 : OFF / 4 + k;
        int want = k < count ? win_val(e->right, word) : GUARD;
        gdr_check_long("get result", k, want, e->b->res_i[e->right][k]);
    }
}

static void get1_check(const env *e)
{
    get_check(e, 1, 0);
}

static void get8_check(const env *e)
{
    get_check(e, NE, 0);
}

static void getvec_check(const env *e)
{
    get_check(e, NE, 1);
}

/* ---- Accumulate SUM / REPLACE -------------------------------------------- */

static int accsum_init_val(int rank, int word)
{
    return word - 50 + 1000 * rank;
}

static void accsum_int_init(const env *e, void *img)
{
    fill_int(img, e->me, accsum_init_val);
}

static void accsum_int_prepare(const env *e)
{
    for (int t = 0; t < e->n; t++)
        for (int k = 0; k < NE; k++)
            e->b->orig_i[t][k] = (e->me + 1) * (k + 1) + t;
}

static void accsum_int_issue(const env *e, int t)
{
    call("MPI_Accumulate(SUM,INT)", MPI_Accumulate(e->b->orig_i[t], NE, MPI_INT, t, disp(e, t, OFF),
                                                   NE, MPI_INT, MPI_SUM, e->w->win));
}

static void accsum_int_expect(const env *e, void *img)
{
    int *p = img, n = e->n;
    for (int k = 0; k < NE; k++)
        p[OFF / 4 + k] += (k + 1) * n * (n + 1) / 2 + n * e->me;
}

static void init_dbl(const env *e, void *img)
{
    double *p = img;
    for (int j = 0; j < REGION_BYTES / 8; j++)
        p[j] = 0.25 * j + e->me;
}

/* All values are small multiples of 0.25: sums are exact in any order. */
static void accsum_dbl_prepare(const env *e)
{
    for (int t = 0; t < e->n; t++)
        for (int k = 0; k < NE; k++)
            e->b->orig_d[t][k] = (e->me + 1) * 0.5 + k + 0.25 * t;
}

static void accsum_dbl_issue(const env *e, int t)
{
    call("MPI_Accumulate(SUM,DOUBLE)", MPI_Accumulate(e->b->orig_d[t], NE, MPI_DOUBLE, t,
                                                      disp(e, t, OFF), NE, MPI_DOUBLE, MPI_SUM,
                                                      e->w->win));
}

static void poison_dbl_row(const env *e, int t)
{
    (void) e;
    for (int k = 0; k <= NE; k++)
        e->b->orig_d[t][k] = POISON;
}

static void accsum_dbl_expect(const env *e, void *img)
{
    double *p = img;
    int n = e->n;
    for (int k = 0; k < NE; k++)
        p[OFF / 8 + k] += 0.5 * n * (n + 1) / 2 + (double) n * k + 0.25 * n * e->me;
}

/* REPLACE: origin o owns two elements of every target, so there is no race. */
static int accrep_val(int origin, int target, int k)
{
    return 1000 * (origin + 1) + 10 * target + k;
}

static double accrep_dval(int origin, int target, int k)
{
    return 1.5 * (origin + 1) + 0.25 * target + k;
}

static void accrep_int_prepare(const env *e)
{
    for (int t = 0; t < e->n; t++)
        for (int k = 0; k < 2; k++)
            e->b->orig_i[t][k] = accrep_val(e->me, t, k);
}

static void accrep_int_issue(const env *e, int t)
{
    call("MPI_Accumulate(REPLACE,INT)",
         MPI_Accumulate(e->b->orig_i[t], 2, MPI_INT, t, disp(e, t, OFF + 8 * e->me), 2, MPI_INT,
                        MPI_REPLACE, e->w->win));
}

static void accrep_int_expect(const env *e, void *img)
{
    int *p = img;
    for (int o = 0; o < e->n; o++)
        for (int k = 0; k < 2; k++)
            p[(OFF + 8 * o) / 4 + k] = accrep_val(o, e->me, k);
}

static void accrep_dbl_prepare(const env *e)
{
    for (int t = 0; t < e->n; t++)
        for (int k = 0; k < 2; k++)
            e->b->orig_d[t][k] = accrep_dval(e->me, t, k);
}

static void accrep_dbl_issue(const env *e, int t)
{
    call("MPI_Accumulate(REPLACE,DOUBLE)",
         MPI_Accumulate(e->b->orig_d[t], 2, MPI_DOUBLE, t, disp(e, t, OFF + 16 * e->me), 2,
                        MPI_DOUBLE, MPI_REPLACE, e->w->win));
}

static void accrep_dbl_expect(const env *e, void *img)
{
    double *p = img;
    for (int o = 0; o < e->n; o++)
        for (int k = 0; k < 2; k++)
            p[(OFF + 16 * o) / 8 + k] = accrep_dval(o, e->me, k);
}

/* ---- serialisation check for concurrent fetching SUMs ------------------- */

static int popcount64(uint64_t x)
{
    int c = 0;
    for (; x; x &= x - 1)
        c++;
    return c;
}

/* masks[o] = what origin o's fetch saw beyond the initial value, as a set of
 * origins (bit p = origin p's contribution).  Valid iff some serial order of the
 * origins gives them: the masks have distinct sizes 0..n-1 and each one is the
 * previous plus the previous origin's bit. */
static void check_chain(const char *what, long idx, const int64_t *masks, int n)
{
    int order[MAX_RANKS];
    for (int o = 0; o < n; o++)
        order[o] = -1;
    for (int o = 0; o < n; o++) {
        int c = popcount64((uint64_t) masks[o]);
        if (masks[o] < 0 || masks[o] >> n || (masks[o] >> o & 1) || order[c] != -1) {
            order[0] = -2;
            break;
        }
        order[c] = o;
    }
    for (int c = 1; c < n && order[0] >= 0; c++)
        if (masks[order[c]] != (masks[order[c - 1]] | (int64_t) 1 << order[c - 1]))
            order[0] = -2;
    if (order[0] < 0) {
        char list[512];
        int len = 0;
        for (int o = 0; o < n && len < (int) sizeof(list) - 40; o++)
            len += snprintf(list + len, sizeof(list) - (size_t) len, " origin%d:%#llx", o,
                            (unsigned long long) masks[o]);
        gdr_test_fail("%s[%ld]: fetched old values are not a serial order of the origins "
                      "(masks of origins seen before each fetch:%s)", what, idx, list);
    }
}

/* ---- Get_accumulate ------------------------------------------------------ */

#define GACC_N 4

static int gacc_init_val(int rank, int word)
{
    return 1000 * word + rank;
}

static void gacc_init(const env *e, void *img)
{
    fill_int(img, e->me, gacc_init_val);
}

static void gacc_sum_prepare(const env *e)
{
    for (int t = 0; t < e->n; t++)
        for (int k = 0; k <= NE; k++) {
            e->b->orig_i[t][k] = 1 << e->me;
            e->b->res_i[t][k] = GUARD;
        }
}

static void gacc_sum_issue(const env *e, int t)
{
    call("MPI_Get_accumulate(SUM)",
         MPI_Get_accumulate(e->b->orig_i[t], GACC_N, MPI_INT, e->b->res_i[t], GACC_N, MPI_INT, t,
                            disp(e, t, OFF), GACC_N, MPI_INT, MPI_SUM, e->w->win));
}

static void gacc_sum_check(const env *e)
{
    int64_t send[MAX_RANKS * GACC_N], recv[MAX_RANKS * GACC_N], masks[MAX_RANKS];
    for (int t = 0; t < e->n; t++) {
        gdr_check_long("get_accumulate result guard", GACC_N, GUARD, e->b->res_i[t][GACC_N]);
        for (int k = 0; k < GACC_N; k++)
            send[t * GACC_N + k] = e->b->res_i[t][k] - gacc_init_val(t, OFF / 4 + k);
    }
    call("MPI_Alltoall", MPI_Alltoall(send, GACC_N, MPI_INT64_T, recv, GACC_N, MPI_INT64_T,
                                      MPI_COMM_WORLD));
    for (int k = 0; k < GACC_N; k++) {
        for (int o = 0; o < e->n; o++)
            masks[o] = recv[o * GACC_N + k];
        check_chain("get_accumulate old value", OFF / 4 + k, masks, e->n);
    }
}

static void gacc_sum_expect(const env *e, void *img)
{
    int *p = img;
    for (int k = 0; k < GACC_N; k++)
        p[OFF / 4 + k] += (1 << e->n) - 1;
}

static void gacc_noop_issue(const env *e, int t)
{
    call("MPI_Get_accumulate(NO_OP)",
         MPI_Get_accumulate(e->b->orig_i[t], NE, MPI_INT, e->b->res_i[t], NE, MPI_INT, t, disp(e, t, OFF),
                            NE, MPI_INT, MPI_NO_OP, e->w->win));
}

/* ---- Fetch_and_op SUM on int64 and long ---------------------------------- */

static int64_t fop_init64(int rank)
{
    return ((int64_t) 1 << 40) + 1000 * rank;
}

static long fop_initl(int rank)
{
    return -((long) 1 << 35) - rank;
}

static void fop_init(const env *e, void *img)
{
    int64_t *p = img;
    long *l = img;
    init_sentinel_i64(e, img);
    p[OFF8 / 8] = fop_init64(e->me);
    l[OFF8 / 8 + 1] = fop_initl(e->me);
}

/* The int64 contribution sits above bit 32: a 32-bit operation would lose it. */
static void fop_prepare(const env *e)
{
    for (int t = 0; t < e->n; t++) {
        e->b->orig_64[t][0] = (int64_t) 1 << (32 + e->me);
        e->b->orig_l[t] = 1L << e->me;
        e->b->res_64[t][0] = GUARD;
        e->b->res_l[t] = GUARD;
    }
}

static void fop_issue(const env *e, int t)
{
    call("MPI_Fetch_and_op(SUM,INT64)",
         MPI_Fetch_and_op(&e->b->orig_64[t][0], &e->b->res_64[t][0], MPI_INT64_T, t, disp(e, t, OFF8),
                          MPI_SUM, e->w->win));
    call("MPI_Fetch_and_op(SUM,LONG)",
         MPI_Fetch_and_op(&e->b->orig_l[t], &e->b->res_l[t], MPI_LONG, t, disp(e, t, OFF8 + 8), MPI_SUM,
                          e->w->win));
}

static void fop_poison(const env *e, int t)
{
    (void) e;
    e->b->orig_64[t][0] = POISON;
    e->b->orig_l[t] = POISON;
}

static void fop_check(const env *e)
{
    int64_t send[MAX_RANKS * 2], recv[MAX_RANKS * 2], masks[MAX_RANKS];
    for (int t = 0; t < e->n; t++) {
        int64_t d64 = e->b->res_64[t][0] - fop_init64(t);
        /* low 32 bits must be untouched; report the raw value if not */
        send[2 * t] = (d64 & 0xffffffff) ? -1 : d64 >> 32;
        send[2 * t + 1] = e->b->res_l[t] - fop_initl(t);
    }
    call("MPI_Alltoall", MPI_Alltoall(send, 2, MPI_INT64_T, recv, 2, MPI_INT64_T,
                                      MPI_COMM_WORLD));
    for (int s = 0; s < 2; s++) {
        for (int o = 0; o < e->n; o++)
            masks[o] = recv[2 * o + s];
        check_chain(s == 0 ? "fetch_and_op(INT64) old value" : "fetch_and_op(LONG) old value",
                    OFF8 / 8 + s, masks, e->n);
    }
}

static void fop_expect(const env *e, void *img)
{
    int64_t *p = img;
    long *l = img;
    p[OFF8 / 8] += (((int64_t) 1 << e->n) - 1) << 32;
    l[OFF8 / 8 + 1] += (1L << e->n) - 1;
}

/* ---- Compare_and_swap ------------------------------------------------------ */

static int64_t cas_hit_init(int rank)
{
    return ((int64_t) 1 << 36) + rank;
}

static int64_t cas_miss_init(int rank)
{
    return 77 + rank;
}

static int64_t cas_new(int origin)
{
    return ((int64_t) 5 << 36) + origin;
}

static void cas_ring_init(const env *e, void *img)
{
    int64_t *p = img;
    init_sentinel_i64(e, img);
    p[OFF8 / 8] = cas_hit_init(e->me);
    p[OFF8 / 8 + 1] = cas_miss_init(e->me);
}

static void cas_ring_prepare(const env *e)
{
    for (int t = 0; t < e->n; t++) {
        e->b->orig_64[t][0] = cas_new(e->me);
        e->b->cmp_64[t][0] = cas_hit_init(t);
        e->b->orig_64[t][1] = cas_new(e->me) + 1;
        e->b->cmp_64[t][1] = cas_miss_init(t) + 1;
        e->b->res_64[t][0] = e->b->res_64[t][1] = GUARD;
    }
}

static void cas_ring_issue(const env *e, int t)
{
    for (int s = 0; s < 2; s++)
        call("MPI_Compare_and_swap",
             MPI_Compare_and_swap(&e->b->orig_64[t][s], &e->b->cmp_64[t][s], &e->b->res_64[t][s], MPI_INT64_T, t,
                                  disp(e, t, OFF8 + 8 * s), e->w->win));
}

static void cas_poison(const env *e, int t)
{
    (void) e;
    e->b->orig_64[t][0] = e->b->orig_64[t][1] = POISON;
    e->b->cmp_64[t][0] = e->b->cmp_64[t][1] = POISON;
}

static void cas_ring_check(const env *e)
{
    gdr_check_long("compare_and_swap(hit) old value", 0, cas_hit_init(e->right),
                   e->b->res_64[e->right][0]);
    gdr_check_long("compare_and_swap(miss) old value", 1, cas_miss_init(e->right),
                   e->b->res_64[e->right][1]);
}

static void cas_ring_expect(const env *e, void *img)
{
    int64_t *p = img;
    p[OFF8 / 8] = cas_new(e->left);     /* hit: swapped */
    /* miss: p[OFF8 / 8 + 1] unchanged */
}

/* Contended: every origin tries to swap every target's word from its initial
 * value; exactly one wins, the others must see the winner's value. */

static void cas_all_init(const env *e, void *img)
{
    int64_t *p = img;
    init_sentinel_i64(e, img);
    p[OFF8 / 8] = 42 + e->me;
}

static void cas_all_prepare(const env *e)
{
    for (int t = 0; t < e->n; t++) {
        e->b->orig_64[t][0] = 1000 + e->me;
        e->b->cmp_64[t][0] = 42 + t;
        e->b->res_64[t][0] = GUARD;
    }
}

static void cas_all_issue(const env *e, int t)
{
    call("MPI_Compare_and_swap",
         MPI_Compare_and_swap(&e->b->orig_64[t][0], &e->b->cmp_64[t][0], &e->b->res_64[t][0], MPI_INT64_T, t,
                              disp(e, t, OFF8), e->w->win));
}

static void cas_all_check(const env *e)
{
    int64_t send[MAX_RANKS], recv[MAX_RANKS];
    int winners = 0;
    for (int t = 0; t < e->n; t++)
        send[t] = e->b->res_64[t][0];
    call("MPI_Alltoall", MPI_Alltoall(send, 1, MPI_INT64_T, recv, 1, MPI_INT64_T,
                                      MPI_COMM_WORLD));
    e->b->cas_winner = -1;
    for (int o = 0; o < e->n; o++)
        if (recv[o] == 42 + e->me) {
            winners++;
            e->b->cas_winner = o;
        }
    if (winners != 1) {
        gdr_test_fail("contended compare_and_swap: %d origins saw the initial value "
                      "(expected exactly 1)", winners);
        return;
    }
    for (int o = 0; o < e->n; o++)
        if (o != e->b->cas_winner)
            gdr_check_long("compare_and_swap old value seen by origin", o, 1000 + e->b->cas_winner,
                           recv[o]);
}

static void cas_all_expect(const env *e, void *img)
{
    int64_t *p = img;
    if (e->b->cas_winner >= 0)
        p[OFF8 / 8] = 1000 + e->b->cas_winner;
}

/* ---- the table ------------------------------------------------------------- */

static const op_test tests[] = {
    {"Put(1 int)", RING, ELEM_INT, init_sentinel_int, prepare_int_rows, put1_issue,
     poison_int_row, NULL, put1_expect},
    {"Put(8 ints)", RING, ELEM_INT, init_sentinel_int, prepare_int_rows, put8_issue,
     poison_int_row, NULL, put8_expect},
    {"Put(8 ints -> vector)", RING, ELEM_INT, init_sentinel_int, prepare_int_rows,
     putvec_issue, poison_int_row, NULL, putvec_expect},
    {"Get(1 int)", RING, ELEM_INT, init_win_val, prepare_int_rows, get1_issue, NULL,
     get1_check, expect_unchanged},
    {"Get(8 ints)", RING, ELEM_INT, init_win_val, prepare_int_rows, get8_issue, NULL,
     get8_check, expect_unchanged},
    {"Get(vector -> 8 ints)", RING, ELEM_INT, init_win_val, prepare_int_rows, getvec_issue,
     NULL, getvec_check, expect_unchanged},
    {"Accumulate(SUM,INT)", ALL, ELEM_INT, accsum_int_init, accsum_int_prepare,
     accsum_int_issue, poison_int_row, NULL, accsum_int_expect},
    {"Accumulate(SUM,DOUBLE)", ALL, ELEM_DOUBLE, init_dbl, accsum_dbl_prepare,
     accsum_dbl_issue, poison_dbl_row, NULL, accsum_dbl_expect},
    {"Accumulate(REPLACE,INT)", ALL, ELEM_INT, init_sentinel_int, accrep_int_prepare,
     accrep_int_issue, poison_int_row, NULL, accrep_int_expect},
    {"Accumulate(REPLACE,DOUBLE)", ALL, ELEM_DOUBLE, init_dbl, accrep_dbl_prepare,
     accrep_dbl_issue, poison_dbl_row, NULL, accrep_dbl_expect},
    {"Get_accumulate(SUM,INT)", ALL, ELEM_INT, gacc_init, gacc_sum_prepare, gacc_sum_issue,
     poison_int_row, gacc_sum_check, gacc_sum_expect},
    {"Get_accumulate(NO_OP,INT)", RING, ELEM_INT, init_win_val, prepare_int_rows,
     gacc_noop_issue, poison_int_row, get8_check, expect_unchanged},
    {"Fetch_and_op(SUM,INT64+LONG)", ALL, ELEM_I64, fop_init, fop_prepare, fop_issue,
     fop_poison, fop_check, fop_expect},
    {"Compare_and_swap(hit+miss)", RING, ELEM_I64, cas_ring_init, cas_ring_prepare,
     cas_ring_issue, cas_poison, cas_ring_check, cas_ring_expect},
    {"Compare_and_swap(contended)", ALL, ELEM_I64, cas_all_init, cas_all_prepare,
     cas_all_issue, cas_poison, cas_all_check, cas_all_expect},
};

#define NTESTS ((int) (sizeof(tests) / sizeof(tests[0])))

/* ---- running the tests ------------------------------------------------------ */

#define WIN_BYTES (NTESTS * REGION_BYTES)

static buffers bufs[NTESTS];
static MPI_Group group_world, group_left, group_right;

/* The environment of test i: its region of the window and its buffers. */
static env test_env(const env *e, int i)
{
    env te = *e;
    te.region = (MPI_Aint) i * REGION_BYTES;
    te.b = &bufs[i];
    return te;
}

static void set_context(const env *e, int i)
{
    gdr_test_set_context("op=%s sync=%s win=%s nprocs=%d", tests[i].name, sync_names[e->sync],
                         gdr_win_kind_name(e->w->kind), e->n);
}

/* Checks the results of the tests of phase `pat` and the whole of my window:
 * regions of tests that ran must hold their expected image, the others their
 * initial image.  The caller has synchronised. */
static void verify(const env *e, pattern pat)
{
    static int64_t img64[REGION_BYTES / 8];
    void *img = img64;

    for (int i = 0; i < NTESTS; i++) {
        env te = test_env(e, i);
        const op_test *t = &tests[i];
        const unsigned char *region = (const unsigned char *) e->w->base + te.region;

        set_context(e, i);
        if (t->pat == pat && t->check_results)
            t->check_results(&te);      /* collective: same order on every rank */
        t->init_window(&te, img);
        if (t->pat == pat)
            t->expect(&te, img);
        else
            gdr_test_set_context("region of op=%s (not run in this epoch) sync=%s win=%s "
                                 "nprocs=%d", t->name, sync_names[e->sync],
                                 gdr_win_kind_name(e->w->kind), e->n);
        switch (t->elem) {
        case ELEM_INT:
            for (int k = 0; k < REGION_BYTES / 4; k++)
                gdr_check_long("region", k, ((const int *) img)[k], ((const int *) region)[k]);
            break;
        case ELEM_DOUBLE:
            for (int k = 0; k < REGION_BYTES / 8; k++)
                gdr_check_double("region", k, ((const double *) img)[k],
                                 ((const double *) region)[k]);
            break;
        case ELEM_I64:
            for (int k = 0; k < REGION_BYTES / 8; k++)
                gdr_check_long("region", k, ((const int64_t *) img)[k],
                               ((const int64_t *) region)[k]);
            break;
        }
    }
}

/* Issues the operations of every test of phase `pat` to one target. */
static void issue_all(const env *e, pattern pat, int target)
{
    for (int i = 0; i < NTESTS; i++)
        if (tests[i].pat == pat) {
            env te = test_env(e, i);
            set_context(e, i);
            tests[i].issue(&te, target);
        }
}

static void poison_all(const env *e, pattern pat, int target)
{
    for (int i = 0; i < NTESTS; i++)
        if (tests[i].pat == pat && tests[i].poison) {
            env te = test_env(e, i);
            tests[i].poison(&te, target);
        }
}

/* One epoch of sync mode e->sync in which every test of phase `pat` issues
 * its operations (RING: to the right neighbour; ALL: to every rank), then the
 * checks.  Mixing the operations of several tests in one epoch is what real
 * programs do, and keeps the run short on an oversubscribed machine. */
static void run_phase(const env *e, pattern pat)
{
    MPI_Win win = e->w->win;
    int targets[MAX_RANKS], ntargets;

    gdr_test_set_context("phase=%s sync=%s win=%s nprocs=%d", pat == RING ? "ring" : "all",
                         sync_names[e->sync], gdr_win_kind_name(e->w->kind), e->n);
    if (pat == RING) {
        targets[0] = e->right;
        ntargets = 1;
    } else {
        for (int k = 0; k < e->n; k++)
            targets[k] = (e->me + k) % e->n;    /* spread the load over targets */
        ntargets = e->n;
    }

    /* Initial window contents: a local store, made public by the next
     * synchronisation (unlock for passive modes, fence/post for active ones). */
    for (int i = 0; i < NTESTS; i++) {
        env te = test_env(e, i);
        tests[i].prepare(&te);
    }
    if (is_passive(e->sync))
        call("MPI_Win_lock(self)", MPI_Win_lock(MPI_LOCK_EXCLUSIVE, e->me, 0, win));
    for (int i = 0; i < NTESTS; i++) {
        env te = test_env(e, i);
        tests[i].init_window(&te, (unsigned char *) e->w->base + te.region);
    }
    if (is_passive(e->sync))
        call("MPI_Win_unlock(self)", MPI_Win_unlock(e->me, win));
    MPI_Barrier(MPI_COMM_WORLD);

    switch (e->sync) {
    case SYNC_FENCE:
        call("MPI_Win_fence", MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
        for (int k = 0; k < ntargets; k++)
            issue_all(e, pat, targets[k]);
        call("MPI_Win_fence", MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        verify(e, pat);
        break;
    case SYNC_PSCW:{
            MPI_Group access = pat == RING ? group_right : group_world;
            MPI_Group exposure = pat == RING ? group_left : group_world;
            call("MPI_Win_post", MPI_Win_post(exposure, 0, win));
            call("MPI_Win_start", MPI_Win_start(access, 0, win));
            for (int k = 0; k < ntargets; k++)
                issue_all(e, pat, targets[k]);
            call("MPI_Win_complete", MPI_Win_complete(win));
            call("MPI_Win_wait", MPI_Win_wait(win));   /* all origins done with my window */
            verify(e, pat);
            break;
        }
    case SYNC_LOCK_EXCLUSIVE:
    case SYNC_LOCK_SHARED:{
            int type = e->sync == SYNC_LOCK_EXCLUSIVE ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
            for (int k = 0; k < ntargets; k++) {
                call("MPI_Win_lock", MPI_Win_lock(type, targets[k], 0, win));
                issue_all(e, pat, targets[k]);
                call("MPI_Win_unlock", MPI_Win_unlock(targets[k], win));
            }
            MPI_Barrier(MPI_COMM_WORLD);
            call("MPI_Win_lock(self)", MPI_Win_lock(MPI_LOCK_SHARED, e->me, 0, win));
            verify(e, pat);
            call("MPI_Win_unlock(self)", MPI_Win_unlock(e->me, win));
            break;
        }
    case SYNC_LOCK_ALL_FLUSH:
    case SYNC_LOCK_ALL_FLUSH_LOCAL_ALL:
        /* Checked inside the epoch, after the flushes: unlock_all must not be
         * what completes the operations. */
        call("MPI_Win_lock_all", MPI_Win_lock_all(0, win));
        for (int k = 0; k < ntargets; k++) {
            issue_all(e, pat, targets[k]);
            if (e->sync == SYNC_LOCK_ALL_FLUSH) {
                call("MPI_Win_flush", MPI_Win_flush(targets[k], win));
            } else {
                call("MPI_Win_flush_local", MPI_Win_flush_local(targets[k], win));
                poison_all(e, pat, targets[k]);     /* origin buffers are reusable now */
            }
        }
        if (e->sync == SYNC_LOCK_ALL_FLUSH_LOCAL_ALL)
            call("MPI_Win_flush_all", MPI_Win_flush_all(win));
        MPI_Barrier(MPI_COMM_WORLD);
        call("MPI_Win_sync", MPI_Win_sync(win));
        verify(e, pat);
        call("MPI_Win_unlock_all", MPI_Win_unlock_all(win));
        break;
    default:
        break;
    }
    /* No barrier needed here: the next phase's operations on my window start
     * only after its initialisation barrier. */
}

int main(int argc, char **argv)
{
    env e;
    int left, right;

    MPI_Init(&argc, &argv);
    memset(&e, 0, sizeof(e));
    MPI_Comm_rank(MPI_COMM_WORLD, &e.me);
    MPI_Comm_size(MPI_COMM_WORLD, &e.n);
    if (e.n < 2 || e.n > MAX_RANKS) {
        if (e.me == 0)
            fprintf(stderr, "rma_ops: needs 2..%d ranks, got %d\n", MAX_RANKS, e.n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    e.right = right = (e.me + 1) % e.n;
    e.left = left = (e.me + e.n - 1) % e.n;

    MPI_Type_vector(4, 2, 3, MPI_INT, &vec_type);
    MPI_Type_commit(&vec_type);
    MPI_Comm_group(MPI_COMM_WORLD, &group_world);
    MPI_Group_incl(group_world, 1, &left, &group_left);
    MPI_Group_incl(group_world, 1, &right, &group_right);

    for (int kind = 0; kind < GDR_WIN_NKINDS; kind++) {
        gdr_win w;
        gdr_test_set_context("win=%s", gdr_win_kind_name((gdr_win_kind) kind));
        gdr_win_open(&w, (gdr_win_kind) kind, WIN_BYTES, DISP_UNIT, MPI_COMM_WORLD);
        e.w = &w;
        for (int s = 0; s < SYNC_NMODES; s++) {
            e.sync = (sync_mode) s;
            run_phase(&e, RING);
            run_phase(&e, ALL);
        }
        gdr_test_set_context("win=%s", gdr_win_kind_name((gdr_win_kind) kind));
        gdr_win_close(&w);
    }

    MPI_Group_free(&group_left);
    MPI_Group_free(&group_right);
    MPI_Group_free(&group_world);
    MPI_Type_free(&vec_type);

    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs ? 1 : 0;
}
