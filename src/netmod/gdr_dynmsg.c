/* The inbox of dynamic messages (gdr_spawn.c): the pieces the channel delivers under
 * MPIDI_GDR_DYNPROC_HANDLER, put together per sender and kept in arrival order until
 * MPIDI_GDR_dynmsg_take hands one out.  A piece that does not continue its sender's
 * message, or a header that does not fit, is refused: nothing is written outside a
 * message's own buffer. */
#include "gdr_internal.h"

static int dynmsg_error(int errclass, const char *what)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, errclass, "**gdr_dynproc", "**gdr_dynproc %s", what);
    return mpi_errno;
}

int MPIDI_GDR_dynmsg_deliver(int src, const void *am_hdr, size_t am_hdr_sz, const void *data,
                             size_t data_sz)
{
    MPIDI_GDR_dynmsg_hdr_t h;
    struct MPIDI_GDR_dynmsg *m = NULL, **tail = &MPIDI_GDR_global.dyn_head;
    if (am_hdr_sz != sizeof(h))
        return dynmsg_error(MPI_ERR_INTERN, "a dynamic-process message with a bad header");
    memcpy(&h, am_hdr, sizeof(h));
    /* the piece continues the last message from src that is not whole yet */
    for (struct MPIDI_GDR_dynmsg * p = MPIDI_GDR_global.dyn_head; p != NULL; p = p->next) {
        if (p->src == src && p->filled < p->size)
            m = p;
        tail = &p->next;
    }
    if (h.offset == 0 && m == NULL) {
        if (h.size > MPIDI_GDR_DYNMSG_MAX)
            return dynmsg_error(MPI_ERR_INTERN, "a dynamic-process message too large");
        m = MPL_malloc(sizeof(*m) + h.size, MPL_MEM_OTHER);
        if (m == NULL)
            return dynmsg_error(MPI_ERR_NO_MEM, "out of memory for a dynamic-process message");
        *m = (struct MPIDI_GDR_dynmsg) {.src = src,.tag = h.tag,.context_id = h.context_id,
            .size = h.size
        };
        *tail = m;
    }
    if (m == NULL || h.offset != m->filled || h.size != m->size || data_sz > m->size - m->filled)
        return dynmsg_error(MPI_ERR_INTERN, "a piece of a dynamic-process message out of order");
    memcpy(m->data + m->filled, data, data_sz);
    m->filled += data_sz;
    return MPI_SUCCESS;
}

/* The first whole message with tag and context_id (from src; -1: any), unlinked; NULL. */
struct MPIDI_GDR_dynmsg *MPIDI_GDR_dynmsg_take(int src, int tag, int context_id)
{
    for (struct MPIDI_GDR_dynmsg ** p = &MPIDI_GDR_global.dyn_head; *p != NULL;
         p = &(*p)->next) {
        struct MPIDI_GDR_dynmsg *m = *p;
        if (m->filled == m->size && m->tag == tag && m->context_id == context_id
            && (src < 0 || m->src == src)) {
            *p = m->next;
            return m;
        }
    }
    return NULL;
}

void MPIDI_GDR_dynmsg_free_all(void)
{
    while (MPIDI_GDR_global.dyn_head != NULL) {
        struct MPIDI_GDR_dynmsg *m = MPIDI_GDR_global.dyn_head;
        MPIDI_GDR_global.dyn_head = m->next;
        MPL_free(m);
    }
}
