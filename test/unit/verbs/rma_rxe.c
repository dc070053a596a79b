/* One-sided operations over real verbs (run inside maint/rxe, one process on each of
 * two RDMA devices): puts and gets of every size class read back, atomics from a peer
 * and through the loopback queue pair on one word, more operations than the queue
 * depth, a key that dies with its registration, and a key that reaches not one byte past
 * its registration.  Small work requests are held back to share doorbells
 * (GDR_TEST_RMA_HOLD, default 16; 0: none): fewer doorbells than puts, and a message sent
 * after held puts finds them landed.
 *
 *   rma_rxe DEV_A DEV_B        e.g. rma_rxe rxe0 rxe1 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L     /* nanosleep */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "gdr_unit.h"
#include "rxe_pair.h"
#include "verbs/gdr_verbs_am.h"
#include "verbs/gdr_verbs_device.h"
#include "verbs/gdr_verbs_rma.h"

#define WIN_BYTES (4u << 20)
#define DEPTH 16
#define N_FADD 500
#define N_MANY 2000

typedef struct {
    uint64_t addr, len;
    uint32_t rkey, stale_rkey;
    uint64_t stale_addr;
} wininfo_t;

#define ORDER_HANDLER 9
#define N_ORDER 40
/* The engine's rule (src/rma/gdr_rma_select.h) played here: inline up to the short limit,
 * bounced up to the bounce size, else registered; *copied: src free at once. */
static int put_sized(gdr_verbs_rma_t *rma, int peer, const void *src, size_t len,
                     uint64_t raddr, uint32_t rkey, int fence, gdr_verbs_rma_done_fn done,
                     void *arg, int *copied)
{
    gdr_verbs_rma_how_t how = len <= gdr_verbs_rma_short_max(rma) ? GDR_VERBS_RMA_INLINE
        : len <= gdr_verbs_rma_bcopy_max(rma) ? GDR_VERBS_RMA_BOUNCE : GDR_VERBS_RMA_REGISTERED;
    *copied = how != GDR_VERBS_RMA_REGISTERED;
    return gdr_verbs_rma_put(rma, peer, how, src, len, raddr, rkey, fence, done, arg);
}

static int get_sized(gdr_verbs_rma_t *rma, int peer, void *dst, size_t len, uint64_t raddr,
                     uint32_t rkey, gdr_verbs_rma_done_fn done, void *arg)
{
    return gdr_verbs_rma_get(rma, peer, len <= gdr_verbs_rma_bcopy_max(rma)
                             ? GDR_VERBS_RMA_BOUNCE : GDR_VERBS_RMA_REGISTERED, dst, len,
                             raddr, rkey, done, arg);
}

static const uint64_t *order_win;       /* where the ORDER_HANDLER message checks */
static int order_seen = -1;             /* how many of the puts it found landed */

static void deliver(void *ctx, int src, uint32_t h, const void *a, size_t as, const void *d,
                    size_t ds)
{
    (void) ctx; (void) src; (void) as; (void) d; (void) ds;
    if (h != ORDER_HANDLER || order_win == NULL)
        return;
    uint64_t base;
    memcpy(&base, a, sizeof(base));
    order_seen = 0;
    for (int i = 0; i < N_ORDER; i++)
        order_seen += order_win[i] == base + (uint64_t) i;
}

static void rndv_done(void *ctx, uint64_t cookie)
{
    (void) ctx; (void) cookie;
}

static int failed_ops;          /* operations that completed in error */

static void count_done(void *arg, int status)
{
    if (status != 0)
        failed_ops++;
    else
        (*(int *) arg)++;
}

static gdr_verbs_iface_t *am_g;
static uint64_t rma_chunk_g;    /* GDR_TEST_RMA_CHUNK, 0: none */
static uint32_t rma_hold_g = 16;        /* GDR_TEST_RMA_HOLD */
static int failed_g;

static void pump(void)
{
    int p;
    if (gdr_verbs_am_progress(am_g, &p) != 0 && !failed_g) {
        failed_g = 1;
        printf("     progress failed: %s\n", gdr_verbs_am_error(am_g));
    }
}

static void wait_for(int *counter, int target)
{
    while (*counter < target && !failed_g)
        pump();
}

static void sync_peer(int sock)
{
    char c = 's';
    if (write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1)
        exit(3);
}

static uint8_t pat(int who, size_t i)
{
    return (uint8_t) (who * 77 + i * 13 + 5);
}

/* Retries while the engine is busy, pumping the channel. */
#define POST(call)                                                \
    do {                                                          \
        int rc_;                                                  \
        while ((rc_ = (call)) == GDR_VERBS_RMA_BUSY)              \
            pump();                                               \
        if (rc_ != 0 && !failed_g) {                              \
            failed_g = 1;                                         \
            printf("     post failed: %s\n", gdr_verbs_am_error(am_g)); \
        }                                                         \
    } while (0)

/* Rank 0 puts 8 bytes of v to rank 1 at (raddr, rkey) and progresses until the channel
 * fails: 1 when it did (the operation completes through count_done(done), in error). */
static int put_must_fail(gdr_verbs_rma_t *rma, uint64_t v, uint64_t raddr, uint32_t rkey,
                         int *done)
{
    int copied, rc;
    while ((rc = put_sized(rma, 1, &v, 8, raddr, rkey, 0, count_done, done, &copied))
           == GDR_VERBS_RMA_BUSY)
        pump();
    int err = rc != 0;
    for (int i = 0; i < 2000000 && !err; i++) {
        int p;
        err = gdr_verbs_am_progress(am_g, &p) != 0;
    }
    return err;
}

/* Opens devname, connects rank me's AM channel to the peer and to itself (loopback) and
 * attaches one-sided operations to it; NULL (reported) on failure. */
static gdr_verbs_rma_t *connect_pair(int me, const char *devname, int sock,
                                     gdr_verbs_device_t *dev)
{
    char why[256];
    int peer = 1 - me;

    if (gdr_verbs_device_open(dev, devname, NULL, why, sizeof(why)) != GDR_VERBS_OK
        || gdr_verbs_device_pick_gid(dev, -1, why, sizeof(why)) != 0) {
        printf("FAIL rank %d: %s\n", me, why);
        return NULL;
    }
    uint8_t need[2] = { 1, 1 };         /* the peer and the loopback */
    gdr_verbs_am_config_t cfg = {.buf_size = 8192,.recv_depth = 8,.send_slots = 16,
        .max_reads = 2,.rma_depth = DEPTH };
    gdr_verbs_am_ops_t ops = {.deliver = deliver,.rndv_done = rndv_done };
    am_g = gdr_verbs_am_create(dev, me, 2, need, &cfg, &ops, NULL, why, sizeof(why));
    if (am_g == NULL) {
        printf("FAIL rank %d: %s\n", me, why);
        return NULL;
    }
    /* GDR_TEST_RMA_CHUNK: every case again with puts and gets cut into work requests of
     * that many bytes (larger where an operation would need more than DEPTH) */
    const char *chunk = getenv("GDR_TEST_RMA_CHUNK");
    rma_chunk_g = chunk != NULL ? strtoull(chunk, NULL, 0) : 0;
    const char *hold = getenv("GDR_TEST_RMA_HOLD");
    if (hold != NULL)
        rma_hold_g = (uint32_t) strtoul(hold, NULL, 0);
    gdr_verbs_rma_config_t rcfg = {.depth = DEPTH,.bounce_size = 4096,.bounce_count = 8,
        .chunk = rma_chunk_g,.hold = rma_hold_g };
    gdr_verbs_rma_t *rma = gdr_verbs_rma_create(am_g, &rcfg, why, sizeof(why));
    if (rma == NULL) {
        printf("FAIL rank %d: %s\n", me, why);
        return NULL;
    }
    size_t cl = gdr_verbs_am_card_size(am_g);
    char *mine = malloc(cl), *theirs = malloc(cl);
    gdr_verbs_am_card(am_g, mine);
    int ok = write(sock, mine, cl) == (ssize_t) cl && read(sock, theirs, cl) == (ssize_t) cl
        && gdr_verbs_am_add_peer(am_g, peer, theirs, cl) == 0
        && gdr_verbs_am_add_peer(am_g, me, mine, cl) == 0;
    /* connected now, both: a target that only waits on the socket while its peer
     * writes into it would never answer a connection request */
    int r = 0;
    while (ok && (r = gdr_verbs_am_connect_peer(am_g, peer)) == 0) {
        int p;
        ok = gdr_verbs_am_progress(am_g, &p) == 0;
    }
    ok = ok && r > 0;
    free(mine);
    free(theirs);
    if (!ok) {
        printf("FAIL rank %d: connect: %s\n", me, gdr_verbs_am_error(am_g));
        return NULL;
    }
    return rma;
}

static int run(int me, const char *devname, int sock)
{
    gdr_verbs_device_t dev;
    char why[256];
    int peer = 1 - me;
    gdr_verbs_rma_t *rma = connect_pair(me, devname, sock, &dev);
    if (rma == NULL)
        return 1;

    uint8_t *win = aligned_alloc(4096, WIN_BYTES), *stale = aligned_alloc(4096, 4096);
    memset(win, 0, WIN_BYTES);
    memset(stale, 0xab, 4096);
    gdr_verbs_rma_region_t reg, sreg;
    unsigned acc = GDR_VERBS_RMA_REMOTE_READ | GDR_VERBS_RMA_REMOTE_WRITE |
        GDR_VERBS_RMA_REMOTE_ATOMIC;
    if (gdr_verbs_rma_register(rma, win, WIN_BYTES, acc, &reg, why, sizeof(why)) != 0
        || gdr_verbs_rma_register(rma, stale, 4096, acc, &sreg, why, sizeof(why)) != 0) {
        printf("FAIL rank %d: %s\n", me, why);
        return 1;
    }
    wininfo_t my = {.addr = reg.addr,.len = reg.len,.rkey = reg.rkey,
        .stale_rkey = sreg.rkey,.stale_addr = sreg.addr }, their;
    if (write(sock, &my, sizeof(my)) != sizeof(my) || read(sock, &their, sizeof(their))
        != sizeof(their))
        return 1;
    sync_peer(sock);

    /* puts of each size class into the peer's window, at offsets by size */
    static const size_t sizes[] = { 8, 100, 3000, 4096, 65536, 1u << 20 };
    uint8_t *src = malloc(1u << 20), *back = malloc(1u << 20);
    uint64_t off = 0, chunks0 = gdr_verbs_rma_stats(rma)->chunks;
    int done = 0, expect = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        for (size_t i = 0; i < sizes[k]; i++)
            src[i] = pat(me + (int) k, i);
        int copied = 0;
        POST(put_sized(rma, peer, src, sizes[k], their.addr + off, their.rkey,
                               0, count_done, &done, &copied));
        expect++;
        if (!copied)
            wait_for(&done, expect);    /* a registered source stays in use until done */
        off += sizes[k] + 64;
    }
    wait_for(&done, expect);
    GDR_CHECK(!failed_g && done == expect, "rank %d: %d puts (8 B .. 1 MiB) completed", me,
              done);
    /* one work request each, or (GDR_TEST_RMA_CHUNK=1000) one for each bounced or inline
     * put (the chunk is at least the 4 KiB bounce size), 16 for 64 KiB and 16 of 64 KiB, not
     * 256, for 1 MiB: an operation never needs more than DEPTH */
    uint64_t want_chunks = rma_chunk_g == 1000 ? 4 + 16 + 16 : 6;
    GDR_CHECK(gdr_verbs_rma_stats(rma)->chunks - chunks0 == want_chunks,
              "rank %d: the puts took %llu work requests (want %llu)", me,
              (unsigned long long) (gdr_verbs_rma_stats(rma)->chunks - chunks0),
              (unsigned long long) want_chunks);
    sync_peer(sock);
    /* the peer wrote into my window: check it in place */
    int ok = 1;
    off = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        for (size_t i = 0; i < sizes[k]; i++)
            ok &= win[off + i] == pat(peer + (int) k, i);
        off += sizes[k] + 64;
    }
    GDR_CHECK(ok, "rank %d: every byte the peer put is in my window", me);

    /* get it back from the peer's window */
    off = 0;
    ok = 1;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        memset(back, 0, sizes[k]);
        POST(get_sized(rma, peer, back, sizes[k], their.addr + off, their.rkey,
                               count_done, &done));
        expect++;
        wait_for(&done, expect);
        for (size_t i = 0; i < sizes[k]; i++)
            ok &= back[i] == pat(me + (int) k, i);
        off += sizes[k] + 64;
    }
    GDR_CHECK(ok && !failed_g, "rank %d: gets read back what was put", me);

    /* a get and, posted at once behind it, a fenced put over the bytes it reads: the put
     * acts only after the get has read them (on rxe by its in-order responder, the fence
     * bit left off; counted either way) */
    {
        /* the 100-byte put's first 8 bytes (offset 72), put back afterwards */
        uint64_t want, over = 0x5a5a5a5a5a5a5a5aull, got = 0;
        uint64_t fenced0 = gdr_verbs_rma_stats(rma)->fenced;
        uint8_t pb[8];
        int copied = 0;
        for (size_t i = 0; i < 8; i++)
            pb[i] = pat(me + 1, i);
        memcpy(&want, pb, 8);
        POST(get_sized(rma, peer, &got, 8, their.addr + 72, their.rkey, count_done,
                               &done));
        POST(put_sized(rma, peer, &over, 8, their.addr + 72, their.rkey, 1, count_done,
                               &done, &copied));
        expect += 2;
        wait_for(&done, expect);
        GDR_CHECK(!failed_g && got == want && gdr_verbs_rma_stats(rma)->fenced == fenced0 + 1,
                  "rank %d: a get, then a fenced put over its bytes: the get read them first "
                  "(%#llx), one fenced work request", me, (unsigned long long) got);
        POST(put_sized(rma, peer, pb, 8, their.addr + 72, their.rkey, 0, count_done,
                               &done, &copied));
        expect++;
        wait_for(&done, expect);
    }

    /* a pinned landing buffer takes gets into its parts (a piecewise get): the 64 KiB
     * and 1 MiB puts land at two places of one buffer */
    gdr_verbs_rma_pin_t *pin = NULL, *none = NULL;
    memset(back, 0, 1u << 20);
    int pinned = gdr_verbs_rma_pin(rma, back, 1u << 20, 0, &pin) == 0 && pin != NULL
        && gdr_verbs_rma_pin(rma, back, 4096, 0, &none) == 0 && none == NULL;
    uint64_t off64k = 8 + 64 + 100 + 64 + 3000 + 64 + 4096 + 64;
    POST(get_sized(rma, peer, back, 65536, their.addr + off64k, their.rkey, count_done,
                           &done));
    POST(get_sized(rma, peer, back + 65536, 100000, their.addr + off64k + 65536 + 64,
                           their.rkey, count_done, &done));
    expect += 2;
    wait_for(&done, expect);
    ok = 1;
    for (size_t i = 0; i < 65536; i++)
        ok &= back[i] == pat(me + 4, i);
    for (size_t i = 0; i < 100000; i++)
        ok &= back[65536 + i] == pat(me + 5, i);
    gdr_verbs_rma_unpin(rma, pin);
    GDR_CHECK(pinned && ok && !failed_g, "rank %d: gets into parts of a pinned buffer", me);
    sync_peer(sock);

    /* a gather list: three pieces of src (pinned as one span) in one write to the
     * peer's window at 2 MiB; read back scattered into three pieces of back */
    const uint64_t gat = 2u << 20;
    for (size_t i = 0; i < (1u << 20); i++)
        src[i] = pat(me + 7, i);
    struct iovec g[3] = { {src + 10, 5000}, {src + 20000, 7}, {src + 500000, 70000} };
    struct iovec sc[3] = { {back + 3, 40000}, {back + 100000, 1}, {back + 200000, 35006} };
    gdr_verbs_rma_pin_t *gpin = NULL, *spin = NULL;
    int fits = gdr_verbs_rma_sge_fits(rma, 3, 75007) && !gdr_verbs_rma_sge_fits(rma, 17, 75007)
        && gdr_verbs_rma_pin(rma, src, 1u << 20, 0, &gpin) == 0
        && gdr_verbs_rma_pin(rma, back, 1u << 20, 0, &spin) == 0;
    memset(back, 0, 1u << 20);
    if (fits) {
        POST(gdr_verbs_rma_writev(rma, peer, g, 3, gpin, their.addr + gat, their.rkey,
                                  count_done, &done));
        expect++;
        wait_for(&done, expect);
        POST(gdr_verbs_rma_readv(rma, peer, sc, 3, spin, their.addr + gat, their.rkey,
                                 count_done, &done));
        expect++;
        wait_for(&done, expect);
    }
    /* the 75007 gathered bytes, in order, against the scattered ones, in order */
    ok = fits;
    size_t gi = 0, go = 0, si = 0, so = 0;
    for (size_t k = 0; ok && k < 75007; k++) {
        ok &= ((uint8_t *) g[gi].iov_base)[go] == ((uint8_t *) sc[si].iov_base)[so];
        if (++go == g[gi].iov_len) { gi++; go = 0; }
        if (++so == sc[si].iov_len) { si++; so = 0; }
    }
    ok &= back[2] == 0 && back[40003] == 0 && back[200000 + 35006] == 0;  /* nothing around */
    gdr_verbs_rma_unpin(rma, gpin);
    gdr_verbs_rma_unpin(rma, spin);
    GDR_CHECK(ok && !failed_g && gdr_verbs_rma_stats(rma)->gathered == 2,
              "rank %d: a 3-piece gather write and a 3-piece scatter read round-trip", me);
    sync_peer(sock);

    /* both ranks add to rank 1's counter: rank 0 from afar, rank 1 through loopback */
    uint64_t ctr_off = WIN_BYTES - 64, old, sum_old = 0;
    uint64_t ctr_addr = me == 1 ? my.addr + ctr_off : their.addr + ctr_off;
    uint32_t ctr_key = me == 1 ? my.rkey : their.rkey;
    for (int i = 0; i < N_FADD; i++) {
        POST(gdr_verbs_rma_atomic(rma, 1, GDR_VERBS_RMA_FETCH_ADD, 3, 0, &old, ctr_addr, ctr_key,
                                  0, count_done, &done));
        expect++;
        wait_for(&done, expect);
        sum_old += old % 3 == 0;
    }
    GDR_CHECK(sum_old == N_FADD, "rank %d: %d fetch-adds returned multiples of 3", me, N_FADD);
    sync_peer(sock);
    if (me == 1) {
        uint64_t v;
        memcpy(&v, win + ctr_off, 8);
        GDR_CHECK(v == 2u * 3u * N_FADD, "loopback and remote fetch-adds on one word sum to "
                  "%llu (expected %u)", (unsigned long long) v, 2u * 3u * N_FADD);
    }
    sync_peer(sock);

    /* compare-and-swap on the peer: one that fails, one that succeeds */
    if (me == 0) {
        uint64_t v = 0;
        POST(gdr_verbs_rma_atomic(rma, 1, GDR_VERBS_RMA_CMP_SWAP, 42, 7, &v, ctr_addr, ctr_key,
                                  1, count_done, &done));
        expect++;
        wait_for(&done, expect);
        GDR_CHECK(v == 2u * 3u * N_FADD, "a failing CAS returns the current value (%llu)",
                  (unsigned long long) v);
        POST(gdr_verbs_rma_atomic(rma, 1, GDR_VERBS_RMA_CMP_SWAP, 42, v, &old, ctr_addr,
                                  ctr_key, 1, count_done, &done));
        expect++;
        wait_for(&done, expect);
        GDR_CHECK(old == v, "a matching CAS returns the old value");
    }
    sync_peer(sock);
    if (me == 1) {
        uint64_t v;
        memcpy(&v, win + ctr_off, 8);
        GDR_CHECK(v == 42, "the CAS stored its value (%llu)", (unsigned long long) v);
    }

    /* batches of fetch-adds, one doorbell each: 8 + 8 + 5 words of rank 1's window */
    if (me == 0) {
        enum { NV = 21 };
        uint64_t before[NV], after[NV], olds[NV], adds[NV], raddrs[NV];
        uint64_t base = their.addr + WIN_BYTES - 4096;
        size_t per = gdr_verbs_rma_atomicv_max(rma);
        uint64_t posts0 = gdr_verbs_rma_stats(rma)->atomic_posts;
        for (int j = 0; j < NV; j++) {
            adds[j] = 1000u + (uint64_t) j;
            raddrs[j] = base + 8u * (uint64_t) j;
        }
        POST(get_sized(rma, peer, before, sizeof(before), base, their.rkey, count_done,
                               &done));
        expect++;
        wait_for(&done, expect);
        for (size_t j = 0; j < NV; j += per) {
            size_t n = NV - j < per ? NV - j : per;
            POST(gdr_verbs_rma_atomicv(rma, peer, GDR_VERBS_RMA_FETCH_ADD, &adds[j], 0, &olds[j],
                                       &raddrs[j], n, their.rkey, 0, count_done, &done));
            expect++;
        }
        wait_for(&done, expect);
        POST(get_sized(rma, peer, after, sizeof(after), base, their.rkey, count_done,
                               &done));
        expect++;
        wait_for(&done, expect);
        int ok_v = 1;
        for (int j = 0; j < NV; j++)
            ok_v &= olds[j] == before[j] && after[j] == before[j] + adds[j];
        uint64_t posts = gdr_verbs_rma_stats(rma)->atomic_posts - posts0;
        GDR_CHECK(ok_v && !failed_g && per == DEPTH / 2 && posts == (NV + per - 1) / per,
                  "%d fetch-adds in %llu batched posts (%zu per post): old values returned, "
                  "every word added to once", NV, (unsigned long long) posts, per);
    }
    sync_peer(sock);

    /* more operations than the queue depth, posted without waiting; 8 bytes go inline
     * (this layer was made before the queue pairs that grant the inline size) */
    uint64_t inlined0 = gdr_verbs_rma_stats(rma)->inline_puts;
    uint64_t bells0 = gdr_verbs_rma_stats(rma)->doorbells, held0 = gdr_verbs_rma_stats(rma)->held;
    uint64_t *vals = malloc(N_MANY * sizeof(uint64_t));
    for (int i = 0; i < N_MANY; i++) {
        vals[i] = ((uint64_t) me << 32) | (uint64_t) i;
        int copied;
        POST(put_sized(rma, peer, &vals[i], 8, their.addr + 8u * (uint64_t) i,
                               their.rkey, 0, count_done, &done, &copied));
        expect++;
    }
    wait_for(&done, expect);
    const gdr_verbs_rma_stats_t *rs = gdr_verbs_rma_stats(rma);
    GDR_CHECK(!failed_g && rs->busy > 0, "rank %d: %d puts through a %d-deep queue (%llu "
              "times it was full)", me, N_MANY, DEPTH, (unsigned long long) rs->busy);
    GDR_CHECK(rs->inline_puts - inlined0 == N_MANY, "rank %d: %d 8-byte puts, %llu of them "
              "inline", me, N_MANY, (unsigned long long) (rs->inline_puts - inlined0));
    uint64_t bells = rs->doorbells - bells0, held = rs->held - held0;
    if (rma_hold_g >= 8)
        GDR_CHECK(bells <= N_MANY / 4 && held >= N_MANY / 2, "rank %d: %d puts rang %llu "
                  "doorbells (%llu held back first; up to %u share one)", me, N_MANY,
                  (unsigned long long) bells, (unsigned long long) held, rma_hold_g);
    else if (rma_hold_g == 0)
        GDR_CHECK(bells == N_MANY && held == 0, "rank %d: nothing held: %d puts, %llu "
                  "doorbells", me, N_MANY, (unsigned long long) bells);
    sync_peer(sock);
    ok = 1;
    for (int i = 0; i < N_MANY; i++) {
        uint64_t v;
        memcpy(&v, win + 8u * (uint64_t) i, 8);
        ok &= v == (((uint64_t) peer << 32) | (uint64_t) i);
    }
    GDR_CHECK(ok, "rank %d: all %d small puts landed", me, N_MANY);
    sync_peer(sock);

    /* a message after held puts to the same peer: the puts leave first (one queue pair,
     * in order), so the message finds them in the window */
    order_win = (const uint64_t *) (win + 2u * WIN_BYTES / 4);
    uint64_t obase = 1000u + (uint64_t) me * 100u, held1 = gdr_verbs_rma_stats(rma)->held;
    uint64_t ovals[N_ORDER];
    for (int i = 0; i < N_ORDER; i++) {
        ovals[i] = obase + (uint64_t) i;
        int copied;
        POST(put_sized(rma, peer, &ovals[i], 8, their.addr + 2u * WIN_BYTES / 4
                               + 8u * (uint64_t) i, their.rkey, 0, count_done, &done, &copied));
        expect++;
    }
    uint64_t held_now = gdr_verbs_rma_stats(rma)->held - held1;
    if (gdr_verbs_am_send_eager(am_g, peer, ORDER_HANDLER, &obase, sizeof(obase), NULL, 0) != 0
        && !failed_g) {
        failed_g = 1;
        printf("     send failed: %s\n", gdr_verbs_am_error(am_g));
    }
    /* (a message that overtook held puts would arrive long before them) */
    nanosleep(&(struct timespec) {.tv_nsec = 200000000 }, NULL);
    wait_for(&done, expect);
    while (order_seen < 0 && !failed_g)
        pump();
    GDR_CHECK(!failed_g && order_seen == N_ORDER && (rma_hold_g == 0 || held_now > 0),
              "rank %d: a message sent after %d puts (%llu of them held) found %d of them "
              "landed", me, N_ORDER, (unsigned long long) held_now, order_seen);
    sync_peer(sock);

    /* a dead key: rank 1 deregisters, rank 0 writes with the old key */
    if (me == 1)
        gdr_verbs_rma_deregister(rma, &sreg);
    sync_peer(sock);
    if (me == 0) {
        int err = put_must_fail(rma, 0x1111111111111111ull, their.stale_addr, their.stale_rkey,
                                &done);
        GDR_CHECK(err && strstr(gdr_verbs_am_error(am_g), "refused") != NULL,
                  "a put with a dead key fails at the NIC: \"%s\"", gdr_verbs_am_error(am_g));
        GDR_CHECK(failed_ops == 1, "the refused put's operation completed once, in error (%d)",
                  failed_ops);
    }
    sync_peer(sock);
    if (me == 1) {
        ok = 1;
        for (int i = 0; i < 4096; i++)
            ok &= stale[i] == 0xab;
        GDR_CHECK(ok, "the memory behind the dead key is unchanged");
    }
    sync_peer(sock);
    gdr_verbs_rma_deregister(rma, &reg);
    gdr_verbs_rma_destroy(rma);
    gdr_verbs_am_destroy(am_g);
    gdr_verbs_device_close(&dev);
    return gdr_unit_finish();
}

/* A key covers its registration exactly, not the pages around it: a window of 100 bytes
 * at offset 100 of a page; a put that ends on its last byte lands, one that runs 4 bytes
 * past it fails at the NIC and changes nothing, inside the window or past it.  (A failed
 * operation breaks its queue pair: this runs on a connection of its own.) */
static int run_bounds(int me, const char *devname, int sock)
{
    gdr_verbs_device_t dev;
    char why[256];
    failed_g = failed_ops = 0;
    gdr_verbs_rma_t *rma = connect_pair(me, devname, sock, &dev);
    if (rma == NULL)
        return 1;
    uint8_t *page = aligned_alloc(4096, 4096);
    memset(page, 0xab, 4096);
    gdr_verbs_rma_region_t reg;
    if (gdr_verbs_rma_register(rma, page + 100, 100, GDR_VERBS_RMA_REMOTE_READ
                               | GDR_VERBS_RMA_REMOTE_WRITE | GDR_VERBS_RMA_REMOTE_ATOMIC, &reg,
                               why, sizeof(why)) != 0) {
        printf("FAIL rank %d: %s\n", me, why);
        return 1;
    }
    wininfo_t my = {.addr = reg.addr,.len = reg.len,.rkey = reg.rkey }, their;
    if (write(sock, &my, sizeof(my)) != sizeof(my) || read(sock, &their, sizeof(their))
        != sizeof(their))
        return 1;
    sync_peer(sock);
    if (me == 0) {
        uint64_t v = 0x2222222222222222ull;
        int done = 0, copied;
        POST(put_sized(rma, 1, &v, 8, their.addr + 92, their.rkey, 0, count_done, &done,
                               &copied));
        wait_for(&done, 1);
        GDR_CHECK(!failed_g && done == 1, "a put ending on the last byte of a 100-byte window "
                  "completes");
        int err = put_must_fail(rma, 0x3333333333333333ull, their.addr + 96, their.rkey, &done);
        GDR_CHECK(err && strstr(gdr_verbs_am_error(am_g), "refused") != NULL,
                  "a put running 4 bytes past the window fails at the NIC: \"%s\"",
                  gdr_verbs_am_error(am_g));
        GDR_CHECK(failed_ops == 1 && done == 1, "it completed once, in error (%d)", failed_ops);
    }
    sync_peer(sock);
    if (me == 1) {
        int ok = 1;
        for (int i = 0; i < 4096; i++)
            ok &= page[i] == (i >= 192 && i < 200 ? 0x22 : 0xab);
        GDR_CHECK(ok, "the page holds the put that fit and nothing of the one that did not");
    }
    sync_peer(sock);
    gdr_verbs_rma_deregister(rma, &reg);
    gdr_verbs_rma_destroy(rma);
    gdr_verbs_am_destroy(am_g);
    gdr_verbs_device_close(&dev);
    free(page);
    return gdr_unit_finish();
}

int main(int argc, char **argv)
{
    int rc = gdr_rxe_pair_main(argc, argv, run);
    return gdr_rxe_pair_main(argc, argv, run_bounds) || rc;
}
