/* gdr's GPU kernels (gdr_gpu_kernels.cu) as a fatbin image inside the library, for the
 * driver's cuModuleLoadData: SASS for the compute capabilities gdr was configured with
 * (--with-cuda-sm) and PTX for the highest.  The definition is generated at build time
 * by src/gpu/build-kernels.  Size 0: built without nvcc, so no GPU kernels. */
#ifndef GDR_GPU_KERNELS_IMAGE_H
#define GDR_GPU_KERNELS_IMAGE_H

#include <stddef.h>

extern const unsigned char gdr_gpu_kernels_image[];     /* 16-byte aligned */
extern const size_t gdr_gpu_kernels_image_size;

#endif /* GDR_GPU_KERNELS_IMAGE_H */
