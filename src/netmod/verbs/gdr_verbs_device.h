/* The verbs device of one process: opened once at init, closed at finalize.
 * Not thread safe: the netmod opens and closes it under MPICH's init lock. */
#ifndef GDR_VERBS_DEVICE_H
#define GDR_VERBS_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include "gdr_verbs_select.h"

typedef enum gdr_verbs_status {
    GDR_VERBS_OK = 0,
    GDR_VERBS_NO_DEVICE,        /* none present or none usable: fine for one-node jobs */
    GDR_VERBS_ERROR             /* a device exists but could not be opened or queried */
} gdr_verbs_status_t;

/* Memory the NIC takes as a dmabuf rather than by address (GPU memory when the driver
 * exports it: MPIR_CVAR_CH4_GDR_GPUDIRECT=dmabuf).  Asked about every range
 * [*addr, *addr + *len) to register, `asked` being the address inside it that the
 * caller wants (the range may be rounded out to pages): 1 = register it by address;
 * 0 = *fd (the caller closes it) holds the range at *offset, *addr and *len narrowed to the
 * memory holding `asked`; -1 = it cannot be registered (errno set). */
typedef int gdr_verbs_dmabuf_source_fn(void *ctx, const void *asked, void **addr, size_t *len,
                                       int *fd, uint64_t *offset);

typedef struct gdr_verbs_device {
    struct ibv_context *context;
    struct ibv_pd *pd;
    char name[GDR_VERBS_NAME_MAX];
    uint8_t port_num;
    enum ibv_mtu active_mtu;
    int link_layer;             /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET (RoCE) */
    uint32_t max_msg_sz;
    uint16_t lid;               /* InfiniBand */
    int gid_index;              /* RoCE: the GID we send from; -1 when none */
    uint8_t gid[16];
    struct ibv_device_attr attr;
    gdr_verbs_dmabuf_source_fn *dmabuf_source;  /* NULL: everything by address */
    void *dmabuf_ctx;
} gdr_verbs_device_t;

/* Opens the device chosen by gdr_verbs_select() (wanted: MPIR_CVAR_CH4_GDR_DEVICE,
 * or NULL/"" to let the topology decide: nearest to the PCI device near_pci_busid,
 * the rank's GPU, when given, else to the rank's CPU binding) and allocates its
 * protection domain.
 * On anything but GDR_VERBS_OK, `dev` is left closed and `why` holds one sentence
 * naming the device and what to do. */
gdr_verbs_status_t gdr_verbs_device_open(gdr_verbs_device_t *dev, const char *wanted,
                                         const char *near_pci_busid, char *why, size_t why_len);

/* Picks the GID to send from: `wanted` >= 0 (MPIR_CVAR_CH4_GDR_GID_INDEX) forces an
 * index; otherwise RoCE v2 with an IPv4-mapped address, then any RoCE v2, then
 * RoCE v1, then index 0.  Returns 0, or -1 with why set. */
int gdr_verbs_device_pick_gid(gdr_verbs_device_t *dev, int wanted, char *why, size_t why_len);

/* Whether the NIC can register [addr, addr+len) for remote access: by address
 * (dmabuf_fd < 0: ibv_reg_mr; on GPU memory this needs nvidia-peermem) or as a dmabuf
 * (ibv_reg_dmabuf_mr of dmabuf_fd at offset, addressed as addr).  The registration is
 * released at once.  0, or -1 with why set to the verbs call and its error. */
int gdr_verbs_device_try_reg(const gdr_verbs_device_t *dev, void *addr, size_t len,
                             int dmabuf_fd, uint64_t offset, char *why, size_t why_len);

/* Registers [addr, addr+len) (around `asked`, see above) with access flags, for memory
 * that may be the GPU's: as a dmabuf where dev->dmabuf_source gives one, else by address.
 * NULL with errno set. */
struct ibv_mr *gdr_verbs_device_reg_mr(const gdr_verbs_device_t *dev, void *addr, size_t len,
                                       const void *asked, int access);

/* Releases what open acquired; safe on a closed or zeroed device. */
void gdr_verbs_device_close(gdr_verbs_device_t *dev);

/* How a device's doorbell rings: 1 for the software providers (Soft-RoCE's rxe, vendor
 * 0xffffff; siw, vendor 0x626d74), whose ibv_post_send is a system call; 0 for NICs,
 * where it is one MMIO store.  By vendor id, as ibv_query_device reports it. */
int gdr_verbs_doorbell_is_syscall(uint32_t vendor_id);
int gdr_verbs_device_doorbell_is_syscall(const gdr_verbs_device_t *dev);

#endif /* GDR_VERBS_DEVICE_H */
