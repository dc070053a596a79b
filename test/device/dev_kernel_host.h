/* The host half of dev_kernel_ring.cu: the trigger proxy and its executor over the RMA
 * engine with the in-memory transport of test/unit/rma/fake_engine.h, as one test
 * process's "NIC".  C11, so the CUDA program needs none of the engine's headers. */
#ifndef DEV_KERNEL_HOST_H
#define DEV_KERNEL_HOST_H

#include <stddef.h>
#include <stdint.h>
#include "gdr/gdr_rma_trigger_ring.h"

#define DK_RANKS 4              /* fake_engine's "remote" windows */
#define DK_CELLS 512            /* 8-byte cells in each */
#define DK_HANDLE 7

/* Starts the proxy on *ring (kept by the caller, in memory both sides reach), the window's
 * remote memory zeroed.  0, or -1 with a reason on stderr. */
int dk_host_start(const gdr_trig_ring_t *ring);
/* Proxy progress, then every work request the "NIC" holds completed.  -1 once the proxy
 * failed (dk_host_error says why). */
int dk_host_pump(void);
uint64_t dk_host_word(int rank, int cell);
const char *dk_host_error(void);
/* descriptors the proxy started so far */
uint64_t dk_host_started(void);
/* Where the proxy stands, for a stall report: the next ticket and whether its slot and the
 * ones after it are published, the descriptor it holds (waiting for room at its target)
 * and each target's finished prefix. */
void dk_host_describe(char *buf, size_t size);
void dk_host_stop(void);

#endif /* DEV_KERNEL_HOST_H */
