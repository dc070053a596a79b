/* Kernel-triggered RMA (gdr_rma_kernel_api.h) from real CUDA kernels, on a real GPU.
 *
 * 1. Other-node path: the kernel's threads post put_signal / fetch_add / flush descriptors
 *    to a trigger ring in host-pinned memory mapped into the device (the layout
 *    gdr_device_win.c gives a window's ring), and a host thread runs the proxy and its
 *    executor over the RMA engine, with an in-memory transport standing in for the NIC
 *    (test/unit/rma/fake_engine.h).  Checked: every update arrived once (signal and counter
 *    totals), every fetch_add got a distinct old value, each thread's last put is in its
 *    cell, and more producers than slots block and lose nothing.
 * 2. Same-node path: peer windows in device memory reached by loads, stores and
 *    system-scope atomics (peers[]), then a second kernel waiting on a signal, and
 *    displacements outside a window refused; accumulates from 512 threads at once (int32,
 *    double, int8 sharing words) give exact sums.
 *
 * Prints one line per check and "N passed, N failed"; exits 77 ("skipped: ...") without a
 * GPU.  maint/check-gpu builds and runs it; maint/check only builds it.  At most
 * DK_CELLS - CELL_DATA threads per run (each has its own cell). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
extern "C" {
#include "gdr_unit.h"
#include "dev_kernel_host.h"
}
#include "gdr/gdr_rma_kernel_api.h"

#define CELL_SIGNAL 0           /* the ADD signal word of each target */
#define CELL_COUNTER 8          /* the fetch_add counter */
#define CELL_DATA 16            /* thread g's put lands in cell CELL_DATA + g */

static void cuda_or_die(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        printf("FAIL %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + 1e-9 * (double) t.tv_nsec;
}

/* target of thread g's round i: never rank 0 (this rank) */
static __host__ __device__ int target_of(int g, int i)
{
    return 1 + (i + g) % (DK_RANKS - 1);
}

static __host__ __device__ uint64_t value_of(int g, int i)
{
    return (uint64_t) (g + 1) << 32 | (uint64_t) i;
}

/* where a thread of traffic() is, for a stall report: round << 8 | one of these */
enum { AT_PUT_SIGNAL = 1, AT_FETCH_ADD = 2, AT_FLUSH = 3, AT_ROUND_DONE = 4 };

static __device__ void mark(volatile uint64_t *progress, int g, int round, int at)
{
    if (progress == NULL)
        return;
    progress[g] = (uint64_t) round << 8 | (uint64_t) at;
    __threadfence_system();     /* the host reads it while the kernel runs */
}

/* Every thread: rounds of put_signal (ADD 1) + fetch_add + flush, each to the next target.
 * progress (host-mapped, or NULL): each thread's place, for the stall report. */
__global__ void traffic(gdr_dev_win_t w, uint64_t *src, uint64_t *olds, int rounds,
                        unsigned long long *errors, volatile uint64_t *progress)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < rounds; i++) {
        int t = target_of(g, i);
        uint64_t *s = &src[(size_t) g * rounds + i];
        *s = value_of(g, i);
        mark(progress, g, i, AT_PUT_SIGNAL);
        int rc = gdr_dev_put_signal(&w, s, 8, t, CELL_DATA + g, CELL_SIGNAL, 1, GDR_SIGNAL_ADD);
        mark(progress, g, i, AT_FETCH_ADD);
        rc |= gdr_dev_fetch_add(&w, t, CELL_COUNTER, 1, &olds[(size_t) g * rounds + i]);
        mark(progress, g, i, AT_FLUSH);
        rc |= gdr_dev_flush(&w, t);
        mark(progress, g, i, AT_ROUND_DONE);
        if (rc != GDR_DEV_OK)
            atomicAdd(errors, 1ULL);
    }
}

/* The stall report's threads: how many stand in each call, and the first few that are not
 * through their last round. */
static void report_threads(const volatile uint64_t *progress, int n, int rounds)
{
    static const char *const at_name[] = { "not started", "put_signal", "fetch_add", "flush",
                                           "round done" };
    int count[5] = { 0 }, shown = 0;
    for (int g = 0; g < n; g++) {
        uint64_t p = progress[g];
        int at = (int) (p & 0xff), round = (int) (p >> 8);
        count[at <= AT_ROUND_DONE ? at : 0]++;
        if (!(at == AT_ROUND_DONE && round == rounds - 1) && shown < 8) {
            printf("info: stall: thread %d in round %d at %s\n", g, round,
                   at <= AT_ROUND_DONE ? at_name[at] : "?");
            shown++;
        }
    }
    printf("info: stall: threads in put_signal %d, fetch_add %d, flush %d, between rounds or "
           "done %d, not started %d\n", count[AT_PUT_SIGNAL], count[AT_FETCH_ADD],
           count[AT_FLUSH], count[AT_ROUND_DONE], count[0]);
}

/* Same-node: after the puts, each thread reads its own last value back with a get. */
__global__ void get_back(gdr_dev_win_t w, uint64_t *got, int rounds, unsigned long long *errors)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (gdr_dev_get(&w, &got[g], 8, target_of(g, rounds - 1), CELL_DATA + g) != GDR_DEV_OK)
        atomicAdd(errors, 1ULL);
}

/* Every call with a displacement past the window's end must be refused with RANGE. */
__global__ void out_of_range(gdr_dev_win_t w, uint64_t *buf, unsigned long long *errors)
{
    uint64_t r;
    int bad = 0;
    bad += gdr_dev_put(&w, buf, 8, 1, DK_CELLS) != GDR_DEV_ERR_RANGE;
    bad += gdr_dev_put(&w, buf, 16, 1, DK_CELLS - 1) != GDR_DEV_ERR_RANGE;
    bad += gdr_dev_get(&w, buf, 8, 2, -1) != GDR_DEV_ERR_RANGE;
    bad += gdr_dev_put_signal(&w, buf, 8, 3, 0, DK_CELLS, 1, GDR_SIGNAL_ADD) != GDR_DEV_ERR_RANGE;
    bad += gdr_dev_fetch_add(&w, 1, DK_CELLS, 1, &r) != GDR_DEV_ERR_RANGE;
    bad += gdr_dev_fetch_add(&w, 1, INT64_MAX / 4, 1, &r) != GDR_DEV_ERR_RANGE;
    if (bad)
        atomicAdd(errors, (unsigned long long) bad);
}

__global__ void wait_signal(gdr_dev_win_t w, uint64_t expect, uint64_t *seen,
                            unsigned long long *errors)
{
    if (gdr_dev_signal_wait_until(&w, CELL_SIGNAL, GDR_CMP_GE, expect, seen) != GDR_DEV_OK)
        atomicAdd(errors, 1ULL);
}

/* what one run left at the targets, as a getter of (rank, cell) */
typedef uint64_t (*word_fn)(int rank, int cell);

static uint64_t *device_windows;        /* part 2: the windows, copied back */
static uint64_t device_word(int rank, int cell)
{
    return device_windows[(size_t) rank * DK_CELLS + cell];
}

static void check_totals(const char *path, word_fn word, int n, int rounds,
                         const uint64_t *olds, unsigned long long errors)
{
    uint64_t signals = 0, counters = 0;
    for (int r = 1; r < DK_RANKS; r++) {
        signals += word(r, CELL_SIGNAL);
        counters += word(r, CELL_COUNTER);
    }
    uint64_t want = (uint64_t) n * rounds;
    GDR_CHECK(errors == 0 && signals == want && counters == want,
              "%s, %d threads x %d rounds: %llu signal ADDs and %llu fetch_adds arrived "
              "(want %llu each), %llu calls failed", path, n, rounds,
              (unsigned long long) signals, (unsigned long long) counters,
              (unsigned long long) want, errors);
    int repeated = 0;
    unsigned char *seen = (unsigned char *) calloc(want, 1);
    for (int r = 1; r < DK_RANKS; r++) {
        memset(seen, 0, want);
        for (int g = 0; g < n; g++)
            for (int i = 0; i < rounds; i++)
                if (target_of(g, i) == r) {
                    uint64_t o = olds[(size_t) g * rounds + i];
                    repeated += o >= want || seen[o]++;
                }
    }
    free(seen);
    GDR_CHECK(repeated == 0, "%s: every fetch_add got a distinct old value (%d repeated)",
              path, repeated);
    int wrong = 0;
    for (int g = 0; g < n; g++)
        wrong += word(target_of(g, rounds - 1), CELL_DATA + g) != value_of(g, rounds - 1);
    GDR_CHECK(wrong == 0, "%s: each thread's last put is in its cell at its last target "
              "(%d wrong)", path, wrong);
}

/* Part 1: the ring in mapped host-pinned memory, the proxy on this thread.  counters_on_gpu:
 * head and posted[] (only producers' atomics touch them) in device memory instead. */
static void through_ring(int blocks, int threads, int rounds, uint32_t nslots,
                         int counters_on_gpu)
{
    int n = blocks * threads;
    /* head, tail, stopped, posted[], done[], slots: one mapped allocation, as the library's */
    size_t at_posted = 128, at_done = at_posted + 64, at_slots = 512;
    size_t bytes = at_slots + nslots * sizeof(gdr_trig_slot_t);
    char *m, *dm;
    cuda_or_die(cudaHostAlloc((void **) &m, bytes, cudaHostAllocMapped), "cudaHostAlloc ring");
    memset(m, 0, bytes);
    cuda_or_die(cudaHostGetDevicePointer((void **) &dm, m, 0), "ring device pointer");
    gdr_trig_ring_t host_ring = { (uint64_t *) m, (volatile uint64_t *) (m + 64),
        (gdr_trig_slot_t *) (m + at_slots), (uint64_t *) (m + at_posted),
        (volatile uint64_t *) (m + at_done), (volatile uint64_t *) (m + 96), nslots, DK_RANKS };
    gdr_trig_ring_t dev_ring = { (uint64_t *) dm, (volatile uint64_t *) (dm + 64),
        (gdr_trig_slot_t *) (dm + at_slots), (uint64_t *) (dm + at_posted),
        (volatile uint64_t *) (dm + at_done), (volatile uint64_t *) (dm + 96), nslots, DK_RANKS };
    uint64_t *counters = NULL;  /* head, then posted[] */
    if (counters_on_gpu) {
        cuda_or_die(cudaMalloc((void **) &counters, (1 + DK_RANKS) * 8), "cudaMalloc counters");
        cuda_or_die(cudaMemset(counters, 0, (1 + DK_RANKS) * 8), "cudaMemset counters");
        dev_ring.head = counters;
        dev_ring.posted = counters + 1;
    }
    const char *where = counters_on_gpu ? "ring (head, posted[] on the GPU)" : "ring (all pinned)";

    gdr_dev_peer_t *no_peers;   /* every target on another node */
    uint64_t *src, *olds;
    unsigned long long *errors;
    cuda_or_die(cudaMalloc((void **) &no_peers, DK_RANKS * sizeof(*no_peers)), "cudaMalloc");
    cuda_or_die(cudaMemset(no_peers, 0, DK_RANKS * sizeof(*no_peers)), "cudaMemset");
    cuda_or_die(cudaHostAlloc((void **) &src, (size_t) n * rounds * 8, cudaHostAllocMapped),
                "cudaHostAlloc src");
    cuda_or_die(cudaHostAlloc((void **) &olds, (size_t) n * rounds * 8, cudaHostAllocMapped),
                "cudaHostAlloc olds");
    cuda_or_die(cudaHostAlloc((void **) &errors, 8, cudaHostAllocMapped), "cudaHostAlloc");
    memset(olds, 0xff, (size_t) n * rounds * 8);
    *errors = 0;
    uint64_t *dsrc, *dolds;
    unsigned long long *derrors;
    cudaHostGetDevicePointer((void **) &dsrc, src, 0);
    cudaHostGetDevicePointer((void **) &dolds, olds, 0);
    cudaHostGetDevicePointer((void **) &derrors, errors, 0);
    uint64_t *progress, *dprogress;
    cuda_or_die(cudaHostAlloc((void **) &progress, (size_t) n * 8, cudaHostAllocMapped),
                "cudaHostAlloc progress");
    memset(progress, 0, (size_t) n * 8);
    cudaHostGetDevicePointer((void **) &dprogress, progress, 0);

    if (dk_host_start(&host_ring) != 0)
        exit(1);
    gdr_dev_win_t w = { dev_ring, DK_HANDLE, 0, DK_RANKS, no_peers };
    cudaStream_t s;
    cuda_or_die(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    double t0 = now_s();
    traffic<<<blocks, threads, 0, s>>>(w, dsrc, dolds, rounds, derrors, dprogress);
    cuda_or_die(cudaGetLastError(), "launch traffic");
    int rc = 0;
    cudaError_t q;
    while ((q = cudaStreamQuery(s)) == cudaErrorNotReady) {
        if (rc == 0 && dk_host_pump() != 0) {
            rc = -1;
            *(volatile uint64_t *) (m + 96) = 1;        /* stopped: producers give up */
        }
        if (now_s() - t0 > 20) {
            printf("FAIL %s, %d threads: the kernel has not finished after 20 s "
                   "(proxy started %llu descriptors, want %llu; head %llu tail %llu)\n", where,
                   n, (unsigned long long) dk_host_started(), 2ULL * n * rounds,
                   (unsigned long long) (counters_on_gpu ? 0 : *(volatile uint64_t *) m),
                   (unsigned long long) *(volatile uint64_t *) (m + 64));
            char state[1024];
            dk_host_describe(state, sizeof(state));
            printf("info: stall: %s\n", state);
            report_threads(progress, n, rounds);
            fflush(stdout);
            exit(1);            /* a stuck kernel ends with the process */
        }
    }
    double dt = now_s() - t0;
    cuda_or_die(q, "traffic kernel");
    GDR_CHECK(rc == 0, "%s, %d threads: the proxy ran without failing (%s)", where, n,
              rc == 0 ? "ok" : dk_host_error());
    check_totals(where, dk_host_word, n, rounds, olds, *errors);
    GDR_CHECK(dk_host_started() == 2ULL * n * rounds, "%s: the proxy started %llu "
              "descriptors (want %llu)", where, (unsigned long long) dk_host_started(),
              2ULL * n * rounds);
    printf("info: %s, %d blocks x %d threads x %d rounds, %u slots: %.1f us per "
           "put_signal+fetch_add+flush round trip per thread (not a benchmark)\n", where,
           blocks, threads, rounds, nslots, dt * 1e6 / rounds);
    dk_host_stop();
    cudaStreamDestroy(s);
    cudaFree(no_peers);
    cudaFreeHost(src);
    cudaFreeHost(olds);
    cudaFreeHost(errors);
    cudaFreeHost(progress);
    cudaFreeHost(m);
    cudaFree(counters);
}

/* Same node, accumulate: every thread adds int32 {1, -2, 3, 1000}, doubles {0.5, 2} and
 * eight int8 ones (neighbours sharing words; each warp splits that one) into rank 1's
 * window with gdr's atomic steps; *errors counts calls that did not return OK. */
__global__ void acc_contend(gdr_dev_win_t w, int rounds, unsigned long long *errors)
{
    const int32_t i32[4] = { 1, -2, 3, 1000 };
    const double dbl[2] = { 0.5, 2.0 };
    const int8_t i8[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    unsigned lane = threadIdx.x % 32;
    for (int k = 0; k < rounds; k++) {
        int bad = gdr_dev_accumulate(&w, i32, 4, GDR_GPU_T_INT32, GDR_GPU_OP_SUM, 1, 0, 0, 1)
            != GDR_DEV_OK;
        bad += gdr_dev_accumulate(&w, dbl, 2, GDR_GPU_T_DOUBLE, GDR_GPU_OP_SUM, 1, 2, 0, 1)
            != GDR_DEV_OK;
        if (lane < 8)           /* 8 lanes of each warp, one element each */
            bad += gdr_dev_accumulate(&w, i8, 8, GDR_GPU_T_INT8, GDR_GPU_OP_SUM, 1, 4, lane, 8)
                != GDR_DEV_OK;
        if (bad)
            atomicAdd(errors, (unsigned long long) bad);
    }
}

static void same_node_accumulate(int blocks, int threads, int rounds)
{
    char *win;
    gdr_dev_peer_t *peers, views[DK_RANKS];
    unsigned long long *errors;
    cuda_or_die(cudaMalloc((void **) &win, 64), "cudaMalloc window");
    cuda_or_die(cudaMemset(win, 0, 64), "cudaMemset window");
    memset(views, 0, sizeof(views));
    views[1] = gdr_dev_peer_t { win, 64, 8 };
    cuda_or_die(cudaMalloc((void **) &peers, sizeof(views)), "cudaMalloc");
    cudaMemcpy(peers, views, sizeof(views), cudaMemcpyHostToDevice);
    cuda_or_die(cudaMalloc((void **) &errors, 8), "cudaMalloc");
    cudaMemset(errors, 0, 8);
    gdr_trig_ring_t none;
    memset(&none, 0, sizeof(none));
    none.nranks = DK_RANKS;
    gdr_dev_win_t w = { none, DK_HANDLE, 0, DK_RANKS, peers };
    acc_contend<<<blocks, threads>>>(w, rounds, errors);
    cuda_or_die(cudaDeviceSynchronize(), "accumulate kernel");
    unsigned char h[64];
    unsigned long long h_errors;
    cudaMemcpy(h, win, 64, cudaMemcpyDeviceToHost);
    cudaMemcpy(&h_errors, errors, 8, cudaMemcpyDeviceToHost);
    long n = (long) blocks * threads * rounds, warps8 = (long) blocks * (threads / 32) * rounds;
    int32_t s32[4];
    double sd[2];
    int8_t s8[8];
    memcpy(s32, h, 16);
    memcpy(sd, h + 16, 16);
    memcpy(s8, h + 32, 8);
    int ok8 = 1;
    for (int i = 0; i < 8; i++)
        ok8 &= s8[i] == (int8_t) warps8;
    GDR_CHECK(h_errors == 0 && s32[0] == n && s32[1] == -2 * n && s32[2] == 3 * n
              && s32[3] == 1000 * n && sd[0] == 0.5 * n && sd[1] == 2.0 * n && ok8,
              "same-node accumulate, %d blocks x %d threads x %d: int32 SUM %d %d %d %d, double "
              "SUM %g %g, int8 SUM split over 8 lanes %d (want %d): exact", blocks, threads,
              rounds, s32[0], s32[1], s32[2], s32[3], sd[0], sd[1], s8[0], (int8_t) warps8);
    cudaFree(win);
    cudaFree(peers);
    cudaFree(errors);
}

/* Part 2: every peer window in device memory, mapped (peers[]), no proxy. */
static void same_node(int blocks, int threads, int rounds)
{
    int n = blocks * threads;
    size_t win_bytes = DK_CELLS * 8;
    char *wins;
    gdr_dev_peer_t *peers, views[DK_RANKS];
    uint64_t *src, *olds, *got, *seen;
    unsigned long long *errors;
    cuda_or_die(cudaMalloc((void **) &wins, DK_RANKS * win_bytes), "cudaMalloc windows");
    cuda_or_die(cudaMemset(wins, 0, DK_RANKS * win_bytes), "cudaMemset windows");
    for (int r = 0; r < DK_RANKS; r++)
        views[r] = gdr_dev_peer_t { wins + r * win_bytes, win_bytes, 8 };
    cuda_or_die(cudaMalloc((void **) &peers, sizeof(views)), "cudaMalloc");
    cudaMemcpy(peers, views, sizeof(views), cudaMemcpyHostToDevice);
    cuda_or_die(cudaMalloc((void **) &src, (size_t) n * rounds * 8), "cudaMalloc src");
    cuda_or_die(cudaMalloc((void **) &olds, (size_t) n * rounds * 8), "cudaMalloc olds");
    cuda_or_die(cudaMalloc((void **) &got, (size_t) n * 8), "cudaMalloc got");
    cuda_or_die(cudaMalloc((void **) &seen, 8), "cudaMalloc");
    cuda_or_die(cudaMalloc((void **) &errors, 8), "cudaMalloc");
    cudaMemset(errors, 0, 8);
    gdr_trig_ring_t none;
    memset(&none, 0, sizeof(none));
    none.nranks = DK_RANKS;
    gdr_dev_win_t w = { none, DK_HANDLE, 0, DK_RANKS, peers };

    traffic<<<blocks, threads>>>(w, src, olds, rounds, errors, NULL);
    get_back<<<blocks, threads>>>(w, got, rounds, errors);
    /* out of bounds: refused, nothing written (cell DK_CELLS is one past the window) */
    out_of_range<<<1, 1>>>(w, src, errors);
    /* rank 1 waits for every signal sent to it */
    uint64_t to_rank1 = 0;
    for (int g = 0; g < n; g++)
        for (int i = 0; i < rounds; i++)
            to_rank1 += target_of(g, i) == 1;
    gdr_dev_win_t w1 = w;
    w1.rank = 1;
    wait_signal<<<1, 1>>>(w1, to_rank1, seen, errors);
    cuda_or_die(cudaDeviceSynchronize(), "same-node kernels");

    device_windows = (uint64_t *) malloc(DK_RANKS * win_bytes);
    uint64_t *h_olds = (uint64_t *) malloc((size_t) n * rounds * 8);
    uint64_t *h_got = (uint64_t *) malloc((size_t) n * 8), h_seen;
    unsigned long long h_errors;
    cudaMemcpy(device_windows, wins, DK_RANKS * win_bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(h_olds, olds, (size_t) n * rounds * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(h_got, got, (size_t) n * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(&h_seen, seen, 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(&h_errors, errors, 8, cudaMemcpyDeviceToHost);
    check_totals("same-node", device_word, n, rounds, h_olds, h_errors);
    int wrong = 0;
    for (int g = 0; g < n; g++)
        wrong += h_got[g] != value_of(g, rounds - 1);
    GDR_CHECK(wrong == 0, "same-node: a get of each thread's cell returns its last put "
              "(%d wrong)", wrong);
    GDR_CHECK(h_seen == to_rank1, "same-node: signal_wait_until(GE %llu) at rank 1 returned "
              "%llu", (unsigned long long) to_rank1, (unsigned long long) h_seen);
    free(device_windows);
    free(h_olds);
    free(h_got);
    cudaFree(wins);
    cudaFree(peers);
    cudaFree(src);
    cudaFree(olds);
    cudaFree(got);
    cudaFree(seen);
    cudaFree(errors);
}

/* argv[1]: "ring" (the library's layout: every ring word host-pinned), "ring-gpu-counters"
 * (head and posted[] in device memory), "same-node"; none: all three. */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("skipped: no GPU (cudaGetDeviceCount)\n");
        return 77;
    }
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    int native = 0, pageable = 0;
    cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, 0);
    cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0);
    printf("info: %s, compute capability %d.%d, host-native atomics %d, pageable access %d\n",
           p.name, p.major, p.minor, native, pageable);
    for (int gpu_counters = 0; gpu_counters < 2; gpu_counters++) {
        if (only && strcmp(only, gpu_counters ? "ring-gpu-counters" : "ring") != 0)
            continue;
        through_ring(1, 1, 200, 64, gpu_counters);      /* one producer: the round trip */
        through_ring(4, 32, 20, 64, gpu_counters);      /* 128 producers, 64 slots: back-pressure */
        through_ring(6, 64, 4, 64, gpu_counters);       /* 384 producers */
    }
    if (!only || strcmp(only, "same-node") == 0) {
        same_node(1, 1, 200);
        same_node(3, 128, 8);
        same_node_accumulate(4, 128, 50);
    }
    return gdr_unit_finish();
}
