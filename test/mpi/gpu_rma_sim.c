/* One-sided communication on GPU windows between nodes, run on the simulated GPU
 * (test/gpusim) or a real one: device memory comes from the CUDA driver that gdr loads
 * (MPIR_CVAR_CH4_GDR_CUDA_DRIVER; default libcuda.so.1), reached here the same way.
 *
 * Every rank exposes a window in device memory (MPI_Win_create over cuMemAlloc, a
 * dynamic window with the device buffer attached, or MPI_Win_allocate with
 * mpi_memory_alloc_kinds=cuda:device) and its right neighbour works on it:
 *   window {create, dynamic, allocate} x origin {host, device} x op {Put, Get, Rput,
 *   Rget, Accumulate SUM, Get_accumulate SUM} x sync {fence, PSCW, lock, lock_all +
 *   flush, lock_all + flush_local (then flush)} x origin datatype {contiguous, vector,
 *   indexed}
 * every value read back through cuMemcpy: whole with GDR_TEST_FULL=1 (check-rxe --full),
 * by default the create/dynamic x Put/Get/Rput/Rget x contiguous/vector cells and one in
 * five of the others (cell_runs).  Then, on a device window: Accumulate (SUM of
 * doubles), Fetch_and_op (SUM of int64), Compare_and_swap, Fetch_and_ops from host and
 * device operands in turn (call order holds across paths), and an origin buffer freed
 * and allocated again at the same address between epochs (the new data must land, not a
 * stale registration's), target windows freed and made again over reallocated device
 * memory (the new window's data must land in the new memory), and a window from
 * MPI_Win_allocate in device memory
 * (mpi_memory_alloc_kinds=cuda:device).  With GDR_TEST_EXPECT_NATIVE=1 (maint/check-rxe: one rank per
 * node, GPUDirect peermem) the MPI_T counters must show that the contiguous device
 * Put/Get went over RDMA.  With GDR_TEST_EXPECT_STAGED=1 (the staged protocol on,
 * MPIR_CVAR_CH4_GDR_STAGED) nothing on a device window may reach MPICH's active messages
 * (the gdr_rma_*_am counters stay put) and the gdr_rma_*_staged counters move: run in
 * the simulator's strict mode, a host access to device memory would crash the job.
 * With GDR_TEST_EXPECT_LOCAL=1 (every rank on one node) every Put/Get/Rput/Rget on the
 * created and the dynamic window must have gone as gdr's same-node GPU copies (MPI_T).
 * GDR_TEST_SAME_NODE_PUTGET=1 asks for the same and runs only what that path carries:
 * the created and dynamic windows' cells, the reallocated origin and target, and a
 * dynamic window's region detached, freed and attached again over new device memory
 * (in strict mode, nothing of them may touch device memory from the host).
 * With GDR_TEST_DEVICE_BY_RANK (GDR_GPUSIM_DEVICES=2) the node's ranks take its GPUs in
 * turn: same-node windows on the other GPU are reached through its peer mapping, or as
 * MPIDIG's messages where the GPUs have no peer access (GDR_GPUSIM_PEER_ACCESS=0).
 * Last (but with GDR_TEST_SAME_NODE_PUTGET), vectors of 96 KiB of payload on device buffers,
 * larger than the device scratch through which gdr packs a whole active message, and a
 * target vector of 1536 pieces, which the staged protocol sends as 3 requests.
 * Without a GPU or driver: prints why and fails. */

#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

enum { N = 512 };                       /* doubles per window */

/* 1 if p is device memory (CU_POINTER_ATTRIBUTE_MEMORY_TYPE is CU_MEMORYTYPE_DEVICE) */
static int is_device_memory(const void *p)
{
    unsigned attr = 2, type = 0;        /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */
    void *data = &type;
    return cu.ptr_attrs(1, &attr, &data, (uint64_t) (uintptr_t) p) == 0 && type == 2;
}

/* ---- MPI_T counters -------------------------------------------------------------------- */
static MPI_T_pvar_session session;

static unsigned long long pvar(const char *name)
{
    unsigned long long v;
    (void) gdr_pvar_read(session, name, &v);
    return v;
}

/* ---- the matrix ------------------------------------------------------------------------ */
typedef enum { OP_PUT, OP_GET, OP_RPUT, OP_RGET, OP_ACC, OP_GACC, OP_N } op_t;
typedef enum { SYNC_FENCE, SYNC_PSCW, SYNC_LOCK, SYNC_FLUSH, SYNC_FLUSH_LOCAL, SYNC_N } sync_t;
typedef enum { WIN_CREATE, WIN_DYNAMIC, WIN_ALLOCATE, WIN_N } win_kind_t;
typedef enum { TYPE_CONTIG, TYPE_VECTOR, TYPE_INDEXED, TYPE_N } otype_t;
static const char *op_names[] = { "Put", "Get", "Rput", "Rget", "Accumulate", "Get_accumulate" };
static const char *win_names[] = { "create", "dynamic", "allocate" };
static const char *type_names[] = { "contiguous", "vector", "indexed" };
static const char *sync_names[] = { "fence", "pscw", "lock", "lock_all+flush",
    "lock_all+flush_local"
};

typedef struct {
    MPI_Win win;
    void *base;                         /* this rank's device window memory */
    MPI_Aint *disp0;                    /* per rank: target_disp of its window's start */
    int dynamic, allocated;
} gwin_t;

static void gwin_open(gwin_t *g, win_kind_t kind, int size)
{
    g->dynamic = kind == WIN_DYNAMIC;
    g->allocated = kind == WIN_ALLOCATE;
    g->disp0 = calloc(size, sizeof(MPI_Aint));
    if (g->allocated) {         /* device memory by MPI 4.1's memory-allocation kinds */
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_memory_alloc_kinds", "cuda:device");
        if (!gdr_check_mpi("MPI_Win_allocate", MPI_Win_allocate(N * sizeof(double),
                                                                 sizeof(double), info,
                                                                 MPI_COMM_WORLD, &g->base,
                                                                 &g->win)))
            gdr_test_die("MPI_Win_allocate", MPI_ERR_OTHER);
        MPI_Info_free(&info);
        return;
    }
    g->base = dev_alloc(N * sizeof(double));
    if (g->dynamic) {
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &g->win);
        gdr_check_mpi("MPI_Win_attach", MPI_Win_attach(g->win, g->base, N * sizeof(double)));
        MPI_Aint mine;
        MPI_Get_address(g->base, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, g->disp0, 1, MPI_AINT, MPI_COMM_WORLD);
    } else {
        gdr_check_mpi("MPI_Win_create", MPI_Win_create(g->base, N * sizeof(double),
                                                       sizeof(double), MPI_INFO_NULL,
                                                       MPI_COMM_WORLD, &g->win));
    }
}

static void gwin_close(gwin_t *g)
{
    if (g->dynamic)
        MPI_Win_detach(g->win, g->base);
    MPI_Win_free(&g->win);
    if (!g->allocated)
        dev_free(g->base);
    free(g->disp0);
}

/* target_disp of element i at rank r */
static MPI_Aint at(const gwin_t *g, int r, int i)
{
    return g->dynamic ? g->disp0[r] + (MPI_Aint) (i * sizeof(double)) : i;
}

static void epoch_open(const gwin_t *g, sync_t s, MPI_Group left, MPI_Group right)
{
    switch (s) {
        case SYNC_FENCE:
            MPI_Win_fence(0, g->win);
            break;
        case SYNC_PSCW:
            MPI_Win_post(left, 0, g->win);
            MPI_Win_start(right, 0, g->win);
            break;
        case SYNC_LOCK:
            break;      /* per target, in epoch_target */
        default:
            MPI_Win_lock_all(0, g->win);
    }
}

static void epoch_close(const gwin_t *g, sync_t s, int target)
{
    switch (s) {
        case SYNC_FENCE:
            MPI_Win_fence(0, g->win);
            break;
        case SYNC_PSCW:
            MPI_Win_complete(g->win);
            MPI_Win_wait(g->win);
            break;
        case SYNC_LOCK:
            MPI_Win_unlock(target, g->win);
            break;
        case SYNC_FLUSH:
            MPI_Win_flush(target, g->win);
            MPI_Win_unlock_all(g->win);
            break;
        default:
            /* flush_local completes the origin side; the value check needs the target's */
            MPI_Win_flush_local(target, g->win);
            MPI_Win_flush(target, g->win);
            MPI_Win_unlock_all(g->win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The origin's layout: where its k-th double lies in the buffer (count of them), and the
 * datatype that describes it: contiguous, every other double (vector), or blocks of 1, 2
 * and 3 doubles with a gap of one after each (indexed). */
static MPI_Datatype origin_layout(otype_t t, int count, int *pos)
{
    MPI_Datatype dt = MPI_DOUBLE;
    if (t == TYPE_CONTIG) {
        for (int k = 0; k < count; k++)
            pos[k] = k;
    } else if (t == TYPE_VECTOR) {
        for (int k = 0; k < count; k++)
            pos[k] = 2 * k;
        MPI_Type_vector(count, 1, 2, MPI_DOUBLE, &dt);
    } else {
        int blen[N], bdisp[N], nb = 0, at_pos = 0;
        for (int k = 0; k < count; nb++) {
            blen[nb] = 1 + nb % 3 < count - k ? 1 + nb % 3 : count - k;
            bdisp[nb] = at_pos;
            for (int j = 0; j < blen[nb]; j++)
                pos[k++] = at_pos + j;
            at_pos += blen[nb] + 1;
        }
        MPI_Type_indexed(nb, blen, bdisp, MPI_DOUBLE, &dt);
    }
    if (t != TYPE_CONTIG)
        MPI_Type_commit(&dt);
    return dt;
}

/* One cell: rank r works on r+1's window with op; every value checked. */
static void run_cell(gwin_t *g, int rank, int size, op_t op, sync_t s, int dev_origin,
                     otype_t type, MPI_Group left, MPI_Group right)
{
    int right_rank = (rank + 1) % size, left_rank = (rank + size - 1) % size;
    int writes = op == OP_PUT || op == OP_RPUT || op == OP_ACC || op == OP_GACC;
    int fetches = op == OP_GET || op == OP_RGET || op == OP_GACC;
    int count = type == TYPE_CONTIG ? N : N / 2, pos[N];
    double *host = malloc(N * sizeof(double)), *expect = malloc(N * sizeof(double));
    double *obuf = dev_origin ? dev_alloc(N * sizeof(double)) : malloc(N * sizeof(double));
    double *rbuf = op != OP_GACC ? NULL
        : dev_origin ? dev_alloc(N * sizeof(double)) : malloc(N * sizeof(double));
    MPI_Datatype otype = origin_layout(type, count, pos);
    /* window: this rank's pattern; origin (and result): different ones */
    for (int i = 0; i < N; i++)
        host[i] = rank * 10000.0 + i;
    dev_copy(g->base, host, N * sizeof(double));
    for (int i = 0; i < N; i++)
        host[i] = -(rank * 10000.0 + i) - 0.5;
    dev_copy(obuf, host, N * sizeof(double));
    if (rbuf != NULL) {
        for (int i = 0; i < N; i++)
            host[i] = 7.25;
        dev_copy(rbuf, host, N * sizeof(double));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    epoch_open(g, s, left, right);
    if (s == SYNC_LOCK)
        MPI_Win_lock(MPI_LOCK_SHARED, right_rank, 0, g->win);
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Aint d = at(g, right_rank, 0);
    /* request-based operations belong to passive-target epochs: Put/Get under fence, PSCW */
    int with_req = (op == OP_RPUT || op == OP_RGET) && s != SYNC_FENCE && s != SYNC_PSCW;
    int ocount = type == TYPE_CONTIG ? count : 1, rc;
    if (op == OP_ACC)
        rc = MPI_Accumulate(obuf, ocount, otype, right_rank, d, count, MPI_DOUBLE, MPI_SUM,
                            g->win);
    else if (op == OP_GACC)     /* the result laid out as the origin is */
        rc = MPI_Get_accumulate(obuf, ocount, otype, rbuf, ocount, otype, right_rank, d, count,
                                MPI_DOUBLE, MPI_SUM, g->win);
    else if (op == OP_PUT || op == OP_RPUT)
        rc = with_req ? MPI_Rput(obuf, ocount, otype, right_rank, d, count, MPI_DOUBLE, g->win, &req)
            : MPI_Put(obuf, ocount, otype, right_rank, d, count, MPI_DOUBLE, g->win);
    else
        rc = with_req ? MPI_Rget(obuf, ocount, otype, right_rank, d, count, MPI_DOUBLE, g->win, &req)
            : MPI_Get(obuf, ocount, otype, right_rank, d, count, MPI_DOUBLE, g->win);
    gdr_check_mpi(op_names[op], rc);
    if (req != MPI_REQUEST_NULL)
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    epoch_close(g, s, right_rank);

    if (writes) {       /* my window got my left neighbour's origin data */
        dev_copy(host, g->base, N * sizeof(double));
        for (int i = 0; i < N; i++)
            expect[i] = rank * 10000.0 + i;
        for (int k = 0; k < count; k++) {
            double o = -(left_rank * 10000.0 + pos[k]) - 0.5;
            expect[k] = op == OP_ACC || op == OP_GACC ? expect[k] + o : o;
        }
        for (int i = 0; i < N; i++)
            if (!gdr_check_double("window", i, expect[i], host[i]))
                break;
    }
    if (fetches) {      /* my origin (result) buffer got my right neighbour's window */
        dev_copy(host, op == OP_GACC ? rbuf : obuf, N * sizeof(double));
        for (int i = 0; i < N; i++)
            expect[i] = op == OP_GACC ? 7.25 : -(rank * 10000.0 + i) - 0.5;
        for (int k = 0; k < count; k++)
            expect[pos[k]] = right_rank * 10000.0 + k;
        for (int i = 0; i < N; i++)
            if (!gdr_check_double(op == OP_GACC ? "result" : "origin", i, expect[i], host[i]))
                break;
    }
    if (type != TYPE_CONTIG)
        MPI_Type_free(&otype);
    if (dev_origin) {
        dev_free(obuf);
        if (rbuf != NULL)
            dev_free(rbuf);
    } else {
        free(obuf);
        free(rbuf);
    }
    free(host);
    free(expect);
}

/* MPI_T: the operations of every kind that took one path (suffix "am", "staged") */
static unsigned long long path_count(const char *suffix)
{
    static const char *const kinds[] = { "put", "get", "acc", "get_acc", "fop", "cas" };
    char name[64];
    unsigned long long n = 0;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        snprintf(name, sizeof(name), "gdr_rma_%s_%s", kinds[k], suffix);
        n += pvar(name);
    }
    return n;
}

/* MPI_T: Puts and Gets carried out as RDMA in the contiguous device-origin cells, and as
 * same-node GPU copies in the cells of the created window */
static unsigned long long dev_native, create_local;
/* GDR_TEST_SAME_NODE_PUTGET: only what gdr's same-node device path carries */
static int putget_only;

static unsigned long long local_count(void)
{
    return pvar("gdr_rma_put_local") + pvar("gdr_rma_get_local");
}

static unsigned long long create_kernel;       /* of create_local, by the copy kernel */
static unsigned long long dynamic_local;       /* the same in the dynamic window's cells */

/* The cells run: every one with GDR_TEST_FULL=1 (maint/check --full); by default the
 * created and dynamic windows' Put/Get/Rput/Rget with contiguous and vector origins (the
 * MPI_T counts below are theirs), and one cell in five of the rest (allocated windows,
 * indexed origins, Accumulate and Get_accumulate), a different fifth for each sync. */
static int full_matrix;

static int cell_runs(win_kind_t w, int dev, sync_t s, otype_t t, op_t op)
{
    if (putget_only)    /* the same-node copy path: Put/Get of created and dynamic windows */
        return w != WIN_ALLOCATE && t != TYPE_INDEXED && op <= OP_RGET;
    if (full_matrix || (w != WIN_ALLOCATE && t != TYPE_INDEXED && op <= OP_RGET))
        return 1;
    return ((int) w + dev + (int) s + (int) t + (int) op) % 5 == 0;
}

static void matrix(int rank, int size, MPI_Group left, MPI_Group right)
{
    for (int w = 0; w < WIN_N; w++) {
        gwin_t g;
        if (putget_only && w == WIN_ALLOCATE)
            continue;
        gwin_open(&g, (win_kind_t) w, size);
        for (int dev = 0; dev < 2; dev++)
            for (int s = 0; s < SYNC_N; s++)
                for (int t = 0; t < TYPE_N; t++)
                    for (int op = 0; op < OP_N; op++) {
                        if (!cell_runs((win_kind_t) w, dev, (sync_t) s, (otype_t) t, (op_t) op))
                            continue;
                        gdr_test_set_context("win=%s origin=%s op=%s sync=%s type=%s",
                                             win_names[w], dev ? "device" : "host",
                                             op_names[op], sync_names[s], type_names[t]);
                        /* the counts the checks below expect: the first matrix's cells */
                        int counted = w != WIN_ALLOCATE && t != TYPE_INDEXED && op <= OP_RGET;
                        unsigned long long n0 = pvar("gdr_rma_put_native")
                            + pvar("gdr_rma_get_native"), l0 = local_count(),
                            k0 = pvar("gdr_rma_local_kernel_copies");
                        run_cell(&g, rank, size, (op_t) op, (sync_t) s, dev, (otype_t) t, left,
                                 right);
                        if (counted && dev && t == TYPE_CONTIG)
                            dev_native += pvar("gdr_rma_put_native")
                                + pvar("gdr_rma_get_native") - n0;
                        if (counted && w == WIN_CREATE) {
                            create_local += local_count() - l0;
                            create_kernel += pvar("gdr_rma_local_kernel_copies") - k0;
                        }
                        if (counted && w == WIN_DYNAMIC)
                            dynamic_local += local_count() - l0;
                    }
        gwin_close(&g);
    }
}

/* Accumulate, Fetch_and_op and Compare_and_swap on a device window, from host origins. */
static void accumulates(int rank, int size)
{
    gwin_t g;
    gwin_open(&g, 0, size);
    double zero[N] = { 0 }, ones[8], got[N];
    for (int i = 0; i < 8; i++)
        ones[i] = 1.0 + i;
    dev_copy(g.base, zero, sizeof(zero));
    MPI_Barrier(MPI_COMM_WORLD);
    gdr_test_set_context("device window: accumulates");
    MPI_Win_lock_all(0, g.win);
    for (int t = 0; t < size; t++)
        MPI_Accumulate(ones, 8, MPI_DOUBLE, t, 0, 8, MPI_DOUBLE, MPI_SUM, g.win);
    int64_t add = rank + 1, old;
    MPI_Fetch_and_op(&add, &old, MPI_INT64_T, 0, 16, MPI_SUM, g.win);  /* int64 at double 16 */
    MPI_Win_flush_all(g.win);
    MPI_Win_unlock_all(g.win);
    MPI_Barrier(MPI_COMM_WORLD);
    dev_copy(got, g.base, sizeof(got));
    for (int i = 0; i < 8; i++)
        gdr_check_double("Accumulate SUM", i, size * (1.0 + i), got[i]);
    if (rank == 0) {
        int64_t sum;
        memcpy(&sum, &got[16], 8);
        gdr_check_long("Fetch_and_op SUM", 16, (long long) size * (size + 1) / 2, sum);
    }
    /* compare-and-swap: every rank tries 0 -> rank+1 at rank 0; exactly one wins */
    int64_t z = 0;
    dev_copy((char *) g.base + 24 * 8, &z, 8);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, g.win);
    int64_t mine = rank + 1, cmp = 0, prev = -1;
    MPI_Compare_and_swap(&mine, &cmp, &prev, MPI_INT64_T, 0, 24, g.win);
    MPI_Win_unlock_all(g.win);
    int won = prev == 0, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    gdr_check_long("Compare_and_swap winners", 0, 1, winners);

    /* request-based operations of no bytes to another rank's device window complete at
     * once (the staged protocol finishes them inside its start: their requests were read
     * from freed memory, 2026-11-29) */
    gdr_test_set_context("device window: Rput, Rget, Raccumulate of no bytes");
    MPI_Request zreq[3];
    MPI_Win_lock_all(0, g.win);
    int right_rank = (rank + 1) % size;
    GDR_CHECK_MPI(MPI_Rput(ones, 0, MPI_DOUBLE, right_rank, 0, 0, MPI_DOUBLE, g.win, &zreq[0]));
    GDR_CHECK_MPI(MPI_Rget(got, 0, MPI_DOUBLE, right_rank, 0, 0, MPI_DOUBLE, g.win, &zreq[1]));
    GDR_CHECK_MPI(MPI_Raccumulate(ones, 0, MPI_DOUBLE, right_rank, 0, 0, MPI_DOUBLE, MPI_SUM,
                                  g.win, &zreq[2]));
    GDR_CHECK_MPI(MPI_Waitall(3, zreq, MPI_STATUSES_IGNORE));
    MPI_Win_unlock_all(g.win);

    /* Ordering across the ways an accumulate travels: each rank's three Fetch_and_op SUMs
     * on one word of rank 0, the middle one from a device operand (under GPUDirect peermem
     * NIC atomics take the host operands, the staged protocol or MPICH's messages the
     * device one), apply in call order: each fetches the rank's own earlier additions. */
    int64_t *dev_ten = dev_alloc(8), ten = 10, one = 1, hundred = 100, o[3] = { -1, -1, -1 };
    dev_copy(dev_ten, &ten, 8);
    dev_copy((char *) g.base + 32 * 8, &z, 8);
    MPI_Barrier(MPI_COMM_WORLD);
    gdr_test_set_context("device window: Fetch_and_op order across paths (host, device, host)");
    MPI_Win_lock_all(0, g.win);
    MPI_Fetch_and_op(&one, &o[0], MPI_INT64_T, 0, 32, MPI_SUM, g.win);
    MPI_Fetch_and_op(dev_ten, &o[1], MPI_INT64_T, 0, 32, MPI_SUM, g.win);
    MPI_Fetch_and_op(&hundred, &o[2], MPI_INT64_T, 0, 32, MPI_SUM, g.win);
    MPI_Win_unlock_all(g.win);
    gdr_check_long("the device operand's sum fetched the rank's +1", 0, 1, o[1] - o[0] >= 1);
    gdr_check_long("the last sum fetched the rank's +10", 0, 1, o[2] - o[1] >= 10);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int64_t total = 0;
        dev_copy(&total, (char *) g.base + 32 * 8, 8);
        gdr_check_long("the word's total", 32, 111LL * size, total);
    }
    dev_free(dev_ten);
    gwin_close(&g);
}

/* MPI_Win_allocate asked for CUDA device memory (info mpi_memory_alloc_kinds=cuda:device):
 * the base is device memory, the window reports MPI_WIN_FLAVOR_ALLOCATE and that base,
 * and Put, Accumulate and Get from the left neighbour work on it; a zero-byte one too. */
/* Datatypes that are contiguous but start past their buffer (one block of 4 doubles at
 * element 3: a non-zero true lower bound) at both ends: Get, Put and (unless Put/Get only)
 * Accumulate on the right neighbour's device window must use elements 3..6 of each buffer,
 * every other element untouched. */
static void shifted_types(int rank, int size)
{
    enum { SKIP = 3, LEN = 4 };
    int right_rank = (rank + 1) % size, left_rank = (rank + size - 1) % size;
    gdr_test_set_context("a contiguous datatype with a lower bound of %d elements", SKIP);
    MPI_Aint disp = SKIP * (MPI_Aint) sizeof(double);
    MPI_Datatype dt;
    MPI_Type_create_hindexed_block(1, LEN, &disp, MPI_DOUBLE, &dt);
    MPI_Type_commit(&dt);
    gwin_t g;
    gwin_open(&g, WIN_CREATE, size);
    double host[N], got[N];
    double *obuf = dev_alloc(N * sizeof(double));
    for (int i = 0; i < N; i++)
        host[i] = rank * 100.0 + i;
    dev_copy(g.base, host, sizeof(host));
    for (int i = 0; i < N; i++)
        host[i] = -1.0;
    dev_copy(obuf, host, sizeof(host));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, g.win);
    gdr_check_mpi("MPI_Get", MPI_Get(obuf, 1, dt, right_rank, 0, 1, dt, g.win));
    MPI_Win_flush(right_rank, g.win);
    dev_copy(got, obuf, sizeof(got));
    for (int i = 0; i < N; i++)
        if (!gdr_check_double("Get into the shifted origin", i,
                              i >= SKIP && i < SKIP + LEN ? right_rank * 100.0 + i : -1.0,
                              got[i]))
            break;
    MPI_Win_unlock_all(g.win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        host[i] = 1000.0 * rank + i;
    dev_copy(obuf, host, sizeof(host));
    int nops = putget_only ? 1 : 2;
    for (int k = 0; k < nops; k++) {
        MPI_Win_lock_all(0, g.win);
        gdr_check_mpi(k == 0 ? "MPI_Put" : "MPI_Accumulate",
                      k == 0 ? MPI_Put(obuf, 1, dt, right_rank, 0, 1, dt, g.win)
                      : MPI_Accumulate(obuf, 1, dt, right_rank, 0, 1, dt, MPI_SUM, g.win));
        MPI_Win_unlock_all(g.win);
        MPI_Barrier(MPI_COMM_WORLD);
        dev_copy(got, g.base, sizeof(got));
        for (int i = 0; i < N; i++) {
            double want = i >= SKIP && i < SKIP + LEN ? (k + 1) * (1000.0 * left_rank + i)
                : rank * 100.0 + i;
            if (!gdr_check_double(k == 0 ? "window after the Put" : "window after the "
                                  "Accumulate", i, want, got[i]))
                break;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    dev_free(obuf);
    gwin_close(&g);
    MPI_Type_free(&dt);
}

/* Whether MPICH's shared memory does not carry this rank's messages to its right
 * neighbour (another node, or MPIR_CVAR_NOLOCAL): gdr's channel does. */
static int right_elsewhere(void)
{
    int rank, size, len;
    char name[MPI_MAX_PROCESSOR_NAME] = { 0 };
    const char *nolocal = getenv("MPIR_CVAR_NOLOCAL");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    char *all = calloc((size_t) size, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  MPI_COMM_WORLD);
    int elsewhere = (nolocal != NULL && atoi(nolocal) != 0)
        || strcmp(all + (size_t) ((rank + 1) % size) * MPI_MAX_PROCESSOR_NAME, name) != 0;
    free(all);
    return elsewhere;
}

/* Vectors larger than gdr's device scratch (MPIDI_GDR_MSG_SCRATCH, 64 KiB), 96 KiB of
 * payload (W doubles): at the origin every other double, at the target blocks of 8
 * doubles every 16 (1536 pieces: the staged protocol sends them as 3 requests of at most
 * 512), in a device window of 2W.  Put (vector origin), Get (into a vector origin: its
 * gaps keep their bytes), Rput into a vector target, Accumulate vector to vector, Get
 * from a vector target and Get_accumulate from it, on the right neighbour; every value
 * read back.  Where the Put goes as MPICH's active message through
 * gdr's channel (MPIR_CVAR_CH4_GDR_STAGED=0 between nodes), gdr packs its whole payload
 * through the scratch a 64-KiB piece at a time with its copy kernel: the MPI_T counters
 * must show it.  (The Get's reply is unpacked by MPIDIG itself: gdr delivers it whole.) */
static void large_vectors(int rank, int size)
{
    enum { W = 12288, TB = 8 };        /* payload doubles; the target vector's block */
    int right_rank = (rank + 1) % size, left_rank = (rank + size - 1) % size;
    int elsewhere = right_elsewhere();
    gdr_test_set_context("vectors of %d doubles (%d KiB) on device buffers", W, W * 8 / 1024);
    MPI_Datatype vec, tvec;
    MPI_Type_vector(W, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_vector(W / TB, TB, 2 * TB, MPI_DOUBLE, &tvec);
    MPI_Type_commit(&tvec);
    size_t bytes = 2 * (size_t) W * sizeof(double);
    double *host = malloc(bytes), *got = malloc(bytes);
    double *base = dev_alloc(bytes), *obuf = dev_alloc(bytes);
    MPI_Win win;
    gdr_check_mpi("MPI_Win_create", MPI_Win_create(base, (MPI_Aint) bytes, sizeof(double),
                                                   MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    /* MPI_T counters before the operations, and after the Put (step 0) */
    unsigned long long am0 = path_count("am"), k0 = pvar("gdr_am_pack_kernels");
    unsigned long long c0 = pvar("gdr_am_device_copied_bytes"), am1 = 0, k1 = 0, c1 = 0;
    double *rbuf = dev_alloc(bytes);
    unsigned long long staged2 = 0, am2 = 0;
    for (int step = 0; step < 6; step++) {
        if (step == 1) {
            am1 = path_count("am");
            k1 = pvar("gdr_am_pack_kernels");
            c1 = pvar("gdr_am_device_copied_bytes");
        } else if (step == 2) {
            staged2 = path_count("staged");
            am2 = path_count("am");
        }
        static const char *const name[] = { "Put from a vector", "Get into a vector",
            "Rput into a vector", "Accumulate vector to vector", "Get from a vector",
            "Get_accumulate SUM from a vector"
        };
        /* window: rank * 1e6 + i; origin: 1e5 * (rank + 1) + i, the Get's -1 */
        for (int i = 0; i < 2 * W; i++)
            host[i] = rank * 1e6 + i;
        dev_copy(base, host, bytes);
        for (int i = 0; i < 2 * W; i++)
            host[i] = step == 1 ? -1.0 : 1e5 * (rank + 1) + i;
        dev_copy(obuf, host, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        MPI_Request req = MPI_REQUEST_NULL;
        int rc = step == 0 ? MPI_Put(obuf, 1, vec, right_rank, 0, W, MPI_DOUBLE, win)
            : step == 1 ? MPI_Get(obuf, 1, vec, right_rank, 0, W, MPI_DOUBLE, win)
            : step == 2 ? MPI_Rput(obuf, W, MPI_DOUBLE, right_rank, 0, 1, tvec, win, &req)
            : step == 3 ? MPI_Accumulate(obuf, 1, vec, right_rank, 0, 1, tvec, MPI_SUM, win)
            : step == 4 ? MPI_Get(rbuf, W, MPI_DOUBLE, right_rank, 0, 1, tvec, win)
            : MPI_Get_accumulate(obuf, W, MPI_DOUBLE, rbuf, W, MPI_DOUBLE, right_rank, 0, 1,
                                 tvec, MPI_SUM, win);
        gdr_check_mpi(name[step], rc);
        if (req != MPI_REQUEST_NULL)
            gdr_check_mpi("MPI_Wait on the Rput", MPI_Wait(&req, MPI_STATUS_IGNORE));
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        /* the buffer written: the origin by the Get, the result by the Get from a vector
         * (its first W), else this rank's window (by the left neighbour) */
        dev_copy(got, step == 1 ? obuf : step == 4 ? rbuf : base, bytes);
        for (int i = 0; i < 2 * W; i++) {
            double mine = rank * 1e6 + i, from_left = 1e5 * (left_rank + 1);
            int in_t = i % (2 * TB) < TB, k = i / (2 * TB) * TB + i % (2 * TB);  /* tvec's k-th */
            int tv = i / TB * 2 * TB + i % TB;  /* the window index of tvec's i-th */
            double want = step == 0 ? (i < W ? from_left + 2 * i : mine)
                : step == 1 ? (i % 2 == 0 ? right_rank * 1e6 + i / 2 : -1.0)
                : step == 2 ? (in_t ? from_left + k : mine)
                : step == 3 ? (in_t ? mine + from_left + 2 * k : mine)
                : step == 4 ? (i < W ? right_rank * 1e6 + tv : got[i])
                : (in_t ? mine + from_left + k : mine);
            if (!gdr_check_double(name[step], i, want, got[i]))
                break;
        }
        if (step == 5) {        /* and its results: the right neighbour's window before */
            dev_copy(got, rbuf, W * sizeof(double));
            for (int i = 0; i < W; i++) {
                int tv = i / TB * 2 * TB + i % TB;
                if (!gdr_check_double("Get_accumulate's results", i, right_rank * 1e6 + tv,
                                      got[i]))
                    break;
            }
        }
    }
    dev_free(rbuf);
    /* With the staged protocol asked for, the four operations on the 1536-piece target
     * vector are its own (3 requests each), never MPICH's messages (strict mode: those
     * would touch device memory from the host) */
    if (getenv("GDR_TEST_EXPECT_STAGED") != NULL && elsewhere) {
        gdr_check_long("operations on a 1536-piece target vector through the staged protocol",
                       0, 4, (long long) (path_count("staged") - staged2));
        gdr_check_long("of them as MPICH's active messages", 0, 0,
                       (long long) (path_count("am") - am2));
    }
    /* The Put from this rank's vector as an active message through gdr's channel (not
     * MPICH's shared memory: the right neighbour on another node, or MPIR_CVAR_NOLOCAL):
     * its payload packed through the scratch, 64 KiB at a time, by the copy kernel unless
     * it is off or hidden (the left neighbour's Put into this window only adds to them). */
    if (am1 > am0 && elsewhere) {
        gdr_check_long("device bytes gdr copied for the Put's message >= its payload", 0, 1,
                       c1 - c0 >= W * sizeof(double));
        if (gdr_test_pack_kernel(sizeof(double)))
            gdr_check_long("copy-kernel launches for it >= its blocks / 64", 0, 1,
                           k1 - k0 >= W / 64);
    }
    MPI_Win_free(&win);
    dev_free(obuf);
    dev_free(base);
    free(got);
    free(host);
    MPI_Type_free(&tvec);
    MPI_Type_free(&vec);
}

static void allocated_window(int rank, int size)
{
    int right_rank = (rank + 1) % size, left_rank = (rank + size - 1) % size;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_memory_alloc_kinds", "cuda:device");
    gdr_test_set_context("MPI_Win_allocate(mpi_memory_alloc_kinds=cuda:device)");
    double *base = NULL;
    MPI_Win win;
    if (!gdr_check_mpi("MPI_Win_allocate", MPI_Win_allocate(N * sizeof(double), sizeof(double),
                                                             info, MPI_COMM_WORLD, &base, &win)))
        gdr_test_die("MPI_Win_allocate", MPI_ERR_OTHER);
    gdr_check_long("base is device memory", 0, 1, is_device_memory(base));
    int *flavor = NULL, flag = 0;
    void *attr_base = NULL;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    gdr_check_long("MPI_WIN_CREATE_FLAVOR", 0, MPI_WIN_FLAVOR_ALLOCATE, flag ? *flavor : -1);
    MPI_Win_get_attr(win, MPI_WIN_BASE, &attr_base, &flag);
    gdr_check_long("MPI_WIN_BASE is the allocated base", 0, 1, flag && attr_base == base);

    double zero[N] = { 0 }, mine[N / 2], ones[8], got[N];
    for (int i = 0; i < N / 2; i++)
        mine[i] = rank * 1000.0 + i;
    for (int i = 0; i < 8; i++)
        ones[i] = 1.0 + i;
    dev_copy(base, zero, sizeof(zero));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right_rank, 0, win);
    MPI_Put(mine, N / 2, MPI_DOUBLE, right_rank, 0, N / 2, MPI_DOUBLE, win);
    MPI_Accumulate(ones, 8, MPI_DOUBLE, right_rank, N / 2, 8, MPI_DOUBLE, MPI_SUM, win);
    MPI_Accumulate(ones, 8, MPI_DOUBLE, right_rank, N / 2, 8, MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_unlock(right_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    dev_copy(got, base, sizeof(got));
    for (int i = 0; i < N / 2; i++)
        if (!gdr_check_double("Put", i, left_rank * 1000.0 + i, got[i]))
            break;
    for (int i = 0; i < 8; i++)
        gdr_check_double("Accumulate SUM twice", N / 2 + i, 2.0 * (1.0 + i), got[N / 2 + i]);
    double back[N / 2];
    MPI_Win_lock(MPI_LOCK_SHARED, right_rank, 0, win);
    MPI_Get(back, N / 2, MPI_DOUBLE, right_rank, 0, N / 2, MPI_DOUBLE, win);
    MPI_Win_unlock(right_rank, win);
    for (int i = 0; i < N / 2; i++)
        if (!gdr_check_double("Get of what this rank put", i, mine[i], back[i]))
            break;
    gdr_check_mpi("MPI_Win_free", MPI_Win_free(&win));

    gdr_test_set_context("MPI_Win_allocate(0 bytes, mpi_memory_alloc_kinds=cuda:device)");
    if (gdr_check_mpi("MPI_Win_allocate", MPI_Win_allocate(0, 1, info, MPI_COMM_WORLD, &base,
                                                           &win)))
        gdr_check_mpi("MPI_Win_free", MPI_Win_free(&win));
    MPI_Info_free(&info);
}

/* An origin buffer freed and allocated again (the same address, as allocators do):
 * the second epoch must carry the new contents. */
static void reallocated_origin(int rank, int size)
{
    gwin_t g;
    gwin_open(&g, 0, size);
    int right_rank = (rank + 1) % size;
    double v[N], got[N];
    for (int round = 0; round < 2; round++) {
        gdr_test_set_context("origin freed and allocated again, round %d", round);
        double *o = dev_alloc(N * sizeof(double));
        for (int i = 0; i < N; i++)
            v[i] = round * 1000.0 + i + rank;
        dev_copy(o, v, sizeof(v));
        MPI_Win_lock(MPI_LOCK_SHARED, right_rank, 0, g.win);
        MPI_Put(o, N, MPI_DOUBLE, right_rank, 0, N, MPI_DOUBLE, g.win);
        MPI_Win_unlock(right_rank, g.win);
        dev_free(o);
        MPI_Barrier(MPI_COMM_WORLD);
        dev_copy(got, g.base, sizeof(got));
        int left_rank = (rank + size - 1) % size;
        for (int i = 0; i < N; i++)
            if (!gdr_check_double("window", i, round * 1000.0 + i + left_rank, got[i]))
                break;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    gwin_close(&g);
}

/* Target windows freed and made again over device memory freed and allocated again
 * (likely at the same address): each new window's data lands in the new memory, never
 * through a mapping of the old one. */
static void reallocated_target(int rank, int size)
{
    int right_rank = (rank + 1) % size, left_rank = (rank + size - 1) % size;
    double v[N], got[N];
    for (int round = 0; round < 3; round++) {
        gdr_test_set_context("target window freed and made again, round %d", round);
        gwin_t g;
        gwin_open(&g, 0, size);
        for (int i = 0; i < N; i++)
            v[i] = -1.0;
        dev_copy(g.base, v, sizeof(v));
        for (int i = 0; i < N; i++)
            v[i] = round * 100000.0 + rank * 1000.0 + i;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, g.win);
        MPI_Put(v, N, MPI_DOUBLE, right_rank, 0, N, MPI_DOUBLE, g.win);
        MPI_Win_flush(right_rank, g.win);
        MPI_Win_unlock_all(g.win);
        MPI_Barrier(MPI_COMM_WORLD);
        dev_copy(got, g.base, sizeof(got));
        for (int i = 0; i < N; i++)
            if (!gdr_check_double("new window", i, round * 100000.0 + left_rank * 1000.0 + i,
                                  got[i]))
                break;
        gwin_close(&g);
    }
}

/* A dynamic window whose device region is detached, freed, and replaced by new device
 * memory between epochs (at the same address where the allocator gives it back): every
 * epoch's Put must land in the memory attached then, never through a mapping of the old
 * region (same node: mapped per epoch; other nodes: what the origin learned is dropped
 * at the detach). */
static void reattached_region(int rank, int size)
{
    int right_rank = (rank + 1) % size, left_rank = (rank + size - 1) % size;
    double v[N], got[N];
    MPI_Win win;
    MPI_Aint *disp = calloc((size_t) size, sizeof(MPI_Aint));
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (int round = 0; round < 3; round++) {
        gdr_test_set_context("dynamic window, region detached and attached again, round %d",
                             round);
        double *base = dev_alloc(sizeof(v));
        for (int i = 0; i < N; i++)
            v[i] = -1.0;
        dev_copy(base, v, sizeof(v));
        GDR_CHECK_MPI(MPI_Win_attach(win, base, sizeof(v)));
        MPI_Aint mine;
        MPI_Get_address(base, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, disp, 1, MPI_AINT, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++)
            v[i] = round * 100000.0 + rank * 1000.0 + i;
        MPI_Win_lock_all(0, win);
        MPI_Put(v, N, MPI_DOUBLE, right_rank, disp[right_rank], N, MPI_DOUBLE, win);
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        dev_copy(got, base, sizeof(got));
        for (int i = 0; i < N; i++)
            if (!gdr_check_double("attached region", i,
                                  round * 100000.0 + left_rank * 1000.0 + i, got[i]))
                break;
        GDR_CHECK_MPI(MPI_Win_detach(win, base));
        dev_free(base);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    free(disp);
}

int main(int argc, char **argv)
{
    int rank, size;
    gpu_mpi_test_init(&argc, &argv, &session, &rank, &size);
    MPI_Group left, right;
    gdr_ring_groups(&left, &right);

    putget_only = getenv("GDR_TEST_SAME_NODE_PUTGET") != NULL;
    const char *full = getenv("GDR_TEST_FULL");
    full_matrix = full != NULL && strcmp(full, "0") != 0;
    unsigned long long put0 = pvar("gdr_rma_put_native"), get0 = pvar("gdr_rma_get_native");
    unsigned long long am0 = path_count("am"), staged0 = path_count("staged");
    matrix(rank, size, left, right);
    if (getenv("GDR_TEST_EXPECT_NATIVE") != NULL) {
        gdr_test_set_context("MPI_T counters");
        gdr_check_long("device-window Puts over RDMA", 0, 1, pvar("gdr_rma_put_native") > put0);
        gdr_check_long("device-window Gets over RDMA", 0, 1, pvar("gdr_rma_get_native") > get0);
        /* 2 windows x 5 syncs x 4 ops, one operation each */
        gdr_check_long("contiguous device-origin Put/Get over RDMA", 0, 40, (long long) dev_native);
    }
    if (getenv("GDR_TEST_EXPECT_LOCAL") != NULL || putget_only) {
        gdr_test_set_context("MPI_T counters, same-node device path");
        /* 2 origins x 5 syncs x 2 types x 4 ops, one operation each; none where the right
         * neighbour's window is on another GPU without peer access (simulated GPUs) */
        int *gpu_of = calloc((size_t) (unsigned) size, sizeof(int));
        MPI_Allgather(&cuda_device, 1, MPI_INT, gpu_of, 1, MPI_INT, MPI_COMM_WORLD);
        const char *peer = getenv("GDR_GPUSIM_PEER_ACCESS");
        int mapped = gpu_of[(rank + 1) % size] == cuda_device || peer == NULL
            || strcmp(peer, "0") != 0;
        free(gpu_of);
        gdr_check_long("Put/Get/Rput/Rget on the created window as same-node GPU copies", 0,
                       mapped ? 80 : 0, (long long) create_local);
        /* a dynamic window's attached device memory, mapped at the first access of each
         * epoch (its mapping closes when the epoch's operations complete) */
        gdr_check_long("Put/Get/Rput/Rget on the dynamic window as same-node GPU copies", 0,
                       mapped ? 80 : 0, (long long) dynamic_local);
        /* of those, the contiguous ones from device memory (4 KiB: under the default
         * MPIR_CVAR_CH4_GDR_LOCAL_KERNEL_COPY) are one launch of gdr's copy kernel; pageable
         * origins and the vector's 256 runs go to the copy engine, and so does everything
         * where the driver has no such kernel (GDR_GPUSIM_HIDE names it: the values above
         * are then the copy engine's) */
        const char *kc = getenv("MPIR_CVAR_CH4_GDR_LOCAL_KERNEL_COPY");
        int kernel = (kc == NULL || atoi(kc) >= N * 8) && !gdr_test_copy_kernel_hidden();
        gdr_check_long("contiguous device-origin Put/Get/Rput/Rget as one copy-kernel launch",
                       0, mapped && kernel ? 20 : 0, (long long) create_kernel);
    }
    if (!putget_only)
        accumulates(rank, size);
    reallocated_origin(rank, size);
    reallocated_target(rank, size);
    reattached_region(rank, size);
    shifted_types(rank, size);
    if (!putget_only)
        allocated_window(rank, size);
    if (getenv("GDR_TEST_EXPECT_STAGED") != NULL) {
        gdr_test_set_context("MPI_T counters, staged protocol");
        gdr_check_long("operations on device windows sent as MPICH active messages", 0, 0,
                       (long long) (path_count("am") - am0));
        gdr_check_long("operations through the staged protocol", 0, 1,
                       path_count("staged") > staged0);
    }
    if (!putget_only)
        large_vectors(rank, size);     /* after the staged check: any path may carry them */

    gdr_ring_groups_free(&left, &right);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
