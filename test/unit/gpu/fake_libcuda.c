/* A test double of the CUDA driver, loaded by dlopen like libcuda.so.1.  Its
 * behaviour is chosen by FAKE_CUDA_MODE: "ok2" (two devices), "nodev", "stub",
 * "initfail".  Lives in test/ only; never installed. */
#include <stdlib.h>
#include <string.h>

static const char *mode(void)
{
    const char *m = getenv("FAKE_CUDA_MODE");
    return m ? m : "ok2";
}

int cuInit(unsigned int flags)
{
    (void) flags;
    if (strcmp(mode(), "stub") == 0)
        return 34;              /* CUDA_ERROR_STUB_LIBRARY */
    if (strcmp(mode(), "initfail") == 0)
        return 100;             /* CUDA_ERROR_NO_DEVICE */
    return 0;
}

int cuDeviceGetCount(int *count)
{
    *count = strcmp(mode(), "nodev") == 0 ? 0 : 2;
    return 0;
}

int cuDriverGetVersion(int *version)
{
    *version = 13000;
    return 0;
}

int cuGetErrorString(int result, const char **str)
{
    *str = result == 100 ? "no CUDA-capable device is detected" : "fake error";
    return 0;
}

int cuDeviceGet(int *device, int ordinal)
{
    *device = ordinal;
    return ordinal < 2 ? 0 : 101;       /* CUDA_ERROR_INVALID_DEVICE */
}

int cuDeviceGetPCIBusId(char *busid, int len, int device)
{
    if (len < 13)
        return 1;
    strcpy(busid, device == 0 ? "0000:11:00.0" : "0000:21:00.0");
    return 0;
}
