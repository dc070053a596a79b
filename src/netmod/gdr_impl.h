/* What every gdr glue file includes: MPICH's device internals and our layers. */
#ifndef GDR_IMPL_H_INCLUDED
#define GDR_IMPL_H_INCLUDED

#include <mpidimpl.h>
#include "mpidch4r.h"

#define MPIDI_GDR_global (MPIDI_global.nm.gdr)
/* A window's gdr part (MPIDI_GDR_win_t). */
#define GDR_WIN(win) ((win)->dev.netmod.gdr)

/* gdr_am.c: bring the AM channel up at init_world, down at finalize. */
int MPIDI_GDR_am_start(void);
int MPIDI_GDR_am_stop(void);
/* The AM channel's last error as an MPI error (MPI_ERR_OTHER naming the peer). */
int MPIDI_GDR_transport_error(void);
/* gdr_rma.c: MPI_T counters, registered at init. */
void MPIDI_GDR_rma_register_pvars(void);
/* gdr_win_dynamic.c: the region lookup messages of dynamic windows, at init. */
int MPIDI_GDR_dynamic_register_handlers(void);

#endif /* GDR_IMPL_H_INCLUDED */
