/* Is a remote access inside the target's window?  Every path that touches target
 * memory on behalf of a peer (AM accumulate, get, put) asks this first. */
#ifndef GDR_RMA_RANGE_H
#define GDR_RMA_RANGE_H

#include <stddef.h>
#include <stdint.h>

typedef enum gdr_rma_range_status {
    GDR_RMA_RANGE_OK = 0,
    GDR_RMA_RANGE_NEGATIVE_DISP,    /* displacement < 0 */
    GDR_RMA_RANGE_OVERFLOW,         /* disp * unit + bytes does not fit in 64 bits */
    GDR_RMA_RANGE_OUTSIDE           /* ends past the window */
} gdr_rma_range_status_t;

/* Checks [disp * disp_unit, disp * disp_unit + bytes) against [0, win_size).
 * On OK, *offset is the byte offset from the window base.  Pure; thread safe.  Inline:
 * every small operation asks it (MPICH's range check, the small protocols). */
static inline gdr_rma_range_status_t gdr_rma_range_check(int64_t disp, uint64_t disp_unit,
                                                         uint64_t bytes, uint64_t win_size,
                                                         uint64_t *offset)
{
    uint64_t start, end;

    if (disp < 0)
        return GDR_RMA_RANGE_NEGATIVE_DISP;
    if (__builtin_mul_overflow((uint64_t) disp, disp_unit, &start))
        return GDR_RMA_RANGE_OVERFLOW;
    if (start <= win_size && bytes <= win_size - start) {
        *offset = start;
        return GDR_RMA_RANGE_OK;
    }
    return __builtin_add_overflow(start, bytes, &end) ? GDR_RMA_RANGE_OVERFLOW
        : GDR_RMA_RANGE_OUTSIDE;
}

/* The same for a datatype footprint: the access touches [disp * disp_unit + lb,
 * disp * disp_unit + lb + span), where lb (true lower bound, may be negative) and
 * span come from the target datatype and count. */
gdr_rma_range_status_t gdr_rma_range_check_span(int64_t disp, uint64_t disp_unit, int64_t lb,
                                                uint64_t span, uint64_t win_size,
                                                uint64_t *offset);

/* A short sentence for a status, for error messages. */
const char *gdr_rma_range_str(gdr_rma_range_status_t status);

#endif /* GDR_RMA_RANGE_H */
