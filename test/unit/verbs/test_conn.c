/* The lazy-connection handshake (gdr_verbs_conn): two sides driven against each other
 * through a simulated datagram network that can lose, repeat and reorder, checking
 * that both end READY connected to each other's QP, that a side sends only once it
 * knows the other's QP is up, that retransmission backs off, and the wire format. */
#include <string.h>
#include "gdr_unit.h"
#include "verbs/gdr_verbs_conn.h"

#define MS 1000000LL

typedef struct side {
    gdr_verbs_conn_t c;
    uint32_t my_qpn;
    int qp_made, connected_to;  /* connected_to: the remote QPN our QP was connected to */
    int ready_events;
    int sent_while_peer_down;   /* became READY while the other's QP was not connected */
} side_t;

/* datagrams in flight: kind and the sender's qpn, to side `to` */
typedef struct dgram {
    int to;
    gdr_verbs_conn_msg_kind_t kind;
    uint32_t qpn;
} dgram_t;

static dgram_t net[256];
static int n_net;

static void send_to(int to, gdr_verbs_conn_msg_kind_t kind, uint32_t qpn)
{
    if (n_net < 256)
        net[n_net++] = (dgram_t) {.to = to,.kind = kind,.qpn = qpn };
}

static void act(side_t *s, side_t *sides, int me, unsigned a)
{
    if (a & GDR_CONN_DO_CREATE_QP) {
        GDR_CHECK(!s->qp_made, "side %d: QP created once", me);
        s->qp_made = 1;
    }
    if (a & GDR_CONN_DO_CONNECT_QP) {
        GDR_CHECK(s->qp_made && s->connected_to == 0, "side %d: QP connected once, after "
                  "creation", me);
        s->connected_to = (int) s->c.remote_qpn;
    }
    if (a & GDR_CONN_DO_SEND_REQ)
        send_to(1 - me, GDR_CONN_MSG_REQ, s->my_qpn);
    if (a & GDR_CONN_DO_SEND_REP)
        send_to(1 - me, GDR_CONN_MSG_REP, s->my_qpn);
    if (a & GDR_CONN_DO_SEND_RTU)
        send_to(1 - me, GDR_CONN_MSG_RTU, s->my_qpn);
    if (a & GDR_CONN_DO_READY) {
        s->ready_events++;
        if (sides[1 - me].connected_to != (int) s->my_qpn)
            s->sent_while_peer_down = 1;
    }
}

/* Runs the network until quiet: each step delivers one datagram, picked by the seed
 * (reordering); `lose` in 1/8ths drops, `dup` repeats.  Timers fire every 10 ms. */
static void run(side_t *sides, unsigned seed, int lose, int dup, int64_t *now)
{
    for (int step = 0; step < 20000; step++) {
        if (sides[0].c.state == GDR_CONN_READY && sides[1].c.state == GDR_CONN_READY && n_net == 0)
            return;
        seed = seed * 1103515245u + 12345u;
        if (n_net > 0 && (seed >> 16) % 4 != 0) {
            int k = (int) ((seed >> 8) % (unsigned) n_net);
            dgram_t d = net[k];
            net[k] = net[--n_net];
            seed = seed * 1103515245u + 12345u;
            if ((int) ((seed >> 16) % 8) < lose)
                continue;
            if ((int) ((seed >> 20) % 8) < dup)
                send_to(d.to, d.kind, d.qpn);
            side_t *s = &sides[d.to];
            act(s, sides, d.to, gdr_verbs_conn_on_msg(&s->c, d.kind, d.qpn, *now));
        } else {
            *now += 10 * MS;
            for (int i = 0; i < 2; i++)
                act(&sides[i], sides, i, gdr_verbs_conn_on_timer(&sides[i].c, *now, 0));
        }
    }
}

static void check_pair(side_t *s, const char *what)
{
    GDR_CHECK(s[0].c.state == GDR_CONN_READY && s[1].c.state == GDR_CONN_READY,
              "%s: both ready (%s, %s)", what, gdr_verbs_conn_state_str(s[0].c.state),
              gdr_verbs_conn_state_str(s[1].c.state));
    GDR_CHECK(s[0].connected_to == (int) s[1].my_qpn && s[1].connected_to == (int) s[0].my_qpn,
              "%s: each connected to the other's QP", what);
    GDR_CHECK(s[0].ready_events == 1 && s[1].ready_events == 1, "%s: ready once each (%d, %d)",
              what, s[0].ready_events, s[1].ready_events);
    GDR_CHECK(!s[0].sent_while_peer_down && !s[1].sent_while_peer_down,
              "%s: nobody ready before the other's QP was connected", what);
}

static void reset(side_t *s)
{
    memset(s, 0, 2 * sizeof(*s));
    s[0].my_qpn = 0x111;
    s[1].my_qpn = 0x222;
    n_net = 0;
}

int main(void)
{
    side_t s[2];
    int64_t now = 1000 * MS;

    /* one side starts, a perfect network */
    reset(s);
    act(&s[0], s, 0, gdr_verbs_conn_start(&s[0].c, now));
    GDR_CHECK(s[0].c.state == GDR_CONN_REQ_SENT && n_net == 1 && net[0].kind == GDR_CONN_MSG_REQ,
              "start: a REQ goes out");
    GDR_CHECK(gdr_verbs_conn_start(&s[0].c, now) == 0, "a second start does nothing");
    act(&s[1], s, 1, gdr_verbs_conn_on_msg(&s[1].c, net[0].kind, net[0].qpn, now));
    n_net = 0;
    GDR_CHECK(s[1].c.state == GDR_CONN_REP_SENT && s[1].ready_events == 0,
              "responder: answered, not yet sending (the initiator's QP is not up)");
    act(&s[0], s, 0, gdr_verbs_conn_on_msg(&s[0].c, GDR_CONN_MSG_REP, s[1].my_qpn, now));
    GDR_CHECK(s[0].c.state == GDR_CONN_READY, "initiator: ready on REP");
    GDR_CHECK(gdr_verbs_conn_on_traffic(&s[1].c) == GDR_CONN_DO_READY,
              "responder: ready on the first message over the QP");
    s[1].ready_events++;
    check_pair(s, "one side, no loss");

    /* both start at once, crossing REQs */
    reset(s);
    act(&s[0], s, 0, gdr_verbs_conn_start(&s[0].c, now));
    act(&s[1], s, 1, gdr_verbs_conn_start(&s[1].c, now));
    run(s, 7, 0, 0, &now);
    check_pair(s, "simultaneous");

    /* many seeds, with loss, duplicates and reordering, one or both starting */
    int bad = 0;
    for (unsigned seed = 1; seed <= 400; seed++) {
        reset(s);
        act(&s[0], s, 0, gdr_verbs_conn_start(&s[0].c, now));
        if (seed % 2)
            act(&s[1], s, 1, gdr_verbs_conn_start(&s[1].c, now));
        run(s, seed, (int) (seed % 4), (int) (seed % 3), &now);
        /* an RTU lost for good leaves the responder answered; its REP retransmission
         * brings another RTU: run() ends only when both are ready */
        bad += !(s[0].c.state == GDR_CONN_READY && s[1].c.state == GDR_CONN_READY
                 && s[0].connected_to == (int) s[1].my_qpn
                 && s[1].connected_to == (int) s[0].my_qpn && s[0].ready_events == 1
                 && s[1].ready_events == 1 && !s[0].sent_while_peer_down
                 && !s[1].sent_while_peer_down);
    }
    GDR_CHECK(bad == 0, "400 lossy, duplicating, reordering networks: all connect (%d did not)",
              bad);

    /* a stray datagram naming another QP is ignored */
    reset(s);
    act(&s[0], s, 0, gdr_verbs_conn_start(&s[0].c, now));
    act(&s[0], s, 0, gdr_verbs_conn_on_msg(&s[0].c, GDR_CONN_MSG_REP, 0x222, now));
    GDR_CHECK(gdr_verbs_conn_on_msg(&s[0].c, GDR_CONN_MSG_REQ, 0x999, now) == 0
              && s[0].c.remote_qpn == 0x222, "a datagram naming another QP is ignored");

    /* retransmission backs off, then the timeout fails the connection */
    gdr_verbs_conn_t c;
    memset(&c, 0, sizeof(c));
    int64_t t = 0, last = 0, gaps[8];
    int sent = 0;
    gdr_verbs_conn_start(&c, t);
    for (t = 0; t < 5000 * MS && sent < 8; t += MS) {
        if (gdr_verbs_conn_on_timer(&c, t, 0) & GDR_CONN_DO_SEND_REQ) {
            gaps[sent++] = t - last;
            last = t;
        }
    }
    GDR_CHECK(sent == 8 && gaps[0] == 20 * MS && gaps[1] == 40 * MS && gaps[2] == 80 * MS
              && gaps[7] == 1000 * MS, "REQ retransmitted after 20, 40, 80 ms ... at most 1 s "
              "(%lld %lld %lld ... %lld ms)", (long long) (gaps[0] / MS),
              (long long) (gaps[1] / MS), (long long) (gaps[2] / MS), (long long) (gaps[7] / MS));
    GDR_CHECK(!(gdr_verbs_conn_on_timer(&c, 5000 * MS, 9000 * MS) & GDR_CONN_DO_FAIL) && c.state == GDR_CONN_REQ_SENT,
              "no failure before the timeout");
    GDR_CHECK(gdr_verbs_conn_on_timer(&c, 9000 * MS, 9000 * MS) == GDR_CONN_DO_FAIL
              && c.state == GDR_CONN_FAILED && c.why != NULL, "fails at the timeout, saying why");
    GDR_CHECK(gdr_verbs_conn_on_msg(&c, GDR_CONN_MSG_REP, 5, 9500 * MS) == 0
              && gdr_verbs_conn_start(&c, 9500 * MS) == 0, "a failed connection stays failed");

    /* wire */
    gdr_verbs_conn_msg_t m = {.kind = GDR_CONN_MSG_REP,.src_rank = 70000,.qpn = 0xabcdef,
        .nranks = 100000,.job = 0x1122334455667788ull }, got;
    for (int i = 0; i < GDR_VERBS_CARD_BYTES; i++)
        m.card[i] = (uint8_t) (7 * i + 1);
    unsigned char buf[GDR_CONN_WIRE_BYTES];
    gdr_verbs_conn_msg_encode(&m, buf);
    GDR_CHECK(buf[0] == 'g' && buf[1] == 'C' && buf[3] == GDR_CONN_MSG_REP && buf[8] == 0xef,
              "wire: magic, kind, little-endian QP number");
    GDR_CHECK(gdr_verbs_conn_msg_decode(buf, sizeof(buf), &got) == 0 && got.kind == m.kind
              && got.src_rank == 70000 && got.qpn == 0xabcdef && got.nranks == 100000
              && got.job == 0x1122334455667788ull
              && memcmp(got.card, m.card, GDR_VERBS_CARD_BYTES) == 0,
              "wire: round trip, the job and the sender's card included");
    GDR_CHECK(gdr_verbs_conn_msg_decode(buf, sizeof(buf) - 1, &got) != 0, "wire: short refused");
    buf[3] = 9;
    GDR_CHECK(gdr_verbs_conn_msg_decode(buf, sizeof(buf), &got) != 0, "wire: unknown kind refused");
    buf[3] = GDR_CONN_MSG_REQ;
    buf[8] = buf[9] = buf[10] = buf[11] = 0;
    GDR_CHECK(gdr_verbs_conn_msg_decode(buf, sizeof(buf), &got) != 0, "wire: QP 0 refused");
    buf[11] = 1;
    GDR_CHECK(gdr_verbs_conn_msg_decode(buf, sizeof(buf), &got) != 0,
              "wire: a QP number over 24 bits refused");
    return gdr_unit_finish();
}
