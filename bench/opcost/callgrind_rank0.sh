#!/bin/sh
# callgrind_rank0.sh TAG [VAR=VALUE ...] PROG ARGS: rank 0 under callgrind, collecting only
# inside the measured MPI calls, one dump per phase of opcost (its opcost_end_* markers);
# the other rank runs plainly.  VAR=VALUE go into both ranks' environment.
# The patterns start with '*' because MPICH defines MPI_Put as a weak alias of PMPI_Put (one
# address, two names) and callgrind names the function after either one.
tag=$1; shift
while :; do case $1 in *=*) export "$1"; shift ;; *) break ;; esac; done
if [ "$PMI_RANK" = 0 ]; then
    exec valgrind --tool=callgrind --callgrind-out-file="$OUTDIR/cg.$tag.%p" \
        --collect-atstart=no --separate-callers=40 --dump-before='opcost_end_*' \
        --toggle-collect='*MPI_Put' --toggle-collect='*MPI_Get' \
        --toggle-collect='*MPI_Accumulate' --toggle-collect='*MPI_Fetch_and_op' \
        --toggle-collect='*MPI_Compare_and_swap' --toggle-collect='*MPI_Win_flush' \
        --toggle-collect='*MPI_Send' "$@"
fi
exec "$@"
