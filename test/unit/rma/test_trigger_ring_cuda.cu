/* The trigger ring, signal words and kernel-triggered RMA calls as CUDA C++: nvcc
 * compiles their device branch (the kernels below, never launched here: no GPU is needed
 * to build them) and their host branch, which this program runs.  The C11 build is test_trigger_ring.c; built and run by
 * `make unit` when configure found nvcc. */
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "gdr_unit.h"
}
#include "gdr/gdr_rma_kernel_api.h"
#include "gdr/gdr_rma_signal.h"
#include "gdr/gdr_rma_trigger_ring.h"

/* What a kernel does with the ring: one put_signal per thread, a flush, a wait. */
__global__ void post_and_wait(gdr_trig_ring_t r, uint64_t *signal, int rank)
{
    gdr_trig_desc_t d;
    memset(&d, 0, sizeof(d));
    d.op = GDR_TRIG_PUT_SIGNAL;
    d.rank = rank;
    d.addr = (uint64_t) threadIdx.x;
    d.bytes = 8;
    d.signal_op = GDR_SIGNAL_ADD;
    d.value = 1;
    gdr_trig_post(&r, d);
    __syncthreads();
    if (threadIdx.x == 0) {
        uint64_t n = gdr_trig_posted(&r, rank);
        while (!gdr_trig_finished(&r, rank, n))
            gdr_trig_pause();
        while (!gdr_signal_met(GDR_CMP_GE, *(volatile uint64_t *) signal, blockDim.x))
            gdr_trig_pause();
        gdr_signal_apply(GDR_SIGNAL_SET, signal, 0);
    }
}

/* What a kernel does with a window's device handle (gdr_rma_kernel_api.h). */
__global__ void dev_api_calls(gdr_dev_win_t w, const uint64_t *src, uint64_t *dst, uint64_t *res)
{
    int peer = (w.rank + 1) % w.nranks;
    gdr_dev_put(&w, src + threadIdx.x, 8, peer, threadIdx.x);
    gdr_dev_put_signal(&w, src, 8, peer, 0, 1, 1, GDR_SIGNAL_ADD);
    gdr_dev_get(&w, dst + threadIdx.x, 8, peer, threadIdx.x);
    gdr_dev_fetch_add(&w, peer, 2, 1, res + threadIdx.x);
    gdr_dev_flush(&w, peer);
    uint64_t seen;
    gdr_dev_signal_wait_until(&w, 1, GDR_CMP_GE, blockDim.x, &seen);
}

int main(void)
{
    uint64_t head = 0, tail = 0, posted[2] = { 0, 0 }, done[2] = { 0, 0 };
    gdr_trig_slot_t *slots = (gdr_trig_slot_t *) aligned_alloc(128, 4 * sizeof(gdr_trig_slot_t));
    memset(slots, 0, 4 * sizeof(gdr_trig_slot_t));
    gdr_trig_ring_t r = { &head, &tail, slots, posted, done, NULL, 4, 2 };
    int ok = 1;
    uint64_t next = 0;
    for (uint64_t i = 0; i < 10; i++) {         /* wraps the 4 slots twice and more */
        gdr_trig_desc_t d;
        memset(&d, 0, sizeof(d));
        d.op = GDR_TRIG_GET;
        d.rank = (int32_t) (i % 2);
        d.addr = 1000 + i;
        uint64_t seq = gdr_trig_post(&r, d), want = i / 2;
        gdr_trig_desc_t out;
        ok &= seq == want && gdr_trig_take(&r, &next, &out) == 1 && out.addr == 1000 + i
            && out.rank_seq == want && out.op == GDR_TRIG_GET;
    }
    GDR_CHECK(ok && next == 10 && tail == 10, "host branch of the CUDA build: 10 descriptors "
              "through 4 slots, intact, numbered per target");
    done[1] = 4;
    GDR_CHECK(!gdr_trig_finished(&r, 1, gdr_trig_posted(&r, 1))
              && gdr_trig_finished(&r, 0, 0), "finished compares done with posted");
    uint64_t w = 1;
    GDR_CHECK(gdr_signal_apply(GDR_SIGNAL_ADD, &w, 2) == 1 && w == 3
              && gdr_signal_met(GDR_CMP_EQ, w, 3) && !gdr_signal_met(GDR_CMP_LT, w, 3),
              "signals in the host branch of the CUDA build");
    free(slots);
    return gdr_unit_finish();
}
