/* The staging slot pools (src/rma/gdr_rma_stage.h) over a fake transport, which counts
 * registrations, and a fake device whose "pinned" memory is ordinary host memory. */
#include <stdlib.h>
#include <string.h>
#include "gdr_unit.h"
#include "rma/gdr_rma_stage.h"

static struct {
    int regs, deregs, pins, unpins, allocs, frees;
    unsigned access;
    uint64_t reg_addr, reg_len;
    int fail_reg, fail_alloc;
    void *block;
} fk;

static int f_reg(void *c, void *addr, size_t len, unsigned access, gdr_rma_mr_t *out, char *why,
                 size_t why_len)
{
    (void) c;
    if (fk.fail_reg) {
        snprintf(why, why_len, "the fake NIC said no");
        return GDR_RMA_ERROR;
    }
    fk.regs++;
    fk.access = access;
    fk.reg_addr = (uint64_t) (uintptr_t) addr;
    fk.reg_len = len;
    *out = (gdr_rma_mr_t) {.handle = &fk,.addr = fk.reg_addr,.len = len,.rkey = 0x77 };
    return 0;
}

static void f_dereg(void *c, gdr_rma_mr_t *mr)
{
    (void) c;
    fk.deregs++;
    memset(mr, 0, sizeof(*mr));
}

static int f_pin(void *c, const void *addr, size_t len, uint64_t device_id, void **pin)
{
    (void) c;
    (void) addr;
    (void) len;
    (void) device_id;
    fk.pins++;
    *pin = &fk.pins;
    return GDR_RMA_OK;
}

static void f_unpin(void *c, void *pin)
{
    (void) c;
    fk.unpins += pin == &fk.pins;
}

static const char *f_error(const void *c)
{
    (void) c;
    return "fake transport";
}

static int d_host_alloc(void *c, size_t n, void **p)
{
    (void) c;
    if (fk.fail_alloc)
        return GDR_RMA_NOMEM;
    fk.allocs++;
    *p = fk.block = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    return *p != NULL ? GDR_RMA_OK : GDR_RMA_NOMEM;
}

static int d_host_free(void *c, void *p)
{
    (void) c;
    fk.frees += p == fk.block;
    free(p);
    return GDR_RMA_OK;
}

static const char *d_error(const void *c)
{
    (void) c;
    return "the fake device is out of pinned memory";
}

static const gdr_rma_transport_t net = {
    .pin = f_pin,.unpin = f_unpin,.reg = f_reg,.dereg = f_dereg,.error = f_error
};
static const gdr_rma_device_t dev = {
    .host_alloc = d_host_alloc,.host_free = d_host_free,.error = d_error
};

static int by_addr(const void *a, const void *b)
{
    const gdr_rma_slot_t *const *x = a, *const *y = b;
    return (*x)->addr < (*y)->addr ? -1 : (*x)->addr > (*y)->addr;
}

/* Init registers one block once; 3 slots of 1000 (1024) bytes per pool. */
static void test_layout(void)
{
    gdr_rma_stage_t st;
    gdr_rma_slot_t *s[9];
    memset(&fk, 0, sizeof(fk));
    GDR_CHECK(gdr_rma_stage_init(&st, &net, &dev, 1000, 3) == GDR_RMA_OK, "init: 3 slots of"
              " 1000 bytes per pool (%s)", st.error);
    GDR_CHECK(st.slot_bytes == 1024, "slot size rounded up to a multiple of 64 (%zu)",
              st.slot_bytes);
    GDR_CHECK(fk.allocs == 1 && fk.regs == 1 && fk.pins == 1, "one block, registered once"
              " and pinned once");
    GDR_CHECK(fk.access == (GDR_RMA_REMOTE_READ | GDR_RMA_REMOTE_WRITE),
              "registered for remote read and write (access %#x)", fk.access);
    GDR_CHECK(fk.reg_addr == (uintptr_t) fk.block && fk.reg_len == 9 * 1024,
              "the registration covers the whole block");
    for (int i = 0; i < 9; i++)
        GDR_CHECK(gdr_rma_stage_take(&st, (gdr_rma_stage_pool_t) (i / 3),
                                     &s[i]) == GDR_RMA_OK, "take slot %d", i);
    int inside = 1, aligned = 1, keys = 1, pools = 1, ids = 0;
    for (int i = 0; i < 9; i++) {
        uintptr_t a = (uintptr_t) s[i]->addr;
        inside &= a >= fk.reg_addr && a + st.slot_bytes <= fk.reg_addr + fk.reg_len;
        aligned &= a % 64 == 0;
        keys &= s[i]->rkey == 0x77 && s[i]->raddr == a && s[i]->pin == &fk.pins;
        pools &= s[i]->pool == ((gdr_rma_stage_pool_t) (i / 3));
        ids |= 1 << s[i]->index;
        pools &= gdr_rma_stage_slot(&st, s[i]->index) == s[i];
    }
    GDR_CHECK(inside, "every slot lies inside the registered block");
    GDR_CHECK(aligned, "every slot is aligned to 64 bytes");
    GDR_CHECK(keys, "every slot carries the block's rkey, its own address and the pin");
    GDR_CHECK(pools, "slots name their pool, and their index finds them again");
    GDR_CHECK(ids == 0x1ff, "indices 0..8, each once (%#x)", ids);
    qsort(s, 9, sizeof(s[0]), by_addr);
    int disjoint = 1;
    for (int i = 0; i + 1 < 9; i++)
        disjoint &= (char *) s[i]->addr + st.slot_bytes <= (char *) s[i + 1]->addr;
    GDR_CHECK(disjoint, "slots do not overlap");
    GDR_CHECK(gdr_rma_stage_slot(&st, 9) == NULL, "index 9 is no slot");
    for (int i = 0; i < 9; i++)
        gdr_rma_stage_give(&st, s[i]);
    gdr_rma_stage_free(&st);
    GDR_CHECK(fk.deregs == 1 && fk.unpins == 1 && fk.frees == 1,
              "free deregisters, unpins and frees the block once each");
}

/* Take until BUSY; the other pool is untouched; give back and take again. */
static void test_take_give(void)
{
    gdr_rma_stage_t st;
    gdr_rma_slot_t *send[2], *recv[2], *s;
    memset(&fk, 0, sizeof(fk));
    GDR_CHECK(gdr_rma_stage_init(&st, &net, &dev, 4096, 2) == GDR_RMA_OK, "init: 2 slots per"
              " pool");
    GDR_CHECK(gdr_rma_stage_take(&st, GDR_RMA_STAGE_SEND, &send[0]) == GDR_RMA_OK
              && gdr_rma_stage_take(&st, GDR_RMA_STAGE_SEND, &send[1]) == GDR_RMA_OK
              && send[0] != send[1], "two send slots");
    GDR_CHECK(gdr_rma_stage_take(&st, GDR_RMA_STAGE_SEND, &s) == GDR_RMA_BUSY && s == NULL,
              "a third send slot: BUSY");
    GDR_CHECK(gdr_rma_stage_take(&st, GDR_RMA_STAGE_SEND, &s) == GDR_RMA_BUSY,
              "still BUSY");
    GDR_CHECK(gdr_rma_stage_take(&st, GDR_RMA_STAGE_RECV, &recv[0]) == GDR_RMA_OK
              && gdr_rma_stage_take(&st, GDR_RMA_STAGE_RECV, &recv[1]) == GDR_RMA_OK,
              "with the send pool exhausted, both receive slots are free");
    GDR_CHECK(gdr_rma_stage_take(&st, GDR_RMA_STAGE_RECV, &s) == GDR_RMA_BUSY,
              "a third receive slot: BUSY");
    GDR_CHECK(gdr_rma_stage_give(&st, send[1]) == GDR_RMA_OK, "give one send slot back");
    GDR_CHECK(gdr_rma_stage_take(&st, GDR_RMA_STAGE_RECV, &s) == GDR_RMA_BUSY,
              "a send slot given back does not free a receive slot");
    GDR_CHECK(gdr_rma_stage_take(&st, GDR_RMA_STAGE_SEND, &s) == GDR_RMA_OK && s == send[1],
              "take again: the slot given back");
    GDR_CHECK(gdr_rma_stage_give(&st, recv[0]) == GDR_RMA_OK
              && gdr_rma_stage_give(&st, recv[0]) == GDR_RMA_ERROR,
              "giving a slot back twice is refused");
    gdr_rma_slot_t foreign = *recv[1];
    GDR_CHECK(gdr_rma_stage_give(&st, &foreign) == GDR_RMA_ERROR
              && gdr_rma_stage_give(&st, NULL) == GDR_RMA_ERROR,
              "a slot not of this stage is refused");

    const gdr_rma_stage_counts_t *cs = &st.counts[GDR_RMA_STAGE_SEND],
        *cr = &st.counts[GDR_RMA_STAGE_RECV];
    GDR_CHECK(cs->taken == 3 && cs->busy == 2 && cs->in_use == 2 && cs->high_water == 2,
              "send counters: 3 taken, 2 refused, 2 out, high water 2 (%llu %llu %u %u)",
              cs->taken, cs->busy, cs->in_use, cs->high_water);
    GDR_CHECK(cr->taken == 2 && cr->busy == 2 && cr->in_use == 1 && cr->high_water == 2,
              "receive counters: 2 taken, 2 refused, 1 out, high water 2 (%llu %llu %u %u)",
              cr->taken, cr->busy, cr->in_use, cr->high_water);
    gdr_rma_stage_give(&st, send[0]);
    gdr_rma_stage_give(&st, send[1]);
    gdr_rma_stage_give(&st, recv[1]);
    GDR_CHECK(cs->in_use == 0 && cr->in_use == 0 && cs->high_water == 2,
              "all back: none out, the high water mark stays");
    gdr_rma_stage_free(&st);
    GDR_CHECK(fk.deregs == 1 && fk.frees == 1, "free");
}

static void test_failures(void)
{
    gdr_rma_stage_t st;
    memset(&fk, 0, sizeof(fk));
    GDR_CHECK(gdr_rma_stage_init(&st, &net, &dev, 0, 4) == GDR_RMA_ERROR
              && strstr(st.error, "must be positive") && fk.allocs == 0,
              "0-byte slots are refused (%s)", st.error);
    GDR_CHECK(gdr_rma_stage_init(&st, &net, &dev, 64, 0) == GDR_RMA_ERROR, "0 slots refused");
    GDR_CHECK(gdr_rma_stage_init(&st, &net, &dev, SIZE_MAX / 4, 8) == GDR_RMA_ERROR
              && fk.allocs == 0, "a block larger than memory is refused");
    fk.fail_alloc = 1;
    GDR_CHECK(gdr_rma_stage_init(&st, &net, &dev, 64, 4) == GDR_RMA_NOMEM
              && strstr(st.error, "out of pinned memory"),
              "the device's failure is NOMEM with its sentence (%s)", st.error);
    fk.fail_alloc = 0;
    fk.fail_reg = 1;
    GDR_CHECK(gdr_rma_stage_init(&st, &net, &dev, 64, 4) == GDR_RMA_ERROR
              && strstr(st.error, "the fake NIC said no") && fk.allocs == 1 && fk.frees == 1,
              "a refused registration: ERROR with the transport's reason, block freed (%s)",
              st.error);
    GDR_CHECK(gdr_rma_stage_slot(&st, 0) == NULL, "a failed stage has no slots");
    gdr_rma_stage_free(&st);
    gdr_rma_stage_t zero;
    memset(&zero, 0, sizeof(zero));
    gdr_rma_stage_free(&zero);
    GDR_CHECK(fk.deregs == 0 && fk.frees == 1, "free after a failed init and of a zeroed stage"
              " release nothing more");
}

int main(void)
{
    test_layout();
    test_take_give();
    test_failures();
    return gdr_unit_finish();
}
