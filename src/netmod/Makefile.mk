## gdr netmod: the MPICH-facing glue (this directory) plus the plain C layers it
## drives, grafted next to it by maint/graft: verbs/ (transport), rma/, gpu/, adapt/ (the
## RMA engine's seams over verbs and gpu), common/ (what they share: status codes), and
## the public headers (gdr's include/) in include/.

if BUILD_CH4_NETMOD_GDR

AM_CPPFLAGS += -I$(top_srcdir)/src/mpid/ch4/netmod/gdr \
               -I$(top_srcdir)/src/mpid/ch4/netmod/gdr/include

noinst_HEADERS += src/mpid/ch4/netmod/gdr/gdr_pre.h \
                  src/mpid/ch4/netmod/gdr/gdr_impl.h \
                  src/mpid/ch4/netmod/gdr/gdr_internal.h \
                  src/mpid/ch4/netmod/gdr/gdr_am.h \
                  src/mpid/ch4/netmod/gdr/gdr_pt2pt.h \
                  src/mpid/ch4/netmod/gdr/gdr_progress.h \
                  src/mpid/ch4/netmod/gdr/gdr_proc.h \
                  src/mpid/ch4/netmod/gdr/gdr_request.h \
                  src/mpid/ch4/netmod/gdr/netmod_inline.h \
                  src/mpid/ch4/netmod/gdr/gdr_rma.h \
                  src/mpid/ch4/netmod/gdr/gdr_rma_ipc.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_select.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_topo.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_device.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_wire.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_small_copy.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_credit.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_card.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_conn.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_qp.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_am.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_am_internal.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_iface_priv.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_rma.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_rcache.h \
                  src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_memhooks.h \
                  src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_driver.h \
                  src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_cuda.h \
                  src/mpid/ch4/netmod/gdr/gpu/gdr_gpu.h \
                  src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_internal.h \
                  src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_mem.h \
                  src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_ipc.h \
                  src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_stream.h \
                  src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_module.h \
                  src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_kernels_image.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_range.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_path.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_transport.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_engine.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_kind.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_ctl.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_passive.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_active.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_regions.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_completion.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_win.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_plan.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_acc_order.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_proto.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_issue.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_select.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_small.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_stage.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_staged_wire.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_staged.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_staged_internal.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_trigger_done.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_trigger_proxy.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_trigger_exec.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_stream_queue.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_ipc.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_lock.h \
                  src/mpid/ch4/netmod/gdr/rma/gdr_rma_notify.h \
                  src/mpid/ch4/netmod/gdr/gdr_notify.h \
                  src/mpid/ch4/netmod/gdr/adapt/gdr_verbs_rma_transport.h \
                  src/mpid/ch4/netmod/gdr/adapt/gdr_gpu_rma_device.h \
                  src/mpid/ch4/netmod/gdr/adapt/gdr_gpu_rma_stream.h \
                  src/mpid/ch4/netmod/gdr/common/gdr_status.h \
                  src/mpid/ch4/netmod/gdr/gdr_context.h \
                  src/mpid/ch4/netmod/gdr/gdr_msg_pipe.h \
                  src/mpid/ch4/netmod/gdr/gdr_access.h \
                  src/mpid/ch4/netmod/gdr/gdr_triggered.h

mpi_core_sources += src/mpid/ch4/netmod/gdr/func_table.c \
                    src/mpid/ch4/netmod/gdr/gdr_init.c \
                    src/mpid/ch4/netmod/gdr/gdr_am.c \
                    src/mpid/ch4/netmod/gdr/gdr_comm.c \
                    src/mpid/ch4/netmod/gdr/gdr_win.c \
                    src/mpid/ch4/netmod/gdr/gdr_win_dynamic.c \
                    src/mpid/ch4/netmod/gdr/gdr_win_sync.c \
                    src/mpid/ch4/netmod/gdr/gdr_rma.c \
                    src/mpid/ch4/netmod/gdr/gdr_rma_host.c \
                    src/mpid/ch4/netmod/gdr/gdr_layout.c \
                    src/mpid/ch4/netmod/gdr/gdr_spawn.c \
                    src/mpid/ch4/netmod/gdr/gdr_peers.c \
                    src/mpid/ch4/netmod/gdr/gdr_dynmsg.c \
                    src/mpid/ch4/netmod/gdr/gdr_msg_pipe.c \
                    src/mpid/ch4/netmod/gdr/gdr_msg_device.c \
                    src/mpid/ch4/netmod/gdr/gdr_hooks.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_select.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_topo.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_device.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_wire.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_credit.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_card.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_conn.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_qp.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_iface.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_fail.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_srq.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_qpmap.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_peers.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_handshake.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_eager.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_rndv.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_landing.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_progress.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_idle.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_rma.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_rcache.c \
                    src/mpid/ch4/netmod/gdr/verbs/gdr_verbs_memhooks.c \
                    src/mpid/ch4/netmod/gdr/gdr_gpudirect.c \
                    src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_driver.c \
                    src/mpid/ch4/netmod/gdr/gpu/gdr_gpu.c \
                    src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_mem.c \
                    src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_ipc.c \
                    src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_stream.c \
                    src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_module.c \
                    src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_acc.c \
                    src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_kernels_image.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_range.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_path.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_wait.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_regions.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_completion.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_win.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_acc_order.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_issue.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_select.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_route.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_stage.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_staged_wire.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_staged_core.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_staged_origin.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_staged_target.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_staged.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_trigger_done.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_trigger_proxy.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_trigger_exec.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_stream_queue.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_ipc.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_lock.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_notify.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_ctl.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_passive.c \
                    src/mpid/ch4/netmod/gdr/rma/gdr_rma_active.c \
                    src/mpid/ch4/netmod/gdr/adapt/gdr_verbs_rma_transport.c \
                    src/mpid/ch4/netmod/gdr/adapt/gdr_gpu_rma_device.c \
                    src/mpid/ch4/netmod/gdr/adapt/gdr_gpu_rma_stream.c \
                    src/mpid/ch4/netmod/gdr/gdr_rma_staged.c \
                    src/mpid/ch4/netmod/gdr/gdr_rma_ipc.c \
                    src/mpid/ch4/netmod/gdr/gdr_progress.c \
                    src/mpid/ch4/netmod/gdr/gdr_triggered_base.c \
                    src/mpid/ch4/netmod/gdr/gdr_peer_map.c \
                    src/mpid/ch4/netmod/gdr/gdr_triggered.c \
                    src/mpid/ch4/netmod/gdr/gdr_enqueue.c \
                    src/mpid/ch4/netmod/gdr/gdr_device_win.c \
                    src/mpid/ch4/netmod/gdr/gdr_notify.c

errnames_txt_files += src/mpid/ch4/netmod/gdr/errnames.txt

# The public headers, gdr's include/ (grafted as include/ here), installed as they lie
# there: kernel-triggered RMA's device header (mpix_gdr_device.cuh) beside mpi.h, and the
# __host__ __device__ protocol it is written over in include/gdr/ and, for the accumulate
# steps MPIX_Dev_accumulate applies, include/gdr/gpu/.  They include nothing but each
# other, mpi.h and the C library: -I$(includedir) is all a CUDA file needs.
include_HEADERS += src/mpid/ch4/netmod/gdr/include/mpix_gdr_device.cuh
gdrdevincludedir = $(includedir)/gdr
gdrdevinclude_HEADERS = src/mpid/ch4/netmod/gdr/include/gdr/gdr_rma_kernel_api.h \
                        src/mpid/ch4/netmod/gdr/include/gdr/gdr_rma_signal.h \
                        src/mpid/ch4/netmod/gdr/include/gdr/gdr_rma_trigger_ring.h
gdrdevgpuincludedir = $(includedir)/gdr/gpu
gdrdevgpuinclude_HEADERS = src/mpid/ch4/netmod/gdr/include/gdr/gpu/gdr_gpu_acc.h \
                           src/mpid/ch4/netmod/gdr/include/gdr/gpu/gdr_gpu_acc_atomic.h \
                           src/mpid/ch4/netmod/gdr/include/gdr/gpu/gdr_gpu_acc_body.h \
                           src/mpid/ch4/netmod/gdr/include/gdr/gpu/gdr_gpu_acc_real.h

# The GPU kernels (src/gpu/gdr_gpu_kernels.cu) as a fatbin image compiled into libmpi,
# by the same script as the top-level unit build; without nvcc (NVCC empty) an empty
# image, and kernels report that they were not built.  GPU architectures: maint/graft
# passes its --with-cuda-sm list on make's command line.
GDR_CUDA_SM = 80,90
src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_kernels_image.c: \
        $(top_srcdir)/src/mpid/ch4/netmod/gdr/gpu/build-kernels \
        $(top_srcdir)/src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_kernels.cu \
        $(top_srcdir)/src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_copy_body.h \
        $(top_srcdir)/src/mpid/ch4/netmod/gdr/include/gdr/gdr_rma_signal.h \
        $(top_srcdir)/src/mpid/ch4/netmod/gdr/include/gdr/gpu/gdr_gpu_acc_body.h \
        $(top_srcdir)/src/mpid/ch4/netmod/gdr/include/gdr/gpu/gdr_gpu_acc_real.h \
        $(top_srcdir)/src/mpid/ch4/netmod/gdr/include/gdr/gpu/gdr_gpu_acc_atomic.h \
        $(top_srcdir)/src/mpid/ch4/netmod/gdr/include/gdr/gpu/gdr_gpu_acc.h
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/src/mpid/ch4/netmod/gdr/gpu/build-kernels '$(NVCC)' \
	    '$(GDR_CUDA_SM)' $(top_srcdir)/src/mpid/ch4/netmod/gdr/gpu/gdr_gpu_kernels.cu $@ \
	    $(top_srcdir)/src/mpid/ch4/netmod/gdr/include

endif
