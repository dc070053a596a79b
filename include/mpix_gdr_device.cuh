/* mpix_gdr_device.cuh: kernel-triggered RMA on MPI windows (MPICH with the ch4:gdr netmod;
 * gdr's DESIGN.md section 4).  Installed beside mpi.h, with the __host__ __device__ code it
 * is written over in gdr/ (gdr's include/ directory, as it is installed): -I$PREFIX/include
 * (what mpicc passes) is all it needs.  CUDA C++ only; include it in CUDA code:
 *
 *     MPIX_Win_device dwin;
 *     MPIX_Win_get_device_handle(win, &dwin);        // host, inside MPI_Win_lock_all
 *     kernel<<<grid, block, 0, stream>>>(dwin, ...);  // MPIX_Dev_put(dwin, ...) etc.
 *     MPIX_Win_free_device_handle(&dwin);            // once the kernels finished
 *
 * This rank's own window, and the device windows of ranks on this node (CUDA IPC), are
 * reached by loads and stores; other ranks through a descriptor ring that gdr's progress
 * serves (a progress thread under MPI_THREAD_MULTIPLE, else the host's MPI calls:
 * MPIR_CVAR_CH4_GDR_ENQUEUE_PROGRESS).  Return values: MPI_SUCCESS, MPI_ERR_RANK /
 * MPI_ERR_ARG for a bad rank, signal op or comparison, MPI_ERR_RMA_RANGE for a
 * displacement outside a directly reached window (nothing is done), or MPI_ERR_OTHER when gdr's proxy stopped (it failed: MPI_Win_free on the host says why)
 * instead of waiting for ever.
 * Puts and gets to other ranks are started when the call returns: the source of a put must
 * stay unchanged, and the destination of a get unread, until MPIX_Dev_flush(rank).
 * fetch_add's result is written by gdr's proxy: `result` must be host-pinned memory
 * mapped for the device (cudaHostAlloc) when the target is another rank.
 * MPIX_Dev_accumulate applies a predefined op element-wise, each element atomic with every
 * other accumulate and fetch_add on it: on this node every op MPI defines on the type but
 * MPI_NO_OP, elements of at most 8 bytes (MPI_ERR_OP for 16-byte ones: MPI_DOUBLE_INT,
 * MPI_LONG_INT, MPI_C_DOUBLE_COMPLEX) aligned to their size in the window; to another node
 * MPI_SUM of 64-bit integers (MPI_INT64_T, MPI_UINT64_T, MPI_LONG, ...) as one NIC
 * fetch-add per element, complete at MPIX_Dev_flush (MPI_ERR_OP for anything else: use
 * MPIX_Accumulate_enqueue); src may be reused when it returns.
 * MPIX_Dev_win_lock / _unlock / _lock_all / _unlock_all open and close the process's
 * passive-target epochs from the kernel, on the window's own locks (shared with every
 * rank's MPI_Win_lock), and MPIX_Dev_win_fence is MPI_Win_fence among the kernels, where
 * the window's synchronisation goes by the NIC; the host holds no epoch on those ranks
 * meanwhile (docs/mpix-api.md).
 * The _warp and _block variants are called by every thread of the warp or block with the
 * same arguments; one thread issues the operation, and all return after it. */
#ifndef MPIX_GDR_DEVICE_CUH
#define MPIX_GDR_DEVICE_CUH

#if !defined(__CUDACC__)
#error "mpix_gdr_device.cuh is CUDA C++: compile with nvcc (host code needs only mpi.h)"
#endif

#include <mpi.h>
#include "gdr/gdr_rma_kernel_api.h"

static_assert(sizeof(gdr_dev_win_t) <= sizeof(MPIX_Win_device),
              "MPIX_Win_device must hold gdr's device handle");

__host__ __device__ inline const gdr_dev_win_t *MPIX_Dev_gdr(const MPIX_Win_device &w)
{
    return reinterpret_cast<const gdr_dev_win_t *>(&w);
}

__host__ __device__ inline int MPIX_Dev_status(int rc)
{
    return rc == GDR_DEV_OK ? MPI_SUCCESS : rc == GDR_DEV_ERR_RANK ? MPI_ERR_RANK
        : rc == GDR_DEV_ERR_ARG ? MPI_ERR_ARG : rc == GDR_DEV_ERR_RANGE ? MPI_ERR_RMA_RANGE
        : rc == GDR_DEV_ERR_OP ? MPI_ERR_OP : rc == GDR_DEV_ERR_SYNC ? MPI_ERR_RMA_SYNC
        : MPI_ERR_OTHER;
}

/* The predefined datatype's element type for gdr's accumulate steps (gdr_gpu_type_t), or
 * -1 where there is none (derived types, MPI_BYTE, MPI_CHAR, the Fortran types). */
__host__ __device__ inline int MPIX_Dev_gdr_type(MPI_Datatype t)
{
    if (t == MPI_INT8_T || t == MPI_SIGNED_CHAR)
        return GDR_GPU_T_INT8;
    if (t == MPI_INT16_T || t == MPI_SHORT)
        return GDR_GPU_T_INT16;
    if (t == MPI_INT32_T || t == MPI_INT)
        return GDR_GPU_T_INT32;
    if (t == MPI_INT64_T || t == MPI_LONG_LONG || (t == MPI_LONG && sizeof(long) == 8))
        return GDR_GPU_T_INT64;
    if (t == MPI_UINT8_T || t == MPI_UNSIGNED_CHAR)
        return GDR_GPU_T_UINT8;
    if (t == MPI_UINT16_T || t == MPI_UNSIGNED_SHORT)
        return GDR_GPU_T_UINT16;
    if (t == MPI_UINT32_T || t == MPI_UNSIGNED)
        return GDR_GPU_T_UINT32;
    if (t == MPI_UINT64_T || t == MPI_UNSIGNED_LONG_LONG
        || (t == MPI_UNSIGNED_LONG && sizeof(unsigned long) == 8))
        return GDR_GPU_T_UINT64;
    if (t == MPI_FLOAT)
        return GDR_GPU_T_FLOAT;
    if (t == MPI_DOUBLE)
        return GDR_GPU_T_DOUBLE;
    if (t == MPI_C_BOOL)
        return GDR_GPU_T_BOOL;
    if (t == MPI_C_FLOAT_COMPLEX)
        return GDR_GPU_T_FLOAT_COMPLEX;
    if (t == MPI_C_DOUBLE_COMPLEX)
        return GDR_GPU_T_DOUBLE_COMPLEX;
    if (t == MPI_FLOAT_INT)
        return GDR_GPU_T_FLOAT_INT;
    if (t == MPI_DOUBLE_INT)
        return GDR_GPU_T_DOUBLE_INT;
    if (t == MPI_LONG_INT && sizeof(long) == 8)
        return GDR_GPU_T_LONG_INT;
    if (t == MPI_2INT)
        return GDR_GPU_T_2INT;
    if (t == MPI_SHORT_INT)
        return GDR_GPU_T_SHORT_INT;
    return -1;
}

/* The predefined op for gdr's accumulate steps (gdr_gpu_op_t), or -1 (user-defined ops,
 * MPI_NO_OP: an accumulate that changes nothing has nothing to apply). */
__host__ __device__ inline int MPIX_Dev_gdr_op(MPI_Op op)
{
    return op == MPI_SUM ? GDR_GPU_OP_SUM : op == MPI_PROD ? GDR_GPU_OP_PROD
        : op == MPI_MAX ? GDR_GPU_OP_MAX : op == MPI_MIN ? GDR_GPU_OP_MIN
        : op == MPI_LAND ? GDR_GPU_OP_LAND : op == MPI_LOR ? GDR_GPU_OP_LOR
        : op == MPI_LXOR ? GDR_GPU_OP_LXOR : op == MPI_BAND ? GDR_GPU_OP_BAND
        : op == MPI_BOR ? GDR_GPU_OP_BOR : op == MPI_BXOR ? GDR_GPU_OP_BXOR
        : op == MPI_MAXLOC ? GDR_GPU_OP_MAXLOC : op == MPI_MINLOC ? GDR_GPU_OP_MINLOC
        : op == MPI_REPLACE ? GDR_GPU_OP_REPLACE : -1;
}

/* MPI_SUCCESS and the codes for (datatype, op), or MPI_ERR_TYPE / MPI_ERR_OP: a datatype
 * without an element type here, an op that is not a predefined one or not defined on it */
__host__ __device__ inline int MPIX_Dev_acc_codes(MPI_Datatype datatype, MPI_Op op, int *type,
                                                  int *gop)
{
    *type = MPIX_Dev_gdr_type(datatype);
    *gop = MPIX_Dev_gdr_op(op);
    if (*type < 0)
        return MPI_ERR_TYPE;
    if (*gop < 0 || !gdr_gpu_acc_defined(*gop, *type))
        return MPI_ERR_OP;
    return MPI_SUCCESS;
}

__device__ inline int MPIX_Dev_put(MPIX_Win_device w, const void *src, size_t bytes, int rank,
                                   MPI_Aint disp)
{
    return MPIX_Dev_status(gdr_dev_put(MPIX_Dev_gdr(w), src, bytes, rank, disp));
}

__device__ inline int MPIX_Dev_get(MPIX_Win_device w, void *dst, size_t bytes, int rank,
                                   MPI_Aint disp)
{
    return MPIX_Dev_status(gdr_dev_get(MPIX_Dev_gdr(w), dst, bytes, rank, disp));
}

__device__ inline int MPIX_Dev_put_signal(MPIX_Win_device w, const void *src, size_t bytes,
                                          int rank, MPI_Aint disp, MPI_Aint signal_disp,
                                          uint64_t value, int signal_op)
{
    return MPIX_Dev_status(gdr_dev_put_signal(MPIX_Dev_gdr(w), src, bytes, rank, disp,
                                              signal_disp, value, signal_op));
}

__device__ inline int MPIX_Dev_fetch_add(MPIX_Win_device w, int rank, MPI_Aint disp,
                                         uint64_t value, uint64_t *result)
{
    return MPIX_Dev_status(gdr_dev_fetch_add(MPIX_Dev_gdr(w), rank, disp, value, result));
}

/* count elements of datatype (predefined) from src into rank's window at disp, with op
 * (predefined), each element atomic (see the top of this file) */
__device__ inline int MPIX_Dev_accumulate(MPIX_Win_device w, const void *src, size_t count,
                                          MPI_Datatype datatype, int rank, MPI_Aint disp,
                                          MPI_Op op)
{
    int type, gop, rc = MPIX_Dev_acc_codes(datatype, op, &type, &gop);
    if (rc != MPI_SUCCESS)
        return rc;
    return MPIX_Dev_status(gdr_dev_accumulate(MPIX_Dev_gdr(w), src, count, type, gop, rank, disp,
                                              0, 1));
}

/* MPI_Fetch_and_op from a kernel: *result = the target's old element, the new one old op
 * *origin (MPI_NO_OP: a read).  Every predefined op on elements of at most 8 bytes, on this
 * node and to other nodes' device windows the staged protocol reaches (result host-pinned
 * there); other nodes' host windows MPI_SUM of 64-bit integers only, else MPI_ERR_OP. */
__device__ inline int MPIX_Dev_fetch_op(MPIX_Win_device w, const void *origin, void *result,
                                        MPI_Datatype datatype, int rank, MPI_Aint disp,
                                        MPI_Op op)
{
    int type = MPIX_Dev_gdr_type(datatype), gop = op == MPI_NO_OP ? GDR_GPU_OP_NO_OP
        : MPIX_Dev_gdr_op(op);
    if (type < 0)
        return MPI_ERR_TYPE;
    if (gop < 0 || !gdr_gpu_acc_defined(gop, type))
        return MPI_ERR_OP;
    return MPIX_Dev_status(gdr_dev_fetch_op(MPIX_Dev_gdr(w), origin, NULL, result, type, gop,
                                            rank, disp));
}

/* MPI_Compare_and_swap from a kernel: *result = the target's old element, replaced by
 * *origin where it equals *compare (integers, bool; where MPIX_Dev_fetch_op reaches every
 * op). */
__device__ inline int MPIX_Dev_compare_swap(MPIX_Win_device w, const void *origin,
                                            const void *compare, void *result,
                                            MPI_Datatype datatype, int rank, MPI_Aint disp)
{
    int type = MPIX_Dev_gdr_type(datatype);
    if (type < 0)
        return MPI_ERR_TYPE;
    if (!gdr_gpu_acc_defined(GDR_GPU_OP_CSWAP, type))
        return MPI_ERR_OP;
    return MPIX_Dev_status(gdr_dev_fetch_op(MPIX_Dev_gdr(w), origin, compare, result, type,
                                            GDR_GPU_OP_CSWAP, rank, disp));
}

__device__ inline int MPIX_Dev_flush(MPIX_Win_device w, int rank)
{
    return MPIX_Dev_status(gdr_dev_flush(MPIX_Dev_gdr(w), rank));
}

/* MPIX_Dev_flush for every rank of the window. */
__device__ inline int MPIX_Dev_flush_all(MPIX_Win_device w)
{
    return MPIX_Dev_status(gdr_dev_flush_all(MPIX_Dev_gdr(w)));
}

/* A passive-target epoch to rank opened by the kernel, as MPI_Win_lock(lock_type, rank):
 * returns once the lock is held (MPI_LOCK_EXCLUSIVE or MPI_LOCK_SHARED), the same lock as
 * every rank's MPI_Win_lock.  One thread takes it for the kernel; the process holds no
 * other epoch to rank meanwhile.  MPI_ERR_RMA_SYNC where the window's locks go by
 * messages (docs/mpix-api.md). */
__device__ inline int MPIX_Dev_win_lock(MPIX_Win_device w, int lock_type, int rank)
{
    if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
        return MPI_ERR_LOCKTYPE;
    return MPIX_Dev_status(gdr_dev_lock(MPIX_Dev_gdr(w), lock_type == MPI_LOCK_EXCLUSIVE, rank));
}

/* Ends the kernel's epoch to rank: every operation to rank complete at the target, then
 * the lock released. */
__device__ inline int MPIX_Dev_win_unlock(MPIX_Win_device w, int rank)
{
    return MPIX_Dev_status(gdr_dev_unlock(MPIX_Dev_gdr(w), rank));
}

/* MPIX_Dev_win_lock(MPI_LOCK_SHARED, rank) for every rank of the window. */
__device__ inline int MPIX_Dev_win_lock_all(MPIX_Win_device w)
{
    return MPIX_Dev_status(gdr_dev_lock_all(MPIX_Dev_gdr(w)));
}

/* MPIX_Dev_win_unlock for every rank of the window. */
__device__ inline int MPIX_Dev_win_unlock_all(MPIX_Win_device w)
{
    return MPIX_Dev_status(gdr_dev_unlock_all(MPIX_Dev_gdr(w)));
}

/* MPI_Win_fence among the window's kernels: one thread of every rank's kernel, after the
 * kernel's threads stopped posting; returns once this process's operations are complete
 * at their targets and every rank's kernel reached it (docs/mpix-api.md). */
__device__ inline int MPIX_Dev_win_fence(MPIX_Win_device w)
{
    return MPIX_Dev_status(gdr_dev_win_fence(MPIX_Dev_gdr(w)));
}

__device__ inline uint64_t MPIX_Dev_signal_wait_until(MPIX_Win_device w, MPI_Aint signal_disp,
                                                      int cmp, uint64_t value)
{
    uint64_t seen = 0;
    (void) gdr_dev_signal_wait_until(MPIX_Dev_gdr(w), signal_disp, cmp, value, &seen);
    return seen;
}

/* ---- notified RMA (MPIX_Win_notify_attach's counters; docs/notified-rma.md) ----------- */

/* A put, then 1 added to the target's counter idx once the data is complete there. */
__device__ inline int MPIX_Dev_put_notify(MPIX_Win_device w, const void *src, size_t bytes,
                                          int rank, MPI_Aint disp, int idx)
{
    return MPIX_Dev_status(gdr_dev_put_notify(MPIX_Dev_gdr(w), src, bytes, rank, disp, idx));
}

/* A get, then 1 added to the target's counter idx once the read is done. */
__device__ inline int MPIX_Dev_get_notify(MPIX_Win_device w, void *dst, size_t bytes, int rank,
                                          MPI_Aint disp, int idx)
{
    return MPIX_Dev_status(gdr_dev_get_notify(MPIX_Dev_gdr(w), dst, bytes, rank, disp, idx));
}

/* This rank's counter idx (acquire: the data it counted is visible after it). */
__device__ inline int MPIX_Dev_notify_get_value(MPIX_Win_device w, int idx, uint64_t *value)
{
    return MPIX_Dev_status(gdr_dev_notify_value(MPIX_Dev_gdr(w), idx, value));
}

/* Waits until this rank's counter idx is at least value; returns what it read then (0 for
 * a counter kernels cannot reach: attach counters on a process with a GPU). */
__device__ inline uint64_t MPIX_Dev_notify_wait(MPIX_Win_device w, int idx, uint64_t value)
{
    uint64_t seen = 0;
    (void) gdr_dev_notify_wait(MPIX_Dev_gdr(w), idx, value, &seen);
    return seen;
}

/* ---- cooperative variants ------------------------------------------------------------ */

/* bytes from src to dst copied together by nt threads (this one t): 8-byte words when
 * both addresses are 8-aligned, the tail by thread 0 */
__device__ inline void MPIX_Dev_copy_shared(char *dst, const char *src, size_t bytes,
                                            unsigned t, unsigned nt)
{
    size_t words = ((((uintptr_t) dst | (uintptr_t) src) & 7) == 0) ? bytes / 8 : 0;
    for (size_t i = t; i < words; i += nt)
        reinterpret_cast<uint64_t *>(dst)[i] = reinterpret_cast<const uint64_t *>(src)[i];
    if (t == 0)
        gdr_dev_copy(dst + words * 8, src + words * 8, bytes - words * 8);
}

__device__ inline int MPIX_Dev_put_warp(MPIX_Win_device w, const void *src, size_t bytes,
                                        int rank, MPI_Aint disp)
{
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    int lane = threadIdx.x % 32, rc = GDR_DEV_OK;
    char *dst = gdr_dev_rank_ok(d, rank) && gdr_dev_direct(d, rank)
        ? gdr_dev_at(d, rank, disp, bytes) : NULL;
    if (dst != NULL) {
        /* same node: the warp copies together */
        MPIX_Dev_copy_shared(dst, static_cast<const char *>(src), bytes, lane, 32);
    } else if (lane == 0) {
        rc = gdr_dev_put(d, src, bytes, rank, disp);
    }
    __syncwarp();
    return MPIX_Dev_status(__shfl_sync(0xffffffffu, rc, 0));
}

__device__ inline int MPIX_Dev_put_block(MPIX_Win_device w, const void *src, size_t bytes,
                                         int rank, MPI_Aint disp)
{
    __shared__ int rc;
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    if (t == 0)
        rc = GDR_DEV_OK;
    __syncthreads();
    char *dst = gdr_dev_rank_ok(d, rank) && gdr_dev_direct(d, rank)
        ? gdr_dev_at(d, rank, disp, bytes) : NULL;
    if (dst != NULL) {
        MPIX_Dev_copy_shared(dst, static_cast<const char *>(src), bytes, t, nt);
    } else if (t == 0) {
        rc = gdr_dev_put(d, src, bytes, rank, disp);
    }
    __syncthreads();
    return MPIX_Dev_status(rc);
}

/* every thread of the warp (block) with the same arguments: on this node they copy
 * together from the peer's mapped window, otherwise one of them posts the get */
__device__ inline int MPIX_Dev_get_warp(MPIX_Win_device w, void *dst, size_t bytes, int rank,
                                        MPI_Aint disp)
{
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    int lane = threadIdx.x % 32, rc = GDR_DEV_OK;
    const char *src = gdr_dev_rank_ok(d, rank) && gdr_dev_direct(d, rank)
        ? gdr_dev_at(d, rank, disp, bytes) : NULL;
    if (src != NULL) {
        MPIX_Dev_copy_shared(static_cast<char *>(dst), src, bytes, lane, 32);
    } else if (lane == 0) {
        rc = gdr_dev_get(d, dst, bytes, rank, disp);
    }
    __syncwarp();
    return MPIX_Dev_status(__shfl_sync(0xffffffffu, rc, 0));
}

__device__ inline int MPIX_Dev_get_block(MPIX_Win_device w, void *dst, size_t bytes, int rank,
                                         MPI_Aint disp)
{
    __shared__ int rc;
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    if (t == 0)
        rc = GDR_DEV_OK;
    __syncthreads();
    const char *src = gdr_dev_rank_ok(d, rank) && gdr_dev_direct(d, rank)
        ? gdr_dev_at(d, rank, disp, bytes) : NULL;
    if (src != NULL) {
        MPIX_Dev_copy_shared(static_cast<char *>(dst), src, bytes, t, nt);
    } else if (t == 0) {
        rc = gdr_dev_get(d, dst, bytes, rank, disp);
    }
    __syncthreads();
    return MPIX_Dev_status(rc);
}

/* The part of a notified put or get (is_get) that thread t of nt does: on this node the
 * threads copy together, each fencing its stores; elsewhere nothing (thread 0 posts it
 * whole).  Returns whether the rank is reached directly in range (then thread 0 sends
 * only the notification, of 0 bytes). */
__device__ inline int MPIX_Dev_notify_copy_shared(const gdr_dev_win_t *d, int is_get, void *buf,
                                                  size_t bytes, int rank, MPI_Aint disp,
                                                  unsigned t, unsigned nt)
{
    char *at = gdr_dev_rank_ok(d, rank) && gdr_dev_direct(d, rank)
        ? gdr_dev_at(d, rank, disp, bytes) : NULL;
    if (at == NULL)
        return 0;
    if (is_get)
        MPIX_Dev_copy_shared(static_cast<char *>(buf), at, bytes, t, nt);
    else
        MPIX_Dev_copy_shared(at, static_cast<const char *>(buf), bytes, t, nt);
    __threadfence_system();     /* this thread's part before the notification */
    return 1;
}

/* every thread of the warp (block) with the same arguments: on this node they copy
 * together, then one sends the notification; otherwise one of them posts the operation */
__device__ inline int MPIX_Dev_put_notify_warp(MPIX_Win_device w, const void *src, size_t bytes,
                                               int rank, MPI_Aint disp, int idx)
{
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    int lane = threadIdx.x % 32, rc = GDR_DEV_OK;
    int direct = MPIX_Dev_notify_copy_shared(d, 0, const_cast<void *>(src), bytes, rank, disp,
                                             lane, 32);
    __syncwarp();
    if (lane == 0)
        rc = gdr_dev_put_notify(d, src, direct ? 0 : bytes, rank, disp, idx);
    return MPIX_Dev_status(__shfl_sync(0xffffffffu, rc, 0));
}

__device__ inline int MPIX_Dev_get_notify_warp(MPIX_Win_device w, void *dst, size_t bytes,
                                               int rank, MPI_Aint disp, int idx)
{
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    int lane = threadIdx.x % 32, rc = GDR_DEV_OK;
    int direct = MPIX_Dev_notify_copy_shared(d, 1, dst, bytes, rank, disp, lane, 32);
    __syncwarp();
    if (lane == 0)
        rc = gdr_dev_get_notify(d, dst, direct ? 0 : bytes, rank, disp, idx);
    return MPIX_Dev_status(__shfl_sync(0xffffffffu, rc, 0));
}

__device__ inline int MPIX_Dev_put_notify_block(MPIX_Win_device w, const void *src,
                                                size_t bytes, int rank, MPI_Aint disp, int idx)
{
    __shared__ int rc;
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    int direct = MPIX_Dev_notify_copy_shared(d, 0, const_cast<void *>(src), bytes, rank, disp,
                                             t, nt);
    __syncthreads();
    if (t == 0)
        rc = gdr_dev_put_notify(d, src, direct ? 0 : bytes, rank, disp, idx);
    __syncthreads();
    return MPIX_Dev_status(rc);
}

__device__ inline int MPIX_Dev_get_notify_block(MPIX_Win_device w, void *dst, size_t bytes,
                                                int rank, MPI_Aint disp, int idx)
{
    __shared__ int rc;
    const gdr_dev_win_t *d = MPIX_Dev_gdr(w);
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    int direct = MPIX_Dev_notify_copy_shared(d, 1, dst, bytes, rank, disp, t, nt);
    __syncthreads();
    if (t == 0)
        rc = gdr_dev_get_notify(d, dst, direct ? 0 : bytes, rank, disp, idx);
    __syncthreads();
    return MPIX_Dev_status(rc);
}

/* every thread of the warp (block) with the same arguments: the elements are split
 * between them; all return the same status */
__device__ inline int MPIX_Dev_accumulate_warp(MPIX_Win_device w, const void *src, size_t count,
                                               MPI_Datatype datatype, int rank, MPI_Aint disp,
                                               MPI_Op op)
{
    int type, gop, rc = MPIX_Dev_acc_codes(datatype, op, &type, &gop);
    if (rc == MPI_SUCCESS)
        rc = MPIX_Dev_status(gdr_dev_accumulate(MPIX_Dev_gdr(w), src, count, type, gop, rank,
                                                disp, threadIdx.x % 32, 32));
    for (int o = 16; o > 0; o /= 2)     /* the worst lane's: MPI's error classes are > 0 */
        rc = max(rc, __shfl_xor_sync(0xffffffffu, rc, o));
    return rc;
}

__device__ inline int MPIX_Dev_accumulate_block(MPIX_Win_device w, const void *src,
                                                size_t count, MPI_Datatype datatype, int rank,
                                                MPI_Aint disp, MPI_Op op)
{
    __shared__ int worst;
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    if (t == 0)
        worst = MPI_SUCCESS;
    __syncthreads();
    int type, gop, rc = MPIX_Dev_acc_codes(datatype, op, &type, &gop);
    if (rc == MPI_SUCCESS)
        rc = MPIX_Dev_status(gdr_dev_accumulate(MPIX_Dev_gdr(w), src, count, type, gop, rank,
                                                disp, t, nt));
    if (rc != MPI_SUCCESS)
        atomicMax(&worst, rc);
    __syncthreads();
    return worst;
}

__device__ inline int MPIX_Dev_flush_warp(MPIX_Win_device w, int rank)
{
    int rc = GDR_DEV_OK;
    __syncwarp();
    if (threadIdx.x % 32 == 0)
        rc = gdr_dev_flush(MPIX_Dev_gdr(w), rank);
    __syncwarp();
    return MPIX_Dev_status(__shfl_sync(0xffffffffu, rc, 0));
}

__device__ inline int MPIX_Dev_flush_block(MPIX_Win_device w, int rank)
{
    __shared__ int rc;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
        rc = gdr_dev_flush(MPIX_Dev_gdr(w), rank);
    __syncthreads();
    return MPIX_Dev_status(rc);
}

#endif /* MPIX_GDR_DEVICE_CUH */
