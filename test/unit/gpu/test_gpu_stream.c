/* Streams on the simulated GPU, in both modes: copies in every direction, memset, order
 * across two streams through an event that follows a slow operation, stream memory
 * operations (a stream blocked on a word until the host writes it), cuCtxSynchronize
 * (which the tests use, not gdr) waiting for every stream, and refusals. */
#include "gpusim_modes.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_stream.h"

#define N 4096

static void pause_ms(int ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, NULL);
}

/* The host's store to a word a stream waits on (pinned memory: the GPU polls it). */
static void host_store(volatile uint64_t *word, uint64_t v)
{
    __atomic_store_n(word, v, __ATOMIC_RELEASE);
}

static void test_copies(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    unsigned char src[N], back[N];
    void *d1, *d2;
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char) (i * 7 + 1);
    memset(back, 0, sizeof(back));
    GDR_CHECK(gdr_gpu_mem_alloc(g, N, &d1) == 0 && gdr_gpu_mem_alloc(g, N, &d2) == 0,
              "two device buffers");
    GDR_CHECK(gdr_gpu_copy_async(g, s, d1, src, N) == 0 && gdr_gpu_copy_async(g, s, d2, d1, N) == 0
              && gdr_gpu_copy_async(g, s, back, d2, N) == 0, "queue host->device->device->host");
    GDR_CHECK(gdr_gpu_stream_sync(g, s) == 0 && memcmp(back, src, N) == 0,
              "after sync the host has the bytes back");
    GDR_CHECK(gdr_gpu_stream_query(g, s) == 1, "an idle stream queries as done");

    GDR_CHECK(gdr_gpu_memset_async(g, s, (char *) d1 + 100, 0xab, 50) == 0
              && gdr_gpu_copy_async(g, s, back, d1, N) == 0 && gdr_gpu_stream_sync(g, s) == 0
              && back[99] == src[99] && back[100] == 0xab && back[149] == 0xab
              && back[150] == src[150], "memset sets exactly its bytes");

    memset(back, 0, sizeof(back));
    GDR_CHECK(gdr_gpu_copy(g, back, d2, N) == 0 && memcmp(back, src, N) == 0,
              "a synchronous copy returns with the data in place");
    GDR_CHECK(gdr_gpu_copy_async(g, s, back, (char *) d1 + N - 8, 16) == -EINVAL
              && strstr(g->error, "cuMemcpyAsync failed (CUresult 1"),
              "a copy past the end of an allocation is refused (%s)", g->error);
    GDR_CHECK(gdr_gpu_mem_free(g, d1) == 0, "free one buffer");
    GDR_CHECK(gdr_gpu_copy_async(g, s, back, d1, 8) == -EINVAL,
              "a copy from freed device memory is refused");
    GDR_CHECK(gdr_gpu_mem_free(g, d2) == 0, "free the other");
}

/* Stream a waits for the host (the slow operation), then copies x to y and records e;
 * stream b waits for e, then copies y to z.  Nothing of b may run before a's copy. */
static void test_event_order(gdr_gpu_t *g, gdr_gpu_stream_t a, gdr_gpu_stream_t b)
{
    uint64_t *flag, vx = 42, vz = 0, zero = 0;
    void *x, *y, *z;
    gdr_gpu_event_t e;

    GDR_CHECK(gdr_gpu_host_alloc(g, sizeof(*flag), (void **) &flag) == 0, "a pinned flag");
    *flag = 0;
    GDR_CHECK(gdr_gpu_mem_alloc(g, 8, &x) == 0 && gdr_gpu_mem_alloc(g, 8, &y) == 0
              && gdr_gpu_mem_alloc(g, 8, &z) == 0 && gdr_gpu_copy(g, x, &vx, 8) == 0
              && gdr_gpu_copy(g, y, &zero, 8) == 0 && gdr_gpu_copy(g, z, &zero, 8) == 0,
              "x = 42, y = z = 0 on the device");
    GDR_CHECK(gdr_gpu_event_create(g, &e) == 0, "an event");
    GDR_CHECK(gdr_gpu_event_query(g, e) == 1, "an event never recorded is complete");
    GDR_CHECK(gdr_gpu_stream_wait_u64(g, a, flag, 1, GDR_GPU_WAIT_EQ) == 0
              && gdr_gpu_copy_async(g, a, y, x, 8) == 0 && gdr_gpu_event_record(g, e, a) == 0,
              "a: wait for the host, copy x to y, record e");
    GDR_CHECK(gdr_gpu_stream_wait_event(g, b, e) == 0 && gdr_gpu_copy_async(g, b, z, y, 8) == 0,
              "b: wait for e, copy y to z");
    pause_ms(50);
    GDR_CHECK(gdr_gpu_stream_query(g, a) == 0 && gdr_gpu_stream_query(g, b) == 0
              && gdr_gpu_event_query(g, e) == 0, "50 ms later both streams and e are pending");
    GDR_CHECK(gdr_gpu_copy(g, &vz, z, 8) == 0 && vz == 0,
              "z is still 0: b did not run ahead of the event");
    host_store(flag, 1);
    GDR_CHECK(gdr_gpu_stream_sync(g, b) == 0 && gdr_gpu_event_query(g, e) == 1,
              "after the host's store b completes, and so has e");
    GDR_CHECK(gdr_gpu_copy(g, &vz, z, 8) == 0 && vz == 42, "z = 42, through y (%llu)",
              (unsigned long long) vz);
    GDR_CHECK(gdr_gpu_event_sync(g, e) == 0 && gdr_gpu_event_destroy(g, e) == 0,
              "event sync and destroy");
    GDR_CHECK(gdr_gpu_mem_free(g, x) == 0 && gdr_gpu_mem_free(g, y) == 0
              && gdr_gpu_mem_free(g, z) == 0 && gdr_gpu_host_free(g, flag) == 0, "free");
}

static void test_memops(gdr_gpu_t *g, gdr_gpu_stream_t s)
{
    uint64_t *word = NULL, out = 0;
    void *dword, *reg_dev = NULL;
    uint64_t *reg = aligned_alloc(4096, 4096);

    GDR_CHECK(gdr_gpu_mem_alloc(g, 64, &dword) == 0 && gdr_gpu_host_register(g, reg, 4096,
                                                                              &reg_dev) == 0,
              "a device word and a registered host page");
    reg[0] = 0;
    /* wait on registered host memory through its device address, then write a device word */
    GDR_CHECK(gdr_gpu_stream_wait_u64(g, s, reg_dev, 5, GDR_GPU_WAIT_EQ) == 0
              && gdr_gpu_stream_write_u64(g, s, dword, 7) == 0,
              "queue: wait until the host word is 5, then write 7 to the device word");
    pause_ms(20);
    GDR_CHECK(gdr_gpu_stream_query(g, s) == 0, "the stream is blocked (NOT_READY)");
    host_store(&reg[0], 4);
    pause_ms(20);
    GDR_CHECK(gdr_gpu_stream_query(g, s) == 0, "4 is not 5: still blocked");
    host_store(&reg[0], 5);
    GDR_CHECK(gdr_gpu_stream_sync(g, s) == 0 && gdr_gpu_copy(g, &out, dword, 8) == 0 && out == 7,
              "the host writes 5: the stream runs on and writes 7 (%llu)",
              (unsigned long long) out);

    /* the device signals the host: a write to pinned memory */
    GDR_CHECK(gdr_gpu_host_alloc(g, 8, (void **) &word) == 0, "a pinned word");
    *word = 0;
    GDR_CHECK(gdr_gpu_stream_write_u64(g, s, word, 0xfeed) == 0 && gdr_gpu_stream_sync(g, s) == 0
              && *word == 0xfeed, "a stream's write lands in pinned host memory");

    /* the other conditions: GEQ is cyclic, AND any common bit, NOR a zero bit of both */
    static const struct { gdr_gpu_wait_cmp_t cmp; uint64_t value, blocks, releases; } c[] = {
        { GDR_GPU_WAIT_GEQ, UINT64_MAX - 1, UINT64_MAX - 5, 2 },  /* 2 is "after" max-1 */
        { GDR_GPU_WAIT_AND, 0x4, 0x3, 0x6 },
        { GDR_GPU_WAIT_NOR, ~(uint64_t) 0x1, ~(uint64_t) 0, 0x0 },
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        host_store(word, c[i].blocks);
        GDR_CHECK(gdr_gpu_stream_wait_u64(g, s, word, c[i].value, c[i].cmp) == 0,
                  "wait with condition %d", (int) c[i].cmp);
        pause_ms(10);
        int blocked = gdr_gpu_stream_query(g, s) == 0;
        host_store(word, c[i].releases);
        GDR_CHECK(blocked && gdr_gpu_stream_sync(g, s) == 0,
                  "condition %d: %#llx blocks, %#llx releases", (int) c[i].cmp,
                  (unsigned long long) c[i].blocks, (unsigned long long) c[i].releases);
    }

    GDR_CHECK(gdr_gpu_stream_wait_u64(g, s, (char *) dword + 4, 1, GDR_GPU_WAIT_EQ) == -EINVAL
              && strstr(g->error, "cuStreamWaitValue64 failed (CUresult 1"),
              "an unaligned word is refused (%s)", g->error);
    uint64_t pageable = 0;
    GDR_CHECK(gdr_gpu_stream_write_u64(g, s, &pageable, 1) == -EINVAL,
              "pageable host memory is refused (register it first)");
    GDR_CHECK(gdr_gpu_host_unregister(g, reg) == 0 && gdr_gpu_mem_free(g, dword) == 0
              && gdr_gpu_host_free(g, word) == 0, "free");
    free(reg);
}

/* A driver without stream memory operations: the feature is off, with the reason. */
static void test_memops_missing(const char *lib)
{
    gdr_gpu_t g;
    gdr_gpu_stream_t s;
    void *d;
    setenv("GDR_GPUSIM_HIDE", "cuStreamWriteValue64", 1);
    int rc = gdr_gpu_open(&g, lib, 0);
    unsetenv("GDR_GPUSIM_HIDE");
    GDR_CHECK(rc == 0 && !(g.features & GDR_GPU_MEMOPS), "a driver without"
              " cuStreamWriteValue64: GPU on, memops off");
    GDR_CHECK(gdr_gpu_stream_create(&g, &s) == 0 && gdr_gpu_mem_alloc(&g, 8, &d) == 0,
              "a stream and a word");
    GDR_CHECK(gdr_gpu_stream_write_u64(&g, s, d, 1) == -ENOTSUP
              && strstr(g.error, "memops off: the driver has no cuStreamWriteValue64"),
              "a write is refused with the reason (%s)", g.error);
    GDR_CHECK(gdr_gpu_mem_free(&g, d) == 0 && gdr_gpu_stream_destroy(&g, s) == 0, "clean up");
    gdr_gpu_close(&g);
}

static void *release_later(void *word)
{
    pause_ms(30);
    host_store(word, 1);
    return NULL;
}

/* cuCtxSynchronize returns once both streams are done: one blocked on a word that a
 * thread writes 30 ms later, then writing a second word. */
static void test_ctx_sync(gdr_gpu_t *g, gdr_gpu_stream_t a, gdr_gpu_stream_t b, const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    int (*ctx_sync)(void) = h != NULL ? (int (*)(void)) dlsym(h, "cuCtxSynchronize") : NULL;
    uint64_t *words = NULL;
    pthread_t t;
    GDR_CHECK(ctx_sync != NULL && gdr_gpu_host_alloc(g, 16, (void **) &words) == 0,
              "cuCtxSynchronize, and two pinned words");
    if (ctx_sync == NULL || words == NULL) {
        if (h != NULL)
            dlclose(h);
        return;
    }
    words[0] = words[1] = 0;
    GDR_CHECK(gdr_gpu_stream_wait_u64(g, a, &words[0], 1, GDR_GPU_WAIT_EQ) == 0
              && gdr_gpu_stream_write_u64(g, a, &words[1], 9) == 0
              && gdr_gpu_stream_write_u64(g, b, &words[1], 8) == 0
              && pthread_create(&t, NULL, release_later, &words[0]) == 0,
              "stream a: wait for word 0, then write 9 to word 1; stream b: write 8 there");
    GDR_CHECK(ctx_sync() == 0 && __atomic_load_n(&words[1], __ATOMIC_ACQUIRE) == 9,
              "cuCtxSynchronize returns after the blocked stream's write (%llu)",
              (unsigned long long) words[1]);
    pthread_join(t, NULL);
    GDR_CHECK(gdr_gpu_host_free(g, words) == 0, "free the words");
    dlclose(h);                 /* the reference RTLD_NOLOAD took */
}

static void body(const char *lib, const char *mode)
{
    gdr_gpu_t g;
    gdr_gpu_stream_t a, b;
    (void) mode;
    if (gdr_gpu_open(&g, lib, 0) != 0) {
        GDR_CHECK(0, "open the simulated GPU: %s", g.error);
        return;
    }
    GDR_CHECK(gdr_gpu_stream_create(&g, &a) == 0 && gdr_gpu_stream_create(&g, &b) == 0
              && a != b && a != NULL, "two streams");
    test_copies(&g, a);
    test_event_order(&g, a, b);
    test_memops(&g, b);
    test_ctx_sync(&g, a, b, lib);
    GDR_CHECK(gdr_gpu_stream_destroy(&g, a) == 0 && gdr_gpu_stream_destroy(&g, b) == 0,
              "destroy the streams");
    GDR_CHECK(gdr_gpu_stream_sync(&g, a) == -EBADF && strstr(g.error, "CUresult 400"),
              "a destroyed stream is an invalid handle (%s)", g.error);
    gdr_gpu_close(&g);
    test_memops_missing(lib);
}

int main(int argc, char **argv)
{
    gpusim_run_modes(argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so", body);
    return gdr_unit_finish();
}
