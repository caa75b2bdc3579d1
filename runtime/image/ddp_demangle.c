/* SPDX-License-Identifier: MIT
 *
 * ddp_demangle.c - Itanium C++ demangling of kernel names through the
 * demangler of libstdc++ (__cxa_demangle), declared here by hand so this
 * file stays C.
 *
 * Contract: pure function; any thread (__cxa_demangle is reentrant with a
 * NULL output buffer).  Names that are not mangled (extern "C" kernels) or
 * that fail to demangle give NULL; so do absurdly long names, which the
 * recursive demangler need not see.
 */
#include <stdlib.h>
#include <string.h>

#include "ddp_fatbin.h"

#define DEMANGLE_NAME_MAX 65536u /* longer names are not demangled */

char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

char *ddp_demangle(const char *mangled)
{
	int status = -1;
	if (!mangled || strncmp(mangled, "_Z", 2) != 0 ||
	    strnlen(mangled, DEMANGLE_NAME_MAX) >= DEMANGLE_NAME_MAX)
		return NULL;
	char *s = __cxa_demangle(mangled, NULL, NULL, &status);
	if (status != 0) {
		free(s);
		return NULL;
	}
	return s;
}
