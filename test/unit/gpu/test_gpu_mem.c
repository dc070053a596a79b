/* The GPU layer's context and memory, on the simulated GPU in both modes: opening, what a
 * pointer is (device, pinned, registered, plain host), buffer ids across free and
 * allocate, threads without a bound context, dmabuf refused with its reason, and the host
 * never touching device memory (strict mode: a child that tries dies of SIGSEGV). */
#include "gpusim_modes.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_stream.h"

static void test_open(const char *lib)
{
    gdr_gpu_t g;
    char line[512];

    GDR_CHECK(gdr_gpu_open(&g, "libgdr-no-such-driver.so.1", 0) == -ENODEV && !g.on
              && strstr(g.error, "GPU support off") && strstr(g.error, "not found"),
              "open without a driver: -ENODEV, off, with the reason (%s)", g.error);
    void *d = &g;
    gdr_gpu_stream_t s;
    gdr_gpu_mem_info_t info;
    GDR_CHECK(gdr_gpu_mem_alloc(&g, 8, &d) == -ENODEV && d == NULL
              && gdr_gpu_stream_create(&g, &s) == -ENODEV && gdr_gpu_bind_thread(&g) == -ENODEV
              && strstr(g.error, "not found"), "a context that is off refuses calls with -ENODEV,"
              " keeping the reason");
    GDR_CHECK(gdr_gpu_mem_query(&g, &s, &info) == 0 && !info.is_device && info.device == -1,
              "... and its pointer queries say host memory");
    gdr_gpu_close(&g);
    GDR_CHECK(gdr_gpu_copy(&g, &info, &s, 1) == -ENODEV && strstr(g.error, "GPU support is off"),
              "a closed context refuses calls too (%s)", g.error);
    GDR_CHECK(gdr_gpu_open(&g, lib, 3) == -ENODEV && strstr(g.error, "device 3 does not exist"),
              "open of a device that does not exist: -ENODEV (%s)", g.error);
    gdr_gpu_close(&g);
    GDR_CHECK(gdr_gpu_open(&g, lib, GDR_GPU_DEVICE_CURRENT) == 0 && g.on && g.ordinal == 0,
              "open the current device (none current: device 0)");
    GDR_CHECK(g.cc_major == 9 && g.cc_minor == 0 && strcmp(g.busid, "0000:11:00.0") == 0,
              "device facts: sm_%d%d at %s", g.cc_major, g.cc_minor, g.busid);
    GDR_CHECK(g.features == (GDR_GPU_MEMOPS | GDR_GPU_IPC | GDR_GPU_KERNELS),
              "features: memops, ipc, kernels; no dmabuf (0x%x)", g.features);
    gdr_gpu_describe(&g, line, sizeof(line));
    GDR_CHECK(strstr(line, "GPU 0 (0000:11:00.0, sm_90, driver 13.0): memops ipc kernels;")
              && strstr(line, "dmabuf off: the device reports DMA_BUF_SUPPORTED 0"),
              "one log line says what is on and why dmabuf is off (%s)", line);
    gdr_gpu_close(&g);
    GDR_CHECK(!g.on && g.drv.handle == NULL, "close unloads the driver");
}

static void check_plain_host(gdr_gpu_t *g, const void *p, const char *what)
{
    gdr_gpu_mem_info_t info;
    int rc = gdr_gpu_mem_query(g, p, &info);
    GDR_CHECK(rc == 0 && !info.is_device && !info.is_pinned_host && info.buffer_id == 0
              && info.device == -1 && info.base == 0 && info.size == 0,
              "%s: host memory CUDA does not know, not an error", what);
}

static void test_query(gdr_gpu_t *g)
{
    gdr_gpu_mem_info_t info, again;
    void *d, *d2, *h, *dev_p = NULL;
    int stack = 0;

    GDR_CHECK(gdr_gpu_mem_alloc(g, 1000, &d) == 0 && d != NULL, "device allocation");
    GDR_CHECK(gdr_gpu_mem_query(g, (char *) d + 10, &info) == 0 && info.is_device
              && !info.is_managed && !info.is_pinned_host && info.device == 0
              && info.buffer_id != 0 && info.base == (uintptr_t) d && info.size == 1000,
              "device memory: device 0, buffer id %llx, range [base, +1000)",
              (unsigned long long) info.buffer_id);

    GDR_CHECK(gdr_gpu_mem_free(g, d) == 0 && gdr_gpu_mem_alloc(g, 1000, &d2) == 0,
              "free, then allocate the same size");
    GDR_CHECK(gdr_gpu_mem_query(g, d2, &again) == 0 && d2 == d
              && again.buffer_id != info.buffer_id,
              "the same address comes back with a new buffer id (%llx then %llx)",
              (unsigned long long) info.buffer_id, (unsigned long long) again.buffer_id);

    GDR_CHECK(gdr_gpu_host_alloc(g, 5000, &h) == 0 && gdr_gpu_mem_query(g, h, &info) == 0
              && !info.is_device && info.is_pinned_host && info.buffer_id != 0
              && info.base == (uintptr_t) h && info.size == 5000 && info.device == -1,
              "pinned host memory: host, known to CUDA, with a buffer id");
    memset(h, 0x5a, 5000);
    GDR_CHECK(((unsigned char *) h)[4999] == 0x5a, "pinned host memory is host memory");

    char *buf = malloc(8192);
    GDR_CHECK(gdr_gpu_host_register(g, buf, 8192, &dev_p) == 0 && dev_p == buf,
              "register malloc'd memory; its device address is the same (unified addressing)");
    GDR_CHECK(gdr_gpu_mem_query(g, buf + 100, &info) == 0 && !info.is_device
              && info.is_pinned_host && info.base == (uintptr_t) buf && info.size == 8192,
              "registered memory: host, known to CUDA");
    GDR_CHECK(gdr_gpu_host_register(g, buf + 4096, 100, NULL) == -EINVAL
              && strstr(g->error, "cuMemHostRegister failed (CUresult 712"),
              "registering an overlapping range again fails (%s)", g->error);
    GDR_CHECK(gdr_gpu_host_unregister(g, buf) == 0, "unregister");
    check_plain_host(g, buf, "unregistered malloc memory");
    GDR_CHECK(gdr_gpu_host_unregister(g, buf) == -EINVAL && strstr(g->error, "713"),
              "unregistering twice fails (%s)", g->error);
    check_plain_host(g, &stack, "stack memory");
    free(buf);

    GDR_CHECK(gdr_gpu_mem_free(g, &stack) == -EINVAL
              && strstr(g->error, "cuMemFree failed (CUresult 1 CUDA_ERROR_INVALID_VALUE"),
              "freeing host memory as device memory fails clearly (%s)", g->error);
    GDR_CHECK(gdr_gpu_mem_alloc(g, 0, &d) == -EINVAL && d == NULL,
              "a zero-byte device allocation fails (%s)", g->error);
    GDR_CHECK(gdr_gpu_host_free(g, h) == 0 && gdr_gpu_mem_free(g, d2) == 0, "free the rest");
}

static void test_dmabuf(gdr_gpu_t *g)
{
    void *d;
    int fd = 7;
    uint64_t off = 9;
    GDR_CHECK(gdr_gpu_mem_alloc(g, 1 << 16, &d) == 0, "allocate 64 KiB");
    GDR_CHECK(gdr_gpu_dmabuf_export(g, d, 1 << 16, &fd, &off) == -ENOTSUP && fd == -1
              && strstr(g->error, "dmabuf export is not supported here")
              && strstr(g->error, "DMA_BUF_SUPPORTED 0"),
              "dmabuf export refused with the reason (%s)", g->error);
    GDR_CHECK(g->drv.fn.cuMemGetHandleForAddressRange(&fd, (uintptr_t) d, 1 << 16,
                                                      GDR_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                                      0) == GDR_CUDA_ERROR_NOT_SUPPORTED,
              "the driver itself answers CUDA_ERROR_NOT_SUPPORTED");
    GDR_CHECK(gdr_gpu_mem_free(g, d) == 0, "free it");
}

struct thread_arg {
    gdr_gpu_t *g;
    int unbound_rc, bound_rc;
    char unbound_error[GDR_GPU_ERROR_LEN];
};

static void *other_thread(void *p)
{
    struct thread_arg *a = p;
    void *d = NULL;
    a->unbound_rc = gdr_gpu_mem_alloc(a->g, 64, &d);
    snprintf(a->unbound_error, sizeof(a->unbound_error), "%s", a->g->error);
    a->bound_rc = gdr_gpu_bind_thread(a->g);
    if (a->bound_rc == 0)
        a->bound_rc = gdr_gpu_mem_alloc(a->g, 64, &d);
    if (a->bound_rc == 0)
        a->bound_rc = gdr_gpu_mem_free(a->g, d);
    return NULL;
}

static void test_threads(gdr_gpu_t *g)
{
    struct thread_arg a = { .g = g };
    pthread_t t;
    pthread_create(&t, NULL, other_thread, &a);
    pthread_join(t, NULL);
    GDR_CHECK(a.unbound_rc == -EBADF && strstr(a.unbound_error, "gdr_gpu_bind_thread"),
              "another thread without the context bound: refused, told to bind (%s)",
              a.unbound_error);
    GDR_CHECK(a.bound_rc == 0, "after gdr_gpu_bind_thread it allocates and frees");
}

struct deref_arg {
    volatile const uint64_t *p;
    uint64_t expect;
};

static void deref(void *arg)
{
    struct deref_arg *a = arg;
    _exit(*a->p == a->expect ? 0 : 3);  /* the host reads device memory */
}

static void test_host_dereference(gdr_gpu_t *g, const char *mode)
{
    uint64_t v = 0x1122334455667788ull;
    void *d;
    GDR_CHECK(gdr_gpu_mem_alloc(g, 4096, &d) == 0 && gdr_gpu_copy(g, d, &v, sizeof(v)) == 0,
              "a device word written by a copy");
    struct deref_arg a = { d, v };
    int status = gpusim_run_child(deref, &a);
    if (strcmp(mode, "strict") == 0)
        GDR_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
                  "strict: a host dereference of device memory dies of SIGSEGV (status 0x%x)",
                  status);
    else
        GDR_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "host-visible: the host reads device memory (status 0x%x)", status);
    GDR_CHECK(gdr_gpu_mem_free(g, d) == 0, "free it");
}

static void body(const char *lib, const char *mode)
{
    gdr_gpu_t g;
    test_open(lib);
    if (gdr_gpu_open(&g, lib, 0) != 0) {
        GDR_CHECK(0, "open the simulated GPU: %s", g.error);
        return;
    }
    test_query(&g);
    test_dmabuf(&g);
    test_threads(&g);
    test_host_dereference(&g, mode);
    gdr_gpu_close(&g);
}

int main(int argc, char **argv)
{
    /* the refusal paths, also on a host with /dev/udmabuf (dmabuf export is tested over
     * Soft-RoCE, where the guests have it: maint/check-rxe's GPUDirect dmabuf run) */
    setenv("GDR_GPUSIM_DMABUF", "0", 1);
    gpusim_run_modes(argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so", body);
    return gdr_unit_finish();
}
