/* One access of a window as gdr's device paths take it (the same-node GPU path, the staged
 * protocol): built once from the MPI call's datatypes by gdr_layout.c, so that both read
 * the same description instead of each translating the datatypes its own way. */
#ifndef GDR_ACCESS_H_INCLUDED
#define GDR_ACCESS_H_INCLUDED

#include "gdr_acc_map.h"

/* What a device path cannot take as described (MPIDI_GDR_access_describe's *why). */
enum {
    MPIDI_GDR_ACCESS_OK = 0,
    MPIDI_GDR_ACCESS_OP,        /* no op of gdr's kernel (user-defined) */
    MPIDI_GDR_ACCESS_TYPE,      /* no element type of the kernel, or the op undefined on it */
    MPIDI_GDR_ACCESS_PAIRS,     /* padded value-index pairs in another layout than arrays */
    MPIDI_GDR_ACCESS_SIZES,     /* origin or result of another size than the target's */
    MPIDI_GDR_ACCESS_PIECES     /* the target in more pieces than the caller takes */
};

typedef struct MPIDI_GDR_access {
    int op, type;               /* the accumulate family: gdr_gpu's op and type; else -1 */
    size_t elem;                /* bytes of one element the kernel applies (1: Put, Get) */
    int whole;                  /* padded pairs moved as whole elements, padding included */
    int split;                  /* some piece is not a whole number of elements */
    uint64_t bytes;             /* the target's bytes */
    /* target pieces as offsets from disp x unit (its lower bound included); origin (a
     * Get's destination) and result as pieces of their buffers, one when contiguous;
     * on 0: none read (a Get's is written), rn 0: no result */
    struct iovec *t, *o, *r;
    size_t tn, on, rn;
    struct iovec t_one, o_one, r_one;
} MPIDI_GDR_access_t;

/* Describes a (target pieces up to max_tpieces).  MPI_SUCCESS and *why OK: *d is whole
 * (free it with MPIDI_GDR_access_free); MPI_SUCCESS and another *why: what cannot be
 * taken (*d holds nothing to free); else an MPI error (out of memory, a datatype MPICH
 * could not list). */
int MPIDI_GDR_access_describe(const MPIDI_GDR_rma_args_t * a, size_t max_tpieces,
                              MPIDI_GDR_access_t * d, int *why);
void MPIDI_GDR_access_free(MPIDI_GDR_access_t * d);

#endif /* GDR_ACCESS_H_INCLUDED */
