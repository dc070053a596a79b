/* rndv_zcopy: two-sided messages on both sides of the 16-KiB eager limit, where gdr reads
 * a rendezvous payload straight into the matched receive buffer (issue 69).  Values are
 * checked every time, with a guard byte past every buffer:
 *   - contiguous messages of 0 B .. 4 MiB, MPI_Send/MPI_Recv and MPI_Isend/MPI_Irecv,
 *     both directions, status and MPI_Get_count checked;
 *   - MPI_ANY_SOURCE and MPI_ANY_TAG receives;
 *   - 8 messages in flight at once, their receives posted in reverse tag order, and 6 of
 *     one tag (eager and rendezvous sizes mixed), which must match in the order sent;
 *   - MPI_Probe + MPI_Recv, MPI_Mprobe + MPI_Mrecv, MPI_Improbe + MPI_Imrecv;
 *   - MPI_Ssend (eager and rendezvous sizes), which must not finish before its receive is
 *     posted;
 *   - vector receives of contiguous sends: many small pieces (landed, then copied) and
 *     4 large ones (read in place), the gaps left alone;
 *   - messages that arrive before their receive is posted (the receiver sleeps first);
 *   - a receive buffer smaller than the message: MPI_ERR_TRUNCATE, the part that fits
 *     intact, nothing written past it.
 * With GDR_TEST_EXPECT_NATIVE=1 (maint/check-rxe: every rank on its own node) rank 1 also
 * asserts through MPI_T that a posted contiguous 4-MiB receive was read in place (MPI_T
 * gdr_am_rndv_zcopy_bytes grew by 4 MiB, gdr_am_rndv_copied_bytes not at all), a
 * 4-piece vector too, and that a vector of many pieces was landed and copied; and rank 0
 * that a contiguous 4-MiB send packed nothing and a 1-MiB vector send packed 1 MiB (MPI_T
 * gdr_am_send_packed_bytes), and that small standard-mode sends of a predefined type went
 * without MPIDIG's request (MPI_T gdr_am_sends_immediate: an 8-byte MPI_Send and a
 * 1000-byte MPI_Isend count, an MPI_Ssend, a vector and a rendezvous size do not).
 * Exactly 2 ranks. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "gdr_mpi_test.h"

#define MIB (1024 * 1024)
#define TAG_SWEEP 10
#define TAG_ANY 20
#define TAG_FLIGHT 100          /* .. 107 */
#define TAG_ORDER 200
#define TAG_PROBE 300
#define TAG_SSEND 400
#define TAG_VEC 500
#define TAG_EARLY 600
#define TAG_TRUNC 700
#define TAG_GO 800
#define TAG_NATIVE 900
#define GUARD 0xEE

static int me, other;

static void sleep_ms(long ms)
{
    struct timespec t = {.tv_sec = ms / 1000,.tv_nsec = (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

static unsigned char val(int seed, size_t i)
{
    return (unsigned char) (i * 7 + (size_t) seed * 131 + (i >> 12) * 3 + 1);
}

/* len bytes of seed's pattern and a guard byte past them */
static unsigned char *make_out(size_t len, int seed)
{
    unsigned char *b = malloc(len + 1);
    if (b == NULL)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    for (size_t i = 0; i < len; i++)
        b[i] = val(seed, i);
    b[len] = GUARD;
    return b;
}

/* cap bytes (and the guard past them) filled with the guard value */
static unsigned char *make_in(size_t cap)
{
    unsigned char *b = malloc(cap + 1);
    if (b == NULL)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    memset(b, GUARD, cap + 1);
    return b;
}

/* len bytes of seed's pattern at b, then guard values up to and including b[cap] */
static void check_in(const unsigned char *b, size_t len, size_t cap, int seed)
{
    long bad = 0;
    for (size_t i = 0; i < len && bad < 5; i++)
        if (!gdr_check_long("received byte", (long) i, val(seed, i), b[i]))
            bad++;
    for (size_t i = len; i <= cap && bad < 5; i++)
        if (!gdr_check_long("byte past the message", (long) i, GUARD, b[i]))
            bad++;
}

static void check_status(const MPI_Status *st, int src, int tag, size_t len)
{
    int count = -1;
    gdr_check_long("status.MPI_SOURCE", 0, src, st->MPI_SOURCE);
    gdr_check_long("status.MPI_TAG", 0, tag, st->MPI_TAG);
    MPI_Get_count(st, MPI_BYTE, &count);
    gdr_check_long("MPI_Get_count", 0, (long long) len, count);
}

/* Contiguous messages across the eager limit, blocking then nonblocking, from `from`. */
static void sweep(int from)
{
    static const size_t sizes[] = {
        0, 1, 1000, 16000, 16384, 16385, 20000, 65536, 65537, 1 * MIB, 4 * MIB
    };
    for (int nb = 0; nb < 2; nb++) {
        for (int s = 0; s < (int) (sizeof(sizes) / sizeof(sizes[0])); s++) {
            size_t len = sizes[s];
            int seed = 1000 * from + 10 * s + nb;
            gdr_test_set_context("op=%s bytes=%zu from=%d", nb ? "Isend/Irecv" : "Send/Recv",
                                 len, from);
            if (me == from) {
                unsigned char *out = make_out(len, seed);
                if (nb) {
                    MPI_Request r;
                    gdr_check_mpi("MPI_Isend", MPI_Isend(out, (int) len, MPI_BYTE, other,
                                                         TAG_SWEEP, MPI_COMM_WORLD, &r));
                    gdr_check_mpi("MPI_Wait", MPI_Wait(&r, MPI_STATUS_IGNORE));
                } else {
                    gdr_check_mpi("MPI_Send", MPI_Send(out, (int) len, MPI_BYTE, other,
                                                       TAG_SWEEP, MPI_COMM_WORLD));
                }
                gdr_check_long("send buffer unchanged", (long) len, GUARD, out[len]);
                free(out);
            } else {
                unsigned char *in = make_in(len);
                MPI_Status st;
                if (nb) {
                    MPI_Request r;
                    gdr_check_mpi("MPI_Irecv", MPI_Irecv(in, (int) len, MPI_BYTE, other,
                                                         TAG_SWEEP, MPI_COMM_WORLD, &r));
                    gdr_check_mpi("MPI_Wait", MPI_Wait(&r, &st));
                } else {
                    gdr_check_mpi("MPI_Recv", MPI_Recv(in, (int) len, MPI_BYTE, other,
                                                       TAG_SWEEP, MPI_COMM_WORLD, &st));
                }
                check_status(&st, other, TAG_SWEEP, len);
                check_in(in, len, len, seed);
                free(in);
            }
        }
    }
}

/* MPI_ANY_SOURCE / MPI_ANY_TAG receives of eager and rendezvous sizes, into buffers
 * larger than the messages. */
static void any_source(void)
{
    static const size_t sizes[] = { 100, 200000, 3 * MIB };
    for (int s = 0; s < 3; s++) {
        size_t len = sizes[s], cap = len + 4096;
        int seed = 2000 + s;
        gdr_test_set_context("op=Recv(ANY_SOURCE%s) bytes=%zu", s == 1 ? ", ANY_TAG" : "",
                             len);
        if (me == 0) {
            unsigned char *out = make_out(len, seed);
            gdr_check_mpi("MPI_Send", MPI_Send(out, (int) len, MPI_BYTE, 1, TAG_ANY + s,
                                               MPI_COMM_WORLD));
            free(out);
        } else {
            unsigned char *in = make_in(cap);
            MPI_Status st;
            gdr_check_mpi("MPI_Recv", MPI_Recv(in, (int) cap, MPI_BYTE, MPI_ANY_SOURCE,
                                               s == 1 ? MPI_ANY_TAG : TAG_ANY + s,
                                               MPI_COMM_WORLD, &st));
            check_status(&st, 0, TAG_ANY + s, len);
            check_in(in, len, cap, seed);
            free(in);
        }
    }
}

/* 8 messages in flight, received in reverse tag order; then 6 of one tag, in order. */
static void in_flight(void)
{
    static const size_t sizes[8] = {
        4 * MIB, 20000, 1 * MIB, 100, 65536, 16384, 16385, 3 * MIB
    };
    static const size_t same[6] = { 1 * MIB, 10, 70000, 0, 2 * MIB, 16385 };
    unsigned char *buf[8];
    MPI_Request req[8];
    MPI_Status st[8];

    gdr_test_set_context("op=8 in flight, receives posted in reverse tag order");
    for (int k = 0; k < 8; k++) {
        int seed = 3000 + k;
        if (me == 0) {
            buf[k] = make_out(sizes[k], seed);
            gdr_check_mpi("MPI_Isend", MPI_Isend(buf[k], (int) sizes[k], MPI_BYTE, 1,
                                                 TAG_FLIGHT + k, MPI_COMM_WORLD, &req[k]));
        } else {
            int j = 7 - k;
            buf[j] = make_in(sizes[j]);
            gdr_check_mpi("MPI_Irecv", MPI_Irecv(buf[j], (int) sizes[j], MPI_BYTE, 0,
                                                 TAG_FLIGHT + j, MPI_COMM_WORLD, &req[j]));
        }
    }
    gdr_check_mpi("MPI_Waitall", MPI_Waitall(8, req, st));
    for (int k = 0; k < 8; k++) {
        if (me == 1) {
            gdr_test_set_context("op=8 in flight, tag %d of %zu bytes", TAG_FLIGHT + k,
                                 sizes[k]);
            check_status(&st[k], 0, TAG_FLIGHT + k, sizes[k]);
            check_in(buf[k], sizes[k], sizes[k], 3000 + k);
        }
        free(buf[k]);
    }

    /* one tag: the receives are posted first, each large enough for any of them, and
     * the k-th sent must land in the k-th posted (MPI's non-overtaking rule) */
    gdr_test_set_context("op=6 of one tag, in the order sent");
    size_t cap = 2 * MIB;
    if (me == 1) {
        for (int k = 0; k < 6; k++) {
            buf[k] = make_in(cap);
            gdr_check_mpi("MPI_Irecv", MPI_Irecv(buf[k], (int) cap, MPI_BYTE, 0, TAG_ORDER,
                                                 MPI_COMM_WORLD, &req[k]));
        }
    }
    gdr_check_mpi("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        for (int k = 0; k < 6; k++) {
            buf[k] = make_out(same[k], 3100 + k);
            gdr_check_mpi("MPI_Isend", MPI_Isend(buf[k], (int) same[k], MPI_BYTE, 1, TAG_ORDER,
                                                 MPI_COMM_WORLD, &req[k]));
        }
    }
    gdr_check_mpi("MPI_Waitall", MPI_Waitall(6, req, st));
    for (int k = 0; k < 6; k++) {
        if (me == 1) {
            gdr_test_set_context("op=6 of one tag: receive %d (%zu bytes)", k, same[k]);
            check_status(&st[k], 0, TAG_ORDER, same[k]);
            check_in(buf[k], same[k], cap, 3100 + k);
        }
        free(buf[k]);
    }
}

/* Probe + Recv, Mprobe + Mrecv, Improbe + Imrecv of rendezvous messages (and one eager). */
static void probes(void)
{
    static const size_t sizes[4] = { 2 * MIB, 1 * MIB, 300000, 5000 };
    for (int k = 0; k < 4; k++) {
        size_t len = sizes[k];
        int seed = 4000 + k, kind = k % 3;
        const char *name = kind == 0 ? "Probe+Recv" : kind == 1 ? "Mprobe+Mrecv" :
            "Improbe+Imrecv";
        gdr_test_set_context("op=%s bytes=%zu", name, len);
        if (me == 0) {
            unsigned char *out = make_out(len, seed);
            gdr_check_mpi("MPI_Send", MPI_Send(out, (int) len, MPI_BYTE, 1, TAG_PROBE + k,
                                               MPI_COMM_WORLD));
            free(out);
            continue;
        }
        MPI_Status pst, st;
        MPI_Message msg = MPI_MESSAGE_NULL;
        int count = -1, flag = 0;
        if (kind == 0) {
            gdr_check_mpi("MPI_Probe", MPI_Probe(0, TAG_PROBE + k, MPI_COMM_WORLD, &pst));
        } else if (kind == 1) {
            gdr_check_mpi("MPI_Mprobe", MPI_Mprobe(0, TAG_PROBE + k, MPI_COMM_WORLD, &msg,
                                                   &pst));
        } else {
            while (!flag)
                gdr_check_mpi("MPI_Improbe", MPI_Improbe(0, TAG_PROBE + k, MPI_COMM_WORLD,
                                                         &flag, &msg, &pst));
        }
        check_status(&pst, 0, TAG_PROBE + k, len);
        MPI_Get_count(&pst, MPI_BYTE, &count);
        if (count < 0)
            count = 0;
        unsigned char *in = make_in((size_t) count);
        if (kind == 0) {
            gdr_check_mpi("MPI_Recv", MPI_Recv(in, count, MPI_BYTE, 0, TAG_PROBE + k,
                                               MPI_COMM_WORLD, &st));
        } else if (kind == 1) {
            gdr_check_mpi("MPI_Mrecv", MPI_Mrecv(in, count, MPI_BYTE, &msg, &st));
        } else {
            MPI_Request r;
            gdr_check_mpi("MPI_Imrecv", MPI_Imrecv(in, count, MPI_BYTE, &msg, &r));
            gdr_check_mpi("MPI_Wait", MPI_Wait(&r, &st));
        }
        check_status(&st, 0, TAG_PROBE + k, len);
        check_in(in, len, (size_t) count, seed);
        free(in);
    }
}

/* Ssend: values, and no return before the receiver (which sleeps 300 ms) posts. */
static void ssend(void)
{
    static const size_t sizes[2] = { 100, 1 * MIB };
    for (int k = 0; k < 2; k++) {
        size_t len = sizes[k];
        int seed = 5000 + k;
        gdr_test_set_context("op=Ssend bytes=%zu", len);
        gdr_check_mpi("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
        if (me == 0) {
            unsigned char *out = make_out(len, seed);
            double t0 = MPI_Wtime();
            gdr_check_mpi("MPI_Ssend", MPI_Ssend(out, (int) len, MPI_BYTE, 1, TAG_SSEND + k,
                                                 MPI_COMM_WORLD));
            double took = MPI_Wtime() - t0;
            if (took < 0.1)
                gdr_test_fail("MPI_Ssend returned after %.3f s, before the receive was "
                              "posted (the receiver slept 0.3 s)", took);
            free(out);
        } else {
            unsigned char *in = make_in(len);
            MPI_Status st;
            sleep_ms(300);
            gdr_check_mpi("MPI_Recv", MPI_Recv(in, (int) len, MPI_BYTE, 0, TAG_SSEND + k,
                                               MPI_COMM_WORLD, &st));
            check_status(&st, 0, TAG_SSEND + k, len);
            check_in(in, len, len, seed);
            free(in);
        }
    }
}

/* MPI_T counters of rank 1's receive path: zero-copy and copied bytes before and after
 * one receive, asserted only where every rank is remote (GDR_TEST_EXPECT_NATIVE). */
typedef struct {
    unsigned long long zcopy, copied;
} rx_bytes_t;

static rx_bytes_t rx_bytes(MPI_T_pvar_session session)
{
    rx_bytes_t b = { 0, 0 };
    if (me == 1 && gdr_test_expect_native()) {
        b.zcopy = gdr_pvar_value(session, "gdr_am_rndv_zcopy_bytes");
        b.copied = gdr_pvar_value(session, "gdr_am_rndv_copied_bytes");
    }
    return b;
}

/* MPIR_CVAR_CH4_GDR_RNDV_ZCOPY_MIN at its default: the counters' expectations hold */
static int zcopy_default(void)
{
    const char *v = getenv("MPIR_CVAR_CH4_GDR_RNDV_ZCOPY_MIN");
    return v == NULL || *v == '\0' || atoi(v) == 0;
}

static void expect_rx(const rx_bytes_t *before, const rx_bytes_t *after,
                      unsigned long long zcopy, unsigned long long copied)
{
    if (me != 1 || !gdr_test_expect_native() || !zcopy_default())
        return;
    unsigned long long dz = after->zcopy - before->zcopy, dc = after->copied - before->copied;
    if (dz != zcopy || dc != copied)
        gdr_test_fail("MPI_T: %llu bytes read in place (want %llu), %llu landed and copied "
                      "(want %llu)", dz, zcopy, dc, copied);
}

/* Vector receives of a contiguous send of NV ints: every other int (many pieces: lands,
 * then copied), then 4 blocks of NV/4 ints with a gap as large between them (read in
 * place).  The gaps keep their guard values. */
#define NV (256 * 1024)
static void vectors(MPI_T_pvar_session session)
{
    for (int k = 0; k < 2; k++) {
        int blocks = k == 0 ? NV : 4, blen = NV / blocks, stride = 2 * blen;
        gdr_test_set_context("op=Recv into vector(%d x %d ints, stride %d) of a contiguous "
                             "send", blocks, blen, stride);
        if (me == 0) {
            int *out = malloc(sizeof(int) * NV);
            if (out == NULL)
                gdr_test_die("malloc", MPI_ERR_NO_MEM);
            for (int i = 0; i < NV; i++)
                out[i] = 7 * i + k;
            gdr_check_mpi("MPI_Recv(go)", MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_GO,
                                                   MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            gdr_check_mpi("MPI_Send", MPI_Send(out, NV, MPI_INT, 1, TAG_VEC + k,
                                               MPI_COMM_WORLD));
            free(out);
            continue;
        }
        MPI_Datatype vec;
        MPI_Type_vector(blocks, blen, stride, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        size_t span = (size_t) 2 * NV;
        int *in = malloc(sizeof(int) * span);
        if (in == NULL)
            gdr_test_die("malloc", MPI_ERR_NO_MEM);
        for (size_t i = 0; i < span; i++)
            in[i] = -1;
        MPI_Request r;
        MPI_Status st;
        rx_bytes_t b0 = rx_bytes(session);
        gdr_check_mpi("MPI_Irecv", MPI_Irecv(in, 1, vec, 0, TAG_VEC + k, MPI_COMM_WORLD, &r));
        gdr_check_mpi("MPI_Send(go)", MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_GO, MPI_COMM_WORLD));
        gdr_check_mpi("MPI_Wait", MPI_Wait(&r, &st));
        rx_bytes_t b1 = rx_bytes(session);
        int count = -1;
        MPI_Get_count(&st, MPI_INT, &count);
        gdr_check_long("MPI_Get_count(MPI_INT)", 0, NV, count);
        long bad = 0;
        for (size_t i = 0; i < span && bad < 5; i++) {
            size_t blk = i / (size_t) stride, off = i % (size_t) stride;
            long long want = off < (size_t) blen ? (long long) (7 * (blk * blen + off) + k) : -1;
            if (!gdr_check_long("vector buffer", (long) i, want, in[i]))
                bad++;
        }
        unsigned long long bytes = sizeof(int) * (unsigned long long) NV;
        expect_rx(&b0, &b1, k == 0 ? 0 : bytes, k == 0 ? bytes : 0);
        free(in);
        MPI_Type_free(&vec);
    }
}

/* Messages that arrive before their receive is posted: rank 1 sleeps 500 ms first. */
static void early(void)
{
    static const size_t sizes[2] = { 1000, 4 * MIB };
    MPI_Request req[2];
    unsigned char *buf[2];
    gdr_test_set_context("op=messages that arrive before their receive is posted");
    gdr_check_mpi("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        for (int k = 0; k < 2; k++) {
            buf[k] = make_out(sizes[k], 6000 + k);
            gdr_check_mpi("MPI_Isend", MPI_Isend(buf[k], (int) sizes[k], MPI_BYTE, 1,
                                                 TAG_EARLY + k, MPI_COMM_WORLD, &req[k]));
        }
        gdr_check_mpi("MPI_Waitall", MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        for (int k = 0; k < 2; k++)
            free(buf[k]);
        return;
    }
    sleep_ms(500);
    /* the large one first, though it was sent second */
    for (int k = 1; k >= 0; k--) {
        MPI_Status st;
        buf[k] = make_in(sizes[k]);
        gdr_check_mpi("MPI_Recv", MPI_Recv(buf[k], (int) sizes[k], MPI_BYTE, 0, TAG_EARLY + k,
                                           MPI_COMM_WORLD, &st));
        check_status(&st, 0, TAG_EARLY + k, sizes[k]);
        check_in(buf[k], sizes[k], sizes[k], 6000 + k);
        free(buf[k]);
    }
}

/* A 4-MiB message into a 1-MiB buffer: MPI_ERR_TRUNCATE, the first MiB right, nothing
 * written past it.  Then the pair still talks. */
static void truncated(void)
{
    size_t len = 4 * MIB, cap = 1 * MIB;
    gdr_test_set_context("op=Recv of %zu bytes into %zu", len, cap);
    if (me == 0) {
        unsigned char *out = make_out(len, 7000);
        gdr_check_mpi("MPI_Send", MPI_Send(out, (int) len, MPI_BYTE, 1, TAG_TRUNC,
                                           MPI_COMM_WORLD));
        free(out);
    } else {
        unsigned char *in = make_in(cap);
        MPI_Status st;
        int rc = MPI_Recv(in, (int) cap, MPI_BYTE, 0, TAG_TRUNC, MPI_COMM_WORLD, &st);
        gdr_check_class("MPI_Recv into a smaller buffer", rc, MPI_ERR_TRUNCATE);
        check_in(in, cap, cap, 7000);
        free(in);
    }
    gdr_check_mpi("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
}

/* The counters' case: a posted contiguous 4-MiB receive, read in place. */
static void native(MPI_T_pvar_session session)
{
    size_t len = 4 * MIB;
    gdr_test_set_context("op=posted contiguous receive of %zu bytes, MPI_T", len);
    if (me == 0) {
        unsigned char *out = make_out(len, 8000);
        gdr_check_mpi("MPI_Recv(go)", MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_GO, MPI_COMM_WORLD,
                                               MPI_STATUS_IGNORE));
        gdr_check_mpi("MPI_Send", MPI_Send(out, (int) len, MPI_BYTE, 1, TAG_NATIVE,
                                           MPI_COMM_WORLD));
        free(out);
        return;
    }
    unsigned char *in = make_in(len);
    MPI_Request r;
    MPI_Status st;
    rx_bytes_t b0 = rx_bytes(session);
    gdr_check_mpi("MPI_Irecv", MPI_Irecv(in, (int) len, MPI_BYTE, 0, TAG_NATIVE, MPI_COMM_WORLD,
                                         &r));
    gdr_check_mpi("MPI_Send(go)", MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_GO, MPI_COMM_WORLD));
    gdr_check_mpi("MPI_Wait", MPI_Wait(&r, &st));
    rx_bytes_t b1 = rx_bytes(session);
    check_status(&st, 0, TAG_NATIVE, len);
    check_in(in, len, len, 8000);
    expect_rx(&b0, &b1, len, 0);
    free(in);
}

/* The sender's side, MPI_T gdr_am_send_packed_bytes (rank 0, where every rank is remote):
 * a contiguous 4-MiB send is sent in place (no bytes packed); a vector of 1024 blocks of 256
 * ints (stride 512) is packed whole (1 MiB), and arrives intact in a contiguous receive. */
#define NB 1024
#define BL 256
static void native_send(MPI_T_pvar_session session)
{
    int check = me == 0 && gdr_test_expect_native();
    unsigned long long p0 = 0, p1 = 0, p2 = 0;
    size_t len = 4 * MIB;
    gdr_test_set_context("op=Send of contiguous host data and of a vector, MPI_T packed bytes");
    if (me == 0) {
        unsigned char *out = make_out(len, 8100);
        int *vec_out = malloc(sizeof(int) * NB * 2 * BL);
        if (vec_out == NULL)
            gdr_test_die("malloc", MPI_ERR_NO_MEM);
        for (int i = 0; i < NB * 2 * BL; i++)
            vec_out[i] = (i / BL) % 2 ? -1 : 5 * i + 3;
        MPI_Datatype vec;
        MPI_Type_vector(NB, BL, 2 * BL, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        MPI_Datatype pair;      /* 4 blocks of 2 ints, stride 512: the first 8 of vec_out */
        MPI_Type_vector(4, 2, 2 * BL, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        if (check)
            p0 = gdr_pvar_value(session, "gdr_am_send_packed_bytes");
        gdr_check_mpi("MPI_Send", MPI_Send(out, (int) len, MPI_BYTE, 1, TAG_NATIVE + 1,
                                           MPI_COMM_WORLD));
        if (check)
            p1 = gdr_pvar_value(session, "gdr_am_send_packed_bytes");
        gdr_check_mpi("MPI_Send(vector)", MPI_Send(vec_out, 1, vec, 1, TAG_NATIVE + 2,
                                                   MPI_COMM_WORLD));
        if (check) {
            p2 = gdr_pvar_value(session, "gdr_am_send_packed_bytes");
            gdr_check_long("bytes packed for a contiguous 4-MiB host send", 0, 0,
                           (long long) (p1 - p0));
            gdr_check_long("bytes packed for a 1-MiB vector send", 0,
                           (long long) sizeof(int) * NB * BL, (long long) (p2 - p1));
        }
        /* small sends: gdr's own (no MPIDIG request) for standard mode only */
        unsigned long long i0 = check ? gdr_pvar_value(session, "gdr_am_sends_immediate") : 0;
        MPI_Request r;
        gdr_check_mpi("MPI_Send(8 B)", MPI_Send(out, 8, MPI_BYTE, 1, TAG_NATIVE + 3,
                                                MPI_COMM_WORLD));
        gdr_check_mpi("MPI_Isend(1000 B)", MPI_Isend(out, 250, MPI_INT, 1, TAG_NATIVE + 4,
                                                     MPI_COMM_WORLD, &r));
        gdr_check_mpi("MPI_Wait", MPI_Wait(&r, MPI_STATUS_IGNORE));
        unsigned long long i1 = check ? gdr_pvar_value(session, "gdr_am_sends_immediate") : 0;
        gdr_check_mpi("MPI_Ssend(8 B)", MPI_Ssend(out, 8, MPI_BYTE, 1, TAG_NATIVE + 5,
                                                  MPI_COMM_WORLD));
        gdr_check_mpi("MPI_Send(vector, 8 ints)", MPI_Send(vec_out, 1, pair, 1, TAG_NATIVE + 6,
                                                           MPI_COMM_WORLD));
        gdr_check_mpi("MPI_Send(64 KiB)", MPI_Send(out, 65536, MPI_BYTE, 1, TAG_NATIVE + 7,
                                                   MPI_COMM_WORLD));
        if (check) {
            gdr_check_long("sends without MPIDIG's request: an 8-byte Send, a 1000-byte Isend",
                           0, 2, (long long) (i1 - i0));
            gdr_check_long("... and none of an Ssend, a vector, a 64-KiB Send", 0, 0,
                           (long long) (gdr_pvar_value(session, "gdr_am_sends_immediate") - i1));
        }
        MPI_Type_free(&pair);
        MPI_Type_free(&vec);
        free(vec_out);
        free(out);
        return;
    }
    unsigned char *in = make_in(len);
    int *vin = malloc(sizeof(int) * NB * BL);
    if (vin == NULL)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    MPI_Status st;
    gdr_check_mpi("MPI_Recv", MPI_Recv(in, (int) len, MPI_BYTE, 0, TAG_NATIVE + 1,
                                       MPI_COMM_WORLD, &st));
    check_status(&st, 0, TAG_NATIVE + 1, len);
    check_in(in, len, len, 8100);
    gdr_check_mpi("MPI_Recv(vector)", MPI_Recv(vin, NB * BL, MPI_INT, 0, TAG_NATIVE + 2,
                                               MPI_COMM_WORLD, &st));
    for (int b = 0, bad = 0; b < NB && bad < 5; b++)
        for (int j = 0; j < BL && bad < 5; j++)
            if (!gdr_check_long("vector payload", (long) b * BL + j,
                                5 * (2 * BL * b + j) + 3, vin[b * BL + j]))
                bad++;
    /* the small sends, in the order sent */
    memset(in, GUARD, 9);
    gdr_check_mpi("MPI_Recv(8 B)", MPI_Recv(in, 8, MPI_BYTE, 0, TAG_NATIVE + 3, MPI_COMM_WORLD,
                                            &st));
    check_status(&st, 0, TAG_NATIVE + 3, 8);
    check_in(in, 8, 8, 8100);
    memset(in, GUARD, 1001);
    gdr_check_mpi("MPI_Recv(1000 B)", MPI_Recv(in, 1000, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                               MPI_COMM_WORLD, &st));
    check_status(&st, 0, TAG_NATIVE + 4, 1000);
    check_in(in, 1000, 1000, 8100);
    memset(in, GUARD, 9);
    gdr_check_mpi("MPI_Recv(Ssend)", MPI_Recv(in, 8, MPI_BYTE, 0, TAG_NATIVE + 5,
                                              MPI_COMM_WORLD, &st));
    check_in(in, 8, 8, 8100);
    int pair_in[8];
    gdr_check_mpi("MPI_Recv(8 ints)", MPI_Recv(pair_in, 8, MPI_INT, 0, TAG_NATIVE + 6,
                                               MPI_COMM_WORLD, &st));
    for (int k = 0; k < 8; k++)
        gdr_check_long("vector send's ints", k, 5 * (2 * BL * (k / 2) + k % 2) + 3, pair_in[k]);
    memset(in, GUARD, 65537);
    gdr_check_mpi("MPI_Recv(64 KiB)", MPI_Recv(in, 65536, MPI_BYTE, 0, TAG_NATIVE + 7,
                                               MPI_COMM_WORLD, &st));
    check_in(in, 65536, 65536, 8100);
    free(vin);
    free(in);
}

int main(int argc, char **argv)
{
    int n, provided;
    MPI_T_pvar_session session;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (n != 2) {
        gdr_test_fail("needs exactly 2 ranks (%d)", n);
    } else {
        other = 1 - me;
        native(session);
        sweep(0);
        sweep(1);
        any_source();
        in_flight();
        probes();
        ssend();
        vectors(session);
        early();
        truncated();
        native(session);
        native_send(session);
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
