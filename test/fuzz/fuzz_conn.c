/* Lazy connections' handshake (src/netmod/verbs/gdr_verbs_conn.h): any host on the fabric
 * can send a rank's UD queue pair a datagram, and each one that decodes drives a peer's
 * connection state.  Input: a script of events for one connection; each starts with a
 * byte choosing the event:
 *   0 start (this side has something to send)   1 a datagram: GDR_CONN_WIRE_BYTES, decoded
 *   2 traffic on the RC queue pair             3 the timer, 2 bytes of milliseconds later
 * Invariants: a decoded datagram encodes back to its bytes and names a real QP; the
 * queue pair is created once, connected once, to the QP that stays the peer's, after it
 * was created; ready at most once, only once connected; REP and RTU only from a
 * connected QP; a failure has a reason and is final; a handshake under way always has a
 * retransmission due within the longest back-off, and fails once the timeout has
 * passed. */
#include <string.h>
#include "gdr_fuzz.h"
#include "verbs/gdr_verbs_conn.h"

#define TIMEOUT_NS (5 * 1000000000LL)
#define ALL_ACTIONS (GDR_CONN_DO_CREATE_QP | GDR_CONN_DO_CONNECT_QP | GDR_CONN_DO_SEND_REQ \
                     | GDR_CONN_DO_SEND_REP | GDR_CONN_DO_SEND_RTU | GDR_CONN_DO_READY     \
                     | GDR_CONN_DO_FAIL)

typedef struct seen {
    int created, connected, ready, failed;
    uint32_t connected_to;
} seen_t;

static void check_actions(const gdr_verbs_conn_t *c, unsigned a, seen_t *s)
{
    FUZZ_REQUIRE((a & ~(unsigned) ALL_ACTIONS) == 0, "unknown action bits %#x", a);
    FUZZ_REQUIRE(!s->failed || a == 0, "actions %#x after the connection failed", a);
    FUZZ_REQUIRE(c->state <= GDR_CONN_FAILED, "state %u", c->state);
    if (a & GDR_CONN_DO_CREATE_QP) {
        FUZZ_REQUIRE(!s->created, "the queue pair is created twice");
        s->created = 1;
    }
    if (a & GDR_CONN_DO_CONNECT_QP) {
        FUZZ_REQUIRE(s->created && !s->connected, "connect without a QP, or twice");
        FUZZ_REQUIRE(c->remote_qpn != 0, "connect to QP 0");
        s->connected = 1;
        s->connected_to = c->remote_qpn;
    }
    if (s->connected)
        FUZZ_REQUIRE(c->remote_qpn == s->connected_to, "the peer's QP changed from %u to %u",
                     s->connected_to, c->remote_qpn);
    if (a & (GDR_CONN_DO_SEND_REP | GDR_CONN_DO_SEND_RTU | GDR_CONN_DO_READY))
        FUZZ_REQUIRE(s->connected, "actions %#x before the QP is connected", a);
    if (a & GDR_CONN_DO_SEND_REQ)
        FUZZ_REQUIRE(s->created && !s->connected, "a REQ from a connected QP");
    if (a & GDR_CONN_DO_READY) {
        FUZZ_REQUIRE(!s->ready, "ready twice");
        s->ready = 1;
    }
    FUZZ_REQUIRE((c->state == GDR_CONN_READY) == (s->ready != 0), "state %s, ready told %d",
                 gdr_verbs_conn_state_str(c->state), s->ready);
    if (a & GDR_CONN_DO_FAIL) {
        FUZZ_REQUIRE(c->state == GDR_CONN_FAILED && c->why != NULL && !s->ready,
                     "a failure in state %s, reason %s", gdr_verbs_conn_state_str(c->state),
                     c->why ? c->why : "none");
        s->failed = 1;
    }
}

static void check_decoded(const uint8_t *buf, size_t len, const gdr_verbs_conn_msg_t *m)
{
    FUZZ_REQUIRE(len >= GDR_CONN_WIRE_BYTES, "decoded from %zu bytes", len);
    FUZZ_REQUIRE(m->kind >= GDR_CONN_MSG_REQ && m->kind <= GDR_CONN_MSG_RTU, "kind %d",
                 (int) m->kind);
    FUZZ_REQUIRE(m->qpn != 0 && m->qpn <= 0xffffff, "QP number %u", m->qpn);
    uint8_t again[GDR_CONN_WIRE_BYTES];
    gdr_verbs_conn_msg_encode(m, again);
    FUZZ_REQUIRE(memcmp(again, buf, GDR_CONN_WIRE_BYTES) == 0,
                 "the datagram does not encode back to its bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gdr_verbs_conn_t c;
    seen_t s;
    int64_t now = 1000000000LL;

    memset(&c, 0, sizeof(c));
    memset(&s, 0, sizeof(s));
    while (size > 0) {
        unsigned event = (unsigned) fuzz_take(&data, &size, 1) % 4, a = 0;
        if (event == 0) {
            a = gdr_verbs_conn_start(&c, now);
        } else if (event == 1) {
            size_t len = size < GDR_CONN_WIRE_BYTES ? size : GDR_CONN_WIRE_BYTES;
            uint8_t *buf = fuzz_exact_copy(data, len);
            gdr_verbs_conn_msg_t m;
            data += len;
            size -= len;
            if (gdr_verbs_conn_msg_decode(buf, len, &m) == 0) {
                check_decoded(buf, len, &m);
                a = gdr_verbs_conn_on_msg(&c, m.kind, m.qpn, now);
            }
            free(buf);
        } else if (event == 2) {
            a = gdr_verbs_conn_on_traffic(&c);
        } else {
            now += (int64_t) fuzz_take(&data, &size, 2) * 1000000LL;
            int under_way = c.state == GDR_CONN_REQ_SENT || c.state == GDR_CONN_REP_SENT;
            int64_t started = c.started_ns;
            a = gdr_verbs_conn_on_timer(&c, now, TIMEOUT_NS);
            if (under_way && now - started >= TIMEOUT_NS)
                FUZZ_REQUIRE(a == GDR_CONN_DO_FAIL, "no failure %lld ns after the start",
                             (long long) (now - started));
        }
        check_actions(&c, a, &s);
        if (c.state == GDR_CONN_REQ_SENT || c.state == GDR_CONN_REP_SENT)
            FUZZ_REQUIRE(c.retry_ns > 0 && c.retry_ns - now <= GDR_CONN_RETRY_MOST_NS,
                         "under way with the next retransmission %lld ns away",
                         (long long) (c.retry_ns - now));
    }
    return 0;
}
