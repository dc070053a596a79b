/* Who the peers are and how they are reached: this rank's business card and the ones
 * learnt from peers, the job's identity, the ranks of this node reached only for
 * connect/accept's dynamic messages, and processes of other jobs (spawned, connected or
 * joined), whose failure fails only their own connection. */
#include "gdr_verbs_iface_priv.h"
#include "gdr_verbs_card.h"

#include <stdio.h>
#include <string.h>

void gdr_verbs_iface_ep_init(gdr_verbs_iface_t *am, int peer, int reach)
{
    ep_t *ep = &am->eps[peer];
    ep->reach = reach != 0;
    gdr_verbs_credit_init(&ep->credit, am->cfg.recv_depth);
    ep->probe.kind = WR_PROBE;
    ep->probe.peer = peer;
}

/* A process of another job is lost (it ended after MPI_Comm_disconnect, or its path broke):
 * only its connection fails, the channel stays up for every other peer; sends to it fail
 * from now on, saying so.  Returns 0. */
int gdr_verbs_iface_foreign_lost(gdr_verbs_iface_t *am, int peer, const char *why)
{
    ep_t *ep = &am->eps[peer];
    ep_failed(am, peer);
    snprintf(am->error, sizeof(am->error), "the connection to rank %u of job %016llx (another "
             "job: spawned, or connected by MPI_Comm_connect/accept) failed: %s", ep->card.rank,
             (unsigned long long) ep->card.job, why != NULL ? why : "?");
    return 0;
}

/* The peer index of process `rank` of job `job`, made from its card if it is new; -1 when
 * there is no more room (GDR_VERBS_AM_FOREIGN_MAX). */
static int foreign_peer(gdr_verbs_iface_t *am, const gdr_verbs_card_t *card)
{
    for (int i = am->nranks; i < am->npeers; i++) {
        if (am->eps[i].card.job == card->job && am->eps[i].card.rank == card->rank) {
            /* the same process: a new card only where the old one's queue pair is gone */
            if (am->eps[i].qp == NULL || am->eps[i].failed)
                am->eps[i].card = *card;
            return i;
        }
    }
    if (am->npeers - am->nranks >= GDR_VERBS_AM_FOREIGN_MAX)
        return -1;
    int peer = am->npeers++;
    gdr_verbs_iface_ep_init(am, peer, 1);
    am->eps[peer].card = *card;
    am->eps[peer].has_card = 1;
    return peer;
}

/* A handshake datagram from another job's process: its peer index, made from the card it
 * carries if this is its first; -1 to drop it (not a card, or no room). */
int gdr_verbs_iface_foreign_from_msg(gdr_verbs_iface_t *am, const gdr_verbs_conn_msg_t *m)
{
    gdr_verbs_card_t card;
    if (gdr_verbs_card_decode(m->card, sizeof(m->card), 0, &card) != 0 || card.job != m->job
        || card.rank != m->src_rank || card.job == 0)
        return -1;
    return foreign_peer(am, &card);
}

/* A rank of this job the channel did not reach (one of this node, which MPICH's shared
 * memory serves) is reached through card for the dynamic messages of a connect/accept
 * inside the job, never for its windows (dynamic_only). */
static void reach_for_dynamic(ep_t *ep, const gdr_verbs_card_t *card)
{
    if (ep->reach && ep->has_card)
        return;
    ep->reach = 1;
    ep->dynamic_only = 1;
    ep->card = *card;
    ep->has_card = 1;
}

/* A handshake datagram from a rank of this job: its peer.  A rank this one does not reach
 * (one of its node, which MPICH's shared memory serves) may still ask, for the dynamic
 * messages of a connect/accept between groups of the job: it is reached through the card
 * it sent, as gdr_verbs_am_add_foreign does from its upid on the other side. */
int gdr_verbs_iface_same_job_from_msg(gdr_verbs_iface_t *am, const gdr_verbs_conn_msg_t *m)
{
    ep_t *ep = &am->eps[m->src_rank];
    gdr_verbs_card_t card;
    if (ep->reach && ep->has_card)
        return (int) m->src_rank;
    if (am->job == 0 || gdr_verbs_card_decode(m->card, sizeof(m->card), (uint32_t) am->nranks,
                                              &card) != 0 || card.rank != m->src_rank)
        return -1;
    reach_for_dynamic(ep, &card);
    return (int) m->src_rank;
}

int gdr_verbs_am_add_foreign(gdr_verbs_iface_t *am, const void *buf, size_t len)
{
    gdr_verbs_card_t card;
    if (gdr_verbs_card_decode(buf, len, 0, &card) != 0 || card.job == 0)
        return fail(am, "the address of a process of another job is not a gdr card (version "
                    "%d; another build of gdr?)", GDR_VERBS_CARD_VERSION);
    if (card.job == am->job) {
        /* this job's rank, maybe one of this node that MPICH's shared memory serves: it is
         * reached through the NIC too, for the dynamic messages of connect/accept */
        if (card.rank >= (uint32_t) am->nranks || card.nranks != (uint32_t) am->nranks)
            return fail(am, "a card of this job names rank %u of %u", card.rank, card.nranks);
        reach_for_dynamic(&am->eps[card.rank], &card);
        return (int) card.rank;
    }
    int peer = foreign_peer(am, &card);
    if (peer < 0) {
        snprintf(am->error, sizeof(am->error), "this process already knows %d processes of "
                 "other jobs, the most gdr keeps (GDR_VERBS_AM_FOREIGN_MAX)",
                 GDR_VERBS_AM_FOREIGN_MAX);
        return -1;
    }
    return peer;
}

int gdr_verbs_am_peer_card(const gdr_verbs_iface_t *am, int peer, void *buf)
{
    if (peer < 0 || peer >= am->npeers || !am->eps[peer].has_card)
        return -1;
    gdr_verbs_card_encode(&am->eps[peer].card, buf);
    return 0;
}

void gdr_verbs_am_set_job(gdr_verbs_iface_t *am, uint64_t job)
{
    am->job = job;
}

size_t gdr_verbs_am_card_size(const gdr_verbs_iface_t *am)
{
    (void) am;
    return GDR_VERBS_CARD_BYTES;
}

void gdr_verbs_am_card(const gdr_verbs_iface_t *am, void *buf)
{
    gdr_verbs_card_t card = {
        .port_num = am->dev->port_num,.link_layer = (uint8_t) am->dev->link_layer,
        .mtu = (uint8_t) am->dev->active_mtu,.lid = am->dev->lid,
        .ud_qpn = am->ud->qp_num,.nranks = (uint32_t) am->nranks,.rank = (uint32_t) am->rank,
        .job = am->job
    };
    memcpy(card.gid, am->dev->gid, 16);
    gdr_verbs_card_encode(&card, buf);
}

int gdr_verbs_am_add_peer(gdr_verbs_iface_t *am, int peer, const void *buf, size_t len)
{
    if (peer < 0 || peer >= am->nranks || !am->eps[peer].reach)
        return fail(am, "rank %d is not reached through %s", peer, am->dev->name);
    if (gdr_verbs_card_decode(buf, len, (uint32_t) am->nranks, &am->eps[peer].card) != 0)
        return fail(am, "the business card of rank %d is not a gdr card (version %d) for %d "
                    "ranks (mixed builds?)", peer, GDR_VERBS_CARD_VERSION, am->nranks);
    am->eps[peer].has_card = 1;
    return 0;
}
