/* Little-endian fields of the datagrams and cards ranks exchange before any queue pair
 * exists (gdr_verbs_card, gdr_verbs_conn): byte by byte, so any alignment and any host. */
#ifndef GDR_VERBS_LE_H
#define GDR_VERBS_LE_H

#include <stdint.h>

static inline void gdr_le_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t) v;
    p[1] = (uint8_t) (v >> 8);
}

static inline void gdr_le_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}

static inline uint16_t gdr_le_get16(const uint8_t *p)
{
    return (uint16_t) (p[0] | (p[1] << 8));
}

static inline uint32_t gdr_le_get32(const uint8_t *p)
{
    return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) |
        ((uint32_t) p[3] << 24);
}

#endif /* GDR_VERBS_LE_H */
