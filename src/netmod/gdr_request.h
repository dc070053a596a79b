/* Per-request netmod state of AM requests: none yet. */
#ifndef GDR_REQUEST_H_INCLUDED
#define GDR_REQUEST_H_INCLUDED

#include "gdr_impl.h"

MPL_STATIC_INLINE_PREFIX void MPIDI_NM_am_request_init(MPIR_Request * req)
{
}

MPL_STATIC_INLINE_PREFIX void MPIDI_NM_am_request_finalize(MPIR_Request * req)
{
}

#endif /* GDR_REQUEST_H_INCLUDED */
