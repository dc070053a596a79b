/* What a rank pays to join and to talk: MPI_Init's time, the memory it pins and holds, and
 * the cost of a first exchange with a new peer (lazy connections: issue 22) against the
 * second.  Prints one CSV row per quantity from rank 0 (max and mean over ranks):
 *
 *   metric,ranks,max,mean,unit,lazy
 *
 * metrics: init_s (MPI_Init wall time), pinned_bytes_after_init, connections_after_init,
 * rss_kib_after_init, first_sendrecv_us and second_sendrecv_us (after a barrier, to rank + 3
 * and from rank - 3: no binomial reduction or dissemination barrier joins ranks 3 apart, at
 * 8 ranks or more; the first includes the handshakes), pinned_bytes_after_ring, connections_after_ring,
 * rss_kib_after_ring (after an exchange with both ring neighbours).  gdr's MPI_T
 * variables (gdr_pinned_bytes, gdr_connections) read as -1 under another MPI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    if (f != NULL)
        fclose(f);
    return kib;
}

/* An MPI_T performance variable by name, COUNTER or LEVEL; -1 when there is none. */
static double pvar(const char *name)
{
    int n, idx = -1;
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n && idx < 0; i++) {
        char nm[128], desc[8];
        int nlen = sizeof(nm), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, nm, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro,
                                &cont, &atomic) == MPI_SUCCESS && strcmp(nm, name) == 0)
            idx = i;
    }
    if (idx < 0)
        return -1;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int count;
    unsigned long long v = 0;
    MPI_T_pvar_session_create(&s);
    if (MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count) != MPI_SUCCESS || count != 1) {
        MPI_T_pvar_session_free(&s);
        return -1;
    }
    MPI_T_pvar_read(s, h, &v);
    MPI_T_pvar_handle_free(s, &h);
    MPI_T_pvar_session_free(&s);
    return (double) v;
}

static int rank, size;

static void row(const char *metric, double mine, const char *unit, const char *lazy)
{
    double max, sum;
    MPI_Reduce(&mine, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s,%d,%.6g,%.6g,%s,%s\n", metric, size, max, sum / size, unit, lazy);
}

static double exchange_us(int to, int from)
{
    char out = 1, in = 0;
    MPI_Barrier(MPI_COMM_WORLD);        /* all start together: the time is the exchange's */
    double t0 = now();
    MPI_Sendrecv(&out, 1, MPI_CHAR, to, 7, &in, 1, MPI_CHAR, from, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    return (now() - t0) * 1e6;
}

int main(int argc, char **argv)
{
    double t0 = now();
    MPI_Init(&argc, &argv);
    double init_s = now() - t0;
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *lz = getenv("MPIR_CVAR_CH4_GDR_LAZY_CONNECT");
    const char *lazy = lz != NULL && strcmp(lz, "0") == 0 ? "no" : "yes";
    if (rank == 0)
        printf("metric,ranks,max,mean,unit,lazy\n");
    /* read before anything else talks (the reductions below connect to rank 0's tree) */
    double pinned0 = pvar("gdr_pinned_bytes"), conn0 = pvar("gdr_connections");
    long rss0 = rss_kib();
    row("init_s", init_s, "s", lazy);
    row("pinned_bytes_after_init", pinned0, "B", lazy);
    row("connections_after_init", conn0, "1", lazy);
    row("rss_kib_after_init", (double) rss0, "KiB", lazy);
    /* peers no collective has joined yet: 3 apart (reductions and barriers pair ranks a
     * power of two apart, around the ring) */
    int fresh = size >= 8;
    double first = fresh ? exchange_us((rank + 3) % size, (rank + size - 3) % size) : 0;
    double second = fresh ? exchange_us((rank + 3) % size, (rank + size - 3) % size) : 0;
    row("first_sendrecv_us", first, "us", lazy);
    row("second_sendrecv_us", second, "us", lazy);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    char a = 1, b = 0;
    MPI_Sendrecv(&a, 1, MPI_CHAR, right, 8, &b, 1, MPI_CHAR, left, 8, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(&a, 1, MPI_CHAR, left, 9, &b, 1, MPI_CHAR, right, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    row("pinned_bytes_after_ring", pvar("gdr_pinned_bytes"), "B", lazy);
    row("connections_after_ring", pvar("gdr_connections"), "1", lazy);
    row("rss_kib_after_ring", (double) rss_kib(), "KiB", lazy);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
