/* The driver probe: any missing piece means "GPU support off" with a reason,
 * never a failure; a working driver is used.  Driven by a fake libcuda. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>
#include <string.h>
#include "gdr_unit.h"
#include "gpu/gdr_gpu_driver.h"

static void expect_off(const char *soname, const char *mode, const char *why_has)
{
    gdr_gpu_driver_t drv;
    if (mode)
        setenv("FAKE_CUDA_MODE", mode, 1);
    int on = gdr_gpu_driver_probe(&drv, soname);
    GDR_CHECK(on == 0 && drv.enabled == 0 && drv.device_count == 0,
              "probe %s [%s]: GPU support off", soname, mode ? mode : "-");
    GDR_CHECK(strstr(drv.why_off, why_has) != NULL, "probe %s [%s]: reason mentions '%s' (\"%s\")",
              soname, mode ? mode : "-", why_has, drv.why_off);
    GDR_CHECK(drv.handle == NULL, "probe %s [%s]: library unloaded when off", soname,
              mode ? mode : "-");
    gdr_gpu_driver_release(&drv);
}

int main(int argc, char **argv)
{
    const char *fake = argc > 1 ? argv[1] : "./libfakecuda.so";
    gdr_gpu_driver_t drv;

    expect_off("libgdr-no-such-driver.so.1", NULL, "not found");
    expect_off(fake, "stub", "stub");
    expect_off(fake, "nodev", "no device");
    expect_off(fake, "initfail", "no CUDA-capable device");
    expect_off("libc.so.6", NULL, "lacks cuInit");

    setenv("FAKE_CUDA_MODE", "ok2", 1);
    GDR_CHECK(gdr_gpu_driver_probe(&drv, fake) == 1, "probe fake [ok2]: GPU support on");
    GDR_CHECK(drv.device_count == 2 && drv.driver_version == 13000,
              "probe fake [ok2]: 2 devices, driver 13000 (got %d, %d)", drv.device_count,
              drv.driver_version);
    char busid[32];
    GDR_CHECK(gdr_gpu_driver_pci_busid(&drv, 1, busid, sizeof(busid)) == 0
              && strcmp(busid, "0000:21:00.0") == 0, "device 1's PCI bus id (%s)", busid);
    GDR_CHECK(gdr_gpu_driver_pci_busid(&drv, 5, busid, sizeof(busid)) == -1,
              "no bus id for a device that does not exist");
    gdr_gpu_driver_release(&drv);
    GDR_CHECK(drv.handle == NULL && drv.enabled == 0, "release clears the driver");
    GDR_CHECK(gdr_gpu_driver_pci_busid(&drv, 0, busid, sizeof(busid)) == -1,
              "no bus id with GPU support off");
    return gdr_unit_finish();
}
