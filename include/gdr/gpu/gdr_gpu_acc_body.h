/* The accumulate executor's element loop (the contract is gdr_gpu_acc.h), written once as
 * __host__ __device__ code: gdr_gpu_kernels.cu runs it as a grid-stride kernel, and
 * gdr_gpu_acc.c on the host.  It compiles as C11 and as CUDA C++.
 *
 * The arithmetic is MPICH 5.0.1's host reductions (src/mpi/coll/op/op_fns.c; CAS:
 * MPIR_Compare_equal in src/mpi/rma/rmatypeutil.c), the target being MPI's inout
 * operand, so that an accumulate gives the same bits on a host window and on a device one:
 * - integers: SUM and PROD wrap around (two's complement).  They are computed in
 *   uint64_t, whose low bits are the narrow type's result, so that no signed overflow
 *   (undefined in C, where MPICH's "a + b" has it for 32- and 64-bit types) and no
 *   promotion of uint16_t to int (65535 * 65535 overflows int) takes place.
 * - MAX and MIN are MPL_MAX(t, o) = t > o ? t : o and MPL_MIN(t, o) = t < o ? t : o: the
 *   origin wins unless the target is strictly larger (smaller), so a NaN origin always
 *   wins, a NaN target loses to any origin, and of +0 and -0 the origin's stays.
 * - logical ops give 0 or 1 and take any non-zero value as true; bitwise ops act on the
 *   two's-complement bits.
 * - MAXLOC takes the origin's pair where t.v < o.v and else, where t.v <= o.v (equal),
 *   keeps the smaller index; MINLOC likewise with > and >=.  A NaN value compares false
 *   both ways, so the target's pair stays; on +0 against -0 the target's value stays.
 * - complex PROD is what C's complex multiply gives, as MPICH gets it on C's native
 *   complex types (gdr_gpu_acc_real.h).
 * - CSWAP (integer types and BOOL only, see gdr_gpu_acc_defined) compares with the
 *   type's ==, as MPIR_Compare_equal does for its INTEGER group.  On floating types ==
 *   would never match a NaN and would match -0.0 with +0.0, one reason MPI allows
 *   compare-and-swap on integer, logical and byte types only.
 * Same values means the same bits, except in NaNs: a NaN result is a NaN on both sides,
 * but its payload and sign are no part of the contract (GPUs return their canonical NaN).
 * An (op, type) pair that gdr_gpu_acc_defined refuses touches no memory at all. */
#ifndef GDR_GPU_ACC_BODY_H
#define GDR_GPU_ACC_BODY_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "gdr_gpu_acc_atomic.h"

#ifdef __CUDACC__
#define GDR_GPU_HD __host__ __device__
#else
#define GDR_GPU_HD
#endif

/* Complex values.  Both representations are C11's (6.2.5p13): an array of two reals,
 * real part first; the arithmetic is done on those two reals, never by the language. */
#ifdef __CUDACC__
typedef struct { float re, im; } gdr_gpu_cfloat_t;
typedef struct { double re, im; } gdr_gpu_cdouble_t;
#define GDR_GPU_CPARTS(parts, z) ((parts)[0] = (z).re, (parts)[1] = (z).im)
#define GDR_GPU_CSET(z, parts) ((z).re = (parts)[0], (z).im = (parts)[1])
#else
typedef float _Complex gdr_gpu_cfloat_t;
typedef double _Complex gdr_gpu_cdouble_t;
#define GDR_GPU_CPARTS(parts, z) memcpy((parts), &(z), sizeof(parts))
#define GDR_GPU_CSET(z, parts) memcpy(&(z), (parts), sizeof(parts))
#endif

/* MINLOC/MAXLOC pairs with C's layout (gdr_gpu_acc.h); LONG_INT's long is 8 bytes. */
typedef struct { float v; int i; } gdr_gpu_float_int_t;
typedef struct { double v; int i; } gdr_gpu_double_int_t;
typedef struct { int64_t v; int i; } gdr_gpu_long_int_t;
typedef struct { int v; int i; } gdr_gpu_2int_t;
typedef struct { int16_t v; int i; } gdr_gpu_short_int_t;

/* Each type with its storage type, by class.  BOOL (MPI_C_BOOL) is read as a byte, as
 * MPICH does (its internal type is MPIR_INT8): any non-zero byte is true, and a byte
 * other than 0 or 1 is no undefined behaviour. */
#define GDR_GPU_INT_TYPES(X)           \
    X(GDR_GPU_T_INT8, int8_t)          \
    X(GDR_GPU_T_INT16, int16_t)        \
    X(GDR_GPU_T_INT32, int32_t)        \
    X(GDR_GPU_T_INT64, int64_t)        \
    X(GDR_GPU_T_UINT8, uint8_t)        \
    X(GDR_GPU_T_UINT16, uint16_t)      \
    X(GDR_GPU_T_UINT32, uint32_t)      \
    X(GDR_GPU_T_UINT64, uint64_t)
#define GDR_GPU_BOOL_TYPES(X) X(GDR_GPU_T_BOOL, uint8_t)
#define GDR_GPU_REAL_TYPES(X) X(GDR_GPU_T_FLOAT, float) X(GDR_GPU_T_DOUBLE, double)
#define GDR_GPU_COMPLEX_TYPES(X)                       \
    X(GDR_GPU_T_FLOAT_COMPLEX, gdr_gpu_cfloat_t)       \
    X(GDR_GPU_T_DOUBLE_COMPLEX, gdr_gpu_cdouble_t)
#define GDR_GPU_PAIR_TYPES(X)                          \
    X(GDR_GPU_T_FLOAT_INT, gdr_gpu_float_int_t)        \
    X(GDR_GPU_T_DOUBLE_INT, gdr_gpu_double_int_t)      \
    X(GDR_GPU_T_LONG_INT, gdr_gpu_long_int_t)          \
    X(GDR_GPU_T_2INT, gdr_gpu_2int_t)                  \
    X(GDR_GPU_T_SHORT_INT, gdr_gpu_short_int_t)
#define GDR_GPU_ALL_TYPES(X) \
    GDR_GPU_INT_TYPES(X) GDR_GPU_BOOL_TYPES(X) GDR_GPU_REAL_TYPES(X) \
    GDR_GPU_COMPLEX_TYPES(X) GDR_GPU_PAIR_TYPES(X)

enum {
    GDR_GPU_CLASS_INT = 1,
    GDR_GPU_CLASS_BOOL = 2,
    GDR_GPU_CLASS_REAL = 4,
    GDR_GPU_CLASS_COMPLEX = 8,
    GDR_GPU_CLASS_PAIR = 16
};

static inline GDR_GPU_HD int gdr_gpu_type_class(int type)
{
    switch (type) {
#define GDR_GPU_X(e, T) case e:
        GDR_GPU_INT_TYPES(GDR_GPU_X) return GDR_GPU_CLASS_INT;
        GDR_GPU_BOOL_TYPES(GDR_GPU_X) return GDR_GPU_CLASS_BOOL;
        GDR_GPU_REAL_TYPES(GDR_GPU_X) return GDR_GPU_CLASS_REAL;
        GDR_GPU_COMPLEX_TYPES(GDR_GPU_X) return GDR_GPU_CLASS_COMPLEX;
        GDR_GPU_PAIR_TYPES(GDR_GPU_X) return GDR_GPU_CLASS_PAIR;
#undef GDR_GPU_X
    }
    return 0;
}

/* gdr_gpu_acc_valid's table, for the device too: MPI-4.1 section 6.9.2's groups as MPICH
 * checks them (MPIR_op_dt_check in src/include/mpir_datatype.h): BAND/BOR/BXOR take
 * C integers but not MPI_C_BOOL (a Logical), LAND/LOR/LXOR take both but no floats;
 * CSWAP: MPI_Compare_and_swap's C integer and Logical types. */
static inline GDR_GPU_HD int gdr_gpu_acc_defined(int op, int type)
{
    int c = gdr_gpu_type_class(type);
    switch (op) {
    case GDR_GPU_OP_SUM:
    case GDR_GPU_OP_PROD:
        return (c & (GDR_GPU_CLASS_INT | GDR_GPU_CLASS_REAL | GDR_GPU_CLASS_COMPLEX)) != 0;
    case GDR_GPU_OP_MAX:
    case GDR_GPU_OP_MIN:
        return (c & (GDR_GPU_CLASS_INT | GDR_GPU_CLASS_REAL)) != 0;
    case GDR_GPU_OP_LAND:
    case GDR_GPU_OP_LOR:
    case GDR_GPU_OP_LXOR:
    case GDR_GPU_OP_CSWAP:
        return (c & (GDR_GPU_CLASS_INT | GDR_GPU_CLASS_BOOL)) != 0;
    case GDR_GPU_OP_BAND:
    case GDR_GPU_OP_BOR:
    case GDR_GPU_OP_BXOR:
        return c == GDR_GPU_CLASS_INT;
    case GDR_GPU_OP_MAXLOC:
    case GDR_GPU_OP_MINLOC:
        return c == GDR_GPU_CLASS_PAIR;
    case GDR_GPU_OP_REPLACE:
    case GDR_GPU_OP_NO_OP:
        return c != 0;
    }
    return 0;
}

/* dst[i] = src[i] for elements of `type`. */
static inline GDR_GPU_HD void gdr_gpu_acc_copy(void *dst, const void *src, uint64_t i, int type)
{
    switch (type) {
#define GDR_GPU_X(e, T) case e: ((T *)dst)[i] = ((const T *)src)[i]; return;
        GDR_GPU_ALL_TYPES(GDR_GPU_X)
#undef GDR_GPU_X
    }
}

/* Integers are widened to 64 bits (sign-extended for the signed types) and narrowed back:
 * sums, products and bitwise results keep the same low bits, comparisons the same order. */
static inline GDR_GPU_HD uint64_t gdr_gpu_int_load(const void *p, uint64_t i, int type)
{
    switch (type) {
#define GDR_GPU_X(e, T) case e: return (uint64_t)((const T *)p)[i];
        GDR_GPU_INT_TYPES(GDR_GPU_X) GDR_GPU_BOOL_TYPES(GDR_GPU_X)
#undef GDR_GPU_X
    }
    return 0;
}

static inline GDR_GPU_HD void gdr_gpu_int_store(void *p, uint64_t i, int type, uint64_t v)
{
    switch (type) {
#define GDR_GPU_X(e, T) case e: ((T *)p)[i] = (T)v; return;
        GDR_GPU_INT_TYPES(GDR_GPU_X) GDR_GPU_BOOL_TYPES(GDR_GPU_X)
#undef GDR_GPU_X
    }
}

/* x > y for two widened values of `type` (the signed types come first in the enum). */
static inline GDR_GPU_HD int gdr_gpu_int_greater(uint64_t x, uint64_t y, int type)
{
    if (type >= GDR_GPU_T_INT8 && type <= GDR_GPU_T_INT64)
        return (int64_t)x > (int64_t)y;
    return x > y;
}

static inline GDR_GPU_HD void gdr_gpu_acc_int(const gdr_gpu_acc_args_t *a, uint64_t i)
{
    uint64_t t = gdr_gpu_int_load(a->target, i, a->type);
    uint64_t o = gdr_gpu_int_load(a->origin, i, a->type);
    uint64_t v;
    switch (a->op) {
    case GDR_GPU_OP_SUM: v = t + o; break;
    case GDR_GPU_OP_PROD: v = t * o; break;
    case GDR_GPU_OP_MAX: v = gdr_gpu_int_greater(t, o, a->type) ? t : o; break;
    case GDR_GPU_OP_MIN: v = gdr_gpu_int_greater(o, t, a->type) ? t : o; break;
    case GDR_GPU_OP_LAND: v = t != 0 && o != 0; break;
    case GDR_GPU_OP_LOR: v = t != 0 || o != 0; break;
    case GDR_GPU_OP_LXOR: v = (t != 0) != (o != 0); break;
    case GDR_GPU_OP_BAND: v = t & o; break;
    case GDR_GPU_OP_BOR: v = t | o; break;
    case GDR_GPU_OP_BXOR: v = t ^ o; break;
    case GDR_GPU_OP_CSWAP:
        if (t != gdr_gpu_int_load(a->compare, i, a->type))
            return;
        v = o;
        break;
    default: return;
    }
    gdr_gpu_int_store(a->target, i, a->type, v);
}

/* Products that are never fused into a multiply-add (nvcc fuses by default, the host
 * compilers MPICH is built with on x86-64 do not), so that complex PROD rounds alike. */
#ifdef __CUDA_ARCH__
#define GDR_GPU_FMUL(x, y) __fmul_rn((x), (y))
#define GDR_GPU_DMUL(x, y) __dmul_rn((x), (y))
#else
#define GDR_GPU_FMUL(x, y) ((x) * (y))
#define GDR_GPU_DMUL(x, y) ((x) * (y))
#endif

/* The floating-point element functions, once per precision:
 * gdr_gpu_acc_real_f32/_f64 and gdr_gpu_acc_complex_f32/_f64. */
#define GDR_GPU_R float
#define GDR_GPU_C gdr_gpu_cfloat_t
#define GDR_GPU_R_FN(name) name##_f32
#define GDR_GPU_R_MUL GDR_GPU_FMUL
#include "gdr_gpu_acc_real.h"
#define GDR_GPU_R double
#define GDR_GPU_C gdr_gpu_cdouble_t
#define GDR_GPU_R_FN(name) name##_f64
#define GDR_GPU_R_MUL GDR_GPU_DMUL
#include "gdr_gpu_acc_real.h"

/* MAXLOC/MINLOC on one pair, with MPICH's comparisons (op_fns.c, MPIR_MAXLOC and
 * MPIR_MINLOC): take the origin's pair, else on equal values keep the smaller index. */
static inline GDR_GPU_HD void gdr_gpu_acc_loc(const gdr_gpu_acc_args_t *a, uint64_t i)
{
    int max = a->op == GDR_GPU_OP_MAXLOC;
    switch (a->type) {
#define GDR_GPU_X(e, T)                                                    \
    case e: {                                                              \
        T *t = (T *)a->target + i;                                         \
        const T *o = (const T *)a->origin + i;                             \
        if (max ? t->v < o->v : t->v > o->v)                               \
            *t = *o;                                                       \
        else if ((max ? t->v <= o->v : t->v >= o->v) && o->i < t->i)       \
            t->i = o->i;                                                   \
        return;                                                            \
    }
        GDR_GPU_PAIR_TYPES(GDR_GPU_X)
#undef GDR_GPU_X
    }
}

/* Element i: the result gets the old target, then the target gets op(target, origin). */
static inline GDR_GPU_HD void gdr_gpu_acc_element(const gdr_gpu_acc_args_t *a, uint64_t i)
{
    if (a->result)
        gdr_gpu_acc_copy(a->result, a->target, i, a->type);
    switch (a->op) {
    case GDR_GPU_OP_NO_OP:
        return;
    case GDR_GPU_OP_REPLACE:
        gdr_gpu_acc_copy(a->target, a->origin, i, a->type);
        return;
    case GDR_GPU_OP_MAXLOC:
    case GDR_GPU_OP_MINLOC:
        gdr_gpu_acc_loc(a, i);
        return;
    }
    switch (a->type) {
    case GDR_GPU_T_FLOAT: gdr_gpu_acc_real_f32(a, i); return;
    case GDR_GPU_T_DOUBLE: gdr_gpu_acc_real_f64(a, i); return;
    case GDR_GPU_T_FLOAT_COMPLEX: gdr_gpu_acc_complex_f32(a, i); return;
    case GDR_GPU_T_DOUBLE_COMPLEX: gdr_gpu_acc_complex_f64(a, i); return;
    default: gdr_gpu_acc_int(a, i); return;  /* the integer types and BOOL */
    }
}

/* ---- GDR_GPU_ACC_ATOMIC: one element, one atomic step ------------------------------ */

/* The types of at most 8 bytes: the ones an atomic step takes. */
#define GDR_GPU_WORD_TYPES(X)                                                     \
    GDR_GPU_INT_TYPES(X) GDR_GPU_BOOL_TYPES(X) GDR_GPU_REAL_TYPES(X)              \
    X(GDR_GPU_T_FLOAT_COMPLEX, gdr_gpu_cfloat_t)                                  \
    X(GDR_GPU_T_FLOAT_INT, gdr_gpu_float_int_t)                                   \
    X(GDR_GPU_T_2INT, gdr_gpu_2int_t)                                             \
    X(GDR_GPU_T_SHORT_INT, gdr_gpu_short_int_t)

/* Bytes of an element of `type` that an atomic step takes; 0 for the others. */
static inline GDR_GPU_HD unsigned gdr_gpu_word_type_size(int type)
{
    switch (type) {
#define GDR_GPU_X(e, T) case e: return (unsigned) sizeof(T);
        GDR_GPU_WORD_TYPES(GDR_GPU_X)
#undef GDR_GPU_X
    }
    return 0;
}

/* gdr_gpu_acc_atomic_ok's rule: every element at target is aligned to its size. */
static inline GDR_GPU_HD int gdr_gpu_atomic_capable(int type, uintptr_t target)
{
    unsigned size = gdr_gpu_word_type_size(type);
    return size != 0 && target % size == 0;
}

/* The word of `bytes` at p (the device's compare-and-swap takes 4 or 8 bytes, the host's
 * 1, 2, 4 or 8), read once. */
static inline GDR_GPU_HD uint64_t gdr_gpu_word_load(const void *p, unsigned bytes)
{
#ifdef __CUDA_ARCH__
    return bytes == 8 ? *(volatile const unsigned long long *) p : *(volatile const unsigned *) p;
#else
    switch (bytes) {
    case 1: return __atomic_load_n((const uint8_t *) p, __ATOMIC_RELAXED);
    case 2: return __atomic_load_n((const uint16_t *) p, __ATOMIC_RELAXED);
    case 4: return __atomic_load_n((const uint32_t *) p, __ATOMIC_RELAXED);
    default: return __atomic_load_n((const uint64_t *) p, __ATOMIC_RELAXED);
    }
#endif
}

/* Compare-and-swap of the word at p, system scope: 1 when it held *expect and now holds
 * desired; else 0, and *expect gets what it held. */
static inline GDR_GPU_HD int gdr_gpu_word_cas(void *p, unsigned bytes, uint64_t *expect,
                                              uint64_t desired)
{
#ifdef __CUDA_ARCH__
    uint64_t seen = bytes == 8
        ? (uint64_t) atomicCAS_system((unsigned long long *) p, (unsigned long long) *expect,
                                      (unsigned long long) desired)
        : (uint64_t) atomicCAS_system((unsigned *) p, (unsigned) *expect, (unsigned) desired);
    int swapped = seen == *expect;
    *expect = seen;
    return swapped;
#else
    switch (bytes) {
#define GDR_GPU_CAS(n, T)                                                                 \
    case n: {                                                                             \
        T e = (T) *expect;                                                                \
        int swapped = __atomic_compare_exchange_n((T *) p, &e, (T) desired, 0,            \
                                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
        *expect = e;                                                                      \
        return swapped;                                                                   \
    }
        GDR_GPU_CAS(1, uint8_t) GDR_GPU_CAS(2, uint16_t) GDR_GPU_CAS(4, uint32_t)
        GDR_GPU_CAS(8, uint64_t)
#undef GDR_GPU_CAS
    }
    return 0;
#endif
}

/* The operation on one element held in el (bytes of its type, any alignment), with e's
 * origin and compare pointing at that element's operands. */
static inline GDR_GPU_HD void gdr_gpu_acc_in_word(const gdr_gpu_acc_args_t *e, unsigned char *el)
{
    switch (e->type) {
#define GDR_GPU_X(t, T)                                  \
    case t: {                                            \
        T v;                                             \
        gdr_gpu_acc_args_t one = *e;                     \
        memcpy(&v, el, sizeof(v));                       \
        one.target = &v;                                 \
        gdr_gpu_acc_element(&one, 0);                    \
        memcpy(el, &v, sizeof(v));                       \
        return;                                          \
    }
        GDR_GPU_WORD_TYPES(GDR_GPU_X)
#undef GDR_GPU_X
    }
}

/* Element i as one atomic step: integer SUM of 4 and 8 bytes as a native fetch-add (the
 * same two's-complement wrap as the plain step), double SUM on the GPU as its native
 * atomic add, everything else as a compare-and-swap
 * loop on the aligned word holding the element, which computes the new value with the
 * plain element step on a copy (so the bits are the plain step's).  A step that changes
 * nothing is a read of the word and stores nothing.  The caller has checked
 * gdr_gpu_atomic_capable. */
static inline GDR_GPU_HD void gdr_gpu_acc_element_atomic(const gdr_gpu_acc_args_t *a, uint64_t i)
{
    unsigned size = gdr_gpu_word_type_size(a->type);
    uintptr_t at = (uintptr_t) a->target + i * size;
    int integer = gdr_gpu_type_class(a->type) == GDR_GPU_CLASS_INT;
    if (a->op == GDR_GPU_OP_SUM && integer && size >= 4) {
        uint64_t o = gdr_gpu_int_load(a->origin, i, a->type), was;
#ifdef __CUDA_ARCH__
        was = size == 8 ? (uint64_t) atomicAdd_system((unsigned long long *) at,
                                                      (unsigned long long) o)
            : (uint64_t) atomicAdd_system((unsigned *) at, (unsigned) o);
#else
        was = size == 8 ? __atomic_fetch_add((uint64_t *) at, o, __ATOMIC_SEQ_CST)
            : __atomic_fetch_add((uint32_t *) at, (uint32_t) o, __ATOMIC_SEQ_CST);
#endif
        if (a->result != NULL)
            gdr_gpu_int_store(a->result, i, a->type, was);
        return;
    }
#ifdef __CUDA_ARCH__
    if (a->op == GDR_GPU_OP_SUM && a->type == GDR_GPU_T_DOUBLE) {
        /* the GPU's double add is IEEE round-to-nearest with subnormals, the plain step's
         * bits (its float add on global memory flushes subnormals: floats stay below) */
        double was = atomicAdd_system((double *) at, ((const double *) a->origin)[i]);
        if (a->result != NULL)
            ((double *) a->result)[i] = was;
        return;
    }
    unsigned bytes = size == 8 ? 8 : 4;
#else
    unsigned bytes = size;
#endif
    void *word = (void *) (at & ~(uintptr_t) (bytes - 1));
    unsigned shift = (unsigned) (at & (bytes - 1));     /* little-endian: byte k is k */
    gdr_gpu_acc_args_t e = *a;
    e.origin = a->origin != NULL ? (const char *) a->origin + i * size : NULL;
    e.compare = a->compare != NULL ? (const char *) a->compare + i * size : NULL;
    e.result = NULL;
    e.count = 1;
    uint64_t was = gdr_gpu_word_load(word, bytes), next;
    unsigned char w[8];
    do {
        memcpy(w, &was, sizeof(w));
        gdr_gpu_acc_in_word(&e, w + shift);
        memcpy(&next, w, sizeof(next));
    } while (next != was && !gdr_gpu_word_cas(word, bytes, &was, next));
    if (a->result != NULL) {
        memcpy(w, &was, sizeof(w));
        memcpy((char *) a->result + i * size, w + shift, size);
    }
}

/* Applies the operation to elements first, first + stride, ... below a->count: calls
 * whose (first, stride) partition [0, count) apply each element exactly once.  Touches
 * nothing when stride is 0, gdr_gpu_acc_defined(op, type) is 0, or the op asks for
 * atomic steps (GDR_GPU_ACC_ATOMIC) that gdr_gpu_atomic_capable refuses. */
static inline GDR_GPU_HD void gdr_gpu_acc_range(const gdr_gpu_acc_args_t *a, uint64_t first,
                                                uint64_t stride)
{
    gdr_gpu_acc_args_t b = *a;          /* the op without its GDR_GPU_ACC_ATOMIC bit */
    b.op = a->op & GDR_GPU_ACC_OP_MASK;
    if (stride == 0 || !gdr_gpu_acc_defined(b.op, b.type))
        return;
    if (a->op & GDR_GPU_ACC_ATOMIC) {
        if (!gdr_gpu_atomic_capable(b.type, (uintptr_t) b.target))
            return;
        for (uint64_t i = first; i < b.count; i += stride)
            gdr_gpu_acc_element_atomic(&b, i);
        return;
    }
    for (uint64_t i = first; i < b.count; i += stride)
        gdr_gpu_acc_element(&b, i);
}

#endif /* GDR_GPU_ACC_BODY_H */
