/* CUDA device memory in MPI calls, ranks of one node sharing a GPU (maint/check-gpu).
 *
 * What it checks, values read back every time:
 * - two-sided: device->device, device->host and host->device messages of 8 B, 64 KiB
 *   and 4 MiB (eager and pipelined sizes of the shm module);
 * - collectives: MPI_Allreduce(SUM) and MPI_Bcast on device buffers;
 * - RMA on a host window (MPI_Win_allocate) with device origin/result buffers:
 *   Put under fence, Get under lock, Accumulate(SUM) and Fetch_and_op under lock_all+flush;
 * - RMA on a device window (MPI_Win_create over cudaMalloc'd memory): Put from host and
 *   device origins, Get into device memory, Accumulate(SUM), Fetch_and_op and
 *   Compare_and_swap, under fence, lock and lock_all+flush.
 * Every rank uses GPU (rank % device count).  Run only where MPIX_Query_cuda_support()
 * is 1; elsewhere it prints why and exits 77 (maint/check-gpu counts that as a skip).
 */
#include <cuda_runtime_api.h>
#include "gdr_mpi_test.h"

#define SKIPPED_EXIT 77

/* the context of the checks that follow (printed with GDR_TEST_TRACE set) */
#define step(...) gdr_test_set_context(__VA_ARGS__)

static void cuda_or_die(const char *call, cudaError_t err)
{
    if (err == cudaSuccess)
        return;
    fprintf(stderr, "rank %d: %s: %s failed: %s\n", gdr_test_rank(), gdr_test_context(), call,
            cudaGetErrorString(err));
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* CUDA-aware MPI reads and writes device memory on streams of its own: work the
 * program queued must be complete before a buffer is handed to MPI (cudaMemset and a
 * cudaMemcpy from pageable memory may return before the device is done). */
static void device_idle(void)
{
    cuda_or_die("cudaDeviceSynchronize", cudaDeviceSynchronize());
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    cuda_or_die("cudaMalloc", cudaMalloc(&p, bytes));
    cuda_or_die("cudaMemset", cudaMemset(p, 0, bytes));
    device_idle();
    return p;
}

static void to_dev(void *dev, const void *host, size_t bytes)
{
    cuda_or_die("cudaMemcpy(H2D)", cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    device_idle();
}

static void from_dev(void *host, const void *dev, size_t bytes)
{
    cuda_or_die("cudaMemcpy(D2H)", cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

/* Pattern of element i as written by `rank` in round `round`. */
static int64_t pattern(int rank, int round, size_t i)
{
    return (int64_t) rank * 1000003 + (int64_t) round * 7919 + (int64_t) i;
}

static void fill(int64_t *host, size_t n, int rank, int round)
{
    for (size_t i = 0; i < n; i++)
        host[i] = pattern(rank, round, i);
}

static void check_pattern(const char *what, const int64_t *host, size_t n, int rank, int round)
{
    for (size_t i = 0; i < n; i++)
        if (!gdr_check_long(what, (long) i, pattern(rank, round, i), host[i]))
            return;
}

/* ---- two-sided ------------------------------------------------------------------- */

typedef enum { MEM_HOST, MEM_DEVICE } mem_kind;

static const char *mem_name(mem_kind k)
{
    return k == MEM_DEVICE ? "device" : "host";
}

static void *buf_alloc(mem_kind k, size_t bytes)
{
    if (k == MEM_DEVICE)
        return dev_alloc(bytes);
    void *p = calloc(1, bytes);
    if (!p)
        gdr_test_die("calloc", MPI_ERR_NO_MEM);
    return p;
}

static void buf_free(mem_kind k, void *p)
{
    if (k == MEM_DEVICE)
        cuda_or_die("cudaFree", cudaFree(p));
    else
        free(p);
}

static void buf_put(mem_kind k, void *buf, const int64_t *host, size_t bytes)
{
    if (k == MEM_DEVICE)
        to_dev(buf, host, bytes);
    else
        memcpy(buf, host, bytes);
}

static void buf_get(mem_kind k, int64_t *host, const void *buf, size_t bytes)
{
    if (k == MEM_DEVICE)
        from_dev(host, buf, bytes);
    else
        memcpy(host, buf, bytes);
}

/* Ring: every rank sends to rank+1 and receives from rank-1. */
static void phase_pt2pt(int rank, int size)
{
    static const size_t sizes[] = { 8, 65536, 4u << 20 };
    static const mem_kind kinds[][2] = {
        { MEM_DEVICE, MEM_DEVICE }, { MEM_DEVICE, MEM_HOST }, { MEM_HOST, MEM_DEVICE }
    };
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t bytes = sizes[s], n = bytes / sizeof(int64_t);
        int64_t *host = malloc(bytes);
        if (!host)
            gdr_test_die("malloc", MPI_ERR_NO_MEM);
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            mem_kind sk = kinds[k][0], rk = kinds[k][1];
            int round = (int) (s * 10 + k);
            step("pt2pt %zu B %s->%s", bytes, mem_name(sk), mem_name(rk));
            void *sbuf = buf_alloc(sk, bytes), *rbuf = buf_alloc(rk, bytes);
            fill(host, n, rank, round);
            buf_put(sk, sbuf, host, bytes);
            MPI_Request req[2];
            MPI_Status st[2];
            gdr_check_mpi("MPI_Irecv", MPI_Irecv(rbuf, (int) n, MPI_INT64_T, prev, round,
                                                 MPI_COMM_WORLD, &req[0]));
            gdr_check_mpi("MPI_Isend", MPI_Isend(sbuf, (int) n, MPI_INT64_T, next, round,
                                                 MPI_COMM_WORLD, &req[1]));
            gdr_check_mpi("MPI_Waitall", MPI_Waitall(2, req, st));
            buf_get(rk, host, rbuf, bytes);
            check_pattern("received", host, n, prev, round);
            buf_free(sk, sbuf);
            buf_free(rk, rbuf);
        }
        free(host);
    }
}

/* ---- collectives ----------------------------------------------------------------- */

static void phase_collectives(int rank, int size)
{
    enum { N = 1024 };
    int64_t host[N];
    int64_t *dev = dev_alloc(sizeof(host));

    step("MPI_Allreduce(SUM) on device memory");
    fill(host, N, rank, 0);
    to_dev(dev, host, sizeof(host));
    gdr_check_mpi("MPI_Allreduce",
                  MPI_Allreduce(MPI_IN_PLACE, dev, N, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
    from_dev(host, dev, sizeof(host));
    for (int i = 0; i < N; i++) {
        int64_t want = 0;
        for (int r = 0; r < size; r++)
            want += pattern(r, 0, (size_t) i);
        if (!gdr_check_long("sum", i, want, host[i]))
            break;
    }

    step("MPI_Bcast from rank %d on device memory", size - 1);
    fill(host, N, rank, 1);
    to_dev(dev, host, sizeof(host));
    gdr_check_mpi("MPI_Bcast", MPI_Bcast(dev, N, MPI_INT64_T, size - 1, MPI_COMM_WORLD));
    from_dev(host, dev, sizeof(host));
    check_pattern("bcast", host, N, size - 1, 1);
    cuda_or_die("cudaFree", cudaFree(dev));
}

/* ---- RMA ------------------------------------------------------------------------- */

/* Each rank owns slot `rank` (SLOT elements) of every target's window for puts, and the
 * counter at element 0 of slot `size` is the shared accumulate/fetch-op target. */
enum { SLOT = 512 };

typedef struct {
    MPI_Win win;
    mem_kind kind;
    int64_t *base;      /* host pointer (host window) or device pointer */
    size_t elems;
} rma_win;

static void rma_win_open(rma_win *w, mem_kind kind, int size)
{
    w->kind = kind;
    w->elems = (size_t) (size + 1) * SLOT;
    size_t bytes = w->elems * sizeof(int64_t);
    int rc;
    if (kind == MEM_HOST) {
        rc = MPI_Win_allocate((MPI_Aint) bytes, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &w->base, &w->win);
        if (rc != MPI_SUCCESS)
            gdr_test_die("MPI_Win_allocate", rc);
        memset(w->base, 0, bytes);
    } else {
        w->base = dev_alloc(bytes);
        rc = MPI_Win_create(w->base, (MPI_Aint) bytes, sizeof(int64_t), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &w->win);
        if (rc != MPI_SUCCESS)
            gdr_test_die("MPI_Win_create", rc);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void rma_win_close(rma_win *w)
{
    int rc = MPI_Win_free(&w->win);
    if (rc != MPI_SUCCESS)
        gdr_test_die("MPI_Win_free", rc);
    if (w->kind == MEM_DEVICE)
        cuda_or_die("cudaFree", cudaFree(w->base));
}

/* A host copy of this rank's own window, read under an exclusive lock of it (free()
 * it).  Call outside any epoch on the window. */
static int64_t *rma_win_snapshot(const rma_win *w, int rank)
{
    int64_t *host = malloc(w->elems * sizeof(int64_t));
    if (!host)
        gdr_test_die("malloc", MPI_ERR_NO_MEM);
    gdr_check_mpi("MPI_Win_lock", MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    buf_get(w->kind, host, w->base, w->elems * sizeof(int64_t));
    gdr_check_mpi("MPI_Win_unlock", MPI_Win_unlock(rank, w->win));
    return host;
}

typedef enum { SYNC_FENCE, SYNC_LOCK, SYNC_FLUSH } sync_kind;

static const char *sync_name(sync_kind s)
{
    return s == SYNC_FENCE ? "fence" : s == SYNC_LOCK ? "lock" : "lock_all+flush";
}

static void epoch_open(sync_kind s, MPI_Win win, int target)
{
    if (s == SYNC_FENCE)
        gdr_check_mpi("MPI_Win_fence", MPI_Win_fence(0, win));
    else if (s == SYNC_LOCK)
        gdr_check_mpi("MPI_Win_lock", MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
    else
        gdr_check_mpi("MPI_Win_lock_all", MPI_Win_lock_all(0, win));
}

static void epoch_close(sync_kind s, MPI_Win win, int target)
{
    if (s == SYNC_FENCE)
        gdr_check_mpi("MPI_Win_fence", MPI_Win_fence(0, win));
    else if (s == SYNC_LOCK)
        gdr_check_mpi("MPI_Win_unlock", MPI_Win_unlock(target, win));
    else {
        gdr_check_mpi("MPI_Win_flush", MPI_Win_flush(target, win));
        gdr_check_mpi("MPI_Win_unlock_all", MPI_Win_unlock_all(win));
    }
}

/* Put into the target's slot, get it back, accumulate into and fetch-add the counter,
 * compare-and-swap a word; origin buffers of `origin` memory. */
static void rma_round(rma_win *w, sync_kind s, mem_kind origin, int rank, int size, int round)
{
    int target = (rank + 1) % size, from = (rank + size - 1) % size;
    int64_t host[SLOT];
    void *obuf = buf_alloc(origin, sizeof(host)), *rbuf = buf_alloc(origin, sizeof(host));
    int64_t one = 1, *fop_result = buf_alloc(origin, sizeof(int64_t));
    int64_t *one_buf = buf_alloc(origin, sizeof(int64_t));
    buf_put(origin, one_buf, &one, sizeof(one));

    step("%s window, %s origin, %s: Put", mem_name(w->kind), mem_name(origin),
         sync_name(s));
    fill(host, SLOT, rank, round);
    buf_put(origin, obuf, host, sizeof(host));
    epoch_open(s, w->win, target);
    gdr_check_mpi("MPI_Put", MPI_Put(obuf, SLOT, MPI_INT64_T, target, (MPI_Aint) rank * SLOT,
                                     SLOT, MPI_INT64_T, w->win));
    epoch_close(s, w->win, target);
    MPI_Barrier(MPI_COMM_WORLD);

    step("%s window, %s origin, %s: Get", mem_name(w->kind), mem_name(origin),
         sync_name(s));
    epoch_open(s, w->win, target);
    gdr_check_mpi("MPI_Get", MPI_Get(rbuf, SLOT, MPI_INT64_T, target, (MPI_Aint) rank * SLOT,
                                     SLOT, MPI_INT64_T, w->win));
    epoch_close(s, w->win, target);
    buf_get(origin, host, rbuf, sizeof(host));
    check_pattern("got", host, SLOT, rank, round);

    step("%s window, %s origin, %s: Accumulate+Fetch_and_op", mem_name(w->kind),
         mem_name(origin), sync_name(s));
    fill(host, SLOT, rank, round);
    buf_put(origin, obuf, host, sizeof(host));
    epoch_open(s, w->win, target);
    /* counter slot: element 1.. get SUM of every origin's pattern, element 0 a fetch-add */
    gdr_check_mpi("MPI_Accumulate",
                  MPI_Accumulate(obuf, SLOT - 1, MPI_INT64_T, target, (MPI_Aint) size * SLOT + 1,
                                 SLOT - 1, MPI_INT64_T, MPI_SUM, w->win));
    gdr_check_mpi("MPI_Fetch_and_op",
                  MPI_Fetch_and_op(one_buf, fop_result, MPI_INT64_T, target,
                                   (MPI_Aint) size * SLOT, MPI_SUM, w->win));
    epoch_close(s, w->win, target);
    int64_t fetched = -1;
    buf_get(origin, &fetched, fop_result, sizeof(fetched));
    /* each target sees exactly one origin per round, so the counter it held was `round` */
    gdr_check_long("fetched counter", 0, round, fetched);
    MPI_Barrier(MPI_COMM_WORLD);

    /* what `from` wrote here, read locally */
    step("%s window, %s origin, %s: target memory", mem_name(w->kind),
         mem_name(origin), sync_name(s));
    int64_t *win_copy = rma_win_snapshot(w, rank);
    check_pattern("put slot", win_copy + (size_t) from * SLOT, SLOT, from, round);
    gdr_check_long("fetch-add counter", 0, round + 1, win_copy[(size_t) size * SLOT]);
    for (size_t i = 1; i < SLOT; i++) {
        int64_t want = 0;
        for (int r = 0; r <= round; r++)
            want += pattern(from, r, i - 1);
        if (!gdr_check_long("accumulated", (long) i, want, win_copy[(size_t) size * SLOT + i]))
            break;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    buf_free(origin, obuf);
    buf_free(origin, rbuf);
    buf_free(origin, fop_result);
    buf_free(origin, one_buf);
    free(win_copy);
}

/* One Compare_and_swap, flushed; returns the old value it fetched. */
static int64_t cas_flushed(rma_win *w, const int64_t *val, const int64_t *cmp, int64_t *res,
                           mem_kind origin, int target, MPI_Aint disp)
{
    int64_t got = 0;
    gdr_check_mpi("MPI_Compare_and_swap",
                  MPI_Compare_and_swap(val, cmp, res, MPI_INT64_T, target, disp, w->win));
    gdr_check_mpi("MPI_Win_flush", MPI_Win_flush(target, w->win));
    buf_get(origin, &got, res, sizeof(got));
    return got;
}

static void phase_cas(rma_win *w, mem_kind origin, int rank, int size)
{
    /* Each rank compare-and-swaps word 0 of its own slot at the next rank twice: a hit
     * (the compare value matches), then a miss (it no longer does). */
    int target = (rank + 1) % size, from = (rank + size - 1) % size;
    int64_t *cmp = buf_alloc(origin, 8), *val = buf_alloc(origin, 8), *res = buf_alloc(origin, 8);
    int64_t old = pattern(rank, 99, 0), want_new = -(int64_t) rank - 5;
    step("%s window, %s origin: Compare_and_swap", mem_name(w->kind),
         mem_name(origin));
    /* put a known value first */
    gdr_check_mpi("MPI_Win_lock", MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w->win));
    buf_put(origin, val, &old, 8);
    gdr_check_mpi("MPI_Put", MPI_Put(val, 1, MPI_INT64_T, target, (MPI_Aint) rank * SLOT, 1,
                                     MPI_INT64_T, w->win));
    gdr_check_mpi("MPI_Win_flush", MPI_Win_flush(target, w->win));
    buf_put(origin, cmp, &old, 8);
    buf_put(origin, val, &want_new, 8);
    gdr_check_long("cas hit: old value", 0, old,
                   cas_flushed(w, val, cmp, res, origin, target, (MPI_Aint) rank * SLOT));
    /* compare with the stale value again: a miss, the word keeps want_new */
    gdr_check_long("cas miss: old value", 0, want_new,
                   cas_flushed(w, cmp, cmp, res, origin, target, (MPI_Aint) rank * SLOT));
    gdr_check_mpi("MPI_Win_unlock", MPI_Win_unlock(target, w->win));
    MPI_Barrier(MPI_COMM_WORLD);

    int64_t *win_copy = rma_win_snapshot(w, rank);
    gdr_check_long("cas word at target", 0, -(int64_t) from - 5, win_copy[(size_t) from * SLOT]);
    free(win_copy);
    MPI_Barrier(MPI_COMM_WORLD);
    buf_free(origin, cmp);
    buf_free(origin, val);
    buf_free(origin, res);
}

static void phase_rma(mem_kind window, int rank, int size)
{
    static const sync_kind syncs[] = { SYNC_FENCE, SYNC_LOCK, SYNC_FLUSH };
    static const mem_kind origins[] = { MEM_HOST, MEM_DEVICE };
    for (size_t o = 0; o < 2; o++) {
        rma_win w;
        rma_win_open(&w, window, size);
        for (int s = 0; s < 3; s++)
            rma_round(&w, syncs[s], origins[o], rank, size, s);
        phase_cas(&w, origins[o], rank, size);
        rma_win_close(&w);
    }
}

int main(int argc, char **argv)
{
    int rank, size, ndev = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!MPIX_Query_cuda_support()) {
        if (rank == 0)
            printf("skipped: MPIX_Query_cuda_support() is 0 (no NVIDIA GPU or driver)\n");
        MPI_Finalize();
        return SKIPPED_EXIT;
    }
    step("setup");
    cuda_or_die("cudaGetDeviceCount", cudaGetDeviceCount(&ndev));
    cuda_or_die("cudaSetDevice", cudaSetDevice(rank % ndev));

    phase_pt2pt(rank, size);
    phase_collectives(rank, size);
    phase_rma(MEM_HOST, rank, size);
    phase_rma(MEM_DEVICE, rank, size);

    long errs = gdr_test_finish();
    MPI_Finalize();
    return errs != 0;
}
