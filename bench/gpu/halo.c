/* halo: a halo-exchange loop three ways (issue 21): each iteration a "kernel" writes the
 * halo, it goes to the right neighbour's window with a signal, the rank waits for its
 * left neighbour's signal, and the next "kernel" reads what arrived.
 *
 *   mpiexec -n 2 halo -w host,enqueue [-t TOOL] [-m MAX_BYTES] [-i ITERS]
 *   mpiexec -n 2 halo -w device       [-t TOOL] [-m MAX_BYTES] [-i ITERS]
 *
 *   host     the stream synchronised, then MPI_Put + MPI_Win_flush, MPI_Accumulate of 1 on
 *            the neighbour's signal word + MPI_Win_flush, and the host polls its own
 *            signal word (a cuMemcpy each look) between MPI progress calls
 *   enqueue  MPIX_Put_signal_enqueue (ADD 1) and MPIX_Win_signal_wait_enqueue on the
 *            stream, no host wait inside the loop (one stream synchronisation at the end)
 *   device   MPIX_Dev_put_signal + MPIX_Dev_flush + MPIX_Dev_signal_wait_until from the
 *            "kernel"; here a host thread runs gdr's __host__ __device__ device calls, so
 *            this way needs the simulated GPU in host-visible mode (a real GPU needs the
 *            calls in a CUDA kernel: test/device/dev_kernel_ring.cu shows how)
 * Each way again with notified RMA (issue 70) in place of the flag, -w host-notify,
 * enqueue-notify, device-notify: the halo goes by MPIX_Put_notify (MPIX_Put_notify_enqueue,
 * MPIX_Dev_put_notify's gdr_dev_put_notify) to notification counter 0 of the right
 * neighbour, and the rank waits on its own counter 0 (MPIX_Win_notify_get_value polled
 * between progress calls, MPIX_Win_notify_wait_enqueue, gdr_dev_notify_wait): no flush
 * before the notification, no second operation for the flag; the host way still
 * completes the Put locally (MPI_Win_flush_local) before its buffer is written again.
 * The "kernels" are stream memsets and copies (cuMemsetD8Async, cuMemcpyAsync).  host and
 * enqueue need MPIX streams, which need MPI_THREAD_SINGLE and MPIR_CVAR_CH4_RESERVE_VCIS=1
 * under gdr; device needs MPI_THREAD_MULTIPLE (gdr's progress thread serves the ring to
 * other nodes): so device runs apart.  The CUDA driver is the one gdr loads
 * (MPIR_CVAR_CH4_GDR_CUDA_DRIVER, default libcuda.so.1).
 * CSV on rank 0's stdout (bench/README.md columns), one row per way and size, 8 B to
 * MAX_BYTES (default 1 MiB) by factors of 8: halo_WAY,BYTES,us per iteration,MB/s,TOOL,p50.
 * A benchmark: it prints numbers and never judges them. */
#define _POSIX_C_SOURCE 200809L         /* getopt */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdr_cuda_test.h"
#include "gdr/gdr_rma_kernel_api.h"

#define REPS 5                          /* timed repetitions per size; p50 is their median */
enum { HALO = 64 };                     /* the halo's offset in the window; the signal at 0 */

static int rank, size, right;
static void *stream;
static uint64_t winmem, origin, scratch;
static MPI_Win win;
static MPIX_Stream mstream;

static void die(const char *what)
{
    fprintf(stderr, "halo: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CU(call_) do { if ((call_) != 0) die(#call_); } while (0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static void report(const char *way, size_t bytes, const char *tool, double *us)
{
    double mean = 0;
    for (int r = 0; r < REPS; r++)
        mean += us[r] / REPS;
    qsort(us, REPS, sizeof(double), cmp_double);
    double p50 = us[REPS / 2];
    if (rank == 0) {
        printf("halo_%s,%zu,%.3f,%.3f,%s,%.3f\n", way, bytes, mean, (double) bytes / p50, tool,
               p50);
        fflush(stdout);
    }
}

/* The stream done, MPI progressing meanwhile (gdr runs stream RMA in MPI calls here). */
static void stream_wait(void)
{
    int rc;
    while ((rc = cu.stream_query(stream)) == 600 /* CUDA_ERROR_NOT_READY */)
        MPIX_Stream_progress(mstream);
    if (rc != 0)
        die("cuStreamQuery");
}

/* Every rank's signal word and notification counter back to 0, with nothing in flight. */
static void reset_signal(void)
{
    uint64_t zero = 0;
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    CU(cu.copy(winmem, (uint64_t) (uintptr_t) &zero, 8));
    if (MPIX_Win_notify_set_value(win, 0, 0) != MPI_SUCCESS)
        die("MPIX_Win_notify_set_value");
    MPI_Barrier(MPI_COMM_WORLD);
}

static void iterate_host(size_t bytes, int iters)
{
    uint64_t one = 1, sig = 0;
    for (int i = 0; i < iters; i++) {
        CU(cu.memset_async(origin, (unsigned char) i, bytes, stream));
        CU(cu.stream_sync(stream));
        MPI_Put((void *) (uintptr_t) origin, (int) bytes, MPI_BYTE, right, HALO, (int) bytes,
                MPI_BYTE, win);
        MPI_Win_flush(right, win);
        MPI_Accumulate(&one, 1, MPI_UINT64_T, right, 0, 1, MPI_UINT64_T, MPI_SUM, win);
        MPI_Win_flush(right, win);
        for (;;) {
            CU(cu.copy((uint64_t) (uintptr_t) &sig, winmem, 8));
            if (sig >= (uint64_t) i + 1)
                break;
            MPI_Win_flush(rank, win);   /* progress: the left's accumulate lands here */
        }
        CU(cu.copy_async(scratch, winmem + HALO, bytes, stream));
    }
    CU(cu.stream_sync(stream));
}

static void iterate_host_notify(size_t bytes, int iters)
{
    MPI_Count seen = 0;
    for (int i = 0; i < iters; i++) {
        CU(cu.memset_async(origin, (unsigned char) i, bytes, stream));
        CU(cu.stream_sync(stream));
        if (MPIX_Put_notify((void *) (uintptr_t) origin, (int) bytes, MPI_BYTE, right, HALO,
                            (int) bytes, MPI_BYTE, 0, win) != MPI_SUCCESS)
            die("MPIX_Put_notify");
        MPI_Win_flush_local(right, win);
        for (;;) {
            if (MPIX_Win_notify_get_value(win, 0, &seen) != MPI_SUCCESS)
                die("MPIX_Win_notify_get_value");
            if (seen >= (MPI_Count) i + 1)
                break;
            MPI_Win_flush_local(rank, win);     /* progress */
        }
        CU(cu.copy_async(scratch, winmem + HALO, bytes, stream));
    }
    CU(cu.stream_sync(stream));
}

static void iterate_enqueue_notify(size_t bytes, int iters)
{
    for (int i = 0; i < iters; i++) {
        CU(cu.memset_async(origin, (unsigned char) i, bytes, stream));
        if (MPIX_Put_notify_enqueue((void *) (uintptr_t) origin, (int) bytes, MPI_BYTE, right,
                                    HALO, (int) bytes, MPI_BYTE, 0, win) != MPI_SUCCESS
            || MPIX_Win_notify_wait_enqueue(win, 0, (MPI_Count) i + 1) != MPI_SUCCESS)
            die("a notified enqueue call failed");
        CU(cu.copy_async(scratch, winmem + HALO, bytes, stream));
    }
    stream_wait();
}

static void iterate_enqueue(size_t bytes, int iters)
{
    for (int i = 0; i < iters; i++) {
        CU(cu.memset_async(origin, (unsigned char) i, bytes, stream));
        if (MPIX_Put_signal_enqueue((void *) (uintptr_t) origin, (int) bytes, MPI_BYTE, right,
                                    HALO, (int) bytes, MPI_BYTE, 0, 1, MPIX_SIGNAL_ADD, win)
            != MPI_SUCCESS
            || MPIX_Win_signal_wait_enqueue(win, 0, MPIX_CMP_GE, (uint64_t) i + 1) != MPI_SUCCESS)
            die("an enqueue call failed");
        CU(cu.copy_async(scratch, winmem + HALO, bytes, stream));
    }
    stream_wait();
}

typedef struct {
    const gdr_dev_win_t *w;
    size_t bytes;
    int iters, errors, notify;
} device_loop_t;

/* The "kernel" of the device way: a host thread making the device calls. */
static void *device_kernel(void *arg)
{
    device_loop_t *k = arg;
    uint64_t seen;
    int dev;
    void *ctx;
    if (cu.device_get(&dev, 0) != 0 || cu.ctx_retain(&ctx, dev) != 0 || cu.ctx_set(ctx) != 0) {
        k->errors++;
        return NULL;
    }
    for (int i = 0; i < k->iters; i++) {
        if (cu.memset_async(origin, (unsigned char) i, k->bytes, stream) != 0
            || cu.stream_sync(stream) != 0)
            k->errors++;
        if (k->notify) {
            /* (the flush: the origin buffer is written again next iteration) */
            k->errors += gdr_dev_put_notify(k->w, (const void *) (uintptr_t) origin, k->bytes,
                                            right, HALO, 0) != GDR_DEV_OK;
            k->errors += gdr_dev_flush(k->w, right) != GDR_DEV_OK;
            k->errors += gdr_dev_notify_wait(k->w, 0, (uint64_t) i + 1, &seen) != GDR_DEV_OK;
        } else {
            k->errors += gdr_dev_put_signal(k->w, (const void *) (uintptr_t) origin, k->bytes,
                                            right, HALO, 0, 1, GDR_SIGNAL_ADD) != GDR_DEV_OK;
            k->errors += gdr_dev_flush(k->w, right) != GDR_DEV_OK;
            k->errors += gdr_dev_signal_wait_until(k->w, 0, GDR_CMP_GE, (uint64_t) i + 1, &seen)
                != GDR_DEV_OK;
        }
        if (cu.copy_async(scratch, winmem + HALO, k->bytes, stream) != 0)
            k->errors++;
    }
    if (cu.stream_sync(stream) != 0)
        k->errors++;
    return NULL;
}

static void iterate_device(const gdr_dev_win_t *w, size_t bytes, int iters, int notify)
{
    device_loop_t k = {.w = w,.bytes = bytes,.iters = iters,.notify = notify };
    pthread_t t;
    if (pthread_create(&t, NULL, device_kernel, &k) != 0)
        die("pthread_create");
    pthread_join(t, NULL);
    if (k.errors != 0)
        die("a device call failed");
}

int main(int argc, char **argv)
{
    const char *tool = "gdr", *ways = "host,enqueue";
    size_t max_bytes = 1u << 20;
    int iters = 100, opt;
    while ((opt = getopt(argc, argv, "t:m:i:w:")) != -1) {
        if (opt == 't')
            tool = optarg;
        else if (opt == 'm')
            max_bytes = strtoull(optarg, NULL, 0);
        else if (opt == 'i')
            iters = atoi(optarg);
        else if (opt == 'w')
            ways = optarg;
        else {
            fprintf(stderr, "usage: halo -w host,enqueue,host-notify,enqueue-notify|"
                    "device,device-notify [-t TOOL] [-m MAX] [-i N]\n");
            return 2;
        }
    }
    int device_way = strncmp(ways, "device", 6) == 0, provided;
    MPI_Init_thread(&argc, &argv, device_way ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                    &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    if (cuda_open() != 0)
        die("no CUDA driver (MPIR_CVAR_CH4_GDR_CUDA_DRIVER)");
    if (device_way && provided != MPI_THREAD_MULTIPLE)
        die("the device way needs MPI_THREAD_MULTIPLE");
    CU(cu.stream_create(&stream, 1 /* CU_STREAM_NON_BLOCKING */));
    CU(cu.alloc(&winmem, HALO + max_bytes));
    CU(cu.alloc(&origin, max_bytes));
    CU(cu.alloc(&scratch, max_bytes));

    MPI_Comm comm = MPI_COMM_WORLD, scomm = MPI_COMM_NULL;
    if (!device_way) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "type", "cudaStream_t");
        MPIX_Info_set_hex(info, "value", &stream, sizeof(stream));
        if (MPIX_Stream_create(info, &mstream) != MPI_SUCCESS)
            die("MPIX_Stream_create (set MPIR_CVAR_CH4_RESERVE_VCIS=1)");
        MPI_Info_free(&info);
        MPIX_Stream_comm_create(MPI_COMM_WORLD, mstream, &scomm);
        comm = scomm;
    }
    MPI_Win_create((void *) (uintptr_t) winmem, (MPI_Aint) (HALO + max_bytes), 1, MPI_INFO_NULL,
                   comm, &win);
    if (MPIX_Win_notify_attach(win, 1, MPI_INFO_NULL) != MPI_SUCCESS)
        die("MPIX_Win_notify_attach");
    MPI_Win_lock_all(0, win);
    MPIX_Win_device dwin;
    if (device_way && MPIX_Win_get_device_handle(win, &dwin) != MPI_SUCCESS)
        die("MPIX_Win_get_device_handle");

    char list[64];
    snprintf(list, sizeof(list), "%s", ways);
    for (char *save = NULL, *way = strtok_r(list, ",", &save); way != NULL;
         way = strtok_r(NULL, ",", &save)) {
        for (size_t bytes = 8; bytes <= max_bytes; bytes *= 8) {
            double us[REPS];
            for (int r = 0; r < REPS; r++) {
                reset_signal();
                double t0 = MPI_Wtime();
                if (device_way != (strncmp(way, "device", 6) == 0))
                    die("ways: host, enqueue, host-notify, enqueue-notify, or device, "
                        "device-notify (apart: MPI_THREAD_MULTIPLE)");
                if (strcmp(way, "host") == 0)
                    iterate_host(bytes, iters);
                else if (strcmp(way, "enqueue") == 0)
                    iterate_enqueue(bytes, iters);
                else if (strcmp(way, "host-notify") == 0)
                    iterate_host_notify(bytes, iters);
                else if (strcmp(way, "enqueue-notify") == 0)
                    iterate_enqueue_notify(bytes, iters);
                else if (strcmp(way, "device") == 0 || strcmp(way, "device-notify") == 0)
                    iterate_device((const gdr_dev_win_t *) &dwin, bytes, iters,
                                   strcmp(way, "device-notify") == 0);
                else
                    die("ways: host, enqueue, host-notify, enqueue-notify, device, "
                        "device-notify");
                us[r] = (MPI_Wtime() - t0) * 1e6 / iters;
                MPI_Barrier(MPI_COMM_WORLD);
            }
            report(way, bytes, tool, us);
        }
    }
    if (device_way)
        MPIX_Win_free_device_handle(&dwin);
    MPI_Win_unlock_all(win);
    MPIX_Win_notify_detach(win);
    MPI_Win_free(&win);
    if (!device_way) {
        MPI_Comm_free(&scomm);
        MPIX_Stream_free(&mstream);
    }
    cu.free(scratch);
    cu.free(origin);
    cu.free(winmem);
    cu.stream_destroy(stream);
    MPI_Finalize();
    return 0;
}
