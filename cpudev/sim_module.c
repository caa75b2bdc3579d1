/* SPDX-License-Identifier: MIT
 *
 * sim_module.c - modules, libraries and functions: loading real nvcc images
 * (fatbin, cudart wrapper, cubin, PTX) with the shared reader
 * (runtime/image/ddp_fatbin.h) and pairing each kernel with its host
 * implementation (sim_exec.h: sim_kernels_find_sized, by name and parameter
 * sizes).  An image embedded in a
 * shared library brings "<library>.kern.so" along (sim_kernels_image_loaded).
 *
 * cuModuleGetFunction(name): the cubin must have the kernel (else
 * CUDA_ERROR_NOT_FOUND), a loaded kernel library must implement it (else
 * CUDA_ERROR_NOT_FOUND and one line `simcuda: no host implementation of
 * kernel X (looked in ...)`), and the cubin's parameter sizes must equal the
 * host signature's (else CUDA_ERROR_INVALID_IMAGE and a line naming the
 * parameter): a mismatch would otherwise hand the kernel garbage.
 *
 * cuModuleGetGlobal / cuLibraryGetGlobal (device variables): see
 * sim_get_global.
 *
 * A CUlibrary wraps a module; a CUkernel is the same object as the CUfunction
 * (so a CUkernel cast to CUfunction launches, as with the driver).  Unloaded
 * modules free their reader data; their handles and function objects are
 * marked dead and kept, so stale handles fail with CUDA_ERROR_INVALID_HANDLE.
 *
 * Loading mode (CUDA_MODULE_LOADING, read once: EAGER, else LAZY, the
 * driver's default since 12.2; PyTorch sets LAZY).  Either way a load first
 * checks the fatbin's entry headers (no decompression): no entry the device
 * can run (SASS sm_9x with minor <= 0, or PTX <= compute_90) is
 * CUDA_ERROR_NO_BINARY_FOR_GPU, as the driver answers.  EAGER reads the whole
 * image at load.  LAZY reads it when a kernel or variable of the module is
 * first asked for (cuLibraryGetKernel, cuModuleGetFunction, ...Global), and
 * only for images that lie in a loaded executable or shared library (they
 * live as long as the handle may be used); an image in a buffer the program
 * owns is read at load, since the program may free it after the call, and
 * so is an image of no known kind (CUDA_ERROR_INVALID_IMAGE at load).  A
 * fatbin whose payload is malformed is CUDA_ERROR_INVALID_IMAGE at first use.
 *
 * Contract: any thread may call.  mod->mu guards the lazily filled function
 * objects of a module and its deferred reading (a lazy module is read under
 * its own lock; other modules are not held up).
 */
#include "sim_internal.h"
#include "ddp_fatbin.h"
#include "sim_exec.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* B2's half is linked into the same library; weak so that the driver half
 * still builds and reports "no host implementation" without it. */
#pragma weak sim_kernels_find
#pragma weak sim_kernels_find_sized
#pragma weak sim_kernels_find_global
#pragma weak sim_kernels_searched
#pragma weak sim_kernels_image_loaded

struct CUmod_st {
	uint32_t magic;
	struct CUctx_st *ctx;
	pthread_mutex_t mu;              /* guards funcs[], image, read_rc      */
	const void *image;               /* LAZY: not read yet (NULL once read) */
	CUresult read_rc;                /* result of the (deferred) reading    */
	struct ddp_module_info info;     /* from the reader                     */
	struct CUfunc_st **funcs;        /* one per info.kernels[i], lazily     */
};

struct CUlib_st {
	uint32_t magic;
	struct CUmod_st *mod;
};

struct CUfunc_st *sim_func_get(const void *handle)
{
	struct CUfunc_st *f = (struct CUfunc_st *)handle;
	return f && f->magic == SIM_MAGIC_FUNC ? f : NULL;
}

static struct CUmod_st *sim_mod_get(CUmodule h)
{
	return h && h->magic == SIM_MAGIC_MODULE ? h : NULL;
}

static struct CUlib_st *sim_lib_get(CUlibrary h)
{
	return h && h->magic == SIM_MAGIC_LIB ? h : NULL;
}

/* ---- loading mode and the binary check */

static pthread_once_t sim_mode_once = PTHREAD_ONCE_INIT;
static CUmoduleLoadingMode sim_mode = CU_MODULE_LAZY_LOADING;

static void sim_mode_read(void)
{
	const char *v = sim_setting_module_loading();
	sim_mode = v && !strcmp(v, "EAGER") ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
	SIM_VERBOSE("module loading mode %s", sim_mode == CU_MODULE_LAZY_LOADING ? "LAZY" : "EAGER");
}

static CUmoduleLoadingMode sim_loading_mode(void)
{
	pthread_once(&sim_mode_once, sim_mode_read);
	return sim_mode;
}

/* Whether a fatbin (or a cudart wrapper around one) holds an entry the
 * device can run, from the entry headers alone: CUDA_SUCCESS,
 * CUDA_ERROR_NO_BINARY_FOR_GPU, or CUDA_ERROR_INVALID_IMAGE when the headers
 * are unreadable.  Other image kinds (cubin, PTX) are CUDA_SUCCESS here: the
 * reader judges them.  Only the first container is looked at (len 0). */
static CUresult sim_image_check_binary(const char *what, const void *image, size_t len)
{
	const uint8_t *img = image;
	enum ddp_image_kind kind = ddp_image_kind(image, len);
	char err[256] = "";
	if (kind == DDP_IMAGE_WRAPPER) {
		if (len)
			return CUDA_SUCCESS; /* a wrapper copied into a buffer: the reader says */
		memcpy(&img, (const uint8_t *)image + 8, sizeof(img));
		if (!img || ddp_image_kind(img, 0) != DDP_IMAGE_FATBIN)
			return CUDA_SUCCESS;
	} else if (kind != DDP_IMAGE_FATBIN) {
		return CUDA_SUCCESS;
	}
	size_t n = 0, n2 = 0;
	if (ddp_fatbin_entries(img, len, NULL, 0, &n, err, sizeof(err)) != DDP_OK) {
		sim_msg("%s: cannot read the module image: %s", what, err[0] ? err : "malformed");
		return CUDA_ERROR_INVALID_IMAGE;
	}
	struct ddp_fatbin_entry *e = calloc(n ? n : 1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc = CUDA_ERROR_NO_BINARY_FOR_GPU;
	if (ddp_fatbin_entries(img, len, e, n, &n2, err, sizeof(err)) != DDP_OK) {
		rc = CUDA_ERROR_INVALID_IMAGE;
		goto out;
	}
	for (size_t i = 0; i < n && i < n2; i++) {
		if ((e[i].kind == 2 && e[i].arch / 10 == SIM_SM / 10 && e[i].arch <= SIM_SM) ||
		    (e[i].kind == 1 && e[i].arch <= SIM_SM)) {
			rc = CUDA_SUCCESS;
			break;
		}
	}
	if (rc == CUDA_ERROR_NO_BINARY_FOR_GPU)
		SIM_VERBOSE("%s: the fatbin has no entry for sm_%u (%zu entries)", what, SIM_SM, n);
out:
	free(e);
	return rc;
}

/* Reads m's image into m->info and m->funcs. */
static CUresult sim_mod_read(const char *what, struct CUmod_st *m, const void *image, size_t len)
{
	char err[256] = "";
	if (ddp_module_parse(image, len, SIM_SM, &m->info, err, sizeof(err)) != DDP_OK) {
		sim_msg("%s: cannot read the module image: %s", what, err[0] ? err : "malformed");
		return CUDA_ERROR_INVALID_IMAGE;
	}
	m->funcs = calloc(m->info.nkernels ? m->info.nkernels : 1, sizeof(*m->funcs));
	if (!m->funcs) {
		ddp_module_info_free(&m->info);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* A library's embedded image: its kernels are in <library>.kern.so. */
	if (sim_kernels_image_loaded)
		sim_kernels_image_loaded(image);
	SIM_VERBOSE("%s: module with %zu kernels (sm_%u)", what, m->info.nkernels, m->info.arch);
	return CUDA_SUCCESS;
}

/* A LAZY module's image is read here, at the first question that needs it;
 * the answer (success or the reading's error) stays the module's. */
static CUresult sim_mod_ready(struct CUmod_st *m)
{
	pthread_mutex_lock(&m->mu);
	if (m->image) {
		m->read_rc = sim_mod_read("lazy module load", m, m->image, 0);
		m->image = NULL;
	}
	CUresult rc = m->read_rc;
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* Makes a module from an image (len 0: its size from its headers): read now
 * (EAGER, or a buffer the program owns) or at first use (LAZY). */
static CUresult sim_mod_make(const char *what, const void *image, size_t len, struct CUctx_st *ctx,
			     struct CUmod_st **out)
{
	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = sim_image_check_binary(what, image, len);
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUmod_st *m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	Dl_info dl;
	if (!len && sim_loading_mode() == CU_MODULE_LAZY_LOADING && ddp_image_kind(image, 0) != DDP_IMAGE_UNKNOWN &&
	    dladdr(image, &dl)) {
		m->image = image; /* in a loaded object: read at first use */
		SIM_VERBOSE("%s: image at %p (in %s) read at first use", what, image,
			    dl.dli_fname ? dl.dli_fname : "?");
	} else {
		rc = sim_mod_read(what, m, image, len);
		if (rc != CUDA_SUCCESS) {
			free(m);
			return rc;
		}
	}
	m->magic = SIM_MAGIC_MODULE;
	m->ctx = ctx;
	pthread_mutex_init(&m->mu, NULL);
	*out = m;
	return CUDA_SUCCESS;
}

/* Reads a whole file into a malloc'd buffer. */
static CUresult sim_read_file(const char *path, void **data, size_t *len)
{
	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	FILE *f = fopen(path, "rb");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	CUresult rc = CUDA_ERROR_INVALID_IMAGE;
	char *buf = NULL;
	long n;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = 0; /* PTX text is NUL-terminated */
		*data = buf;
		*len = (size_t)n;
		buf = NULL;
		rc = CUDA_SUCCESS;
	}
	free(buf);
	fclose(f);
	return rc;
}

static void sim_mod_free(struct CUmod_st *m)
{
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->info.nkernels; i++)
		if (m->funcs[i])
			m->funcs[i]->magic = SIM_MAGIC_DEAD; /* kept: stale handles fail */
	m->magic = SIM_MAGIC_DEAD;
	m->image = NULL;
	m->read_rc = CUDA_ERROR_INVALID_HANDLE;
	ddp_module_info_free(&m->info);
	pthread_mutex_unlock(&m->mu);
}

/* ---- modules */

SIM_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_mod_make("cuModuleLoadData", image, 0, c, module);
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
				       CUjit_option *options, void **optionValues)
{
	/* JIT options tune PTX compilation, which does not happen here. */
	if (numOptions && (!options || !optionValues))
		return CUDA_ERROR_INVALID_VALUE;
	return cuModuleLoadData(module, image);
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return cuModuleLoadData(module, fatCubin);
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	void *data;
	size_t len;
	rc = sim_read_file(fname, &data, &len);
	if (rc != CUDA_SUCCESS)
		return rc;
	rc = sim_mod_make("cuModuleLoad", data, len, c, module);
	free(data);
	return rc;
}

SIM_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
	CUresult rc = sim_check_init();
	if (rc == CUDA_ERROR_NOT_INITIALIZED)
		return rc;
	struct CUmod_st *m = sim_mod_get(hmod);
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	/* Launches already queued keep only their host entry; wait anyway, as
	 * the driver does before it frees a module's code. */
	sim_sync_all();
	sim_mod_free(m);
	return CUDA_SUCCESS;
}

/* Checks the cubin's parameter layout against the host signature. */
static CUresult sim_check_params(const struct ddp_kernel_info *k, const struct sim_kernel_entry *h)
{
	if (k->nparams != h->nparams) {
		sim_msg("kernel %s: the module image has %u parameters, its host implementation (%s) %u; "
			"rebuild the program and its .kern.so from the same source",
			k->name, k->nparams, h->signature ? h->signature : h->mangled, h->nparams);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	for (uint32_t i = 0; i < k->nparams; i++) {
		if (k->params[i].size != h->param_size[i]) {
			sim_msg("kernel %s: parameter %u is %u bytes in the module image but %u bytes in its host "
				"implementation (%s); rebuild the program and its .kern.so from the same source",
				k->name, i, k->params[i].size, h->param_size[i],
				h->signature ? h->signature : h->mangled);
			return CUDA_ERROR_INVALID_IMAGE;
		}
	}
	return CUDA_SUCCESS;
}

static CUresult sim_get_function(struct CUmod_st *m, const char *name, struct CUfunc_st **out)
{
	if (!name || !out)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = sim_mod_ready(m);
	if (rc != CUDA_SUCCESS)
		return rc;
	const struct ddp_kernel_info *k = ddp_module_find(&m->info, name);
	if (!k)
		return CUDA_ERROR_NOT_FOUND;
	size_t idx = (size_t)(k - m->info.kernels);
	pthread_mutex_lock(&m->mu);
	struct CUfunc_st *f = m->funcs[idx];
	pthread_mutex_unlock(&m->mu);
	if (f) {
		*out = f;
		return CUDA_SUCCESS;
	}
	uint32_t sizes[SIM_MAX_PARAMS] = {0};
	for (uint32_t i = 0; i < k->nparams && i < SIM_MAX_PARAMS; i++)
		sizes[i] = k->params[i].size;
	const struct sim_kernel_entry *h = sim_kernels_find_sized ? sim_kernels_find_sized(name, k->nparams, sizes) : NULL;
	if (!h && !sim_trace_skip_unknown()) {
		sim_msg("no host implementation of kernel %s (looked in %s)", name,
			sim_kernels_searched ? sim_kernels_searched() : "none: the kernel-execution half is missing");
		sim_trace_kernel_refused(name);
		return CUDA_ERROR_NOT_FOUND;
	}
	rc = h ? sim_check_params(k, h) : CUDA_SUCCESS;
	if (rc != CUDA_SUCCESS)
		return rc;
	f = calloc(1, sizeof(*f));
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	f->magic = SIM_MAGIC_FUNC;
	f->mod = m;
	f->info = k;
	f->host = h;
	f->max_dyn_shared = 48 * 1024;
	int made = 0;
	pthread_mutex_lock(&m->mu);
	if (m->funcs[idx]) { /* another thread was first */
		free(f);
		f = m->funcs[idx];
	} else {
		m->funcs[idx] = f;
		made = 1;
	}
	pthread_mutex_unlock(&m->mu);
	if (made && !h)
		sim_trace_kernel_skipped(name);
	*out = f;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUmod_st *m = sim_mod_get(hmod);
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	return sim_get_function(m, name, hfunc);
}

/* A device variable: the cubin must have it (else CUDA_ERROR_NOT_FOUND), a
 * loaded kernel library must hold its storage (else CUDA_ERROR_NOT_FOUND and
 * one line), and the host size must equal the cubin's (else
 * CUDA_ERROR_INVALID_IMAGE and one line).  The address handed out is the
 * kernel library's own variable, which the host-code kernels use, recorded
 * as device memory so that copies to and from it work.  All modules share
 * that one storage (a GPU gives each loaded module its own copy). */
static CUresult sim_get_global(struct CUmod_st *m, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = sim_mod_ready(m);
	if (rc != CUDA_SUCCESS)
		return rc;
	const struct ddp_global_info *g = ddp_module_find_global(&m->info, name);
	if (!g)
		return CUDA_ERROR_NOT_FOUND;
	const struct sim_global_entry *h = sim_kernels_find_global ? sim_kernels_find_global(name) : NULL;
	if (!h) {
		sim_msg("no host storage for device variable %s (looked in %s); build the kernel library from the "
			"source that defines it", name, sim_kernels_searched ? sim_kernels_searched() : "none");
		return CUDA_ERROR_NOT_FOUND;
	}
	if (h->size != g->size) {
		sim_msg("device variable %s is %llu bytes in the module image but %zu bytes in its kernel library; "
			"rebuild the program and its .kern.so from the same source",
			name, (unsigned long long)g->size, h->size);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	rc = sim_mem_register_global((uintptr_t)h->addr, h->size, m->ctx);
	if (rc != CUDA_SUCCESS) {
		sim_msg("device variable %s: its storage at %p overlaps other memory", name, h->addr);
		return rc;
	}
	SIM_VERBOSE("device variable %s: %zu bytes at %p", name, h->size, h->addr);
	if (dptr)
		*dptr = (CUdeviceptr)(uintptr_t)h->addr;
	if (bytes)
		*bytes = h->size;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUmod_st *m = sim_mod_get(hmod);
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	return sim_get_global(m, name, dptr, bytes);
}

SIM_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!mode)
		return CUDA_ERROR_INVALID_VALUE;
	*mode = sim_loading_mode();
	return CUDA_SUCCESS;
}

/* ---- functions */

static CUresult sim_param_info(const void *h, size_t index, size_t *off, size_t *size)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUfunc_st *f = sim_func_get(h);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (index >= f->info->nparams)
		return CUDA_ERROR_INVALID_VALUE;
	if (off)
		*off = f->info->params[index].offset;
	if (size)
		*size = f->info->params[index].size;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
	return sim_param_info(func, paramIndex, paramOffset, paramSize);
}

SIM_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
					 size_t *paramSize)
{
	return sim_param_info(kernel, paramIndex, paramOffset, paramSize);
}

SIM_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUfunc_st *f = sim_func_get(hfunc);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pi || (unsigned)attrib >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = (int)SIM_MAX_BLOCK_THREADS; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = SIM_FUNC_REGS; break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = SIM_SM; break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = SIM_SM; break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dyn_shared; break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
	default: *pi = 0; break; /* static shared, const, local sizes: unknown here */
	}
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUfunc_st *f = sim_func_get(hfunc);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		/* The device's opt-in limit (227 KiB, as an H100). */
		if (value < 0 || (unsigned)value > SIM_SM_SHARED - SIM_BLOCK_SHARED_RESERVED)
			return CUDA_ERROR_INVALID_VALUE;
		f->max_dyn_shared = value;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		return value >= -1 && value <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; /* a hint */
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* cudart 13 sets and reads function attributes through the CUkernel
 * (cudaFuncSetAttribute, cudaFuncGetAttributes): one device, so the
 * per-device value is the function's. */
SIM_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (dev < 0 || dev >= SIM_DEVICE_COUNT)
		return CUDA_ERROR_INVALID_DEVICE;
	return cuFuncSetAttribute((CUfunction)(void *)kernel, attrib, val);
}

SIM_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (dev < 0 || dev >= SIM_DEVICE_COUNT)
		return CUDA_ERROR_INVALID_DEVICE;
	return cuFuncGetAttribute(pi, attrib, (CUfunction)(void *)kernel);
}

SIM_EXPORT CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (dev < 0 || dev >= SIM_DEVICE_COUNT)
		return CUDA_ERROR_INVALID_DEVICE;
	return cuFuncSetCacheConfig((CUfunction)(void *)kernel, config);
}

SIM_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!sim_func_get(hfunc))
		return CUDA_ERROR_INVALID_HANDLE;
	return (unsigned)config <= CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; /* a hint */
}

SIM_EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUfunc_st *f = sim_func_get(hfunc);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	*name = f->info->name;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	return cuFuncGetName(name, (CUfunction)(void *)hfunc);
}

SIM_EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUfunc_st *f = sim_func_get(hfunc);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!hmod)
		return CUDA_ERROR_INVALID_VALUE;
	*hmod = f->mod;
	return CUDA_SUCCESS;
}

/* ---- libraries and kernels */

static CUresult sim_lib_make(const char *what, const void *image, size_t len, CUlibrary *library)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!library)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUlib_st *l = calloc(1, sizeof(*l));
	if (!l)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = sim_mod_make(what, image, len, sim_ctx_current(), &l->mod);
	if (rc != CUDA_SUCCESS) {
		free(l);
		return rc;
	}
	l->magic = SIM_MAGIC_LIB;
	*library = l;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
				      void **jitOptionsValues, unsigned int numJitOptions,
				      CUlibraryOption *libraryOptions, void **libraryOptionValues,
				      unsigned int numLibraryOptions)
{
	(void)jitOptions;
	(void)jitOptionsValues;
	(void)numJitOptions;
	(void)libraryOptions;
	(void)libraryOptionValues;
	(void)numLibraryOptions;
	return sim_lib_make("cuLibraryLoadData", code, 0, library);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
					  void **jitOptionsValues, unsigned int numJitOptions,
					  CUlibraryOption *libraryOptions, void **libraryOptionValues,
					  unsigned int numLibraryOptions)
{
	(void)jitOptions;
	(void)jitOptionsValues;
	(void)numJitOptions;
	(void)libraryOptions;
	(void)libraryOptionValues;
	(void)numLibraryOptions;
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	void *data;
	size_t len;
	rc = sim_read_file(fileName, &data, &len);
	if (rc != CUDA_SUCCESS)
		return rc;
	rc = sim_lib_make("cuLibraryLoadFromFile", data, len, library);
	free(data);
	return rc;
}

SIM_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
	CUresult rc = sim_check_init();
	if (rc == CUDA_ERROR_NOT_INITIALIZED)
		return rc;
	struct CUlib_st *l = sim_lib_get(library);
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	sim_sync_all();
	sim_mod_free(l->mod);
	l->magic = SIM_MAGIC_DEAD;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUlib_st *l = sim_lib_get(library);
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pKernel)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUfunc_st *f;
	rc = sim_get_function(l->mod, name, &f);
	if (rc == CUDA_SUCCESS)
		*pKernel = (CUkernel)(void *)f;
	return rc;
}

SIM_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUlib_st *l = sim_lib_get(library);
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	return sim_get_global(l->mod, name, dptr, bytes);
}

SIM_EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUlib_st *l = sim_lib_get(library);
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pMod)
		return CUDA_ERROR_INVALID_VALUE;
	*pMod = l->mod;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUfunc_st *f = sim_func_get(kernel);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pFunc)
		return CUDA_ERROR_INVALID_VALUE;
	*pFunc = f;
	return CUDA_SUCCESS;
}
