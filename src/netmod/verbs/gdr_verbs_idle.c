/* Finding dead peers while waiting: a rank that hears nothing for a while probes the
 * peers it waits on (a zero-length RDMA WRITE completes if the peer is alive and fails if
 * not), so a dead peer becomes an error, not a hang.  Reading the clock costs a system call
 * under User-Mode Linux, so the busy poller looks at it only every so many empty polls. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* clock_gettime */
#endif
#include "gdr_verbs_iface_priv.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define PROBE_INTERVAL_NS 1000000000LL
/* A rank that hears nothing for this long while it waits probes every connected peer:
 * a peer whose host or link died takes its queue pair with it silently, and a rank
 * with nothing to send would otherwise wait for it forever (the launcher may never
 * hear either, if the peer's node went down). */
#define IDLE_PROBE_NS 5000000000LL

static long long ns_between(const struct timespec *from, const struct timespec *to)
{
    return (to->tv_sec - from->tv_sec) * 1000000000LL + (to->tv_nsec - from->tv_nsec);
}

/* Messages wait for credits that only the peer can return: check, at most once a
 * second, that it is still there, so a dead peer becomes an error, not a hang. */
int gdr_verbs_iface_maybe_probe(gdr_verbs_iface_t *am, int peer)
{
    ep_t *ep = &am->eps[peer];
    struct timespec now;

    if (ep->probe.in_flight)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long since = ns_between(&ep->probe.last, &now);
    if (since < PROBE_INTERVAL_NS)
        return 0;
    ep->probe.last = now;
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t) &ep->probe;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (rma_held_out(am, peer) != 0 || ibv_post_send(ep->qp, &wr, &bad) != 0) {
        ep_failed(am, peer);
        if (is_foreign(am, peer))
            return gdr_verbs_iface_foreign_lost(am, peer, strerror(errno));
        return fail(am, "probing rank %d failed: %s (queue pair in error?)", peer, strerror(errno));
    }
    ep->probe.in_flight = 1;
    am->stats.probes++;
    return 0;
}

/* A look at the clock now and then while nothing completes: after IDLE_PROBE_NS of
 * quiet, probe every connected peer once (a failed probe fails the channel, naming
 * the peer), then stay quiet as long again.  Returns the time read in *now. */
int gdr_verbs_iface_idle_look(gdr_verbs_iface_t *am, struct timespec *now_out)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    am->stats.clock_reads++;
    *now_out = now;
    am->quiet_polls = 0;
    if (am->heard) {
        am->heard = 0;
        am->quiet_since = now;
        return 0;
    }
    long long quiet = ns_between(&am->quiet_since, &now);
    if (quiet < IDLE_PROBE_NS)
        return 0;
    am->quiet_since = now;
    for (int k = 0; k < am->nactive; k++) {
        int i = am->active[k];
        ep_t *ep = &am->eps[i];
        if (i != am->rank && ep->connected && !ep->failed
            && gdr_verbs_iface_maybe_probe(am, i) != 0)
            return -1;
    }
    return 0;
}

/* The busy poller's look: the next one comes after twice or half as many empty polls
 * when this one came much sooner or later than IDLE_LOOK_NS after the last. */
int gdr_verbs_iface_busy_look(gdr_verbs_iface_t *am)
{
    struct timespec now;
    int rc = gdr_verbs_iface_idle_look(am, &now);
    long long since = ns_between(&am->last_look, &now);
    am->last_look = now;
    if (since < IDLE_LOOK_NS / 2 && am->clock_every < IDLE_CLOCK_EVERY_MOST)
        am->clock_every *= 2;
    else if (since > IDLE_LOOK_NS * 2 && am->clock_every > IDLE_CLOCK_EVERY_LEAST)
        am->clock_every /= 2;
    return rc;
}
