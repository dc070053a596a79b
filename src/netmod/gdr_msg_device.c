/* Whole messages of a non-contiguous device datatype (eager messages, and the payloads
 * MPIDIG delivers whole: a Put's or an accumulate's) packed and unpacked by gdr's copy
 * kernel through a device scratch: the type's small blocks gathered into the scratch (or
 * scattered out of it) 64 a launch, and one copy-engine transfer between the scratch and
 * the host buffer a scratch-full, instead of one transfer per block.  (The pinned
 * pipeline, gdr_msg_pipe.c, does the same for rendezvous fragments, its kernels writing
 * its pinned chunks directly.)
 *
 * On a GPU one copy-engine transfer costs ~2-5 us of driver and engine time whatever its
 * size; a column of an 8-KiB halo as 1024 8-byte blocks is one launch and one transfer
 * here, 1024 transfers block by block.  Device memory held: one scratch of
 * MPIDI_GDR_MSG_SCRATCH bytes, taken at the first such message. */
#include "gdr_internal.h"
#include "gpu/gdr_gpu_mem.h"

#define MSG_DEV (&MPIDI_GDR_global.msg_device)

/* The scratch and the stream, on first use. */
static int scratch_open(void)
{
    MPIDI_GDR_msg_device_t *m = MSG_DEV;
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    if (m->scratch != NULL)
        return 0;
    if (m->queue == NULL && gdr_gpu_stream_create(g, &m->queue) != 0)
        return -1;
    return gdr_gpu_mem_alloc(g, MPIDI_GDR_MSG_SCRATCH, &m->scratch);
}

int MPIDI_GDR_msg_device_copy(void *buf, MPI_Aint count, MPI_Datatype type, char *flat,
                              size_t len, int gather)
{
    MPIDI_GDR_msg_device_t *m = MSG_DEV;
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    MPIDI_GDR_type_cursor_t cur = { 0, 0 };
    if (len == 0)
        return 0;
    if (MPIR_CVAR_CH4_GDR_PACK_KERNEL_MAX <= 0
        || MPIDI_GDR_global.device_seam.copy_runs == NULL || scratch_open() != 0) {
        /* no kernel to launch (or no scratch): the copy engine, block by block */
        MPIDI_GDR_copy_way_t way = {.device = 1 };
        return MPIDI_GDR_typed_copy(buf, count, type, &cur, 0, flat, len, gather, way);
    }
    MPIDI_GDR_copy_way_t way = {.device = 1,.queue = m->queue,
        .kernels = &MPIDI_GDR_global.pipe.pack_kernels
    };
    int rc = 0;
    /* queued in order on one stream: the scratch's next use follows its last */
    for (size_t from = 0; from < len && rc == 0; from += MPIDI_GDR_MSG_SCRATCH) {
        size_t n = len - from < MPIDI_GDR_MSG_SCRATCH ? len - from : MPIDI_GDR_MSG_SCRATCH;
        if (gather)
            rc = MPIDI_GDR_typed_copy(buf, count, type, &cur, from, m->scratch, n, 1, way)
                || gdr_gpu_copy_async(g, m->queue, flat + from, m->scratch, n);
        else
            rc = gdr_gpu_copy_async(g, m->queue, m->scratch, flat + from, n)
                || MPIDI_GDR_typed_copy(buf, count, type, &cur, from, m->scratch, n, 0, way);
    }
    /* the host buffer is the caller's again when this returns (and after a failure) */
    int sync = gdr_gpu_stream_sync(g, m->queue);
    return rc != 0 ? rc : sync;
}

void MPIDI_GDR_msg_device_free(void)
{
    MPIDI_GDR_msg_device_t *m = MSG_DEV;
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    if (m->queue != NULL) {
        (void) gdr_gpu_stream_sync(g, m->queue);
        (void) gdr_gpu_stream_destroy(g, m->queue);
    }
    if (m->scratch != NULL)
        (void) gdr_gpu_mem_free(g, m->scratch);
    *m = (MPIDI_GDR_msg_device_t) {
    0};
}
