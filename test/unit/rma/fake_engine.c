/* The fake transport and host of fake_engine.h. */
#include "fake_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fake_t fk;
static int post(wr_t w)
{
    if (fk.busy > 0) {
        fk.busy--;
        return GDR_RMA_BUSY;
    }
    fk.after_reads_posts += (w.flags & GDR_RMA_POST_AFTER_READS) != 0;
    fk.q[fk.n++] = w;
    fk.posts++;
    return GDR_RMA_OK;
}

/* rc/short and rc/bcopy copy the data at post (into the slot); rc/zcopy reads src until
 * done */
static int f_put(void *c, int peer, gdr_rma_proto_t proto, const void *src, size_t len,
                 uint64_t raddr, uint32_t rkey, unsigned flags, gdr_rma_done_fn done, void *arg)
{
    (void) c;
    wr_t w = {.kind = W_PUT,.peer = peer,.local = (void *) src,.len = len,.raddr = raddr,
        .rkey = rkey,.done = done,.arg = arg,.flags = flags };
    if (proto != GDR_RMA_PROTO_RC_ZCOPY && len > sizeof(w.inl))
        return GDR_RMA_NOREG;
    fk.protos[proto]++;
    int rc = post(w);
    if (rc == GDR_RMA_OK && proto != GDR_RMA_PROTO_RC_ZCOPY) {
        wr_t *q = &fk.q[fk.n - 1];
        memcpy(q->inl, src, len);
        q->local = NULL;        /* the data is in the slot, which moves: see inlined */
        q->inlined = 1;
    }
    return rc;
}

static int f_get(void *c, int peer, gdr_rma_proto_t proto, void *dst, size_t len,
                 uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    (void) c;
    fk.protos[proto]++;
    return post((wr_t) {.kind = W_GET,.peer = peer,.local = dst,.len = len,.raddr = raddr,
                .rkey = rkey,.done = done,.arg = arg });
}

/* the small protocols copy the data at post, whatever its length (up to inl's) */
static int f_put_copied(void *c, int peer, const void *src, size_t len, uint64_t raddr,
                        uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    (void) c;
    if (len > sizeof(((wr_t *) 0)->inl))
        return GDR_RMA_NOREG;
    int rc = post((wr_t) {.kind = W_PUT,.peer = peer,.len = len,.raddr = raddr,.rkey = rkey,
                  .done = done,.arg = arg,.inlined = 1 });
    if (rc == GDR_RMA_OK)
        memcpy(fk.q[fk.n - 1].inl, src, len);
    fk.small_posts += rc == GDR_RMA_OK;
    return rc;
}

static int f_get_bcopy(void *c, int peer, void *dst, size_t len, uint64_t raddr, uint32_t rkey,
                       gdr_rma_done_fn done, void *arg)
{
    (void) c;
    int rc = post((wr_t) {.kind = W_GET,.peer = peer,.local = dst,.len = len,.raddr = raddr,
                          .rkey = rkey,.done = done,.arg = arg });
    fk.small_posts += rc == GDR_RMA_OK;
    return rc;
}

static void f_small_limits(const void *c, uint32_t *short_max, uint32_t *bcopy_max)
{
    (void) c;
    *short_max = (uint32_t) fk.inline_max;
    *bcopy_max = (uint32_t) (fk.bcopy_max < sizeof(((wr_t *) 0)->inl) ? fk.bcopy_max
                             : sizeof(((wr_t *) 0)->inl));
}

static int f_vec(wr_kind_t k, int peer, const struct iovec *v, size_t n, uint64_t raddr,
                 uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    wr_t w = {.kind = k,.peer = peer,.n = n,.raddr = raddr,.rkey = rkey,.done = done,.arg = arg };
    memcpy(w.iov, v, n * sizeof(*v));
    return post(w);
}

static int f_writev(void *c, int peer, const struct iovec *src, size_t n, const void *pin,
                    uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    (void) c;
    (void) pin;
    return f_vec(W_WRITEV, peer, src, n, raddr, rkey, done, arg);
}

static int f_readv(void *c, int peer, const struct iovec *dst, size_t n, const void *pin,
                   uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    (void) c;
    (void) pin;
    return f_vec(W_READV, peer, dst, n, raddr, rkey, done, arg);
}

static int f_atomicv(void *c, int peer, gdr_rma_atomic_t op, const void *operands,
                     uint64_t compare, void *results, const uint64_t *raddrs, size_t n,
                     uint32_t rkey, unsigned flags, gdr_rma_done_fn done, void *arg)
{
    (void) c;
    wr_t w = {.kind = W_ATOMICV,.peer = peer,.aop = op,.operands = operands,.compare = compare,
        .local = results,.n = n,.rkey = rkey,.done = done,.arg = arg,.flags = flags
    };
    memcpy(w.raddrs, raddrs, n * sizeof(*raddrs));
    int rc = post(w);
    fk.atomic_posts += rc == GDR_RMA_OK;
    return rc;
}

static size_t f_atomicv_max(const void *c)
{
    (void) c;
    return fk.atomicv_max;
}

static int f_sge_fits(const void *c, size_t n, size_t total)
{
    (void) c;
    (void) total;
    return n <= 8;
}

/* like the verbs transport: spans it would copy (up to 8 bytes here) need no pin */
static int f_pin(void *c, const void *addr, size_t len, uint64_t device_id, void **pin)
{
    (void) c;
    (void) addr;
    *pin = NULL;
    if (fk.noreg)
        return GDR_RMA_NOREG;
    fk.last_pin_id = device_id;
    if (len <= 8 && device_id == 0)
        return GDR_RMA_OK;
    fk.pins++;
    *pin = &fk;
    return GDR_RMA_OK;
}

static void f_unpin(void *c, void *pin)
{
    (void) c;
    fk.unpins += pin != NULL;
}

static int f_reg(void *c, void *addr, size_t len, unsigned access, gdr_rma_mr_t *out, char *why,
                 size_t why_len)
{
    (void) c;
    (void) why;
    (void) why_len;
    fk.regs++;
    fk.last_access = access;
    *out = (gdr_rma_mr_t) {.handle = &fk,.addr = (uint64_t) (uintptr_t) addr,.len = len,
        .rkey = 0x1234 };
    return 0;
}

static void f_dereg(void *c, gdr_rma_mr_t *mr)
{
    (void) c;
    fk.deregs++;
    memset(mr, 0, sizeof(*mr));
}

static const char *f_error(const void *c)
{
    (void) c;
    return "fake";
}

static int reads_target(const wr_t *w)
{
    return w->kind == W_GET || w->kind == W_READV || w->kind == W_ATOMICV;
}

void complete_one(void)
{
    int i = fk.lifo ? fk.n - 1 : 0;
    /* as a NIC honours a fence: a flagged post, and everything after it on the queue
     * pair, waits for the reads and atomics to that peer before it (the oldest first) */
    for (int k = 0, oldest_read = -1; k <= i; k++) {
        if (fk.q[k].peer != fk.q[i].peer)
            continue;
        if ((fk.q[k].flags & GDR_RMA_POST_AFTER_READS) && oldest_read >= 0) {
            i = oldest_read;
            break;
        }
        if (oldest_read < 0 && reads_target(&fk.q[k]))
            oldest_read = k;
    }
    wr_t w = fk.q[i];
    if (fk.done_n < (int) (sizeof(fk.done_kinds) / sizeof(fk.done_kinds[0]))) {
        fk.done_kinds[fk.done_n] = w.kind;
        fk.done_addrs[fk.done_n++] = w.kind == W_ATOMICV ? w.raddrs[0] : w.raddr;
    }
    if (w.inlined)
        w.local = w.inl;        /* (this copy's: the queue slot moves below) */
    memmove(&fk.q[i], &fk.q[i + 1], (size_t) (fk.n - i - 1) * sizeof(wr_t));
    fk.n--;
    int status = fk.fail_next ? -1 : 0;
    fk.fail_next = 0;
    if (status == 0) {
        size_t off = 0;
        switch (w.kind) {
            case W_PUT:
                memcpy((void *) (uintptr_t) w.raddr, w.local, w.len);
                break;
            case W_GET:
                memcpy(w.local, (void *) (uintptr_t) w.raddr, w.len);
                break;
            case W_WRITEV:
                for (size_t k = 0; k < w.n; off += w.iov[k].iov_len, k++)
                    memcpy((char *) (uintptr_t) w.raddr + off, w.iov[k].iov_base,
                           w.iov[k].iov_len);
                break;
            case W_READV:
                for (size_t k = 0; k < w.n; off += w.iov[k].iov_len, k++)
                    memcpy(w.iov[k].iov_base, (char *) (uintptr_t) w.raddr + off,
                           w.iov[k].iov_len);
                break;
            case W_ATOMICV:
                for (size_t k = 0; k < w.n; k++) {
                    uint64_t *word = (uint64_t *) (uintptr_t) w.raddrs[k], v, old = *word;
                    memcpy(&v, (const char *) w.operands + 8 * k, 8);
                    if (w.aop == GDR_RMA_ATOMIC_FETCH_ADD)
                        *word = old + v;
                    else if (old == w.compare)
                        *word = v;
                    if (w.local != NULL)
                        memcpy((char *) w.local + 8 * k, &old, 8);
                }
                break;
        }
    }
    w.done(w.arg, status);
}

static int h_progress(void *c)
{
    (void) c;
    fk.progress_calls++;
    if (fk.on_progress != NULL)
        fk.on_progress();
    if (fk.n > 0)
        complete_one();
    else if (fk.am_acc_pending > 0)
        fk.am_acc_pending--;
    else if (fk.staged_op != NULL) {
        gdr_rma_op_t *op = fk.staged_op;
        fk.staged_op = NULL;
        gdr_rma_op_part_done(op, GDR_RMA_OK);
    }
    return 0;
}

static int h_query(void *c, void *host_win, int target, uint64_t addr,
                   gdr_rma_region_reply_t *out)
{
    (void) c;
    (void) host_win;
    (void) target;
    fk.queries++;
    *out = addr >= fk.region.base && addr - fk.region.base < fk.region.size ? fk.region
        : fk.region2.found && addr >= fk.region2.base && addr - fk.region2.base < fk.region2.size
        ? fk.region2 : (gdr_rma_region_reply_t) { 0 };
    return 0;
}

static int h_am_acc(void *c, void *host_win, int target)
{
    (void) c;
    (void) host_win;
    (void) target;
    return fk.am_acc_pending > 0;
}

gdr_rma_engine_t eng = {
    .short_cap = UINT32_MAX,
    .net = {.put = f_put,.get = f_get,.writev = f_writev,.readv = f_readv,.atomicv = f_atomicv,
            .atomicv_max = f_atomicv_max,.sge_fits = f_sge_fits,.pin = f_pin,.unpin = f_unpin,
            .reg = f_reg,.dereg = f_dereg,.error = f_error,.put_short = f_put_copied,
            .put_bcopy = f_put_copied,.get_bcopy = f_get_bcopy,.small_limits = f_small_limits},
    .host = {.progress = h_progress,.query_region = h_query,.am_accumulates_pending = h_am_acc},
};

/* ---- helpers ----------------------------------------------------------------------- */

uint8_t target_mem[4][4096];

void make_win(gdr_rma_win_t *w, int dynamic, unsigned declared, int ordered)
{
    if (gdr_rma_win_init(w, &eng, NULL, 4, 0, dynamic, 1) != GDR_RMA_OK) {
        fprintf(stderr, "fake engine: window init failed\n");
        exit(1);
    }
    for (int i = 0; i < 4; i++)
        gdr_rma_win_set_peer(w, i, 10 + i);
    gdr_rma_win_set_policy(w, gdr_rma_win_all_reachable(w), declared, ordered);
    for (int i = 0; i < 4; i++) {
        gdr_rma_card_t c = {.size = sizeof(target_mem[i]),.disp_unit = 8,
            .base = dynamic ? 0 : (uint64_t) (uintptr_t) target_mem[i],.rkey = dynamic ? 0 : 7 };
        gdr_rma_win_set_card(w, i, &c);
    }
}


void on_done(void *arg, int status, const void *landed, size_t len)
{
    done_t *d = arg;
    d->calls++;
    d->status = status;
    if (landed != NULL && len <= sizeof(d->landed))
        memcpy(d->landed, landed, len);
}

int run(gdr_rma_win_t *w, gdr_rma_access_t *a, done_t *d)
{
    gdr_rma_plan_t plan;
    gdr_rma_op_t *op;
    int na, rc = gdr_rma_plan(w, a, &plan, &na);
    if (rc != GDR_RMA_OK)
        return rc;
    if (!plan.by_rdma)
        return -100;
    if (plan.origin_move == GDR_RMA_MOVE_BOUNCE)        /* the host packs */
        for (size_t i = 0, off = 0; i < a->origin.n; off += a->origin.iov[i].iov_len, i++)
            memcpy((char *) plan.origin_bounce + off, a->origin.iov[i].iov_base,
                   a->origin.iov[i].iov_len);
    rc = gdr_rma_issue(w, a, &plan, &op);
    if (rc != GDR_RMA_OK)
        return rc;
    if (d != NULL)
        gdr_rma_op_on_complete(op, on_done, d, 0);
    gdr_rma_op_posted(op);
    return GDR_RMA_OK;
}

struct iovec one_piece(size_t off, size_t len)
{
    return (struct iovec) {.iov_base = (void *) (uintptr_t) off,.iov_len = len };
}
