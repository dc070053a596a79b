/* Connecting a peer: RC queue pairs are made the first time either side needs one, by a
 * handshake of datagrams over a UD queue pair (REQ, REP, RTU; the state machine is
 * gdr_verbs_conn.c, this file carries out what it asks: makes and connects the queue
 * pair, sends the datagrams, runs the retransmission and timeout timers), plus the
 * loopback queue pair, connected to itself. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* posix_memalign, clock_gettime */
#endif
#include "gdr_verbs_iface_priv.h"
#include "gdr_verbs_card.h"
#include "gdr_verbs_conn.h"
#include "gdr_verbs_qp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t) t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int ud_post_recv(gdr_verbs_iface_t *am, ud_buf_t *b)
{
    struct ibv_sge sge = {.addr = (uintptr_t) b->addr,.length = UD_BUF_BYTES,
        .lkey = am->ud_mr->lkey };
    struct ibv_recv_wr wr = {.wr_id = (uintptr_t) b,.sg_list = &sge,.num_sge = 1 }, *bad;
    if (ibv_post_recv(am->ud, &wr, &bad) != 0)
        return fail(am, "posting a connection-request buffer on %s failed: %s", am->dev->name,
                    strerror(errno));
    return 0;
}

/* The UD queue pair and its buffers. */
int gdr_verbs_iface_ud_start(gdr_verbs_iface_t *am, char *why, size_t why_len)
{
    am->ud = gdr_verbs_qp_create_ud(am->dev, am->cq, UD_SEND_COUNT, UD_RECV_COUNT, why, why_len);
    if (am->ud == NULL)
        return -1;
    size_t bytes = (size_t) (UD_RECV_COUNT + UD_SEND_COUNT) * UD_BUF_BYTES;
    if (posix_memalign((void **) &am->ud_mem, 4096, bytes) != 0
        || (am->ud_mr = ibv_reg_mr(am->dev->pd, am->ud_mem, bytes, IBV_ACCESS_LOCAL_WRITE)) == NULL) {
        snprintf(why, why_len, "registering %zu bytes of connection-request buffers on %s "
                 "failed: %s (raise ulimit -l)", bytes, am->dev->name, strerror(errno));
        return -1;
    }
    am->stats.pinned_bytes += bytes;
    for (int i = 0; i < UD_RECV_COUNT + UD_SEND_COUNT; i++) {
        ud_buf_t *b = &am->ud_bufs[i];
        b->addr = am->ud_mem + (size_t) i * UD_BUF_BYTES;
        if (i < UD_RECV_COUNT) {
            b->kind = WR_UD_RECV;
            if (ud_post_recv(am, b) != 0) {
                snprintf(why, why_len, "%s", am->error);
                return -1;
            }
        } else {
            b->kind = WR_UD_SEND;
            b->next_free = am->ud_free;
            am->ud_free = b;
        }
    }
    return 0;
}

/* The address handle for peer's handshake datagrams: 1 made, 0 the peer's address did
 * not resolve yet (under load a neighbour can miss the kernel's 1-s ARP wait: tried again
 * at the handshake's next datagram either way, until MPIR_CVAR_CH4_GDR_CONNECT_TIMEOUT),
 * -1 failed. */
static int peer_ah(gdr_verbs_iface_t *am, int peer)
{
    ep_t *ep = &am->eps[peer];
    char why[256];
    int unresolved;
    if (ep->ah != NULL)
        return 1;
    ep->ah = gdr_verbs_qp_ah(am->dev, &ep->card, &unresolved, why, sizeof(why));
    if (ep->ah != NULL)
        return 1;
    if (!unresolved)
        return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d: %s", peer, why);
    am->stats.address_retries++;
    return 0;
}

/* One handshake datagram to peer.  With no send buffer free, or the peer's address not
 * resolved yet, it is not sent: the handshake's retransmission makes up for it, as for a
 * lost one. */
static int ud_send(gdr_verbs_iface_t *am, int peer, gdr_verbs_conn_msg_kind_t kind)
{
    ep_t *ep = &am->eps[peer];
    int have_ah = peer_ah(am, peer);
    if (have_ah <= 0)
        return have_ah;
    ud_buf_t *b = am->ud_free;
    if (b == NULL)
        return 0;
    gdr_verbs_conn_msg_t m = {.kind = kind,.src_rank = (uint32_t) am->rank,
        .qpn = ep->qp->qp_num,.nranks = (uint32_t) am->nranks,.job = am->job };
    gdr_verbs_am_card(am, m.card);
    gdr_verbs_conn_msg_encode(&m, b->addr);
    struct ibv_sge sge = {.addr = (uintptr_t) b->addr,.length = GDR_CONN_WIRE_BYTES,
        .lkey = am->ud_mr->lkey };
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t) b;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ep->ah;
    wr.wr.ud.remote_qpn = ep->card.ud_qpn;
    wr.wr.ud.remote_qkey = GDR_VERBS_UD_QKEY;
    if (ibv_post_send(am->ud, &wr, &bad) != 0)
        return fail(am, "sending a connection request to rank %d failed: %s", peer,
                    strerror(errno));
    am->ud_free = b->next_free;
    am->stats.handshakes_sent++;
    return 0;
}

static gdr_verbs_qp_caps_t rc_caps(const gdr_verbs_iface_t *am)
{
    gdr_verbs_qp_caps_t caps = {
        .max_send_wr = am->qp_send_wr,
        .max_inline = 128,
        .max_send_sge = 16,     /* one-sided gathers and scatters (gdr_verbs_rma_writev) */
    };
    return caps;
}

/* peer's RC queue pair, in INIT, its receives from the shared queue (grown for it). */
static int make_qp(gdr_verbs_iface_t *am, int peer)
{
    ep_t *ep = &am->eps[peer];
    char why[256];
    if (gdr_verbs_iface_grow_cq(am) != 0)
        return -1;
    gdr_verbs_qp_caps_t c = rc_caps(am);
    ep->qp = gdr_verbs_qp_create(am->dev, am->cq, am->srq, &c, why, sizeof(why));
    if (ep->qp == NULL)
        return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d: %s", peer, why);
    if (am->nactive == 0 || c.max_inline < am->hot.max_inline)
        am->hot.max_inline = c.max_inline;
    if (c.max_send_sge < am->max_sge)
        am->max_sge = c.max_send_sge;
    if (gdr_verbs_iface_add_active(am, peer, ep->qp->qp_num) != 0)
        return -1;
    return gdr_verbs_iface_grow_srq(am);
}

/* Carries out what the handshake asks for. */
int gdr_verbs_iface_conn_do(gdr_verbs_iface_t *am, int peer, unsigned todo)
{
    ep_t *ep = &am->eps[peer];
    char why[256];
    if ((todo & GDR_CONN_DO_CREATE_QP) && make_qp(am, peer) != 0)
        return -1;
    if ((todo & GDR_CONN_DO_CREATE_QP) && !(todo & GDR_CONN_DO_READY))
        am->connecting++;
    if ((todo & GDR_CONN_DO_CONNECT_QP)
        && gdr_verbs_qp_connect(ep->qp, am->dev, &ep->card, ep->conn.remote_qpn,
                                am->cfg.qp_timeout, why, sizeof(why)) != 0)
        return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d: %s", peer, why);
    if ((todo & GDR_CONN_DO_SEND_REQ) && ud_send(am, peer, GDR_CONN_MSG_REQ) != 0)
        return -1;
    if ((todo & GDR_CONN_DO_SEND_REP) && ud_send(am, peer, GDR_CONN_MSG_REP) != 0)
        return -1;
    if ((todo & GDR_CONN_DO_SEND_RTU) && ud_send(am, peer, GDR_CONN_MSG_RTU) != 0)
        return -1;
    if (todo & GDR_CONN_DO_READY) {
        ep_connected(am, peer);
        am->connecting--;
        am->stats.connections++;
    }
    if (todo & GDR_CONN_DO_FAIL) {
        am->connecting--;
        if (is_foreign(am, peer)) {
            ep_failed(am, peer);
            return gdr_verbs_iface_foreign_lost(am, peer, ep->conn.why);
        }
        /* any other address failure failed the peer at once, and a peer's datagrams are
         * answered only once its address resolved: no address handle means unresolved */
        if (ep->ah == NULL)
            return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d failed: its address "
                                          "did not resolve within %u s (%s: no ARP or "
                                          "neighbour answer; check that its interface is up "
                                          "and reachable from here, or raise "
                                          "MPIR_CVAR_CH4_GDR_CONNECT_TIMEOUT)", peer,
                                          am->cfg.connect_timeout_ms / 1000, am->dev->name);
        return gdr_verbs_am_fail_peer(am, peer, "connecting to rank %d failed: %s within %u s "
                                      "(is it alive, and calling MPI?  Raise "
                                      "MPIR_CVAR_CH4_GDR_CONNECT_TIMEOUT if ranks compute "
                                      "that long without MPI calls)", peer, ep->conn.why,
                                      am->cfg.connect_timeout_ms / 1000);
    }
    return 0;
}

/* The loopback QP: connected to itself, no handshake (one-sided atomics on our own
 * window; messages to ourselves too, if any). */
static int connect_self(gdr_verbs_iface_t *am)
{
    ep_t *ep = &am->eps[am->rank];
    char why[256];
    if (make_qp(am, am->rank) != 0)
        return -1;
    if (gdr_verbs_qp_connect(ep->qp, am->dev, &ep->card, ep->qp->qp_num, am->cfg.qp_timeout,
                             why, sizeof(why)) != 0)
        return gdr_verbs_am_fail_peer(am, am->rank, "the loopback queue pair: %s", why);
    ep->conn.state = GDR_CONN_READY;
    ep_connected(am, am->rank);
    return 0;
}

int gdr_verbs_am_want_qp(gdr_verbs_iface_t *am, int peer)
{
    if (peer < 0 || peer >= am->npeers || !am->eps[peer].reach || !am->eps[peer].has_card) {
        return fail(am, "no path to rank %d through %s for a queue pair", peer, am->dev->name);
    }
    ep_t *ep = &am->eps[peer];
    if (ep->failed || am->failed)
        return -1;
    if (ep->connected)
        return 1;
    if (peer == am->rank)
        return connect_self(am) == 0 ? 1 : -1;
    if (ep->conn.state == GDR_CONN_IDLE
        && gdr_verbs_iface_conn_do(am, peer, gdr_verbs_conn_start(&ep->conn, now_ns())) != 0)
        return -1;
    return ep->connected;
}

/* A handshake datagram arrived (after the GRH): checked, then handed to its peer's
 * handshake.  Strays (another job, a garbled datagram) are dropped. */
int gdr_verbs_iface_on_ud_recv(gdr_verbs_iface_t *am, ud_buf_t *b, const struct ibv_wc *wc)
{
    gdr_verbs_conn_msg_t m;
    int rc = 0;
    int peer = -1;
    if (wc->byte_len >= UD_GRH_BYTES
        && gdr_verbs_conn_msg_decode(b->addr + UD_GRH_BYTES, wc->byte_len - UD_GRH_BYTES,
                                     &m) == 0) {
        if (m.job == am->job && m.nranks == (uint32_t) am->nranks
            && m.src_rank < (uint32_t) am->nranks && (int) m.src_rank != am->rank)
            peer = gdr_verbs_iface_same_job_from_msg(am, &m);
        else if (m.job != am->job && am->job != 0)
            peer = gdr_verbs_iface_foreign_from_msg(am, &m);
    }
    if (peer >= 0) {
        ep_t *ep = &am->eps[peer];
        /* every answer needs the peer's address, and the queue pair's connection its MAC:
         * while that does not resolve the datagram is dropped, and the peer repeats it */
        int have_ah = 0;
        if (ep->reach && ep->has_card && ep->card.ud_qpn == wc->src_qp && !ep->failed)
            have_ah = peer_ah(am, peer);
        if (have_ah < 0)
            rc = -1;
        else if (have_ah > 0)
            rc = gdr_verbs_iface_conn_do(am, peer, gdr_verbs_conn_on_msg(&ep->conn, m.kind,
                                                                         m.qpn, now_ns()));
    }
    if (rc == 0)
        rc = ud_post_recv(am, b);
    return rc;
}

/* Retransmissions and timeouts of the handshakes under way.  The clock is read every
 * few calls only: under User-Mode Linux (maint/rxe) a clock read is a system call. */
int gdr_verbs_iface_conn_timers(gdr_verbs_iface_t *am)
{
    if (am->connecting == 0 || ++am->timer_polls < 64)
        return 0;
    am->timer_polls = 0;
    int64_t now = now_ns(), timeout = (int64_t) am->cfg.connect_timeout_ms * 1000000LL;
    for (int k = 0; k < am->nactive; k++) {
        int peer = am->active[k];
        ep_t *ep = &am->eps[peer];
        if (ep->failed || ep->connected)
            continue;
        if (gdr_verbs_iface_conn_do(am, peer,
                                    gdr_verbs_conn_on_timer(&ep->conn, now, timeout)) != 0)
            return -1;
    }
    return 0;
}

int gdr_verbs_am_connect_peer(gdr_verbs_iface_t *am, int peer)
{
    return gdr_verbs_am_want_qp(am, peer);
}
