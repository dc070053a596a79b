/* Notified RMA's counter table (docs/notified-rma.md). */
#include "gdr_rma_notify.h"

int gdr_rma_notify_placeholder(void);
int gdr_rma_notify_placeholder(void)
{
    return 0;
}
