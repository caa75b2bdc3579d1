/* SPDX-License-Identifier: MIT
 *
 * drv_loader.c - behaves like cudart: dlopen("libcuda.so.1"),
 * dlsym("cuGetProcAddress_v2"), and every other entry point through it.
 *
 *   drv_loader table HOOKS_DEF     for every base name of hooks.def and flags
 *                                  0, 1, 2 (cudaVersion CUDA_VERSION): which
 *                                  decorated symbol the answer is (compared with
 *                                  dlsym of each decorated name) and where it
 *                                  lives; one line per (base, flags)
 *   drv_loader calls FATBIN        for flags 0, 1, 2: init, alloc, copies,
 *                                  module, launch, free through the answers;
 *                                  prints "call SYMBOL" for each hooked call it
 *                                  makes, naming the symbol the answer is
 *
 * The test compares the symbols chosen with and without LD_PRELOAD (same
 * ABI) and the "call" lines with libddp's per-hook counters.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static gpa_fn gpa;
static void *lib;

static const char *where(void *p)
{
	Dl_info di;
	if (!p)
		return "null";
	if (!dladdr(p, &di) || !di.dli_fname)
		return "unknown";
	return strstr(di.dli_fname, "libddp") ? "libddp" : strstr(di.dli_fname, "libcuda") ? "libcuda" : "other";
}

/* Which decorated symbol of base is p?  Compared with dlsym(RTLD_DEFAULT) (the
 * hooks when libddp is preloaded) and dlsym(lib) (the driver). */
static const char *which(const char *base, void *p, char *out, size_t n)
{
	static const char *const sfx[] = { "", "_v2", "_v3", "_ptsz", "_ptds", "_v2_ptsz", "_v2_ptds" };
	char name[160];
	for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
		snprintf(name, sizeof name, "%s%s", base, sfx[i]);
		if ((p && dlsym(RTLD_DEFAULT, name) == p) || (p && dlsym(lib, name) == p)) {
			snprintf(out, n, "%s", name);
			return out;
		}
	}
	snprintf(out, n, "%s?", base);
	return out;
}

static int load(void)
{
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "drv_loader: %s\n", dlerror());
		return 1;
	}
	gpa = (gpa_fn)dlsym(lib, "cuGetProcAddress_v2");
	if (!gpa) {
		fprintf(stderr, "drv_loader: no cuGetProcAddress_v2\n");
		return 1;
	}
	return 0;
}

static int table(const char *def)
{
	FILE *f = fopen(def, "r");
	char line[4096], last[128] = "";
	if (!f || load())
		return 1;
	while (fgets(line, sizeof line, f)) {
		char base[128];
		if (sscanf(line, "HOOK(%127[A-Za-z0-9_],", base) != 1 || !strcmp(base, last))
			continue;
		snprintf(last, sizeof last, "%s", base);
		for (int flags = 0; flags <= 2; flags++) {
			void *p = NULL;
			char w[160];
			CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
			CUresult r = gpa(base, &p, CUDA_VERSION, (cuuint64_t)flags, &st);
			printf("%s flags %d: r %d status %d -> %s in %s\n", base, flags, (int)r, (int)st,
			       r == CUDA_SUCCESS ? which(base, p, w, sizeof w) : "-",
			       r == CUDA_SUCCESS ? where(p) : "-");
		}
	}
	fclose(f);
	return 0;
}

#define GET(var, base, flags) do { \
	CUdriverProcAddressQueryResult st_; \
	if (gpa(base, (void **)&var, CUDA_VERSION, flags, &st_) != CUDA_SUCCESS || !var) { \
		fprintf(stderr, "drv_loader: no %s\n", base); return 1; } \
	which(base, (void *)var, sym_##var, sizeof sym_##var); \
} while (0)
#define CALL(var, args) do { \
	CUresult r_ = var args; \
	printf("call %s\n", sym_##var); \
	if (r_ != CUDA_SUCCESS) { fprintf(stderr, "drv_loader: %s failed: %d\n", sym_##var, (int)r_); return 1; } \
} while (0)

static int calls(const char *fatbin)
{
	FILE *fb = fopen(fatbin, "rb");
	static unsigned char img[1 << 22];
	size_t len = fb ? fread(img, 1, sizeof img, fb) : 0;
	if (fb)
		fclose(fb);
	if (!len || load())
		return 1;
	for (int flags = 0; flags <= 2; flags++) {
		CUresult (*init)(unsigned);
		CUresult (*devget)(CUdevice *, int);
		CUresult (*retain)(CUcontext *, CUdevice);
		CUresult (*setcur)(CUcontext);
		CUresult (*alloc)(CUdeviceptr *, size_t);
		CUresult (*freep)(CUdeviceptr);
		CUresult (*htod)(CUdeviceptr, const void *, size_t);
		CUresult (*dtoh)(void *, CUdeviceptr, size_t);
		CUresult (*load_data)(CUmodule *, const void *);
		CUresult (*getfn)(CUfunction *, CUmodule, const char *);
		CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				   unsigned, CUstream, void **, void **);
		CUresult (*sync)(CUstream);
		CUresult (*unload)(CUmodule);
		char sym_init[160], sym_devget[160], sym_retain[160], sym_setcur[160], sym_alloc[160],
			sym_freep[160], sym_htod[160], sym_dtoh[160], sym_load_data[160], sym_getfn[160],
			sym_launch[160], sym_sync[160], sym_unload[160];
		GET(init, "cuInit", flags);
		GET(devget, "cuDeviceGet", flags);
		GET(retain, "cuDevicePrimaryCtxRetain", flags);
		GET(setcur, "cuCtxSetCurrent", flags);
		GET(alloc, "cuMemAlloc", flags);
		GET(freep, "cuMemFree", flags);
		GET(htod, "cuMemcpyHtoD", flags);
		GET(dtoh, "cuMemcpyDtoH", flags);
		GET(load_data, "cuModuleLoadData", flags);
		GET(getfn, "cuModuleGetFunction", flags);
		GET(launch, "cuLaunchKernel", flags);
		GET(sync, "cuStreamSynchronize", flags);
		GET(unload, "cuModuleUnload", flags);
		CUdevice dev;
		CUcontext ctx;
		CUmodule mod;
		CUfunction fn;
		CUdeviceptr d;
		float h[64], a = 2.0f;
		int n = 64;
		for (int i = 0; i < n; i++)
			h[i] = (float)i;
		CALL(init, (0));
		CALL(devget, (&dev, 0));
		CALL(retain, (&ctx, dev));
		CALL(setcur, (ctx));
		CALL(alloc, (&d, sizeof h));
		CALL(htod, (d, h, sizeof h));
		CALL(load_data, (&mod, img));
		CALL(getfn, (&fn, mod, "c_scale"));
		void *params[] = { &d, &a, &n };
		CALL(launch, (fn, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
		CALL(sync, (NULL));
		CALL(dtoh, (h, d, sizeof h));
		CALL(freep, (d));
		CALL(unload, (mod));
		printf("flags %d: h[5] = %g\n", flags, h[5]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "table"))
		return table(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "calls"))
		return calls(argv[2]);
	fprintf(stderr, "usage: drv_loader table HOOKS_DEF | calls FATBIN\n");
	return 2;
}
