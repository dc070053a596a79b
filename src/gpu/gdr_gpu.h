/* The GPU layer (DESIGN.md section 2): one CUDA device, reached through the driver
 * loaded at run time.  Plain C11, no MPICH.
 *
 *   gdr_gpu.h          this context: open/close, threads, features, errors
 *   gdr_gpu_mem.h      what a pointer is (host or device, buffer id, range); allocation,
 *                      pinned and registered host memory, dmabuf export
 *   gdr_gpu_ipc.h      CUDA IPC handles of device memory, opened in another process
 *   gdr_gpu_stream.h   streams, events, async copies, stream memory operations
 *   gdr_gpu_module.h   kernel images, launches, the accumulate kernel
 *   gdr_gpu_driver.h   the driver's entry points (cuGetProcAddress), the probe
 *   gdr_gpu_cuda.h     the part of cuda.h's ABI gdr uses
 *
 * Every function returns 0 (or the documented count) on success, or a negative errno
 * value with one sentence in g->error: which CUDA call failed, its CUresult number and
 * text, and what to do.  Functions may be called from several threads at once; a thread
 * other than the one that opened the context calls gdr_gpu_bind_thread first.
 *
 * CUDA semantics callers rely on (true of the real driver and of test/gpusim):
 *   - a device pointer must never be dereferenced on the host: move data with
 *     gdr_gpu_copy*, which take any pointer (unified addressing);
 *   - a buffer id (gdr_gpu_mem_info_t) is unique within a process for its lifetime: a
 *     freed and re-allocated address gets a new id;
 *   - the current context is per thread and shared with the CUDA runtime: binding gdr's
 *     context on an application thread is what the runtime then uses on that thread. */
#ifndef GDR_GPU_H
#define GDR_GPU_H

#include <pthread.h>
#include "gdr_gpu_driver.h"

#define GDR_GPU_ERROR_LEN 320
#define GDR_GPU_MODULES_MAX 4
#define GDR_GPU_KERNELS_MAX 16
#define GDR_GPU_KERNEL_NAME_MAX 64

/* What this device and driver can do (both the entry points and the device attribute). */
enum {
    GDR_GPU_DMABUF = 1 << 0,    /* dmabuf export of device memory (ibv_reg_dmabuf_mr) */
    GDR_GPU_MEMOPS = 1 << 1,    /* 64-bit stream wait/write value */
    GDR_GPU_IPC = 1 << 2,       /* CUDA IPC handles */
    GDR_GPU_KERNELS = 1 << 3    /* module load and kernel launch */
};

/* Pass as device_ordinal: the device of the context current on the calling thread (the
 * one the application chose, e.g. with cudaSetDevice), else device 0. */
#define GDR_GPU_DEVICE_CURRENT (-1)

typedef struct gdr_gpu_kernel_slot {
    char name[GDR_GPU_KERNEL_NAME_MAX];
    gdr_cu_function_t fn;
} gdr_gpu_kernel_slot_t;

/* The layer's context: all of its state (no global state elsewhere). */
typedef struct gdr_gpu {
    gdr_gpu_driver_t drv;       /* entry points; drv.enabled, drv.why_off */
    int on;                     /* 1 between a successful gdr_gpu_open and gdr_gpu_close */
    int ordinal;                /* the device's ordinal among visible devices */
    gdr_cu_device_t device;
    gdr_cu_context_t ctx;       /* the device's primary context, retained while on */
    int cc_major, cc_minor;     /* compute capability */
    char busid[32];             /* PCI bus id, "dddd:bb:dd.f" */
    unsigned features;          /* GDR_GPU_*: what this device and driver can do */
    char features_off[320];     /* why each feature not in `features` is off ("" if none) */
    pthread_mutex_t lock;       /* guards modules, kernels and error */
    gdr_cu_module_t modules[GDR_GPU_MODULES_MAX];
    int n_modules;
    gdr_gpu_kernel_slot_t kernels[GDR_GPU_KERNELS_MAX];    /* functions looked up */
    int n_kernels;
    char error[GDR_GPU_ERROR_LEN];     /* the last failure of any thread, one sentence */
} gdr_gpu_t;

/* Probes the driver at `driver_path` (NULL: libcuda.so.1; a path such as the simulated
 * GPU's libgdr_gpusim.so loads that file), retains device `device_ordinal`'s primary
 * context (GDR_GPU_DEVICE_CURRENT: see above) and makes it current on the calling thread.
 * 0: GPU support is on (g->on), g->features says what works.  Negative (-ENODEV when the
 * machine has no usable GPU or driver, which is normal): off, with the reason in g->error.
 * Never crashes on a missing or broken driver; gdr_gpu_close is valid after any outcome. */
int gdr_gpu_open(gdr_gpu_t *g, const char *driver_path, int device_ordinal);

/* Unloads modules, releases the primary context and the driver.  The caller has destroyed
 * its streams and events and freed its memory.  Safe on a zeroed or failed context. */
void gdr_gpu_close(gdr_gpu_t *g);

/* Makes g's context current on the calling thread (needed once per thread that calls
 * this layer, other than the opener).  0 or negative with g->error. */
int gdr_gpu_bind_thread(gdr_gpu_t *g);

/* One line for the log: device, bus id, compute capability, driver, features on and off
 * with reasons (NCCL-style: users debug GPUDirect by reading it). */
void gdr_gpu_describe(const gdr_gpu_t *g, char *buf, size_t len);

#endif /* GDR_GPU_H */
