/* Shared helpers for gdr's MPI test programs (test/mpi).
 *
 * What it gives a test:
 * - error counting with a context string: every mismatch is printed to
 *   stderr as "rank R: <context>: index I: expected E, got G";
 * - gdr_test_finish(): sums the errors over MPI_COMM_WORLD; rank 0 prints
 *   " No Errors" (MPICH's runner convention) or " Found N errors";
 * - windows of the three creation kinds (create, allocate, dynamic) behind one
 *   struct, with gdr_win_disp() turning a byte offset in a target's window into
 *   the target_disp to pass to RMA calls (for dynamic windows: the target's
 *   attached base address, exchanged with MPI_Get_address + MPI_Allgather).
 *
 * Header-only: everything is static inline so that a program that uses only a
 * part of it still compiles with -Wall -Wextra -Werror.
 */
#ifndef GDR_MPI_TEST_H_INCLUDED
#define GDR_MPI_TEST_H_INCLUDED

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Mismatch lines printed per rank before the rest are only counted. */
#define GDR_TEST_MAX_PRINTED 20

typedef struct {
    long errors;       /* mismatches found by this rank */
    long printed;      /* mismatch lines printed by this rank */
    char context[256]; /* what is being checked, e.g. "op=Put sync=fence win=create" */
    struct timespec first_trace;        /* GDR_TEST_TRACE's times count from here */
} gdr_test_state;

static inline gdr_test_state *gdr_test_state_get(void)
{
    static gdr_test_state state;
    return &state;
}

static inline int gdr_test_rank(void)
{
    int rank = -1, initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

/* The rank and size as the launcher numbers them (hydra's PMI_*, else PMIx's), for what
 * a program must choose before MPI_Init (its thread level); 0 and 1 when neither is set. */
static inline void gdr_test_launcher_rank(int *rank, int *size)
{
    const char *r = getenv("PMI_RANK"), *n = getenv("PMI_SIZE");
    if (r == NULL) {
        r = getenv("PMIX_RANK");
        n = getenv("PMIX_SIZE");
    }
    *rank = r != NULL ? atoi(r) : 0;
    *size = n != NULL ? atoi(n) : 1;
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
/* Sets the context of the checks that follow; with GDR_TEST_TRACE set in the environment,
 * also prints it with the seconds since the rank's first trace (where a rank hangs,
 * crashes or spends its time). */
static inline void gdr_test_set_context(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gdr_test_state_get()->context, sizeof(gdr_test_state_get()->context), fmt, ap);
    va_end(ap);
    if (getenv("GDR_TEST_TRACE") != NULL) {
        int rank = -1, up = 0, down = 0;
        struct timespec now, *first = &gdr_test_state_get()->first_trace;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (first->tv_sec == 0 && first->tv_nsec == 0)
            *first = now;
        MPI_Initialized(&up);
        MPI_Finalized(&down);
        if (up && !down)
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr, "trace: rank %d: %8.3f s: %s\n", rank,
                (double) (now.tv_sec - first->tv_sec) + (now.tv_nsec - first->tv_nsec) * 1e-9,
                gdr_test_state_get()->context);
        fflush(stderr);
    }
}

static inline const char *gdr_test_context(void)
{
    return gdr_test_state_get()->context;
}

/* Records one error and prints "rank R: <context>: <message>" on one line of
 * stderr (the first GDR_TEST_MAX_PRINTED per rank). */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static inline void gdr_test_fail(const char *fmt, ...)
{
    gdr_test_state *st = gdr_test_state_get();
    st->errors++;
    if (st->printed < GDR_TEST_MAX_PRINTED) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        for (char *c = msg; *c; c++)
            if (*c == '\n')
                *c = ' ';       /* e.g. MPICH's error stack: one line per mismatch */
        fprintf(stderr, "rank %d: %s: %s\n", gdr_test_rank(), st->context, msg);
        fflush(stderr);
    } else if (st->printed == GDR_TEST_MAX_PRINTED) {
        fprintf(stderr, "rank %d: further mismatches are counted, not printed\n",
                gdr_test_rank());
        fflush(stderr);
    }
    st->printed++;
}

/* Each check returns 1 when the values agree, else records an error and returns 0.
 * what names the buffer ("window", "result", ...), idx the element index. */
static inline int gdr_check_long(const char *what, long idx, long long expected, long long got)
{
    if (expected == got)
        return 1;
    gdr_test_fail("%s[%ld]: expected %lld, got %lld", what, idx, expected, got);
    return 0;
}

static inline int gdr_check_double(const char *what, long idx, double expected, double got)
{
    if (expected == got)
        return 1;
    gdr_test_fail("%s[%ld]: expected %.17g, got %.17g", what, idx, expected, got);
    return 0;
}

/* Checks that an MPI call returned MPI_SUCCESS. */
static inline int gdr_check_mpi(const char *call, int rc)
{
    if (rc == MPI_SUCCESS)
        return 1;
    char str[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, str, &len);
    gdr_test_fail("%s returned an error: %s", call, str);
    return 0;
}

/* Checks that an MPI call failed with error class want (what names the case). */
static inline int gdr_check_class(const char *what, int rc, int want)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (cls == want)
        return 1;
    gdr_test_fail("%s: error class %d, expected %d", what, cls, want);
    return 0;
}

/* gdr_check_mpi with the call's text as its name */
#define GDR_CHECK_MPI(call_) gdr_check_mpi(#call_, (call_))

static inline long gdr_test_errors(void)
{
    return gdr_test_state_get()->errors;
}

/* Collective over MPI_COMM_WORLD: sums every rank's errors, rank 0 prints the
 * verdict line.  Returns the total (the same on every rank). */
static inline long gdr_test_finish(void)
{
    long mine = gdr_test_errors(), total = 0;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&mine, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %ld errors\n", total);
        fflush(stdout);
    }
    return total;
}

/* Aborts the job with a message: for failures after which checking values
 * makes no sense (a window that could not be created, ...). */
static inline void gdr_test_die(const char *call, int rc)
{
    char str[MPI_MAX_ERROR_STRING];
    int len = 0;
    str[0] = '\0';
    MPI_Error_string(rc, str, &len);
    fprintf(stderr, "rank %d: %s: %s failed: %s\n", gdr_test_rank(), gdr_test_context(), call,
            str);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Whether the run asks that the network paths be asserted through gdr's MPI_T counters
 * (GDR_TEST_EXPECT_NATIVE=1: maint/check-rxe, every rank on its own node). */
static inline int gdr_test_expect_native(void)
{
    const char *e = getenv("GDR_TEST_EXPECT_NATIVE");
    return e != NULL && atoi(e) == 1;
}

/* An MPI_T counter's value in *v: 0, or -1 when the library has no counter of that name. */
static inline int gdr_pvar_read(MPI_T_pvar_session session, const char *name,
                                unsigned long long *v)
{
    int idx, count;
    MPI_T_pvar_handle h;
    *v = 0;
    if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS
        && MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_LEVEL, &idx) != MPI_SUCCESS)
        return -1;
    MPI_T_pvar_handle_alloc(session, idx, NULL, &h, &count);
    MPI_T_pvar_read(session, h, v);
    MPI_T_pvar_handle_free(session, &h);
    return 0;
}

/* An MPI_T counter's value; the test fails (and reads 0) when the library has none of that
 * name. */
static inline unsigned long long gdr_pvar_value(MPI_T_pvar_session session, const char *name)
{
    unsigned long long v;
    if (gdr_pvar_read(session, name, &v) != 0)
        gdr_test_fail("MPI_T has no performance variable %s", name);
    return v;
}

/* The groups of this rank's left and right neighbours in MPI_COMM_WORLD (a ring), for
 * PSCW epochs; gdr_ring_groups_free frees them. */
static inline void gdr_ring_groups(MPI_Group *left, MPI_Group *right)
{
    int rank, size;
    MPI_Group world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int l = (rank + size - 1) % size, r = (rank + 1) % size;
    MPI_Group_incl(world, 1, &l, left);
    MPI_Group_incl(world, 1, &r, right);
    MPI_Group_free(&world);
}

static inline void gdr_ring_groups_free(MPI_Group *left, MPI_Group *right)
{
    MPI_Group_free(left);
    MPI_Group_free(right);
}

/* ---- windows -------------------------------------------------------------- */

typedef enum {
    GDR_WIN_CREATE,   /* MPI_Win_create over malloc'd memory */
    GDR_WIN_ALLOCATE, /* MPI_Win_allocate */
    GDR_WIN_DYNAMIC,  /* MPI_Win_create_dynamic + MPI_Win_attach of malloc'd memory */
    GDR_WIN_NKINDS
} gdr_win_kind;

static inline const char *gdr_win_kind_name(gdr_win_kind kind)
{
    switch (kind) {
    case GDR_WIN_CREATE:
        return "create";
    case GDR_WIN_ALLOCATE:
        return "allocate";
    case GDR_WIN_DYNAMIC:
        return "dynamic";
    default:
        return "?";
    }
}

typedef struct {
    MPI_Win win;
    gdr_win_kind kind;
    MPI_Comm comm;
    void *base;       /* this rank's window memory */
    MPI_Aint bytes;   /* its size */
    int disp_unit;    /* what target_disp is scaled by (1 for dynamic windows) */
    int elem_unit;    /* disp_unit asked for: gdr_win_disp() takes byte offsets
                       * that are multiples of it */
    MPI_Aint *addrs;  /* dynamic only: every rank's attached base address */
    void *malloc_mem; /* memory this struct owns (create, dynamic), else NULL */
} gdr_win;

/* Creates a window of `bytes` bytes per rank over comm.  disp_unit applies to
 * create and allocate windows; dynamic windows always use 1 (MPI-3.1 11.2.4),
 * gdr_win_disp() hides the difference.  Memory starts zeroed.  Aborts on error. */
static inline void gdr_win_open(gdr_win *w, gdr_win_kind kind, MPI_Aint bytes, int disp_unit,
                                MPI_Comm comm)
{
    int rc, size;
    memset(w, 0, sizeof(*w));
    w->kind = kind;
    w->comm = comm;
    w->bytes = bytes;
    w->elem_unit = disp_unit;
    w->win = MPI_WIN_NULL;
    MPI_Comm_size(comm, &size);

    switch (kind) {
    case GDR_WIN_CREATE:
        w->malloc_mem = calloc(1, (size_t) bytes);
        if (!w->malloc_mem)
            gdr_test_die("calloc", MPI_ERR_NO_MEM);
        w->base = w->malloc_mem;
        w->disp_unit = disp_unit;
        rc = MPI_Win_create(w->base, bytes, disp_unit, MPI_INFO_NULL, comm, &w->win);
        if (rc != MPI_SUCCESS)
            gdr_test_die("MPI_Win_create", rc);
        break;
    case GDR_WIN_ALLOCATE:
        w->disp_unit = disp_unit;
        rc = MPI_Win_allocate(bytes, disp_unit, MPI_INFO_NULL, comm, &w->base, &w->win);
        if (rc != MPI_SUCCESS)
            gdr_test_die("MPI_Win_allocate", rc);
        memset(w->base, 0, (size_t) bytes);
        break;
    case GDR_WIN_DYNAMIC:{
            MPI_Aint mine;
            w->disp_unit = 1;
            w->malloc_mem = calloc(1, (size_t) bytes);
            w->addrs = calloc((size_t) size, sizeof(MPI_Aint));
            if (!w->malloc_mem || !w->addrs)
                gdr_test_die("calloc", MPI_ERR_NO_MEM);
            w->base = w->malloc_mem;
            rc = MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &w->win);
            if (rc != MPI_SUCCESS)
                gdr_test_die("MPI_Win_create_dynamic", rc);
            rc = MPI_Win_attach(w->win, w->base, bytes);
            if (rc != MPI_SUCCESS)
                gdr_test_die("MPI_Win_attach", rc);
            rc = MPI_Get_address(w->base, &mine);
            if (rc != MPI_SUCCESS)
                gdr_test_die("MPI_Get_address", rc);
            rc = MPI_Allgather(&mine, 1, MPI_AINT, w->addrs, 1, MPI_AINT, comm);
            if (rc != MPI_SUCCESS)
                gdr_test_die("MPI_Allgather", rc);
            break;
        }
    default:
        gdr_test_die("gdr_win_open (unknown kind)", MPI_ERR_ARG);
    }
    /* Every rank's memory is attached/initialised before anyone targets it. */
    MPI_Barrier(comm);
}

/* The target_disp that addresses byte `offset` of `rank`'s window. */
static inline MPI_Aint gdr_win_disp(const gdr_win *w, int rank, MPI_Aint offset)
{
    if (w->kind == GDR_WIN_DYNAMIC)
        return MPI_Aint_add(w->addrs[rank], offset);
    return offset / w->disp_unit;
}

/* Frees the window (collective) and the memory it owns. */
static inline void gdr_win_close(gdr_win *w)
{
    int rc;
    if (w->kind == GDR_WIN_DYNAMIC) {
        /* Nobody may still target this rank's memory once it is detached. */
        MPI_Barrier(w->comm);
        rc = MPI_Win_detach(w->win, w->base);
        if (rc != MPI_SUCCESS)
            gdr_test_die("MPI_Win_detach", rc);
    }
    rc = MPI_Win_free(&w->win);
    if (rc != MPI_SUCCESS)
        gdr_test_die("MPI_Win_free", rc);
    free(w->malloc_mem);
    free(w->addrs);
    memset(w, 0, sizeof(*w));
    w->win = MPI_WIN_NULL;
}

#endif /* GDR_MPI_TEST_H_INCLUDED */
