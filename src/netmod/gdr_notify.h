/* Notified RMA (docs/notified-rma.md): the counters a window carries and the hooks the
 * window's synchronisation and free call. */
#ifndef GDR_NOTIFY_H_INCLUDED
#define GDR_NOTIFY_H_INCLUDED

#include "gdr_impl.h"

#endif
