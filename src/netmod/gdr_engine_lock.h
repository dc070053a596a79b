/* MPI_THREAD_MULTIPLE: gdr's state (the RMA engine, the staged protocol, the transport
 * under them) is guarded by VCI 0's lock, as MPICH guards a netmod's state (gdr has one
 * VCI).  MPICH calls some of gdr's entry points with that lock held (progress, the AM
 * handlers, MPIDIG's completion hooks) and others without it (MPIDI_NM_mpi_put and the
 * other RMA calls), so an entry point takes it only when this thread does not hold it.
 * Included by gdr's own .c files only (not by MPICH: no rebuild of MPICH when it changes). */
#ifndef GDR_ENGINE_LOCK_H
#define GDR_ENGINE_LOCK_H

#include "gdr_internal.h"

/* Whether this thread holds VCI 0's lock (always 0 when MPICH is not threaded). */
static inline int MPIDI_GDR_engine_held(void)
{
#if defined(MPICH_IS_THREADED) && MPICH_THREAD_GRANULARITY == MPICH_THREAD_GRANULARITY__VCI
    if (!MPIR_ThreadInfo.isThreaded)
        return 0;
    /* owner is ours only if we set it, so a racy read cannot say yes wrongly */
    int same = 0;
    MPL_thread_id_t self;
    MPL_thread_self(&self);
    MPL_thread_same(&self, &MPIDI_VCI_LOCK(0).owner, &same);
    return same && MPIDI_VCI_LOCK(0).count > 0;
#else
    return 0;
#endif
}

/* Takes the lock unless held; returns what to pass to MPIDI_GDR_engine_exit. */
static inline int MPIDI_GDR_engine_enter(void)
{
#if defined(MPICH_IS_THREADED) && MPICH_THREAD_GRANULARITY == MPICH_THREAD_GRANULARITY__VCI
    if (!MPIR_ThreadInfo.isThreaded || MPIDI_GDR_engine_held())
        return 0;
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(0));
    return 1;
#else
    return 0;
#endif
}

static inline void MPIDI_GDR_engine_exit(int took)
{
#if defined(MPICH_IS_THREADED) && MPICH_THREAD_GRANULARITY == MPICH_THREAD_GRANULARITY__VCI
    if (took)
        MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(0));
#else
    (void) took;
#endif
}

/* One round of all of MPICH's progress from inside gdr (the engine's waits): with VCI 0's
 * lock held, as MPIDIG's own waits do it (released while every VCI progresses, then a
 * yield so that other threads get in); without it, plain MPID_Progress_test. */
static inline int MPIDI_GDR_progress_all(void)
{
    if (!MPIDI_GDR_engine_held())
        return MPID_Progress_test(NULL);
    int mpi_errno = MPIDI_progress_test_vci(0);
    MPID_THREAD_CS_YIELD(VCI, MPIDI_VCI_LOCK(0));
    return mpi_errno;
}

#endif /* GDR_ENGINE_LOCK_H */
