/* The floating-point element functions of gdr_gpu_acc_body.h for one precision.  That
 * file includes this one twice (no include guard, on purpose), each time after defining
 *   GDR_GPU_R          the real type: float, double
 *   GDR_GPU_C          the complex type of that precision
 *   GDR_GPU_R_FN(f)    f's name in that precision: f##_f32, f##_f64
 *   GDR_GPU_R_MUL      a product never fused into a multiply-add
 * which this file undefines at its end. */

/* SUM, PROD, MAX, MIN on one value: MPICH's MPIR_LSUM, MPIR_LPROD, MPL_MAX, MPL_MIN. */
static inline GDR_GPU_HD void GDR_GPU_R_FN(gdr_gpu_acc_real)(const gdr_gpu_acc_args_t *a,
                                                             uint64_t i)
{
    GDR_GPU_R *tp = (GDR_GPU_R *)a->target + i;
    GDR_GPU_R t = *tp, o = ((const GDR_GPU_R *)a->origin)[i];
    switch (a->op) {
    case GDR_GPU_OP_SUM: *tp = t + o; return;
    case GDR_GPU_OP_PROD: *tp = t * o; return;
    case GDR_GPU_OP_MAX: *tp = t > o ? t : o; return;
    case GDR_GPU_OP_MIN: *tp = t < o ? t : o; return;
    }
}

/* An infinite *v becomes +-1 and a finite or NaN one +-0, keeping its sign (C11 Annex G's
 * "box the infinity": copysign(isinf(v) ? 1 : 0, v)). */
static inline GDR_GPU_HD void GDR_GPU_R_FN(gdr_gpu_box_inf)(GDR_GPU_R *v)
{
    GDR_GPU_R one_or_zero = isinf(*v) ? 1 : 0;
    *v = signbit(*v) ? -one_or_zero : one_or_zero;
}

/* A NaN *v becomes +-0, keeping its sign bit. */
static inline GDR_GPU_HD void GDR_GPU_R_FN(gdr_gpu_zero_nan)(GDR_GPU_R *v)
{
    if (isnan(*v))
        *v = signbit(*v) ? -(GDR_GPU_R)0 : (GDR_GPU_R)0;
}

/* Where the factor x + yi is infinite: boxes x and y and turns NaNs of the other factor
 * u + vi into zeros; returns whether it did. */
static inline GDR_GPU_HD int GDR_GPU_R_FN(gdr_gpu_box_factor)(GDR_GPU_R *x, GDR_GPU_R *y,
                                                              GDR_GPU_R *u, GDR_GPU_R *v)
{
    if (!isinf(*x) && !isinf(*y))
        return 0;
    GDR_GPU_R_FN(gdr_gpu_box_inf)(x);
    GDR_GPU_R_FN(gdr_gpu_box_inf)(y);
    GDR_GPU_R_FN(gdr_gpu_zero_nan)(u);
    GDR_GPU_R_FN(gdr_gpu_zero_nan)(v);
    return 1;
}

/* z *= w, complex values as (re, im): what C's complex multiply computes, which is what
 * MPICH's MPIR_PROD applies to C's native complex types (its configure defines
 * MPIR_COMPLEX32_CTYPE as float _Complex wherever the compiler has it, and op_fns.c then
 * computes "a * b").  GCC and Clang compute the schoolbook product and, where both of its
 * parts are NaN, call __mulsc3/__muldc3 (libgcc, compiler-rt), which recover infinities
 * with the algorithm of C11 G.5.1's example; so does this, in the same steps.  The
 * schoolbook part is MPICH's own formula for its struct complex types. */
static inline GDR_GPU_HD void GDR_GPU_R_FN(gdr_gpu_cmul)(GDR_GPU_R z[2], const GDR_GPU_R w[2])
{
    GDR_GPU_R a = z[0], b = z[1], c = w[0], d = w[1];
    GDR_GPU_R ac = GDR_GPU_R_MUL(a, c), bd = GDR_GPU_R_MUL(b, d);
    GDR_GPU_R ad = GDR_GPU_R_MUL(a, d), bc = GDR_GPU_R_MUL(b, c);
    GDR_GPU_R x = ac - bd, y = ad + bc;
    if (isnan(x) && isnan(y)) {
        int recalc = GDR_GPU_R_FN(gdr_gpu_box_factor)(&a, &b, &c, &d);    /* z infinite */
        recalc |= GDR_GPU_R_FN(gdr_gpu_box_factor)(&c, &d, &a, &b);       /* w infinite */
        if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {
            /* a product overflowed: recover its infinity, taking NaN parts as 0 */
            GDR_GPU_R_FN(gdr_gpu_zero_nan)(&a);
            GDR_GPU_R_FN(gdr_gpu_zero_nan)(&b);
            GDR_GPU_R_FN(gdr_gpu_zero_nan)(&c);
            GDR_GPU_R_FN(gdr_gpu_zero_nan)(&d);
            recalc = 1;
        }
        if (recalc) {
            x = (GDR_GPU_R)INFINITY * (GDR_GPU_R_MUL(a, c) - GDR_GPU_R_MUL(b, d));
            y = (GDR_GPU_R)INFINITY * (GDR_GPU_R_MUL(a, d) + GDR_GPU_R_MUL(b, c));
        }
    }
    z[0] = x;
    z[1] = y;
}

/* SUM and PROD on one complex value. */
static inline GDR_GPU_HD void GDR_GPU_R_FN(gdr_gpu_acc_complex)(const gdr_gpu_acc_args_t *a,
                                                                uint64_t i)
{
    GDR_GPU_C *tp = (GDR_GPU_C *)a->target + i;
    GDR_GPU_R z[2], w[2];
    GDR_GPU_CPARTS(z, *tp);
    GDR_GPU_CPARTS(w, ((const GDR_GPU_C *)a->origin)[i]);
    if (a->op == GDR_GPU_OP_PROD) {
        GDR_GPU_R_FN(gdr_gpu_cmul)(z, w);
    } else {
        z[0] = z[0] + w[0];
        z[1] = z[1] + w[1];
    }
    GDR_GPU_CSET(*tp, z);
}

#undef GDR_GPU_R
#undef GDR_GPU_C
#undef GDR_GPU_R_FN
#undef GDR_GPU_R_MUL
