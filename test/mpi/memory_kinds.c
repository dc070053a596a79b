/* MPI 4.1 memory-allocation kinds on ch4:gdr (the info key mpi_memory_alloc_kinds).
 *
 * MPICH reports the kinds it supports: always "mpi" and "system", plus "cuda" when GPU
 * support is on (MPIX_Query_cuda_support() == 1: a CUDA build and a usable device),
 * plus every kind a user asked for that it supports.  Checked:
 * - MPI_COMM_WORLD's info: exactly the base kinds;
 * - a window from MPI_Win_allocate on the world reports the same kinds;
 * - MPI_Win_allocate asking first for "cuda:device" without GPU support fails with
 *   MPI_ERR_INFO_VALUE, naming the key (gdr has no device memory to give); asking first
 *   for "system" gives a working host window;
 * - a session asking for "mpi:win_allocate,system,cuda:device,rocm,nosuchkind"
 *   reports the base kinds plus "mpi:win_allocate", plus "cuda:device" only with
 *   GPU support; never "rocm" (not a CUDA build's kind) nor "nosuchkind";
 * - a communicator made from that session's process group (MPI_Comm_create_from_group:
 *   gdr builds it from the world, see gdr_pre.h) reports the session's kinds and
 *   carries a message around the ring, value checked. */
#include "gdr_mpi_test.h"

/* "a,b,c" as a set: 1 if kind is one of the comma-separated items */
static int has_kind(const char *list, const char *kind)
{
    size_t n = strlen(kind);
    for (const char *p = list; p != NULL && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen(p);
        if (len == n && strncmp(p, kind, n) == 0)
            return 1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

static int count_kinds(const char *list)
{
    int n = *list ? 1 : 0;
    for (const char *p = list; *p; p++)
        n += (*p == ',');
    return n;
}

/* the info's mpi_memory_alloc_kinds into out ("" when absent) */
static void kinds_of(MPI_Info info, char *out, int cap)
{
    int flag = 0, len = cap;
    out[0] = '\0';
    MPI_Info_get_string(info, "mpi_memory_alloc_kinds", &len, out, &flag);
    if (!flag)
        out[0] = '\0';
    MPI_Info_free(&info);
}

static void expect_kinds(const char *got, const char *const *want, int nwant)
{
    for (int i = 0; i < nwant; i++)
        if (!has_kind(got, want[i]))
            gdr_test_fail("kind \"%s\" missing from \"%s\"", want[i], got);
    if (count_kinds(got) != nwant)
        gdr_test_fail("\"%s\" has %d kinds, expected %d", got, count_kinds(got), nwant);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, gpu = MPIX_Query_cuda_support();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char got[1024];
    MPI_Info info;

    const char *base[] = {"mpi", "system", "cuda"};
    int nbase = gpu ? 3 : 2;

    gdr_test_set_context("MPI_COMM_WORLD (GPU support %d)", gpu);
    MPI_Comm_get_info(MPI_COMM_WORLD, &info);
    kinds_of(info, got, sizeof(got));
    expect_kinds(got, base, nbase);

    gdr_test_set_context("MPI_Win_allocate on MPI_COMM_WORLD");
    int *wbase;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &win);
    MPI_Win_get_info(win, &info);
    kinds_of(info, got, sizeof(got));
    expect_kinds(got, base, nbase);
    MPI_Win_free(&win);

    /* without GPU support there is no device memory to give: the call must say so with
     * MPI_ERR_INFO_VALUE, naming the key, rather than hand out host memory; with it
     * (a real GPU: gdr's CUDA layer then runs too), the window's base is device memory
     * (gpu_rma_sim checks that one on the simulated GPU) */
    gdr_test_set_context("MPI_Win_allocate asking for cuda:device (GPU support %d)", gpu);
    MPI_Info dev;
    MPI_Info_create(&dev);
    MPI_Info_set(dev, "mpi_memory_alloc_kinds", "cuda:device,system");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Win_allocate(64, 1, dev, MPI_COMM_WORLD, &wbase, &win);
    if (gpu) {
        if (gdr_check_mpi("MPI_Win_allocate", rc))
            MPI_Win_free(&win);
    } else {
        int cls = -1, len = 0;
        char msg[MPI_MAX_ERROR_STRING] = "";
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        gdr_check_long("error class is MPI_ERR_INFO_VALUE", 0, MPI_ERR_INFO_VALUE, cls);
        if (strstr(msg, "mpi_memory_alloc_kinds=cuda:device") == NULL)
            gdr_test_fail("the error does not name the info value: \"%s\"", msg);
    }
    /* a first kind of host memory: MPICH's allocation, whatever follows */
    MPI_Info_set(dev, "mpi_memory_alloc_kinds", "system,cuda:device");
    rc = MPI_Win_allocate(sizeof(int), sizeof(int), dev, MPI_COMM_WORLD, &wbase, &win);
    if (gdr_check_mpi("MPI_Win_allocate(system,cuda:device)", rc)) {
        *wbase = 7 + rank;      /* host memory: the host may write it */
        MPI_Win_fence(0, win);
        int right = -1;
        MPI_Get(&right, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, win);
        MPI_Win_fence(0, win);
        gdr_check_long("Get from the right neighbour", 0, 7 + (rank + 1) % size, right);
        MPI_Win_free(&win);
    }
    MPI_Info_free(&dev);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    gdr_test_set_context("session asking for kinds");
    MPI_Info ask;
    MPI_Info_create(&ask);
    MPI_Info_set(ask, "mpi_memory_alloc_kinds",
                 "mpi:win_allocate,system,cuda:device,rocm,nosuchkind");
    MPI_Session session;
    rc = MPI_Session_init(ask, MPI_ERRORS_RETURN, &session);
    MPI_Info_free(&ask);
    if (rc != MPI_SUCCESS)
        gdr_test_die("MPI_Session_init", rc);
    MPI_Session_get_info(session, &info);
    kinds_of(info, got, sizeof(got));
    const char *asked[] = {"mpi", "system", "mpi:win_allocate", "cuda", "cuda:device"};
    const char *asked_no_gpu[] = {"mpi", "system", "mpi:win_allocate"};
    if (gpu)
        expect_kinds(got, asked, 5);
    else
        expect_kinds(got, asked_no_gpu, 3);
    if (has_kind(got, "rocm") || has_kind(got, "nosuchkind"))
        gdr_test_fail("unsupported kinds reported: \"%s\"", got);
    char session_kinds[1024];
    snprintf(session_kinds, sizeof(session_kinds), "%s", got);

    gdr_test_set_context("communicator from the session's mpi://WORLD group");
    MPI_Group group;
    MPI_Comm comm;
    MPI_Group_from_session_pset(session, "mpi://WORLD", &group);
    rc = MPI_Comm_create_from_group(group, "gdr.test.memory_kinds", MPI_INFO_NULL,
                                    MPI_ERRORS_RETURN, &comm);
    if (rc != MPI_SUCCESS)
        gdr_test_die("MPI_Comm_create_from_group", rc);
    MPI_Comm_get_info(comm, &info);
    kinds_of(info, got, sizeof(got));
    if (strcmp(got, session_kinds) != 0)
        gdr_test_fail("communicator reports \"%s\", its session \"%s\"", got, session_kinds);
    int crank, csize, token = -1, mine;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    mine = 4242 + crank;
    MPI_Sendrecv(&mine, 1, MPI_INT, (crank + 1) % csize, 0, &token, 1, MPI_INT,
                 (crank + csize - 1) % csize, 0, comm, MPI_STATUS_IGNORE);
    gdr_check_long("token", 0, 4242 + (crank + csize - 1) % csize, token);
    MPI_Comm_free(&comm);
    MPI_Group_free(&group);
    MPI_Session_finalize(&session);

    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
