# lib/qpfsm/local.mk: the qpfsm layer's sources and man pages.
lib_libezcore_la_SOURCES += lib/qpfsm/qpfsm.h lib/qpfsm/table.c lib/qpfsm/validate.c \
	lib/qpfsm/limits.c lib/qpfsm/modify.c lib/qpfsm/ladder.c lib/qpfsm/query.c \
	lib/qpfsm/names.c lib/qpfsm/sport.c lib/qpfsm/sqd.c lib/qpfsm/create.c

dist_man3_MANS += doc/man3/ez_qp_create.3 doc/man3/ez_qp_modify.3 doc/man3/ez_qp_validate.3 \
	doc/man3/ez_qp_ladder.3 doc/man3/ez_qp_query.3 doc/man3/ez_qp_drain_sq.3 \
	doc/man3/ez_qp_drain_cancel.3 doc/man3/ez_qp_async_event.3 doc/man3/ez_qp_state_str.3 \
	doc/man3/ez_qp_type_str.3 doc/man3/ez_qp_attr_mask_str.3 \
	doc/man3/ez_flow_label_to_udp_sport.3 doc/man3/ez_udp_sport_to_flow_label.3
