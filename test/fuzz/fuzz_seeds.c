/* Writes the seed corpus of every fuzz target (a folder per target in test/fuzz/corpus), well-formed
 * inputs built with gdr's own encoders, so that the fuzzers start from messages that get
 * past the first checks.  Run it after a wire format changes:
 *   make -C _build/unit fuzz-seeds      (writes into the source tree's test/fuzz/corpus) */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "rma/gdr_rma_staged.h"
#include "verbs/gdr_verbs_card.h"
#include "verbs/gdr_verbs_conn.h"
#include "verbs/gdr_verbs_wire.h"

#define WIN_ID 0x5157ull        /* fuzz_staged_target.c's */
#define ORIGIN_BASE 0x7000000000ull
#define ORIGIN_RKEY 0x5151u

static const char *root;

static void write_seed(const char *target, const char *name, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", root, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* ---- am_wire ----------------------------------------------------------------------------- */

static void seeds_am_wire(void)
{
    uint8_t m[512];
    const char am_hdr[13] = "am-header-13";
    size_t at = gdr_verbs_wire_put_hdr(m, sizeof(m), GDR_VERBS_MSG_EAGER, 7, 3, am_hdr, 13, 40);
    memset(m + at, 0x5a, 40);
    write_seed("am_wire", "eager", m, at + 40);
    at = gdr_verbs_wire_put_hdr(m, sizeof(m), GDR_VERBS_MSG_EAGER, 7, 0, NULL, 0, 0);
    write_seed("am_wire", "eager-empty", m, at);
    gdr_verbs_wire_rts_t rts = {.addr = 0x10000,.rkey = 0x44,.cookie = 0x100000002ull };
    at = gdr_verbs_wire_put_hdr(m, sizeof(m), GDR_VERBS_MSG_RTS, 9, 1, am_hdr, 8, 1 << 20);
    memcpy(m + at, &rts, sizeof(rts));
    write_seed("am_wire", "rts", m, at + sizeof(rts));
    gdr_verbs_wire_fin_t fin = {.cookie = 0x100000002ull };
    at = gdr_verbs_wire_put_hdr(m, sizeof(m), GDR_VERBS_MSG_FIN, 0, 0, NULL, 0, 0);
    memcpy(m + at, &fin, sizeof(fin));
    write_seed("am_wire", "fin", m, at + sizeof(fin));
    at = gdr_verbs_wire_put_hdr(m, sizeof(m), GDR_VERBS_MSG_CREDIT, 0, 65535, NULL, 0, 0);
    write_seed("am_wire", "credit", m, at);
}

/* ---- card -------------------------------------------------------------------------------- */

static void seeds_card(void)
{
    gdr_verbs_card_t c = {.port_num = 1,.link_layer = 2,.mtu = 3,.lid = 0,.ud_qpn = 0x11,
        .nranks = 4 };
    uint8_t m[2 + GDR_VERBS_CARD_BYTES];
    for (int i = 0; i < 16; i++)
        c.gid[i] = (uint8_t) (i == 10 || i == 11 ? 0xff : i * 3);
    m[0] = 4;
    m[1] = 0;
    gdr_verbs_card_encode(&c, m + 2);
    write_seed("card", "roce-4-ranks", m, sizeof(m));
    c.nranks = 1;
    c.link_layer = 1;
    c.lid = 0x1234;
    m[0] = 1;
    gdr_verbs_card_encode(&c, m + 2);
    write_seed("card", "ib-1-rank", m, sizeof(m));
    c.nranks = 3;       /* another job's process: decoded for any job size */
    c.rank = 2;
    c.job = 0x0123456789abcdefull;
    m[0] = 0;
    gdr_verbs_card_encode(&c, m + 2);
    write_seed("card", "other-job", m, sizeof(m));
}

/* ---- conn: scripts of events (fuzz_conn.c: 0 start, 1 datagram, 2 traffic, 3 timer) ------ */

typedef struct script {
    uint8_t b[256];
    size_t n;
} script_t;

static void ev(script_t *s, uint8_t event)
{
    s->b[s->n++] = event;
}

static void ev_msg(script_t *s, gdr_verbs_conn_msg_kind_t kind, uint32_t qpn)
{
    gdr_verbs_conn_msg_t m = {.kind = kind,.src_rank = 1,.qpn = qpn,.nranks = 4 };
    ev(s, 1);
    gdr_verbs_conn_msg_encode(&m, s->b + s->n);
    s->n += GDR_CONN_WIRE_BYTES;
}

static void ev_timer(script_t *s, uint16_t ms)
{
    ev(s, 3);
    s->b[s->n++] = (uint8_t) ms;
    s->b[s->n++] = (uint8_t) (ms >> 8);
}

static void seeds_conn(void)
{
    script_t s = {.n = 0 };
    ev(&s, 0);                  /* initiator: REQ lost once, REP, a repeated REP */
    ev_timer(&s, 25);
    ev_msg(&s, GDR_CONN_MSG_REP, 0x123);
    ev_msg(&s, GDR_CONN_MSG_REP, 0x123);
    write_seed("conn", "initiator", s.b, s.n);
    s.n = 0;                    /* responder: REQ twice, a stray, then RTU or traffic */
    ev_msg(&s, GDR_CONN_MSG_REQ, 0x77);
    ev_timer(&s, 30);
    ev_msg(&s, GDR_CONN_MSG_REQ, 0x77);
    ev_msg(&s, GDR_CONN_MSG_REQ, 0x78);
    ev(&s, 2);
    ev_msg(&s, GDR_CONN_MSG_RTU, 0x77);
    write_seed("conn", "responder", s.b, s.n);
    s.n = 0;                    /* both start at once: the REQs cross, then the REPs */
    ev(&s, 0);
    ev_msg(&s, GDR_CONN_MSG_REQ, 0x9);
    ev_msg(&s, GDR_CONN_MSG_REP, 0x9);
    write_seed("conn", "crossing", s.b, s.n);
    s.n = 0;                    /* nobody answers: back-off, then the timeout */
    ev(&s, 0);
    for (int i = 0; i < 8; i++)
        ev_timer(&s, 700);
    write_seed("conn", "timeout", s.b, s.n);
}

/* ---- staged_wire and staged_target ---------------------------------------------------------------- */

typedef struct seq {
    uint8_t b[16384];
    size_t n;
} seq_t;

static size_t enc(uint8_t *out, size_t cap, gdr_rma_staged_hdr_t h, const gdr_rma_staged_piece_t *pc,
                  const void *inl)
{
    h.win_id = WIN_ID;
    h.origin = h.origin ? h.origin : 1;
    size_t n = gdr_rma_staged_encode(out, cap, &h, pc, inl);
    if (n == 0) {
        fprintf(stderr, "fuzz_seeds: a seed message does not encode\n");
        exit(1);
    }
    return n;
}

/* a step of fuzz_staged_target's input: the message */
static void msg(seq_t *s, gdr_rma_staged_hdr_t h, const gdr_rma_staged_piece_t *pc, const void *inl)
{
    uint8_t m[GDR_RMA_STAGED_MSG_MAX];
    size_t n = enc(m, sizeof(m), h, pc, inl);
    s->b[s->n++] = 0;
    s->b[s->n++] = (uint8_t) n;
    s->b[s->n++] = (uint8_t) (n >> 8);
    memcpy(s->b + s->n, m, n);
    s->n += n;
}

static void step(seq_t *s, uint8_t what, int times)
{
    for (int i = 0; i < times; i++)
        s->b[s->n++] = what;
}

static gdr_rma_staged_hdr_t req(uint32_t seq, int kind, int op, int elem, uint64_t taddr,
                             uint64_t tbytes, uint32_t npieces, uint16_t flags, uint32_t inl)
{
    return (gdr_rma_staged_hdr_t) {.type = GDR_RMA_STAGED_REQ,.seq = seq,.kind = (uint8_t) kind,
        .op = (uint8_t) op,.elem = (uint8_t) elem,.op_id = 0x1000 + seq,.taddr = taddr,
        .tbytes = tbytes,.npieces = npieces,.flags = flags,.inline_len = inl };
}

static gdr_rma_staged_hdr_t chunk(uint32_t seq, uint64_t off, uint32_t len, uint32_t slot)
{
    return (gdr_rma_staged_hdr_t) {.type = GDR_RMA_STAGED_CHUNK,.op_id = 0x1000 + seq,.off = off,
        .len = len,.slot = slot,.raddr = ORIGIN_BASE + (uint64_t) slot * 512,.rkey = ORIGIN_RKEY };
}

static void seeds_dev(void)
{
    /* config: device window, chunk 128 (k 1), 2 slots, inline up to the chunk */
    const uint8_t dev_cfg = 1 | (1 << 1) | (1 << 3) | 32, host_cfg = dev_cfg & ~1;
    uint8_t data[4096];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t) (i * 5 + 1);
    gdr_rma_staged_piece_t one = {.off = 0,.len = 16 }, two[2] = { {0, 64}, {128, 64} };
    gdr_rma_staged_piece_t big = {.off = 0,.len = 200 }, get = {.off = 0,.len = 300 };
    gdr_rma_staged_piece_t elem8 = {.off = 0,.len = 8 }, elem4 = {.off = 0,.len = 4 };
    seq_t s;
    uint8_t m[GDR_RMA_STAGED_MSG_MAX];

    for (int host = 0; host < 2; host++) {
        const char *sfx = host ? "-host" : "";
        char name[64];
        /* Put inline, then a Put in two chunks, then progress */
        s.n = 0;
        s.b[s.n++] = host ? host_cfg : dev_cfg;
        msg(&s, req(0, GDR_RMA_PUT, 0, 0, 32, 16, 1, GDR_RMA_STAGED_F_INLINE, 16), &one, data);
        msg(&s, req(1, GDR_RMA_PUT, 0, 0, 100, 200, 1, 0, 0), &big, NULL);
        msg(&s, chunk(1, 0, 128, 0), NULL, NULL);
        step(&s, 1, 2);
        msg(&s, chunk(1, 128, 72, 1), NULL, NULL);
        step(&s, 1, 3);
        snprintf(name, sizeof(name), "put-inline-then-chunks%s", sfx);
        write_seed("staged_target", name, s.b, s.n);

        /* Get of 300 bytes, nothing inline: results lent in slots, then taken back */
        s.n = 0;
        s.b[s.n++] = (host ? host_cfg : dev_cfg) & ~32;
        msg(&s, req(0, GDR_RMA_GET, 0, 0, 500, 300, 1, 0, 0), &get, NULL);
        step(&s, 1, 3);
        for (uint32_t slot = 0; slot < 6; slot++)
            msg(&s, (gdr_rma_staged_hdr_t) {.type = GDR_RMA_STAGED_TAKEN,.op_id = 0x1000,.slot = slot },
                NULL, NULL);
        step(&s, 1, 3);
        snprintf(name, sizeof(name), "get-results-in-slots%s", sfx);
        write_seed("staged_target", name, s.b, s.n);

        /* Accumulate SUM of int32 over two pieces, inline; Fetch_and_op; Compare_and_swap */
        s.n = 0;
        s.b[s.n++] = host ? host_cfg : dev_cfg;
        msg(&s, req(0, GDR_RMA_ACC, GDR_GPU_OP_SUM, GDR_GPU_T_INT32, 256, 128, 2,
                    GDR_RMA_STAGED_F_INLINE, 128), two, data);
        msg(&s, req(1, GDR_RMA_FOP, GDR_GPU_OP_SUM, GDR_GPU_T_INT64, 8, 8, 1,
                    GDR_RMA_STAGED_F_INLINE, 8), &elem8, data);
        msg(&s, req(2, GDR_RMA_CAS, GDR_GPU_OP_CSWAP, GDR_GPU_T_INT32, 16, 4, 1,
                    GDR_RMA_STAGED_F_INLINE, 8), &elem4, data);
        msg(&s, req(3, GDR_RMA_GET_ACC, GDR_GPU_OP_NO_OP, GDR_GPU_T_DOUBLE, 512, 8, 1, 0, 0),
            &elem8, NULL);
        step(&s, 1, 4);
        snprintf(name, sizeof(name), "accumulates%s", sfx);
        write_seed("staged_target", name, s.b, s.n);

        /* Get_accumulate MAX of doubles in chunks, results back; one chunk read fails */
        s.n = 0;
        s.b[s.n++] = host ? host_cfg : dev_cfg;
        gdr_rma_staged_piece_t ga = {.off = 0,.len = 256 };
        msg(&s, req(0, GDR_RMA_GET_ACC, GDR_GPU_OP_MAX, GDR_GPU_T_DOUBLE, 0, 256, 1, 0, 0), &ga,
            NULL);
        msg(&s, chunk(0, 0, 128, 0), NULL, NULL);
        gdr_rma_staged_hdr_t bad = chunk(0, 128, 128, 1);
        bad.rkey = 0x999;
        msg(&s, bad, NULL, NULL);
        step(&s, 2, 1);
        step(&s, 1, 4);
        snprintf(name, sizeof(name), "get-acc-chunks-one-bad%s", sfx);
        write_seed("staged_target", name, s.b, s.n);
    }

    /* an origin that gives up, and requests the target must refuse */
    s.n = 0;
    s.b[s.n++] = dev_cfg;
    msg(&s, req(0, GDR_RMA_PUT, 0, 0, 0, 200, 1, 0, 0), &big, NULL);
    msg(&s, chunk(0, 0, 128, 0), NULL, NULL);
    msg(&s, (gdr_rma_staged_hdr_t) {.type = GDR_RMA_STAGED_ABORT,.seq = 1,.op_id = 0x1000 }, NULL, NULL);
    gdr_rma_staged_piece_t outside = {.off = 1000,.len = 100 };
    msg(&s, req(1, GDR_RMA_PUT, 0, 0, 0, 100, 1, GDR_RMA_STAGED_F_INLINE, 100), &outside, data);
    msg(&s, req(7, GDR_RMA_PUT, 0, 0, 0, 16, 1, GDR_RMA_STAGED_F_INLINE, 16), &one, data);
    msg(&s, req(3, GDR_RMA_ACC, GDR_GPU_OP_SUM, GDR_GPU_T_INT32, 1, 4, 1,
                GDR_RMA_STAGED_F_INLINE, 4), &elem4, data);
    step(&s, 1, 3);
    write_seed("staged_target", "abort-and-refusals", s.b, s.n);

    /* staged_wire: one message of each type */
    size_t n = enc(m, sizeof(m), req(0, GDR_RMA_ACC, GDR_GPU_OP_SUM, GDR_GPU_T_INT32, 256, 128, 2,
                                     GDR_RMA_STAGED_F_INLINE, 128), two, data);
    write_seed("staged_wire", "req-inline", m, n);
    n = enc(m, sizeof(m), req(0, GDR_RMA_GET, 0, 0, 500, 300, 1, GDR_RMA_STAGED_F_DYNAMIC, 0), &get,
            NULL);
    write_seed("staged_wire", "req-dynamic", m, n);
    n = enc(m, sizeof(m), chunk(1, 128, 72, 1), NULL, NULL);
    write_seed("staged_wire", "chunk", m, n);
    n = enc(m, sizeof(m), (gdr_rma_staged_hdr_t) {.type = GDR_RMA_STAGED_TAKEN,.slot = 3 }, NULL, NULL);
    write_seed("staged_wire", "taken", m, n);
    n = enc(m, sizeof(m), (gdr_rma_staged_hdr_t) {.type = GDR_RMA_STAGED_RESULT,.flags =
            GDR_RMA_STAGED_F_INLINE,.off = 8,.len = 8,.inline_len = 8 }, NULL, data);
    write_seed("staged_wire", "result-inline", m, n);
    n = enc(m, sizeof(m), (gdr_rma_staged_hdr_t) {.type = GDR_RMA_STAGED_RESULT,.off = 0,.len = 128,
            .slot = 2,.raddr = 0x7000,.rkey = 9 }, NULL, NULL);
    write_seed("staged_wire", "result-slot", m, n);
    n = enc(m, sizeof(m), (gdr_rma_staged_hdr_t) {.type = GDR_RMA_STAGED_DONE,.status =
            GDR_RMA_STAGED_E_RANGE }, NULL, NULL);
    write_seed("staged_wire", "done", m, n);
    n = enc(m, sizeof(m), (gdr_rma_staged_hdr_t) {.type = GDR_RMA_STAGED_ABORT,.seq = 4 }, NULL, NULL);
    write_seed("staged_wire", "abort", m, n);
}

/* ---- win_range --------------------------------------------------------------------------- */

static void put_le(uint8_t **p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        *(*p)++ = (uint8_t) (v >> (8 * i));
}

/* fuzz_win_range's step 2: the target answers (found, base, size); lookup of [addr, +len) */
static void lookup_step(uint8_t **p, int found, uint64_t base, uint64_t size, uint64_t addr,
                        uint64_t len)
{
    *(*p)++ = 2;
    *(*p)++ = (uint8_t) found;
    put_le(p, base, 8);
    put_le(p, size, 8);
    put_le(p, addr, 8);
    put_le(p, len, 8);
}

static void seeds_win_range(void)
{
    uint8_t m[256], *p = m;
    /* span checks: inside, past the end, negative lb, huge unit */
    uint64_t spans[][5] = { {3, 8, 0, 16, 64}, {7, 8, 4, 16, 64}, {2, 4, (uint64_t) -8, 8, 32},
    {1, 1ull << 62, 0, 1, UINT64_MAX} };
    for (int i = 0; i < 4; i++) {
        *p++ = 0;
        put_le(&p, spans[i][0], 8);
        put_le(&p, spans[i][2], 8);
        put_le(&p, spans[i][1], 8);
        put_le(&p, spans[i][3], 8);
        put_le(&p, spans[i][4], 8);
    }
    write_seed("win_range", "spans", m, (size_t) (p - m));
    /* a region learned, used inside and past its end, forgotten, asked again */
    p = m;
    lookup_step(&p, 1, 0x10000, 0x1000, 0x10800, 0x100);
    lookup_step(&p, 1, 0x20000, 0x10, 0x10ff0, 0x100);
    *p++ = 3;
    *p++ = 2;
    lookup_step(&p, 1, 0, 0, 0, 0x10);
    write_seed("win_range", "regions", m, (size_t) (p - m));
    p = m;
    *p++ = 1;
    put_le(&p, 0x1000, 8);
    put_le(&p, 8, 8);
    put_le(&p, 8, 8);
    write_seed("win_range", "own-dynamic", m, (size_t) (p - m));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds CORPUS_DIR (test/fuzz/corpus)\n");
        return 2;
    }
    root = argv[1];
    if (mkdir(root, 0755) != 0 && errno != EEXIST) {
        perror(root);
        return 1;
    }
    seeds_am_wire();
    seeds_card();
    seeds_conn();
    seeds_dev();
    seeds_win_range();
    return 0;
}
