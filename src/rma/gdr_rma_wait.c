/* Waits drive all of the host's progress, not only the transport's: an operation on
 * another path (shared memory, this rank itself) completes elsewhere. */
#include "gdr_rma_engine.h"

int gdr_rma_wait_until(const gdr_rma_engine_t *eng, int (*pending)(const void *arg),
                       const void *arg, const char *what, int peer)
{
    gdr_rma_stall_t st = { 0 };
    while (pending(arg)) {
        if (eng->host.progress(eng->host.ctx) != 0)
            return GDR_RMA_HOST_ERROR;
        if (++st.polls % 4096 == 0 && eng->host.stalled != NULL)
            eng->host.stalled(eng->host.ctx, &st, what, peer);
    }
    return 0;
}

static int nonzero(const void *count)
{
    return *(const volatile unsigned long *) count != 0;
}

int gdr_rma_wait_zero(const gdr_rma_engine_t *eng, const unsigned long *count, const char *what,
                      int peer)
{
    return gdr_rma_wait_until(eng, nonzero, count, what, peer);
}
