/* Which channel peer a process is.  This job's ranks are their world ranks; a process of
 * another job (spawned, connected, joined) is the peer its upid was given
 * (gdr_spawn.c's MPIDI_GDR_insert_upid), found again here by the lpid MPICH names it by:
 * an open-addressing table in gdr's context, grown at half full.  And this job's identity,
 * which processes of other jobs tell it apart by. */
#include "gdr_internal.h"

struct MPIDI_GDR_lpid_peer {
    MPIR_Lpid lpid;
    int peer;
    int used;
};

uint64_t MPIDI_GDR_job_id(void)
{
    /* FNV-1a of the process manager's name for the job (hydra's holds its host, pid and a
     * random number, Slurm's its job and step) */
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = MPIR_Worlds[0].namespace; *c != '\0'; c++)
        h = (h ^ (uint8_t) * c) * 0x100000001b3ull;
    return h != 0 ? h : 1;
}

static uint32_t lpid_slot(MPIR_Lpid lpid, uint32_t cap)
{
    return (uint32_t) (((uint64_t) lpid * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

int MPIDI_GDR_foreign_peer(MPIR_Lpid lpid)
{
    uint32_t cap = MPIDI_GDR_global.lpid_peers_cap;
    if (cap == 0)
        return -1;
    for (uint32_t i = lpid_slot(lpid, cap);; i = (i + 1) & (cap - 1)) {
        struct MPIDI_GDR_lpid_peer *e = &MPIDI_GDR_global.lpid_peers[i];
        if (!e->used)
            return -1;
        if (e->lpid == lpid)
            return e->peer;
    }
}

int MPIDI_GDR_foreign_peer_put(MPIR_Lpid lpid, int peer)
{
    uint32_t cap = MPIDI_GDR_global.lpid_peers_cap;
    if (2 * (MPIDI_GDR_global.lpid_peers_used + 1) > cap) {
        uint32_t ncap = cap ? 2 * cap : 64;
        struct MPIDI_GDR_lpid_peer *old = MPIDI_GDR_global.lpid_peers, *t;
        t = MPL_calloc(ncap, sizeof(*t), MPL_MEM_ADDRESS);
        if (t == NULL)
            return MPI_ERR_NO_MEM;
        MPIDI_GDR_global.lpid_peers = t;
        MPIDI_GDR_global.lpid_peers_cap = ncap;
        MPIDI_GDR_global.lpid_peers_used = 0;
        for (uint32_t i = 0; i < cap; i++)
            if (old[i].used)
                MPIDI_GDR_foreign_peer_put(old[i].lpid, old[i].peer);
        MPL_free(old);
        cap = ncap;
    }
    for (uint32_t i = lpid_slot(lpid, cap);; i = (i + 1) & (cap - 1)) {
        struct MPIDI_GDR_lpid_peer *e = &MPIDI_GDR_global.lpid_peers[i];
        if (e->used && e->lpid != lpid)
            continue;
        if (!e->used)
            MPIDI_GDR_global.lpid_peers_used++;
        *e = (struct MPIDI_GDR_lpid_peer) {.lpid = lpid,.peer = peer,.used = 1 };
        return MPI_SUCCESS;
    }
}

void MPIDI_GDR_peers_free(void)
{
    MPL_free(MPIDI_GDR_global.lpid_peers);
    MPIDI_GDR_global.lpid_peers = NULL;
    MPIDI_GDR_global.lpid_peers_cap = MPIDI_GDR_global.lpid_peers_used = 0;
}
