[#] start of __file__
dnl MPICH_SUBCFG_AFTER=src/mpid/ch4
dnl gdr: configure fragment found by maint/gen_subcfg_m4 once the netmod is grafted
dnl into src/mpid/ch4/netmod/gdr.

AC_DEFUN([PAC_SUBCFG_PREREQ_]PAC_SUBCFG_AUTO_SUFFIX,[
    AM_COND_IF([BUILD_CH4],[
        for net in $ch4_netmods ; do
            if test "$net" = "gdr" ; then
                build_ch4_netmod_gdr=yes
                AC_DEFINE(HAVE_CH4_NETMOD_GDR,1,[gdr netmod is built])
            fi
        done
    ])
    AM_CONDITIONAL([BUILD_CH4_NETMOD_GDR],[test "X$build_ch4_netmod_gdr" = "Xyes"])
])dnl

AC_DEFUN([PAC_SUBCFG_BODY_]PAC_SUBCFG_AUTO_SUFFIX,[
AM_COND_IF([BUILD_CH4_NETMOD_GDR],[
    AC_MSG_NOTICE([RUNNING CONFIGURE FOR ch4:gdr])
    AC_CHECK_HEADER([infiniband/verbs.h],,
        [AC_MSG_ERROR([ch4:gdr needs the verbs headers: apt-get install libibverbs-dev])])
    AC_CHECK_LIB([ibverbs],[ibv_get_device_list],[PAC_LIBS_ADD([-libverbs])],
        [AC_MSG_ERROR([ch4:gdr needs libibverbs: apt-get install libibverbs-dev])])
    AC_CHECK_HEADER([hwloc.h],,
        [AC_MSG_ERROR([ch4:gdr needs hwloc: apt-get install libhwloc-dev and configure --with-hwloc=/usr])])
    dnl the CUDA driver is dlopen()ed at run time, never linked
    AC_CHECK_LIB([dl],[dlopen],[PAC_LIBS_ADD([-ldl])])
])dnl end AM_COND_IF(BUILD_CH4_NETMOD_GDR,...)
])dnl end _BODY

[#] end of __file__
