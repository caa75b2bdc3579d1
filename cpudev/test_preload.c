/* SPDX-License-Identifier: MIT
 *
 * test_preload.c - cuGetProcAddress under LD_PRELOAD: the CPU device must
 * hand out its OWN functions, as the real driver does, even when a preloaded
 * library (libddp.so in real use; libsim_preload_probe.so here) exports the
 * same cu* names.  (It used to take the addresses through its GOT and so
 * handed out the preloaded library's symbols.)
 *
 * The test re-executes itself once with LD_PRELOAD set to
 * libsim_preload_probe.so next to the executable, then loads libcuda.so.1
 * with dlopen (RTLD_LOCAL, like cudart) and compares every answer with
 * dlsym(handle, name), which looks in libcuda.so.1 itself.
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <unistd.h>

#define SIM_PROBE_MARK 4242
#define PRELOADED_ENV "SIM_TEST_PRELOADED"

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *lib;
static get_proc_fn get_proc;

static void *answer(const char *name, int flags)
{
	void *p = NULL;
	CUdriverProcAddressQueryResult st = 99;

	if (get_proc(name, &p, 12080, (cuuint64_t)flags, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS)
		return NULL;
	return p;
}

TEST(the_probe_is_preloaded)
{
	/* The precondition: the global scope's cuMemAlloc_v2 is the probe's. */
	CUresult (*global_alloc)(CUdeviceptr *, size_t);
	*(void **)&global_alloc = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
	REQUIRE(global_alloc != NULL);
	CUdeviceptr d = 0;
	CHECK_EQ_INT(global_alloc(&d, 16), SIM_PROBE_MARK);
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	REQUIRE(lib != NULL);
	get_proc = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
	REQUIRE(get_proc != NULL);
	CHECK(dlsym(lib, "cuMemAlloc_v2") != (void *)global_alloc);
}

TEST(get_proc_address_answers_the_drivers_own_functions)
{
	REQUIRE(get_proc != NULL);
	static const struct { const char *base, *sym; int flags; } cases[] = {
		{"cuMemAlloc", "cuMemAlloc_v2", 0},             /* hand-written      */
		{"cuMemcpyHtoD", "cuMemcpyHtoD_v2", 0},         /* generated, legacy */
		{"cuMemcpyHtoD", "cuMemcpyHtoD_v2_ptds", 2},    /* not preloaded     */
		{"cuGraphCreate", "cuGraphCreate", 0},          /* unsupported stub  */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		void *got = answer(cases[i].base, cases[i].flags), *own = dlsym(lib, cases[i].sym);
		if (!got || got != own || got == dlsym(RTLD_DEFAULT, cases[i].sym))
			printf("# %s (flags %d): cuGetProcAddress %p, libcuda's %s %p, global %p\n",
			       cases[i].base, cases[i].flags, got, cases[i].sym, own,
			       dlsym(RTLD_DEFAULT, cases[i].sym));
		CHECK(got != NULL && got == own);
	}
}

TEST(the_answers_work)
{
	REQUIRE(get_proc != NULL);
	CUresult (*init)(unsigned);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*set_current)(CUcontext);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*free_)(CUdeviceptr);
	CUresult (*graph)(CUgraph *, unsigned);
	*(void **)&init = answer("cuInit", 0);
	*(void **)&retain = answer("cuDevicePrimaryCtxRetain", 0);
	*(void **)&set_current = answer("cuCtxSetCurrent", 0);
	*(void **)&alloc = answer("cuMemAlloc", 0);
	*(void **)&htod = answer("cuMemcpyHtoD", 0);
	*(void **)&dtoh = answer("cuMemcpyDtoH", 0);
	*(void **)&free_ = answer("cuMemFree", 0);
	*(void **)&graph = answer("cuGraphCreate", 0);
	REQUIRE(init && retain && set_current && alloc && htod && dtoh && free_ && graph);
	REQUIRE(init(0) == CUDA_SUCCESS);
	CUcontext c;
	REQUIRE(retain(&c, 0) == CUDA_SUCCESS);
	REQUIRE(set_current(c) == CUDA_SUCCESS);
	CUdeviceptr d = 0;
	CHECK_EQ_INT(alloc(&d, 64), CUDA_SUCCESS);
	REQUIRE(d != 0);
	char out[64] = "through the driver's own entry points", back[64] = "";
	CHECK_EQ_INT(htod(d, out, sizeof(out)), CUDA_SUCCESS);
	CHECK_EQ_INT(dtoh(back, d, sizeof(back)), CUDA_SUCCESS);
	CHECK_EQ_STR(back, out);
	CHECK_EQ_INT(free_(d), CUDA_SUCCESS);
	CUgraph g;
	CHECK_EQ_INT(graph(&g, 0), CUDA_ERROR_NOT_SUPPORTED);
}

int main(int argc, char **argv)
{
	if (!getenv(PRELOADED_ENV)) {
		char exe[PATH_MAX], probe[PATH_MAX + 64];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0) {
			printf("not ok - reexec: cannot read /proc/self/exe\n");
			return 1;
		}
		exe[n] = 0;
		*strrchr(exe, '/') = 0;
		snprintf(probe, sizeof(probe), "%s/libsim_preload_probe.so", exe);
		setenv("LD_PRELOAD", probe, 1);
		setenv(PRELOADED_ENV, "1", 1);
		fflush(stdout);
		execv("/proc/self/exe", argv);
		printf("not ok - reexec: execv failed\n");
		return 1;
	}
	return check_main(argc, argv);
}
