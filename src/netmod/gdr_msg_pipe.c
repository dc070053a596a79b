/* Messages whose data the NIC cannot read in place (device memory under GPUDirect staged,
 * non-contiguous device datatypes in any mode) move in fragments through a bounded pool of
 * pinned host chunks, never through a buffer of the whole message.
 *
 * Sender: MPIDIG_SEND_DATA's payload (its receive is already matched) is cut into
 * fragments of MPIR_CVAR_CH4_GDR_STAGE_CHUNK bytes; each is queued as GPU copies from the
 * device into a free send chunk on the sender's copy stream, and once the chunk's event
 * says they are done (polled in progress) offered as one rendezvous of the channel
 * (handler MPIDI_GDR_PIPE_HANDLER, header: the receive, the message's size, the
 * fragment's place).  When the receiver has read a chunk (its FIN) the chunk takes the
 * next fragment, so the copies of some chunks overlap the wire of the others and neither
 * holds up progress.  Sends wait for chunks in order.
 * Receiver: each fragment is read straight into the receive buffer where it is contiguous
 * host memory (or device memory the NIC reaches), else into a free receive chunk (whose
 * GPU copies to the device are queued on the receiver's stream, the chunk freed and the
 * fragment counted when its event is reached) or, with every chunk taken (several senders
 * at once), into the channel's landing buffer (copied before the callback returns); the
 * receive completes with its last fragment.
 *
 * Pinned memory of the pipeline: 2 x MPIR_CVAR_CH4_GDR_STAGE_SLOTS chunks per process
 * (send and receive halves), whatever the size or number of messages; MPI_T
 * gdr_am_stage_pinned_bytes. */
/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH4_GDR_PACK_KERNEL_MAX
      category    : CH4_GDR
      type        : int
      default     : 16384
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Device messages of a non-contiguous datatype: its blocks of at most
        this many bytes are packed (and unpacked) by gdr's copy kernel, up to
        64 blocks a launch, into the pinned staging chunks of a rendezvous or
        a device scratch of an eager message, instead of one copy-engine
        transfer per block; larger blocks keep the copy engine. 0: always the
        copy engine, block by block.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/
#include "gdr_internal.h"
#include "gdr_msg_pipe.h"
#include "gpu/gdr_gpu_mem.h"
#include "gpu/gdr_gpu_stream.h"

/* The header of one fragment. */
typedef struct {
    uint64_t rreq;              /* the receiver's request (MPIDIG_send_data_msg_t's) */
    uint64_t total;             /* the message's bytes */
    uint64_t from;              /* this fragment's first byte in it */
} pipe_hdr_t;

struct MPIDI_GDR_pipe_chunk {
    struct MPIDI_GDR_pipe_chunk *next;  /* in a free list, or in the filling or draining queue */
    char *buf;
    gdr_gpu_event_t copied;     /* recorded after the copies that fill or empty it */
    struct MPIDI_GDR_pipe_send *send;   /* the send whose fragment it holds */
    pipe_hdr_t hdr;             /* that fragment, offered once filled */
    size_t len;
    struct pipe_frag *frag;     /* a receive chunk's fragment, done once emptied */
};

typedef struct MPIDI_GDR_pipe_send {
    struct MPIDI_GDR_pipe_send *next;   /* waiting for chunks, in order */
    MPIR_Request *sreq;
    int peer;
    uint32_t word;
    uint64_t rreq;
    const void *buf;
    MPI_Aint count;
    MPI_Datatype type;
    MPIDI_GDR_type_cursor_t cur;
    size_t total, next_from;
    int out;                    /* fragments not yet read by the receiver */
} pipe_send_t;

/* The receive buffer of rreq as MPIDIG set it (a datatype, one span, or pieces). */
typedef struct {
    void *buf;
    MPI_Aint count;
    MPI_Datatype type;
    const struct iovec *iov;    /* pieces (MPIDIG_RECV_IOV), else NULL */
    int niov;
    size_t room;
} recv_dest_t;

typedef struct MPIDI_GDR_pipe_recv {
    struct MPIDI_GDR_pipe_recv *next;
    MPIR_Request *rreq;
    recv_dest_t dest;           /* its receive buffer (fixed while the message arrives) */
    size_t total, got;
    int device;                 /* the receive buffer is device memory */
    int copied;                 /* a GPU copy wrote it: synchronised before completing */
    int failed;                 /* a copy failed: the rest is read and dropped */
    MPIDI_GDR_type_cursor_t cur;
} pipe_recv_t;

/* One fragment being read: cookie of the read (low bit set). */
typedef struct pipe_frag {
    pipe_recv_t *r;
    MPIDI_GDR_pipe_chunk_t *chunk;      /* read into this receive chunk, or NULL */
    size_t from, len;
} pipe_frag_t;

#define PIPE (&MPIDI_GDR_global.pipe)

/* A step of the pipeline failed: why, with what to do. */
static int pipe_error(const char *why)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**gdr_msg_pipe", "**gdr_msg_pipe %s", why);
    return mpi_errno;
}

/* gdr's GPU copy of a fragment failed (what: "a message from" or "a message into"). */
static int copy_error(const char *what)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**gdr_msg_gpu", "**gdr_msg_gpu %s %s", what,
                  MPIDI_GDR_global.gpu.error);
    return mpi_errno;
}

/* The channel failed (its error says why). */
static int channel_error(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                  gdr_verbs_am_error(MPIDI_GDR_global.am));
    return mpi_errno;
}

/* The chunks, on first use: one pinned allocation, the first half for sends. */
static int pool_open(void)
{
    MPIDI_GDR_msg_pipe_t *p = PIPE;
    if (p->chunks != NULL)
        return MPI_SUCCESS;
    /* (a fragment is one rendezvous: smaller chunks than a page would cost more in
     * messages than they save in memory) */
    size_t sz = MPIR_CVAR_CH4_GDR_STAGE_CHUNK > 4096 ? (size_t) MPIR_CVAR_CH4_GDR_STAGE_CHUNK
        : 4096;
    int n = MPIR_CVAR_CH4_GDR_STAGE_SLOTS;
    if (n < 1)
        return pipe_error("MPIR_CVAR_CH4_GDR_STAGE_SLOTS is below 1 (set 1 or more)");
    void *mem;
    if (gdr_gpu_host_alloc(&MPIDI_GDR_global.gpu, 2 * (size_t) n * sz, &mem) != 0)
        return pipe_error(MPIDI_GDR_global.gpu.error[0] != '\0' ? MPIDI_GDR_global.gpu.error
                          : "pinning 2 x MPIR_CVAR_CH4_GDR_STAGE_SLOTS x _STAGE_CHUNK bytes "
                          "failed (lower them, or raise the locked-memory limit)");
    p->chunks = MPL_calloc(2 * (size_t) n, sizeof(*p->chunks), MPL_MEM_BUFFER);
    if (p->chunks == NULL) {
        gdr_gpu_host_free(&MPIDI_GDR_global.gpu, mem);
        return pipe_error("out of memory");
    }
    p->mem = mem;
    p->chunk_sz = sz;
    p->nchunks = 2 * n;
    for (int i = 2 * n - 1; i >= 0; i--) {
        MPIDI_GDR_pipe_chunk_t *c = &p->chunks[i];
        c->buf = (char *) mem + (size_t) i * sz;
        MPIDI_GDR_pipe_chunk_t **list = i < n ? &p->free_send : &p->free_recv;
        c->next = *list;
        *list = c;
    }
    p->pinned_bytes = 2 * (unsigned long long) n * sz;
    /* the copy streams and an event a chunk */
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    int failed = gdr_gpu_stream_create(g, &p->send_queue) != 0
        || gdr_gpu_stream_create(g, &p->recv_queue) != 0;
    for (int i = 0; i < 2 * n && !failed; i++)
        failed = gdr_gpu_event_create(g, &p->chunks[i].copied) != 0;
    if (failed) {
        int mpi_errno = pipe_error(g->error);
        MPIDI_GDR_pipe_free();
        return mpi_errno;
    }
    return MPI_SUCCESS;
}

/* A chunk whose copies are queued joins the end of a queue (filling or draining). */
static void enqueue(MPIDI_GDR_pipe_chunk_t ** head, MPIDI_GDR_pipe_chunk_t ** tail,
                    MPIDI_GDR_pipe_chunk_t * c)
{
    c->next = NULL;
    if (*tail != NULL)
        (*tail)->next = c;
    else
        *head = c;
    *tail = c;
}

/* The head of a queue if its copies are done (1), 0 if not yet, negative on failure. */
static int head_copied(MPIDI_GDR_pipe_chunk_t ** head, MPIDI_GDR_pipe_chunk_t ** tail,
                       MPIDI_GDR_pipe_chunk_t ** c)
{
    int rc = gdr_gpu_event_query(&MPIDI_GDR_global.gpu, (*head)->copied);
    if (rc == 0)
        return 0;
    *c = *head;
    *head = (*c)->next;
    if (*head == NULL)
        *tail = NULL;
    (*c)->next = NULL;
    return rc;
}

/* ---- the sender ------------------------------------------------------------------- */

/* Offers the send chunks whose copies are done to their receivers, in order. */
static int offer_filled(void)
{
    MPIDI_GDR_msg_pipe_t *p = PIPE;
    MPIDI_GDR_pipe_chunk_t *c;
    int rc;
    while (p->filling != NULL && (rc = head_copied(&p->filling, &p->filling_tail, &c)) != 0) {
        if (rc < 0)
            return copy_error("a message from");
        if (gdr_verbs_am_send_rndv(MPIDI_GDR_global.am, c->send->peer, c->send->word, &c->hdr,
                                   sizeof(c->hdr), c->buf, c->len, 0,
                                   (uint64_t) (uintptr_t) c | MPIDI_GDR_PIPE_COOKIE) != 0)
            return channel_error();
    }
    return MPI_SUCCESS;
}

/* Queues the copies of the waiting sends' next fragments into free chunks, in order, and
 * offers the chunks already filled. */
static int pump(void)
{
    MPIDI_GDR_msg_pipe_t *p = PIPE;
    while (p->head != NULL && p->free_send != NULL) {
        pipe_send_t *s = p->head;
        MPIDI_GDR_pipe_chunk_t *c = p->free_send;
        size_t len = s->total - s->next_from < p->chunk_sz ? s->total - s->next_from
            : p->chunk_sz;
        MPIDI_GDR_copy_way_t way = {.device = 1,.queue = p->send_queue,
            .kernels = &p->pack_kernels
        };
        if (MPIDI_GDR_typed_copy((void *) s->buf, s->count, s->type, &s->cur, s->next_from,
                                 c->buf, len, 1, way) != 0
            || gdr_gpu_event_record(&MPIDI_GDR_global.gpu, c->copied, p->send_queue) != 0)
            return copy_error("a message from");
        c->hdr = (pipe_hdr_t) {.rreq = s->rreq,.total = s->total,.from = s->next_from };
        c->len = len;
        p->free_send = c->next;
        c->send = s;
        enqueue(&p->filling, &p->filling_tail, c);
        s->out++;
        s->next_from += len;
        if (s->next_from == s->total) {
            p->head = s->next;
            if (p->head == NULL)
                p->tail = NULL;
        }
        p->staged_bytes += len;
        MPIDI_GDR_global.am_device_copied_bytes += len;
    }
    return offer_filled();
}

int MPIDI_GDR_pipe_send(int peer, uint32_t word, const void *am_hdr, const void *data,
                        MPI_Aint count, MPI_Datatype type, MPI_Aint data_sz,
                        MPIR_Request * sreq)
{
    int mpi_errno = pool_open();
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    pipe_send_t *s = MPL_calloc(1, sizeof(*s), MPL_MEM_BUFFER);
    if (s == NULL)
        return pipe_error("out of memory");
    const MPIDIG_send_data_msg_t *d = am_hdr;
    *s = (pipe_send_t) {.sreq = sreq,.peer = peer,.word = word,
        .rreq = (uint64_t) (uintptr_t) d->rreq_ptr,.buf = data,.count = count,.type = type,
        .total = (size_t) data_sz
    };
    if (PIPE->tail != NULL)
        PIPE->tail->next = s;
    else
        PIPE->head = s;
    PIPE->tail = s;
    PIPE->sends++;
    return pump();
}

int MPIDI_GDR_pipe_fin(uint64_t cookie, int (*origin_done) (MPIR_Request *))
{
    MPIDI_GDR_pipe_chunk_t *c =
        (MPIDI_GDR_pipe_chunk_t *) (uintptr_t) (cookie & ~(uint64_t) MPIDI_GDR_PIPE_COOKIE);
    pipe_send_t *s = c->send;
    int mpi_errno = MPI_SUCCESS;
    c->send = NULL;
    c->next = PIPE->free_send;
    PIPE->free_send = c;
    if (--s->out == 0 && s->next_from == s->total) {
        MPIR_Request *sreq = s->sreq;
        MPL_free(s);
        PIPE->sends--;
        mpi_errno = origin_done(sreq);
    }
    int err = pump();
    return mpi_errno != MPI_SUCCESS ? mpi_errno : err;
}

/* ---- the receiver ----------------------------------------------------------------- */

/* rreq's receive buffer, as MPIDIG set it when the message matched. */
static void recv_dest(MPIR_Request * rreq, recv_dest_t * d)
{
    MPIDIG_rreq_async_t *a = &MPIDIG_REQUEST(rreq, req->recv_async);
    *d = (recv_dest_t) { 0 };
    if (a->recv_type == MPIDIG_RECV_DATATYPE) {
        MPI_Aint size;
        d->buf = MPIDIG_REQUEST(rreq, buffer);
        d->count = MPIDIG_REQUEST(rreq, count);
        d->type = MPIDIG_REQUEST(rreq, datatype);
        MPIR_Datatype_get_size_macro(d->type, size);
        d->room = (size_t) (size * d->count);
    } else if (a->recv_type == MPIDIG_RECV_CONTIG) {
        d->buf = a->iov_one.iov_base;
        d->count = (MPI_Aint) a->iov_one.iov_len;
        d->type = MPI_BYTE;
        d->room = a->iov_one.iov_len;
    } else {
        d->iov = a->iov_ptr;
        d->niov = a->iov_num;
        for (int i = 0; i < d->niov; i++)
            d->room += d->iov[i].iov_len;
    }
}

/* The contiguous span of the receive buffer, or NULL. */
static char *dest_span(const recv_dest_t * d)
{
    if (d->iov != NULL)
        return d->niov == 1 ? d->iov[0].iov_base : NULL;
    int contig;
    MPI_Aint lb;
    MPIDI_Datatype_check_contig_lb(d->type, contig, lb);
    return contig ? (char *) d->buf + lb : NULL;
}

/* Writes len bytes from flat into r's receive buffer from byte `from` on. */
static int dest_write(pipe_recv_t * r, size_t from, const char *flat, size_t len,
                      MPIDI_GDR_copy_way_t way)
{
    const recv_dest_t *d = &r->dest;
    if (d->iov == NULL)
        return MPIDI_GDR_typed_copy(d->buf, d->count, d->type, &r->cur, from, (char *) flat,
                                    len, 0, way);
    size_t pos = 0;
    for (int i = 0; i < d->niov && len > 0; pos += d->iov[i].iov_len, i++) {
        if (pos + d->iov[i].iov_len <= from)
            continue;
        size_t skip = from - pos, n = d->iov[i].iov_len - skip < len ? d->iov[i].iov_len - skip
            : len;
        if (MPIDI_GDR_copy_bytes((char *) d->iov[i].iov_base + skip, flat, n, way) != 0)
            return -1;
        flat += n;
        from += n;
        len -= n;
    }
    return 0;
}

static pipe_recv_t *recv_find(MPIR_Request * rreq, size_t total)
{
    for (pipe_recv_t * r = PIPE->recvs; r != NULL; r = r->next)
        if (r->rreq == rreq)
            return r;
    pipe_recv_t *r = MPL_calloc(1, sizeof(*r), MPL_MEM_BUFFER);
    if (r == NULL)
        return NULL;
    recv_dest(rreq, &r->dest);
    r->rreq = rreq;
    r->total = total;
    r->device = MPIDI_GDR_global.gpu.on && r->dest.room > 0
        && MPIDI_GDR_gpu_buffer_id(MPIDI_GDR_recv_first_byte(rreq)) != 0;
    if (total > r->dest.room && rreq->status.MPI_ERROR == MPI_SUCCESS)
        rreq->status.MPI_ERROR = MPIDIG_ERR_TRUNCATE((MPI_Aint) r->dest.room, (MPI_Aint) total);
    r->next = PIPE->recvs;
    PIPE->recvs = r;
    return r;
}

static int drain_copied(void);

/* With every receive chunk still emptying into the device, the oldest is waited for (one
 * chunk's GPU copy), so that a fragment takes a chunk rather than the landing buffer. */
static int recv_chunk_wait(void)
{
    if (PIPE->free_recv != NULL || PIPE->draining == NULL)
        return MPI_SUCCESS;
    (void) gdr_gpu_event_sync(&MPIDI_GDR_global.gpu, PIPE->draining->copied);
    return drain_copied();
}

int MPIDI_GDR_pipe_offered(const void *am_hdr, size_t am_hdr_sz, size_t data_sz,
                           gdr_verbs_am_rts_t * rts)
{
    const pipe_hdr_t *h = am_hdr;
    struct iovec seg;
    int nseg = 0;
    uint64_t device_id = 0;
    pipe_frag_t *f = NULL;
    pipe_recv_t *r = NULL;
    int mpi_errno = MPI_SUCCESS;

    if (am_hdr_sz != sizeof(*h) || h->rreq == 0 || h->from + data_sz > h->total) {
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_INTERN, "**gdr_bad_handler", "**gdr_bad_handler %d %d",
                      MPIDI_GDR_PIPE_HANDLER, -1);
    } else {
        r = recv_find((MPIR_Request *) (uintptr_t) h->rreq, (size_t) h->total);
        f = MPL_malloc(sizeof(*f), MPL_MEM_BUFFER);
    }
    if (r != NULL && f != NULL) {
        *f = (pipe_frag_t) {.r = r,.from = (size_t) h->from,.len = data_sz };
        char *span = dest_span(&r->dest);
        size_t fit = h->from < r->dest.room ? r->dest.room - (size_t) h->from : 0;
        if (span != NULL && fit > 0 && (!r->device || MPIDI_GDR_nic_takes_gpu_memory())
            && MPIR_CVAR_CH4_GDR_RNDV_ZCOPY_MIN >= 0
            && h->total >= (uint64_t) MPIR_CVAR_CH4_GDR_RNDV_ZCOPY_MIN) {
            /* read in place (what does not fit is not read: the truncation is reported) */
            seg = (struct iovec) {.iov_base = span + h->from,.iov_len = fit };
            nseg = 1;
            device_id = r->device ? MPIDI_GDR_gpu_buffer_id(span) : 0;
        } else if (r->device && pool_open() == MPI_SUCCESS
                   && (mpi_errno = recv_chunk_wait()) == MPI_SUCCESS && PIPE->free_recv != NULL) {
            f->chunk = PIPE->free_recv;
            PIPE->free_recv = f->chunk->next;
            seg = (struct iovec) {.iov_base = f->chunk->buf,.iov_len = data_sz };
            nseg = 1;
        }
    } else if (mpi_errno == MPI_SUCCESS) {
        mpi_errno = pipe_error("out of memory");
        MPL_free(f);
        f = NULL;
    }
    /* with no fragment record the payload is read and dropped, so that the sender's
     * chunk is released */
    if (gdr_verbs_am_read_into(MPIDI_GDR_global.am, rts, &seg, nseg, device_id,
                               f != NULL ? (uint64_t) (uintptr_t) f | MPIDI_GDR_PIPE_COOKIE
                               : 0) != 0 && mpi_errno == MPI_SUCCESS)
        mpi_errno = channel_error();
    return mpi_errno;
}

/* Fragment f is in its receive buffer (or failed: mpi_errno): its chunk freed, its bytes
 * counted, and the receive completed with its last fragment. */
static int frag_done(pipe_frag_t * f, int mpi_errno)
{
    pipe_recv_t *r = f->r;
    MPIR_Request *rreq = r->rreq;
    if (f->chunk != NULL) {
        f->chunk->frag = NULL;
        f->chunk->next = PIPE->free_recv;
        PIPE->free_recv = f->chunk;
    }
    r->got += f->len;
    MPL_free(f);
    if (mpi_errno != MPI_SUCCESS)
        rreq->status.MPI_ERROR = mpi_errno;     /* (over a truncation: the worse news) */
    if (r->got < r->total)
        return mpi_errno;
    /* the last fragment: the receive completes once the device has its bytes (the
     * queued copies' events were reached; the landing buffer's copies ran on the legacy
     * stream) */
    for (pipe_recv_t ** pp = &PIPE->recvs; *pp != NULL; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    if (r->copied && gdr_gpu_stream_sync(&MPIDI_GDR_global.gpu, NULL) != 0
        && rreq->status.MPI_ERROR == MPI_SUCCESS)
        rreq->status.MPI_ERROR = copy_error("a message into");
    MPIR_STATUS_SET_COUNT(rreq->status,
                          (MPI_Aint) (r->total < r->dest.room ? r->total : r->dest.room));
    MPL_free(r);
    int err = MPIDIG_REQUEST(rreq, req->target_cmpl_cb) (rreq);
    return mpi_errno != MPI_SUCCESS ? mpi_errno : err;
}

int MPIDI_GDR_pipe_read_done(uint64_t cookie, const void *landed, size_t len)
{
    pipe_frag_t *f = (pipe_frag_t *) (uintptr_t) (cookie & ~(uint64_t) MPIDI_GDR_PIPE_COOKIE);
    pipe_recv_t *r = f->r;
    int mpi_errno = MPI_SUCCESS;
    const char *src = landed != NULL ? landed : (f->chunk != NULL ? f->chunk->buf : NULL);
    (void) len;
    /* (a truncated receive still gets the bytes that fit) */
    size_t n = f->from < r->dest.room ? r->dest.room - f->from : 0;
    n = n < f->len ? n : f->len;
    if (src == NULL || r->failed || n == 0)
        return frag_done(f, MPI_SUCCESS);
    if (r->device) {
        MPIDI_GDR_global.am_device_copied_bytes += n;
        if (f->chunk != NULL)
            PIPE->staged_bytes += n;
    }
    if (landed == NULL && f->chunk != NULL) {
        /* queued on the receiver's stream: done when the chunk's event is reached */
        MPIDI_GDR_copy_way_t way = {.device = 1,.queue = PIPE->recv_queue,
            .kernels = &PIPE->pack_kernels
        };
        if (dest_write(r, f->from, src, n, way) == 0
            && gdr_gpu_event_record(&MPIDI_GDR_global.gpu, f->chunk->copied,
                                    PIPE->recv_queue) == 0) {
            f->chunk->frag = f;
            enqueue(&PIPE->draining, &PIPE->draining_tail, f->chunk);
            return MPI_SUCCESS;
        }
    } else {
        MPIDI_GDR_copy_way_t way = {.device = r->device };
        r->copied |= r->device;
        if (dest_write(r, f->from, src, n, way) == 0)
            return frag_done(f, MPI_SUCCESS);
    }
    mpi_errno = copy_error("a message into");
    r->failed = 1;
    /* (copies queued before the failure may still read the chunk it frees) */
    (void) gdr_gpu_stream_sync(&MPIDI_GDR_global.gpu, PIPE->recv_queue);
    return frag_done(f, mpi_errno);
}

/* The fragments whose receive chunks' copies to the device are done. */
static int drain_copied(void)
{
    MPIDI_GDR_msg_pipe_t *p = PIPE;
    MPIDI_GDR_pipe_chunk_t *c;
    int rc, mpi_errno = MPI_SUCCESS;
    while (p->draining != NULL && (rc = head_copied(&p->draining, &p->draining_tail, &c)) != 0) {
        int err = MPI_SUCCESS;
        if (rc < 0) {
            err = copy_error("a message into");
            c->frag->r->failed = 1;
        }
        err = frag_done(c->frag, err);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = err;
    }
    return mpi_errno;
}

int MPIDI_GDR_pipe_progress(int *made_progress)
{
    MPIDI_GDR_pipe_chunk_t *filling = PIPE->filling, *draining = PIPE->draining;
    int mpi_errno = offer_filled();
    int err = drain_copied();
    if (PIPE->filling != filling || PIPE->draining != draining)
        *made_progress = 1;
    return mpi_errno != MPI_SUCCESS ? mpi_errno : err;
}

int MPIDI_GDR_pipe_busy(void)
{
    return PIPE->sends > 0 || PIPE->recvs != NULL;
}

void MPIDI_GDR_pipe_free(void)
{
    MPIDI_GDR_msg_pipe_t *p = PIPE;
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    for (int i = 0; p->chunks != NULL && i < p->nchunks; i++)
        if (p->chunks[i].copied != NULL)
            (void) gdr_gpu_event_destroy(g, p->chunks[i].copied);
    if (p->send_queue != NULL)
        (void) gdr_gpu_stream_destroy(g, p->send_queue);
    if (p->recv_queue != NULL)
        (void) gdr_gpu_stream_destroy(g, p->recv_queue);
    if (p->mem != NULL)
        gdr_gpu_host_free(g, p->mem);
    MPL_free(p->chunks);
    unsigned long long staged = p->staged_bytes, kernels = p->pack_kernels;
    *p = (MPIDI_GDR_msg_pipe_t) {.staged_bytes = staged,.pack_kernels = kernels };
}

void MPIDI_GDR_pipe_register_pvars(void)
{
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                              "gdr_am_staged_bytes", &PIPE->staged_bytes, 1, NULL,
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "message bytes this rank moved through its "
                              "pinned staging chunks (device data the NIC cannot read or "
                              "write in place: copied from the device into a send chunk, or "
                              "from a receive chunk into the device)");
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                              "gdr_am_pack_kernels", &PIPE->pack_kernels, 1, NULL,
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "launches of gdr's copy kernel that packed the "
                              "small blocks of non-contiguous device datatypes into staging "
                              "chunks or a device scratch (eager messages), or unpacked them "
                              "(MPIR_CVAR_CH4_GDR_PACK_KERNEL_MAX)");
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_LEVEL, MPI_UNSIGNED_LONG_LONG,
                              "gdr_am_stage_pinned_bytes", &PIPE->pinned_bytes, 1, NULL,
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "pinned host bytes this rank holds for staging "
                              "device messages: 0 until the first one, then 2 x "
                              "MPIR_CVAR_CH4_GDR_STAGE_SLOTS x MPIR_CVAR_CH4_GDR_STAGE_CHUNK, "
                              "whatever the size or number of messages");
}
