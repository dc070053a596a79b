/* Minimal unit-test harness: each check prints one line; gdr_unit_finish() prints
 * "N passed, N failed" and returns the process exit status. */
#ifndef GDR_UNIT_H
#define GDR_UNIT_H

#include <stdio.h>

static int gdr_unit_passed, gdr_unit_failed;

#define GDR_CHECK(cond, ...)                                                      \
    do {                                                                          \
        if (cond) {                                                               \
            gdr_unit_passed++;                                                    \
            printf("ok   ");                                                      \
        } else {                                                                  \
            gdr_unit_failed++;                                                    \
            printf("FAIL %s:%d (%s) ", __FILE__, __LINE__, #cond);                \
        }                                                                         \
        printf(__VA_ARGS__);                                                      \
        printf("\n");                                                             \
    } while (0)

static inline int gdr_unit_finish(void)
{
    printf("%d passed, %d failed\n", gdr_unit_passed, gdr_unit_failed);
    return gdr_unit_failed == 0 ? 0 : 1;
}

#endif /* GDR_UNIT_H */
