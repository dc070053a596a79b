/* The proxy's side of trigger-ring completion: operations to one target finish in any
 * order (RDMA completions of different kinds, staged copies), but the ring's done[rank]
 * counter may only count a prefix without gaps, so that done[rank] >= n means "the first n
 * are finished".  One tracker per target rank; the proxy also uses it to bound the
 * operations it has in flight to a target (gdr_trig_done_room).  Single-threaded (the
 * proxy's). */
#ifndef GDR_RMA_TRIGGER_DONE_H
#define GDR_RMA_TRIGGER_DONE_H

#include <stdint.h>

typedef struct gdr_trig_done {
    uint64_t next;              /* operations 0 .. next-1 are finished */
    uint64_t *bits;             /* finished ones at or after next, by seq % window */
    uint32_t window;            /* a multiple of 64: how far past next one may finish */
} gdr_trig_done_t;

/* window is rounded up to a multiple of 64.  Returns 0, or -1 out of memory. */
int gdr_trig_done_init(gdr_trig_done_t *t, uint32_t window);
void gdr_trig_done_free(gdr_trig_done_t *t);

/* Whether operation seq may start: it lies within window of the first unfinished one. */
int gdr_trig_done_room(const gdr_trig_done_t *t, uint64_t seq);

/* Records seq as finished.  Returns 1 when next moved (the proxy then publishes it), 0
 * when it did not, -1 when seq is not in [next, next + window) (finished twice, or never
 * allowed to start: a proxy bug, nothing changed). */
int gdr_trig_done_mark(gdr_trig_done_t *t, uint64_t seq);

#endif /* GDR_RMA_TRIGGER_DONE_H */
