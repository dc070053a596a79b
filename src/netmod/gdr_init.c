/* gdr netmod: start-up and shutdown.
 *
 * A job whose ranks are all on one node runs through MPICH's shm module; gdr then
 * only owns the verbs device (if any) and the GPU probe.  Ranks on other nodes (all
 * of them with MPIR_CVAR_NOLOCAL=1) are reached through the verbs AM channel,
 * connected when MPI_COMM_WORLD is committed (gdr_comm.c, gdr_am.c). */
#include "gdr_triggered.h"
#include "gdr_internal.h"
#include "gdr_noinline.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

categories :
    - name        : CH4_GDR
      description : gdr netmod (RDMA verbs and GPUDirect RMA) control variables

cvars:
    - name        : MPIR_CVAR_CH4_GDR_DEVICE
      category    : CH4_GDR
      type        : string
      default     : ""
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Name of the RDMA verbs device gdr uses (as listed by ibv_devices, e.g.
        mlx5_0 or rxe0). Empty (the default): the device closest to the rank in
        the hwloc topology with an ACTIVE port. Naming a device that is missing
        or down makes MPI_Init fail with the reason.

    - name        : MPIR_CVAR_CH4_GDR_VERBOSE
      category    : CH4_GDR
      type        : int
      default     : 0
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        1: rank 0 prints one line at MPI_Init saying which RDMA device gdr uses
        and whether GPU support is on (and if not, why). 2: every rank prints it,
        and its message-channel counters at MPI_Finalize.

    - name        : MPIR_CVAR_CH4_GDR_GID_INDEX
      category    : CH4_GDR
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        RoCE: the GID table index to send from.  -1 (the default): a RoCE v2
        GID with an IPv4 address if there is one, else another RoCE v2 GID,
        else RoCE v1.  Ignored on InfiniBand.

    - name        : MPIR_CVAR_CH4_GDR_RECV_DEPTH
      category    : CH4_GDR
      type        : int
      default     : 32
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Eager messages (16.5 KiB buffers) a rank may have in flight to one peer
        before it waits for credits.  The shared receive queue grows by this
        many buffers for each rank that connects, up to
        MPIR_CVAR_CH4_GDR_SRQ_DEPTH.

    - name        : MPIR_CVAR_CH4_GDR_SRQ_DEPTH
      category    : CH4_GDR
      type        : int
      default     : 1024
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Most receive buffers (16.5 KiB each, pinned) in a rank's shared receive
        queue, whatever the number of peers: 16.5 MiB at 1024.  Past it, peers
        that send at once are paced by the NIC's receiver-not-ready retries
        instead of more memory.

    - name        : MPIR_CVAR_CH4_GDR_LAZY_CONNECT
      category    : CH4_GDR
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Make a rank's queue pair to another rank the first time either sends
        to the other (a handshake over a UD queue pair), so ranks that never
        talk hold nothing for each other.  false: connect every pair of ranks
        on different nodes in MPI_Init.

    - name        : MPIR_CVAR_CH4_GDR_CONNECT_TIMEOUT
      category    : CH4_GDR
      type        : int
      default     : 300
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Seconds a rank waits for another to answer its connection request
        before it fails that connection.  The other rank answers from inside
        any MPI call: raise this if ranks compute longer than that without
        calling MPI while a peer first sends to them.  0: wait for ever.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

static void log_start_line(void)
{
    if (MPIR_CVAR_CH4_GDR_VERBOSE <= 0 || (MPIR_CVAR_CH4_GDR_VERBOSE == 1 && MPIR_Process.rank != 0))
        return;

    char dev[160], gpu[800];
    if (MPIDI_GDR_global.have_device) {
        const gdr_verbs_device_t *d = &MPIDI_GDR_global.device;
        snprintf(dev, sizeof(dev), "verbs device %s port %u (%s)", d->name, (unsigned) d->port_num,
                 d->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand");
    } else {
        snprintf(dev, sizeof(dev), "no verbs device (%s)", MPIDI_GDR_global.no_device_why);
    }
    if (MPIDI_GDR_global.gpu.on) {
        char desc[400];
        gdr_gpu_describe(&MPIDI_GDR_global.gpu, desc, sizeof(desc));
        snprintf(gpu, sizeof(gpu), "GPU support on: %s; GPUDirect %s (%s)", desc,
                 MPIDI_GDR_gpudirect_name(MPIDI_GDR_global.gpudirect),
                 MPIDI_GDR_global.gpudirect_why);
    } else {
        snprintf(gpu, sizeof(gpu), "%s", MPIDI_GDR_global.gpu.error);
    }
    fprintf(stderr, "gdr[%d]: %s; %s\n", MPIR_Process.rank, dev, gpu);
}

int MPIDI_GDR_init_local(int *tag_bits)
{
    int mpi_errno = MPI_SUCCESS;
    char why[sizeof(MPIDI_GDR_global.no_device_why)];
    gdr_verbs_status_t vs;

    /* allocated once, kept after finalize: MPI_T may still read the counters in it */
    if (MPIDI_global.nm.gdr.ctx == NULL)
        MPIDI_global.nm.gdr.ctx = MPL_malloc(sizeof(MPIDI_GDR_global), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP1(MPIDI_global.nm.gdr.ctx == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem",
                         "**nomem %s", "gdr's context");
    memset(&MPIDI_GDR_global, 0, sizeof(MPIDI_GDR_global));
    MPIDI_GDR_global.send_eager_max = -1;       /* no immediate sends until the channel is up */
    *tag_bits = MPIR_TAG_BITS_DEFAULT;
    MPIDI_GDR_rma_register_pvars();
    MPIDI_GDR_am_register_pvars();
    MPIDI_GDR_pipe_register_pvars();
    MPIDI_GDR_progress_register_pvars();
    mpi_errno = MPIDI_GDR_dynamic_register_handlers();
    MPIR_ERR_CHECK(mpi_errno);
    MPIDI_GDR_staged_register_pvars();
    MPIDI_GDR_ipc_register_pvars();
    MPIDI_GDR_peer_maps_register_pvars();
    mpi_errno = MPIDI_GDR_staged_register_handler();
    MPIR_ERR_CHECK(mpi_errno);

    mpi_errno = MPIDI_GDR_gpu_start();
    MPIR_ERR_CHECK(mpi_errno);

    /* the HCA nearest the rank's GPU when it has one */
    const char *near = MPIDI_GDR_global.gpu.on && MPIDI_GDR_global.gpu.busid[0] != '\0' ?
        MPIDI_GDR_global.gpu.busid : NULL;
    why[0] = '\0';
    vs = gdr_verbs_device_open(&MPIDI_GDR_global.device, MPIR_CVAR_CH4_GDR_DEVICE, near, why,
                               sizeof(why));
    MPIR_ERR_CHKANDJUMP1(vs == GDR_VERBS_ERROR, mpi_errno, MPI_ERR_OTHER, "**gdr_device",
                         "**gdr_device %s", why);
    MPIDI_GDR_global.have_device = (vs == GDR_VERBS_OK);
    if (!MPIDI_GDR_global.have_device)
        snprintf(MPIDI_GDR_global.no_device_why, sizeof(MPIDI_GDR_global.no_device_why), "%s",
                 why);

    mpi_errno = MPIDI_GDR_gpudirect_start();
    MPIR_ERR_CHECK(mpi_errno);
    log_start_line();

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_GDR_mpi_finalize_hook(void)
{
    MPIDI_GDR_progress_guard_stop();
    MPIDI_GDR_staged_stop();
    MPIDI_GDR_rma_engine_stop();
    int mpi_errno = MPIDI_GDR_am_stop();
    if (MPIDI_GDR_global.have_device)
        gdr_verbs_device_close(&MPIDI_GDR_global.device);
    MPIDI_GDR_triggered_stop();
    MPIDI_GDR_gpu_stop();
    memset(&MPIDI_GDR_global, 0, sizeof(MPIDI_GDR_global));
    MPIDI_GDR_global.send_eager_max = -1;
    return mpi_errno;
}
