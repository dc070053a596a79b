/* Passive-target locks on a 64-bit lock word at the target, driven by remote atomics only
 * (issue 22: MPI_Win_lock/unlock and lock_all without active messages).  This is the
 * protocol as a state machine: it says which atomic to issue next (fetch-add on the word)
 * and reads its result; the engine posts the atomics (NIC atomics across nodes; a test
 * applies them with CPU atomics).
 *
 * A reader-writer ticket lock.  The word: bits 48..63 = the next exclusive ticket, bits
 * 32..47 = the ticket served, bits 0..31 = shared holders (and shared lockers backing out).
 * - exclusive: fetch-add one ticket; the old word's next ticket is ours.  We hold the lock
 *   once the ticket served is ours and no shared holder is left: the fetch-add's result
 *   may already say so (a free lock: one atomic), else we read the word (fetch-add 0) after
 *   a back-off until it does.  Exclusive lockers are served in the order they took tickets,
 *   so one that is close to the word (the target itself) cannot starve a far one.
 * - shared: fetch-add one holder; if the old word showed a ticket taken and not yet served
 *   (an exclusive holder or a waiting exclusive locker), take the holder back, read the
 *   word after a back-off until every ticket is served, then try again.  So a waiting
 *   exclusive lock is never starved by a stream of shared ones.
 * - release: fetch-add -1 holder (shared), or serve the next ticket (exclusive; the 16-bit
 *   field wraps without carrying into the next ticket).
 * Back-off doubles from min_ns to max_ns (the netmod's CVAR) after each failed look.
 * Guarantees: at most one exclusive holder, never together with shared holders; shared
 * holders overlap; exclusive lockers in ticket order; up to 65535 exclusive lockers may
 * wait on one word at once.  Not thread safe per lock object (one per epoch and target). */
#ifndef GDR_RMA_LOCK_H
#define GDR_RMA_LOCK_H

#include <stdint.h>

#define GDR_RMA_LOCK_TICKET ((uint64_t) 1 << 48)
#define GDR_RMA_LOCK_SERVED_ONE ((uint64_t) 1 << 32)
#define GDR_RMA_LOCK_READERS(w) ((w) & 0xffffffffu)
#define GDR_RMA_LOCK_SERVING(w) (((w) >> 32) & 0xffffu)
#define GDR_RMA_LOCK_NEXT_TICKET(w) (((w) >> 48) & 0xffffu)
/* exclusive lockers holding or waiting: tickets taken and not yet served */
#define GDR_RMA_LOCK_WRITERS(w) ((GDR_RMA_LOCK_NEXT_TICKET(w) - GDR_RMA_LOCK_SERVING(w)) & 0xffffu)

typedef enum { GDR_RMA_LOCK_SHARED, GDR_RMA_LOCK_EXCLUSIVE } gdr_rma_lock_kind_t;

/* One atomic on the lock word, always a fetch-add of add (0: a read).  It returns the
 * word's old value, which goes to gdr_rma_lock_on_result. */
typedef struct gdr_rma_lock_step {
    uint64_t add;
} gdr_rma_lock_step_t;

/* What to do after a result. */
typedef enum {
    GDR_RMA_LOCK_HELD,          /* acquired: no further step */
    GDR_RMA_LOCK_NEXT,          /* issue *step now */
    GDR_RMA_LOCK_LATER,         /* issue *step after *delay_ns (back-off) */
    GDR_RMA_LOCK_RELEASED       /* the release step completed */
} gdr_rma_lock_next_t;

typedef struct gdr_rma_lock {
    gdr_rma_lock_kind_t kind;
    int state;                  /* private */
    uint64_t backoff_ns, min_ns, max_ns;
    uint64_t tries;             /* failed looks so far (statistics) */
    uint16_t ticket;            /* private: the exclusive ticket taken */
} gdr_rma_lock_t;

/* Starts acquiring: *step is the first atomic to issue. */
void gdr_rma_lock_acquire(gdr_rma_lock_t *lk, gdr_rma_lock_kind_t kind, uint64_t min_ns,
                          uint64_t max_ns, gdr_rma_lock_step_t *step);

/* The old value the last step returned: what next (see gdr_rma_lock_next_t). */
gdr_rma_lock_next_t gdr_rma_lock_on_result(gdr_rma_lock_t *lk, uint64_t old,
                                           gdr_rma_lock_step_t *step, uint64_t *delay_ns);

/* The atomic that releases a held lock.  Its result may go to gdr_rma_lock_on_result
 * (GDR_RMA_LOCK_RELEASED) or be dropped: the next acquire starts afresh either way. */
void gdr_rma_lock_release(gdr_rma_lock_t *lk, gdr_rma_lock_step_t *step);

#endif /* GDR_RMA_LOCK_H */
