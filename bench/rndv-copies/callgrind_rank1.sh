#!/bin/sh
if [ "$PMI_RANK" = 1 ]; then exec valgrind --tool=callgrind --callgrind-out-file=$OUTDIR/cg.$TAG.%p "$@"; fi
exec "$@"
