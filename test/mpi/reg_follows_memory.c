/* Registrations follow the memory: between two transfers from or into one address, the
 * pages there are replaced, and the second transfer must move the new bytes.  Rank 0 is
 * the origin, rank 1 the target (other ranks only join the collectives).
 *
 *   send-mmap    MPI_Send; mmap(MAP_FIXED) new pages over the buffer, fill; MPI_Send
 *   send-shm     MPI_Send from shmat memory; shmdt; shmat another segment there; MPI_Send
 *   recv-mmap    MPI_Recv; mmap(MAP_FIXED) over the receive buffer; MPI_Recv (the payload
 *                is read straight into a registered receive buffer)
 *   put-mmap     MPI_Put + flush; mmap(MAP_FIXED) over the origin buffer; MPI_Put + flush
 *   get-mmap     MPI_Get + flush; mmap(MAP_FIXED) over the result buffer; MPI_Get + flush
 * and, where a CUDA driver is named (MPIR_CVAR_CH4_GDR_CUDA_DRIVER: the simulated GPU),
 * the same with device memory freed and allocated again at the same address:
 *   dev-send     (host-visible mode only: in strict mode MPICH itself reads the buffer)
 *   dev-put, dev-get
 * Over the network (GDR_TEST_EXPECT_NATIVE=1) the MPI_T counters must show the
 * invalidations by cause, or with MPIR_CVAR_CH4_GDR_REG_CACHE=0 that nothing was kept.
 * 1 MiB buffers: above the eager limit and the Put bounce size, so gdr registers them. */
#define _GNU_SOURCE
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include "gdr_mpi_test.h"
#include "gdr_cuda_test.h"

#define N ((size_t) 1 << 20)

static int rank, nranks;

static unsigned char pattern(unsigned seed, size_t i)
{
    return (unsigned char) (seed * 131u + i * 7u + (i >> 12));
}

static void fill(unsigned char *p, unsigned seed)
{
    for (size_t i = 0; i < N; i++)
        p[i] = pattern(seed, i);
}

/* The first wrong byte, reported with the seed it matches if any (the old round's). */
static void check(const char *what, const unsigned char *p, unsigned seed, unsigned old_seed)
{
    for (size_t i = 0; i < N; i++) {
        if (p[i] != pattern(seed, i)) {
            int stale = 1;
            for (size_t j = 0; j < 64 && stale; j++)
                stale = p[j] == pattern(old_seed, j);
            gdr_test_fail("%s: byte %zu is %d, want %d (%s)", what, i, p[i], pattern(seed, i),
                          stale ? "the bytes of the previous transfer: a stale registration"
                          : "not the previous transfer's either");
            return;
        }
    }
}

static unsigned char *map_anon(void)
{
    void *p = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        gdr_test_die("mmap", MPI_ERR_NO_MEM);
    return p;
}

/* New, zeroed pages at p: what a program's own allocator or a library may do. */
static void replace_pages(unsigned char *p)
{
    if (mmap(p, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p)
        gdr_test_die("mmap(MAP_FIXED)", MPI_ERR_NO_MEM);
}

static void send_mmap(unsigned char *rbuf)
{
    gdr_test_set_context("send-mmap");
    unsigned char *b = rank == 0 ? map_anon() : NULL;
    for (int round = 0; round < 2; round++) {
        if (rank == 0) {
            if (round == 1)
                replace_pages(b);
            fill(b, 10 + round);
            MPI_Send(b, (int) N, MPI_BYTE, 1, round, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(rbuf, (int) N, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(round ? "send-mmap, after mmap(MAP_FIXED)" : "send-mmap, first", rbuf,
                  10 + round, 10);
        }
    }
    if (b != NULL)
        munmap(b, N);
}

static void recv_mmap(void)
{
    gdr_test_set_context("recv-mmap");
    unsigned char *b = map_anon();
    for (int round = 0; round < 2; round++) {
        if (rank == 0) {
            fill(b, 80 + round);
            MPI_Send(b, (int) N, MPI_BYTE, 1, round, MPI_COMM_WORLD);
        } else if (rank == 1) {
            if (round == 1)
                replace_pages(b);
            MPI_Recv(b, (int) N, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(round ? "recv-mmap, after mmap(MAP_FIXED)" : "recv-mmap, first", b,
                  80 + round, 0);
        }
    }
    munmap(b, N);
}

static void send_shm(unsigned char *rbuf)
{
    gdr_test_set_context("send-shm");
    int ids[2] = { -1, -1 };
    unsigned char *at = NULL;
    for (int round = 0; round < 2; round++) {
        if (rank == 0) {
            ids[round] = shmget(IPC_PRIVATE, N, IPC_CREAT | 0600);
            if (ids[round] < 0)
                gdr_test_die("shmget", MPI_ERR_NO_MEM);
            if (round == 1)
                shmdt(at);
            unsigned char *s = shmat(ids[round], at, 0);
            if (s == (void *) -1 || (at != NULL && s != at))
                gdr_test_die("shmat at the first segment's address", MPI_ERR_NO_MEM);
            at = s;
            fill(s, 20 + round);
            MPI_Send(s, (int) N, MPI_BYTE, 1, round, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(rbuf, (int) N, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(round ? "send-shm, another segment at the address" : "send-shm, first",
                  rbuf, 20 + round, 20);
        }
    }
    if (rank == 0) {
        shmdt(at);
        shmctl(ids[0], IPC_RMID, NULL);
        shmctl(ids[1], IPC_RMID, NULL);
    }
}

/* Rank 1's window memory, read or written under a lock of its own. */
static void target_access(MPI_Win win, unsigned char *base, unsigned seed, int write,
                          const char *what)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
    if (write)
        fill(base, seed);
    else
        check(what, base, seed, seed - 1);
    MPI_Win_unlock(1, win);
}

/* origin/result: host memory whose pages are replaced (dev NULL), or device memory
 * freed and allocated again between the rounds. */
static void put_get(int is_get, int device, MPI_Win win, unsigned char *base)
{
    const char *name = device ? (is_get ? "dev-get" : "dev-put") : (is_get ? "get-mmap" : "put-mmap");
    unsigned seed0 = (is_get ? 40 : 30) + (device ? 20 : 0);
    unsigned char *buf = NULL, *host = NULL;
    gdr_test_set_context("%s", name);
    if (rank == 0) {
        host = map_anon();
        buf = device ? dev_alloc(N) : map_anon();
    }
    for (int round = 0; round < 2; round++) {
        unsigned seed = seed0 + (unsigned) round;
        char what[96];
        snprintf(what, sizeof(what), "%s, %s", name, round == 0 ? "first" : device
                 ? "after cuMemFree + cuMemAlloc at the same address" : "after mmap(MAP_FIXED)");
        if (is_get && rank == 1)
            target_access(win, base, seed, 1, what);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            if (round == 1 && device) {
                dev_free(buf);
                unsigned char *again = dev_alloc(N);
                if (again != buf)
                    gdr_test_fail("%s: cuMemAlloc gave %p, not the freed %p: the address was "
                                  "not reused", name, (void *) again, (void *) buf);
                buf = again;
            } else if (round == 1) {
                replace_pages(buf);
            }
            if (!is_get) {
                fill(host, seed);
                if (device)
                    dev_copy(buf, host, N);
                else
                    memcpy(buf, host, N);
            } else if (device) {
                memset(host, 0, N);
                dev_copy(buf, host, N);
            }
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            if (is_get)
                MPI_Get(buf, (int) N, MPI_BYTE, 1, 0, (int) N, MPI_BYTE, win);
            else
                MPI_Put(buf, (int) N, MPI_BYTE, 1, 0, (int) N, MPI_BYTE, win);
            MPI_Win_flush(1, win);
            MPI_Win_unlock(1, win);
            if (is_get) {
                if (device)
                    dev_copy(host, buf, N);
                check(what, device ? host : buf, seed, seed0);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (!is_get && rank == 1)
            target_access(win, base, seed, 0, what);
    }
    if (rank == 0) {
        if (device)
            dev_free(buf);
        else
            munmap(buf, N);
        munmap(host, N);
    }
}

static void dev_send(unsigned char *rbuf)
{
    gdr_test_set_context("dev-send");
    unsigned char *d = NULL, *host = NULL;
    if (rank == 0) {
        host = map_anon();
        d = dev_alloc(N);
    }
    for (int round = 0; round < 2; round++) {
        if (rank == 0) {
            if (round == 1) {
                dev_free(d);
                unsigned char *again = dev_alloc(N);
                if (again != d)
                    gdr_test_fail("dev-send: cuMemAlloc gave %p, not the freed %p", (void *) again,
                                  (void *) d);
                d = again;
            }
            fill(host, 70 + round);
            dev_copy(d, host, N);
            MPI_Send(d, (int) N, MPI_BYTE, 1, round, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(rbuf, (int) N, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(round ? "dev-send, after cuMemFree + cuMemAlloc at the same address"
                  : "dev-send, first", rbuf, 70 + round, 70);
        }
    }
    if (rank == 0) {
        dev_free(d);
        munmap(host, N);
    }
}

static int env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v != NULL && strcmp(v, value) == 0;
}

int main(int argc, char **argv)
{
    int provided;
    const char *driver = getenv("MPIR_CVAR_CH4_GDR_CUDA_DRIVER");
    int device = driver != NULL && *driver != '\0';
    int cuda_rc = device ? cuda_open() : 0;
    MPI_T_pvar_session session;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2) {
        gdr_test_fail("needs 2 or more ranks");
        long e = gdr_test_finish();
        MPI_Finalize();
        return e != 0;
    }
    if (device)
        cuda_opened_or_end(cuda_rc);

    unsigned char *rbuf = map_anon(), *base;
    MPI_Win win;
    MPI_Win_allocate(rank == 1 ? (MPI_Aint) N : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);

    send_mmap(rbuf);
    recv_mmap();
    send_shm(rbuf);
    put_get(0, 0, win, base);
    put_get(1, 0, win, base);
    if (device) {
        if (env_is("GDR_GPUSIM_MODE", "host-visible"))
            dev_send(rbuf);
        put_get(0, 1, win, base);
        put_get(1, 1, win, base);
    }

    if (rank == 0 && gdr_test_expect_native()) {
        gdr_test_set_context("MPI_T");
        unsigned long long mm = gdr_pvar_value(session, "gdr_reg_cache_invalidated_mmap");
        unsigned long long shm = gdr_pvar_value(session, "gdr_reg_cache_invalidated_shm");
        unsigned long long once = gdr_pvar_value(session, "gdr_reg_cache_once");
        unsigned long long hits = gdr_pvar_value(session, "gdr_reg_cache_hits");
        if (env_is("MPIR_CVAR_CH4_GDR_REG_CACHE", "0")) {
            /* each transfer's own registration: send, shm, put, get, twice each */
            if (once < 8 || hits != 0 || mm != 0 || shm != 0)
                gdr_test_fail("cache off: %llu registrations for one transfer (want >= 8), "
                              "%llu hits, %llu/%llu invalidated by mmap/shm (want 0)", once, hits,
                              mm, shm);
        } else {
            /* send-mmap, put-mmap, get-mmap; send-shm (shmdt) */
            if (mm < 3 || shm < 1)
                gdr_test_fail("registrations invalidated by mmap %llu (want >= 3), by shm %llu "
                              "(want >= 1)", mm, shm);
            if (device && env_is("MPIR_CVAR_CH4_GDR_GPUDIRECT", "peermem")) {
                unsigned long long dev = gdr_pvar_value(session, "gdr_reg_cache_invalidated_device");
                /* dev-put and dev-get, and dev-send in host-visible mode */
                if (dev < 2)
                    gdr_test_fail("registrations replaced for a new CUDA buffer id: %llu "
                                  "(want >= 2)", dev);
            }
        }
    }

    MPI_Win_free(&win);
    munmap(rbuf, N);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    long errors = gdr_test_finish();
    MPI_Finalize();
    return errors != 0;
}
