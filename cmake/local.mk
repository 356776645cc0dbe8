# cmake/local.mk: the CMake package config (find_package(easyrdma) and the
# imported target easyrdma::easyrdma), installed by make install.
#
# Written at make time, not by configure, so that the paths are the expanded
# $(libdir) and $(includedir) (configure's values still hold ${prefix}).
cmakeconfigdir = $(libdir)/cmake/easyrdma
cmakeconfig_DATA = cmake/easyrdma-config.cmake cmake/easyrdma-config-version.cmake
EXTRA_DIST += cmake/easyrdma-config.cmake.in cmake/easyrdma-config-version.cmake.in
CLEANFILES += $(cmakeconfig_DATA)

ez_cmake_edit = sed -e 's|@libdir[@]|$(libdir)|g' \
	-e 's|@includedir[@]|$(includedir)|g' \
	-e 's|@PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g' \
	-e 's|@EZ_VERSION_MAJOR[@]|$(EZ_VERSION_MAJOR)|g' \
	-e 's|@EZ_VERSION_MINOR[@]|$(EZ_VERSION_MINOR)|g' \
	-e 's|@EZ_SONAME_MAJOR[@]|$(EZ_SONAME_MAJOR)|g' \
	-e 's|@have_mlx5dv_01[@]|$(EZ_HAVE_MLX5DV_01)|g'

cmake/easyrdma-config.cmake: $(srcdir)/cmake/easyrdma-config.cmake.in Makefile
	$(AM_V_GEN)$(MKDIR_P) cmake && $(ez_cmake_edit) $(srcdir)/cmake/easyrdma-config.cmake.in > $@-t && mv $@-t $@
cmake/easyrdma-config-version.cmake: $(srcdir)/cmake/easyrdma-config-version.cmake.in Makefile
	$(AM_V_GEN)$(MKDIR_P) cmake && $(ez_cmake_edit) $(srcdir)/cmake/easyrdma-config-version.cmake.in > $@-t && mv $@-t $@
