/* maint/rxe.d/xstate-size: print the host's XSAVE area size as UML needs it.
 *
 *   xstate-size            "ptrace=N cpuid=M"  (bytes; 0 where a probe is unavailable)
 *
 * ptrace: what PTRACE_GETREGSET(NT_X86_XSTATE) transfers for a stopped child, i.e. the
 * length PTRACE_SETREGSET insists on and the size the UML kernel probes at boot
 * (patches/0003-um-host-xstate-size.patch).  cpuid: leaf 0xD subleaf 0 EBX, the XSAVE size
 * of the features enabled in XCR0; the two agree on Linux hosts, and maint/rxe.d/check
 * tests that they do.  maint/rxe builds the kernel's capacity from the ptrace figure. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <elf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long cpuid_xsave_size(void)
{
    unsigned int eax, ebx, ecx, edx;

    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_XSAVE))
        return 0;
    if (__get_cpuid_max(0, NULL) < 0xd)
        return 0;
    __cpuid_count(0xd, 0, eax, ebx, ecx, edx);
    return ebx;
}

static unsigned long ptrace_xstate_size(void)
{
    static unsigned char area[64 * 1024];   /* larger than any XSAVE area */
    struct iovec iov = { .iov_base = area, .iov_len = sizeof area };
    unsigned long size = 0;
    int status;
    pid_t pid = fork();

    if (pid < 0)
        return 0;
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0)
            raise(SIGSTOP);
        _exit(0);
    }
    if (waitpid(pid, &status, 0) == pid && WIFSTOPPED(status) &&
        ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == 0)
        size = iov.iov_len;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return size;
}

int main(void)
{
    printf("ptrace=%lu cpuid=%lu\n", ptrace_xstate_size(), cpuid_xsave_size());
    return 0;
}
