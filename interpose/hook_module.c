/* SPDX-License-Identifier: MIT
 *
 * hook_module.c - module and library hooks: feed the kernel registry
 * (runtime/track/ddp_kreg.c).
 *
 *   cuModuleLoad*, cuLibraryLoad*    image parsed once, after the driver
 *                                    accepted it (a corrupt image is the
 *                                    driver's error, returned unchanged; one
 *                                    we cannot read is a warning)
 *   cuModuleGetFunction,             handle -> kernel record (name, layout,
 *   cuLibraryGetKernel               types)
 *   cuKernelGetFunction              the CUfunction aliases the CUkernel's record
 *   cuModuleUnload, cuLibraryUnload  module marked unloaded (records stay)
 *
 * Also the registry's questions to the driver (cuFuncGetName,
 * cuFuncGetParamInfo / cuKernelGetParamInfo, device SM), asked as ddp's own
 * calls (inside flag set).
 *
 * Contract: any thread; the registry takes its own lock.  Reading a module
 * file (cuModuleLoad) allocates; these are not hot paths.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hook.h"
#include "hook_module.h"
#include "hook_resolve.h"
#include "ddp_kreg.h"
#include "ddp_port.h"

static int arch_known;

ddp_result hook_module_init(void)
{
	return ddp_kreg_init();
}

/* The current device's SM, learnt at the first module load. */
static void learn_arch(void)
{
	if (__atomic_load_n(&arch_known, __ATOMIC_ACQUIRE))
		return;
	uint32_t arch = ddp_port_device_arch();
	if (arch) {
		ddp_kreg_set_arch(arch);
		DDP_DEBUG(KREG, "device is sm_%u", arch);
	}
	__atomic_store_n(&arch_known, 1, __ATOMIC_RELEASE);
}

/* Reads a whole module file; NULL (and a warning) when it cannot. */
static void *read_file(const char *path, size_t *len)
{
	struct stat sb;
	void *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) == 0 && sb.st_size > 0 && sb.st_size < (1l << 31) &&
	    (buf = malloc((size_t)sb.st_size))) {
		size_t got = 0;
		while (got < (size_t)sb.st_size) {
			ssize_t n = read(fd, (char *)buf + got, (size_t)sb.st_size - got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		if (got != (size_t)sb.st_size) {
			free(buf);
			buf = NULL;
		}
		*len = got;
	}
	close(fd);
	return buf;
}

static void loaded_from_file(const void *handle, int is_library, const char *path)
{
	size_t len = 0;
	void *img;

	learn_arch();
	hook_inside_enter();
	img = read_file(path, &len);
	hook_inside_leave();
	if (!img) {
		DDP_WARN("cannot read module file %s; its kernels are tracked by name only", path);
		ddp_kreg_module_loaded(handle, is_library, NULL, 0, path);
		return;
	}
	ddp_kreg_module_loaded(handle, is_library, img, len, path);
	free(img);
}

static void loaded_from_image(const void *handle, int is_library, const void *image)
{
	learn_arch();
	ddp_kreg_module_loaded(handle, is_library, image, 0, "memory");
}

CUresult hook_cuModuleLoad(CUmodule *module, const char *fname)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuModuleLoad))
		return HOOK_REAL(cuModuleLoad)(module, fname);
	CUresult r = HOOK_REAL(cuModuleLoad)(module, fname);
	if (r == CUDA_SUCCESS && module && fname)
		loaded_from_file(*module, 0, fname);
	HOOK_FINISH(&f, r, (module, fname));
	return r;
}

CUresult hook_cuModuleLoadData(CUmodule *module, const void *image)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuModuleLoadData))
		return HOOK_REAL(cuModuleLoadData)(module, image);
	CUresult r = HOOK_REAL(cuModuleLoadData)(module, image);
	if (r == CUDA_SUCCESS && module && image)
		loaded_from_image(*module, 0, image);
	HOOK_FINISH(&f, r, (module, image));
	return r;
}

CUresult hook_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
				 CUjit_option *options, void **optionValues)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuModuleLoadDataEx))
		return HOOK_REAL(cuModuleLoadDataEx)(module, image, numOptions, options, optionValues);
	CUresult r = HOOK_REAL(cuModuleLoadDataEx)(module, image, numOptions, options, optionValues);
	if (r == CUDA_SUCCESS && module && image)
		loaded_from_image(*module, 0, image);
	HOOK_FINISH(&f, r, (module, image, numOptions, options, optionValues));
	return r;
}

CUresult hook_cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuModuleLoadFatBinary))
		return HOOK_REAL(cuModuleLoadFatBinary)(module, fatCubin);
	CUresult r = HOOK_REAL(cuModuleLoadFatBinary)(module, fatCubin);
	if (r == CUDA_SUCCESS && module && fatCubin)
		loaded_from_image(*module, 0, fatCubin);
	HOOK_FINISH(&f, r, (module, fatCubin));
	return r;
}

CUresult hook_cuModuleUnload(CUmodule hmod)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuModuleUnload))
		return HOOK_REAL(cuModuleUnload)(hmod);
	CUresult r = HOOK_REAL(cuModuleUnload)(hmod);
	if (r == CUDA_SUCCESS)
		ddp_kreg_module_unloaded(hmod);
	HOOK_FINISH(&f, r, (hmod));
	return r;
}

CUresult hook_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuModuleGetFunction))
		return HOOK_REAL(cuModuleGetFunction)(hfunc, hmod, name);
	CUresult r = HOOK_REAL(cuModuleGetFunction)(hfunc, hmod, name);
	if (r == CUDA_SUCCESS && hfunc && name) {
		struct ddp_kfunc *k = ddp_kreg_register(*hfunc, hmod, name);
		f.kname = k ? k->demangled : NULL;
	}
	HOOK_FINISH(&f, r, (hfunc, hmod, name));
	return r;
}

CUresult hook_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
				void **jitOptionsValues, unsigned int numJitOptions,
				CUlibraryOption *libraryOptions, void **libraryOptionValues,
				unsigned int numLibraryOptions)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuLibraryLoadData))
		return HOOK_REAL(cuLibraryLoadData)(library, code, jitOptions, jitOptionsValues,
						    numJitOptions, libraryOptions,
						    libraryOptionValues, numLibraryOptions);
	CUresult r = HOOK_REAL(cuLibraryLoadData)(library, code, jitOptions, jitOptionsValues,
						  numJitOptions, libraryOptions,
						  libraryOptionValues, numLibraryOptions);
	if (r == CUDA_SUCCESS && library && code)
		loaded_from_image(*library, 1, code);
	HOOK_FINISH(&f, r, (library, code, jitOptions, jitOptionsValues, numJitOptions,
			    libraryOptions, libraryOptionValues, numLibraryOptions));
	return r;
}

CUresult hook_cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
				    CUjit_option *jitOptions, void **jitOptionsValues,
				    unsigned int numJitOptions, CUlibraryOption *libraryOptions,
				    void **libraryOptionValues, unsigned int numLibraryOptions)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuLibraryLoadFromFile))
		return HOOK_REAL(cuLibraryLoadFromFile)(library, fileName, jitOptions,
							jitOptionsValues, numJitOptions,
							libraryOptions, libraryOptionValues,
							numLibraryOptions);
	CUresult r = HOOK_REAL(cuLibraryLoadFromFile)(library, fileName, jitOptions,
						      jitOptionsValues, numJitOptions,
						      libraryOptions, libraryOptionValues,
						      numLibraryOptions);
	if (r == CUDA_SUCCESS && library && fileName)
		loaded_from_file(*library, 1, fileName);
	HOOK_FINISH(&f, r, (library, fileName, jitOptions, jitOptionsValues, numJitOptions,
			    libraryOptions, libraryOptionValues, numLibraryOptions));
	return r;
}

CUresult hook_cuLibraryUnload(CUlibrary library)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuLibraryUnload))
		return HOOK_REAL(cuLibraryUnload)(library);
	CUresult r = HOOK_REAL(cuLibraryUnload)(library);
	if (r == CUDA_SUCCESS)
		ddp_kreg_module_unloaded(library);
	HOOK_FINISH(&f, r, (library));
	return r;
}

CUresult hook_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuLibraryGetKernel))
		return HOOK_REAL(cuLibraryGetKernel)(pKernel, library, name);
	CUresult r = HOOK_REAL(cuLibraryGetKernel)(pKernel, library, name);
	if (r == CUDA_SUCCESS && pKernel && name) {
		struct ddp_kfunc *k = ddp_kreg_register(*pKernel, library, name);
		f.kname = k ? k->demangled : NULL;
	}
	HOOK_FINISH(&f, r, (pKernel, library, name));
	return r;
}

CUresult hook_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuKernelGetFunction))
		return HOOK_REAL(cuKernelGetFunction)(pFunc, kernel);
	CUresult r = HOOK_REAL(cuKernelGetFunction)(pFunc, kernel);
	if (r == CUDA_SUCCESS && pFunc) {
		struct ddp_kfunc *k = ddp_kreg_lookup(kernel);
		if (!k)
			k = ddp_kreg_discover(kernel);
		ddp_kreg_alias(*pFunc, k);
		f.kname = k ? k->demangled : NULL;
	}
	HOOK_FINISH(&f, r, (pFunc, kernel));
	return r;
}
