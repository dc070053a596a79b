! fortran_rma: the Fortran bindings (mpifort, the mpi module) over gdr: a ring of MPI_Sendrecv
! and a ring of MPI_Put under fences into an allocated window, values checked; rank 0 prints
! " No Errors" or " Found N errors".  Built and run by maint/check when the install has mpifort
! (maint/graft --enable-fortran).
program fortran_rma
    use mpi
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    implicit none
    integer, parameter :: n = 4096
    integer :: rank, nranks, ierr, right, left, i, errs, total
    integer :: win
    integer(kind=MPI_ADDRESS_KIND) :: winsize, disp
    integer(kind=8) :: sendbuf(n), recvbuf(n), origin(n)
    integer(kind=8), pointer :: winbuf(:)
    type(c_ptr) :: baseptr

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
    right = mod(rank + 1, nranks)
    left = mod(rank - 1 + nranks, nranks)
    errs = 0

    do i = 1, n
        sendbuf(i) = int(rank, 8) * 1000003_8 + i
    end do
    call MPI_Sendrecv(sendbuf, n, MPI_INTEGER8, right, 7, recvbuf, n, MPI_INTEGER8, left, 7, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    do i = 1, n
        if (recvbuf(i) /= int(left, 8) * 1000003_8 + i) errs = errs + 1
    end do

    winsize = int(n, MPI_ADDRESS_KIND) * 8
    call MPI_Win_allocate(winsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, win, ierr)
    call c_f_pointer(baseptr, winbuf, [n])
    winbuf = -1
    do i = 1, n
        origin(i) = int(rank, 8) * 7_8 + 3_8 * i
    end do
    disp = 0
    call MPI_Win_fence(0, win, ierr)
    call MPI_Put(origin, n, MPI_INTEGER8, right, disp, n, MPI_INTEGER8, win, ierr)
    call MPI_Win_fence(0, win, ierr)
    do i = 1, n
        if (winbuf(i) /= int(left, 8) * 7_8 + 3_8 * i) errs = errs + 1
    end do
    call MPI_Win_free(win, ierr)

    call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (total == 0) then
            print '(A)', ' No Errors'
        else
            print '(A,I0,A)', ' Found ', total, ' errors'
        end if
    end if
    call MPI_Finalize(ierr)
end program fortran_rma
