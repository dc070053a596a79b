/* The ipc transport (src/rma/gdr_rma_ipc.h) over the real device seam
 * (src/adapt/gdr_gpu_rma_device.h) on the simulated GPU, in both of its modes.  In strict
 * mode device memory is PROT_NONE for the host: a transport that touched the window,
 * origin or result on the host would die of SIGSEGV.  The "target's window" is device
 * memory of this process (a same-node peer's would be the same memory mapped through
 * CUDA IPC: the netmod's business).  Every case checks the window's bytes (read back with
 * gdr_gpu_copy) against a host model, and results against the values before.
 *
 * Cases: Put and Get as one kernel launch and as copy-engine copies (threshold 0, a
 * pageable origin, more runs than a launch takes: batches of runs; no kernel loaded:
 * every run from the first), scattered origin and target pieces;
 * Accumulate SUM int32 from device and pageable origins, in rounds through a small
 * scratch; Get_accumulate int64 into pageable result pieces; Compare_and_swap with a
 * pageable compare value (hit and miss); a NO_OP fetch; acc_takes on misaligned targets;
 * inside() at the window's edges; lanes made per target, pending accumulates, waits. */
#include "gpu/gpusim_modes.h"
#include <stdint.h>
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_module.h"
#include "gpu/gdr_gpu_stream.h"
#include "adapt/gdr_gpu_rma_device.h"
#include "rma/gdr_rma_ipc.h"

enum { WIN = 4096, RANKS = 3 };

static struct {
    gdr_gpu_t g;
    gdr_gpu_rma_device_t gd;
    gdr_rma_device_t dev;
    int (*copyv)(void *ctx, void *queue, const struct iovec *dst, size_t n_dst,
                 const struct iovec *src, size_t n_src);
    int (*copy_runs)(void *ctx, void *queue, const gdr_rma_copy_run_t *runs, size_t n);
    unsigned long copyvs, kernels;
    int no_kernel;              /* copy_runs answers GDR_RMA_NOREG */
    char *win;                  /* device memory: the target's window */
    unsigned char model[WIN];   /* what it should hold */
} T;

static int counted_copyv(void *ctx, void *queue, const struct iovec *dst, size_t n_dst,
                         const struct iovec *src, size_t n_src)
{
    T.copyvs++;
    return T.copyv(ctx, queue, dst, n_dst, src, n_src);
}

static int counted_copy_runs(void *ctx, void *queue, const gdr_rma_copy_run_t *runs, size_t n)
{
    T.kernels++;
    if (T.no_kernel)
        return GDR_RMA_NOREG;   /* as the adapter answers when the kernel is not loaded */
    return T.copy_runs(ctx, queue, runs, n);
}

static void fill(void)
{
    for (int i = 0; i < WIN; i++)
        T.model[i] = (unsigned char) (i * 7 + 3);
    gdr_gpu_copy(&T.g, T.win, T.model, WIN);
}

static int window_matches(void)
{
    static unsigned char now[WIN];
    if (gdr_gpu_copy(&T.g, now, T.win, WIN) != 0)
        return 0;
    for (int i = 0; i < WIN; i++)
        if (now[i] != T.model[i]) {
            printf("# window byte %d: 0x%02x, expected 0x%02x\n", i, now[i], T.model[i]);
            return 0;
        }
    return 1;
}

static void *dev_alloc(size_t n)
{
    void *p = NULL;
    if (gdr_gpu_mem_alloc(&T.g, n, &p) != 0)
        GDR_CHECK(0, "device memory: %s", T.g.error);
    return p;
}

static void test_put_get(gdr_rma_ipc_t *x)
{
    unsigned char host[600];
    for (int i = 0; i < 600; i++)
        host[i] = (unsigned char) (0xa0 ^ i);
    char *dorg = dev_alloc(600);
    gdr_gpu_copy(&T.g, dorg, host, 600);
    int k;

    /* contiguous device origin, small: one launch of the copy kernel */
    fill();
    struct iovec o = {.iov_base = dorg,.iov_len = 600 }, t = {.iov_base = (void *) 16,
        .iov_len = 600 };
    unsigned long before = T.kernels, copies = T.copyvs;
    int rc = gdr_rma_ipc_copy(x, 1, 1, T.win + 64, &o, 1, &t, 1, &k);
    gdr_rma_ipc_wait(x, 1);
    memcpy(T.model + 80, host, 600);
    GDR_CHECK(rc == GDR_RMA_OK && k == 1 && T.kernels == before + 1 && T.copyvs == copies
              && window_matches(), "put 600 B from device memory: one kernel launch, the "
              "window's bytes at 80 (rc %d, by_kernel %d)", rc, k);
    GDR_CHECK(x->lanes[1].queue != NULL && x->lanes[0].queue == NULL
              && x->lanes[2].queue == NULL, "a lane's queue is made at its target's first "
              "operation, and only its");

    /* the threshold at 0: the copy engine */
    x->kernel_copy_max = 0;
    fill();
    rc = gdr_rma_ipc_copy(x, 1, 1, T.win, &o, 1, &t, 1, &k);
    gdr_rma_ipc_wait(x, 1);
    memcpy(T.model + 16, host, 600);
    GDR_CHECK(rc == GDR_RMA_OK && k == 0 && T.copyvs == copies + 1 && window_matches(),
              "put with kernel_copy_max 0: one copyv (rc %d, by_kernel %d)", rc, k);
    x->kernel_copy_max = 16384;

    /* a pageable origin: the device does not address it, so the copy engine */
    fill();
    o.iov_base = host;
    rc = gdr_rma_ipc_copy(x, 1, 1, T.win, &o, 1, &t, 1, &k);
    gdr_rma_ipc_wait(x, 1);
    memcpy(T.model + 16, host, 600);
    GDR_CHECK(rc == GDR_RMA_OK && k == 0 && window_matches(), "put from pageable memory: "
              "copy engine, bytes right (rc %d, by_kernel %d)", rc, k);

    /* Get, origin in 3 device pieces, target in 2: each stretch one run */
    fill();
    struct iovec od[3] = {{dorg, 5}, {dorg + 100, 100}, {dorg + 300, 27}};
    struct iovec td[2] = {{(void *) 8, 60}, {(void *) 200, 72}};
    rc = gdr_rma_ipc_copy(x, 2, 0, T.win + 1000, od, 3, td, 2, &k);
    gdr_rma_ipc_wait(x, 2);
    unsigned char expect[132], got[132];
    memcpy(expect, T.model + 1008, 60);
    memcpy(expect + 60, T.model + 1200, 72);
    gdr_gpu_copy(&T.g, got, dorg, 5);
    gdr_gpu_copy(&T.g, got + 5, dorg + 100, 100);
    gdr_gpu_copy(&T.g, got + 105, dorg + 300, 27);
    GDR_CHECK(rc == GDR_RMA_OK && k == 1 && memcmp(got, expect, 132) == 0 && window_matches(),
              "get 132 B, scattered both sides, by one launch: the target's bytes in the "
              "origin pieces, the window unchanged (rc %d)", rc);

    /* more runs than one launch takes: the copy engine */
    fill();
    gdr_gpu_copy(&T.g, dorg, host, 600);        /* (the Get wrote into it) */
    struct iovec many[70];
    for (int i = 0; i < 70; i++)
        many[i] = (struct iovec) {.iov_base = (void *) (uintptr_t) (i * 8),.iov_len = 4 };
    o = (struct iovec) {.iov_base = dorg,.iov_len = 280 };
    before = T.kernels;
    copies = T.copyvs;
    rc = gdr_rma_ipc_copy(x, 0, 1, T.win + 2048, &o, 1, many, 70, &k);
    gdr_rma_ipc_wait(x, -1);
    for (int i = 0; i < 70; i++)
        memcpy(T.model + 2048 + i * 8, host + i * 4, 4);
    GDR_CHECK(rc == GDR_RMA_OK && k == 0 && T.kernels == before && window_matches(),
              "put into 70 target pieces: more than a launch's %d runs, so copies (rc %d, "
              "by_kernel %d, kernels %lu)", GDR_RMA_COPY_RUNS_MAX, rc, k, T.kernels - before);
    GDR_CHECK(T.copyvs == copies + 5, "the 70 runs go as copyv calls of at most 16 runs "
              "each, nothing allocated: 5 calls (got %lu)", T.copyvs - copies);

    /* the kernel not loaded: the copy engine carries every run, from the first */
    fill();
    T.no_kernel = 1;
    before = T.kernels;
    rc = gdr_rma_ipc_copy(x, 2, 1, T.win + 1000, od, 3, td, 2, &k);
    gdr_rma_ipc_wait(x, 2);
    T.no_kernel = 0;
    gdr_gpu_copy(&T.g, got, dorg, 5);
    gdr_gpu_copy(&T.g, got + 5, dorg + 100, 100);
    gdr_gpu_copy(&T.g, got + 105, dorg + 300, 27);
    memcpy(T.model + 1008, got, 60);
    memcpy(T.model + 1200, got + 60, 72);
    GDR_CHECK(rc == GDR_RMA_OK && k == 0 && T.kernels == before + 1 && window_matches(),
              "put, 3 origin pieces against 2 target pieces, with no kernel loaded: copies "
              "of every run, the window's bytes right (rc %d, by_kernel %d)", rc, k);

    gdr_gpu_mem_free(&T.g, dorg);
}

static void test_acc(gdr_rma_ipc_t *x)
{
    int32_t add[64];
    for (int i = 0; i < 64; i++)
        add[i] = 1000 + i;
    int32_t *dadd = dev_alloc(sizeof(add));
    gdr_gpu_copy(&T.g, dadd, add, sizeof(add));

    /* SUM int32 into 2 target pieces, origin in device memory (read in place) and in
     * pageable memory (gathered into scratch in rounds of 16 bytes each) */
    for (int pageable = 0; pageable < 2; pageable++) {
        fill();
        x->scratch_max = pageable ? 32 : GDR_RMA_IPC_SCRATCH_MAX;
        struct iovec t[2] = {{(void *) 0, 40 * 4}, {(void *) 512, 24 * 4}};
        struct iovec o = {.iov_base = pageable ? (void *) add : (void *) dadd,
            .iov_len = sizeof(add) };
        gdr_rma_ipc_acc_t a = {.op = GDR_GPU_OP_SUM,.type = GDR_GPU_T_INT32,.elem = 4,
            .t = t,.tn = 2,.o = &o,.on = 1
        };
        int takes = gdr_rma_ipc_acc_takes(&a, T.win + 256);
        int rc = gdr_rma_ipc_acc(x, 1, T.win + 256, &a);
        int pending = gdr_rma_ipc_acc_pending(x, 1);
        int wrc = gdr_rma_ipc_wait(x, 1);
        for (int i = 0; i < 64; i++) {
            size_t at = 256 + (i < 40 ? (size_t) i * 4 : 512 + (size_t) (i - 40) * 4);
            int32_t v;
            memcpy(&v, T.model + at, 4);
            v += add[i];
            memcpy(T.model + at, &v, 4);
        }
        GDR_CHECK(takes && rc == GDR_RMA_OK && pending && wrc == GDR_RMA_OK
                  && !gdr_rma_ipc_acc_pending(x, 1) && window_matches(),
                  "accumulate SUM int32, %s origin, 2 target pieces: every element added, "
                  "pending until the wait (rc %d)", pageable ? "pageable" : "device", rc);
    }
    x->scratch_max = GDR_RMA_IPC_SCRATCH_MAX;

    /* Get_accumulate SUM int64: results scattered into 2 pageable pieces */
    fill();
    int64_t ops[4] = { 5, -6, 7, 1 << 20 }, res[5] = { 0 }, old[4];
    memcpy(old, T.model + 1024, sizeof(old));
    struct iovec t = {.iov_base = 0,.iov_len = 32 }, o = {.iov_base = ops,.iov_len = 32 };
    struct iovec r[2] = {{res, 8}, {res + 2, 24}};
    gdr_rma_ipc_acc_t a = {.op = GDR_GPU_OP_SUM,.type = GDR_GPU_T_INT64,.elem = 8,.t = &t,
        .tn = 1,.o = &o,.on = 1,.r = r,.rn = 2
    };
    int rc = gdr_rma_ipc_acc(x, 0, T.win + 1024, &a);
    gdr_rma_ipc_wait(x, 0);
    for (int i = 0; i < 4; i++) {
        int64_t v = old[i] + ops[i];
        memcpy(T.model + 1024 + i * 8, &v, 8);
    }
    GDR_CHECK(rc == GDR_RMA_OK && res[0] == old[0] && res[1] == 0 && res[2] == old[1]
              && res[3] == old[2] && res[4] == old[3] && window_matches(),
              "get_accumulate SUM int64: the old values in the 2 result pieces, the sums in "
              "the window (rc %d)", rc);

    /* Compare_and_swap int64, the compare value in pageable memory: hit, then miss */
    for (int hit = 1; hit >= 0; hit--) {
        fill();
        int64_t now, swap = 77, fetched = -1, compare;
        memcpy(&now, T.model + 2048, 8);
        compare = hit ? now : now + 1;
        struct iovec ct = {.iov_base = 0,.iov_len = 8 }, co = {.iov_base = &swap,.iov_len = 8 };
        struct iovec cr = {.iov_base = &fetched,.iov_len = 8 };
        gdr_rma_ipc_acc_t c = {.op = GDR_GPU_OP_CSWAP,.type = GDR_GPU_T_INT64,.elem = 8,
            .compare = &compare,.t = &ct,.tn = 1,.o = &co,.on = 1,.r = &cr,.rn = 1
        };
        rc = gdr_rma_ipc_acc(x, 2, T.win + 2048, &c);
        gdr_rma_ipc_wait(x, 2);
        if (hit)
            memcpy(T.model + 2048, &swap, 8);
        GDR_CHECK(rc == GDR_RMA_OK && fetched == now && window_matches(),
                  "compare_and_swap, compare value in pageable memory, %s: old value "
                  "fetched, window %s (rc %d)", hit ? "hit" : "miss",
                  hit ? "swapped" : "unchanged", rc);
    }

    /* a NO_OP fetch: no origin, the result in device memory */
    fill();
    int32_t *dres = dev_alloc(16), fetched4[4];
    struct iovec ft = {.iov_base = (void *) 0,.iov_len = 16 }, fr = {.iov_base = dres,
        .iov_len = 16 };
    gdr_rma_ipc_acc_t f = {.op = GDR_GPU_OP_NO_OP,.type = GDR_GPU_T_INT32,.elem = 4,.t = &ft,
        .tn = 1,.r = &fr,.rn = 1
    };
    rc = gdr_rma_ipc_acc(x, 0, T.win + 3000, &f);
    gdr_rma_ipc_wait(x, 0);
    gdr_gpu_copy(&T.g, fetched4, dres, 16);
    GDR_CHECK(rc == GDR_RMA_OK && memcmp(fetched4, T.model + 3000, 16) == 0 && window_matches(),
              "fetch (NO_OP) into device memory: the window's values, window unchanged");

    /* what an atomic step cannot take */
    struct iovec mt = {.iov_base = (void *) 0,.iov_len = 8 };
    gdr_rma_ipc_acc_t m = {.op = GDR_GPU_OP_SUM,.type = GDR_GPU_T_INT32,.elem = 4,.t = &mt,
        .tn = 1
    };
    gdr_rma_ipc_acc_t dc = {.op = GDR_GPU_OP_SUM,.type = GDR_GPU_T_DOUBLE_COMPLEX,.elem = 16,
        .t = &mt,.tn = 1
    };
    GDR_CHECK(gdr_rma_ipc_acc_takes(&m, T.win + 4) && !gdr_rma_ipc_acc_takes(&m, T.win + 2)
              && !gdr_rma_ipc_acc_takes(&dc, T.win), "acc_takes: int32 at 4 yes, at 2 no; "
              "16-byte elements no");
    gdr_gpu_mem_free(&T.g, dres);
    gdr_gpu_mem_free(&T.g, dadd);
}

static void test_inside(void)
{
    struct iovec p[2] = {{(void *) 0, 8}, {(void *) 56, 8}};
    GDR_CHECK(gdr_rma_ipc_inside(1, 8, 72, p, 2) && !gdr_rma_ipc_inside(1, 8, 71, p, 2)
              && !gdr_rma_ipc_inside(-1, 8, 1 << 20, p, 2)
              && !gdr_rma_ipc_inside(INT64_MAX, 8, UINT64_MAX, p, 2)
              && gdr_rma_ipc_inside(0, 1, 0, p, 0), "inside: the last byte at the edge yes, "
              "one past no, negative displacement no, overflow no, nothing yes");
}

static void body(const char *lib, const char *mode)
{
    static const unsigned char image[16];
    (void) mode;
    memset(&T, 0, sizeof(T));
    if (gdr_gpu_open(&T.g, lib, 0) != 0 || gdr_gpu_module_load(&T.g, image, sizeof(image)) != 0
        || gdr_gpu_rma_device_init(&T.gd, &T.g, &T.dev) != 0) {
        GDR_CHECK(0, "open the simulated GPU and the device seam: %s", T.g.error);
        return;
    }
    T.copyv = T.dev.copyv;
    T.dev.copyv = counted_copyv;
    T.copy_runs = T.dev.copy_runs;
    T.dev.copy_runs = counted_copy_runs;
    T.win = dev_alloc(WIN);
    gdr_rma_ipc_t x;
    GDR_CHECK(gdr_rma_ipc_init(&x, &T.dev, RANKS, 16384) == GDR_RMA_OK, "init");
    test_put_get(&x);
    test_acc(&x);
    test_inside();
    GDR_CHECK(gdr_rma_ipc_wait(&x, -1) == GDR_RMA_OK && T.gd.marks_out == 0,
              "every lane waited: no mark held (%lu out)", T.gd.marks_out);
    gdr_rma_ipc_fini(&x);
    gdr_gpu_mem_free(&T.g, T.win);
    gdr_gpu_rma_device_fini(&T.gd);
    gdr_gpu_close(&T.g);
}

int main(int argc, char **argv)
{
    gpusim_run_modes(argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so", body);
    return gdr_unit_finish();
}
