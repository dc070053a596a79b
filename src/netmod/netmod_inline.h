/* The CH4 netmod API of gdr.  Point-to-point, RMA and collectives go through
 * MPICH's active-message (MPIDIG) layer for now: netmod_am_fallback.h maps them
 * onto the AM entry points in gdr_am.h. */
#ifndef NETMOD_INLINE_H_INCLUDED
#define NETMOD_INLINE_H_INCLUDED

#include "gdr_impl.h"
#include "netmod_am_fallback.h"
#include "gdr_am.h"
#include "gdr_progress.h"
#include "gdr_proc.h"
#include "gdr_request.h"
#include "gdr_noinline.h"

#endif /* NETMOD_INLINE_H_INCLUDED */
