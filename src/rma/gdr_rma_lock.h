/* Passive-target locks on a 64-bit lock word at the target, driven by remote atomics only
 * (issue 22: MPI_Win_lock/unlock and lock_all without active messages).  This is the
 * protocol as a state machine: it says which atomic to issue next (fetch-add or
 * compare-and-swap on the word) and reads its result; the engine posts the atomics (NIC
 * atomics across nodes; a test applies them with CPU atomics).
 *
 * The word: bit 63 = held exclusive, bits 32..47 = exclusive lockers waiting, bits 0..31 =
 * shared holders.
 * - shared: fetch-add one holder; if the word showed an exclusive holder or a waiting
 *   exclusive locker, take the holder back (fetch-add -1) and try again after a back-off.
 *   So a waiting exclusive lock is never starved by a stream of shared ones.
 * - exclusive: compare-and-swap 0 -> held; if that fails, announce a waiter (fetch-add) and
 *   compare-and-swap "no holders, k waiters" -> "held, k-1 waiters" until it succeeds,
 *   backing off between tries; each failed try returns the word, the guess for the next.
 * - release: fetch-add -1 holder (shared), or -held (exclusive).
 * Back-off doubles from min_ns to max_ns (the netmod's CVAR) after each failed try.
 * Guarantees: at most one exclusive holder, never together with shared holders; shared
 * holders overlap; an exclusive locker waits only for holders present or arriving before
 * it announced itself.  Not thread safe per lock object (one per epoch and target). */
#ifndef GDR_RMA_LOCK_H
#define GDR_RMA_LOCK_H

#include <stdint.h>

#define GDR_RMA_LOCK_EXCL ((uint64_t) 1 << 63)
#define GDR_RMA_LOCK_WAITER ((uint64_t) 1 << 32)
#define GDR_RMA_LOCK_READERS(w) ((w) & 0xffffffffu)
#define GDR_RMA_LOCK_WAITERS(w) (((w) >> 32) & 0xffffu)

typedef enum { GDR_RMA_LOCK_SHARED, GDR_RMA_LOCK_EXCLUSIVE } gdr_rma_lock_kind_t;

/* One atomic on the lock word: fetch-add of add, or compare-and-swap (compare -> swap).
 * Both return the word's old value, which goes to gdr_rma_lock_on_result. */
typedef struct gdr_rma_lock_step {
    enum { GDR_RMA_LOCK_FADD, GDR_RMA_LOCK_CAS } op;
    uint64_t add;
    uint64_t compare, swap;
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
    uint64_t tries;             /* failed tries so far (statistics) */
} gdr_rma_lock_t;

/* Starts acquiring: *step is the first atomic to issue. */
void gdr_rma_lock_acquire(gdr_rma_lock_t *lk, gdr_rma_lock_kind_t kind, uint64_t min_ns,
                          uint64_t max_ns, gdr_rma_lock_step_t *step);

/* The old value the last step returned: what next (see gdr_rma_lock_next_t). */
gdr_rma_lock_next_t gdr_rma_lock_on_result(gdr_rma_lock_t *lk, uint64_t old,
                                           gdr_rma_lock_step_t *step, uint64_t *delay_ns);

/* The atomic that releases a held lock; its result goes to gdr_rma_lock_on_result too
 * (GDR_RMA_LOCK_RELEASED). */
void gdr_rma_lock_release(gdr_rma_lock_t *lk, gdr_rma_lock_step_t *step);

#endif /* GDR_RMA_LOCK_H */
