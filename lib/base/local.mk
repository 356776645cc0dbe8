# lib/base/local.mk: what every layer shares (errors, logging, version).
lib_libezcore_la_SOURCES += lib/base/error.c lib/base/error.h lib/base/log.c lib/base/log.h
