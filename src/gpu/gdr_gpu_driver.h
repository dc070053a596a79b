/* The CUDA driver, reached at run time.  libmpi never links libcuda: on machines
 * without the NVIDIA driver (CI, login nodes) GPU support is simply off. */
#ifndef GDR_GPU_DRIVER_H
#define GDR_GPU_DRIVER_H

#include <stddef.h>

#define GDR_GPU_DRIVER_SONAME "libcuda.so.1"

/* Entry points we use, with the driver's ABI (CUresult is an int-sized enum). */
typedef struct gdr_gpu_driver_table {
    int (*cuInit)(unsigned int flags);
    int (*cuDeviceGetCount)(int *count);
    int (*cuDriverGetVersion)(int *version);
    int (*cuGetErrorString)(int result, const char **str);
    int (*cuDeviceGet)(int *device, int ordinal);
    int (*cuDeviceGetPCIBusId)(char *busid, int len, int device);
} gdr_gpu_driver_table_t;

typedef struct gdr_gpu_driver {
    void *handle;               /* dlopen handle, NULL when off */
    gdr_gpu_driver_table_t fn;
    int enabled;                /* 1: a driver and at least one device */
    int device_count;
    int driver_version;         /* e.g. 13000 for CUDA 13.0 */
    char why_off[256];          /* when !enabled: one sentence, for the log */
} gdr_gpu_driver_t;

/* Loads `soname` (NULL: GDR_GPU_DRIVER_SONAME), initialises it and counts devices.
 * Never fails: any problem (no library, stub library, no device) leaves
 * drv->enabled == 0 with why_off set.  Returns drv->enabled. */
int gdr_gpu_driver_probe(gdr_gpu_driver_t *drv, const char *soname);

/* PCI bus id ("dddd:bb:dd.f") of visible device `ordinal`; 0, or -1 if unknown. */
int gdr_gpu_driver_pci_busid(const gdr_gpu_driver_t *drv, int ordinal, char *buf, size_t len);

/* Unloads what probe loaded; safe on a zeroed or disabled driver. */
void gdr_gpu_driver_release(gdr_gpu_driver_t *drv);

#endif /* GDR_GPU_DRIVER_H */
