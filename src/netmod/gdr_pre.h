/* gdr netmod: the types CH4 embeds in its own objects (requests, comms, windows,
 * address vector entries) and gdr's one context struct.  Included by all of MPICH
 * through netmodpre.h, so keep it light. */
#ifndef GDR_PRE_H_INCLUDED
#define GDR_PRE_H_INCLUDED

#include "verbs/gdr_verbs_device.h"
#include "verbs/gdr_verbs_am.h"
#include "verbs/gdr_verbs_rma.h"
#include "rma/gdr_rma_win.h"
#include "gpu/gdr_gpu.h"
#include "gpu/gdr_gpu_rma_device.h"

struct gdr_rma_dev;             /* the staged protocol (rma/gdr_rma_dev.h) */
struct gdr_rma_dev_win;

/* gdr connects every rank of the job once, when MPI_COMM_WORLD is committed (its
 * BOOTSTRAP commit): communicators made from sessions' process groups are then built
 * from the world, as with ch3, instead of bootstrapping a channel per group. */
#define MPID_SESSION_USE_WORLD 1

/* How the NIC reaches GPU memory (MPIR_CVAR_CH4_GDR_GPUDIRECT), chosen once at init. */
typedef enum {
    MPIDI_GDR_GPUDIRECT_OFF,        /* GPU support off: no driver, no device, or asked */
    MPIDI_GDR_GPUDIRECT_STAGED,     /* the NIC cannot: device data goes by message */
    MPIDI_GDR_GPUDIRECT_PEERMEM,    /* ibv_reg_mr on device addresses (nvidia-peermem) */
    MPIDI_GDR_GPUDIRECT_DMABUF      /* ibv_reg_dmabuf_mr on exported device memory */
} MPIDI_GDR_gpudirect_t;

/* All gdr state of a process; lives in MPIDI_global.nm.gdr (see MPIDI_GDR_global). */
typedef struct {
    int have_device;            /* a verbs device is open */
    gdr_verbs_device_t device;
    char no_device_why[256];    /* why not, when !have_device */
    gdr_gpu_t gpu;              /* the GPU layer: gpu.on, else gpu.error says why not */
    MPIDI_GDR_gpudirect_t gpudirect;
    char gpudirect_why[256];    /* how the mode was chosen, for the start-up line */
    gdr_verbs_am_t *am;         /* AM channel to ranks on other nodes; NULL: none */
    gdr_verbs_rma_t *rma;       /* one-sided operations on the channel's QPs */
    gdr_rma_engine_t engine;    /* the RMA engine over rma (its counters are MPI_T pvars) */
    int have_engine;            /* engine.net is set: rma exists */
    int engine_errno;           /* the MPI error behind the engine's GDR_RMA_HOST_ERROR */
    int am_errno;               /* first MPI error raised inside a channel callback */
    unsigned empty_polls;       /* consecutive progress calls that found nothing */
    int region_query_handler;   /* dynamic windows' region lookup (gdr_win_dynamic.c) */
    int region_reply_handler;
    /* the staged protocol for device memory (gdr_rma_staged.c); NULL: off */
    struct gdr_rma_dev *staged;
    int staged_handler;
    gdr_gpu_rma_device_t gpu_device;    /* its device seam over gpu */
    gdr_rma_device_t device_seam;
    unsigned long long staged_count[GDR_RMA_KINDS];     /* MPI_T */
} MPIDI_GDR_Global_t;

typedef struct {
    int handler_id;             /* for the origin callback when the send completes */
    void *pack_buf;             /* packed payload of a non-contiguous or GPU send */
} MPIDI_GDR_am_request_t;

typedef struct {
    int unused;
} MPIDI_GDR_request_t;

typedef struct {
    int unused;
} MPIDI_GDR_comm_t;

typedef struct {
    int unused;
} MPIDI_GDR_dt_t;

typedef struct {
    int unused;
} MPIDI_GDR_op_t;

/* Per window: the engine's registry (every target's size, unit, base, key and peer;
 * operations in flight; dynamic windows' regions). */
typedef struct {
    gdr_rma_win_t rma;
    struct gdr_rma_dev_win *staged;     /* the staged protocol's part, or NULL */
} MPIDI_GDR_win_t;

/* Called by CH4 (maint/patches 0004) before every RMA operation is dispatched to
 * the shm module or to this netmod: MPI_ERR_RMA_RANGE when the target range
 * [disp*unit + lb, + span) is not inside the target's window. */
struct MPIR_Win;
int MPIDI_GDR_rma_check_target(struct MPIR_Win *win, int target_rank, MPI_Aint target_disp,
                               MPI_Aint target_count, MPI_Datatype target_datatype);

typedef struct {
    int unused;
} MPIDI_GDR_addr_t;

typedef struct {
    int unused;
} MPIDI_GDR_part_t;

#endif /* GDR_PRE_H_INCLUDED */
