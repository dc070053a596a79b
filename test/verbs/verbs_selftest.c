/*
 * verbs_selftest: one process, one RC queue pair between two verbs devices (default rxe0 and
 * rxe1, the two Soft-RoCE devices of a `maint/rxe run` guest), and the values of the one-sided
 * operations the netmod is built on: RDMA write, RDMA read, fetch-and-add, compare-and-swap
 * (hit and miss).
 *
 *   verbs_selftest [-a DEV] [-b DEV] [-g GID_INDEX] [-s BYTES]
 *
 * Prints one line per check, then exactly "N passed, M failed"; exits 0 only when M is 0.
 * Run it inside the test machine:  maint/rxe run test/verbs/verbs_selftest
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define PORT_NUM 1
#define CQ_TIMEOUT_NS (5ull * 1000000000ull)

static int n_passed;
static int n_failed;

static void check(bool ok, const char *name, const char *fmt, ...)
{
    va_list ap;

    printf("%s %-22s ", ok ? "PASS" : "FAIL", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    if (ok)
        n_passed++;
    else
        n_failed++;
}

/* A failure that stops the test: what failed, errno, and what to do. */
static int finish_setup_failure(const char *what, int err, const char *hint)
{
    fprintf(stderr, "verbs_selftest: %s failed: %s (errno %d)\n", what, strerror(err), err);
    if (hint)
        fprintf(stderr, "verbs_selftest: %s\n", hint);
    check(false, "setup", "%s: %s", what, strerror(err));
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return 1;
}

/* One side of the queue pair: device, protection domain, completion queue, QP, buffer. */
struct side {
    const char *name;
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    unsigned char *buf;
    size_t len;
    union ibv_gid gid;
    enum ibv_mtu mtu;
};

static struct ibv_context *open_device(const char *name)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *ctx = NULL;

    if (!list)
        return NULL;
    for (int i = 0; i < n; i++) {
        if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
            ctx = ibv_open_device(list[i]);
            break;
        }
    }
    if (!ctx && errno == 0)
        errno = ENODEV;
    ibv_free_device_list(list);
    return ctx;
}

/* Returns NULL on success, or the name of the step that failed (errno says why). */
static const char *side_open(struct side *s, int gid_index)
{
    struct ibv_port_attr port;
    struct ibv_qp_init_attr init = {0};
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                 IBV_ACCESS_REMOTE_ATOMIC;

    errno = 0;
    s->ctx = open_device(s->name);
    if (!s->ctx)
        return "opening the device";
    if ((errno = ibv_query_port(s->ctx, PORT_NUM, &port)) != 0)
        return "ibv_query_port";
    if (port.state != IBV_PORT_ACTIVE) {
        errno = ENETDOWN;
        return "port 1 state ACTIVE";
    }
    s->mtu = port.active_mtu;
    if ((errno = ibv_query_gid(s->ctx, PORT_NUM, gid_index, &s->gid)) != 0)
        return "ibv_query_gid";
    if (!(s->pd = ibv_alloc_pd(s->ctx)))
        return "ibv_alloc_pd";
    if (!(s->cq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0)))
        return "ibv_create_cq";
    if ((errno = posix_memalign((void **)&s->buf, 4096, s->len)) != 0)
        return "posix_memalign";
    memset(s->buf, 0, s->len);
    if (!(s->mr = ibv_reg_mr(s->pd, s->buf, s->len, access)))
        return "ibv_reg_mr";
    init.send_cq = s->cq;
    init.recv_cq = s->cq;
    init.qp_type = IBV_QPT_RC;
    init.sq_sig_all = 1;
    init.cap.max_send_wr = 8;
    init.cap.max_recv_wr = 8;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    if (!(s->qp = ibv_create_qp(s->pd, &init)))
        return "ibv_create_qp";
    return NULL;
}

static void side_close(struct side *s)
{
    if (s->qp)
        ibv_destroy_qp(s->qp);
    if (s->mr)
        ibv_dereg_mr(s->mr);
    if (s->cq)
        ibv_destroy_cq(s->cq);
    if (s->pd)
        ibv_dealloc_pd(s->pd);
    if (s->ctx)
        ibv_close_device(s->ctx);
    free(s->buf);
}

/* RESET -> INIT -> RTR -> RTS, connected to the peer's QP through its GID (RoCE v2). */
static const char *side_connect(struct side *s, const struct side *peer, int gid_index)
{
    struct ibv_qp_attr a;
    enum ibv_mtu mtu = s->mtu < peer->mtu ? s->mtu : peer->mtu;

    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = PORT_NUM;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if ((errno = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                              IBV_QP_ACCESS_FLAGS)) != 0)
        return "ibv_modify_qp to INIT";

    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = mtu;
    a.dest_qp_num = peer->qp->qp_num;
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = peer->gid;
    a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = PORT_NUM;
    if ((errno = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                              IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) != 0)
        return "ibv_modify_qp to RTR";

    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 0;
    a.max_rd_atomic = 1;
    if ((errno = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                              IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                              IBV_QP_MAX_QP_RD_ATOMIC)) != 0)
        return "ibv_modify_qp to RTS";
    return NULL;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Posts one signalled work request on s->qp and waits for its completion.  Returns 0, or
 * writes a reason into why[] and returns -1.
 */
static int post_and_wait(struct side *s, struct ibv_send_wr *wr, char *why, size_t whylen)
{
    struct ibv_send_wr *bad = NULL;
    struct ibv_wc wc;
    uint64_t deadline;
    int n;

    if ((n = ibv_post_send(s->qp, wr, &bad)) != 0) {
        snprintf(why, whylen, "ibv_post_send: %s (errno %d)", strerror(n), n);
        return -1;
    }
    deadline = now_ns() + CQ_TIMEOUT_NS;
    while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0) {
        if (now_ns() > deadline) {
            snprintf(why, whylen, "no completion within 5 s (is the link up? see dmesg)");
            return -1;
        }
    }
    if (n < 0) {
        snprintf(why, whylen, "ibv_poll_cq returned %d", n);
        return -1;
    }
    if (wc.status != IBV_WC_SUCCESS) {
        snprintf(why, whylen, "completion status %s (%d)", ibv_wc_status_str(wc.status),
                 (int)wc.status);
        return -1;
    }
    return 0;
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)((i * 131u + seed) ^ (i >> 8));
}

static size_t first_mismatch(const unsigned char *a, const unsigned char *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i])
            return i;
    return len;
}

/* Layout of each side's buffer: [0, 8) atomic word, [4096, 4096 + bytes) data. */
#define DATA_OFF 4096

static void test_write(const char *name, struct side *a, struct side *b, size_t bytes)
{
    char why[160];
    unsigned char *expect = malloc(bytes);
    struct ibv_sge sge = {(uintptr_t)(a->buf + DATA_OFF), (uint32_t)bytes, a->mr->lkey};
    struct ibv_send_wr wr = {0};

    if (!expect) {
        check(false, name, "out of memory");
        return;
    }
    fill(a->buf + DATA_OFF, bytes, 7);
    memcpy(expect, a->buf + DATA_OFF, bytes);
    memset(b->buf + DATA_OFF, 0, bytes);
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = (uintptr_t)(b->buf + DATA_OFF);
    wr.wr.rdma.rkey = b->mr->rkey;
    if (post_and_wait(a, &wr, why, sizeof why) != 0) {
        check(false, name, "%zu bytes %s -> %s: %s", bytes, a->name, b->name, why);
    } else {
        size_t at = first_mismatch(b->buf + DATA_OFF, expect, bytes);
        check(at == bytes, name, "%zu bytes %s -> %s%s", bytes, a->name, b->name,
              at == bytes ? "" : ": target differs from source");
        if (at != bytes)
            printf("     first difference at byte %zu: got 0x%02x, want 0x%02x\n", at,
                   b->buf[DATA_OFF + at], expect[at]);
    }
    free(expect);
}

static void test_read(struct side *a, struct side *b, size_t bytes)
{
    char why[160];
    struct ibv_sge sge = {(uintptr_t)(a->buf + DATA_OFF), (uint32_t)bytes, a->mr->lkey};
    struct ibv_send_wr wr = {0};

    fill(b->buf + DATA_OFF, bytes, 91);
    memset(a->buf + DATA_OFF, 0, bytes);
    wr.opcode = IBV_WR_RDMA_READ;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = (uintptr_t)(b->buf + DATA_OFF);
    wr.wr.rdma.rkey = b->mr->rkey;
    if (post_and_wait(a, &wr, why, sizeof why) != 0) {
        check(false, "rdma_read", "%zu bytes %s <- %s: %s", bytes, a->name, b->name, why);
    } else {
        size_t at = first_mismatch(a->buf + DATA_OFF, b->buf + DATA_OFF, bytes);
        check(at == bytes, "rdma_read", "%zu bytes %s <- %s%s", bytes, a->name, b->name,
              at == bytes ? "" : ": local copy differs from remote");
        if (at != bytes)
            printf("     first difference at byte %zu: got 0x%02x, want 0x%02x\n", at,
                   a->buf[DATA_OFF + at], b->buf[DATA_OFF + at]);
    }
}

/*
 * One atomic on b's word from a.  The old value lands in a's word.  Checks both the returned
 * value and the remote word afterwards.
 */
static void test_atomic(struct side *a, struct side *b, const char *name, bool is_cas,
                        uint64_t start, uint64_t arg1, uint64_t arg2, uint64_t want_remote)
{
    char why[160];
    volatile uint64_t *local = (volatile uint64_t *)a->buf;
    volatile uint64_t *remote = (volatile uint64_t *)b->buf;
    struct ibv_sge sge = {(uintptr_t)a->buf, 8, a->mr->lkey};
    struct ibv_send_wr wr = {0};

    *remote = start;
    *local = 0xdeadbeefdeadbeefull;
    wr.opcode = is_cas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.atomic.remote_addr = (uintptr_t)b->buf;
    wr.wr.atomic.rkey = b->mr->rkey;
    wr.wr.atomic.compare_add = arg1;
    wr.wr.atomic.swap = arg2;
    if (post_and_wait(a, &wr, why, sizeof why) != 0) {
        check(false, name, "%s", why);
        return;
    }
    uint64_t got_old = *local, got_remote = *remote;
    bool ok = got_old == start && got_remote == want_remote;
    if (is_cas)
        check(ok, name, "cas(%" PRIu64 ", compare %" PRIu64 ", swap %" PRIu64 "): returned %" PRIu64
              " (want %" PRIu64 "), remote now %" PRIu64 " (want %" PRIu64 ")",
              start, arg1, arg2, got_old, start, got_remote, want_remote);
    else
        check(ok, name, "fetch_add(%" PRIu64 ", %" PRIu64 "): returned %" PRIu64 " (want %" PRIu64
              "), remote now %" PRIu64 " (want %" PRIu64 ")",
              start, arg1, got_old, start, got_remote, want_remote);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: verbs_selftest [-a DEV] [-b DEV] [-g GID_INDEX] [-s BYTES]\n"
               "  -a DEV    initiating device (default rxe0)\n"
               "  -b DEV    target device (default rxe1; may equal -a for loopback)\n"
               "  -g N      GID index, 1 = RoCE v2 IPv4 on rxe (default 1)\n"
               "  -s BYTES  size of the write and read checks (default 65536)\n"
               "Run inside the Soft-RoCE machine: maint/rxe run test/verbs/verbs_selftest\n");
}

int main(int argc, char **argv)
{
    struct side a = {.name = "rxe0"}, b = {.name = "rxe1"};
    int gid_index = 1, opt;
    size_t bytes = 65536;
    const char *step;

    while ((opt = getopt(argc, argv, "a:b:g:s:h")) != -1) {
        switch (opt) {
        case 'a': a.name = optarg; break;
        case 'b': b.name = optarg; break;
        case 'g': gid_index = atoi(optarg); break;
        case 's': bytes = strtoull(optarg, NULL, 0); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (bytes == 0 || bytes > (64u << 20)) {
        fprintf(stderr, "verbs_selftest: -s wants 1 .. 64 MiB, got %zu\n", bytes);
        return 2;
    }
    a.len = b.len = DATA_OFF + bytes;

    if ((step = side_open(&a, gid_index)) != NULL || (step = side_open(&b, gid_index)) != NULL) {
        char what[160];
        snprintf(what, sizeof what, "%s (devices %s, %s)", step, a.name, b.name);
        return finish_setup_failure(what, errno,
                                    "are the rxe devices there? They exist inside the Soft-RoCE "
                                    "machine: run this through 'maint/rxe run' ('rdma link' "
                                    "lists them)");
    }
    if ((step = side_connect(&a, &b, gid_index)) != NULL ||
        (step = side_connect(&b, &a, gid_index)) != NULL)
        return finish_setup_failure(step, errno,
                                    "a QP that does not reach RTR usually means rp_filter/"
                                    "accept_local on the veth pair, or a wrong GID index (-g)");
    printf("# %s <-> %s, RC, path MTU %d, GID index %d\n", a.name, b.name,
           128 << (a.mtu < b.mtu ? a.mtu : b.mtu), gid_index);

    test_write("rdma_write", &a, &b, bytes);
    test_read(&a, &b, bytes);
    test_atomic(&a, &b, "fetch_add", false, 100, 23, 0, 123);
    test_atomic(&a, &b, "fetch_add_wrap", false, UINT64_MAX, 2, 0, 1);
    test_atomic(&a, &b, "compare_swap_hit", true, 123, 123, 77, 77);
    test_atomic(&a, &b, "compare_swap_miss", true, 77, 5, 9, 77);
    /* and the other direction, so both devices initiate */
    test_write("rdma_write_reverse", &b, &a, bytes);
    test_atomic(&b, &a, "fetch_add_reverse", false, 1, 1, 0, 2);

    side_close(&a);
    side_close(&b);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed == 0 ? 0 : 1;
}
