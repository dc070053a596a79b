#include "gdr_verbs_select.h"

#include <string.h>

static int is_closer(const gdr_verbs_candidate_t *a, const gdr_verbs_candidate_t *b)
{
    /* known distances beat unknown ones; then fewer hops; then name order */
    if ((a->distance >= 0) != (b->distance >= 0))
        return a->distance >= 0;
    if (a->distance != b->distance)
        return a->distance < b->distance;
    return strcmp(a->name, b->name) < 0;
}

int gdr_verbs_select(const gdr_verbs_candidate_t *cands, size_t n, const char *wanted,
                     const char **why)
{
    int best = -1;

    *why = NULL;
    if (n == 0) {
        *why = "no RDMA device found (load the HCA driver, or rdma_rxe for Soft-RoCE)";
        return -1;
    }
    if (wanted != NULL && wanted[0] != '\0') {
        for (size_t i = 0; i < n; i++) {
            if (strcmp(cands[i].name, wanted) != 0)
                continue;
            if (!cands[i].port_active) {
                *why = "the device named by MPIR_CVAR_CH4_GDR_DEVICE has no ACTIVE port";
                return -1;
            }
            return (int) i;
        }
        *why = "no device matches MPIR_CVAR_CH4_GDR_DEVICE (ibv_devices lists the names)";
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!cands[i].port_active)
            continue;
        if (best < 0 || is_closer(&cands[i], &cands[best]))
            best = (int) i;
    }
    if (best < 0)
        *why = "no RDMA device has an ACTIVE port (check the link, or set MPIR_CVAR_CH4_GDR_DEVICE)";
    return best;
}
