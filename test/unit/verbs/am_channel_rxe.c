/* The verbs AM channel between two processes over real verbs (run inside
 * maint/rxe: one process on each of two RDMA devices).  Checks lazy connection (none
 * before the first message; made by one side, or by both at once), values, order,
 * credit flow control under bursts (messages built in their send slot by the caller, slots
 * reserved and given back), rendezvous payloads (landed and delivered whole, or
 * taken by the receiver and read where it says: in one piece, in several, truncated, or
 * landed for it to copy), sleeping waits, and that a peer that dies is reported by rank,
 * whether this rank sends to it or only waits.
 *
 *   am_channel_rxe DEV_A DEV_B        e.g. am_channel_rxe rxe0 rxe1 */
#define _GNU_SOURCE     /* MAP_ANONYMOUS, MAP_FIXED_NOREPLACE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "gdr_unit.h"
#include "rxe_pair.h"
#include "verbs/gdr_verbs_am.h"
#include "verbs/gdr_verbs_device.h"

#define N_EAGER 2000
#define N_BURST 600
/* 48 MiB: more chunks (rxe: 8 MiB messages) than one batch of reads */
static const size_t rndv_sizes[] = { 20000, 1 << 20, 4 << 20, 16 << 20, 48 << 20 };
#define N_RNDV (sizeof(rndv_sizes) / sizeof(rndv_sizes[0]))
/* Payloads of handler 9, which the receiver takes (ops->rts): seq 0 and 5 into one buffer,
 * 1 into three, 2 into half the room it needs (truncated), 3 landed for it, 4 declined
 * (delivered whole).  Seq 5 follows a 100-kB rendezvous of handler 11 (not taken) and is
 * followed by an eager message of handler 10. */
#define N_PLACED 6
#define PLACED_SZ ((size_t) 1 << 20)
#define BEFORE_SZ 100000
static const size_t piece_sz[3] = { 1000, 300000, PLACED_SZ - 301000 };

typedef struct {
    int me;
    uint32_t next_seq;          /* eager: expected sequence number */
    int eager_ok, eager_seen;
    int rndv_seen, rndv_ok;
    int done_seen;
    int echo_seen;
    int reuse_seen, reuse_ok;
    uint32_t order_next;        /* mixed eager/rendezvous stream: next expected */
    int order_ok;
    int flood_seen;
    int wake_seen;
    uint64_t rndv_done_mask;
    gdr_verbs_iface_t *am;         /* the channel handler 9 is read on */
    int placed_seen, placed_ok;
    uint8_t *piece[N_PLACED][3];        /* where the receiver read each taken payload */
    char order[8];              /* around seq 5: L (handler 11 delivered), O (seq 5 offered),
                                 * E (handler 10 delivered), R (seq 5 read) */
    int norder;
} state_t;

static uint8_t pattern(uint32_t seq, size_t i)
{
    return (uint8_t) (seq * 31u + i * 7u + 1u);
}

static void note(state_t *s, char c)
{
    if (s->norder < (int) sizeof(s->order) - 1)
        s->order[s->norder++] = c;
}

static int bytes_ok(const uint8_t *d, size_t n, uint32_t seq, size_t from)
{
    for (size_t i = 0; i < n; i++) {
        if (d[i] != pattern(seq, from + i))
            return 0;
    }
    return 1;
}

static void deliver(void *ctx, int src, uint32_t handler, const void *am_hdr, size_t am_hdr_sz,
                    const void *data, size_t data_sz)
{
    state_t *s = ctx;
    uint32_t seq;
    (void) src;
    if (am_hdr_sz != sizeof(seq))
        return;
    memcpy(&seq, am_hdr, sizeof(seq));
    const uint8_t *d = data;
    int ok = 1;
    for (size_t i = 0; i < data_sz; i++)
        ok &= d[i] == pattern(seq, i);
    if (handler == 1) {         /* eager stream */
        s->eager_seen++;
        s->eager_ok += ok && seq == s->next_seq && data_sz == seq % 8000;
        s->next_seq++;
    } else if (handler == 2) {  /* rendezvous */
        s->rndv_seen++;
        s->rndv_ok += ok && data_sz == rndv_sizes[seq];
    } else if (handler == 3) {
        s->done_seen++;
    } else if (handler == 4) {
        s->echo_seen++;
    } else if (handler == 7) {
        s->flood_seen++;
    } else if (handler == 8) {
        s->wake_seen++;
    } else if (handler == 9) {  /* the one payload of handler 9 declined: whole */
        s->placed_seen++;
        s->placed_ok += seq == 4 && data_sz == PLACED_SZ && bytes_ok(d, data_sz, 200 + seq, 0);
    } else if (handler == 10) {
        note(s, 'E');
    } else if (handler == 11) {
        note(s, 'L');
        s->placed_ok += data_sz == BEFORE_SZ && bytes_ok(d, data_sz, 300, 0);
    } else if (handler == 6) {  /* must arrive in the order sent, whatever the size */
        s->order_ok += ok && seq == s->order_next;
        s->order_next++;
    } else if (handler == 5) {  /* a buffer at a recycled address */
        s->reuse_seen++;
        s->reuse_ok += ok && data_sz == (4 << 20);
    }
}

static int rts_wanted(void *ctx, uint32_t handler)
{
    (void) ctx;
    return handler == 9;
}

/* The receiver takes handler 9's payloads and says where each goes (see N_PLACED). */
static int rts(void *ctx, int src, uint32_t handler, const void *am_hdr, size_t am_hdr_sz,
               size_t data_sz, gdr_verbs_am_rts_t *r)
{
    state_t *s = ctx;
    uint32_t seq;
    (void) src;
    if (handler != 9 || am_hdr_sz != sizeof(seq) || data_sz != PLACED_SZ)
        return 0;
    memcpy(&seq, am_hdr, sizeof(seq));
    if (seq >= N_PLACED || seq == 4)
        return 0;
    if (seq == 5)
        note(s, 'O');
    struct iovec v[3];
    int n = 0;
    if (seq == 1) {
        for (n = 0; n < 3; n++) {
            s->piece[seq][n] = malloc(piece_sz[n]);
            v[n].iov_base = s->piece[seq][n];
            v[n].iov_len = piece_sz[n];
        }
    } else if (seq != 3) {
        size_t room = seq == 2 ? data_sz / 2 : data_sz;
        s->piece[seq][0] = malloc(room);
        v[0].iov_base = s->piece[seq][0];
        v[0].iov_len = room;
        n = 1;
    }
    return gdr_verbs_am_read_into(s->am, r, v, n, 0, seq) == 0;
}

static void read_done(void *ctx, uint64_t cookie, const void *landed, size_t len)
{
    state_t *s = ctx;
    uint32_t seq = (uint32_t) cookie;
    int ok = seq < N_PLACED;
    if (ok && seq == 3) {
        ok = landed != NULL && len == PLACED_SZ && bytes_ok(landed, len, 200 + seq, 0);
    } else if (ok && seq == 1) {
        size_t at = 0;
        ok = landed == NULL && len == PLACED_SZ;
        for (int k = 0; k < 3; k++) {
            ok = ok && bytes_ok(s->piece[seq][k], piece_sz[k], 200 + seq, at);
            at += piece_sz[k];
        }
    } else if (ok) {
        size_t want = seq == 2 ? PLACED_SZ / 2 : PLACED_SZ;
        ok = landed == NULL && len == want && bytes_ok(s->piece[seq][0], want, 200 + seq, 0);
    }
    if (seq == 5)
        note(s, 'R');
    s->placed_seen++;
    s->placed_ok += ok;
    for (int k = 0; seq < N_PLACED && k < 3; k++) {
        free(s->piece[seq][k]);
        s->piece[seq][k] = NULL;
    }
}

static void rndv_done(void *ctx, uint64_t cookie)
{
    ((state_t *) ctx)->rndv_done_mask |= 1ull << cookie;
}

static double seconds(const struct timespec *from, const struct timespec *to)
{
    return (double) (to->tv_sec - from->tv_sec) + (double) (to->tv_nsec - from->tv_nsec) / 1e9;
}

static void pump(gdr_verbs_iface_t *am, int *failed)
{
    int p;
    if (gdr_verbs_am_progress(am, &p) != 0 && !*failed) {
        *failed = 1;
        printf("FAIL progress: %s\n", gdr_verbs_am_error(am));
    }
}

/* A channel to the other rank, its card learnt through the socket, and with `now` its
 * queue pair connected at once (else on first use); NULL (said why) on failure. */
static gdr_verbs_iface_t *channel(gdr_verbs_device_t *dev, int me, const uint8_t *need,
                                  const gdr_verbs_am_config_t *cfg, const gdr_verbs_am_ops_t *ops,
                                  state_t *st, int sock, const char *what, int now)
{
    char why[256];
    gdr_verbs_iface_t *am = gdr_verbs_am_create(dev, me, 2, need, cfg, ops, st, why, sizeof(why));
    if (am == NULL) {
        printf("FAIL rank %d: %s: %s\n", me, what, why);
        return NULL;
    }
    size_t cl = gdr_verbs_am_card_size(am);
    char *mine = malloc(cl), *theirs = malloc(cl);
    int ok = mine != NULL && theirs != NULL;
    if (ok) {
        gdr_verbs_am_card(am, mine);
        ok = write(sock, mine, cl) == (ssize_t) cl && read(sock, theirs, cl) == (ssize_t) cl
            && gdr_verbs_am_add_peer(am, 1 - me, theirs, cl) == 0;
    }
    int r = 0;
    while (ok && now && (r = gdr_verbs_am_connect_peer(am, 1 - me)) == 0) {
        int p;
        ok = gdr_verbs_am_progress(am, &p) == 0;
    }
    ok = ok && r >= 0;
    if (!ok)
        printf("FAIL rank %d: connect %s: %s\n", me, what, gdr_verbs_am_error(am));
    free(mine);
    free(theirs);
    return ok ? am : NULL;
}

static int run(int me, const char *devname, int sock)
{
    gdr_verbs_device_t dev;
    char why[256];
    state_t st = {.me = me };
    int failed = 0, peer = 1 - me;

    if (gdr_verbs_device_open(&dev, devname, NULL, why, sizeof(why)) != GDR_VERBS_OK
        || gdr_verbs_device_pick_gid(&dev, -1, why, sizeof(why)) != 0) {
        printf("FAIL rank %d: %s\n", me, why);
        return 1;
    }
    uint8_t need[2] = { 0, 0 };
    need[peer] = 1;
    gdr_verbs_am_config_t cfg = {.buf_size = 16384,.recv_depth = 16,.send_slots = 32,.max_reads = 4 };
    gdr_verbs_am_ops_t ops = {.deliver = deliver,.rndv_done = rndv_done,
        .rts_wanted = rts_wanted,.rts = rts,.read_done = read_done };
    gdr_verbs_iface_t *am = channel(&dev, me, need, &cfg, &ops, &st, sock, "the channel", 0);
    if (am == NULL)
        return 1;
    st.am = am;
    /* a second channel that carries nothing: only its idle probes, to a live peer and
     * then to a dead one (connected now: probes go only where a connection is) */
    gdr_verbs_iface_t *quiet = channel(&dev, me, need, &cfg, &ops, &st, sock,
                                       "the quiet channel", 1);
    if (quiet == NULL)
        return 1;
    GDR_CHECK(gdr_verbs_am_connected_peers(quiet) == 1
              && gdr_verbs_am_stats(quiet)->connections == 1,
              "rank %d: connecting at once makes one queue pair", me);
    GDR_CHECK(gdr_verbs_am_connected_peers(am) == 0 && gdr_verbs_am_stats(am)->handshakes_sent == 0
              && gdr_verbs_am_stats(am)->recv_buffers == 0, "rank %d: a channel nobody used has "
              "no connection, sent no handshake and holds no receive buffer", me);
    /* a busy poller that hears nothing reads the clock less often as polls prove cheap
     * (each read is a system call in this guest); 1024 empty polls per read before */
    {
        const uint32_t polls = 1u << 21;
        uint64_t reads0 = gdr_verbs_am_stats(quiet)->clock_reads;
        int p, err = 0;
        for (uint32_t i = 0; i < polls && !err; i++)
            err = gdr_verbs_am_progress(quiet, &p) != 0;
        uint64_t reads = gdr_verbs_am_stats(quiet)->clock_reads - reads0;
        GDR_CHECK(!err && reads >= 1 && reads <= polls / 1024 / 4, "rank %d: %u empty polls "
                  "read the clock %llu times (at least once, at most a quarter as often as "
                  "every 1024 polls)", me, polls, (unsigned long long) reads);
    }
    char c = 'x';
    /* both send their first message at the same moment: the two handshakes cross */
    gdr_verbs_iface_t *cross = channel(&dev, me, need, &cfg, &ops, &st, sock,
                                       "the crossing channel", 0);
    if (cross == NULL || write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1)
        return 1;
    uint32_t hello = 0;
    failed |= gdr_verbs_am_send_eager(cross, peer, 8, &hello, sizeof(hello), NULL, 0) != 0;
    struct timespec x0, x1;
    clock_gettime(CLOCK_MONOTONIC, &x0);
    double xsecs = 0;
    while (!failed && (st.wake_seen == 0 || gdr_verbs_am_busy(cross)) && xsecs < 20) {
        pump(cross, &failed);
        clock_gettime(CLOCK_MONOTONIC, &x1);
        xsecs = seconds(&x0, &x1);
    }
    /* the peer may still wait for our confirmation (our RTU lost): serve it a while */
    if (write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1)
        return 1;
    GDR_CHECK(st.wake_seen == 1 && gdr_verbs_am_connected_peers(cross) == 1
              && gdr_verbs_am_stats(cross)->connections == 1, "rank %d: first messages sent "
              "by both at once arrive, over one queue pair (%d seen, %.2f s, %llu handshake "
              "datagrams)", me, st.wake_seen, xsecs,
              (unsigned long long) gdr_verbs_am_stats(cross)->handshakes_sent);
    st.wake_seen = 0;
    gdr_verbs_am_destroy(cross);

    static uint8_t buf[16384];
    uint8_t *big[N_RNDV];
    if (me == 0) {
        /* eager stream of growing sizes, sent as fast as credits allow */
        for (uint32_t seq = 0; seq < N_EAGER && !failed; seq++) {
            size_t n = seq % 8000;
            for (size_t i = 0; i < n; i++)
                buf[i] = pattern(seq, i);
            /* some built in their slot by the caller (as a copy from device memory is), some
             * reserved and given back first (that copy failed): the stream and its credits
             * must not notice */
            void *h = seq % 3 != 0 ? gdr_verbs_am_eager_reserve(am, peer, 1, sizeof(seq), n)
                : NULL;
            if (h != NULL && seq % 3 == 2) {
                gdr_verbs_am_eager_unreserve(am);
                h = NULL;
            }
            if (h != NULL) {
                memcpy(h, &seq, sizeof(seq));
                memcpy(gdr_verbs_am_eager_data(am), buf, n);
                if (gdr_verbs_am_eager_post_filled(am, n) != 0) {
                    printf("FAIL post filled eager %u: %s\n", seq, gdr_verbs_am_error(am));
                    failed = 1;
                }
            } else if (gdr_verbs_am_send_eager(am, peer, 1, &seq, sizeof(seq), buf, n) != 0) {
                printf("FAIL send eager %u: %s\n", seq, gdr_verbs_am_error(am));
                failed = 1;
            }
            pump(am, &failed);
        }
        for (uint32_t k = 0; k < N_RNDV && !failed; k++) {
            big[k] = malloc(rndv_sizes[k]);
            for (size_t i = 0; i < rndv_sizes[k]; i++)
                big[k][i] = pattern(k, i);
            if (gdr_verbs_am_send_rndv(am, peer, 2, &k, sizeof(k), big[k], rndv_sizes[k], 0, k) != 0) {
                printf("FAIL send rndv %u: %s\n", k, gdr_verbs_am_error(am));
                failed = 1;
            }
        }
        /* the same address with new memory behind it: munmap, map again, send again.
         * A stale registration would make the peer read the old pages. */
        size_t rl = 4 << 20;
        char *r = mmap(NULL, rl, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (uint32_t round = 0; round < 3 && !failed; round++) {
            uint32_t seq = 100 + round;
            if (round > 0) {
                munmap(r, rl);
                char *again = mmap(r, rl, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
                GDR_CHECK(again == r, "round %u: the buffer is mapped again at the same address", round);
            }
            for (size_t i = 0; i < rl; i++)
                r[i] = (char) pattern(seq, i);
            uint64_t bit = 1ull << (40 + round);
            if (gdr_verbs_am_send_rndv(am, peer, 5, &seq, sizeof(seq), r, rl, 0, 40 + round) != 0) {
                printf("FAIL send reuse %u: %s\n", round, gdr_verbs_am_error(am));
                failed = 1;
            }
            while (!failed && !(st.rndv_done_mask & bit))
                pump(am, &failed);
        }
        munmap(r, rl);
        /* a mixed stream, sent without waiting: each large message is still being read
         * when the small one after it arrives, yet they must come up in order */
        static uint8_t mixed[20][100000];
        uint64_t mixed_mask = 0;
        for (uint32_t seq = 0; seq < 40 && !failed; seq++) {
            static uint8_t small[10];
            uint8_t *b = seq % 2 == 0 ? mixed[seq / 2] : small;   /* never reuse an unread one */
            size_t n = seq % 2 == 0 ? sizeof(mixed[0]) : sizeof(small);
            for (size_t i = 0; i < n; i++)
                b[i] = pattern(seq, i);
            int rc;
            if (n > 16000) {
                rc = gdr_verbs_am_send_rndv(am, peer, 6, &seq, sizeof(seq), b, n, 0, 44 + seq / 2);
                mixed_mask |= 1ull << (44 + seq / 2);
            } else {
                rc = gdr_verbs_am_send_eager(am, peer, 6, &seq, sizeof(seq), b, n);
            }
            if (rc != 0) {
                printf("FAIL send mixed %u: %s\n", seq, gdr_verbs_am_error(am));
                failed = 1;
            }
        }
        while (!failed && (st.rndv_done_mask & mixed_mask) != mixed_mask)
            pump(am, &failed);
        /* payloads the receiver places itself (N_PLACED), seq 5 behind one it does not */
        static uint8_t placed[N_PLACED][PLACED_SZ], before[BEFORE_SZ];
        uint64_t placed_mask = 0;
        for (uint32_t seq = 0; seq < N_PLACED && !failed; seq++) {
            for (size_t i = 0; i < PLACED_SZ; i++)
                placed[seq][i] = pattern(200 + seq, i);
            int rc = 0;
            if (seq == 5) {
                for (size_t i = 0; i < BEFORE_SZ; i++)
                    before[i] = pattern(300, i);
                rc = gdr_verbs_am_send_rndv(am, peer, 11, &seq, sizeof(seq), before, BEFORE_SZ,
                                            0, 16);
                placed_mask |= 1ull << 16;
            }
            rc |= gdr_verbs_am_send_rndv(am, peer, 9, &seq, sizeof(seq), placed[seq], PLACED_SZ,
                                         0, 8 + seq);
            placed_mask |= 1ull << (8 + seq);
            if (seq == 5)
                rc |= gdr_verbs_am_send_eager(am, peer, 10, &seq, sizeof(seq), NULL, 0);
            if (rc != 0) {
                printf("FAIL send placed %u: %s\n", seq, gdr_verbs_am_error(am));
                failed = 1;
            }
        }
        while (!failed && (st.rndv_done_mask & placed_mask) != placed_mask)
            pump(am, &failed);
        GDR_CHECK((st.rndv_done_mask & placed_mask) == placed_mask, "sender: every payload "
                  "the receiver placed itself, truncated or declined was released by its FIN");
        uint32_t z = 0;
        gdr_verbs_am_send_eager(am, peer, 3, &z, sizeof(z), NULL, 0);
        uint64_t all = ((1ull << N_RNDV) - 1) | (7ull << 40) | (0xfffffull << 44)
            | (0x3full << 8) | (1ull << 16);
        while (!failed && (st.rndv_done_mask != all || st.echo_seen < N_BURST))
            pump(am, &failed);
        GDR_CHECK(st.rndv_done_mask == all,
                  "sender: every rendezvous buffer released by the receiver's FIN");
        GDR_CHECK(st.echo_seen == N_BURST, "sender: %d of %d burst messages from the peer arrived",
                  st.echo_seen, N_BURST);
        for (uint32_t k = 0; k < N_RNDV; k++)
            free(big[k]);
    } else {
        /* let the sender run into flow control before we look at anything */
        sleep(1);
        while (!failed && (st.done_seen == 0 || st.rndv_seen < (int) N_RNDV || st.reuse_seen < 3))
            pump(am, &failed);
        while (!failed && st.order_next < 40)
            pump(am, &failed);
        GDR_CHECK(st.order_ok == 40, "receiver: 40 messages alternating 100 kB and 10 B were "
                  "delivered in the order sent (%d)", st.order_ok);
        while (!failed && (st.placed_seen < N_PLACED || st.norder < 4))
            pump(am, &failed);
        GDR_CHECK(st.placed_seen == N_PLACED && st.placed_ok == N_PLACED + 1, "receiver: "
                  "payloads taken and read into one buffer, three pieces, half the room "
                  "(truncated), a landing buffer, and one declined, all with the right bytes "
                  "(%d of %d seen, %d of %d right)", st.placed_seen, N_PLACED, st.placed_ok,
                  N_PLACED + 1);
        const char *L = strchr(st.order, 'L'), *O = strchr(st.order, 'O'),
            *E = strchr(st.order, 'E'), *R = strchr(st.order, 'R');
        GDR_CHECK(L && O && E && R && L < O && O < E && O < R, "receiver: a payload it takes "
                  "is offered in its turn (after the message before it, before the one after "
                  "it), and read after: %s", st.order);
        const gdr_verbs_am_stats_t *bs = gdr_verbs_am_stats(am);
        uint64_t zc = 3 * PLACED_SZ + PLACED_SZ / 2, cp = 3 * (4 << 20) + 20 * 100000
            + 2 * PLACED_SZ + BEFORE_SZ;
        for (uint32_t k = 0; k < N_RNDV; k++)
            cp += rndv_sizes[k];
        GDR_CHECK(bs->rndv_zcopy_bytes == zc && bs->rndv_copied_bytes == cp, "receiver: %llu "
                  "bytes read in place (want %llu), %llu landed to be copied (want %llu)",
                  (unsigned long long) bs->rndv_zcopy_bytes, (unsigned long long) zc,
                  (unsigned long long) bs->rndv_copied_bytes, (unsigned long long) cp);
        GDR_CHECK(st.reuse_seen == 3 && st.reuse_ok == 3,
                  "receiver: a buffer unmapped and mapped again at its address was read fresh "
                  "every time (%d of 3)", st.reuse_ok);
        GDR_CHECK(st.eager_seen == N_EAGER && st.eager_ok == N_EAGER,
                  "receiver: %d eager messages, %d in order with the right bytes (of %d)",
                  st.eager_seen, st.eager_ok, N_EAGER);
        GDR_CHECK(st.rndv_seen == (int) N_RNDV && st.rndv_ok == (int) N_RNDV,
                  "receiver: %d rendezvous payloads (20 KB .. 48 MiB) read intact (of %zu)",
                  st.rndv_ok, N_RNDV);
        /* a burst back, far beyond the peer's 16 receive buffers */
        for (uint32_t i = 0; i < N_BURST && !failed; i++) {
            if (gdr_verbs_am_send_eager(am, peer, 4, &i, sizeof(i), NULL, 0) != 0) {
                printf("FAIL burst %u: %s\n", i, gdr_verbs_am_error(am));
                failed = 1;
            }
        }
        while (!failed && gdr_verbs_am_busy(am))
            pump(am, &failed);
        const gdr_verbs_am_stats_t *s = gdr_verbs_am_stats(am);
        GDR_CHECK(s->queued > 0, "receiver: the burst waited for credits (%llu queued) instead "
                  "of overrunning the peer", (unsigned long long) s->queued);
        /* returned credits come in batches: several waiting messages per doorbell */
        GDR_CHECK(s->send_chains > 0 && s->send_chains < s->queued, "receiver: the %llu "
                  "waiting messages went out in %llu chained posts", (unsigned long long) s->queued,
                  (unsigned long long) s->send_chains);
        GDR_CHECK(s->connections == 1 && s->recv_buffers == cfg.recv_depth,
                  "receiver: the sender's first message made one connection (%llu), and the "
                  "shared receive queue grew by one peer's %u buffers (%llu)",
                  (unsigned long long) s->connections, cfg.recv_depth,
                  (unsigned long long) s->recv_buffers);
    }
    /* both sides flood each other at once: both run out of credits with messages
     * queued, and must still hand each other the credits they owe */
    if (write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1)
        return 1;
    for (uint32_t i = 0; i < 400 && !failed; i++) {
        if (gdr_verbs_am_send_eager(am, peer, 7, &i, sizeof(i), buf, 1000) != 0) {
            printf("FAIL flood %u: %s\n", i, gdr_verbs_am_error(am));
            failed = 1;
        }
    }
    struct timespec f0, f1;
    clock_gettime(CLOCK_MONOTONIC, &f0);
    double fsecs = 0;
    while (!failed && (st.flood_seen < 400 || gdr_verbs_am_busy(am)) && fsecs < 30) {
        pump(am, &failed);
        clock_gettime(CLOCK_MONOTONIC, &f1);
        fsecs = (double) (f1.tv_sec - f0.tv_sec) + (double) (f1.tv_nsec - f0.tv_nsec) / 1e9;
    }
    GDR_CHECK(st.flood_seen == 400, "rank %d: a simultaneous flood both ways completes "
              "(%d of 400 in %.1f s)", me, st.flood_seen, fsecs);
    GDR_CHECK(!failed, "rank %d: no transport error", me);
    /* sleeping until a completion: owed credits settle first, then rank 0 sleeps with
     * nothing coming, then is woken by one message that rank 1 sends 200 ms later */
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    do {
        pump(am, &failed);
        clock_gettime(CLOCK_MONOTONIC, &w1);
    } while (seconds(&w0, &w1) < 0.2);
    if (write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1)
        return 1;
    if (me == 0) {
        double idle = 0;
        int p = 1;
        for (int tries = 0; p && tries < 10 && !failed; tries++) {
            clock_gettime(CLOCK_MONOTONIC, &w0);
            failed |= gdr_verbs_am_wait(am, 50000, &p) != 0;
            clock_gettime(CLOCK_MONOTONIC, &w1);
            idle = seconds(&w0, &w1);
        }
        GDR_CHECK(!p && idle >= 0.04, "a wait with nothing coming sleeps its 50 ms "
                  "timeout (%.3f s)", idle);
        uint64_t woken = gdr_verbs_am_stats(am)->wakeups;
        int calls = 0;
        if (write(sock, &c, 1) != 1)
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &w0);
        while (st.wake_seen == 0 && calls < 20 && !failed) {
            calls++;
            failed |= gdr_verbs_am_wait(am, 10 * 1000 * 1000, &p) != 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &w1);
        double secs = seconds(&w0, &w1);
        GDR_CHECK(st.wake_seen == 1 && secs < 5 && calls <= 4
                  && gdr_verbs_am_stats(am)->wakeups > woken, "a message wakes a 10 s wait: "
                  "arrived after %.3f s in %d waits, %llu wakeups", secs, calls,
                  (unsigned long long) (gdr_verbs_am_stats(am)->wakeups - woken));
    } else {
        if (read(sock, &c, 1) != 1)
            return 1;
        usleep(200 * 1000);
        uint32_t seq = 0;
        failed |= gdr_verbs_am_send_eager(am, peer, 8, &seq, sizeof(seq), NULL, 0) != 0;
        do {
            pump(am, &failed);
        } while (gdr_verbs_am_busy(am) && !failed);
    }
    if (me == 0) {
        /* nothing heard for 5 s: the quiet channel probes its peer, alive (not polling) */
        struct timespec q0, q1;
        int p, err = 0;
        clock_gettime(CLOCK_MONOTONIC, &q0);
        do {
            err = gdr_verbs_am_wait(quiet, 100 * 1000, &p) != 0;
            clock_gettime(CLOCK_MONOTONIC, &q1);
        } while (!err && seconds(&q0, &q1) < 7);
        GDR_CHECK(!err && gdr_verbs_am_stats(quiet)->probes >= 1, "7 s of quiet: %llu idle "
                  "probe(s) of a live peer, no error (%s)",
                  (unsigned long long) gdr_verbs_am_stats(quiet)->probes,
                  err ? gdr_verbs_am_error(quiet) : "none");
    }
    /* finish together: the peer may still need our credits */
    if (write(sock, &c, 1) != 1)
        return 1;
    while (read(sock, &c, 1) != 1)
        ;
    if (me == 1) {
        /* die without a goodbye: the kernel tears the QPs down under the peer */
        int rc = gdr_unit_finish();
        _exit(rc);
    }
    /* rank 0 keeps talking to the dead rank: it must get an error naming it, soon */
    while (read(sock, &c, 1) > 0)
        ;                       /* EOF: rank 1 has exited */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int err = 0;
    double secs = 0;
    /* first with nothing to send: only the idle probes can notice (a rank waiting in a
     * barrier for a peer whose node went down) */
    while (!err && secs < 30) {
        int p;
        err = gdr_verbs_am_wait(quiet, 100 * 1000, &p) != 0;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        secs = seconds(&t0, &t1);
    }
    GDR_CHECK(err && strstr(gdr_verbs_am_error(quiet), "rank 1") != NULL,
              "a waiting rank with nothing to send learns of a dead peer, by rank, after "
              "%.1f s: \"%s\"", secs, gdr_verbs_am_error(quiet));
    gdr_verbs_am_destroy(quiet);
    /* then a rank that keeps sending to it */
    err = 0;
    secs = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint32_t i = 0; !err && secs < 30; i++) {
        if (gdr_verbs_am_send_eager(am, peer, 4, &i, sizeof(i), NULL, 0) != 0)
            err = 1;
        int p;
        if (!err && gdr_verbs_am_progress(am, &p) != 0)
            err = 1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        secs = seconds(&t0, &t1);
    }
    GDR_CHECK(err && strstr(gdr_verbs_am_error(am), "rank 1") != NULL,
              "a dead peer is reported, by rank, after %.1f s: \"%s\"", secs,
              gdr_verbs_am_error(am));
    GDR_CHECK(secs < 30, "the failure came in under 30 s");
    const gdr_verbs_am_stats_t *ds = gdr_verbs_am_stats(am);
    printf("     (dead-peer phase: %llu queued, %llu probes, %llu eager sent)\n",
           (unsigned long long) ds->queued, (unsigned long long) ds->probes,
           (unsigned long long) ds->eager_sent);
    gdr_verbs_am_destroy(am);
    gdr_verbs_device_close(&dev);
    return gdr_unit_finish();
}

int main(int argc, char **argv)
{
    return gdr_rxe_pair_main(argc, argv, run);
}
