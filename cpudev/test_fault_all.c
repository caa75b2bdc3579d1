/* SPDX-License-Identifier: MIT
 *
 * test_fault_all.c - every entry point of sim_api.def (both flavours of the
 * stream-ordered ones) can be made to fail by DDP_SIM_FAIL under its
 * exported name: with a rule NAME:1:777 for each, the first call of each,
 * found with dlsym in the CPU device's libcuda.so.1, returns 777 before its body runs (so it is called with
 * no arguments).  sim_faults.def's SIM_FAULT_OWN entries (whose bodies count
 * their own calls) are left out.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const syms[] = {
#define SIM_FN(base, sym, ver) #sym,
#define SIM_STREAM(base, sym, ver, ptsym, ...) #sym, #ptsym,
#include "sim_api.def"
#undef SIM_FN
#undef SIM_STREAM
};

static const char *const own[] = {
#define SIM_FAULT_DEFAULT(sym, code)
#define SIM_FAULT_OWN(sym) #sym,
#include "sim_faults.def"
#undef SIM_FAULT_DEFAULT
#undef SIM_FAULT_OWN
};

#define NSYMS (sizeof(syms) / sizeof(syms[0]))

static int is_own(const char *s)
{
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(own[i], s))
			return 1;
	return 0;
}

int main(void)
{
	static char rules[NSYMS * 80];
	size_t len = 0, tested = 0;
	int fails = 0;

	for (size_t i = 0; i < NSYMS; i++)
		if (!is_own(syms[i]))
			len += (size_t)snprintf(rules + len, sizeof(rules) - len, "%s%s:1:777", len ? "," : "", syms[i]);
	setenv("DDP_SIM_FAIL", rules, 1);
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("not ok - cannot load libcuda.so.1: %s\n", dlerror());
		return 1;
	}
	for (size_t i = 0; i < NSYMS; i++) {
		if (is_own(syms[i]))
			continue;
		void *fn = dlsym(lib, syms[i]);
		if (!fn) {
			printf("not ok - %s is not exported\n", syms[i]);
			fails++;
			continue;
		}
		int rc = (int)((CUresult(*)(void))fn)();
		tested++;
		if (rc != 777) {
			printf("not ok - %s:1:777 did not fail its first call (it returned %d)\n", syms[i], rc);
			fails++;
		}
	}
	printf("%s - DDP_SIM_FAIL fails the first call of each of %zu entry points under its exported name\n",
	       fails ? "not ok" : "ok", tested);
	printf("%s - every entry point of sim_api.def but %zu with their own count is covered (%zu of %zu)\n",
	       tested + sizeof(own) / sizeof(own[0]) == NSYMS ? "ok" : "not ok", sizeof(own) / sizeof(own[0]), tested,
	       (size_t)NSYMS);
	return fails || tested + sizeof(own) / sizeof(own[0]) != NSYMS;
}
