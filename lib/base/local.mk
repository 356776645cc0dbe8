# lib/base/local.mk: what every layer shares (errors, logging, version, struct sizes across versions, a min-heap).
lib_libezcore_la_SOURCES += lib/base/error.c lib/base/error.h lib/base/owner.c lib/base/owner.h lib/base/log.c lib/base/log.h \
	lib/base/abi.c lib/base/abi.h lib/base/heap.c lib/base/heap.h \
	lib/base/quarantine.c lib/base/quarantine.h \
	lib/base/assert.c lib/base/assert.h
