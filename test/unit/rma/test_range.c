/* Target range checks: every byte a peer may touch lies inside the window. */
#include <stdint.h>
#include "gdr_unit.h"
#include "rma/gdr_rma_range.h"

typedef struct {
    const char *what;
    int64_t disp;
    uint64_t unit, bytes, win;
    gdr_rma_range_status_t expect;
    uint64_t offset;
} range_case_t;

static const range_case_t cases[] = {
    {"first byte", 0, 1, 1, 16, GDR_RMA_RANGE_OK, 0},
    {"whole window", 0, 4, 64, 64, GDR_RMA_RANGE_OK, 0},
    {"last element", 15, 4, 4, 64, GDR_RMA_RANGE_OK, 60},
    {"one byte past the end", 15, 4, 5, 64, GDR_RMA_RANGE_OUTSIDE, 0},
    {"starts at the end", 16, 4, 4, 64, GDR_RMA_RANGE_OUTSIDE, 0},
    {"zero bytes at the end is allowed", 16, 4, 0, 64, GDR_RMA_RANGE_OK, 64},
    {"zero bytes past the end", 17, 4, 0, 64, GDR_RMA_RANGE_OUTSIDE, 0},
    {"negative displacement", -1, 4, 4, 64, GDR_RMA_RANGE_NEGATIVE_DISP, 0},
    {"disp*unit overflows", INT64_MAX, 16, 1, UINT64_MAX, GDR_RMA_RANGE_OVERFLOW, 0},
    {"offset+bytes overflows", 1, UINT64_MAX, 2, UINT64_MAX, GDR_RMA_RANGE_OVERFLOW, 0},
    {"empty window rejects any byte", 0, 1, 1, 0, GDR_RMA_RANGE_OUTSIDE, 0},
};

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const range_case_t *c = &cases[i];
        uint64_t off = 12345;
        gdr_rma_range_status_t st = gdr_rma_range_check(c->disp, c->unit, c->bytes, c->win, &off);
        GDR_CHECK(st == c->expect, "range: %s -> %s", c->what, gdr_rma_range_str(st));
        if (c->expect == GDR_RMA_RANGE_OK)
            GDR_CHECK(off == c->offset, "range: %s: offset %llu", c->what,
                      (unsigned long long) off);
        else
            GDR_CHECK(off == 12345, "range: %s: offset untouched on refusal", c->what);
    }
    return gdr_unit_finish();
}
