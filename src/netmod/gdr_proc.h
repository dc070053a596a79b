/* Rank locality: CH4's own address vector answers it. */
#ifndef GDR_PROC_H_INCLUDED
#define GDR_PROC_H_INCLUDED

#include "gdr_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rank_is_local(int rank, MPIR_Comm * comm)
{
    return MPIDIU_av_is_local(MPIDIU_comm_rank_to_av(comm, rank));
}

#endif /* GDR_PROC_H_INCLUDED */
