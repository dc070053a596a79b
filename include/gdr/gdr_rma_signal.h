/* Signal words (DESIGN.md section 4): a 64-bit word in a window that put_signal updates
 * once its data is visible, and that streams and kernels wait on.  The update and the
 * comparison are written once as __host__ __device__ code (the proxy, same-node device
 * stores, the simulated GPU, tests).  The semantics match the MPI Forum's notified-RMA
 * proposal's counter use: SET stores the value, ADD adds it (wrapping), both atomically. */
#ifndef GDR_RMA_SIGNAL_H
#define GDR_RMA_SIGNAL_H

#include <stdint.h>

#ifdef __CUDACC__
#define GDR_SIGNAL_HD __host__ __device__
#else
#define GDR_SIGNAL_HD
#endif

enum { GDR_SIGNAL_SET = 0, GDR_SIGNAL_ADD = 1 };
enum { GDR_CMP_EQ = 0, GDR_CMP_NE, GDR_CMP_GT, GDR_CMP_GE, GDR_CMP_LT, GDR_CMP_LE };

static inline GDR_SIGNAL_HD int gdr_signal_op_valid(int op)
{
    return op == GDR_SIGNAL_SET || op == GDR_SIGNAL_ADD;
}

static inline GDR_SIGNAL_HD int gdr_signal_cmp_valid(int cmp)
{
    return cmp >= GDR_CMP_EQ && cmp <= GDR_CMP_LE;
}

/* Whether a wait for (cmp, value) is over when the word holds cur (unsigned compare);
 * an invalid cmp is never met (callers refuse it first). */
static inline GDR_SIGNAL_HD int gdr_signal_met(int cmp, uint64_t cur, uint64_t value)
{
    switch (cmp) {
        case GDR_CMP_EQ:
            return cur == value;
        case GDR_CMP_NE:
            return cur != value;
        case GDR_CMP_GT:
            return cur > value;
        case GDR_CMP_GE:
            return cur >= value;
        case GDR_CMP_LT:
            return cur < value;
        case GDR_CMP_LE:
            return cur <= value;
        default:
            return 0;
    }
}

/* Applies op to *word atomically; returns the word's previous value.  An invalid op
 * leaves the word alone. */
static inline GDR_SIGNAL_HD uint64_t gdr_signal_apply(int op, uint64_t *word, uint64_t value)
{
#if defined(__CUDA_ARCH__)
    if (op == GDR_SIGNAL_SET)
        return (uint64_t) atomicExch((unsigned long long *) word, (unsigned long long) value);
    if (op == GDR_SIGNAL_ADD)
        return (uint64_t) atomicAdd((unsigned long long *) word, (unsigned long long) value);
    return *(volatile uint64_t *) word;
#else
    if (op == GDR_SIGNAL_SET)
        return __atomic_exchange_n(word, value, __ATOMIC_ACQ_REL);
    if (op == GDR_SIGNAL_ADD)
        return __atomic_fetch_add(word, value, __ATOMIC_ACQ_REL);
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
#endif
}

#endif /* GDR_RMA_SIGNAL_H */
