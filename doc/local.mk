# doc/local.mk: man pages not listed by a layer.
