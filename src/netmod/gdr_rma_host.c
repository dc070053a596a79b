/* The RMA engine's host seam (src/rma/gdr_rma_transport.h) over MPICH: progress is all
 * of MPICH's progress, a dynamic window's region is asked for with an active message
 * (gdr_win_dynamic.c), message-path accumulates are MPIDIG's; and the engine's results
 * become MPI error codes here. */
#include "gdr_internal.h"
#include "gdr_noinline.h"
#include "gdr_engine_lock.h"
#include "gdr_rma_ipc.h"
#include "adapt/gdr_verbs_rma_transport.h"
#include "rma/gdr_rma_staged.h"

static int host_progress(void *ctx)
{
    (void) ctx;
    int mpi_errno = MPIDI_GDR_progress_all();
    if (mpi_errno != MPI_SUCCESS && MPIDI_GDR_global.engine_errno == MPI_SUCCESS)
        MPIDI_GDR_global.engine_errno = mpi_errno;
    return mpi_errno != MPI_SUCCESS;
}

static int host_query_region(void *ctx, void *host_win, int target, uint64_t addr,
                             gdr_rma_region_reply_t * out)
{
    (void) ctx;
    int mpi_errno = MPIDI_GDR_dynamic_query(host_win, target, addr, out);
    if (mpi_errno != MPI_SUCCESS && MPIDI_GDR_global.engine_errno == MPI_SUCCESS)
        MPIDI_GDR_global.engine_errno = mpi_errno;
    return mpi_errno != MPI_SUCCESS;
}

int MPIDI_GDR_am_accumulates_pending(MPIR_Win * win, int target)
{
    MPIDIG_win_target_t *t = MPIDIG_win_target_find(win, target);
    return (t != NULL && MPIR_cc_get(t->remote_acc_cmpl_cnts) != 0)
        || MPIR_cc_get(MPIDIG_WIN(win, remote_acc_cmpl_cnts)) != 0;
}

static int host_am_accumulates_pending(void *ctx, void *host_win, int target)
{
    (void) ctx;
    return MPIDI_GDR_am_accumulates_pending(host_win, target);
}

/* With MPIR_CVAR_CH4_GDR_VERBOSE > 0, a wait longer than 10 s says what it waits for
 * (once per wait): a stalled peer or NIC shows up in the job's output.  Called every
 * 4096 polls: under User-Mode Linux a clock read is a system call. */
static void host_stalled(void *ctx, gdr_rma_stall_t * st, const char *what, int peer)
{
    (void) ctx;
    MPL_time_t now;
    double secs;
    if (st->reported || MPIR_CVAR_CH4_GDR_VERBOSE <= 0)
        return;
    MPL_wtime(&now);
    MPL_wtime_todouble(&now, &secs);
    if (st->polls == 4096) {
        st->since = secs;
        return;
    }
    secs -= st->since;
    if (secs < 10)
        return;
    st->reported = 1;
    const gdr_verbs_rma_stats_t *rs = gdr_verbs_rma_stats(MPIDI_GDR_global.rma);
    fprintf(stderr, "gdr[%d]: waiting over %.0f s %s (rank %d: %u one-sided requests in "
            "flight; posted %llu writes, %llu reads, %llu atomics; channel %s)\n",
            MPIR_Process.rank, secs, what, peer,
            peer >= 0 ? gdr_verbs_rma_in_flight(MPIDI_GDR_global.rma, peer) : 0,
            (unsigned long long) rs->writes, (unsigned long long) rs->reads,
            (unsigned long long) rs->atomics,
            gdr_verbs_am_busy(MPIDI_GDR_global.am) ? "busy" : "idle");
}

void MPIDI_GDR_rma_engine_start(void)
{
    gdr_rma_engine_t *eng = &MPIDI_GDR_global.engine;
    eng->host = (gdr_rma_host_t) {
    .progress = host_progress,.query_region = host_query_region,
            .am_accumulates_pending = host_am_accumulates_pending,.stalled = host_stalled};
    eng->short_cap = MPIR_CVAR_CH4_GDR_RMA_SHORT_MAX < 0 ? UINT32_MAX
        : (uint32_t) MPIR_CVAR_CH4_GDR_RMA_SHORT_MAX;
    if (MPIDI_GDR_global.rma != NULL) {
        gdr_verbs_rma_transport(MPIDI_GDR_global.rma, &eng->net);
        MPIDI_GDR_global.have_engine = 1;
    }
}

void MPIDI_GDR_rma_engine_stop(void)
{
    memset(&MPIDI_GDR_global.engine.net, 0, sizeof(MPIDI_GDR_global.engine.net));
    MPIDI_GDR_global.have_engine = 0;
}

int MPIDI_GDR_rma_error(int rc)
{
    int mpi_errno = MPI_SUCCESS;
    switch (rc) {
        case GDR_RMA_OK:
            break;
        case GDR_RMA_HOST_ERROR:
            mpi_errno = MPIDI_GDR_global.engine_errno;
            MPIDI_GDR_global.engine_errno = MPI_SUCCESS;
            if (mpi_errno == MPI_SUCCESS)
                MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                              "MPICH's progress failed during a one-sided operation");
            break;
        case GDR_RMA_NOMEM:
            MPIR_ERR_SET1(mpi_errno, MPI_ERR_NO_MEM, "**nomem", "**nomem %s",
                          "gdr one-sided operation");
            break;
        default:
            /* a staged operation's failure says why itself (a freed buffer, a refusal) */
            if (MPIDI_GDR_global.staged != NULL
                && gdr_rma_staged_error(MPIDI_GDR_global.staged)[0] != '\0')
                MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**gdr_transport", "**gdr_transport %s",
                              gdr_rma_staged_error(MPIDI_GDR_global.staged));
            else
                mpi_errno = MPIDI_GDR_transport_error();
            break;
    }
    return mpi_errno;
}
