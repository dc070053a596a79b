/* The QP map: which peer a completion came from, by the local QP number it names (an open
 * addressing hash), and which peers have a queue pair (am->active, in the order they got
 * one: the peers progress, probing and the handshake timers visit). */
#include "gdr_verbs_iface_priv.h"

#include <stdlib.h>

static uint32_t qp_hash(uint32_t qpn, uint32_t cap)
{
    return (qpn * 2654435761u) & (cap - 1);
}

static void qpmap_put(qp_slot_t *map, uint32_t cap, uint32_t qpn, int peer)
{
    uint32_t i = qp_hash(qpn, cap);
    while (map[i].qpn != 0)
        i = (i + 1) & (cap - 1);
    map[i].qpn = qpn;
    map[i].peer = peer;
}

/* Remembers peer's QP, and which peers have one. */
int gdr_verbs_iface_add_active(gdr_verbs_iface_t *am, int peer, uint32_t qpn)
{
    if (2 * (uint32_t) (am->nactive + 1) > am->qpmap_cap) {
        uint32_t cap = am->qpmap_cap ? 2 * am->qpmap_cap : 16;
        qp_slot_t *map = calloc(cap, sizeof(*map));
        int *act = realloc(am->active, (cap / 2) * sizeof(int));
        if (map == NULL || act == NULL) {
            free(map);
            if (act != NULL)
                am->active = act;
            return fail(am, "out of memory tracking %d connected peers", am->nactive + 1);
        }
        am->active = act;
        for (uint32_t i = 0; i < am->qpmap_cap; i++) {
            if (am->qpmap[i].qpn != 0)
                qpmap_put(map, cap, am->qpmap[i].qpn, am->qpmap[i].peer);
        }
        free(am->qpmap);
        am->qpmap = map;
        am->qpmap_cap = cap;
    }
    qpmap_put(am->qpmap, am->qpmap_cap, qpn, peer);
    am->active[am->nactive++] = peer;
    return 0;
}

/* The peer whose RC queue pair has local number qpn; -1 if none. */
int gdr_verbs_iface_peer_of_qp(const gdr_verbs_iface_t *am, uint32_t qpn)
{
    if (am->qpmap_cap == 0)
        return -1;
    for (uint32_t i = qp_hash(qpn, am->qpmap_cap);; i = (i + 1) & (am->qpmap_cap - 1)) {
        if (am->qpmap[i].qpn == qpn)
            return am->qpmap[i].peer;
        if (am->qpmap[i].qpn == 0)
            return -1;
    }
}
