/* The accumulate executor (include/gdr/gpu/gdr_gpu_acc.h) against a reference written here in
 * C's own arithmetic, the way MPICH's host reductions compute (src/mpi/coll/op/op_fns.c
 * of MPICH 5.0.1): every valid op on every type, over every (target, origin) pair of a
 * type's edge values; then the decisions spelled out one by one, the validity table,
 * element sizes, partitions of a range, and the embedded kernel image.  Given a CUDA
 * driver (argv[1]: the simulated GPU, or libcuda.so.1 on a machine with a GPU), every
 * valid op on every type runs once more as the accumulate kernel launched on device
 * memory, the kernel image loaded through the driver, against the same reference. */
#include <complex.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gdr_unit.h"
#include "gdr/gpu/gdr_gpu_acc.h"
#include "gdr/gpu/gdr_gpu_acc_atomic.h"
#include "gdr/gpu/gdr_gpu_acc_body.h"       /* gdr_gpu_acc_range: partitions of a range */
#include "gpu/gdr_gpu_kernels_image.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_module.h"

static const char *const op_names[GDR_GPU_OP_COUNT] = {
    "SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR",
    "MAXLOC", "MINLOC", "REPLACE", "NO_OP", "CSWAP",
};

/* ---- the reference: one element, in place ----------------------------------------- */

typedef void ref_fn(int op, void *t, const void *o, const void *c);
typedef int same_fn(const void *x, const void *y);

/* Integers as MPICH's C does them, except that SUM and PROD go through an unsigned type
 * at least as wide as int, where wrap-around is defined (MPICH's signed "a + b" overflows,
 * undefined in C, and uint16_t * uint16_t overflows int). */
#define REF_INT(NAME, T, UT)                                                             \
    static void NAME(int op, void *tp, const void *op_, const void *cp)                  \
    {                                                                                    \
        T t = *(T *)tp, o = *(const T *)op_;                                             \
        switch (op) {                                                                    \
        case GDR_GPU_OP_SUM: t = (T)((UT)t + (UT)o); break;                              \
        case GDR_GPU_OP_PROD: t = (T)((UT)t * (UT)o); break;                             \
        case GDR_GPU_OP_MAX: t = t > o ? t : o; break;                                   \
        case GDR_GPU_OP_MIN: t = t < o ? t : o; break;                                   \
        case GDR_GPU_OP_LAND: t = t && o; break;                                         \
        case GDR_GPU_OP_LOR: t = t || o; break;                                          \
        case GDR_GPU_OP_LXOR: t = (t && !o) || (!t && o); break;                         \
        case GDR_GPU_OP_BAND: t = (T)(t & o); break;                                     \
        case GDR_GPU_OP_BOR: t = (T)(t | o); break;                                      \
        case GDR_GPU_OP_BXOR: t = (T)(t ^ o); break;                                     \
        case GDR_GPU_OP_REPLACE: t = o; break;                                           \
        case GDR_GPU_OP_CSWAP: if (t == *(const T *)cp) t = o; break;                    \
        }                                                                                \
        *(T *)tp = t;                                                                    \
    }
REF_INT(ref_int8, int8_t, unsigned)
REF_INT(ref_int16, int16_t, unsigned)
REF_INT(ref_int32, int32_t, uint32_t)
REF_INT(ref_int64, int64_t, uint64_t)
REF_INT(ref_uint8, uint8_t, unsigned)
REF_INT(ref_uint16, uint16_t, unsigned)
REF_INT(ref_uint32, uint32_t, uint32_t)
REF_INT(ref_uint64, uint64_t, uint64_t)

/* MPI_C_BOOL: C's _Bool, whose && || and == give 0 or 1. */
static void ref_bool(int op, void *tp, const void *op_, const void *cp)
{
    bool t = *(bool *)tp, o = *(const bool *)op_;
    switch (op) {
    case GDR_GPU_OP_LAND: t = t && o; break;
    case GDR_GPU_OP_LOR: t = t || o; break;
    case GDR_GPU_OP_LXOR: t = t != o; break;
    case GDR_GPU_OP_REPLACE: t = o; break;
    case GDR_GPU_OP_CSWAP: if (t == *(const bool *)cp) t = o; break;
    }
    *(bool *)tp = t;
}

#define REF_REAL(NAME, T)                                                                \
    static void NAME(int op, void *tp, const void *op_, const void *cp)                  \
    {                                                                                    \
        (void)cp;                                                                        \
        T t = *(T *)tp, o = *(const T *)op_;                                             \
        switch (op) {                                                                    \
        case GDR_GPU_OP_SUM: t = t + o; break;                                           \
        case GDR_GPU_OP_PROD: t = t * o; break;                                          \
        case GDR_GPU_OP_MAX: t = t > o ? t : o; break;                                   \
        case GDR_GPU_OP_MIN: t = t < o ? t : o; break;                                   \
        case GDR_GPU_OP_REPLACE: t = o; break;                                           \
        }                                                                                \
        *(T *)tp = t;                                                                    \
    }
REF_REAL(ref_float, float)
REF_REAL(ref_double, double)

/* C's native complex + and *, which is what MPICH's MPIR_SUM and MPIR_PROD compute on
 * MPI_C_FLOAT_COMPLEX wherever the compiler has float _Complex. */
#define REF_COMPLEX(NAME, T)                                                             \
    static void NAME(int op, void *tp, const void *op_, const void *cp)                  \
    {                                                                                    \
        (void)cp;                                                                        \
        T t = *(T *)tp, o = *(const T *)op_;                                             \
        if (op == GDR_GPU_OP_SUM)                                                        \
            t = t + o;                                                                   \
        else if (op == GDR_GPU_OP_PROD)                                                  \
            t = t * o;                                                                   \
        else if (op == GDR_GPU_OP_REPLACE)                                               \
            t = o;                                                                       \
        *(T *)tp = t;                                                                    \
    }
REF_COMPLEX(ref_cfloat, float _Complex)
REF_COMPLEX(ref_cdouble, double _Complex)

struct float_int { float v; int i; };
struct double_int { double v; int i; };
struct long_int { long v; int i; };
struct two_int { int v; int i; };
struct short_int { short v; int i; };

/* MPI's definition of MAXLOC/MINLOC (MPI-4.1 6.9.4), and MPICH's choice where it says
 * nothing: unordered values (a NaN) keep the target's pair. */
#define REF_PAIR(NAME, T)                                                                \
    static void NAME(int op, void *tp, const void *op_, const void *cp)                  \
    {                                                                                    \
        (void)cp;                                                                        \
        T *t = tp;                                                                       \
        const T *o = op_;                                                                \
        int o_wins = op == GDR_GPU_OP_MAXLOC ? o->v > t->v : o->v < t->v;                \
        if (op == GDR_GPU_OP_REPLACE || ((op == GDR_GPU_OP_MAXLOC || op == GDR_GPU_OP_MINLOC) \
                                         && o_wins))                                     \
            *t = *o;                                                                     \
        else if ((op == GDR_GPU_OP_MAXLOC || op == GDR_GPU_OP_MINLOC) && o->v == t->v)   \
            t->i = o->i < t->i ? o->i : t->i;                                            \
    }
REF_PAIR(ref_float_int, struct float_int)
REF_PAIR(ref_double_int, struct double_int)
REF_PAIR(ref_long_int, struct long_int)
REF_PAIR(ref_two_int, struct two_int)
REF_PAIR(ref_short_int, struct short_int)

/* ---- sameness: bits, but any NaN equals any NaN ------------------------------------- */

static int same_f(float x, float y)
{
    return (isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof(x)) == 0;
}

static int same_d(double x, double y)
{
    return (isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof(x)) == 0;
}

#define SAME_BYTES(NAME, N) \
    static int NAME(const void *x, const void *y) { return memcmp(x, y, N) == 0; }
SAME_BYTES(same_1, 1)
SAME_BYTES(same_2, 2)
SAME_BYTES(same_4, 4)
SAME_BYTES(same_8, 8)

static int same_float(const void *x, const void *y) { return same_f(*(const float *)x, *(const float *)y); }
static int same_double(const void *x, const void *y) { return same_d(*(const double *)x, *(const double *)y); }

static int same_cfloat(const void *x, const void *y)
{
    const float *a = x, *b = y;     /* C11 6.2.5p13: a complex is an array of two reals */
    return same_f(a[0], b[0]) && same_f(a[1], b[1]);
}

static int same_cdouble(const void *x, const void *y)
{
    const double *a = x, *b = y;
    return same_d(a[0], b[0]) && same_d(a[1], b[1]);
}

static int same_l(long x, long y) { return x == y; }

/* Pairs member by member: padding is no part of the value. */
#define SAME_PAIR(NAME, T, SAME_V)                                                       \
    static int NAME(const void *x, const void *y)                                        \
    {                                                                                    \
        const T *a = x, *b = y;                                                          \
        return SAME_V(a->v, b->v) && a->i == b->i;                                       \
    }
SAME_PAIR(same_float_int, struct float_int, same_f)
SAME_PAIR(same_double_int, struct double_int, same_d)
SAME_PAIR(same_long_int, struct long_int, same_l)
SAME_PAIR(same_two_int, struct two_int, same_l)
SAME_PAIR(same_short_int, struct short_int, same_l)

/* ---- edge values: every (target, origin) pair of them is tested ---------------------- */

static const int8_t v_int8[] = {0, 1, -1, 2, 100, -100, INT8_MAX, INT8_MIN};
static const int16_t v_int16[] = {0, 1, -1, 3, 300, -300, INT16_MAX, INT16_MIN};
static const int32_t v_int32[] = {0, 1, -1, 7, 46341, -46341, INT32_MAX, INT32_MIN};
static const int64_t v_int64[] = {0, 1, -1, 5, 3037000500, -3037000500, INT64_MAX, INT64_MIN};
static const uint8_t v_uint8[] = {0, 1, 2, 16, 0x80, 0x81, 0xfe, UINT8_MAX};
static const uint16_t v_uint16[] = {0, 1, 2, 256, 0x8000, 0x8001, 0xfffe, UINT16_MAX};
static const uint32_t v_uint32[] = {0, 1, 2, 65536, 0x80000000u, 0x80000001u, 0xfffffffeu,
                                    UINT32_MAX};
static const uint64_t v_uint64[] = {0, 1, 2, 1ull << 32, 1ull << 63, (1ull << 63) + 1,
                                    UINT64_MAX - 1, UINT64_MAX};
static const bool v_bool[] = {false, true};
static float v_float[12];
static double v_double[12];
static float _Complex v_cfloat[64];
static double _Complex v_cdouble[64];
static const struct float_int v_float_int[] = {
    {1, 3}, {1, 5}, {2, 0}, {-0.0f, 2}, {0.0f, 7}, {NAN, 1}, {-INFINITY, 4}, {INFINITY, 9},
};
static const struct double_int v_double_int[] = {
    {1, 3}, {1, 5}, {2, 0}, {-0.0, 2}, {0.0, 7}, {NAN, 1}, {-INFINITY, 4}, {INFINITY, 9},
};
static const struct long_int v_long_int[] = {
    {1, 3}, {1, 5}, {2, 0}, {-1, 2}, {-1, 1}, {LONG_MAX, 6}, {LONG_MIN, 4}, {LONG_MIN, 8},
};
static const struct two_int v_two_int[] = {
    {1, 3}, {1, 5}, {2, 0}, {-1, 2}, {-1, 1}, {INT_MAX, 6}, {INT_MIN, 4}, {INT_MIN, 8},
};
static const struct short_int v_short_int[] = {
    {1, 3}, {1, 5}, {2, 0}, {-1, 2}, {-1, 1}, {SHRT_MAX, 6}, {SHRT_MIN, 4}, {SHRT_MIN, 8},
};

static void make_values(void)
{
    const double reals[12] = {0.0, -0.0, 1.0, -1.5, 3.0, INFINITY, -INFINITY, NAN, -NAN,
                              1e30, 1e-30, 0.1};
    for (int k = 0; k < 12; k++) {
        v_float[k] = (float)reals[k];
        v_double[k] = reals[k];
    }
    v_float[9] = FLT_MAX;           /* products overflow, sums do not */
    v_float[10] = FLT_TRUE_MIN;     /* a subnormal */
    v_double[9] = DBL_MAX;
    v_double[10] = DBL_TRUE_MIN;
    /* complex values: every (re, im) of 8 parts, among them inf, NaN and the largest
     * finite value (products overflow: C's * then recovers infinities) */
    const float fparts[8] = {0.0f, -0.0f, 1.0f, -2.0f, INFINITY, -INFINITY, NAN, FLT_MAX};
    const double dparts[8] = {0.0, -0.0, 1.0, -2.0, INFINITY, -INFINITY, NAN, DBL_MAX};
    for (int k = 0; k < 64; k++) {
        float f[2] = {fparts[k / 8], fparts[k % 8]};
        double d[2] = {dparts[k / 8], dparts[k % 8]};
        memcpy(&v_cfloat[k], f, sizeof(f));
        memcpy(&v_cdouble[k], d, sizeof(d));
    }
}

typedef struct type_case {
    int type;
    const char *name;
    size_t size;
    const void *vals;
    size_t nvals;
    ref_fn *ref;
    same_fn *same;
} type_case_t;

#define CASE(E, NAME, V, REF, SAME) {E, NAME, sizeof((V)[0]), V, sizeof(V) / sizeof((V)[0]), REF, SAME}
static const type_case_t cases[GDR_GPU_T_COUNT] = {
    CASE(GDR_GPU_T_INT8, "int8", v_int8, ref_int8, same_1),
    CASE(GDR_GPU_T_INT16, "int16", v_int16, ref_int16, same_2),
    CASE(GDR_GPU_T_INT32, "int32", v_int32, ref_int32, same_4),
    CASE(GDR_GPU_T_INT64, "int64", v_int64, ref_int64, same_8),
    CASE(GDR_GPU_T_UINT8, "uint8", v_uint8, ref_uint8, same_1),
    CASE(GDR_GPU_T_UINT16, "uint16", v_uint16, ref_uint16, same_2),
    CASE(GDR_GPU_T_UINT32, "uint32", v_uint32, ref_uint32, same_4),
    CASE(GDR_GPU_T_UINT64, "uint64", v_uint64, ref_uint64, same_8),
    CASE(GDR_GPU_T_FLOAT, "float", v_float, ref_float, same_float),
    CASE(GDR_GPU_T_DOUBLE, "double", v_double, ref_double, same_double),
    CASE(GDR_GPU_T_BOOL, "bool", v_bool, ref_bool, same_1),
    CASE(GDR_GPU_T_FLOAT_COMPLEX, "float complex", v_cfloat, ref_cfloat, same_cfloat),
    CASE(GDR_GPU_T_DOUBLE_COMPLEX, "double complex", v_cdouble, ref_cdouble, same_cdouble),
    CASE(GDR_GPU_T_FLOAT_INT, "float_int", v_float_int, ref_float_int, same_float_int),
    CASE(GDR_GPU_T_DOUBLE_INT, "double_int", v_double_int, ref_double_int, same_double_int),
    CASE(GDR_GPU_T_LONG_INT, "long_int", v_long_int, ref_long_int, same_long_int),
    CASE(GDR_GPU_T_2INT, "2int", v_two_int, ref_two_int, same_two_int),
    CASE(GDR_GPU_T_SHORT_INT, "short_int", v_short_int, ref_short_int, same_short_int),
};

/* ---- every op on every type --------------------------------------------------------- */

/* Which ops MPI defines on which types, as MPI-4.1 6.9.2 groups them and MPICH checks
 * (MPIR_op_dt_check): written out here apart from the executor's own table. */
static int expect_valid(int op, int type)
{
    int integer = type <= GDR_GPU_T_UINT64, real = type == GDR_GPU_T_FLOAT || type == GDR_GPU_T_DOUBLE;
    int boolean = type == GDR_GPU_T_BOOL, pair = type >= GDR_GPU_T_FLOAT_INT;
    int cplx = type == GDR_GPU_T_FLOAT_COMPLEX || type == GDR_GPU_T_DOUBLE_COMPLEX;
    if (op == GDR_GPU_OP_SUM || op == GDR_GPU_OP_PROD)
        return integer || real || cplx;
    if (op == GDR_GPU_OP_MAX || op == GDR_GPU_OP_MIN)
        return integer || real;
    if (op == GDR_GPU_OP_LAND || op == GDR_GPU_OP_LOR || op == GDR_GPU_OP_LXOR)
        return integer || boolean;
    if (op == GDR_GPU_OP_BAND || op == GDR_GPU_OP_BOR || op == GDR_GPU_OP_BXOR)
        return integer;
    if (op == GDR_GPU_OP_MAXLOC || op == GDR_GPU_OP_MINLOC)
        return pair;
    if (op == GDR_GPU_OP_CSWAP)
        return integer || boolean;
    return op == GDR_GPU_OP_REPLACE || op == GDR_GPU_OP_NO_OP;
}

#define POISON 0xa5

/* Arrays of n = nvals^2 elements: target k holds value k / nvals, origin k value
 * k % nvals, compare k the target's value for even k and another value for odd k. */
typedef struct arrays {
    size_t n;
    unsigned char *target, *origin, *compare, *expect, *got, *result;
} arrays_t;

static void arrays_make(arrays_t *ar, const type_case_t *tc)
{
    size_t nv = tc->nvals, sz = tc->size;
    ar->n = nv * nv;
    unsigned char **bufs[] = {&ar->target, &ar->origin, &ar->compare, &ar->expect, &ar->got,
                              &ar->result};
    for (size_t b = 0; b < sizeof(bufs) / sizeof(bufs[0]); b++)
        *bufs[b] = calloc(ar->n, sz);
    const unsigned char *vals = tc->vals;
    for (size_t k = 0; k < ar->n; k++) {
        memcpy(ar->target + k * sz, vals + (k / nv) * sz, sz);
        memcpy(ar->origin + k * sz, vals + (k % nv) * sz, sz);
        memcpy(ar->compare + k * sz, vals + ((k / nv + (k % 2)) % nv) * sz, sz);
    }
}

static void arrays_free(arrays_t *ar)
{
    free(ar->target), free(ar->origin), free(ar->compare);
    free(ar->expect), free(ar->got), free(ar->result);
}

/* Runs op on the arrays: the executor into got/result, the reference into expect. */
static void run_op_flags(const type_case_t *tc, const arrays_t *ar, int op, int with_result,
                         int flags)
{
    size_t sz = tc->size;
    memcpy(ar->got, ar->target, ar->n * sz);
    memcpy(ar->expect, ar->target, ar->n * sz);
    memset(ar->result, POISON, ar->n * sz);
    gdr_gpu_acc_args_t args = {
        .target = ar->got,
        .origin = op == GDR_GPU_OP_NO_OP ? NULL : ar->origin,
        .result = with_result ? ar->result : NULL,
        .compare = op == GDR_GPU_OP_CSWAP ? ar->compare : NULL,
        .count = ar->n, .op = op | flags, .type = tc->type,
    };
    gdr_gpu_acc_apply(&args);
    for (size_t k = 0; k < ar->n; k++)
        tc->ref(op, ar->expect + k * sz, ar->origin + k * sz, ar->compare + k * sz);
}

static void run_op(const type_case_t *tc, const arrays_t *ar, int op, int with_result)
{
    run_op_flags(tc, ar, op, with_result, 0);
}

/* The types an atomic step takes: at most 8 bytes. */
static int atomic_type(int type)
{
    return type != GDR_GPU_T_DOUBLE_COMPLEX && type != GDR_GPU_T_DOUBLE_INT
        && type != GDR_GPU_T_LONG_INT;
}

/* The first element where a and b differ, or n. */
static size_t first_diff(const type_case_t *tc, const unsigned char *a, const unsigned char *b,
                         size_t n)
{
    size_t k = 0;
    while (k < n && tc->same(a + k * tc->size, b + k * tc->size))
        k++;
    return k;
}

static int untouched(const unsigned char *p, size_t len)
{
    for (size_t k = 0; k < len; k++)
        if (p[k] != POISON)
            return 0;
    return 1;
}

static void check_type(const type_case_t *tc)
{
    arrays_t ar;
    arrays_make(&ar, tc);
    int invalid_ok = 1, invalid_count = 0;
    for (int op = 0; op < GDR_GPU_OP_COUNT; op++) {
        if (!expect_valid(op, tc->type)) {
            run_op(tc, &ar, op, 1);
            invalid_ok &= memcmp(ar.got, ar.target, ar.n * tc->size) == 0
                && untouched(ar.result, ar.n * tc->size);
            invalid_count++;
            continue;
        }
        run_op(tc, &ar, op, 0);
        size_t bad_plain = first_diff(tc, ar.got, ar.expect, ar.n);
        run_op(tc, &ar, op, 1);
        size_t bad = first_diff(tc, ar.got, ar.expect, ar.n);
        size_t bad_result = first_diff(tc, ar.result, ar.target, ar.n);
        char where[160] = "";
        if (bad != ar.n || bad_plain != ar.n || bad_result != ar.n)
            snprintf(where, sizeof(where), " (first differing element: %zu; without a result"
                     " buffer %zu; in the result %zu)", bad, bad_plain, bad_result);
        GDR_CHECK(bad == ar.n && bad_plain == ar.n && bad_result == ar.n,
                  "%s %s: %zu elements as the reference, with and without a result buffer;"
                  " the result holds the old target%s", op_names[op], tc->name, ar.n, where);
        if (!atomic_type(tc->type))
            continue;
        run_op_flags(tc, &ar, op, 0, GDR_GPU_ACC_ATOMIC);
        bad_plain = first_diff(tc, ar.got, ar.expect, ar.n);
        run_op_flags(tc, &ar, op, 1, GDR_GPU_ACC_ATOMIC);
        bad = first_diff(tc, ar.got, ar.expect, ar.n);
        bad_result = first_diff(tc, ar.result, ar.target, ar.n);
        GDR_CHECK(bad == ar.n && bad_plain == ar.n && bad_result == ar.n,
                  "%s %s, atomic steps: the same values and results as the reference (first"
                  " differing element %zu, without a result buffer %zu, in the result %zu)",
                  op_names[op], tc->name, bad, bad_plain, bad_result);
    }
    GDR_CHECK(invalid_ok, "%s: the %d ops MPI does not define on it touch neither target nor"
              " result", tc->name, invalid_count);
    arrays_free(&ar);
}

/* ---- the decisions, one by one ------------------------------------------------------ */

static void apply(int op, int type, void *target, const void *origin, void *result,
                  const void *compare, uint64_t count)
{
    gdr_gpu_acc_args_t args = {target, origin, result, compare, count, op, type};
    gdr_gpu_acc_apply(&args);
}

static float f1(int op, float t, float o)
{
    apply(op, GDR_GPU_T_FLOAT, &t, &o, NULL, NULL, 1);
    return t;
}

static void check_decisions(void)
{
    GDR_CHECK(f1(GDR_GPU_OP_MAX, NAN, 1) == 1 && isnan(f1(GDR_GPU_OP_MAX, 1, NAN)),
              "MAX float: MPL_MAX(t, o) = t > o ? t : o: a NaN target loses, a NaN origin wins");
    GDR_CHECK(f1(GDR_GPU_OP_MIN, NAN, 1) == 1 && isnan(f1(GDR_GPU_OP_MIN, 1, NAN)),
              "MIN float: likewise t < o ? t : o");
    GDR_CHECK(signbit(f1(GDR_GPU_OP_MAX, 0.0f, -0.0f)) && !signbit(f1(GDR_GPU_OP_MAX, -0.0f, 0.0f))
              && signbit(f1(GDR_GPU_OP_MIN, 0.0f, -0.0f)),
              "MAX/MIN float on +0 and -0: the origin's zero stays (neither is larger)");

    int32_t i32[3] = {INT32_MAX, INT32_MIN, -1}, o32[3] = {1, -1, INT32_MIN};
    apply(GDR_GPU_OP_SUM, GDR_GPU_T_INT32, i32, o32, NULL, NULL, 3);
    GDR_CHECK(i32[0] == INT32_MIN && i32[1] == INT32_MAX && i32[2] == INT32_MAX,
              "SUM int32 wraps around: MAX + 1 = MIN, MIN + -1 = MAX, -1 + MIN = MAX");
    int64_t i64 = INT64_MIN, m1 = -1;
    apply(GDR_GPU_OP_PROD, GDR_GPU_T_INT64, &i64, &m1, NULL, NULL, 1);
    GDR_CHECK(i64 == INT64_MIN, "PROD int64: MIN * -1 wraps to MIN");
    uint16_t u16 = UINT16_MAX;
    apply(GDR_GPU_OP_PROD, GDR_GPU_T_UINT16, &u16, &u16, NULL, NULL, 1);
    GDR_CHECK(u16 == 1, "PROD uint16: 65535 * 65535 = 1 (mod 2^16), no int overflow");

    struct float_int ft[4] = {{5, 7}, {5, 3}, {NAN, 8}, {1, 8}};
    struct float_int fo[4] = {{5, 3}, {5, 7}, {9, 1}, {NAN, 1}};
    apply(GDR_GPU_OP_MAXLOC, GDR_GPU_T_FLOAT_INT, ft, fo, NULL, NULL, 4);
    GDR_CHECK(ft[0].i == 3 && ft[1].i == 3 && ft[0].v == 5,
              "MAXLOC on equal values keeps the smaller index, whichever side has it");
    GDR_CHECK(isnan(ft[2].v) && ft[2].i == 8 && ft[3].v == 1 && ft[3].i == 8,
              "MAXLOC with a NaN on either side keeps the target's pair (MPICH)");
    struct two_int it[2] = {{-4, 9}, {-4, 2}}, io[2] = {{-4, 2}, {-4, 9}};
    apply(GDR_GPU_OP_MINLOC, GDR_GPU_T_2INT, it, io, NULL, NULL, 2);
    GDR_CHECK(it[0].i == 2 && it[1].i == 2, "MINLOC on equal values keeps the smaller index too");

    const float zp[2] = {INFINITY, INFINITY}, wp[2] = {1, 0};
    float _Complex z, w;
    memcpy(&z, zp, sizeof(z));      /* C11 6.2.5p13; CMPLXF needs GCC's builtin */
    memcpy(&w, wp, sizeof(w));
    float _Complex zc = z * w;
    apply(GDR_GPU_OP_PROD, GDR_GPU_T_FLOAT_COMPLEX, &z, &w, NULL, NULL, 1);
    GDR_CHECK(isinf(crealf(z)) && same_cfloat(&z, &zc),
              "PROD float complex: (inf+inf*i)*(1+0i) recovers an infinity as C's * does "
              "(the schoolbook formula gives NaN+NaN*i)");

    int32_t ct[3] = {5, 6, 7}, cc[3] = {5, 0, 7}, co[3] = {1, 2, 3}, cr[3] = {0, 0, 0};
    apply(GDR_GPU_OP_CSWAP, GDR_GPU_T_INT32, ct, co, cr, cc, 3);
    GDR_CHECK(ct[0] == 1 && ct[1] == 6 && ct[2] == 3 && cr[0] == 5 && cr[1] == 6 && cr[2] == 7,
              "CSWAP int32 per element: swapped where equal, kept where not; result = old");
    uint8_t bt[2] = {2, 2}, bo[2] = {1, 0}, bc[2] = {1, 2};
    apply(GDR_GPU_OP_LAND, GDR_GPU_T_BOOL, bt, bo, NULL, NULL, 2);
    GDR_CHECK(bt[0] == 1 && bt[1] == 0, "LAND bool: a byte 2 is true, results are 0 or 1");
    uint8_t bt2[2] = {2, 2};
    apply(GDR_GPU_OP_CSWAP, GDR_GPU_T_BOOL, bt2, bo, NULL, bc, 2);
    GDR_CHECK(bt2[0] == 2 && bt2[1] == 0,
              "CSWAP bool compares bytes, as MPICH's int8 ==: 2 is not 1");

    double dt[2] = {1, 2}, dr[2] = {0, 0};
    apply(GDR_GPU_OP_NO_OP, GDR_GPU_T_DOUBLE, dt, NULL, dr, NULL, 2);
    GDR_CHECK(dt[0] == 1 && dt[1] == 2 && dr[0] == 1 && dr[1] == 2,
              "NO_OP (origin NULL) leaves the target and fills the result");
    apply(GDR_GPU_OP_SUM, GDR_GPU_T_DOUBLE, NULL, NULL, NULL, NULL, 0);
    apply(GDR_GPU_OP_SUM, GDR_GPU_T_DOUBLE, dt, dt, dr, NULL, 0);
    GDR_CHECK(dt[0] == 1 && dr[0] == 1, "count 0 touches nothing (NULL pointers too)");
    double d1 = 0.5, o1 = 0.25, r1 = 0;
    apply(GDR_GPU_OP_SUM, GDR_GPU_T_DOUBLE, &d1, &o1, &r1, NULL, 1);
    GDR_CHECK(d1 == 0.75 && r1 == 0.5, "count 1: 0.5 + 0.25, result 0.5");
}

/* ---- partitions of a range ---------------------------------------------------------- */

/* Split passes (gdr_gpu_acc_range with each first of a stride, in reverse order) leave
 * target and result as one full pass does: every element applied exactly once. */
static void check_partitions(int op, int type)
{
    const type_case_t *tc = &cases[type];
    enum { N = 100003 };
    size_t sz = tc->size;
    unsigned char *init = malloc(N * sz), *origin = malloc(N * sz), *compare = malloc(N * sz);
    unsigned char *full = malloc(N * sz), *full_r = malloc(N * sz);
    unsigned char *split = malloc(N * sz), *split_r = malloc(N * sz);
    const unsigned char *vals = tc->vals;
    for (size_t k = 0; k < N; k++) {
        memcpy(init + k * sz, vals + (k * 7 % tc->nvals) * sz, sz);
        memcpy(origin + k * sz, vals + (k * 5 % tc->nvals) * sz, sz);
        memcpy(compare + k * sz, vals + (k * 3 % tc->nvals) * sz, sz);
    }
    memcpy(full, init, N * sz);
    gdr_gpu_acc_args_t a = {full, origin, full_r, compare, N, op, type};
    gdr_gpu_acc_apply(&a);
    static const uint64_t strides[] = {1, 2, 3, 7, 32, 1000, N, 2 * N};
    int ok = 1;
    for (size_t s = 0; s < sizeof(strides) / sizeof(strides[0]); s++) {
        memcpy(split, init, N * sz);
        memset(split_r, POISON, N * sz);
        a.target = split;
        a.result = split_r;
        for (uint64_t first = strides[s]; first-- > 0;)
            gdr_gpu_acc_range(&a, first, strides[s]);
        ok &= first_diff(tc, split, full, N) == N && first_diff(tc, split_r, full_r, N) == N;
    }
    memcpy(split, init, N * sz);
    gdr_gpu_acc_range(&a, 0, 0);
    gdr_gpu_acc_range(&a, N, 1);
    ok &= memcmp(split, init, N * sz) == 0;
    GDR_CHECK(ok, "%s %s over %d elements: split passes (strides 1 to %d) give one full pass;"
              " stride 0 and first >= count touch nothing", op_names[op], tc->name, N, 2 * N);
    free(init), free(origin), free(compare), free(full), free(full_r), free(split), free(split_r);
}

/* ---- atomic steps under contention, on the host ------------------------------------- */

/* Sums of 1 that threads add at once to the same elements: int8 and int16 neighbours
 * sharing words, int32 and int64 (fetch-add), float and double (compare-and-swap loops). */
enum { HAMMER_THREADS = 4, HAMMER_ROUNDS = 20000, HAMMER_N = 8 };

typedef struct hammer_set {
    int8_t i8[HAMMER_N];
    int16_t i16[HAMMER_N];
    int32_t i32[HAMMER_N];
    int64_t i64[HAMMER_N];
    float f32[HAMMER_N];
    double f64[HAMMER_N];
    uint16_t counter;                   /* a compare-and-swap counter */
    uint64_t ticket;                    /* fetch-add with a result: tickets */
} hammer_set_t;

typedef struct hammer {
    hammer_set_t *set;
    int flags;
    unsigned cas_wins;
    uint64_t *tickets;                  /* HAMMER_ROUNDS of them */
} hammer_t;

static void *hammer_run(void *arg)
{
    hammer_t *h = arg;
    static const int8_t one8[HAMMER_N] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const int16_t one16[HAMMER_N] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const int32_t one32[HAMMER_N] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const int64_t one64[HAMMER_N] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const float onef[HAMMER_N] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const double oned[HAMMER_N] = {1, 1, 1, 1, 1, 1, 1, 1};
    hammer_set_t *s = h->set;
    const int64_t one = 1;
    for (int r = 0; r < HAMMER_ROUNDS; r++) {
        gdr_gpu_acc_args_t a[] = {
            {s->i8, one8, NULL, NULL, HAMMER_N, GDR_GPU_OP_SUM | h->flags, GDR_GPU_T_INT8},
            {s->i16, one16, NULL, NULL, HAMMER_N, GDR_GPU_OP_SUM | h->flags, GDR_GPU_T_INT16},
            {s->i32, one32, NULL, NULL, HAMMER_N, GDR_GPU_OP_SUM | h->flags, GDR_GPU_T_INT32},
            {s->i64, one64, NULL, NULL, HAMMER_N, GDR_GPU_OP_SUM | h->flags, GDR_GPU_T_INT64},
            {s->f32, onef, NULL, NULL, HAMMER_N, GDR_GPU_OP_SUM | h->flags, GDR_GPU_T_FLOAT},
            {s->f64, oned, NULL, NULL, HAMMER_N, GDR_GPU_OP_SUM | h->flags, GDR_GPU_T_DOUBLE},
            {&s->ticket, &one, &h->tickets[r], NULL, 1, GDR_GPU_OP_SUM | h->flags,
             GDR_GPU_T_UINT64},
        };
        for (size_t k = 0; k < sizeof(a) / sizeof(a[0]); k++)
            gdr_gpu_acc_apply(&a[k]);
        /* the counter: read it, then swap in one more where it still holds that */
        uint16_t seen, next, was;
        gdr_gpu_acc_args_t fetch = {&s->counter, NULL, &seen, NULL, 1,
                                    GDR_GPU_OP_NO_OP | h->flags, GDR_GPU_T_UINT16};
        gdr_gpu_acc_apply(&fetch);
        next = (uint16_t) (seen + 1);
        gdr_gpu_acc_args_t cas = {&s->counter, &next, &was, &seen, 1,
                                  GDR_GPU_OP_CSWAP | h->flags, GDR_GPU_T_UINT16};
        gdr_gpu_acc_apply(&cas);
        h->cas_wins += was == seen;
    }
    return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *) x, b = *(const uint64_t *) y;
    return a < b ? -1 : a > b;
}

static void check_atomic_contention(void)
{
    hammer_set_t set;
    memset(&set, 0, sizeof(set));
    hammer_t h[HAMMER_THREADS];
    pthread_t t[HAMMER_THREADS];
    uint64_t *all = calloc((size_t) HAMMER_THREADS * HAMMER_ROUNDS, sizeof(uint64_t));
    for (int k = 0; k < HAMMER_THREADS; k++) {
        h[k] = (hammer_t) {&set, GDR_GPU_ACC_ATOMIC, 0, all + (size_t) k * HAMMER_ROUNDS};
        pthread_create(&t[k], NULL, hammer_run, &h[k]);
    }
    unsigned wins = 0;
    for (int k = 0; k < HAMMER_THREADS; k++) {
        pthread_join(t[k], NULL);
        wins += h[k].cas_wins;
    }
    const long total = (long) HAMMER_THREADS * HAMMER_ROUNDS;
    int ok = 1;
    for (int i = 0; i < HAMMER_N; i++)
        ok &= set.i8[i] == (int8_t) (uint8_t) total && set.i16[i] == (int16_t) (uint16_t) total
            && set.i32[i] == total && set.i64[i] == total && set.f32[i] == (float) total
            && set.f64[i] == (double) total;
    GDR_CHECK(ok, "atomic steps: %d threads x %d sums of 1 on int8/int16 neighbours, int32,"
              " int64, float and double: none lost (int8[0] %d, int16[0] %d, int32[0] %d,"
              " float[0] %.0f)", HAMMER_THREADS, HAMMER_ROUNDS, set.i8[0], set.i16[0],
              set.i32[0], set.f32[0]);
    qsort(all, (size_t) total, sizeof(uint64_t), cmp_u64);
    long in_order = 0;
    while (in_order < total && all[in_order] == (uint64_t) in_order)
        in_order++;
    GDR_CHECK(in_order == total && set.ticket == (uint64_t) total, "atomic fetch-add with a"
              " result: the %ld fetched values are 0 .. %ld, each once (first gap at %ld)",
              total, total - 1, in_order);
    GDR_CHECK(set.counter == (uint16_t) wins && wins > 0, "atomic compare-and-swap on a"
              " uint16 counter: %u swaps won, counter %u", wins, set.counter);
    free(all);

    /* refused atomic steps touch nothing: 16-byte types, a misaligned 8-byte element */
    int64_t store[3] = {5, 6, 7}, add[2] = {1, 1};
    gdr_gpu_acc_args_t mis = {(char *) store + 4, add, NULL, NULL, 1, GDR_GPU_OP_SUM | GDR_GPU_ACC_ATOMIC, GDR_GPU_T_2INT};
    gdr_gpu_acc_apply(&mis);
    double _Complex z[1] = {1}, w[1] = {2};
    gdr_gpu_acc_args_t wide = {z, w, NULL, NULL, 1, GDR_GPU_OP_SUM | GDR_GPU_ACC_ATOMIC, GDR_GPU_T_DOUBLE_COMPLEX};
    gdr_gpu_acc_apply(&wide);
    GDR_CHECK(store[0] == 5 && store[1] == 6 && z[0] == 1
              && !gdr_gpu_acc_atomic_ok(GDR_GPU_T_2INT, (char *) store + 4)
              && gdr_gpu_acc_atomic_ok(GDR_GPU_T_2INT, store)
              && !gdr_gpu_acc_atomic_ok(GDR_GPU_T_DOUBLE_COMPLEX, z)
              && !gdr_gpu_acc_atomic_ok(GDR_GPU_T_INT16, (char *) store + 1)
              && gdr_gpu_acc_atomic_ok(GDR_GPU_T_INT8, (char *) store + 1),
              "atomic steps refused (touching nothing): a 16-byte type, an 8-byte pair at a"
              " 4-byte aligned address; gdr_gpu_acc_atomic_ok says so");
}

/* ---- the table and the sizes -------------------------------------------------------- */

static void check_table_and_sizes(void)
{
    int mismatches = 0;
    for (int op = 0; op < GDR_GPU_OP_COUNT; op++)
        for (int type = 0; type < GDR_GPU_T_COUNT; type++)
            mismatches += gdr_gpu_acc_valid(op, type) != expect_valid(op, type);
    GDR_CHECK(mismatches == 0, "gdr_gpu_acc_valid: all %d (op, type) pairs as MPI-4.1 6.9.2 and"
              " MPICH's MPIR_op_dt_check (%d differ)", GDR_GPU_OP_COUNT * GDR_GPU_T_COUNT,
              mismatches);
    GDR_CHECK(!gdr_gpu_acc_valid(GDR_GPU_OP_BAND, GDR_GPU_T_FLOAT)
              && !gdr_gpu_acc_valid(GDR_GPU_OP_MAXLOC, GDR_GPU_T_INT32)
              && gdr_gpu_acc_valid(GDR_GPU_OP_SUM, GDR_GPU_T_DOUBLE_COMPLEX)
              && !gdr_gpu_acc_valid(GDR_GPU_OP_CSWAP, GDR_GPU_T_DOUBLE)
              && !gdr_gpu_acc_valid(GDR_GPU_OP_BAND, GDR_GPU_T_BOOL)
              && gdr_gpu_acc_valid(GDR_GPU_OP_LXOR, GDR_GPU_T_BOOL)
              && !gdr_gpu_acc_valid(GDR_GPU_OP_LAND, GDR_GPU_T_DOUBLE)
              && !gdr_gpu_acc_valid(GDR_GPU_OP_MAX, GDR_GPU_T_FLOAT_COMPLEX)
              && gdr_gpu_acc_valid(GDR_GPU_OP_REPLACE, GDR_GPU_T_SHORT_INT)
              && gdr_gpu_acc_valid(GDR_GPU_OP_CSWAP, GDR_GPU_T_UINT8),
              "valid: BAND float no, MAXLOC int32 no, SUM double complex yes, CSWAP double no,"
              " BAND bool no, LXOR bool yes, LAND double no, MAX complex no, REPLACE short_int"
              " yes, CSWAP uint8 yes");
    GDR_CHECK(!gdr_gpu_acc_valid(-1, GDR_GPU_T_INT32) && !gdr_gpu_acc_valid(GDR_GPU_OP_COUNT, 0)
              && !gdr_gpu_acc_valid(GDR_GPU_OP_SUM, -1)
              && !gdr_gpu_acc_valid(GDR_GPU_OP_REPLACE, GDR_GPU_T_COUNT),
              "valid: 0 for an op or type outside the enums");

    static const size_t c_sizes[GDR_GPU_T_COUNT] = {
        sizeof(int8_t), sizeof(int16_t), sizeof(int32_t), sizeof(int64_t),
        sizeof(uint8_t), sizeof(uint16_t), sizeof(uint32_t), sizeof(uint64_t),
        sizeof(float), sizeof(double), sizeof(_Bool), sizeof(float _Complex),
        sizeof(double _Complex), sizeof(struct float_int), sizeof(struct double_int),
        sizeof(struct long_int), sizeof(struct two_int), sizeof(struct short_int),
    };
    int size_bad = 0;
    for (int type = 0; type < GDR_GPU_T_COUNT; type++)
        size_bad += gdr_gpu_type_size(type) != c_sizes[type];
    GDR_CHECK(size_bad == 0 && gdr_gpu_type_size(-1) == 0
              && gdr_gpu_type_size(GDR_GPU_T_COUNT) == 0,
              "gdr_gpu_type_size: sizeof of the C type for all %d types, 0 outside the enum",
              GDR_GPU_T_COUNT);
}

/* ---- the embedded kernels ----------------------------------------------------------- */

static void check_kernel_image(void)
{
    size_t n = gdr_gpu_kernels_image_size;
    if (n == 0) {
        printf("skip kernel image: built without nvcc (size 0), nothing to check\n");
        return;
    }
    const unsigned char *p = gdr_gpu_kernels_image;
    uint32_t magic;
    uint16_t header_size;
    uint64_t body_size;
    memcpy(&magic, p, 4);
    memcpy(&header_size, p + 6, 2);
    memcpy(&body_size, p + 8, 8);
    GDR_CHECK(n >= 16 && magic == 0xba55ed50u && header_size + body_size == n
              && (uintptr_t)p % 16 == 0,
              "kernel image: a 16-byte aligned fatbin of %zu bytes (magic %#x)", n, magic);
    const char name[] = ".text." GDR_GPU_ACC_KERNEL;
    int found = 0;
    for (size_t k = 0; k + sizeof(name) - 1 <= n && !found; k++)
        found = memcmp(p + k, name, sizeof(name) - 1) == 0;
    GDR_CHECK(found, "kernel image: SASS holds %s's code section %s", GDR_GPU_ACC_KERNEL, name);
}

/* ---- the same through a driver: the kernel on device memory ------------------------- */

typedef struct device_pass {
    gdr_gpu_t g;
    gdr_gpu_stream_t s;
    unsigned char *poison;      /* POISON bytes, enough for any type's arrays */
} device_pass_t;

/* Copies of the host arrays on the device, launch, copy back into ar->got/ar->result. */
static int device_run_op(device_pass_t *d, const type_case_t *tc, const arrays_t *ar,
                         void *const dev[4], int op, int with_result, int flags)
{
    size_t bytes = ar->n * tc->size;
    gdr_gpu_t *g = &d->g;
    gdr_gpu_acc_args_t args = {
        .target = dev[0],
        .origin = op == GDR_GPU_OP_NO_OP ? NULL : dev[1],
        .result = with_result ? dev[2] : NULL,
        .compare = op == GDR_GPU_OP_CSWAP ? dev[3] : NULL,
        .count = ar->n, .op = op | flags, .type = tc->type,
    };
    return gdr_gpu_copy(g, dev[0], ar->target, bytes) || gdr_gpu_copy(g, dev[2], d->poison, bytes)
        || gdr_gpu_acc_launch(g, d->s, &args) || gdr_gpu_stream_sync(g, d->s)
        || gdr_gpu_copy(g, ar->got, dev[0], bytes) || gdr_gpu_copy(g, ar->result, dev[2], bytes);
}

static void check_type_on_device(device_pass_t *d, const type_case_t *tc)
{
    arrays_t ar;
    void *dev[4] = {NULL, NULL, NULL, NULL};
    arrays_make(&ar, tc);
    size_t bytes = ar.n * tc->size;
    int ready = 1;
    for (int b = 0; b < 4; b++)
        ready &= gdr_gpu_mem_alloc(&d->g, bytes, &dev[b]) == 0;
    ready = ready && gdr_gpu_copy(&d->g, dev[1], ar.origin, bytes) == 0
        && gdr_gpu_copy(&d->g, dev[3], ar.compare, bytes) == 0;
    GDR_CHECK(ready, "device %s: %zu-element target, origin, result and compare arrays on"
              " the device (%s)", tc->name, ar.n, ready ? "ok" : d->g.error);
    for (int op = 0; ready && op < GDR_GPU_OP_COUNT; op++) {
        if (!expect_valid(op, tc->type))
            continue;           /* the launch's contract: valid args only */
        for (int flags = 0; flags <= GDR_GPU_ACC_ATOMIC; flags += GDR_GPU_ACC_ATOMIC) {
            if (flags != 0 && !atomic_type(tc->type))
                break;
            run_op(tc, &ar, op, 0);                 /* ar.expect: the reference */
            int rc = device_run_op(d, tc, &ar, dev, op, 0, flags);
            size_t bad_plain = rc == 0 ? first_diff(tc, ar.got, ar.expect, ar.n) : 0;
            int plain_untouched = rc == 0 && memcmp(ar.result, d->poison, bytes) == 0;
            rc = rc || device_run_op(d, tc, &ar, dev, op, 1, flags);
            size_t bad = rc == 0 ? first_diff(tc, ar.got, ar.expect, ar.n) : 0;
            size_t bad_result = rc == 0 ? first_diff(tc, ar.result, ar.target, ar.n) : 0;
            int ok = rc == 0 && bad == ar.n && bad_plain == ar.n && bad_result == ar.n
                && plain_untouched;
            char where[GDR_GPU_ERROR_LEN + 160] = "";
            if (rc != 0)
                snprintf(where, sizeof(where), ": %s", d->g.error);
            else if (!ok)
                snprintf(where, sizeof(where), " (first differing element: %zu; without a"
                         " result buffer %zu; in the result %zu%s)", bad, bad_plain,
                         bad_result, plain_untouched ? "" : "; a result written though none"
                         " was asked for");
            GDR_CHECK(ok, "device %s %s%s: %zu elements as the reference, with and without a"
                      " result buffer%s", op_names[op], tc->name, flags ? ", atomic steps" : "",
                      ar.n, where);
        }
    }
    for (int b = 0; b < 4; b++)
        if (dev[b] != NULL)
            gdr_gpu_mem_free(&d->g, dev[b]);
    arrays_free(&ar);
}

/* Atomic steps from kernels running at once: launches on several streams add 1 to the
 * same int8 neighbours, int32 (fetch-add) and float (compare-and-swap) elements. */
static void check_atomic_on_device(device_pass_t *d)
{
    enum { STREAMS = 4, LAUNCHES = 50, N = 4096 };
    gdr_gpu_t *g = &d->g;
    gdr_gpu_stream_t s[STREAMS] = {NULL};
    void *t8 = NULL, *t32 = NULL, *tf = NULL, *o8 = NULL, *o32 = NULL, *of = NULL;
    int8_t *h8 = calloc(N, 1);
    int32_t *h32 = calloc(N, 4);
    float *hf = calloc(N, 4);
    int ready = 1;
    for (int k = 0; k < STREAMS; k++)
        ready &= gdr_gpu_stream_create(g, &s[k]) == 0;
    void **bufs[] = {&t8, &t32, &tf, &o8, &o32, &of};
    size_t sizes[] = {N, 4 * N, 4 * N, N, 4 * N, 4 * N};
    for (int b = 0; b < 6; b++)
        ready = ready && gdr_gpu_mem_alloc(g, sizes[b], bufs[b]) == 0;
    for (int i = 0; i < N; i++)
        h8[i] = 1, h32[i] = 1, hf[i] = 1;
    ready = ready && gdr_gpu_copy(g, o8, h8, N) == 0 && gdr_gpu_copy(g, o32, h32, 4 * N) == 0
        && gdr_gpu_copy(g, of, hf, 4 * N) == 0;
    memset(h8, 0, N), memset(h32, 0, 4 * N), memset(hf, 0, 4 * N);
    ready = ready && gdr_gpu_copy(g, t8, h8, N) == 0 && gdr_gpu_copy(g, t32, h32, 4 * N) == 0
        && gdr_gpu_copy(g, tf, hf, 4 * N) == 0;
    for (int l = 0; ready && l < LAUNCHES; l++)
        for (int k = 0; ready && k < STREAMS; k++) {
            gdr_gpu_acc_args_t a8 = {t8, o8, NULL, NULL, N, GDR_GPU_OP_SUM | GDR_GPU_ACC_ATOMIC, GDR_GPU_T_INT8};
            gdr_gpu_acc_args_t a32 = {t32, o32, NULL, NULL, N, GDR_GPU_OP_SUM | GDR_GPU_ACC_ATOMIC, GDR_GPU_T_INT32};
            gdr_gpu_acc_args_t af = {tf, of, NULL, NULL, N, GDR_GPU_OP_SUM | GDR_GPU_ACC_ATOMIC, GDR_GPU_T_FLOAT};
            ready = gdr_gpu_acc_launch(g, s[k], &a8) == 0 && gdr_gpu_acc_launch(g, s[k], &a32) == 0
                && gdr_gpu_acc_launch(g, s[k], &af) == 0;
        }
    for (int k = 0; k < STREAMS; k++)
        ready = ready && gdr_gpu_stream_sync(g, s[k]) == 0;
    ready = ready && gdr_gpu_copy(g, h8, t8, N) == 0 && gdr_gpu_copy(g, h32, t32, 4 * N) == 0
        && gdr_gpu_copy(g, hf, tf, 4 * N) == 0;
    int lost = 0;
    for (int i = 0; ready && i < N; i++)
        lost += h8[i] != (int8_t) (uint8_t) (STREAMS * LAUNCHES) || h32[i] != STREAMS * LAUNCHES
            || hf[i] != STREAMS * LAUNCHES;
    GDR_CHECK(ready && lost == 0, "device atomic steps: %d streams x %d launches adding 1 to"
              " %d int8 neighbours, int32 and float elements at once: none lost (%d elements"
              " short%s%s)", STREAMS, LAUNCHES, N, lost, ready ? "" : "; ",
              ready ? "" : g->error);
    for (int b = 0; b < 6; b++)
        if (*bufs[b] != NULL)
            gdr_gpu_mem_free(g, *bufs[b]);
    for (int k = 0; k < STREAMS; k++)
        if (s[k] != NULL)
            gdr_gpu_stream_destroy(g, s[k]);
    free(h8), free(h32), free(hf);
}

static void check_on_device(const char *driver)
{
    device_pass_t d;
    size_t most = 0;
    for (int type = 0; type < GDR_GPU_T_COUNT; type++)
        if (cases[type].nvals * cases[type].nvals * cases[type].size > most)
            most = cases[type].nvals * cases[type].nvals * cases[type].size;
    if (gdr_gpu_open(&d.g, driver, 0) != 0) {
        GDR_CHECK(0, "open the CUDA driver %s: %s", driver, d.g.error);
        gdr_gpu_close(&d.g);
        return;
    }
    char what[256];
    gdr_gpu_describe(&d.g, what, sizeof(what));
    printf("# the accumulate kernel through %s: %s\n", driver, what);
    d.poison = malloc(most);
    memset(d.poison, POISON, most);
    int loaded = gdr_gpu_stream_create(&d.g, &d.s) == 0
        && gdr_gpu_module_load(&d.g, gdr_gpu_kernels_image, gdr_gpu_kernels_image_size) == 0;
    GDR_CHECK(loaded, "a stream, and the embedded kernel image (%zu bytes) loaded (%s)",
              gdr_gpu_kernels_image_size, loaded ? "ok" : d.g.error);
    for (int type = 0; loaded && type < GDR_GPU_T_COUNT; type++)
        check_type_on_device(&d, &cases[type]);
    if (loaded)
        check_atomic_on_device(&d);
    if (loaded)
        gdr_gpu_stream_destroy(&d.g, d.s);
    free(d.poison);
    gdr_gpu_close(&d.g);
}

int main(int argc, char **argv)
{
    make_values();
    for (int type = 0; type < GDR_GPU_T_COUNT; type++)
        check_type(&cases[type]);
    check_decisions();
    check_partitions(GDR_GPU_OP_SUM, GDR_GPU_T_INT32);
    check_partitions(GDR_GPU_OP_PROD, GDR_GPU_T_DOUBLE_COMPLEX);
    check_partitions(GDR_GPU_OP_MAXLOC, GDR_GPU_T_DOUBLE_INT);
    check_partitions(GDR_GPU_OP_CSWAP, GDR_GPU_T_UINT16);
    check_atomic_contention();
    check_table_and_sizes();
    check_kernel_image();
    if (argc > 1)
        check_on_device(argv[1]);
    return gdr_unit_finish();
}
