/* The windows of stream-ordered and kernel-triggered RMA: their progress, their free. */
#include "gdr_triggered.h"

#include "gdr_engine_lock.h"

/* A window over a stream communicator moves its RMA messages (and their acks, lock and
 * unlock) on the stream's VCI, but waits on that communicator's collectives (MPI_Win_free's
 * barrier) progress only VCI 0: a peer's late unlock would never be handled there.  VCI 0's
 * progress therefore also runs the stream VCIs of the windows that enqueue. */
static int progress_stream_vcis(void)
{
    int mpi_errno = MPI_SUCCESS;
    for (struct MPIDI_GDR_win_state * s = MPIDI_GDR_global.triggered;
         s != NULL && mpi_errno == MPI_SUCCESS; s = s->next_triggered) {
        MPIR_Stream *stream = s->enqueue != NULL
            ? MPIR_stream_comm_get_local_stream(s->win->comm_ptr) : NULL;
        if (stream != NULL && stream->vci != 0)
            mpi_errno = MPID_Stream_progress(stream);
    }
    return mpi_errno;
}

int MPIDI_GDR_triggered_progress(int vci, int *made_progress)
{
    int mpi_errno = MPI_SUCCESS, idle = 0;
    /* one runner at a time (any VCI's progress calls this), never re-entered: an operation
     * started below progresses MPICH again */
    if (!__atomic_compare_exchange_n(&MPIDI_GDR_global.triggered_progressing, &idle, 1, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return MPI_SUCCESS;
    int took = MPIDI_GDR_engine_enter();
    for (struct MPIDI_GDR_win_state * s = MPIDI_GDR_global.triggered;
         s != NULL && mpi_errno == MPI_SUCCESS; s = s->next_triggered) {
        int made = 0;
        if (s->enqueue != NULL)
            mpi_errno = MPIDI_GDR_enqueue_progress(s->win, &made);
        if (mpi_errno == MPI_SUCCESS && s->device != NULL)
            mpi_errno = MPIDI_GDR_device_win_progress(s->win, &made);
        if (made && made_progress != NULL)
            *made_progress = 1;
    }
    MPIDI_GDR_engine_exit(took);
    /* still marked as running: the stream VCIs' progress comes back here and returns */
    if (mpi_errno == MPI_SUCCESS && vci == 0 && !MPIR_ThreadInfo.isThreaded)
        mpi_errno = progress_stream_vcis();
    __atomic_store_n(&MPIDI_GDR_global.triggered_progressing, 0, __ATOMIC_RELEASE);
    return mpi_errno;
}

int MPIDI_GDR_triggered_win_free(MPIR_Win * win)
{
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    int mpi_errno = MPI_SUCCESS;
    if (s->win == NULL)
        return MPI_SUCCESS;
    if (s->enqueue != NULL)
        mpi_errno = MPIDI_GDR_enqueue_free(win);
    if (s->device != NULL) {
        int err = MPIDI_GDR_device_win_free(win);
        mpi_errno = mpi_errno ? mpi_errno : err;
    }
    int took = MPIDI_GDR_engine_enter();
    for (struct MPIDI_GDR_win_state ** p = &MPIDI_GDR_global.triggered; *p != NULL;
         p = &(*p)->next_triggered)
        if (*p == s) {
            *p = s->next_triggered;
            break;
        }
    int last = MPIDI_GDR_global.triggered == NULL;
    MPIDI_GDR_engine_exit(took);
    s->win = NULL;
    if (last)
        MPIDI_GDR_triggered_stop();     /* no work left: MPI_Finalize never meets the thread */
    return mpi_errno;
}
