/* The CH4 netmod API of gdr.  Point-to-point (gdr_pt2pt.h: stream VCIs kept) and
 * collectives go through MPICH's active-message (MPIDIG) layer, mapped onto the AM
 * entry points in gdr_am.h; RMA takes RDMA where it can (gdr_rma.h) and MPIDIG
 * otherwise. */
#ifndef NETMOD_INLINE_H_INCLUDED
#define NETMOD_INLINE_H_INCLUDED

#include "gdr_impl.h"
#include "gdr_pt2pt.h"
#include "netmod_am_fallback_coll.h"
#include "netmod_am_fallback_part.h"
#include "gdr_rma.h"
#include "gdr_am.h"
#include "gdr_progress.h"
#include "gdr_proc.h"
#include "gdr_request.h"
#include "gdr_noinline.h"

#endif /* NETMOD_INLINE_H_INCLUDED */
