/* How the channel fails: one sentence, kept for gdr_verbs_am_error(), and the peer it
 * names marked failed.  Every other file of the channel reports through here (fail(), in
 * gdr_verbs_iface_priv.h), so it calls none of them. */
#include "gdr_verbs_iface_priv.h"

#include <stdarg.h>
#include <stdio.h>

int gdr_verbs_iface_vfail(gdr_verbs_iface_t *am, const char *fmt, va_list ap)
{
    vsnprintf(am->error, sizeof(am->error), fmt, ap);
    am->failed = 1;
    for (int i = 0; i < am->hot.n; i++)
        am->hot.ready_qp[i] = NULL;
    return -1;
}

int gdr_verbs_am_fail_peer(gdr_verbs_iface_t *am, int peer, const char *fmt, ...)
{
    va_list ap;
    if (peer >= 0 && peer < am->npeers) {
        /* ep_failed's two stores (a call would loop: that header calls this file) */
        am->eps[peer].failed = 1;
        am->hot.ready_qp[peer] = NULL;
    }
    va_start(ap, fmt);
    gdr_verbs_iface_vfail(am, fmt, ap);
    va_end(ap);
    return -1;
}

const char *gdr_verbs_am_error(const gdr_verbs_iface_t *am)
{
    return am->error;
}
