/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_CH4_GDR_ENQUEUE_PROGRESS
      category    : CH4_GDR
      type        : string
      default     : "auto"
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Who runs stream-ordered (MPIX_*_enqueue) and kernel-triggered (MPIX_Dev_*)
        RMA: "thread", a progress thread gdr starts at first use (needs
        MPI_THREAD_MULTIPLE); "calls", the application's MPI calls (it must keep
        calling MPI, e.g. MPIX_Stream_progress, while a stream or kernel waits on
        gdr); "auto" (the default): the thread when MPI runs MPI_THREAD_MULTIPLE,
        else calls.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/
/* What stream-ordered and kernel-triggered RMA share (gdr_triggered.h): errors, the list
 * of windows with work, the progress thread, remote completion, directly reached windows. */
#include "gdr_triggered.h"

#include "gpu/gdr_gpu_ipc.h"
#include "gpu/gdr_gpu_mem.h"

#include <stdarg.h>
#include <time.h>
#include "gdr_engine_lock.h"

int MPIDI_GDR_triggered_error(int err_class, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    /* (MPICH's message extractor wants each class spelled out) */
    switch (err_class) {
        case MPI_ERR_ARG:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_ARG, "**gdr_triggered", "**gdr_triggered %s",
                                        what);
        case MPI_ERR_NO_MEM:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_NO_MEM, "**gdr_triggered", "**gdr_triggered %s",
                                        what);
        case MPI_ERR_WIN:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_WIN, "**gdr_triggered", "**gdr_triggered %s",
                                        what);
        case MPI_ERR_RMA_SYNC:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_RMA_SYNC, "**gdr_triggered",
                                        "**gdr_triggered %s", what);
        case MPI_ERR_RMA_RANGE:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_RMA_RANGE, "**gdr_triggered",
                                        "**gdr_triggered %s", what);
        case MPI_ERR_RMA_FLAVOR:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_RMA_FLAVOR, "**gdr_triggered",
                                        "**gdr_triggered %s", what);
        default:
            return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                        MPI_ERR_OTHER, "**gdr_triggered", "**gdr_triggered %s",
                                        what);
    }
}

/* While windows have work, MPICH's progress at short intervals: the stream and the kernels
 * wait on it, and the application may be blocked in cudaStreamSynchronize. */
static void *progress_thread(void *arg)
{
    (void) arg;
    if (MPIDI_GDR_global.gpu.on)
        (void) gdr_gpu_bind_thread(&MPIDI_GDR_global.gpu);
    while (!__atomic_load_n(&MPIDI_GDR_global.thread_stop, __ATOMIC_ACQUIRE)) {
        MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
        int made = 0;
        (void) MPID_Progress_test(NULL);
        made = MPIDI_GDR_global.triggered != NULL;
        MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
        struct timespec pause = { 0, made ? 2000 : 200000 };
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static int start_thread(void)
{
    const char *mode = MPIR_CVAR_CH4_GDR_ENQUEUE_PROGRESS;
    int multiple = MPIR_ThreadInfo.thread_provided == MPI_THREAD_MULTIPLE;
    if (MPIDI_GDR_global.thread_running || strcmp(mode, "calls") == 0
        || (strcmp(mode, "auto") == 0 && !multiple))
        return MPI_SUCCESS;
    if (strcmp(mode, "thread") != 0 && strcmp(mode, "auto") != 0)
        return MPIDI_GDR_triggered_error(MPI_ERR_ARG, "MPIR_CVAR_CH4_GDR_ENQUEUE_PROGRESS=%s: "
                                         "say thread, calls or auto", mode);
    if (!multiple)
        return MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "MPIR_CVAR_CH4_GDR_ENQUEUE_PROGRESS="
                                         "thread needs MPI_Init_thread(MPI_THREAD_MULTIPLE); "
                                         "or set it to calls and keep calling MPI");
    MPIDI_GDR_global.thread_stop = 0;
    int rc = pthread_create(&MPIDI_GDR_global.thread, NULL, progress_thread, NULL);
    if (rc != 0)
        return MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "the progress thread could not start "
                                         "(%s): set MPIR_CVAR_CH4_GDR_ENQUEUE_PROGRESS=calls",
                                         strerror(rc));
    MPIDI_GDR_global.thread_running = 1;
    return MPI_SUCCESS;
}

int MPIDI_GDR_triggered_add(MPIR_Win * win)
{
    struct MPIDI_GDR_win_state *s = win->dev.netmod.gdr.s;
    if (s->win == NULL) {
        s->win = win;
        s->next_triggered = MPIDI_GDR_global.triggered;
        MPIDI_GDR_global.triggered = s;
    }
    return start_thread();
}

int MPIDI_GDR_triggered_remote_done(MPIR_Win * win, int rank)
{
    const gdr_rma_tracker_t *t = &GDR_WIN(win).rma.tracker;
    int lo = rank < 0 ? 0 : rank, hi = rank < 0 ? win->comm_ptr->local_size : rank + 1;
    for (int r = lo; r < hi; r++) {
        if (t->remote != NULL && r < t->n && t->remote[r] != 0)
            return 0;           /* gdr's RDMA and staged operations */
        MPIDIG_win_target_t *target = MPIDIG_win_target_find(win, r);
        if (target != NULL && (MPIR_cc_get(target->remote_cmpl_cnts) != 0
                               || MPIR_cc_get(target->remote_acc_cmpl_cnts) != 0))
            return 0;           /* MPICH's active messages */
    }
    return 1;
}

void MPIDI_GDR_triggered_stop(void)
{
    if (!MPIDI_GDR_global.thread_running)
        return;
    __atomic_store_n(&MPIDI_GDR_global.thread_stop, 1, __ATOMIC_RELEASE);
    pthread_join(MPIDI_GDR_global.thread, NULL);
    MPIDI_GDR_global.thread_running = 0;
}
