/* CUDA IPC on the simulated GPU, in both modes: a handle made here is opened by another
 * process (this program run again as a peer), which reads and writes through its mapping;
 * the handle carries the exporter's buffer id; a handle of freed memory no longer opens;
 * a process cannot open its own handle. */
#include "gpusim_modes.h"
#include <errno.h>
#include <stdint.h>
#include "gpu/gdr_gpu_ipc.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_stream.h"

#define SIZE (64 * 1024)
#define OFFSET 4096
#define SPAN 1024

static void to_hex(const void *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", ((const unsigned char *) p)[i]);
}

static int from_hex(const char *s, void *p, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        ((unsigned char *) p)[i] = (unsigned char) v;
    }
    return 0;
}

/* ---- the peer: another process on the same node ------------------------------------ */

static int peer(const char *lib, const char *hex, int expect, int write_byte)
{
    gdr_gpu_t g;
    gdr_gpu_ipc_handle_t h;
    gdr_gpu_mem_info_t info = { 0 };
    unsigned char buf[SPAN];
    void *q = NULL, *q2 = NULL;
    int read_ok = 0, write_rc = -1, close_rc = -1;

    if (from_hex(hex, &h, sizeof(h)) != 0 || gdr_gpu_open(&g, lib, 0) != 0) {
        printf("open=-1 error=setup\n");
        return 1;
    }
    int open_rc = gdr_gpu_ipc_open(&g, &h, &q);
    if (open_rc == 0) {
        gdr_gpu_mem_query(&g, q, &info);
        read_ok = gdr_gpu_copy(&g, buf, q, SPAN) == 0;
        for (int i = 0; i < SPAN; i++)
            read_ok &= buf[i] == expect;
        memset(buf, write_byte, SPAN);
        write_rc = gdr_gpu_copy(&g, q, buf, SPAN);
        int again = gdr_gpu_ipc_open(&g, &h, &q2);
        close_rc = again != 0 ? again : gdr_gpu_ipc_close(&g, q2);
        if (close_rc == 0)
            close_rc = gdr_gpu_ipc_close(&g, q);
    }
    printf("open=%d is_device=%d size=%zu base_ok=%d local_id=%llx read=%d write=%d same=%d"
           " close=%d error=%s\n", open_rc, info.is_device, info.size,
           info.base + h.offset == (uintptr_t) q, (unsigned long long) info.buffer_id, read_ok,
           write_rc, q2 == q, close_rc, open_rc ? g.error : "-");
    gdr_gpu_close(&g);
    return 0;
}

/* Runs the peer on h; its one line of results in out. */
static void run_peer(const char *lib, const gdr_gpu_ipc_handle_t *h, int expect, int write_byte,
                     char *out, size_t len)
{
    char hex[2 * sizeof(*h) + 1], e[8], w[8];
    int fds[2];
    to_hex(h, sizeof(*h), hex);
    snprintf(e, sizeof(e), "%d", expect);
    snprintf(w, sizeof(w), "%d", write_byte);
    out[0] = '\0';
    if (pipe(fds) != 0)
        return;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        execl("/proc/self/exe", "test_gpu_ipc", lib, "--peer", hex, e, w, (char *) NULL);
        _exit(127);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], out, len - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    waitpid(pid, NULL, 0);
}

static long field(const char *line, const char *key, int base)
{
    const char *p = strstr(line, key);
    return p ? strtol(p + strlen(key), NULL, base) : -999;
}

/* ---- the exporter ------------------------------------------------------------------ */

static void body(const char *lib, const char *mode)
{
    gdr_gpu_t g;
    gdr_gpu_ipc_handle_t h, host_h;
    gdr_gpu_mem_info_t info;
    gdr_gpu_stream_t s;
    unsigned char buf[SIZE];
    char line[1024];
    void *d, *mine;
    (void) mode;

    if (gdr_gpu_open(&g, lib, 0) != 0) {
        GDR_CHECK(0, "open the simulated GPU: %s", g.error);
        return;
    }
    GDR_CHECK(gdr_gpu_stream_create(&g, &s) == 0 && gdr_gpu_mem_alloc(&g, SIZE, &d) == 0
              && gdr_gpu_memset_async(&g, s, d, 0x11, SIZE) == 0 && gdr_gpu_stream_sync(&g, s) == 0,
              "64 KiB of device memory, all 0x11");
    GDR_CHECK(gdr_gpu_ipc_handle_get(&g, (char *) d + OFFSET, &h) == 0
              && gdr_gpu_mem_query(&g, d, &info) == 0, "a handle for a pointer inside it");
    GDR_CHECK(h.buffer_id == info.buffer_id && h.offset == OFFSET && h.size == SIZE,
              "the handle carries the buffer id, the offset and the allocation's size");
    GDR_CHECK(gdr_gpu_ipc_open(&g, &h, &mine) == -EBADF && strstr(g.error, "this very process"),
              "opening one's own handle fails, saying why (%s)", g.error);
    int local = 0;
    GDR_CHECK(gdr_gpu_ipc_handle_get(&g, &local, &host_h) == -EINVAL
              && strstr(g.error, "not memory from cuMemAlloc"), "host memory has no handle (%s)",
              g.error);

    run_peer(lib, &h, 0x11, 0x22, line, sizeof(line));
    printf("# peer: %s", line);
    GDR_CHECK(field(line, "open=", 10) == 0 && field(line, "is_device=", 10) == 1
              && field(line, "size=", 10) == SIZE && field(line, "base_ok=", 10) == 1,
              "another process opens it: device memory of the same size, at the offset");
    GDR_CHECK(field(line, "read=", 10) == 1, "... reads what this process wrote");
    GDR_CHECK(field(line, "write=", 10) == 0, "... writes through its mapping");
    GDR_CHECK(field(line, "same=", 10) == 1 && field(line, "close=", 10) == 0,
              "... a second open gives the same mapping; two closes");
    long long id = strtoll(strstr(line, "local_id=") ? strstr(line, "local_id=") + 9 : "0", NULL,
                           16);
    GDR_CHECK(id != 0 && (uint64_t) id != h.buffer_id,
              "... where the mapping has a buffer id of that process (ids are per process:"
              " the exporter's travels in the handle)");
    GDR_CHECK(gdr_gpu_copy(&g, buf, d, SIZE) == 0 && buf[OFFSET - 1] == 0x11
              && buf[OFFSET] == 0x22 && buf[OFFSET + SPAN - 1] == 0x22 && buf[OFFSET + SPAN] == 0x11,
              "this process reads the peer's bytes, exactly where it wrote them");

    GDR_CHECK(gdr_gpu_mem_free(&g, d) == 0 && gdr_gpu_mem_alloc(&g, SIZE, &d) == 0,
              "free the memory and allocate again");
    run_peer(lib, &h, 0x11, 0x33, line, sizeof(line));
    printf("# peer: %s", line);
    GDR_CHECK(field(line, "open=", 10) == -EBADF && strstr(line, "CUresult 400"),
              "the old handle no longer opens (INVALID_HANDLE), even at a recycled address");
    GDR_CHECK(gdr_gpu_mem_free(&g, d) == 0 && gdr_gpu_stream_destroy(&g, s) == 0, "clean up");
    gdr_gpu_close(&g);
}

int main(int argc, char **argv)
{
    const char *lib = argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so";
    if (argc == 6 && strcmp(argv[2], "--peer") == 0)
        return peer(lib, argv[3], atoi(argv[4]), atoi(argv[5]));
    gpusim_run_modes(lib, body);
    return gdr_unit_finish();
}
