# The key of a line of MPICH's test lists, shared by maint/mpich-suite (--full's dealing)
# and maint/mpich-line-times (which writes test/mpich/line-times): the awk programs that
# use these functions start with this file's text, so the two can never key lines apart.

# The current record, a line of DIR's testlist: DIR/NAME NPROCS and its arg= fields in order
# (the other fields, timeLimit= env= mem=, are ours or runtests' and may change).
function list_line_key(dir,   i, s) {
    s = dir "/" $1 " " $2
    for (i = 3; i <= NF; i++) if ($i ~ /^arg=/) s = s " " $i
    return s
}

# A line of test/mpich/line-times, "SECONDS KEY": its KEY, blanks made single.
function times_line_key(l,   f, i, n, s) {
    n = split(l, f, " ")
    s = f[2]
    for (i = 3; i <= n; i++) s = s " " f[i]
    return s
}
