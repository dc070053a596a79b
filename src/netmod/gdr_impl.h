/* What the netmod's inline headers (netmod_inline.h and the headers it includes) and
 * MPICH's generated gdr_noinline.h need: MPICH's device internals, nothing of gdr's
 * context or layers.  MPICH includes these headers in nearly every file it compiles, so
 * anything they include is a full rebuild when it changes.  gdr's own files include
 * gdr_internal.h. */
#ifndef GDR_IMPL_H_INCLUDED
#define GDR_IMPL_H_INCLUDED

#include <mpidimpl.h>
#include "mpidch4r.h"

#endif /* GDR_IMPL_H_INCLUDED */
