/* gdr_gpu_acc_body.h has two branches: C11 (float _Complex) and CUDA C++ (a struct of two
 * reals, __host__ __device__).  Without a GPU the CUDA one would never run, so this
 * program, built by nvcc as host code, runs it against the C branch (gdr_gpu_acc_apply in
 * libgdr_layers.a, built by the C compiler) on pseudo-random values mixed with zeros of
 * both signs, infinities, NaN, the largest and the smallest values, for every valid
 * (op, type).  Built and run by `make unit` when configure found nvcc. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "gdr_unit.h"
#include "gdr/gpu/gdr_gpu_acc_body.h"
}

/* An element's members: offset, size, and whether it is a floating-point value. */
typedef struct field { size_t off, size; int real; } field_t;
typedef struct layout { field_t f[2]; int nf; } layout_t;

static layout_t layout_of(int type)
{
    size_t sz = gdr_gpu_type_size(type);
    switch (type) {
    case GDR_GPU_T_FLOAT: case GDR_GPU_T_DOUBLE: return {{{0, sz, 1}}, 1};
    case GDR_GPU_T_FLOAT_COMPLEX: case GDR_GPU_T_DOUBLE_COMPLEX:
        return {{{0, sz / 2, 1}, {sz / 2, sz / 2, 1}}, 2};
    case GDR_GPU_T_FLOAT_INT: return {{{0, 4, 1}, {4, 4, 0}}, 2};
    case GDR_GPU_T_DOUBLE_INT: return {{{0, 8, 1}, {8, 4, 0}}, 2};
    case GDR_GPU_T_LONG_INT: return {{{0, 8, 0}, {8, 4, 0}}, 2};
    case GDR_GPU_T_2INT: return {{{0, 4, 0}, {4, 4, 0}}, 2};
    case GDR_GPU_T_SHORT_INT: return {{{0, 2, 0}, {4, 4, 0}}, 2};
    default: return {{{0, sz, 0}}, 1};
    }
}

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void fill_field(unsigned char *p, const field_t *f, int type)
{
    static const float fs[] = {0.0f, -0.0f, 1.0f, -2.0f, INFINITY, -INFINITY, NAN, FLT_MAX,
                               3.0f, FLT_TRUE_MIN};
    static const double ds[] = {0.0, -0.0, 1.0, -2.0, INFINITY, -INFINITY, NAN, DBL_MAX,
                                3.0, DBL_TRUE_MIN};
    uint64_t r = rng();
    if (type == GDR_GPU_T_BOOL)
        p[f->off] = r & 1;
    else if (f->real && r % 3 && f->size == 4)
        memcpy(p + f->off, &fs[(r >> 8) % 10], 4);
    else if (f->real && r % 3)
        memcpy(p + f->off, &ds[(r >> 8) % 10], 8);
    else
        for (size_t b = 0; b < f->size; b++)
            p[f->off + b] = (unsigned char)(rng() >> 24);
}

/* Members equal, any NaN equal to any NaN: NaN payloads and signs are no part of the
 * contract (the compilers pick different operands to propagate them from). */
static int same_field(const unsigned char *x, const unsigned char *y, const field_t *f)
{
    if (f->real && f->size == 4) {
        float a, b;
        memcpy(&a, x + f->off, 4), memcpy(&b, y + f->off, 4);
        if (isnan(a) && isnan(b))
            return 1;
    } else if (f->real) {
        double a, b;
        memcpy(&a, x + f->off, 8), memcpy(&b, y + f->off, 8);
        if (isnan(a) && isnan(b))
            return 1;
    }
    return memcmp(x + f->off, y + f->off, f->size) == 0;
}

static const char *const type_names[GDR_GPU_T_COUNT] = {
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float",
    "double", "bool", "float complex", "double complex", "float_int", "double_int",
    "long_int", "2int", "short_int",
};

int main(void)
{
    const uint64_t n = 20000;
    for (int type = 0; type < GDR_GPU_T_COUNT; type++) {
        size_t sz = gdr_gpu_type_size(type);
        layout_t lay = layout_of(type);
        unsigned char *init = (unsigned char *)malloc(n * sz), *origin = (unsigned char *)malloc(n * sz);
        unsigned char *compare = (unsigned char *)malloc(n * sz);
        unsigned char *c_t = (unsigned char *)malloc(n * sz), *c_r = (unsigned char *)malloc(n * sz);
        unsigned char *cu_t = (unsigned char *)malloc(n * sz), *cu_r = (unsigned char *)malloc(n * sz);
        for (uint64_t k = 0; k < n; k++)
            for (int f = 0; f < lay.nf; f++) {
                fill_field(init + k * sz, &lay.f[f], type);
                fill_field(origin + k * sz, &lay.f[f], type);
            }
        for (uint64_t k = 0; k < n; k++)     /* CSWAP: every other element matches */
            memcpy(compare + k * sz, (k % 2 ? origin : init) + k * sz, sz);
        int ops = 0, differ = 0;
        for (int op = 0; op < GDR_GPU_OP_COUNT; op++) {
            if (!gdr_gpu_acc_valid(op, type))
                continue;
            memcpy(c_t, init, n * sz), memcpy(cu_t, init, n * sz);
            gdr_gpu_acc_args_t a = {c_t, origin, c_r, compare, n, op, type};
            gdr_gpu_acc_apply(&a);                  /* the C branch */
            a.target = cu_t, a.result = cu_r;
            gdr_gpu_acc_range(&a, 0, 1);            /* the CUDA branch, on the host */
            int same = 1;
            for (uint64_t k = 0; k < n; k++)
                for (int f = 0; f < lay.nf; f++)
                    same &= same_field(c_t + k * sz, cu_t + k * sz, &lay.f[f])
                        && same_field(c_r + k * sz, cu_r + k * sz, &lay.f[f]);
            ops++, differ += !same;
        }
        GDR_CHECK(differ == 0, "%s: the CUDA branch (nvcc, host pass) gives the C branch's"
                  " targets and results for its %d ops over %llu elements (%d differ)",
                  type_names[type], ops, (unsigned long long)n, differ);
        free(init), free(origin), free(compare), free(c_t), free(c_r), free(cu_t), free(cu_r);
    }
    return gdr_unit_finish();
}
