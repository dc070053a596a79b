/* gdr's context and its per-window state, as the glue in this directory sees them.
 * gdr_pre.h, which all of MPICH includes, only points to these, and only gdr's own files
 * include this header (through gdr_internal.h), so that editing it or a header of the
 * plain layers recompiles gdr's files alone, never the rest of MPICH. */
#ifndef GDR_CONTEXT_H_INCLUDED
#define GDR_CONTEXT_H_INCLUDED

#include <pthread.h>
#include "verbs/gdr_verbs_device.h"
#include "verbs/gdr_verbs_am.h"
#include "verbs/gdr_verbs_rma.h"
#include "rma/gdr_rma_win.h"
#include "gpu/gdr_gpu.h"
#include "gpu/gdr_gpu_ipc.h"
#include "adapt/gdr_gpu_rma_device.h"
#include "gdr_msg_pipe.h"

struct gdr_rma_staged;             /* the staged protocol (rma/gdr_rma_staged.h) */
struct gdr_rma_staged_win;

/* How the NIC reaches GPU memory (MPIR_CVAR_CH4_GDR_GPUDIRECT), chosen once at init. */
typedef enum {
    MPIDI_GDR_GPUDIRECT_OFF,        /* GPU support off: no driver, no device, or asked */
    MPIDI_GDR_GPUDIRECT_STAGED,     /* the NIC cannot: device data goes by message */
    MPIDI_GDR_GPUDIRECT_PEERMEM,    /* ibv_reg_mr on device addresses (nvidia-peermem) */
    MPIDI_GDR_GPUDIRECT_DMABUF      /* ibv_reg_dmabuf_mr on exported device memory */
} MPIDI_GDR_gpudirect_t;

/* All gdr state of a process: MPIDI_global.nm.gdr.ctx points to it (MPIDI_GDR_global),
 * from MPIDI_GDR_init_local to the end of MPIDI_GDR_mpi_finalize_hook. */
struct MPIDI_GDR_context {
    int have_device;            /* a verbs device is open */
    gdr_verbs_device_t device;
    char no_device_why[256];    /* why not, when !have_device */
    gdr_gpu_t gpu;              /* the GPU layer: gpu.on, else gpu.error says why not */
    MPIDI_GDR_gpudirect_t gpudirect;
    char gpudirect_why[512];    /* how the mode was chosen, for the start-up line */
    gdr_verbs_iface_t *am;         /* AM channel to ranks on other nodes; NULL: none */
    gdr_verbs_am_stats_t am_stats_kept; /* the channel's counters after it is gone (MPI_T) */
    gdr_verbs_rcache_stats_t reg_cache_stats_kept;      /* its registration cache's */
    uint8_t *world_vcis;        /* [world size]: each rank's VCIs, from the cards; NULL: none */
    /* processes of other jobs (gdr_spawn.c) */
    uint8_t *world_cards;       /* every rank's card as published (world_card_stride apart;
                                 * all zero: that rank has no channel), or NULL: none */
    size_t world_card_stride;
    uint64_t job;               /* this job's identity (MPIDI_GDR_job_id); 0: no channel */
    char no_channel_why[256];   /* why am is NULL, when it is */
    struct MPIDI_GDR_lpid_peer *lpid_peers;     /* lpid -> channel peer, open addressing */
    uint32_t lpid_peers_cap, lpid_peers_used;
    struct MPIDI_GDR_dynmsg *dyn_head; /* dynamic-process messages not yet taken, in order */
    gdr_verbs_rma_t *rma;       /* one-sided operations on the channel's QPs */
    gdr_rma_engine_t engine;    /* the RMA engine over rma (its counters are MPI_T pvars) */
    int have_engine;            /* engine.net is set: rma exists */
    int engine_errno;           /* the MPI error behind the engine's GDR_RMA_HOST_ERROR */
    int am_errno;               /* first MPI error raised inside a channel callback */
    unsigned long long am_packed_bytes; /* message bytes packed into host buffers (MPI_T) */
    unsigned long long am_device_copied_bytes;  /* message bytes gdr's GPU copy moved (MPI_T) */
    unsigned long long am_sends_immediate;      /* sends with no MPIDIG request (MPI_T) */
    MPIDI_GDR_msg_pipe_t pipe;  /* messages through pinned chunks (gdr_msg_pipe.c) */
    struct MPIDI_GDR_msg_device {       /* whole device messages packed (gdr_msg_device.c) */
        void *scratch;          /* device memory, MPIDI_GDR_MSG_SCRATCH bytes; NULL: none yet */
        gdr_gpu_stream_t queue;
    } msg_device;
    MPI_Aint send_eager_max;    /* payload bytes of an immediate send (MPIDI_GDR_send_eager);
                                 * -1: none (no channel) */
    unsigned empty_polls;       /* consecutive progress calls that found nothing */
    /* the progress guard (gdr_progress.c): MPICH's calls of MPIDI_NM_progress, and as the
     * guard last saw them; whether it is running; rounds it ran because MPICH skipped
     * gdr (MPI_T) */
    unsigned nm_passes, guard_seen;
    int guard_running;
    unsigned long long guard_rounds;
    int region_query_handler;   /* dynamic windows' region lookup (gdr_win_dynamic.c) */
    int region_reply_handler;
    unsigned long long region_queries;  /* questions asked (an MPI_T pvar) */
    /* the staged protocol for device memory (gdr_rma_staged.c); NULL: off */
    struct gdr_rma_staged *staged;
    int staged_handler;
    gdr_gpu_rma_device_t gpu_device;    /* the engine's device seam over gpu (while gpu.on) */
    gdr_rma_device_t device_seam;
    unsigned long long staged_count[GDR_RMA_KINDS];     /* MPI_T */
    unsigned long long local_count[GDR_RMA_KINDS];      /* MPI_T: same-node device path */
    unsigned long long local_kernel_copies;     /* MPI_T: of those, by the copy kernel */
    unsigned long long peer_windows_mapped;     /* MPI_T: CUDA IPC mappings of same-node
                                                 * windows (gdr_peer_map.c) */
    /* windows with a stream queue or a device handle, for progress (gdr_triggered.c) */
    struct MPIDI_GDR_win_state *triggered;
    int triggered_progressing;  /* their progress is running: not re-entered */
    int thread_running;         /* the progress thread of MPIR_CVAR_CH4_GDR_ENQUEUE_PROGRESS */
    int thread_stop;
    pthread_t thread;
    uint32_t device_handles;    /* device handles made (their numbers, gdr_device_win.c) */
    /* windows with notification counters (gdr_notify.c), for progress */
    struct MPIDI_GDR_notify *notify;
    int notify_progressing;     /* their progress is running: not re-entered */
};

/* Per window (MPIDI_GDR_win_t points to it from the window's first gdr hook to its free
 * hook): the engine's registry (every target's size, unit, base, key and peer; operations
 * in flight; dynamic windows' regions) and the parts of the protocols that use it. */
/* A rank of this node whose window is device memory, as the card exchange told it: what
 * maps that memory here (CUDA IPC) when a same-node path first needs it. */
struct MPIDI_GDR_peer_ipc {
    gdr_gpu_ipc_handle_t h;
    uint64_t size, disp_unit;
    int ok;                     /* h is valid: same node, device memory, IPC on both sides */
};

struct MPIDI_GDR_win_state {
    gdr_rma_win_t rma;
    struct MPIDI_GDR_peer_ipc *peer_ipc;        /* per rank (gdr_win.c), or NULL: none */
    struct MPIDI_GDR_peer_maps *maps;   /* their windows as mapped here (gdr_peer_map.c) */
    struct gdr_rma_staged_win *staged;     /* the staged protocol's part, or NULL */
    struct MPIDI_GDR_enqueue *enqueue;  /* stream-ordered RMA (gdr_enqueue.c), or NULL */
    struct MPIDI_GDR_device_win *device;        /* kernel-triggered RMA (gdr_device_win.c) */
    struct MPIDI_GDR_ipc_win *ipc;    /* same-node device path (gdr_rma_ipc.c), or NULL */
    struct MPIDI_GDR_notify *notify;    /* notification counters (gdr_notify.c), or NULL */
    struct gdr_dev_notify *kernel_counters;     /* host-pinned, the device handle's view of
                                                 * them (made by gdr_device_win.c, kept by
                                                 * gdr_notify.c), or NULL: no handle */
    struct MPIR_Win *win;       /* the window (set with enqueue or device) */
    int native_active;          /* fence and PSCW through control blocks (gdr_win_sync.c) */
    struct MPIDI_GDR_win_state *next_triggered; /* in MPIDI_GDR_global.triggered */
};

#endif /* GDR_CONTEXT_H_INCLUDED */
