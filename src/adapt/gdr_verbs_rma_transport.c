#include "gdr_verbs_rma_transport.h"

#include <string.h>

/* gdr_verbs_rma's return codes are the seam's, both common/gdr_status.h's: handed on as
 * they are. */

/* the engine's rc protocols as the verbs layer's ways (anything else cannot be posted) */
static gdr_verbs_rma_how_t how_of(gdr_rma_proto_t proto)
{
    return proto == GDR_RMA_PROTO_RC_SHORT ? GDR_VERBS_RMA_INLINE
        : proto == GDR_RMA_PROTO_RC_BCOPY ? GDR_VERBS_RMA_BOUNCE : GDR_VERBS_RMA_REGISTERED;
}

static int t_put(void *ctx, int peer, gdr_rma_proto_t proto, const void *src, size_t len,
                 uint64_t raddr, uint32_t rkey, unsigned flags, gdr_rma_done_fn done, void *arg)
{
    return gdr_verbs_rma_put(ctx, peer, how_of(proto), src, len, raddr, rkey,
                             (flags & GDR_RMA_POST_AFTER_READS) != 0, done, arg);
}

static int t_get(void *ctx, int peer, gdr_rma_proto_t proto, void *dst, size_t len,
                 uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    return gdr_verbs_rma_get(ctx, peer, how_of(proto), dst, len, raddr, rkey, done, arg);
}

static int t_writev(void *ctx, int peer, const struct iovec *src, size_t n, const void *pin,
                  uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    return gdr_verbs_rma_writev(ctx, peer, src, n, pin, raddr, rkey, done, arg);
}

static int t_readv(void *ctx, int peer, const struct iovec *dst, size_t n, const void *pin,
                 uint64_t raddr, uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    return gdr_verbs_rma_readv(ctx, peer, dst, n, pin, raddr, rkey, done, arg);
}

static int t_atomicv(void *ctx, int peer, gdr_rma_atomic_t op, const void *operands,
                   uint64_t compare, void *results, const uint64_t *raddrs, size_t n,
                   uint32_t rkey, unsigned flags, gdr_rma_done_fn done, void *arg)
{
    gdr_verbs_rma_atomic_op_t vop = op == GDR_RMA_ATOMIC_CMP_SWAP ? GDR_VERBS_RMA_CMP_SWAP
        : GDR_VERBS_RMA_FETCH_ADD;
    return gdr_verbs_rma_atomicv(ctx, peer, vop, operands, compare, results, raddrs, n, rkey,
                                 (flags & GDR_RMA_POST_AFTER_READS) != 0, done, arg);
}

static size_t t_atomicv_max(const void *ctx)
{
    return gdr_verbs_rma_atomicv_max(ctx);
}

static int t_sge_fits(const void *ctx, size_t n, size_t total)
{
    return gdr_verbs_rma_sge_fits(ctx, n, total);
}

static int t_pin(void *ctx, const void *addr, size_t len, uint64_t device_id, void **out)
{
    gdr_verbs_rma_pin_t *p = NULL;
    int rc = gdr_verbs_rma_pin(ctx, addr, len, device_id, &p);
    *out = p;
    return rc;
}

static void t_unpin(void *ctx, void *p)
{
    gdr_verbs_rma_unpin(ctx, p);
}

static int t_reg(void *ctx, void *addr, size_t len, unsigned access, gdr_rma_mr_t *out,
               char *why, size_t why_len)
{
    gdr_verbs_rma_region_t r;
    unsigned flags = (access & GDR_RMA_REMOTE_READ ? GDR_VERBS_RMA_REMOTE_READ : 0) |
        (access & GDR_RMA_REMOTE_WRITE ? GDR_VERBS_RMA_REMOTE_WRITE : 0) |
        (access & GDR_RMA_REMOTE_ATOMIC ? GDR_VERBS_RMA_REMOTE_ATOMIC : 0);
    int rc = gdr_verbs_rma_register(ctx, addr, len, flags, &r, why, why_len);
    *out = (gdr_rma_mr_t) {.handle = r.mr,.addr = r.addr,.len = r.len,.rkey = r.rkey };
    return rc;
}

static void t_dereg(void *ctx, gdr_rma_mr_t *mr)
{
    gdr_verbs_rma_region_t r = {.mr = mr->handle,.addr = mr->addr,.len = mr->len,.rkey = mr->rkey };
    gdr_verbs_rma_deregister(ctx, &r);
    memset(mr, 0, sizeof(*mr));
}

static int t_put_short(void *ctx, int peer, const void *src, size_t len, uint64_t raddr,
                       uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    return gdr_verbs_rma_put_short(ctx, peer, src, len, raddr, rkey, done, arg);
}

static int t_put_bcopy(void *ctx, int peer, const void *src, size_t len, uint64_t raddr,
                       uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    return gdr_verbs_rma_put_bcopy(ctx, peer, src, len, raddr, rkey, done, arg);
}

static int t_get_bcopy(void *ctx, int peer, void *dst, size_t len, uint64_t raddr,
                       uint32_t rkey, gdr_rma_done_fn done, void *arg)
{
    return gdr_verbs_rma_get_bcopy(ctx, peer, dst, len, raddr, rkey, done, arg);
}

static void t_small_limits(const void *ctx, uint32_t *short_max, uint32_t *bcopy_max)
{
    *short_max = gdr_verbs_rma_short_max(ctx);
    *bcopy_max = gdr_verbs_rma_bcopy_max(ctx);
}

static const char *t_error(const void *ctx)
{
    return gdr_verbs_rma_error(ctx);
}

void gdr_verbs_rma_transport(gdr_verbs_rma_t *rma, gdr_rma_transport_t *net)
{
    *net = (gdr_rma_transport_t) {
        .ctx = rma,.put = t_put,.get = t_get,.writev = t_writev,.readv = t_readv,.atomicv = t_atomicv,
        .atomicv_max = t_atomicv_max,.sge_fits = t_sge_fits,.pin = t_pin,.unpin = t_unpin,.reg = t_reg,
        .dereg = t_dereg,.error = t_error,.put_short = t_put_short,
        .put_bcopy = t_put_bcopy,.get_bcopy = t_get_bcopy,.small_limits = t_small_limits
    };
}
