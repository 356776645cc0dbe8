/* conn.h: ez_connect/ez_accept and the CM side of a connection (conn.c); the structs are in conn_types.h. */
#ifndef EZ_CONN_CONN_H
#define EZ_CONN_CONN_H

#include "conn_types.h"

#endif
