/* SPDX-License-Identifier: MIT
 *
 * hook_module.c - what the module and library hooks do: feed the kernel
 * registry (runtime/track/ddp_kreg.c).  The hook bodies are generated from
 * hooks.def, whose KREG_* after-columns name the actions here (run only when
 * the driver call succeeded).
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

void hook_module_loaded_file(const void *handle, int is_library, const char *path)
{
	if (handle && path)
		loaded_from_file(handle, is_library, path);
}

void hook_module_loaded_image(const void *handle, int is_library, const void *image)
{
	if (handle && image)
		loaded_from_image(handle, is_library, image);
}

void hook_module_unloaded(const void *handle)
{
	ddp_kreg_module_unloaded(handle);
}

void hook_module_kernel(struct hook_frame *f, const void *fn, const void *handle, const char *name)
{
	if (!fn || !name)
		return;
	struct ddp_kfunc *k = ddp_kreg_register(fn, handle, name);
	f->kname = k ? k->demangled : NULL;
}

void hook_module_alias(struct hook_frame *f, const void *fn, const void *kernel)
{
	if (!fn)
		return;
	struct ddp_kfunc *k = ddp_kreg_lookup(kernel);
	if (!k)
		k = ddp_kreg_discover(kernel);
	ddp_kreg_alias(fn, k);
	f->kname = k ? k->demangled : NULL;
}
