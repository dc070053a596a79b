/* CUDA IPC: device memory of one process opened in another process on the same node
 * (DESIGN.md section 3, same-node device windows).  A handle travels by any means (e.g.
 * the netmod's messages); the importer maps the exporter's allocation into its own
 * address space, at an address of its own. */
#ifndef GDR_GPU_IPC_H
#define GDR_GPU_IPC_H

#include <stdint.h>
#include "gdr_gpu.h"

typedef struct gdr_gpu_ipc_handle {
    gdr_cu_ipc_mem_handle_t cuda;       /* the driver's 64 opaque bytes (whole allocation) */
    uint64_t buffer_id;         /* the exporter's buffer id of the allocation: with the
                                   exporter's identity, the key of an importer's cache */
    uint64_t offset;            /* of the exported pointer in its allocation */
    uint64_t size;              /* of the allocation */
} gdr_gpu_ipc_handle_t;

/* A handle for the device allocation holding p (any pointer inside it).  The handle stays
 * valid until the allocation is freed; a new allocation at the same address gets another
 * buffer id.  -EINVAL when p is not device memory; -ENOTSUP without GDR_GPU_IPC. */
int gdr_gpu_ipc_handle_get(gdr_gpu_t *g, const void *p, gdr_gpu_ipc_handle_t *h);

/* Maps h's allocation (exported by another process) and returns in *p the address of the
 * exported pointer in this process.  Opening one handle twice gives the same mapping and
 * needs two closes.  A handle cannot be opened in the process that made it (the driver
 * answers INVALID_CONTEXT): use the pointer itself there. */
int gdr_gpu_ipc_open(gdr_gpu_t *g, const gdr_gpu_ipc_handle_t *h, void **p);

/* Closes a mapping gdr_gpu_ipc_open returned (p: that pointer).  The exporter's memory
 * is unaffected; work using the mapping must have completed. */
int gdr_gpu_ipc_close(gdr_gpu_t *g, void *p);

#endif /* GDR_GPU_IPC_H */
