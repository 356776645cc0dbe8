# samples/local.mk: sample programs (public header only).
