# lib/wire/local.mk: the pure codecs (handshake, auth, replay, options, flow policy, addresses, session resume).
lib_libezcore_la_SOURCES += \
	lib/wire/addr.c lib/wire/addr.h \
	lib/wire/handshake.c lib/wire/handshake.h \
	lib/wire/auth.c lib/wire/auth.h \
	lib/wire/replay.c lib/wire/replay.h \
	lib/wire/opts.c lib/wire/opts.h \
	lib/wire/flow.c lib/wire/flow.h \
	lib/wire/rx_check.c lib/wire/rx_check.h \
	lib/wire/penalty.c lib/wire/penalty.h \
	lib/wire/budget.c lib/wire/budget.h lib/wire/rate.h \
	lib/wire/rndv.c lib/wire/rndv.h \
	lib/wire/settle.c lib/wire/settle.h \
	lib/wire/resume.c lib/wire/resume.h \
	lib/wire/exports.c lib/wire/exports.h \
	lib/wire/be.h \
	lib/wire/bye.h \
	lib/wire/imm.h
# The shared-secret check (auth.c) uses OpenSSL's libcrypto.
AM_CPPFLAGS += $(CRYPTO_CFLAGS)
lib_libezcore_la_LIBADD += $(CRYPTO_LIBS)
