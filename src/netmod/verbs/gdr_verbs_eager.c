/* Sending messages: each is built in a registered bounce buffer (a send slot) and posted
 * when its peer has a receive credit; one that cannot go yet waits in its peer's queue,
 * fully built, in order, until gdr_verbs_iface_flush() sends the backlog (several to a doorbell) and the
 * credits owed to the peer.  Eager messages, and the channel's own (rendezvous
 * announcements, FIN, CREDIT), all go this way. */
#include "gdr_verbs_iface_priv.h"
#include "gdr_verbs_credit.h"
#include "gdr_verbs_wire.h"
#include "gdr_verbs_small_copy.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages posted with one doorbell when a backlog drains (on rxe, one system call). */
#define SEND_CHAIN_MAX 16

/* Readies a built message in a bounce buffer as wr/sge (not posted): takes its credit
 * now, so that the next message's credit check sees it.  The caller checked credit and
 * slot. */
static void build_send_wr(gdr_verbs_iface_t *am, int peer, send_slot_t *slot, size_t len,
                          struct ibv_send_wr *wr, struct ibv_sge *sge)
{
    ep_t *ep = &am->eps[peer];
    uint16_t credits = gdr_verbs_credit_on_send(&ep->credit);
    memcpy(slot->addr + offsetof(gdr_verbs_wire_hdr_t, credits), &credits, sizeof(credits));
    slot->peer = peer;
    sge->addr = (uintptr_t) slot->addr;
    sge->length = (uint32_t) len;
    sge->lkey = am->send_mr->lkey;
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = (uintptr_t) slot;
    wr->sg_list = sge;
    wr->num_sge = 1;
    wr->opcode = IBV_WR_SEND;
    wr->send_flags = IBV_SEND_SIGNALED | (len <= am->hot.max_inline ? IBV_SEND_INLINE : 0);
}

/* A post of n readied messages to peer failed from bad on (NULL: all): their slots come
 * back, the connection is marked failed.  Returns -1. */
static int post_failed(gdr_verbs_iface_t *am, int peer, struct ibv_send_wr *wr, int n,
                       struct ibv_send_wr *bad)
{
    int first = bad != NULL && bad >= wr && bad < wr + n ? (int) (bad - wr) : 0;
    for (int k = first; k < n; k++) {
        send_slot_t *slot = (send_slot_t *) (uintptr_t) wr[k].wr_id;
        slot->next_free = am->free_slots;
        am->free_slots = slot;
    }
    ep_failed(am, peer);
    return fail(am, "sending to rank %d failed: %s (queue pair in error?)", peer,
                strerror(errno));
}

/* Posts n readied messages to peer as one chain. */
static int post_send_chain(gdr_verbs_iface_t *am, int peer, struct ibv_send_wr *wr, int n)
{
    struct ibv_send_wr *bad = NULL;
    for (int k = 0; k + 1 < n; k++)
        wr[k].next = &wr[k + 1];
    if (rma_held_out(am, peer) != 0 || ibv_post_send(am->eps[peer].qp, wr, &bad) != 0)
        return post_failed(am, peer, wr, n, bad);
    return 0;
}

/* Posts one built message from a bounce buffer; the caller checked credit and slot. */
static int post_built(gdr_verbs_iface_t *am, int peer, send_slot_t *slot, size_t len)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    build_send_wr(am, peer, slot, len, &wr, &sge);
    return post_send_chain(am, peer, &wr, 1);
}

static send_slot_t *take_slot(gdr_verbs_iface_t *am)
{
    send_slot_t *s = am->free_slots;
    if (s != NULL)
        am->free_slots = s->next_free;
    return s;
}

/* Where to build a data message of len bytes for peer: a bounce buffer when it can
 * go now (order kept: never ahead of queued ones), else a new queue entry. */
static void *reserve(gdr_verbs_iface_t *am, int peer, size_t len, send_slot_t **slot,
                     pending_msg_t **pm)
{
    ep_t *ep = &am->eps[peer];
    *slot = NULL;
    *pm = NULL;
    if (ep->connected && ep->q_head == NULL && gdr_verbs_credit_can_send_data(&ep->credit)
        && am->free_slots != NULL) {
        *slot = take_slot(am);
        return (*slot)->addr;
    }
    *pm = malloc(sizeof(pending_msg_t) + len);
    if (*pm == NULL)
        return NULL;
    (*pm)->next = NULL;
    (*pm)->len = len;
    return (*pm)->bytes;
}

static int commit(gdr_verbs_iface_t *am, int peer, size_t len, send_slot_t *slot, pending_msg_t *pm)
{
    ep_t *ep = &am->eps[peer];
    if (slot != NULL)
        return post_built(am, peer, slot, len);
    if (ep->q_tail != NULL)
        ep->q_tail->next = pm;
    else
        ep->q_head = pm;
    ep->q_tail = pm;
    am->queued++;
    am->stats.queued++;
    return 0;
}

/* A message for peer may be queued: the peer is reachable, and its connection is made
 * or under way (started here: the message waits for it). */
int gdr_verbs_iface_check_peer(gdr_verbs_iface_t *am, int peer)
{
    if (peer < 0 || peer >= am->npeers || !am->eps[peer].reach || !am->eps[peer].has_card)
        return fail(am, "no path to rank %d through %s", peer, am->dev->name);
    if (am->eps[peer].failed && is_foreign(am, peer)) {
        /* the channel stays up: only this process of another job is lost (said again) */
        gdr_verbs_iface_foreign_lost(am, peer, "earlier (it ended, or its network path broke)");
        return -1;
    }
    if (am->eps[peer].failed)
        return fail(am, "the connection to rank %d has failed earlier", peer);
    return gdr_verbs_am_want_qp(am, peer) < 0 ? -1 : 0;
}

int gdr_verbs_iface_send_simple(gdr_verbs_iface_t *am, int peer, gdr_verbs_msg_kind_t kind,
                                uint32_t handler, const void *am_hdr, size_t am_hdr_sz,
                                const void *body, size_t body_sz, uint64_t data_sz)
{
    size_t len = gdr_verbs_wire_size(kind, am_hdr_sz, data_sz);
    send_slot_t *slot;
    pending_msg_t *pm;

    if (len > am->cfg.buf_size)
        return fail(am, "a %zu-byte message to rank %d exceeds the %zu-byte eager buffer", len,
                    peer, am->cfg.buf_size);
    char *p = reserve(am, peer, len, &slot, &pm);
    if (p == NULL)
        return fail(am, "out of memory queueing a %zu-byte message to rank %d", len, peer);
    size_t at = gdr_verbs_wire_put_hdr(p, len, kind, handler, 0, am_hdr, am_hdr_sz, data_sz);
    if (body_sz > 0)
        memcpy(p + at, body, body_sz);
    return commit(am, peer, len, slot, pm);
}

size_t gdr_verbs_am_eager_limit(const gdr_verbs_iface_t *am, size_t am_hdr_sz)
{
    size_t overhead = gdr_verbs_wire_size(GDR_VERBS_MSG_EAGER, am_hdr_sz, 0);
    return am->cfg.buf_size > overhead ? am->cfg.buf_size - overhead : 0;
}

/* The common case, whole cost counted (bench/opcost: MPI_Send): a healthy connected peer
 * with a credit, a free send slot and nothing queued before this message. */
void *gdr_verbs_am_eager_reserve(gdr_verbs_iface_t *am, int peer, uint32_t handler_id,
                                 size_t am_hdr_sz, size_t data_sz)
{
    send_slot_t *slot = am->free_slots;
    size_t at = sizeof(gdr_verbs_wire_hdr_t) + gdr_verbs_wire_pad8(am_hdr_sz);
    if ((unsigned) peer >= (unsigned) am->npeers || slot == NULL || am->failed
        || at + data_sz > am->cfg.buf_size || am_hdr_sz > UINT32_MAX)
        return NULL;
    ep_t *ep = &am->eps[peer];
    if (!ep->connected || ep->failed || ep->q_head != NULL
        || !gdr_verbs_credit_can_send_data(&ep->credit))
        return NULL;
    am->free_slots = slot->next_free;
    am->reserved = slot;
    slot->peer = peer;
    gdr_verbs_wire_hdr_t *h = (gdr_verbs_wire_hdr_t *) (void *) slot->addr;
    h->magic = GDR_VERBS_WIRE_MAGIC;
    h->kind = GDR_VERBS_MSG_EAGER;
    h->reserved = 0;
    h->credits = gdr_verbs_credit_on_send(&ep->credit);
    h->reserved2 = 0;
    h->am_hdr_sz = (uint32_t) am_hdr_sz;
    h->handler_id = handler_id;
    h->data_sz = data_sz;
    return h + 1;
}

/* Sends the reserved slot's message, len bytes in place (peer and len read before the
 * payload was written, which may alias them): one gather entry, inline where it fits. */
static inline int post_reserved(gdr_verbs_iface_t *am, send_slot_t *slot, int peer, size_t len)
{
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad = NULL;
    sge.addr = (uintptr_t) slot->addr;
    sge.length = (uint32_t) len;
    sge.lkey = am->send_mr->lkey;
    wr.next = NULL;
    wr.wr_id = (uintptr_t) slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | (len <= am->hot.max_inline ? IBV_SEND_INLINE : 0);
    wr.imm_data = 0;
    am->reserved = NULL;
    am->stats.eager_sent++;
    if (rma_held_out(am, peer) != 0 || ibv_post_send(am->eps[peer].qp, &wr, &bad) != 0)
        return post_failed(am, peer, &wr, 1, bad);
    return 0;
}

/* A second gather entry for the caller's data would save the copy here but cost the
 * provider a second copy (rxe: 28 instructions more than the 8 bytes' copy,
 * bench/opcost). */
int gdr_verbs_am_eager_post(gdr_verbs_iface_t *am, const void *data, size_t data_sz)
{
    send_slot_t *slot = am->reserved;
    int peer = slot->peer;
    const gdr_verbs_wire_hdr_t *h = (const gdr_verbs_wire_hdr_t *) (const void *) slot->addr;
    size_t at = sizeof(*h) + gdr_verbs_wire_pad8(h->am_hdr_sz);
    if (data_sz > 0)
        gdr_verbs_small_copy(slot->addr + at, data, data_sz);
    return post_reserved(am, slot, peer, at + data_sz);
}

void *gdr_verbs_am_eager_data(gdr_verbs_iface_t *am)
{
    send_slot_t *slot = am->reserved;
    const gdr_verbs_wire_hdr_t *h = (const gdr_verbs_wire_hdr_t *) (const void *) slot->addr;
    return slot->addr + sizeof(*h) + gdr_verbs_wire_pad8(h->am_hdr_sz);
}

int gdr_verbs_am_eager_post_filled(gdr_verbs_iface_t *am, size_t data_sz)
{
    send_slot_t *slot = am->reserved;
    const gdr_verbs_wire_hdr_t *h = (const gdr_verbs_wire_hdr_t *) (const void *) slot->addr;
    return post_reserved(am, slot, slot->peer,
                         sizeof(*h) + gdr_verbs_wire_pad8(h->am_hdr_sz) + data_sz);
}

void gdr_verbs_am_eager_unreserve(gdr_verbs_iface_t *am)
{
    send_slot_t *slot = am->reserved;
    const gdr_verbs_wire_hdr_t *h = (const gdr_verbs_wire_hdr_t *) (const void *) slot->addr;
    gdr_verbs_credit_t *c = &am->eps[slot->peer].credit;
    c->send_credits++;          /* gdr_verbs_credit_on_send, undone */
    c->to_return += h->credits;
    slot->next_free = am->free_slots;
    am->free_slots = slot;
    am->reserved = NULL;
}

int gdr_verbs_am_send_eager(gdr_verbs_iface_t *am, int peer, uint32_t handler_id,
                            const void *am_hdr, size_t am_hdr_sz, const void *data,
                            size_t data_sz)
{
    void *at = gdr_verbs_am_eager_reserve(am, peer, handler_id, am_hdr_sz, data_sz);
    if (at != NULL) {
        memcpy(at, am_hdr, am_hdr_sz);
        return gdr_verbs_am_eager_post(am, data, data_sz);
    }
    if (gdr_verbs_iface_check_peer(am, peer) != 0)
        return -1;
    am->stats.eager_sent++;
    return gdr_verbs_iface_send_simple(am, peer, GDR_VERBS_MSG_EAGER, handler_id, am_hdr,
                                       am_hdr_sz, data, data_sz, data_sz);
}

/* Queued messages go out as credits and bounce buffers allow; then owed credits. */
int gdr_verbs_iface_flush(gdr_verbs_iface_t *am, int *progressed)
{
    for (int k = 0; k < am->nactive; k++) {
        int i = am->active[k];
        ep_t *ep = &am->eps[i];
        if (!ep->connected || ep->failed)
            continue;
        /* the backlog, in order, up to SEND_CHAIN_MAX messages per doorbell */
        struct ibv_send_wr wr[SEND_CHAIN_MAX];
        struct ibv_sge sge[SEND_CHAIN_MAX];
        int n = 0;
        while (ep->q_head != NULL && gdr_verbs_credit_can_send_data(&ep->credit)
               && am->free_slots != NULL) {
            pending_msg_t *pm = ep->q_head;
            send_slot_t *slot = take_slot(am);
            memcpy(slot->addr, pm->bytes, pm->len);
            build_send_wr(am, i, slot, pm->len, &wr[n], &sge[n]);
            n++;
            ep->q_head = pm->next;
            if (ep->q_head == NULL)
                ep->q_tail = NULL;
            am->queued--;
            free(pm);
            *progressed = 1;
            if (n == SEND_CHAIN_MAX || ep->q_head == NULL
                || !gdr_verbs_credit_can_send_data(&ep->credit) || am->free_slots == NULL) {
                am->stats.send_chains++;
                if (post_send_chain(am, i, wr, n) != 0)
                    return -1;
                n = 0;
            }
        }
        if (ep->q_head != NULL && !gdr_verbs_credit_can_send_data(&ep->credit)
            && gdr_verbs_iface_maybe_probe(am, i) != 0)
            return -1;
        /* owed credits ride on data when data can go; when it cannot (both sides
         * queued and dry), the kept last credit carries them in a CREDIT message */
        if (gdr_verbs_credit_want_update(&ep->credit) && am->free_slots != NULL
            && (ep->q_head == NULL || !gdr_verbs_credit_can_send_data(&ep->credit))) {
            send_slot_t *slot = take_slot(am);
            size_t len = gdr_verbs_wire_put_hdr(slot->addr, am->cfg.buf_size,
                                                GDR_VERBS_MSG_CREDIT, 0, 0, NULL, 0, 0);
            am->stats.credit_sent++;
            if (post_built(am, i, slot, len) != 0)
                return -1;
            *progressed = 1;
        }
    }
    return 0;
}
