/* main() for a fuzz target built without libFuzzer: runs the target's seed corpus
 * (test/fuzz/corpus/NAME) and its saved crashes (test/fuzz/regressions/NAME), NAME being
 * the program's name without "fuzz_", plus any files or folders given as arguments.
 * Each input is one check ("N passed, N failed" like the unit tests): an input that
 * breaks an invariant aborts the program, named on stderr first. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "gdr_unit.h"
#include "gdr_fuzz.h"

#ifndef GDR_FUZZ_DIR
#error "GDR_FUZZ_DIR: the source tree's test/fuzz"
#endif

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (bigger == NULL)
                free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    if (buf == NULL)
        return -1;
    fprintf(stderr, "fuzz replay: %s\n", path);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    GDR_CHECK(1, "%zu bytes of %s kept every invariant", n, path);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Runs every regular file under path (a file or a folder); -1 when path is missing. */
static long run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode))
        return run_file(path) == 0 ? 1 : -1;
    struct dirent **ents;
    int n = scandir(path, &ents, NULL, by_name);
    if (n < 0)
        return -1;
    long ran = 0;
    for (int i = 0; i < n; i++) {
        char file[4096];
        if (ents[i]->d_name[0] != '.' && ran >= 0) {
            snprintf(file, sizeof(file), "%s/%s", path, ents[i]->d_name);
            if (stat(file, &st) == 0 && S_ISREG(st.st_mode))
                ran = run_file(file) == 0 ? ran + 1 : -1;
        }
        free(ents[i]);
    }
    free(ents);
    return ran;
}

int main(int argc, char **argv)
{
    const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    const char *name = strncmp(prog, "fuzz_", 5) == 0 ? prog + 5 : prog;
    char dir[4096];

    snprintf(dir, sizeof(dir), "%s/corpus/%s", GDR_FUZZ_DIR, name);
    long n = run_path(dir);
    GDR_CHECK(n > 0, "%s: the seed corpus %s has inputs (%ld)", prog, dir, n);
    snprintf(dir, sizeof(dir), "%s/regressions/%s", GDR_FUZZ_DIR, name);
    run_path(dir);              /* none yet is fine */
    for (int i = 1; i < argc; i++) {
        n = run_path(argv[i]);
        GDR_CHECK(n >= 0, "%s: %s is readable", prog, argv[i]);
    }
    return gdr_unit_finish();
}
