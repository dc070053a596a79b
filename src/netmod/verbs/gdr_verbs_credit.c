#include "gdr_verbs_credit.h"

void gdr_verbs_credit_init(gdr_verbs_credit_t *c, uint32_t depth)
{
    c->depth = depth;
    c->send_credits = depth;
    c->to_return = 0;
}

void gdr_verbs_credit_on_returned(gdr_verbs_credit_t *c, uint32_t n)
{
    c->send_credits += n;
    if (c->send_credits > c->depth)     /* a confused peer must not make us overrun it */
        c->send_credits = c->depth;
}

void gdr_verbs_credit_on_reposted(gdr_verbs_credit_t *c)
{
    c->to_return++;
}

int gdr_verbs_credit_want_update(const gdr_verbs_credit_t *c)
{
    uint32_t threshold = c->depth / 2 > 0 ? c->depth / 2 : 1;
    return c->to_return >= threshold && c->send_credits >= 1;
}
