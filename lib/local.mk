# lib/local.mk: what every layer shares (errors, logging).
lib_libezcore_la_SOURCES += lib/error.c lib/error.h lib/log.c lib/log.h
