# lib/loop/local.mk: the event loop layer: epoll set, watches, timers, deferred work, name lookup off the loop.
lib_libezcore_la_SOURCES += lib/loop/loop.c lib/loop/loop.h lib/loop/lookup.c lib/loop/lookup.h \
	lib/loop/mailbox.c lib/loop/mailbox.h
