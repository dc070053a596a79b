/* Two-sided messages from and into device memory, on the simulated GPU (test/gpusim) or a
 * real one: device memory comes from the CUDA driver gdr loads (MPIR_CVAR_CH4_GDR_CUDA_DRIVER).
 * gdr, not MPICH, must classify and copy the device buffers (MPICH cannot see the simulated
 * GPU; in its strict mode any host access to device memory crashes).  Ranks pair up (0-1,
 * 2-3, ...; an odd last rank only takes part in the collective calls); in each pair the even
 * rank sends, the odd one receives, and every value is checked:
 *  - device->device, host->device, device->host at 0 B, 8 B, MPIDIG's eager limit -1, 0, +1
 *    (16792 bytes of payload beside MPIDIG's 48-byte header), 64 KiB and 4 MiB, blocking
 *    and non-blocking;
 *  - MPI_ANY_SOURCE; several messages in flight matched out of posting order (tags);
 *    messages that arrive before their receive (Iprobe until seen, then Recv; Mprobe and
 *    Mrecv); MPI_Probe then Recv; MPI_Ssend; a vector datatype on device buffers (its gaps
 *    keep their bytes); a message larger than its device receive buffer (MPI_ERR_TRUNCATE,
 *    nothing written past the buffer).
 * With GDR_TEST_EXPECT_NATIVE=1 (maint/check-rxe: every rank on its own guest) it also
 * asserts MPI_T gdr_am_device_copied_bytes per message: device data is copied between host
 * and device only where it goes eagerly (its data, after MPIDIG's RTS, up to 16864 bytes) or
 * the NIC cannot reach device memory
 * (MPIR_CVAR_CH4_GDR_GPUDIRECT=staged); with dmabuf or peermem a rendezvous moves none; and
 * gdr_am_send_packed_bytes: eager device data goes straight into the channel's send slot
 * where one is free at once (at least once in the run), a rendezvous never (staged device
 * data goes through pinned chunks: gdr_am_staged_bytes; gdr_am_stage_pinned_bytes stays at
 * its bound after 64 MiB); and that a vector's small device blocks, eager or rendezvous, are
 * packed (and unpacked into a device vector) by gdr's copy kernel (gdr_am_pack_kernels).
 * Without a GPU or driver: prints why and fails. */
#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

#define EAGER_MAX 16792         /* 16 KiB + 512 - 56 (wire) - 48 (MPIDIG_hdr_t) */
/* a larger message goes as MPIDIG's RTS, and its data (MPIDIG_SEND_DATA, 8 bytes of header)
 * still in one eager buffer up to this size */
#define DATA_EAGER_MAX 16864
#define BIG (4 * 1024 * 1024)

static int rank, nranks;
static MPI_T_pvar_session session;
static int in_slot;             /* eager device sends that went straight into a send slot */

static int partner(void)
{
    int p = rank ^ 1;
    return p < nranks ? p : MPI_PROC_NULL;
}

static unsigned char val(int seed, size_t i)
{
    return (unsigned char) (seed * 31 + i * 7 + (i >> 8));
}

static int staged(void)
{
    const char *m = getenv("MPIR_CVAR_CH4_GDR_GPUDIRECT");
    return m != NULL && strcmp(m, "staged") == 0;
}

static unsigned long long copied(void)
{
    return gdr_pvar_value(session, "gdr_am_device_copied_bytes");
}

static unsigned long long packed(void)
{
    return gdr_pvar_value(session, "gdr_am_send_packed_bytes");
}

static unsigned long long staged_bytes(void)
{
    return gdr_pvar_value(session, "gdr_am_staged_bytes");
}

static long env_or(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v != NULL ? atol(v) : dflt;
}

/* A buffer of n bytes (at least 1) in device or host memory, filled with seed's values
 * (fill) or with 0xee (a receive buffer). */
static void *buf_new(int dev, size_t n, int seed, int fill)
{
    unsigned char *h = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        h[i] = fill ? val(seed, i) : 0xee;
    if (!dev)
        return h;
    void *d = dev_alloc(n + 1);
    dev_copy(d, h, n);
    free(h);
    return d;
}

static void buf_free(int dev, void *p)
{
    if (dev)
        dev_free(p);
    else
        free(p);
}

/* Checks n bytes of a receive buffer against seed's values. */
static void buf_check(int dev, const void *p, size_t n, int seed)
{
    unsigned char *h = (unsigned char *) p;
    if (dev) {
        h = malloc(n + 1);
        dev_copy(h, p, n);
    }
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        if (h[i] != val(seed, i) && bad++ < 3)
            gdr_check_long("received", (long) i, val(seed, i), h[i]);
    if (dev)
        free(h);
}

static void check_count(const MPI_Status * st, MPI_Datatype type, int want)
{
    int got = -1;
    MPI_Get_count(st, type, &got);
    gdr_check_long("MPI_Get_count", 0, want, got);
}

/* The bytes of device data gdr should have copied on this rank for one message of n bytes
 * (dev: this rank's buffer is device memory). */
static unsigned long long want_copied(int dev, size_t n)
{
    if (!dev || n == 0)
        return 0;
    return n <= DATA_EAGER_MAX || staged() ? n : 0;
}

/* One message of n bytes, sender's memory sdev, receiver's rdev. */
static void one(int sdev, int rdev, size_t n, int nonblocking, int seed)
{
    int p = partner(), sender = (rank & 1) == 0;
    const char *kind[] = { "host", "device" };
    gdr_test_set_context("%s->%s %zu bytes %s", kind[sdev], kind[rdev], n,
                         nonblocking ? "Isend/Irecv" : "Send/Recv");
    if (p == MPI_PROC_NULL)
        return;
    int dev = sender ? sdev : rdev;
    void *b = buf_new(dev, n, seed, sender);
    unsigned long long before = copied(), packed_before = packed(),
        staged_before = staged_bytes();
    MPI_Status st;
    MPI_Request r;
    if (sender && nonblocking) {
        GDR_CHECK_MPI(MPI_Isend(b, (int) n, MPI_BYTE, p, seed, MPI_COMM_WORLD, &r));
        GDR_CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else if (sender) {
        GDR_CHECK_MPI(MPI_Send(b, (int) n, MPI_BYTE, p, seed, MPI_COMM_WORLD));
    } else {
        if (nonblocking) {
            GDR_CHECK_MPI(MPI_Irecv(b, (int) n, MPI_BYTE, p, seed, MPI_COMM_WORLD, &r));
            GDR_CHECK_MPI(MPI_Wait(&r, &st));
        } else {
            GDR_CHECK_MPI(MPI_Recv(b, (int) n, MPI_BYTE, p, seed, MPI_COMM_WORLD, &st));
        }
        check_count(&st, MPI_BYTE, (int) n);
        buf_check(dev, b, n, seed);
    }
    if (gdr_test_expect_native()) {
        gdr_check_long("gdr_am_device_copied_bytes (this message)", 0,
                       (long long) want_copied(dev, n), (long long) (copied() - before));
        /* eager device data is copied straight into a send slot when one and a credit are
         * free at once (not always: credits grow as the peer's receive queue does), else
         * into a pack buffer; staged rendezvous data always into a pack buffer */
        unsigned long long p = packed() - packed_before;
        if (sender && sdev && n > 0 && n <= DATA_EAGER_MAX) {
            if (p != 0 && p != n)
                gdr_test_fail("gdr_am_send_packed_bytes (this message): %llu, expected 0 or %zu",
                              p, n);
            in_slot += p == 0;
        } else if (sender) {
            /* a rendezvous never packs device data whole: staged, it goes through the
             * pinned chunks */
            gdr_check_long("gdr_am_send_packed_bytes (this message)", 0, 0, (long long) p);
        }
        /* the chunks carry device data of a staged rendezvous at the sender, and into
         * device memory at the receiver when the sender's was device memory too (else
         * the receiver reads a host sender's buffer and copies it from the landing) */
        int chunked = n > DATA_EAGER_MAX && staged() && sdev && (sender || rdev);
        gdr_check_long("gdr_am_staged_bytes (this message)", 0,
                       (long long) (chunked ? n : 0), (long long) (staged_bytes() - staged_before));
    }
    buf_free(dev, b);
}

/* Receives into device memory from MPI_ANY_SOURCE. */
static void any_source(size_t n, int seed)
{
    int p = partner(), sender = (rank & 1) == 0;
    gdr_test_set_context("device->device %zu bytes, MPI_ANY_SOURCE", n);
    if (p == MPI_PROC_NULL)
        return;
    void *b = buf_new(1, n, seed, sender);
    MPI_Status st;
    if (sender) {
        GDR_CHECK_MPI(MPI_Send(b, (int) n, MPI_BYTE, p, seed, MPI_COMM_WORLD));
    } else {
        GDR_CHECK_MPI(MPI_Recv(b, (int) n, MPI_BYTE, MPI_ANY_SOURCE, seed, MPI_COMM_WORLD, &st));
        gdr_check_long("MPI_SOURCE", 0, p, st.MPI_SOURCE);
        check_count(&st, MPI_BYTE, (int) n);
        buf_check(1, b, n, seed);
    }
    buf_free(1, b);
}

/* Messages in flight at once, received in the reverse of their sending order (by tag),
 * into device memory: eager and rendezvous mixed. */
static void out_of_order(void)
{
    enum { K = 6 };
    static const size_t sizes[K] = { 8, 65536, EAGER_MAX + 1, 100, BIG, EAGER_MAX };
    int p = partner(), sender = (rank & 1) == 0;
    gdr_test_set_context("device->device, %d messages matched out of posting order", K);
    if (p == MPI_PROC_NULL)
        return;
    void *b[K];
    MPI_Request r[K];
    MPI_Status st[K];
    for (int k = 0; k < K; k++)
        b[k] = buf_new(1, sizes[k], 100 + k, sender);
    if (sender) {
        for (int k = 0; k < K; k++)
            GDR_CHECK_MPI(MPI_Isend(b[k], (int) sizes[k], MPI_BYTE, p, 100 + k, MPI_COMM_WORLD,
                                    &r[k]));
    } else {
        for (int k = K - 1; k >= 0; k--)
            GDR_CHECK_MPI(MPI_Irecv(b[k], (int) sizes[k], MPI_BYTE, p, 100 + k, MPI_COMM_WORLD,
                                    &r[k]));
    }
    GDR_CHECK_MPI(MPI_Waitall(K, r, st));
    for (int k = 0; k < K; k++) {
        if (!sender) {
            check_count(&st[k], MPI_BYTE, (int) sizes[k]);
            buf_check(1, b[k], sizes[k], 100 + k);
        }
        buf_free(1, b[k]);
    }
}

/* Messages that are at the receiver before their receive is posted (it probes until it
 * sees each), then received into device memory: by MPI_Recv after MPI_Iprobe, by
 * MPI_Mrecv after MPI_Mprobe, by MPI_Recv after MPI_Probe. */
static void unexpected(size_t n, int seed)
{
    int p = partner(), sender = (rank & 1) == 0;
    if (p == MPI_PROC_NULL)
        return;
    void *b = sender ? buf_new(1, n, seed, 1) : NULL;
    MPI_Status st;
    for (int how = 0; how < 3; how++) {
        static const char *const name[] = { "Iprobe+Recv", "Mprobe+Mrecv", "Probe+Recv" };
        gdr_test_set_context("device->device %zu bytes, arrived before its receive (%s)", n,
                             name[how]);
        if (sender) {
            MPI_Request r;
            GDR_CHECK_MPI(MPI_Isend(b, (int) n, MPI_BYTE, p, seed + how, MPI_COMM_WORLD, &r));
            GDR_CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            continue;
        }
        void *fresh = buf_new(1, n, 0, 0);
        if (how == 0) {
            int flag = 0;
            while (!flag)
                GDR_CHECK_MPI(MPI_Iprobe(p, seed + how, MPI_COMM_WORLD, &flag, &st));
            check_count(&st, MPI_BYTE, (int) n);
            GDR_CHECK_MPI(MPI_Recv(fresh, (int) n, MPI_BYTE, p, seed + how, MPI_COMM_WORLD,
                                   &st));
        } else if (how == 1) {
            MPI_Message m;
            GDR_CHECK_MPI(MPI_Mprobe(p, seed + how, MPI_COMM_WORLD, &m, &st));
            check_count(&st, MPI_BYTE, (int) n);
            GDR_CHECK_MPI(MPI_Mrecv(fresh, (int) n, MPI_BYTE, &m, &st));
        } else {
            GDR_CHECK_MPI(MPI_Probe(p, seed + how, MPI_COMM_WORLD, &st));
            check_count(&st, MPI_BYTE, (int) n);
            GDR_CHECK_MPI(MPI_Recv(fresh, (int) n, MPI_BYTE, p, seed + how, MPI_COMM_WORLD,
                                   &st));
        }
        check_count(&st, MPI_BYTE, (int) n);
        buf_check(1, fresh, n, seed);
        buf_free(1, fresh);
    }
    if (sender)
        buf_free(1, b);
}

/* One message of n bytes from device memory into device memory, by MPI_Ssend (sync) or
 * MPI_Send, checked. */
static void dev_to_dev(size_t n, int seed, int sync)
{
    int p = partner(), sender = (rank & 1) == 0;
    if (p == MPI_PROC_NULL)
        return;
    void *b = buf_new(1, n, seed, sender);
    MPI_Status st;
    if (sender) {
        GDR_CHECK_MPI((sync ? MPI_Ssend : MPI_Send) (b, (int) n, MPI_BYTE, p, seed,
                                                     MPI_COMM_WORLD));
    } else {
        GDR_CHECK_MPI(MPI_Recv(b, (int) n, MPI_BYTE, p, seed, MPI_COMM_WORLD, &st));
        check_count(&st, MPI_BYTE, (int) n);
        buf_check(1, b, n, seed);
    }
    buf_free(1, b);
}

static void ssend(size_t n, int seed)
{
    gdr_test_set_context("device->device %zu bytes, MPI_Ssend", n);
    dev_to_dev(n, seed, 1);
}

/* A 64 MiB device message, device to device, then the pinned memory the pipeline holds:
 * under GPUDirect staged 2 x MPIR_CVAR_CH4_GDR_STAGE_SLOTS x _STAGE_CHUNK bytes (a page
 * at least) per rank (MPI_T gdr_am_stage_pinned_bytes), whatever the message's size. */
static void huge(int seed)
{
    const size_t n = (size_t) 64 << 20;
    gdr_test_set_context("device->device %zu bytes, pinned staging bounded", n);
    if (partner() == MPI_PROC_NULL)
        return;
    dev_to_dev(n, seed, 0);
    if (gdr_test_expect_native() && staged()) {
        long chunk = env_or("MPIR_CVAR_CH4_GDR_STAGE_CHUNK", 524288);
        long long bound = 2 * env_or("MPIR_CVAR_CH4_GDR_STAGE_SLOTS", 8)
            * (chunk > 4096 ? chunk : 4096);    /* (messages' chunks: a page or more) */
        gdr_check_long("gdr_am_stage_pinned_bytes (the bound)", 0, bound,
                       (long long) gdr_pvar_value(session, "gdr_am_stage_pinned_bytes"));
    }
}

/* A vector (blocks of blen longs every blen + 1) on device buffers at both ends, or device
 * at the sender and contiguous host memory at the receiver, or (host_sender) contiguous
 * host memory at the sender and the device vector at the receiver: the receiver's gaps
 * keep -1.  Blocks of 3 longs straddle the staging chunks' edges (a power of two). */
static void vector_from(int blocks, int blen, int rdev_vector, int host_sender, int seed)
{
    int p = partner(), sender = (rank & 1) == 0;
    gdr_test_set_context("vector of %d blocks of %d from %s into %s", blocks, blen,
                         host_sender ? "contiguous host memory" : "device memory",
                         rdev_vector ? "a device vector" : "contiguous host memory");
    const int stride = blen + 1;
    if (p == MPI_PROC_NULL)
        return;
    MPI_Datatype vec;
    MPI_Type_vector(blocks, blen, stride, MPI_LONG, &vec);
    MPI_Type_commit(&vec);
    size_t elems = (size_t) blocks * stride;
    long *h = malloc(sizeof(long) * elems);
    unsigned long long k0 = gdr_pvar_value(session, "gdr_am_pack_kernels");
    for (size_t i = 0; i < elems; i++)
        h[i] = sender ? (long) (seed * 1000003L + (long) i) : -1;
    MPI_Status st;
    if (sender && host_sender) {
        size_t n = (size_t) blocks * blen;
        long *c = malloc(sizeof(long) * n);
        for (size_t k = 0; k < n; k++)
            c[k] = h[k / blen * stride + k % blen];
        GDR_CHECK_MPI(MPI_Send(c, (int) n, MPI_LONG, p, seed, MPI_COMM_WORLD));
        free(c);
    } else if (sender) {
        void *d = dev_alloc(sizeof(long) * elems);
        dev_copy(d, h, sizeof(long) * elems);
        GDR_CHECK_MPI(MPI_Send(d, 1, vec, p, seed, MPI_COMM_WORLD));
        dev_free(d);
    } else if (rdev_vector) {
        void *d = dev_alloc(sizeof(long) * elems);
        dev_copy(d, h, sizeof(long) * elems);
        GDR_CHECK_MPI(MPI_Recv(d, 1, vec, p, seed, MPI_COMM_WORLD, &st));
        check_count(&st, vec, 1);
        dev_copy(h, d, sizeof(long) * elems);
        dev_free(d);
        long bad = 0;
        for (size_t i = 0; i < elems; i++) {
            long want = (int) (i % stride) == blen ? -1 : (long) (seed * 1000003L + (long) i);
            if (h[i] != want && bad++ < 3)
                gdr_check_long("device vector", (long) i, want, h[i]);
        }
    } else {
        size_t n = (size_t) blocks * blen;
        GDR_CHECK_MPI(MPI_Recv(h, (int) n, MPI_LONG, p, seed, MPI_COMM_WORLD, &st));
        check_count(&st, MPI_LONG, (int) n);
        long bad = 0;
        for (size_t k = 0; k < n; k++) {
            size_t i = k / blen * stride + k % blen;
            long want = (long) (seed * 1000003L + (long) i);
            if (h[k] != want && bad++ < 3)
                gdr_check_long("host copy of the vector", (long) k, want, h[k]);
        }
    }
    /* small device blocks (the sender's, and a device vector's at the receiver) are packed
     * by gdr's copy kernel, 64 blocks a launch: into the staging chunks of a rendezvous,
     * through the device scratch of an eager message */
    if (gdr_test_expect_native() && (sender ? !host_sender : rdev_vector) && gdr_test_pack_kernel(3 * sizeof(long)))
        gdr_check_long("launches of the pack kernel (gdr_am_pack_kernels) >= blocks / 64, "
                       "rounded up", 0, 1, gdr_pvar_value(session, "gdr_am_pack_kernels") - k0
                       >= (unsigned long long) (blocks + 63) / 64);
    free(h);
    MPI_Type_free(&vec);
}

/* The sender's vector in device memory */
static void vector_of(int blocks, int blen, int rdev_vector, int seed)
{
    vector_from(blocks, blen, rdev_vector, 0, seed);
}

/* A message larger than its receive buffer in device memory: MPI_ERR_TRUNCATE, the
 * buffer's bytes received, the byte past it untouched. */
static void truncated(size_t n, int seed)
{
    int p = partner(), sender = (rank & 1) == 0;
    gdr_test_set_context("device->device %zu bytes into a device buffer of %zu", n, n / 2);
    if (p == MPI_PROC_NULL)
        return;
    void *b = buf_new(1, n, seed, sender);
    if (sender) {
        GDR_CHECK_MPI(MPI_Send(b, (int) n, MPI_BYTE, p, seed, MPI_COMM_WORLD));
    } else {
        MPI_Status st;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Recv(b, (int) (n / 2), MPI_BYTE, p, seed, MPI_COMM_WORLD, &st);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        gdr_check_class("MPI_Recv into a smaller buffer", rc, MPI_ERR_TRUNCATE);
        buf_check(1, b, n / 2, seed);
        unsigned char past;
        dev_copy(&past, (char *) b + n / 2, 1);
        gdr_check_long("the byte past the receive buffer", 0, 0xee, past);
    }
    buf_free(1, b);
}

int main(int argc, char **argv)
{
    gpu_mpi_test_init(&argc, &argv, &session, &rank, &nranks);
    static const size_t sizes[] = { 0, 8, EAGER_MAX - 1, EAGER_MAX, EAGER_MAX + 1, 65536, BIG };
    static const int mem[][2] = { {1, 1}, {0, 1}, {1, 0} };
    int seed = 1;
    for (int m = 0; m < 3; m++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            for (int nb = 0; nb < 2; nb++)
                one(mem[m][0], mem[m][1], sizes[s], nb, seed++);
    MPI_Barrier(MPI_COMM_WORLD);
    any_source(8, 200);
    any_source(65536, 201);
    out_of_order();
    unexpected(8, 300);
    unexpected(EAGER_MAX, 310);
    unexpected(65536, 320);
    ssend(8, 400);
    ssend(65536, 401);
    vector_of(16, 2, 1, 500);   /* 256 bytes: eager */
    vector_of(500, 2, 1, 505);  /* 8000 bytes: eager, 8 launches a side */
    vector_of(500, 2, 0, 506);
    vector_of(8192, 2, 1, 501); /* 128 KiB: rendezvous */
    vector_of(8192, 2, 0, 502);
    vector_of(60000, 3, 1, 503);        /* 1.4 MiB: several chunks, blocks across their edges */
    vector_of(60000, 3, 0, 504);
    /* 128 KiB from host memory into a device vector of more pieces than one read takes:
     * landed whole, then scattered through the 64-KiB device scratch twice */
    vector_from(8192, 2, 1, 1, 507);
    truncated(64, 600);
    truncated(65536, 601);
    truncated(3 << 20, 602);    /* staged: fragments past the buffer read and dropped */
    huge(700);
    gdr_test_set_context("eager device sends");
    if (gdr_test_expect_native() && (rank & 1) == 0 && partner() != MPI_PROC_NULL && in_slot == 0)
        gdr_test_fail("none went straight into a send slot (MPI_T gdr_am_send_packed_bytes)");
    long e = gdr_test_finish();
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return e != 0;
}
