# lib/srqpool/local.mk: the srqpool layer's sources and man pages.
lib_libezcore_la_SOURCES += lib/srqpool/srqpool.h lib/srqpool/pool.h \
	lib/srqpool/params.c lib/srqpool/freelist.c lib/srqpool/srqpool.c \
	lib/srqpool/buf.c lib/srqpool/desc.c lib/srqpool/hwcounters.c lib/srqpool/share.c

dist_man3_MANS += doc/man3/ez_srqpool_stats.3 doc/man3/ez_srqpool_errmsg.3 \
	doc/man3/ez_buf_data.3 doc/man3/ez_buf_len.3 doc/man3/ez_buf_release.3
