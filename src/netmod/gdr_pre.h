/* gdr netmod: the types CH4 embeds in its own objects (requests, comms, windows,
 * address vector entries) and gdr's one context struct.  Included by all of MPICH
 * through netmodpre.h, so keep it light. */
#ifndef GDR_PRE_H_INCLUDED
#define GDR_PRE_H_INCLUDED

#include "verbs/gdr_verbs_device.h"
#include "verbs/gdr_verbs_am.h"
#include "verbs/gdr_verbs_rma.h"
#include "rma/gdr_rma_path.h"
#include "gpu/gdr_gpu_driver.h"

/* MPI_T performance variables (counters) of one-sided operations, by path. */
enum {
    MPIDI_GDR_PVAR_PUT_NATIVE, MPIDI_GDR_PVAR_GET_NATIVE, MPIDI_GDR_PVAR_ACC_NATIVE,
    MPIDI_GDR_PVAR_GET_ACC_NATIVE, MPIDI_GDR_PVAR_FOP_NATIVE, MPIDI_GDR_PVAR_CAS_NATIVE,
    MPIDI_GDR_PVAR_PUT_AM, MPIDI_GDR_PVAR_GET_AM, MPIDI_GDR_PVAR_ACC_AM,
    MPIDI_GDR_PVAR_GET_ACC_AM, MPIDI_GDR_PVAR_FOP_AM, MPIDI_GDR_PVAR_CAS_AM,
    MPIDI_GDR_PVAR_N
};

/* All gdr state of a process; lives in MPIDI_global.nm.gdr (see MPIDI_GDR_global). */
typedef struct {
    int have_device;            /* a verbs device is open */
    gdr_verbs_device_t device;
    char no_device_why[256];    /* why not, when !have_device */
    gdr_gpu_driver_t gpu;       /* CUDA driver probe: gpu.enabled, gpu.why_off */
    gdr_verbs_am_t *am;         /* AM channel to ranks on other nodes; NULL: none */
    gdr_verbs_rma_t *rma;       /* one-sided operations on the channel's QPs */
    unsigned long long pvar[MPIDI_GDR_PVAR_N];  /* see gdr_rma.c */
    int am_errno;               /* first MPI error raised inside a channel callback */
    unsigned empty_polls;       /* consecutive progress calls that found nothing */
    int region_query_handler;   /* dynamic windows' region lookup (gdr_win_dynamic.c) */
    int region_reply_handler;
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

/* Dynamic windows: a region this rank attached (registered unless mr is NULL)... */
typedef struct MPIDI_GDR_attached {
    struct MPIDI_GDR_attached *next;
    uintptr_t base;
    size_t size;
    gdr_verbs_rma_region_t region;
} MPIDI_GDR_attached_t;

/* ...and a target's region this rank learned, kept until its next remote completion. */
typedef struct {
    int target;
    uint64_t base, size;
    uint32_t rkey;              /* 0: the target could not register it (messages) */
} MPIDI_GDR_known_region_t;

#define MPIDI_GDR_KNOWN_REGIONS 8

/* Per window: every target's size and displacement unit, so an access past a
 * target's window is refused at the origin (MPI_ERR_RMA_RANGE) on every path
 * (dynamic windows: checked against the target's attached region on RDMA).
 * Targets with a key (target_rkey != NULL, target_peer >= 0) take RDMA; the
 * counters say what is still in flight to each, for flush and unlock. */
typedef struct {
    MPI_Aint *target_size;
    int *target_disp_unit;
    uint64_t *target_base;      /* registered window address at each target */
    uint32_t *target_rkey;
    int *target_peer;           /* world rank (QP index) of each target, -1: no QP */
    gdr_verbs_rma_region_t region;      /* this rank's window registration */
    gdr_rma_atomics_policy_t atomics;
    unsigned long *pending_remote;      /* per target: native ops not complete at the target */
    unsigned long *pending_local;       /* per target: native ops still using an origin buffer */
    unsigned long total_remote, total_local;
    uint8_t *last_acc_path;     /* per target: 0 none, 1 NIC, 2 AM (switch_wait) */
    uint8_t *acc_read_posted;   /* per target: an accumulate read posted since the last drain */
    MPIDI_GDR_attached_t *attached;     /* dynamic: this rank's attached regions */
    MPIDI_GDR_known_region_t known[MPIDI_GDR_KNOWN_REGIONS];    /* dynamic: targets' regions */
    int n_known, next_known;
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
