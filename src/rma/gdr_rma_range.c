#include "gdr_rma_range.h"

gdr_rma_range_status_t gdr_rma_range_check_span(int64_t disp, uint64_t disp_unit, int64_t lb,
                                                uint64_t span, uint64_t win_size,
                                                uint64_t *offset)
{
    int64_t base, start;

    if (disp < 0)
        return GDR_RMA_RANGE_NEGATIVE_DISP;
    if (disp_unit > INT64_MAX || __builtin_mul_overflow(disp, (int64_t) disp_unit, &base)
        || __builtin_add_overflow(base, lb, &start))
        return GDR_RMA_RANGE_OVERFLOW;
    if (start < 0)
        return GDR_RMA_RANGE_OUTSIDE;   /* a negative lower bound reaches below the base */
    return gdr_rma_range_check(start, 1, span, win_size, offset);
}

const char *gdr_rma_range_str(gdr_rma_range_status_t status)
{
    switch (status) {
        case GDR_RMA_RANGE_OK:
            return "inside the window";
        case GDR_RMA_RANGE_NEGATIVE_DISP:
            return "negative target displacement";
        case GDR_RMA_RANGE_OVERFLOW:
            return "target displacement times disp_unit overflows";
        case GDR_RMA_RANGE_OUTSIDE:
            return "access ends past the target window";
    }
    return "unknown range status";
}
