/* The windows this rank's GPU work reaches directly: its own (device or page-locked
 * memory) and same-node ranks' device windows mapped through CUDA IPC.  One table a
 * window, shared by every path that uses them (the RMA path of gdr_rma_ipc.c, stream RMA
 * of gdr_enqueue.c, device handles of gdr_device_win.c), so that a peer's window is
 * mapped once in this process: opened at the first need, closed at the window's free. */
#include "gdr_internal.h"
#include "gdr_triggered.h"
#include "gpu/gdr_gpu_ipc.h"
#include "gpu/gdr_gpu_mem.h"

struct MPIDI_GDR_peer_maps {
    int n;
    int held;                   /* GPU work may still use them: never closed */
    unsigned char *seen;        /* per rank: looked at */
    gdr_dev_peer_t *peer;       /* per rank (base NULL: not reachable this way) */
};

/* rank's window as GPU work reaches it, into *out (zeroed when it is not). */
static void peer_open(MPIR_Win * win, int rank, gdr_dev_peer_t * out)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    memset(out, 0, sizeof(*out));
    if (!g->on)
        return;
    if (rank == win->comm_ptr->rank) {
        /* a pageable host window is not: the GPU cannot reach it, and copies to it are
         * not stream-ordered */
        gdr_gpu_mem_info_t info;
        if (win->size == 0 || gdr_gpu_mem_query(g, win->base, &info) != 0
            || !(info.is_device || info.is_pinned_host))
            return;
        *out = (gdr_dev_peer_t) {.base = win->base,.size = (uint64_t) win->size,
            .disp_unit = (uint64_t) win->disp_unit };
        return;
    }
    const struct MPIDI_GDR_peer_ipc *ipc = GDR_WIN(win).peer_ipc;
    void *p;
    if (ipc == NULL || !ipc[rank].ok)
        return;
    if (gdr_gpu_ipc_open(g, &ipc[rank].h, &p) != 0) {
        /* still correct: the rank is then reached the other way */
        if (MPIR_CVAR_CH4_GDR_VERBOSE > 0)
            fprintf(stderr, "gdr[%d]: rank %d's device window not mapped (CUDA IPC): %s\n",
                    MPIR_Process.rank, rank, g->error);
        return;
    }
    *out = (gdr_dev_peer_t) {.base = p,.size = ipc[rank].size,.disp_unit = ipc[rank].disp_unit };
    MPIDI_GDR_global.peer_windows_mapped++;
}

void MPIDI_GDR_peer_maps_register_pvars(void)
{
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG,
                              "gdr_peer_windows_mapped", &MPIDI_GDR_global.peer_windows_mapped,
                              1, NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL,
                              NULL, "CH4_GDR", "same-node ranks' device windows mapped into "
                              "this process through CUDA IPC: once per window and rank, "
                              "shared by MPI calls, stream RMA and device handles");
}

const gdr_dev_peer_t *MPIDI_GDR_peer_mapped(MPIR_Win * win, int rank)
{
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    int n = win->comm_ptr->local_size;
    if (s == NULL || rank < 0 || rank >= n)
        return NULL;
    struct MPIDI_GDR_peer_maps *m = s->maps;
    if (m == NULL) {
        m = MPL_calloc(1, sizeof(*m), MPL_MEM_RMA);
        if (m != NULL) {
            m->seen = MPL_calloc(n, 1, MPL_MEM_RMA);
            m->peer = MPL_calloc(n, sizeof(*m->peer), MPL_MEM_RMA);
            m->n = n;
        }
        if (m == NULL || m->seen == NULL || m->peer == NULL) {
            if (m != NULL) {
                MPL_free(m->seen);
                MPL_free(m->peer);
                MPL_free(m);
            }
            return NULL;        /* only a shortcut lost: the rank is reached the other way */
        }
        s->maps = m;
    }
    if (!m->seen[rank]) {
        m->seen[rank] = 1;
        peer_open(win, rank, &m->peer[rank]);
    }
    return m->peer[rank].base != NULL ? &m->peer[rank] : NULL;
}

void MPIDI_GDR_peer_maps_hold(MPIR_Win * win)
{
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    if (s != NULL && s->maps != NULL)
        s->maps->held = 1;
}

void MPIDI_GDR_peer_maps_free(MPIR_Win * win)
{
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    struct MPIDI_GDR_peer_maps *m = s != NULL ? s->maps : NULL;
    if (m == NULL)
        return;
    for (int r = 0; !m->held && r < m->n; r++)
        if (m->peer[r].base != NULL && r != win->comm_ptr->rank)
            (void) gdr_gpu_ipc_close(&MPIDI_GDR_global.gpu, m->peer[r].base);
    MPL_free(m->seen);
    MPL_free(m->peer);
    MPL_free(m);
    s->maps = NULL;
}
