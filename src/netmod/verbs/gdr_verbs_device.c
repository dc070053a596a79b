#include "gdr_verbs_device.h"
#include "gdr_verbs_topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hwloc.h>

/* First ACTIVE port of an open context, 0 if none. */
static uint8_t first_active_port(struct ibv_context *ctx, struct ibv_port_attr *attr)
{
    struct ibv_device_attr dattr;
    if (ibv_query_device(ctx, &dattr) != 0)
        return 0;
    for (uint8_t p = 1; p <= dattr.phys_port_cnt; p++) {
        if (ibv_query_port(ctx, p, attr) == 0 && attr->state == IBV_PORT_ACTIVE)
            return p;
    }
    return 0;
}

/* Distances from hwloc; every distance stays -1 (unknown) if hwloc cannot help. */
static void fill_distances(gdr_verbs_candidate_t *cands, size_t n, const char *near_pci_busid)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return;
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return;
    }
    if (near_pci_busid != NULL) {
        for (size_t i = 0; i < n; i++)
            cands[i].distance = gdr_verbs_topo_distance_to_pci(topo, cands[i].name, near_pci_busid);
    } else {
        hwloc_bitmap_t bound = hwloc_bitmap_alloc();
        if (bound != NULL && hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) == 0) {
            for (size_t i = 0; i < n; i++)
                cands[i].distance = gdr_verbs_topo_distance(topo, cands[i].name, bound);
        }
        hwloc_bitmap_free(bound);
    }
    hwloc_topology_destroy(topo);
}

gdr_verbs_status_t gdr_verbs_device_open(gdr_verbs_device_t *dev, const char *wanted,
                                         const char *near_pci_busid, char *why, size_t why_len)
{
    gdr_verbs_status_t status = GDR_VERBS_NO_DEVICE;
    struct ibv_device **list;
    gdr_verbs_candidate_t *cands = NULL;
    int num = 0, chosen;
    const char *reason;

    memset(dev, 0, sizeof(*dev));
    list = ibv_get_device_list(&num);
    if (list == NULL || num <= 0) {
        snprintf(why, why_len, "no RDMA device (%s): load the HCA driver or rdma_rxe, "
                 "and install ibverbs-providers", list == NULL ? strerror(errno) : "none listed");
        goto out;
    }
    cands = calloc((size_t) num, sizeof(*cands));
    if (cands == NULL) {
        snprintf(why, why_len, "out of memory listing %d RDMA devices", num);
        status = GDR_VERBS_ERROR;
        goto out;
    }
    for (int i = 0; i < num; i++) {
        struct ibv_context *ctx = ibv_open_device(list[i]);
        struct ibv_port_attr pattr;
        snprintf(cands[i].name, sizeof(cands[i].name), "%s", ibv_get_device_name(list[i]));
        cands[i].distance = -1;
        if (ctx != NULL) {
            cands[i].port_active = first_active_port(ctx, &pattr) != 0;
            ibv_close_device(ctx);
        }
    }
    fill_distances(cands, (size_t) num, near_pci_busid);

    chosen = gdr_verbs_select(cands, (size_t) num, wanted, &reason);
    if (chosen < 0) {
        snprintf(why, why_len, "%s", reason);
        /* a device the user named explicitly but cannot have is an error */
        status = (wanted != NULL && wanted[0] != '\0') ? GDR_VERBS_ERROR : GDR_VERBS_NO_DEVICE;
        goto out;
    }

    struct ibv_port_attr pattr;
    dev->context = ibv_open_device(list[chosen]);
    if (dev->context == NULL) {
        snprintf(why, why_len, "ibv_open_device(%s) failed: %s (check /dev/infiniband "
                 "permissions and MPIR_CVAR_CH4_GDR_DEVICE)", cands[chosen].name, strerror(errno));
        status = GDR_VERBS_ERROR;
        goto out;
    }
    snprintf(dev->name, sizeof(dev->name), "%s", cands[chosen].name);
    dev->port_num = first_active_port(dev->context, &pattr);
    if (dev->port_num == 0) {
        snprintf(why, why_len, "%s: no ACTIVE port any more", dev->name);
        status = GDR_VERBS_ERROR;
        goto out_close;
    }
    dev->active_mtu = pattr.active_mtu;
    dev->link_layer = pattr.link_layer;
    dev->max_msg_sz = pattr.max_msg_sz;
    dev->lid = pattr.lid;
    dev->gid_index = -1;
    if (ibv_query_device(dev->context, &dev->attr) != 0) {
        snprintf(why, why_len, "ibv_query_device(%s) failed: %s", dev->name, strerror(errno));
        status = GDR_VERBS_ERROR;
        goto out_close;
    }
    dev->pd = ibv_alloc_pd(dev->context);
    if (dev->pd == NULL) {
        snprintf(why, why_len, "ibv_alloc_pd(%s) failed: %s (is the locked-memory limit, "
                 "ulimit -l, large enough?)", dev->name, strerror(errno));
        status = GDR_VERBS_ERROR;
        goto out_close;
    }
    status = GDR_VERBS_OK;
    goto out;

  out_close:
    ibv_close_device(dev->context);
    memset(dev, 0, sizeof(*dev));
  out:
    free(cands);
    if (list != NULL)
        ibv_free_device_list(list);
    return status;
}

void gdr_verbs_device_close(gdr_verbs_device_t *dev)
{
    if (dev->pd != NULL)
        ibv_dealloc_pd(dev->pd);
    if (dev->context != NULL)
        ibv_close_device(dev->context);
    memset(dev, 0, sizeof(*dev));
}

/* Preference of a GID table entry: higher is better, -1 unusable. */
static int gid_rank(const struct ibv_gid_entry *e)
{
    static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    int zero = 1;
    for (int i = 0; i < 16; i++)
        zero &= e->gid.raw[i] == 0;
    if (zero)
        return -1;
    if (e->gid_type == IBV_GID_TYPE_ROCE_V2)
        return memcmp(e->gid.raw, v4_prefix, 12) == 0 ? 3 : 2;
    return 1;
}

int gdr_verbs_device_pick_gid(gdr_verbs_device_t *dev, int wanted, char *why, size_t why_len)
{
    struct ibv_port_attr pattr;
    int best = -1, best_rank = -1;

    if (ibv_query_port(dev->context, dev->port_num, &pattr) != 0) {
        snprintf(why, why_len, "ibv_query_port(%s:%u) failed: %s", dev->name,
                 (unsigned) dev->port_num, strerror(errno));
        return -1;
    }
    for (int i = 0; i < pattr.gid_tbl_len; i++) {
        struct ibv_gid_entry e;
        if (ibv_query_gid_ex(dev->context, dev->port_num, (uint32_t) i, &e, 0) != 0)
            continue;
        int r = gid_rank(&e);
        if (wanted >= 0 ? i == wanted && r >= 0 : r > best_rank) {
            best = i;
            best_rank = r;
            memcpy(dev->gid, e.gid.raw, 16);
        }
    }
    if (best < 0 && dev->link_layer == IBV_LINK_LAYER_INFINIBAND && wanted < 0) {
        union ibv_gid g;        /* InfiniBand addresses by LID; GID 0 is informative */
        if (ibv_query_gid(dev->context, dev->port_num, 0, &g) == 0) {
            memcpy(dev->gid, g.raw, 16);
            best = 0;
        }
    }
    if (best < 0) {
        if (wanted >= 0)
            snprintf(why, why_len, "%s port %u has no usable GID at index %d "
                     "(MPIR_CVAR_CH4_GDR_GID_INDEX; show_gids lists them)", dev->name,
                     (unsigned) dev->port_num, wanted);
        else
            snprintf(why, why_len, "%s port %u has no usable GID: for RoCE, give the "
                     "netdev an IP address", dev->name, (unsigned) dev->port_num);
        return -1;
    }
    dev->gid_index = best;
    return 0;
}

/* [addr, addr+len) as the dmabuf fd holds it at offset, or by address (fd < 0). */
static struct ibv_mr *reg_fd_or_addr(const gdr_verbs_device_t *dev, void *addr, size_t len,
                                     int fd, uint64_t offset, int access)
{
    return fd >= 0 ? ibv_reg_dmabuf_mr(dev->pd, offset, len, (uint64_t) (uintptr_t) addr, fd,
                                       access)
        : ibv_reg_mr(dev->pd, addr, len, access);
}

struct ibv_mr *gdr_verbs_device_reg_mr(const gdr_verbs_device_t *dev, void *addr, size_t len,
                                       const void *asked, int access)
{
    int fd = -1;
    uint64_t offset = 0;
    if (dev->dmabuf_source != NULL && len > 0
        && dev->dmabuf_source(dev->dmabuf_ctx, asked, &addr, &len, &fd, &offset) < 0)
        return NULL;
    struct ibv_mr *mr = reg_fd_or_addr(dev, addr, len, fd, offset, access);
    if (fd >= 0) {
        int saved = errno;
        close(fd);              /* the registration holds the buffer */
        errno = saved;
    }
    return mr;
}

int gdr_verbs_device_try_reg(const gdr_verbs_device_t *dev, void *addr, size_t len,
                             int dmabuf_fd, uint64_t offset, char *why, size_t why_len)
{
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    struct ibv_mr *mr;
    errno = 0;
    mr = reg_fd_or_addr(dev, addr, len, dmabuf_fd, offset, access);
    if (mr == NULL) {
        snprintf(why, why_len, "%s on %s failed: %s", dmabuf_fd >= 0 ? "ibv_reg_dmabuf_mr"
                 : "ibv_reg_mr", dev->name, strerror(errno != 0 ? errno : EINVAL));
        return -1;
    }
    (void) ibv_dereg_mr(mr);
    return 0;
}

#define GDR_VERBS_VENDOR_RXE 0xffffffu  /* the kernel's rxe_param.h, RXE_VENDOR_ID */
#define GDR_VERBS_VENDOR_SIW 0x626d74u  /* siw.h, SIW_VENDOR_ID */

int gdr_verbs_doorbell_is_syscall(uint32_t vendor_id)
{
    return vendor_id == GDR_VERBS_VENDOR_RXE || vendor_id == GDR_VERBS_VENDOR_SIW;
}

int gdr_verbs_device_doorbell_is_syscall(const gdr_verbs_device_t *dev)
{
    return gdr_verbs_doorbell_is_syscall(dev->attr.vendor_id);
}
