/* Dynamic windows over RDMA.  A target registers every region it attaches (remote
 * access by the window's accumulate rule, agreed at MPI_Win_create_dynamic) and
 * deregisters it at detach.  An origin learns the region around a target address
 * on first use, through a query message answered by the target's progress engine,
 * and keeps what it learned until it next learns that its operations to that
 * target completed remotely (flush, unlock, fence, PSCW complete, a request-based
 * operation).  That is enough: a target may detach memory only after the origin's
 * operations on it completed, so a region the origin still knows is attached.
 * An address the target has not attached is refused at the origin
 * (MPI_ERR_RMA_RANGE) instead of being written. */
#include "gdr_impl.h"
#include "gdr_noinline.h"
#include "gdr_rma.h"
#include "gdr_am.h"

typedef struct {
    uint64_t win_id;
    uint64_t addr;
    uint64_t reply_to;          /* the origin's region_wait_t */
    int origin;                 /* rank in the window's communicator */
} region_query_t;

typedef struct {
    uint64_t reply_to;
    uint64_t base, size;
    uint32_t rkey;
    int found;
} region_reply_t;

typedef struct {
    volatile int done;
    region_reply_t reply;
} region_wait_t;

static MPIDI_GDR_attached_t *attached_at(MPIR_Win * win, uint64_t addr)
{
    for (MPIDI_GDR_attached_t * a = GDR_WIN(win).attached; a != NULL; a = a->next)
        if (addr >= a->base && addr - a->base < a->size)
            return a;
    return NULL;
}

int MPIDI_GDR_dynamic_is_attached(MPIR_Win * win, uint64_t addr)
{
    return GDR_WIN(win).target_peer == NULL || attached_at(win, addr) != NULL;
}

static void describe(const MPIDI_GDR_attached_t * a, region_reply_t * r)
{
    r->found = a != NULL;
    if (a != NULL) {
        r->base = a->base;
        r->size = a->size;
        r->rkey = a->region.mr != NULL ? a->region.rkey : 0;
    }
}

static int region_query_cb(void *am_hdr, void *data, MPI_Aint data_sz, uint32_t attr,
                           MPIR_Request ** req)
{
    const region_query_t *q = am_hdr;
    region_reply_t r = {.reply_to = q->reply_to };
    MPIR_Win *win = MPIDIU_map_lookup(MPIDI_global.win_map, q->win_id);

    if (attr & MPIDIG_AM_ATTR__IS_ASYNC)
        *req = NULL;
    if (win == MPIDIU_MAP_NOT_FOUND)
        return MPI_SUCCESS;     /* cannot happen: windows are created collectively */
    describe(attached_at(win, q->addr), &r);
    return MPIDI_NM_am_send_hdr_reply(win->comm_ptr, q->origin,
                                      MPIDI_GDR_global.region_reply_handler, &r, sizeof(r), 0, 0);
}

static int region_reply_cb(void *am_hdr, void *data, MPI_Aint data_sz, uint32_t attr,
                           MPIR_Request ** req)
{
    const region_reply_t *r = am_hdr;
    region_wait_t *w = (region_wait_t *) (uintptr_t) r->reply_to;

    if (attr & MPIDIG_AM_ATTR__IS_ASYNC)
        *req = NULL;
    w->reply = *r;
    w->done = 1;
    return MPI_SUCCESS;
}

int MPIDI_GDR_dynamic_register_handlers(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_GDR_global.region_query_handler = MPIDIG_am_reg_cb_dynamic(NULL, region_query_cb);
    MPIDI_GDR_global.region_reply_handler = MPIDIG_am_reg_cb_dynamic(NULL, region_reply_cb);
    MPIR_ERR_CHKANDJUMP1(MPIDI_GDR_global.region_query_handler < 0
                         || MPIDI_GDR_global.region_reply_handler < 0, mpi_errno, MPI_ERR_INTERN,
                         "**gdr_transport", "**gdr_transport %s",
                         "no free MPICH active-message handler id for dynamic windows");
  fn_fail:
    return mpi_errno;
}

int MPIDI_GDR_dynamic_attach(MPIR_Win * win, void *base, MPI_Aint size)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_GDR_win_t *w = &GDR_WIN(win);
    MPIDI_GDR_attached_t *a;

    if (w->target_peer == NULL || size <= 0)
        return MPI_SUCCESS;     /* no RDMA on this window, or nothing to reach */
    a = MPL_calloc(1, sizeof(*a), MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP1(a == NULL, mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                         "gdr attached region");
    a->base = (uintptr_t) base;
    a->size = (size_t) size;
    char why[256];
    if (gdr_verbs_rma_register(MPIDI_GDR_global.rma, base, (size_t) size,
                               MPIDI_GDR_win_access(win), &a->region, why, sizeof(why)) != 0) {
        /* still correct: accesses to this region go as messages */
        memset(&a->region, 0, sizeof(a->region));
        if (MPIR_CVAR_CH4_GDR_VERBOSE > 0)
            fprintf(stderr, "gdr[%d]: attached region without RDMA: %s\n", MPIR_Process.rank,
                    why);
    }
    a->next = w->attached;
    w->attached = a;
  fn_fail:
    return mpi_errno;
}

int MPIDI_GDR_dynamic_detach(MPIR_Win * win, const void *base)
{
    MPIDI_GDR_attached_t **p = &GDR_WIN(win).attached;
    while (*p != NULL && (*p)->base != (uintptr_t) base)
        p = &(*p)->next;
    if (*p == NULL)
        return MPI_SUCCESS;     /* zero-length, or not attached (MPICH does not check either) */
    MPIDI_GDR_attached_t *a = *p;
    *p = a->next;
    if (a->region.mr != NULL)
        gdr_verbs_rma_deregister(MPIDI_GDR_global.rma, &a->region);
    MPL_free(a);
    return MPI_SUCCESS;
}

void MPIDI_GDR_dynamic_free(MPIR_Win * win)
{
    while (GDR_WIN(win).attached != NULL)
        MPIDI_GDR_dynamic_detach(win, (void *) GDR_WIN(win).attached->base);
}

void MPIDI_GDR_dynamic_forget(MPIR_Win * win, int target)
{
    MPIDI_GDR_win_t *w = &GDR_WIN(win);
    int kept = 0;
    for (int i = 0; i < w->n_known; i++)
        if (target >= 0 && w->known[i].target != target)
            w->known[kept++] = w->known[i];
    w->n_known = kept;
    w->next_known = 0;
}

static int ask_target(MPIR_Win * win, int target, uint64_t addr, region_reply_t * out)
{
    int mpi_errno = MPI_SUCCESS;
    region_wait_t wait = { 0 };
    region_query_t q = {.win_id = MPIDIG_WIN(win, win_id),.addr = addr,
        .reply_to = (uint64_t) (uintptr_t) & wait,.origin = win->comm_ptr->rank
    };

    if (target == win->comm_ptr->rank) {
        describe(attached_at(win, addr), out);
        return MPI_SUCCESS;
    }
    mpi_errno = MPIDI_NM_am_send_hdr(target, win->comm_ptr, MPIDI_GDR_global.region_query_handler,
                                     &q, sizeof(q), 0, 0);
    while (mpi_errno == MPI_SUCCESS && !wait.done)
        mpi_errno = MPID_Progress_test(NULL);
    *out = wait.reply;
    return mpi_errno;
}

int MPIDI_GDR_dynamic_lookup(MPIR_Win * win, int target, uint64_t addr, uint64_t len,
                             uint32_t * rkey)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_GDR_win_t *w = &GDR_WIN(win);
    MPIDI_GDR_known_region_t *k = NULL;

    *rkey = 0;
    for (int i = 0; i < w->n_known && k == NULL; i++)
        if (w->known[i].target == target && addr >= w->known[i].base
            && addr - w->known[i].base < w->known[i].size)
            k = &w->known[i];
    if (k == NULL) {
        region_reply_t r = { 0 };
        mpi_errno = ask_target(win, target, addr, &r);
        MPIR_ERR_CHECK(mpi_errno);
        if (!r.found) {
            MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_RMA_RANGE, "**gdr_range", "**gdr_range %s",
                                 "the target has not attached this address to its dynamic "
                                 "window (MPI_Win_attach)");
        }
        if (w->n_known < MPIDI_GDR_KNOWN_REGIONS) {
            k = &w->known[w->n_known++];
        } else {
            k = &w->known[w->next_known];
            w->next_known = (w->next_known + 1) % MPIDI_GDR_KNOWN_REGIONS;
        }
        *k = (MPIDI_GDR_known_region_t) {
        .target = target,.base = r.base,.size = r.size,.rkey = r.rkey};
    }
    /* a range running past the region (into a neighbouring attachment, perhaps)
     * goes as a message */
    if (len <= k->size - (addr - k->base))
        *rkey = k->rkey;
  fn_fail:
    return mpi_errno;
}
