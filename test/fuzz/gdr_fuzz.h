/* gdr's fuzz targets (test/fuzz/README.md): each file defines LLVMFuzzerTestOneInput over
 * one decoder of bytes that another rank sends.  Built two ways: with clang's libFuzzer
 * (configure --enable-fuzzing, maint/fuzz), and with fuzz_replay.c as main, which runs the
 * seed corpus and every saved regression input through the target in every unit run.
 * A broken invariant aborts: libFuzzer saves the input, the replay run fails. */
#ifndef GDR_FUZZ_H
#define GDR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_REQUIRE(cond, ...)                                                       \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "fuzz invariant broken at %s:%d (%s): ", __FILE__, __LINE__, \
                    #cond);                                                           \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            abort();                                                                  \
        }                                                                             \
    } while (0)

/* A copy of the input in a buffer of exactly its size, so that ASan sees any read past
 * it (libFuzzer's own buffer is exact too; the replay's may not be). */
static inline uint8_t *fuzz_exact_copy(const uint8_t *data, size_t size)
{
    uint8_t *p = malloc(size > 0 ? size : 1);
    FUZZ_REQUIRE(p != NULL, "out of memory for a %zu-byte input", size);
    for (size_t i = 0; i < size; i++)
        p[i] = data[i];
    return p;
}

/* Takes n little-endian bytes from the front of the input (zeros once it is used up). */
static inline uint64_t fuzz_take(const uint8_t **data, size_t *size, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        if (*size > 0) {
            v |= (uint64_t) **data << (8 * i);
            (*data)++;
            (*size)--;
        }
    return v;
}

#endif /* GDR_FUZZ_H */
