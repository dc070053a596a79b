/* Running unit tests on the simulated GPU (test/gpusim) in each of its modes.  A mode is
 * a property of the process (as a driver's state is), so each runs in a child forked
 * before anything touched CUDA; the child prints its checks and hands its counts back. */
#ifndef GPUSIM_MODES_H
#define GPUSIM_MODES_H

#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gdr_unit.h"

static const char *const gpusim_mode_names[] = { "strict", "host-visible" };

/* Runs body(lib, mode) in a child per mode, with GDR_GPUSIM_MODE set; the children's
 * checks count as this process's.  A child that dies counts as one failed check. */
static inline void gpusim_run_modes(const char *lib, void (*body)(const char *lib,
                                                                   const char *mode))
{
    for (int m = 0; m < 2; m++) {
        int fds[2], counts[2] = { 0, 0 }, status;
        const char *mode = gpusim_mode_names[m];
        if (pipe(fds) != 0) {
            GDR_CHECK(0, "pipe for the %s child", mode);
            continue;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            gdr_unit_passed = gdr_unit_failed = 0;     /* the parent counts its own */
            setenv("GDR_GPUSIM_MODE", mode, 1);
            printf("# simulated GPU (test/gpusim), %s mode\n", mode);
            body(lib, mode);
            counts[0] = gdr_unit_passed;
            counts[1] = gdr_unit_failed;
            fflush(stdout);
            if (write(fds[1], counts, sizeof(counts)) != (ssize_t) sizeof(counts))
                _exit(2);
            exit(0);            /* exit, not _exit: the simulator's unload runs */
        }
        close(fds[1]);
        ssize_t got = read(fds[0], counts, sizeof(counts));
        close(fds[0]);
        waitpid(pid, &status, 0);
        gdr_unit_passed += got == (ssize_t) sizeof(counts) ? counts[0] : 0;
        gdr_unit_failed += got == (ssize_t) sizeof(counts) ? counts[1] : 0;
        GDR_CHECK(got == (ssize_t) sizeof(counts) && WIFEXITED(status)
                  && WEXITSTATUS(status) == 0, "%s mode: the test process ended normally"
                  " (status 0x%x)", mode, status);
    }
}

/* Runs fn(arg) in a forked child; returns its wait status.  The child resets SIGSEGV to
 * the default action first, so that a sanitizer's handler does not turn a fault into an
 * exit code. */
static inline int gpusim_run_child(void (*fn)(void *arg), void *arg)
{
    int status = -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_DFL;
        sigaction(SIGSEGV, &sa, NULL);
        fn(arg);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    return status;
}

#endif /* GPUSIM_MODES_H */
