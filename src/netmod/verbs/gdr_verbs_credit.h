/* Receive credits of one connection.  Each side pre-posts `depth` receive buffers
 * for the other; a SEND consumes one.  The receiver returns credits as it re-posts
 * buffers, piggybacked on its own messages or in a CREDIT message, so a fast
 * sender never overruns the receiver (no RNR retries).  The last credit is kept
 * for CREDIT messages, so two senders that both run dry can still unblock each
 * other.  Pure bookkeeping: not thread safe, no I/O. */
#ifndef GDR_VERBS_CREDIT_H
#define GDR_VERBS_CREDIT_H

#include <stdint.h>

typedef struct gdr_verbs_credit {
    uint32_t depth;             /* receive buffers each side posts for the other */
    uint32_t send_credits;      /* SENDs this side may still post */
    uint32_t to_return;         /* buffers re-posted for the peer, not yet told */
} gdr_verbs_credit_t;

void gdr_verbs_credit_init(gdr_verbs_credit_t *c, uint32_t depth);

/* May a data message (EAGER, RTS, FIN) be posted now?  (Inline, as the next one: every
 * message pays them.) */
static inline int gdr_verbs_credit_can_send_data(const gdr_verbs_credit_t *c)
{
    return c->send_credits > 1;
}

/* Takes one credit for a message about to be posted, and returns the credits to
 * piggyback on it (at most UINT16_MAX; the rest stays owed). */
static inline uint16_t gdr_verbs_credit_on_send(gdr_verbs_credit_t *c)
{
    uint32_t give = c->to_return > UINT16_MAX ? UINT16_MAX : c->to_return;
    if (c->send_credits > 0)
        c->send_credits--;
    c->to_return -= give;
    return (uint16_t) give;
}

/* The peer returned n credits. */
void gdr_verbs_credit_on_returned(gdr_verbs_credit_t *c, uint32_t n);

/* One receive buffer was consumed and re-posted for the peer. */
void gdr_verbs_credit_on_reposted(gdr_verbs_credit_t *c);

/* Should a CREDIT message go out now (many owed, nothing else to carry them)? */
int gdr_verbs_credit_want_update(const gdr_verbs_credit_t *c);

#endif /* GDR_VERBS_CREDIT_H */
