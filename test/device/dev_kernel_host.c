/* See dev_kernel_host.h. */
#include <stdio.h>
#include <string.h>
#include "dev_kernel_host.h"
#include "rma/fake_engine.h"
#include "rma/gdr_rma_trigger_exec.h"

/* the one test's proxy: this process plays every rank's NIC */
static struct {
    gdr_rma_win_t w;
    gdr_trig_proxy_t proxy;
    gdr_trig_executor_t x;
} dk;

int dk_host_start(const gdr_trig_ring_t *ring)
{
    memset(target_mem, 0, sizeof(target_mem));
    memset(&fk, 0, sizeof(fk));
    fk.atomicv_max = 16;
    make_win(&dk.w, 0, GDR_RMA_DECLARES_SUM, 1);
    /* NULL device seam: the kernel's buffers are host-pinned, as a NIC without GPUDirect
     * needs them */
    gdr_trig_executor_init(&dk.x, &dk.w, DK_HANDLE, NULL, 0);
    if (gdr_trig_proxy_init(&dk.proxy, ring, ring->nslots, &gdr_trig_executor_ops, &dk.x) != 0) {
        fprintf(stderr, "dev_kernel_host: gdr_trig_proxy_init failed\n");
        gdr_rma_win_free(&dk.w);
        return -1;
    }
    gdr_trig_executor_bind(&dk.x, &dk.proxy);
    return 0;
}

int dk_host_pump(void)
{
    int rc = gdr_trig_proxy_progress(&dk.proxy, 64);
    while (fk.n > 0)
        complete_one();
    return rc < 0 ? -1 : 0;
}

uint64_t dk_host_word(int rank, int cell)
{
    uint64_t v;
    memcpy(&v, &target_mem[rank][cell * 8], 8);
    return v;
}

const char *dk_host_error(void)
{
    return gdr_trig_proxy_error(&dk.proxy);
}

uint64_t dk_host_started(void)
{
    return dk.proxy.started;
}

void dk_host_describe(char *buf, size_t size)
{
    const gdr_trig_proxy_t *p = &dk.proxy;
    const gdr_trig_ring_t *r = p->ring;
    uint64_t seq_at_next = gdr_trig_load_acquire((volatile uint64_t *)
                                                 &r->slots[p->next & (r->nslots - 1)].seq);
    unsigned ahead = 0;         /* published slots past the next ticket */
    for (uint64_t t = p->next + 1; t < p->next + r->nslots; t++)
        ahead += gdr_trig_load_acquire((volatile uint64_t *)
                                       &r->slots[t & (r->nslots - 1)].seq) == t + 1;
    int n = snprintf(buf, size, "proxy: next ticket %llu, its slot's seq %llu (published: "
                     "%llu), %u published after it; ", (unsigned long long) p->next,
                     (unsigned long long) seq_at_next, (unsigned long long) p->next + 1, ahead);
    if (p->holding && n >= 0 && (size_t) n < size)
        n += snprintf(buf + n, size - (size_t) n, "holding op %u to rank %d number %llu "
                      "(%llu waits for room); ", p->held.op, p->held.rank,
                      (unsigned long long) p->held.rank_seq,
                      (unsigned long long) p->window_waits);
    for (int k = 0; k < r->nranks && n >= 0 && (size_t) n < size; k++)
        n += snprintf(buf + n, size - (size_t) n, "rank %d finished %llu ring done %llu; ", k,
                      (unsigned long long) p->done[k].next,
                      (unsigned long long) gdr_trig_load_acquire(&r->done[k]));
}

void dk_host_stop(void)
{
    gdr_trig_proxy_free(&dk.proxy);
    gdr_rma_win_free(&dk.w);
}
