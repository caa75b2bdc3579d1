/* SPDX-License-Identifier: MIT
 *
 * simblas.h - internals of the CPU device's cuBLASLt stand-in
 * (libcublasLt.so.13): how it reaches the driver and launches its GEMM
 * kernels (blas_driver.c).  libcublas.so.13 does not use this header: it
 * calls libcublasLt.so.13's public API, as the real cuBLAS does.
 *
 * The driver is reached the way cuBLAS's embedded cudart reaches it:
 * dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), dlsym("cuGetProcAddress_v2"),
 * then every entry point through cuGetProcAddress_v2.  An LD_PRELOADed
 * libddp.so therefore sees the stand-in's module loads and launches exactly
 * as it sees cuBLAS's on a GPU.
 *
 * Contract: simblas_driver() resolves once (pthread_once) and returns NULL,
 * after one line on stderr, when the driver or an entry point is missing.
 */
#ifndef SIMBLAS_H
#define SIMBLAS_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#define SIMBLAS_EXPORT __attribute__((visibility("default")))

struct simblas_driver {
	CUresult (*cuInit)(unsigned int);
	CUresult (*cuCtxGetCurrent)(CUcontext *);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuModuleLoadData)(CUmodule *, const void *);
	CUresult (*cuModuleUnload)(CUmodule);
	CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				   CUstream, void **, void **);
	CUresult (*cuGetErrorName)(CUresult, const char **);
};

/* A cuBLAS handle is a cuBLASLt handle too: PyTorch (at::cuda::blas)
 * passes its cublasHandle_t where cublasLtMatmul and
 * cublasLtMatmulAlgoGetHeuristic ask for a cublasLtHandle_t, as the real
 * libraries allow.  The stand-in's cuBLAS handle (cublas.c) begins with this
 * head, which cublasLt.c recognises and follows to the handle's own cuBLASLt
 * handle.  (The one place cublas.c and cublasLt.c share a layout.) */
#define SIMBLAS_CUBLAS_HANDLE_MAGIC 0x42d1a5u
struct simblas_cublas_head {
	uint32_t magic;                /* SIMBLAS_CUBLAS_HANDLE_MAGIC       */
	struct cublasLtContext *lt;    /* the handle's cuBLASLt handle      */
};

/* The driver's entry points, or NULL (reported once). */
const struct simblas_driver *simblas_driver(void);

/* One line on stderr: "cuBLAS (CPU device): ..." */
void simblas_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The kernels of blas_kernels.cu */
enum simblas_kernel { SK_GEMM, SK_GEMM_BIAS_GELU, SK_GEMM_DGELU, SK_BIAS_GRAD_B, SK_COUNT };
/* (input type, output type) pairs, in blas_kernels.cu's instantiation order */
enum simblas_types { ST_F32_F32, ST_F16_F16, ST_F16_F32, ST_BF16_BF16, ST_BF16_F32, ST_COUNT };

/* The module of one context, loaded by cublasLtCreate; functions looked up
 * on first use. */
struct simblas_module {
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn[SK_COUNT][ST_COUNT];
};

/* Makes sure a context is current (the device's primary context when none
 * is, as cuBLAS's cudart does), then loads the kernels' module in it.
 * Returns a cuBLAS status. */
int simblas_module_load(struct simblas_module *m);
void simblas_module_unload(struct simblas_module *m);

/* Launches kernel k for types t on stream s with the given argument
 * pointers (kernelParams).  Returns a cuBLAS status (one line on failure). */
int simblas_launch(struct simblas_module *m, enum simblas_kernel k, enum simblas_types t, unsigned gx,
		   unsigned gy, unsigned gz, unsigned bx, unsigned by, CUstream s, void **args);

#endif /* SIMBLAS_H */
