/* The RMA engine's seams faked in memory for unit tests (test_engine, test_trigger_exec):
 * "remote" memory is this process's memory (target_mem: the windows of 4 ranks), work
 * requests queue in fk.q and are carried out when the fake host's progress completes them
 * (in an order the test picks: fk.lifo), so every value can be read back. */
#ifndef FAKE_ENGINE_H
#define FAKE_ENGINE_H

#include <stdint.h>
#include <sys/uio.h>
#include "rma/gdr_rma_issue.h"

typedef enum { W_PUT, W_GET, W_WRITEV, W_READV, W_ATOMICV } wr_kind_t;

typedef struct {
    wr_kind_t kind;
    int peer;
    void *local;                /* source (put) or destination (get, results) */
    struct iovec iov[32];       /* writev/readv pieces */
    size_t len, n;
    uint64_t raddr, raddrs[64], compare;
    uint32_t rkey;
    gdr_rma_atomic_t aop;
    const void *operands;
    gdr_rma_done_fn done;
    void *arg;
    uint8_t inl[8];             /* an inlined put's data (fk.inline_max) */
    int inlined;                /* local is NULL: the data is inl, wherever the slot is */
    unsigned flags;             /* GDR_RMA_POST_AFTER_READS: never before an earlier read */
} wr_t;


typedef struct {
    wr_t q[256];
    int n;                      /* queued, not yet completed */
    int lifo;                   /* complete the newest first (but never a post flagged
                                 * AFTER_READS, or one after it, before an earlier read or
                                 * atomic to its peer) */
    int fail_next;              /* complete the next one with an error */
    int busy;                   /* refuse this many posts with BUSY */
    int noreg;                  /* pin fails */
    int posts, atomic_posts, pins, unpins, regs, deregs, progress_calls;
    unsigned last_access;
    uint64_t last_pin_id;       /* the device buffer id of the last pin */
    size_t atomicv_max;
    /* dynamic windows: the one region the "target" has attached */
    int queries;
    gdr_rma_region_reply_t region, region2;    /* what h_query answers (region2: a second) */
    int am_acc_pending;
    gdr_rma_op_t *staged_op;    /* a staged-protocol operation progress completes */
    void (*on_progress)(void);  /* called by each round of progress (another rank acting) */
    size_t inline_max;          /* puts up to this long are copied at post (as inline) */
    int after_reads_posts;      /* posts flagged GDR_RMA_POST_AFTER_READS */
    wr_kind_t done_kinds[256];  /* the kinds completed, in order (done_n of them) */
    uint64_t done_addrs[256];   /* and their (first) remote addresses */
    int done_n;
    int small_posts;            /* posts of the small protocols (put_short, _bcopy) */
    int protos[GDR_RMA_PROTOS]; /* the general path's puts and gets by protocol */
    size_t bcopy_max;           /* rc/bcopy's limit (0: none, puts and gets by reference) */
} fake_t;

extern fake_t fk;
extern gdr_rma_engine_t eng;    /* the fake transport and host */
extern uint8_t target_mem[4][4096];     /* the "remote" windows of 4 ranks */

/* Carries out the oldest (fk.lifo: newest) queued work request and completes it. */
void complete_one(void);
/* A window of 4 ranks (this is rank 0), every target at target_mem[i], unit 8. */
void make_win(gdr_rma_win_t *w, int dynamic, unsigned declared, int ordered);

typedef struct {
    int calls, status;
    char landed[256];
} done_t;

/* A done_t's completion callback: counts, keeps the status and what landed. */
void on_done(void *arg, int status, const void *landed, size_t len);
/* plan + issue + post; returns the engine's result, or -100 for "planned a message" */
int run(gdr_rma_win_t *w, gdr_rma_access_t *a, done_t *d);
/* a target piece at offset off */
struct iovec one_piece(size_t off, size_t len);

#endif /* FAKE_ENGINE_H */
