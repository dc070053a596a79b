/* What an origin believes of a target's window before it touches it: the range check
 * against the window card (size, disp_unit: from the card exchange) and, on dynamic
 * windows, the region a target describes when asked (gdr_rma_regions.h).  The input is
 * a list of steps:
 *   0  gdr_rma_range_check_span(disp, unit, lb, span, size) against exact 128-bit sums
 *   1  gdr_rma_win_check_range on this rank's own dynamic window (disp + lb an address:
 *      only an overflow is refused there; attachments are gdr_rma_regions_lookup's)
 *   2  gdr_rma_regions_lookup at the other rank, which answers a query with the reply
 *      the input gives (found, base, size): a key may come back only for a range inside
 *      the region whose reply carried that key
 *   3  gdr_rma_regions_forget
 * Invariants: the above, and no undefined behaviour (UBSan) whatever the numbers. */
#include <string.h>
#include "gdr_fuzz.h"
#include "rma/gdr_rma_win.h"

#define REPLIES_MAX 4096

typedef struct fuzz_range {
    gdr_rma_region_reply_t next;        /* the target's answer to the next query */
    int queries;
    gdr_rma_region_reply_t given[REPLIES_MAX];  /* by rkey - 1 */
    uint32_t n_given;
    uint32_t next_rkey;
} fuzz_range_t;

static int fake_reg(void *ctx, void *addr, size_t len, unsigned access, gdr_rma_mr_t *out,
                    char *why, size_t why_len)
{
    fuzz_range_t *f = ctx;
    (void) access, (void) why, (void) why_len;
    *out = (gdr_rma_mr_t) {.handle = f,.addr = (uint64_t) (uintptr_t) addr,.len = len,
        .rkey = 0x80000000u | f->next_rkey++ };
    return 0;
}

static void fake_dereg(void *ctx, gdr_rma_mr_t *mr)
{
    (void) ctx;
    mr->handle = NULL;
}

static int fake_query(void *ctx, void *host_win, int target, uint64_t addr,
                      gdr_rma_region_reply_t *out)
{
    fuzz_range_t *f = ctx;
    (void) host_win, (void) target, (void) addr;
    f->queries++;
    *out = f->next;
    return 0;
}

static void step_span(const uint8_t **d, size_t *n)
{
    int64_t disp = (int64_t) fuzz_take(d, n, 8), lb = (int64_t) fuzz_take(d, n, 8);
    uint64_t unit = fuzz_take(d, n, 8), span = fuzz_take(d, n, 8), size = fuzz_take(d, n, 8);
    uint64_t offset = 0xdeadbeef;
    gdr_rma_range_status_t st = gdr_rma_range_check_span(disp, unit, lb, span, size, &offset);
    __int128 start = (__int128) disp * (__int128) unit + lb, end = start + span;

    if (st != GDR_RMA_RANGE_OK) {
        FUZZ_REQUIRE(disp < 0 || unit > INT64_MAX || start < 0 || end > (__int128) size
                     || (__int128) disp * unit > INT64_MAX || start > INT64_MAX
                     || (span == 0 && start > (__int128) size),
                     "refused (%s) an access inside the window: disp %lld unit %llu lb %lld "
                     "span %llu size %llu", gdr_rma_range_str(st), (long long) disp,
                     (unsigned long long) unit, (long long) lb, (unsigned long long) span,
                     (unsigned long long) size);
        return;
    }
    FUZZ_REQUIRE(disp >= 0 && start >= 0 && end <= (__int128) size && offset == (uint64_t) start,
                 "accepted an access outside the window: disp %lld unit %llu lb %lld span %llu "
                 "size %llu", (long long) disp, (unsigned long long) unit, (long long) lb,
                 (unsigned long long) span, (unsigned long long) size);
}

static void step_lookup(fuzz_range_t *f, gdr_rma_win_t *w, const uint8_t **d, size_t *n)
{
    f->next = (gdr_rma_region_reply_t) {.found = (int) (fuzz_take(d, n, 1) & 1),
        .base = fuzz_take(d, n, 8),.size = fuzz_take(d, n, 8),.device = 0 };
    if (f->n_given < REPLIES_MAX) {
        f->next.rkey = ++f->n_given;
        f->given[f->next.rkey - 1] = f->next;
    }
    uint64_t addr = fuzz_take(d, n, 8), len = fuzz_take(d, n, 8);
    uint32_t rkey = 0xffffffffu;
    int not_attached = -1;
    int rc = gdr_rma_regions_lookup(&w->regions, w->eng, NULL, w->self, 1, addr, len, &rkey,
                                    &not_attached);
    FUZZ_REQUIRE(rc == GDR_RMA_OK || rc == GDR_RMA_ERROR, "lookup returned %d", rc);
    if (rc != GDR_RMA_OK) {
        FUZZ_REQUIRE(rkey == 0 && not_attached == 1, "a refused lookup: key %u", rkey);
        return;
    }
    if (rkey == 0)
        return;
    FUZZ_REQUIRE(rkey <= f->n_given, "key %u was never given", rkey);
    const gdr_rma_region_reply_t *r = &f->given[rkey - 1];
    FUZZ_REQUIRE(r->found && addr >= r->base && addr - r->base <= r->size
                 && len <= r->size - (addr - r->base),
                 "key %u for [%#llx, +%llu), outside the region [%#llx, +%llu) it was given for",
                 rkey, (unsigned long long) addr, (unsigned long long) len,
                 (unsigned long long) r->base, (unsigned long long) r->size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_range_t f;
    static char attached[2][64];
    gdr_rma_engine_t eng = {.net = {.ctx = &f,.reg = fake_reg,.dereg = fake_dereg },
        .host = {.ctx = &f,.query_region = fake_query }
    };
    gdr_rma_win_t w;
    char why[128];

    memset(&f, 0, sizeof(f));
    f.next_rkey = 1;
    FUZZ_REQUIRE(gdr_rma_win_init(&w, &eng, NULL, 2, 0, 1, 1) == 0, "window init");
    for (int i = 0; i < 2; i++)
        FUZZ_REQUIRE(gdr_rma_regions_attach(&w.regions, &eng, attached[i], sizeof(attached[i]),
                                            GDR_RMA_REMOTE_READ, 0, why, sizeof(why)) == 0,
                     "attach");
    while (size > 0) {
        switch (fuzz_take(&data, &size, 1) % 4) {
        case 0:
            step_span(&data, &size);
            break;
        case 1:{
                int64_t disp = (int64_t) fuzz_take(&data, &size, 8);
                int64_t lb = (int64_t) fuzz_take(&data, &size, 8);
                gdr_rma_range_status_t st = gdr_rma_win_check_range(&w, 0, disp, lb,
                                                                    fuzz_take(&data, &size, 8));
                FUZZ_REQUIRE(st == GDR_RMA_RANGE_OK || st == GDR_RMA_RANGE_OUTSIDE
                             || st == GDR_RMA_RANGE_OVERFLOW, "status %d", (int) st);
                break;
            }
        case 2:
            step_lookup(&f, &w, &data, &size);
            break;
        case 3:
            gdr_rma_regions_forget(&w.regions, (int) (fuzz_take(&data, &size, 1) % 3) - 1);
            break;
        }
    }
    gdr_rma_win_free(&w);
    return 0;
}
