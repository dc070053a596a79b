/* Windows: created, synchronised and freed by MPICH's generic RMA layer (MPIDIG).
 * The hooks fill the engine's window registry (src/rma/gdr_rma_win.h): register window
 * memory for RDMA, exchange every target's card (origin-side range checks, the RDMA
 * path) and destroy the key at MPI_Win_free.  With MPI_THREAD_MULTIPLE another thread may
 * be in gdr's progress (reading these registries) or making its own window: every change
 * of gdr's shared state happens under the engine lock, never across a collective. */
#include "gdr_triggered.h"
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_rma.h"
#include "gdr_rma_ipc.h"
#include "gdr_engine_lock.h"
#include "gdr_notify.h"
#include "gpu/gdr_gpu_ipc.h"
#include "gpu/gdr_gpu_mem.h"

#include <strings.h>      /* after MPICH's headers, which set the feature macros */

/* The ops a window declares (which_accumulate_ops), in gdr_rma_path's terms. */
static unsigned declared_ops(MPIR_Win * win)
{
    uint32_t which = MPIDIG_WIN(win, info_args).which_accumulate_ops;
    unsigned d = 0;
    for (int i = 0; i < MPIDIG_ACCU_NUM_OP; i++) {
        if (!(which & (1u << i)))
            continue;
        MPI_Op op = MPIDIU_win_acc_get_op(i);
        if (op == MPI_SUM)
            d |= GDR_RMA_DECLARES_SUM;
        else if (op == MPI_NO_OP)
            d |= GDR_RMA_DECLARES_NO_OP;
        else if (op == MPI_OP_NULL)
            d |= GDR_RMA_DECLARES_CSWAP;
        else
            d |= GDR_RMA_DECLARES_OTHER;
    }
    return d;
}

/* What a rank tells the others of its window: the engine's card, and for device memory
 * its CUDA IPC handle, which ranks of the same node map (gdr_device_win.c). */
typedef struct win_card {
    gdr_rma_card_t rma;
    gdr_gpu_ipc_handle_t ipc;
    int32_t ipc_ok;
    int32_t pad;
    uint64_t gpu;               /* which GPU this rank uses (a hash of its PCI bus id); 0: none */
} win_card_t;

/* This rank's IPC handle for a window in device memory (nothing for other memory), and
 * its GPU. */
static void card_ipc(MPIR_Win * win, win_card_t * c)
{
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;
    c->ipc_ok = win->create_flavor != MPI_WIN_FLAVOR_DYNAMIC && win->size > 0
        && g->on && MPIDI_GDR_gpu_buffer_id(win->base) != 0
        && gdr_gpu_ipc_handle_get(g, win->base, &c->ipc) == 0;
    c->gpu = 0;
    for (const char *b = g->on ? g->busid : ""; *b != '\0'; b++)   /* FNV-1a */
        c->gpu = (c->gpu ^ (unsigned char) *b) * 0x100000001b3ull;
    c->gpu |= g->on;            /* never 0 for a GPU */
}

/* Whether every rank of this rank's node uses this rank's GPU (the same answer on each
 * of them): then same-node accumulates may all be GPU atomics on it. */
static int node_on_one_gpu(MPIR_Win * win, const win_card_t * cards)
{
    int n = win->comm_ptr->local_size, me = win->comm_ptr->rank;
    int my_grank = MPIDIU_get_grank(me, win->comm_ptr);
    if (my_grank < 0 || cards[me].gpu == 0)
        return 0;
    for (int i = 0; i < n; i++) {
        int g = MPIDIU_get_grank(i, win->comm_ptr);
        if (g < 0 || (MPIR_Process.node_map[g] == MPIR_Process.node_map[my_grank]
                      && cards[i].gpu != cards[me].gpu))
            return 0;
    }
    return 1;
}

/* The same-node device windows among the cards, for the IPC paths. */
static void keep_peer_ipc(MPIR_Win * win, const win_card_t * cards)
{
    int n = win->comm_ptr->local_size, me = win->comm_ptr->rank;
    int my_grank = MPIDIU_get_grank(me, win->comm_ptr), found = 0;
    for (int i = 0; i < n; i++)
        found |= i != me && cards[i].ipc_ok;
    if (!found || my_grank < 0)
        return;
    struct MPIDI_GDR_peer_ipc *p = MPL_calloc(n, sizeof(*p), MPL_MEM_RMA);
    if (p == NULL)
        return;                 /* only a shortcut lost: the ring and messages remain */
    for (int i = 0; i < n; i++) {
        int g = MPIDIU_get_grank(i, win->comm_ptr);
        p[i] = (struct MPIDI_GDR_peer_ipc) {.h = cards[i].ipc,.size = cards[i].rma.size,
            .disp_unit = cards[i].rma.disp_unit,
            .ok = i != me && cards[i].ipc_ok && g >= 0
                && MPIR_Process.node_map[g] == MPIR_Process.node_map[my_grank]
        };
    }
    GDR_WIN(win).peer_ipc = p;
}

/* Collective over the window's communicator: every rank learns every target's card
 * (size, displacement unit, whether its memory is device memory and its GPU layer on
 * and, when RDMA can reach it, registered base and key; a device window's IPC handle),
 * and the ranks agree on the accumulate rule (gdr_rma_path.h). */
static int win_table_init(MPIR_Win * win, int rdma)
{
    int mpi_errno = MPI_SUCCESS;
    win->dev.netmod.gdr.s = MPL_calloc(1, sizeof(struct MPIDI_GDR_win_state), MPL_MEM_RMA);
    if (win->dev.netmod.gdr.s == NULL)
        MPIR_ERR_SETANDSTMT1(mpi_errno, MPI_ERR_NO_MEM, return mpi_errno, "**nomem",
                             "**nomem %s", "gdr window state");
    gdr_rma_win_t *w = &GDR_WIN(win).rma;
    int n = win->comm_ptr->local_size, me = win->comm_ptr->rank;
    win_card_t *cards = MPL_calloc(n, sizeof(*cards), MPL_MEM_RMA);

    /* RDMA needs the engine, and a path to every rank it reaches (queue pairs come with
     * the first operation to each) */
    rdma = rdma && MPIDI_GDR_global.have_engine;
    int took = MPIDI_GDR_engine_enter(), made = cards != NULL
        && gdr_rma_win_init(w, &MPIDI_GDR_global.engine, win, n, me,
                            win->create_flavor == MPI_WIN_FLAVOR_DYNAMIC, rdma) == GDR_RMA_OK;
    for (int i = 0; made && rdma && i < n; i++) {
        int grank = MPIDIU_get_grank(i, win->comm_ptr);     /* -1: not in MPI_COMM_WORLD */
        if (grank >= 0 && gdr_verbs_am_reaches(MPIDI_GDR_global.am, grank))
            gdr_rma_win_set_peer(w, i, grank);
    }
    MPIDI_GDR_engine_exit(took);
    if (!made)
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                             "gdr window table");
    /* NIC atomics only if every accumulate of the window, from anyone, reaches a NIC;
     * native locks only if every rank reaches every lock word by RDMA and wants them */
    int mine[2] = {
        gdr_rma_win_all_reachable(w) && (MPIDI_WIN(win, winattr) & MPIDI_WINATTR_ACCU_NO_SHM),
        gdr_rma_win_all_reachable(w) ? MPIR_CVAR_CH4_GDR_NATIVE_SYNC : 0
    }, agreed[2] = { 0, 0 };
    mpi_errno = MPIR_Allreduce(mine, agreed, 2, MPIR_INT_INTERNAL, MPI_MIN, win->comm_ptr,
                               MPIR_COLL_ATTR_SYNC);
    MPIR_ERR_CHECK(mpi_errno);
    gdr_rma_win_set_policy(w, agreed[0], declared_ops(win),
                           MPIDIG_WIN(win, info_args).accumulate_ordering != 0);
    uint64_t backoff_max_ns = MPIR_CVAR_CH4_GDR_LOCK_BACKOFF_MAX_US > 1
        ? (uint64_t) MPIR_CVAR_CH4_GDR_LOCK_BACKOFF_MAX_US * 1000 : 1000;
    gdr_rma_ctl_configure(&w->ctl, agreed[1] >= 1);
    gdr_rma_passive_configure(&w->passive, 1000, backoff_max_ns);
    GDR_WIN(win).native_active = agreed[1] >= 2;

    char why[256];
    took = MPIDI_GDR_engine_enter();
    int exposed = gdr_rma_win_expose(w, win->base, (uint64_t) win->size,
                                     (uint64_t) win->disp_unit,
                                     MPIDI_GDR_gpu_expose_flags(win->base), &cards[me].rma,
                                     why, sizeof(why));
    card_ipc(win, &cards[me]);
    MPIDI_GDR_engine_exit(took);
    if (exposed != 0 && MPIR_CVAR_CH4_GDR_VERBOSE > 0)
        /* still correct: every operation on this window then goes as a message */
        fprintf(stderr, "gdr[%d]: window without RDMA: %s\n", MPIR_Process.rank, why);
    mpi_errno = MPIR_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, cards, sizeof(*cards),
                               MPIR_BYTE_INTERNAL, win->comm_ptr, MPIR_COLL_ATTR_SYNC);
    MPIR_ERR_CHECK(mpi_errno);
    took = MPIDI_GDR_engine_enter();
    for (int i = 0; i < n; i++)
        gdr_rma_win_set_card(w, i, &cards[i].rma);
    keep_peer_ipc(win, cards);
    if (MPIDI_GDR_ipc_claims(win, node_on_one_gpu(win, cards)))
        MPIDI_WIN(win, winattr) |= MPIDI_WINATTR_NM_LOCAL;     /* (MPICH patch 0015) */
    MPIDI_GDR_engine_exit(took);
  fn_exit:
    MPL_free(cards);
    return mpi_errno;
  fn_fail:
    if (win->dev.netmod.gdr.s != NULL) {
        took = MPIDI_GDR_engine_enter();
        gdr_rma_win_free(&GDR_WIN(win).rma);
        MPIDI_GDR_engine_exit(took);
        MPL_free(GDR_WIN(win).peer_ipc);
        MPL_free(win->dev.netmod.gdr.s);
        win->dev.netmod.gdr.s = NULL;
    }
    goto fn_exit;
}

/* Whether target (a window rank) attached all of [addr, addr+len) of its dynamic window:
 * MPI_SUCCESS, or MPI_ERR_RMA_RANGE.  May ask the target (gdr_win_dynamic.c), and keeps
 * what it learned until the target announces a detach or, without control blocks, until
 * its operations there complete (gdr_rma_regions.h). */
static int dynamic_check(MPIR_Win * win, int target, uint64_t addr, uint64_t len)
{
    int mpi_errno = MPI_SUCCESS, not_attached = 0;
    uint32_t rkey;
    gdr_rma_win_t *w = &GDR_WIN(win).rma;

    int took = MPIDI_GDR_engine_enter();
    int rc = gdr_rma_regions_lookup(&w->regions, &MPIDI_GDR_global.engine, win, w->self, target,
                                    addr, len, &rkey, &not_attached);
    MPIDI_GDR_engine_exit(took);
    if (rc == GDR_RMA_OK)
        return MPI_SUCCESS;
    if (not_attached)
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range_dynamic",
                      "**gdr_range_dynamic %d %s", target, target == w->self
                      ? "this rank's own MPI_Win_attach regions do not cover it"
                      : "that rank's MPI_Win_attach regions do not cover it (attach before "
                      "the access; detach only after the origins' flush or unlock)");
    else
        mpi_errno = MPIDI_GDR_rma_error(rc);    /* asking the target failed */
    return mpi_errno;
}

/* Every case but a predefined type inside a static window: the full check, which names
 * what is wrong (out of line: the common case keeps a small frame). */
static __attribute__((noinline))
int check_target_full(MPIR_Win * win, int target_rank, MPI_Aint target_disp,
                      MPI_Aint target_count, MPI_Datatype target_datatype)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint true_lb;

    if (target_rank == MPI_PROC_NULL || target_count <= 0 || win->dev.netmod.gdr.s == NULL
        || GDR_WIN(win).rma.targets == NULL
        || target_rank < 0 || target_rank >= win->comm_ptr->local_size)
        return MPI_SUCCESS;     /* nothing touched, no table, or rank already refused */
    const gdr_rma_win_t *w = &GDR_WIN(win).rma;
    uint64_t span = MPIDI_GDR_target_span(target_count, target_datatype, &true_lb);
    gdr_rma_range_status_t st = gdr_rma_win_check_range(w, target_rank, target_disp, true_lb,
                                                        span);
    if (st == GDR_RMA_RANGE_OK)
        /* (a dynamic window's addresses are absolute: disp + lb did not overflow) */
        return w->dynamic && span > 0
            ? dynamic_check(win, target_rank, (uint64_t) (target_disp + true_lb), span)
            : MPI_SUCCESS;
    if (w->dynamic)
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                      "the address overflows");
    else if (st == GDR_RMA_RANGE_NEGATIVE_DISP)
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_DISP, "**gdr_range", "**gdr_range %s",
                      gdr_rma_range_str(st));
    else
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                      gdr_rma_range_str(st));
    return mpi_errno;
}

int MPIDI_GDR_rma_check_target(MPIR_Win * win, int target_rank, MPI_Aint target_disp,
                               MPI_Aint target_count, MPI_Datatype target_datatype)
{
    /* every operation passes here: a predefined type inside a static window answers at
     * once (a rank outside the window's group, PROC_NULL included, fails the unsigned
     * compare and goes to the full check) */
    const struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    uint64_t bytes, off;
    if (s != NULL && HANDLE_IS_BUILTIN(target_datatype) && s->rma.targets != NULL
        && !s->rma.dynamic && (unsigned) target_rank < (unsigned) s->rma.n
        && !__builtin_mul_overflow((uint64_t) target_count,
                                   (uint64_t) MPIR_Datatype_get_basic_size(target_datatype),
                                   &bytes)
        && gdr_rma_range_check(target_disp, s->rma.targets[target_rank].disp_unit, bytes,
                               s->rma.targets[target_rank].size, &off) == GDR_RMA_RANGE_OK)
        return MPI_SUCCESS;
    return check_target_full(win, target_rank, target_disp, target_count, target_datatype);
}

int MPIDI_GDR_mpi_win_create(void *base, MPI_Aint length, int disp_unit, MPIR_Info * info,
                             MPIR_Comm * comm_ptr, MPIR_Win ** win_ptr)
{
    return MPIDIG_mpi_win_create(base, length, disp_unit, info, comm_ptr, win_ptr);
}

/* Whether MPI_Win_allocate's info asks for CUDA device memory: the first kind listed in
 * mpi_memory_alloc_kinds (MPI 4.1 memory-allocation kinds) is "cuda:device".  Any other
 * first kind, or no key, leaves the allocation to MPICH (host memory). */
static int wants_device_memory(MPIR_Info * info)
{
    const char *kinds = info != NULL ? MPIR_Info_lookup(info, "mpi_memory_alloc_kinds") : NULL;
    if (kinds == NULL)
        return 0;
    size_t len = strcspn(kinds, ",");
    return len == strlen("cuda:device") && strncasecmp(kinds, "cuda:device", len) == 0;
}

/* Device memory from gdr's GPU layer, exposed as a window made by MPIDIG's create path
 * and reported as MPI_WIN_FLAVOR_ALLOCATE (MPIDI_GDR_mpi_win_free undoes both). */
static int win_allocate_device(MPI_Aint length, int disp_unit, MPIR_Info * info,
                               MPIR_Comm * comm_ptr, void **baseptr, MPIR_Win ** win_ptr)
{
    int mpi_errno = MPI_SUCCESS;
    void *base = NULL;
    gdr_gpu_t *g = &MPIDI_GDR_global.gpu;

    MPIR_ERR_CHKANDJUMP1(!g->on, mpi_errno, MPI_ERR_INFO_VALUE, "**gdr_alloc_kind",
                         "**gdr_alloc_kind %s", g->error);
    int took = MPIDI_GDR_engine_enter();
    int failed = length > 0 && gdr_gpu_mem_alloc(g, (size_t) length, &base) != 0;
    MPIDI_GDR_engine_exit(took);
    if (failed)
        MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_NO_MEM, "**gdr_alloc_device",
                             "**gdr_alloc_device %L %s", (long long) length, g->error);
    mpi_errno = MPIDIG_mpi_win_create(base, length, disp_unit, info, comm_ptr, win_ptr);
    MPIR_ERR_CHECK(mpi_errno);
    (*win_ptr)->create_flavor = MPI_WIN_FLAVOR_ALLOCATE;
    *baseptr = base;
  fn_exit:
    return mpi_errno;
  fn_fail:
    if (base != NULL) {
        took = MPIDI_GDR_engine_enter();
        (void) gdr_gpu_mem_free(g, base);
        MPIDI_GDR_engine_exit(took);
    }
    goto fn_exit;
}

int MPIDI_GDR_mpi_win_allocate(MPI_Aint length, int disp_unit, MPIR_Info * info,
                               MPIR_Comm * comm_ptr, void *baseptr, MPIR_Win ** win_ptr)
{
    if (wants_device_memory(info))
        return win_allocate_device(length, disp_unit, info, comm_ptr, (void **) baseptr,
                                   win_ptr);
    return MPIDIG_mpi_win_allocate(length, disp_unit, info, comm_ptr, baseptr, win_ptr);
}

int MPIDI_GDR_mpi_win_allocate_shared(MPI_Aint size, int disp_unit, MPIR_Info * info,
                                      MPIR_Comm * comm_ptr, void **base_ptr, MPIR_Win ** win_ptr)
{
    return MPIDIG_mpi_win_allocate_shared(size, disp_unit, info, comm_ptr, base_ptr, win_ptr);
}

int MPIDI_GDR_mpi_win_create_dynamic(MPIR_Info * info, MPIR_Comm * comm, MPIR_Win ** win)
{
    return MPIDIG_mpi_win_create_dynamic(info, comm, win);
}

int MPIDI_GDR_mpi_win_attach(MPIR_Win * win, void *base, MPI_Aint size)
{
    return MPIDIG_mpi_win_attach(win, base, size);
}

int MPIDI_GDR_mpi_win_detach(MPIR_Win * win, const void *base)
{
    return MPIDIG_mpi_win_detach(win, base);
}

int MPIDI_GDR_mpi_win_free(MPIR_Win ** win_ptr)
{
    MPIR_Win *win = *win_ptr;
    void *device_base = NULL;
    /* MPICH allocates host memory only: device memory under an allocated window is
     * win_allocate_device's, which MPIDIG must see as a created window to leave it alone */
    if (win->create_flavor == MPI_WIN_FLAVOR_ALLOCATE && win->base != NULL
        && MPIDI_GDR_global.gpu.on && MPIDI_GDR_gpu_buffer_id(win->base) != 0) {
        device_base = win->base;
        win->create_flavor = MPI_WIN_FLAVOR_CREATE;
    }
    /* no lock release may reach a target after its free's barrier deregistered the word
     * (the free goes on after a failure: the other ranks are in the barrier) */
    int drain_errno = MPIDI_GDR_win_drain_releases(win);
    /* notification counters first: their window's free is collective as this one, and
     * MPICH's window free must not run inside it */
    int notify_errno = MPIDI_GDR_notify_win_free(win);
    if (drain_errno == MPI_SUCCESS)
        drain_errno = notify_errno;
    int mpi_errno = MPIDIG_mpi_win_free(win_ptr);
    if (drain_errno != MPI_SUCCESS)
        mpi_errno = drain_errno;
    int took = MPIDI_GDR_engine_enter();
    int failed = device_base != NULL && gdr_gpu_mem_free(&MPIDI_GDR_global.gpu, device_base) != 0;
    MPIDI_GDR_engine_exit(took);
    if (failed && mpi_errno == MPI_SUCCESS)
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**gdr_free_device", "**gdr_free_device %p %s",
                      device_base, MPIDI_GDR_global.gpu.error);
    return mpi_errno;
}

int MPIDI_GDR_mpi_win_set_info(MPIR_Win * win, MPIR_Info * info)
{
    return MPIDIG_mpi_win_set_info(win, info);
}

int MPIDI_GDR_mpi_win_get_info(MPIR_Win * win, MPIR_Info ** info_p_p)
{
    return MPIDIG_mpi_win_get_info(win, info_p_p);
}

/* The registry, then the staged protocol's part (it needs the cards). */
static int win_staged_init(MPIR_Win * win)
{
    int mpi_errno = win_table_init(win, 1);
    if (mpi_errno == MPI_SUCCESS) {
        int took = MPIDI_GDR_engine_enter();
        MPIDI_GDR_staged_win_new(win);
        MPIDI_GDR_engine_exit(took);
    }
    return mpi_errno;
}

int MPIDI_GDR_mpi_win_create_hook(MPIR_Win * win)
{
    return win_staged_init(win);
}

int MPIDI_GDR_mpi_win_allocate_hook(MPIR_Win * win)
{
    return win_staged_init(win);
}

int MPIDI_GDR_mpi_win_allocate_shared_hook(MPIR_Win * win)
{
    return win_table_init(win, 0);      /* one node: MPICH's shm module */
}

int MPIDI_GDR_mpi_win_create_dynamic_hook(MPIR_Win * win)
{
    /* no memory yet: this agrees on the accumulate rule and who has a queue pair */
    return win_staged_init(win);
}

int MPIDI_GDR_mpi_win_attach_hook(MPIR_Win * win, void *base, MPI_Aint size)
{
    return MPIDI_GDR_dynamic_attach(win, base, size);
}

int MPIDI_GDR_mpi_win_detach_hook(MPIR_Win * win, const void *base)
{
    return MPIDI_GDR_dynamic_detach(win, base);
}

int MPIDI_GDR_mpi_win_free_hook(MPIR_Win * win)
{
    if (win->dev.netmod.gdr.s == NULL)
        return MPI_SUCCESS;     /* its creation failed before gdr's part */
    /* epochs are closed, so nothing should be in flight; never free under the NIC */
    int mpi_errno = MPIDI_GDR_triggered_win_free(win);
    int mpi_errno2 = MPIDI_GDR_rma_wait_all(win, 0);
    mpi_errno = mpi_errno ? mpi_errno : mpi_errno2;
    int took = MPIDI_GDR_engine_enter();
    MPIDI_GDR_staged_win_free(win);
    MPIDI_GDR_ipc_free(win);
    MPIDI_GDR_peer_maps_free(win);      /* every path's GPU work waited for above */
    gdr_rma_win_free(&GDR_WIN(win).rma);        /* the key dies here */
    MPIDI_GDR_engine_exit(took);
    MPL_free(GDR_WIN(win).peer_ipc);
    MPL_free(win->dev.netmod.gdr.s);
    win->dev.netmod.gdr.s = NULL;
    return mpi_errno;
}
