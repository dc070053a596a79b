/* The driver probe: any missing piece means "GPU support off" with a reason, never a
 * failure; a working driver is used, every entry point through cuGetProcAddress.  Driven
 * by the simulated GPU (test/gpusim) and its GDR_GPUSIM_INIT/_DEVICES/_HIDE knobs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gdr_unit.h"
#include "gpu/gdr_gpu_driver.h"

#define TOOLKIT_STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

static void knobs(const char *init, const char *devices, const char *hide)
{
    unsetenv("GDR_GPUSIM_INIT");
    unsetenv("GDR_GPUSIM_DEVICES");
    unsetenv("GDR_GPUSIM_HIDE");
    if (init)
        setenv("GDR_GPUSIM_INIT", init, 1);
    if (devices)
        setenv("GDR_GPUSIM_DEVICES", devices, 1);
    if (hide)
        setenv("GDR_GPUSIM_HIDE", hide, 1);
}

static void expect_off(const char *soname, const char *what, const char *why_has)
{
    gdr_gpu_driver_t drv;
    int on = gdr_gpu_driver_probe(&drv, soname);
    GDR_CHECK(on == 0 && drv.enabled == 0 && drv.device_count == 0,
              "probe [%s]: GPU support off", what);
    GDR_CHECK(strstr(drv.why_off, why_has) != NULL, "probe [%s]: reason mentions '%s' (\"%s\")",
              what, why_has, drv.why_off);
    GDR_CHECK(drv.handle == NULL, "probe [%s]: library unloaded when off", what);
    gdr_gpu_driver_release(&drv);
}

/* The simulator's own cuGetProcAddress, as the driver's users see it. */
static void lookups(const gdr_gpu_driver_t *drv)
{
    gdr_cuGetProcAddress_fn *gpa;
    void *sym = dlsym(drv->handle, "cuGetProcAddress_v2"), *a = NULL, *b = NULL;
    unsigned int st = 99;
    memcpy(&gpa, &sym, sizeof(gpa));

    GDR_CHECK(gpa("cuMemAlloc", &a, 12000, 0, &st) == 0 && a != NULL
              && st == GDR_CU_GET_PROC_ADDRESS_SUCCESS, "cuGetProcAddress finds cuMemAlloc");
    GDR_CHECK(gpa("cuMemAlloc_v2", &b, 12000, 0, NULL) == 0 && b == a,
              "... and cuMemAlloc_v2 is the same entry point");
    GDR_CHECK(a == dlsym(drv->handle, "cuMemAlloc_v2"),
              "... the one exported as cuMemAlloc_v2 (cuda.h's name for the 64-bit ABI)");
    GDR_CHECK(gpa("gdrNoSuchCall", &a, 12000, 0, &st) == 0 && a == NULL
              && st == GDR_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
              "an unknown name: success, NULL, SYMBOL_NOT_FOUND (as the driver does)");
    GDR_CHECK(gpa("cuInit", &a, 14000, 0, &st) == GDR_CUDA_ERROR_INVALID_VALUE,
              "a CUDA version above the driver's: INVALID_VALUE");

    /* an entry point of the real driver the simulator does not implement */
    gdr_cu_result_t (*managed)(gdr_cu_ptr_t *, size_t, unsigned int);
    GDR_CHECK(gpa("cuMemAllocManaged", &a, 12000, 0, &st) == 0 && a != NULL,
              "cuMemAllocManaged resolves");
    memcpy(&managed, &a, sizeof(managed));
    gdr_cu_ptr_t p = 0;
    GDR_CHECK(a != NULL && managed(&p, 64, 1) == GDR_CUDA_ERROR_NOT_SUPPORTED && p == 0,
              "... and answers CUDA_ERROR_NOT_SUPPORTED (not simulated)");
    char text[128];
    GDR_CHECK(strcmp(gdr_gpu_driver_result_text(drv, GDR_CUDA_ERROR_NOT_SUPPORTED, text,
                                                sizeof(text)),
                     "CUDA_ERROR_NOT_SUPPORTED: operation not supported") == 0,
              "result text has the name and the driver's words (%s)", text);
}

int main(int argc, char **argv)
{
    const char *sim = argc > 1 ? argv[1] : "./test/gpusim/libgdr_gpusim.so";
    gdr_gpu_driver_t drv;

    knobs(NULL, NULL, NULL);
    expect_off("libgdr-no-such-driver.so.1", "no library", "not found");
    expect_off("libc.so.6", "libc.so.6", "lacks cuGetProcAddress_v2");
    knobs("stub", NULL, NULL);
    expect_off(sim, "GDR_GPUSIM_INIT=stub", "stub library");
    knobs(NULL, "0", NULL);
    expect_off(sim, "GDR_GPUSIM_DEVICES=0", "no device");
    knobs("nodevice", NULL, NULL);
    expect_off(sim, "GDR_GPUSIM_INIT=nodevice", "no CUDA-capable device");
    knobs(NULL, NULL, "cuMemAlloc");
    expect_off(sim, "required cuMemAlloc hidden", "has no cuMemAlloc");
    if (access(TOOLKIT_STUB, R_OK) == 0)
        expect_off(TOOLKIT_STUB, "the CUDA toolkit's stub libcuda", "stub library");
    else
        printf("skip (not a pass): %s is not installed, the real stub is not probed\n",
               TOOLKIT_STUB);

    knobs(NULL, NULL, "cuMemGetHandleForAddressRange,cuStreamWaitValue64");
    GDR_CHECK(gdr_gpu_driver_probe(&drv, sim) == 1, "optional entry points hidden: still on");
    GDR_CHECK(!(drv.features & GDR_GPU_DRIVER_DMABUF) && !(drv.features & GDR_GPU_DRIVER_MEMOPS)
              && (drv.features & GDR_GPU_DRIVER_IPC) && (drv.features & GDR_GPU_DRIVER_KERNELS),
              "... dmabuf and memops off, ipc and kernels on (features 0x%x)", drv.features);
    GDR_CHECK(strstr(drv.missing, "dmabuf off: the driver has no cuMemGetHandleForAddressRange")
              && strstr(drv.missing, "memops off: the driver has no cuStreamWaitValue64"),
              "... and says which entry points are missing (\"%s\")", drv.missing);
    gdr_gpu_driver_release(&drv);

    knobs(NULL, "2", NULL);
    GDR_CHECK(gdr_gpu_driver_probe(&drv, sim) == 1, "probe the simulated GPU: GPU support on");
    GDR_CHECK(drv.device_count == 2 && drv.driver_version == 13000,
              "2 devices, driver 13000 (got %d, %d)", drv.device_count, drv.driver_version);
    GDR_CHECK(drv.features == (GDR_GPU_DRIVER_DMABUF | GDR_GPU_DRIVER_MEMOPS | GDR_GPU_DRIVER_IPC
                               | GDR_GPU_DRIVER_KERNELS) && drv.missing[0] == '\0',
              "every optional entry point found");
    GDR_CHECK(drv.fn.cuLaunchKernel != NULL && drv.fn.cuGetErrorName != NULL,
              "entry points resolved through cuGetProcAddress");
    char busid[32];
    GDR_CHECK(gdr_gpu_driver_pci_busid(&drv, 1, busid, sizeof(busid)) == 0
              && strcmp(busid, "0000:21:00.0") == 0, "device 1's PCI bus id (%s)", busid);
    GDR_CHECK(gdr_gpu_driver_pci_busid(&drv, 5, busid, sizeof(busid)) == -1,
              "no bus id for a device that does not exist");
    lookups(&drv);
    gdr_gpu_driver_release(&drv);
    GDR_CHECK(drv.handle == NULL && drv.enabled == 0, "release clears the driver");
    GDR_CHECK(gdr_gpu_driver_pci_busid(&drv, 0, busid, sizeof(busid)) == -1,
              "no bus id with GPU support off");
    return gdr_unit_finish();
}
