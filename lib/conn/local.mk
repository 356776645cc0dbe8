# lib/conn/local.mk: the conn layer's sources, tests and man pages.
