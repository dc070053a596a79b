/* Choosing the verbs device a rank uses: a pure function over a description of
 * the candidates, so the rule is tested on synthetic topologies without a NIC. */
#ifndef GDR_VERBS_SELECT_H
#define GDR_VERBS_SELECT_H

#include <stddef.h>

#define GDR_VERBS_NAME_MAX 64

/* One usable port of one HCA, as seen from the rank. */
typedef struct gdr_verbs_candidate {
    char name[GDR_VERBS_NAME_MAX];      /* ibv device name, e.g. "mlx5_0", "rxe0" */
    int port_active;                    /* nonzero: at least one port is ACTIVE */
    int distance;                       /* topology hops to the rank's GPU (or CPU set);
                                         * smaller is closer, negative is unknown */
} gdr_verbs_candidate_t;

/* Returns the index of the device to use, or -1 with *why set to a sentence saying
 * what to change.  `wanted` (the MPIR_CVAR_CH4_GDR_DEVICE value; NULL or "" for
 * automatic) must match a device name exactly.  Automatic choice: active ports only,
 * smallest known distance, then unknown distance, ties broken by name order. */
int gdr_verbs_select(const gdr_verbs_candidate_t *cands, size_t n, const char *wanted,
                     const char **why);

#endif /* GDR_VERBS_SELECT_H */
