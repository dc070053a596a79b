/* The RMA engine (src/rma) against the in-memory transport of fake_engine.h: every value
 * is read back. */
#include <stdlib.h>
#include <string.h>
#include "gdr_unit.h"
#include "rma/gdr_rma_issue.h"
#include "fake_engine.h"

/* ---- tests ------------------------------------------------------------------------- */

static void test_registry(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 1);
    GDR_CHECK(gdr_rma_win_all_reachable(&w) && w.atomics.native,
              "registry: all 4 targets reachable, NIC atomics agreed");
    GDR_CHECK(gdr_rma_win_access(&w) ==
              (GDR_RMA_REMOTE_READ | GDR_RMA_REMOTE_WRITE | GDR_RMA_REMOTE_ATOMIC),
              "registry: window memory grants atomics when the rule allows them");
    GDR_CHECK(gdr_rma_win_check_range(&w, 2, 511, 0, 8) == GDR_RMA_RANGE_OK
              && gdr_rma_win_check_range(&w, 2, 511, 0, 9) == GDR_RMA_RANGE_OUTSIDE
              && gdr_rma_win_check_range(&w, 2, -1, 0, 8) == GDR_RMA_RANGE_NEGATIVE_DISP,
              "registry: range checks use the target's size and unit (last word ok, one byte "
              "past refused, negative disp refused)");
    gdr_rma_card_t mine;
    char why[64];
    int regs = fk.regs;
    GDR_CHECK(gdr_rma_win_expose(&w, target_mem[0], 4096, 8, 0, &mine, why, sizeof(why)) == 0
              && fk.regs == regs + 1 && mine.rkey == 0x1234
              && mine.base == (uint64_t) (uintptr_t) target_mem[0] && mine.size == 4096
              && fk.last_access & GDR_RMA_REMOTE_ATOMIC,
              "registry: exposing registers the memory and fills this rank's card");
    int deregs = fk.deregs;
    gdr_rma_win_free(&w);
    GDR_CHECK(fk.deregs == deregs + 1, "registry: freeing the window destroys its key");

    gdr_rma_win_t v;
    GDR_CHECK(gdr_rma_win_init(&v, &eng, NULL, 3, 0, 0, 1) == GDR_RMA_OK, "window init");
    gdr_rma_win_set_peer(&v, 0, 1);
    gdr_rma_win_set_peer(&v, 2, 3);
    gdr_rma_win_set_policy(&v, gdr_rma_win_all_reachable(&v), GDR_RMA_DECLARES_SUM, 1);
    GDR_CHECK(!gdr_rma_win_all_reachable(&v) && !v.atomics.native
              && !(gdr_rma_win_access(&v) & GDR_RMA_REMOTE_ATOMIC),
              "registry: one target without a queue pair: no NIC atomics anywhere");
    gdr_rma_win_free(&v);
}

static void test_paths(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM | GDR_RMA_DECLARES_NO_OP, 1);
    struct iovec p = one_piece(0, 8), two[2] = { one_piece(0, 8), one_piece(16, 8) };
    uint64_t v = 1, r[2];
    gdr_rma_plan_t plan;
    int na;
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.disp = 3,.tpieces = &p,
        .ntpieces = 1,.tbytes = 8,.origin = {.addr = &v }
    };
    GDR_CHECK(gdr_rma_plan(&w, &put, &plan, &na) == GDR_RMA_OK && plan.by_rdma
              && plan.origin_move == GDR_RMA_MOVE_DIRECT && plan.rkey == 7
              && plan.tbase == (uint64_t) (uintptr_t) target_mem[1] + 24,
              "path: contiguous put to a registered target: RDMA at base + disp * unit");
    w.targets[2].rkey = 0;
    put.target = 2;
    GDR_CHECK(gdr_rma_plan(&w, &put, &plan, &na) == GDR_RMA_OK && !plan.by_rdma,
              "path: a target whose window is not registered: message");
    w.targets[3].peer = -1;
    put.target = 3;
    GDR_CHECK(gdr_rma_plan(&w, &put, &plan, &na) == GDR_RMA_OK && !plan.by_rdma,
              "path: a target without a queue pair: message");
    gdr_rma_access_t acc = {.kind = GDR_RMA_ACC,.target = 1,.tpieces = &p,.ntpieces = 1,
        .tbytes = 8,.op = GDR_RMA_ACC_SUM,.int64_elements = 1,.origin = {.addr = &v }
    };
    GDR_CHECK(gdr_rma_plan(&w, &acc, &plan, &na) == GDR_RMA_OK && plan.by_rdma
              && plan.path == GDR_RMA_PATH_FETCH_ADD, "path: SUM of an int64: fetch-add");
    gdr_rma_plan_drop(&w, &plan);
    acc.int64_elements = 0;
    GDR_CHECK(gdr_rma_plan(&w, &acc, &plan, &na) == GDR_RMA_OK && !plan.by_rdma,
              "path: SUM of doubles: message");
    acc.int64_elements = 1;
    acc.op = GDR_RMA_ACC_OTHER;
    GDR_CHECK(gdr_rma_plan(&w, &acc, &plan, &na) == GDR_RMA_OK && !plan.by_rdma,
              "path: MAX and the like: message");
    gdr_rma_access_t noop = {.kind = GDR_RMA_GET_ACC,.target = 1,.tpieces = two,.ntpieces = 2,
        .tbytes = 16,.op = GDR_RMA_ACC_NO_OP,.int64_elements = 1,.result = {.addr = r }
    };
    GDR_CHECK(gdr_rma_plan(&w, &noop, &plan, &na) == GDR_RMA_OK && !plan.by_rdma,
              "path: NO_OP over two pieces: message (a read never conflicts)");
    noop.ntpieces = 1;
    noop.tbytes = 8;
    GDR_CHECK(gdr_rma_plan(&w, &noop, &plan, &na) == GDR_RMA_OK && plan.by_rdma
              && plan.path == GDR_RMA_PATH_READ, "path: NO_OP of one piece: RDMA read");
    gdr_rma_plan_drop(&w, &plan);
    GDR_CHECK(!gdr_rma_target_too_scattered(GDR_RMA_PUT, 64, 64)
              && gdr_rma_target_too_scattered(GDR_RMA_PUT, 65, 65 * 8)
              && !gdr_rma_target_too_scattered(GDR_RMA_PUT, 1024, 1024 * 512)
              && gdr_rma_target_too_scattered(GDR_RMA_PUT, 1025, 1025 * 4096)
              && !gdr_rma_target_too_scattered(GDR_RMA_ACC, 64, 512)
              && gdr_rma_target_too_scattered(GDR_RMA_ACC, 65, 520),
              "path: targets of >64 small, or >1024 pieces go as messages; accumulates >64");
    gdr_rma_win_free(&w);
}

/* Ordered accumulates: a fetch-add after an accumulate's RDMA read goes after it on the
 * queue pair (flagged GDR_RMA_POST_AFTER_READS, posted at once, not after a host wait);
 * completing newest first, as a NIC may, the read still sees the value before the add. */
static void test_atomic_after_read(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM | GDR_RMA_DECLARES_NO_OP, 1);
    uint64_t start = 40, add = 2, r = 0, again = 0;
    memcpy(target_mem[1], &start, 8);
    struct iovec p = one_piece(0, 8);
    gdr_rma_access_t noop = {.kind = GDR_RMA_GET_ACC,.target = 1,.tpieces = &p,.ntpieces = 1,
        .tbytes = 8,.op = GDR_RMA_ACC_NO_OP,.int64_elements = 1,.result = {.addr = &r }
    };
    gdr_rma_access_t sum = {.kind = GDR_RMA_ACC,.target = 1,.tpieces = &p,.ntpieces = 1,
        .tbytes = 8,.op = GDR_RMA_ACC_SUM,.int64_elements = 1,.origin = {.addr = &add }
    };
    int flagged = fk.after_reads_posts;
    done_t d = { 0 };
    GDR_CHECK(run(&w, &noop, &d) == GDR_RMA_OK && run(&w, &sum, NULL) == GDR_RMA_OK
              && fk.n == 2 && fk.after_reads_posts == flagged + 1
              && fk.q[1].kind == W_ATOMICV && (fk.q[1].flags & GDR_RMA_POST_AFTER_READS),
              "ordered: NO_OP read, then a SUM fetch-add posted at once, flagged after reads");
    GDR_CHECK(run(&w, &sum, NULL) == GDR_RMA_OK && fk.after_reads_posts == flagged + 1,
              "the next fetch-add is not flagged (it follows the flagged one)");
    fk.lifo = 1;
    while (fk.n > 0)
        complete_one();
    fk.lifo = 0;
    gdr_rma_wait_all(&w.tracker, &eng, 0);
    memcpy(&again, target_mem[1], 8);
    if (r == 0 && d.calls == 1)
        memcpy(&r, d.landed, 8);        /* (landed in the engine's buffer) */
    GDR_CHECK(r == 40 && again == 44, "the read saw 40, before the adds (window now %llu)",
              (unsigned long long) again);
    gdr_rma_win_free(&w);
}

/* Device (GPU) buffers: the host never reads or writes them, so they move zero-copy as
 * pinned gather/scatter lists, or go by message. */
static void test_device_buffers(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 0);
    memset(target_mem, 0, sizeof(target_mem));
    char dev[64];
    for (int i = 0; i < 64; i++)
        dev[i] = (char) (i + 1);
    struct iovec whole = {.iov_base = dev,.iov_len = 8 }, tp = one_piece(0, 8);
    gdr_rma_plan_t plan;
    int na;

    /* 8 bytes would be inlined from host memory: from a device buffer, one pinned list */
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.tpieces = &tp,.ntpieces = 1,
        .tbytes = 8,.origin = {.scattered = 1,.device_id = 41,.addr = dev,.iov = &whole,.n = 1 }
    };
    int posts = fk.posts, pins = fk.pins;
    GDR_CHECK(run(&w, &put, NULL) == GDR_RMA_OK && fk.posts == posts + 1
              && fk.q[fk.n - 1].kind == W_WRITEV && fk.q[fk.n - 1].n == 1 && fk.pins == pins + 1,
              "device origin, 8 bytes: one pinned gather list, never inlined or bounced");
    GDR_CHECK(fk.last_pin_id == 41, "device origin: pinned under its CUDA buffer id (41)");
    GDR_CHECK(w.tracker.local[1] == 1, "device origin: held until the NIC has read it");
    gdr_rma_wait_target(&w.tracker, &eng, 1, 1);
    GDR_CHECK(memcmp(target_mem[1], dev, 8) == 0 && w.tracker.local[1] == 0,
              "device origin: data landed, buffer released");

    /* a get into a device result: a pinned scatter list of one piece */
    memcpy(&target_mem[2][16], "gpu-side", 8);
    struct iovec t8 = one_piece(16, 8), into = {.iov_base = dev + 32,.iov_len = 8 };
    gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 2,.tpieces = &t8,.ntpieces = 1,
        .tbytes = 8,.result = {.scattered = 1,.device_id = 42,.addr = dev + 32,.iov = &into,.n = 1 }
    };
    GDR_CHECK(run(&w, &get, NULL) == GDR_RMA_OK && fk.q[fk.n - 1].kind == W_READV
              && gdr_rma_wait_target(&w.tracker, &eng, 2, 0) == GDR_RMA_OK
              && memcmp(dev + 32, "gpu-side", 8) == 0,
              "device result of a get: one pinned scatter list, data landed");

    /* what would need the host to touch device memory goes by message */
    struct iovec o17[17];
    for (int i = 0; i < 17; i++)
        o17[i] = (struct iovec) {.iov_base = dev + 2 * i,.iov_len = 1 };
    struct iovec t17 = one_piece(100, 17);
    gdr_rma_access_t p17 = {.kind = GDR_RMA_PUT,.target = 1,.tpieces = &t17,.ntpieces = 1,
        .tbytes = 17,.origin = {.scattered = 1,.device_id = 43,.iov = o17,.n = 17 }
    };
    GDR_CHECK(gdr_rma_plan(&w, &p17, &plan, &na) == GDR_RMA_OK && !plan.by_rdma
              && plan.pin == NULL && plan.origin_bounce == NULL,
              "device origin of 17 pieces (would be packed on the host): message");
    struct iovec two[2] = { one_piece(0, 4), one_piece(8, 4) }, half = {.iov_base = dev,.iov_len = 8 };
    gdr_rma_access_t scat = {.kind = GDR_RMA_PUT,.target = 1,.tpieces = two,.ntpieces = 2,
        .tbytes = 8,.origin = {.scattered = 1,.device_id = 44,.iov = &half,.n = 1 }
    };
    GDR_CHECK(gdr_rma_plan(&w, &scat, &plan, &na) == GDR_RMA_OK && !plan.by_rdma,
              "device origin to a target of two pieces: message");
    uint64_t one = 1;
    gdr_rma_access_t acc = {.kind = GDR_RMA_ACC,.target = 1,.tpieces = &tp,.ntpieces = 1,
        .tbytes = 8,.op = GDR_RMA_ACC_SUM,.int64_elements = 1,
        .origin = {.scattered = 1,.device_id = 45,.addr = &one,.iov = &whole,.n = 1 }
    };
    GDR_CHECK(gdr_rma_plan(&w, &acc, &plan, &na) == GDR_RMA_OK && !plan.by_rdma,
              "int64 SUM from a device origin (NIC atomics read operands on the host): message");
    gdr_rma_win_free(&w);
}

static void test_decomposition(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 0);
    memset(target_mem, 0, sizeof(target_mem));
    done_t d = { 0 };

    /* vector target: 4 blocks of 8 bytes at stride 24, from disp 2 (unit 8) */
    char src[32];
    for (int i = 0; i < 32; i++)
        src[i] = (char) (i + 1);
    struct iovec vec[4];
    for (int i = 0; i < 4; i++)
        vec[i] = one_piece((size_t) i * 24, 8);
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.disp = 2,.tpieces = vec,
        .ntpieces = 4,.tbytes = 32,.origin = {.addr = src }
    };
    int posts = fk.posts;
    GDR_CHECK(run(&w, &put, &d) == GDR_RMA_OK && fk.posts == posts + 4,
              "vector target: one RDMA write per block (4)");
    GDR_CHECK(gdr_rma_wait_target(&w.tracker, &eng, 1, 0) == GDR_RMA_OK && d.calls == 1
              && d.status == 0, "vector target: flush completes the operation once");
    int ok = 1;
    for (int i = 0; i < 4; i++)
        ok &= memcmp(&target_mem[1][16 + i * 24], src + 8 * i, 8) == 0
            && target_mem[1][16 + i * 24 + 8] == 0;
    GDR_CHECK(ok, "vector target: each block landed at its offset, gaps untouched");

    /* indexed target: blocks of 3, 10 and 1 bytes at offsets 100, 7, 50 */
    struct iovec idx[3] = { one_piece(100, 3), one_piece(7, 10), one_piece(50, 1) };
    gdr_rma_access_t put2 = {.kind = GDR_RMA_PUT,.target = 2,.tpieces = idx,.ntpieces = 3,
        .tbytes = 14,.origin = {.addr = src }
    };
    GDR_CHECK(run(&w, &put2, NULL) == GDR_RMA_OK
              && gdr_rma_wait_all(&w.tracker, &eng, 0) == GDR_RMA_OK
              && memcmp(&target_mem[2][100], src, 3) == 0
              && memcmp(&target_mem[2][7], src + 3, 10) == 0 && target_mem[2][50] == src[13],
              "indexed target: blocks filled in order from the packed origin");

    /* a scattered origin of 4 pieces to one target piece: one gather list */
    struct iovec tgt = one_piece(0, 16), o4[4], o17[17];
    for (int i = 0; i < 4; i++)
        o4[i] = (struct iovec) {.iov_base = src + 8 * i,.iov_len = 4 };
    gdr_rma_access_t g = {.kind = GDR_RMA_PUT,.target = 3,.tpieces = &tgt,.ntpieces = 1,
        .tbytes = 16,.origin = {.scattered = 1,.iov = o4,.n = 4 }
    };
    posts = fk.posts;
    int pins = fk.pins;
    GDR_CHECK(run(&w, &g, NULL) == GDR_RMA_OK && fk.posts == posts + 1
              && fk.q[fk.n - 1].kind == W_WRITEV && fk.q[fk.n - 1].n == 4 && fk.pins == pins + 1,
              "scattered origin, 4 pieces: one gather work request over a pinned span");
    GDR_CHECK(w.tracker.local[3] == 1, "gather list: the origin buffer is held until done");
    gdr_rma_wait_target(&w.tracker, &eng, 3, 1);
    ok = 1;
    for (int i = 0; i < 4; i++)
        ok &= memcmp(&target_mem[3][4 * i], src + 8 * i, 4) == 0;
    GDR_CHECK(ok && w.tracker.local[3] == 0 && fk.unpins >= 1,
              "gather list: pieces landed contiguously, buffer released, span unpinned");

    /* 17 origin pieces (> GDR_RMA_SGE_MAX): packed through an engine buffer */
    char big[17 * 2];
    for (int i = 0; i < 17; i++)
        o17[i] = (struct iovec) {.iov_base = big + 2 * i,.iov_len = 1 };
    for (int i = 0; i < 34; i++)
        big[i] = (char) (100 + i);
    struct iovec t17 = one_piece(200, 17);
    gdr_rma_access_t p17 = {.kind = GDR_RMA_PUT,.target = 3,.tpieces = &t17,.ntpieces = 1,
        .tbytes = 17,.origin = {.scattered = 1,.iov = o17,.n = 17 }
    };
    gdr_rma_plan_t plan;
    int na;
    GDR_CHECK(gdr_rma_plan(&w, &p17, &plan, &na) == GDR_RMA_OK
              && plan.origin_move == GDR_RMA_MOVE_BOUNCE && plan.origin_bounce != NULL,
              "scattered origin, 17 pieces (>16): packed into an engine buffer");
    gdr_rma_plan_drop(&w, &plan);
    GDR_CHECK(run(&w, &p17, NULL) == GDR_RMA_OK
              && gdr_rma_wait_all(&w.tracker, &eng, 0) == GDR_RMA_OK
              && target_mem[3][200] == 100 && target_mem[3][216] == 132,
              "packed origin: the data landed in order");

    /* a get into a scattered result that cannot be listed: lands in an engine buffer
     * that the host's completion receives to unpack */
    memcpy(&target_mem[1][64], "landing-bytes!!", 16);
    struct iovec t16 = one_piece(64, 16);
    gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 1,.tpieces = &t16,.ntpieces = 1,
        .tbytes = 16,.result = {.scattered = 1 }
    };
    done_t gd = { 0 };
    GDR_CHECK(run(&w, &get, &gd) == GDR_RMA_OK
              && gdr_rma_wait_target(&w.tracker, &eng, 1, 1) == GDR_RMA_OK
              && gd.calls == 1 && memcmp(gd.landed, "landing-bytes!!", 16) == 0,
              "unlisted scattered result: data handed to the host's completion to unpack");

    /* accumulate of 40 int64 SUMs: atomics in batches of 32 with one doorbell each */
    uint64_t ops[40];
    for (int i = 0; i < 40; i++) {
        ops[i] = (uint64_t) i + 1;
        ((uint64_t *) target_mem[2])[i] = 1000;
    }
    struct iovec t40 = one_piece(0, 320);
    gdr_rma_access_t acc = {.kind = GDR_RMA_ACC,.target = 2,.tpieces = &t40,.ntpieces = 1,
        .tbytes = 320,.op = GDR_RMA_ACC_SUM,.int64_elements = 1,.origin = {.addr = ops }
    };
    int aposts = fk.atomic_posts;
    GDR_CHECK(run(&w, &acc, NULL) == GDR_RMA_OK && fk.atomic_posts == aposts + 2,
              "40-element SUM: 2 doorbells (32 + 8 atomics)");
    gdr_rma_wait_all(&w.tracker, &eng, 0);
    ok = 1;
    for (int i = 0; i < 40; i++)
        ok &= ((uint64_t *) target_mem[2])[i] == 1000 + (uint64_t) i + 1;
    GDR_CHECK(ok, "40-element SUM: every element added exactly once");

    /* a big put of 2 pieces whose origin cannot be pinned: nothing posted, a message */
    fk.noreg = 1;
    posts = fk.posts;
    struct iovec t2[2] = { one_piece(0, 2048), one_piece(2048, 2048) };
    static char large[4096];
    gdr_rma_access_t nr = {.kind = GDR_RMA_PUT,.target = 1,.tpieces = t2,.ntpieces = 2,
        .tbytes = 4096,.origin = {.addr = large }
    };
    GDR_CHECK(run(&w, &nr, NULL) == GDR_RMA_NOREG && fk.posts == posts
              && w.tracker.total_remote == 0,
              "unpinnable origin of a multi-piece put: NOREG before anything is posted");
    fk.noreg = 0;

    /* a full transport: posts are retried after progress */
    fk.busy = 3;
    int calls = fk.progress_calls;
    GDR_CHECK(run(&w, &put, NULL) == GDR_RMA_OK && fk.progress_calls >= calls + 3
              && gdr_rma_wait_all(&w.tracker, &eng, 0) == GDR_RMA_OK,
              "BUSY transport: progress, then the posts go through");
    gdr_rma_win_free(&w);
}

static void test_completion(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 0);
    uint64_t v = 5, got[3];
    struct iovec p = one_piece(0, 8);
    done_t d[5] = { 0 };
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.tpieces = &p,.ntpieces = 1,.tbytes = 8,
        .origin = {.addr = &v }
    };
    for (int i = 0; i < 3; i++) {
        put.target = 1;
        run(&w, &put, &d[i]);
    }
    gdr_rma_access_t get = {.kind = GDR_RMA_GET,.target = 2,.tpieces = &p,.ntpieces = 1,
        .tbytes = 8,.result = {.addr = got }
    };
    run(&w, &get, &d[3]);
    GDR_CHECK(w.tracker.remote[1] == 3 && w.tracker.remote[2] == 1 && w.tracker.total_remote == 4
              && w.tracker.local[2] == 1 && w.tracker.local[1] == 3,
              "counting: 3 puts to rank 1 (origin buffers in the NIC's hands: not copied), "
              "a get from rank 2 holding its result buffer");
    fk.lifo = 1;                /* newest first: the get, then the puts backwards */
    GDR_CHECK(gdr_rma_wait_target(&w.tracker, &eng, 2, 1) == GDR_RMA_OK && d[3].calls == 1
              && w.tracker.local[2] == 0 && w.tracker.remote[1] == 3,
              "out of order: flush_local of rank 2 waits for its get only");
    GDR_CHECK(gdr_rma_wait_target(&w.tracker, &eng, 1, 0) == GDR_RMA_OK
              && d[0].calls == 1 && d[1].calls == 1 && d[2].calls == 1
              && w.tracker.total_remote == 0, "out of order: flush of rank 1 sees all 3 puts");
    fk.lifo = 0;
    /* finished operations are kept by the window's tracker and reused: no heap allocation
     * per operation once warm, and a reused one starts clean */
    GDR_CHECK(w.tracker.free_count == 4 && w.tracker.free_ops != NULL,
              "pool: the 4 finished operations are kept");
    gdr_rma_op_t *kept = w.tracker.free_ops;
    gdr_rma_op_t *reused = gdr_rma_op_new(&eng, &w.tracker, 2, 1);
    GDR_CHECK(reused == kept && w.tracker.free_count == 3 && reused->parts == 1
              && reused->status == 0 && reused->complete == NULL && reused->temp == NULL
              && reused->pin == NULL && reused->target == 2 && reused->local_held
              && w.tracker.remote[2] == 1 && w.tracker.local[2] == 1,
              "pool: the next operation reuses the last one kept, counted afresh");
    gdr_rma_op_posted(reused);
    GDR_CHECK(w.tracker.free_count == 4 && w.tracker.remote[2] == 0,
              "pool: back in the pool when done");

    /* a failed work completion: the op completes in error and the next wait reports it,
     * once (a freed buffer fails the flush that covers it, not every later epoch) */
    run(&w, &put, &d[4]);
    fk.fail_next = 1;
    int rc = gdr_rma_wait_target(&w.tracker, &eng, 1, 0);
    GDR_CHECK(rc == GDR_RMA_ERROR, "failed completion: flush returns GDR_RMA_ERROR (got %d)", rc);
    GDR_CHECK(d[4].calls == 1 && d[4].status == GDR_RMA_ERROR && w.tracker.total_remote == 0,
              "failed completion: the op completed once, in error, and is no longer counted");
    GDR_CHECK(gdr_rma_wait_all(&w.tracker, &eng, 0) == GDR_RMA_OK,
              "failed completion: reported once; the next wait on the window is clean");
    gdr_rma_win_free(&w);
}

static void test_dynamic(void)
{
    gdr_rma_win_t w;
    make_win(&w, 1, GDR_RMA_DECLARES_SUM, 0);
    static uint64_t region[64], elsewhere_acc;
    fk.region = (gdr_rma_region_reply_t) {.found = 1,.base = (uint64_t) (uintptr_t) region,
        .size = sizeof(region),.rkey = 99 };
    fk.queries = 0;
    uint64_t v = 42;
    struct iovec p = one_piece(0, 8);
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,
        .disp = (int64_t) (uintptr_t) & region[3],.tpieces = &p,.ntpieces = 1,.tbytes = 8,
        .t_span = 8,.origin = {.addr = &v }
    };
    /* dynamic cards carry unit 1 and base 0 */
    gdr_rma_card_t c = {.size = 0,.disp_unit = 1 };
    gdr_rma_win_set_card(&w, 1, &c);
    GDR_CHECK(run(&w, &put, NULL) == GDR_RMA_OK && fk.queries == 1,
              "dynamic: the first access asks the target about the region");
    put.disp = (int64_t) (uintptr_t) & region[9];
    GDR_CHECK(run(&w, &put, NULL) == GDR_RMA_OK && fk.queries == 1,
              "dynamic: a second access inside the region uses what was learned");
    GDR_CHECK(gdr_rma_wait_target(&w.tracker, &eng, 1, 0) == GDR_RMA_OK && region[3] == 42
              && region[9] == 42, "dynamic: both puts landed with the region's key");
    GDR_CHECK(run(&w, &put, NULL) == GDR_RMA_OK && fk.queries == 2,
              "dynamic: after a flush the region is forgotten and asked for again");
    gdr_rma_wait_all(&w.tracker, &eng, 0);
    put.disp = (int64_t) (uintptr_t) & region[63];
    put.t_span = 16;
    gdr_rma_plan_t plan;
    int na;
    GDR_CHECK(gdr_rma_plan(&w, &put, &plan, &na) == GDR_RMA_ERROR && na == 1,
              "dynamic: an access running past the region into memory not attached is refused");
    /* the next attachment continues the region: across both, as a message */
    static uint64_t two[128];
    fk.region = (gdr_rma_region_reply_t) {.found = 1,.base = (uint64_t) (uintptr_t) two,
        .size = 64 * 8,.rkey = 99 };
    fk.region2 = (gdr_rma_region_reply_t) {.found = 1,.base = (uint64_t) (uintptr_t) & two[64],
        .size = 64 * 8,.rkey = 98 };
    gdr_rma_regions_forget(&w.regions, -1);
    put.disp = (int64_t) (uintptr_t) & two[63];
    GDR_CHECK(gdr_rma_plan(&w, &put, &plan, &na) == GDR_RMA_OK && !plan.by_rdma && na == 0,
              "dynamic: an access running into the next attachment goes as a message");
    put.disp = (int64_t) (uintptr_t) & two[127];
    GDR_CHECK(gdr_rma_plan(&w, &put, &plan, &na) == GDR_RMA_ERROR && na == 1,
              "dynamic: ... and one running past the second is refused");
    /* accumulates that go as messages are checked too (the target would not check) */
    gdr_rma_access_t acc = put;
    acc.kind = GDR_RMA_ACC;
    acc.op = GDR_RMA_ACC_OTHER;
    acc.disp = (int64_t) (uintptr_t) & elsewhere_acc;
    acc.t_span = 8;
    GDR_CHECK(gdr_rma_plan(&w, &acc, &plan, &na) == GDR_RMA_ERROR && na == 1,
              "dynamic: a message-path accumulate to memory not attached is refused");
    acc.disp = (int64_t) (uintptr_t) & two[5];
    GDR_CHECK(gdr_rma_plan(&w, &acc, &plan, &na) == GDR_RMA_OK && !plan.by_rdma && na == 0,
              "dynamic: ... and one inside an attachment goes as a message");
    fk.region2 = (gdr_rma_region_reply_t) { 0 };
    static uint64_t elsewhere;
    put.disp = (int64_t) (uintptr_t) & elsewhere;
    put.t_span = 8;
    GDR_CHECK(gdr_rma_plan(&w, &put, &plan, &na) == GDR_RMA_ERROR && na == 1,
              "dynamic: an address the target has not attached is refused");
    gdr_rma_win_free(&w);
}

/* A dynamic window without RDMA (its ranks reached by messages and shared memory, or no
 * NIC at all): attachments are recorded unregistered, and an origin checks every access
 * against them, its own and, by asking, other ranks' (MPICH's message handlers at the
 * target would write wherever the address points). */
static void test_dynamic_no_rdma(void)
{
    gdr_rma_win_t w;
    static uint64_t mine[16], theirs[32];
    char why[160];
    uint32_t rkey = 1;
    int na = 0;
    GDR_CHECK(gdr_rma_win_init(&w, &eng, NULL, 3, 0, 1, 0) == GDR_RMA_OK && !w.rdma,
              "no RDMA: a dynamic window of 3 ranks without RDMA");
    int regs = fk.regs;
    int rc = gdr_rma_regions_attach(&w.regions, NULL, mine, sizeof(mine), gdr_rma_win_access(&w),
                                    0, why, sizeof(why));
    gdr_rma_region_reply_t d = gdr_rma_regions_describe(&w.regions, (uint64_t) (uintptr_t)
                                                        & mine[15]);
    GDR_CHECK(rc == 1 && fk.regs == regs && d.found && d.rkey == 0
              && d.size == sizeof(mine) && strstr(why, "no RDMA") != NULL,
              "no RDMA: an attachment is recorded, not registered (%s)", why);
    uint64_t at15 = (uint64_t) (uintptr_t) & mine[15];
    GDR_CHECK(gdr_rma_regions_lookup(&w.regions, &eng, NULL, 0, 0, at15, 8, &rkey, &na)
              == GDR_RMA_OK && rkey == 0 && na == 0,
              "no RDMA: this rank's own last element is attached (no key: messages)");
    GDR_CHECK(gdr_rma_regions_lookup(&w.regions, &eng, NULL, 0, 0, at15, 16, &rkey, &na)
              == GDR_RMA_ERROR && na == 1,
              "no RDMA: one element past its own attachment is refused");
    fk.region = (gdr_rma_region_reply_t) {.found = 1,.base = (uint64_t) (uintptr_t) theirs,
        .size = sizeof(theirs) };
    fk.region2 = (gdr_rma_region_reply_t) { 0 };
    fk.queries = 0;
    uint64_t t31 = (uint64_t) (uintptr_t) & theirs[31];
    GDR_CHECK(gdr_rma_regions_lookup(&w.regions, &eng, NULL, 0, 2, t31, 8, &rkey, &na)
              == GDR_RMA_OK && na == 0 && fk.queries == 1
              && gdr_rma_regions_lookup(&w.regions, &eng, NULL, 0, 2, t31 - 64, 16, &rkey, &na)
              == GDR_RMA_OK && fk.queries == 1,
              "no RDMA: another rank is asked once, then what was learned serves (queries %d)",
              fk.queries);
    GDR_CHECK(gdr_rma_regions_lookup(&w.regions, &eng, NULL, 0, 2, t31, 9, &rkey, &na)
              == GDR_RMA_ERROR && na == 1,
              "no RDMA: one byte past another rank's attachment is refused");
    gdr_rma_regions_forget(&w.regions, 2);
    GDR_CHECK(gdr_rma_regions_lookup(&w.regions, &eng, NULL, 0, 2, t31, 8, &rkey, &na)
              == GDR_RMA_OK && fk.queries == 3,
              "no RDMA: after the origin forgot (a flush), the target is asked again");
    int deregs = fk.deregs;
    gdr_rma_regions_detach(&w.regions, NULL, (uint64_t) (uintptr_t) mine);
    GDR_CHECK(gdr_rma_regions_lookup(&w.regions, &eng, NULL, 0, 0, at15, 8, &rkey, &na)
              == GDR_RMA_ERROR && na == 1 && fk.deregs == deregs,
              "no RDMA: after detach its own memory is refused (nothing to deregister)");
    /* left attached at free: freed with the window (the sanitized run finds a leak) */
    rc = gdr_rma_regions_attach(&w.regions, NULL, mine, sizeof(mine), 0, 0, why, sizeof(why));
    GDR_CHECK(rc == 1, "no RDMA: attached again before the window is freed");
    gdr_rma_win_free(&w);
    GDR_CHECK(w.regions.attached == NULL, "no RDMA: the window's free drops its regions");
}

/* A non-dynamic window (rank 0 of 4) exposing target_mem[0] with the host's expose mask:
 * returns expose's result and the card, counts the registrations, frees the window. */
static int expose_once(unsigned expose, gdr_rma_card_t *card, int *regs, char *why,
                       size_t why_len)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 1);
    int before = fk.regs;
    why[0] = '\0';
    int rc = gdr_rma_win_expose(&w, target_mem[0], 4096, 8, expose, card, why, why_len);
    *regs = fk.regs - before;
    gdr_rma_win_free(&w);
    return rc;
}

static void test_device_windows(void)
{
    gdr_rma_card_t c;
    char why[128];
    int regs;

    /* the card carries the flags; set_card keeps them per target */
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 1);
    gdr_rma_card_t dev = {.size = 4096,.disp_unit = 8,.flags = GDR_RMA_CARD_DEVICE
            | GDR_RMA_CARD_GPU }, gpu_only = {.size = 4096,.disp_unit = 8,.flags =
            GDR_RMA_CARD_GPU };
    gdr_rma_win_set_card(&w, 1, &dev);
    gdr_rma_win_set_card(&w, 2, &gpu_only);
    GDR_CHECK(w.targets[1].device && w.targets[1].gpu && !w.targets[2].device
              && w.targets[2].gpu && !w.targets[3].device && !w.targets[3].gpu,
              "device windows: set_card keeps each target's DEVICE and GPU flags");
    GDR_CHECK(!gdr_rma_win_reaches(&w, 1),
              "device windows: a target whose card has no key is not reached by RDMA");
    struct iovec p = one_piece(0, 8);
    uint64_t v = 5;
    gdr_rma_access_t put = {.kind = GDR_RMA_PUT,.target = 1,.tpieces = &p,.ntpieces = 1,
        .tbytes = 8,.t_span = 8,.origin = {.addr = &v }
    };
    gdr_rma_plan_t plan;
    int na;
    GDR_CHECK(gdr_rma_plan(&w, &put, &plan, &na) == GDR_RMA_OK && !plan.by_rdma,
              "device windows: a put to an unregistered device window goes as a message");
    gdr_rma_win_free(&w);

    /* staged mode: device memory is never registered */
    int rc = expose_once(GDR_RMA_EXPOSE_IS_DEVICE | GDR_RMA_EXPOSE_GPU, &c, &regs, why,
                         sizeof(why));
    GDR_CHECK(rc == 1 && regs == 0 && c.rkey == 0 && c.base == 0 && why[0] != '\0'
              && c.flags == (GDR_RMA_CARD_DEVICE | GDR_RMA_CARD_GPU) && c.size == 4096,
              "device windows: without DEVICE_OK a device window registers nothing, its card "
              "says rkey 0, DEVICE and GPU, and why says so (rc %d, regs %d, why '%s')", rc, regs,
              why);
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 1);
    gdr_rma_win_set_card(&w, 1, &c);
    GDR_CHECK(!gdr_rma_win_reaches(&w, 1) && w.targets[1].device,
              "device windows: origins do not reach that window by RDMA");
    gdr_rma_win_free(&w);

    /* peermem: device memory is registered */
    rc = expose_once(GDR_RMA_EXPOSE_IS_DEVICE | GDR_RMA_EXPOSE_DEVICE_OK | GDR_RMA_EXPOSE_GPU,
                     &c, &regs, why, sizeof(why));
    GDR_CHECK(rc == 0 && regs == 1 && c.rkey == 0x1234 && c.flags == (GDR_RMA_CARD_DEVICE
                                                                       | GDR_RMA_CARD_GPU),
              "device windows: with DEVICE_OK a device window is registered (rc %d, regs %d)",
              rc, regs);
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 1);
    gdr_rma_win_set_card(&w, 1, &c);
    GDR_CHECK(gdr_rma_win_reaches(&w, 1) && w.targets[1].device,
              "device windows: origins reach a registered device window by RDMA");
    gdr_rma_win_free(&w);

    /* host memory: registered either way */
    rc = expose_once(GDR_RMA_EXPOSE_GPU, &c, &regs, why, sizeof(why));
    GDR_CHECK(rc == 0 && regs == 1 && c.rkey == 0x1234 && c.flags == GDR_RMA_CARD_GPU,
              "device windows: host memory is registered without DEVICE_OK");
    rc = expose_once(GDR_RMA_EXPOSE_DEVICE_OK, &c, &regs, why, sizeof(why));
    GDR_CHECK(rc == 0 && regs == 1 && c.rkey == 0x1234 && c.flags == 0,
              "device windows: host memory is registered with DEVICE_OK, flags 0 without GPU");

    /* dynamic windows: per region */
    static uint64_t r_dev[16], r_peer[16], r_host[16];
    make_win(&w, 1, GDR_RMA_DECLARES_SUM, 0);
    GDR_CHECK(gdr_rma_win_expose(&w, NULL, 0, 1, GDR_RMA_EXPOSE_IS_DEVICE | GDR_RMA_EXPOSE_GPU,
                                 &c, why, sizeof(why)) == 0 && c.flags == GDR_RMA_CARD_GPU,
              "device windows: a dynamic window's card never says DEVICE (its regions do)");
    regs = fk.regs;
    rc = gdr_rma_regions_attach(&w.regions, &eng, r_dev, sizeof(r_dev), gdr_rma_win_access(&w),
                                GDR_RMA_EXPOSE_IS_DEVICE | GDR_RMA_EXPOSE_GPU, why, sizeof(why));
    gdr_rma_region_reply_t d = gdr_rma_regions_describe(&w.regions, (uint64_t) (uintptr_t)
                                                        & r_dev[2]);
    GDR_CHECK(rc == 1 && fk.regs == regs && d.found && d.rkey == 0 && d.device
              && d.base == (uint64_t) (uintptr_t) r_dev,
              "device windows: a device region without DEVICE_OK registers nothing and is "
              "described with rkey 0 and device (rc %d)", rc);
    rc = gdr_rma_regions_attach(&w.regions, &eng, r_peer, sizeof(r_peer),
                                gdr_rma_win_access(&w), GDR_RMA_EXPOSE_IS_DEVICE
                                | GDR_RMA_EXPOSE_DEVICE_OK, why, sizeof(why));
    d = gdr_rma_regions_describe(&w.regions, (uint64_t) (uintptr_t) & r_peer[0]);
    GDR_CHECK(rc == 0 && fk.regs == regs + 1 && d.found && d.rkey == 0x1234 && d.device,
              "device windows: a device region with DEVICE_OK is registered, described as device");
    rc = gdr_rma_regions_attach(&w.regions, &eng, r_host, sizeof(r_host),
                                gdr_rma_win_access(&w), 0, why, sizeof(why));
    d = gdr_rma_regions_describe(&w.regions, (uint64_t) (uintptr_t) & r_host[15]);
    GDR_CHECK(rc == 0 && fk.regs == regs + 2 && d.found && d.rkey == 0x1234 && !d.device,
              "device windows: a host region is registered and described as host memory");
    int deregs = fk.deregs;
    gdr_rma_regions_detach(&w.regions, &eng, (uint64_t) (uintptr_t) r_dev);
    GDR_CHECK(fk.deregs == deregs && !gdr_rma_regions_describe(&w.regions, (uint64_t)
                                                               (uintptr_t) r_dev).found,
              "device windows: detaching the unregistered device region deregisters nothing");
    /* the origin side: the target's reply says rkey 0, so the access goes as a message
     * (dynamic cards carry unit 1: displacements are addresses) */
    gdr_rma_card_t dyn = {.disp_unit = 1,.flags = GDR_RMA_CARD_GPU };
    gdr_rma_win_set_card(&w, 1, &dyn);
    fk.region = (gdr_rma_region_reply_t) {.found = 1,.base = (uint64_t) (uintptr_t) r_dev,
        .size = sizeof(r_dev),.rkey = 0,.device = 1 };
    put.disp = (int64_t) (uintptr_t) & r_dev[1];
    GDR_CHECK(gdr_rma_plan(&w, &put, &plan, &na) == GDR_RMA_OK && !plan.by_rdma,
              "device windows: a put into a target's unregistered device region goes as a "
              "message");
    gdr_rma_win_free(&w);
}

static void test_switch_paths(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM | GDR_RMA_DECLARES_OTHER, 1);
    GDR_CHECK(w.atomics.switch_wait, "ordered window with SUM and others: switch waits");
    uint64_t v = 1;
    struct iovec p = one_piece(0, 8);
    gdr_rma_access_t acc = {.kind = GDR_RMA_ACC,.target = 1,.tpieces = &p,.ntpieces = 1,
        .tbytes = 8,.op = GDR_RMA_ACC_SUM,.int64_elements = 1,.origin = {.addr = &v }
    };
    run(&w, &acc, NULL);
    unsigned long long msgs = eng.count[GDR_RMA_BY_MESSAGE][GDR_RMA_ACC];
    GDR_CHECK(w.tracker.remote[1] == 1 && gdr_rma_note_message(&w, GDR_RMA_ACC, 1) == GDR_RMA_OK
              && w.tracker.remote[1] == 0
              && eng.count[GDR_RMA_BY_MESSAGE][GDR_RMA_ACC] == msgs + 1,
              "NIC -> message: the NIC accumulate completed first, the message counted");
    fk.am_acc_pending = 3;
    GDR_CHECK(run(&w, &acc, NULL) == GDR_RMA_OK && fk.am_acc_pending == 0,
              "message -> NIC: waited for the message accumulates to complete");

    /* the staged protocol counts its operations in the same tracker */
    GDR_CHECK(w.tracker.remote[1] == 1
              && gdr_rma_switch_path(&w, 1, GDR_RMA_VIA_STAGED) == GDR_RMA_OK
              && w.tracker.remote[1] == 0, "NIC -> staged: the NIC accumulate completed first");
    fk.staged_op = gdr_rma_op_new(&eng, &w.tracker, 1, 0);
    gdr_rma_op_add_part(fk.staged_op);
    gdr_rma_op_posted(fk.staged_op);
    GDR_CHECK(gdr_rma_switch_path(&w, 1, GDR_RMA_VIA_STAGED) == GDR_RMA_OK
              && fk.staged_op != NULL, "staged -> staged: no wait");
    GDR_CHECK(run(&w, &acc, NULL) == GDR_RMA_OK && fk.staged_op == NULL
              && w.tracker.remote[1] == 1,
              "staged -> NIC: the staged accumulate completed before the atomic was posted");
    GDR_CHECK(gdr_rma_note_message(&w, GDR_RMA_ACC, 1) == GDR_RMA_OK && w.tracker.remote[1] == 0,
              "NIC -> message, as before");
    fk.am_acc_pending = 2;
    GDR_CHECK(gdr_rma_switch_path(&w, 1, GDR_RMA_VIA_STAGED) == GDR_RMA_OK
              && fk.am_acc_pending == 0, "message -> staged: the messages were applied first");
    gdr_rma_wait_all(&w.tracker, &eng, 0);
    gdr_rma_win_free(&w);

    /* NIC atomics declared but no others: NIC <-> message never switches, NIC <-> staged
     * still does; unordered accumulates never wait */
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 1);
    int rc = run(&w, &acc, NULL);
    GDR_CHECK(rc == GDR_RMA_OK && !w.atomics.switch_wait && w.tracker.remote[1] == 1,
              "which_accumulate_ops=sum: an atomic in flight (rc %d, %lu)", rc,
              w.tracker.remote[1]);
    GDR_CHECK(gdr_rma_switch_path(&w, 1, GDR_RMA_VIA_STAGED) == GDR_RMA_OK
              && w.tracker.remote[1] == 0,
              "which_accumulate_ops=sum: NIC -> staged still waits (device operands go staged)");
    gdr_rma_win_free(&w);
    make_win(&w, 0, GDR_RMA_DECLARES_SUM | GDR_RMA_DECLARES_OTHER, 0);
    run(&w, &acc, NULL);
    GDR_CHECK(w.tracker.remote[1] == 1 && gdr_rma_switch_path(&w, 1, GDR_RMA_VIA_STAGED)
              == GDR_RMA_OK && w.tracker.remote[1] == 1,
              "accumulate_ordering=none: no switch waits");
    gdr_rma_wait_all(&w.tracker, &eng, 0);
    gdr_rma_win_free(&w);
}

/* The general path moves each piece by the selector's protocol (gdr_rma_select.h): the
 * transport is told rc/short, rc/bcopy or rc/zcopy and never picks one itself; a host
 * cap (MPIR_CVAR_CH4_GDR_RMA_SHORT_MAX) turns rc/short off. */
static void test_protocols_chosen(void)
{
    gdr_rma_win_t w;
    make_win(&w, 0, GDR_RMA_DECLARES_SUM, 0);
    fk.inline_max = 4;
    fk.bcopy_max = 8;
    uint8_t src[64] = { 1, 2, 3, 4, 5, 6, 7, 8 }, got[64];
    struct iovec p4 = one_piece(0, 4), p8 = one_piece(0, 8), p64 = one_piece(0, 64);
    struct {
        gdr_rma_kind_t kind;
        struct iovec *piece;
        uint64_t bytes;
        gdr_rma_proto_t want;
        const char *what;
    } rows[] = {
        {GDR_RMA_PUT, &p4, 4, GDR_RMA_PROTO_RC_SHORT, "a 4-byte put: put/rc/short"},
        {GDR_RMA_PUT, &p8, 8, GDR_RMA_PROTO_RC_BCOPY, "an 8-byte put: put/rc/bcopy"},
        {GDR_RMA_PUT, &p64, 64, GDR_RMA_PROTO_RC_ZCOPY, "a 64-byte put: put/rc/zcopy"},
        {GDR_RMA_GET, &p4, 4, GDR_RMA_PROTO_RC_BCOPY, "a 4-byte get: get/rc/bcopy"},
        {GDR_RMA_GET, &p64, 64, GDR_RMA_PROTO_RC_ZCOPY, "a 64-byte get: get/rc/zcopy"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        gdr_rma_access_t a = {.kind = rows[i].kind,.target = 1,.tpieces = rows[i].piece,
            .ntpieces = 1,.tbytes = rows[i].bytes,.origin = {.addr = src},.result = {.addr = got}
        };
        int before = fk.protos[rows[i].want];
        GDR_CHECK(run(&w, &a, NULL) == GDR_RMA_OK && fk.protos[rows[i].want] == before + 1,
                  "%s", rows[i].what);
    }
    GDR_CHECK(gdr_rma_wait_all(&w.tracker, &eng, 0) == GDR_RMA_OK, "all completed");
    eng.short_cap = 0;
    gdr_rma_access_t a = {.kind = GDR_RMA_PUT,.target = 1,.tpieces = &p4,.ntpieces = 1,
        .tbytes = 4,.origin = {.addr = src}
    };
    int shorts = fk.protos[GDR_RMA_PROTO_RC_SHORT], bcopies = fk.protos[GDR_RMA_PROTO_RC_BCOPY];
    GDR_CHECK(run(&w, &a, NULL) == GDR_RMA_OK && fk.protos[GDR_RMA_PROTO_RC_SHORT] == shorts
              && fk.protos[GDR_RMA_PROTO_RC_BCOPY] == bcopies + 1,
              "short_cap 0: the 4-byte put goes put/rc/bcopy");
    GDR_CHECK(gdr_rma_wait_all(&w.tracker, &eng, 0) == GDR_RMA_OK, "that one completed too");
    eng.short_cap = UINT32_MAX;
    fk.inline_max = 0;
    fk.bcopy_max = 0;
    gdr_rma_win_free(&w);
}

int main(void)
{
    fk.atomicv_max = 32;
    test_registry();
    test_paths();
    test_atomic_after_read();
    test_decomposition();
    test_device_buffers();
    test_completion();
    test_dynamic();
    test_dynamic_no_rdma();
    test_device_windows();
    test_switch_paths();
    test_protocols_chosen();
    return gdr_unit_finish();
}
