# lib/device/local.mk: a verbs device: PD, CQ, async events, send slots, MRs, source-port mechanism.
lib_libezcore_la_SOURCES += \
	lib/device/device.c lib/device/device.h \
	lib/device/cq.h \
	lib/device/sendslab.c lib/device/sendslab.h \
	lib/device/mr.c lib/device/mr.h \
	lib/device/bigbuf.c lib/device/bigbuf.h \
	lib/device/flowdev.c \
	lib/device/reaper.c lib/device/reaper.h
