/* stage_copy: the staged protocol's copy step against one cuMemcpy of the whole buffer.
 * The staged protocol (src/netmod/gdr_rma_staged.c) moves device data through pinned
 * host slots of MPIR_CVAR_CH4_GDR_STAGE_CHUNK bytes, queued as async copies on gdr's
 * internal stream; this measures those chunked copies alone (no NIC), device to host and
 * host to device, next to a single synchronous copy of the same bytes, in one process.
 *
 *   stage_copy [-d DRIVER] [-c CHUNK] [-s SLOTS] [-m MAX_BYTES]
 *
 * DRIVER: the CUDA driver gdr's GPU layer loads (default libcuda.so.1; the simulated GPU,
 * test/gpusim, for a dry run).  CHUNK and SLOTS default to the CVARs' defaults (512 KiB,
 * 8).  Sizes 1 MiB .. MAX_BYTES (default 64 MiB).  CSV on stdout, bench/README.md columns:
 *   copy_d2h_whole|copy_h2d_whole|stage_d2h_chunks|stage_h2d_chunks,BYTES,us,MB/s,gdr,p50 us
 * A benchmark: it prints numbers and never judges them.
 *
 * Build (after `make unit` in _build/unit):
 *   cc -std=c11 -O2 -Isrc -o stage_copy bench/gpu/stage_copy.c _build/unit/libgdr_layers.a \
 *      -ldl -lpthread
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gpu/gdr_gpu.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_stream.h"

#define REPS 7

typedef struct bench {
    gdr_gpu_t g;
    gdr_gpu_stream_t s;
    void *dev;                  /* max bytes of device memory */
    unsigned char *whole;       /* max bytes pinned: the single copy's host side */
    unsigned char *slots;       /* slots * chunk pinned: the pipeline's */
    size_t chunk;
    unsigned n_slots;
} bench_t;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static void die(bench_t *b, const char *what)
{
    fprintf(stderr, "stage_copy: %s: %s\n", what, b->g.error);
    exit(1);
}

/* One pass: the whole buffer in one synchronous copy (chunked == 0), or chunk by chunk
 * through the slots in turn on the internal stream, synchronised once at the end. */
static void pass(bench_t *b, size_t bytes, int to_host, int chunked)
{
    if (!chunked) {
        int rc = to_host ? gdr_gpu_copy(&b->g, b->whole, b->dev, bytes)
                         : gdr_gpu_copy(&b->g, b->dev, b->whole, bytes);
        if (rc != 0)
            die(b, "copy");
        return;
    }
    for (size_t off = 0, k = 0; off < bytes; off += b->chunk, k++) {
        size_t n = bytes - off < b->chunk ? bytes - off : b->chunk;
        unsigned char *slot = b->slots + (k % b->n_slots) * b->chunk;
        unsigned char *d = (unsigned char *) b->dev + off;
        int rc = to_host ? gdr_gpu_copy_async(&b->g, b->s, slot, d, n)
                         : gdr_gpu_copy_async(&b->g, b->s, d, slot, n);
        if (rc != 0)
            die(b, "copy_async");
    }
    if (gdr_gpu_stream_sync(&b->g, b->s) != 0)
        die(b, "stream_sync");
}

static void measure(bench_t *b, const char *name, size_t bytes, int to_host, int chunked)
{
    double t[REPS], sum = 0;
    pass(b, bytes, to_host, chunked);           /* warm-up */
    for (int r = 0; r < REPS; r++) {
        double t0 = now_us();
        pass(b, bytes, to_host, chunked);
        t[r] = now_us() - t0;
        sum += t[r];
    }
    qsort(t, REPS, sizeof(t[0]), cmp_double);
    double mean = sum / REPS;
    printf("%s,%zu,%.2f,%.1f,gdr,%.2f\n", name, bytes, mean, bytes / t[REPS / 2], t[REPS / 2]);
}

int main(int argc, char **argv)
{
    bench_t b;
    const char *driver = "libcuda.so.1";
    size_t max = 64u << 20;
    int opt;

    memset(&b, 0, sizeof(b));
    b.chunk = 512 * 1024;
    b.n_slots = 8;
    while ((opt = getopt(argc, argv, "d:c:s:m:")) != -1) {
        switch (opt) {
        case 'd': driver = optarg; break;
        case 'c': b.chunk = strtoull(optarg, NULL, 0); break;
        case 's': b.n_slots = (unsigned) strtoul(optarg, NULL, 0); break;
        case 'm': max = strtoull(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: stage_copy [-d DRIVER] [-c CHUNK] [-s SLOTS] [-m MAX]\n");
            return 2;
        }
    }
    if (b.chunk == 0 || b.n_slots == 0 || max < (1u << 20)) {
        fprintf(stderr, "stage_copy: CHUNK and SLOTS > 0, MAX >= 1 MiB\n");
        return 2;
    }
    if (gdr_gpu_open(&b.g, driver, 0) != 0)
        die(&b, driver);
    char what[256];
    gdr_gpu_describe(&b.g, what, sizeof(what));
    fprintf(stderr, "stage_copy: %s; chunk %zu, %u slots\n", what, b.chunk, b.n_slots);
    if (gdr_gpu_stream_create(&b.g, &b.s) != 0 || gdr_gpu_mem_alloc(&b.g, max, &b.dev) != 0
        || gdr_gpu_host_alloc(&b.g, max, (void **) &b.whole) != 0
        || gdr_gpu_host_alloc(&b.g, b.chunk * b.n_slots, (void **) &b.slots) != 0)
        die(&b, "allocate");
    memset(b.whole, 1, max);
    memset(b.slots, 2, b.chunk * b.n_slots);
    for (size_t bytes = 1u << 20; bytes <= max; bytes *= 2) {
        measure(&b, "copy_d2h_whole", bytes, 1, 0);
        measure(&b, "stage_d2h_chunks", bytes, 1, 1);
        measure(&b, "copy_h2d_whole", bytes, 0, 0);
        measure(&b, "stage_h2d_chunks", bytes, 0, 1);
    }
    gdr_gpu_host_free(&b.g, b.slots);
    gdr_gpu_host_free(&b.g, b.whole);
    gdr_gpu_mem_free(&b.g, b.dev);
    gdr_gpu_stream_destroy(&b.g, b.s);
    gdr_gpu_close(&b.g);
    return 0;
}
