/* Kernels on the simulated GPU, in both modes: the accumulate kernel launched through
 * gdr_gpu_acc_launch on device memory (values read back by copies), the signal add and
 * wait (every comparison), a
 * kernel made ready by loading its image on demand, parameters copied at
 * the launch, pinned host memory as a kernel operand, unknown kernels, the piece copy
 * (every unit width, pinned and device ends, the most pieces, refusals), and the sticky
 * fault of a kernel that touches memory the device cannot reach. */
#include "gpusim_modes.h"
#include <errno.h>
#include <stdint.h>
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_module.h"
#include "gdr/gdr_rma_signal.h"
#include <time.h>

#define N 3000                  /* more than one block of 256 */

static void test_grid(void)
{
    GDR_CHECK(gdr_gpu_acc_grid(0) == 0 && gdr_gpu_acc_grid(1) == 1 && gdr_gpu_acc_grid(256) == 1
              && gdr_gpu_acc_grid(257) == 2 && gdr_gpu_acc_grid(256 * 1024) == 1024
              && gdr_gpu_acc_grid(UINT64_MAX) == 1024,
              "grid: a block per 256 elements, at most 1024 blocks (grid-stride beyond)");
}

static int64_t host_t[N], host_o[N], host_r[N];

static void test_accumulate(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    void *t, *o, *r;
    int ok = 1;
    for (int i = 0; i < N; i++) {
        host_t[i] = i;
        host_o[i] = 2 * i;
    }
    GDR_CHECK(gdr_gpu_mem_alloc(g, sizeof(host_t), &t) == 0
              && gdr_gpu_mem_alloc(g, sizeof(host_o), &o) == 0
              && gdr_gpu_mem_alloc(g, sizeof(host_r), &r) == 0
              && gdr_gpu_copy(g, t, host_t, sizeof(host_t)) == 0
              && gdr_gpu_copy(g, o, host_o, sizeof(host_o)) == 0,
              "target i, origin 2i in device memory");
    gdr_gpu_acc_args_t a = { t, o, r, NULL, N, GDR_GPU_OP_SUM, GDR_GPU_T_INT64 };
    GDR_CHECK(gdr_gpu_acc_launch(g, s, &a) == 0 && gdr_gpu_stream_sync(g, s) == 0,
              "SUM launched and completed");
    GDR_CHECK(gdr_gpu_copy(g, host_t, t, sizeof(host_t)) == 0
              && gdr_gpu_copy(g, host_r, r, sizeof(host_r)) == 0, "copy target and result back");
    for (int i = 0; i < N; i++)
        ok &= host_t[i] == 3 * i && host_r[i] == i;
    GDR_CHECK(ok, "SUM: target 3i, result the old target i (t[%d]=%lld r[%d]=%lld)", N - 1,
              (long long) host_t[N - 1], N - 1, (long long) host_r[N - 1]);

    for (int i = 0; i < N; i++)
        host_o[i] = -i;
    a.op = GDR_GPU_OP_REPLACE;
    GDR_CHECK(gdr_gpu_copy(g, o, host_o, sizeof(host_o)) == 0 && gdr_gpu_acc_launch(g, s, &a) == 0
              && gdr_gpu_stream_sync(g, s) == 0 && gdr_gpu_copy(g, host_t, t, sizeof(host_t)) == 0
              && gdr_gpu_copy(g, host_r, r, sizeof(host_r)) == 0, "REPLACE launched, copied back");
    ok = 1;
    for (int i = 0; i < N; i++)
        ok &= host_t[i] == -i && host_r[i] == 3 * i;
    GDR_CHECK(ok, "REPLACE: target -i, result 3i");

    a.count = 0;
    GDR_CHECK(gdr_gpu_acc_launch(g, s, &a) == 0 && gdr_gpu_stream_query(g, s) == 1,
              "count 0 queues nothing");
    GDR_CHECK(gdr_gpu_mem_free(g, t) == 0 && gdr_gpu_mem_free(g, o) == 0
              && gdr_gpu_mem_free(g, r) == 0, "free");
}

/* The driver copies kernel parameters at the launch: the caller's may change at once. */
static void test_params_copied(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    uint64_t *flag;
    int64_t one = 1, five = 5, back = 0;
    void *t, *o1, *o5;
    GDR_CHECK(gdr_gpu_host_alloc(g, 8, (void **) &flag) == 0 && gdr_gpu_mem_alloc(g, 8, &t) == 0
              && gdr_gpu_mem_alloc(g, 8, &o1) == 0 && gdr_gpu_mem_alloc(g, 8, &o5) == 0
              && gdr_gpu_copy(g, o1, &one, 8) == 0 && gdr_gpu_copy(g, o5, &five, 8) == 0
              && gdr_gpu_copy(g, t, &back, 8) == 0, "a pinned flag, t = 0, o1 = 1, o5 = 5");
    *flag = 0;
    gdr_gpu_acc_args_t a = { t, o1, NULL, NULL, 1, GDR_GPU_OP_REPLACE, GDR_GPU_T_INT64 };
    void *params[] = { &a };
    GDR_CHECK(gdr_gpu_stream_wait_u64(g, s, flag, 1, GDR_GPU_WAIT_EQ) == 0
              && gdr_gpu_launch(g, s, GDR_GPU_ACC_KERNEL, 1, 1, params) == 0,
              "a launch queued behind a wait on the host");
    a.origin = o5;              /* too late: the launch has its own copy */
    a.op = GDR_GPU_OP_SUM;
    __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
    GDR_CHECK(gdr_gpu_stream_sync(g, s) == 0 && gdr_gpu_copy(g, &back, t, 8) == 0 && back == 1,
              "the kernel ran with the parameters of its launch (t = %lld)", (long long) back);
    GDR_CHECK(gdr_gpu_launch(g, s, GDR_GPU_ACC_KERNEL, 1, 1, NULL) == -EINVAL,
              "a launch without its parameter is refused (%s)", g->error);
    GDR_CHECK(gdr_gpu_host_free(g, flag) == 0 && gdr_gpu_mem_free(g, t) == 0
              && gdr_gpu_mem_free(g, o1) == 0 && gdr_gpu_mem_free(g, o5) == 0, "free");
}

static void test_pinned_operand(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    int64_t *t, seven = 7;
    void *o;
    GDR_CHECK(gdr_gpu_host_alloc(g, 4 * sizeof(*t), (void **) &t) == 0
              && gdr_gpu_mem_alloc(g, 8, &o) == 0 && gdr_gpu_copy(g, o, &seven, 8) == 0,
              "a pinned host target, a device origin");
    t[0] = 35;
    gdr_gpu_acc_args_t a = { t, o, NULL, NULL, 1, GDR_GPU_OP_SUM, GDR_GPU_T_INT64 };
    GDR_CHECK(gdr_gpu_acc_launch(g, s, &a) == 0 && gdr_gpu_stream_sync(g, s) == 0 && t[0] == 42,
              "a kernel updates pinned host memory (%lld)", (long long) t[0]);
    GDR_CHECK(gdr_gpu_host_free(g, t) == 0 && gdr_gpu_mem_free(g, o) == 0, "free");
}

/* Last: a fault loses the context, as on a GPU. */
static void test_fault(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    int64_t *pageable = calloc(4, sizeof(*pageable));
    void *o, *d;
    GDR_CHECK(gdr_gpu_mem_alloc(g, 8, &o) == 0, "a device origin");
    gdr_gpu_acc_args_t a = { pageable, o, NULL, NULL, 1, GDR_GPU_OP_SUM, GDR_GPU_T_INT64 };
    GDR_CHECK(gdr_gpu_acc_launch(g, s, &a) == 0, "a kernel on pageable host memory launches");
    GDR_CHECK(gdr_gpu_stream_sync(g, s) == -EFAULT && strstr(g->error, "CUDA_ERROR_ILLEGAL_ADDRESS")
              && strstr(g->error, "unusable"), "... and faults: ILLEGAL_ADDRESS (%s)", g->error);
    GDR_CHECK(pageable[0] == 0, "the host memory is untouched");
    GDR_CHECK(gdr_gpu_mem_alloc(g, 8, &d) == -EFAULT, "the error is sticky: later calls fail");
    free(pageable);
}

/* The signal add: atomic adds from two streams on one device word, pinned host memory as
 * the word, and the refusals. */
static void test_signal_add(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    uint64_t *word, *pinned, back = 0;
    gdr_gpu_stream_t s2;
    GDR_CHECK(gdr_gpu_mem_alloc(g, 16, (void **) &word) == 0 && gdr_gpu_stream_create(g, &s2) == 0
              && gdr_gpu_copy(g, word, &back, 8) == 0, "a device word, zeroed; a second stream");
    int ok = 1;
    for (uint64_t i = 1; i <= 100; i++)
        ok &= gdr_gpu_signal_add_launch(g, i % 2 ? s : s2, word, i) == 0;
    GDR_CHECK(ok && gdr_gpu_stream_sync(g, s) == 0 && gdr_gpu_stream_sync(g, s2) == 0
              && gdr_gpu_copy(g, &back, word, 8) == 0 && back == 5050,
              "100 adds of 1..100 from two streams: 5050 (got %llu)", (unsigned long long) back);
    GDR_CHECK(gdr_gpu_host_alloc(g, 8, (void **) &pinned) == 0, "a pinned host word");
    *pinned = 40;
    GDR_CHECK(gdr_gpu_signal_add_launch(g, s, pinned, 2) == 0 && gdr_gpu_stream_sync(g, s) == 0
              && *pinned == 42, "an add on pinned host memory: 42 (got %llu)",
              (unsigned long long) *pinned);
    GDR_CHECK(gdr_gpu_signal_add_launch(g, s, (uint64_t *) ((char *) word + 4), 1) == -EINVAL
              && strstr(g->error, "not 8-byte aligned"), "a misaligned word: -EINVAL (%s)",
              g->error);
    GDR_CHECK(gdr_gpu_host_free(g, pinned) == 0 && gdr_gpu_mem_free(g, word) == 0
              && gdr_gpu_stream_destroy(g, s2) == 0, "free");
}

/* The signal wait, each comparison: the stream holds until the host makes the word meet
 * it (the add queued behind it shows whether the stream went on). */
static void test_signal_wait(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    static const struct {
        int cmp;
        uint64_t not_met, met;
        const char *name;
    } cases[] = {
        { GDR_CMP_EQ, 6, 7, "EQ" }, { GDR_CMP_NE, 7, 8, "NE" }, { GDR_CMP_GT, 7, 8, "GT" },
        { GDR_CMP_GE, 6, 7, "GE" }, { GDR_CMP_LT, 7, 6, "LT" }, { GDR_CMP_LE, 8, 7, "LE" },
    };
    uint64_t *word, *after;
    GDR_CHECK(gdr_gpu_host_alloc(g, 8, (void **) &word) == 0
              && gdr_gpu_host_alloc(g, 8, (void **) &after) == 0, "two pinned words");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        __atomic_store_n(word, cases[i].not_met, __ATOMIC_RELEASE);
        *after = 0;
        int rc = gdr_gpu_signal_wait_launch(g, s, word, 7, cases[i].cmp);
        rc = rc ? rc : gdr_gpu_signal_add_launch(g, s, after, 1);
        struct timespec pause = { 0, 20 * 1000 * 1000 };
        nanosleep(&pause, NULL);
        int held = gdr_gpu_stream_query(g, s) == 0 && __atomic_load_n(after, __ATOMIC_ACQUIRE) == 0;
        __atomic_store_n(word, cases[i].met, __ATOMIC_RELEASE);
        GDR_CHECK(rc == 0 && held && gdr_gpu_stream_sync(g, s) == 0 && *after == 1,
                  "wait %s 7: held at %llu, released at %llu (rc %d, %s)", cases[i].name,
                  (unsigned long long) cases[i].not_met, (unsigned long long) cases[i].met, rc,
                  rc ? g->error : "");
    }
    GDR_CHECK(gdr_gpu_signal_wait_launch(g, s, word, 7, 99) == -EINVAL
              && strstr(g->error, "comparison 99"), "an unknown comparison: -EINVAL (%s)",
              g->error);
    GDR_CHECK(gdr_gpu_host_free(g, word) == 0 && gdr_gpu_host_free(g, after) == 0, "free");
}

/* The piece copy: pieces of every alignment (16-, 8-, 4-byte units and bytes) between
 * device memory and pinned host memory in one launch, longer than one block's units,
 * nothing outside the pieces written; the most pieces; refusals. */
static void test_copy_pieces(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    enum { BYTES = 64 * 1024 };
    unsigned char *dev, *pin, *want = malloc(BYTES), *back = malloc(BYTES);
    GDR_CHECK(gdr_gpu_mem_alloc(g, BYTES, (void **) &dev) == 0
              && gdr_gpu_host_alloc(g, BYTES, (void **) &pin) == 0 && want && back,
              "device and pinned buffers");
    for (size_t i = 0; i < BYTES; i++)
        pin[i] = (unsigned char) (i * 7 + 1);
    memset(want, 0xee, BYTES);
    GDR_CHECK(gdr_gpu_copy(g, dev, want, BYTES) == 0, "the device buffer filled");
    /* pinned -> device: 16-byte units over several blocks, 8, 4 and 1; device -> device */
    gdr_gpu_copy_piece_t p[5] = {
        {(uint64_t) (uintptr_t) dev, (uint64_t) (uintptr_t) pin, 16 * 300},
        {(uint64_t) (uintptr_t) (dev + 8200), (uint64_t) (uintptr_t) (pin + 8), 8 * 33},
        {(uint64_t) (uintptr_t) (dev + 9004), (uint64_t) (uintptr_t) (pin + 12), 4 * 5},
        {(uint64_t) (uintptr_t) (dev + 10001), (uint64_t) (uintptr_t) (pin + 3), 77},
        {(uint64_t) (uintptr_t) (dev + 12000), (uint64_t) (uintptr_t) (pin + 100), 0},
    };
    size_t spans[4][3] = { {0, 0, 4800}, {8200, 8, 264}, {9004, 12, 20}, {10001, 3, 77} };
    for (int i = 0; i < 4; i++)
        memcpy(want + spans[i][0], pin + spans[i][1], spans[i][2]);
    GDR_CHECK(gdr_gpu_copy_unit(&p[0]) == 16 && gdr_gpu_copy_unit(&p[1]) == 8
              && gdr_gpu_copy_unit(&p[2]) == 4 && gdr_gpu_copy_unit(&p[3]) == 1,
              "unit widths: 16, 8, 4 and 1 bytes by alignment");
    int rc = gdr_gpu_copy_pieces_launch(g, s, p, 5);
    GDR_CHECK(rc == 0 && gdr_gpu_stream_sync(g, s) == 0 && gdr_gpu_copy(g, back, dev, BYTES) == 0
              && memcmp(back, want, BYTES) == 0, "pinned to device, four widths and an empty "
              "piece in one launch: the pieces copied, every other byte untouched (%s)",
              rc ? g->error : "");
    /* device -> pinned and device -> device, 64 pieces */
    gdr_gpu_copy_piece_t many[GDR_GPU_COPY_PIECES_MAX];
    memset(pin + 32768, 0, 16384);
    for (int i = 0; i < GDR_GPU_COPY_PIECES_MAX; i++)
        many[i] = (gdr_gpu_copy_piece_t) {(uint64_t) (uintptr_t) (pin + 32768 + 200 * i),
                                          (uint64_t) (uintptr_t) (dev + 100 * i), 100};
    many[5].dst = (uint64_t) (uintptr_t) (dev + 40000);
    rc = gdr_gpu_copy_pieces_launch(g, s, many, GDR_GPU_COPY_PIECES_MAX);
    int ok = rc == 0 && gdr_gpu_stream_sync(g, s) == 0;
    for (int i = 0; ok && i < GDR_GPU_COPY_PIECES_MAX; i++)
        ok = i == 5 || (memcmp(pin + 32768 + 200 * i, want + 100 * i, 100) == 0
                        && pin[32768 + 200 * i + 100] == 0);
    ok = ok && gdr_gpu_copy(g, back, dev + 40000, 100) == 0 && memcmp(back, want + 500, 100) == 0
        && pin[32768 + 1000] == 0;
    GDR_CHECK(ok, "64 pieces in one launch, device to pinned and one device to device: each "
              "copied, the gaps untouched (%s)", rc ? g->error : "");
    GDR_CHECK(gdr_gpu_copy_pieces_launch(g, s, many, 0) == -EINVAL
              && gdr_gpu_copy_pieces_launch(g, s, many, GDR_GPU_COPY_PIECES_MAX + 1) == -EINVAL
              && strstr(g->error, "1 to 64"), "0 or 65 pieces: -EINVAL (%s)", g->error);
    many[0].src = 0;
    GDR_CHECK(gdr_gpu_copy_pieces_launch(g, s, many, 1) == -EINVAL
              && strstr(g->error, "NULL"), "a NULL address: -EINVAL (%s)", g->error);
    GDR_CHECK(gdr_gpu_mem_free(g, dev) == 0 && gdr_gpu_host_free(g, pin) == 0, "free");
    free(want);
    free(back);
}

static void body(const char *lib, const char *mode)
{
    gdr_gpu_t g;
    gdr_gpu_stream_t s;
    static const char empty[1] = "";
    (void) mode;
    if (gdr_gpu_open(&g, lib, 0) != 0 || gdr_gpu_stream_create(&g, &s) != 0) {
        GDR_CHECK(0, "open the simulated GPU: %s", g.error);
        return;
    }
    gdr_gpu_acc_args_t a = { NULL, NULL, NULL, NULL, 1, GDR_GPU_OP_SUM, GDR_GPU_T_INT64 };
    GDR_CHECK(gdr_gpu_acc_launch(&g, s, &a) == -ENOENT
              && strstr(g.error, "gdr_gpu_acc_kernel is in none of the 0 loaded kernel images"
                        " (gdr_gpu_module_load)"), "no image loaded: -ENOENT (%s)", g.error);
    GDR_CHECK(gdr_gpu_module_load(&g, empty, 0) == 0, "load an (empty) image: the simulator"
              " takes any bytes");
    GDR_CHECK(gdr_gpu_launch(&g, s, "gdr_no_such_kernel", 1, 1, NULL) == -ENOENT
              && strstr(g.error, "gdr_no_such_kernel is in none of the 1 loaded"),
              "an unknown kernel: -ENOENT naming it (%s)", g.error);
    int loaded = g.n_modules;
    GDR_CHECK(gdr_gpu_kernel_ready(&g, GDR_GPU_SIGNAL_ADD_KERNEL, empty, 0) == 0
              && g.n_modules == loaded, "a kernel of a loaded image is ready: nothing loaded");
    GDR_CHECK(gdr_gpu_kernel_ready(&g, "gdr_no_such_kernel", empty, 0) == -ENOENT
              && strstr(g.error, "gdr_no_such_kernel is not in gdr's kernel image")
              && g.n_modules == loaded + 1, "a kernel in no image: loads it, then -ENOENT (%s)",
              g.error);
    /* a driver whose image lacks one kernel (the simulator's GDR_GPUSIM_HIDE; before the
     * kernel is looked up once, as found kernels are kept): callers with a fallback (the
     * same-node copy path) see -ENOENT naming it */
    setenv("GDR_GPUSIM_HIDE", GDR_GPU_COPY_KERNEL, 1);
    GDR_CHECK(gdr_gpu_kernel_ready(&g, GDR_GPU_COPY_KERNEL, empty, 0) == -ENOENT
              && strstr(g.error, GDR_GPU_COPY_KERNEL " is not in gdr's kernel image")
              && gdr_gpu_kernel_ready(&g, GDR_GPU_ACC_KERNEL, empty, 0) == 0,
              "a kernel the driver hides: -ENOENT naming it, the others ready (%s)", g.error);
    unsetenv("GDR_GPUSIM_HIDE");
    GDR_CHECK(gdr_gpu_kernel_ready(&g, GDR_GPU_COPY_KERNEL, empty, 0) == 0,
              "the same kernel once shown again: ready (%s)", g.error);
    static const char *const gdr_kernels[] = {
        GDR_GPU_ACC_KERNEL, GDR_GPU_SIGNAL_ADD_KERNEL, GDR_GPU_SIGNAL_WAIT_KERNEL,
        GDR_GPU_COPY_KERNEL
    };
    loaded = g.n_modules;
    GDR_CHECK(gdr_gpu_kernels_load_now(&g, gdr_kernels, 4, empty, 0) == 0
              && g.n_modules == loaded, "gdr's four kernels loaded onto the device now"
              " (cuFuncLoad on each; their image is in already): %s", g.error);
    static const char *const unknown[] = { GDR_GPU_ACC_KERNEL, "gdr_no_such_kernel" };
    GDR_CHECK(gdr_gpu_kernels_load_now(&g, unknown, 2, empty, 0) == -ENOENT
              && strstr(g.error, "gdr_no_such_kernel"), "a kernel no image has: -ENOENT"
              " naming it (%s)", g.error);
    test_accumulate(&g, s);
    test_signal_add(&g, s);
    test_signal_wait(&g, s);
    test_copy_pieces(&g, s);
    test_params_copied(&g, s);
    test_pinned_operand(&g, s);
    test_fault(&g, s);
    gdr_gpu_close(&g);
}

int main(int argc, char **argv)
{
    test_grid();
    gpusim_run_modes(argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so", body);
    return gdr_unit_finish();
}
