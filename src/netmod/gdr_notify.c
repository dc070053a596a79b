/* Notified RMA (docs/notified-rma.md): MPIX_Win_notify_attach and the calls of patch 0022. */
#include "gdr_notify.h"
#include "gdr_triggered.h"

static int not_yet(void)
{
    return MPIDI_GDR_triggered_error(MPI_ERR_OTHER, "notified RMA is not built yet");
}

int MPIR_Win_notify_attach_impl(MPIR_Win * win_ptr, int notification_num, MPIR_Info * info_ptr)
{
    (void) win_ptr;
    (void) notification_num;
    (void) info_ptr;
    return not_yet();
}

int MPIR_Win_notify_detach_impl(MPIR_Win * win_ptr)
{
    (void) win_ptr;
    return not_yet();
}

int MPIR_Put_notify_impl(const void *origin_addr, MPI_Aint origin_count,
                         MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Aint target_count, MPI_Datatype target_datatype,
                         int notification_idx, MPIR_Win * win_ptr)
{
    (void) origin_addr, (void) origin_count, (void) origin_datatype, (void) target_rank;
    (void) target_disp, (void) target_count, (void) target_datatype, (void) notification_idx;
    (void) win_ptr;
    return not_yet();
}

int MPIR_Get_notify_impl(void *origin_addr, MPI_Aint origin_count,
                         MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Aint target_count, MPI_Datatype target_datatype,
                         int notification_idx, MPIR_Win * win_ptr)
{
    (void) origin_addr, (void) origin_count, (void) origin_datatype, (void) target_rank;
    (void) target_disp, (void) target_count, (void) target_datatype, (void) notification_idx;
    (void) win_ptr;
    return not_yet();
}

int MPIR_Win_notify_get_value_impl(MPIR_Win * win_ptr, int notification_idx, MPI_Count * value)
{
    (void) win_ptr, (void) notification_idx, (void) value;
    return not_yet();
}

int MPIR_Win_notify_set_value_impl(MPIR_Win * win_ptr, int notification_idx, MPI_Count value)
{
    (void) win_ptr, (void) notification_idx, (void) value;
    return not_yet();
}
