#include "gdr_rma_trigger_done.h"

#include <stdlib.h>

int gdr_trig_done_init(gdr_trig_done_t *t, uint32_t window)
{
    t->next = 0;
    t->window = window < 64 ? 64 : (window + 63) / 64 * 64;
    t->bits = calloc(t->window / 64, sizeof(uint64_t));
    return t->bits != NULL ? 0 : -1;
}

void gdr_trig_done_free(gdr_trig_done_t *t)
{
    free(t->bits);
    t->bits = NULL;
}

int gdr_trig_done_room(const gdr_trig_done_t *t, uint64_t seq)
{
    return seq - t->next < t->window;
}

static int finished(const gdr_trig_done_t *t, uint64_t seq)
{
    uint64_t i = seq % t->window;
    return (t->bits[i / 64] >> (i % 64)) & 1;
}

static void set_finished(gdr_trig_done_t *t, uint64_t seq, int on)
{
    uint64_t i = seq % t->window, bit = (uint64_t) 1 << (i % 64);
    if (on)
        t->bits[i / 64] |= bit;
    else
        t->bits[i / 64] &= ~bit;
}

int gdr_trig_done_mark(gdr_trig_done_t *t, uint64_t seq)
{
    /* (unsigned: a seq below next wraps to a huge distance and is refused too) */
    if (seq - t->next >= t->window || finished(t, seq))
        return -1;
    set_finished(t, seq, 1);
    if (seq != t->next)
        return 0;
    /* the prefix grows over every finished one; their bits are cleared for the next lap */
    while (finished(t, t->next)) {
        set_finished(t, t->next, 0);
        t->next++;
    }
    return 1;
}
