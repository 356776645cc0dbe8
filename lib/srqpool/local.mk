# lib/srqpool/local.mk: the srqpool layer's sources, tests and man pages.
