/* Notified RMA's counter table (docs/notified-rma.md). */
#ifndef GDR_RMA_NOTIFY_H_INCLUDED
#define GDR_RMA_NOTIFY_H_INCLUDED

#endif
