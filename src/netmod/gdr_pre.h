/* gdr netmod: the types CH4 embeds in its own objects (requests, comms, windows,
 * address vector entries) and the pointer to gdr's one context struct.  Included by all
 * of MPICH through netmodpre.h: no header of gdr's layers here (gdr_context.h has them). */
#ifndef GDR_PRE_H_INCLUDED
#define GDR_PRE_H_INCLUDED

/* gdr connects every rank of the job once, when MPI_COMM_WORLD is committed (its
 * BOOTSTRAP commit): communicators made from sessions' process groups are then built
 * from the world, as with ch3, instead of bootstrapping a channel per group. */
#define MPID_SESSION_USE_WORLD 1

/* All gdr state of a process (gdr_context.h): a pointer here, so that MPICH's files
 * never include gdr's layers. */
struct MPIDI_GDR_context;
typedef struct {
    struct MPIDI_GDR_context *ctx;
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

/* Per window: gdr's state of it (gdr_context.h), NULL before the first gdr hook. */
struct MPIDI_GDR_win_state;
typedef struct {
    struct MPIDI_GDR_win_state *s;
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
