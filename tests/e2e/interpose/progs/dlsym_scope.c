/* SPDX-License-Identifier: MIT
 *
 * dlsym_scope.c - dlsym(RTLD_DEFAULT, name) from a library loaded with
 * RTLD_LOCAL must see that library's own dependencies (glibc resolves
 * RTLD_DEFAULT in the caller's scope).  Built three ways by
 * tests/unit/interpose_edges.mk:
 *   -DSCOPE_DEP   libscope_dep.so: defines scope_value and cuScopeProbe
 *                 (a cu[A-Z] name libddp does not hook)
 *   -DSCOPE_LIB   libscope_lib.so: depends on libscope_dep.so; scope_find()
 *                 calls dlsym(RTLD_DEFAULT, name)
 *   (neither)     dlsym_scope LIB: dlopen(LIB, RTLD_LOCAL), then prints
 *                 "NAME found|null" for scope_value, cuScopeProbe and
 *                 cuMemAlloc_v2, and "hooked yes|no" whether cuMemAlloc_v2
 *                 was answered from libddp
 */
#include <dlfcn.h>
#include <stdio.h>

#if defined(SCOPE_DEP)
int scope_value = 42;
int cuScopeProbe(void) { return 7; }
#elif defined(SCOPE_LIB)
extern int scope_value;
int scope_link(void) { return scope_value; } /* keeps the dependency */
void *scope_find(const char *name)
{
	/* not a tail call: glibc must see this library as the caller */
	void *volatile p = dlsym(RTLD_DEFAULT, name);
	return p;
}
#else
#include <string.h>
int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_LOCAL | RTLD_NOW);
	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	void *(*find)(const char *) = (void *(*)(const char *))dlsym(h, "scope_find");
	if (!find)
		return 1;
	const char *names[] = { "scope_value", "cuScopeProbe" };
	for (int i = 0; i < 2; i++)
		printf("%s %s\n", names[i], find(names[i]) ? "found" : "null");
	Dl_info di;
	void *p = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
	printf("hooked %s\n",
	       p && dladdr(p, &di) && di.dli_fname && strstr(di.dli_fname, "libddp") ? "yes" : "no");
	return 0;
}
#endif
