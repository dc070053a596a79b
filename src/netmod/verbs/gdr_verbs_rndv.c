/* Rendezvous, both ends: the sender registers its buffer and announces it (RTS); the
 * receiver reads the payload with RDMA READ, into a landing buffer or where ops->rts says,
 * and answers FIN, which frees the sender's buffer.  Messages from one peer are handed up
 * in the order they were sent, so later ones (eager ones too) wait here behind a payload
 * still being read: the in-order delivery queue lives with the reads it waits for. */
#include "gdr_verbs_iface_priv.h"
#include "gdr_verbs_rcache.h"
#include "gdr_verbs_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK_MAX (1u << 30)
#define RNDV_MAX ((uint64_t) 1 << 40)   /* sanity bound on an announced payload */

int gdr_verbs_am_send_rndv(gdr_verbs_iface_t *am, int peer, uint32_t handler_id,
                           const void *am_hdr, size_t am_hdr_sz, const void *data,
                           size_t data_sz, uint64_t device_id, uint64_t cookie)
{
    uint32_t idx;

    if (gdr_verbs_iface_check_peer(am, peer) != 0)
        return -1;
    for (idx = 0; idx < am->rsend_cap && am->rsend[idx].in_use; idx++);
    if (idx == am->rsend_cap) {
        uint32_t cap = am->rsend_cap ? 2 * am->rsend_cap : 16;
        rndv_send_t *t = realloc(am->rsend, cap * sizeof(*t));
        if (t == NULL)
            return fail(am, "out of memory tracking rendezvous sends");
        memset(t + am->rsend_cap, 0, (cap - am->rsend_cap) * sizeof(*t));
        am->rsend = t;
        am->rsend_cap = cap;
    }
    rndv_send_t *rs = &am->rsend[idx];
    rs->reg = gdr_verbs_rcache_get_tagged(am->rcache, data, data_sz, device_id);
    if (rs->reg == NULL && device_id != 0)
        return fail(am, "registering a %zu-byte send buffer in device memory for rank %d "
                    "failed: %s (the NIC could not register GPU memory: check the GPUDirect "
                    "mode, MPIR_CVAR_CH4_GDR_GPUDIRECT, and that the buffer is live device "
                    "memory)", data_sz, peer, strerror(errno));
    if (rs->reg == NULL)
        return fail(am, "registering a %zu-byte send buffer for rank %d failed: %s "
                    "(raise ulimit -l)", data_sz, peer, strerror(errno));
    rs->gen++;
    rs->in_use = 1;
    rs->peer = peer;
    rs->user_cookie = cookie;
    am->rsend_active++;

    gdr_verbs_wire_rts_t rts = {
        .addr = (uintptr_t) data,.rkey = rs->reg->rkey,
        .cookie = ((uint64_t) rs->gen << 32) | idx
    };
    am->stats.rndv_sent++;
    return gdr_verbs_iface_send_simple(am, peer, GDR_VERBS_MSG_RTS, handler_id, am_hdr,
                                       am_hdr_sz, &rts, sizeof(rts), data_sz);
}

/* Bytes one RDMA READ work request may carry. */
static uint64_t read_chunk(const gdr_verbs_iface_t *am)
{
    return am->dev->max_msg_sz < READ_CHUNK_MAX ? am->dev->max_msg_sz : READ_CHUNK_MAX;
}

/* Posts the next batch (at most READ_CHUNKS_MAX chunks, the last one signalled) of a
 * payload's reads; the first call takes a read slot, and a landing buffer when the
 * payload has no destination of the caller's. */
static int post_read(gdr_verbs_iface_t *am, rndv_read_t *rr)
{
    ep_t *ep = &am->eps[rr->peer];
    uint64_t chunk = read_chunk(am);

    if (!rr->started) {
        if (rr->nseg == 0) {
            rr->land = gdr_verbs_iface_landing_get(am, (size_t) rr->size);
            if (rr->land == NULL)
                return fail(am, "no %llu-byte landing buffer for a payload from rank %d: %s "
                            "(out of memory, or raise ulimit -l)",
                            (unsigned long long) rr->size, rr->peer, strerror(errno));
            rr->dst[0] = (read_seg_t) {.addr = rr->land->addr,.len = rr->size,
                .lkey = rr->land->mr->lkey };
            rr->nseg = 1;
        }
        rr->started = 1;
        ep->reads_in_flight++;
    }
    for (int k = 0; k < READ_CHUNKS_MAX && rr->posted < rr->size; k++) {
        read_seg_t *d = &rr->dst[rr->seg];
        uint64_t n = d->len - rr->seg_off < chunk ? d->len - rr->seg_off : chunk;
        struct ibv_sge sge = {
            .addr = (uintptr_t) (d->addr + rr->seg_off),.length = (uint32_t) n,.lkey = d->lkey
        };
        struct ibv_send_wr wr, *bad;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id = (uintptr_t) rr;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_READ;
        wr.send_flags = k == READ_CHUNKS_MAX - 1 || rr->posted + n == rr->size ?
            IBV_SEND_SIGNALED : 0;
        wr.wr.rdma.remote_addr = rr->rts.addr + rr->posted;
        wr.wr.rdma.rkey = rr->rts.rkey;
        if (rma_held_out(am, rr->peer) != 0 || ibv_post_send(ep->qp, &wr, &bad) != 0) {
            ep_failed(am, rr->peer);
            return fail(am, "RDMA READ of %llu bytes from rank %d failed to post: %s",
                        (unsigned long long) rr->size, rr->peer, strerror(errno));
        }
        rr->posted += n;
        rr->seg_off += n;
        if (rr->seg_off == d->len) {
            rr->seg++;
            rr->seg_off = 0;
        }
    }
    return 0;
}

static void append_inbound(ep_t *ep, inbound_t *in)
{
    in->next = NULL;
    if (ep->in_tail)
        ep->in_tail->next = in;
    else
        ep->in_head = in;
    ep->in_tail = in;
}

static void pop_inbound(ep_t *ep)
{
    ep->in_head = ep->in_head->next;
    if (ep->in_head == NULL)
        ep->in_tail = NULL;
}

static void taken_link(gdr_verbs_iface_t *am, rndv_read_t *rr)
{
    rr->t_prev = NULL;
    rr->t_next = am->taken;
    if (am->taken != NULL)
        am->taken->t_prev = rr;
    am->taken = rr;
}

void gdr_verbs_iface_taken_unlink(gdr_verbs_iface_t *am, rndv_read_t *rr)
{
    if (rr->t_prev != NULL)
        rr->t_prev->t_next = rr->t_next;
    else
        am->taken = rr->t_next;
    if (rr->t_next != NULL)
        rr->t_next->t_prev = rr->t_prev;
}

/* Gives back what a payload holds (registrations, landing buffer) and frees it. */
void gdr_verbs_iface_read_free(gdr_verbs_iface_t *am, rndv_read_t *rr, int keep_landing)
{
    for (uint32_t k = 0; k < rr->nseg; k++) {
        if (rr->dst[k].reg != NULL)
            gdr_verbs_rcache_put(am->rcache, rr->dst[k].reg);
    }
    if (rr->land != NULL) {
        if (keep_landing)
            gdr_verbs_iface_landing_put(am, rr->land);
        else
            gdr_verbs_iface_landing_release(rr->land);
    }
    free(rr->am_hdr);
    free(rr);
}

static int read_complete(gdr_verbs_iface_t *am, rndv_read_t *rr);

/* Starts reading a payload, or queues it for one of its peer's read slots. */
static int queue_read(gdr_verbs_iface_t *am, rndv_read_t *rr)
{
    ep_t *ep = &am->eps[rr->peer];
    if (rr->size == 0)
        return read_complete(am, rr);   /* taken into memory that holds none of it */
    if (ep->reads_in_flight < am->cfg.max_reads)
        return post_read(am, rr);
    rr->next = NULL;
    if (ep->r_tail)
        ep->r_tail->next = rr;
    else
        ep->r_head = rr;
    ep->r_tail = rr;
    return 0;
}

/* Offers a rendezvous message to ops->rts in its turn: 1 taken (the header was handed
 * up, its payload goes where read_into said), 0 declined, -1 the channel failed. */
static int offer(gdr_verbs_iface_t *am, rndv_read_t *rr, const void *am_hdr, size_t am_hdr_sz)
{
    am->offering = rr;
    int r = am->ops.rts(am->ctx, rr->peer, rr->handler_id, am_hdr, am_hdr_sz,
                        (size_t) rr->data_sz, (gdr_verbs_am_rts_t *) rr);
    am->offering = NULL;
    if (am->failed)
        return -1;
    if ((r == 1) != (rr->placed != 0))
        return fail(am, "a rendezvous message from rank %d was %s without saying where its "
                    "payload goes (gdr_verbs_am_read_into once, inside ops->rts)", rr->peer,
                    r == 1 ? "taken" : "declined");
    if (r == 1) {
        rr->taken = 1;
        taken_link(am, rr);
    }
    return r == 1;
}

int gdr_verbs_am_read_into(gdr_verbs_iface_t *am, gdr_verbs_am_rts_t *rts, const struct iovec *segs,
                           int nsegs, uint64_t device_id, uint64_t cookie)
{
    rndv_read_t *rr = (rndv_read_t *) rts;
    if (rr == NULL || rr != am->offering || rr->placed || nsegs < 0
        || nsegs > GDR_VERBS_AM_READ_SEGS_MAX)
        return fail(am, "gdr_verbs_am_read_into: not inside ops->rts for this message, "
                    "called twice, or %d pieces (at most %d)", nsegs,
                    GDR_VERBS_AM_READ_SEGS_MAX);
    rr->placed = 1;
    rr->cookie = cookie;
    rr->size = rr->data_sz;
    if (nsegs == 0)
        return 0;               /* a landing buffer, at the first read */
    uint64_t total = 0;
    for (int k = 0; k < nsegs && total < rr->data_sz; k++) {
        uint64_t n = segs[k].iov_len;
        if (n > rr->data_sz - total)
            n = rr->data_sz - total;
        if (n == 0)
            continue;
        gdr_verbs_rcache_entry_t *e = gdr_verbs_rcache_get_tagged(am->rcache, segs[k].iov_base,
                                                                  (size_t) n, device_id);
        if (e == NULL) {
            /* memory the NIC will not take (locked-memory limit, a mapping it cannot pin):
             * the payload lands instead, and read_done hands it over to copy */
            for (uint32_t j = 0; j < rr->nseg; j++)
                gdr_verbs_rcache_put(am->rcache, rr->dst[j].reg);
            rr->nseg = 0;
            am->stats.rndv_reg_fallbacks++;
            return 0;
        }
        rr->dst[rr->nseg++] = (read_seg_t) {.addr = segs[k].iov_base,.len = n,
            .lkey = e->lkey,.reg = e };
        total += n;
    }
    rr->size = total;
    return 0;
}

/* Hands up, in order, every message at the head of the queue that is complete, and
 * offers each rendezvous message that waits for its turn at ops->rts. */
static int drain_inbound(gdr_verbs_iface_t *am, int peer)
{
    ep_t *ep = &am->eps[peer];
    while (ep->in_head != NULL) {
        inbound_t *in = ep->in_head;
        rndv_read_t *rr = in->rr;
        if (rr != NULL && rr->offer) {
            rr->offer = 0;
            int r = offer(am, rr, rr->am_hdr, rr->am_hdr_sz);
            if (r < 0)
                return -1;
            if (r == 0) {
                /* declined: it lands now, and holds the queue until it has */
                if (queue_read(am, rr) != 0)
                    return -1;
                break;
            }
            pop_inbound(ep);
            free(in);
            free(rr->am_hdr);
            rr->am_hdr = NULL;
            if (queue_read(am, rr) != 0)
                return -1;
            continue;
        }
        if (rr != NULL && !rr->done)
            break;
        pop_inbound(ep);
        if (rr != NULL) {
            am->ops.deliver(am->ctx, peer, rr->handler_id, rr->am_hdr, rr->am_hdr_sz,
                            rr->land->addr, (size_t) rr->size);
            gdr_verbs_iface_read_free(am, rr, 1);
        } else {
            am->ops.deliver(am->ctx, peer, in->handler_id, in->am_hdr, in->am_hdr_sz,
                            in->am_hdr + gdr_verbs_wire_pad8(in->am_hdr_sz), in->data_sz);
            free(in->am_hdr);
        }
        free(in);
    }
    return 0;
}

/* An eager message arriving behind an unfinished rendezvous one waits, copied. */
int gdr_verbs_iface_defer_eager(gdr_verbs_iface_t *am, int peer, const gdr_verbs_msg_t *m)
{
    inbound_t *in = calloc(1, sizeof(*in));
    size_t off = gdr_verbs_wire_pad8(m->am_hdr_sz);
    if (in == NULL || (in->am_hdr = malloc(off + (size_t) m->data_sz + 1)) == NULL) {
        free(in);
        return fail(am, "out of memory holding a message from rank %d in order", peer);
    }
    in->handler_id = m->handler_id;
    in->am_hdr_sz = m->am_hdr_sz;
    in->data_sz = (size_t) m->data_sz;
    if (m->am_hdr_sz)
        memcpy(in->am_hdr, m->am_hdr, m->am_hdr_sz);
    if (m->data_sz)
        memcpy(in->am_hdr + off, m->data, (size_t) m->data_sz);
    append_inbound(&am->eps[peer], in);
    return 0;
}

int gdr_verbs_iface_start_read(gdr_verbs_iface_t *am, int peer, const gdr_verbs_msg_t *m)
{
    ep_t *ep = &am->eps[peer];

    if (m->data_sz == 0 || m->data_sz > RNDV_MAX)
        return fail(am, "rank %d announced a %llu-byte rendezvous payload (limit %llu)", peer,
                    (unsigned long long) m->data_sz, (unsigned long long) RNDV_MAX);
    rndv_read_t *rr = calloc(1, sizeof(*rr));
    if (rr == NULL)
        return fail(am, "out of memory receiving from rank %d", peer);
    rr->kind = WR_READ;
    rr->peer = peer;
    rr->handler_id = m->handler_id;
    rr->rts = m->rts;
    rr->data_sz = rr->size = m->data_sz;
    am->reads_active++;
    int wanted = am->ops.rts != NULL
        && (am->ops.rts_wanted == NULL || am->ops.rts_wanted(am->ctx, m->handler_id));
    if (wanted && ep->in_head == NULL) {
        /* its turn already: the upper layer says where the payload goes before any of it
         * is read */
        int r = offer(am, rr, m->am_hdr, m->am_hdr_sz);
        if (r < 0) {
            am->reads_active--;
            gdr_verbs_iface_read_free(am, rr, 0);
            return -1;
        }
        if (r == 1)
            return queue_read(am, rr);
        wanted = 0;
    }
    rr->am_hdr_sz = m->am_hdr_sz;
    rr->am_hdr = malloc(m->am_hdr_sz ? m->am_hdr_sz : 1);
    inbound_t *in = calloc(1, sizeof(*in));
    if (rr->am_hdr == NULL || in == NULL) {
        am->reads_active--;
        free(in);
        free(rr->am_hdr);
        free(rr);
        return fail(am, "out of memory receiving from rank %d", peer);
    }
    if (m->am_hdr_sz)
        memcpy(rr->am_hdr, m->am_hdr, m->am_hdr_sz);
    in->rr = rr;
    append_inbound(ep, in);
    if (wanted) {
        rr->offer = 1;          /* unread until its turn: drain_inbound offers it */
        return 0;
    }
    /* the landing buffer is allocated when the read starts: thousands of waiting
     * announcements must not hold thousands of payload buffers */
    return queue_read(am, rr);
}

/* The whole payload is in: the sender is told, the peer's next waiting read starts, and
 * the payload goes up (taken: read_done; else delivered in order). */
static int read_complete(gdr_verbs_iface_t *am, rndv_read_t *rr)
{
    ep_t *ep = &am->eps[rr->peer];
    gdr_verbs_wire_fin_t fin = {.cookie = rr->rts.cookie };
    int peer = rr->peer, rc;

    if (rr->started)
        ep->reads_in_flight--;
    am->reads_active--;
    am->stats.rndv_recv++;
    if (rr->land != NULL)
        am->stats.rndv_copied_bytes += rr->size;
    else
        am->stats.rndv_zcopy_bytes += rr->size;
    /* the sender's buffer is free as soon as the data is here */
    am->stats.fin_sent++;
    rc = gdr_verbs_iface_send_simple(am, peer, GDR_VERBS_MSG_FIN, 0, NULL, 0, &fin, sizeof(fin), 0);
    if (rc == 0 && ep->r_head != NULL && ep->reads_in_flight < am->cfg.max_reads) {
        rndv_read_t *next = ep->r_head;
        ep->r_head = next->next;
        if (ep->r_head == NULL)
            ep->r_tail = NULL;
        next->next = NULL;
        rc = post_read(am, next);
    }
    if (rr->taken) {
        gdr_verbs_iface_taken_unlink(am, rr);
        am->ops.read_done(am->ctx, rr->cookie, rr->land != NULL ? rr->land->addr : NULL,
                          (size_t) rr->size);
        gdr_verbs_iface_read_free(am, rr, 1);
        return rc;
    }
    rr->done = 1;
    if (drain_inbound(am, peer) != 0)
        rc = -1;
    return rc;
}

int gdr_verbs_iface_finish_read(gdr_verbs_iface_t *am, rndv_read_t *rr)
{
    if (rr->posted < rr->size)
        return post_read(am, rr);       /* a batch landed; reads are ordered: next batch */
    return read_complete(am, rr);
}

int gdr_verbs_iface_finish_send(gdr_verbs_iface_t *am, int peer, uint64_t cookie)
{
    uint32_t idx = (uint32_t) cookie, gen = (uint32_t) (cookie >> 32);
    if (idx >= am->rsend_cap || !am->rsend[idx].in_use || am->rsend[idx].gen != gen
        || am->rsend[idx].peer != peer)
        return fail(am, "rank %d finished a rendezvous transfer that this rank never started "
                    "(cookie %#llx)", peer, (unsigned long long) cookie);
    rndv_send_t *rs = &am->rsend[idx];
    gdr_verbs_rcache_put(am->rcache, rs->reg);
    rs->reg = NULL;
    rs->in_use = 0;
    am->rsend_active--;
    am->ops.rndv_done(am->ctx, rs->user_cookie);
    return 0;
}
