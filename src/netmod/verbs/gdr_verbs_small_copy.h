/* Copies of a few bytes (an 8-byte message's payload, a small Put's data) by fixed-size
 * moves, two overlapping words, rather than a call into memcpy: the hot paths' copies. */
#ifndef GDR_VERBS_SMALL_COPY_H
#define GDR_VERBS_SMALL_COPY_H

#include <stddef.h>
#include <string.h>

static inline void gdr_verbs_small_copy(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    if (n >= 8 && n <= 16) {
        memcpy(d, s, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4 && n < 8) {
        memcpy(d, s, 4);
        memcpy(d + n - 4, s + n - 4, 4);
    } else {
        memcpy(d, s, n);
    }
}

#endif /* GDR_VERBS_SMALL_COPY_H */
