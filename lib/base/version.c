/* version.c: the library's version string. */
#include "config.h"

#include "easyrdma.h"

const char *ez_version(void)
{
	return PACKAGE_VERSION;
}
