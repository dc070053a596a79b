#include "gdr_verbs_conn.h"
#include "gdr_verbs_le.h"

#include <string.h>

static unsigned retry_after(gdr_verbs_conn_t *c, int64_t now_ns)
{
    int64_t wait = GDR_CONN_RETRY_FIRST_NS;
    for (uint16_t i = 1; i < c->sends && wait < GDR_CONN_RETRY_MOST_NS; i++)
        wait *= 2;
    c->retry_ns = now_ns + (wait < GDR_CONN_RETRY_MOST_NS ? wait : GDR_CONN_RETRY_MOST_NS);
    return 0;
}

static unsigned enter(gdr_verbs_conn_t *c, gdr_verbs_conn_state_t s, int64_t now_ns)
{
    c->state = (uint8_t) s;
    c->sends = 1;
    if (s == GDR_CONN_READY)
        c->retry_ns = 0;
    else
        retry_after(c, now_ns);
    return 0;
}

unsigned gdr_verbs_conn_start(gdr_verbs_conn_t *c, int64_t now_ns)
{
    if (c->state != GDR_CONN_IDLE)
        return 0;
    c->initiated = 1;
    c->started_ns = now_ns;
    enter(c, GDR_CONN_REQ_SENT, now_ns);
    return GDR_CONN_DO_CREATE_QP | GDR_CONN_DO_SEND_REQ;
}

unsigned gdr_verbs_conn_on_msg(gdr_verbs_conn_t *c, gdr_verbs_conn_msg_kind_t kind,
                               uint32_t remote_qpn, int64_t now_ns)
{
    /* a datagram naming another QP than the one we connected to is not from this
     * pair's handshake (a stray or a stale copy): ignored */
    if (remote_qpn == 0 || (c->remote_qpn != 0 && remote_qpn != c->remote_qpn))
        return 0;
    switch (kind) {
        case GDR_CONN_MSG_REQ:
            switch (c->state) {
                case GDR_CONN_IDLE:
                    c->remote_qpn = remote_qpn;
                    c->started_ns = now_ns;
                    enter(c, GDR_CONN_REP_SENT, now_ns);
                    return GDR_CONN_DO_CREATE_QP | GDR_CONN_DO_CONNECT_QP | GDR_CONN_DO_SEND_REP;
                case GDR_CONN_REQ_SENT:        /* both asked at once: answer as responder */
                    c->remote_qpn = remote_qpn;
                    enter(c, GDR_CONN_REP_SENT, now_ns);
                    return GDR_CONN_DO_CONNECT_QP | GDR_CONN_DO_SEND_REP;
                case GDR_CONN_REP_SENT:
                case GDR_CONN_READY:           /* our REP was lost, or this is a late copy */
                    return GDR_CONN_DO_SEND_REP;
                default:
                    return 0;
            }
        case GDR_CONN_MSG_REP:
            switch (c->state) {
                case GDR_CONN_REQ_SENT:
                    c->remote_qpn = remote_qpn;
                    enter(c, GDR_CONN_READY, now_ns);
                    return GDR_CONN_DO_CONNECT_QP | GDR_CONN_DO_SEND_RTU | GDR_CONN_DO_READY;
                case GDR_CONN_REP_SENT:        /* the peer answered our REQ too: its QP is up */
                    enter(c, GDR_CONN_READY, now_ns);
                    return GDR_CONN_DO_SEND_RTU | GDR_CONN_DO_READY;
                case GDR_CONN_READY:           /* our RTU was lost */
                    return GDR_CONN_DO_SEND_RTU;
                default:
                    return 0;
            }
        case GDR_CONN_MSG_RTU:
            if (c->state != GDR_CONN_REP_SENT)
                return 0;
            enter(c, GDR_CONN_READY, now_ns);
            return GDR_CONN_DO_READY;
    }
    return 0;
}

unsigned gdr_verbs_conn_on_traffic(gdr_verbs_conn_t *c)
{
    if (c->state != GDR_CONN_REP_SENT)
        return 0;
    enter(c, GDR_CONN_READY, 0);
    return GDR_CONN_DO_READY;
}

unsigned gdr_verbs_conn_on_timer(gdr_verbs_conn_t *c, int64_t now_ns, int64_t timeout_ns)
{
    if (c->state != GDR_CONN_REQ_SENT && c->state != GDR_CONN_REP_SENT)
        return 0;
    if (timeout_ns > 0 && now_ns - c->started_ns >= timeout_ns) {
        c->why = c->state == GDR_CONN_REQ_SENT ? "it did not answer the connection request"
            : "it did not confirm the connection it asked for";
        c->state = GDR_CONN_FAILED;
        c->retry_ns = 0;
        return GDR_CONN_DO_FAIL;
    }
    if (c->retry_ns == 0 || now_ns < c->retry_ns)
        return 0;
    c->sends++;
    retry_after(c, now_ns);
    return c->state == GDR_CONN_REQ_SENT ? GDR_CONN_DO_SEND_REQ : GDR_CONN_DO_SEND_REP;
}

void gdr_verbs_conn_msg_encode(const gdr_verbs_conn_msg_t *m, void *buf)
{
    uint8_t *p = buf;
    p[0] = 'g';
    p[1] = 'C';
    p[2] = GDR_CONN_WIRE_VERSION;
    p[3] = (uint8_t) m->kind;
    gdr_le_put32(p + 4, m->src_rank);
    gdr_le_put32(p + 8, m->qpn);
    gdr_le_put32(p + 12, m->nranks);
    gdr_le_put32(p + 16, (uint32_t) m->job);
    gdr_le_put32(p + 20, (uint32_t) (m->job >> 32));
    memcpy(p + GDR_CONN_WIRE_HDR_BYTES, m->card, GDR_VERBS_CARD_BYTES);
}

int gdr_verbs_conn_msg_decode(const void *buf, size_t len, gdr_verbs_conn_msg_t *m)
{
    const uint8_t *p = buf;
    if (len < GDR_CONN_WIRE_BYTES || p[0] != 'g' || p[1] != 'C' || p[2] != GDR_CONN_WIRE_VERSION
        || p[3] < GDR_CONN_MSG_REQ || p[3] > GDR_CONN_MSG_RTU)
        return -1;
    m->kind = (gdr_verbs_conn_msg_kind_t) p[3];
    m->src_rank = gdr_le_get32(p + 4);
    m->qpn = gdr_le_get32(p + 8);
    m->nranks = gdr_le_get32(p + 12);
    m->job = (uint64_t) gdr_le_get32(p + 16) | ((uint64_t) gdr_le_get32(p + 20) << 32);
    memcpy(m->card, p + GDR_CONN_WIRE_HDR_BYTES, GDR_VERBS_CARD_BYTES);
    /* QP numbers are 24 bits, and 0 is never an RC queue pair */
    return m->qpn == 0 || m->qpn > 0xffffff ? -1 : 0;
}

const char *gdr_verbs_conn_state_str(gdr_verbs_conn_state_t s)
{
    switch (s) {
        case GDR_CONN_IDLE:
            return "idle";
        case GDR_CONN_REQ_SENT:
            return "request sent";
        case GDR_CONN_REP_SENT:
            return "answered";
        case GDR_CONN_READY:
            return "ready";
        case GDR_CONN_FAILED:
            return "failed";
    }
    return "?";
}
