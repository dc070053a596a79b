/* GPU support at start-up: the CUDA driver gdr loads (src/gpu), and how the NIC reaches
 * GPU memory, decided once by trying it (NCCL-style: the start-up line says what was
 * chosen and why).  MPICH's own CUDA code (MPL, yaksa) is separate: it uses the CUDA
 * runtime and the real driver only. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_module.h"
#include "gpu/gdr_gpu_kernels_image.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH4_GDR_CUDA_DRIVER
      category    : CH4_GDR
      type        : string
      default     : ""
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        The CUDA driver library gdr loads at run time. Empty (the default):
        libcuda.so.1 from the library path. A path loads that file instead;
        gdr's tests name the simulated GPU (test/gpusim/libgdr_gpusim.so) here.
        MPICH's own CUDA support (MPIX_Query_cuda_support) always uses the
        real driver.

    - name        : MPIR_CVAR_CH4_GDR_GPUDIRECT
      category    : CH4_GDR
      type        : string
      default     : "auto"
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        How the RDMA NIC reaches GPU memory. auto (the default): the first of
        dmabuf, peermem that registers device memory here, else staged. dmabuf:
        the CUDA driver exports device memory as a dmabuf and the NIC registers
        it (ibv_reg_dmabuf_mr; needs a driver and a kernel with dmabuf support,
        no extra module). peermem: ibv_reg_mr on device addresses (the
        nvidia-peermem kernel module). staged: the NIC never touches GPU
        memory; device data goes as messages. off: gdr does not open the GPU
        (device data still goes as MPICH messages). Forcing a mode that does
        not work here makes MPI_Init fail with the missing piece.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

#define PROBE_BYTES (64 * 1024)

const char *MPIDI_GDR_gpudirect_name(int mode)
{
    switch (mode) {
        case MPIDI_GDR_GPUDIRECT_STAGED:
            return "staged";
        case MPIDI_GDR_GPUDIRECT_PEERMEM:
            return "peermem";
        case MPIDI_GDR_GPUDIRECT_DMABUF:
            return "dmabuf";
        default:
            return "off";
    }
}

/* The verbs layer's dmabuf source in dmabuf mode: device memory as a dmabuf of the pages
 * of its allocation, host memory by address. */
static int dmabuf_source(void *ctx, const void *asked, void **addr, size_t *len, int *fd,
                         uint64_t *offset)
{
    int rc = gdr_gpu_dmabuf_export_around(ctx, asked, addr, len, fd, offset);
    if (rc < 0)
        errno = -rc;
    return rc < 0 ? -1 : rc;
}

/* Registers a small device allocation as a dmabuf: 0 when the NIC takes one. */
static int try_dmabuf(char *why, size_t why_len)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    void *p = NULL;
    int fd = -1, rc = -1;
    uint64_t offset = 0;
    if (!(g->features & GDR_GPU_DMABUF)) {
        snprintf(why, why_len, "the CUDA driver exports no dmabuf here (%s)", g->features_off);
        return -1;
    }
    if (gdr_gpu_mem_alloc(g, PROBE_BYTES, &p) != 0) {
        snprintf(why, why_len, "%s", g->error);
        return -1;
    }
    if (gdr_gpu_dmabuf_export(g, p, PROBE_BYTES, &fd, &offset) != 0)
        snprintf(why, why_len, "%s", g->error);
    else
        rc = gdr_verbs_device_try_reg(&MPIDI_GDR_global.device, p, PROBE_BYTES, fd, offset, why,
                                      why_len);
    if (fd >= 0)
        close(fd);
    (void) gdr_gpu_mem_free(g, p);
    return rc;
}

/* Registers a small device allocation by address: 0 when the NIC takes GPU memory. */
static int try_peermem(char *why, size_t why_len)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    void *p = NULL;
    if (gdr_gpu_mem_alloc(g, PROBE_BYTES, &p) != 0) {
        snprintf(why, why_len, "%s", g->error);
        return -1;
    }
    int rc = gdr_verbs_device_try_reg(&MPIDI_GDR_global.device, p, PROBE_BYTES, -1, 0, why,
                                      why_len);
    (void) gdr_gpu_mem_free(g, p);
    return rc;
}

/* The mode asked for, and the sentence the start-up line prints.  Errors only for a
 * forced mode that cannot work. */
static int choose_mode(void)
{
    int mpi_errno = MPI_SUCCESS;
    const char *want = MPIR_CVAR_CH4_GDR_GPUDIRECT;
    char *why = MPIDI_GDR_global.gpudirect_why, no_dmabuf[200] = "", no_peermem[200] = "";
    size_t why_len = sizeof(MPIDI_GDR_global.gpudirect_why);
    int forced = strcmp(want, "auto") != 0;

    MPIDI_GDR_global.gpudirect = MPIDI_GDR_GPUDIRECT_OFF;
    if (strcmp(want, "off") == 0) {
        snprintf(why, why_len, "MPIR_CVAR_CH4_GDR_GPUDIRECT=off");
        goto fn_exit;
    }
    MPIR_ERR_CHKANDJUMP1(forced && strcmp(want, "peermem") != 0 && strcmp(want, "staged") != 0
                         && strcmp(want, "dmabuf") != 0, mpi_errno, MPI_ERR_OTHER,
                         "**gdr_gpudirect", "**gdr_gpudirect %s",
                         "MPIR_CVAR_CH4_GDR_GPUDIRECT must be auto, peermem, staged, dmabuf or off");
    if (!MPIDI_GDR_global.gpu.on) {
        MPIR_ERR_CHKANDJUMP1(forced, mpi_errno, MPI_ERR_OTHER, "**gdr_gpudirect",
                             "**gdr_gpudirect %s", MPIDI_GDR_global.gpu.error);
        snprintf(why, why_len, "no GPU");
        goto fn_exit;
    }
    if (strcmp(want, "staged") == 0) {
        MPIDI_GDR_global.gpudirect = MPIDI_GDR_GPUDIRECT_STAGED;
        snprintf(why, why_len, "MPIR_CVAR_CH4_GDR_GPUDIRECT=staged");
        goto fn_exit;
    }
    /* dmabuf first: current drivers offer it and it needs no extra kernel module */
    if (!MPIDI_GDR_global.have_device) {
        snprintf(no_dmabuf, sizeof(no_dmabuf), "no RDMA device");
        snprintf(no_peermem, sizeof(no_peermem), "no RDMA device");
    } else if (strcmp(want, "peermem") != 0 && try_dmabuf(no_dmabuf, sizeof(no_dmabuf)) == 0) {
        MPIDI_GDR_global.gpudirect = MPIDI_GDR_GPUDIRECT_DMABUF;
        MPIDI_GDR_global.device.dmabuf_source = dmabuf_source;
        MPIDI_GDR_global.device.dmabuf_ctx = &MPIDI_GDR_global.gpu;
        snprintf(why, why_len, "%s registers the driver's dmabufs", MPIDI_GDR_global.device.name);
        goto fn_exit;
    }
    MPIR_ERR_CHKANDJUMP2(strcmp(want, "dmabuf") == 0, mpi_errno, MPI_ERR_OTHER,
                         "**gdr_gpudirect_dmabuf", "**gdr_gpudirect_dmabuf %s %s", no_dmabuf,
                         "use a CUDA driver and kernel with dmabuf support, or set "
                         "MPIR_CVAR_CH4_GDR_GPUDIRECT=peermem, staged or auto");
    if (MPIDI_GDR_global.have_device && try_peermem(no_peermem, sizeof(no_peermem)) == 0) {
        MPIDI_GDR_global.gpudirect = MPIDI_GDR_GPUDIRECT_PEERMEM;
        snprintf(why, why_len, "%s takes device addresses", MPIDI_GDR_global.device.name);
        goto fn_exit;
    }
    MPIR_ERR_CHKANDJUMP2(forced, mpi_errno, MPI_ERR_OTHER, "**gdr_gpudirect_peermem",
                         "**gdr_gpudirect_peermem %s %s", no_peermem,
                         "load the nvidia-peermem kernel module, or set "
                         "MPIR_CVAR_CH4_GDR_GPUDIRECT=staged or auto");
    MPIDI_GDR_global.gpudirect = MPIDI_GDR_GPUDIRECT_STAGED;
    snprintf(why, why_len, "dmabuf unavailable: %s; peermem unavailable: %s", no_dmabuf,
             no_peermem);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_GDR_gpu_start(void)
{
    const char *path = MPIR_CVAR_CH4_GDR_CUDA_DRIVER[0] != '\0' ? MPIR_CVAR_CH4_GDR_CUDA_DRIVER
        : NULL;
    if (strcmp(MPIR_CVAR_CH4_GDR_GPUDIRECT, "off") == 0) {
        snprintf(MPIDI_GDR_global.gpu.error, sizeof(MPIDI_GDR_global.gpu.error),
                 "MPIR_CVAR_CH4_GDR_GPUDIRECT=off");
        return MPI_SUCCESS;
    }
    /* off is normal (no driver, no device): the reason stays in gpu.error */
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    if (gdr_gpu_open(g, path, GDR_GPU_DEVICE_CURRENT) != 0 || !(g->features & GDR_GPU_KERNELS))
        return MPI_SUCCESS;
    /* the RMA engine's view of it (the staged protocol, the ipc transport) */
    gdr_gpu_rma_device_init(&MPIDI_GDR_global.gpu_device, g, &MPIDI_GDR_global.device_seam);
    /* gdr's kernels on the device now: loaded lazily at a first launch made while a stream
     * of the application waits for gdr (enqueued RMA), they would never load */
    static const char *const kernels[] = {
        GDR_GPU_ACC_KERNEL, GDR_GPU_SIGNAL_ADD_KERNEL, GDR_GPU_SIGNAL_WAIT_KERNEL,
        GDR_GPU_COPY_KERNEL
    };
    if (gdr_gpu_kernels_load_now(g, kernels, (int) (sizeof(kernels) / sizeof(kernels[0])),
                                 gdr_gpu_kernels_image, gdr_gpu_kernels_image_size) != 0
        && MPIR_CVAR_CH4_GDR_VERBOSE > 0)
        fprintf(stderr, "gdr[%d]: gdr's kernels not loaded at start-up (%s); each loads at "
                "its first use\n", MPIR_Process.rank, g->error);
    return MPI_SUCCESS;
}

int MPIDI_GDR_gpudirect_start(void)
{
    return choose_mode();
}

void MPIDI_GDR_gpu_stop(void)
{
    if (MPIDI_GDR_global.gpu.on) {
        MPIDI_GDR_msg_device_free();
        gdr_gpu_rma_device_fini(&MPIDI_GDR_global.gpu_device);
    }
    gdr_gpu_close(&MPIDI_GDR_global.gpu);
}

uint64_t MPIDI_GDR_gpu_buffer_id(const void *p)
{
    gdr_gpu_mem_info_t info;
    if (p == NULL)
        return 0;
    if (!MPIDI_GDR_global.gpu.on)       /* gdr's GPU is off: MPICH's view, if it has one */
        return MPIR_GPU_query_pointer_is_dev(p) ? UINT64_MAX : 0;
    if (gdr_gpu_mem_query(&MPIDI_GDR_global.gpu, p, &info) != 0 || !info.is_device
        || info.is_managed)
        return 0;
    return info.buffer_id != 0 ? info.buffer_id : UINT64_MAX;
}

int MPIDI_GDR_nic_takes_gpu_memory(void)
{
    return MPIDI_GDR_global.gpudirect == MPIDI_GDR_GPUDIRECT_PEERMEM
        || MPIDI_GDR_global.gpudirect == MPIDI_GDR_GPUDIRECT_DMABUF;
}

unsigned MPIDI_GDR_gpu_expose_flags(const void *base)
{
    unsigned expose = 0;
    if (MPIDI_GDR_gpu_buffer_id(base) != 0)
        expose |= GDR_RMA_EXPOSE_IS_DEVICE;
    if (MPIDI_GDR_nic_takes_gpu_memory())
        expose |= GDR_RMA_EXPOSE_DEVICE_OK;
    if (MPIDI_GDR_global.gpu.on)
        expose |= GDR_RMA_EXPOSE_GPU;
    return expose;
}
