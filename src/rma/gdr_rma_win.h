/* The window registry: what this rank knows of every target of a window (size and
 * displacement unit for range checks; registered base, key and transport peer for
 * RDMA), this rank's own registration, the accumulate rule agreed for the window, the
 * operations in flight and, for dynamic windows, the regions.  The host exchanges the
 * cards between ranks (a collective); the registry never talks to other ranks itself. */
#ifndef GDR_RMA_WIN_H
#define GDR_RMA_WIN_H

#include "gdr_rma_completion.h"
#include "gdr_rma_ctl.h"
#include "gdr_rma_passive.h"
#include "gdr_rma_active.h"
#include "gdr_rma_path.h"
#include "gdr_rma_range.h"
#include "gdr_rma_regions.h"
#include "gdr_rma_select.h"

/* What one rank tells the others about its window (fixed size, for the exchange). */
typedef struct gdr_rma_card {
    uint64_t size, disp_unit, base, rkey;
    uint64_t flags;             /* GDR_RMA_CARD_ */
    gdr_rma_ctl_card_t ctl;     /* the control block (gdr_rma_ctl.h) */
} gdr_rma_card_t;

enum {
    GDR_RMA_CARD_DEVICE = 1,    /* the rank's window memory is device (GPU) memory */
    GDR_RMA_CARD_GPU = 2        /* the rank's GPU layer is on */
};

typedef struct gdr_rma_target {
    uint64_t size, disp_unit;
    uint64_t base;              /* registered address of the window at the target */
    uint32_t rkey;              /* 0: not registered there (messages) */
    int peer;                   /* transport peer, -1: not reachable by RDMA */
    int device;                 /* the window memory there is device memory (card) */
    int gpu;                    /* the target's GPU layer is on (card) */
    gdr_rma_route_t route;      /* what reaches it, decided at its first operation */
} gdr_rma_target_t;

typedef struct gdr_rma_win {
    gdr_rma_engine_t *eng;
    void *host_win;             /* the host's window, passed back to its callbacks */
    int n, self, dynamic;
    int rdma;                   /* targets may be reached by RDMA (peers known) */
    gdr_rma_target_t *targets;
    gdr_rma_mr_t mr;            /* this rank's window registration */
    gdr_rma_atomics_policy_t atomics;
    gdr_rma_tracker_t tracker;  /* RDMA operations in flight (rdma only) */
    uint8_t *last_acc_path;     /* per target: 0 none, else a gdr_rma_acc_via_t */
    uint8_t *acc_read_posted;   /* per target: an accumulate read since the last drain */
    gdr_rma_regions_t regions;  /* dynamic windows */
    gdr_rma_ctl_t ctl;          /* synchronisation without messages: */
    gdr_rma_passive_t passive;  /* lock epochs by remote atomics */
    gdr_rma_active_t active;    /* fence and PSCW by RDMA writes */
} gdr_rma_win_t;

/* Whether the next operation to target must take its epoch's lock first
 * (gdr_rma_passive_need); inline, as every operation asks and almost always hears no. */
static inline int gdr_rma_win_lock_wanted(const gdr_rma_win_t *w, int target)
{
    return w->passive.t != NULL && (unsigned) target < (unsigned) w->n
        && w->passive.t[target].state == GDR_RMA_EPOCH_WANTED;
}

/* Sets up the registry of n targets (this rank is self).  rdma: the engine may reach
 * targets (then set each peer).  GDR_RMA_OK or GDR_RMA_NOMEM. */
int gdr_rma_win_init(gdr_rma_win_t *w, gdr_rma_engine_t *eng, void *host_win, int n,
                     int self, int dynamic, int rdma);
void gdr_rma_win_set_peer(gdr_rma_win_t *w, int target, int peer);
/* Whether RDMA may reach target at all: a peer, and a registered window (dynamic windows
 * learn keys per region).  The plan asks first; the host asks before describing data. */
static inline int gdr_rma_win_reaches(const gdr_rma_win_t *w, int target)
{
    return w->rdma && target >= 0 && target < w->n && w->targets[target].peer >= 0
        && (w->targets[target].rkey != 0 || w->dynamic);
}
/* Every target has a transport peer (the accumulate rule needs all or none). */
int gdr_rma_win_all_reachable(const gdr_rma_win_t *w);
/* The accumulate rule, once the ranks agreed on all_reach_nic (gdr_rma_path.h). */
void gdr_rma_win_set_policy(gdr_rma_win_t *w, int all_reach_nic, unsigned declared, int ordered);
/* Remote access the window's registrations grant (atomics only when the rule allows). */
unsigned gdr_rma_win_access(const gdr_rma_win_t *w);
/* Registers this rank's window memory (not for dynamic windows) and its control block
 * (when gdr_rma_ctl_configure turned it on; one that cannot be registered leaves the card
 * without it: the whole window then synchronises by messages) and fills its card.
 * expose is the GDR_RMA_EXPOSE_ mask (gdr_rma_regions.h): IS_DEVICE and GPU become the
 * card's flags DEVICE (not on dynamic windows, whose regions say it) and GPU; device
 * memory is registered only with DEVICE_OK.  A registration that fails, or device memory
 * without DEVICE_OK (nothing registered), leaves the window reachable by messages: the
 * card says rkey 0 and this returns 1 with why set; 0 otherwise. */
int gdr_rma_win_expose(gdr_rma_win_t *w, void *base, uint64_t size, uint64_t disp_unit,
                       unsigned expose, gdr_rma_card_t *card, char *why, size_t why_len);
/* Takes target's card from the exchange (size, unit and flags always; base and key on
 * RDMA windows). */
void gdr_rma_win_set_card(gdr_rma_win_t *w, int target, const gdr_rma_card_t *card);
/* Checks a target access [disp*unit + lb, + span) against target's window; for a
 * dynamic window only that the address does not overflow (attachments are checked by
 * gdr_rma_regions_lookup, which may have to ask the target). */
gdr_rma_range_status_t gdr_rma_win_check_range(const gdr_rma_win_t *w, int target, int64_t disp,
                                               int64_t lb, uint64_t span);
/* Deregisters (the key dies here) and frees; call with nothing in flight. */
void gdr_rma_win_free(gdr_rma_win_t *w);

#endif /* GDR_RMA_WIN_H */
