# lib/conn/local.mk: the conn layer's sources and man pages.
lib_libezcore_la_SOURCES += \
	lib/conn/ctx.c lib/conn/ctx.h lib/conn/ctx_objects.c \
	lib/conn/conn_qp.c lib/conn/conn_qp.h \
	lib/conn/listener.c lib/conn/listener.h lib/conn/listener_hs.h \
	lib/conn/handoff.c lib/conn/handoff.h \
	lib/conn/conn.c lib/conn/conn_query.c lib/conn/conn_handle.c lib/conn/conn_handle.h \
	lib/conn/conn_fsm.c lib/conn/conn_fsm.h \
	lib/conn/msg.c lib/conn/msg.h lib/conn/msg_inline.h lib/conn/send_calls.c \
	lib/conn/rdma_calls.c lib/conn/send_wc.c lib/conn/recv.c \
	lib/conn/rndv.c lib/conn/rndv.h \
	lib/conn/sendq.c lib/conn/sendq.h \
	lib/conn/keepalive.c lib/conn/keepalive.h \
	lib/conn/conn_types.h \
	lib/conn/conn_auth.c lib/conn/conn_auth.h \
	lib/conn/pool.c lib/conn/pool.h \
	lib/conn/path.c lib/conn/path.h \
	lib/conn/rebuild.c lib/conn/rebuild.h \
	lib/conn/resume.c lib/conn/resume.h \
	lib/conn/session_index.c lib/conn/session_index.h \
	lib/conn/session_route.c lib/conn/session_route.h \
	lib/conn/conn_export.c lib/conn/conn_export.h \
	lib/conn/conn_pd.c lib/conn/conn_pd.h \
	lib/conn/peer_penalty.c lib/conn/peer_penalty.h \
	lib/conn/staging.c lib/conn/staging.h \
	lib/conn/compat_v0.c \
	lib/conn/atomic.c lib/conn/atomic.h \
	lib/conn/op_queue.c lib/conn/op_queue.h \
	lib/conn/queued.c lib/conn/queued.h

dist_man3_MANS += doc/man3/ez_accept.3 doc/man3/ez_conn_arg.3 doc/man3/ez_conn_close.3 \
	doc/man3/ez_conn_errmsg.3 doc/man3/ez_conn_info.3 doc/man3/ez_conn_req_data.3 \
	doc/man3/ez_conn_req_peer.3 doc/man3/ez_conn_stats.3 doc/man3/ez_connect.3 \
	doc/man3/ez_ctx_fd.3 doc/man3/ez_ctx_free.3 doc/man3/ez_ctx_new.3 \
	doc/man3/ez_ctx_process.3 doc/man3/ez_ctx_timeout_ms.3 doc/man3/ez_listen.3 \
	doc/man3/ez_ctx_set_limit.3 \
	doc/man3/ez_listener_close.3 doc/man3/ez_listener_port.3 doc/man3/ez_mr_addr.3 \
	doc/man3/ez_conn_export.3 doc/man3/ez_conn_revoke.3 \
	doc/man3/ez_mr_dereg.3 doc/man3/ez_mr_export.3 doc/man3/ez_mr_len.3 doc/man3/ez_mr_reg.3 \
	doc/man3/ez_read.3 doc/man3/ez_reject.3 doc/man3/ez_send.3 doc/man3/ez_send_mr.3 doc/man3/ez_write_imm.3 \
	doc/man3/ez_sendv.3 doc/man3/ez_srqpool_free.3 doc/man3/ez_srqpool_new.3 \
	doc/man3/ez_write.3 doc/man3/ez_conn_opts.3 \
	doc/man3/ez_connect_sz.3 doc/man3/ez_accept_sz.3 doc/man3/ez_listen_sz.3 \
	doc/man3/ez_srqpool_new_sz.3 doc/man3/ez_srqpool_stats_sz.3 doc/man3/ez_conn_info_sz.3 \
	doc/man3/ez_conn_stats_sz.3 doc/man3/ez_conn_path_info.3 doc/man3/ez_conn_path_info_sz.3
# Issue 24 (api).
dist_man3_MANS += doc/man3/ez_conn_accept_data.3 doc/man3/ez_atomic_cas.3 \
	doc/man3/ez_atomic_fadd.3
# Regions given with the connection (issue 42).
dist_man3_MANS += doc/man3/ez_conn_peer_exports.3 doc/man3/ez_conn_own_exports.3
