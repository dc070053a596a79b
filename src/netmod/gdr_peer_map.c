/* The windows this rank's GPU work reaches directly: its own (device or page-locked
 * memory) and same-node ranks' device windows mapped through CUDA IPC.  One table a
 * window, shared by every path that uses them (the RMA path of gdr_rma_ipc.c, stream RMA
 * of gdr_enqueue.c, device handles of gdr_device_win.c), so that a peer's window is
 * mapped once in this process: opened at the first need, closed at the window's free.
 * Dynamic windows' attached device regions likewise, except that each stays mapped only
 * until this rank's operations to its rank complete (the target may then detach and free
 * it; CUDA leaves freeing exported memory that is still mapped elsewhere undefined). */
#include "gdr_internal.h"
#include "gdr_triggered.h"
#include "gpu/gdr_gpu_ipc.h"
#include "gpu/gdr_gpu_mem.h"

/* A dynamic window's region at a rank, as looked up (gdr_win_dynamic.c). */
typedef struct {
    int rank;
    uint64_t addr, size;        /* at rank */
    gdr_dev_peer_t view;        /* base NULL: not reachable this way (messages) */
} peer_region_t;

struct MPIDI_GDR_peer_maps {
    int n;
    int held;                   /* GPU work may still use them: never closed */
    unsigned char *seen;        /* per rank: looked at */
    gdr_dev_peer_t *peer;       /* per rank (base NULL: not reachable this way) */
    peer_region_t *regions;     /* dynamic windows: regions looked up this epoch */
    int n_regions, cap_regions;
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
                              "shared by MPI calls, stream RMA and device handles (a dynamic "
                              "window's device regions: once per region and epoch)");
}

/* The window's table, made at the first ask; NULL without memory. */
static struct MPIDI_GDR_peer_maps *maps_of(MPIR_Win * win)
{
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    int n = win->comm_ptr->local_size;
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
    return m;
}

const gdr_dev_peer_t *MPIDI_GDR_peer_mapped(MPIR_Win * win, int rank)
{
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    if (s == NULL || rank < 0 || rank >= win->comm_ptr->local_size)
        return NULL;
    struct MPIDI_GDR_peer_maps *m = maps_of(win);
    if (m == NULL)
        return NULL;
    if (!m->seen[rank]) {
        m->seen[rank] = 1;
        peer_open(win, rank, &m->peer[rank]);
    }
    return m->peer[rank].base != NULL ? &m->peer[rank] : NULL;
}

/* rank's region around addr as GPU work reaches it, into *view (base NULL: it does not);
 * *found 0: not attached. */
static int region_open(MPIR_Win * win, int rank, uint64_t addr, peer_region_t * out,
                       int *found)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    gdr_rma_region_reply_t reply;
    gdr_gpu_ipc_handle_t h;
    int ok, mpi_errno = MPI_SUCCESS;
    void *p;

    *out = (peer_region_t) {.rank = rank };
    if (rank == win->comm_ptr->rank) {
        reply = gdr_rma_regions_describe(&GDR_WIN(win).rma.regions, addr);
        ok = reply.device;      /* this rank's own memory: no mapping */
        p = (void *) (uintptr_t) reply.base;
    } else {
        if (!MPIDI_av_is_local(MPIDIU_comm_rank_to_av(win->comm_ptr, rank)))
            return MPI_SUCCESS; /* another node: the NIC, the staged protocol or messages */
        mpi_errno = MPIDI_GDR_dynamic_query_ipc(win, rank, addr, &reply, &h, &ok);
        if (mpi_errno != MPI_SUCCESS)
            return mpi_errno;
        if (ok && gdr_gpu_ipc_open(g, &h, &p) != 0) {
            if (MPIR_CVAR_CH4_GDR_VERBOSE > 0)      /* still correct: messages carry it */
                fprintf(stderr, "gdr[%d]: rank %d's attached device memory not mapped "
                        "(CUDA IPC): %s\n", MPIR_Process.rank, rank, g->error);
            ok = 0;
        }
        if (ok)
            MPIDI_GDR_global.peer_windows_mapped++;
    }
    *found = reply.found;
    out->addr = reply.base;
    out->size = reply.size;
    if (reply.found && ok)
        out->view = (gdr_dev_peer_t) {.base = p,.size = reply.size,.disp_unit = 1 };
    return MPI_SUCCESS;
}

const gdr_dev_peer_t *MPIDI_GDR_peer_region_mapped(MPIR_Win * win, int rank, uint64_t addr,
                                                   uint64_t * at_target, int *mpi_errno)
{
    struct MPIDI_GDR_peer_maps *m;
    int found = 0;
    *mpi_errno = MPI_SUCCESS;
    if (win->dev.netmod.gdr.s == NULL || !MPIDI_GDR_global.gpu.on
        || rank < 0 || rank >= win->comm_ptr->local_size || (m = maps_of(win)) == NULL)
        return NULL;
    for (int i = 0; i < m->n_regions; i++) {
        peer_region_t *r = &m->regions[i];
        if (r->rank == rank && addr >= r->addr && addr - r->addr < r->size) {
            *at_target = r->addr;
            return r->view.base != NULL ? &r->view : NULL;
        }
    }
    if (m->n_regions == m->cap_regions) {
        int cap = m->cap_regions > 0 ? 2 * m->cap_regions : 4;
        peer_region_t *more = MPL_realloc(m->regions, (size_t) cap * sizeof(*more),
                                          MPL_MEM_RMA);
        if (more == NULL)
            return NULL;        /* only a shortcut lost: messages carry it */
        m->regions = more;
        m->cap_regions = cap;
    }
    peer_region_t *r = &m->regions[m->n_regions];
    *mpi_errno = region_open(win, rank, addr, r, &found);
    if (*mpi_errno != MPI_SUCCESS || !found)
        return NULL;
    m->n_regions++;             /* (a host region too: remembered as not this path's) */
    *at_target = r->addr;
    return r->view.base != NULL ? &r->view : NULL;
}

void MPIDI_GDR_peer_regions_close(MPIR_Win * win, int rank)
{
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    struct MPIDI_GDR_peer_maps *m = s != NULL ? s->maps : NULL;
    if (m == NULL || m->held)
        return;
    int kept = 0;
    for (int i = 0; i < m->n_regions; i++) {
        peer_region_t *r = &m->regions[i];
        if (rank >= 0 && r->rank != rank) {
            m->regions[kept++] = *r;
            continue;
        }
        if (r->view.base != NULL && r->rank != win->comm_ptr->rank)
            (void) gdr_gpu_ipc_close(&MPIDI_GDR_global.gpu, r->view.base);
    }
    m->n_regions = kept;
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
    MPIDI_GDR_peer_regions_close(win, -1);
    MPL_free(m->regions);
    MPL_free(m->seen);
    MPL_free(m->peer);
    MPL_free(m);
    s->maps = NULL;
}
