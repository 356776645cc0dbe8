# lib/qpfsm/local.mk: the qpfsm layer's sources, tests and man pages.
