/* SPDX-License-Identifier: MIT
 *
 * blas_driver.c - how the cuBLASLt stand-in reaches the driver and launches
 * its kernels (simblas.h): libcuda.so.1 opened RTLD_LOCAL, every entry point
 * through cuGetProcAddress_v2 (as cuBLAS's cudart does), the kernels' fatbin
 * (blas_kernels.cu, embedded by the Makefile as
 * cpudev_blas_blas_kernels_fatbin) loaded with cuModuleLoadData into
 * the context current at cublasLtCreate, functions looked up by nvcc's
 * mangled names on first use, launched with cuLaunchKernel on the caller's
 * stream.
 *
 * Contract: the driver table is resolved once (pthread_once) and then
 * read-only.  A module's function cache is filled on first use without a
 * lock: a handle (and so its module) is used by one host thread at a time,
 * cuBLAS's own rule.
 */
#include "simblas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cublas_api.h>

extern const unsigned char cpudev_blas_blas_kernels_fatbin[];

/* nvcc's names of blas_kernels.cu's instantiations, [kernel][types] */
static const char *const kernel_names[SK_COUNT][ST_COUNT] = {
	[SK_GEMM] = {
		"_ZN7simblas4gemmIffEEviiiiffPKfS2_PKT_lllS5_lllPKT0_lllPS6_lll",
		"_ZN7simblas4gemmI6__halfS1_EEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lll",
		"_ZN7simblas4gemmI6__halffEEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lll",
		"_ZN7simblas4gemmI13__nv_bfloat16S1_EEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lll",
		"_ZN7simblas4gemmI13__nv_bfloat16fEEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lll",
	},
	[SK_GEMM_BIAS_GELU] = {
		"_ZN7simblas14gemm_bias_geluIffEEviiiiffPKfS2_PKT_lllS5_lllPKT0_lllPS6_lllS8_liS9_lll",
		"_ZN7simblas14gemm_bias_geluI6__halfS1_EEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lllS9_liSA_lll",
		"_ZN7simblas14gemm_bias_geluI6__halffEEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lllS9_liSA_lll",
		"_ZN7simblas14gemm_bias_geluI13__nv_bfloat16S1_EEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lllS9_liSA_lll",
		"_ZN7simblas14gemm_bias_geluI13__nv_bfloat16fEEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lllS9_liSA_lll",
	},
	[SK_GEMM_DGELU] = {
		"_ZN7simblas10gemm_dgeluIffEEviiiiffPKfS2_PKT_lllS5_lllPKT0_lllPS6_lllS8_lll",
		"_ZN7simblas10gemm_dgeluI6__halfS1_EEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lllS9_lll",
		"_ZN7simblas10gemm_dgeluI6__halffEEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lllS9_lll",
		"_ZN7simblas10gemm_dgeluI13__nv_bfloat16S1_EEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lllS9_lll",
		"_ZN7simblas10gemm_dgeluI13__nv_bfloat16fEEviiiiffPKfS3_PKT_lllS6_lllPKT0_lllPS7_lllS9_lll",
	},
	[SK_BIAS_GRAD_B] = {
		"_ZN7simblas16bias_grad_from_bIffEEviiiPKT_lllPT0_l",
		"_ZN7simblas16bias_grad_from_bI6__halfS1_EEviiiPKT_lllPT0_l",
		"_ZN7simblas16bias_grad_from_bI6__halffEEviiiPKT_lllPT0_l",
		"_ZN7simblas16bias_grad_from_bI13__nv_bfloat16S1_EEviiiPKT_lllPT0_l",
		"_ZN7simblas16bias_grad_from_bI13__nv_bfloat16fEEviiiPKT_lllPT0_l",
	},
};

void simblas_msg(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "cuBLAS (CPU device): %s\n", line);
}

static struct simblas_driver drv;
static int drv_ok;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static int resolve(get_proc_fn gpa, const char *name, void **out)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;

	if (gpa(name, out, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !*out ||
	    st != CU_GET_PROC_ADDRESS_SUCCESS) {
		simblas_msg("the driver has no %s (cuGetProcAddress_v2)", name);
		return 0;
	}
	return 1;
}

static void drv_load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	get_proc_fn gpa;

	if (!h) {
		simblas_msg("cannot load libcuda.so.1: %s; put the CPU device's folder in LD_LIBRARY_PATH",
			    dlerror());
		return;
	}
	gpa = (get_proc_fn)dlsym(h, "cuGetProcAddress_v2");
	if (!gpa) {
		simblas_msg("libcuda.so.1 has no cuGetProcAddress_v2");
		return;
	}
#define R(name) resolve(gpa, #name, (void **)&drv.name)
	drv_ok = R(cuInit) && R(cuCtxGetCurrent) && R(cuCtxSetCurrent) && R(cuDeviceGet) &&
		 R(cuDevicePrimaryCtxRetain) && R(cuModuleLoadData) && R(cuModuleUnload) &&
		 R(cuModuleGetFunction) && R(cuLaunchKernel) && R(cuGetErrorName);
#undef R
}

const struct simblas_driver *simblas_driver(void)
{
	pthread_once(&drv_once, drv_load);
	return drv_ok ? &drv : NULL;
}

static const char *err_name(CUresult r)
{
	const char *s = NULL;

	if (drv_ok)
		drv.cuGetErrorName(r, &s);
	return s ? s : "unknown CUresult";
}

int simblas_module_load(struct simblas_module *m)
{
	const struct simblas_driver *d = simblas_driver();
	CUcontext ctx = NULL;
	CUresult r;

	memset(m, 0, sizeof(*m));
	if (!d)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if ((r = d->cuInit(0)) != CUDA_SUCCESS) {
		simblas_msg("cuInit failed: %s", err_name(r));
		return CUBLAS_STATUS_NOT_INITIALIZED;
	}
	if (d->cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) {
		/* as cudart: the current device's primary context (device 0) */
		CUdevice dev;
		if ((r = d->cuDeviceGet(&dev, 0)) != CUDA_SUCCESS ||
		    (r = d->cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
		    (r = d->cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) {
			simblas_msg("no context and no primary context: %s", err_name(r));
			return CUBLAS_STATUS_NOT_INITIALIZED;
		}
	}
	if ((r = d->cuModuleLoadData(&m->mod, cpudev_blas_blas_kernels_fatbin)) != CUDA_SUCCESS) {
		simblas_msg("cuModuleLoadData of the GEMM kernels failed: %s", err_name(r));
		return CUBLAS_STATUS_NOT_INITIALIZED;
	}
	m->ctx = ctx;
	return CUBLAS_STATUS_SUCCESS;
}

void simblas_module_unload(struct simblas_module *m)
{
	if (m->mod && drv_ok)
		drv.cuModuleUnload(m->mod);
	m->mod = NULL;
}

int simblas_launch(struct simblas_module *m, enum simblas_kernel k, enum simblas_types t, unsigned gx,
		   unsigned gy, unsigned gz, unsigned bx, unsigned by, CUstream s, void **args)
{
	CUfunction f = m->fn[k][t];
	CUresult r;

	if (!f) {
		if ((r = drv.cuModuleGetFunction(&f, m->mod, kernel_names[k][t])) != CUDA_SUCCESS) {
			simblas_msg("cuModuleGetFunction(%s) failed: %s", kernel_names[k][t], err_name(r));
			return CUBLAS_STATUS_EXECUTION_FAILED;
		}
		m->fn[k][t] = f;
	}
	if ((r = drv.cuLaunchKernel(f, gx, gy, gz, bx, by, 1, 0, s, args, NULL)) != CUDA_SUCCESS) {
		simblas_msg("cuLaunchKernel(%s) failed: %s", kernel_names[k][t], err_name(r));
		return CUBLAS_STATUS_EXECUTION_FAILED;
	}
	return CUBLAS_STATUS_SUCCESS;
}
