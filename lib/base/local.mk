# lib/base/local.mk: what every layer shares (errors, logging, version, struct sizes across versions).
lib_libezcore_la_SOURCES += lib/base/error.c lib/base/error.h lib/base/log.c lib/base/log.h \
	lib/base/abi.c lib/base/abi.h
