/* LD_PRELOAD for tests over Soft-RoCE (maint/rxe) only: ibv_reg_dmabuf_mr for the rxe
 * provider of Debian's rdma-core 44, which has none (libibverbs answers EOPNOTSUPP
 * before the kernel is asked).  The kernel does the registration (maint/rxe.d patch 0007
 * gives rxe reg_user_mr_dmabuf); this passes the call to it through libibverbs' own
 * command for providers, as a provider with dmabuf support does.  Any other device, and
 * any other answer, is the real function's.  Never installed nor linked into gdr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

/* From libibverbs' provider interface (infiniband/driver.h, which Debian does not
 * install): the memory region a provider allocates, freed by its dereg_mr. */
struct shim_verbs_mr {
    struct ibv_mr ibv_mr;
    int mr_type;
    int access;
};

int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
                          int fd, int access, struct shim_verbs_mr *vmr, void *driver);

typedef struct ibv_mr *reg_dmabuf_fn(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int);

__attribute__((visibility("default")))
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
                                 uint64_t iova, int fd, int access)
{
    reg_dmabuf_fn *real = (reg_dmabuf_fn *) dlvsym(RTLD_NEXT, "ibv_reg_dmabuf_mr", "IBVERBS_1.12");
    struct ibv_mr *mr = real != NULL ? real(pd, offset, length, iova, fd, access) : NULL;
    if (mr != NULL || (real != NULL && errno != EOPNOTSUPP)
        || strncmp(ibv_get_device_name(pd->context->device), "rxe", 3) != 0)
        return mr;
    struct shim_verbs_mr *vmr = calloc(1, sizeof(*vmr));
    if (vmr == NULL)
        return NULL;
    int rc = ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr, NULL);
    if (rc != 0) {
        free(vmr);
        errno = rc;
        return NULL;
    }
    vmr->ibv_mr.context = pd->context;
    vmr->ibv_mr.pd = pd;
    vmr->ibv_mr.addr = (void *) (uintptr_t) iova;
    vmr->ibv_mr.length = length;
    return &vmr->ibv_mr;
}
