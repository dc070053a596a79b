/* What every gdr glue file includes: MPICH's device internals (gdr_impl.h), gdr's layers and
 * context.  Never included by MPICH's own files (gdr_impl.h says why). */
#ifndef GDR_INTERNAL_H_INCLUDED
#define GDR_INTERNAL_H_INCLUDED

#include "gdr_impl.h"
#include "gdr_cvars.h"            /* gdr's MPIR_CVAR_CH4_GDR_*, written by maint/graft */
#include "rma/gdr_rma_plan.h"
#include "gdr_context.h"
#include "gpu/gdr_gpu_stream.h"

/* gdr's context (gdr_context.h): valid from MPIDI_GDR_init_local to finalize */
#define MPIDI_GDR_global (*MPIDI_global.nm.gdr.ctx)
/* A window's gdr state (gdr_context.h): valid from its first gdr hook to its free hook */
#define GDR_WIN(win) (*(win)->dev.netmod.gdr.s)

/* gdr_am.c: bring the AM channel up when MPI_COMM_WORLD is committed, down at finalize. */
int MPIDI_GDR_am_start(void);
int MPIDI_GDR_am_stop(void);
/* One poll of the channel that never yields or sleeps and does not count an empty poll
 * towards idling (MPIDI_GDR_progress_am may: MPIR_CVAR_CH4_GDR_YIELD_AFTER,
 * _IDLE_SLEEP_US): the progress guard's, which runs while another source has work. */
int MPIDI_GDR_poll_am(int *made_progress);
/* Processes of other jobs (gdr_spawn.c).  gdr_peers.c: the channel's peer for lpid, given
 * when MPICH inserted its upid (-1: none), and this job's identity (the same on each of its
 * ranks).  gdr_dynmsg.c: the dynamic messages of connect/accept, under a handler number
 * none of MPIDIG's is; delivered by gdr_am.c's deliver, taken whole by tag, context and
 * source (-1: any), in arrival order; NULL while none is whole. */
#define MPIDI_GDR_DYNPROC_HANDLER 255
int MPIDI_GDR_foreign_peer(MPIR_Lpid lpid);
/* gdr_msg_pipe.c (gdr_msg_pipe.h): sending sreq's MPIDIG_SEND_DATA payload in fragments
 * (word: the channel's handler word, MPIDI_GDR_PIPE_HANDLER's); the channel callbacks of
 * a fragment (cookie with MPIDI_GDR_PIPE_COOKIE): its chunk read at the receiver
 * (origin_done completes the send after its last), offered here, read here. */
int MPIDI_GDR_pipe_send(int peer, uint32_t word, const void *am_hdr, const void *data,
                        MPI_Aint count, MPI_Datatype type, MPI_Aint data_sz,
                        MPIR_Request * sreq);
int MPIDI_GDR_pipe_fin(uint64_t cookie, int (*origin_done) (MPIR_Request *));
int MPIDI_GDR_pipe_offered(const void *am_hdr, size_t am_hdr_sz, size_t data_sz,
                           gdr_verbs_am_rts_t * rts);
int MPIDI_GDR_pipe_read_done(uint64_t cookie, const void *landed, size_t len);
int MPIDI_GDR_pipe_busy(void);
/* GPU copies of the pipeline are queued (no channel event says when they end): inline,
 * as every progress poll asks; and the round of progress that offers the filled send
 * chunks and counts the emptied receive chunks. */
static inline int MPIDI_GDR_pipe_copying(void)
{
    return MPIDI_GDR_global.pipe.filling != NULL || MPIDI_GDR_global.pipe.draining != NULL;
}

int MPIDI_GDR_pipe_progress(int *made_progress);
void MPIDI_GDR_pipe_free(void);
void MPIDI_GDR_pipe_register_pvars(void);
int MPIDI_GDR_foreign_peer_put(MPIR_Lpid lpid, int peer);
void MPIDI_GDR_peers_free(void);
uint64_t MPIDI_GDR_job_id(void);

struct MPIDI_GDR_dynmsg {
    struct MPIDI_GDR_dynmsg *next;
    int src;                    /* the channel's peer it came from */
    int32_t tag, context_id;
    size_t size, filled;        /* whole once filled == size */
    char data[];
};
/* The header of each piece. */
typedef struct {
    int32_t tag, context_id;
    uint32_t size, offset;      /* the whole message's bytes; this piece's place in them */
} MPIDI_GDR_dynmsg_hdr_t;
/* Larger messages are refused: a group of 100,000 processes is ~6 MB of upids and lpids. */
#define MPIDI_GDR_DYNMSG_MAX ((size_t) 1 << 28)
int MPIDI_GDR_dynmsg_deliver(int src, const void *am_hdr, size_t am_hdr_sz, const void *data,
                             size_t data_sz);
struct MPIDI_GDR_dynmsg *MPIDI_GDR_dynmsg_take(int src, int tag, int context_id);
void MPIDI_GDR_dynmsg_free_all(void);
/* gdr_progress.c: the progress guard, an MPICH progress hook that runs gdr's round in a
 * pass that follows one in which MPICH skipped MPIDI_NM_progress (because shared memory
 * or a hook made progress), so that no source of progress starves gdr's; on from
 * MPI_COMM_WORLD's commit to finalize.  Its MPI_T counter is registered at init. */
int MPIDI_GDR_progress_guard_start(void);
void MPIDI_GDR_progress_guard_stop(void);
void MPIDI_GDR_progress_register_pvars(void);
void MPIDI_GDR_am_register_pvars(void);
/* MPI_T counters and levels that are u64 fields of a layer's stats struct (the channel's,
 * the verbs RMA layer's), registered from a table and read by the layer's reader, which
 * passes its stats (NULL: none, reads 0) and the field's offset (addr) to stat_value. */
typedef struct MPIDI_GDR_stat_pvar {
    const char *name, *desc;
    size_t offset;
    int level;                  /* a level (how much now), else a counter */
} MPIDI_GDR_stat_pvar_t;

static inline void MPIDI_GDR_register_stat_pvars(const MPIDI_GDR_stat_pvar_t * pv, size_t n,
                                                 MPIR_T_pvar_get_value_cb * read)
{
    for (size_t k = 0; k < n; k++)
        MPIR_T_PVAR_REGISTER_impl(pv[k].level ? MPI_T_PVAR_CLASS_LEVEL : MPI_T_PVAR_CLASS_COUNTER,
                                  MPI_UNSIGNED_LONG_LONG, pv[k].name,
                                  (void *) (uintptr_t) pv[k].offset, 1, NULL,
                                  MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                                  MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS,
                                  read, NULL, "CH4_GDR", pv[k].desc);
}

static inline void MPIDI_GDR_stat_value(const void *stats, void *addr, void *buf)
{
    uint64_t v = 0;
    if (stats != NULL)
        memcpy(&v, (const char *) stats + (uintptr_t) addr, sizeof(v));
    *(unsigned long long *) buf = (unsigned long long) v;
}
/* The VCIs (1 + reserved) a rank has when MPICH asks for num_reserved. */
int MPIDI_GDR_total_vcis(int num_reserved);
/* The AM channel's last error as an MPI error (MPI_ERR_OTHER naming the peer). */
int MPIDI_GDR_transport_error(void);
/* gdr_rma.c: MPI_T counters (the engine's), registered at init. */
void MPIDI_GDR_rma_register_pvars(void);
/* gdr_rma_host.c: the RMA engine's host seam, set up once the channel is (or is not). */
void MPIDI_GDR_rma_engine_start(void);
void MPIDI_GDR_rma_engine_stop(void);
/* An engine result (GDR_RMA_*) as an MPI error code. */
int MPIDI_GDR_rma_error(int rc);
/* gdr_win_sync.c: waits for win's lock releases still in flight (before its free's
 * barrier); the error of one that failed. */
int MPIDI_GDR_win_drain_releases(MPIR_Win * win);
/* gdr_win_dynamic.c: the region lookup messages of dynamic windows, at init; asking a
 * target (an MPIR_Win rank) about its region around addr. */
int MPIDI_GDR_dynamic_register_handlers(void);
int MPIDI_GDR_dynamic_attach(MPIR_Win * win, void *base, MPI_Aint size);
int MPIDI_GDR_dynamic_detach(MPIR_Win * win, const void *base);
int MPIDI_GDR_dynamic_query(void *win, int target, uint64_t addr, gdr_rma_region_reply_t * out);
/* The same, asking a rank of this node also for the region's CUDA IPC handle when it is
 * device memory (*ok: *h is valid, made for the region's first byte). */
int MPIDI_GDR_dynamic_query_ipc(MPIR_Win * win, int target, uint64_t addr,
                                gdr_rma_region_reply_t * out, gdr_gpu_ipc_handle_t * h, int *ok);
/* Forgets what this rank learned of target's regions (-1: every target's): at each
 * completion of its operations at target (flush, unlock, fence, complete). */
void MPIDI_GDR_dynamic_forget(MPIR_Win * win, int target);
/* gdr_layout.c: MPI datatypes as the engine's flat descriptions.  The bytes a target
 * access of count x type spans from its true lower bound (*true_lb); whether a basic
 * type is an 8-byte integer. */
uint64_t MPIDI_GDR_target_span(MPI_Aint count, MPI_Datatype type, MPI_Aint * true_lb);
int MPIDI_GDR_is_int64(MPI_Datatype basic);
/* count x type at buf: contiguous, or scattered and listed into small[GDR_RMA_SGE_MAX]
 * when want_list and it has at most that many pieces.  device_id != 0: GPU memory of
 * that CUDA buffer id, always described as a list (one piece when contiguous), never to
 * be touched on the host. */
void MPIDI_GDR_describe_buf(const void *buf, MPI_Aint count, MPI_Datatype type, MPI_Aint bytes,
                            int want_list, uint64_t device_id, struct iovec *small,
                            gdr_rma_buf_t * out);
/* gdr_gpudirect.c: GPU support at start-up (the driver, the GPUDirect mode) and whether
 * a buffer is device memory (gdr's own query: MPICH's cannot see the simulated GPU). */
int MPIDI_GDR_gpu_start(void);        /* before the verbs device: never fails */
int MPIDI_GDR_gpudirect_start(void);  /* after it: fails only for a forced mode */
void MPIDI_GDR_gpu_stop(void);
/* 0: host memory; else device memory, by its CUDA buffer id (UINT64_MAX when only
 * MPICH's CUDA support knows it as device memory) */
uint64_t MPIDI_GDR_gpu_buffer_id(const void *p);
/* Whether p is device memory; in a process with no GPU at all (neither gdr's layer nor
 * MPICH's, which turns MPIR_CVAR_ENABLE_GPU off when it finds no device) answered inline,
 * as every small operation asks (bench/opcost) */
static inline int MPIDI_GDR_is_device(const void *p)
{
    if (!MPIDI_GDR_global.gpu.on && !MPIR_CVAR_ENABLE_GPU)
        return 0;
    return MPIDI_GDR_gpu_buffer_id(p) != 0;
}
/* How window memory at base is exposed (GDR_RMA_EXPOSE_ mask, src/rma/gdr_rma_regions.h):
 * device memory or not; registered with the NIC only in GPUDirect dmabuf or peermem mode; whether
 * gdr's GPU layer is on. */
unsigned MPIDI_GDR_gpu_expose_flags(const void *base);
const char *MPIDI_GDR_gpudirect_name(int mode);
/* The NIC registers GPU memory (GPUDirect dmabuf or peermem), so RDMA reaches it. */
int MPIDI_GDR_nic_takes_gpu_memory(void);
/* The first byte rreq's receive buffer is written at (MPIDIG_recv_copy's three shapes:
 * a datatype, one span, pieces); NULL for no pieces. */
const void *MPIDI_GDR_recv_first_byte(MPIR_Request * rreq);
/* How bytes move between a typed buffer and a flat one. */
typedef struct {
    int device;                 /* gdr's GPU copy (either side device memory); 0: MPICH's
                                 * copy, which also reaches device memory MPICH's own CUDA
                                 * support knows */
    gdr_gpu_stream_t queue;     /* device: queued on this stream, the caller waits for it;
                                 * NULL: the copy returns once the bytes are there */
    unsigned long long *kernels;        /* queued, non-NULL: blocks of at most
                                         * MPIR_CVAR_CH4_GDR_PACK_KERNEL_MAX bytes go as
                                         * launches of gdr's copy kernel, counted here */
} MPIDI_GDR_copy_way_t;
/* n bytes from src to dst.  0 or nonzero (the GPU layer's error says why). */
int MPIDI_GDR_copy_bytes(void *dst, const void *src, size_t n, MPIDI_GDR_copy_way_t way);
/* Where the next range of a typed buffer starts: the piece index and its first byte in
 * the packed order (ranges are asked in increasing order; an earlier one restarts). */
typedef struct {
    MPI_Aint piece;
    size_t pos;
} MPIDI_GDR_type_cursor_t;
/* Copies bytes [from, from + len) of count x type at buf, in its packed order, into flat
 * (gather) or out of it (!gather), block by block (no image of the type's extent).  cur
 * starts zeroed.  0 or nonzero. */
int MPIDI_GDR_typed_copy(void *buf, MPI_Aint count, MPI_Datatype type,
                         MPIDI_GDR_type_cursor_t * cur, size_t from, char *flat, size_t len,
                         int gather, MPIDI_GDR_copy_way_t way);
/* gdr_msg_device.c: the first len packed bytes of count x type in device memory at buf
 * gathered into host flat (gather) or scattered from it, small blocks by gdr's copy
 * kernel through a device scratch; done when it returns.  0 or nonzero (the GPU layer's
 * error says why). */
typedef struct MPIDI_GDR_msg_device MPIDI_GDR_msg_device_t;
#define MPIDI_GDR_MSG_SCRATCH (64 * 1024)
int MPIDI_GDR_msg_device_copy(void *buf, MPI_Aint count, MPI_Datatype type, char *flat,
                              size_t len, int gather);
void MPIDI_GDR_msg_device_free(void);
/* The pieces of a target access as offsets from its displacement; *pieces is small
 * (one piece) or allocated (MPL_free it).  *n 0 with MPI_SUCCESS: too scattered. */
int MPIDI_GDR_target_pieces(MPI_Aint count, MPI_Datatype type, MPI_Aint bytes,
                            gdr_rma_kind_t kind, struct iovec *small, struct iovec **pieces,
                            size_t *n);

/* gdr_rma.c: before an operation to rank (engine lock held), takes the
 * passive-target lock its epoch wants, if the window locks natively and it is not held. */
int MPIDI_GDR_win_need(MPIR_Win * win, int rank);

/* gdr_rma_staged.c: the staged protocol for device memory (MPIR_CVAR_CH4_GDR_STAGED):
 * its handler (at init), its context once the engine is up (it sets the host seam's
 * send_msg), each window's part.  Its progress: gdr_progress.h. */
int MPIDI_GDR_staged_register_handler(void);
void MPIDI_GDR_staged_register_pvars(void);
void MPIDI_GDR_ipc_register_pvars(void);
void MPIDI_GDR_staged_start(void);
void MPIDI_GDR_staged_stop(void);
void MPIDI_GDR_staged_win_new(MPIR_Win * win);
void MPIDI_GDR_staged_win_free(MPIR_Win * win);

#endif /* GDR_INTERNAL_H_INCLUDED */
