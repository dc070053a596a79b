/* Progress: polls the completion queue, hands each completion to what it belongs to (a
 * received message by its kind, a handshake datagram, a send slot coming back, a read, a
 * probe, a one-sided operation), turns failed ones into the channel's error, then lets
 * the send backlog go; gdr_verbs_am_wait() sleeps on completion events between polls. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* poll, sched_yield */
#endif
#include "gdr_verbs_iface_priv.h"
#include "gdr_verbs_conn.h"
#include "gdr_verbs_credit.h"
#include "gdr_verbs_wire.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#define POLL_BATCH 32

static int on_recv(gdr_verbs_iface_t *am, int peer, recv_buf_t *rb, uint32_t byte_len)
{
    gdr_verbs_msg_t m;
    ep_t *ep = &am->eps[peer];
    gdr_verbs_wire_status_t st = gdr_verbs_wire_parse(rb->addr, byte_len, &m);
    int rc = 0;

    if (st != GDR_VERBS_WIRE_OK)
        return fail(am, "rank %d sent a malformed message (%u bytes): %s", peer, byte_len,
                    gdr_verbs_wire_str(st));
    /* a message over the QP: the peer's side is up, if we did not know yet */
    if (!ep->connected
        && gdr_verbs_iface_conn_do(am, peer, gdr_verbs_conn_on_traffic(&ep->conn)) != 0)
        return -1;
    gdr_verbs_credit_on_returned(&ep->credit, m.credits);
    switch (m.kind) {
        case GDR_VERBS_MSG_EAGER:
            am->stats.eager_recv++;
            if (ep->in_head != NULL)
                rc = gdr_verbs_iface_defer_eager(am, peer, &m);
            else
                am->ops.deliver(am->ctx, peer, m.handler_id, m.am_hdr, m.am_hdr_sz, m.data,
                                (size_t) m.data_sz);
            break;
        case GDR_VERBS_MSG_RTS:
            rc = gdr_verbs_iface_start_read(am, peer, &m);
            break;
        case GDR_VERBS_MSG_FIN:
            rc = gdr_verbs_iface_finish_send(am, peer, m.cookie);
            break;
        case GDR_VERBS_MSG_CREDIT:
            break;
    }
    if (rc != 0)
        return rc;
    if (gdr_verbs_iface_post_recv(am, rb) != 0)
        return -1;
    gdr_verbs_credit_on_reposted(&ep->credit);
    return 0;
}

static int on_completion(gdr_verbs_iface_t *am, const struct ibv_wc *wc)
{
    wr_kind_t kind = *(const wr_kind_t *) (uintptr_t) wc->wr_id;
    int peer;

    switch (kind) {
        case WR_RECV:
            /* a flushed receive of a QP in error names that QP too */
            peer = gdr_verbs_iface_peer_of_qp(am, wc->qp_num);
            if (peer < 0)
                return fail(am, "a message arrived on queue pair %u, which is no peer's",
                            wc->qp_num);
            break;
        case WR_UD_RECV:
            if (wc->status != IBV_WC_SUCCESS)
                return fail(am, "receiving a connection request on %s failed: %s",
                            am->dev->name, ibv_wc_status_str(wc->status));
            return gdr_verbs_iface_on_ud_recv(am, (ud_buf_t *) (uintptr_t) wc->wr_id, wc);
        case WR_UD_SEND:{
                ud_buf_t *b = (ud_buf_t *) (uintptr_t) wc->wr_id;
                b->next_free = am->ud_free;
                am->ud_free = b;
                if (wc->status != IBV_WC_SUCCESS)
                    return fail(am, "sending a connection request on %s failed: %s",
                                am->dev->name, ibv_wc_status_str(wc->status));
                return 0;
            }
        case WR_SEND:{
                send_slot_t *s = (send_slot_t *) (uintptr_t) wc->wr_id;
                peer = s->peer;
                s->next_free = am->free_slots;
                am->free_slots = s;
                break;
            }
        case WR_READ:
            peer = ((rndv_read_t *) (uintptr_t) wc->wr_id)->peer;
            break;
        case WR_PROBE:
            peer = ((probe_t *) (uintptr_t) wc->wr_id)->peer;
            ((probe_t *) (uintptr_t) wc->wr_id)->in_flight = 0;
            break;
        case WR_RMA:
            peer = ((const gdr_verbs_wr_head_t *) (uintptr_t) wc->wr_id)->peer;
            break;
        default:
            return fail(am, "completion with an unknown work request id");
    }
    if (wc->status != IBV_WC_SUCCESS) {
        /* a failed one-sided work request still ends its operation, in error */
        if (kind == WR_RMA && am->rma_cb != NULL)
            (void) am->rma_cb(am->rma_ctx, wc);
        if (wc->status == IBV_WC_WR_FLUSH_ERR && am->eps[peer].failed)
            return 0;           /* the rest of a failed queue pair, already reported */
        ep_failed(am, peer);
        if (is_foreign(am, peer))
            return gdr_verbs_iface_foreign_lost(am, peer, ibv_wc_status_str(wc->status));
        if (wc->status == IBV_WC_REM_ACCESS_ERR)
            return fail(am, "rank %d refused a one-sided access (%s, status %d) on %s: the "
                        "window key is stale (window freed or region detached) or the range "
                        "is outside the registered window", peer,
                        ibv_wc_status_str(wc->status), (int) wc->status, am->dev->name);
        return fail(am, "the connection to rank %d failed: %s (status %d, vendor error %#x) on "
                    "%s: rank %d died or the network path to it broke", peer,
                    ibv_wc_status_str(wc->status), (int) wc->status, wc->vendor_err,
                    am->dev->name, peer);
    }
    if (kind == WR_RMA)
        return am->rma_cb != NULL ? am->rma_cb(am->rma_ctx, wc) :
            fail(am, "a one-sided completion arrived with no RMA engine attached");
    if (kind == WR_RECV)
        return on_recv(am, peer, (recv_buf_t *) (uintptr_t) wc->wr_id, wc->byte_len);
    if (kind == WR_READ)
        return gdr_verbs_iface_finish_read(am, (rndv_read_t *) (uintptr_t) wc->wr_id);
    return 0;
}

int gdr_verbs_am_progress(gdr_verbs_iface_t *am, int *progressed)
{
    struct ibv_wc wc[POLL_BATCH];

    *progressed = 0;
    if (am->failed)
        return -1;
    if (rma_held_out(am, -1) != 0)
        return -1;
    int n = ibv_poll_cq(am->cq, POLL_BATCH, wc);
    if (n < 0)
        return fail(am, "polling the completion queue of %s failed", am->dev->name);
    for (int i = 0; i < n; i++) {
        if (on_completion(am, &wc[i]) != 0)
            return -1;
    }
    if (n > 0) {
        *progressed = 1;
        am->heard = 1;
    } else {
        am->stats.empty_polls++;
        if (++am->quiet_polls >= am->clock_every && gdr_verbs_iface_busy_look(am) != 0)
            return -1;
    }
    if (gdr_verbs_iface_conn_timers(am) != 0)
        return -1;
    /* queues only grow or need credit updates after traffic; skip the scan otherwise */
    if (n > 0 || am->queued > 0)
        return gdr_verbs_iface_flush(am, progressed);
    return 0;
}

int gdr_verbs_am_wait(gdr_verbs_iface_t *am, int timeout_us, int *progressed)
{
    *progressed = 0;
    if (am->failed)
        return -1;
    if (am->events == NULL) {
        sched_yield();
        return gdr_verbs_am_progress(am, progressed);
    }
    /* arm first, then look once more: a completion that lands after the look raises
     * the event we sleep on, so none is missed */
    if (!am->armed) {
        if (ibv_req_notify_cq(am->cq, 0) != 0)
            return fail(am, "arming completion events on %s failed: %s", am->dev->name,
                        strerror(errno));
        am->armed = 1;
    }
    if (gdr_verbs_am_progress(am, progressed) != 0)
        return -1;
    if (*progressed)
        return 0;
    struct pollfd pfd = {.fd = am->events->fd,.events = POLLIN };
    int rc = poll(&pfd, 1, timeout_us > 0 ? (timeout_us + 999) / 1000 : 0);
    if (rc < 0 && errno != EINTR)
        return fail(am, "waiting for completions on %s failed: %s", am->dev->name,
                    strerror(errno));
    if (rc > 0) {
        struct ibv_cq *cq;
        void *cq_ctx;
        if (ibv_get_cq_event(am->events, &cq, &cq_ctx) != 0)
            return fail(am, "reading a completion event of %s failed: %s", am->dev->name,
                        strerror(errno));
        ibv_ack_cq_events(cq, 1);
        am->armed = 0;
        am->stats.wakeups++;
    } else if (rc == 0) {
        struct timespec now;
        if (gdr_verbs_iface_idle_look(am, &now) != 0)
            return -1;          /* slept its whole timeout: as quiet as it gets */
    }
    am->stats.sleeps++;
    return gdr_verbs_am_progress(am, progressed);
}
