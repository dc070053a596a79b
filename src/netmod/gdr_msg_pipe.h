/* Messages through a bounded pool of pinned chunks (gdr_msg_pipe.c): the data of a
 * rendezvous that the NIC cannot read in place, in fragments, never whole in host memory.
 * Its state lives in the context (MPIDI_GDR_global.pipe). */
#ifndef GDR_MSG_PIPE_H_INCLUDED
#define GDR_MSG_PIPE_H_INCLUDED

/* A fragment's rendezvous goes under this handler number, none of MPIDIG's. */
#define MPIDI_GDR_PIPE_HANDLER 254
/* The low bit of a fragment's channel cookie (its chunk or record, both aligned): it tells
 * the channel callbacks a fragment from a whole message's request. */
#define MPIDI_GDR_PIPE_COOKIE 1u

#include "gpu/gdr_gpu_stream.h"

typedef struct MPIDI_GDR_pipe_chunk MPIDI_GDR_pipe_chunk_t;

typedef struct MPIDI_GDR_msg_pipe {
    void *mem;                  /* the chunks' pinned memory (NULL before the first use) */
    MPIDI_GDR_pipe_chunk_t *chunks;
    size_t chunk_sz;
    int nchunks;
    MPIDI_GDR_pipe_chunk_t *free_send, *free_recv;
    /* the GPU copies into send chunks and out of receive chunks, each side in order on its
     * own stream, and the chunks whose copy is queued, in that order */
    gdr_gpu_stream_t send_queue, recv_queue;
    MPIDI_GDR_pipe_chunk_t *filling, *filling_tail, *draining, *draining_tail;
    struct MPIDI_GDR_pipe_send *head, *tail;    /* sends with fragments left, in order */
    int sends;                  /* sends not yet complete */
    struct MPIDI_GDR_pipe_recv *recvs;  /* receives with fragments not yet in */
    unsigned long long staged_bytes;    /* MPI_T gdr_am_staged_bytes */
    unsigned long long pack_kernels;    /* MPI_T gdr_am_pack_kernels */
    unsigned long long pinned_bytes;    /* MPI_T gdr_am_stage_pinned_bytes */
} MPIDI_GDR_msg_pipe_t;

#endif /* GDR_MSG_PIPE_H_INCLUDED */
