/* Every predefined op on every predefined type class, as Accumulate and Get_accumulate on
 * device windows, each element checked against a host reference (issue 19's matrix, its
 * "every op/type class" axis; gpu_rma_sim covers windows x syncs x layouts with SUM).
 *
 * Each rank works on its right neighbour's window, another node when the ranks are in
 * different maint/rxe guests: there the pair (op, type) travels in gdr's staged protocol or
 * as NIC atomics and the target's GPU (or the simulated one) applies it with gdr's kernel;
 * on one node, gdr's same-node kernel or MPICH's messages take it.  Types: int8..int64 and
 * uint8..uint64 under SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, REPLACE;
 * float and double under SUM, PROD, MAX, MIN, REPLACE; C bool under the logical ops and
 * REPLACE; float and double complex under SUM, PROD, REPLACE; the five pair types under
 * MINLOC, MAXLOC (ties: the lower index) and REPLACE.  Values are exact in every type (no
 * rounding to differ from the reference), unsigned ones wrap and signed ones do not
 * overflow; NaN and signed zeros are the unit tests' (test/unit/gpu/test_acc).
 *
 *   1. Accumulate into a window from MPI_Win_create over cuMemAlloc, lock_all + flush,
 *      origins in host and device memory cell by cell.
 *   2. Get_accumulate into a window from MPI_Win_allocate (mpi_memory_alloc_kinds=
 *      cuda:device) under fence, plus NO_OP on every type: the fetched values (host or
 *      device result buffers) must be the target's old ones, the target's the new ones.
 *
 * GDR_TEST_NO_WIDE=1 leaves out the 16-byte types (double complex, MPI_DOUBLE_INT,
 * MPI_LONG_INT): on one node gdr's kernel applies no 16-byte element atomically, so they go
 * as MPICH's messages, which in the simulator's strict mode touch device memory on the host.
 * GDR_TEST_EXPECT_STAGED=1: no accumulate may go as MPICH's messages (MPI_T
 * gdr_rma_{acc,get_acc}_am stay put): the simulator's strict mode between nodes, where a
 * message would have the host touch device memory.  Without a GPU or driver: prints why
 * and fails. */

#include <complex.h>
#include <stdbool.h>
#include <stddef.h>
#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

enum { NELEM = 7 };                     /* elements per cell */
enum { CELL_BYTES = NELEM * 16 };       /* the widest type is 16 bytes */
enum { MAX_CELLS = 256 };
enum { WIN_BYTES = MAX_CELLS * CELL_BYTES };

typedef enum { K_INT, K_UINT, K_FLOAT, K_BOOL, K_COMPLEX, K_PAIR } kind_t;

typedef struct {
    const char *name;
    MPI_Datatype mpi;
    kind_t kind;
    size_t size;        /* bytes of an element */
    size_t value_size;  /* pairs: bytes of the value before the int index */
    size_t index_at;    /* pairs: offset of the int index */
} type_t;

typedef struct { short v; int i; } short_int_t;
typedef struct { int v; int i; } two_int_t;
typedef struct { long v; int i; } long_int_t;
typedef struct { float v; int i; } float_int_t;
typedef struct { double v; int i; } double_int_t;

#define PAIR(name_, mpi_, T) \
    { name_, mpi_, K_PAIR, sizeof(T), sizeof(((T *) 0)->v), offsetof(T, i) }
static type_t types[18];
static int ntypes;

static void types_init(void)
{
    type_t t[] = {
        { "int8", MPI_INT8_T, K_INT, 1, 0, 0 }, { "int16", MPI_INT16_T, K_INT, 2, 0, 0 },
        { "int32", MPI_INT32_T, K_INT, 4, 0, 0 }, { "int64", MPI_INT64_T, K_INT, 8, 0, 0 },
        { "uint8", MPI_UINT8_T, K_UINT, 1, 0, 0 }, { "uint16", MPI_UINT16_T, K_UINT, 2, 0, 0 },
        { "uint32", MPI_UINT32_T, K_UINT, 4, 0, 0 }, { "uint64", MPI_UINT64_T, K_UINT, 8, 0, 0 },
        { "float", MPI_FLOAT, K_FLOAT, 4, 0, 0 }, { "double", MPI_DOUBLE, K_FLOAT, 8, 0, 0 },
        { "bool", MPI_C_BOOL, K_BOOL, sizeof(bool), 0, 0 },
        { "float complex", MPI_C_FLOAT_COMPLEX, K_COMPLEX, sizeof(float _Complex), 0, 0 },
        { "double complex", MPI_C_DOUBLE_COMPLEX, K_COMPLEX, sizeof(double _Complex), 0, 0 },
        PAIR("short_int", MPI_SHORT_INT, short_int_t), PAIR("2int", MPI_2INT, two_int_t),
        PAIR("long_int", MPI_LONG_INT, long_int_t), PAIR("float_int", MPI_FLOAT_INT, float_int_t),
        PAIR("double_int", MPI_DOUBLE_INT, double_int_t),
    };
    _Static_assert(sizeof(t) == sizeof(types), "types[] holds every type");
    ntypes = (int) (sizeof(t) / sizeof(t[0]));
    memcpy(types, t, sizeof(t));
}

typedef struct {
    const char *name;
    MPI_Op op;
} op_t;

static const op_t ops[] = {
    { "SUM", MPI_SUM }, { "PROD", MPI_PROD }, { "MAX", MPI_MAX }, { "MIN", MPI_MIN },
    { "LAND", MPI_LAND }, { "LOR", MPI_LOR }, { "LXOR", MPI_LXOR }, { "BAND", MPI_BAND },
    { "BOR", MPI_BOR }, { "BXOR", MPI_BXOR }, { "REPLACE", MPI_REPLACE },
    { "MINLOC", MPI_MINLOC }, { "MAXLOC", MPI_MAXLOC }, { "NO_OP", MPI_NO_OP },
};
enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_LAND, OP_LOR, OP_LXOR, OP_BAND, OP_BOR, OP_BXOR,
    OP_REPLACE, OP_MINLOC, OP_MAXLOC, OP_NO_OP, OP_N };

/* MPI's table of which ops take which types (MPI-4.1 6.9.2), NO_OP aside */
static int op_takes(int op, kind_t k)
{
    switch (op) {
    case OP_SUM: case OP_PROD:
        return k == K_INT || k == K_UINT || k == K_FLOAT || k == K_COMPLEX;
    case OP_MAX: case OP_MIN:
        return k == K_INT || k == K_UINT || k == K_FLOAT;
    case OP_LAND: case OP_LOR: case OP_LXOR:
        return k == K_INT || k == K_UINT || k == K_BOOL;
    case OP_BAND: case OP_BOR: case OP_BXOR:
        return k == K_INT || k == K_UINT;
    case OP_MINLOC: case OP_MAXLOC:
        return k == K_PAIR;
    case OP_REPLACE: case OP_NO_OP:
        return 1;
    }
    return 0;
}

typedef struct {
    int op, type;
    size_t at;          /* byte offset in the window */
} cell_t;

static cell_t cells[MAX_CELLS];
static int ncells;

/* ---- values ---------------------------------------------------------------------------- */
/* Small integers: sums and products of two fit every signed type; unsigned types see
 * them through two's complement and wrap. */
static long long int_value(int role, int cell, int i, int rank)
{
    static const int target[NELEM] = { 0, 1, -2, 3, -4, 5, 7 };
    static const int origin[NELEM] = { 3, -1, -2, 0, 6, -5, 1 };
    int k = (i + cell + rank) % NELEM;
    return role ? origin[k] : target[k];
}

static double float_value(int role, int cell, int i, int rank)
{
    static const double target[NELEM] = { 0.5, -1.0, 2.0, 0.0, 3.25, 8.0, -6.5 };
    static const double origin[NELEM] = { 1.5, 2.0, -0.5, 0.0, 0.25, -8.0, 4.0 };
    int k = (i + cell + rank) % NELEM;
    return role ? origin[k] : target[k];
}

/* a pair's index: equal values in both roles meet equal and unequal indices */
static int pair_index(int role, int cell, int i, int rank)
{
    return (int) ((role ? 5 : 3) * ((i + cell + rank) % 4));
}

static void store_int(void *p, size_t size, unsigned long long v)
{
    uint8_t b1 = (uint8_t) v;
    uint16_t b2 = (uint16_t) v;
    uint32_t b4 = (uint32_t) v;
    uint64_t b8 = (uint64_t) v;
    memcpy(p, size == 1 ? (void *) &b1 : size == 2 ? (void *) &b2 : size == 4 ? (void *) &b4
           : (void *) &b8, size);
}

/* element i of a cell as `role` (0: what a target window holds, 1: what an origin sends) */
static void value_at(void *p, const type_t *t, int role, int cell, int i, int rank)
{
    memset(p, 0, t->size);
    long long v = int_value(role, cell, i, rank);
    double d = float_value(role, cell, i, rank);
    switch (t->kind) {
    case K_INT:
    case K_UINT:
        store_int(p, t->size, (unsigned long long) v);
        break;
    case K_FLOAT:
        if (t->size == 4) {
            float f = (float) d;
            memcpy(p, &f, 4);
        } else
            memcpy(p, &d, 8);
        break;
    case K_BOOL:{
            bool b = v % 2 != 0;
            memcpy(p, &b, sizeof(b));
            break;
        }
    case K_COMPLEX:
        if (t->size == sizeof(float _Complex)) {
            float _Complex c = (float) d + (float) v * I;
            memcpy(p, &c, sizeof(c));
        } else {
            double _Complex c = d + (double) v * I;
            memcpy(p, &c, sizeof(c));
        }
        break;
    case K_PAIR:{
            int idx = pair_index(role, cell, i, rank);
            long long pv = v < 0 ? -v % 3 : v % 3;      /* few values: many ties */
            if (t->mpi == MPI_FLOAT_INT) {
                float f = (float) pv;
                memcpy(p, &f, 4);
            } else if (t->mpi == MPI_DOUBLE_INT) {
                double f = (double) pv;
                memcpy(p, &f, 8);
            } else
                store_int(p, t->value_size, (unsigned long long) pv);
            memcpy((char *) p + t->index_at, &idx, sizeof(idx));
            break;
        }
    }
}

/* ---- the host reference -------------------------------------------------------------------- */
static long long load_int(const void *p, size_t size, int is_signed)
{
    uint8_t b1;
    uint16_t b2;
    uint32_t b4;
    uint64_t b8;
    switch (size) {
    case 1:
        memcpy(&b1, p, 1);
        return is_signed ? (long long) (int8_t) b1 : (long long) b1;
    case 2:
        memcpy(&b2, p, 2);
        return is_signed ? (long long) (int16_t) b2 : (long long) b2;
    case 4:
        memcpy(&b4, p, 4);
        return is_signed ? (long long) (int32_t) b4 : (long long) b4;
    default:
        memcpy(&b8, p, 8);
        return (long long) b8;
    }
}

static void apply_int(int op, const type_t *t, void *tgt, const void *org)
{
    int sgn = t->kind == K_INT;
    long long a = load_int(tgt, t->size, sgn), b = load_int(org, t->size, sgn);
    unsigned long long ua = (unsigned long long) a, ub = (unsigned long long) b, r;
    /* MAX and MIN compare as the type does: signed, or unsigned (uint64 above 2^63 too) */
    int a_less = sgn ? a < b : ua < ub;
    switch (op) {
    case OP_SUM: r = ua + ub; break;
    case OP_PROD: r = ua * ub; break;
    case OP_MAX: r = a_less ? ub : ua; break;
    case OP_MIN: r = a_less ? ua : ub; break;
    case OP_LAND: r = (a != 0) && (b != 0); break;
    case OP_LOR: r = (a != 0) || (b != 0); break;
    case OP_LXOR: r = (a != 0) != (b != 0); break;
    case OP_BAND: r = ua & ub; break;
    case OP_BOR: r = ua | ub; break;
    case OP_BXOR: r = ua ^ ub; break;
    default: r = ub; break;     /* REPLACE */
    }
    store_int(tgt, t->size, r);
}

#define APPLY_FLOATING(T) do { \
        T a, b, r; \
        memcpy(&a, tgt, sizeof(T)); \
        memcpy(&b, org, sizeof(T)); \
        switch (op) { \
        case OP_SUM: r = a + b; break; \
        case OP_PROD: r = a * b; break; \
        case OP_MAX: r = a < b ? b : a; break; \
        case OP_MIN: r = b < a ? b : a; break; \
        default: r = b; break; \
        } \
        memcpy(tgt, &r, sizeof(T)); \
    } while (0)

#define APPLY_COMPLEX(T) do { \
        T a, b, r; \
        memcpy(&a, tgt, sizeof(T)); \
        memcpy(&b, org, sizeof(T)); \
        r = op == OP_SUM ? a + b : op == OP_PROD ? a * b : b; \
        memcpy(tgt, &r, sizeof(T)); \
    } while (0)

static double pair_value(const type_t *t, const void *p)
{
    if (t->mpi == MPI_FLOAT_INT) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    if (t->mpi == MPI_DOUBLE_INT) {
        double f;
        memcpy(&f, p, 8);
        return f;
    }
    return (double) load_int(p, t->value_size, 1);
}

static void apply_pair(int op, const type_t *t, void *tgt, const void *org)
{
    if (op == OP_REPLACE) {
        memcpy(tgt, org, t->size);
        return;
    }
    double a = pair_value(t, tgt), b = pair_value(t, org);
    int ia, ib;
    memcpy(&ia, (const char *) tgt + t->index_at, sizeof(int));
    memcpy(&ib, (const char *) org + t->index_at, sizeof(int));
    int take_b = op == OP_MAXLOC ? b > a : b < a;
    if (take_b)
        memcpy(tgt, org, t->size);
    else if (a == b && ib < ia)
        memcpy((char *) tgt + t->index_at, &ib, sizeof(int));
}

static void apply(int op, const type_t *t, void *tgt, const void *org)
{
    if (op == OP_NO_OP)
        return;
    switch (t->kind) {
    case K_INT:
    case K_UINT:
        apply_int(op, t, tgt, org);
        break;
    case K_BOOL:{
            bool a, b, r;
            memcpy(&a, tgt, sizeof(a));
            memcpy(&b, org, sizeof(b));
            r = op == OP_LAND ? a && b : op == OP_LOR ? a || b : op == OP_LXOR ? a != b : b;
            memcpy(tgt, &r, sizeof(r));
            break;
        }
    case K_FLOAT:
        if (t->size == 4)
            APPLY_FLOATING(float);
        else
            APPLY_FLOATING(double);
        break;
    case K_COMPLEX:
        if (t->size == sizeof(float _Complex))
            APPLY_COMPLEX(float _Complex);
        else
            APPLY_COMPLEX(double _Complex);
        break;
    case K_PAIR:
        apply_pair(op, t, tgt, org);
        break;
    }
}

/* ---- checks ---------------------------------------------------------------------------- */
/* The bytes that carry an element's value (a pair's padding carries none). */
static int same_element(const type_t *t, const void *a, const void *b)
{
    if (t->kind != K_PAIR)
        return memcmp(a, b, t->size) == 0;
    return memcmp(a, b, t->value_size) == 0
        && memcmp((const char *) a + t->index_at, (const char *) b + t->index_at,
                  sizeof(int)) == 0;
}

static void describe(const type_t *t, const void *p, char *buf, size_t n)
{
    switch (t->kind) {
    case K_INT:
    case K_UINT:
        snprintf(buf, n, "%lld", load_int(p, t->size, t->kind == K_INT));
        break;
    case K_BOOL:{
            unsigned char b;
            memcpy(&b, p, 1);
            snprintf(buf, n, "%u", b);
            break;
        }
    case K_FLOAT:
    case K_COMPLEX:{
            double re, im = 0;
            int single = t->kind == K_FLOAT ? t->size == 4 : t->size == sizeof(float _Complex);
            if (single) {
                float f[2] = { 0, 0 };
                memcpy(f, p, t->size);
                re = f[0];
                im = f[1];
            } else {
                double f[2] = { 0, 0 };
                memcpy(f, p, t->size);
                re = f[0];
                im = f[1];
            }
            if (t->kind == K_FLOAT)
                snprintf(buf, n, "%g", re);
            else
                snprintf(buf, n, "%g%+gi", re, im);
            break;
        }
    case K_PAIR:{
            int idx;
            memcpy(&idx, (const char *) p + t->index_at, sizeof(int));
            snprintf(buf, n, "(%g, %d)", pair_value(t, p), idx);
            break;
        }
    }
}

static void check_cell(const char *what, const cell_t *c, int e, const void *want,
                       const void *got)
{
    const type_t *t = &types[c->type];
    if (same_element(t, want, got))
        return;
    char w[64], g[64];
    describe(t, want, w, sizeof(w));
    describe(t, got, g, sizeof(g));
    gdr_test_fail("%s %s on %s, element %d: expected %s, got %s", what, ops[c->op].name,
                  t->name, e, w, g);
}

/* ---- the two passes -------------------------------------------------------------------- */
static void cells_init(int with_no_op)
{
    int no_wide = getenv("GDR_TEST_NO_WIDE") != NULL;
    ncells = 0;
    size_t at = 0;
    for (int ti = 0; ti < ntypes; ti++)
        for (int op = 0; op < OP_N; op++) {
            if (no_wide && types[ti].size == 16)
                continue;
            if (!op_takes(op, types[ti].kind) || (op == OP_NO_OP && !with_no_op))
                continue;
            if (ncells == MAX_CELLS)
                gdr_test_die("too many cells for the window", MPI_ERR_OTHER);
            cells[ncells++] = (cell_t) { op, ti, at };
            at += CELL_BYTES;
        }
}

/* a rank's window (host copy) before a pass, or what an origin of rank `rank` sends */
static void fill(unsigned char *buf, int role, int rank)
{
    memset(buf, 0, WIN_BYTES);
    for (int c = 0; c < ncells; c++)
        for (int i = 0; i < NELEM; i++)
            value_at(buf + cells[c].at + (size_t) i * types[cells[c].type].size,
                     &types[cells[c].type], role, c, i, rank);
}

/* this rank's window after its left neighbour's pass: the reference */
static void expected_window(unsigned char *want, int rank, int left)
{
    static unsigned char org[WIN_BYTES];
    fill(want, 0, rank);
    fill(org, 1, left);
    for (int c = 0; c < ncells; c++) {
        size_t sz = types[cells[c].type].size;
        for (int i = 0; i < NELEM; i++)
            apply(cells[c].op, &types[cells[c].type], want + cells[c].at + i * sz,
                  org + cells[c].at + i * sz);
    }
}

/* every element of every cell: got (a host copy laid out as the window) against want */
static void check_cells(const char *what, const unsigned char *want, const unsigned char *got)
{
    for (int c = 0; c < ncells; c++) {
        size_t sz = types[cells[c].type].size;
        for (int i = 0; i < NELEM; i++)
            check_cell(what, &cells[c], i, want + cells[c].at + i * sz,
                       got + cells[c].at + i * sz);
    }
}

static void check_window(const char *what, const void *win_dev, int rank, int left)
{
    static unsigned char want[WIN_BYTES], got[WIN_BYTES];
    expected_window(want, rank, left);
    dev_copy(got, win_dev, WIN_BYTES);
    check_cells(what, want, got);
}

static MPI_T_pvar_session session;

static unsigned long long messages(void)
{
    unsigned long long a = 0, g = 0;
    (void) gdr_pvar_read(session, "gdr_rma_acc_am", &a);
    (void) gdr_pvar_read(session, "gdr_rma_get_acc_am", &g);
    return a + g;
}

/* where cell c's origin and result buffers are: host and device memory in turn, so that
 * every combination of the two comes up */
static int origin_on_device(int c)
{
    return c % 2;
}

static int result_on_device(int c)
{
    return c / 2 % 2;
}

/* 1: Accumulate, lock_all + flush, window from MPI_Win_create over device memory */
static void accumulate_pass(int rank, int left, int right)
{
    static unsigned char host[WIN_BYTES];
    gdr_test_set_context("Accumulate, created device window, lock_all + flush");
    cells_init(0);
    unsigned char *win_mem = dev_alloc(WIN_BYTES), *org_dev = dev_alloc(WIN_BYTES);
    fill(host, 0, rank);
    dev_copy(win_mem, host, WIN_BYTES);
    MPI_Win win;
    if (!GDR_CHECK_MPI(MPI_Win_create(win_mem, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                                      &win)))
        gdr_test_die("MPI_Win_create", MPI_ERR_OTHER);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);     /* a refused cell is one failure */
    fill(host, 1, rank);
    dev_copy(org_dev, host, WIN_BYTES);
    MPI_Win_lock_all(0, win);
    for (int c = 0; c < ncells; c++) {
        const cell_t *k = &cells[c];
        const unsigned char *org = (origin_on_device(c) ? org_dev : host) + k->at;
        gdr_test_set_context("Accumulate %s on %s, created device window, lock_all + flush",
                             ops[k->op].name, types[k->type].name);
        GDR_CHECK_MPI(MPI_Accumulate(org, NELEM, types[k->type].mpi, right, (MPI_Aint) k->at,
                                     NELEM, types[k->type].mpi, ops[k->op].op, win));
    }
    gdr_test_set_context("Accumulate, created device window, lock_all + flush");
    GDR_CHECK_MPI(MPI_Win_flush(right, win));
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    check_window("Accumulate", win_mem, rank, left);
    MPI_Win_free(&win);
    dev_free(win_mem);
    dev_free(org_dev);
}

/* 2: Get_accumulate (and NO_OP), fence, window from MPI_Win_allocate in device memory */
static void get_accumulate_pass(int rank, int left, int right)
{
    static unsigned char host[WIN_BYTES], res_host[WIN_BYTES], old[WIN_BYTES];
    gdr_test_set_context("Get_accumulate, allocated device window, fence");
    cells_init(1);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_memory_alloc_kinds", "cuda:device");
    unsigned char *win_mem = NULL;
    MPI_Win win;
    if (!GDR_CHECK_MPI(MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &win_mem, &win)))
        gdr_test_die("MPI_Win_allocate", MPI_ERR_OTHER);
    MPI_Info_free(&info);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    unsigned char *org_dev = dev_alloc(WIN_BYTES), *res_dev = dev_alloc(WIN_BYTES);
    fill(host, 0, rank);
    dev_copy(win_mem, host, WIN_BYTES);
    fill(host, 1, rank);
    dev_copy(org_dev, host, WIN_BYTES);
    memset(res_host, 0xa5, WIN_BYTES);
    dev_copy(res_dev, res_host, WIN_BYTES);
    MPI_Win_fence(0, win);
    for (int c = 0; c < ncells; c++) {
        const cell_t *k = &cells[c];
        const unsigned char *org = (origin_on_device(c) ? org_dev : host) + k->at;
        unsigned char *res = (result_on_device(c) ? res_dev : res_host) + k->at;
        MPI_Datatype t = types[k->type].mpi;
        gdr_test_set_context("Get_accumulate %s on %s, allocated device window, fence",
                             ops[k->op].name, types[k->type].name);
        GDR_CHECK_MPI(MPI_Get_accumulate(org, NELEM, t, res, NELEM, t, right,
                                         (MPI_Aint) k->at, NELEM, t, ops[k->op].op, win));
    }
    gdr_test_set_context("Get_accumulate, allocated device window, fence");
    MPI_Win_fence(0, win);
    /* fetched: the right neighbour's window as it was (the device results' cells copied
     * beside the host ones first) */
    static unsigned char fetched[WIN_BYTES];
    dev_copy(fetched, res_dev, WIN_BYTES);
    for (int c = 0; c < ncells; c++)
        if (result_on_device(c))
            memcpy(res_host + cells[c].at, fetched + cells[c].at, CELL_BYTES);
    fill(old, 0, right);
    check_cells("Get_accumulate's fetched", old, res_host);
    MPI_Barrier(MPI_COMM_WORLD);
    check_window("Get_accumulate", win_mem, rank, left);
    MPI_Win_free(&win);
    dev_free(org_dev);
    dev_free(res_dev);
}

int main(int argc, char **argv)
{
    int rank, size;
    gpu_mpi_test_init(&argc, &argv, &session, &rank, &size);
    types_init();
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    unsigned long long am0 = messages();
    accumulate_pass(rank, left, right);
    get_accumulate_pass(rank, left, right);
    if (getenv("GDR_TEST_EXPECT_STAGED") != NULL && messages() != am0) {
        gdr_test_set_context("MPI_T");
        gdr_test_fail("%llu accumulates went as MPICH's messages (gdr_rma_{acc,get_acc}_am)",
                      messages() - am0);
    }
    long errors = gdr_test_finish();
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return errors != 0;
}
