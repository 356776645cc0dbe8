# lib/loop/local.mk: the event loop layer (name lookup off the loop).
lib_libezcore_la_SOURCES += lib/loop/lookup.c lib/loop/lookup.h
