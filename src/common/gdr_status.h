/* The results the plain layers' posting calls share, defined once so that a result passes
 * from one layer to the next unchanged (gdr_verbs_rma's posts -> the transport seam -> the
 * RMA engine): 0 done or started; positive: nothing happened, act and call again;
 * negative: failed.
 *   GDR_STATUS_BUSY        no room: progress, then post again;
 *   GDR_STATUS_NOREG       the memory cannot be registered: nothing was posted, the channel
 *                          is fine; send the data another way;
 *   GDR_STATUS_ERROR       failed (the failing layer's error says why);
 *   GDR_STATUS_HOST_ERROR  a host callback failed (the host keeps its own error);
 *   GDR_STATUS_NOMEM       out of memory.
 * src/rma names them GDR_RMA_* and src/netmod/verbs GDR_VERBS_RMA_BUSY/_NOREG; src/gpu
 * answers 0 or a negative errno value instead, which its adapters (src/adapt) translate.
 * The lowest layer: it includes nothing, and every layer may include it. */
#ifndef GDR_STATUS_H
#define GDR_STATUS_H

enum gdr_status {
    GDR_STATUS_OK = 0, GDR_STATUS_BUSY = 1, GDR_STATUS_NOREG = 2,
    GDR_STATUS_ERROR = -1, GDR_STATUS_HOST_ERROR = -2, GDR_STATUS_NOMEM = -3
};

#endif /* GDR_STATUS_H */
